/* src/transforms/ad_spmd.c: transposes of shard_map and the named-axis
 * collectives (issue 27, docs/spmd.md), as JAX 0.12 defines them in
 * jax/_src/lax/parallel.py and jax/_src/shard_map.py:
 *
 *   psum_invariant  <-> pvary            (check_vma=True typing)
 *   psum            ->  psum             (check_vma=False: psum is read as
 *                                         psum then a broadcast)
 *   all_gather      <-> reduce_scatter   (same dimension, tiled, axes)
 *   ppermute        ->  ppermute of the inverse permutation
 *   all_to_all      ->  all_to_all with split_axis and concat_axis swapped
 *
 * shard_map transposes to a shard_map of its transposed body: operands
 * [non-linear operands (their in_specs), nonzero output cotangents (their
 * out_specs)], results the cotangents of the linear operands (their
 * in_specs). With check_vma=False JAX divides each output cotangent by the
 * number of indices its out_spec leaves unmentioned and psums each operand
 * cotangent over the mesh axes its in_spec leaves unmentioned; so does this
 * rule. */
#include <stdio.h>
#include <string.h>

#include "transforms.h"

/* Copies the params of c's equation (the target arena's) for prim q. */
static ft_pval *params_as(tr_call *c, ft_prim q) {
  ft_pval *ps = tx_params(c->t, q);
  if (!ps) return NULL;
  const ft_prim_info *pi = ft_prim_get(c->e->prim), *qi = ft_prim_get(q);
  for (int k = 0; k < qi->n_params; k++)
    for (int m = 0; m < pi->n_params; m++)
      if (!strcmp(qi->params[k].name, pi->params[m].name)) ps[k] = c->params[m];
  return ps;
}

/* One equation of q per nonzero cotangent (the variadic ones). */
static bool each(tr_call *c, ft_prim q, const ft_pval *ps) {
  for (int k = 0; k < c->e->n_in; k++)
    if (c->lin[k] && c->ct[k]) c->ct_x[k] = tx_emit(c->t, q, ps, 1, &c->ct[k]);
  return !c->t->failed;
}

bool tr_collective(tr_call *c) {
  tx *t = c->t;
  ft_prim p = c->e->prim;
  ft_pval *ps;
  switch (p) {
  case FT_P_PSUM: return each(c, FT_P_PSUM, c->params);
  case FT_P_PSUM_INVARIANT: return (ps = params_as(c, FT_P_PVARY)) && each(c, FT_P_PVARY, ps);
  case FT_P_PVARY: return (ps = params_as(c, FT_P_PSUM_INVARIANT)) && each(c, FT_P_PSUM_INVARIANT, ps);
  case FT_P_ALL_GATHER:
    if (!(ps = params_as(c, FT_P_REDUCE_SCATTER))) return false;
    pset(FT_P_REDUCE_SCATTER, ps, "scatter_dimension", *pget(p, c->params, "all_gather_dimension"));
    return each(c, FT_P_REDUCE_SCATTER, ps);
  case FT_P_REDUCE_SCATTER:
    if (!(ps = params_as(c, FT_P_ALL_GATHER))) return false;
    pset(FT_P_ALL_GATHER, ps, "all_gather_dimension", *pget(p, c->params, "scatter_dimension"));
    return each(c, FT_P_ALL_GATHER, ps);
  case FT_P_ALL_TO_ALL:
    if (!(ps = params_as(c, FT_P_ALL_TO_ALL))) return false;
    pset(p, ps, "split_axis", *pget(p, c->params, "concat_axis"));
    pset(p, ps, "concat_axis", *pget(p, c->params, "split_axis"));
    return each(c, p, ps);
  case FT_P_PPERMUTE: {
    const ft_pval *perm = pget(p, c->params, "perm");
    if (!(ps = params_as(c, p))) return false;
    ft_pval inv = ft_pv_tuple(t->a, perm->n);
    if (perm->n && !inv.u.items) return tx_nomem(t), false;
    for (int q = 0; q < perm->n; q++) {
      int64_t pr[2];
      int np = 0;
      if (!ft_pv_get_ints(&perm->u.items[q], pr, 2, &np) || np != 2)
        return tx_fail(t, FT_ERR_INVALID_ARG, "transpose of ppermute: perm item %d is not a pair", q), false;
      int64_t sw[2] = {pr[1], pr[0]};
      inv.u.items[q] = ft_pv_ints(t->a, 2, sw);
      if (inv.u.items[q].tag != FT_PV_TUPLE) return tx_nomem(t), false;
    }
    pset(p, ps, "perm", inv);
    return each(c, p, ps);
  }
  default:
    return tx_fail(t, FT_ERR_INTERNAL, "transpose: %s is not a linear collective", ft_prim_get(p)->name), false;
  }
}

/* The mesh axes a spec does not mention, as an `axes` tuple of quoted
 * names, and the product of their sizes (*size). */
static ft_pval unmentioned(tx *t, const ft_pval *spec, const ft_spmd_axis *mesh, int nm, int64_t *size) {
  ft_spmd_dim dims[FT_MAX_RANK];
  int nd = ft_spmd_spec(spec, dims, FT_MAX_RANK);
  bool used[FT_SPMD_MAX_AXES] = {0};
  for (int d = 0; d < nd; d++)
    for (int q = 0; q < dims[d].n; q++)
      for (int m = 0; m < nm; m++)
        if (!strcmp(dims[d].names[q], mesh[m].name)) used[m] = true;
  int n = 0;
  *size = 1;
  for (int m = 0; m < nm; m++)
    if (!used[m]) n++, *size *= mesh[m].size;
  ft_pval r = ft_pv_tuple(t->a, n);
  if (n && !r.u.items) return tx_nomem(t), ft_pv_none();
  for (int m = 0, k = 0; m < nm; m++) {
    if (used[m]) continue;
    char q[70];
    snprintf(q, sizeof q, "'%s'", mesh[m].name);
    r.u.items[k++] = (ft_pval){.tag = FT_PV_OPAQUE, .s = ft_arena_strndup(t->a, q, strlen(q))};
    if (!r.u.items[k - 1].s) return tx_nomem(t), ft_pv_none();
  }
  return r;
}

/* A tuple of the items of specs with flag[i] (or, with extra, then the
 * items of extra with xflag[i]). */
static ft_pval specs_sel(tx *t, const ft_pval *specs, const bool *flag, const ft_pval *extra, const bool *xflag) {
  int m = 0;
  for (int i = 0; i < specs->n; i++) m += flag[i];
  for (int i = 0; extra && i < extra->n; i++) m += xflag[i];
  ft_pval r = ft_pv_tuple(t->a, m);
  if (m && !r.u.items) return tx_nomem(t), ft_pv_none();
  int q = 0;
  for (int i = 0; i < specs->n; i++)
    if (flag[i]) r.u.items[q++] = specs->u.items[i];
  for (int i = 0; extra && i < extra->n; i++)
    if (xflag[i]) r.u.items[q++] = extra->u.items[i];
  return r;
}

static bool tr_shard_map_in(tr_state *s, tr_call *c);

bool tr_shard_map(tr_state *s, tr_call *c) {
  ft_spmd_env saved; /* the body's shape rules see its mesh (all_to_all) */
  ft_spmd_env_enter(pget(FT_P_SHARD_MAP, c->params, "mesh"), &saved);
  bool ok = tr_shard_map_in(s, c);
  ft_spmd_env_leave(&saved);
  return ok;
}

static bool tr_shard_map_in(tr_state *s, tr_call *c) {
  tx *t = c->t;
  const ft_eqn *e = c->e;
  const ft_prim p = FT_P_SHARD_MAP;
  const ft_jaxpr *body = pget_jaxpr(p, e->params, "jaxpr");
  const ft_pval *is = pget(p, c->params, "in_specs"), *os = pget(p, c->params, "out_specs");
  bool vma = pget_bool(p, c->params, "check_vma", true);
  ft_spmd_axis mesh[FT_SPMD_MAX_AXES];
  int nm = ft_spmd_mesh(pget(p, c->params, "mesh"), mesh, FT_SPMD_MAX_AXES);
  if (nm < 1) return tx_fail(t, FT_ERR_INVALID_ARG, "transpose of shard_map: unreadable mesh"), false;
  int n = e->n_in, no = e->n_out;
  bool *nz = calloc((size_t)(no + 3 * n) + 1, 1), *onz = nz + no, *nl = onz + n, *lo = nl + n;
  ft_var **in = malloc(sizeof(ft_var *) * (size_t)(2 * (n + no) + 2));
  bool ok = nz && in;
  if (!ok) tx_nomem(t);
  for (int k = 0; ok && k < no; k++) nz[k] = c->ct[k] != NULL;
  ft_jaxpr *tj = ok ? transpose_jaxpr(s, t->a, body, c->lin, nz, false, onz) : NULL;
  ok = ok && tj;
  if (ok && !vma) { /* the psum over unmentioned axes of each operand cotangent, in the body */
    ft_jaxpr *w = ft_jaxpr_new(t->a);
    ft_var **o = w ? ft_arena_alloc(t->a, sizeof(ft_var *) * (size_t)(tj->n_out + 1)) : NULL;
    if (!o) ok = (tx_nomem(t), false);
    tx bt;
    if (ok) {
      tx_init(&bt, t->ctx, w, "transpose");
      for (int q = 0; q < tj->n_eqn; q++) tx_push_shared(&bt, &tj->eqns[q]);
    }
    for (int i = 0, m = 0; ok && i < n; i++) {
      if (!c->lin[i] || !onz[i]) continue;
      int64_t size;
      ft_pval ax = unmentioned(t, &is->u.items[i], mesh, nm, &size);
      o[m] = tj->outvars[m];
      if (ax.n) {
        ft_pval *ps = tx_params(&bt, FT_P_PSUM);
        if (ps) pset(FT_P_PSUM, ps, "axes", ax);
        o[m] = ps ? tx_emit(&bt, FT_P_PSUM, ps, 1, &tj->outvars[m]) : NULL;
      }
      ok = !t->failed && !bt.failed && o[m++];
    }
    ok = ok && ft_jaxpr_set_vars(w, tj->n_const, tj->constvars, tj->n_in, tj->invars, tj->n_out, o);
    if (ok) w->const_data = tj->const_data, tj = w;
    else if (!t->failed) bt.failed ? (void)(t->failed = true) : (void)tx_nomem(t);
  }
  int ni = 0, nout = 0;
  for (int i = 0; ok && i < n; i++)
    if (!c->lin[i]) in[ni++] = c->x[i];
  for (int k = 0; ok && k < no; k++) {
    if (!c->ct[k]) continue;
    ft_var *ct = c->ct[k];
    int64_t size = 1;
    if (!vma) unmentioned(t, &os->u.items[k], mesh, nm, &size);
    if (size > 1) ct = tx_binop(t, FT_P_DIV, ct, tx_lit(t, ct->aval.dtype, (double)size));
    ok = (in[ni++] = ct) != NULL;
  }
  for (int i = 0; i < n; i++) {
    nl[i] = !c->lin[i];
    lo[i] = c->lin[i] && onz[i];
    nout += lo[i];
  }
  ft_pval *ps = ok ? tx_params(t, p) : NULL;
  ft_var **out = in + ni;
  if (ps) {
    memcpy(ps, c->params, sizeof(ft_pval) * (size_t)ft_prim_get(p)->n_params);
    pset(p, ps, "jaxpr", ft_pv_jaxpr(tj));
    pset(p, ps, "in_specs", specs_sel(t, is, nl, os, nz));
    pset(p, ps, "out_specs", specs_sel(t, is, lo, NULL, NULL));
    if (!t->failed && tx_emitn(t, p, ps, ni, in, nout, out)) {
      int m = 0;
      for (int i = 0; i < n; i++)
        if (lo[i]) c->ct_x[i] = out[m++];
    }
  }
  free(nz), free(in);
  return ok && !t->failed;
}
