/* src/ir/jaxpr.c: constructing jaxprs, variables, literals and equations, and
 * the small public accessors. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

ft_jaxpr *ft_jaxpr_new(ft_arena *a) {
  bool own = a == NULL;
  if (own && !(a = ft_arena_new())) return NULL;
  ft_jaxpr *j = ft_arena_alloc(a, sizeof *j);
  if (!j) {
    if (own) ft_arena_free(a);
    return NULL;
  }
  j->arena = a;
  j->owns_arena = own;
  ft_jaxpr_renew_serial(j);
  return j;
}

void ft_jaxpr_renew_serial(ft_jaxpr *j) {
  static _Atomic uint64_t next_serial;
  j->serial = ++next_serial;
}

void ft_jaxpr_free(ft_jaxpr *j) {
  if (!j || !j->owns_arena) return;
  ft_arena_free(j->arena);
}

static ft_var *var_alloc(ft_arena *a, const ft_aval *aval, ft_var_kind k) {
  ft_var *v = ft_arena_alloc_raw(a, sizeof *v);
  if (!v) return NULL;
  v->aval = *aval;
  v->kind = k;
  v->id = ft_arena_next_var_id(a);
  v->lit.u = 0;
  v->lit_im = 0;
  v->vma = NULL;
  return v;
}

ft_var *ft_var_new(ft_arena *a, const ft_aval *aval) { return var_alloc(a, aval, FT_VAR); }
ft_var *ft_drop_new(ft_arena *a, const ft_aval *aval) { return var_alloc(a, aval, FT_DROP); }

ft_var *ft_lit_new_int(ft_arena *a, ft_dtype dt, int64_t v) {
  ft_aval av = ft_aval_scalar(dt);
  ft_var *x = var_alloc(a, &av, FT_LIT);
  if (x) x->lit.i = v;
  return x;
}

ft_var *ft_lit_new_uint(ft_arena *a, ft_dtype dt, uint64_t v) {
  ft_aval av = ft_aval_scalar(dt);
  ft_var *x = var_alloc(a, &av, FT_LIT);
  if (x) x->lit.u = v;
  return x;
}

ft_var *ft_lit_new_float(ft_arena *a, ft_dtype dt, double v) {
  ft_aval av = ft_aval_scalar(dt);
  ft_var *x = var_alloc(a, &av, FT_LIT);
  if (x) x->lit.f = v;
  return x;
}

ft_var *ft_lit_new_bool(ft_arena *a, bool v) { return ft_lit_new_int(a, FT_BOOL, v); }

void ft_jb_init(ft_jb *b, ft_jaxpr *j) {
  b->arena = j->arena;
  b->j = j;
  b->cap_eqn = j->n_eqn;
}

static ft_var **copy_vars(ft_arena *a, int n, ft_var *const *v) {
  ft_var **p = ft_arena_alloc_raw(a, sizeof(ft_var *) * (size_t)(n ? n : 1));
  if (p && n) memcpy(p, v, sizeof(ft_var *) * (size_t)n);
  if (p && !n) p[0] = NULL;
  return p;
}

/* The schema defaults of every primitive, built on first use and shared by
 * all equations that use them: params are immutable once built, so one
 * array per primitive serves every arena (it lives as long as the process,
 * reachable from shared_arena). A failed allocation is not remembered: the
 * next call tries again. */
static ft_pval *_Atomic shared_default[FT_NUM_PRIMS];
static ft_arena *shared_arena;
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;

const ft_pval *ft_params_default_shared(ft_prim p) {
  ft_pval *d = atomic_load_explicit(&shared_default[p], memory_order_acquire);
  if (d) return d;
  pthread_mutex_lock(&shared_lock);
  if (!(d = atomic_load_explicit(&shared_default[p], memory_order_relaxed))) {
    if (!shared_arena) shared_arena = ft_arena_new();
    if (shared_arena && (d = ft_params_default(shared_arena, p)))
      atomic_store_explicit(&shared_default[p], d, memory_order_release);
  }
  pthread_mutex_unlock(&shared_lock);
  return d;
}

/* Room for one more equation: the array doubles in the arena (the old one
 * is wasted; amortized that is 2x). */
bool ft_jb_reserve(ft_jb *b) {
  ft_jaxpr *j = b->j;
  if (j->n_eqn < b->cap_eqn) return true;
  int cap = b->cap_eqn ? b->cap_eqn * 2 : 16;
  ft_eqn *e = ft_arena_alloc_raw(b->arena, sizeof(ft_eqn) * (size_t)cap);
  if (!e) return false;
  if (j->n_eqn) memcpy(e, j->eqns, sizeof(ft_eqn) * (size_t)j->n_eqn);
  j->eqns = e;
  b->cap_eqn = cap;
  return true;
}

ft_eqn *ft_jb_add_owned(ft_jb *b, ft_prim p, int n_in, ft_var *const *in, int n_out,
                        ft_var *const *out, const ft_pval *params) {
  ft_jaxpr *j = b->j;
  if (!ft_jb_reserve(b)) return NULL;
  ft_eqn *e = &j->eqns[j->n_eqn];
  e->prim = p;
  e->n_in = n_in;
  e->n_out = n_out;
  /* One block holds both var arrays (each non-NULL even when empty). */
  ft_var **io = ft_arena_alloc_raw(b->arena, sizeof(ft_var *) * (size_t)(n_in + n_out + 2));
  if (!io) return NULL;
  e->in = io;
  e->out = io + n_in + 1;
  if (n_in) memcpy(e->in, in, sizeof(ft_var *) * (size_t)n_in);
  if (n_out) memcpy(e->out, out, sizeof(ft_var *) * (size_t)n_out);
  e->in[n_in] = e->out[n_out] = NULL;
  /* Equations do not write their params: the array may be shared. */
  e->params = (ft_pval *)(params ? params : ft_params_default_shared(p));
  if (!e->in || !e->out || !e->params) return NULL;
  j->n_eqn++;
  return e;
}

ft_eqn *ft_jb_add(ft_jb *b, ft_prim p, int n_in, ft_var *const *in, int n_out,
                  ft_var *const *out, const ft_pval *params) {
  const ft_prim_info *pi = ft_prim_get(p);
  const ft_pval *ps = NULL; /* NULL: the shared defaults */
  if (params && pi->n_params) {
    ft_pval *c = ft_arena_alloc_raw(b->arena, sizeof(ft_pval) * (size_t)pi->n_params);
    if (!c) return NULL;
    memcpy(c, params, sizeof(ft_pval) * (size_t)pi->n_params);
    ps = c;
  }
  return ft_jb_add_owned(b, p, n_in, in, n_out, out, ps);
}

bool ft_jaxpr_set_vars(ft_jaxpr *j, int n_const, ft_var *const *constvars, int n_in,
                       ft_var *const *invars, int n_out, ft_var *const *outvars) {
  j->n_const = n_const;
  j->n_in = n_in;
  j->n_out = n_out;
  j->constvars = copy_vars(j->arena, n_const, constvars);
  j->invars = copy_vars(j->arena, n_in, invars);
  j->outvars = copy_vars(j->arena, n_out, outvars);
  return j->constvars && j->invars && j->outvars;
}

int ft_jaxpr_num_inputs(const ft_jaxpr *j) { return j ? j->n_in : 0; }
int ft_jaxpr_num_outputs(const ft_jaxpr *j) { return j ? j->n_out : 0; }
int ft_jaxpr_num_eqns(const ft_jaxpr *j) { return j ? j->n_eqn : 0; }

ft_status ft_jaxpr_input_aval(const ft_jaxpr *j, int i, ft_aval *out) {
  if (!j || i < 0 || i >= j->n_in || !out) return FT_ERR_INVALID_ARG;
  *out = j->invars[i]->aval;
  return FT_OK;
}

ft_status ft_jaxpr_output_aval(const ft_jaxpr *j, int i, ft_aval *out) {
  if (!j || i < 0 || i >= j->n_out || !out) return FT_ERR_INVALID_ARG;
  *out = j->outvars[i]->aval;
  return FT_OK;
}

int ft_jaxpr_num_consts(const ft_jaxpr *j) { return j ? j->n_const : 0; }

ft_status ft_jaxpr_const_aval(const ft_jaxpr *j, int i, ft_aval *out) {
  if (!j || i < 0 || i >= j->n_const || !out) return FT_ERR_INVALID_ARG;
  *out = j->constvars[i]->aval;
  return FT_OK;
}

bool ft_jaxpr_consts_bound(const ft_jaxpr *j) { return j && (!j->n_const || j->const_data); }

/* Sub-jaxprs with constvars (issue 17: a jit whose closed jaxpr keeps
 * constants, as jnp.piecewise's coefficient tables in jax.scipy.special's
 * sici and spence; JAX's printout names the constvars but not their values).
 * Depth first, equations in order, params in canonical order (sorted by
 * name, as JAX prints them), each shared sub-jaxpr visited once: the order
 * tools/oracle captures their values in. */
typedef struct subs_walk {
  const ft_jaxpr **seen;  /* every sub-jaxpr visited (shared ones once) */
  int n_seen, cap;
  const ft_jaxpr **out;   /* those with constvars, in order */
  int n_out;
  bool nomem;
} subs_walk;

static void subs_jaxpr(subs_walk *w, const ft_jaxpr *j);

static void subs_pval(subs_walk *w, const ft_pval *v) {
  if (v->tag == FT_PV_TUPLE)
    for (int i = 0; i < v->n; i++) subs_pval(w, &v->u.items[i]);
  if (v->tag != FT_PV_JAXPR || !v->u.jaxpr || w->nomem) return;
  const ft_jaxpr *s = v->u.jaxpr;
  for (int i = 0; i < w->n_seen; i++)
    if (w->seen[i] == s) return;
  if (w->n_seen == w->cap) {
    int cap = w->cap ? 2 * w->cap : 16;
    const ft_jaxpr **a = realloc(w->seen, sizeof *a * (size_t)cap);
    const ft_jaxpr **b = a ? realloc(w->out, sizeof *b * (size_t)cap) : NULL;
    if (a) w->seen = a;
    if (b) w->out = b;
    if (!a || !b) {
      w->nomem = true;
      return;
    }
    w->cap = cap;
  }
  w->seen[w->n_seen++] = s;
  if (s->n_const) w->out[w->n_out++] = s;
  subs_jaxpr(w, s);
}

static void subs_jaxpr(subs_walk *w, const ft_jaxpr *j) {
  for (int k = 0; k < j->n_eqn; k++) {
    const ft_eqn *e = &j->eqns[k];
    int np = ft_prim_get(e->prim)->n_params;
    for (int p = 0; p < np; p++) subs_pval(w, &e->params[p]);
  }
}

int ft_jaxpr_closed_subs(const ft_jaxpr *j, const ft_jaxpr ***out) {
  subs_walk w = {0};
  if (j) subs_jaxpr(&w, j);
  free(w.seen);
  if (w.nomem) {
    free(w.out);
    if (out) *out = NULL;
    return -1;
  }
  if (out) *out = w.out;
  else free(w.out);
  return w.n_out;
}

int ft_jaxpr_num_sub_consts(const ft_jaxpr *j) {
  int n = ft_jaxpr_closed_subs(j, NULL);
  return n < 0 ? 0 : n;
}

int ft_jaxpr_sub_num_consts(const ft_jaxpr *j, int k) {
  const ft_jaxpr **subs = NULL;
  int n = ft_jaxpr_closed_subs(j, &subs);
  int r = n >= 0 && k >= 0 && k < n ? subs[k]->n_const : -1;
  free(subs);
  return r;
}

ft_status ft_jaxpr_sub_const_aval(const ft_jaxpr *j, int k, int i, ft_aval *out) {
  const ft_jaxpr **subs = NULL;
  int n = ft_jaxpr_closed_subs(j, &subs);
  ft_status st = FT_ERR_INVALID_ARG;
  if (n >= 0 && k >= 0 && k < n && i >= 0 && i < subs[k]->n_const && out) {
    *out = subs[k]->constvars[i]->aval;
    st = FT_OK;
  } else if (n < 0) {
    st = FT_ERR_NOMEM;
  }
  free(subs);
  return st;
}
