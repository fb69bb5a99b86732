/* src/runtime/interp_linalg.c: dot_general (through the project's one GEMM
 * routine for f32/f64, plain loops for integers and complex) and fft
 * (through FFTW with FFTW_ESTIMATE plans, which are deterministic). */
#include <fftw3.h> /* before cblas.h: OpenBLAS pulls in complex.h */
#include <cblas.h>
#include <complex.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <string.h>

#include "runtime.h"

/* ------------------------------------------------------------------- GEMM */
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
/* OpenBLAS results change with the thread count (MACHINE-FACTS.md), so it
 * runs single-threaded; parallelism belongs to the executor's row blocks. */
static void blas_init(void) { openblas_set_num_threads(1); }

void ft_blas_single_thread(void) { pthread_once(&blas_once, blas_init); }

/* OpenBLAS takes a work buffer from its pool for every call running at
 * once; when the pool is short it maps a new one (128 MiB in 0.3.21 on
 * x86_64, seen as the length of its mmap) and, if that fails, retries for
 * ever: under `ulimit -v` a GEMM hung instead of failing. So before a call
 * that could need a buffer more than any earlier moment did (more calls
 * inside OpenBLAS at once than buffers known to exist), the same size plus
 * headroom is mapped and unmapped here (132 MiB: the buffer and its malloc
 * fallback's alignment, with a little headroom): if the address space is
 * short the call reports out-of-memory and OpenBLAS is never entered.
 *
 * A probe reserves nothing, so two calls that each probed successfully
 * could still both need a new buffer with room for one (strace showed it:
 * the two row blocks of one GEMM probing, then one mapping its buffer and
 * the other retrying for ever). So growing is serialized: the call that
 * needs a buffer beyond the known count probes and then holds blas_grow
 * until it leaves OpenBLAS (its buffer exists by then); meanwhile calls
 * that would need yet another buffer wait for the lock, and calls that fit
 * the known buffers go on without it. This happens only while the pool
 * grows (a few times per process). Buffers are never returned, so the
 * count only grows. Other allocations between a probe and OpenBLAS's own
 * mapping remain possible; the headroom covers small ones. */
#define BLAS_BUFFER_PROBE ((size_t)132 << 20)
static atomic_int blas_inside, blas_buffers;
static pthread_mutex_t blas_grow = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int blas_depth;       /* this thread's enters not yet left */
static _Thread_local int blas_grow_target; /* > 0: this thread holds blas_grow */

bool ft_blas_enter(void) {
  if (blas_depth > 0) { /* nested on this thread: the outer enter covers it */
    blas_depth++;
    return true;
  }
  int in = atomic_load(&blas_inside);
  while (in + 1 <= atomic_load(&blas_buffers))
    if (atomic_compare_exchange_weak(&blas_inside, &in, in + 1)) {
      blas_depth = 1;
      return true;
    }
  pthread_mutex_lock(&blas_grow);
  int need = atomic_fetch_add(&blas_inside, 1) + 1;
  if (need <= atomic_load(&blas_buffers)) {
    pthread_mutex_unlock(&blas_grow);
    blas_depth = 1;
    return true;
  }
  void *p = mmap(NULL, BLAS_BUFFER_PROBE, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    atomic_fetch_sub(&blas_inside, 1);
    pthread_mutex_unlock(&blas_grow);
    return false;
  }
  munmap(p, BLAS_BUFFER_PROBE);
  blas_grow_target = need; /* keeps blas_grow until ft_blas_leave */
  blas_depth = 1;
  return true;
}

void ft_blas_leave(void) {
  if (--blas_depth > 0) return;
  atomic_fetch_sub(&blas_inside, 1);
  if (blas_grow_target > 0) {
    /* `need` calls were inside OpenBLAS at once: that many buffers exist */
    int have = atomic_load(&blas_buffers);
    while (have < blas_grow_target &&
           !atomic_compare_exchange_weak(&blas_buffers, &have, blas_grow_target)) {
    }
    blas_grow_target = 0;
    pthread_mutex_unlock(&blas_grow);
  }
}

ft_status ft_blas_nomem(ft_ctx *ctx) {
  return ft_set_error(ctx, FT_ERR_NOMEM, "%s", FT_BLAS_NOMEM_MSG);
}

/* Row blocks. A block holds about GEMM_BLOCK_WORK multiply-adds and at
 * least GEMM_MIN_ROWS rows: measured on the 2-vCPU Zen 5 VM (SGEMM, one
 * thread, k and n from 128 to 1024), blocks of 32 rows run at about 80% of
 * a whole call's GFLOP/s, 64 rows at 90%, 128 rows at 95% and up, while the
 * executor's cost per block is microseconds. The rows are then evened out
 * over the block count (rounded up to a multiple of 16 rows), so the
 * blocks of one product are equal but for the last. At most
 * FT_GEMM_MAX_BLOCKS blocks. */
enum { GEMM_MIN_ROWS = 64, GEMM_ROW_ALIGN = 16 };
#define GEMM_BLOCK_WORK ((int64_t)1 << 23)

int64_t ft_gemm_block_rows(int64_t m, int64_t n, int64_t k) {
  if (m <= 0) return 1;
  int64_t nk = (n > 0 ? n : 1) * (k > 0 ? k : 1);
  int64_t rows = GEMM_BLOCK_WORK / nk;
  if (rows < GEMM_MIN_ROWS) rows = GEMM_MIN_ROWS;
  if (rows >= m) return m;
  int64_t nb = (m + rows - 1) / rows;
  if (nb > FT_GEMM_MAX_BLOCKS) nb = FT_GEMM_MAX_BLOCKS;
  rows = (m + nb - 1) / nb;
  rows = (rows + GEMM_ROW_ALIGN - 1) / GEMM_ROW_ALIGN * GEMM_ROW_ALIGN;
  return rows < m ? rows : m;
}

int64_t ft_gemm_blocks(int64_t m, int64_t n, int64_t k) {
  if (m <= 0) return 1;
  int64_t r = ft_gemm_block_rows(m, n, k);
  return (m + r - 1) / r;
}

/* The rows [*r0, *r0 + *rn) of block blk. */
static void block_range(int64_t m, int64_t n, int64_t k, int64_t blk, int64_t *r0, int64_t *rn) {
  int64_t r = ft_gemm_block_rows(m, n, k);
  *r0 = blk * r;
  *rn = m - *r0 < r ? m - *r0 : r;
}

bool ft_gemm_f32_block_at(int64_t m, int64_t n, int64_t k, int64_t blk, const float *a,
                          int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc) {
  int64_t r0, rn;
  if (m <= 0 || n <= 0) return true;
  block_range(m, n, k, blk, &r0, &rn);
  if (rn <= 0) return true;
  if (k == 0) {
    for (int64_t i = 0; i < rn; i++) memset(c + i * ldc, 0, sizeof(float) * (size_t)n);
    return true;
  }
  pthread_once(&blas_once, blas_init);
  FT_ASSERT(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && lda <= INT_MAX && ldb <= INT_MAX &&
            ldc <= INT_MAX);
  if (!ft_blas_enter()) return false;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rn, (int)n, (int)k, 1.0f, a,
              (int)lda, b, (int)ldb, 0.0f, c, (int)ldc);
  ft_blas_leave();
  return true;
}

bool ft_gemm_f32_block(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                       const float *b, int64_t ldb, float *c, int64_t ldc, int64_t blk) {
  if (m <= 0 || n <= 0) return true;
  int64_t r0 = blk * ft_gemm_block_rows(m, n, k);
  if (r0 >= m) return true;
  return ft_gemm_f32_block_at(m, n, k, blk, a + r0 * lda, lda, b, ldb, c + r0 * ldc, ldc);
}

bool ft_gemm_f64_block_at(int64_t m, int64_t n, int64_t k, int64_t blk, const double *a,
                          int64_t lda, const double *b, int64_t ldb, double *c, int64_t ldc) {
  int64_t r0, rn;
  if (m <= 0 || n <= 0) return true;
  block_range(m, n, k, blk, &r0, &rn);
  if (rn <= 0) return true;
  if (k == 0) {
    for (int64_t i = 0; i < rn; i++) memset(c + i * ldc, 0, sizeof(double) * (size_t)n);
    return true;
  }
  pthread_once(&blas_once, blas_init);
  FT_ASSERT(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && lda <= INT_MAX && ldb <= INT_MAX &&
            ldc <= INT_MAX);
  if (!ft_blas_enter()) return false;
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rn, (int)n, (int)k, 1.0, a,
              (int)lda, b, (int)ldb, 0.0, c, (int)ldc);
  ft_blas_leave();
  return true;
}

bool ft_gemm_f64_block(int64_t m, int64_t n, int64_t k, const double *a, int64_t lda,
                       const double *b, int64_t ldb, double *c, int64_t ldc, int64_t blk) {
  if (m <= 0 || n <= 0) return true;
  int64_t r0 = blk * ft_gemm_block_rows(m, n, k);
  if (r0 >= m) return true;
  return ft_gemm_f64_block_at(m, n, k, blk, a + r0 * lda, lda, b, ldb, c + r0 * ldc, ldc);
}

bool ft_gemm_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                 int64_t ldb, float *c, int64_t ldc) {
  int64_t nb = ft_gemm_blocks(m, n, k);
  for (int64_t blk = 0; blk < nb; blk++)
    if (!ft_gemm_f32_block(m, n, k, a, lda, b, ldb, c, ldc, blk)) return false;
  return true;
}

bool ft_gemm_f64(int64_t m, int64_t n, int64_t k, const double *a, int64_t lda,
                 const double *b, int64_t ldb, double *c, int64_t ldc) {
  int64_t nb = ft_gemm_blocks(m, n, k);
  for (int64_t blk = 0; blk < nb; blk++)
    if (!ft_gemm_f64_block(m, n, k, a, lda, b, ldb, c, ldc, blk)) return false;
  return true;
}

/* ------------------------------------------------------------ dot_general */

/* Offsets (in elements) of the row-major enumeration of the given dims of
 * a, written into off (n of them). */
static void enum_into(const ft_aval *a, const int64_t *dims, int nd, int64_t *off, int64_t n) {
  int64_t st[FT_MAX_RANK], s = 1, idx[FT_MAX_RANK] = {0};
  for (int i = a->rank - 1; i >= 0; i--) st[i] = s, s *= a->dims[i];
  for (int64_t k = 0; k < n; k++) {
    int64_t o = 0;
    for (int i = 0; i < nd; i++) o += idx[i] * st[dims[i]];
    off[k] = o;
    for (int i = nd - 1; i >= 0; i--) {
      if (++idx[i] < a->dims[dims[i]]) break;
      idx[i] = 0;
    }
  }
}

static int64_t dims_count(const ft_aval *a, const int64_t *dims, int nd) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= a->dims[dims[i]];
  return n;
}

int64_t *ft_enum_offsets(const ft_aval *a, const int64_t *dims, int nd, int64_t *count) {
  int64_t n = dims_count(a, dims, nd);
  *count = n;
  int64_t *off = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (off) enum_into(a, dims, nd, off, n);
  return off;
}

typedef struct dims3 {
  int64_t batch[FT_MAX_RANK], contract[FT_MAX_RANK], free_[FT_MAX_RANK];
  int nb, nc, nf;
} dims3;

static bool split_dims_ints(const ft_aval *a, const int64_t *contract, int nc, const int64_t *batch, int nb,
                            dims3 *d) {
  bool used[FT_MAX_RANK] = {0};
  if (nc > a->rank || nb > a->rank || nc < 0 || nb < 0) return false;
  d->nc = nc, d->nb = nb;
  memcpy(d->contract, contract, sizeof(int64_t) * (size_t)nc);
  memcpy(d->batch, batch, sizeof(int64_t) * (size_t)nb);
  for (int i = 0; i < d->nc; i++) {
    if (d->contract[i] < 0 || d->contract[i] >= a->rank || used[d->contract[i]]) return false;
    used[d->contract[i]] = true;
  }
  for (int i = 0; i < d->nb; i++) {
    if (d->batch[i] < 0 || d->batch[i] >= a->rank || used[d->batch[i]]) return false;
    used[d->batch[i]] = true;
  }
  d->nf = 0;
  for (int i = 0; i < a->rank; i++)
    if (!used[i]) d->free_[d->nf++] = i;
  return true;
}

static bool split_dims(const ft_aval *a, const ft_pval *contract, const ft_pval *batch, dims3 *d) {
  int64_t c[FT_MAX_RANK], b[FT_MAX_RANK];
  int nc, nb;
  if (!ft_pv_get_ints(contract, c, FT_MAX_RANK, &nc) || !ft_pv_get_ints(batch, b, FT_MAX_RANK, &nb) ||
      nc > FT_MAX_RANK || nb > FT_MAX_RANK)
    return false;
  return split_dims_ints(a, c, nc, b, nb, d);
}

typedef struct dot_geo {
  int64_t B, M, N, K;
  int64_t *lb, *lm, *lk, *rb, *rk, *rn; /* element offsets per group */
} dot_geo;


/* Checks the dimension numbers against the avals of l, r and o and sets
 * B, M, N, K. */
static ft_status dot_check(ft_ctx *ctx, const ft_aval *l, const ft_aval *r, const ft_aval *o, dot_geo *g,
                           dims3 *L, dims3 *R);

static ft_status dot_shape(ft_ctx *ctx, const ft_eqn *e, const ft_aval *l, const ft_aval *r,
                           const ft_aval *o, dot_geo *g, dims3 *L, dims3 *R) {
  const ft_pval *dn = ft_eqn_param(e, "dimension_numbers");
  memset(g, 0, sizeof *g);
  if (!dn || dn->tag != FT_PV_TUPLE || dn->n != 2 || dn->u.items[0].tag != FT_PV_TUPLE ||
      dn->u.items[0].n != 2 || dn->u.items[1].tag != FT_PV_TUPLE || dn->u.items[1].n != 2 ||
      !split_dims(l, &dn->u.items[0].u.items[0], &dn->u.items[1].u.items[0], L) ||
      !split_dims(r, &dn->u.items[0].u.items[1], &dn->u.items[1].u.items[1], R) ||
      L->nc != R->nc || L->nb != R->nb)
    return ft_set_error(ctx, FT_ERR_TYPE, "bad dimension_numbers");
  return dot_check(ctx, l, r, o, g, L, R);
}

static ft_status dot_check(ft_ctx *ctx, const ft_aval *l, const ft_aval *r, const ft_aval *o, dot_geo *g,
                           dims3 *L, dims3 *R) {
  for (int i = 0; i < L->nc; i++)
    if (l->dims[L->contract[i]] != r->dims[R->contract[i]])
      return ft_set_error(ctx, FT_ERR_SHAPE, "contracting dimensions differ in size");
  for (int i = 0; i < L->nb; i++)
    if (l->dims[L->batch[i]] != r->dims[R->batch[i]])
      return ft_set_error(ctx, FT_ERR_SHAPE, "batch dimensions differ in size");
  g->B = dims_count(l, L->batch, L->nb);
  g->M = dims_count(l, L->free_, L->nf);
  g->K = dims_count(l, L->contract, L->nc);
  g->N = dims_count(r, R->free_, R->nf);
  if (ft_aval_size(o) != g->B * g->M * g->N)
    return ft_set_error(ctx, FT_ERR_SHAPE, "the result shape does not match the dot");
  return FT_OK;
}

/* Bytes of one scratch region, kept 64-byte aligned inside the scratch. */
static size_t region(size_t n) { return (n + 63) & ~(size_t)63; }

/* Points g's offset tables into scratch (returns the bytes past them). */
static char *dot_offsets(const ft_aval *l, const ft_aval *r, const dims3 *L, const dims3 *R,
                         dot_geo *g, char *scratch) {
  int64_t *p = (int64_t *)(void *)scratch;
  g->lb = p, p += g->B;
  g->lm = p, p += g->M;
  g->lk = p, p += g->K;
  g->rb = p, p += g->B;
  g->rk = p, p += g->K;
  g->rn = p, p += g->N;
  enum_into(l, L->batch, L->nb, g->lb, g->B);
  enum_into(l, L->free_, L->nf, g->lm, g->M);
  enum_into(l, L->contract, L->nc, g->lk, g->K);
  enum_into(r, R->batch, R->nb, g->rb, g->B);
  enum_into(r, R->contract, R->nc, g->rk, g->K);
  enum_into(r, R->free_, R->nf, g->rn, g->N);
  return scratch + region(sizeof(int64_t) * (size_t)(2 * g->B + g->M + 2 * g->K + g->N));
}

/* Floating dots: pack operands as [b][m][k] and [b][k][n] in the compute
 * precision (A, Bm), then one GEMM per batch element into C. */
static bool dot_float(const ft_array *l, const ft_array *r, ft_array *o, const dot_geo *g,
                      bool f64, char *A, char *Bm, char *C) {
  int64_t B = g->B, M = g->M, N = g->N, K = g->K;
  for (int64_t b = 0; b < B; b++) {
    for (int64_t m = 0; m < M; m++)
      for (int64_t k = 0; k < K; k++) {
        double v = ft_get_f64(l, g->lb[b] + g->lm[m] + g->lk[k]);
        int64_t at = (b * M + m) * K + k;
        if (f64) ((double *)(void *)A)[at] = v;
        else ((float *)(void *)A)[at] = (float)v;
      }
    for (int64_t k = 0; k < K; k++)
      for (int64_t n = 0; n < N; n++) {
        double v = ft_get_f64(r, g->rb[b] + g->rk[k] + g->rn[n]);
        int64_t at = (b * K + k) * N + n;
        if (f64) ((double *)(void *)Bm)[at] = v;
        else ((float *)(void *)Bm)[at] = (float)v;
      }
    bool ok = f64 ? ft_gemm_f64(M, N, K, (double *)(void *)A + b * M * K, K,
                                (double *)(void *)Bm + b * K * N, N, (double *)(void *)C + b * M * N, N)
                  : ft_gemm_f32(M, N, K, (float *)(void *)A + b * M * K, K,
                                (float *)(void *)Bm + b * K * N, N, (float *)(void *)C + b * M * N, N);
    if (!ok) return false;
  }
  int64_t total = B * M * N;
  for (int64_t i = 0; i < total; i++)
    ft_set_f64(o, i, f64 ? ((double *)(void *)C)[i] : (double)((float *)(void *)C)[i]);
  return true;
}

/* Integer and complex dots: plain loops, k in increasing order. */
static void dot_loops(const ft_array *l, const ft_array *r, ft_array *o, const dot_geo *g) {
  bool cpx = ft_dtype_is_complex(o->aval.dtype), c64 = o->aval.dtype == FT_C64;
  int64_t i = 0;
  for (int64_t b = 0; b < g->B; b++)
    for (int64_t m = 0; m < g->M; m++)
      for (int64_t n = 0; n < g->N; n++, i++) {
        uint64_t acc = 0;
        double ar = 0, ai = 0;
        float fr = 0, fi = 0;
        for (int64_t k = 0; k < g->K; k++) {
          int64_t li = g->lb[b] + g->lm[m] + g->lk[k], ri = g->rb[b] + g->rk[k] + g->rn[n];
          if (cpx) {
            double xr, xi, yr, yi;
            ft_get_c128(l, li, &xr, &xi);
            ft_get_c128(r, ri, &yr, &yi);
            if (c64) {
              float a = (float)xr, bb = (float)xi, c = (float)yr, d = (float)yi;
              fr += a * c - bb * d, fi += a * d + bb * c;
            } else {
              ar += xr * yr - xi * yi, ai += xr * yi + xi * yr;
            }
          } else {
            acc += (uint64_t)ft_get_i64(l, li) * (uint64_t)ft_get_i64(r, ri);
          }
        }
        if (c64) ft_set_c128(o, i, fr, fi);
        else if (cpx) ft_set_c128(o, i, ar, ai);
        else ft_set_i64(o, i, (int64_t)acc);
      }
}

ft_status ft_interp_dot(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  return ft_interp_via_into(ctx, e, in, out);
}

/* The operands' offset tables, then for a float result the packed
 * operands and the GEMM's result in the compute precision. Computed from
 * the avals (0 when the dimension numbers are bad: the check refuses). */
size_t ft_dot_scratch(const ft_eqn *e) {
  dot_geo g;
  dims3 L, R;
  if (e->n_in != 2 || e->n_out != 1 ||
      dot_shape(NULL, e, &e->in[0]->aval, &e->in[1]->aval, &e->out[0]->aval, &g, &L, &R))
    return 0;
  size_t n = region(sizeof(int64_t) * (size_t)(2 * g.B + g.M + 2 * g.K + g.N));
  ft_dtype dt = e->out[0]->aval.dtype;
  if (ft_dtype_is_float(dt)) {
    size_t es = dt == FT_F64 ? sizeof(double) : sizeof(float);
    n += region(es * (size_t)(g.B * g.M * g.K)) + region(es * (size_t)(g.B * g.K * g.N)) +
         region(es * (size_t)(g.B * g.M * g.N));
  }
  return n;
}

ft_status ft_dot_into(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array *const *out,
                      void *scratch) {
  dot_geo g;
  dims3 L, R;
  ft_status st = dot_shape(ctx, e, &in[0]->aval, &in[1]->aval, &e->out[0]->aval, &g, &L, &R);
  if (st) return st;
  ft_dtype dt = e->out[0]->aval.dtype;
  bool fl = ft_dtype_is_float(dt), cpx = ft_dtype_is_complex(dt);
  if (!fl && !cpx && !ft_dtype_is_int(dt) && dt != FT_BOOL)
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "dot_general into %s", ft_dtype_name(dt));
  if (!fl && !cpx && (ft_dtype_is_inexact(in[0]->aval.dtype) || ft_dtype_is_inexact(in[1]->aval.dtype)))
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "dot_general of floats into %s", ft_dtype_name(dt));
  if (!out) return FT_OK;
  char *p = dot_offsets(&in[0]->aval, &in[1]->aval, &L, &R, &g, scratch);
  if (fl) {
    /* f16/bf16 operands compute in f32 and round once at the end */
    bool f64 = dt == FT_F64;
    size_t es = f64 ? sizeof(double) : sizeof(float);
    char *A = p, *Bm = A + region(es * (size_t)(g.B * g.M * g.K));
    char *C = Bm + region(es * (size_t)(g.B * g.K * g.N));
    if (!dot_float(in[0], in[1], out[0], &g, f64, A, Bm, C)) return ft_blas_nomem(ctx);
  } else {
    dot_loops(in[0], in[1], out[0], &g);
  }
  return FT_OK;
}

/* dot_general on arrays with dimension numbers given as ints (dn: lhs
 * contract, rhs contract, lhs batch, rhs batch; n their counts): the body
 * of ft_dot_into, for ragged_dot_general (interp_ragged.c). */
static ft_status dot_raw_geo(ft_ctx *ctx, const ft_aval *l, const ft_aval *r, const ft_aval *o,
                             const int64_t dn[4][FT_MAX_RANK], const int n[4], dot_geo *g, dims3 *L,
                             dims3 *R) {
  memset(g, 0, sizeof *g);
  if (n[0] != n[1] || n[2] != n[3] || !split_dims_ints(l, dn[0], n[0], dn[2], n[2], L) ||
      !split_dims_ints(r, dn[1], n[1], dn[3], n[3], R))
    return ft_set_error(ctx, FT_ERR_TYPE, "bad dimension_numbers");
  return dot_check(ctx, l, r, o, g, L, R);
}

size_t ft_dot_raw_scratch(const ft_aval *l, const ft_aval *r, const ft_aval *o,
                          const int64_t dn[4][FT_MAX_RANK], const int n[4]) {
  dot_geo g;
  dims3 L, R;
  if (dot_raw_geo(NULL, l, r, o, dn, n, &g, &L, &R)) return 0;
  size_t k = region(sizeof(int64_t) * (size_t)(2 * g.B + g.M + 2 * g.K + g.N));
  if (ft_dtype_is_float(o->dtype)) {
    size_t es = o->dtype == FT_F64 ? sizeof(double) : sizeof(float);
    k += region(es * (size_t)(g.B * g.M * g.K)) + region(es * (size_t)(g.B * g.K * g.N)) +
         region(es * (size_t)(g.B * g.M * g.N));
  }
  return k;
}

ft_status ft_dot_raw(ft_ctx *ctx, const ft_array *l, const ft_array *r, ft_array *o,
                     const int64_t dn[4][FT_MAX_RANK], const int n[4], void *scratch) {
  dot_geo g;
  dims3 L, R;
  ft_status st = dot_raw_geo(ctx, &l->aval, &r->aval, &o->aval, dn, n, &g, &L, &R);
  if (st) return st;
  ft_dtype dt = o->aval.dtype;
  bool fl = ft_dtype_is_float(dt), cpx = ft_dtype_is_complex(dt);
  if (!fl && !cpx && !ft_dtype_is_int(dt) && dt != FT_BOOL)
    return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "dot into %s", ft_dtype_name(dt));
  char *p = dot_offsets(&l->aval, &r->aval, &L, &R, &g, scratch);
  if (fl) {
    bool f64 = dt == FT_F64;
    size_t es = f64 ? sizeof(double) : sizeof(float);
    char *A = p, *Bm = A + region(es * (size_t)(g.B * g.M * g.K));
    char *C = Bm + region(es * (size_t)(g.B * g.K * g.N));
    if (!dot_float(l, r, o, &g, f64, A, Bm, C)) return ft_blas_nomem(ctx);
  } else {
    dot_loops(l, r, o, &g);
  }
  return FT_OK;
}

/* -------------------------------------------------------------------- fft */
/* FFTW's planner is not thread-safe; execution is. */
static pthread_mutex_t fftw_lock = PTHREAD_MUTEX_INITIALIZER;

static int fft_type(const ft_pval *v) {
  if (v->tag == FT_PV_INT) return (int)v->u.i;
  const char *s = v->s ? v->s : "";
  const char *dot = strrchr(s, '.');
  if (dot) s = dot + 1;
  if (!strcmp(s, "FFT") || !strcmp(s, "0")) return FT_FFT_C2C;
  if (!strcmp(s, "IFFT") || !strcmp(s, "1")) return FT_FFT_INV;
  if (!strcmp(s, "RFFT") || !strcmp(s, "2")) return FT_FFT_R2C;
  if (!strcmp(s, "IRFFT") || !strcmp(s, "3")) return FT_FFT_C2R;
  return -1;
}

/* The geometry of an fft equation on operand aval a and result aval o
 * (checked as the interpreter always did); errors on ctx (may be NULL). */
ft_status ft_fft_geometry(ft_ctx *ctx, const ft_eqn *e, const ft_aval *a, const ft_aval *o,
                          ft_fft_geom *g) {
  int64_t len[3];
  int rank = ft_param_ints(e, "fft_lengths", len, 3);
  int type = fft_type(ft_eqn_param(e, "fft_type"));
  if (rank < 1 || rank > 3 || type < 0 || a->rank < rank)
    return ft_set_error(ctx, FT_ERR_TYPE, "fft: bad fft_lengths or fft_type");
  const ft_aval *cpx = type == FT_FFT_C2R ? a : o;
  memset(g, 0, sizeof *g);
  g->type = type;
  g->rank = rank;
  g->dbl = cpx->dtype == FT_C128;
  g->nreal = 1;
  for (int i = 0; i < rank; i++) {
    if (len[i] <= 0 || len[i] > INT_MAX) return ft_set_error(ctx, FT_ERR_TYPE, "fft: bad fft_lengths");
    g->n[i] = (int)len[i];
    g->nreal *= len[i];
  }
  const ft_aval *real = type == FT_FFT_R2C ? a : type == FT_FFT_C2R ? o : NULL;
  if (!ft_dtype_is_complex(cpx->dtype) || (real && real->dtype != (g->dbl ? FT_F64 : FT_F32)) ||
      (type <= FT_FFT_INV && a->dtype != o->dtype))
    return ft_set_error(ctx, FT_ERR_TYPE, "fft: operand/result dtypes do not fit the fft_type");
  int64_t per_out = 1;
  for (int i = o->rank - rank; i < o->rank; i++) per_out *= o->dims[i];
  int64_t howmany = per_out ? ft_aval_size(o) / per_out : 0;
  if (howmany == 0 || ft_aval_size(a) == 0) howmany = 0; /* nothing to transform */
  if (howmany > INT_MAX) return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "fft: too many transforms");
  g->howmany = (int)howmany;
  g->in_bytes = (size_t)ft_aval_size(a) * ft_dtype_size(a->dtype);
  g->out_bytes = (size_t)ft_aval_size(o) * ft_dtype_size(o->dtype);
  return FT_OK;
}

/* An FFTW_ESTIMATE plan of g, out of place from in to out, made under the
 * planner lock (FFTW's planner is not thread-safe; execution is). NULL when
 * FFTW could not plan. FFTW picks its codelets by the alignment of in and
 * out (fftw_alignment_of): callers plan and execute on 64-byte aligned
 * buffers, so every plan of one geometry computes the same bits. */
void *ft_fft_plan(const ft_fft_geom *g, void *in, void *out) {
  int nreal = 1, ncpx = 1, rank = g->rank, howmany = g->howmany;
  const int *n = g->n;
  for (int i = 0; i < rank; i++) nreal *= n[i], ncpx *= i == rank - 1 ? n[i] / 2 + 1 : n[i];
  int inner_in = g->type == FT_FFT_R2C ? nreal : ncpx, inner_out = g->type == FT_FFT_C2R ? nreal : ncpx;
  if (g->type <= FT_FFT_INV) inner_in = inner_out = nreal;
  int sign = g->type == FT_FFT_C2C ? FFTW_FORWARD : FFTW_BACKWARD;
  pthread_mutex_lock(&fftw_lock);
  void *plan;
  if (g->dbl) {
    if (g->type <= FT_FFT_INV)
      plan = fftw_plan_many_dft(rank, n, howmany, in, NULL, 1, inner_in, out, NULL, 1, inner_out,
                                sign, FFTW_ESTIMATE);
    else if (g->type == FT_FFT_R2C)
      plan = fftw_plan_many_dft_r2c(rank, n, howmany, in, NULL, 1, inner_in, out, NULL, 1,
                                    inner_out, FFTW_ESTIMATE);
    else
      plan = fftw_plan_many_dft_c2r(rank, n, howmany, in, NULL, 1, inner_in, out, NULL, 1,
                                    inner_out, FFTW_ESTIMATE);
  } else {
    if (g->type <= FT_FFT_INV)
      plan = fftwf_plan_many_dft(rank, n, howmany, in, NULL, 1, inner_in, out, NULL, 1,
                                 inner_out, sign, FFTW_ESTIMATE);
    else if (g->type == FT_FFT_R2C)
      plan = fftwf_plan_many_dft_r2c(rank, n, howmany, in, NULL, 1, inner_in, out, NULL, 1,
                                     inner_out, FFTW_ESTIMATE);
    else
      plan = fftwf_plan_many_dft_c2r(rank, n, howmany, in, NULL, 1, inner_in, out, NULL, 1,
                                     inner_out, FFTW_ESTIMATE);
  }
  pthread_mutex_unlock(&fftw_lock);
  return plan;
}

void ft_fft_plan_free(const ft_fft_geom *g, void *plan) {
  if (!plan) return;
  pthread_mutex_lock(&fftw_lock);
  if (g->dbl) fftw_destroy_plan(plan);
  else fftwf_destroy_plan(plan);
  pthread_mutex_unlock(&fftw_lock);
}

bool ft_fft_aligned(const ft_fft_geom *g, const void *p) {
  return (g->dbl ? fftw_alignment_of((double *)(uintptr_t)p)
                 : fftwf_alignment_of((float *)(uintptr_t)p)) == 0;
}

/* Runs plan (of g) on in -> out with FFTW's new-array execute functions
 * (in and out aligned as the planning arrays), then normalizes the inverse
 * transforms as XLA does. c2r overwrites in. */
void ft_fft_run(const ft_fft_geom *g, void *plan, void *in, void *out) {
  if (g->dbl) {
    if (g->type <= FT_FFT_INV) fftw_execute_dft(plan, in, out);
    else if (g->type == FT_FFT_R2C) fftw_execute_dft_r2c(plan, in, out);
    else fftw_execute_dft_c2r(plan, in, out);
  } else {
    if (g->type <= FT_FFT_INV) fftwf_execute_dft(plan, in, out);
    else if (g->type == FT_FFT_R2C) fftwf_execute_dft_r2c(plan, in, out);
    else fftwf_execute_dft_c2r(plan, in, out);
  }
  if (g->type == FT_FFT_INV || g->type == FT_FFT_C2R) { /* XLA's inverse transforms are normalized */
    int64_t cnt = (int64_t)(g->out_bytes / (g->dbl ? sizeof(double) : sizeof(float)));
    if (g->dbl) {
      double s = 1.0 / (double)g->nreal;
      for (int64_t i = 0; i < cnt; i++) ((double *)out)[i] *= s;
    } else {
      float s = (float)(1.0 / (double)g->nreal);
      for (int64_t i = 0; i < cnt; i++) ((float *)out)[i] *= s;
    }
  }
}

/* Rows per chunk: about FFT_CHUNK_ELEMS elements of transform (so a chunk
 * is a few hundred microseconds of FFTW), at most FFT_MAX_CHUNKS chunks,
 * and a multiple of the rows that keep every chunk's input and output at
 * 64-byte offsets from the arrays' starts (the planning arrays' alignment
 * class). A function of the geometry only. */
enum { FFT_CHUNK_ELEMS = 1 << 16, FFT_MAX_CHUNKS = 256 };

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b, b = t;
  }
  return a;
}

int ft_fft_chunk_rows(const ft_fft_geom *g) {
  int64_t h = g->howmany;
  if (h <= 1) return 1;
  int64_t in_row = (int64_t)(g->in_bytes / (size_t)h), out_row = (int64_t)(g->out_bytes / (size_t)h);
  int64_t qi = 64 / gcd64(in_row, 64), qo = 64 / gcd64(out_row, 64);
  int64_t q = qi / gcd64(qi, qo) * qo; /* lcm: both offsets multiples of 64 */
  int64_t rows = FFT_CHUNK_ELEMS / (g->nreal > 0 ? g->nreal : 1);
  if (rows < (h + FFT_MAX_CHUNKS - 1) / FFT_MAX_CHUNKS) rows = (h + FFT_MAX_CHUNKS - 1) / FFT_MAX_CHUNKS;
  if (rows < 1) rows = 1;
  rows = (rows + q - 1) / q * q;
  return (int)(rows < h ? rows : h);
}

ft_fft_geom ft_fft_rows_geom(const ft_fft_geom *g, int rows) {
  ft_fft_geom r = *g;
  if (g->howmany > 0) {
    r.in_bytes = g->in_bytes / (size_t)g->howmany * (size_t)rows;
    r.out_bytes = g->out_bytes / (size_t)g->howmany * (size_t)rows;
  }
  r.howmany = rows;
  return r;
}

void ft_fft_run_rows(const ft_fft_geom *g, int rows, void *plan, void *plan_rem, void *in, void *out,
                     int64_t lo, int64_t hi) {
  size_t in_row = g->in_bytes / (size_t)g->howmany, out_row = g->out_bytes / (size_t)g->howmany;
  ft_fft_geom gm = ft_fft_rows_geom(g, rows), gr = ft_fft_rows_geom(g, g->howmany % rows);
  for (int64_t r0 = lo; r0 < hi; r0 += rows) {
    bool rem = r0 + rows > g->howmany;
    ft_fft_run(rem ? &gr : &gm, rem ? plan_rem : plan, (char *)in + in_row * (size_t)r0,
               (char *)out + out_row * (size_t)r0);
  }
}

ft_status ft_interp_fft(ft_ctx *ctx, const ft_eqn *e, ft_array *const *in, ft_array **out) {
  const ft_array *a = in[0];
  ft_fft_geom g;
  ft_status st = ft_fft_geometry(ctx, e, &a->aval, &e->out[0]->aval, &g);
  if (st || (st = ft_interp_alloc_outs(ctx, e, out))) return st;
  ft_array *o = out[0], *tmp = NULL;
  if (g.howmany == 0) return FT_OK;
  /* FFTW may overwrite the input (c2r always does): work on a copy. Both
   * arrays are 64-byte aligned (ft_array_alloc), as the JIT's are. */
  if (!(tmp = ft_array_clone(ctx, a))) {
    st = ft_ctx_status(ctx);
    goto fail;
  }
  /* in chunks of rows, as the JIT's routine step runs them (one plan for
   * the full chunks, one for the last when it is shorter) */
  int rows = ft_fft_chunk_rows(&g), rem = g.howmany % rows;
  ft_fft_geom gm = ft_fft_rows_geom(&g, rows), gr = ft_fft_rows_geom(&g, rem);
  void *plan = ft_fft_plan(&gm, tmp->data, o->data);
  void *plan_rem = plan && rem ? ft_fft_plan(&gr, tmp->data, o->data) : NULL;
  if (!plan || (rem && !plan_rem)) {
    ft_fft_plan_free(&gm, plan);
    st = ft_set_error(ctx, FT_ERR_RUNTIME, "fft: FFTW could not plan the transform");
    goto fail;
  }
  ft_fft_run_rows(&g, rows, plan, plan_rem, tmp->data, o->data, 0, g.howmany);
  ft_fft_plan_free(&gm, plan);
  ft_fft_plan_free(&gr, plan_rem);
  ft_array_free(tmp);
  return FT_OK;
fail:
  ft_array_free(tmp);
  ft_array_free(o);
  out[0] = NULL;
  return st;
}
