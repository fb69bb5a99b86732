/* src/transforms/custom.c: the user's differentiation rules (JAX's
 * custom_derivatives), when they are jaxprs (C tracing: ft_custom_jvp_call,
 * ft_custom_vjp_call). Rules JAX printed as Python functions cannot run
 * here: a custom_jvp_call's is refused unless it is a known JAX library rule
 * or FT_CUSTOM_JVP_PRIMAL opts in to differentiating call_jaxpr
 * (docs/autodiff.md).
 *
 *  custom_jvp_call  the jvp rule is inlined: its primal outputs and tangents
 *                   are the equation's. Higher orders differentiate it.
 *  custom_vjp_call  as JAX's process_custom_vjp_call: fwd is inlined for the
 *                   outputs and residuals, and the tangents come from one
 *                   custom_lin equation, linear in the tangents, carrying
 *                   bwd. Partial evaluation puts it on the tangent side
 *                   (it reads tangents); its transpose calls bwd.
 *  custom_lin       no JVP, no forward evaluation: it only exists to be
 *                   transposed.
 *  vmap             calls with jaxpr rules and custom_lin are batched with
 *                   every operand at axis 0, the function and every rule
 *                   batched alike, so the rules keep fitting the call. */
#include <math.h>
#include <string.h>

#include "custom.h"

/* ---------------------------------------------------------- inlining */

/* Copies the equations of j into t with its inputs bound to in; writes its
 * outputs to out. Sub-jaxprs of the equations are deep-copied. */
static bool inline_jaxpr(tx *t, const ft_jaxpr *j, ft_var *const *in, ft_var **out) {
  if (j->n_const)
    return tx_fail(t, FT_ERR_UNSUPPORTED, "%s: a custom rule with constvars cannot be inlined",
                   t->what), false;
  int cap = 1;
  for (int k = 0; k < j->n_eqn; k++) {
    if (j->eqns[k].n_in > cap) cap = j->eqns[k].n_in;
    if (j->eqns[k].n_out > cap) cap = j->eqns[k].n_out;
  }
  vmap m;
  ft_var **bi = malloc(sizeof(ft_var *) * (size_t)(2 * cap)), **bo = bi + cap;
  if (!bi || !vmap_init(&m, ft_arena_num_var_ids(j->arena) + 1)) {
    free(bi);
    return tx_nomem(t), false;
  }
  bool ok = true;
  for (int i = 0; ok && i < j->n_in; i++) ok = vmap_set(&m, j->invars[i], in[i]);
  for (int k = 0; ok && k < j->n_eqn; k++) {
    const ft_eqn *e = &j->eqns[k];
    for (int i = 0; ok && i < e->n_in; i++)
      ok = (bi[i] = e->in[i]->kind == FT_LIT ? lit_clone(t->a, e->in[i]) : vmap_get(&m, e->in[i])) != NULL;
    for (int o = 0; ok && o < e->n_out; o++) {
      const ft_var *v = e->out[o];
      bo[o] = v->kind == FT_DROP ? ft_drop_new(t->a, &v->aval) : ft_var_new(t->a, &v->aval);
      ok = bo[o] && (v->kind == FT_DROP || vmap_set(&m, v, bo[o]));
    }
    const ft_pval *ps = ok ? params_clone(t->a, e->prim, e->params) : NULL;
    ok = ps && tx_push(t, e->prim, ps, e->n_in, bi, e->n_out, bo);
  }
  for (int k = 0; ok && k < j->n_out; k++) {
    ft_var *v = j->outvars[k];
    ok = (out[k] = v->kind == FT_LIT ? lit_clone(t->a, v) : vmap_get(&m, v)) != NULL;
  }
  vmap_free(&m);
  free(bi);
  if (!ok && !t->failed) tx_nomem(t);
  return ok;
}

/* ------------------------------------------------------------- JVP */

/* The rules say nothing about the values the function closes over (the
 * num_consts leading operands); JAX raises CustomJVPException /
 * CustomVJPException when one of them has a tangent, and so do we. */
static bool consts_have_no_tangent(jvp_call *c, int nc) {
  for (int i = 0; i < nc; i++)
    if (c->dx[i] && var_inexact(c->x[i])) {
      const ft_pval *nm = pget(c->e->prim, c->params, "name");
      tx_fail(c->t, FT_ERR_UNSUPPORTED,
              "%s of %s '%s': differentiating with respect to a value the function closes over "
              "(operand %d); the custom rule only covers its explicit arguments, as in JAX: pass "
              "the value as an argument",
              c->t->what, ft_prim_get(c->e->prim)->name, nm && nm->s ? nm->s : "?", i);
      return false;
    }
  return true;
}

/* custom_jvp_call with a jaxpr rule [operands, tangents] -> [outs, tangents]. */
static bool jvp_with_rule(jvp_call *c, const ft_jaxpr *rule, int nc) {
  tx *t = c->t;
  int n = c->e->n_in, no = c->e->n_out;
  if (rule->n_in != 2 * n || rule->n_out != 2 * no)
    return tx_fail(t, FT_ERR_TYPE, "jvp of custom_jvp_call: the rule takes %d inputs and returns %d "
                   "outputs; expected %d and %d", rule->n_in, rule->n_out, 2 * n, 2 * no), false;
  if (!consts_have_no_tangent(c, nc)) return false;
  ft_var **in = malloc(sizeof(ft_var *) * (size_t)(2 * n + 2 * no + 2));
  if (!in) return tx_nomem(t), false;
  ft_var **out = in + 2 * n;
  for (int i = 0; i < n; i++) {
    in[i] = c->x[i];
    in[n + i] = c->dx[i] ? c->dx[i] : tx_zeros(t, &rule->invars[n + i]->aval);
  }
  bool ok = !t->failed && inline_jaxpr(t, rule, in, out);
  for (int k = 0; ok && k < no; k++) {
    c->y[k] = out[k];
    c->dy[k] = var_inexact(out[k]) ? out[no + k] : NULL;
  }
  free(in);
  return ok;
}

/* custom_vjp_call with jaxpr fwd and bwd: outputs and residuals from fwd,
 * tangents from custom_lin[bwd, num_res = consts + residuals]. */
static bool jvp_with_fwd_bwd(jvp_call *c, const ft_jaxpr *fwd, ft_jaxpr *bwd, int nc) {
  tx *t = c->t;
  int n = c->e->n_in, m = c->e->n_out, r = fwd->n_out - m;
  if (fwd->n_in != n || r < 0 || bwd->n_in != nc + r + m || bwd->n_out != n - nc)
    return tx_fail(t, FT_ERR_TYPE, "jvp of custom_vjp_call: fwd and bwd do not fit the call"), false;
  if (!consts_have_no_tangent(c, nc)) return false;
  ft_var **fo = malloc(sizeof(ft_var *) * (size_t)(fwd->n_out + n + r + m + 1));
  if (!fo) return tx_nomem(t), false;
  ft_var **lin = fo + fwd->n_out, **dy = lin + n + r;
  bool ok = inline_jaxpr(t, fwd, c->x, fo);
  int k = 0;
  for (int i = 0; ok && i < nc; i++) lin[k++] = c->x[i];
  for (int i = 0; ok && i < r; i++) lin[k++] = fo[m + i];
  for (int i = nc; ok && i < n; i++) lin[k++] = c->dx[i] ? c->dx[i] : tx_zeros(t, &c->x[i]->aval);
  ft_pval *ps = ok ? tx_params(t, FT_P_CUSTOM_LIN) : NULL;
  if (ps) {
    pset(FT_P_CUSTOM_LIN, ps, "bwd", ft_pv_jaxpr(bwd));
    pset(FT_P_CUSTOM_LIN, ps, "num_res", ft_pv_int(nc + r));
  }
  ok = ps && !t->failed && tx_emitn(t, FT_P_CUSTOM_LIN, ps, n + r, lin, m, dy);
  for (int o = 0; ok && o < m; o++) {
    c->y[o] = fo[o];
    c->dy[o] = var_inexact(fo[o]) ? dy[o] : NULL;
  }
  free(fo);
  return ok;
}

/* ------------------------------------- rules printed only as names */

/* JAX prints a custom_jvp rule that is a Python function as its name
 * (`jvp=jvp`): the rule itself is not in the text. Differentiating
 * call_jaxpr instead is wrong wherever the rule is not the plain
 * derivative (a `where` giving 0 at a singular point; relu's 0 at x = 0
 * where max's tie rule gives 0.5), so the default refuses. Known JAX
 * library functions, recognised by (name, rule name) and the structure of
 * call_jaxpr, get JAX's exact rule; FT_CUSTOM_JVP_PRIMAL opts in to
 * differentiating call_jaxpr. docs/autodiff.md. */

static const char *pstr(ft_prim p, const ft_pval *ps, const char *key) {
  const ft_pval *v = pget(p, ps, key);
  return v && v->tag == FT_PV_STR && v->s ? v->s : NULL;
}

/* j with one input and one output, unwrapped from a jit whose body is the
 * whole jaxpr (`custom_jvp_call[call_jaxpr={ jit[jaxpr={ ... }] x }]`). */
static const ft_jaxpr *unwrap_jit(const ft_jaxpr *j) {
  for (int depth = 0; j && depth < 4; depth++) {
    if (j->n_const || j->n_in != 1 || j->n_out != 1) return NULL;
    if (j->n_eqn != 1 || j->eqns[0].prim != FT_P_JIT) return j;
    const ft_eqn *e = &j->eqns[0];
    if (e->n_in != 1 || e->n_out != 1 || e->in[0] != j->invars[0] || e->out[0] != j->outvars[0])
      return j;
    j = pget_jaxpr(FT_P_JIT, e->params, "jaxpr");
  }
  return NULL;
}

/* e is `p a lit` with a the variable v and lit the float literal val. */
static bool is_op_lit(const ft_eqn *e, ft_prim p, const ft_var *v, double val) {
  return e->prim == p && e->n_in == 2 && e->n_out == 1 && e->in[0] == v &&
         e->in[1]->kind == FT_LIT && ft_dtype_is_float(e->in[1]->aval.dtype) &&
         e->in[1]->lit.f == val && e->out[0]->kind == FT_VAR;
}

/* call is JAX 0.12's body of lax.logaddexp for real floats
 * (jax/_src/lax/other.py): max, sub, ne, add, abs, neg, exp, log1p, add,
 * select_n, wired as JAX traces it. */
static bool is_logaddexp_body(const ft_jaxpr *b) {
  static const ft_prim seq[] = {FT_P_MAX, FT_P_SUB, FT_P_NE,    FT_P_ADD, FT_P_ABS,
                                FT_P_NEG, FT_P_EXP, FT_P_LOG1P, FT_P_ADD, FT_P_SELECT_N};
  if (!b || b->n_const || b->n_in != 2 || b->n_out != 1 || b->n_eqn != 10) return false;
  for (int i = 0; i < 10; i++)
    if (b->eqns[i].prim != seq[i] || b->eqns[i].n_out != 1) return false;
  const ft_eqn *q = b->eqns;
  const ft_var *x1 = b->invars[0], *x2 = b->invars[1];
  return q[0].in[0] == x1 && q[0].in[1] == x2 && q[1].in[0] == x1 && q[1].in[1] == x2 &&
         q[2].in[0] == q[1].out[0] && q[2].in[1] == q[1].out[0] && q[3].in[0] == x1 &&
         q[3].in[1] == x2 && q[4].in[0] == q[1].out[0] && q[5].in[0] == q[4].out[0] &&
         q[6].in[0] == q[5].out[0] && q[7].in[0] == q[6].out[0] && q[8].in[0] == q[0].out[0] &&
         q[8].in[1] == q[7].out[0] && q[9].in[0] == q[2].out[0] && q[9].in[1] == q[8].out[0] &&
         q[9].in[2] == q[3].out[0] && b->outvars[0] == q[9].out[0];
}

/* The JAX library functions whose rule is known exactly (jax.nn.relu,
 * jax.nn.relu6: jax/_src/nn/functions.py; jnp.logaddexp, and so softplus
 * and log_sigmoid: jax/_src/lax/other.py). 0: none. */
enum { LIB_NONE, LIB_RELU, LIB_RELU6, LIB_LOGADDEXP };
static int known_library_rule(const ft_eqn *e, const ft_jaxpr *call) {
  const char *name = pstr(FT_P_CUSTOM_JVP_CALL, e->params, "name");
  const char *jvp = pstr(FT_P_CUSTOM_JVP_CALL, e->params, "jvp");
  if (name && jvp && !strcmp(name, "logaddexp") && !strcmp(jvp, "_logaddexp_jvp") && e->n_in == 2 &&
      e->n_out == 1 && ft_dtype_is_float(e->out[0]->aval.dtype) && !ft_dtype_is_complex(e->out[0]->aval.dtype) &&
      is_logaddexp_body(call))
    return LIB_LOGADDEXP;
  if (!name || !jvp || strcmp(jvp, "jvp") || e->n_in != 1 || e->n_out != 1 ||
      !ft_dtype_is_float(e->in[0]->aval.dtype))
    return LIB_NONE;
  const ft_jaxpr *b = unwrap_jit(call);
  if (!b || b->invars[0]->aval.dtype != e->in[0]->aval.dtype) return LIB_NONE;
  const ft_var *x = b->invars[0];
  if (!strcmp(name, "relu") && b->n_eqn == 1 && is_op_lit(&b->eqns[0], FT_P_MAX, x, 0.0) &&
      b->outvars[0] == b->eqns[0].out[0])
    return LIB_RELU;
  if (!strcmp(name, "relu6") && b->n_eqn == 2 && is_op_lit(&b->eqns[0], FT_P_MAX, x, 0.0) &&
      is_op_lit(&b->eqns[1], FT_P_MIN, b->eqns[0].out[0], 6.0) &&
      b->outvars[0] == b->eqns[1].out[0])
    return LIB_RELU6;
  return LIB_NONE;
}

static bool jvp_named_rule(jvp_state *s, jvp_call *c, const ft_jaxpr *call, int nc) {
  tx *t = c->t;
  int lib = known_library_rule(c->e, call);
  if (lib == LIB_LOGADDEXP) {
    /* JAX's _logaddexp_jvp: t1 exp(r(x1) - r(y)) + t2 exp(r(x2) - r(y)),
     * r(v) = select(v == +inf, 0, v); a zero tangent is instantiated as
     * JAX does (symbolic_zeros=False), so 0 * inf gives its NaN too. */
    ft_var *none[2] = {NULL, NULL}, *dy0[1] = {NULL};
    if (!jvp_into(s, t, call, c->x, none, c->y, dy0)) return false;
    c->dy[0] = NULL;
    if (!c->dx[0] && !c->dx[1]) return true;
    ft_var *y = c->y[0], *acc = NULL;
    ft_dtype dt = y->aval.dtype;
    ft_var *inf = tx_lit(t, dt, INFINITY);
    ft_var *ry = tx_select(t, tx_binop(t, FT_P_EQ, y, inf), y, tx_zeros(t, &y->aval));
    for (int k = 0; k < 2; k++) {
      ft_var *x = c->x[k];
      ft_var *dx = c->dx[k] ? c->dx[k] : tx_zeros(t, &x->aval);
      ft_var *rx = tx_select(t, tx_binop(t, FT_P_EQ, x, inf), x, tx_zeros(t, &x->aval));
      ft_var *term = tx_binop(t, FT_P_MUL, dx, tx_unop(t, FT_P_EXP, tx_binop(t, FT_P_SUB, rx, ry)));
      acc = k ? tx_binop(t, FT_P_ADD, acc, term) : term;
    }
    c->dy[0] = acc;
    return c->dy[0] != NULL && !t->failed;
  }
  if (lib != LIB_NONE) {
    /* The primal is call_jaxpr's; the tangent JAX's rule:
     * relu: select(x > 0, g, 0); relu6: select((x > 0) & (x < 6), g, 0). */
    ft_var *none[1] = {NULL}, *dy0[1] = {NULL};
    if (!jvp_into(s, t, call, c->x, none, c->y, dy0)) return false;
    c->dy[0] = NULL;
    if (!c->dx[0]) return true;
    ft_var *x = c->x[0];
    ft_dtype dt = x->aval.dtype;
    ft_var *pred = tx_binop(t, FT_P_GT, x, tx_lit(t, dt, 0.0));
    if (lib == LIB_RELU6)
      pred = tx_binop(t, FT_P_AND, pred, tx_binop(t, FT_P_LT, x, tx_lit(t, dt, 6.0)));
    ft_var *zero = pred ? tx_zeros(t, &c->dx[0]->aval) : NULL;
    c->dy[0] = zero ? tx_select(t, pred, zero, c->dx[0]) : NULL;
    return c->dy[0] != NULL && !t->failed;
  }
  if (s->ctx && s->ctx->opts.custom_jvp == FT_CUSTOM_JVP_PRIMAL) {
    (void)nc;
    return jvp_into(s, t, call, c->x, c->dx, c->y, c->dy);
  }
  const char *name = pstr(FT_P_CUSTOM_JVP_CALL, c->params, "name");
  const char *jvp = pstr(FT_P_CUSTOM_JVP_CALL, c->params, "jvp");
  return tx_fail(t, FT_ERR_UNSUPPORTED,
                 "%s of custom_jvp_call '%s': its jvp rule is only a name in the printout "
                 "(jvp=%s), a Python function whose equations JAX did not print; differentiating "
                 "call_jaxpr instead would be wrong wherever the rule is not the plain derivative. "
                 "Pass JAX's own derivative printout (jax.make_jaxpr(jax.grad(f)) or of jax.jvp, "
                 "which contains the rule's equations), or opt in to differentiating call_jaxpr "
                 "(ft_ctx_options.custom_jvp = FT_CUSTOM_JVP_PRIMAL, ftc --custom-jvp=primal, "
                 "FT_CUSTOM_JVP=primal for the Python package) only if the rule is the plain derivative",
                 t->what, name ? name : "?", jvp ? jvp : "None"), false;
}

bool jvp_custom_call(jvp_state *s, jvp_call *c) {
  tx *t = c->t;
  ft_prim p = c->e->prim;
  const ft_jaxpr *call = pget_jaxpr(p, c->e->params, "call_jaxpr");
  if (!call) return tx_fail(t, FT_ERR_TYPE, "jvp of %s: no call_jaxpr", ft_prim_get(p)->name), false;
  int nc = (int)pget_int(p, c->params, "num_consts", 0);
  if (nc < 0 || nc > c->e->n_in)
    return tx_fail(t, FT_ERR_TYPE, "jvp of %s: num_consts does not fit", ft_prim_get(p)->name), false;
  if (p == FT_P_CUSTOM_JVP_CALL) {
    const ft_jaxpr *rule = pget_jaxpr(p, c->e->params, "jvp");
    if (rule) return jvp_with_rule(c, rule, nc);
    return jvp_named_rule(s, c, call, nc);
  } else {
    /* fwd is read (inlined); bwd is kept in the result, so it is the
     * copy in the target arena. */
    const ft_jaxpr *fwd = pget_jaxpr(p, c->e->params, "fwd");
    ft_jaxpr *bwd = pget_jaxpr(p, c->params, "bwd");
    if (fwd && bwd) return jvp_with_fwd_bwd(c, fwd, bwd, nc);
  }
  return jvp_into(s, t, call, c->x, c->dx, c->y, c->dy);
}

bool jvp_custom_lin(jvp_call *c) {
  return tx_fail(c->t, FT_ERR_UNSUPPORTED, "%s: %s", c->t->what, FT_CUSTOM_LIN_NO_JVP), false;
}

/* ------------------------------------------------------- transpose */

bool tr_custom_lin(tr_state *s, tr_call *c) {
  (void)s;
  tx *t = c->t;
  const ft_eqn *e = c->e;
  int nr = (int)pget_int(FT_P_CUSTOM_LIN, c->params, "num_res", -1), n = e->n_in, m = e->n_out;
  const ft_jaxpr *bwd = pget_jaxpr(FT_P_CUSTOM_LIN, e->params, "bwd");
  if (!bwd || nr < 0 || nr > n || bwd->n_in != nr + m || bwd->n_out != n - nr)
    return tx_fail(t, FT_ERR_TYPE, "transpose of custom_lin: bwd does not fit the equation"), false;
  for (int i = 0; i < nr; i++)
    if (c->lin[i])
      return tx_fail(t, FT_ERR_UNSUPPORTED, "transpose of custom_lin: residual %d is linear", i), false;
  ft_var **in = malloc(sizeof(ft_var *) * (size_t)(nr + m + (n - nr) + 1));
  if (!in) return tx_nomem(t), false;
  ft_var **out = in + nr + m;
  for (int i = 0; i < nr; i++) in[i] = c->x[i];
  for (int k = 0; k < m; k++) in[nr + k] = c->ct[k] ? c->ct[k] : tx_zeros(t, &bwd->invars[nr + k]->aval);
  bool ok = !t->failed && inline_jaxpr(t, bwd, in, out);
  for (int i = 0; i < n; i++) c->ct_x[i] = NULL;
  for (int i = nr; ok && i < n; i++)
    if (c->lin[i] && var_inexact(e->in[i])) c->ct_x[i] = out[i - nr];
  free(in);
  return ok;
}

/* ----------------------------------------------------------- vmap */

static bool is_jaxpr(const ft_pval *v) { return v && v->tag == FT_PV_JAXPR && v->u.jaxpr; }

bool bt_custom_needed(const ft_eqn *e) {
  ft_prim p = e->prim;
  if (p == FT_P_CUSTOM_LIN) return true;
  if (p == FT_P_CUSTOM_JVP_CALL) return is_jaxpr(pget(p, e->params, "jvp"));
  if (p == FT_P_CUSTOM_VJP_CALL)
    return is_jaxpr(pget(p, e->params, "fwd")) || is_jaxpr(pget(p, e->params, "bwd"));
  return false;
}

/* j batched with every input at axis 0 and every output forced to axis 0. */
static ft_jaxpr *batch_all(bt_call *c, const ft_jaxpr *j) {
  tx *t = c->t;
  int n = j->n_in > j->n_out ? j->n_in : j->n_out;
  bool *all = malloc((size_t)n + 1);
  if (!all) return tx_nomem(t);
  memset(all, 1, (size_t)n + 1);
  ft_jaxpr *b = bt_batch_jaxpr(c->s->ctx, t->a, j, c->s->size, all, all, NULL);
  free(all);
  if (!b) t->failed = true; /* the message is on ctx */
  return b;
}

bool bt_custom(bt_call *c) {
  tx *t = c->t;
  ft_prim p = c->e->prim;
  const ft_prim_info *pi = ft_prim_get(p);
  ft_pval *ps = tx_params(t, p);
  ft_var **ops = malloc(sizeof(ft_var *) * (size_t)(c->n_in + 1));
  if (!ps || !ops) {
    free(ops);
    return tx_nomem(t), false;
  }
  bool ok = true;
  for (int k = 0; ok && k < pi->n_params; k++) {
    const ft_pval *v = &c->e->params[k]; /* control flow: c->params is not set */
    if (v->tag != FT_PV_JAXPR) {
      ps[k] = pval_clone(t->a, v, &ok);
      if (!ok) tx_nomem(t);
    } else {
      ft_jaxpr *b = batch_all(c, v->u.jaxpr);
      if (b) ps[k] = ft_pv_jaxpr(b);
      ok = b != NULL;
    }
  }
  for (int i = 0; ok && i < c->n_in; i++)
    ok = (ops[i] = bt_match(t, c->x[i], c->xb[i], 0, c->s->size)) != NULL;
  ok = ok && tx_emitn(t, p, ps, c->n_in, ops, c->n_out, c->y);
  for (int k = 0; ok && k < c->n_out; k++) c->yb[k] = 0;
  free(ops);
  return ok;
}
