/* bench/transforms/bench_grad.c: transform time against program size.
 * Builds chains of N elementwise equations on f32[8] (sin, mul by a
 * constant, add, tanh, repeating), takes ft_grad of sum(chain(x)), and
 * prints microseconds per equation for grad (jvp + partial evaluation +
 * DCE + transpose), for jvp alone, and for the verifier of the result;
 * for grad also the process CPU time per equation (user + system: what a
 * loaded machine changes least) and the minor page faults, both of the
 * repetition with the least CPU time.
 * Usage: bench_grad [N ...]   (default 1000 10000 100000) */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include "ft.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char *chain_text(int n) {
  size_t cap = (size_t)n * 64 + 256, k = 0;
  char *s = malloc(cap);
  if (!s) return NULL;
  k += (size_t)snprintf(s + k, cap - k, "{ lambda ; v0:f32[8]. let\n");
  static const char *ops[4] = {"sin v%d", "mul v%d 1.0001:f32[]", "add v%d 0.5:f32[]", "tanh v%d"};
  for (int i = 1; i <= n; i++) {
    k += (size_t)snprintf(s + k, cap - k, "    v%d:f32[8] = ", i);
    k += (size_t)snprintf(s + k, cap - k, ops[i % 4], i - 1);
    s[k++] = '\n';
  }
  snprintf(s + k, cap - k, "    out:f32[] = reduce_sum[axes=(0,) out_sharding=None] v%d\n  in (out,) }\n", n);
  return s;
}

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Best of `reps` runs, in seconds (wall); *cpu: the least CPU time, *faults:
 * the minor page faults of that run. */
static double time_best(int reps, ft_ctx *ctx, const ft_jaxpr *j, int which, double *cpu, long *faults) {
  double best = 1e30;
  *cpu = 1e30;
  for (int r = 0; r < reps; r++) {
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    double c0 = cpu_now(), t0 = now();
    ft_jaxpr *g = which == 0 ? ft_grad(ctx, j, 0, NULL, false) : ft_jvp(ctx, j);
    double t1 = now(), c1 = cpu_now();
    getrusage(RUSAGE_SELF, &r1);
    if (!g) {
      fprintf(stderr, "bench_grad: %s\n", ft_ctx_error(ctx));
      exit(1);
    }
    ft_jaxpr_free(g);
    if (t1 - t0 < best) best = t1 - t0;
    if (c1 - c0 < *cpu) *cpu = c1 - c0, *faults = r1.ru_minflt - r0.ru_minflt;
  }
  return best;
}

int main(int argc, char **argv) {
  int sizes[16] = {1000, 10000, 100000}, ns = 3;
  if (argc > 1) {
    ns = 0;
    for (int i = 1; i < argc && ns < 16; i++) sizes[ns++] = atoi(argv[i]);
  }
  setenv("FT_VERIFY", "0", 1); /* time the transforms; the verifier is its own column */
  ft_ctx *ctx = ft_ctx_new(NULL);
  printf("%10s %12s %14s %14s %12s %16s %18s %12s\n", "equations", "grad eqns", "grad us/eqn", "jvp us/eqn",
         "grad ms", "verify us/eqn", "grad cpu us/eqn", "grad faults");
  for (int s = 0; s < ns; s++) {
    int n = sizes[s];
    char *text = chain_text(n);
    ft_jaxpr *j = text ? ft_parse(ctx, text, strlen(text), "chain") : NULL;
    if (!j) {
      fprintf(stderr, "bench_grad: %s\n", ctx ? ft_ctx_error(ctx) : "out of memory");
      return 1;
    }
    int reps = n >= 100000 ? 3 : 10;
    double cg, cj;
    long fg = 0, fj = 0;
    double tg = time_best(reps, ctx, j, 0, &cg, &fg), tj = time_best(reps, ctx, j, 1, &cj, &fj);
    ft_jaxpr *g = ft_grad(ctx, j, 0, NULL, false);
    double t0 = now();
    ft_status st = ft_jaxpr_verify(ctx, g);
    double tv = now() - t0;
    printf("%10d %12d %14.3f %14.3f %12.2f %16.3f %18.3f %12ld%s\n", n + 1, ft_jaxpr_num_eqns(g),
           tg * 1e6 / (n + 1), tj * 1e6 / (n + 1), tg * 1e3, tv * 1e6 / ft_jaxpr_num_eqns(g), cg * 1e6 / (n + 1), fg,
           st ? " (verify FAILED)" : "");
    ft_jaxpr_free(g);
    ft_jaxpr_free(j);
    free(text);
  }
  ft_ctx_free(ctx);
  return 0;
}
