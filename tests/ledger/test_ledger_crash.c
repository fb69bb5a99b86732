/* tests/ledger/test_ledger_crash.c: crashes and failing disks. A child that
 * appends in a loop is killed with SIGKILL at random moments (100+ times):
 * verify must then say clean or torn (never corrupt) and recover must give a
 * clean ledger holding every record the child saw committed. Injected write
 * failures (ENOSPC, EIO) at every write of an append must give a status and
 * leave every earlier byte as it was. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lt.h"

/* The child's loop: appends until killed, reporting each committed seq. */
static _Noreturn void child(const char *dir, int fd, size_t chunk) {
  ft_ledger_fault_chunk(chunk);
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger_options o = {.size = sizeof(ft_ledger_options), .fsync = FT_LEDGER_FSYNC_NEVER, .parity_k = 8, .parity_m = 2,
                         .block_size = 64};
  ft_ledger *lg = ft_ledger_open(ctx, dir, &o);
  if (!lg) _exit(3);
  ft_ctx_attach_ledger(ctx, lg);
  for (int64_t i = ft_ledger_num_records(lg);; i++) {
    char text[64];
    snprintf(text, sizeof text, "record %lld", (long long)i);
    uint8_t h[16];
    ft_lhash128(text, strlen(text), h);
    /* Mostly hash-only references; every 8th record stores its object. */
    ft_ledger_obj in = {.name = "x", .data = i % 8 ? NULL : text, .len = strlen(text), .hash = h};
    char params[64];
    snprintf(params, sizeof params, "{\"i\":%lld}", (long long)i);
    ft_ledger_event ev = {.kind = FT_LEDGER_OPTIMIZE, .op = "saturate", .params_json = params,
                          .inputs = &in, .n_inputs = 1};
    if (ft_ledger_record(ctx, &ev)) _exit(2);
    int64_t seq = i + 1;
    if (write(fd, &seq, sizeof seq) != sizeof seq) _exit(4);
  }
}

START_TEST(test_kill9_at_random_points) {
  char *dir = NULL;
  unsigned seed = 2024;
  int torn = 0, clean = 0;
  int64_t have = 0;
  ft_ctx *ctx = ft_ctx_new(NULL);
  for (int trial = 0; trial < 120; trial++) {
    if (trial % 20 == 0) {
      have = 0;
      lt_rmrf(dir);
      dir = lt_tmpdir(); /* the first child of each series creates the ledger */
    }
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
      close(p[0]);
      child(dir, p[1], trial % 2 ? 7 : 0); /* odd trials tear writes into 7-byte pieces */
    }
    close(p[1]);
    usleep((useconds_t)(rand_r(&seed) % 6000));
    kill(pid, SIGKILL);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status), "trial %d: child exited with %d", trial,
                  WEXITSTATUS(status));
    int64_t acked = have, v; /* records known committed: earlier ones, then the acks */
    while (read(p[0], &v, sizeof v) == sizeof v) acked = v;
    close(p[0]);
    ft_ledger_report r;
    char *log = ft_lio_path("%s/log.jsonl", dir);
    bool born = access(log, F_OK) == 0;
    free(log);
    if (!born) {
      /* Killed before the log existed: nothing can have been committed. */
      ck_assert_int_eq(acked, 0);
      ck_assert_int_eq(ft_ledger_verify(ctx, dir, &r), FT_ERR_IO);
      clean++;
      continue;
    }
    ck_assert_int_eq(ft_ledger_verify(ctx, dir, &r), FT_OK);
    ck_assert_msg(r.health != FT_LEDGER_CORRUPT, "trial %d: %s", trial, r.json);
    torn += r.health == FT_LEDGER_TORN;
    if (getenv("LT_DEBUG")) fprintf(stderr, "trial %d acked %lld health %d\n", trial, (long long)acked, r.health);
    clean += r.health == FT_LEDGER_CLEAN;
    ft_ledger_report_free(&r);
    ck_assert_msg(ft_ledger_recover(ctx, dir, &r) == FT_OK, "trial %d: %s", trial,
                  ft_ctx_error(ctx));
    ck_assert_int_eq(r.health, FT_LEDGER_CLEAN);
    /* Every committed record survives; at most the one being acked more. */
    ck_assert_int_ge(r.records, acked);
    ck_assert_int_le(r.records, acked + 1);
    have = r.records;
    ft_ledger_report_free(&r);
    ck_assert_int_eq(lt_health(dir), FT_LEDGER_CLEAN);
  }
  /* The last record of the recovered ledger is exactly the one written. */
  json_t *recs;
  ck_assert_int_eq(ft_ledger_load_records(ctx, dir, &recs, NULL), FT_OK);
  size_t n = json_array_size(recs);
  for (size_t i = 0; i < n; i++)
    ck_assert_int_eq(json_integer_value(json_object_get(
                         json_object_get(json_array_get(recs, i), "params"), "i")),
                     (json_int_t)i);
  json_decref(recs);
  ck_assert_int_eq(torn + clean, 120);
  fprintf(stderr, "kill -9: %d torn, %d clean of 120 trials\n", torn, clean);
  ft_ctx_free(ctx);
  lt_rmrf(dir);
}
END_TEST

/* A re-creation of an empty ledger killed between its two writes: a
 * recovery (of a ledger killed before log.par existed) finished the
 * creation with the default geometry (block 4096), then a writer asking
 * for block 64 rewrote log.par and died before log.tail. The log is empty,
 * so nothing is lost: verify must say torn (creation interrupted), not
 * corrupt, and recover must make it clean in the geometry of log.par. */
START_TEST(test_recreation_interrupted_between_files) {
  char *dir = lt_tmpdir(), *other = lt_tmpdir();
  ft_ctx *ctx = ft_ctx_new(NULL);
  lt_make(dir, 0, 8, 2, 4096);
  lt_make(other, 0, 8, 2, 64);
  char *from = ft_lio_path("%s/parity/log.par", other), *to = ft_lio_path("%s/parity/log.par", dir);
  uint8_t *par;
  size_t len;
  ck_assert_int_eq(ft_lio_read_file(from, &par, &len), 0);
  ck_assert_int_eq(ft_lio_write_atomic(to, par, len, false), 0);
  free(par);
  free(from);
  free(to);
  ft_ledger_report r;
  ck_assert_int_eq(ft_ledger_verify(ctx, dir, &r), FT_OK);
  ck_assert_msg(r.health == FT_LEDGER_TORN, "%s", r.json);
  ck_assert_ptr_nonnull(strstr(r.json, "ledger creation was interrupted"));
  ft_ledger_report_free(&r);
  ck_assert_int_eq(ft_ledger_recover(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.health, FT_LEDGER_CLEAN);
  ft_ledger_report_free(&r);
  ck_assert_int_eq(lt_health(dir), FT_LEDGER_CLEAN);
  /* the block-64 writer now opens it and appends */
  ft_ledger *lg = lt_open(ctx, dir, 8, 2, 64);
  ft_ctx_attach_ledger(ctx, lg);
  for (int i = 0; i < 5; i++) ck_assert_int_eq(lt_append(ctx, i), FT_OK);
  ck_assert_int_eq(ft_ledger_close(lg), FT_OK);
  ck_assert_int_eq(lt_health(dir), FT_LEDGER_CLEAN);
  ft_ctx_free(ctx);
  lt_rmrf(dir);
  lt_rmrf(other);
}
END_TEST

/* Bytes of one ledger file, for before/after comparisons. */
static uint8_t *slurp(const char *dir, const char *name, size_t *len) {
  char *p = ft_lio_path("%s/%s", dir, name);
  uint8_t *d;
  ck_assert_int_eq(ft_lio_read_file(p, &d, len), 0);
  free(p);
  return d;
}

START_TEST(test_injected_write_failures) {
  static const int errs[] = {ENOSPC, EIO};
  static const char *const files[] = {"log.jsonl", "parity/log.par", "parity/log.tail"};
  char *dir = lt_tmpdir();
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger *lg = lt_open(ctx, dir, 8, 2, 64);
  int next = 0;
  for (; next < 5; next++) ck_assert_int_eq(lt_append(ctx, next), FT_OK);
  long w0 = ft_ledger_write_count();
  ck_assert_int_eq(lt_append(ctx, next++), FT_OK);
  long per = ft_ledger_write_count() - w0; /* 2 objects x (parity, bytes), line, tail, ... */
  ck_assert_int_ge(per, 6);
  int failures = 0;
  for (int e = 0; e < 2; e++) {
    for (long nth = 1; nth <= per + 1; nth++) {
      uint8_t *before[3];
      size_t blen[3];
      for (int f = 0; f < 3; f++) before[f] = slurp(dir, files[f], &blen[f]);
      int64_t n0 = ft_ledger_num_records(lg);
      ft_ledger_fault_inject(nth, errs[e]);
      ft_status st = lt_append(ctx, next);
      ft_ledger_fault_inject(0, 0);
      if (st == FT_OK) {
        ck_assert_int_eq(ft_ledger_num_records(lg), n0 + 1);
        next++;
      } else {
        failures++;
        ck_assert_int_eq(st, FT_ERR_IO);
        ck_assert_msg(strstr(ft_ctx_error(ctx), strerror(errs[e])) != NULL, "%s",
                      ft_ctx_error(ctx));
        ck_assert_int_eq(ft_ledger_num_records(lg), n0);
        /* Rolled back: the log and its parity are byte for byte as before. */
        for (int f = 0; f < 3; f++) {
          size_t alen;
          uint8_t *after = slurp(dir, files[f], &alen);
          ck_assert_msg(alen == blen[f] && !memcmp(after, before[f], alen),
                        "nth %ld: %s changed", nth, files[f]);
          free(after);
        }
        ck_assert_int_eq(lt_health(dir), FT_LEDGER_CLEAN);
      }
      for (int f = 0; f < 3; f++) free(before[f]);
      /* The ledger keeps working after a failure. */
      ck_assert_int_eq(lt_append(ctx, next++), FT_OK);
    }
  }
  ck_assert_int_ge(failures, 2 * (int)per - 2);
  int64_t n = ft_ledger_num_records(lg);
  ck_assert_int_eq(ft_ledger_close(lg), FT_OK);
  ck_assert_int_eq(lt_health(dir), FT_LEDGER_CLEAN);
  lg = lt_open(ctx, dir, 8, 2, 64);
  ck_assert_int_eq(ft_ledger_num_records(lg), n);
  ft_ledger_close(lg);
  ft_ctx_free(ctx);
  lt_rmrf(dir);
}
END_TEST

START_TEST(test_failed_creation_reports_status) {
  /* Failing the very first writes (creating parity) must not crash or leave
   * a ledger that reads as damaged. */
  for (long nth = 1; nth <= 2; nth++) {
    char *dir = lt_tmpdir();
    ft_ctx *ctx = ft_ctx_new(NULL);
    ft_ledger_options o = {.size = sizeof(ft_ledger_options), .fsync = FT_LEDGER_FSYNC_NEVER};
    ft_ledger_fault_inject(nth, ENOSPC);
    ft_ledger *lg = ft_ledger_open(ctx, dir, &o);
    ft_ledger_fault_inject(0, 0);
    ck_assert_ptr_null(lg);
    ck_assert_int_eq(ft_ctx_status(ctx), FT_ERR_IO);
    ck_assert_int_ne(lt_health(dir), FT_LEDGER_CORRUPT);
    lg = ft_ledger_open(ctx, dir, &o); /* a retry succeeds */
    ck_assert_ptr_nonnull(lg);
    ft_ledger_close(lg);
    ck_assert_int_eq(lt_health(dir), FT_LEDGER_CLEAN);
    ft_ctx_free(ctx);
    lt_rmrf(dir);
  }
}
END_TEST

int main(void) {
  ft_ledger_fault_nosync(true); /* durability is not under test here; speed is */
  Suite *s = suite_create("ledger_crash");
  LT_ADD(s, test_kill9_at_random_points);
  LT_ADD(s, test_recreation_interrupted_between_files);
  LT_ADD(s, test_injected_write_failures);
  LT_ADD(s, test_failed_creation_reports_status);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
