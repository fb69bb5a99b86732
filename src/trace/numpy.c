/* src/trace/numpy.c: jax.numpy-style conveniences, built from primitives
 * the way jax.numpy builds on lax: dtype promotion (JAX's lattice, with
 * weak types), rank promotion with broadcast_in_dim (size-1 axes are then
 * broadcast by the elementwise primitive), reductions with keepdims, and
 * jax.nn's softmax, log_softmax and logsumexp in JAX's stable forms. */
#include <math.h>
#include <string.h>

#include "trace/trace.h"

/* ------------------------------------------------------------ promotion */

static int category(ft_dtype d) {
  if (d == FT_BOOL) return 0;
  if (ft_dtype_is_int(d)) return 1;
  if (ft_dtype_is_float(d)) return 2;
  return 3;
}

static const ft_dtype signed_of_bits[] = {[8] = FT_I8, [16] = FT_I16, [32] = FT_I32, [64] = FT_I64};

void ft__promote(ft_dtype a, bool wa, ft_dtype b, bool wb, ft_dtype *out, bool *weak) {
  int ca = category(a), cb = category(b);
  *weak = false;
  if (a == b) {
    *out = a;
    *weak = wa && wb;
    return;
  }
  if (wa && wb) { /* weak defaults: the higher category wins */
    *out = ca >= cb ? a : b;
    *weak = true;
    return;
  }
  if (wa || wb) {
    ft_dtype s = wa ? b : a, w = wa ? a : b;
    if (category(w) <= category(s)) {
      *out = s;
      return;
    }
    /* e.g. int32 array + 2.0: the weak float's default type, still weak */
    static const ft_dtype dflt[] = {FT_BOOL, FT_I32, FT_F32, FT_C64};
    *out = category(w) == 3 && s == FT_F64 ? FT_C128 : dflt[category(w)];
    *weak = true;
    return;
  }
  if (ca != cb) {
    ft_dtype hi = ca > cb ? a : b, lo = ca > cb ? b : a;
    *out = category(hi) == 3 && lo == FT_F64 ? FT_C128 : hi;
    return;
  }
  int ba = ft_dtype_bits(a), bb = ft_dtype_bits(b);
  if (ca == 2 && ba == 16 && bb == 16) { /* f16 with bf16 */
    *out = FT_F32;
    return;
  }
  if (ca == 1 && ft_dtype_is_signed(a) != ft_dtype_is_signed(b)) {
    ft_dtype s = ft_dtype_is_signed(a) ? a : b, u = ft_dtype_is_signed(a) ? b : a;
    int bs = ft_dtype_bits(s), bu = ft_dtype_bits(u);
    if (bs > bu) *out = s;
    else if (bu < 64) *out = signed_of_bits[2 * bu];
    else { /* int64 with uint64: JAX's lattice joins them at the weak float */
      *out = FT_F32;
      *weak = true;
    }
    return;
  }
  *out = ba >= bb ? a : b;
}

/* ------------------------------------------------------------ shapes */

/* NumPy broadcasting of avals a and b into out (dims only); false when
 * they do not broadcast. */
static bool np_shape(const ft_aval *a, const ft_aval *b, ft_aval *out) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  *out = a->rank >= b->rank ? *a : *b;
  for (int i = 0; i < r; i++) {
    int ia = a->rank - r + i, ib = b->rank - r + i;
    int64_t x = ia >= 0 ? a->dims[ia] : 1, y = ib >= 0 ? b->dims[ib] : 1;
    if (x != y && x != 1 && y != 1) return false;
    out->dims[i] = x == 1 ? y : x;
  }
  out->rank = r;
  return true;
}

/* x broadcast to rank r by leading size-1 axes (lax.broadcast_to_rank). */
static ft_val *to_rank(ft_val *x, int r) {
  const ft_aval *a = &x->v->aval;
  if (a->rank == r || a->rank == 0) return x;
  int64_t shape[FT_MAX_RANK];
  int bd[FT_MAX_RANK];
  int lead = r - a->rank;
  for (int i = 0; i < lead; i++) shape[i] = 1;
  for (int i = 0; i < a->rank; i++) {
    shape[lead + i] = a->dims[i];
    bd[i] = lead + i;
  }
  return ft_broadcast_in_dim(x, r, shape, bd);
}

static ft_val *broadcast_full(ft_val *x, const ft_aval *shape) {
  if (!x || ft_shape_eq(&x->v->aval, shape)) return x;
  return ft_broadcast_to(x, shape->rank, shape->dims);
}

/* ------------------------------------------------------------ binary ops */

typedef ft_val *(*lax_binary)(ft_val *, ft_val *);

/* Promotes a and b (dtypes, then ranks) as jnp does before a lax op. */
static bool np_prepare(const char *name, ft_val **a, ft_val **b, bool inexact) {
  ft_val *ops[2] = {*a, *b};
  ft_tracer *root = ft__root_of(NULL, name, 2, ops);
  if (!root) return false;
  const ft_aval *x = &(*a)->v->aval, *y = &(*b)->v->aval;
  ft_aval bs;
  if (!np_shape(x, y, &bs)) {
    char s0[128], s1[128];
    ft__fail(root, FT_ERR_SHAPE, "%s: operand shapes %s and %s cannot be broadcast together", name,
             ft_aval_str(x, s0, sizeof s0), ft_aval_str(y, s1, sizeof s1));
    return false;
  }
  ft_dtype dt;
  bool weak;
  ft__promote(x->dtype, x->weak_type, y->dtype, y->weak_type, &dt, &weak);
  if (inexact && !ft_dtype_is_inexact(dt)) dt = FT_F32;
  int r = x->rank > y->rank ? x->rank : y->rank;
  *a = to_rank(ft__astype(*a, dt, weak), r);
  *b = *a ? to_rank(ft__astype(*b, dt, weak), r) : NULL;
  return *a && *b;
}

static ft_val *np_binary(const char *name, lax_binary op, ft_val *a, ft_val *b, bool inexact) {
  if (!np_prepare(name, &a, &b, inexact)) return NULL;
  return op(a, b);
}

ft_val *ft_np_add(ft_val *a, ft_val *b) { return np_binary("add", ft_add, a, b, false); }
ft_val *ft_np_sub(ft_val *a, ft_val *b) { return np_binary("sub", ft_sub, a, b, false); }
ft_val *ft_np_mul(ft_val *a, ft_val *b) { return np_binary("mul", ft_mul, a, b, false); }
ft_val *ft_np_div(ft_val *a, ft_val *b) { return np_binary("div", ft_div, a, b, true); }
ft_val *ft_np_maximum(ft_val *a, ft_val *b) { return np_binary("max", ft_max, a, b, false); }
ft_val *ft_np_minimum(ft_val *a, ft_val *b) { return np_binary("min", ft_min, a, b, false); }
ft_val *ft_np_eq(ft_val *a, ft_val *b) { return np_binary("eq", ft_eq, a, b, false); }
ft_val *ft_np_ne(ft_val *a, ft_val *b) { return np_binary("ne", ft_ne, a, b, false); }
ft_val *ft_np_lt(ft_val *a, ft_val *b) { return np_binary("lt", ft_lt, a, b, false); }
ft_val *ft_np_le(ft_val *a, ft_val *b) { return np_binary("le", ft_le, a, b, false); }
ft_val *ft_np_gt(ft_val *a, ft_val *b) { return np_binary("gt", ft_gt, a, b, false); }
ft_val *ft_np_ge(ft_val *a, ft_val *b) { return np_binary("ge", ft_ge, a, b, false); }

/* jnp.power: a concrete integer exponent becomes integer_pow (x ** 2). */
ft_val *ft_np_pow(ft_val *a, ft_val *b) {
  ft_val *ops[2] = {a, b};
  ft_tracer *root = ft__root_of(NULL, "pow", 2, ops);
  if (!root) return NULL;
  if (b->v->kind == FT_LIT && ft_dtype_is_int(b->v->aval.dtype) && b->v->lit.i >= INT32_MIN &&
      b->v->lit.i <= INT32_MAX) {
    ft_dtype dt;
    bool weak;
    ft__promote(a->v->aval.dtype, a->v->aval.weak_type, b->v->aval.dtype, b->v->aval.weak_type, &dt, &weak);
    return ft_integer_pow(ft__astype(a, dt, weak), (int)b->v->lit.i);
  }
  if (!np_prepare("pow", &a, &b, false)) return NULL;
  if (!ft_dtype_is_inexact(a->v->aval.dtype)) {
    ft__fail(root, FT_ERR_UNSUPPORTED, "pow: integer power with a non-literal exponent is not "
             "supported (dtype %s)", ft_dtype_name(a->v->aval.dtype));
    return NULL;
  }
  return ft_pow(a, b);
}

ft_val *ft_np_where(ft_val *cond, ft_val *x, ft_val *y) {
  ft_val *ops[3] = {cond, x, y};
  ft_tracer *root = ft__root_of(NULL, "select_n", 3, ops);
  if (!root) return NULL;
  char s0[128];
  if (cond->v->aval.dtype != FT_BOOL) {
    ft__fail(root, FT_ERR_TYPE, "select_n: the condition of ft_np_where must be bool, got %s",
             ft_aval_str(&cond->v->aval, s0, sizeof s0));
    return NULL;
  }
  if (!np_prepare("select_n", &x, &y, false)) return NULL;
  ft_aval full;
  if (!np_shape(&x->v->aval, &cond->v->aval, &full)) {
    char s1[128];
    ft__fail(root, FT_ERR_SHAPE, "select_n: condition %s and values %s cannot be broadcast together",
             ft_aval_str(&cond->v->aval, s0, sizeof s0), ft_aval_str(&x->v->aval, s1, sizeof s1));
    return NULL;
  }
  np_shape(&full, &y->v->aval, &full);
  ft_val *cases[2] = {broadcast_full(y, &full), broadcast_full(x, &full)};
  ft_val *c = broadcast_full(cond, &full);
  if (!c || !cases[0] || !cases[1]) return NULL;
  return ft_select_n(c, 2, cases);
}

ft_val *ft_astype(ft_val *x, ft_dtype dt) { return x ? ft__astype(x, dt, false) : NULL; }

ft_val *ft_broadcast_to(ft_val *x, int rank, const int64_t *shape) {
  ft_val *ops[1] = {x};
  ft_tracer *root = ft__root_of(NULL, "broadcast_in_dim", 1, ops);
  if (!root) return NULL;
  const ft_aval *a = &x->v->aval;
  bool ok = rank >= a->rank && rank <= FT_MAX_RANK && (shape || !rank);
  for (int i = 0; ok && i < a->rank; i++) {
    int64_t d = a->dims[i], t = shape[rank - a->rank + i];
    ok = d == t || d == 1;
  }
  if (!ok) {
    char s0[128];
    ft__fail(root, FT_ERR_SHAPE, "broadcast_in_dim: cannot broadcast %s to rank %d%s",
             ft_aval_str(a, s0, sizeof s0), rank, rank >= a->rank ? " (sizes differ)" : "");
    return NULL;
  }
  ft_aval target = ft_aval_make(a->dtype, rank, shape);
  if (ft_shape_eq(a, &target)) return x;
  int bd[FT_MAX_RANK];
  for (int i = 0; i < a->rank; i++) bd[i] = rank - a->rank + i;
  return ft_broadcast_in_dim(x, rank, shape, bd);
}

/* ------------------------------------------------------------ matmul */

ft_val *ft_matmul(ft_val *a, ft_val *b) {
  ft_val *ops[2] = {a, b};
  ft_tracer *root = ft__root_of(NULL, "dot_general", 2, ops);
  if (!root) return NULL;
  int ra = a->v->aval.rank, rb = b->v->aval.rank;
  ft_dot_dims d = {0};
  char s0[128], s1[128];
  if (ra == 0 || rb == 0) {
    ft__fail(root, FT_ERR_SHAPE, "dot_general: ft_matmul needs operands of rank >= 1, got %s and %s",
             ft_aval_str(&a->v->aval, s0, sizeof s0), ft_aval_str(&b->v->aval, s1, sizeof s1));
    return NULL;
  }
  d.n_contract = 1;
  d.lhs_contract[0] = ra - 1;
  d.rhs_contract[0] = rb == 1 ? 0 : rb - 2;
  if (ra >= 3 && rb == ra) { /* stacked matrices: leading axes are batch axes */
    d.n_batch = ra - 2;
    for (int i = 0; i < ra - 2; i++) d.lhs_batch[i] = d.rhs_batch[i] = i;
  } else if (rb >= 3) {
    ft__fail(root, FT_ERR_UNSUPPORTED, "dot_general: ft_matmul of %s and %s (batch broadcasting) is "
             "not supported", ft_aval_str(&a->v->aval, s0, sizeof s0), ft_aval_str(&b->v->aval, s1, sizeof s1));
    return NULL;
  }
  ft_dtype dt;
  bool weak;
  ft__promote(a->v->aval.dtype, a->v->aval.weak_type, b->v->aval.dtype, b->v->aval.weak_type, &dt, &weak);
  a = ft__astype(a, dt, weak);
  b = ft__astype(b, dt, weak);
  if (!a || !b) return NULL;
  return ft_dot_general(a, b, &d, dt);
}

/* ------------------------------------------------------------ reductions */

/* Canonical (non-negative, sorted, distinct) axes; naxes < 0: all. */
static int canon_axes(ft_tracer *root, const char *name, const ft_val *x, int naxes, const int *axes,
                      int *out) {
  int r = x->v->aval.rank;
  if (naxes < 0) {
    for (int i = 0; i < r; i++) out[i] = i;
    return r;
  }
  bool seen[FT_MAX_RANK] = {false};
  char s0[128];
  if (naxes > r || (naxes && !axes)) {
    ft__fail(root, FT_ERR_SHAPE, "%s: %d axes for operand %s", name, naxes,
             ft_aval_str(&x->v->aval, s0, sizeof s0));
    return -1;
  }
  for (int i = 0; i < naxes; i++) {
    int a = axes[i] < 0 ? axes[i] + r : axes[i];
    if (a < 0 || a >= r || seen[a]) {
      ft__fail(root, FT_ERR_SHAPE, "%s: axis %d %s for operand %s", name, axes[i],
               a >= 0 && a < r ? "repeated" : "out of range", ft_aval_str(&x->v->aval, s0, sizeof s0));
      return -1;
    }
    seen[a] = true;
  }
  int n = 0;
  for (int i = 0; i < r; i++)
    if (seen[i]) out[n++] = i;
  return n;
}

/* y (x reduced over axes) with the reduced axes put back as size 1. */
static ft_val *keep_dims(ft_val *y, const ft_val *x, int n, const int *axes) {
  if (!y) return NULL;
  const ft_aval *a = &x->v->aval;
  int64_t shape[FT_MAX_RANK];
  int bd[FT_MAX_RANK], k = 0;
  for (int i = 0; i < a->rank; i++) {
    bool red = false;
    for (int j = 0; j < n; j++) red = red || axes[j] == i;
    shape[i] = red ? 1 : a->dims[i];
    if (!red) bd[k++] = i;
  }
  return ft_broadcast_in_dim(y, a->rank, shape, bd);
}

typedef ft_val *(*lax_reduce)(ft_val *, int, const int *);

static ft_val *np_reduce(const char *name, lax_reduce op, ft_val *x, int naxes, const int *axes,
                         bool keepdims) {
  ft_tracer *root = ft__root_of(NULL, name, 1, &x);
  if (!root) return NULL;
  int ax[FT_MAX_RANK];
  int n = canon_axes(root, name, x, naxes, axes, ax);
  if (n < 0) return NULL;
  ft_val *y = op(x, n, ax);
  return keepdims ? keep_dims(y, x, n, ax) : y;
}

/* The dtype jnp.sum accumulates in: small integers and bool widen to 32
 * bits; f16/bf16 are summed in f32 (and converted back). */
static ft_dtype sum_dtype(ft_dtype dt) {
  if (dt == FT_BOOL || dt == FT_I8 || dt == FT_I16) return FT_I32;
  if (dt == FT_U8 || dt == FT_U16) return FT_U32;
  if (dt == FT_F16 || dt == FT_BF16) return FT_F32;
  return dt;
}

ft_val *ft_sum(ft_val *x, int naxes, const int *axes, bool keepdims) {
  if (!x) return NULL;
  ft_dtype dt = x->v->aval.dtype, acc = sum_dtype(dt);
  ft_val *y = np_reduce("reduce_sum", ft_reduce_sum, ft_astype(x, acc), naxes, axes, keepdims);
  return ft_dtype_is_float(dt) ? ft_astype(y, dt) : y;
}

ft_val *ft_mean(ft_val *x, int naxes, const int *axes, bool keepdims) {
  ft_tracer *root = ft__root_of(NULL, "reduce_sum", 1, &x);
  if (!root) return NULL;
  int ax[FT_MAX_RANK];
  int n = canon_axes(root, "reduce_sum", x, naxes, axes, ax);
  if (n < 0) return NULL;
  ft_dtype dt = x->v->aval.dtype;
  ft_dtype out = ft_dtype_is_inexact(dt) ? dt : FT_F32;
  ft_dtype acc = out == FT_F16 || out == FT_BF16 ? FT_F32 : out;
  double count = 1;
  for (int i = 0; i < n; i++) count *= (double)x->v->aval.dims[ax[i]];
  ft_val *s = np_reduce("reduce_sum", ft_reduce_sum, ft_astype(x, acc), n, ax, keepdims);
  ft_val *m = ft_div(s, ft_scalar(root, acc, count));
  return ft_astype(m, out);
}

ft_val *ft_amax(ft_val *x, int naxes, const int *axes, bool keepdims) {
  return np_reduce("reduce_max", ft_reduce_max, x, naxes, axes, keepdims);
}
ft_val *ft_amin(ft_val *x, int naxes, const int *axes, bool keepdims) {
  return np_reduce("reduce_min", ft_reduce_min, x, naxes, axes, keepdims);
}

/* ------------------------------------------------------------ jax.nn */

/* jnp.max(x, axis, initial=-inf, keepdims): reduce_max, then max with -inf. */
static ft_val *max_initial(ft_tracer *root, ft_val *x, int n, const int *ax, bool keepdims) {
  ft_val *m = ft_reduce_max(x, n, ax);
  m = ft_max(ft_scalar(root, x->v->aval.dtype, -INFINITY), m);
  return keepdims ? keep_dims(m, x, n, ax) : m;
}

static ft_tracer *float_operand(const char *name, ft_val *x) {
  ft_tracer *root = ft__root_of(NULL, name, 1, &x);
  if (root && !ft_dtype_is_float(x->v->aval.dtype)) {
    char s0[128];
    ft__fail(root, FT_ERR_TYPE, "%s: needs a floating operand, got %s", name,
             ft_aval_str(&x->v->aval, s0, sizeof s0));
    return NULL;
  }
  return root;
}

/* x - stop_gradient(max(x, axis, keepdims)): the shift both softmaxes use. */
static ft_val *shifted(ft_tracer *root, ft_val *x, int axis) {
  int ax[1];
  if (canon_axes(root, "reduce_max", x, 1, &axis, ax) < 0) return NULL;
  ft_val *m = max_initial(root, x, 1, ax, true);
  return ft_sub(x, ft_stop_gradient(m));
}

ft_val *ft_softmax(ft_val *x, int axis) {
  ft_tracer *root = float_operand("ft_softmax", x);
  if (!root) return NULL;
  int ax[1];
  if (canon_axes(root, "reduce_sum", x, 1, &axis, ax) < 0) return NULL;
  ft_val *e = ft_exp(shifted(root, x, axis));
  ft_val *s = keep_dims(ft_reduce_sum(e, 1, ax), x, 1, ax);
  return ft_div(e, s);
}

ft_val *ft_log_softmax(ft_val *x, int axis) {
  ft_tracer *root = float_operand("ft_log_softmax", x);
  if (!root) return NULL;
  int ax[1];
  if (canon_axes(root, "reduce_sum", x, 1, &axis, ax) < 0) return NULL;
  ft_val *sh = shifted(root, x, axis);
  ft_val *s = keep_dims(ft_reduce_sum(ft_exp(sh), 1, ax), x, 1, ax);
  return ft_sub(sh, ft_log(s));
}

/* jax.nn.logsumexp: a non-finite max is replaced by 0 before the shift; the
 * result is log|sum| + max. JAX also computes sign(sum) for return_sign and
 * leaves it unused; it is emitted the same way (an unused `_` output) so the
 * jaxpr matches JAX's. */
ft_val *ft_logsumexp(ft_val *x, int naxes, const int *axes, bool keepdims) {
  ft_tracer *root = float_operand("ft_logsumexp", x);
  if (!root) return NULL;
  int ax[FT_MAX_RANK];
  int n = canon_axes(root, "reduce_max", x, naxes, axes, ax);
  if (n < 0) return NULL;
  ft_val *amax = max_initial(root, x, n, ax, keepdims);
  if (!amax) return NULL;
  const ft_aval *ma = &amax->v->aval;
  ft_val *finite = ft_is_finite(amax);
  ft_val *zero = ft_full(root, ma->dtype, ma->rank, ma->dims, 0.0);
  ft_val *cases[2] = {zero, amax};
  ft_val *g = ft_stop_gradient(ft_select_n(finite, 2, cases));
  ft_val *h = keepdims ? g : keep_dims(g, x, n, ax);
  ft_val *e = ft_exp(ft_sub(x, h));
  ft_val *s = ft_reduce_sum(e, n, ax);
  if (keepdims) s = keep_dims(s, x, n, ax);
  if (s && ft_sign(s) && !root->failed) {
    /* the sign equation just emitted: its output is unused, print it as `_` */
    ft_tracer *cur = root->cur;
    ft_eqn *eq = &cur->j->eqns[cur->j->n_eqn - 1];
    ft_var *drop = ft_drop_new(root->j->arena, &eq->out[0]->aval);
    if (!drop) {
      ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
      return NULL;
    }
    eq->out[0] = drop;
  }
  return ft_add(ft_log(ft_abs(s)), g);
}

ft_val *ft_relu(ft_val *x) {
  ft_tracer *root = ft__root_of(NULL, "max", 1, &x);
  return root ? ft_np_maximum(x, ft_weak_i(root, 0)) : NULL;
}

ft_val *ft_one_hot(ft_val *labels, int n, ft_dtype dt) {
  ft_tracer *root = ft__root_of(NULL, "eq", 1, &labels);
  if (!root) return NULL;
  const ft_aval *a = &labels->v->aval;
  char s0[128];
  if (!ft_dtype_is_int(a->dtype) || a->rank >= FT_MAX_RANK || n < 0) {
    ft__fail(root, FT_ERR_TYPE, "ft_one_hot: needs integer labels of rank < %d and n >= 0, got %s",
             FT_MAX_RANK, ft_aval_str(a, s0, sizeof s0));
    return NULL;
  }
  int64_t lshape[FT_MAX_RANK], ishape[FT_MAX_RANK];
  int bd[FT_MAX_RANK];
  for (int i = 0; i < a->rank; i++) {
    lshape[i] = a->dims[i];
    ishape[i] = 1;
    bd[i] = i;
  }
  lshape[a->rank] = 1;
  ishape[a->rank] = n;
  ft_val *l = ft_broadcast_in_dim(labels, a->rank + 1, lshape, bd);
  ft_val *io = ft_iota(root, a->dtype, a->rank + 1, ishape, a->rank);
  return ft_astype(ft_eq(l, io), dt);
}
