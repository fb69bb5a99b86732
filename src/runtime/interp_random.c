/* src/runtime/interp_random.c: JAX's PRNG primitives on threefry2x32 keys
 * (docs/random.md): the Threefry-2x32 hash (20 rounds, Salmon et al.,
 * SC'11) and random_seed / random_bits / random_split / random_fold_in /
 * random_wrap / random_unwrap / random_clone / threefry2x32 as rule bodies
 * that write into given buffers. The interpreter runs them through
 * ft_interp_via_into and the JIT's routine steps call the same bodies, so
 * both engines compute every random bit with this one file.
 *
 * random_bits and random_split follow JAX's partitionable scheme (the
 * default since JAX 0.5, and JAX 0.12's): element i of an output of n
 * elements hashes the 64-bit counter i, split into (hi, lo) words, under
 * the key; bits are y0 ^ y1 (32 and narrower widths: the low bits),
 * (y0 << 32) | y1 for 64; a split key is (y0, y1). A key of another impl
 * (key<rbg>, ...) is refused: those generators are not built. */
#include <string.h>

#include "math_adapter.h"
#include "runtime.h"

static inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

#define TF_ROUND(r) x0 += x1, x1 = rotl32(x1, r), x1 ^= x0
#define TF_R4A TF_ROUND(13); TF_ROUND(15); TF_ROUND(26); TF_ROUND(6)
#define TF_R4B TF_ROUND(17); TF_ROUND(29); TF_ROUND(16); TF_ROUND(24)

/* Threefry-2x32 with 20 rounds: the key schedule injects (k0, k1, k0^k1^C)
 * every 4 rounds with the injection count added to the second word. */
static inline void threefry(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1, uint32_t *y0,
                            uint32_t *y1) {
  uint32_t k2 = k0 ^ k1 ^ 0x1BD11BDAu;
  x0 += k0, x1 += k1;
  TF_R4A; x0 += k1, x1 += k2 + 1u;
  TF_R4B; x0 += k2, x1 += k0 + 2u;
  TF_R4A; x0 += k0, x1 += k1 + 3u;
  TF_R4B; x0 += k1, x1 += k2 + 4u;
  TF_R4A; x0 += k2, x1 += k0 + 5u;
  *y0 = x0, *y1 = x1;
}

/* The hot loops get AVX2 and AVX-512 clones chosen at load time (ifunc):
 * integer lanes, so every clone gives the same bits. Not in sanitized
 * builds (an ifunc resolver runs before the sanitizer runtime is up). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define TF_CLONES __attribute__((target_clones("avx512f", "avx2", "default"), optimize("O3")))
#else
#define TF_CLONES
#endif

void ft_threefry2x32(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1, uint32_t out[2]) {
  threefry(k0, k1, x0, x1, &out[0], &out[1]);
}

/* The counter blocks [first, first + n) under one key: the loops below are
 * written so the compiler vectorizes them (independent lanes, no branches). */
static void bits32(uint32_t k0, uint32_t k1, uint64_t first, int64_t n, uint32_t *o) {
  for (int64_t i = 0; i < n; i++) {
    uint64_t c = first + (uint64_t)i;
    uint32_t y0, y1;
    threefry(k0, k1, (uint32_t)(c >> 32), (uint32_t)c, &y0, &y1);
    o[i] = y0 ^ y1;
  }
}

static void bits64(uint32_t k0, uint32_t k1, int64_t n, uint64_t *o) {
  for (int64_t i = 0; i < n; i++) {
    uint32_t y0, y1;
    threefry(k0, k1, (uint32_t)((uint64_t)i >> 32), (uint32_t)i, &y0, &y1);
    o[i] = (uint64_t)y0 << 32 | y1;
  }
}

TF_CLONES static void split_keys(uint32_t k0, uint32_t k1, int64_t n, uint32_t *o) {
  for (int64_t i = 0; i < n; i++)
    threefry(k0, k1, (uint32_t)((uint64_t)i >> 32), (uint32_t)i, &o[2 * i], &o[2 * i + 1]);
}

/* Fills o (n elements) with random_bits of width bw from key (k0, k1). */
TF_CLONES void ft_threefry_bits(uint32_t k0, uint32_t k1, int bw, int64_t n, void *o) {
  enum { BLK = 1024 };
  uint32_t tmp[BLK];
  switch (bw) {
  case 32: bits32(k0, k1, 0, n, o); break;
  case 64: bits64(k0, k1, n, o); break;
  default:
    for (int64_t b = 0; b < n; b += BLK) {
      int64_t m = n - b < BLK ? n - b : BLK;
      bits32(k0, k1, (uint64_t)b, m, tmp);
      if (bw == 16)
        for (int64_t i = 0; i < m; i++) ((uint16_t *)o)[b + i] = (uint16_t)tmp[i];
      else
        for (int64_t i = 0; i < m; i++) ((uint8_t *)o)[b + i] = (uint8_t)tmp[i];
    }
    break;
  }
}


static float fma_f32_(float a, float b, float c) { return fmaf(a, b, c); }
static double fma_f64_(double a, double b, double c) { return fma(a, b, c); }

/* split(key, n) into o[2n] (JAX's partitionable split). */
static void split2(uint32_t k0, uint32_t k1, int n, uint32_t *o) {
  for (int i = 0; i < n; i++) threefry(k0, k1, 0, (uint32_t)i, &o[2 * i], &o[2 * i + 1]);
}

/* ------------------------------------------------------------ random_gamma
 *
 * JAX's _gamma_impl and _gamma_one (jax/_src/random.py), per element: the
 * keys are split into prod(a.shape[keys.ndim:]) keys each (partitionable
 * split), element i of a draws with key i, and Marsaglia and Tsang's method
 * runs with JAX's splits and draws in JAX's order: (key, subkey) = split(key);
 * while the squeeze and log tests accept: (key, x_key, u_key) = split(key, 3),
 * normals from x_key (each from the second half of a split, the first half
 * carried) until v = 1 + x c > 0, U = uniform(u_key); then the boost for
 * alpha < 1 from subkey. The vmap of JAX's lowering runs every lane to its own
 * exit (the batched while selects per lane), so a lane's value is this one.
 * JAX's uniform(key, (), dtype) is the mantissa of one draw of bits; its
 * normal is sqrt(2) erf_inv(u) with u uniform on [nextafter(-1, 1), 1), where
 * the scale (1 - lo) rounds to 2 exactly, so the fused multiply-add XLA
 * forms there gives the same bits as two roundings. v = 1 + x c is a fused
 * multiply-add, as XLA's CPU code contracts it. */
#define GAMMA_ONE(T, SFX, BITS_T, NMANT, ONE_BITS)                                                 \
  static T unif_##SFX(uint32_t k0, uint32_t k1) {                                                \
    uint32_t y0, y1;                                                                              \
    threefry(k0, k1, 0, 0, &y0, &y1);                                                             \
    BITS_T b = sizeof(T) == 4 ? (BITS_T)(y0 ^ y1) : (BITS_T)((uint64_t)y0 << 32 | y1);           \
    b = (BITS_T)(b >> (8 * sizeof(T) - NMANT)) | ONE_BITS;                                        \
    T f;                                                                                          \
    memcpy(&f, &b, sizeof f);                                                                     \
    return f - (T)1;                                                                              \
  }                                                                                               \
  static T normal_##SFX(uint32_t k0, uint32_t k1) {                                              \
    const T lo = (T)-1 + (sizeof(T) == 4 ? (T)0x1p-24 : (T)0x1p-53);                             \
    T u = unif_##SFX(k0, k1) * ((T)1 - lo) + lo;                                                  \
    u = u > lo ? u : lo; /* lax.max(minval, u) */                                                 \
    return (T)(sizeof(T) == 4 ? 1.4142135381698608 : 1.4142135623730951) * FTM(erf_inv, SFX)(u); \
  }                                                                                               \
  static T gamma_one_##SFX(uint32_t k0, uint32_t k1, T alpha_orig, bool log_space) {             \
    const T one = 1, zero = 0, third = (T)(1. / 3.), squeeze = (T)0.0331, half = (T)0.5;         \
    bool boost = alpha_orig >= one;                                                               \
    T alpha = boost ? alpha_orig : alpha_orig + one;                                              \
    T d = alpha - third, c = third / FTM(sqrt, SFX)(d);                                           \
    uint32_t s[4];                                                                                \
    split2(k0, k1, 2, s);                                                                         \
    uint32_t key0 = s[0], key1 = s[1], sub0 = s[2], sub1 = s[3];                                  \
    T X = zero, V = one, U = (T)2;                                                                \
    while (U >= one - squeeze * (X * X) &&                                                        \
           FTM(log, SFX)(U) >= X * half + d * ((one - V) + FTM(log, SFX)(V))) {                   \
      uint32_t t[6];                                                                              \
      split2(key0, key1, 3, t);                                                                   \
      key0 = t[0], key1 = t[1];                                                                   \
      uint32_t xk0 = t[2], xk1 = t[3];                                                            \
      T x = zero, v = -one;                                                                       \
      while (v <= zero) {                                                                         \
        uint32_t w[4];                                                                            \
        split2(xk0, xk1, 2, w);                                                                   \
        xk0 = w[0], xk1 = w[1];                                                                   \
        x = normal_##SFX(w[2], w[3]);                                                             \
        v = fma_##SFX##_(x, c, one);                                                             \
      }                                                                                           \
      X = x * x;                                                                                  \
      V = (v * v) * v;                                                                            \
      U = unif_##SFX(t[4], t[5]);                                                                 \
    }                                                                                             \
    if (log_space) {                                                                              \
      T u = unif_##SFX(sub0, sub1);                                                               \
      T ls = -(-FTM(log1p, SFX)(-u)); /* -exponential(subkey) */                                  \
      T lb = boost || ls == zero ? zero : ls * (one / alpha_orig);                                \
      return (FTM(log, SFX)(d) + FTM(log, SFX)(V)) + lb;                                          \
    }                                                                                             \
    T smp = one - unif_##SFX(sub0, sub1);                                                         \
    T b = boost ? one : FTM(pow, SFX)(smp, one / alpha_orig);                                     \
    return (d * V) * b;                                                                           \
  }

GAMMA_ONE(float, f32, uint32_t, 23, 0x3f800000u)
GAMMA_ONE(double, f64, uint64_t, 52, 0x3ff0000000000000u)

/* random_gamma: keys (a prefix of a's shape) and alphas a; checked by the
 * shape rule. */
static void gamma_into(const ft_eqn *e, ft_array *const *in, ft_array *const *out) {
  int64_t nk = ft_aval_size(&in[0]->aval), n = ft_aval_size(&out[0]->aval);
  int64_t per = nk ? n / nk : 0;
  bool log_space = ft_param_bool(e, "log_space", false);
  const uint32_t *k = in[0]->data;
  for (int64_t j = 0; j < nk; j++)
    for (int64_t i = 0; i < per; i++) {
      uint32_t y0, y1;
      int64_t at = j * per + i;
      threefry(k[2 * j], k[2 * j + 1], (uint32_t)((uint64_t)i >> 32), (uint32_t)i, &y0, &y1);
      if (out[0]->aval.dtype == FT_F32)
        ((float *)out[0]->data)[at] = gamma_one_f32(y0, y1, ((const float *)in[1]->data)[at], log_space);
      else
        ((double *)out[0]->data)[at] = gamma_one_f64(y0, y1, ((const double *)in[1]->data)[at], log_space);
    }
}
/* ---------------------------------------------------------------- rules */

static ft_status need_fry(ft_ctx *ctx, const ft_eqn *e, ft_dtype dt) {
  if (dt == FT_KEY_FRY) return FT_OK;
  return ft_set_error(ctx, FT_ERR_UNSUPPORTED,
                      "%s: PRNG implementation '%s' (%s) is not built: only threefry2x32 keys "
                      "(key<fry>) are", ft_prim_get(e->prim)->name, ft_key_tag(dt), ft_dtype_name(dt));
}

/* Strides (in elements) of operand a broadcast to the shape of o (JAX's
 * broadcasting: a scalar, or equal rank with size-1 axes). */
static void bcast_strides(const ft_aval *a, const ft_aval *o, int64_t *st) {
  int64_t s = 1;
  for (int d = o->rank - 1; d >= 0; d--) {
    if (a->rank == 0) { st[d] = 0; continue; }
    st[d] = a->dims[d] == 1 ? 0 : s;
    s *= a->dims[d];
  }
}

static int64_t bcast_index(const ft_aval *o, const int64_t *st, int64_t i) {
  int64_t r = 0;
  for (int d = o->rank - 1; d >= 0; d--) {
    r += (i % o->dims[d]) * st[d];
    i /= o->dims[d];
  }
  return r;
}

static ft_status fold_in(const ft_eqn *e, ft_array *const *in, ft_array *const *out) {
  const ft_aval *oa = &out[0]->aval;
  int64_t sk[FT_MAX_RANK], sm[FT_MAX_RANK], n = ft_aval_size(oa);
  bcast_strides(&in[0]->aval, oa, sk);
  bcast_strides(&in[1]->aval, oa, sm);
  const uint32_t *k = in[0]->data;
  uint32_t *o = out[0]->data;
  (void)e;
  for (int64_t i = 0; i < n; i++) {
    int64_t ik = bcast_index(oa, sk, i), im = bcast_index(oa, sm, i);
    uint32_t msg = (uint32_t)ft_get_u64(in[1], im); /* jnp.asarray(msg, uint32): wraps */
    threefry(k[2 * ik], k[2 * ik + 1], 0, msg, &o[2 * i], &o[2 * i + 1]);
  }
  return FT_OK;
}

/* random_seed on threefry: the key (seed >> 32, seed & 0xFFFFFFFF) of the
 * 64-bit two's complement seed; for seeds narrower than 64 bits the high
 * word is 0 (XLA's logical shift by the width or more is 0). */
static void seed(ft_array *const *in, ft_array *const *out) {
  int64_t n = ft_aval_size(&out[0]->aval);
  bool wide = ft_dtype_bits(in[0]->aval.dtype) == 64;
  uint32_t *o = out[0]->data;
  for (int64_t i = 0; i < n; i++) {
    uint64_t s = ft_dtype_is_unsigned(in[0]->aval.dtype) ? ft_get_u64(in[0], i)
                                                         : (uint64_t)ft_get_i64(in[0], i);
    o[2 * i] = wide ? (uint32_t)(s >> 32) : 0;
    o[2 * i + 1] = (uint32_t)s;
  }
}

static ft_status threefry_op(ft_array *const *in, ft_array *const *out) {
  const ft_aval *oa = &out[0]->aval;
  int64_t st[4][FT_MAX_RANK], n = ft_aval_size(oa);
  bool flat = true;
  for (int k = 0; k < 4; k++) {
    bcast_strides(&in[k]->aval, oa, st[k]);
    flat = flat && ft_aval_size(&in[k]->aval) == n;
  }
  const uint32_t *a[4] = {in[0]->data, in[1]->data, in[2]->data, in[3]->data};
  uint32_t *y0 = out[0]->data, *y1 = out[1]->data;
  for (int64_t i = 0; i < n; i++) {
    int64_t j[4];
    for (int k = 0; k < 4; k++) j[k] = flat ? i : bcast_index(oa, st[k], i);
    threefry(a[0][j[0]], a[1][j[1]], a[2][j[2]], a[3][j[3]], &y0[i], &y1[i]);
  }
  return FT_OK;
}

/* Checks (out == NULL) or computes e. */
ft_status ft_random_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                         void *scratch) {
  (void)scratch;
  ft_dtype kd = FT_KEY_FRY;
  ft_status st;
  switch (e->prim) {
  case FT_P_RANDOM_SEED: case FT_P_RANDOM_WRAP: kd = e->out[0]->aval.dtype; break;
  case FT_P_RANDOM_BITS: case FT_P_RANDOM_SPLIT: case FT_P_RANDOM_FOLD_IN: case FT_P_RANDOM_UNWRAP:
  case FT_P_RANDOM_CLONE: case FT_P_RANDOM_GAMMA:
    kd = in[0]->aval.dtype;
    break;
  case FT_P_THREEFRY2X32: break;
  default:
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED,
                        "%s: XLA's RngBitGenerator algorithms are not built (rbg and unsafe_rbg "
                        "keys use it; threefry keys do not)", ft_prim_get(e->prim)->name);
  }
  if (e->prim != FT_P_RANDOM_UNWRAP && e->prim != FT_P_RANDOM_WRAP && e->prim != FT_P_RANDOM_CLONE &&
      (st = need_fry(ctx, e, kd)))
    return st;
  if (!out) return FT_OK;
  switch (e->prim) {
  case FT_P_RANDOM_SEED: seed(in, out); break;
  case FT_P_RANDOM_WRAP: case FT_P_RANDOM_UNWRAP: case FT_P_RANDOM_CLONE: /* the same words */
    if (out[0]->nbytes) memcpy(out[0]->data, in[0]->data, out[0]->nbytes);
    break;
  case FT_P_RANDOM_BITS: case FT_P_RANDOM_SPLIT: {
    int64_t nk = ft_aval_size(&in[0]->aval), per = nk ? ft_aval_size(&out[0]->aval) / nk : 0;
    const uint32_t *k = in[0]->data;
    size_t es = ft_dtype_size(out[0]->aval.dtype);
    int bw = e->prim == FT_P_RANDOM_BITS ? (int)ft_param_int(e, "bit_width", 32) : 32;
    for (int64_t j = 0; j < nk && per; j++) {
      void *o = (char *)out[0]->data + (size_t)(j * per) * es;
      if (e->prim == FT_P_RANDOM_SPLIT) split_keys(k[2 * j], k[2 * j + 1], per, o);
      else ft_threefry_bits(k[2 * j], k[2 * j + 1], bw, per, o);
    }
    break;
  }
  case FT_P_RANDOM_FOLD_IN: return fold_in(e, in, out);
  case FT_P_RANDOM_GAMMA: gamma_into(e, in, out); break;
  default: return threefry_op(in, out);
  }
  return FT_OK;
}
