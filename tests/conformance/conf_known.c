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

#define LOOP_PRINTOUT "parse: JAX 0.12's printout of this transform of a loop program does " \
  "not parse yet (a hoisted jit reference inside a scan body, or ft_in/ft_out of a scan " \
  "whose pytree leaves the transform changed; printer/parser work, issue 16). Our own " \
  "transform of the same forward program passes the same check (grad:ours:*)"
#define HORNER_F32 "JAX's f32 gradient program of a 6-step Horner scan, run by us, is 36 " \
  "eps*S from JAX's result (bound 12): XLA evaluates its backward scan in another order; " \
  "our own gradient (grad:ours:*) and the f64 case pass"

#define ZETA_XLA_NAN "eval: XLA's zeta returns NaN where the value is +inf: q^-x overflows at a " \
                     "subnormal q, and at a large negative integer q (f16 -65504); FrankenTrace " \
                     "gives +inf (docs/math.md lists the special values)"

const conf_known conf_known_failures[] = {
    {"*prim_zeta_f*", "eval:*", ZETA_XLA_NAN},

    {"*prim_sort_*_0", "eval:*", SORT_DAZ},
    {"*loop_bool_flag_carry_f*", "*:parse", LOOP_PRINTOUT},
    {"*loop_cumprod_buffer_f*", "*:parse", LOOP_PRINTOUT},
    {"*loop_heat_equation_f*", "*:parse", LOOP_PRINTOUT},
    {"*loop_masked_steps_bool_xs_f*", "*:parse", LOOP_PRINTOUT},
    {"*loop_nested_fori_matpow_f*", "*:parse", LOOP_PRINTOUT},
    {"*loop_nested_scan_closure_f*", "*:parse", LOOP_PRINTOUT},
    {"*loop_pytree_int_counter_f*", "*:parse", LOOP_PRINTOUT},
    {"loop_horner_scan_wrt_x_f32", "*:jax:*", HORNER_F32},
};
const int conf_n_known_failures = (int)(sizeof conf_known_failures / sizeof conf_known_failures[0]);
