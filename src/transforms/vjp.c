/* src/transforms/vjp.c: the public transforms. Each is a composition of
 * the same three steps, as in JAX: jvp (jvp.c), partial evaluation into a
 * primal jaxpr and a linear tangent jaxpr (partial_eval.c), and transposition
 * of the linear part (transpose.c), all built in the arena of the result so
 * the primal equations are reused without renaming. Every result goes
 * through ft__after_transform (verifier, ledger). */
#include <limits.h>
#include <string.h>

#include "transforms.h"
#include "ir/json.h"

static bool state_init(jvp_state *s, ft_ctx *ctx, const ft_jaxpr *j) {
  *s = (jvp_state){.ctx = ctx, .src = j->arena}; /* vmap_free of a map never initialized is safe */
  uint32_t n = ft_arena_num_var_ids(j->arena) + 1;
  if (vmap_init(&s->primal, n) && vmap_init(&s->tangent, n)) return true;
  vmap_free(&s->primal);
  vmap_free(&s->tangent);
  ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  return false;
}

static void state_free(jvp_state *s) {
  vmap_free(&s->primal);
  vmap_free(&s->tangent);
}

static bool tr_init(tr_state *s, ft_ctx *ctx, ft_arena *a) {
  *s = (tr_state){.ctx = ctx, .src = a};
  uint32_t n = ft_arena_num_var_ids(a) + 1;
  if (vmap_init(&s->primal, n) && vmap_init(&s->ct, n) && vflags_init(&s->lin, n)) return true;
  vmap_free(&s->primal);
  vmap_free(&s->ct);
  vflags_free(&s->lin);
  ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  return false;
}

static void tr_free(tr_state *s) {
  vmap_free(&s->primal);
  vmap_free(&s->ct);
  vflags_free(&s->lin);
}

static bool check_in(ft_ctx *ctx, const char *op, const ft_jaxpr *j) {
  if (!j) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "%s: the jaxpr is NULL", op);
    return false;
  }
  if (ctx) ft_ctx_clear_error(ctx);
  return true;
}

/* Makes sub-jaxpr j of its arena the top-level jaxpr that owns the arena. */
static ft_jaxpr *adopt(ft_jaxpr *owner, const ft_jaxpr *j) {
  ft_arena *a = owner->arena;
  *owner = *j;
  owner->arena = a;
  owner->owns_arena = true;
  return owner;
}

/* ------------------------------------------------------------------- jvp */

FT_API ft_jaxpr *ft_jvp(ft_ctx *ctx, const ft_jaxpr *j) {
  if (!check_in(ctx, "jvp", j)) return NULL;
  ft_jaxpr *r = ft_jaxpr_new(NULL);
  jvp_state s;
  if (!r) return ft_set_error(ctx, FT_ERR_NOMEM, "jvp: out of memory"), NULL;
  if (!state_init(&s, ctx, j)) return ft_jaxpr_free(r), NULL;
  bool *nz = malloc((size_t)j->n_in + 1), *inst = malloc((size_t)j->n_out + 1);
  ft_jaxpr *sub = NULL;
  if (nz && inst) {
    for (int i = 0; i < j->n_in; i++) nz[i] = true;
    for (int k = 0; k < j->n_out; k++) inst[k] = true;
    sub = jvp_jaxpr(&s, r->arena, j, nz, inst, NULL);
  } else {
    ft_set_error(ctx, FT_ERR_NOMEM, "jvp: out of memory");
  }
  free(nz), free(inst);
  state_free(&s);
  if (!sub) return ft_jaxpr_free(r), NULL;
  adopt(r, sub);
  if (!dce_jaxpr(ctx, r, NULL, false, NULL) || !ft__after_transform(ctx, "jvp", "{}", j, r))
    return ft_jaxpr_free(r), NULL;
  return r;
}

FT_API ft_jaxpr *ft_dce(ft_ctx *ctx, const ft_jaxpr *j) {
  if (!check_in(ctx, "dce", j)) return NULL;
  ft_jaxpr *r = jaxpr_clone_top(j);
  if (!r) return ft_set_error(ctx, FT_ERR_NOMEM, "dce: out of memory"), NULL;
  if (!dce_jaxpr(ctx, r, NULL, false, NULL) || !ft__after_transform(ctx, "dce", "{}", j, r))
    return ft_jaxpr_free(r), NULL;
  return r;
}

/* ------------------------------------------------------------ linearize */

/* The linearization of j w.r.t. the inputs with diff[i], in r's arena:
 * J = jvp jaxpr, then split. */
typedef struct lin {
  ft_jaxpr *J;
  pe_out pe;
  int n_in, n_out, n_t;  /* primal inputs/outputs, tangent inputs */
  int *tout_of;          /* J's tangent output k -> primal output */
  int n_tout;
} lin;

static bool linearize_into(ft_ctx *ctx, ft_arena *a, const ft_jaxpr *j, const bool *diff, lin *L) {
  memset(L, 0, sizeof *L);
  jvp_state s;
  if (!state_init(&s, ctx, j)) return false;
  bool *onz = ft_arena_alloc(a, (size_t)j->n_out + 1);
  L->tout_of = ft_arena_alloc(a, sizeof(int) * (size_t)(j->n_out + 1));
  if (onz && L->tout_of) L->J = jvp_jaxpr(&s, a, j, diff, NULL, onz);
  else ft_set_error(ctx, FT_ERR_NOMEM, "linearize: out of memory");
  state_free(&s);
  if (!L->J) return false;
  L->n_in = j->n_in;
  L->n_out = j->n_out;
  L->n_t = L->J->n_in - j->n_in;
  for (int k = 0; k < j->n_out; k++)
    if (onz[k]) L->tout_of[L->n_tout++] = k;
  bool *unk = malloc((size_t)L->J->n_in + 1), *inst = malloc((size_t)L->J->n_out + 1);
  bool ok = unk && inst;
  if (ok) {
    for (int i = 0; i < L->J->n_in; i++) unk[i] = i >= j->n_in;
    for (int k = 0; k < L->J->n_out; k++) inst[k] = k >= j->n_out;
    ok = pe_jaxpr(ctx, a, L->J, unk, inst, &L->pe);
  } else {
    ft_set_error(ctx, FT_ERR_NOMEM, "linearize: out of memory");
  }
  bool rw = false; /* the generic reduce_window's JVP folds primals and tangents in one equation */
  for (int i = 0; ok && i < L->J->n_eqn; i++) rw = rw || L->J->eqns[i].prim == FT_P_REDUCE_WINDOW;
  for (int k = 0; ok && k < j->n_out; k++)
    if (L->pe.out_unknown[k]) {
      if (rw)
        ft_set_error(ctx, FT_ERR_UNSUPPORTED, "linearize: primal output %d depends on tangents through the "
                     "generic reduce_window, whose JVP folds primals and tangents together; JAX 0.12 has no "
                     "reverse mode for it either (\"Linearization failed to produce known values for all "
                     "output primals\")", k);
      else
        ft_set_error(ctx, FT_ERR_INTERNAL, "linearize: primal output %d depends on tangents", k);
      ok = false;
    }
  free(unk), free(inst);
  return ok;
}

FT_API ft_status ft_linearize(ft_ctx *ctx, const ft_jaxpr *j, ft_jaxpr **primal, ft_jaxpr **tangent,
                              int *n_res) {
  if (!primal || !tangent) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "linearize: NULL output");
  *primal = *tangent = NULL;
  if (!check_in(ctx, "linearize", j)) return FT_ERR_INVALID_ARG;
  ft_jaxpr *r = ft_jaxpr_new(NULL);
  if (!r) return ft_set_error(ctx, FT_ERR_NOMEM, "linearize: out of memory");
  bool *diff = malloc((size_t)j->n_in + 1);
  lin L;
  bool ok = diff != NULL;
  if (!ok) ft_set_error(ctx, FT_ERR_NOMEM, "linearize: out of memory");
  for (int i = 0; ok && i < j->n_in; i++) diff[i] = true;
  ok = ok && linearize_into(ctx, r->arena, j, diff, &L);
  free(diff);
  if (ok) {
    adopt(r, L.pe.known);
    ft_jaxpr *t = jaxpr_clone_top(L.pe.unknown);
    ok = t && dce_jaxpr(ctx, r, NULL, false, NULL) && dce_jaxpr(ctx, t, NULL, false, NULL);
    if (!t) ft_set_error(ctx, FT_ERR_NOMEM, "linearize: out of memory");
    if (ok && ft__after_transform(ctx, "linearize", "{\"part\":\"primal\"}", j, r) &&
        ft__after_transform(ctx, "linearize", "{\"part\":\"tangent\"}", j, t)) {
      *primal = r;
      *tangent = t;
      if (n_res) *n_res = L.pe.n_res;
      return FT_OK;
    }
    ft_jaxpr_free(t);
  }
  ft_jaxpr_free(r);
  return ctx ? (ft_ctx_status(ctx) ? ft_ctx_status(ctx) : FT_ERR_INTERNAL) : FT_ERR_INTERNAL;
}

/* ------------------------------------------------------------ transpose */

FT_API ft_jaxpr *ft_linear_transpose(ft_ctx *ctx, const ft_jaxpr *lin_j, int n_nonlinear) {
  if (!check_in(ctx, "transpose", lin_j)) return NULL;
  if (n_nonlinear < 0 || n_nonlinear > lin_j->n_in) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "transpose: n_nonlinear=%d is out of range for %d inputs",
                 n_nonlinear, lin_j->n_in);
    return NULL;
  }
  for (int i = n_nonlinear; i < lin_j->n_in; i++)
    if (!var_inexact(lin_j->invars[i])) {
      char b[64];
      ft_set_error(ctx, FT_ERR_TYPE, "transpose: linear input %d is %s; linear inputs must be inexact", i,
                   ft_aval_str(&lin_j->invars[i]->aval, b, sizeof b));
      return NULL;
    }
  ft_jaxpr *r = ft_jaxpr_new(NULL);
  if (!r) return ft_set_error(ctx, FT_ERR_NOMEM, "transpose: out of memory"), NULL;
  tr_state s;
  if (!tr_init(&s, ctx, lin_j->arena)) return ft_jaxpr_free(r), NULL;
  bool *linear = malloc((size_t)lin_j->n_in + 1), *ctnz = malloc((size_t)lin_j->n_out + 1);
  ft_jaxpr *sub = NULL;
  if (linear && ctnz) {
    for (int i = 0; i < lin_j->n_in; i++) linear[i] = i >= n_nonlinear;
    for (int k = 0; k < lin_j->n_out; k++) ctnz[k] = true;
    sub = transpose_jaxpr(&s, r->arena, lin_j, linear, ctnz, true, NULL);
  } else {
    ft_set_error(ctx, FT_ERR_NOMEM, "transpose: out of memory");
  }
  free(linear), free(ctnz);
  tr_free(&s);
  if (!sub) return ft_jaxpr_free(r), NULL;
  adopt(r, sub);
  ft_buf params = {0}; /* {"n_nonlinear":N} */
  ft_buf_puts(&params, "{");
  ft_json_key(&params, "n_nonlinear");
  ft_buf_printf(&params, "%d}", n_nonlinear);
  bool ok = !params.failed && dce_jaxpr(ctx, r, NULL, false, NULL) &&
            ft__after_transform(ctx, "transpose", params.p, lin_j, r);
  if (params.failed) ft_set_error(ctx, FT_ERR_NOMEM, "transpose: out of memory");
  free(params.p);
  if (!ok) return ft_jaxpr_free(r), NULL;
  return r;
}

/* ------------------------------------------------------ reverse mode */

typedef enum { REV_GRAD, REV_VALUE_AND_GRAD, REV_VJP } rev_mode;

/* Builds the reverse-mode jaxpr of j into r:
 *   grad:           x -> (grads of argnums..., aux...)
 *   value_and_grad: x -> (value, aux..., grads...)
 *   vjp:            (x..., ct of each inexact output...) -> (y..., ct of each inexact input...)
 * `which` lists the inputs to differentiate (grad: argnums, in order). */
static bool reverse(ft_ctx *ctx, ft_jaxpr *r, const ft_jaxpr *j, int n_which, const int *which,
                    bool has_aux, rev_mode mode) {
  ft_arena *a = r->arena;
  bool *diff = calloc((size_t)j->n_in + 1, 1);
  if (!diff) return ft_set_error(ctx, FT_ERR_NOMEM, "out of memory"), false;
  for (int i = 0; i < n_which; i++) diff[which[i]] = true;
  lin L;
  bool ok = linearize_into(ctx, a, j, diff, &L);
  tr_state s;
  if (ok && !tr_init(&s, ctx, a)) ok = false;
  if (!ok) {
    free(diff);
    return false;
  }
  const ft_jaxpr *K = L.pe.known;
  ft_jaxpr *U = L.pe.unknown;
  int R = L.pe.n_res, nt = L.n_t;
  /* Which tangent outputs are seeded: grad only the loss (output 0). */
  bool *used = calloc((size_t)U->n_out + 1, 1), *ures = calloc((size_t)U->n_in + 1, 1);
  int n_v = j->n_in + j->n_out;
  ft_var **v = calloc((size_t)(2 * n_v + n_which + 3 * U->n_in + U->n_out + 8), sizeof *v);
  ft_var **ct_out = v, **ct_in = v + U->n_out + 1, **nonlin = ct_in + U->n_in + 1,
         **ins = nonlin + U->n_in + 1, **outs = ins + n_v + 1; /* outs: n_v + n_which */
  if (!used || !ures || !v) ok = (ft_set_error(ctx, FT_ERR_NOMEM, "out of memory"), false);
  tx t;
  tx_init(&t, ctx, r, mode == REV_VJP ? "vjp" : "grad");
  int ni = 0;
  for (int i = 0; ok && i < j->n_in; i++) ins[ni++] = L.J->invars[i];
  for (int k = 0; ok && k < U->n_out; k++) {
    used[k] = mode == REV_VJP || L.tout_of[k] == 0;
    if (mode != REV_VJP && used[k]) ct_out[k] = tx_lit(&t, U->outvars[k]->aval.dtype, 1.0);
  }
  /* vjp: one cotangent input per inexact output, in output order (those
   * whose tangent is a symbolic zero are accepted and unused). */
  for (int k = 0; ok && mode == REV_VJP && k < j->n_out; k++) {
    if (!var_inexact(j->outvars[k])) continue;
    ft_var *c = ins[ni++] = ft_var_new(a, &j->outvars[k]->aval);
    ok = c != NULL;
    for (int q = 0; q < U->n_out; q++)
      if (L.tout_of[q] == k) ct_out[q] = c;
  }
  /* Only the seeded outputs matter: prune the linear jaxpr, then the residuals. */
  ok = ok && dce_jaxpr(ctx, U, used, true, ures);
  int m = 0;
  for (int k = 0; ok && k < L.n_tout; k++)
    if (used[k]) ct_out[m++] = ct_out[k];
  for (int q = 0; ok && q < K->n_eqn; q++) tx_push_shared(&t, &K->eqns[q]);
  bool *linear = ok ? calloc((size_t)U->n_in + 1, 1) : NULL;
  if (ok && !linear) ok = (ft_set_error(ctx, FT_ERR_NOMEM, "out of memory"), false);
  for (int i = 0; ok && i < U->n_in; i++) {
    linear[i] = i >= R;
    nonlin[i] = i < R ? K->outvars[j->n_out + i] : NULL;
  }
  ok = ok && !t.failed && transpose_into(&s, &t, U, linear, nonlin, ct_out, ct_in);
  /* ct_in[R + q] is the cotangent of J's tangent input q, i.e. of the q-th
   * differentiated input. */
  int *tin_of = calloc((size_t)j->n_in + 1, sizeof(int));
  if (ok && !tin_of) ok = (ft_set_error(ctx, FT_ERR_NOMEM, "out of memory"), false);
  for (int i = 0, q = 0; ok && i < j->n_in; i++) tin_of[i] = diff[i] && var_inexact(j->invars[i]) ? q++ : -1;
  (void)nt;
  int no = 0;
  if (ok && mode == REV_VALUE_AND_GRAD) outs[no++] = K->outvars[0];
  if (ok && mode == REV_VALUE_AND_GRAD && has_aux)
    for (int k = 1; k < j->n_out; k++) outs[no++] = K->outvars[k];
  if (ok && mode == REV_VJP)
    for (int k = 0; k < j->n_out; k++) outs[no++] = K->outvars[k];
  for (int w = 0; ok && w < (mode == REV_VJP ? j->n_in : n_which); w++) {
    int i = mode == REV_VJP ? w : which[w];
    if (mode == REV_VJP && !var_inexact(j->invars[i])) continue;
    ft_var *g = tin_of[i] >= 0 ? ct_in[R + tin_of[i]] : NULL;
    outs[no++] = g ? g : tx_zeros(&t, &j->invars[i]->aval);
  }
  if (ok && mode == REV_GRAD && has_aux)
    for (int k = 1; k < j->n_out; k++) outs[no++] = K->outvars[k];
  ok = ok && !t.failed && ft_jaxpr_set_vars(r, L.J->n_const, L.J->constvars, ni, ins, no, outs);
  if (ok) r->const_data = L.J->const_data;
  ok = ok && dce_jaxpr(ctx, r, NULL, false, NULL);
  free(diff), free(used), free(ures), free(v), free(linear), free(tin_of);
  tr_free(&s);
  return ok;
}

static bool check_grad(ft_ctx *ctx, const char *op, const ft_jaxpr *j, int n_argnums, const int *argnums,
                       bool has_aux) {
  char b[64];
  if (j->n_out < 1 || (!has_aux && j->n_out != 1)) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "%s: the function must return one scalar%s; it returns %d "
                 "outputs (use has_aux for extra outputs, or vjp)", op, has_aux ? " (then aux)" : "", j->n_out);
    return false;
  }
  const ft_aval *o = &j->outvars[0]->aval;
  if (o->rank != 0 || !ft_dtype_is_float(o->dtype)) {
    ft_set_error(ctx, FT_ERR_TYPE, "%s: gradient only defined for scalar real-valued outputs; output 0 is %s",
                 op, ft_aval_str(o, b, sizeof b));
    return false;
  }
  for (int w = 0; w < n_argnums; w++) {
    int i = argnums[w];
    if (i < 0 || i >= j->n_in) {
      ft_set_error(ctx, FT_ERR_INVALID_ARG, "%s: argnums entry %d is out of range for a function of %d inputs",
                   op, i, j->n_in);
      return false;
    }
    if (!ft_dtype_is_inexact(j->invars[i]->aval.dtype)) { /* JAX: real- or complex-valued */
      ft_set_error(ctx, FT_ERR_TYPE, "%s requires floating or complex inputs, but input %d is %s; "
                   "use vjp to differentiate with integer inputs present", op, i,
                   ft_aval_str(&j->invars[i]->aval, b, sizeof b));
      return false;
    }
  }
  return true;
}

static ft_jaxpr *grad_common(ft_ctx *ctx, const ft_jaxpr *j, int n_argnums, const int *argnums, bool has_aux,
                             rev_mode mode) {
  const char *op = mode == REV_GRAD ? "grad" : "value_and_grad";
  if (!check_in(ctx, op, j)) return NULL;
  int zero = 0;
  if (n_argnums <= 0 || !argnums) n_argnums = 1, argnums = &zero;
  if (!check_grad(ctx, op, j, n_argnums, argnums, has_aux)) return NULL;
  ft_jaxpr *r = ft_jaxpr_new(NULL);
  if (!r) return ft_set_error(ctx, FT_ERR_NOMEM, "%s: out of memory", op), NULL;
  if (!reverse(ctx, r, j, n_argnums, argnums, has_aux, mode)) return ft_jaxpr_free(r), NULL;
  /* {"argnums":[...],"has_aux":B}, every argnum (no fixed-size buffer) */
  ft_buf params = {0};
  ft_buf_puts(&params, "{");
  ft_json_key(&params, "argnums");
  ft_json_ints(&params, n_argnums, argnums, INT_MIN);
  ft_buf_puts(&params, ",");
  ft_json_key(&params, "has_aux");
  ft_buf_puts(&params, has_aux ? "true}" : "false}");
  if (params.failed) ft_set_error(ctx, FT_ERR_NOMEM, "%s: out of memory", op);
  bool ok = !params.failed && ft__after_transform(ctx, op, params.p, j, r);
  free(params.p);
  if (!ok) return ft_jaxpr_free(r), NULL;
  return r;
}

FT_API ft_jaxpr *ft_grad(ft_ctx *ctx, const ft_jaxpr *j, int n_argnums, const int *argnums, bool has_aux) {
  return grad_common(ctx, j, n_argnums, argnums, has_aux, REV_GRAD);
}

FT_API ft_jaxpr *ft_value_and_grad(ft_ctx *ctx, const ft_jaxpr *j, int n_argnums, const int *argnums,
                                   bool has_aux) {
  return grad_common(ctx, j, n_argnums, argnums, has_aux, REV_VALUE_AND_GRAD);
}

FT_API ft_jaxpr *ft_vjp_jaxpr(ft_ctx *ctx, const ft_jaxpr *j) {
  if (!check_in(ctx, "vjp", j)) return NULL;
  ft_jaxpr *r = ft_jaxpr_new(NULL);
  if (!r) return ft_set_error(ctx, FT_ERR_NOMEM, "vjp: out of memory"), NULL;
  int *all = malloc(sizeof(int) * (size_t)(j->n_in + 1));
  int n = 0;
  for (int i = 0; all && i < j->n_in; i++)
    if (var_inexact(j->invars[i])) all[n++] = i;
  bool ok = all && reverse(ctx, r, j, n, all, false, REV_VJP);
  if (!all) ft_set_error(ctx, FT_ERR_NOMEM, "vjp: out of memory");
  free(all);
  if (!ok || !ft__after_transform(ctx, "vjp", "{}", j, r)) return ft_jaxpr_free(r), NULL;
  return r;
}

FT_API ft_status ft_vjp(ft_ctx *ctx, const ft_jaxpr *j, ft_jaxpr **fwd, ft_jaxpr **bwd, int *n_res) {
  if (!fwd || !bwd) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "vjp: NULL output");
  *fwd = *bwd = NULL;
  ft_jaxpr *p = NULL, *t = NULL;
  int R = 0;
  ft_status st = ft_linearize(ctx, j, &p, &t, &R);
  if (st) return st;
  ft_jaxpr *b = ft_linear_transpose(ctx, t, R);
  ft_jaxpr_free(t);
  if (!b) {
    ft_jaxpr_free(p);
    return ft_ctx_status(ctx) ? ft_ctx_status(ctx) : FT_ERR_INTERNAL;
  }
  *fwd = p;
  *bwd = b;
  if (n_res) *n_res = R;
  return FT_OK;
}
