/* src/ir/ctx.c: contexts and the error channel every library call reports on. */
#include <stdio.h>
#include <string.h>

#include "ir.h"

const char *ft_version(void) { return "0.1.0"; }

_Noreturn void ft_assert_fail(const char *what, const char *file, int line) {
  /* An internal invariant broke: this is a bug, so stop loudly with where. */
  fprintf(stderr, "frankentrace: internal error: %s:%d: assertion '%s' failed\n", file, line, what);
  abort();
}

ft_ctx *ft_ctx_new(const ft_ctx_options *opts) {
  ft_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return NULL;
  if (opts) ctx->opts = *opts;
  return ctx;
}

void ft_ctx_free(ft_ctx *ctx) {
  /* The ledger is the caller's to close; detaching keeps it from pointing here. */
  if (ctx && ctx->ledger) ft_ctx_attach_ledger(ctx, NULL);
  free(ctx);
}

const char *ft_ctx_error(const ft_ctx *ctx) { return ctx ? ctx->err : ""; }
ft_status ft_ctx_status(const ft_ctx *ctx) { return ctx ? ctx->status : FT_OK; }

void ft_ctx_clear_error(ft_ctx *ctx) {
  if (!ctx) return;
  ctx->status = FT_OK;
  ctx->err[0] = 0;
}

ft_status ft_set_errorv(ft_ctx *ctx, ft_status st, const char *fmt, va_list ap) {
  if (!ctx) return st;
  ctx->status = st;
  vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
  return st;
}

ft_status ft_set_error(ft_ctx *ctx, ft_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ft_set_errorv(ctx, st, fmt, ap);
  va_end(ap);
  return st;
}

void ft_error_prefix(ft_ctx *ctx, const char *fmt, ...) {
  if (!ctx) return;
  char pre[512], old[sizeof ctx->err];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(pre, sizeof pre, fmt, ap);
  va_end(ap);
  memcpy(old, ctx->err, sizeof old);
  /* Truncation keeps the prefix and as much of the old message as fits. */
  size_t n = strlen(pre);
  if (n > sizeof ctx->err - 3) n = sizeof ctx->err - 3;
  memcpy(ctx->err, pre, n);
  memcpy(ctx->err + n, ": ", 2);
  size_t room = sizeof ctx->err - n - 3, m = strlen(old);
  if (m > room) m = room;
  memcpy(ctx->err + n + 2, old, m);
  ctx->err[n + 2 + m] = 0;
}

void ft_free(void *p) { free(p); }
