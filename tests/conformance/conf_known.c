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

#define BETAINC_HUGE_F64 "JAX is the less accurate: I_0.5(1e4, 1e4) is exactly 0.5 (symmetry); " \
  "ours is 4.3e-13 below it, JAX's 1.5e-11 (its prefactor exp(a log x + b log1p(-x) - lbeta) " \
  "cancels lgamma values near 1.8e5, and XLA's f64 lgamma is its Lanczos approximation); the " \
  "harness has no long-double betainc to record this as JAX's error " \
  "(docs/special-functions.md)"
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

#define FTZ_NORM_GRAD "XLA flushes subnormals (docs/determinism.md §1): the gradient of " \
  "jnp.linalg.norm at (1e-20, 0, 0) squares to 1e-40, a subnormal f32 that XLA makes 0, so " \
  "JAX divides by a zero norm and gives inf; FrankenTrace keeps the subnormal and gives " \
  "1.0000026 (the exact gradient is 1); the f64 case passes"
#define DPSGD_CANCEL "JAX is the less accurate: the jvp of the clipped mean of 5 per-example " \
  "gradients adds tangent terms up to 2.3 into 0.0027250862 (f64 of the same inputs); JAX's f32 " \
  "is 7.0e-8 from it, ours 1.0e-8 (JAX's program) and 1.5e-8 (our jvp), over the bound " \
  "relative to JAX's value (244-262 eps*S, bound 208); vmap and the f64 forward pass"
#define NAIVE_VARIANCE "JAX is the less accurate: sum(x*x) - sum(x)**2/n over 5,000 f32 values " \
  "near 1000 cancels 5e9 against 5e9; the f64 value is 1667.6, ours 2048 (the pairwise sum, as " \
  "NumPy's f32), XLA's 2352.9; the bound is relative to the result, not to the 5e9 cancelled"
#define SCAN_SAME_VARS "print: JAX's jvp of two lax.scan calls over one body gives two Jaxpr " \
  "objects over the same variables; JAX prints both inline (not hoisted: distinct objects) " \
  "with the same names, and our parser gives each its own variables, so the second prints " \
  "with fresh names; parse, the values and our own jvp all match"

#define CPX_DIV_ULP "policy: JAX's jvp of complex64 atan is g / (1 + square(x)), a complex " \
  "division and no transcendental, yet the case is classed by atan's 4-ulp bound; at one element " \
  "the imaginary part (0.0024 in a result of magnitude 0.52) is 7 ulp from XLA's, which divides " \
  "complex values its own way (FrankenTrace: C's complex division), 0.026 eps*S: a normwise-tiny " \
  "difference, not a wrong value; our own jvp (jvp:ours:*) and the c128 case pass"
#define NAME_PRIM "parse: unknown primitive 'name': JAX 0.12 prints jax.ad_checkpoint." \
  "checkpoint_name(x, 'proj') (the names that checkpoint_policies.save_only_these_names " \
  "reads) as the identity primitive 'name[name=proj]', and src/ir/prims.def does not have it " \
  "(no helper is adding it); the program is refused at parse, never run wrongly"
#define WHITEN_CANCEL "policy: sum(Z[:,0]*Z[:,1]) of whitened data adds 8 products up to ~2 " \
  "into ~0.001 (near 0 by construction); f32: the f64 value of the same inputs is " \
  "0.0010728563, JAX's f32 is 2.6e-7 from it and ours 2.1e-7 (JAX is the less accurate); f64: " \
  "the two agree to 1.7e-16 absolute (0.1 eps of the terms summed); the bound is relative to " \
  "the cancelled result (422 and 999 eps*S, bound 256), not a wrong value"
#define ERR_MEASURE "not a value: the output is max|y - direct| of two ways to compute the same " \
  "convolution, i.e. the rounding error itself (1e-6 in f32, 1e-15 in f64); any two correct " \
  "implementations differ in it; the convolution output itself passes"
#define HMC_CANCEL "policy: the energy change h1 - h0 of a leapfrog trajectory subtracts two " \
  "energies ~1 to give 0.0078 (cancellation, 198 eps*S, bound 160); not a wrong value"
#define EIGH_JVP_GAP "policy: the jvp of |Xc @ v| with v eigh's top eigenvector divides by the " \
  "eigenvalue gaps, amplifying the f32 rounding of the covariance (31 eps*S, bound 24); " \
  "our own jvp (jvp:ours:*) and the f64 case pass"
#define HEUN_ULP_CLASS "policy: an adaptive Heun integrator in a while loop (hundreds of " \
  "arithmetic steps) has sin as its one transcendental, so the case gets sin's 2-ulp bound; " \
  "6 ulp in f64 (1.65 eps*S) is the arithmetic's reordering, as ULP_CLASS_TOO_TIGHT"
#define NOISE_TANH_CANCEL "policy: mean over 5 examples of sum(tanh(x @ w + 0.1 n)) adds 20 " \
  "terms of both signs up to ~1 into 0.00305: a 1-ulp difference in one term is 512 ulp of " \
  "the result (bound 208 eps*S). The random draws are bitwise JAX's; against an 80-bit " \
  "evaluation ours is 405 ulp of the result off, JAX's 108: both within 1 ulp of a term"
#define TANH_SUM_CANCEL "policy: sum(tanh(x @ w)) adds terms of both signs up to ~1 into " \
  "-0.00178 (280 eps*S of the cancelled result in f64, bound 256); the f32 case passes"
const conf_known conf_known_failures[] = {
    /* fixtures/heldout2 (tools/oracle/gen_heldout.py --wave2) */
    {"*ho2_checkpoint_save_only_names_gelu_f*", "*parse", NAME_PRIM},
    {"*ho2_linalg_cov_cholesky_whitening_f*", "eval:*", WHITEN_CANCEL},
    {"ho2_fft_circular_convolution_rfft_f32", "vmap:*:*", ERR_MEASURE},
    {"x64_ho2_fft_circular_convolution_rfft_f64", "eval:*", ERR_MEASURE},
    {"ho2_control_hmc_leapfrog_scan_accept_cond_f32", "vmap:*:*", HMC_CANCEL},
    {"ho2_linalg_pca_eigh_explained_variance_f32", "jvp:jax:*", EIGH_JVP_GAP},
    {"x64_ho2_control_adaptive_heun_while_f64", "eval:*", HEUN_ULP_CLASS},
    {"x64_ho2_lowp_int8_quantize_ste_int32_accum_f64", "eval:*", TANH_SUM_CANCEL},
    {"x64_ho2_random_split_keys_vmap_noise_f64", "eval:*", NOISE_TANH_CANCEL},
    /* fixtures/heldout (tools/oracle/gen_heldout.py) */
    {"ho_norm_at_zero_grad_f32", "grad:jax:*", FTZ_NORM_GRAD},
    {"ho_norm_at_zero_grad_f32", "grad:ours:*", FTZ_NORM_GRAD},
    {"ho_dp_sgd_per_example_clip_f32", "jvp:jax:*", DPSGD_CANCEL},
    {"ho_dp_sgd_per_example_clip_f32", "jvp:ours:*", DPSGD_CANCEL},
    {"ho_f32_long_sum_cancellation_f32", "eval:*", NAIVE_VARIANCE},
    {"ho_f32_long_sum_cancellation_f32", "*:jax:*", NAIVE_VARIANCE},
    {"ho_f32_long_sum_cancellation_f32", "*:ours:*", NAIVE_VARIANCE},
    {"ho_scan_unroll_true_reverse_f32", "jvp:print", SCAN_SAME_VARS},
    {"loop_horner_scan_wrt_x_f32", "grad:jax:*", HORNER_F32},
    {"loop_horner_scan_wrt_x_f32", "jacrev:jax:*", HORNER_F32},
    {"sweep_sp_digamma_f32", "eval:*", DIGAMMA_F32},
    {"x64_sweep_sp_loggamma_f64", "eval:*", LGAMMA_NEAR_ZERO},
    {"*prim_zeta_f*", "eval:*", ZETA_XLA_NAN},
    {"x64_prim_betainc_edges_f64", "eval:*", BETAINC_HUGE_F64},

    {"prim_atan_c64", "jvp:jax:*", CPX_DIV_ULP},
    {"prim_sort_bf16_0", "eval:*", SORT_DAZ},
    {"prim_sort_f32_0", "eval:*", SORT_DAZ},
    {"x64_prim_sort_f64_0", "eval:*", SORT_DAZ},
    /* erf's derivative is the polynomial; the forward and vmap have none */
    /* fixtures/program2 */
    /* fixtures/sweep (made by tools/conformance-known from a dump of every check) */
    {"*sweep_jnp_divide__bcast_*", "eval:interp", XLA_RECIPROCAL},
    {"sweep_nn_gelu_f32", "*interp", ULP_CLASS_TOO_TIGHT},
    {"x64_sweep_nn_gelu_f64", "*interp", ULP_CLASS_TOO_TIGHT},
    {"*sweep_st_pareto_logpdf_*", "*interp", ULP_CLASS_TOO_TIGHT},
    {"*sweep_jnp_divide__bcast_*", "eval:jit", XLA_RECIPROCAL},
    {"sweep_nn_gelu_f32", "eval:jit", ULP_CLASS_TOO_TIGHT},
    {"x64_sweep_nn_gelu_f64", "eval:jit", ULP_CLASS_TOO_TIGHT},
    {"*sweep_st_pareto_logpdf_*", "eval:jit", ULP_CLASS_TOO_TIGHT},
    {"*sweep_jnp_divide__bcast_*", "vmap:jax:interp", XLA_RECIPROCAL},
    {"*sweep_jnp_prod__axall_*", "jvp:jax:interp", CANCELLATION},
    {"*sweep_jnp_sum__axall_*", "jvp:jax:interp", CANCELLATION},
    {"*sweep_jnp_divide__bcast_*", "vmap:jax:jit", XLA_RECIPROCAL},
    {"*sweep_jnp_prod__axall_*", "jvp:jax:jit", CANCELLATION},
    {"*sweep_jnp_sum__axall_*", "jvp:jax:jit", CANCELLATION},
};
const int conf_n_known_failures = (int)(sizeof conf_known_failures / sizeof conf_known_failures[0]);
