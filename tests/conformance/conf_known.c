/* tests/conformance/conf_known.c: checks that are known to fail, each with
 * its reason. A listed failure does not fail the CI test; the report prints
 * every one with what was observed. Remove an entry when its cause is fixed
 * (the report then counts the case like any other). Globs are fnmatch(3)
 * patterns over the case name and the check name ("parse", "print",
 * "eval:interp", "grad:jax:interp", "grad:ours:build", "grad:ours:interp"). */
#include "conf.h"

#define SORT_DAZ "interpreter: XLA on CPU compares sort keys with denormals-are-zero, so under " \
                 "JAX every subnormal key equals 0.0 and keeps its input position among the " \
                 "zeros; FrankenTrace has no DAZ (docs/determinism.md §1, §4) and orders " \
                 "subnormals by value. The data movement cannot be matched by flushing inputs"


#define ZETA_XLA_NAN "eval: XLA's zeta returns NaN where the value is +inf: q^-x overflows at a " \
                     "subnormal q, and at a large negative integer q (f16 -65504); FrankenTrace " \
                     "gives +inf (docs/math.md lists the special values)"

/* Primitives JAX 0.12 emits that src/ir/prims.def does not have yet (issue
 * 17 §1; the helper that is adding each is named). The program is refused
 * at parse with 'unknown primitive', never run wrongly. */
#define UNKNOWN_PRIM(p, who)                                                                     \
  "parse: unknown primitive '" p "': JAX 0.12 emits it and src/ir/prims.def does not have it "   \
  "yet (issue 17 §1, being added by the '" who "' work); the program is refused, never run "     \
  "wrongly"

#define CLS_SHARED "print: JAX hoists a jaxpr object shared by custom_linear_solve equations " \
                   "(each printed inside _LinearSolveTuple as a program of its own, so the " \
                   "sharing is not in the text); our printout hoists what the text shows"

#define XLA_RECIPROCAL "JAX is the less accurate: XLA on CPU divides by a broadcast divisor " \
                       "through its reciprocal (x * (1/y)), 1 ulp from the correctly rounded " \
                       "quotient that FrankenTrace gives (checked in f64: every JAX element equals " \
                       "x*(1/y) rounded); the policy classes a lone div as bitwise"
#define ULP_CLASS_TOO_TIGHT "policy: the program has one transcendental (tanh in gelu's tanh " \
                            "approximation, log in pareto.logpdf) plus arithmetic, so " \
                            "conf_tolerance gives it that primitive's ULP bound; near a zero of " \
                            "the result (0.5x(1+tanh u) for x << 0, log terms that cancel) the " \
                            "arithmetic amplifies ulps (~180 ulp, 0.2 eps*S): a normwise-tiny " \
                            "difference, not a wrong value; the class should be 'arithmetic chain'"
#define CANCELLATION "policy: the jvp of a sum/product over all 12 elements adds 12 tangent " \
                     "terms of magnitude ~1 whose total is ~0.01; the bound is relative to the " \
                     "largest output (S = |total|), so reordering the sum (ours is the canonical " \
                     "order) exceeds it (26-34 eps*S, ~1e-7 absolute): not a wrong value"

#define DIGAMMA_F32 "11 ulp from XLA's f32 digamma (bound 8) at one element: ours is computed " \
  "in f64 and rounded (0.5 ulp against a __float128 reference, docs/special-functions.md); " \
  "the harness has no long-double digamma to show which side is the less accurate"
#define LGAMMA_NEAR_ZERO "654 ulp but 0.27 eps*S: the result (-0.0033) is near a zero of " \
  "lgamma, where ulp error is unbounded for both sides; the one-transcendental ulp class is " \
  "too tight there (as ULP_CLASS_TOO_TIGHT)"

#define HORNER_F32 "JAX's f32 gradient program of a 6-step Horner scan, run by us, is 36 " \
  "eps*S from JAX's result (bound 12): XLA evaluates its backward scan in another order; " \
  "our own gradient (grad:ours:*) and the f64 case pass"

const conf_known conf_known_failures[] = {
    {"loop_horner_scan_wrt_x_f32", "grad:jax:*", HORNER_F32},
    {"loop_horner_scan_wrt_x_f32", "jacrev:jax:*", HORNER_F32},
    {"sweep_sp_digamma_f32", "eval:*", DIGAMMA_F32},
    {"x64_sweep_sp_loggamma_f64", "eval:*", LGAMMA_NEAR_ZERO},
    {"*prim_zeta_f*", "eval:*", ZETA_XLA_NAN},

    {"prim_sort_bf16_0", "eval:*", SORT_DAZ},
    {"prim_sort_f32_0", "eval:*", SORT_DAZ},
    {"x64_prim_sort_f64_0", "eval:*", SORT_DAZ},
    /* erf's derivative is the polynomial; the forward and vmap have none */
    /* fixtures/program2 */
    /* fixtures/sweep (made by tools/conformance-known from a dump of every check) */
    {"*sweep_jnp_i0_*", "*parse", UNKNOWN_PRIM("bessel_i0e", "special")},
    {"*sweep_sp_i0_*", "*", UNKNOWN_PRIM("bessel_i0e", "special")},
    {"*sweep_sp_i0e_*", "*", UNKNOWN_PRIM("bessel_i0e", "special")},
    {"*sweep_lax_bessel_i0e_*", "*", UNKNOWN_PRIM("bessel_i0e", "special")},
    {"*sweep_st_vonmises_logpdf_*", "*", UNKNOWN_PRIM("bessel_i0e", "special")},
    {"*sweep_jnp_divide__bcast_*", "eval:interp", XLA_RECIPROCAL},
    {"sweep_nn_gelu_f32", "*interp", ULP_CLASS_TOO_TIGHT},
    {"x64_sweep_nn_gelu_f64", "*interp", ULP_CLASS_TOO_TIGHT},
    {"*sweep_st_pareto_logpdf_*", "*interp", ULP_CLASS_TOO_TIGHT},
    {"*sweep_jnp_divide__bcast_*", "eval:jit", XLA_RECIPROCAL},
    {"sweep_nn_gelu_f32", "eval:jit", ULP_CLASS_TOO_TIGHT},
    {"x64_sweep_nn_gelu_f64", "eval:jit", ULP_CLASS_TOO_TIGHT},
    {"*sweep_st_pareto_logpdf_*", "eval:jit", ULP_CLASS_TOO_TIGHT},
    {"*sweep_sp_i1_*", "*", UNKNOWN_PRIM("bessel_i1e", "special")},
    {"*sweep_sp_i1e_*", "*", UNKNOWN_PRIM("bessel_i1e", "special")},
    {"*sweep_lax_bessel_i1e_*", "*", UNKNOWN_PRIM("bessel_i1e", "special")},
    {"*sweep_jnp_divide__bcast_*", "vmap:jax:interp", XLA_RECIPROCAL},
    {"*sweep_jnp_prod__axall_*", "jvp:jax:interp", CANCELLATION},
    {"*sweep_jnp_sum__axall_*", "jvp:jax:interp", CANCELLATION},
    {"*sweep_jnp_divide__bcast_*", "vmap:jax:jit", XLA_RECIPROCAL},
    {"*sweep_jnp_prod__axall_*", "jvp:jax:jit", CANCELLATION},
    {"*sweep_jnp_sum__axall_*", "jvp:jax:jit", CANCELLATION},
    {"*sweep_sp_betainc_*", "*", UNKNOWN_PRIM("regularized_incomplete_beta", "special")},
    {"*sweep_st_beta_cdf_*", "*", UNKNOWN_PRIM("regularized_incomplete_beta", "special")},
    /* JAX hoists a jaxpr object that several custom_linear_solve equations
     * share (the transposed solve reuses the forward one's matvec) as
     * `let jaxpr = ... in`, unreferenced in the text: each tuple prints its
     * jaxprs as programs of their own, so the sharing is not in the text and
     * our printout hoists only what the text shows. Values all match. */
    {"linalg_solve_f32", "jvp:print", CLS_SHARED},
    {"linalg_solve_f32", "vjp:print", CLS_SHARED},
    {"linalg_solve_matrix_f32", "jvp:print", CLS_SHARED},
    {"linalg_solve_matrix_f32", "vjp:print", CLS_SHARED},
    {"linalg_inv_f32", "jvp:print", CLS_SHARED},
    {"linalg_inv_f32", "vjp:print", CLS_SHARED},
    {"*linalg_solve_grad_f*", "print", CLS_SHARED},
    /* jax.scipy.linalg.expm (runs since SearchSorted landed): its f32 jvp
     * and vjp solve with lu's custom_linear_solve and share a jaxpr */
    {"linalg_expm_f32", "jvp:print", CLS_SHARED},
    {"linalg_expm_f32", "vjp:print", CLS_SHARED},
};
const int conf_n_known_failures = (int)(sizeof conf_known_failures / sizeof conf_known_failures[0]);
