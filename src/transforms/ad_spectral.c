/* src/transforms/ad_spectral.c: JVP and batching rules of eigh, svd and
 * qr (docs/linalg-spectral.md), written after JAX 0.12's _eigh_jvp_rule,
 * _svd_jvp_rule and qr_jvp_rule with the same operations in the same
 * order, so the tangent programs are JAX's (transposition then gives its
 * reverse mode). Matrices are the last two axes; leading axes are a batch
 * (dot_general batch dimensions). The rules read the primal results of the
 * equation itself; where JAX's rule binds a second decomposition (svd with
 * compute_uv=False needs u and vt) a thin svd is emitted, as JAX's is. */
#include <string.h>

#include "transforms.h"
#include "vmap.h"

/* ------------------------------------------------------------- helpers */

/* x @ y over the last two axes (leading axes batch), x or y transposed
 * when tx_ / ty_ (JAX's _H on real matrices). */
static ft_var *mm(tx *t, ft_var *x, bool tx_, ft_var *y, bool ty_) {
  if (!x || !y) return NULL;
  int r = x->aval.rank;
  if (y->aval.rank != r) return tx_fail(t, FT_ERR_SHAPE, "%s: matmul of different ranks", t->what);
  int64_t b[FT_MAX_RANK], xc = tx_ ? r - 2 : r - 1, yc = ty_ ? r - 1 : r - 2;
  for (int i = 0; i < r - 2; i++) b[i] = i;
  ft_pval dims = ft_pv_tuple(t->a, 2), p0 = ft_pv_tuple(t->a, 2), p1 = ft_pv_tuple(t->a, 2);
  if (!dims.u.items || !p0.u.items || !p1.u.items) return tx_nomem(t);
  p0.u.items[0] = ft_pv_ints(t->a, 1, &xc);
  p0.u.items[1] = ft_pv_ints(t->a, 1, &yc);
  p1.u.items[0] = ft_pv_ints(t->a, r - 2, b);
  p1.u.items[1] = ft_pv_ints(t->a, r - 2, b);
  dims.u.items[0] = p0;
  dims.u.items[1] = p1;
  ft_pval *ps = tx_params(t, FT_P_DOT_GENERAL);
  if (!ps) return NULL;
  pset(FT_P_DOT_GENERAL, ps, "dimension_numbers", dims);
  ft_var *d = tx_emit(t, FT_P_DOT_GENERAL, ps, 2, (ft_var *[]){x, y});
  /* dot_general puts x's free axis before y's: with x transposed its free
   * axis is x's last, already first among the free ones */
  return d;
}

/* Swaps the last two axes (JAX's _T). */
static ft_var *mT(tx *t, ft_var *x) {
  if (!x) return NULL;
  int r = x->aval.rank;
  int64_t p[FT_MAX_RANK];
  for (int i = 0; i < r; i++) p[i] = i;
  p[r - 1] = r - 2, p[r - 2] = r - 1;
  return tx_transpose(t, x, r, p);
}

static ft_var *conj_c(tx *t, ft_var *x);

/* JAX's x.conj() on a matrix: conj for complex x, x itself for real x
 * (jnp.conjugate of a real array emits nothing). */
static ft_var *cj(tx *t, ft_var *x) {
  if (!x || !ft_dtype_is_complex(x->aval.dtype)) return x;
  return conj_c(t, x);
}

/* JAX's _H(x) = _T(x).conj(): the conjugate transpose (the transpose for
 * real x). Where _H(x) is a matmul's operand, mm(cj(x), true, ...) folds
 * the transpose into the dot_general; conj commutes with the transpose
 * elementwise, so the values are the same. */
static ft_var *mH(tx *t, ft_var *x) { return cj(t, mT(t, x)); }

/* The identity mask (bool) of shape like's shape, over its last two axes:
 * iota(r-2) == iota(r-1), as lax._eye builds it. */
static ft_var *eye_mask(tx *t, const ft_aval *like) {
  ft_var *io[2];
  for (int k = 0; k < 2; k++) {
    ft_pval *ip = tx_params(t, FT_P_IOTA);
    if (!ip) return NULL;
    pset(FT_P_IOTA, ip, "dimension", ft_pv_int(like->rank - 2 + k));
    pset(FT_P_IOTA, ip, "dtype", ft_pv_dtype(FT_I32));
    pset(FT_P_IOTA, ip, "shape", ft_pv_ints(t->a, like->rank, like->dims));
    io[k] = tx_emit(t, FT_P_IOTA, ip, 0, NULL);
  }
  return tx_binop(t, FT_P_EQ, io[0], io[1]);
}

/* The identity of like's aval (dtype too). */
static ft_var *eye_of(tx *t, const ft_aval *like) {
  return tx_convert(t, eye_mask(t, like), like->dtype);
}

/* The diagonal of x [..., n, n] -> [..., n]: a strided slice of the
 * flattened matrix (the diagonal's elements exactly). */
static ft_var *diag_of(tx *t, ft_var *x) {
  if (!x) return NULL;
  int r = x->aval.rank;
  int64_t n = x->aval.dims[r - 1], dims[FT_MAX_RANK], s[FT_MAX_RANK], l[FT_MAX_RANK],
          st[FT_MAX_RANK];
  for (int i = 0; i < r - 2; i++) dims[i] = x->aval.dims[i], s[i] = 0, l[i] = dims[i], st[i] = 1;
  dims[r - 2] = n * n;
  ft_var *flat = tx_reshape(t, x, r - 1, dims);
  s[r - 2] = 0, l[r - 2] = n * n, st[r - 2] = n + 1;
  ft_var *d = tx_slice(t, flat, s, l, st);
  return d;
}

/* v [..., k] broadcast to [..., rows, k] (row_axis: v[..., None, :]) or
 * [..., k, cols] (v[..., :, None]). */
static ft_var *bc_vec(tx *t, ft_var *v, bool as_row, int64_t other) {
  if (!v) return NULL;
  int r = v->aval.rank;
  int64_t dims[FT_MAX_RANK], bd[FT_MAX_RANK];
  for (int i = 0; i < r - 1; i++) dims[i] = v->aval.dims[i], bd[i] = i;
  int64_t k = v->aval.dims[r - 1];
  if (as_row) dims[r - 1] = other, dims[r] = k, bd[r - 1] = r;
  else dims[r - 1] = k, dims[r] = other, bd[r - 1] = r - 1;
  return tx_bcast(t, v, r + 1, dims, bd);
}

/* ---------------------------------------------------------------- jvp */

/* JAX's _eigh_jvp_rule: with F[i,j] = 1/(w_j - w_i) off the diagonal and
 * 0 on it, and S = v^T da v, dv = v (F * S) and dw = diag(S). */
static bool jvp_eigh(jvp_call *c) {
  tx *t = c->t;
  ft_var *v = c->y[0], *w = c->y[1], *da = c->dx[0];
  if (!da) return true;
  bool cpx = ft_dtype_is_complex(v->aval.dtype);
  int64_t n = v->aval.dims[v->aval.rank - 1];
  w = tx_convert(t, w, v->aval.dtype); /* w_real.astype(a.dtype) (complex: to c64/c128) */
  ft_var *eye = eye_of(t, &v->aval);
  ft_var *dw = tx_sub(t, bc_vec(t, w, true, n), bc_vec(t, w, false, n));
  ft_var *F = tx_sub(t, tx_integer_pow(t, tx_add(t, dw, eye), -1), eye);
  ft_var *S = mm(t, mm(t, cj(t, v), true, da, false), false, v, false); /* _H(v) a_dot v */
  c->dy[0] = mm(t, v, false, tx_mul(t, F, S), false);
  c->dy[1] = diag_of(t, cpx ? tx_unop(t, FT_P_REAL, S) : S); /* diag(vdag_adot_v.real) */
  return !t->failed;
}

/* JAX's _svd_jvp_rule, real and complex (_H the conjugate transpose, s cast
 * to the operand's dtype where JAX casts it). */
static bool jvp_svd(jvp_call *c) {
  tx *t = c->t;
  const ft_eqn *e = c->e;
  ft_var *A = c->x[0], *dA = c->dx[0];
  if (!dA) return true;
  bool cpx = ft_dtype_is_complex(A->aval.dtype);
  ft_dtype cd = A->aval.dtype;
  int r = A->aval.rank;
  int64_t m = A->aval.dims[r - 2], n = A->aval.dims[r - 1];
  bool uv = pget_bool(FT_P_SVD, c->params, "compute_uv", true);
  bool full = pget_bool(FT_P_SVD, c->params, "full_matrices", true);
  if (uv && full && m != n)
    return tx_fail(t, FT_ERR_UNSUPPORTED,
                   "jvp of svd: Singular value decomposition JVP not implemented for full "
                   "matrices (JAX's message; full_matrices=True with a %lld x %lld operand)",
                   (long long)m, (long long)n), false;
  ft_var *s = c->y[0], *U, *Vt;
  if (uv) {
    U = c->y[1], Vt = c->y[2];
  } else { /* JAX binds a thin svd with compute_uv=True for u and vt */
    ft_pval *ps = params_clone(t->a, FT_P_SVD, c->params);
    if (!ps) return tx_nomem(t), false;
    pset(FT_P_SVD, ps, "compute_uv", ft_pv_bool(true));
    pset(FT_P_SVD, ps, "full_matrices", ft_pv_bool(false));
    ft_var *o[3];
    if (!tx_emitn(t, FT_P_SVD, ps, 1, &A, 3, o)) return false;
    U = o[1], Vt = o[2];
  }
  (void)e;
  int64_t k = s->aval.dims[s->aval.rank - 1];
  ft_var *V = mH(t, Vt);                                             /* V = _H(Vt) */
  ft_var *dS = mm(t, mm(t, cj(t, U), true, dA, false), false, V, false); /* Ut @ dA @ V */
  c->dy[0] = diag_of(t, cpx ? tx_unop(t, FT_P_REAL, dS) : dS);       /* diag(dS.real) */
  if (!uv) return !t->failed;
  ft_var *s_row = bc_vec(t, s, true, k), *s_col = bc_vec(t, s, false, k); /* s[j], s[i] */
  ft_var *s_diffs = tx_mul(t, tx_add(t, s_row, s_col), tx_sub(t, s_row, s_col));
  if (!s_diffs) return false;
  ft_var *eye = eye_of(t, &s_diffs->aval); /* s.dtype: real */
  ft_var *F = tx_sub(t, tx_div(t, tx_lit(t, s->aval.dtype, 1.0), tx_add(t, s_diffs, eye)), eye);
  ft_var *dSS = tx_mul(t, tx_convert(t, s_row, cd), dS), *SdS = tx_mul(t, tx_convert(t, s_col, cd), dS);
  ft_var *s_zeros = tx_convert(t, tx_binop(t, FT_P_EQ, s, tx_lit(t, s->aval.dtype, 0.0)),
                               s->aval.dtype);
  ft_var *s_inv = tx_sub(t, tx_div(t, tx_lit(t, s->aval.dtype, 1.0), tx_add(t, s, s_zeros)),
                         s_zeros);
  ft_var *s_inv_mat = tx_select(t, eye_mask(t, &s_diffs->aval), tx_zeros(t, &s_diffs->aval),
                                bc_vec(t, s_inv, true, k));
  ft_var *dUdV_diag = tx_mul(t, tx_mul(t, tx_lit(t, cd, 0.5), tx_sub(t, dS, mH(t, dS))),
                             tx_convert(t, s_inv_mat, cd));
  ft_var *Fc = tx_convert(t, F, cd);
  ft_var *dU = mm(t, U, false, tx_add(t, tx_mul(t, Fc, tx_add(t, dSS, mH(t, dSS))), dUdV_diag),
                  false);
  ft_var *dV = mm(t, V, false, tx_mul(t, Fc, tx_add(t, SdS, mH(t, SdS))), false);
  if (m > n) {
    ft_var *dAV = mm(t, dA, false, V, false);
    ft_var *sm = tx_convert(t, bc_vec(t, s, true, m), cd);
    dU = tx_add(t, dU, tx_div(t, tx_sub(t, dAV, mm(t, U, false, mm(t, cj(t, U), true, dAV, false), false)),
                              sm));
  }
  if (n > m) {
    ft_var *dAHU = mm(t, cj(t, dA), true, U, false); /* _H(dA) @ U */
    ft_var *sn = tx_convert(t, bc_vec(t, s, true, n), cd);
    dV = tx_add(t, dV, tx_div(t, tx_sub(t, dAHU, mm(t, V, false, mm(t, Vt, false, dAHU, false), false)),
                              sn));
  }
  c->dy[1] = dU;
  c->dy[2] = mH(t, dV);
  return !t->failed;
}

/* x[..., r0:r1, c0:c1] over the last two axes. */
static ft_var *sub_mat(tx *t, ft_var *x, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  if (!x || t->failed) return NULL;
  int r = x->aval.rank;
  int64_t s[FT_MAX_RANK] = {0}, l[FT_MAX_RANK];
  for (int i = 0; i < r; i++) l[i] = x->aval.dims[i];
  s[r - 2] = r0, l[r - 2] = r1, s[r - 1] = c0, l[r - 1] = c1;
  return tx_slice(t, x, s, l, NULL);
}

/* JAX's _tril(x, -1): x where col < row, else 0. */
static ft_var *strict_lower(tx *t, ft_var *x) {
  if (!x || t->failed) return NULL;
  int r = x->aval.rank;
  ft_var *io[2];
  for (int k = 0; k < 2; k++) {
    ft_pval *ip = tx_params(t, FT_P_IOTA);
    if (!ip) return NULL;
    pset(FT_P_IOTA, ip, "dimension", ft_pv_int(r - 2 + k));
    pset(FT_P_IOTA, ip, "dtype", ft_pv_dtype(FT_I32));
    pset(FT_P_IOTA, ip, "shape", ft_pv_ints(t->a, r, x->aval.dims));
    io[k] = tx_emit(t, FT_P_IOTA, ip, 0, NULL);
  }
  ft_var *mask = tx_binop(t, FT_P_GE, tx_add(t, io[0], tx_lit(t, FT_I32, -1)), io[1]);
  return tx_select(t, mask, tx_zeros(t, &x->aval), x);
}

/* JAX's _thin_qr_jvp (m >= n, q [..., m, n], r [..., n, n]):
 * dx_rinv = dx r^-1 (triangular_solve, right side, upper),
 * qt = q^H dx_rinv, do = tril(qt, -1) - tril(qt, -1)^H + I * (qt -
 * re(qt)) (JAX's complex correction; for real operands re(qt) is qt and
 * the term, zero, is kept so the tangent program is JAX's), dq = q (do - qt) + dx_rinv, dr = (qt - do) r. */
static bool thin_qr_jvp(tx *t, ft_var *q, ft_var *r, ft_var *dx, ft_var **dq, ft_var **dr) {
  ft_pval *ps = tx_params(t, FT_P_TRIANGULAR_SOLVE);
  if (!ps) return false;
  pset(FT_P_TRIANGULAR_SOLVE, ps, "left_side", ft_pv_bool(false));
  pset(FT_P_TRIANGULAR_SOLVE, ps, "lower", ft_pv_bool(false));
  pset(FT_P_TRIANGULAR_SOLVE, ps, "transpose_a", ft_pv_bool(false));
  pset(FT_P_TRIANGULAR_SOLVE, ps, "conjugate_a", ft_pv_bool(false));
  pset(FT_P_TRIANGULAR_SOLVE, ps, "unit_diagonal", ft_pv_bool(false));
  ft_var *dx_rinv = tx_emit(t, FT_P_TRIANGULAR_SOLVE, ps, 2, (ft_var *[]){r, dx});
  ft_var *qt = mm(t, cj(t, q), true, dx_rinv, false); /* _H(q) @ dx_rinv */
  ft_var *low = strict_lower(t, qt);
  ft_var *d_o = tx_sub(t, low, mH(t, low));
  if (!qt) return false;
  /* qt - qt.real.astype(qt.dtype): .real and astype emit nothing for real qt */
  ft_var *re = ft_dtype_is_complex(qt->aval.dtype)
                   ? tx_convert(t, tx_unop(t, FT_P_REAL, qt), qt->aval.dtype)
                   : qt;
  d_o = tx_add(t, d_o, tx_mul(t, eye_of(t, &qt->aval), tx_sub(t, qt, re)));
  *dq = tx_add(t, mm(t, q, false, tx_sub(t, d_o, qt), false), dx_rinv);
  *dr = mm(t, tx_sub(t, qt, d_o), false, r, false);
  return !t->failed;
}

static ft_var *tsolve_lu(tx *t, ft_var *lu, ft_var *b, bool lower, bool unit) {
  ft_pval *ps = tx_params(t, FT_P_TRIANGULAR_SOLVE);
  if (!ps) return NULL;
  pset(FT_P_TRIANGULAR_SOLVE, ps, "left_side", ft_pv_bool(true));
  pset(FT_P_TRIANGULAR_SOLVE, ps, "lower", ft_pv_bool(lower));
  pset(FT_P_TRIANGULAR_SOLVE, ps, "transpose_a", ft_pv_bool(true));
  pset(FT_P_TRIANGULAR_SOLVE, ps, "conjugate_a", ft_pv_bool(true));
  pset(FT_P_TRIANGULAR_SOLVE, ps, "unit_diagonal", ft_pv_bool(unit));
  return tx_emit(t, FT_P_TRIANGULAR_SOLVE, ps, 2, (ft_var *[]){lu, b});
}

static ft_var *concat2(tx *t, ft_var *a, ft_var *b, int dim) {
  if (!a || !b || t->failed) return NULL;
  ft_pval *ps = tx_params(t, FT_P_CONCATENATE);
  if (!ps) return NULL;
  pset(FT_P_CONCATENATE, ps, "dimension", ft_pv_int(dim));
  return tx_emit(t, FT_P_CONCATENATE, ps, 2, (ft_var *[]){a, b});
}

/* JAX's full_matrices=True, m > n completion (arXiv 2409.13374 eqs. 32,
 * 33): z_pn^T = lu_solve(lu(q_nn - I), q_pn^T, trans=2) — two transposed
 * triangular solves, then rows by the inverse permutation (JAX's
 * sort_key_val(perm, iota)) — and
 * dq_mp = dq_mn z_pn^T - (q_mn + q_mp z_pn) (dq_pn - z_pn dq_nn)^T. */
static ft_var *qr_complete_dq(tx *t, ft_var *q, ft_var *q_mn, ft_var *dq_mn, int64_t m, int64_t n) {
  ft_var *q_nn = sub_mat(t, q_mn, 0, n, 0, n), *q_pn = sub_mat(t, q_mn, n, m, 0, n);
  ft_var *q_mp = sub_mat(t, q, 0, m, n, m);
  ft_var *dq_nn = sub_mat(t, dq_mn, 0, n, 0, n), *dq_pn = sub_mat(t, dq_mn, n, m, 0, n);
  if (!q_nn) return NULL;
  ft_var *lu[3];
  if (!tx_emitn(t, FT_P_LU, tx_params(t, FT_P_LU), 1,
                (ft_var *[]){tx_sub(t, q_nn, eye_of(t, &q_nn->aval))}, 3, lu))
    return NULL;
  ft_var *x = tsolve_lu(t, lu[0], mH(t, q_pn), false, false);
  x = tsolve_lu(t, lu[0], x, true, true);
  ft_var *perm = lu[2];
  ft_pval *ip = tx_params(t, FT_P_IOTA);
  if (!ip) return NULL;
  pset(FT_P_IOTA, ip, "dimension", ft_pv_int(perm->aval.rank - 1));
  pset(FT_P_IOTA, ip, "dtype", ft_pv_dtype(perm->aval.dtype));
  pset(FT_P_IOTA, ip, "shape", ft_pv_ints(t->a, perm->aval.rank, perm->aval.dims));
  ft_var *io = tx_emit(t, FT_P_IOTA, ip, 0, NULL);
  ft_pval *sp = tx_params(t, FT_P_SORT);
  if (!sp || !io) return NULL;
  pset(FT_P_SORT, sp, "dimension", ft_pv_int(perm->aval.rank - 1));
  pset(FT_P_SORT, sp, "is_stable", ft_pv_bool(false));
  pset(FT_P_SORT, sp, "num_keys", ft_pv_int(1));
  ft_var *so[2];
  if (!tx_emitn(t, FT_P_SORT, sp, 2, (ft_var *[]){perm, io}, 2, so)) return NULL;
  ft_var *z_pn_H = rows_permuted(t, x, so[1]);
  ft_var *z_pn = mH(t, z_pn_H);
  ft_var *lhs = tx_add(t, q_mn, mm(t, q_mp, false, z_pn, false));
  ft_var *rhs = tx_sub(t, dq_pn, mm(t, z_pn, false, dq_nn, false));
  ft_var *dq_mp = tx_sub(t, mm(t, dq_mn, false, z_pn_H, false), mm(t, lhs, false, cj(t, rhs), true));
  return concat2(t, dq_mn, dq_mp, q->aval.rank - 1);
}

/* JAX's qr_jvp_rule (real and complex operands): the thin rule for m >= n (reduced,
 * square, and the m x n block of complete mode, completed as above), and
 * for wide m < n the square block x1 = q r1 with dr2 = dq^H x2 + q^H dx2. */
static bool jvp_qr(jvp_call *c) {
  tx *t = c->t;
  ft_var *x = c->x[0], *dx = c->dx[0], *q = c->y[0], *r = c->y[1];
  if (!dx) return true;
  int rk = x->aval.rank;
  int64_t m = x->aval.dims[rk - 2], n = x->aval.dims[rk - 1];
  bool full = pget_bool(FT_P_QR, c->params, "full_matrices", true);
  if (pget_bool(FT_P_QR, c->params, "pivoting", false)) { /* JAX: dx = dx[..., p] */
    if (rk != 2)
      return tx_fail(t, FT_ERR_UNSUPPORTED,
                     "jvp of qr: pivoting=True with batch dimensions (JAX's rule indexes dx[..., p] "
                     "with the batched permutation, an outer index; vmap the unbatched qr instead)"),
             false;
    dx = mT(t, rows_permuted(t, mT(t, dx), c->y[2]));
  }
  if (m < n) {
    ft_var *x2 = sub_mat(t, x, 0, m, m, n), *dx1 = sub_mat(t, dx, 0, m, 0, m);
    ft_var *dx2 = sub_mat(t, dx, 0, m, m, n), *r1 = sub_mat(t, r, 0, m, 0, m);
    ft_var *dq, *dr1;
    if (!thin_qr_jvp(t, q, r1, dx1, &dq, &dr1)) return false;
    ft_var *dr2 = tx_add(t, mm(t, cj(t, dq), true, x2, false), mm(t, cj(t, q), true, dx2, false));
    c->dy[0] = dq;
    c->dy[1] = concat2(t, dr1, dr2, rk - 1);
    return !t->failed;
  }
  if (!full || m == n) return thin_qr_jvp(t, q, r, dx, &c->dy[0], &c->dy[1]);
  ft_var *q_mn = sub_mat(t, q, 0, m, 0, n), *dq_mn, *dr_nn;
  if (!thin_qr_jvp(t, q_mn, sub_mat(t, r, 0, n, 0, n), dx, &dq_mn, &dr_nn)) return false;
  c->dy[0] = qr_complete_dq(t, q, q_mn, dq_mn, m, n);
  ft_aval za = dr_nn->aval;
  za.dims[rk - 2] = m - n;
  c->dy[1] = concat2(t, dr_nn, tx_zeros(t, &za), rk - 2);
  return !t->failed;
}

/* ---------------------------------------------------------------- eig */

static ft_var *conj_c(tx *t, ft_var *x) {
  if (!x || t->failed) return NULL;
  ft_pval *ps = tx_params(t, FT_P_CONJ);
  if (!ps) return NULL;
  pset(FT_P_CONJ, ps, "input_dtype", ft_pv_dtype(x->aval.dtype));
  return tx_emit(t, FT_P_CONJ, ps, 1, &x);
}

static ft_var *tsolve_left(tx *t, ft_var *a, ft_var *b, bool lower, bool unit) {
  if (!a || !b || t->failed) return NULL;
  ft_pval *ps = tx_params(t, FT_P_TRIANGULAR_SOLVE);
  if (!ps) return NULL;
  pset(FT_P_TRIANGULAR_SOLVE, ps, "left_side", ft_pv_bool(true));
  pset(FT_P_TRIANGULAR_SOLVE, ps, "lower", ft_pv_bool(lower));
  pset(FT_P_TRIANGULAR_SOLVE, ps, "transpose_a", ft_pv_bool(false));
  pset(FT_P_TRIANGULAR_SOLVE, ps, "conjugate_a", ft_pv_bool(false));
  pset(FT_P_TRIANGULAR_SOLVE, ps, "unit_diagonal", ft_pv_bool(unit));
  return tx_emit(t, FT_P_TRIANGULAR_SOLVE, ps, 2, (ft_var *[]){a, b});
}

/* a^-1 b for a [..., n, n] and b [..., n, k], as JAX's _solve computes
 * it (lu of a with partial pivoting, b's rows permuted, a unit-lower then
 * an upper triangular solve: lu_solve with trans=0). JAX wraps these in a
 * custom_linear_solve (vmapped over b's columns) so that its own JVP and
 * transpose reuse the factorization; here a is a primal value, so the
 * solve is linear in b through triangular_solve and gather alone. */
static ft_var *lu_solve_mat(tx *t, ft_var *a, ft_var *b) {
  if (!a || !b || t->failed) return NULL;
  ft_var *lu[3];
  if (!tx_emitn(t, FT_P_LU, tx_params(t, FT_P_LU), 1, &a, 3, lu)) return NULL;
  ft_var *x = rows_permuted(t, b, lu[2]);
  return tsolve_left(t, lu[0], tsolve_left(t, lu[0], x, true, true), false, false);
}

/* x summed over axis ax (negative: from the end). */
static ft_var *sum_axis(tx *t, ft_var *x, int ax) {
  if (!x) return NULL;
  int64_t a = ax < 0 ? x->aval.rank + ax : ax;
  return tx_reduce_sum(t, x, 1, &a);
}

/* x [..., k] as [..., 1, k] (JAX's expand_dims(x, (ndim - 2,))) broadcast
 * against [..., n, k]. */
static ft_var *row_bc(tx *t, ft_var *x, int64_t n) { return bc_vec(t, x, true, n); }

/* JAX's _eig_vec_jvp: with P = v^-1 da v, dw = diag(P), U = v (F * P)
 * where F[i,j] = 1/(w_j - w_i) off the diagonal, and dv = U + v c with
 * c_j = -Re(v_j^H u_j) - i Im(u_kj) / Re(v_kj), k = argmax_i |v_ij| (the
 * normalisation LAPACK's geev fixes). */
static void eig_vec_jvp(tx *t, ft_var *w, ft_var *v, ft_var *da, ft_var **dw, ft_var **dv) {
  int r = v->aval.rank;
  int64_t n = v->aval.dims[r - 1];
  ft_dtype cd = v->aval.dtype;
  ft_var *eye = eye_of(t, &v->aval);
  ft_var *Fm = tx_sub(t, tx_integer_pow(t, tx_sub(t, tx_add(t, eye, row_bc(t, w, n)), bc_vec(t, w, false, n)), -1),
                      eye);
  ft_var *P = mm(t, lu_solve_mat(t, v, da), false, v, false);
  if (dw) *dw = diag_of(t, P);
  ft_var *U = mm(t, v, false, tx_mul(t, Fm, P), false);
  ft_pval *ap = tx_params(t, FT_P_ARGMAX);
  if (!ap || t->failed) return;
  int64_t ax = r - 2;
  pset(FT_P_ARGMAX, ap, "axes", ft_pv_ints(t->a, 1, &ax));
  pset(FT_P_ARGMAX, ap, "index_dtype", ft_pv_dtype(FT_I32));
  ft_var *av = tx_unop(t, FT_P_ABS, v);
  ft_var *k = av ? tx_emit(t, FT_P_ARGMAX, ap, 1, &av) : NULL;
  ft_pval *ip = tx_params(t, FT_P_IOTA);
  if (!ip || !k) return;
  pset(FT_P_IOTA, ip, "dimension", ft_pv_int(r - 2));
  pset(FT_P_IOTA, ip, "dtype", ft_pv_dtype(FT_I32));
  pset(FT_P_IOTA, ip, "shape", ft_pv_ints(t->a, r, v->aval.dims));
  ft_var *io = tx_emit(t, FT_P_IOTA, ip, 0, NULL);
  ft_var *mask = tx_convert(t, tx_binop(t, FT_P_EQ, io, row_bc(t, k, n)), cd);
  ft_var *re = tx_neg(t, tx_unop(t, FT_P_REAL, sum_axis(t, tx_mul(t, conj_c(t, v), U), -2)));
  ft_var *im = tx_div(t, tx_neg(t, tx_unop(t, FT_P_IMAG, sum_axis(t, tx_mul(t, mask, U), -2))),
                      tx_unop(t, FT_P_REAL, sum_axis(t, tx_mul(t, mask, v), -2)));
  ft_var *cc = tx_binop(t, FT_P_COMPLEX, re, im);
  *dv = tx_add(t, U, tx_mul(t, v, row_bc(t, cc, n)));
}

/* JAX's eig_jvp_rule: eigenvalues only, dw = sum(v^-1 da * v^T, -1);
 * with eigenvectors (which JAX differentiates only under
 * enable_eigvec_derivs=True) _eig_vec_jvp for vr, and for vl with conj(w)
 * and da^H. An eig without right eigenvectors is bound again with them,
 * as JAX's rule does. */
static bool jvp_eig(jvp_call *c) {
  tx *t = c->t;
  ft_var *a = c->x[0], *da = c->dx[0];
  if (!da) return true;
  bool left = pget_bool(FT_P_EIG, c->params, "compute_left_eigenvectors", false);
  bool right = pget_bool(FT_P_EIG, c->params, "compute_right_eigenvectors", true);
  bool derivs = pget_bool(FT_P_EIG, c->params, "enable_eigvec_derivs", false);
  if ((left || right) && !derivs)
    return tx_fail(t, FT_ERR_UNSUPPORTED,
                   "jvp of eig: Derivatives of non-symmetric eigenvectors are only valid under "
                   "assumptions on the input that JAX cannot check (see the enable_eigvec_derivs "
                   "argument to jax.lax.linalg.eig). Pass enable_eigvec_derivs=True to "
                   "jax.lax.linalg.eig to opt in (JAX's message)"), false;
  int no = c->e->n_out;
  ft_var *w = c->y[0], *vl = left ? c->y[1] : NULL, *vr = right ? c->y[no - 1] : NULL;
  if (!right) {
    ft_pval *ps = params_clone(t->a, FT_P_EIG, c->params);
    if (!ps) return tx_nomem(t), false;
    pset(FT_P_EIG, ps, "compute_right_eigenvectors", ft_pv_bool(true));
    ft_var *o[3];
    if (!tx_emitn(t, FT_P_EIG, ps, 1, &a, left ? 3 : 2, o)) return false;
    w = o[0], vr = o[left ? 2 : 1];
  }
  da = tx_convert(t, da, vr->aval.dtype);
  if (!left && !right) {
    c->dy[0] = sum_axis(t, tx_mul(t, lu_solve_mat(t, vr, da), mT(t, vr)), -1);
    return !t->failed;
  }
  ft_var *dw = NULL, *dvr = NULL, *dvl = NULL;
  eig_vec_jvp(t, w, vr, da, &dw, &dvr);
  if (left) eig_vec_jvp(t, conj_c(t, w), vl, conj_c(t, mT(t, da)), NULL, &dvl);
  c->dy[0] = dw;
  if (left) c->dy[1] = dvl;
  if (right) c->dy[no - 1] = dvr;
  return !t->failed;
}

bool ad_spectral_prim(ft_prim p) {
  return p == FT_P_EIGH || p == FT_P_SVD || p == FT_P_QR || p == FT_P_EIG || p == FT_P_SCHUR ||
         p == FT_P_HESSENBERG || p == FT_P_TRIDIAGONAL || p == FT_P_HOUSEHOLDER_PRODUCT ||
         p == FT_P_GEQRF || p == FT_P_ORMQR;
}

bool jvp_spectral(jvp_call *c) {
  switch (c->e->prim) {
  case FT_P_EIGH: return jvp_eigh(c);
  case FT_P_SVD: return jvp_svd(c);
  case FT_P_QR: return jvp_qr(c);
  case FT_P_EIG: return jvp_eig(c);
  default:
    return tx_fail(c->t, FT_ERR_UNSUPPORTED, "jvp of %s: %s", ft_prim_get(c->e->prim)->name,
                   ft_spectral_jvp_status(c->e->prim)), false;
  }
}

const char *ft_spectral_jvp_status(ft_prim p) {
  /* JAX 0.12 registers no JVP for these (real or complex); its refusal is
   * ad.py's NotImplementedError, quoted */
  switch (p) {
  case FT_P_SCHUR:
    return "unsupported: JAX defines no derivative for this decomposition "
           "(\"Differentiation rule for 'schur' not implemented\")";
  case FT_P_HESSENBERG:
    return "unsupported: JAX defines no derivative for this decomposition "
           "(\"Differentiation rule for 'hessenberg' not implemented\")";
  case FT_P_TRIDIAGONAL:
    return "unsupported: JAX defines no derivative for this decomposition "
           "(\"Differentiation rule for 'tridiagonal' not implemented\")";
  case FT_P_HOUSEHOLDER_PRODUCT:
    return "unsupported: JAX defines no derivative for this decomposition "
           "(\"Differentiation rule for 'householder_product' not implemented\")";
  case FT_P_GEQRF:
    return "unsupported: JAX defines no derivative for this decomposition "
           "(\"Differentiation rule for 'geqrf' not implemented\")";
  case FT_P_ORMQR:
    return "unsupported: JAX defines no derivative for this decomposition "
           "(\"Differentiation rule for 'ormqr' not implemented\")";
  default: return NULL;
  }
}

/* ----------------------------------------------------------- batching */

/* The decompositions work on the last two axes: the batch axis goes to
 * the front and every result is batched there. */
bool bt_spectral(bt_call *c) {
  ft_var *x[3];
  if (c->n_in > 3) return tx_fail(c->t, FT_ERR_INTERNAL, "vmap: too many operands"), false;
  for (int i = 0; i < c->n_in; i++) /* householder_product, ormqr: all, mapped or not */
    x[i] = bt_match(c->t, c->x[i], c->xb[i], 0, c->s->size);
  for (int k = 0; k < c->n_out; k++) c->yb[k] = 0;
  return tx_emitn(c->t, c->e->prim, c->params, c->n_in, x, c->n_out, c->y);
}
