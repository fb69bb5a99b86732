/* bench/linalg/bench_linalg.c: the linear-algebra workloads of issue 20,
 * traced with the C API (ft_cholesky, ft_linalg_solve, ...) and compiled by
 * ft_jit: cholesky and solve at n = 64, 256, 1024 (f32, as jnp's default),
 * a batch of 512 solves of 16x16, and a Gaussian-process negative log
 * marginal likelihood with its gradient in the kernel matrix at n = 512.
 * Prints "name median_ms min_ms" per workload for bench/linalg/run.sh to
 * set beside jax.jit (bench_jax.py). Never asserts. */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ft.h"

enum { REPS = 9 };

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int chol(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  (void)t, (void)max_out, (void)u;
  out[0] = ft_cholesky(in[0]);
  return out[0] ? 1 : -1;
}

static int solve(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  (void)t, (void)max_out, (void)u;
  out[0] = ft_linalg_solve(in[0], in[1]);
  return out[0] ? 1 : -1;
}

/* 0.5 y^T K^-1 y + sum(log diag L), L = cholesky(K) */
static int gp(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  (void)max_out, (void)u;
  ft_val *l = ft_cholesky(in[0]);
  ft_aval av = ft_val_aval(in[0]);
  const ft_aval *a = &av;
  int64_t nn = a->dims[0], col[2] = {nn, 1};
  ft_val *y = ft_reshape(in[1], 2, col);
  ft_val *z = ft_triangular_solve(l, y, &(ft_triangular_opts){.size = sizeof(ft_triangular_opts), .left_side = true, .lower = true});
  ft_val *fit = ft_mul(ft_scalar(t, FT_F32, 0.5), ft_sum(ft_mul(z, z), -1, NULL, false));
  ft_val *r = ft_iota(t, FT_I32, 2, a->dims, 0), *c = ft_iota(t, FT_I32, 2, a->dims, 1);
  ft_val *ld = ft_select_n(ft_eq(r, c), 2,
                           (ft_val *[]){ft_full(t, FT_F32, 2, a->dims, 0.0), ft_log(l)});
  out[0] = ft_add(fit, ft_sum(ld, -1, NULL, false));
  return out[0] ? 1 : -1;
}

/* A seeded symmetric positive definite batch (n x n, diagonally dominant). */
static void spd(float *a, int64_t b, int64_t n, unsigned seed) {
  srand(seed);
  for (int64_t k = 0; k < b; k++) {
    float *m = a + k * n * n;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j <= i; j++) {
        float v = (float)rand() / (float)RAND_MAX - 0.5f;
        m[i * n + j] = m[j * n + i] = i == j ? (float)n + v : v * 0.5f;
      }
  }
}

static int bench(ft_ctx *ctx, const char *name, ft_trace_fn fn, int n_in, const ft_aval *av,
                 ft_array **in, bool value_and_grad) {
  ft_jaxpr *j = ft_trace(ctx, fn, NULL, n_in, av);
  ft_jaxpr *g = j && value_and_grad ? ft_value_and_grad(ctx, j, 1, (const int[]){0}, false) : j;
  ft_fn *f = g ? ft_jit(ctx, g, NULL) : NULL;
  if (!f) return fprintf(stderr, "%s: %s\n", name, ft_ctx_error(ctx)), 1;
  double t[REPS];
  for (int r = -2; r < REPS; r++) {
    ft_array *out[4] = {0};
    double t0 = now();
    if (ft_call(f, n_in, (const ft_array *const *)in, ft_jaxpr_num_outputs(g), out)) return fprintf(stderr, "%s\n", ft_ctx_error(ctx)), 1;
    if (r >= 0) t[r] = 1e3 * (now() - t0);
    for (int k = 0; k < 4; k++) ft_array_free(out[k]);
  }
  qsort(t, REPS, sizeof t[0], cmp);
  printf("%s %.3f %.3f\n", name, t[REPS / 2], t[0]);
  fflush(stdout);
  ft_fn_free(f);
  if (g != j) ft_jaxpr_free(g);
  ft_jaxpr_free(j);
  return 0;
}

int main(void) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  static const int64_t sizes[] = {64, 256, 1024};
  for (int s = 0; s < 3; s++) {
    int64_t n = sizes[s], d2[2] = {n, n};
    float *a = malloc(sizeof(float) * (size_t)(n * n)), *b = malloc(sizeof(float) * (size_t)n);
    spd(a, 1, n, 7);
    for (int64_t i = 0; i < n; i++) b[i] = (float)(i % 7) - 3.0f;
    ft_array *in[2] = {ft_array_from_data(ctx, FT_F32, 2, d2, a), ft_array_from_data(ctx, FT_F32, 1, &n, b)};
    ft_aval av[2] = {{.dtype = FT_F32, .rank = 2, .dims = {n, n}}, {.dtype = FT_F32, .rank = 1, .dims = {n}}};
    char nm[64];
    snprintf(nm, sizeof nm, "cholesky_%lld", (long long)n);
    if (bench(ctx, nm, chol, 1, av, in, false)) return 1;
    snprintf(nm, sizeof nm, "solve_%lld", (long long)n);
    if (bench(ctx, nm, solve, 2, av, in, false)) return 1;
    ft_array_free(in[0]), ft_array_free(in[1]);
    free(a), free(b);
  }
  {
    int64_t B = 512, n = 16, d3[3] = {B, n, n}, d2[3] = {B, n, 1};
    float *a = malloc(sizeof(float) * (size_t)(B * n * n)), *b = malloc(sizeof(float) * (size_t)(B * n));
    spd(a, B, n, 11);
    for (int64_t i = 0; i < B * n; i++) b[i] = (float)(i % 5) - 2.0f;
    ft_array *in[2] = {ft_array_from_data(ctx, FT_F32, 3, d3, a), ft_array_from_data(ctx, FT_F32, 3, d2, b)};
    ft_aval av[2] = {{.dtype = FT_F32, .rank = 3, .dims = {B, n, n}}, {.dtype = FT_F32, .rank = 3, .dims = {B, n, 1}}};
    if (bench(ctx, "solve_batch512x16", solve, 2, av, in, false)) return 1;
    ft_array_free(in[0]), ft_array_free(in[1]);
    free(a), free(b);
  }
  {
    int64_t n = 512, d2[2] = {n, n};
    float *a = malloc(sizeof(float) * (size_t)(n * n)), *y = malloc(sizeof(float) * (size_t)n);
    spd(a, 1, n, 13);
    for (int64_t i = 0; i < n; i++) y[i] = (float)sin((double)i);
    ft_array *in[2] = {ft_array_from_data(ctx, FT_F32, 2, d2, a), ft_array_from_data(ctx, FT_F32, 1, &n, y)};
    ft_aval av[2] = {{.dtype = FT_F32, .rank = 2, .dims = {n, n}}, {.dtype = FT_F32, .rank = 1, .dims = {n}}};
    if (bench(ctx, "gp_nll_value_and_grad_512", gp, 2, av, in, true)) return 1;
    ft_array_free(in[0]), ft_array_free(in[1]);
    free(a), free(y);
  }
  ft_ctx_free(ctx);
  return 0;
}
