/* bench/harness/worker.c: the FrankenTrace side of the benchmark, driven
 * line by line by bench/harness/driver.py so that FrankenTrace and JAX
 * repetitions interleave (A B A B) in one run.
 *
 * Every workload is traced here through the public API (ft_trace and the
 * ops of ft.h); its inputs are the .npy files the driver wrote, so both
 * sides see the same shapes, dtypes and bytes. A workload runs through
 * ft_jit + ft_call_into when the library has a JIT (the jit functions are
 * weak symbols: a library without them links, and they read as NULL) and
 * through the reference interpreter ft_eval otherwise, and says which.
 *
 * Protocol (one command a line on stdin, one answer a line on stdout):
 *   setup NAME DIR      trace NAME, load DIR/NAME.in<i>.npy, compile
 *                       -> "ok ENGINE compile_ms n_out" | "err MESSAGE"
 *   run NAME K          K calls -> "ok SECONDS"
 *   save NAME DIR       writes DIR/NAME.ft.out<i>.npy -> "ok"
 *   compile NAME DIR    one cold compile to first result (no cache)
 *                       -> "ok total_ms trace_ms grad_ms parse_ms jit_ms call_ms"
 *   transform KIND N R  KIND grad|vmap of an N-equation chain, R times
 *                       -> "ok min_s median_s n_eqns_out"
 *   memory NAME         planned arena, buffers added up, argument and output
 *                       bytes of a set-up workload -> "ok A B ARGS OUTS STEPS"
 *   overhead N          executor cost per step over N tiny steps, 1 and 2
 *                       threads -> "ok NS_1T NS_2T STEPS CALL_NS_1T CALL_NS_2T"
 *   free NAME           -> "ok"
 *   info                -> "ok jit=0|1 version=V"
 *   threads             -> "ok N", the threads of this process now
 *   quit
 * FT_BENCH_ENGINE=interp forces the interpreter; FT_BENCH_CALL=alloc uses
 * ft_call instead of ft_call_into; FT_BENCH_CACHE_DIR is the JIT's cache
 * directory (bench/run gives each run a fresh one). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ft.h"

/* The JIT may not have landed in the library this links against. */
#pragma weak ft_jit
#pragma weak ft_call_into
#pragma weak ft_call
#pragma weak ft_fn_free
#pragma weak ft_fn_stats

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static ft_ctx *g_ctx;
/* FT_BENCH_CALL=alloc: ft_call (outputs allocated per call) instead of ft_call_into. */
static bool g_call_alloc;

/* ------------------------------------------------------------ workloads */
/* Each trace function mirrors the JAX function of the same name in
 * driver.py, op for op. */

static ft_val *wf(ft_val *like, double v) { return ft_weak_f(ft_val_tracer(like), v); }

static int tr_scalar(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  out[0] = ft_add(ft_mul(in[0], ft_weak_f(t, 2.0)), ft_weak_f(t, 1.0));
  return 1;
}

static int tr_elementwise(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  ft_val *x = in[0];
  out[0] = ft_add(ft_mul(ft_tanh(x), ft_logistic(x)), ft_mul(x, x));
  return 1;
}

static const int AX0[1] = {0};
static int tr_sum(ft_tracer *t, ft_val *const *in, ft_val **out, int m, void *u) {
  out[0] = ft_sum(in[0], 1, AX0, false);
  return 1;
}
static int tr_max(ft_tracer *t, ft_val *const *in, ft_val **out, int m, void *u) {
  out[0] = ft_amax(in[0], 1, AX0, false);
  return 1;
}
static int tr_logsumexp(ft_tracer *t, ft_val *const *in, ft_val **out, int m, void *u) {
  out[0] = ft_logsumexp(in[0], 1, AX0, false);
  return 1;
}

static int tr_softmax(ft_tracer *t, ft_val *const *in, ft_val **out, int m, void *u) {
  out[0] = ft_softmax(in[0], -1);
  return 1;
}

/* (x - mean) * rsqrt(var + 1e-5) * gamma + beta over the last axis. */
static int tr_layernorm(ft_tracer *t, ft_val *const *in, ft_val **out, int m, void *u) {
  const int last[1] = {-1};
  ft_val *x = in[0], *mu = ft_mean(x, 1, last, true);
  ft_val *xc = ft_np_sub(x, mu);
  ft_val *var = ft_mean(ft_np_mul(xc, xc), 1, last, true);
  ft_val *y = ft_np_mul(xc, ft_rsqrt(ft_np_add(var, wf(var, 1e-5))));
  out[0] = ft_np_add(ft_np_mul(y, in[1]), in[2]);
  return 1;
}

/* relu MLP 784-512-512-10, mean softmax cross-entropy against one-hot y. */
static int tr_mlp_loss(ft_tracer *t, ft_val *const *in, ft_val **out, int m, void *u) {
  const int last[1] = {-1};
  ft_val *h = ft_relu(ft_np_add(ft_matmul(in[6], in[0]), in[1]));
  h = ft_relu(ft_np_add(ft_matmul(h, in[2]), in[3]));
  ft_val *logits = ft_np_add(ft_matmul(h, in[4]), in[5]);
  ft_val *lp = ft_log_softmax(logits, -1);
  ft_val *nll = ft_neg(ft_sum(ft_np_mul(in[7], lp), 1, last, false));
  out[0] = ft_mean(nll, -1, NULL, false);
  return 1;
}

/* x @ W for x [.., n] and W [n, m] as a dot_general. */
static ft_val *dotg(ft_val *a, ft_val *b, int ca, int cb, int nb) {
  ft_dot_dims d = {0};
  d.n_contract = 1, d.lhs_contract[0] = ca, d.rhs_contract[0] = cb;
  d.n_batch = nb;
  for (int i = 0; i < nb; i++) d.lhs_batch[i] = i, d.rhs_batch[i] = i;
  return ft_dot_general(a, b, &d, FT_DTYPE_NONE);
}

/* One multi-head self-attention block: x [S, 512], 8 heads of 64. */
static int tr_attention(ft_tracer *t, ft_val *const *in, ft_val **out, int m, void *u) {
  ft_val *x = in[0];
  int64_t S = ft_val_dim(x, 0), H = 8, D = 64;
  const int64_t shd[3] = {S, H, D};
  const int perm[3] = {1, 0, 2};
  ft_val *qkv[3];
  for (int k = 0; k < 3; k++)
    qkv[k] = ft_transpose(ft_reshape(ft_matmul(x, in[1 + k]), 3, shd), 3, perm); /* [H,S,D] */
  ft_val *s = ft_np_mul(dotg(qkv[0], qkv[1], 2, 2, 1), wf(x, 0.125));      /* [H,S,S] */
  ft_val *p = ft_softmax(s, -1);
  ft_val *o = dotg(p, qkv[2], 2, 1, 1);                                      /* [H,S,D] */
  const int64_t sd[2] = {S, H * D};
  out[0] = ft_matmul(ft_reshape(ft_transpose(o, ft_val_rank(o), perm), 2, sd), in[4]);
  return 1;
}

/* h' = tanh(h @ Wh + x_t @ Wx + b); carry h, stack each h'. */
static int rnn_body(ft_tracer *t, ft_val *const *in, ft_val **out, int m, void *u) {
  /* in: h, Wh, Wx, b (captured as consts by the scan? no: passed as carry-free xs)
   * The scan gives carry h then the x slice; Wh, Wx, b are captured values. */
  ft_val *const *w = u;
  ft_val *h = ft_tanh(ft_np_add(ft_np_add(ft_matmul(in[0], w[0]), ft_matmul(in[1], w[1])), w[2]));
  out[0] = h, out[1] = h;
  return 2;
}
static int tr_rnn(ft_tracer *t, ft_val *const *in, ft_val **out, int m, void *u) {
  /* in: h0 [256], xs [T, 256], Wh, Wx, b */
  ft_val *w[3] = {in[2], in[3], in[4]};
  ft_val *res[2];
  if (ft_scan(t, rnn_body, w, -1, false, 1, &in[0], 1, &in[1], res, 2) != 2) return -1;
  out[0] = res[0], out[1] = res[1];
  return 2;
}

static int tr_fft_real(ft_tracer *t, ft_val *const *in, ft_val **out, int m, void *u) {
  int64_t n = ft_val_dim(in[0], ft_val_rank(in[0]) - 1);
  out[0] = ft_fft(in[0], FT_RFFT, 1, &n);
  return 1;
}
static int tr_fft_batch(ft_tracer *t, ft_val *const *in, ft_val **out, int m, void *u) {
  int64_t n = ft_val_dim(in[0], ft_val_rank(in[0]) - 1);
  out[0] = ft_fft(in[0], FT_FFT, 1, &n);
  return 1;
}

typedef struct wdef {
  const char *name;
  ft_trace_fn fn;
  int n_in;
  int grad_step; /* 1: value_and_grad of fn w.r.t. the first 6 inputs, then SGD */
} wdef;

static const wdef WORKLOADS[] = {
    {"scalar", tr_scalar, 1, 0},     {"elementwise", tr_elementwise, 1, 0},
    {"sum", tr_sum, 1, 0},           {"max", tr_max, 1, 0},
    {"logsumexp", tr_logsumexp, 1, 0}, {"softmax", tr_softmax, 1, 0},
    {"layernorm", tr_layernorm, 3, 0}, {"mlp_step", tr_mlp_loss, 8, 1},
    {"attention", tr_attention, 5, 0}, {"rnn", tr_rnn, 5, 0},
    {"fft_real", tr_fft_real, 1, 0}, {"fft_batch", tr_fft_batch, 1, 0},
};
#define N_WORKLOADS ((int)(sizeof WORKLOADS / sizeof WORKLOADS[0]))

static const wdef *find_workload(const char *name) {
  for (int i = 0; i < N_WORKLOADS; i++)
    if (!strcmp(WORKLOADS[i].name, name)) return &WORKLOADS[i];
  return NULL;
}

/* ----------------------------------------------------- the SGD splice */
/* The training step is value_and_grad(loss) followed by p - 0.01 * g for
 * each parameter. The tracing API cannot call a jaxpr inside a trace, so
 * the update is appended to the printed value_and_grad jaxpr as text and
 * the result parsed back (ft_parse is public API too; its cost is inside
 * the compile-latency figure, which makes that figure conservative). */
static char *splice_sgd(const ft_jaxpr *vg, int n_params, double lr) {
  char *txt = ft_jaxpr_print(g_ctx, vg);
  if (!txt) return NULL;
  /* Input names: the tokens "name:aval" between ';' and ". let" of the header. */
  char *semi = strchr(txt, ';'), *let = strstr(txt, ". let");
  char *tail = strrchr(txt, '}');
  char *in_kw = NULL;
  for (char *p = txt; (p = strstr(p, "\n  in (")) != NULL; p++) in_kw = p;
  if (!semi || !let || !tail || !in_kw) {
    ft_free(txt);
    return NULL;
  }
  char names[16][64];
  int nn = 0;
  for (char *p = semi + 1; p < let && nn < 16;) {
    while (p < let && *p == ' ') p++;
    char *colon = strchr(p, ':');
    if (!colon || colon > let) break;
    snprintf(names[nn], sizeof names[nn], "%.*s", (int)(colon - p), p);
    nn++;
    while (p < let && *p != ' ') p++;
  }
  /* Output names: "(a, b, c)" after the last "in (". */
  char outs[16][64];
  int no = 0;
  char *o = in_kw + 7, *close = strchr(o, ')');
  while (o && close && o < close && no < 16) {
    char *comma = memchr(o, ',', (size_t)(close - o));
    char *end = comma ? comma : close;
    while (*o == ' ') o++;
    snprintf(outs[no], sizeof outs[no], "%.*s", (int)(end - o), o);
    no++;
    o = comma ? comma + 1 : NULL;
  }
  if (nn < n_params || no != 1 + n_params) {
    ft_free(txt);
    return NULL;
  }
  size_t cap = strlen(txt) + 4096;
  char *s = malloc(cap);
  size_t k = (size_t)(in_kw - txt);
  memcpy(s, txt, k);
  for (int i = 0; i < n_params; i++) {
    ft_aval a;
    char as[256];
    ft_jaxpr_input_aval(vg, i, &a);
    ft_aval_str(&a, as, sizeof as);
    k += (size_t)snprintf(s + k, cap - k, "\n    sgd_d%d:%s = mul %s %.17g:f32[]\n    sgd_p%d:%s = sub %s sgd_d%d",
                          i, as, outs[1 + i], lr, i, as, names[i], i);
  }
  k += (size_t)snprintf(s + k, cap - k, "\n  in (%s", outs[0]);
  for (int i = 0; i < n_params; i++) k += (size_t)snprintf(s + k, cap - k, ", sgd_p%d", i);
  snprintf(s + k, cap - k, ") }\n");
  ft_free(txt);
  return s;
}

/* ------------------------------------------------------------- state */
typedef struct loaded {
  const wdef *w;
  ft_jaxpr *j;
  int n_in, n_out;
  ft_array *in[16];
  ft_array *out[16];
  ft_fn *fn;
  char engine[160];
} loaded;

static loaded g_loaded[N_WORKLOADS];

static int load_inputs(const wdef *w, const char *dir, ft_array **in, ft_aval *avals) {
  for (int i = 0; i < w->n_in; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.in%d.npy", dir, w->name, i);
    in[i] = ft_npy_read(g_ctx, path);
    if (!in[i]) return -1;
    avals[i] = ft_array_aval(in[i]);
  }
  return 0;
}

/* Trace (and for the training step differentiate and splice) a workload.
 * Fills the phase times in seconds when t is not NULL. */
static ft_jaxpr *build(const wdef *w, const ft_aval *avals, double *t) {
  double t0 = now();
  ft_jaxpr *j = ft_trace(g_ctx, w->fn, NULL, w->n_in, avals);
  double t1 = now();
  if (!j || !w->grad_step) {
    if (t) t[0] = t1 - t0, t[1] = t[2] = 0;
    return j;
  }
  const int argnums[6] = {0, 1, 2, 3, 4, 5};
  ft_jaxpr *vg = ft_value_and_grad(g_ctx, j, 6, argnums, false);
  ft_jaxpr_free(j);
  double t2 = now();
  if (!vg) return NULL;
  char *text = splice_sgd(vg, 6, 0.01);
  ft_jaxpr_free(vg);
  if (!text) {
    fprintf(stderr, "worker: could not splice the SGD update\n");
    return NULL;
  }
  ft_jaxpr *step = ft_parse(g_ctx, text, strlen(text), "mlp_step");
  if (!step) fprintf(stderr, "worker: spliced step does not parse:\n%s\n", text);
  free(text);
  if (t) t[0] = t1 - t0, t[1] = t2 - t1, t[2] = now() - t2;
  return step;
}

static bool use_jit(void) {
  const char *e = getenv("FT_BENCH_ENGINE");
  return ft_jit != NULL && ft_call_into != NULL && !(e && !strcmp(e, "interp"));
}

static int alloc_outputs(loaded *L) {
  for (int i = 0; i < L->n_out; i++) {
    ft_aval a;
    if (ft_jaxpr_output_aval(L->j, i, &a)) return -1;
    L->out[i] = ft_array_new(g_ctx, a.dtype, a.rank, a.dims);
    if (!L->out[i]) return -1;
  }
  return 0;
}

static void unload(loaded *L) {
  for (int i = 0; i < L->n_in; i++) ft_array_free(L->in[i]), L->in[i] = NULL;
  for (int i = 0; i < L->n_out; i++) ft_array_free(L->out[i]), L->out[i] = NULL;
  if (L->fn) ft_fn_free(L->fn);
  ft_jaxpr_free(L->j);
  memset(L, 0, sizeof *L);
}

/* One call: compiled into the preallocated outputs, or interpreted (the
 * interpreter allocates its outputs; they replace the previous ones). */
static ft_status call_once(loaded *L) {
  if (L->fn && !g_call_alloc) return ft_call_into(L->fn, L->n_in, (const ft_array *const *)L->in, L->n_out, L->out);
  if (L->fn) {
    ft_array *o[16];
    ft_status st = ft_call(L->fn, L->n_in, (const ft_array *const *)L->in, L->n_out, o);
    if (st) return st;
    for (int i = 0; i < L->n_out; i++) ft_array_free(L->out[i]), L->out[i] = o[i];
    return FT_OK;
  }
  ft_array *o[16];
  ft_status st = ft_eval(g_ctx, L->j, L->n_in, (const ft_array *const *)L->in, L->n_out, o);
  if (st) return st;
  for (int i = 0; i < L->n_out; i++) ft_array_free(L->out[i]), L->out[i] = o[i];
  return FT_OK;
}

static void cmd_setup(const char *name, const char *dir) {
  const wdef *w = find_workload(name);
  if (!w) {
    printf("err unknown workload %s\n", name);
    return;
  }
  loaded *L = &g_loaded[w - WORKLOADS];
  unload(L);
  L->w = w, L->n_in = w->n_in;
  ft_aval avals[16];
  if (load_inputs(w, dir, L->in, avals)) {
    printf("err %s\n", ft_ctx_error(g_ctx));
    unload(L);
    return;
  }
  L->j = build(w, avals, NULL);
  if (!L->j) {
    printf("err trace: %s\n", ft_ctx_error(g_ctx));
    unload(L);
    return;
  }
  L->n_out = ft_jaxpr_num_outputs(L->j);
  if (alloc_outputs(L)) {
    printf("err %s\n", ft_ctx_error(g_ctx));
    unload(L);
    return;
  }
  double ms = 0;
  snprintf(L->engine, sizeof L->engine, "interpreter (JIT pending)");
  if (use_jit()) {
    ft_jit_options o = {.size = sizeof(ft_jit_options)};
    /* A private cache per run: results never depend on what an earlier
     * build left in ~/.cache (a stale entry once crashed a kernel). */
    o.cache_dir = getenv("FT_BENCH_CACHE_DIR");
    double t0 = now();
    L->fn = ft_jit(g_ctx, L->j, &o);
    ms = (now() - t0) * 1e3;
    if (L->fn) {
      ft_jit_stats s = {0};
      ft_fn_stats(L->fn, &s);
      snprintf(L->engine, sizeof L->engine, "jit(kernels=%d,gemm=%d,fallback=%d,fused_eqns=%d)",
               s.n_kernels, s.n_gemm, s.n_fallback, s.n_fused_eqns);
    } else {
      /* Keep the message single-line: it goes into the report. */
      char msg[120];
      snprintf(msg, sizeof msg, "%s", ft_ctx_error(g_ctx));
      for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\t') *p = ' ';
      snprintf(L->engine, sizeof L->engine, "interpreter (ft_jit failed: %s)", msg);
      ft_ctx_clear_error(g_ctx);
    }
  }
  for (char *p = L->engine; *p; p++)
    if (*p == ' ') *p = '_';
  /* The first call checks that the workload runs at all. */
  if (call_once(L)) {
    printf("err first call: %s\n", ft_ctx_error(g_ctx));
    unload(L);
    return;
  }
  printf("ok %s %.3f %d\n", L->engine, ms, L->n_out);
}

static loaded *get(const char *name) {
  const wdef *w = find_workload(name);
  if (!w || !g_loaded[w - WORKLOADS].j) return NULL;
  return &g_loaded[w - WORKLOADS];
}

static void cmd_run(const char *name, long k) {
  loaded *L = get(name);
  if (!L) {
    printf("err %s is not set up\n", name);
    return;
  }
  double t0 = now();
  for (long i = 0; i < k; i++)
    if (call_once(L)) {
      printf("err %s\n", ft_ctx_error(g_ctx));
      return;
    }
  printf("ok %.9f\n", now() - t0);
}

static void cmd_save(const char *name, const char *dir) {
  loaded *L = get(name);
  if (!L) {
    printf("err %s is not set up\n", name);
    return;
  }
  for (int i = 0; i < L->n_out; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.ft.out%d.npy", dir, name, i);
    if (ft_npy_write(g_ctx, L->out[i], path)) {
      printf("err %s\n", ft_ctx_error(g_ctx));
      return;
    }
  }
  printf("ok\n");
}

/* Cold compile latency: trace (+ grad + SGD splice) + ft_jit without the
 * compile caches + the first call, from the inputs already in memory. */
static void cmd_compile(const char *name, const char *dir) {
  const wdef *w = find_workload(name);
  if (!w) {
    printf("err unknown workload %s\n", name);
    return;
  }
  if (!use_jit()) {
    printf("err pending: no JIT in this build\n");
    return;
  }
  loaded L = {0};
  L.w = w, L.n_in = w->n_in;
  ft_aval avals[16];
  if (load_inputs(w, dir, L.in, avals)) {
    printf("err %s\n", ft_ctx_error(g_ctx));
    unload(&L);
    return;
  }
  double ph[3], t0 = now();
  L.j = build(w, avals, ph);
  double t1 = now();
  if (!L.j) {
    printf("err %s\n", ft_ctx_error(g_ctx));
    unload(&L);
    return;
  }
  ft_jit_options o = {.size = sizeof(ft_jit_options)};
  o.no_cache = true;
  L.fn = ft_jit(g_ctx, L.j, &o);
  double t2 = now();
  if (!L.fn) {
    printf("err ft_jit: %s\n", ft_ctx_error(g_ctx));
    ft_ctx_clear_error(g_ctx);
    unload(&L);
    return;
  }
  L.n_out = ft_jaxpr_num_outputs(L.j);
  ft_array *o2[16];
  ft_status st = ft_call(L.fn, L.n_in, (const ft_array *const *)L.in, L.n_out, o2);
  double t3 = now();
  if (st) {
    printf("err call: %s\n", ft_ctx_error(g_ctx));
    unload(&L);
    return;
  }
  for (int i = 0; i < L.n_out; i++) ft_array_free(o2[i]);
  (void)t1;
  printf("ok %.3f %.3f %.3f %.3f %.3f %.3f\n", (t3 - t0) * 1e3, ph[0] * 1e3, ph[1] * 1e3, ph[2] * 1e3,
         (t2 - t1) * 1e3, (t3 - t2) * 1e3);
  unload(&L);
}

/* The chain of bench/transforms/bench_grad.c: sin, mul, add, tanh
 * repeating on f32[8], then a sum, so the figures compare with it. */
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

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void cmd_transform(const char *kind, int n, int reps) {
  char *text = chain_text(n);
  ft_jaxpr *j = text ? ft_parse(g_ctx, text, strlen(text), "chain") : NULL;
  free(text);
  if (!j) {
    printf("err %s\n", ft_ctx_error(g_ctx));
    return;
  }
  double *t = malloc(sizeof(double) * (size_t)reps);
  int n_out_eqns = 0;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    ft_jaxpr *g = !strcmp(kind, "grad") ? ft_grad(g_ctx, j, 0, NULL, false) : ft_vmap(g_ctx, j, 0, NULL, 0, NULL, 16);
    t[r] = now() - t0;
    if (!g) {
      printf("err %s: %s\n", kind, ft_ctx_error(g_ctx));
      free(t);
      ft_jaxpr_free(j);
      return;
    }
    n_out_eqns = ft_jaxpr_num_eqns(g);
    ft_jaxpr_free(g);
  }
  qsort(t, (size_t)reps, sizeof *t, cmp_d);
  double med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
  printf("ok %.9f %.9f %d\n", t[0], med, n_out_eqns);
  free(t);
  ft_jaxpr_free(j);
}

/* Memory of a set-up workload (issue 7): the planned arena of one call
 * (ft_jit_stats.arena_bytes), the intermediate buffers added up (what a
 * call would need without the plan's reuse), and the bytes of the inputs
 * and outputs, which live in the caller's arrays
 * -> "ok arena_bytes buffers_bytes argument_bytes output_bytes steps". */
static void cmd_memory(const char *name) {
  loaded *L = get(name);
  if (!L || !L->fn) {
    printf("err %s is not set up with the JIT\n", name);
    return;
  }
  ft_jit_stats s = {0};
  ft_fn_stats(L->fn, &s);
  size_t args = 0, outs = 0;
  for (int i = 0; i < L->n_in; i++) args += ft_array_nbytes(L->in[i]);
  for (int i = 0; i < L->n_out; i++) outs += ft_array_nbytes(L->out[i]);
  printf("ok %zu %zu %zu %zu %d\n", s.arena_bytes, s.buffers_bytes, args, outs, s.n_steps);
}

/* A chain of n tiny steps: reduce_sum of f32[8] to a scalar, broadcast
 * back (fused into the next reduction), so every step is one compiled
 * kernel of 8 elements and the call time is the executor's per-step cost. */
static char *tiny_steps_text(int n) {
  size_t cap = (size_t)n * 200 + 256, k = 0;
  char *s = malloc(cap);
  if (!s) return NULL;
  k += (size_t)snprintf(s + k, cap - k, "{ lambda ; v0:f32[8]. let\n");
  for (int i = 0; i < n; i++)
    k += (size_t)snprintf(s + k, cap - k,
                          "    s%d:f32[] = reduce_sum[axes=(0,) out_sharding=None] v%d\n"
                          "    v%d:f32[8] = broadcast_in_dim[broadcast_dimensions=() shape=(8,) "
                          "sharding=None] s%d\n", i, i, i + 1, i);
  snprintf(s + k, cap - k, "  in (s%d,) }\n", n - 1);
  return s;
}

/* Best time of one ft_call_into over reps x calls, and the step count. */
static double tiny_call_s(ft_ctx *ctx, int n, int *steps) {
  char *text = tiny_steps_text(n);
  ft_jaxpr *j = text ? ft_parse(ctx, text, strlen(text), "tiny-steps") : NULL;
  free(text);
  ft_jit_options o = {.size = sizeof(ft_jit_options)};
  o.cache_dir = getenv("FT_BENCH_CACHE_DIR");
  ft_fn *fn = j ? ft_jit(ctx, j, &o) : NULL;
  ft_jaxpr_free(j);
  if (!fn) return -1;
  ft_jit_stats st = {0};
  ft_fn_stats(fn, &st);
  *steps = st.n_steps;
  const int64_t d8[1] = {8};
  ft_array *x = ft_array_new(ctx, FT_F32, 1, d8), *y = ft_array_new(ctx, FT_F32, 0, NULL);
  double best = 1e30;
  int calls = n > 100 ? 200 : 2000;
  for (int r = 0; x && y && r < 7; r++) {
    double t0 = now();
    for (int i = 0; i < calls; i++)
      if (ft_call_into(fn, 1, (const ft_array *const *)&x, 1, &y)) best = -1e30;
    double dt = (now() - t0) / calls;
    if (dt < best) best = dt;
  }
  ft_array_free(x), ft_array_free(y);
  ft_fn_free(fn);
  return best < 0 ? -1 : best;
}

/* Executor overhead per step (issue 7: under 1 us): programs of 1 and of
 * n + 1 tiny steps on contexts asking for 1 and 2 threads; the per-step
 * figure is the difference over n steps, so the call's fixed cost (argument
 * checks, frame) drops out
 * -> "ok ns_per_step_1t ns_per_step_2t steps call_ns_1t call_ns_2t". */
static void cmd_overhead(int n) {
  if (!use_jit()) {
    printf("err pending: no JIT in this build\n");
    return;
  }
  double per[2], whole[2];
  int steps = 0, one = 0;
  for (int nt = 1; nt <= 2; nt++) {
    ft_ctx_options co = {.size = sizeof(ft_ctx_options)};
    co.num_threads = nt;
    ft_ctx *ctx = ft_ctx_new(&co);
    double t1 = ctx ? tiny_call_s(ctx, 1, &one) : -1, tn = ctx ? tiny_call_s(ctx, n + 1, &steps) : -1;
    if (t1 < 0 || tn < 0) {
      printf("err tiny-step program: %s\n", ctx ? ft_ctx_error(ctx) : "no context");
      ft_ctx_free(ctx);
      return;
    }
    per[nt - 1] = (tn - t1) / (steps - one) * 1e9;
    whole[nt - 1] = tn * 1e9;
    ft_ctx_free(ctx);
  }
  printf("ok %.1f %.1f %d %.0f %.0f\n", per[0], per[1], steps, whole[0], whole[1]);
}

int main(void) {
  /* Transforms are timed without the per-pass verifier, as bench_grad does. */
  setenv("FT_VERIFY", "0", 1);
  g_ctx = ft_ctx_new(NULL);
  if (!g_ctx) return 1;
  g_call_alloc = getenv("FT_BENCH_CALL") && !strcmp(getenv("FT_BENCH_CALL"), "alloc");
  setvbuf(stdout, NULL, _IOLBF, 0);
  char line[4096];
  while (fgets(line, sizeof line, stdin)) {
    char cmd[32] = "", a[1024] = "", b[1024] = "", c[64] = "";
    int n = sscanf(line, "%31s %1023s %1023s %63s", cmd, a, b, c);
    if (n < 1) continue;
    ft_ctx_clear_error(g_ctx);
    if (!strcmp(cmd, "quit")) break;
    else if (!strcmp(cmd, "info"))
      printf("ok jit=%d version=%s\n", use_jit() ? 1 : 0, ft_version());
    else if (!strcmp(cmd, "threads")) {
      /* How many threads this process runs now (Linux): the honest answer
       * to "how many threads did FrankenTrace use". */
      FILE *f = fopen("/proc/self/status", "r");
      char l[256];
      int th = -1;
      while (f && fgets(l, sizeof l, f))
        if (!strncmp(l, "Threads:", 8)) th = atoi(l + 8);
      if (f) fclose(f);
      printf("ok %d\n", th);
    } else if (!strcmp(cmd, "setup") && n >= 3) cmd_setup(a, b);
    else if (!strcmp(cmd, "run") && n >= 3) cmd_run(a, atol(b));
    else if (!strcmp(cmd, "save") && n >= 3) cmd_save(a, b);
    else if (!strcmp(cmd, "compile") && n >= 3) cmd_compile(a, b);
    else if (!strcmp(cmd, "transform") && n >= 4) cmd_transform(a, atoi(b), atoi(c));
    else if (!strcmp(cmd, "memory") && n >= 2) cmd_memory(a);
    else if (!strcmp(cmd, "overhead") && n >= 2) cmd_overhead(atoi(a));
    else if (!strcmp(cmd, "free") && n >= 2) {
      loaded *L = get(a);
      if (L) unload(L);
      printf("ok\n");
    } else
      printf("err bad command: %s", line);
  }
  for (int i = 0; i < N_WORKLOADS; i++) unload(&g_loaded[i]);
  ft_ctx_free(g_ctx);
  return 0;
}
