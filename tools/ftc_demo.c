/* tools/ftc_demo.c: `ftc demo`, the main job (docs/demo.md). It trains a
 * digit classifier on the 1,797 UCI digits (data/digits/) and shows every
 * stage: the traced loss, its value-and-gradient (ft_value_and_grad), the
 * whole training step (forward, gradient, Adam) as one program, the
 * e-graph's optimization, the compiled plan (ft_jit), JAX's initialization
 * reproduced bit for bit, one step JIT == interpreter, the training loop
 * (ft_call_into, no allocation per step) with accuracy per epoch, the
 * distance from JAX's own run (fixtures/demo/, tools/oracle/gen_demo.py),
 * bitwise identity across thread counts and reruns, PNG plots (cairo) and
 * the ledger. The programs live in ftc_demo_model.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ftc.h"
#include "ftc_demo.h"

#ifndef FTC_DEMO_DATA
#define FTC_DEMO_DATA "data/digits"
#endif
#ifndef FTC_DEMO_JAX
#define FTC_DEMO_JAX "fixtures/demo"
#endif

typedef struct opts {
  int epochs, batch, seed, threads;
  int dp;                   /* --dp N: data-parallel over a mesh of N devices (0: off) */
  demo_model model;
  const char *plot_dir, *data_dir, *jax_dir;
  bool quiet;
} opts;

/* The result of one training run: what the checks compare. */
typedef struct run_result {
  float *losses;            /* per step */
  int n_steps;
  double *acc_train, *acc_test;  /* per epoch */
  double *ep_loss, *ep_sps;      /* mean loss and steps/s per epoch */
  int32_t *pred_test;       /* final predictions on the test set */
  uint64_t init_hash, final_hash;
  uint64_t *epoch_hash;     /* the weights after each epoch */
  double train_s;
} run_result;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int demo_usage(void) {
  printf("usage: ftc demo [--epochs N] [--batch N] [--model mlp|cnn] [--seed N] [--threads N]\n"
         "                [--dp N] [--plot DIR] [--data DIR] [--jax DIR] [--quiet] [--ledger DIR]\n\n"
         "Trains a classifier of the 1,797 8x8 UCI handwritten digits (scikit-learn's\n"
         "copy, data/digits; 1,442 training and 355 test images, a fixed stratified\n"
         "split) and shows each stage of FrankenTrace on the way:\n"
         "  1. the loss, traced from C into a jaxpr (JAX's text format);\n"
         "  2. its value and gradient w.r.t. the weights (ft_value_and_grad);\n"
         "  3. the whole training step - forward, gradient, Adam update - as one\n"
         "     program, flattened (ft_inline) and optimized by the e-graph (ft_optimize);\n"
         "  4. compiled by the JIT (ft_jit): kernels, GEMM calls, compile time;\n"
         "  5. initialization with jax.random's threefry, bit for bit JAX's;\n"
         "  6. one step run by the JIT and by the interpreter: bit for bit equal;\n"
         "  7. training with Adam on shuffled minibatches, one ft_call_into per step;\n"
         "  8. the distance from JAX's run of the same program (fixtures/demo), and\n"
         "     the same bits for FT_NUM_THREADS=1, 2 and 8 and for a rerun.\n\n"
         "Models: an MLP 64-%d-10 (ReLU); a CNN: 3x3 convolution to %d channels (same\n"
         "padding, ReLU), 2x2 max pooling, dense 128-10. Softmax cross-entropy,\n"
         "Glorot-uniform init.\n"
         "Adam: learning rate %g, b1 %g, b2 %g, eps %g.\n\n"
         "Options:\n"
         "  --epochs N    passes over the training set (default 12)\n"
         "  --batch N     minibatch size (default 32; the last partial batch is dropped)\n"
         "  --model NAME  mlp (the default) or cnn\n"
         "  --seed N      the jax.random.key seed (default 0)\n"
         "  --threads N   executor threads of the main run (default: FT_NUM_THREADS or\n"
         "                the core count)\n"
         "  --plot DIR    write DIR/curves.png (loss, accuracy) and DIR/confusion.png\n"
         "  --data DIR    the digits (default %s)\n"
         "  --jax DIR     JAX's recorded runs (default %s); a run whose initial\n"
         "                weights or per-step loss disagree with them fails\n"
         "  --dp N        data-parallel: the gradient as a shard_map over N devices (1..8;\n"
         "                N divides the batch), each the mean loss of its shard, psummed\n"
         "                in device order; under mpirun -n P (P dividing N) each rank runs\n"
         "                N/P devices, with the same final weights as one process\n"
         "  --quiet       print only the summary\n"
         "  --ledger DIR  (global ftc option) record the stages, the first step and\n"
         "                the final evaluation; then\n"
         "                ftledger verify DIR && ftledger replay DIR && ftledger reexec DIR\n",
         DEMO_HIDDEN, DEMO_CNN_CH, DEMO_LR, DEMO_B1, DEMO_B2, DEMO_EPS, FTC_DEMO_DATA, FTC_DEMO_JAX);
  return 0;
}

static int parse_int(const char *opt, const char *v, int lo, int hi, int *out) {
  char *end;
  long x = v ? strtol(v, &end, 10) : 0;
  if (!v || !*v || *end || x < lo || x > hi)
    return ftc_usage("demo", "%s takes an integer in %d..%d, not '%s'", opt, lo, hi, v ? v : "");
  *out = (int)x;
  return 0;
}

static int parse_opts(int argc, char **argv, opts *o) {
  *o = (opts){.epochs = 12, .batch = 32, .seed = 0, .threads = 0, .model = DEMO_MLP,
              .data_dir = FTC_DEMO_DATA, .jax_dir = FTC_DEMO_JAX};
  for (int i = 1; i < argc; i++) {
    char *a = argv[i], *eq = strchr(a, '='), *v;
    char name[64];
    size_t nl = eq ? (size_t)(eq - a) : strlen(a);
    if (nl >= sizeof name) return ftc_usage("demo", "unknown option '%s'", a);
    memcpy(name, a, nl);
    name[nl] = 0;
    if (!strcmp(name, "--quiet")) {
      if (eq) return ftc_usage("demo", "--quiet takes no value");
      o->quiet = true;
      continue;
    }
    v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
    int rc = 0;
    if (!strcmp(name, "--epochs")) rc = parse_int(name, v, 1, 1000, &o->epochs);
    else if (!strcmp(name, "--batch")) rc = parse_int(name, v, 1, 1442, &o->batch);
    else if (!strcmp(name, "--seed")) rc = parse_int(name, v, 0, 2147483647, &o->seed);
    else if (!strcmp(name, "--threads")) rc = parse_int(name, v, 1, 256, &o->threads);
    else if (!strcmp(name, "--dp")) rc = parse_int(name, v, 1, 8, &o->dp);
    else if (!strcmp(name, "--plot") || !strcmp(name, "--data") || !strcmp(name, "--jax")) {
      if (!v || !*v) return ftc_usage("demo", "%s takes a directory", name);
      *(!strcmp(name, "--plot") ? &o->plot_dir : !strcmp(name, "--data") ? &o->data_dir : &o->jax_dir) = v;
    } else if (!strcmp(name, "--model")) {
      if (v && !strcmp(v, "mlp")) o->model = DEMO_MLP;
      else if (v && !strcmp(v, "cnn")) o->model = DEMO_CNN;
      else return ftc_usage("demo", "--model takes mlp or cnn, not '%s'", v ? v : "");
    } else return ftc_usage("demo", "unknown option '%s'", a);
    if (rc) return rc;
  }
  return 0;
}

/* ------------------------------------------------------------- printing */

/* Prints a stage's jaxpr (unless quiet) and its equation count. */
static int show(ft_ctx *ctx, const opts *o, const char *title, const ft_jaxpr *j) {
  char h[33];
  ft_jaxpr_hash_hex(j, h);
  printf("\n== %s: %d equations (hash %.12s)\n", title, ft_jaxpr_num_eqns(j), h);
  if (o->quiet) return 0;
  char *text = ft_jaxpr_print(ctx, j);
  if (!text) return 1;
  fputs(text, stdout);
  if (!*text || text[strlen(text) - 1] != '\n') putchar('\n');
  ft_free(text);
  return 0;
}

static void progress(bool tty, int epoch, int epochs, int step, int steps, double loss) {
  if (!tty) return;
  char bar[31];
  int fill = steps ? step * 30 / steps : 30;
  for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
  bar[30] = 0;
  printf("\repoch %2d/%d [%s] %3d/%d  loss %.4f", epoch + 1, epochs, bar, step, steps, loss);
  fflush(stdout);
}

/* ------------------------------------------------------------- training */

typedef struct programs {
  ft_fn *init, *step, *perm, *pred_train, *pred_test;
  int np;
} programs;

static void programs_free(programs *p) {
  ft_fn_free(p->init);
  ft_fn_free(p->step);
  ft_fn_free(p->perm);
  ft_fn_free(p->pred_train);
  ft_fn_free(p->pred_test);
  memset(p, 0, sizeof *p);
}

/* Compiles the five programs on ctx. step_j is the optimized step. */
static int programs_make(ft_ctx *ctx, const opts *o, const demo_data *d, const ft_jaxpr *step_j,
                         programs *p) {
  memset(p, 0, sizeof *p);
  ft_aval av[DEMO_MAX_PARAMS];
  p->np = demo_param_avals(o->model, av);
  ft_jaxpr *ji = demo_trace_init(ctx, o->model), *jp = demo_trace_perm(ctx, d->n_train);
  ft_jaxpr *jt = demo_trace_predict(ctx, o->model, d->n_train);
  ft_jaxpr *je = demo_trace_predict(ctx, o->model, d->n_test);
  const ft_jit_options *jo = ftc_jit_options();
  if (ji && jp && jt && je) {
    p->init = ft_jit(ctx, ji, jo);
    p->step = p->init ? ft_jit(ctx, step_j, jo) : NULL;
    p->perm = p->step ? ft_jit(ctx, jp, jo) : NULL;
    p->pred_train = p->perm ? ft_jit(ctx, jt, jo) : NULL;
    p->pred_test = p->pred_train ? ft_jit(ctx, je, jo) : NULL;
  }
  ft_jaxpr_free(ji);
  ft_jaxpr_free(jp);
  ft_jaxpr_free(jt);
  ft_jaxpr_free(je);
  if (!p->pred_test) {
    programs_free(p);
    return 1;
  }
  return 0;
}

static void result_free(run_result *r) {
  free(r->losses);
  free(r->acc_train);
  free(r->acc_test);
  free(r->ep_loss);
  free(r->ep_sps);
  free(r->pred_test);
  free(r->epoch_hash);
  memset(r, 0, sizeof *r);
}

static double accuracy(const int32_t *pred, const int32_t *y, int n) {
  int ok = 0;
  for (int i = 0; i < n; i++) ok += pred[i] == y[i];
  return (double)ok / n;
}

/* The arrays of one run, allocated once: the loop allocates nothing. */
typedef struct buffers {
  ft_array *state[2][3 * DEMO_MAX_PARAMS + 1];  /* params, m, v, loss: double-buffered */
  ft_array *t, *x, *y, *seed, *key, *epoch, *perm, *xtr, *xte, *ptr, *pte;
} buffers;

static void buffers_free(buffers *b) {
  for (int s = 0; s < 2; s++)
    for (int i = 0; i < 3 * DEMO_MAX_PARAMS + 1; i++) ft_array_free(b->state[s][i]);
  ft_array *all[] = {b->t, b->x, b->y, b->seed, b->key, b->epoch, b->perm, b->xtr, b->xte, b->ptr, b->pte};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) ft_array_free(all[i]);
}

static int buffers_make(ft_ctx *ctx, const opts *o, const demo_data *d, int np, buffers *b) {
  memset(b, 0, sizeof *b);
  ft_aval av[DEMO_MAX_PARAMS];
  demo_param_avals(o->model, av);
  for (int s = 0; s < 2; s++) {
    for (int i = 0; i < 3 * np; i++) {
      const ft_aval *a = &av[i % np];
      if (!(b->state[s][i] = ft_array_new(ctx, FT_F32, a->rank, a->dims))) return 1;
      memset(ft_array_data_mut(b->state[s][i]), 0, sizeof(float) * (size_t)ft_aval_size(a));
    }
    if (!(b->state[s][3 * np] = ft_array_new(ctx, FT_F32, 0, NULL))) return 1;
  }
  const int64_t dx[2] = {o->batch, DEMO_PIXELS}, dy[2] = {o->batch, DEMO_CLASSES}, dk[1] = {2},
                dn[1] = {d->n_train}, dtr[2] = {d->n_train, DEMO_PIXELS},
                dte[2] = {d->n_test, DEMO_PIXELS}, dne[1] = {d->n_test};
  b->t = ft_array_new(ctx, FT_F32, 0, NULL);
  b->x = ft_array_new(ctx, FT_F32, 2, dx);
  b->y = ft_array_new(ctx, FT_F32, 2, dy);
  b->seed = ft_array_new(ctx, FT_I32, 0, NULL);
  b->key = ft_array_new(ctx, FT_U32, 1, dk);
  b->epoch = ft_array_new(ctx, FT_I32, 0, NULL);
  b->perm = ft_array_new(ctx, FT_I32, 1, dn);
  b->xtr = ft_array_from_data(ctx, FT_F32, 2, dtr, d->x_train);
  b->xte = ft_array_from_data(ctx, FT_F32, 2, dte, d->x_test);
  b->ptr = ft_array_new(ctx, FT_I32, 1, dn);
  b->pte = ft_array_new(ctx, FT_I32, 1, dne);
  return !(b->t && b->x && b->y && b->seed && b->key && b->epoch && b->perm && b->xtr && b->xte &&
           b->ptr && b->pte);
}

/* Copies minibatch s of the permutation into b->x and b->y (one-hot). */
static void fill_batch(const demo_data *d, const int32_t *perm, int s, int batch, buffers *b) {
  float *x = ft_array_data_mut(b->x), *y = ft_array_data_mut(b->y);
  memset(y, 0, sizeof(float) * (size_t)batch * DEMO_CLASSES);
  for (int k = 0; k < batch; k++) {
    int i = perm[s * batch + k];
    memcpy(x + (size_t)k * DEMO_PIXELS, d->x_train + (size_t)i * DEMO_PIXELS, sizeof(float) * DEMO_PIXELS);
    y[k * DEMO_CLASSES + d->y_train[i]] = 1.0f;
  }
}

/* Runs the initialization: state[0] params and the shuffle key. */
static int run_init(const opts *o, programs *p, buffers *b) {
  *(int32_t *)ft_array_data_mut(b->seed) = o->seed;
  ft_array *out[DEMO_MAX_PARAMS + 1];
  for (int i = 0; i < p->np; i++) out[i] = b->state[0][i];
  out[p->np] = b->key;
  return ft_call_into(p->init, 1, (const ft_array *const *)&b->seed, p->np + 1, out) != FT_OK;
}

/* Evaluates accuracy on both sets (state s). */
static int evaluate(const demo_data *d, programs *p, buffers *b, int s, double *tr, double *te) {
  ft_array *in[DEMO_MAX_PARAMS + 1];
  for (int i = 0; i < p->np; i++) in[i] = b->state[s][i];
  in[p->np] = b->xtr;
  if (ft_call_into(p->pred_train, p->np + 1, (const ft_array *const *)in, 1, &b->ptr) != FT_OK) return 1;
  in[p->np] = b->xte;
  if (ft_call_into(p->pred_test, p->np + 1, (const ft_array *const *)in, 1, &b->pte) != FT_OK) return 1;
  *tr = accuracy(ft_array_data(b->ptr), d->y_train, d->n_train);
  *te = accuracy(ft_array_data(b->pte), d->y_test, d->n_test);
  return 0;
}

/* One whole training run on the compiled programs. With show, prints the
 * progress bar (tty) or one line per epoch. When detach is given, the
 * ledger is detached from ctx after the first step and re-attached for the
 * final evaluation (the steps in between would write megabytes). */
static int train(ft_ctx *ctx, const opts *o, const demo_data *d, programs *p, bool show,
                 ft_ledger *detach, run_result *r) {
  buffers b;
  int rc = 1, np = p->np, nst = 3 * np + 1;
  int steps_per_epoch = d->n_train / o->batch;
  memset(r, 0, sizeof *r);
  r->n_steps = steps_per_epoch * o->epochs;
  r->losses = calloc((size_t)r->n_steps, sizeof(float));
  r->acc_train = calloc((size_t)o->epochs, sizeof(double));
  r->acc_test = calloc((size_t)o->epochs, sizeof(double));
  r->ep_loss = calloc((size_t)o->epochs, sizeof(double));
  r->ep_sps = calloc((size_t)o->epochs, sizeof(double));
  r->pred_test = calloc((size_t)d->n_test, sizeof(int32_t));
  r->epoch_hash = calloc((size_t)o->epochs, sizeof(uint64_t));
  if (!r->losses || !r->acc_train || !r->acc_test || !r->ep_loss || !r->ep_sps || !r->pred_test ||
      !r->epoch_hash ||
      buffers_make(ctx, o, d, np, &b) || run_init(o, p, &b))
    goto done;
  r->init_hash = demo_fnv1a(np, b.state[0]);
  bool tty = show && !o->quiet && isatty(STDOUT_FILENO);
  int cur = 0, t = 0;
  double t0 = now_s();
  for (int e = 0; e < o->epochs; e++) {
    *(int32_t *)ft_array_data_mut(b.epoch) = e;
    ft_array *pin[2] = {b.key, b.epoch};
    if (ft_call_into(p->perm, 2, (const ft_array *const *)pin, 1, &b.perm) != FT_OK) goto done;
    const int32_t *perm = ft_array_data(b.perm);
    double te0 = now_s(), sum = 0;
    for (int s = 0; s < steps_per_epoch; s++) {
      fill_batch(d, perm, s, o->batch, &b);
      *(float *)ft_array_data_mut(b.t) = (float)++t;
      ft_array *in[3 * DEMO_MAX_PARAMS + 3];
      for (int i = 0; i < 3 * np; i++) in[i] = b.state[cur][i];
      in[3 * np] = b.t;
      in[3 * np + 1] = b.x;
      in[3 * np + 2] = b.y;
      if (ft_call_into(p->step, 3 * np + 3, (const ft_array *const *)in, nst, b.state[1 - cur]) != FT_OK) goto done;
      if (detach && t == 1) ft_ctx_attach_ledger(ctx, NULL);
      cur = 1 - cur;
      float loss = *(const float *)ft_array_data(b.state[cur][3 * np]);
      r->losses[t - 1] = loss;
      sum += loss;
      if (!isfinite(loss)) {
        ftc_fail("demo", "the loss of step %d is %g: training diverged", t, (double)loss);
        goto done;
      }
      if (s % 4 == 0 || s + 1 == steps_per_epoch) progress(tty, e, o->epochs, s + 1, steps_per_epoch, loss);
    }
    double dt = now_s() - te0;
    r->ep_sps[e] = steps_per_epoch / (dt > 0 ? dt : 1e-9);
    r->ep_loss[e] = sum / steps_per_epoch;
    r->epoch_hash[e] = demo_fnv1a(np, b.state[cur]);
    if (detach && e + 1 == o->epochs) ft_ctx_attach_ledger(ctx, detach);
    if (evaluate(d, p, &b, cur, &r->acc_train[e], &r->acc_test[e])) goto done;
    if (show && !o->quiet)
      printf("%sepoch %2d/%d  loss %.4f  train acc %.2f%%  test acc %.2f%%  %.0f steps/s\n",
             tty ? "\r\033[K" : "", e + 1, o->epochs, r->ep_loss[e], 100 * r->acc_train[e],
             100 * r->acc_test[e], r->ep_sps[e]);
  }
  r->train_s = now_s() - t0;
  memcpy(r->pred_test, ft_array_data(b.pte), sizeof(int32_t) * (size_t)d->n_test);
  r->final_hash = demo_fnv1a(np, b.state[cur]);
  rc = 0;
done:
  if (detach) ft_ctx_attach_ledger(ctx, detach);
  buffers_free(&b);
  return rc;
}

/* ------------------------------------------------------------- checks */

/* Step 1 from the initial state, by the interpreter (ft_eval of the
 * unoptimized flat program) and by the JIT (the optimized, compiled one):
 * every output bit for bit equal. */
static int check_one_step(ft_ctx *ctx, const opts *o, const demo_data *d, programs *p,
                          const ft_jaxpr *flat) {
  buffers b;
  int rc = 1, np = p->np, nst = 3 * np + 1;
  ft_array *want[3 * DEMO_MAX_PARAMS + 1] = {0};
  if (buffers_make(ctx, o, d, np, &b) || run_init(o, p, &b)) goto done;
  int32_t *perm = ft_array_data_mut(b.perm);
  for (int i = 0; i < d->n_train; i++) perm[i] = i;
  fill_batch(d, perm, 0, o->batch, &b);
  *(float *)ft_array_data_mut(b.t) = 1.0f;
  ft_array *in[3 * DEMO_MAX_PARAMS + 3];
  for (int i = 0; i < 3 * np; i++) in[i] = b.state[0][i];
  in[3 * np] = b.t;
  in[3 * np + 1] = b.x;
  in[3 * np + 2] = b.y;
  if (ft_eval(ctx, flat, 3 * np + 3, (const ft_array *const *)in, nst, want) != FT_OK) goto done;
  if (ft_call_into(p->step, 3 * np + 3, (const ft_array *const *)in, nst, b.state[1]) != FT_OK) goto done;
  int same = 0;
  for (int i = 0; i < nst; i++) same += ft_array_equal_bits(want[i], b.state[1][i]);
  printf("one step, interpreter (unoptimized program) vs JIT (optimized, compiled): %d of %d outputs "
         "bit-identical%s\n", same, nst, same == nst ? "" : "  <- DIFFERENT (a bug)");
  rc = same == nst ? 0 : ftc_fail("demo", "the compiled step differs from the interpreter's in %d of %d "
                                          "outputs (a bug)", nst - same, nst);
done:
  for (int i = 0; i < nst; i++) ft_array_free(want[i]);
  buffers_free(&b);
  return rc;
}

/* Reads fixtures/demo/<model>.txt ("key value" lines): the value of key. */
static bool jax_meta(const char *dir, demo_model m, const char *key, char *val, size_t n) {
  char path[4096], line[256];
  snprintf(path, sizeof path, "%s/%s.txt", dir, demo_model_name(m));
  FILE *f = fopen(path, "r");
  if (!f) return false;
  bool found = false;
  size_t kl = strlen(key);
  while (!found && fgets(line, sizeof line, f))
    if (!strncmp(line, key, kl) && line[kl] == ' ') {
      snprintf(val, n, "%s", line + kl + 1);
      val[strcspn(val, "\n")] = 0;
      found = true;
    }
  fclose(f);
  return found;
}

/* The per-step loss may differ from JAX's by rounding only: XLA's fused
 * multiply-adds and summation order against ours. Measured: 3e-7 (MLP) and
 * 1.5e-6 (CNN) at most, relative 5e-6. Past this bound the run is wrong. */
#define JAX_LOSS_ABS 1e-4
#define JAX_LOSS_REL 1e-3

/* Compares with JAX's run of the same configuration (fixtures/demo): the
 * initial weights must be JAX's bits, each step's loss within the bound
 * above. 0, or 1 after a message. */
static int compare_jax(ft_ctx *ctx, const opts *o, const run_result *r) {
  char v[128], path[4096];
  int js = -1, jb = -1, je = -1;
  if (jax_meta(o->jax_dir, o->model, "seed", v, sizeof v)) js = atoi(v);
  if (jax_meta(o->jax_dir, o->model, "batch", v, sizeof v)) jb = atoi(v);
  if (jax_meta(o->jax_dir, o->model, "epochs", v, sizeof v)) je = atoi(v);
  if (js < 0) {
    printf("JAX: no recorded run in %s (tools/oracle/gen_demo.py writes it)\n", o->jax_dir);
    return 0;
  }
  char ih[32] = "", fh[32] = "", acc[32] = "", mine[17];
  jax_meta(o->jax_dir, o->model, "init_hash", ih, sizeof ih);
  jax_meta(o->jax_dir, o->model, "final_hash", fh, sizeof fh);
  jax_meta(o->jax_dir, o->model, "acc_test", acc, sizeof acc);
  snprintf(mine, sizeof mine, "%016llx", (unsigned long long)r->init_hash);
  if (js == o->seed) {
    printf("JAX 0.12, the same initialization (tools/oracle/gen_demo.py): weights FNV-1a %s here, "
           "%s in JAX: %s\n", mine, ih, strcmp(mine, ih) ? "DIFFERENT (a bug)" : "bit-identical");
    if (strcmp(mine, ih))
      return ftc_fail("demo", "the initial weights are not JAX's for seed %d (hash %s, JAX's %s)", o->seed,
                      mine, ih);
  }
  if (js != o->seed || jb != o->batch || je != o->epochs) {
    printf("JAX: its training run is recorded for --model %s --seed %d --batch %d --epochs %d only; "
           "no trajectory comparison for this configuration\n", demo_model_name(o->model), js, jb, je);
    return 0;
  }
  snprintf(path, sizeof path, "%s/%s_loss.npy", o->jax_dir, demo_model_name(o->model));
  ft_array *jl = ft_npy_read(ctx, path);
  ft_aval av = jl ? ft_array_aval(jl) : (ft_aval){0};
  if (!jl || av.dtype != FT_F32 || av.rank != 1 || av.dims[0] != r->n_steps) {
    ft_array_free(jl);
    return ftc_fail("demo", "JAX's trajectory %s is missing or is not f32[%d]", path, r->n_steps);
  }
  const float *l = ft_array_data(jl);
  double worst = 0, rel = 0;
  int at = 0, beyond = -1;
  for (int i = 0; i < r->n_steps; i++) {
    double dd = fabs((double)r->losses[i] - l[i]);
    if (dd > worst) worst = dd, at = i, rel = dd / fabs((double)l[i]);
    if (beyond < 0 && !(dd <= JAX_LOSS_ABS + JAX_LOSS_REL * fabs((double)l[i]))) beyond = i;
  }
  printf("JAX 0.12, the same training run:\n");
  printf("  per-step loss: largest difference %.3g (relative %.2g) at step %d of %d "
         "(first step: %.9g vs %.9g)\n", worst, rel, at + 1, r->n_steps, (double)r->losses[0],
         (double)l[0]);
  printf("  final test accuracy: %.2f%% here, %.2f%% in JAX\n", 100 * r->acc_test[o->epochs - 1],
         100 * atof(acc));
  snprintf(mine, sizeof mine, "%016llx", (unsigned long long)r->final_hash);
  printf("  final weights: FNV-1a %s, JAX's %s: %s\n", mine, fh,
         strcmp(mine, fh) ? "they differ by rounding (XLA fuses multiply-adds and orders its sums "
                            "its own way; FrankenTrace does neither, docs/determinism.md)"
                          : "bit-identical");
  int rc = 0;
  if (beyond >= 0)
    rc = ftc_fail("demo", "step %d's loss %.9g is not JAX's %.9g within %g + %g x |JAX's| (a bug)",
                  beyond + 1, (double)r->losses[beyond], (double)l[beyond], JAX_LOSS_ABS, JAX_LOSS_REL);
  ft_array_free(jl);
  return rc;
}

/* Trains again on fresh contexts with 1, 2 and 8 executor threads and
 * once more with 2: every per-step loss and the weights must be the same
 * bits as the main run's. The CNN's convolutions run as routine steps that
 * are slow enough that the check covers its first epoch only. */
static int check_threads(const opts *o, const demo_data *d, const ft_jaxpr *step_j, const run_result *main_r) {
  const int threads[4] = {1, 2, 8, 2};
  bool all = true;
  opts oc = *o;
  if (o->model == DEMO_CNN) oc.epochs = 1;
  int ne = oc.epochs;
  printf("the same training again%s:", ne < o->epochs ? " (its first epoch)" : "");
  for (int k = 0; k < 4; k++) {
    ft_ctx_options co = {.size = sizeof(ft_ctx_options), .num_threads = threads[k]};
    ft_ctx *c = ft_ctx_new(&co);
    programs p;
    run_result r;
    if (!c || (ftc_dist_on() && ft_dist_init(c, NULL) != FT_OK) || programs_make(c, o, d, step_j, &p)) {
      ftc_fail("demo", "%s", c ? ft_ctx_error(c) : "out of memory");
      ft_ctx_free(c);
      return 1;
    }
    int rc = train(c, &oc, d, &p, false, NULL, &r);
    bool same = !rc && r.epoch_hash[ne - 1] == main_r->epoch_hash[ne - 1] &&
                !memcmp(r.losses, main_r->losses, sizeof(float) * (size_t)r.n_steps);
    printf("%s %s%d thread%s: %s", k ? "," : "", k == 3 ? "rerun with " : "", threads[k],
           threads[k] > 1 ? "s" : "", rc ? "FAILED" : same ? "same bits" : "DIFFERENT");
    all = all && same;
    if (rc) ftc_fail("demo", "%s", ft_ctx_error(c));
    result_free(&r);
    programs_free(&p);
    ft_ctx_free(c);
  }
  printf("\n  -> %s\n", all ? "every per-step loss and the weights are bit-identical across "
                              "FT_NUM_THREADS=1,2,8 and reruns"
                            : "NOT bit-identical (a bug)");
  return all ? 0 : ftc_fail("demo", "the training is not bit-identical across thread counts and reruns (a bug)");
}

#ifdef FTC_HAVE_CAIRO
int ftc_demo_plot(const char *dir, int epochs, int n_steps, const float *losses, const double *acc_train,
                  const double *acc_test, const int32_t *pred, const int32_t *truth, int n, char *err,
                  size_t errlen);
#endif

static int plots(const opts *o, const demo_data *d, const run_result *r) {
  if (!o->plot_dir) return 0;
#ifdef FTC_HAVE_CAIRO
  char err[512];
  if (ftc_demo_plot(o->plot_dir, o->epochs, r->n_steps, r->losses, r->acc_train, r->acc_test,
                    r->pred_test, d->y_test, d->n_test, err, sizeof err))
    return ftc_fail("demo", "--plot %s: %s", o->plot_dir, err);
  printf("plots: %s/curves.png (loss, accuracy) and %s/confusion.png\n", o->plot_dir, o->plot_dir);
  return 0;
#else
  (void)d, (void)r;
  return ftc_fail("demo", "--plot: this ftc was built without cairo (install libcairo2-dev, "
                          "then reconfigure: meson setup --reconfigure build); no PNG written");
#endif
}

/* --plot DIR is checked before training, so a bad directory or a build
 * without cairo fails at once rather than after the run. */
static int plot_dir_check(const opts *o) {
  if (!o->plot_dir) return 0;
#ifdef FTC_HAVE_CAIRO
  struct stat st;
  if (mkdir(o->plot_dir, 0777) && errno != EEXIST)
    return ftc_fail("demo", "--plot %s: cannot create the directory: %s", o->plot_dir, strerror(errno));
  if (stat(o->plot_dir, &st) || !S_ISDIR(st.st_mode))
    return ftc_fail("demo", "--plot %s: not a directory", o->plot_dir);
  return 0;
#else
  return plots(o, NULL, NULL);
#endif
}

static void print_confusion(const demo_data *d, const int32_t *pred) {
  int cm[DEMO_CLASSES][DEMO_CLASSES] = {{0}};
  for (int i = 0; i < d->n_test; i++) cm[d->y_test[i]][pred[i]]++;
  printf("confusion matrix of the test set (rows: true digit, columns: predicted):\n     ");
  for (int c = 0; c < DEMO_CLASSES; c++) printf("%4d", c);
  putchar('\n');
  for (int a = 0; a < DEMO_CLASSES; a++) {
    printf("  %d: ", a);
    for (int c = 0; c < DEMO_CLASSES; c++) printf(cm[a][c] ? "%4d" : "   .", cm[a][c]);
    putchar('\n');
  }
}

/* ------------------------------------------------------------- the stages */

typedef struct stages {
  ft_jaxpr *loss, *vg, *step, *flat, *opt;
  ft_jaxpr *loss_shard, *vg_shard, *vg_dp; /* --dp */
} stages;

static void stages_free(stages *s) {
  ft_jaxpr_free(s->loss);
  ft_jaxpr_free(s->vg);
  ft_jaxpr_free(s->loss_shard);
  ft_jaxpr_free(s->vg_shard);
  ft_jaxpr_free(s->vg_dp);
  ft_jaxpr_free(s->step);
  ft_jaxpr_free(s->flat);
  ft_jaxpr_free(s->opt);
}

static int build_stages(ft_ctx *ctx, const opts *o, stages *s) {
  int argnums[DEMO_MAX_PARAMS];
  ft_aval av[DEMO_MAX_PARAMS];
  int np = demo_param_avals(o->model, av);
  for (int i = 0; i < np; i++) argnums[i] = i;
  if (!(s->loss = demo_trace_loss(ctx, o->model, o->batch)) ||
      show(ctx, o, "1. the loss, traced from C", s->loss))
    return 1;
  if (!(s->vg = ft_value_and_grad(ctx, s->loss, np, argnums, false)) ||
      show(ctx, o, o->model == DEMO_CNN ? "2. its value and gradient w.r.t. K, b1, W2, b2 (ft_value_and_grad)"
                                        : "2. its value and gradient w.r.t. W1, b1, W2, b2 (ft_value_and_grad)",
           s->vg))
    return 1;
  if (o->dp) {
    char err[256] = "";
    if (!(s->loss_shard = demo_trace_loss(ctx, o->model, o->batch / o->dp)) ||
        !(s->vg_shard = ft_value_and_grad(ctx, s->loss_shard, np, argnums, false)))
      return 1;
    if (!(s->vg_dp = demo_dp_value_and_grad(ctx, o->model, s->vg_shard, o->batch, o->dp, err, sizeof err)))
      return *err ? ftc_fail("demo", "--dp: %s", err) : 1;
    char title[160];
    snprintf(title, sizeof title, "2b. data-parallel (--dp %d): a shard_map whose %d devices each take the value "
             "and gradient of %d examples, psummed", o->dp, o->dp, o->batch / o->dp);
    if (show(ctx, o, title, s->vg_dp)) return 1;
  }
  if (!(s->step = demo_trace_step(ctx, o->model, o->dp ? s->vg_dp : s->vg, o->batch)) ||
      !(s->flat = ft_inline(ctx, s->step)))
    return 1;
  printf("\n== 3. the training step (value_and_grad called inside, then Adam): %d equations "
         "around the call, %d once inlined\n", ft_jaxpr_num_eqns(s->step), ft_jaxpr_num_eqns(s->flat));
  ft_opt_report rep = {0};
  double t0 = now_s();
  if (!(s->opt = ft_optimize(ctx, s->flat, FT_OPT_EXACT, &rep))) return 1;
  double t1 = now_s();
  char title[256];
  snprintf(title, sizeof title, "4. the step optimized by the e-graph (exact tier, %.0f ms; cost %.4g -> %.4g, %s)",
           1e3 * (t1 - t0), rep.cost_before, rep.cost_after, rep.stop_reason ? rep.stop_reason : "");
  int rc = show(ctx, o, title, s->opt);
  if (!rc && rep.n_rules) {
    printf("rules that fired:");
    for (int i = 0; i < rep.n_rules && i < 8; i++)
      printf("%s %s x%lld", i ? "," : "", rep.rules[i].name, (long long)rep.rules[i].count);
    putchar('\n');
  }
  ft_opt_report_free(&rep);
  return rc;
}

static void report_plan(const programs *p, double compile_ms) {
  ft_jit_stats st;
  ft_fn_stats(p->step, &st);
  printf("\n== 5. compiled (ft_jit; all five programs in %.0f ms, the step %.0f ms: plan %.1f, e-graph %.1f, "
         "LLVM %.1f, load %.1f)%s: the step is %d plan steps: %d fused loop kernels (%d equations), %d GEMM "
         "calls, %d interpreter steps; %zu bytes of buffers per call (%zu without reuse)\n",
         compile_ms, st.total_ms, st.plan_ms, st.opt_ms, st.codegen_ms, st.load_ms,
         st.mem_hit || st.disk_hit ? " [from the compile cache]" : "", st.n_steps, st.n_kernels,
         st.n_fused_eqns, st.n_gemm, st.n_fallback, st.arena_bytes, st.buffers_bytes);
}

int ftc_cmd_demo(int argc, char **argv) {
  if (ftc_wants_help(argc, argv)) return demo_usage();
  opts o;
  int rc = parse_opts(argc, argv, &o);
  if (rc) return rc;
  ft_ctx *ctx = ftc_ctx_new();
  if (!ctx) return 1;
  if (o.threads) {
    /* The main run's own context, with the ledger of --ledger attached. */
    ft_ctx_options co = {.size = sizeof(ft_ctx_options), .num_threads = o.threads};
    ft_ctx *c2 = ft_ctx_new(&co);
    if (!c2 || (ftc_ledger() && ft_ctx_attach_ledger(c2, ftc_ledger()) != FT_OK) ||
        (ftc_dist_on() && ft_dist_init(c2, NULL) != FT_OK)) {
      ft_ctx_free(c2);
      ft_ctx_free(ctx);
      return ftc_fail("demo", "cannot make a context with %d threads", o.threads);
    }
    ft_ctx_free(ctx);
    ctx = c2;
  }
  if (plot_dir_check(&o)) {
    ft_ctx_free(ctx);
    return 1;
  }
  demo_data d;
  stages s = {0};
  programs p = {0};
  run_result r = {0};
  char err[512];
  rc = 1;
  if (demo_data_load(ctx, o.data_dir, &d, err, sizeof err)) {
    ft_ctx_free(ctx);
    return ftc_fail("demo", "the digits: %s", err);
  }
  if (o.dp && o.batch % o.dp) {
    demo_data_free(&d);
    ft_ctx_free(ctx);
    return ftc_usage("demo", "--dp %d does not divide the batch (%d)", o.dp, o.batch);
  }
  if (ftc_dist_rank() != 0 && !freopen("/dev/null", "w", stdout)) { /* under mpirun: rank 0 prints */
    demo_data_free(&d);
    ft_ctx_free(ctx);
    return ftc_fail("demo", "cannot silence rank %d's output", ftc_dist_rank());
  }
  if (o.batch > d.n_train) {
    demo_data_free(&d);
    ft_ctx_free(ctx);
    return ftc_usage("demo", "--batch %d is larger than the training set (%d)", o.batch, d.n_train);
  }
  printf("FrankenTrace demo: %s on the UCI digits (%d training, %d test images of 8x8), "
         "batch %d, %d epochs, seed %d\n", demo_model_name(o.model), d.n_train, d.n_test, o.batch,
         o.epochs, o.seed);
  if (build_stages(ctx, &o, &s)) goto fail;
  double t0 = now_s();
  if (programs_make(ctx, &o, &d, s.opt, &p)) goto fail;
  report_plan(&p, 1e3 * (now_s() - t0));
  if (!o.quiet) {
    char *plan = ft_fn_plan(p.step);
    if (plan) fputs(plan, stdout);
    ft_free(plan);
  }
  printf("\n== 6. checks before training\n");
  if (check_one_step(ctx, &o, &d, &p, s.flat)) goto fail;
  printf("\n== 7. training: Adam, %d shuffled minibatches of %d per epoch, one ft_call_into each\n",
         d.n_train / o.batch, o.batch);
  if (train(ctx, &o, &d, &p, true, ftc_ledger(), &r)) goto fail;
  double acc = r.acc_test[o.epochs - 1];
  printf("trained %d steps in %.2f s (%.0f steps/s); final test accuracy %.2f%% (%d of %d)\n", r.n_steps,
         r.train_s, r.n_steps / r.train_s, 100 * acc, (int)lround(acc * d.n_test), d.n_test);
  printf("final weights: FNV-1a %016llx\n", (unsigned long long)r.final_hash);
  if (!o.quiet) print_confusion(&d, r.pred_test);
  printf("\n== 8. against JAX, threads and reruns\n");
  rc = compare_jax(ctx, &o, &r);
  if (!rc) rc = check_threads(&o, &d, s.opt, &r);
  if (!rc) rc = plots(&o, &d, &r);
  if (!rc && ftc_ledger())
    printf("ledger: %lld records (the stages, the compilations, step 1 and the final evaluation); "
           "check it with ftledger verify/replay/reexec\n",
           (long long)ft_ledger_num_records(ftc_ledger()));
  goto done;
fail:
  /* The library's error, unless a check already said what failed. */
  if (ft_ctx_status(ctx) != FT_OK) ftc_fail("demo", "%s", ft_ctx_error(ctx));
done:
  ftc_report_guards("demo", ctx);
  result_free(&r);
  programs_free(&p);
  stages_free(&s);
  demo_data_free(&d);
  ft_ctx_free(ctx);
  return rc;
}
