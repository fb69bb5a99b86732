/* src/runtime/interp_control.c: control flow — cond (index clamped into
 * range, as XLA does), while, scan (forward and reverse), and the call-like
 * primitives jit/pjit, custom_jvp_call and custom_vjp_call, which evaluate
 * their inner jaxpr (their rules only matter to transforms). custom_lin
 * refuses to run: it only exists to be transposed. */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

static const ft_jaxpr *param_jaxpr(const ft_eqn *e, const char *name) {
  const ft_pval *v = ft_eqn_param(e, name);
  return v->tag == FT_PV_JAXPR ? v->u.jaxpr : NULL;
}

static void free_all(ft_array **a, int n) {
  for (int i = 0; i < n; i++) ft_array_free(a[i]), a[i] = NULL;
}

/* Calls sub-jaxpr j on args; its outputs must match e's outputs from
 * out_first on (count of them). */
static ft_status call(ft_ctx *ctx, const ft_jaxpr *j, int n_args, ft_array *const *args,
                      ft_array **outs) {
  if (!j) return ft_set_error(ctx, FT_ERR_TYPE, "missing sub-jaxpr");
  if (j->n_const && !j->const_data && n_args == j->n_in)
    return ft_set_error(ctx, FT_ERR_INVALID_ARG,
                        "eval: a sub-jaxpr closes over %d constants whose values the text does "
                        "not carry (JAX prints a closed jaxpr's constvars, not their values); bind "
                        "them with ft_jaxpr_bind_sub_consts", j->n_const);
  return ft_interp_jaxpr(ctx, j, n_args, (const ft_array *const *)args, outs);
}

static ft_status cond_eval(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  const ft_pval *br = ft_eqn_param(e, "branches");
  if (br->tag != FT_PV_TUPLE || br->n < 1 || e->n_in < 1)
    return ft_set_error(ctx, FT_ERR_TYPE, "cond: bad branches");
  int64_t idx = ft_get_i64(in[0], 0);
  if (ft_dtype_is_unsigned(in[0]->aval.dtype) && idx < 0) idx = INT64_MAX;
  idx = idx < 0 ? 0 : idx >= br->n ? br->n - 1 : idx;
  const ft_pval *b = &br->u.items[idx];
  if (b->tag != FT_PV_JAXPR) return ft_set_error(ctx, FT_ERR_TYPE, "cond: bad branch");
  if (b->u.jaxpr->n_out != e->n_out)
    return ft_set_error(ctx, FT_ERR_TYPE, "cond: branch %lld has %d outputs, expected %d",
                        (long long)idx, b->u.jaxpr->n_out, e->n_out);
  return call(ctx, b->u.jaxpr, e->n_in - 1, in + 1, out);
}

/* A batched predicate (vmap of a while_loop whose predicate depends on the
 * mapped values; JAX prints cond_jaxpr returning bool[B...]): the loop runs
 * while any lane is true (XLA's lowering reduces it with or). A scalar one
 * is its own value. */
static bool any_lane(const ft_array *pred) {
  int64_t n = ft_array_size(pred);
  for (int64_t i = 0; i < n; i++)
    if (ft_get_i64(pred, i)) return true;
  return false;
}

/* ...and a lane whose predicate was false keeps its carry: next = select(
 * pred broadcast along the carry's leading axes, next, carry), as JAX's
 * while lowering does with the predicate of the carry the body ran on. The
 * verifier makes pred's shape a prefix of every carry's. */
static void keep_done_lanes(const ft_array *pred, const ft_array *carry, ft_array *next) {
  int64_t lanes = ft_array_size(pred);
  if (!lanes) return;
  size_t row = carry->nbytes / (size_t)lanes;
  for (int64_t l = 0; l < lanes; l++)
    if (!ft_get_i64(pred, l))
      memcpy((char *)next->data + (size_t)l * row, (const char *)carry->data + (size_t)l * row, row);
}

/* while: inputs are cond_consts, body_consts, then the carry. */
static ft_status while_eval(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  const ft_jaxpr *cj = param_jaxpr(e, "cond_jaxpr"), *bj = param_jaxpr(e, "body_jaxpr");
  int64_t cn = ft_param_int(e, "cond_nconsts", -1), bn = ft_param_int(e, "body_nconsts", -1);
  int nc = e->n_out;
  if (!cj || !bj || cn < 0 || bn < 0 || cn + bn + nc != e->n_in || cj->n_out != 1 ||
      bj->n_out != nc)
    return ft_set_error(ctx, FT_ERR_TYPE, "while: params do not fit the operands");
  size_t na = (size_t)(cn > bn ? cn : bn) + (size_t)nc + 1;
  ft_array **args = calloc(na, sizeof *args), **carry = calloc((size_t)nc + 1, sizeof *carry),
           **next = calloc((size_t)nc + 1, sizeof *next);
  ft_status st = FT_OK;
  if (!args || !carry || !next) {
    st = ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (int i = 0; i < nc; i++)
    if (!(carry[i] = ft_array_clone(ctx, in[cn + bn + i]))) {
      st = ft_ctx_status(ctx);
      goto done;
    }
  ft_loop_guard g;
  ft_loop_begin(&g, ctx, "while");
  for (;;) {
    ft_array *pred = NULL;
    memcpy(args, in, sizeof *args * (size_t)cn);
    memcpy(args + cn, carry, sizeof *args * (size_t)nc);
    if ((st = call(ctx, cj, (int)cn + nc, args, &pred))) goto done;
    bool go = any_lane(pred);
    if (!go) {
      ft_array_free(pred);
      break;
    }
    if ((st = ft_loop_step(&g, ctx))) {
      ft_array_free(pred);
      goto done;
    }
    memcpy(args, in + cn, sizeof *args * (size_t)bn);
    memcpy(args + bn, carry, sizeof *args * (size_t)nc);
    if ((st = call(ctx, bj, (int)bn + nc, args, next))) {
      ft_array_free(pred);
      goto done;
    }
    if (pred->aval.rank > 0)
      for (int i = 0; i < nc; i++) keep_done_lanes(pred, carry[i], next[i]);
    ft_array_free(pred);
    free_all(carry, nc);
    memcpy(carry, next, sizeof *carry * (size_t)nc);
  }
  memcpy(out, carry, sizeof *out * (size_t)nc);
  memset(carry, 0, sizeof *carry * (size_t)nc);
done:
  if (carry) free_all(carry, nc);
  free(args), free(carry), free(next);
  return st;
}

/* The slice t of xs along axis 0 into x (same dtype, shape xs[1:]). */
static void take_row(const ft_array *xs, int64_t t, ft_array *x) {
  if (x->nbytes) memcpy(x->data, (const char *)xs->data + (size_t)t * x->nbytes, x->nbytes);
}

/* scan: inputs consts, carry, xs; jaxpr(consts, carry, x_t) -> (carry, y_t);
 * outputs final carry, then ys stacked along a new leading axis. */
static ft_status scan_eval(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  const ft_jaxpr *j = param_jaxpr(e, "jaxpr");
  int64_t nconst = ft_param_int(e, "num_consts", -1), ncarry = ft_param_int(e, "num_carry", -1);
  int64_t len = ft_param_int(e, "length", -1);
  bool rev = ft_param_bool(e, "reverse", false);
  int nx = e->n_in - (int)nconst - (int)ncarry, ny = e->n_out - (int)ncarry;
  if (!j || nconst < 0 || ncarry < 0 || len < 0 || nx < 0 || ny < 0 ||
      ft_interp_num_args(j) != e->n_in || j->n_out != e->n_out)
    return ft_set_error(ctx, FT_ERR_TYPE, "scan: params do not fit the operands");
  int nc = (int)ncarry, k0 = (int)nconst;
  ft_status st = FT_OK;
  ft_array **args = calloc((size_t)e->n_in + 1, sizeof *args);
  ft_array **xs = calloc((size_t)nx + 1, sizeof *xs);
  ft_array **res = calloc((size_t)e->n_out + 1, sizeof *res);
  ft_array **carry = calloc((size_t)nc + 1, sizeof *carry);
  if (!args || !xs || !res || !carry) {
    st = ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
    goto done;
  }
  if ((st = ft_interp_alloc_outs(ctx, e, out))) goto done;
  for (int i = 0; i < nc; i++)
    if (!(carry[i] = ft_array_clone(ctx, in[k0 + i]))) {
      st = ft_ctx_status(ctx);
      goto done;
    }
  for (int i = 0; i < nx; i++) {
    const ft_var *v = j->invars[k0 + nc + i];
    const ft_array *src = in[k0 + nc + i];
    if (src->aval.rank < 1 || src->aval.dims[0] != len) {
      st = ft_set_error(ctx, FT_ERR_SHAPE, "scan: xs %d does not have length %lld", i,
                        (long long)len);
      goto done;
    }
    if (!(xs[i] = ft_array_alloc(ctx, &v->aval))) {
      st = ft_ctx_status(ctx);
      goto done;
    }
  }
  ft_loop_guard g;
  ft_loop_begin(&g, ctx, "scan");
  for (int64_t s = 0; s < len; s++) {
    if ((st = ft_loop_step(&g, ctx))) goto done;
    int64_t t = rev ? len - 1 - s : s;
    memcpy(args, in, sizeof *args * (size_t)k0);
    memcpy(args + k0, carry, sizeof *args * (size_t)nc);
    for (int i = 0; i < nx; i++) {
      take_row(in[k0 + nc + i], t, xs[i]);
      args[k0 + nc + i] = xs[i];
    }
    if ((st = call(ctx, j, e->n_in, args, res))) goto done;
    free_all(carry, nc);
    memcpy(carry, res, sizeof *carry * (size_t)nc);
    for (int i = 0; i < ny; i++) {
      ft_array *y = res[nc + i], *ys = out[nc + i];
      if (y->nbytes * (size_t)len != ys->nbytes) {
        st = ft_set_error(ctx, FT_ERR_SHAPE, "scan: output %d does not fit its stack", nc + i);
        free_all(res + nc + i, ny - i);
        goto done;
      }
      if (y->nbytes) memcpy((char *)ys->data + (size_t)t * y->nbytes, y->data, y->nbytes);
      ft_array_free(y);
      res[nc + i] = NULL;
    }
  }
  for (int i = 0; i < nc; i++) {
    ft_array_free(out[i]);
    out[i] = carry[i];
    carry[i] = NULL;
  }
done:
  if (st && out) free_all(out, e->n_out);
  if (carry) free_all(carry, nc);
  if (xs) free_all(xs, nx);
  free(args), free(xs), free(res), free(carry);
  return st;
}

/* custom_linear_solve (JAX's _custom_linear_solve_impl): the solve jaxpr on
 * its consts and b (the shape rule checked the counts and avals). */
static ft_status linear_solve_eval(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  const ft_pval *cl = ft_eqn_param(e, "const_lengths"), *js = ft_eqn_param(e, "jaxprs");
  int64_t nc = 0, off = 0;
  for (int i = 0; i < 4; i++) {
    if (i == 2) off = nc;
    nc += cl->u.items[i].u.i;
  }
  const ft_jaxpr *sv = js->u.items[2].u.jaxpr;
  int64_t ns = cl->u.items[2].u.i, nb = e->n_in - nc;
  ft_array **args = malloc(sizeof *args * (size_t)(ns + nb + 1));
  if (!args) return ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  for (int64_t k = 0; k < ns; k++) args[k] = in[off + k];
  for (int64_t k = 0; k < nb; k++) args[ns + k] = in[nc + k];
  ft_status st = call(ctx, sv, (int)(ns + nb), args, out);
  free(args);
  return st;
}

/* CustomRoot (JAX's CustomRoot.expand): solve_jaxpr on solve's consts and
 * the initial guess, the first solve_jaxpr.n_in operands (shape rule). */
static ft_status custom_root_eval(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  const ft_jaxpr *sv = param_jaxpr(e, "solve_jaxpr");
  if (!sv || sv->n_in > e->n_in) return ft_set_error(ctx, FT_ERR_INTERNAL, "CustomRoot: no solve_jaxpr");
  return call(ctx, sv, sv->n_in, in, out);
}

ft_status ft_interp_control(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  switch (e->prim) {
  case FT_P_COND: return cond_eval(ctx, e, in, out);
  case FT_P_WHILE: return while_eval(ctx, e, in, out);
  case FT_P_SCAN: return scan_eval(ctx, e, in, out);
  case FT_P_JIT: case FT_P_REMAT2: return call(ctx, param_jaxpr(e, "jaxpr"), e->n_in, in, out);
  case FT_P_CUSTOM_JVP_CALL:
  case FT_P_CUSTOM_VJP_CALL:
  case FT_P_EVAL_JAXPR: return call(ctx, param_jaxpr(e, "call_jaxpr"), e->n_in, in, out);
  case FT_P_CUSTOM_LINEAR_SOLVE: return linear_solve_eval(ctx, e, in, out);
  case FT_P_CUSTOM_ROOT: return custom_root_eval(ctx, e, in, out);
  case FT_P_CUSTOM_LIN: /* as JAX's custom_lin impl: forward mode cannot run a bwd rule */
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED,
                        "custom_lin is only meaningful under transposition: a custom_vjp function "
                        "has no forward-mode derivative (use grad/vjp, or a custom_jvp rule)");
  default: return ft_set_error(ctx, FT_ERR_INTERNAL, "not a control-flow primitive");
  }
}
