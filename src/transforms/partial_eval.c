/* src/transforms/partial_eval.c: partial evaluation (JAX's
 * partial_eval_jaxpr_nounits). Given which inputs are unknown, each
 * equation goes to the known jaxpr if all its inputs are known, else to the
 * unknown one; known values the unknown side reads become residuals,
 * outputs of the known jaxpr and inputs of the unknown one. Applied to a
 * JVP jaxpr with the tangents unknown, this is linearize: the known jaxpr
 * is the primal computation, the unknown one the linear tangent map.
 *
 * Control flow is split, not moved whole: jit and cond by splitting their
 * sub-jaxprs (cond joins the residuals of all branches), scan by splitting
 * its body with a fixed point on the carries (residuals are stacked as
 * extra outputs; loop-invariant ones are passed as consts), while by a known
 * loop over the known carries plus the whole loop on the unknown side (as
 * JAX does; its transpose is refused). Both results share the var objects
 * of the input jaxpr (same arena), so nothing is renamed. */
#include <stdio.h>
#include <string.h>

#include "transforms.h"

typedef struct pe {
  ft_ctx *ctx;
  ft_arena *a;
  tx K, U;
  vflags unk;        /* var is unknown */
  vflags res;        /* var is already a residual */
  ft_var **resv;
  int n_res, cap_res;
} pe;

static bool is_unk(pe *p, const ft_var *v) { return v->kind == FT_VAR && vflags_get(&p->unk, v); }

static bool set_unk(pe *p, const ft_var *v, bool u) {
  if (!vflags_set(&p->unk, v, u)) return tx_nomem(&p->K), false;
  return true;
}

/* Makes known var v available to the unknown side. */
static bool add_res(pe *p, ft_var *v) {
  if (v->kind != FT_VAR || is_unk(p, v) || vflags_get(&p->res, v)) return true;
  if (!vflags_set(&p->res, v, 1)) return tx_nomem(&p->K), false;
  if (p->n_res == p->cap_res) {
    int cap = p->cap_res ? 2 * p->cap_res : 16;
    ft_var **n = realloc(p->resv, sizeof *n * (size_t)cap);
    if (!n) return tx_nomem(&p->K), false;
    p->resv = n;
    p->cap_res = cap;
  }
  p->resv[p->n_res++] = v;
  return true;
}

/* The whole equation goes to the unknown side. */
static bool all_unknown(pe *p, const ft_eqn *e) {
  for (int i = 0; i < e->n_in; i++)
    if (!add_res(p, e->in[i])) return false;
  for (int o = 0; o < e->n_out; o++)
    if (!set_unk(p, e->out[o], true)) return false;
  return tx_push_shared(&p->U, e);
}

static ft_pval *params_copy(ft_arena *a, ft_prim pr, const ft_pval *ps) {
  const ft_prim_info *pi = ft_prim_get(pr);
  ft_pval *r = ft_arena_alloc(a, sizeof(ft_pval) * (size_t)(pi->n_params + 1));
  if (r) memcpy(r, ps, sizeof(ft_pval) * (size_t)pi->n_params);
  return r;
}

static ft_var *fresh(pe *p, const ft_aval *av) {
  ft_var *v = ft_var_new(p->a, av);
  return v ? v : tx_nomem(&p->K);
}

/* A jaxpr sharing src's equations with the given var lists. */
static ft_jaxpr *reframe(pe *p, const ft_jaxpr *src, int n_in, ft_var **in, int n_out, ft_var **out) {
  ft_jaxpr *j = ft_jaxpr_new(p->a);
  if (!j) return tx_nomem(&p->K);
  j->eqns = src->eqns;
  j->n_eqn = src->n_eqn;
  j->const_data = src->const_data;
  if (!ft_jaxpr_set_vars(j, src->n_const, src->constvars, n_in, in, n_out, out)) return tx_nomem(&p->K);
  return j;
}

/* ------------------------------------------------------------------ jit */

static bool pe_jit(pe *p, const ft_eqn *e, const bool *uin) {
  ft_prim pr = e->prim;
  const char *key = pr == FT_P_JIT ? "jaxpr" : "call_jaxpr";
  ft_jaxpr *inner = pget_jaxpr(pr, e->params, key);
  pe_out po;
  if (!pe_jaxpr(p->ctx, p->a, inner, uin, NULL, &po)) return p->K.failed = true, false;
  int nk_in = 0, nu_in = 0, nk_out = 0, nu_out = 0;
  for (int i = 0; i < e->n_in; i++) uin[i] ? nu_in++ : nk_in++;
  for (int k = 0; k < e->n_out; k++) po.out_unknown[k] ? nu_out++ : nk_out++;
  int R = po.n_res;
  ft_var **buf = malloc(sizeof(ft_var *) * (size_t)(2 * e->n_in + 2 * e->n_out + 2 * R + 4));
  if (!buf) return tx_nomem(&p->K), false;
  ft_var **kin = buf, **kout = kin + e->n_in, **uinv = kout + e->n_out + R, **uout = uinv + e->n_in + R;
  int a = 0, b = 0;
  for (int i = 0; i < e->n_in; i++)
    if (!uin[i]) kin[a++] = e->in[i];
  for (int k = 0; k < e->n_out; k++)
    if (!po.out_unknown[k]) kout[b++] = e->out[k];
  bool ok = true;
  for (int r = 0; ok && r < R; r++) {
    ft_var *rv = fresh(p, &po.known->outvars[nk_out + r]->aval);
    kout[b++] = rv;
    uinv[r] = rv;
    ok = rv != NULL;
  }
  int c = R, d = 0;
  for (int i = 0; i < e->n_in; i++)
    if (uin[i]) uinv[c++] = e->in[i];
  for (int k = 0; k < e->n_out; k++)
    if (po.out_unknown[k]) uout[d++] = e->out[k];
  ft_pval *kp = ok ? params_copy(p->a, pr, e->params) : NULL;
  ft_pval *up = ok ? params_copy(p->a, pr, e->params) : NULL;
  if (ok && (!kp || !up)) ok = (tx_nomem(&p->K), false);
  if (ok) {
    pset(pr, kp, key, ft_pv_jaxpr(po.known));
    pset(pr, up, key, ft_pv_jaxpr(po.unknown));
    if (pr == FT_P_CUSTOM_JVP_CALL || pr == FT_P_CUSTOM_VJP_CALL) {
      pset(pr, kp, "num_consts", ft_pv_int(0));
      pset(pr, up, "num_consts", ft_pv_int(0));
    }
    ok = tx_push(&p->K, pr, kp, nk_in, kin, nk_out + R, kout) &&
         tx_push(&p->U, pr, up, R + nu_in, uinv, nu_out, uout);
  }
  for (int i = 0; ok && i < R + nu_in; i++) ok = add_res(p, uinv[i]);
  for (int k = 0; ok && k < e->n_out; k++) ok = set_unk(p, e->out[k], po.out_unknown[k]);
  free(buf);
  return ok;
}

/* ----------------------------------------------------------------- cond */

static bool pe_cond(pe *p, const ft_eqn *e, const bool *uin) {
  if (uin[0]) return all_unknown(p, e);
  const ft_pval *br = pget(FT_P_COND, e->params, "branches");
  int nb = br->n, nops = e->n_in - 1, nout = e->n_out;
  bool *u = calloc((size_t)nout + 1, 1);
  pe_out *po = calloc((size_t)nb, sizeof *po);
  int *res0 = calloc((size_t)nb + 1, sizeof(int));
  if (!u || !po || !res0) {
    free(u), free(po), free(res0);
    return tx_nomem(&p->K), false;
  }
  bool ok = true;
  for (int b = 0; ok && b < nb; b++) {
    ok = pe_jaxpr(p->ctx, p->a, br->u.items[b].u.jaxpr, uin + 1, NULL, &po[b]);
    for (int k = 0; ok && k < nout; k++) u[k] = u[k] || po[b].out_unknown[k];
  }
  int R = 0;
  for (int b = 0; ok && b < nb; b++) {
    ok = pe_jaxpr(p->ctx, p->a, br->u.items[b].u.jaxpr, uin + 1, u, &po[b]);
    res0[b] = R;
    R += ok ? po[b].n_res : 0;
  }
  int nk_out = 0;
  for (int k = 0; k < nout; k++) nk_out += !u[k];
  ft_pval kb = ft_pv_tuple(p->a, nb), ub = ft_pv_tuple(p->a, nb);
  if (ok && nb && (!kb.u.items || !ub.u.items)) ok = (tx_nomem(&p->K), false);
  ft_var **resv = calloc((size_t)R + 1, sizeof *resv);
  ft_var **vb = calloc((size_t)(2 * (R + nops + nout) + 4), sizeof *vb);
  if (!resv || !vb) ok = (tx_nomem(&p->K), false);
  /* The residual avals: branch b's residual r is slot res0[b] + r. */
  for (int b = 0; ok && b < nb; b++)
    for (int r = 0; r < po[b].n_res; r++) resv[res0[b] + r] = po[b].known->outvars[nk_out + r];
  for (int b = 0; ok && b < nb; b++) {
    /* known branch: [known ops] -> [known outs, all residual slots] */
    ft_jaxpr *kj = ft_jaxpr_new(p->a);
    if (!kj) { ok = (tx_nomem(&p->K), false); break; }
    tx t;
    tx_init(&t, p->ctx, kj, "linearize");
    const ft_jaxpr *K = po[b].known;
    for (int k = 0; k < K->n_eqn; k++) tx_push_shared(&t, &K->eqns[k]);
    int m = 0;
    for (int k = 0; k < nk_out; k++) vb[m++] = K->outvars[k];
    for (int s = 0; s < R; s++)
      vb[m++] = (s >= res0[b] && s < res0[b] + po[b].n_res) ? K->outvars[nk_out + s - res0[b]]
                                                            : tx_zeros(&t, &resv[s]->aval);
    if (t.failed || !ft_jaxpr_set_vars(kj, K->n_const, K->constvars, K->n_in, K->invars, m, vb)) {
      ok = (tx_nomem(&p->K), false);
      break;
    }
    kj->const_data = K->const_data;
    kb.u.items[b] = ft_pv_jaxpr(kj);
    /* unknown branch: [all residual slots, unknown ops] -> [unknown outs] */
    const ft_jaxpr *U = po[b].unknown;
    m = 0;
    for (int s = 0; s < R; s++) {
      if (s >= res0[b] && s < res0[b] + po[b].n_res) vb[m++] = U->invars[s - res0[b]];
      else if (!(vb[m++] = fresh(p, &resv[s]->aval))) ok = false;
    }
    for (int i = po[b].n_res; i < U->n_in; i++) vb[m++] = U->invars[i];
    ft_jaxpr *uj = ok ? reframe(p, U, m, vb, U->n_out, U->outvars) : NULL;
    if (!uj) { ok = false; break; }
    ub.u.items[b] = ft_pv_jaxpr(uj);
  }
  if (ok) {
    ft_var **kin = vb, **kout = vb + 1 + nops;
    int a = 0, c = 0;
    kin[a++] = e->in[0];
    for (int i = 0; i < nops; i++)
      if (!uin[i + 1]) kin[a++] = e->in[i + 1];
    for (int k = 0; k < nout; k++)
      if (!u[k]) kout[c++] = e->out[k];
    for (int s = 0; ok && s < R; s++)
      if (!(kout[c++] = resv[s] = fresh(p, &resv[s]->aval))) ok = false;
    ft_pval *kp = params_copy(p->a, FT_P_COND, e->params);
    ft_pval *up = params_copy(p->a, FT_P_COND, e->params);
    if (!kp || !up) ok = (tx_nomem(&p->K), false);
    if (ok) {
      pset(FT_P_COND, kp, "branches", kb);
      pset(FT_P_COND, up, "branches", ub);
      ok = tx_push(&p->K, FT_P_COND, kp, a, kin, c, kout);
    }
    ft_var **uinv = kout + c, **uout = uinv + 1 + R + nops;
    int m = 0, d = 0;
    uinv[m++] = e->in[0];
    for (int s = 0; s < R; s++) uinv[m++] = resv[s];
    for (int i = 0; i < nops; i++)
      if (uin[i + 1]) uinv[m++] = e->in[i + 1];
    for (int k = 0; k < nout; k++)
      if (u[k]) uout[d++] = e->out[k];
    ok = ok && tx_push(&p->U, FT_P_COND, up, m, uinv, d, uout);
    for (int i = 0; ok && i < m; i++) ok = add_res(p, uinv[i]);
    for (int k = 0; ok && k < nout; k++) ok = set_unk(p, e->out[k], u[k]);
  }
  free(u), free(po), free(res0), free(resv), free(vb);
  return ok;
}

/* ----------------------------------------------------------------- scan */

/* Residuals of a scan body that need no per-step stacking (JAX's
 * _scan_partial_eval): a residual computed from the known consts alone is
 * loop-invariant, so its equations are copied before the loop (into the
 * known program, consts renamed to the scan's operands) and it becomes a
 * const of the unknown scan; a residual that is a known xs row is read from
 * xs itself. outer[r] gets the outer var of residual r (the const, the
 * hoisted copy, or xs) or stays NULL (stacked); is_xs[r] says it is xs. */
static bool scan_unstacked_res(pe *p, const ft_eqn *e, const bool *uin, const ft_jaxpr *K, int R,
                               ft_var **outer, bool *is_xs) {
  int ncon = (int)pget_int(FT_P_SCAN, e->params, "num_consts", 0);
  int ncar = (int)pget_int(FT_P_SCAN, e->params, "num_carry", 0);
  int n = e->n_in, nk_out = K->n_out - R;
  vmap outer_of = {0};  /* K var -> outer var (consts, then hoisted copies) */
  vflags variant = {0}, want = {0}; /* K var depends on a carry or an xs row; is to be hoisted */
  bool ok = vmap_init(&outer_of, ft_arena_num_var_ids(p->a)) && vflags_init(&variant, ft_arena_num_var_ids(p->a));
  bool *need = calloc((size_t)K->n_eqn + 1, 1);
  ok = ok && need;
  for (int i = 0, ki = 0; ok && i < n; i++) {
    if (uin[i]) continue;
    ft_var *kv = K->invars[ki++];
    if (i < ncon) ok = vmap_set(&outer_of, kv, e->in[i]);
    else ok = vflags_set(&variant, kv, 1);
  }
  for (int q = 0; ok && q < K->n_eqn; q++) { /* which values vary from step to step */
    const ft_eqn *x = &K->eqns[q];
    bool v = false;
    for (int k = 0; k < x->n_in && !v; k++) v = x->in[k]->kind == FT_VAR && vflags_get(&variant, x->in[k]);
    for (int k = 0; ok && k < x->n_out; k++)
      if (x->out[k]->kind == FT_VAR) ok = vflags_set(&variant, x->out[k], v);
  }
  ok = ok && vflags_init(&want, ft_arena_num_var_ids(p->a));
  for (int r = 0; ok && r < R; r++) {
    ft_var *rv = K->outvars[nk_out + r];
    outer[r] = NULL, is_xs[r] = false;
    if (rv->kind != FT_VAR) continue;
    for (int i = 0, ki = 0; i < n && !outer[r]; i++) { /* a known xs row */
      if (uin[i]) continue;
      if (i >= ncon + ncar && K->invars[ki] == rv) outer[r] = e->in[i], is_xs[r] = true;
      ki++;
    }
    if (!outer[r] && !vflags_get(&variant, rv)) ok = vflags_set(&want, rv, 1);
  }
  for (int q = K->n_eqn - 1; ok && q >= 0; q--) { /* the invariant equations they need */
    const ft_eqn *x = &K->eqns[q];
    for (int k = 0; k < x->n_out && !need[q]; k++)
      need[q] = x->out[k]->kind == FT_VAR && vflags_get(&want, x->out[k]);
    for (int k = 0; ok && need[q] && k < x->n_in; k++)
      if (x->in[k]->kind == FT_VAR && !vmap_get(&outer_of, x->in[k])) ok = vflags_set(&want, x->in[k], 1);
  }
  ft_var *ins[64], *outs[64];
  for (int q = 0; ok && q < K->n_eqn; q++) { /* copied in order, with fresh outputs */
    const ft_eqn *x = &K->eqns[q];
    if (!need[q]) continue;
    ft_var **in = x->n_in <= 64 ? ins : malloc(sizeof(ft_var *) * (size_t)x->n_in);
    ft_var **out = x->n_out <= 64 ? outs : malloc(sizeof(ft_var *) * (size_t)x->n_out);
    ok = in && out;
    for (int k = 0; ok && k < x->n_in; k++) {
      in[k] = x->in[k]->kind == FT_VAR ? vmap_get(&outer_of, x->in[k]) : x->in[k];
      if (!in[k]) ok = (tx_fail(&p->K, FT_ERR_INTERNAL, "partial eval of scan: a hoisted residual "
                                "reads a value computed in the loop"), false);
    }
    for (int k = 0; ok && k < x->n_out; k++) {
      out[k] = x->out[k];
      if (x->out[k]->kind == FT_VAR) ok = (out[k] = fresh(p, &x->out[k]->aval)) && vmap_set(&outer_of, x->out[k], out[k]);
    }
    ok = ok && tx_push(&p->K, x->prim, x->params, x->n_in, in, x->n_out, out);
    if (in != ins) free(in);
    if (out != outs) free(out);
  }
  for (int r = 0; ok && r < R; r++) {
    ft_var *rv = K->outvars[nk_out + r];
    if (!outer[r] && rv->kind == FT_VAR && !vflags_get(&variant, rv)) outer[r] = vmap_get(&outer_of, rv);
  }
  if (!ok && !p->K.failed) tx_nomem(&p->K);
  vmap_free(&outer_of), vflags_free(&variant), vflags_free(&want);
  free(need);
  return ok;
}

static bool pe_scan(pe *p, const ft_eqn *e, const bool *uin_) {
  int ncon = (int)pget_int(FT_P_SCAN, e->params, "num_consts", 0);
  int ncar = (int)pget_int(FT_P_SCAN, e->params, "num_carry", 0);
  int64_t len = pget_int(FT_P_SCAN, e->params, "length", 0);
  ft_jaxpr *body = pget_jaxpr(FT_P_SCAN, e->params, "jaxpr");
  int n = e->n_in, nx = n - ncon - ncar, ny = body->n_out - ncar;
  bool *uin = malloc((size_t)n + 1), *inst = calloc((size_t)body->n_out + 1, 1);
  if (!uin || !inst) {
    free(uin), free(inst);
    return tx_nomem(&p->K), false;
  }
  memcpy(uin, uin_, (size_t)n);
  pe_out po;
  bool ok = true;
  for (bool changed = true; ok && changed;) {
    changed = false;
    for (int k = 0; k < ncar; k++) inst[k] = uin[ncon + k];
    ok = pe_jaxpr(p->ctx, p->a, body, uin, inst, &po);
    for (int k = 0; ok && k < ncar; k++)
      if (po.out_unknown[k] && !uin[ncon + k]) uin[ncon + k] = changed = true;
  }
  if (!ok) {
    free(uin), free(inst);
    return false;
  }
  const ft_jaxpr *K = po.known, *U = po.unknown;
  int R = po.n_res, nk_out = K->n_out - R;
  /* Residuals that need no stacking: loop-invariant ones (consts of the
   * unknown scan) and known xs rows (read from xs). */
  ft_var **outer = malloc(sizeof(ft_var *) * (size_t)(R + 1));
  bool *is_xs = malloc((size_t)R + 1);
  int nkc = 0, nkcar = 0, nkx = 0, nuc = 0, nucar = 0, nux = 0;
  for (int i = 0; i < ncon; i++) uin[i] ? nuc++ : nkc++;
  for (int i = 0; i < ncar; i++) uin[ncon + i] ? nucar++ : nkcar++;
  for (int i = 0; i < nx; i++) uin[ncon + ncar + i] ? nux++ : nkx++;
  (void)nkx;
  if (!outer || !is_xs) ok = (tx_nomem(&p->K), false);
  ok = ok && scan_unstacked_res(p, e, uin, K, R, outer, is_xs);
  int ninv = 0;
  for (int r = 0; ok && r < R; r++) ninv += outer[r] && !is_xs[r];
  size_t cap = (size_t)(4 * (n + body->n_out + R) + 8);
  ft_var **vb = malloc(sizeof(ft_var *) * cap);
  ft_var **stk = malloc(sizeof(ft_var *) * (size_t)(R + 1));
  if (ok && (!vb || !stk)) ok = (tx_nomem(&p->K), false);
  ft_jaxpr *kj = NULL, *uj = NULL;
  if (ok) { /* known body: drop the residual outputs that are not stacked */
    int m = 0;
    for (int k = 0; k < nk_out; k++) vb[m++] = K->outvars[k];
    for (int r = 0; r < R; r++)
      if (!outer[r]) vb[m++] = K->outvars[nk_out + r];
    kj = reframe(p, K, K->n_in, K->invars, m, vb);
    /* unknown body: [inv res, u consts, u carry, stacked res and xs res, u xs] */
    m = 0;
    for (int r = 0; r < R; r++)
      if (outer[r] && !is_xs[r]) vb[m++] = U->invars[r];
    for (int i = 0; i < nuc + nucar; i++) vb[m++] = U->invars[R + i];
    for (int r = 0; r < R; r++)
      if (!outer[r] || is_xs[r]) vb[m++] = U->invars[r];
    for (int i = 0; i < nux; i++) vb[m++] = U->invars[R + nuc + nucar + i];
    uj = kj ? reframe(p, U, m, vb, U->n_out, U->outvars) : NULL;
    ok = kj && uj;
  }
  if (ok) { /* the known scan */
    int m = 0, o = 0;
    ft_var **kin = vb, **kout = vb + n;
    for (int i = 0; i < n; i++)
      if (!uin[i]) kin[m++] = e->in[i];
    for (int k = 0; k < ncar; k++)
      if (!uin[ncon + k]) kout[o++] = e->out[k];
    for (int k = 0; k < ny; k++)
      if (!po.out_unknown[ncar + k]) kout[o++] = e->out[ncar + k];
    for (int r = 0; ok && r < R; r++) {
      stk[r] = is_xs[r] ? outer[r] : NULL;
      if (outer[r]) continue;
      ft_aval av = K->outvars[nk_out + r]->aval;
      memmove(av.dims + 1, av.dims, sizeof(int64_t) * (size_t)av.rank);
      av.dims[0] = len;
      av.rank++;
      if (!(kout[o++] = stk[r] = fresh(p, &av))) ok = false;
    }
    ft_pval *kp = params_copy(p->a, FT_P_SCAN, e->params);
    if (!kp) ok = (tx_nomem(&p->K), false);
    if (ok) {
      pset(FT_P_SCAN, kp, "jaxpr", ft_pv_jaxpr(kj));
      scan_set_counts(kp, nkc, nkcar);
      ok = tx_push(&p->K, FT_P_SCAN, kp, m, kin, o, kout);
    }
  }
  if (ok) { /* the unknown scan */
    int m = 0, o = 0;
    ft_var **uinv = vb, **uout = vb + n + R;
    for (int r = 0; r < R; r++)
      if (outer[r] && !is_xs[r]) uinv[m++] = outer[r];
    for (int i = 0; i < ncon + ncar; i++)
      if (uin[i]) uinv[m++] = e->in[i];
    for (int r = 0; r < R; r++)
      if (!outer[r] || is_xs[r]) uinv[m++] = stk[r];
    for (int i = 0; i < nx; i++)
      if (uin[ncon + ncar + i]) uinv[m++] = e->in[ncon + ncar + i];
    for (int k = 0; k < ncar; k++)
      if (uin[ncon + k]) uout[o++] = e->out[k];
    for (int k = 0; k < ny; k++)
      if (po.out_unknown[ncar + k]) uout[o++] = e->out[ncar + k];
    ft_pval *up = params_copy(p->a, FT_P_SCAN, e->params);
    if (!up) ok = (tx_nomem(&p->K), false);
    if (ok) {
      pset(FT_P_SCAN, up, "jaxpr", ft_pv_jaxpr(uj));
      scan_set_counts(up, ninv + nuc, nucar);
      ok = tx_push(&p->U, FT_P_SCAN, up, m, uinv, o, uout);
    }
    for (int i = 0; ok && i < m; i++) ok = add_res(p, uinv[i]);
    for (int k = 0; ok && k < ncar; k++) ok = set_unk(p, e->out[k], uin[ncon + k]);
    for (int k = 0; ok && k < ny; k++) ok = set_unk(p, e->out[ncar + k], po.out_unknown[ncar + k]);
  }
  free(uin), free(inst), free(outer), free(is_xs), free(vb), free(stk);
  return ok;
}

/* ---------------------------------------------------------------- while */

/* Which inputs of j its outputs read (one backward sweep). */
static bool used_inputs(const ft_jaxpr *j, bool *used) {
  vflags f;
  if (!vflags_init(&f, ft_arena_num_var_ids(j->arena) + 1)) return false;
  for (int k = 0; k < j->n_out; k++)
    if (j->outvars[k]->kind == FT_VAR) vflags_set(&f, j->outvars[k], 1);
  for (int q = j->n_eqn - 1; q >= 0; q--) {
    const ft_eqn *e = &j->eqns[q];
    bool live = false;
    for (int o = 0; o < e->n_out; o++) live = live || vflags_get(&f, e->out[o]);
    for (int i = 0; live && i < e->n_in; i++)
      if (e->in[i]->kind == FT_VAR) vflags_set(&f, e->in[i], 1);
  }
  for (int i = 0; i < j->n_in; i++) used[i] = vflags_get(&f, j->invars[i]);
  bool ok = !f.failed;
  vflags_free(&f);
  return ok;
}

static bool pe_while(pe *p, const ft_eqn *e, const bool *uin) {
  int cn = (int)pget_int(FT_P_WHILE, e->params, "cond_nconsts", 0);
  int bn = (int)pget_int(FT_P_WHILE, e->params, "body_nconsts", 0);
  ft_jaxpr *body = pget_jaxpr(FT_P_WHILE, e->params, "body_jaxpr");
  ft_jaxpr *cj = pget_jaxpr(FT_P_WHILE, e->params, "cond_jaxpr");
  int nc = e->n_in - cn - bn;
  for (int i = 0; i < cn; i++)
    if (uin[i]) return all_unknown(p, e);
  bool *bu = malloc((size_t)(bn + nc + 1)), *cu = calloc((size_t)(cn + nc + 1), 1);
  if (!bu || !cu) {
    free(bu), free(cu);
    return tx_nomem(&p->K), false;
  }
  memcpy(bu, uin + cn, (size_t)(bn + nc));
  pe_out po;
  bool ok = true;
  for (bool changed = true; ok && changed;) {
    changed = false;
    ok = pe_jaxpr(p->ctx, p->a, body, bu, bu + bn, &po);
    for (int k = 0; ok && k < nc; k++)
      if (po.out_unknown[k] && !bu[bn + k]) bu[bn + k] = changed = true;
  }
  int nkc = 0;
  for (int k = 0; k < nc; k++) nkc += !bu[bn + k];
  bool cond_ok = ok && used_inputs(cj, cu);
  for (int k = 0; cond_ok && k < nc; k++)
    if (bu[bn + k] && cu[cn + k]) cond_ok = false;
  if (!ok || !cond_ok || nkc == 0) {
    free(bu), free(cu);
    return ok ? all_unknown(p, e) : false;
  }
  ft_var **vb = malloc(sizeof(ft_var *) * (size_t)(2 * e->n_in + 2 * nc + 4));
  if (!vb) ok = (tx_nomem(&p->K), false);
  if (ok) {
    /* known loop: body over known consts/carries, cond over known carries */
    ft_jaxpr *kb = reframe(p, po.known, po.known->n_in, po.known->invars, nkc, po.known->outvars);
    int m = 0;
    for (int i = 0; i < cn; i++) vb[m++] = cj->invars[i];
    for (int k = 0; k < nc; k++)
      if (!bu[bn + k]) vb[m++] = cj->invars[cn + k];
    ft_jaxpr *kc = kb ? reframe(p, cj, m, vb, cj->n_out, cj->outvars) : NULL;
    ft_var **kin = vb, **kout = vb + e->n_in;
    int a = 0, o = 0, nkb = 0;
    for (int i = 0; i < cn; i++) kin[a++] = e->in[i];
    for (int i = 0; i < bn; i++)
      if (!bu[i]) kin[a++] = e->in[cn + i], nkb++;
    for (int k = 0; k < nc; k++)
      if (!bu[bn + k]) kin[a++] = e->in[cn + bn + k], kout[o++] = e->out[k];
    ft_pval *kp = kc ? params_copy(p->a, FT_P_WHILE, e->params) : NULL;
    if (!kp) ok = (tx_nomem(&p->K), false);
    if (ok) {
      pset(FT_P_WHILE, kp, "body_jaxpr", ft_pv_jaxpr(kb));
      pset(FT_P_WHILE, kp, "cond_jaxpr", ft_pv_jaxpr(kc));
      pset(FT_P_WHILE, kp, "body_nconsts", ft_pv_int(nkb));
      ok = tx_push(&p->K, FT_P_WHILE, kp, a, kin, o, kout);
    }
  }
  if (ok) {
    /* unknown side: the whole loop again; its known outputs are discarded */
    ft_var **uout = vb;
    for (int k = 0; ok && k < nc; k++)
      uout[k] = bu[bn + k] ? e->out[k] : fresh(p, &e->out[k]->aval), ok = ok && uout[k];
    for (int i = 0; ok && i < e->n_in; i++) ok = add_res(p, e->in[i]);
    ok = ok && tx_push(&p->U, FT_P_WHILE, e->params, e->n_in, e->in, nc, uout);
    for (int k = 0; ok && k < nc; k++) ok = set_unk(p, e->out[k], bu[bn + k]);
    for (int k = 0; ok && k < nc; k++)
      if (!bu[bn + k]) ok = set_unk(p, uout[k], true);
  }
  free(bu), free(cu), free(vb);
  return ok;
}

/* --------------------------------------------------------------- remat2 */

typedef enum { POL_NOTHING, POL_EVERYTHING, POL_DOTS, POL_DOTS_NO_BATCH } remat_policy;

/* The policies understood, by the function name JAX prints
 * (`<function dots_saveable at 0x...>`); None saves nothing. */
static bool remat_policy_of(pe *p, const ft_eqn *e, remat_policy *pol) {
  const ft_pval *v = pget(FT_P_REMAT2, e->params, "policy");
  *pol = POL_NOTHING;
  if (!v || v->tag == FT_PV_NONE) return true;
  const char *s = (v->tag == FT_PV_STR || v->tag == FT_PV_OPAQUE) && v->s ? v->s : "";
  const char *q = !strncmp(s, "<function ", 10) ? s + 10 : s;
  const char *at = q != s ? strstr(q, " at ") : NULL;
  size_t n = at ? (size_t)(at - q) : strcspn(q, q != s ? ">" : " ");
  static const struct { const char *name; remat_policy pol; } known[] = {
      {"nothing_saveable", POL_NOTHING}, {"everything_saveable", POL_EVERYTHING},
      {"dots_saveable", POL_DOTS}, {"checkpoint_dots", POL_DOTS},
      {"dots_with_no_batch_dims_saveable", POL_DOTS_NO_BATCH},
      {"checkpoint_dots_with_no_batch_dims", POL_DOTS_NO_BATCH}};
  for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
    if (strlen(known[k].name) == n && !strncmp(q, known[k].name, n)) return *pol = known[k].pol, true;
  tx_fail(&p->K, FT_ERR_UNSUPPORTED, "reverse mode through remat2 (jax.checkpoint): the policy '%.*s' "
          "is not supported (supported: None, everything_saveable, nothing_saveable, dots_saveable, "
          "dots_with_no_batch_dims_saveable)", (int)n, q);
  return false;
}

/* Whether the policy saves the value defined by equation d. */
static bool remat_saveable(remat_policy pol, const ft_eqn *d) {
  if (pol == POL_EVERYTHING) return true;
  if (pol == POL_NOTHING || !d || d->prim != FT_P_DOT_GENERAL) return false;
  if (pol == POL_DOTS) return true;
  const ft_pval *dn = pget(FT_P_DOT_GENERAL, d->params, "dimension_numbers");
  /* ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch)) */
  if (!dn || dn->tag != FT_PV_TUPLE || dn->n != 2) return false;
  const ft_pval *b = &dn->u.items[1];
  return b->tag == FT_PV_TUPLE && b->n == 2 && b->u.items[0].n == 0;
}

/* jax.checkpoint in reverse mode (JAX's remat_partial_eval): the body is
 * split; the known side is a remat2 computing the known outputs and the
 * residuals the policy saves; the unknown side is a remat2
 * (differentiated=True) that recomputes every other residual from the
 * known operands, then applies the linear part. Transposed, that
 * recomputation runs in the backward pass. Residuals that are operands of
 * the body are passed as they are. */
static bool pe_remat(pe *p, const ft_eqn *e, const bool *uin) {
  remat_policy pol;
  if (!remat_policy_of(p, e, &pol)) return false;
  ft_jaxpr *inner = pget_jaxpr(FT_P_REMAT2, e->params, "jaxpr");
  pe_out po;
  if (!pe_jaxpr(p->ctx, p->a, inner, uin, NULL, &po)) return p->K.failed = true, false;
  const ft_jaxpr *K = po.known, *U = po.unknown;
  int R = po.n_res, nk_out = K->n_out - R, n = e->n_in;
  uint32_t nid = ft_arena_num_var_ids(p->a) + 1;
  vflags saved, need, kin;
  bool ok = vflags_init(&saved, nid) && vflags_init(&need, nid) && vflags_init(&kin, nid);
  int nko = 0; /* values K's equations define */
  for (int q = 0; q < K->n_eqn; q++) nko += K->eqns[q].n_out;
  size_t half = (size_t)(n + R + nko + K->n_out + U->n_out + 4);
  ft_var **vb = malloc(sizeof(ft_var *) * 2 * half), **sv = malloc(sizeof(ft_var *) * (size_t)(nko + 1));
  const ft_eqn **def = calloc((size_t)nid, sizeof *def);
  if (!ok || !vb || !sv || !def) ok = (tx_nomem(&p->K), false);
  for (int i = 0; ok && i < K->n_in; i++) vflags_set(&kin, K->invars[i], 1);
  for (int q = 0; ok && q < K->n_eqn; q++)
    for (int o = 0; o < K->eqns[q].n_out; o++) def[K->eqns[q].out[o]->id] = &K->eqns[q];
  /* Residuals that are not body operands are needed; walking back, a
   * needed value is saved when the policy names its equation (JAX applies
   * the policy to every known value, not only to residuals), else its
   * equation is recomputed and its operands become needed. An equation
   * that defines a saved value is never recomputed (it would define the
   * value twice), so its other needed values are saved too. */
  for (int r = 0; ok && r < R; r++) {
    ft_var *v = K->outvars[nk_out + r];
    if (v->kind == FT_VAR && !vflags_get(&kin, v)) vflags_set(&need, v, 1);
  }
  bool *keep = ok ? calloc((size_t)K->n_eqn + 1, 1) : NULL;
  if (ok && !keep) ok = (tx_nomem(&p->K), false);
  for (int q = K->n_eqn - 1; ok && q >= 0; q--) {
    const ft_eqn *d = &K->eqns[q];
    bool live = false, has_saved = remat_saveable(pol, d);
    for (int o = 0; o < d->n_out; o++) {
      live = live || vflags_get(&need, d->out[o]);
      has_saved = has_saved || vflags_get(&saved, d->out[o]);
    }
    if (!live) continue;
    if (has_saved) {
      for (int o = 0; o < d->n_out; o++)
        if (vflags_get(&need, d->out[o])) vflags_set(&saved, d->out[o], 1);
      continue;
    }
    keep[q] = true;
    for (int i = 0; i < d->n_in; i++)
      if (d->in[i]->kind == FT_VAR && !vflags_get(&kin, d->in[i])) vflags_set(&need, d->in[i], 1);
  }
  int ns = 0;
  ft_var **kouts = vb + half;
  for (int q = 0; ok && q < K->n_eqn; q++) /* saved values, in definition order */
    for (int o = 0; o < K->eqns[q].n_out; o++)
      if (vflags_get(&saved, K->eqns[q].out[o])) sv[ns++] = K->eqns[q].out[o];
  ft_jaxpr *kj = NULL, *uj = NULL;
  if (ok) { /* known body: [known ops] -> [known outs, saved] */
    int m = 0;
    for (int k = 0; k < nk_out; k++) kouts[m++] = K->outvars[k];
    for (int i = 0; i < ns; i++) kouts[m++] = sv[i];
    kj = reframe(p, K, K->n_in, K->invars, m, kouts);
    ok = kj != NULL;
  }
  if (ok) { /* unknown body: [saved, known ops, residual-less unknown ops] -> unknown outs */
    uj = ft_jaxpr_new(p->a);
    tx ut;
    if (!uj) ok = (tx_nomem(&p->K), false);
    else {
      tx_init(&ut, p->ctx, uj, "linearize");
      for (int q = 0; q < K->n_eqn; q++)
        if (keep[q]) tx_push_shared(&ut, &K->eqns[q]);
      for (int q = 0; q < U->n_eqn; q++) tx_push_shared(&ut, &U->eqns[q]);
      int m = 0;
      ft_var **ui = kouts;
      for (int i = 0; i < ns; i++) ui[m++] = sv[i];
      for (int i = 0; i < K->n_in; i++) ui[m++] = K->invars[i];
      for (int i = R; i < U->n_in; i++) ui[m++] = U->invars[i];
      ok = !ut.failed && ft_jaxpr_set_vars(uj, 0, NULL, m, ui, U->n_out, U->outvars);
      if (!ok && !ut.failed) tx_nomem(&p->K);
      if (ut.failed) p->K.failed = true;
    }
    /* uj binds K's operands and recomputes K's equations with K's own
     * variables; a copy with fresh ones, so that a remat2 nested in this
     * body (split in turn, its known side kept for the recomputation here
     * and its unknown side beside it) never binds a variable twice */
    if (ok && !(uj = jaxpr_clone(p->a, uj))) ok = (tx_nomem(&p->K), false);
  }
  if (ok) { /* the known equation */
    ft_var **kin_v = vb, **kout = vb + half;
    int a = 0, o = 0;
    for (int i = 0; i < n; i++)
      if (!uin[i]) kin_v[a++] = e->in[i];
    for (int k = 0; k < e->n_out; k++)
      if (!po.out_unknown[k]) kout[o++] = e->out[k];
    for (int i = 0; ok && i < ns; i++)
      if (!(kout[o++] = sv[i] = fresh(p, &sv[i]->aval))) ok = false;
    ft_pval *kp = ok ? params_copy(p->a, FT_P_REMAT2, e->params) : NULL;
    if (ok && !kp) ok = (tx_nomem(&p->K), false);
    if (ok) {
      pset(FT_P_REMAT2, kp, "jaxpr", ft_pv_jaxpr(kj));
      ok = tx_push(&p->K, FT_P_REMAT2, kp, a, kin_v, o, kout);
    }
  }
  if (ok) { /* the unknown equation: [saved, known operands, unknown operands] */
    ft_var **uinv = vb, **uout = vb + half;
    int m = 0, d = 0;
    for (int i = 0; i < ns; i++) uinv[m++] = sv[i];
    for (int i = 0; i < n; i++)
      if (!uin[i]) uinv[m++] = e->in[i];
    for (int i = 0; i < n; i++)
      if (uin[i]) uinv[m++] = e->in[i];
    for (int k = 0; k < e->n_out; k++)
      if (po.out_unknown[k]) uout[d++] = e->out[k];
    ft_pval *up = params_copy(p->a, FT_P_REMAT2, e->params);
    if (!up) ok = (tx_nomem(&p->K), false);
    if (ok) {
      pset(FT_P_REMAT2, up, "jaxpr", ft_pv_jaxpr(uj));
      pset(FT_P_REMAT2, up, "differentiated", ft_pv_bool(true));
      ok = tx_push(&p->U, FT_P_REMAT2, up, m, uinv, d, uout);
    }
    for (int i = 0; ok && i < m; i++) ok = add_res(p, uinv[i]);
    for (int k = 0; ok && k < e->n_out; k++) ok = set_unk(p, e->out[k], po.out_unknown[k]);
  }
  vflags_free(&saved), vflags_free(&need), vflags_free(&kin);
  free(vb), free(sv), free(def), free(keep);
  return ok;
}

/* ------------------------------------------------ shard_map (issue 27) */

/* The spec of a residual: its dimension 0 split over every mesh axis, so
 * each index keeps its own value (JAX gives residuals the same spec). */
static ft_pval residual_spec(pe *p, const ft_spmd_axis *mesh, int nm) {
  char buf[FT_SPMD_MAX_AXES * 70 + 16];
  size_t k = (size_t)snprintf(buf, sizeof buf, "P(%s", nm > 1 ? "(" : "");
  for (int i = 0; i < nm; i++)
    k += (size_t)snprintf(buf + k, sizeof buf - k, "%s'%s'", i ? ", " : "", mesh[i].name);
  snprintf(buf + k, sizeof buf - k, "%s,)", nm > 1 ? ")" : "");
  ft_pval v = {.tag = FT_PV_OPAQUE, .s = ft_arena_strndup(p->a, buf, strlen(buf))};
  if (!v.s) tx_nomem(&p->K);
  return v;
}

/* Specs: the items of specs with keep[i] == want, then extra (n_extra copies
 * of one spec) placed before (extra_first) or after them. */
static ft_pval specs_pick(pe *p, const ft_pval *specs, const bool *flag, bool want, int n_extra,
                          ft_pval extra, bool extra_first) {
  int m = n_extra;
  for (int i = 0; i < specs->n; i++) m += flag[i] == want;
  ft_pval r = ft_pv_tuple(p->a, m);
  if (m && !r.u.items) return tx_nomem(&p->K), ft_pv_none();
  int q = 0;
  if (extra_first)
    for (int i = 0; i < n_extra; i++) r.u.items[q++] = extra;
  for (int i = 0; i < specs->n; i++)
    if (flag[i] == want) r.u.items[q++] = specs->u.items[i];
  if (!extra_first)
    for (int i = 0; i < n_extra; i++) r.u.items[q++] = extra;
  return r;
}

/* shard_map in reverse mode (JAX's _shard_map_partial_eval): the body is
 * split per index; the known shard_map computes the known outputs and the
 * residuals, each index's own, which leave it split over every mesh axis
 * on dimension 0 (a scalar residual is reshaped to [1] first) and enter
 * the unknown shard_map the same way. */
static bool pe_shard_map(pe *p, const ft_eqn *e, const bool *uin) {
  const ft_prim pr = FT_P_SHARD_MAP;
  ft_spmd_axis mesh[FT_SPMD_MAX_AXES];
  int nm = ft_spmd_mesh(pget(pr, e->params, "mesh"), mesh, FT_SPMD_MAX_AXES);
  if (nm < 1) return tx_fail(&p->K, FT_ERR_INVALID_ARG, "partial eval of shard_map: unreadable mesh"), false;
  int64_t nidx = 1;
  for (int i = 0; i < nm; i++) nidx *= mesh[i].size;
  ft_jaxpr *inner = pget_jaxpr(pr, e->params, "jaxpr");
  pe_out po;
  if (!pe_jaxpr(p->ctx, p->a, inner, uin, NULL, &po)) return p->K.failed = true, false;
  const ft_jaxpr *K = po.known, *U = po.unknown;
  int R = po.n_res, nk_out = K->n_out - R, n = e->n_in;
  size_t half = (size_t)(n + e->n_out + R + 4);
  ft_var **vb = malloc(sizeof(ft_var *) * 4 * half);
  if (!vb) return tx_nomem(&p->K), false;
  ft_pval rspec = residual_spec(p, mesh, nm);
  bool ok = !p->K.failed;
  ft_jaxpr *kj = ok ? ft_jaxpr_new(p->a) : NULL, *uj = ok ? ft_jaxpr_new(p->a) : NULL;
  if (ok && (!kj || !uj)) ok = (tx_nomem(&p->K), false);
  if (ok) { /* known body: [known ops] -> [known outs, residuals as [1, ...] when scalar] */
    tx t;
    tx_init(&t, p->ctx, kj, "linearize");
    for (int q = 0; q < K->n_eqn; q++) tx_push_shared(&t, &K->eqns[q]);
    ft_var **ko = vb;
    int m = 0;
    for (int k = 0; k < nk_out; k++) ko[m++] = K->outvars[k];
    for (int r = 0; r < R; r++) {
      ft_var *v = K->outvars[nk_out + r];
      ko[m++] = v->aval.rank ? v : tx_reshape(&t, v, 1, (int64_t[]){1});
    }
    ok = !t.failed && ft_jaxpr_set_vars(kj, K->n_const, K->constvars, K->n_in, K->invars, m, ko);
    kj->const_data = K->const_data;
    if (!ok && !t.failed) tx_nomem(&p->K);
    if (t.failed) p->K.failed = true;
  }
  if (ok) { /* unknown body: [residuals, unknown ops] -> [unknown outs] */
    tx t;
    tx_init(&t, p->ctx, uj, "linearize");
    ft_var **ui = vb;
    for (int r = 0; ok && r < R; r++) {
      ft_var *v = U->invars[r];
      if (v->aval.rank) {
        ui[r] = v;
        continue;
      }
      ft_aval one = v->aval;
      one.rank = 1, one.dims[0] = 1;
      ui[r] = fresh(p, &one);
      if (ui[r] && !var_copy_vma(p->a, ui[r], v)) ok = (tx_nomem(&p->K), false);
      ft_pval *rp = ui[r] ? tx_params(&t, FT_P_RESHAPE) : NULL;
      if (rp) pset(FT_P_RESHAPE, rp, "new_sizes", ft_pv_ints(p->a, 0, NULL));
      ok = rp && tx_push(&t, FT_P_RESHAPE, rp, 1, &ui[r], 1, &v);
    }
    for (int i = R; i < U->n_in; i++) ui[i] = U->invars[i];
    for (int q = 0; ok && q < U->n_eqn; q++) tx_push_shared(&t, &U->eqns[q]);
    ok = ok && !t.failed && ft_jaxpr_set_vars(uj, 0, NULL, U->n_in, ui, U->n_out, U->outvars);
    if (!ok && !t.failed && !p->K.failed) tx_nomem(&p->K);
    if (t.failed) p->K.failed = true, ok = false;
  }
  ft_var **res = vb + half;
  for (int r = 0; ok && r < R; r++) { /* the residuals' global values */
    ft_aval g = K->outvars[nk_out + r]->aval;
    if (!g.rank) g.rank = 1, g.dims[0] = 1;
    g.dims[0] *= nidx;
    ok = (res[r] = fresh(p, &g)) != NULL;
  }
  if (ok) {
    const ft_pval *is = pget(pr, e->params, "in_specs"), *os = pget(pr, e->params, "out_specs");
    ft_var **kin = vb, **kout = vb + 2 * half, **uinv = vb, **uout = vb + 3 * half;
    int a = 0, b = 0;
    for (int i = 0; i < n; i++)
      if (!uin[i]) kin[a++] = e->in[i];
    for (int k = 0; k < e->n_out; k++)
      if (!po.out_unknown[k]) kout[b++] = e->out[k];
    for (int r = 0; r < R; r++) kout[b++] = res[r];
    ft_pval *kp = params_copy(p->a, pr, e->params), *up = params_copy(p->a, pr, e->params);
    bool *known = malloc((size_t)(n + e->n_out) + 1);
    if (!kp || !up || !known) ok = (tx_nomem(&p->K), false);
    if (ok) {
      for (int i = 0; i < n; i++) known[i] = uin[i];
      pset(pr, kp, "jaxpr", ft_pv_jaxpr(kj));
      pset(pr, kp, "in_specs", specs_pick(p, is, known, false, 0, rspec, false));
      for (int k = 0; k < e->n_out; k++) known[k] = po.out_unknown[k];
      pset(pr, kp, "out_specs", specs_pick(p, os, known, false, R, rspec, false));
      ok = !p->K.failed && tx_push(&p->K, pr, kp, a, kin, b, kout);
    }
    int c = 0, d = 0;
    for (int r = 0; r < R; r++) uinv[c++] = res[r];
    for (int i = 0; i < n; i++)
      if (uin[i]) uinv[c++] = e->in[i];
    for (int k = 0; k < e->n_out; k++)
      if (po.out_unknown[k]) uout[d++] = e->out[k];
    if (ok) {
      for (int i = 0; i < n; i++) known[i] = uin[i];
      pset(pr, up, "jaxpr", ft_pv_jaxpr(uj));
      pset(pr, up, "in_specs", specs_pick(p, is, known, true, R, rspec, true));
      for (int k = 0; k < e->n_out; k++) known[k] = po.out_unknown[k];
      pset(pr, up, "out_specs", specs_pick(p, os, known, true, 0, rspec, false));
      ok = !p->K.failed && tx_push(&p->U, pr, up, c, uinv, d, uout);
    }
    free(known);
    for (int i = 0; ok && i < c; i++) ok = add_res(p, uinv[i]);
    for (int k = 0; ok && k < e->n_out; k++) ok = set_unk(p, e->out[k], po.out_unknown[k]);
  }
  free(vb);
  return ok;
}

/* --------------------------------------------------------------- driver */

static bool pe_eqn(pe *p, const ft_eqn *e) {
  bool any = false;
  for (int i = 0; i < e->n_in; i++) any = any || is_unk(p, e->in[i]);
  if (!any) return tx_push_shared(&p->K, e);
  if (ft_prim_get(e->prim)->family != FT_FAM_CONTROL && e->prim != FT_P_SHARD_MAP) return all_unknown(p, e);
  bool *uin = malloc((size_t)e->n_in + 1);
  if (!uin) return tx_nomem(&p->K), false;
  for (int i = 0; i < e->n_in; i++) uin[i] = is_unk(p, e->in[i]);
  bool ok;
  switch (e->prim) {
  case FT_P_JIT: case FT_P_CUSTOM_JVP_CALL: case FT_P_CUSTOM_VJP_CALL: case FT_P_EVAL_JAXPR:
    ok = pe_jit(p, e, uin);
    break;
  case FT_P_COND: ok = pe_cond(p, e, uin); break;
  case FT_P_SCAN: ok = pe_scan(p, e, uin); break;
  case FT_P_WHILE: ok = pe_while(p, e, uin); break;
  case FT_P_REMAT2: ok = pe_remat(p, e, uin); break;
  case FT_P_SHARD_MAP: { /* the body's shape rules see its mesh (all_to_all) */
    ft_spmd_env saved;
    ft_spmd_env_enter(pget(e->prim, e->params, "mesh"), &saved);
    ok = pe_shard_map(p, e, uin);
    ft_spmd_env_leave(&saved);
    break;
  }
  default: ok = all_unknown(p, e);
  }
  free(uin);
  return ok;
}

bool pe_jaxpr(ft_ctx *ctx, ft_arena *a, const ft_jaxpr *j, const bool *in_unknown,
              const bool *instantiate, pe_out *out) {
  memset(out, 0, sizeof *out);
  pe p = {.ctx = ctx, .a = a};
  ft_jaxpr *K = ft_jaxpr_new(a), *U = ft_jaxpr_new(a);
  uint32_t nid = ft_arena_num_var_ids(a) + 1;
  if (!K || !U || !vflags_init(&p.unk, nid) || !vflags_init(&p.res, nid)) {
    vflags_free(&p.unk);
    vflags_free(&p.res);
    ft_set_error(ctx, FT_ERR_NOMEM, "linearize: out of memory");
    return false;
  }
  tx_init(&p.K, ctx, K, "linearize");
  tx_init(&p.U, ctx, U, "linearize");
  bool ok = true;
  for (int i = 0; i < j->n_const; i++) ok = ok && set_unk(&p, j->constvars[i], false);
  for (int i = 0; i < j->n_in; i++) ok = ok && set_unk(&p, j->invars[i], in_unknown[i]);
  for (int k = 0; ok && k < j->n_eqn; k++) {
    const ft_eqn *e = &j->eqns[k];
    for (int o = 0; o < e->n_out; o++) set_unk(&p, e->out[o], false);
    ok = pe_eqn(&p, e) && !p.K.failed && !p.U.failed;
  }
  bool *ou = ft_arena_alloc(a, (size_t)j->n_out + 1);
  ft_var **kout = malloc(sizeof(ft_var *) * (size_t)(j->n_out + 1));
  ft_var **uout = malloc(sizeof(ft_var *) * (size_t)(j->n_out + 1));
  if (ok && (!ou || !kout || !uout)) ok = (tx_nomem(&p.K), false);
  int nk = 0, nu = 0;
  for (int k = 0; ok && k < j->n_out; k++) {
    ft_var *v = j->outvars[k];
    bool unk = is_unk(&p, v);
    ou[k] = unk || (instantiate && instantiate[k]);
    if (!ou[k]) {
      kout[nk++] = v;
      continue;
    }
    if (!unk) ok = add_res(&p, v);
    uout[nu++] = v;
  }
  if (ok) {
    int R = p.n_res;
    ft_var **kv = malloc(sizeof(ft_var *) * (size_t)(nk + R + 1));
    ft_var **uv = malloc(sizeof(ft_var *) * (size_t)(R + j->n_in + 1));
    if (!kv || !uv) ok = (tx_nomem(&p.K), false);
    if (ok) {
      if (nk) memcpy(kv, kout, sizeof(ft_var *) * (size_t)nk);
      if (R) memcpy(kv + nk, p.resv, sizeof(ft_var *) * (size_t)R);
      int ki = 0, ui = R;
      ft_var **kin = malloc(sizeof(ft_var *) * (size_t)(j->n_in + 1));
      if (!kin) ok = (tx_nomem(&p.K), false);
      if (R) memcpy(uv, p.resv, sizeof(ft_var *) * (size_t)R);
      for (int i = 0; ok && i < j->n_in; i++) {
        if (in_unknown[i]) uv[ui++] = j->invars[i];
        else kin[ki++] = j->invars[i];
      }
      ok = ok && ft_jaxpr_set_vars(K, j->n_const, j->constvars, ki, kin, nk + R, kv) &&
           ft_jaxpr_set_vars(U, 0, NULL, ui, uv, nu, uout);
      if (!ok && !p.K.failed) tx_nomem(&p.K);
      K->const_data = j->const_data;
      free(kin);
    }
    free(kv);
    free(uv);
    out->n_res = R;
  }
  free(kout);
  free(uout);
  free(p.resv);
  vflags_free(&p.unk);
  vflags_free(&p.res);
  if (!ok) return false;
  out->known = K;
  out->unknown = U;
  out->out_unknown = ou;
  return true;
}
