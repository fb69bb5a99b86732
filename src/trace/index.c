/* src/trace/index.c: tracing of the indexed and windowed primitives —
 * gather, the scatter family, reduce_window_*, conv_general_dilated — and
 * the jax.numpy conveniences built on them (jnp.take, x.at[idx].op(v)).
 * Params are built exactly as JAX 0.10.2 prints them (dimension numbers as
 * their Python repr, mode as GatherScatterMode.NAME, a scatter combiner as
 * its update_jaxpr), so a traced program and JAX's printout hash alike. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "trace/trace.h"

/* ------------------------------------------------------------- helpers */

static bool count_ok(ft_tracer *root, const char *name, const char *what, int n, const int *v) {
  if (n >= 0 && n <= FT_MAX_RANK && (n == 0 || v)) return true;
  ft__fail(root, FT_ERR_INVALID_ARG, "%s: %s has %d entries (0..%d)", name, what, n, FT_MAX_RANK);
  return false;
}

/* Appends `field=(a, b)` (Python's tuple repr) to b[0..cap). */
static void put_field(char *b, size_t cap, const char *field, int n, const int *v) {
  size_t len = strlen(b);
  len += (size_t)snprintf(b + len, len < cap ? cap - len : 0, "%s%s=(", len && b[len - 1] != '(' ? ", " : "",
                          field);
  for (int i = 0; i < n && len < cap; i++)
    len += (size_t)snprintf(b + len, cap - len, "%s%d", i ? ", " : "", v[i]);
  if (len < cap) snprintf(b + len, cap - len, "%s)", n == 1 ? "," : "");
}

/* The text b as an opaque param (JAX's repr of a Python object). */
static ft_pval opaque(ft_tracer *root, const char *b) {
  char *s = ft_arena_strndup(root->j->arena, b, strlen(b));
  if (!s) ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
  return (ft_pval){.tag = FT_PV_OPAQUE, .s = s};
}

static ft_pval mode_param(ft_gather_mode m) {
  static const char *names[] = {"GatherScatterMode.CLIP", "GatherScatterMode.FILL_OR_DROP",
                                "GatherScatterMode.PROMISE_IN_BOUNDS"};
  return (ft_pval){.tag = FT_PV_STR, .s = names[m]};
}

static bool mode_ok(ft_tracer *root, const char *name, ft_gather_mode m) {
  if ((unsigned)m <= FT_GATHER_PROMISE_IN_BOUNDS) return true;
  ft__fail(root, FT_ERR_INVALID_ARG, "%s: unknown mode %d", name, (int)m);
  return false;
}

/* ------------------------------------------------------------------ gather */

/* lax.gather binds FILL_OR_DROP's fill_value resolved (None becomes NaN for
 * inexact dtypes, the minimum of signed and the maximum of unsigned
 * integers, True for bool), as an int for integer operands; other modes
 * bind None. */
static ft_pval fill_param(ft_dtype dt, const double *fill) {
  if (ft_dtype_is_inexact(dt)) return (ft_pval){.tag = FT_PV_FLOAT, .u.f = fill ? *fill : NAN};
  if (dt == FT_BOOL) return ft_pv_bool(fill ? *fill != 0 : true);
  int bits = ft_dtype_bits(dt);
  if (fill) return ft_pv_int(*fill != *fill ? 0 : (int64_t)*fill);
  if (ft_dtype_is_signed(dt)) return ft_pv_int(bits >= 64 ? INT64_MIN : -(INT64_C(1) << (bits - 1)));
  /* u64's maximum does not fit an int param: its bit pattern, -1, reads back the same */
  return ft_pv_int(bits >= 64 ? -1 : (int64_t)((UINT64_C(1) << bits) - 1));
}

ft_val *ft_gather(ft_val *operand, ft_val *indices, const ft_gather_dims *d, const int64_t *slice_sizes,
                  ft_gather_mode mode, const double *fill_value) {
  ft_prim p = FT_P_GATHER;
  ft_val *ops[2] = {operand, indices};
  ft_tracer *root = ft__root_of(NULL, "gather", 2, ops);
  if (!root) return NULL;
  int r = operand->v->aval.rank;
  if (!d || (r && !slice_sizes)) {
    ft__fail(root, FT_ERR_INVALID_ARG, "gather: dimension numbers or slice_sizes is NULL");
    return NULL;
  }
  if (!count_ok(root, "gather", "offset_dims", d->n_offset, d->offset_dims) ||
      !count_ok(root, "gather", "collapsed_slice_dims", d->n_collapsed, d->collapsed_slice_dims) ||
      !count_ok(root, "gather", "start_index_map", d->n_start, d->start_index_map) ||
      !count_ok(root, "gather", "operand_batching_dims", d->n_batching, d->operand_batching_dims) ||
      !count_ok(root, "gather", "start_indices_batching_dims", d->n_batching,
                d->start_indices_batching_dims) ||
      !mode_ok(root, "gather", mode))
    return NULL;
  char b[512] = "";
  put_field(b, sizeof b, "offset_dims", d->n_offset, d->offset_dims);
  put_field(b, sizeof b, "collapsed_slice_dims", d->n_collapsed, d->collapsed_slice_dims);
  put_field(b, sizeof b, "start_index_map", d->n_start, d->start_index_map);
  put_field(b, sizeof b, "operand_batching_dims", d->n_batching, d->operand_batching_dims);
  put_field(b, sizeof b, "start_indices_batching_dims", d->n_batching, d->start_indices_batching_dims);
  char dn[600];
  snprintf(dn, sizeof dn, "GatherDimensionNumbers(%s)", b);
  ft_pval *ps = ft__params(root, p);
  if (!ps) return NULL;
  ft__set(ps, p, "dimension_numbers", opaque(root, dn));
  ft__set(ps, p, "slice_sizes", ft__ints(root, r, slice_sizes));
  ft__set(ps, p, "mode", mode_param(mode));
  ft__set(ps, p, "indices_are_sorted", ft_pv_bool(d->indices_are_sorted));
  ft__set(ps, p, "unique_indices", ft_pv_bool(d->unique_indices));
  if (mode == FT_GATHER_FILL_OR_DROP)
    ft__set(ps, p, "fill_value", fill_param(operand->v->aval.dtype, fill_value));
  if (root->failed) return NULL;
  return ft__emit1(root, p, 2, ops, ps);
}

/* ----------------------------------------------------------------- scatter */

typedef ft_val *(*lax_binary)(ft_val *, ft_val *);
typedef struct combiner {
  lax_binary op;
} combiner;

static int combiner_fn(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out;
  out[0] = ((const combiner *)user)->op(in[0], in[1]);
  return out[0] ? 1 : -1;
}

/* update_jaxpr as JAX prints it: `{ lambda ; a:T[] b:T[]. let c = op a b in (c,) }`
 * for the combining scatters, None for scatter. */
static ft_pval update_jaxpr(ft_tracer *root, ft_prim p, ft_dtype dt) {
  combiner c;
  switch (p) {
  case FT_P_SCATTER_ADD: c.op = ft_add; break;
  case FT_P_SCATTER_MUL: c.op = ft_mul; break;
  case FT_P_SCATTER_MIN: c.op = ft_min; break;
  case FT_P_SCATTER_MAX: c.op = ft_max; break;
  default: return ft_pv_none();
  }
  ft_aval s[2] = {{.dtype = dt}, {.dtype = dt}};
  ft_var *args[2];
  ft_tracer *sub = ft__sub_new(root, 2, s, args);
  if (!sub || ft__run(sub, combiner_fn, &c, 2, args, ft_prim_get(p)->name) != 1) return ft_pv_none();
  if (!ft_jaxpr_set_vars(sub->j, 0, NULL, 2, args, sub->j->n_out, sub->j->outvars)) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    return ft_pv_none();
  }
  return ft_pv_jaxpr(sub->j);
}

static ft_val *scatter(ft_prim p, ft_val *operand, ft_val *indices, ft_val *updates,
                       const ft_scatter_dims *d, ft_gather_mode mode) {
  const char *name = ft_prim_get(p)->name;
  ft_val *ops[3] = {operand, indices, updates};
  ft_tracer *root = ft__root_of(NULL, name, 3, ops);
  if (!root) return NULL;
  if (!d) {
    ft__fail(root, FT_ERR_INVALID_ARG, "%s: dimension numbers are NULL", name);
    return NULL;
  }
  if (!count_ok(root, name, "update_window_dims", d->n_update_window, d->update_window_dims) ||
      !count_ok(root, name, "inserted_window_dims", d->n_inserted, d->inserted_window_dims) ||
      !count_ok(root, name, "scatter_dims_to_operand_dims", d->n_scatter,
                d->scatter_dims_to_operand_dims) ||
      !count_ok(root, name, "operand_batching_dims", d->n_batching, d->operand_batching_dims) ||
      !count_ok(root, name, "scatter_indices_batching_dims", d->n_batching,
                d->scatter_indices_batching_dims) ||
      !mode_ok(root, name, mode))
    return NULL;
  char b[512] = "";
  put_field(b, sizeof b, "update_window_dims", d->n_update_window, d->update_window_dims);
  put_field(b, sizeof b, "inserted_window_dims", d->n_inserted, d->inserted_window_dims);
  put_field(b, sizeof b, "scatter_dims_to_operand_dims", d->n_scatter, d->scatter_dims_to_operand_dims);
  put_field(b, sizeof b, "operand_batching_dims", d->n_batching, d->operand_batching_dims);
  put_field(b, sizeof b, "scatter_indices_batching_dims", d->n_batching, d->scatter_indices_batching_dims);
  char dn[600];
  snprintf(dn, sizeof dn, "ScatterDimensionNumbers(%s)", b);
  ft_pval *ps = ft__params(root, p);
  if (!ps) return NULL;
  ft__set(ps, p, "dimension_numbers", opaque(root, dn));
  ft__set(ps, p, "mode", mode_param(mode));
  ft__set(ps, p, "indices_are_sorted", ft_pv_bool(d->indices_are_sorted));
  ft__set(ps, p, "unique_indices", ft_pv_bool(d->unique_indices));
  ft__set(ps, p, "update_jaxpr", update_jaxpr(root, p, operand->v->aval.dtype));
  if (root->failed) return NULL;
  return ft__emit1(root, p, 3, ops, ps);
}

ft_val *ft_scatter(ft_val *x, ft_val *i, ft_val *u, const ft_scatter_dims *d, ft_gather_mode m) {
  return scatter(FT_P_SCATTER, x, i, u, d, m);
}
ft_val *ft_scatter_add(ft_val *x, ft_val *i, ft_val *u, const ft_scatter_dims *d, ft_gather_mode m) {
  return scatter(FT_P_SCATTER_ADD, x, i, u, d, m);
}
ft_val *ft_scatter_mul(ft_val *x, ft_val *i, ft_val *u, const ft_scatter_dims *d, ft_gather_mode m) {
  return scatter(FT_P_SCATTER_MUL, x, i, u, d, m);
}
ft_val *ft_scatter_min(ft_val *x, ft_val *i, ft_val *u, const ft_scatter_dims *d, ft_gather_mode m) {
  return scatter(FT_P_SCATTER_MIN, x, i, u, d, m);
}
ft_val *ft_scatter_max(ft_val *x, ft_val *i, ft_val *u, const ft_scatter_dims *d, ft_gather_mode m) {
  return scatter(FT_P_SCATTER_MAX, x, i, u, d, m);
}

/* ----------------------------------------------- jax.numpy conveniences */

/* jnp's _normalize_index: select(idx < 0, idx + n, idx) for signed idx. */
static ft_val *normalize_index(ft_tracer *root, ft_val *idx, int64_t n) {
  ft_dtype dt = idx->v->aval.dtype;
  if (!ft_dtype_is_signed(dt)) return idx;
  ft_val *neg = ft_lt(idx, ft__lit(root, dt, 0, false));
  ft_val *wrapped = ft_add(idx, ft__lit(root, dt, (double)n, false));
  ft_val *cases[2] = {idx, wrapped};
  return neg && wrapped ? ft_select_n(neg, 2, cases) : NULL;
}

/* indices[..., None], as jnp writes it: broadcast_in_dim onto a new last axis. */
static ft_val *index_vector(ft_val *idx) {
  if (!idx) return NULL;
  const ft_aval *a = &idx->v->aval;
  if (a->rank >= FT_MAX_RANK) {
    ft__fail(idx->t->root, FT_ERR_SHAPE, "indices of rank %d leave no room for the index axis", a->rank);
    return NULL;
  }
  int64_t shape[FT_MAX_RANK];
  int bd[FT_MAX_RANK];
  for (int i = 0; i < a->rank; i++) shape[i] = a->dims[i], bd[i] = i;
  shape[a->rank] = 1;
  return ft_broadcast_in_dim(idx, a->rank + 1, shape, bd);
}

static bool int_indices(ft_tracer *root, const char *name, const ft_val *idx) {
  if (ft_dtype_is_int(idx->v->aval.dtype)) return true;
  char s[128];
  ft__fail(root, FT_ERR_TYPE, "%s: indices must be an integer array, got %s", name,
           ft_aval_str(&idx->v->aval, s, sizeof s));
  return false;
}

/* jnp.take: gather one slice of size 1 along axis per index. */
static ft_val *take(ft_val *x, ft_val *idx, int axis, bool clip) {
  ft_val *ops[2] = {x, idx};
  ft_tracer *root = ft__root_of(NULL, "take", 2, ops);
  if (!root || !int_indices(root, "take", idx)) return NULL;
  const ft_aval *xa = &x->v->aval;
  int r = xa->rank, ir = idx->v->aval.rank;
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r || r - 1 + ir > FT_MAX_RANK) {
    ft__fail(root, FT_ERR_SHAPE, "take: axis %d out of range for rank %d (or result rank above %d)",
             axis, r, FT_MAX_RANK);
    return NULL;
  }
  ft_val *iv = index_vector(clip ? idx : normalize_index(root, idx, xa->dims[axis]));
  ft_gather_dims d = {.n_collapsed = 1, .n_start = 1};
  d.collapsed_slice_dims[0] = d.start_index_map[0] = axis;
  for (int i = 0; i < axis; i++) d.offset_dims[d.n_offset++] = i;
  for (int i = axis + ir; i < r + ir - 1; i++) d.offset_dims[d.n_offset++] = i;
  int64_t ss[FT_MAX_RANK];
  for (int i = 0; i < r; i++) ss[i] = i == axis ? 1 : xa->dims[i];
  return iv ? ft_gather(x, iv, &d, ss, clip ? FT_GATHER_CLIP : FT_GATHER_FILL_OR_DROP, NULL) : NULL;
}

ft_val *ft_take(ft_val *x, ft_val *idx, int axis) { return take(x, idx, axis, false); }
ft_val *ft_take_clip(ft_val *x, ft_val *idx, int axis) { return take(x, idx, axis, true); }

/* x.at[idx].op(updates) along axis 0 (jnp's _scatter_update). */
static ft_val *index_update(ft_prim p, ft_val *x, ft_val *idx, ft_val *updates) {
  ft_val *ops[3] = {x, idx, updates};
  ft_tracer *root = ft__root_of(NULL, "index_update", 3, ops);
  if (!root || !int_indices(root, "index_update", idx)) return NULL;
  const ft_aval *xa = &x->v->aval;
  int r = xa->rank, ir = idx->v->aval.rank;
  if (r < 1 || ir + r - 1 > FT_MAX_RANK || ir + 1 > FT_MAX_RANK) {
    ft__fail(root, FT_ERR_SHAPE, "index_update: needs an operand of rank >= 1 and a result rank <= %d",
             FT_MAX_RANK);
    return NULL;
  }
  ft_val *iv = index_vector(normalize_index(root, idx, xa->dims[0]));
  int64_t ushape[FT_MAX_RANK];
  for (int i = 0; i < ir; i++) ushape[i] = idx->v->aval.dims[i];
  for (int i = 1; i < r; i++) ushape[ir + i - 1] = xa->dims[i];
  ft_val *u = ft__astype(updates, xa->dtype, false);
  if (u) u = ft_broadcast_to(u, ir + r - 1, ushape);
  ft_scatter_dims d = {.n_inserted = 1, .n_scatter = 1};
  for (int i = 0; i < r - 1; i++) d.update_window_dims[d.n_update_window++] = ir + i;
  d.inserted_window_dims[0] = d.scatter_dims_to_operand_dims[0] = 0;
  if (!iv || !u) return NULL;
  return scatter(p, x, iv, u, &d, FT_GATHER_FILL_OR_DROP);
}

ft_val *ft_index_update_set(ft_val *x, ft_val *i, ft_val *u) { return index_update(FT_P_SCATTER, x, i, u); }
ft_val *ft_index_update_add(ft_val *x, ft_val *i, ft_val *u) { return index_update(FT_P_SCATTER_ADD, x, i, u); }
ft_val *ft_index_update_mul(ft_val *x, ft_val *i, ft_val *u) { return index_update(FT_P_SCATTER_MUL, x, i, u); }
ft_val *ft_index_update_min(ft_val *x, ft_val *i, ft_val *u) { return index_update(FT_P_SCATTER_MIN, x, i, u); }
ft_val *ft_index_update_max(ft_val *x, ft_val *i, ft_val *u) { return index_update(FT_P_SCATTER_MAX, x, i, u); }

/* ----------------------------------------------------------- reduce_window */

/* n ints or n ones (NULL). */
static ft_pval ints_or_ones(ft_tracer *root, int n, const int64_t *v) {
  int64_t ones[FT_MAX_RANK];
  for (int i = 0; i < n; i++) ones[i] = v ? v[i] : 1;
  return ft__ints(root, n, ones);
}

/* ((lo, hi), ...) from n (lo, hi) pairs (NULL: zeros). */
static ft_pval pairs(ft_tracer *root, int n, const int64_t *lohi) {
  ft_pval t = ft_pv_tuple(root->j->arena, n);
  if (n && t.tag != FT_PV_TUPLE) {
    ft__fail(root, FT_ERR_NOMEM, "out of memory while tracing");
    return t;
  }
  for (int i = 0; i < n; i++) {
    int64_t lh[2] = {lohi ? lohi[2 * i] : 0, lohi ? lohi[2 * i + 1] : 0};
    t.u.items[i] = ft__ints(root, 2, lh);
  }
  return t;
}

ft_val *ft_reduce_window(ft_val *x, ft_window_op op, const int64_t *window_dimensions,
                         const int64_t *window_strides, const int64_t *padding,
                         const int64_t *base_dilation, const int64_t *window_dilation) {
  static const ft_prim prims[] = {FT_P_REDUCE_WINDOW_SUM, FT_P_REDUCE_WINDOW_MAX, FT_P_REDUCE_WINDOW_MIN};
  ft_val *ops[1] = {x};
  ft_tracer *root = ft__root_of(NULL, "reduce_window", 1, ops);
  if (!root) return NULL;
  int r = x->v->aval.rank;
  if ((unsigned)op > FT_WINDOW_MIN || (r && !window_dimensions)) {
    ft__fail(root, FT_ERR_INVALID_ARG, "reduce_window: unknown op %d or window_dimensions is NULL", (int)op);
    return NULL;
  }
  ft_prim p = prims[op];
  ft_pval *ps = ft__params(root, p);
  if (!ps) return NULL;
  ft__set(ps, p, "window_dimensions", ft__ints(root, r, window_dimensions));
  ft__set(ps, p, "window_strides", ints_or_ones(root, r, window_strides));
  ft__set(ps, p, "base_dilation", ints_or_ones(root, r, base_dilation));
  ft__set(ps, p, "window_dilation", ints_or_ones(root, r, window_dilation));
  ft__set(ps, p, "padding", pairs(root, r, padding));
  if (root->failed) return NULL;
  return ft__emit1(root, p, 1, ops, ps);
}

/* ------------------------------------------------------------------- conv */

/* n entries of v with 0 read as 1. */
static ft_pval ones_for_zero(ft_tracer *root, int n, const int64_t *v) {
  int64_t w[FT_MAX_RANK];
  for (int i = 0; i < n; i++) w[i] = v[i] ? v[i] : 1;
  return ft__ints(root, n, w);
}

ft_val *ft_conv(ft_val *lhs, ft_val *rhs, const ft_conv_opts *opts) {
  ft_prim p = FT_P_CONV_GENERAL_DILATED;
  ft_val *ops[2] = {lhs, rhs};
  ft_tracer *root = ft__root_of(NULL, "conv_general_dilated", 2, ops);
  if (!root) return NULL;
  ft_conv_opts o;
  if (!ft__opts(root, "ft_conv_opts", opts, sizeof o, &o)) return NULL;
  int r = lhs->v->aval.rank, ns = r - 2;
  if (ns < 0) {
    ft__fail(root, FT_ERR_SHAPE, "conv_general_dilated: lhs needs rank >= 2, has %d", r);
    return NULL;
  }
  if (!o.has_dimension_numbers)
    for (int i = 0; i < r; i++) o.lhs_spec[i] = o.rhs_spec[i] = o.out_spec[i] = i;
  if (o.has_preferred_element_type && (unsigned)o.preferred_element_type >= FT_NUM_DTYPES) {
    ft__fail(root, FT_ERR_INVALID_ARG, "conv_general_dilated: invalid preferred_element_type");
    return NULL;
  }
  char b[512] = "";
  put_field(b, sizeof b, "lhs_spec", r, o.lhs_spec);
  put_field(b, sizeof b, "rhs_spec", r, o.rhs_spec);
  put_field(b, sizeof b, "out_spec", r, o.out_spec);
  char dn[600];
  snprintf(dn, sizeof dn, "ConvDimensionNumbers(%s)", b);
  int64_t pad[2 * FT_MAX_RANK];
  for (int i = 0; i < ns; i++) pad[2 * i] = o.padding[i][0], pad[2 * i + 1] = o.padding[i][1];
  ft_pval *ps = ft__params(root, p);
  if (!ps) return NULL;
  ft__set(ps, p, "dimension_numbers", opaque(root, dn));
  ft__set(ps, p, "window_strides", ones_for_zero(root, ns, o.window_strides));
  ft__set(ps, p, "lhs_dilation", ones_for_zero(root, ns, o.lhs_dilation));
  ft__set(ps, p, "rhs_dilation", ones_for_zero(root, ns, o.rhs_dilation));
  ft__set(ps, p, "padding", pairs(root, ns, pad));
  ft__set(ps, p, "feature_group_count", ft_pv_int(o.feature_group_count ? o.feature_group_count : 1));
  ft__set(ps, p, "batch_group_count", ft_pv_int(o.batch_group_count ? o.batch_group_count : 1));
  if (o.has_preferred_element_type)
    ft__set(ps, p, "preferred_element_type", ft_pv_dtype(o.preferred_element_type));
  if (root->failed) return NULL;
  return ft__emit1(root, p, 2, ops, ps);
}
