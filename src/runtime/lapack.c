/* src/runtime/lapack.c: the machinery shared by the linear-algebra rule
 * bodies (lapack.h): LAPACK's type letter, batch counts, aligned scratch,
 * row-major <-> column-major copies, the batch loop that pins OpenBLAS to
 * one thread, and the dispatch from a primitive to its rule body, which
 * ft_rule_into_for (interp_shared.c) falls through to. */
#include <string.h>

#include "runtime/lapack.h"

char ft_lapack_letter(ft_dtype dt) {
  switch (dt) {
  case FT_F32: return 's';
  case FT_F64: return 'd';
  case FT_C64: return 'c';
  case FT_C128: return 'z';
  default: return 0;
  }
}

int64_t ft_lapack_batch_count(const ft_aval *a, int core) {
  int64_t n = 1;
  for (int d = 0; d < a->rank - core; d++) n *= a->dims[d];
  return n;
}

void *ft_lapack_align(void *scratch) {
  uintptr_t p = (uintptr_t)scratch;
  return (void *)((p + FT_LAPACK_ALIGN - 1) & ~(uintptr_t)(FT_LAPACK_ALIGN - 1));
}

/* Blocked 32 x 32 so both sides stay in cache; the elements are copied as
 * integers of their size (plain bytes: NaN payloads kept). */
#define TO_COL(T)                                                                       \
  do {                                                                                  \
    T *d = dst;                                                                         \
    const T *s = src;                                                                   \
    for (int64_t i0 = 0; i0 < rows; i0 += 32)                                           \
      for (int64_t j0 = 0; j0 < cols; j0 += 32)                                         \
        for (int64_t i = i0; i < rows && i < i0 + 32; i++)                              \
          for (int64_t j = j0; j < cols && j < j0 + 32; j++) d[i + j * dst_ld] = s[i * src_ld + j]; \
  } while (0)

typedef struct {
  uint64_t lo, hi;
} u128_pair;

void ft_lapack_to_colmajor(void *dst, int64_t dst_ld, const void *src, int64_t src_ld, int64_t rows,
                           int64_t cols, size_t esz) {
  switch (esz) {
  case 4: TO_COL(uint32_t); return;
  case 8: TO_COL(uint64_t); return;
  case 16: TO_COL(u128_pair); return;
  default: break;
  }
  unsigned char *d = dst;
  const unsigned char *s = src;
  for (int64_t j = 0; j < cols; j++)
    for (int64_t i = 0; i < rows; i++)
      memcpy(d + (size_t)(i + j * dst_ld) * esz, s + (size_t)(i * src_ld + j) * esz, esz);
}
#undef TO_COL

ft_status ft_lapack_batch(ft_ctx *ctx, const char *what, int64_t nbatch, ft_lapack_member_fn member,
                          void *arg) {
  if (nbatch <= 0) return FT_OK;
  ft_blas_single_thread();
  if (!ft_blas_enter())
    return ft_set_error(ctx, FT_ERR_NOMEM,
                        "%s: out of memory: OpenBLAS needs a 128 MiB work buffer for each LAPACK "
                        "call running at once and the address space has no room (ulimit -v?)",
                        what);
  for (int64_t b = 0; b < nbatch; b++) member(arg, b);
  ft_blas_leave();
  return FT_OK;
}

/* ------------------------------------------------------------- dispatch */
/* Each half of issue 20 lists its primitives in its own function, so the
 * two lists merge without touching each other. */

/* cholesky, triangular_solve, lu, ... (factorizations and solves) */
static ft_rule_into_fn solve_rule(ft_prim p) { return ft_solve_rule_for(p); }

static size_t solve_scratch(const ft_eqn *e) { return ft_solve_rule_scratch(e); }

/* qr, eigh, svd, ... (orthogonal and spectral decompositions) */
static ft_rule_into_fn spectral_rule(ft_prim p) {
  switch (p) {
  case FT_P_QR: case FT_P_EIGH: case FT_P_SVD: case FT_P_EIG: case FT_P_SCHUR:
  case FT_P_HESSENBERG: case FT_P_TRIDIAGONAL: case FT_P_HOUSEHOLDER_PRODUCT: case FT_P_GEQRF:
  case FT_P_ORMQR:
    return ft_spectral_into; /* interp_spectral.c */
  default: return NULL;
  }
}

static size_t spectral_scratch(const ft_eqn *e) {
  switch (e->prim) {
  case FT_P_QR: case FT_P_EIGH: case FT_P_SVD: case FT_P_EIG: case FT_P_SCHUR:
  case FT_P_HESSENBERG: case FT_P_TRIDIAGONAL: case FT_P_HOUSEHOLDER_PRODUCT: case FT_P_GEQRF:
  case FT_P_ORMQR:
    return ft_spectral_scratch(e);
  default: return 0;
  }
}

ft_rule_into_fn ft_linalg_rule_into_for(ft_prim p) {
  ft_rule_into_fn f = solve_rule(p);
  return f ? f : spectral_rule(p);
}

size_t ft_linalg_rule_scratch(const ft_eqn *e) {
  if (solve_rule(e->prim)) return solve_scratch(e);
  if (spectral_rule(e->prim)) return spectral_scratch(e);
  return 0;
}

bool ft_linalg_writes_all(const ft_eqn *e) {
  return ft_linalg_rule_into_for(e->prim) != NULL && e->n_out > 1;
}
