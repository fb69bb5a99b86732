/* tests/api/test_api_v2.c: the 0.2.0 API (issue 22), through the public
 * header and the shared library only: sized option structs (what a size
 * too small, too large or zero does), the allocator hook, explicit lengths
 * (ft_vmap, ft_vmap_avals, ft_transpose, ft_slice), ft_array_data and
 * ft_array_data_mut, and per-call errors of ft_call_ex with several
 * threads calling one ft_fn. */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <frankentrace.h>

static int pass, fail;
#define CHECK(c)                                                        \
  do {                                                                  \
    if (c) pass++;                                                      \
    else { fail++; printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); } \
  } while (0)
#define CONTAINS(hay, needle) (strstr((hay), (needle)) != NULL)

static const char SIN3[] = "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }";

static ft_jaxpr *parse(ft_ctx *ctx, const char *text) {
  return ft_parse(ctx, text, strlen(text), "t");
}

static void count_free(void *user, void *p, size_t size);

/* ---------------------------------------------------------------- options */
static void sized_options(void) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_jaxpr *j = parse(ctx, SIN3);
  CHECK(j != NULL);

  /* size 0: a struct not initialized by its macro is refused, naming it */
  ft_jit_options zero;
  memset(&zero, 0, sizeof zero);
  CHECK(ft_jit(ctx, j, &zero) == NULL);
  CHECK(ft_ctx_status(ctx) == FT_ERR_INVALID_ARG);
  CHECK(CONTAINS(ft_ctx_error(ctx), "ft_jit_options: size is 0"));

  /* a newer caller's larger struct: zero extra bytes are fine, a set one
   * is refused (a field this library does not have) */
  struct { ft_ledger_options o; int64_t newer; } big;
  memset(&big, 0, sizeof big);
  big.o.size = sizeof big;
  big.o.fsync = FT_LEDGER_FSYNC_NEVER;
  char dir[] = "/tmp/ft-api-v2-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char path[64];
  snprintf(path, sizeof path, "%s/lg", dir);
  ft_ledger *lg = ft_ledger_open(ctx, path, &big.o);
  CHECK(lg != NULL);
  ft_ledger_close(lg);
  big.newer = 1;
  CHECK(ft_ledger_open(ctx, path, &big.o) == NULL);
  CHECK(ft_ctx_status(ctx) == FT_ERR_UNSUPPORTED);
  CHECK(CONTAINS(ft_ctx_error(ctx), "ft_ledger_options: byte"));

  /* an older caller's smaller struct: fields past its size are not read
   * (parity_k = 100 would be refused if it were) */
  ft_ledger_options old = FT_LEDGER_OPTIONS_INIT;
  old.size = offsetof(ft_ledger_options, parity_k);
  old.fsync = FT_LEDGER_FSYNC_NEVER;
  old.parity_k = 100;
  CHECK((lg = ft_ledger_open(ctx, path, &old)) != NULL);
  ft_ledger_close(lg);
  old.size = sizeof old;
  CHECK(ft_ledger_open(ctx, path, &old) == NULL);
  CHECK(CONTAINS(ft_ctx_error(ctx), "parity_k 100"));

  /* contexts: NULL from ft_ctx_new, the reason from ft_ctx_options_check */
  ft_ctx_options co;
  memset(&co, 0, sizeof co);
  char why[256];
  CHECK(ft_ctx_new(&co) == NULL);
  CHECK(ft_ctx_options_check(&co, why, sizeof why) == FT_ERR_INVALID_ARG);
  CHECK(CONTAINS(why, "ft_ctx_options: size is 0"));
  co = (ft_ctx_options)FT_CTX_OPTIONS_INIT;
  co.allocator.user = &co;
  co.allocator.free = count_free;
  CHECK(ft_ctx_options_check(&co, why, sizeof why) == FT_ERR_INVALID_ARG);
  CHECK(CONTAINS(why, "sets free but not alloc"));
  co.allocator.free = NULL;
  CHECK(ft_ctx_options_check(&co, why, sizeof why) == FT_OK && why[0] == 0);

  /* loop limits: a bad size leaves the old limits and says why */
  ft_loop_limits lim;
  memset(&lim, 0, sizeof lim);
  CHECK(ft_ctx_set_loop_limits(ctx, &lim) == FT_ERR_INVALID_ARG);
  CHECK(CONTAINS(ft_ctx_error(ctx), "ft_loop_limits: size is 0"));
  lim = (ft_loop_limits)FT_LOOP_LIMITS_INIT;
  lim.max_iterations = 3;
  CHECK(ft_ctx_set_loop_limits(ctx, &lim) == FT_OK);
  ft_jaxpr *w = parse(ctx, "{ lambda ; a:i32[]. let\n"
                           "    b:i32[] = while[\n"
                           "      body_jaxpr={ lambda ; c:i32[]. let d:i32[] = add c 1:i32[] in (d,) }\n"
                           "      body_nconsts=0\n"
                           "      cond_jaxpr={ lambda ; e:i32[]. let f:bool[] = lt e 10:i32[] in (f,) }\n"
                           "      cond_nconsts=0\n"
                           "    ] a\n"
                           "  in (b,) }");
  CHECK(w != NULL);
  ft_array *a0 = ft_array_new(ctx, FT_I32, 0, NULL), *r = NULL;
  CHECK(ft_eval(ctx, w, 1, (const ft_array *const *)&a0, 1, &r) == FT_ERR_LIMIT);
  CHECK(CONTAINS(ft_ctx_error(ctx), "loop limit of 3 iterations"));
  CHECK(ft_ctx_set_loop_limits(ctx, NULL) == FT_OK);
  CHECK(ft_eval(ctx, w, 1, (const ft_array *const *)&a0, 1, &r) == FT_OK);
  CHECK(r && *(const int32_t *)ft_array_data(r) == 10);
  ft_array_free(r);
  ft_array_free(a0);
  ft_jaxpr_free(w);

  /* transform options: size 0 refused, the macro accepted */
  ft_transform_options to;
  memset(&to, 0, sizeof to);
  CHECK(ft_transform_ex(ctx, j, "jit(f)", &to) == NULL);
  CHECK(CONTAINS(ft_ctx_error(ctx), "ft_transform_options: size is 0"));
  to = (ft_transform_options)FT_TRANSFORM_OPTIONS_INIT;
  ft_jaxpr *t = ft_transform_ex(ctx, j, "jit(f)", &to);
  CHECK(t != NULL);
  ft_jaxpr_free(t);

  char cmd[96];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
}

/* -------------------------------------------------------------- allocator */
typedef struct counter {
  pthread_mutex_t mu;
  long allocs, frees, live_bytes;
} counter;

static void *count_alloc(void *user, size_t size, size_t alignment) {
  counter *c = user;
  void *p = aligned_alloc(alignment, size);
  pthread_mutex_lock(&c->mu);
  c->allocs++;
  c->live_bytes += (long)size;
  pthread_mutex_unlock(&c->mu);
  return p;
}

static void count_free(void *user, void *p, size_t size) {
  counter *c = user;
  pthread_mutex_lock(&c->mu);
  c->frees++;
  c->live_bytes -= (long)size;
  pthread_mutex_unlock(&c->mu);
  free(p);
}

static void allocator_hook(void) {
  counter c = {.mu = PTHREAD_MUTEX_INITIALIZER};
  ft_ctx_options o = FT_CTX_OPTIONS_INIT;
  o.num_threads = 2;
  o.allocator = (ft_allocator){.alloc = count_alloc, .free = count_free, .user = &c};
  ft_ctx *ctx = ft_ctx_new(&o);
  CHECK(ctx != NULL);
  ft_array *x = ft_array_from_data(ctx, FT_F32, 1, (int64_t[]){3}, (float[]){0, 0, 0});
  CHECK(c.allocs == 1 && c.live_bytes == 64);  /* 12 bytes, rounded up to the alignment */
  ft_jaxpr *j = parse(ctx, SIN3);
  ft_array *y = NULL;
  CHECK(ft_eval(ctx, j, 1, (const ft_array *const *)&x, 1, &y) == FT_OK);
  long after_eval = c.allocs;
  CHECK(after_eval >= 2);  /* the output, and any intermediate */
  ft_jit_options jo = FT_JIT_OPTIONS_INIT;
  jo.no_disk_cache = true;
  ft_fn *fn = ft_jit(ctx, j, &jo);
  CHECK(fn != NULL);
  ft_array *z = NULL;
  CHECK(ft_call(fn, 1, (const ft_array *const *)&x, 1, &z) == FT_OK);
  CHECK(c.allocs == after_eval + 1);  /* ft_call's output */
  CHECK(ft_array_equal_bits(y, z));
  ft_array_free(x);
  ft_array_free(y);
  ft_array_free(z);
  CHECK(c.allocs == c.frees && c.live_bytes == 0);
  /* wrapped memory is the caller's: never given to the allocator */
  float *mem = aligned_alloc(64, 64);
  ft_array *w = ft_array_wrap(ctx, FT_F32, 1, (int64_t[]){3}, mem);
  long before = c.allocs;
  ft_array_free(w);
  CHECK(c.allocs == before && c.frees == before);
  free(mem);
  ft_fn_free(fn);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
}

/* ---------------------------------------------------------------- lengths */
static int trace_transpose(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out;
  int n = *(int *)user;
  out[0] = ft_transpose(in[0], n, (const int[]){1, 0});
  return out[0] ? 1 : -1;
}

static int trace_slice(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out;
  int n = *(int *)user;
  out[0] = ft_slice(in[0], n, (const int64_t[]){0, 1}, (const int64_t[]){2, 3}, NULL);
  return out[0] ? 1 : -1;
}

/* The trace-time option structs (ft_conv_opts, ft_triangular_opts) are
 * sized too: size 0 fails the trace, NULL and the _INIT macro are the
 * defaults. user: 0 NULL, 1 size 0, 2 FT_CONV_OPTS_INIT. */
static int trace_conv(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out;
  int how = *(int *)user;
  ft_conv_opts zero = {0}, init = FT_CONV_OPTS_INIT;
  out[0] = ft_conv(in[0], in[1], how == 0 ? NULL : how == 1 ? &zero : &init);
  return out[0] ? 1 : -1;
}

static int trace_trsv(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out;
  int how = *(int *)user;
  ft_triangular_opts zero = {0}, init = FT_TRIANGULAR_OPTS_INIT;
  init.left_side = true;
  out[0] = ft_triangular_solve(in[0], in[0], how == 0 ? NULL : how == 1 ? &zero : &init);
  return out[0] ? 1 : -1;
}

static void trace_options(void) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_aval cv[2] = {{FT_F32, 4, {1, 2, 5, 5}, false}, {FT_F32, 4, {3, 2, 3, 3}, false}};
  ft_aval sq = {FT_F32, 2, {3, 3}, false};
  for (int how = 0; how < 3; how++) {
    ft_jaxpr *j = ft_trace(ctx, trace_conv, &how, 2, cv);
    ft_aval av;
    if (how == 1) {
      CHECK(j == NULL);
      CHECK(CONTAINS(ft_ctx_error(ctx), "ft_conv_opts: size is 0"));
    } else {
      CHECK(j && ft_jaxpr_output_aval(j, 0, &av) == FT_OK && av.rank == 4 && av.dims[1] == 3 && av.dims[2] == 3);
    }
    ft_jaxpr_free(j);
    j = ft_trace(ctx, trace_trsv, &how, 1, &sq);
    if (how == 1) {
      CHECK(j == NULL);
      CHECK(CONTAINS(ft_ctx_error(ctx), "ft_triangular_opts: size is 0"));
    } else {
      CHECK(j != NULL);
    }
    ft_jaxpr_free(j);
  }
  ft_ctx_free(ctx);
}

static void lengths(void) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_jaxpr *j = parse(ctx, "{ lambda ; a:f32[3] b:f32[]. let c:f32[3] = mul a b in (c,) }");
  CHECK(j != NULL);
  int ia[2] = {0, FT_VMAP_NONE}, oa[1] = {0};
  CHECK(ft_vmap(ctx, j, 1, ia, 1, oa, 4) == NULL);
  CHECK(!strcmp(ft_ctx_error(ctx), "vmap: in_axes has 1 entries; the jaxpr has 2 inputs"));
  CHECK(ft_vmap(ctx, j, 2, ia, 2, oa, 4) == NULL);
  CHECK(!strcmp(ft_ctx_error(ctx), "vmap: out_axes has 2 entries; the jaxpr has 1 outputs"));
  CHECK(ft_vmap(ctx, j, 3, NULL, 0, NULL, 4) == NULL);
  CHECK(CONTAINS(ft_ctx_error(ctx), "in_axes is NULL but n_in_axes is 3"));
  ft_jaxpr *d0 = ft_vmap(ctx, j, 0, NULL, 0, NULL, 4), *d2 = ft_vmap(ctx, j, 2, NULL, 1, NULL, 4);
  CHECK(d0 && d2);  /* NULL axes with 0 or the count: the same program */
  char h0[33] = "", h2[33] = "";
  if (d0 && d2) ft_jaxpr_hash_hex(d0, h0), ft_jaxpr_hash_hex(d2, h2);
  CHECK(h0[0] && !strcmp(h0, h2));
  ft_jaxpr_free(d0);
  ft_jaxpr_free(d2);
  ft_jaxpr *v = ft_vmap(ctx, j, 2, ia, 1, oa, 4);
  CHECK(v != NULL);
  ft_aval av;
  CHECK(v && ft_jaxpr_input_aval(v, 0, &av) == FT_OK && av.rank == 2 && av.dims[0] == 4);
  ft_jaxpr_free(v);
  ft_aval batched[2] = {{FT_F32, 2, {5, 3}, false}, {FT_F32, 0, {0}, false}};
  CHECK(ft_vmap_avals(ctx, j, 2, ia, 0, NULL, 1, batched) == NULL);
  CHECK(!strcmp(ft_ctx_error(ctx), "vmap: 1 argument avals given; the jaxpr has 2 inputs"));
  v = ft_vmap_avals(ctx, j, 2, ia, 0, NULL, 2, batched);
  CHECK(v && ft_jaxpr_input_aval(v, 0, &av) == FT_OK && av.dims[0] == 5);
  ft_jaxpr_free(v);
  ft_jaxpr_free(j);

  ft_aval m = {FT_F32, 2, {2, 3}, false};
  int n = 3;
  CHECK(ft_trace(ctx, trace_transpose, &n, 1, &m) == NULL);
  CHECK(CONTAINS(ft_ctx_error(ctx), "transpose: the permutation has 3 entries; the operand has rank 2"));
  n = 2;
  ft_jaxpr *tj = ft_trace(ctx, trace_transpose, &n, 1, &m);
  CHECK(tj && ft_jaxpr_output_aval(tj, 0, &av) == FT_OK && av.dims[0] == 3 && av.dims[1] == 2);
  ft_jaxpr_free(tj);
  n = 1;
  CHECK(ft_trace(ctx, trace_slice, &n, 1, &m) == NULL);
  CHECK(CONTAINS(ft_ctx_error(ctx), "slice: start, limit and strides have 1 entries; the operand has rank 2"));
  n = 2;
  tj = ft_trace(ctx, trace_slice, &n, 1, &m);
  CHECK(tj && ft_jaxpr_output_aval(tj, 0, &av) == FT_OK && av.dims[0] == 2 && av.dims[1] == 2);
  ft_jaxpr_free(tj);
  ft_ctx_free(ctx);
}

/* ------------------------------------------------------------- array data */
static void array_data(void) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_array *a = ft_array_new(ctx, FT_I32, 1, (int64_t[]){2});
  int32_t *w = ft_array_data_mut(a);
  w[0] = 7, w[1] = -3;
  const int32_t *r = ft_array_data(a);
  CHECK(r == w && r[0] == 7 && r[1] == -3);
  CHECK(ft_array_data(NULL) == NULL && ft_array_data_mut(NULL) == NULL);
  ft_array_free(a);
  ft_ctx_free(ctx);
}

/* -------------------------------------------------- per-call errors, threads */
enum { THREADS = 4, ROUNDS = 200 };
typedef struct worker {
  ft_fn *fn;
  ft_ctx *ctx;
  int id;
  int wrong, right;  /* calls whose result was as expected */
} worker;

/* Odd workers pass an input of the wrong shape, f32[3 + id], and must get their
 * own message (naming that shape) each time; even ones pass f32[3] and
 * must succeed with sin's values. */
static void *work(void *arg) {
  worker *w = arg;
  bool bad = w->id % 2;
  int64_t n = bad ? 3 + w->id : 3;
  ft_array *x = ft_array_new(w->ctx, FT_F32, 1, &n);
  for (int64_t i = 0; i < n; i++) ((float *)ft_array_data_mut(x))[i] = 0.5f;
  char want[64];
  snprintf(want, sizeof want, "expected f32[3], got f32[%lld]", (long long)n);
  for (int r = 0; r < ROUNDS; r++) {
    char err[512];
    ft_array *y = NULL;
    ft_status st = ft_call_ex(w->fn, 1, (const ft_array *const *)&x, 1, &y, err, sizeof err);
    if (bad) w->wrong += st == FT_ERR_SHAPE && strstr(err, want) != NULL;
    else w->right += st == FT_OK && err[0] == 0 && y &&
                     ((const float *)ft_array_data(y))[2] == ((const float *)ft_array_data(y))[0];
    ft_array_free(y);
    ft_array *out = ft_array_new(w->ctx, FT_F32, 1, (int64_t[]){3});
    st = ft_call_into_ex(w->fn, 1, (const ft_array *const *)&x, 1, &out, err, sizeof err);
    if (bad) w->wrong += st == FT_ERR_SHAPE && strstr(err, want) != NULL;
    else w->right += st == FT_OK && err[0] == 0;
    ft_array_free(out);
  }
  ft_array_free(x);
  return NULL;
}

static void per_call_errors(void) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_jaxpr *j = parse(ctx, SIN3);
  ft_jit_options jo = FT_JIT_OPTIONS_INIT;
  jo.no_disk_cache = true;
  ft_fn *fn = ft_jit(ctx, j, &jo);
  CHECK(fn != NULL);
  worker w[THREADS];
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++) {
    w[i] = (worker){.fn = fn, .ctx = ctx, .id = i + 1};
    CHECK(pthread_create(&th[i], NULL, work, &w[i]) == 0);
  }
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < THREADS; i++) {
    if (w[i].id % 2) CHECK(w[i].wrong == 2 * ROUNDS);
    else CHECK(w[i].right == 2 * ROUNDS);
  }
  /* a failure that sets no message still says something; NULL err is fine */
  char err[128];
  CHECK(ft_call_ex(NULL, 0, NULL, 0, NULL, err, sizeof err) == FT_ERR_INVALID_ARG);
  CHECK(!strcmp(err, "call: failed with FT_ERR_INVALID_ARG"));
  ft_array *y = NULL;
  ft_array *x = ft_array_new(ctx, FT_F32, 1, (int64_t[]){3});
  CHECK(ft_call_ex(fn, 1, (const ft_array *const *)&x, 1, &y, NULL, 0) == FT_OK);
  ft_array_free(y);
  y = NULL;
  /* truncated, still terminated */
  char tiny[8];
  CHECK(ft_call_ex(fn, 0, NULL, 1, &y, tiny, sizeof tiny) == FT_ERR_INVALID_ARG);
  CHECK(strlen(tiny) == 7);
  ft_array_free(x);
  ft_array_free(y);
  ft_fn_free(fn);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
}

int main(void) {
  sized_options();
  allocator_hook();
  lengths();
  trace_options();
  array_data();
  per_call_errors();
  printf("%d passed, %d failed\n", pass, fail);
  return fail ? 1 : 0;
}
