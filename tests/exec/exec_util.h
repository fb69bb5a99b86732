/* tests/exec/exec_util.h: helpers shared by the executor tests: a
 * deterministic RNG, random DAGs, and the malloc counter (the test binaries
 * link with -Wl,--wrap=malloc,... so every allocation made by the library's
 * objects goes through the __wrap_ functions below). */
#ifndef EXEC_UTIL_H
#define EXEC_UTIL_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/exec.h"
#include "runtime/runtime.h"

/* ---- malloc counting (only while counting is on: Check allocates too) */
static atomic_long xt_allocs;
static atomic_bool xt_counting;
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
static inline void xt_count(void) {
  if (atomic_load(&xt_counting)) atomic_fetch_add(&xt_allocs, 1);
}
void *__wrap_malloc(size_t n) { xt_count(); return __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { xt_count(); return __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { xt_count(); return __real_realloc(p, n); }
void *__wrap_aligned_alloc(size_t a, size_t n) { xt_count(); return __real_aligned_alloc(a, n); }

static inline uint64_t xt_rng(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* A random DAG of n tasks: task i's deps are drawn among the tasks before
 * it in a random permutation (so deps may point to higher indices). */
typedef struct xt_dag {
  int n;
  int *n_deps;
  int **deps;
} xt_dag;

static inline xt_dag xt_dag_random(int n, int max_deps, uint64_t seed) {
  xt_dag d = {.n = n, .n_deps = calloc((size_t)n, sizeof(int)), .deps = calloc((size_t)n, sizeof(int *))};
  int *perm = malloc(sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++) perm[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int k = (int)(xt_rng(&seed) % (uint64_t)(i + 1)), t = perm[i];
    perm[i] = perm[k], perm[k] = t;
  }
  for (int q = 0; q < n; q++) {
    int t = perm[q];
    int nd = q ? (int)(xt_rng(&seed) % (uint64_t)(max_deps + 1)) : 0;
    d.deps[t] = malloc(sizeof(int) * (size_t)(nd + 1));
    for (int k = 0; k < nd; k++) d.deps[t][d.n_deps[t]++] = perm[xt_rng(&seed) % (uint64_t)q];
  }
  free(perm);
  return d;
}

static inline void xt_dag_free(xt_dag *d) {
  for (int i = 0; i < d->n; i++) free(d->deps[i]);
  free(d->deps), free(d->n_deps);
}


/* ---- golden programs (test_exec_program.c, test_exec_jit.c) ---- */

/* Bitwise equal, any NaN equal to any NaN (docs/determinism.md). */
static inline bool xt_same_bits(const ft_array *a, const ft_array *b) {
  if (!ft_aval_eq(&a->aval, &b->aval)) return false;
  if (!a->nbytes || !memcmp(a->data, b->data, a->nbytes)) return true;
  ft_dtype dt = a->aval.dtype;
  bool cplx = ft_dtype_is_complex(dt);
  size_t es = cplx ? ft_dtype_size(dt) / 2 : ft_dtype_size(dt);
  int64_t n = ft_array_size(a) * (cplx ? 2 : 1);
  for (int64_t i = 0; i < n; i++) {
    const char *x = (const char *)a->data + (size_t)i * es, *y = (const char *)b->data + (size_t)i * es;
    if (!memcmp(x, y, es)) continue;
    if (es == 4 && (dt == FT_F32 || dt == FT_C64)) {
      float fx, fy;
      memcpy(&fx, x, 4), memcpy(&fy, y, 4);
      if (isnan(fx) && isnan(fy)) continue;
    } else if (es == 8 && (dt == FT_F64 || dt == FT_C128)) {
      double fx, fy;
      memcpy(&fx, x, 8), memcpy(&fy, y, 8);
      if (isnan(fx) && isnan(fy)) continue;
    }
    return false;
  }
  return true;
}

static inline char *xt_read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  *len = fread(b, 1, (size_t)n, f);
  b[*len] = 0;
  fclose(f);
  return b;
}

/* The fixtures store bf16 arrays as their uint16 bits. */
static inline void xt_as_dtype(ft_array *a, ft_dtype want) {
  if (a && want == FT_BF16 && a->aval.dtype == FT_U16) a->aval.dtype = FT_BF16;
}

/* The golden case `name` of dir: its jaxpr and inputs (constants first). */
static inline ft_jaxpr *xt_load_case(ft_ctx *ctx, const char *dir, const char *name, ft_array **in,
                                     int *n_in) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.jaxpr", dir, name);
  size_t len = 0;
  char *text = xt_read_all(path, &len);
  if (!text) return NULL;
  ft_jaxpr *j = ft_parse(ctx, text, len, path);
  free(text);
  if (!j) return NULL;
  *n_in = 0;
  for (int k = 0; *n_in < 64; k++) {
    snprintf(path, sizeof path, "%s/%s.const%d.npy", dir, name, k);
    if (!(in[*n_in] = ft_npy_read(ctx, path))) break;
    if (k < j->n_const) xt_as_dtype(in[*n_in], j->constvars[k]->aval.dtype);
    (*n_in)++;
  }
  for (int k = 0; *n_in < 64; k++) {
    snprintf(path, sizeof path, "%s/%s.in%d.npy", dir, name, k);
    if (!(in[*n_in] = ft_npy_read(ctx, path))) break;
    if (k < j->n_in) xt_as_dtype(in[*n_in], j->invars[k]->aval.dtype);
    (*n_in)++;
  }
  ft_ctx_clear_error(ctx);
  return j;
}

#endif /* EXEC_UTIL_H */
