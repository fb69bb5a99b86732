/* tests/alloc/test_alloc_sweep.c: the allocation-failure sweep (Lua's
 * ltests, SQLite's fault injection; CONVENTIONS.md). For each scenario it
 * makes the n-th allocation fail, for n = 1, 2, 3, ... until a run completes
 * without reaching the n-th allocation, and checks that every run either
 * fails cleanly (FT_ERR_NOMEM, with a message on the context saying memory
 * ran out; NULL where the call returns a pointer) or
 * succeeds with the same result as without the failure; that nothing
 * crashes; and, in the ASan build, that nothing leaks (LSan after each run).
 *
 * The hook: this program is linked with -Wl,--wrap=malloc,... (meson.build),
 * so every allocation the static library makes goes through the __wrap_*
 * functions below. Allocations inside shared libraries (libc internals,
 * jansson, OpenBLAS) are not counted. The JIT (LLVM) is not exercised.
 *
 * FT_ALLOC_SCENARIO=name runs one scenario; FT_ALLOC_N=n runs one n.
 * FT_ALLOC_VERBOSE=1 prints every failing run's status and message. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ft.h"

#if defined(__SANITIZE_ADDRESS__)
#define SWEEP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SWEEP_ASAN 1
#endif
#endif
#ifdef SWEEP_ASAN
#include <sanitizer/common_interface_defs.h>
#include <sanitizer/lsan_interface.h>
#endif

/* ---- the allocation hook ---- */

static atomic_bool armed;
static atomic_long n_allocs;  /* allocations counted since arming */
static long fail_at;          /* the allocation to fail (1-based) */

/* Whether this allocation is the one to fail. */
static bool fail_now(void) {
  if (!atomic_load(&armed)) return false;
  return atomic_fetch_add(&n_allocs, 1) + 1 == fail_at;
}

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t s);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t al, size_t n);
int __real_posix_memalign(void **p, size_t al, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t s);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t al, size_t n);
int __wrap_posix_memalign(void **p, size_t al, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

void *__wrap_malloc(size_t n) { return fail_now() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t s) { return fail_now() ? NULL : __real_calloc(n, s); }
void *__wrap_realloc(void *p, size_t n) { return fail_now() ? NULL : __real_realloc(p, n); }
void *__wrap_aligned_alloc(size_t al, size_t n) {
  return fail_now() ? NULL : __real_aligned_alloc(al, n);
}
int __wrap_posix_memalign(void **p, size_t al, size_t n) {
  return fail_now() ? ENOMEM : __real_posix_memalign(p, al, n);
}
char *__wrap_strdup(const char *s) { return fail_now() ? NULL : __real_strdup(s); }
char *__wrap_strndup(const char *s, size_t n) { return fail_now() ? NULL : __real_strndup(s, n); }

/* ---- what is running, for a crash report ---- */

static const char *cur_scenario = "(none)";
static volatile long cur_n;

static void say_where(void) {
  char buf[160];
  int k = snprintf(buf, sizeof buf, "\nalloc sweep: crashed in scenario '%s' with allocation %ld failed\n",
                   cur_scenario, (long)cur_n);
  if (k > 0 && write(2, buf, (size_t)k)) {}
}

static void on_signal(int sig) {
  say_where();
  signal(sig, SIG_DFL);
  raise(sig);
}

/* ---- fixtures ---- */

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(2);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) exit(2);
  s[n] = 0;
  fclose(f);
  *len = (size_t)n;
  return s;
}

enum { IN = 4, HIDDEN = 8, CLASSES = 3, BATCH = 5 };

/* The MLP loss of ftc demo, with a traced constant (class weights). */
static int mlp_loss(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)max_out, (void)user;
  static const float cw[CLASSES] = {1.0f, 0.5f, 2.0f};
  const int64_t dc[1] = {CLASSES};
  ft_val *w1 = in[0], *b1 = in[1], *w2 = in[2], *b2 = in[3], *x = in[4], *y = in[5];
  ft_val *h = ft_tanh(ft_np_add(ft_matmul(x, w1), b1));
  ft_val *logits = ft_np_add(ft_matmul(h, w2), b2);
  int last = -1;
  ft_val *logp = ft_log_softmax(logits, last);
  ft_val *wy = ft_np_mul(y, ft_constant(t, FT_F32, 1, dc, cw));
  ft_val *nll = ft_neg(ft_sum(ft_np_mul(wy, logp), 1, &last, false));
  out[0] = ft_mean(nll, -1, NULL, false);
  return 1;
}

static const int64_t mlp_dims[6][2] = {{IN, HIDDEN}, {HIDDEN}, {HIDDEN, CLASSES}, {CLASSES},
                                       {BATCH, IN}, {BATCH, CLASSES}};
static const int mlp_rank[6] = {2, 1, 2, 1, 2, 2};

/* Everything the scenarios read, made before arming. */
typedef struct fixtures {
  ft_ctx *ctx;
  const char *golden_dir;
  char *text[3];
  size_t text_len[3];
  const char *text_name[3];
  ft_jaxpr *parsed[3];
  ft_aval mlp_avals[6];
  ft_jaxpr *mlp, *mlp_grad;
  ft_array *mlp_in[6];
  char *npy;
  size_t npy_len;
  ft_array *npy_array;
  char tmp_path[256];
  ft_jaxpr *small;          /* sin(x) * x + 1 on f32[5] */
  ft_array *small_in;
  ft_fn *small_fn, *grad_fn;
  ft_ctx *lctx;             /* a context with the ledger attached */
  ft_ledger *ledger;
  char ledger_dir[256];
} fixtures;

static fixtures F;

/* ---- scenarios ----
 * Each runs one operation and returns its result as a malloc'd byte string
 * (via the unarmed malloc: it is made after disarming) to compare with the
 * run without failures, or NULL when the operation failed. The operation's
 * own result is freed inside, so a leak can only be the library's. */

typedef struct blob {
  void *data;
  size_t len;
} blob;

static blob hash_blob(const ft_jaxpr *j) {
  blob b = {malloc(16), 16};
  ft_jaxpr_hash(j, b.data);
  return b;
}

static void disarm(void) { atomic_store(&armed, false); }

static blob run_parse(int i) {
  ft_jaxpr *j = ft_parse(F.ctx, F.text[i], F.text_len[i], F.text_name[i]);
  disarm();
  blob b = {0};
  if (j) b = hash_blob(j);
  ft_jaxpr_free(j);
  return b;
}
static blob sc_parse0(void) { return run_parse(0); }
static blob sc_parse1(void) { return run_parse(1); }
static blob sc_parse2(void) { return run_parse(2); }

static blob run_print(int i) {
  char *s = ft_jaxpr_print(F.ctx, F.parsed[i]);
  disarm();
  blob b = {0};
  if (s) b = (blob){__real_strdup(s), strlen(s)};
  ft_free(s);
  return b;
}
static blob sc_print0(void) { return run_print(0); }
static blob sc_print1(void) { return run_print(1); }
static blob sc_print2(void) { return run_print(2); }

static blob jaxpr_result(ft_jaxpr *j) {
  disarm();
  blob b = {0};
  if (j) b = hash_blob(j);
  ft_jaxpr_free(j);
  return b;
}

static blob sc_trace(void) { return jaxpr_result(ft_trace(F.ctx, mlp_loss, NULL, 6, F.mlp_avals)); }
static blob sc_grad(void) {
  static const int argnums[4] = {0, 1, 2, 3};
  return jaxpr_result(ft_grad(F.ctx, F.mlp, 4, argnums, false));
}
static blob sc_vmap(void) {
  static const int in_axes[6] = {FT_VMAP_NONE, FT_VMAP_NONE, FT_VMAP_NONE, FT_VMAP_NONE, 0, 0};
  return jaxpr_result(ft_vmap(F.ctx, F.mlp, ft_jaxpr_num_inputs(F.mlp), in_axes, 0, NULL, 2));
}

static blob run_eval(const ft_jaxpr *j, int n_out) {
  ft_array *out[8] = {0};
  ft_status st = ft_eval(F.ctx, j, 6, (const ft_array *const *)F.mlp_in, n_out, out);
  disarm();
  blob b = {0};
  if (st == FT_OK) {
    size_t total = 0;
    for (int i = 0; i < n_out; i++) total += ft_array_nbytes(out[i]);
    b.data = malloc(total ? total : 1);
    for (int i = 0; i < n_out; i++) {
      memcpy((char *)b.data + b.len, ft_array_data(out[i]), ft_array_nbytes(out[i]));
      b.len += ft_array_nbytes(out[i]);
    }
  } else {
    for (int i = 0; i < n_out; i++)
      if (out[i]) {
        fprintf(stderr, "ft_eval failed but left out[%d] set\n", i);
        abort();
      }
  }
  for (int i = 0; i < n_out; i++) ft_array_free(out[i]);
  return b;
}
static blob sc_eval(void) { return run_eval(F.mlp, 1); }
static blob sc_eval_grad(void) { return run_eval(F.mlp_grad, 4); }

static blob array_result(ft_array *a) {
  disarm();
  blob b = {0};
  if (a) {
    ft_aval av = ft_array_aval(a);
    b.len = sizeof av + ft_array_nbytes(a);
    b.data = malloc(b.len);
    memcpy(b.data, &av, sizeof av);
    memcpy((char *)b.data + sizeof av, ft_array_data(a), ft_array_nbytes(a));
  }
  ft_array_free(a);
  return b;
}
static blob sc_npy_read_mem(void) {
  return array_result(ft_npy_read_mem(F.ctx, F.npy, F.npy_len, "golden.npy"));
}
static blob sc_npy_read_file(void) {
  char p[512];
  snprintf(p, sizeof p, "%s/grad_layer_norm.in0.npy", F.golden_dir);
  return array_result(ft_npy_read(F.ctx, p));
}
static blob sc_npy_write_mem(void) {
  void *out = NULL;
  size_t len = 0;
  ft_status st = ft_npy_write_mem(F.ctx, F.npy_array, &out, &len);
  disarm();
  blob b = {0};
  if (st == FT_OK) {
    b = (blob){malloc(len), len};
    memcpy(b.data, out, len);
  } else if (out) {
    fprintf(stderr, "ft_npy_write_mem failed but set *out\n");
    abort();
  }
  ft_free(out);
  return b;
}
static blob sc_npy_write_file(void) {
  ft_status st = ft_npy_write(F.ctx, F.npy_array, F.tmp_path);
  disarm();
  blob b = {0};
  if (st == FT_OK) {
    size_t len;
    b.data = slurp(F.tmp_path, &len);
    b.len = len;
  }
  return b;
}

/* jvp and linearize of the MLP loss: the other transforms (grad and vmap
 * are above). */
static blob sc_jvp(void) { return jaxpr_result(ft_jvp(F.ctx, F.mlp)); }
static blob sc_linearize(void) {
  ft_jaxpr *primal = NULL, *tangent = NULL;
  int n_res = 0;
  ft_status st = ft_linearize(F.ctx, F.mlp, &primal, &tangent, &n_res);
  disarm();
  blob b = {0};
  if (st == FT_OK) {
    b = (blob){malloc(32), 32};
    ft_jaxpr_hash(primal, (uint8_t *)b.data);
    ft_jaxpr_hash(tangent, (uint8_t *)b.data + 16);
  } else if (primal || tangent) {
    fprintf(stderr, "ft_linearize failed but set an output\n");
    abort();
  }
  ft_jaxpr_free(primal), ft_jaxpr_free(tangent);
  return b;
}
/* The exact-tier e-graph rewrite of the MLP's gradient. */
static blob sc_optimize(void) { return jaxpr_result(ft_optimize(F.ctx, F.mlp_grad, FT_OPT_EXACT, NULL)); }

/* ft_jit of a small program (its planning, code generation bookkeeping,
 * executor and buffer plan; LLVM's own allocations are not counted), with
 * no cache, and one call: the result's bytes. */
static blob fn_result(ft_fn *fn, ft_array *const *in, int n_in, int n_out) {
  ft_array *out[4] = {0};
  ft_status st = fn ? ft_call(fn, n_in, (const ft_array *const *)in, n_out, out) : ft_ctx_status(F.ctx);
  disarm();
  blob b = {0};
  if (st == FT_OK) {
    size_t total = 0;
    for (int i = 0; i < n_out; i++) total += ft_array_nbytes(out[i]);
    b.data = malloc(total ? total : 1);
    for (int i = 0; i < n_out; i++) {
      memcpy((char *)b.data + b.len, ft_array_data(out[i]), ft_array_nbytes(out[i]));
      b.len += ft_array_nbytes(out[i]);
    }
  } else {
    for (int i = 0; i < n_out; i++)
      if (out[i]) {
        fprintf(stderr, "ft_call failed but left out[%d] set\n", i);
        abort();
      }
  }
  for (int i = 0; i < n_out; i++) ft_array_free(out[i]);
  return b;
}
static blob sc_jit(void) {
  ft_fn *fn = ft_jit(F.ctx, F.small, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_cache = true});
  blob b = fn_result(fn, &F.small_in, 1, 1);
  ft_fn_free(fn);
  return b;
}
/* A call of a compiled function made before arming (a steady-state call
 * allocates its outputs only); then one of the MLP's gradient. */
static blob sc_call(void) { return fn_result(F.small_fn, &F.small_in, 1, 1); }
static blob sc_call_grad(void) { return fn_result(F.grad_fn, F.mlp_in, 6, 4); }

/* A ledger append: jvp on a context with a ledger attached writes a
 * transform record (the objects, the line, the parity). A failed append
 * must leave the ledger as it was: verified after every run (unarmed). */
static blob sc_ledger_append(void) {
  ft_jaxpr *j = ft_jvp(F.lctx, F.mlp);
  disarm();
  blob b = {0};
  if (j) b = hash_blob(j);
  ft_jaxpr_free(j);
  ft_ledger_report r = {0};
  ft_ctx *v = ft_ctx_new(NULL);
  if (ft_ledger_verify(v, F.ledger_dir, &r) != FT_OK || r.health != FT_LEDGER_CLEAN) {
    fprintf(stderr, "ledger_append: the ledger does not verify clean after a run: %s\n",
            ft_ctx_error(v));
    abort();
  }
  ft_ledger_report_free(&r);
  ft_ctx_free(v);
  return b;
}

typedef struct scenario {
  const char *name;
  blob (*run)(void);
} scenario;

/* The context a scenario reports on (the ledger scenario: the ledger's). */
static ft_ctx *ctx_of(const scenario *s) {
  return !strcmp(s->name, "ledger_append") ? F.lctx : F.ctx;
}

static const scenario scenarios[] = {
    {"parse_rnn_scan", sc_parse0},     {"parse_cond", sc_parse1},
    {"parse_gather_scatter", sc_parse2}, {"print_rnn_scan", sc_print0},
    {"print_cond", sc_print1},         {"print_gather_scatter", sc_print2},
    {"trace_mlp", sc_trace},           {"grad_mlp", sc_grad},
    {"vmap_mlp", sc_vmap},             {"eval_mlp", sc_eval},
    {"eval_grad_mlp", sc_eval_grad},   {"npy_read_mem", sc_npy_read_mem},
    {"npy_read_file", sc_npy_read_file}, {"npy_write_mem", sc_npy_write_mem},
    {"npy_write_file", sc_npy_write_file}, {"jvp_mlp", sc_jvp},
    {"linearize_mlp", sc_linearize},   {"optimize_grad_mlp", sc_optimize},
    {"jit_small", sc_jit},             {"call_small", sc_call},
    {"call_grad_mlp", sc_call_grad},   {"ledger_append", sc_ledger_append},
};

/* ---- the sweep ---- */

static bool verbose;
static int failures;

static void fail(const char *sc, long n, const char *fmt, const char *detail) {
  fprintf(stderr, "FAIL %s, allocation %ld failed: ", sc, n);
  fprintf(stderr, fmt, detail);
  fputc('\n', stderr);
  failures++;
}

/* One run with allocation n failing (n 0: none); returns the allocations
 * the run made. */
static long run_once(const scenario *s, long n, blob *out) {
  cur_scenario = s->name;
  cur_n = n;
  ft_ctx_clear_error(F.ctx);
  ft_ctx_clear_error(F.lctx);
  fail_at = n;
  atomic_store(&n_allocs, 0);
  atomic_store(&armed, true);
  *out = s->run();
  disarm();
  return atomic_load(&n_allocs);
}

typedef struct tally {
  long sites;         /* allocations the scenario makes (each failed once) */
  long clean_errors;  /* runs that failed with a status and a message */
  long not_nomem;     /* ... of which with a status other than FT_ERR_NOMEM (a failure) */
  long absorbed;      /* runs that succeeded anyway, with the same result */
  long leaks;
} tally;

static void sweep(const scenario *s, long only_n, tally *t) {
  memset(t, 0, sizeof *t);
  blob base;
  run_once(s, 0, &base);  /* warm-up: lazy one-time set-up happens here */
  free(base.data);
  long total = run_once(s, 0, &base);
  if (!base.data) {
    fail(s->name, 0, "fails without injected failures: %s", ft_ctx_error(ctx_of(s)));
    return;
  }
  t->sites = total;
  for (long n = only_n ? only_n : 1; n <= total; n++) {
    blob got;
    run_once(s, n, &got);
    if (got.data) {
      if (got.len != base.len || memcmp(got.data, base.data, got.len))
        fail(s->name, n, "%s", "succeeded with a different result");
      else t->absorbed++;
      free(got.data);
    } else {
      ft_status st = ft_ctx_status(ctx_of(s));
      const char *msg = ft_ctx_error(ctx_of(s));
      if (st == FT_OK || !msg[0]) {
        fail(s->name, n, "%s", "failed without a status and message");
      } else {
        t->clean_errors++;
        if (verbose) fprintf(stderr, "note %s n=%ld: status %d: %s\n", s->name, n, (int)st, msg);
        /* An allocation failure is reported as one, wherever it happens:
         * FT_ERR_NOMEM with a message that says so (not a shape error, a
         * cycle, an I/O error or an internal error it caused). */
        if (st != FT_ERR_NOMEM || !strstr(msg, "memory")) {
          t->not_nomem++;
          char detail[600];
          snprintf(detail, sizeof detail, "status %d (%s), not FT_ERR_NOMEM: %s", (int)st,
                   ft_status_string(st), msg);
          fail(s->name, n, "%s", detail);
        }
      }
    }
#ifdef SWEEP_ASAN
    if (__lsan_do_recoverable_leak_check()) {
      fail(s->name, n, "%s", "leaked (report above)");
      t->leaks++;
    }
#endif
    if (only_n) break;
  }
  free(base.data);
}

static void setup(void) {
  F.golden_dir = getenv("FT_GOLDEN");
  if (!F.golden_dir) {
    fprintf(stderr, "FT_GOLDEN is not set\n");
    exit(2);
  }
  F.ctx = ft_ctx_new(&(ft_ctx_options){.size = sizeof(ft_ctx_options), .num_threads = 1});
  static const char *names[3] = {"grad_rnn_scan.jaxpr", "cond_multi_output_consts.jaxpr",
                                 "gather_scatter.jaxpr"};
  for (int i = 0; i < 3; i++) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", F.golden_dir, names[i]);
    F.text[i] = slurp(p, &F.text_len[i]);
    F.text_name[i] = names[i];
    if (!(F.parsed[i] = ft_parse(F.ctx, F.text[i], F.text_len[i], names[i]))) {
      fprintf(stderr, "%s: %s\n", names[i], ft_ctx_error(F.ctx));
      exit(2);
    }
  }
  for (int i = 0; i < 6; i++) {
    F.mlp_avals[i] = (ft_aval){.dtype = FT_F32, .rank = mlp_rank[i]};
    memcpy(F.mlp_avals[i].dims, mlp_dims[i], sizeof(int64_t) * (size_t)mlp_rank[i]);
    F.mlp_in[i] = ft_array_new(F.ctx, FT_F32, mlp_rank[i], mlp_dims[i]);
    float *d = ft_array_data_mut(F.mlp_in[i]);
    size_t n = ft_array_nbytes(F.mlp_in[i]) / sizeof(float);
    for (size_t k = 0; k < n; k++) d[k] = (float)((k * 7 + (size_t)i * 3) % 11) / 8.0f - 0.6f;
  }
  F.mlp = ft_trace(F.ctx, mlp_loss, NULL, 6, F.mlp_avals);
  static const int argnums[4] = {0, 1, 2, 3};
  F.mlp_grad = F.mlp ? ft_grad(F.ctx, F.mlp, 4, argnums, false) : NULL;
  if (!F.mlp_grad) {
    fprintf(stderr, "mlp: %s\n", ft_ctx_error(F.ctx));
    exit(2);
  }
  char p[512];
  snprintf(p, sizeof p, "%s/grad_layer_norm.in0.npy", F.golden_dir);
  F.npy = slurp(p, &F.npy_len);
  F.npy_array = ft_npy_read_mem(F.ctx, F.npy, F.npy_len, "golden.npy");
  const char *tmp = getenv("TMPDIR");
  snprintf(F.tmp_path, sizeof F.tmp_path, "%s/alloc_sweep_%d.npy", tmp ? tmp : "/tmp", (int)getpid());
  if (!F.npy_array) exit(2);
  static const char *small = "{ lambda ; a:f32[5]. let\n    b:f32[5] = sin a\n    c:f32[5] = mul b a\n"
                             "    d:f32[5] = add c 1.0:f32[]\n  in (d,) }";
  int64_t d5 = 5;
  const float xs[5] = {0.5f, -1.0f, 2.0f, 3.5f, -0.25f};
  F.small = ft_parse(F.ctx, small, strlen(small), "small");
  F.small_in = ft_array_from_data(F.ctx, FT_F32, 1, &d5, xs);
  F.small_fn = F.small ? ft_jit(F.ctx, F.small, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_cache = true}) : NULL;
  F.grad_fn = ft_jit(F.ctx, F.mlp_grad, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_cache = true});
  snprintf(F.ledger_dir, sizeof F.ledger_dir, "%s/alloc_sweep_ledger_%d", tmp ? tmp : "/tmp",
           (int)getpid());
  F.lctx = ft_ctx_new(&(ft_ctx_options){.size = sizeof(ft_ctx_options), .num_threads = 1});
  F.ledger = F.lctx ? ft_ledger_open(F.lctx, F.ledger_dir,
                                     &(ft_ledger_options){.size = sizeof(ft_ledger_options), .fsync = FT_LEDGER_FSYNC_NEVER}) : NULL;
  if (!F.small_fn || !F.grad_fn || !F.ledger || ft_ctx_attach_ledger(F.lctx, F.ledger)) {
    fprintf(stderr, "setup: %s %s\n", ft_ctx_error(F.ctx), ft_ctx_error(F.lctx));
    exit(2);
  }
}

static void teardown(void) {
  for (int i = 0; i < 3; i++) {
    free(F.text[i]);
    ft_jaxpr_free(F.parsed[i]);
  }
  for (int i = 0; i < 6; i++) ft_array_free(F.mlp_in[i]);
  ft_jaxpr_free(F.mlp);
  ft_jaxpr_free(F.mlp_grad);
  free(F.npy);
  ft_array_free(F.npy_array);
  unlink(F.tmp_path);
  ft_fn_free(F.small_fn), ft_fn_free(F.grad_fn);
  ft_jaxpr_free(F.small);
  ft_array_free(F.small_in);
  ft_ledger_close(F.ledger);
  ft_ctx_free(F.lctx);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", F.ledger_dir);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", F.ledger_dir);
  ft_ctx_free(F.ctx);
}

int main(void) {
#ifdef SWEEP_ASAN
  __sanitizer_set_death_callback(say_where);
#endif
  signal(SIGSEGV, on_signal);
  signal(SIGABRT, on_signal);
  signal(SIGBUS, on_signal);
  verbose = getenv("FT_ALLOC_VERBOSE") != NULL;
  const char *only = getenv("FT_ALLOC_SCENARIO");
  long only_n = getenv("FT_ALLOC_N") ? atol(getenv("FT_ALLOC_N")) : 0;
  setup();
  printf("%-22s %8s %8s %8s %8s %6s\n", "scenario", "sites", "errors", "!NOMEM", "absorbed",
         "leaks");
  for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
    if (only && strcmp(only, scenarios[i].name)) continue;
    tally t;
    sweep(&scenarios[i], only_n, &t);
    printf("%-22s %8ld %8ld %8ld %8ld %6ld\n", scenarios[i].name, t.sites, t.clean_errors,
           t.not_nomem, t.absorbed, t.leaks);
    fflush(stdout);
  }
  teardown();
  if (failures) fprintf(stderr, "%d failing runs\n", failures);
  return failures ? 1 : 0;
}
