/* src/transforms/transpose.c: the backward pass (JAX's backward_pass).
 * Values that do not depend on the linear inputs are computed forward
 * first; then equations are visited in reverse, each linear one handing its
 * output cotangents to its transpose rule, and cotangents reaching one
 * variable from several uses are summed with add_any. A NULL cotangent is a
 * symbolic zero: equations that receive only zeros emit nothing, and
 * inputs nothing reaches get zeros only where an output must exist. */
#include <string.h>

#include "transforms.h"

static ft_var *tr_atom(tr_state *s, tx *t, ft_var *v) {
  if (v->kind == FT_LIT) {
    ft_var *r = vmap_get(&s->primal, v);
    if (r && r->kind == FT_LIT) return r;
    r = lit_clone(t->a, v);
    if (!r || !vmap_set(&s->primal, v, r)) return tx_nomem(t);
    return r;
  }
  ft_var *r = vmap_get(&s->primal, v);
  return r ? r : tx_fail(t, FT_ERR_INTERNAL, "transpose: non-linear value used before definition");
}

static bool is_lin(tr_state *s, const ft_var *v) { return v->kind == FT_VAR && vflags_get(&s->lin, v); }

bool transpose_into(tr_state *s, tx *t, const ft_jaxpr *lin, const bool *linear,
                    ft_var *const *nonlin, ft_var *const *ct_out, ft_var **ct_in) {
  if (lin->arena != s->src)
    return tx_fail(t, FT_ERR_INTERNAL, "transpose: a sub-jaxpr outside the program's arena (its "
                   "variable ids would collide with the program's)"), false;
  bool ok = true;
  for (int i = 0; ok && i < lin->n_in; i++) {
    ft_var *v = lin->invars[i];
    ok = vflags_set(&s->lin, v, linear[i]) && vmap_set(&s->ct, v, NULL) &&
         (linear[i] || vmap_set(&s->primal, v, nonlin[i]));
  }
  int max_io = 4;
  for (int q = 0; q < lin->n_eqn; q++) {
    if (lin->eqns[q].n_in > max_io) max_io = lin->eqns[q].n_in;
    if (lin->eqns[q].n_out > max_io) max_io = lin->eqns[q].n_out;
  }
  ft_var **buf = malloc(sizeof(ft_var *) * (size_t)(4 * max_io));
  bool *lb = malloc((size_t)max_io);
  if (!buf || !lb) ok = false;
  if (!ok) {
    free(buf), free(lb);
    return tx_nomem(t), false;
  }
  ft_var **x = buf, **y = buf + max_io, **ct = y + max_io, **ctx = ct + max_io;
  /* Forward: non-linear equations are evaluated; linear ones marked. */
  for (int q = 0; ok && q < lin->n_eqn; q++) {
    const ft_eqn *e = &lin->eqns[q];
    bool any = false;
    for (int i = 0; i < e->n_in; i++) any = any || is_lin(s, e->in[i]);
    for (int o = 0; ok && o < e->n_out; o++)
      ok = vflags_set(&s->lin, e->out[o], any) && vmap_set(&s->ct, e->out[o], NULL);
    if (any || !ok) continue;
    for (int i = 0; ok && i < e->n_in; i++) ok = (x[i] = tr_atom(s, t, e->in[i])) != NULL;
    for (int o = 0; ok && o < e->n_out; o++) {
      ok = (y[o] = ft_var_new(t->a, &e->out[o]->aval)) && var_copy_vma(t->a, y[o], e->out[o]) &&
           vmap_set(&s->primal, e->out[o], y[o]);
      if (!ok) tx_nomem(t);
    }
    const ft_pval *ps = ok ? params_import(t, lin->arena, e->prim, e->params) : NULL;
    ok = ok && ps && tx_push_owned(t, e->prim, ps, e->n_in, x, e->n_out, y);
  }
  for (int k = 0; ok && k < lin->n_out; k++) {
    ft_var *v = lin->outvars[k];
    if (!ct_out[k] || !is_lin(s, v)) continue; /* cotangents of constants are dropped */
    ft_var *acc = tx_acc(t, vmap_get(&s->ct, v), ct_out[k]);
    ok = acc && vmap_set(&s->ct, v, acc);
  }
  /* Backward. */
  for (int q = lin->n_eqn - 1; ok && q >= 0; q--) {
    const ft_eqn *e = &lin->eqns[q];
    bool any = false, anyct = false;
    for (int i = 0; i < e->n_in; i++) any = any || is_lin(s, e->in[i]);
    if (!any) continue;
    for (int o = 0; o < e->n_out; o++) {
      ct[o] = vmap_get(&s->ct, e->out[o]);
      anyct = anyct || ct[o];
    }
    if (!anyct) continue;
    for (int i = 0; ok && i < e->n_in; i++) {
      lb[i] = is_lin(s, e->in[i]);
      x[i] = lb[i] ? NULL : tr_atom(s, t, e->in[i]);
      ctx[i] = NULL;
      ok = lb[i] || x[i];
    }
    const ft_pval *ps = ok ? params_import(t, lin->arena, e->prim, e->params) : NULL;
    if (ok && !ps) ok = false;
    tr_call c = {.t = t, .e = e, .params = ps, .lin = lb, .x = x, .ct = ct, .ct_x = ctx};
    ok = ok && transpose_rule(s, &c);
    if (!ok) {
      if (!t->failed && ft_ctx_status(t->ctx) == FT_OK)
        tx_fail(t, FT_ERR_INTERNAL, "transpose of %s failed", ft_prim_get(e->prim)->name);
      t->failed = true;
      ft_error_prefix(t->ctx, "in equation %d (%s)", q, ft_prim_get(e->prim)->name);
      break;
    }
    for (int i = 0; ok && i < e->n_in; i++) {
      if (!lb[i] || !ctx[i]) continue;
      ft_var *acc = tx_acc(t, vmap_get(&s->ct, e->in[i]), ctx[i]);
      ok = acc && vmap_set(&s->ct, e->in[i], acc);
    }
  }
  for (int i = 0; ok && i < lin->n_in; i++) ct_in[i] = linear[i] ? vmap_get(&s->ct, lin->invars[i]) : NULL;
  free(buf), free(lb);
  if (s->ct.failed || s->lin.failed || s->primal.failed) return tx_nomem(t), false;
  return ok && !t->failed;
}

ft_jaxpr *transpose_jaxpr(tr_state *s, ft_arena *a, const ft_jaxpr *lin, const bool *linear,
                          const bool *ct_nz, bool instantiate, bool *out_nz) {
  ft_jaxpr *j = ft_jaxpr_new(a);
  if (!j) return NULL;
  tx t;
  tx_init(&t, s->ctx, j, "transpose");
  int n = lin->n_in, no = lin->n_out;
  ft_var **v = malloc(sizeof(ft_var *) * (size_t)(4 * n + 2 * no + lin->n_const + 4));
  if (!v) return tx_nomem(&t);
  ft_var **nl = v, **ins = nl + n, **cto = ins + n + no, **cti = cto + no, **outs = cti + n, **cv = outs + n;
  ft_jaxpr *res = NULL;
  int ni = 0;
  bool ok = true;
  for (int i = 0; ok && i < lin->n_const; i++)
    ok = (cv[i] = ft_var_new(a, &lin->constvars[i]->aval)) && vmap_set(&s->primal, lin->constvars[i], cv[i]) &&
         vflags_set(&s->lin, lin->constvars[i], 0);
  for (int i = 0; ok && i < n; i++) {
    nl[i] = NULL;
    if (linear[i]) continue;
    ok = (nl[i] = ins[ni++] = ft_var_new(a, &lin->invars[i]->aval)) != NULL && var_copy_vma(a, nl[i], lin->invars[i]);
  }
  for (int k = 0; ok && k < no; k++) {
    cto[k] = NULL;
    if (ct_nz[k])
      ok = (cto[k] = ins[ni++] = ft_var_new(a, &lin->outvars[k]->aval)) != NULL &&
           var_copy_vma(a, cto[k], lin->outvars[k]);
  }
  if (!ok) {
    free(v);
    return tx_nomem(&t);
  }
  if (transpose_into(s, &t, lin, linear, nl, cto, cti)) {
    int m = 0;
    for (int i = 0; i < n; i++) {
      if (!linear[i]) continue;
      if (out_nz) out_nz[i] = cti[i] != NULL;
      if (!cti[i] && instantiate) cti[i] = tx_zeros(&t, &lin->invars[i]->aval);
      if (cti[i]) outs[m++] = cti[i];
    }
    if (!t.failed && ft_jaxpr_set_vars(j, lin->n_const, cv, ni, ins, m, outs) && jaxpr_copy_consts(j, lin))
      res = j;
    else if (!t.failed)
      tx_nomem(&t);
  }
  free(v);
  return res;
}
