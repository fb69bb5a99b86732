/* src/trace/random.c: jax.random for traced C functions (docs/random.md).
 * Each sampler emits the primitives jax.random emits (random_seed,
 * random_split, random_fold_in, random_bits, then bit manipulation and
 * arithmetic), in JAX's order and dtypes, so a traced program draws the
 * same bits as JAX for the same key. Keys are values of dtype key<fry>. */
#include <string.h>

#include "trace/trace.h"

static ft_tracer *root_of(ft_val *x, const char *name) {
  ft_val *ops[1] = {x};
  return x ? ft__root_of(NULL, name, 1, ops) : NULL;
}

static ft_val *sym_impl(ft_tracer *root, ft_prim p, ft_val *x) {
  ft_pval *ps = ft__params(root, p);
  if (!ps) return NULL;
  ft_pval v = ft_pv_int(0);
  v.tag = FT_PV_SYM;
  v.s = "fry";
  ft__set(ps, p, "impl", v);
  return ft__emit1(root, p, 1, &x, ps);
}

ft_val *ft_random_key(ft_val *seed) {
  ft_tracer *root = root_of(seed, "random_key");
  return root ? sym_impl(root, FT_P_RANDOM_SEED, seed) : NULL;
}

ft_val *ft_random_wrap(ft_val *data) {
  ft_tracer *root = root_of(data, "random_wrap");
  return root ? sym_impl(root, FT_P_RANDOM_WRAP, data) : NULL;
}

ft_val *ft_random_unwrap(ft_val *key) {
  ft_tracer *root = root_of(key, "random_unwrap");
  return root ? ft__emit1(root, FT_P_RANDOM_UNWRAP, 1, &key, NULL) : NULL;
}

ft_val *ft_random_split(ft_val *key, int rank, const int64_t *shape) {
  ft_tracer *root = root_of(key, "random_split");
  if (!root) return NULL;
  ft_pval *ps = ft__params(root, FT_P_RANDOM_SPLIT);
  if (!ps) return NULL;
  ft__set(ps, FT_P_RANDOM_SPLIT, "shape", ft__ints(root, rank, shape));
  return ft__emit1(root, FT_P_RANDOM_SPLIT, 1, &key, ps);
}

/* jax.random.fold_in: the message as uint32 (jnp.asarray(data, uint32)). */
ft_val *ft_random_fold_in(ft_val *key, ft_val *data) {
  ft_tracer *root = root_of(key, "random_fold_in");
  if (!root || !data) return NULL;
  if (ft_val_dtype(data) != FT_U32) data = ft_convert(data, FT_U32);
  ft_val *in[2] = {key, data};
  return data ? ft__emit1(root, FT_P_RANDOM_FOLD_IN, 2, in, NULL) : NULL;
}

ft_val *ft_random_bits(ft_val *key, int bit_width, int rank, const int64_t *shape) {
  ft_tracer *root = root_of(key, "random_bits");
  if (!root) return NULL;
  ft_pval *ps = ft__params(root, FT_P_RANDOM_BITS);
  if (!ps) return NULL;
  ft__set(ps, FT_P_RANDOM_BITS, "bit_width", ft_pv_int(bit_width));
  ft__set(ps, FT_P_RANDOM_BITS, "shape", ft__ints(root, rank, shape));
  return ft__emit1(root, FT_P_RANDOM_BITS, 1, &key, ps);
}

/* jax.random.uniform (_uniform): the top mantissa bits of random_bits under
 * the exponent of 1.0, minus 1, scaled to [minval, maxval), and max'ed with
 * minval (rounding can reach below it). f32 and f64. */
ft_val *ft_random_uniform(ft_val *key, ft_dtype dt, int rank, const int64_t *shape, double minval,
                          double maxval) {
  ft_tracer *root = root_of(key, "random_uniform");
  if (!root) return NULL;
  if (dt != FT_F32 && dt != FT_F64) {
    ft__fail(root, FT_ERR_TYPE, "random_uniform: dtype must be f32 or f64, got %s", ft_dtype_name(dt));
    return NULL;
  }
  bool f64 = dt == FT_F64;
  ft_tracer *t = ft_val_tracer(key);
  ft_dtype ut = f64 ? FT_U64 : FT_U32;
  ft_val *bits = ft_random_bits(key, f64 ? 64 : 32, rank, shape);
  ft_val *sh = ft_scalar(t, ut, f64 ? 12 : 9);
  ft_val *one = f64 ? ft_scalar(t, ut, 4607182418800017408.0) : ft_const_u32(t, 1065353216u);
  ft_val *fl = ft_sub(ft_bitcast_convert(ft_or(ft_shift_right_logical(bits, sh), one), dt),
                      ft_scalar(t, dt, 1.0));
  ft_val *lo = ft_scalar(t, dt, minval), *hi = ft_scalar(t, dt, maxval);
  return ft_max(lo, ft_add(ft_mul(fl, ft_sub(hi, lo)), lo));
}

/* jax.random.normal: sqrt(2) * erf_inv(uniform in (-1, 1)), the lower
 * bound nextafter(-1, 0). */
ft_val *ft_random_normal(ft_val *key, ft_dtype dt, int rank, const int64_t *shape) {
  ft_tracer *root = root_of(key, "random_normal");
  if (!root) return NULL;
  double lo = dt == FT_F64 ? -0.99999999999999989 : -0.99999994039535522;
  ft_val *u = ft_random_uniform(key, dt, rank, shape, lo, 1.0);
  ft_tracer *t = ft_val_tracer(key);
  return ft_mul(ft_scalar(t, dt, dt == FT_F64 ? 1.4142135623730951 : 1.4142135381698608),
                ft_erf_inv(u));
}

/* jax.random.bernoulli(key, p, shape): uniform(key, shape, f32) < p. */
ft_val *ft_random_bernoulli(ft_val *key, double p, int rank, const int64_t *shape) {
  ft_val *u = ft_random_uniform(key, FT_F32, rank, shape, 0.0, 1.0);
  return u ? ft_lt(u, ft_scalar(ft_val_tracer(key), FT_F32, p)) : NULL;
}

/* jax.random.categorical(key, logits, axis): argmax over axis of logits +
 * gumbel noise, the noise -log(-log(uniform(tiny, 1))) of the logits'
 * shape; i32 indices. */
ft_val *ft_random_categorical(ft_val *key, ft_val *logits, int axis) {
  ft_tracer *root = root_of(key, "random_categorical");
  if (!root || !logits) return NULL;
  ft_aval a = ft_val_aval(logits);
  if (axis < 0) axis += a.rank;
  if (axis < 0 || axis >= a.rank) {
    ft__fail(root, FT_ERR_SHAPE, "random_categorical: axis out of range for rank %d", a.rank);
    return NULL;
  }
  double tiny = a.dtype == FT_F64 ? 2.2250738585072014e-308 : 1.1754943508222875e-38;
  ft_val *u = ft_random_uniform(key, a.dtype, a.rank, a.dims, tiny, 1.0);
  ft_val *g = ft_neg(ft_log(ft_neg(ft_log(u))));
  return ft_argmax(ft_add(g, logits), axis, FT_I32);
}

/* jax.random.permutation(key, n): iota(n) sorted by fresh random_bits, in
 * ceil(3 ln n / ln(2^32 - 1)) rounds (JAX's _shuffle). */
ft_val *ft_random_permutation(ft_val *key, int64_t n) {
  ft_tracer *root = root_of(key, "random_permutation");
  if (!root) return NULL;
  if (n < 0) {
    ft__fail(root, FT_ERR_SHAPE, "random_permutation: n must be >= 0, got %lld", (long long)n);
    return NULL;
  }
  ft_val *x = ft_iota(ft_val_tracer(key), FT_I32, 1, &n, 0);
  int rounds = 0; /* the smallest r with (2^32 - 1)^r >= n^3 */
  for (double c = 1, n3 = (double)n * (double)n * (double)n; c < n3 && n > 1; rounds++)
    c *= 4294967295.0;
  for (int r = 0; r < rounds && x; r++) {
    int64_t two = 2, one = 1, z = 0;
    int zero = 0;
    ft_val *ks = ft_random_split(key, 1, &two);
    key = ft_squeeze(ft_slice(ks, 1, &z, &one, &one), 1, &zero);
    ft_val *sk = ft_squeeze(ft_slice(ks, 1, &one, &two, &one), 1, &zero);
    ft_val *pair[2] = {ft_random_bits(sk, 32, 1, &n), x}, *out[2] = {0};
    if (ft_sort_multi(2, pair, 0, true, 1, out) < 0) return NULL;
    x = out[1];
  }
  return x;
}

/* Dropout as Flax writes it: keep each element with probability 1 - rate
 * (bernoulli of x's shape), scale the kept by 1 / (1 - rate), zero the rest. */
ft_val *ft_dropout(ft_val *key, ft_val *x, double rate) {
  ft_tracer *root = root_of(key, "dropout");
  if (!root || !x) return NULL;
  if (!(rate >= 0 && rate < 1)) {
    ft__fail(root, FT_ERR_INVALID_ARG, "dropout: rate must be in [0, 1), got %g", rate);
    return NULL;
  }
  ft_aval a = ft_val_aval(x);
  double keep = 1.0 - rate;
  ft_val *mask = ft_random_bernoulli(key, keep, a.rank, a.dims);
  ft_tracer *t = ft_val_tracer(key);
  ft_val *scaled = ft_div(x, ft_scalar(t, a.dtype, keep));
  ft_val *zeros = ft_full(t, a.dtype, a.rank, a.dims, 0.0);
  ft_val *cases[2] = {zeros, scaled};
  return ft_select_n(mask, 2, cases);
}
