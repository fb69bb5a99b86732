/* src/replay/observe.c: the context observer the ledger installs when it is
 * attached (ft_ctx_attach_ledger). ft_parse, ft_trace and ft_eval report to
 * it through ctx->on_event (src/ir cannot depend on the ledger), and it turns
 * each report into a record:
 *
 *   parse  op "parse"   in: the source text   out: the canonical text
 *   trace  op "trace"   params: the input avals
 *                       out: the canonical text, then each traced constant as .npy
 *   call   op "interp"  in: the program's canonical text, each traced constant
 *                       (.npy), each argument (.npy)   out: each result (.npy)
 *   call   op "jit"     ft_call/ft_call_into, the same layout; the program is
 *                       the one the compiled function runs (its exact-tier
 *                       rewrite), whose ft_eval results it equals bitwise
 *   compile op "jit"    params: the plan options
 *                       in: the canonical text, each traced constant (.npy)
 *                       out: the plan text and the cache key
 *
 * Arrays are recorded as the bytes of their .npy file (ft_npy_write_mem), so
 * one hash names dtype, shape and contents. A call's inputs are what ft_eval
 * takes for the parsed program text: the constants' values first, then the
 * arguments. Calls are recorded only when the ledger logs calls; at the
 * hashes level the bytes are hashed, at the bytes level also stored (up to
 * the cap), which is what lets reexec re-run them.
 *
 * The hashes level is the one meant for training loops, so it avoids work
 * that would cost more than the step (bench/ledger): the program's text is
 * printed once and its hash cached per program (struct ft_lprog), and an
 * array's .npy hash is computed from its header and its buffer in place,
 * without building the file. */
#include <string.h>
#include <xxhash.h>

#include "replay/replay.h"
#include "runtime/runtime.h"

/* The .npy bytes of a (malloc'd). float0 arrays, which .npy cannot carry,
 * are recorded as their aval text ("float0[3]"): they hold no data. */
static ft_status array_bytes(ft_ctx *ctx, const ft_array *a, void **buf, size_t *len) {
  ft_aval av = ft_array_aval(a);
  if (av.dtype == FT_FLOAT0) {
    char s[160];
    ft_aval_str(&av, s, sizeof s);
    *len = strlen(s);
    *buf = strdup(s);
    return *buf ? FT_OK : ft_set_error(ctx, FT_ERR_NOMEM, "ledger: out of memory");
  }
  return ft_npy_write_mem(ctx, a, buf, len);
}

/* The .npy bytes of j's traced constants (n_const buffers), when it has any. */
static ft_status const_bytes(ft_ctx *ctx, const ft_jaxpr *j, void **bufs, size_t *lens) {
  for (int i = 0; j->const_data && i < j->n_const; i++) {
    const ft_aval *av = &j->constvars[i]->aval;
    ft_array *a = ft_array_from_data(ctx, av->dtype, av->rank, av->dims, j->const_data[i]);
    ft_status st = a ? array_bytes(ctx, a, &bufs[i], &lens[i]) : ft_ctx_status(ctx);
    ft_array_free(a);
    if (st) return st;
  }
  return FT_OK;
}

/* One record with objs[0..n_in) as inputs and the rest as outputs. */
static ft_status record(ft_ctx *ctx, ft_ledger_kind kind, const char *op, const char *params,
                        const ft_ledger_obj *objs, int n_in, int n_out) {
  ft_ledger_event e = {.kind = kind, .op = op, .params_json = params, .inputs = objs,
                       .n_inputs = n_in, .outputs = objs + n_in, .n_outputs = n_out};
  return ft_ledger_record(ctx, &e);
}

static ft_status on_parse(ft_ctx *ctx, const ft_ctx_event *ev) {
  char *text = ft_jaxpr_print(ctx, ev->jaxpr);
  if (!text) return ft_set_error(ctx, FT_ERR_NOMEM, "ledger: out of memory printing a parse record");
  ft_ledger_obj o[2] = {{.name = "text", .data = ev->text, .len = ev->len},
                        {.name = "jaxpr", .data = text, .len = strlen(text)}};
  ft_status st = record(ctx, FT_LEDGER_PARSE, "parse", NULL, o, 1, 1);
  free(text);
  return st;
}

/* params of a trace record: {"in_avals":["f32[8,4]",...]} (malloc'd). */
static char *trace_params(const ft_jaxpr *j) {
  json_t *p = json_object(), *a = json_array();
  for (int i = 0; p && a && i < j->n_in; i++) {
    char s[160];
    json_array_append_new(a, json_string(ft_aval_str(&j->invars[i]->aval, s, sizeof s)));
  }
  json_object_set_new(p, "in_avals", a);
  char *text = p ? ft_ledger_canon(p) : NULL;
  json_decref(p);
  return text;
}

static ft_status on_trace(ft_ctx *ctx, const ft_ctx_event *ev) {
  const ft_jaxpr *j = ev->jaxpr;
  int nc = j->const_data ? j->n_const : 0;
  ft_ledger_obj *o = calloc((size_t)nc + 1, sizeof *o);
  void **bufs = calloc((size_t)nc + 1, sizeof *bufs);
  size_t *lens = calloc((size_t)nc + 1, sizeof *lens);
  char *text = ft_jaxpr_print(ctx, j), *params = trace_params(j), (*names)[16] = calloc((size_t)nc + 1, 16);
  ft_status st = o && bufs && lens && text && params && names ? FT_OK : FT_ERR_NOMEM;
  if (st) ft_set_error(ctx, st, "ledger: out of memory building a trace record");
  if (!st) st = const_bytes(ctx, j, bufs, lens);
  if (!st) {
    o[0] = (ft_ledger_obj){.name = "jaxpr", .data = text, .len = strlen(text)};
    for (int i = 0; i < nc; i++) {
      snprintf(names[i], 16, "const%d", i);
      o[1 + i] = (ft_ledger_obj){.name = names[i], .data = bufs[i], .len = lens[i]};
    }
    st = record(ctx, FT_LEDGER_TRACE, "trace", params, o, 0, 1 + nc);
  }
  for (int i = 0; bufs && i < nc; i++) free(bufs[i]);
  free(o), free(bufs), free(lens), free(text), free(params), free(names);
  return st;
}

/* The hash of the .npy file of a (as array_bytes would write it) into h,
 * without copying the data: the header of a zero-byte array of a's aval is
 * the header of a's file. */
static ft_status npy_hash(ft_ctx *ctx, const ft_array *a, uint8_t h[16], size_t *len) {
  if (a->aval.dtype == FT_FLOAT0) {
    void *buf;
    ft_status st = array_bytes(ctx, a, &buf, len);
    if (!st) ft_lhash128(buf, *len, h);
    free(buf);
    return st;
  }
  struct ft_array head = {.aval = a->aval, .nbytes = 0, .data = a->data};
  void *hdr;
  size_t hlen;
  ft_status st = ft_npy_write_mem(ctx, &head, &hdr, &hlen);
  XXH3_state_t *s = st ? NULL : XXH3_createState();
  if (!st && !s) st = ft_set_error(ctx, FT_ERR_NOMEM, "ledger: out of memory");
  if (!st) {
    XXH3_128bits_reset(s);
    XXH3_128bits_update(s, hdr, hlen);
    XXH3_128bits_update(s, a->data, a->nbytes);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(s));
    memcpy(h, c.digest, 16);
    *len = hlen + a->nbytes;
  }
  XXH3_freeState(s);
  free(hdr);
  return st;
}

/* The program of a call logged by hash: its canonical text's hash, from the
 * cache when j was run before. The key is j's address, serial and shape, so
 * a new jaxpr at a freed one's address is not mistaken for it. */
static ft_status program_hash(ft_ctx *ctx, const ft_jaxpr *j, uint8_t h[16], size_t *len) {
  ft_ledger *lg = ctx->ledger;
  struct ft_lprog key = {.j = j, .eqns = j->eqns, .invars = j->invars, .serial = j->serial,
                         .n_eqn = j->n_eqn, .n_in = j->n_in, .n_out = j->n_out};
  for (size_t i = 0; i < FT_COUNTOF(lg->progs); i++) {
    const struct ft_lprog *p = &lg->progs[i];
    if (p->j == key.j && p->eqns == key.eqns && p->invars == key.invars &&
        p->serial == key.serial && p->n_eqn == key.n_eqn && p->n_in == key.n_in &&
        p->n_out == key.n_out) {
      memcpy(h, p->hash, 16);
      *len = p->len;
      return FT_OK;
    }
  }
  char *text = ft_jaxpr_print(ctx, j);
  if (!text) return ft_set_error(ctx, FT_ERR_NOMEM, "ledger: out of memory printing a call record");
  key.len = *len = strlen(text);
  ft_lhash128(text, key.len, key.hash);
  memcpy(h, key.hash, 16);
  free(text);
  lg->progs[lg->progs_next++ % FT_COUNTOF(lg->progs)] = key;
  return FT_OK;
}

/* A call at the hashes level: every object by hash, nothing built or stored. */
static ft_status on_eval_hashes(ft_ctx *ctx, const ft_ctx_event *ev) {
  const ft_jaxpr *j = ev->jaxpr;
  int nc = j->const_data ? j->n_const : 0, n_obj = 1 + nc + ev->n_in + ev->n_out;
  ft_ledger_obj *o = calloc((size_t)n_obj, sizeof *o);
  uint8_t (*h)[16] = calloc((size_t)n_obj, 16);
  char (*names)[16] = calloc((size_t)n_obj, 16);
  ft_status st = o && h && names ? FT_OK : FT_ERR_NOMEM;
  if (st) ft_set_error(ctx, st, "ledger: out of memory building a call record");
  if (!st) st = program_hash(ctx, j, h[0], &o[0].len);
  o[0].name = "jaxpr";
  for (int i = 1; !st && i < n_obj; i++) {
    int k = i - 1 - nc;
    ft_array *c = NULL;
    if (k < 0) {
      const ft_aval *av = &j->constvars[i - 1]->aval;
      c = ft_array_from_data(ctx, av->dtype, av->rank, av->dims, j->const_data[i - 1]);
      if (!c) st = ft_ctx_status(ctx);
      snprintf(names[i], 16, "const%d", i - 1);
    } else {
      snprintf(names[i], 16, k < ev->n_in ? "in%d" : "out%d", k < ev->n_in ? k : k - ev->n_in);
    }
    const ft_array *a = k < 0 ? c : k < ev->n_in ? ev->in[k] : ev->out[k - ev->n_in];
    if (!st) st = npy_hash(ctx, a, h[i], &o[i].len);
    ft_array_free(c);
    o[i].name = names[i];
  }
  for (int i = 0; i < n_obj; i++) o[i].hash = h[i];
  if (!st) st = record(ctx, FT_LEDGER_CALL, ev->op ? ev->op : "interp", NULL, o, 1 + nc + ev->n_in,
                      ev->n_out);
  free(o), free(h), free(names);
  return st;
}

static ft_status on_eval(ft_ctx *ctx, const ft_ctx_event *ev) {
  ft_ledger_calls level = ft_ledger_call_level(ctx);
  if (level == FT_LEDGER_CALLS_NONE) return FT_OK;
  if (level == FT_LEDGER_CALLS_HASHES) return on_eval_hashes(ctx, ev);
  const ft_jaxpr *j = ev->jaxpr;
  int nc = j->const_data ? j->n_const : 0, n_arr = nc + ev->n_in + ev->n_out;
  ft_ledger_obj *o = calloc((size_t)n_arr + 1, sizeof *o);
  void **bufs = calloc((size_t)n_arr + 1, sizeof *bufs);
  size_t *lens = calloc((size_t)n_arr + 1, sizeof *lens);
  char *text = ft_jaxpr_print(ctx, j), (*names)[16] = calloc((size_t)n_arr + 1, 16);
  ft_status st = o && bufs && lens && text && names ? FT_OK : FT_ERR_NOMEM;
  if (st) ft_set_error(ctx, st, "ledger: out of memory building a call record");
  if (!st) st = const_bytes(ctx, j, bufs, lens);
  for (int i = nc; !st && i < n_arr; i++) {
    int k = i - nc;
    const ft_array *a = k < ev->n_in ? ev->in[k] : ev->out[k - ev->n_in];
    st = array_bytes(ctx, a, &bufs[i], &lens[i]);
  }
  if (!st) {
    o[0] = (ft_ledger_obj){.name = "jaxpr", .data = text, .len = strlen(text)};
    for (int i = 0; i < n_arr; i++) {
      int k = i - nc;
      if (k < 0) snprintf(names[i], 16, "const%d", i);
      else if (k < ev->n_in) snprintf(names[i], 16, "in%d", k);
      else snprintf(names[i], 16, "out%d", k - ev->n_in);
      o[1 + i] = (ft_ledger_obj){.name = names[i], .data = bufs[i], .len = lens[i]};
    }
    st = record(ctx, FT_LEDGER_CALL, ev->op ? ev->op : "interp", NULL, o, 1 + nc + ev->n_in,
                ev->n_out);
  }
  for (int i = 0; bufs && i < n_arr; i++) free(bufs[i]);
  free(o), free(bufs), free(lens), free(text), free(names);
  return st;
}

/* A compilation: the input program (and its constants, which decide
 * whether the plan embeds them) -> the plan text with the cache key. */
static ft_status on_compile(ft_ctx *ctx, const ft_ctx_event *ev) {
  const ft_jaxpr *j = ev->jaxpr;
  int nc = j->const_data ? j->n_const : 0;
  ft_ledger_obj *o = calloc((size_t)nc + 2, sizeof *o);
  void **bufs = calloc((size_t)nc + 1, sizeof *bufs);
  size_t *lens = calloc((size_t)nc + 1, sizeof *lens);
  char *text = ft_jaxpr_print(ctx, j), (*names)[16] = calloc((size_t)nc + 1, 16);
  ft_status st = o && bufs && lens && text && names ? FT_OK : FT_ERR_NOMEM;
  if (st) ft_set_error(ctx, st, "ledger: out of memory building a compile record");
  if (!st) st = const_bytes(ctx, j, bufs, lens);
  if (!st) {
    o[0] = (ft_ledger_obj){.name = "jaxpr", .data = text, .len = strlen(text)};
    for (int i = 0; i < nc; i++) {
      snprintf(names[i], 16, "const%d", i);
      o[1 + i] = (ft_ledger_obj){.name = names[i], .data = bufs[i], .len = lens[i]};
    }
    o[1 + nc] = (ft_ledger_obj){.name = "plan", .data = ev->text, .len = ev->len};
    st = record(ctx, FT_LEDGER_COMPILE, ev->op ? ev->op : "jit", ev->params, o, 1 + nc, 1);
  }
  for (int i = 0; bufs && i < nc; i++) free(bufs[i]);
  free(o), free(bufs), free(lens), free(text), free(names);
  return st;
}

/* A hardened-mode guard that fired: op is its kind ("nonfinite", "index",
 * "loop", "call"); params say where (engine, equation, primitive, output,
 * the program's hash when known) and the decision, and the message. */
static ft_status on_guard(ft_ctx *ctx, const ft_ctx_event *ev) {
  const ft_guard_event *g = ev->guard;
  json_t *p = json_pack("{s:s, s:i, s:s, s:i, s:s, s:s}", "engine", g->engine, "eqn", g->eqn,
                        "prim", g->prim, "output", g->output, "decision",
                        g->decision == FT_GUARD_CONTINUED ? "continued" : "failed", "message",
                        g->message);
  if (p && ev->jaxpr) {
    char h[33];
    ft_jaxpr_hash_hex(ev->jaxpr, h);
    json_object_set_new(p, "program", json_string(h));
  }
  if (!p) return ft_set_error(ctx, FT_ERR_NOMEM, "ledger: out of memory building a guard record");
  ft_ledger_event e = {.kind = FT_LEDGER_GUARD, .op = ft_guard_kind_name(g->kind), .params = p};
  ft_status st = ft_ledger_record(ctx, &e);
  json_decref(p);
  return st;
}

/* Under the ledger's lock: the program-hash cache is shared too, and a
 * call's record is appended whole before another thread's. */
ft_status ft_ledger_observe(ft_ctx *ctx, const ft_ctx_event *ev) {
  if (!ft_ledger_active(ctx) || !ev || (!ev->jaxpr && ev->kind != FT_CTX_EV_GUARD) ||
      (ev->kind == FT_CTX_EV_GUARD && !ev->guard))
    return FT_OK;
  ft_ledger *lg = ctx->ledger;
  ft_status st = FT_OK;
  pthread_mutex_lock(&lg->lock);
  switch (ev->kind) {
  case FT_CTX_EV_PARSE: st = on_parse(ctx, ev); break;
  case FT_CTX_EV_TRACE: st = on_trace(ctx, ev); break;
  case FT_CTX_EV_EVAL: st = on_eval(ctx, ev); break;
  case FT_CTX_EV_COMPILE: st = on_compile(ctx, ev); break;
  case FT_CTX_EV_GUARD: st = on_guard(ctx, ev); break;
  }
  pthread_mutex_unlock(&lg->lock);
  return st;
}

/* ft_ctx_free's hook (ctx->on_free): detach the ledger from a dying context. */
static void detach_on_free(ft_ctx *ctx) { ft_ctx_attach_ledger(ctx, NULL); }

/* The check that lg is free and the claim happen in one critical section
 * holding lg's lock and the lock of the ledger ctx leaves (taken in address
 * order), so two threads attaching one ledger to two contexts cannot both
 * win, and every write of ctx->ledger happens under the lock of the ledger
 * it leaves or joins (the check reads another context's ->ledger). */
ft_status ft_ctx_attach_ledger(ft_ctx *ctx, ft_ledger *lg) {
  if (!ctx) return FT_ERR_INVALID_ARG;
  ft_ledger *old = ctx->ledger == lg ? NULL : ctx->ledger;
  ft_ledger *first = !old ? lg : !lg ? old : (uintptr_t)old < (uintptr_t)lg ? old : lg;
  ft_ledger *second = first == lg ? old : lg;
  if (first) pthread_mutex_lock(&first->lock);
  if (second) pthread_mutex_lock(&second->lock);
  bool taken = lg && lg->attached && lg->attached != ctx && lg->attached->ledger == lg;
  if (!taken) {
    if (old && old->attached == ctx) old->attached = NULL;
    if (lg) lg->attached = ctx;
    ctx->ledger = lg;
    /* The observer turns successful parses, traces and evaluations into records. */
    ctx->on_event = lg ? ft_ledger_observe : NULL;
    ctx->on_free = lg ? detach_on_free : NULL;
  }
  if (second) pthread_mutex_unlock(&second->lock);
  if (first) pthread_mutex_unlock(&first->lock);
  if (taken)
    return ft_set_error(ctx, FT_ERR_INVALID_ARG, "ledger %s: already attached to another context",
                        lg->dir);
  return FT_OK;
}
