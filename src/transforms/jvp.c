/* src/transforms/jvp.c: forward mode. One pass over a jaxpr emits, for each
 * equation, its primal copy and (through its JVP rule) the tangent
 * equations. Tangents are symbolic zeros (NULL) until something makes them
 * nonzero, so parts of a program that do not depend on the differentiated
 * inputs cost nothing. Integer and boolean values never carry tangents
 * (JAX's float0). */
#include <string.h>

#include "transforms.h"

/* The target atom of a source atom: mapped vars, and literals copied into
 * the target arena (shared when the arenas are the same). */
static ft_var *atom(jvp_state *s, tx *t, ft_var *v) {
  if (v->kind == FT_LIT) {
    ft_var *r = vmap_get(&s->primal, v);
    if (r && r->kind == FT_LIT) return r;
    r = lit_clone(t->a, v);
    if (!r || !vmap_set(&s->primal, v, r)) return tx_nomem(t);
    return r;
  }
  ft_var *r = vmap_get(&s->primal, v);
  if (!r) return tx_fail(t, FT_ERR_INTERNAL, "jvp: variable used before definition");
  return r;
}

/* Copies e into t with fresh outputs (drop vars become real ones: a JVP
 * rule may read them). */
static bool copy_eqn(tx *t, const ft_eqn *e, const ft_pval *params, ft_var **x, ft_var **y) {
  for (int k = 0; k < e->n_out; k++)
    if (!(y[k] = ft_var_new(t->a, &e->out[k]->aval)) || !var_copy_vma(t->a, y[k], e->out[k]))
      return tx_nomem(t), false;
  return tx_push_owned(t, e->prim, params, e->n_in, x, e->n_out, y);
}

static bool jvp_eqn(jvp_state *s, tx *t, const ft_arena *from, const ft_eqn *e, ft_var **x,
                    ft_var **dx, ft_var **y, ft_var **dy) {
  bool any = false;
  for (int i = 0; i < e->n_in; i++) {
    if (!(x[i] = atom(s, t, e->in[i]))) return false;
    dx[i] = e->in[i]->kind == FT_LIT ? NULL : vmap_get(&s->tangent, e->in[i]);
    any = any || dx[i];
  }
  const ft_pval *params = params_import(t, from, e->prim, e->params);
  if (!params) return false;
  for (int k = 0; k < e->n_out; k++) dy[k] = NULL;
  jvp_call c = {.t = t, .e = e, .params = params, .x = x, .dx = dx, .y = y, .dy = dy};
  if (!any) return copy_eqn(t, e, params, x, y);
  if (ft_prim_get(e->prim)->family == FT_FAM_CONTROL || e->prim == FT_P_SHARD_MAP || e->prim == FT_P_REDUCE ||
      e->prim == FT_P_REDUCE_WINDOW)
    return jvp_control(s, &c);
  if (!copy_eqn(t, e, params, x, y)) return false;
  bool inexact = false;
  for (int k = 0; k < e->n_out; k++) inexact = inexact || var_inexact(e->out[k]);
  if (!inexact) return true; /* integer/boolean results: zero tangents */
  return jvp_rule(&c);
}

bool jvp_into(jvp_state *s, tx *t, const ft_jaxpr *src, ft_var *const *primals_in,
              ft_var *const *tangents_in, ft_var **primals_out, ft_var **tangents_out) {
  if (src->arena != s->src)
    return tx_fail(t, FT_ERR_INTERNAL, "jvp: a sub-jaxpr outside the program's arena (its variable "
                   "ids would collide with the program's)"), false;
  for (int i = 0; i < src->n_in; i++) {
    if (!vmap_set(&s->primal, src->invars[i], primals_in[i])) return tx_nomem(t), false;
    ft_var *d = var_inexact(src->invars[i]) ? tangents_in[i] : NULL;
    if (!vmap_set(&s->tangent, src->invars[i], d)) return tx_nomem(t), false;
  }
  int max_in = 4, max_out = 4;
  for (int k = 0; k < src->n_eqn; k++) {
    if (src->eqns[k].n_in > max_in) max_in = src->eqns[k].n_in;
    if (src->eqns[k].n_out > max_out) max_out = src->eqns[k].n_out;
  }
  ft_var **buf = malloc(sizeof(ft_var *) * (size_t)(2 * max_in + 2 * max_out));
  if (!buf) return tx_nomem(t), false;
  ft_var **x = buf, **dx = buf + max_in, **y = dx + max_in, **dy = y + max_out;
  bool ok = true;
  for (int k = 0; ok && k < src->n_eqn; k++) {
    const ft_eqn *e = &src->eqns[k];
    ok = jvp_eqn(s, t, src->arena, e, x, dx, y, dy);
    for (int o = 0; ok && o < e->n_out; o++) {
      ft_var *d = var_inexact(e->out[o]) ? dy[o] : NULL;
      if (!vmap_set(&s->primal, e->out[o], y[o]) || !vmap_set(&s->tangent, e->out[o], d))
        ok = (tx_nomem(t), false);
    }
    if (!ok && !t->failed && ft_ctx_status(t->ctx) == FT_OK)
      tx_fail(t, FT_ERR_INTERNAL, "jvp: rule for %s failed", ft_prim_get(e->prim)->name);
    if (!ok) t->failed = true;
    if (!ok) ft_error_prefix(t->ctx, "in equation %d (%s)", k, ft_prim_get(e->prim)->name);
  }
  free(buf);
  if (!ok) return false;
  for (int k = 0; k < src->n_out; k++) {
    ft_var *v = src->outvars[k];
    if (!(primals_out[k] = atom(s, t, v))) return false;
    tangents_out[k] = v->kind == FT_LIT || !var_inexact(v) ? NULL : vmap_get(&s->tangent, v);
  }
  return !t->failed;
}

ft_jaxpr *jvp_jaxpr(jvp_state *s, ft_arena *a, const ft_jaxpr *src, const bool *nonzero,
                    const bool *instantiate, bool *out_nz) {
  ft_jaxpr *j = ft_jaxpr_new(a);
  if (!j) return NULL;
  tx t;
  tx_init(&t, s->ctx, j, "jvp");
  int n_in = src->n_in, n_out = src->n_out;
  ft_var **v = malloc(sizeof(ft_var *) * (size_t)(2 * n_in + 2 * n_out + src->n_const + 2));
  if (!v) return tx_nomem(&t);
  ft_var **pin = v, **tin = v + n_in, **pout = tin + n_in, **tout = pout + n_out;
  ft_var **cv = tout + n_out;
  ft_jaxpr *res = NULL;
  for (int i = 0; i < src->n_const; i++) {
    if (!(cv[i] = ft_var_new(a, &src->constvars[i]->aval))) goto done;
    if (!vmap_set(&s->primal, src->constvars[i], cv[i]) ||
        !vmap_set(&s->tangent, src->constvars[i], NULL))
      goto done;
  }
  int nt = 0;
  for (int i = 0; i < n_in; i++) {
    if (!(pin[i] = ft_var_new(a, &src->invars[i]->aval)) || !var_copy_vma(a, pin[i], src->invars[i])) goto done;
    tin[i] = NULL;
    if (nonzero[i] && var_inexact(src->invars[i])) {
      if (!(tin[i] = ft_var_new(a, &src->invars[i]->aval)) || !var_copy_vma(a, tin[i], src->invars[i])) goto done;
      nt++;
    }
  }
  if (!jvp_into(s, &t, src, pin, tin, pout, tout)) goto done;
  ft_var **ins = malloc(sizeof(ft_var *) * (size_t)(n_in + nt + 1));
  ft_var **outs = malloc(sizeof(ft_var *) * (size_t)(2 * n_out + 1));
  if (!ins || !outs) {
    free(ins);
    free(outs);
    goto done;
  }
  int ni = 0, no = 0;
  for (int i = 0; i < n_in; i++) ins[ni++] = pin[i];
  for (int i = 0; i < n_in; i++)
    if (tin[i]) ins[ni++] = tin[i];
  for (int k = 0; k < n_out; k++) outs[no++] = pout[k];
  for (int k = 0; k < n_out; k++) {
    bool nz = tout[k] != NULL;
    if (out_nz) out_nz[k] = nz;
    if (!nz && instantiate && instantiate[k] && var_inexact(src->outvars[k]))
      tout[k] = tx_zeros(&t, &src->outvars[k]->aval);
    if (tout[k]) outs[no++] = tout[k];
  }
  if (!t.failed && ft_jaxpr_set_vars(j, src->n_const, cv, ni, ins, no, outs) &&
      jaxpr_copy_consts(j, src))
    res = j;
  free(ins);
  free(outs);
done:
  if (!res && !t.failed) tx_nomem(&t);
  free(v);
  return res;
}
