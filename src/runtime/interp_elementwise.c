/* src/runtime/interp_elementwise.c: the interpreter's elementwise families —
 * unary, binary, comparisons, select_n/clamp, conversions — with XLA's CPU
 * semantics for every dtype: wrapping integers, x/0 == -1 and x%0 == x,
 * shifts by >= the width give 0 (or the sign), NaN-propagating max/min with
 * -0 < +0, saturating float->int conversion with NaN -> 0. f16 and bf16 are
 * computed in f32 and rounded once (integer_pow rounds after each multiply,
 * as its lowering does). Transcendentals come from math_adapter.h. */
#include <complex.h>
#include <string.h>
#include <tgmath.h>

#include "lower/vmath/vm_complex.h"
#include "math_adapter.h"
#include "runtime.h"

typedef enum { WK_INT, WK_F32, WK_F64, WK_CPX } wkind;

static wkind wkind_of(ft_dtype dt) {
  switch (dt) {
  case FT_F16: case FT_BF16: case FT_F32: return WK_F32;
  case FT_F64: return WK_F64;
  case FT_C64: case FT_C128: return WK_CPX;
  default: return WK_INT;
  }
}

float ft_round_to(ft_dtype dt, float x) {
  if (dt == FT_F16) return ft_f16_to_f32(ft_f64_to_f16(x));
  if (dt == FT_BF16) return ft_bf16_to_f32(ft_f64_to_bf16(x));
  return x;
}

static ft_status unsupported(ft_ctx *ctx, const ft_eqn *e, ft_dtype dt) {
  return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "%s is not defined for dtype %s",
                      ft_prim_get(e->prim)->name, ft_dtype_name(dt));
}

/* Stride of an operand against an output of n elements: 1 when the shapes
 * match, 0 for a rank-0 operand (e.g. a literal), else false. */
static bool operand_stride(const ft_array *a, int64_t n, int64_t *stride) {
  int64_t m = ft_array_size(a);
  if (m == n && (a->aval.rank > 0 || n == 1)) *stride = 1;
  else if (a->aval.rank == 0) *stride = 0;
  else return false;
  return true;
}

/* A copy of a broadcast to shape `to` (same rank; each dim 1 or equal),
 * for operands such as f32[2,1] against f32[2,4], which lax ops accept.
 * NULL with the error on ctx: operand k's shape, or out of memory. */
static ft_array *broadcast_to(ft_ctx *ctx, const ft_array *a, const ft_aval *to, int k) {
  bool fits = a->aval.rank == to->rank;
  for (int d = 0; fits && d < to->rank; d++)
    if (a->aval.dims[d] != 1 && a->aval.dims[d] != to->dims[d]) fits = false;
  if (!fits) {
    char s1[128], s2[128];
    ft_set_error(ctx, FT_ERR_SHAPE, "operand %d is %s but the result is %s", k,
                 ft_aval_str(&a->aval, s1, sizeof s1), ft_aval_str(to, s2, sizeof s2));
    return NULL;
  }
  ft_aval av = ft_aval_make(a->aval.dtype, to->rank, to->dims);
  ft_array *o = ft_array_alloc(ctx, &av);
  if (!o) return NULL;
  size_t es = ft_dtype_size(av.dtype);
  int64_t n = ft_aval_size(&av), st[FT_MAX_RANK], s = 1;
  for (int d = to->rank - 1; d >= 0; d--) st[d] = a->aval.dims[d] == 1 ? 0 : s, s *= a->aval.dims[d];
  for (int64_t i = 0; i < n; i++) {
    int64_t rem = i, off = 0;
    for (int d = to->rank - 1; d >= 0; d--) off += (rem % to->dims[d]) * st[d], rem /= to->dims[d];
    memcpy((char *)o->data + (size_t)i * es, (const char *)a->data + (size_t)off * es, es);
  }
  return o;
}

/* Operands ready for elementwise loops: ops[k] is in[k] or a broadcast copy
 * (listed in tmp, freed by free_operands); strides[k] is 0 or 1. */
typedef struct operands {
  ft_array *ops[16];
  ft_array *tmp[16];
  int n;
} operands;

static void free_operands(operands *o) {
  for (int k = 0; k < o->n; k++) ft_array_free(o->tmp[k]), o->tmp[k] = NULL;
}

static ft_status check_operands(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, int n_in,
                                int64_t n, int64_t *strides, operands *o) {
  memset(o, 0, sizeof *o);
  if (n_in > 16) return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "more than 16 operands");
  o->n = n_in;
  for (int k = 0; k < n_in; k++) {
    o->ops[k] = in[k];
    if (operand_stride(in[k], n, &strides[k])) continue;
    o->tmp[k] = o->ops[k] = broadcast_to(ctx, in[k], &e->out[0]->aval, k);
    strides[k] = 1;
    if (!o->ops[k]) {
      free_operands(o);
      return ft_ctx_status(ctx);
    }
  }
  return FT_OK;
}

/* ------------------------------------------------------------------ max/min */
/* XLA's max/min: a NaN operand wins; -0 < +0. */
#define DEF_MAXMIN(T, SFX)                                                     \
  static T xmax_##SFX(T a, T b) {                                              \
    if (a != a) return a;                                                      \
    if (b != b) return b;                                                      \
    if (a == b) return signbit(a) ? b : a;                                     \
    return a > b ? a : b;                                                      \
  }                                                                            \
  static T xmin_##SFX(T a, T b) {                                              \
    if (a != a) return a;                                                      \
    if (b != b) return b;                                                      \
    if (a == b) return signbit(a) ? a : b;                                     \
    return a < b ? a : b;                                                      \
  }
DEF_MAXMIN(float, f32)
DEF_MAXMIN(double, f64)

/* integer_pow by repeated squaring in the order of JAX's lowering
 * (jax._src.lax.lax._integer_pow), rounding each product to dt. */
#define DEF_IPOW(T, SFX, RND)                                                  \
  static T ipow_##SFX(ft_dtype dt, T x, int64_t y) {                           \
    if (y == 0) return 1;                                                      \
    bool recip = y < 0;                                                        \
    uint64_t n = recip ? (uint64_t)0 - (uint64_t)y : (uint64_t)y;              \
    T acc = 0;                                                                 \
    bool have = false;                                                         \
    while (n > 0) {                                                            \
      if (n & 1) {                                                             \
        acc = have ? RND(dt, acc * x) : x;                                     \
        have = true;                                                           \
      }                                                                        \
      n >>= 1;                                                                 \
      if (n > 0) x = RND(dt, x * x);                                           \
    }                                                                          \
    return recip ? RND(dt, 1 / acc) : acc;                                     \
  }
#define NO_ROUND(dt, v) (v)
DEF_IPOW(float, f32, ft_round_to)
DEF_IPOW(double, f64, NO_ROUND)

static void ipow_cpx(ft_dtype dt, double xr, double xi, int64_t y, double *rr, double *ri);

/* ------------------------------------------------------------------- unary */
/* One body for float and double: tgmath picks floor/sqrt/... by type, FTM
 * picks the shared math library's f32/f64 function. */
#define DEF_UNARY_FLOAT(T, SFX)                                                \
  static bool unary_##SFX(ft_prim p, T x, T *r, int rounding_even) {           \
    switch (p) {                                                               \
    case FT_P_NEG: *r = -x; break;                                             \
    case FT_P_SIGN: *r = x != x ? x : x > 0 ? (T)1 : x < 0 ? (T)-1 : x; break; \
    case FT_P_FLOOR: *r = floor(x); break;                                     \
    case FT_P_CEIL: *r = ceil(x); break;                                       \
    case FT_P_ROUND: *r = rounding_even ? rint(x) : round(x); break;           \
    case FT_P_EXP: *r = FTM(exp, SFX)(x); break;                               \
    case FT_P_EXP2: *r = FTM(exp2, SFX)(x); break;                             \
    case FT_P_LOG: *r = FTM(log, SFX)(x); break;                               \
    case FT_P_LOG2: *r = FTM(log, SFX)(x) * (T)1.4426950408889634; break;      \
    case FT_P_LOG1P: *r = FTM(log1p, SFX)(x); break;                           \
    case FT_P_EXPM1: *r = FTM(expm1, SFX)(x); break;                           \
    case FT_P_TANH: *r = FTM(tanh, SFX)(x); break;                             \
    case FT_P_LOGISTIC: *r = FTM(logistic, SFX)(x); break;                     \
    case FT_P_SIN: *r = FTM(sin, SFX)(x); break;                               \
    case FT_P_COS: *r = FTM(cos, SFX)(x); break;                               \
    case FT_P_TAN: *r = FTM(tan, SFX)(x); break;                               \
    case FT_P_ASIN: *r = FTM(asin, SFX)(x); break;                             \
    case FT_P_ACOS: *r = FTM(acos, SFX)(x); break;                             \
    case FT_P_ATAN: *r = FTM(atan, SFX)(x); break;                             \
    case FT_P_SINH: *r = FTM(sinh, SFX)(x); break;                             \
    case FT_P_COSH: *r = FTM(cosh, SFX)(x); break;                             \
    case FT_P_ASINH: *r = FTM(asinh, SFX)(x); break;                           \
    case FT_P_ACOSH: *r = FTM(acosh, SFX)(x); break;                           \
    case FT_P_ATANH: *r = FTM(atanh, SFX)(x); break;                           \
    case FT_P_SQRT: *r = FTM(sqrt, SFX)(x); break;                                       \
    case FT_P_RSQRT: *r = FTM(rsqrt, SFX)(x); break;                               \
    case FT_P_CBRT: *r = FTM(cbrt, SFX)(x); break;                             \
    case FT_P_SQUARE: *r = x * x; break;                                       \
    case FT_P_ONE_MINUS_SQUARE: *r = (1 + x) * (1 - x); break;                 \
    case FT_P_ABS: *r = fabs(x); break;                                        \
    case FT_P_ERF: *r = FTM(erf, SFX)(x); break;                               \
    case FT_P_ERFC: *r = FTM(erfc, SFX)(x); break;                             \
    case FT_P_ERF_INV: *r = FTM(erf_inv, SFX)(x); break;                       \
    case FT_P_LGAMMA: *r = FTM(lgamma, SFX)(x); break;                         \
    case FT_P_DIGAMMA: *r = FTM(digamma, SFX)(x); break;                       \
    case FT_P_BESSEL_I0E: *r = FTM(bessel_i0e, SFX)(x); break;                 \
    case FT_P_BESSEL_I1E: *r = FTM(bessel_i1e, SFX)(x); break;                 \
    case FT_P_COPY: case FT_P_COPY_P: case FT_P_STOP_GRADIENT: *r = x; break;  \
    case FT_P_SHARDING_CONSTRAINT: case FT_P_LAYOUT_CONSTRAINT: case FT_P_RESHARD: \
      *r = x;                                                                  \
      break;                                                                   \
    default: return false;                                                     \
    }                                                                          \
    return true;                                                               \
  }
DEF_UNARY_FLOAT(float, f32)
DEF_UNARY_FLOAT(double, f64)

static bool unary_int(ft_prim p, int64_t x, int64_t y, int bits, bool sgn, bool isbool,
                      int64_t *r) {
  uint64_t u = (uint64_t)x, m = bits >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << bits) - 1;
  switch (p) {
  case FT_P_CLZ: { /* leading zeros of the bits of the dtype's width */
    int n = 0;
    for (uint64_t b = UINT64_C(1) << (bits - 1); b && !(u & m & b); b >>= 1) n++;
    *r = n;
    return !isbool;
  }
  case FT_P_POPULATION_COUNT: {
    int n = 0;
    for (uint64_t v = u & m; v; v &= v - 1) n++;
    *r = n;
    return !isbool;
  }
  case FT_P_SHARDING_CONSTRAINT: case FT_P_LAYOUT_CONSTRAINT: case FT_P_RESHARD: *r = x; return true;
  case FT_P_NEG: *r = (int64_t)(0 - u); return !isbool;
  case FT_P_SIGN: *r = sgn ? (x > 0) - (x < 0) : x != 0; return !isbool;
  case FT_P_ABS: *r = sgn && x < 0 ? (int64_t)(0 - u) : x; return !isbool;
  case FT_P_SQUARE: *r = (int64_t)(u * u); return !isbool;
  case FT_P_ONE_MINUS_SQUARE: *r = (int64_t)((1 + u) * (1 - u)); return !isbool;
  case FT_P_NOT: *r = isbool ? !x : (int64_t)~u; return true;
  case FT_P_COPY: case FT_P_COPY_P: case FT_P_STOP_GRADIENT: *r = x; return true;
  case FT_P_INTEGER_POW: {
    if (y < 0 || isbool) return false;
    uint64_t acc = 1, b = u;
    for (uint64_t n = (uint64_t)y; n; n >>= 1, b *= b)
      if (n & 1) acc *= b;
    *r = (int64_t)acc;
    return true;
  }
  default: return false;
  }
}

/* The shared library's complex transcendental for p, or NULL. */
typedef void (*cpx_fn)(double, double, double *, double *);
static cpx_fn cpx_transcendental(ft_prim p) {
  switch (p) {
#define CPX_CASE(id, name) case FT_P_##id: return ft_vm_c##name##_f64;
    FT_VM_COMPLEX_UNARY(CPX_CASE)
#undef CPX_CASE
  default: return NULL;
  }
}

static bool unary_cpx(ft_prim p, double complex x, ft_dtype dt, double complex *r) {
  bool c64 = dt == FT_C64;
  cpx_fn f = cpx_transcendental(p);
  if (f) { /* in double; a c64 result is rounded part by part by ft_set_c128 */
    double re, im;
    f(creal(x), cimag(x), &re, &im);
    *r = CMPLX(re, im);
    return true;
  }
  switch (p) {
  case FT_P_NEG: *r = -x; return true;
  case FT_P_SIGN: { /* XLA's: x / |x| part by part in the part type, 0 at 0 (|x| as abs) */
    double a = creal(x), b = cimag(x);
    if (c64) {
      float fa = (float)a, fb = (float)b, m = hypotf(fa, fb);
      *r = m == 0.0f ? CMPLX(0.0, 0.0) : CMPLX((double)(fa / m), (double)(fb / m));
    } else {
      double m = hypot(a, b);
      *r = m == 0.0 ? CMPLX(0.0, 0.0) : CMPLX(a / m, b / m);
    }
    return true;
  }
  case FT_P_COPY: case FT_P_COPY_P: case FT_P_STOP_GRADIENT: *r = x; return true;
  case FT_P_SHARDING_CONSTRAINT: case FT_P_LAYOUT_CONSTRAINT: case FT_P_RESHARD: *r = x; return true;
  case FT_P_ONE_MINUS_SQUARE: {
    /* (1 + z)(1 - z) as XLA: 1 is 1 + 0i, so the imaginary parts are
     * 0 + b and 0 - b (+0 for either zero b, which picks the side of a
     * cut in asin's jvp); each step rounded to the part type */
    double a = creal(x), b = cimag(x);
    if (c64) {
      float pa = 1.0f + (float)a, ma = 1.0f - (float)a, pb = 0.0f + (float)b, nb = 0.0f - (float)b;
      *r = CMPLX((double)(pa * ma - pb * nb), (double)(pa * nb + pb * ma));
    } else {
      double pa = 1.0 + a, ma = 1.0 - a, pb = 0.0 + b, nb = 0.0 - b;
      *r = CMPLX(pa * ma - pb * nb, pa * nb + pb * ma);
    }
    return true;
  }
  case FT_P_SQUARE: {
    double a = creal(x), b = cimag(x);
    if (c64) {
      float fa = (float)a, fb = (float)b;
      *r = CMPLX((double)(fa * fa - fb * fb), (double)(fa * fb + fb * fa));
    } else {
      *r = CMPLX(a * a - b * b, a * b + b * a);
    }
    return true;
  }
  default: return false;
  }
}

/* The rounding_method param: 0 / AWAY_FROM_ZERO, 1 / TO_NEAREST_EVEN. */
static int rounding_even(const ft_eqn *e) {
  const ft_pval *v = ft_eqn_param(e, "rounding_method");
  if (v->tag == FT_PV_INT) return v->u.i == 1;
  if (v->s && strstr(v->s, "EVEN")) return 1;
  if (v->s && !strcmp(v->s, "1")) return 1;
  return 0;
}

/* reduce_precision on the bits, exactly as XLA's elemental emitter does it. */
static uint64_t reduce_precision_bits(uint64_t x, int nbits, int src_e, int src_m, int ebits,
                                      int mbits, bool isnan_x) {
  uint64_t orig = x;
  if (mbits < src_m) {
    uint64_t last = UINT64_C(1) << (src_m - mbits);
    uint64_t base_bias = (last >> 1) - 1;
    uint64_t x_last = (x & last) >> (src_m - mbits);
    x = (x + x_last + base_bias) & ~(last - 1);
  }
  if (ebits < src_e) {
    uint64_t sign_mask = UINT64_C(1) << (nbits - 1);
    uint64_t exp_mask = ((UINT64_C(1) << src_e) - 1) << src_m;
    int64_t bias = (INT64_C(1) << (src_e - 1)) - 1;
    int64_t rbias = (INT64_C(1) << (ebits - 1)) - 1;
    uint64_t maxe = (uint64_t)(bias + rbias), mine = (uint64_t)(bias - rbias);
    uint64_t xe = x & exp_mask;
    uint64_t signed_zero = x & sign_mask, signed_inf = signed_zero | exp_mask;
    if (xe > (maxe << src_m)) x = signed_inf;
    else if (xe <= (mine << src_m)) x = signed_zero;
  }
  /* XLA (as JAX 0.10.2 runs it) returns a NaN unchanged, payload and sign,
   * even with mantissa_bits = 0 where the rounding would make it inf */
  return isnan_x ? orig : x;
}

/* The storage format of a float dtype: total, exponent and mantissa bits.
 * reduce_precision works on these bits (XLA's emitter does, for f16 and bf16
 * too): going through f32 would treat an f16 subnormal as an f32 normal and
 * flush it when exponent_bits is 5, where XLA keeps it. */
static bool float_format(ft_dtype dt, int *nbits, int *src_e, int *src_m) {
  switch (dt) {
  case FT_F16: *nbits = 16, *src_e = 5, *src_m = 10; return true;
  case FT_BF16: *nbits = 16, *src_e = 8, *src_m = 7; return true;
  case FT_F32: *nbits = 32, *src_e = 8, *src_m = 23; return true;
  case FT_F64: *nbits = 64, *src_e = 11, *src_m = 52; return true;
  default: return false;
  }
}

static ft_status reduce_precision_check(ft_ctx *ctx, const ft_eqn *e, ft_dtype dt) {
  int64_t eb = ft_param_int(e, "exponent_bits", -1), mb = ft_param_int(e, "mantissa_bits", -1);
  if (eb < 1 || mb < 0)
    return ft_set_error(ctx, FT_ERR_TYPE, "reduce_precision: bad exponent_bits %lld or "
                        "mantissa_bits %lld", (long long)eb, (long long)mb);
  int nbits, src_e, src_m;
  if (!float_format(dt, &nbits, &src_e, &src_m)) return unsupported(ctx, e, dt);
  return FT_OK;
}

static ft_status reduce_precision(ft_ctx *ctx, const ft_eqn *e, const ft_array *a, ft_array *o) {
  ft_dtype dt = a->aval.dtype;
  ft_status st = reduce_precision_check(ctx, e, dt);
  if (st) return st;
  int64_t eb = ft_param_int(e, "exponent_bits", -1), mb = ft_param_int(e, "mantissa_bits", -1);
  int nbits = 0, src_e = 0, src_m = 0;
  float_format(dt, &nbits, &src_e, &src_m); /* known to succeed (checked above) */
  int ebits = eb < src_e ? (int)eb : src_e, mbits = mb < src_m ? (int)mb : src_m;
  uint64_t exp_mask = ((UINT64_C(1) << src_e) - 1) << src_m, man_mask = (UINT64_C(1) << src_m) - 1;
  int64_t n = ft_array_size(a);
  for (int64_t i = 0; i < n; i++) {
    uint64_t b = 0;
    if (nbits == 16) b = ((const uint16_t *)a->data)[i];
    else if (nbits == 32) b = ((const uint32_t *)a->data)[i];
    else b = ((const uint64_t *)a->data)[i];
    bool isnan_b = (b & exp_mask) == exp_mask && (b & man_mask);
    b = reduce_precision_bits(b, nbits, src_e, src_m, ebits, mbits, isnan_b);
    if (nbits == 16) ((uint16_t *)o->data)[i] = (uint16_t)b;
    else if (nbits == 32) ((uint32_t *)o->data)[i] = (uint32_t)b;
    else ((uint64_t *)o->data)[i] = b;
  }
  return FT_OK;
}

/* The JIT's routine step runs this on its buffers (runtime.h: rules shared
 * with the JIT); the operand has the result's shape, as ft_interp_unary
 * requires of it. */
ft_status ft_reduce_precision_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                                   ft_array *const *out, void *scratch) {
  (void)scratch;
  if (ft_aval_size(&in[0]->aval) != ft_aval_size(&e->out[0]->aval))
    return ft_set_error(ctx, FT_ERR_SHAPE, "operand and result shapes differ");
  if (!out) return reduce_precision_check(ctx, e, in[0]->aval.dtype);
  return reduce_precision(ctx, e, in[0], out[0]);
}

ft_status ft_interp_unary(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  const ft_array *a = in[0];
  ft_dtype dt = a->aval.dtype;
  ft_status st = ft_interp_alloc_outs(ctx, e, out);
  if (st) return st;
  ft_array *o = out[0];
  int64_t n = ft_array_size(o), s;
  if (!operand_stride(a, n, &s) || s != 1) {
    st = ft_set_error(ctx, FT_ERR_SHAPE, "operand and result shapes differ");
    goto fail;
  }
  if (e->prim == FT_P_REDUCE_PRECISION) {
    st = reduce_precision(ctx, e, a, o);
    if (st) goto fail;
    return FT_OK;
  }
  if (e->prim == FT_P_IS_FINITE) {
    if (!ft_dtype_is_float(dt)) goto unsup;
    for (int64_t i = 0; i < n; i++) ft_set_i64(o, i, isfinite(ft_get_f64(a, i)));
    return FT_OK;
  }
  int even = e->prim == FT_P_ROUND ? rounding_even(e) : 0;
  int64_t y = e->prim == FT_P_INTEGER_POW ? ft_param_int(e, "y", 0) : 0;
  switch (wkind_of(dt)) {
  case WK_F32:
    for (int64_t i = 0; i < n; i++) {
      float x = (float)ft_get_f64(a, i), r;
      if (e->prim == FT_P_INTEGER_POW) r = ipow_f32(dt, x, y);
      else if (!unary_f32(e->prim, x, &r, even)) goto unsup;
      ft_set_f64(o, i, r);
    }
    break;
  case WK_F64:
    for (int64_t i = 0; i < n; i++) {
      double x = ft_get_f64(a, i), r;
      if (e->prim == FT_P_INTEGER_POW) r = ipow_f64(dt, x, y);
      else if (!unary_f64(e->prim, x, &r, even)) goto unsup;
      ft_set_f64(o, i, r);
    }
    break;
  case WK_INT: {
    bool sgn = ft_dtype_is_signed(dt), isbool = dt == FT_BOOL;
    for (int64_t i = 0; i < n; i++) {
      int64_t r;
      if (!unary_int(e->prim, ft_get_i64(a, i), y, ft_dtype_bits(dt), sgn, isbool, &r)) goto unsup;
      ft_set_i64(o, i, r);
    }
    break;
  }
  case WK_CPX:
    if (e->prim == FT_P_INTEGER_POW) {
      for (int64_t i = 0; i < n; i++) {
        double re, im, rr, ri;
        ft_get_c128(a, i, &re, &im);
        ipow_cpx(dt, re, im, y, &rr, &ri);
        ft_set_c128(o, i, rr, ri);
      }
      break;
    }
    if (e->prim == FT_P_ABS) { /* complex -> real magnitude */
      for (int64_t i = 0; i < n; i++) {
        double re, im;
        ft_get_c128(a, i, &re, &im);
        ft_set_f64(o, i, dt == FT_C64 ? (double)hypotf((float)re, (float)im) : hypot(re, im));
      }
      break;
    }
    for (int64_t i = 0; i < n; i++) {
      double re, im;
      double complex r;
      ft_get_c128(a, i, &re, &im);
      if (!unary_cpx(e->prim, CMPLX(re, im), dt, &r)) goto unsup;
      ft_set_c128(o, i, creal(r), cimag(r));
    }
    break;
  }
  return FT_OK;
unsup:
  st = unsupported(ctx, e, dt);
fail:
  ft_array_free(out[0]);
  out[0] = NULL;
  return st;
}

/* ------------------------------------------------------------------ binary */
#define DEF_BINARY_FLOAT(T, SFX)                                               \
  static bool binary_##SFX(ft_prim p, T a, T b, T *r) {                        \
    switch (p) {                                                               \
    case FT_P_ADD: case FT_P_ADD_ANY: *r = a + b; break;                       \
    case FT_P_SUB: *r = a - b; break;                                          \
    case FT_P_MUL: *r = a * b; break;                                          \
    case FT_P_DIV: *r = a / b; break;                                          \
    case FT_P_REM: *r = fmod(a, b); break;                                     \
    case FT_P_POW: *r = FTM(pow, SFX)(a, b); break;                            \
    case FT_P_MAX: *r = xmax_##SFX(a, b); break;                               \
    case FT_P_MIN: *r = xmin_##SFX(a, b); break;                               \
    case FT_P_ATAN2: *r = FTM(atan2, SFX)(a, b); break;                        \
    case FT_P_POLYGAMMA: *r = FTM(polygamma, SFX)(a, b); break;                \
    case FT_P_ZETA: *r = FTM(zeta, SFX)(a, b); break;                          \
    case FT_P_IGAMMA: *r = FTM(igamma, SFX)(a, b); break;                      \
    case FT_P_IGAMMAC: *r = FTM(igammac, SFX)(a, b); break;                    \
    case FT_P_IGAMMA_GRAD_A: *r = FTM(igamma_grad_a, SFX)(a, b); break;        \
    case FT_P_NEXTAFTER: *r = (a != a || b != b) ? a + b : nextafter(a, b); break; \
    default: return false;                                                     \
    }                                                                          \
    return true;                                                               \
  }
DEF_BINARY_FLOAT(float, f32)
DEF_BINARY_FLOAT(double, f64)

/* Integer binary ops on values already extended to 64 bits; the caller
 * truncates the result to the width. */
static bool binary_int(ft_prim p, int64_t a, int64_t b, int bits, bool sgn, bool isbool,
                       int64_t *r) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  uint64_t mask = bits >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << bits) - 1;
  switch (p) {
  case FT_P_ADD: case FT_P_ADD_ANY: *r = (int64_t)(ua + ub); return true;
  case FT_P_SUB: *r = (int64_t)(ua - ub); return !isbool;
  case FT_P_MUL: *r = (int64_t)(ua * ub); return true;
  case FT_P_DIV:
    if (isbool) return false;
    if (b == 0) *r = -1; /* all ones: -1, or the unsigned maximum */
    else if (sgn) *r = (b == -1) ? (int64_t)(0 - ua) : a / b; /* MIN/-1 wraps to MIN */
    else *r = (int64_t)(ua / ub);
    return true;
  case FT_P_REM:
    if (isbool) return false;
    if (b == 0) *r = a;
    else if (sgn) *r = (b == -1) ? 0 : a % b;
    else *r = (int64_t)(ua % ub);
    return true;
  case FT_P_MAX: *r = sgn ? (a > b ? a : b) : (ua > ub ? a : b); return true;
  case FT_P_MIN: *r = sgn ? (a < b ? a : b) : (ua < ub ? a : b); return true;
  case FT_P_AND: *r = a & b; return true;
  case FT_P_OR: *r = a | b; return true;
  case FT_P_XOR: *r = a ^ b; return true;
  case FT_P_MULHI: { /* the high half of the double-width product (XLA's mulhi) */
    if (isbool) return false;
    if (bits == 64) {
      if (sgn) *r = (int64_t)(((__int128)a * (__int128)b) >> 64);
      else *r = (int64_t)(uint64_t)(((unsigned __int128)ua * (unsigned __int128)ub) >> 64);
    } else if (sgn) {
      *r = (ft_int_wrap(a, bits, true) * ft_int_wrap(b, bits, true)) >> bits;
    } else {
      *r = (int64_t)(((ua & mask) * (ub & mask)) >> bits);
    }
    return true;
  }
  case FT_P_SHIFT_LEFT:
    if (isbool) return false;
    *r = (ub & mask) >= (uint64_t)bits ? 0 : (int64_t)(ua << (ub & mask));
    return true;
  case FT_P_SHIFT_RIGHT_LOGICAL:
    if (isbool) return false;
    *r = (ub & mask) >= (uint64_t)bits ? 0 : (int64_t)((ua & mask) >> (ub & mask));
    return true;
  case FT_P_SHIFT_RIGHT_ARITHMETIC: {
    if (isbool) return false;
    int64_t sa = ft_int_wrap(a, bits, true); /* the bits as a signed value */
    uint64_t s = ub & mask;
    *r = s >= (uint64_t)bits ? (sa < 0 ? -1 : 0) : (sa >> s);
    return true;
  }
  default: return false;
  }
}

static bool binary_cpx(ft_prim p, ft_dtype dt, double ar, double ai, double br, double bi,
                       double *rr, double *ri) {
  if (dt == FT_C64) { /* compute in single precision, as XLA does */
    float a = (float)ar, b = (float)ai, c = (float)br, d = (float)bi;
    switch (p) {
    case FT_P_ADD: case FT_P_ADD_ANY: *rr = a + c, *ri = b + d; return true;
    case FT_P_SUB: *rr = a - c, *ri = b - d; return true;
    case FT_P_MUL: *rr = a * c - b * d, *ri = a * d + b * c; return true;
    case FT_P_DIV: {
      float complex q = CMPLXF(a, b) / CMPLXF(c, d);
      *rr = crealf(q), *ri = cimagf(q);
      return true;
    }
    case FT_P_POW: ft_vm_cpow_f64(a, b, c, d, rr, ri); return true;
    default: return false;
    }
  }
  switch (p) {
  case FT_P_ADD: case FT_P_ADD_ANY: *rr = ar + br, *ri = ai + bi; return true;
  case FT_P_SUB: *rr = ar - br, *ri = ai - bi; return true;
  case FT_P_MUL: *rr = ar * br - ai * bi, *ri = ar * bi + ai * br; return true;
  case FT_P_DIV: {
    double complex q = CMPLX(ar, ai) / CMPLX(br, bi);
    *rr = creal(q), *ri = cimag(q);
    return true;
  }
  case FT_P_POW: ft_vm_cpow_f64(ar, ai, br, bi, rr, ri); return true;
  default: return false;
  }
}

/* integer_pow of a complex number: the squarings and products of ipow_f32
 * in complex arithmetic (c64 rounded to single precision at each step, as
 * binary_cpx), a negative power the reciprocal of the positive one (JAX's
 * _integer_pow lowering: multiplies, then 1 / acc). */
static void ipow_cpx(ft_dtype dt, double xr, double xi, int64_t y, double *rr, double *ri) {
  if (y == 0) {
    *rr = 1, *ri = 0;
    return;
  }
  bool recip = y < 0, have = false;
  uint64_t n = recip ? (uint64_t)0 - (uint64_t)y : (uint64_t)y;
  double ar = 0, ai = 0;
  while (n > 0) {
    if (n & 1) {
      if (have) binary_cpx(FT_P_MUL, dt, ar, ai, xr, xi, &ar, &ai);
      else ar = xr, ai = xi;
      have = true;
    }
    n >>= 1;
    if (n > 0) binary_cpx(FT_P_MUL, dt, xr, xi, xr, xi, &xr, &xi);
  }
  if (recip) binary_cpx(FT_P_DIV, dt, 1, 0, ar, ai, rr, ri);
  else *rr = ar, *ri = ai;
}

/* nextafter on the grid of a 16-bit format (its own bits, not f32's). */
static uint16_t nextafter16(uint16_t a, uint16_t b, float fa, float fb) {
  if (fa != fa || fb != fb) return a; /* the caller writes a NaN */
  if (fa == fb) return b;
  if (fa == 0) return (uint16_t)((b & 0x8000) | 1);
  bool up = (fa < fb) == !(a & 0x8000);
  return (uint16_t)(up ? a + 1 : a - 1);
}

static void nextafter_half(const ft_array *a, const ft_array *b, ft_array *o, const int64_t *s) {
  int64_t n = ft_array_size(o);
  bool f16 = o->aval.dtype == FT_F16;
  for (int64_t i = 0; i < n; i++) {
    uint16_t x = ((const uint16_t *)a->data)[i * s[0]], y = ((const uint16_t *)b->data)[i * s[1]];
    float fx = f16 ? ft_f16_to_f32(x) : ft_bf16_to_f32(x);
    float fy = f16 ? ft_f16_to_f32(y) : ft_bf16_to_f32(y);
    uint16_t r = nextafter16(x, y, fx, fy);
    if (fx != fx || fy != fy) r = f16 ? 0x7e00 : 0x7fc0;
    ((uint16_t *)o->data)[i] = r;
  }
}

/* pow's integer exponent as JAX lowers it: converted to the base's dtype (one
 * rounding from the integer; f16/bf16 from the f32 value, exact below 2^24). */
static double pow_int_exponent(const ft_array *b, int64_t i, ft_dtype dt) {
  bool u = ft_dtype_is_unsigned(b->aval.dtype);
  if (dt == FT_F64) return u ? (double)ft_get_u64(b, i) : (double)ft_get_i64(b, i);
  float f = u ? (float)ft_get_u64(b, i) : (float)ft_get_i64(b, i);
  return ft_round_to(dt, f);
}

ft_status ft_interp_binary(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  ft_status st = ft_interp_alloc_outs(ctx, e, out);
  if (st) return st;
  ft_array *o = out[0];
  ft_dtype dt = o->aval.dtype;
  int64_t n = ft_array_size(o), s[2];
  operands ops;
  if ((st = check_operands(ctx, e, in, 2, n, s, &ops))) goto fail;
  const ft_array *a = ops.ops[0], *b = ops.ops[1];
  if (e->prim == FT_P_NEXTAFTER && (dt == FT_F16 || dt == FT_BF16)) {
    nextafter_half(a, b, o, s);
    free_operands(&ops);
    return FT_OK;
  }
  bool int_exp = e->prim == FT_P_POW && !ft_dtype_is_float(b->aval.dtype) &&
                 !ft_dtype_is_complex(b->aval.dtype);
  switch (wkind_of(dt)) {
  case WK_F32:
    for (int64_t i = 0; i < n; i++) {
      float r;
      float y = int_exp ? (float)pow_int_exponent(b, i * s[1], dt) : (float)ft_get_f64(b, i * s[1]);
      if (!binary_f32(e->prim, (float)ft_get_f64(a, i * s[0]), y, &r)) goto unsup;
      ft_set_f64(o, i, r);
    }
    break;
  case WK_F64:
    for (int64_t i = 0; i < n; i++) {
      double r;
      double y = int_exp ? pow_int_exponent(b, i * s[1], dt) : ft_get_f64(b, i * s[1]);
      if (!binary_f64(e->prim, ft_get_f64(a, i * s[0]), y, &r)) goto unsup;
      ft_set_f64(o, i, r);
    }
    break;
  case WK_INT: {
    int bits = ft_dtype_bits(dt);
    bool sgn = ft_dtype_is_signed(dt), isbool = dt == FT_BOOL;
    for (int64_t i = 0; i < n; i++) {
      int64_t r;
      if (!binary_int(e->prim, ft_get_i64(a, i * s[0]), ft_get_i64(b, i * s[1]), bits, sgn,
                      isbool, &r))
        goto unsup;
      ft_set_i64(o, i, r);
    }
    break;
  }
  case WK_CPX:
    for (int64_t i = 0; i < n; i++) {
      double ar, ai, br, bi, rr, ri;
      ft_get_c128(a, i * s[0], &ar, &ai);
      ft_get_c128(b, i * s[1], &br, &bi);
      if (!binary_cpx(e->prim, dt, ar, ai, br, bi, &rr, &ri)) goto unsup;
      ft_set_c128(o, i, rr, ri);
    }
    break;
  }
  free_operands(&ops);
  return FT_OK;
unsup:
  free_operands(&ops);
  st = unsupported(ctx, e, dt);
fail:
  ft_array_free(out[0]);
  out[0] = NULL;
  return st;
}

/* ----------------------------------------------------------------- ternary */
/* regularized_incomplete_beta(a, b, x): real floats only (the shape rule);
 * f16/bf16 computed in f32 and rounded once, as JAX's _up_and_broadcast. */
ft_status ft_interp_ternary(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  ft_status st = ft_interp_alloc_outs(ctx, e, out);
  if (st) return st;
  ft_array *o = out[0];
  ft_dtype dt = o->aval.dtype;
  int64_t n = ft_array_size(o), s[3];
  operands ops;
  if ((st = check_operands(ctx, e, in, 3, n, s, &ops))) goto fail;
  const ft_array *a = ops.ops[0], *b = ops.ops[1], *x = ops.ops[2];
  if (e->prim != FT_P_REGULARIZED_INCOMPLETE_BETA || wkind_of(dt) == WK_INT || wkind_of(dt) == WK_CPX) {
    free_operands(&ops);
    st = unsupported(ctx, e, dt);
    goto fail;
  }
  for (int64_t i = 0; i < n; i++) {
    double av = ft_get_f64(a, i * s[0]), bv = ft_get_f64(b, i * s[1]), xv = ft_get_f64(x, i * s[2]);
    double r = wkind_of(dt) == WK_F64 ? FTM(betainc, f64)(av, bv, xv)
                                      : (double)FTM(betainc, f32)((float)av, (float)bv, (float)xv);
    ft_set_f64(o, i, r);
  }
  free_operands(&ops);
  return FT_OK;
fail:
  ft_array_free(out[0]);
  out[0] = NULL;
  return st;
}

/* -------------------------------------------------------------- comparisons */
/* The IEEE total order (-NaN < -inf < ... < -0 < +0 < ... < inf < +NaN) as
 * a signed integer: the magnitude bits, negated for a set sign bit. Every
 * float dtype widens to double exactly, keeping sign, order and (shifted)
 * NaN payloads, so one key serves them all. */
static int64_t total_order_key(double x) {
  int64_t k;
  memcpy(&k, &x, sizeof k);
  return k < 0 ? (int64_t)((uint64_t)k ^ (uint64_t)INT64_MAX) : k;
}

static bool cmp_result(ft_prim p, int c, bool unordered) {
  /* c: -1, 0, 1 for a < b, a == b, a > b; unordered: a NaN was involved */
  if (unordered) return p == FT_P_NE;
  switch (p) {
  case FT_P_EQ: return c == 0;
  case FT_P_NE: return c != 0;
  case FT_P_LT: return c < 0;
  case FT_P_LE: return c <= 0;
  case FT_P_GT: return c > 0;
  case FT_P_GE: return c >= 0;
  case FT_P_EQ_TO: return c == 0;
  case FT_P_LE_TO: return c <= 0;
  case FT_P_LT_TO: return c < 0;
  default: return false;
  }
}

ft_status ft_interp_compare(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  ft_status st = ft_interp_alloc_outs(ctx, e, out);
  if (st) return st;
  ft_array *o = out[0];
  ft_dtype dt = in[0]->aval.dtype;
  int64_t n = ft_array_size(o), s[2];
  operands ops;
  if ((st = check_operands(ctx, e, in, 2, n, s, &ops))) goto fail;
  const ft_array *a = ops.ops[0], *b = ops.ops[1];
  bool total = e->prim == FT_P_EQ_TO || e->prim == FT_P_LE_TO || e->prim == FT_P_LT_TO;
  if (total && wkind_of(dt) == WK_CPX) {
    free_operands(&ops);
    st = unsupported(ctx, e, dt);
    goto fail;
  }
  for (int64_t i = 0; i < n; i++) {
    int c = 0;
    bool un = false;
    switch (wkind_of(dt)) {
    case WK_F32: case WK_F64: {
      double x = ft_get_f64(a, i * s[0]), y = ft_get_f64(b, i * s[1]);
      if (total) { /* XLA's TOTALORDER: sign-magnitude keys of the (widened) bits */
        int64_t kx = total_order_key(x), ky = total_order_key(y);
        c = kx < ky ? -1 : kx > ky;
        break;
      }
      un = x != x || y != y;
      c = x < y ? -1 : x > y;
      break;
    }
    case WK_INT:
      if (ft_dtype_is_signed(dt)) {
        int64_t x = ft_get_i64(a, i * s[0]), y = ft_get_i64(b, i * s[1]);
        c = x < y ? -1 : x > y;
      } else {
        uint64_t x = ft_get_u64(a, i * s[0]), y = ft_get_u64(b, i * s[1]);
        c = x < y ? -1 : x > y;
      }
      break;
    case WK_CPX: {
      if (e->prim != FT_P_EQ && e->prim != FT_P_NE) {
        free_operands(&ops);
        st = unsupported(ctx, e, dt);
        goto fail;
      }
      double ar, ai, br, bi;
      ft_get_c128(a, i * s[0], &ar, &ai);
      ft_get_c128(b, i * s[1], &br, &bi);
      un = ar != ar || ai != ai || br != br || bi != bi;
      c = (ar == br && ai == bi) ? 0 : 1;
      break;
    }
    }
    ft_set_i64(o, i, cmp_result(e->prim, c, un));
  }
  free_operands(&ops);
  return FT_OK;
fail:
  ft_array_free(out[0]);
  out[0] = NULL;
  return st;
}

/* ---------------------------------------------------------- select_n, clamp */
static ft_status clamp_eval(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *o,
                            const int64_t *s) {
  ft_dtype dt = o->aval.dtype;
  int64_t n = ft_array_size(o);
  const ft_array *lo = in[0], *x = in[1], *hi = in[2];
  for (int64_t i = 0; i < n; i++) {
    switch (wkind_of(dt)) {
    case WK_F32: {
      float r = xmax_f32((float)ft_get_f64(x, i * s[1]), (float)ft_get_f64(lo, i * s[0]));
      ft_set_f64(o, i, xmin_f32(r, (float)ft_get_f64(hi, i * s[2])));
      break;
    }
    case WK_F64: {
      double r = xmax_f64(ft_get_f64(x, i * s[1]), ft_get_f64(lo, i * s[0]));
      ft_set_f64(o, i, xmin_f64(r, ft_get_f64(hi, i * s[2])));
      break;
    }
    case WK_INT: {
      int64_t r, v, l, h;
      binary_int(FT_P_MAX, ft_get_i64(x, i * s[1]), ft_get_i64(lo, i * s[0]), 64,
                 ft_dtype_is_signed(dt), false, &v);
      binary_int(FT_P_MIN, v, ft_get_i64(hi, i * s[2]), 64, ft_dtype_is_signed(dt), false, &r);
      (void)l, (void)h;
      ft_set_i64(o, i, r);
      break;
    }
    case WK_CPX: return unsupported(ctx, e, dt);
    }
  }
  return FT_OK;
}

ft_status ft_interp_select(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in_, ft_array **out) {
  ft_status st = ft_interp_alloc_outs(ctx, e, out);
  if (st) return st;
  ft_array *o = out[0];
  int64_t n = ft_array_size(o), s[16];
  operands ops = {0};
  if ((st = check_operands(ctx, e, in_, e->n_in, n, s, &ops))) goto fail;
  ft_array *const *in = ops.ops;
  if (e->prim == FT_P_CLAMP) {
    if ((st = clamp_eval(ctx, e, in, o, s))) goto fail;
  } else {
    int ncase = e->n_in - 1;
    size_t es = ft_dtype_size(o->aval.dtype);
    if (ncase < 1) {
      st = ft_set_error(ctx, FT_ERR_TYPE, "select_n needs at least one case");
      goto fail;
    }
    for (int k = 1; k < e->n_in; k++)
      if (in[k]->aval.dtype != o->aval.dtype) {
        st = ft_set_error(ctx, FT_ERR_TYPE, "case %d has dtype %s, the result %s", k - 1,
                          ft_dtype_name(in[k]->aval.dtype), ft_dtype_name(o->aval.dtype));
        goto fail;
      }
    for (int64_t i = 0; i < n; i++) {
      int64_t w = ft_get_i64(in[0], i * s[0]);
      if (in[0]->aval.dtype == FT_U32 || in[0]->aval.dtype == FT_U64) w = (int64_t)(w & INT64_MAX);
      w = w < 0 ? 0 : w >= ncase ? ncase - 1 : w; /* out of range is undefined: clamp */
      const ft_array *c = in[1 + w];
      memcpy((char *)o->data + (size_t)i * es, (const char *)c->data + (size_t)(i * s[1 + w]) * es, es);
    }
  }
  free_operands(&ops);
  return FT_OK;
fail:
  free_operands(&ops);
  ft_array_free(out[0]);
  out[0] = NULL;
  return st;
}

/* ------------------------------------------------------------- conversions */
void ft_convert_elem(const ft_array *src, int64_t i, ft_array *dst, int64_t j) {
  ft_dtype sd = src->aval.dtype, dd = dst->aval.dtype;
  bool s_int = wkind_of(sd) == WK_INT;
  if (dd == FT_BOOL) {
    double re, im;
    if (s_int) {
      ft_set_i64(dst, j, ft_get_i64(src, i) != 0);
      return;
    }
    ft_get_c128(src, i, &re, &im);
    ft_set_i64(dst, j, re != 0 || im != 0); /* NaN is true */
    return;
  }
  switch (wkind_of(dd)) {
  case WK_CPX: {
    double re, im;
    ft_get_c128(src, i, &re, &im);
    ft_set_c128(dst, j, re, im);
    return;
  }
  case WK_F32: case WK_F64:
    if (s_int && dd == FT_F32) { /* one rounding, straight from the integer */
      float f = ft_dtype_is_unsigned(sd) ? (float)ft_get_u64(src, i) : (float)ft_get_i64(src, i);
      ft_set_f64(dst, j, f);
    } else {
      ft_set_f64(dst, j, ft_get_f64(src, i));
    }
    return;
  case WK_INT: {
    if (s_int) {
      ft_set_i64(dst, j, ft_get_i64(src, i));
      return;
    }
    double d = ft_get_f64(src, i);
    int bits = ft_dtype_bits(dd);
    if (d != d) {
      ft_set_i64(dst, j, 0);
    } else if (ft_dtype_is_signed(dd)) {
      double lim = ldexp(1.0, bits - 1); /* 2^(bits-1), exact */
      int64_t mx = bits >= 64 ? INT64_MAX : (INT64_C(1) << (bits - 1)) - 1;
      if (d >= lim) ft_set_i64(dst, j, mx);
      else if (d <= -lim) ft_set_i64(dst, j, -mx - 1);
      else ft_set_i64(dst, j, (int64_t)d);
    } else {
      double lim = ldexp(1.0, bits);
      uint64_t mx = bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
      if (d >= lim) ft_set_i64(dst, j, (int64_t)mx);
      else if (d <= 0) ft_set_i64(dst, j, 0);
      else ft_set_i64(dst, j, (int64_t)(uint64_t)d);
    }
    return;
  }
  }
}

ft_status ft_interp_convert(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  ft_status st = ft_interp_alloc_outs(ctx, e, out);
  if (st) return st;
  ft_array *o = out[0];
  const ft_array *a = in[0];
  if (e->prim == FT_P_BITCAST_CONVERT_TYPE) {
    if (a->nbytes != o->nbytes) {
      char s1[128], s2[128];
      st = ft_set_error(ctx, FT_ERR_SHAPE, "cannot reinterpret %s as %s",
                        ft_aval_str(&a->aval, s1, sizeof s1), ft_aval_str(&o->aval, s2, sizeof s2));
      goto fail;
    }
    memcpy(o->data, a->data, a->nbytes);
    return FT_OK;
  }
  int64_t n = ft_array_size(o);
  if (ft_array_size(a) != n) {
    st = ft_set_error(ctx, FT_ERR_SHAPE, "operand and result sizes differ");
    goto fail;
  }
  if (o->aval.dtype == FT_FLOAT0 || a->aval.dtype == FT_FLOAT0) return FT_OK;
  for (int64_t i = 0; i < n; i++) ft_convert_elem(a, i, o, i);
  return FT_OK;
fail:
  ft_array_free(out[0]);
  out[0] = NULL;
  return st;
}

/* ------------------------------------------------- real, imag, conj, complex */
/* JAX's real_p, imag_p, conj_p and complex_p: exact (parts are copied, conj
 * negates the imaginary part, a float operand of conj gets +0 as its
 * imaginary part). complex broadcasts rank-0 and size-1 operands like the
 * binary ops. */
ft_status ft_interp_complex_parts(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  ft_status st = ft_interp_alloc_outs(ctx, e, out);
  if (st) return st;
  ft_array *o = out[0];
  int64_t n = ft_array_size(o), s[2] = {1, 1};
  operands ops = {0};
  ft_dtype dt = in[0]->aval.dtype;
  bool cpx_in = ft_dtype_is_complex(dt), cpx_out = ft_dtype_is_complex(o->aval.dtype);
  bool ok = e->prim == FT_P_REAL || e->prim == FT_P_IMAG ? cpx_in && !cpx_out
            : e->prim == FT_P_CONJ ? cpx_out && (cpx_in || dt == FT_F32 || dt == FT_F64)
                                   : cpx_out && (dt == FT_F32 || dt == FT_F64) && in[1]->aval.dtype == dt;
  if (!ok) {
    st = unsupported(ctx, e, dt);
    goto fail;
  }
  if ((st = check_operands(ctx, e, in, e->n_in, n, s, &ops))) goto fail;
  for (int64_t i = 0; i < n; i++) {
    double re, im, b;
    ft_get_c128(ops.ops[0], i * s[0], &re, &im);
    switch (e->prim) {
    case FT_P_REAL: ft_set_f64(o, i, re); break;
    case FT_P_IMAG: ft_set_f64(o, i, im); break;
    case FT_P_CONJ: ft_set_c128(o, i, re, cpx_in ? -im : 0.0); break; /* +0, as complex(x, 0) */
    default:
      b = ft_get_f64(ops.ops[1], i * s[1]);
      ft_set_c128(o, i, re, b);
    }
  }
  free_operands(&ops);
  return FT_OK;
fail:
  free_operands(&ops);
  ft_array_free(out[0]);
  out[0] = NULL;
  return st;
}
