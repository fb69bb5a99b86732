/* bench/exec/bench_exec.c: the executor's figures (issue 7), printed as a
 * table in one run:
 *   1. overhead per task: empty tasks in a chain (one per wave), in one wide
 *      wave, and 8 per wave over 125 waves, on 1 and 2 threads;
 *   2. 2-thread speedup on a compute-bound synthetic DAG (two branches of
 *      chunked arithmetic), on the fused elementwise chain
 *      tanh(x)*logistic(x)+x*x over 16M f32, and on an MLP training step
 *      (grad_mlp_loss at 512x1024x1024x256), and on the harness's own
 *      mlp_step (bench/exec/mlp_step.jaxpr: bench/harness/worker.c's
 *      training step, 784-512-512-10 at batch 128, as that worker traces it);
 *   3. planned arena peak against the sum of all intermediates (and the
 *      lower bound: the most bytes live at once) for golden programs.
 * Usage: bench_exec [FIXTURES_GOLDEN_DIR [speedup ROUNDS]]; with `speedup`,
 * only the 2-thread speedups, ROUNDS times back to back, and their medians.
 * A benchmark: it asserts nothing.
 * Times are the best of several runs (this machine is shared and noisy). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lower/lower.h"
#include "runtime/exec.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static ft_ctx *C;

static void die(const char *what) {
  fprintf(stderr, "bench_exec: %s: %s\n", what, ft_ctx_error(C));
  exit(1);
}

/* ------------------------------------------------------------- overhead */
static ft_status empty_fn(ft_exec_call *c, void *u, int64_t lo, int64_t hi) { return FT_OK; }

/* ns per task of a DAG of n empty tasks, waves of `width` (each depends on
 * every task of the previous wave). */
static double overhead(ft_pool *pool, int n, int width) {
  ft_exec_task *t = calloc((size_t)n, sizeof *t);
  int *deps = calloc((size_t)n * (size_t)width + 1, sizeof *deps);
  for (int i = 0; i < n; i++) {
    int w = i / width;
    t[i] = (ft_exec_task){.name = "empty", .fn = empty_fn, .extent = 1};
    if (w > 0) {
      t[i].n_deps = width;
      t[i].deps = &deps[(size_t)i * (size_t)width];
      for (int k = 0; k < width; k++) deps[(size_t)i * (size_t)width + (size_t)k] = (w - 1) * width + k;
    }
  }
  ft_exec *x = ft_exec_new(C, n, t, &(ft_exec_options){.pool = pool});
  if (!x) die("overhead");
  double best = 1e9;
  for (int rep = 0; rep < 200; rep++) {
    double t0 = now();
    ft_exec_run(x, C, NULL, NULL);
    double dt = now() - t0;
    if (dt < best) best = dt;
  }
  ft_exec_free(x);
  free(t), free(deps);
  return best / n * 1e9;
}

/* -------------------------------------------------- compute-bound DAG */
static volatile double sink;
static ft_status burn_fn(ft_exec_call *c, void *u, int64_t lo, int64_t hi) {
  double acc = 0;
  for (int64_t i = lo; i < hi; i++) {
    double x = (double)i * 1e-3;
    for (int k = 0; k < 2000; k++) x = x * 0.999999 + 1e-6;
    acc += x;
  }
  sink = acc;
  return FT_OK;
}

static double synthetic(ft_pool *pool) {
  /* two branches of 6 chained tasks, each 256 items in 32 chunks, joined */
  enum { N = 13 };
  ft_exec_task t[N];
  int deps[N][2];
  for (int i = 0; i < 12; i++) {
    deps[i][0] = i - 2;
    t[i] = (ft_exec_task){.name = i % 2 ? "right" : "left", .fn = burn_fn, .extent = 256,
                          .grain = 8, .n_deps = i >= 2, .deps = deps[i]};
  }
  deps[12][0] = 10, deps[12][1] = 11;
  t[12] = (ft_exec_task){.name = "join", .fn = burn_fn, .extent = 256, .grain = 8, .n_deps = 2,
                         .deps = deps[12]};
  ft_exec *x = ft_exec_new(C, N, t, &(ft_exec_options){.pool = pool});
  double best = 1e9;
  for (int rep = 0; rep < 7; rep++) {
    double t0 = now();
    ft_exec_run(x, C, NULL, NULL);
    double dt = now() - t0;
    if (dt < best) best = dt;
  }
  ft_exec_free(x);
  return best;
}

/* ------------------------------------------------------------ programs */
typedef struct prog {
  ft_jaxpr *j;
  ft_program *p;
  ft_jit_code *code;
  int n_in, n_out;
  ft_array *in[16], *out[16];
} prog;

static void prog_load(prog *g, const char *text) {
  memset(g, 0, sizeof *g);
  if (!(g->j = ft_parse(C, text, strlen(text), "bench"))) die("parse");
  if (ft_exec_compile(C, g->j, &g->p, &g->code)) die("compile");
  g->n_in = ft_interp_num_args(g->j);
  g->n_out = ft_jaxpr_num_outputs(g->j);
  uint64_t s = 7;
  for (int k = 0; k < g->n_in; k++) {
    ft_aval a;
    ft_jaxpr_input_aval(g->j, k, &a);
    g->in[k] = ft_array_alloc(C, &a);
    float *d = g->in[k]->data;
    if (a.dtype != FT_F32) continue;
    for (int64_t i = 0; i < ft_array_size(g->in[k]); i++) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      d[i] = (float)((double)(s >> 11) * 0x1p-53 - 0.5);
    }
  }
  for (int k = 0; k < g->n_out; k++) {
    ft_aval a;
    ft_jaxpr_output_aval(g->j, k, &a);
    g->out[k] = ft_array_alloc(C, &a);
  }
}

static void prog_free(prog *g) {
  for (int k = 0; k < g->n_in; k++) ft_array_free(g->in[k]);
  for (int k = 0; k < g->n_out; k++) ft_array_free(g->out[k]);
  if (g->code) ft_jit_code_release(g->code);
  ft_program_free(g->p);
  ft_jaxpr_free(g->j);
}

static double prog_time(prog *g, ft_pool *pool, int reps, ft_bufplan_stats *st) {
  ft_prog_exec *pe = ft_prog_exec_new(C, g->p, pool, NULL);
  if (!pe) die("prog_exec");
  if (st) *st = ft_prog_exec_plan_stats(pe);
  ft_prog_exec_run(pe, C, (const ft_array *const *)g->in, g->out, NULL);
  double best = 1e9;
  for (int rep = 0; rep < reps; rep++) {
    double t0 = now();
    if (ft_prog_exec_run(pe, C, (const ft_array *const *)g->in, g->out, NULL)) die("run");
    double dt = now() - t0;
    if (dt < best) best = dt;
  }
  ft_prog_exec_free(pe);
  return best;
}

static const char *SCALAR = "{ lambda ; x:f32[]. let\n    a:f32[] = mul x 2.0:f32[]\n"
                            "    b:f32[] = add a 1.0:f32[]\n  in (b,) }";

static const char *CHAIN = "{ lambda ; x:f32[16777216]. let\n"
                           "    a:f32[16777216] = tanh x\n    b:f32[16777216] = logistic x\n"
                           "    c:f32[16777216] = mul a b\n    d:f32[16777216] = mul x x\n"
                           "    e:f32[16777216] = add c d\n  in (e,) }";

/* The harness's training step, as bench/harness/worker.c traces it
 * (value_and_grad of the relu MLP loss, then the SGD update), printed by
 * ft_jaxpr_print; paths are relative to the repository root (run.sh). */
#define MLP_STEP "bench/exec/mlp_step.jaxpr"

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = malloc(1 << 16);
  size_t n = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
  fclose(f);
  if (buf) buf[n] = 0;
  return buf;
}

/* grad_mlp_loss's text with its sizes scaled (B=512, D=1024, H=1024, O=256). */
static char *mlp_text(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/grad_mlp_loss.jaxpr", dir);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  static char src[8192];
  size_t n = fread(src, 1, sizeof src - 1, f);
  fclose(f);
  src[n] = 0;
  static const char *const from[] = {"[4,3]", "[3,4]", "[3,2]", "[2,3]", "[5,3]", "[5,2]", "[5,4]",
                                     "[1,3]", "[1,2]", "[3]", "[2]", "(1, 3)", "(1, 2)", "10.0:f32[]"};
  static const char *const to[] = {"[1024,1024]", "[1024,1024]", "[1024,256]", "[256,1024]",
                                   "[512,1024]", "[512,256]", "[512,1024]", "[1,1024]", "[1,256]",
                                   "[1024]", "[256]", "(1, 1024)", "(1, 256)", "131072.0:f32[]"};
  char *out = malloc(4 * sizeof src);
  size_t o = 0;
  for (const char *p = src; *p;) {
    size_t k = 0;
    for (; k < sizeof from / sizeof from[0]; k++)
      if (!strncmp(p, from[k], strlen(from[k]))) break;
    if (k < sizeof from / sizeof from[0]) {
      o += (size_t)sprintf(out + o, "%s", to[k]);
      p += strlen(from[k]);
    } else {
      out[o++] = *p++;
    }
  }
  out[o] = 0;
  return out;
}

static void plan_row(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.jaxpr", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) return;
  static char text[1 << 16];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  prog g;
  prog_load(&g, text);
  ft_prog_exec *pe = ft_prog_exec_new(C, g.p, NULL, NULL);
  ft_bufplan_stats st = ft_prog_exec_plan_stats(pe);
  printf("| %-26s | %5d | %10zu | %10zu | %10zu | %5.2f |\n", name, g.p->n_steps, st.sum, st.peak,
         st.lower_bound, st.peak ? (double)st.sum / (double)st.peak : 0);
  ft_prog_exec_free(pe);
  prog_free(&g);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The 2-thread speedup the program's chunking allows, from a 1-thread
 * profile: each task's best busy time split evenly over its chunks, each
 * wave's chunks scheduled longest first on 2 threads, waves one after the
 * other (the barrier). A shared machine inflates all chunks about alike,
 * so this ratio is steadier than wall times there; it ignores memory
 * bandwidth and the cost of waking a thread. */
static double modeled_speedup(prog *g, ft_pool *p1) {
  ft_prog_exec *pe = ft_prog_exec_new(C, g->p, p1, NULL);
  if (!pe) die("prog_exec");
  ft_exec *x = ft_prog_exec_executor(pe);
  ft_exec_profile *prof = ft_exec_profile_new(x);
  for (int r = 0; r < 5; r++)
    if (ft_prog_exec_run(pe, C, (const ft_array *const *)g->in, g->out, prof)) die("run");
  int nt = ft_exec_num_tasks(x), nw = ft_exec_num_waves(x);
  bool *done = calloc((size_t)nt, sizeof *done);
  double serial = 0, modeled = 0;
  for (int w = 0; w < nw; w++) {
    double th[2] = {0, 0};
    for (;;) { /* the task of longest chunks first; its chunks to the less loaded thread */
      int best = -1;
      double len = -1, busy = 0;
      for (int t = 0; t < nt; t++) {
        ft_exec_task_stats st;
        if (done[t] || ft_exec_task_wave(x, t) != w || ft_exec_task_chunks(x, t) <= 0) continue;
        ft_exec_profile_task(prof, t, &st);
        double c = st.min_ms / (double)ft_exec_task_chunks(x, t);
        if (c > len) len = c, best = t, busy = st.min_ms;
      }
      if (best < 0) break;
      done[best] = true;
      serial += busy;
      for (int64_t k = 0; k < ft_exec_task_chunks(x, best); k++) *(th[0] <= th[1] ? &th[0] : &th[1]) += len;
    }
    modeled += th[0] > th[1] ? th[0] : th[1];
  }
  free(done);
  ft_exec_profile_free(prof);
  ft_prog_exec_free(pe);
  return modeled > 0 ? serial / modeled : 0;
}

/* `bench_exec DIR speedup R`: only the 2-thread speedups, R rounds; each
 * round times 1 thread then 2 threads back to back (best of several calls
 * each), so a shared machine's drifts hit both alike; prints every round's
 * ratio and the median. */
static void speedup_rounds(const char *dir, ft_pool *p1, ft_pool *p2, int rounds) {
  enum { R = 32, NW = 4 };
  double rs[NW][R], t[NW][2][R];
  if (rounds > R) rounds = R;
  prog chain, mlp, step;
  prog_load(&chain, CHAIN);
  char *mt = mlp_text(dir), *st = read_text(MLP_STEP);
  if (!mt) die("grad_mlp_loss.jaxpr");
  if (!st) die(MLP_STEP);
  prog_load(&mlp, mt);
  prog_load(&step, st);
  printf("modeled from a 1-thread profile (chunking and waves alone): chain %.2fx, mlp %.2fx, "
         "mlp_step %.2fx\n",
         modeled_speedup(&chain, p1), modeled_speedup(&mlp, p1), modeled_speedup(&step, p1));
  for (int r = 0; r < rounds; r++) {
    t[0][0][r] = synthetic(p1), t[0][1][r] = synthetic(p2);
    t[1][0][r] = prog_time(&chain, p1, 5, NULL), t[1][1][r] = prog_time(&chain, p2, 5, NULL);
    t[2][0][r] = prog_time(&mlp, p1, 3, NULL), t[2][1][r] = prog_time(&mlp, p2, 3, NULL);
    t[3][0][r] = prog_time(&step, p1, 20, NULL), t[3][1][r] = prog_time(&step, p2, 20, NULL);
    for (int w = 0; w < NW; w++) rs[w][r] = t[w][0][r] / t[w][1][r];
    printf("round %d: synthetic %.2fx (%.1f/%.1f ms), chain %.2fx (%.1f/%.1f ms), mlp %.2fx (%.1f/%.1f ms), "
           "mlp_step %.2fx (%.2f/%.2f ms)\n",
           r, rs[0][r], t[0][0][r] * 1e3, t[0][1][r] * 1e3, rs[1][r], t[1][0][r] * 1e3,
           t[1][1][r] * 1e3, rs[2][r], t[2][0][r] * 1e3, t[2][1][r] * 1e3, rs[3][r],
           t[3][0][r] * 1e3, t[3][1][r] * 1e3);
    fflush(stdout);
  }
  static const char *const W[NW] = {"synthetic compute-bound DAG", "fused chain, 16M f32",
                                    "MLP step B512 D1024 H1024 O256",
                                    "harness mlp_step B128 784-512-512-10"};
  for (int w = 0; w < NW; w++) {
    qsort(rs[w], (size_t)rounds, sizeof rs[w][0], cmp_d);
    qsort(t[w][0], (size_t)rounds, sizeof t[w][0][0], cmp_d);
    qsort(t[w][1], (size_t)rounds, sizeof t[w][1][0], cmp_d);
    printf("%s: median speedup %.2fx over %d rounds (min %.2fx, max %.2fx); median times %.2f / %.2f ms; "
           "best times %.2f / %.2f ms (%.2fx)\n", W[w], rs[w][rounds / 2], rounds, rs[w][0],
           rs[w][rounds - 1], t[w][0][rounds / 2] * 1e3, t[w][1][rounds / 2] * 1e3, t[w][0][0] * 1e3,
           t[w][1][0] * 1e3, t[w][0][0] / t[w][1][0]);
  }
  prog_free(&chain);
  prog_free(&mlp);
  prog_free(&step);
  free(mt);
  free(st);
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "fixtures/golden";
  C = ft_ctx_new(NULL);
  ft_pool *p1 = ft_pool_new(1), *p2 = ft_pool_new(2);
  if (argc > 3 && !strcmp(argv[2], "speedup")) {
    speedup_rounds(dir, p1, p2, atoi(argv[3]));
    ft_pool_free(p1);
    ft_pool_free(p2);
    ft_ctx_free(C);
    return 0;
  }

  printf("## executor overhead per task (empty tasks; best of 200 runs)\n\n");
  printf("| DAG | 1 thread | 2 threads |\n|---|---|---|\n");
  printf("| chain of 1000 (1000 waves of 1) | %.0f ns | %.0f ns |\n", overhead(p1, 1000, 1), overhead(p2, 1000, 1));
  printf("| one wave of 1000 | %.0f ns | %.0f ns |\n", overhead(p1, 1000, 1000), overhead(p2, 1000, 1000));
  printf("| 125 waves of 8 | %.0f ns | %.0f ns |\n", overhead(p1, 1000, 8), overhead(p2, 1000, 8));

  printf("\n## ft_call_into of a scalar x*2+1 (the whole call path; best of 5 x 20000 calls)\n\n");
  printf("| threads | ns per call |\n|---|---|\n");
  for (int nt = 1; nt <= 2; nt++) {
    ft_ctx *cx = ft_ctx_new(&(ft_ctx_options){.size = sizeof(ft_ctx_options), .num_threads = nt});
    ft_jaxpr *sj = ft_parse(cx, SCALAR, strlen(SCALAR), "scalar");
    ft_fn *fn = sj ? ft_jit(cx, sj, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_disk_cache = true}) : NULL;
    if (!fn) die("scalar jit");
    ft_array *x = ft_array_new(cx, FT_F32, 0, NULL), *y = ft_array_new(cx, FT_F32, 0, NULL);
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
      double t0 = now();
      for (int i = 0; i < 20000; i++) ft_call_into(fn, 1, (const ft_array *const *)&x, 1, &y);
      double dt = (now() - t0) / 20000;
      if (dt < best) best = dt;
    }
    printf("| %d | %.0f |\n", nt, best * 1e9);
    ft_array_free(x), ft_array_free(y);
    ft_fn_free(fn);
    ft_jaxpr_free(sj);
    ft_ctx_free(cx);
  }

  printf("\n## 2-thread speedup (best of several runs)\n\n");
  printf("| workload | 1 thread | 2 threads | speedup |\n|---|---|---|---|\n");
  double s1 = synthetic(p1), s2 = synthetic(p2);
  printf("| synthetic compute-bound DAG (13 tasks x 32 chunks) | %.2f ms | %.2f ms | %.2fx |\n",
         s1 * 1e3, s2 * 1e3, s1 / s2);
  prog chain;
  prog_load(&chain, CHAIN);
  double c1 = prog_time(&chain, p1, 15, NULL), c2 = prog_time(&chain, p2, 15, NULL);
  printf("| fused tanh(x)*logistic(x)+x*x, 16M f32 | %.2f ms (%.1f GB/s) | %.2f ms (%.1f GB/s) | %.2fx |\n",
         c1 * 1e3, 8.0 * 16777216 / c1 * 1e-9, c2 * 1e3, 8.0 * 16777216 / c2 * 1e-9, c1 / c2);
  prog_free(&chain);
  char *mt = mlp_text(dir);
  if (mt) {
    prog mlp;
    prog_load(&mlp, mt);
    ft_bufplan_stats st;
    double m1 = prog_time(&mlp, p1, 5, &st), m2 = prog_time(&mlp, p2, 5, NULL);
    printf("| MLP training step (grad_mlp_loss, B512 D1024 H1024 O256; %d steps) | %.2f ms | %.2f ms | %.2fx |\n",
           mlp.p->n_steps, m1 * 1e3, m2 * 1e3, m1 / m2);
    printf("\nMLP step buffers: sum %zu B, planned peak %zu B, lower bound %zu B, %d in place\n",
           st.sum, st.peak, st.lower_bound, st.n_inplace);
    prog_free(&mlp);
    free(mt);
  }

  printf("\n## buffer plan: intermediates (bytes)\n\n");
  printf("| program | steps | sum | planned peak | lower bound | sum/peak |\n|---|---|---|---|---|---|\n");
  static const char *const NAMES[] = {"mlp_loss", "grad_mlp_loss", "jvp_mlp_loss", "x64_grad_mlp_f64",
                                      "softmax_xent", "value_and_grad_softmax_xent", "layer_norm",
                                      "grad_layer_norm", "grad_rnn_scan"};
  for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++) plan_row(dir, NAMES[i]);

  ft_pool_free(p1);
  ft_pool_free(p2);
  ft_ctx_free(C);
  return 0;
}
