/* src/transforms/custom.h: custom differentiation rules in the transforms
 * (custom.c): JVP of custom_jvp_call and custom_vjp_call with rules given
 * as jaxprs, and custom_lin, JAX's linear primitive that carries a
 * custom_vjp's bwd rule from forward mode to transposition. Rule layouts:
 * docs/autodiff.md, "Custom rules" (and shape.c's check_rules). */
#ifndef FT_TRANSFORMS_CUSTOM_H
#define FT_TRANSFORMS_CUSTOM_H

#include "transforms/vmap.h"

/* Why custom_lin has no JVP rule (the coverage matrix prints it after
 * "unsupported: "). */
#define FT_CUSTOM_LIN_NO_JVP                                                              \
  "custom_lin is only meaningful under transposition (JAX has no JVP rule for it either: " \
  "forward mode through a custom_vjp is refused)"

/* Why a CustomRoot (JAX 0.12's lax.custom_root) printout cannot be
 * differentiated in f's consts (jvp_control.c, the coverage matrix). */
#define FT_CUSTOM_ROOT_NO_F                                                                   \
  "JAX differentiates lax.custom_root through f and tangent_solve (the implicit function "    \
  "theorem, CustomRoot.lin), which are Python callables JAX 0.12 does not print "             \
  "(CustomRoot.pp_params shows solve_jaxpr and has_aux only): differentiate in JAX and run "  \
  "its jvp/grad printout, which has them inlined"

/* JVP of custom_jvp_call (its jvp rule when it is a jaxpr) and
 * custom_vjp_call (fwd, then custom_lin carrying bwd, when both are
 * jaxprs); a custom_jvp rule JAX printed as a name: JAX's exact rule for
 * known library functions (relu, relu6), call_jaxpr's derivative under
 * FT_CUSTOM_JVP_PRIMAL, else refused (FT_ERR_UNSUPPORTED). */
bool jvp_custom_call(jvp_state *s, jvp_call *c);
/* custom_lin has no JVP: fails with FT_CUSTOM_LIN_NO_JVP's reason. */
bool jvp_custom_lin(jvp_call *c);
/* Transpose of custom_lin: bwd applied to the residuals and cotangents. */
bool tr_custom_lin(tr_state *s, tr_call *c);
/* Whether e is custom_lin, or a custom call with a rule given as a jaxpr
 * (those need bt_custom: the rules must be batched with the function). */
bool bt_custom_needed(const ft_eqn *e);
/* Batches e with every operand and output batched at axis 0, and every
 * sub-jaxpr (function and rules) batched alike, so they keep fitting. */
bool bt_custom(bt_call *c);

#endif /* FT_TRANSFORMS_CUSTOM_H */
