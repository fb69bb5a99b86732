/* bench/linalg_spectral/bench_spectral.c: jnp.linalg.eigh and svd of one
 * 256 x 256 f32 matrix, traced with ft_eigh / ft_svd and compiled by
 * ft_jit; prints "name median_ms min_ms" per workload for
 * bench/linalg_spectral/run.sh to set beside jax.jit. Never asserts. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ft.h"

enum { N = 256, REPS = 11 };

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int eigh(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  return ft_eigh(in[0], true, true, &out[0], &out[1]);
}

static int svd(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  return ft_svd(in[0], true, true, &out[0], &out[1], &out[2]);
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(void) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  int64_t d[2] = {N, N};
  ft_aval av = {.dtype = FT_F32, .rank = 2, .dims = {N, N}};
  static float x[N * N];
  uint64_t s = 42;
  for (int i = 0; i < N * N; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
  ft_array *in = ft_array_from_data(ctx, FT_F32, 2, d, x);
  struct { const char *name; ft_trace_fn fn; int n_out; } w[2] = {{"eigh", eigh, 2},
                                                                  {"svd", svd, 3}};
  for (int k = 0; k < 2; k++) {
    ft_jaxpr *j = ft_trace(ctx, w[k].fn, NULL, 1, &av);
    ft_fn *f = j ? ft_jit(ctx, j, NULL) : NULL;
    if (!f) return fprintf(stderr, "%s: %s\n", w[k].name, ft_ctx_error(ctx)), 1;
    double t[REPS];
    for (int r = -2; r < REPS; r++) {
      ft_array *out[3] = {0};
      double t0 = now();
      if (ft_call(f, 1, (const ft_array *const *)&in, w[k].n_out, out)) return fprintf(stderr, "%s\n", ft_ctx_error(ctx)), 1;
      if (r >= 0) t[r] = 1e3 * (now() - t0);
      for (int o = 0; o < w[k].n_out; o++) ft_array_free(out[o]);
    }
    qsort(t, REPS, sizeof t[0], cmp);
    printf("%s %.3f %.3f\n", w[k].name, t[REPS / 2], t[0]);
    ft_fn_free(f);
    ft_jaxpr_free(j);
  }
  ft_array_free(in);
  ft_ctx_free(ctx);
  return 0;
}
