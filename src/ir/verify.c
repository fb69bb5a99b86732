/* src/ir/verify.c: ft_jaxpr_verify, the checker every pass runs after
 * itself (DESIGN.md §2). For each equation: arity, param kinds against the
 * schema, SSA scoping (every var defined once, before use; sub-jaxprs are
 * closed, so they use only their own vars), and that the declared output
 * avals are what the shape rule (ft_infer) computes. Recursive into
 * sub-jaxprs; messages name the path of equations down to the problem, e.g.
 * "eqn 2 (cond): branch 1: eqn 0 (add): operand shapes f32[3] and f32[4] do
 * not match". */
#include <string.h>

#include "ir.h"

/* A map from addresses to small ints (open addressing). It records which
 * jaxpr (scope) defined each var, keyed by the var's address since
 * transforms may combine vars of several arenas; and which sub-jaxprs were
 * verified already (JAX hoists a sub-jaxpr used by several equations into
 * `let f = {...} in`, so one sub-jaxpr object may have many uses). */
typedef struct pent {
  const void *key;
  uint32_t val;
} pent;

typedef struct pmap {
  pent *e;
  size_t cap, n;
} pmap;

typedef struct V {
  ft_ctx *ctx;
  pmap defs, subs;
  uint32_t next_scope;
  bool nomem;
  ft_aval *scratch;     /* check_types' aval buffer, grown on demand */
  size_t scratch_cap;
} V;

/* Arena objects are allocated one after another, so consecutive keys take
 * consecutive slots (cache-friendly on big jaxprs) while each 1 MiB block
 * of addresses starts at a scrambled offset (distinct blocks spread). */
static size_t slot_of(const pmap *m, const void *k) {
  uintptr_t x = (uintptr_t)k >> 4;
  size_t i = (size_t)(x + (x >> 16) * (uintptr_t)0x9E3779B97F4A7C15ull) & (m->cap - 1);
  while (m->e[i].key && m->e[i].key != k) i = (i + 1) & (m->cap - 1);
  return i;
}

static bool grow(pmap *m) {
  pmap nm = {0};
  nm.cap = m->cap ? m->cap * 2 : 256;
  nm.e = calloc(nm.cap, sizeof *nm.e);
  if (!nm.e) return false;
  for (size_t i = 0; i < m->cap; i++)
    if (m->e[i].key) {
      nm.e[slot_of(&nm, m->e[i].key)] = m->e[i];
      nm.n++;
    }
  free(m->e);
  *m = nm;
  return true;
}

/* The value stored for k, or 0 if none. */
static uint32_t lookup(const pmap *m, const void *k) {
  if (!m->cap) return 0;
  size_t i = slot_of(m, k);
  return m->e[i].key ? m->e[i].val : 0;
}

/* Stores k -> val; false if k was already present (or no memory). */
static bool define_in(V *v, pmap *m, const void *k, uint32_t val) {
  if ((m->n + 1) * 2 > m->cap && !grow(m)) {
    v->nomem = true;
    return false;
  }
  size_t i = slot_of(m, k);
  if (m->e[i].key) return false;
  m->e[i].key = k;
  m->e[i].val = val;
  m->n++;
  return true;
}

static bool define(V *v, const ft_var *k, uint32_t scope) { return define_in(v, &v->defs, k, scope); }

static ft_status err(V *v, const char *pre, ft_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static ft_status err(V *v, const char *pre, ft_status st, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (v->nomem) return ft_set_error(v->ctx, FT_ERR_NOMEM, "%sout of memory", pre);
  return ft_set_error(v->ctx, st, "%s%s", pre, msg);
}

/* ----------------------------------------------------------- param kinds */

static bool is_ints(const ft_pval *p) {
  if (p->tag != FT_PV_TUPLE) return false;
  for (int i = 0; i < p->n; i++)
    if (p->u.items[i].tag != FT_PV_INT) return false;
  return true;
}

static bool kind_ok(const ft_param_spec *s, const ft_pval *p) {
  switch (s->kind) {
  case FT_PK_ANY: return true;
  case FT_PK_INT: return p->tag == FT_PV_INT;
  case FT_PK_INTS: return is_ints(p);
  case FT_PK_INTS_OR_NONE: return p->tag == FT_PV_NONE || is_ints(p);
  case FT_PK_BOOL: return p->tag == FT_PV_BOOL;
  case FT_PK_BOOLS:
    if (p->tag != FT_PV_TUPLE) return false;
    for (int i = 0; i < p->n; i++)
      if (p->u.items[i].tag != FT_PV_BOOL) return false;
    return true;
  case FT_PK_FLOAT: return p->tag == FT_PV_FLOAT || p->tag == FT_PV_INT;
  case FT_PK_DTYPE: return p->tag == FT_PV_DTYPE && (unsigned)p->u.dt < FT_NUM_DTYPES;
  case FT_PK_DTYPE_OR_NONE:
    return p->tag == FT_PV_NONE || (p->tag == FT_PV_DTYPE && (unsigned)p->u.dt < FT_NUM_DTYPES);
  case FT_PK_SYM: {
    if (p->tag != FT_PV_SYM || p->u.i < 0) return false;
    for (int64_t i = 0; s->syms && s->syms[i]; i++)
      if (i == p->u.i) return true;
    return false;
  }
  case FT_PK_NAME: return p->tag == FT_PV_STR || p->tag == FT_PV_SYM || p->tag == FT_PV_OPAQUE;
  case FT_PK_JAXPR: return p->tag == FT_PV_JAXPR && p->u.jaxpr;
  case FT_PK_JAXPR_OR_NONE: return p->tag == FT_PV_NONE || (p->tag == FT_PV_JAXPR && p->u.jaxpr);
  case FT_PK_JAXPRS:
    if (p->tag != FT_PV_TUPLE) return false;
    for (int i = 0; i < p->n; i++)
      if (p->u.items[i].tag != FT_PV_JAXPR || !p->u.items[i].u.jaxpr) return false;
    return true;
  case FT_PK_DOTDIMS:
    if (p->tag != FT_PV_TUPLE || p->n != 2) return false;
    for (int i = 0; i < 2; i++) {
      const ft_pval *q = &p->u.items[i];
      if (q->tag != FT_PV_TUPLE || q->n != 2 || !is_ints(&q->u.items[0]) || !is_ints(&q->u.items[1]))
        return false;
    }
    return true;
  case FT_PK_PADCFG:
    if (p->tag != FT_PV_TUPLE) return false;
    for (int i = 0; i < p->n; i++)
      if (!is_ints(&p->u.items[i]) || p->u.items[i].n != 3) return false;
    return true;
  case FT_PK_RULE:
    return p->tag == FT_PV_STR || p->tag == FT_PV_OPAQUE || (p->tag == FT_PV_JAXPR && p->u.jaxpr);
  case FT_PK_LSTUPLE: return ft_lstuple_ok(p);
  case FT_PK_AVAL: return p->tag == FT_PV_OPAQUE || p->tag == FT_PV_NONE; /* none: emitted by a transform */
  }
  return false;
}

static const char *kind_text(ft_pkind k) {
  switch (k) {
  case FT_PK_ANY: return "any value";
  case FT_PK_INT: return "an int";
  case FT_PK_INTS: return "a tuple of ints";
  case FT_PK_INTS_OR_NONE: return "a tuple of ints or None";
  case FT_PK_BOOL: return "a bool";
  case FT_PK_BOOLS: return "a tuple of bools";
  case FT_PK_FLOAT: return "a float";
  case FT_PK_DTYPE: return "a dtype";
  case FT_PK_DTYPE_OR_NONE: return "a dtype or None";
  case FT_PK_SYM: return "one of its allowed names";
  case FT_PK_NAME: return "a name";
  case FT_PK_JAXPR: return "a jaxpr";
  case FT_PK_JAXPR_OR_NONE: return "a jaxpr or None";
  case FT_PK_JAXPRS: return "a tuple of jaxprs";
  case FT_PK_DOTDIMS: return "((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))";
  case FT_PK_PADCFG: return "a tuple of (lo, hi, interior)";
  case FT_PK_RULE: return "a function name or a jaxpr";
  case FT_PK_AVAL: return "an aval such as f32[4]";
  case FT_PK_LSTUPLE: return "_LinearSolveTuple(matvec=, vecmat=, solve=, transpose_solve=)";
  }
  return "?";
}

/* ------------------------------------------------------------- the walk */

static ft_status verify_jaxpr(V *v, const ft_jaxpr *j, const char *pre);

static ft_status check_atom(V *v, const char *pre, const char *what, int k, const ft_var *a,
                            uint32_t scope) {
  char b[256];
  if (!a) return err(v, pre, FT_ERR_TYPE, "%s %d is missing (NULL)", what, k);
  if (a->kind == FT_DROP) return err(v, pre, FT_ERR_TYPE, "%s %d is a dropped var `_`", what, k);
  if (a->kind == FT_LIT) {
    if (a->aval.rank != 0)
      return err(v, pre, FT_ERR_TYPE, "%s %d is a literal of non-scalar aval %s", what, k,
                 ft_aval_str(&a->aval, b, sizeof b));
    return FT_OK;
  }
  uint32_t s = lookup(&v->defs, a);
  if (s == scope) return FT_OK;
  ft_aval_str(&a->aval, b, sizeof b);
  if (s == 0)
    return err(v, pre, FT_ERR_TYPE, "%s %d (%s) is used before it is defined", what, k, b);
  return err(v, pre, FT_ERR_TYPE, "%s %d (%s) is defined in another jaxpr; sub-jaxprs are closed "
             "and may use only their own vars", what, k, b);
}

/* Formats a message path prefix; truncation of absurdly deep paths is fine. */
static void path_fmt(char *dst, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void path_fmt(char *dst, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(dst, n, fmt, ap);
  va_end(ap);
}

/* The message prefix of one equation, "<outer>eqn 3 (add): ", formatted
 * only when a message or a sub-jaxpr path needs it (formatting it for
 * every equation cost more than the checks). */
typedef struct where {
  const char *outer;
  int idx;
  const char *name;
  bool done;
  char buf[1100];
} where;

static const char *where_str(where *w) {
  if (!w->done) path_fmt(w->buf, sizeof w->buf, "%seqn %d (%s): ", w->outer, w->idx, w->name);
  w->done = true;
  return w->buf;
}

/* Recurses into the sub-jaxprs of one equation's params. */
static ft_status verify_subs(V *v, where *w, const ft_eqn *e) {
  const ft_prim_info *pi = ft_prim_get(e->prim);
  char sub[1200];
  for (int k = 0; k < pi->n_params; k++) {
    const ft_pval *p = &e->params[k];
    if (p->tag == FT_PV_JAXPR && p->u.jaxpr) {
      path_fmt(sub, sizeof sub, "%s%s: ", where_str(w), pi->params[k].name);
      /* a shard_map body's shape rules see its mesh (all_to_all needs it) */
      ft_spmd_env saved;
      if (e->prim == FT_P_SHARD_MAP) ft_spmd_env_enter(&e->params[ft_prim_param_index(e->prim, "mesh")], &saved);
      ft_status st = verify_jaxpr(v, p->u.jaxpr, sub);
      if (e->prim == FT_P_SHARD_MAP) ft_spmd_env_leave(&saved);
      if (st) return st;
    } else if (p->tag == FT_PV_TUPLE) {
      for (int i = 0; i < p->n; i++) {
        const ft_pval *q = &p->u.items[i];
        if (q->tag != FT_PV_JAXPR || !q->u.jaxpr) continue;
        if (e->prim == FT_P_COND) path_fmt(sub, sizeof sub, "%sbranch %d: ", where_str(w), i);
        else path_fmt(sub, sizeof sub, "%s%s[%d]: ", where_str(w), pi->params[k].name, i);
        ft_status st = verify_jaxpr(v, q->u.jaxpr, sub);
        if (st) return st;
      }
    }
  }
  return FT_OK;
}

/* Runs the shape rule and compares the declared outputs with its result. */
static ft_status check_types(V *v, where *w, const ft_eqn *e) {
  const ft_prim_info *pi = ft_prim_get(e->prim);
  int cap = e->n_out + e->n_in + 256;
  for (int k = 0; k < pi->n_params; k++) {
    const ft_pval *p = &e->params[k];
    if (p->tag == FT_PV_JAXPR && p->u.jaxpr) cap += p->u.jaxpr->n_out;
    if (p->tag == FT_PV_TUPLE)
      for (int i = 0; i < p->n; i++)
        if (p->u.items[i].tag == FT_PV_JAXPR && p->u.items[i].u.jaxpr) cap += p->u.items[i].u.jaxpr->n_out;
  }
  size_t need = (size_t)(e->n_in + 1) + (size_t)cap;
  if (need > v->scratch_cap) {
    free(v->scratch);
    v->scratch_cap = need > 2 * v->scratch_cap ? need : 2 * v->scratch_cap;
    if (!(v->scratch = malloc(sizeof(ft_aval) * v->scratch_cap))) {
      v->scratch_cap = 0;
      return ft_set_error(v->ctx, FT_ERR_NOMEM, "%sout of memory", where_str(w));
    }
  }
  ft_aval *in = v->scratch, *out = v->scratch + e->n_in + 1;
  for (int i = 0; i < e->n_in; i++) in[i] = e->in[i]->aval;
  int n_out = 0;
  ft_status st = ft_infer(v->ctx, e->prim, e->params, e->n_in, in, &n_out, out, cap);
  if (!st && n_out == e->n_out) { /* the common case: no message to build */
    int k = 0;
    while (k < n_out && ft_aval_eq(&e->out[k]->aval, &out[k])) k++;
    if (k == n_out) return FT_OK;
  }
  const char *pre = where_str(w);
  if (st) {
    /* ft_infer says "add: ..."; the prefix already names the primitive. */
    char msg[sizeof v->ctx->err];
    const char *m = ft_ctx_error(v->ctx);
    size_t nl = strlen(pi->name);
    if (!strncmp(m, pi->name, nl) && m[nl] == ':' && m[nl + 1] == ' ') m += nl + 2;
    snprintf(msg, sizeof msg, "%s", m);
    st = ft_set_error(v->ctx, st, "%s%s", pre, msg);
  } else if (n_out != e->n_out) {
    st = err(v, pre, FT_ERR_TYPE, "declares %d outputs but the shape rule gives %d", e->n_out, n_out);
  } else {
    for (int k = 0; k < n_out && !st; k++) {
      char b0[256], b1[256];
      if (!ft_aval_eq(&e->out[k]->aval, &out[k]))
        st = err(v, pre, ft_shape_eq(&e->out[k]->aval, &out[k]) ? FT_ERR_TYPE : FT_ERR_SHAPE,
                 "declared output %d is %s but the shape rule gives %s", k,
                 ft_aval_str(&e->out[k]->aval, b0, sizeof b0), ft_aval_str(&out[k], b1, sizeof b1));
    }
  }
  return st;
}

/* Whether atom a needs no message: a scalar literal, or a var of this scope. */
static bool atom_ok(V *v, const ft_var *a, uint32_t scope) {
  if (!a) return false;
  if (a->kind == FT_LIT) return a->aval.rank == 0;
  return a->kind == FT_VAR && lookup(&v->defs, a) == scope;
}

static ft_status verify_eqn(V *v, const ft_jaxpr *j, int idx, uint32_t scope, const char *outer) {
  const ft_eqn *e = &j->eqns[idx];
  if ((unsigned)e->prim >= FT_NUM_PRIMS)
    return err(v, outer, FT_ERR_TYPE, "eqn %d: unknown primitive %d", idx, (int)e->prim);
  const ft_prim_info *pi = ft_prim_get(e->prim);
  where w; /* buf stays unwritten until a message needs it */
  w.outer = outer, w.idx = idx, w.name = pi->name, w.done = false;
  if ((pi->n_in >= 0 && e->n_in != pi->n_in) || e->n_in < 0)
    return err(v, where_str(&w), FT_ERR_TYPE, "expects %d operand%s, got %d", pi->n_in,
               pi->n_in == 1 ? "" : "s", e->n_in);
  if ((pi->n_out >= 0 && e->n_out != pi->n_out) || e->n_out < 0)
    return err(v, where_str(&w), FT_ERR_TYPE, "expects %d output%s, got %d", pi->n_out,
               pi->n_out == 1 ? "" : "s", e->n_out);
  if ((e->n_in && !e->in) || (e->n_out && !e->out) || (pi->n_params && !e->params))
    return err(v, where_str(&w), FT_ERR_TYPE, "malformed equation (missing operand, output or param arrays)");
  for (int k = 0; k < pi->n_params; k++) {
    const ft_param_spec *s = &pi->params[k];
    const ft_pval *p = &e->params[k];
    if (p->tag == FT_PV_NONE && !s->dflt && s->kind != FT_PK_ANY && s->kind != FT_PK_INTS_OR_NONE &&
        s->kind != FT_PK_DTYPE_OR_NONE && s->kind != FT_PK_JAXPR_OR_NONE)
      return err(v, where_str(&w), FT_ERR_TYPE, "missing required param %s", s->name);
    bool none_default = p->tag == FT_PV_NONE && s->dflt && !strcmp(s->dflt, "None");
    if (!none_default && !kind_ok(s, p))
      return err(v, where_str(&w), FT_ERR_TYPE, "param %s must be %s", s->name, kind_text(s->kind));
  }
  for (int i = 0; i < e->n_in; i++) {
    if (atom_ok(v, e->in[i], scope)) continue;
    ft_status st = check_atom(v, where_str(&w), "operand", i, e->in[i], scope);
    if (st) return st;
  }
  ft_status st = verify_subs(v, &w, e);
  if (st) return st;
  for (int k = 0; k < e->n_out; k++)
    if (!e->out[k] || e->out[k]->kind == FT_LIT)
      return err(v, where_str(&w), FT_ERR_TYPE, "output %d is %s", k,
                 e->out[k] ? "a literal" : "missing (NULL)");
  if ((st = check_types(v, &w, e))) return st;
  for (int k = 0; k < e->n_out; k++) {
    if (e->out[k]->kind != FT_VAR) continue;
    if (!define(v, e->out[k], scope)) {
      char b[256];
      return err(v, where_str(&w), FT_ERR_TYPE, "output %d (%s) is already defined (each var is defined once)",
                 k, ft_aval_str(&e->out[k]->aval, b, sizeof b));
    }
  }
  return FT_OK;
}

static ft_status define_binders(V *v, const char *pre, const char *what, int n, ft_var *const *vs,
                                uint32_t scope) {
  for (int i = 0; i < n; i++) {
    if (!vs || !vs[i] || vs[i]->kind != FT_VAR)
      return err(v, pre, FT_ERR_TYPE, "%s %d is not a variable", what, i);
    if ((unsigned)vs[i]->aval.dtype >= FT_NUM_DTYPES || vs[i]->aval.rank < 0 ||
        vs[i]->aval.rank > FT_MAX_RANK)
      return err(v, pre, FT_ERR_TYPE, "%s %d has an invalid aval", what, i);
    if (!ft_aval_size_ok(&vs[i]->aval)) {
      char b[256];
      return err(v, pre, FT_ERR_SHAPE, "%s %d (%s) has a negative dimension or more than 2^56 "
                 "elements", what, i, ft_aval_str(&vs[i]->aval, b, sizeof b));
    }
    if (!define(v, vs[i], scope)) {
      char b[256];
      return err(v, pre, FT_ERR_TYPE, "%s %d (%s) is already defined (each var is defined once)", what,
                 i, ft_aval_str(&vs[i]->aval, b, sizeof b));
    }
  }
  return FT_OK;
}

static ft_status verify_jaxpr(V *v, const ft_jaxpr *j, const char *pre) {
  ft_status st;
  if (*pre) { /* a sub-jaxpr: verify each object once, however often it is used */
    if (lookup(&v->subs, j)) return FT_OK;
    if (!define_in(v, &v->subs, j, 1)) return err(v, pre, FT_ERR_NOMEM, "out of memory");
  }
  uint32_t scope = ++v->next_scope;
  if ((j->n_const && !j->constvars) || (j->n_in && !j->invars) || (j->n_out && !j->outvars) ||
      (j->n_eqn && !j->eqns) || j->n_const < 0 || j->n_in < 0 || j->n_out < 0 || j->n_eqn < 0)
    return err(v, pre, FT_ERR_TYPE, "malformed jaxpr (missing var or equation arrays)");
  if ((st = define_binders(v, pre, "constvar", j->n_const, j->constvars, scope)) ||
      (st = define_binders(v, pre, "invar", j->n_in, j->invars, scope)))
    return st;
  for (int i = 0; i < j->n_eqn; i++)
    if ((st = verify_eqn(v, j, i, scope, pre))) return st;
  for (int i = 0; i < j->n_out; i++)
    if (!atom_ok(v, j->outvars[i], scope) && (st = check_atom(v, pre, "output", i, j->outvars[i], scope)))
      return st;
  return FT_OK;
}

ft_status ft_jaxpr_verify(ft_ctx *ctx, const ft_jaxpr *j) {
  if (!j) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "ft_jaxpr_verify: jaxpr is NULL");
  V v = {.ctx = ctx};
  ft_status st = verify_jaxpr(&v, j, "");
  free(v.defs.e);
  free(v.subs.e);
  free(v.scratch);
  return st;
}
