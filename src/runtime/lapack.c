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

/* ------------------------------------------------- batch members in chunks */
/* The core rank of operand 0 (the dims of one member): a vector for the
 * pivots and for tridiagonal_solve's first diagonal, a matrix for the
 * others; 0 for cholesky_update, which has no batch dims (as JAX). */
static int core_rank0(ft_prim p) {
  switch (p) {
  case FT_P_LU_PIVOTS_TO_PERMUTATION: case FT_P_TRIDIAGONAL_SOLVE: return 1;
  case FT_P_CHOLESKY_UPDATE: return 0;
  default: return 2;
  }
}

/* Whether aval v starts with the nb dims of b. */
static bool leads_with(const ft_aval *v, const int64_t *b, int nb) {
  if (v->rank < nb) return false;
  for (int d = 0; d < nb; d++)
    if (v->dims[d] != b[d]) return false;
  return true;
}

int64_t ft_linalg_members(const ft_eqn *e) {
  int core = core_rank0(e->prim);
  if (!ft_linalg_rule_into_for(e->prim) || core == 0 || e->n_in < 1 || e->n_in > FT_LINALG_MAX_ARGS ||
      e->n_out > FT_LINALG_MAX_ARGS)
    return 0;
  const ft_aval *a = &e->in[0]->aval;
  int nb = a->rank - core;
  if (nb < 1) return 0;
  int64_t members = 1;
  for (int d = 0; d < nb; d++) members *= a->dims[d];
  if (members < 1) return 0;
  /* every operand and result carries the batch dims in front: member b of
   * each is its b-th contiguous block (the rule bodies' member loops index
   * them so); a literal or an unbatched operand keeps the equation whole */
  for (int k = 0; k < e->n_in; k++)
    if (e->in[k]->kind != FT_VAR || !leads_with(&e->in[k]->aval, a->dims, nb)) return 0;
  for (int k = 0; k < e->n_out; k++)
    if (!leads_with(&e->out[k]->aval, a->dims, nb)) return 0;
  return members;
}

/* A view of members [lo, hi) of x (members in all, nb batch dims): the
 * batch dims become (1, ..., 1, hi - lo), the data starts at member lo. */
static ft_array members_view(const ft_array *x, int nb, int64_t members, int64_t lo, int64_t hi) {
  ft_array v = {.aval = x->aval};
  size_t per = (size_t)ft_aval_size(&x->aval) / (size_t)members * ft_dtype_size(x->aval.dtype);
  for (int d = 0; d < nb; d++) v.aval.dims[d] = 1;
  v.aval.dims[nb - 1] = hi - lo;
  v.data = (char *)x->data + per * (size_t)lo;
  v.nbytes = per * (size_t)(hi - lo);
  v.borrowed = true;
  return v;
}

ft_status ft_linalg_run_members(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in,
                                ft_array *const *out, void *scratch, int64_t lo, int64_t hi) {
  int64_t members = ft_linalg_members(e);
  if (members < 1 || lo < 0 || hi > members || lo >= hi)
    return ft_set_error(ctx, FT_ERR_INTERNAL, "%s: batch members [%lld, %lld) of %lld",
                        ft_prim_get(e->prim)->name, (long long)lo, (long long)hi, (long long)members);
  int nb = e->in[0]->aval.rank - core_rank0(e->prim);
  ft_array iv[FT_LINALG_MAX_ARGS], ov[FT_LINALG_MAX_ARGS];
  ft_array *ip[FT_LINALG_MAX_ARGS], *op[FT_LINALG_MAX_ARGS];
  for (int k = 0; k < e->n_in; k++) iv[k] = members_view(in[k], nb, members, lo, hi), ip[k] = &iv[k];
  for (int k = 0; k < e->n_out; k++) ov[k] = members_view(out[k], nb, members, lo, hi), op[k] = &ov[k];
  return ft_linalg_rule_into_for(e->prim)(ctx, e, ip, op, scratch);
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
