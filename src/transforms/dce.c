/* src/transforms/dce.c: dead-code elimination. Every primitive is pure, so
 * an equation none of whose outputs is needed goes. Control flow is pruned
 * inside: unused outputs of jit, cond and scan are removed from their
 * sub-jaxprs, and with them the inputs nothing reads any more (scan carries
 * by a fixed point, as JAX's _scan_dce_rule). The jaxpr given is edited in
 * place, but arrays it may share with other jaxprs are never written: new
 * ones are allocated. */
#include <string.h>

#include "transforms.h"

bool jaxpr_drop_inputs(ft_jaxpr *j, const bool *keep) {
  ft_var **in = ft_arena_alloc(j->arena, sizeof(ft_var *) * (size_t)(j->n_in + 1));
  if (!in) return false;
  int m = 0;
  for (int i = 0; i < j->n_in; i++)
    if (keep[i]) in[m++] = j->invars[i];
  j->invars = in;
  j->n_in = m;
  return true;
}

/* A shallow copy of j in a (shares equations until dce_jaxpr replaces the array). */
static ft_jaxpr *shallow(ft_arena *a, const ft_jaxpr *j) {
  ft_jaxpr *r = ft_jaxpr_new(a);
  if (!r) return NULL;
  *r = *j;
  r->arena = a;
  r->owns_arena = false;
  return r;
}

ft_jaxpr *dce_copy(ft_ctx *ctx, ft_arena *a, const ft_jaxpr *j, const bool *used_outs, bool *used_in) {
  ft_jaxpr *r = shallow(a, j);
  if (!r || !dce_jaxpr(ctx, r, used_outs, true, used_in)) return NULL;
  return r;
}

typedef struct dce {
  ft_ctx *ctx;
  ft_arena *a;
  vflags live;
} dce;

static bool is_live(dce *d, const ft_var *v) { return v->kind == FT_VAR && vflags_get(&d->live, v); }

/* A new equation like e with a subset of inputs/outputs and new params. */
static ft_eqn *eqn_new(dce *d, const ft_eqn *e, const bool *kin, const bool *kout, ft_pval *ps) {
  ft_eqn *n = ft_arena_alloc(d->a, sizeof *n);
  if (!n) return NULL;
  *n = *e;
  n->params = ps;
  n->in = ft_arena_alloc(d->a, sizeof(ft_var *) * (size_t)(e->n_in + 1));
  n->out = ft_arena_alloc(d->a, sizeof(ft_var *) * (size_t)(e->n_out + 1));
  if (!n->in || !n->out) return NULL;
  n->n_in = n->n_out = 0;
  for (int i = 0; i < e->n_in; i++)
    if (!kin || kin[i]) n->in[n->n_in++] = e->in[i];
  for (int o = 0; o < e->n_out; o++)
    if (!kout || kout[o]) n->out[n->n_out++] = e->out[o];
  return n;
}

static ft_pval *params_dup(dce *d, const ft_eqn *e) {
  const ft_prim_info *pi = ft_prim_get(e->prim);
  ft_pval *r = ft_arena_alloc(d->a, sizeof(ft_pval) * (size_t)(pi->n_params + 1));
  if (r) memcpy(r, e->params, sizeof(ft_pval) * (size_t)pi->n_params);
  return r;
}

static const ft_eqn *dce_jit(dce *d, const ft_eqn *e, const bool *need) {
  ft_jaxpr *inner = pget_jaxpr(e->prim, e->params, "jaxpr");
  bool *ui = calloc((size_t)e->n_in + 1, 1);
  if (!ui) return NULL;
  ft_jaxpr *nj = dce_copy(d->ctx, d->a, inner, need, ui);
  const ft_eqn *r = NULL;
  if (nj && jaxpr_drop_inputs(nj, ui)) {
    ft_pval *ps = params_dup(d, e);
    if (ps) {
      pset(e->prim, ps, "jaxpr", ft_pv_jaxpr(nj));
      r = eqn_new(d, e, ui, need, ps);
    }
  }
  free(ui);
  return r;
}

static const ft_eqn *dce_cond(dce *d, const ft_eqn *e, const bool *need) {
  const ft_pval *br = pget(FT_P_COND, e->params, "branches");
  int nb = br->n, nops = e->n_in - 1;
  bool *ui = calloc((size_t)nops + 1, 1), *acc = calloc((size_t)e->n_in + 1, 1);
  ft_jaxpr **nj = calloc((size_t)nb + 1, sizeof *nj);
  const ft_eqn *r = NULL;
  bool ok = ui && acc && nj;
  for (int b = 0; ok && b < nb; b++) {
    ok = (nj[b] = dce_copy(d->ctx, d->a, br->u.items[b].u.jaxpr, need, ui)) != NULL;
    for (int i = 0; ok && i < nops; i++) acc[i + 1] = acc[i + 1] || ui[i];
  }
  acc[0] = true;
  ft_pval nbr = ft_pv_tuple(d->a, nb);
  if (ok && nb && !nbr.u.items) ok = false;
  for (int b = 0; ok && b < nb; b++) {
    ok = jaxpr_drop_inputs(nj[b], acc + 1);
    nbr.u.items[b] = ft_pv_jaxpr(nj[b]);
  }
  ft_pval *ps = ok ? params_dup(d, e) : NULL;
  if (ps) {
    pset(FT_P_COND, ps, "branches", nbr);
    r = eqn_new(d, e, acc, need, ps);
  }
  free(ui), free(acc), free(nj);
  return r;
}

static const ft_eqn *dce_scan(dce *d, const ft_eqn *e, const bool *need) {
  int ncon = (int)pget_int(FT_P_SCAN, e->params, "num_consts", 0);
  int ncar = (int)pget_int(FT_P_SCAN, e->params, "num_carry", 0);
  ft_jaxpr *body = pget_jaxpr(FT_P_SCAN, e->params, "jaxpr");
  int n = e->n_in;
  bool *uo = malloc((size_t)body->n_out + 1), *ui = calloc((size_t)n + 1, 1);
  bool *keep = calloc((size_t)n + 1, 1);
  const ft_eqn *r = NULL;
  ft_jaxpr *nj = NULL;
  if (!uo || !ui || !keep) goto out;
  memcpy(uo, need, (size_t)body->n_out);
  for (bool changed = true; changed;) {
    changed = false;
    if (!(nj = dce_copy(d->ctx, d->a, body, uo, ui))) goto out;
    for (int k = 0; k < ncar; k++)
      if (ui[ncon + k] && !uo[k]) uo[k] = changed = true;
  }
  for (int i = 0; i < n; i++) keep[i] = (i >= ncon && i < ncon + ncar) ? uo[i - ncon] : ui[i];
  if (!jaxpr_drop_inputs(nj, keep)) goto out;
  int kc = 0, kcar = 0;
  for (int i = 0; i < ncon; i++) kc += keep[i];
  for (int k = 0; k < ncar; k++) kcar += uo[k];
  ft_pval *ps = params_dup(d, e);
  if (!ps) goto out;
  pset(FT_P_SCAN, ps, "jaxpr", ft_pv_jaxpr(nj));
  scan_set_counts(ps, kc, kcar);
  r = eqn_new(d, e, keep, uo, ps);
out:
  free(uo), free(ui), free(keep);
  return r;
}

bool dce_jaxpr(ft_ctx *ctx, ft_jaxpr *j, const bool *used, bool prune_outs, bool *used_in) {
  dce d = {.ctx = ctx, .a = j->arena};
  if (!vflags_init(&d.live, ft_arena_num_var_ids(j->arena) + 1)) goto nomem;
  for (int k = 0; k < j->n_out; k++)
    if ((!used || used[k]) && j->outvars[k]->kind == FT_VAR) vflags_set(&d.live, j->outvars[k], 1);
  ft_eqn *ne = ft_arena_alloc_raw(j->arena, sizeof(ft_eqn) * (size_t)(j->n_eqn + 1));
  bool *need = malloc(sizeof(bool) * 64);
  int need_cap = 64;
  if (!ne || !need) {
    free(need);
    goto nomem;
  }
  int m = j->n_eqn;
  for (int q = j->n_eqn - 1; q >= 0; q--) {
    const ft_eqn *e = &j->eqns[q];
    if (e->n_out > need_cap) {
      bool *nn = realloc(need, (size_t)e->n_out);
      if (!nn) {
        free(need);
        goto nomem;
      }
      need = nn;
      need_cap = e->n_out;
    }
    bool any = false, all = true;
    for (int o = 0; o < e->n_out; o++) {
      need[o] = is_live(&d, e->out[o]);
      any = any || need[o];
      all = all && need[o];
    }
    if (!any) continue;
    const ft_eqn *k = e;
    if (e->prim == FT_P_JIT || e->prim == FT_P_REMAT2) k = dce_jit(&d, e, need);
    else if (e->prim == FT_P_COND) k = dce_cond(&d, e, need);
    else if (e->prim == FT_P_SCAN) k = dce_scan(&d, e, need);
    (void)all;
    if (!k) {
      free(need);
      goto nomem;
    }
    for (int i = 0; i < k->n_in; i++)
      if (k->in[i]->kind == FT_VAR) vflags_set(&d.live, k->in[i], 1);
    ne[--m] = *k;
  }
  free(need);
  if (d.live.failed) goto nomem;
  j->eqns = ne + m;
  j->n_eqn = j->n_eqn - m;
  if (prune_outs && used) {
    ft_var **o = ft_arena_alloc(j->arena, sizeof(ft_var *) * (size_t)(j->n_out + 1));
    if (!o) goto nomem;
    int c = 0;
    for (int k = 0; k < j->n_out; k++)
      if (used[k]) o[c++] = j->outvars[k];
    j->outvars = o;
    j->n_out = c;
  }
  if (used_in)
    for (int i = 0; i < j->n_in; i++) used_in[i] = is_live(&d, j->invars[i]);
  vflags_free(&d.live);
  return true;
nomem:
  vflags_free(&d.live);
  ft_set_error(ctx, FT_ERR_NOMEM, "dce: out of memory");
  return false;
}
