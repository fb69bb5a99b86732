/* tests/trace/test_call_jaxpr.c: ft_call_jaxpr (src/trace/call_jaxpr.c), a
 * jaxpr the program holds called inside a trace. The call is one jit
 * equation; running the caller equals running the callee's result through
 * the rest bit for bit, before and after ft_inline; jaxprs with constvars,
 * a wrong argument count and wrong avals are refused with the reason. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"

static ft_ctx *C;
static void setup(void) { C = ft_ctx_new(NULL); }
static void teardown(void) { ft_ctx_free(C); }

static ft_aval vec3(void) {
  ft_aval a = {0};
  a.dtype = FT_F32;
  a.rank = 1;
  a.dims[0] = 3;
  return a;
}

/* f(x) = sum(sin(x) * x) */
static int f(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  out[0] = ft_sum(ft_np_mul(ft_sin(in[0]), in[0]), -1, NULL, false);
  return 1;
}

/* caller(x) = x - 0.5 * callee(x), callee = user (a grad jaxpr) */
static int caller(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)max_out;
  ft_val *g;
  if (ft_call_jaxpr(t, "grad_f", user, 1, in, &g, 1) != 1) return -1;
  out[0] = ft_np_sub(in[0], ft_np_mul(ft_weak_f(t, 0.5), g));
  return 1;
}

START_TEST(call_equals_direct) {
  ft_aval a = vec3();
  ft_jaxpr *j = ft_trace(C, f, NULL, 1, &a);
  ck_assert_ptr_nonnull(j);
  int argnum = 0;
  ft_jaxpr *g = ft_grad(C, j, 1, &argnum, false);
  ck_assert_ptr_nonnull(g);
  ft_jaxpr *c = ft_trace(C, caller, g, 1, &a);
  ck_assert_msg(c != NULL, "%s", ft_ctx_error(C));
  ck_assert_int_eq(ft_jaxpr_num_eqns(c), 3); /* jit, mul, sub */
  char *text = ft_jaxpr_print(C, c);
  ck_assert_msg(strstr(text, "jit[") && strstr(text, "name=grad_f"), "%s", text);
  ft_free(text);
  ft_jaxpr *flat = ft_inline(C, c);
  ck_assert_ptr_nonnull(flat);
  ck_assert_int_eq(ft_jaxpr_num_eqns(flat), ft_jaxpr_num_eqns(g) + 2);
  /* The callee can be freed: the call holds a copy. */
  ft_jaxpr_free(j);
  const float xs[3] = {0.5f, -1.25f, 2.0f};
  ft_array *x = ft_array_from_data(C, FT_F32, 1, (int64_t[]){3}, xs), *gx = NULL, *y1 = NULL, *y2 = NULL;
  ck_assert_int_eq(ft_eval(C, g, 1, (const ft_array *const *)&x, 1, &gx), FT_OK);
  ck_assert_int_eq(ft_eval(C, c, 1, (const ft_array *const *)&x, 1, &y1), FT_OK);
  ck_assert_int_eq(ft_eval(C, flat, 1, (const ft_array *const *)&x, 1, &y2), FT_OK);
  const float *gd = ft_array_data(gx), *d1 = ft_array_data(y1);
  for (int i = 0; i < 3; i++) {
    float want = xs[i] - 0.5f * gd[i];
    ck_assert_msg(memcmp(&want, &d1[i], sizeof want) == 0, "element %d: %.9g vs %.9g", i, (double)d1[i],
                  (double)want);
  }
  ck_assert(ft_array_equal_bits(y1, y2));
  ft_array_free(x), ft_array_free(gx), ft_array_free(y1), ft_array_free(y2);
  ft_jaxpr_free(flat), ft_jaxpr_free(c), ft_jaxpr_free(g);
}
END_TEST

/* A function with a traced array constant: its jaxpr has a constvar. */
static int with_const(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)max_out, (void)user;
  const float w[3] = {1, 2, 3};
  out[0] = ft_np_mul(in[0], ft_constant(t, FT_F32, 1, (int64_t[]){3}, w));
  return 1;
}

static int call_two_args(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)max_out;
  ft_val *args[2] = {in[0], in[0]};
  return ft_call_jaxpr(t, "f", user, 2, args, out, 1);
}

static int call_one_arg(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)max_out;
  return ft_call_jaxpr(t, "f", user, 1, in, out, 1);
}

START_TEST(refusals_name_the_reason) {
  ft_aval a = vec3();
  ft_jaxpr *k = ft_trace(C, with_const, NULL, 1, &a);
  ck_assert_ptr_nonnull(k);
  ck_assert_int_eq(ft_jaxpr_num_consts(k), 1);
  ck_assert_ptr_null(ft_trace(C, call_one_arg, k, 1, &a));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(ft_ctx_error(C), "call_jaxpr: the called jaxpr has 1 constvar(s)"), "%s",
                ft_ctx_error(C));
  ft_jaxpr *j = ft_trace(C, f, NULL, 1, &a);
  ck_assert_ptr_null(ft_trace(C, call_two_args, j, 1, &a));
  ck_assert_msg(strstr(ft_ctx_error(C), "call_jaxpr: the jaxpr takes 1 inputs, 2 given"), "%s",
                ft_ctx_error(C));
  ft_aval b = a;
  b.dims[0] = 4;
  ck_assert_ptr_null(ft_trace(C, call_one_arg, j, 1, &b));
  ck_assert_msg(strstr(ft_ctx_error(C), "jit"), "%s", ft_ctx_error(C));
  ck_assert_ptr_null(ft_trace(C, call_one_arg, NULL, 1, &a));
  ck_assert_msg(strstr(ft_ctx_error(C), "call_jaxpr: NULL jaxpr"), "%s", ft_ctx_error(C));
  ft_jaxpr_free(j), ft_jaxpr_free(k);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("call_jaxpr");
  TCase *tc = tcase_create("call_jaxpr");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, call_equals_direct);
  tcase_add_test(tc, refusals_name_the_reason);
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
