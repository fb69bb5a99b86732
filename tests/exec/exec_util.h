/* tests/exec/exec_util.h: helpers shared by the executor tests: a
 * deterministic RNG, random DAGs, and the malloc counter (the test binaries
 * link with -Wl,--wrap=malloc,... so every allocation made by the library's
 * objects goes through the __wrap_ functions below). */
#ifndef EXEC_UTIL_H
#define EXEC_UTIL_H

#include <check.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/exec.h"

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

#endif /* EXEC_UTIL_H */
