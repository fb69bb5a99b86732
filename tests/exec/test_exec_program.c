/* tests/exec/test_exec_program.c: compiled programs (src/lower) run by the
 * executor (ft_prog_exec) give the interpreter's bits on 1, 2, 3, 4 and 8
 * threads, for every golden program that parses and evaluates; the buffer
 * plan over waves is valid and reported; a steady-state run of a program
 * without fallback steps allocates nothing; many user threads can run one
 * compiled program at once. */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>

#include "exec_util.h"
#include "lower/lower.h"

static const int POOL_SIZES[] = {1, 2, 3, 4, 8};
static ft_ctx *C;
static ft_pool *POOLS[5];

static void setup(void) {
  C = ft_ctx_new(NULL);
  for (int i = 0; i < 5; i++) POOLS[i] = ft_pool_new(POOL_SIZES[i]);
}
static void teardown(void) {
  for (int i = 0; i < 5; i++) ft_pool_free(POOLS[i]);
  ft_ctx_free(C);
}

/* A program compiled and bound (what ft_jit builds inside an ft_fn). */
typedef struct compiled {
  ft_program *p;
  ft_jit_code *code;
} compiled;

static bool compile(const ft_jaxpr *j, compiled *c) {
  return ft_exec_compile(C, j, &c->p, &c->code) == FT_OK;
}

static void uncompile(compiled *c) {
  if (c->code) ft_jit_code_release(c->code);
  ft_program_free(c->p);
}

/* Runs c through the executor on every pool size; returns the number of
 * (pool size, output) pairs that differ from want[]. */
static int exec_vs(const char *name, const compiled *c, int n_in, ft_array **in, int n_out,
                   ft_array **want) {
  int bad = 0;
  ft_array **got = calloc((size_t)n_out + 1, sizeof *got);
  for (int k = 0; k < n_out; k++) got[k] = ft_array_alloc(C, &want[k]->aval);
  for (int ps = 0; ps < 5; ps++) {
    /* the threads take part even in tiny waves */
    ft_prog_exec *pe = ft_prog_exec_new(C, c->p, POOLS[ps], &(ft_prog_exec_options){.no_small_waves = true});
    if (!pe) {
      fprintf(stderr, "%s: ft_prog_exec_new: %s\n", name, ft_ctx_error(C));
      bad++;
      continue;
    }
    for (int rep = 0; rep < 2; rep++) {
      for (int k = 0; k < n_out; k++) memset(got[k]->data, 0xA5, got[k]->nbytes);
      if (ft_prog_exec_run(pe, C, (const ft_array *const *)in, got, NULL) != FT_OK) {
        fprintf(stderr, "%s: run on %d threads: %s\n", name, POOL_SIZES[ps], ft_ctx_error(C));
        bad++;
        break;
      }
      for (int k = 0; k < n_out; k++)
        if (!xt_same_bits(got[k], want[k])) {
          fprintf(stderr, "%s: output %d differs on %d threads\n", name, k, POOL_SIZES[ps]);
          bad++;
        }
    }
    ft_bufplan_stats st = ft_prog_exec_plan_stats(pe);
    if (st.peak > st.sum + 64 * (size_t)c->p->n_bufs || st.lower_bound > st.peak) {
      fprintf(stderr, "%s: odd plan: peak %zu sum %zu bound %zu\n", name, st.peak, st.sum,
              st.lower_bound);
      bad++;
    }
    ft_prog_exec_free(pe);
  }
  for (int k = 0; k < n_out; k++) ft_array_free(got[k]);
  free(got);
  return bad;
}

START_TEST(golden_programs_bitwise_on_every_thread_count) {
  const char *dir = getenv("FT_GOLDEN");
  ck_assert_msg(dir != NULL, "FT_GOLDEN is not set");
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int compared = 0, bad_cases = 0, multi_wave = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t nl = strlen(de->d_name);
    if (nl < 7 || strcmp(de->d_name + nl - 6, ".jaxpr")) continue;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(nl - 6), de->d_name);
    const char *only = getenv("XT_ONLY");
    if (only && strcmp(only, name)) continue;
    ft_array *in[64] = {0};
    int n_in = 0;
    ft_jaxpr *j = xt_load_case(C, dir, name, in, &n_in);
    if (!j) continue;
    int n_out = ft_jaxpr_num_outputs(j);
    ft_array **want = calloc((size_t)n_out + 1, sizeof *want);
    compiled c;
    if (ft_eval(C, j, n_in, (const ft_array *const *)in, n_out, want) == FT_OK) {
      if (!compile(j, &c)) {
        fprintf(stderr, "%s: compile: %s\n", name, ft_ctx_error(C));
        bad_cases++;
      } else {
        compared++;
        if (exec_vs(name, &c, n_in, in, n_out, want)) bad_cases++;
        uncompile(&c);
      }
      for (int k = 0; k < n_out; k++) ft_array_free(want[k]);
    }
    ft_ctx_clear_error(C);
    free(want);
    for (int k = 0; k < n_in; k++) ft_array_free(in[k]);
    ft_jaxpr_free(j);
    (void)multi_wave;
  }
  closedir(d);
  fprintf(stderr, "golden exec: %d programs compared on 1, 2, 3, 4, 8 threads, %d differ\n",
          compared, bad_cases);
  if (!getenv("XT_ONLY")) ck_assert_int_gt(compared, 100);
  ck_assert_int_eq(bad_cases, 0);
}
END_TEST

/* ---------------------------------------------------- the MLP loss program */
typedef struct mlp_case {
  ft_jaxpr *j;
  ft_array *in[64];
  int n_in, n_out;
  ft_array **want;
  compiled c;
} mlp_case;

static bool mlp_load(mlp_case *m, const char *name) {
  memset(m, 0, sizeof *m);
  const char *dir = getenv("FT_GOLDEN");
  if (!dir || !(m->j = xt_load_case(C, dir, name, m->in, &m->n_in))) return false;
  m->n_out = ft_jaxpr_num_outputs(m->j);
  m->want = calloc((size_t)m->n_out + 1, sizeof *m->want);
  return ft_eval(C, m->j, m->n_in, (const ft_array *const *)m->in, m->n_out, m->want) == FT_OK && compile(m->j, &m->c);
}

static void mlp_free(mlp_case *m) {
  uncompile(&m->c);
  for (int k = 0; k < m->n_out; k++) ft_array_free(m->want[k]);
  free(m->want);
  for (int k = 0; k < m->n_in; k++) ft_array_free(m->in[k]);
  ft_jaxpr_free(m->j);
}

START_TEST(steady_state_program_runs_do_not_allocate) {
  mlp_case m;
  ck_assert_msg(mlp_load(&m, "grad_mlp_loss"), "%s", ft_ctx_error(C));
  ck_assert_int_eq(m.c.p->n_fallback, 0);
  ft_array **got = calloc((size_t)m.n_out + 1, sizeof *got);
  for (int k = 0; k < m.n_out; k++) got[k] = ft_array_alloc(C, &m.want[k]->aval);
  for (int ps = 0; ps < 5; ps++) {
    ft_prog_exec *pe = ft_prog_exec_new(C, m.c.p, POOLS[ps], NULL);
    ck_assert_ptr_nonnull(pe);
    ck_assert_int_eq(ft_prog_exec_run(pe, C, (const ft_array *const *)m.in, got, NULL), FT_OK); /* first call: frame */
    atomic_store(&xt_allocs, 0);
    atomic_store(&xt_counting, true);
    int fails = 0;
    for (int rep = 0; rep < 50; rep++) fails += ft_prog_exec_run(pe, C, (const ft_array *const *)m.in, got, NULL) != FT_OK;
    atomic_store(&xt_counting, false);
    ck_assert_int_eq(fails, 0);
    ck_assert_int_eq(atomic_load(&xt_allocs), 0);
    for (int k = 0; k < m.n_out; k++) ck_assert(xt_same_bits(got[k], m.want[k]));
    ft_prog_exec_free(pe);
  }
  for (int k = 0; k < m.n_out; k++) ft_array_free(got[k]);
  free(got);
  mlp_free(&m);
}
END_TEST

typedef struct user_thread {
  ft_prog_exec *pe;
  mlp_case *m;
  int bad;
} user_thread;

static void *user_main(void *arg) {
  user_thread *u = arg;
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_array *got[16];
  for (int k = 0; k < u->m->n_out; k++) got[k] = ft_array_alloc(ctx, &u->m->want[k]->aval);
  for (int rep = 0; rep < 25; rep++) {
    if (ft_prog_exec_run(u->pe, ctx, (const ft_array *const *)u->m->in, got, NULL) != FT_OK) u->bad++;
    for (int k = 0; k < u->m->n_out; k++) u->bad += !xt_same_bits(got[k], u->m->want[k]);
  }
  for (int k = 0; k < u->m->n_out; k++) ft_array_free(got[k]);
  ft_ctx_free(ctx);
  return NULL;
}

START_TEST(many_user_threads_run_one_program) {
  mlp_case m;
  ck_assert_msg(mlp_load(&m, "grad_mlp_loss"), "%s", ft_ctx_error(C));
  ck_assert_int_le(m.n_out, 16);
  for (int ps = 1; ps < 5; ps += 2) { /* 2 and 4 threads */
    ft_prog_exec *pe = ft_prog_exec_new(C, m.c.p, POOLS[ps], NULL);
    pthread_t th[6];
    user_thread ut[6];
    for (int i = 0; i < 6; i++) {
      ut[i] = (user_thread){pe, &m, 0};
      ck_assert_int_eq(pthread_create(&th[i], NULL, user_main, &ut[i]), 0);
    }
    for (int i = 0; i < 6; i++) {
      pthread_join(th[i], NULL);
      ck_assert_int_eq(ut[i].bad, 0);
    }
    ft_prog_exec_free(pe);
  }
  mlp_free(&m);
}
END_TEST

START_TEST(profile_names_the_steps) {
  mlp_case m;
  ck_assert_msg(mlp_load(&m, "mlp_loss"), "%s", ft_ctx_error(C));
  ft_prog_exec *pe = ft_prog_exec_new(C, m.c.p, POOLS[1], NULL);
  ft_exec *x = ft_prog_exec_executor(pe);
  ft_exec_profile *prof = ft_exec_profile_new(x);
  ft_array *got[16];
  for (int k = 0; k < m.n_out; k++) got[k] = ft_array_alloc(C, &m.want[k]->aval);
  ck_assert_int_eq(ft_prog_exec_run(pe, C, (const ft_array *const *)m.in, got, prof), FT_OK);
  char *js = ft_exec_profile_json(prof);
  ck_assert_ptr_nonnull(strstr(js, "\"name\":\"gemm dot_general#"));
  free(js);
  char *tab = ft_exec_stats_table(prof);
  ck_assert_ptr_nonnull(strstr(tab, "gemm dot_general#"));
  free(tab);
  for (int k = 0; k < m.n_out; k++) ft_array_free(got[k]);
  ft_exec_profile_free(prof);
  ft_prog_exec_free(pe);
  mlp_free(&m);
}
END_TEST

/* In-place reuse: tanh(c) may overwrite c, a GEMM's result that dies at
 * it (same shape, read with the store's own index). The plan then needs
 * one 16 KiB block instead of two, and the bits stay the interpreter's on
 * every thread count. exp(x) over an input, and a transposed read of c,
 * are never planned in place. */
static const char *INPLACE_CHAIN =
    "{ lambda ; x:f32[64,64] w:f32[64,64]. let\n"
    "    c:f32[64,64] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w\n"
    "    d:f32[64,64] = tanh c\n"
    "    e:f32[64,64] = dot_general[dimension_numbers=(([1], [0]), ([], []))] d d\n"
    "  in (e,) }";
static const char *TRANSPOSED_READ =
    "{ lambda ; x:f32[64,64] w:f32[64,64]. let\n"
    "    c:f32[64,64] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w\n"
    "    t:f32[64,64] = transpose[permutation=(1, 0)] c\n"
    "    d:f32[64,64] = tanh t\n"
    "    e:f32[64,64] = dot_general[dimension_numbers=(([1], [0]), ([], []))] d d\n"
    "  in (e,) }";

static void inplace_case(const char *text, size_t want_peak, size_t want_sum, int want_inplace) {
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "inplace");
  ck_assert_msg(j, "%s", ft_ctx_error(C));
  ft_array *in[2], *want[1] = {0};
  uint64_t seed = 11;
  for (int k = 0; k < 2; k++) {
    ft_aval a;
    ft_jaxpr_input_aval(j, k, &a);
    in[k] = ft_array_alloc(C, &a);
    for (int64_t i = 0; i < ft_array_size(in[k]); i++)
      ft_set_f64(in[k], i, (double)(xt_rng(&seed) >> 11) * 0x1p-53 - 0.5);
  }
  ck_assert_int_eq(ft_eval(C, j, 2, (const ft_array *const *)in, 1, want), FT_OK);
  compiled c;
  ck_assert_msg(compile(j, &c), "%s", ft_ctx_error(C));
  ft_prog_exec *pe = ft_prog_exec_new(C, c.p, NULL, NULL);
  ck_assert_ptr_nonnull(pe);
  ft_bufplan_stats st = ft_prog_exec_plan_stats(pe);
  ck_assert_int_eq(st.n_inplace, want_inplace);
  ck_assert_uint_eq(st.peak, want_peak);
  ck_assert_uint_eq(st.sum, want_sum);
  ft_prog_exec_free(pe);
  ck_assert_int_eq(exec_vs("inplace", &c, 2, in, 1, want), 0);
  uncompile(&c);
  ft_array_free(in[0]), ft_array_free(in[1]), ft_array_free(want[0]);
  ft_jaxpr_free(j);
}

START_TEST(elementwise_steps_overwrite_dying_inputs) {
  inplace_case(INPLACE_CHAIN, 16384, 32768, 1);
  inplace_case(TRANSPOSED_READ, 32768, 32768, 0);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("exec_program");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 900);
  tcase_add_test(tc, golden_programs_bitwise_on_every_thread_count);
  tcase_add_test(tc, steady_state_program_runs_do_not_allocate);
  tcase_add_test(tc, many_user_threads_run_one_program);
  tcase_add_test(tc, profile_names_the_steps);
  tcase_add_test(tc, elementwise_steps_overwrite_dying_inputs);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
