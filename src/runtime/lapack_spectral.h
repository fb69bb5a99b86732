/* src/runtime/lapack_spectral.h: the LAPACK routines of the spectral and
 * orthogonal decompositions (interp_spectral.c), as the Fortran entry points
 * of Debian's OpenBLAS export them (LP64: 32-bit integers; gfortran passes
 * the length of each character argument as a trailing size_t). Declared
 * here because Debian ships no lapack.h with OpenBLAS; the lead reconciles
 * this with linalg1's src/runtime/lapack.h. */
#ifndef FT_LAPACK_SPECTRAL_H
#define FT_LAPACK_SPECTRAL_H

#include <stddef.h>

typedef int ft_lapack_int;

void ssyevd_(const char *jobz, const char *uplo, const ft_lapack_int *n, float *a,
             const ft_lapack_int *lda, float *w, float *work, const ft_lapack_int *lwork,
             ft_lapack_int *iwork, const ft_lapack_int *liwork, ft_lapack_int *info, size_t,
             size_t);
void dsyevd_(const char *jobz, const char *uplo, const ft_lapack_int *n, double *a,
             const ft_lapack_int *lda, double *w, double *work, const ft_lapack_int *lwork,
             ft_lapack_int *iwork, const ft_lapack_int *liwork, ft_lapack_int *info, size_t,
             size_t);
void sgesdd_(const char *jobz, const ft_lapack_int *m, const ft_lapack_int *n, float *a,
             const ft_lapack_int *lda, float *s, float *u, const ft_lapack_int *ldu, float *vt,
             const ft_lapack_int *ldvt, float *work, const ft_lapack_int *lwork,
             ft_lapack_int *iwork, ft_lapack_int *info, size_t);
void dgesdd_(const char *jobz, const ft_lapack_int *m, const ft_lapack_int *n, double *a,
             const ft_lapack_int *lda, double *s, double *u, const ft_lapack_int *ldu, double *vt,
             const ft_lapack_int *ldvt, double *work, const ft_lapack_int *lwork,
             ft_lapack_int *iwork, ft_lapack_int *info, size_t);
void sgeqrf_(const ft_lapack_int *m, const ft_lapack_int *n, float *a, const ft_lapack_int *lda,
             float *tau, float *work, const ft_lapack_int *lwork, ft_lapack_int *info);
void dgeqrf_(const ft_lapack_int *m, const ft_lapack_int *n, double *a, const ft_lapack_int *lda,
             double *tau, double *work, const ft_lapack_int *lwork, ft_lapack_int *info);
void sorgqr_(const ft_lapack_int *m, const ft_lapack_int *n, const ft_lapack_int *k, float *a,
             const ft_lapack_int *lda, const float *tau, float *work, const ft_lapack_int *lwork,
             ft_lapack_int *info);
void dorgqr_(const ft_lapack_int *m, const ft_lapack_int *n, const ft_lapack_int *k, double *a,
             const ft_lapack_int *lda, const double *tau, double *work,
             const ft_lapack_int *lwork, ft_lapack_int *info);

#endif
