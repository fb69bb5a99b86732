/* tests/demo/test_demo.c: the pieces of `ftc demo` (tools/ftc_demo_model.c,
 * docs/demo.md): the digits load and split as documented; the initialization
 * is JAX's bit for bit (fixtures/demo/init.txt from tools/oracle/gen_demo.py);
 * the first training step run by the JIT (optimized program) equals the
 * interpreter's (unoptimized program) bit for bit, and its loss is JAX's
 * within rounding; a ledger of the pipeline and one step verifies, replays
 * and re-executes; the steady-state training step allocates nothing. */
#include <check.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftc_demo.h"

/* Malloc counting (the binary links with -Wl,--wrap=malloc,...; counted
 * only while counting is on: Check allocates too). */
static atomic_long allocs;
static atomic_bool counting;
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
static void count(void) {
  if (atomic_load(&counting)) atomic_fetch_add(&allocs, 1);
}
void *__wrap_malloc(size_t n) { count(); return __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { count(); return __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { count(); return __real_realloc(p, n); }
void *__wrap_aligned_alloc(size_t a, size_t n) { count(); return __real_aligned_alloc(a, n); }

static ft_ctx *C;
static void setup(void) { C = ft_ctx_new(NULL); }
static void teardown(void) { ft_ctx_free(C); }

static const char *fixtures(void) {
  const char *f = getenv("FT_FIXTURES");
  return f ? f : "fixtures";
}

static void load(demo_data *d) {
  char err[512];
  ck_assert_msg(demo_data_load(C, FTC_DEMO_DATA, d, err, sizeof err) == 0, "%s", err);
}

START_TEST(data_loads_and_splits) {
  demo_data d;
  load(&d);
  ck_assert_int_eq(d.n_train, 1442);
  ck_assert_int_eq(d.n_test, 355);
  /* Pixel sums (numpy on the .npy files) and the first labels of each part. */
  double st = 0, se = 0;
  for (int i = 0; i < d.n_train * DEMO_PIXELS; i++) st += d.x_train[i] * 16.0;
  for (int i = 0; i < d.n_test * DEMO_PIXELS; i++) se += d.x_test[i] * 16.0;
  ck_assert(st == 450566.0);
  ck_assert(se == 111152.0);
  const int first_train[5] = {0, 1, 2, 3, 4}, first_test[5] = {5, 0, 9, 8, 7};
  for (int i = 0; i < 5; i++) {
    ck_assert_int_eq(d.y_train[i], first_train[i]);
    ck_assert_int_eq(d.y_test[i], first_test[i]);
  }
  /* Stratified: each class's test count is a fifth of it, rounded down. */
  const int per_class[DEMO_CLASSES] = {35, 36, 35, 36, 36, 36, 36, 35, 34, 36};
  int cnt[DEMO_CLASSES] = {0};
  for (int i = 0; i < d.n_test; i++) cnt[d.y_test[i]]++;
  for (int c = 0; c < DEMO_CLASSES; c++) ck_assert_int_eq(cnt[c], per_class[c]);
  demo_data_free(&d);
  /* A missing directory is an error naming the file. */
  char err[512];
  ck_assert_int_eq(demo_data_load(C, "/nonexistent/digits", &d, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "/nonexistent/digits/images.npy") != NULL, "%s", err);
}
END_TEST

/* The outputs of init for seed: by the interpreter and the JIT (equal). */
static void run_init(demo_model m, int seed, ft_array **out) {
  ft_jaxpr *j = demo_trace_init(C, m);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  ft_array *s = ft_array_from_data(C, FT_I32, 0, NULL, &seed);
  ck_assert_msg(ft_eval(C, j, 1, (const ft_array *const *)&s, 5, out) == FT_OK, "%s", ft_ctx_error(C));
  ft_fn *fn = ft_jit(C, j, NULL);
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(C));
  ft_array *jo[5] = {0};
  ck_assert_msg(ft_call(fn, 1, (const ft_array *const *)&s, 5, jo) == FT_OK, "%s", ft_ctx_error(C));
  for (int k = 0; k < 5; k++) {
    ck_assert_msg(ft_array_equal_bits(out[k], jo[k]), "init output %d: JIT != interpreter", k);
    ft_array_free(jo[k]);
  }
  ft_fn_free(fn);
  ft_array_free(s);
  ft_jaxpr_free(j);
}

START_TEST(init_is_jax_bit_for_bit) {
  char path[4096], line[256];
  snprintf(path, sizeof path, "%s/demo/init.txt", fixtures());
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "cannot read %s", path);
  int cases = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#') continue;
    int seed;
    char model[8], hash[32];
    unsigned w[8];
    ck_assert_int_eq(sscanf(line, "%7s %d %31s %x %x %x %x %x %x %x %x", model, &seed, hash, &w[0], &w[1],
                            &w[2], &w[3], &w[4], &w[5], &w[6], &w[7]), 11);
    demo_model m = !strcmp(model, "cnn") ? DEMO_CNN : DEMO_MLP;
    ck_assert_str_eq(model, demo_model_name(m));
    ft_array *out[5];
    run_init(m, seed, out);
    char mine[17];
    snprintf(mine, sizeof mine, "%016llx", (unsigned long long)demo_fnv1a(4, out));
    ck_assert_str_eq(mine, hash);
    const uint32_t *w1 = ft_array_data(out[0]), *w2 = ft_array_data(out[2]);
    for (int i = 0; i < 4; i++) {
      ck_assert_uint_eq(w1[i], w[i]);
      ck_assert_uint_eq(w2[i], w[4 + i]);
    }
    const float *b1 = ft_array_data(out[1]);
    ft_aval ab = ft_array_aval(out[1]);
    for (int i = 0; i < ab.dims[0]; i++) ck_assert(b1[i] == 0.0f);
    for (int k = 0; k < 5; k++) ft_array_free(out[k]);
    cases++;
  }
  fclose(f);
  ck_assert_int_eq(cases, 3);
}
END_TEST

/* The optimized step, its unoptimized flat form, and the inputs of the
 * first training step of the default run (seed 0, batch 32, epoch 0's
 * permutation): in[0..12] state, t, x, y. */
typedef struct step_case {
  ft_jaxpr *flat, *opt;
  ft_array *in[15];
} step_case;

static void step_case_make(step_case *sc, demo_model m, int batch) {
  memset(sc, 0, sizeof *sc);
  int argnums[4] = {0, 1, 2, 3};
  ft_jaxpr *loss = demo_trace_loss(C, m, batch);
  ck_assert_msg(loss != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr *vg = ft_value_and_grad(C, loss, 4, argnums, false);
  ck_assert_msg(vg != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr *step = demo_trace_step(C, m, vg, batch);
  ck_assert_msg(step != NULL, "%s", ft_ctx_error(C));
  ck_assert_msg((sc->flat = ft_inline(C, step)) != NULL, "%s", ft_ctx_error(C));
  ck_assert_msg((sc->opt = ft_optimize(C, sc->flat, FT_OPT_EXACT, NULL)) != NULL, "%s", ft_ctx_error(C));
  ck_assert_int_eq(ft_jaxpr_num_outputs(sc->opt), 13);
  ft_jaxpr_free(loss);
  ft_jaxpr_free(vg);
  ft_jaxpr_free(step);
  ft_array *init[5];
  run_init(m, 0, init);
  demo_data d;
  load(&d);
  ft_jaxpr *pj = demo_trace_perm(C, d.n_train);
  int32_t epoch = 0;
  ft_array *pin[2] = {init[4], ft_array_from_data(C, FT_I32, 0, NULL, &epoch)}, *perm = NULL;
  ck_assert_msg(ft_eval(C, pj, 2, (const ft_array *const *)pin, 1, &perm) == FT_OK, "%s", ft_ctx_error(C));
  const int32_t *p = ft_array_data(perm);
  for (int i = 0; i < 4; i++) {
    sc->in[i] = init[i];
    ft_aval av = ft_array_aval(init[i]);
    for (int k = 1; k < 3; k++) {
      sc->in[4 * k + i] = ft_array_new(C, FT_F32, av.rank, av.dims);
      memset(ft_array_data_mut(sc->in[4 * k + i]), 0, sizeof(float) * (size_t)ft_aval_size(&av));
    }
  }
  float one = 1.0f;
  sc->in[12] = ft_array_from_data(C, FT_F32, 0, NULL, &one);
  const int64_t dx[2] = {batch, DEMO_PIXELS}, dy[2] = {batch, DEMO_CLASSES};
  sc->in[13] = ft_array_new(C, FT_F32, 2, dx);
  sc->in[14] = ft_array_new(C, FT_F32, 2, dy);
  float *x = ft_array_data_mut(sc->in[13]), *y = ft_array_data_mut(sc->in[14]);
  memset(y, 0, sizeof(float) * (size_t)batch * DEMO_CLASSES);
  for (int k = 0; k < batch; k++) {
    memcpy(x + k * DEMO_PIXELS, d.x_train + (size_t)p[k] * DEMO_PIXELS, sizeof(float) * DEMO_PIXELS);
    y[k * DEMO_CLASSES + d.y_train[p[k]]] = 1.0f;
  }
  ft_array_free(init[4]);
  ft_array_free(pin[1]);
  ft_array_free(perm);
  ft_jaxpr_free(pj);
  demo_data_free(&d);
}

static void step_case_free(step_case *sc) {
  for (int i = 0; i < 15; i++) ft_array_free(sc->in[i]);
  ft_jaxpr_free(sc->flat);
  ft_jaxpr_free(sc->opt);
}

START_TEST(step_jit_equals_interpreter) {
  demo_model m = _i ? DEMO_CNN : DEMO_MLP;
  step_case sc;
  step_case_make(&sc, m, 32);
  ft_array *want[13] = {0}, *got[13] = {0};
  ck_assert_msg(ft_eval(C, sc.flat, 15, (const ft_array *const *)sc.in, 13, want) == FT_OK, "%s", ft_ctx_error(C));
  ft_fn *fn = ft_jit(C, sc.opt, NULL);
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(C));
  ft_jit_stats st;
  ft_fn_stats(fn, &st);
  ck_assert_int_eq(st.n_fallback, 0);
  for (int i = 0; i < 13; i++) {
    ft_aval av = ft_array_aval(want[i]);
    got[i] = ft_array_new(C, FT_F32, av.rank, av.dims);
  }
  ck_assert_msg(ft_call_into(fn, 15, (const ft_array *const *)sc.in, 13, got) == FT_OK, "%s", ft_ctx_error(C));
  for (int i = 0; i < 13; i++) ck_assert_msg(ft_array_equal_bits(want[i], got[i]), "output %d differs", i);
  /* The loss of the default run's first step, against JAX's (rounding only). */
  char path[4096];
  snprintf(path, sizeof path, "%s/demo/%s_loss.npy", fixtures(), demo_model_name(m));
  ft_array *jl = ft_npy_read(C, path);
  ck_assert_msg(jl != NULL, "%s", ft_ctx_error(C));
  float mine = *(const float *)ft_array_data(got[12]), jax = *(const float *)ft_array_data(jl);
  ck_assert_msg(fabsf(mine - jax) <= 4e-6f * fabsf(jax), "step 1 loss %.9g, JAX %.9g", (double)mine, (double)jax);
  /* Adam's first step moves a weight with a nonzero gradient by the
   * learning rate (m / c1 = g, sqrt(v / c2) = |g|): the output biases. */
  const float *w0 = ft_array_data(sc.in[3]), *w1 = ft_array_data(got[3]);
  for (int c = 0; c < DEMO_CLASSES; c++) {
    double d = fabs((double)w1[c] - w0[c]);
    ck_assert_msg(fabs(d - DEMO_LR) < 1e-6, "first Adam step moved b2[%d] by %.9g", c, d);
  }
  for (int i = 0; i < 13; i++) {
    ft_array_free(want[i]);
    ft_array_free(got[i]);
  }
  ft_array_free(jl);
  ft_fn_free(fn);
  step_case_free(&sc);
}
END_TEST

/* The training loop's steady state: the compiled step run with
 * ft_call_into on two preallocated state sets, swapped, allocates nothing
 * (MLP: GEMMs and kernels; CNN: also the convolution and pooling routines). */
START_TEST(train_steps_do_not_allocate) {
  demo_model m = _i ? DEMO_CNN : DEMO_MLP;
  step_case sc;
  step_case_make(&sc, m, 16);
  ft_fn *fn = ft_jit(C, sc.opt, NULL);
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(C));
  ft_array *st[2][13]; /* params, m, v, loss */
  for (int s2 = 0; s2 < 2; s2++)
    for (int i = 0; i < 13; i++) {
      ft_aval av = ft_array_aval(sc.in[i]); /* in[12], t, is a scalar like the loss */
      st[s2][i] = ft_array_new(C, FT_F32, av.rank, av.dims);
      memcpy(ft_array_data_mut(st[s2][i]), ft_array_data_mut(sc.in[i]), sizeof(float) * (size_t)ft_aval_size(&av));
    }
  float *t = ft_array_data_mut(sc.in[12]);
  int cur = 0, fails = 0;
  for (int step = 0; step < 4; step++) {
    if (step == 1) {
      atomic_store(&allocs, 0);
      atomic_store(&counting, true);
    }
    *t = (float)(step + 1);
    ft_array *in[15], *out[13];
    for (int i = 0; i < 12; i++) in[i] = st[cur][i];
    in[12] = sc.in[12], in[13] = sc.in[13], in[14] = sc.in[14];
    for (int i = 0; i < 13; i++) out[i] = st[1 - cur][i];
    fails += ft_call_into(fn, 15, (const ft_array *const *)in, 13, out) != FT_OK; /* no ck_assert here: Check allocates */
    cur = 1 - cur;
  }
  atomic_store(&counting, false);
  ck_assert_msg(fails == 0, "%s", ft_ctx_error(C));
  ck_assert_int_eq(atomic_load(&allocs), 0);
  ck_assert(isfinite(*(const float *)ft_array_data(st[cur][12])));
  for (int s2 = 0; s2 < 2; s2++)
    for (int i = 0; i < 13; i++) ft_array_free(st[s2][i]);
  ft_fn_free(fn);
  step_case_free(&sc);
}
END_TEST

START_TEST(ledger_verifies_replays_reexecs) {
  char dir[] = "/tmp/ft-test-demo-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char lg_dir[4200];
  snprintf(lg_dir, sizeof lg_dir, "%s/ledger", dir);
  ft_ledger_options o = {.size = sizeof(ft_ledger_options), .fsync = FT_LEDGER_FSYNC_NEVER, .calls = FT_LEDGER_CALLS_BYTES};
  ft_ledger *lg = ft_ledger_open(C, lg_dir, &o);
  ck_assert_msg(lg != NULL, "%s", ft_ctx_error(C));
  ck_assert_int_eq(ft_ctx_attach_ledger(C, lg), FT_OK);
  step_case sc;
  step_case_make(&sc, DEMO_MLP, 8);
  ft_fn *fn = ft_jit(C, sc.opt, NULL);
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(C));
  ft_array *out[13] = {0};
  ck_assert_msg(ft_call(fn, 15, (const ft_array *const *)sc.in, 13, out) == FT_OK, "%s", ft_ctx_error(C));
  for (int i = 0; i < 13; i++) ft_array_free(out[i]);
  ft_fn_free(fn);
  step_case_free(&sc);
  ft_ctx_attach_ledger(C, NULL);
  int64_t n = ft_ledger_num_records(lg);
  ck_assert_int_eq(ft_ledger_close(lg), FT_OK);
  ft_ledger_report r = {0};
  ck_assert_msg(ft_ledger_verify(C, lg_dir, &r) == FT_OK, "%s", ft_ctx_error(C));
  ck_assert_int_eq(r.health, FT_LEDGER_CLEAN);
  ck_assert_int_eq(r.records, n);
  ck_assert(n >= 10);
  ft_ledger_report_free(&r);
  ck_assert_msg(ft_ledger_replay(C, lg_dir, &r) == FT_OK, "%s", ft_ctx_error(C));
  ck_assert(r.checked >= 5);
  ck_assert_int_eq(r.diverged, 0);
  ck_assert_int_eq(r.not_replayable, 0);
  ft_ledger_report_free(&r);
  ck_assert_msg(ft_ledger_reexec(C, lg_dir, &r) == FT_OK, "%s", ft_ctx_error(C));
  ck_assert(r.checked >= 3);
  ck_assert_int_eq(r.diverged, 0);
  ck_assert_int_eq(r.not_replayable, 0);
  ft_ledger_report_free(&r);
  char cmd[4300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("demo");
  TCase *t = tcase_create("demo");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 120);
  tcase_add_test(t, data_loads_and_splits);
  tcase_add_test(t, init_is_jax_bit_for_bit);
  tcase_add_loop_test(t, step_jit_equals_interpreter, 0, 2);
  tcase_add_loop_test(t, train_steps_do_not_allocate, 0, 2);
  tcase_add_test(t, ledger_verifies_replays_reexecs);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
