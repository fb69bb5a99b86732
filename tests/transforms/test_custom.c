/* tests/transforms/test_custom.c: user-defined derivative rules
 * (ft_custom_jvp_call, ft_custom_vjp_call; src/trace/custom.c,
 * src/transforms/custom.c).
 *
 * Each rule here deliberately differs from the true derivative of its
 * function (or is the numerically stable form of it), so a result can only
 * come out right if the transforms used the rule:
 *  - custom_jvp: log1pexp with the stable rule (grad at x = 1000 is 1, where
 *    differentiating the function gives NaN); x^3 with the rule 5x^2 (grad
 *    5x^2, grad∘grad 10x, jvp 5x^2 t);
 *  - custom_vjp: JAX's gradient-clipping example (bwd clips the cotangent),
 *    residuals from fwd, grad∘grad differentiating fwd and bwd, forward mode
 *    refused at evaluation as in JAX, linearize + linear_transpose;
 *  - closed-over values (captured consts) refused under differentiation;
 *  - vmap before and after the transforms (the rules are batched too);
 *  - printing and parsing the traced jaxprs (rules print as sub-jaxprs) is a
 *    fixpoint, and the parsed program still uses the rules;
 *  - misuse: rules of the wrong arity or avals, NULL functions, bad names. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"
#include "transforms/transforms.h"

static ft_ctx *C;
static void setup(void) { C = ft_ctx_new(NULL); }
static void teardown(void) { ft_ctx_free(C); }

static const ft_aval F64 = {.dtype = FT_F64, .rank = 0};

static ft_array *scalar_arr(double v) {
  ft_array *a = ft_array_new(C, FT_F64, 0, NULL);
  ck_assert_ptr_nonnull(a);
  ft_set_f64(a, 0, v);
  return a;
}

static ft_array *vec_arr(int n, const double *v) {
  int64_t d = n;
  ft_array *a = ft_array_new(C, FT_F64, 1, &d);
  ck_assert_ptr_nonnull(a);
  for (int i = 0; i < n; i++) ft_set_f64(a, i, v[i]);
  return a;
}

static ft_jaxpr *trace(ft_trace_fn fn, int n, const ft_aval *avals) {
  ft_jaxpr *j = ft_trace(C, fn, NULL, n, avals);
  ck_assert_msg(j != NULL, "trace: %s", ft_ctx_error(C));
  ck_assert_msg(ft_jaxpr_verify(C, j) == FT_OK, "verify: %s", ft_ctx_error(C));
  return j;
}

/* Output k of j on scalar inputs x[0..n). */
static double eval_k(const ft_jaxpr *j, int n, const double *x, int k) {
  ft_array *in[8], *out[8];
  for (int i = 0; i < n; i++) in[i] = scalar_arr(x[i]);
  int no = ft_jaxpr_num_outputs(j);
  ft_status st = ft_eval(C, j, n, (const ft_array *const *)in, no, out);
  ck_assert_msg(st == FT_OK, "eval: %s", ft_ctx_error(C));
  double v = ft_get_f64(out[k], 0);
  for (int i = 0; i < n; i++) ft_array_free(in[i]);
  for (int i = 0; i < no; i++) ft_array_free(out[i]);
  return v;
}

static double eval1(const ft_jaxpr *j, double x) { return eval_k(j, 1, &x, 0); }

static ft_jaxpr *grad(const ft_jaxpr *j) {
  ft_jaxpr *g = ft_grad(C, j, 0, NULL, false);
  ck_assert_msg(g != NULL, "grad: %s", ft_ctx_error(C));
  return g;
}

/* Counts equations of primitive `name` in the printout of j. */
static int count_prim(const ft_jaxpr *j, const char *name) {
  char *s = ft_jaxpr_print(C, j);
  ck_assert_ptr_nonnull(s);
  int n = 0;
  size_t len = strlen(name);
  for (const char *p = s; (p = strstr(p, name)); p += len)
    n += (p == s || p[-1] == ' ') && (p[len] == ' ' || p[len] == '[' || p[len] == '\n');
  free(s);
  return n;
}

/* ------------------------------------------------------ custom_jvp */

/* log1pexp(x) = log(1 + exp(x)); the stable rule: t * (1 - 1/(1 + exp(x))). */
static int log1pexp_fn(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  (void)max_out, (void)u;
  out[0] = ft_log(ft_add(ft_const_f64(t, 1.0), ft_exp(in[0])));
  return 1;
}

static int log1pexp_jvp(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  ft_val *one = ft_const_f64(t, 1.0);
  log1pexp_fn(t, in, out, max_out, u);
  ft_val *slope = ft_sub(one, ft_div(one, ft_add(one, ft_exp(in[0]))));
  out[1] = ft_mul(in[1], slope);
  return 2;
}

static int log1pexp_main(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  return ft_custom_jvp_call(t, "log1pexp", log1pexp_fn, log1pexp_jvp, u, 1, in, out, max_out);
}

/* The same function without the rule. */
static int log1pexp_plain(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  return log1pexp_fn(t, in, out, max_out, u);
}

/* cube(x) = x^3 with the rule 5 x^2 t (not the derivative: 3 x^2). */
static int cube_fn(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  (void)t, (void)max_out, (void)u;
  out[0] = ft_integer_pow(in[0], 3);
  return 1;
}

static int cube_jvp(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  cube_fn(t, in, out, max_out, u);
  out[1] = ft_mul(ft_mul(ft_const_f64(t, 5.0), ft_integer_pow(in[0], 2)), in[1]);
  return 2;
}

static int cube_main(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  ft_val *y;
  if (ft_custom_jvp_call(t, "cube", cube_fn, cube_jvp, u, 1, in, &y, 1) != 1) return -1;
  (void)max_out;
  out[0] = ft_mul(y, ft_const_f64(t, 2.0)); /* something after the call */
  return 1;
}

START_TEST(custom_jvp_rule_is_used) {
  ft_jaxpr *j = trace(log1pexp_main, 1, &F64), *plain = trace(log1pexp_plain, 1, &F64);
  ck_assert_int_eq(count_prim(j, "custom_jvp_call"), 1);
  /* evaluation runs the function */
  ck_assert(eval1(j, 0.5) == log(1.0 + exp(0.5)));
  ft_jaxpr *g = grad(j), *gp = grad(plain);
  ck_assert(eval1(g, 1000.0) == 1.0);   /* the stable rule */
  ck_assert(isnan(eval1(gp, 1000.0))); /* the function's own derivative: inf/inf */
  ck_assert(eval1(g, 0.0) == 0.5);
  /* grad∘grad differentiates the rule: d/dx (1 - 1/(1+e^x)) = e^x/(1+e^x)^2 */
  ft_jaxpr *gg = grad(g);
  ck_assert(eval1(gg, 0.0) == 0.25);
  ck_assert_double_eq_tol(eval1(gg, 1.0), exp(1.0) / ((1 + exp(1.0)) * (1 + exp(1.0))), 1e-15);
  ft_jaxpr_free(gg), ft_jaxpr_free(g), ft_jaxpr_free(gp), ft_jaxpr_free(plain), ft_jaxpr_free(j);

  /* a rule that is not the derivative: everything follows the rule */
  j = trace(cube_main, 1, &F64);
  ck_assert(eval1(j, 2.0) == 16.0);
  g = grad(j);
  ck_assert(eval1(g, 2.0) == 40.0); /* 2 * 5 x^2, not 2 * 3 x^2 = 24 */
  gg = grad(g);
  ck_assert(eval1(gg, 2.0) == 40.0); /* 2 * 10 x */
  ft_jaxpr *jv = ft_jvp(C, j);
  ck_assert_msg(jv != NULL, "%s", ft_ctx_error(C));
  double xt[2] = {3.0, 0.5};
  ck_assert(eval_k(jv, 2, xt, 0) == 54.0);
  ck_assert(eval_k(jv, 2, xt, 1) == 2 * 5 * 9 * 0.5);
  ck_assert_int_eq(count_prim(jv, "custom_jvp_call"), 0);
  ft_jaxpr_free(jv), ft_jaxpr_free(gg), ft_jaxpr_free(g), ft_jaxpr_free(j);
}
END_TEST

/* ------------------------------------------------------ custom_vjp */

/* JAX's clip_gradient: identity forward, the cotangent clipped to [-0.5, 0.5]. */
static int ident_fn(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  (void)t, (void)max_out, (void)u;
  out[0] = in[0];
  return 1;
}

static int clip_fwd(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  (void)t, (void)max_out, (void)u;
  out[0] = in[0]; /* no residuals */
  return 1;
}

static int clip_bwd(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  (void)max_out, (void)u;
  out[0] = ft_clamp(ft_const_f64(t, -0.5), in[0], ft_const_f64(t, 0.5));
  return 1;
}

/* L(x) = 3 * clip_gradient(sin x): dL/dx = clip(3) cos x = 0.5 cos x. */
static int clip_main(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  ft_val *s = ft_sin(in[0]), *y;
  if (ft_custom_vjp_call(t, "clip_gradient", ident_fn, clip_fwd, clip_bwd, u, 1, &s, &y, 1) != 1)
    return -1;
  (void)max_out;
  out[0] = ft_mul(ft_const_f64(t, 3.0), y);
  return 1;
}

/* cube with residual x (fwd: x^3, x) and the bwd 5 x^2 ct (not 3 x^2 ct). */
static int cube_fwd(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  (void)t, (void)max_out, (void)u;
  out[0] = ft_integer_pow(in[0], 3);
  out[1] = in[0];
  return 2;
}

static int cube_bwd(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  (void)max_out, (void)u;
  out[0] = ft_mul(ft_mul(ft_const_f64(t, 5.0), ft_integer_pow(in[0], 2)), in[1]);
  return 1;
}

static int vcube_main(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  return ft_custom_vjp_call(t, "vcube", cube_fn, cube_fwd, cube_bwd, u, 1, in, out, max_out);
}

START_TEST(custom_vjp_bwd_is_used) {
  ft_jaxpr *j = trace(clip_main, 1, &F64);
  ck_assert_int_eq(count_prim(j, "custom_vjp_call"), 1);
  ck_assert(eval1(j, 0.3) == 3.0 * sin(0.3));
  ft_jaxpr *g = grad(j);
  ck_assert(eval1(g, 0.3) == 0.5 * cos(0.3)); /* clipped; the true derivative is 3 cos x */
  ft_fn *fg = ft_jit(C, g, NULL); /* and compiled */
  ck_assert_msg(fg != NULL, "%s", ft_ctx_error(C));
  ft_array *x3 = scalar_arr(0.3), *g3 = NULL;
  ck_assert_msg(ft_call(fg, 1, (const ft_array *const *)&x3, 1, &g3) == FT_OK, "%s", ft_ctx_error(C));
  ck_assert_double_eq_tol(ft_get_f64(g3, 0), 0.5 * cos(0.3), 1e-15); /* not 3 cos x */
  ft_array_free(x3), ft_array_free(g3), ft_fn_free(fg);
  ft_jaxpr *vg = ft_value_and_grad(C, j, 0, NULL, false);
  ck_assert_ptr_nonnull(vg);
  double x = 0.3;
  ck_assert(eval_k(vg, 1, &x, 0) == 3.0 * sin(0.3));
  ck_assert(eval_k(vg, 1, &x, 1) == 0.5 * cos(0.3));
  ft_jaxpr_free(vg), ft_jaxpr_free(g), ft_jaxpr_free(j);

  /* residuals, and grad∘grad differentiating fwd and bwd */
  j = trace(vcube_main, 1, &F64);
  g = grad(j);
  ck_assert_int_eq(count_prim(g, "custom_lin"), 0);
  ck_assert(eval1(g, 2.0) == 20.0); /* 5 x^2 */
  ft_jaxpr *gg = grad(g);
  ck_assert(eval1(gg, 2.0) == 20.0); /* 10 x */
  ft_jaxpr_free(gg), ft_jaxpr_free(g);

  /* forward mode: traces, but evaluating the tangent is refused, as in JAX */
  ft_jaxpr *jv = ft_jvp(C, j);
  ck_assert_msg(jv != NULL, "%s", ft_ctx_error(C));
  ck_assert_int_eq(count_prim(jv, "custom_lin"), 1);
  ft_array *in[2] = {scalar_arr(2.0), scalar_arr(1.0)}, *out[2];
  ck_assert_int_eq(ft_eval(C, jv, 2, (const ft_array *const *)in, 2, out), FT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "custom_lin is only meaningful under transposition"));
  /* ft_jit refuses to plan custom_lin as an interpreter step; allowed,
   * the step refuses when called */
  ck_assert_ptr_null(ft_jit(C, jv, NULL));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "(custom_lin)"));
  ft_fn *fn = ft_jit(C, jv, &(ft_jit_options){.size = sizeof(ft_jit_options), .allow_fallback = true});
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(C));
  ck_assert_int_eq(ft_call(fn, 2, (const ft_array *const *)in, 2, out), FT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "custom_lin is only meaningful under transposition"));
  ft_fn_free(fn);
  ft_array_free(in[0]), ft_array_free(in[1]);
  ft_jaxpr *jj = ft_jvp(C, jv); /* and no JVP of custom_lin */
  ck_assert_ptr_null(jj);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "custom_lin is only meaningful under transposition"));
  ft_jaxpr_free(jv);

  /* linearize, then transpose the tangent map: bwd again */
  ft_jaxpr *pr = NULL, *tan = NULL;
  int n_res = -1;
  ck_assert_int_eq(ft_linearize(C, j, &pr, &tan, &n_res), FT_OK);
  ck_assert_int_eq(n_res, 1);
  ck_assert_int_eq(count_prim(tan, "custom_lin"), 1);
  ck_assert_int_eq(count_prim(pr, "custom_lin"), 0);
  ft_jaxpr *tr = ft_linear_transpose(C, tan, n_res);
  ck_assert_msg(tr != NULL, "%s", ft_ctx_error(C));
  double res = eval_k(pr, 1, (double[]){3.0}, 1);
  ck_assert(res == 3.0); /* the residual is x */
  ck_assert(eval_k(tr, 2, (double[]){res, 2.0}, 0) == 5 * 9 * 2.0);
  ft_jaxpr_free(tr), ft_jaxpr_free(pr), ft_jaxpr_free(tan), ft_jaxpr_free(j);
}
END_TEST

/* ---------------------------------------------------- closed over */

/* f(x, w) = custom(x -> w * x) with rules that close over w too. */
static ft_val *captured_w;

static int scale_fn(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  (void)t, (void)max_out, (void)u;
  out[0] = ft_mul(captured_w, in[0]);
  return 1;
}

static int scale_jvp(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  (void)t, (void)max_out, (void)u;
  out[0] = ft_mul(captured_w, in[0]);
  out[1] = ft_mul(ft_const_f64(t, 7.0), in[1]); /* the rule: 7, not w */
  return 2;
}

static int scale_fwd(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  scale_fn(t, in, out, max_out, u);
  return 1;
}

static int scale_bwd(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  (void)t, (void)max_out, (void)u;
  out[0] = ft_mul(ft_mul(captured_w, ft_const_f64(t, 2.0)), in[0]); /* 2 w, not w */
  return 1;
}

static int closed_jvp_main(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  captured_w = in[1];
  return ft_custom_jvp_call(t, "scale", scale_fn, scale_jvp, u, 1, in, out, max_out);
}

static int closed_vjp_main(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  captured_w = in[1];
  return ft_custom_vjp_call(t, "scale", scale_fn, scale_fwd, scale_bwd, u, 1, in, out, max_out);
}

START_TEST(closed_over_values) {
  ft_aval two[2] = {F64, F64};
  ft_trace_fn fns[2] = {closed_jvp_main, closed_vjp_main};
  double want[2] = {7.0, 2 * 1.5};
  for (int k = 0; k < 2; k++) {
    ft_jaxpr *j = trace(fns[k], 2, two);
    ck_assert(eval_k(j, 2, (double[]){2.0, 1.5}, 0) == 3.0);
    int arg0 = 0, arg1 = 1;
    ft_jaxpr *g = ft_grad(C, j, 1, &arg0, false);
    ck_assert_msg(g != NULL, "%s", ft_ctx_error(C));
    ck_assert(eval_k(g, 2, (double[]){2.0, 1.5}, 0) == want[k]);
    ft_jaxpr_free(g);
    ck_assert_ptr_null(ft_grad(C, j, 1, &arg1, false));
    ck_assert_int_eq(ft_ctx_status(C), FT_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(ft_ctx_error(C), "closes over (operand 0)") != NULL, "%s", ft_ctx_error(C));
    ft_jaxpr_free(j);
  }
}
END_TEST

/* ------------------------------------------------------------ vmap */

/* Elementwise on f64[4]: 3 * clip_gradient(sin x) and 2 * cube(x). */
static int vec_main(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  (void)max_out;
  ft_val *s = ft_sin(in[0]), *y, *c;
  if (ft_custom_vjp_call(t, "clip_gradient", ident_fn, clip_fwd, clip_bwd, u, 1, &s, &y, 1) != 1 ||
      ft_custom_jvp_call(t, "cube", cube_fn, cube_jvp, u, 1, in, &c, 1) != 1)
    return -1;
  out[0] = ft_add(ft_mul(ft_const_f64(t, 3.0), y), ft_mul(ft_const_f64(t, 2.0), c));
  return 1;
}

START_TEST(vmap_with_rules) {
  const double xs[4] = {0.1, -0.7, 1.3, 2.0};
  /* grad∘vmap: vjp of the batched program with unit cotangents */
  ft_jaxpr *j = trace(vec_main, 1, &F64);
  ft_jaxpr *vj = ft_vmap(C, j, 0, NULL, 0, NULL, 4);
  ck_assert_msg(vj != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr *b = ft_vjp_jaxpr(C, vj);
  ck_assert_msg(b != NULL, "%s", ft_ctx_error(C));
  ft_array *in[2] = {vec_arr(4, xs), vec_arr(4, (double[]){1, 1, 1, 1})}, *out[2];
  ck_assert_msg(ft_eval(C, b, 2, (const ft_array *const *)in, 2, out) == FT_OK, "%s", ft_ctx_error(C));
  for (int i = 0; i < 4; i++)
    ck_assert(ft_get_f64(out[1], i) == 0.5 * cos(xs[i]) + 10 * (xs[i] * xs[i]));
  ft_array_free(out[0]), ft_array_free(out[1]);
  ft_jaxpr_free(b);
  /* vmap∘grad */
  ft_jaxpr *g = grad(j), *vg = ft_vmap(C, g, 0, NULL, 0, NULL, 4);
  ck_assert_msg(vg != NULL, "%s", ft_ctx_error(C));
  ck_assert_msg(ft_eval(C, vg, 1, (const ft_array *const *)in, 1, out) == FT_OK, "%s", ft_ctx_error(C));
  for (int i = 0; i < 4; i++)
    ck_assert(ft_get_f64(out[0], i) == 0.5 * cos(xs[i]) + 10 * (xs[i] * xs[i]));
  ft_array_free(out[0]);
  /* vmap of the linear map (batched custom_lin), then its transpose */
  ft_jaxpr *pr = NULL, *tan = NULL;
  int n_res = -1;
  ck_assert_int_eq(ft_linearize(C, j, &pr, &tan, &n_res), FT_OK);
  int *axes = calloc((size_t)n_res + 1, sizeof *axes);
  for (int i = 0; i < n_res; i++) axes[i] = FT_VMAP_NONE;
  axes[n_res] = 0;
  ft_jaxpr *vt = ft_vmap(C, tan, ft_jaxpr_num_inputs(tan), axes, 0, NULL, 4);
  ck_assert_msg(vt != NULL, "%s", ft_ctx_error(C));
  ck_assert_int_eq(count_prim(vt, "custom_lin"), 1);
  ft_jaxpr *tt = ft_linear_transpose(C, vt, n_res);
  ck_assert_msg(tt != NULL, "%s", ft_ctx_error(C));
  ft_array *x0 = scalar_arr(0.4), *po[8], *ti[8], *to[1];
  ck_assert_int_eq(ft_eval(C, pr, 1, (const ft_array *const *)&x0, 1 + n_res, po), FT_OK);
  for (int i = 0; i < n_res; i++) ti[i] = po[1 + i];
  ti[n_res] = vec_arr(4, xs); /* a batch of output cotangents */
  ck_assert_msg(ft_eval(C, tt, n_res + 1, (const ft_array *const *)ti, 1, to) == FT_OK, "%s", ft_ctx_error(C));
  for (int i = 0; i < 4; i++) { /* the clip sees the cotangent 3 ct */
    double c3 = 3 * xs[i], cl = c3 < -0.5 ? -0.5 : c3 > 0.5 ? 0.5 : c3;
    double w = cl * cos(0.4) + xs[i] * 2 * 5 * 0.4 * 0.4;
    ck_assert_double_eq_tol(ft_get_f64(to[0], i), w, 1e-15);
  }
  ft_array_free(to[0]), ft_array_free(ti[n_res]), ft_array_free(x0);
  for (int i = 0; i <= n_res; i++) ft_array_free(po[i]);
  free(axes);
  ft_array_free(in[0]), ft_array_free(in[1]);
  ft_jaxpr_free(tt), ft_jaxpr_free(vt), ft_jaxpr_free(pr), ft_jaxpr_free(tan);
  ft_jaxpr_free(vg), ft_jaxpr_free(g), ft_jaxpr_free(vj), ft_jaxpr_free(j);
}
END_TEST

/* ------------------------------------------------------ round trip */

static void roundtrip(const ft_jaxpr *j) {
  char *a = ft_jaxpr_print(C, j);
  ck_assert_ptr_nonnull(a);
  ft_jaxpr *p = ft_parse(C, a, strlen(a), "roundtrip");
  ck_assert_msg(p != NULL, "parse: %s\n%s", ft_ctx_error(C), a);
  ck_assert_msg(ft_jaxpr_verify(C, p) == FT_OK, "verify: %s", ft_ctx_error(C));
  char *b = ft_jaxpr_print(C, p);
  ck_assert_str_eq(a, b);
  free(a), free(b);
  ft_jaxpr_free(p);
}

START_TEST(print_parse_fixpoint) {
  ft_aval two[2] = {F64, F64};
  ft_jaxpr *js[4] = {trace(log1pexp_main, 1, &F64), trace(clip_main, 1, &F64),
                     trace(closed_jvp_main, 2, two), trace(closed_vjp_main, 2, two)};
  for (int k = 0; k < 4; k++) roundtrip(js[k]);
  /* the rules print as sub-jaxprs */
  char *s = ft_jaxpr_print(C, js[1]);
  ck_assert_msg(strstr(s, "bwd={ lambda") && strstr(s, "fwd={ lambda"), "%s", s);
  free(s);
  /* a parsed program still uses the rules */
  s = ft_jaxpr_print(C, js[1]);
  ft_jaxpr *p = ft_parse(C, s, strlen(s), "clip");
  free(s);
  ck_assert_ptr_nonnull(p);
  ft_jaxpr *g = grad(p);
  ck_assert(eval1(g, 0.3) == 0.5 * cos(0.3));
  ft_jaxpr_free(g), ft_jaxpr_free(p);
  /* custom_lin prints and parses too */
  ft_jaxpr *pr = NULL, *tan = NULL;
  ck_assert_int_eq(ft_linearize(C, js[1], &pr, &tan, NULL), FT_OK);
  roundtrip(tan);
  s = ft_jaxpr_print(C, tan);
  ck_assert_msg(strstr(s, "custom_lin[") && strstr(s, "num_res=0"), "%s", s);
  free(s);
  ft_jaxpr_free(pr), ft_jaxpr_free(tan);
  for (int k = 0; k < 4; k++) ft_jaxpr_free(js[k]);
}
END_TEST

/* ----------------------------------------------------------- misuse */

static int bad_jvp_arity(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  (void)t, (void)max_out, (void)u;
  out[0] = in[0];
  return 1; /* forgot the tangent */
}

static int bad_bwd_shape(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  (void)max_out, (void)u, (void)in;
  out[0] = ft_full(t, FT_F64, 1, (int64_t[]){2}, 1.0);
  return 1;
}

static int bad_fwd_type(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  (void)t, (void)max_out, (void)u;
  out[0] = ft_convert(in[0], FT_F32);
  return 1;
}

static int misuse_kind;

static int misuse_main(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  switch (misuse_kind) {
  case 0: return ft_custom_jvp_call(t, "f", ident_fn, bad_jvp_arity, u, 1, in, out, max_out);
  case 1: return ft_custom_vjp_call(t, "f", ident_fn, clip_fwd, bad_bwd_shape, u, 1, in, out, max_out);
  case 2: return ft_custom_vjp_call(t, "f", ident_fn, bad_fwd_type, clip_bwd, u, 1, in, out, max_out);
  case 3: return ft_custom_jvp_call(t, "f", ident_fn, NULL, u, 1, in, out, max_out);
  default: return ft_custom_jvp_call(t, "not a name", ident_fn, cube_jvp, u, 1, in, out, max_out);
  }
}

START_TEST(misuse) {
  const char *want[] = {
      "custom_jvp_call: the jvp rule returns 1 values; expected 2",
      "custom_vjp_call: bwd output 0 is f64[2] but argument 0 is f64[]",
      "custom_vjp_call: fwd output 0 is f32[] but the function's output 0 is f64[]",
      "custom_jvp_call: the function and its rules must not be NULL",
      "custom_jvp_call: name 'not a name' must be an identifier",
  };
  for (int k = 0; k < 5; k++) {
    misuse_kind = k;
    ck_assert_ptr_null(ft_trace(C, misuse_main, NULL, 1, &F64));
    ck_assert_msg(strstr(ft_ctx_error(C), want[k]) != NULL, "%d: %s", k, ft_ctx_error(C));
  }
  /* the coverage matrix: custom_lin transposes, batches and evaluates
   * (to an error); it has no JVP, with a reason */
  ck_assert_ptr_null(ft_transpose_rule_status(FT_P_CUSTOM_LIN));
  const char *why = ft_jvp_rule_status(FT_P_CUSTOM_LIN);
  ck_assert_ptr_nonnull(why);
  ck_assert_int_eq(strncmp(why, "unsupported: ", 13), 0);
}
END_TEST


/* ---- custom_jvp_call rules JAX printed only as names (docs/autodiff.md) */

#define RELU_TEXT(NAME, JVP, BODY)                                                         \
  "{ lambda ; a:f64[6]. let\n"                                                             \
  "    b:f64[6] = custom_jvp_call[\n"                                                      \
  "      name=" NAME "\n"                                                                  \
  "      call_jaxpr={ lambda ; c:f64[6]. let\n"                                            \
  "          d:f64[6] = jit[\n"                                                            \
  "            name=" NAME "\n"                                                            \
  "            jaxpr={ lambda ; c:f64[6]. let\n" BODY "              in (d,) }\n"         \
  "          ] c\n"                                                                        \
  "        in (d,) }\n"                                                                    \
  "      jvp=" JVP "\n"                                                                    \
  "      symbolic_zeros=False\n"                                                           \
  "    ] a\n"                                                                              \
  "    f:f64[] = reduce_sum[axes=(0,) out_sharding=None] b\n"                              \
  "  in (f,) }\n"
#define RELU_BODY "                d:f64[6] = max c 0.0:f64[]\n"
#define RELU6_BODY "                e:f64[6] = max c 0.0:f64[]\n" \
                   "                d:f64[6] = min e 6.0:f64[]\n"

static const double EDGES[6] = {-1.0, 0.0, 2.0, 6.0, 7.0, -0.0};

/* grad of the printout `text` on ctx at EDGES into g[6]; false (error on ctx) when refused. */
static bool grad_named(ft_ctx *ctx, const char *text, double *g) {
  ft_jaxpr *j = ft_parse(ctx, text, strlen(text), "f");
  ck_assert_msg(j != NULL, "parse: %s", ft_ctx_error(ctx));
  ft_jaxpr *d = ft_grad(ctx, j, 0, NULL, false);
  ft_jaxpr_free(j);
  if (!d) return false;
  int64_t n = 6;
  ft_array *in = ft_array_new(ctx, FT_F64, 1, &n), *out = NULL;
  for (int i = 0; i < 6; i++) ft_set_f64(in, i, EDGES[i]);
  ft_status st = ft_eval(ctx, d, 1, (const ft_array *const *)&in, 1, &out);
  ck_assert_msg(st == FT_OK, "eval: %s", ft_ctx_error(ctx));
  for (int i = 0; i < 6; i++) g[i] = ft_get_f64(out, i);
  ft_array_free(in);
  ft_array_free(out);
  ft_jaxpr_free(d);
  return true;
}

static void assert_refused(ft_ctx *ctx, const char *name, const char *jvp) {
  ck_assert_int_eq(ft_ctx_status(ctx), FT_ERR_UNSUPPORTED);
  const char *m = ft_ctx_error(ctx);
  char want[128];
  snprintf(want, sizeof want, "custom_jvp_call '%s': its jvp rule is only a name in the printout "
           "(jvp=%s)", name, jvp);
  ck_assert_msg(strstr(m, want) && strstr(m, "jax.make_jaxpr(jax.grad(f))") &&
                strstr(m, "FT_CUSTOM_JVP_PRIMAL"), "message: %s", m);
}

/* jax.nn.relu and relu6 get JAX's rules: select(x > 0, g, 0) and
 * select((x > 0) & (x < 6), g, 0). Expected values captured from JAX
 * 0.12.0.1 (jax.grad(lambda x: jnp.sum(jax.nn.relu(x)))(x) at EDGES, x64):
 * relu [0, 0, 1, 1, 1, 0], relu6 [0, 0, 1, 0, 0, 0]; max's and min's tie
 * rules would give 0.5 at 0 and 6. */
START_TEST(named_rule_known_library) {
  double g[6];
  static const double relu[6] = {0, 0, 1, 1, 1, 0}, relu6[6] = {0, 0, 1, 0, 0, 0};
  ck_assert_msg(grad_named(C, RELU_TEXT("relu", "jvp", RELU_BODY), g), "%s", ft_ctx_error(C));
  for (int i = 0; i < 6; i++) ck_assert_msg(g[i] == relu[i], "relu'(%g) = %g", EDGES[i], g[i]);
  ck_assert_msg(grad_named(C, RELU_TEXT("relu6", "jvp", RELU6_BODY), g), "%s", ft_ctx_error(C));
  for (int i = 0; i < 6; i++) ck_assert_msg(g[i] == relu6[i], "relu6'(%g) = %g", EDGES[i], g[i]);
}
END_TEST

/* jnp.logaddexp (JAX 0.12's printout): grad of sum(logaddexp(a, b)) in
 * both arguments equals jax.grad's bits at ties, infinities and huge
 * values, JAX's quirks included (logaddexp(inf, 1): d/db = e, from
 * _replace_inf; (-inf, -inf): NaN; (1e300, 1e300): 1 each). */
#define LAE_TEXT(name, rule)                                                          \
  "{ lambda ; a:f64[9] b:f64[9]. let\n"                                             \
  "    c:f64[9] = custom_jvp_call[\n"                                              \
  "      name=" name "\n"                                                           \
  "      call_jaxpr={ lambda ; d:f64[9] e:f64[9]. let\n"                           \
  "          f:f64[9] = max d e\n          g:f64[9] = sub d e\n"                  \
  "          h:bool[9] = ne g g\n          i:f64[9] = add d e\n"                  \
  "          j:f64[9] = abs g\n          k:f64[9] = neg j\n"                      \
  "          l:f64[9] = exp k\n          m:f64[9] = log1p l\n"                    \
  "          n:f64[9] = add f m\n          o:f64[9] = select_n h n i\n"           \
  "        in (o,) }\n"                                                             \
  "      jvp=" rule "\n"                                                            \
  "      symbolic_zeros=False\n"                                                    \
  "    ] a b\n"                                                                     \
  "    p:f64[] = reduce_sum[axes=(0,) out_sharding=None] c\n"                      \
  "  in (p,) }\n"

static bool grad_lae(ft_ctx *ctx, const char *text, double g[2][9]) {
  static const double a[9] = {0.0, 1.0, -INFINITY, INFINITY, -INFINITY, 3.0, -2.0, INFINITY, 1e300};
  static const double b[9] = {0.0, -INFINITY, -INFINITY, 1.0, 2.0, 3.0, 5.0, INFINITY, 1e300};
  ft_jaxpr *j = ft_parse(ctx, text, strlen(text), "f");
  if (!j) return false;
  int argnums[2] = {0, 1};
  ft_jaxpr *gj = ft_grad(ctx, j, 2, argnums, false);
  ft_jaxpr_free(j);
  if (!gj) return false;
  int64_t d9 = 9;
  ft_array *in[2] = {ft_array_new(ctx, FT_F64, 1, &d9), ft_array_new(ctx, FT_F64, 1, &d9)}, *out[2] = {0};
  memcpy(ft_array_data_mut(in[0]), a, sizeof a);
  memcpy(ft_array_data_mut(in[1]), b, sizeof b);
  ft_status st = ft_eval(ctx, gj, 2, (const ft_array *const *)in, 2, out);
  ft_jaxpr_free(gj);
  if (!st)
    for (int k = 0; k < 2; k++) memcpy(g[k], ft_array_data(out[k]), sizeof g[k]);
  for (int k = 0; k < 2; k++) ft_array_free(in[k]), ft_array_free(out[k]);
  return st == FT_OK;
}

START_TEST(named_rule_logaddexp) {
  static const double want[2][9] = {
      {0x1p-1, 0x1p+0, NAN, 0x1p+0, 0x0p+0, 0x1.fffffffffffffp-2, 0x1.dda738adf1186p-11, 0x1p+0, 0x1p+0},
      {0x1p-1, 0x0p+0, NAN, 0x1.5bf0a8b14576ap+1, 0x1p+0, 0x1.fffffffffffffp-2, 0x1.ff889631d4838p-1, 0x1p+0,
       0x1p+0}};
  double g[2][9];
  ck_assert_msg(grad_lae(C, LAE_TEXT("logaddexp", "_logaddexp_jvp"), g), "%s", ft_ctx_error(C));
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 9; i++)
      ck_assert_msg(isnan(want[k][i]) ? isnan(g[k][i]) : memcmp(&g[k][i], &want[k][i], 8) == 0,
                    "d/d%s at %d: %a, JAX %a", k ? "b" : "a", i, g[k][i], want[k][i]);
  /* the same body under another name or rule name is refused */
  ck_assert(!grad_lae(C, LAE_TEXT("my_lae", "_logaddexp_jvp"), g));
  assert_refused(C, "my_lae", "_logaddexp_jvp");
  ck_assert(!grad_lae(C, LAE_TEXT("logaddexp", "my_jvp"), g));
  assert_refused(C, "logaddexp", "my_jvp");
}
END_TEST

/* A user's function that only shares the name (another body, or another
 * rule name) is not taken for the library's: refused by default. */
START_TEST(named_rule_lookalikes_refused) {
  double g[6];
  ck_assert(!grad_named(C, RELU_TEXT("relu", "jvp", "                d:f64[6] = max c 1.0:f64[]\n"), g));
  assert_refused(C, "relu", "jvp");
  ck_assert(!grad_named(C, RELU_TEXT("relu", "my_relu_jvp", RELU_BODY), g));
  assert_refused(C, "relu", "my_relu_jvp");
  ck_assert(!grad_named(C, RELU_TEXT("relu6", "jvp", RELU_BODY), g));
  assert_refused(C, "relu6", "jvp");
  ck_assert(!grad_named(C, RELU_TEXT("my_fn", "jvp", RELU_BODY), g));
  assert_refused(C, "my_fn", "jvp");
  /* jvp and linearize refuse too (grad is built on them; vjp likewise) */
  const char *t = RELU_TEXT("my_fn", "jvp", RELU_BODY);
  ft_jaxpr *j = ft_parse(C, t, strlen(t), "f");
  ck_assert_ptr_nonnull(j);
  ck_assert_ptr_null(ft_jvp(C, j));
  assert_refused(C, "my_fn", "jvp");
  ck_assert_ptr_null(ft_vjp_jaxpr(C, j));
  assert_refused(C, "my_fn", "jvp");
  ft_jaxpr_free(j);
}
END_TEST

/* The "safe norm" (a rule that gives 0 at x = 0 through `where`): JAX's
 * grad of sum(safe_norm(x)) at [[0, 0], [3, 4]] is [[0, 0], [0.6, 0.8]].
 * Refused by default; with the opt-in, call_jaxpr's derivative: NaN at the
 * zero row, the documented wrong answer the opt-in accepts. */
#define SAFE_NORM_TEXT                                                 \
  "{ lambda ; a:f64[2,2]. let\n"                                       \
  "    b:f64[2] = custom_jvp_call[\n"                                  \
  "      name=safe_norm\n"                                             \
  "      call_jaxpr={ lambda ; c:f64[2,2]. let\n"                      \
  "          d:f64[2,2] = integer_pow[y=2] c\n"                        \
  "          e:f64[2] = reduce_sum[axes=(1,) out_sharding=None] d\n"   \
  "          f:f64[2] = sqrt e\n"                                      \
  "        in (f,) }\n"                                                \
  "      jvp=_\n"                                                      \
  "      symbolic_zeros=False\n"                                       \
  "    ] a\n"                                                          \
  "    g:f64[] = reduce_sum[axes=(0,) out_sharding=None] b\n"          \
  "  in (g,) }\n"

START_TEST(named_rule_safe_norm) {
  const char *t = SAFE_NORM_TEXT;
  ft_jaxpr *j = ft_parse(C, t, strlen(t), "f");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  ck_assert_ptr_null(ft_grad(C, j, 0, NULL, false));
  assert_refused(C, "safe_norm", "_");
  ft_jaxpr *p = NULL, *tg = NULL;
  int nr = 0;
  ck_assert_int_eq(ft_linearize(C, j, &p, &tg, &nr), FT_ERR_UNSUPPORTED);
  assert_refused(C, "safe_norm", "_");
  ft_jaxpr_free(j);

  ft_ctx_options o = FT_CTX_OPTIONS_INIT;
  o.custom_jvp = FT_CUSTOM_JVP_PRIMAL;
  ft_ctx *pc = ft_ctx_new(&o);
  ck_assert_ptr_nonnull(pc);
  j = ft_parse(pc, t, strlen(t), "f");
  ft_jaxpr *d = ft_grad(pc, j, 0, NULL, false);
  ck_assert_msg(d != NULL, "%s", ft_ctx_error(pc));
  int64_t dims[2] = {2, 2};
  ft_array *in = ft_array_new(pc, FT_F64, 2, dims), *out = NULL;
  static const double x[4] = {0, 0, 3, 4};
  for (int i = 0; i < 4; i++) ft_set_f64(in, i, x[i]);
  ck_assert_int_eq(ft_eval(pc, d, 1, (const ft_array *const *)&in, 1, &out), FT_OK);
  ck_assert(isnan(ft_get_f64(out, 0)) && isnan(ft_get_f64(out, 1)));
  /* the derivative program's arithmetic: (1 / (2 sqrt(25))) * (2 x) */
  ck_assert(ft_get_f64(out, 2) == (1.0 / 10.0) * 6.0 && ft_get_f64(out, 3) == (1.0 / 10.0) * 8.0);
  ft_array_free(in);
  ft_array_free(out);
  ft_jaxpr_free(d);
  ft_jaxpr_free(j);
  ft_ctx_free(pc);

  o.custom_jvp = (ft_custom_jvp_mode)7;
  char msg[256];
  ck_assert_int_eq(ft_ctx_options_check(&o, msg, sizeof msg), FT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(msg, "custom_jvp 7"));
  ck_assert_ptr_null(ft_ctx_new(&o));
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("custom");
  TCase *t = tcase_create("core");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 60);
  tcase_add_test(t, custom_jvp_rule_is_used);
  tcase_add_test(t, custom_vjp_bwd_is_used);
  tcase_add_test(t, closed_over_values);
  tcase_add_test(t, vmap_with_rules);
  tcase_add_test(t, print_parse_fixpoint);
  tcase_add_test(t, misuse);
  tcase_add_test(t, named_rule_known_library);
  tcase_add_test(t, named_rule_lookalikes_refused);
  tcase_add_test(t, named_rule_logaddexp);
  tcase_add_test(t, named_rule_safe_norm);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *r = srunner_create(suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
