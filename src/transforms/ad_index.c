/* src/transforms/ad_index.c: derivative rules of the index primitives —
 * gather, the scatter family, top_k, cummax/cummin (issue #3).
 *
 * JVP rules (JAX's, with the differences noted at each rule):
 *   gather        gather of the tangent with fill_value 0
 *   scatter-add   scatter-add of the tangents
 *   scatter       the winning update's tangent (ids scattered and gathered
 *                 back to mask the tangents, then one scatter-add)
 *   scatter-mul   scatter-mul of the operand tangent; the updates' tangent
 *                 only with unique_indices (as JAX)
 *   scatter-min/max  JAX's _scatter_extremal_jvp (ties averaged)
 *   top_k, cummax, cummin  the tangent taken at the selected positions
 * Every tangent is built from gather, scatter-add, scatter-mul (operand),
 * select_n and mul with primal factors, so it is linear and transposable.
 *
 * Transpose rules: gather <-> scatter-add with converted dimension numbers
 * (mode passed through, as JAX), scatter-mul in the operand, and scatter
 * (exact with duplicate indices: the ids trick again). */
#include <stdio.h>
#include <string.h>

#include "transforms.h"

/* ------------------------------------------------- dimension numbers */

/* Gather and scatter dimension numbers in one form: field k of
 * GatherDimensionNumbers corresponds to field k of ScatterDimensionNumbers
 * (offset_dims ~ update_window_dims, collapsed_slice_dims ~
 * inserted_window_dims, start_index_map ~ scatter_dims_to_operand_dims,
 * the batching dims alike), which is what makes one the other's transpose. */
enum { DN_WIN, DN_INS, DN_MAP, DN_OBD, DN_IBD, DN_NF };
typedef struct idx_dn {
  int64_t v[DN_NF][FT_MAX_RANK];
  int n[DN_NF];
} idx_dn;

static const char *const GATHER_FIELD[DN_NF] = {"offset_dims", "collapsed_slice_dims", "start_index_map",
                                                "operand_batching_dims", "start_indices_batching_dims"};
static const char *const SCATTER_FIELD[DN_NF] = {"update_window_dims", "inserted_window_dims",
                                                 "scatter_dims_to_operand_dims", "operand_batching_dims",
                                                 "scatter_indices_batching_dims"};

static bool dn_read(tx *t, ft_prim p, const ft_pval *params, idx_dn *d) {
  const ft_pval *v = pget(p, params, "dimension_numbers");
  const char *const *f = p == FT_P_GATHER ? GATHER_FIELD : SCATTER_FIELD;
  for (int k = 0; k < DN_NF; k++)
    if (!ft_dimnums_field(v, f[k], k, d->v[k], &d->n[k])) {
      if (k < DN_OBD) {
        tx_fail(t, FT_ERR_TYPE, "%s of %s: malformed dimension_numbers (no %s)", t->what,
                ft_prim_get(p)->name, f[k]);
        return false;
      }
      d->n[k] = 0; /* printouts before JAX 0.4.31 have no batching dims */
    }
  return true;
}

static bool dn_has(const idx_dn *d, int k, int64_t x) {
  for (int i = 0; i < d->n[k]; i++)
    if (d->v[k][i] == x) return true;
  return false;
}

/* The dimension numbers as JAX prints them, e.g.
 * GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), ...). */
static ft_pval dn_text(tx *t, bool gather, const idx_dn *d) {
  char b[1024];
  size_t len = (size_t)snprintf(b, sizeof b, "%sDimensionNumbers(", gather ? "Gather" : "Scatter");
  for (int k = 0; k < DN_NF; k++) {
    len += (size_t)snprintf(b + len, sizeof b - len, "%s%s=(", k ? ", " : "",
                            (gather ? GATHER_FIELD : SCATTER_FIELD)[k]);
    for (int i = 0; i < d->n[k]; i++)
      len += (size_t)snprintf(b + len, sizeof b - len, "%s%lld", i ? ", " : "", (long long)d->v[k][i]);
    len += (size_t)snprintf(b + len, sizeof b - len, "%s)", d->n[k] == 1 ? "," : "");
  }
  snprintf(b + len, sizeof b - len, ")");
  ft_pval v = {.tag = FT_PV_OPAQUE};
  v.s = ft_arena_strndup(t->a, b, strlen(b));
  if (!v.s) tx_nomem(t);
  return v;
}

/* JAX's GatherScatterMode: FILL_OR_DROP when the param is None, 1 or names
 * it (as the interpreter decodes it). */
static bool mode_is_fill(const ft_pval *m) {
  if (!m || m->tag == FT_PV_NONE) return true;
  if (m->tag == FT_PV_INT) return m->u.i == 1;
  return m->s && strstr(m->s, "FILL_OR_DROP");
}

/* The slice sizes of the gather that reads back what a scatter with
 * dimension numbers d and updates of shape u writes into an operand of rank
 * r: 1 on inserted and batching axes, else the update window's size. */
static bool slice_sizes_of(tx *t, const idx_dn *d, int r, const ft_aval *u, int64_t *ss) {
  int pos = 0;
  for (int i = 0; i < r; i++) {
    if (dn_has(d, DN_INS, i) || dn_has(d, DN_OBD, i)) {
      ss[i] = 1;
    } else {
      if (pos >= d->n[DN_WIN] || d->v[DN_WIN][pos] < 0 || d->v[DN_WIN][pos] >= u->rank) {
        tx_fail(t, FT_ERR_SHAPE, "%s: update_window_dims do not fit the updates", t->what);
        return false;
      }
      ss[i] = u->dims[d->v[DN_WIN][pos++]];
    }
  }
  return true;
}

/* ------------------------------------------------------------- emitters */

/* The params every gather/scatter shares: mode and the two hints. */
typedef struct idx_opts {
  const ft_pval *mode;
  bool sorted, unique;
} idx_opts;

static idx_opts opts_of(ft_prim p, const ft_pval *params) {
  idx_opts o = {.mode = pget(p, params, "mode")};
  o.sorted = pget_bool(p, params, "indices_are_sorted", false);
  o.unique = pget_bool(p, params, "unique_indices", false);
  return o;
}

/* gather(x, idx) with dimension numbers d; fill_value 0 in FILL_OR_DROP
 * mode (a gather of tangents or cotangents must be linear). */
static ft_var *gather0(tx *t, ft_var *x, ft_var *idx, const idx_dn *d, const int64_t *ss,
                       const idx_opts *o) {
  if (!x || !idx || t->failed) return NULL;
  ft_pval *ps = tx_params(t, FT_P_GATHER);
  if (!ps) return NULL;
  pset(FT_P_GATHER, ps, "dimension_numbers", dn_text(t, true, d));
  pset(FT_P_GATHER, ps, "slice_sizes", ft_pv_ints(t->a, x->aval.rank, ss));
  if (o->mode) pset(FT_P_GATHER, ps, "mode", *o->mode);
  pset(FT_P_GATHER, ps, "indices_are_sorted", ft_pv_bool(o->sorted));
  pset(FT_P_GATHER, ps, "unique_indices", ft_pv_bool(o->unique));
  if (mode_is_fill(o->mode)) pset(FT_P_GATHER, ps, "fill_value", ft_pv_int(0));
  return tx_emit(t, FT_P_GATHER, ps, 2, (ft_var *[]){x, idx});
}

/* { lambda ; a:T[] b:T[]. let c:T[] = add a b in (c,) }: the update_jaxpr
 * JAX prints on scatter-add. */
static ft_jaxpr *add_jaxpr(tx *t, ft_dtype dt) {
  ft_jaxpr *j = ft_jaxpr_new(t->a);
  ft_aval s = {.dtype = dt};
  ft_var *in[2] = {j ? ft_var_new(t->a, &s) : NULL, j ? ft_var_new(t->a, &s) : NULL};
  if (!in[0] || !in[1]) return tx_nomem(t);
  tx bt;
  tx_init(&bt, t->ctx, j, t->what);
  ft_var *c = tx_emit(&bt, FT_P_ADD, NULL, 2, in);
  if (!c) return t->failed = true, NULL;
  if (!ft_jaxpr_set_vars(j, 0, NULL, 2, in, 1, &c)) return tx_nomem(t);
  return j;
}

/* scatter (p = FT_P_SCATTER: overwrite) or scatter-add of u into x. */
static ft_var *scatter_emit(tx *t, ft_prim p, ft_var *x, ft_var *idx, ft_var *u, const idx_dn *d,
                            const idx_opts *o) {
  if (!x || !idx || !u || t->failed) return NULL;
  ft_pval *ps = tx_params(t, p);
  if (!ps) return NULL;
  pset(p, ps, "dimension_numbers", dn_text(t, false, d));
  if (o->mode) pset(p, ps, "mode", *o->mode);
  pset(p, ps, "indices_are_sorted", ft_pv_bool(o->sorted));
  pset(p, ps, "unique_indices", ft_pv_bool(o->unique));
  if (p == FT_P_SCATTER_ADD) {
    ft_jaxpr *aj = add_jaxpr(t, x->aval.dtype);
    if (!aj) return NULL;
    pset(p, ps, "update_jaxpr", ft_pv_jaxpr(aj));
  }
  return tx_emit(t, p, ps, 3, (ft_var *[]){x, idx, u});
}

static ft_var *cmp(tx *t, ft_prim p, ft_var *a, ft_var *b) {
  if (!a || !b) return NULL;
  return tx_emit(t, p, NULL, 2, (ft_var *[]){a, b});
}

/* The position of each update among all updates (1, 2, ...), the same
 * across its window: iota over the scatter axes of u, broadcast along the
 * window axes. Ids are i32 (i64 beyond 2^31 - 1 updates). */
static ft_var *update_ids(tx *t, const ft_aval *u, const idx_dn *d) {
  int64_t shp[FT_MAX_RANK], bd[FT_MAX_RANK], n = 1;
  for (int i = 0; i < u->rank; i++) {
    bool win = false;
    for (int k = 0; k < d->n[DN_WIN]; k++) win = win || d->v[DN_WIN][k] == i;
    shp[i] = win ? 1 : u->dims[i];
    bd[i] = i;
    n *= shp[i];
  }
  ft_dtype dt = n < INT32_MAX ? FT_I32 : FT_I64;
  ft_pval *ip = tx_params(t, FT_P_IOTA);
  if (!ip) return NULL;
  pset(FT_P_IOTA, ip, "dimension", ft_pv_int(0));
  pset(FT_P_IOTA, ip, "dtype", ft_pv_dtype(dt));
  pset(FT_P_IOTA, ip, "shape", ft_pv_ints(t->a, 1, &n));
  ft_var *ids = tx_reshape(t, tx_emit(t, FT_P_IOTA, ip, 0, NULL), u->rank, shp);
  ids = tx_add(t, ids, tx_lit(t, dt, 1.0));
  bool same = true;
  for (int i = 0; i < u->rank; i++) same = same && shp[i] == u->dims[i];
  return same ? ids : tx_bcast(t, ids, u->rank, u->dims, bd);
}

/* Which element of the operand and of the updates survives a scatter
 * (overwrite) whose winners are decided by the interpreter (last write in
 * row-major order of the updates): ids are scattered, then gathered back
 * with the same indices and mode. keep_x: operand positions no update
 * wrote; keep_u: update elements that won their position. Both primal. */
typedef struct winners {
  ft_var *keep_x, *keep_u;
} winners;

static winners scatter_winners(tx *t, const ft_aval *x, ft_var *idx, const ft_aval *u, const idx_dn *d,
                               const idx_opts *o) {
  winners w = {0};
  int64_t ss[FT_MAX_RANK];
  if (!slice_sizes_of(t, d, x->rank, u, ss)) return w;
  ft_var *ids = update_ids(t, u, d);
  if (!ids) return w;
  ft_aval za = *x;
  za.dtype = ids->aval.dtype;
  za.weak_type = false;
  ft_var *sids = scatter_emit(t, FT_P_SCATTER, tx_zeros(t, &za), idx, ids, d, o);
  /* A dropped update reads fill 0 or another update's id: never its own. */
  ft_var *gids = gather0(t, sids, idx, d, ss, o);
  w.keep_x = cmp(t, FT_P_EQ, sids, tx_lit(t, za.dtype, 0.0));
  w.keep_u = cmp(t, FT_P_EQ, ids, gids);
  return w;
}

/* v where m, else zeros (v NULL: zero). */
static ft_var *mask(tx *t, ft_var *m, ft_var *v) {
  if (!v) return NULL;
  return tx_select(t, m, tx_zeros(t, &v->aval), v);
}

/* take_along_axis(x, pos, axis) for pos of x's rank (any size along axis):
 * a gather with every other axis a batching axis. CLIP mode keeps it (and
 * its transpose, a CLIP scatter-add) defined for any pos. */
static ft_var *take_along(tx *t, ft_var *x, ft_var *pos, int axis) {
  if (!x || !pos) return NULL;
  int r = x->aval.rank;
  int64_t dims[FT_MAX_RANK + 1], ss[FT_MAX_RANK];
  idx_dn d = {0};
  for (int i = 0; i < r; i++) {
    dims[i] = pos->aval.dims[i];
    ss[i] = 1;
    if (i != axis) {
      d.v[DN_OBD][d.n[DN_OBD]++] = i;
      d.v[DN_IBD][d.n[DN_IBD]++] = i;
    }
  }
  dims[r] = 1;
  d.v[DN_INS][d.n[DN_INS]++] = axis;
  d.v[DN_MAP][d.n[DN_MAP]++] = axis;
  ft_pval clip = {.tag = FT_PV_STR, .s = "GatherScatterMode.CLIP"};
  idx_opts o = {.mode = &clip};
  return gather0(t, x, tx_reshape(t, pos, r + 1, dims), &d, ss, &o);
}

/* ------------------------------------------------------------ jvp rules */

static ft_var *inst(jvp_call *c, int i) {
  return c->dx[i] ? c->dx[i] : tx_zeros(c->t, &c->x[i]->aval);
}

/* JAX's _gather_jvp_rule: the same gather of the tangent, fill_value 0. */
static bool jvp_gather(jvp_call *c) {
  tx *t = c->t;
  if (!c->dx[0]) return true;
  const ft_pval *ps = c->params;
  if (mode_is_fill(pget(FT_P_GATHER, ps, "mode"))) {
    ft_pval *q = tx_params(t, FT_P_GATHER);
    if (!q) return false;
    memcpy(q, ps, sizeof(ft_pval) * (size_t)ft_prim_get(FT_P_GATHER)->n_params);
    pset(FT_P_GATHER, q, "fill_value", ft_pv_int(0));
    ps = q;
  }
  c->dy[0] = tx_emit(t, FT_P_GATHER, ps, 2, (ft_var *[]){c->dx[0], c->x[1]});
  return !t->failed;
}

/* scatter-add and scatter-sub are linear in operand and updates (JAX's
 * _scatter_addsub_jvp). */
static bool jvp_scatter_add(jvp_call *c) {
  ft_var *in[3] = {inst(c, 0), c->x[1], inst(c, 2)};
  c->dy[0] = tx_emit(c->t, c->e->prim, c->params, 3, in);
  return !c->t->failed;
}

/* scatter (overwrite): each output position takes the tangent of what
 * the interpreter kept there — the operand's where no update wrote, else
 * the winning update's — as one scatter-add of the masked tangents. The
 * same construction as JAX's _scatter_jvp, also used with unique_indices
 * (where JAX scatters the tangents) so that the result stays transposable. */
static bool jvp_scatter(jvp_call *c) {
  tx *t = c->t;
  if (pget_jaxpr(FT_P_SCATTER, c->params, "update_jaxpr"))
    return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of scatter: a scatter with a custom update_jaxpr "
                   "(scatter_apply) has no JVP rule (JAX has none for it either)"), false;
  idx_dn d;
  if (!dn_read(t, FT_P_SCATTER, c->params, &d)) return false;
  idx_opts o = opts_of(FT_P_SCATTER, c->params);
  winners w = scatter_winners(t, &c->x[0]->aval, c->x[1], &c->x[2]->aval, &d, &o);
  ft_var *dx = c->dx[0] ? mask(t, w.keep_x, c->dx[0]) : tx_zeros(t, &c->x[0]->aval);
  ft_var *du = c->dx[2] ? mask(t, w.keep_u, c->dx[2]) : tx_zeros(t, &c->x[2]->aval);
  c->dy[0] = scatter_emit(t, FT_P_SCATTER_ADD, dx, c->x[1], du, &d, &o);
  return !t->failed;
}

/* scatter-mul: y = x * prod(updates at p). The operand part is the same
 * scatter-mul of its tangent (linear in it); the updates part is
 * x * scatter-add(0, idx, du), exact only when no position is updated
 * twice, so — as JAX — it needs unique_indices. */
static bool jvp_scatter_mul(jvp_call *c) {
  tx *t = c->t;
  ft_var *r = NULL;
  if (c->dx[2]) {
    if (!pget_bool(FT_P_SCATTER_MUL, c->params, "unique_indices", false))
      return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of scatter-mul: the derivative with respect to the "
                     "updates is only implemented with unique_indices=True (as in JAX: scatter_mul "
                     "gradients are only implemented if `unique_indices=True`)"), false;
    idx_dn d;
    if (!dn_read(t, FT_P_SCATTER_MUL, c->params, &d)) return false;
    idx_opts o = opts_of(FT_P_SCATTER_MUL, c->params);
    ft_var *s = scatter_emit(t, FT_P_SCATTER_ADD, tx_zeros(t, &c->x[0]->aval), c->x[1], c->dx[2], &d, &o);
    r = tx_mul(t, c->x[0], s);
  }
  if (c->dx[0])
    r = tx_acc(t, tx_emit(t, FT_P_SCATTER_MUL, c->params, 3, (ft_var *[]){c->dx[0], c->x[1], c->x[2]}), r);
  c->dy[0] = r;
  return !t->failed;
}

/* 1 / max(n, 1): the normalizers below divide by counts that are zero
 * only for updates a FILL_OR_DROP or PROMISE_IN_BOUNDS scatter drops;
 * their coefficients are never used, but must stay finite so that a
 * transposed zero cotangent times them is zero, not NaN. */
static ft_var *recip1(tx *t, ft_var *n) {
  return tx_div(t, tx_lit(t, n->aval.dtype, 1.0), tx_binop(t, FT_P_MAX, n, tx_lit(t, n->aval.dtype, 1.0)));
}

/* scatter-min/max: JAX's _scatter_extremal_jvp. Where several updates and
 * possibly the operand attain the result, the tangent is their average. */
static bool jvp_scatter_extremal(jvp_call *c) {
  tx *t = c->t;
  ft_prim p = c->e->prim;
  ft_var *x = c->x[0], *idx = c->x[1], *u = c->x[2], *y = c->y[0];
  const ft_aval *ua = &u->aval;
  idx_dn d;
  int64_t ss[FT_MAX_RANK];
  if (!dn_read(t, p, c->params, &d) || !slice_sizes_of(t, &d, x->aval.rank, ua, ss)) return false;
  idx_opts o = opts_of(p, c->params), plain = o;
  plain.unique = plain.sorted = false;
  ft_var *init = gather0(t, x, idx, &d, ss, &plain), *tgt = gather0(t, y, idx, &d, ss, &plain);
  ft_var *succ = cmp(t, FT_P_EQ, u, tgt), *ret = cmp(t, FT_P_EQ, init, tgt);
  ft_var *one = tx_full(t, ua, 1.0), *zero = tx_zeros(t, ua), *zx = tx_zeros(t, &x->aval);
  ft_var *nupd = gather0(t, scatter_emit(t, FT_P_SCATTER_ADD, zx, idx, tx_select(t, succ, zero, one), &d, &plain),
                         idx, &d, ss, &plain);
  ft_var *nref = gather0(t, scatter_emit(t, FT_P_SCATTER_ADD, zx, idx, one, &d, &plain), idx, &d, ss, &plain);
  ft_var *r_plus = nupd ? tx_div(t, tx_lit(t, ua->dtype, 1.0), tx_add(t, nupd, tx_lit(t, ua->dtype, 1.0))) : NULL;
  ft_var *upd_norm = tx_select(t, ret, nupd ? recip1(t, nupd) : NULL, r_plus);
  ft_var *upd_coef = tx_select(t, succ, zero, upd_norm);
  ft_var *op_norm = tx_select(t, ret, zero, r_plus);
  ft_var *op_coef = nref ? tx_mul(t, tx_sub(t, op_norm, tx_lit(t, ua->dtype, 1.0)), recip1(t, nref)) : NULL;
  ft_var *tu = NULL;
  if (c->dx[0]) tu = tx_mul(t, gather0(t, c->dx[0], idx, &d, ss, &plain), op_coef);
  if (c->dx[2]) tu = tx_acc(t, tu, tx_mul(t, c->dx[2], upd_coef));
  c->dy[0] = scatter_emit(t, FT_P_SCATTER_ADD, inst(c, 0), idx, tu, &d, &o);
  return !t->failed;
}

/* top_k: the tangent at the returned indices along the axis. */
static bool jvp_top_k(jvp_call *c) {
  int r = c->x[0]->aval.rank;
  int axis = (int)pget_int(FT_P_TOP_K, c->params, "axis", -1);
  if (axis < 0) axis += r;
  c->dy[0] = take_along(c->t, c->dx[0], c->y[1], axis);
  return !c->t->failed;
}

/* cummax/cummin: y_i = x_j(i) where j(i) is the position of the running
 * extremum. x_k == y_k exactly where x_k is a new record (ties included),
 * so j(i) is the last such k at or before i in scan order: a cummax of
 * (x == y ? iota : -1) (reverse: a reverse cummin of (x == y ? iota : n)).
 * At ties the later position in scan order takes the whole tangent; JAX,
 * which differentiates its associative scan, splits it between tied
 * positions instead (docs/autodiff.md). */
static bool jvp_cumext(jvp_call *c) {
  tx *t = c->t;
  ft_prim p = c->e->prim;
  ft_var *x = c->x[0];
  int r = x->aval.rank;
  int64_t axis = pget_int(p, c->params, "axis", 0);
  bool rev = pget_bool(p, c->params, "reverse", false);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) return tx_fail(t, FT_ERR_SHAPE, "jvp of %s: axis out of range", ft_prim_get(p)->name), false;
  int64_t n = x->aval.dims[axis];
  ft_aval ia = x->aval;
  ia.dtype = n < INT32_MAX ? FT_I32 : FT_I64;
  ia.weak_type = false;
  ft_pval *ip = tx_params(t, FT_P_IOTA);
  if (!ip) return false;
  pset(FT_P_IOTA, ip, "dimension", ft_pv_int(axis));
  pset(FT_P_IOTA, ip, "dtype", ft_pv_dtype(ia.dtype));
  pset(FT_P_IOTA, ip, "shape", ft_pv_ints(t->a, r, ia.dims));
  ft_var *io = tx_emit(t, FT_P_IOTA, ip, 0, NULL);
  ft_var *rec = cmp(t, FT_P_EQ, x, c->y[0]);
  ft_var *cand = tx_select(t, rec, tx_full(t, &ia, rev ? (double)n : -1.0), io);
  ft_prim scan = rev ? FT_P_CUMMIN : FT_P_CUMMAX;
  ft_pval *sp = tx_params(t, scan);
  if (!sp) return false;
  pset(scan, sp, "axis", ft_pv_int(axis));
  pset(scan, sp, "reverse", ft_pv_bool(rev));
  ft_var *j = tx_emit(t, scan, sp, 1, &cand);
  c->dy[0] = take_along(t, c->dx[0], j, (int)axis);
  return !t->failed;
}

bool ad_index_prim(ft_prim p) {
  switch (p) {
  case FT_P_GATHER: case FT_P_SCATTER: case FT_P_SCATTER_ADD: case FT_P_SCATTER_MUL:
  case FT_P_SCATTER_MIN: case FT_P_SCATTER_MAX: case FT_P_TOP_K: case FT_P_CUMMAX: case FT_P_CUMMIN:
  case FT_P_SCATTER_SUB: case FT_P_APPROX_TOP_K:
    return true;
  default: return false;
  }
}

bool jvp_index(jvp_call *c) {
  switch (c->e->prim) {
  case FT_P_GATHER: return jvp_gather(c);
  case FT_P_SCATTER_ADD: case FT_P_SCATTER_SUB: return jvp_scatter_add(c);
  case FT_P_SCATTER: return jvp_scatter(c);
  case FT_P_SCATTER_MUL: return jvp_scatter_mul(c);
  case FT_P_SCATTER_MIN: case FT_P_SCATTER_MAX: return jvp_scatter_extremal(c);
  case FT_P_TOP_K: return jvp_top_k(c);
  case FT_P_APPROX_TOP_K: { /* JAX's jvp: take_along_axis(dx, indices) */
    int r = c->x[0]->aval.rank, axis = (int)pget_int(FT_P_APPROX_TOP_K, c->params, "reduction_dimension", -1);
    c->dy[0] = take_along(c->t, c->dx[0], c->y[1], axis < 0 ? axis + r : axis);
    return !c->t->failed;
  }
  case FT_P_CUMMAX: case FT_P_CUMMIN: return jvp_cumext(c);
  default: return tx_fail(c->t, FT_ERR_INTERNAL, "jvp: no index rule for %s", ft_prim_get(c->e->prim)->name), false;
  }
}

/* ------------------------------------------------------ transpose rules */

static bool tr_fail(tr_call *c, const char *how) {
  tx_fail(c->t, FT_ERR_UNSUPPORTED, "transpose of %s: %s", ft_prim_get(c->e->prim)->name, how);
  return false;
}

/* JAX's _gather_transpose_rule: scatter-add of the cotangent into zeros,
 * with the dimension numbers converted field by field, and the gather's
 * mode and hints. (With PROMISE_IN_BOUNDS and indices out of range the
 * interpreter's gather clamps but its scatter drops, so the pair is not
 * adjoint there — the promise is broken; JAX is the same.) */
static bool tr_gather(tr_call *c) {
  tx *t = c->t;
  if (c->lin[1]) return tr_fail(c, "the indices are linear");
  idx_dn d;
  if (!dn_read(t, FT_P_GATHER, c->params, &d)) return false;
  idx_opts o = opts_of(FT_P_GATHER, c->params);
  const ft_aval *xa = &c->e->in[0]->aval;
  ft_aval za = *xa;
  za.dtype = c->ct[0]->aval.dtype;
  c->ct_x[0] = scatter_emit(t, FT_P_SCATTER_ADD, tx_zeros(t, &za), c->x[1], c->ct[0], &d, &o);
  return !t->failed;
}

/* JAX's _scatter_addsub_transpose_rule: the operand's cotangent is the
 * output's; the updates' is the gather (fill 0) that reads back what
 * each update element was added to. */
static bool tr_scatter_add(tr_call *c) {
  tx *t = c->t;
  if (c->lin[1]) return tr_fail(c, "the indices are linear");
  if (c->lin[0]) c->ct_x[0] = c->ct[0];
  if (c->lin[2]) {
    idx_dn d;
    int64_t ss[FT_MAX_RANK];
    const ft_aval *xa = &c->e->in[0]->aval, *ua = &c->e->in[2]->aval;
    if (!dn_read(t, c->e->prim, c->params, &d) || !slice_sizes_of(t, &d, xa->rank, ua, ss)) return false;
    idx_opts o = opts_of(c->e->prim, c->params);
    c->ct_x[2] = gather0(t, c->ct[0], c->x[1], &d, ss, &o);
    if (c->e->prim == FT_P_SCATTER_SUB) c->ct_x[2] = tx_neg(t, c->ct_x[2]); /* scatter-sub */
  }
  return !t->failed;
}

/* scatter-mul with the operand linear (what its JVP emits): the same
 * scatter-mul of the cotangent (JAX's _scatter_mul_transpose_rule). In
 * the updates it is affine, not linear (the operand passes through where
 * nothing is scattered), so a linear updates input is refused. */
static bool tr_scatter_mul(tr_call *c) {
  tx *t = c->t;
  if (c->lin[1]) return tr_fail(c, "the indices are linear");
  if (c->lin[2])
    return tr_fail(c, "the updates are linear, but scatter-mul is affine in its updates (the operand "
                   "passes through where nothing is scattered)");
  c->ct_x[0] = tx_emit(t, FT_P_SCATTER_MUL, c->params, 3, (ft_var *[]){c->ct[0], c->x[1], c->x[2]});
  return !t->failed;
}

/* scatter (overwrite) is linear in operand and updates together: the
 * operand's cotangent is the output's where no update wrote, and each
 * update element's is the output's cotangent where it won. Exact with
 * duplicate indices (JAX's rule needs unique_indices). */
static bool tr_scatter(tr_call *c) {
  tx *t = c->t;
  if (c->lin[1]) return tr_fail(c, "the indices are linear");
  if (pget_jaxpr(FT_P_SCATTER, c->params, "update_jaxpr"))
    return tr_fail(c, "a scatter with a custom update_jaxpr (scatter_apply) is not linear");
  idx_dn d;
  int64_t ss[FT_MAX_RANK];
  const ft_aval *xa = &c->e->in[0]->aval, *ua = &c->e->in[2]->aval;
  if (!dn_read(t, FT_P_SCATTER, c->params, &d) || !slice_sizes_of(t, &d, xa->rank, ua, ss)) return false;
  if (!c->lin[0] || !c->lin[2])
    return tr_fail(c, "only one of operand and updates is linear (the other is not a constant zero)");
  idx_opts o = opts_of(FT_P_SCATTER, c->params);
  winners w = scatter_winners(t, xa, c->x[1], ua, &d, &o);
  c->ct_x[0] = mask(t, w.keep_x, c->ct[0]);
  c->ct_x[2] = mask(t, w.keep_u, gather0(t, c->ct[0], c->x[1], &d, ss, &o));
  return !t->failed;
}

bool transpose_index(tr_call *c) {
  switch (c->e->prim) {
  case FT_P_GATHER: return tr_gather(c);
  case FT_P_SCATTER_ADD: case FT_P_SCATTER_SUB: return tr_scatter_add(c);
  case FT_P_SCATTER_MUL: return tr_scatter_mul(c);
  case FT_P_SCATTER: return tr_scatter(c);
  default: return tr_fail(c, "not linear");
  }
}
