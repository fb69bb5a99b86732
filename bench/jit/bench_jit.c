/* bench/jit/bench_jit.c: the JIT's three figures (issue 6), measured in one
 * run and printed as a table:
 *   1. the fused chain tanh(x)*logistic(x) + x*x on 16M f32, in GB/s (4 bytes
 *      read + 4 written per element) against a STREAM-copy loop over the same
 *      arrays measured in the same run;
 *   2. the call overhead of a jitted scalar x*2+1 (ft_call_into, no
 *      allocation; and ft_call, which allocates the output);
 *   3. compile time of an MLP training step (forward, grad, SGD update:
 *      fixtures/golden/grad_mlp_loss.jaxpr plus the update), first in the
 *      process (cold LLVM) and again (warm), caches bypassed.
 * Usage: bench_jit [FIXTURES_GOLDEN_DIR]. A benchmark, not a test: it asserts
 * nothing. Single thread (the executor of issue 7 adds threads). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ft.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static ft_jaxpr *parse(ft_ctx *c, const char *text) {
  ft_jaxpr *j = ft_parse(c, text, strlen(text), "bench");
  if (!j) {
    fprintf(stderr, "parse: %s\n", ft_ctx_error(c));
    exit(1);
  }
  return j;
}

static ft_fn *jit(ft_ctx *c, ft_jaxpr *j, bool no_cache) {
  ft_jit_options o = {.size = sizeof(ft_jit_options), .no_cache = no_cache};
  ft_fn *fn = ft_jit(c, j, &o);
  if (!fn) {
    fprintf(stderr, "jit: %s\n", ft_ctx_error(c));
    exit(1);
  }
  return fn;
}

/* The copy loop of STREAM, on the same 16M floats. */
static void __attribute__((noinline)) stream_copy(const float *restrict a, float *restrict b, long n) {
  for (long i = 0; i < n; i++) b[i] = a[i];
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 4096);
  size_t got = fread(b, 1, (size_t)n, f);
  b[got] = 0;
  fclose(f);
  return b;
}

int main(int argc, char **argv) {
  const char *golden = argc > 1 ? argv[1] : "fixtures/golden";
  ft_ctx *c = ft_ctx_new(NULL);

  /* ---- 3 first: the first compile in the process is the cold one */
  char path[4096];
  snprintf(path, sizeof path, "%s/grad_mlp_loss.jaxpr", golden);
  char *text = read_file(path);
  if (!text) {
    fprintf(stderr, "cannot read %s\n", path);
    return 1;
  }
  char *in_at = strstr(text, "  in (bi, bg, z, x) }");
  if (!in_at) {
    fprintf(stderr, "unexpected %s\n", path);
    return 1;
  }
  strcpy(in_at, "    u1:f32[4,3] = mul 0.01:f32[] bi\n    w1:f32[4,3] = sub a u1\n"
                "    u2:f32[3] = mul 0.01:f32[] bg\n    w2:f32[3] = sub b u2\n"
                "    u3:f32[3,2] = mul 0.01:f32[] z\n    w3:f32[3,2] = sub c u3\n"
                "    u4:f32[2] = mul 0.01:f32[] x\n    w4:f32[2] = sub d u4\n"
                "  in (w1, w2, w3, w4) }\n");
  ft_jaxpr *step = parse(c, text);
  free(text);
  double t0 = now();
  ft_fn *fs = jit(c, step, true);
  double cold_ms = (now() - t0) * 1e3;
  ft_jit_stats st;
  ft_fn_stats(fs, &st);
  ft_fn_free(fs);
  double warm_ms = 1e9;
  for (int r = 0; r < 5; r++) {
    t0 = now();
    fs = jit(c, step, true);
    double ms = (now() - t0) * 1e3;
    if (ms < warm_ms) warm_ms = ms, ft_fn_stats(fs, &st);
    ft_fn_free(fs);
  }
  ft_fn_free(jit(c, step, false)); /* fills the in-memory cache (and the disk cache) */
  t0 = now();
  fs = jit(c, step, false); /* an in-memory cache hit */
  double hit_ms = (now() - t0) * 1e3;
  ft_fn_free(fs);

  /* ---- 1: fused chain vs STREAM copy */
  const long N = 16L << 20;
  ft_jaxpr *chain = parse(c, "{ lambda ; x:f32[16777216]. let\n"
                             "    a:f32[16777216] = tanh x\n    b:f32[16777216] = logistic x\n"
                             "    p:f32[16777216] = mul a b\n    q:f32[16777216] = mul x x\n"
                             "    r:f32[16777216] = add p q\n  in (r,) }\n");
  ft_fn *fc = jit(c, chain, true);
  int64_t dims[1] = {N};
  ft_array *x = ft_array_new(c, FT_F32, 1, dims), *y = ft_array_new(c, FT_F32, 1, dims);
  float *xd = ft_array_data_mut(x);
  for (long i = 0; i < N; i++) xd[i] = (float)((i % 2001) - 1000) * 0.004f;
  double best_chain = 1e9, best_copy = 1e9;
  for (int r = 0; r < 7; r++) {
    t0 = now();
    if (ft_call_into(fc, 1, (const ft_array *const *)&x, 1, &y) != FT_OK) {
      fprintf(stderr, "call: %s\n", ft_ctx_error(c));
      return 1;
    }
    double t = now() - t0;
    if (t < best_chain) best_chain = t;
    t0 = now();
    stream_copy(xd, ft_array_data_mut(y), N);
    t = now() - t0;
    if (t < best_copy) best_copy = t;
  }
  ft_call_into(fc, 1, (const ft_array *const *)&x, 1, &y); /* y holds the chain again for the value check */
  double gbs_chain = 8.0 * (double)N / best_chain * 1e-9, gbs_copy = 8.0 * (double)N / best_copy * 1e-9;

  /* ---- 2: call overhead of a scalar function */
  ft_jaxpr *sc = parse(c, "{ lambda ; x:f32[]. let\n    a:f32[] = mul x 2.0:f32[]\n"
                          "    b:f32[] = add a 1.0:f32[]\n  in (b,) }\n");
  ft_fn *fsc = jit(c, sc, true);
  float v = 3.0f;
  ft_array *xs = ft_array_from_data(c, FT_F32, 0, NULL, &v), *ys = ft_array_new(c, FT_F32, 0, NULL);
  const int CALLS = 2000000;
  double best_into = 1e9, best_call = 1e9;
  for (int r = 0; r < 3; r++) {
    t0 = now();
    for (int i = 0; i < CALLS; i++) ft_call_into(fsc, 1, (const ft_array *const *)&xs, 1, &ys);
    double t = (now() - t0) / CALLS * 1e9;
    if (t < best_into) best_into = t;
    t0 = now();
    for (int i = 0; i < CALLS / 10; i++) {
      ft_array *o;
      ft_call(fsc, 1, (const ft_array *const *)&xs, 1, &o);
      ft_array_free(o);
    }
    t = (now() - t0) / (CALLS / 10) * 1e9;
    if (t < best_call) best_call = t;
  }

  printf("| figure | value | reference | ratio |\n|---|---|---|---|\n");
  printf("| fused tanh(x)*logistic(x)+x*x, 16M f32 (1 thread) | %.1f GB/s (%.2f ms) | STREAM copy %.1f GB/s | %.0f%% |\n",
         gbs_chain, best_chain * 1e3, gbs_copy, 100 * gbs_chain / gbs_copy);
  printf("| call overhead, scalar x*2+1, ft_call_into | %.0f ns/call | target < 300 ns | |\n", best_into);
  printf("| call overhead, scalar x*2+1, ft_call (allocates the output) | %.0f ns/call | | |\n", best_call);
  printf("| compile MLP training step (%d eqns: %d kernels, %d GEMM, %d fallback), first in process | %.1f ms | target < 60 ms | |\n",
         ft_jaxpr_num_eqns(step), st.n_kernels, st.n_gemm, st.n_fallback, cold_ms);
  printf("| compile MLP training step, warm LLVM (plan %.2f + opt %.1f + codegen %.1f + load %.1f) | %.1f ms | | |\n",
         st.plan_ms, st.opt_ms, st.codegen_ms, st.load_ms, warm_ms);
  printf("| ft_jit of the same step again (in-memory cache hit, incl. planning) | %.2f ms | | |\n", hit_ms);
  FILE *la = fopen("/proc/loadavg", "r");
  char load[64] = "?";
  if (la && fgets(load, sizeof load, la)) load[strcspn(load, " ")] = 0;
  if (la) fclose(la);
  printf("\nload average at the end: %s (on a busy machine every time above is inflated)\n", load);
  printf("value check: y[12345] = %.9g\n", (double)((const float *)ft_array_data(y))[12345]);

  ft_array_free(x), ft_array_free(y), ft_array_free(xs), ft_array_free(ys);
  ft_fn_free(fc), ft_fn_free(fsc);
  ft_jaxpr_free(chain), ft_jaxpr_free(sc), ft_jaxpr_free(step);
  ft_ctx_free(c);
  return 0;
}
