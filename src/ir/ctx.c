/* src/ir/ctx.c: contexts and the error channel every library call reports on. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ir.h"

const char *ft_version(void) { return FT_VERSION_STRING; }

const char *ft_status_string(ft_status code) {
  static const char *const names[] = {
    "FT_OK", "FT_ERR_INVALID_ARG", "FT_ERR_PARSE", "FT_ERR_TYPE", "FT_ERR_SHAPE",
    "FT_ERR_UNSUPPORTED", "FT_ERR_IO", "FT_ERR_NOMEM", "FT_ERR_RUNTIME", "FT_ERR_INTERNAL",
    "FT_ERR_LIMIT", "FT_ERR_CANCELLED"};
  _Static_assert(sizeof names / sizeof names[0] == FT_ERR_CANCELLED + 1, "a name per ft_status");
  return (unsigned)code < sizeof names / sizeof names[0] ? names[code] : "FT_ERR_?";
}

_Noreturn void ft_assert_fail(const char *what, const char *file, int line) {
  /* An internal invariant broke: this is a bug, so stop loudly with where. */
  fprintf(stderr, "frankentrace: internal error: %s:%d: assertion '%s' failed\n", file, line, what);
  abort();
}

/* Sized option structs (the header's conventions): the first member is
 * size_t size. Reads the fields that fit in both the caller's size and
 * this library's, checks that the caller set none beyond what the library
 * knows, and leaves dst with every other field zero and size == known. */
static ft_status opts_read(const char *what, const void *src, size_t known, void *dst, char *msg,
                           size_t msg_len) {
  memset(dst, 0, known);
  size_t given = known;
  if (src) {
    memcpy(&given, src, sizeof given);
    if (given < sizeof(size_t)) {
      if (msg) snprintf(msg, msg_len, "%s: size is %zu, not sizeof(%s) (initialize the struct "
                        "with its _INIT macro)", what, given, what);
      return FT_ERR_INVALID_ARG;
    }
    const unsigned char *b = src;
    for (size_t i = known; i < given; i++)
      if (b[i]) {
        if (msg) snprintf(msg, msg_len, "%s: byte %zu of %zu is set, but this library (%s) "
                          "knows only the first %zu bytes (a field it does not have)",
                          what, i, given, FT_VERSION_STRING, known);
        return FT_ERR_UNSUPPORTED;
      }
    memcpy(dst, src, given < known ? given : known);
  }
  memcpy(dst, &known, sizeof known);
  if (msg && msg_len) msg[0] = 0;
  return FT_OK;
}

ft_status ft_opts_read(ft_ctx *ctx, const char *what, const void *src, size_t known, void *dst) {
  char msg[512];
  ft_status st = opts_read(what, src, known, dst, msg, sizeof msg);
  return st ? ft_set_error(ctx, st, "%s", msg) : FT_OK;
}

static ft_status ctx_opts(const ft_ctx_options *opts, ft_ctx_options *o, char *msg, size_t len) {
  ft_status st = opts_read("ft_ctx_options", opts, sizeof *o, o, msg, len);
  if (st) return st;
  if (!o->allocator.alloc != !o->allocator.free) {
    if (msg) snprintf(msg, len, "ft_ctx_options: the allocator sets %s but not %s (set both or "
                      "neither)", o->allocator.alloc ? "alloc" : "free",
                      o->allocator.alloc ? "free" : "alloc");
    return FT_ERR_INVALID_ARG;
  }
  if ((unsigned)o->mode > FT_MODE_HARDENED) {
    if (msg) snprintf(msg, len, "ft_ctx_options: mode %d is not FT_MODE_STRICT or "
                      "FT_MODE_HARDENED", (int)o->mode);
    return FT_ERR_INVALID_ARG;
  }
  if ((unsigned)o->custom_jvp > FT_CUSTOM_JVP_PRIMAL) {
    if (msg) snprintf(msg, len, "ft_ctx_options: custom_jvp %d is not FT_CUSTOM_JVP_REFUSE or "
                      "FT_CUSTOM_JVP_PRIMAL", (int)o->custom_jvp);
    return FT_ERR_INVALID_ARG;
  }
  return FT_OK;
}

ft_status ft_ctx_options_check(const ft_ctx_options *opts, char *buf, size_t len) {
  ft_ctx_options o;
  return ctx_opts(opts, &o, buf, buf ? len : 0);
}

/* Live contexts: when the last one is freed, the arena chunks kept for
 * reuse are given back (arena.c). */
static _Atomic long live_ctx;

ft_ctx *ft_ctx_new(const ft_ctx_options *opts) {
  ft_ctx_options o;
  if (ctx_opts(opts, &o, NULL, 0)) return NULL;
  ft_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return NULL;
  ctx->opts = o;
  if (pthread_mutex_init(&ctx->err_lock, NULL)) {
    free(ctx);
    return NULL;
  }
  if (pthread_mutex_init(&ctx->guard_lock, NULL)) {
    pthread_mutex_destroy(&ctx->err_lock);
    free(ctx);
    return NULL;
  }
  atomic_fetch_add(&live_ctx, 1);
  return ctx;
}

void ft_ctx_free(ft_ctx *ctx) {
  if (!ctx) return;
  /* The ledger is the caller's to close; detaching keeps it from pointing here. */
  if (ctx->on_free) ctx->on_free(ctx);
  if (ctx->dist_free) ctx->dist_free(ctx);
  pthread_mutex_destroy(&ctx->err_lock);
  pthread_mutex_destroy(&ctx->guard_lock);
  free(ctx);
  if (atomic_fetch_sub(&live_ctx, 1) == 1) ft_arena_release_kept();
}

/* The error channel is shared by every thread using a context (concurrent
 * ft_calls of one ft_fn fail onto it): writes happen under err_lock, and a
 * reader gets a copy taken under the lock, in a small per-thread ring so a
 * caller may hold a few messages at once. */
static pthread_mutex_t *err_lock(const ft_ctx *ctx) { return (pthread_mutex_t *)&ctx->err_lock; }

const char *ft_ctx_error(const ft_ctx *ctx) {
  static _Thread_local char ring[4][sizeof ctx->err];
  static _Thread_local unsigned next;
  if (!ctx) return "";
  char *b = ring[next++ % 4];
  pthread_mutex_lock(err_lock(ctx));
  memcpy(b, ctx->err, sizeof ctx->err);
  pthread_mutex_unlock(err_lock(ctx));
  return b;
}

ft_status ft_ctx_status(const ft_ctx *ctx) {
  if (!ctx) return FT_OK;
  pthread_mutex_lock(err_lock(ctx));
  ft_status st = ctx->status;
  pthread_mutex_unlock(err_lock(ctx));
  return st;
}

void ft_ctx_clear_error(ft_ctx *ctx) {
  if (!ctx) return;
  pthread_mutex_lock(&ctx->err_lock);
  ctx->status = FT_OK;
  ctx->err[0] = 0;
  pthread_mutex_unlock(&ctx->err_lock);
}

/* A per-call error (ft_call_ex): while a thread runs such a call, every
 * message it sets on that call's context is also written to the caller's
 * buffer, which no other thread writes. */
static _Thread_local ft_err_capture capture;

ft_err_capture ft_err_capture_begin(const ft_ctx *ctx, char *buf, size_t len) {
  ft_err_capture saved = capture;
  if (buf && len) buf[0] = 0;
  capture = (ft_err_capture){.ctx = buf && len ? ctx : NULL, .buf = buf, .len = len};
  return saved;
}

void ft_err_capture_end(ft_err_capture saved) { capture = saved; }

static void capture_set(const ft_ctx *ctx, const char *msg) {
  if (capture.ctx && capture.ctx == ctx) snprintf(capture.buf, capture.len, "%s", msg);
}

void ft_ctx_set_message(ft_ctx *ctx, ft_status st, const char *msg) {
  if (!ctx) return;
  pthread_mutex_lock(&ctx->err_lock);
  if (st != FT_OK) ctx->status = st;
  snprintf(ctx->err, sizeof ctx->err, "%s", msg);
  pthread_mutex_unlock(&ctx->err_lock);
  capture_set(ctx, msg);
}

ft_status ft_set_errorv(ft_ctx *ctx, ft_status st, const char *fmt, va_list ap) {
  if (!ctx) return st;
  char msg[sizeof ctx->err];
  vsnprintf(msg, sizeof msg, fmt, ap);
  pthread_mutex_lock(&ctx->err_lock);
  ctx->status = st;
  memcpy(ctx->err, msg, sizeof msg);
  pthread_mutex_unlock(&ctx->err_lock);
  capture_set(ctx, msg);
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
  char pre[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(pre, sizeof pre, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&ctx->err_lock);
  char old[sizeof ctx->err];
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
  pthread_mutex_unlock(&ctx->err_lock);
  if (capture.ctx && capture.ctx == ctx) {
    /* this call's own message, which another thread may have replaced on ctx */
    char *own = malloc(capture.len);
    if (own) {
      memcpy(own, capture.buf, capture.len);
      snprintf(capture.buf, capture.len, "%s: %s", pre, own);
      free(own);
    }
  }
}

ft_status ft_ctx_set_loop_limits(ft_ctx *ctx, const ft_loop_limits *limits) {
  if (!ctx) return FT_ERR_INVALID_ARG;
  ft_loop_limits l;
  ft_status st = ft_opts_read(ctx, "ft_loop_limits", limits, sizeof l, &l);
  if (st) return st;
  atomic_store(&ctx->loop_max_iters, l.max_iterations > 0 ? l.max_iterations : 0);
  atomic_store(&ctx->loop_max_seconds, l.max_seconds > 0 ? l.max_seconds : 0.0);
  return FT_OK;
}

void ft_ctx_cancel(ft_ctx *ctx) {
  if (ctx) atomic_store(&ctx->cancelled, true);
}

void ft_ctx_clear_cancel(ft_ctx *ctx) {
  if (ctx) atomic_store(&ctx->cancelled, false);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void ft_loop_begin(ft_loop_guard *g, const ft_ctx *ctx, const char *prim) {
  if (ctx && ctx->limits_from) ctx = ctx->limits_from;
  *g = (ft_loop_guard){.ctx = ctx, .prim = prim};
  if (!ctx) return;
  g->max_iters = atomic_load(&ctx->loop_max_iters);
  if (!g->max_iters && ft_hardened(ctx)) g->max_iters = FT_HARDENED_MAX_ITERATIONS;
  g->max_seconds = atomic_load(&ctx->loop_max_seconds);
  if (g->max_seconds > 0) g->start = now_s();
}

/* A loop stopped by its budget: in hardened mode, a guard record too. The
 * call fails with FT_ERR_LIMIT either way (a ledger that cannot record the
 * guard fails it with the ledger's error instead). */
static ft_status loop_guard(const ft_loop_guard *g, ft_ctx *ctx) {
  if (!ft_hardened(ctx)) return FT_ERR_LIMIT;
  char msg[sizeof ctx->err];
  memcpy(msg, ft_ctx_error(ctx), sizeof msg);
  ft_status st = ft_guard_fire(ctx, FT_GUARD_LOOP, false, NULL, -2, g->prim, -1,
                               "loop budget: %s; the call fails", msg);
  return st ? st : FT_ERR_LIMIT;
}

/* The clock is read every 64th iteration: a loop of cheap iterations pays
 * one atomic load and a compare per iteration. */
ft_status ft_loop_step(ft_loop_guard *g, ft_ctx *ctx) {
  if (!g->ctx) return FT_OK;
  if (atomic_load(&g->ctx->cancelled))
    return ft_set_error(ctx, FT_ERR_CANCELLED, "%s: cancelled after %lld iterations", g->prim,
                        (long long)g->iters);
  if (g->max_iters && g->iters >= g->max_iters) {
    ft_set_error(ctx, FT_ERR_LIMIT, "%s: stopped at the loop limit of %lld iterations", g->prim,
                 (long long)g->max_iters);
    return loop_guard(g, ctx);
  }
  if (g->max_seconds > 0 && (g->iters & 63) == 0) {
    double t = now_s() - g->start;
    if (t > g->max_seconds) {
      ft_set_error(ctx, FT_ERR_LIMIT, "%s: stopped at the loop time limit of %g s "
                   "(after %lld iterations)", g->prim, g->max_seconds, (long long)g->iters);
      return loop_guard(g, ctx);
    }
  }
  g->iters++;
  return FT_OK;
}

void ft_free(void *p) { free(p); }

/* ------------------------------------------------------------ guards */
_Thread_local ft_guard_where ft_guard_tl;

static const char *const guard_kind_names[FT_GUARD_NUM_KINDS] = {"nonfinite", "index", "loop", "call"};

const char *ft_guard_kind_name(ft_guard_kind kind) {
  return (unsigned)kind < FT_GUARD_NUM_KINDS ? guard_kind_names[kind] : NULL;
}

/* An executor thread's context reports to the caller's (limits_from). */
static ft_ctx *guard_root(ft_ctx *ctx) {
  return ctx->limits_from ? (ft_ctx *)ctx->limits_from : ctx;
}

ft_status ft_guard_fire(ft_ctx *ctx, ft_guard_kind kind, bool can_continue, const ft_jaxpr *j,
                        int eqn, const char *prim, int output, const char *fmt, ...) {
  if (!ctx) return can_continue ? FT_OK : FT_ERR_RUNTIME;
  ft_ctx *root = guard_root(ctx);
  ft_guard_event g = {.kind = kind, .engine = ft_guard_tl.engine ? ft_guard_tl.engine : "interp",
                      .eqn = eqn < -1 ? ft_guard_tl.eqn : eqn, .prim = prim ? prim : "",
                      .output = output};
  bool refuse = can_continue && root->opts.guard_fail;
  g.decision = can_continue && !refuse ? FT_GUARD_CONTINUED : FT_GUARD_FAILED;
  char what[sizeof g.message - 32];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(g.message, sizeof g.message, "%s%s", what,
           !can_continue ? "" : refuse ? "; the call fails (guard_fail)" : "; the result is kept");
  pthread_mutex_lock(&root->guard_lock);
  if (root->n_guards < FT_MAX_GUARDS) root->guards[root->n_guards++] = g;
  pthread_mutex_unlock(&root->guard_lock);
  ft_ctx_event ev = {.kind = FT_CTX_EV_GUARD, .jaxpr = j, .guard = &g};
  ft_status st = ft_ctx_notify(root, &ev);
  if (st) {
    if (root != ctx) ft_set_error(ctx, st, "%s", ft_ctx_error(root));
    return st;
  }
  if (refuse) return ft_set_error(ctx, FT_ERR_RUNTIME, "hardened: %s", g.message);
  return FT_OK;
}

int ft_ctx_num_guards(const ft_ctx *ctx) {
  if (!ctx) return 0;
  pthread_mutex_lock((pthread_mutex_t *)&ctx->guard_lock);
  int n = ctx->n_guards;
  pthread_mutex_unlock((pthread_mutex_t *)&ctx->guard_lock);
  return n;
}

ft_status ft_ctx_get_guard(const ft_ctx *ctx, int i, ft_guard_event *out) {
  if (!ctx || !out) return FT_ERR_INVALID_ARG;
  pthread_mutex_lock((pthread_mutex_t *)&ctx->guard_lock);
  bool ok = i >= 0 && i < ctx->n_guards;
  if (ok) *out = ctx->guards[i];
  pthread_mutex_unlock((pthread_mutex_t *)&ctx->guard_lock);
  return ok ? FT_OK : FT_ERR_INVALID_ARG;
}

void ft_ctx_clear_guards(ft_ctx *ctx) {
  if (!ctx) return;
  pthread_mutex_lock(&ctx->guard_lock);
  ctx->n_guards = 0;
  pthread_mutex_unlock(&ctx->guard_lock);
}
