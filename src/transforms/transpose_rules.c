/* src/transforms/transpose_rules.c: the transpose rule of every linear
 * primitive (JAX's ad.primitive_transposes), and of control flow: jit and
 * the custom calls transpose their sub-jaxpr, cond each branch, scan its
 * body into a scan running the other way whose carries accumulate the
 * cotangents of the linear consts. ft_transpose_rule_status says which
 * primitives have a rule, which are not linear, and which linear ones are
 * not supported and why. */
#include <string.h>

#include "custom.h"
#include "transforms.h"

#define TR_NOT_LINEAR "not linear"
/* JAX's own words (_while_transpose_error in jax/_src/lax/control_flow/loops.py) */
#define TR_WHILE                                                                              \
  "unsupported: Reverse-mode differentiation does not work for lax.while_loop or "           \
  "lax.fori_loop with dynamic start/stop values. Try using lax.scan, or using fori_loop "    \
  "with static start/stop."

const char *ft_transpose_rule_status(ft_prim p) {
  switch (p) {
  case FT_P_NEG: case FT_P_ADD: case FT_P_ADD_ANY: case FT_P_SUB: case FT_P_MUL: case FT_P_DIV:
  case FT_P_CONVERT_ELEMENT_TYPE: case FT_P_REDUCE_SUM: case FT_P_BROADCAST_IN_DIM:
  case FT_P_RESHAPE: case FT_P_SQUEEZE: case FT_P_EXPAND_DIMS: case FT_P_TRANSPOSE: case FT_P_REV:
  case FT_P_SLICE: case FT_P_PAD: case FT_P_CONCATENATE: case FT_P_DYNAMIC_SLICE:
  case FT_P_DYNAMIC_UPDATE_SLICE: case FT_P_SELECT_N: case FT_P_DOT_GENERAL: case FT_P_CUMSUM:
  case FT_P_FFT: case FT_P_COPY: case FT_P_COPY_P: case FT_P_REDUCE_PRECISION: case FT_P_SPLIT:
  case FT_P_SORT: case FT_P_COND: case FT_P_SCAN: case FT_P_JIT: case FT_P_CUSTOM_JVP_CALL:
  case FT_P_CUSTOM_VJP_CALL: case FT_P_CUSTOM_LIN: case FT_P_REMAT2: case FT_P_EVAL_JAXPR:
  case FT_P_REAL: case FT_P_IMAG: case FT_P_CONJ: case FT_P_COMPLEX: /* ad_complex.c */
    return NULL;
  case FT_P_SHARDING_CONSTRAINT: case FT_P_LAYOUT_CONSTRAINT: case FT_P_RESHARD:
  case FT_P_SCATTER_SUB: case FT_P_POLYNOMIAL: case FT_P_STACK: case FT_P_UNSTACK: case FT_P_TILE:
  case FT_P_OPTIMIZATION_BARRIER: case FT_P_SELECT_AND_GATHER_ADD: case FT_P_SELECT_AND_SCATTER_ADD:
  case FT_P_LDEXP: /* linear in x (JAX's Ldexp.transpose) */
    return NULL;
  case FT_P_RAGGED_DOT_GENERAL: /* ad_ragged.c: mode RAGGED_NONCONTRACTING, as JAX */
    return NULL;
  case FT_P_WHILE: return TR_WHILE;
  case FT_P_SHARD_MAP: case FT_P_PSUM: case FT_P_PSUM_INVARIANT: case FT_P_PVARY: case FT_P_ALL_GATHER:
  case FT_P_REDUCE_SCATTER: case FT_P_ALL_TO_ALL: case FT_P_PPERMUTE: /* ad_spmd.c (issue 27) */
    return NULL;
  case FT_P_GATHER: case FT_P_SCATTER_ADD: case FT_P_SCATTER_MUL: case FT_P_SCATTER: /* ad_index.c */
    return NULL;
  case FT_P_REDUCE_WINDOW_SUM: case FT_P_CONV_GENERAL_DILATED: /* ad_window.c */
    return NULL;
  case FT_P_TRIANGULAR_SOLVE: case FT_P_TRIDIAGONAL_SOLVE: /* ad_linalg.c: linear in b */
    return NULL;
  case FT_P_CUSTOM_LINEAR_SOLVE: return ad_linalg_transpose_status(p);
  default: return TR_NOT_LINEAR;
  }
}

static const ft_aval *in_aval(tr_call *c, int i) { return &c->e->in[i]->aval; }

static bool not_linear(tr_call *c, const char *how) {
  tx_fail(c->t, FT_ERR_UNSUPPORTED, "transpose of %s: %s", ft_prim_get(c->e->prim)->name, how);
  return false;
}

static ft_var *zeros_in(tr_call *c, int i) { return tx_zeros(c->t, in_aval(c, i)); }

static bool elementwise(tr_call *c) {
  tx *t = c->t;
  ft_var *ct = c->ct[0];
  switch (c->e->prim) {
  case FT_P_NEG: c->ct_x[0] = tx_neg(t, ct); break;
  case FT_P_ADD: case FT_P_ADD_ANY:
    for (int i = 0; i < 2; i++)
      if (c->lin[i]) c->ct_x[i] = tx_unbcast(t, ct, in_aval(c, i));
    return !t->failed;
  case FT_P_SUB:
    if (c->lin[0]) c->ct_x[0] = tx_unbcast(t, ct, in_aval(c, 0));
    if (c->lin[1]) c->ct_x[1] = tx_unbcast(t, tx_neg(t, ct), in_aval(c, 1));
    return !t->failed;
  case FT_P_MUL:
    if (c->lin[0] && c->lin[1]) return not_linear(c, "both operands are linear");
    for (int i = 0; i < 2; i++)
      if (c->lin[i]) c->ct_x[i] = tx_unbcast(t, tx_mul(t, ct, c->x[1 - i]), in_aval(c, i));
    return !t->failed;
  case FT_P_DIV:
    if (c->lin[1]) return not_linear(c, "the divisor is linear");
    c->ct_x[0] = tx_unbcast(t, tx_div(t, ct, c->x[1]), in_aval(c, 0));
    return !t->failed;
  case FT_P_COPY: case FT_P_COPY_P: case FT_P_REDUCE_PRECISION: case FT_P_SHARDING_CONSTRAINT:
  case FT_P_LAYOUT_CONSTRAINT: case FT_P_RESHARD:
    c->ct_x[0] = tx_emit(t, c->e->prim, c->params, 1, &ct);
    break;
  default: return not_linear(c, TR_NOT_LINEAR);
  }
  c->ct_x[0] = tx_unbcast(t, c->ct_x[0], in_aval(c, 0));
  return !t->failed;
}

static bool select_n(tr_call *c) {
  tx *t = c->t;
  int n = c->e->n_in;
  if (c->lin[0]) return not_linear(c, "the predicate is linear");
  if (n > 64) return not_linear(c, "more than 63 cases");
  ft_var *in[64];
  ft_var *z = tx_zeros(t, &c->ct[0]->aval);
  for (int i = 1; i < n; i++) {
    if (!c->lin[i]) continue;
    in[0] = c->x[0];
    for (int k = 1; k < n; k++) in[k] = k == i ? c->ct[0] : z;
    c->ct_x[i] = tx_emit(t, FT_P_SELECT_N, NULL, n, in);
  }
  return !t->failed;
}

static bool broadcast_in_dim(tr_call *c) {
  tx *t = c->t;
  const ft_aval *x = in_aval(c, 0);
  int64_t bd[FT_MAX_RANK], axes[FT_MAX_RANK];
  int nb = pget_ints(FT_P_BROADCAST_IN_DIM, c->params, "broadcast_dimensions", bd, FT_MAX_RANK);
  if (nb != x->rank) return not_linear(c, "bad broadcast_dimensions");
  int r = c->ct[0]->aval.rank, na = 0;
  for (int d = 0; d < r; d++) {
    bool keep = false;
    for (int i = 0; i < nb; i++) keep = keep || (bd[i] == d && x->dims[i] == c->ct[0]->aval.dims[d]);
    if (!keep) axes[na++] = d;
  }
  c->ct_x[0] = tx_reshape(t, tx_reduce_sum(t, c->ct[0], na, axes), x->rank, x->dims);
  return !t->failed;
}

static bool reduce_sum(tr_call *c) {
  const ft_aval *x = in_aval(c, 0);
  int64_t axes[FT_MAX_RANK], kept[FT_MAX_RANK];
  int na = pget_ints(FT_P_REDUCE_SUM, c->params, "axes", axes, FT_MAX_RANK), nk = 0;
  for (int d = 0; d < x->rank; d++) {
    bool red = false;
    for (int i = 0; i < na; i++) red = red || axes[i] == d;
    if (!red) kept[nk++] = d;
  }
  c->ct_x[0] = tx_bcast(c->t, c->ct[0], x->rank, x->dims, kept);
  return !c->t->failed;
}

static bool transpose_op(tr_call *c) {
  int64_t perm[FT_MAX_RANK], inv[FT_MAX_RANK];
  int r = pget_ints(FT_P_TRANSPOSE, c->params, "permutation", perm, FT_MAX_RANK);
  for (int i = 0; i < r; i++) inv[perm[i]] = i;
  c->ct_x[0] = tx_transpose(c->t, c->ct[0], r, inv);
  return !c->t->failed;
}

/* reshape with dimensions=p (jnp.ravel(order="F")) first transposes its
 * operand by p: the cotangent is reshaped to the transposed shape, then
 * transposed back by the inverse of p (JAX's _reshape_transpose_rule). */
static bool reshape(tr_call *c) {
  const ft_aval *x = in_aval(c, 0);
  int64_t d[FT_MAX_RANK], td[FT_MAX_RANK], inv[FT_MAX_RANK];
  int nd = pget_ints(FT_P_RESHAPE, c->params, "dimensions", d, FT_MAX_RANK);
  if (nd != x->rank || nd <= 0) {
    c->ct_x[0] = tx_reshape(c->t, c->ct[0], x->rank, x->dims);
    return !c->t->failed;
  }
  for (int i = 0; i < nd; i++) td[i] = x->dims[d[i]], inv[d[i]] = i;
  c->ct_x[0] = tx_transpose(c->t, tx_reshape(c->t, c->ct[0], nd, td), nd, inv);
  return !c->t->failed;
}

static bool slice(tr_call *c) {
  const ft_aval *x = in_aval(c, 0);
  int r = x->rank;
  int64_t st[FT_MAX_RANK], lim[FT_MAX_RANK], str[FT_MAX_RANK], lo[FT_MAX_RANK], hi[FT_MAX_RANK],
      in[FT_MAX_RANK];
  pget_ints(FT_P_SLICE, c->params, "start_indices", st, FT_MAX_RANK);
  pget_ints(FT_P_SLICE, c->params, "limit_indices", lim, FT_MAX_RANK);
  if (pget_ints(FT_P_SLICE, c->params, "strides", str, FT_MAX_RANK) != r)
    for (int i = 0; i < r; i++) str[i] = 1;
  const ft_aval *ca = &c->ct[0]->aval;
  for (int i = 0; i < r; i++) {
    int64_t real = ca->dims[i] == 0 ? st[i] : st[i] + 1 + (ca->dims[i] - 1) * str[i];
    lo[i] = st[i];
    hi[i] = x->dims[i] - real;
    in[i] = str[i] - 1;
  }
  c->ct_x[0] = tx_pad(c->t, c->ct[0], tx_lit(c->t, x->dtype, 0.0), lo, hi, in);
  return !c->t->failed;
}

static bool pad(tr_call *c) {
  tx *t = c->t;
  const ft_aval *x = in_aval(c, 0);
  int r = x->rank;
  const ft_pval *cfg = pget(FT_P_PAD, c->params, "padding_config");
  int64_t lo[FT_MAX_RANK], hi[FT_MAX_RANK], it[FT_MAX_RANK];
  int64_t plo[FT_MAX_RANK], phi[FT_MAX_RANK], st[FT_MAX_RANK], lim[FT_MAX_RANK], str[FT_MAX_RANK];
  if (!cfg || cfg->tag != FT_PV_TUPLE || cfg->n != r) return not_linear(c, "bad padding_config");
  bool neg = false;
  for (int i = 0; i < r; i++) {
    int64_t v[3];
    int n = 0;
    if (!ft_pv_get_ints(&cfg->u.items[i], v, 3, &n) || n != 3) return not_linear(c, "bad padding_config");
    lo[i] = v[0], hi[i] = v[1], it[i] = v[2];
    plo[i] = lo[i] < 0 ? -lo[i] : 0;
    phi[i] = hi[i] < 0 ? -hi[i] : 0;
    neg = neg || plo[i] || phi[i];
  }
  ft_var *ct = c->ct[0], *ctx = NULL;
  if (c->lin[0]) {
    ft_var *u = neg ? tx_pad(t, ct, tx_lit(t, x->dtype, 0.0), plo, phi, NULL) : ct;
    for (int i = 0; i < r; i++) {
      int64_t L = x->dims[i] == 0 ? 0 : x->dims[i] + (x->dims[i] - 1) * it[i];
      st[i] = lo[i] > 0 ? lo[i] : 0;
      lim[i] = st[i] + L;
      str[i] = it[i] + 1;
    }
    c->ct_x[0] = ctx = tx_slice(t, u, st, lim, str);
  }
  if (c->lin[1]) {
    int64_t all[FT_MAX_RANK];
    for (int i = 0; i < r; i++) all[i] = i;
    ft_var *tot = tx_reduce_sum(t, ct, r, all);
    if (ctx) tot = tx_sub(t, tot, tx_reduce_sum(t, ctx, r, all));
    else if (!c->lin[0]) {
      /* operand not linear: ct of the pad value is the sum over padded places */
      ft_var *mask = tx_pad(t, tx_zeros(t, x), tx_lit(t, x->dtype, 1.0), lo, hi, it);
      tot = tx_reduce_sum(t, tx_mul(t, ct, mask), r, all);
    }
    c->ct_x[1] = tot;
  }
  return !t->failed;
}

static bool concatenate(tr_call *c) {
  int64_t d = pget_int(FT_P_CONCATENATE, c->params, "dimension", 0);
  int64_t off = 0;
  for (int i = 0; i < c->e->n_in; i++) {
    const ft_aval *x = in_aval(c, i);
    if (c->lin[i]) {
      int64_t st[FT_MAX_RANK] = {0}, lim[FT_MAX_RANK];
      for (int k = 0; k < x->rank; k++) lim[k] = c->ct[0]->aval.dims[k];
      st[d] = off;
      lim[d] = off + x->dims[d];
      c->ct_x[i] = tx_slice(c->t, c->ct[0], st, lim, NULL);
    }
    off += x->dims[d];
  }
  return !c->t->failed;
}

static bool split(tr_call *c) {
  int n = c->e->n_out;
  ft_var *in[64];
  if (n > 64) return not_linear(c, "more than 64 outputs");
  for (int k = 0; k < n; k++) in[k] = c->ct[k] ? c->ct[k] : tx_zeros(c->t, &c->e->out[k]->aval);
  ft_pval *ps = tx_params(c->t, FT_P_CONCATENATE);
  if (!ps) return false;
  pset(FT_P_CONCATENATE, ps, "dimension", *pget(FT_P_SPLIT, c->params, "axis"));
  c->ct_x[0] = tx_emit(c->t, FT_P_CONCATENATE, ps, n, in);
  return !c->t->failed;
}

static bool dynamic_slice(tr_call *c) {
  int n = c->e->n_in;
  if (n > 64) return not_linear(c, "too many indices");
  for (int i = 1; i < n; i++)
    if (c->lin[i]) return not_linear(c, "an index is linear");
  ft_var *in[64];
  in[0] = zeros_in(c, 0);
  in[1] = c->ct[0];
  for (int i = 1; i < n; i++) in[i + 1] = c->x[i];
  c->ct_x[0] = tx_emit(c->t, FT_P_DYNAMIC_UPDATE_SLICE, NULL, n + 1, in);
  return !c->t->failed;
}

static bool dynamic_update_slice(tr_call *c) {
  tx *t = c->t;
  int n = c->e->n_in;
  if (n > 64) return not_linear(c, "too many indices");
  for (int i = 2; i < n; i++)
    if (c->lin[i]) return not_linear(c, "an index is linear");
  ft_var *in[64];
  if (c->lin[0]) {
    in[0] = c->ct[0];
    in[1] = zeros_in(c, 1);
    for (int i = 2; i < n; i++) in[i] = c->x[i];
    c->ct_x[0] = tx_emit(t, FT_P_DYNAMIC_UPDATE_SLICE, NULL, n, in);
  }
  if (c->lin[1]) {
    const ft_aval *u = in_aval(c, 1);
    ft_pval *ps = tx_params(t, FT_P_DYNAMIC_SLICE);
    if (!ps) return false;
    pset(FT_P_DYNAMIC_SLICE, ps, "slice_sizes", ft_pv_ints(t->a, u->rank, u->dims));
    in[0] = c->ct[0];
    for (int i = 2; i < n; i++) in[i - 1] = c->x[i];
    c->ct_x[1] = tx_emit(t, FT_P_DYNAMIC_SLICE, ps, n - 1, in);
  }
  return !t->failed;
}

/* JAX's _dot_general_transpose_lhs; the rhs case swaps the operands. */
static ft_var *dot_transpose_lhs(tr_call *c, ft_var *g, ft_var *y, const ft_aval *xa, int64_t dn[4][FT_MAX_RANK],
                                 const int *nn, bool swap_ans) {
  const int64_t *xc = dn[0], *yc = dn[1], *xb = dn[2], *yb = dn[3];
  int nc = nn[0], nb = nn[2];
  int xr = xa->rank, yr = y->aval.rank;
  int64_t xk[FT_MAX_RANK], yk[FT_MAX_RANK];
  int nxk = 0, nyk = 0;
  for (int d = 0; d < xr; d++) {
    bool rm = false;
    for (int i = 0; i < nc; i++) rm = rm || xc[i] == d;
    for (int i = 0; i < nb; i++) rm = rm || xb[i] == d;
    if (!rm) xk[nxk++] = d;
  }
  for (int d = 0; d < yr; d++) {
    bool rm = false;
    for (int i = 0; i < nc; i++) rm = rm || yc[i] == d;
    for (int i = 0; i < nb; i++) rm = rm || yb[i] == d;
    if (!rm) yk[nyk++] = d;
  }
  int64_t ans_batch[FT_MAX_RANK], ans_y[FT_MAX_RANK];
  for (int i = 0; i < nb; i++) ans_batch[i] = i;
  for (int i = 0; i < nyk; i++) ans_y[i] = swap_ans ? nb + i : nb + nxk + i;
  /* dims = ((ans_y, y_kept), (ans_batch, y_batch)) */
  ft_pval dims = ft_pv_tuple(c->t->a, 2);
  if (!dims.u.items) return tx_nomem(c->t);
  ft_pval p0 = ft_pv_tuple(c->t->a, 2), p1 = ft_pv_tuple(c->t->a, 2);
  if (!p0.u.items || !p1.u.items) return tx_nomem(c->t);
  p0.u.items[0] = ft_pv_ints(c->t->a, nyk, ans_y);
  p0.u.items[1] = ft_pv_ints(c->t->a, nyk, yk);
  p1.u.items[0] = ft_pv_ints(c->t->a, nb, ans_batch);
  p1.u.items[1] = ft_pv_ints(c->t->a, nb, yb);
  dims.u.items[0] = p0;
  dims.u.items[1] = p1;
  ft_pval *ps = tx_params(c->t, FT_P_DOT_GENERAL);
  if (!ps) return NULL;
  pset(FT_P_DOT_GENERAL, ps, "dimension_numbers", dims);
  const ft_pval *prec = pget(FT_P_DOT_GENERAL, c->params, "precision");
  if (prec) pset(FT_P_DOT_GENERAL, ps, "precision", *prec);
  ft_var *d = tx_emit(c->t, FT_P_DOT_GENERAL, ps, 2, (ft_var *[]){g, y});
  /* out_axes = argsort(x_batch + x_kept + x_contract sorted by y_contract) */
  int64_t order[FT_MAX_RANK], srt[FT_MAX_RANK], out_axes[FT_MAX_RANK];
  int m = 0;
  for (int i = 0; i < nb; i++) order[m++] = xb[i];
  for (int i = 0; i < nxk; i++) order[m++] = xk[i];
  int idx[FT_MAX_RANK];
  for (int i = 0; i < nc; i++) idx[i] = i;
  for (int i = 1; i < nc; i++) /* argsort of y_contract (insertion sort, stable) */
    for (int k = i; k > 0 && yc[idx[k - 1]] > yc[idx[k]]; k--) {
      int tmp = idx[k];
      idx[k] = idx[k - 1];
      idx[k - 1] = tmp;
    }
  for (int i = 0; i < nc; i++) srt[i] = xc[idx[i]];
  for (int i = 0; i < nc; i++) order[m++] = srt[i];
  for (int i = 0; i < m; i++) out_axes[order[i]] = i;
  ft_var *r = tx_transpose(c->t, d, m, out_axes);
  return tx_convert(c->t, r, xa->dtype);
}

static bool dot_general(tr_call *c) {
  if (c->lin[0] && c->lin[1]) return not_linear(c, "both operands are linear");
  const ft_pval *dn = pget(FT_P_DOT_GENERAL, c->params, "dimension_numbers");
  int64_t v[4][FT_MAX_RANK];
  int n[4];
  for (int k = 0; k < 2; k++)
    for (int s = 0; s < 2; s++)
      if (!ft_pv_get_ints(&dn->u.items[k].u.items[s], v[2 * k + s], FT_MAX_RANK, &n[2 * k + s]))
        return not_linear(c, "bad dimension_numbers");
  if (c->lin[0]) {
    c->ct_x[0] = dot_transpose_lhs(c, c->ct[0], c->x[1], in_aval(c, 0), v, n, false);
  } else {
    int64_t w[4][FT_MAX_RANK];
    int m[4] = {n[1], n[0], n[3], n[2]};
    memcpy(w[0], v[1], sizeof w[0]);
    memcpy(w[1], v[0], sizeof w[0]);
    memcpy(w[2], v[3], sizeof w[0]);
    memcpy(w[3], v[2], sizeof w[0]);
    c->ct_x[1] = dot_transpose_lhs(c, c->ct[0], c->x[0], in_aval(c, 1), w, m, true);
  }
  return !c->t->failed;
}

static bool cumsum(tr_call *c) {
  ft_pval *ps = tx_params(c->t, FT_P_CUMSUM);
  if (!ps) return false;
  pset(FT_P_CUMSUM, ps, "axis", *pget(FT_P_CUMSUM, c->params, "axis"));
  pset(FT_P_CUMSUM, ps, "reverse", ft_pv_bool(!pget_bool(FT_P_CUMSUM, c->params, "reverse", false)));
  c->ct_x[0] = tx_emit(c->t, FT_P_CUMSUM, ps, 1, c->ct);
  return !c->t->failed;
}

static bool fft(tr_call *c) {
  const ft_pval *ty = pget(FT_P_FFT, c->params, "fft_type");
  int64_t k = ty && (ty->tag == FT_PV_SYM || ty->tag == FT_PV_INT) ? ty->u.i : -1;
  const char *s = ty && ty->s ? ty->s : "";
  bool c2c = k == 0 || k == 1 || !strcmp(s, "FFT") || !strcmp(s, "IFFT") || strstr(s, "FftType.FFT") ||
             strstr(s, "FftType.IFFT");
  /* RFFT has the real operand, IRFFT the real result (ad_complex.c) */
  if (!c2c) return ad_fft_real_transpose(c, !ft_dtype_is_complex(in_aval(c, 0)->dtype));
  /* The DFT matrix is symmetric, so FFT and IFFT are their own transposes. */
  c->ct_x[0] = tx_emit(c->t, FT_P_FFT, c->params, 1, c->ct);
  return !c->t->failed;
}

static bool sort(tr_call *c) {
  tx *t = c->t;
  int nk = (int)pget_int(FT_P_SORT, c->params, "num_keys", 1);
  int64_t dim = pget_int(FT_P_SORT, c->params, "dimension", 0);
  for (int i = 0; i < nk; i++)
    if (c->lin[i]) return not_linear(c, "a sort key is linear");
  if (nk > 32) return not_linear(c, "more than 32 keys");
  const ft_aval *a0 = in_aval(c, 0);
  ft_pval *ip = tx_params(t, FT_P_IOTA);
  if (!ip) return false;
  pset(FT_P_IOTA, ip, "dimension", ft_pv_int(dim));
  pset(FT_P_IOTA, ip, "dtype", ft_pv_dtype(FT_I32));
  pset(FT_P_IOTA, ip, "shape", ft_pv_ints(t->a, a0->rank, a0->dims));
  ft_var *iota = tx_emit(t, FT_P_IOTA, ip, 0, NULL);
  ft_var *in[34], *out[34];
  for (int i = 0; i < nk; i++) in[i] = c->x[i];
  in[nk] = iota;
  if (!tx_emitn(t, FT_P_SORT, c->params, nk + 1, in, nk + 1, out)) return false;
  ft_var *perm = out[nk];
  ft_pval *ps = tx_params(t, FT_P_SORT);
  if (!ps) return false;
  pset(FT_P_SORT, ps, "dimension", ft_pv_int(dim));
  pset(FT_P_SORT, ps, "is_stable", ft_pv_bool(false));
  pset(FT_P_SORT, ps, "num_keys", ft_pv_int(1));
  for (int k = nk; k < c->e->n_in; k++) {
    if (!c->lin[k] || !c->ct[k]) continue;
    ft_var *o[2];
    if (!tx_emitn(t, FT_P_SORT, ps, 2, (ft_var *[]){perm, c->ct[k]}, 2, o)) return false;
    c->ct_x[k] = o[1];
  }
  return !t->failed;
}

/* ------------------------------------------------------------ control */

/* The transposed call keeps the call's name, as JAX's does (jit of a
 * function f transposes to jit[name=f]). */
static ft_pval call_name(const ft_pval *name) {
  return name && name->tag == FT_PV_STR && name->s ? *name : (ft_pval){.tag = FT_PV_STR, .s = "f"};
}

/* jit, custom_jvp_call, custom_vjp_call: a jit of the transposed sub-jaxpr. */
static bool tr_call_rule(tr_state *s, tr_call *c) {
  tx *t = c->t;
  const ft_eqn *e = c->e;
  bool jit = e->prim == FT_P_JIT || e->prim == FT_P_REMAT2;
  const ft_jaxpr *inner = pget_jaxpr(e->prim, e->params, jit ? "jaxpr" : "call_jaxpr");
  bool *nz = calloc((size_t)(e->n_out + e->n_in) + 1, 1), *onz = nz + e->n_out;
  ft_var **in = malloc(sizeof(ft_var *) * (size_t)(2 * (e->n_in + e->n_out) + 2));
  bool ok = nz && in;
  if (!ok) tx_nomem(t);
  for (int k = 0; ok && k < e->n_out; k++) nz[k] = c->ct[k] != NULL;
  ft_jaxpr *tj = ok ? transpose_jaxpr(s, t->a, inner, c->lin, nz, false, onz) : NULL;
  if (ok && tj) {
    int ni = 0, no = 0;
    for (int i = 0; i < e->n_in; i++)
      if (!c->lin[i]) in[ni++] = c->x[i];
    for (int k = 0; k < e->n_out; k++)
      if (c->ct[k]) in[ni++] = c->ct[k];
    for (int i = 0; i < e->n_in; i++) no += c->lin[i] && onz[i];
    /* remat2 stays remat2 (its non-linear equations, the recomputed
     * residuals, run inside the transposed body: in the backward pass) */
    ft_prim op = e->prim == FT_P_REMAT2 ? FT_P_REMAT2 : FT_P_JIT;
    ft_pval *ps = tx_params(t, op);
    ft_var **out = in + ni;
    if (ps && op == FT_P_REMAT2) {
      memcpy(ps, c->params, sizeof(ft_pval) * (size_t)ft_prim_get(op)->n_params);
      pset(op, ps, "differentiated", ft_pv_bool(true));
    } else if (ps) {
      pset(FT_P_JIT, ps, "name", call_name(pget(e->prim, c->params, "name")));
    }
    if (ps) {
      pset(op, ps, "jaxpr", ft_pv_jaxpr(tj));
      if (tx_emitn(t, op, ps, ni, in, no, out)) {
        int m = 0;
        for (int i = 0; i < e->n_in; i++)
          if (c->lin[i] && onz[i]) c->ct_x[i] = out[m++];
      }
    }
  } else {
    ok = false;
  }
  free(nz), free(in);
  return ok && !t->failed;
}

static bool tr_cond(tr_state *s, tr_call *c) {
  tx *t = c->t;
  const ft_eqn *e = c->e;
  if (c->lin[0]) return not_linear(c, "the branch index is linear");
  const ft_pval *br = pget(FT_P_COND, e->params, "branches");
  int nb = br->n, nops = e->n_in - 1;
  bool *nz = calloc((size_t)(e->n_out + 2 * nops) + 2, 1), *onz = nz + e->n_out, *u = onz + nops;
  ft_var **in = malloc(sizeof(ft_var *) * (size_t)(2 * (e->n_in + e->n_out) + 2));
  bool ok = nz && in;
  if (!ok) tx_nomem(t);
  for (int k = 0; ok && k < e->n_out; k++) nz[k] = c->ct[k] != NULL;
  /* Which linear operands get a nonzero cotangent in some branch. */
  for (int b = 0; ok && b < nb; b++) {
    ok = transpose_jaxpr(s, t->a, br->u.items[b].u.jaxpr, c->lin + 1, nz, false, onz) != NULL;
    for (int i = 0; ok && i < nops; i++) u[i] = u[i] || (c->lin[i + 1] && onz[i]);
  }
  ft_pval nbr = ft_pv_tuple(t->a, nb);
  if (ok && nb && !nbr.u.items) ok = (tx_nomem(t), false);
  for (int b = 0; ok && b < nb; b++) {
    ft_jaxpr *tj = transpose_jaxpr(s, t->a, br->u.items[b].u.jaxpr, c->lin + 1, nz, true, NULL);
    if (!tj) { ok = false; break; }
    /* keep the outputs of operands some branch reaches */
    ft_var **o = ft_arena_alloc(t->a, sizeof(ft_var *) * (size_t)(tj->n_out + 1));
    if (!o) { ok = (tx_nomem(t), false); break; }
    int m = 0, q = 0;
    for (int i = 0; i < nops; i++) {
      if (!c->lin[i + 1]) continue;
      if (u[i]) o[m++] = tj->outvars[q];
      q++;
    }
    tj->outvars = o;
    tj->n_out = m;
    nbr.u.items[b] = ft_pv_jaxpr(tj);
  }
  if (ok) {
    int ni = 0, no = 0;
    in[ni++] = c->x[0];
    for (int i = 0; i < nops; i++)
      if (!c->lin[i + 1]) in[ni++] = c->x[i + 1];
    for (int k = 0; k < e->n_out; k++)
      if (c->ct[k]) in[ni++] = c->ct[k];
    for (int i = 0; i < nops; i++) no += u[i];
    ft_pval *ps = tx_params(t, FT_P_COND);
    ft_var **out = in + ni;
    if (ps) {
      pset(FT_P_COND, ps, "branches", nbr);
      if (tx_emitn(t, FT_P_COND, ps, ni, in, no, out)) {
        int m = 0;
        for (int i = 0; i < nops; i++)
          if (u[i]) c->ct_x[i + 1] = out[m++];
      }
    }
  }
  free(nz), free(in);
  return ok && !t->failed;
}

/* scan: consts split into non-linear (res) and linear (their cotangents are
 * carried and accumulated); carries are all transposed as linear; xs split into
 * non-linear (res) and linear (their cotangents are the new ys). The
 * transposed body runs in the other direction:
 *   [res consts, ct_lin_consts acc, ct_carry, res xs, ct_ys]
 *     -> [ct_lin_consts acc + body's, ct_carry in, ct_lin_xs]. */
static bool tr_scan(tr_state *s, tr_call *c) {
  tx *t = c->t;
  const ft_eqn *e = c->e;
  int ncon = (int)pget_int(FT_P_SCAN, c->params, "num_consts", 0);
  int ncar = (int)pget_int(FT_P_SCAN, c->params, "num_carry", 0);
  const ft_jaxpr *body = pget_jaxpr(FT_P_SCAN, e->params, "jaxpr");
  int n = e->n_in, nx = n - ncon - ncar, ny = e->n_out - ncar;
  /* Every carry is transposed as linear (JAX's _scan_transpose does the
   * same): a carry of the tangent scan whose initial value does not depend
   * on the linear inputs is a constant, typically the zeros the JVP
   * instantiated for an input that is not differentiated; the body is
   * linear in it all the same (if it is not, the body's transpose fails on
   * the non-linear equation), and its cotangent is dropped. */
  bool *lin = malloc((size_t)n + 1);
  if (!lin) return tx_nomem(t), false;
  memcpy(lin, c->lin, (size_t)n);
  for (int k = 0; k < ncar; k++) lin[ncon + k] = true;
  int nrc = 0, nlc = 0, nrx = 0, nlx = 0, nyc = 0;
  for (int i = 0; i < ncon; i++) lin[i] ? nlc++ : nrc++;
  for (int i = 0; i < nx; i++) lin[ncon + ncar + i] ? nlx++ : nrx++;
  for (int k = 0; k < ny; k++) nyc += c->ct[ncar + k] != NULL;
  /* The body as a linear function of [lin consts, carry, lin xs] with
   * non-linear [res consts, res xs]; transpose it into a sub-jaxpr. */
  bool *ctnz = calloc((size_t)body->n_out + 1, 1);
  ft_var **v = malloc(sizeof(ft_var *) * (size_t)(4 * (n + e->n_out) + 8));
  bool ok = ctnz && v;
  if (!ok) return tx_nomem(t), free(ctnz), free(v), free(lin), false;
  for (int k = 0; k < ncar; k++) ctnz[k] = true;
  for (int k = 0; k < ny; k++) ctnz[ncar + k] = c->ct[ncar + k] != NULL;
  ft_jaxpr *tb = transpose_jaxpr(s, t->a, body, lin, ctnz, true, NULL);
  /* tb: [res consts, res xs (as body inputs, in order), ct_carry, ct_ys nz]
   *   -> [ct lin consts, ct carry, ct lin xs] */
  ft_jaxpr *nbj = NULL;
  if (tb) {
    nbj = ft_jaxpr_new(t->a);
    tx bt;
    if (!nbj) ok = (tx_nomem(t), false);
    else {
      tx_init(&bt, t->ctx, nbj, "transpose");
      /* new invars: [res consts, acc (nlc), ct_carry (ncar), res xs, ct_ys (nyc)] */
      ft_var **ni = v, **no = v + n + e->n_out + 4;
      int m = 0;
      for (int i = 0; i < nrc; i++) ni[m++] = tb->invars[i];
      for (int i = 0; ok && i < ncon; i++)
        if (lin[i]) ok = (ni[m++] = ft_var_new(t->a, in_aval(c, i))) != NULL;
      for (int k = 0; k < ncar; k++) ni[m++] = tb->invars[nrc + nrx + k];
      for (int i = 0; i < nrx; i++) ni[m++] = tb->invars[nrc + i];
      for (int k = 0; k < nyc; k++) ni[m++] = tb->invars[nrc + nrx + ncar + k];
      for (int q = 0; q < tb->n_eqn; q++) tx_push_shared(&bt, &tb->eqns[q]);
      int o = 0;
      for (int i = 0; i < nlc; i++) no[o++] = tx_add_any(&bt, ni[nrc + i], tb->outvars[i]);
      for (int k = 0; k < ncar; k++) no[o++] = tb->outvars[nlc + k];
      for (int i = 0; i < nlx; i++) no[o++] = tb->outvars[nlc + ncar + i];
      ok = ok && !bt.failed && ft_jaxpr_set_vars(nbj, tb->n_const, tb->constvars, m, ni, o, no);
      nbj->const_data = tb->const_data;
    }
  } else {
    ok = false;
  }
  if (ok) {
    ft_var **in = v, **out = v + n + e->n_out + 4;
    int m = 0;
    for (int i = 0; i < ncon; i++)
      if (!lin[i]) in[m++] = c->x[i];
    for (int i = 0; i < ncon; i++)
      if (lin[i]) in[m++] = zeros_in(c, i);
    for (int k = 0; k < ncar; k++) in[m++] = c->ct[k] ? c->ct[k] : tx_zeros(t, &e->out[k]->aval);
    for (int i = 0; i < nx; i++)
      if (!lin[ncon + ncar + i]) in[m++] = c->x[ncon + ncar + i];
    for (int k = 0; k < ny; k++)
      if (c->ct[ncar + k]) in[m++] = c->ct[ncar + k];
    ft_pval *ps = tx_params(t, FT_P_SCAN);
    if (!ps) ok = false;
    else {
      memcpy(ps, c->params, sizeof(ft_pval) * (size_t)ft_prim_get(FT_P_SCAN)->n_params);
      pset(FT_P_SCAN, ps, "jaxpr", ft_pv_jaxpr(nbj));
      scan_set_counts(ps, nrc, nlc + ncar);
      pset(FT_P_SCAN, ps, "reverse", ft_pv_bool(!pget_bool(FT_P_SCAN, c->params, "reverse", false)));
      ok = tx_emitn(t, FT_P_SCAN, ps, m, in, nlc + ncar + nlx, out);
    }
    if (ok) {
      int q = 0;
      for (int i = 0; i < ncon; i++)
        if (lin[i]) c->ct_x[i] = out[q++];
      for (int k = 0; k < ncar; k++, q++)
        if (c->lin[ncon + k]) c->ct_x[ncon + k] = out[q];
      for (int i = 0; i < nx; i++)
        if (lin[ncon + ncar + i]) c->ct_x[ncon + ncar + i] = out[q++];
    }
  }
  free(ctnz), free(v), free(lin);
  return ok && !t->failed;
}

/* polynomial is linear in its coefficients (x is not): c_k's cotangent is
 * ct * x^k summed back to c_k's shape (JAX's _polynomial_transpose). */
static bool polynomial(tr_call *c) {
  tx *t = c->t;
  if (c->lin[0]) return not_linear(c, "x is linear (polynomial is linear only in its coefficients)");
  ft_var *xk = c->ct[0];
  for (int k = 1; k < c->e->n_in; k++) {
    if (c->lin[k]) c->ct_x[k] = tx_unbcast(t, xk, in_aval(c, k));
    if (k + 1 < c->e->n_in) xk = tx_mul(t, xk, tx_bcast_to(t, c->x[0], &xk->aval));
  }
  return !t->failed;
}

/* stack: each operand's cotangent is its slice of the output's (unstack). */
static bool stack(tr_call *c) {
  int n = c->e->n_in;
  ft_var *out[64];
  if (n > 64) return not_linear(c, "more than 64 operands");
  ft_pval *ps = tx_params(c->t, FT_P_UNSTACK);
  if (!ps) return false;
  pset(FT_P_UNSTACK, ps, "axis", *pget(FT_P_STACK, c->params, "axis"));
  if (!tx_emitn(c->t, FT_P_UNSTACK, ps, 1, c->ct, n, out)) return false;
  for (int i = 0; i < n; i++)
    if (c->lin[i]) c->ct_x[i] = out[i];
  return !c->t->failed;
}

/* unstack: the cotangents (zeros where none) stacked back (JAX's rule). */
static bool unstack(tr_call *c) {
  int n = c->e->n_out;
  ft_var *in[64];
  if (n > 64) return not_linear(c, "more than 64 outputs");
  if (n == 0) {
    c->ct_x[0] = zeros_in(c, 0);
    return !c->t->failed;
  }
  for (int k = 0; k < n; k++) in[k] = c->ct[k] ? c->ct[k] : tx_zeros(c->t, &c->e->out[k]->aval);
  ft_pval *ps = tx_params(c->t, FT_P_STACK);
  if (!ps) return false;
  pset(FT_P_STACK, ps, "axis", *pget(FT_P_UNSTACK, c->params, "axis"));
  c->ct_x[0] = tx_emit(c->t, FT_P_STACK, ps, n, in);
  return !c->t->failed;
}

/* tile: the copies summed, one axis at a time: (.., r*d, ..) reshaped to
 * (.., r, d, ..) and reduced over r (keeps the rank within rank + 1). */
static bool tile(tr_call *c) {
  tx *t = c->t;
  const ft_aval *xa = in_aval(c, 0);
  int64_t reps[FT_MAX_RANK];
  if (xa->rank >= FT_MAX_RANK) return not_linear(c, "an operand of the largest rank");
  if (pget_ints(FT_P_TILE, c->params, "reps", reps, FT_MAX_RANK) != xa->rank)
    return not_linear(c, "reps does not match the operand's rank");
  ft_var *g = c->ct[0];
  for (int d = 0; d < xa->rank; d++) {
    if (reps[d] == 1) continue;
    int64_t dims[FT_MAX_RANK];
    for (int i = 0, k = 0; i < g->aval.rank; i++) {
      if (i == d) dims[k++] = reps[d], dims[k++] = xa->dims[d];
      else dims[k++] = g->aval.dims[i];
    }
    int64_t ax = d;
    g = tx_reduce_sum(t, tx_reshape(t, g, g->aval.rank + 1, dims), 1, &ax);
    if (!g) return false;
  }
  c->ct_x[0] = g;
  return !t->failed;
}

/* Ldexp x n: linear in x; x's cotangent is Ldexp(ct, n) (JAX's transpose). */
static bool ldexp_tr(tr_call *c) {
  if (c->lin[1]) return not_linear(c, "the exponent is linear (only x is)");
  ft_var *in[2] = {c->ct[0], c->x[1]};
  c->ct_x[0] = tx_emit(c->t, FT_P_LDEXP, c->params, 2, in);
  return !c->t->failed;
}

/* optimization_barrier: a barrier over the nonzero cotangents (JAX). */
static bool opt_barrier(tr_call *c) {
  int n = c->e->n_out, m = 0;
  ft_var *in[64], *out[64];
  if (n > 64) return not_linear(c, "more than 64 operands");
  for (int k = 0; k < n; k++)
    if (c->ct[k] && c->lin[k]) in[m++] = c->ct[k];
  if (!m) return true;
  if (!tx_emitn(c->t, FT_P_OPTIMIZATION_BARRIER, NULL, m, in, m, out)) return false;
  for (int k = 0, q = 0; k < n; k++)
    if (c->ct[k] && c->lin[k]) c->ct_x[k] = out[q++];
  return !c->t->failed;
}

/* select_and_gather_add and select_and_scatter_add transpose to each other
 * (linear in their first operand; JAX's rules, which also require unit
 * dilations: a dilated gather has no scatter to transpose to). */
static bool select_and(tr_call *c) {
  tx *t = c->t;
  bool gather = c->e->prim == FT_P_SELECT_AND_GATHER_ADD;
  if (c->lin[1]) return not_linear(c, "the operand is linear (only the first operand is)");
  ft_prim to = gather ? FT_P_SELECT_AND_SCATTER_ADD : FT_P_SELECT_AND_GATHER_ADD;
  ft_pval *ps = tx_params(t, to);
  if (!ps) return false;
  int rank = in_aval(c, 1)->rank;
  int64_t ones[FT_MAX_RANK];
  for (int i = 0; i < rank; i++) ones[i] = 1;
  if (gather) {
    int64_t d[FT_MAX_RANK];
    for (int k = 0; k < 2; k++) {
      const char *nm = k ? "window_dilation" : "base_dilation";
      int n = pget_ints(FT_P_SELECT_AND_GATHER_ADD, c->params, nm, d, FT_MAX_RANK);
      for (int i = 0; i < n; i++)
        if (d[i] != 1) return not_linear(c, "with a base or window dilation other than 1 (JAX refuses it too)");
    }
  } else {
    pset(to, ps, "base_dilation", ft_pv_ints(t->a, rank, ones));
    pset(to, ps, "window_dilation", ft_pv_ints(t->a, rank, ones));
  }
  const char *keep[] = {"padding", "select_prim", "window_dimensions", "window_strides"};
  for (int k = 0; k < 4; k++) pset(to, ps, keep[k], *pget(c->e->prim, c->params, keep[k]));
  c->ct_x[0] = tx_emit(t, to, ps, 2, (ft_var *[]){c->ct[0], c->x[1]});
  return !t->failed;
}

bool transpose_rule(tr_state *s, tr_call *c) {
  const ft_eqn *e = c->e;
  switch (e->prim) {
  case FT_P_NEG: case FT_P_ADD: case FT_P_ADD_ANY: case FT_P_SUB: case FT_P_MUL: case FT_P_DIV:
  case FT_P_COPY: case FT_P_COPY_P: case FT_P_REDUCE_PRECISION: case FT_P_SHARDING_CONSTRAINT:
  case FT_P_LAYOUT_CONSTRAINT: case FT_P_RESHARD:
    return elementwise(c);
  case FT_P_POLYNOMIAL: return polynomial(c);
  case FT_P_STACK: return stack(c);
  case FT_P_UNSTACK: return unstack(c);
  case FT_P_TILE: return tile(c);
  case FT_P_LDEXP: return ldexp_tr(c);
  case FT_P_OPTIMIZATION_BARRIER: return opt_barrier(c);
  case FT_P_SELECT_AND_GATHER_ADD: case FT_P_SELECT_AND_SCATTER_ADD: return select_and(c);
  case FT_P_CONVERT_ELEMENT_TYPE:
    c->ct_x[0] = tx_convert(c->t, c->ct[0], in_aval(c, 0)->dtype);
    return !c->t->failed;
  case FT_P_REDUCE_SUM: return reduce_sum(c);
  case FT_P_BROADCAST_IN_DIM: return broadcast_in_dim(c);
  case FT_P_RESHAPE: return reshape(c);
  case FT_P_SQUEEZE: case FT_P_EXPAND_DIMS:
    c->ct_x[0] = tx_reshape(c->t, c->ct[0], in_aval(c, 0)->rank, in_aval(c, 0)->dims);
    return !c->t->failed;
  case FT_P_TRANSPOSE: return transpose_op(c);
  case FT_P_REV:
    c->ct_x[0] = tx_emit(c->t, FT_P_REV, c->params, 1, c->ct);
    return !c->t->failed;
  case FT_P_SLICE: return slice(c);
  case FT_P_PAD: return pad(c);
  case FT_P_CONCATENATE: return concatenate(c);
  case FT_P_SPLIT: return split(c);
  case FT_P_DYNAMIC_SLICE: return dynamic_slice(c);
  case FT_P_DYNAMIC_UPDATE_SLICE: return dynamic_update_slice(c);
  case FT_P_SELECT_N: return select_n(c);
  case FT_P_DOT_GENERAL: return dot_general(c);
  case FT_P_RAGGED_DOT_GENERAL: return ad_ragged_transpose(c); /* ad_ragged.c */
  case FT_P_CUMSUM: return cumsum(c);
  case FT_P_FFT: return fft(c);
  case FT_P_REAL: case FT_P_IMAG: case FT_P_CONJ: case FT_P_COMPLEX: return ad_complex_transpose(c);
  case FT_P_SORT: return sort(c);
  case FT_P_REDUCE_WINDOW_SUM: return tr_reduce_window_sum(c); /* ad_window.c */
  case FT_P_CONV_GENERAL_DILATED: return tr_conv(c);
  case FT_P_GATHER: case FT_P_SCATTER_ADD: case FT_P_SCATTER_MUL: case FT_P_SCATTER:
  case FT_P_SCATTER_SUB:
    return transpose_index(c);
  case FT_P_JIT: case FT_P_CUSTOM_JVP_CALL: case FT_P_CUSTOM_VJP_CALL: case FT_P_REMAT2: case FT_P_EVAL_JAXPR:
    return tr_call_rule(s, c);
  case FT_P_CUSTOM_LIN: return tr_custom_lin(s, c); /* custom.c: calls bwd */
  case FT_P_COND: return tr_cond(s, c);
  case FT_P_SCAN: return tr_scan(s, c);
  case FT_P_SHARD_MAP: return tr_shard_map(s, c); /* ad_spmd.c */
  case FT_P_PSUM: case FT_P_PSUM_INVARIANT: case FT_P_PVARY: case FT_P_ALL_GATHER: case FT_P_REDUCE_SCATTER:
  case FT_P_ALL_TO_ALL: case FT_P_PPERMUTE:
    return tr_collective(c);
  case FT_P_TRIANGULAR_SOLVE: case FT_P_TRIDIAGONAL_SOLVE: case FT_P_CUSTOM_LINEAR_SOLVE:
    return tr_linalg(c); /* ad_linalg.c */
  default: {
    const char *why = ft_transpose_rule_status(e->prim);
    tx_fail(c->t, FT_ERR_UNSUPPORTED, "transpose of %s: %s", ft_prim_get(e->prim)->name,
            why ? why : TR_NOT_LINEAR);
    return false;
  }
  }
}
