/* bench/ledger/bench_ledger.c: what the ledger costs a training loop. An MLP
 * classifier (softmax cross-entropy) is traced once and differentiated once
 * (ft_value_and_grad w.r.t. every weight and bias); a step runs that program
 * with the reference interpreter and applies SGD on the host. Two sizes: the
 * project's MLP training benchmark (bench/harness: 784-512-512-10, relu,
 * batch 128) and ftc demo's toy (4-16-3, tanh, batch 8), where the fixed
 * cost of a record dominates. Each step is
 * timed with no ledger and with a ledger attached at each call-logging
 * level and fsync policy; the table gives the median step time and the
 * overhead against no ledger (target at the hashes level: < 5%).
 *
 * At the hashes level a step appends one call record: the program's
 * canonical text and every argument and result (.npy bytes) are hashed, the
 * record is written and the log's parity updated. Nothing is stored.
 *
 * Usage: bench_ledger [STEPS]   (default 60 per configuration for the benchmark
 * MLP, ten times as many for the toy) */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ft.h"

/* widths[0] inputs, widths[n_layers] classes; relu or tanh between layers. */
typedef struct shape {
  const char *name;
  int batch, n_layers, widths[4];
  bool relu;
  int chunk;  /* steps a configuration runs before the next takes its turn */
} shape;

/* in: W1, b1, ..., Wn, bn, x, y. */
static int mlp_loss(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out;
  const shape *sh = user;
  int n = sh->n_layers;
  ft_val *h = in[2 * n];
  for (int l = 0; l < n; l++) {
    h = ft_np_add(ft_matmul(h, in[2 * l]), in[2 * l + 1]);
    if (l + 1 < n) h = sh->relu ? ft_relu(h) : ft_tanh(h);
  }
  int last = -1;
  ft_val *nll = ft_neg(ft_sum(ft_np_mul(in[2 * n + 1], ft_log_softmax(h, last)), 1, &last, false));
  out[0] = ft_mean(nll, -1, NULL, false);
  return 1;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, ft_ctx *ctx) {
  fprintf(stderr, "bench_ledger: %s: %s\n", what, ctx ? ft_ctx_error(ctx) : "");
  exit(1);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct config {
  const char *name;
  bool ledger;
  ft_ledger_calls calls;
  ft_ledger_fsync fsync;
} config;

static const config configs[] = {
    {"no ledger", false, FT_LEDGER_CALLS_NONE, FT_LEDGER_FSYNC_CLOSE},
    {"ledger, calls none", true, FT_LEDGER_CALLS_NONE, FT_LEDGER_FSYNC_CLOSE},
    {"ledger, calls hashes, fsync close", true, FT_LEDGER_CALLS_HASHES, FT_LEDGER_FSYNC_CLOSE},
    {"ledger, calls hashes, fsync every", true, FT_LEDGER_CALLS_HASHES, FT_LEDGER_FSYNC_EVERY},
    {"ledger, calls bytes, fsync close", true, FT_LEDGER_CALLS_BYTES, FT_LEDGER_FSYNC_CLOSE},
};
enum { N_CONFIGS = sizeof configs / sizeof configs[0] };

/* Median step times (s), per configuration, of `steps` SGD steps each. The
 * configurations take turns, `chunk` steps at a time (each with its own
 * context and ledger), so load from elsewhere and drift hit them alike. */
static void run_configs(const ft_jaxpr *vg, ft_array **p, int n_par, int steps, int chunk,
                        const char *dir, double *med) {
  ft_ctx *ctx[N_CONFIGS];
  ft_ledger *lg[N_CONFIGS] = {0};
  double *t = malloc(sizeof(double) * (size_t)steps * N_CONFIGS);
  for (int c = 0; c < N_CONFIGS; c++) {
    ctx[c] = ft_ctx_new(NULL);
    if (!configs[c].ledger) continue;
    char sub[64];
    snprintf(sub, sizeof sub, "%s/%d", dir, c);
    ft_ledger_options o = {.size = sizeof(ft_ledger_options), .calls = configs[c].calls, .fsync = configs[c].fsync};
    if (!(lg[c] = ft_ledger_open(ctx[c], sub, &o))) die("ledger", ctx[c]);
    ft_ctx_attach_ledger(ctx[c], lg[c]);
  }
  for (int s = 0; s < steps * N_CONFIGS; s++) {
    int c = (s / chunk) % N_CONFIGS, at = s / (chunk * N_CONFIGS) * chunk + s % chunk;
    ft_array *out[8] = {0};
    double t0 = now();
    if (ft_eval(ctx[c], vg, n_par + 2, (const ft_array *const *)p, n_par + 1, out) != FT_OK) die("eval", ctx[c]);
    for (int k = 0; k < n_par; k++) {
      float *w = ft_array_data_mut(p[k]);
      const float *g = ft_array_data(out[1 + k]);
      size_t n = ft_array_nbytes(p[k]) / sizeof(float);
      for (size_t i = 0; i < n; i++) w[i] -= 0.01f * g[i];
    }
    t[c * steps + at] = now() - t0;
    for (int k = 0; k <= n_par; k++) ft_array_free(out[k]);
  }
  for (int c = 0; c < N_CONFIGS; c++) {
    if (ft_ledger_close(lg[c]) != FT_OK) die("close", ctx[c]);
    ft_ctx_free(ctx[c]);
    qsort(t + c * steps, (size_t)steps, sizeof *t, cmp_double);
    med[c] = t[c * steps + steps / 2];
  }
  free(t);
}

static void bench_shape(shape sh, int steps) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  int n_par = 2 * sh.n_layers, n_in = n_par + 2;
  int64_t dims[8][2];
  int ranks[8];
  for (int l = 0; l < sh.n_layers; l++) {
    dims[2 * l][0] = sh.widths[l], dims[2 * l][1] = sh.widths[l + 1], ranks[2 * l] = 2;
    dims[2 * l + 1][0] = sh.widths[l + 1], ranks[2 * l + 1] = 1;
  }
  dims[n_par][0] = sh.batch, dims[n_par][1] = sh.widths[0], ranks[n_par] = 2;
  dims[n_par + 1][0] = sh.batch, dims[n_par + 1][1] = sh.widths[sh.n_layers], ranks[n_par + 1] = 2;
  int classes = sh.widths[sh.n_layers];
  ft_aval av[8];
  ft_array *p[8];
  memset(av, 0, sizeof av);
  uint64_t seed = 1;
  for (int i = 0; i < n_in; i++) {
    av[i].dtype = FT_F32;
    av[i].rank = ranks[i];
    memcpy(av[i].dims, dims[i], sizeof(int64_t) * (size_t)ranks[i]);
    if (!(p[i] = ft_array_new(ctx, FT_F32, ranks[i], dims[i]))) die("array", ctx);
    float *d = ft_array_data_mut(p[i]);
    size_t n = ft_array_nbytes(p[i]) / sizeof(float);
    for (size_t k = 0; k < n; k++) {
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      d[k] = i == n_in - 1 ? (float)((k % (size_t)classes) == (k / (size_t)classes) % (size_t)classes)
                           : (float)((double)(seed >> 40) / (double)(1ULL << 24) - 0.5) * 0.1f;
    }
  }
  ft_jaxpr *j = ft_trace(ctx, mlp_loss, &sh, n_in, av);
  const int argnums[6] = {0, 1, 2, 3, 4, 5};
  ft_jaxpr *vg = j ? ft_value_and_grad(ctx, j, n_par, argnums, false) : NULL;
  if (!vg) die("trace/grad", ctx);

  double med[N_CONFIGS];
  char dir[] = "/tmp/bench-ledger-XXXXXX";
  if (!mkdtemp(dir)) die("mkdtemp", NULL);
  run_configs(vg, p, n_par, steps, sh.chunk, dir, med);
  printf("\n%s (value_and_grad: %d equations), median of %d steps each\n", sh.name,
         ft_jaxpr_num_eqns(vg), steps);
  printf("| %-36s | %12s | %9s |\n", "configuration", "step (µs)", "overhead");
  printf("|%s|%s|%s|\n", "--------------------------------------", "--------------", "-----------");
  for (int c = 0; c < N_CONFIGS; c++) {
    char ov[32] = "—";
    if (c) snprintf(ov, sizeof ov, "%+.1f%%", 100.0 * (med[c] - med[0]) / med[0]);
    printf("| %-36s | %12.1f | %9s |\n", configs[c].name, med[c] * 1e6, ov);
  }
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd)) fprintf(stderr, "bench_ledger: could not remove %s\n", dir);
  for (int i = 0; i < n_in; i++) ft_array_free(p[i]);
  ft_jaxpr_free(j), ft_jaxpr_free(vg);
  ft_ctx_free(ctx);
}

int main(int argc, char **argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 60;
  if (steps < 1) steps = 1;
  printf("ledger overhead on an MLP training step (reference interpreter)\n");
  bench_shape((shape){"MLP 784-512-512-10, relu, batch 128 (the harness's mlp_step)", 128, 3,
                      {784, 512, 512, 10}, true, 1}, steps);
  bench_shape((shape){"MLP 4-16-3, tanh, batch 8 (ftc demo's toy)", 8, 2, {4, 16, 3}, false, 100},
              steps * 10);
  return 0;
}
