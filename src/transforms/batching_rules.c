/* src/transforms/batching_rules.c: one batching rule per primitive of
 * prims.def (control flow aside: batching_control.c), with JAX's semantics,
 * and ft_batch_rule_status for the coverage matrix.
 *
 * Every rule keeps the determinism contract: a lane of the batched
 * equation computes exactly what the unbatched equation computes on that
 * slice. Elementwise ops, layout ops, reductions (the interpreter reduces
 * each output element over the reduced axes in one canonical order, whatever
 * the other axes are) and cumulative ops are per-lane by construction.
 * dot_general is the one place where JAX's rule would change bits (folding
 * the batch into a GEMM's M changes OpenBLAS's result), so floating dots
 * always batch through a dot_general batch dimension, which the interpreter
 * runs as one GEMM per batch element with the unbatched call's M, N, K.
 * fft keeps each lane's transform at the unbatched howmany through the lane
 * loop. */
#include <string.h>

#include "vmap.h"

const char *ft_batch_rule_status(ft_prim p) {
  /* every primitive has a rule (some through the lane loop) but
   * cholesky_update, which JAX does not batch either (ad_linalg.c) */
  return ad_linalg_batch_status(p);
}

/* issue 27: a collective of a batched value (inside a vmapped shard_map
 * body) is the collective of every example at once: the batch axis at the
 * front and the collective's own dimension params shifted past it. */
static bool rule_collective(bt_call *c) {
  ft_prim p = c->e->prim;
  if (p == FT_P_ALL_GATHER || p == FT_P_REDUCE_SCATTER || p == FT_P_ALL_TO_ALL) {
    ft_var *x = bt_moveaxis(c->t, c->x[0], c->xb[0], 0);
    const char *names[2] = {p == FT_P_ALL_GATHER ? "all_gather_dimension" : p == FT_P_REDUCE_SCATTER ?
                            "scatter_dimension" : "split_axis", p == FT_P_ALL_TO_ALL ? "concat_axis" : NULL};
    for (int i = 0; i < 2 && names[i]; i++) {
      const ft_pval *v = pget(p, c->params, names[i]);
      pset(p, c->params, names[i], ft_pv_int(v->u.i + 1));
    }
    c->yb[0] = 0;
    return (c->y[0] = tx_emit(c->t, p, c->params, 1, &x)) != NULL;
  }
  for (int k = 0; k < c->n_in; k++) { /* elementwise over the batch: one equation per operand */
    c->y[k] = tx_emit(c->t, p, c->params, 1, &c->x[k]);
    c->yb[k] = c->xb[k];
  }
  return !c->t->failed;
}

bool bt_uses_lane_loop(ft_prim p) {
  switch (p) {
  case FT_P_GATHER: case FT_P_SCATTER: case FT_P_SCATTER_ADD: case FT_P_SCATTER_MUL:
  case FT_P_SCATTER_MIN: case FT_P_SCATTER_MAX: case FT_P_CONV_GENERAL_DILATED: case FT_P_FFT:
  case FT_P_SCATTER_SUB: case FT_P_STACK: case FT_P_TILE:
  case FT_P_SELECT_AND_GATHER_ADD: case FT_P_SELECT_AND_SCATTER_ADD:
  case FT_P_THREEFRY2X32: case FT_P_RNG_BIT_GENERATOR:
    return true;
  default: return false;
  }
}

/* ------------------------------------------------------------- helpers */

static ft_var *emit1(bt_call *c, ft_var *const *in) {
  return c->y[0] = tx_emit(c->t, c->e->prim, c->params, c->n_in, in);
}

static int first_mapped(const bt_call *c, int from) {
  for (int i = from; i < c->n_in; i++)
    if (c->xb[i] >= 0) return i;
  return -1;
}

/* Maps axis a of the unbatched operand to the batched operand (batch at bd). */
static int64_t up(int64_t a, int bd) { return a >= bd ? a + 1 : a; }

/* Sets an int-tuple param, keeping the list/tuple spelling of the old value. */
static void set_ints(bt_call *c, const char *name, int n, const int64_t *v) {
  const ft_pval *old = pget(c->e->prim, c->params, name);
  pset(c->e->prim, c->params, name, bt_ints(c->t, n, v, old && old->list));
}

static int get_ints(bt_call *c, const char *name, int64_t *out) {
  int n = pget_ints(c->e->prim, c->params, name, out, FT_MAX_RANK * 2);
  if (n < 0) tx_fail(c->t, FT_ERR_TYPE, "vmap: %s: param %s is not a tuple of ints",
                     ft_prim_get(c->e->prim)->name, name);
  return n;
}

/* ---------------------------------------------------------- elementwise */

/* JAX's broadcast_batcher: operands that agree on the batch dim and shape
 * (scalars aside) run as they are; otherwise batch dims go to the front,
 * unmapped operands get a size-1 axis there and the primitive's own size-1
 * broadcasting does the rest. */
static bool rule_broadcasting(bt_call *c) {
  int f = first_mapped(c, 0), d = c->xb[f];
  const ft_aval *sh = &c->x[f]->aval;
  bool same = true;
  for (int i = 0; i < c->n_in; i++)
    if (c->x[i]->aval.rank > 0 && (c->xb[i] != d || !ft_shape_eq(&c->x[i]->aval, sh)))
      same = false;
  if (same) {
    c->yb[0] = d;
    return emit1(c, c->x) != NULL;
  }
  ft_var *in[64];
  int nd = 0;
  if (c->n_in > 64) return tx_fail(c->t, FT_ERR_UNSUPPORTED, "vmap: %s with %d operands",
                                   ft_prim_get(c->e->prim)->name, c->n_in), false;
  for (int i = 0; i < c->n_in; i++) {
    in[i] = c->x[i];
    if (in[i]->aval.rank > 0 || c->xb[i] >= 0)
      in[i] = c->xb[i] >= 0 ? bt_moveaxis(c->t, in[i], c->xb[i], 0)
                            : bt_insert_axis(c->t, in[i], 0, 1);
    if (in[i] && in[i]->aval.rank > nd) nd = in[i]->aval.rank;
  }
  for (int i = 0; i < c->n_in; i++) {
    if (!in[i] || c->xb[i] < 0 || in[i]->aval.rank >= nd) continue;
    int64_t dims[FT_MAX_RANK];
    for (int k = 0; k < nd; k++) dims[k] = k < in[i]->aval.rank ? in[i]->aval.dims[k] : 1;
    in[i] = tx_reshape(c->t, in[i], nd, dims);
  }
  c->yb[0] = 0;
  return emit1(c, in) != NULL;
}

/* select_n and clamp: an operand is a scalar or of the result's shape (no
 * size-1 broadcasting), and only some may be scalars: select_n's predicate
 * (its cases all have the result's shape) and clamp's bounds (not its
 * operand). Such an operand, when unmapped and scalar, stays as it is; every
 * other operand gets the full batched shape: a mapped scalar is broadcast
 * to it, an unmapped one (a scalar literal case included) gets the batch
 * axis materialized. Selection is exact, so each lane is bitwise the
 * unbatched result (JAX's _select_batch_rule and clamp's batcher). */
static bool may_stay_scalar(const bt_call *c, int i) {
  if (c->xb[i] >= 0 || c->x[i]->aval.rank != 0) return false;
  return c->e->prim == FT_P_CLAMP ? i != 1 : i == 0;
}

static bool rule_select_like(bt_call *c) {
  int f = first_mapped(c, 0), d = c->xb[f];
  const ft_aval *out = &c->e->out[0]->aval;
  bool same = true;
  for (int i = 0; i < c->n_in; i++)
    if (!may_stay_scalar(c, i) && (c->xb[i] != d || c->e->in[i]->aval.rank != out->rank))
      same = false;
  if (same) {
    c->yb[0] = d;
    return emit1(c, c->x) != NULL;
  }
  int64_t full[FT_MAX_RANK], zero = 0;
  if (out->rank + 1 > FT_MAX_RANK) return tx_fail(c->t, FT_ERR_UNSUPPORTED, "vmap: rank"), false;
  full[0] = c->s->size;
  for (int k = 0; k < out->rank; k++) full[k + 1] = out->dims[k];
  ft_var **in = ft_arena_alloc(c->t->a, sizeof(ft_var *) * (size_t)c->n_in);
  if (!in) return tx_nomem(c->t), false;
  for (int i = 0; i < c->n_in; i++) {
    in[i] = c->x[i];
    if (may_stay_scalar(c, i)) continue;
    if (c->xb[i] >= 0 && c->e->in[i]->aval.rank == 0 && out->rank > 0)
      in[i] = tx_bcast(c->t, in[i], out->rank + 1, full, &zero);
    else
      in[i] = bt_match(c->t, in[i], c->xb[i], 0, c->s->size);
  }
  c->yb[0] = 0;
  return emit1(c, in) != NULL;
}

static bool rule_unary(bt_call *c) {
  c->yb[0] = c->xb[0];
  return emit1(c, c->x) != NULL;
}

/* bitcast_convert_type may add or drop a trailing axis: batch at the front. */
static bool rule_front_unary(bt_call *c) {
  ft_var *x = bt_moveaxis(c->t, c->x[0], c->xb[0], 0);
  c->yb[0] = 0;
  return emit1(c, &x) != NULL;
}

/* ---------------------------------------------------------- reductions */

static bool rule_reduce(bt_call *c) {
  int64_t axes[FT_MAX_RANK * 2];
  int n = get_ints(c, "axes", axes), d = c->xb[0], below = 0;
  if (n < 0) return false;
  for (int i = 0; i < n; i++) {
    below += axes[i] < d;
    axes[i] = up(axes[i], d);
  }
  set_ints(c, "axes", n, axes);
  c->yb[0] = d - below;
  return emit1(c, c->x) != NULL;
}

static bool rule_cumulative(bt_call *c) {
  int d = c->xb[0];
  pset(c->e->prim, c->params, "axis",
       ft_pv_int(up(pget_int(c->e->prim, c->params, "axis", 0), d)));
  c->yb[0] = d;
  return emit1(c, c->x) != NULL;
}

/* ---------------------------------------------------------- dot_general */

typedef struct dotdims {
  int64_t lc[FT_MAX_RANK], rc[FT_MAX_RANK], lb[FT_MAX_RANK + 1], rb[FT_MAX_RANK + 1];
  int nc, nb;
} dotdims;

static bool read_dotdims(bt_call *c, dotdims *dd) {
  const ft_pval *v = pget(c->e->prim, c->params, "dimension_numbers");
  int n1, n2, n3, n4;
  if (!v || v->tag != FT_PV_TUPLE || v->n != 2 || v->u.items[0].tag != FT_PV_TUPLE ||
      v->u.items[0].n != 2 || v->u.items[1].tag != FT_PV_TUPLE || v->u.items[1].n != 2 ||
      !ft_pv_get_ints(&v->u.items[0].u.items[0], dd->lc, FT_MAX_RANK, &n1) ||
      !ft_pv_get_ints(&v->u.items[0].u.items[1], dd->rc, FT_MAX_RANK, &n2) ||
      !ft_pv_get_ints(&v->u.items[1].u.items[0], dd->lb, FT_MAX_RANK, &n3) ||
      !ft_pv_get_ints(&v->u.items[1].u.items[1], dd->rb, FT_MAX_RANK, &n4) || n1 != n2 ||
      n3 != n4)
    return tx_fail(c->t, FT_ERR_TYPE, "vmap: dot_general: bad dimension_numbers"), false;
  dd->nc = n1;
  dd->nb = n3;
  return true;
}

static void write_dotdims(bt_call *c, const dotdims *dd) {
  const ft_pval *old = pget(c->e->prim, c->params, "dimension_numbers");
  bool list = old->u.items[0].u.items[0].list;
  ft_pval r = ft_pv_tuple(c->t->a, 2);
  if (!r.u.items) {
    tx_nomem(c->t);
    return;
  }
  for (int i = 0; i < 2; i++) {
    r.u.items[i] = ft_pv_tuple(c->t->a, 2);
    if (!r.u.items[i].u.items) {
      tx_nomem(c->t);
      return;
    }
  }
  r.u.items[0].u.items[0] = bt_ints(c->t, dd->nc, dd->lc, list);
  r.u.items[0].u.items[1] = bt_ints(c->t, dd->nc, dd->rc, list);
  r.u.items[1].u.items[0] = bt_ints(c->t, dd->nb, dd->lb, list);
  r.u.items[1].u.items[1] = bt_ints(c->t, dd->nb, dd->rb, list);
  pset(c->e->prim, c->params, "dimension_numbers", r);
}

/* Both operands batched (at axis 0): the batch becomes the first batch
 * dimension, so the result has it at axis 0. */
static bool dot_both_front(bt_call *c, dotdims *dd, ft_var *l, ft_var *r) {
  for (int i = 0; i < dd->nc; i++) dd->lc[i]++, dd->rc[i]++;
  for (int i = dd->nb; i > 0; i--) dd->lb[i] = dd->lb[i - 1] + 1, dd->rb[i] = dd->rb[i - 1] + 1;
  dd->lb[0] = dd->rb[0] = 0;
  dd->nb++;
  write_dotdims(c, dd);
  ft_var *in[2] = {l, r};
  c->yb[0] = 0;
  return emit1(c, in) != NULL;
}

/* One operand batched, exact arithmetic (integers, complex loops): JAX's
 * rule, the batch dim becomes a free dimension of that operand. */
static bool dot_fold_free(bt_call *c, dotdims *dd, int side) {
  int d = c->xb[side];
  int64_t *con = side ? dd->rc : dd->lc, *bat = side ? dd->rb : dd->lb;
  for (int i = 0; i < dd->nc; i++) con[i] = up(con[i], d);
  for (int i = 0; i < dd->nb; i++) bat[i] = up(bat[i], d);
  /* free dims of the batched operand that come before d, in its order */
  int before = 0;
  for (int a = 0; a < d; a++) {
    bool used = false;
    for (int i = 0; i < dd->nc; i++) used = used || con[i] == a;
    for (int i = 0; i < dd->nb; i++) used = used || bat[i] == a;
    before += !used;
  }
  int pos = dd->nb + before;
  if (side == 1) pos += c->x[0]->aval.rank - dd->nc - dd->nb;
  write_dotdims(c, dd);
  c->yb[0] = pos;
  return emit1(c, c->x) != NULL;
}

static bool rule_dot(bt_call *c) {
  dotdims dd;
  if (!read_dotdims(c, &dd)) return false;
  ft_dtype odt = c->e->out[0]->aval.dtype;
  bool gemm = ft_dtype_is_float(odt);
  if (c->xb[0] >= 0 && c->xb[1] >= 0)
    return dot_both_front(c, &dd, bt_moveaxis(c->t, c->x[0], c->xb[0], 0),
                          bt_moveaxis(c->t, c->x[1], c->xb[1], 0));
  int side = c->xb[0] >= 0 ? 0 : 1;
  if (!gemm) return dot_fold_free(c, &dd, side);
  /* Floating: materialize the batch on the unmapped operand so each lane is
   * its own GEMM of the unbatched shape (bit-identical per slice). */
  return dot_both_front(c, &dd, bt_match(c->t, c->x[0], c->xb[0], 0, c->s->size),
                        bt_match(c->t, c->x[1], c->xb[1], 0, c->s->size));
}

/* -------------------------------------------------------------- layout */

static bool rule_broadcast_in_dim(bt_call *c) {
  int64_t shape[FT_MAX_RANK + 1], bd[FT_MAX_RANK + 1];
  int ns = get_ints(c, "shape", shape + 1), nb = get_ints(c, "broadcast_dimensions", bd + 1);
  if (ns < 0 || nb < 0) return false;
  if (ns + 1 > FT_MAX_RANK) return tx_fail(c->t, FT_ERR_UNSUPPORTED, "vmap: rank"), false;
  shape[0] = c->s->size;
  bd[0] = 0;
  for (int i = 1; i <= nb; i++) bd[i]++;
  set_ints(c, "shape", ns + 1, shape);
  set_ints(c, "broadcast_dimensions", nb + 1, bd);
  ft_var *x = bt_moveaxis(c->t, c->x[0], c->xb[0], 0);
  c->yb[0] = 0;
  return emit1(c, &x) != NULL;
}

static bool rule_reshape(bt_call *c) {
  int64_t sz[FT_MAX_RANK + 1], dims[FT_MAX_RANK + 1];
  int n = get_ints(c, "new_sizes", sz + 1);
  if (n < 0) return false;
  if (n + 1 > FT_MAX_RANK) return tx_fail(c->t, FT_ERR_UNSUPPORTED, "vmap: rank"), false;
  ft_var *x = bt_moveaxis(c->t, c->x[0], c->xb[0], 0);
  const ft_pval *dv = pget(c->e->prim, c->params, "dimensions");
  if (dv && dv->tag == FT_PV_TUPLE) { /* reshape[dimensions]: transpose first */
    int nd = get_ints(c, "dimensions", dims + 1);
    if (nd < 0) return false;
    dims[0] = 0;
    for (int i = 1; i <= nd; i++) dims[i]++;
    x = tx_transpose(c->t, x, nd + 1, dims);
    pset(c->e->prim, c->params, "dimensions", ft_pv_none());
  }
  sz[0] = c->s->size;
  set_ints(c, "new_sizes", n + 1, sz);
  c->yb[0] = 0;
  return emit1(c, &x) != NULL;
}

static bool rule_transpose(bt_call *c) {
  int64_t perm[FT_MAX_RANK + 1];
  int n = get_ints(c, "permutation", perm + 1);
  if (n < 0) return false;
  perm[0] = 0;
  for (int i = 1; i <= n; i++) perm[i]++;
  set_ints(c, "permutation", n + 1, perm);
  ft_var *x = bt_moveaxis(c->t, c->x[0], c->xb[0], 0);
  c->yb[0] = 0;
  return emit1(c, &x) != NULL;
}

/* Params naming axes of the operand (squeeze, rev): renumber, batch stays. */
static bool rule_axes_of_operand(bt_call *c) {
  int64_t dims[FT_MAX_RANK * 2];
  int n = get_ints(c, "dimensions", dims), d = c->xb[0], below = 0;
  if (n < 0) return false;
  for (int i = 0; i < n; i++) {
    below += dims[i] < d;
    dims[i] = up(dims[i], d);
  }
  set_ints(c, "dimensions", n, dims);
  c->yb[0] = c->e->prim == FT_P_SQUEEZE ? d - below : d;
  return emit1(c, c->x) != NULL;
}

static bool rule_expand_dims(bt_call *c) {
  int64_t dims[FT_MAX_RANK * 2];
  int n = get_ints(c, "dimensions", dims);
  if (n < 0) return false;
  for (int i = 0; i < n; i++) dims[i] = dims[i] < 0 ? dims[i] : dims[i] + 1;
  set_ints(c, "dimensions", n, dims);
  ft_var *x = bt_moveaxis(c->t, c->x[0], c->xb[0], 0);
  c->yb[0] = 0;
  return emit1(c, &x) != NULL;
}

static bool rule_slice(bt_call *c) {
  int64_t st[FT_MAX_RANK + 1], li[FT_MAX_RANK + 1], sd[FT_MAX_RANK + 1];
  int d = c->xb[0], n = get_ints(c, "start_indices", st), m = get_ints(c, "limit_indices", li);
  if (n < 0 || m != n) return false;
  for (int i = n; i > d; i--) st[i] = st[i - 1], li[i] = li[i - 1];
  st[d] = 0, li[d] = c->s->size;
  set_ints(c, "start_indices", n + 1, st);
  set_ints(c, "limit_indices", n + 1, li);
  const ft_pval *sv = pget(c->e->prim, c->params, "strides");
  if (sv && sv->tag == FT_PV_TUPLE) {
    if (get_ints(c, "strides", sd) != n) return false;
    for (int i = n; i > d; i--) sd[i] = sd[i - 1];
    sd[d] = 1;
    set_ints(c, "strides", n + 1, sd);
  }
  c->yb[0] = d;
  return emit1(c, c->x) != NULL;
}

/* dynamic_slice / dynamic_update_slice with unmapped indices: the batch
 * axis gets start index 0 and its full size. Mapped indices take the lane
 * loop (JAX would use gather). */
static bool rule_dynamic_slice(bt_call *c) {
  if (first_mapped(c, 1) >= 0) return bt_lane_loop(c);
  int d = c->xb[0], n = c->n_in;
  int64_t sz[FT_MAX_RANK + 1];
  if (get_ints(c, "slice_sizes", sz) != n - 1) return false;
  for (int i = n - 1; i > d; i--) sz[i] = sz[i - 1];
  sz[d] = c->s->size;
  set_ints(c, "slice_sizes", n, sz);
  ft_var **in = ft_arena_alloc(c->t->a, sizeof(ft_var *) * (size_t)(n + 1));
  if (!in) return tx_nomem(c->t), false;
  ft_dtype idt = n > 1 ? c->x[1]->aval.dtype : FT_I32;
  in[0] = c->x[0];
  for (int i = 0, k = 1; i < n; i++) in[i + 1] = i == d ? tx_lit(c->t, idt, 0) : c->x[k++];
  c->yb[0] = d;
  return tx_emitn(c->t, c->e->prim, c->params, n + 1, in, 1, c->y);
}

static bool rule_dynamic_update_slice(bt_call *c) {
  if (first_mapped(c, 2) >= 0) return bt_lane_loop(c);
  int n = c->n_in;
  ft_var **in = ft_arena_alloc(c->t->a, sizeof(ft_var *) * (size_t)(n + 1));
  if (!in) return tx_nomem(c->t), false;
  in[0] = bt_match(c->t, c->x[0], c->xb[0], 0, c->s->size);
  in[1] = bt_match(c->t, c->x[1], c->xb[1], 0, c->s->size);
  in[2] = tx_lit(c->t, n > 2 ? c->x[2]->aval.dtype : FT_I32, 0);
  for (int i = 2; i < n; i++) in[i + 1] = c->x[i];
  c->yb[0] = 0;
  return tx_emitn(c->t, c->e->prim, c->params, n + 1, in, 1, c->y);
}

static bool rule_concatenate(bt_call *c) {
  ft_var **in = ft_arena_alloc(c->t->a, sizeof(ft_var *) * (size_t)(c->n_in + 1));
  if (!in) return tx_nomem(c->t), false;
  for (int i = 0; i < c->n_in; i++) in[i] = bt_match(c->t, c->x[i], c->xb[i], 0, c->s->size);
  pset(c->e->prim, c->params, "dimension",
       ft_pv_int(pget_int(c->e->prim, c->params, "dimension", 0) + 1));
  c->yb[0] = 0;
  return emit1(c, in) != NULL;
}

/* The padding config with a (0, 0, 0) entry inserted at axis d. */
static bool pad_cfg_insert(bt_call *c, int d) {
  const ft_pval *old = pget(c->e->prim, c->params, "padding_config");
  if (!old || old->tag != FT_PV_TUPLE)
    return tx_fail(c->t, FT_ERR_TYPE, "vmap: pad: bad padding_config"), false;
  ft_pval cfg = ft_pv_tuple(c->t->a, old->n + 1);
  if (!cfg.u.items) return tx_nomem(c->t), false;
  cfg.list = old->list;
  int64_t z[3] = {0, 0, 0};
  for (int i = 0, k = 0; i <= old->n; i++)
    cfg.u.items[i] = i == d ? bt_ints(c->t, 3, z, false) : old->u.items[k++];
  pset(c->e->prim, c->params, "padding_config", cfg);
  return !c->t->failed;
}

static bool rule_pad(bt_call *c) {
  if (c->xb[1] < 0) {
    if (!pad_cfg_insert(c, c->xb[0])) return false;
    c->yb[0] = c->xb[0];
    return emit1(c, c->x) != NULL;
  }
  /* A mapped padding value: pad with zero, then select the padding value
   * wherever the padding went, by padding a mask of trues with false. */
  tx *t = c->t;
  ft_var *x = bt_match(t, c->x[0], c->xb[0], 0, c->s->size);
  if (!pad_cfg_insert(c, 0) || !x) return false;
  ft_var *in[2] = {x, tx_lit(t, x->aval.dtype, 0)};
  ft_var *padded = tx_emit(t, FT_P_PAD, c->params, 2, in);
  if (!padded) return false;
  ft_aval mav = x->aval;
  mav.dtype = FT_BOOL;
  ft_var *ones = tx_full(t, &mav, 1);
  ft_var *min[2] = {ones, tx_lit(t, FT_BOOL, 0)};
  ft_var *mask = tx_emit(t, FT_P_PAD, c->params, 2, min);
  int64_t zero = 0;
  ft_var *pv = tx_bcast(t, c->x[1], padded->aval.rank, padded->aval.dims, &zero);
  c->yb[0] = 0;
  return (c->y[0] = tx_select(t, mask, pv, padded)) != NULL;
}

static bool rule_split(bt_call *c) {
  int d = c->xb[0];
  pset(c->e->prim, c->params, "axis", ft_pv_int(up(pget_int(c->e->prim, c->params, "axis", 0), d)));
  for (int k = 0; k < c->n_out; k++) c->yb[k] = d;
  return tx_emitn(c->t, c->e->prim, c->params, 1, c->x, c->n_out, c->y);
}

static bool rule_unstack(bt_call *c) {
  int d = c->xb[0];
  int64_t a = up(pget_int(c->e->prim, c->params, "axis", 0), d);
  pset(c->e->prim, c->params, "axis", ft_pv_int(a));
  for (int k = 0; k < c->n_out; k++) c->yb[k] = a > d ? d : d - 1;
  return tx_emitn(c->t, c->e->prim, c->params, 1, c->x, c->n_out, c->y);
}

/* --------------------------------------------------------------- other */

static bool rule_sort(bt_call *c) {
  int d = c->xb[first_mapped(c, 0)];
  ft_var **in = ft_arena_alloc(c->t->a, sizeof(ft_var *) * (size_t)(c->n_in + 1));
  if (!in) return tx_nomem(c->t), false;
  for (int i = 0; i < c->n_in; i++) in[i] = bt_match(c->t, c->x[i], c->xb[i], d, c->s->size);
  pset(c->e->prim, c->params, "dimension",
       ft_pv_int(up(pget_int(c->e->prim, c->params, "dimension", 0), d)));
  for (int k = 0; k < c->n_out; k++) c->yb[k] = d;
  return tx_emitn(c->t, c->e->prim, c->params, c->n_in, in, c->n_out, c->y);
}

static bool rule_top_k(bt_call *c) {
  int64_t ax = pget_int(c->e->prim, c->params, "axis", -1);
  int r = c->e->in[0]->aval.rank;
  if (ax != -1) /* -1 (the last axis) stays right with the batch in front */
    pset(c->e->prim, c->params, "axis", ft_pv_int((ax < 0 ? ax + r : ax) + 1));
  ft_var *x = bt_moveaxis(c->t, c->x[0], c->xb[0], 0);
  c->yb[0] = c->yb[1] = 0;
  return tx_emitn(c->t, c->e->prim, c->params, 1, &x, 2, c->y);
}

/* SearchSorted: JAX's batch rule (hijax.py): a mapped sorted array's batch
 * axis becomes one of its non-searched axes (at batch_dims); a mapped
 * query's joins its non-batch axes; both mapped: a new shared batch axis. */
static bool rule_searchsorted(bt_call *c) {
  ft_prim p = c->e->prim;
  int64_t b = pget_int(p, c->params, "batch_dims", 0), d = pget_int(p, c->params, "dimension", 0);
  ft_var *in[2] = {c->x[0], c->x[1]};
  if (c->xb[0] >= 0 && c->xb[1] < 0) {
    in[0] = bt_moveaxis(c->t, c->x[0], c->xb[0], (int)b);
    pset(p, c->params, "dimension", ft_pv_int(d + 1));
    c->yb[0] = (int)b;
  } else if (c->xb[0] < 0) {
    in[1] = bt_moveaxis(c->t, c->x[1], c->xb[1], (int)b);
    c->yb[0] = c->e->in[0]->aval.rank - 1;
  } else {
    in[0] = bt_moveaxis(c->t, c->x[0], c->xb[0], 0);
    in[1] = bt_moveaxis(c->t, c->x[1], c->xb[1], 0);
    pset(p, c->params, "batch_dims", ft_pv_int(b + 1));
    pset(p, c->params, "dimension", ft_pv_int(d + 1));
    c->yb[0] = 0;
  }
  return emit1(c, in) != NULL;
}

/* Nonzero: JAX's batch rule (hijax.py): a's batch axis to the front (an
 * unmapped a broadcast), axes shifted by one; a mapped fill value to the
 * front, reshaped to (B, 1, ..., 1) to broadcast over a's other axes. */
static bool rule_nonzero(bt_call *c) {
  ft_prim p = c->e->prim;
  int64_t axes[FT_MAX_RANK], size = -1;
  int na = pget_ints(p, c->params, "axes", axes, FT_MAX_RANK);
  if (na < 1 || na > FT_MAX_RANK - 1) return tx_fail(c->t, FT_ERR_UNSUPPORTED, "vmap of Nonzero: bad axes"), false;
  for (int i = 0; i < c->n_in && size < 0; i++)
    if (c->xb[i] >= 0) size = c->x[i]->aval.dims[c->xb[i]];
  ft_var *in[FT_MAX_RANK + 1];
  in[0] = bt_match(c->t, c->x[0], c->xb[0], 0, size);
  if (!in[0]) return false;
  int ones = in[0]->aval.rank - na - 1;
  for (int k = 1; k < c->n_in; k++) {
    in[k] = c->x[k];
    if (c->xb[k] < 0) continue;
    ft_var *m = bt_moveaxis(c->t, c->x[k], c->xb[k], 0);
    int64_t dims[FT_MAX_RANK];
    dims[0] = size;
    for (int i = 1; i <= ones; i++) dims[i] = 1;
    in[k] = m ? tx_reshape(c->t, m, ones + 1, dims) : NULL;
    if (!in[k]) return false;
  }
  for (int k = 0; k < na; k++) axes[k]++;
  set_ints(c, "axes", na, axes);
  for (int k = 0; k < c->n_out; k++) c->yb[k] = 0;
  return tx_emitn(c->t, p, c->params, c->n_in, in, c->n_out, c->y);
}

/* reduce (generic): JAX's _reduce_batch_rule. With unbatched init values
 * every operand goes to the front (broadcast when unbatched) and the
 * dimensions move past it; the order of each result's fold (XLA's, on the
 * reduced dims only) is the unbatched one. Batched init values JAX refuses. */
static bool rule_reduce_generic(bt_call *c) {
  ft_prim p = c->e->prim;
  int m = c->n_in / 2;
  int64_t size = -1, dims[FT_MAX_RANK];
  for (int k = m; k < c->n_in; k++)
    if (c->xb[k] >= 0)
      return tx_fail(c->t, FT_ERR_UNSUPPORTED, "vmap of reduce: a batched init value: JAX 0.12's "
                     "_reduce_batch_rule raises NotImplementedError there (\"loop and stack\")"), false;
  for (int k = 0; k < m && size < 0; k++)
    if (c->xb[k] >= 0) size = c->x[k]->aval.dims[c->xb[k]];
  int nd = pget_ints(p, c->params, "dimensions", dims, FT_MAX_RANK);
  if (nd < 0 || m < 1) return tx_fail(c->t, FT_ERR_TYPE, "vmap of reduce: bad dimensions"), false;
  ft_var *in[64];
  if (c->n_in > 64) return tx_fail(c->t, FT_ERR_UNSUPPORTED, "vmap of reduce: too many operands"), false;
  for (int k = 0; k < m; k++)
    if (!(in[k] = bt_match(c->t, c->x[k], c->xb[k], 0, size))) return false;
  for (int k = m; k < c->n_in; k++) in[k] = c->x[k];
  for (int i = 0; i < nd; i++) dims[i]++;
  set_ints(c, "dimensions", nd, dims);
  for (int k = 0; k < c->n_out; k++) c->yb[k] = 0;
  return tx_emitn(c->t, p, c->params, c->n_in, in, c->n_out, c->y);
}

/* reduce_window (generic): JAX's _generic_reduce_window_batch_rule. Every
 * operand goes to the front (broadcast when unbatched) and the window gets
 * a leading axis of 1 (stride 1, no padding, no dilation); each result is
 * batched at 0. Batched init values JAX refuses. */
static bool rule_reduce_window_generic(bt_call *c) {
  static const char *ones[] = {"base_dilation", "window_dilation", "window_dimensions", "window_strides"};
  ft_prim p = c->e->prim;
  int m = c->n_in / 2;
  int64_t size = -1;
  for (int k = m; k < c->n_in; k++)
    if (c->xb[k] >= 0)
      return tx_fail(c->t, FT_ERR_UNSUPPORTED, "vmap of reduce_window: reduce_window batching is not "
                     "implemented for initial values (JAX 0.12's _generic_reduce_window_batch_rule)"), false;
  for (int k = 0; k < m && size < 0; k++)
    if (c->xb[k] >= 0) size = c->x[k]->aval.dims[c->xb[k]];
  const ft_pval *pad = pget(p, c->params, "padding");
  if (m < 1 || c->n_in > 64 || !pad || pad->tag != FT_PV_TUPLE)
    return tx_fail(c->t, FT_ERR_TYPE, "vmap of reduce_window: bad operands or padding"), false;
  ft_var *in[64];
  for (int k = 0; k < m; k++)
    if (!(in[k] = bt_match(c->t, c->x[k], c->xb[k], 0, size))) return false;
  for (int k = m; k < c->n_in; k++) in[k] = c->x[k];
  for (size_t q = 0; q < FT_COUNTOF(ones); q++) {
    int64_t v[FT_MAX_RANK + 1];
    int n = get_ints(c, ones[q], v);
    if (n < 0) return false;
    if (n >= FT_MAX_RANK) return tx_fail(c->t, FT_ERR_UNSUPPORTED, "vmap of reduce_window: rank"), false;
    for (int i = n; i > 0; i--) v[i] = v[i - 1];
    v[0] = 1;
    set_ints(c, ones[q], n + 1, v);
  }
  ft_pval np = ft_pv_tuple(c->t->a, pad->n + 1);
  if (!np.u.items) return tx_nomem(c->t), false;
  np.list = pad->list;
  int64_t z[2] = {0, 0};
  np.u.items[0] = bt_ints(c->t, 2, z, pad->n ? pad->u.items[0].list : false);
  for (int i = 0; i < pad->n; i++) np.u.items[i + 1] = pad->u.items[i];
  pset(p, c->params, "padding", np);
  for (int k = 0; k < c->n_out; k++) c->yb[k] = 0;
  return tx_emitn(c->t, p, c->params, c->n_in, in, c->n_out, c->y);
}

/* reduce_window_*: a window of 1 along the batch axis. */
static bool rule_reduce_window(bt_call *c) {
  static const char *ones[] = {"base_dilation", "window_dilation", "window_dimensions",
                               "window_strides"};
  int d = c->xb[0];
  const ft_pval *pad = pget(c->e->prim, c->params, "padding");
  if (!pad || pad->tag != FT_PV_TUPLE) return bt_lane_loop(c);
  for (int i = 0; i < pad->n; i++) {
    int n2 = 0;
    int64_t tmp[2];
    if (!ft_pv_get_ints(&pad->u.items[i], tmp, 2, &n2) || n2 != 2) return bt_lane_loop(c);
  }
  for (size_t p = 0; p < FT_COUNTOF(ones); p++) {
    int64_t v[FT_MAX_RANK + 1];
    int n = get_ints(c, ones[p], v);
    if (n < 0) return false;
    for (int i = n; i > d; i--) v[i] = v[i - 1];
    v[d] = 1;
    set_ints(c, ones[p], n + 1, v);
  }
  ft_pval np = ft_pv_tuple(c->t->a, pad->n + 1);
  if (!np.u.items) return tx_nomem(c->t), false;
  np.list = pad->list;
  int64_t z[2] = {0, 0};
  for (int i = 0, k = 0; i <= pad->n; i++)
    np.u.items[i] = i == d ? bt_ints(c->t, 2, z, pad->n ? pad->u.items[0].list : false)
                           : pad->u.items[k++];
  pset(c->e->prim, c->params, "padding", np);
  c->yb[0] = d;
  return emit1(c, c->x) != NULL;
}

/* ------------------------------------------------------------ dispatch */

bool bt_rule(bt_call *c) {
  ft_prim p = c->e->prim;
  if (ft_prim_is_collective(p)) return rule_collective(c);
  if (bt_uses_lane_loop(p)) return bt_lane_loop(c);
  switch (ft_prim_get(p)->family) {
  case FT_FAM_UNARY: return rule_unary(c);
  case FT_FAM_BINARY: case FT_FAM_COMPARE: case FT_FAM_TERNARY: return rule_broadcasting(c);
  case FT_FAM_SELECT: return rule_select_like(c);
  case FT_FAM_CONVERT:
    return p == FT_P_BITCAST_CONVERT_TYPE ? rule_front_unary(c) : rule_unary(c);
  case FT_FAM_REDUCE: return rule_reduce(c);
  case FT_FAM_CUMULATIVE: return rule_cumulative(c);
  case FT_FAM_DOT: return rule_dot(c);
  default: break;
  }
  switch (p) {
  case FT_P_RAGGED_DOT_GENERAL: return bt_ragged(c); /* ad_ragged.c */
  case FT_P_BROADCAST_IN_DIM: return rule_broadcast_in_dim(c);
  case FT_P_RESHAPE: return rule_reshape(c);
  case FT_P_TRANSPOSE: return rule_transpose(c);
  case FT_P_SQUEEZE: case FT_P_REV: return rule_axes_of_operand(c);
  case FT_P_EXPAND_DIMS: return rule_expand_dims(c);
  case FT_P_SLICE: return rule_slice(c);
  case FT_P_DYNAMIC_SLICE: return rule_dynamic_slice(c);
  case FT_P_DYNAMIC_UPDATE_SLICE: return rule_dynamic_update_slice(c);
  case FT_P_CONCATENATE: return rule_concatenate(c);
  case FT_P_PAD: return rule_pad(c);
  case FT_P_SPLIT: return rule_split(c);
  case FT_P_UNSTACK: return rule_unstack(c);
  case FT_P_SORT: return rule_sort(c);
  case FT_P_REAL: case FT_P_IMAG: case FT_P_CONJ: return rule_unary(c); /* elementwise */
  case FT_P_COMPLEX: return rule_broadcasting(c);
  case FT_P_TOP_K: return rule_top_k(c);
  case FT_P_SEARCHSORTED: return rule_searchsorted(c);
  case FT_P_NONZERO: return rule_nonzero(c);
  case FT_P_REDUCE: return rule_reduce_generic(c);
  case FT_P_REDUCE_WINDOW: return rule_reduce_window_generic(c);
  case FT_P_APPROX_TOP_K: { /* JAX's rule: the batch axis stays; the dimension maps past it */
    int64_t d = pget_int(p, c->params, "reduction_dimension", -1);
    int r = c->e->in[0]->aval.rank;
    if (d < 0) d += r;
    pset(p, c->params, "reduction_dimension", ft_pv_int(d >= c->xb[0] ? d + 1 : d));
    c->yb[0] = c->yb[1] = c->xb[0];
    return tx_emitn(c->t, p, c->params, 1, c->x, 2, c->y);
  }
  case FT_P_FREXP: /* elementwise: both results keep x's batch axis (JAX) */
    c->yb[0] = c->yb[1] = c->xb[0];
    return tx_emitn(c->t, p, c->params, 1, c->x, 2, c->y);
  case FT_P_LDEXP: { /* JAX's Ldexp.batch: both to the front unless mapped alike */
    if (c->xb[0] == c->xb[1]) {
      c->yb[0] = c->xb[0];
      return emit1(c, c->x) != NULL;
    }
    int64_t size = c->xb[0] >= 0 ? c->x[0]->aval.dims[c->xb[0]] : c->x[1]->aval.dims[c->xb[1]];
    ft_var *in[2] = {bt_match(c->t, c->x[0], c->xb[0], 0, size), bt_match(c->t, c->x[1], c->xb[1], 0, size)};
    c->yb[0] = 0;
    return emit1(c, in) != NULL;
  }
  case FT_P_QR: case FT_P_EIGH: case FT_P_SVD: case FT_P_EIG: case FT_P_SCHUR:
  case FT_P_HESSENBERG: case FT_P_TRIDIAGONAL: case FT_P_HOUSEHOLDER_PRODUCT: case FT_P_GEQRF:
  case FT_P_ORMQR:
    return bt_spectral(c); /* linalg2 */
  case FT_P_POLYNOMIAL: return rule_broadcasting(c); /* JAX: defbroadcasting */
  case FT_P_OPTIMIZATION_BARRIER: /* each value keeps its batch dim (JAX's batcher) */
    for (int i = 0; i < c->n_in; i++) c->yb[i] = c->xb[i];
    return tx_emitn(c->t, c->e->prim, c->params, c->n_in, c->x, c->n_out, c->y);
  case FT_P_REDUCE_WINDOW_SUM: case FT_P_REDUCE_WINDOW_MAX: case FT_P_REDUCE_WINDOW_MIN:
    return rule_reduce_window(c);
  /* PRNG: the random_* primitives work per key (or seed), and the results
   * lead with the keys' axes, so batch axes go to the front; each lane then
   * draws exactly the unbatched draw from its own key (JAX's batched keys) */
  case FT_P_RANDOM_SEED: case FT_P_RANDOM_BITS: case FT_P_RANDOM_SPLIT: case FT_P_RANDOM_WRAP:
  case FT_P_RANDOM_UNWRAP: case FT_P_RANDOM_CLONE:
    return rule_front_unary(c);
  case FT_P_RANDOM_FOLD_IN: return rule_broadcasting(c);
  case FT_P_RANDOM_GAMMA: { /* JAX's _gamma_batching_rule: both batch dims to the front */
    ft_var *in[2] = {bt_match(c->t, c->x[0], c->xb[0], 0, c->s->size),
                     bt_match(c->t, c->x[1], c->xb[1], 0, c->s->size)};
    c->yb[0] = 0;
    return in[0] && in[1] && emit1(c, in) != NULL;
  }
  case FT_P_CHOLESKY: case FT_P_CHOLESKY_UPDATE: case FT_P_TRIANGULAR_SOLVE: case FT_P_LU:
  case FT_P_LU_PIVOTS_TO_PERMUTATION: case FT_P_TRIDIAGONAL_SOLVE: case FT_P_SYMMETRIC_PRODUCT:
    return bt_linalg(c); /* ad_linalg.c: batch dims to the front */
  case FT_P_IOTA: case FT_P_EMPTY2: case FT_P_EMPTY: case FT_P_PLATFORM_INDEX:
    /* no operands: never mapped */
  default:
    tx_fail(c->t, FT_ERR_INTERNAL, "vmap: no batching rule for %s", ft_prim_get(p)->name);
    return false;
  }
}
