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

#define FLOAT0_LITERAL "parse: JAX prints the zero tangent of an integer or boolean output as " \
                       "the float0 literal (b'',):float0[] (broadcast to the output's shape); " \
                       "the parser reads no float0 literal yet (\"malformed number\")"
#define FLOAT0_NPY "load: JAX's float0 tangent of an integer output is saved as a NumPy void " \
                   "array (dtype |V1), which ft_npy_read does not read; the check cannot run"
#define CLS_SHARED "print: JAX hoists a jaxpr object shared by custom_linear_solve equations " \
                   "(each printed inside _LinearSolveTuple as a program of its own, so the " \
                   "sharing is not in the text); our printout hoists what the text shows"
#define HOIST_NAME "print: a shared sub-jaxpr that JAX hoists as 'jaxpr1' (no equation that " \
                   "JAX counts names it) is named '_pad' by our printer after a jit that calls " \
                   "it; the hoisting-name rule of core.pp_toplevel_jaxpr is not fully matched"

#define COMPLEX_PROD "eval: reduce_prod of complex64 (jnp.fft's norm=\"ortho\"/\"forward\" multiplies " \
                     "the axis lengths as complex numbers) is not in the interpreter yet; refused " \
                     "with 'not defined for dtype c64' (issue 17 §1, complex support)"
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

#define NONZERO "parse: jnp.unique, setdiff1d and in1d with size= print JAX 0.12's primitive " \
  "Nonzero, which the primitive table does not have yet (issue 17); refused with 'unknown " \
  "primitive', never run wrongly"
#define DIGAMMA_F32 "11 ulp from XLA's f32 digamma (bound 8) at one element: ours is computed " \
  "in f64 and rounded (0.5 ulp against a __float128 reference, docs/special-functions.md); " \
  "the harness has no long-double digamma to show which side is the less accurate"
#define LGAMMA_NEAR_ZERO "654 ulp but 0.27 eps*S: the result (-0.0033) is near a zero of " \
  "lgamma, where ulp error is unbounded for both sides; the one-transcendental ulp class is " \
  "too tight there (as ULP_CLASS_TOO_TIGHT)"
#define HOIST_NAME_SHARED "print: a sub-jaxpr shared by a custom_jvp rule and a named jit " \
  "(jax.scipy.special exp1, expn, hyp1f1) is hoisted under the jit's name (remainder, " \
  "gammasgn) where JAX writes jaxpr; print-only, the parsed program and its results pass"
#define JIT_CONSTVARS "eval: a jit whose sub-jaxpr closes over arrays (constvars; " \
  "jax.scipy.special sici, spence) is called without its constants and refused with " \
  "'expected N inputs (K constants + M arguments)', never run wrongly"

#define LOOP_PRINTOUT "parse: JAX 0.12's printout of this transform of a loop program does " \
  "not parse yet (a scan whose ft_in/ft_out pytree no longer matches its carries after JAX's " \
  "transform, or a nested scan's counts; printer/parser work, issue 16). Our own transform " \
  "of the same forward program passes the same check (*:ours:*)"
#define HORNER_F32 "JAX's f32 gradient program of a 6-step Horner scan, run by us, is 36 " \
  "eps*S from JAX's result (bound 12): XLA evaluates its backward scan in another order; " \
  "our own gradient (grad:ours:*) and the f64 case pass"
#define HOIST_NAME_WHERE "print: JAX hoists this shared _where sub-jaxpr as jaxpr, ours keeps " \
  "the name _where1 (jax.scipy.stats.truncnorm.cdf, x64); print-only, the program passes"

const conf_known conf_known_failures[] = {
    {"*loop_bool_flag_carry_f*", "hessian:parse", LOOP_PRINTOUT},
    {"*loop_bool_flag_carry_f*", "jvp:parse", LOOP_PRINTOUT},
    {"*loop_nested_fori_matpow_f*", "grad:parse", LOOP_PRINTOUT},
    {"*loop_nested_fori_matpow_f*", "hessian:parse", LOOP_PRINTOUT},
    {"*loop_nested_scan_closure_f*", "hessian:parse", LOOP_PRINTOUT},
    {"*loop_pytree_int_counter_f*", "hessian:parse", LOOP_PRINTOUT},
    {"*loop_pytree_int_counter_f*", "jvp:parse", LOOP_PRINTOUT},
    {"loop_horner_scan_wrt_x_f32", "grad:jax:*", HORNER_F32},
    {"loop_horner_scan_wrt_x_f32", "jacrev:jax:*", HORNER_F32},
    {"x64_sweep_st_truncnorm_cdf_f64", "print", HOIST_NAME_WHERE},
    {"*sweep_jnp_unique_i32", "parse", NONZERO},
    {"*sweep_jnp_unique__counts_i32", "parse", NONZERO},
    {"*sweep_jnp_setdiff1d_i32", "parse", NONZERO},
    {"*sweep_jnp_in1d_union_i32", "parse", NONZERO},
    {"sweep_sp_digamma_f32", "eval:*", DIGAMMA_F32},
    {"x64_sweep_sp_loggamma_f64", "eval:*", LGAMMA_NEAR_ZERO},
    {"*sweep_sp_exp1_f*", "print", HOIST_NAME_SHARED},
    {"*sweep_sp_expn_f*", "print", HOIST_NAME_SHARED},
    {"*sweep_sp_hyp1f1_f*", "print", HOIST_NAME_SHARED},
    {"*sweep_sp_sici_f*", "eval:*", JIT_CONSTVARS},
    {"*sweep_sp_spence_f*", "eval:*", JIT_CONSTVARS},
    {"*prim_zeta_f*", "eval:*", ZETA_XLA_NAN},

    {"prim_sort_bf16_0", "eval:*", SORT_DAZ},
    {"prim_sort_f32_0", "eval:*", SORT_DAZ},
    {"x64_prim_sort_f64_0", "eval:*", SORT_DAZ},
    /* erf's derivative is the polynomial; the forward and vmap have none */
    /* fixtures/program2 */
    {"*prog2_segment_mean_*", "vjp:parse", FLOAT0_LITERAL},
    {"*prog2_viterbi_scan_*", "jvp:load", FLOAT0_NPY},
    {"*prog2_heat_equation_2d_*", "vjp:print", HOIST_NAME},
    /* fixtures/sweep (made by tools/conformance-known from a dump of every check) */
    {"*sweep_jnp_argmax__ax0_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_argmax__ax1_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_argmax__axall_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_argmax__axm1_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_argmax__keepdims_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_argmin__ax0_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_argmin__ax1_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_argmin__axall_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_argmin__axm1_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_argmin__keepdims_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_count_nonzero__ax01_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_count_nonzero__ax0_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_count_nonzero__ax1_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_count_nonzero__axall_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_count_nonzero__axm1_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_equal_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_greater_equal_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_greater_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_isclose_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_isfinite_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_isinf_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_isnan_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_less_equal_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_less_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_nanargmax__ax0_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_nanargmax__ax1_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_nanargmax__axall_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_nanargmax__axm1_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_nanargmax__keepdims_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_nanargmin__ax0_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_nanargmin__ax1_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_nanargmin__axall_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_nanargmin__axm1_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_nanargmin__keepdims_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_not_equal_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_signbit_*", "jvp:load", FLOAT0_NPY},
    {"*sweep_jnp_digitize_*", "*", UNKNOWN_PRIM("SearchSorted", "prims")},
    {"*sweep_jnp_histogram_*", "*", UNKNOWN_PRIM("SearchSorted", "prims")},
    {"*sweep_jnp_interp__lr_*", "*", UNKNOWN_PRIM("SearchSorted", "prims")},
    {"*sweep_jnp_interp_*", "*", UNKNOWN_PRIM("SearchSorted", "prims")},
    {"*sweep_jnp_searchsorted__compare_all_*", "*", UNKNOWN_PRIM("SearchSorted", "prims")},
    {"*sweep_jnp_searchsorted__right_*", "*", UNKNOWN_PRIM("SearchSorted", "prims")},
    {"*sweep_jnp_searchsorted__scan_*", "*", UNKNOWN_PRIM("SearchSorted", "prims")},
    {"*sweep_jnp_searchsorted__sort_*", "*", UNKNOWN_PRIM("SearchSorted", "prims")},
    {"*sweep_jnp_searchsorted_*", "*", UNKNOWN_PRIM("SearchSorted", "prims")},
    {"*sweep_jnp_i0_*", "*parse", UNKNOWN_PRIM("bessel_i0e", "special")},
    {"*sweep_sp_i0_*", "*", UNKNOWN_PRIM("bessel_i0e", "special")},
    {"*sweep_sp_i0e_*", "*", UNKNOWN_PRIM("bessel_i0e", "special")},
    {"*sweep_lax_bessel_i0e_*", "*", UNKNOWN_PRIM("bessel_i0e", "special")},
    {"*sweep_st_vonmises_logpdf_*", "*", UNKNOWN_PRIM("bessel_i0e", "special")},
    {"*sweep_jnp_max__where_*", "vjp:parse", FLOAT0_LITERAL},
    {"*sweep_jnp_mean__where_*", "vjp:parse", FLOAT0_LITERAL},
    {"*sweep_jnp_min__where_*", "vjp:parse", FLOAT0_LITERAL},
    {"*sweep_jnp_power__intexp_*", "vjp:parse", FLOAT0_LITERAL},
    {"*sweep_jnp_prod__where_*", "vjp:parse", FLOAT0_LITERAL},
    {"*sweep_jnp_std__where_*", "vjp:parse", FLOAT0_LITERAL},
    {"*sweep_jnp_sum__where_*", "vjp:parse", FLOAT0_LITERAL},
    {"*sweep_jnp_take_along_axis_*", "vjp:parse", FLOAT0_LITERAL},
    {"*sweep_jnp_var__where_*", "vjp:parse", FLOAT0_LITERAL},
    {"sweep_jnp_where_f32", "vjp:parse", FLOAT0_LITERAL},
    {"*sweep_fft_fft2__ortho_*", "*interp", COMPLEX_PROD},
    {"*sweep_fft_fft__forward_*", "*interp", COMPLEX_PROD},
    {"*sweep_fft_fft__ortho_*", "*interp", COMPLEX_PROD},
    {"*sweep_fft_ifft__forward_*", "*interp", COMPLEX_PROD},
    {"*sweep_fft_ifft__ortho_*", "*interp", COMPLEX_PROD},
    {"*sweep_fft_irfft__ortho_*", "*interp", COMPLEX_PROD},
    {"*sweep_fft_rfft__forward_*", "*interp", COMPLEX_PROD},
    {"*sweep_fft_rfft__ortho_*", "*interp", COMPLEX_PROD},
    {"*sweep_sp_gammainc_*", "*", UNKNOWN_PRIM("igamma", "special")},
    {"x64_sweep_lax_igamma_f64", "*", UNKNOWN_PRIM("igamma", "special")},
    {"*sweep_st_chi2_cdf_*", "*", UNKNOWN_PRIM("igamma", "special")},
    {"*sweep_st_gamma_cdf_*", "*", UNKNOWN_PRIM("igamma", "special")},
    {"*sweep_st_gennorm_cdf_*", "*", UNKNOWN_PRIM("igamma", "special")},
    {"*sweep_jnp_divide__bcast_*", "eval:interp", XLA_RECIPROCAL},
    {"sweep_nn_gelu_f32", "*interp", ULP_CLASS_TOO_TIGHT},
    {"x64_sweep_nn_gelu_f64", "*interp", ULP_CLASS_TOO_TIGHT},
    {"*sweep_st_pareto_logpdf_*", "*interp", ULP_CLASS_TOO_TIGHT},
    {"*sweep_jnp_divide__bcast_*", "eval:jit", XLA_RECIPROCAL},
    {"sweep_nn_gelu_f32", "eval:jit", ULP_CLASS_TOO_TIGHT},
    {"x64_sweep_nn_gelu_f64", "eval:jit", ULP_CLASS_TOO_TIGHT},
    {"*sweep_st_pareto_logpdf_*", "eval:jit", ULP_CLASS_TOO_TIGHT},
    {"*sweep_jnp_ldexp_*", "*parse", UNKNOWN_PRIM("Ldexp", "prims")},
    {"*sweep_sp_i1_*", "*", UNKNOWN_PRIM("bessel_i1e", "special")},
    {"*sweep_sp_i1e_*", "*", UNKNOWN_PRIM("bessel_i1e", "special")},
    {"*sweep_lax_bessel_i1e_*", "*", UNKNOWN_PRIM("bessel_i1e", "special")},
    {"*sweep_jnp_log2_*", "*parse", UNKNOWN_PRIM("log2", "prims")},
    {"*sweep_jnp_argwhere_*", "*", UNKNOWN_PRIM("Nonzero", "prims")},
    {"*sweep_jnp_flatnonzero_*", "*", UNKNOWN_PRIM("Nonzero", "prims")},
    {"*sweep_jnp_intersect1d_*", "*", UNKNOWN_PRIM("Nonzero", "prims")},
    {"*sweep_jnp_nonzero_*", "*", UNKNOWN_PRIM("Nonzero", "prims")},
    {"*sweep_sp_gammaincc_*", "*", UNKNOWN_PRIM("igammac", "special")},
    {"*sweep_st_gamma_sf_*", "*", UNKNOWN_PRIM("igammac", "special")},
    {"*sweep_lax_igammac_*", "*", UNKNOWN_PRIM("igammac", "special")},
    {"*sweep_jnp_divide__bcast_*", "vmap:jax:interp", XLA_RECIPROCAL},
    {"*sweep_jnp_prod__axall_*", "jvp:jax:interp", CANCELLATION},
    {"*sweep_jnp_sum__axall_*", "jvp:jax:interp", CANCELLATION},
    {"*sweep_jnp_divide__bcast_*", "vmap:jax:jit", XLA_RECIPROCAL},
    {"*sweep_jnp_prod__axall_*", "jvp:jax:jit", CANCELLATION},
    {"*sweep_jnp_sum__axall_*", "jvp:jax:jit", CANCELLATION},
    {"*sweep_sp_betainc_*", "*", UNKNOWN_PRIM("regularized_incomplete_beta", "special")},
    {"*sweep_st_beta_cdf_*", "*", UNKNOWN_PRIM("regularized_incomplete_beta", "special")},
    {"*sweep_jnp_take__wrap_*", "vjp:parse", FLOAT0_LITERAL},
    {"*sweep_jnp_frexp_*", "*", UNKNOWN_PRIM("Frexp", "prims")},
    {"*sweep_fft_fft2__ortho_*", "eval:jit", COMPLEX_PROD},
    {"*sweep_lax_igamma_grad_a_*", "*", UNKNOWN_PRIM("igamma_grad_a", "special")},
    /* fixtures/linalg (issue 20): lu's pivots and permutation are integer
     * outputs, whose tangents JAX saves as float0 */
    {"*linalg_lu_f32", "jvp:load", FLOAT0_NPY},
    {"*linalg_lu_batched_f32", "jvp:load", FLOAT0_NPY},
    {"*linalg_lu_factor_f32", "jvp:load", FLOAT0_NPY},
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
};
const int conf_n_known_failures = (int)(sizeof conf_known_failures / sizeof conf_known_failures[0]);
