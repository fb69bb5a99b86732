/* src/transforms/pipeline.c: the one place every public transform passes
 * through when it is done (QBE's habit: the checks between passes live in
 * one function). It runs the verifier (in debug builds and tests unless the
 * environment says FT_VERIFY=0, as the benchmark does to time the transform
 * alone; in release builds when FT_VERIFY=1) and appends
 * the ledger record: op, params, the input and output jaxprs (canonical
 * text, content-addressed by the ledger). */
#include <string.h>
#include <time.h>

#include "ledger/ledger.h"
#include "transforms.h"

static bool want_verify(void) {
  const char *v = getenv("FT_VERIFY");
#ifndef NDEBUG
  return !v || strcmp(v, "0");
#else
  return v && *v && strcmp(v, "0");
#endif
}

bool ft__after_transform(ft_ctx *ctx, const char *op, const char *params, const ft_jaxpr *in,
                         const ft_jaxpr *out) {
  ft_status vst = want_verify() ? ft_jaxpr_verify(ctx, out) : FT_OK;
  if (vst == FT_ERR_NOMEM) return false; /* out of memory, not a bug: keep the status */
  if (vst != FT_OK) {
    ft_error_prefix(ctx, "internal error: %s produced an invalid jaxpr", op);
    ft_ctx_set_message(ctx, FT_ERR_INTERNAL, ft_ctx_error(ctx));
    return false;
  }
  if (!ft_ledger_active(ctx)) return true;
  char *tin = ft_jaxpr_print(ctx, in), *tout = ft_jaxpr_print(ctx, out);
  bool ok = tin && tout;
  if (ok) {
    ft_ledger_obj ins = {.name = "jaxpr", .data = tin, .len = strlen(tin)};
    ft_ledger_obj outs = {.name = "jaxpr", .data = tout, .len = strlen(tout)};
    ft_ledger_event ev = {.kind = FT_LEDGER_TRANSFORM, .op = op, .params_json = params,
                          .inputs = &ins, .n_inputs = 1, .outputs = &outs, .n_outputs = 1};
    ok = ft_ledger_record(ctx, &ev) == FT_OK;
  } else {
    ft_set_error(ctx, FT_ERR_NOMEM, "%s: out of memory printing the ledger record", op);
  }
  free(tin);
  free(tout);
  return ok;
}
