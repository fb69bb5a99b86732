/* src/trace/linalg.c: the linear-algebra tracing API (frankentrace.h,
 * "linear algebra"): the primitives cholesky, triangular_solve and lu, and
 * jnp.linalg's cholesky, solve, inv, det and slogdet built from them as
 * jax.numpy builds them on CPU (docs/linalg.md). */
#include <math.h>
#include <string.h>

#include "trace/trace.h"

static ft_tracer *root_of(const char *what, int n, ft_val *const *v) {
  return ft__root_of(NULL, what, n, v);
}

/* Checks x is [..., m, n] (square when sq) of a float (or complex) dtype. */
static bool check_mat(ft_tracer *root, const char *what, ft_val *x, bool sq, bool cpx) {
  const ft_aval *a = &x->v->aval;
  char s[128];
  if (a->rank < 2 || (sq && a->dims[a->rank - 1] != a->dims[a->rank - 2]) ||
      !(ft_dtype_is_float(a->dtype) || (cpx && ft_dtype_is_complex(a->dtype)))) {
    ft__fail(root, FT_ERR_SHAPE, "%s: expects a %smatrix [..., %s] of a floating%s dtype, got %s", what,
             sq ? "square " : "", sq ? "n, n" : "m, n", cpx ? " or complex" : "",
             ft_aval_str(a, s, sizeof s));
    return false;
  }
  return true;
}

static ft_val *mT(ft_val *x) {
  if (!x) return NULL;
  int r = x->v->aval.rank, perm[FT_MAX_RANK];
  for (int i = 0; i < r; i++) perm[i] = i;
  perm[r - 2] = r - 1, perm[r - 1] = r - 2;
  return ft_transpose(x, r, perm);
}

/* The mask col - row <= 0 (lower) over x's shape, from int32 iotas. */
static ft_val *lower_mask(ft_val *x) {
  if (!x) return NULL;
  const ft_aval *a = &x->v->aval;
  ft_val *row = ft_iota(x->t, FT_I32, a->rank, a->dims, a->rank - 2);
  ft_val *col = ft_iota(x->t, FT_I32, a->rank, a->dims, a->rank - 1);
  return row && col ? ft_ge(row, col) : NULL;
}

static ft_val *zeros_like(ft_val *x) {
  const ft_aval *a = &x->v->aval;
  return ft_full(x->t, a->dtype, a->rank, a->dims, 0.0);
}

ft_val *ft_cholesky(ft_val *a) {
  ft_tracer *root = root_of("cholesky", 1, &a);
  if (!root || !check_mat(root, "cholesky", a, true, true)) return NULL;
  /* symmetrize (a + a^H) / 2, factor, keep the lower triangle */
  ft_val *ah = mT(a);
  if (ah && ft_dtype_is_complex(a->v->aval.dtype)) ah = ft_conj(ah);
  ft_val *s = ah ? ft_add(a, ah) : NULL;
  s = s ? ft_div(s, ft_scalar(a->t, a->v->aval.dtype, 2.0)) : NULL;
  if (!s) return NULL;
  ft_pval *ps = ft__params(root, FT_P_CHOLESKY);
  if (!ps) return NULL;
  ft_val *l = ft__emit1(root, FT_P_CHOLESKY, 1, &s, ps);
  ft_val *m = lower_mask(l);
  return m ? ft_select_n(m, 2, (ft_val *[]){zeros_like(l), l}) : NULL;
}

ft_val *ft_triangular_solve(ft_val *a, ft_val *b, const ft_triangular_opts *opts) {
  ft_val *ops[2] = {a, b};
  ft_tracer *root = root_of("triangular_solve", 2, ops);
  if (!root) return NULL;
  ft_triangular_opts o;
  if (!ft__opts(root, "ft_triangular_opts", opts, sizeof o, &o)) return NULL;
  ft_prim p = FT_P_TRIANGULAR_SOLVE;
  ft_pval *ps = ft__params(root, p);
  if (!ps) return NULL;
  ft__set(ps, p, "left_side", ft_pv_bool(o.left_side));
  ft__set(ps, p, "lower", ft_pv_bool(o.lower));
  ft__set(ps, p, "transpose_a", ft_pv_bool(o.transpose_a));
  ft__set(ps, p, "conjugate_a", ft_pv_bool(o.conjugate_a));
  ft__set(ps, p, "unit_diagonal", ft_pv_bool(o.unit_diagonal));
  return ft__emit1(root, p, 2, ops, ps);
}

int ft_lu(ft_val *a, ft_val **lu, ft_val **pivots, ft_val **permutation) {
  ft_tracer *root = root_of("lu", 1, &a);
  if (!root) return -1;
  ft_pval *ps = ft__params(root, FT_P_LU);
  ft_val *out[3];
  if (!ps || ft__emit(root, FT_P_LU, 1, &a, ps, out, 3) != 3) return -1;
  if (lu) *lu = out[0];
  if (pivots) *pivots = out[1];
  if (permutation) *permutation = out[2];
  return 3;
}

/* x[..., perm[...], :]: rows of x taken by the int32 permutation perm
 * [..., m] (a gather with the batch dims as batching dims). */
static ft_val *take_rows(ft_val *x, ft_val *perm) {
  int r = x->v->aval.rank;
  int64_t idims[FT_MAX_RANK], ss[FT_MAX_RANK];
  for (int i = 0; i < r - 1; i++) idims[i] = perm->v->aval.dims[i];
  idims[r - 1] = 1;
  ft_val *idx = ft_reshape(perm, r, idims);
  ft_gather_dims d = {0};
  d.n_offset = 1, d.offset_dims[0] = r - 1;
  d.n_collapsed = 1, d.collapsed_slice_dims[0] = r - 2;
  d.n_start = 1, d.start_index_map[0] = r - 2;
  d.n_batching = r - 2;
  for (int i = 0; i < r - 2; i++) d.operand_batching_dims[i] = d.start_indices_batching_dims[i] = i;
  for (int i = 0; i < r; i++) ss[i] = 1;
  ss[r - 1] = x->v->aval.dims[r - 1];
  return idx ? ft_gather(x, idx, &d, ss, FT_GATHER_PROMISE_IN_BOUNDS, NULL) : NULL;
}

/* x with a x = b from the LU factors (JAX's _lu_solve: permute b's rows,
 * solve with unit-lower L, then with U). b: [..., n, k]. */
static ft_val *lu_solve(ft_val *lu, ft_val *perm, ft_val *b) {
  ft_val *pb = take_rows(b, perm);
  ft_val *y = pb ? ft_triangular_solve(lu, pb, &(ft_triangular_opts){.size = sizeof(ft_triangular_opts), .left_side = true, .lower = true,
                                                                     .unit_diagonal = true})
                 : NULL;
  return y ? ft_triangular_solve(lu, y, &(ft_triangular_opts){.size = sizeof(ft_triangular_opts), .left_side = true}) : NULL;
}

ft_val *ft_linalg_solve(ft_val *a, ft_val *b) {
  ft_val *ops[2] = {a, b};
  ft_tracer *root = root_of("solve", 2, ops);
  if (!root || !check_mat(root, "solve", a, true, false)) return NULL;
  const ft_aval *aa = &a->v->aval, *ba = &b->v->aval;
  char s0[128], s1[128];
  /* JAX >= 0.5: b is one vector [n] (for an unbatched a) or [..., n, k] */
  bool vec = ba->rank == 1 && aa->rank == 2;
  bool ok = (vec || ba->rank == aa->rank) && ba->dtype == aa->dtype;
  for (int i = 0; ok && i < aa->rank - 1; i++) ok = ba->dims[i] == aa->dims[i];
  if (!ok) {
    ft__fail(root, FT_ERR_SHAPE, "solve: Invalid shapes for solve: %s, %s (b must be [n] for a [n, n], "
             "or [..., n, k] of a's dtype and batch dims; for a batch of vectors use b[..., None])",
             ft_aval_str(aa, s0, sizeof s0), ft_aval_str(ba, s1, sizeof s1));
    return NULL;
  }
  ft_val *lu, *perm;
  if (ft_lu(a, &lu, NULL, &perm) < 0) return NULL;
  if (!vec) return lu_solve(lu, perm, b);
  int r = ba->rank;
  ft_val *bm = ft_expand_dims(b, 1, &r);
  ft_val *x = bm ? lu_solve(lu, perm, bm) : NULL;
  return x ? ft_squeeze(x, 1, &r) : NULL;
}

ft_val *ft_inv(ft_val *a) {
  ft_tracer *root = root_of("inv", 1, &a);
  if (!root || !check_mat(root, "inv", a, true, false)) return NULL;
  const ft_aval *aa = &a->v->aval;
  ft_val *row = ft_iota(a->t, FT_I32, aa->rank, aa->dims, aa->rank - 2);
  ft_val *col = ft_iota(a->t, FT_I32, aa->rank, aa->dims, aa->rank - 1);
  ft_val *eye = row && col ? ft_convert(ft_eq(row, col), aa->dtype) : NULL;
  return eye ? ft_linalg_solve(a, eye) : NULL;
}

/* The diagonal [..., n] of x [..., n, n]: sum over rows of x masked to it. */
static ft_val *diagonal(ft_val *x) {
  const ft_aval *a = &x->v->aval;
  ft_val *row = ft_iota(x->t, FT_I32, a->rank, a->dims, a->rank - 2);
  ft_val *col = ft_iota(x->t, FT_I32, a->rank, a->dims, a->rank - 1);
  ft_val *on = row && col ? ft_eq(row, col) : NULL;
  ft_val *m = on ? ft_select_n(on, 2, (ft_val *[]){zeros_like(x), x}) : NULL;
  int ax = a->rank - 2;
  return m ? ft_reduce_sum(m, 1, &ax) : NULL;
}

int ft_slogdet(ft_val *a, ft_val **sign, ft_val **logabsdet) {
  ft_tracer *root = root_of("slogdet", 1, &a);
  if (!root || !check_mat(root, "slogdet", a, true, false)) return -1;
  ft_val *lu, *piv;
  if (ft_lu(a, &lu, &piv, NULL) < 0) return -1;
  ft_dtype dt = a->v->aval.dtype;
  const ft_aval *pa = &piv->v->aval;
  ft_val *d = diagonal(lu);
  if (!d) return -1;
  int last = d->v->aval.rank - 1;
  /* parity of the row swaps: how many pivots differ from their index */
  ft_val *idx = ft_iota(a->t, FT_I32, pa->rank, pa->dims, pa->rank - 1);
  ft_val *swaps = idx ? ft_reduce_sum(ft_convert(ft_ne(piv, idx), FT_I32), 1, &last) : NULL;
  ft_val *odd = swaps ? ft_rem(swaps, ft_scalar(a->t, FT_I32, 2)) : NULL;
  ft_val *psign = odd ? ft_sub(ft_scalar(a->t, dt, 1.0), ft_mul(ft_convert(odd, dt), ft_scalar(a->t, dt, 2.0)))
                      : NULL;
  ft_val *dsign = ft_reduce_prod(ft_sign(d), 1, &last);
  ft_val *s = psign && dsign ? ft_mul(psign, dsign) : NULL;
  ft_val *l = ft_reduce_sum(ft_log(ft_abs(d)), 1, &last);
  /* a zero on the diagonal: sign 0, logabsdet -inf (JAX's is_zero) */
  ft_val *zero = ft_reduce_max(ft_convert(ft_eq(d, ft_scalar(a->t, dt, 0.0)), FT_I32), 1, &last);
  ft_val *isz = zero ? ft_ne(zero, ft_scalar(a->t, FT_I32, 0)) : NULL;
  if (!s || !l || !isz) return -1;
  const ft_aval *sa = &s->v->aval;
  ft_val *z0 = ft_full(a->t, dt, sa->rank, sa->dims, 0.0), *ninf = ft_full(a->t, dt, sa->rank, sa->dims, -INFINITY);
  s = ft_select_n(isz, 2, (ft_val *[]){s, z0});
  l = ft_select_n(isz, 2, (ft_val *[]){l, ninf});
  if (!s || !l) return -1;
  if (sign) *sign = s;
  if (logabsdet) *logabsdet = l;
  return 2;
}

ft_val *ft_det(ft_val *a) {
  ft_val *s, *l;
  if (ft_slogdet(a, &s, &l) < 0) return NULL;
  return ft_mul(s, ft_exp(l));
}
