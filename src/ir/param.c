/* src/ir/param.c: typed parameter values and the schema defaults. */
#include <string.h>

#include "ir.h"

ft_pval ft_pv_none(void) { return (ft_pval){.tag = FT_PV_NONE}; }
ft_pval ft_pv_int(int64_t i) { return (ft_pval){.tag = FT_PV_INT, .u.i = i}; }
ft_pval ft_pv_bool(bool b) { return (ft_pval){.tag = FT_PV_BOOL, .u.b = b}; }
ft_pval ft_pv_dtype(ft_dtype dt) { return (ft_pval){.tag = FT_PV_DTYPE, .u.dt = dt}; }
ft_pval ft_pv_jaxpr(struct ft_jaxpr *j) { return (ft_pval){.tag = FT_PV_JAXPR, .u.jaxpr = j}; }

ft_pval ft_pv_tuple(ft_arena *a, int n) {
  ft_pval v = {.tag = FT_PV_TUPLE, .n = n};
  v.u.items = n ? ft_arena_alloc(a, sizeof(ft_pval) * (size_t)n) : NULL;
  if (n && !v.u.items) v.tag = FT_PV_NONE, v.n = 0;
  return v;
}

ft_pval ft_pv_ints(ft_arena *a, int n, const int64_t *vals) {
  ft_pval v = ft_pv_tuple(a, n);
  for (int i = 0; i < v.n; i++) v.u.items[i] = ft_pv_int(vals[i]);
  return v;
}

bool ft_pv_get_ints(const ft_pval *v, int64_t *out, int max, int *n_out) {
  if (v->tag != FT_PV_TUPLE) return false;
  for (int i = 0; i < v->n; i++) {
    if (v->u.items[i].tag != FT_PV_INT) return false;
    if (i < max) out[i] = v->u.items[i].u.i;
  }
  if (n_out) *n_out = v->n;
  return true;
}

bool ft_pval_eq(const ft_pval *a, const ft_pval *b) {
  if (a->tag != b->tag) return false;
  switch (a->tag) {
  case FT_PV_NONE: return true;
  case FT_PV_BOOL: return a->u.b == b->u.b;
  case FT_PV_INT: return a->u.i == b->u.i;
  case FT_PV_FLOAT: return memcmp(&a->u.f, &b->u.f, sizeof(double)) == 0;
  case FT_PV_DTYPE: return a->u.dt == b->u.dt;
  case FT_PV_SYM: case FT_PV_STR: case FT_PV_OPAQUE:
    return strcmp(a->s ? a->s : "", b->s ? b->s : "") == 0;
  case FT_PV_TUPLE:
    if (a->n != b->n || a->list != b->list) return false;
    for (int i = 0; i < a->n; i++)
      if (!ft_pval_eq(&a->u.items[i], &b->u.items[i])) return false;
    return true;
  case FT_PV_JAXPR: return a->u.jaxpr == b->u.jaxpr;
  }
  return false;
}

/* Defaults in prims.def are simple literals: None, True, False, an integer,
 * a float (symmetric_product's alpha=1.0) or (). Anything richer would
 * belong in the parser; this keeps the IR's table independent of it. */
static ft_pval default_value(const char *t) {
  if (!t || !strcmp(t, "None")) return ft_pv_none();
  if (!strcmp(t, "True")) return ft_pv_bool(true);
  if (!strcmp(t, "False")) return ft_pv_bool(false);
  if (!strcmp(t, "()")) return (ft_pval){.tag = FT_PV_TUPLE};
  char *end;
  long long v = strtoll(t, &end, 10);
  if (*end == '.') {
    ft_pval f = {.tag = FT_PV_FLOAT};
    f.u.f = strtod(t, &end);
    FT_ASSERT(*end == 0);
    return f;
  }
  FT_ASSERT(*end == 0); /* a prims.def default this function does not know */
  return ft_pv_int(v);
}

ft_pval *ft_params_default(ft_arena *a, ft_prim p) {
  const ft_prim_info *pi = ft_prim_get(p);
  ft_pval *ps = ft_arena_alloc(a, sizeof(ft_pval) * (size_t)(pi->n_params + 1));
  if (!ps) return NULL;
  for (int i = 0; i < pi->n_params; i++) ps[i] = default_value(pi->params[i].dflt);
  return ps;
}
