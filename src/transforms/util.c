/* src/transforms/util.c: what every transform shares — the equation
 * emitter (shape rules give output avals, a failure is sticky), small op
 * builders and param accessors. Var maps and deep copies of params and
 * jaxprs are IR-level: src/ir/clone.c. */
#include <stdio.h>
#include <string.h>

#include "transforms.h"

/* ---------------------------------------------------------- emitter */

void tx_init(tx *t, ft_ctx *ctx, ft_jaxpr *j, const char *what) {
  t->ctx = ctx;
  t->a = j->arena;
  t->j = j;
  ft_jb_init(&t->b, j);
  t->failed = false;
  t->what = what;
}

void *tx_fail(tx *t, ft_status st, const char *fmt, ...) {
  if (!t->failed) {
    va_list ap;
    va_start(ap, fmt);
    ft_set_errorv(t->ctx, st, fmt, ap);
    va_end(ap);
  }
  t->failed = true;
  return NULL;
}

void *tx_nomem(tx *t) { return tx_fail(t, FT_ERR_NOMEM, "%s: out of memory", t->what); }

bool aval_inexact(const ft_aval *a) { return ft_dtype_is_inexact(a->dtype); }
bool var_inexact(const ft_var *v) { return ft_dtype_is_inexact(v->aval.dtype); }

ft_var *var_fresh(ft_arena *a, const ft_aval *av) { return ft_var_new(a, av); }

bool tx_push(tx *t, ft_prim p, const ft_pval *params, int n_in, ft_var *const *in, int n_out,
             ft_var *const *out) {
  if (t->failed) return false;
  if (!ft_jb_add(&t->b, p, n_in, in, n_out, out, params)) return tx_nomem(t), false;
  return true;
}

bool tx_push_owned(tx *t, ft_prim p, const ft_pval *params, int n_in, ft_var *const *in,
                   int n_out, ft_var *const *out) {
  if (t->failed) return false;
  if (!ft_jb_add_owned(&t->b, p, n_in, in, n_out, out, params)) return tx_nomem(t), false;
  return true;
}

/* Appends e by value: its in/out/params arrays are shared, which is safe
 * because nothing mutates an equation's arrays once built. */
bool tx_push_shared(tx *t, const ft_eqn *e) {
  if (t->failed) return false;
  if (!ft_jb_reserve(&t->b)) return tx_nomem(t), false;
  t->j->eqns[t->j->n_eqn++] = *e;
  return true;
}

/* The output aval of the elementwise equations the rules emit most (float
 * operands of one dtype and one shape, or a scalar and an array), computed
 * here without the general shape rule; false sends the caller to ft_infer.
 * The result is exactly what ft_infer gives for these cases (rule_unary,
 * rule_binary in src/ir/shape.c): the operand's aval, weak only when every
 * operand is weak. */
static bool infer_elementwise(ft_prim p, const ft_pval *params, int n_in, ft_var *const *in,
                              ft_aval *out) {
  const ft_prim_info *pi = ft_prim_get(p);
  if (pi->n_in != n_in) return false;
  if (pi->family == FT_FAM_UNARY) {
    switch (p) {
    case FT_P_NOT: case FT_P_IS_FINITE: case FT_P_INTEGER_POW: case FT_P_REDUCE_PRECISION:
      return false; /* different dtype rules or params to check */
    default: break;
    }
    if (!ft_dtype_is_float(in[0]->aval.dtype)) return false;
    *out = in[0]->aval;
    return true;
  }
  if (pi->family != FT_FAM_BINARY) return false;
  switch (p) {
  case FT_P_ADD: case FT_P_ADD_ANY: case FT_P_SUB: case FT_P_DIV: case FT_P_MAX: case FT_P_MIN: break;
  case FT_P_MUL: /* out_dtype (when given) sets the result dtype */
    if (params && params[0].tag != FT_PV_NONE) return false;
    break;
  default: return false;
  }
  const ft_aval *a = &in[0]->aval, *b = &in[1]->aval;
  if (!ft_dtype_is_float(a->dtype) || a->dtype != b->dtype) return false;
  if (b->rank == 0) *out = *a;
  else if (a->rank == 0 || ft_shape_eq(a, b)) *out = *b;
  else return false;
  /* nary_shape takes the first operand that is not rank 0 (else operand 0). */
  if (a->rank != 0 || b->rank == 0) *out = *a;
  out->weak_type = a->weak_type && b->weak_type;
  return true;
}

/* ---------------------------------------- varying axes ({V:...}, issue 27) */

bool var_copy_vma(ft_arena *a, ft_var *dst, const ft_var *src) {
  if (!dst || !src || !src->vma || dst->vma || dst->kind != FT_VAR) return true;
  return (dst->vma = ft_arena_strndup(a, src->vma, strlen(src->vma))) != NULL;
}

/* Reads `i` or `(i,j)` into names; returns the count (0 for NULL). */
static int vma_read(const char *s, char (*names)[64], int max) {
  int n = 0;
  if (!s) return 0;
  if (*s == '(') s++;
  while (*s && *s != ')' && n < max) {
    size_t k = strcspn(s, ",)");
    if (k && k < 64) memcpy(names[n], s, k), names[n++][k] = 0;
    s += k;
    if (*s == ',') s++;
  }
  return n;
}

static int vma_find(char (*names)[64], int n, const char *x) {
  for (int q = 0; q < n; q++)
    if (!strcmp(names[q], x)) return q;
  return -1;
}

/* The output's annotation when some input has one (a value inside a
 * check_vma shard_map body), by JAX's typing: a reduction over axes drops
 * them, pvary adds them, a call's outputs are its body's, and every other
 * primitive varies over the union of its operands' axes (in the order
 * first met; JAX's own printouts list them in mesh order). */
static bool tx_infer_vma(tx *t, ft_prim p, const ft_pval *params, int n_in, ft_var *const *in, int n_out,
                         ft_var **out) {
  char names[FT_SPMD_MAX_AXES][64], ax[FT_SPMD_MAX_AXES][64];
  int n = 0;
  bool any = false;
  for (int i = 0; i < n_in; i++) {
    if (!in[i]->vma) continue;
    any = true;
    char got[FT_SPMD_MAX_AXES][64];
    int m = vma_read(in[i]->vma, got, FT_SPMD_MAX_AXES);
    for (int q = 0; q < m; q++)
      if (vma_find(names, n, got[q]) < 0 && n < FT_SPMD_MAX_AXES) memcpy(names[n++], got[q], 64);
  }
  if (!any && p != FT_P_PVARY) return true; /* pvary makes an invariant value vary */
  const char *body = p == FT_P_JIT || p == FT_P_REMAT2 ? "jaxpr" : p == FT_P_SCAN ? "jaxpr"
                     : p == FT_P_WHILE ? "body_jaxpr" : p == FT_P_CUSTOM_JVP_CALL || p == FT_P_CUSTOM_VJP_CALL ||
                                                            p == FT_P_EVAL_JAXPR
                     ? "call_jaxpr" : NULL;
  const ft_pval *bv = body && params ? pget(p, params, body) : NULL;
  const ft_jaxpr *bj = bv && bv->tag == FT_PV_JAXPR ? bv->u.jaxpr : NULL;
  if (p == FT_P_COND && params) {
    const ft_pval *br = pget(p, params, "branches");
    if (br && br->tag == FT_PV_TUPLE && br->n && br->u.items[0].tag == FT_PV_JAXPR) bj = br->u.items[0].u.jaxpr;
  }
  if (bj && bj->n_out == n_out) {
    for (int k = 0; k < n_out; k++)
      if (!var_copy_vma(t->a, out[k], bj->outvars[k])) return tx_nomem(t), false;
    return true;
  }
  if (p == FT_P_SHARD_MAP || p == FT_P_AXIS_INDEX) return true;
  if (ft_prim_is_collective(p) && p != FT_P_ALL_GATHER && p != FT_P_REDUCE_SCATTER && p != FT_P_ALL_TO_ALL &&
      p != FT_P_PPERMUTE) {
    int na = ft_spmd_names(pget(p, params ? params : ft_params_default_shared(p), "axes"), ax, FT_SPMD_MAX_AXES);
    for (int q = 0; q < na; q++) {
      int w = vma_find(names, n, ax[q]);
      if (p == FT_P_PVARY && w < 0 && n < FT_SPMD_MAX_AXES) memcpy(names[n++], ax[q], 64);
      if (p != FT_P_PVARY && w >= 0) memmove(names[w], names[w + 1], 64 * (size_t)(--n - w));
    }
  }
  if (!n) return true;
  char buf[FT_SPMD_MAX_AXES * 65 + 4];
  size_t len = 0;
  if (n > 1) buf[len++] = '(';
  for (int q = 0; q < n; q++) len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", q ? "," : "", names[q]);
  if (n > 1) buf[len++] = ')';
  for (int k = 0; k < n_out; k++) {
    if (out[k]->vma || out[k]->kind != FT_VAR) continue;
    if (!(out[k]->vma = ft_arena_strndup(t->a, buf, len))) return tx_nomem(t), false;
  }
  return true;
}

bool tx_emitn(tx *t, ft_prim p, const ft_pval *params, int n_in, ft_var *const *in, int n_out,
              ft_var **out) {
  if (t->failed) return false;
  for (int i = 0; i < n_in; i++)
    if (!in[i]) return false;
  ft_aval fast;
  if (n_out == 1 && infer_elementwise(p, params, n_in, in, &fast)) {
    if (!(out[0] = ft_var_new(t->a, &fast))) return tx_nomem(t), false;
    if (!tx_infer_vma(t, p, params, n_in, in, n_out, out)) return false;
    return params ? tx_push(t, p, params, n_in, in, n_out, out)
                  : tx_push_owned(t, p, NULL, n_in, in, n_out, out);
  }
  bool dflt = !params;
  if (dflt && !(params = ft_params_default_shared(p))) return tx_nomem(t), false;
  ft_aval inav[16], *ia = inav;
  ft_aval outav[16], *oa = outav;
  if (n_in > 16 && !(ia = malloc(sizeof *ia * (size_t)n_in))) return tx_nomem(t), false;
  if (n_out > 16 && !(oa = malloc(sizeof *oa * (size_t)n_out))) {
    if (ia != inav) free(ia);
    return tx_nomem(t), false;
  }
  for (int i = 0; i < n_in; i++) ia[i] = in[i]->aval;
  int got = 0;
  ft_status st = ft_infer(t->ctx, p, params, n_in, ia, &got, oa, n_out);
  bool ok = st == FT_OK;
  if (!ok) {
    ft_error_prefix(t->ctx, "%s: emitting %s", t->what, ft_prim_get(p)->name);
    t->failed = true;
  } else if (got != n_out) {
    tx_fail(t, FT_ERR_INTERNAL, "%s: %s gave %d outputs, expected %d", t->what,
            ft_prim_get(p)->name, got, n_out);
    ok = false;
  }
  for (int i = 0; ok && i < n_out; i++)
    if (!(out[i] = ft_var_new(t->a, &oa[i]))) ok = (tx_nomem(t), false);
  if (ia != inav) free(ia);
  if (oa != outav) free(oa);
  if (!ok || !tx_infer_vma(t, p, params, n_in, in, n_out, out)) return false;
  return dflt ? tx_push_owned(t, p, params, n_in, in, n_out, out)
              : tx_push(t, p, params, n_in, in, n_out, out);
}

ft_var *tx_emit(tx *t, ft_prim p, const ft_pval *params, int n_in, ft_var *const *in) {
  ft_var *out = NULL;
  return tx_emitn(t, p, params, n_in, in, 1, &out) ? out : NULL;
}

ft_var *tx_lit(tx *t, ft_dtype dt, double v) {
  if (t->failed) return NULL;
  ft_var *r;
  if (ft_dtype_is_inexact(dt)) r = ft_lit_new_float(t->a, dt, v);
  else if (dt == FT_BOOL) r = ft_lit_new_bool(t->a, v != 0);
  else if (ft_dtype_is_unsigned(dt)) r = ft_lit_new_uint(t->a, dt, (uint64_t)v);
  else r = ft_lit_new_int(t->a, dt, (int64_t)v);
  return r ? r : tx_nomem(t);
}

ft_var *tx_bcast(tx *t, ft_var *x, int rank, const int64_t *dims, const int64_t *bd) {
  if (!x || t->failed) return NULL;
  ft_pval *ps = tx_params(t, FT_P_BROADCAST_IN_DIM);
  if (!ps) return NULL;
  pset(FT_P_BROADCAST_IN_DIM, ps, "shape", ft_pv_ints(t->a, rank, dims));
  pset(FT_P_BROADCAST_IN_DIM, ps, "broadcast_dimensions", ft_pv_ints(t->a, x->aval.rank, bd));
  return tx_emit(t, FT_P_BROADCAST_IN_DIM, ps, 1, &x);
}

ft_var *tx_bcast_scalar(tx *t, ft_var *x, const ft_aval *av) {
  if (!x || av->rank == 0) return x;
  return tx_bcast(t, x, av->rank, av->dims, NULL);
}

ft_var *tx_full(tx *t, const ft_aval *av, double v) {
  return tx_bcast_scalar(t, tx_lit(t, av->dtype, v), av);
}

ft_var *tx_zeros(tx *t, const ft_aval *av) { return tx_full(t, av, 0.0); }

ft_var *tx_unop(tx *t, ft_prim p, ft_var *x) {
  if (!x) return NULL;
  if (p == FT_P_NEG && x->kind == FT_LIT && ft_dtype_is_float(x->aval.dtype))
    return tx_lit(t, x->aval.dtype, -x->lit.f);
  return tx_emit(t, p, NULL, 1, &x);
}

ft_var *tx_binop(tx *t, ft_prim p, ft_var *x, ft_var *y) {
  if (!x || !y) return NULL;
  if (x->kind == FT_LIT && y->kind == FT_LIT && ft_dtype_is_float(x->aval.dtype) &&
      x->aval.dtype == y->aval.dtype) {
    double a = x->lit.f, b = y->lit.f, r;
    switch (p) {
    case FT_P_ADD: case FT_P_ADD_ANY: r = a + b; break;
    case FT_P_SUB: r = a - b; break;
    case FT_P_MUL: r = a * b; break;
    case FT_P_DIV: r = a / b; break;
    default: goto emit;
    }
    if (x->aval.dtype == FT_F32) r = (float)r;
    return tx_lit(t, x->aval.dtype, r);
  }
emit:;
  ft_var *in[2] = {x, y};
  return tx_emit(t, p, NULL, 2, in);
}

ft_var *tx_acc(tx *t, ft_var *a, ft_var *b) {
  if (!a) return b;
  if (!b) return a;
  return tx_binop(t, FT_P_ADD_ANY, a, b);
}

ft_var *tx_convert(tx *t, ft_var *x, ft_dtype dt) {
  if (!x) return NULL;
  if (x->aval.dtype == dt) return x;
  ft_pval *ps = tx_params(t, FT_P_CONVERT_ELEMENT_TYPE);
  if (!ps) return NULL;
  pset(FT_P_CONVERT_ELEMENT_TYPE, ps, "new_dtype", ft_pv_dtype(dt));
  pset(FT_P_CONVERT_ELEMENT_TYPE, ps, "weak_type", ft_pv_bool(false));
  return tx_emit(t, FT_P_CONVERT_ELEMENT_TYPE, ps, 1, &x);
}

ft_var *tx_integer_pow(tx *t, ft_var *x, int64_t y) {
  if (!x) return NULL;
  if (y == 1) return x;
  if (y == 0) return tx_full(t, &x->aval, 1.0);
  ft_pval *ps = tx_params(t, FT_P_INTEGER_POW);
  if (!ps) return NULL;
  pset(FT_P_INTEGER_POW, ps, "y", ft_pv_int(y));
  return tx_emit(t, FT_P_INTEGER_POW, ps, 1, &x);
}

ft_var *tx_reduce_sum(tx *t, ft_var *x, int n_axes, const int64_t *axes) {
  if (!x) return NULL;
  if (n_axes == 0) return x;
  ft_pval *ps = tx_params(t, FT_P_REDUCE_SUM);
  if (!ps) return NULL;
  pset(FT_P_REDUCE_SUM, ps, "axes", ft_pv_ints(t->a, n_axes, axes));
  return tx_emit(t, FT_P_REDUCE_SUM, ps, 1, &x);
}

ft_var *tx_reshape(tx *t, ft_var *x, int rank, const int64_t *dims) {
  if (!x) return NULL;
  if (x->aval.rank == rank && !memcmp(x->aval.dims, dims, sizeof(int64_t) * (size_t)rank))
    return x;
  ft_pval *ps = tx_params(t, FT_P_RESHAPE);
  if (!ps) return NULL;
  pset(FT_P_RESHAPE, ps, "new_sizes", ft_pv_ints(t->a, rank, dims));
  return tx_emit(t, FT_P_RESHAPE, ps, 1, &x);
}

ft_var *tx_transpose(tx *t, ft_var *x, int rank, const int64_t *perm) {
  if (!x) return NULL;
  bool id = true;
  for (int i = 0; i < rank; i++) id = id && perm[i] == i;
  if (id) return x;
  ft_pval *ps = tx_params(t, FT_P_TRANSPOSE);
  if (!ps) return NULL;
  pset(FT_P_TRANSPOSE, ps, "permutation", ft_pv_ints(t->a, rank, perm));
  return tx_emit(t, FT_P_TRANSPOSE, ps, 1, &x);
}

ft_var *tx_select(tx *t, ft_var *pred, ft_var *on_false, ft_var *on_true) {
  ft_var *in[3] = {pred, on_false, on_true};
  return tx_emit(t, FT_P_SELECT_N, NULL, 3, in);
}

ft_var *tx_slice(tx *t, ft_var *x, const int64_t *start, const int64_t *limit,
                 const int64_t *strides) {
  if (!x) return NULL;
  int r = x->aval.rank;
  ft_pval *ps = tx_params(t, FT_P_SLICE);
  if (!ps) return NULL;
  pset(FT_P_SLICE, ps, "start_indices", ft_pv_ints(t->a, r, start));
  pset(FT_P_SLICE, ps, "limit_indices", ft_pv_ints(t->a, r, limit));
  bool unit = true;
  for (int i = 0; strides && i < r; i++) unit = unit && strides[i] == 1;
  if (!unit) pset(FT_P_SLICE, ps, "strides", ft_pv_ints(t->a, r, strides));
  return tx_emit(t, FT_P_SLICE, ps, 1, &x);
}

ft_var *tx_pad(tx *t, ft_var *x, ft_var *padv, const int64_t *lo, const int64_t *hi,
               const int64_t *interior) {
  if (!x || !padv) return NULL;
  int r = x->aval.rank;
  ft_pval *ps = tx_params(t, FT_P_PAD);
  if (!ps) return NULL;
  ft_pval cfg = ft_pv_tuple(t->a, r);
  for (int i = 0; i < r; i++) {
    int64_t v[3] = {lo[i], hi[i], interior ? interior[i] : 0};
    cfg.u.items[i] = ft_pv_ints(t->a, 3, v);
  }
  pset(FT_P_PAD, ps, "padding_config", cfg);
  ft_var *in[2] = {x, padv};
  return tx_emit(t, FT_P_PAD, ps, 2, in);
}

/* ----------------------------------------------------------- params */

ft_pval *tx_params(tx *t, ft_prim p) {
  if (t->failed) return NULL;
  int n = ft_prim_get(p)->n_params;
  const ft_pval *d = ft_params_default_shared(p);
  ft_pval *ps = d ? ft_arena_alloc_raw(t->a, sizeof(ft_pval) * (size_t)(n + 1)) : NULL;
  if (!ps) return tx_nomem(t);
  memcpy(ps, d, sizeof(ft_pval) * (size_t)(n + 1));
  return ps;
}

/* Whether v prints and reads exactly as the schema default d (which is
 * None, a bool, an int or ()): stricter than ft_pval_eq, which ignores
 * spellings such as np.int64(2). */
static bool pval_same_default(const ft_pval *v, const ft_pval *d) {
  if (v->tag != d->tag || v->s || d->s || v->list != d->list) return false;
  switch (v->tag) {
  case FT_PV_NONE: return true;
  case FT_PV_BOOL: return v->u.b == d->u.b;
  case FT_PV_INT: return v->u.i == d->u.i;
  case FT_PV_TUPLE: return v->n == 0 && d->n == 0;
  default: return false;
  }
}

const ft_pval *params_import(tx *t, const ft_arena *from, ft_prim p, const ft_pval *ps) {
  if (t->failed) return NULL;
  if (from == t->a) return ps; /* same arena: share (params are immutable) */
  int n = ft_prim_get(p)->n_params;
  const ft_pval *r = ft_params_default_shared(p);
  for (int i = 0; r && i < n; i++)
    if (!pval_same_default(&ps[i], &r[i])) r = NULL;
  if (!r) r = params_clone(t->a, p, ps); /* not the defaults */
  return r ? r : tx_nomem(t);
}

void pset(ft_prim p, ft_pval *ps, const char *name, ft_pval v) {
  int i = ft_prim_param_index(p, name);
  FT_ASSERT(i >= 0); /* a param name not in prims.def: a bug here */
  ps[i] = v;
}

const ft_pval *pget(ft_prim p, const ft_pval *ps, const char *name) {
  int i = ft_prim_param_index(p, name);
  return i < 0 || !ps ? NULL : &ps[i];
}

int64_t pget_int(ft_prim p, const ft_pval *ps, const char *name, int64_t dflt) {
  const ft_pval *v = pget(p, ps, name);
  return v && v->tag == FT_PV_INT ? v->u.i : dflt;
}

bool pget_bool(ft_prim p, const ft_pval *ps, const char *name, bool dflt) {
  const ft_pval *v = pget(p, ps, name);
  if (v && v->tag == FT_PV_BOOL) return v->u.b;
  if (v && v->tag == FT_PV_INT) return v->u.i != 0;
  return dflt;
}

int pget_ints(ft_prim p, const ft_pval *ps, const char *name, int64_t *out, int max) {
  const ft_pval *v = pget(p, ps, name);
  int n = 0;
  if (!v || !ft_pv_get_ints(v, out, max, &n) || n > max) return -1;
  return n;
}

void scan_set_counts(ft_pval *ps, int64_t num_consts, int64_t num_carry) {
  pset(FT_P_SCAN, ps, "num_consts", ft_pv_int(num_consts));
  pset(FT_P_SCAN, ps, "num_carry", ft_pv_int(num_carry));
  pset(FT_P_SCAN, ps, "ft_in", ft_pv_none());
  pset(FT_P_SCAN, ps, "ft_out", ft_pv_none());
}

ft_jaxpr *pget_jaxpr(ft_prim p, const ft_pval *ps, const char *name) {
  const ft_pval *v = pget(p, ps, name);
  return v && v->tag == FT_PV_JAXPR ? v->u.jaxpr : NULL;
}

/* ------------------------------------------------- implicit broadcasting */

/* Elementwise primitives broadcast rank-0 operands and size-1 axes of
 * equal-rank operands (JAX's broadcasting_shape_rule). Tangents are made
 * full-shaped with tx_bcast_to; cotangents are summed back with tx_unbcast. */
ft_var *tx_bcast_to(tx *t, ft_var *v, const ft_aval *to) {
  if (!v || ft_shape_eq(&v->aval, to)) return v;
  if (v->aval.rank == 0) return tx_bcast(t, v, to->rank, to->dims, NULL);
  int64_t bd[FT_MAX_RANK];
  for (int i = 0; i < v->aval.rank; i++) bd[i] = i;
  return tx_bcast(t, v, to->rank, to->dims, bd);
}

ft_var *tx_unbcast(tx *t, ft_var *ct, const ft_aval *x) {
  if (!ct || ft_shape_eq(&ct->aval, x)) return ct;
  int64_t axes[FT_MAX_RANK];
  int n = 0;
  if (x->rank == 0) {
    for (int i = 0; i < ct->aval.rank; i++) axes[n++] = i;
    return tx_reduce_sum(t, ct, n, axes);
  }
  for (int i = 0; i < ct->aval.rank; i++)
    if (x->dims[i] != ct->aval.dims[i]) axes[n++] = i;
  return tx_reshape(t, tx_reduce_sum(t, ct, n, axes), x->rank, x->dims);
}
