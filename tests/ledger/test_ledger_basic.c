/* tests/ledger/test_ledger_basic.c: opening, appending, the record format
 * (canonical JSON, sums, the chain), call logging levels, options, locking. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lt.h"

/* The log's lines, parsed (asserting each is a valid record). */
static json_t *log_records(const char *dir) {
  char *p = ft_lio_path("%s/log.jsonl", dir);
  uint8_t *d;
  size_t n;
  ck_assert_int_eq(ft_lio_read_file(p, &d, &n), 0);
  free(p);
  json_t *arr = json_array();
  size_t at = 0;
  while (at < n) {
    uint8_t *nl = memchr(d + at, '\n', n - at);
    ck_assert_ptr_nonnull(nl);
    json_t *rec;
    const char *why = ft_ledger_check_line((char *)d + at, (size_t)(nl - d) - at, &rec);
    ck_assert_msg(why == NULL, "line at %zu: %s", at, why);
    json_array_append_new(arr, rec);
    at = (size_t)(nl - d) + 1;
  }
  free(d);
  return arr;
}

START_TEST(test_no_ledger_is_free) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  ck_assert(!ft_ledger_active(ctx));
  ck_assert_int_eq(lt_append(ctx, 0), FT_OK);
  ck_assert_int_eq(ft_ledger_record(NULL, NULL), FT_OK);
  ck_assert_int_eq(ft_ledger_call_level(ctx), FT_LEDGER_CALLS_NONE);
  ft_ctx_free(ctx);
}
END_TEST

START_TEST(test_append_reopen_chain) {
  char *dir = lt_tmpdir();
  lt_make(dir, 5, 0, 0, 0);
  ck_assert_int_eq(lt_health(dir), FT_LEDGER_CLEAN);
  /* Reopen: seq continues and the chain links across the sessions. */
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger *lg = lt_open(ctx, dir, 4, 1, 32); /* geometry of an existing ledger is kept */
  ck_assert_int_eq(ft_ledger_num_records(lg), 5);
  ck_assert_int_eq(lt_append(ctx, 5), FT_OK);
  ck_assert_int_eq(ft_ledger_num_records(lg), 6);
  ck_assert_int_eq(ft_ledger_close(lg), FT_OK);
  ck_assert_ptr_null(ctx->ledger); /* close detaches */
  ft_ctx_free(ctx);
  json_t *recs = log_records(dir);
  ck_assert_int_eq(json_array_size(recs), 6);
  const char *prev = "00000000000000000000000000000000";
  for (size_t i = 0; i < 6; i++) {
    json_t *r = json_array_get(recs, i);
    ck_assert_int_eq(json_integer_value(json_object_get(r, "seq")), (json_int_t)i + 1);
    ck_assert_str_eq(json_string_value(json_object_get(r, "prev")), prev);
    ck_assert_str_eq(json_string_value(json_object_get(r, "kind")), "transform");
    ck_assert_str_eq(json_string_value(json_object_get(r, "op")), "upper");
    ck_assert_str_eq(json_string_value(json_object_get(r, "mode")), "strict");
    ck_assert_str_eq(json_string_value(json_object_get(r, "version")), ft_version());
    ck_assert_int_eq(json_integer_value(json_object_get(r, "time_ns")), 1000 + (json_int_t)i);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "params"), "i")),
                     (json_int_t)i);
    json_t *in = json_array_get(json_object_get(r, "inputs"), 0);
    char hex[33];
    ft_lhash_hex(lt_text((int)i), strlen(lt_text((int)i)), hex);
    ck_assert_str_eq(json_string_value(json_object_get(in, "hash")), hex);
    ck_assert(json_is_true(json_object_get(in, "stored")));
    ck_assert_str_eq(json_string_value(json_object_get(in, "name")), "jaxpr");
    json_t *f = json_array_get(json_object_get(r, "fired"), 1);
    ck_assert_str_eq(json_string_value(json_object_get(f, "rule")), "mul.transpose");
    ck_assert_str_eq(json_string_value(json_object_get(f, "proof")), "(mul a b) ~ x");
    prev = json_string_value(json_object_get(r, "sum"));
  }
  /* The stored input object reads back and is named by its hash. */
  void *d;
  size_t n;
  const char *h = json_string_value(
      json_object_get(json_array_get(json_object_get(json_array_get(recs, 2), "inputs"), 0), "hash"));
  ctx = ft_ctx_new(NULL);
  ck_assert_int_eq(ft_ledger_object_read(ctx, dir, h, &d, &n), FT_OK);
  ck_assert_uint_eq(n, strlen(lt_text(2)));
  ck_assert_mem_eq(d, lt_text(2), n);
  ft_free(d);
  ck_assert_int_eq(ft_ledger_object_read(ctx, dir, "0123", &d, &n), FT_ERR_INVALID_ARG);
  ft_ctx_free(ctx);
  json_decref(recs);
  ck_assert_int_eq(lt_health(dir), FT_LEDGER_CLEAN);
  lt_rmrf(dir);
}
END_TEST

START_TEST(test_canonical_record) {
  /* Same event, same bytes: keys sorted, no whitespace, sum over the rest. */
  json_t *rec = json_pack("{s:s, s:s, s:{s:i, s:[i]}, s:[], s:[], s:[], s:s, s:s}", "op", "grad",
                          "kind", "transform", "params", "z", 1, "a", 2, "inputs", "outputs",
                          "fired", "mode", "strict", "version", "0.2.0");
  char sum[33], want_sum[33];
  char *line = ft_ledger_seal(rec, 7, "00000000000000000000000000000000", sum);
  const char *body = "{\"fired\":[],\"inputs\":[],\"kind\":\"transform\",\"mode\":\"strict\","
                     "\"op\":\"grad\",\"outputs\":[],\"params\":{\"a\":[2],\"z\":1},"
                     "\"prev\":\"00000000000000000000000000000000\",\"seq\":7,"
                     "\"version\":\"0.2.0\"}";
  ft_lhash_hex(body, strlen(body), want_sum);
  ck_assert_str_eq(sum, want_sum);
  char *want = ft_lio_path("%.*s,\"sum\":\"%s\",\"version\":\"0.2.0\"}",
                           (int)(strstr(body, ",\"version\"") - body), body, want_sum);
  ck_assert_str_eq(line, want);
  free(want);
  free(line);
  json_decref(rec);
}
END_TEST

START_TEST(test_check_line_rejects) {
  json_t *rec = json_pack("{s:s, s:s, s:{}, s:[], s:[], s:[], s:s, s:s}", "op", "grad", "kind",
                          "transform", "params", "inputs", "outputs", "fired", "mode", "strict",
                          "version", "0.2.0");
  char sum[33];
  char *line = ft_ledger_seal(rec, 1, "00000000000000000000000000000000", sum);
  json_t *out;
  ck_assert_ptr_null(ft_ledger_check_line(line, strlen(line), &out));
  json_decref(out);
  /* Whitespace makes it non-canonical even though it parses. */
  char *spaced = ft_lio_path(" %s", line);
  ck_assert_str_eq(ft_ledger_check_line(spaced, strlen(spaced), &out), "not in canonical form");
  free(spaced);
  /* A changed value breaks the sum. */
  char *p = strstr(line, "grad");
  p[0] = 'G';
  ck_assert_str_eq(ft_ledger_check_line(line, strlen(line), &out), "checksum mismatch");
  ck_assert_str_eq(ft_ledger_check_line("{", 1, &out), "not JSON");
  ck_assert_str_eq(ft_ledger_check_line("[1]", 3, &out), "not an object");
  ck_assert_ptr_null(out);
  free(line);
  json_decref(rec);
}
END_TEST

static int count_objects(const char *dir) {
  lt_snap s;
  lt_snap_take(dir, &s);
  int n = 0;
  for (size_t i = 0; i < s.n; i++) n += !strncmp(s.files[i].path, "objects/", 8);
  lt_snap_free(&s);
  return n;
}

START_TEST(test_call_levels) {
  static const ft_ledger_calls levels[] = {FT_LEDGER_CALLS_NONE, FT_LEDGER_CALLS_HASHES,
                                           FT_LEDGER_CALLS_BYTES};
  static const int expect_records[] = {0, 1, 1}, expect_objects[] = {0, 0, 1};
  for (int l = 0; l < 3; l++) {
    char *dir = lt_tmpdir();
    ft_ctx *ctx = ft_ctx_new(NULL);
    ft_ledger_options o = {.size = sizeof(ft_ledger_options), .fsync = FT_LEDGER_FSYNC_NEVER, .calls = levels[l], .call_byte_cap = 8};
    ft_ledger *lg = ft_ledger_open(ctx, dir, &o);
    ck_assert_ptr_nonnull(lg);
    ft_ctx_attach_ledger(ctx, lg);
    ck_assert_int_eq(ft_ledger_call_level(ctx), levels[l]);
    ft_ledger_obj in[2] = {{"x", "12345678", 8, NULL}, {"y", "123456789", 9, NULL}};
    ft_ledger_obj out = {"z", "abc", 3, NULL};
    ft_ledger_event ev = {.kind = FT_LEDGER_CALL, .op = "interp", .inputs = in, .n_inputs = 2,
                          .outputs = &out, .n_outputs = 1};
    ck_assert_int_eq(ft_ledger_record(ctx, &ev), FT_OK);
    ck_assert_int_eq(ft_ledger_num_records(lg), expect_records[l]);
    ck_assert_int_eq(ft_ledger_close(lg), FT_OK);
    /* Bytes level stores x (8 bytes = cap) and z, not y (9 > cap). */
    ck_assert_int_eq(count_objects(dir), l == 2 ? 2 : expect_objects[l]);
    if (l) {
      json_t *recs = log_records(dir);
      json_t *ins = json_object_get(json_array_get(recs, 0), "inputs");
      ck_assert_int_eq(json_is_true(json_object_get(json_array_get(ins, 0), "stored")), l == 2);
      ck_assert(json_is_false(json_object_get(json_array_get(ins, 1), "stored")));
      ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(ins, 1), "size")), 9);
      json_decref(recs);
    }
    ck_assert_int_eq(lt_health(dir), FT_LEDGER_CLEAN);
    ft_ctx_free(ctx);
    lt_rmrf(dir);
  }
}
END_TEST

START_TEST(test_precomputed_hash_and_params_object) {
  char *dir = lt_tmpdir();
  ft_ctx *ctx = ft_ctx_new(&(ft_ctx_options){.size = sizeof(ft_ctx_options), .mode = FT_MODE_HARDENED});
  ft_ledger *lg = lt_open(ctx, dir, 0, 0, 0);
  uint8_t h[16];
  ft_lhash128("abc", 3, h);
  ft_ledger_obj in = {.name = "jaxpr", .hash = h, .len = 3};
  json_t *params = json_pack("{s:[i,i]}", "axes", 1, 0);
  ft_ledger_event ev = {.kind = FT_LEDGER_GUARD, .op = "nan", .params = params,
                        .inputs = &in, .n_inputs = 1, .fired_json = "{\"lanes\":3}"};
  ck_assert_int_eq(ft_ledger_record(ctx, &ev), FT_OK);
  json_decref(params);
  ck_assert_int_eq(ft_ledger_close(lg), FT_OK);
  json_t *recs = log_records(dir);
  json_t *r = json_array_get(recs, 0);
  char hex[33];
  ft_lhex(h, hex);
  ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(r, "inputs"), 0), "hash")), hex);
  ck_assert_str_eq(json_string_value(json_object_get(r, "mode")), "hardened");
  ck_assert_str_eq(json_string_value(json_object_get(r, "kind")), "guard");
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "fired"), "lanes")), 3);
  ck_assert_ptr_null(json_object_get(r, "time_ns"));
  json_decref(recs);
  ck_assert_int_eq(lt_health(dir), FT_LEDGER_CLEAN);
  ft_ctx_free(ctx);
  lt_rmrf(dir);
}
END_TEST

START_TEST(test_bad_events_leave_ledger_alone) {
  char *dir = lt_tmpdir();
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger *lg = lt_open(ctx, dir, 0, 0, 0);
  ck_assert_int_eq(lt_append(ctx, 0), FT_OK);
  ft_ledger_event ev = {.kind = FT_LEDGER_TRANSFORM, .op = "grad", .params_json = "[1,2]"};
  ck_assert_int_eq(ft_ledger_record(ctx, &ev), FT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(ctx), "not a JSON object"));
  ev.params_json = "{\"a\":";
  ck_assert_int_eq(ft_ledger_record(ctx, &ev), FT_ERR_INVALID_ARG);
  ev.params_json = NULL;
  ev.fired_json = "nope";
  ck_assert_int_eq(ft_ledger_record(ctx, &ev), FT_ERR_INVALID_ARG);
  ev.fired_json = NULL;
  ev.op = "";
  ck_assert_int_eq(ft_ledger_record(ctx, &ev), FT_ERR_INVALID_ARG);
  ev.op = "grad";
  ev.kind = FT_LEDGER_NUM_KINDS;
  ck_assert_int_eq(ft_ledger_record(ctx, &ev), FT_ERR_INVALID_ARG);
  ev.kind = FT_LEDGER_TRANSFORM;
  ck_assert_int_eq(ft_ledger_record(ctx, &ev), FT_OK); /* params NULL means {} */
  ck_assert_int_eq(ft_ledger_num_records(lg), 2);
  ck_assert_int_eq(ft_ledger_close(lg), FT_OK);
  ck_assert_int_eq(lt_health(dir), FT_LEDGER_CLEAN);
  ft_ctx_free(ctx);
  lt_rmrf(dir);
}
END_TEST

START_TEST(test_options_and_lock) {
  char *dir = lt_tmpdir();
  ft_ctx *ctx = ft_ctx_new(NULL);
  enum { S = sizeof(ft_ledger_options) };
  ft_ledger_options bad[] = {{.size = S, .parity_k = 65}, {.size = S, .parity_m = 17},
                             {.size = S, .block_size = 100}, {.size = S, .block_size = 8},
                             {.size = S, .fsync = (ft_ledger_fsync)7}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_ptr_null(ft_ledger_open(ctx, dir, &bad[i]));
    ck_assert_int_eq(ft_ctx_status(ctx), FT_ERR_INVALID_ARG);
  }
  ck_assert_ptr_null(ft_ledger_open(ctx, NULL, NULL));
  /* Default options (fsync every record) work; a second writer is refused. */
  ft_ledger *lg = ft_ledger_open(ctx, dir, NULL);
  ck_assert_ptr_nonnull(lg);
  ft_ctx_attach_ledger(ctx, lg);
  ck_assert_int_eq(lt_append(ctx, 0), FT_OK);
  ft_ctx *ctx2 = ft_ctx_new(NULL);
  ck_assert_ptr_null(ft_ledger_open(ctx2, dir, NULL));
  ck_assert_int_eq(ft_ctx_status(ctx2), FT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(ctx2), "in use"));
  ck_assert_int_eq(ft_ctx_attach_ledger(ctx2, lg), FT_ERR_INVALID_ARG);
  ft_ledger_report r;
  ck_assert_int_eq(ft_ledger_recover(ctx2, dir, &r), FT_ERR_IO); /* locked too */
  ck_assert_int_eq(ft_ledger_sync(lg), FT_OK);
  ck_assert_int_eq(ft_ledger_close(lg), FT_OK);
  ck_assert_int_eq(ft_ledger_recover(ctx2, dir, &r), FT_OK);
  ck_assert_int_eq(r.health, FT_LEDGER_CLEAN);
  ft_ledger_report_free(&r);
  ck_assert_int_eq(ft_ledger_verify(ctx2, "/nonexistent/ledger", &r), FT_ERR_IO);
  ft_ctx_free(ctx2);
  ft_ctx_free(ctx);
  lt_rmrf(dir);
}
END_TEST

START_TEST(test_torn_open_refused_unless_auto_recover) {
  char *dir = lt_tmpdir();
  lt_make(dir, 3, 0, 0, 0);
  char *p = ft_lio_path("%s/log.jsonl", dir);
  FILE *f = fopen(p, "ab");
  fputs("{\"fired\":[],\"inp", f); /* what a crash mid-append leaves */
  fclose(f);
  free(p);
  ck_assert_int_eq(lt_health(dir), FT_LEDGER_TORN);
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger_options o = {.size = sizeof(ft_ledger_options), .fsync = FT_LEDGER_FSYNC_NEVER};
  ck_assert_ptr_null(ft_ledger_open(ctx, dir, &o));
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(ctx), "recover"));
  o.auto_recover = true;
  ft_ledger *lg = ft_ledger_open(ctx, dir, &o);
  ck_assert_ptr_nonnull(lg);
  ck_assert_int_eq(ft_ledger_num_records(lg), 3);
  ft_ctx_attach_ledger(ctx, lg);
  ck_assert_int_eq(lt_append(ctx, 3), FT_OK);
  ft_ledger_close(lg);
  ck_assert_int_eq(lt_health(dir), FT_LEDGER_CLEAN);
  ft_ctx_free(ctx);
  lt_rmrf(dir);
}
END_TEST

START_TEST(test_interrupted_creation) {
  /* A kill between creating log.jsonl and writing parity: torn, not corrupt. */
  char *dir = lt_tmpdir();
  char *p = ft_lio_path("%s/log.jsonl", dir);
  FILE *f = fopen(p, "wb");
  fclose(f);
  free(p);
  ck_assert_int_eq(lt_health(dir), FT_LEDGER_TORN);
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger_report r;
  ck_assert_msg(ft_ledger_recover(ctx, dir, &r) == FT_OK, "%s", ft_ctx_error(ctx));
  ck_assert_int_eq(r.health, FT_LEDGER_CLEAN);
  ft_ledger_report_free(&r);
  ft_ctx_free(ctx);
  lt_make(dir, 2, 0, 0, 0);
  ck_assert_int_eq(lt_health(dir), FT_LEDGER_CLEAN);
  lt_rmrf(dir);
}
END_TEST

START_TEST(test_stripes_cross_records) {
  /* Tiny blocks: records span several stripes; parity follows the growth. */
  char *dir = lt_tmpdir();
  lt_make(dir, 40, 3, 2, 16);
  ck_assert_int_eq(lt_health(dir), FT_LEDGER_CLEAN);
  ft_ledger_report r;
  ft_ctx *ctx = ft_ctx_new(NULL);
  ck_assert_int_eq(ft_ledger_verify(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.records, 40);
  ck_assert_int_eq(r.first_bad_seq, 0);
  json_t *j = json_loads(r.json, 0, NULL);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "covered_bytes")),
                   json_integer_value(json_object_get(j, "log_bytes")));
  ck_assert_int_eq(json_integer_value(json_object_get(j, "objects")), 80);
  json_decref(j);
  ft_ledger_report_free(&r);
  ft_ctx_free(ctx);
  lt_rmrf(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("ledger_basic");
  LT_ADD(s, test_no_ledger_is_free);
  LT_ADD(s, test_append_reopen_chain);
  LT_ADD(s, test_canonical_record);
  LT_ADD(s, test_check_line_rejects);
  LT_ADD(s, test_call_levels);
  LT_ADD(s, test_precomputed_hash_and_params_object);
  LT_ADD(s, test_bad_events_leave_ledger_alone);
  LT_ADD(s, test_options_and_lock);
  LT_ADD(s, test_torn_open_refused_unless_auto_recover);
  LT_ADD(s, test_interrupted_creation);
  LT_ADD(s, test_stripes_cross_records);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
