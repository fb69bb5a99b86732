/* src/ir/clone.c: IR-level utilities every stage shares (moved from
 * src/transforms/util.c, issue 23): var maps indexed by id, and deep copies
 * of params and jaxprs into another arena (the e-graph and the lowering
 * use them too). */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* ------------------------------------------------------------- maps */

bool vmap_init(vmap *m, uint32_t cap) {
  m->cap = cap ? cap : 16;
  m->failed = false;
  m->v = calloc(m->cap, sizeof *m->v);
  return m->v != NULL;
}

void vmap_free(vmap *m) {
  free(m->v);
  m->v = NULL;
  m->cap = 0;
}

bool vmap_set_grow(vmap *m, const ft_var *k, ft_var *v) {
  {
    uint32_t cap = m->cap;
    while (cap <= k->id) cap *= 2;
    ft_var **n = realloc(m->v, sizeof *n * cap);
    if (!n) return !(m->failed = true);
    memset(n + m->cap, 0, sizeof *n * (cap - m->cap));
    m->v = n;
    m->cap = cap;
  }
  m->v[k->id] = v;
  return true;
}

bool vflags_init(vflags *m, uint32_t cap) {
  m->cap = cap ? cap : 16;
  m->failed = false;
  m->f = calloc(m->cap, 1);
  return m->f != NULL;
}

void vflags_free(vflags *m) {
  free(m->f);
  m->f = NULL;
  m->cap = 0;
}

bool vflags_set_grow(vflags *m, const ft_var *k, uint8_t v) {
  {
    uint32_t cap = m->cap;
    while (cap <= k->id) cap *= 2;
    uint8_t *n = realloc(m->f, cap);
    if (!n) return !(m->failed = true);
    memset(n + m->cap, 0, cap - m->cap);
    m->f = n;
    m->cap = cap;
  }
  m->f[k->id] = v;
  return true;
}

/* ----------------------------------------------------------- cloning */

typedef struct cloner {
  ft_arena *a;
  vmap m;
  bool ok;
  /* jaxpr_clone_shared: each source sub-jaxpr's copy, made once. */
  bool keep_shared;
  int n_memo, cap_memo;
  const ft_jaxpr **memo_from;
  ft_jaxpr **memo_to;
} cloner;

/* The copy of a sub-jaxpr already cloned (keep_shared), or NULL. */
static ft_jaxpr *memo_get(const cloner *c, const ft_jaxpr *j) {
  for (int i = 0; i < c->n_memo; i++)
    if (c->memo_from[i] == j) return c->memo_to[i];
  return NULL;
}

static void memo_put(cloner *c, const ft_jaxpr *from, ft_jaxpr *to) {
  if (c->n_memo == c->cap_memo) {
    int cap = c->cap_memo ? 2 * c->cap_memo : 16;
    const ft_jaxpr **f = realloc((void *)c->memo_from, sizeof *f * (size_t)cap);
    if (f) c->memo_from = f;
    ft_jaxpr **t = f ? realloc(c->memo_to, sizeof *t * (size_t)cap) : NULL;
    if (!t) {
      c->ok = false;
      return;
    }
    c->memo_to = t;
    c->cap_memo = cap;
  }
  c->memo_from[c->n_memo] = from;
  c->memo_to[c->n_memo++] = to;
}

static ft_jaxpr *clone_jaxpr(cloner *c, const ft_jaxpr *src);

static const char *clone_str(ft_arena *a, const char *s, bool *ok) {
  if (!s) return NULL;
  char *r = ft_arena_strndup(a, s, strlen(s));
  if (!r) *ok = false;
  return r;
}

static ft_pval clone_pval(cloner *c, const ft_pval *v) {
  ft_pval r = *v;
  r.s = clone_str(c->a, v->s, &c->ok);
  if (v->tag == FT_PV_TUPLE && v->n) {
    r.u.items = ft_arena_alloc(c->a, sizeof(ft_pval) * (size_t)v->n);
    if (!r.u.items) {
      c->ok = false;
      r.n = 0;
      return r;
    }
    for (int i = 0; i < v->n; i++) r.u.items[i] = clone_pval(c, &v->u.items[i]);
  } else if (v->tag == FT_PV_JAXPR && v->u.jaxpr) {
    ft_jaxpr *done = c->keep_shared ? memo_get(c, v->u.jaxpr) : NULL;
    r.u.jaxpr = done ? done : clone_jaxpr(c, v->u.jaxpr);
    if (!r.u.jaxpr) c->ok = false;
    else if (c->keep_shared && !done) memo_put(c, v->u.jaxpr, r.u.jaxpr);
  }
  return r;
}

ft_var *lit_clone(ft_arena *a, const ft_var *lit) {
  ft_var *v = ft_var_new(a, &lit->aval);
  if (!v) return NULL;
  v->kind = FT_LIT;
  v->lit = lit->lit;
  v->lit_im = lit->lit_im;
  return v;
}

static ft_var *clone_var(cloner *c, const ft_var *v, bool define) {
  ft_var *r = vmap_get(&c->m, v);
  if (r && !define) return r;
  if (v->kind == FT_LIT) r = lit_clone(c->a, v);
  else if (v->kind == FT_DROP) r = ft_drop_new(c->a, &v->aval);
  else r = ft_var_new(c->a, &v->aval);
  if (r && v->vma && !(r->vma = ft_arena_strndup(c->a, v->vma, strlen(v->vma)))) c->ok = false;
  if (!r || !vmap_set(&c->m, v, r)) c->ok = false;
  return r;
}

static ft_var **clone_vars(cloner *c, int n, ft_var *const *vs, bool define) {
  ft_var **r = ft_arena_alloc(c->a, sizeof(ft_var *) * (size_t)(n ? n : 1));
  if (!r) {
    c->ok = false;
    return NULL;
  }
  for (int i = 0; i < n; i++) r[i] = clone_var(c, vs[i], define);
  return r;
}

static ft_jaxpr *clone_jaxpr(cloner *c, const ft_jaxpr *src) {
  ft_jaxpr *j = ft_jaxpr_new(c->a);
  if (!j) return c->ok = false, NULL;
  j->n_const = src->n_const;
  j->n_in = src->n_in;
  j->n_out = src->n_out;
  j->constvars = clone_vars(c, src->n_const, src->constvars, true);
  j->invars = clone_vars(c, src->n_in, src->invars, true);
  j->eqns = ft_arena_alloc(c->a, sizeof(ft_eqn) * (size_t)(src->n_eqn ? src->n_eqn : 1));
  if (!j->eqns) return c->ok = false, NULL;
  const ft_prim_info *pi;
  for (int k = 0; k < src->n_eqn && c->ok; k++) {
    const ft_eqn *e = &src->eqns[k];
    ft_eqn *d = &j->eqns[k];
    d->prim = e->prim;
    d->n_in = e->n_in;
    d->n_out = e->n_out;
    d->in = clone_vars(c, e->n_in, e->in, false);
    d->out = clone_vars(c, e->n_out, e->out, true);
    pi = ft_prim_get(e->prim);
    d->params = ft_arena_alloc(c->a, sizeof(ft_pval) * (size_t)(pi->n_params + 1));
    if (!d->params) return c->ok = false, NULL;
    for (int i = 0; i < pi->n_params; i++) d->params[i] = clone_pval(c, &e->params[i]);
  }
  j->n_eqn = src->n_eqn;
  j->outvars = clone_vars(c, src->n_out, src->outvars, false);
  if (c->ok && src->const_data && !jaxpr_copy_consts(j, src)) c->ok = false;
  return c->ok ? j : NULL;
}

bool jaxpr_copy_consts(ft_jaxpr *dst, const ft_jaxpr *src) {
  if (!src->const_data || !src->n_const) return true;
  if (dst->arena == src->arena) {
    dst->const_data = src->const_data;
    return true;
  }
  void **cd = ft_arena_alloc(dst->arena, sizeof(void *) * (size_t)src->n_const);
  if (!cd) return false;
  for (int i = 0; i < src->n_const; i++) {
    if (!src->const_data[i]) continue;
    const ft_aval *av = &src->constvars[i]->aval;
    size_t n = (size_t)ft_aval_size(av) * ft_dtype_size(av->dtype);
    if (!(cd[i] = ft_arena_alloc(dst->arena, n ? n : 1))) return false;
    memcpy(cd[i], src->const_data[i], n);
  }
  dst->const_data = cd;
  return true;
}

ft_pval pval_clone(ft_arena *a, const ft_pval *v, bool *ok) {
  cloner c = {.a = a, .ok = true};
  if (!vmap_init(&c.m, 64)) {
    *ok = false;
    return *v;
  }
  ft_pval r = clone_pval(&c, v);
  vmap_free(&c.m);
  if (!c.ok) *ok = false;
  return r;
}

ft_pval *params_clone(ft_arena *a, ft_prim p, const ft_pval *ps) {
  const ft_prim_info *pi = ft_prim_get(p);
  ft_pval *r = ft_arena_alloc(a, sizeof(ft_pval) * (size_t)(pi->n_params + 1));
  if (!r) return NULL;
  bool simple = true;
  for (int i = 0; i < pi->n_params; i++) simple = simple && ps[i].tag != FT_PV_JAXPR &&
                                                  ps[i].tag != FT_PV_TUPLE && !ps[i].s;
  if (simple) {
    memcpy(r, ps, sizeof(ft_pval) * (size_t)pi->n_params);
    return r;
  }
  cloner c = {.a = a, .ok = true};
  if (!vmap_init(&c.m, 64)) return NULL;
  for (int i = 0; i < pi->n_params; i++) r[i] = clone_pval(&c, &ps[i]);
  vmap_free(&c.m);
  return c.ok ? r : NULL;
}

ft_jaxpr *jaxpr_clone(ft_arena *a, const ft_jaxpr *src) {
  cloner c = {.a = a, .ok = true};
  if (!vmap_init(&c.m, ft_arena_num_var_ids(src->arena) + 1)) return NULL;
  ft_jaxpr *r = clone_jaxpr(&c, src);
  vmap_free(&c.m);
  return c.ok ? r : NULL;
}

ft_jaxpr *jaxpr_clone_shared(ft_arena *a, const ft_jaxpr *src) {
  cloner c = {.a = a, .ok = true, .keep_shared = true};
  if (!vmap_init(&c.m, ft_arena_num_var_ids(src->arena) + 1)) return NULL;
  ft_jaxpr *r = clone_jaxpr(&c, src);
  vmap_free(&c.m);
  free((void *)c.memo_from);
  free(c.memo_to);
  return c.ok ? r : NULL;
}

ft_jaxpr *jaxpr_clone_top(const ft_jaxpr *src) {
  ft_jaxpr *j = ft_jaxpr_new(NULL);
  if (!j) return NULL;
  ft_jaxpr *c = jaxpr_clone(j->arena, src);
  if (!c) {
    ft_jaxpr_free(j);
    return NULL;
  }
  ft_jaxpr *keep = j;
  *keep = *c;
  keep->owns_arena = true;
  return keep;
}

ft_jaxpr *jaxpr_permute(ft_arena *a, const ft_jaxpr *src, const int *perm_in, const int *perm_out) {
  ft_jaxpr *j = ft_jaxpr_new(a);
  if (!j) return NULL;
  *j = *src;
  j->arena = a;
  j->owns_arena = false;
  ft_var **in = ft_arena_alloc(a, sizeof(ft_var *) * (size_t)(src->n_in + 1));
  ft_var **out = ft_arena_alloc(a, sizeof(ft_var *) * (size_t)(src->n_out + 1));
  if (!in || !out) return NULL;
  for (int i = 0; i < src->n_in; i++) in[i] = src->invars[perm_in ? perm_in[i] : i];
  for (int i = 0; i < src->n_out; i++) out[i] = src->outvars[perm_out ? perm_out[i] : i];
  j->invars = in;
  j->outvars = out;
  return j;
}
