/* src/lower/rt_noledger.c: libfrankentrace_rt only. The runtime library has
 * no ledger (the observer that ft_ctx_attach_ledger installs lives in
 * src/replay, above the JIT), but ft_ctx_attach_ledger is public, so the
 * runtime library defines it: attaching is refused, detaching is a no-op
 * (no ledger can have been attached in this library). */
#include "ir/ir.h"

ft_status ft_ctx_attach_ledger(ft_ctx *ctx, ft_ledger *lg) {
  if (!lg) return FT_OK;
  return ft_set_error(ctx, FT_ERR_UNSUPPORTED,
                      "ledger: unsupported: libfrankentrace_rt has no ledger (link libfrankentrace)");
}
