/* src/runtime/interp_layout.c: data movement — broadcast_in_dim, reshape,
 * transpose, squeeze, expand_dims, rev, slice, dynamic_slice,
 * dynamic_update_slice (start indices clamped into range, as XLA does),
 * concatenate, pad (negative and interior padding), split — and iota.
 * Everything here moves whole elements as bytes, so it serves every dtype. */
#include <string.h>

#include "runtime.h"

static void c_strides(const ft_aval *a, int64_t *st) {
  int64_t s = 1;
  for (int i = a->rank - 1; i >= 0; i--) {
    st[i] = s;
    s *= a->dims[i];
  }
}

/* Advances a multi-index over dims (row-major); false after the last one. */
static bool next_index(int rank, const int64_t *dims, int64_t *idx) {
  for (int i = rank - 1; i >= 0; i--) {
    if (++idx[i] < dims[i]) return true;
    idx[i] = 0;
  }
  return false;
}

/* Copies out[idx] = in[base + sum idx[d] * step[d]] for every output index. */
static void gather_strided(const ft_array *in, ft_array *o, int64_t base, const int64_t *step) {
  size_t es = ft_dtype_size(o->aval.dtype);
  int64_t n = ft_array_size(o);
  if (n == 0 || es == 0) return;
  int64_t idx[FT_MAX_RANK] = {0}, k = 0;
  const char *src = in->data;
  char *dst = o->data;
  do {
    int64_t off = base;
    for (int d = 0; d < o->aval.rank; d++) off += idx[d] * step[d];
    memcpy(dst + (size_t)k * es, src + (size_t)off * es, es);
    k++;
  } while (next_index(o->aval.rank, o->aval.dims, idx));
}

static ft_status bad_param(ft_ctx *ctx, const char *what) {
  return ft_set_error(ctx, FT_ERR_TYPE, "bad or missing param: %s", what);
}

static ft_status broadcast_in_dim(ft_ctx *ctx, const ft_eqn *e, const ft_array *a, ft_array *o) {
  int64_t bd[FT_MAX_RANK], ist[FT_MAX_RANK], step[FT_MAX_RANK] = {0};
  int n = ft_param_ints(e, "broadcast_dimensions", bd, FT_MAX_RANK);
  if (n != a->aval.rank) return bad_param(ctx, "broadcast_dimensions");
  c_strides(&a->aval, ist);
  for (int i = 0; i < n; i++) {
    if (bd[i] < 0 || bd[i] >= o->aval.rank) return bad_param(ctx, "broadcast_dimensions");
    if (a->aval.dims[i] != 1) step[bd[i]] = ist[i];
  }
  gather_strided(a, o, 0, step);
  return FT_OK;
}

static ft_status transpose_by(ft_ctx *ctx, const int64_t *perm, int n, const ft_array *a,
                              ft_array *o) {
  int64_t ist[FT_MAX_RANK], step[FT_MAX_RANK];
  if (n != a->aval.rank) return bad_param(ctx, "permutation");
  c_strides(&a->aval, ist);
  for (int i = 0; i < n; i++) {
    if (perm[i] < 0 || perm[i] >= n) return bad_param(ctx, "permutation");
    step[i] = ist[perm[i]];
  }
  gather_strided(a, o, 0, step);
  return FT_OK;
}

static ft_status reshape(ft_ctx *ctx, const ft_eqn *e, const ft_array *a, ft_array *o) {
  int64_t dims[FT_MAX_RANK];
  const ft_pval *d = ft_eqn_param(e, "dimensions");
  if (d->tag == FT_PV_TUPLE) { /* old JAX: transpose by `dimensions` first */
    int n = ft_param_ints(e, "dimensions", dims, FT_MAX_RANK);
    ft_aval t = a->aval;
    if (n != a->aval.rank) return bad_param(ctx, "dimensions");
    for (int i = 0; i < n; i++) {
      if (dims[i] < 0 || dims[i] >= n) return bad_param(ctx, "dimensions");
      t.dims[i] = a->aval.dims[dims[i]];
    }
    ft_array *tmp = ft_array_alloc(ctx, &t);
    if (!tmp) return ft_ctx_status(ctx);
    ft_status st = transpose_by(ctx, dims, n, a, tmp);
    if (!st) memcpy(o->data, tmp->data, o->nbytes);
    ft_array_free(tmp);
    return st;
  }
  memcpy(o->data, a->data, o->nbytes);
  return FT_OK;
}

static ft_status rev(ft_ctx *ctx, const ft_eqn *e, const ft_array *a, ft_array *o) {
  int64_t dims[FT_MAX_RANK], step[FT_MAX_RANK], base = 0;
  int n = ft_param_ints(e, "dimensions", dims, FT_MAX_RANK);
  if (n < 0) return bad_param(ctx, "dimensions");
  c_strides(&a->aval, step);
  for (int i = 0; i < n; i++) {
    int64_t d = dims[i];
    if (d < 0 || d >= a->aval.rank) return bad_param(ctx, "dimensions");
    if (step[d] > 0 && a->aval.dims[d] > 0) {
      base += (a->aval.dims[d] - 1) * step[d];
      step[d] = -step[d];
    }
  }
  gather_strided(a, o, base, step);
  return FT_OK;
}

static ft_status slice(ft_ctx *ctx, const ft_eqn *e, const ft_array *a, ft_array *o) {
  int64_t start[FT_MAX_RANK], lim[FT_MAX_RANK], str[FT_MAX_RANK], ist[FT_MAX_RANK],
      step[FT_MAX_RANK], base = 0;
  int r = a->aval.rank;
  if (ft_param_ints(e, "start_indices", start, FT_MAX_RANK) != r ||
      ft_param_ints(e, "limit_indices", lim, FT_MAX_RANK) != r)
    return bad_param(ctx, "start_indices/limit_indices");
  if (ft_eqn_param(e, "strides")->tag == FT_PV_TUPLE) {
    if (ft_param_ints(e, "strides", str, FT_MAX_RANK) != r) return bad_param(ctx, "strides");
  } else {
    for (int i = 0; i < r; i++) str[i] = 1;
  }
  c_strides(&a->aval, ist);
  for (int i = 0; i < r; i++) {
    if (start[i] < 0 || lim[i] > a->aval.dims[i] || str[i] < 1 ||
        (o->aval.dims[i] > 0 && start[i] + (o->aval.dims[i] - 1) * str[i] >= a->aval.dims[i]))
      return ft_set_error(ctx, FT_ERR_SHAPE, "slice: indices out of range in dimension %d", i);
    base += start[i] * ist[i];
    step[i] = ist[i] * str[i];
  }
  gather_strided(a, o, base, step);
  return FT_OK;
}

/* XLA clamps each start index into [0, operand_dim - slice_dim]. */
static int64_t clamp_start(const ft_array *idx, int64_t dim, int64_t size) {
  int64_t v = ft_get_i64(idx, 0), hi = dim - size;
  if (ft_dtype_is_unsigned(idx->aval.dtype) && v < 0) v = INT64_MAX; /* huge u64 */
  if (v > hi) v = hi;
  if (v < 0) v = 0;
  return v;
}

static ft_status dynamic_slice(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *o) {
  const ft_array *a = in[0];
  int r = a->aval.rank;
  int64_t ist[FT_MAX_RANK], base = 0;
  if (e->n_in != 1 + r)
    return ft_set_error(ctx, FT_ERR_TYPE, "dynamic_slice: expected %d start indices, got %d",
                        r, e->n_in - 1);
  c_strides(&a->aval, ist);
  for (int i = 0; i < r; i++)
    base += clamp_start(in[1 + i], a->aval.dims[i], o->aval.dims[i]) * ist[i];
  gather_strided(a, o, base, ist);
  return FT_OK;
}

static ft_status dynamic_update_slice(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                                      ft_array *o) {
  const ft_array *a = in[0], *u = in[1];
  int r = a->aval.rank;
  int64_t ost[FT_MAX_RANK], start[FT_MAX_RANK], idx[FT_MAX_RANK] = {0};
  if (e->n_in != 2 + r || u->aval.rank != r || u->aval.dtype != a->aval.dtype)
    return ft_set_error(ctx, FT_ERR_TYPE, "dynamic_update_slice: bad operands");
  memcpy(o->data, a->data, o->nbytes);
  c_strides(&o->aval, ost);
  for (int i = 0; i < r; i++) {
    if (u->aval.dims[i] > a->aval.dims[i])
      return ft_set_error(ctx, FT_ERR_SHAPE, "dynamic_update_slice: update larger than operand");
    start[i] = clamp_start(in[2 + i], a->aval.dims[i], u->aval.dims[i]);
  }
  size_t es = ft_dtype_size(o->aval.dtype);
  int64_t n = ft_array_size(u), k = 0;
  if (n == 0) return FT_OK;
  do {
    int64_t off = 0;
    for (int d = 0; d < r; d++) off += (start[d] + idx[d]) * ost[d];
    memcpy((char *)o->data + (size_t)off * es, (const char *)u->data + (size_t)k * es, es);
    k++;
  } while (next_index(r, u->aval.dims, idx));
  return FT_OK;
}

/* Copies the blocks of `parts` along axis into o (concatenate), or the
 * blocks of a along axis into `parts` (split) when scatter is false. */
static void concat_blocks(ft_array *o, ft_array *const *parts, int np, int axis, bool split) {
  size_t es = ft_dtype_size(o->aval.dtype);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; d++) outer *= o->aval.dims[d];
  for (int d = axis + 1; d < o->aval.rank; d++) inner *= o->aval.dims[d];
  size_t row = (size_t)(o->aval.dims[axis] * inner) * es;
  for (int64_t i = 0; i < outer; i++) {
    size_t off = (size_t)i * row;
    for (int k = 0; k < np; k++) {
      size_t blk = (size_t)(parts[k]->aval.dims[axis] * inner) * es;
      char *big = (char *)o->data + off, *small = (char *)parts[k]->data + (size_t)i * blk;
      if (blk) {
        if (split) memcpy(small, big, blk);
        else memcpy(big, small, blk);
      }
      off += blk;
    }
  }
}

static ft_status concatenate(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *o) {
  int64_t axis = ft_param_int(e, "dimension", -1);
  if (axis < 0 || axis >= o->aval.rank) return bad_param(ctx, "dimension");
  int64_t total = 0;
  for (int k = 0; k < e->n_in; k++) {
    if (in[k]->aval.rank != o->aval.rank || in[k]->aval.dtype != o->aval.dtype)
      return ft_set_error(ctx, FT_ERR_SHAPE, "concatenate: operand %d does not fit", k);
    total += in[k]->aval.dims[axis];
  }
  if (total != o->aval.dims[axis])
    return ft_set_error(ctx, FT_ERR_SHAPE, "concatenate: sizes do not add up");
  concat_blocks(o, in, e->n_in, (int)axis, false);
  return FT_OK;
}

static ft_status split(ft_ctx *ctx, const ft_eqn *e, const ft_array *a, ft_array **out) {
  int64_t axis = ft_param_int(e, "axis", -1), total = 0;
  if (axis < 0 || axis >= a->aval.rank) return bad_param(ctx, "axis");
  for (int k = 0; k < e->n_out; k++) total += out[k]->aval.dims[axis];
  if (total != a->aval.dims[axis])
    return ft_set_error(ctx, FT_ERR_SHAPE, "split: sizes do not add up");
  concat_blocks((ft_array *)a, out, e->n_out, (int)axis, true);
  return FT_OK;
}

/* unstack: split into size-1 blocks, seen with the axis put back. */
static ft_status unstack(ft_ctx *ctx, const ft_eqn *e, const ft_array *a, ft_array **out) {
  int64_t axis = ft_param_int(e, "axis", -1);
  if (axis < 0 || axis >= a->aval.rank || e->n_out != a->aval.dims[axis]) return bad_param(ctx, "axis");
  ft_array *v = malloc(sizeof *v * (size_t)(e->n_out + 1));
  ft_array **pv = malloc(sizeof *pv * (size_t)(e->n_out + 1));
  if (!v || !pv) {
    free(v), free(pv);
    return ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  }
  for (int k = 0; k < e->n_out; k++) {
    v[k] = *out[k];
    v[k].aval = a->aval;
    v[k].aval.dims[axis] = 1;
    pv[k] = &v[k];
  }
  concat_blocks((ft_array *)a, pv, e->n_out, (int)axis, true);
  free(v), free(pv);
  return FT_OK;
}

/* Reads padding_config ((lo, hi, interior), ...). */
static bool pad_config(const ft_eqn *e, int rank, int64_t cfg[][3]) {
  const ft_pval *v = ft_eqn_param(e, "padding_config");
  if (v->tag != FT_PV_TUPLE || v->n != rank) return false;
  for (int i = 0; i < rank; i++) {
    int n = 0;
    if (!ft_pv_get_ints(&v->u.items[i], cfg[i], 3, &n) || n != 3 || cfg[i][2] < 0) return false;
  }
  return true;
}

static ft_status pad(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *o) {
  const ft_array *a = in[0], *pv = in[1];
  int r = a->aval.rank;
  int64_t cfg[FT_MAX_RANK][3], ist[FT_MAX_RANK], idx[FT_MAX_RANK] = {0};
  if (!pad_config(e, r, cfg)) return bad_param(ctx, "padding_config");
  if (pv->aval.dtype != o->aval.dtype || ft_array_size(pv) != 1)
    return ft_set_error(ctx, FT_ERR_TYPE, "pad: the padding value must be a scalar of the "
                        "operand's dtype");
  c_strides(&a->aval, ist);
  size_t es = ft_dtype_size(o->aval.dtype);
  int64_t n = ft_array_size(o), k = 0;
  if (n == 0) return FT_OK;
  do {
    int64_t off = 0;
    bool inside = true;
    for (int d = 0; d < r && inside; d++) {
      int64_t t = idx[d] - cfg[d][0], q = cfg[d][2] + 1;
      if (t < 0 || t % q != 0 || t / q >= a->aval.dims[d]) inside = false;
      else off += (t / q) * ist[d];
    }
    const char *src = inside ? (const char *)a->data + (size_t)off * es : pv->data;
    memcpy((char *)o->data + (size_t)k * es, src, es);
    k++;
  } while (next_index(r, o->aval.dims, idx));
  return FT_OK;
}

ft_status ft_interp_layout(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  ft_status st = ft_interp_alloc_outs(ctx, e, out);
  if (st) return st;
  ft_array *o = out[0];
  const ft_array *a = in[0];
  bool same_size = ft_array_size(a) == ft_array_size(o);
  switch (e->prim) {
  case FT_P_BROADCAST_IN_DIM: st = broadcast_in_dim(ctx, e, a, o); break;
  case FT_P_RESHAPE:
    st = same_size ? reshape(ctx, e, a, o) : ft_set_error(ctx, FT_ERR_SHAPE, "sizes differ");
    break;
  case FT_P_SQUEEZE: case FT_P_EXPAND_DIMS:
    if (same_size) memcpy(o->data, a->data, o->nbytes);
    else st = ft_set_error(ctx, FT_ERR_SHAPE, "sizes differ");
    break;
  case FT_P_TRANSPOSE: {
    int64_t perm[FT_MAX_RANK];
    int n = ft_param_ints(e, "permutation", perm, FT_MAX_RANK);
    st = transpose_by(ctx, perm, n, a, o);
    break;
  }
  case FT_P_REV: st = rev(ctx, e, a, o); break;
  case FT_P_SLICE: st = slice(ctx, e, a, o); break;
  case FT_P_DYNAMIC_SLICE: st = dynamic_slice(ctx, e, in, o); break;
  case FT_P_DYNAMIC_UPDATE_SLICE: st = dynamic_update_slice(ctx, e, in, o); break;
  case FT_P_CONCATENATE: st = concatenate(ctx, e, in, o); break;
  case FT_P_PAD: st = pad(ctx, e, in, o); break;
  case FT_P_SPLIT: st = split(ctx, e, a, out); break;
  case FT_P_UNSTACK: st = unstack(ctx, e, a, out); break;
  default: st = ft_set_error(ctx, FT_ERR_INTERNAL, "not a layout primitive");
  }
  if (st)
    for (int k = 0; k < e->n_out; k++) ft_array_free(out[k]), out[k] = NULL;
  return st;
}

ft_status ft_interp_iota(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  ft_status st = ft_interp_alloc_outs(ctx, e, out);
  if (st) return st;
  ft_array *o = out[0];
  int64_t dim = ft_param_int(e, "dimension", -1), idx[FT_MAX_RANK] = {0}, k = 0;
  if (dim < 0 || dim >= o->aval.rank) {
    ft_array_free(o);
    out[0] = NULL;
    return bad_param(ctx, "dimension");
  }
  if (ft_array_size(o) == 0) return FT_OK;
  do {
    if (ft_dtype_is_float(o->aval.dtype) || ft_dtype_is_complex(o->aval.dtype))
      ft_set_f64(o, k, (double)idx[dim]);
    else
      ft_set_i64(o, k, idx[dim]);
    k++;
  } while (next_index(o->aval.rank, o->aval.dims, idx));
  return FT_OK;
}

/* All-zero bits: +0 of every numeric dtype, False (XLA lowers empty2 to a
 * zeros constant; JAX only promises an uninitialized buffer). */
ft_status ft_interp_empty2(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  (void)in;
  ft_status st = ft_interp_alloc_outs(ctx, e, out);
  if (st) return st;
  memset(out[0]->data, 0, out[0]->nbytes);
  return FT_OK;
}
