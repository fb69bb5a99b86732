/* src/replay/replay.h: the ledger's upper layer (issue 23), above every
 * stage: it re-runs what the records describe, so it calls the parser,
 * tracer, transforms, optimizer, JIT and interpreter; only the public API
 * and the tools use it. The storage it reads and writes is src/ledger
 * (ledger.h). Sections follow the files:
 *   replay.c    the replayer registry, replay, reexec, diff
 *   observe.c   the context observer (parse, trace, call, compile and guard
 *               records) and ft_ctx_attach_ledger, which installs it
 *   replayers.c the library's replayers (parse, trace, transforms, interp)
 *   builtins.c  the table that registers them
 *   export.c    JSON / HTML / DOT renderings */
#ifndef FT_REPLAY_H
#define FT_REPLAY_H

#include "ledger/ledger.h"

/* ============================================================== replay.c */

/* Looks up the replayer of (kind, op). */
ft_ledger_replayer ft_ledger_find_replayer(ft_ledger_kind kind, const char *op, void **user);

/* ============================================================= observe.c */

/* The observer ft_ctx_attach_ledger installs on a context (ctx->on_event):
 * appends a "parse" record (source text -> canonical text), a "trace" record
 * (-> canonical text and the values of traced constants, as .npy) or, when
 * the ledger logs calls, a "call" record of op "interp" (program text and
 * argument arrays as .npy -> result arrays as .npy). */
ft_status ft_ledger_observe(ft_ctx *ctx, const ft_ctx_event *ev);

/* =========================================================== replayers.c */

/* The library's replayers (ft_ledger_replayer signature); see replayers.c. */
ft_status ft_lreplay_parse(ft_ctx *ctx, void *user, const char *op, const char *params_json,
                           const ft_ledger_blob *in, int n_in, ft_ledger_buf *out, int n_out);
ft_status ft_lreplay_trace(ft_ctx *ctx, void *user, const char *op, const char *params_json,
                           const ft_ledger_blob *in, int n_in, ft_ledger_buf *out, int n_out);
ft_status ft_lreplay_transform(ft_ctx *ctx, void *user, const char *op, const char *params_json,
                               const ft_ledger_blob *in, int n_in, ft_ledger_buf *out, int n_out);
ft_status ft_lreplay_interp(ft_ctx *ctx, void *user, const char *op, const char *params_json,
                            const ft_ledger_blob *in, int n_in, ft_ledger_buf *out, int n_out);
ft_status ft_lreplay_jit_plan(ft_ctx *ctx, void *user, const char *op, const char *params_json,
                              const ft_ledger_blob *in, int n_in, ft_ledger_buf *out, int n_out);

/* ============================================================ builtins.c */

/* Registers the library's own replayers (parser, transforms, JIT, executors).
 * Runs once, before any other registration or lookup, so explicit
 * registrations override these. */
void ft_ledger_register_builtins(void);

#endif /* FT_REPLAY_H */
