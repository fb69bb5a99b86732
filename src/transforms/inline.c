/* src/transforms/inline.c: ft_inline — the program with every jit call
 * replaced by its body and every other sub-jaxpr (cond branches, while and
 * scan bodies, custom rules, scatter's update_jaxpr) an unshared copy of
 * its own, inlined in turn.
 *
 * Why: a program in which one sub-jaxpr is called at several sites (JAX
 * hoists it as `let f = { ... } in`, possibly under one name for jaxprs of
 * different shapes) must transform exactly as the same program written out
 * without sharing (issue 28). The inlined program is that reference: the
 * property test transforms both and compares.
 *
 * A jit whose jaxpr has constvars is kept (with its jaxpr unshared): its
 * constants would have to become the caller's, which changes the program's
 * signature. */
#include <string.h>

#include "transforms.h"

typedef struct inl {
  ft_ctx *ctx;
  ft_arena *a;  /* the result's arena */
  vmap m;       /* source var (by id in the source arena) -> result atom */
  bool ok;
} inl;

static ft_jaxpr *inl_jaxpr(inl *c, const ft_jaxpr *src);

static void *inl_nomem(inl *c) {
  if (c->ok) ft_set_error(c->ctx, FT_ERR_NOMEM, "inline: out of memory");
  c->ok = false;
  return NULL;
}

/* The result atom of a source use: a mapped var, or a fresh copy of a
 * literal (literals live in the source arena). */
static ft_var *use(inl *c, const ft_var *v) {
  if (v->kind == FT_LIT) {
    ft_var *l = lit_clone(c->a, v);
    return l ? l : inl_nomem(c);
  }
  ft_var *r = vmap_get(&c->m, v);
  if (!r && c->ok) {
    ft_set_error(c->ctx, FT_ERR_INTERNAL, "inline: a variable is used before it is defined");
    c->ok = false;
  }
  return r;
}

/* A fresh result var for a source binder. */
static ft_var *define(inl *c, const ft_var *v) {
  ft_var *r = v->kind == FT_DROP ? ft_drop_new(c->a, &v->aval) : ft_var_new(c->a, &v->aval);
  if (!r || !vmap_set(&c->m, v, r)) return inl_nomem(c);
  return r;
}

/* A param value for the result: sub-jaxprs become inlined, unshared
 * copies; everything else a plain copy. */
static ft_pval inl_pval(inl *c, const ft_pval *v) {
  if (v->tag == FT_PV_JAXPR && v->u.jaxpr) {
    ft_pval r = *v;
    r.u.jaxpr = inl_jaxpr(c, v->u.jaxpr);
    if (!r.u.jaxpr) c->ok = false;
    return r;
  }
  if (v->tag == FT_PV_TUPLE && v->n) {
    ft_pval r = *v;
    r.u.items = ft_arena_alloc(c->a, sizeof(ft_pval) * (size_t)v->n);
    if (!r.u.items) return inl_nomem(c), r;
    for (int i = 0; i < v->n && c->ok; i++) r.u.items[i] = inl_pval(c, &v->u.items[i]);
    if (v->s && !(r.s = ft_arena_strndup(c->a, v->s, strlen(v->s)))) inl_nomem(c);
    return r;
  }
  bool ok = true;
  ft_pval r = pval_clone(c->a, v, &ok);
  if (!ok) inl_nomem(c);
  return r;
}

static bool inl_body(inl *c, ft_jb *b, const ft_jaxpr *src);

/* A jit equation: its body in place, its outputs mapped to the body's. */
static bool inl_call(inl *c, ft_jb *b, const ft_eqn *e, const ft_jaxpr *sub) {
  ft_var **in = ft_arena_alloc(c->a, sizeof(ft_var *) * (size_t)(e->n_in + 1));
  if (!in) return inl_nomem(c), false;
  /* Read every operand before binding the body's inputs: a body called
   * from its own arena's vars may share ids with them only if they are the
   * same var, but read first anyway so the order cannot matter. */
  for (int i = 0; i < e->n_in && c->ok; i++) in[i] = use(c, e->in[i]);
  for (int i = 0; i < e->n_in && c->ok; i++)
    if (!vmap_set(&c->m, sub->invars[i], in[i])) inl_nomem(c);
  if (!c->ok || !inl_body(c, b, sub)) return false;
  for (int k = 0; k < e->n_out && c->ok; k++) {
    ft_var *o = use(c, sub->outvars[k]);
    if (e->out[k]->kind == FT_VAR && o && !vmap_set(&c->m, e->out[k], o)) inl_nomem(c);
  }
  return c->ok;
}

/* Appends src's equations to b (src's binders already mapped). */
static bool inl_body(inl *c, ft_jb *b, const ft_jaxpr *src) {
  for (int q = 0; q < src->n_eqn && c->ok; q++) {
    const ft_eqn *e = &src->eqns[q];
    const ft_jaxpr *sub = e->prim == FT_P_JIT ? pget_jaxpr(e->prim, e->params, "jaxpr") : NULL;
    if (sub && sub->n_const == 0 && sub->n_in == e->n_in && sub->n_out == e->n_out) {
      if (!inl_call(c, b, e, sub)) return false;
      continue;
    }
    const ft_prim_info *pi = ft_prim_get(e->prim);
    ft_var **in = ft_arena_alloc(c->a, sizeof(ft_var *) * (size_t)(e->n_in + 1));
    ft_var **out = ft_arena_alloc(c->a, sizeof(ft_var *) * (size_t)(e->n_out + 1));
    ft_pval *ps = ft_arena_alloc(c->a, sizeof(ft_pval) * (size_t)(pi->n_params + 1));
    if (!in || !out || !ps) return inl_nomem(c), false;
    for (int i = 0; i < e->n_in && c->ok; i++) in[i] = use(c, e->in[i]);
    for (int i = 0; i < pi->n_params && c->ok; i++) ps[i] = inl_pval(c, &e->params[i]);
    for (int k = 0; k < e->n_out && c->ok; k++) out[k] = define(c, e->out[k]);
    if (c->ok && !ft_jb_add_owned(b, e->prim, e->n_in, in, e->n_out, out, ps)) inl_nomem(c);
  }
  return c->ok;
}

/* An inlined copy of src (and of everything under it) in c->a. */
static ft_jaxpr *inl_jaxpr(inl *c, const ft_jaxpr *src) {
  ft_jaxpr *j = ft_jaxpr_new(c->a);
  ft_var **cv = ft_arena_alloc(c->a, sizeof(ft_var *) * (size_t)(src->n_const + 1));
  ft_var **iv = ft_arena_alloc(c->a, sizeof(ft_var *) * (size_t)(src->n_in + 1));
  ft_var **ov = ft_arena_alloc(c->a, sizeof(ft_var *) * (size_t)(src->n_out + 1));
  if (!j || !cv || !iv || !ov) return inl_nomem(c);
  for (int i = 0; i < src->n_const && c->ok; i++) cv[i] = define(c, src->constvars[i]);
  for (int i = 0; i < src->n_in && c->ok; i++) iv[i] = define(c, src->invars[i]);
  ft_jb b;
  ft_jb_init(&b, j);
  if (!c->ok || !inl_body(c, &b, src)) return NULL;
  for (int k = 0; k < src->n_out && c->ok; k++) ov[k] = use(c, src->outvars[k]);
  if (!c->ok) return NULL;
  if (!ft_jaxpr_set_vars(j, src->n_const, cv, src->n_in, iv, src->n_out, ov) ||
      !jaxpr_copy_consts(j, src))
    return inl_nomem(c);
  return j;
}

FT_API ft_jaxpr *ft_inline(ft_ctx *ctx, const ft_jaxpr *j) {
  if (!j) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "inline: the jaxpr is NULL");
    return NULL;
  }
  ft_ctx_clear_error(ctx);
  ft_jaxpr *r = ft_jaxpr_new(NULL);
  if (!r) return ft_set_error(ctx, FT_ERR_NOMEM, "inline: out of memory"), NULL;
  inl c = {.ctx = ctx, .a = r->arena, .ok = true};
  if (!vmap_init(&c.m, ft_arena_num_var_ids(j->arena) + 1)) {
    ft_jaxpr_free(r);
    return ft_set_error(ctx, FT_ERR_NOMEM, "inline: out of memory"), NULL;
  }
  ft_jaxpr *sub = inl_jaxpr(&c, j);
  vmap_free(&c.m);
  if (!sub) return ft_jaxpr_free(r), NULL;
  ft_arena *a = r->arena;
  *r = *sub;
  r->arena = a;
  r->owns_arena = true;
  if (!ft__after_transform(ctx, "inline", "{}", j, r)) return ft_jaxpr_free(r), NULL;
  return r;
}
