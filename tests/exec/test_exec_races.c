/* tests/exec/test_exec_races.c: threads sharing one context (issue 18's
 * races, run under ThreadSanitizer by tools/run-tsan): concurrent failing
 * ft_calls write one context's error, concurrent logged calls append to one
 * ledger, two threads attach one ledger to two contexts. Each must keep its
 * result exact: whole messages, a clean ledger with every record, one
 * winner per attach. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ft.h"

enum { THREADS = 4, CALLS = 60 };

static const char *PROG = "{ lambda ; a:f32[64]. let b:f32[64] = mul a a in (b,) }";

typedef struct shared {
  ft_fn *fn;
  ft_ctx *ctx;
  ft_array *in;
  int id;
  int bad;        /* results that were wrong */
  int torn;       /* messages that were none of the expected ones */
} shared;

static ft_array *input(ft_ctx *ctx) {
  int64_t d[1] = {64};
  ft_array *x = ft_array_new(ctx, FT_F32, 1, d);
  ck_assert_ptr_nonnull(x);
  float *p = ft_array_data_mut(x);
  for (int i = 0; i < 64; i++) p[i] = (float)i * 0.5f;
  return x;
}

/* Succeeds and checks every output bit; fails with a thread-specific
 * output count and checks the message read back is one written whole. */
static void *caller(void *arg) {
  shared *s = arg;
  for (int i = 0; i < CALLS; i++) {
    ft_array *out[8] = {0};
    if (ft_call(s->fn, 1, (const ft_array *const *)&s->in, 1, out) != FT_OK) {
      s->bad++;
      continue;
    }
    const float *y = ft_array_data(out[0]);
    for (int k = 0; k < 64; k++)
      if (y[k] != ((float)k * 0.5f) * ((float)k * 0.5f)) s->bad++;
    ft_array_free(out[0]);
    int want = 2 + s->id;
    if (ft_call(s->fn, 1, (const ft_array *const *)&s->in, want, out) != FT_ERR_INVALID_ARG) s->bad++;
    const char *m = ft_ctx_error(s->ctx);
    bool whole = false;
    for (int t = 0; t < THREADS; t++) {
      char e[96];
      snprintf(e, sizeof e, "call: the function has 1 outputs, got room for %d", 2 + t);
      whole |= !strcmp(m, e);
    }
    if (!whole) s->torn++;
  }
  return NULL;
}

static void run_callers(ft_ctx *ctx, ft_fn *fn, ft_array *in) {
  pthread_t th[THREADS];
  shared s[THREADS];
  for (int t = 0; t < THREADS; t++) {
    s[t] = (shared){.fn = fn, .ctx = ctx, .in = in, .id = t};
    ck_assert_int_eq(pthread_create(&th[t], NULL, caller, &s[t]), 0);
  }
  for (int t = 0; t < THREADS; t++) {
    pthread_join(th[t], NULL);
    ck_assert_int_eq(s[t].bad, 0);
    ck_assert_int_eq(s[t].torn, 0);
  }
}

START_TEST(concurrent_failing_calls_share_an_error) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_jaxpr *j = ft_parse(ctx, PROG, strlen(PROG), "races");
  ck_assert_ptr_nonnull(j);
  ft_fn *fn = ft_jit(ctx, j, NULL);
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(ctx));
  ft_array *in = input(ctx);
  run_callers(ctx, fn, in);
  ck_assert_int_eq(ft_ctx_status(ctx), FT_ERR_INVALID_ARG);
  ft_array_free(in);
  ft_fn_free(fn);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
}
END_TEST

static char *tmpdir(void) {
  const char *base = getenv("TMPDIR");
  char *d = malloc(256);
  snprintf(d, 256, "%s/ft_races_XXXXXX", base && *base ? base : "/tmp");
  ck_assert_ptr_nonnull(mkdtemp(d));
  return d;
}

static void rmrf(const char *d) {
  char cmd[320];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
  ck_assert_int_eq(system(cmd), 0);
}

/* Every logged call of every thread becomes one record of one chain. */
START_TEST(concurrent_logged_calls_append_whole_records) {
  char *dir = tmpdir();
  char path[300];
  snprintf(path, sizeof path, "%s/l", dir);
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger_options o = {.size = sizeof(ft_ledger_options), .fsync = FT_LEDGER_FSYNC_NEVER, .calls = FT_LEDGER_CALLS_HASHES};
  ft_ledger *lg = ft_ledger_open(ctx, path, &o);
  ck_assert_msg(lg != NULL, "%s", ft_ctx_error(ctx));
  ck_assert_int_eq(ft_ctx_attach_ledger(ctx, lg), FT_OK);
  ft_jaxpr *j = ft_parse(ctx, PROG, strlen(PROG), "races");
  ck_assert_ptr_nonnull(j);
  ft_fn *fn = ft_jit(ctx, j, NULL);
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(ctx));
  ft_array *in = input(ctx);
  int64_t before = ft_ledger_num_records(lg);
  run_callers(ctx, fn, in);
  ck_assert_int_eq(ft_ledger_num_records(lg), before + THREADS * CALLS);
  ck_assert_int_eq(ft_ledger_close(lg), FT_OK);
  ft_ledger_report r;
  ck_assert_int_eq(ft_ledger_verify(ctx, path, &r), FT_OK);
  ck_assert_int_eq(r.health, FT_LEDGER_CLEAN);
  ck_assert_int_eq(r.records, before + THREADS * CALLS);
  ft_ledger_report_free(&r);
  ft_array_free(in);
  ft_fn_free(fn);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
  rmrf(dir);
  free(dir);
}
END_TEST

typedef struct attacher {
  ft_ctx *ctx;
  ft_ledger *lg;
  pthread_barrier_t *go;
  ft_status st;
} attacher;

static void *attach_one(void *arg) {
  attacher *a = arg;
  pthread_barrier_wait(a->go);
  a->st = ft_ctx_attach_ledger(a->ctx, a->lg);
  return NULL;
}

/* Two contexts race to attach one ledger: exactly one wins each round. */
START_TEST(attach_race_has_one_winner) {
  char *dir = tmpdir();
  char path[300];
  snprintf(path, sizeof path, "%s/l", dir);
  ft_ctx *c[2] = {ft_ctx_new(NULL), ft_ctx_new(NULL)};
  ft_ledger_options o = {.size = sizeof(ft_ledger_options), .fsync = FT_LEDGER_FSYNC_NEVER};
  ft_ledger *lg = ft_ledger_open(c[0], path, &o);
  ck_assert_ptr_nonnull(lg);
  pthread_barrier_t go;
  for (int round = 0; round < 100; round++) {
    ck_assert_int_eq(pthread_barrier_init(&go, NULL, 2), 0);
    attacher a[2] = {{c[0], lg, &go, -1}, {c[1], lg, &go, -1}};
    pthread_t th[2];
    for (int t = 0; t < 2; t++) ck_assert_int_eq(pthread_create(&th[t], NULL, attach_one, &a[t]), 0);
    for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
    pthread_barrier_destroy(&go);
    int won = (a[0].st == FT_OK) + (a[1].st == FT_OK);
    ck_assert_int_eq(won, 1);
    int loser = a[0].st == FT_OK;
    ck_assert_int_eq(a[loser].st, FT_ERR_INVALID_ARG);
    char want[400];
    snprintf(want, sizeof want, "ledger %s: already attached to another context", path);
    ck_assert_str_eq(ft_ctx_error(c[loser]), want);
    ck_assert_int_eq(ft_ctx_attach_ledger(c[!loser], NULL), FT_OK);
  }
  ck_assert_int_eq(ft_ledger_close(lg), FT_OK);
  ft_ctx_free(c[0]);
  ft_ctx_free(c[1]);
  rmrf(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("exec_races");
  TCase *tc = tcase_create("races");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, concurrent_failing_calls_share_an_error);
  tcase_add_test(tc, concurrent_logged_calls_append_whole_records);
  tcase_add_test(tc, attach_race_has_one_winner);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
