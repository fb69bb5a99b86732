/* tests/runtime/test_conv_gemm.c: float conv_general_dilated runs as
 * im2col + the shared GEMM, integer conv_general_dilated as the wrapping
 * window loop (src/runtime/interp_window.c). With small integer values
 * every product and partial sum is exact in f32 and f64, in any order, so
 * the float result must equal the integer result element for element:
 * a check of the patch indexing (padding, negative padding, lhs and rhs
 * dilation, strides, feature and batch groups, permuted dimension
 * numbers, 1-d and 3-d) against an independent loop. Issue 26. */
#include <stdio.h>
#include <stdlib.h>

#include "rt_util.h"

typedef struct conv_case {
  const char *l, *r, *o;                      /* dims */
  const char *ls, *rs, *os;                   /* lhs_spec, rhs_spec, out_spec */
  const char *ws, *pad, *ld, *rd;
  int fg, bg;
} conv_case;

static const conv_case CASES[] = {
    {"2,3,6,5", "4,3,3,2", "2,4,6,5", "(0, 1, 2, 3)", "(0, 1, 2, 3)", "(0, 1, 2, 3)", "(1, 1)",
     "((1, 1), (1, 0))", "(1, 1)", "(1, 1)", 1, 1},
    {"2,4,7,6", "6,2,3,3", "2,6,3,2", "(0, 1, 2, 3)", "(0, 1, 2, 3)", "(0, 1, 2, 3)", "(2, 2)",
     "((1, 0), (0, -1))", "(1, 1)", "(1, 1)", 2, 1},
    {"4,3,5,5", "4,3,2,3", "2,4,9,3", "(0, 1, 2, 3)", "(0, 1, 2, 3)", "(0, 1, 2, 3)", "(1, 2)",
     "((1, 0), (2, 1))", "(2, 1)", "(1, 1)", 1, 2},
    {"3,5,6,2", "3,3,2,4", "3,1,3,4", "(0, 3, 1, 2)", "(3, 2, 0, 1)", "(0, 3, 1, 2)", "(1, 2)",
     "((0, 0), (1, 1))", "(1, 1)", "(2, 1)", 1, 1},
    {"2,8,8,1", "3,3,1,5", "2,8,8,5", "(0, 3, 1, 2)", "(3, 2, 0, 1)", "(0, 3, 1, 2)", "(1, 1)",
     "((1, 1), (1, 1))", "(1, 1)", "(1, 1)", 1, 1},
    {"5,1,8,8", "5,8,8,8", "8,1,3,3", "(1, 0, 2, 3)", "(1, 0, 2, 3)", "(1, 0, 2, 3)", "(1, 1)",
     "((1, 1), (1, 1))", "(1, 1)", "(1, 1)", 1, 1},
    {"2,3,9", "2,3,4", "2,2,3", "(0, 1, 2)", "(0, 1, 2)", "(0, 1, 2)", "(2,)", "((2, 1),)", "(1,)",
     "(2,)", 1, 1},
    {"1,2,4,3,3", "2,2,2,2,2", "1,2,3,2,2", "(0, 1, 2, 3, 4)", "(0, 1, 2, 3, 4)", "(0, 1, 2, 3, 4)",
     "(1, 1, 1)", "((0, 0), (0, 0), (0, 0))", "(1, 1, 1)", "(1, 1, 1)", 1, 1},
};

static ft_array *conv_of(const conv_case *c, const char *dt, ft_array *l, ft_array *r) {
  char text[2048];
  snprintf(text, sizeof text,
           "{ lambda ; a:%s[%s] b:%s[%s]. let\n"
           "    c:%s[%s] = conv_general_dilated[\n"
           "      batch_group_count=%d\n"
           "      dimension_numbers=ConvDimensionNumbers(lhs_spec=%s, rhs_spec=%s, out_spec=%s)\n"
           "      feature_group_count=%d lhs_dilation=%s out_sharding=None padding=%s\n"
           "      precision=None preferred_element_type=None rhs_dilation=%s window_strides=%s\n"
           "    ] a b\n"
           "  in (c,) }\n",
           dt, c->l, dt, c->r, dt, c->o, c->bg, c->ls, c->rs, c->os, c->fg, c->ld, c->pad, c->rd,
           c->ws);
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "conv");
  ck_assert_msg(j != NULL, "%s\n%s", ft_ctx_error(C), text);
  ft_array *in[2] = {l, r}, *out = NULL;
  ck_assert_msg(ft_eval(C, j, 2, (const ft_array *const *)in, 1, &out) == FT_OK, "%s\n%s", ft_ctx_error(C), text);
  ft_jaxpr_free(j);
  return out;
}

static ft_array *filled(ft_dtype dt, const char *dims, uint64_t seed) {
  ft_aval a = {.dtype = dt};
  const char *s = dims;
  while (*s) {
    a.dims[a.rank++] = strtoll(s, (char **)&s, 10);
    if (*s == ',') s++;
  }
  ft_array *x = ft_array_alloc(C, &a);
  ck_assert_ptr_nonnull(x);
  for (int64_t i = 0; i < ft_array_size(x); i++) {
    seed = seed * 6364136223846793005u + 1442695040888963407u;
    int64_t v = (int64_t)((seed >> 33) % 7) - 3;            /* -3..3 */
    if (ft_dtype_is_float(dt)) ft_set_f64(x, i, (double)v);
    else ft_set_i64(x, i, v);
  }
  return x;
}

START_TEST(float_equals_integer) {
  static const ft_dtype fdts[] = {FT_F32, FT_F64};
  for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
    ft_array *li = filled(FT_I32, CASES[c].l, 11 + c), *ri = filled(FT_I32, CASES[c].r, 97 + c);
    ft_array *want = conv_of(&CASES[c], "i32", li, ri);
    int64_t nonzero = 0;
    for (int64_t i = 0; i < ft_array_size(want); i++) nonzero += ft_get_i64(want, i) != 0;
    ck_assert_msg(nonzero > 0, "case %zu: an all-zero result checks nothing", c);
    for (size_t t = 0; t < 2; t++) {
      ft_array *lf = filled(fdts[t], CASES[c].l, 11 + c), *rf = filled(fdts[t], CASES[c].r, 97 + c);
      ft_array *got = conv_of(&CASES[c], t ? "f64" : "f32", lf, rf);
      ck_assert_int_eq(ft_array_size(got), ft_array_size(want));
      for (int64_t i = 0; i < ft_array_size(want); i++)
        ck_assert_msg(ft_get_f64(got, i) == (double)ft_get_i64(want, i),
                      "case %zu %s element %lld: got %g, want %lld", c, t ? "f64" : "f32",
                      (long long)i, ft_get_f64(got, i), (long long)ft_get_i64(want, i));
      ft_array_free(lf), ft_array_free(rf), ft_array_free(got);
    }
    ft_array_free(li), ft_array_free(ri), ft_array_free(want);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("conv_gemm");
  TCase *t = tcase_create("conv_gemm");
  tcase_add_checked_fixture(t, rt_setup, rt_teardown);
  tcase_add_test(t, float_equals_integer);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
