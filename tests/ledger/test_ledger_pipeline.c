/* tests/ledger/test_ledger_pipeline.c: the ledger recording the real pipeline
 * (ft_trace, ft_parse, the transforms, ft_eval) through the library's own
 * replayers: an MLP training-step ledger verifies, replays and re-executes;
 * an altered stored IR object, a forged transform record and a forged call
 * record are each named by seq; a failed ledger write fails the call that
 * recorded; replaying records nothing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lt.h"

enum { BATCH = 8, IN = 4, HIDDEN = 16, CLASSES = 3 };

/* The MLP loss of ftc demo, with one traced constant (class weights), so
 * the constant's path through trace, transform and call records is covered. */
static int mlp_loss(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)max_out, (void)user;
  static const float cw[CLASSES] = {1.0f, 0.5f, 2.0f};
  const int64_t dc[1] = {CLASSES};
  ft_val *w1 = in[0], *b1 = in[1], *w2 = in[2], *b2 = in[3], *x = in[4], *y = in[5];
  ft_val *h = ft_tanh(ft_np_add(ft_matmul(x, w1), b1));
  ft_val *logits = ft_np_add(ft_matmul(h, w2), b2);
  int last = -1;
  ft_val *logp = ft_log_softmax(logits, last);
  ft_val *wy = ft_np_mul(y, ft_constant(t, FT_F32, 1, dc, cw));
  ft_val *nll = ft_neg(ft_sum(ft_np_mul(wy, logp), 1, &last, false));
  out[0] = ft_mean(nll, -1, NULL, false);
  return 1;
}

static const int64_t dims_of[6][2] = {{IN, HIDDEN}, {HIDDEN}, {HIDDEN, CLASSES}, {CLASSES},
                                      {BATCH, IN}, {BATCH, CLASSES}};
static const int rank_of[6] = {2, 1, 2, 1, 2, 2};

static ft_jaxpr *trace_loss(ft_ctx *ctx) {
  ft_aval av[6];
  memset(av, 0, sizeof av);
  for (int i = 0; i < 6; i++) {
    av[i].dtype = FT_F32;
    av[i].rank = rank_of[i];
    memcpy(av[i].dims, dims_of[i], sizeof(int64_t) * (size_t)rank_of[i]);
  }
  ft_jaxpr *j = ft_trace(ctx, mlp_loss, NULL, 6, av);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(ctx));
  return j;
}

static void make_inputs(ft_ctx *ctx, ft_array **in) {
  uint64_t s = 7;
  for (int i = 0; i < 6; i++) {
    in[i] = ft_array_new(ctx, FT_F32, rank_of[i], dims_of[i]);
    ck_assert_ptr_nonnull(in[i]);
    float *d = ft_array_data_mut(in[i]);
    ft_aval av = ft_array_aval(in[i]);
    for (int64_t k = 0; k < ft_aval_size(&av); k++) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      d[k] = i == 5 ? (float)(k % CLASSES == (k / CLASSES) % CLASSES)
                    : (float)((double)(s >> 40) / (double)(1ULL << 24) - 0.5);
    }
  }
}

/* The kind/op of every record, in order: "trace/trace parse/parse ...". */
static char *record_ops(const char *dir) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  char *text = ft_ledger_export(ctx, dir, FT_LEDGER_JSON);
  ck_assert_ptr_nonnull(text);
  json_t *recs = json_loads(text, 0, NULL);
  ck_assert_ptr_nonnull(recs);
  char *out = calloc(1, 4096);
  size_t i;
  json_t *r;
  json_array_foreach(recs, i, r) {
    size_t n = strlen(out);
    snprintf(out + n, 4096 - n, "%s%s/%s", i ? " " : "", json_string_value(json_object_get(r, "kind")),
             json_string_value(json_object_get(r, "op")));
  }
  json_decref(recs);
  free(text);
  ft_ctx_free(ctx);
  return out;
}

static const char *const EXPECTED_OPS =
    "trace/trace parse/parse transform/grad transform/value_and_grad transform/jvp "
    "transform/linearize transform/linearize transform/transpose transform/dce transform/vmap "
    "call/interp call/interp call/interp call/interp";
enum { N_RECORDS = 14, N_CALLS = 4, SEQ_GRAD = 3 };

/* Records the training step of the MLP in a new ledger at calls level `calls`:
 * trace, parse back, grad and friends, then loss, gradient, an SGD step, the
 * loss again and a vmapped loss. Returns the ledger directory. */
static char *record_mlp(ft_ledger_calls calls) {
  char *dir = lt_tmpdir();
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger_options o = {.size = sizeof(ft_ledger_options), .fsync = FT_LEDGER_FSYNC_NEVER, .calls = calls};
  ft_ledger *lg = ft_ledger_open(ctx, dir, &o);
  ck_assert_ptr_nonnull(lg);
  ck_assert_int_eq(ft_ctx_attach_ledger(ctx, lg), FT_OK);

  ft_jaxpr *j = trace_loss(ctx);
  char *text = ft_jaxpr_print(ctx, j);
  ft_jaxpr *back = ft_parse(ctx, text, strlen(text), "loss");
  ck_assert_ptr_nonnull(back);
  const int argnums[4] = {0, 1, 2, 3};
  ft_jaxpr *g = ft_grad(ctx, j, 4, argnums, false);
  ft_jaxpr *vg = ft_value_and_grad(ctx, j, 1, argnums, false);
  ft_jaxpr *jv = ft_jvp(ctx, j);
  ft_jaxpr *fwd = NULL, *bwd = NULL;
  ck_assert_int_eq(ft_vjp(ctx, j, &fwd, &bwd, NULL), FT_OK);
  ft_jaxpr *d = ft_dce(ctx, back);
  const int in_axes[6] = {FT_VMAP_NONE, FT_VMAP_NONE, FT_VMAP_NONE, FT_VMAP_NONE, 0, 0};
  ft_jaxpr *vm = ft_vmap(ctx, j, ft_jaxpr_num_inputs(j), in_axes, 0, NULL, 2);
  ck_assert_msg(g && vg && jv && d && vm, "%s", ft_ctx_error(ctx));

  ft_array *in[6], *loss0 = NULL, *loss1 = NULL, *grads[4] = {0}, *vin[6], *vloss = NULL;
  make_inputs(ctx, in);
  ck_assert_int_eq(ft_eval(ctx, j, 6, (const ft_array *const *)in, 1, &loss0), FT_OK);
  ck_assert_int_eq(ft_eval(ctx, g, 6, (const ft_array *const *)in, 4, grads), FT_OK);
  for (int p = 0; p < 4; p++) {
    float *w = ft_array_data_mut(in[p]);
    const float *dw = ft_array_data(grads[p]);
    ft_aval av = ft_array_aval(in[p]);
    for (int64_t k = 0; k < ft_aval_size(&av); k++) w[k] -= 0.5f * dw[k];
  }
  ck_assert_int_eq(ft_eval(ctx, j, 6, (const ft_array *const *)in, 1, &loss1), FT_OK);
  ck_assert(*(const float *)ft_array_data(loss1) < *(const float *)ft_array_data(loss0));
  /* The vmapped loss over two copies of the batch. */
  for (int i = 0; i < 6; i++) {
    ft_aval av = ft_array_aval(in[i]);
    if (i < 4) {
      vin[i] = in[i];
      continue;
    }
    int64_t vd[3] = {2, av.dims[0], av.dims[1]};
    vin[i] = ft_array_new(ctx, FT_F32, 3, vd);
    memcpy(ft_array_data_mut(vin[i]), ft_array_data_mut(in[i]), ft_array_nbytes(in[i]));
    memcpy((char *)ft_array_data_mut(vin[i]) + ft_array_nbytes(in[i]), ft_array_data_mut(in[i]),
           ft_array_nbytes(in[i]));
  }
  ck_assert_int_eq(ft_eval(ctx, vm, 6, (const ft_array *const *)vin, 1, &vloss), FT_OK);
  ck_assert_int_eq(ft_ledger_num_records(lg), calls == FT_LEDGER_CALLS_NONE ? N_RECORDS - N_CALLS
                                                                             : N_RECORDS);
  ck_assert_int_eq(ft_ledger_close(lg), FT_OK);

  for (int i = 0; i < 6; i++) ft_array_free(in[i]);
  ft_array_free(vin[4]), ft_array_free(vin[5]);
  for (int p = 0; p < 4; p++) ft_array_free(grads[p]);
  ft_array_free(loss0), ft_array_free(loss1), ft_array_free(vloss);
  ft_free(text);
  ft_jaxpr *all[] = {j, back, g, vg, jv, fwd, bwd, d, vm};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ft_jaxpr_free(all[i]);
  ft_ctx_free(ctx);
  return dir;
}

START_TEST(test_mlp_ledger_verifies_replays_reexecs) {
  char *dir = record_mlp(FT_LEDGER_CALLS_BYTES);
  char *ops = record_ops(dir);
  ck_assert_str_eq(ops, EXPECTED_OPS);
  free(ops);
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger_report r;
  ck_assert_int_eq(ft_ledger_verify(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.health, FT_LEDGER_CLEAN);
  ck_assert_int_eq(r.records, N_RECORDS);
  ft_ledger_report_free(&r);
  ck_assert_int_eq(ft_ledger_replay(ctx, dir, &r), FT_OK);
  ck_assert_msg(r.diverged == 0, "%s", r.json);
  ck_assert_int_eq(r.checked, N_RECORDS - N_CALLS);
  ck_assert_int_eq(r.not_replayable, 0);
  ck_assert_int_eq(r.first_bad_seq, 0);
  ft_ledger_report_free(&r);
  ck_assert_int_eq(ft_ledger_reexec(ctx, dir, &r), FT_OK);
  ck_assert_msg(r.diverged == 0, "%s", r.json);
  ck_assert_int_eq(r.checked, N_CALLS);
  ck_assert_int_eq(r.not_replayable, 0);
  ft_ledger_report_free(&r);
  ft_ctx_free(ctx);
  lt_rmrf(dir);
}
END_TEST

/* At the hashes level calls are recorded but their arrays are not kept:
 * reexec counts them as not replayable, and replay is unaffected. */
START_TEST(test_hash_level_calls_are_not_reexecutable) {
  char *dir = record_mlp(FT_LEDGER_CALLS_HASHES);
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger_report r;
  ck_assert_int_eq(ft_ledger_reexec(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.checked, 0);
  ck_assert_int_eq(r.not_replayable, N_CALLS);
  ck_assert_ptr_nonnull(strstr(r.json, "\"(inputs not stored)\":4"));
  ft_ledger_report_free(&r);
  ck_assert_int_eq(ft_ledger_replay(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.diverged, 0);
  ck_assert_int_eq(r.checked, N_RECORDS - N_CALLS);
  ft_ledger_report_free(&r);
  ft_ctx_free(ctx);
  lt_rmrf(dir);
  /* Without call logging there are no call records at all. */
  dir = record_mlp(FT_LEDGER_CALLS_NONE);
  char *ops = record_ops(dir);
  ck_assert_ptr_null(strstr(ops, "call/"));
  free(ops);
  lt_rmrf(dir);
}
END_TEST

/* The hash of output i of record seq (32 hex digits, static buffer). */
static const char *output_hash(const char *dir, int seq, int i) {
  static char hex[33];
  ft_ctx *ctx = ft_ctx_new(NULL);
  char *text = ft_ledger_export(ctx, dir, FT_LEDGER_JSON);
  json_t *recs = json_loads(text, 0, NULL);
  json_t *o = json_array_get(json_object_get(json_array_get(recs, (size_t)seq - 1), "outputs"), (size_t)i);
  ck_assert_ptr_nonnull(o);
  snprintf(hex, sizeof hex, "%s", json_string_value(json_object_get(o, "hash")));
  json_decref(recs);
  free(text);
  ft_ctx_free(ctx);
  return hex;
}

START_TEST(test_altered_ir_object_names_its_record) {
  char *dir = record_mlp(FT_LEDGER_CALLS_BYTES);
  /* The grad record's output jaxpr: flip one digit of a shape in it. */
  char *path = ft_ledger_object_path(dir, output_hash(dir, SEQ_GRAD, 0));
  uint8_t *data;
  size_t len;
  ck_assert_int_eq(ft_lio_read_file(path, &data, &len), 0);
  char *at = strstr((char *)data, "f32[4,16]");
  ck_assert_ptr_nonnull(at);
  at[4] = '5';
  FILE *f = fopen(path, "wb");
  ck_assert_uint_eq(fwrite(data, 1, len, f), len);
  fclose(f);
  free(data);
  free(path);
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger_report r;
  ck_assert_int_eq(ft_ledger_replay(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.first_bad_seq, SEQ_GRAD);
  ck_assert_int_eq(r.diverged, 1);
  ck_assert_ptr_nonnull(strstr(r.json, "is damaged"));
  ft_ledger_report_free(&r);
  /* The same object is the program of the gradient's call: reexec names it. */
  ck_assert_int_eq(ft_ledger_reexec(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.first_bad_seq, SEQ_GRAD + 9);
  ck_assert_int_eq(r.diverged, 1);
  ft_ledger_report_free(&r);
  /* Parity restores it, and then everything replays. */
  ck_assert_int_eq(ft_ledger_repair(ctx, dir, &r), FT_OK);
  ft_ledger_report_free(&r);
  ck_assert_int_eq(ft_ledger_replay(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.diverged, 0);
  ck_assert_int_eq(r.checked, N_RECORDS - N_CALLS);
  ft_ledger_report_free(&r);
  ft_ctx_free(ctx);
  lt_rmrf(dir);
}
END_TEST

/* Well-formed records whose claims are false: a "grad" whose output is the
 * jvp, and a call whose result was tampered with before it was recorded. */
START_TEST(test_forged_records_are_named) {
  char *dir = lt_tmpdir();
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger *lg = lt_open(ctx, dir, 8, 2, 4096);
  ft_ctx_attach_ledger(ctx, NULL); /* write the records by hand */
  ft_jaxpr *j = trace_loss(ctx), *jv = ft_jvp(ctx, j), *g = ft_grad(ctx, j, 0, NULL, false);
  char *tj = ft_jaxpr_print(ctx, j), *tjv = ft_jaxpr_print(ctx, jv), *tg = ft_jaxpr_print(ctx, g);
  ft_ctx_attach_ledger(ctx, lg);
  ft_ledger_obj in = {"jaxpr", tj, strlen(tj), NULL};
  ft_ledger_obj out_ok = {"jaxpr", tg, strlen(tg), NULL}, out_bad = {"jaxpr", tjv, strlen(tjv), NULL};
  ft_ledger_event ev = {.kind = FT_LEDGER_TRANSFORM, .op = "grad",
                        .params_json = "{\"argnums\":[0],\"has_aux\":false}", .inputs = &in,
                        .n_inputs = 1, .outputs = &out_ok, .n_outputs = 1};
  ck_assert_int_eq(ft_ledger_record(ctx, &ev), FT_OK); /* seq 1: true */
  ev.outputs = &out_bad;
  ck_assert_int_eq(ft_ledger_record(ctx, &ev), FT_OK); /* seq 2: forged */
  /* seq 3: a real call; seq 4: the same call with its result altered. */
  ft_array *x[6], *loss = NULL;
  make_inputs(ctx, x);
  ck_assert_int_eq(ft_eval(ctx, j, 6, (const ft_array *const *)x, 1, &loss), FT_OK);
  /* Record it again by hand: the same inputs, the result + 1 ulp. */
  void *bufs[9];
  size_t lens[9];
  ft_ledger_obj objs[9];
  objs[0] = (ft_ledger_obj){"jaxpr", tj, strlen(tj), NULL};
  /* The constant first, as the observer records it. */
  const float cw[CLASSES] = {1.0f, 0.5f, 2.0f};
  const int64_t dc[1] = {CLASSES};
  ft_array *c = ft_array_from_data(ctx, FT_F32, 1, dc, cw);
  ck_assert_int_eq(ft_npy_write_mem(ctx, c, &bufs[0], &lens[0]), FT_OK);
  for (int i = 0; i < 6; i++) ck_assert_int_eq(ft_npy_write_mem(ctx, x[i], &bufs[1 + i], &lens[1 + i]), FT_OK);
  ((uint32_t *)ft_array_data_mut(loss))[0] += 1;
  ck_assert_int_eq(ft_npy_write_mem(ctx, loss, &bufs[7], &lens[7]), FT_OK);
  for (int i = 0; i < 8; i++) objs[1 + i] = (ft_ledger_obj){NULL, bufs[i], lens[i], NULL};
  ft_ledger_event call = {.kind = FT_LEDGER_CALL, .op = "interp", .inputs = objs, .n_inputs = 8,
                          .outputs = objs + 8, .n_outputs = 1};
  ck_assert_int_eq(ft_ledger_record(ctx, &call), FT_OK);
  ck_assert_int_eq(ft_ledger_num_records(lg), 4);
  ck_assert_int_eq(ft_ledger_close(lg), FT_OK);

  ft_ledger_report r;
  ck_assert_int_eq(ft_ledger_replay(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.checked, 2);
  ck_assert_int_eq(r.diverged, 1);
  ck_assert_int_eq(r.first_bad_seq, 2);
  ck_assert_ptr_nonnull(strstr(r.json, "output 0 jaxpr differs"));
  ft_ledger_report_free(&r);
  ck_assert_int_eq(ft_ledger_reexec(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.checked, 2);
  ck_assert_int_eq(r.diverged, 1);
  ck_assert_int_eq(r.first_bad_seq, 4);
  ft_ledger_report_free(&r);

  for (int i = 0; i < 8; i++) free(bufs[i]);
  for (int i = 0; i < 6; i++) ft_array_free(x[i]);
  ft_array_free(c), ft_array_free(loss);
  ft_free(tj), ft_free(tjv), ft_free(tg);
  ft_jaxpr_free(j), ft_jaxpr_free(jv), ft_jaxpr_free(g);
  ft_ctx_free(ctx);
  lt_rmrf(dir);
}
END_TEST

/* A ledger write that fails fails the call that was being recorded, with a
 * status and nothing leaked; the ledger keeps its earlier records. Replaying
 * through a context that has a ledger attached records nothing in it. */
START_TEST(test_failed_write_fails_the_call) {
  char *dir = lt_tmpdir();
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger *lg = lt_open(ctx, dir, 8, 2, 4096);
  ft_jaxpr *j = trace_loss(ctx);
  char *text = ft_jaxpr_print(ctx, j);
  ck_assert_int_eq(ft_ledger_num_records(lg), 1);
  ft_ledger_fault_inject(1, ENOSPC);
  ck_assert_ptr_null(ft_parse(ctx, text, strlen(text), "loss"));
  ck_assert_int_eq(ft_ctx_status(ctx), FT_ERR_IO);
  ft_ledger_fault_inject(1, EIO);
  ck_assert_ptr_null(ft_jvp(ctx, j));
  ft_array *x[6], *loss = (ft_array *)1;
  make_inputs(ctx, x);
  ft_ledger_fault_inject(1, ENOSPC);
  ck_assert_int_eq(ft_eval(ctx, j, 6, (const ft_array *const *)x, 1, &loss), FT_ERR_IO);
  ck_assert_ptr_null(loss);
  ft_ledger_fault_inject(0, 0);
  ck_assert_int_eq(ft_ledger_num_records(lg), 1);
  ft_jaxpr *back = ft_parse(ctx, text, strlen(text), "loss");
  ck_assert_ptr_nonnull(back);
  ck_assert_int_eq(ft_ledger_num_records(lg), 2);
  ft_ledger_report r;
  ck_assert_int_eq(ft_ledger_replay(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.checked, 2);
  ck_assert_int_eq(r.diverged, 0);
  ft_ledger_report_free(&r);
  ck_assert_int_eq(ft_ledger_num_records(lg), 2);
  ck_assert_int_eq(ft_ledger_close(lg), FT_OK);
  ck_assert_int_eq(lt_health(dir), FT_LEDGER_CLEAN);
  for (int i = 0; i < 6; i++) ft_array_free(x[i]);
  ft_free(text);
  ft_jaxpr_free(j), ft_jaxpr_free(back);
  ft_ctx_free(ctx);
  lt_rmrf(dir);
}
END_TEST

/* The same training step through the JIT: ft_jit records compile/jit (the
 * plan text and cache key, replayed by re-planning), ft_call and
 * ft_call_into record call/jit like ft_eval's call/interp (re-executed by
 * the interpreter, which the JIT equals bitwise). */
START_TEST(test_jitted_mlp_ledger_verifies_replays_reexecs) {
  char *dir = lt_tmpdir();
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger_options lo = {.size = sizeof(ft_ledger_options), .fsync = FT_LEDGER_FSYNC_NEVER, .calls = FT_LEDGER_CALLS_BYTES};
  ft_ledger *lg = ft_ledger_open(ctx, dir, &lo);
  ck_assert_ptr_nonnull(lg);
  ck_assert_int_eq(ft_ctx_attach_ledger(ctx, lg), FT_OK);
  ft_jaxpr *j = trace_loss(ctx);
  const int argnums[4] = {0, 1, 2, 3};
  ft_jaxpr *g = ft_grad(ctx, j, 4, argnums, false);
  ck_assert_ptr_nonnull(g);
  ft_jit_options jo = {.size = sizeof(ft_jit_options), .no_disk_cache = true};
  ft_fn *floss = ft_jit(ctx, j, &jo), *fgrad = ft_jit(ctx, g, &jo);
  ck_assert_msg(floss && fgrad, "%s", ft_ctx_error(ctx));
  ft_array *in[6], *loss0 = NULL, *grads[4] = {0}, *ref = NULL;
  make_inputs(ctx, in);
  ck_assert_int_eq(ft_call(floss, 6, (const ft_array *const *)in, 1, &loss0), FT_OK);
  ck_assert_int_eq(ft_call(fgrad, 6, (const ft_array *const *)in, 4, grads), FT_OK);
  for (int p = 0; p < 4; p++) {
    float *w = ft_array_data_mut(in[p]);
    const float *dw = ft_array_data(grads[p]);
    ft_aval av = ft_array_aval(in[p]);
    for (int64_t k = 0; k < ft_aval_size(&av); k++) w[k] -= 0.5f * dw[k];
  }
  ft_aval lav = ft_array_aval(loss0);
  ft_array *loss1 = ft_array_new(ctx, lav.dtype, lav.rank, lav.dims);
  ck_assert_int_eq(ft_call_into(floss, 6, (const ft_array *const *)in, 1, &loss1), FT_OK);
  ck_assert(*(const float *)ft_array_data(loss1) < *(const float *)ft_array_data(loss0));
  ck_assert_int_eq(ft_eval(ctx, j, 6, (const ft_array *const *)in, 1, &ref), FT_OK);
  ck_assert_mem_eq(ft_array_data(ref), ft_array_data(loss1), sizeof(float));
  ck_assert_int_eq(ft_ledger_close(lg), FT_OK);
  char *ops = record_ops(dir);
  ck_assert_str_eq(ops, "trace/trace transform/grad optimize/saturate compile/jit "
                        "optimize/saturate compile/jit call/jit call/jit "
                        "call/jit call/interp");
  free(ops);

  ft_ledger_report r;
  ck_assert_int_eq(ft_ledger_verify(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.health, FT_LEDGER_CLEAN);
  ck_assert_int_eq(r.records, 10);
  ft_ledger_report_free(&r);
  ck_assert_int_eq(ft_ledger_replay(ctx, dir, &r), FT_OK);
  ck_assert_msg(r.diverged == 0, "%s", r.json);
  ck_assert_int_eq(r.checked, 6); /* trace, grad, 2 x optimize/saturate, 2 x compile/jit */
  ck_assert_int_eq(r.not_replayable, 0);
  ft_ledger_report_free(&r);
  ck_assert_int_eq(ft_ledger_reexec(ctx, dir, &r), FT_OK);
  ck_assert_msg(r.diverged == 0, "%s", r.json);
  ck_assert_int_eq(r.checked, 4);
  ck_assert_int_eq(r.not_replayable, 0);
  ft_ledger_report_free(&r);

  /* The stored plan ends with the cache key. */
  const char *plan_hash = output_hash(dir, 4, 0);
  char *path = ft_ledger_object_path(dir, plan_hash);
  uint8_t *data;
  size_t len;
  ck_assert_int_eq(ft_lio_read_file(path, &data, &len), 0);
  ck_assert_ptr_nonnull(strstr((char *)data, "cache key: "));
  free(data);
  free(path);

  for (int i = 0; i < 6; i++) ft_array_free(in[i]);
  for (int p = 0; p < 4; p++) ft_array_free(grads[p]);
  ft_array_free(loss0), ft_array_free(loss1), ft_array_free(ref);
  ft_fn_free(floss), ft_fn_free(fgrad);
  ft_jaxpr_free(j), ft_jaxpr_free(g);
  ft_ctx_free(ctx);
  lt_rmrf(dir);
}
END_TEST

int main(void) {
  ft_ledger_fault_nosync(true); /* durability is tested elsewhere; speed matters here */
  Suite *s = suite_create("ledger_pipeline");
  LT_ADD(s, test_mlp_ledger_verifies_replays_reexecs);
  LT_ADD(s, test_hash_level_calls_are_not_reexecutable);
  LT_ADD(s, test_altered_ir_object_names_its_record);
  LT_ADD(s, test_forged_records_are_named);
  LT_ADD(s, test_failed_write_fails_the_call);
  LT_ADD(s, test_jitted_mlp_ledger_verifies_replays_reexecs);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
