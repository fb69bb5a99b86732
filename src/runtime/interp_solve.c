/* src/runtime/interp_solve.c: the rule bodies of the factorizations and
 * solves of issue 20 (docs/linalg.md): cholesky, cholesky_update,
 * triangular_solve, lu, lu_pivots_to_permutation, tridiagonal_solve and
 * symmetric_product. Each is an ft_rule_into_fn (runtime.h): the
 * interpreter and the JIT's routine steps run the same body, so the same
 * LAPACK calls on the same bytes.
 *
 * JAX's CPU conventions: a failed cholesky (potrf INFO > 0) or
 * tridiagonal_solve (gtsv INFO > 0) gives a batch member all NaN; lu's
 * pivots are 0-based and its permutation applies them in order; a
 * singular triangular solve divides by zero (inf/NaN), never an error. */
#include <math.h>
#include <string.h>

#include "runtime/lapack.h"

static ft_status bad(ft_ctx *ctx, const ft_eqn *e, ft_status st, const char *fmt, const char *a,
                     const char *b) {
  return ft_set_error(ctx, st, "%s: %s%s%s", ft_prim_get(e->prim)->name, fmt, a ? a : "", b ? b : "");
}

/* The aval text of a, for messages. */
static const char *avs(const ft_aval *a, char *buf, size_t n) { return ft_aval_str(a, buf, n); }

/* Checks a float/complex operand of rank >= r whose last dims fit LAPACK. */
static ft_status check_mat(ft_ctx *ctx, const ft_eqn *e, const ft_aval *a, int r, bool cpx_ok,
                           const char *what) {
  char buf[256];
  if (a->rank < r)
    return ft_set_error(ctx, FT_ERR_SHAPE, "%s: %s %s must have rank at least %d",
                        ft_prim_get(e->prim)->name, what, avs(a, buf, sizeof buf), r);
  if (!ft_lapack_letter(a->dtype) || (!cpx_ok && ft_dtype_is_complex(a->dtype)))
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "%s: %s %s: dtype %s is not supported (%s)",
                        ft_prim_get(e->prim)->name, what, avs(a, buf, sizeof buf),
                        ft_dtype_name(a->dtype), cpx_ok ? "f32, f64, c64, c128" : "f32, f64");
  for (int d = a->rank - r; d < a->rank; d++)
    if (!ft_lapack_int_ok(a->dims[d]) || !ft_lapack_int_ok(a->dims[d] * (d + 1 < a->rank ? a->dims[d + 1] : 1)))
      return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "%s: %s %s: matrix dims exceed LAPACK's 32-bit sizes",
                          ft_prim_get(e->prim)->name, what, avs(a, buf, sizeof buf));
  return FT_OK;
}

/* Whether the leading (batch) dims of a and b, with ra and rb core dims,
 * are equal. */
static bool same_batch(const ft_aval *a, int ra, const ft_aval *b, int rb) {
  if (a->rank - ra != b->rank - rb) return false;
  for (int d = 0; d < a->rank - ra; d++)
    if (a->dims[d] != b->dims[d]) return false;
  return true;
}

/* Writes NaN over n elements of dtype dt (complex: NaN + NaN i, as JAX's
 * CPU cholesky gives). */
static void fill_nan(void *p, int64_t n, ft_dtype dt) {
  for (int64_t i = 0; i < n; i++) switch (dt) {
    case FT_F32: ((float *)p)[i] = NAN; break;
    case FT_F64: ((double *)p)[i] = NAN; break;
    case FT_C64: ((float *)p)[2 * i] = ((float *)p)[2 * i + 1] = NAN; break;
    default: ((double *)p)[2 * i] = ((double *)p)[2 * i + 1] = NAN; break;
    }
}

/* ================================================================ cholesky */
/* potrf('U') on the column-major view of the row-major matrix: that view is
 * A^T, whose upper triangle is A's lower one (the part JAX's potrf('L')
 * reads), and its factor U = L^T lands in A's lower triangle as L itself
 * (also for complex: the Hermitian matrix of the view is conj(A) = A^T, so
 * U = L^T, no conjugation). The other triangle keeps the input, as JAX's
 * primitive result does (jnp.linalg.cholesky masks it). No copy but the
 * operand into the result. */
typedef struct {
  char *x;
  int n;
  size_t esz;
  ft_dtype dt;
} chol_job;

static void chol_member(void *arg, int64_t b) {
  chol_job *j = arg;
  void *a = j->x + (size_t)b * (size_t)j->n * (size_t)j->n * j->esz;
  int n = j->n, lda = n > 1 ? n : 1, info = 0;
  switch (j->dt) {
  case FT_F32: spotrf_("U", &n, a, &lda, &info, 1); break;
  case FT_F64: dpotrf_("U", &n, a, &lda, &info, 1); break;
  case FT_C64: cpotrf_("U", &n, a, &lda, &info, 1); break;
  default: zpotrf_("U", &n, a, &lda, &info, 1); break;
  }
  if (info != 0) fill_nan(a, (int64_t)n * n, j->dt);
}

static ft_status cholesky_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                               ft_array *const *out, void *scratch) {
  (void)scratch;
  const ft_aval *a = &in[0]->aval;
  char buf[256];
  ft_status st = check_mat(ctx, e, a, 2, true, "operand");
  if (st) return st;
  if (a->dims[a->rank - 1] != a->dims[a->rank - 2])
    return bad(ctx, e, FT_ERR_SHAPE, "The input to cholesky must be a square matrix. Got ",
               avs(a, buf, sizeof buf), NULL);
  if (!out) return FT_OK;
  memcpy(out[0]->data, in[0]->data, in[0]->nbytes);
  chol_job j = {out[0]->data, (int)a->dims[a->rank - 1], ft_dtype_size(a->dtype), a->dtype};
  if (j.n == 0) return FT_OK;
  return ft_lapack_batch(ctx, "cholesky", ft_lapack_batch_count(a, 2), chol_member, &j);
}

/* ========================================================= cholesky_update */
/* JAX's own algorithm (_cholesky_update_jax_fn: Givens rotations row by
 * row, in the dtype's arithmetic) for the upper factor r and vector w. */
#define CHOL_UPDATE(T, SQRT, ABS)                                                       \
  static void chol_update_##T(T *r, T *z, int64_t n) {                                  \
    for (int64_t k = 0; k < n; k++) {                                                   \
      T x = r[k * n + k], y = z[k], c = 1, s = 0;                                       \
      if (y != 0) {                                                                     \
        T ax = ABS(x), ay = ABS(y), den = ax > ay ? ax : ay;                            \
        x /= den, y /= den;                                                             \
        T rh = (T)1 / SQRT(x * x + y * y);                                              \
        c = x * rh, s = -y * rh;                                                        \
      }                                                                                 \
      for (int64_t i = 0; i < n; i++) {                                                 \
        T ri = r[k * n + i], zi = z[i];                                                 \
        r[k * n + i] = c * ri - s * zi;                                                 \
        z[i] = c * zi + s * ri;                                                         \
      }                                                                                 \
    }                                                                                   \
  }
CHOL_UPDATE(float, sqrtf, fabsf)
CHOL_UPDATE(double, sqrt, fabs)
#undef CHOL_UPDATE

static ft_status cholesky_update_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                                      ft_array *const *out, void *scratch) {
  const ft_aval *r = &in[0]->aval, *w = &in[1]->aval;
  char b1[256], b2[256];
  ft_status st = check_mat(ctx, e, r, 2, false, "r");
  if (st || (st = check_mat(ctx, e, w, 1, false, "w"))) return st;
  if (r->rank != 2 || w->rank != 1 || r->dims[0] != r->dims[1] || w->dims[0] != r->dims[1] ||
      r->dtype != w->dtype)
    return ft_set_error(ctx, FT_ERR_SHAPE,
                        "cholesky_update: takes a square matrix and a vector of its size and "
                        "dtype (no batch dims, as JAX), got %s and %s",
                        avs(r, b1, sizeof b1), avs(w, b2, sizeof b2));
  if (!out) return FT_OK;
  memcpy(out[0]->data, in[0]->data, in[0]->nbytes);
  memcpy(scratch, in[1]->data, in[1]->nbytes);
  if (r->dtype == FT_F32) chol_update_float(out[0]->data, scratch, r->dims[0]);
  else chol_update_double(out[0]->data, scratch, r->dims[0]);
  return FT_OK;
}

/* ======================================================== triangular_solve */
/* op(A) X = B (left_side) or X op(A) = B on row-major data is, on the
 * column-major views (A^T and X^T, B^T), X^T op(A)^T = B^T or op(A)^T X^T =
 * B^T: ?trsm with the other side, the other triangle, and the same
 * transposition flag (op(A)^T of the view A^T is N for N, T for T, C for
 * C). Only conjugate-without-transpose needs a conjugated copy of A
 * (scratch). The result starts as a copy of b and is solved in place. */
typedef struct {
  const char *a;
  char *x, *tmp;
  int m, M, N; /* A is m x m; the view of each result member is M x N */
  size_t esz;
  ft_dtype dt;
  char side, uplo, trans, diag;
  bool conj_copy;
  int64_t a_stride, x_stride; /* elements per member; a_stride 0: A shared */
} trsm_job;

static void trsm_member(void *arg, int64_t b) {
  trsm_job *j = arg;
  const void *a = j->a + (size_t)(b * j->a_stride) * j->esz;
  void *x = j->x + (size_t)(b * j->x_stride) * j->esz;
  int lda = j->m > 1 ? j->m : 1, ldb = j->M > 1 ? j->M : 1;
  if (j->conj_copy) {
    int64_t nn = (int64_t)j->m * j->m;
    memcpy(j->tmp, a, (size_t)nn * j->esz);
    if (j->dt == FT_C64)
      for (int64_t i = 0; i < nn; i++) ((float *)j->tmp)[2 * i + 1] = -((float *)j->tmp)[2 * i + 1];
    else
      for (int64_t i = 0; i < nn; i++) ((double *)j->tmp)[2 * i + 1] = -((double *)j->tmp)[2 * i + 1];
    a = j->tmp;
  }
  switch (j->dt) {
  case FT_F32: {
    float one = 1;
    strsm_(&j->side, &j->uplo, &j->trans, &j->diag, &j->M, &j->N, &one, a, &lda, x, &ldb, 1, 1, 1, 1);
    break;
  }
  case FT_F64: {
    double one = 1;
    dtrsm_(&j->side, &j->uplo, &j->trans, &j->diag, &j->M, &j->N, &one, a, &lda, x, &ldb, 1, 1, 1, 1);
    break;
  }
  case FT_C64: {
    ft_lapack_c64 one = 1;
    ctrsm_(&j->side, &j->uplo, &j->trans, &j->diag, &j->M, &j->N, &one, a, &lda, x, &ldb, 1, 1, 1, 1);
    break;
  }
  default: {
    ft_lapack_c128 one = 1;
    ztrsm_(&j->side, &j->uplo, &j->trans, &j->diag, &j->M, &j->N, &one, a, &lda, x, &ldb, 1, 1, 1, 1);
    break;
  }
  }
}

static ft_status triangular_solve_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                                       ft_array *const *out, void *scratch) {
  const ft_aval *a = &in[0]->aval, *b = &in[1]->aval;
  char b1[256], b2[256];
  ft_status st = check_mat(ctx, e, a, 2, true, "a");
  if (st || (st = check_mat(ctx, e, b, 2, true, "b"))) return st;
  bool left = ft_param_int(e, "left_side", 0) != 0, lower = ft_param_int(e, "lower", 0) != 0;
  bool ta = ft_param_int(e, "transpose_a", 0) != 0, ca = ft_param_int(e, "conjugate_a", 0) != 0;
  bool unit = ft_param_int(e, "unit_diagonal", 0) != 0;
  int64_t m = a->dims[a->rank - 1], r = b->dims[b->rank - 2], c = b->dims[b->rank - 1];
  if (a->dims[a->rank - 2] != m || (left ? r : c) != m || a->dtype != b->dtype || !same_batch(a, 2, b, 2))
    return ft_set_error(ctx, FT_ERR_SHAPE,
                        "triangular_solve: incompatible operands %s and %s (a square, of b's "
                        "dtype and batch dims, its size b's %s dim)",
                        avs(a, b1, sizeof b1), avs(b, b2, sizeof b2), left ? "second-to-last" : "last");
  if (!out) return FT_OK;
  memcpy(out[0]->data, in[1]->data, in[1]->nbytes);
  bool cpx = ft_dtype_is_complex(a->dtype);
  trsm_job j = {.a = in[0]->data, .x = out[0]->data, .m = (int)m, .M = (int)c, .N = (int)r,
                .esz = ft_dtype_size(a->dtype), .dt = a->dtype, .side = left ? 'R' : 'L',
                .uplo = lower ? 'U' : 'L', .trans = !ta ? 'N' : (ca && cpx) ? 'C' : 'T',
                .diag = unit ? 'U' : 'N', .conj_copy = cpx && ca && !ta,
                .a_stride = m * m, .x_stride = r * c};
  j.tmp = ft_lapack_align(scratch);
  if (r == 0 || c == 0 || m == 0) return FT_OK;
  return ft_lapack_batch(ctx, "triangular_solve", ft_lapack_batch_count(b, 2), trsm_member, &j);
}

static size_t triangular_solve_scratch(const ft_eqn *e) {
  const ft_aval *a = &e->in[0]->aval;
  if (a->rank < 2 || !ft_dtype_is_complex(a->dtype) || !ft_param_int(e, "conjugate_a", 0) ||
      ft_param_int(e, "transpose_a", 0))
    return 0;
  int64_t m = a->dims[a->rank - 1];
  return (size_t)(m * m) * ft_dtype_size(a->dtype) + FT_LAPACK_ALIGN;
}

/* ====================================================================== lu */
/* getrf on a column-major copy (scratch), copied back row-major; pivots
 * 0-based; the permutation applies the row swaps in order to 0..m-1. */
typedef struct {
  const char *a;
  char *lu, *col;
  int32_t *piv, *perm;
  int *ipiv;
  int m, n, k;
  size_t esz;
  ft_dtype dt;
} lu_job;

static void pivots_to_perm(const int32_t *piv, int k, int32_t *perm, int m) {
  for (int i = 0; i < m; i++) perm[i] = i;
  for (int i = 0; i < k && i < m; i++) {
    int64_t jj = piv[i] < 0 ? (int64_t)piv[i] + m : piv[i];
    int64_t jc = jj < 0 ? 0 : jj >= m ? m - 1 : jj; /* a read clamps, a write drops (JAX's indexing) */
    int32_t x = perm[i], y = perm[jc];
    perm[i] = y;
    if (jj >= 0 && jj < m) perm[jj] = x;
  }
}

static void lu_member(void *arg, int64_t b) {
  lu_job *j = arg;
  size_t mat = (size_t)j->m * (size_t)j->n * j->esz;
  int m = j->m, n = j->n, lda = m > 1 ? m : 1, info = 0;
  ft_lapack_to_colmajor(j->col, m, j->a + b * mat, n, m, n, j->esz);
  switch (j->dt) {
  case FT_F32: sgetrf_(&m, &n, (float *)j->col, &lda, j->ipiv, &info); break;
  case FT_F64: dgetrf_(&m, &n, (double *)j->col, &lda, j->ipiv, &info); break;
  case FT_C64: cgetrf_(&m, &n, (ft_lapack_c64 *)j->col, &lda, j->ipiv, &info); break;
  default: zgetrf_(&m, &n, (ft_lapack_c128 *)j->col, &lda, j->ipiv, &info); break;
  }
  char *lu = j->lu + b * mat;
  ft_lapack_to_colmajor(lu, n, j->col, m, n, m, j->esz);
  if (info < 0) fill_nan(lu, (int64_t)m * n, j->dt); /* JAX: info >= 0 is success */
  int32_t *piv = j->piv + b * j->k, *perm = j->perm + b * j->m;
  for (int i = 0; i < j->k; i++) piv[i] = j->ipiv[i] - 1;
  pivots_to_perm(piv, j->k, perm, j->m);
}

static ft_status lu_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                         void *scratch) {
  const ft_aval *a = &in[0]->aval;
  ft_status st = check_mat(ctx, e, a, 2, true, "operand");
  if (st) return st;
  if (!out) return FT_OK;
  int64_t m = a->dims[a->rank - 2], n = a->dims[a->rank - 1], k = m < n ? m : n;
  char *base = ft_lapack_align(scratch);
  lu_job j = {.a = in[0]->data, .lu = out[0]->data, .piv = out[1]->data, .perm = out[2]->data,
              .m = (int)m, .n = (int)n, .k = (int)k, .esz = ft_dtype_size(a->dtype), .dt = a->dtype};
  j.col = base;
  j.ipiv = (int *)(base + ft_lapack_round((size_t)(m * n) * j.esz));
  int64_t nb = ft_lapack_batch_count(a, 2);
  if (m == 0 || n == 0) { /* nothing to factor: the permutation is the identity */
    for (int64_t b = 0; b < nb; b++) pivots_to_perm(NULL, 0, j.perm + b * m, (int)m);
    return FT_OK;
  }
  return ft_lapack_batch(ctx, "lu", nb, lu_member, &j);
}

static size_t lu_scratch(const ft_eqn *e) {
  const ft_aval *a = &e->in[0]->aval;
  if (a->rank < 2) return 0;
  int64_t m = a->dims[a->rank - 2], n = a->dims[a->rank - 1];
  return ft_lapack_round((size_t)(m * n) * ft_dtype_size(a->dtype)) +
         sizeof(int) * (size_t)(m < n ? m : n) + FT_LAPACK_ALIGN;
}

/* ================================================ lu_pivots_to_permutation */
static ft_status pivots_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                             void *scratch) {
  (void)scratch;
  const ft_aval *p = &in[0]->aval;
  char buf[256];
  int64_t m = ft_param_int(e, "permutation_size", -1);
  if (p->dtype != FT_I32 || p->rank < 1)
    return bad(ctx, e, FT_ERR_TYPE, "pivots must be i32 of rank at least 1, got ", avs(p, buf, sizeof buf), NULL);
  int64_t k = p->dims[p->rank - 1];
  if (m < k || m > INT32_MAX)
    return ft_set_error(ctx, FT_ERR_SHAPE,
                        "lu_pivots_to_permutation: permutation_size %lld must be at least the "
                        "pivots' size %lld (and fit i32)", (long long)m, (long long)k);
  if (!out) return FT_OK;
  int64_t nb = ft_lapack_batch_count(p, 1);
  for (int64_t b = 0; b < nb; b++)
    pivots_to_perm((const int32_t *)in[0]->data + b * k, (int)k, (int32_t *)out[0]->data + b * m, (int)m);
  return FT_OK;
}

/* ======================================================= tridiagonal_solve */
/* gtsv on copies of the sub-, main and super-diagonal (dl[0] and du[m-1]
 * are not part of the matrix, as in JAX) and a column-major copy of b.
 * INFO > 0 (a zero pivot) gives the member all NaN, as JAX. */
typedef struct {
  const char *dl, *d, *du, *b;
  char *x, *sdl, *sd, *sdu, *sb;
  int m, n;
  size_t esz;
  ft_dtype dt;
} gtsv_job;

static void gtsv_member(void *arg, int64_t b) {
  gtsv_job *j = arg;
  size_t vb = (size_t)j->m * j->esz, mb = vb * (size_t)j->n;
  int m = j->m, n = j->n, ldb = m > 1 ? m : 1, nm1 = m - 1, info = 0;
  memcpy(j->sdl, j->dl + b * vb + j->esz, (size_t)nm1 * j->esz);
  memcpy(j->sd, j->d + b * vb, vb);
  memcpy(j->sdu, j->du + b * vb, (size_t)nm1 * j->esz);
  ft_lapack_to_colmajor(j->sb, m, j->b + b * mb, n, m, n, j->esz);
  switch (j->dt) {
  case FT_F32: sgtsv_(&m, &n, (float *)j->sdl, (float *)j->sd, (float *)j->sdu, (float *)j->sb, &ldb, &info); break;
  case FT_F64: dgtsv_(&m, &n, (double *)j->sdl, (double *)j->sd, (double *)j->sdu, (double *)j->sb, &ldb, &info); break;
  case FT_C64:
    cgtsv_(&m, &n, (ft_lapack_c64 *)j->sdl, (ft_lapack_c64 *)j->sd, (ft_lapack_c64 *)j->sdu,
           (ft_lapack_c64 *)j->sb, &ldb, &info);
    break;
  default:
    zgtsv_(&m, &n, (ft_lapack_c128 *)j->sdl, (ft_lapack_c128 *)j->sd, (ft_lapack_c128 *)j->sdu,
           (ft_lapack_c128 *)j->sb, &ldb, &info);
    break;
  }
  char *x = j->x + b * mb;
  ft_lapack_to_colmajor(x, n, j->sb, m, n, m, j->esz);
  if (info != 0) fill_nan(x, (int64_t)m * n, j->dt);
}

static ft_status tridiagonal_solve_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                                        ft_array *const *out, void *scratch) {
  const ft_aval *b = &in[3]->aval;
  char b1[256], b2[256];
  ft_status st = check_mat(ctx, e, b, 2, true, "b");
  if (st) return st;
  if (ft_param_int(e, "perturb_singular", 0))
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED,
                        "tridiagonal_solve: perturb_singular=True is not supported (JAX's CPU "
                        "kernel for it is its own, not LAPACK's)");
  for (int k = 0; k < 3; k++) {
    const ft_aval *v = &in[k]->aval;
    if (v->dtype != b->dtype || !same_batch(v, 1, b, 2) || v->dims[v->rank - 1] != b->dims[b->rank - 2])
      return ft_set_error(ctx, FT_ERR_SHAPE,
                          "tridiagonal_solve: the diagonals must have b's dtype and shape without "
                          "its last dim, got %s and b %s", avs(v, b1, sizeof b1), avs(b, b2, sizeof b2));
  }
  if (!out) return FT_OK;
  int64_t m = b->dims[b->rank - 2], n = b->dims[b->rank - 1];
  size_t esz = ft_dtype_size(b->dtype), vb = ft_lapack_round((size_t)m * esz);
  char *base = ft_lapack_align(scratch);
  gtsv_job j = {in[0]->data, in[1]->data, in[2]->data, in[3]->data, out[0]->data,
                base, base + vb, base + 2 * vb, base + 3 * vb, (int)m, (int)n, esz, b->dtype};
  if (m == 0 || n == 0) return FT_OK;
  return ft_lapack_batch(ctx, "tridiagonal_solve", ft_lapack_batch_count(b, 2), gtsv_member, &j);
}

static size_t tridiagonal_solve_scratch(const ft_eqn *e) {
  const ft_aval *b = &e->in[3]->aval;
  if (b->rank < 2) return 0;
  int64_t m = b->dims[b->rank - 2], n = b->dims[b->rank - 1];
  size_t esz = ft_dtype_size(b->dtype);
  return 3 * ft_lapack_round((size_t)m * esz) + (size_t)(m * n) * esz + FT_LAPACK_ALIGN;
}

/* ======================================================= symmetric_product */
/* alpha * a a^T + beta * c, as JAX's CPU lowering (_symmetric_product_jax_fn:
 * a HIGHEST-precision product, then the scaled sum) in the dtype's
 * arithmetic; each dot is summed left to right over k. */
#define SYMPROD(T)                                                                      \
  static void symprod_##T(const T *a, const T *c, T *o, int64_t n, int64_t k, T al,     \
                          T be) {                                                       \
    for (int64_t i = 0; i < n; i++)                                                     \
      for (int64_t j = 0; j < n; j++) {                                                 \
        T s = 0;                                                                        \
        for (int64_t q = 0; q < k; q++) s += a[i * k + q] * a[j * k + q];               \
        o[i * n + j] = al * s + be * c[i * n + j];                                      \
      }                                                                                 \
  }
SYMPROD(float)
SYMPROD(double)
#undef SYMPROD

static ft_status symmetric_product_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                                        ft_array *const *out, void *scratch) {
  (void)scratch;
  const ft_aval *a = &in[0]->aval, *c = &in[1]->aval;
  char b1[256], b2[256];
  ft_status st = check_mat(ctx, e, a, 2, false, "a");
  if (st || (st = check_mat(ctx, e, c, 2, false, "c"))) return st;
  int64_t n = c->dims[c->rank - 1], k = a->dims[a->rank - 1];
  if (c->dims[c->rank - 2] != n || a->dims[a->rank - 2] != n || a->dtype != c->dtype ||
      !same_batch(a, 2, c, 2))
    return ft_set_error(ctx, FT_ERR_SHAPE,
                        "symmetric_product: expects a of shape (n, k) and a square c of shape "
                        "(n, n) of one dtype and batch, got %s and %s",
                        avs(a, b1, sizeof b1), avs(c, b2, sizeof b2));
  if (!out) return FT_OK;
  double al = 1, be = 0;
  const ft_pval *pa = ft_eqn_param(e, "alpha"), *pb = ft_eqn_param(e, "beta");
  if (pa && pa->tag == FT_PV_FLOAT) al = pa->u.f;
  if (pb && pb->tag == FT_PV_FLOAT) be = pb->u.f;
  int64_t nb = ft_lapack_batch_count(c, 2);
  for (int64_t b = 0; b < nb; b++) {
    if (c->dtype == FT_F32)
      symprod_float((const float *)in[0]->data + b * n * k, (const float *)in[1]->data + b * n * n,
                    (float *)out[0]->data + b * n * n, n, k, (float)al, (float)be);
    else
      symprod_double((const double *)in[0]->data + b * n * k, (const double *)in[1]->data + b * n * n,
                     (double *)out[0]->data + b * n * n, n, k, al, be);
  }
  return FT_OK;
}

/* ================================================================ dispatch */
ft_rule_into_fn ft_solve_rule_for(ft_prim p) {
  switch (p) {
  case FT_P_CHOLESKY: return cholesky_into;
  case FT_P_CHOLESKY_UPDATE: return cholesky_update_into;
  case FT_P_TRIANGULAR_SOLVE: return triangular_solve_into;
  case FT_P_LU: return lu_into;
  case FT_P_LU_PIVOTS_TO_PERMUTATION: return pivots_into;
  case FT_P_TRIDIAGONAL_SOLVE: return tridiagonal_solve_into;
  case FT_P_SYMMETRIC_PRODUCT: return symmetric_product_into;
  default: return NULL;
  }
}

size_t ft_solve_rule_scratch(const ft_eqn *e) {
  switch (e->prim) {
  case FT_P_CHOLESKY_UPDATE: return e->in[1]->aval.rank >= 1 ? (size_t)ft_aval_size(&e->in[1]->aval) * ft_dtype_size(e->in[1]->aval.dtype) : 0;
  case FT_P_TRIANGULAR_SOLVE: return triangular_solve_scratch(e);
  case FT_P_LU: return lu_scratch(e);
  case FT_P_TRIDIAGONAL_SOLVE: return tridiagonal_solve_scratch(e);
  default: return 0;
  }
}
