/* tests/transforms/test_ragged.c: ragged_dot_general beyond what the
 * JAX-captured family (fixtures/ragged) shows: known answers of the MoE
 * mode in both engines (bitwise equal), rows in no group, the NaN JAX's CPU
 * gives where another group's rhs holds an infinity, vmap with group_sizes
 * unbatched (JAX refuses it; here it equals stacking), and JAX's refusals
 * (group_offset, the transpose of the contracting mode). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

static ft_ctx *C;
static void setup(void) { C = ft_ctx_new(NULL); }
static void teardown(void) { ft_ctx_free(C); }

#define DN_MOE "RaggedDotDimensionNumbers(dot_dimension_numbers=(((1,), (1,)), ((), ())), " \
               "lhs_ragged_dimensions=(0,), rhs_group_dimensions=(0,))"
#define DN_CON "RaggedDotDimensionNumbers(dot_dimension_numbers=(((0,), (0,)), ((), ())), " \
               "lhs_ragged_dimensions=(0,), rhs_group_dimensions=())"

static const char *MOE =
    "{ lambda ; a:f32[4,2] b:f32[2,2,1] c:i32[2]. let\n"
    "    d:f32[4,1] = ragged_dot_general[\n"
    "      group_offset=None\n"
    "      out_sharding=None\n"
    "      precision=None\n"
    "      preferred_element_type=None\n"
    "      ragged_dot_dimension_numbers=" DN_MOE "\n"
    "    ] a b c\n"
    "  in (d,) }\n";

static ft_jaxpr *parse(const char *text) {
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "test");
  ck_assert_msg(j != NULL, "parse: %s", ft_ctx_error(C));
  return j;
}

static ft_array *arr(ft_dtype dt, int rank, const int64_t *dims, const double *v) {
  ft_array *a = ft_array_new(C, dt, rank, dims);
  ck_assert_ptr_nonnull(a);
  for (int64_t i = 0; i < ft_aval_size(&a->aval); i++) ft_set_f64(a, i, v[i]);
  return a;
}

/* Interpreter and strict JIT; the two must agree bit for bit. */
static void run_both(const ft_jaxpr *j, int n_in, ft_array **in, ft_array **out) {
  ft_status st = ft_eval(C, j, n_in, (const ft_array *const *)in, 1, out);
  ck_assert_msg(st == FT_OK, "eval: %s", ft_ctx_error(C));
  ft_jit_options o = FT_JIT_OPTIONS_INIT;
  o.no_disk_cache = true;
  ft_fn *fn = ft_jit(C, j, &o);
  ck_assert_msg(fn != NULL, "jit: %s", ft_ctx_error(C));
  ft_array *o2[1];
  st = ft_call(fn, n_in, (const ft_array *const *)in, 1, o2);
  ck_assert_msg(st == FT_OK, "call: %s", ft_ctx_error(C));
  size_t b = ft_array_nbytes(out[0]);
  ck_assert_uint_eq(b, ft_array_nbytes(o2[0]));
  ck_assert_msg(!memcmp(ft_array_data(out[0]), ft_array_data(o2[0]), b), "jit != interpreter");
  ft_array_free(o2[0]);
  ft_fn_free(fn);
}

START_TEST(moe_known_answers) {
  ft_jaxpr *j = parse(MOE);
  /* rows 0 in group 0, rows 1..2 in group 1, row 3 in none (sizes 1, 2) */
  const double lv[] = {1, 2, 3, 4, 5, 6, 7, 8}, rv[] = {10, 100, -1, 0.5}, gv[] = {1, 2};
  ft_array *in[3] = {arr(FT_F32, 2, (int64_t[]){4, 2}, lv), arr(FT_F32, 3, (int64_t[]){2, 2, 1}, rv),
                     arr(FT_I32, 1, (int64_t[]){2}, gv)};
  ft_array *out[1];
  run_both(j, 3, in, out);
  const double want[] = {1 * 10 + 2 * 100, 3 * -1 + 4 * 0.5, 5 * -1 + 6 * 0.5, 0};
  for (int i = 0; i < 4; i++) ck_assert_double_eq(ft_get_f64(out[0], i), want[i]);
  ft_array_free(out[0]);
  /* an infinity in group 1's rhs: JAX's CPU result is NaN in group 0's row
   * and in the row of no group (0 * inf), inf-driven in group 1's rows */
  ft_set_f64(in[1], 3, INFINITY);
  run_both(j, 3, in, out);
  ck_assert(isnan(ft_get_f64(out[0], 0)));
  ck_assert(isinf(ft_get_f64(out[0], 1)) && isinf(ft_get_f64(out[0], 2)));
  ck_assert(isnan(ft_get_f64(out[0], 3)));
  ft_array_free(out[0]);
  for (int k = 0; k < 3; k++) ft_array_free(in[k]);
  ft_jaxpr_free(j);
}
END_TEST

START_TEST(vmap_unbatched_group_sizes_equals_stacking) {
  ft_jaxpr *j = parse(MOE);
  int in_axes[3] = {0, 0, FT_VMAP_NONE};
  ft_jaxpr *v = ft_vmap(C, j, 3, in_axes, 0, NULL, 2);
  ck_assert_msg(v != NULL, "vmap: %s", ft_ctx_error(C));
  double lv[16], rv[8];
  for (int i = 0; i < 16; i++) lv[i] = (i * 7 % 11) - 5.0;
  for (int i = 0; i < 8; i++) rv[i] = (i * 5 % 7) - 3.0;
  const double gv[] = {3, 1};
  ft_array *in[3] = {arr(FT_F32, 3, (int64_t[]){2, 4, 2}, lv), arr(FT_F32, 4, (int64_t[]){2, 2, 2, 1}, rv),
                     arr(FT_I32, 1, (int64_t[]){2}, gv)};
  ft_array *out[1];
  run_both(v, 3, in, out);
  for (int b = 0; b < 2; b++) {
    ft_array *one[3] = {arr(FT_F32, 2, (int64_t[]){4, 2}, lv + 8 * b),
                        arr(FT_F32, 3, (int64_t[]){2, 2, 1}, rv + 4 * b), in[2]};
    ft_array *o1[1];
    run_both(j, 3, one, o1);
    ck_assert(!memcmp((char *)ft_array_data(out[0]) + 16 * b, ft_array_data(o1[0]), 16));
    ft_array_free(o1[0]), ft_array_free(one[0]), ft_array_free(one[1]);
  }
  ft_array_free(out[0]);
  for (int k = 0; k < 3; k++) ft_array_free(in[k]);
  ft_jaxpr_free(v);
  ft_jaxpr_free(j);
}
END_TEST

START_TEST(refusals) {
  /* group_offset: JAX 0.12 on CPU refuses it */
  char text[2048];
  snprintf(text, sizeof text,
           "{ lambda ; a:f32[4,2] b:f32[2,2,1] c:i32[2]. let\n"
           "    d:f32[4,1] = ragged_dot_general[group_offset=1 out_sharding=None precision=None "
           "preferred_element_type=None ragged_dot_dimension_numbers=%s] a b c\n  in (d,) }\n", DN_MOE);
  ck_assert_ptr_null(ft_parse(C, text, strlen(text), "t"));
  ck_assert_msg(strstr(ft_ctx_error(C), "Unimplemented group_offset support."), "%s", ft_ctx_error(C));
  /* the rhs group dim of the wrong size */
  snprintf(text, sizeof text,
           "{ lambda ; a:f32[4,2] b:f32[3,2,1] c:i32[2]. let\n"
           "    d:f32[4,1] = ragged_dot_general[group_offset=None out_sharding=None precision=None "
           "preferred_element_type=None ragged_dot_dimension_numbers=%s] a b c\n  in (d,) }\n", DN_MOE);
  ck_assert_ptr_null(ft_parse(C, text, strlen(text), "t"));
  ck_assert_msg(strstr(ft_ctx_error(C), "expected rhs group dimension size to be 2, got 3."), "%s",
                ft_ctx_error(C));
  /* grad of the contracting mode: JAX's refusal */
  snprintf(text, sizeof text,
           "{ lambda ; a:f32[6,4] b:f32[6,5] c:i32[3]. let\n"
           "    d:f32[3,4,5] = ragged_dot_general[group_offset=None out_sharding=None precision=None "
           "preferred_element_type=None ragged_dot_dimension_numbers=%s] a b c\n"
           "    e:f32[] = reduce_sum[axes=(0, 1, 2) out_sharding=None] d\n  in (e,) }\n", DN_CON);
  ft_jaxpr *j = parse(text);
  ck_assert_ptr_null(ft_grad(C, j, 1, (int[]){0}, false));
  ck_assert_msg(strstr(ft_ctx_error(C), "Unimplemented grad_x_dims for ragged dot general in mode "
                       "RAGGED_CONTRACTING."), "%s", ft_ctx_error(C));
  ft_jaxpr_free(j);
}
END_TEST

int main(void) {
  Suite *s = suite_create("ragged");
  TCase *tc = tcase_create("ragged");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, moe_known_answers);
  tcase_add_test(tc, vmap_unbatched_group_sizes_equals_stacking);
  tcase_add_test(tc, refusals);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int nf = srunner_ntests_failed(sr);
  srunner_free(sr);
  return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
