/* src/trace/ops.c: one tracing function per (non-control-flow) primitive,
 * with lax semantics: each builds the typed params of its primitive and
 * emits one equation; the shape rule (src/ir/shape.c) reports misuse. */
#include <string.h>

#include "trace/trace.h"

/* ------------------------------------------------------------- helpers */

static ft_tracer *root1(ft_val *x, ft_prim p) {
  ft_val *ops[1] = {x};
  return ft__root_of(NULL, ft_prim_get(p)->name, 1, ops);
}

/* A sym param value: the idx-th allowed spelling of param `name` of p. */
static ft_pval sym(ft_prim p, const char *name, int idx) {
  int i = ft_prim_param_index(p, name);
  ft_pval v = ft_pv_int(idx);
  if (i < 0) return v;
  const ft_param_spec *s = &ft_prim_get(p)->params[i];
  if (s->kind != FT_PK_SYM || !s->syms) return v;
  for (int k = 0; k <= idx; k++)
    if (!s->syms[k]) return ft_pv_none(); /* out of range: the shape rule reports it */
  v.tag = FT_PV_SYM;
  v.s = s->syms[idx];
  return v;
}

static bool check_rank_arg(ft_tracer *root, const char *name, const char *what, int n, int max) {
  if (n >= 0 && n <= max) return true;
  ft__fail(root, FT_ERR_SHAPE, "%s: %s %d out of range (0..%d)", name, what, n, max);
  return false;
}

static ft_val *unary(ft_prim p, ft_val *x) {
  ft_tracer *root = root1(x, p);
  return root ? ft__emit1(root, p, 1, &x, NULL) : NULL;
}

/* A weakly typed literal takes the dtype of the operand it meets (as a
 * Python scalar does in lax), when that loses no category: weak ints go
 * anywhere numeric, weak floats to inexact dtypes. */
static ft_val *adopt(ft_tracer *root, ft_val *lit, const ft_val *other) {
  const ft_aval *la = &lit->v->aval, *oa = &other->v->aval;
  if (lit->v->kind != FT_LIT || !la->weak_type || oa->weak_type || la->dtype == oa->dtype) return lit;
  bool ok = ft_dtype_is_int(la->dtype) ? (oa->dtype != FT_BOOL && oa->dtype != FT_FLOAT0)
                                       : ft_dtype_is_inexact(oa->dtype);
  if (!ok) return lit;
  return ft__val(lit->t, ft__lit_convert(root->j->arena, lit->v, oa->dtype, true));
}

static ft_val *binary(ft_prim p, ft_val *a, ft_val *b) {
  ft_val *ops[2] = {a, b};
  ft_tracer *root = ft__root_of(NULL, ft_prim_get(p)->name, 2, ops);
  if (!root) return NULL;
  ops[0] = adopt(root, a, b);
  ops[1] = adopt(root, b, a);
  if (!ops[0] || !ops[1]) return NULL;
  return ft__emit1(root, p, 2, ops, NULL);
}

/* ------------------------------------------------------------ unary */

#define UNARY(fn, P) \
  ft_val *fn(ft_val *x) { return unary(FT_P_##P, x); }
UNARY(ft_neg, NEG)
UNARY(ft_sign, SIGN)
UNARY(ft_floor, FLOOR)
UNARY(ft_ceil, CEIL)
UNARY(ft_is_finite, IS_FINITE)
UNARY(ft_exp, EXP)
UNARY(ft_exp2, EXP2)
UNARY(ft_log, LOG)
UNARY(ft_log1p, LOG1P)
UNARY(ft_expm1, EXPM1)
UNARY(ft_tanh, TANH)
UNARY(ft_logistic, LOGISTIC)
UNARY(ft_sin, SIN)
UNARY(ft_cos, COS)
UNARY(ft_tan, TAN)
UNARY(ft_asin, ASIN)
UNARY(ft_acos, ACOS)
UNARY(ft_atan, ATAN)
UNARY(ft_sinh, SINH)
UNARY(ft_cosh, COSH)
UNARY(ft_asinh, ASINH)
UNARY(ft_acosh, ACOSH)
UNARY(ft_atanh, ATANH)
UNARY(ft_sqrt, SQRT)
UNARY(ft_rsqrt, RSQRT)
UNARY(ft_cbrt, CBRT)
UNARY(ft_square, SQUARE)
UNARY(ft_abs, ABS)
UNARY(ft_erf, ERF)
UNARY(ft_erfc, ERFC)
UNARY(ft_erf_inv, ERF_INV)
UNARY(ft_lgamma, LGAMMA)
UNARY(ft_digamma, DIGAMMA)
UNARY(ft_not, NOT)
UNARY(ft_copy, COPY)
UNARY(ft_copy_p, COPY_P)
UNARY(ft_stop_gradient, STOP_GRADIENT)
#undef UNARY

ft_val *ft_round(ft_val *x, int rounding_method) {
  ft_tracer *root = root1(x, FT_P_ROUND);
  ft_pval *ps = root ? ft__params(root, FT_P_ROUND) : NULL;
  if (!ps) return NULL;
  ft__set(ps, FT_P_ROUND, "rounding_method", sym(FT_P_ROUND, "rounding_method", rounding_method));
  if (ps[ft_prim_param_index(FT_P_ROUND, "rounding_method")].tag == FT_PV_NONE) {
    ft__fail(root, FT_ERR_INVALID_ARG, "round: rounding_method %d must be 0 or 1", rounding_method);
    return NULL;
  }
  return ft__emit1(root, FT_P_ROUND, 1, &x, ps);
}

/* Complex parts (lax.real, lax.imag, lax.conj, lax.complex). */
ft_val *ft_real(ft_val *x) { return unary(FT_P_REAL, x); }
ft_val *ft_imag(ft_val *x) { return unary(FT_P_IMAG, x); }

ft_val *ft_conj(ft_val *x) {
  ft_tracer *root = root1(x, FT_P_CONJ);
  ft_pval *ps = root ? ft__params(root, FT_P_CONJ) : NULL;
  if (!ps) return NULL;
  ft__set(ps, FT_P_CONJ, "input_dtype", ft_pv_dtype(x->v->aval.dtype));
  return ft__emit1(root, FT_P_CONJ, 1, &x, ps);
}

ft_val *ft_complex(ft_val *re, ft_val *im) { return binary(FT_P_COMPLEX, re, im); }

ft_val *ft_integer_pow(ft_val *x, int y) {
  ft_tracer *root = root1(x, FT_P_INTEGER_POW);
  ft_pval *ps = root ? ft__params(root, FT_P_INTEGER_POW) : NULL;
  if (!ps) return NULL;
  ft__set(ps, FT_P_INTEGER_POW, "y", ft_pv_int(y));
  return ft__emit1(root, FT_P_INTEGER_POW, 1, &x, ps);
}

ft_val *ft_reduce_precision(ft_val *x, int exponent_bits, int mantissa_bits) {
  ft_prim p = FT_P_REDUCE_PRECISION;
  ft_tracer *root = root1(x, p);
  ft_pval *ps = root ? ft__params(root, p) : NULL;
  if (!ps) return NULL;
  ft__set(ps, p, "exponent_bits", ft_pv_int(exponent_bits));
  ft__set(ps, p, "mantissa_bits", ft_pv_int(mantissa_bits));
  return ft__emit1(root, p, 1, &x, ps);
}

/* ------------------------------------------------------------ binary */

#define BINARY(fn, P) \
  ft_val *fn(ft_val *a, ft_val *b) { return binary(FT_P_##P, a, b); }
BINARY(ft_add, ADD)
BINARY(ft_add_any, ADD_ANY)
BINARY(ft_sub, SUB)
BINARY(ft_mul, MUL)
BINARY(ft_div, DIV)
BINARY(ft_rem, REM)
BINARY(ft_pow, POW)
BINARY(ft_max, MAX)
BINARY(ft_min, MIN)
BINARY(ft_atan2, ATAN2)
BINARY(ft_polygamma, POLYGAMMA)
BINARY(ft_zeta, ZETA)
BINARY(ft_nextafter, NEXTAFTER)
BINARY(ft_and, AND)
BINARY(ft_or, OR)
BINARY(ft_xor, XOR)
BINARY(ft_shift_left, SHIFT_LEFT)
BINARY(ft_shift_right_logical, SHIFT_RIGHT_LOGICAL)
BINARY(ft_shift_right_arithmetic, SHIFT_RIGHT_ARITHMETIC)
BINARY(ft_eq, EQ)
BINARY(ft_ne, NE)
BINARY(ft_lt, LT)
BINARY(ft_le, LE)
BINARY(ft_gt, GT)
BINARY(ft_ge, GE)
#undef BINARY

ft_val *ft_select_n(ft_val *which, int n_cases, ft_val *const *cases) {
  ft_val *w[1] = {which};
  ft_tracer *root = ft__root_of(NULL, "select_n", 1, w);
  if (!root || !ft__root_of(root, "select_n", n_cases, cases)) return NULL;
  if (n_cases < 1 || n_cases > 255) {
    ft__fail(root, FT_ERR_INVALID_ARG, "select_n: %d cases (expects 1 to 255)", n_cases);
    return NULL;
  }
  ft_val *ops[256];
  ops[0] = which;
  memcpy(ops + 1, cases, sizeof *ops * (size_t)n_cases);
  return ft__emit1(root, FT_P_SELECT_N, n_cases + 1, ops, NULL);
}

ft_val *ft_clamp(ft_val *lo, ft_val *x, ft_val *hi) {
  ft_val *ops[3] = {lo, x, hi};
  ft_tracer *root = ft__root_of(NULL, "clamp", 3, ops);
  if (!root) return NULL;
  ops[0] = adopt(root, lo, x);
  ops[2] = adopt(root, hi, x);
  if (!ops[0] || !ops[2]) return NULL;
  return ft__emit1(root, FT_P_CLAMP, 3, ops, NULL);
}

/* ------------------------------------------------------------ conversions */

ft_val *ft__astype(ft_val *x, ft_dtype dt, bool weak) {
  ft_prim p = FT_P_CONVERT_ELEMENT_TYPE;
  ft_tracer *root = root1(x, p);
  if (!root) return NULL;
  if ((unsigned)dt >= FT_NUM_DTYPES || dt == FT_FLOAT0) {
    ft__fail(root, FT_ERR_INVALID_ARG, "convert_element_type: invalid new dtype %d", (int)dt);
    return NULL;
  }
  if (x->v->aval.dtype == dt && x->v->aval.weak_type == weak) return x;
  /* A literal is a concrete value: JAX converts it eagerly. */
  if (x->v->kind == FT_LIT) return ft__val(x->t, ft__lit_convert(root->j->arena, x->v, dt, weak));
  ft_pval *ps = ft__params(root, p);
  if (!ps) return NULL;
  ft__set(ps, p, "new_dtype", ft_pv_dtype(dt));
  ft__set(ps, p, "weak_type", ft_pv_bool(weak));
  return ft__emit1(root, p, 1, &x, ps);
}

ft_val *ft_convert(ft_val *x, ft_dtype dt) {
  ft_tracer *root = root1(x, FT_P_CONVERT_ELEMENT_TYPE);
  if (!root) return NULL;
  if ((unsigned)dt >= FT_NUM_DTYPES || dt == FT_FLOAT0) {
    ft__fail(root, FT_ERR_INVALID_ARG, "convert_element_type: invalid new dtype %d", (int)dt);
    return NULL;
  }
  if (x->v->kind == FT_LIT) return ft__val(x->t, ft__lit_convert(root->j->arena, x->v, dt, false));
  ft_prim p = FT_P_CONVERT_ELEMENT_TYPE;
  ft_pval *ps = ft__params(root, p);
  if (!ps) return NULL;
  ft__set(ps, p, "new_dtype", ft_pv_dtype(dt));
  ft__set(ps, p, "weak_type", ft_pv_bool(false));
  return ft__emit1(root, p, 1, &x, ps);
}

ft_val *ft_bitcast_convert(ft_val *x, ft_dtype dt) {
  ft_prim p = FT_P_BITCAST_CONVERT_TYPE;
  ft_tracer *root = root1(x, p);
  ft_pval *ps = root ? ft__params(root, p) : NULL;
  if (!ps) return NULL;
  ft__set(ps, p, "new_dtype", ft_pv_dtype(dt));
  return ft__emit1(root, p, 1, &x, ps);
}

/* ------------------------------------------------------------ layout */

ft_val *ft_broadcast_in_dim(ft_val *x, int rank, const int64_t *shape, const int *bdims) {
  ft_prim p = FT_P_BROADCAST_IN_DIM;
  ft_tracer *root = root1(x, p);
  if (!root || !check_rank_arg(root, "broadcast_in_dim", "rank", rank, FT_MAX_RANK)) return NULL;
  int xr = x->v->aval.rank;
  if ((rank && !shape) || (xr && !bdims)) {
    ft__fail(root, FT_ERR_INVALID_ARG, "broadcast_in_dim: shape or broadcast_dimensions is NULL");
    return NULL;
  }
  ft_pval *ps = ft__params(root, p);
  if (!ps) return NULL;
  ft__set(ps, p, "shape", ft__ints(root, rank, shape));
  ft__set(ps, p, "broadcast_dimensions", ft__ints_i(root, xr, bdims));
  return ft__emit1(root, p, 1, &x, ps);
}

ft_val *ft_reshape(ft_val *x, int rank, const int64_t *new_sizes) {
  ft_prim p = FT_P_RESHAPE;
  ft_tracer *root = root1(x, p);
  if (!root || !check_rank_arg(root, "reshape", "rank", rank, FT_MAX_RANK)) return NULL;
  if (rank && !new_sizes) {
    ft__fail(root, FT_ERR_INVALID_ARG, "reshape: new_sizes is NULL");
    return NULL;
  }
  ft_pval *ps = ft__params(root, p);
  if (!ps) return NULL;
  ft__set(ps, p, "new_sizes", ft__ints(root, rank, new_sizes));
  return ft__emit1(root, p, 1, &x, ps);
}

/* Ops whose only param is one int tuple of n entries. */
static ft_val *with_ints(ft_prim p, const char *param, ft_val *x, int n, const int *v) {
  const char *name = ft_prim_get(p)->name;
  ft_tracer *root = root1(x, p);
  if (!root || !check_rank_arg(root, name, "number of dimensions", n, FT_MAX_RANK)) return NULL;
  if (n && !v) {
    ft__fail(root, FT_ERR_INVALID_ARG, "%s: %s is NULL", name, param);
    return NULL;
  }
  ft_pval *ps = ft__params(root, p);
  if (!ps) return NULL;
  ft__set(ps, p, param, ft__ints_i(root, n, v));
  if (p == FT_P_REDUCE_MAX || p == FT_P_REDUCE_MIN) /* as jnp.max/min bind it (print.c, HIDE_ABSENT) */
    ft__set(ps, p, "out_sharding", (ft_pval){.tag = FT_PV_NONE, .s = "None"});
  return ft__emit1(root, p, 1, &x, ps);
}

ft_val *ft_transpose(ft_val *x, int n, const int *perm) {
  ft_tracer *root = root1(x, FT_P_TRANSPOSE);
  if (!root) return NULL;
  if (n != x->v->aval.rank) {
    ft__fail(root, FT_ERR_INVALID_ARG, "transpose: the permutation has %d entries; the operand "
             "has rank %d", n, x->v->aval.rank);
    return NULL;
  }
  return with_ints(FT_P_TRANSPOSE, "permutation", x, n, perm);
}
ft_val *ft_squeeze(ft_val *x, int n, const int *dims) { return with_ints(FT_P_SQUEEZE, "dimensions", x, n, dims); }
ft_val *ft_expand_dims(ft_val *x, int n, const int *dims) {
  return with_ints(FT_P_EXPAND_DIMS, "dimensions", x, n, dims);
}
ft_val *ft_rev(ft_val *x, int n, const int *dims) { return with_ints(FT_P_REV, "dimensions", x, n, dims); }

ft_val *ft_slice(ft_val *x, int n, const int64_t *start, const int64_t *limit,
                 const int64_t *strides) {
  ft_prim p = FT_P_SLICE;
  ft_tracer *root = root1(x, p);
  if (!root) return NULL;
  if (n != x->v->aval.rank) {
    ft__fail(root, FT_ERR_INVALID_ARG, "slice: start, limit and strides have %d entries; the "
             "operand has rank %d", n, x->v->aval.rank);
    return NULL;
  }
  if (n && (!start || !limit)) {
    ft__fail(root, FT_ERR_INVALID_ARG, "slice: start or limit is NULL");
    return NULL;
  }
  ft_pval *ps = ft__params(root, p);
  if (!ps) return NULL;
  ft__set(ps, p, "start_indices", ft__ints(root, n, start));
  ft__set(ps, p, "limit_indices", ft__ints(root, n, limit));
  if (strides) ft__set(ps, p, "strides", ft__ints(root, n, strides));
  return ft__emit1(root, p, 1, &x, ps);
}

/* [first, (second,) idx[0..rank)) as operands. */
static int gather_ops(ft_tracer *root, const char *name, ft_val **ops, int lead, int rank,
                      ft_val *const *idx) {
  if (rank && !idx) {
    ft__fail(root, FT_ERR_INVALID_ARG, "%s: start_indices is NULL", name);
    return -1;
  }
  if (!ft__root_of(root, name, rank, idx)) return -1;
  for (int i = 0; i < rank; i++) ops[lead + i] = idx[i];
  return lead + rank;
}

ft_val *ft_dynamic_slice(ft_val *x, ft_val *const *start_indices, const int64_t *sizes) {
  ft_prim p = FT_P_DYNAMIC_SLICE;
  ft_tracer *root = root1(x, p);
  if (!root) return NULL;
  int r = x->v->aval.rank;
  ft_val *ops[1 + FT_MAX_RANK] = {x};
  int n = gather_ops(root, "dynamic_slice", ops, 1, r, start_indices);
  if (n < 0) return NULL;
  if (r && !sizes) {
    ft__fail(root, FT_ERR_INVALID_ARG, "dynamic_slice: sizes is NULL");
    return NULL;
  }
  ft_pval *ps = ft__params(root, p);
  if (!ps) return NULL;
  ft__set(ps, p, "slice_sizes", ft__ints(root, r, sizes));
  return ft__emit1(root, p, n, ops, ps);
}

ft_val *ft_dynamic_update_slice(ft_val *x, ft_val *update, ft_val *const *start_indices) {
  ft_val *xu[2] = {x, update};
  ft_tracer *root = ft__root_of(NULL, "dynamic_update_slice", 2, xu);
  if (!root) return NULL;
  int r = x->v->aval.rank;
  ft_val *ops[2 + FT_MAX_RANK] = {x, update};
  int n = gather_ops(root, "dynamic_update_slice", ops, 2, r, start_indices);
  return n < 0 ? NULL : ft__emit1(root, FT_P_DYNAMIC_UPDATE_SLICE, n, ops, NULL);
}

ft_val *ft_concatenate(int n, ft_val *const *xs, int dimension) {
  ft_prim p = FT_P_CONCATENATE;
  ft_tracer *root = ft__root_of(NULL, "concatenate", n, xs);
  if (!root) return NULL;
  if (n < 1) {
    ft__fail(root, FT_ERR_INVALID_ARG, "concatenate: needs at least one operand");
    return NULL;
  }
  ft_pval *ps = ft__params(root, p);
  if (!ps) return NULL;
  ft__set(ps, p, "dimension", ft_pv_int(dimension));
  return ft__emit1(root, p, n, xs, ps);
}

ft_val *ft_pad(ft_val *x, ft_val *pad_value, const int64_t *config) {
  ft_prim p = FT_P_PAD;
  ft_val *ops[2] = {x, pad_value};
  ft_tracer *root = ft__root_of(NULL, "pad", 2, ops);
  if (!root) return NULL;
  int r = x->v->aval.rank;
  if (r && !config) {
    ft__fail(root, FT_ERR_INVALID_ARG, "pad: config is NULL");
    return NULL;
  }
  if (!(ops[1] = adopt(root, pad_value, x))) return NULL;
  ft_pval *ps = ft__params(root, p);
  if (!ps) return NULL;
  ft_pval cfg = ft_pv_tuple(root->j->arena, r);
  if (cfg.tag != FT_PV_TUPLE) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    return NULL;
  }
  for (int i = 0; i < r; i++) cfg.u.items[i] = ft__ints(root, 3, config + 3 * i);
  ft__set(ps, p, "padding_config", cfg);
  return ft__emit1(root, p, 2, ops, ps);
}

int ft_split(ft_val *x, int axis, int n, const int64_t *sizes, ft_val **out) {
  ft_prim p = FT_P_SPLIT;
  ft_tracer *root = root1(x, p);
  if (!root) return -1;
  if (n < 1 || n > 256 || !sizes || !out) {
    ft__fail(root, FT_ERR_INVALID_ARG, "split: needs 1 to 256 sizes and an out array");
    return -1;
  }
  ft_pval *ps = ft__params(root, p);
  if (!ps) return -1;
  ft__set(ps, p, "axis", ft_pv_int(axis));
  ft__set(ps, p, "sizes", ft__ints(root, n, sizes));
  return ft__emit(root, p, 1, &x, ps, out, n);
}

/* ------------------------------------------------------------ reductions */

static ft_val *reduce(ft_prim p, ft_val *x, int naxes, const int *axes) {
  return with_ints(p, "axes", x, naxes, axes);
}
ft_val *ft_reduce_sum(ft_val *x, int n, const int *axes) { return reduce(FT_P_REDUCE_SUM, x, n, axes); }
ft_val *ft_reduce_max(ft_val *x, int n, const int *axes) { return reduce(FT_P_REDUCE_MAX, x, n, axes); }
ft_val *ft_reduce_min(ft_val *x, int n, const int *axes) { return reduce(FT_P_REDUCE_MIN, x, n, axes); }
ft_val *ft_reduce_prod(ft_val *x, int n, const int *axes) { return reduce(FT_P_REDUCE_PROD, x, n, axes); }
ft_val *ft_reduce_and(ft_val *x, int n, const int *axes) { return reduce(FT_P_REDUCE_AND, x, n, axes); }
ft_val *ft_reduce_or(ft_val *x, int n, const int *axes) { return reduce(FT_P_REDUCE_OR, x, n, axes); }

static ft_val *argminmax(ft_prim p, ft_val *x, int axis, ft_dtype index_dtype) {
  ft_tracer *root = root1(x, p);
  ft_pval *ps = root ? ft__params(root, p) : NULL;
  if (!ps) return NULL;
  int64_t ax = axis;
  ft__set(ps, p, "axes", ft__ints(root, 1, &ax));
  ft__set(ps, p, "index_dtype", ft_pv_dtype(index_dtype));
  return ft__emit1(root, p, 1, &x, ps);
}
ft_val *ft_argmax(ft_val *x, int axis, ft_dtype dt) { return argminmax(FT_P_ARGMAX, x, axis, dt); }
ft_val *ft_argmin(ft_val *x, int axis, ft_dtype dt) { return argminmax(FT_P_ARGMIN, x, axis, dt); }

/* lax.cumsum and friends accept a negative axis (canonicalized). */
static ft_val *cumulative(ft_prim p, ft_val *x, int axis, bool reverse) {
  ft_tracer *root = root1(x, p);
  ft_pval *ps = root ? ft__params(root, p) : NULL;
  if (!ps) return NULL;
  if (axis < 0) axis += x->v->aval.rank;
  ft__set(ps, p, "axis", ft_pv_int(axis));
  ft__set(ps, p, "reverse", ft_pv_bool(reverse));
  return ft__emit1(root, p, 1, &x, ps);
}
ft_val *ft_cumsum(ft_val *x, int axis, bool rev) { return cumulative(FT_P_CUMSUM, x, axis, rev); }
ft_val *ft_cumprod(ft_val *x, int axis, bool rev) { return cumulative(FT_P_CUMPROD, x, axis, rev); }
ft_val *ft_cummax(ft_val *x, int axis, bool rev) { return cumulative(FT_P_CUMMAX, x, axis, rev); }
ft_val *ft_cummin(ft_val *x, int axis, bool rev) { return cumulative(FT_P_CUMMIN, x, axis, rev); }
ft_val *ft_cumlogsumexp(ft_val *x, int axis, bool rev) { return cumulative(FT_P_CUMLOGSUMEXP, x, axis, rev); }

/* ------------------------------------------------------------ dot_general */

/* A list-printed int tuple ([1] rather than (1,)), as JAX prints dimension numbers. */
static ft_pval int_list(ft_tracer *root, int n, const int *v) {
  ft_pval pv = ft__ints_i(root, n, v);
  pv.list = true;
  return pv;
}

ft_val *ft_dot_general(ft_val *a, ft_val *b, const ft_dot_dims *d, ft_dtype preferred) {
  ft_prim p = FT_P_DOT_GENERAL;
  ft_val *ops[2] = {a, b};
  ft_tracer *root = ft__root_of(NULL, "dot_general", 2, ops);
  if (!root) return NULL;
  if (!d || d->n_contract < 0 || d->n_contract > FT_MAX_RANK || d->n_batch < 0 ||
      d->n_batch > FT_MAX_RANK || ((unsigned)preferred > FT_NUM_DTYPES)) {
    ft__fail(root, FT_ERR_INVALID_ARG, "dot_general: invalid dimension numbers or preferred dtype");
    return NULL;
  }
  ft_pval *ps = ft__params(root, p);
  ft_arena *ar = root->j->arena;
  ft_pval dn = ft_pv_tuple(ar, 2), c = ft_pv_tuple(ar, 2), bt = ft_pv_tuple(ar, 2);
  if (!ps || dn.tag != FT_PV_TUPLE || c.tag != FT_PV_TUPLE || bt.tag != FT_PV_TUPLE) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    return NULL;
  }
  c.u.items[0] = int_list(root, d->n_contract, d->lhs_contract);
  c.u.items[1] = int_list(root, d->n_contract, d->rhs_contract);
  bt.u.items[0] = int_list(root, d->n_batch, d->lhs_batch);
  bt.u.items[1] = int_list(root, d->n_batch, d->rhs_batch);
  dn.u.items[0] = c;
  dn.u.items[1] = bt;
  ft__set(ps, p, "dimension_numbers", dn);
  if (preferred != FT_DTYPE_NONE) ft__set(ps, p, "preferred_element_type", ft_pv_dtype(preferred));
  return ft__emit1(root, p, 2, ops, ps);
}

/* ------------------------------------------------------------ other */

ft_val *ft_iota(ft_tracer *t, ft_dtype dt, int rank, const int64_t *shape, int dimension) {
  ft_prim p = FT_P_IOTA;
  ft_tracer *root = ft__root_of(t, "iota", 0, NULL);
  if (!root || !check_rank_arg(root, "iota", "rank", rank, FT_MAX_RANK)) return NULL;
  if (rank && !shape) {
    ft__fail(root, FT_ERR_INVALID_ARG, "iota: shape is NULL");
    return NULL;
  }
  ft_pval *ps = ft__params(root, p);
  if (!ps) return NULL;
  ft__set(ps, p, "dtype", ft_pv_dtype(dt));
  ft__set(ps, p, "shape", ft__ints(root, rank, shape));
  ft__set(ps, p, "dimension", ft_pv_int(dimension));
  return ft__emit1(root, p, 0, NULL, ps);
}

int ft_sort_multi(int n, ft_val *const *xs, int dimension, bool is_stable, int num_keys, ft_val **out) {
  ft_prim p = FT_P_SORT;
  ft_tracer *root = ft__root_of(NULL, "sort", n, xs);
  if (!root) return -1;
  if (n < 1 || !out) {
    ft__fail(root, FT_ERR_INVALID_ARG, "sort: needs at least one operand and an out array");
    return -1;
  }
  if (dimension < 0) dimension += xs[0]->v->aval.rank;
  ft_pval *ps = ft__params(root, p);
  if (!ps) return -1;
  ft__set(ps, p, "dimension", ft_pv_int(dimension));
  ft__set(ps, p, "is_stable", ft_pv_bool(is_stable));
  ft__set(ps, p, "num_keys", ft_pv_int(num_keys));
  return ft__emit(root, p, n, xs, ps, out, n);
}

ft_val *ft_sort(ft_val *x, int dimension, bool is_stable) {
  ft_val *out[1];
  return ft_sort_multi(1, &x, dimension, is_stable, 1, out) == 1 ? out[0] : NULL;
}

int ft_top_k(ft_val *x, int k, ft_val **values, ft_val **indices) {
  ft_prim p = FT_P_TOP_K;
  ft_tracer *root = root1(x, p);
  ft_pval *ps = root ? ft__params(root, p) : NULL;
  if (!ps) return -1;
  ft__set(ps, p, "k", ft_pv_int(k));
  ft__set(ps, p, "axis", ft_pv_int(x->v->aval.rank - 1));
  ft_val *out[2];
  if (ft__emit(root, p, 1, &x, ps, out, 2) != 2) return -1;
  if (values) *values = out[0];
  if (indices) *indices = out[1];
  return 2;
}

ft_val *ft_fft(ft_val *x, ft_fft_type type, int n, const int64_t *fft_lengths) {
  ft_prim p = FT_P_FFT;
  ft_tracer *root = root1(x, p);
  if (!root || !check_rank_arg(root, "fft", "number of fft_lengths", n, 3)) return NULL;
  if ((unsigned)type > FT_IRFFT || (n && !fft_lengths)) {
    ft__fail(root, FT_ERR_INVALID_ARG, "fft: invalid fft type %d or fft_lengths", (int)type);
    return NULL;
  }
  ft_pval *ps = ft__params(root, p);
  if (!ps) return NULL;
  ft__set(ps, p, "fft_type", sym(p, "fft_type", (int)type));
  ft__set(ps, p, "fft_lengths", ft__ints(root, n, fft_lengths));
  return ft__emit1(root, p, 1, &x, ps);
}
