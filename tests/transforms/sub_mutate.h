/* tests/transforms/sub_mutate.h: the mutation generator of the shared-
 * sub-jaxpr properties (issue 28), shared by tests/transforms/
 * test_sub_props.c and the fuzz target tests/fuzz/fuzz_roundtrip.c. It
 * builds, from a program p, a program that calls p at several sites
 * through one or several definitions and names, with other operands and
 * other shapes (sub_mutate's comment). Uses the transforms' internals. */
#ifndef FT_SUB_MUTATE_H
#define FT_SUB_MUTATE_H

#include <string.h>

#include "ft.h"
#include "transforms/transforms.h"

enum { SUB_MAXV = 64 };


/* A real float dtype (the cond index and the loss are built from these). */
static inline bool is_float(const ft_aval *av) {
  return av->dtype == FT_F32 || av->dtype == FT_F64 || av->dtype == FT_F16 || av->dtype == FT_BF16;
}

static inline ft_var *emit_call(tx *t, ft_jaxpr *sub, const char *name, ft_var *const *in, ft_var **out) {
  ft_pval *ps = tx_params(t, FT_P_JIT);
  if (!ps) return NULL;
  ft_pval nm = {.tag = FT_PV_STR, .s = ft_arena_strndup(t->a, name, strlen(name))};
  pset(FT_P_JIT, ps, "name", nm);
  pset(FT_P_JIT, ps, "jaxpr", ft_pv_jaxpr(sub));
  if (!tx_emitn(t, FT_P_JIT, ps, sub->n_in, in, sub->n_out, out)) return NULL;
  return out[0];
}

/* The first jit name inside j (its sub-jaxprs included), or NULL. */
static inline const char *inner_name(const ft_jaxpr *j) {
  for (int q = 0; q < j->n_eqn; q++) {
    const ft_eqn *e = &j->eqns[q];
    if (e->prim == FT_P_JIT) {
      const ft_pval *v = pget(e->prim, e->params, "name");
      if (v && v->s) return v->s;
    }
  }
  return NULL;
}

/* A program made from p (no constvars) that calls it at several sites:
 *   o1 = jit[name=N1](S; x)          S: p, one definition
 *   o2 = jit[name=N2](S; x * 0.75)   the same jaxpr, other operands
 *   kind & 1: N2 = N1 ("f"); else N2 is a name used inside p (or "g")
 *   kind & 2: o3 = jit[name=N1](S2; x), S2 a second, equal definition
 *             (printed inline when small: inline and hoisted mixed)
 *   kind & 4: o4 = jit[name=N1](vmap(p); x broadcast to [2, ...]): one
 *             name for jaxprs of different shapes
 *   kind & 8: o5 = cond[branches=(S, S)](sum(x0) > -1e30; x)
 * Outputs: (loss, o1..., o2..., ...) where loss is the sum of squares of
 * every float output, when there is one; else the outputs alone. */
static inline ft_jaxpr *sub_mutate(ft_ctx *C, const ft_jaxpr *p, unsigned kind) {
  if (p->n_const || p->n_in > SUB_MAXV || p->n_out > SUB_MAXV) {
    ft_set_error(C, FT_ERR_UNSUPPORTED, "mutate: a program with constvars or over %d inputs or outputs",
                 SUB_MAXV);
    return NULL;
  }
  ft_jaxpr *q = ft_jaxpr_new(NULL);
  if (!q) return NULL;
  ft_arena *a = q->arena;
  ft_jaxpr *s = jaxpr_clone_shared(a, p), *s2 = jaxpr_clone_shared(a, p), *v = NULL;
  if (!s || !s2) return ft_jaxpr_free(q), NULL;
  if (kind & 4) {
    int ax[SUB_MAXV];
    for (int i = 0; i < SUB_MAXV; i++) ax[i] = 0;
    ft_jaxpr *vp = ft_vmap(C, p, ft_jaxpr_num_inputs(p), ax, ft_jaxpr_num_outputs(p), ax, 2);
    if (vp) {
      v = jaxpr_clone_shared(a, vp);
      ft_jaxpr_free(vp);
    }
    ft_ctx_clear_error(C);
  }
  tx t;
  tx_init(&t, C, q, "mutate");
  int n = p->n_in;
  ft_var *x[SUB_MAXV], *x2[SUB_MAXV], *xb[SUB_MAXV], *outs[8 * SUB_MAXV], *o[SUB_MAXV];
  int no = 0, first_float = -1;
  for (int i = 0; i < n; i++) {
    x[i] = var_fresh(a, &p->invars[i]->aval);
    bool fl = is_float(&x[i]->aval);
    if (fl && first_float < 0) first_float = i;
    x2[i] = fl ? tx_mul(&t, x[i], tx_lit(&t, x[i]->aval.dtype, 0.75)) : x[i];
    if (v) {
      int64_t dims[FT_MAX_RANK + 1], bd[FT_MAX_RANK];
      const ft_aval *av = &x[i]->aval;
      dims[0] = 2;
      for (int d = 0; d < av->rank; d++) dims[d + 1] = av->dims[d], bd[d] = d + 1;
      xb[i] = tx_bcast(&t, x[i], av->rank + 1, dims, bd);
    }
  }
  const char *inner = inner_name(p);
  const char *n1 = "f", *n2 = kind & 1 ? "f" : inner ? inner : "g";
  emit_call(&t, s, n1, x, o);
  for (int k = 0; k < p->n_out; k++) outs[no++] = o[k];
  emit_call(&t, s, n2, x2, o);
  for (int k = 0; k < p->n_out; k++) outs[no++] = o[k];
  if (kind & 2) {
    emit_call(&t, s2, n1, x, o);
    for (int k = 0; k < p->n_out; k++) outs[no++] = o[k];
  }
  if (v) {
    emit_call(&t, v, n1, xb, o);
    for (int k = 0; k < v->n_out; k++) outs[no++] = o[k];
  }
  if ((kind & 8) && first_float >= 0) {
    ft_var *x0 = x[first_float];
    int64_t axes[FT_MAX_RANK];
    for (int d = 0; d < x0->aval.rank; d++) axes[d] = d;
    ft_var *sum = x0->aval.rank ? tx_reduce_sum(&t, x0, x0->aval.rank, axes) : x0;
    ft_var *pr = tx_binop(&t, FT_P_GT, sum, tx_lit(&t, x0->aval.dtype, -1e30));
    ft_var *idx = tx_convert(&t, pr, FT_I32), *cin[SUB_MAXV + 1];
    cin[0] = idx;
    for (int i = 0; i < n; i++) cin[i + 1] = x[i];
    ft_pval *ps = tx_params(&t, FT_P_COND);
    ft_pval br = ft_pv_tuple(a, 2);
    br.u.items[0] = ft_pv_jaxpr(s), br.u.items[1] = ft_pv_jaxpr(s);
    pset(FT_P_COND, ps, "branches", br);
    if (tx_emitn(&t, FT_P_COND, ps, n + 1, cin, s->n_out, o))
      for (int k = 0; k < s->n_out; k++) outs[no++] = o[k];
  }
  if (t.failed) return ft_jaxpr_free(q), NULL;
  /* the loss: sum of squares of the float outputs */
  ft_var *loss = NULL;
  for (int k = 0; k < no; k++) {
    if (!is_float(&outs[k]->aval) || outs[k]->aval.dtype != outs[0]->aval.dtype) continue;
    int64_t axes[FT_MAX_RANK];
    for (int d = 0; d < outs[k]->aval.rank; d++) axes[d] = d;
    ft_var *sq = tx_mul(&t, outs[k], outs[k]);
    ft_var *r = outs[k]->aval.rank ? tx_reduce_sum(&t, sq, outs[k]->aval.rank, axes) : sq;
    loss = loss ? tx_add(&t, loss, r) : r;
  }
  ft_var *all[8 * SUB_MAXV + 1];
  int na = 0;
  if (loss) all[na++] = loss;
  for (int k = 0; k < no; k++) all[na++] = outs[k];
  if (t.failed || !ft_jaxpr_set_vars(q, 0, NULL, n, x, na, all) || ft_jaxpr_verify(C, q) != FT_OK)
    return ft_jaxpr_free(q), NULL;
  return q;
}

#endif
