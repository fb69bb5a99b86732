/* bench/vmap/bench_vmap.c: vmap transform time per equation (target under
 * 2 µs), and interpreter time of vmap(f) against a loop of f over the same
 * data. Prints a table; never asserts. Run: bench/vmap/run.sh. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ft.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A chain of n elementwise/reduction equations over f32[64,32] plus a matmul. */
static char *program(int n) {
  size_t cap = 256 + (size_t)n * 160;
  char *s = malloc(cap), *p = s;
  p += sprintf(p, "{ lambda ; a:f32[64,32] w:f32[32,16]. let\n");
  const char *ops[] = {"sin", "exp", "tanh", "neg"};
  p += sprintf(p, "    v0:f32[64,32] = mul a a\n");
  for (int i = 1; i < n - 2; i++)
    p += sprintf(p, "    v%d:f32[64,32] = %s v%d\n", i, ops[i % 4], i - 1);
  p += sprintf(p, "    m:f32[64,16] = dot_general[dimension_numbers=(([1], [0]), ([], [])) "
                  "preferred_element_type=float32] v%d w\n", n - 3);
  p += sprintf(p, "    r:f32[64] = reduce_sum[axes=(1,) out_sharding=None] m\n  in (r,) }\n");
  return s;
}

int main(void) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  printf("| equations | vmap time (µs) | µs / equation | eval vmap(f), B=16 (ms) | loop of f (ms) |\n");
  printf("|---:|---:|---:|---:|---:|\n");
  int sizes[] = {10, 100, 1000, 5000};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    int n = sizes[k];
    char *text = program(n);
    ft_jaxpr *j = ft_parse(ctx, text, strlen(text), "bench");
    if (!j) {
      fprintf(stderr, "%s\n", ft_ctx_error(ctx));
      return 1;
    }
    int in_axes[2] = {0, FT_VMAP_NONE};
    int reps = n >= 1000 ? 5 : 50;
    ft_jaxpr *v = NULL;
    double best = 1e9;
    for (int r = 0; r < reps; r++) {
      ft_jaxpr_free(v);
      double t0 = now();
      v = ft_vmap(ctx, j, ft_jaxpr_num_inputs(j), in_axes, 0, NULL, 16);
      double dt = now() - t0;
      if (dt < best) best = dt;
    }
    double te = 0, tl = 0;
    if (n <= 100) {
      int64_t da[3] = {16, 64, 32}, dw[2] = {32, 16};
      ft_array *a = ft_array_new(ctx, FT_F32, 3, da), *w = ft_array_new(ctx, FT_F32, 2, dw);
      ft_array *in[2] = {a, w}, *out = NULL;
      double t0 = now();
      ft_eval(ctx, v, 2, (const ft_array *const *)in, 1, &out);
      te = now() - t0;
      ft_array_free(out);
      int64_t ds[2] = {64, 32};
      ft_array *s = ft_array_new(ctx, FT_F32, 2, ds);
      ft_array *sin_[2] = {s, w};
      t0 = now();
      for (int b = 0; b < 16; b++) {
        ft_eval(ctx, j, 2, (const ft_array *const *)sin_, 1, &out);
        ft_array_free(out);
      }
      tl = now() - t0;
      ft_array_free(a), ft_array_free(w), ft_array_free(s);
    }
    if (n <= 100)
      printf("| %d | %.1f | %.3f | %.2f | %.2f |\n", n, best * 1e6, best * 1e6 / n, te * 1e3, tl * 1e3);
    else
      printf("| %d | %.1f | %.3f | - | - |\n", n, best * 1e6, best * 1e6 / n);
    ft_jaxpr_free(v);
    ft_jaxpr_free(j);
    free(text);
  }
  printf("\nvmap time includes the verifier (ft_jaxpr_verify) that every transform runs in\n"
         "debug and debugoptimized builds.\n");
  ft_ctx_free(ctx);
  return 0;
}
