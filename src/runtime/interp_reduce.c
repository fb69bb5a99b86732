/* src/runtime/interp_reduce.c: reductions (in the canonical order of
 * docs/determinism.md), argmax/argmin, cumulative ops and sort. */
#include <math.h>
#include <string.h>

#include "math_adapter.h"
#include "runtime.h"

/* ------------------------------------------------------- canonical order */
#define DEF_FOLD(NAME, T, OP, ID, RND, ...)                                    \
  T NAME(const T *x, int64_t n, int64_t stride __VA_ARGS__) {                  \
    if (n == 0) return ID;                                                     \
    if (n == 1) return x[0];                                                   \
    T total = ID;                                                              \
    for (int64_t b0 = 0; b0 < n; b0 += FT_SUM_BLOCK) {                         \
      int64_t m = n - b0 < FT_SUM_BLOCK ? n - b0 : FT_SUM_BLOCK;               \
      T acc[FT_SUM_LANES];                                                     \
      for (int l = 0; l < FT_SUM_LANES; l++) acc[l] = ID;                      \
      for (int64_t k = 0; k < m; k++)                                          \
        acc[k % FT_SUM_LANES] = RND(acc[k % FT_SUM_LANES] OP x[(b0 + k) * stride]); \
      for (int w = FT_SUM_LANES / 2; w >= 1; w /= 2)                           \
        for (int l = 0; l < w; l++) acc[l] = RND(acc[l] OP acc[l + w]);        \
      total = b0 == 0 ? acc[0] : RND(total OP acc[0]);                         \
    }                                                                          \
    return total;                                                              \
  }
#define RND_NONE(v) (v)
#define RND_DT(v) ft_round_to(rdt, (v))
DEF_FOLD(ft_sum_f64, double, +, 0.0, RND_NONE)
DEF_FOLD(ft_prod_f64, double, *, 1.0, RND_NONE)
DEF_FOLD(ft_sum_f32, float, +, 0.0f, RND_DT, , ft_dtype rdt)
DEF_FOLD(ft_prod_f32, float, *, 1.0f, RND_DT, , ft_dtype rdt)

/* ------------------------------------------------------------- reductions */
typedef struct red_plan {
  int64_t K;          /* reduced elements per output */
  int64_t *roff;      /* their offsets in the input, row-major over reduced axes */
  int kept[FT_MAX_RANK], nkept;
  int64_t kstride[FT_MAX_RANK];
} red_plan;

static void c_strides(const ft_aval *a, int64_t *st) {
  int64_t s = 1;
  for (int i = a->rank - 1; i >= 0; i--) st[i] = s, s *= a->dims[i];
}

static bool next_index(int rank, const int64_t *dims, int64_t *idx) {
  for (int i = rank - 1; i >= 0; i--) {
    if (++idx[i] < dims[i]) return true;
    idx[i] = 0;
  }
  return false;
}

/* roff: storage for the offsets of the reduced elements (K of them, at
 * least one slot), the caller's scratch. */
static ft_status plan_reduce(ft_ctx *ctx, const ft_aval *in, const int64_t *axes, int na,
                             red_plan *p, int64_t *roff) {
  bool red[FT_MAX_RANK] = {0};
  int64_t st[FT_MAX_RANK], rdims[FT_MAX_RANK], rst[FT_MAX_RANK];
  int nr = 0;
  memset(p, 0, sizeof *p);
  for (int i = 0; i < na; i++) {
    if (axes[i] < 0 || axes[i] >= in->rank || red[axes[i]])
      return ft_set_error(ctx, FT_ERR_TYPE, "bad reduction axes");
    red[axes[i]] = true;
  }
  c_strides(in, st);
  p->K = 1;
  for (int d = 0; d < in->rank; d++) {
    if (red[d]) rdims[nr] = in->dims[d], rst[nr++] = st[d], p->K *= in->dims[d];
    else p->kept[p->nkept] = d, p->kstride[p->nkept++] = st[d];
  }
  p->roff = roff;
  if (p->K == 0 || !roff) return FT_OK;
  int64_t idx[FT_MAX_RANK] = {0}, k = 0;
  do {
    int64_t off = 0;
    for (int r = 0; r < nr; r++) off += idx[r] * rst[r];
    p->roff[k++] = off;
  } while (next_index(nr, rdims, idx));
  return FT_OK;
}

/* Offset in the input of output element `o` (row-major over kept axes). */
static int64_t kept_base(const red_plan *p, const ft_aval *in, int64_t o) {
  int64_t base = 0;
  for (int i = p->nkept - 1; i >= 0; i--) {
    int64_t dim = in->dims[p->kept[i]];
    base += (o % dim) * p->kstride[i];
    o /= dim;
  }
  return base;
}

static double fold_max(double a, double b, bool is_max) {
  if (a != a) return a;
  if (b != b) return b;
  if (a == b) return (signbit(a) == is_max) ? b : a; /* -0 < +0 */
  return is_max ? (a > b ? a : b) : (a < b ? a : b);
}

/* A float's bits as an integer in the float order, -0 < +0 (the JIT's
 * order_key, codegen.c): the magnitude bits flipped when the sign is set.
 * A positive NaN lands above +inf, a negative one below -inf. f32 and the
 * 16-bit types key their f32 bits, f64 its own. An involution. */
static int64_t order_key(int64_t bits, bool f64) {
  return bits < 0 ? bits ^ (f64 ? INT64_MAX : INT32_MAX) : bits;
}
static int64_t maxmin_key(double v, bool f64) {
  if (f64) {
    int64_t b;
    memcpy(&b, &v, 8);
    return order_key(b, true);
  }
  float f = (float)v;
  int32_t b;
  memcpy(&b, &f, 4);
  return order_key(b, false);
}
static double key_float(int64_t k, bool f64) {
  int64_t b = order_key(k, f64);
  if (f64) {
    double v;
    memcpy(&v, &b, 8);
    return v;
  }
  int32_t w = (int32_t)b;
  float f;
  memcpy(&f, &w, 4);
  return f;
}

/* reduce_max/reduce_min of floats: NaN wins, -0 < +0 (XLA's max/min), in
 * an order-free form that gives the JIT's lanes and tree the same result
 * as this sequential fold, bit for bit: the largest and smallest keys; a
 * positive NaN present gives the largest key (the greatest such NaN), else
 * a negative NaN the smallest, else the extreme. */
static double reduce_maxmin_float(const ft_array *a, int64_t base, const red_plan *p, bool mx,
                                  bool f64) {
  int64_t kpinf = maxmin_key(INFINITY, f64), kninf = maxmin_key(-INFINITY, f64);
  int64_t hi = kninf, lo = kpinf;
  for (int64_t k = 0; k < p->K; k++) {
    int64_t x = maxmin_key(ft_get_f64(a, base + p->roff[k]), f64);
    if (x > hi) hi = x;
    if (x < lo) lo = x;
  }
  int64_t r = hi > kpinf ? hi : lo < kninf ? lo : mx ? hi : lo;
  return key_float(r, f64);
}

static ft_status reduce_float(const ft_eqn *e, const ft_array *a, ft_array *o, const red_plan *p,
                              void *buf) {
  ft_dtype dt = a->aval.dtype;
  int64_t n = ft_array_size(o);
  bool f64 = dt == FT_F64;
  for (int64_t i = 0; i < n; i++) {
    int64_t base = kept_base(p, &a->aval, i);
    double r = 0;
    switch (e->prim) {
    case FT_P_REDUCE_SUM: case FT_P_REDUCE_PROD:
      if (f64) {
        double *x = buf;
        for (int64_t k = 0; k < p->K; k++) x[k] = ft_get_f64(a, base + p->roff[k]);
        r = e->prim == FT_P_REDUCE_SUM ? ft_sum_f64(x, p->K, 1) : ft_prod_f64(x, p->K, 1);
      } else {
        float *x = buf;
        for (int64_t k = 0; k < p->K; k++) x[k] = (float)ft_get_f64(a, base + p->roff[k]);
        r = e->prim == FT_P_REDUCE_SUM ? ft_sum_f32(x, p->K, 1, dt) : ft_prod_f32(x, p->K, 1, dt);
      }
      break;
    case FT_P_REDUCE_MAX: case FT_P_REDUCE_MIN: {
      r = reduce_maxmin_float(a, base, p, e->prim == FT_P_REDUCE_MAX, f64);
      break;
    }
    case FT_P_REDUCE_AND: case FT_P_REDUCE_OR: {
      bool all = true, any = false;
      for (int64_t k = 0; k < p->K; k++) {
        bool v = ft_get_f64(a, base + p->roff[k]) != 0;
        all &= v, any |= v;
      }
      r = e->prim == FT_P_REDUCE_AND ? all : any;
      break;
    }
    default: return FT_ERR_UNSUPPORTED;
    }
    ft_set_f64(o, i, r);
  }
  return FT_OK;
}

static ft_status reduce_int(const ft_eqn *e, const ft_array *a, ft_array *o, const red_plan *p) {
  ft_dtype dt = a->aval.dtype;
  bool sgn = ft_dtype_is_signed(dt);
  int bits = ft_dtype_bits(dt);
  int64_t n = ft_array_size(o);
  int64_t lo = sgn ? ft_int_wrap((int64_t)(UINT64_C(1) << (bits - 1)), bits, true) : 0;
  int64_t hi = sgn ? ~lo : ft_int_wrap(-1, bits, false);
  if (dt == FT_BOOL) lo = 0, hi = 1;
  for (int64_t i = 0; i < n; i++) {
    int64_t base = kept_base(p, &a->aval, i);
    uint64_t acc;
    switch (e->prim) {
    case FT_P_REDUCE_SUM: acc = 0; break;
    case FT_P_REDUCE_PROD: acc = 1; break;
    case FT_P_REDUCE_MAX: acc = (uint64_t)lo; break;
    case FT_P_REDUCE_MIN: acc = (uint64_t)hi; break;
    case FT_P_REDUCE_AND: acc = dt == FT_BOOL ? 1 : ~UINT64_C(0); break;
    case FT_P_REDUCE_OR: case FT_P_REDUCE_XOR: acc = 0; break;
    default: return FT_ERR_UNSUPPORTED;
    }
    for (int64_t k = 0; k < p->K; k++) {
      uint64_t v = (uint64_t)ft_get_i64(a, base + p->roff[k]);
      switch (e->prim) {
      case FT_P_REDUCE_SUM: acc += v; break;
      case FT_P_REDUCE_PROD: acc *= v; break;
      case FT_P_REDUCE_MAX:
        if (sgn ? (int64_t)v > (int64_t)acc : v > acc) acc = v;
        break;
      case FT_P_REDUCE_MIN:
        if (sgn ? (int64_t)v < (int64_t)acc : v < acc) acc = v;
        break;
      case FT_P_REDUCE_AND: acc &= v; break;
      case FT_P_REDUCE_XOR: acc ^= v; break;
      default: acc |= v; break;
      }
    }
    if (dt == FT_BOOL && (e->prim == FT_P_REDUCE_SUM || e->prim == FT_P_REDUCE_PROD))
      return FT_ERR_UNSUPPORTED;
    ft_set_i64(o, i, (int64_t)acc);
  }
  return FT_OK;
}

/* The complex product of x[0..n) (interleaved re, im), in the canonical
 * order of DEF_FOLD (lanes within blocks, then the blocks in order); each
 * product (ar br - ai bi, ar bi + ai br) in the dtype's precision, as
 * XLA's complex multiply. */
#define DEF_CPROD(NAME, T)                                                                \
  static void NAME(const T *x, int64_t n, double *rr, double *ri) {                       \
    T tr = 1, ti = 0;                                                                     \
    for (int64_t b0 = 0; b0 < n; b0 += FT_SUM_BLOCK) {                                    \
      int64_t m = n - b0 < FT_SUM_BLOCK ? n - b0 : FT_SUM_BLOCK;                          \
      T ar[FT_SUM_LANES], ai[FT_SUM_LANES];                                               \
      for (int l = 0; l < FT_SUM_LANES; l++) ar[l] = 1, ai[l] = 0;                        \
      for (int64_t k = 0; k < m; k++) {                                                   \
        int l = (int)(k % FT_SUM_LANES);                                                  \
        T xr = x[2 * (b0 + k)], xi = x[2 * (b0 + k) + 1];                                 \
        T pr = ar[l] * xr - ai[l] * xi, pi = ar[l] * xi + ai[l] * xr;                     \
        ar[l] = pr, ai[l] = pi;                                                           \
      }                                                                                   \
      for (int w = FT_SUM_LANES / 2; w >= 1; w /= 2)                                      \
        for (int l = 0; l < w; l++) {                                                     \
          T pr = ar[l] * ar[l + w] - ai[l] * ai[l + w], pi = ar[l] * ai[l + w] + ai[l] * ar[l + w]; \
          ar[l] = pr, ai[l] = pi;                                                         \
        }                                                                                 \
      if (b0 == 0) tr = ar[0], ti = ai[0];                                                \
      else {                                                                              \
        T pr = tr * ar[0] - ti * ai[0], pi = tr * ai[0] + ti * ar[0];                     \
        tr = pr, ti = pi;                                                                 \
      }                                                                                   \
    }                                                                                     \
    if (n == 1) tr = x[0], ti = x[1];                                                     \
    *rr = tr, *ri = ti;                                                                   \
  }
DEF_CPROD(cprod_f32, float)
DEF_CPROD(cprod_f64, double)

static ft_status reduce_cpx(const ft_eqn *e, const ft_array *a, ft_array *o, const red_plan *p,
                            void *buf) {
  if (e->prim != FT_P_REDUCE_SUM && e->prim != FT_P_REDUCE_PROD) return FT_ERR_UNSUPPORTED;
  bool prod = e->prim == FT_P_REDUCE_PROD;
  int64_t n = ft_array_size(o);
  for (int64_t i = 0; i < n; i++) {
    int64_t base = kept_base(p, &a->aval, i);
    double rr, ri, re, im;
    if (a->aval.dtype == FT_C64) {
      float *x = buf;
      for (int64_t k = 0; k < p->K; k++) {
        ft_get_c128(a, base + p->roff[k], &re, &im);
        x[2 * k] = (float)re, x[2 * k + 1] = (float)im;
      }
      if (prod) cprod_f32(x, p->K, &rr, &ri);
      else rr = ft_sum_f32(x, p->K, 2, FT_F32), ri = ft_sum_f32(x + 1, p->K, 2, FT_F32);
    } else {
      double *x = buf;
      for (int64_t k = 0; k < p->K; k++) ft_get_c128(a, base + p->roff[k], &x[2 * k], &x[2 * k + 1]);
      if (prod) cprod_f64(x, p->K, &rr, &ri);
      else rr = ft_sum_f64(x, p->K, 2), ri = ft_sum_f64(x + 1, p->K, 2);
    }
    ft_set_c128(o, i, rr, ri);
  }
  return FT_OK;
}

/* argmax/argmin along one axis: the first extreme; a NaN counts as the
 * extreme (the first NaN wins); -0 and +0 tie. */
static ft_status arg_reduce(const ft_eqn *e, const ft_array *a, ft_array *o, const red_plan *p) {
  ft_dtype dt = a->aval.dtype;
  bool mx = e->prim == FT_P_ARGMAX, fl = ft_dtype_is_float(dt), sgn = ft_dtype_is_signed(dt);
  if (ft_dtype_is_complex(dt)) return FT_ERR_UNSUPPORTED;
  int64_t n = ft_array_size(o);
  for (int64_t i = 0; i < n; i++) {
    int64_t base = kept_base(p, &a->aval, i), best = 0;
    for (int64_t k = 1; k < p->K; k++) {
      int64_t ob = base + p->roff[best], ok = base + p->roff[k];
      bool take;
      if (fl) {
        double b = ft_get_f64(a, ob), x = ft_get_f64(a, ok);
        if (b != b) break;
        take = x != x || (mx ? x > b : x < b);
      } else if (sgn) {
        int64_t b = ft_get_i64(a, ob), x = ft_get_i64(a, ok);
        take = mx ? x > b : x < b;
      } else {
        uint64_t b = ft_get_u64(a, ob), x = ft_get_u64(a, ok);
        take = mx ? x > b : x < b;
      }
      if (take) best = k;
    }
    ft_set_i64(o, i, best);
  }
  return FT_OK;
}

ft_status ft_interp_reduce(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  return ft_interp_via_into(ctx, e, in, out);
}

/* The elements reduced into each output (the product of the reduced
 * dims), or -1 when the axes are bad. */
static int64_t reduce_count(const ft_eqn *e, const ft_aval *a) {
  int64_t axes[FT_MAX_RANK], K = 1;
  int na = ft_param_ints(e, "axes", axes, FT_MAX_RANK);
  if (na < 0) return -1;
  for (int i = 0; i < na; i++) {
    if (axes[i] < 0 || axes[i] >= a->rank) return -1;
    K *= a->dims[axes[i]];
  }
  return K;
}

/* The offsets of the reduced elements, then 2 doubles per element (the
 * values of a float or complex sum gathered for the canonical fold). */
size_t ft_reduce_scratch(const ft_eqn *e) {
  int64_t K = e->n_in == 1 ? reduce_count(e, &e->in[0]->aval) : -1;
  if (K < 1) K = 1;
  return (sizeof(int64_t) + 2 * sizeof(double)) * (size_t)K;
}

/* Whether the fold of prim is defined on dt (what the bodies compute). */
static bool reduce_defined(ft_prim p, ft_dtype dt) {
  bool arg = p == FT_P_ARGMAX || p == FT_P_ARGMIN;
  if (ft_dtype_is_complex(dt)) return p == FT_P_REDUCE_SUM || p == FT_P_REDUCE_PROD;
  if (arg || ft_dtype_is_float(dt)) return true;
  if (dt == FT_BOOL && (p == FT_P_REDUCE_SUM || p == FT_P_REDUCE_PROD)) return false;
  return ft_dtype_is_int(dt) || dt == FT_BOOL;
}

ft_status ft_reduce_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                         void *scratch) {
  const ft_array *a = in[0];
  int64_t axes[FT_MAX_RANK];
  int na = ft_param_ints(e, "axes", axes, FT_MAX_RANK);
  if (na < 0) return ft_set_error(ctx, FT_ERR_TYPE, "bad or missing param: axes");
  red_plan p;
  ft_status st = plan_reduce(ctx, &a->aval, axes, na, &p, out ? scratch : NULL);
  if (st) return st;
  const ft_aval *oa = &e->out[0]->aval;
  if (p.K && ft_aval_size(oa) != ft_aval_size(&a->aval) / p.K)
    return ft_set_error(ctx, FT_ERR_SHAPE, "the result shape does not match the reduction");
  bool arg = e->prim == FT_P_ARGMAX || e->prim == FT_P_ARGMIN;
  if (arg && (na != 1 || p.K == 0))
    return ft_set_error(ctx, FT_ERR_SHAPE, "%s needs one non-empty axis", ft_prim_get(e->prim)->name);
  ft_dtype dt = a->aval.dtype;
  if (!reduce_defined(e->prim, dt))
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "%s is not defined for dtype %s",
                        ft_prim_get(e->prim)->name, ft_dtype_name(dt));
  if (!out) return FT_OK;
  void *buf = (int64_t *)scratch + (p.K ? p.K : 1);
  if (arg) st = arg_reduce(e, a, out[0], &p);
  else if (ft_dtype_is_float(dt)) st = reduce_float(e, a, out[0], &p, buf);
  else if (ft_dtype_is_complex(dt)) st = reduce_cpx(e, a, out[0], &p, buf);
  else st = reduce_int(e, a, out[0], &p);
  if (st == FT_ERR_UNSUPPORTED) /* reduce_defined above rules these out */
    ft_set_error(ctx, st, "%s is not defined for dtype %s", ft_prim_get(e->prim)->name,
                 ft_dtype_name(dt));
  return st;
}

/* ------------------------------------------------------------- cumulative */
/* JAX's logaddexp: max + log1p(exp(-|a - b|)), NaN-safe for equal infinities. */
static double logaddexp_f64(double a, double b) {
  double m = fold_max(a, b, true), d = a - b;
  if (d != d) return a + b;
  return m + FTM(log1p, f64)(FTM(exp, f64)(-fabs(d)));
}
static float logaddexp_f32(float a, float b) {
  float m = (float)fold_max(a, b, true), d = a - b;
  if (d != d) return a + b;
  return m + FTM(log1p, f32)(FTM(exp, f32)(-fabsf(d)));
}

/* Running fold along the axis, starting from the identity, in the scan
 * direction: out[i] = (((id op x[first]) op ...) op x[i]). */
ft_status ft_interp_cumulative(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  return ft_interp_via_into(ctx, e, in, out);
}

ft_status ft_cumulative_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                             ft_array *const *out, void *scratch) {
  (void)scratch;
  const ft_array *a = in[0];
  int64_t axis = ft_param_int(e, "axis", -1);
  bool rev = ft_param_bool(e, "reverse", false);
  if (axis < 0 || axis >= a->aval.rank)
    return ft_set_error(ctx, FT_ERR_TYPE, "bad or missing param: axis");
  ft_dtype dt = a->aval.dtype;
  bool fl = ft_dtype_is_float(dt), sgn = ft_dtype_is_signed(dt);
  ft_prim p = e->prim;
  if (ft_dtype_is_complex(dt) || (!fl && p == FT_P_CUMLOGSUMEXP) ||
      (dt == FT_BOOL && (p == FT_P_CUMSUM || p == FT_P_CUMPROD)))
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "%s is not defined for dtype %s",
                        ft_prim_get(p)->name, ft_dtype_name(dt));
  if (!out) return FT_OK;
  ft_array *o = out[0];
  int64_t st_[FT_MAX_RANK];
  c_strides(&a->aval, st_);
  int64_t len = a->aval.dims[axis], stride = st_[axis], n = ft_array_size(a);
  int64_t lines = len ? n / len : 0;
  for (int64_t l = 0; l < lines; l++) {
    int64_t base = (l / stride) * stride * len + l % stride;
    double fa = p == FT_P_CUMSUM ? 0.0 : p == FT_P_CUMPROD ? 1.0
              : p == FT_P_CUMMIN ? INFINITY : -INFINITY;
    uint64_t ia = p == FT_P_CUMPROD ? 1 : 0;
    for (int64_t t = 0; t < len; t++) {
      int64_t i = base + (rev ? len - 1 - t : t) * stride;
      if (fl && dt != FT_F64) {
        float x = (float)ft_get_f64(a, i), acc = (float)fa, r;
        switch (p) {
        case FT_P_CUMSUM: r = acc + x; break;
        case FT_P_CUMPROD: r = acc * x; break;
        case FT_P_CUMMAX: r = (float)fold_max(acc, x, true); break;
        case FT_P_CUMMIN: r = (float)fold_max(acc, x, false); break;
        default: r = logaddexp_f32(acc, x); break;
        }
        fa = ft_round_to(dt, r);
        ft_set_f64(o, i, fa);
      } else if (fl) {
        double x = ft_get_f64(a, i);
        switch (p) {
        case FT_P_CUMSUM: fa = fa + x; break;
        case FT_P_CUMPROD: fa = fa * x; break;
        case FT_P_CUMMAX: fa = fold_max(fa, x, true); break;
        case FT_P_CUMMIN: fa = fold_max(fa, x, false); break;
        default: fa = logaddexp_f64(fa, x); break;
        }
        ft_set_f64(o, i, fa);
      } else {
        uint64_t x = (uint64_t)ft_get_i64(a, i);
        bool first = t == 0;
        switch (p) {
        case FT_P_CUMSUM: ia += x; break;
        case FT_P_CUMPROD: ia *= x; break;
        case FT_P_CUMMAX:
          if (first || (sgn ? (int64_t)x > (int64_t)ia : x > ia)) ia = x;
          break;
        default:
          if (first || (sgn ? (int64_t)x < (int64_t)ia : x < ia)) ia = x;
          break;
        }
        ft_set_i64(o, i, (int64_t)ia);
      }
    }
  }
  return FT_OK;
}

/* -------------------------------------------------------------------- sort */
/* A key that orders floats as lax.sort's comparator does
 * (_canonicalize_float_for_sort): every zero is made +0.0 and every NaN one
 * positive NaN, so -0.0 and +0.0 compare equal (the stable sort keeps their
 * order) and all NaNs, whatever their sign, sort after +inf, equal. */
static uint64_t float_key(double x) {
  uint64_t u;
  if (x == 0) x = 0.0;
  if (x != x) x = NAN;
  memcpy(&u, &x, 8);
  return (u >> 63) ? ~u : u | (UINT64_C(1) << 63);
}

typedef struct sort_ctx {
  ft_array *const *ops;
  int nkeys;
  int64_t base, stride;
} sort_ctx;

static int cmp_elem(const sort_ctx *s, int64_t i, int64_t j) {
  for (int k = 0; k < s->nkeys; k++) {
    const ft_array *a = s->ops[k];
    int64_t oi = s->base + i * s->stride, oj = s->base + j * s->stride;
    ft_dtype dt = a->aval.dtype;
    int c;
    if (ft_dtype_is_complex(dt)) {
      double ar, ai, br, bi;
      ft_get_c128(a, oi, &ar, &ai);
      ft_get_c128(a, oj, &br, &bi);
      uint64_t x = float_key(ar), y = float_key(br);
      if (x == y) x = float_key(ai), y = float_key(bi);
      c = x < y ? -1 : x > y;
    } else if (ft_dtype_is_float(dt)) {
      uint64_t x = float_key(ft_get_f64(a, oi)), y = float_key(ft_get_f64(a, oj));
      c = x < y ? -1 : x > y;
    } else if (ft_dtype_is_signed(dt)) {
      int64_t x = ft_get_i64(a, oi), y = ft_get_i64(a, oj);
      c = x < y ? -1 : x > y;
    } else {
      uint64_t x = ft_get_u64(a, oi), y = ft_get_u64(a, oj);
      c = x < y ? -1 : x > y;
    }
    if (c) return c;
  }
  return 0;
}

/* Stable merge sort of the permutation p[0..n) (tmp: scratch of n). */
static void merge_sort(const sort_ctx *s, int64_t *p, int64_t *tmp, int64_t n) {
  if (n < 2) return;
  int64_t h = n / 2;
  merge_sort(s, p, tmp, h);
  merge_sort(s, p + h, tmp, n - h);
  int64_t i = 0, j = h, k = 0;
  while (i < h && j < n) tmp[k++] = cmp_elem(s, p[j], p[i]) < 0 ? p[j++] : p[i++];
  while (i < h) tmp[k++] = p[i++];
  while (j < n) tmp[k++] = p[j++];
  memcpy(p, tmp, sizeof *p * (size_t)n);
}

ft_status ft_interp_sort(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  return ft_interp_via_into(ctx, e, in, out);
}

/* scratch: the permutation of a line and the merge buffer, 2 * len + 1
 * int64 (ft_rule_scratch). */
ft_status ft_sort_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                       void *scratch) {
  int64_t dim = ft_param_int(e, "dimension", -1), nkeys = ft_param_int(e, "num_keys", 1);
  const ft_aval *av = &in[0]->aval;
  if (e->n_in < 1 || e->n_out != e->n_in || dim < 0 || dim >= av->rank || nkeys < 1 ||
      nkeys > e->n_in)
    return ft_set_error(ctx, FT_ERR_TYPE, "sort: bad operands or params");
  for (int k = 1; k < e->n_in; k++)
    if (!ft_shape_eq(&in[k]->aval, av))
      return ft_set_error(ctx, FT_ERR_SHAPE, "sort: operand %d has another shape", k);
  if (!out) return FT_OK;
  int64_t cst[FT_MAX_RANK];
  c_strides(av, cst);
  int64_t len = av->dims[dim], stride = cst[dim], n = ft_aval_size(av);
  int64_t lines = len ? n / len : 0;
  int64_t *perm = scratch;
  for (int64_t l = 0; l < lines; l++) {
    sort_ctx s = {in, (int)nkeys, (l / stride) * stride * len + l % stride, stride};
    for (int64_t i = 0; i < len; i++) perm[i] = i;
    merge_sort(&s, perm, perm + len, len);
    for (int k = 0; k < e->n_in; k++) {
      size_t es = ft_dtype_size(in[k]->aval.dtype);
      for (int64_t i = 0; i < len; i++)
        memcpy((char *)out[k]->data + (size_t)(s.base + i * stride) * es,
               (const char *)in[k]->data + (size_t)(s.base + perm[i] * stride) * es, es);
    }
  }
  return FT_OK;
}

/* ------------------------------------------------------------ SearchSorted */
/* Element i of x as lax.sort's comparator keys (the canonical float keys of
 * float_key; two for complex: real, then imaginary), unsigned-comparable;
 * returns how many. */
static int ss_keys(const ft_array *x, int64_t i, uint64_t k[2]) {
  ft_dtype dt = x->aval.dtype;
  if (ft_dtype_is_complex(dt)) {
    double re, im;
    ft_get_c128(x, i, &re, &im);
    k[0] = float_key(re), k[1] = float_key(im);
    return 2;
  }
  if (ft_dtype_is_float(dt)) k[0] = float_key(ft_get_f64(x, i));
  else if (ft_dtype_is_signed(dt)) k[0] = (uint64_t)ft_get_i64(x, i) ^ (UINT64_C(1) << 63);
  else k[0] = ft_get_u64(x, i); /* unsigned, bool */
  return 1;
}

/* -1, 0, 1 as x <, ==, > y in that order. */
static int ss_cmp(const uint64_t *x, const uint64_t *y, int n) {
  for (int j = 0; j < n; j++)
    if (x[j] != y[j]) return x[j] < y[j] ? -1 : 1;
  return 0;
}

ft_status ft_searchsorted_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                               void *scratch) {
  (void)scratch;
  if (e->n_in != 2 || e->n_out != 1) return ft_set_error(ctx, FT_ERR_TYPE, "SearchSorted: expects 2 operands and 1 result");
  const ft_aval *a = &in[0]->aval, *q = &in[1]->aval, *o = &e->out[0]->aval;
  int64_t b = ft_param_int(e, "batch_dims", -1), d = ft_param_int(e, "dimension", -1);
  const ft_pval *side = ft_eqn_param(e, "side"), *method = ft_eqn_param(e, "method");
  bool left = false, binary = false;
  if (!ft_searchsorted_mode(side, method, &left, &binary) || b < 0 || b >= a->rank || d < b ||
      d >= a->rank || q->rank < b || a->dtype != q->dtype || !ft_dtype_is_int(o->dtype) ||
      ft_dtype_is_key(a->dtype) || a->dtype == FT_FLOAT0)
    return ft_set_error(ctx, FT_ERR_TYPE, "SearchSorted: bad operands or params (%s, %s)",
                        ft_dtype_name(a->dtype), ft_dtype_name(q->dtype));
  /* the result: sorted's batch axes, its other axes but d, query's rest */
  int64_t od[2 * FT_MAX_RANK];
  int orank = 0;
  for (int i = 0; i < a->rank; i++)
    if (i != d) od[orank++] = a->dims[i];
  for (int i = (int)b; i < q->rank; i++) od[orank++] = q->dims[i];
  bool same = orank == o->rank;
  for (int i = 0; same && i < orank; i++) same = od[i] == o->dims[i];
  for (int i = 0; same && i < b; i++) same = a->dims[i] == q->dims[i];
  if (!same) return ft_set_error(ctx, FT_ERR_SHAPE, "SearchSorted: the result's shape does not follow its operands'");
  if (!out) return FT_OK;
  int64_t ast[FT_MAX_RANK], qst[FT_MAX_RANK], idx[2 * FT_MAX_RANK] = {0};
  c_strides(a, ast);
  c_strides(q, qst);
  int64_t n = a->dims[d], sd = ast[d], total = ft_aval_size(o);
  int levels = 0; /* JAX's ceil(log2(n + 1)) probes */
  while (levels < 63 && (INT64_C(1) << levels) < n + 1) levels++;
  for (int64_t t = 0; t < total; t++) {
    /* idx runs over the result's axes; the sorted line and query element */
    int64_t abase = 0, qoff = 0;
    int k = 0;
    for (int i = 0; i < a->rank; i++)
      if (i != d) abase += idx[k] * ast[i], qoff += i < b ? idx[k] * qst[i] : 0, k++;
    for (int i = (int)b; i < q->rank; i++) qoff += idx[k++] * qst[i];
    uint64_t qk[2], ak[2];
    int nk = ss_keys(in[1], qoff, qk);
    uint64_t r = 0;
    if (n == 0) {
      r = 0;
    } else if (binary) { /* _searchsorted_scan_impl: go left when q <= a[mid] (left), q < a[mid] (right) */
      uint64_t lo = 0, hi = (uint64_t)n;
      for (int l = 0; l < levels; l++) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (mid >= (uint64_t)n) break; /* not reached: mid < hi <= n until lo == hi */
        ss_keys(in[0], abase + (int64_t)mid * sd, ak);
        int c = ss_cmp(qk, ak, nk);
        bool go_left = left ? c <= 0 : c < 0;
        if (go_left) hi = mid;
        else lo = mid;
      }
      r = hi;
    } else { /* compare_all and sort: how many a[i] < q (left), <= q (right) */
      for (int64_t i = 0; i < n; i++) {
        ss_keys(in[0], abase + i * sd, ak);
        int c = ss_cmp(ak, qk, nk);
        r += left ? c < 0 : c <= 0;
      }
    }
    ft_set_i64(out[0], t, (int64_t)r);
    for (int i = orank - 1; i >= 0; i--) {
      if (++idx[i] < od[i]) break;
      idx[i] = 0;
    }
  }
  return FT_OK;
}

/* ------------------------------------------------ the generic reduce */
/* JAX's reduce_p with a computation that is not a known monoid, in XLA
 * CPU's order (docs/primitives.md, "Generic reduce"): a single-operand
 * reduce with a reduced dimension longer than FT_GREDUCE_WINDOW is first
 * XLA's TreeReductionRewriter: a reduce_window with windows (and strides)
 * of min(dim, 32) on the reduced dims, SAME padding (pad_total // 2 low;
 * padded positions are skipped, not folded), then the reduce of that,
 * again rewritten while a reduced dim is over 32. Otherwise (and always
 * for several operands, which the rewriter skips) each result starts from
 * the init values and folds the elements of its reduced indices in
 * row-major order: acc = computation(acc, x). */
enum { FT_GREDUCE_WINDOW = 32 };

typedef struct gred {
  int n, rank;
  int64_t dims[FT_MAX_RANK];
  bool red[FT_MAX_RANK];
  size_t esz[FT_GREDUCE_MAX];
  ft_reducer_fn f;
  void *ud;
  const void *init[FT_GREDUCE_MAX];
} gred;

static ft_status gred_apply(const gred *g, void *const *acc, const void *const *src, int64_t off) {
  const void *x[FT_GREDUCE_MAX];
  for (int k = 0; k < g->n; k++) x[k] = (const char *)src[k] + (size_t)off * g->esz[k];
  return g->f(g->ud, acc, x);
}

/* The sequential fold of src (dims) into dst (the kept dims). */
static ft_status gred_seq(const gred *g, const int64_t *dims, const void *const *src, void *const *dst) {
  int64_t st[FT_MAX_RANK], s = 1, nout = 1, nred = 1;
  for (int d = g->rank - 1; d >= 0; d--) st[d] = s, s *= dims[d];
  for (int d = 0; d < g->rank; d++) *(g->red[d] ? &nred : &nout) *= dims[d];
  int64_t oi[FT_MAX_RANK] = {0};
  for (int64_t o = 0; o < nout; o++) {
    void *acc[FT_GREDUCE_MAX];
    int64_t base = 0;
    for (int d = 0; d < g->rank; d++)
      if (!g->red[d]) base += oi[d] * st[d];
    for (int k = 0; k < g->n; k++) {
      acc[k] = (char *)dst[k] + (size_t)o * g->esz[k];
      memcpy(acc[k], g->init[k], g->esz[k]);
    }
    int64_t ri[FT_MAX_RANK] = {0};
    for (int64_t r = 0; r < nred; r++) {
      int64_t off = base;
      for (int d = 0; d < g->rank; d++)
        if (g->red[d]) off += ri[d] * st[d];
      ft_status rs = gred_apply(g, acc, src, off);
      if (rs) return rs;
      for (int d = g->rank - 1; d >= 0; d--) /* the next reduced index, row-major */
        if (g->red[d] && ++ri[d] < dims[d]) break;
        else if (g->red[d]) ri[d] = 0;
    }
    for (int d = g->rank - 1; d >= 0; d--)
      if (!g->red[d] && ++oi[d] < dims[d]) break;
      else if (!g->red[d]) oi[d] = 0;
  }
  return FT_OK;
}

/* One TreeReductionRewriter pass: the window reduce of src (dims) into a
 * new buffer *wout of dims wdims. */
static ft_status gred_window(ft_ctx *ctx, const gred *g, const int64_t *dims, const void *src, void **wout,
                             int64_t *wdims) {
  int64_t win[FT_MAX_RANK], low[FT_MAX_RANK], st[FT_MAX_RANK], s = 1, nw = 1, nwin = 1;
  for (int d = g->rank - 1; d >= 0; d--) st[d] = s, s *= dims[d];
  for (int d = 0; d < g->rank; d++) {
    win[d] = g->red[d] ? (dims[d] < FT_GREDUCE_WINDOW ? dims[d] : FT_GREDUCE_WINDOW) : 1;
    wdims[d] = (dims[d] + win[d] - 1) / win[d];
    int64_t pad = (wdims[d] - 1) * win[d] + win[d] - dims[d];
    low[d] = pad > 0 ? pad / 2 : 0;
    nw *= wdims[d], nwin *= win[d];
  }
  *wout = malloc((size_t)nw * g->esz[0] + 1);
  if (!*wout) return ft_set_error(ctx, FT_ERR_NOMEM, "reduce: out of memory");
  int64_t oi[FT_MAX_RANK] = {0};
  for (int64_t o = 0; o < nw; o++) {
    void *acc = (char *)*wout + (size_t)o * g->esz[0];
    memcpy(acc, g->init[0], g->esz[0]);
    int64_t wi[FT_MAX_RANK] = {0};
    for (int64_t w = 0; w < nwin; w++) {
      int64_t off = 0;
      bool in = true;
      for (int d = 0; d < g->rank && in; d++) {
        int64_t i = oi[d] * win[d] - low[d] + wi[d];
        in = i >= 0 && i < dims[d];
        off += i * st[d];
      }
      if (in) {
        ft_status rs = gred_apply(g, &acc, &src, off);
        if (rs) return rs;
      }
      for (int d = g->rank - 1; d >= 0; d--)
        if (++wi[d] < win[d]) break;
        else wi[d] = 0;
    }
    for (int d = g->rank - 1; d >= 0; d--)
      if (++oi[d] < wdims[d]) break;
      else oi[d] = 0;
  }
  return FT_OK;
}

ft_status ft_generic_reduce_run(ft_ctx *ctx, int n, const ft_aval *operand, const ft_dtype *dtypes,
                                const bool *reduced, const void *const *in, void *const *out,
                                ft_reducer_fn f, void *ud) {
  if (n < 1 || n > FT_GREDUCE_MAX || operand->rank > FT_MAX_RANK)
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "reduce: %d operands (at most %d here)", n, FT_GREDUCE_MAX);
  gred g = {.n = n, .rank = operand->rank, .f = f, .ud = ud};
  bool empty = false, tree = false;
  for (int d = 0; d < g.rank; d++) {
    g.dims[d] = operand->dims[d], g.red[d] = reduced[d];
    if (reduced[d] && g.dims[d] == 0) empty = true;
    if (reduced[d] && g.dims[d] > FT_GREDUCE_WINDOW) tree = true;
  }
  for (int k = 0; k < n; k++) g.esz[k] = ft_dtype_size(dtypes[k]), g.init[k] = in[n + k];
  if (empty) { /* no elements: every result is the init value */
    int64_t nout = 1;
    for (int d = 0; d < g.rank; d++)
      if (!g.red[d]) nout *= g.dims[d];
    for (int k = 0; k < n; k++)
      for (int64_t o = 0; o < nout; o++) memcpy((char *)out[k] + (size_t)o * g.esz[k], g.init[k], g.esz[k]);
    return FT_OK;
  }
  if (n > 1 || !tree) return gred_seq(&g, g.dims, in, out);
  int64_t dims[FT_MAX_RANK];
  memcpy(dims, g.dims, sizeof dims);
  void *cur = NULL;
  ft_status st = FT_OK;
  for (;;) {
    bool over = false;
    for (int d = 0; d < g.rank; d++) over = over || (g.red[d] && dims[d] > FT_GREDUCE_WINDOW);
    if (!over) {
      const void *src = cur ? cur : in[0];
      st = gred_seq(&g, dims, &src, out);
      break;
    }
    void *next = NULL;
    int64_t wd[FT_MAX_RANK];
    st = gred_window(ctx, &g, dims, cur ? cur : in[0], &next, wd);
    free(cur);
    cur = next;
    if (st) break;
    memcpy(dims, wd, sizeof dims);
  }
  free(cur);
  return st;
}

/* The reduce equation's operands, checked (as JAX's shape and dtype rules):
 * n operands of one shape, n scalar inits of their dtypes, the jaxpr
 * mapping (acc..., x...) scalars to n scalars. */
ft_status ft_generic_reduce_geom(ft_ctx *ctx, const ft_eqn *e, int *n, bool *reduced) {
  const ft_pval *jv = ft_eqn_param(e, "jaxpr");
  const ft_jaxpr *j = jv->tag == FT_PV_JAXPR ? jv->u.jaxpr : NULL;
  int64_t dims[FT_MAX_RANK];
  int nd = ft_param_ints(e, "dimensions", dims, FT_MAX_RANK);
  int m = e->n_in / 2;
  bool ok = j && e->n_in % 2 == 0 && m >= 1 && m <= FT_GREDUCE_MAX && e->n_out == m && nd >= 0 &&
            j->n_in == 2 * m && j->n_out == m;
  const ft_aval *a = ok ? &e->in[0]->aval : NULL;
  for (int d = 0; ok && d < FT_MAX_RANK; d++) reduced[d] = false;
  for (int i = 0; ok && i < nd; i++) {
    ok = dims[i] >= 0 && dims[i] < a->rank && !reduced[dims[i]];
    if (ok) reduced[dims[i]] = true;
  }
  for (int k = 0; ok && k < m; k++) {
    const ft_aval *x = &e->in[k]->aval, *i0 = &e->in[m + k]->aval;
    ok = ft_shape_eq(x, a) && i0->rank == 0 && i0->dtype == x->dtype && e->out[k]->aval.dtype == x->dtype &&
         j->invars[k]->aval.dtype == x->dtype && j->invars[m + k]->aval.dtype == x->dtype &&
         j->invars[k]->aval.rank == 0 && j->invars[m + k]->aval.rank == 0 &&
         j->outvars[k]->aval.rank == 0 && j->outvars[k]->aval.dtype == x->dtype;
  }
  if (!ok)
    return ft_set_error(ctx, FT_ERR_TYPE, "reduce: bad operands, init values, dimensions or jaxpr "
                        "(at most %d operands)", FT_GREDUCE_MAX);
  *n = m;
  return FT_OK;
}

/* The interpreter's reducer: the computation jaxpr on rank-0 arrays. */
typedef struct gred_interp {
  ft_ctx *ctx;
  const ft_jaxpr *j;
  int n;
  ft_array *args[2 * FT_GREDUCE_MAX];
} gred_interp;

static ft_status gred_interp_fn(void *ud, void *const *acc, const void *const *x) {
  gred_interp *G = ud;
  for (int k = 0; k < G->n; k++) {
    size_t b = ft_dtype_size(G->args[k]->aval.dtype);
    memcpy(ft_array_data_mut(G->args[k]), acc[k], b);
    memcpy(ft_array_data_mut(G->args[G->n + k]), x[k], b);
  }
  ft_array *res[FT_GREDUCE_MAX] = {NULL};
  ft_status st = ft_interp_jaxpr(G->ctx, G->j, 2 * G->n, (const ft_array *const *)G->args, res);
  for (int k = 0; k < G->n; k++) {
    if (!st) memcpy(acc[k], ft_array_data(res[k]), ft_dtype_size(G->args[k]->aval.dtype));
    ft_array_free(res[k]);
  }
  return st;
}

ft_status ft_interp_reduce_generic(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  int n = 0;
  bool red[FT_MAX_RANK];
  ft_status st = ft_generic_reduce_geom(ctx, e, &n, red);
  if (st) return st;
  const ft_pval *jv = ft_eqn_param(e, "jaxpr");
  gred_interp G = {.ctx = ctx, .j = jv->u.jaxpr, .n = n};
  if (G.j->n_const && !G.j->const_data)
    return ft_set_error(ctx, FT_ERR_INVALID_ARG, "reduce: its computation closes over %d constants whose "
                        "values the text does not carry (bind them with ft_jaxpr_bind_sub_consts)",
                        G.j->n_const);
  if ((st = ft_interp_alloc_outs(ctx, e, out))) return st;
  ft_dtype dts[FT_GREDUCE_MAX] = {0};
  const void *src[2 * FT_GREDUCE_MAX] = {NULL};
  void *dst[FT_GREDUCE_MAX] = {NULL};
  for (int k = 0; k < 2 * n && !st; k++) {
    ft_aval s = {.dtype = in[k]->aval.dtype, .rank = 0};
    if (!(G.args[k] = ft_array_alloc(ctx, &s))) st = ft_ctx_status(ctx);
    src[k] = ft_array_data(in[k]);
  }
  for (int k = 0; k < n; k++) dts[k] = in[k]->aval.dtype, dst[k] = ft_array_data_mut(out[k]);
  if (!st) st = ft_generic_reduce_run(ctx, n, &in[0]->aval, dts, red, src, dst, gred_interp_fn, &G);
  for (int k = 0; k < 2 * n; k++) ft_array_free(G.args[k]);
  if (st)
    for (int k = 0; k < n; k++) ft_array_free(out[k]), out[k] = NULL;
  return st;
}

/* The generic reduce_window: the same reducer on the window run of
 * interp_window.c (XLA CPU's order there). */
ft_status ft_interp_reduce_window_generic(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  int n = 0;
  ft_rwin w;
  ft_status st = ft_generic_reduce_window_geom(ctx, e, &n, &w);
  if (st) return st;
  const ft_pval *jv = ft_eqn_param(e, "jaxpr");
  gred_interp G = {.ctx = ctx, .j = jv->u.jaxpr, .n = n};
  if ((st = ft_interp_alloc_outs(ctx, e, out))) return st;
  ft_dtype dts[FT_GREDUCE_MAX] = {0};
  const void *src[2 * FT_GREDUCE_MAX] = {NULL};
  void *dst[FT_GREDUCE_MAX] = {NULL};
  for (int k = 0; k < 2 * n && !st; k++) {
    ft_aval s = {.dtype = in[k]->aval.dtype, .rank = 0};
    if (!(G.args[k] = ft_array_alloc(ctx, &s))) st = ft_ctx_status(ctx);
    src[k] = ft_array_data(in[k]);
  }
  for (int k = 0; k < n; k++) dts[k] = in[k]->aval.dtype, dst[k] = ft_array_data_mut(out[k]);
  if (!st)
    st = ft_generic_reduce_window_run(ctx, n, &w, &in[0]->aval, &out[0]->aval, dts, src, dst, gred_interp_fn, &G);
  for (int k = 0; k < 2 * n; k++) ft_array_free(G.args[k]);
  if (st)
    for (int k = 0; k < n; k++) ft_array_free(out[k]), out[k] = NULL;
  return st;
}
