/* bench/random/bench_random.c: 2^24 f32 uniforms and normals from one key,
 * traced with ft_random_uniform / ft_random_normal and compiled by ft_jit;
 * prints the median and minimum call time in ms per sampler (one line
 * each, "name median min"), for bench/random/run.sh to set beside jax.jit.
 * Never asserts. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ft.h"

enum { N = 1 << 24, REPS = 15 };

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int uniform(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  int64_t n = N;
  out[0] = ft_random_uniform(in[0], FT_F32, 1, &n, 0.0, 1.0);
  return 1;
}

static int normal(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  int64_t n = N;
  out[0] = ft_random_normal(in[0], FT_F32, 1, &n);
  return 1;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(void) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_aval kav = {.dtype = FT_KEY_FRY}; /* key<fry>[] */
  uint32_t kd[2] = {0, 42};
  int64_t two = 2;
  ft_array *key = ft_array_from_data(ctx, FT_U32, 1, &two, kd);
  if (!key || ft_array_wrap_keys(ctx, key, FT_KEY_FRY)) return fprintf(stderr, "%s\n", ft_ctx_error(ctx)), 1;
  struct { const char *name; ft_trace_fn fn; } w[2] = {{"uniform", uniform}, {"normal", normal}};
  for (int k = 0; k < 2; k++) {
    ft_jaxpr *j = ft_trace(ctx, w[k].fn, NULL, 1, &kav);
    ft_fn *f = j ? ft_jit(ctx, j, NULL) : NULL;
    if (!f) return fprintf(stderr, "%s: %s\n", w[k].name, ft_ctx_error(ctx)), 1;
    int64_t n = N;
    ft_array *out = ft_array_new(ctx, FT_F32, 1, &n);
    double t[REPS];
    for (int r = -2; r < REPS; r++) {
      double t0 = now();
      if (ft_call_into(f, 1, (const ft_array *const *)&key, 1, &out)) return fprintf(stderr, "%s\n", ft_ctx_error(ctx)), 1;
      if (r >= 0) t[r] = 1e3 * (now() - t0);
    }
    qsort(t, REPS, sizeof t[0], cmp);
    printf("%s %.3f %.3f\n", w[k].name, t[REPS / 2], t[0]);
    ft_array_free(out);
    ft_fn_free(f);
    ft_jaxpr_free(j);
  }
  ft_array_free(key);
  ft_ctx_free(ctx);
  return 0;
}
