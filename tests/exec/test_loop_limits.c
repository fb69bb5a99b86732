/* tests/exec/test_loop_limits.c: programs that (practically) never finish
 * are bounded (issue 18): a while_loop counting to 2^31 - 1 and a scan of
 * length 10^12 stop at ft_loop_limits' iteration or time limit with
 * FT_ERR_LIMIT, and ft_fn_cancel / ft_ctx_cancel from another thread stop
 * them with FT_ERR_CANCELLED, in the interpreter and in compiled code alike.
 * The limit is exact: a loop of n iterations passes at n and fails at n-1. */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ft.h"

/* Counts c from a up to b; returns c. */
static const char *COUNT =
    "{ lambda ; a:i32[] b:i32[]. let\n"
    "    c:i32[] _:i32[] = while[\n"
    "      body_jaxpr={ lambda ; d:i32[] e:i32[]. let f:i32[] = add d 1:i32[] in (f, e) }\n"
    "      body_nconsts=0\n"
    "      cond_jaxpr={ lambda ; g:i32[] h:i32[]. let i:bool[] = lt g h in (i,) }\n"
    "      cond_nconsts=0\n"
    "    ] a b\n"
    "  in (c,) }";

static const char *LONG_SCAN =
    "{ lambda ; a:i32[]. let\n"
    "    b:i32[] = scan[\n"
    "      jaxpr={ lambda ; c:i32[]. let d:i32[] = add c 1:i32[] in (d,) }\n"
    "      length=1000000000000\n"
    "      num_carry=1\n"
    "      num_consts=0\n"
    "      reverse=False\n"
    "      unroll=1\n"
    "    ] a\n"
    "  in (b,) }";

static ft_array *i32(ft_ctx *ctx, int32_t v) {
  ft_array *a = ft_array_new(ctx, FT_I32, 0, NULL);
  ck_assert_ptr_nonnull(a);
  *(int32_t *)ft_array_data_mut(a) = v;
  return a;
}

/* One program run either way: interpreted (fn NULL) or compiled. */
typedef struct runner {
  ft_ctx *ctx;
  ft_jaxpr *j;
  ft_fn *fn;
} runner;

static runner make(const char *text, bool jit) {
  runner r = {.ctx = ft_ctx_new(NULL)};
  r.j = ft_parse(r.ctx, text, strlen(text), "loop");
  ck_assert_msg(r.j != NULL, "%s", ft_ctx_error(r.ctx));
  if (jit) {
    r.fn = ft_jit(r.ctx, r.j, NULL);
    ck_assert_msg(r.fn != NULL, "%s", ft_ctx_error(r.ctx));
  }
  return r;
}

static void done(runner *r) {
  ft_fn_free(r->fn);
  ft_jaxpr_free(r->j);
  ft_ctx_free(r->ctx);
}

/* Runs with inputs a (and b when n_in is 2); *res gets the output. */
static ft_status run(runner *r, int n_in, int32_t a, int32_t b, int32_t *res) {
  ft_array *in[2] = {i32(r->ctx, a), i32(r->ctx, b)}, *out[1] = {NULL};
  ft_status st = r->fn ? ft_call(r->fn, n_in, (const ft_array *const *)in, 1, out) : ft_eval(r->ctx, r->j, n_in, (const ft_array *const *)in, 1, out);
  if (st == FT_OK) *res = *(const int32_t *)ft_array_data(out[0]);
  ft_array_free(out[0]);
  ft_array_free(in[0]);
  ft_array_free(in[1]);
  return st;
}

/* The message without the engine's prefix, which is checked exactly: the
 * interpreter names the equation, the executor the control step's task. */
static const char *core(const runner *r, const char *prim) {
  const char *m = ft_ctx_error(r->ctx);
  char pre[160];
  if (r->fn)
    snprintf(pre, sizeof pre, "executor: task 'control %s#0' (#0, wave 0) failed: jit: %s step: ",
             prim, prim);
  else snprintf(pre, sizeof pre, "eval: equation 0 (%s): ", prim);
  ck_assert_msg(!strncmp(m, pre, strlen(pre)), "%s", m);
  return m + strlen(pre);
}

static void iteration_limit(bool jit) {
  runner r = make(COUNT, jit);
  int32_t res = -1;
  ft_loop_limits l = {.size = sizeof(ft_loop_limits), .max_iterations = 10};
  ft_ctx_set_loop_limits(r.ctx, &l);
  ck_assert_int_eq(run(&r, 2, 0, 10, &res), FT_OK); /* exactly 10 iterations */
  ck_assert_int_eq(res, 10);
  l.max_iterations = 9;
  ft_ctx_set_loop_limits(r.ctx, &l);
  ck_assert_int_eq(run(&r, 2, 0, 10, &res), FT_ERR_LIMIT);
  ck_assert_str_eq(core(&r, "while"), "while: stopped at the loop limit of 9 iterations");
  l.max_iterations = 100000;
  ft_ctx_set_loop_limits(r.ctx, &l);
  ck_assert_int_eq(run(&r, 2, 0, INT32_MAX, &res), FT_ERR_LIMIT);
  ck_assert_str_eq(core(&r, "while"), "while: stopped at the loop limit of 100000 iterations");
  ft_ctx_set_loop_limits(r.ctx, NULL); /* no limit again */
  ck_assert_int_eq(run(&r, 2, 5, 50000, &res), FT_OK);
  ck_assert_int_eq(res, 50000);
  done(&r);
  runner s = make(LONG_SCAN, jit);
  l.max_iterations = 5000;
  ft_ctx_set_loop_limits(s.ctx, &l);
  ck_assert_int_eq(run(&s, 1, 0, 0, &res), FT_ERR_LIMIT);
  ck_assert_str_eq(core(&s, "scan"), "scan: stopped at the loop limit of 5000 iterations");
  done(&s);
}

START_TEST(iteration_limit_interp) { iteration_limit(false); }
END_TEST
START_TEST(iteration_limit_jit) { iteration_limit(true); }
END_TEST

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void time_limit(bool jit) {
  runner s = make(LONG_SCAN, jit);
  ft_loop_limits l = {.size = sizeof(ft_loop_limits), .max_seconds = 0.2};
  ft_ctx_set_loop_limits(s.ctx, &l);
  int32_t res;
  double t0 = now();
  ck_assert_int_eq(run(&s, 1, 0, 0, &res), FT_ERR_LIMIT);
  double t = now() - t0;
  ck_assert_msg(t >= 0.2 && t < 20, "stopped after %g s", t);
  const char *m = core(&s, "scan");
  const char *want = "scan: stopped at the loop time limit of 0.2 s (after ";
  ck_assert_msg(!strncmp(m, want, strlen(want)), "%s", m);
  long long n = atoll(m + strlen(want));
  ck_assert_int_gt(n, 64);
  done(&s);
}

START_TEST(time_limit_interp) { time_limit(false); }
END_TEST
START_TEST(time_limit_jit) { time_limit(true); }
END_TEST

typedef struct job {
  runner *r;
  ft_status st;
} job;

static void *run_long(void *arg) {
  job *jb = arg;
  int32_t res;
  jb->st = run(jb->r, 2, 0, INT32_MAX, &res);
  return NULL;
}

/* A call running on another thread stops at the cancel; later calls too,
 * until the flag is cleared. */
static void cancel(bool jit) {
  runner r = make(COUNT, jit);
  job jb = {.r = &r, .st = -1};
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, run_long, &jb), 0);
  usleep(100 * 1000);
  if (jit) ft_fn_cancel(r.fn);
  else ft_ctx_cancel(r.ctx);
  pthread_join(th, NULL);
  ck_assert_int_eq(jb.st, FT_ERR_CANCELLED);
  const char *m = core(&r, "while");
  ck_assert_msg(!strncmp(m, "while: cancelled after ", 23), "%s", m);
  int32_t res = -1;
  ck_assert_int_eq(run(&r, 2, 0, 3, &res), FT_ERR_CANCELLED);
  ft_ctx_clear_cancel(r.ctx);
  ck_assert_int_eq(run(&r, 2, 0, 3, &res), FT_OK);
  ck_assert_int_eq(res, 3);
  done(&r);
}

START_TEST(cancel_interp) { cancel(false); }
END_TEST
START_TEST(cancel_jit) { cancel(true); }
END_TEST

int main(void) {
  Suite *s = suite_create("loop_limits");
  TCase *tc = tcase_create("limits");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, iteration_limit_interp);
  tcase_add_test(tc, iteration_limit_jit);
  tcase_add_test(tc, time_limit_interp);
  tcase_add_test(tc, time_limit_jit);
  tcase_add_test(tc, cancel_interp);
  tcase_add_test(tc, cancel_jit);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
