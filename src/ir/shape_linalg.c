/* src/ir/shape_linalg.c: the shape/dtype rules of the linear-algebra
 * primitives (issue 20, docs/linalg.md), which ft_infer (shape.c) falls
 * through to. They follow JAX's linalg_shape_rule: each operand has a core
 * rank (the matrix or vector dims) after the same leading batch dims; JAX
 * only checks their count and leaves a mismatch to XLA, which fails, so
 * here batch dims must be equal. Messages start with the primitive's name
 * and show the avals. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir.h"

typedef struct {
  ft_ctx *ctx;
  ft_prim p;
  const ft_pval *params;
  int n_in;
  const ft_aval *in;
  ft_aval *out;
  int max_out, n_out;
  char sbuf[4][256];
  int si;
} L;

static const char *S(L *l, const ft_aval *a) {
  return ft_aval_str(a, l->sbuf[l->si++ % 4], sizeof l->sbuf[0]);
}

static ft_status fail(L *l, ft_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static ft_status fail(L *l, ft_status st, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return ft_set_error(l->ctx, st, "%s: %s", ft_prim_get(l->p)->name, msg);
}

static ft_status put(L *l, ft_aval a) {
  if (l->n_out >= l->max_out) return fail(l, FT_ERR_INVALID_ARG, "more than %d outputs", l->max_out);
  l->out[l->n_out++] = a;
  return FT_OK;
}

static const ft_pval *param(L *l, const char *name) {
  int i = l->params ? ft_prim_param_index(l->p, name) : -1;
  return i < 0 || l->params[i].tag == FT_PV_NONE ? NULL : &l->params[i];
}

static bool flag(L *l, const char *name) {
  const ft_pval *v = param(l, name);
  return v && (v->tag == FT_PV_BOOL ? v->u.b : v->tag == FT_PV_INT ? v->u.i != 0 : false);
}

/* Operand i: at least `core` dims, and a float (or, with cpx, complex) dtype. */
static ft_status operand(L *l, int i, int core, bool cpx, const char *what) {
  const ft_aval *a = &l->in[i];
  if (a->rank < core)
    return fail(l, FT_ERR_SHAPE, "%s must have rank at least %d, got %s", what, core, S(l, a));
  if (!ft_dtype_is_float(a->dtype) && !(cpx && ft_dtype_is_complex(a->dtype)))
    return fail(l, FT_ERR_TYPE, "%s must have a floating%s type, got %s", what,
                cpx ? " or complex" : "", S(l, a));
  return FT_OK;
}

/* Operands i and j: the same batch dims (ci and cj core dims) and dtype. */
static ft_status agree(L *l, int i, int ci, int j, int cj) {
  const ft_aval *a = &l->in[i], *b = &l->in[j];
  bool ok = a->rank - ci == b->rank - cj && a->dtype == b->dtype;
  for (int d = 0; ok && d < a->rank - ci; d++) ok = a->dims[d] == b->dims[d];
  if (!ok)
    return fail(l, FT_ERR_SHAPE, "operands %s and %s must have the same dtype and batch dims", S(l, a),
                S(l, b));
  return FT_OK;
}

static bool all_weak(L *l) {
  for (int i = 0; i < l->n_in; i++)
    if (!l->in[i].weak_type) return false;
  return true;
}

static int64_t last(const ft_aval *a, int k) { return a->dims[a->rank - k]; }

static ft_status square(L *l, int i, const char *what) {
  const ft_aval *a = &l->in[i];
  if (last(a, 1) != last(a, 2))
    return fail(l, FT_ERR_SHAPE, "The input to %s must be a square matrix. Got shape %s", what, S(l, a));
  return FT_OK;
}

/* ---------------------------------------------- factorizations and solves */
static ft_status rule_solve(L *l) {
  ft_status st;
  switch (l->p) {
  case FT_P_CHOLESKY: {
    if ((st = operand(l, 0, 2, true, "operand")) || (st = square(l, 0, "cholesky"))) return st;
    return put(l, l->in[0]);
  }
  case FT_P_CHOLESKY_UPDATE: {
    if ((st = operand(l, 0, 2, false, "r")) || (st = operand(l, 1, 1, false, "w"))) return st;
    const ft_aval *r = &l->in[0], *w = &l->in[1];
    if (r->rank != 2 || w->rank != 1)
      return fail(l, FT_ERR_SHAPE, "takes no batch dims (JAX), got %s and %s", S(l, r), S(l, w));
    if (r->dims[0] != r->dims[1] || w->dims[0] != r->dims[1] || r->dtype != w->dtype)
      return fail(l, FT_ERR_SHAPE,
                  "Rank-1 update to Cholesky decomposition takes a square matrix and a vector of "
                  "the same size as input. Got %s and %s", S(l, r), S(l, w));
    ft_aval o = *r;
    o.weak_type = all_weak(l);
    return put(l, o);
  }
  case FT_P_TRIANGULAR_SOLVE: {
    if ((st = operand(l, 0, 2, true, "a")) || (st = operand(l, 1, 2, true, "b"))) return st;
    if ((st = square(l, 0, "triangular_solve")) || (st = agree(l, 0, 2, 1, 2))) return st;
    const ft_aval *a = &l->in[0], *b = &l->in[1];
    if (last(a, 1) != last(b, flag(l, "left_side") ? 2 : 1))
      return fail(l, FT_ERR_SHAPE, "Incompatible shapes for arguments to triangular_solve: %s and %s",
                  S(l, a), S(l, b));
    ft_aval o = *b;
    o.weak_type = all_weak(l);
    return put(l, o);
  }
  case FT_P_LU: {
    if ((st = operand(l, 0, 2, true, "operand"))) return st;
    const ft_aval *a = &l->in[0];
    int64_t m = last(a, 2), n = last(a, 1);
    ft_aval o = *a, piv = *a, perm = *a;
    piv.rank = perm.rank = a->rank - 1;
    piv.dtype = perm.dtype = FT_I32;
    piv.weak_type = perm.weak_type = false;
    piv.dims[piv.rank - 1] = m < n ? m : n;
    perm.dims[perm.rank - 1] = m;
    if ((st = put(l, o)) || (st = put(l, piv))) return st;
    return put(l, perm);
  }
  case FT_P_LU_PIVOTS_TO_PERMUTATION: {
    const ft_aval *p = &l->in[0];
    if (p->dtype != FT_I32 || p->rank < 1)
      return fail(l, FT_ERR_TYPE, "pivots must be int32 with rank at least 1, got %s", S(l, p));
    const ft_pval *ps = param(l, "permutation_size");
    if (!ps || ps->tag != FT_PV_INT) return fail(l, FT_ERR_TYPE, "missing param permutation_size");
    if (ps->u.i < last(p, 1) || ps->u.i > INT32_MAX)
      return fail(l, FT_ERR_SHAPE,
                  "Output permutation size %lld has to exceed the trailing dimension of the "
                  "pivots. Got pivots size %lld", (long long)ps->u.i, (long long)last(p, 1));
    ft_aval o = *p;
    o.dims[o.rank - 1] = ps->u.i;
    o.weak_type = false;
    return put(l, o);
  }
  case FT_P_TRIDIAGONAL_SOLVE: {
    for (int i = 0; i < 3; i++)
      if ((st = operand(l, i, 1, true, "a diagonal"))) return st;
    if ((st = operand(l, 3, 2, true, "b"))) return st;
    const ft_aval *b = &l->in[3];
    for (int i = 0; i < 3; i++) {
      const ft_aval *v = &l->in[i];
      if ((st = agree(l, i, 1, 3, 2))) return st;
      if (last(v, 1) != last(b, 2))
        return fail(l, FT_ERR_SHAPE,
                    "tridiagonal_solve requires that the leading ndim-1 dimensions of b equal "
                    "the dimensions of the diagonal arguments, got %s and %s", S(l, v), S(l, b));
    }
    ft_aval o = *b;
    o.weak_type = all_weak(l);
    return put(l, o);
  }
  case FT_P_SYMMETRIC_PRODUCT: {
    if ((st = operand(l, 0, 2, false, "a")) || (st = operand(l, 1, 2, false, "c"))) return st;
    if ((st = agree(l, 0, 2, 1, 2))) return st;
    const ft_aval *a = &l->in[0], *c = &l->in[1];
    if (last(a, 2) != last(c, 1) || last(c, 1) != last(c, 2))
      return fail(l, FT_ERR_SHAPE,
                  "symmetric_update expects a rectangular matrix of shape (m, n) and a square "
                  "matrix of shape (n, n). Got shapes %s and %s", S(l, a), S(l, c));
    ft_aval o = *c;
    o.weak_type = all_weak(l);
    return put(l, o);
  }
  default: return FT_ERR_UNSUPPORTED;
  }
}

static bool solve_prim(ft_prim p) {
  switch (p) {
  case FT_P_CHOLESKY: case FT_P_CHOLESKY_UPDATE: case FT_P_TRIANGULAR_SOLVE: case FT_P_LU:
  case FT_P_LU_PIVOTS_TO_PERMUTATION: case FT_P_TRIDIAGONAL_SOLVE: case FT_P_SYMMETRIC_PRODUCT:
    return true;
  default: return false;
  }
}

bool ft_lstuple_ok(const ft_pval *v) {
  if (v->tag != FT_PV_TUPLE || v->n != 4) return false;
  bool ints = true, jaxprs = true;
  for (int i = 0; i < 4; i++) {
    ints &= v->u.items[i].tag == FT_PV_INT && v->u.items[i].u.i >= 0;
    jaxprs &= (v->u.items[i].tag == FT_PV_JAXPR && v->u.items[i].u.jaxpr) || v->u.items[i].tag == FT_PV_NONE;
  }
  return ints || jaxprs;
}

/* custom_linear_solve: operands are the consts of matvec, vecmat, solve and
 * transpose_solve (const_lengths), then b; the results are solve's, which
 * takes its consts and b. */
static ft_status rule_custom_linear_solve(L *l) {
  const ft_pval *cl = param(l, "const_lengths"), *js = param(l, "jaxprs");
  if (!cl || !js || !ft_lstuple_ok(cl) || !ft_lstuple_ok(js) || cl->u.items[0].tag != FT_PV_INT ||
      js->u.items[2].tag != FT_PV_JAXPR)
    return fail(l, FT_ERR_TYPE, "needs const_lengths (4 ints) and jaxprs with a solve jaxpr");
  int64_t nc = 0, off[4];
  for (int i = 0; i < 4; i++) off[i] = nc, nc += cl->u.items[i].u.i;
  const ft_jaxpr *sv = js->u.items[2].u.jaxpr;
  int64_t nb = l->n_in - nc, ns = cl->u.items[2].u.i;
  if (nb < 0 || sv->n_in != ns + nb || sv->n_out != nb)
    return fail(l, FT_ERR_SHAPE,
                "%d operands do not fit const_lengths (%lld consts) and a solve jaxpr of %d inputs "
                "and %d outputs", l->n_in, (long long)nc, sv->n_in, sv->n_out);
  for (int64_t k = 0; k < ns + nb; k++) {
    const ft_aval *want = &sv->invars[k]->aval, *got = &l->in[k < ns ? off[2] + k : nc + k - ns];
    if (want->dtype != got->dtype || want->rank != got->rank ||
        memcmp(want->dims, got->dims, sizeof(int64_t) * (size_t)want->rank))
      return fail(l, FT_ERR_SHAPE, "solve jaxpr input %lld is %s but the operand is %s", (long long)k,
                  S(l, want), S(l, got));
  }
  for (int k = 0; k < sv->n_out; k++) {
    ft_status st = put(l, sv->outvars[k]->aval);
    if (st) return st;
  }
  return FT_OK;
}

bool ft_infer_linalg(ft_ctx *ctx, ft_prim p, const ft_pval *params, int n_in, const ft_aval *in,
                     ft_aval *out, int max_out, int *n_out, ft_status *st) {
  if (!solve_prim(p) && p != FT_P_CUSTOM_LINEAR_SOLVE) return false;
  L l = {.ctx = ctx, .p = p, .params = params, .n_in = n_in, .in = in, .out = out, .max_out = max_out};
  *st = p == FT_P_CUSTOM_LINEAR_SOLVE ? rule_custom_linear_solve(&l) : rule_solve(&l);
  *n_out = l.n_out;
  return true;
}
