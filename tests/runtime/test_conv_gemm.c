/* tests/runtime/test_conv_gemm.c: float conv_general_dilated runs as
 * im2col + the shared GEMM, integer conv_general_dilated as the wrapping
 * window loop (src/runtime/interp_window.c). With small integer values
 * every product and partial sum is exact in f32 and f64, in any order, so
 * the float result must equal the integer result element for element:
 * a check of the patch indexing (padding, negative padding, lhs and rhs
 * dilation, strides, feature and batch groups, permuted dimension
 * numbers, 1-d and 3-d) against an independent loop. Issue 26.
 * block_by_block: the patches are built one GEMM row block at a time; with
 * random (inexact) values the result must equal, bit for bit, one whole
 * ft_gemm on the whole patch matrix built here, and the scratch must hold
 * one block of patches, not all of them. */
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

/* A 64-to-64-feature 3x3 same-padded convolution of a 2x64xHxH batch,
 * NCHW/OIHW: P = 2*H*H patch rows of K = 576, in several GEMM blocks. */
static void blocked_case(ft_dtype dt, int64_t H) {
  const int64_t N = 2, I = 64, O = 64, KW = 9, K = I * KW, P = N * H * H;
  char dims_l[64], dims_o[64];
  snprintf(dims_l, sizeof dims_l, "%lld,%lld,%lld,%lld", (long long)N, (long long)I, (long long)H,
           (long long)H);
  snprintf(dims_o, sizeof dims_o, "%lld,%lld,%lld,%lld", (long long)N, (long long)O, (long long)H,
           (long long)H);
  conv_case cc = {dims_l, "64,64,3,3", dims_o, "(0, 1, 2, 3)", "(0, 1, 2, 3)", "(0, 1, 2, 3)",
                  "(1, 1)", "((1, 1), (1, 1))", "(1, 1)", "(1, 1)", 1, 1};
  bool f64 = dt == FT_F64;
  ck_assert_int_gt(ft_gemm_blocks(P, O, K), 2);
  ck_assert_int_ne(P % ft_gemm_block_rows(P, O, K), 0);         /* a shorter last block */
  ft_array *l = filled(dt, dims_l, 5), *r = filled(dt, "64,64,3,3", 7);
  uint64_t seed = 3;
  for (int t = 0; t < 2; t++) {                                 /* inexact values in [-1, 1) */
    ft_array *x = t ? r : l;
    for (int64_t i = 0; i < ft_array_size(x); i++) {
      seed = seed * 6364136223846793005u + 1442695040888963407u;
      ft_set_f64(x, i, (double)(int64_t)(seed >> 40) / 8388608.0 - 1.0 + 1.0 / 3.0 * 0x1p-20);
    }
  }
  ft_array *got = conv_of(&cc, f64 ? "f64" : "f32", l, r);
  /* the whole patch matrix X[P][K], kernel W[K][O], one ft_gemm */
  size_t es = f64 ? sizeof(double) : sizeof(float);
  char *X = calloc((size_t)(P * K), es), *W = malloc((size_t)(K * O) * es),
       *Cm = malloc((size_t)(P * O) * es);
  ck_assert(X && W && Cm);
  for (int64_t n = 0; n < N; n++)
    for (int64_t y = 0; y < H; y++)
      for (int64_t xx = 0; xx < H; xx++)
        for (int64_t i = 0; i < I; i++)
          for (int64_t ky = 0; ky < 3; ky++)
            for (int64_t kx = 0; kx < 3; kx++) {
              int64_t sy = y + ky - 1, sx = xx + kx - 1, p = (n * H + y) * H + xx;
              int64_t kk = i * KW + ky * 3 + kx;
              if (sy < 0 || sy >= H || sx < 0 || sx >= H) continue;
              double v = ft_get_f64(l, ((n * I + i) * H + sy) * H + sx);
              if (f64) ((double *)(void *)X)[p * K + kk] = v;
              else ((float *)(void *)X)[p * K + kk] = (float)v;
            }
  for (int64_t o = 0; o < O; o++)
    for (int64_t kk = 0; kk < K; kk++) {
      double v = ft_get_f64(r, o * K + kk);
      if (f64) ((double *)(void *)W)[kk * O + o] = v;
      else ((float *)(void *)W)[kk * O + o] = (float)v;
    }
  bool ok = f64 ? ft_gemm_f64(P, O, K, (double *)(void *)X, K, (double *)(void *)W, O,
                              (double *)(void *)Cm, O)
                : ft_gemm_f32(P, O, K, (float *)(void *)X, K, (float *)(void *)W, O,
                              (float *)(void *)Cm, O);
  ck_assert(ok);
  int64_t inexact = 0;
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < O; o++)
      for (int64_t s = 0; s < H * H; s++) {
        int64_t p = n * H * H + s, oi = (n * O + o) * H * H + s;
        const char *want = Cm + (size_t)(p * O + o) * es, *have = (const char *)got->data + (size_t)oi * es;
        ck_assert_msg(memcmp(want, have, es) == 0, "%s H=%lld element %lld: got %a, want %a",
                      f64 ? "f64" : "f32", (long long)H, (long long)oi, ft_get_f64(got, oi),
                      f64 ? *(const double *)(const void *)want : (double)*(const float *)(const void *)want);
        inexact += ft_get_f64(got, oi) != rint(ft_get_f64(got, oi));
      }
  ck_assert_int_gt(inexact, 0);
  /* the scratch: one block of patches and results, not P rows */
  char text[1024];
  snprintf(text, sizeof text,
           "{ lambda ; a:f32[%s] b:f32[64,64,3,3]. let\n"
           "    c:f32[%s] = conv_general_dilated[batch_group_count=1 "
           "dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), "
           "out_spec=(0, 1, 2, 3)) feature_group_count=1 lhs_dilation=(1, 1) out_sharding=None "
           "padding=((1, 1), (1, 1)) precision=None preferred_element_type=None "
           "rhs_dilation=(1, 1) window_strides=(1, 1)] a b\n"
           "  in (c,) }\n",
           dims_l, dims_o);
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "conv");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  size_t scratch = ft_conv_scratch(&j->eqns[0]);
  int64_t R = ft_gemm_block_rows(P, O, K);
  ck_assert_uint_ge(scratch, (size_t)(R * (K + O) + K * O) * sizeof(float));
  ck_assert_uint_lt(scratch, (size_t)(R * (K + O) + K * O) * sizeof(float) + 65536);
  ck_assert_uint_lt(scratch, (size_t)(P * (K + O)) * sizeof(float));     /* X and C of all rows */
  ft_jaxpr_free(j);
  free(X), free(W), free(Cm);
  ft_array_free(l), ft_array_free(r), ft_array_free(got);
}

START_TEST(block_by_block) {
  blocked_case(FT_F32, 23);
  blocked_case(FT_F64, 23);
  blocked_case(FT_F32, 16);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("conv_gemm");
  TCase *t = tcase_create("conv_gemm");
  tcase_add_checked_fixture(t, rt_setup, rt_teardown);
  tcase_add_test(t, float_equals_integer);
  tcase_add_test(t, block_by_block);
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
