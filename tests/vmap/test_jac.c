/* tests/vmap/test_jac.c: vmap composed with autodiff — per-example
 * gradients (vmap∘grad) equal the loop of single-example gradients bit for
 * bit, grad∘vmap, and jacfwd / jacrev / hessian against analytic values. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt.h"

#define N FT_VMAP_NONE

static ft_ctx *C;
static void setup(void) { C = ft_ctx_new(NULL); }
static void teardown(void) { ft_ctx_free(C); }

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  ck_assert_int_eq(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = 0;
  fclose(f);
  return s;
}

/* Per-example gradients of an MLP loss (JAX's printout): vmap over the
 * examples of grad w.r.t. the four parameters, against a loop of grads. */
START_TEST(test_per_example_grads) {
  char *text = slurp(FT_FIXTURES "/golden/mlp_loss.jaxpr");
  ft_jaxpr *f = vt_parse(C, text);
  int argnums[4] = {0, 1, 2, 3};
  ft_jaxpr *g = ft_grad(C, f, 4, argnums, false);
  ck_assert_msg(g != NULL, "%s", ft_ctx_error(C));
  int axes[6] = {N, N, N, N, 0, 0};
  uint64_t seed = 11;
  ft_array *xs[6];
  for (int i = 0; i < 6; i++) {
    ft_aval av;
    ft_jaxpr_input_aval(g, i, &av);
    if (axes[i] != N) av = vt_insert(&av, 0, 7);
    xs[i] = vt_random(C, &av, &seed, 0, 0);
  }
  /* outputs: the four gradients, one per example */
  ck_assert_int_eq(vt_check_j(C, g, axes, NULL, 7, xs), 7 * (12 + 3 + 6 + 2));
  /* and with the parameters mapped too (a different model per lane) */
  int axes2[6] = {0, N, 2, N, 0, 1};
  for (int i = 0; i < 6; i++) {
    ft_array_free(xs[i]);
    ft_aval av;
    ft_jaxpr_input_aval(g, i, &av);
    if (axes2[i] != N) av = vt_insert(&av, axes2[i], 3);
    xs[i] = vt_random(C, &av, &seed, 0, 0);
  }
  ck_assert_int_gt(vt_check_j(C, g, axes2, NULL, 3, xs), 0);
  for (int i = 0; i < 6; i++) ft_array_free(xs[i]);
  ft_jaxpr_free(g);
  ft_jaxpr_free(f);
  free(text);
}
END_TEST

/* grad of a vmapped function: d/dw sum_b f(w, x_b). */
START_TEST(test_grad_of_vmap) {
  ft_jaxpr *f = vt_parse(C, "{ lambda ; w:f32[3] x:f32[3]. let a:f32[3] = mul w x\n b:f32[3] = sin a\n c:f32[] = reduce_sum[axes=(0,) out_sharding=None] b in (c,) }");
  int axes[2] = {N, 0};
  ft_jaxpr *v = ft_vmap(C, f, ft_jaxpr_num_inputs(f), axes, 0, NULL, 4); /* (w, xs[4,3]) -> [4] */
  ck_assert_msg(v != NULL, "%s", ft_ctx_error(C));
  /* sum over the batch, then grad */
  ft_jaxpr *s = vt_parse(C, "{ lambda ; w:f32[3] x:f32[4,3]. let a:f32[4,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(4, 3) sharding=None] w\n b:f32[4,3] = mul a x\n c:f32[4,3] = sin b\n d:f32[4] = reduce_sum[axes=(1,) out_sharding=None] c in (d,) }");
  ft_jaxpr *gv = ft_vjp_jaxpr(C, v);
  ck_assert_msg(gv != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr *gs = ft_vjp_jaxpr(C, s);
  ck_assert_msg(gs != NULL, "%s", ft_ctx_error(C));
  uint64_t seed = 3;
  ft_aval aw = {.dtype = FT_F32, .rank = 1, .dims = {3}}, ax = {.dtype = FT_F32, .rank = 2, .dims = {4, 3}},
          ac = {.dtype = FT_F32, .rank = 1, .dims = {4}};
  ft_array *in[3] = {vt_random(C, &aw, &seed, 0, 0), vt_random(C, &ax, &seed, 0, 0),
                     vt_random(C, &ac, &seed, 0, 0)};
  ft_array *o1[3], *o2[3];
  ck_assert_int_eq(ft_eval(C, gv, 3, (const ft_array *const *)in, 3, o1), FT_OK);
  ck_assert_int_eq(ft_eval(C, gs, 3, (const ft_array *const *)in, 3, o2), FT_OK);
  /* the primal agrees bitwise; the cotangent of w agrees in value */
  ck_assert(ft_array_equal_bits(o1[0], o2[0]));
  const float *g1 = ft_array_data(o1[1]), *g2 = ft_array_data(o2[1]);
  for (int i = 0; i < 3; i++) ck_assert_float_eq_tol(g1[i], g2[i], 1e-5f * (1 + fabsf(g2[i])));
  for (int i = 0; i < 3; i++) ft_array_free(in[i]), ft_array_free(o1[i]), ft_array_free(o2[i]);
  ft_jaxpr_free(gv), ft_jaxpr_free(gs), ft_jaxpr_free(s), ft_jaxpr_free(v), ft_jaxpr_free(f);
}
END_TEST

/* f(x) = sum(sin(x) * x): gradient cos(x) x + sin(x); Hessian diagonal
 * 2 cos(x) - x sin(x). */
static const char *F =
    "{ lambda ; a:f64[3]. let b:f64[3] = sin a\n c:f64[3] = mul b a\n"
    " d:f64[] = reduce_sum[axes=(0,) out_sharding=None] c in (d,) }";

static ft_array *eval1(ft_jaxpr *j, ft_array *x) {
  ft_array *o = NULL;
  ck_assert_msg(ft_eval(C, j, 1, (const ft_array *const *)&x, 1, &o) == FT_OK, "%s", ft_ctx_error(C));
  return o;
}

START_TEST(test_hessian_analytic) {
  ft_jaxpr *f = vt_parse(C, F);
  double xv[3] = {0.3, -1.2, 2.5};
  int64_t d3 = 3;
  ft_array *x = ft_array_from_data(C, FT_F64, 1, &d3, xv);
  ft_jaxpr *jf = ft_jacfwd(C, f, 0), *jr = ft_jacrev(C, f, 0), *h = ft_hessian(C, f, 0);
  ck_assert_msg(jf && jr && h, "%s", ft_ctx_error(C));
  ft_array *gf = eval1(jf, x), *gr = eval1(jr, x), *hh = eval1(h, x);
  ft_aval ha = ft_array_aval(hh);
  ck_assert_int_eq(ha.rank, 2);
  ck_assert_int_eq(ha.dims[0], 3);
  ck_assert_int_eq(ha.dims[1], 3);
  const double *pf = ft_array_data(gf), *pr = ft_array_data(gr), *ph = ft_array_data(hh);
  for (int i = 0; i < 3; i++) {
    double g = cos(xv[i]) * xv[i] + sin(xv[i]);
    ck_assert_double_eq_tol(pf[i], g, 1e-14);
    ck_assert_double_eq_tol(pr[i], g, 1e-14);
    for (int k = 0; k < 3; k++) {
      double want = i == k ? 2 * cos(xv[i]) - xv[i] * sin(xv[i]) : 0.0;
      ck_assert_double_eq_tol(ph[i * 3 + k], want, 1e-14);
    }
  }
  ft_array_free(gf), ft_array_free(gr), ft_array_free(hh), ft_array_free(x);
  ft_jaxpr_free(jf), ft_jaxpr_free(jr), ft_jaxpr_free(h), ft_jaxpr_free(f);
}
END_TEST

/* A vector function of two inputs: jacfwd and jacrev agree with the
 * analytic Jacobian of y = tanh(W x) w.r.t. x and W. */
START_TEST(test_jacobian_matrix) {
  ft_jaxpr *f = vt_parse(C, "{ lambda ; w:f64[2,3] x:f64[3]. let y:f64[2] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float64] w x\n z:f64[2] = tanh y in (z,) }");
  double wv[6] = {0.1, -0.2, 0.3, 0.7, 0.5, -0.4}, xv[3] = {1.0, 2.0, -0.5};
  int64_t dw[2] = {2, 3}, dx = 3;
  ft_array *in[2] = {ft_array_from_data(C, FT_F64, 2, dw, wv), ft_array_from_data(C, FT_F64, 1, &dx, xv)};
  double y[2];
  for (int i = 0; i < 2; i++) y[i] = tanh(wv[i * 3] * xv[0] + wv[i * 3 + 1] * xv[1] + wv[i * 3 + 2] * xv[2]);
  for (int arg = 0; arg < 2; arg++) {
    ft_jaxpr *jf = ft_jacfwd(C, f, arg), *jr = ft_jacrev(C, f, arg);
    ck_assert_msg(jf && jr, "%s", ft_ctx_error(C));
    ft_array *of = NULL, *orr = NULL;
    ck_assert_int_eq(ft_eval(C, jf, 2, (const ft_array *const *)in, 1, &of), FT_OK);
    ck_assert_int_eq(ft_eval(C, jr, 2, (const ft_array *const *)in, 1, &orr), FT_OK);
    const double *a = ft_array_data(of), *b = ft_array_data(orr);
    int n = arg == 0 ? 12 : 6;
    ck_assert_int_eq(ft_array_nbytes(of), n * 8);
    for (int e = 0; e < n; e++) {
      int i = arg == 0 ? e / 6 : e / 3;
      double s = 1 - y[i] * y[i], want;
      if (arg == 1) want = s * wv[i * 3 + e % 3];
      else want = (e / 3) % 2 == i ? s * xv[e % 3] : 0.0; /* d y_i / d W[r, c] = s x_c [r == i] */
      ck_assert_double_eq_tol(a[e], want, 1e-14);
      ck_assert_double_eq_tol(b[e], want, 1e-14);
    }
    ft_array_free(of), ft_array_free(orr);
    ft_jaxpr_free(jf), ft_jaxpr_free(jr);
  }
  ft_array_free(in[0]), ft_array_free(in[1]);
  ck_assert_ptr_null(ft_jacfwd(C, f, 2));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_INVALID_ARG);
  ft_jaxpr_free(f);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("jac");
  TCase *tc = tcase_create("jac");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_per_example_grads);
  tcase_add_test(tc, test_grad_of_vmap);
  tcase_add_test(tc, test_hessian_analytic);
  tcase_add_test(tc, test_jacobian_matrix);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
