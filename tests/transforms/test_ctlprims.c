/* tests/transforms/test_ctlprims.c: JAX 0.12's CustomRoot, eval_jaxpr and
 * the generic reduce beyond what the JAX-captured family (fixtures/ctlprims)
 * checks (docs/primitives.md, "CustomRoot, eval_jaxpr and the generic
 * reduce"):
 *  - the generic reduce's order: a*0.5 + b over one-hot inputs gives
 *    exactly 0.5^k, k the number of folds after the element's, in each
 *    regime (sequential up to 32, XLA's TreeReductionRewriter windows past
 *    32, twice past 1024, two operands never rewritten), interpreter and
 *    strict JIT alike;
 *  - vmap of a reduce equals the stacked reduces bit for bit; a batched
 *    init value is refused with JAX's reason; a tangent on an init value is
 *    refused with JAX's words;
 *  - CustomRoot: the solve runs in both engines; jvp in the guess only
 *    (f's consts without tangent) is zero, as JAX's; a tangent on f's
 *    consts is refused naming why; vmap equals stacking;
 *  - eval_jaxpr: print, run, jvp, grad and vmap as a plain call;
 *  - the generic reduce_window: one-hot order against a model of the
 *    row-major window fold (padding, dilations, strides) in both engines,
 *    vmap equals stacking, JAX's refusals, the refused high minor padding,
 *    and its jvp's tangent fold. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

static ft_ctx *C;
static void setup(void) { C = ft_ctx_new(NULL); }
static void teardown(void) { ft_ctx_free(C); }

static ft_jaxpr *parse(const char *text) {
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "test");
  ck_assert_msg(j != NULL, "parse: %s", ft_ctx_error(C));
  return j;
}

static ft_array *vec(int n, const double *v) {
  int64_t d = n;
  ft_array *a = ft_array_new(C, FT_F64, 1, &d);
  ck_assert_ptr_nonnull(a);
  for (int i = 0; i < n; i++) ft_set_f64(a, i, v ? v[i] : 0.0);
  return a;
}

/* Runs j on in[] in the interpreter and in strict ft_jit; the two must
 * agree bit for bit; returns the interpreter's outputs. */
static void run_both(const ft_jaxpr *j, int n_in, ft_array **in, int n_out, ft_array **out) {
  ft_status st = ft_eval(C, j, n_in, (const ft_array *const *)in, n_out, out);
  ck_assert_msg(st == FT_OK, "eval: %s", ft_ctx_error(C));
  ft_jit_options o = FT_JIT_OPTIONS_INIT;
  o.no_disk_cache = true;
  ft_fn *fn = ft_jit(C, j, &o);
  ck_assert_msg(fn != NULL, "jit: %s", ft_ctx_error(C));
  ft_array *o2[8];
  st = ft_call(fn, n_in, (const ft_array *const *)in, n_out, o2);
  ck_assert_msg(st == FT_OK, "call: %s", ft_ctx_error(C));
  for (int k = 0; k < n_out; k++) {
    size_t b = ft_array_nbytes(out[k]);
    ck_assert_uint_eq(b, ft_array_nbytes(o2[k]));
    ck_assert_msg(!memcmp(ft_array_data(out[k]), ft_array_data(o2[k]), b), "jit != interpreter (output %d)", k);
    ft_array_free(o2[k]);
  }
  ft_fn_free(fn);
}

static const char *HALVE_ADD_1D = "{ lambda ; a:f64[%d]. let\n"
                                  "    b:f64[] = reduce[\n"
                                  "      computation=<function <lambda> at 0x7f0000000000>\n"
                                  "      dimensions=(0,)\n"
                                  "      jaxpr={ lambda ; c:f64[] d:f64[]. let\n"
                                  "          e:f64[] = mul c 0.5:f64[]\n"
                                  "          f:f64[] = add e d\n"
                                  "        in (f,) }\n"
                                  "    ] a 0.0:f64[]\n"
                                  "  in (b,) }";

/* How many times XLA halves element i of n before the result (JAX 0.12 on
 * CPU, measured: tools/oracle/gen_ctlprims.py's cases and one-hot runs). */
static int folds_after(int64_t n, int64_t i) {
  if (n <= 32) return (int)(n - 1 - i);
  int64_t w = 32, m = (n + w - 1) / w, pad = m * w - n, low = pad / 2;
  int64_t p = i + low, win = p / w, first = win * w - low, last = first + w - 1;
  if (first < 0) first = 0;
  if (last > n - 1) last = n - 1;
  return (int)(last - i) + folds_after(m, win);
}

START_TEST(reduce_order_one_hot) {
  static const int sizes[] = {1, 7, 32, 33, 64, 100, 1025, 2000};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    int n = sizes[s];
    char text[2048];
    snprintf(text, sizeof text, HALVE_ADD_1D, n);
    ft_jaxpr *j = parse(text);
    int64_t probes[] = {0, 1, n / 2, n - 2, n - 1};
    for (int q = 0; q < 5; q++) {
      int64_t i = probes[q];
      if (i < 0 || i >= n) continue;
      ft_array *x = vec(n, NULL), *out[1];
      ft_set_f64(x, i, 1.0);
      run_both(j, 1, &x, 1, out);
      double want = ldexp(1.0, -folds_after(n, i));
      ck_assert_msg(ft_get_f64(out[0], 0) == want, "n=%d i=%lld: got %a, want %a", n, (long long)i,
                    ft_get_f64(out[0], 0), want);
      ft_array_free(out[0]);
      ft_array_free(x);
    }
    ft_jaxpr_free(j);
  }
}
END_TEST

/* Two operands: never rewritten (XLA skips variadic reduces), so 40
 * elements fold in one sequence. */
START_TEST(reduce_two_operands_sequential) {
  ft_jaxpr *j = parse("{ lambda ; a:f64[40] b:f64[40]. let\n"
                      "    c:f64[] d:f64[] = reduce[\n"
                      "      computation=<function f at 0x7f0000000000>\n"
                      "      dimensions=(0,)\n"
                      "      jaxpr={ lambda ; e:f64[] f:f64[] g:f64[] h:f64[]. let\n"
                      "          i:f64[] = mul e 0.5:f64[]\n"
                      "          j:f64[] = add i g\n"
                      "          k:f64[] = add f h\n"
                      "        in (j, k) }\n"
                      "    ] a b 0.0:f64[] 0.0:f64[]\n"
                      "  in (c, d) }");
  ft_array *in[2] = {vec(40, NULL), vec(40, NULL)}, *out[2];
  ft_set_f64(in[0], 0, 1.0);
  ft_set_f64(in[1], 3, 2.0);
  run_both(j, 2, in, 2, out);
  ck_assert(ft_get_f64(out[0], 0) == ldexp(1.0, -39));
  ck_assert(ft_get_f64(out[1], 0) == 2.0);
  for (int k = 0; k < 2; k++) ft_array_free(out[k]), ft_array_free(in[k]);
  ft_jaxpr_free(j);
}
END_TEST

static const char *HALVE_ADD_2D = "{ lambda ; a:f64[3,70] z:f64[]. let\n"
                                  "    b:f64[3] = reduce[\n"
                                  "      computation=<function <lambda> at 0x7f0000000000>\n"
                                  "      dimensions=(1,)\n"
                                  "      jaxpr={ lambda ; c:f64[] d:f64[]. let\n"
                                  "          e:f64[] = mul c 0.5:f64[]\n"
                                  "          f:f64[] = add e d\n"
                                  "        in (f,) }\n"
                                  "    ] a z\n"
                                  "  in (b,) }";

START_TEST(reduce_vmap_equals_stacking) {
  ft_jaxpr *j = parse(HALVE_ADD_2D);
  int in_axes[2] = {0, FT_VMAP_NONE}, out_axes[1] = {0};
  ft_jaxpr *v = ft_vmap(C, j, 2, in_axes, 1, out_axes, 2);
  ck_assert_msg(v != NULL, "vmap: %s", ft_ctx_error(C));
  int64_t bd[3] = {2, 3, 70};
  ft_array *xb = ft_array_new(C, FT_F64, 3, bd), *z = vec(1, NULL);
  ft_array *zs = ft_array_new(C, FT_F64, 0, NULL);
  ft_set_f64(zs, 0, 0.25);
  for (int i = 0; i < 420; i++) ft_set_f64(xb, i, sin(0.37 * i) * 3.0);
  ft_array *in[2] = {xb, zs}, *ob[1];
  run_both(v, 2, in, 1, ob);
  for (int b = 0; b < 2; b++) {
    int64_t d2[2] = {3, 70};
    ft_array *x = ft_array_new(C, FT_F64, 2, d2), *o[1];
    for (int i = 0; i < 210; i++) ft_set_f64(x, i, ft_get_f64(xb, b * 210 + i));
    ft_array *in1[2] = {x, zs};
    run_both(j, 2, in1, 1, o);
    for (int k = 0; k < 3; k++) ck_assert(ft_get_f64(o[0], k) == ft_get_f64(ob[0], b * 3 + k));
    ft_array_free(o[0]);
    ft_array_free(x);
  }
  ft_array_free(ob[0]);
  /* a batched init value: JAX raises NotImplementedError there */
  int in_axes2[2] = {0, 0};
  ck_assert_ptr_null(ft_vmap(C, j, 2, in_axes2, 1, out_axes, 2));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "batched init value"));
  ft_ctx_clear_error(C);
  /* a tangent on the init value: JAX's refusal */
  ck_assert_ptr_null(ft_jvp(C, j));
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "non-zero tangents for initial values"));
  ft_ctx_clear_error(C);
  ft_array_free(xb), ft_array_free(z), ft_array_free(zs);
  ft_jaxpr_free(v);
  ft_jaxpr_free(j);
}
END_TEST

/* The generic reduce_window: a*0.5 + b over windows (2, 3), strides
 * (1, 2), low padding (1, 2), base dilation (1, 2), window dilation (2, 1)
 * of a 4x5 operand. */
static const char *RW_HALVE = "{ lambda ; a:f64[4,5] z:f64[]. let\n"
                              "    b:f64[%d,%d] = reduce_window[\n"
                              "      base_dilation=(1, 2)\n"
                              "      consts=()\n"
                              "      jaxpr={ lambda ; c:f64[] d:f64[]. let\n"
                              "          e:f64[] = mul c 0.5:f64[]\n"
                              "          f:f64[] = add e d\n"
                              "        in (f,) }\n"
                              "      padding=((1, %d), (2, %d))\n"
                              "      window_dilation=(2, 1)\n"
                              "      window_dimensions=(2, 3)\n"
                              "      window_strides=(1, 2)\n"
                              "    ] a z\n"
                              "  in (b,) }";

/* The model (independent of src/): operand index of padded-dilated
 * position p, or -1. */
static int64_t rw_src(int64_t p, int64_t lo, int64_t dil, int64_t n) {
  int64_t q = p - lo;
  if (q < 0 || q % dil || q / dil >= n) return -1;
  return q / dil;
}

START_TEST(reduce_window_order_one_hot) {
  char text[2048];
  /* rows: 4 + 1 = 5 padded, window 1 + 2*1 = 3: 3 outputs; cols: 9 + 2 = 11, window 3, stride 2: 5 */
  snprintf(text, sizeof text, RW_HALVE, 3, 5, 0, 0);
  ft_jaxpr *j = parse(text);
  ck_assert_int_eq(j->eqns[0].out[0]->aval.dims[0], 3);
  ck_assert_int_eq(j->eqns[0].out[0]->aval.dims[1], 5);
  ft_array *z = ft_array_new(C, FT_F64, 0, NULL);
  ft_set_f64(z, 0, 0.0);
  for (int hot = 0; hot < 20; hot++) {
    int64_t d[2] = {4, 5};
    ft_array *x = ft_array_new(C, FT_F64, 2, d), *out[1];
    for (int i = 0; i < 20; i++) ft_set_f64(x, i, i == hot ? 1.0 : 0.0);
    ft_array *in[2] = {x, z};
    run_both(j, 2, in, 1, out);
    for (int oy = 0; oy < 3; oy++)
      for (int ox = 0; ox < 5; ox++) {
        int after = -1; /* the folds after the hot element's, row-major over the window */
        for (int ky = 0; ky < 2; ky++)
          for (int kx = 0; kx < 3; kx++) {
            int64_t r = rw_src(oy + ky * 2, 1, 1, 4), c = rw_src(ox * 2 + kx, 2, 2, 5);
            if (r < 0 || c < 0) continue;
            if (after >= 0) after++;
            if (r * 5 + c == hot) after = 0;
          }
        double want = after < 0 ? 0.0 : ldexp(1.0, -after), got = ft_get_f64(out[0], oy * 5 + ox);
        ck_assert_msg(got == want, "hot %d out (%d,%d): got %a want %a", hot, oy, ox, got, want);
      }
    ft_array_free(out[0]), ft_array_free(x);
  }
  /* vmap equals stacking; a batched init value and an init tangent are refused with JAX's words */
  int in_axes[2] = {0, FT_VMAP_NONE}, out_axes[1] = {0};
  ft_jaxpr *v = ft_vmap(C, j, 2, in_axes, 1, out_axes, 2);
  ck_assert_msg(v != NULL, "vmap: %s", ft_ctx_error(C));
  int64_t bd[3] = {2, 4, 5};
  ft_array *xb = ft_array_new(C, FT_F64, 3, bd), *ob[1];
  for (int i = 0; i < 40; i++) ft_set_f64(xb, i, sin(0.71 * i) * 2.0);
  ft_array *inb[2] = {xb, z};
  run_both(v, 2, inb, 1, ob);
  for (int b = 0; b < 2; b++) {
    int64_t d[2] = {4, 5};
    ft_array *x = ft_array_new(C, FT_F64, 2, d), *o[1];
    for (int i = 0; i < 20; i++) ft_set_f64(x, i, ft_get_f64(xb, b * 20 + i));
    ft_array *in[2] = {x, z};
    run_both(j, 2, in, 1, o);
    for (int k = 0; k < 15; k++) ck_assert(ft_get_f64(o[0], k) == ft_get_f64(ob[0], b * 15 + k));
    ft_array_free(o[0]), ft_array_free(x);
  }
  ft_array_free(ob[0]), ft_array_free(xb);
  ft_jaxpr_free(v);
  int in_axes2[2] = {0, 0};
  ck_assert_ptr_null(ft_vmap(C, j, 2, in_axes2, 1, out_axes, 2));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "not implemented for initial values"));
  ft_ctx_clear_error(C);
  ck_assert_ptr_null(ft_jvp(C, j));
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "non-zero init_value_tangent"));
  ft_ctx_clear_error(C);
  ft_jaxpr_free(j);
  /* high padding on the minor axis under a window of 2 rows: XLA's order
   * there is not row-major (measured); refused in both engines */
  snprintf(text, sizeof text, RW_HALVE, 3, 6, 0, 2);
  j = parse(text);
  {
    int64_t d[2] = {4, 5};
    ft_array *x = ft_array_new(C, FT_F64, 2, d), *out[1] = {NULL};
    ft_array *in[2] = {x, z};
    ck_assert_int_eq(ft_eval(C, j, 2, (const ft_array *const *)in, 1, out), FT_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "high padding (2) on the minor axis"));
    ft_ctx_clear_error(C);
    ft_array_free(x);
  }
  ft_jaxpr_free(j);
  ft_array_free(z);
}
END_TEST

/* jvp: the tangent of the (linear) fold is the fold of the tangents, one
 * reduce_window over (x, dx) as JAX's reduce_window_jvp emits it. */
START_TEST(reduce_window_jvp_linear_fold) {
  ft_jaxpr *j = parse("{ lambda ; a:f64[6]. let\n"
                      "    b:f64[3] = reduce_window[\n"
                      "      base_dilation=(1,)\n"
                      "      consts=()\n"
                      "      jaxpr={ lambda ; c:f64[] d:f64[]. let\n"
                      "          e:f64[] = mul c 0.5:f64[]\n"
                      "          f:f64[] = add e d\n"
                      "        in (f,) }\n"
                      "      padding=((0, 1),)\n"
                      "      window_dilation=(1,)\n"
                      "      window_dimensions=(3,)\n"
                      "      window_strides=(2,)\n"
                      "    ] a 0.0:f64[]\n"
                      "  in (b,) }");
  ft_jaxpr *J = ft_jvp(C, j);
  ck_assert_msg(J != NULL, "jvp: %s", ft_ctx_error(C));
  double xv[6] = {1, 2, 3, 4, 5, 6}, tv[6] = {0.5, -1, 2, 0.25, 8, -4};
  ft_array *in[2] = {vec(6, xv), vec(6, tv)}, *out[2];
  run_both(J, 2, in, 2, out);
  for (int o = 0; o < 3; o++) {
    double p = 0, t = 0;
    for (int k = 0; k < 3; k++) /* positions 2o..2o+2; 6 is the high pad */
      if (2 * o + k < 6) p = p * 0.5 + xv[2 * o + k], t = t * 0.5 + tv[2 * o + k];
    ck_assert(ft_get_f64(out[0], o) == p);
    ck_assert(ft_get_f64(out[1], o) == t);
  }
  for (int k = 0; k < 2; k++) ft_array_free(out[k]), ft_array_free(in[k]);
  ft_jaxpr_free(J);
  ft_jaxpr_free(j);
  /* reverse mode: refused, quoting JAX, which has none either */
  j = parse("{ lambda ; a:f64[6]. let\n"
            "    b:f64[2] = reduce_window[\n"
            "      base_dilation=(1,)\n"
            "      consts=()\n"
            "      jaxpr={ lambda ; c:f64[] d:f64[]. let\n"
            "          e:f64[] = mul c 0.5:f64[]\n"
            "          f:f64[] = add e d\n"
            "        in (f,) }\n"
            "      padding=((0, 0),)\n"
            "      window_dilation=(1,)\n"
            "      window_dimensions=(3,)\n"
            "      window_strides=(3,)\n"
            "    ] a 0.0:f64[]\n"
            "    g:f64[] = reduce_sum[axes=(0,) out_sharding=None] b\n"
            "  in (g,) }");
  ck_assert_ptr_null(ft_grad(C, j, 1, (const int[]){0}, false));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "Linearization failed to produce known values"));
  ft_ctx_clear_error(C);
  ft_jaxpr_free(j);
}
END_TEST

/* sqrt(x) by Newton as lax.custom_root prints it: the solve's consts are
 * x, f's and tangent_solve's too (operands a, b, a, a); here the guess is
 * an input of its own. */
static const char *ROOT = "{ lambda ; a:f64[3] g:f64[3]. let\n"
                          "    c:f64[3] = CustomRoot[\n"
                          "      solve_jaxpr={ lambda ; d:f64[3] e:f64[3]. let\n"
                          "          f:i32[] h:f64[3] = scan[\n"
                          "            ft_in=((None,), (None, None), ())\n"
                          "            ft_out=((None, None), ())\n"
                          "            jaxpr={ lambda ; i:f64[3] j:i32[] k:f64[3]. let\n"
                          "                l:i32[] = add j 1:i32[]\n"
                          "                m:f64[3] = div i k\n"
                          "                n:f64[3] = add k m\n"
                          "                o:f64[3] = mul 0.5:f64[] n\n"
                          "              in (l, o) }\n"
                          "            length=30\n"
                          "            reverse=False\n"
                          "            unroll=1\n"
                          "          ] d 0:i32[] e\n"
                          "        in (h,) }\n"
                          "      has_aux=False\n"
                          "    ] a g a a\n"
                          "  in (c,) }";

START_TEST(custom_root_solve_jvp_vmap) {
  ft_jaxpr *j = parse(ROOT);
  char *s = ft_jaxpr_print(C, j);
  ck_assert_ptr_nonnull(s);
  /* JAX's pp_params order (solve_jaxpr, then has_aux), not sorted */
  ck_assert_ptr_nonnull(strstr(s, "CustomRoot[\n      solve_jaxpr={"));
  ck_assert_ptr_nonnull(strstr(s, "      has_aux=False\n    ] a b a a\n"));
  free(s);
  double xv[3] = {2.0, 9.0, 0.25}, gv[3] = {1.0, 1.0, 1.0};
  ft_array *in[2] = {vec(3, xv), vec(3, gv)}, *out[1];
  run_both(j, 2, in, 1, out);
  for (int k = 0; k < 3; k++) ck_assert_double_eq_tol(ft_get_f64(out[0], k), sqrt(xv[k]), 1e-15);
  ft_array_free(out[0]);
  /* jvp: a tangent on x (solve's, f's and tangent_solve's consts) is refused */
  ck_assert_ptr_null(ft_jvp(C, j));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "does not print"));
  ft_ctx_clear_error(C);
  /* vmap over x: each member is the unbatched solve, bit for bit */
  int in_axes[2] = {0, FT_VMAP_NONE}, out_axes[1] = {0};
  ft_jaxpr *v = ft_vmap(C, j, 2, in_axes, 1, out_axes, 2);
  ck_assert_msg(v != NULL, "vmap: %s", ft_ctx_error(C));
  int64_t d2[2] = {2, 3};
  ft_array *xb = ft_array_new(C, FT_F64, 2, d2), *ob[1];
  double xs[6] = {2.0, 9.0, 0.25, 5.0, 1e-3, 1e3};
  for (int i = 0; i < 6; i++) ft_set_f64(xb, i, xs[i]);
  ft_array *inb[2] = {xb, in[1]};
  run_both(v, 2, inb, 1, ob);
  for (int b = 0; b < 2; b++) {
    ft_array *x1 = vec(3, xs + 3 * b), *o1[1];
    ft_array *in1[2] = {x1, in[1]};
    run_both(j, 2, in1, 1, o1);
    for (int k = 0; k < 3; k++) ck_assert(ft_get_f64(o1[0], k) == ft_get_f64(ob[0], 3 * b + k));
    ft_array_free(o1[0]), ft_array_free(x1);
  }
  ft_array_free(ob[0]), ft_array_free(xb);
  ft_array_free(in[0]), ft_array_free(in[1]);
  ft_jaxpr_free(v);
  ft_jaxpr_free(j);
}
END_TEST

/* The jvp in the guess alone: the printout's jvp with x held constant. */
START_TEST(custom_root_guess_tangent_is_zero) {
  const char *text = "{ lambda ; g:f64[]. let\n"
                     "    c:f64[] = CustomRoot[\n"
                     "      solve_jaxpr={ lambda ; d:f64[] e:f64[]. let\n"
                     "          h:f64[] = div d e\n"
                     "          i:f64[] = add e h\n"
                     "          j:f64[] = mul 0.5:f64[] i\n"
                     "        in (j,) }\n"
                     "      has_aux=False\n"
                     "    ] 4.0:f64[] g 4.0:f64[] 4.0:f64[]\n"
                     "  in (c,) }";
  ft_jaxpr *j = parse(text);
  ft_jaxpr *t = ft_jvp(C, j);
  ck_assert_msg(t != NULL, "jvp: %s", ft_ctx_error(C));
  double gv[3] = {1.0, 2.0, 3.0};
  for (int q = 0; q < 3; q++) {
    ft_array *in[2] = {ft_array_new(C, FT_F64, 0, NULL), ft_array_new(C, FT_F64, 0, NULL)}, *out[2];
    ft_set_f64(in[0], 0, gv[q]);
    ft_set_f64(in[1], 0, 1.0 - q);
    ck_assert_int_eq(ft_jaxpr_num_outputs(t), 2);
    run_both(t, 2, in, 2, out);
    ck_assert(ft_get_f64(out[0], 0) == 0.5 * (gv[q] + 4.0 / gv[q]));
    ck_assert(ft_get_f64(out[1], 0) == 0.0);
    for (int k = 0; k < 2; k++) ft_array_free(out[k]), ft_array_free(in[k]);
  }
  ft_jaxpr_free(t);
  ft_jaxpr_free(j);
}
END_TEST

/* eval_jaxpr: a plain call in every transform (the jvp, grad and vmap of
 * sin(x) * y through it equal those of the inlined body). */
START_TEST(eval_jaxpr_transforms) {
  ft_jaxpr *j = parse("{ lambda ; a:f64[] b:f64[]. let\n"
                      "    c:f64[] = eval_jaxpr[\n"
                      "      call_jaxpr={ lambda ; d:f64[] e:f64[]. let\n"
                      "          f:f64[] = sin d\n"
                      "          g:f64[] = mul f e\n"
                      "        in (g,) }\n"
                      "    ] a b\n"
                      "  in (c,) }");
  char *s = ft_jaxpr_print(C, j);
  ck_assert_ptr_nonnull(strstr(s, "eval_jaxpr[\n      call_jaxpr={"));
  free(s);
  double a = 0.7, b = -1.5;
  ft_array *in[4];
  for (int k = 0; k < 4; k++) in[k] = ft_array_new(C, FT_F64, 0, NULL);
  ft_set_f64(in[0], 0, a), ft_set_f64(in[1], 0, b), ft_set_f64(in[2], 0, 1.0), ft_set_f64(in[3], 0, 2.0);
  ft_array *out[2];
  run_both(j, 2, in, 1, out);
  ck_assert(ft_get_f64(out[0], 0) == sin(a) * b);
  ft_array_free(out[0]);
  ft_jaxpr *t = ft_jvp(C, j);
  ck_assert_msg(t != NULL, "jvp: %s", ft_ctx_error(C));
  run_both(t, 4, in, 2, out);
  ck_assert_double_eq_tol(ft_get_f64(out[1], 0), cos(a) * b * 1.0 + sin(a) * 2.0, 1e-15);
  ft_array_free(out[0]), ft_array_free(out[1]);
  ft_jaxpr *g = ft_grad(C, j, 2, (const int[]){0, 1}, false);
  ck_assert_msg(g != NULL, "grad: %s", ft_ctx_error(C));
  run_both(g, 2, in, 2, out);
  ck_assert_double_eq_tol(ft_get_f64(out[0], 0), cos(a) * b, 1e-15);
  ck_assert_double_eq_tol(ft_get_f64(out[1], 0), sin(a), 1e-15);
  ft_array_free(out[0]), ft_array_free(out[1]);
  int in_axes[2] = {0, FT_VMAP_NONE}, out_axes[1] = {0};
  ft_jaxpr *v = ft_vmap(C, j, 2, in_axes, 1, out_axes, 3);
  ck_assert_msg(v != NULL, "vmap: %s", ft_ctx_error(C));
  double xs[3] = {0.1, -2.0, 3.0};
  ft_array *xb = vec(3, xs), *vin[2] = {xb, in[1]};
  run_both(v, 2, vin, 1, out);
  for (int k = 0; k < 3; k++) ck_assert(ft_get_f64(out[0], k) == sin(xs[k]) * b);
  ft_array_free(out[0]), ft_array_free(xb);
  for (int k = 0; k < 4; k++) ft_array_free(in[k]);
  ft_jaxpr_free(v), ft_jaxpr_free(g), ft_jaxpr_free(t), ft_jaxpr_free(j);
}
END_TEST

int main(void) {
  Suite *s = suite_create("ctlprims");
  TCase *tc = tcase_create("all");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, reduce_order_one_hot);
  tcase_add_test(tc, reduce_two_operands_sequential);
  tcase_add_test(tc, reduce_vmap_equals_stacking);
  tcase_add_test(tc, reduce_window_order_one_hot);
  tcase_add_test(tc, reduce_window_jvp_linear_fold);
  tcase_add_test(tc, custom_root_solve_jvp_vmap);
  tcase_add_test(tc, custom_root_guess_tangent_is_zero);
  tcase_add_test(tc, eval_jaxpr_transforms);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
