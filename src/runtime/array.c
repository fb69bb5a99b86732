/* src/runtime/array.c: host arrays (owned, 64-byte aligned, C-order buffers),
 * element access by dtype, and the 16-bit float conversions. */
#include <math.h>
#include <string.h>

#include "runtime.h"

/* Checks rank and dims and computes the byte size without overflow. */
static ft_status shape_bytes(ft_ctx *ctx, ft_dtype dt, int rank, const int64_t *dims,
                             size_t *out) {
  if ((unsigned)dt >= FT_NUM_DTYPES)
    return ft_set_error(ctx, FT_ERR_INVALID_ARG, "array: invalid dtype %d", (int)dt);
  if (rank < 0 || rank > FT_MAX_RANK)
    return ft_set_error(ctx, FT_ERR_INVALID_ARG, "array: rank %d is outside 0..%d", rank,
                        FT_MAX_RANK);
  if (rank > 0 && !dims)
    return ft_set_error(ctx, FT_ERR_INVALID_ARG, "array: dims is NULL for rank %d", rank);
  uint64_t n = ft_dtype_size(dt);
  bool zero = false;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0)
      return ft_set_error(ctx, FT_ERR_INVALID_ARG, "array: dimension %d is negative (%lld)", i,
                          (long long)dims[i]);
    if (dims[i] == 0) zero = true;
  }
  if (zero) n = 0;
  for (int i = 0; i < rank && n; i++) {
    if ((uint64_t)dims[i] > (UINT64_C(1) << 62) / n)
      return ft_set_error(ctx, FT_ERR_INVALID_ARG, "array: the shape is too large (dimension %d, "
                          "%lld, overflows the byte count)", i, (long long)dims[i]);
    n *= (uint64_t)dims[i];
  }
  if (n > (UINT64_C(1) << 47))
    return ft_set_error(ctx, FT_ERR_INVALID_ARG, "array: the shape is too large (%llu bytes)",
                        (unsigned long long)n);
  *out = (size_t)n;
  return FT_OK;
}

ft_array *ft_array_alloc(ft_ctx *ctx, const ft_aval *aval) {
  size_t nb = 0;
  if (!aval) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "array: aval is NULL");
    return NULL;
  }
  if (shape_bytes(ctx, aval->dtype, aval->rank, aval->dims, &nb) != FT_OK) return NULL;
  ft_array *a = calloc(1, sizeof *a);
  size_t cap = (nb + FT_ARRAY_ALIGN - 1) / FT_ARRAY_ALIGN * FT_ARRAY_ALIGN;
  if (cap == 0) cap = FT_ARRAY_ALIGN;
  /* The context's allocator (ft_ctx_options.allocator), which the array
   * keeps so that ft_array_free gives the buffer back to it. */
  ft_allocator al = ctx && ctx->opts.allocator.alloc ? ctx->opts.allocator : (ft_allocator){0};
  void *d = !a ? NULL : al.alloc ? al.alloc(al.user, cap, FT_ARRAY_ALIGN)
                                 : aligned_alloc(FT_ARRAY_ALIGN, cap);
  if (d && (uintptr_t)d % FT_ARRAY_ALIGN) {
    al.free(al.user, d, cap);
    free(a);
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "array: the context's allocator returned %p, which is "
                 "not %d-byte aligned", d, FT_ARRAY_ALIGN);
    return NULL;
  }
  if (!d) {
    free(a);
    ft_set_error(ctx, FT_ERR_NOMEM, "array: out of memory allocating %zu bytes", nb);
    return NULL;
  }
  memset(d, 0, cap);
  a->aval = ft_aval_make(aval->dtype, aval->rank, aval->dims);
  a->nbytes = nb;
  a->data = d;
  a->cap = cap;
  a->allocator = al;
  return a;
}

ft_array *ft_array_new(ft_ctx *ctx, ft_dtype dtype, int rank, const int64_t *dims) {
  if (rank < 0 || rank > FT_MAX_RANK || (rank > 0 && !dims)) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "array: rank %d is outside 0..%d or dims is NULL",
                 rank, FT_MAX_RANK);
    return NULL;
  }
  ft_aval av = ft_aval_make(dtype, rank, dims);
  return ft_array_alloc(ctx, &av);
}

ft_array *ft_array_from_data(ft_ctx *ctx, ft_dtype dtype, int rank, const int64_t *dims,
                             const void *data) {
  ft_array *a = ft_array_new(ctx, dtype, rank, dims);
  if (!a) return NULL;
  if (a->nbytes && !data) {
    ft_array_free(a);
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "array: data is NULL");
    return NULL;
  }
  if (a->nbytes) memcpy(a->data, data, a->nbytes);
  return a;
}

ft_array *ft_array_clone(ft_ctx *ctx, const ft_array *a) {
  ft_array *b = ft_array_alloc(ctx, &a->aval);
  if (b && a->nbytes) memcpy(b->data, a->data, a->nbytes);
  return b;
}

ft_array *ft_array_wrap(ft_ctx *ctx, ft_dtype dtype, int rank, const int64_t *dims, void *data) {
  size_t nb = 0;
  if (shape_bytes(ctx, dtype, rank, dims, &nb) != FT_OK) return NULL;
  if (nb && !data) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "array_wrap: data is NULL for %zu bytes", nb);
    return NULL;
  }
  /* The library's buffers are 64-byte aligned and FFT plans and kernels are
   * made for that alignment: a misaligned borrowed buffer could change bits. */
  if ((uintptr_t)data % FT_ARRAY_ALIGN) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG,
                 "array_wrap: data %p is not %d-byte aligned (allocate it with aligned_alloc(%d, n))",
                 data, FT_ARRAY_ALIGN, FT_ARRAY_ALIGN);
    return NULL;
  }
  static char empty[FT_ARRAY_ALIGN] __attribute__((aligned(FT_ARRAY_ALIGN)));
  ft_array *a = calloc(1, sizeof *a);
  if (!a) {
    ft_set_error(ctx, FT_ERR_NOMEM, "array_wrap: out of memory");
    return NULL;
  }
  a->aval = ft_aval_make(dtype, rank, dims);
  a->nbytes = nb;
  a->data = data ? data : empty;
  a->borrowed = true;
  return a;
}

void ft_array_free(ft_array *a) {
  if (!a) return;
  if (a->borrowed) {}
  else if (a->allocator.free) a->allocator.free(a->allocator.user, a->data, a->cap);
  else free(a->data);
  free(a);
}

const void *ft_array_data(const ft_array *a) { return a ? a->data : NULL; }

void *ft_array_data_mut(ft_array *a) { return a ? a->data : NULL; }

/* Copies n values into s's constants (s: j itself or one of its sub-jaxprs,
 * which share j's arena); what names the entry point in messages. */
static ft_status bind_into(ft_ctx *ctx, ft_jaxpr *j, ft_jaxpr *s, int n,
                           const ft_array *const *values,
                           const char *what) {
  if (!j) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "%s: the jaxpr is NULL", what);
  if (s->const_data)
    return ft_set_error(ctx, FT_ERR_INVALID_ARG, "%s: the %s constants already have values", what,
                        s == j ? "jaxpr's" : "sub-jaxpr's");
  if (n != s->n_const || (n && !values))
    return ft_set_error(ctx, FT_ERR_INVALID_ARG, "%s: the %s has %d constants; %d values given",
                        what, s == j ? "jaxpr" : "sub-jaxpr", s->n_const, n);
  for (int i = 0; i < n; i++) {
    const ft_aval *want = &s->constvars[i]->aval;
    if (!values[i]) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "%s: value %d is NULL", what, i);
    char w[128], g[128];
    if (values[i]->aval.dtype != want->dtype)
      return ft_set_error(ctx, FT_ERR_TYPE, "%s: constant %d is %s; the value is %s", what, i,
                          ft_aval_str(want, w, sizeof w), ft_aval_str(&values[i]->aval, g, sizeof g));
    bool same = values[i]->aval.rank == want->rank;
    for (int d = 0; same && d < want->rank; d++) same = values[i]->aval.dims[d] == want->dims[d];
    if (!same)
      return ft_set_error(ctx, FT_ERR_SHAPE, "%s: constant %d is %s; the value is %s", what, i,
                          ft_aval_str(want, w, sizeof w), ft_aval_str(&values[i]->aval, g, sizeof g));
  }
  if (!n) return FT_OK;
  /* Copies go into j's arena, which is freed with j; a failed allocation
   * leaves j without values (the arena keeps what was taken until then). */
  void **cd = ft_arena_alloc(j->arena, sizeof *cd * (size_t)n);
  for (int i = 0; cd && i < n; i++) {
    if (!(cd[i] = ft_arena_alloc(j->arena, values[i]->nbytes ? values[i]->nbytes : 1))) cd = NULL;
    else if (values[i]->nbytes) memcpy(cd[i], values[i]->data, values[i]->nbytes);
  }
  if (!cd) return ft_set_error(ctx, FT_ERR_NOMEM, "%s: out of memory", what);
  s->const_data = cd;
  ft_jaxpr_renew_serial(j);  /* a new program now: caches keyed by identity must not match */
  return FT_OK;
}

ft_status ft_jaxpr_bind_consts(ft_ctx *ctx, ft_jaxpr *j, int n, const ft_array *const *values) {
  return bind_into(ctx, j, j, n, values, "bind_consts");
}

ft_status ft_jaxpr_bind_sub_consts(ft_ctx *ctx, ft_jaxpr *j, int k, int n,
                                   const ft_array *const *values) {
  if (!j) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "bind_sub_consts: the jaxpr is NULL");
  const ft_jaxpr **subs = NULL;
  int m = ft_jaxpr_closed_subs(j, &subs);
  if (m < 0) return ft_set_error(ctx, FT_ERR_NOMEM, "bind_sub_consts: out of memory");
  ft_status st;
  if (k < 0 || k >= m)
    st = ft_set_error(ctx, FT_ERR_INVALID_ARG,
                      "bind_sub_consts: the jaxpr has %d sub-jaxprs with constants; no number %d",
                      m, k);
  else  /* the sub-jaxpr lives in j's arena, which j owns and may change */
    st = bind_into(ctx, j, (ft_jaxpr *)subs[k], n, values, "bind_sub_consts");
  free(subs);
  return st;
}

ft_aval ft_array_aval(const ft_array *a) {
  if (!a) return ft_aval_scalar(FT_FLOAT0);
  return a->aval;
}

size_t ft_array_nbytes(const ft_array *a) { return a ? a->nbytes : 0; }

int64_t ft_array_size(const ft_array *a) { return ft_aval_size(&a->aval); }

bool ft_array_equal_bits(const ft_array *a, const ft_array *b) {
  if (!a || !b) return a == b;
  if (!ft_aval_eq(&a->aval, &b->aval)) return false;
  return a->nbytes == b->nbytes && memcmp(a->data, b->data, a->nbytes) == 0;
}

/* ---------------------------------------------------------- 16-bit floats */

float ft_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
  if (e == 0x1f) {
    bits = sign | 0x7f800000u | (m << 13);
  } else if (e == 0) {
    /* zero or subnormal: m * 2^-24, exact in float */
    float v = (float)m * 0x1p-24f;
    return sign ? -v : v;
  } else {
    bits = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

float ft_bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* Rounds x once, to nearest even, into a binary format with ebits exponent
 * and mbits mantissa bits (IEEE layout, subnormals, infinities). */
static uint16_t encode_small(double x, int ebits, int mbits) {
  uint16_t sign = signbit(x) ? (uint16_t)(1u << (ebits + mbits)) : 0;
  uint32_t expmax = (1u << ebits) - 1;
  if (isnan(x)) return (uint16_t)(sign | (expmax << mbits) | (1u << (mbits - 1)));
  if (isinf(x)) return (uint16_t)(sign | (expmax << mbits));
  double a = fabs(x);
  if (a == 0) return sign;
  int bias = (1 << (ebits - 1)) - 1, e;
  frexp(a, &e);
  int E = e - 1;
  if (E < 1 - bias) E = 1 - bias;
  /* a / 2^(E-mbits) is exact (a power-of-two scaling); rint rounds it once. */
  double r = rint(ldexp(a, mbits - E));
  uint64_t m = (uint64_t)r;
  if (m >= (UINT64_C(1) << (mbits + 1))) {
    m >>= 1;
    E++;
  }
  uint32_t field = 0;
  if (m >= (UINT64_C(1) << mbits)) {
    field = (uint32_t)(E + bias);
    m -= UINT64_C(1) << mbits;
  }
  if (field >= expmax) return (uint16_t)(sign | (expmax << mbits));
  return (uint16_t)(sign | (field << mbits) | (uint32_t)m);
}

uint16_t ft_f64_to_f16(double x) { return encode_small(x, 5, 10); }
uint16_t ft_f64_to_bf16(double x) { return encode_small(x, 8, 7); }

/* ---------------------------------------------------------- element access */

int64_t ft_int_wrap(int64_t v, int bits, bool is_signed) {
  if (bits >= 64) return v;
  uint64_t mask = (UINT64_C(1) << bits) - 1, u = (uint64_t)v & mask;
  if (is_signed && (u >> (bits - 1))) u |= ~mask;
  return (int64_t)u;
}

#define AT(T) (((const T *)a->data)[i])

int64_t ft_get_i64(const ft_array *a, int64_t i) {
  switch (a->aval.dtype) {
  case FT_BOOL: return AT(uint8_t) != 0;
  case FT_I8: return AT(int8_t);
  case FT_I16: return AT(int16_t);
  case FT_I32: return AT(int32_t);
  case FT_I64: return AT(int64_t);
  case FT_U8: return AT(uint8_t);
  case FT_U16: return AT(uint16_t);
  case FT_U32: return AT(uint32_t);
  case FT_U64: return (int64_t)AT(uint64_t);
  case FT_FLOAT0: return 0; /* no data: float0 holds only zeros */
  case FT_F16: case FT_BF16: case FT_F32: case FT_F64: case FT_C64: case FT_C128: {
    double d = ft_get_f64(a, i);
    return d != d ? 0 : (int64_t)d; /* callers convert floats themselves */
  }
  default: return 0; /* keys: see ft_set_i64 */
  }
}

uint64_t ft_get_u64(const ft_array *a, int64_t i) {
  return (uint64_t)ft_get_i64(a, i);
}

double ft_get_f64(const ft_array *a, int64_t i) {
  switch (a->aval.dtype) {
  case FT_F16: return ft_f16_to_f32(AT(uint16_t));
  case FT_BF16: return ft_bf16_to_f32(AT(uint16_t));
  case FT_F32: return AT(float);
  case FT_F64: return AT(double);
  case FT_C64: return ((const float *)a->data)[2 * i];
  case FT_C128: return ((const double *)a->data)[2 * i];
  case FT_U64: return (double)AT(uint64_t);
  case FT_FLOAT0: return 0;
  case FT_BOOL: case FT_I8: case FT_I16: case FT_I32: case FT_I64: case FT_U8: case FT_U16:
  case FT_U32: return (double)ft_get_i64(a, i);
  default: return 0; /* keys: see ft_set_i64 */
  }
}

void ft_get_c128(const ft_array *a, int64_t i, double *re, double *im) {
  switch (a->aval.dtype) {
  case FT_C64:
    *re = ((const float *)a->data)[2 * i];
    *im = ((const float *)a->data)[2 * i + 1];
    return;
  case FT_C128:
    *re = ((const double *)a->data)[2 * i];
    *im = ((const double *)a->data)[2 * i + 1];
    return;
  default:
    *re = ft_get_f64(a, i);
    *im = 0;
  }
}
#undef AT

#define SET(T, v) (((T *)a->data)[i] = (T)(v))

void ft_set_i64(ft_array *a, int64_t i, int64_t v) {
  switch (a->aval.dtype) {
  case FT_BOOL: SET(uint8_t, v != 0); return;
  case FT_I8: case FT_U8: SET(uint8_t, (uint64_t)v & 0xff); return;
  case FT_I16: case FT_U16: SET(uint16_t, (uint64_t)v & 0xffff); return;
  case FT_I32: case FT_U32: SET(uint32_t, (uint64_t)v & 0xffffffffu); return;
  case FT_I64: case FT_U64: SET(uint64_t, (uint64_t)v); return;
  case FT_FLOAT0: return; /* no data */
  case FT_F16: case FT_BF16: case FT_F32: case FT_F64: case FT_C64: case FT_C128:
    ft_set_f64(a, i, (double)v);
    return;
  /* PRNG keys (key<fry>, ...) have no numeric value: every path that could
   * give them one is refused with an error first (the shape rules refuse
   * arithmetic, conversions and literals on keys; ft_scalar/ft_full refuse
   * key dtypes), and keys move only as their words. The getters read 0 and
   * the setters leave the element as it is, so neither ever calls the other
   * for a key (they did, without end). */
  default: return;
  }
}

void ft_set_f64(ft_array *a, int64_t i, double v) {
  switch (a->aval.dtype) {
  /* XLA on CPU converts to the 16-bit floats through f32 (two roundings
   * from f64, e.g. 1 + 2^-11 + 2^-40 -> 1.0 in f16); so do we. */
  case FT_F16: SET(uint16_t, ft_f64_to_f16((float)v)); return;
  case FT_BF16: SET(uint16_t, ft_f64_to_bf16((float)v)); return;
  case FT_F32: SET(float, v); return;
  case FT_F64: SET(double, v); return;
  case FT_C64: case FT_C128: ft_set_c128(a, i, v, 0); return;
  case FT_BOOL: SET(uint8_t, v != 0); return;
  case FT_FLOAT0: return; /* no data */
  case FT_I8: case FT_I16: case FT_I32: case FT_I64: case FT_U8: case FT_U16: case FT_U32:
  case FT_U64:
    ft_set_i64(a, i, (int64_t)v); /* callers saturate first */
    return;
  default: return; /* keys: see ft_set_i64 */
  }
}
#undef SET

void ft_set_c128(ft_array *a, int64_t i, double re, double im) {
  if (a->aval.dtype == FT_C64) {
    ((float *)a->data)[2 * i] = (float)re;
    ((float *)a->data)[2 * i + 1] = (float)im;
  } else if (a->aval.dtype == FT_C128) {
    ((double *)a->data)[2 * i] = re;
    ((double *)a->data)[2 * i + 1] = im;
  } else {
    ft_set_f64(a, i, re);
  }
}

ft_status ft_array_wrap_keys(ft_ctx *ctx, ft_array *a, ft_dtype key_dtype) {
  if (!a) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "wrap keys: NULL array");
  int w = ft_key_words(key_dtype);
  char s[128];
  if (!w) return ft_set_error(ctx, FT_ERR_TYPE, "wrap keys: %s is not a key type", ft_dtype_name(key_dtype));
  if (a->aval.dtype != FT_U32 || a->aval.rank < 1 || a->aval.dims[a->aval.rank - 1] != w)
    return ft_set_error(ctx, FT_ERR_TYPE, "wrap keys: key data for %s must be u32[...,%d], got %s",
                        ft_dtype_name(key_dtype), w, ft_aval_str(&a->aval, s, sizeof s));
  a->aval.rank--;
  a->aval.dims[a->aval.rank] = 0;
  a->aval.dtype = key_dtype;
  a->aval.weak_type = false;
  return FT_OK;
}
