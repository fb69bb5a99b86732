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
  case FT_P_RANDOM_CLONE:
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
  default: return threefry_op(in, out);
  }
  return FT_OK;
}
