/* src/runtime/interp_window.c: the windowed primitives of the reference
 * interpreter — reduce_window_{sum,max,min}, conv_general_dilated — and
 * top_k, with XLA's semantics.
 *
 * Windows. An output element o covers, along each axis, the positions
 * p = o*stride + k*window_dilation (k over the window) of the operand after
 * base (lhs) dilation and padding; p maps back to operand element
 * (p - pad_lo) / base_dilation when that is an integer in range, and
 * otherwise to a hole or pad, which holds the reduction's identity (0 for
 * sums, -inf / the integer minimum for max, +inf / the maximum for min).
 * Negative padding crops. convolution is a cross-correlation (no kernel
 * flip); feature_group_count and batch_group_count split the features and
 * the batch as StableHLO's convolution specifies.
 *
 * Summation order (docs/determinism.md): reduce_window_sum is sequential,
 * starting from +0.0 and adding the terms in row-major order of the window,
 * rounding each partial sum to the result dtype (no FMA); holes and pads are
 * skipped (they would add exact zeros). Float convolutions are im2col + the
 * shared GEMM (ft_gemm_f32/f64, the dot_general kernel): their order is
 * OpenBLAS's for the shapes, the same in the interpreter and the JIT, on any
 * thread count. Integer convolutions wrap, in window order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

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

static int64_t prod(int n, const int64_t *d) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) p *= d[i];
  return p;
}

/* Rounds v to the precision of float dtype dt (f16/bf16 through f32, as
 * ft_set_f64 stores them). */
static double rnd(ft_dtype dt, double v) {
  if (dt == FT_F64) return v;
  float f = (float)v;
  return dt == FT_F32 ? f : ft_round_to(dt, f);
}

/* ft_get_f64 with the f32/f64 loads inline (the same value). */
static inline double ld_f64(const ft_array *a, int64_t i) {
  switch (a->aval.dtype) {
  case FT_F32: return ((const float *)a->data)[i];
  case FT_F64: return ((const double *)a->data)[i];
  default: return ft_get_f64(a, i);
  }
}

/* XLA's max/min: a NaN operand wins; -0 < +0. */
static double fmaxmin(double a, double b, bool is_max) {
  if (a != a) return a;
  if (b != b) return b;
  if (a == b) return (signbit(a) == is_max) ? b : a;
  return is_max ? (a > b ? a : b) : (a < b ? a : b);
}

/* An int-tuple param with a default of 1 per entry when it is None or (). */
static ft_status ints_or_ones(ft_ctx *ctx, const ft_eqn *e, const char *name, int n, int64_t *out) {
  int64_t buf[FT_MAX_RANK * 2];
  /* (select_and_scatter_add has no dilation params: ones) */
  int k = ft_prim_param_index(e->prim, name) < 0 ? 0 : ft_param_ints(e, name, buf, FT_MAX_RANK * 2);
  if (k <= 0) {
    for (int i = 0; i < n; i++) out[i] = 1;
    return FT_OK;
  }
  if (k != n) return ft_set_error(ctx, FT_ERR_SHAPE, "param %s needs %d entries, has %d", name, n, k);
  for (int i = 0; i < n; i++) {
    if (buf[i] < 1) return ft_set_error(ctx, FT_ERR_SHAPE, "param %s must be positive", name);
    out[i] = buf[i];
  }
  return FT_OK;
}

/* padding=((lo, hi), ...) with n pairs (None: no padding). */
static ft_status padding_of(ft_ctx *ctx, const ft_eqn *e, int n, int64_t *lo, int64_t *hi) {
  const ft_pval *pv = ft_eqn_param(e, "padding");
  for (int i = 0; i < n; i++) lo[i] = hi[i] = 0;
  if (pv->tag == FT_PV_NONE) return FT_OK;
  if (pv->tag != FT_PV_TUPLE || pv->n != n)
    return ft_set_error(ctx, FT_ERR_TYPE, "param padding must be %d (lo, hi) pairs", n);
  for (int i = 0; i < n; i++) {
    int64_t lh[2];
    int k = 0;
    if (!ft_pv_get_ints(&pv->u.items[i], lh, 2, &k) || k != 2)
      return ft_set_error(ctx, FT_ERR_TYPE, "padding entry %d must be (lo, hi)", i);
    lo[i] = lh[0], hi[i] = lh[1];
  }
  return FT_OK;
}

/* Position p of the dilated, padded axis back to an operand index, or -1
 * for a hole or a pad. */
static int64_t unpad(int64_t p, int64_t lo, int64_t dil, int64_t dim) {
  int64_t q = p - lo;
  if (q < 0 || q % dil) return -1;
  q /= dil;
  return q < dim ? q : -1;
}

/* ----------------------------------------------------------- reduce_window */

typedef struct window {
  int rank;
  int64_t wd[FT_MAX_RANK], ws[FT_MAX_RANK], bd[FT_MAX_RANK], wdl[FT_MAX_RANK];
  int64_t lo[FT_MAX_RANK], hi[FT_MAX_RANK];
} window;

static ft_status window_of(ft_ctx *ctx, const ft_eqn *e, int rank, window *w) {
  w->rank = rank;
  ft_status st;
  if (ft_param_ints(e, "window_dimensions", w->wd, FT_MAX_RANK) != rank)
    return ft_set_error(ctx, FT_ERR_SHAPE, "window_dimensions needs one entry per axis");
  if ((st = ints_or_ones(ctx, e, "window_strides", rank, w->ws)) ||
      (st = ints_or_ones(ctx, e, "base_dilation", rank, w->bd)) ||
      (st = ints_or_ones(ctx, e, "window_dilation", rank, w->wdl)) ||
      (st = padding_of(ctx, e, rank, w->lo, w->hi)))
    return st;
  return FT_OK;
}

/* Flat offsets into x of the operand elements under output element idx,
 * in row-major window order (holes and pads left out); returns their count. */
static int64_t window_elems(const window *w, const ft_aval *x, const int64_t *xst, const int64_t *idx,
                            int64_t *offs) {
  int64_t k[FT_MAX_RANK] = {0}, n = 0;
  if (prod(w->rank, w->wd) == 0) return 0;
  do {
    int64_t off = 0;
    bool ok = true;
    for (int i = 0; i < w->rank && ok; i++) {
      int64_t q = unpad(idx[i] * w->ws[i] + k[i] * w->wdl[i], w->lo[i], w->bd[i], x->dims[i]);
      ok = q >= 0;
      off += q * xst[i];
    }
    if (ok) offs[n++] = off;
  } while (next_index(w->rank, w->wd, k));
  return n;
}

/* reduce_window's tables, one per axis: tab[i][y*wd[i] + k] is the offset
 * along axis i of output position y and window position k, or -1 for a
 * hole or a pad, so a window's offsets need no division (n: int64s). */
static int64_t window_tab_size(const window *w, const ft_aval *o) {
  int64_t n = 0;
  for (int i = 0; i < w->rank; i++) n += o->dims[i] * w->wd[i];
  return n;
}

static void window_tabs(const window *w, const ft_aval *x, const ft_aval *o, const int64_t *xst,
                        int64_t *t, int64_t **tab) {
  for (int i = 0; i < w->rank; i++) {
    tab[i] = t, t += o->dims[i] * w->wd[i];
    for (int64_t y = 0; y < o->dims[i]; y++)
      for (int64_t k = 0; k < w->wd[i]; k++) {
        int64_t q = unpad(y * w->ws[i] + k * w->wdl[i], w->lo[i], w->bd[i], x->dims[i]);
        tab[i][y * w->wd[i] + k] = q < 0 ? -1 : q * xst[i];
      }
  }
}

/* window_elems through the tables: the same offsets in the same order. */
static int64_t window_elems_tab(const window *w, int64_t *const *tab, const int64_t *idx,
                                int64_t *offs) {
  int64_t k[FT_MAX_RANK] = {0}, n = 0;
  if (prod(w->rank, w->wd) == 0) return 0;
  do {
    int64_t off = 0;
    for (int i = 0; i < w->rank && off >= 0; i++) {
      int64_t d = tab[i][idx[i] * w->wd[i] + k[i]];
      off = d < 0 ? -1 : off + d;
    }
    if (off >= 0) offs[n++] = off;
  } while (next_index(w->rank, w->wd, k));
  return n;
}

/* One output element of reduce_window_* from the m operand elements offs
 * (complex operands: sums only, checked by the caller). */
static void window_reduce(ft_prim p, const ft_array *x, const int64_t *offs, int64_t m,
                               ft_array *o, int64_t oi) {
  ft_dtype dt = x->aval.dtype;
  bool is_max = p == FT_P_REDUCE_WINDOW_MAX;
  if (ft_dtype_is_complex(dt)) {
    ft_dtype pt = dt == FT_C64 ? FT_F32 : FT_F64;
    double sr = 0, si = 0;
    for (int64_t k = 0; k < m; k++) {
      double re, im;
      ft_get_c128(x, offs[k], &re, &im);
      sr = rnd(pt, sr + re), si = rnd(pt, si + im);
    }
    ft_set_c128(o, oi, sr, si);
  } else if (ft_dtype_is_float(dt)) {
    double acc = p == FT_P_REDUCE_WINDOW_SUM ? 0.0 : is_max ? -INFINITY : INFINITY;
    for (int64_t k = 0; k < m; k++) {
      double v = ld_f64(x, offs[k]);
      acc = p == FT_P_REDUCE_WINDOW_SUM ? rnd(dt, acc + v) : fmaxmin(acc, v, is_max);
    }
    ft_set_f64(o, oi, acc);
  } else {
    bool sgn = ft_dtype_is_signed(dt);
    int bits = ft_dtype_bits(dt);
    uint64_t acc;
    if (p == FT_P_REDUCE_WINDOW_SUM) acc = 0;
    else if (dt == FT_BOOL) acc = is_max ? 0 : 1;
    else if (sgn) acc = is_max ? (uint64_t)(bits >= 64 ? INT64_MIN : -(INT64_C(1) << (bits - 1)))
                               : (uint64_t)(bits >= 64 ? INT64_MAX : (INT64_C(1) << (bits - 1)) - 1);
    else acc = is_max ? 0 : (bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1);
    for (int64_t k = 0; k < m; k++) {
      uint64_t v = (uint64_t)ft_get_i64(x, offs[k]);
      if (p == FT_P_REDUCE_WINDOW_SUM) acc = dt == FT_BOOL ? (acc | v) : acc + v;
      else if (is_max ? (sgn ? (int64_t)v > (int64_t)acc : v > acc)
                      : (sgn ? (int64_t)v < (int64_t)acc : v < acc))
        acc = v;
    }
    ft_set_i64(o, oi, (int64_t)acc);
  }
}

ft_status ft_interp_reduce_window(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  return ft_interp_via_into(ctx, e, in, out);
}

/* The scratch of reduce_window: the offsets of one window, then the
 * per-axis tables (int64 each). */
size_t ft_reduce_window_scratch(const ft_eqn *e) {
  window w;
  if (e->n_out < 1 || e->out[0]->aval.rank != e->in[0]->aval.rank ||
      window_of(NULL, e, e->in[0]->aval.rank, &w))
    return 0;
  int64_t wn = prod(w.rank, w.wd);
  return sizeof(int64_t) * (size_t)((wn > 0 ? wn : 1) + window_tab_size(&w, &e->out[0]->aval));
}

ft_status ft_reduce_window_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                                ft_array *const *out, void *scratch) {
  const ft_array *x = in[0];
  window w;
  ft_status st;
  if ((st = window_of(ctx, e, x->aval.rank, &w))) return st;
  if (ft_dtype_is_complex(x->aval.dtype) && e->prim != FT_P_REDUCE_WINDOW_SUM)
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "complex operands have no order");
  if (!out) return FT_OK;
  ft_array *o = out[0];
  int64_t xst[FT_MAX_RANK], idx[FT_MAX_RANK] = {0};
  c_strides(&x->aval, xst);
  int64_t n = ft_array_size(o), *offs = scratch, wn = prod(w.rank, w.wd), *tab[FT_MAX_RANK];
  if (o->aval.rank != w.rank)
    return ft_set_error(ctx, FT_ERR_SHAPE, "reduce_window: the result rank differs from the operand's");
  window_tabs(&w, &x->aval, &o->aval, xst, offs + (wn > 0 ? wn : 1), tab);
  for (int64_t i = 0; i < n; i++, next_index(o->aval.rank, o->aval.dims, idx)) {
    int64_t m = window_elems_tab(&w, tab, idx, offs);
    window_reduce(e->prim, x, offs, m, o, i);
  }
  return FT_OK;
}

/* ------------------------------------------- the generic reduce_window */

/* XLA CPU's order was measured against JAX 0.12 (docs/primitives.md,
 * "Generic reduce_window"): row-major over the window from the init value,
 * with low padding, dilations, strides and windows over 32 alike. High
 * padding on the minor axis changes it when the window spans more than one
 * position of the other axes (XLA then folds the window in chunks of the
 * minor axis, each over all of the other axes' positions: measured, not
 * modelled): refused, never run wrongly. With one position there (rank 1,
 * or a vmapped axis of window 1) any chunking is the row-major order. */
ft_status ft_generic_reduce_window_geom(ft_ctx *ctx, const ft_eqn *e, int *n, ft_rwin *w) {
  const ft_pval *jv = ft_eqn_param(e, "jaxpr");
  const ft_jaxpr *j = jv->tag == FT_PV_JAXPR ? jv->u.jaxpr : NULL;
  int m = e->n_in / 2;
  bool ok = j && e->n_in % 2 == 0 && m >= 1 && m <= FT_GREDUCE_MAX && e->n_out == m && j->n_in == 2 * m &&
            j->n_out == m && j->n_const == 0;
  const ft_aval *a = ok ? &e->in[0]->aval : NULL;
  for (int k = 0; ok && k < m; k++) {
    const ft_aval *x = &e->in[k]->aval, *i0 = &e->in[m + k]->aval, *o = &e->out[k]->aval;
    ok = ft_shape_eq(x, a) && i0->rank == 0 && i0->dtype == x->dtype && o->dtype == x->dtype &&
         o->rank == a->rank && ft_shape_eq(o, &e->out[0]->aval) && j->invars[k]->aval.dtype == x->dtype &&
         j->invars[m + k]->aval.dtype == x->dtype && j->invars[k]->aval.rank == 0 &&
         j->invars[m + k]->aval.rank == 0 && j->outvars[k]->aval.rank == 0 &&
         j->outvars[k]->aval.dtype == x->dtype;
  }
  if (!ok)
    return ft_set_error(ctx, FT_ERR_TYPE, "reduce_window: bad operands, init values or jaxpr (at most %d "
                        "operands, no constants)", FT_GREDUCE_MAX);
  window g;
  ft_status st = window_of(ctx, e, a->rank, &g);
  if (st) return st;
  int64_t rows = 1; /* window positions over the non-minor axes */
  for (int i = 0; i + 1 < a->rank; i++) rows *= g.wd[i];
  if (rows > 1 && g.hi[a->rank - 1] != 0)
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "reduce_window: high padding (%lld) on the minor axis with a "
                        "window of %lld positions over the other axes: XLA CPU then folds the window in an "
                        "order other than row-major (measured against JAX 0.12), which is not modelled; "
                        "refused rather than risk another result", (long long)g.hi[a->rank - 1],
                        (long long)rows);
  w->rank = g.rank;
  memcpy(w->wd, g.wd, sizeof w->wd), memcpy(w->ws, g.ws, sizeof w->ws), memcpy(w->bd, g.bd, sizeof w->bd);
  memcpy(w->wdl, g.wdl, sizeof w->wdl), memcpy(w->lo, g.lo, sizeof w->lo), memcpy(w->hi, g.hi, sizeof w->hi);
  *n = m;
  return FT_OK;
}

ft_status ft_generic_reduce_window_run(ft_ctx *ctx, int n, const ft_rwin *rw, const ft_aval *operand,
                                       const ft_aval *res, const ft_dtype *dtypes, const void *const *in,
                                       void *const *out, ft_reducer_fn f, void *ud) {
  if (n < 1 || n > FT_GREDUCE_MAX || rw->rank != operand->rank || res->rank != operand->rank)
    return ft_set_error(ctx, FT_ERR_INTERNAL, "reduce_window: %d operands of rank %d", n, operand->rank);
  window w = {.rank = rw->rank};
  memcpy(w.wd, rw->wd, sizeof w.wd), memcpy(w.ws, rw->ws, sizeof w.ws), memcpy(w.bd, rw->bd, sizeof w.bd);
  memcpy(w.wdl, rw->wdl, sizeof w.wdl), memcpy(w.lo, rw->lo, sizeof w.lo), memcpy(w.hi, rw->hi, sizeof w.hi);
  size_t esz[FT_GREDUCE_MAX];
  for (int k = 0; k < n; k++) esz[k] = ft_dtype_size(dtypes[k]);
  int64_t wn = prod(w.rank, w.wd), no = prod(res->rank, res->dims);
  int64_t *offs = malloc(sizeof(int64_t) * (size_t)(wn > 0 ? wn : 1));
  if (!offs) return ft_set_error(ctx, FT_ERR_NOMEM, "reduce_window: out of memory");
  int64_t xst[FT_MAX_RANK], idx[FT_MAX_RANK] = {0};
  c_strides(operand, xst);
  ft_status st = FT_OK;
  for (int64_t o = 0; o < no && !st; o++, next_index(res->rank, res->dims, idx)) {
    void *acc[FT_GREDUCE_MAX];
    const void *x[FT_GREDUCE_MAX];
    for (int k = 0; k < n; k++) {
      acc[k] = (char *)out[k] + (size_t)o * esz[k];
      memcpy(acc[k], in[n + k], esz[k]);
    }
    int64_t m = window_elems(&w, operand, xst, idx, offs);
    for (int64_t q = 0; q < m && !st; q++) {
      for (int k = 0; k < n; k++) x[k] = (const char *)in[k] + (size_t)offs[q] * esz[k];
      st = f(ud, acc, x);
    }
  }
  free(offs);
  return st;
}

/* ------------------------------- select_and_gather_add, select_and_scatter_add */

/* The position (an index into offs) that select_prim picks among the m
 * window elements of x, as XLA's sequential reduction does it: a candidate
 * replaces the choice unless select(choice, candidate) holds (ge: the first
 * maximum, le: the first minimum; a NaN choice is always replaced). With
 * from_init the choice starts as the init value (-inf for ge, +inf for le:
 * select_and_gather_add's reduce_window), else as the first element
 * (select_and_scatter_add's SelectAndScatter). -1: none chosen. */
static int64_t window_select(const ft_array *x, const int64_t *offs, int64_t m, bool ge, bool from_init) {
  int64_t pick = -1;
  double cur = ge ? -INFINITY : INFINITY;
  for (int64_t k = 0; k < m; k++) {
    double v = ft_get_f64(x, offs[k]);
    bool keep = (pick >= 0 || from_init) && (ge ? cur >= v : cur <= v);
    if (!keep) pick = k, cur = v;
  }
  return pick;
}

static bool select_ge(const ft_eqn *e) {
  const ft_pval *v = ft_eqn_param(e, "select_prim");
  return v->s && !strcmp(v->s, "ge");
}

size_t ft_select_and_scratch(const ft_eqn *e) {
  window w;
  if (window_of(NULL, e, e->in[1]->aval.rank, &w)) return 0;
  int64_t wn = prod(w.rank, w.wd);
  return sizeof(int64_t) * (size_t)(wn > 0 ? wn : 1);
}

static ft_status select_and_check(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, window *w) {
  ft_status st = window_of(ctx, e, in[1]->aval.rank, w);
  if (st) return st;
  if (!ft_dtype_is_float(in[1]->aval.dtype) || in[0]->aval.dtype != in[1]->aval.dtype)
    return ft_set_error(ctx, FT_ERR_TYPE, "%s: operands must be of one float dtype",
                        ft_prim_get(e->prim)->name);
  return FT_OK;
}

ft_status ft_select_and_gather_add_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                                        ft_array *const *out, void *scratch) {
  window w;
  ft_status st = select_and_check(ctx, e, in, &w);
  if (st || !out) return st;
  const ft_array *t = in[0], *x = in[1];
  ft_array *o = out[0];
  int64_t xst[FT_MAX_RANK], idx[FT_MAX_RANK] = {0}, n = ft_array_size(o), *offs = scratch;
  c_strides(&x->aval, xst);
  bool ge = select_ge(e);
  for (int64_t i = 0; i < n; i++, next_index(o->aval.rank, o->aval.dims, idx)) {
    int64_t m = window_elems(&w, &x->aval, xst, idx, offs);
    int64_t k = window_select(x, offs, m, ge, true);
    ft_set_f64(o, i, k < 0 ? 0.0 : ft_get_f64(t, offs[k]));
  }
  return FT_OK;
}

ft_status ft_select_and_scatter_add_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                                         ft_array *const *out, void *scratch) {
  window w;
  ft_status st = select_and_check(ctx, e, in, &w);
  if (st || !out) return st;
  const ft_array *src = in[0], *x = in[1];
  ft_array *o = out[0];
  ft_dtype dt = o->aval.dtype;
  int64_t xst[FT_MAX_RANK], idx[FT_MAX_RANK] = {0}, n = ft_array_size(src), *offs = scratch;
  c_strides(&x->aval, xst);
  memset(o->data, 0, (size_t)ft_array_size(o) * ft_dtype_size(dt));
  bool ge = select_ge(e);
  for (int64_t i = 0; i < n; i++, next_index(src->aval.rank, src->aval.dims, idx)) {
    int64_t m = window_elems(&w, &x->aval, xst, idx, offs);
    int64_t k = window_select(x, offs, m, ge, false);
    if (k >= 0) ft_set_f64(o, offs[k], rnd(dt, ft_get_f64(o, offs[k]) + ft_get_f64(src, i)));
  }
  return FT_OK;
}

/* ---------------------------------------------------- conv_general_dilated */

typedef struct conv_plan {
  int ns;                                     /* spatial axes */
  int64_t ls[FT_MAX_RANK], rs[FT_MAX_RANK], os[FT_MAX_RANK];
  int64_t ws[FT_MAX_RANK], ld[FT_MAX_RANK], rd[FT_MAX_RANK], lo[FT_MAX_RANK], hi[FT_MAX_RANK];
  int64_t fg, bg;
} conv_plan;

static ft_status conv_plan_of(ft_ctx *ctx, const ft_eqn *e, int n, conv_plan *c) {
  const ft_pval *dn = ft_eqn_param(e, "dimension_numbers");
  int nl = n, nr = n, no = n;
  c->ns = n - 2;
  if (dn->tag == FT_PV_NONE) {
    for (int i = 0; i < n; i++) c->ls[i] = c->rs[i] = c->os[i] = i;
  } else if (!ft_dimnums_field(dn, "lhs_spec", 0, c->ls, &nl) ||
             !ft_dimnums_field(dn, "rhs_spec", 1, c->rs, &nr) ||
             !ft_dimnums_field(dn, "out_spec", 2, c->os, &no) || nl != n || nr != n || no != n) {
    return ft_set_error(ctx, FT_ERR_TYPE, "malformed ConvDimensionNumbers");
  }
  ft_status st;
  if (ft_param_ints(e, "window_strides", c->ws, FT_MAX_RANK) != c->ns)
    return ft_set_error(ctx, FT_ERR_SHAPE, "window_strides needs one entry per spatial axis");
  if ((st = ints_or_ones(ctx, e, "lhs_dilation", c->ns, c->ld)) ||
      (st = ints_or_ones(ctx, e, "rhs_dilation", c->ns, c->rd)) ||
      (st = padding_of(ctx, e, c->ns, c->lo, c->hi)))
    return st;
  c->fg = ft_param_int(e, "feature_group_count", 1);
  c->bg = ft_param_int(e, "batch_group_count", 1);
  if (c->fg < 1 || c->bg < 1 || (c->fg > 1 && c->bg > 1))
    return ft_set_error(ctx, FT_ERR_SHAPE, "feature_group_count and batch_group_count must be >= 1 "
                        "and not both > 1");
  return FT_OK;
}

/* One output element: out[n, o, y...] (batch nb of lhs, feature group g). */
typedef struct conv_elem {
  int64_t lbase, rbase;                     /* offsets of lhs[nb, g*I, 0..], rhs[o, 0, 0..] */
  const int64_t *y;                         /* output spatial index */
} conv_elem;

/* Integer convolutions: a wrapping sum per output element. */
static void conv_one(const conv_plan *c, const ft_array *l, const ft_array *r, const int64_t *lst,
                     const int64_t *rst, const conv_elem *ce, ft_array *o, int64_t oi) {
  int64_t I = r->aval.dims[c->rs[1]], kd[FT_MAX_RANK];
  for (int s = 0; s < c->ns; s++) kd[s] = r->aval.dims[c->rs[2 + s]];
  uint64_t iacc = 0;
  if (prod(c->ns, kd) > 0)
    for (int64_t i = 0; i < I; i++) {
      int64_t k[FT_MAX_RANK] = {0};
      do {
        int64_t lo_ = ce->lbase + i * lst[c->ls[1]], ro = ce->rbase + i * rst[c->rs[1]];
        bool ok = true;
        for (int s = 0; s < c->ns && ok; s++) {
          int64_t ax = c->ls[2 + s];
          int64_t q = unpad(ce->y[s] * c->ws[s] + k[s] * c->rd[s], c->lo[s], c->ld[s], l->aval.dims[ax]);
          ok = q >= 0;
          lo_ += q * lst[ax];
          ro += k[s] * rst[c->rs[2 + s]];
        }
        if (ok) iacc += (uint64_t)ft_get_i64(l, lo_) * (uint64_t)ft_get_i64(r, ro);
      } while (next_index(c->ns, kd, k));
    }
  ft_set_i64(o, oi, (int64_t)iacc);
}

ft_status ft_interp_conv(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  return ft_interp_via_into(ctx, e, in, out);
}

/* Float convolutions: im2col + the shared GEMM (src/runtime/interp_linalg.c).
 * The features split into G = feature_group_count * batch_group_count
 * groups (one of the two is 1); group q reads lhs features [g*I, (g+1)*I)
 * (g = q when feature-grouped) of lhs batches [b0, b0+NB) (b0 = q*NB when
 * batch-grouped) and writes output features [q*OG, (q+1)*OG). For each
 * group the patches X[P][K] (P = NB * output positions, row-major over the
 * output batch then its spatial axes; K = I * window, input feature
 * outermost, then the kernel's spatial axes in rhs_spec order; a hole or a
 * pad is 0) times the kernel W[K][OG] gives C[P][OG]: the product ft_gemm
 * computes, in its row blocks of R = ft_gemm_block_rows(P, OG, K) rows.
 * The patches are built one block at a time, into a buffer of R rows, and
 * that block's OpenBLAS call is made on it (ft_gemm_*_block_at) — the call
 * a whole ft_gemm makes for the block, so the bits are those of the whole
 * product — and its C rows are written out before the next block: the
 * scratch holds W and R rows of X and C, not P (a 64-channel 3x3
 * convolution of a 224x224 image: 0.8 MB instead of 129 MB). The
 * interpreter and the JIT's routine step run this same code: the bits
 * depend on the shapes only. */
typedef struct conv_geo {
  int64_t N, O, I, G, NB, OG, K, P, S, KW, R;
  bool f64;
} conv_geo;

static void conv_geo_of(const conv_plan *c, const ft_aval *l, const ft_aval *r, const ft_aval *o,
                        conv_geo *g) {
  g->N = l->dims[c->ls[0]], g->O = r->dims[c->rs[0]], g->I = r->dims[c->rs[1]];
  g->G = c->fg * c->bg;
  g->NB = g->N / c->bg;
  g->OG = g->O / g->G;
  g->KW = 1, g->S = 1;
  for (int s = 0; s < c->ns; s++) g->KW *= r->dims[c->rs[2 + s]], g->S *= o->dims[c->os[2 + s]];
  g->K = g->I * g->KW;
  g->P = g->NB * g->S;
  g->R = g->P > 0 ? ft_gemm_block_rows(g->P, g->OG, g->K) : 0;
  g->f64 = o->dtype == FT_F64;
}

static size_t conv_region(size_t n) { return (n + 63) & ~(size_t)63; }

/* Scratch of a float convolution, in the compute precision (f64 for an f64
 * result, else f32): W of one group, X and C of one GEMM row block, plus
 * one operand-index table per spatial axis (output position x kernel
 * position) and the lhs offsets of one block's rows (conv_float). */
static size_t conv_scratch_of(const conv_plan *c, const ft_aval *l, const ft_aval *r,
                              const ft_aval *o) {
  conv_geo g;
  conv_geo_of(c, l, r, o, &g);
  size_t es = g.f64 ? sizeof(double) : sizeof(float), tab = 0;
  for (int s = 0; s < c->ns; s++)
    tab += (size_t)(o->dims[c->os[2 + s]] * r->dims[c->rs[2 + s]]);
  return conv_region(es * (size_t)(g.R * g.K)) + conv_region(es * (size_t)(g.K * g.OG)) +
         conv_region(es * (size_t)(g.R * g.OG)) + conv_region(sizeof(int64_t) * (tab + 1)) +
         conv_region(sizeof(int64_t) * (size_t)(g.R * (g.KW + 1)));
}

size_t ft_conv_scratch(const ft_eqn *e) {
  if (e->n_in != 2 || e->n_out != 1 || !ft_dtype_is_float(e->out[0]->aval.dtype)) return 0;
  const ft_aval *l = &e->in[0]->aval, *r = &e->in[1]->aval, *o = &e->out[0]->aval;
  conv_plan c;
  if (l->rank < 2 || r->rank != l->rank || o->rank != l->rank || conv_plan_of(NULL, e, l->rank, &c))
    return 0;
  int64_t O = r->dims[c.rs[0]], I = r->dims[c.rs[1]], N = l->dims[c.ls[0]];
  if (l->dims[c.ls[1]] != I * c.fg || O % c.fg || O % c.bg || N % c.bg) return 0;
  return conv_scratch_of(&c, l, r, o);
}

static bool conv_float(const conv_plan *c, const ft_array *l, const ft_array *r, ft_array *o,
                       const int64_t *lst, const int64_t *rst, char *scratch) {
  conv_geo g;
  conv_geo_of(c, &l->aval, &r->aval, &o->aval, &g);
  size_t es = g.f64 ? sizeof(double) : sizeof(float);
  char *X = scratch, *W = X + conv_region(es * (size_t)(g.R * g.K));
  char *C = W + conv_region(es * (size_t)(g.K * g.OG));
  int64_t *tab[FT_MAX_RANK], ost[FT_MAX_RANK], od[FT_MAX_RANK], kd[FT_MAX_RANK];
  int64_t *t = (int64_t *)(void *)(C + conv_region(es * (size_t)(g.R * g.OG)));
  int64_t ntab = 0;
  for (int s = 0; s < c->ns; s++)
    ntab += o->aval.dims[c->os[2 + s]] * r->aval.dims[c->rs[2 + s]];
  int64_t *boff = (int64_t *)(void *)((char *)t + conv_region(sizeof(int64_t) * (size_t)(ntab + 1)));
  int64_t *pb = boff + g.R * g.KW;
  c_strides(&o->aval, ost);
  /* tab[s][y*kd + k]: the lhs offset along spatial axis s of output
   * position y and kernel position k, or -1 for a hole or a pad. */
  for (int s = 0; s < c->ns; s++) {
    int64_t ax = c->ls[2 + s];
    od[s] = o->aval.dims[c->os[2 + s]], kd[s] = r->aval.dims[c->rs[2 + s]];
    tab[s] = t, t += od[s] * kd[s];
    for (int64_t y = 0; y < od[s]; y++)
      for (int64_t k = 0; k < kd[s]; k++) {
        int64_t q = unpad(y * c->ws[s] + k * c->rd[s], c->lo[s], c->ld[s], l->aval.dims[ax]);
        tab[s][y * kd[s] + k] = q < 0 ? -1 : q * lst[ax];
      }
  }
  int64_t nblk = ft_gemm_blocks(g.P, g.OG, g.K);
  for (int64_t q = 0; q < g.G; q++) {
    int64_t gf = c->fg > 1 ? q : 0, b0 = c->bg > 1 ? q * g.NB : 0;
    /* W[K][OG]: W[(i, k...)][o] = rhs[q*OG + o, i, k...] */
    for (int64_t oo = 0; oo < g.OG; oo++) {
      int64_t k[FT_MAX_RANK] = {0}, kk = 0;
      for (int64_t i = 0; i < g.I; i++) {
        if (g.KW > 0)
          do {
            int64_t ro = (q * g.OG + oo) * rst[c->rs[0]] + i * rst[c->rs[1]];
            for (int s = 0; s < c->ns; s++) ro += k[s] * rst[c->rs[2 + s]];
            double v = ld_f64(r, ro);
            if (g.f64) ((double *)(void *)W)[kk * g.OG + oo] = v;
            else ((float *)(void *)W)[kk * g.OG + oo] = (float)v;
            kk++;
          } while (next_index(c->ns, kd, k));
      }
    }
    /* yx, yc: the output position of the next patch row and of the next C
     * row, carried from block to block */
    int64_t yx[FT_MAX_RANK] = {0}, yc[FT_MAX_RANK] = {0};
    for (int64_t blk = 0; blk < nblk; blk++) {
      int64_t r0 = blk * g.R, rn = g.P - r0 < g.R ? g.P - r0 : g.R;
      /* pb[p - r0]: the lhs offset of row p's batch and feature group;
       * boff[(p - r0) * KW + kw]: the spatial part of the offset of its
       * kernel position kw (row-major in rhs_spec order), or -1 for a
       * hole or a pad */
      for (int64_t p = r0; p < r0 + rn; p++) {
        int64_t nb = b0 + p / (g.S ? g.S : 1), *bo = boff + (p - r0) * g.KW;
        pb[p - r0] = nb * lst[c->ls[0]] + gf * g.I * lst[c->ls[1]];
        int64_t k[FT_MAX_RANK] = {0}, kw = 0;
        if (g.KW > 0)
          do {
            int64_t off = 0;
            for (int s = 0; s < c->ns && off >= 0; s++) {
              int64_t d = tab[s][yx[s] * kd[s] + k[s]];
              off = d < 0 ? -1 : off + d;
            }
            bo[kw++] = off;
          } while (next_index(c->ns, kd, k));
        if (!next_index(c->ns, od, yx)) memset(yx, 0, sizeof yx);
      }
      /* X[p - r0][K]: one patch per output batch and position, input
       * feature outermost; a hole or a pad is +0 */
      int64_t cst = lst[c->ls[1]];
#define CONV_FILL(T, LOAD)                                                   \
  for (int64_t p = 0; p < rn; p++)                                           \
    for (int64_t i = 0; i < g.I; i++) {                                      \
      const int64_t *bo = boff + p * g.KW, ib = pb[p] + i * cst;             \
      T *xr = (T *)(void *)X + p * g.K + i * g.KW;                           \
      for (int64_t kw = 0; kw < g.KW; kw++)                                  \
        xr[kw] = bo[kw] < 0 ? (T)0 : (T)(LOAD);                              \
    }
      if (g.f64 && l->aval.dtype == FT_F64) {
        const double *src = l->data;
        CONV_FILL(double, src[ib + bo[kw]])
      } else if (g.f64) {
        CONV_FILL(double, ld_f64(l, ib + bo[kw]))
      } else if (l->aval.dtype == FT_F32) {
        const float *src = l->data;
        CONV_FILL(float, src[ib + bo[kw]])
      } else {
        CONV_FILL(float, ld_f64(l, ib + bo[kw]))
      }
#undef CONV_FILL
      bool ok = g.f64 ? ft_gemm_f64_block_at(g.P, g.OG, g.K, blk, (double *)(void *)X, g.K,
                                             (double *)(void *)W, g.OG, (double *)(void *)C, g.OG)
                      : ft_gemm_f32_block_at(g.P, g.OG, g.K, blk, (float *)(void *)X, g.K,
                                             (float *)(void *)W, g.OG, (float *)(void *)C, g.OG);
      if (!ok) return false;
      /* C[p - r0][OG] into out[b, q*OG + o, y...] */
      int64_t fst = ost[c->os[1]];
      for (int64_t p = r0; p < r0 + rn; p++) {
        int64_t bn = p / (g.S ? g.S : 1), oi = bn * ost[c->os[0]] + q * g.OG * fst;
        for (int s = 0; s < c->ns; s++) oi += yc[s] * ost[c->os[2 + s]];
        const char *cr = C + (size_t)((p - r0) * g.OG) * es;
        if (o->aval.dtype == FT_F32 && !g.f64)
          for (int64_t oo = 0; oo < g.OG; oo++)
            ((float *)o->data)[oi + oo * fst] = ((const float *)(const void *)cr)[oo];
        else if (o->aval.dtype == FT_F64)
          for (int64_t oo = 0; oo < g.OG; oo++)
            ((double *)o->data)[oi + oo * fst] = ((const double *)(const void *)cr)[oo];
        else
          for (int64_t oo = 0; oo < g.OG; oo++)
            ft_set_f64(o, oi + oo * fst, ((const float *)(const void *)cr)[oo]);
        if (!next_index(c->ns, od, yc)) memset(yc, 0, sizeof yc);
      }
    }
  }
  return true;
}

ft_status ft_conv_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                       void *scratch) {
  const ft_array *l = in[0], *r = in[1];
  conv_plan c;
  ft_status st;
  if ((st = conv_plan_of(ctx, e, l->aval.rank, &c))) return st;
  ft_dtype odt = e->out[0]->aval.dtype;
  bool ok = ft_dtype_is_float(odt) ||
            (ft_dtype_is_int(odt) && !ft_dtype_is_inexact(l->aval.dtype) && !ft_dtype_is_inexact(r->aval.dtype));
  if (!ok || ft_dtype_is_complex(l->aval.dtype) || ft_dtype_is_complex(r->aval.dtype))
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "conv_general_dilated of %s and %s into %s is not "
                        "supported (real floating or integer operands only)",
                        ft_dtype_name(l->aval.dtype), ft_dtype_name(r->aval.dtype), ft_dtype_name(odt));
  int64_t N = l->aval.dims[c.ls[0]], O = r->aval.dims[c.rs[0]], I = r->aval.dims[c.rs[1]];
  if (l->aval.dims[c.ls[1]] != I * c.fg || O % c.fg || O % c.bg || N % c.bg)
    return ft_set_error(ctx, FT_ERR_SHAPE, "feature or batch sizes do not agree with the group counts");
  if (!out) return FT_OK;
  ft_array *o = out[0];
  int64_t lst[FT_MAX_RANK], rst[FT_MAX_RANK], idx[FT_MAX_RANK] = {0}, y[FT_MAX_RANK];
  c_strides(&l->aval, lst);
  c_strides(&r->aval, rst);
  if (ft_dtype_is_float(odt)) {
    if (ft_array_size(o) == 0) return FT_OK;
    FT_ASSERT(scratch != NULL);
    return conv_float(&c, l, r, o, lst, rst, scratch) ? FT_OK : ft_blas_nomem(ctx);
  }
  int64_t og = O / c.fg, ob = O / c.bg, nbg = N / c.bg, n = ft_array_size(o);
  for (int64_t i = 0; i < n; i++, next_index(o->aval.rank, o->aval.dims, idx)) {
    int64_t bn = idx[c.os[0]], f = idx[c.os[1]];
    for (int s = 0; s < c.ns; s++) y[s] = idx[c.os[2 + s]];
    int64_t g = f / og, nb = (f / ob) * nbg + bn;
    conv_elem ce = {.lbase = nb * lst[c.ls[0]] + g * I * lst[c.ls[1]], .rbase = f * rst[c.rs[0]], .y = y};
    conv_one(&c, l, r, lst, rst, &ce, o, i);
  }
  return FT_OK;
}

/* ------------------------------------------------------------------- top_k */

/* XLA CPU's TopK order: a total order on floats (-NaN < -inf < ... < -0 <
 * +0 < ... < +inf < +NaN), read from the bits; integers by value. */
static int64_t order_key(const ft_array *x, int64_t i) {
  ft_dtype dt = x->aval.dtype;
  uint64_t bits = 0;
  int w = 0;
  switch (dt) {
  case FT_F16: case FT_BF16: bits = ((const uint16_t *)x->data)[i], w = 16; break;
  case FT_F32: bits = ((const uint32_t *)x->data)[i], w = 32; break;
  case FT_F64: bits = ((const uint64_t *)x->data)[i], w = 64; break;
  case FT_U64: return (int64_t)(ft_get_u64(x, i) ^ (UINT64_C(1) << 63));
  default: return ft_get_i64(x, i);
  }
  uint64_t sign = UINT64_C(1) << (w - 1), mag = bits & (sign - 1);
  return (bits & sign) ? -(int64_t)mag - 1 : (int64_t)mag;
}

typedef struct keyed {
  int64_t key, idx;
} keyed;

/* Descending by key; equal keys keep the lower index first. */
static int by_key_desc(const void *pa, const void *pb) {
  const keyed *a = pa, *b = pb;
  if (a->key != b->key) return a->key > b->key ? -1 : 1;
  return (a->idx > b->idx) - (a->idx < b->idx);
}

ft_status ft_interp_top_k(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  return ft_interp_via_into(ctx, e, in, out);
}

/* Merge sort of r[0..n) by by_key_desc (tmp: n more). The order is total
 * (ties by index), so any sort gives this result; this one needs no
 * allocation (glibc's qsort may malloc), as the JIT's routine step requires. */
static void sort_keyed(keyed *r, keyed *tmp, int64_t n) {
  if (n < 2) return;
  int64_t h = n / 2, i = 0, j = h, k = 0;
  sort_keyed(r, tmp, h);
  sort_keyed(r + h, tmp, n - h);
  while (i < h && j < n) tmp[k++] = by_key_desc(&r[j], &r[i]) < 0 ? r[j++] : r[i++];
  while (i < h) tmp[k++] = r[i++];
  while (j < n) tmp[k++] = r[j++];
  memcpy(r, tmp, sizeof *r * (size_t)n);
}

/* The scratch of top_k: one keyed row of the axis and the merge buffer. */
size_t ft_top_k_scratch(const ft_eqn *e) {
  const ft_aval *xa = &e->in[0]->aval;
  int64_t axis = ft_param_int(e, "axis", -1);
  if (axis < 0) axis += xa->rank;
  if (axis < 0 || axis >= xa->rank) return 0;
  return 2 * sizeof(keyed) * (size_t)(xa->dims[axis] > 0 ? xa->dims[axis] : 1);
}

ft_status ft_top_k_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                        void *scratch) {
  const ft_array *x = in[0];
  const ft_aval *xa = &x->aval;
  int64_t axis = ft_param_int(e, "axis", -1), k = ft_param_int(e, "k", 0);
  if (axis < 0) axis += xa->rank;
  if (axis < 0 || axis >= xa->rank || k < 0 || k > xa->dims[axis])
    return ft_set_error(ctx, FT_ERR_SHAPE, "top_k: bad axis or k");
  if (ft_dtype_is_complex(xa->dtype))
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "top_k of a complex operand");
  if (!out) return FT_OK;
  int64_t len = xa->dims[axis], inner = 1, outer = 1;
  for (int i = 0; i < axis; i++) outer *= xa->dims[i];
  for (int i = (int)axis + 1; i < xa->rank; i++) inner *= xa->dims[i];
  keyed *row = scratch;
  size_t es = ft_dtype_size(xa->dtype);
  for (int64_t a = 0; a < outer; a++)
    for (int64_t b = 0; b < inner; b++) {
      for (int64_t j = 0; j < len; j++) {
        row[j].idx = j;
        row[j].key = order_key(x, (a * len + j) * inner + b);
      }
      sort_keyed(row, row + len, len);
      for (int64_t j = 0; j < k; j++) {
        int64_t oi = (a * k + j) * inner + b, xi = (a * len + row[j].idx) * inner + b;
        memcpy((char *)out[0]->data + (size_t)oi * es, (const char *)x->data + (size_t)xi * es, es);
        ft_set_i64(out[1], oi, row[j].idx);
      }
    }
  return FT_OK;
}
