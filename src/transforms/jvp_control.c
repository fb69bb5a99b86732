/* src/transforms/jvp_control.c: forward mode through control flow. Each
 * rule transforms the sub-jaxprs (jvp_jaxpr) and emits one control-flow
 * equation that carries primals and tangents together, as JAX's
 * _cond_jvp, _while_loop_jvp, _scan_jvp and the call rules do. Loop carries
 * whose tangent becomes nonzero after an iteration are found by a fixed
 * point, so symbolic zeros stay zero only where they truly are. */
#include <string.h>

#include "custom.h"
#include "transforms.h"

/* Scratch arrays for one rule, freed at once. */
typedef struct scratch {
  void *p[16];
  int n;
} scratch;

static void *sc_alloc(scratch *s, size_t n) {
  if (s->n == 16) return NULL;
  void *p = calloc(n ? n : 1, 1);
  if (p) s->p[s->n++] = p;
  return p;
}

static void sc_free(scratch *s) {
  for (int i = 0; i < s->n; i++) free(s->p[i]);
}

static ft_pval *params_with(tx *t, jvp_call *c) {
  const ft_prim_info *pi = ft_prim_get(c->e->prim);
  ft_pval *ps = ft_arena_alloc(t->a, sizeof(ft_pval) * (size_t)(pi->n_params + 1));
  if (!ps) return tx_nomem(t);
  memcpy(ps, c->params, sizeof(ft_pval) * (size_t)pi->n_params);
  return ps;
}

/* Emits prim with the given operands; outputs are typed by the shape rule. */
static bool emit_outs(tx *t, ft_prim p, const ft_pval *ps, int n_in, ft_var **in, int n_out,
                      ft_var **out) {
  return tx_emitn(t, p, ps, n_in, in, n_out, out);
}

/* ------------------------------------------------------------------ cond */

static bool jvp_cond(jvp_state *s, jvp_call *c) {
  tx *t = c->t;
  const ft_eqn *e = c->e;
  const ft_pval *br = pget(FT_P_COND, e->params, "branches");
  int nb = br->n, nops = e->n_in - 1, nout = e->n_out;
  scratch sc = {0};
  bool *nz = sc_alloc(&sc, (size_t)nops + 1), *onz = sc_alloc(&sc, (size_t)nout + 1);
  bool *u = sc_alloc(&sc, (size_t)nout + 1);
  ft_var **in = sc_alloc(&sc, sizeof(ft_var *) * (size_t)(2 * nops + 2));
  ft_var **out = sc_alloc(&sc, sizeof(ft_var *) * (size_t)(2 * nout + 1));
  bool ok = nz && onz && u && in && out;
  if (!ok) tx_nomem(t);
  for (int i = 0; ok && i < nops; i++) nz[i] = c->dx[i + 1] != NULL;
  /* Pass 1: which outputs get a nonzero tangent in any branch. */
  for (int b = 0; ok && b < nb; b++) {
    if (!jvp_jaxpr(s, t->a, br->u.items[b].u.jaxpr, nz, NULL, onz)) ok = false;
    for (int k = 0; ok && k < nout; k++) u[k] = u[k] || onz[k];
  }
  ft_pval nbr = ft_pv_tuple(t->a, nb);
  if (ok && nb && !nbr.u.items) ok = (tx_nomem(t), false);
  for (int b = 0; ok && b < nb; b++) {
    ft_jaxpr *j = jvp_jaxpr(s, t->a, br->u.items[b].u.jaxpr, nz, u, onz);
    if (!j) ok = false;
    else nbr.u.items[b] = ft_pv_jaxpr(j);
  }
  int ni = 0, no = 0;
  if (ok) {
    in[ni++] = c->x[0];
    for (int i = 0; i < nops; i++) in[ni++] = c->x[i + 1];
    for (int i = 0; i < nops; i++)
      if (c->dx[i + 1] && var_inexact(c->x[i + 1])) in[ni++] = c->dx[i + 1];
    for (int k = 0; k < nout; k++) no += 1 + (u[k] && var_inexact(e->out[k]));
    ft_pval *ps = params_with(t, c);
    if (!ps) ok = false;
    else {
      pset(FT_P_COND, ps, "branches", nbr);
      ok = emit_outs(t, FT_P_COND, ps, ni, in, no, out);
    }
  }
  if (ok) {
    int m = nout;
    for (int k = 0; k < nout; k++) {
      c->y[k] = out[k];
      c->dy[k] = u[k] && var_inexact(e->out[k]) ? out[m++] : NULL;
    }
  }
  sc_free(&sc);
  return ok && !t->failed;
}

/* ----------------------------------------------------------------- while */

/* A copy of cond_jaxpr (cloned into a) taking extra unused inputs. */
static ft_jaxpr *cond_with_extra(tx *t, const ft_jaxpr *cj, int n_extra, ft_var **extra_like) {
  ft_jaxpr *j = jaxpr_clone(t->a, cj);
  if (!j) return tx_nomem(t);
  ft_var **in = ft_arena_alloc(t->a, sizeof(ft_var *) * (size_t)(j->n_in + n_extra + 1));
  if (!in) return tx_nomem(t);
  memcpy(in, j->invars, sizeof(ft_var *) * (size_t)j->n_in);
  for (int i = 0; i < n_extra; i++)
    if (!(in[j->n_in + i] = ft_var_new(t->a, &extra_like[i]->aval))) return tx_nomem(t);
  j->invars = in;
  j->n_in += n_extra;
  return j;
}

static bool jvp_while(jvp_state *s, jvp_call *c) {
  tx *t = c->t;
  const ft_eqn *e = c->e;
  int cn = (int)pget_int(FT_P_WHILE, c->params, "cond_nconsts", 0);
  int bn = (int)pget_int(FT_P_WHILE, c->params, "body_nconsts", 0);
  const ft_jaxpr *body = pget_jaxpr(FT_P_WHILE, e->params, "body_jaxpr");
  const ft_jaxpr *cj = pget_jaxpr(FT_P_WHILE, e->params, "cond_jaxpr");
  int nc = e->n_in - cn - bn;
  scratch sc = {0};
  bool *nz = sc_alloc(&sc, (size_t)(bn + nc + 1)), *onz = sc_alloc(&sc, (size_t)nc + 1);
  ft_var **in = sc_alloc(&sc, sizeof(ft_var *) * (size_t)(2 * e->n_in + 2));
  ft_var **out = sc_alloc(&sc, sizeof(ft_var *) * (size_t)(2 * nc + 2));
  int *perm = sc_alloc(&sc, sizeof(int) * (size_t)(2 * (bn + nc) + 2));
  ft_var **tlike = sc_alloc(&sc, sizeof(ft_var *) * (size_t)(nc + 1));
  bool ok = nz && onz && in && out && perm && tlike;
  if (!ok) tx_nomem(t);
  for (int i = 0; ok && i < bn + nc; i++) nz[i] = c->dx[cn + i] != NULL && var_inexact(c->x[cn + i]);
  /* Fixed point: a carry tangent is nonzero if it is on entry or the body makes it so. */
  for (bool changed = true; ok && changed;) {
    changed = false;
    if (!jvp_jaxpr(s, t->a, body, nz, NULL, onz)) ok = false;
    for (int k = 0; ok && k < nc; k++)
      if (onz[k] && !nz[bn + k]) nz[bn + k] = changed = true;
  }
  ft_jaxpr *nb = NULL, *ncj = NULL;
  int ntb = 0, ntc = 0;
  if (ok) {
    ft_jaxpr *jb = jvp_jaxpr(s, t->a, body, nz, nz + bn, onz);
    for (int i = 0; i < bn; i++) ntb += nz[i];
    for (int i = 0; i < nc; i++) ntc += nz[bn + i];
    /* jb inputs: [bconsts, carry, t_bconsts, t_carry] -> [bconsts, t_bconsts, carry, t_carry] */
    int m = 0;
    for (int i = 0; i < bn; i++) perm[m++] = i;
    for (int i = 0; i < ntb; i++) perm[m++] = bn + nc + i;
    for (int i = 0; i < nc; i++) perm[m++] = bn + i;
    for (int i = 0; i < ntc; i++) perm[m++] = bn + nc + ntb + i;
    if (!jb || !(nb = jaxpr_permute(t->a, jb, perm, NULL))) ok = false;
  }
  if (ok) {
    int k = 0;
    for (int i = 0; i < nc; i++)
      if (nz[bn + i]) tlike[k++] = c->x[cn + bn + i];
    if (!(ncj = cond_with_extra(t, cj, ntc, tlike))) ok = false;
  }
  if (ok) {
    int ni = 0;
    for (int i = 0; i < cn + bn; i++) in[ni++] = c->x[i];
    for (int i = 0; i < bn; i++)
      if (nz[i]) in[ni++] = c->dx[cn + i];
    for (int i = 0; i < nc; i++) in[ni++] = c->x[cn + bn + i];
    for (int i = 0; i < nc; i++)
      if (nz[bn + i]) in[ni++] = c->dx[cn + bn + i] ? c->dx[cn + bn + i]
                                                   : tx_zeros(t, &c->x[cn + bn + i]->aval);
    ft_pval *ps = params_with(t, c);
    if (!ps) ok = false;
    else {
      pset(FT_P_WHILE, ps, "body_jaxpr", ft_pv_jaxpr(nb));
      pset(FT_P_WHILE, ps, "cond_jaxpr", ft_pv_jaxpr(ncj));
      pset(FT_P_WHILE, ps, "body_nconsts", ft_pv_int(bn + ntb));
      ok = emit_outs(t, FT_P_WHILE, ps, ni, in, nc + ntc, out);
    }
  }
  if (ok) {
    int m = nc;
    for (int i = 0; i < nc; i++) {
      c->y[i] = out[i];
      c->dy[i] = nz[bn + i] ? out[m++] : NULL;
    }
  }
  sc_free(&sc);
  return ok && !t->failed;
}

/* ------------------------------------------------------------------ scan */

static bool jvp_scan(jvp_state *s, jvp_call *c) {
  tx *t = c->t;
  const ft_eqn *e = c->e;
  int ncon = (int)pget_int(FT_P_SCAN, c->params, "num_consts", 0);
  int ncar = (int)pget_int(FT_P_SCAN, c->params, "num_carry", 0);
  const ft_jaxpr *body = pget_jaxpr(FT_P_SCAN, e->params, "jaxpr");
  int n = e->n_in, nx = n - ncon - ncar, ny = body->n_out - ncar;
  scratch sc = {0};
  bool *nz = sc_alloc(&sc, (size_t)n + 1), *onz = sc_alloc(&sc, (size_t)body->n_out + 1);
  bool *inst = sc_alloc(&sc, (size_t)body->n_out + 1);
  ft_var **in = sc_alloc(&sc, sizeof(ft_var *) * (size_t)(2 * n + 2));
  ft_var **out = sc_alloc(&sc, sizeof(ft_var *) * (size_t)(2 * e->n_out + 2));
  int *pin = sc_alloc(&sc, sizeof(int) * (size_t)(2 * n + 2));
  int *pout = sc_alloc(&sc, sizeof(int) * (size_t)(2 * body->n_out + 2));
  bool ok = nz && onz && inst && in && out && pin && pout;
  if (!ok) tx_nomem(t);
  for (int i = 0; ok && i < n; i++) nz[i] = c->dx[i] != NULL && var_inexact(c->x[i]);
  for (bool changed = true; ok && changed;) {
    changed = false;
    if (!jvp_jaxpr(s, t->a, body, nz, NULL, onz)) ok = false;
    for (int k = 0; ok && k < ncar; k++)
      if (onz[k] && !nz[ncon + k]) nz[ncon + k] = changed = true;
  }
  ft_jaxpr *nbj = NULL;
  int ntc = 0, ntcar = 0, ntx = 0, nty = 0;
  if (ok) {
    for (int k = 0; k < body->n_out; k++) inst[k] = k < ncar && nz[ncon + k];
    ft_jaxpr *jb = jvp_jaxpr(s, t->a, body, nz, inst, onz);
    for (int i = 0; i < ncon; i++) ntc += nz[i];
    for (int i = 0; i < ncar; i++) ntcar += nz[ncon + i];
    for (int i = 0; i < nx; i++) ntx += nz[ncon + ncar + i];
    for (int k = 0; k < ny; k++) nty += onz[ncar + k];
    /* jb inputs: [consts, carry, xs, tc, tcar, tx] -> [consts, tc, carry, tcar, xs, tx] */
    int m = 0, T = n;
    for (int i = 0; i < ncon; i++) pin[m++] = i;
    for (int i = 0; i < ntc; i++) pin[m++] = T + i;
    for (int i = 0; i < ncar; i++) pin[m++] = ncon + i;
    for (int i = 0; i < ntcar; i++) pin[m++] = T + ntc + i;
    for (int i = 0; i < nx; i++) pin[m++] = ncon + ncar + i;
    for (int i = 0; i < ntx; i++) pin[m++] = T + ntc + ntcar + i;
    /* jb outputs: [carry, ys, tcar, tys] -> [carry, tcar, ys, tys] */
    int mo = 0, TO = body->n_out;
    for (int k = 0; k < ncar; k++) pout[mo++] = k;
    for (int k = 0; k < ntcar; k++) pout[mo++] = TO + k;
    for (int k = 0; k < ny; k++) pout[mo++] = ncar + k;
    for (int k = 0; k < nty; k++) pout[mo++] = TO + ntcar + k;
    if (!jb || !(nbj = jaxpr_permute(t->a, jb, pin, pout))) ok = false;
  }
  if (ok) {
    int ni = 0;
    for (int i = 0; i < ncon; i++) in[ni++] = c->x[i];
    for (int i = 0; i < ncon; i++)
      if (nz[i]) in[ni++] = c->dx[i];
    for (int i = 0; i < ncar; i++) in[ni++] = c->x[ncon + i];
    for (int i = 0; i < ncar; i++)
      if (nz[ncon + i]) in[ni++] = c->dx[ncon + i] ? c->dx[ncon + i] : tx_zeros(t, &c->x[ncon + i]->aval);
    for (int i = 0; i < nx; i++) in[ni++] = c->x[ncon + ncar + i];
    for (int i = 0; i < nx; i++)
      if (nz[ncon + ncar + i]) in[ni++] = c->dx[ncon + ncar + i];
    ft_pval *ps = params_with(t, c);
    if (!ps) ok = false;
    else {
      pset(FT_P_SCAN, ps, "jaxpr", ft_pv_jaxpr(nbj));
      scan_set_counts(ps, ncon + ntc, ncar + ntcar);
      ok = emit_outs(t, FT_P_SCAN, ps, ni, in, e->n_out + ntcar + nty, out);
    }
  }
  if (ok) {
    int m = 0;
    for (int k = 0; k < ncar; k++) c->y[k] = out[m++];
    for (int k = 0; k < ncar; k++) c->dy[k] = nz[ncon + k] ? out[m++] : NULL;
    for (int k = 0; k < ny; k++) c->y[ncar + k] = out[m++];
    for (int k = 0; k < ny; k++) c->dy[ncar + k] = onz[ncar + k] ? out[m++] : NULL;
  }
  sc_free(&sc);
  return ok && !t->failed;
}

/* ------------------------------------------------------------------- jit */

/* The params of the JVP equation beyond its jaxpr (fill_params's part). */
typedef void (*body_params_fn)(tx *t, jvp_call *c, ft_pval *ps, const bool *nz, const bool *onz);

/* An equation that runs a sub-jaxpr on its operands as they are (jit,
 * remat2, shard_map): the same primitive applied to the JVP of its body,
 * taking the primals and the nonzero tangents, giving the primal outputs
 * and then the nonzero output tangents. fill writes the params that
 * change besides the jaxpr (which keeps its name, as in JAX). */
static bool jvp_body_call(jvp_state *s, jvp_call *c, body_params_fn fill) {
  tx *t = c->t;
  const ft_eqn *e = c->e;
  const char *key = e->prim == FT_P_EVAL_JAXPR ? "call_jaxpr" : "jaxpr";
  const ft_jaxpr *inner = pget_jaxpr(e->prim, e->params, key);
  scratch sc = {0};
  bool *nz = sc_alloc(&sc, (size_t)e->n_in + 1), *onz = sc_alloc(&sc, (size_t)e->n_out + 1);
  ft_var **in = sc_alloc(&sc, sizeof(ft_var *) * (size_t)(2 * e->n_in + 2));
  ft_var **out = sc_alloc(&sc, sizeof(ft_var *) * (size_t)(2 * e->n_out + 2));
  bool ok = nz && onz && in && out;
  if (!ok) tx_nomem(t);
  for (int i = 0; ok && i < e->n_in; i++) nz[i] = c->dx[i] != NULL && var_inexact(c->x[i]);
  ft_jaxpr *j = ok ? jvp_jaxpr(s, t->a, inner, nz, NULL, onz) : NULL;
  if (ok && !j) ok = false;
  if (ok) {
    int ni = 0, no = e->n_out;
    for (int i = 0; i < e->n_in; i++) in[ni++] = c->x[i];
    for (int i = 0; i < e->n_in; i++)
      if (nz[i]) in[ni++] = c->dx[i];
    for (int k = 0; k < e->n_out; k++) no += onz[k];
    ft_pval *ps = params_with(t, c);
    ok = ps != NULL;
    if (ok) {
      pset(e->prim, ps, key, ft_pv_jaxpr(j));
      if (fill) fill(t, c, ps, nz, onz);
      ok = !t->failed && emit_outs(t, e->prim, ps, ni, in, no, out);
    }
  }
  if (ok) {
    int m = e->n_out;
    for (int k = 0; k < e->n_out; k++) {
      c->y[k] = out[k];
      c->dy[k] = onz[k] ? out[m++] : NULL;
    }
  }
  sc_free(&sc);
  return ok && !t->failed;
}

static void jit_params(tx *t, jvp_call *c, ft_pval *ps, const bool *nz, const bool *onz) {
  (void)t, (void)nz, (void)onz;
  if (c->e->prim == FT_P_REMAT2) { /* policy and prevent_cse stay, as in JAX's remat_jvp */
    pset(FT_P_REMAT2, ps, "differentiated", ft_pv_bool(true));
    return;
  }
  /* Per-input/output params (donation, shardings) no longer fit. */
  const ft_prim_info *pi = ft_prim_get(FT_P_JIT);
  for (int i = 0; i < pi->n_params; i++)
    if (strcmp(pi->params[i].name, "jaxpr") && strcmp(pi->params[i].name, "name") &&
        pi->params[i].dflt && !strcmp(pi->params[i].dflt, "None"))
      ps[i] = ft_pv_none();
}

static bool jvp_jit(jvp_state *s, jvp_call *c) { return jvp_body_call(s, c, jit_params); }

/* ------------------------------------------------- shard_map (issue 27) */

/* specs (a tuple of n partition specs) followed by the specs of the items
 * with extra[i] set: the tangents travel split as their primals. */
static ft_pval specs_with(tx *t, const ft_pval *specs, const bool *extra) {
  int n = specs->n, m = n;
  for (int i = 0; i < n; i++) m += extra[i];
  ft_pval r = ft_pv_tuple(t->a, m);
  if (m && r.tag != FT_PV_TUPLE) return tx_nomem(t), ft_pv_none();
  for (int i = 0, k = n; i < n; i++) {
    r.u.items[i] = specs->u.items[i];
    if (extra[i]) r.u.items[k++] = specs->u.items[i];
  }
  return r;
}

/* shard_map: the JVP of its body, run per index as the body is; the
 * tangent inputs and outputs take their primals' specs (as JAX's). */
static void shard_map_params(tx *t, jvp_call *c, ft_pval *ps, const bool *nz, const bool *onz) {
  const ft_prim p = c->e->prim;
  pset(p, ps, "in_specs", specs_with(t, pget(p, c->params, "in_specs"), nz));
  pset(p, ps, "out_specs", specs_with(t, pget(p, c->params, "out_specs"), onz));
}

static bool jvp_shard_map(jvp_state *s, jvp_call *c) {
  ft_spmd_env saved; /* the body's shape rules see its mesh (all_to_all) */
  ft_spmd_env_enter(pget(FT_P_SHARD_MAP, c->params, "mesh"), &saved);
  bool ok = jvp_body_call(s, c, shard_map_params);
  ft_spmd_env_leave(&saved);
  return ok;
}

/* A custom_vjp_call read from a JAX printout names its bwd rule (`bwd=bwd`,
 * a Python function) without holding it: its derivative is that unknown
 * rule, not call_jaxpr's, so every derivative fails closed (JAX itself
 * refuses forward mode through custom_vjp). Traced ones carry jaxprs. */
static bool custom_vjp_rule_missing(jvp_call *c) {
  const ft_pval *bwd = pget(FT_P_CUSTOM_VJP_CALL, c->params, "bwd");
  if (bwd && bwd->tag == FT_PV_JAXPR && bwd->u.jaxpr) return false;
  const ft_pval *nm = pget(FT_P_CUSTOM_VJP_CALL, c->params, "name");
  const char *name = nm && nm->tag == FT_PV_STR && nm->s ? nm->s : "?";
  return tx_fail(c->t, FT_ERR_UNSUPPORTED, "cannot differentiate custom_vjp_call '%s': its bwd rule "
                 "is only a name in the printout (bwd=%s), not a jaxpr; differentiating call_jaxpr "
                 "instead would ignore the custom rule", name,
                 bwd && bwd->tag == FT_PV_STR && bwd->s ? bwd->s : "None"), true;
}

/* CustomRoot: JAX's CustomRoot.lin/linearized. The root's tangent is
 * -tangent_solve(D_x f(root), D_p f(p, root) dp), p being f's consts; the
 * tangents of solve's consts and of the guess do not enter, and without a
 * tangent on f's consts the root's is zero (JAX's `if not any(nzs[2])`).
 * JAX 0.12 prints neither f nor tangent_solve, so a tangent on an operand
 * after solve's (f's consts and tangent_solve's, which the text does not
 * tell apart) is refused. */
static bool jvp_custom_root(jvp_call *c) {
  tx *t = c->t;
  const ft_eqn *e = c->e;
  const ft_pval *sv = pget(e->prim, e->params, "solve_jaxpr");
  if (!sv || sv->tag != FT_PV_JAXPR || !sv->u.jaxpr || sv->u.jaxpr->n_in > e->n_in)
    return tx_fail(t, FT_ERR_TYPE, "jvp of CustomRoot: no solve_jaxpr that fits its operands"), false;
  for (int i = sv->u.jaxpr->n_in; i < e->n_in; i++)
    if (c->dx[i])
      return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of CustomRoot: operand %d (one of f's or tangent_solve's "
                     "consts) has a tangent, and %s", i, FT_CUSTOM_ROOT_NO_F), false;
  return tx_emitn(t, e->prim, c->params, e->n_in, c->x, e->n_out, c->y); /* tangents: zero */
}

/* The generic reduce: JAX's _reduce_jvp_rule. Refused with JAX's words
 * when an init value has a tangent; else the reduced axes (in the order
 * `dimensions` names them) go to the front, flattened to n, and the pairs
 * are reduced as a tree (JAX's _reduce_tree): while n > 1, the first
 * ceil(n/2) rows against the rest (padded at the end by one row of the
 * init value when odd), the computation applied elementwise: its JVP
 * (jvp_jaxpr) vmapped over every axis, called as a jit. The primal result
 * is the tree's too, as JAX's jvp gives it. */
static ft_jaxpr *reduce_lift(tx *t, ft_ctx *ctx, const ft_jaxpr *j, int rank, const int64_t *dims) {
  bool in_b[128], force[128], ob[128];
  if (j->n_in > 128 || j->n_out > 128) return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of reduce: too many operands"), NULL;
  for (int i = 0; i < j->n_in; i++) in_b[i] = true;
  for (int k = 0; k < j->n_out; k++) force[k] = true;
  ft_jaxpr *cur = (ft_jaxpr *)j;
  for (int d = rank - 1; d >= 0; d--)
    if (!(cur = bt_batch_jaxpr(ctx, t->a, cur, dims[d], in_b, force, ob))) return t->failed = true, NULL;
  return cur;
}

static bool jvp_reduce_generic(jvp_state *s, jvp_call *c) {
  tx *t = c->t;
  const ft_eqn *e = c->e;
  int m = e->n_in / 2;
  const ft_pval *jv = pget(e->prim, e->params, "jaxpr");
  const ft_jaxpr *red = jv && jv->tag == FT_PV_JAXPR ? jv->u.jaxpr : NULL;
  if (!red || m < 1 || m > 32 || red->n_in != 2 * m || red->n_out != m)
    return tx_fail(t, FT_ERR_TYPE, "jvp of reduce: bad jaxpr"), false;
  for (int k = m; k < e->n_in; k++)
    if (c->dx[k])
      return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of reduce: Gradient of general lax.reduce with non-zero "
                     "tangents for initial values to reduction not implemented (JAX 0.12's "
                     "_reduce_jvp_rule)"), false;
  if (red->n_const)
    return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of reduce: a computation that closes over constants"), false;
  int64_t ax[FT_MAX_RANK];
  int na = pget_ints(e->prim, c->params, "dimensions", ax, FT_MAX_RANK);
  const ft_aval *a = &e->in[0]->aval;
  if (na < 0) return tx_fail(t, FT_ERR_TYPE, "jvp of reduce: bad dimensions"), false;
  bool isax[FT_MAX_RANK] = {false}, fl[32];
  int64_t perm[FT_MAX_RANK], shp[FT_MAX_RANK], n = 1;
  int r = 0;
  for (int i = 0; i < na; i++) perm[r++] = ax[i], isax[ax[i]] = true, n *= a->dims[ax[i]];
  int rest = 0;
  for (int d = 0; d < a->rank; d++)
    if (!isax[d]) perm[r++] = d, shp[1 + rest++] = a->dims[d];
  shp[0] = n;
  /* the JVP of the computation: [acc, x primals, their tangents (float operands)] -> [outs, tangents] */
  bool nz[64], inst[32], onz[32];
  int nf = 0;
  for (int k = 0; k < m; k++) {
    fl[k] = ft_dtype_is_float(e->in[k]->aval.dtype) || ft_dtype_is_complex(e->in[k]->aval.dtype);
    nz[k] = nz[m + k] = fl[k], inst[k] = fl[k];
    nf += fl[k];
  }
  ft_jaxpr *J = jvp_jaxpr(s, t->a, red, nz, inst, onz);
  if (!J) return t->failed = true, false;
  if (J->n_out != m + nf) return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of reduce: the computation gives a "
                                          "tangent to an integer result"), false;
  ft_var *P[32], *T[32];
  for (int k = 0; k < m; k++) {
    ft_var *x = tx_transpose(t, c->x[k], a->rank, perm);
    P[k] = tx_reshape(t, x, rest + 1, shp);
    T[k] = NULL;
    if (fl[k]) {
      ft_var *dx = c->dx[k] ? c->dx[k] : tx_zeros(t, &e->in[k]->aval);
      T[k] = tx_reshape(t, tx_transpose(t, dx, a->rank, perm), rest + 1, shp);
    }
  }
  while (n > 1 && !t->failed) {
    int64_t n1 = (n + 1) / 2, n2 = n - n1;
    int64_t lo0[FT_MAX_RANK] = {0}, hi0[FT_MAX_RANK], lo1[FT_MAX_RANK] = {0}, hi1[FT_MAX_RANK];
    int64_t plo[FT_MAX_RANK] = {0}, phi[FT_MAX_RANK] = {0}, pin[FT_MAX_RANK] = {0};
    for (int d = 0; d <= rest; d++) hi0[d] = hi1[d] = shp[d];
    hi0[0] = n1, lo1[0] = n1, hi1[0] = n, phi[0] = 1;
    ft_var *in[64], *out[64];
    int q = 0;
    ft_var *x2[32], *t2[32];
    for (int k = 0; k < m; k++) {
      in[k] = tx_slice(t, P[k], lo0, hi0, NULL);
      x2[k] = tx_slice(t, P[k], lo1, hi1, NULL);
      if (n2 != n1) x2[k] = tx_pad(t, x2[k], c->x[m + k], plo, phi, pin);
      in[m + k] = x2[k];
    }
    q = 2 * m;
    for (int k = 0; k < m; k++)
      if (fl[k]) in[q++] = tx_slice(t, T[k], lo0, hi0, NULL);
    for (int k = 0; k < m; k++)
      if (fl[k]) {
        t2[k] = tx_slice(t, T[k], lo1, hi1, NULL);
        if (n2 != n1) t2[k] = tx_pad(t, t2[k], tx_lit(t, e->in[k]->aval.dtype, 0), plo, phi, pin);
        in[q++] = t2[k];
      }
    int64_t ld[FT_MAX_RANK];
    memcpy(ld, shp, sizeof ld);
    ld[0] = n1;
    ft_jaxpr *L = reduce_lift(t, s->ctx, J, rest + 1, ld);
    ft_pval *ps = L ? tx_params(t, FT_P_JIT) : NULL;
    if (!ps || t->failed) return false;
    pset(FT_P_JIT, ps, "name", (ft_pval){.tag = FT_PV_STR, .s = "_reduce_tree"});
    pset(FT_P_JIT, ps, "jaxpr", ft_pv_jaxpr(L));
    if (!tx_emitn(t, FT_P_JIT, ps, q, in, m + nf, out)) return false;
    for (int k = 0, f = 0; k < m; k++) {
      P[k] = out[k];
      if (fl[k]) T[k] = out[m + f++];
    }
    n = n1;
    shp[0] = n1;
  }
  if (t->failed) return false;
  for (int k = 0; k < m; k++) {
    const ft_aval *o = &e->out[k]->aval;
    if (n == 0) {
      c->y[k] = tx_bcast_scalar(t, c->x[m + k], o);
      c->dy[k] = NULL;
    } else {
      c->y[k] = tx_reshape(t, P[k], o->rank, o->dims);
      c->dy[k] = fl[k] ? tx_reshape(t, T[k], o->rank, o->dims) : NULL;
    }
  }
  return !t->failed;
}

/* The generic reduce_window: JAX 0.12's reduce_window_jvp. Refused with
 * JAX's words when an init value has a tangent; else one reduce_window over
 * the operands then their tangents (zeros where absent), inits then zero
 * inits, whose computation is the JVP of the jaxpr with JAX's wrapper's
 * argument order: (acc primals, acc tangents, x primals, x tangents) ->
 * (primals, tangents). Its results are the primal results, then their
 * tangents. Non-float operands (an index operand's float0 tangent) are
 * refused: not modelled here. */
enum { RW_MAX = 8 }; /* operands of a generic reduce_window here (its JVP: twice as many) */

static bool jvp_reduce_window_generic(jvp_state *s, jvp_call *c) {
  tx *t = c->t;
  const ft_eqn *e = c->e;
  int m = e->n_in / 2;
  const ft_pval *jv = pget(e->prim, e->params, "jaxpr");
  const ft_jaxpr *red = jv && jv->tag == FT_PV_JAXPR ? jv->u.jaxpr : NULL;
  if (!red || m < 1 || m > RW_MAX || red->n_in != 2 * m || red->n_out != m)
    return tx_fail(t, FT_ERR_TYPE, "jvp of reduce_window: bad jaxpr (at most %d operands here)",
                   RW_MAX), false;
  for (int k = m; k < e->n_in; k++)
    if (c->dx[k])
      return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of reduce_window: reduce_window jvp does not support "
                     "non-zero init_value_tangent. (JAX 0.12's reduce_window_jvp)"), false;
  if (red->n_const)
    return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of reduce_window: a computation that closes over constants"), false;
  for (int k = 0; k < m; k++)
    if (!ft_dtype_is_float(e->in[k]->aval.dtype))
      return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of reduce_window: operand %d is %s: JAX gives its float0 "
                     "tangent a reduce_window of its own, which is not modelled (float operands only)", k,
                     ft_dtype_name(e->in[k]->aval.dtype)), false;
  bool nz[2 * RW_MAX], inst[RW_MAX], onz[RW_MAX];
  for (int k = 0; k < 2 * m; k++) nz[k] = true;
  for (int k = 0; k < m; k++) inst[k] = true;
  ft_jaxpr *J = jvp_jaxpr(s, t->a, red, nz, inst, onz);
  if (!J) return t->failed = true, false;
  if (J->n_in != 4 * m || J->n_out != 2 * m)
    return tx_fail(t, FT_ERR_INTERNAL, "jvp of reduce_window: the computation's JVP has %d inputs, %d outputs",
                   J->n_in, J->n_out), false;
  ft_jaxpr *W = ft_arena_alloc(t->a, sizeof *W); /* J with JAX's wrapper's argument order */
  ft_var **iv = W ? ft_arena_alloc(t->a, sizeof *iv * (size_t)(4 * m)) : NULL;
  if (!iv) return tx_nomem(t), false;
  *W = *J;
  for (int k = 0; k < m; k++) {
    iv[k] = J->invars[k];                 /* acc primals */
    iv[m + k] = J->invars[2 * m + k];     /* acc tangents */
    iv[2 * m + k] = J->invars[m + k];     /* x primals */
    iv[3 * m + k] = J->invars[3 * m + k]; /* x tangents */
  }
  W->invars = iv;
  ft_jaxpr_renew_serial(W);
  ft_var *in[4 * RW_MAX], *out[2 * RW_MAX];
  for (int k = 0; k < m; k++) {
    in[k] = c->x[k];
    in[m + k] = c->dx[k] ? c->dx[k] : tx_zeros(t, &e->in[k]->aval);
    in[2 * m + k] = c->x[m + k];
    in[3 * m + k] = tx_lit(t, e->in[k]->aval.dtype, 0);
  }
  ft_pval *ps = tx_params(t, e->prim);
  if (!ps || t->failed) return false;
  memcpy(ps, c->params, sizeof(ft_pval) * (size_t)ft_prim_get(e->prim)->n_params);
  pset(e->prim, ps, "jaxpr", ft_pv_jaxpr(W));
  if (!tx_emitn(t, e->prim, ps, 4 * m, in, 2 * m, out)) return false;
  for (int k = 0; k < m; k++) c->y[k] = out[k], c->dy[k] = out[m + k];
  return !t->failed;
}

bool jvp_control(jvp_state *s, jvp_call *c) {
  if (c->e->prim == FT_P_CUSTOM_VJP_CALL && custom_vjp_rule_missing(c)) return false;
  switch (c->e->prim) {
  case FT_P_COND: return jvp_cond(s, c);
  case FT_P_WHILE: return jvp_while(s, c);
  case FT_P_SCAN: return jvp_scan(s, c);
  case FT_P_JIT: case FT_P_REMAT2: return jvp_jit(s, c);
  case FT_P_EVAL_JAXPR: return jvp_body_call(s, c, NULL); /* the JVP of call_jaxpr, called */
  case FT_P_SHARD_MAP: return jvp_shard_map(s, c);
  case FT_P_CUSTOM_JVP_CALL: case FT_P_CUSTOM_VJP_CALL: return jvp_custom_call(s, c); /* custom.c */
  case FT_P_CUSTOM_LIN: return jvp_custom_lin(c);
  case FT_P_CUSTOM_LINEAR_SOLVE: return jvp_custom_linear_solve(s, c); /* ad_linalg.c */
  case FT_P_CUSTOM_ROOT: return jvp_custom_root(c);
  case FT_P_REDUCE: return jvp_reduce_generic(s, c);
  case FT_P_REDUCE_WINDOW: return jvp_reduce_window_generic(s, c);
  default: {
    const char *why = ft_jvp_rule_status(c->e->prim);
    return tx_fail(c->t, FT_ERR_UNSUPPORTED, "jvp of %s: %s", ft_prim_get(c->e->prim)->name,
                   why ? why : "no rule"), false;
  }
  }
}
