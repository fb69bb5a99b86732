/* bench/rnn/bench_rnn.c: grad of a 1,000-step tanh RNN (hidden 256, batch
 * 32, input 64, f32) with respect to its three parameters: ft_grad of the
 * scan program (the text JAX prints for lax.scan), ft_jit, ft_call_into.
 * Prints one line "rnn_grad median_ms min_ms arena_bytes buffers_bytes":
 * the call time and the intermediate memory of one call (ft_fn_stats), for
 * bench/rnn/run.sh to set beside jax.jit(jax.grad(...)). Never asserts.
 * Environment: BENCH_T (steps, default 1000), BENCH_REPS (default 7). */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ft.h"

enum { H = 256, B = 32, D = 64 };

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* h' = tanh(h W + x U + b) over T steps from h = 0; loss = sum(h_T). */
static char *program(int T) {
  static char text[4096];
  snprintf(text, sizeof text,
           "{ lambda ; w:f32[%d,%d] u:f32[%d,%d] b:f32[%d] xs:f32[%d,%d,%d]. let\n"
           "    z:f32[%d,%d] = broadcast_in_dim[broadcast_dimensions=() shape=(%d, %d)] 0.0:f32[]\n"
           "    hT:f32[%d,%d] = scan[\n"
           "      jaxpr={ lambda ; a:f32[%d,%d] c:f32[%d,%d] d:f32[%d] h:f32[%d,%d] x:f32[%d,%d]. let\n"
           "          e:f32[%d,%d] = dot_general[dimension_numbers=(([1], [0]), ([], [])) "
           "preferred_element_type=float32] h a\n"
           "          f:f32[%d,%d] = dot_general[dimension_numbers=(([1], [0]), ([], [])) "
           "preferred_element_type=float32] x c\n"
           "          g:f32[%d,%d] = add e f\n"
           "          k:f32[%d,%d] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(%d, %d)] d\n"
           "          l:f32[%d,%d] = add g k\n"
           "          m:f32[%d,%d] = tanh l\n"
           "        in (m,) }\n"
           "      length=%d\n      num_carry=1\n      num_consts=3\n      reverse=False\n      unroll=1\n"
           "    ] w u b z xs\n"
           "    y:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] hT\n"
           "  in (y,) }",
           H, H, D, H, H, T, B, D, B, H, B, H, B, H, H, H, D, H, H, B, H, B, D, B, H, B, H, B, H, B,
           H, B, H, B, H, B, H, T);
  return text;
}

static ft_array *filled(ft_ctx *ctx, int rank, const int64_t *dims, float scale, unsigned *seed) {
  ft_array *a = ft_array_new(ctx, FT_F32, rank, dims);
  if (!a) return NULL;
  float *p = ft_array_data_mut(a);
  for (size_t i = 0; i < ft_array_nbytes(a) / sizeof(float); i++) {
    *seed = *seed * 1103515245u + 12345u;
    p[i] = scale * ((float)((*seed >> 8) & 0xffff) / 32768.0f - 1.0f);
  }
  return a;
}

int main(void) {
  int T = getenv("BENCH_T") ? atoi(getenv("BENCH_T")) : 1000;
  int reps = getenv("BENCH_REPS") ? atoi(getenv("BENCH_REPS")) : 7;
  if (T < 1 || reps < 1 || reps > 100) return fprintf(stderr, "bad BENCH_T or BENCH_REPS\n"), 2;
  ft_ctx *ctx = ft_ctx_new(NULL);
  const char *text = program(T);
  ft_jaxpr *j = ft_parse(ctx, text, strlen(text), "rnn");
  int arg[3] = {0, 1, 2};
  ft_jaxpr *g = j ? ft_grad(ctx, j, 3, arg, false) : NULL;
  ft_fn *f = g ? ft_jit(ctx, g, NULL) : NULL;
  if (!f) return fprintf(stderr, "rnn: %s\n", ft_ctx_error(ctx)), 1;
  unsigned seed = 7;
  int64_t dw[2] = {H, H}, du[2] = {D, H}, db[1] = {H}, dx[3] = {T, B, D};
  ft_array *in[4] = {filled(ctx, 2, dw, 0.05f, &seed), filled(ctx, 2, du, 0.1f, &seed),
                     filled(ctx, 1, db, 0.1f, &seed), filled(ctx, 3, dx, 1.0f, &seed)};
  ft_array *out[3] = {ft_array_new(ctx, FT_F32, 2, dw), ft_array_new(ctx, FT_F32, 2, du),
                      ft_array_new(ctx, FT_F32, 1, db)};
  double *t = malloc(sizeof(double) * (size_t)reps);
  for (int r = -1; r < reps; r++) {
    double t0 = now();
    if (ft_call_into(f, 4, (const ft_array *const *)in, 3, out)) return fprintf(stderr, "%s\n", ft_ctx_error(ctx)), 1;
    if (r >= 0) t[r] = 1e3 * (now() - t0);
  }
  qsort(t, (size_t)reps, sizeof t[0], cmp);
  ft_jit_stats st;
  ft_fn_stats(f, &st);
  printf("rnn_grad %.3f %.3f %zu %zu\n", t[reps / 2], t[0], st.arena_bytes, st.buffers_bytes);
  free(t);
  for (int k = 0; k < 4; k++) ft_array_free(in[k]);
  for (int k = 0; k < 3; k++) ft_array_free(out[k]);
  ft_fn_free(f);
  ft_jaxpr_free(g), ft_jaxpr_free(j);
  ft_ctx_free(ctx);
  return 0;
}
