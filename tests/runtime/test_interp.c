/* tests/runtime/test_interp.c: the reference interpreter, primitive by
 * primitive, with exact expected values (hand-computed, or taken from JAX
 * 0.10.2 on CPU where noted), including -0.0, NaN, +-Inf, subnormals and
 * integer edge cases. */
#include <float.h>
#include <stdlib.h>

#include "rt_util.h"

static const ft_dtype INT_DTS[] = {FT_I8, FT_I16, FT_I32, FT_I64, FT_U8, FT_U16, FT_U32, FT_U64};
static const ft_dtype FLOAT_DTS[] = {FT_F16, FT_BF16, FT_F32, FT_F64};

/* ------------------------------------------------------------------ arrays */
START_TEST(array_api) {
  int64_t d[2] = {2, 3};
  ft_array *a = ft_array_new(C, FT_F32, 2, d);
  ck_assert_ptr_nonnull(a);
  ck_assert_uint_eq(ft_array_nbytes(a), 24);
  ck_assert_uint_eq((uintptr_t)ft_array_data(a) % 64, 0);
  ft_aval av = ft_array_aval(a);
  ck_assert_int_eq(av.rank, 2);
  ck_assert_int_eq(av.dims[1], 3);
  for (int i = 0; i < 6; i++) ck_assert_float_eq(((const float *)ft_array_data(a))[i], 0.0f);
  float v[6] = {1, 2, 3, 4, 5, -0.0f};
  ft_array *b = ft_array_from_data(C, FT_F32, 2, d, v);
  ck_assert(!ft_array_equal_bits(a, b));
  memcpy(ft_array_data_mut(a), v, sizeof v);
  ck_assert(ft_array_equal_bits(a, b));
  ((float *)ft_array_data_mut(a))[5] = 0.0f; /* +0 vs -0 differ in bits */
  ck_assert(!ft_array_equal_bits(a, b));
  ft_array_free(a), ft_array_free(b);
  int64_t bad[1] = {-1};
  ck_assert_ptr_null(ft_array_new(C, FT_F32, 1, bad));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_INVALID_ARG);
  ck_assert_ptr_null(ft_array_new(C, FT_F32, 9, d));
  ck_assert_ptr_null(ft_array_new(C, (ft_dtype)99, 0, NULL));
  int64_t huge[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
  ck_assert_ptr_null(ft_array_new(C, FT_F64, 2, huge));
  int64_t z[2] = {0, 5};
  ft_array *e = ft_array_new(C, FT_F32, 2, z);
  ck_assert_uint_eq(ft_array_nbytes(e), 0);
  ck_assert_ptr_nonnull(ft_array_data(e));
  ft_array_free(e);
  ft_array_free(NULL);
}
END_TEST

START_TEST(half_conversions) {
  ck_assert_uint_eq(ft_f64_to_f16(1.0), 0x3c00);
  ck_assert_uint_eq(ft_f64_to_f16(65504.0), 0x7bff);
  ck_assert_uint_eq(ft_f64_to_f16(65520.0), 0x7c00);          /* rounds up to inf */
  ck_assert_uint_eq(ft_f64_to_f16(65519.99), 0x7bff);
  ck_assert_uint_eq(ft_f64_to_f16(0x1p-24), 0x0001);          /* smallest subnormal */
  ck_assert_uint_eq(ft_f64_to_f16(0x1p-25), 0x0000);          /* tie to even: 0 */
  ck_assert_uint_eq(ft_f64_to_f16(0x1.8p-25), 0x0001);
  ck_assert_uint_eq(ft_f64_to_f16(-0.0), 0x8000);
  ck_assert_uint_eq(ft_f64_to_f16(1.0 + 0x1p-11), 0x3c00);    /* tie to even */
  ck_assert_uint_eq(ft_f64_to_f16(1.0 + 0x1.8p-10), 0x3c02);
  ck_assert_uint_eq(ft_f64_to_f16(0x1.ffcp-15), 0x0400);      /* rounds into the normals */
  ck_assert_uint_eq(ft_f64_to_f16(-INFINITY), 0xfc00);
  ck_assert_uint_eq(ft_f64_to_f16(NAN), 0x7e00);
  ck_assert_uint_eq(ft_f64_to_bf16(1.00390625), 0x3f80);      /* JAX: 16256 */
  ck_assert_uint_eq(ft_f64_to_bf16(1.01171875), 0x3f82);      /* JAX: 16258 */
  ck_assert_uint_eq(ft_f64_to_bf16(NAN), 0x7fc0);             /* JAX: 32704 */
  ck_assert_uint_eq(ft_f64_to_bf16(3.4e38), 0x7f80);          /* JAX: 32640 */
  ck_same_f32(ft_f16_to_f32(0x0001), 0x1p-24f);
  ck_same_f32(ft_f16_to_f32(0x8000), -0.0f);
  ck_same_f32(ft_f16_to_f32(0x7bff), 65504.0f);
  ck_assert(isinf(ft_f16_to_f32(0x7c00)));
  ck_assert(isnan(ft_f16_to_f32(0x7e00)));
  ck_same_f32(ft_bf16_to_f32(0x3f82), 1.015625f);
  /* every f16 survives f16 -> f32 -> f16 */
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = ft_f16_to_f32((uint16_t)h);
    if (isnan(f)) continue;
    ck_assert_uint_eq(ft_f64_to_f16(f), h);
    ck_assert_uint_eq(ft_f64_to_bf16(ft_bf16_to_f32((uint16_t)h)), h);
  }
}
END_TEST

/* ----------------------------------------------------------------- unary */
START_TEST(unary_float_exact) {
  for (size_t k = 0; k < FT_COUNTOF(FLOAT_DTS); k++) {
    ft_dtype dt = FLOAT_DTS[k];
    ck_same_f64(un(FT_P_NEG, dt, 0.0), -0.0);
    ck_same_f64(un(FT_P_NEG, dt, -INFINITY), INFINITY);
    ck_same_f64(un(FT_P_SIGN, dt, -0.0), -0.0);
    ck_same_f64(un(FT_P_SIGN, dt, 0.0), 0.0);
    ck_same_f64(un(FT_P_SIGN, dt, -3.5), -1.0);
    ck_same_f64(un(FT_P_SIGN, dt, INFINITY), 1.0);
    ck_assert(isnan(un(FT_P_SIGN, dt, NAN)));
    ck_same_f64(un(FT_P_FLOOR, dt, -0.5), -1.0);
    ck_same_f64(un(FT_P_FLOOR, dt, -0.0), -0.0);
    ck_same_f64(un(FT_P_CEIL, dt, -0.5), -0.0);
    ck_same_f64(un(FT_P_CEIL, dt, 1.25), 2.0);
    ck_same_f64(un(FT_P_ROUND, dt, 2.5), 3.0); /* default: away from zero */
    ck_same_f64(un(FT_P_ROUND, dt, -0.5), -1.0);
    ck_same_f64(un(FT_P_ABS, dt, -0.0), 0.0);
    ck_same_f64(un(FT_P_ABS, dt, -INFINITY), INFINITY);
    ck_same_f64(un(FT_P_SQRT, dt, -0.0), -0.0);
    ck_same_f64(un(FT_P_SQRT, dt, 4.0), 2.0);
    ck_assert(isnan(un(FT_P_SQRT, dt, -1.0)));
    ck_same_f64(un(FT_P_RSQRT, dt, 0.0), INFINITY);
    ck_same_f64(un(FT_P_RSQRT, dt, -0.0), -INFINITY);
    ck_same_f64(un(FT_P_RSQRT, dt, 0.25), 2.0);
    ck_same_f64(un(FT_P_SQUARE, dt, -3.0), 9.0);
    ck_same_f64(un(FT_P_EXP, dt, 0.0), 1.0);
    ck_same_f64(un(FT_P_EXP, dt, -INFINITY), 0.0);
    ck_same_f64(un(FT_P_EXP, dt, INFINITY), INFINITY);
    ck_same_f64(un(FT_P_EXP2, dt, 3.0), 8.0);
    ck_same_f64(un(FT_P_LOG, dt, 1.0), 0.0);
    ck_same_f64(un(FT_P_LOG, dt, 0.0), -INFINITY);
    ck_assert(isnan(un(FT_P_LOG, dt, -1.0)));
    ck_same_f64(un(FT_P_LOG1P, dt, -0.0), -0.0);
    ck_same_f64(un(FT_P_LOG1P, dt, -1.0), -INFINITY);
    ck_same_f64(un(FT_P_EXPM1, dt, -0.0), -0.0);
    ck_same_f64(un(FT_P_EXPM1, dt, -INFINITY), -1.0);
    ck_same_f64(un(FT_P_TANH, dt, INFINITY), 1.0);
    ck_same_f64(un(FT_P_TANH, dt, -0.0), -0.0);
    ck_same_f64(un(FT_P_LOGISTIC, dt, 0.0), 0.5);
    ck_same_f64(un(FT_P_LOGISTIC, dt, -INFINITY), 0.0);
    ck_same_f64(un(FT_P_LOGISTIC, dt, INFINITY), 1.0);
    ck_same_f64(un(FT_P_SIN, dt, -0.0), -0.0);
    ck_same_f64(un(FT_P_COS, dt, 0.0), 1.0);
    ck_same_f64(un(FT_P_TAN, dt, -0.0), -0.0);
    ck_same_f64(un(FT_P_ATAN, dt, -0.0), -0.0);
    ck_same_f64(un(FT_P_ASIN, dt, -0.0), -0.0);
    ck_assert(isnan(un(FT_P_ASIN, dt, 2.0)));
    ck_same_f64(un(FT_P_ACOS, dt, 1.0), 0.0);
    ck_same_f64(un(FT_P_SINH, dt, -0.0), -0.0);
    ck_same_f64(un(FT_P_COSH, dt, 0.0), 1.0);
    ck_same_f64(un(FT_P_ASINH, dt, -0.0), -0.0);
    ck_same_f64(un(FT_P_ACOSH, dt, 1.0), 0.0);
    ck_same_f64(un(FT_P_ATANH, dt, 1.0), INFINITY);
    ck_same_f64(un(FT_P_CBRT, dt, -8.0), -2.0);
    ck_same_f64(un(FT_P_ERF, dt, INFINITY), 1.0);
    ck_same_f64(un(FT_P_ERF, dt, -0.0), -0.0);
    ck_same_f64(un(FT_P_ERFC, dt, 0.0), 1.0);
    ck_same_f64(un(FT_P_ERF_INV, dt, 1.0), INFINITY); /* JAX: inf, -inf, 0, -0, nan */
    ck_same_f64(un(FT_P_ERF_INV, dt, -1.0), -INFINITY);
    ck_same_f64(un(FT_P_ERF_INV, dt, -0.0), -0.0);
    ck_assert(isnan(un(FT_P_ERF_INV, dt, 2.0)));
    ck_same_f64(un(FT_P_COPY, dt, -0.0), -0.0);
    ck_same_f64(un(FT_P_STOP_GRADIENT, dt, -2.5), -2.5);
  }
  /* subnormals are not flushed */
  ck_same_f64(un(FT_P_NEG, FT_F32, 0x1p-149), -0x1p-149);
  ck_same_f64(un(FT_P_ABS, FT_F64, -0x1p-1074), 0x1p-1074);
  ck_same_f64(un(FT_P_SQRT, FT_F64, 0x1p-1074), 0x1p-537);
  ck_same_f64(un(FT_P_FLOOR, FT_F32, 0x1p-149), 0.0);
}
END_TEST

START_TEST(unary_round_is_finite) {
  double xs[] = {0.5, 1.5, 2.5, -0.5, -2.5};
  double away[] = {1, 2, 3, -1, -3}, even[] = {0, 2, 2, -0.0, -2}; /* JAX */
  for (int i = 0; i < 5; i++) {
    B b = b_new(FT_P_ROUND);
    b_int(&b, "rounding_method", 1);
    ft_array *a = SCALAR_F64(FT_F32, xs[i]);
    ft_array *r = b_run(&b, 1, &a, ft_aval_scalar(FT_F32));
    ck_same_f64(ft_get_f64(r, 0), even[i]);
    ft_array_free(a), ft_array_free(r);
    ck_same_f64(un(FT_P_ROUND, FT_F64, xs[i]), away[i]);
  }
  float v[4] = {NAN, INFINITY, -INFINITY, 0x1p-149f};
  int64_t d[1] = {4};
  B b = b_new(FT_P_IS_FINITE);
  ft_array *a = ARR(FT_F32, 1, d, v);
  ft_array *r = b_run(&b, 1, &a, AV(FT_BOOL, 1, d));
  const uint8_t *o = ft_array_data(r);
  ck_assert(o[0] == 0 && o[1] == 0 && o[2] == 0 && o[3] == 1);
  ft_array_free(a), ft_array_free(r);
}
END_TEST

START_TEST(unary_int) {
  ck_assert_int_eq(un_i(FT_P_NEG, FT_I32, INT32_MIN), INT32_MIN);
  ck_assert_int_eq(un_i(FT_P_NEG, FT_I8, -128), -128); /* JAX */
  ck_assert_int_eq(un_i(FT_P_ABS, FT_I32, INT32_MIN), INT32_MIN);
  ck_assert_int_eq(un_i(FT_P_ABS, FT_I64, -5), 5);
  ck_assert_int_eq(un_i(FT_P_NEG, FT_U8, 1), 255);
  ck_assert_int_eq(un_i(FT_P_SIGN, FT_I16, -7), -1);
  ck_assert_int_eq(un_i(FT_P_SIGN, FT_I16, 0), 0);
  ck_assert_int_eq(un_i(FT_P_SIGN, FT_U32, 0xffffffffu), 1);
  ck_assert_int_eq(un_i(FT_P_NOT, FT_U8, 5), 250); /* JAX */
  ck_assert_int_eq(un_i(FT_P_NOT, FT_I32, 0), -1);
  ck_assert_int_eq(un_i(FT_P_NOT, FT_BOOL, 1), 0);
  ck_assert_int_eq(un_i(FT_P_NOT, FT_BOOL, 0), 1);
  ck_assert_int_eq(un_i(FT_P_SQUARE, FT_I8, 16), 0);
  ck_assert_int_eq((uint64_t)un_i(FT_P_NEG, FT_U64, 1), UINT64_MAX);
  for (size_t k = 0; k < FT_COUNTOF(INT_DTS); k++) {
    ck_assert_int_eq(un_i(FT_P_COPY, INT_DTS[k], 7), 7);
    ck_assert_int_eq(un_i(FT_P_SIGN, INT_DTS[k], 9), 1);
  }
  /* floating-only primitives are refused on integers */
  B b = b_new(FT_P_EXP);
  ft_array *a = SCALAR_I64(FT_I32, 1), *r = NULL;
  ft_aval o = ft_aval_scalar(FT_I32);
  ck_assert_int_eq(b_eval(&b, 1, &a, 1, &o, &r), FT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "exp"));
  ck_assert_ptr_null(r);
  ft_array_free(a);
}
END_TEST

static double ipow(ft_dtype dt, double x, int64_t y) {
  B b = b_new(FT_P_INTEGER_POW);
  b_int(&b, "y", y);
  ft_array *a = SCALAR_F64(dt, x);
  ft_array *r = b_run(&b, 1, &a, ft_aval_scalar(dt));
  double v = ft_get_f64(r, 0);
  ft_array_free(a), ft_array_free(r);
  return v;
}
static int64_t ipow_i(ft_dtype dt, int64_t x, int64_t y) {
  B b = b_new(FT_P_INTEGER_POW);
  b_int(&b, "y", y);
  ft_array *a = SCALAR_I64(dt, x);
  ft_array *r = b_run(&b, 1, &a, ft_aval_scalar(dt));
  int64_t v = ft_get_i64(r, 0);
  ft_array_free(a), ft_array_free(r);
  return v;
}

START_TEST(integer_pow) {
  ck_assert_int_eq(ipow_i(FT_I32, 2, 31), INT32_MIN);   /* JAX */
  ck_assert_int_eq(ipow_i(FT_I32, 3, 31), 1264544299);  /* JAX */
  ck_assert_int_eq(ipow_i(FT_I32, -3, 0), 1);
  ck_assert_int_eq(ipow_i(FT_U8, 3, 5), 243);
  ck_same_f64(ipow(FT_F64, 2.0, -2), 0.25);
  ck_same_f64(ipow(FT_F32, -0.0, 3), -0.0);
  ck_same_f64(ipow(FT_F32, 0.0, -1), INFINITY);
  ck_same_f64(ipow(FT_F32, NAN, 0), 1.0);
  /* f16/bf16 round after every multiply (JAX bits) */
  ck_assert_uint_eq(ft_f64_to_f16(ipow(FT_F16, 1.1, 5)), 15982);
  ck_assert_uint_eq(ft_f64_to_f16(ipow(FT_F16, 1.1, -3)), 14853);
  ck_assert_uint_eq(ft_f64_to_bf16(ipow(FT_BF16, 1.1, 7)), 16379);
}
END_TEST

START_TEST(reduce_precision) {
  float xs[4] = {1.0009765625f + 0x1p-11f, 70000.0f, 1e-6f, NAN};
  float want[4] = {1.001953125f, INFINITY, 0.0f, NAN}; /* JAX, (5, 10) */
  int64_t d[1] = {4};
  B b = b_new(FT_P_REDUCE_PRECISION);
  b_int(&b, "exponent_bits", 5);
  b_int(&b, "mantissa_bits", 10);
  ft_array *a = ARR(FT_F32, 1, d, xs);
  ft_array *r = b_run(&b, 1, &a, AV(FT_F32, 1, d));
  for (int i = 0; i < 4; i++) ck_same_f32(((const float *)ft_array_data(r))[i], want[i]);
  ft_array_free(a), ft_array_free(r);
  /* to bf16's format in f64: 1 + 2^-8 ties to even */
  b = b_new(FT_P_REDUCE_PRECISION);
  b_int(&b, "exponent_bits", 8);
  b_int(&b, "mantissa_bits", 7);
  a = SCALAR_F64(FT_F64, 1.0 + 0x1p-8 + 0x1p-30);
  r = b_run(&b, 1, &a, ft_aval_scalar(FT_F64));
  ck_same_f64(ft_get_f64(r, 0), 1.0078125);
  ft_array_free(a), ft_array_free(r);
}
END_TEST

/* reduce_precision of n raw elements of dt to (eb, mb); returns the raw result
 * bits in out (elements of 2, 4 or 8 bytes). */
static void rp_bits(ft_dtype dt, int n, const void *in, int eb, int mb, void *out) {
  int64_t d[1] = {n};
  B b = b_new(FT_P_REDUCE_PRECISION);
  b_int(&b, "exponent_bits", eb);
  b_int(&b, "mantissa_bits", mb);
  ft_array *a = ARR(dt, 1, d, in);
  ft_array *r = b_run(&b, 1, &a, AV(dt, 1, d));
  memcpy(out, ft_array_data(r), ft_dtype_size(dt) * (size_t)n);
  ft_array_free(a), ft_array_free(r);
}

/* Subnormals, all values from JAX 0.10.2 on CPU: reduce_precision rounds the
 * mantissa of the dtype's own bits and flushes only below a *narrower*
 * exponent range, so with the source's exponent_bits subnormals survive
 * (f16 (5, 10) is the identity; 2^-24 was flushed when f16 went via f32). */
START_TEST(reduce_precision_subnormals) {
  /* f16: 2^-24, 3*2^-24, 7*2^-24, 2^-14, 2^-15, 1, 1+2^-10, 65504, nan, -inf, 5*2^-20 */
  uint16_t h[11] = {1, 3, 7, 1024, 512, 15360, 15361, 31743, 32256, 64512, 80}, ho[11];
  static const struct { int eb, mb; uint16_t want[11]; } hc[] = {
      {5, 10, {1, 3, 7, 1024, 512, 15360, 15361, 31743, 32256, 64512, 80}},
      {8, 23, {1, 3, 7, 1024, 512, 15360, 15361, 31743, 32256, 64512, 80}},
      {5, 2, {0, 0, 0, 1024, 512, 15360, 15360, 31744, 32256, 64512, 0}},
      {5, 0, {0, 0, 0, 1024, 0, 15360, 15360, 31744, 32256, 64512, 0}},
      {4, 3, {0, 0, 0, 0, 0, 15360, 15360, 31744, 32256, 64512, 0}},
      {3, 10, {0, 0, 0, 0, 0, 15360, 15361, 31744, 32256, 64512, 0}},
  };
  for (size_t c = 0; c < sizeof hc / sizeof hc[0]; c++) {
    rp_bits(FT_F16, 11, h, hc[c].eb, hc[c].mb, ho);
    ck_assert_msg(!memcmp(ho, hc[c].want, sizeof ho), "f16 (%d, %d)", hc[c].eb, hc[c].mb);
  }
  /* bf16: 2^-133, 3*2^-133, 2^-126, 2^-127, 1+2^-7, 5*2^-130, 1e-39 */
  uint16_t g[7] = {1, 3, 128, 64, 16257, 40, 11}, go[7];
  static const struct { int eb, mb; uint16_t want[7]; } gc[] = {
      {8, 7, {1, 3, 128, 64, 16257, 40, 11}},
      {11, 52, {1, 3, 128, 64, 16257, 40, 11}},
      {8, 2, {0, 0, 128, 64, 16256, 32, 0}},
      {8, 1, {0, 0, 128, 64, 16256, 64, 0}},
      {5, 7, {0, 0, 0, 0, 16257, 0, 0}},
  };
  for (size_t c = 0; c < sizeof gc / sizeof gc[0]; c++) {
    rp_bits(FT_BF16, 7, g, gc[c].eb, gc[c].mb, go);
    ck_assert_msg(!memcmp(go, gc[c].want, sizeof go), "bf16 (%d, %d)", gc[c].eb, gc[c].mb);
  }
  /* f32: 2^-149, 2^-126, 2^-127, 1.5*2^-140, 2^-133, 2^-134, 1+2^-8, 3e-39 */
  uint32_t f[8] = {1, 8388608, 4194304, 768, 65536, 32768, 1065385984, 2140872}, fo[8];
  static const struct { int eb, mb; uint32_t want[8]; } fc[] = {
      {8, 23, {1, 8388608, 4194304, 768, 65536, 32768, 1065385984, 2140872}},
      {11, 52, {1, 8388608, 4194304, 768, 65536, 32768, 1065385984, 2140872}},
      {8, 7, {0, 8388608, 4194304, 0, 65536, 0, 1065353216, 2162688}},
      {5, 10, {0, 0, 0, 0, 0, 0, 1065385984, 0}},
  };
  for (size_t c = 0; c < sizeof fc / sizeof fc[0]; c++) {
    rp_bits(FT_F32, 8, f, fc[c].eb, fc[c].mb, fo);
    ck_assert_msg(!memcmp(fo, fc[c].want, sizeof fo), "f32 (%d, %d)", fc[c].eb, fc[c].mb);
  }
  /* f64: 2^-1074, 2^-1022, 2^-1023, 2^-149, 2^-150, 2^-126, 2^-127, 3*2^-1074 */
  double x[8] = {0x1p-1074, 0x1p-1022, 0x1p-1023, 0x1p-149, 0x1p-150, 0x1p-126, 0x1p-127,
                 0x3p-1074}, xo[8];
  static const struct { int eb, mb; double want[8]; } xc[] = {
      {11, 52, {0x1p-1074, 0x1p-1022, 0x1p-1023, 0x1p-149, 0x1p-150, 0x1p-126, 0x1p-127,
                0x3p-1074}},
      {11, 10, {0, 0x1p-1022, 0x1p-1023, 0x1p-149, 0x1p-150, 0x1p-126, 0x1p-127, 0}},
      {8, 23, {0, 0, 0, 0, 0, 0x1p-126, 0, 0}},
  };
  for (size_t c = 0; c < sizeof xc / sizeof xc[0]; c++) {
    rp_bits(FT_F64, 8, x, xc[c].eb, xc[c].mb, xo);
    ck_assert_msg(!memcmp(xo, xc[c].want, sizeof xo), "f64 (%d, %d)", xc[c].eb, xc[c].mb);
  }
  /* a NaN comes back unchanged (sign and payload), even with mantissa_bits 0 */
  uint32_t nan_in[3] = {0x7fc00000u, 0xff800001u, 0x3f800000u}, nan_out[3];
  rp_bits(FT_F32, 3, nan_in, 5, 0, nan_out);
  ck_assert_mem_eq(nan_out, nan_in, sizeof nan_in);
}
END_TEST

/* ----------------------------------------------------------------- binary */
START_TEST(binary_int_edges) {
  /* all values from JAX 0.10.2 on CPU */
  ck_assert_int_eq(bin_i(FT_P_DIV, FT_I32, 7, 0), -1);
  ck_assert_int_eq(bin_i(FT_P_DIV, FT_I32, -7, 0), -1);
  ck_assert_int_eq(bin_i(FT_P_DIV, FT_I32, INT32_MIN, -1), INT32_MIN);
  ck_assert_int_eq(bin_i(FT_P_DIV, FT_I64, INT64_MIN, -1), INT64_MIN);
  ck_assert_int_eq(bin_i(FT_P_DIV, FT_I32, -7, 2), -3);
  ck_assert_int_eq(bin_i(FT_P_DIV, FT_U32, 7, 0), 0xffffffffu);
  ck_assert_int_eq((uint64_t)bin_i(FT_P_DIV, FT_U64, 7, 0), UINT64_MAX);
  ck_assert_int_eq((uint64_t)bin_i(FT_P_DIV, FT_U64, (int64_t)UINT64_MAX, 2), UINT64_MAX / 2);
  ck_assert_int_eq(bin_i(FT_P_REM, FT_I32, 7, 0), 7);
  ck_assert_int_eq(bin_i(FT_P_REM, FT_I32, -7, 0), -7);
  ck_assert_int_eq(bin_i(FT_P_REM, FT_I32, 5, -2), 1);
  ck_assert_int_eq(bin_i(FT_P_REM, FT_I32, -5, 2), -1);
  ck_assert_int_eq(bin_i(FT_P_REM, FT_I32, INT32_MIN, -1), 0);
  ck_assert_int_eq(bin_i(FT_P_REM, FT_I64, INT64_MIN, -1), 0);
  ck_assert_int_eq(bin_i(FT_P_REM, FT_U8, 200, 0), 200);
  ck_assert_int_eq(bin_i(FT_P_SHIFT_LEFT, FT_I32, 1, 31), INT32_MIN);
  ck_assert_int_eq(bin_i(FT_P_SHIFT_LEFT, FT_I32, 1, 32), 0);
  ck_assert_int_eq(bin_i(FT_P_SHIFT_LEFT, FT_I32, 1, 40), 0);
  ck_assert_int_eq(bin_i(FT_P_SHIFT_LEFT, FT_I32, -8, -1), 0);
  ck_assert_int_eq(bin_i(FT_P_SHIFT_RIGHT_ARITHMETIC, FT_I32, -8, 32), -1);
  ck_assert_int_eq(bin_i(FT_P_SHIFT_RIGHT_ARITHMETIC, FT_I32, -8, 100), -1);
  ck_assert_int_eq(bin_i(FT_P_SHIFT_RIGHT_ARITHMETIC, FT_I32, 8, -1), 0);
  ck_assert_int_eq(bin_i(FT_P_SHIFT_RIGHT_ARITHMETIC, FT_I32, -8, 1), -4);
  ck_assert_int_eq(bin_i(FT_P_SHIFT_RIGHT_ARITHMETIC, FT_U32, 0x80000000u, 4), 4160749568u);
  ck_assert_int_eq(bin_i(FT_P_SHIFT_RIGHT_LOGICAL, FT_I32, -8, 31), 1);
  ck_assert_int_eq(bin_i(FT_P_SHIFT_RIGHT_LOGICAL, FT_I32, -8, 32), 0);
  ck_assert_int_eq(bin_i(FT_P_SHIFT_RIGHT_LOGICAL, FT_I8, -128, 7), 1);
  ck_assert_int_eq(bin_i(FT_P_SHIFT_LEFT, FT_U8, 0x81, 1), 2);
  ck_assert_int_eq(bin_i(FT_P_SHIFT_LEFT, FT_I64, 1, 63), INT64_MIN);
  ck_assert_int_eq(bin_i(FT_P_SHIFT_LEFT, FT_I64, 1, 64), 0);
  /* wrapping arithmetic, every width */
  ck_assert_int_eq(bin_i(FT_P_ADD, FT_I8, 127, 1), -128);
  ck_assert_int_eq(bin_i(FT_P_ADD, FT_U8, 255, 1), 0);
  ck_assert_int_eq(bin_i(FT_P_SUB, FT_U16, 0, 1), 65535);
  ck_assert_int_eq(bin_i(FT_P_MUL, FT_I16, 300, 300), 24464);
  ck_assert_int_eq(bin_i(FT_P_ADD, FT_I32, INT32_MAX, 1), INT32_MIN);
  ck_assert_int_eq(bin_i(FT_P_ADD, FT_I64, INT64_MAX, 1), INT64_MIN);
  ck_assert_int_eq(bin_i(FT_P_MUL, FT_U32, 65536, 65536), 0);
  ck_assert_int_eq(bin_i(FT_P_MAX, FT_U32, 0xffffffffu, 1), 0xffffffffu);
  ck_assert_int_eq(bin_i(FT_P_MIN, FT_I32, -1, 1), -1);
  ck_assert_int_eq((uint64_t)bin_i(FT_P_MAX, FT_U64, -1, 1), UINT64_MAX);
  ck_assert_int_eq(bin_i(FT_P_AND, FT_I32, 12, 10), 8);
  ck_assert_int_eq(bin_i(FT_P_OR, FT_I32, 12, 10), 14);
  ck_assert_int_eq(bin_i(FT_P_XOR, FT_I32, 12, 10), 6);
  ck_assert_int_eq(bin_i(FT_P_XOR, FT_BOOL, 1, 1), 0);
  ck_assert_int_eq(bin_i(FT_P_AND, FT_BOOL, 1, 0), 0);
  ck_assert_int_eq(bin_i(FT_P_OR, FT_BOOL, 1, 0), 1);
  ck_assert_int_eq(bin_i(FT_P_MAX, FT_BOOL, 1, 0), 1);
  for (size_t k = 0; k < FT_COUNTOF(INT_DTS); k++) {
    ft_dtype dt = INT_DTS[k];
    ck_assert_int_eq(bin_i(FT_P_ADD, dt, 100, 27), 127);
    ck_assert_int_eq(bin_i(FT_P_DIV, dt, 100, 7), 14);
    ck_assert_int_eq(bin_i(FT_P_REM, dt, 100, 7), 2);
    ck_assert_int_eq(bin_i(FT_P_SHIFT_RIGHT_LOGICAL, dt, 100, 2), 25);
  }
}
END_TEST

START_TEST(binary_float_edges) {
  for (size_t k = 0; k < FT_COUNTOF(FLOAT_DTS); k++) {
    ft_dtype dt = FLOAT_DTS[k];
    /* max/min: NaN wins, -0 < +0 (JAX) */
    ck_assert(isnan(bin(FT_P_MAX, dt, NAN, 1.0)));
    ck_assert(isnan(bin(FT_P_MAX, dt, 1.0, NAN)));
    ck_assert(isnan(bin(FT_P_MIN, dt, NAN, 1.0)));
    ck_same_f64(bin(FT_P_MAX, dt, 0.0, -0.0), 0.0);
    ck_same_f64(bin(FT_P_MAX, dt, -0.0, 0.0), 0.0);
    ck_same_f64(bin(FT_P_MIN, dt, 0.0, -0.0), -0.0);
    ck_same_f64(bin(FT_P_MIN, dt, -0.0, 0.0), -0.0);
    ck_same_f64(bin(FT_P_REM, dt, 5.5, 2.0), 1.5);
    ck_same_f64(bin(FT_P_REM, dt, -5.5, 2.0), -1.5);
    ck_same_f64(bin(FT_P_REM, dt, -4.0, 2.0), -0.0);
    ck_assert(isnan(bin(FT_P_REM, dt, 1.0, 0.0)));
    ck_same_f64(bin(FT_P_DIV, dt, 1.0, -0.0), -INFINITY);
    ck_assert(isnan(bin(FT_P_DIV, dt, 0.0, 0.0)));
    ck_same_f64(bin(FT_P_ADD, dt, -0.0, -0.0), -0.0);
    ck_same_f64(bin(FT_P_ADD, dt, -0.0, 0.0), 0.0);
    ck_same_f64(bin(FT_P_SUB, dt, INFINITY, 1.0), INFINITY);
    ck_assert(isnan(bin(FT_P_SUB, dt, INFINITY, INFINITY)));
    ck_same_f64(bin(FT_P_MUL, dt, -2.0, 0.0), -0.0);
    ck_same_f64(bin(FT_P_POW, dt, 2.0, 3.0), 8.0);
    ck_same_f64(bin(FT_P_POW, dt, 0.0, 0.0), 1.0);
    ck_same_f64(bin(FT_P_POW, dt, NAN, 0.0), 1.0);
    ck_same_f64(bin(FT_P_ATAN2, dt, 0.0, 1.0), 0.0);
    ck_same_f64(bin(FT_P_ATAN2, dt, -0.0, 1.0), -0.0);
    ck_assert(isnan(bin(FT_P_NEXTAFTER, dt, NAN, 1.0)));
    ck_same_f64(bin(FT_P_NEXTAFTER, dt, 1.0, 1.0), 1.0);
  }
  ck_same_f64(bin(FT_P_ATAN2, FT_F64, 0.0, -0.0), 3.141592653589793); /* JAX */
  ck_same_f64(bin(FT_P_ATAN2, FT_F64, -0.0, -0.0), -3.141592653589793);
  ck_assert_uint_eq(bits32((float)bin(FT_P_NEXTAFTER, FT_F32, 0.0, 1.0)), 1); /* JAX */
  ck_assert_uint_eq(bits32((float)bin(FT_P_NEXTAFTER, FT_F32, 1.0, 2.0)), 1065353217);
  ck_same_f64(bin(FT_P_NEXTAFTER, FT_F64, 0.0, -1.0), -0x1p-1074);
  ck_same_f64(bin(FT_P_NEXTAFTER, FT_F16, 1.0, 2.0), 1.0 + 0x1p-10);
  ck_same_f64(bin(FT_P_NEXTAFTER, FT_F16, 0.0, 1.0), 0x1p-24);
  /* f16/bf16 compute in f32, round once (JAX bits) */
  ck_assert_uint_eq(ft_f64_to_f16(bin(FT_P_ADD, FT_F16, 2048.0, 1.0)), 26624);
  ck_assert_uint_eq(ft_f64_to_f16(bin(FT_P_ADD, FT_F16, 0.1, 0.2)), 13516);
  ck_assert_uint_eq(ft_f64_to_bf16(bin(FT_P_MUL, FT_BF16, 1.1, 3.3)), 16488);
  ck_assert_uint_eq(ft_f64_to_f16(bin(FT_P_DIV, FT_F16, 1.0, 3.0)), 13653);
  ck_assert_uint_eq(ft_f64_to_f16(un(FT_P_SQRT, FT_F16, 2.0)), 15784);
  /* subnormal arithmetic is kept */
  ck_same_f64(bin(FT_P_MUL, FT_F32, 0x1p-126, 0.5), 0x1p-127);
  ck_same_f64(bin(FT_P_SUB, FT_F64, 0x1p-1022, 0x1.8p-1022), -0x1p-1023);
}
END_TEST

START_TEST(binary_broadcast_literal_and_mixed_pow) {
  /* mul a 2.0:f32[] with a:f32[3], as jnp writes it */
  int64_t d[1] = {3};
  float v[3] = {1, -0.0f, 3};
  B b = b_new(FT_P_MUL);
  ft_jaxpr *j = b.j;
  ft_aval a3 = AV(FT_F32, 1, d);
  ft_var *x = ft_var_new(j->arena, &a3), *lit = ft_lit_new_float(j->arena, FT_F32, 2.0);
  ft_var *y = ft_var_new(j->arena, &a3);
  ft_jb jb;
  ft_jb_init(&jb, j);
  ft_var *ins[2] = {x, lit};
  ft_jb_add(&jb, FT_P_MUL, 2, ins, 1, &y, NULL);
  ft_jaxpr_set_vars(j, 0, NULL, 1, &x, 1, &y);
  ft_array *a = ARR(FT_F32, 1, d, v), *r = NULL;
  ck_assert_int_eq(ft_eval(C, j, 1, (const ft_array *const *)&a, 1, &r), FT_OK);
  const float *o = ft_array_data(r);
  ck_same_f32(o[0], 2.0f);
  ck_same_f32(o[1], -0.0f);
  ck_same_f32(o[2], 6.0f);
  ft_array_free(r);
  ft_jaxpr_free(j);
  /* pow with an integer exponent (JAX: pow(f32 2, i32 3) = 8) */
  b = b_new(FT_P_POW);
  int32_t e3[3] = {3, -1, 0};
  ft_array *in2[2] = {a, ARR(FT_I32, 1, d, e3)};
  r = b_run(&b, 2, in2, a3);
  o = ft_array_data(r);
  ck_same_f32(o[0], 1.0f);
  ck_same_f32(o[1], -INFINITY);
  ck_same_f32(o[2], 1.0f);
  free_arrays(in2, 2), ft_array_free(r);
}
END_TEST

START_TEST(complex_arith) {
  int64_t d[1] = {2};
  float x[4] = {1, 2, 3, -1}, y[4] = {0, 1, 2, 2};
  ft_prim ps[4] = {FT_P_ADD, FT_P_SUB, FT_P_MUL, FT_P_DIV};
  float want[4][4] = {{1, 3, 5, 1}, {1, 1, 1, -3}, {-2, 1, 8, 4}, {2, -1, 0.5f, -1}};
  for (int k = 0; k < 4; k++) {
    B b = b_new(ps[k]);
    ft_array *in[2] = {ARR(FT_C64, 1, d, x), ARR(FT_C64, 1, d, y)};
    ft_array *r = b_run(&b, 2, in, AV(FT_C64, 1, d));
    for (int i = 0; i < 4; i++) ck_same_f32(((const float *)ft_array_data(r))[i], want[k][i]);
    free_arrays(in, 2), ft_array_free(r);
  }
  B b = b_new(FT_P_EQ);
  ft_array *in[2] = {ARR(FT_C64, 1, d, x), ARR(FT_C64, 1, d, x)};
  ft_array *r = b_run(&b, 2, in, AV(FT_BOOL, 1, d));
  ck_assert(((const uint8_t *)ft_array_data(r))[1] == 1);
  free_arrays(in, 2), ft_array_free(r);
}
END_TEST

/* ------------------------------------------------------------ comparisons */
START_TEST(compare) {
  ft_prim ps[6] = {FT_P_EQ, FT_P_NE, FT_P_LT, FT_P_LE, FT_P_GT, FT_P_GE};
  for (size_t k = 0; k < FT_COUNTOF(FLOAT_DTS); k++) {
    ft_dtype dt = FLOAT_DTS[k];
    for (int p = 0; p < 6; p++) {
      ck_assert_int_eq(cmp(ps[p], dt, NAN, NAN), ps[p] == FT_P_NE);
      ck_assert_int_eq(cmp(ps[p], dt, NAN, 1.0), ps[p] == FT_P_NE);
    }
    ck_assert(cmp(FT_P_EQ, dt, 0.0, -0.0));
    ck_assert(!cmp(FT_P_LT, dt, -0.0, 0.0));
    ck_assert(cmp(FT_P_LT, dt, -INFINITY, -65504.0));
    ck_assert(cmp(FT_P_GE, dt, INFINITY, INFINITY));
  }
  ck_assert(cmp(FT_P_LT, FT_F32, 0x1p-149, 0x1p-148));
  ck_assert(cmp_i(FT_P_GT, FT_U32, 0xffffffffu, 1));
  ck_assert(cmp_i(FT_P_LT, FT_I32, -1, 1));
  ck_assert(cmp_i(FT_P_GT, FT_U64, -1, 1)); /* UINT64_MAX > 1 */
  ck_assert(cmp_i(FT_P_LT, FT_I64, INT64_MIN, INT64_MAX));
  ck_assert(cmp_i(FT_P_GT, FT_U8, 200, 100));
  ck_assert(cmp_i(FT_P_LT, FT_I8, -100, 100));
  ck_assert(cmp_i(FT_P_GT, FT_BOOL, 1, 0));
  for (size_t k = 0; k < FT_COUNTOF(INT_DTS); k++) {
    ck_assert(cmp_i(FT_P_LE, INT_DTS[k], 5, 5));
    ck_assert(!cmp_i(FT_P_NE, INT_DTS[k], 5, 5));
  }
}
END_TEST

START_TEST(select_and_clamp) {
  int64_t d[1] = {4};
  int32_t w[4] = {0, 1, 2, 7};
  float c0[4] = {1, 1, 1, 1}, c1[4] = {2, 2, 2, 2}, c2[4] = {3, 3, 3, 3};
  B b = b_new(FT_P_SELECT_N);
  ft_array *in[4] = {ARR(FT_I32, 1, d, w), ARR(FT_F32, 1, d, c0), ARR(FT_F32, 1, d, c1),
                     ARR(FT_F32, 1, d, c2)};
  ft_array *r = b_run(&b, 4, in, AV(FT_F32, 1, d));
  const float *o = ft_array_data(r);
  ck_same_f32(o[0], 1); ck_same_f32(o[1], 2); ck_same_f32(o[2], 3); ck_same_f32(o[3], 3);
  ft_array_free(r);
  /* scalar bool predicate */
  b = b_new(FT_P_SELECT_N);
  ft_array *in2[3] = {SCALAR_I64(FT_BOOL, 1), in[1], in[2]};
  r = b_run(&b, 3, in2, AV(FT_F32, 1, d));
  ck_same_f32(((const float *)ft_array_data(r))[0], 2);
  ft_array_free(r), ft_array_free(in2[0]);
  free_arrays(in, 4);
  /* clamp(0, x, 1) on [NaN, -1, 2, -0] -> [NaN, 0, 1, 0] (JAX, -0 -> +0) */
  float x[4] = {NAN, -1, 2, -0.0f};
  b = b_new(FT_P_CLAMP);
  ft_array *in3[3] = {SCALAR_F64(FT_F32, 0), ARR(FT_F32, 1, d, x), SCALAR_F64(FT_F32, 1)};
  r = b_run(&b, 3, in3, AV(FT_F32, 1, d));
  o = ft_array_data(r);
  ck_assert(isnan(o[0]));
  ck_same_f32(o[1], 0); ck_same_f32(o[2], 1); ck_same_f32(o[3], 0.0f);
  free_arrays(in3, 3), ft_array_free(r);
  int32_t xi[4] = {-5, 3, 50, 10};
  b = b_new(FT_P_CLAMP);
  ft_array *in4[3] = {SCALAR_I64(FT_I32, 0), ARR(FT_I32, 1, d, xi), SCALAR_I64(FT_I32, 10)};
  r = b_run(&b, 3, in4, AV(FT_I32, 1, d));
  const int32_t *oi = ft_array_data(r);
  ck_assert(oi[0] == 0 && oi[1] == 3 && oi[2] == 10 && oi[3] == 10);
  free_arrays(in4, 3), ft_array_free(r);
}
END_TEST

/* ------------------------------------------------------------ conversions */
static ft_array *convert(ft_array *a, ft_dtype to) {
  B b = b_new(FT_P_CONVERT_ELEMENT_TYPE);
  b_pv(&b, "new_dtype", ft_pv_dtype(to));
  return b_run(&b, 1, &a, AV(to, a->aval.rank, a->aval.dims));
}

START_TEST(convert_float_to_int) {
  /* JAX 0.10.2 on CPU: NaN -> 0, saturating, truncating toward zero */
  float f[8] = {NAN, INFINITY, -INFINITY, 3e9f, -3e9f, 2.7f, -2.7f, -0.0f};
  int64_t d[1] = {8};
  ft_array *a = ARR(FT_F32, 1, d, f);
  struct { ft_dtype dt; int64_t want[8]; } t[] = {
      {FT_I32, {0, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 2, -2, 0}},
      {FT_U32, {0, 4294967295, 0, 3000000000, 0, 2, 0, 0}},
      {FT_I8, {0, 127, -128, 127, -128, 2, -2, 0}},
      {FT_U8, {0, 255, 0, 255, 0, 2, 0, 0}},
      {FT_I16, {0, 32767, -32768, 32767, -32768, 2, -2, 0}},
      {FT_I64, {0, INT64_MAX, INT64_MIN, 3000000000, -3000000000, 2, -2, 0}},
      {FT_U64, {0, -1, 0, 3000000000, 0, 2, 0, 0}},
      {FT_BOOL, {1, 1, 1, 1, 1, 1, 1, 0}},
  };
  for (size_t k = 0; k < FT_COUNTOF(t); k++) {
    ft_array *r = convert(a, t[k].dt);
    for (int i = 0; i < 8; i++)
      ck_assert_msg(ft_get_i64(r, i) == t[k].want[i], "%s[%d] = %lld",
                    ft_dtype_name(t[k].dt), i, (long long)ft_get_i64(r, i));
    ft_array_free(r);
  }
  ft_array_free(a);
  uint16_t h[3] = {0x7c00, 0x7bff, 0xc100}; /* f16 inf, 65504, -2.5 -> JAX */
  int64_t d3[1] = {3};
  a = ARR(FT_F16, 1, d3, h);
  ft_array *r = convert(a, FT_I32);
  ck_assert(ft_get_i64(r, 0) == INT32_MAX && ft_get_i64(r, 1) == 65504 && ft_get_i64(r, 2) == -2);
  ft_array_free(a), ft_array_free(r);
}
END_TEST

START_TEST(convert_to_float) {
  int64_t d[1] = {4};
  float f[4] = {1.00390625f, 1.01171875f, NAN, 3.4e38f};
  ft_array *a = ARR(FT_F32, 1, d, f);
  ft_array *r = convert(a, FT_BF16);
  const uint16_t *h = ft_array_data(r);
  ck_assert(h[0] == 16256 && h[1] == 16258 && h[2] == 32704 && h[3] == 32640); /* JAX */
  ft_array_free(a), ft_array_free(r);
  int32_t iv[3] = {65520, 100000, 2049};
  int64_t d3[1] = {3};
  a = ARR(FT_I32, 1, d3, iv);
  r = convert(a, FT_F16);
  h = ft_array_data(r);
  ck_assert(h[0] == 0x7c00 && h[1] == 0x7c00 && h[2] == ft_f64_to_f16(2048.0)); /* JAX */
  ft_array_free(a), ft_array_free(r);
  /* f64 -> f16/bf16 goes through f32 as XLA does (JAX bits) */
  double dv[4] = {1 + 0x1p-11 + 0x1p-40, 6e-8, 2.98e-8, 65519.99};
  a = ARR(FT_F64, 1, d, dv);
  r = convert(a, FT_F16);
  h = ft_array_data(r);
  ck_assert(h[0] == 15360 && h[1] == 1 && h[2] == 0 && h[3] == 31743);
  ft_array_free(a), ft_array_free(r);
  uint64_t u = UINT64_MAX;
  int64_t d1[1] = {1};
  a = ARR(FT_U64, 1, d1, &u);
  r = convert(a, FT_F32);
  ck_same_f32(((const float *)ft_array_data(r))[0], 0x1p64f);
  ft_array_free(r);
  r = convert(a, FT_F64);
  ck_same_f64(((const double *)ft_array_data(r))[0], 0x1p64);
  ft_array_free(a), ft_array_free(r);
  int64_t big = (INT64_C(1) << 60) + 1;
  a = ARR(FT_I64, 1, d1, &big);
  r = convert(a, FT_F32);
  ck_same_f32(((const float *)ft_array_data(r))[0], 0x1p60f);
  ft_array_free(a), ft_array_free(r);
  /* int -> int wraps; bool -> float; real -> complex; complex -> real */
  int32_t w = 300;
  a = ARR(FT_I32, 1, d1, &w);
  r = convert(a, FT_I8);
  ck_assert_int_eq(ft_get_i64(r, 0), 44);
  ft_array_free(r);
  r = convert(a, FT_C64);
  ck_same_f32(((const float *)ft_array_data(r))[0], 300.0f);
  ck_same_f32(((const float *)ft_array_data(r))[1], 0.0f);
  ft_array *r2 = convert(r, FT_F64);
  ck_same_f64(ft_get_f64(r2, 0), 300.0);
  ft_array_free(a), ft_array_free(r), ft_array_free(r2);
  double dd = 1.0 + 0x1p-30;
  a = ARR(FT_F64, 1, d1, &dd);
  r = convert(a, FT_F32);
  ck_same_f32(((const float *)ft_array_data(r))[0], 1.0f);
  ft_array_free(a), ft_array_free(r);
}
END_TEST

START_TEST(bitcast) {
  int64_t d[1] = {2};
  float f[2] = {1.0f, -0.0f};
  ft_array *a = ARR(FT_F32, 1, d, f);
  B b = b_new(FT_P_BITCAST_CONVERT_TYPE);
  b_pv(&b, "new_dtype", ft_pv_dtype(FT_U32));
  ft_array *r = b_run(&b, 1, &a, AV(FT_U32, 1, d));
  ck_assert_int_eq(ft_get_i64(r, 0), 0x3f800000);
  ck_assert_int_eq(ft_get_i64(r, 1), 0x80000000);
  ft_array_free(r);
  b = b_new(FT_P_BITCAST_CONVERT_TYPE);
  b_pv(&b, "new_dtype", ft_pv_dtype(FT_U16));
  int64_t d2[2] = {2, 2};
  r = b_run(&b, 1, &a, AV(FT_U16, 2, d2));
  ck_assert_int_eq(ft_get_i64(r, 1), 0x3f80); /* little-endian halves */
  ck_assert_int_eq(ft_get_i64(r, 3), 0x8000);
  ft_array_free(a), ft_array_free(r);
}
END_TEST

/* ------------------------------------------------------------------ layout */
START_TEST(layout_broadcast_reshape_transpose) {
  int64_t d3[1] = {3}, d23[2] = {2, 3}, d32[2] = {3, 2}, d31[2] = {3, 1}, d34[2] = {3, 4};
  int32_t v[6] = {1, 2, 3, 4, 5, 6};
  ft_array *a = ARR(FT_I32, 1, d3, v);
  B b = b_new(FT_P_BROADCAST_IN_DIM);
  b_ints(&b, "broadcast_dimensions", 1, (int64_t[]){1});
  b_ints(&b, "shape", 2, d23);
  ft_array *r = b_run(&b, 1, &a, AV(FT_I32, 2, d23));
  int32_t w1[6] = {1, 2, 3, 1, 2, 3};
  ck_assert_mem_eq(ft_array_data(r), w1, sizeof w1);
  ft_array_free(a), ft_array_free(r);
  a = ARR(FT_I32, 2, d31, v);
  b = b_new(FT_P_BROADCAST_IN_DIM);
  b_ints(&b, "broadcast_dimensions", 2, (int64_t[]){0, 1});
  b_ints(&b, "shape", 2, d34);
  r = b_run(&b, 1, &a, AV(FT_I32, 2, d34));
  ck_assert_int_eq(ft_get_i64(r, 7), 2);
  ck_assert_int_eq(ft_get_i64(r, 11), 3);
  ft_array_free(a), ft_array_free(r);
  a = ARR(FT_I32, 2, d23, v);
  b = b_new(FT_P_TRANSPOSE);
  b_ints(&b, "permutation", 2, (int64_t[]){1, 0});
  r = b_run(&b, 1, &a, AV(FT_I32, 2, d32));
  int32_t w2[6] = {1, 4, 2, 5, 3, 6};
  ck_assert_mem_eq(ft_array_data(r), w2, sizeof w2);
  ft_array_free(r);
  b = b_new(FT_P_RESHAPE);
  b_ints(&b, "new_sizes", 2, d32);
  r = b_run(&b, 1, &a, AV(FT_I32, 2, d32));
  ck_assert_mem_eq(ft_array_data(r), v, sizeof v);
  ft_array_free(r);
  b = b_new(FT_P_REV);
  b_ints(&b, "dimensions", 2, (int64_t[]){0, 1});
  r = b_run(&b, 1, &a, AV(FT_I32, 2, d23));
  int32_t w3[6] = {6, 5, 4, 3, 2, 1};
  ck_assert_mem_eq(ft_array_data(r), w3, sizeof w3);
  ft_array_free(r);
  b = b_new(FT_P_REV);
  b_ints(&b, "dimensions", 1, (int64_t[]){1});
  r = b_run(&b, 1, &a, AV(FT_I32, 2, d23));
  int32_t w4[6] = {3, 2, 1, 6, 5, 4};
  ck_assert_mem_eq(ft_array_data(r), w4, sizeof w4);
  ft_array_free(r);
  int64_t d1x6[3] = {1, 6, 1};
  b = b_new(FT_P_EXPAND_DIMS);
  b_ints(&b, "dimensions", 2, (int64_t[]){0, 2});
  r = b_run(&b, 1, &a, AV(FT_I32, 3, d1x6));
  ck_assert_mem_eq(ft_array_data(r), v, sizeof v);
  b = b_new(FT_P_SQUEEZE);
  b_ints(&b, "dimensions", 2, (int64_t[]){0, 2});
  int64_t d6[1] = {6};
  ft_array *r2 = b_run(&b, 1, &r, AV(FT_I32, 1, d6));
  ck_assert_mem_eq(ft_array_data(r2), v, sizeof v);
  ft_array_free(a), ft_array_free(r), ft_array_free(r2);
}
END_TEST

START_TEST(layout_slices) {
  int64_t d10[1] = {10}, d4[1] = {4}, d3[1] = {3};
  int32_t v[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  ft_array *a = ARR(FT_I32, 1, d10, v);
  B b = b_new(FT_P_SLICE);
  b_ints(&b, "start_indices", 1, (int64_t[]){1});
  b_ints(&b, "limit_indices", 1, (int64_t[]){8});
  b_ints(&b, "strides", 1, (int64_t[]){3});
  ft_array *r = b_run(&b, 1, &a, AV(FT_I32, 1, d3));
  int32_t w[3] = {1, 4, 7};
  ck_assert_mem_eq(ft_array_data(r), w, sizeof w);
  ft_array_free(r);
  /* dynamic_slice clamps the start (JAX: 8 -> [6 7 8 9]) */
  int64_t starts[4] = {8, -3, 2, INT64_MAX};
  int32_t want0[4] = {6, 0, 2, 6};
  for (int k = 0; k < 4; k++) {
    b = b_new(FT_P_DYNAMIC_SLICE);
    b_ints(&b, "slice_sizes", 1, d4);
    ft_array *in[2] = {a, SCALAR_I64(FT_I64, starts[k])};
    r = b_run(&b, 2, in, AV(FT_I32, 1, d4));
    ck_assert_int_eq(ft_get_i64(r, 0), want0[k]);
    ck_assert_int_eq(ft_get_i64(r, 3), want0[k] + 3);
    ft_array_free(in[1]), ft_array_free(r);
  }
  /* dynamic_update_slice clamps too (JAX: [0 1 2 9 9]) */
  int64_t d5[1] = {5}, d2[1] = {2};
  int32_t u[2] = {9, 9};
  ft_array *in[3] = {ARR(FT_I32, 1, d5, v), ARR(FT_I32, 1, d2, u), SCALAR_I64(FT_U32, 4)};
  b = b_new(FT_P_DYNAMIC_UPDATE_SLICE);
  r = b_run(&b, 3, in, AV(FT_I32, 1, d5));
  int32_t w2[5] = {0, 1, 2, 9, 9};
  ck_assert_mem_eq(ft_array_data(r), w2, sizeof w2);
  free_arrays(in, 3), ft_array_free(r);
  ft_array_free(a);
}
END_TEST

START_TEST(layout_concat_pad_split_iota) {
  int64_t d22[2] = {2, 2}, d21[2] = {2, 1}, d23[2] = {2, 3};
  int32_t x[4] = {1, 2, 3, 4}, y[2] = {5, 6};
  ft_array *in[2] = {ARR(FT_I32, 2, d22, x), ARR(FT_I32, 2, d21, y)};
  B b = b_new(FT_P_CONCATENATE);
  b_int(&b, "dimension", 1);
  ft_array *r = b_run(&b, 2, in, AV(FT_I32, 2, d23));
  int32_t w[6] = {1, 2, 5, 3, 4, 6};
  ck_assert_mem_eq(ft_array_data(r), w, sizeof w);
  /* split undoes it */
  b = b_new(FT_P_SPLIT);
  b_int(&b, "axis", 1);
  b_ints(&b, "sizes", 2, (int64_t[]){2, 1});
  ft_aval outs[2] = {AV(FT_I32, 2, d22), AV(FT_I32, 2, d21)};
  ft_array *parts[2];
  ck_assert_int_eq(b_eval(&b, 1, &r, 2, outs, parts), FT_OK);
  ck_assert(ft_array_equal_bits(parts[0], in[0]) && ft_array_equal_bits(parts[1], in[1]));
  free_arrays(parts, 2), free_arrays(in, 2), ft_array_free(r);
  /* pad(arange(5), -1, [(-1, 2, 1)]) (JAX) */
  int64_t d5[1] = {5}, d10[1] = {10};
  float f[5] = {0, 1, 2, 3, 4};
  b = b_new(FT_P_PAD);
  ft_pval cfg = ft_pv_tuple(b.j->arena, 1);
  cfg.u.items[0] = ft_pv_ints(b.j->arena, 3, (int64_t[]){-1, 2, 1});
  b_pv(&b, "padding_config", cfg);
  ft_array *pin[2] = {ARR(FT_F32, 1, d5, f), SCALAR_F64(FT_F32, -1)};
  r = b_run(&b, 2, pin, AV(FT_F32, 1, d10));
  float wp[10] = {-1, 1, -1, 2, -1, 3, -1, 4, -1, -1};
  ck_assert_mem_eq(ft_array_data(r), wp, sizeof wp);
  ft_array_free(r);
  /* 2-D: lo 1, hi -1 on dim 0; interior 2 on dim 1 */
  int64_t d2x3[2] = {2, 3}, o27[2] = {2, 7};
  float g[6] = {1, 2, 3, 4, 5, 6};
  b = b_new(FT_P_PAD);
  cfg = ft_pv_tuple(b.j->arena, 2);
  cfg.u.items[0] = ft_pv_ints(b.j->arena, 3, (int64_t[]){1, -1, 0});
  cfg.u.items[1] = ft_pv_ints(b.j->arena, 3, (int64_t[]){0, 0, 2});
  b_pv(&b, "padding_config", cfg);
  ft_array *pin2[2] = {ARR(FT_F32, 2, d2x3, g), pin[1]};
  r = b_run(&b, 2, pin2, AV(FT_F32, 2, o27));
  float wq[14] = {-1, -1, -1, -1, -1, -1, -1, 1, -1, -1, 2, -1, -1, 3};
  ck_assert_mem_eq(ft_array_data(r), wq, sizeof wq);
  ft_array_free(r), ft_array_free(pin2[0]);
  free_arrays(pin, 2);
  b = b_new(FT_P_IOTA);
  b_int(&b, "dimension", 1);
  b_pv(&b, "dtype", ft_pv_dtype(FT_F32));
  b_ints(&b, "shape", 2, d23);
  r = b_run(&b, 0, NULL, AV(FT_F32, 2, d23));
  float wi[6] = {0, 1, 2, 0, 1, 2};
  ck_assert_mem_eq(ft_array_data(r), wi, sizeof wi);
  ft_array_free(r);
}
END_TEST

/* -------------------------------------------------------------- reductions */
static ft_array *reduce(ft_prim p, ft_array *a, int na, const int64_t *axes, ft_aval out) {
  B b = b_new(p);
  b_ints(&b, "axes", na, axes);
  if (p == FT_P_ARGMAX || p == FT_P_ARGMIN) b_pv(&b, "index_dtype", ft_pv_dtype(out.dtype));
  return b_run(&b, 1, &a, out);
}

/* The canonical order written out independently (docs/determinism.md). */
static float ref_sum(const float *x, int n) {
  if (n == 0) return 0.0f;
  if (n == 1) return x[0];
  float total = 0;
  for (int b0 = 0; b0 < n; b0 += 4096) {
    int m = n - b0 < 4096 ? n - b0 : 4096;
    float lane[16] = {0};
    for (int k = 0; k < m; k++) lane[k % 16] += x[b0 + k];
    for (int w = 8; w; w /= 2)
      for (int l = 0; l < w; l++) lane[l] += lane[l + w];
    total = b0 ? total + lane[0] : lane[0];
  }
  return total;
}

START_TEST(reduce_sum_canonical_order) {
  int sizes[] = {2, 15, 16, 17, 40, 4096, 4097, 10000};
  float *x = malloc(sizeof(float) * 10000);
  uint32_t s = 12345;
  for (int i = 0; i < 10000; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)((int32_t)s >> 8) * 0x1p-10f * ((i % 7) ? 1.0f : 1e6f);
  }
  for (size_t k = 0; k < FT_COUNTOF(sizes); k++) {
    int64_t d[1] = {sizes[k]};
    ft_array *a = ARR(FT_F32, 1, d, x);
    ft_array *r = reduce(FT_P_REDUCE_SUM, a, 1, (int64_t[]){0}, ft_aval_scalar(FT_F32));
    ck_same_f32(ft_get_f64(r, 0), ref_sum(x, sizes[k]));
    ft_array_free(a), ft_array_free(r);
  }
  /* the order is visible: 1e8 + 1 - 1e8 ... differs from a sequential sum */
  float y[40];
  for (int i = 0; i < 40; i++) y[i] = (float[]){1e8f, 1.0f, -1e8f, 3.5f, 1e-3f}[i % 5];
  ck_same_f32(ref_sum(y, 40), ft_sum_f32(y, 40, 1, FT_F32));
  free(x);
  /* -0.0: one value is itself; more sum from +0.0 (as XLA: 37 x -0.0 -> +0.0) */
  float z[37];
  for (int i = 0; i < 37; i++) z[i] = -0.0f;
  int64_t d1[1] = {1}, d37[1] = {37}, d0[1] = {0};
  ft_array *a = ARR(FT_F32, 1, d1, z);
  ft_array *r = reduce(FT_P_REDUCE_SUM, a, 1, (int64_t[]){0}, ft_aval_scalar(FT_F32));
  ck_same_f32(ft_get_f64(r, 0), -0.0f);
  ft_array_free(a), ft_array_free(r);
  a = ARR(FT_F32, 1, d37, z);
  r = reduce(FT_P_REDUCE_SUM, a, 1, (int64_t[]){0}, ft_aval_scalar(FT_F32));
  ck_same_f32(ft_get_f64(r, 0), 0.0f);
  ft_array_free(a), ft_array_free(r);
  a = ft_array_new(C, FT_F32, 1, d0);
  r = reduce(FT_P_REDUCE_SUM, a, 1, (int64_t[]){0}, ft_aval_scalar(FT_F32));
  ck_same_f32(ft_get_f64(r, 0), 0.0f);
  ft_array_free(r);
  r = reduce(FT_P_REDUCE_PROD, a, 1, (int64_t[]){0}, ft_aval_scalar(FT_F32));
  ck_same_f32(ft_get_f64(r, 0), 1.0f);
  ft_array_free(r);
  r = reduce(FT_P_REDUCE_MAX, a, 1, (int64_t[]){0}, ft_aval_scalar(FT_F32));
  ck_same_f32(ft_get_f64(r, 0), -INFINITY); /* JAX */
  ft_array_free(r), ft_array_free(a);
  a = ft_array_new(C, FT_I32, 1, d0);
  r = reduce(FT_P_REDUCE_MAX, a, 1, (int64_t[]){0}, ft_aval_scalar(FT_I32));
  ck_assert_int_eq(ft_get_i64(r, 0), INT32_MIN); /* JAX */
  ft_array_free(r), ft_array_free(a);
}
END_TEST

START_TEST(reduce_axes_and_kinds) {
  int64_t d[3] = {2, 3, 4}, o[1] = {3};
  int32_t v[24];
  for (int i = 0; i < 24; i++) v[i] = i;
  ft_array *a = ARR(FT_I32, 3, d, v);
  ft_array *r = reduce(FT_P_REDUCE_SUM, a, 2, (int64_t[]){0, 2}, AV(FT_I32, 1, o));
  /* sum over i, k of 12 i + 4 j + k = 12*4 + 8*4 j... */
  ck_assert_int_eq(ft_get_i64(r, 0), 0 + 1 + 2 + 3 + 12 + 13 + 14 + 15);
  ck_assert_int_eq(ft_get_i64(r, 2), 8 + 9 + 10 + 11 + 20 + 21 + 22 + 23);
  ft_array_free(r);
  r = reduce(FT_P_REDUCE_MAX, a, 2, (int64_t[]){0, 2}, AV(FT_I32, 1, o));
  ck_assert_int_eq(ft_get_i64(r, 1), 19);
  ft_array_free(r);
  r = reduce(FT_P_REDUCE_MIN, a, 2, (int64_t[]){2, 0}, AV(FT_I32, 1, o));
  ck_assert_int_eq(ft_get_i64(r, 1), 4);
  ft_array_free(r), ft_array_free(a);
  int8_t big[4] = {100, 100, 100, 100};
  int64_t d4[1] = {4};
  a = ARR(FT_I8, 1, d4, big);
  r = reduce(FT_P_REDUCE_SUM, a, 1, (int64_t[]){0}, ft_aval_scalar(FT_I8));
  ck_assert_int_eq(ft_get_i64(r, 0), (int8_t)400); /* wraps */
  ft_array_free(r);
  r = reduce(FT_P_REDUCE_PROD, a, 1, (int64_t[]){0}, ft_aval_scalar(FT_I8));
  ck_assert_int_eq(ft_get_i64(r, 0), 0); /* 10^8 mod 256 = 0 */
  ft_array_free(r), ft_array_free(a);
  float f[4] = {1, NAN, -0.0f, 3};
  a = ARR(FT_F32, 1, d4, f);
  r = reduce(FT_P_REDUCE_MAX, a, 1, (int64_t[]){0}, ft_aval_scalar(FT_F32));
  ck_assert(isnan(ft_get_f64(r, 0)));
  ft_array_free(r), ft_array_free(a);
  float g[2] = {-0.0f, 0.0f};
  int64_t d2[1] = {2};
  a = ARR(FT_F32, 1, d2, g);
  r = reduce(FT_P_REDUCE_MAX, a, 1, (int64_t[]){0}, ft_aval_scalar(FT_F32));
  ck_same_f32(ft_get_f64(r, 0), 0.0f);
  ft_array_free(r);
  r = reduce(FT_P_REDUCE_MIN, a, 1, (int64_t[]){0}, ft_aval_scalar(FT_F32));
  ck_same_f32(ft_get_f64(r, 0), -0.0f);
  ft_array_free(r), ft_array_free(a);
  uint8_t bl[4] = {1, 0, 1, 1};
  a = ARR(FT_BOOL, 1, d4, bl);
  r = reduce(FT_P_REDUCE_AND, a, 1, (int64_t[]){0}, ft_aval_scalar(FT_BOOL));
  ck_assert_int_eq(ft_get_i64(r, 0), 0);
  ft_array_free(r);
  r = reduce(FT_P_REDUCE_OR, a, 1, (int64_t[]){0}, ft_aval_scalar(FT_BOOL));
  ck_assert_int_eq(ft_get_i64(r, 0), 1);
  ft_array_free(r), ft_array_free(a);
  double p[3] = {2, 0.5, -3};
  int64_t d3[1] = {3};
  a = ARR(FT_F64, 1, d3, p);
  r = reduce(FT_P_REDUCE_PROD, a, 1, (int64_t[]){0}, ft_aval_scalar(FT_F64));
  ck_same_f64(ft_get_f64(r, 0), -3.0);
  ft_array_free(r), ft_array_free(a);
  /* f16 sums round every step in f16 */
  uint16_t h[20];
  for (int i = 0; i < 20; i++) h[i] = ft_f64_to_f16(0.1);
  int64_t d20[1] = {20};
  a = ARR(FT_F16, 1, d20, h);
  r = reduce(FT_P_REDUCE_SUM, a, 1, (int64_t[]){0}, ft_aval_scalar(FT_F16));
  ck_assert_uint_eq(((const uint16_t *)ft_array_data(r))[0], 16383);
  ft_array_free(r), ft_array_free(a);
}
END_TEST

START_TEST(argmax_argmin) {
  int64_t d4[1] = {4}, d3[1] = {3};
  double f[4] = {1.0, NAN, 5.0, NAN};
  ft_array *a = ARR(FT_F64, 1, d4, f);
  ft_array *r = reduce(FT_P_ARGMAX, a, 1, (int64_t[]){0}, ft_aval_scalar(FT_I32));
  ck_assert_int_eq(ft_get_i64(r, 0), 1); /* JAX: the first NaN */
  ft_array_free(r), ft_array_free(a);
  double g[3] = {1.0, NAN, -5.0};
  a = ARR(FT_F64, 1, d3, g);
  r = reduce(FT_P_ARGMIN, a, 1, (int64_t[]){0}, ft_aval_scalar(FT_I32));
  ck_assert_int_eq(ft_get_i64(r, 0), 1); /* JAX */
  ft_array_free(r), ft_array_free(a);
  double z[2] = {0.0, -0.0};
  int64_t d2[1] = {2};
  a = ARR(FT_F64, 1, d2, z);
  r = reduce(FT_P_ARGMIN, a, 1, (int64_t[]){0}, ft_aval_scalar(FT_I64));
  ck_assert_int_eq(ft_get_i64(r, 0), 0); /* JAX: ties keep the first */
  ft_array_free(r), ft_array_free(a);
  int32_t m[6] = {3, 9, 9, 7, 1, 7};
  int64_t d23[2] = {2, 3};
  a = ARR(FT_I32, 2, d23, m);
  r = reduce(FT_P_ARGMAX, a, 1, (int64_t[]){1}, AV(FT_I32, 1, (int64_t[]){2}));
  ck_assert_int_eq(ft_get_i64(r, 0), 1);
  ck_assert_int_eq(ft_get_i64(r, 1), 0);
  ft_array_free(r);
  r = reduce(FT_P_ARGMIN, a, 1, (int64_t[]){0}, AV(FT_I32, 1, d3));
  ck_assert(ft_get_i64(r, 0) == 0 && ft_get_i64(r, 1) == 1 && ft_get_i64(r, 2) == 1);
  ft_array_free(r), ft_array_free(a);
  uint32_t u[3] = {1, 0xffffffffu, 2};
  a = ARR(FT_U32, 1, d3, u);
  r = reduce(FT_P_ARGMAX, a, 1, (int64_t[]){0}, ft_aval_scalar(FT_I32));
  ck_assert_int_eq(ft_get_i64(r, 0), 1);
  ft_array_free(r), ft_array_free(a);
}
END_TEST

/* ------------------------------------------------------------- cumulative */
static ft_array *cum(ft_prim p, ft_array *a, int axis, bool reverse) {
  B b = b_new(p);
  b_int(&b, "axis", axis);
  b_bool(&b, "reverse", reverse);
  return b_run(&b, 1, &a, a->aval);
}

START_TEST(cumulative) {
  int64_t d3[1] = {3};
  int32_t v[3] = {1, 2, 3};
  ft_array *a = ARR(FT_I32, 1, d3, v);
  ft_array *r = cum(FT_P_CUMSUM, a, 0, true);
  ck_assert(ft_get_i64(r, 0) == 6 && ft_get_i64(r, 1) == 5 && ft_get_i64(r, 2) == 3); /* JAX */
  ft_array_free(r);
  r = cum(FT_P_CUMPROD, a, 0, false);
  ck_assert(ft_get_i64(r, 0) == 1 && ft_get_i64(r, 1) == 2 && ft_get_i64(r, 2) == 6);
  ft_array_free(r);
  r = cum(FT_P_CUMMIN, a, 0, true);
  ck_assert(ft_get_i64(r, 0) == 1 && ft_get_i64(r, 1) == 2 && ft_get_i64(r, 2) == 3);
  ft_array_free(r), ft_array_free(a);
  float f[3] = {1, NAN, 3};
  a = ARR(FT_F32, 1, d3, f);
  r = cum(FT_P_CUMMAX, a, 0, false);
  ck_same_f32(ft_get_f64(r, 0), 1.0f);
  ck_assert(isnan(ft_get_f64(r, 1)) && isnan(ft_get_f64(r, 2))); /* JAX */
  ft_array_free(r), ft_array_free(a);
  float z[2] = {-0.0f, -0.0f};
  int64_t d2[1] = {2};
  a = ARR(FT_F32, 1, d2, z);
  r = cum(FT_P_CUMSUM, a, 0, false);
  ck_same_f32(ft_get_f64(r, 0), 0.0f); /* JAX: starts from +0.0 */
  ft_array_free(r), ft_array_free(a);
  /* along axis 0 of a 2x2 */
  int64_t d22[2] = {2, 2};
  double m[4] = {1, 2, 10, 20};
  a = ARR(FT_F64, 2, d22, m);
  r = cum(FT_P_CUMSUM, a, 0, false);
  double w[4] = {1, 2, 11, 22};
  ck_assert_mem_eq(ft_array_data(r), w, sizeof w);
  ft_array_free(r);
  r = cum(FT_P_CUMLOGSUMEXP, a, 1, false);
  ck_same_f64(ft_get_f64(r, 0), 1.0);
  ck_assert(fabs(ft_get_f64(r, 1) - (2.0 + log1p(exp(-1.0)))) < 1e-15);
  ft_array_free(r), ft_array_free(a);
  float ninf[2] = {-INFINITY, -INFINITY};
  a = ARR(FT_F32, 1, d2, ninf);
  r = cum(FT_P_CUMLOGSUMEXP, a, 0, false);
  ck_same_f32(ft_get_f64(r, 1), -INFINITY);
  ft_array_free(r), ft_array_free(a);
}
END_TEST

/* -------------------------------------------------------------------- sort */
START_TEST(sort_prims) {
  /* JAX: NaNs last (both signs, stable); -0.0 and +0.0 equal (stable) */
  float x[8] = {3.0f, NAN, -0.0f, 0.0f, -INFINITY, 1.0f, -NAN, INFINITY};
  uint32_t want[8] = {4286578688u, 2147483648u, 0, 1065353216, 1077936128, 2139095040,
                      2143289344u, 4290772992u};
  int64_t d8[1] = {8};
  B b = b_new(FT_P_SORT);
  b_int(&b, "dimension", 0);
  b_bool(&b, "is_stable", true);
  b_int(&b, "num_keys", 1);
  ft_array *a = ARR(FT_F32, 1, d8, x);
  ft_array *r = b_run(&b, 1, &a, a->aval);
  ck_assert_mem_eq(ft_array_data(r), want, sizeof want);
  ft_array_free(a), ft_array_free(r);
  /* JAX 0.10.2: lax.sort([nan, 1, -nan, -inf, inf, 0, -0, -1]) is
   * [-inf, -1, 0, -0, 1, inf, nan, -nan]: +0.0 stays before -0.0 and the NaNs
   * keep their order (a total order on the bits would swap both pairs) */
  float x2[8] = {NAN, 1.0f, -NAN, -INFINITY, INFINITY, 0.0f, -0.0f, -1.0f};
  uint32_t want2[8] = {0xff800000u, 0xbf800000u, 0, 0x80000000u, 0x3f800000u, 0x7f800000u,
                       0x7fc00000u, 0xffc00000u};
  b = b_new(FT_P_SORT);
  b_int(&b, "dimension", 0);
  b_bool(&b, "is_stable", true);
  b_int(&b, "num_keys", 1);
  a = ARR(FT_F32, 1, d8, x2);
  r = b_run(&b, 1, &a, a->aval);
  ck_assert_mem_eq(ft_array_data(r), want2, sizeof want2);
  ft_array_free(a), ft_array_free(r);
  /* two operands, one key, stable (JAX) */
  int64_t d4[1] = {4};
  int64_t k[4] = {2, 1, 2, 1};
  double v[4] = {1, 2, 3, 4};
  b = b_new(FT_P_SORT);
  b_int(&b, "dimension", 0);
  b_bool(&b, "is_stable", true);
  b_int(&b, "num_keys", 1);
  ft_array *in[2] = {ARR(FT_I64, 1, d4, k), ARR(FT_F64, 1, d4, v)};
  ft_aval outs[2] = {in[0]->aval, in[1]->aval};
  ft_array *res[2];
  ck_assert_int_eq(b_eval(&b, 2, in, 2, outs, res), FT_OK);
  int64_t wk[4] = {1, 1, 2, 2};
  double wv[4] = {2, 4, 1, 3};
  ck_assert_mem_eq(ft_array_data(res[0]), wk, sizeof wk);
  ck_assert_mem_eq(ft_array_data(res[1]), wv, sizeof wv);
  free_arrays(res, 2);
  /* num_keys = 2: ties on the first key broken by the second */
  b = b_new(FT_P_SORT);
  b_int(&b, "dimension", 0);
  b_bool(&b, "is_stable", false);
  b_int(&b, "num_keys", 2);
  double v2[4] = {9, 8, 7, 6};
  ft_array_free(in[1]);
  in[1] = ARR(FT_F64, 1, d4, v2);
  ck_assert_int_eq(b_eval(&b, 2, in, 2, outs, res), FT_OK);
  double wv2[4] = {6, 8, 7, 9};
  ck_assert_mem_eq(ft_array_data(res[1]), wv2, sizeof wv2);
  free_arrays(res, 2), free_arrays(in, 2);
  /* along dimension 0 of a 3x2, unsigned */
  int64_t d32[2] = {3, 2};
  uint32_t u[6] = {5, 0xffffffffu, 1, 2, 3, 0};
  b = b_new(FT_P_SORT);
  b_int(&b, "dimension", 0);
  b_bool(&b, "is_stable", true);
  b_int(&b, "num_keys", 1);
  a = ARR(FT_U32, 2, d32, u);
  r = b_run(&b, 1, &a, a->aval);
  uint32_t wu[6] = {1, 0, 3, 2, 5, 0xffffffffu};
  ck_assert_mem_eq(ft_array_data(r), wu, sizeof wu);
  ft_array_free(a), ft_array_free(r);
}
END_TEST

/* ------------------------------------------------------------- dot, fft */
static ft_pval dotdims(ft_arena *ar, int nc, const int64_t *lc, const int64_t *rc, int nb,
                       const int64_t *lb, const int64_t *rb) {
  ft_pval dn = ft_pv_tuple(ar, 2), c = ft_pv_tuple(ar, 2), bt = ft_pv_tuple(ar, 2);
  c.u.items[0] = ft_pv_ints(ar, nc, lc), c.u.items[1] = ft_pv_ints(ar, nc, rc);
  bt.u.items[0] = ft_pv_ints(ar, nb, lb), bt.u.items[1] = ft_pv_ints(ar, nb, rb);
  dn.u.items[0] = c, dn.u.items[1] = bt;
  return dn;
}

START_TEST(dot_general) {
  int64_t d23[2] = {2, 3}, d34[2] = {3, 4}, d24[2] = {2, 4};
  float a[6] = {1, 2, 3, 4, 5, 6}, bm[12] = {1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1, -1};
  B b = b_new(FT_P_DOT_GENERAL);
  b_pv(&b, "dimension_numbers", dotdims(b.j->arena, 1, (int64_t[]){1}, (int64_t[]){0}, 0, NULL, NULL));
  ft_array *in[2] = {ARR(FT_F32, 2, d23, a), ARR(FT_F32, 2, d34, bm)};
  ft_array *r = b_run(&b, 2, in, AV(FT_F32, 2, d24));
  float w[8] = {1, 2, 3, 0, 4, 5, 6, 3};
  ck_assert_mem_eq(ft_array_data(r), w, sizeof w);
  free_arrays(in, 2), ft_array_free(r);
  /* batch dim 0, contract lhs 1 with rhs 2: [2,3] x [2,4,3] -> [2,4] */
  int64_t d243[3] = {2, 4, 3};
  double bb[24];
  for (int i = 0; i < 24; i++) bb[i] = i % 5;
  double ad[6] = {1, 2, 3, 4, 5, 6};
  b = b_new(FT_P_DOT_GENERAL);
  b_pv(&b, "dimension_numbers",
       dotdims(b.j->arena, 1, (int64_t[]){1}, (int64_t[]){2}, 1, (int64_t[]){0}, (int64_t[]){0}));
  ft_array *in2[2] = {ARR(FT_F64, 2, d23, ad), ARR(FT_F64, 3, d243, bb)};
  r = b_run(&b, 2, in2, AV(FT_F64, 2, d24));
  for (int bi = 0; bi < 2; bi++)
    for (int n = 0; n < 4; n++) {
      double s = 0;
      for (int k = 0; k < 3; k++) s += ad[bi * 3 + k] * bb[(bi * 4 + n) * 3 + k];
      ck_same_f64(((const double *)ft_array_data(r))[bi * 4 + n], s);
    }
  free_arrays(in2, 2), ft_array_free(r);
  /* int8 x int8 -> int32 (preferred_element_type), with wrap-free sums */
  int8_t x8[6] = {127, 127, 127, -128, -128, -128};
  int64_t d16[2] = {1, 6}, d61[2] = {6, 1}, d11[2] = {1, 1};
  b = b_new(FT_P_DOT_GENERAL);
  b_pv(&b, "dimension_numbers", dotdims(b.j->arena, 1, (int64_t[]){1}, (int64_t[]){0}, 0, NULL, NULL));
  b_pv(&b, "preferred_element_type", ft_pv_dtype(FT_I32));
  ft_array *in3[2] = {ARR(FT_I8, 2, d16, x8), ARR(FT_I8, 2, d61, x8)};
  r = b_run(&b, 2, in3, AV(FT_I32, 2, d11));
  ck_assert_int_eq(ft_get_i64(r, 0), 3 * 127 * 127 + 3 * 128 * 128);
  free_arrays(in3, 2), ft_array_free(r);
  /* K = 0 gives zeros */
  int64_t d20[2] = {2, 0}, d03[2] = {0, 3}, d2x3[2] = {2, 3};
  b = b_new(FT_P_DOT_GENERAL);
  b_pv(&b, "dimension_numbers", dotdims(b.j->arena, 1, (int64_t[]){1}, (int64_t[]){0}, 0, NULL, NULL));
  ft_array *in4[2] = {ft_array_new(C, FT_F32, 2, d20), ft_array_new(C, FT_F32, 2, d03)};
  r = b_run(&b, 2, in4, AV(FT_F32, 2, d2x3));
  for (int i = 0; i < 6; i++) ck_same_f32(((const float *)ft_array_data(r))[i], 0.0f);
  free_arrays(in4, 2), ft_array_free(r);
}
END_TEST

static ft_array *fft(ft_array *a, int type, int64_t n, ft_aval out) {
  B b = b_new(FT_P_FFT);
  b_ints(&b, "fft_lengths", 1, &n);
  b_int(&b, "fft_type", type);
  return b_run(&b, 1, &a, out);
}

START_TEST(fft_prims) {
  int64_t d4[1] = {4}, d3[1] = {3};
  float x[8] = {1, 0, 2, 0, 3, 0, 4, 0};
  ft_array *a = ARR(FT_C64, 1, d4, x);
  ft_array *r = fft(a, 0, 4, AV(FT_C64, 1, d4));
  float w[8] = {10, 0, -2, 2, -2, 0, -2, -2};
  for (int i = 0; i < 8; i++) ck_same_f32(((const float *)ft_array_data(r))[i], w[i]);
  ft_array *back = fft(r, 1, 4, AV(FT_C64, 1, d4));
  for (int i = 0; i < 8; i++) ck_same_f32(((const float *)ft_array_data(back))[i], x[i]);
  ft_array_free(a), ft_array_free(r), ft_array_free(back);
  double xr[4] = {1, 2, 3, 4};
  a = ARR(FT_F64, 1, d4, xr);
  r = fft(a, 2, 4, AV(FT_C128, 1, d3));
  double wr[6] = {10, 0, -2, 2, -2, 0};
  for (int i = 0; i < 6; i++) ck_same_f64(((const double *)ft_array_data(r))[i], wr[i]);
  back = fft(r, 3, 4, AV(FT_F64, 1, d4));
  for (int i = 0; i < 4; i++) ck_same_f64(((const double *)ft_array_data(back))[i], xr[i]);
  ft_array_free(a), ft_array_free(r), ft_array_free(back);
  /* a batch of two 2-D transforms of size 2x2 */
  int64_t d222[3] = {2, 2, 2};
  float y[16] = {1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0};
  B b = b_new(FT_P_FFT);
  b_ints(&b, "fft_lengths", 2, (int64_t[]){2, 2});
  b_int(&b, "fft_type", 0);
  a = ARR(FT_C64, 3, d222, y);
  r = b_run(&b, 1, &a, a->aval);
  float wy[16] = {4, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0};
  for (int i = 0; i < 16; i++) ck_same_f32(((const float *)ft_array_data(r))[i], wy[i]);
  ft_array_free(a), ft_array_free(r);
}
END_TEST

/* ----------------------------------------------------------- control flow */
/* Builds `outs = prim[...] ins` inside sub-jaxpr j. */
static ft_var *eqn2(ft_jaxpr *j, ft_jb *jb, ft_prim p, ft_var *x, ft_var *y, ft_dtype out_dt) {
  ft_aval av = ft_aval_scalar(out_dt);
  ft_var *o = ft_var_new(j->arena, &av), *in[2] = {x, y};
  ck_assert_ptr_nonnull(ft_jb_add(jb, p, y ? 2 : 1, in, 1, &o, NULL));
  return o;
}

START_TEST(while_loop_sums) {
  /* i, s = 0, 0; while i < 10: i, s = i + 1, s + i  -> (10, 45) */
  ft_jaxpr *top = ft_jaxpr_new(NULL);
  ft_arena *ar = top->arena;
  ft_aval si = ft_aval_scalar(FT_I32);
  ft_jaxpr *cj = ft_jaxpr_new(ar), *bj = ft_jaxpr_new(ar);
  ft_jb jb;
  { /* cond: (limit; i, s) -> i < limit */
    ft_var *lim = ft_var_new(ar, &si), *i = ft_var_new(ar, &si), *s = ft_var_new(ar, &si);
    ft_jb_init(&jb, cj);
    ft_var *p = eqn2(cj, &jb, FT_P_LT, i, lim, FT_BOOL);
    ft_var *in[3] = {lim, i, s};
    ft_jaxpr_set_vars(cj, 0, NULL, 3, in, 1, &p);
  }
  { /* body: (i, s) -> (i + 1, s + i) */
    ft_var *i = ft_var_new(ar, &si), *s = ft_var_new(ar, &si);
    ft_jb_init(&jb, bj);
    ft_var *i1 = eqn2(bj, &jb, FT_P_ADD, i, ft_lit_new_int(ar, FT_I32, 1), FT_I32);
    ft_var *s1 = eqn2(bj, &jb, FT_P_ADD, s, i, FT_I32);
    ft_var *in[2] = {i, s}, *out[2] = {i1, s1};
    ft_jaxpr_set_vars(bj, 0, NULL, 2, in, 2, out);
  }
  ft_var *lim = ft_var_new(ar, &si), *i0 = ft_var_new(ar, &si), *s0 = ft_var_new(ar, &si);
  ft_var *o1 = ft_var_new(ar, &si), *o2 = ft_var_new(ar, &si);
  ft_pval *ps = ft_params_default(ar, FT_P_WHILE);
  ps[ft_prim_param_index(FT_P_WHILE, "cond_jaxpr")] = ft_pv_jaxpr(cj);
  ps[ft_prim_param_index(FT_P_WHILE, "body_jaxpr")] = ft_pv_jaxpr(bj);
  ps[ft_prim_param_index(FT_P_WHILE, "cond_nconsts")] = ft_pv_int(1);
  ps[ft_prim_param_index(FT_P_WHILE, "body_nconsts")] = ft_pv_int(0);
  ft_jb_init(&jb, top);
  ft_var *ins[3] = {lim, i0, s0}, *outs[2] = {o1, o2};
  ck_assert_ptr_nonnull(ft_jb_add(&jb, FT_P_WHILE, 3, ins, 2, outs, ps));
  ft_jaxpr_set_vars(top, 0, NULL, 3, ins, 2, outs);
  ft_array *args[3] = {SCALAR_I64(FT_I32, 10), SCALAR_I64(FT_I32, 0), SCALAR_I64(FT_I32, 0)};
  ft_array *res[2];
  ck_assert_int_eq(ft_eval(C, top, 3, (const ft_array *const *)args, 2, res), FT_OK);
  ck_assert_int_eq(ft_get_i64(res[0], 0), 10);
  ck_assert_int_eq(ft_get_i64(res[1], 0), 45);
  free_arrays(res, 2);
  /* a loop that never runs returns the initial carry */
  ft_set_i64(args[1], 0, 20);
  ck_assert_int_eq(ft_eval(C, top, 3, (const ft_array *const *)args, 2, res), FT_OK);
  ck_assert_int_eq(ft_get_i64(res[0], 0), 20);
  ck_assert_int_eq(ft_get_i64(res[1], 0), 0);
  free_arrays(res, 2), free_arrays(args, 3);
  ft_jaxpr_free(top);
}
END_TEST

/* scan (c, x) -> (c + x, c * x) over xs, forward or reverse. */
static void run_scan(bool reverse, const float *xs, float c0, float *carry, float *ys) {
  ft_jaxpr *top = ft_jaxpr_new(NULL);
  ft_arena *ar = top->arena;
  ft_aval sf = ft_aval_scalar(FT_F32);
  int64_t d3[1] = {3};
  ft_aval a3 = AV(FT_F32, 1, d3);
  ft_jaxpr *body = ft_jaxpr_new(ar);
  ft_jb jb;
  ft_var *c = ft_var_new(ar, &sf), *x = ft_var_new(ar, &sf);
  ft_jb_init(&jb, body);
  ft_var *c1 = eqn2(body, &jb, FT_P_ADD, c, x, FT_F32), *y = eqn2(body, &jb, FT_P_MUL, c, x, FT_F32);
  ft_var *bin_[2] = {c, x}, *bout[2] = {c1, y};
  ft_jaxpr_set_vars(body, 0, NULL, 2, bin_, 2, bout);
  ft_pval *ps = ft_params_default(ar, FT_P_SCAN);
  ps[ft_prim_param_index(FT_P_SCAN, "jaxpr")] = ft_pv_jaxpr(body);
  ps[ft_prim_param_index(FT_P_SCAN, "length")] = ft_pv_int(3);
  ps[ft_prim_param_index(FT_P_SCAN, "num_carry")] = ft_pv_int(1);
  ps[ft_prim_param_index(FT_P_SCAN, "num_consts")] = ft_pv_int(0);
  ps[ft_prim_param_index(FT_P_SCAN, "reverse")] = ft_pv_bool(reverse);
  ft_var *ic = ft_var_new(ar, &sf), *ixs = ft_var_new(ar, &a3);
  ft_var *oc = ft_var_new(ar, &sf), *oys = ft_var_new(ar, &a3);
  ft_var *ins[2] = {ic, ixs}, *outs[2] = {oc, oys};
  ft_jb_init(&jb, top);
  ck_assert_ptr_nonnull(ft_jb_add(&jb, FT_P_SCAN, 2, ins, 2, outs, ps));
  ft_jaxpr_set_vars(top, 0, NULL, 2, ins, 2, outs);
  ft_array *args[2] = {SCALAR_F64(FT_F32, c0), ARR(FT_F32, 1, d3, xs)}, *res[2];
  ck_assert_int_eq(ft_eval(C, top, 2, (const ft_array *const *)args, 2, res), FT_OK);
  *carry = (float)ft_get_f64(res[0], 0);
  memcpy(ys, ft_array_data(res[1]), 12);
  free_arrays(res, 2), free_arrays(args, 2);
  ft_jaxpr_free(top);
}

START_TEST(scan_forward_reverse) {
  float xs[3] = {1, 2, 3}, c, ys[3];
  run_scan(false, xs, 10, &c, ys);
  ck_same_f32(c, 16.0f);
  ck_same_f32(ys[0], 10.0f); ck_same_f32(ys[1], 22.0f); ck_same_f32(ys[2], 39.0f);
  run_scan(true, xs, 10, &c, ys);
  ck_same_f32(c, 16.0f);
  /* reverse visits 3, 2, 1 and writes ys at the same positions */
  ck_same_f32(ys[2], 30.0f); ck_same_f32(ys[1], 26.0f); ck_same_f32(ys[0], 15.0f);
}
END_TEST

START_TEST(cond_index_and_calls) {
  ft_jaxpr *top = ft_jaxpr_new(NULL);
  ft_arena *ar = top->arena;
  ft_aval sf = ft_aval_scalar(FT_F32), si = ft_aval_scalar(FT_I32);
  ft_prim ops[3] = {FT_P_NEG, FT_P_SQUARE, FT_P_EXP};
  ft_pval br = ft_pv_tuple(ar, 3);
  ft_jb jb;
  for (int k = 0; k < 3; k++) {
    ft_jaxpr *bj = ft_jaxpr_new(ar);
    ft_var *x = ft_var_new(ar, &sf);
    ft_jb_init(&jb, bj);
    ft_var *y = eqn2(bj, &jb, ops[k], x, NULL, FT_F32);
    ft_jaxpr_set_vars(bj, 0, NULL, 1, &x, 1, &y);
    br.u.items[k] = ft_pv_jaxpr(bj);
  }
  ft_pval *ps = ft_params_default(ar, FT_P_COND);
  ps[0] = br;
  /* wrap the cond in a jit and the jit in a custom_jvp_call */
  ft_jaxpr *inner = ft_jaxpr_new(ar);
  ft_var *ix = ft_var_new(ar, &si), *xv = ft_var_new(ar, &sf), *yv = ft_var_new(ar, &sf);
  ft_var *cin[2] = {ix, xv};
  ft_jb_init(&jb, inner);
  ck_assert_ptr_nonnull(ft_jb_add(&jb, FT_P_COND, 2, cin, 1, &yv, ps));
  ft_jaxpr_set_vars(inner, 0, NULL, 2, cin, 1, &yv);
  ft_jaxpr *mid = ft_jaxpr_new(ar);
  ft_var *mi = ft_var_new(ar, &si), *mx = ft_var_new(ar, &sf), *my = ft_var_new(ar, &sf);
  ft_var *min_[2] = {mi, mx};
  ft_pval *pj = ft_params_default(ar, FT_P_JIT);
  pj[ft_prim_param_index(FT_P_JIT, "jaxpr")] = ft_pv_jaxpr(inner);
  ft_jb_init(&jb, mid);
  ck_assert_ptr_nonnull(ft_jb_add(&jb, FT_P_JIT, 2, min_, 1, &my, pj));
  ft_jaxpr_set_vars(mid, 0, NULL, 2, min_, 1, &my);
  ft_var *ti = ft_var_new(ar, &si), *tx = ft_var_new(ar, &sf), *ty = ft_var_new(ar, &sf);
  ft_var *tin[2] = {ti, tx};
  ft_pval *pc = ft_params_default(ar, FT_P_CUSTOM_JVP_CALL);
  pc[ft_prim_param_index(FT_P_CUSTOM_JVP_CALL, "call_jaxpr")] = ft_pv_jaxpr(mid);
  ft_jb_init(&jb, top);
  ck_assert_ptr_nonnull(ft_jb_add(&jb, FT_P_CUSTOM_JVP_CALL, 2, tin, 1, &ty, pc));
  ft_jaxpr_set_vars(top, 0, NULL, 2, tin, 1, &ty);
  int64_t idx[5] = {0, 1, 2, 7, -4}; /* out of range clamps, as XLA does */
  double want[5] = {-3.0, 9.0, 0, 0, -3.0};
  for (int k = 0; k < 5; k++) {
    ft_array *args[2] = {SCALAR_I64(FT_I32, idx[k]), SCALAR_F64(FT_F32, 3.0)}, *r;
    ck_assert_int_eq(ft_eval(C, top, 2, (const ft_array *const *)args, 1, &r), FT_OK);
    if (idx[k] == 2 || idx[k] == 7) ck_assert(fabs(ft_get_f64(r, 0) - exp(3.0)) < 1e-5);
    else ck_same_f64(ft_get_f64(r, 0), want[k]);
    free_arrays(args, 2), ft_array_free(r);
  }
  ft_jaxpr_free(top);
}
END_TEST

/* ----------------------------------------------------------- ft_eval API */
START_TEST(eval_errors_and_consts) {
  /* f(c; x) = x + c, c a constvar */
  ft_jaxpr *j = ft_jaxpr_new(NULL);
  int64_t d2[1] = {2};
  ft_aval a2 = AV(FT_F32, 1, d2);
  ft_var *c = ft_var_new(j->arena, &a2), *x = ft_var_new(j->arena, &a2), *y = ft_var_new(j->arena, &a2);
  ft_jb jb;
  ft_jb_init(&jb, j);
  ft_var *in[2] = {x, c};
  ft_jb_add(&jb, FT_P_ADD, 2, in, 1, &y, NULL);
  ft_jaxpr_set_vars(j, 1, &c, 1, &x, 1, &y);
  float cv[2] = {10, 20}, xv[2] = {1, 2};
  ft_array *args[2] = {ARR(FT_F32, 1, d2, cv), ARR(FT_F32, 1, d2, xv)}, *r = NULL;
  /* no const_data: the constant is the leading input */
  ck_assert_int_eq(ft_eval(C, j, 2, (const ft_array *const *)args, 1, &r), FT_OK);
  ck_same_f32(((const float *)ft_array_data(r))[1], 22.0f);
  ft_array_free(r);
  ck_assert_int_eq(ft_eval(C, j, 1, (const ft_array *const *)args + 1, 1, &r), FT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "1 constants"));
  /* with const_data the constant comes from the jaxpr */
  j->const_data = ft_arena_alloc(j->arena, sizeof(void *));
  j->const_data[0] = ft_arena_alloc(j->arena, sizeof cv);
  memcpy(j->const_data[0], cv, sizeof cv);
  ck_assert_int_eq(ft_eval(C, j, 1, (const ft_array *const *)args + 1, 1, &r), FT_OK);
  ck_same_f32(((const float *)ft_array_data(r))[0], 11.0f);
  ft_array_free(r);
  /* a wrong input aval names the input and both avals */
  int64_t d3[1] = {3};
  ft_array *bad = ft_array_new(C, FT_F32, 1, d3);
  ck_assert_int_eq(ft_eval(C, j, 1, (const ft_array *const *)&bad, 1, &r), FT_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "f32[2]"));
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "f32[3]"));
  ft_array_free(bad);
  bad = ft_array_new(C, FT_I32, 1, d2);
  ck_assert_int_eq(ft_eval(C, j, 1, (const ft_array *const *)&bad, 1, &r), FT_ERR_TYPE);
  ft_array_free(bad);
  ck_assert_int_eq(ft_eval(C, j, 1, (const ft_array *const *)args + 1, 2, &r), FT_ERR_INVALID_ARG);
  ck_assert_int_eq(ft_eval(C, NULL, 1, (const ft_array *const *)args + 1, 1, &r), FT_ERR_INVALID_ARG);
  free_arrays(args, 2);
  ft_jaxpr_free(j);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("interp");
  TCase *t = tcase_create("all");
  tcase_add_checked_fixture(t, rt_setup, rt_teardown);
  tcase_set_timeout(t, 120);
  tcase_add_test(t, array_api);
  tcase_add_test(t, half_conversions);
  tcase_add_test(t, unary_float_exact);
  tcase_add_test(t, unary_round_is_finite);
  tcase_add_test(t, unary_int);
  tcase_add_test(t, integer_pow);
  tcase_add_test(t, reduce_precision);
  tcase_add_test(t, reduce_precision_subnormals);
  tcase_add_test(t, binary_int_edges);
  tcase_add_test(t, binary_float_edges);
  tcase_add_test(t, binary_broadcast_literal_and_mixed_pow);
  tcase_add_test(t, complex_arith);
  tcase_add_test(t, compare);
  tcase_add_test(t, select_and_clamp);
  tcase_add_test(t, convert_float_to_int);
  tcase_add_test(t, convert_to_float);
  tcase_add_test(t, bitcast);
  tcase_add_test(t, layout_broadcast_reshape_transpose);
  tcase_add_test(t, layout_slices);
  tcase_add_test(t, layout_concat_pad_split_iota);
  tcase_add_test(t, reduce_sum_canonical_order);
  tcase_add_test(t, reduce_axes_and_kinds);
  tcase_add_test(t, argmax_argmin);
  tcase_add_test(t, cumulative);
  tcase_add_test(t, sort_prims);
  tcase_add_test(t, dot_general);
  tcase_add_test(t, fft_prims);
  tcase_add_test(t, while_loop_sums);
  tcase_add_test(t, scan_forward_reverse);
  tcase_add_test(t, cond_index_and_calls);
  tcase_add_test(t, eval_errors_and_consts);
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
