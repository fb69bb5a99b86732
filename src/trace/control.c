/* src/trace/control.c: control flow while tracing. Each op traces C
 * callbacks into sub-jaxprs (one sub-tracer each) and emits one cond,
 * while, scan or jit equation. Values of enclosing traces that a callback
 * uses are captured and passed as leading operands, as JAX's closure
 * conversion does (cond: consts shared by all branches; while: cond and
 * body consts; scan: num_consts; jit: leading arguments). The sub-trace
 * helpers are shared with custom.c (trace.h). */
#include <string.h>

#include "trace/trace.h"

static void subs_free(ft_subtrace *s, int n) {
  for (int i = 0; s && i < n; i++) free(s[i].args);
  free(s);
}

/* Traces fn with arguments of the given avals. */
bool ft__trace_sub(ft_tracer *root, ft_subtrace *s, ft_trace_fn fn, void *user, int n_args,
                   const ft_aval *avals, const char *what) {
  s->n_args = n_args;
  s->args = calloc((size_t)n_args + 1, sizeof *s->args);
  if (!s->args) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    return false;
  }
  if (!fn) {
    ft__fail(root, FT_ERR_INVALID_ARG, "%s: the function is NULL", what);
    return false;
  }
  s->t = ft__sub_new(root, n_args, avals, s->args);
  return s->t && ft__run(s->t, fn, user, n_args, s->args, what) >= 0;
}

/* Installs the invars of s: inner vars for the outer vars consts[0..n)
 * (its captures, or fresh unused vars for consts it did not capture), then
 * its arguments. */
bool ft__install_sub(ft_tracer *root, ft_subtrace *s, int n, ft_var *const *consts) {
  ft_var **inv = calloc((size_t)(n + s->n_args) + 1, sizeof *inv);
  if (!inv) goto nomem;
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < s->t->n_cap && !inv[i]; k++)
      if (s->t->cap_outer[k] == consts[i]) inv[i] = s->t->cap_inner[k];
    if (!inv[i] && !(inv[i] = ft_var_new(root->j->arena, &consts[i]->aval))) goto nomem;
  }
  memcpy(inv + n, s->args, sizeof *inv * (size_t)s->n_args);
  ft_jaxpr *j = s->t->j;
  bool ok = ft_jaxpr_set_vars(j, 0, NULL, n + s->n_args, inv, j->n_out, j->outvars);
  free(inv);
  if (ok) return true;
nomem:
  free(inv);
  ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
  return false;
}

/* Operands [consts (vars of root->cur) ..., vals ...] as values. */
ft_val **ft__operands(ft_tracer *root, int n_consts, ft_var *const *consts, int lead,
                      ft_val *const *lead_vals, int n_vals, ft_val *const *vals) {
  int n = lead + n_consts + n_vals;
  ft_val **ops = calloc((size_t)n + 1, sizeof *ops);
  if (!ops) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    return NULL;
  }
  for (int i = 0; i < lead; i++) ops[i] = lead_vals[i];
  for (int i = 0; i < n_consts; i++)
    if (!(ops[lead + i] = ft__val(root->cur, consts[i]))) {
      free(ops);
      return NULL;
    }
  for (int i = 0; i < n_vals; i++) ops[lead + n_consts + i] = vals[i];
  return ops;
}

ft_aval *ft__avals_of(ft_tracer *root, int n, ft_val *const *v) {
  ft_aval *a = calloc((size_t)n + 1, sizeof *a);
  if (!a) ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
  for (int i = 0; a && i < n; i++) a[i] = v[i]->v->aval;
  return a;
}

/* ------------------------------------------------------------------ cond */

/* lax.cond converts a bool predicate to int32; lax.switch clamps an
 * integer index into range. */
static ft_val *branch_index(ft_tracer *root, ft_val *index, int n_branches) {
  const ft_aval *a = &index->v->aval;
  if (a->rank != 0 || !(a->dtype == FT_BOOL || ft_dtype_is_int(a->dtype))) {
    char b[128];
    ft__fail(root, FT_ERR_TYPE, "cond: the index must be a bool or integer scalar, got %s",
             ft_aval_str(a, b, sizeof b));
    return NULL;
  }
  if (a->dtype == FT_BOOL) {
    if (n_branches != 2) {
      ft__fail(root, FT_ERR_TYPE, "cond: a bool index selects between 2 branches, got %d", n_branches);
      return NULL;
    }
    return ft__astype(index, FT_I32, false);
  }
  ft_val *ix = ft__astype(index, FT_I32, false);
  if (!ix || n_branches == 1) return ix;
  return ft_clamp(ft_const_i32(root, 0), ix, ft_const_i32(root, n_branches - 1));
}

int ft_cond(ft_tracer *t, ft_val *index, int n_branches, const ft_trace_fn *branches, void *user,
            int n_ops, ft_val *const *ops, ft_val **out, int max_out) {
  ft_val *iv[1] = {index};
  ft_tracer *root = ft__root_of(t, "cond", 1, iv);
  if (!root || !ft__root_of(root, "cond", n_ops, ops)) return -1;
  if (n_branches < 1 || !branches || !out || max_out < 0 || n_ops < 0) {
    ft__fail(root, FT_ERR_INVALID_ARG, "cond: needs at least one branch and an out array");
    return -1;
  }
  ft_val *ix = branch_index(root, index, n_branches);
  if (!ix) return -1;
  int ret = -1, n_u = 0;
  ft_var **uni = NULL;
  ft_val **args = NULL;
  ft_aval *avals = ft__avals_of(root, n_ops, ops);
  ft_subtrace *s = calloc((size_t)n_branches, sizeof *s);
  if (!s || !avals) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    goto done;
  }
  for (int k = 0; k < n_branches; k++) {
    char what[48];
    snprintf(what, sizeof what, "cond branch %d", k);
    if (!ft__trace_sub(root, &s[k], branches[k], user, n_ops, avals, what)) goto done;
  }
  /* The union of every branch's captures, in first-seen order. */
  int cap = 0;
  for (int k = 0; k < n_branches; k++) cap += s[k].t->n_cap;
  uni = calloc((size_t)cap + 1, sizeof *uni);
  if (!uni) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    goto done;
  }
  for (int k = 0; k < n_branches; k++)
    for (int c = 0; c < s[k].t->n_cap; c++) {
      bool seen = false;
      for (int u = 0; u < n_u && !seen; u++) seen = uni[u] == s[k].t->cap_outer[c];
      if (!seen) uni[n_u++] = s[k].t->cap_outer[c];
    }
  for (int k = 0; k < n_branches; k++)
    if (!ft__install_sub(root, &s[k], n_u, uni)) goto done;
  ft_pval *ps = ft__params(root, FT_P_COND);
  ft_pval br = ft_pv_tuple(root->j->arena, n_branches);
  if (!ps || br.tag != FT_PV_TUPLE) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    goto done;
  }
  for (int k = 0; k < n_branches; k++) br.u.items[k] = ft_pv_jaxpr(s[k].t->j);
  ft__set(ps, FT_P_COND, "branches", br);
  if (!(args = ft__operands(root, n_u, uni, 1, &ix, n_ops, ops))) goto done;
  ret = ft__emit(root, FT_P_COND, 1 + n_u + n_ops, args, ps, out, max_out);
done:
  free(args);
  free(uni);
  free(avals);
  subs_free(s, n_branches);
  return ret;
}

/* ----------------------------------------------------------------- while */

int ft_while_loop(ft_tracer *t, ft_trace_fn cond_fn, ft_trace_fn body_fn, void *user, int n_carry,
                  ft_val *const *init, ft_val **out) {
  ft_tracer *root = ft__root_of(t, "while", n_carry, init);
  if (!root) return -1;
  if (n_carry < 0 || !out) {
    ft__fail(root, FT_ERR_INVALID_ARG, "while: invalid carry count or out array");
    return -1;
  }
  int ret = -1;
  ft_aval *avals = ft__avals_of(root, n_carry, init);
  ft_subtrace s[2] = {{0}, {0}};
  ft_var **consts = NULL;
  ft_val **args = NULL;
  if (!avals || !ft__trace_sub(root, &s[0], cond_fn, user, n_carry, avals, "while cond") ||
      !ft__trace_sub(root, &s[1], body_fn, user, n_carry, avals, "while body"))
    goto done;
  int cn = s[0].t->n_cap, bn = s[1].t->n_cap;
  consts = calloc((size_t)(cn + bn) + 1, sizeof *consts);
  if (!consts) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    goto done;
  }
  /* cap_outer is NULL when a sub-trace captured nothing (memcpy's source
   * must not be NULL even for 0 bytes) */
  if (cn) memcpy(consts, s[0].t->cap_outer, sizeof *consts * (size_t)cn);
  if (bn) memcpy(consts + cn, s[1].t->cap_outer, sizeof *consts * (size_t)bn);
  if (!ft__install_sub(root, &s[0], cn, consts) || !ft__install_sub(root, &s[1], bn, consts + cn)) goto done;
  ft_prim p = FT_P_WHILE;
  ft_pval *ps = ft__params(root, p);
  if (!ps) goto done;
  ft__set(ps, p, "cond_jaxpr", ft_pv_jaxpr(s[0].t->j));
  ft__set(ps, p, "body_jaxpr", ft_pv_jaxpr(s[1].t->j));
  ft__set(ps, p, "cond_nconsts", ft_pv_int(cn));
  ft__set(ps, p, "body_nconsts", ft_pv_int(bn));
  if (!(args = ft__operands(root, cn + bn, consts, 0, NULL, n_carry, init))) goto done;
  ret = ft__emit(root, p, cn + bn + n_carry, args, ps, out, n_carry);
done:
  free(args);
  free(consts);
  free(avals);
  free(s[0].args);
  free(s[1].args);
  return ret;
}

/* ------------------------------------------------------------------ scan */

int ft_scan(ft_tracer *t, ft_trace_fn body, void *user, int64_t length, bool reverse, int n_carry,
            ft_val *const *init, int n_xs, ft_val *const *xs, ft_val **out, int max_out) {
  ft_tracer *root = ft__root_of(t, "scan", n_carry, init);
  if (!root || !ft__root_of(root, "scan", n_xs, xs)) return -1;
  if (n_carry < 0 || n_xs < 0 || !out) {
    ft__fail(root, FT_ERR_INVALID_ARG, "scan: invalid carry or xs count, or out array");
    return -1;
  }
  if (length < 0) {
    if (n_xs == 0 || xs[0]->v->aval.rank == 0) {
      ft__fail(root, FT_ERR_INVALID_ARG, "scan: length < 0 needs xs with a leading axis to take it from");
      return -1;
    }
    length = xs[0]->v->aval.dims[0];
  }
  int n = n_carry + n_xs, ret = -1;
  ft_aval *avals = calloc((size_t)n + 1, sizeof *avals);
  ft_val **args = NULL;
  ft_subtrace s = {0};
  if (!avals) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    return -1;
  }
  for (int i = 0; i < n_carry; i++) avals[i] = init[i]->v->aval;
  for (int i = 0; i < n_xs; i++) {
    const ft_aval *x = &xs[i]->v->aval;
    if (x->rank < 1 || x->dims[0] != length) {
      char b[128];
      ft__fail(root, FT_ERR_SHAPE, "scan: xs operand %d is %s but needs a leading axis of length %lld",
               i, ft_aval_str(x, b, sizeof b), (long long)length);
      goto done;
    }
    ft_aval a = *x;
    a.rank--;
    memmove(a.dims, x->dims + 1, sizeof(int64_t) * (size_t)a.rank);
    avals[n_carry + i] = a;
  }
  if (!ft__trace_sub(root, &s, body, user, n, avals, "scan body")) goto done;
  int nc = s.t->n_cap;
  ft_var **consts = s.t->cap_outer;
  if (!ft__install_sub(root, &s, nc, consts)) goto done;
  ft_prim p = FT_P_SCAN;
  ft_pval *ps = ft__params(root, p);
  if (!ps) goto done;
  ft__set(ps, p, "jaxpr", ft_pv_jaxpr(s.t->j));
  ft__set(ps, p, "length", ft_pv_int(length));
  ft__set(ps, p, "num_carry", ft_pv_int(n_carry));
  ft__set(ps, p, "num_consts", ft_pv_int(nc));
  ft__set(ps, p, "reverse", ft_pv_bool(reverse));
  /* jax.lax.scan's result structure: its ys pass through a filter of the
   * outputs it forwards (none here), so each prints RightsOnly(Right(None)). */
  int ny = s.t->j->n_out - n_carry;
  ft_pval fo = ft_pv_tuple(root->j->arena, 2), car = ft_pv_tuple(root->j->arena, n_carry);
  ft_pval ys = ft_pv_tuple(root->j->arena, ny);
  if ((!fo.u.items) || (n_carry && !car.u.items) || (ny && !ys.u.items)) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    goto done;
  }
  for (int i = 0; i < n_carry; i++) car.u.items[i] = ft_pv_none();
  for (int i = 0; i < ny; i++) ys.u.items[i] = (ft_pval){.tag = FT_PV_OPAQUE, .s = "RightsOnly(Right(None))"};
  fo.u.items[0] = car, fo.u.items[1] = ys;
  ft__set(ps, p, "ft_out", fo);
  ft_val **v = calloc((size_t)n + 1, sizeof *v);
  if (!v) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    goto done;
  }
  memcpy(v, init, sizeof *v * (size_t)n_carry);
  if (n_xs) memcpy(v + n_carry, xs, sizeof *v * (size_t)n_xs);
  args = ft__operands(root, nc, consts, 0, NULL, n, v);
  free(v);
  if (args) ret = ft__emit(root, p, nc + n, args, ps, out, max_out);
done:
  free(args);
  free(avals);
  free(s.args);
  return ret;
}

/* ------------------------------------------------------------------- jit */

int ft_jit_call(ft_tracer *t, const char *name, ft_trace_fn fn, void *user, int n_args,
                ft_val *const *args, ft_val **out, int max_out) {
  ft_tracer *root = ft__root_of(t, "jit", n_args, args);
  if (!root) return -1;
  if (n_args < 0 || !out) {
    ft__fail(root, FT_ERR_INVALID_ARG, "jit: invalid argument count or out array");
    return -1;
  }
  int ret = -1;
  ft_aval *avals = ft__avals_of(root, n_args, args);
  ft_val **ops = NULL;
  ft_subtrace s = {0};
  if (!avals || !ft__trace_sub(root, &s, fn, user, n_args, avals, "jit")) goto done;
  int nc = s.t->n_cap;
  if (!ft__install_sub(root, &s, nc, s.t->cap_outer)) goto done;
  ft_prim p = FT_P_JIT;
  ft_pval *ps = ft__params(root, p);
  const char *nm = name ? name : "<lambda>";
  char *copy = ft_arena_strndup(root->j->arena, nm, strlen(nm));
  if (!ps || !copy) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    goto done;
  }
  ft__set(ps, p, "jaxpr", ft_pv_jaxpr(s.t->j));
  ft__set(ps, p, "name", (ft_pval){.tag = FT_PV_STR, .s = copy});
  if ((ops = ft__operands(root, nc, s.t->cap_outer, 0, NULL, n_args, args)))
    ret = ft__emit(root, p, nc + n_args, ops, ps, out, max_out);
done:
  free(ops);
  free(avals);
  free(s.args);
  return ret;
}
