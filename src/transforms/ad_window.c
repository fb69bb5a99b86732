/* src/transforms/ad_window.c: the derivatives of the windowed primitives
 * (docs/autodiff.md, "Windows and convolutions"):
 *   - JVP of reduce_window_max/min: the tangent of the element each window
 *     selects, the first in row-major window order among those equal to the
 *     result (XLA's select_and_gather_add, which JAX's rule lowers to on
 *     CPU, keeps its accumulator on ties). It is built from pad, strided
 *     slices and a select_n chain over the window offsets, so it is linear
 *     in the tangent and transposes with existing rules;
 *   - transpose of reduce_window_sum (JAX's _reduce_window_sum_transpose_rule):
 *     the cotangent padded (strides as interior padding) and summed again
 *     with the same window;
 *   - transposes of conv_general_dilated with respect to lhs and rhs (JAX's
 *     _conv_general_dilated_transpose_lhs/_rhs), with feature and batch
 *     groups moved between the kernel's axes as JAX does.
 * Everything emitted is a primitive that has a JVP and a transpose itself,
 * so grad∘grad works through these rules. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "transforms.h"

/* ------------------------------------------------------------ helpers */

/* An int-tuple param with n entries; an absent, None or empty one means n
 * ones when optional (the dilations, as the shape rule reads them). */
static bool ints_n(ft_prim p, const ft_pval *ps, const char *name, int n, int64_t *out, bool optional) {
  int k = pget_ints(p, ps, name, out, FT_MAX_RANK);
  if (k == n) return true;
  if (!optional || k > 0) return false;
  for (int i = 0; i < n; i++) out[i] = 1;
  return true;
}

/* padding=((lo, hi), ...) with n pairs; None means no padding. */
static bool pairs_n(ft_prim p, const ft_pval *ps, int n, int64_t *lo, int64_t *hi) {
  const ft_pval *v = pget(p, ps, "padding");
  for (int i = 0; i < n; i++) lo[i] = hi[i] = 0;
  if (!v || v->tag == FT_PV_NONE) return true;
  if (v->tag != FT_PV_TUPLE || v->n != n) return false;
  for (int i = 0; i < n; i++) {
    int64_t lh[2];
    int k = 0;
    if (!ft_pv_get_ints(&v->u.items[i], lh, 2, &k) || k != 2) return false;
    lo[i] = lh[0], hi[i] = lh[1];
  }
  return true;
}

/* ((lo, hi), ...) as a param value in t's arena. */
static ft_pval pairs_pv(tx *t, int n, const int64_t *lo, const int64_t *hi) {
  ft_pval v = ft_pv_tuple(t->a, n);
  if (n && !v.u.items) return tx_nomem(t), v;
  for (int i = 0; i < n; i++) v.u.items[i] = ft_pv_ints(t->a, 2, (int64_t[]){lo[i], hi[i]});
  return v;
}

/* The size of an axis of d elements dilated by s (lax._dilate_shape). */
static int64_t dilated(int64_t d, int64_t s) { return d == 0 ? 0 : 1 + s * (d - 1); }

/* ---------------------------------------------------------- reduce_window */

typedef struct win {
  int r;
  int64_t wd[FT_MAX_RANK], ws[FT_MAX_RANK], bd[FT_MAX_RANK], wdl[FT_MAX_RANK];
  int64_t lo[FT_MAX_RANK], hi[FT_MAX_RANK];
} win;

static bool win_read(tx *t, ft_prim p, const ft_pval *ps, int r, win *w, const char *what) {
  w->r = r;
  if (ints_n(p, ps, "window_dimensions", r, w->wd, false) && ints_n(p, ps, "window_strides", r, w->ws, false) &&
      ints_n(p, ps, "base_dilation", r, w->bd, true) && ints_n(p, ps, "window_dilation", r, w->wdl, true) &&
      pairs_n(p, ps, r, w->lo, w->hi))
    return true;
  tx_fail(t, FT_ERR_TYPE, "%s of %s: window params need one entry per axis of the rank-%d operand", what,
          ft_prim_get(p)->name, r);
  return false;
}

/* reduce_window_max/min JVP. With x' = x padded by the reduction's
 * identity (holes of the base dilation too) and t' = the tangent padded by
 * zeros, window offset k of every output element reads the strided slices
 * x'_k and t'_k. The tangent is t'_k for the first k (row-major) with
 * x'_k == y: a select_n chain built from the last offset to the first.
 * Where y is the identity itself (every element -inf for max) XLA's
 * accumulator, the identity with a zero tangent, wins the tie, so y is
 * replaced by NaN there on the primal side: nothing matches and the
 * tangent is 0. A NaN in the window (y NaN) likewise gives 0. */
bool jvp_reduce_window_chooser(jvp_call *c) {
  tx *t = c->t;
  ft_var *x = c->x[0], *dx = c->dx[0], *y = c->y[0];
  const ft_aval *ya = &y->aval;
  ft_prim p = c->e->prim;
  win w;
  if (!dx) return true;
  if (!win_read(t, p, c->params, x->aval.rank, &w, "jvp")) return false;
  int r = w.r;
  if (ft_aval_size(ya) == 0) return (c->dy[0] = tx_zeros(t, ya)) != NULL;
  ft_dtype dt = x->aval.dtype;
  ft_var *fill = tx_lit(t, dt, p == FT_P_REDUCE_WINDOW_MAX ? -INFINITY : INFINITY);
  int64_t interior[FT_MAX_RANK];
  bool padded = false;
  for (int i = 0; i < r; i++) {
    interior[i] = w.bd[i] - 1;
    padded = padded || w.lo[i] || w.hi[i] || interior[i];
  }
  ft_var *xp = padded ? tx_pad(t, x, fill, w.lo, w.hi, interior) : x;
  ft_var *tp = padded ? tx_pad(t, dx, tx_lit(t, dt, 0.0), w.lo, w.hi, interior) : dx;
  ft_var *at_fill = tx_emit(t, FT_P_EQ, NULL, 2, (ft_var *[]){y, fill});
  ft_var *ym = tx_select(t, at_fill, y, tx_full(t, ya, NAN));
  ft_var *acc = tx_zeros(t, ya);
  int64_t n_off = 1, k[FT_MAX_RANK], st[FT_MAX_RANK], lim[FT_MAX_RANK];
  for (int i = 0; i < r; i++) n_off *= w.wd[i];
  for (int64_t q = n_off - 1; q >= 0 && !t->failed; q--) {
    int64_t rem = q;
    for (int i = r - 1; i >= 0; i--) k[i] = rem % w.wd[i], rem /= w.wd[i];
    for (int i = 0; i < r; i++) {
      st[i] = k[i] * w.wdl[i];
      lim[i] = st[i] + (ya->dims[i] - 1) * w.ws[i] + 1;
    }
    ft_var *eq = tx_emit(t, FT_P_EQ, NULL, 2, (ft_var *[]){tx_slice(t, xp, st, lim, w.ws), ym});
    acc = tx_select(t, eq, acc, tx_slice(t, tp, st, lim, w.ws));
  }
  c->dy[0] = acc;
  return !t->failed;
}

/* reduce_window_sum transpose: every output element is the sum of the
 * operand elements under its window, so an operand element receives the
 * cotangents of every window covering it. Dilating the cotangent by the
 * strides and padding it as JAX's _conv_general_vjp_lhs_padding does lines
 * those up under a window of the same shape and dilation slid with stride
 * base_dilation (a window of ones is its own reversal). */
bool tr_reduce_window_sum(tr_call *c) {
  tx *t = c->t;
  const ft_aval *xa = &c->e->in[0]->aval;
  ft_var *ct = c->ct[0];
  win w;
  if (!win_read(t, FT_P_REDUCE_WINDOW_SUM, c->params, xa->rank, &w, "transpose")) return false;
  int r = w.r;
  if (ft_aval_size(xa) == 0 || ft_aval_size(&ct->aval) == 0)
    return (c->ct_x[0] = tx_zeros(t, xa)) != NULL;
  int64_t lo[FT_MAX_RANK], hi[FT_MAX_RANK], in[FT_MAX_RANK], zero[FT_MAX_RANK][2], ones[FT_MAX_RANK];
  for (int i = 0; i < r; i++) {
    int64_t ld = dilated(xa->dims[i], w.bd[i]), rd = dilated(w.wd[i], w.wdl[i]);
    int64_t od = dilated(ct->aval.dims[i], w.ws[i]);
    lo[i] = rd - w.lo[i] - 1;
    hi[i] = ld + rd - 1 - od - lo[i];
    in[i] = w.ws[i] - 1;
    zero[i][0] = zero[i][1] = 0;
    ones[i] = 1;
  }
  ft_var *pc = tx_pad(t, ct, tx_lit(t, ct->aval.dtype, 0.0), lo, hi, in);
  ft_pval *ps = tx_params(t, FT_P_REDUCE_WINDOW_SUM);
  if (!ps) return false;
  ft_pval pad = ft_pv_tuple(t->a, r);
  if (r && !pad.u.items) return tx_nomem(t), false;
  for (int i = 0; i < r; i++) pad.u.items[i] = ft_pv_ints(t->a, 2, zero[i]);
  pset(FT_P_REDUCE_WINDOW_SUM, ps, "window_dimensions", ft_pv_ints(t->a, r, w.wd));
  pset(FT_P_REDUCE_WINDOW_SUM, ps, "window_strides", ft_pv_ints(t->a, r, w.bd));
  pset(FT_P_REDUCE_WINDOW_SUM, ps, "padding", pad);
  pset(FT_P_REDUCE_WINDOW_SUM, ps, "base_dilation", ft_pv_ints(t->a, r, ones));
  pset(FT_P_REDUCE_WINDOW_SUM, ps, "window_dilation", ft_pv_ints(t->a, r, w.wdl));
  ft_var *res = tx_emit(t, FT_P_REDUCE_WINDOW_SUM, ps, 1, &pc);
  if (res && !ft_aval_eq(&res->aval, xa))
    return tx_fail(t, FT_ERR_INTERNAL, "transpose of reduce_window_sum: cotangent has the wrong shape"), false;
  c->ct_x[0] = res;
  return !t->failed;
}

/* ------------------------------------------------------------------ conv */

typedef struct convp {
  int n, ns;                                      /* rank, spatial axes */
  int64_t ls[FT_MAX_RANK], rs[FT_MAX_RANK], os[FT_MAX_RANK];
  int64_t ws[FT_MAX_RANK], lo[FT_MAX_RANK], hi[FT_MAX_RANK], ld[FT_MAX_RANK], rd[FT_MAX_RANK];
  int64_t fg, bg;
} convp;

static bool conv_read(tr_call *c, convp *p) {
  ft_prim P = FT_P_CONV_GENERAL_DILATED;
  const ft_pval *ps = c->params, *dn = pget(P, ps, "dimension_numbers");
  int n = c->e->in[0]->aval.rank, nl = n, nr = n, no = n;
  p->n = n, p->ns = n - 2;
  if (!dn || dn->tag == FT_PV_NONE) {
    for (int i = 0; i < n; i++) p->ls[i] = p->rs[i] = p->os[i] = i;
  } else if (!ft_dimnums_field(dn, "lhs_spec", 0, p->ls, &nl) || !ft_dimnums_field(dn, "rhs_spec", 1, p->rs, &nr) ||
             !ft_dimnums_field(dn, "out_spec", 2, p->os, &no) || nl != n || nr != n || no != n) {
    return tx_fail(c->t, FT_ERR_TYPE, "transpose of conv_general_dilated: malformed dimension_numbers"), false;
  }
  p->fg = pget_int(P, ps, "feature_group_count", 1);
  p->bg = pget_int(P, ps, "batch_group_count", 1);
  if (!ints_n(P, ps, "window_strides", p->ns, p->ws, false) || !ints_n(P, ps, "lhs_dilation", p->ns, p->ld, true) ||
      !ints_n(P, ps, "rhs_dilation", p->ns, p->rd, true) || !pairs_n(P, ps, p->ns, p->lo, p->hi))
    return tx_fail(c->t, FT_ERR_TYPE, "transpose of conv_general_dilated: strides, padding and dilations "
                   "need one entry per spatial axis (%d)", p->ns), false;
  if (p->fg > 1 && p->bg > 1)
    return tx_fail(c->t, FT_ERR_SHAPE, "transpose of conv_general_dilated: feature_group_count=%lld and "
                   "batch_group_count=%lld cannot both exceed 1", (long long)p->fg, (long long)p->bg), false;
  return true;
}

/* Appends "name=(a, b, ...)" (after sep) to b at k; returns the new length. */
static size_t put_spec(char *b, size_t cap, size_t k, const char *sep, const char *name, int n,
                       const int64_t *v) {
#define ROOM (k < cap ? cap - k : 0)
  k += (size_t)snprintf(b + k, ROOM, "%s%s=(", sep, name);
  for (int i = 0; i < n; i++) k += (size_t)snprintf(b + k, ROOM, "%s%lld", i ? ", " : "", (long long)v[i]);
  k += (size_t)snprintf(b + k, ROOM, ")");
#undef ROOM
  return k;
}

/* conv_general_dilated(lhs, rhs) with the configuration q; precision and
 * preferred_element_type are the source equation's. */
static ft_var *conv_emit(tr_call *c, const convp *q, ft_var *lhs, ft_var *rhs) {
  tx *t = c->t;
  ft_prim P = FT_P_CONV_GENERAL_DILATED;
  if (!lhs || !rhs) return NULL;
  char b[600];
  size_t k = (size_t)snprintf(b, sizeof b, "ConvDimensionNumbers(");
  k = put_spec(b, sizeof b, k, "", "lhs_spec", q->n, q->ls);
  k = put_spec(b, sizeof b, k, ", ", "rhs_spec", q->n, q->rs);
  k = put_spec(b, sizeof b, k, ", ", "out_spec", q->n, q->os);
  k += (size_t)snprintf(b + k, k < sizeof b ? sizeof b - k : 0, ")");
  if (k >= sizeof b) return tx_fail(t, FT_ERR_INTERNAL, "conv dimension numbers too long");
  char *s = ft_arena_strndup(t->a, b, k);
  ft_pval *ps = tx_params(t, P);
  if (!s || !ps) return s ? NULL : tx_nomem(t);
  pset(P, ps, "dimension_numbers", (ft_pval){.tag = FT_PV_OPAQUE, .s = s});
  pset(P, ps, "window_strides", ft_pv_ints(t->a, q->ns, q->ws));
  pset(P, ps, "padding", pairs_pv(t, q->ns, q->lo, q->hi));
  pset(P, ps, "lhs_dilation", ft_pv_ints(t->a, q->ns, q->ld));
  pset(P, ps, "rhs_dilation", ft_pv_ints(t->a, q->ns, q->rd));
  pset(P, ps, "feature_group_count", ft_pv_int(q->fg));
  pset(P, ps, "batch_group_count", ft_pv_int(q->bg));
  const char *keep[] = {"precision", "preferred_element_type"};
  for (int i = 0; i < 2; i++) {
    const ft_pval *v = pget(P, c->params, keep[i]);
    if (v) pset(P, ps, keep[i], *v);
  }
  if (t->failed) return NULL;
  return tx_emit(t, P, ps, 2, (ft_var *[]){lhs, rhs});
}

/* JAX's _reshape_axis_out_of: axis src of size a*b becomes (a, b). */
static ft_var *axis_out_of(tx *t, ft_var *x, int src, int64_t a) {
  if (!x) return NULL;
  int r = x->aval.rank;
  int64_t d[FT_MAX_RANK + 1];
  for (int i = 0, j = 0; i < r; i++) {
    if (i == src) d[j++] = a, d[j++] = x->aval.dims[i] / a;
    else d[j++] = x->aval.dims[i];
  }
  if (r + 1 > FT_MAX_RANK) return tx_fail(t, FT_ERR_UNSUPPORTED, "conv transpose: rank %d + 1 exceeds %d", r, FT_MAX_RANK);
  return tx_reshape(t, x, r + 1, d);
}

/* JAX's _reshape_axis_into: axis src moves in front of axis dst (numbered
 * without src) and merges with it, src major. */
static ft_var *axis_into(tx *t, ft_var *x, int src, int dst) {
  if (!x) return NULL;
  int r = x->aval.rank;
  int64_t perm[FT_MAX_RANK], d[FT_MAX_RANK];
  int m = 0;
  for (int i = 0; i < r; i++)
    if (i != src) perm[m++] = i;
  memmove(perm + dst + 1, perm + dst, sizeof perm[0] * (size_t)(m - dst));
  perm[dst] = src;
  for (int i = 0, j = 0; i < r; i++) {
    if (i == src) continue;
    d[j] = x->aval.dims[i] * (j == dst ? x->aval.dims[src] : 1);
    j++;
  }
  return tx_reshape(t, tx_transpose(t, x, r, perm), r - 1, d);
}

static void swap01(int64_t *v) {
  int64_t s = v[0];
  v[0] = v[1], v[1] = s;
}

/* d lhs: the cotangent convolved with the spatially reversed kernel whose
 * in/out features are swapped (groups moved into the new out features),
 * the strides becoming lhs dilation and vice versa. */
static ft_var *conv_tr_lhs(tr_call *c, const convp *p) {
  tx *t = c->t;
  const ft_aval *la = &c->e->in[0]->aval;
  ft_var *g = c->ct[0], *rhs = c->x[1];
  int64_t groups = p->fg > 1 ? p->fg : p->bg;
  if (groups > 1) rhs = axis_into(t, axis_out_of(t, rhs, (int)p->rs[0], groups), (int)p->rs[0], (int)p->rs[1]);
  if (!rhs) return NULL;
  convp q = *p;
  memcpy(q.ls, p->os, sizeof q.ls), memcpy(q.rs, p->rs, sizeof q.rs), memcpy(q.os, p->ls, sizeof q.os);
  swap01(q.rs);
  int64_t sd[FT_MAX_RANK];
  for (int i = 0; i < p->ns; i++) {
    int64_t ld = dilated(la->dims[p->ls[2 + i]], p->ld[i]), rd = dilated(rhs->aval.dims[p->rs[2 + i]], p->rd[i]);
    int64_t od = dilated(g->aval.dims[p->os[2 + i]], p->ws[i]);
    q.lo[i] = rd - p->lo[i] - 1;
    q.hi[i] = ld + rd - 1 - od - q.lo[i];
    q.ws[i] = p->ld[i], q.ld[i] = p->ws[i];
    sd[i] = p->rs[2 + i];
  }
  q.fg = groups, q.bg = 1;
  ft_pval *rp = tx_params(t, FT_P_REV);
  if (!rp) return NULL;
  pset(FT_P_REV, rp, "dimensions", ft_pv_ints(t->a, p->ns, sd));
  ft_var *out = conv_emit(c, &q, g, tx_emit(t, FT_P_REV, rp, 1, &rhs));
  if (p->bg > 1) out = axis_into(t, axis_out_of(t, out, (int)p->ls[1], p->bg), (int)p->ls[1], (int)p->ls[0]);
  return tx_convert(t, out, la->dtype);
}

/* d rhs: lhs convolved with the cotangent as the kernel, batch and feature
 * axes of both swapped; feature groups become batch groups and back. */
static ft_var *conv_tr_rhs(tr_call *c, const convp *p) {
  tx *t = c->t;
  const ft_aval *la = &c->e->in[0]->aval, *ra = &c->e->in[1]->aval;
  ft_var *g = c->ct[0];
  if (ft_aval_size(&g->aval) == 0) return tx_zeros(t, ra);
  convp q = *p; /* dimension numbers (lhs, out, rhs), each with batch and feature swapped */
  memcpy(q.rs, p->os, sizeof q.rs), memcpy(q.os, p->rs, sizeof q.os);
  swap01(q.ls), swap01(q.rs), swap01(q.os);
  for (int i = 0; i < p->ns; i++) {
    int64_t ld = dilated(la->dims[p->ls[2 + i]], p->ld[i]), rd = dilated(ra->dims[p->rs[2 + i]], p->rd[i]);
    int64_t od = dilated(g->aval.dims[p->os[2 + i]], p->ws[i]);
    q.hi[i] = (od - ld) + (rd - p->lo[i] - 1);
    q.ws[i] = p->rd[i], q.rd[i] = p->ws[i];
  }
  q.fg = p->bg, q.bg = p->fg;
  return tx_convert(t, conv_emit(c, &q, c->x[0], g), ra->dtype);
}

bool tr_conv(tr_call *c) {
  if (c->lin[0] && c->lin[1])
    return tx_fail(c->t, FT_ERR_UNSUPPORTED, "transpose of conv_general_dilated: both operands are linear"), false;
  convp p;
  if (!conv_read(c, &p)) return false;
  int i = c->lin[0] ? 0 : 1;
  ft_var *r = i == 0 ? conv_tr_lhs(c, &p) : conv_tr_rhs(c, &p);
  if (r && !ft_aval_eq(&r->aval, &c->e->in[i]->aval))
    return tx_fail(c->t, FT_ERR_INTERNAL, "transpose of conv_general_dilated: the %s cotangent has the wrong "
                   "shape", i == 0 ? "lhs" : "rhs"), false;
  c->ct_x[i] = r;
  return !c->t->failed;
}
