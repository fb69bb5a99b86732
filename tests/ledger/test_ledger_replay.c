/* tests/ledger/test_ledger_replay.c: replay and reexec through registered
 * toy replayers (upper-casing a text object; summing bytes), naming the
 * record whose stored object was altered; diff; the JSON/HTML/DOT exports. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lt.h"

static int upper_calls;

/* The toy transform: the output is the input upper-cased. */
static ft_status upper(ft_ctx *ctx, void *user, const char *op, const char *params,
                       const ft_ledger_blob *in, int n_in, ft_ledger_buf *out, int n_out) {
  upper_calls++;
  ck_assert_ptr_eq(user, &upper_calls);
  ck_assert_str_eq(op, "upper");
  ck_assert_ptr_nonnull(strstr(params, "\"argnums\":[0]"));
  if (n_in != 1 || n_out != 1) return ft_set_error(ctx, FT_ERR_TYPE, "upper: 1 in, 1 out");
  char *o = malloc(in[0].len + 1);
  for (size_t i = 0; i < in[0].len; i++) o[i] = (char)toupper(((const unsigned char *)in[0].data)[i]);
  out[0].data = o;
  out[0].len = in[0].len;
  return FT_OK;
}

/* A broken variant: right except for the input of record 3 (i == 2). */
static ft_status upper_drifts(ft_ctx *ctx, void *user, const char *op, const char *params,
                              const ft_ledger_blob *in, int n_in, ft_ledger_buf *out, int n_out) {
  ft_status st = upper(ctx, &upper_calls, op, params, in, n_in, out, n_out);
  if (!st && strstr(params, "\"i\":2}")) ((char *)out[0].data)[0] ^= 1;
  return st;
}

static ft_status refuse(ft_ctx *ctx, void *user, const char *op, const char *params,
                        const ft_ledger_blob *in, int n_in, ft_ledger_buf *out, int n_out) {
  return ft_set_error(ctx, FT_ERR_UNSUPPORTED, "no rule for %s", op);
}

/* The toy executor: output 0 is the 8-byte sum of all input bytes. */
static ft_status sum_exec(ft_ctx *ctx, void *user, const char *op, const char *params,
                          const ft_ledger_blob *in, int n_in, ft_ledger_buf *out, int n_out) {
  uint64_t s = 0;
  for (int i = 0; i < n_in; i++)
    for (size_t j = 0; j < in[i].len; j++) s += ((const uint8_t *)in[i].data)[j];
  out[0].data = malloc(8);
  memcpy(out[0].data, &s, 8);
  out[0].len = 8;
  return FT_OK;
}

static void record_call(ft_ctx *ctx, const char *a, const char *b) {
  uint64_t s = 0;
  for (const char *p = a; *p; p++) s += (uint8_t)*p;
  for (const char *p = b; *p; p++) s += (uint8_t)*p;
  ft_ledger_obj in[2] = {{"x", a, strlen(a), NULL}, {"y", b, strlen(b), NULL}};
  ft_ledger_obj out = {"s", &s, 8, NULL};
  ft_ledger_event ev = {.kind = FT_LEDGER_CALL, .op = "sum", .inputs = in, .n_inputs = 2,
                        .outputs = &out, .n_outputs = 1};
  ck_assert_int_eq(ft_ledger_record(ctx, &ev), FT_OK);
}

/* seq 1 parse (no replayer), 2..6 upper (i = 0..4), 7 call, 8 guard. */
static char *make_mixed(ft_ledger_calls calls) {
  char *dir = lt_tmpdir();
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger_options o = {.size = sizeof(ft_ledger_options), .fsync = FT_LEDGER_FSYNC_NEVER, .calls = calls};
  ft_ledger *lg = ft_ledger_open(ctx, dir, &o);
  ck_assert_ptr_nonnull(lg);
  ft_ctx_attach_ledger(ctx, lg);
  const char *text = "{ lambda ; a:f32[]. let  in (a) }";
  ft_ledger_obj t = {"text", text, strlen(text), NULL};
  ft_ledger_event ev = {.kind = FT_LEDGER_PARSE, .op = "parse", .inputs = &t, .n_inputs = 1,
                        .outputs = &t, .n_outputs = 1};
  ck_assert_int_eq(ft_ledger_record(ctx, &ev), FT_OK);
  for (int i = 0; i < 5; i++) ck_assert_int_eq(lt_append(ctx, i), FT_OK);
  record_call(ctx, "abc", "defg");
  ft_ledger_event g = {.kind = FT_LEDGER_GUARD, .op = "nan"};
  ck_assert_int_eq(ft_ledger_record(ctx, &g), FT_OK);
  ck_assert_int_eq(ft_ledger_num_records(lg), calls == FT_LEDGER_CALLS_NONE ? 7 : 8);
  ck_assert_int_eq(ft_ledger_close(lg), FT_OK);
  ft_ctx_free(ctx);
  return dir;
}

static json_t *report_json(const ft_ledger_report *r) {
  json_t *j = json_loads(r->json, 0, NULL);
  ck_assert_ptr_nonnull(j);
  return j;
}

START_TEST(test_replay_with_registered_replayer) {
  char *dir = make_mixed(FT_LEDGER_CALLS_BYTES);
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger_report r;
  /* Nothing registered: every non-call record is "not replayable yet". */
  ck_assert_int_eq(ft_ledger_replay(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.checked, 0);
  ck_assert_int_eq(r.not_replayable, 6);
  ck_assert_int_eq(r.first_bad_seq, 0);
  ft_ledger_report_free(&r);
  ck_assert_int_eq(ft_ledger_register_replayer(FT_LEDGER_TRANSFORM, "upper", upper, &upper_calls),
                   FT_OK);
  upper_calls = 0;
  ck_assert_int_eq(ft_ledger_replay(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(upper_calls, 5);
  ck_assert_int_eq(r.records, 8);
  ck_assert_int_eq(r.checked, 5);
  ck_assert_int_eq(r.diverged, 0);
  ck_assert_int_eq(r.not_replayable, 1);
  ck_assert_int_eq(r.first_bad_seq, 0);
  json_t *j = report_json(&r);
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "not_replayable_by"),
                                                      "parse/parse")), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "not_applicable")), 2); /* call, guard */
  json_decref(j);
  ft_ledger_report_free(&r);
  /* A replayer that drifts on one record: replay names it. */
  ft_ledger_register_replayer(FT_LEDGER_TRANSFORM, "upper", upper_drifts, NULL);
  ck_assert_int_eq(ft_ledger_replay(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.diverged, 1);
  ck_assert_int_eq(r.first_bad_seq, 4);
  j = report_json(&r);
  const char *why = json_string_value(json_object_get(json_array_get(json_object_get(j, "divergences"), 0), "why"));
  ck_assert_ptr_nonnull(strstr(why, "output 0 jaxpr differs"));
  json_decref(j);
  ft_ledger_report_free(&r);
  /* A replayer that fails is a divergence carrying its message. A wildcard
   * registration applies where no exact op is registered. */
  ft_ledger_register_replayer(FT_LEDGER_TRANSFORM, "upper", NULL, NULL);
  ft_ledger_register_replayer(FT_LEDGER_TRANSFORM, NULL, refuse, NULL);
  ck_assert_int_eq(ft_ledger_replay(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.diverged, 5);
  ck_assert_int_eq(r.first_bad_seq, 2);
  ck_assert_ptr_nonnull(strstr(r.json, "replayer failed: no rule for upper"));
  ft_ledger_report_free(&r);
  ft_ledger_register_replayer(FT_LEDGER_TRANSFORM, "*", NULL, NULL);
  ft_ledger_register_replayer(FT_LEDGER_TRANSFORM, "upper", upper, &upper_calls);
  ck_assert_int_eq(ft_ledger_register_replayer(FT_LEDGER_NUM_KINDS, "x", upper, NULL),
                   FT_ERR_INVALID_ARG);
  ft_ctx_free(ctx);
  lt_rmrf(dir);
}
END_TEST

START_TEST(test_altered_object_names_its_record) {
  char *dir = make_mixed(FT_LEDGER_CALLS_BYTES);
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger_register_replayer(FT_LEDGER_TRANSFORM, "upper", upper, &upper_calls);
  /* Alter the stored input of seq 5 (lt_append i = 3): same length, one letter. */
  char hex[33];
  ft_lhash_hex(lt_text(3), strlen(lt_text(3)), hex);
  char *p = ft_ledger_object_path(dir, hex);
  FILE *f = fopen(p, "r+b");
  fseek(f, 2, SEEK_SET);
  fputc('X', f);
  fclose(f);
  free(p);
  ft_ledger_report r;
  ck_assert_int_eq(ft_ledger_replay(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.first_bad_seq, 5);
  ck_assert_int_eq(r.diverged, 1);
  ck_assert_int_eq(r.checked, 4);
  ck_assert_ptr_nonnull(strstr(r.json, "is damaged"));
  ft_ledger_report_free(&r);
  ck_assert_int_eq(ft_ledger_verify(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.health, FT_LEDGER_CORRUPT);
  ft_ledger_report_free(&r);
  /* Parity rebuilds it; replay passes again. */
  ck_assert_int_eq(ft_ledger_repair(ctx, dir, &r), FT_OK);
  ft_ledger_report_free(&r);
  ck_assert_int_eq(ft_ledger_replay(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.first_bad_seq, 0);
  ck_assert_int_eq(r.checked, 5);
  ft_ledger_report_free(&r);
  ft_ctx_free(ctx);
  lt_rmrf(dir);
}
END_TEST

START_TEST(test_reexec_calls) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger_report r;
  char *dir = make_mixed(FT_LEDGER_CALLS_BYTES);
  ck_assert_int_eq(ft_ledger_reexec(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.checked, 0);
  ck_assert_int_eq(r.not_replayable, 1);
  ft_ledger_report_free(&r);
  ft_ledger_register_replayer(FT_LEDGER_CALL, "sum", sum_exec, NULL);
  ck_assert_int_eq(ft_ledger_reexec(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.checked, 1);
  ck_assert_int_eq(r.diverged, 0);
  ck_assert_int_eq(r.not_replayable, 0);
  ft_ledger_report_free(&r);
  lt_rmrf(dir);
  /* At the hashes level the inputs are not stored: not re-executable. */
  dir = make_mixed(FT_LEDGER_CALLS_HASHES);
  ck_assert_int_eq(ft_ledger_reexec(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.checked, 0);
  ck_assert_int_eq(r.not_replayable, 1);
  ck_assert_ptr_nonnull(strstr(r.json, "(inputs not stored)"));
  ft_ledger_report_free(&r);
  lt_rmrf(dir);
  /* Without call logging there is no call record at all. */
  dir = make_mixed(FT_LEDGER_CALLS_NONE);
  ck_assert_int_eq(ft_ledger_reexec(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.records, 7);
  ck_assert_int_eq(r.checked + r.not_replayable, 0);
  ft_ledger_report_free(&r);
  lt_rmrf(dir);
  ft_ledger_register_replayer(FT_LEDGER_CALL, "sum", NULL, NULL);
  ft_ctx_free(ctx);
}
END_TEST

START_TEST(test_diff_first_divergence) {
  char *a = lt_tmpdir(), *b = lt_tmpdir(), *c = lt_tmpdir();
  lt_make(a, 6, 0, 0, 0);
  lt_make(b, 6, 0, 0, 0);
  lt_make(c, 4, 0, 0, 0);
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger_report r;
  ck_assert_int_eq(ft_ledger_diff(ctx, a, b, &r), FT_OK);
  ck_assert_int_eq(r.first_bad_seq, 0);
  ck_assert_ptr_nonnull(strstr(r.json, "\"same\":true"));
  ft_ledger_report_free(&r);
  /* A prefix: the divergence is the first record only one side has. */
  ck_assert_int_eq(ft_ledger_diff(ctx, a, c, &r), FT_OK);
  ck_assert_int_eq(r.first_bad_seq, 5);
  ck_assert_ptr_nonnull(strstr(r.json, "only in a"));
  ft_ledger_report_free(&r);
  /* c continues differently at seq 5: params differ there. */
  ft_ledger *lg = lt_open(ctx, c, 0, 0, 0);
  ck_assert_int_eq(lt_append(ctx, 4), FT_OK);
  ft_ledger_event ev = {.kind = FT_LEDGER_TRANSFORM, .op = "upper", .params_json = "{\"i\":99}"};
  ck_assert_int_eq(ft_ledger_record(ctx, &ev), FT_OK);
  ft_ledger_close(lg);
  ck_assert_int_eq(ft_ledger_diff(ctx, a, c, &r), FT_OK);
  ck_assert_int_eq(r.first_bad_seq, 6);
  json_t *j = report_json(&r);
  json_t *fields = json_object_get(j, "fields");
  ck_assert_int_eq(json_array_size(fields), 4); /* fired, inputs, outputs, params */
  ck_assert_str_eq(json_string_value(json_array_get(fields, 0)), "fired");
  ck_assert_str_eq(json_string_value(json_array_get(fields, 3)), "params");
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(json_object_get(j, "record_b"), "params"), "i")), 99);
  json_decref(j);
  ft_ledger_report_free(&r);
  ck_assert_int_eq(ft_ledger_diff(ctx, a, "/nonexistent", &r), FT_ERR_IO);
  ft_ctx_free(ctx);
  lt_rmrf(a);
  lt_rmrf(b);
  lt_rmrf(c);
}
END_TEST

START_TEST(test_exports) {
  char *dir = make_mixed(FT_LEDGER_CALLS_BYTES);
  ft_ctx *ctx = ft_ctx_new(NULL);
  char *html = ft_ledger_export(ctx, dir, FT_LEDGER_HTML);
  ck_assert_ptr_nonnull(html);
  ck_assert_ptr_nonnull(strstr(html, "<!DOCTYPE html>"));
  ck_assert_ptr_nonnull(strstr(html, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
  ck_assert_ptr_nonnull(strstr(html, "<section id=\"r8\">"));
  ck_assert_ptr_nonnull(strstr(html, "<td>mul.transpose</td><td>2</td>"));
  /* IR text is shown, escaped; nothing external is loaded. */
  ck_assert_ptr_nonnull(strstr(html, "{ LAMBDA ; A:F32[1]. LET B:F32[1] = SIN A IN (B) } # STEP 0"));
  ck_assert_ptr_null(strstr(html, "src=\"http"));
  ck_assert_ptr_null(strstr(html, "<script"));
  ft_free(html);
  char *dot = ft_ledger_export(ctx, dir, FT_LEDGER_DOT);
  ck_assert_ptr_nonnull(dot);
  ck_assert_ptr_nonnull(strstr(dot, "digraph ledger {"));
  ck_assert_ptr_nonnull(strstr(dot, "r1 -> r2 [style=dotted"));
  char hex[33], edge[80];
  ft_lhash_hex(lt_text(0), strlen(lt_text(0)), hex);
  snprintf(edge, sizeof edge, "h%s -> r2;", hex);
  ck_assert_ptr_nonnull(strstr(dot, edge));
  ft_free(dot);
  char *js = ft_ledger_export(ctx, dir, FT_LEDGER_JSON);
  json_t *arr = json_loads(js, 0, NULL);
  ck_assert_int_eq(json_array_size(arr), 8);
  ck_assert_str_eq(json_string_value(json_object_get(json_array_get(arr, 6), "kind")), "call");
  json_decref(arr);
  ft_free(js);
  ck_assert_ptr_null(ft_ledger_export(ctx, "/nonexistent", FT_LEDGER_DOT));
  ck_assert_int_eq(ft_ctx_status(ctx), FT_ERR_IO);
  ft_ctx_free(ctx);
  lt_rmrf(dir);
}
END_TEST

int main(void) {
  ft_ledger_fault_nosync(true); /* durability is not under test here; speed is */
  /* The toy "parse" record below is not real jaxpr text: take the library's
   * parse replayer out, so it counts as "not replayable yet" (the real
   * replayers are tested by test_ledger_pipeline). */
  ft_ledger_register_replayer(FT_LEDGER_PARSE, "parse", NULL, NULL);
  Suite *s = suite_create("ledger_replay");
  LT_ADD(s, test_replay_with_registered_replayer);
  LT_ADD(s, test_altered_object_names_its_record);
  LT_ADD(s, test_reexec_calls);
  LT_ADD(s, test_diff_first_divergence);
  LT_ADD(s, test_exports);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
