/* src/runtime/lapack.h: LAPACK for the linear-algebra primitives (issue 20),
 * and the shared machinery their rule bodies use.
 *
 * Which LAPACK: the Fortran entry points that Debian's OpenBLAS exports
 * from libopenblas itself (dpotrf_, sgeqrf_, ...; 0.3.21 builds LAPACK in,
 * so `dependency('openblas')` links them and no -dev package beyond
 * libopenblas-dev is needed). Debian ships LAPACKE only as a separate
 * package (liblapacke-dev) whose library calls liblapack.so.3 through the
 * alternatives system, which could resolve to reference LAPACK with
 * different bits; the Fortran symbols of the library we already link cannot.
 * meson.build checks at configure time that they are there.
 *
 * Calling convention (gfortran, LP64): every argument by pointer, INTEGER
 * and LOGICAL are `int`, and each CHARACTER argument adds a hidden length
 * (size_t) after all the others, in order. OpenBLAS's own C versions of
 * potrf/getrf/trsm ignore the hidden lengths; the reference-LAPACK ones it
 * bundles read them. Arrays are column-major: the rule bodies copy a
 * row-major matrix into 64-byte aligned column-major scratch
 * (ft_lapack_to_colmajor) and back.
 *
 * Determinism: ft_lapack_batch pins OpenBLAS to one thread before the
 * first call (the same pthread_once as the GEMMs, interp_linalg.c), and
 * LAPACK's blocking (ILAENV) depends on the shape only; workspace sizes are
 * queried (lwork = -1) from the shape and always passed whole, so a routine
 * never takes the unblocked path in one engine and the blocked one in the
 * other. The scratch every engine passes is aligned to 64 bytes by
 * ft_lapack_align, so OpenBLAS's kernels see the same alignment class.
 *
 * How a primitive is wired (the pattern both halves of issue 20 follow):
 *  - its rule body is an ft_rule_into_fn (runtime.h) checking e against the
 *    avals of in[] when out is NULL and computing into out[] with scratch
 *    of ft_linalg_rule_scratch(e) bytes otherwise;
 *  - ft_linalg_rule_into_for / ft_linalg_rule_scratch (lapack.c) name it;
 *    ft_rule_into_for / ft_rule_scratch (interp_shared.c) fall through to
 *    them, so the interpreter runs it through ft_interp_via_into and the
 *    JIT plans it as a FT_STEP_ROUTINE (src/lower/routines.c rule_accepts /
 *    run_rule) on views of its buffers: the same C, the same bits;
 *  - ft_linalg_writes_all(e) says the body writes every result even when
 *    a result is dropped (every multi-result body must, so the planner
 *    gives each a buffer);
 *  - the primitive's family in prims.def is FT_FAM_OTHER. */
#ifndef FT_RUNTIME_LAPACK_H
#define FT_RUNTIME_LAPACK_H

#include <complex.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime.h"

/* ================================================== Fortran entry points */
typedef float _Complex ft_lapack_c64;
typedef double _Complex ft_lapack_c128;
typedef size_t ft_lapack_len; /* the hidden length of a CHARACTER argument */
/* gees's SELECT argument (LOGICAL FUNCTION); unused with sort = 'N' */
typedef int (*ft_lapack_select2_s)(const float *re, const float *im);
typedef int (*ft_lapack_select2_d)(const double *re, const double *im);
typedef int (*ft_lapack_select1_c)(const ft_lapack_c64 *w);
typedef int (*ft_lapack_select1_z)(const ft_lapack_c128 *w);

/* Routines with the same signature for all four types (T: the element,
 * R: its real type). */
#define FT_LAPACK_ALL(p, T, R)                                                                  \
  void p##potrf_(const char *uplo, const int *n, T *a, const int *lda, int *info, ft_lapack_len); \
  void p##potrs_(const char *uplo, const int *n, const int *nrhs, const T *a, const int *lda,   \
                 T *b, const int *ldb, int *info, ft_lapack_len);                               \
  void p##trsm_(const char *side, const char *uplo, const char *transa, const char *diag,       \
                const int *m, const int *n, const T *alpha, const T *a, const int *lda, T *b,   \
                const int *ldb, ft_lapack_len, ft_lapack_len, ft_lapack_len, ft_lapack_len);    \
  void p##trtrs_(const char *uplo, const char *trans, const char *diag, const int *n,          \
                 const int *nrhs, const T *a, const int *lda, T *b, const int *ldb, int *info,  \
                 ft_lapack_len, ft_lapack_len, ft_lapack_len);                                  \
  void p##getrf_(const int *m, const int *n, T *a, const int *lda, int *ipiv, int *info);      \
  void p##getrs_(const char *trans, const int *n, const int *nrhs, const T *a, const int *lda, \
                 const int *ipiv, T *b, const int *ldb, int *info, ft_lapack_len);             \
  void p##geqrf_(const int *m, const int *n, T *a, const int *lda, T *tau, T *work,            \
                 const int *lwork, int *info);                                                  \
  void p##gehrd_(const int *n, const int *ilo, const int *ihi, T *a, const int *lda, T *tau,   \
                 T *work, const int *lwork, int *info);                                         \
  void p##gtsv_(const int *n, const int *nrhs, T *dl, T *d, T *du, T *b, const int *ldb,       \
                int *info);
FT_LAPACK_ALL(s, float, float)
FT_LAPACK_ALL(d, double, double)
FT_LAPACK_ALL(c, ft_lapack_c64, float)
FT_LAPACK_ALL(z, ft_lapack_c128, double)
#undef FT_LAPACK_ALL

/* Real types: orthogonal Q, symmetric eigen, real SVD/eig/Schur. */
#define FT_LAPACK_REAL(p, T)                                                                    \
  void p##orgqr_(const int *m, const int *n, const int *k, T *a, const int *lda, const T *tau, \
                 T *work, const int *lwork, int *info);                                         \
  void p##ormqr_(const char *side, const char *trans, const int *m, const int *n, const int *k, \
                 const T *a, const int *lda, const T *tau, T *c, const int *ldc, T *work,       \
                 const int *lwork, int *info, ft_lapack_len, ft_lapack_len);                    \
  void p##geqp3_(const int *m, const int *n, T *a, const int *lda, int *jpvt, T *tau, T *work, \
                 const int *lwork, int *info);                                                  \
  void p##syevd_(const char *jobz, const char *uplo, const int *n, T *a, const int *lda, T *w,  \
                 T *work, const int *lwork, int *iwork, const int *liwork, int *info,           \
                 ft_lapack_len, ft_lapack_len);                                                 \
  void p##sytrd_(const char *uplo, const int *n, T *a, const int *lda, T *d, T *e, T *tau,     \
                 T *work, const int *lwork, int *info, ft_lapack_len);                          \
  void p##gesdd_(const char *jobz, const int *m, const int *n, T *a, const int *lda, T *s,     \
                 T *u, const int *ldu, T *vt, const int *ldvt, T *work, const int *lwork,       \
                 int *iwork, int *info, ft_lapack_len);                                         \
  void p##geev_(const char *jobvl, const char *jobvr, const int *n, T *a, const int *lda,      \
                T *wr, T *wi, T *vl, const int *ldvl, T *vr, const int *ldvr, T *work,          \
                const int *lwork, int *info, ft_lapack_len, ft_lapack_len);
FT_LAPACK_REAL(s, float)
FT_LAPACK_REAL(d, double)
#undef FT_LAPACK_REAL
void sgees_(const char *jobvs, const char *sort, ft_lapack_select2_s select, const int *n,
            float *a, const int *lda, int *sdim, float *wr, float *wi, float *vs,
            const int *ldvs, float *work, const int *lwork, int *bwork, int *info, ft_lapack_len,
            ft_lapack_len);
void dgees_(const char *jobvs, const char *sort, ft_lapack_select2_d select, const int *n,
            double *a, const int *lda, int *sdim, double *wr, double *wi, double *vs,
            const int *ldvs, double *work, const int *lwork, int *bwork, int *info,
            ft_lapack_len, ft_lapack_len);

/* Complex types: unitary Q, Hermitian eigen, complex SVD/eig/Schur (R:
 * the real type of eigenvalues, singular values and rwork). */
#define FT_LAPACK_COMPLEX(p, T, R)                                                              \
  void p##ungqr_(const int *m, const int *n, const int *k, T *a, const int *lda, const T *tau, \
                 T *work, const int *lwork, int *info);                                         \
  void p##unmqr_(const char *side, const char *trans, const int *m, const int *n, const int *k, \
                 const T *a, const int *lda, const T *tau, T *c, const int *ldc, T *work,       \
                 const int *lwork, int *info, ft_lapack_len, ft_lapack_len);                    \
  void p##geqp3_(const int *m, const int *n, T *a, const int *lda, int *jpvt, T *tau, T *work, \
                 const int *lwork, R *rwork, int *info);                                        \
  void p##heevd_(const char *jobz, const char *uplo, const int *n, T *a, const int *lda, R *w,  \
                 T *work, const int *lwork, R *rwork, const int *lrwork, int *iwork,            \
                 const int *liwork, int *info, ft_lapack_len, ft_lapack_len);                   \
  void p##hetrd_(const char *uplo, const int *n, T *a, const int *lda, R *d, R *e, T *tau,     \
                 T *work, const int *lwork, int *info, ft_lapack_len);                          \
  void p##gesdd_(const char *jobz, const int *m, const int *n, T *a, const int *lda, R *s,     \
                 T *u, const int *ldu, T *vt, const int *ldvt, T *work, const int *lwork,       \
                 R *rwork, int *iwork, int *info, ft_lapack_len);                               \
  void p##geev_(const char *jobvl, const char *jobvr, const int *n, T *a, const int *lda, T *w, \
                T *vl, const int *ldvl, T *vr, const int *ldvr, T *work, const int *lwork,      \
                R *rwork, int *info, ft_lapack_len, ft_lapack_len);
FT_LAPACK_COMPLEX(c, ft_lapack_c64, float)
FT_LAPACK_COMPLEX(z, ft_lapack_c128, double)
#undef FT_LAPACK_COMPLEX
void cgees_(const char *jobvs, const char *sort, ft_lapack_select1_c select, const int *n,
            ft_lapack_c64 *a, const int *lda, int *sdim, ft_lapack_c64 *w, ft_lapack_c64 *vs,
            const int *ldvs, ft_lapack_c64 *work, const int *lwork, float *rwork, int *bwork,
            int *info, ft_lapack_len, ft_lapack_len);
void zgees_(const char *jobvs, const char *sort, ft_lapack_select1_z select, const int *n,
            ft_lapack_c128 *a, const int *lda, int *sdim, ft_lapack_c128 *w, ft_lapack_c128 *vs,
            const int *ldvs, ft_lapack_c128 *work, const int *lwork, double *rwork, int *bwork,
            int *info, ft_lapack_len, ft_lapack_len);

/* ========================================================= shared helpers */
/* LAPACK's type letter for dt ('s', 'd', 'c', 'z'), 0 for other dtypes. */
char ft_lapack_letter(ft_dtype dt);

/* Whether a matrix dimension (or leading dimension, or workspace length)
 * fits LAPACK's 32-bit INTEGER. Rule bodies check every one at check time. */
static inline bool ft_lapack_int_ok(int64_t n) { return n >= 0 && n <= INT32_MAX; }

/* The number of matrices in a with its last `core` dims as the matrix dims
 * (the product of the leading batch dims; 1 with none). */
int64_t ft_lapack_batch_count(const ft_aval *a, int core);

/* Scratch handed to a rule body is 8-byte aligned (runtime.h); a linalg
 * body asks for FT_LAPACK_ALIGN more bytes than it uses and aligns it
 * here, so both engines hand LAPACK 64-byte aligned arrays. */
#define FT_LAPACK_ALIGN 64
void *ft_lapack_align(void *scratch);
/* n bytes rounded up to FT_LAPACK_ALIGN (to carve aligned sub-buffers). */
static inline size_t ft_lapack_round(size_t n) {
  return (n + FT_LAPACK_ALIGN - 1) & ~(size_t)(FT_LAPACK_ALIGN - 1);
}

/* Copies the row-major rows x cols matrix src (row stride src_ld elements)
 * into the column-major dst with leading dimension dst_ld >= rows: dst[i +
 * j*dst_ld] = src[i*src_ld + j]. With rows and cols swapped it is also the
 * way back (column-major to row-major). esz: the element size in bytes. */
void ft_lapack_to_colmajor(void *dst, int64_t dst_ld, const void *src, int64_t src_ld, int64_t rows,
                           int64_t cols, size_t esz);

/* Runs member(arg, b) for b = 0 .. nbatch-1, in order, on the calling
 * thread, with OpenBLAS pinned to one thread and its work-buffer probe
 * (ft_blas_enter) around the loop. FT_OK, or FT_ERR_NOMEM naming `what`
 * when the address space has no room for OpenBLAS's buffer (then member is
 * never called). A member never fails: LAPACK's INFO is data (a
 * non-positive-definite cholesky gives NaNs, as JAX), stored by the
 * member. */
typedef void (*ft_lapack_member_fn)(void *arg, int64_t b);
ft_status ft_lapack_batch(ft_ctx *ctx, const char *what, int64_t nbatch, ft_lapack_member_fn member,
                          void *arg);

/* (the dispatch to these bodies, ft_linalg_rule_into_for and friends, is
 * declared in runtime.h next to ft_rule_into_for, which falls through to it) */

#endif
