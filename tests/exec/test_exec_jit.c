/* tests/exec/test_exec_jit.c: the public path, ft_jit + ft_call_into, on
 * contexts asking for 1, 2, 3, 4 and 8 threads: every golden program that
 * parses and evaluates gives ft_eval's bits on each, and a steady-state
 * ft_call_into of the MLP gradient allocates nothing. (ft_call runs its
 * program on the executor: src/lower/jit.c, docs/executor.md.) */
#include <dirent.h>
#include <math.h>
#include <stdio.h>

#include "exec_util.h"
#include "runtime/runtime.h"

static const int THREADS[] = {1, 2, 3, 4, 8};
enum { NT = sizeof THREADS / sizeof THREADS[0] };
static ft_ctx *C, *CT[NT];

static void setup(void) {
  C = ft_ctx_new(NULL);
  for (int i = 0; i < NT; i++) CT[i] = ft_ctx_new(&(ft_ctx_options){.size = sizeof(ft_ctx_options), .num_threads = THREADS[i]});
}
static void teardown(void) {
  for (int i = 0; i < NT; i++) ft_ctx_free(CT[i]);
  ft_ctx_free(C);
}

static const ft_jit_options JO = {.size = sizeof(ft_jit_options), .no_disk_cache = true};

START_TEST(golden_ft_call_bitwise_on_every_thread_count) {
  const char *dir = getenv("FT_GOLDEN");
  ck_assert_ptr_nonnull(dir);
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int compared = 0, bad = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t nl = strlen(de->d_name);
    if (nl < 7 || strcmp(de->d_name + nl - 6, ".jaxpr")) continue;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(nl - 6), de->d_name);
    ft_array *in[64] = {0};
    int n_in = 0;
    ft_jaxpr *j = xt_load_case(C, dir, name, in, &n_in);
    if (!j) continue;
    int n_out = ft_jaxpr_num_outputs(j);
    ft_array **want = calloc((size_t)n_out + 1, sizeof *want);
    ft_array **got = calloc((size_t)n_out + 1, sizeof *got);
    if (ft_eval(C, j, n_in, (const ft_array *const *)in, n_out, want) == FT_OK) {
      compared++;
      for (int t = 0; t < NT; t++) {
        ft_fn *fn = ft_jit(CT[t], j, &JO);
        if (!fn || ft_call(fn, n_in, (const ft_array *const *)in, n_out, got) != FT_OK) {
          fprintf(stderr, "%s on %d threads: %s\n", name, THREADS[t], ft_ctx_error(CT[t]));
          ft_ctx_clear_error(CT[t]);
          bad++;
        } else {
          for (int k = 0; k < n_out; k++) {
            if (!xt_same_bits(got[k], want[k])) {
              fprintf(stderr, "%s: output %d differs on %d threads\n", name, k, THREADS[t]);
              bad++;
            }
            ft_array_free(got[k]);
            got[k] = NULL;
          }
        }
        ft_fn_free(fn);
      }
      for (int k = 0; k < n_out; k++) ft_array_free(want[k]);
    }
    ft_ctx_clear_error(C);
    free(want), free(got);
    for (int k = 0; k < n_in; k++) ft_array_free(in[k]);
    ft_jaxpr_free(j);
  }
  closedir(d);
  ft_jit_cache_clear();
  fprintf(stderr, "golden ft_call: %d programs on 1, 2, 3, 4, 8 threads, %d differences\n",
          compared, bad);
  ck_assert_int_gt(compared, 100);
  ck_assert_int_eq(bad, 0);
}
END_TEST

START_TEST(steady_state_ft_call_into_does_not_allocate) {
  const char *dir = getenv("FT_GOLDEN");
  ck_assert_ptr_nonnull(dir);
  ft_array *in[64] = {0};
  int n_in = 0;
  ft_jaxpr *j = xt_load_case(C, dir, "grad_mlp_loss", in, &n_in);
  ck_assert_ptr_nonnull(j);
  int n_out = ft_jaxpr_num_outputs(j);
  ft_array *want[8] = {0}, *got[8] = {0};
  ck_assert_int_le(n_out, 8);
  ck_assert_int_eq(ft_eval(C, j, n_in, (const ft_array *const *)in, n_out, want), FT_OK);
  for (int t = 0; t < NT; t++) {
    ft_fn *fn = ft_jit(CT[t], j, &JO);
    ck_assert_msg(fn, "%s", ft_ctx_error(CT[t]));
    for (int k = 0; k < n_out; k++) got[k] = ft_array_alloc(C, &want[k]->aval);
    ck_assert_int_eq(ft_call_into(fn, n_in, (const ft_array *const *)in, n_out, got), FT_OK);
    atomic_store(&xt_allocs, 0);
    atomic_store(&xt_counting, true);
    int fails = 0;
    for (int rep = 0; rep < 50; rep++) fails += ft_call_into(fn, n_in, (const ft_array *const *)in, n_out, got) != FT_OK;
    atomic_store(&xt_counting, false);
    ck_assert_int_eq(fails, 0);
    ck_assert_int_eq(atomic_load(&xt_allocs), 0);
    for (int k = 0; k < n_out; k++) {
      ck_assert(xt_same_bits(got[k], want[k]));
      ft_array_free(got[k]);
    }
    ft_fn_free(fn);
  }
  for (int k = 0; k < n_out; k++) ft_array_free(want[k]);
  for (int k = 0; k < n_in; k++) ft_array_free(in[k]);
  ft_jaxpr_free(j);
  ft_jit_cache_clear();
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("exec_jit");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 900);
  tcase_add_test(tc, golden_ft_call_bitwise_on_every_thread_count);
  tcase_add_test(tc, steady_state_ft_call_into_does_not_allocate);
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
