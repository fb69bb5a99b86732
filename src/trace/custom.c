/* src/trace/custom.c: jax.custom_jvp and jax.custom_vjp while tracing.
 * ft_custom_jvp_call traces the function into call_jaxpr and its JVP rule
 * into the `jvp` param; ft_custom_vjp_call traces the function, fwd and bwd
 * into call_jaxpr, `fwd` and `bwd`. Values of enclosing traces that any of
 * them use are captured once, as num_consts leading operands that every
 * sub-jaxpr takes first (the layouts: docs/autodiff.md, "Custom rules";
 * shape.c checks them on every equation). */
#include <string.h>

#include "trace/trace.h"

/* Names print bare (`name=f`) and must parse back as one. */
static bool name_ok(const char *s) {
  if (!*s) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == '.' || *s == '<' || *s == '>'))
      return false;
  return true;
}

/* Common checks of both entry points; the root, or NULL (error recorded). */
static ft_tracer *start(ft_tracer *t, const char *prim, const char *name, int n_fns,
                        const ft_trace_fn *fns, int n_args, ft_val *const *args, ft_val **out) {
  ft_tracer *root = ft__root_of(t, prim, n_args, args);
  if (!root) return NULL;
  if (n_args < 0 || !out) {
    ft__fail(root, FT_ERR_INVALID_ARG, "%s: invalid argument count or out array", prim);
    return NULL;
  }
  for (int i = 0; i < n_fns; i++)
    if (!fns[i]) {
      ft__fail(root, FT_ERR_INVALID_ARG, "%s: the function and its rules must not be NULL", prim);
      return NULL;
    }
  if (name && !name_ok(name)) {
    ft__fail(root, FT_ERR_INVALID_ARG,
             "%s: name '%s' must be an identifier (letters, digits, '_', '.', '<', '>')", prim, name);
    return NULL;
  }
  return root;
}

/* Checks that sub-jaxpr j returns, from output `from` on, n values of the
 * avals want[0..n). */
static bool outs_fit(ft_tracer *root, const char *prim, const char *what, const ft_jaxpr *j,
                     int from, int n, const ft_aval *want, const char *of) {
  for (int k = 0; k < n; k++) {
    const ft_aval *got = &j->outvars[from + k]->aval;
    if (ft_aval_eq(got, &want[k])) continue;
    char a[128], b[128];
    ft__fail(root, ft_shape_eq(got, &want[k]) ? FT_ERR_TYPE : FT_ERR_SHAPE,
             "%s: %s output %d is %s but %s %d is %s", prim, what, from + k,
             ft_aval_str(got, a, sizeof a), of, k, ft_aval_str(&want[k], b, sizeof b));
    return false;
  }
  return true;
}

/* The avals of j's outputs [from, from + n) (malloc'd). */
static ft_aval *out_avals(ft_tracer *root, const ft_jaxpr *j, int from, int n) {
  ft_aval *a = calloc((size_t)n + 1, sizeof *a);
  if (!a) ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
  for (int k = 0; a && k < n; k++) a[k] = j->outvars[from + k]->aval;
  return a;
}

/* The union of the captures of s[0..n), in first-seen order (malloc'd). */
static ft_var **union_caps(ft_tracer *root, const ft_subtrace *s, int n, int *n_u) {
  int cap = 0;
  for (int k = 0; k < n; k++) cap += s[k].t->n_cap;
  ft_var **u = calloc((size_t)cap + 1, sizeof *u);
  if (!u) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    return NULL;
  }
  *n_u = 0;
  for (int k = 0; k < n; k++)
    for (int c = 0; c < s[k].t->n_cap; c++) {
      bool seen = false;
      for (int i = 0; i < *n_u && !seen; i++) seen = u[i] == s[k].t->cap_outer[c];
      if (!seen) u[(*n_u)++] = s[k].t->cap_outer[c];
    }
  return u;
}

/* The JVP rule was installed as [consts, args, t_args]; the call's rule
 * layout is [consts, args, t_consts, t_args]. The const tangents are fresh
 * unused inputs: the rule does not differentiate with respect to them. */
static bool add_const_tangents(ft_tracer *root, ft_jaxpr *j, int nc, int n_args) {
  ft_var **inv = calloc((size_t)(j->n_in + nc) + 1, sizeof *inv);
  bool ok = inv != NULL;
  if (ok) {
    memcpy(inv, j->invars, sizeof *inv * (size_t)(nc + n_args));
    for (int i = 0; ok && i < nc; i++)
      ok = (inv[nc + n_args + i] = ft_var_new(root->j->arena, &j->invars[i]->aval)) != NULL;
    memcpy(inv + 2 * nc + n_args, j->invars + nc + n_args, sizeof *inv * (size_t)n_args);
    ok = ok && ft_jaxpr_set_vars(j, 0, NULL, j->n_in + nc, inv, j->n_out, j->outvars);
  }
  free(inv);
  if (!ok) ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
  return ok;
}

/* Emits the custom call: params call_jaxpr, name, num_consts and the rules
 * (already set in ps); operands the consts, then args. */
static int emit_call(ft_tracer *root, ft_prim p, ft_pval *ps, const ft_subtrace *fn, const char *name,
                     int n_u, ft_var *const *uni, int n_args, ft_val *const *args, ft_val **out,
                     int max_out) {
  const char *nm = name ? name : "<lambda>";
  char *copy = ft_arena_strndup(root->j->arena, nm, strlen(nm));
  if (!copy) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    return -1;
  }
  ft__set(ps, p, "call_jaxpr", ft_pv_jaxpr(fn->t->j));
  ft__set(ps, p, "name", (ft_pval){.tag = FT_PV_STR, .s = copy});
  ft__set(ps, p, "num_consts", ft_pv_int(n_u));
  ft_val **ops = ft__operands(root, n_u, uni, 0, NULL, n_args, args);
  if (!ops) return -1;
  int ret = ft__emit(root, p, n_u + n_args, ops, ps, out, max_out);
  free(ops);
  return ret;
}

int ft_custom_jvp_call(ft_tracer *t, const char *name, ft_trace_fn fn, ft_trace_fn jvp_fn, void *user,
                       int n_args, ft_val *const *args, ft_val **out, int max_out) {
  const char *P = "custom_jvp_call";
  ft_trace_fn fns[2] = {fn, jvp_fn};
  ft_tracer *root = start(t, P, name, 2, fns, n_args, args, out);
  if (!root) return -1;
  int ret = -1, n_u = 0;
  ft_subtrace s[2] = {{0}, {0}};
  ft_var **uni = NULL;
  ft_aval *outs = NULL, *avals = calloc((size_t)(2 * n_args) + 1, sizeof *avals);
  if (!avals) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    goto done;
  }
  for (int i = 0; i < n_args; i++) avals[i] = avals[n_args + i] = args[i]->v->aval;
  if (!ft__trace_sub(root, &s[0], fn, user, n_args, avals, "custom_jvp_call function") ||
      !ft__trace_sub(root, &s[1], jvp_fn, user, 2 * n_args, avals, "custom_jvp_call jvp rule"))
    goto done;
  int m = s[0].t->j->n_out;
  const ft_jaxpr *rule = s[1].t->j;
  if (rule->n_out != 2 * m) {
    ft__fail(root, FT_ERR_TYPE,
             "%s: the jvp rule returns %d values; expected %d (the function's %d outputs, then "
             "their tangents)", P, rule->n_out, 2 * m, m);
    goto done;
  }
  if (!(outs = out_avals(root, s[0].t->j, 0, m)) ||
      !outs_fit(root, P, "jvp rule", rule, 0, m, outs, "the function's output") ||
      !outs_fit(root, P, "jvp rule", rule, m, m, outs, "the tangent of the function's output"))
    goto done;
  if (!(uni = union_caps(root, s, 2, &n_u)) || !ft__install_sub(root, &s[0], n_u, uni) ||
      !ft__install_sub(root, &s[1], n_u, uni) || !add_const_tangents(root, s[1].t->j, n_u, n_args))
    goto done;
  ft_pval *ps = ft__params(root, FT_P_CUSTOM_JVP_CALL);
  if (!ps) goto done;
  ft__set(ps, FT_P_CUSTOM_JVP_CALL, "jvp", ft_pv_jaxpr(s[1].t->j));
  ret = emit_call(root, FT_P_CUSTOM_JVP_CALL, ps, &s[0], name, n_u, uni, n_args, args, out, max_out);
done:
  free(uni);
  free(outs);
  free(avals);
  free(s[0].args);
  free(s[1].args);
  return ret;
}

int ft_custom_vjp_call(ft_tracer *t, const char *name, ft_trace_fn fn, ft_trace_fn fwd_fn,
                       ft_trace_fn bwd_fn, void *user, int n_args, ft_val *const *args, ft_val **out,
                       int max_out) {
  const char *P = "custom_vjp_call";
  ft_trace_fn fns[3] = {fn, fwd_fn, bwd_fn};
  ft_tracer *root = start(t, P, name, 3, fns, n_args, args, out);
  if (!root) return -1;
  int ret = -1, n_u = 0;
  ft_subtrace s[3] = {{0}, {0}, {0}};
  ft_var **uni = NULL;
  ft_aval *outs = NULL, *bin = NULL, *avals = ft__avals_of(root, n_args, args);
  if (!avals || !ft__trace_sub(root, &s[0], fn, user, n_args, avals, "custom_vjp_call function") ||
      !ft__trace_sub(root, &s[1], fwd_fn, user, n_args, avals, "custom_vjp_call fwd"))
    goto done;
  int m = s[0].t->j->n_out, r = s[1].t->j->n_out - m;
  if (r < 0) {
    ft__fail(root, FT_ERR_TYPE,
             "%s: fwd returns %d values; expected the function's %d outputs, then the residuals",
             P, s[1].t->j->n_out, m);
    goto done;
  }
  if (!(outs = out_avals(root, s[0].t->j, 0, m)) ||
      !outs_fit(root, P, "fwd", s[1].t->j, 0, m, outs, "the function's output"))
    goto done;
  /* bwd: (residuals..., a cotangent per output...) -> a cotangent per argument */
  if (!(bin = out_avals(root, s[1].t->j, 0, r + m))) goto done;
  memmove(bin, bin + m, sizeof *bin * (size_t)r);
  memcpy(bin + r, outs, sizeof *bin * (size_t)m);
  if (!ft__trace_sub(root, &s[2], bwd_fn, user, r + m, bin, "custom_vjp_call bwd")) goto done;
  if (s[2].t->j->n_out != n_args) {
    ft__fail(root, FT_ERR_TYPE, "%s: bwd returns %d values; expected one cotangent per argument (%d)",
             P, s[2].t->j->n_out, n_args);
    goto done;
  }
  if (!outs_fit(root, P, "bwd", s[2].t->j, 0, n_args, avals, "argument")) goto done;
  if (!(uni = union_caps(root, s, 3, &n_u))) goto done;
  for (int k = 0; k < 3; k++)
    if (!ft__install_sub(root, &s[k], n_u, uni)) goto done;
  ft_prim p = FT_P_CUSTOM_VJP_CALL;
  ft_pval *ps = ft__params(root, p);
  if (!ps) goto done;
  ft__set(ps, p, "fwd", ft_pv_jaxpr(s[1].t->j));
  ft__set(ps, p, "bwd", ft_pv_jaxpr(s[2].t->j));
  ret = emit_call(root, p, ps, &s[0], name, n_u, uni, n_args, args, out, max_out);
done:
  free(uni);
  free(outs);
  free(bin);
  free(avals);
  for (int k = 0; k < 3; k++) free(s[k].args);
  return ret;
}
