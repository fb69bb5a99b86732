/* src/runtime/interp_spectral.c: eigh, svd and qr through LAPACK, as
 * JAX 0.12's CPU lowering computes them (docs/linalg-spectral.md):
 *
 *   eigh  ?syevd, jobz 'V', uplo 'L' when lower=True else 'U'; eigenvalues
 *         ascending (LAPACK's order, which sort_eigenvalues asks for);
 *   svd   ?gesdd, jobz 'A' (full_matrices), 'S' (thin) or 'N'
 *         (compute_uv=False); JAX's empty-matrix results when m or n is 0;
 *   qr    ?geqrf (pivoting=True: ?geqp3 with every column free, p its
 *         jpvt - 1), then ?orgqr on the reflectors (JAX's householder_product)
 *         laid out as _qr_lowering lays them (padded to m x m when
 *         full_matrices and m > n); r is the upper triangle;
 *   eig   ?geev (jobvl/jobvr from compute_left/right_eigenvectors); the
 *         eigenvalues wr + i wi, and the eigenvectors unpacked from LAPACK's
 *         real storage of conjugate pairs (columns j, j+1 hold re and im of
 *         the vector of w[j], and its conjugate is w[j+1]'s), as jaxlib's
 *         geev kernel unpacks them;
 *   schur ?gees, jobvs 'V' when compute_schur_vectors, no sorting (JAX's
 *         CPU lowering refuses sort_eig_vals);
 *   hessenberg ?gehrd (ilo = 1, ihi = n): LAPACK's packed result and taus;
 *   tridiagonal ?sytrd, uplo from lower: packed result, d, e and taus;
 *   householder_product ?orgqr on a (m x n) with the k taus of operand 2.
 *
 * A batch member whose LAPACK call reports info != 0 (no convergence) gets
 * NaN in every result, as JAX's lowering writes. Matrices are row-major
 * here and column-major for LAPACK: each member is transposed into the
 * scratch, so LAPACK sees the same matrix (and the same triangle) that
 * XLA's column-major layout gives it in JAX, and the results are transposed
 * back. These are rule bodies shared with the JIT (runtime.h): the scratch,
 * whose size comes from LAPACK's own workspace queries on the shape alone,
 * holds the copies and the workspace, so the interpreter and a compiled
 * routine step run the same calls with the same workspace and agree
 * bitwise; OpenBLAS runs single-threaded, so the bits do not depend on the
 * thread count either. Complex operands run LAPACK's complex routines
 * with jaxlib's arguments: eigh (Hermitian, ?heevd), svd (?gesdd), qr
 * (?geqrf/?geqp3 + ?ungqr), eig (?geev), schur (?gees, rwork of n reals),
 * hessenberg (?gehrd), tridiagonal (?hetrd: d and e real),
 * householder_product (?ungqr), geqrf and ormqr (?unmqr). */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "runtime/lapack.h"

typedef int ft_lapack_int;

/* One decomposition's geometry: a batch of m x n matrices. */
typedef struct sp_geom {
  ft_prim p;
  bool f64, cpx; /* cpx: c64 (f64 false) or c128 operands */
  int64_t batch, m, n, k;
  bool full, uv, lower, left, right; /* left/right: eig's eigenvectors */
  bool pivot;                        /* qr: pivoting=True (?geqp3) */
  bool trans;                        /* ormqr: transpose (Q^T, Q^H) */
  int64_t ucols, vrows;      /* svd: u is m x ucols, vt is vrows x n; qr: q is m x ucols */
  int nres;                  /* the equation's number of results */
  ft_lapack_int lwork, liwork, lrwork;
} sp_geom;

enum { SP_ALIGN = 64 };

static size_t sp_round(size_t b) { return (b + SP_ALIGN - 1) / SP_ALIGN * SP_ALIGN; }

/* The workspace LAPACK asks for (lwork = -1 queries). Returns false when
 * a size does not fit LAPACK's 32-bit integers. */
static bool sp_query_cpx(sp_geom *g);

static bool sp_query(sp_geom *g) {
  g->lwork = 1, g->liwork = 1, g->lrwork = 1;
  if (g->m == 0 || g->n == 0) return true;
  if (g->m > INT_MAX / 8 || g->n > INT_MAX / 8 || g->m * g->n > INT_MAX) return false;
  if (g->cpx) return sp_query_cpx(g);
  ft_blas_single_thread(); /* OpenBLAS's bits change with its thread count */
  ft_lapack_int m = (ft_lapack_int)g->m, n = (ft_lapack_int)g->n, k = (ft_lapack_int)g->k;
  ft_lapack_int q = -1, info = 0, iw = 0, ld1 = m, ldu = m, ldvt = (ft_lapack_int)g->vrows;
  double dw[2] = {0, 0}, dd = 0;
  float sw[2] = {0, 0}, sd = 0;
  double need = 1, ineed = 1;
  if (ldvt < 1) ldvt = 1;
  switch (g->p) {
  case FT_P_EIGH: {
    const char *uplo = g->lower ? "L" : "U";
    if (g->f64) dsyevd_("V", uplo, &n, &dd, &n, &dd, dw, &q, &iw, &q, &info, 1, 1);
    else ssyevd_("V", uplo, &n, &sd, &n, &sd, sw, &q, &iw, &q, &info, 1, 1);
    need = g->f64 ? dw[0] : sw[0];
    ineed = iw;
    break;
  }
  case FT_P_SVD: {
    const char *jobz = !g->uv ? "N" : g->full ? "A" : "S";
    ft_lapack_int iwq[1];
    if (g->f64) dgesdd_(jobz, &m, &n, &dd, &ld1, &dd, &dd, &ldu, &dd, &ldvt, dw, &q, iwq, &info, 1);
    else sgesdd_(jobz, &m, &n, &sd, &ld1, &sd, &sd, &ldu, &sd, &ldvt, sw, &q, iwq, &info, 1);
    need = g->f64 ? dw[0] : sw[0];
    ineed = 8.0 * (double)k;
    break;
  }
  case FT_P_EIG: {
    const char *jl = g->left ? "V" : "N", *jr = g->right ? "V" : "N";
    if (g->f64) dgeev_(jl, jr, &n, &dd, &n, &dd, &dd, &dd, &n, &dd, &n, dw, &q, &info, 1, 1);
    else sgeev_(jl, jr, &n, &sd, &n, &sd, &sd, &sd, &n, &sd, &n, sw, &q, &info, 1, 1);
    need = g->f64 ? dw[0] : sw[0];
    break;
  }
  case FT_P_SCHUR: {
    ft_lapack_int sdim = 0;
    const char *jv = g->uv ? "V" : "N";
    if (g->f64) dgees_(jv, "N", NULL, &n, &dd, &n, &sdim, &dd, &dd, &dd, &n, dw, &q, NULL, &info, 1, 1);
    else sgees_(jv, "N", NULL, &n, &sd, &n, &sdim, &sd, &sd, &sd, &n, sw, &q, NULL, &info, 1, 1);
    need = g->f64 ? dw[0] : sw[0];
    break;
  }
  case FT_P_HESSENBERG: {
    ft_lapack_int one = 1;
    if (g->f64) dgehrd_(&n, &one, &n, &dd, &n, &dd, dw, &q, &info);
    else sgehrd_(&n, &one, &n, &sd, &n, &sd, sw, &q, &info);
    need = g->f64 ? dw[0] : sw[0];
    break;
  }
  case FT_P_TRIDIAGONAL: {
    const char *uplo = g->lower ? "L" : "U";
    if (g->f64) dsytrd_(uplo, &n, &dd, &n, &dd, &dd, &dd, dw, &q, &info, 1);
    else ssytrd_(uplo, &n, &sd, &n, &sd, &sd, &sd, sw, &q, &info, 1);
    need = g->f64 ? dw[0] : sw[0];
    break;
  }
  case FT_P_GEQRF:
    if (g->f64) dgeqrf_(&m, &n, &dd, &ld1, &dd, dw, &q, &info);
    else sgeqrf_(&m, &n, &sd, &ld1, &sd, sw, &q, &info);
    need = g->f64 ? dw[0] : sw[0];
    break;
  case FT_P_ORMQR: {
    ft_lapack_int cm = (ft_lapack_int)g->ucols, cn = (ft_lapack_int)g->vrows;
    const char *side = g->left ? "L" : "R", *tr = g->trans ? "T" : "N";
    if (g->f64) dormqr_(side, tr, &cm, &cn, &k, &dd, &m, &dd, &dd, &cm, dw, &q, &info, 1, 1);
    else sormqr_(side, tr, &cm, &cn, &k, &sd, &m, &sd, &sd, &cm, sw, &q, &info, 1, 1);
    need = g->f64 ? dw[0] : sw[0];
    break;
  }
  case FT_P_HOUSEHOLDER_PRODUCT:
    if (g->f64) dorgqr_(&m, &n, &k, &dd, &m, &dd, dw, &q, &info);
    else sorgqr_(&m, &n, &k, &sd, &m, &sd, sw, &q, &info);
    need = g->f64 ? dw[0] : sw[0];
    break;
  case FT_P_QR: {
    ft_lapack_int qc = (ft_lapack_int)g->ucols;
    if (g->pivot && g->f64) dgeqp3_(&m, &n, &dd, &ld1, &iw, &dd, dw, &q, &info);
    else if (g->pivot) sgeqp3_(&m, &n, &sd, &ld1, &iw, &sd, sw, &q, &info);
    else if (g->f64) dgeqrf_(&m, &n, &dd, &ld1, &dd, dw, &q, &info);
    else sgeqrf_(&m, &n, &sd, &ld1, &sd, sw, &q, &info);
    need = g->f64 ? dw[0] : sw[0];
    if (g->pivot) ineed = (double)g->n; /* jpvt */
    if (g->f64) dorgqr_(&m, &qc, &k, &dd, &ld1, &dd, dw, &q, &info);
    else sorgqr_(&m, &qc, &k, &sd, &ld1, &sd, sw, &q, &info);
    double o = g->f64 ? dw[0] : sw[0];
    if (o > need) need = o;
    break;
  }
  default: return false;
  }
  if (info != 0 || !(need >= 0) || need > INT_MAX / 2 || ineed > INT_MAX / 2) return false;
  /* the query's float may round the size down; a little more changes nothing */
  g->lwork = (ft_lapack_int)need + 16;
  g->liwork = ineed < 1 ? 1 : (ft_lapack_int)ineed;
  return true;
}

/* The complex routines' workspace queries (eigh: ?heevd, svd: ?gesdd, qr:
 * ?geqrf + ?ungqr): work in complex elements, rwork in real ones. */
static bool sp_query_cpx(sp_geom *g) {
  ft_blas_single_thread();
  ft_lapack_int m = (ft_lapack_int)g->m, n = (ft_lapack_int)g->n, k = (ft_lapack_int)g->k;
  ft_lapack_int q = -1, info = 0, iw = 0, ldvt = g->vrows > 0 ? (ft_lapack_int)g->vrows : 1;
  double zw[4] = {0}, zd[4] = {0}, rw[2] = {0}, rd[2] = {0};
  float cw[4] = {0}, cd[4] = {0}, srw[2] = {0}, srd[2] = {0};
  void *W = g->f64 ? (void *)zw : (void *)cw, *A = g->f64 ? (void *)zd : (void *)cd;
  double need = 1, rneed = 1, ineed = 1;
  switch (g->p) {
  case FT_P_EIGH: {
    const char *uplo = g->lower ? "L" : "U";
    if (g->f64) zheevd_("V", uplo, &n, A, &n, rd, W, &q, rw, &q, &iw, &q, &info, 1, 1);
    else cheevd_("V", uplo, &n, A, &n, srd, W, &q, srw, &q, &iw, &q, &info, 1, 1);
    need = g->f64 ? zw[0] : cw[0];
    rneed = g->f64 ? rw[0] : srw[0];
    ineed = iw;
    break;
  }
  case FT_P_SVD: {
    const char *jobz = !g->uv ? "N" : g->full ? "A" : "S";
    ft_lapack_int iwq[1];
    if (g->f64) zgesdd_(jobz, &m, &n, A, &m, rd, A, &m, A, &ldvt, W, &q, rw, iwq, &info, 1);
    else cgesdd_(jobz, &m, &n, A, &m, srd, A, &m, A, &ldvt, W, &q, srw, iwq, &info, 1);
    need = g->f64 ? zw[0] : cw[0];
    double mn = (double)k, mx = (double)(g->m > g->n ? g->m : g->n);
    rneed = !g->uv ? 7.0 * mn : fmax(5.0 * mn * mn + 5.0 * mn, 2.0 * mx * mn + 2.0 * mn * mn + mn);
    ineed = 8.0 * mn;
    break;
  }
  case FT_P_QR: {
    ft_lapack_int qc = (ft_lapack_int)g->ucols;
    if (g->pivot && g->f64) zgeqp3_(&m, &n, A, &m, &iw, A, W, &q, rw, &info);
    else if (g->pivot) cgeqp3_(&m, &n, A, &m, &iw, A, W, &q, srw, &info);
    else if (g->f64) zgeqrf_(&m, &n, A, &m, A, W, &q, &info);
    else cgeqrf_(&m, &n, A, &m, A, W, &q, &info);
    need = g->f64 ? zw[0] : cw[0];
    if (g->pivot) ineed = (double)g->n, rneed = 2.0 * (double)g->n; /* jpvt, geqp3's rwork */
    if (g->f64) zungqr_(&m, &qc, &k, A, &m, A, W, &q, &info);
    else cungqr_(&m, &qc, &k, A, &m, A, W, &q, &info);
    double o = g->f64 ? zw[0] : cw[0];
    if (o > need) need = o;
    break;
  }
  case FT_P_EIG: {
    const char *jl = g->left ? "V" : "N", *jr = g->right ? "V" : "N";
    if (g->f64) zgeev_(jl, jr, &n, A, &n, A, A, &n, A, &n, W, &q, rw, &info, 1, 1);
    else cgeev_(jl, jr, &n, A, &n, A, A, &n, A, &n, W, &q, srw, &info, 1, 1);
    need = g->f64 ? zw[0] : cw[0];
    rneed = 2.0 * (double)g->n;
    break;
  }
  case FT_P_SCHUR: { /* jaxlib's complex gees: rwork of n reals, no bwork (no sorting) */
    ft_lapack_int sdim = 0;
    const char *jv = g->uv ? "V" : "N";
    if (g->f64) zgees_(jv, "N", NULL, &n, A, &n, &sdim, A, A, &n, W, &q, rw, NULL, &info, 1, 1);
    else cgees_(jv, "N", NULL, &n, A, &n, &sdim, A, A, &n, W, &q, srw, NULL, &info, 1, 1);
    need = g->f64 ? zw[0] : cw[0];
    rneed = (double)g->n;
    break;
  }
  case FT_P_HESSENBERG: {
    ft_lapack_int one = 1;
    if (g->f64) zgehrd_(&n, &one, &n, A, &n, A, W, &q, &info);
    else cgehrd_(&n, &one, &n, A, &n, A, W, &q, &info);
    need = g->f64 ? zw[0] : cw[0];
    break;
  }
  case FT_P_TRIDIAGONAL: /* jaxlib queries ?hetrd with uplo 'L' whatever lower is */
    if (g->f64) zhetrd_("L", &n, A, &n, rd, rd, A, W, &q, &info, 1);
    else chetrd_("L", &n, A, &n, srd, srd, A, W, &q, &info, 1);
    need = g->f64 ? zw[0] : cw[0];
    break;
  case FT_P_HOUSEHOLDER_PRODUCT:
    if (g->f64) zungqr_(&m, &n, &k, A, &m, A, W, &q, &info);
    else cungqr_(&m, &n, &k, A, &m, A, W, &q, &info);
    need = g->f64 ? zw[0] : cw[0];
    break;
  case FT_P_GEQRF:
    if (g->f64) zgeqrf_(&m, &n, A, &m, A, W, &q, &info);
    else cgeqrf_(&m, &n, A, &m, A, W, &q, &info);
    need = g->f64 ? zw[0] : cw[0];
    break;
  case FT_P_ORMQR: {
    ft_lapack_int cm = (ft_lapack_int)g->ucols, cn = (ft_lapack_int)g->vrows;
    const char *side = g->left ? "L" : "R", *tr = g->trans ? "C" : "N";
    if (g->f64) zunmqr_(side, tr, &cm, &cn, &k, A, &m, A, A, &cm, W, &q, &info, 1, 1);
    else cunmqr_(side, tr, &cm, &cn, &k, A, &m, A, A, &cm, W, &q, &info, 1, 1);
    need = g->f64 ? zw[0] : cw[0];
    break;
  }
  default: return false;
  }
  if (info != 0 || !(need >= 0) || need > INT_MAX / 4 || rneed > INT_MAX / 4 || ineed > INT_MAX / 4)
    return false;
  g->lwork = (ft_lapack_int)need + 16;
  g->lrwork = (ft_lapack_int)rneed + 16;
  g->liwork = ineed < 1 ? 1 : (ft_lapack_int)ineed;
  return true;
}

/* Reads e against the operand's aval into g; errors on ctx (may be NULL). */
static ft_status sp_geometry(ft_ctx *ctx, const ft_eqn *e, const ft_aval *a, sp_geom *g) {
  const char *name = ft_prim_get(e->prim)->name;
  memset(g, 0, sizeof *g);
  g->p = e->prim;
  g->cpx = a->dtype == FT_C64 || a->dtype == FT_C128;
  g->nres = e->n_out;
  if (!g->cpx && a->dtype != FT_F32 && a->dtype != FT_F64)
    return ft_set_error(ctx, FT_ERR_TYPE, "%s: operand dtype %s (expects f32, f64, c64 or c128)", name,
                        ft_dtype_name(a->dtype));
  if (a->rank < 2) return ft_set_error(ctx, FT_ERR_SHAPE, "%s: operand must have rank >= 2", name);
  g->f64 = a->dtype == FT_F64 || a->dtype == FT_C128;
  g->m = a->dims[a->rank - 2], g->n = a->dims[a->rank - 1];
  g->k = g->m < g->n ? g->m : g->n;
  g->batch = 1;
  for (int d = 0; d < a->rank - 2; d++) g->batch *= a->dims[d];
  switch (e->prim) {
  case FT_P_EIGH:
    if (g->m != g->n) return ft_set_error(ctx, FT_ERR_SHAPE, "eigh: operand must be square");
    g->lower = ft_param_bool(e, "lower", true);
    if (e->n_out != 2) return ft_set_error(ctx, FT_ERR_TYPE, "eigh: expects 2 results");
    break;
  case FT_P_SVD:
    g->full = ft_param_bool(e, "full_matrices", true);
    g->uv = ft_param_bool(e, "compute_uv", true);
    g->ucols = g->full ? g->m : g->k;
    g->vrows = g->full ? g->n : g->k;
    if (e->n_out != (g->uv ? 3 : 1))
      return ft_set_error(ctx, FT_ERR_TYPE, "svd: expects %d results", g->uv ? 3 : 1);
    break;
  case FT_P_EIG:
    if (g->m != g->n) return ft_set_error(ctx, FT_ERR_SHAPE, "eig: operand must be square");
    g->left = ft_param_bool(e, "compute_left_eigenvectors", false);
    g->right = ft_param_bool(e, "compute_right_eigenvectors", true);
    if (e->n_out != 1 + g->left + g->right)
      return ft_set_error(ctx, FT_ERR_TYPE, "eig: expects %d results", 1 + g->left + g->right);
    break;
  case FT_P_SCHUR: case FT_P_HESSENBERG: case FT_P_TRIDIAGONAL: {
    int want = 2;
    if (g->m != g->n) return ft_set_error(ctx, FT_ERR_SHAPE, "%s: operand must be square", name);
    if (e->prim == FT_P_SCHUR) {
      if (ft_param_bool(e, "sort_eig_vals", false))
        return ft_set_error(ctx, FT_ERR_UNSUPPORTED,
                            "schur: sort_eig_vals=True (JAX's CPU lowering refuses it too)");
      g->uv = ft_param_bool(e, "compute_schur_vectors", true);
      want = g->uv ? 2 : 1;
    }
    if (e->prim == FT_P_TRIDIAGONAL) {
      g->lower = ft_param_bool(e, "lower", true);
      want = 4;
    }
    if (e->n_out != want) return ft_set_error(ctx, FT_ERR_TYPE, "%s: expects %d results", name, want);
    break;
  }
  case FT_P_HOUSEHOLDER_PRODUCT: {
    const ft_aval *t = e->n_in == 2 ? &e->in[1]->aval : NULL;
    if (!t || t->rank != a->rank - 1 || t->dtype != a->dtype || g->m < g->n ||
        t->dims[t->rank - 1] > g->n)
      return ft_set_error(ctx, FT_ERR_SHAPE, "householder_product: bad operands");
    g->k = t->dims[t->rank - 1];
    break;
  }
  case FT_P_GEQRF:
    if (e->n_out != 2) return ft_set_error(ctx, FT_ERR_TYPE, "geqrf: expects 2 results");
    break;
  case FT_P_ORMQR: {
    const ft_aval *t = e->n_in == 3 ? &e->in[1]->aval : NULL, *c = e->n_in == 3 ? &e->in[2]->aval : NULL;
    if (!t || t->rank != a->rank - 1 || c->rank != a->rank || t->dtype != a->dtype || c->dtype != a->dtype ||
        t->dims[t->rank - 1] > g->k || e->n_out != 1)
      return ft_set_error(ctx, FT_ERR_SHAPE, "ormqr: bad operands");
    g->left = ft_param_bool(e, "left", true);
    g->trans = ft_param_bool(e, "transpose", false);
    g->ucols = c->dims[c->rank - 2], g->vrows = c->dims[c->rank - 1]; /* c's rows and columns */
    if ((g->left ? g->ucols : g->vrows) != g->m)
      return ft_set_error(ctx, FT_ERR_SHAPE, "ormqr: c's %s must be a's rows", g->left ? "rows" : "columns");
    g->k = t->dims[t->rank - 1];
    if (g->ucols == 0 || g->vrows == 0) g->m = 0; /* nothing to multiply: no LAPACK call */
    break;
  }
  case FT_P_QR:
    g->pivot = ft_param_bool(e, "pivoting", false);
    g->full = ft_param_bool(e, "full_matrices", false);
    g->ucols = g->full ? g->m : g->k;
    if (e->n_out != (g->pivot ? 3 : 2))
      return ft_set_error(ctx, FT_ERR_TYPE, "qr: expects %d results", g->pivot ? 3 : 2);
    break;
  default: return ft_set_error(ctx, FT_ERR_INTERNAL, "%s: not a spectral primitive", name);
  }
  if (!sp_query(g))
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED,
                        "%s: a %lld x %lld matrix is too large for LAPACK's 32-bit sizes", name,
                        (long long)g->m, (long long)g->n);
  return FT_OK;
}

/* Scratch layout (each part 64-byte aligned from an aligned base). */
typedef struct sp_parts {
  size_t a, u, vt, tau, w, work, iwork, rwork, end;
} sp_parts;

static sp_parts sp_layout(const sp_geom *g) {
  size_t rs = g->f64 ? sizeof(double) : sizeof(float), es = g->cpx ? 2 * rs : rs, off = 0;
  sp_parts P;
#define PART(f, bytes) (P.f = off, off += sp_round(bytes))
  PART(a, (size_t)(g->m * g->n) * es);
  bool svd_uv = g->p == FT_P_SVD && g->uv;
  /* schur: vt holds VS, tau wr, w wi; hessenberg/tridiagonal: tau their
   * taus, w tridiagonal's d, u its e */
  bool eig = g->p == FT_P_EIG || g->p == FT_P_SCHUR || g->p == FT_P_HESSENBERG ||
             g->p == FT_P_TRIDIAGONAL;
  /* eig: u holds VL, vt VR, tau wr, w wi */
  PART(u, (size_t)(svd_uv || g->p == FT_P_QR ? g->m * g->ucols
                   : g->p == FT_P_ORMQR          ? g->ucols * g->vrows
                   : eig                         ? g->n * g->n
                                                 : 0) * es);
  PART(vt, (size_t)(svd_uv || eig ? (eig ? g->n : g->vrows) * g->n : 0) * es);
  PART(tau, (size_t)(eig ? g->n : g->k) * es);
  PART(w, (size_t)(g->p == FT_P_EIGH || eig ? g->n : g->k) * es);
  PART(work, (size_t)g->lwork * es);
  PART(iwork, (size_t)g->liwork * sizeof(ft_lapack_int));
  PART(rwork, (size_t)g->lrwork * rs);
#undef PART
  P.end = off;
  return P;
}

static size_t sp_scratch_bytes(const sp_geom *g) { return sp_layout(g).end + SP_ALIGN; }

/* Stores v in element i of either precision. */
static void st(void *p, bool f64, int64_t i, double v) {
  if (f64) ((double *)p)[i] = v;
  else ((float *)p)[i] = (float)v;
}
/* Copies elements (exact: f32 values go through double unchanged). */
static void cp(void *dst, int64_t di, const void *src, int64_t si, bool f64) {
  if (f64) ((double *)dst)[di] = ((const double *)src)[si];
  else ((float *)dst)[di] = ((const float *)src)[si];
}

/* Row-major r x c (src) into column-major (dst, ld = r), and back. */
static void to_cm(void *dst, const void *src, int64_t r, int64_t c, bool f64) {
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++) cp(dst, i + j * r, src, i * c + j, f64);
}
static void from_cm(void *dst, const void *src, int64_t r, int64_t c, int64_t ldc, bool f64) {
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++) cp(dst, i * c + j, src, i + j * ldc, f64);
}

static void fill(void *p, bool f64, int64_t n, double v) {
  for (int64_t i = 0; i < n; i++) st(p, f64, i, v);
}

/* An r x c identity (row-major). */
static void eye(void *p, bool f64, int64_t r, int64_t c) {
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++) st(p, f64, i * c + j, i == j ? 1.0 : 0.0);
}

static char *off_ptr(char *base, size_t off) { return base + off; }

static ft_lapack_int eigh_one(const sp_geom *g, char *S, const sp_parts *P, const void *a,
                              void *v, void *w) {
  ft_lapack_int n = (ft_lapack_int)g->n, info = 0, lw = g->lwork, liw = g->liwork;
  void *A = off_ptr(S, P->a), *work = off_ptr(S, P->work);
  ft_lapack_int *iwork = (ft_lapack_int *)(void *)off_ptr(S, P->iwork);
  const char *uplo = g->lower ? "L" : "U";
  to_cm(A, a, g->n, g->n, g->f64);
  if (g->f64) dsyevd_("V", uplo, &n, A, &n, w, work, &lw, iwork, &liw, &info, 1, 1);
  else ssyevd_("V", uplo, &n, A, &n, w, work, &lw, iwork, &liw, &info, 1, 1);
  if (info == 0) from_cm(v, A, g->n, g->n, g->n, g->f64);
  return info;
}

static ft_lapack_int svd_one(const sp_geom *g, char *S, const sp_parts *P, const void *a, void *s,
                             void *u, void *vt) {
  ft_lapack_int m = (ft_lapack_int)g->m, n = (ft_lapack_int)g->n, info = 0, lw = g->lwork;
  ft_lapack_int ldvt = g->vrows > 0 ? (ft_lapack_int)g->vrows : 1;
  void *A = off_ptr(S, P->a), *U = off_ptr(S, P->u), *VT = off_ptr(S, P->vt);
  void *work = off_ptr(S, P->work);
  ft_lapack_int *iwork = (ft_lapack_int *)(void *)off_ptr(S, P->iwork);
  const char *jobz = !g->uv ? "N" : g->full ? "A" : "S";
  to_cm(A, a, g->m, g->n, g->f64);
  if (g->f64) dgesdd_(jobz, &m, &n, A, &m, s, U, &m, VT, &ldvt, work, &lw, iwork, &info, 1);
  else sgesdd_(jobz, &m, &n, A, &m, s, U, &m, VT, &ldvt, work, &lw, iwork, &info, 1);
  if (info == 0 && g->uv) {
    from_cm(u, U, g->m, g->ucols, g->m, g->f64);
    from_cm(vt, VT, g->vrows, g->n, g->vrows, g->f64);
  }
  return info;
}

/* JAX's _qr_lowering: geqrf, then orgqr on the reflectors laid out as an
 * m x ucols matrix (the first columns of geqrf's result, zero-padded). */
static ft_lapack_int qr_one(const sp_geom *g, char *S, const sp_parts *P, const void *a, void *q,
                            void *r, int32_t *piv) {
  ft_lapack_int m = (ft_lapack_int)g->m, n = (ft_lapack_int)g->n, k = (ft_lapack_int)g->k;
  ft_lapack_int qc = (ft_lapack_int)g->ucols, info = 0, lw = g->lwork;
  void *A = off_ptr(S, P->a), *Q = off_ptr(S, P->u), *tau = off_ptr(S, P->tau);
  void *work = off_ptr(S, P->work);
  bool f = g->f64;
  to_cm(A, a, g->m, g->n, f);
  if (g->pivot) { /* JAX's _qr_lowering: geqp3 with every column free, p = jpvt - 1 */
    ft_lapack_int *jpvt = (ft_lapack_int *)(void *)off_ptr(S, P->iwork);
    for (int64_t j = 0; j < g->n; j++) jpvt[j] = 0;
    if (f) dgeqp3_(&m, &n, A, &m, jpvt, tau, work, &lw, &info);
    else sgeqp3_(&m, &n, A, &m, jpvt, tau, work, &lw, &info);
    for (int64_t j = 0; j < g->n; j++) piv[j] = info == 0 ? jpvt[j] - 1 : 0;
  } else if (f) {
    dgeqrf_(&m, &n, A, &m, tau, work, &lw, &info);
  } else {
    sgeqrf_(&m, &n, A, &m, tau, work, &lw, &info);
  }
  if (info != 0) return info;
  int64_t rrows = g->full ? g->m : g->k;
  for (int64_t i = 0; i < rrows; i++)
    for (int64_t j = 0; j < g->n; j++) {
      if (i <= j) cp(r, i * g->n + j, A, i + j * g->m, f);
      else st(r, f, i * g->n + j, 0.0);
    }
  int64_t copy = g->ucols < g->n ? g->ucols : g->n;
  memcpy(Q, A, (size_t)(g->m * copy) * (f ? sizeof(double) : sizeof(float)));
  fill((char *)Q + (size_t)(g->m * copy) * (f ? sizeof(double) : sizeof(float)), f,
       g->m * (g->ucols - copy), 0.0);
  if (f) dorgqr_(&m, &qc, &k, Q, &m, tau, work, &lw, &info);
  else sorgqr_(&m, &qc, &k, Q, &m, tau, work, &lw, &info);
  if (info == 0) from_cm(q, Q, g->m, g->ucols, g->m, f);
  return info;
}

/* Element i of a real array of either precision. */
static double ld(const void *p, bool f64, int64_t i) {
  return f64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

/* Complex element i (re, im) of a c64 (f64 false) or c128 array. */
static void stc(void *p, bool f64, int64_t i, double re, double im) {
  st(p, f64, 2 * i, re);
  st(p, f64, 2 * i + 1, im);
}

/* LAPACK's real eigenvectors (column-major n x n V) to complex row-major
 * out: a real w[j] (wi == 0) has column j; a pair (wi[j] > 0 then its
 * conjugate) has re = column j, im = +/- column j+1. */
static void unpack_vectors(void *out, const void *V, const void *wi, int64_t n, bool f) {
  for (int64_t j = 0; j < n; j++) {
    bool pair = ld(wi, f, j) != 0 && j + 1 < n;
    for (int64_t i = 0; i < n; i++) {
      double re = ld(V, f, i + j * n), im = pair ? ld(V, f, i + (j + 1) * n) : 0.0;
      stc(out, f, i * n + j, re, im);
      if (pair) stc(out, f, i * n + j + 1, re, -im);
    }
    if (pair) j++;
  }
}

static ft_lapack_int eig_one(const sp_geom *g, char *S, const sp_parts *P, const void *a, void *w,
                             void *vl, void *vr) {
  ft_lapack_int n = (ft_lapack_int)g->n, info = 0, lw = g->lwork;
  void *A = off_ptr(S, P->a), *VL = off_ptr(S, P->u), *VR = off_ptr(S, P->vt);
  void *wr = off_ptr(S, P->tau), *wi = off_ptr(S, P->w), *work = off_ptr(S, P->work);
  const char *jl = g->left ? "V" : "N", *jr = g->right ? "V" : "N";
  bool f = g->f64;
  to_cm(A, a, g->n, g->n, f);
  if (f) dgeev_(jl, jr, &n, A, &n, wr, wi, VL, &n, VR, &n, work, &lw, &info, 1, 1);
  else sgeev_(jl, jr, &n, A, &n, wr, wi, VL, &n, VR, &n, work, &lw, &info, 1, 1);
  if (info != 0) return info;
  for (int64_t j = 0; j < g->n; j++) stc(w, f, j, ld(wr, f, j), ld(wi, f, j));
  if (g->left) unpack_vectors(vl, VL, wi, g->n, f);
  if (g->right) unpack_vectors(vr, VR, wi, g->n, f);
  return 0;
}

/* schur, hessenberg, tridiagonal: the packed matrix comes back in a, the
 * other results in order (schur: vs; hessenberg: taus; tridiagonal: d, e,
 * taus). */
static ft_lapack_int reduce_one(const sp_geom *g, char *S, const sp_parts *P, const void *a,
                                ft_array *const *out, int64_t b) {
  ft_lapack_int n = (ft_lapack_int)g->n, info = 0, lw = g->lwork, one = 1, sdim = 0;
  void *A = off_ptr(S, P->a), *VS = off_ptr(S, P->vt), *tau = off_ptr(S, P->tau);
  void *wi = off_ptr(S, P->w), *e = off_ptr(S, P->u), *work = off_ptr(S, P->work);
  bool f = g->f64;
  size_t es = f ? sizeof(double) : sizeof(float);
  int64_t nn = g->n * g->n, n1 = g->n - 1;
  to_cm(A, a, g->n, g->n, f);
  switch (g->p) {
  case FT_P_SCHUR: {
    const char *jv = g->uv ? "V" : "N";
    if (f) dgees_(jv, "N", NULL, &n, A, &n, &sdim, tau, wi, VS, &n, work, &lw, NULL, &info, 1, 1);
    else sgees_(jv, "N", NULL, &n, A, &n, &sdim, tau, wi, VS, &n, work, &lw, NULL, &info, 1, 1);
    if (info) return info;
    if (g->uv) from_cm((char *)out[1]->data + (size_t)(b * nn) * es, VS, g->n, g->n, g->n, f);
    break;
  }
  case FT_P_HESSENBERG:
    if (f) dgehrd_(&n, &one, &n, A, &n, tau, work, &lw, &info);
    else sgehrd_(&n, &one, &n, A, &n, tau, work, &lw, &info);
    if (info) return info;
    memcpy((char *)out[1]->data + (size_t)(b * n1) * es, tau, (size_t)n1 * es);
    break;
  default: /* tridiagonal */
    if (f) dsytrd_(g->lower ? "L" : "U", &n, A, &n, wi, e, tau, work, &lw, &info, 1);
    else ssytrd_(g->lower ? "L" : "U", &n, A, &n, wi, e, tau, work, &lw, &info, 1);
    if (info) return info;
    memcpy((char *)out[1]->data + (size_t)(b * g->n) * es, wi, (size_t)g->n * es);
    memcpy((char *)out[2]->data + (size_t)(b * n1) * es, e, (size_t)n1 * es);
    memcpy((char *)out[3]->data + (size_t)(b * n1) * es, tau, (size_t)n1 * es);
    break;
  }
  from_cm((char *)out[0]->data + (size_t)(b * nn) * es, A, g->n, g->n, g->n, f);
  return 0;
}

/* ---- complex operands (eigh of a Hermitian matrix, svd, qr): the same
 * calls as the real ones with ?heevd, ?gesdd (complex) and ?geqrf + ?ungqr,
 * elements of es bytes moved whole. */
static void to_cm_es(char *dst, const char *src, int64_t r, int64_t c, size_t es) {
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++) memcpy(dst + (size_t)(i + j * r) * es, src + (size_t)(i * c + j) * es, es);
}
static void from_cm_es(char *dst, const char *src, int64_t r, int64_t c, int64_t ldc, size_t es) {
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++) memcpy(dst + (size_t)(i * c + j) * es, src + (size_t)(i + j * ldc) * es, es);
}

static ft_lapack_int cpx_one(const sp_geom *g, char *S, const sp_parts *P, const char *a,
                             ft_array *const *in, ft_array *const *out, int64_t b) {
  ft_lapack_int m = (ft_lapack_int)g->m, n = (ft_lapack_int)g->n, k = (ft_lapack_int)g->k, info = 0;
  ft_lapack_int lw = g->lwork, lrw = g->lrwork, liw = g->liwork;
  bool f = g->f64;
  size_t rs = f ? sizeof(double) : sizeof(float), es = 2 * rs;
  char *A = S + P->a, *U = S + P->u, *VT = S + P->vt, *tau = S + P->tau;
  void *work = S + P->work, *rwork = S + P->rwork;
  ft_lapack_int *iwork = (ft_lapack_int *)(void *)(S + P->iwork);
  to_cm_es(A, a, g->m, g->n, es);
  switch (g->p) {
  case FT_P_EIGH: {
    char *v = (char *)out[0]->data + (size_t)(b * g->n * g->n) * es;
    char *w = (char *)out[1]->data + (size_t)(b * g->n) * rs;
    const char *uplo = g->lower ? "L" : "U";
    if (f) zheevd_("V", uplo, &n, (void *)A, &n, (void *)w, work, &lw, rwork, &lrw, iwork, &liw, &info, 1, 1);
    else cheevd_("V", uplo, &n, (void *)A, &n, (void *)w, work, &lw, rwork, &lrw, iwork, &liw, &info, 1, 1);
    if (info == 0) from_cm_es(v, A, g->n, g->n, g->n, es);
    return info;
  }
  case FT_P_SVD: {
    ft_lapack_int ldvt = g->vrows > 0 ? (ft_lapack_int)g->vrows : 1;
    const char *jobz = !g->uv ? "N" : g->full ? "A" : "S";
    char *s = (char *)out[0]->data + (size_t)(b * g->k) * rs;
    if (f) zgesdd_(jobz, &m, &n, (void *)A, &m, (void *)s, (void *)U, &m, (void *)VT, &ldvt, work, &lw, rwork, iwork, &info, 1);
    else cgesdd_(jobz, &m, &n, (void *)A, &m, (void *)s, (void *)U, &m, (void *)VT, &ldvt, work, &lw, rwork, iwork, &info, 1);
    if (info == 0 && g->uv) {
      from_cm_es((char *)out[1]->data + (size_t)(b * g->m * g->ucols) * es, U, g->m, g->ucols, g->m, es);
      from_cm_es((char *)out[2]->data + (size_t)(b * g->vrows * g->n) * es, VT, g->vrows, g->n, g->vrows, es);
    }
    return info;
  }
  case FT_P_EIG: { /* ?geev on complex: w and the vectors come back complex */
    char *w = (char *)out[0]->data + (size_t)(b * g->n) * es;
    char *vl = g->left ? (char *)out[1]->data + (size_t)(b * g->n * g->n) * es : NULL;
    char *vr = g->right ? (char *)out[1 + g->left]->data + (size_t)(b * g->n * g->n) * es : NULL;
    const char *jl = g->left ? "V" : "N", *jr = g->right ? "V" : "N";
    if (f) zgeev_(jl, jr, &n, (void *)A, &n, (void *)w, (void *)U, &n, (void *)VT, &n, work, &lw, rwork, &info, 1, 1);
    else cgeev_(jl, jr, &n, (void *)A, &n, (void *)w, (void *)U, &n, (void *)VT, &n, work, &lw, rwork, &info, 1, 1);
    if (info == 0 && vl) from_cm_es(vl, U, g->n, g->n, g->n, es);
    if (info == 0 && vr) from_cm_es(vr, VT, g->n, g->n, g->n, es);
    return info;
  }
  case FT_P_SCHUR: { /* ?gees: t upper triangular (complex Schur form), vs unitary */
    ft_lapack_int sdim = 0;
    const char *jv = g->uv ? "V" : "N";
    char *w = S + P->w;
    if (f) zgees_(jv, "N", NULL, &n, (void *)A, &n, &sdim, (void *)w, (void *)VT, &n, work, &lw, rwork, NULL, &info, 1, 1);
    else cgees_(jv, "N", NULL, &n, (void *)A, &n, &sdim, (void *)w, (void *)VT, &n, work, &lw, rwork, NULL, &info, 1, 1);
    if (info) return info;
    from_cm_es((char *)out[0]->data + (size_t)(b * g->n * g->n) * es, A, g->n, g->n, g->n, es);
    if (g->uv) from_cm_es((char *)out[1]->data + (size_t)(b * g->n * g->n) * es, VT, g->n, g->n, g->n, es);
    return 0;
  }
  case FT_P_HESSENBERG: { /* ?gehrd, ilo = 1, ihi = n: packed result and n-1 taus */
    ft_lapack_int one = 1;
    int64_t n1 = g->n - 1;
    if (f) zgehrd_(&n, &one, &n, (void *)A, &n, (void *)tau, work, &lw, &info);
    else cgehrd_(&n, &one, &n, (void *)A, &n, (void *)tau, work, &lw, &info);
    if (info) return info;
    from_cm_es((char *)out[0]->data + (size_t)(b * g->n * g->n) * es, A, g->n, g->n, g->n, es);
    memcpy((char *)out[1]->data + (size_t)(b * n1) * es, tau, (size_t)n1 * es);
    return 0;
  }
  case FT_P_TRIDIAGONAL: { /* ?hetrd: packed result, d and e real, n-1 taus */
    int64_t n1 = g->n - 1;
    char *d = S + P->w, *e = U;
    if (f) zhetrd_(g->lower ? "L" : "U", &n, (void *)A, &n, (void *)d, (void *)e, (void *)tau, work, &lw, &info, 1);
    else chetrd_(g->lower ? "L" : "U", &n, (void *)A, &n, (void *)d, (void *)e, (void *)tau, work, &lw, &info, 1);
    if (info) return info;
    from_cm_es((char *)out[0]->data + (size_t)(b * g->n * g->n) * es, A, g->n, g->n, g->n, es);
    memcpy((char *)out[1]->data + (size_t)(b * g->n) * rs, d, (size_t)g->n * rs);
    memcpy((char *)out[2]->data + (size_t)(b * n1) * rs, e, (size_t)n1 * rs);
    memcpy((char *)out[3]->data + (size_t)(b * n1) * es, tau, (size_t)n1 * es);
    return 0;
  }
  case FT_P_HOUSEHOLDER_PRODUCT: { /* ?ungqr on a (m x n) with the k taus of operand 2 */
    const char *t = (const char *)in[1]->data + (size_t)(b * g->k) * es;
    if (f) zungqr_(&m, &n, &k, (void *)A, &m, (const void *)t, work, &lw, &info);
    else cungqr_(&m, &n, &k, (void *)A, &m, (const void *)t, work, &lw, &info);
    if (info == 0) from_cm_es((char *)out[0]->data + (size_t)(b * g->m * g->n) * es, A, g->m, g->n, g->m, es);
    return info;
  }
  default: { /* qr, as qr_one */
    ft_lapack_int qc = (ft_lapack_int)g->ucols;
    int64_t rrows = g->full ? g->m : g->k;
    char *q = (char *)out[0]->data + (size_t)(b * g->m * g->ucols) * es;
    char *r = (char *)out[1]->data + (size_t)(b * rrows * g->n) * es;
    if (g->pivot) {
      int32_t *piv = (int32_t *)out[2]->data + b * g->n;
      for (int64_t j = 0; j < g->n; j++) iwork[j] = 0;
      if (f) zgeqp3_(&m, &n, (void *)A, &m, iwork, (void *)tau, work, &lw, rwork, &info);
      else cgeqp3_(&m, &n, (void *)A, &m, iwork, (void *)tau, work, &lw, rwork, &info);
      for (int64_t j = 0; j < g->n; j++) piv[j] = info == 0 ? iwork[j] - 1 : 0;
    } else if (f) {
      zgeqrf_(&m, &n, (void *)A, &m, (void *)tau, work, &lw, &info);
    } else {
      cgeqrf_(&m, &n, (void *)A, &m, (void *)tau, work, &lw, &info);
    }
    if (info != 0) return info;
    for (int64_t i = 0; i < rrows; i++)
      for (int64_t j = 0; j < g->n; j++) {
        char *d = r + (size_t)(i * g->n + j) * es;
        if (i <= j) memcpy(d, A + (size_t)(i + j * g->m) * es, es);
        else fill(d, f, 2, 0.0);
      }
    int64_t copy = g->ucols < g->n ? g->ucols : g->n;
    memcpy(U, A, (size_t)(g->m * copy) * es);
    fill(U + (size_t)(g->m * copy) * es, f, 2 * g->m * (g->ucols - copy), 0.0);
    if (f) zungqr_(&m, &qc, &k, (void *)U, &m, (void *)tau, work, &lw, &info);
    else cungqr_(&m, &qc, &k, (void *)U, &m, (void *)tau, work, &lw, &info);
    if (info == 0) from_cm_es(q, U, g->m, g->ucols, g->m, es);
    return info;
  }
  }
}

/* The batch loop of complex operands; failures and empty matrices as the
 * real loop writes them (NaN + NaN i, identities, zeros). */
static void cpx_batch(const sp_geom *g, char *S, const sp_parts *P, ft_array *const *in,
                      ft_array *const *out) {
  bool f = g->f64;
  size_t rs = f ? sizeof(double) : sizeof(float), es = 2 * rs;
  int64_t m = g->m, n = g->n, k = g->k;
  for (int64_t b = 0; b < g->batch; b++) {
    const char *a = (const char *)in[0]->data + (size_t)(b * m * n) * es;
    ft_lapack_int info = 0;
    if (g->p == FT_P_SVD && k == 0) {
      if (g->uv) {
        char *u = (char *)out[1]->data + (size_t)(b * m * g->ucols) * es;
        char *vt = (char *)out[2]->data + (size_t)(b * g->vrows * n) * es;
        fill(u, f, 2 * m * g->ucols, 0.0), fill(vt, f, 2 * g->vrows * n, 0.0);
        for (int64_t i = 0; i < m && i < g->ucols; i++) st(u, f, 2 * (i * g->ucols + i), 1.0);
        for (int64_t i = 0; i < g->vrows && i < n; i++) st(vt, f, 2 * (i * n + i), 1.0);
      }
      continue;
    }
    if (g->p == FT_P_QR && k == 0) {
      int64_t rrows = g->full ? m : k;
      char *q = (char *)out[0]->data + (size_t)(b * m * g->ucols) * es;
      fill(q, f, 2 * m * g->ucols, 0.0);
      for (int64_t i = 0; i < m && i < g->ucols; i++) st(q, f, 2 * (i * g->ucols + i), 1.0);
      fill((char *)out[1]->data + (size_t)(b * rrows * n) * es, f, 2 * rrows * n, 0.0);
      if (g->pivot) memset((int32_t *)out[2]->data + b * n, 0, sizeof(int32_t) * (size_t)n);
      continue;
    }
    if (n == 0) continue; /* eigh, eig, schur, hessenberg, householder_product: nothing to write */
    info = cpx_one(g, S, P, a, in, out, b);
    if (info)
      for (int o = 0; o < g->nres; o++) {
        int64_t per = ft_aval_size(&out[o]->aval) / g->batch;
        bool c = ft_dtype_is_complex(out[o]->aval.dtype);
        fill((char *)out[o]->data + (size_t)(b * per) * (c ? es : rs), f, c ? 2 * per : per, NAN);
      }
  }
}

/* geqrf (LAPACK's packed result and taus, as JAX's geqrf) and ormqr (Q c,
 * Q^T c, c Q, c Q^T; Q^H for complex), real or complex, member by member.
 * An empty operand leaves the results as the shape makes them (geqrf of
 * an empty matrix has nothing to write; ormqr of one copies c). */
static void qrx_batch(const sp_geom *g, char *S, const sp_parts *P, ft_array *const *in,
                      ft_array *const *out) {
  bool f = g->f64, z = g->cpx;
  size_t rs = f ? sizeof(double) : sizeof(float), es = z ? 2 * rs : rs;
  ft_lapack_int m = (ft_lapack_int)g->m, n = (ft_lapack_int)g->n, k = (ft_lapack_int)g->k, info = 0;
  ft_lapack_int lw = g->lwork, cm = (ft_lapack_int)g->ucols, cn = (ft_lapack_int)g->vrows;
  char *A = S + P->a, *C = S + P->u, *tau = S + P->tau;
  void *work = S + P->work;
  int64_t an = g->m * g->n, cnn = g->ucols * g->vrows;
  const ft_aval *ta = g->p == FT_P_ORMQR ? &in[1]->aval : &out[1]->aval;
  int64_t tk = ta->dims[ta->rank - 1];
  for (int64_t b = 0; b < g->batch; b++) {
    const char *a = (const char *)in[0]->data + (size_t)(b * (g->p == FT_P_ORMQR ? in[0]->aval.dims[in[0]->aval.rank - 2] * in[0]->aval.dims[in[0]->aval.rank - 1] : an)) * es;
    if (g->p == FT_P_GEQRF) {
      if (an == 0) continue;
      to_cm_es(A, a, g->m, g->n, es);
      if (z && f) zgeqrf_(&m, &n, (void *)A, &m, (void *)tau, work, &lw, &info);
      else if (z) cgeqrf_(&m, &n, (void *)A, &m, (void *)tau, work, &lw, &info);
      else if (f) dgeqrf_(&m, &n, (void *)A, &m, (void *)tau, work, &lw, &info);
      else sgeqrf_(&m, &n, (void *)A, &m, (void *)tau, work, &lw, &info);
      from_cm_es((char *)out[0]->data + (size_t)(b * an) * es, A, g->m, g->n, g->m, es);
      memcpy((char *)out[1]->data + (size_t)(b * tk) * es, tau, (size_t)tk * es);
      continue;
    }
    const char *c = (const char *)in[2]->data + (size_t)(b * cnn) * es;
    char *o = (char *)out[0]->data + (size_t)(b * cnn) * es;
    if (g->m == 0 || k == 0) {
      memcpy(o, c, (size_t)cnn * es); /* no reflectors: Q = I */
      continue;
    }
    const char *t = (const char *)in[1]->data + (size_t)(b * tk) * es;
    const ft_aval *aa = &in[0]->aval;
    int64_t am = aa->dims[aa->rank - 2], ac = aa->dims[aa->rank - 1];
    ft_lapack_int lda = (ft_lapack_int)am;
    to_cm_es(A, a, am, ac, es);
    to_cm_es(C, c, g->ucols, g->vrows, es);
    const char *side = g->left ? "L" : "R", *tr = !g->trans ? "N" : z ? "C" : "T";
    if (z && f) zunmqr_(side, tr, &cm, &cn, &k, (void *)A, &lda, (const void *)t, (void *)C, &cm, work, &lw, &info, 1, 1);
    else if (z) cunmqr_(side, tr, &cm, &cn, &k, (void *)A, &lda, (const void *)t, (void *)C, &cm, work, &lw, &info, 1, 1);
    else if (f) dormqr_(side, tr, &cm, &cn, &k, (void *)A, &lda, (const void *)t, (void *)C, &cm, work, &lw, &info, 1, 1);
    else sormqr_(side, tr, &cm, &cn, &k, (void *)A, &lda, (const void *)t, (void *)C, &cm, work, &lw, &info, 1, 1);
    from_cm_es(o, C, g->ucols, g->vrows, g->ucols, es);
  }
}

ft_status ft_spectral_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                           ft_array *const *out, void *scratch) {
  int want_in = e->prim == FT_P_HOUSEHOLDER_PRODUCT ? 2 : e->prim == FT_P_ORMQR ? 3 : 1;
  if (e->n_in != want_in)
    return ft_set_error(ctx, FT_ERR_TYPE, "%s: expects %d operand(s)", ft_prim_get(e->prim)->name,
                        want_in);
  sp_geom g;
  ft_status s0 = sp_geometry(ctx, e, &in[0]->aval, &g);
  if (s0 || !out) return s0;
  bool f = g.f64;
  size_t es = f ? sizeof(double) : sizeof(float);
  if (!scratch) /* the caller must give ft_spectral_scratch(e) bytes */
    return ft_set_error(ctx, FT_ERR_INTERNAL, "%s: no scratch", ft_prim_get(e->prim)->name);
  char *S = (char *)(((uintptr_t)scratch + SP_ALIGN - 1) / SP_ALIGN * SP_ALIGN);
  sp_parts P = sp_layout(&g);
  int64_t m = g.m, n = g.n, k = g.k;
  ft_blas_single_thread();
  if (!ft_blas_enter()) return ft_blas_nomem(ctx);
  if (g.p == FT_P_GEQRF || g.p == FT_P_ORMQR) {
    qrx_batch(&g, S, &P, in, out);
    ft_blas_leave();
    return FT_OK;
  }
  if (g.cpx) {
    cpx_batch(&g, S, &P, in, out);
    ft_blas_leave();
    return FT_OK;
  }
  for (int64_t b = 0; b < g.batch; b++) {
    const char *a = (const char *)in[0]->data + (size_t)(b * m * n) * es;
    ft_lapack_int info = 0;
    switch (g.p) {
    case FT_P_EIGH: {
      char *v = (char *)out[0]->data + (size_t)(b * n * n) * es;
      char *w = (char *)out[1]->data + (size_t)(b * n) * es;
      if (n > 0) info = eigh_one(&g, S, &P, a, v, w);
      if (info) fill(v, f, n * n, NAN), fill(w, f, n, NAN);
      break;
    }
    case FT_P_SVD: {
      char *s = (char *)out[0]->data + (size_t)(b * k) * es;
      char *u = g.uv ? (char *)out[1]->data + (size_t)(b * m * g.ucols) * es : NULL;
      char *vt = g.uv ? (char *)out[2]->data + (size_t)(b * g.vrows * n) * es : NULL;
      if (k == 0) { /* JAX's _empty_svd: identities of the requested shapes */
        if (g.uv) eye(u, f, m, g.ucols), eye(vt, f, g.vrows, n);
        break;
      }
      info = svd_one(&g, S, &P, a, s, u, vt);
      if (info) {
        fill(s, f, k, NAN);
        if (g.uv) fill(u, f, m * g.ucols, NAN), fill(vt, f, g.vrows * n, NAN);
      }
      break;
    }
    case FT_P_EIG: {
      char *w = (char *)out[0]->data + (size_t)(b * n) * 2 * es;
      char *vl = g.left ? (char *)out[1]->data + (size_t)(b * n * n) * 2 * es : NULL;
      char *vr = g.right ? (char *)out[1 + g.left]->data + (size_t)(b * n * n) * 2 * es : NULL;
      if (n > 0) info = eig_one(&g, S, &P, a, w, vl, vr);
      if (info) {
        fill(w, f, 2 * n, NAN);
        if (vl) fill(vl, f, 2 * n * n, NAN);
        if (vr) fill(vr, f, 2 * n * n, NAN);
      }
      break;
    }
    case FT_P_SCHUR: case FT_P_HESSENBERG: case FT_P_TRIDIAGONAL: {
      if (n > 0) info = reduce_one(&g, S, &P, a, out, b);
      if (info) /* every result of this member to NaN */
        for (int o = 0; o < e->n_out; o++) {
          int64_t per = ft_aval_size(&out[o]->aval) / g.batch;
          fill((char *)out[o]->data + (size_t)(b * per) * es, f, per, NAN);
        }
      break;
    }
    case FT_P_HOUSEHOLDER_PRODUCT: {
      ft_lapack_int mm = (ft_lapack_int)m, nn = (ft_lapack_int)n, kk = (ft_lapack_int)k;
      ft_lapack_int lw = g.lwork;
      void *A = S + P.a, *work = S + P.work;
      const char *tau = (const char *)in[1]->data + (size_t)(b * k) * es;
      char *q = (char *)out[0]->data + (size_t)(b * m * n) * es;
      if (n == 0) break;
      to_cm(A, a, m, n, f);
      if (f) dorgqr_(&mm, &nn, &kk, A, &mm, (const double *)(const void *)tau, work, &lw, &info);
      else sorgqr_(&mm, &nn, &kk, A, &mm, (const float *)(const void *)tau, work, &lw, &info);
      if (info) fill(q, f, m * n, NAN);
      else from_cm(q, A, m, n, m, f);
      break;
    }
    default: { /* qr */
      int64_t rrows = g.full ? m : k;
      char *q = (char *)out[0]->data + (size_t)(b * m * g.ucols) * es;
      char *r = (char *)out[1]->data + (size_t)(b * rrows * n) * es;
      int32_t *piv = g.pivot ? (int32_t *)out[2]->data + b * n : NULL;
      if (k == 0) { /* _qr_lowering: q = eye(m, k'), r = zeros, p = zeros */
        eye(q, f, m, g.ucols), fill(r, f, rrows * n, 0.0);
        if (piv) memset(piv, 0, sizeof *piv * (size_t)n);
        break;
      }
      info = qr_one(&g, S, &P, a, q, r, piv);
      if (info) fill(q, f, m * g.ucols, NAN), fill(r, f, rrows * n, NAN);
      break;
    }
    }
  }
  ft_blas_leave();
  return FT_OK;
}

size_t ft_spectral_scratch(const ft_eqn *e) {
  sp_geom g;
  if (e->n_in < 1 || sp_geometry(NULL, e, &e->in[0]->aval, &g)) return 0;
  return sp_scratch_bytes(&g);
}
