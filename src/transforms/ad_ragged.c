/* src/transforms/ad_ragged.c: the JVP, transpose and batching rules of
 * ragged_dot_general, as JAX 0.12 writes them (jax/_src/lax/lax.py):
 *   jvp        ragged(dx, y) + ragged(x, dy) with the same params (bilinear;
 *              group_sizes has no tangent);
 *   transpose  _ragged_dot_general_transpose_rule: mode RAGGED_NONCONTRACTING
 *              only (the lhs cotangent is a RAGGED_NONCONTRACTING dot of the
 *              cotangent and rhs, the rhs cotangent a RAGGED_CONTRACTING dot
 *              of lhs and the cotangent, each transposed into place); JAX
 *              refuses the other modes, and so does this rule, in its words;
 *   batching   _ragged_dot_general_batch_rule (through _dot_batch_rule) with
 *              every operand's batch axis at 0: a new leading batch
 *              dimension, the other dims bumped past it; the result's batch
 *              axis is 0 (1 in mode RAGGED_CONTRACTING, whose result leads
 *              with the group axis). JAX refuses an operand batched at
 *              another axis or not batched ("ragged_dot vmap over any dim
 *              but 0 - NYI"); here such an operand is moved (or broadcast)
 *              to axis 0 first, and a 1-D group_sizes broadcast over the
 *              prefix dims it stands for, so vmap equals stacking there too. */
#include <string.h>

#include "transforms/vmap.h"

#define P FT_P_RAGGED_DOT_GENERAL

static bool dims_of(tx *t, const ft_pval *ps, ft_ragged_dims *d) {
  if (!ft_ragged_dims_read(pget(P, ps, "ragged_dot_dimension_numbers"), d))
    return tx_fail(t, FT_ERR_TYPE, "ragged_dot_general: malformed ragged_dot_dimension_numbers"), false;
  return true;
}

/* A ragged_dot_general of a and b (group sizes gs) with dims d and the
 * precision and preferred_element_type of ps. */
static ft_var *emit(tx *t, const ft_pval *ps, const ft_ragged_dims *d, ft_var *a, ft_var *b, ft_var *gs) {
  ft_pval *np = tx_params(t, P), dv;
  if (!np) return NULL;
  if (!ft_ragged_dims_pval(t->a, d, &dv)) return tx_nomem(t);
  pset(P, np, "ragged_dot_dimension_numbers", dv);
  pset(P, np, "precision", *pget(P, ps, "precision"));
  pset(P, np, "preferred_element_type", *pget(P, ps, "preferred_element_type"));
  return tx_emit(t, P, np, 3, (ft_var *[]){a, b, gs});
}

bool ad_ragged_jvp(jvp_call *c) {
  tx *t = c->t;
  ft_var *r = NULL;
  if (c->dx[0]) r = tx_emit(t, P, c->params, 3, (ft_var *[]){c->dx[0], c->x[1], c->x[2]});
  if (c->dx[1]) r = tx_acc(t, r, tx_emit(t, P, c->params, 3, (ft_var *[]){c->x[0], c->dx[1], c->x[2]}));
  c->dy[0] = r;
  return !t->failed;
}

static bool in(int n, const int64_t *v, int64_t x) {
  for (int i = 0; i < n; i++)
    if (v[i] == x) return true;
  return false;
}

/* v sorted by the order of key (a stable argsort of key applied to v). */
static void sort_by(int n, const int64_t *v, const int64_t *key, int64_t *out) {
  int idx[FT_MAX_RANK];
  for (int i = 0; i < n; i++) idx[i] = i;
  for (int i = 1; i < n; i++)
    for (int k = i; k > 0 && key[idx[k - 1]] > key[idx[k]]; k--) {
      int tmp = idx[k];
      idx[k] = idx[k - 1];
      idx[k - 1] = tmp;
    }
  for (int i = 0; i < n; i++) out[i] = v[idx[i]];
}

/* transpose(r, argsort(unsorted)) converted to dtype dt (identity skipped). */
static ft_var *place(tx *t, ft_var *r, int n, const int64_t *unsorted, ft_dtype dt) {
  int64_t perm[FT_MAX_RANK];
  for (int i = 0; i < n; i++) perm[unsorted[i]] = i;
  return tx_convert(t, tx_transpose(t, r, n, perm), dt);
}

bool ad_ragged_transpose(tr_call *c) {
  tx *t = c->t;
  if (c->lin[0] && c->lin[1])
    return tx_fail(t, FT_ERR_UNSUPPORTED, "transpose of ragged_dot_general: both operands are linear"), false;
  if (c->lin[2])
    return tx_fail(t, FT_ERR_UNSUPPORTED, "transpose of ragged_dot_general: group_sizes is not linear"), false;
  ft_ragged_dims d;
  if (!dims_of(t, c->params, &d)) return false;
  const ft_aval *xa = &c->e->in[0]->aval, *ya = &c->e->in[1]->aval;
  ft_ragged_mode m = ft_ragged_mode_of(&d, xa->rank);
  if (m != FT_RAGGED_NONCONTRACTING)
    return tx_fail(t, FT_ERR_UNSUPPORTED, "transpose of ragged_dot_general: unsupported: JAX 0.12 refuses it "
                   "(\"Unimplemented %s for ragged dot general in mode %s.\")",
                   c->lin[0] ? "grad_x_dims" : "grad_y_dims", ft_ragged_mode_name(m)), false;
  int64_t xk[FT_MAX_RANK] = {0}, yk[FT_MAX_RANK] = {0};
  int nxk = 0, nyk = 0, nb = d.nb, nc = d.nc;
  for (int i = 0; i < xa->rank; i++)
    if (!in(nc, d.lc, i) && !in(nb, d.lb, i)) xk[nxk++] = i;
  for (int i = 0; i < ya->rank; i++)
    if (!in(nc, d.rc, i) && !in(nb, d.rb, i) && !in(d.n_group, d.group, i)) yk[nyk++] = i;
  int64_t ans_b[FT_MAX_RANK] = {0}, ans_x[FT_MAX_RANK] = {0}, ans_y[FT_MAX_RANK] = {0};
  for (int i = 0; i < nb; i++) ans_b[i] = i;
  for (int i = 0; i < nxk; i++) ans_x[i] = nb + i;
  for (int i = 0; i < nyk; i++) ans_y[i] = nb + nxk + i;
  ft_ragged_dims g = {0};
  int64_t unsorted[FT_MAX_RANK];
  int n = 0;
  if (c->lin[0]) { /* grad_x_dims */
    g.nc = nyk, g.nb = nb;
    memcpy(g.lc, ans_y, sizeof ans_y), memcpy(g.rc, yk, sizeof yk);
    memcpy(g.lb, ans_b, sizeof ans_b), memcpy(g.rb, d.rb, sizeof d.rb);
    g.n_ragged = 1;
    for (int i = 0; i < nxk; i++)
      if (xk[i] == d.ragged[0]) g.ragged[0] = nb + i;
    g.n_group = d.n_group;
    memcpy(g.group, d.group, sizeof d.group);
    for (int i = 0; i < nb; i++) unsorted[n++] = d.lb[i];
    for (int i = 0; i < nxk; i++) unsorted[n++] = xk[i];
    sort_by(nc, d.lc, d.rc, unsorted + n);
    n += nc;
    ft_var *r = emit(t, c->params, &g, c->ct[0], c->x[1], c->x[2]);
    c->ct_x[0] = place(t, r, n, unsorted, xa->dtype);
  } else { /* grad_y_dims */
    g.nc = nxk, g.nb = nb;
    memcpy(g.lc, xk, sizeof xk), memcpy(g.rc, ans_x, sizeof ans_x);
    memcpy(g.lb, d.lb, sizeof d.lb), memcpy(g.rb, ans_b, sizeof ans_b);
    g.n_ragged = 1, g.ragged[0] = d.ragged[0];
    for (int i = 0; i < d.n_group; i++) unsorted[n++] = d.group[i];
    for (int i = 0; i < nb; i++) unsorted[n++] = d.rb[i];
    sort_by(nc, d.rc, d.lc, unsorted + n);
    n += nc;
    for (int i = 0; i < nyk; i++) unsorted[n++] = yk[i];
    ft_var *r = emit(t, c->params, &g, c->x[0], c->ct[0], c->x[2]);
    c->ct_x[1] = place(t, r, n, unsorted, ya->dtype);
  }
  return !t->failed;
}

bool bt_ragged(bt_call *c) {
  tx *t = c->t;
  ft_ragged_dims d;
  if (!dims_of(t, c->params, &d)) return false;
  const ft_aval *la = &c->e->in[0]->aval, *ga = &c->e->in[2]->aval;
  ft_ragged_mode m = ft_ragged_mode_of(&d, la->rank);
  int64_t B = c->s->size;
  ft_var *x[3];
  for (int k = 0; k < 3; k++) x[k] = bt_match(t, c->x[k], c->xb[k], 0, B);
  if (t->failed) return false;
  ft_ragged_dims b = d;
  b.nb = d.nb + 1;
  b.lb[0] = 0, b.rb[0] = 0;
  for (int i = 0; i < d.nb; i++) b.lb[i + 1] = d.lb[i] + 1, b.rb[i + 1] = d.rb[i] + 1;
  for (int i = 0; i < d.nc; i++) b.lc[i] = d.lc[i] + 1, b.rc[i] = d.rc[i] + 1;
  b.ragged[0] = d.ragged[0] + 1;
  for (int i = 0; i < d.n_group; i++) b.group[i] = d.group[i] + 1;
  /* group_sizes [B, g] when it was [g]: broadcast over the prefix dims it stood for */
  int64_t pre[FT_MAX_RANK];
  int np = ft_ragged_prefix(&b, m, la->rank + 1, pre);
  if (ga->rank == 1 && np > 1) {
    ft_aval ba = x[0]->aval;
    int64_t dims[FT_MAX_RANK], bd[2] = {0, np};
    for (int i = 0; i < np; i++) dims[i] = ba.dims[pre[i]];
    dims[np] = ga->dims[0];
    x[2] = tx_bcast(t, x[2], np + 1, dims, bd);
  }
  c->y[0] = emit(t, c->params, &b, x[0], x[1], x[2]);
  c->yb[0] = m == FT_RAGGED_CONTRACTING ? 1 : 0;
  return !t->failed;
}
