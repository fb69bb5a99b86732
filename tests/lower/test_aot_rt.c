/* tests/lower/test_aot_rt.c: the runtime side of AOT (src/lower/aot_rt.c)
 * beyond what tests/lower/test_aot.sh covers with files:
 *
 *  - a traced program with constants (their values embedded in the object)
 *    emitted as a .so linked against libfrankentrace_rt (FT_AOT_LIBDIR),
 *    loaded with dlopen: the same bits as ft_call, from several threads at
 *    once, and its _error() is "" after success;
 *  - descriptors made by hand: a good one runs; a wrong plan hash, a wrong
 *    ABI, a jaxpr that does not parse and NULL buffers fail with a status
 *    and a message that says what is wrong, on every call, never a crash. */
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include "jit_util.h"
#include "lower/lower.h"

enum { N = 1000 };
static float cvals[N];

/* f(x) = sin(x) * c + x * x, c a traced constant. */
static int traced(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)max_out, (void)user;
  int64_t n = N;
  ft_val *c = ft_constant(t, FT_F32, 1, &n, cvals);
  out[0] = ft_add(ft_mul(ft_sin(in[0]), c), ft_mul(in[0], in[0]));
  return 1;
}

typedef int (*entry_fn)(const void *const *in, void *const *out);
typedef const char *(*error_fn)(void);

typedef struct worker {
  entry_fn fn;
  const float *x;
  const ft_array *want;
  int bad;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  float *y = malloc(N * sizeof *y);
  for (int r = 0; r < 40; r++) {
    memset(y, 0xA5, N * sizeof *y);
    const void *in[1] = {w->x};
    void *out[1] = {y};
    if (w->fn(in, out) || memcmp(y, w->want->data, N * sizeof *y)) w->bad++;
  }
  free(y);
  return NULL;
}

START_TEST(traced_constants_so) {
  const char *libdir = getenv("FT_AOT_LIBDIR");
  ck_assert_msg(libdir && *libdir, "FT_AOT_LIBDIR must name libfrankentrace_rt's directory");
  for (int i = 0; i < N; i++) cvals[i] = (float)i * 0.37f - 100.0f;
  ft_aval av = {.dtype = FT_F32, .rank = 1, .dims = {N}};
  ft_jaxpr *j = ft_trace(C, traced, NULL, 1, &av);
  ck_assert_ptr_nonnull(j);
  ck_assert_ptr_nonnull(j->const_data);
  char path[64];
  snprintf(path, sizeof path, "/tmp/ft_test_aot_rt_%ld.so", (long)getpid());
  ck_assert_msg(ft_jit_emit(C, j, FT_EMIT_SO, "tc", path, NULL) == FT_OK, "%s", ft_ctx_error(C));
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  unlink(path);
  ck_assert_msg(h, "dlopen: %s", dlerror());
  entry_fn fn = (entry_fn)(uintptr_t)dlsym(h, "tc");
  error_fn err = (error_fn)(uintptr_t)dlsym(h, "tc_error");
  void (*release)(void) = (void (*)(void))(uintptr_t)dlsym(h, "tc_release");
  ck_assert(fn && err && release);
  ck_assert_ptr_null(dlsym(h, "ft_k0")); /* kernels are internal */

  ft_array *x = ft_array_alloc(C, &av), *want = NULL;
  jt_fill(x, 7);
  ft_fn *jf = ft_jit(C, j, NULL);
  ck_assert_ptr_nonnull(jf);
  ck_assert_int_eq(ft_call(jf, 1, (const ft_array *const *)&x, 1, &want), FT_OK);

  worker w[3];
  pthread_t th[3];
  for (int i = 0; i < 3; i++) {
    w[i] = (worker){.fn = fn, .x = x->data, .want = want};
    ck_assert_int_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
  }
  for (int i = 0; i < 3; i++) {
    pthread_join(th[i], NULL);
    ck_assert_msg(w[i].bad == 0, "thread %d: %d calls differ from ft_call (%s)", i, w[i].bad, err());
  }
  ck_assert_str_eq(err(), "");
  release();
  worker again = {.fn = fn, .x = x->data, .want = want}; /* plans again after a release */
  work(&again);
  ck_assert_int_eq(again.bad, 0);
  release();
  /* not dlclose'd: unloading libfrankentrace_rt would unmap the globals
   * that hold its one-time state (the shared thread pool, once-made tables),
   * which LeakSanitizer would then report */
  (void)h;
  ft_array_free(x), ft_array_free(want);
  ft_fn_free(jf);
  ft_jaxpr_free(j);
}
END_TEST

static const char *SQ = "{ lambda ; a:f32[4]. let b:f32[4] = mul a a in (b,) }";

/* A descriptor of SQ planned with every step a fallback (no kernels needed). */
static void make_desc(ft_aot_desc *d, const char *text) {
  memset(d, 0, sizeof *d);
  d->jaxpr = text;
  d->jaxpr_len = strlen(text);
  d->magic = FT_AOT_MAGIC;
  d->abi = FT_AOT_ABI;
  d->flags = FT_AOT_INTERPRET_ALL;
  d->version = ft_version();
  ft_jaxpr *j = ft_aot_parse(C, SQ, strlen(SQ), 0, NULL, "test");
  ck_assert_ptr_nonnull(j);
  ft_plan_options po = {.no_compile = true};
  ft_program *p = ft_program_plan(C, j, &po);
  ck_assert_ptr_nonnull(p);
  ck_assert(ft_aot_plan_hash(p, d->plan_hash));
  ft_program_free(p);
  ft_jaxpr_free(j);
}

static void expect_fail(ft_aot_desc *d, int status, const char *needle) {
  float a[4] = {1, 2, 3, 4}, b[4] = {0};
  const void *in[1] = {a};
  void *out[1] = {b};
  for (int r = 0; r < 2; r++) { /* the same answer on every call */
    int rc = ft_aot_rt_call(d, in, out);
    ck_assert_int_eq(rc, status);
    ck_assert_msg(strstr(ft_aot_rt_error(d), needle), "message '%s' lacks '%s'", ft_aot_rt_error(d), needle);
  }
  ft_aot_rt_release(d);
}

START_TEST(descriptors) {
  ft_aot_desc d;
  make_desc(&d, SQ);
  float a[4] = {1.5f, -2, 3, 1e30f}, b[4] = {0};
  const void *in[1] = {a};
  void *out[1] = {b};
  ck_assert_int_eq(ft_aot_rt_call(&d, in, out), 0);
  for (int i = 0; i < 4; i++) ck_assert(memcmp(&b[i], &(float){a[i] * a[i]}, 4) == 0);
  ck_assert_str_eq(ft_aot_rt_error(&d), "");
  void *nul[1] = {NULL};
  ck_assert_int_eq(ft_aot_rt_call(&d, in, nul), FT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(ft_aot_rt_error(&d), "out[0] is NULL"));
  ck_assert_int_eq(ft_aot_rt_call(&d, NULL, out), FT_ERR_INVALID_ARG);
  ft_aot_rt_release(&d);

  make_desc(&d, SQ);
  d.plan_hash[3] ^= 1;
  expect_fail(&d, FT_ERR_UNSUPPORTED, "plan of the embedded jaxpr differs");
  make_desc(&d, SQ);
  d.n_kernels = 2;
  expect_fail(&d, FT_ERR_UNSUPPORTED, "with 2 kernels");
  make_desc(&d, SQ);
  d.abi = FT_AOT_ABI + 1;
  expect_fail(&d, FT_ERR_UNSUPPORTED, "AOT ABI");
  make_desc(&d, "{ lambda ; a:f32[4]. let b:f32[4] = frobnicate a in (b,) }");
  ck_assert_int_ne(ft_aot_rt_call(&d, in, out), 0);
  ck_assert_ptr_nonnull(strstr(ft_aot_rt_error(&d), "frobnicate"));
  ft_aot_rt_release(&d);
  ck_assert_int_eq(ft_aot_rt_call(NULL, in, out), FT_ERR_INVALID_ARG);
}
END_TEST

static Suite *suite(void) {
  (void)jt_read_all, (void)jt_same; /* jit_util.h helpers this file does not need */
  Suite *s = suite_create("aot_rt");
  TCase *t = tcase_create("aot_rt");
  tcase_add_checked_fixture(t, jt_setup, jt_teardown);
  tcase_set_timeout(t, 300);
  tcase_add_test(t, traced_constants_so);
  tcase_add_test(t, descriptors);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *r = srunner_create(suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
