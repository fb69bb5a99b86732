/* src/runtime/interp_misc.c: the rule bodies of JAX 0.12's polynomial,
 * stack, unstack, tile, optimization_barrier, platform_index and empty
 * (issue 17 §1). Each is an ft_rule_into_fn (runtime.h): called with
 * out == NULL it only checks the operands against the equation, so the
 * JIT runs the same body as a routine step and never meets an operand the
 * interpreter would refuse. */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "runtime.h"

static ft_status bad(ft_ctx *ctx, const ft_eqn *e, const char *what) {
  return ft_set_error(ctx, FT_ERR_SHAPE, "%s: %s", ft_prim_get(e->prim)->name, what);
}

static size_t nbytes(const ft_aval *a) { return (size_t)ft_aval_size(a) * ft_dtype_size(a->dtype); }

/* ---------------------------------------------------------- polynomial */

/* Rounds v to a float dtype, as a binary op's result is (f16/bf16 through
 * f32, as ft_set_f64 stores them). */
static double round_to(ft_dtype dt, double v) {
  switch (dt) {
  case FT_F32: return (float)v;
  case FT_F16: return ft_f16_to_f32(ft_f64_to_f16((float)v));
  case FT_BF16: return ft_bf16_to_f32(ft_f64_to_bf16((float)v));
  default: return v;
  }
}

/* One Horner step acc*x + c in dtype dt, each operation rounded as the
 * interpreter's mul and add round theirs (complex64 in single precision). */
static void horner_step(ft_dtype dt, double *acc, double *acc_im, double x, double x_im, double c,
                        double c_im) {
  if (dt == FT_C64) {
    float a = (float)*acc, b = (float)*acc_im, p = (float)x, q = (float)x_im;
    float re = a * p - b * q, im = a * q + b * p;
    *acc = (float)(re + (float)c), *acc_im = (float)(im + (float)c_im);
  } else if (dt == FT_C128) {
    double re = *acc * x - *acc_im * x_im, im = *acc * x_im + *acc_im * x;
    *acc = re + c, *acc_im = im + c_im;
  } else {
    *acc = round_to(dt, round_to(dt, *acc * x) + c);
  }
}

/* For each operand, its element strides along the result's axes (0 where
 * it broadcasts: rank 0, or a size-1 axis). */
static bool bcast_strides(const ft_aval *o, const ft_aval *a, int64_t *st) {
  if (a->rank == 0) {
    memset(st, 0, sizeof(int64_t) * FT_MAX_RANK);
    return true;
  }
  if (a->rank != o->rank) return false;
  int64_t s = 1;
  for (int d = a->rank - 1; d >= 0; d--) {
    if (a->dims[d] != o->dims[d] && a->dims[d] != 1) return false;
    st[d] = a->dims[d] == 1 ? 0 : s;
    s *= a->dims[d];
  }
  return true;
}

ft_status ft_polynomial_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                             ft_array *const *out, void *scratch) {
  (void)scratch;
  enum { MAXOP = 64 };
  int n = e->n_in;
  const ft_aval *oa = &e->out[0]->aval;
  ft_dtype dt = oa->dtype;
  int64_t st[MAXOP][FT_MAX_RANK];
  if (n < 2 || n > MAXOP) return bad(ctx, e, "expects x and 1 to 63 coefficients");
  for (int k = 0; k < n; k++) {
    if (in[k]->aval.dtype != dt) return ft_set_error(ctx, FT_ERR_TYPE, "polynomial: operand dtypes differ");
    if (!bcast_strides(oa, &in[k]->aval, st[k])) return bad(ctx, e, "operand shapes do not broadcast");
  }
  if (dt == FT_BOOL) return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "polynomial of booleans");
  if (!out) return FT_OK;
  const ft_pval *u = ft_eqn_param(e, "unroll");
  int64_t thresh = u && u->tag == FT_PV_INT ? u->u.i : 8;
  int nc = n - 1;
  bool from_zero = nc > thresh; /* JAX's scan lowering starts from zeros */
  bool cpx = ft_dtype_is_complex(dt), flt = ft_dtype_is_float(dt);
  int64_t size = ft_aval_size(oa), idx[FT_MAX_RANK] = {0}, off[MAXOP] = {0};
  for (int64_t i = 0; i < size; i++) {
    if (cpx || flt) {
      double x, xi = 0, acc = 0, ai = 0;
      if (cpx) ft_get_c128(in[0], off[0], &x, &xi);
      else x = ft_get_f64(in[0], off[0]);
      for (int k = nc; k >= 1; k--) {
        double c, ci = 0;
        if (cpx) ft_get_c128(in[k], off[k], &c, &ci);
        else c = ft_get_f64(in[k], off[k]);
        if (k == nc && !from_zero) acc = c, ai = ci;
        else horner_step(dt, &acc, &ai, x, xi, c, ci);
      }
      if (cpx) ft_set_c128(out[0], i, acc, ai);
      else ft_set_f64(out[0], i, acc);
    } else { /* integers: wrapping arithmetic, truncated when stored */
      uint64_t x = (uint64_t)ft_get_i64(in[0], off[0]), acc = 0;
      for (int k = nc; k >= 1; k--) {
        uint64_t c = (uint64_t)ft_get_i64(in[k], off[k]);
        acc = k == nc && !from_zero ? c : acc * x + c;
      }
      ft_set_i64(out[0], i, (int64_t)acc);
    }
    for (int d = oa->rank - 1; d >= 0; d--) { /* next index; operand offsets follow */
      idx[d]++;
      for (int k = 0; k < n; k++) off[k] += st[k][d];
      if (idx[d] < oa->dims[d]) break;
      for (int k = 0; k < n; k++) off[k] -= st[k][d] * idx[d];
      idx[d] = 0;
    }
  }
  return FT_OK;
}

/* ----------------------------------------------------- stack, unstack */

/* The axis param, checked against the rank r of the stacked array. */
static bool axis_of(const ft_eqn *e, int r, int64_t *axis) {
  *axis = ft_param_int(e, "axis", -1);
  return *axis >= 0 && *axis < r;
}

/* Bytes of one operand slice below the axis, and the count above it. */
static void split_at(const ft_aval *stacked, int64_t axis, size_t *inner, int64_t *outer) {
  *outer = 1;
  for (int d = 0; d < axis; d++) *outer *= stacked->dims[d];
  int64_t in = 1;
  for (int d = (int)axis + 1; d < stacked->rank; d++) in *= stacked->dims[d];
  *inner = (size_t)in * ft_dtype_size(stacked->dtype);
}

ft_status ft_stack_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                        void *scratch) {
  (void)scratch;
  const ft_aval *oa = &e->out[0]->aval;
  int64_t axis, outer;
  size_t inner;
  if (!axis_of(e, oa->rank, &axis) || oa->dims[axis] != e->n_in) return bad(ctx, e, "bad axis");
  for (int k = 0; k < e->n_in; k++)
    if (nbytes(&in[k]->aval) * (size_t)e->n_in != nbytes(oa) || in[k]->aval.dtype != oa->dtype)
      return bad(ctx, e, "operand shapes differ from the result's slices");
  if (!out) return FT_OK;
  split_at(oa, axis, &inner, &outer);
  char *dst = out[0]->data;
  for (int64_t o = 0; o < outer; o++)
    for (int k = 0; k < e->n_in; k++, dst += inner)
      memcpy(dst, (const char *)in[k]->data + (size_t)o * inner, inner);
  return FT_OK;
}

ft_status ft_unstack_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                          void *scratch) {
  (void)scratch;
  const ft_aval *a = &in[0]->aval;
  int64_t axis, outer;
  size_t inner;
  if (!axis_of(e, a->rank, &axis) || a->dims[axis] != e->n_out) return bad(ctx, e, "bad axis");
  for (int k = 0; k < e->n_out; k++)
    if (nbytes(&e->out[k]->aval) * (size_t)e->n_out != nbytes(a)) return bad(ctx, e, "bad result shape");
  if (!out) return FT_OK;
  split_at(a, axis, &inner, &outer);
  const char *src = in[0]->data;
  for (int64_t o = 0; o < outer; o++)
    for (int k = 0; k < e->n_out; k++, src += inner)
      memcpy((char *)out[k]->data + (size_t)o * inner, src, inner);
  return FT_OK;
}

/* ------------------------------------------------------------------ tile */

ft_status ft_tile_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                       void *scratch) {
  (void)scratch;
  const ft_aval *a = &in[0]->aval, *oa = &e->out[0]->aval;
  int64_t reps[FT_MAX_RANK];
  if (ft_param_ints(e, "reps", reps, FT_MAX_RANK) != a->rank || oa->rank != a->rank ||
      a->dtype != oa->dtype)
    return bad(ctx, e, "reps does not match the operand");
  for (int d = 0; d < a->rank; d++)
    if (oa->dims[d] != a->dims[d] * reps[d]) return bad(ctx, e, "result shape is not operand * reps");
  if (!out) return FT_OK;
  size_t es = ft_dtype_size(a->dtype);
  int64_t size = ft_aval_size(oa), idx[FT_MAX_RANK] = {0}, src = 0, st[FT_MAX_RANK];
  for (int64_t d = a->rank - 1, s = 1; d >= 0; d--) st[d] = s, s *= a->dims[d];
  for (int64_t i = 0; i < size; i++) {
    memcpy((char *)out[0]->data + (size_t)i * es, (const char *)in[0]->data + (size_t)src * es, es);
    for (int d = oa->rank - 1; d >= 0; d--) { /* the source index wraps at the operand's size */
      idx[d]++;
      src += st[d];
      if (idx[d] % a->dims[d] == 0) src -= st[d] * a->dims[d];
      if (idx[d] < oa->dims[d]) break;
      idx[d] = 0;
    }
  }
  return FT_OK;
}

/* --------------------------------- optimization_barrier, platform_index, empty */

ft_status ft_opt_barrier_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                              ft_array *const *out, void *scratch) {
  (void)scratch;
  if (e->n_in != e->n_out) return bad(ctx, e, "operand and result counts differ");
  for (int k = 0; k < e->n_in; k++)
    if (!ft_aval_eq(&in[k]->aval, &e->out[k]->aval) &&
        !(in[k]->aval.dtype == e->out[k]->aval.dtype && ft_shape_eq(&in[k]->aval, &e->out[k]->aval)))
      return bad(ctx, e, "a result's type differs from its operand's");
  if (!out) return FT_OK;
  for (int k = 0; k < e->n_in; k++) memcpy(out[k]->data, in[k]->data, nbytes(&in[k]->aval));
  return FT_OK;
}

ft_status ft_platform_index_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                                 ft_array *const *out, void *scratch) {
  (void)in, (void)scratch;
  int i = ft_platform_index(ft_eqn_param(e, "platforms"));
  if (i < 0)
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "platform_index: no branch for the platform cpu "
                        "and no default");
  if (e->out[0]->aval.dtype != FT_I32 || e->out[0]->aval.rank != 0)
    return bad(ctx, e, "the result must be an int32 scalar");
  if (out) ft_set_i64(out[0], 0, i);
  return FT_OK;
}

ft_status ft_empty_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                        void *scratch) {
  (void)ctx, (void)e, (void)in, (void)scratch;
  if (out) memset(out[0]->data, 0, nbytes(&out[0]->aval));
  return FT_OK;
}

/* Frexp and Ldexp: JAX 0.12's bit-exact _frexp_impl and _ldexp_impl
 * (jax/_src/numpy/ufuncs.py) on the IEEE fields of each float dtype:
 * subnormal inputs become signed zero first; ±inf and NaN pass through. */
typedef struct fbits {
  int width, nexp, nmant;
} fbits;

static bool fbits_of(ft_dtype dt, fbits *f) {
  switch (dt) {
  case FT_F16: *f = (fbits){16, 5, 10}; return true;
  case FT_BF16: *f = (fbits){16, 8, 7}; return true;
  case FT_F32: *f = (fbits){32, 8, 23}; return true;
  case FT_F64: *f = (fbits){64, 11, 52}; return true;
  default: return false;
  }
}

static uint64_t get_bits(const ft_array *a, int64_t i, int bytes) {
  uint64_t u = 0;
  memcpy(&u, (const char *)a->data + (size_t)i * (size_t)bytes, (size_t)bytes); /* little-endian */
  return u;
}

static void put_bits(ft_array *a, int64_t i, int bytes, uint64_t u) {
  memcpy((char *)a->data + (size_t)i * (size_t)bytes, &u, (size_t)bytes);
}

ft_status ft_frexp_ldexp_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                              void *scratch) {
  (void)scratch;
  bool ld = e->prim == FT_P_LDEXP;
  const ft_aval *x = &in[0]->aval;
  fbits f;
  if (e->n_in != (ld ? 2 : 1) || e->n_out != (ld ? 1 : 2) || !fbits_of(x->dtype, &f) ||
      !ft_shape_eq(x, &e->out[0]->aval) || e->out[0]->aval.dtype != x->dtype ||
      (ld && (!ft_dtype_is_int(in[1]->aval.dtype) || !ft_shape_eq(x, &in[1]->aval))) ||
      (!ld && (e->out[1]->aval.dtype != FT_I32 || !ft_shape_eq(x, &e->out[1]->aval))))
    return ft_set_error(ctx, FT_ERR_TYPE, "%s: bad operands (%s)", ft_prim_get(e->prim)->name,
                        ft_dtype_name(x->dtype));
  if (!out) return FT_OK;
  const int bytes = f.width / 8;
  const uint64_t exp_mask = (UINT64_C(1) << f.nexp) - 1, mant_mask = (UINT64_C(1) << f.nmant) - 1;
  const uint64_t sign_mask = UINT64_C(1) << (f.width - 1);
  const int64_t bias = ((int64_t)1 << (f.nexp - 1)) - 1, max_shift = (int64_t)1 << (f.nexp + 1);
  const bool n_signed = ld && ft_dtype_is_signed(in[1]->aval.dtype);
  int64_t n = ft_aval_size(x);
  for (int64_t i = 0; i < n; i++) {
    uint64_t u = get_bits(in[0], i, bytes);
    uint64_t sign = u & sign_mask, exp = (u >> f.nmant) & exp_mask, mant = u & mant_mask;
    bool zero = exp == 0, special = exp == exp_mask; /* zero: ±0 or a flushed subnormal */
    if (!ld) {
      uint64_t m = special ? u : zero ? sign : sign | ((uint64_t)(bias - 1) << f.nmant) | mant;
      int64_t ex = special || zero ? 0 : (int64_t)exp - (bias - 1);
      put_bits(out[0], i, bytes, m);
      ft_set_i64(out[1], i, ex);
      continue;
    }
    int64_t s; /* the shift, clamped to [-max_shift, max_shift] as JAX does */
    if (n_signed) {
      int64_t v = ft_get_i64(in[1], i);
      s = v < -max_shift ? -max_shift : v > max_shift ? max_shift : v;
    } else {
      uint64_t v = ft_get_u64(in[1], i);
      s = v > (uint64_t)max_shift ? max_shift : (int64_t)v;
    }
    int64_t ne = (int64_t)exp + s;
    uint64_t r = ne <= 0 ? sign : ne >= (int64_t)exp_mask ? sign | (exp_mask << f.nmant)
                                                         : sign | ((uint64_t)ne << f.nmant) | mant;
    put_bits(out[0], i, bytes, special ? u : zero ? sign : r);
  }
  return FT_OK;
}

/* Nonzero: JAX 0.12's _nonzero_impl (hijax.py): per index of a's other
 * axes, the first `size` positions whose element is nonzero (NaN is), in
 * row-major order of the sorted `axes`; result k holds the position along
 * the k-th sorted axis; past the count, fill value k (broadcast over the
 * other axes) or 0. An empty a gives zeros (JAX's jnp.empty). */
ft_status ft_nonzero_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                          void *scratch) {
  (void)scratch;
  const ft_aval *a = &in[0]->aval;
  int64_t axes[FT_MAX_RANK], size = ft_param_int(e, "size", -1);
  int na = ft_param_ints(e, "axes", axes, FT_MAX_RANK);
  bool is_ax[FT_MAX_RANK] = {false};
  bool ok = na >= 1 && na == e->n_out && (e->n_in == 1 || e->n_in == 1 + na) && size >= 0 &&
            !ft_dtype_is_key(a->dtype) && a->dtype != FT_FLOAT0;
  for (int k = 0; ok && k < na; k++) {
    ok = axes[k] >= 0 && axes[k] < a->rank && !is_ax[axes[k]];
    if (ok) is_ax[axes[k]] = true;
  }
  int nb = 0;
  int64_t bdims[FT_MAX_RANK], sax[FT_MAX_RANK];
  for (int i = 0, k = 0; ok && i < a->rank; i++)
    if (is_ax[i]) sax[k++] = i; /* the axes, sorted */
    else bdims[nb++] = a->dims[i];
  for (int k = 0; ok && k < e->n_out; k++) {
    const ft_aval *o = &e->out[k]->aval;
    ok = ft_dtype_is_int(o->dtype) && o->rank == nb + 1 && o->dims[nb] == size;
    for (int i = 0; ok && i < nb; i++) ok = o->dims[i] == bdims[i];
  }
  for (int k = 1; ok && k < e->n_in; k++) {
    const ft_aval *fv = &in[k]->aval;
    ok = ft_dtype_is_int(fv->dtype) && fv->rank <= nb;
    for (int i = 0; ok && i < fv->rank; i++) ok = fv->dims[i] == 1 || fv->dims[i] == bdims[nb - fv->rank + i];
  }
  if (!ok) return ft_set_error(ctx, FT_ERR_TYPE, "Nonzero: bad operands, results or params");
  if (!out) return FT_OK;
  int64_t ast[FT_MAX_RANK], s = 1;
  for (int i = a->rank - 1; i >= 0; i--) ast[i] = s, s *= a->dims[i];
  int64_t nbatch = 1, nsub = 1;
  for (int i = 0; i < nb; i++) nbatch *= bdims[i];
  for (int k = 0; k < na; k++) nsub *= a->dims[sax[k]];
  bool empty = ft_aval_size(a) == 0;
  ft_dtype dt = a->dtype;
  int64_t bidx[FT_MAX_RANK] = {0};
  for (int64_t b = 0; b < nbatch; b++) {
    int64_t base = 0;
    for (int i = 0, j = 0; i < a->rank; i++)
      if (!is_ax[i]) base += bidx[j++] * ast[i];
    int64_t cnt = 0;
    for (int64_t p = 0; !empty && p < nsub && cnt < size; p++) {
      int64_t off = base, rem = p, pos[FT_MAX_RANK];
      for (int k = na - 1; k >= 0; k--) {
        pos[k] = rem % a->dims[sax[k]], rem /= a->dims[sax[k]];
        off += pos[k] * ast[sax[k]];
      }
      bool nz;
      if (ft_dtype_is_complex(dt)) {
        double re, im;
        ft_get_c128(in[0], off, &re, &im);
        nz = re != 0 || im != 0;
      } else if (ft_dtype_is_float(dt)) {
        nz = ft_get_f64(in[0], off) != 0;
      } else {
        nz = ft_get_u64(in[0], off) != 0;
      }
      if (!nz) continue;
      for (int k = 0; k < na; k++) ft_set_i64(out[k], b * size + cnt, pos[k]);
      cnt++;
    }
    for (int k = 0; k < na; k++)
      for (int64_t j = cnt; j < size; j++) {
        int64_t v = 0;
        if (e->n_in > 1 && !empty) { /* fill value k at this batch index, broadcast */
          const ft_aval *fv = &in[1 + k]->aval;
          int64_t fo = 0;
          for (int i = 0; i < fv->rank; i++) {
            int bi = nb - fv->rank + i;
            fo = fo * fv->dims[i] + (fv->dims[i] == 1 ? 0 : bidx[bi]);
          }
          v = ft_get_i64(in[1 + k], fo);
        }
        ft_set_i64(out[k], b * size + j, v);
      }
    for (int i = nb - 1; i >= 0; i--) {
      if (++bidx[i] < bdims[i]) break;
      bidx[i] = 0;
    }
  }
  return FT_OK;
}

/* approx_top_k on the CPU (XLA's exact fallback): per line along the
 * reduction dimension, a stable sort of the positions by value (descending
 * for is_max_k), then the first k. XLA runs the max with k < n on its TopK
 * kernel, which orders by the IEEE total order (-NaN < -inf, -0 < +0 <
 * +NaN); the other forms sort with every NaN above every number and -0 ==
 * +0 (measured on JAX 0.12's CPU results). scratch: 2 * n int64
 * (ft_approx_top_k_scratch). */
static uint64_t atk_key(double x, bool total) {
  uint64_t u;
  if (!total && x == 0) x = 0.0;
  if (!total && x != x) x = NAN;
  memcpy(&u, &x, 8);
  return (u >> 63) ? ~u : u | (UINT64_C(1) << 63);
}

typedef struct atk_line {
  const ft_array *a;
  int64_t base, stride;
  bool max, total;
} atk_line;

/* whether position i goes before j (a strict preference; ties keep order) */
static bool atk_before(const atk_line *L, int64_t i, int64_t j) {
  uint64_t x = atk_key(ft_get_f64(L->a, L->base + i * L->stride), L->total);
  uint64_t y = atk_key(ft_get_f64(L->a, L->base + j * L->stride), L->total);
  return L->max ? x > y : x < y;
}

static void atk_sort(const atk_line *L, int64_t *p, int64_t *tmp, int64_t n) {
  if (n < 2) return;
  int64_t h = n / 2, i = 0, j = h, k = 0;
  atk_sort(L, p, tmp, h);
  atk_sort(L, p + h, tmp, n - h);
  while (i < h && j < n) tmp[k++] = atk_before(L, p[j], p[i]) ? p[j++] : p[i++];
  while (i < h) tmp[k++] = p[i++];
  while (j < n) tmp[k++] = p[j++];
  memcpy(p, tmp, sizeof *p * (size_t)n);
}

static int64_t atk_dim(const ft_eqn *e, const ft_aval *a) {
  int64_t d = ft_param_int(e, "reduction_dimension", -1);
  return d < 0 ? d + a->rank : d;
}

size_t ft_approx_top_k_scratch(const ft_eqn *e) {
  const ft_aval *a = &e->in[0]->aval;
  int64_t d = atk_dim(e, a);
  return d >= 0 && d < a->rank ? sizeof(int64_t) * (size_t)(2 * a->dims[d] + 1) : 0;
}

ft_status ft_approx_top_k_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                               void *scratch) {
  const ft_aval *a = &in[0]->aval;
  int64_t d = atk_dim(e, a), k = ft_param_int(e, "k", -1);
  bool ok = e->n_in == 1 && e->n_out == 2 && d >= 0 && d < a->rank && k >= 1 && k <= a->dims[d] &&
            ft_dtype_is_float(a->dtype) && ft_param_bool(e, "aggregate_to_topk", true);
  for (int o = 0; ok && o < 2; o++) {
    const ft_aval *oa = &e->out[o]->aval;
    ok = oa->rank == a->rank && oa->dtype == (o ? FT_I32 : a->dtype);
    for (int i = 0; ok && i < a->rank; i++) ok = oa->dims[i] == (i == d ? k : a->dims[i]);
  }
  if (!ok) return ft_set_error(ctx, FT_ERR_TYPE, "approx_top_k: bad operand, results or params");
  if (!out) return FT_OK;
  bool mx = ft_param_bool(e, "is_max_k", true);
  int64_t stride = 1;
  for (int i = a->rank - 1; i > d; i--) stride *= a->dims[i];
  int64_t n = a->dims[d], lines = n ? ft_aval_size(a) / n : 0;
  int64_t *perm = scratch;
  for (int64_t l = 0; l < lines; l++) {
    atk_line L = {in[0], (l / stride) * stride * n + l % stride, stride, mx, mx && k < n};
    int64_t obase = (l / stride) * stride * k + l % stride;
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    atk_sort(&L, perm, perm + n, n);
    size_t es = ft_dtype_size(a->dtype);
    for (int64_t i = 0; i < k; i++) {
      memcpy((char *)out[0]->data + (size_t)(obase + i * stride) * es,
             (const char *)in[0]->data + (size_t)(L.base + perm[i] * stride) * es, es);
      ft_set_i64(out[1], obase + i * stride, perm[i]);
    }
  }
  return FT_OK;
}
