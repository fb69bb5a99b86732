/* tests/transforms/test_transforms.c: autodiff (src/transforms).
 *
 * Programs are written as jaxpr text (ft_parse) and run with the reference
 * interpreter (ft_eval). Checks:
 *  - every differentiable primitive: ft_grad against f64 central differences
 *    (h = 1e-6; |g - fd| <= 1e-6 * max(1, |fd|)), the program being
 *    sum(op(x) * w) with position-dependent weights w so that permutations
 *    and broadcasts are seen;
 *  - exact analytic values (d/dx tanh at 0.5, ...), higher derivatives by
 *    grad∘grad∘grad of polynomials and sin/exp/log/tanh compositions;
 *  - control flow: scan (RNN), cond, nested jit, while (forward mode);
 *  - every transpose rule: <A x, y> == <x, A^T y> on random inputs;
 *  - bad input: clear errors.
 * Central differences appear only here, as a check: the library has none. */
#include "ad_util.h"

static ft_array *rand_array(const ft_aval *av, double lo, double hi) {
  ft_array *a = ft_array_new(C, av->dtype, av->rank, av->dims);
  ck_assert_ptr_nonnull(a);
  int64_t n = ft_aval_size(av);
  for (int64_t i = 0; i < n; i++) {
    if (ft_dtype_is_float(av->dtype)) ft_set_f64(a, i, lo + (hi - lo) * urand());
    else if (av->dtype == FT_BOOL) ft_set_i64(a, i, urand() < 0.5);
    else ft_set_i64(a, i, (int64_t)(urand() * 3)); /* indices 0..2 */
  }
  return a;
}

/* Gradient of the scalar program j w.r.t. every float input, checked
 * against central differences. */
static void grad_check_jaxpr(ft_jaxpr *j, double lo, double hi, const char *what) {
  int n = ft_jaxpr_num_inputs(j);
  ft_array *in[16];
  int argn[16], na = 0;
  for (int i = 0; i < n; i++) {
    ft_aval av;
    ft_jaxpr_input_aval(j, i, &av);
    in[i] = rand_array(&av, lo, hi);
    if (ft_dtype_is_float(av.dtype)) argn[na++] = i;
  }
  ft_jaxpr *g = ft_grad(C, j, na, argn, false);
  ck_assert_msg(g != NULL, "%s: grad: %s", what, ft_ctx_error(C));
  verify(g);
  ft_array *gr[16];
  run(g, n, in, gr);
  const double h = 1e-6;
  for (int w = 0; w < na; w++) {
    ft_array *x = in[argn[w]];
    int64_t m = ft_array_size(x);
    for (int64_t e = 0; e < m; e++) {
      double x0 = ft_get_f64(x, e);
      ft_set_f64(x, e, x0 + h);
      double fp = scalar(j, n, in);
      ft_set_f64(x, e, x0 - h);
      double fm = scalar(j, n, in);
      ft_set_f64(x, e, x0);
      double fd = (fp - fm) / (2 * h), an = ft_get_f64(gr[w], e);
      double tol = 1e-6 * fmax(1.0, fabs(fd));
      ck_assert_msg(fabs(an - fd) <= tol, "%s: d/d input %d [%lld]: grad %.12g, central difference %.12g",
                    what, argn[w], (long long)e, an, fd);
    }
  }
  free_arrays(na, gr);
  free_arrays(n, in);
  ft_jaxpr_free(g);
}

/* Builds sum(y * w) around a body defining y:T, w = iota along the last
 * axis + 1.5, and checks its gradient. */
static void gcheck(const char *ins, const char *body, const char *yty, double lo, double hi) {
  int64_t dims[8];
  int r = 0;
  const char *p = strchr(yty, '[') + 1;
  while (*p && *p != ']') {
    dims[r++] = strtoll(p, (char **)&p, 10);
    if (*p == ',') p++;
  }
  char shape[128] = "", axes[128] = "";
  size_t k = 0, q = 0;
  for (int i = 0; i < r; i++) {
    k += (size_t)snprintf(shape + k, sizeof shape - k, i ? ", %lld" : "%lld", (long long)dims[i]);
    q += (size_t)snprintf(axes + q, sizeof axes - q, i ? ", %d" : "%d", i);
  }
  if (r == 1) snprintf(shape + k, sizeof shape - k, ","), snprintf(axes + q, sizeof axes - q, ",");
  char text[8192];
  if (r == 0)
    snprintf(text, sizeof text, "{ lambda ; %s. let\n%s\n    zz:f64[] = mul y 1.5:f64[]\n  in (zz,) }", ins, body);
  else
    snprintf(text, sizeof text,
             "{ lambda ; %s. let\n%s\n"
             "    w:%s = iota[dimension=%d dtype=float64 shape=(%s) sharding=None]\n"
             "    w2:%s = add w 1.5:f64[]\n"
             "    zz:%s = mul y w2\n"
             "    out:f64[] = reduce_sum[axes=(%s) out_sharding=None] zz\n"
             "  in (out,) }",
             ins, body, yty, r - 1, shape, yty, yty, axes);
  ft_jaxpr *j = P(text);
  grad_check_jaxpr(j, lo, hi, text);
  ft_jaxpr_free(j);
}

/* One unary primitive on f64[2,3] in [lo, hi]. */
static void gun(const char *prim, double lo, double hi) {
  char body[256];
  snprintf(body, sizeof body, "    y:f64[2,3] = %s a", prim);
  gcheck("a:f64[2,3]", body, "f64[2,3]", lo, hi);
}

static void gbin(const char *prim, double lo, double hi) {
  char body[256];
  snprintf(body, sizeof body, "    y:f64[2,3] = %s a b", prim);
  gcheck("a:f64[2,3] b:f64[2,3]", body, "f64[2,3]", lo, hi);
  /* with implicit broadcasting: a rank-0 and a size-1 operand */
  snprintf(body, sizeof body, "    y:f64[2,3] = %s a b", prim);
  gcheck("a:f64[] b:f64[2,3]", body, "f64[2,3]", lo, hi);
  gcheck("a:f64[1,3] b:f64[2,3]", body, "f64[2,3]", lo, hi);
}

START_TEST(grad_unary) {
  gun("neg", -2, 2);
  gun("exp", -1, 1);
  gun("exp2", -1, 1);
  gun("log", 0.5, 2);
  gun("log1p", 0, 1);
  gun("expm1", -1, 1);
  gun("tanh", -1, 1);
  gun("logistic", -2, 2);
  gun("sin", -2, 2);
  gun("cos", -2, 2);
  gun("tan", -1, 1);
  gun("asin", -0.9, 0.9);
  gun("acos", -0.9, 0.9);
  gun("atan", -2, 2);
  gun("sinh", -1, 1);
  gun("cosh", -1, 1);
  gun("asinh", -2, 2);
  gun("acosh", 1.2, 3);
  gun("atanh", -0.9, 0.9);
  gun("sqrt", 0.5, 2);
  gun("rsqrt", 0.5, 2);
  gun("cbrt", 0.5, 2);
  gun("square", -2, 2);
  gun("abs", 0.1, 1);
  gun("abs", -1, -0.1);
  gun("erf", -1, 1);
  gun("erfc", -1, 1);
  gun("erf_inv", -0.9, 0.9);
  gun("integer_pow[y=3]", -2, 2);
  gun("integer_pow[y=-2]", 0.5, 2);
  gun("integer_pow[y=1]", -2, 2);
  gun("copy", -2, 2);
  gun("copy_p", -2, 2);
  gun("reduce_precision[exponent_bits=11 mantissa_bits=52]", -2, 2);
  /* zero-derivative primitives away from their jumps */
  gun("floor", 0.1, 0.9);
  gun("ceil", 0.1, 0.9);
  gun("sign", 0.1, 0.9);
  gun("round[rounding_method=0]", 0.1, 0.4);
}
END_TEST

START_TEST(grad_binary) {
  gbin("add", -2, 2);
  gbin("add_any", -2, 2);
  gbin("sub", -2, 2);
  gbin("mul", -2, 2);
  gbin("div", 0.5, 2);
  gbin("pow", 0.5, 2);
  gbin("max", -2, 2);
  gbin("min", -2, 2);
  gbin("atan2", 0.5, 2);
  gcheck("a:f64[2,3] b:f64[2,3]", "    y:f64[2,3] = rem a b", "f64[2,3]", 1.1, 1.9);
}
END_TEST

START_TEST(grad_select_convert) {
  gcheck("a:f64[2,3] b:f64[2,3]",
         "    p:bool[2,3] = gt a b\n    y:f64[2,3] = select_n p a b", "f64[2,3]", -2, 2);
  /* lo < hi (JAX's clamp rule assumes it); x falls below, inside and above */
  gcheck("a:f64[2,3] b:f64[2,3] c:f64[2,3]",
         "    l:f64[2,3] = sub a 2.5:f64[]\n    h:f64[2,3] = add c 2.5:f64[]\n"
         "    x:f64[2,3] = mul b 3.0:f64[]\n    y:f64[2,3] = clamp l x h", "f64[2,3]", -2, 2);
  gcheck("a:f64[] b:f64[2,3] c:f64[]",
         "    l:f64[] = sub a 2.5:f64[]\n    h:f64[] = add c 2.5:f64[]\n"
         "    x:f64[2,3] = mul b 3.0:f64[]\n    y:f64[2,3] = clamp l x h", "f64[2,3]", -2, 2);
}
END_TEST

START_TEST(grad_layout) {
  gcheck("a:f64[3]", "    y:f64[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3) sharding=None] a",
         "f64[2,3]", -2, 2);
  gcheck("a:f64[1,3]", "    y:f64[2,3] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(2, 3) sharding=None] a",
         "f64[2,3]", -2, 2);
  gcheck("a:f64[2,3]", "    y:f64[3,2] = reshape[dimensions=None new_sizes=(3, 2) sharding=None] a", "f64[3,2]", -2, 2);
  gcheck("a:f64[2,3]", "    y:f64[3,2] = transpose[permutation=(1, 0)] a", "f64[3,2]", -2, 2);
  gcheck("a:f64[2,1,3]", "    y:f64[2,3] = squeeze[dimensions=(1,)] a", "f64[2,3]", -2, 2);
  gcheck("a:f64[2,3]", "    y:f64[2,1,3] = expand_dims[dimensions=(1,)] a", "f64[2,1,3]", -2, 2);
  gcheck("a:f64[2,3]", "    y:f64[2,3] = rev[dimensions=(1,)] a", "f64[2,3]", -2, 2);
  gcheck("a:f64[4,5]", "    y:f64[2,2] = slice[limit_indices=(4, 5) start_indices=(1, 1) strides=(2, 2)] a",
         "f64[2,2]", -2, 2);
  gcheck("a:f64[2,3] b:f64[]",
         "    y:f64[5,4] = pad[padding_config=((1, 2, 0), (0, -1, 1))] a b", "f64[5,4]", -2, 2);
  gcheck("a:f64[2,3] b:f64[2,2]", "    y:f64[2,5] = concatenate[dimension=1] a b", "f64[2,5]", -2, 2);
  gcheck("a:f64[4,3] i:i32[] j:i32[]", "    y:f64[2,2] = dynamic_slice[slice_sizes=(2, 2)] a i j", "f64[2,2]", -2, 2);
  gcheck("a:f64[4,3] u:f64[2,2] i:i32[] j:i32[]", "    y:f64[4,3] = dynamic_update_slice a u i j", "f64[4,3]", -2, 2);
  gcheck("a:f64[2,5]", "    y:f64[2,2] z:f64[2,3] = split[axis=1 sizes=(2, 3)] a", "f64[2,2]", -2, 2);
  gcheck("a:f64[2,5]", "    x:f64[2,2] y:f64[2,3] = split[axis=1 sizes=(2, 3)] a", "f64[2,3]", -2, 2);
}
END_TEST

START_TEST(grad_reduce) {
  gcheck("a:f64[2,3]", "    y:f64[2] = reduce_sum[axes=(1,) out_sharding=None] a", "f64[2]", -2, 2);
  gcheck("a:f64[2,3]", "    y:f64[3] = reduce_max[axes=(0,)] a", "f64[3]", -2, 2);
  gcheck("a:f64[2,3]", "    y:f64[2] = reduce_min[axes=(1,)] a", "f64[2]", -2, 2);
  gcheck("a:f64[2,3,2]", "    y:f64[3] = reduce_prod[axes=(0, 2)] a", "f64[3]", -2, 2);
  gcheck("a:f64[2,4]", "    y:f64[2,4] = cumsum[axis=1 reverse=False] a", "f64[2,4]", -2, 2);
  gcheck("a:f64[2,4]", "    y:f64[2,4] = cumsum[axis=1 reverse=True] a", "f64[2,4]", -2, 2);
  gcheck("a:f64[2,4]", "    y:f64[2,4] = cumprod[axis=1 reverse=False] a", "f64[2,4]", 0.5, 2);
  gcheck("a:f64[2,4]", "    y:f64[2,4] = cumlogsumexp[axis=1 reverse=True] a", "f64[2,4]", -2, 2);
  gcheck("a:f64[3,4]", "    y:f64[3,4] = cumlogsumexp[axis=0 reverse=False] a", "f64[3,4]", -2, 2);
}
END_TEST

START_TEST(grad_dot_sort) {
  gcheck("a:f64[2,3] b:f64[3,4]",
         "    y:f64[2,4] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float64] a b",
         "f64[2,4]", -2, 2);
  gcheck("a:f64[2,3,4] b:f64[2,5,3]",
         "    y:f64[2,4,5] = dot_general[dimension_numbers=(([1], [2]), ([0], [0])) preferred_element_type=float64] a b",
         "f64[2,4,5]", -2, 2);
  gcheck("a:f64[3,2] b:f64[2,3]",
         "    y:f64[2,2] = dot_general[dimension_numbers=(([0], [1]), ([], [])) preferred_element_type=float64] a b",
         "f64[2,2]", -2, 2);
  gcheck("a:f64[2,5]", "    y:f64[2,5] = sort[dimension=1 is_stable=True num_keys=1] a", "f64[2,5]", -2, 2);
  gcheck("k:f64[5] a:f64[5]", "    kk:f64[5] y:f64[5] = sort[dimension=0 is_stable=True num_keys=1] k a",
         "f64[5]", -2, 2);
}
END_TEST

/* ------------------------------------------------------- exact values */

/* The derivative of order `order` of a one-input scalar program at x. */
static double deriv(const char *text, int order, double x) {
  ft_jaxpr *j = P(text);
  for (int k = 0; k < order; k++) {
    ft_jaxpr *g = ft_grad(C, j, 0, NULL, false);
    ck_assert_msg(g != NULL, "grad order %d: %s", k + 1, ft_ctx_error(C));
    verify(g);
    ft_jaxpr_free(j);
    j = g;
  }
  ft_array *a = ft_array_from_data(C, FT_F64, 0, NULL, &x);
  double v = scalar(j, 1, &a);
  ft_array_free(a);
  ft_jaxpr_free(j);
  return v;
}

#define UN(body) "{ lambda ; a:f64[]. let\n" body "\n  in (y,) }"

START_TEST(exact_first) {
  /* d/dx tanh at 0.5 = 1 - tanh(0.5)^2 */
  double t = tanh(0.5);
  ck_assert_double_eq_tol(deriv(UN("    y:f64[] = tanh a"), 1, 0.5), 1 - t * t, 1e-15);
  ck_assert_double_eq_tol(deriv(UN("    y:f64[] = sin a"), 1, 0.3), cos(0.3), 1e-15);
  ck_assert_double_eq(deriv(UN("    y:f64[] = log a"), 1, 2.0), 0.5);
  ck_assert_double_eq_tol(deriv(UN("    y:f64[] = exp a"), 1, 1.0), exp(1.0), 1e-15);
  ck_assert_double_eq_tol(deriv(UN("    y:f64[] = logistic a"), 1, 0.0), 0.25, 1e-16);
  ck_assert_double_eq(deriv(UN("    y:f64[] = sqrt a"), 1, 4.0), 0.25);
  ck_assert_double_eq(deriv(UN("    y:f64[] = integer_pow[y=3] a"), 1, 2.0), 12.0);
  /* JAX: d|x|/dx at 0 is 1; max splits ties evenly */
  ck_assert_double_eq(deriv(UN("    y:f64[] = abs a"), 1, 0.0), 1.0);
  ck_assert_double_eq(deriv(UN("    y:f64[] = max a 0.0:f64[]"), 1, 0.0), 0.5);
  ck_assert_double_eq(deriv(UN("    y:f64[] = stop_gradient a"), 1, 3.0), 0.0);
  ck_assert_double_eq(deriv(UN("    b:f64[] = stop_gradient a\n    y:f64[] = mul a b"), 1, 3.0), 3.0);
  ck_assert_double_eq(deriv(UN("    y:f64[] = floor a"), 1, 3.5), 0.0);
  ck_assert_double_eq(deriv(UN("    b:f32[] = convert_element_type[new_dtype=float32 sharding=None weak_type=False] a\n"
                               "    c:f64[] = convert_element_type[new_dtype=float64 sharding=None weak_type=False] b\n"
                               "    y:f64[] = mul c 2.0:f64[]"), 1, 0.1), 2.0);
  /* int -> float conversion has a zero derivative path (float0) */
  ck_assert_double_eq(deriv(UN("    b:i32[] = convert_element_type[new_dtype=int32 sharding=None weak_type=False] a\n"
                               "    c:f64[] = convert_element_type[new_dtype=float64 sharding=None weak_type=False] b\n"
                               "    y:f64[] = add c a"), 1, 2.5), 1.0);
}
END_TEST

START_TEST(exact_higher) {
  const char *poly = UN("    b:f64[] = integer_pow[y=3] a\n    c:f64[] = integer_pow[y=2] a\n"
                        "    d:f64[] = mul 2.0:f64[] c\n    y:f64[] = add b d");
  /* x^3 + 2x^2 at x = 1.5: 3x^2 + 4x, 6x + 4, 6 */
  ck_assert_double_eq_tol(deriv(poly, 1, 1.5), 3 * 2.25 + 6, 1e-14);
  ck_assert_double_eq_tol(deriv(poly, 2, 1.5), 13.0, 1e-14);
  ck_assert_double_eq_tol(deriv(poly, 3, 1.5), 6.0, 1e-14);
  ck_assert_double_eq(deriv(poly, 4, 1.5), 0.0);
  const char *msin = UN("    y:f64[] = sin a");
  ck_assert_double_eq_tol(deriv(msin, 2, 0.7), -sin(0.7), 1e-15);
  ck_assert_double_eq_tol(deriv(msin, 3, 0.7), -cos(0.7), 1e-15);
  /* exp(sin x): f' = cos e, f'' = (cos^2 - sin) e, f''' = (cos^3 - 3 sin cos - cos) e */
  const char *es = UN("    b:f64[] = sin a\n    y:f64[] = exp b");
  double x = 0.4, s = sin(x), c = cos(x), e = exp(s);
  ck_assert_double_eq_tol(deriv(es, 1, x), c * e, 1e-14);
  ck_assert_double_eq_tol(deriv(es, 2, x), (c * c - s) * e, 1e-14);
  ck_assert_double_eq_tol(deriv(es, 3, x), (c * c * c - 3 * s * c - c) * e, 1e-14);
  /* log(x) * tanh(x): f'' = -t/x^2 + 2 (1-t^2)/x - 2 t (1-t^2) log x */
  const char *lt = UN("    b:f64[] = log a\n    c:f64[] = tanh a\n    y:f64[] = mul b c");
  x = 1.3;
  double t = tanh(x), l = log(x), d1 = 1 - t * t;
  ck_assert_double_eq_tol(deriv(lt, 1, x), t / x + l * d1, 1e-14);
  ck_assert_double_eq_tol(deriv(lt, 2, x), -t / (x * x) + 2 * d1 / x - 2 * t * d1 * l, 1e-14);
  /* tanh''' = -2 (1 - t^2)(1 - 3 t^2) */
  x = 0.3, t = tanh(x);
  ck_assert_double_eq_tol(deriv(UN("    y:f64[] = tanh a"), 3, x), -2 * (1 - t * t) * (1 - 3 * t * t), 1e-14);
}
END_TEST

/* jvp∘grad: the Hessian-vector product of sum(x^3) is 6 x v. */
START_TEST(jvp_of_grad) {
  ft_jaxpr *j = P("{ lambda ; a:f64[3]. let\n    b:f64[3] = integer_pow[y=3] a\n"
                  "    y:f64[] = reduce_sum[axes=(0,) out_sharding=None] b\n  in (y,) }");
  ft_jaxpr *g = ft_grad(C, j, 0, NULL, false);
  ck_assert_ptr_nonnull(g);
  ft_jaxpr *hv = ft_jvp(C, g);
  ck_assert_msg(hv != NULL, "%s", ft_ctx_error(C));
  verify(hv);
  ck_assert_int_eq(ft_jaxpr_num_inputs(hv), 2);
  ck_assert_int_eq(ft_jaxpr_num_outputs(hv), 2);
  double xv[3] = {1, -2, 0.5}, vv[3] = {0.5, 1, 2};
  int64_t d3 = 3;
  ft_array *in[2] = {ft_array_from_data(C, FT_F64, 1, &d3, xv), ft_array_from_data(C, FT_F64, 1, &d3, vv)};
  ft_array *o[2];
  run(hv, 2, in, o);
  for (int i = 0; i < 3; i++) {
    ck_assert_double_eq(ft_get_f64(o[0], i), 3 * xv[i] * xv[i]);
    ck_assert_double_eq(ft_get_f64(o[1], i), 6 * xv[i] * vv[i]);
  }
  free_arrays(2, o), free_arrays(2, in);
  ft_jaxpr_free(hv), ft_jaxpr_free(g), ft_jaxpr_free(j);
}
END_TEST

/* ------------------------------------------------------- control flow */

START_TEST(grad_scan_rnn) {
  /* h_{t+1} = tanh(W h_t + U x_t), loss = sum of all h */
  ft_jaxpr *j = P(
      "{ lambda ; w:f64[3,3] u:f64[2,3] h:f64[3] xs:f64[4,2]. let\n"
      "    hf:f64[3] hs:f64[4,3] = scan[\n"
      "      jaxpr={ lambda ; a:f64[3,3] b:f64[2,3] c:f64[3] d:f64[2]. let\n"
      "          e:f64[3] = dot_general[dimension_numbers=(([0], [0]), ([], [])) preferred_element_type=float64] c a\n"
      "          f:f64[3] = dot_general[dimension_numbers=(([0], [0]), ([], [])) preferred_element_type=float64] d b\n"
      "          g:f64[3] = add e f\n"
      "          k:f64[3] = tanh g\n"
      "        in (k, k) }\n"
      "      length=4\n      num_carry=1\n      num_consts=2\n      reverse=False\n      unroll=1\n"
      "    ] w u h xs\n"
      "    s:f64[] = reduce_sum[axes=(0, 1) out_sharding=None] hs\n"
      "    t:f64[] = reduce_sum[axes=(0,) out_sharding=None] hf\n"
      "    y:f64[] = add s t\n"
      "  in (y,) }");
  grad_check_jaxpr(j, -1, 1, "scan rnn");
  ft_jaxpr_free(j);
  /* reverse=True and an xs-only dependence */
  j = P("{ lambda ; c0:f64[] xs:f64[5]. let\n"
        "    cf:f64[] ys:f64[5] = scan[\n"
        "      jaxpr={ lambda ; c:f64[] x:f64[]. let\n"
        "          d:f64[] = mul c x\n          e:f64[] = sin d\n          f:f64[] = add d 1.0:f64[]\n"
        "        in (f, e) }\n"
        "      length=5\n      num_carry=1\n      num_consts=0\n      reverse=True\n      unroll=1\n"
        "    ] c0 xs\n"
        "    s:f64[] = reduce_sum[axes=(0,) out_sharding=None] ys\n"
        "    y:f64[] = mul s cf\n"
        "  in (y,) }");
  grad_check_jaxpr(j, 0.5, 1.2, "scan reverse");
  ft_jaxpr_free(j);
}
END_TEST

START_TEST(grad_cond_jit) {
  ft_jaxpr *j = P("{ lambda ; p:i32[] a:f64[3] b:f64[]. let\n"
                  "    c:f64[3] = cond[\n"
                  "      branches=(\n"
                  "        { lambda ; d:f64[3] e:f64[]. let f:f64[3] = sin d in (f,) }\n"
                  "        { lambda ; g:f64[3] h:f64[]. let\n"
                  "            i:f64[3] = mul g h\n            k:f64[3] = exp i\n          in (k,) }\n"
                  "      )\n"
                  "    ] p a b\n"
                  "    y:f64[] = reduce_sum[axes=(0,) out_sharding=None] c\n"
                  "  in (y,) }");
  for (int r = 0; r < 4; r++) grad_check_jaxpr(j, -1, 1, "cond"); /* p is 0..2: both branches (clamped) */
  ft_jaxpr_free(j);
  j = P("{ lambda ; a:f64[3] b:f64[3]. let\n"
        "    c:f64[3] = jit[\n      name=outer\n      jaxpr={ lambda ; d:f64[3] e:f64[3]. let\n"
        "          f:f64[3] = jit[\n            name=inner\n            jaxpr={ lambda ; g:f64[3] h:f64[3]. let\n"
        "                i:f64[3] = mul g h\n                k:f64[3] = tanh i\n"
        "              in (k,) }\n          ] d e\n"
        "          l:f64[3] = mul f d\n        in (l,) }\n    ] a b\n"
        "    y:f64[] = reduce_sum[axes=(0,) out_sharding=None] c\n"
        "  in (y,) }");
  grad_check_jaxpr(j, -1, 1, "nested jit");
  ft_jaxpr_free(j);
}
END_TEST

/* Newton's iteration for sqrt(a) in a while loop: forward mode gives
 * d sqrt(a)/da = 1 / (2 sqrt a); reverse mode is refused with a clear error. */
static const char *while_text =
    "{ lambda ; a:f64[]. let\n"
    "    x:f64[] n:i32[] = while[\n"
    "      body_jaxpr={ lambda ; c:f64[] d:f64[] i:i32[]. let\n"
    "          e:f64[] = div c d\n          f:f64[] = add d e\n          g:f64[] = mul 0.5:f64[] f\n"
    "          k:i32[] = add i 1:i32[]\n        in (g, k) }\n"
    "      body_nconsts=1\n"
    "      cond_jaxpr={ lambda ; l:f64[] m:i32[]. let\n"
    "          o:bool[] = lt m 30:i32[]\n        in (o,) }\n"
    "      cond_nconsts=0\n"
    "    ] a a 0:i32[]\n"
    "    y:f64[] = mul x 1.0:f64[]\n"
    "  in (y,) }";

START_TEST(jvp_while) {
  ft_jaxpr *j = P(while_text);
  ft_jaxpr *f = ft_jvp(C, j);
  ck_assert_msg(f != NULL, "%s", ft_ctx_error(C));
  verify(f);
  double av = 2.0, tv = 1.0;
  ft_array *in[2] = {ft_array_from_data(C, FT_F64, 0, NULL, &av), ft_array_from_data(C, FT_F64, 0, NULL, &tv)};
  ft_array *o[2];
  run(f, 2, in, o);
  ck_assert_double_eq_tol(ft_get_f64(o[0], 0), sqrt(2.0), 1e-15);
  ck_assert_double_eq_tol(ft_get_f64(o[1], 0), 0.5 / sqrt(2.0), 1e-15);
  free_arrays(2, o), free_arrays(2, in);
  /* linearize works too (the tangent side re-runs the loop) */
  ft_jaxpr *p = NULL, *t = NULL;
  ck_assert_int_eq(ft_linearize(C, j, &p, &t, NULL), FT_OK);
  ft_jaxpr_free(p), ft_jaxpr_free(t);
  ck_assert_ptr_null(ft_grad(C, j, 0, NULL, false));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(ft_ctx_error(C), "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic start/stop values. Try using lax.scan, or using fori_loop with static start/stop."), "%s", ft_ctx_error(C));
  ft_jaxpr_free(f), ft_jaxpr_free(j);
}
END_TEST

/* regularized_incomplete_beta: JAX differentiates it in x only (d/dx I_x(a,
 * b) = x^(a-1) (1-x)^(b-1) / B(a, b): 1.6875 at a = 2, b = 3, x = 0.25), and
 * refuses a tangent of a or b with its own message. */
START_TEST(betainc_grad) {
  ft_jaxpr *j = P("{ lambda ; a:f64[] b:f64[] x:f64[]. let\n"
                  "    y:f64[] = regularized_incomplete_beta a b x\n  in (y,) }");
  int an = 2;
  ft_jaxpr *g = ft_grad(C, j, 1, &an, false);
  ck_assert_msg(g != NULL, "%s", ft_ctx_error(C));
  verify(g);
  double v[3] = {2.0, 3.0, 0.25};
  ft_array *in[3], *o[1];
  for (int k = 0; k < 3; k++) in[k] = ft_array_from_data(C, FT_F64, 0, NULL, &v[k]);
  run(g, 3, in, o);
  ck_assert_double_eq_tol(ft_get_f64(o[0], 0), 1.6875, 1e-14);
  free_arrays(1, o), free_arrays(3, in);
  ft_jaxpr_free(g);
  for (an = 0; an < 2; an++) {
    ck_assert_ptr_null(ft_grad(C, j, 1, &an, false));
    ck_assert_int_eq(ft_ctx_status(C), FT_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(ft_ctx_error(C), "Betainc gradient with respect to a and b not supported."),
                  "%s", ft_ctx_error(C));
  }
  ft_jaxpr_free(j);
}
END_TEST

/* Golden JAX printouts: grad of the MLP loss, and jvp through custom_jvp. */
static ft_jaxpr *golden(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/golden/%s", FT_FIXTURES, name);
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "%s", path);
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  ft_jaxpr *j = ft_parse(C, buf, n, name);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  return j;
}

/* Converts an f32 program's avals to f64 so central differences are precise
 * enough: done by checking f32 with a looser bound instead. */
static void grad_check_f32(ft_jaxpr *j, const char *what) {
  int n = ft_jaxpr_num_inputs(j);
  ft_array *in[16];
  int argn[16];
  for (int i = 0; i < n; i++) {
    ft_aval av;
    ft_jaxpr_input_aval(j, i, &av);
    in[i] = rand_array(&av, -1, 1);
    argn[i] = i;
  }
  ft_jaxpr *g = ft_grad(C, j, n, argn, false);
  ck_assert_msg(g != NULL, "%s: %s", what, ft_ctx_error(C));
  verify(g);
  ft_array *gr[16];
  run(g, n, in, gr);
  const double h = 1e-2; /* f32: the error bound is 2e-3 relative */
  for (int w = 0; w < n; w++) {
    for (int64_t e = 0; e < ft_array_size(in[w]); e++) {
      double x0 = ft_get_f64(in[w], e);
      ft_set_f64(in[w], e, x0 + h);
      double fp = scalar(j, n, in);
      ft_set_f64(in[w], e, x0 - h);
      double fm = scalar(j, n, in);
      ft_set_f64(in[w], e, x0);
      double fd = (fp - fm) / (2 * h), an = ft_get_f64(gr[w], e);
      ck_assert_msg(fabs(an - fd) <= 2e-3 * fmax(1.0, fabs(fd)), "%s: input %d [%lld]: %.8g vs %.8g", what, w,
                    (long long)e, an, fd);
    }
  }
  free_arrays(n, gr), free_arrays(n, in);
  ft_jaxpr_free(g);
}

static ft_array *golden_npy(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/golden/%s", FT_FIXTURES, name);
  ft_array *a = ft_npy_read(C, path);
  ck_assert_msg(a != NULL, "%s", ft_ctx_error(C));
  return a;
}

START_TEST(golden_programs) {
  ft_jaxpr *j = golden("mlp_loss.jaxpr");
  grad_check_f32(j, "mlp_loss");
  /* JAX's own gradient values (fixtures/golden/grad_mlp_loss.*, the same
   * loss differentiated by jax.grad(argnums=(0,1,2,3))): f32, 1e-5 relative */
  {
    int an[4] = {0, 1, 2, 3};
    ft_jaxpr *g = ft_grad(C, j, 4, an, false);
    ck_assert_msg(g != NULL, "%s", ft_ctx_error(C));
    ft_array *in[6], *o[4];
    char nm[64];
    for (int i = 0; i < 6; i++) snprintf(nm, sizeof nm, "grad_mlp_loss.in%d.npy", i), in[i] = golden_npy(nm);
    run(g, 6, in, o);
    for (int k = 0; k < 4; k++) {
      snprintf(nm, sizeof nm, "grad_mlp_loss.out%d.npy", k);
      ft_array *want = golden_npy(nm);
      ck_assert_int_eq(ft_array_size(want), ft_array_size(o[k]));
      for (int64_t e = 0; e < ft_array_size(want); e++) {
        double w = ft_get_f64(want, e), got = ft_get_f64(o[k], e);
        ck_assert_msg(fabs(w - got) <= 1e-5 * fmax(1.0, fabs(w)), "grad %d [%lld]: %.9g, JAX %.9g", k,
                      (long long)e, got, w);
      }
      ft_array_free(want);
    }
    free_arrays(4, o), free_arrays(6, in);
    ft_jaxpr_free(g);
  }
  ft_jaxpr_free(j);
  j = golden("logreg_loss.jaxpr");
  ft_jaxpr *g = ft_grad(C, j, 0, NULL, false);
  ck_assert_msg(g != NULL, "%s", ft_ctx_error(C));
  verify(g);
  ft_jaxpr_free(g), ft_jaxpr_free(j);
  /* custom_jvp_call with a Python rule (jvp=softplus_jvp, only a name):
   * refused by default; differentiated as call_jaxpr under the opt-in */
  j = golden("custom_jvp_user.jaxpr");
  ck_assert_ptr_null(ft_jvp(C, j));
  ck_assert_msg(strstr(ft_ctx_error(C), "its jvp rule is only a name in the printout (jvp=softplus_jvp)"),
                "%s", ft_ctx_error(C));
  ft_ctx_clear_error(C);
  {
    ft_ctx_options po = FT_CTX_OPTIONS_INIT;
    po.custom_jvp = FT_CUSTOM_JVP_PRIMAL;
    ft_ctx *P = ft_ctx_new(&po);
    ck_assert_ptr_nonnull(P);
    g = ft_jvp(P, j);
    ck_assert_msg(g != NULL, "%s", ft_ctx_error(P));
    verify(g);
    ft_jaxpr_free(g);
    ft_ctx_free(P);
  }
  ft_jaxpr_free(j);
  /* custom_vjp_call as JAX prints it names its bwd rule (bwd=bwd) without
   * holding it: reverse mode fails closed, naming the primitive and why,
   * instead of differentiating call_jaxpr (a silently wrong gradient) */
  j = golden("custom_vjp_user.jaxpr");
  ck_assert_ptr_null(ft_vjp_jaxpr(C, j));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(ft_ctx_error(C), "(custom_vjp_call): cannot differentiate custom_vjp_call") &&
                    strstr(ft_ctx_error(C), "bwd rule is only a name in the printout (bwd=bwd)"),
                "%s", ft_ctx_error(C));
  ft_jaxpr_free(j);
}
END_TEST

/* ------------------------------------------------------------ linearity */

/* j is linear in its inputs from nnl on: checks <A x, y> == <x, A^T y>. */
static void lincheck(int nnl, const char *ins, const char *body, const char *outs) {
  char text[4096];
  snprintf(text, sizeof text, "{ lambda ; %s. let\n%s\n  in (%s) }", ins, body, outs);
  ft_jaxpr *j = P(text);
  ft_jaxpr *t = ft_linear_transpose(C, j, nnl);
  ck_assert_msg(t != NULL, "transpose: %s\n%s", ft_ctx_error(C), text);
  verify(t);
  int n = ft_jaxpr_num_inputs(j), no = ft_jaxpr_num_outputs(j);
  ft_array *x[16], *y[16], *ax[16], *aty[16], *tin[32];
  for (int i = 0; i < n; i++) {
    ft_aval av;
    ft_jaxpr_input_aval(j, i, &av);
    x[i] = rand_array(&av, -1, 1);
  }
  run(j, n, x, ax);
  int m = 0;
  for (int i = 0; i < nnl; i++) tin[m++] = x[i];
  for (int k = 0; k < no; k++) {
    ft_aval av;
    ft_jaxpr_output_aval(j, k, &av);
    tin[m++] = y[k] = rand_array(&av, -1, 1);
  }
  run(t, m, tin, aty);
  double lhs = 0, rhs = 0, mag = 0;
  for (int k = 0; k < no; k++) lhs += dot_arrays(ax[k], y[k]);
  for (int i = nnl; i < n; i++) rhs += dot_arrays(x[i], aty[i - nnl]), mag += fabs(dot_arrays(x[i], aty[i - nnl]));
  ck_assert_msg(fabs(lhs - rhs) <= 1e-12 * fmax(1.0, mag) + (strstr(body, "float32") ? 1e-6 : 0),
                "<Ax,y> = %.17g but <x,A^T y> = %.17g\n%s", lhs, rhs, text);
  free_arrays(n, x), free_arrays(no, y), free_arrays(no, ax), free_arrays(n - nnl, aty);
  ft_jaxpr_free(t), ft_jaxpr_free(j);
}

START_TEST(linearity) {
  lincheck(0, "a:f64[2,3]", "    y:f64[2,3] = neg a", "y,");
  lincheck(0, "a:f64[2,3] b:f64[2,3]", "    y:f64[2,3] = add a b", "y,");
  lincheck(0, "a:f64[1,3] b:f64[2,3]", "    y:f64[2,3] = add_any a b", "y,");
  lincheck(0, "a:f64[] b:f64[2,3]", "    y:f64[2,3] = sub a b", "y,");
  lincheck(1, "c:f64[2,3] a:f64[2,3]", "    y:f64[2,3] = mul c a", "y,");
  lincheck(1, "c:f64[2,3] a:f64[1,3]", "    y:f64[2,3] = mul a c", "y,");
  lincheck(1, "c:f64[2,3] a:f64[2,3]", "    y:f64[2,3] = div a c", "y,");
  lincheck(0, "a:f64[2,3]", "    y:f32[2,3] = convert_element_type[new_dtype=float32 sharding=None weak_type=False] a", "y,");
  lincheck(0, "a:f64[2,3]", "    y:f64[3] = reduce_sum[axes=(0,) out_sharding=None] a", "y,");
  lincheck(0, "a:f64[1,3]", "    y:f64[2,4,3] = broadcast_in_dim[broadcast_dimensions=(0, 2) shape=(2, 4, 3) sharding=None] a", "y,");
  lincheck(0, "a:f64[2,3]", "    y:f64[6] = reshape[dimensions=None new_sizes=(6,) sharding=None] a", "y,");
  lincheck(0, "a:f64[2,1]", "    y:f64[2] = squeeze[dimensions=(1,)] a", "y,");
  lincheck(0, "a:f64[2]", "    y:f64[1,2] = expand_dims[dimensions=(0,)] a", "y,");
  lincheck(0, "a:f64[2,3,4]", "    y:f64[4,2,3] = transpose[permutation=(2, 0, 1)] a", "y,");
  lincheck(0, "a:f64[2,3]", "    y:f64[2,3] = rev[dimensions=(0, 1)] a", "y,");
  lincheck(0, "a:f64[5,4]", "    y:f64[2,3] = slice[limit_indices=(5, 4) start_indices=(1, 1) strides=(2, 1)] a", "y,");
  lincheck(0, "a:f64[2,3] b:f64[]", "    y:f64[5,4] = pad[padding_config=((1, 2, 0), (0, -1, 1))] a b", "y,");
  lincheck(0, "b:f64[] a:f64[2,3]", "    y:f64[2,5] = pad[padding_config=((-1, 0, 1), (2, 0, 0))] a b", "y,");
  lincheck(0, "a:f64[2,3] b:f64[2,1]", "    y:f64[2,4] = concatenate[dimension=1] a b", "y,");
  lincheck(2, "i:i32[] k:i32[] a:f64[4,3]", "    y:f64[2,2] = dynamic_slice[slice_sizes=(2, 2)] a i k", "y,");
  lincheck(2, "i:i32[] k:i32[] a:f64[4,3] u:f64[2,2]", "    y:f64[4,3] = dynamic_update_slice a u i k", "y,");
  lincheck(1, "p:bool[2,3] a:f64[2,3] b:f64[2,3]", "    y:f64[2,3] = select_n p a b", "y,");
  lincheck(1, "p:i32[] a:f64[2,3] b:f64[2,3] c:f64[2,3]", "    y:f64[2,3] = select_n p a b c", "y,");
  lincheck(1, "b:f64[2,5,3] a:f64[2,3,4]",
           "    y:f64[2,4,5] = dot_general[dimension_numbers=(([1], [2]), ([0], [0])) preferred_element_type=float64] a b", "y,");
  lincheck(1, "a:f64[2,3,4] b:f64[2,5,3]",
           "    y:f64[2,4,5] = dot_general[dimension_numbers=(([1], [2]), ([0], [0])) preferred_element_type=float64] a b", "y,");
  lincheck(1, "a:f64[3,2] b:f64[2,3]",
           "    y:f64[2,2] = dot_general[dimension_numbers=(([0], [1]), ([], [])) preferred_element_type=float64] a b", "y,");
  lincheck(0, "a:f64[2,4]", "    y:f64[2,4] = cumsum[axis=1 reverse=False] a", "y,");
  lincheck(0, "a:f64[2,4]", "    y:f64[2,4] = cumsum[axis=0 reverse=True] a", "y,");
  lincheck(0, "a:f64[2,4]", "    y:f64[2,4] = copy a", "y,");
  lincheck(0, "a:f64[2,4]", "    y:f64[2,4] = copy_p a", "y,");
  lincheck(0, "a:f64[2,4]", "    y:f64[2,4] = reduce_precision[exponent_bits=11 mantissa_bits=52] a", "y,");
  lincheck(0, "a:f64[2,5]", "    y:f64[2,2] z:f64[2,3] = split[axis=1 sizes=(2, 3)] a", "y, z");
  lincheck(1, "k:f64[5] a:f64[5]", "    kk:f64[5] y:f64[5] = sort[dimension=0 is_stable=True num_keys=1] k a", "y,");
  lincheck(1, "c:f64[3] a:f64[3]",
           "    y:f64[3] = jit[\n      name=f\n      jaxpr={ lambda ; d:f64[3] e:f64[3]. let\n"
           "          f:f64[3] = mul d e\n          g:f64[3] = neg f\n        in (g,) }\n    ] c a", "y,");
  lincheck(2, "p:i32[] c:f64[3] a:f64[3]",
           "    y:f64[3] = cond[\n      branches=(\n"
           "        { lambda ; d:f64[3] e:f64[3]. let f:f64[3] = mul d e in (f,) }\n"
           "        { lambda ; g:f64[3] h:f64[3]. let i:f64[3] = neg h in (i,) }\n      )\n    ] p c a", "y,");
  lincheck(2, "w:f64[3] r:f64[4,3] k:f64[3] c:f64[3] xs:f64[4,3]",
           "    cf:f64[3] ys:f64[4,3] = scan[\n"
           "      jaxpr={ lambda ; a:f64[3] d:f64[3] e:f64[3] x:f64[3] q:f64[3]. let\n"
           "          f:f64[3] = mul d a\n          h:f64[3] = mul e x\n          g:f64[3] = add h q\n"
           "          i:f64[3] = add g f\n        in (i, h) }\n"
           "      length=4\n      num_carry=1\n      num_consts=2\n      reverse=False\n      unroll=1\n"
           "    ] w k c r xs", "cf, ys");
}
END_TEST

/* ------------------------------------------------------------ bad input */

START_TEST(bad_input) {
  ft_jaxpr *j = P("{ lambda ; a:f64[3] n:i32[]. let\n    b:f64[3] = sin a\n  in (b,) }");
  ck_assert_ptr_null(ft_grad(C, j, 0, NULL, false));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_TYPE);
  ck_assert_msg(strstr(ft_ctx_error(C), "scalar"), "%s", ft_ctx_error(C));
  ft_jaxpr_free(j);
  j = P("{ lambda ; a:f64[] n:i32[]. let\n    b:f64[] = sin a\n  in (b, n) }");
  ck_assert_ptr_null(ft_grad(C, j, 0, NULL, false));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_INVALID_ARG);
  ck_assert_msg(strstr(ft_ctx_error(C), "has_aux"), "%s", ft_ctx_error(C));
  ft_jaxpr *g = ft_grad(C, j, 0, NULL, true); /* with has_aux it is fine */
  ck_assert_msg(g != NULL, "%s", ft_ctx_error(C));
  ck_assert_int_eq(ft_jaxpr_num_outputs(g), 2);
  ft_jaxpr_free(g);
  int an = 2;
  ck_assert_ptr_null(ft_grad(C, j, 1, &an, true));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_INVALID_ARG);
  ck_assert_msg(strstr(ft_ctx_error(C), "argnums entry 2 is out of range"), "%s", ft_ctx_error(C));
  an = 1;
  ck_assert_ptr_null(ft_grad(C, j, 1, &an, true));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_TYPE);
  ck_assert_msg(strstr(ft_ctx_error(C), "input 1 is i32[]"), "%s", ft_ctx_error(C));
  ck_assert_ptr_null(ft_grad(C, NULL, 0, NULL, false));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_INVALID_ARG);
  /* transposing a non-linear program */
  ft_jaxpr_free(j);
  j = P("{ lambda ; a:f64[3]. let\n    b:f64[3] = sin a\n  in (b,) }");
  ck_assert_ptr_null(ft_linear_transpose(C, j, 0));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(ft_ctx_error(C), "sin: not linear"), "%s", ft_ctx_error(C));
  ck_assert_ptr_null(ft_linear_transpose(C, j, 5));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_INVALID_ARG);
  ft_jaxpr_free(j);
  /* int inputs and outputs: no tangents (float0), value_and_grad ordering */
  j = P("{ lambda ; a:f64[] n:i32[]. let\n    c:f64[] = convert_element_type[new_dtype=float64 sharding=None weak_type=False] n\n"
        "    b:f64[] = mul a c\n    m:i32[] = mul n 2:i32[]\n  in (b, m) }");
  ft_jaxpr *f = ft_jvp(C, j);
  ck_assert_msg(f != NULL, "%s", ft_ctx_error(C));
  ck_assert_int_eq(ft_jaxpr_num_inputs(f), 3);
  ck_assert_int_eq(ft_jaxpr_num_outputs(f), 3);
  ft_jaxpr *vg = ft_value_and_grad(C, j, 0, NULL, true);
  ck_assert_msg(vg != NULL, "%s", ft_ctx_error(C));
  double av = 1.5;
  int32_t nv = 3;
  ft_array *in[2] = {ft_array_from_data(C, FT_F64, 0, NULL, &av), ft_array_from_data(C, FT_I32, 0, NULL, &nv)};
  ft_array *o[3];
  run(vg, 2, in, o);
  ck_assert_double_eq(ft_get_f64(o[0], 0), 4.5);
  ck_assert_int_eq(ft_get_i64(o[1], 0), 6);
  ck_assert_double_eq(ft_get_f64(o[2], 0), 3.0);
  free_arrays(3, o), free_arrays(2, in);
  ft_jaxpr_free(vg), ft_jaxpr_free(f), ft_jaxpr_free(j);
}
END_TEST

/* ft_vjp (split) and ft_vjp_jaxpr agree with grad; coverage strings. */
START_TEST(vjp_and_coverage) {
  ft_jaxpr *j = P("{ lambda ; a:f64[3] b:f64[3]. let\n    c:f64[3] = mul a b\n    d:f64[3] = sin c\n"
                  "    y:f64[] = reduce_sum[axes=(0,) out_sharding=None] d\n  in (y,) }");
  ft_jaxpr *fw = NULL, *bw = NULL;
  int nres = -1;
  ck_assert_msg(ft_vjp(C, j, &fw, &bw, &nres) == FT_OK, "%s", ft_ctx_error(C));
  verify(fw), verify(bw);
  ck_assert_int_eq(ft_jaxpr_num_outputs(fw), 1 + nres);
  ck_assert_int_eq(ft_jaxpr_num_inputs(bw), nres + 1);
  ck_assert_int_eq(ft_jaxpr_num_outputs(bw), 2);
  ft_jaxpr *vj = ft_vjp_jaxpr(C, j);
  ck_assert_ptr_nonnull(vj);
  ck_assert_int_eq(ft_jaxpr_num_inputs(vj), 3);
  ck_assert_int_eq(ft_jaxpr_num_outputs(vj), 3);
  ft_jaxpr_free(fw), ft_jaxpr_free(bw), ft_jaxpr_free(vj), ft_jaxpr_free(j);
  for (int p = 0; p < FT_NUM_PRIMS; p++) {
    const char *a = ft_jvp_rule_status((ft_prim)p), *b = ft_transpose_rule_status((ft_prim)p);
    ck_assert(!a || !strncmp(a, "unsupported: ", 13));
    ck_assert(!b || !strcmp(b, "not linear") || !strncmp(b, "unsupported: ", 13));
  }
  ck_assert_ptr_null(ft_jvp_rule_status(FT_P_SIN));
  ck_assert_str_eq(ft_transpose_rule_status(FT_P_SIN), "not linear");
  ck_assert_ptr_null(ft_transpose_rule_status(FT_P_DOT_GENERAL));
}
END_TEST

/* ----------------------------------------------------------- long chains */

/* A chain of n elementwise equations on f64[3], in blocks of four that map
 * x to -(2x + 0.75)/2 = -x - 0.375 (derivative -1, all constants dyadic so
 * every value is exact); an even number of blocks is the identity. The loss
 * is sum(v_n * v_n), so its gradient is exactly 2x. */
static char *chain_text(int n) {
  size_t cap = (size_t)n * 48 + 256, k = 0;
  char *s = malloc(cap);
  ck_assert_ptr_nonnull(s);
  static const char *ops[4] = {"mul v%d 2.0:f64[]", "add v%d 0.75:f64[]", "mul v%d 0.5:f64[]", "neg v%d"};
  k += (size_t)snprintf(s + k, cap - k, "{ lambda ; v0:f64[3]. let\n");
  for (int i = 1; i <= n; i++) {
    k += (size_t)snprintf(s + k, cap - k, "    v%d:f64[3] = ", i);
    k += (size_t)snprintf(s + k, cap - k, ops[(i - 1) % 4], i - 1);
    s[k++] = '\n';
  }
  snprintf(s + k, cap - k, "    sq:f64[3] = mul v%d v%d\n    out:f64[] = reduce_sum[axes=(0,) "
           "out_sharding=None] sq\n  in (out,) }\n", n, n);
  return s;
}

/* Transforms are linear in program size: grad of a 20k-equation chain
 * succeeds, has O(N) equations, and is exact. */
START_TEST(grad_long_chain) {
  enum { N = 20000 };
  char *text = chain_text(N);
  ft_jaxpr *j = P(text);
  free(text);
  ck_assert_int_eq(ft_jaxpr_num_eqns(j), N + 2);
  ft_jaxpr *g = ft_grad(C, j, 0, NULL, false);
  ck_assert_msg(g != NULL, "grad: %s", ft_ctx_error(C));
  verify(g);
  ck_assert_int_le(ft_jaxpr_num_eqns(g), 6 * N);
  ck_assert_int_ge(ft_jaxpr_num_eqns(g), N); /* the primal chain is still there */
  int64_t d3 = 3;
  ft_array *x = ft_array_new(C, FT_F64, 1, &d3), *o[1];
  const double xs[3] = {1.5, -2.25, 3.0};
  for (int i = 0; i < 3; i++) ft_set_f64(x, i, xs[i]);
  run(g, 1, &x, o);
  for (int i = 0; i < 3; i++) ck_assert(ft_get_f64(o[0], i) == 2 * xs[i]);
  ft_array_free(o[0]);
  ft_jaxpr *t = ft_jvp(C, j);
  ck_assert_msg(t != NULL, "jvp: %s", ft_ctx_error(C));
  ck_assert_int_le(ft_jaxpr_num_eqns(t), 6 * N);
  ft_array *dx = ft_array_new(C, FT_F64, 1, &d3), *in[2] = {x, dx}, *jo[2];
  for (int i = 0; i < 3; i++) ft_set_f64(dx, i, i + 1.0);
  run(t, 2, in, jo);
  ck_assert(ft_get_f64(jo[0], 0) == 1.5 * 1.5 + 2.25 * 2.25 + 3.0 * 3.0);
  ck_assert(ft_get_f64(jo[1], 0) == 2 * (1.5 * 1 - 2.25 * 2 + 3.0 * 3));
  free_arrays(2, jo);
  ft_array_free(x);
  ft_array_free(dx);
  ft_jaxpr_free(t);
  ft_jaxpr_free(g);
  ft_jaxpr_free(j);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("transforms");
  TCase *t = tcase_create("core");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 120);
  tcase_add_test(t, grad_unary);
  tcase_add_test(t, betainc_grad);
  tcase_add_test(t, grad_binary);
  tcase_add_test(t, grad_select_convert);
  tcase_add_test(t, grad_layout);
  tcase_add_test(t, grad_reduce);
  tcase_add_test(t, grad_dot_sort);
  tcase_add_test(t, exact_first);
  tcase_add_test(t, exact_higher);
  tcase_add_test(t, jvp_of_grad);
  tcase_add_test(t, grad_scan_rnn);
  tcase_add_test(t, grad_cond_jit);
  tcase_add_test(t, jvp_while);
  tcase_add_test(t, golden_programs);
  tcase_add_test(t, linearity);
  tcase_add_test(t, bad_input);
  tcase_add_test(t, vjp_and_coverage);
  tcase_add_test(t, grad_long_chain);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *r = srunner_create(suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
