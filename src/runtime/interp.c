/* src/runtime/interp.c: the reference interpreter (DESIGN.md §7): the value
 * environment, literals, the per-equation dispatch by family, and ft_eval.
 * Slow and simple on purpose: every compiled result is checked against it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower/vmath/vmath.h"
#include "runtime.h"

const ft_pval *ft_eqn_param(const ft_eqn *e, const char *name) {
  int k = ft_prim_param_index(e->prim, name);
  FT_ASSERT(k >= 0);
  return &e->params[k];
}

int ft_param_ints(const ft_eqn *e, const char *name, int64_t *out, int max) {
  const ft_pval *v = ft_eqn_param(e, name);
  int n = 0;
  if (!ft_pv_get_ints(v, out, max, &n) || n > max) return -1;
  return n;
}

int64_t ft_param_int(const ft_eqn *e, const char *name, int64_t dflt) {
  const ft_pval *v = ft_eqn_param(e, name);
  return v->tag == FT_PV_INT ? v->u.i : v->tag == FT_PV_BOOL ? v->u.b : dflt;
}

bool ft_param_bool(const ft_eqn *e, const char *name, bool dflt) {
  const ft_pval *v = ft_eqn_param(e, name);
  return v->tag == FT_PV_BOOL ? v->u.b : v->tag == FT_PV_INT ? v->u.i != 0 : dflt;
}

ft_status ft_interp_alloc_outs(ft_ctx *ctx, const ft_eqn *e, ft_array **out) {
  for (int k = 0; k < e->n_out; k++) {
    out[k] = ft_array_alloc(ctx, &e->out[k]->aval);
    if (!out[k]) {
      for (int i = 0; i < k; i++) ft_array_free(out[i]), out[i] = NULL;
      return ft_ctx_status(ctx);
    }
  }
  return FT_OK;
}

/* A rank-0 array holding a literal's value. */
static ft_array *lit_array(ft_ctx *ctx, const ft_var *v) {
  ft_array *a = ft_array_alloc(ctx, &v->aval);
  if (!a) return NULL;
  ft_dtype dt = v->aval.dtype;
  if (dt == FT_FLOAT0) return a; /* (b'',): no data */
  if (ft_dtype_is_complex(dt)) ft_set_c128(a, 0, v->lit.f, v->lit_im);
  else if (ft_dtype_is_float(dt)) ft_set_f64(a, 0, v->lit.f);
  else if (ft_dtype_is_unsigned(dt)) ft_set_i64(a, 0, (int64_t)v->lit.u);
  else ft_set_i64(a, 0, v->lit.i);
  return a;
}

static ft_interp_rule rule_for(ft_prim p) {
  switch (ft_prim_get(p)->family) {
  case FT_FAM_UNARY: return ft_interp_unary;
  case FT_FAM_BINARY: return ft_interp_binary;
  case FT_FAM_COMPARE: return ft_interp_compare;
  case FT_FAM_TERNARY: return ft_interp_ternary;
  case FT_FAM_SELECT: return ft_interp_select;
  case FT_FAM_CONVERT: return ft_interp_convert;
  case FT_FAM_LAYOUT: return ft_interp_layout;
  case FT_FAM_REDUCE: return ft_interp_reduce;
  case FT_FAM_CUMULATIVE: return ft_interp_cumulative;
  case FT_FAM_DOT: return ft_interp_dot;
  case FT_FAM_CONTROL: return ft_interp_control;
  case FT_FAM_OTHER:
    if (p == FT_P_IOTA) return ft_interp_iota;
    if (p == FT_P_EMPTY2) return ft_interp_empty2;
    if (p == FT_P_SORT) return ft_interp_sort;
    if (p == FT_P_FFT) return ft_interp_fft;
    if (p == FT_P_REAL || p == FT_P_IMAG || p == FT_P_CONJ || p == FT_P_COMPLEX)
      return ft_interp_complex_parts;
    if (p == FT_P_GATHER) return ft_interp_gather;
    if (p == FT_P_POLYNOMIAL || p == FT_P_STACK || p == FT_P_UNSTACK || p == FT_P_TILE ||
        p == FT_P_OPTIMIZATION_BARRIER || p == FT_P_PLATFORM_INDEX || p == FT_P_EMPTY ||
        p == FT_P_SELECT_AND_GATHER_ADD || p == FT_P_SELECT_AND_SCATTER_ADD)
      return ft_interp_via_into; /* JAX 0.12 additions: interp_misc.c */
    if (p == FT_P_SCATTER_SUB) return ft_interp_scatter;
    if (p == FT_P_SCATTER || p == FT_P_SCATTER_ADD || p == FT_P_SCATTER_MUL ||
        p == FT_P_SCATTER_MIN || p == FT_P_SCATTER_MAX)
      return ft_interp_scatter;
    if (p == FT_P_REDUCE_WINDOW_SUM || p == FT_P_REDUCE_WINDOW_MAX || p == FT_P_REDUCE_WINDOW_MIN)
      return ft_interp_reduce_window;
    if (p == FT_P_CONV_GENERAL_DILATED) return ft_interp_conv;
    if (p == FT_P_TOP_K) return ft_interp_top_k;
    if (p == FT_P_SEARCHSORTED) return ft_interp_via_into; /* interp_reduce.c */
    if (p == FT_P_RAGGED_DOT_GENERAL) return ft_interp_via_into; /* interp_ragged.c */
    if (p == FT_P_FREXP || p == FT_P_LDEXP || p == FT_P_NONZERO || p == FT_P_APPROX_TOP_K)
      return ft_interp_via_into; /* interp_misc.c */
    if (p == FT_P_REDUCE) return ft_interp_reduce_generic; /* interp_reduce.c */
    if (p == FT_P_REDUCE_WINDOW) return ft_interp_reduce_window_generic; /* interp_reduce.c */
    if (p == FT_P_SHARD_MAP) return ft_interp_shard_map; /* interp_spmd.c */
    if (ft_prim_is_collective(p)) return ft_interp_collective_outside;
    if (ft_rule_into_for(p) == ft_random_into) return ft_interp_via_into;
    if (ft_linalg_rule_into_for(p)) return ft_interp_via_into; /* lapack.c */
    return NULL;
  }
  return NULL;
}

/* Coverage (ftc coverage): NULL when the interpreter has a rule for p, else
 * the explicit reason it has none. Derived from rule_for, so it cannot drift. */
const char *ft_eval_rule_status(ft_prim p) {
  if (rule_for(p)) return NULL;
  if (p == FT_P_RNG_BIT_GENERATOR)
    return "unsupported: XLA's RngBitGenerator algorithms are not built (docs/random.md)";
  return "unsupported: no interpreter rule for this primitive yet";
}

ft_status ft_interp_eqn(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  ft_interp_rule rule = rule_for(e->prim);
  if (!rule) return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "no interpreter rule");
  return rule(ctx, e, in, out);
}

ft_array *ft_interp_lit(ft_ctx *ctx, const ft_var *v) { return lit_array(ctx, v); }

/* The environment: one slot per variable id of the jaxpr's arena. */
typedef struct env {
  ft_array **val;
  bool *owned;
  uint32_t n;
} env;

static void env_set(env *E, const ft_var *v, ft_array *a, bool owned) {
  FT_ASSERT(v->id < E->n);
  if (E->owned[v->id]) ft_array_free(E->val[v->id]);
  E->val[v->id] = a;
  E->owned[v->id] = owned;
}

static void env_free(env *E) {
  for (uint32_t i = 0; E->owned && i < E->n; i++)  /* owned is NULL when its calloc failed */
    if (E->owned[i]) ft_array_free(E->val[i]);
  free(E->val);
  free(E->owned);
}

static bool check_aval(ft_ctx *ctx, const char *what, int i, const ft_var *v, const ft_array *a) {
  if (a && ft_aval_eq(&v->aval, &a->aval)) return true;
  char s1[128], s2[128];
  ft_set_error(ctx, a && a->aval.dtype != v->aval.dtype ? FT_ERR_TYPE : FT_ERR_SHAPE,
               "%s %d: expected %s, got %s", what, i, ft_aval_str(&v->aval, s1, sizeof s1),
               a ? ft_aval_str(&a->aval, s2, sizeof s2) : "NULL");
  return false;
}

int ft_interp_num_args(const ft_jaxpr *j) { return (j->const_data ? 0 : j->n_const) + j->n_in; }

/* Evaluates one equation: gathers inputs (materializing literals), runs the
 * family's rule, binds the outputs. */
static ft_status eval_eqn(ft_ctx *ctx, env *E, const ft_eqn *e, int idx) {
  ft_array *stack_in[16], **in = stack_in;
  ft_array *stack_out[16], **out = stack_out;
  bool *is_lit = NULL;
  ft_status st = FT_OK;
  if (e->n_in > 16 || e->n_out > 16) {
    in = calloc((size_t)e->n_in + 1, sizeof *in);
    out = calloc((size_t)e->n_out + 1, sizeof *out);
    if (!in || !out) {
      st = ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
      goto done;
    }
  }
  is_lit = calloc((size_t)e->n_in + 1, 1);
  if (!is_lit) {
    st = ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (int k = 0; k < e->n_in; k++) {
    const ft_var *v = e->in[k];
    if (v->kind == FT_LIT) {
      in[k] = lit_array(ctx, v);
      is_lit[k] = true;
      if (!in[k]) {
        st = ft_ctx_status(ctx);
        goto done;
      }
    } else {
      in[k] = v->id < E->n ? E->val[v->id] : NULL;
      if (!in[k]) {
        st = ft_set_error(ctx, FT_ERR_INTERNAL, "input %d is unbound", k);
        goto done;
      }
    }
  }
  for (int k = 0; k < e->n_out; k++) out[k] = NULL;
  ft_interp_rule rule = rule_for(e->prim);
  if (!rule) {
    st = ft_set_error(ctx, FT_ERR_UNSUPPORTED, "no interpreter rule");
    goto done;
  }
  st = rule(ctx, e, in, out);
  if (st == FT_OK) {
    for (int k = 0; k < e->n_out; k++) {
      FT_ASSERT(out[k] && ft_aval_eq(&out[k]->aval, &e->out[k]->aval));
      if (e->out[k]->kind == FT_VAR) env_set(E, e->out[k], out[k], true);
      else ft_array_free(out[k]);
    }
  }
done:
  if (st != FT_OK && ft_ctx_status(ctx) != FT_OK)
    ft_error_prefix(ctx, "eval: equation %d (%s)", idx, ft_prim_get(e->prim)->name);
  if (is_lit)
    for (int k = 0; k < e->n_in; k++)
      if (is_lit[k]) ft_array_free(in[k]);
  free(is_lit);
  if (in != stack_in) free(in);
  if (out != stack_out) free(out);
  return st;
}

/* Hardened mode, guard_each_step: NaN/Inf in a result of equation idx
 * whose inputs (values and literals) held none: where it appeared. */
static ft_status guard_step(ft_ctx *ctx, const ft_jaxpr *j, env *E, const ft_eqn *e, int idx) {
  for (int k = 0; k < e->n_in; k++) {
    const ft_var *v = e->in[k];
    if (v->kind == FT_LIT) {
      if (ft_dtype_is_inexact(v->aval.dtype) && (!isfinite(v->lit.f) ||
          (ft_dtype_is_complex(v->aval.dtype) && !isfinite(v->lit_im))))
        return FT_OK;
    } else if (v->id < E->n && E->val[v->id] &&
               ft_nonfinite_count(&E->val[v->id]->aval, E->val[v->id]->data, NULL)) {
      return FT_OK;
    }
  }
  ft_array *outs[16] = {0};
  for (int k = 0; k < e->n_out; k += 16) {
    int n = e->n_out - k < 16 ? e->n_out - k : 16;
    for (int q = 0; q < n; q++) {
      const ft_var *v = e->out[k + q];
      outs[q] = v->kind == FT_VAR && v->id < E->n ? E->val[v->id] : NULL;
    }
    ft_status st = ft_guard_results(ctx, j, idx, ft_prim_get(e->prim)->name, n, outs);
    if (st) return st;
  }
  return FT_OK;
}

static ft_status interp(ft_ctx *ctx, const ft_jaxpr *j, int n_args, const ft_array *const *args,
                        ft_array **outs, bool top);

/* The equations of jax.nn.logsumexp that ft_lse_match found, in one pass
 * over x (interp_lse.c): binds the shift and the sum. */
static ft_status eval_lse(ft_ctx *ctx, env *E, const ft_lse_pat *p) {
  const ft_array *x = p->x->id < E->n ? E->val[p->x->id] : NULL;
  if (!x) return ft_set_error(ctx, FT_ERR_INTERNAL, "eval: logsumexp input is unbound");
  int64_t nb = (p->n + FT_VM_LSE_BLOCK - 1) / FT_VM_LSE_BLOCK;
  float *scratch = malloc(sizeof(float) * (size_t)(2 * nb));
  ft_array *f = ft_array_alloc(ctx, &p->shift->aval), *s = f ? ft_array_alloc(ctx, &p->sum->aval) : NULL;
  if (!scratch || !f || !s) {
    free(scratch), ft_array_free(f), ft_array_free(s);
    return ft_ctx_status(ctx) != FT_OK ? ft_ctx_status(ctx) : ft_set_error(ctx, FT_ERR_NOMEM, "eval: out of memory");
  }
  ft_lse_rows(x->data, p->rows, p->n, scratch, scratch + nb, f->data, s->data);
  free(scratch);
  env_set(E, p->shift, f, true);
  env_set(E, p->sum, s, true);
  return FT_OK;
}

ft_status ft_interp_jaxpr(ft_ctx *ctx, const ft_jaxpr *j, int n_args, const ft_array *const *args,
                          ft_array **outs) {
  return interp(ctx, j, n_args, args, outs, false);
}

/* top: ft_eval's own program, whose equations name where a guard fired. */
static ft_status interp(ft_ctx *ctx, const ft_jaxpr *j, int n_args, const ft_array *const *args,
                        ft_array **outs, bool top) {
  int n_const_args = j->const_data ? 0 : j->n_const;
  if (n_args != n_const_args + j->n_in)
    return ft_set_error(ctx, FT_ERR_INVALID_ARG,
                        "eval: expected %d inputs (%d constants + %d arguments), got %d",
                        n_const_args + j->n_in, n_const_args, j->n_in, n_args);
  env E = {0};
  E.n = ft_arena_num_var_ids(j->arena);
  E.val = calloc((size_t)E.n + 1, sizeof *E.val);
  E.owned = calloc((size_t)E.n + 1, sizeof *E.owned);
  ft_status st = FT_OK;
  for (int k = 0; k < j->n_out; k++) outs[k] = NULL;
  if (!E.val || !E.owned) {
    st = ft_set_error(ctx, FT_ERR_NOMEM, "eval: out of memory");
    goto done;
  }
  for (int k = 0; k < j->n_const; k++) {
    const ft_var *v = j->constvars[k];
    if (j->const_data) {
      ft_array *a = ft_array_alloc(ctx, &v->aval);
      if (!a) {
        st = ft_ctx_status(ctx);
        goto done;
      }
      if (a->nbytes) memcpy(a->data, j->const_data[k], a->nbytes);
      env_set(&E, v, a, true);
    } else {
      if (!check_aval(ctx, "eval: constant input", k, v, args[k])) {
        st = ft_ctx_status(ctx);
        goto done;
      }
      /* borrowed (not owned): the interpreter never writes an input */
      env_set(&E, v, (ft_array *)args[k], false);
    }
  }
  for (int k = 0; k < j->n_in; k++) {
    ft_array *a = (ft_array *)args[n_const_args + k];  /* borrowed, never written */
    if (!check_aval(ctx, "eval: input", k, j->invars[k], a)) {
      st = ft_ctx_status(ctx);
      goto done;
    }
    env_set(&E, j->invars[k], a, false);
  }
  bool steps = top && ft_hardened(ctx) && ctx->opts.guard_each_step;
  /* After a one-pass logsumexp, the dead equations are skipped: a dead
   * reader of its intermediates (which ft_lse_match ignores, as the JIT's
   * rewrite drops it) would find them unbound. Pure: nothing else changes. */
  bool *live = NULL;
  for (int i = 0; i < j->n_eqn && st == FT_OK; i++) {
    if (live && !live[i]) continue;
    if (top) ft_guard_tl.eqn = i;
    ft_lse_pat lse;
    if (j->eqns[i].prim == FT_P_REDUCE_MAX && ft_lse_match(j, i, &lse)) {
      if (!live && !(live = ft_live_eqns(j))) {
        st = ft_set_error(ctx, FT_ERR_NOMEM, "eval: out of memory");
        break;
      }
      int last = i + lse.n_eqns - 1;
      if (top) ft_guard_tl.eqn = last;
      st = eval_lse(ctx, &E, &lse);
      if (st != FT_OK && ft_ctx_status(ctx) != FT_OK)
        ft_error_prefix(ctx, "eval: equations %d-%d (logsumexp)", i, last);
      /* guard_each_step: the pattern is one step whose input is x */
      const ft_array *x = E.val[lse.x->id];
      if (st == FT_OK && steps && !ft_nonfinite_count(&x->aval, x->data, NULL)) {
        ft_array *res[2] = {E.val[lse.shift->id], E.val[lse.sum->id]};
        st = ft_guard_results(ctx, j, last, "reduce_sum", 2, res);
      }
      i = last;
      continue;
    }
    st = eval_eqn(ctx, &E, &j->eqns[i], i);
    if (st == FT_OK && steps) st = guard_step(ctx, j, &E, &j->eqns[i], i);
  }
  free(live);
  for (int k = 0; k < j->n_out && st == FT_OK; k++) {
    const ft_var *v = j->outvars[k];
    if (v->kind == FT_LIT) {
      outs[k] = lit_array(ctx, v);
    } else {
      ft_array *a = v->id < E.n ? E.val[v->id] : NULL;
      if (!a) {
        st = ft_set_error(ctx, FT_ERR_INTERNAL, "eval: output %d is unbound", k);
        break;
      }
      outs[k] = ft_array_clone(ctx, a);
    }
    if (!outs[k]) st = ft_ctx_status(ctx);
  }
done:
  if (st != FT_OK)
    for (int k = 0; k < j->n_out; k++) ft_array_free(outs[k]), outs[k] = NULL;
  env_free(&E);
  return st;
}

ft_status ft_eval(ft_ctx *ctx, const ft_jaxpr *j, int n_in, const ft_array *const *in, int n_out,
                  ft_array **out) {
  if (!j || (n_in && !in) || !out)
    return ft_set_error(ctx, FT_ERR_INVALID_ARG, "eval: NULL argument");
  if (n_out != j->n_out)
    return ft_set_error(ctx, FT_ERR_INVALID_ARG, "eval: the jaxpr has %d outputs, got room for %d",
                        j->n_out, n_out);
  for (int k = 0; k < n_in; k++)
    if (!in[k]) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "eval: input %d is NULL", k);
  ft_status st;
  if (!ft_hardened(ctx)) {
    st = ft_interp_jaxpr(ctx, j, n_in, in, out);
  } else {
    /* Hardened: the call boundary, the run with guards named by equation,
     * NaN/Inf in the outputs. */
    ft_guard_where saved = ft_guard_tl;
    ft_guard_tl = (ft_guard_where){.engine = "interp", .eqn = -1, .depth = 1};
    for (int k = 0; k < n_out; k++) out[k] = NULL;
    st = ft_guard_boundary(ctx, j, n_in, in, 0, NULL);
    if (st == FT_OK) st = interp(ctx, j, n_in, in, out, true);
    ft_guard_tl.eqn = -1;
    if (st == FT_OK && (st = ft_guard_results(ctx, j, -1, "", n_out, out)) != FT_OK)
      for (int k = 0; k < n_out; k++) ft_array_free(out[k]), out[k] = NULL;
    ft_guard_tl = saved;
  }
  /* The ledger's call record (when one is attached and logs calls). */
  ft_ctx_event ev = {.kind = FT_CTX_EV_EVAL, .jaxpr = j, .n_in = n_in, .in = in, .n_out = n_out, .out = out};
  if (st == FT_OK && (st = ft_ctx_notify(ctx, &ev)) != FT_OK)
    for (int k = 0; k < n_out; k++) ft_array_free(out[k]), out[k] = NULL;
  return st;
}
