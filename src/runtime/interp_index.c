/* src/runtime/interp_index.c: gather and the scatter family (scatter,
 * scatter-add, scatter-mul, scatter-min, scatter-max) in the reference
 * interpreter, with XLA's semantics (operand/start-indices batching dims
 * included) and JAX's GatherScatterMode:
 *
 *  - gather, CLIP and PROMISE_IN_BOUNDS: each start index is clamped to
 *    [0, operand_dim - slice_size] (what XLA does natively, and what JAX's
 *    CLIP lowering makes explicit).
 *  - gather, FILL_OR_DROP: a slice whose start index is outside that range
 *    on any start_index_map axis yields fill_value everywhere (JAX's
 *    _gather_fill; None means NaN for inexact dtypes, the minimum of signed
 *    and the maximum of unsigned integers, True for bool).
 *  - scatter, CLIP: the start indices are clamped the same way, with the
 *    window size of each axis (1 on inserted/batching axes).
 *  - scatter, FILL_OR_DROP and PROMISE_IN_BOUNDS: an update window whose
 *    start is out of [0, operand_dim - window_size] on any axis is dropped
 *    whole (XLA's scatter expander).
 *
 * Updates apply in row-major order of the updates array, each combined into
 * the current value as combiner(current, update): with duplicate indices
 * scatter-add accumulates in that order and scatter keeps the last write, as
 * XLA on CPU does. */
#include <math.h>
#include <string.h>

#include "runtime.h"

typedef enum gs_mode { GS_CLIP = 0, GS_FILL = 1, GS_PROMISE = 2, GS_ONE_HOT = 3, GS_BAD = -1 } gs_mode;

/* Hardened mode: indices that broke mode=PROMISE_IN_BOUNDS's promise. The
 * result stays the one this file defines (gather clamps, scatter drops);
 * one guard per execution of the equation names the first. */
typedef struct promise_oob {
  bool guard;
  int64_t count, first, axis, hi;
} promise_oob;

static void promise_note(promise_oob *po, int64_t s, int64_t ax, int64_t hi) {
  if (!po->count++) po->first = s, po->axis = ax, po->hi = hi;
}

static ft_status promise_guard(ft_ctx *ctx, const ft_eqn *e, const promise_oob *po,
                               const char *decision) {
  if (!po->count) return FT_OK;
  return ft_guard_fire(ctx, FT_GUARD_INDEX, true, NULL, -2, ft_prim_get(e->prim)->name, 0,
                       "%s with mode=PROMISE_IN_BOUNDS: %lld index(es) out of bounds, the first "
                       "%lld on operand axis %lld (valid: 0..%lld); %s",
                       ft_prim_get(e->prim)->name, (long long)po->count, (long long)po->first,
                       (long long)po->axis, (long long)po->hi, decision);
}

/* JAX prints `mode=GatherScatterMode.CLIP`; older printouts used integers. */
static gs_mode decode_mode(const ft_pval *v) {
  if (v->tag == FT_PV_NONE) return GS_FILL; /* GatherScatterMode.from_any(None) */
  if (v->tag == FT_PV_INT) return v->u.i >= 0 && v->u.i <= 3 ? (gs_mode)v->u.i : GS_BAD;
  if (!v->s) return GS_BAD;
  const char *dot = strrchr(v->s, '.');
  const char *s = dot ? dot + 1 : v->s;
  if (!strcmp(s, "CLIP")) return GS_CLIP;
  if (!strcmp(s, "FILL_OR_DROP")) return GS_FILL;
  if (!strcmp(s, "PROMISE_IN_BOUNDS")) return GS_PROMISE;
  if (!strcmp(s, "ONE_HOT")) return GS_ONE_HOT;
  return GS_BAD;
}

static ft_status mode_of(ft_ctx *ctx, const ft_eqn *e, gs_mode *m) {
  *m = decode_mode(ft_eqn_param(e, "mode"));
  if (*m == GS_BAD) return ft_set_error(ctx, FT_ERR_TYPE, "unknown mode (expected GatherScatterMode.CLIP, "
                                        "FILL_OR_DROP or PROMISE_IN_BOUNDS)");
  if (*m == GS_ONE_HOT)
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "mode GatherScatterMode.ONE_HOT is not supported");
  return FT_OK;
}

static bool has(int n, const int64_t *v, int64_t x) {
  for (int i = 0; i < n; i++)
    if (v[i] == x) return true;
  return false;
}

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

/* n distinct axes, each in [0, rank). */
static bool axes_ok(int n, const int64_t *ax, int rank) {
  for (int i = 0; i < n; i++)
    if (ax[i] < 0 || ax[i] >= rank || has(i, ax, ax[i])) return false;
  return true;
}

/* Operand batching axes have the sizes of their indices batching axes. */
static bool batch_sizes_ok(const ft_aval *a, const ft_aval *ix, int n, const int64_t *obd,
                           const int64_t *ibd) {
  for (int i = 0; i < n; i++)
    if (a->dims[obd[i]] != ix->dims[ibd[i]]) return false;
  return true;
}

/* Component k of the start-index vector at batch position g (a flat offset
 * into indices without its last axis), saturated into int64. */
static int64_t start_at(const ft_array *ix, int64_t g, int k) {
  int64_t n = ix->aval.dims[ix->aval.rank - 1];
  if (ix->aval.dtype == FT_U64) {
    uint64_t u = ft_get_u64(ix, g * n + k);
    return u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
  }
  return ft_get_i64(ix, g * n + k);
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ------------------------------------------------------------------ gather */

typedef struct gather_dn {
  int64_t off[FT_MAX_RANK], col[FT_MAX_RANK], sim[FT_MAX_RANK], obd[FT_MAX_RANK], ibd[FT_MAX_RANK];
  int noff, ncol, nsim, nobd, nibd;
} gather_dn;

static ft_status gather_dims(ft_ctx *ctx, const ft_eqn *e, gather_dn *d) {
  const ft_pval *dn = ft_eqn_param(e, "dimension_numbers");
  if (!ft_dimnums_field(dn, "offset_dims", 0, d->off, &d->noff) ||
      !ft_dimnums_field(dn, "collapsed_slice_dims", 1, d->col, &d->ncol) ||
      !ft_dimnums_field(dn, "start_index_map", 2, d->sim, &d->nsim))
    return ft_set_error(ctx, FT_ERR_TYPE, "malformed GatherDimensionNumbers");
  if (!ft_dimnums_field(dn, "operand_batching_dims", 3, d->obd, &d->nobd)) d->nobd = 0;
  if (!ft_dimnums_field(dn, "start_indices_batching_dims", 4, d->ibd, &d->nibd)) d->nibd = 0;
  if (d->nobd != d->nibd)
    return ft_set_error(ctx, FT_ERR_SHAPE, "operand_batching_dims and start_indices_batching_dims "
                        "differ in length");
  return FT_OK;
}

/* Writes the fill value of a FILL_OR_DROP gather at flat index i of o. */
static void put_fill(ft_array *o, int64_t i, const ft_pval *fv) {
  ft_dtype dt = o->aval.dtype;
  if (fv->tag == FT_PV_FLOAT || fv->tag == FT_PV_INT || fv->tag == FT_PV_BOOL) {
    double f = fv->tag == FT_PV_FLOAT ? fv->u.f : fv->tag == FT_PV_INT ? (double)fv->u.i : fv->u.b;
    if (ft_dtype_is_inexact(dt)) ft_set_f64(o, i, f);
    else if (fv->tag == FT_PV_INT) ft_set_i64(o, i, fv->u.i);
    else ft_set_i64(o, i, f != f ? 0 : (int64_t)f);
    return;
  }
  if (ft_dtype_is_inexact(dt)) ft_set_f64(o, i, NAN);
  else if (dt == FT_BOOL) ft_set_i64(o, i, 1);
  else if (ft_dtype_is_unsigned(dt)) ft_set_i64(o, i, -1); /* all ones: the maximum */
  else ft_set_i64(o, i, ft_dtype_bits(dt) >= 64 ? INT64_MIN : -(INT64_C(1) << (ft_dtype_bits(dt) - 1)));
}

ft_status ft_interp_gather(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  return ft_interp_via_into(ctx, e, in, out);
}

ft_status ft_gather_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                         void *scratch) {
  (void)scratch;
  const ft_array *a = in[0], *ix = in[1];
  const ft_aval *aa = &a->aval;
  gather_dn d;
  gs_mode mode;
  int64_t ss[FT_MAX_RANK * 2];
  ft_status st;
  if ((st = gather_dims(ctx, e, &d)) || (st = mode_of(ctx, e, &mode))) return st;
  if (ft_param_ints(e, "slice_sizes", ss, FT_MAX_RANK * 2) != aa->rank)
    return ft_set_error(ctx, FT_ERR_SHAPE, "slice_sizes needs one entry per operand axis");
  const ft_aval *oa = &e->out[0]->aval;
  /* Output axes: offset axes walk the operand's window axes in order; the
   * others are the batch axes of indices (all but its last axis). */
  int win_axis[FT_MAX_RANK], nwin = 0, batch_out[FT_MAX_RANK], nb = 0;
  for (int i = 0; i < aa->rank; i++)
    if (!has(d.ncol, d.col, i) && !has(d.nobd, d.obd, i)) win_axis[nwin++] = i;
  for (int i = 0; i < oa->rank; i++)
    if (!has(d.noff, d.off, i)) batch_out[nb++] = i;
  if (nwin != d.noff || nb != ix->aval.rank - 1 || !axes_ok(d.noff, d.off, oa->rank) || !axes_ok(d.nsim, d.sim, aa->rank) ||
      !axes_ok(d.nobd, d.obd, aa->rank) || !axes_ok(d.nibd, d.ibd, nb) ||
      !batch_sizes_ok(aa, &ix->aval, d.nobd, d.obd, d.ibd))
    return ft_set_error(ctx, FT_ERR_SHAPE, "GatherDimensionNumbers do not fit operand and indices");
  if (!out) return FT_OK;
  ft_array *o = out[0];
  int64_t ast[FT_MAX_RANK], bst[FT_MAX_RANK] = {0}, idx[FT_MAX_RANK] = {0};
  c_strides(aa, ast);
  {
    int64_t s = 1;
    for (int i = nb - 1; i >= 0; i--) bst[i] = s, s *= ix->aval.dims[i];
  }
  const ft_pval *fv = ft_eqn_param(e, "fill_value");
  size_t es = ft_dtype_size(aa->dtype);
  int64_t n = ft_array_size(o);
  promise_oob po = {.guard = mode == GS_PROMISE && ft_hardened(ctx)};
  for (int64_t i = 0; i < n; i++, next_index(oa->rank, oa->dims, idx)) {
    int64_t g = 0, G[FT_MAX_RANK], start[FT_MAX_RANK] = {0};
    for (int b = 0; b < nb; b++) G[b] = idx[batch_out[b]], g += G[b] * bst[b];
    bool oob = false;
    for (int k = 0; k < d.nsim; k++) {
      int64_t ax = d.sim[k], hi = aa->dims[ax] - ss[ax], s = start_at(ix, g, k);
      if (mode == GS_FILL && (s < 0 || s > hi)) oob = true;
      if (po.guard && (s < 0 || s > hi)) promise_note(&po, s, ax, hi);
      start[ax] = clamp64(s, 0, hi);
    }
    for (int b = 0; b < d.nobd; b++) start[d.obd[b]] = G[d.ibd[b]];
    if (oob) {
      put_fill(o, i, fv);
      continue;
    }
    int64_t off = 0;
    for (int ax = 0; ax < aa->rank; ax++) off += start[ax] * ast[ax];
    for (int w = 0; w < nwin; w++) off += idx[d.off[w]] * ast[win_axis[w]];
    memcpy((char *)o->data + (size_t)i * es, (const char *)a->data + (size_t)off * es, es);
  }
  return promise_guard(ctx, e, &po, "clamped into the operand, as CLIP does");
}

/* ----------------------------------------------------------------- scatter */

typedef struct scatter_dn {
  int64_t uwd[FT_MAX_RANK], iwd[FT_MAX_RANK], sdo[FT_MAX_RANK], obd[FT_MAX_RANK], sbd[FT_MAX_RANK];
  int nuwd, niwd, nsdo, nobd, nsbd;
} scatter_dn;

static ft_status scatter_dims(ft_ctx *ctx, const ft_eqn *e, scatter_dn *d) {
  const ft_pval *dn = ft_eqn_param(e, "dimension_numbers");
  if (!ft_dimnums_field(dn, "update_window_dims", 0, d->uwd, &d->nuwd) ||
      !ft_dimnums_field(dn, "inserted_window_dims", 1, d->iwd, &d->niwd) ||
      !ft_dimnums_field(dn, "scatter_dims_to_operand_dims", 2, d->sdo, &d->nsdo))
    return ft_set_error(ctx, FT_ERR_TYPE, "malformed ScatterDimensionNumbers");
  if (!ft_dimnums_field(dn, "operand_batching_dims", 3, d->obd, &d->nobd)) d->nobd = 0;
  if (!ft_dimnums_field(dn, "scatter_indices_batching_dims", 4, d->sbd, &d->nsbd)) d->nsbd = 0;
  if (d->nobd != d->nsbd)
    return ft_set_error(ctx, FT_ERR_SHAPE, "operand_batching_dims and scatter_indices_batching_dims "
                        "differ in length");
  return FT_OK;
}

/* XLA's max/min: a NaN operand wins; -0 < +0. */
static double fmaxmin(double a, double b, bool is_max) {
  if (a != a) return a;
  if (b != b) return b;
  if (a == b) return (signbit(a) == is_max) ? b : a;
  return is_max ? (a > b ? a : b) : (a < b ? a : b);
}

/* The user combiner of a plain scatter carrying an update_jaxpr (JAX's
 * scatter_apply): cur = update_jaxpr(cur, upd), on rank-0 arrays. */
typedef struct apply_ctx {
  const ft_jaxpr *j;
  ft_array *cur, *upd;
} apply_ctx;

/* Combines update element ui of u into element oi of o. */
static ft_status combine(ft_ctx *ctx, ft_prim p, ft_array *o, int64_t oi, const ft_array *u,
                         int64_t ui, apply_ctx *ap) {
  ft_dtype dt = o->aval.dtype;
  size_t es = ft_dtype_size(dt);
  if (ap) { /* scatter_apply */
    memcpy(ap->cur->data, (char *)o->data + (size_t)oi * es, es);
    memcpy(ap->upd->data, (const char *)u->data + (size_t)ui * es, es);
    ft_array *args[2] = {ap->cur, ap->upd}, *res = NULL;
    ft_status st = ft_interp_jaxpr(ctx, ap->j, 2, (const ft_array *const *)args, &res);
    if (st) return st;
    memcpy((char *)o->data + (size_t)oi * es, res->data, es);
    ft_array_free(res);
    return FT_OK;
  }
  if (p == FT_P_SCATTER) {
    memcpy((char *)o->data + (size_t)oi * es, (const char *)u->data + (size_t)ui * es, es);
    return FT_OK;
  }
  if (ft_dtype_is_complex(dt)) {
    double ar, ai, br, bi;
    ft_get_c128(o, oi, &ar, &ai);
    ft_get_c128(u, ui, &br, &bi);
    if (p == FT_P_SCATTER_ADD) ft_set_c128(o, oi, ar + br, ai + bi);
    else if (p == FT_P_SCATTER_SUB) ft_set_c128(o, oi, ar - br, ai - bi);
    else if (p == FT_P_SCATTER_MUL) ft_set_c128(o, oi, ar * br - ai * bi, ar * bi + ai * br);
    else return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "complex operands have no order");
    return FT_OK;
  }
  if (ft_dtype_is_float(dt)) {
    double a = ft_get_f64(o, oi), b = ft_get_f64(u, ui), r;
    switch (p) {
    case FT_P_SCATTER_ADD: r = a + b; break;
    case FT_P_SCATTER_SUB: r = a - b; break;
    case FT_P_SCATTER_MUL: r = a * b; break;
    case FT_P_SCATTER_MIN: r = fmaxmin(a, b, false); break;
    default: r = fmaxmin(a, b, true); break;
    }
    ft_set_f64(o, oi, r); /* a correctly rounded op: double holds the exact result's rounding */
    return FT_OK;
  }
  bool sgn = ft_dtype_is_signed(dt);
  uint64_t a = (uint64_t)ft_get_i64(o, oi), b = (uint64_t)ft_get_i64(u, ui), r;
  switch (p) {
  case FT_P_SCATTER_ADD: r = dt == FT_BOOL ? (a | b) : a + b; break;
  case FT_P_SCATTER_SUB:
    if (dt == FT_BOOL) return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "scatter-sub of booleans");
    r = a - b;
    break;
  case FT_P_SCATTER_MUL: r = dt == FT_BOOL ? (a & b) : a * b; break;
  case FT_P_SCATTER_MIN: r = (sgn ? (int64_t)b < (int64_t)a : b < a) ? b : a; break;
  default: r = (sgn ? (int64_t)b > (int64_t)a : b > a) ? b : a; break;
  }
  ft_set_i64(o, oi, (int64_t)r);
  return FT_OK;
}

/* The update_jaxpr of a plain scatter, when it is not the default overwrite. */
static ft_status apply_setup(ft_ctx *ctx, const ft_eqn *e, ft_dtype dt, apply_ctx *ap, bool *use,
                             bool alloc) {
  *use = false;
  if (e->prim != FT_P_SCATTER) return FT_OK;
  const ft_pval *uj = ft_eqn_param(e, "update_jaxpr");
  if (uj->tag != FT_PV_JAXPR || !uj->u.jaxpr) return FT_OK;
  const ft_pval *uc = ft_eqn_param(e, "update_consts");
  if (uc->tag == FT_PV_TUPLE && uc->n > 0)
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "scatter with update_consts is not supported");
  const ft_jaxpr *j = uj->u.jaxpr;
  ft_aval s = {.dtype = dt};
  if (ft_interp_num_args(j) != 2 || j->n_out != 1 || !ft_aval_eq(&j->outvars[0]->aval, &s))
    return ft_set_error(ctx, FT_ERR_TYPE, "update_jaxpr must map two scalars of the operand's dtype "
                        "to one");
  if (!alloc) return FT_OK; /* only checking */
  ap->j = j;
  ap->cur = ft_array_alloc(ctx, &s);
  ap->upd = ft_array_alloc(ctx, &s);
  if (!ap->cur || !ap->upd) {
    ft_array_free(ap->cur), ft_array_free(ap->upd);
    return ft_ctx_status(ctx);
  }
  *use = true;
  return FT_OK;
}

ft_status ft_interp_scatter(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  return ft_interp_via_into(ctx, e, in, out);
}

ft_status ft_scatter_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                          void *scratch) {
  (void)scratch;
  const ft_array *a = in[0], *ix = in[1], *u = in[2];
  const ft_aval *aa = &a->aval, *ua = &u->aval;
  scatter_dn d;
  gs_mode mode;
  ft_status st;
  if ((st = scatter_dims(ctx, e, &d)) || (st = mode_of(ctx, e, &mode))) return st;
  /* Window size per operand axis; update window axes map to the operand's
   * non-inserted, non-batching axes in order. */
  int64_t wsz[FT_MAX_RANK];
  int win_axis[FT_MAX_RANK], nwin = 0, scat_u[FT_MAX_RANK], ns = 0;
  if (!axes_ok(d.nuwd, d.uwd, ua->rank))
    return ft_set_error(ctx, FT_ERR_SHAPE, "update_window_dims must be distinct axes of updates");
  for (int i = 0; i < aa->rank; i++) {
    if (has(d.niwd, d.iwd, i) || has(d.nobd, d.obd, i)) {
      wsz[i] = 1;
    } else {
      if (nwin >= d.nuwd) return ft_set_error(ctx, FT_ERR_SHAPE, "update_window_dims too short");
      wsz[i] = ua->dims[d.uwd[nwin]];
      win_axis[nwin++] = i;
    }
    if (wsz[i] > aa->dims[i])
      return ft_set_error(ctx, FT_ERR_SHAPE, "update window of size %lld exceeds operand axis %d "
                          "of size %lld", (long long)wsz[i], i, (long long)aa->dims[i]);
  }
  for (int i = 0; i < ua->rank; i++)
    if (!has(d.nuwd, d.uwd, i)) scat_u[ns++] = i;
  if (nwin != d.nuwd || ns != ix->aval.rank - 1 || !axes_ok(d.nsdo, d.sdo, aa->rank) ||
      !axes_ok(d.nobd, d.obd, aa->rank) || !axes_ok(d.nsbd, d.sbd, ns) ||
      !batch_sizes_ok(aa, &ix->aval, d.nobd, d.obd, d.sbd))
    return ft_set_error(ctx, FT_ERR_SHAPE, "ScatterDimensionNumbers do not fit operand, indices and "
                        "updates");
  apply_ctx ap = {0};
  bool use_ap;
  if ((st = apply_setup(ctx, e, aa->dtype, &ap, &use_ap, out != NULL))) return st;
  if (!out) return FT_OK;
  if (a->nbytes) memcpy(out[0]->data, a->data, a->nbytes);
  int64_t ast[FT_MAX_RANK], bst[FT_MAX_RANK] = {0}, idx[FT_MAX_RANK] = {0};
  c_strides(aa, ast);
  {
    int64_t s = 1;
    for (int i = ns - 1; i >= 0; i--) bst[i] = s, s *= ix->aval.dims[i];
  }
  int64_t n = ft_array_size(u);
  promise_oob po = {.guard = mode == GS_PROMISE && ft_hardened(ctx)};
  for (int64_t i = 0; i < n && st == FT_OK; i++, next_index(ua->rank, ua->dims, idx)) {
    int64_t g = 0, G[FT_MAX_RANK], start[FT_MAX_RANK] = {0};
    for (int b = 0; b < ns; b++) G[b] = idx[scat_u[b]], g += G[b] * bst[b];
    for (int k = 0; k < d.nsdo; k++) {
      int64_t ax = d.sdo[k], s = start_at(ix, g, k);
      start[ax] = mode == GS_CLIP ? clamp64(s, 0, aa->dims[ax] - wsz[ax]) : s;
    }
    for (int b = 0; b < d.nobd; b++) start[d.obd[b]] = G[d.sbd[b]];
    bool oob = false;
    for (int ax = 0; ax < aa->rank; ax++) {
      bool out_ax = start[ax] < 0 || start[ax] > aa->dims[ax] - wsz[ax];
      if (out_ax && po.guard) promise_note(&po, start[ax], ax, aa->dims[ax] - wsz[ax]);
      oob |= out_ax;
    }
    if (oob) continue;
    int64_t off = 0;
    for (int ax = 0; ax < aa->rank; ax++) off += start[ax] * ast[ax];
    for (int w = 0; w < nwin; w++) off += idx[d.uwd[w]] * ast[win_axis[w]];
    st = combine(ctx, e->prim, out[0], off, u, i, use_ap ? &ap : NULL);
  }
  if (use_ap) ft_array_free(ap.cur), ft_array_free(ap.upd);
  if (st == FT_OK) st = promise_guard(ctx, e, &po, "the update window was dropped, as FILL_OR_DROP does");
  return st;
}
