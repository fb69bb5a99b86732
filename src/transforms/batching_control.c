/* src/transforms/batching_control.c: batching of control flow (JAX's
 * semantics) and the lane loop.
 *
 *  cond   unmapped index: stays a cond whose branches are batched alike;
 *         mapped index: every branch runs on every lane and select_n picks
 *         (the index is clamped first, as cond itself clamps it).
 *  while  the carry's batchedness is found by fixpoint; a mapped predicate
 *         runs the loop while any lane is running and freezes finished
 *         lanes with select_n, so each lane stops exactly where it would.
 *  scan   consts and carry batched at axis 0, xs at axis 1 (the scan walks
 *         axis 0), ys come out batched at axis 1.
 *  jit, custom_jvp_call, custom_vjp_call: the inner jaxpr is batched (with
 *         rules given as jaxprs, and custom_lin: custom.c).
 *  custom_linear_solve: its four jaxprs batched alike, x's and b's
 *         batchedness by fixpoint (JAX's _linear_solve_batching_rule).
 *
 * The lane loop batches any primitive as a scan over the batch whose body
 * is the unbatched equation: lane b computes exactly the unbatched result
 * on slice b. */
#include <string.h>

#include "custom.h"
#include "vmap.h"

static bool is_jaxpr_param(const ft_pval *v) {
  if (v->tag == FT_PV_JAXPR) return true;
  return v->tag == FT_PV_TUPLE && v->n > 0 && v->u.items[0].tag == FT_PV_JAXPR;
}

/* The params of a control-flow equation in the target arena, sub-jaxprs
 * left for the caller to set (they are rebuilt batched, never copied). */
static ft_pval *ctl_params(bt_call *c) {
  const ft_prim_info *pi = ft_prim_get(c->e->prim);
  ft_pval *ps = tx_params(c->t, c->e->prim);
  bool ok = true;
  for (int i = 0; ps && i < pi->n_params; i++)
    if (!is_jaxpr_param(&c->e->params[i])) ps[i] = pval_clone(c->t->a, &c->e->params[i], &ok);
  if (ps && !ok) return tx_nomem(c->t);
  return ps;
}

static bool *bools(tx *t, int n) {
  bool *b = ft_arena_alloc(t->a, sizeof(bool) * (size_t)(n + 1));
  return b ? b : tx_nomem(t);
}

static ft_var **vars(tx *t, int n) {
  ft_var **v = ft_arena_alloc(t->a, sizeof(ft_var *) * (size_t)(n + 1));
  return v ? v : tx_nomem(t);
}

/* Mapped operands to axis 0; unmapped ones as they are, or broadcast when
 * force[i] (force may be NULL). in_b receives which are batched. */
static void front_ops(bt_call *c, int from, int n, const bool *force, ft_var **ops, bool *in_b) {
  for (int i = 0; i < n; i++) {
    int k = from + i;
    in_b[i] = c->xb[k] >= 0 || (force && force[i]);
    ops[i] = in_b[i] ? bt_match(c->t, c->x[k], c->xb[k], 0, c->s->size) : c->x[k];
  }
}

/* A failure inside a sub-jaxpr already has its message on ctx. */
static bool sub_failed(bt_call *c) {
  c->t->failed = true;
  return false;
}

/* Emits the batched body of sub (no constvars) inline into t. */
static bool inline_batched(bt_call *c, tx *t, const ft_jaxpr *sub, ft_var *const *in,
                           const int *in_bd, ft_var **out, int *out_bd) {
  if (sub->n_const)
    return tx_fail(t, FT_ERR_UNSUPPORTED,
                   "vmap: %s: a sub-jaxpr with constvars cannot be inlined; pass its constants "
                   "as operands", ft_prim_get(c->e->prim)->name), false;
  bt_state s;
  if (!bt_state_init(&s, c->s->ctx, c->s->size, ft_arena_num_var_ids(sub->arena) + 1))
    return tx_nomem(t), false;
  bool ok = bt_into(&s, t, sub, in, in_bd, out, out_bd);
  bt_state_free(&s);
  return ok;
}

/* ------------------------------------------------------------ lane loop */

bool bt_lane_loop(bt_call *c) {
  tx *t = c->t;
  int n = c->n_in;
  ft_jaxpr *body = ft_jaxpr_new(t->a);
  ft_var **bin = vars(t, n), **ein = vars(t, n), **ops = vars(t, n), **bout = vars(t, c->n_out);
  if (!body || !bin || !ein || !ops || !bout) return tx_nomem(t), false;
  int k = 0, nc = 0;
  for (int pass = 0; pass < 2; pass++) /* consts first, then the mapped xs */
    for (int i = 0; i < n; i++) {
      if ((pass == 0) != (c->xb[i] < 0)) continue;
      if (c->x[i]->kind == FT_LIT) {
        ein[i] = c->x[i];
        continue;
      }
      const ft_aval *av = pass == 0 ? &c->x[i]->aval : &c->e->in[i]->aval;
      if (!(bin[k] = ein[i] = ft_var_new(t->a, av))) return tx_nomem(t), false;
      ops[k++] = pass == 0 ? c->x[i] : bt_moveaxis(t, c->x[i], c->xb[i], 0);
      nc += pass == 0;
    }
  tx bt;
  tx_init(&bt, c->s->ctx, body, "vmap");
  if (!tx_emitn(&bt, c->e->prim, c->params, n, ein, c->n_out, bout)) return sub_failed(c);
  if (!ft_jaxpr_set_vars(body, 0, NULL, k, bin, c->n_out, bout)) return tx_nomem(t), false;
  ft_pval *ps = tx_params(t, FT_P_SCAN);
  if (!ps) return false;
  pset(FT_P_SCAN, ps, "jaxpr", ft_pv_jaxpr(body));
  pset(FT_P_SCAN, ps, "length", ft_pv_int(c->s->size));
  scan_set_counts(ps, nc, 0);
  pset(FT_P_SCAN, ps, "reverse", ft_pv_bool(false));
  for (int j = 0; j < c->n_out; j++) c->yb[j] = 0;
  return tx_emitn(t, FT_P_SCAN, ps, k, ops, c->n_out, c->y);
}

/* ------------------------------------------------------------------ cond */

/* Index mapped: both (all) branches on every lane, then select_n. As in
 * JAX, each branch sees its operands through stop_gradient on the lanes
 * that did not choose it (so reverse mode gives those lanes no gradient). */
static bool cond_select(bt_call *c, const ft_pval *br) {
  tx *t = c->t;
  int nops = c->n_in - 1, nb = br->n;
  ft_var *idx = bt_match(t, c->x[0], c->xb[0], 0, c->s->size);
  ft_dtype idt = c->x[0]->aval.dtype;
  if (idt != FT_BOOL && nb > 1) {
    ft_var *in[3] = {tx_lit(t, idt, 0), idx, tx_lit(t, idt, nb - 1)};
    idx = tx_emit(t, FT_P_CLAMP, NULL, 3, in);
  }
  if (idt != FT_BOOL && idt != FT_I32) idx = tx_convert(t, idx, FT_I32);
  ft_var **ops = vars(t, nops), **bops = vars(t, nops), **outs = vars(t, nb * c->n_out);
  int *bd = ft_arena_alloc(t->a, sizeof(int) * (size_t)(nops + c->n_out + 1));
  bool *in_b = bools(t, nops);
  if (!ops || !bops || !outs || !bd || !in_b) return false;
  bool *all = in_b;
  for (int i = 0; i < nops; i++) all[i] = true;
  front_ops(c, 1, nops, all, ops, in_b);
  for (int i = 0; i < nops; i++) bd[i] = 0;
  for (int b = 0; b < nb && !t->failed; b++) {
    ft_var *eq = NULL;
    for (int i = 0; i < nops; i++) {
      bops[i] = ops[i];
      if (!ops[i] || !var_inexact(ops[i]) || nb < 2) continue;
      if (!eq) {
        ft_var *in[2] = {idx, tx_lit(t, idx->aval.dtype, b)};
        eq = tx_emit(t, FT_P_EQ, NULL, 2, in);
      }
      ft_var *p = eq;
      if (ops[i]->aval.rank > 1) {
        int64_t zero = 0;
        p = tx_bcast(t, eq, ops[i]->aval.rank, ops[i]->aval.dims, &zero);
      }
      bops[i] = tx_select(t, p, tx_unop(t, FT_P_STOP_GRADIENT, ops[i]), ops[i]);
    }
    if (t->failed) return false;
    ft_var **o = outs + b * c->n_out;
    int *obd = bd + nops;
    if (!inline_batched(c, t, br->u.items[b].u.jaxpr, bops, bd, o, obd)) return false;
    for (int k = 0; k < c->n_out; k++) o[k] = bt_match(t, o[k], obd[k], 0, c->s->size);
  }
  for (int k = 0; k < c->n_out && !t->failed; k++) {
    ft_var **cases = vars(t, nb + 1);
    if (!cases) return false;
    const ft_aval *oav = &outs[k]->aval;
    cases[0] = idx;
    if (oav->rank > 1) {
      int64_t zero = 0;
      cases[0] = tx_bcast(t, idx, oav->rank, oav->dims, &zero);
    }
    for (int b = 0; b < nb; b++) cases[b + 1] = outs[b * c->n_out + k];
    c->y[k] = nb == 1 ? cases[1] : tx_emit(t, FT_P_SELECT_N, NULL, nb + 1, cases);
    c->yb[k] = 0;
  }
  return !t->failed;
}

static bool batch_cond(bt_call *c) {
  tx *t = c->t;
  const ft_pval *br = pget(FT_P_COND, c->e->params, "branches");
  if (!br || br->tag != FT_PV_TUPLE || br->n < 1)
    return tx_fail(t, FT_ERR_TYPE, "vmap: cond: bad branches"), false;
  for (int b = 0; b < br->n; b++)
    if (br->u.items[b].tag != FT_PV_JAXPR)
      return tx_fail(t, FT_ERR_TYPE, "vmap: cond: bad branches"), false;
  if (c->xb[0] >= 0) return cond_select(c, br);
  int nops = c->n_in - 1, nout = c->n_out;
  ft_var **ops = vars(t, nops + 1);
  bool *in_b = bools(t, nops), *ob = bools(t, nout), *any = bools(t, nout);
  if (!ops || !in_b || !ob || !any) return false;
  front_ops(c, 1, nops, NULL, ops + 1, in_b);
  ops[0] = c->x[0];
  /* Probe each branch in a scratch arena; outputs batched in any branch
   * are batched in all. */
  ft_arena *tmp = ft_arena_new();
  if (!tmp) return tx_nomem(t), false;
  for (int b = 0; b < br->n; b++) {
    if (!bt_batch_jaxpr(c->s->ctx, tmp, br->u.items[b].u.jaxpr, c->s->size, in_b, NULL, ob)) {
      ft_arena_free(tmp);
      return sub_failed(c);
    }
    for (int k = 0; k < nout; k++) any[k] = any[k] || ob[k];
  }
  ft_arena_free(tmp);
  ft_pval *ps = ctl_params(c);
  if (!ps) return false;
  ft_pval nbr = ft_pv_tuple(t->a, br->n);
  if (!nbr.u.items) return tx_nomem(t), false;
  nbr.list = br->list;
  for (int b = 0; b < br->n; b++) {
    ft_jaxpr *j = bt_batch_jaxpr(c->s->ctx, t->a, br->u.items[b].u.jaxpr, c->s->size, in_b,
                                 any, ob);
    if (!j) return sub_failed(c);
    nbr.u.items[b] = ft_pv_jaxpr(j);
  }
  pset(FT_P_COND, ps, "branches", nbr);
  for (int k = 0; k < nout; k++) c->yb[k] = any[k] ? 0 : BT_NOT_MAPPED;
  return tx_emitn(t, FT_P_COND, ps, c->n_in, ops, nout, c->y);
}

/* ----------------------------------------------------------------- while */

/* The carry batchedness that the body keeps: a fixpoint from the inputs. */
static bool carry_fixpoint(bt_call *c, const ft_jaxpr *body, int nconst, const bool *const_b,
                           int nxs, const bool *xs_b, int nc, bool *carry_b) {
  int n = nconst + nc + nxs;
  bool *in_b = bools(c->t, n), *ob = bools(c->t, body->n_out);
  if (!in_b || !ob) return false;
  ft_arena *tmp = ft_arena_new();
  if (!tmp) return tx_nomem(c->t), false;
  for (int iter = 0; iter <= nc; iter++) {
    memcpy(in_b, const_b, sizeof(bool) * (size_t)nconst);
    memcpy(in_b + nconst, carry_b, sizeof(bool) * (size_t)nc);
    if (nxs) memcpy(in_b + nconst + nc, xs_b, sizeof(bool) * (size_t)nxs);
    if (!bt_batch_jaxpr(c->s->ctx, tmp, body, c->s->size, in_b, NULL, ob)) {
      ft_arena_free(tmp);
      return sub_failed(c);
    }
    bool changed = false;
    for (int k = 0; k < nc; k++)
      if (ob[k] && !carry_b[k]) carry_b[k] = changed = true;
    if (!changed) break;
  }
  ft_arena_free(tmp);
  return true;
}

/* A batched predicate: the loop runs while any lane runs; the body
 * recomputes each lane's predicate and keeps finished lanes' carry. */
static bool while_any(bt_call *c, const ft_jaxpr *cj, const ft_jaxpr *bj, int cn, int bn,
                      ft_var **ops, const bool *in_b) {
  tx *t = c->t;
  int nc = c->n_out;
  ft_jaxpr *cj2 = ft_jaxpr_new(t->a), *bj2 = ft_jaxpr_new(t->a);
  ft_var **cin = vars(t, cn + nc), **bin = vars(t, cn + bn + nc), **tmp = vars(t, cn + bn + nc);
  ft_var **bout = vars(t, nc), **nb = vars(t, nc);
  int *bd = ft_arena_alloc(t->a, sizeof(int) * (size_t)(cn + bn + 2 * nc + 2));
  if (!cj2 || !bj2 || !cin || !bin || !tmp || !bout || !nb || !bd) return tx_nomem(t), false;
  /* cond': any lane's predicate */
  tx t1;
  tx_init(&t1, c->s->ctx, cj2, "vmap");
  for (int i = 0; i < cn + nc; i++) {
    int src = i < cn ? i : cn + bn + (i - cn);
    if (!(cin[i] = ft_var_new(t->a, &ops[src]->aval))) return tx_nomem(t), false;
    bd[i] = in_b[src] ? 0 : BT_NOT_MAPPED;
  }
  ft_var *pred;
  int pbd;
  if (!inline_batched(c, &t1, cj, cin, bd, &pred, &pbd)) return sub_failed(c);
  int64_t ax0 = 0;
  ft_var *pr = bt_match(&t1, pred, pbd, 0, c->s->size);
  ft_pval *rps = tx_params(&t1, FT_P_REDUCE_OR);
  if (rps) pset(FT_P_REDUCE_OR, rps, "axes", ft_pv_ints(t->a, 1, &ax0));
  ft_var *anyv = rps && pr ? tx_emit(&t1, FT_P_REDUCE_OR, rps, 1, &pr) : NULL;
  if (!anyv || !ft_jaxpr_set_vars(cj2, 0, NULL, cn + nc, cin, 1, &anyv)) return sub_failed(c);
  /* body': [cond consts, body consts, carry] */
  tx t2;
  tx_init(&t2, c->s->ctx, bj2, "vmap");
  for (int i = 0; i < cn + bn + nc; i++)
    if (!(bin[i] = ft_var_new(t->a, &ops[i]->aval))) return tx_nomem(t), false;
  for (int i = 0; i < cn; i++) tmp[i] = bin[i], bd[i] = in_b[i] ? 0 : BT_NOT_MAPPED;
  for (int i = 0; i < nc; i++) tmp[cn + i] = bin[cn + bn + i], bd[cn + i] = 0;
  if (!inline_batched(c, &t2, cj, tmp, bd, &pred, &pbd)) return sub_failed(c);
  pred = bt_match(&t2, pred, pbd, 0, c->s->size);
  for (int i = 0; i < bn; i++) tmp[i] = bin[cn + i], bd[i] = in_b[cn + i] ? 0 : BT_NOT_MAPPED;
  for (int i = 0; i < nc; i++) tmp[bn + i] = bin[cn + bn + i], bd[bn + i] = 0;
  int *obd = bd + bn + nc;
  if (!inline_batched(c, &t2, bj, tmp, bd, nb, obd)) return sub_failed(c);
  for (int k = 0; k < nc; k++) {
    ft_var *old = bin[cn + bn + k], *p = pred;
    ft_var *nw = bt_match(&t2, nb[k], obd[k], 0, c->s->size);
    if (old->aval.rank > 1) p = tx_bcast(&t2, pred, old->aval.rank, old->aval.dims, &ax0);
    bout[k] = tx_select(&t2, p, old, nw);
  }
  if (t2.failed || !ft_jaxpr_set_vars(bj2, 0, NULL, cn + bn + nc, bin, nc, bout))
    return sub_failed(c);
  ft_pval *ps = ctl_params(c);
  ft_var **wops = vars(t, 2 * cn + bn + nc);
  if (!ps || !wops) return false;
  for (int i = 0; i < cn; i++) wops[i] = wops[cn + i] = ops[i];
  for (int i = 0; i < bn + nc; i++) wops[2 * cn + i] = ops[cn + i];
  pset(FT_P_WHILE, ps, "cond_jaxpr", ft_pv_jaxpr(cj2));
  pset(FT_P_WHILE, ps, "body_jaxpr", ft_pv_jaxpr(bj2));
  pset(FT_P_WHILE, ps, "cond_nconsts", ft_pv_int(cn));
  pset(FT_P_WHILE, ps, "body_nconsts", ft_pv_int(cn + bn));
  for (int k = 0; k < nc; k++) c->yb[k] = 0;
  return tx_emitn(t, FT_P_WHILE, ps, 2 * cn + bn + nc, wops, nc, c->y);
}

static bool batch_while(bt_call *c) {
  tx *t = c->t;
  const ft_jaxpr *cj = pget_jaxpr(FT_P_WHILE, c->e->params, "cond_jaxpr");
  const ft_jaxpr *bj = pget_jaxpr(FT_P_WHILE, c->e->params, "body_jaxpr");
  int cn = (int)pget_int(FT_P_WHILE, c->e->params, "cond_nconsts", -1);
  int bn = (int)pget_int(FT_P_WHILE, c->e->params, "body_nconsts", -1);
  int nc = c->n_out, n = c->n_in;
  if (!cj || !bj || cn < 0 || bn < 0 || cn + bn + nc != n)
    return tx_fail(t, FT_ERR_TYPE, "vmap: while: params do not fit the operands"), false;
  /* A predicate batched already (JAX's printout of a vmapped while_loop):
   * its lanes would have to lead the new batch axis too, which the rules
   * below do not arrange; fail closed rather than build an ill-typed loop. */
  if (cj->n_out == 1 && cj->outvars[0]->aval.rank > 0)
    return tx_fail(t, FT_ERR_UNSUPPORTED, "vmap: while: the predicate is batched already (cond_jaxpr "
                   "returns a bool array); vmap of such a loop is not supported"), false;
  bool *in_b = bools(t, n), *pb = bools(t, 1), *cin_b = bools(t, cn + nc);
  ft_var **ops = vars(t, n);
  if (!in_b || !pb || !cin_b || !ops) return false;
  for (int i = 0; i < n; i++) in_b[i] = c->xb[i] >= 0;
  if (!carry_fixpoint(c, bj, bn, in_b + cn, 0, NULL, nc, in_b + cn + bn)) return false;
  memcpy(cin_b, in_b, sizeof(bool) * (size_t)cn);
  memcpy(cin_b + cn, in_b + cn + bn, sizeof(bool) * (size_t)nc);
  ft_arena *tmp = ft_arena_new();
  if (!tmp) return tx_nomem(t), false;
  bool ok = bt_batch_jaxpr(c->s->ctx, tmp, cj, c->s->size, cin_b, NULL, pb) != NULL;
  ft_arena_free(tmp);
  if (!ok) return sub_failed(c);
  if (pb[0])
    for (int k = 0; k < nc; k++) in_b[cn + bn + k] = true;
  front_ops(c, 0, n, in_b, ops, in_b);
  if (pb[0]) return while_any(c, cj, bj, cn, bn, ops, in_b);
  memcpy(cin_b + cn, in_b + cn + bn, sizeof(bool) * (size_t)nc);
  ft_jaxpr *cj2 = bt_batch_jaxpr(c->s->ctx, t->a, cj, c->s->size, cin_b, NULL, pb);
  ft_jaxpr *bj2 = cj2 ? bt_batch_jaxpr(c->s->ctx, t->a, bj, c->s->size, in_b + cn,
                                       in_b + cn + bn, NULL)
                      : NULL;
  if (!bj2) return sub_failed(c);
  ft_pval *ps = ctl_params(c);
  if (!ps) return false;
  pset(FT_P_WHILE, ps, "cond_jaxpr", ft_pv_jaxpr(cj2));
  pset(FT_P_WHILE, ps, "body_jaxpr", ft_pv_jaxpr(bj2));
  for (int k = 0; k < nc; k++) c->yb[k] = in_b[cn + bn + k] ? 0 : BT_NOT_MAPPED;
  return tx_emitn(t, FT_P_WHILE, ps, n, ops, nc, c->y);
}

/* ------------------------------------------------------------------ scan */

static bool batch_scan(bt_call *c) {
  tx *t = c->t;
  const ft_jaxpr *j = pget_jaxpr(FT_P_SCAN, c->e->params, "jaxpr");
  int k0 = (int)pget_int(FT_P_SCAN, c->e->params, "num_consts", -1);
  int nc = (int)pget_int(FT_P_SCAN, c->e->params, "num_carry", -1);
  int n = c->n_in, nx = n - k0 - nc, ny = c->n_out - nc;
  if (!j || k0 < 0 || nc < 0 || nx < 0 || ny < 0 || j->n_in != n || j->n_out != c->n_out)
    return tx_fail(t, FT_ERR_TYPE, "vmap: scan: params do not fit the operands"), false;
  bool *in_b = bools(t, n), *force = bools(t, c->n_out), *ob = bools(t, c->n_out);
  ft_var **ops = vars(t, n);
  if (!in_b || !force || !ob || !ops) return false;
  for (int i = 0; i < n; i++) in_b[i] = c->xb[i] >= 0;
  if (!carry_fixpoint(c, j, k0, in_b, nx, in_b + k0 + nc, nc, in_b + k0)) return false;
  memcpy(force, in_b + k0, sizeof(bool) * (size_t)nc);
  ft_jaxpr *j2 = bt_batch_jaxpr(c->s->ctx, t->a, j, c->s->size, in_b, force, ob);
  if (!j2) return sub_failed(c);
  front_ops(c, 0, k0 + nc, in_b, ops, in_b);
  for (int i = k0 + nc; i < n; i++) /* xs: the scan walks axis 0, the batch goes to 1 */
    ops[i] = in_b[i] ? bt_moveaxis(t, c->x[i], c->xb[i], 1) : c->x[i];
  ft_pval *ps = ctl_params(c);
  if (!ps) return false;
  pset(FT_P_SCAN, ps, "jaxpr", ft_pv_jaxpr(j2));
  for (int k = 0; k < nc; k++) c->yb[k] = ob[k] ? 0 : BT_NOT_MAPPED;
  for (int k = nc; k < c->n_out; k++) c->yb[k] = ob[k] ? 1 : BT_NOT_MAPPED;
  return tx_emitn(t, FT_P_SCAN, ps, n, ops, c->n_out, c->y);
}

/* ------------------------------------------------------------- call-like */

static bool batch_call(bt_call *c, const char *pname) {
  tx *t = c->t;
  ft_prim p = c->e->prim;
  const ft_jaxpr *j = pget_jaxpr(p, c->e->params, pname);
  if (!j || j->n_in != c->n_in || j->n_out != c->n_out)
    return tx_fail(t, FT_ERR_TYPE, "vmap: %s: bad %s", ft_prim_get(p)->name, pname), false;
  bool *in_b = bools(t, c->n_in), *ob = bools(t, c->n_out);
  ft_var **ops = vars(t, c->n_in);
  if (!in_b || !ob || !ops) return false;
  front_ops(c, 0, c->n_in, NULL, ops, in_b);
  ft_jaxpr *j2 = bt_batch_jaxpr(c->s->ctx, t->a, j, c->s->size, in_b, NULL, ob);
  if (!j2) return sub_failed(c);
  ft_pval *ps = ctl_params(c);
  if (!ps) return false;
  pset(p, ps, pname, ft_pv_jaxpr(j2));
  for (int k = 0; k < c->n_out; k++) c->yb[k] = ob[k] ? 0 : BT_NOT_MAPPED;
  return tx_emitn(t, p, ps, c->n_in, ops, c->n_out, c->y);
}

/* issue 27: spec with an unsplit leading dimension (the batch axis). */
static ft_pval spec_front(tx *t, const ft_pval *spec) {
  size_t n = spec->s ? strlen(spec->s) : 0;
  char *r = ft_arena_alloc(t->a, n + 16);
  if (!r || n < 3) return tx_nomem(t), ft_pv_none();
  if (!strcmp(spec->s, "P()")) snprintf(r, n + 16, "P(None,)");
  else snprintf(r, n + 16, "P(None, %s", spec->s + 2);
  ft_pval v = *spec;
  v.s = r;
  return v;
}

static ft_pval specs_front(tx *t, const ft_pval *specs, const bool *b) {
  ft_pval r = ft_pv_tuple(t->a, specs->n);
  if (specs->n && r.tag != FT_PV_TUPLE) return tx_nomem(t), ft_pv_none();
  for (int i = 0; i < specs->n; i++) r.u.items[i] = b[i] ? spec_front(t, &specs->u.items[i]) : specs->u.items[i];
  return r;
}

/* shard_map: its body batched with the batch axis in front of every
 * batched input and output, which the specs leave unsplit (P(None, ...)). */
static bool batch_shard_map(bt_call *c) {
  tx *t = c->t;
  ft_prim p = c->e->prim;
  const ft_jaxpr *j = pget_jaxpr(p, c->e->params, "jaxpr");
  bool *in_b = bools(t, c->n_in), *ob = bools(t, c->n_out);
  ft_var **ops = vars(t, c->n_in);
  if (!in_b || !ob || !ops) return false;
  front_ops(c, 0, c->n_in, NULL, ops, in_b);
  ft_spmd_env saved; /* the body's shape rules see its mesh (all_to_all) */
  ft_spmd_env_enter(pget(p, c->e->params, "mesh"), &saved);
  ft_jaxpr *j2 = bt_batch_jaxpr(c->s->ctx, t->a, j, c->s->size, in_b, NULL, ob);
  ft_spmd_env_leave(&saved);
  if (!j2) return sub_failed(c);
  ft_pval *ps = ctl_params(c);
  if (!ps) return false;
  pset(p, ps, "jaxpr", ft_pv_jaxpr(j2));
  pset(p, ps, "in_specs", specs_front(t, pget(p, ps, "in_specs"), in_b));
  pset(p, ps, "out_specs", specs_front(t, pget(p, ps, "out_specs"), ob));
  if (t->failed) return false;
  for (int k = 0; k < c->n_out; k++) c->yb[k] = ob[k] ? 0 : BT_NOT_MAPPED;
  return tx_emitn(t, p, ps, c->n_in, ops, c->n_out, c->y);
}

/* custom_linear_solve (JAX's _linear_solve_batching_rule): which of x and
 * b are batched is found by fixpoint over the four jaxprs (solve and
 * vecmat give x from b, matvec and transpose_solve give b from x), so all
 * four agree; batched consts and b move to axis 0, an unbatched b the
 * fixpoint batches is broadcast, and x is batched at 0 where the batched
 * solve makes it so. Every jaxpr is batched by its own rules, so each
 * batch member computes what the unbatched solve computes. */
static bool batch_linear_solve(bt_call *c) {
  tx *t = c->t;
  ft_prim p = c->e->prim;
  const ft_pval *cl = pget(p, c->e->params, "const_lengths"), *js = pget(p, c->e->params, "jaxprs");
  if (!cl || !js || !ft_lstuple_ok(cl) || !ft_lstuple_ok(js))
    return tx_fail(t, FT_ERR_TYPE, "vmap: custom_linear_solve: bad const_lengths or jaxprs"), false;
  int64_t len[4], off[4], nc = 0;
  const ft_jaxpr *J[4];
  for (int i = 0; i < 4; i++) {
    len[i] = cl->u.items[i].tag == FT_PV_INT ? cl->u.items[i].u.i : -1;
    off[i] = nc, nc += len[i] < 0 ? 0 : len[i];
    J[i] = js->u.items[i].tag == FT_PV_JAXPR ? js->u.items[i].u.jaxpr : NULL;
  }
  int nb = c->n_in - (int)nc;
  bool fit = nb >= 1 && nb == c->n_out && J[0] && J[2];
  for (int i = 0; fit && i < 4; i++)
    fit = len[i] >= 0 && (!J[i] || (J[i]->n_in == len[i] + nb && J[i]->n_out == nb));
  if (!fit)
    return tx_fail(t, FT_ERR_TYPE, "vmap: custom_linear_solve: its jaxprs do not fit its %d operands and "
                   "%d results", c->n_in, c->n_out), false;
  bool *in = bools(t, c->n_in), *ob = bools(t, nb), *bb = bools(t, nb), *xb = bools(t, nb);
  bool *sx = bools(t, nb), *vx = bools(t, nb), *mb = bools(t, nb), *sb = bools(t, nb);
  bool *nx = bools(t, nb), *nbb = bools(t, nb);
  ft_var **ops = vars(t, c->n_in);
  if (!in || !ob || !bb || !xb || !sx || !vx || !mb || !sb || !nx || !nbb || !ops) return false;
  for (int k = 0; k < nb; k++) ob[k] = bb[k] = c->xb[nc + k] >= 0, xb[k] = false;
  ft_jaxpr *B[4] = {NULL, NULL, NULL, NULL};
  /* in[] for jaxpr i: its consts' batchedness, then v's */
#define CLS_IN(i, v)                                                                                     do {                                                                                                     for (int64_t q = 0; q < len[i]; q++) in[q] = c->xb[off[i] + q] >= 0;                                  for (int q = 0; q < nb; q++) in[len[i] + q] = (v)[q];                                                } while (0)
  bool fixed = false;
  for (int it = 0; it < 1 + 2 * nb && !fixed; it++) {
    CLS_IN(2, bb);
    if (!(B[2] = bt_batch_jaxpr(c->s->ctx, t->a, J[2], c->s->size, in, xb, sx))) return sub_failed(c);
    memcpy(nx, sx, sizeof(bool) * (size_t)nb);
    if (J[1]) {
      CLS_IN(1, bb);
      if (!(B[1] = bt_batch_jaxpr(c->s->ctx, t->a, J[1], c->s->size, in, bb, vx))) return sub_failed(c);
      for (int k = 0; k < nb; k++) nx[k] = nx[k] || vx[k];
    }
    CLS_IN(0, nx);
    if (!(B[0] = bt_batch_jaxpr(c->s->ctx, t->a, J[0], c->s->size, in, bb, mb))) return sub_failed(c);
    for (int k = 0; k < nb; k++) nbb[k] = mb[k] || ob[k];
    if (J[3]) {
      CLS_IN(3, nx);
      if (!(B[3] = bt_batch_jaxpr(c->s->ctx, t->a, J[3], c->s->size, in, nx, sb))) return sub_failed(c);
      for (int k = 0; k < nb; k++) nbb[k] = nbb[k] || sb[k];
    }
    fixed = !memcmp(nx, xb, sizeof(bool) * (size_t)nb) && !memcmp(nbb, bb, sizeof(bool) * (size_t)nb);
    memcpy(xb, nx, sizeof(bool) * (size_t)nb);
    memcpy(bb, nbb, sizeof(bool) * (size_t)nb);
  }
#undef CLS_IN
  if (!fixed)
    return tx_fail(t, FT_ERR_INTERNAL, "vmap: custom_linear_solve: the batched parts of x and b reach no fixpoint"),
           false;
  for (int64_t i = 0; i < nc; i++)
    ops[i] = c->xb[i] >= 0 ? bt_match(t, c->x[i], c->xb[i], 0, c->s->size) : c->x[i];
  for (int k = 0; k < nb; k++)
    ops[nc + k] = bb[k] ? bt_match(t, c->x[nc + k], c->xb[nc + k], 0, c->s->size) : c->x[nc + k];
  ft_pval *ps = ctl_params(c);
  ft_pval nj = ft_pv_tuple(t->a, 4);
  if (!ps || !nj.u.items) return tx_nomem(t), false;
  nj.list = js->list;
  for (int i = 0; i < 4; i++) nj.u.items[i] = B[i] ? ft_pv_jaxpr(B[i]) : js->u.items[i];
  pset(p, ps, "jaxprs", nj);
  for (int k = 0; k < nb; k++) c->yb[k] = sx[k] ? 0 : BT_NOT_MAPPED;
  return tx_emitn(t, p, ps, c->n_in, ops, c->n_out, c->y);
}

/* CustomRoot: JAX's CustomRoot.batch. solve_jaxpr batched in its operands;
 * when any operand (of the four groups) is batched, the root comes out
 * batched at axis 0 (JAX's leading_axis_spec). JAX leaves an auxiliary
 * output unbatched when solve gives it so; here every output is forced
 * batched then: the same values, broadcast. f's and tangent_solve's consts
 * are carried with their batch axis in front (only a derivative uses them). */
static bool batch_custom_root(bt_call *c) {
  tx *t = c->t;
  ft_prim p = c->e->prim;
  const ft_jaxpr *j = pget_jaxpr(p, c->e->params, "solve_jaxpr");
  if (!j || j->n_in > c->n_in || j->n_out != c->n_out)
    return tx_fail(t, FT_ERR_TYPE, "vmap: CustomRoot: solve_jaxpr does not fit its %d operands and %d results",
                   c->n_in, c->n_out), false;
  bool *in_b = bools(t, c->n_in), *ob = bools(t, c->n_out), *force = bools(t, c->n_out);
  ft_var **ops = vars(t, c->n_in);
  if (!in_b || !ob || !force || !ops) return false;
  front_ops(c, 0, c->n_in, NULL, ops, in_b);
  bool any = false;
  for (int i = 0; i < c->n_in; i++) any = any || in_b[i];
  for (int k = 0; k < c->n_out; k++) force[k] = any;
  ft_jaxpr *j2 = bt_batch_jaxpr(c->s->ctx, t->a, j, c->s->size, in_b, force, ob);
  if (!j2) return sub_failed(c);
  ft_pval *ps = ctl_params(c);
  if (!ps) return false;
  pset(p, ps, "solve_jaxpr", ft_pv_jaxpr(j2));
  for (int k = 0; k < c->n_out; k++) c->yb[k] = ob[k] ? 0 : BT_NOT_MAPPED;
  return tx_emitn(t, p, ps, c->n_in, ops, c->n_out, c->y);
}

bool bt_control(bt_call *c) {
  if (bt_custom_needed(c->e)) return bt_custom(c); /* custom.c: rules batched with the call */
  switch (c->e->prim) {
  case FT_P_COND: return batch_cond(c);
  case FT_P_WHILE: return batch_while(c);
  case FT_P_SCAN: return batch_scan(c);
  case FT_P_JIT: case FT_P_REMAT2: return batch_call(c, "jaxpr");
  case FT_P_SHARD_MAP: return batch_shard_map(c);
  case FT_P_CUSTOM_JVP_CALL: case FT_P_CUSTOM_VJP_CALL: case FT_P_EVAL_JAXPR: return batch_call(c, "call_jaxpr");
  case FT_P_CUSTOM_LINEAR_SOLVE: return batch_linear_solve(c);
  case FT_P_CUSTOM_ROOT: return batch_custom_root(c);
  default: {
    const char *why = ft_batch_rule_status(c->e->prim);
    if (why) tx_fail(c->t, FT_ERR_UNSUPPORTED, "vmap of %s: %s", ft_prim_get(c->e->prim)->name, why);
    else tx_fail(c->t, FT_ERR_INTERNAL, "vmap: %s is not control flow", ft_prim_get(c->e->prim)->name);
    return false;
  }
  }
}
