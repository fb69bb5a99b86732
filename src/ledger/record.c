/* src/ledger/record.c: the record API the rest of the library calls, and the
 * canonical JSON form of a record. A record is one line of log.jsonl: a JSON
 * object with sorted keys and no insignificant whitespace, so the same event
 * always serializes to the same bytes; "sum" is the XXH3-128 of that line
 * without "sum", and "prev" is the sum of the record before (a chain). */
#include <string.h>

#include "ledger/ledger.h"

static const char *const kind_names[FT_LEDGER_NUM_KINDS] = {
    "trace", "parse", "transform", "optimize", "compile", "call", "guard"};

const char *ft_ledger_kind_name(ft_ledger_kind kind) {
  return (unsigned)kind < FT_LEDGER_NUM_KINDS ? kind_names[kind] : NULL;
}

ft_ledger_kind ft_ledger_kind_from_name(const char *name) {
  for (int i = 0; name && i < FT_LEDGER_NUM_KINDS; i++)
    if (!strcmp(name, kind_names[i])) return (ft_ledger_kind)i;
  return FT_LEDGER_NUM_KINDS;
}

ft_ledger_calls ft_ledger_call_level(const ft_ctx *ctx) {
  return ctx && ctx->ledger ? ctx->ledger->opt.calls : FT_LEDGER_CALLS_NONE;
}

char *ft_ledger_canon(const json_t *v) {
  return json_dumps(v, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
}

char *ft_ledger_seal(json_t *rec, int64_t seq, const char prev_hex[33], char sum_hex[33]) {
  json_object_del(rec, "sum");
  if (json_object_set_new(rec, "seq", json_integer(seq)) ||
      json_object_set_new(rec, "prev", json_string(prev_hex)))
    return NULL;
  char *body = ft_ledger_canon(rec);
  if (!body) return NULL;
  ft_lhash_hex(body, strlen(body), sum_hex);
  free(body);
  if (json_object_set_new(rec, "sum", json_string(sum_hex))) return NULL;
  return ft_ledger_canon(rec);
}

/* Why an inputs/outputs entry is malformed, or NULL. */
static const char *check_objs(const json_t *a) {
  if (!json_is_array(a)) return "inputs/outputs is not an array";
  size_t i;
  const json_t *o;
  json_array_foreach(a, i, o) {
    const json_t *h = json_object_get(o, "hash"), *n = json_object_get(o, "name");
    if (!json_is_object(o) || !json_is_string(h) || !ft_lis_hex32(json_string_value(h)) ||
        !json_is_integer(json_object_get(o, "size")) ||
        json_integer_value(json_object_get(o, "size")) < 0 ||
        !json_is_boolean(json_object_get(o, "stored")) || (n && !json_is_string(n)))
      return "malformed object reference";
  }
  return NULL;
}

/* Why a parsed record's fields are malformed, or NULL. */
static const char *check_fields(const json_t *r) {
  const json_t *seq = json_object_get(r, "seq"), *mode = json_object_get(r, "mode");
  const json_t *t = json_object_get(r, "time_ns");
  if (!json_is_integer(seq) || json_integer_value(seq) < 1) return "bad seq";
  if (!ft_lis_hex32(json_string_value(json_object_get(r, "prev")))) return "bad prev";
  if (!ft_lis_hex32(json_string_value(json_object_get(r, "sum")))) return "bad sum";
  if (ft_ledger_kind_from_name(json_string_value(json_object_get(r, "kind"))) ==
      FT_LEDGER_NUM_KINDS)
    return "unknown kind";
  const char *op = json_string_value(json_object_get(r, "op"));
  if (!op || !*op) return "bad op";
  if (!json_is_object(json_object_get(r, "params"))) return "params is not an object";
  const char *why = check_objs(json_object_get(r, "inputs"));
  if (!why) why = check_objs(json_object_get(r, "outputs"));
  if (why) return why;
  if (!json_object_get(r, "fired")) return "no fired";
  if (!json_is_string(mode) || (strcmp(json_string_value(mode), "strict") &&
                                strcmp(json_string_value(mode), "hardened")))
    return "bad mode";
  if (!json_is_string(json_object_get(r, "version"))) return "bad version";
  if (t && !json_is_integer(t)) return "bad time_ns";
  return NULL;
}

const char *ft_ledger_check_line(const char *line, size_t len, json_t **out) {
  *out = NULL;
  json_error_t err;
  json_t *r = json_loadb(line, len, JSON_REJECT_DUPLICATES, &err);
  if (!r) return "not JSON";
  const char *why = json_is_object(r) ? check_fields(r) : "not an object";
  char *text = why ? NULL : ft_ledger_canon(r);
  if (!why && (!text || strlen(text) != len || memcmp(text, line, len)))
    why = "not in canonical form";
  free(text);
  if (!why) {
    /* The sum covers every other field: recompute it over the line without it. */
    json_t *copy = json_copy(r);
    json_object_del(copy, "sum");
    char *body = copy ? ft_ledger_canon(copy) : NULL;
    char sum[33];
    if (!body) why = "out of memory";
    else {
      ft_lhash_hex(body, strlen(body), sum);
      if (strcmp(sum, json_string_value(json_object_get(r, "sum")))) why = "checksum mismatch";
    }
    free(body);
    json_decref(copy);
  }
  if (why) json_decref(r);
  else *out = r;
  return why;
}

/* The JSON reference of one object, storing its bytes when asked. */
static ft_status obj_ref(ft_ledger *lg, ft_ctx *ctx, const ft_ledger_obj *o, bool store,
                         json_t *arr) {
  char hex[33];
  if (o->data || (o->len == 0 && !o->hash)) {
    if (store) {
      ft_status st = ft_ledger_put_object(lg, ctx, o->data ? o->data : "", o->len, hex);
      if (st) return st;
    } else {
      ft_lhash_hex(o->data ? o->data : "", o->len, hex);
    }
  } else if (o->hash) {
    ft_lhex(o->hash, hex);
    store = false;
  }
  json_t *e = json_pack("{s:s, s:I, s:b}", "hash", hex, "size", (json_int_t)o->len, "stored",
                        store);
  if (e && o->name) json_object_set_new(e, "name", json_string(o->name));
  if (!e || json_array_append_new(arr, e))
    return ft_set_error(ctx, FT_ERR_NOMEM, "ledger: out of memory building a record");
  return FT_OK;
}

/* The params and fired fields of ev, parsed and checked. */
static ft_status event_params(ft_ctx *ctx, const ft_ledger_event *ev, json_t *rec) {
  json_error_t err;
  json_t *p = ev->params ? json_incref(ev->params)
              : ev->params_json ? json_loads(ev->params_json, JSON_REJECT_DUPLICATES, &err)
                                : json_object();
  if (!json_is_object(p)) {
    json_decref(p);
    return ft_set_error(ctx, FT_ERR_INVALID_ARG, "ledger: params of '%s' are not a JSON object",
                        ev->op);
  }
  json_object_set_new(rec, "params", p);
  json_t *f;
  if (ev->fired_json) {
    f = json_loads(ev->fired_json, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &err);
    if (!f)
      return ft_set_error(ctx, FT_ERR_INVALID_ARG, "ledger: fired of '%s' is not JSON: %s",
                          ev->op, err.text);
  } else {
    f = json_array();
    for (int i = 0; f && i < ev->n_fired; i++) {
      const ft_ledger_rule *r = &ev->fired[i];
      json_t *e = json_pack("{s:s, s:I}", "rule", r->name ? r->name : "?", "count",
                            (json_int_t)r->count);
      if (e && r->proof) json_object_set_new(e, "proof", json_string(r->proof));
      json_array_append_new(f, e);
    }
  }
  json_object_set_new(rec, "fired", f);
  return FT_OK;
}

static ft_status record_locked(ft_ctx *ctx, ft_ledger *lg, const ft_ledger_event *ev);

/* One record at a time per ledger: seq, the chain head and the growing
 * stripe are shared by every thread writing through it. */
ft_status ft_ledger_record(ft_ctx *ctx, const ft_ledger_event *ev) {
  if (!ctx || !ctx->ledger) return FT_OK;
  ft_ledger *lg = ctx->ledger;
  pthread_mutex_lock(&lg->lock);
  ft_status st = record_locked(ctx, lg, ev);
  pthread_mutex_unlock(&lg->lock);
  return st;
}

static ft_status record_locked(ft_ctx *ctx, ft_ledger *lg, const ft_ledger_event *ev) {
  if (!ev || (unsigned)ev->kind >= FT_LEDGER_NUM_KINDS || !ev->op || !*ev->op ||
      ev->n_inputs < 0 || ev->n_outputs < 0 || ev->n_fired < 0)
    return ft_set_error(ctx, FT_ERR_INVALID_ARG, "ledger: malformed event");
  bool call = ev->kind == FT_LEDGER_CALL;
  if (call && lg->opt.calls == FT_LEDGER_CALLS_NONE) return FT_OK;
  if (lg->broken)
    return ft_set_error(ctx, FT_ERR_IO, "ledger %s: an earlier write failed and could not be "
                        "undone; reopen it after 'ftledger recover %s'", lg->dir, lg->dir);
  json_t *rec = json_object(), *ins = json_array(), *outs = json_array();
  ft_status st = rec && ins && outs ? FT_OK : FT_ERR_NOMEM;
  if (st) ft_set_error(ctx, st, "ledger: out of memory");
  json_object_set_new(rec, "inputs", ins);
  json_object_set_new(rec, "outputs", outs);
  for (int i = 0; !st && i < ev->n_inputs + ev->n_outputs; i++) {
    bool is_in = i < ev->n_inputs;
    const ft_ledger_obj *o = is_in ? &ev->inputs[i] : &ev->outputs[i - ev->n_inputs];
    bool store = !call || (lg->opt.calls == FT_LEDGER_CALLS_BYTES && o->len <= lg->opt.call_byte_cap);
    st = obj_ref(lg, ctx, o, store, is_in ? ins : outs);
  }
  if (!st) st = event_params(ctx, ev, rec);
  if (!st) {
    json_object_set_new(rec, "kind", json_string(ft_ledger_kind_name(ev->kind)));
    json_object_set_new(rec, "op", json_string(ev->op));
    json_object_set_new(rec, "mode", json_string(ctx->opts.mode == FT_MODE_HARDENED ? "hardened"
                                                                                   : "strict"));
    json_object_set_new(rec, "version", json_string(ft_version()));
    if (ev->time_ns > 0) json_object_set_new(rec, "time_ns", json_integer(ev->time_ns));
    char sum[33];
    char *line = ft_ledger_seal(rec, lg->seq + 1, lg->last_sum, sum);
    if (!line) {
      st = ft_set_error(ctx, FT_ERR_INVALID_ARG, "ledger: record of '%s' cannot be encoded "
                        "(invalid UTF-8 or out of memory)", ev->op);
    } else {
      size_t n = strlen(line);
      line[n] = '\n'; /* json_dumps leaves room: we replace the NUL, write n+1 */
      st = ft_ledger_append_line(lg, ctx, line, n + 1);
      free(line);
      if (!st) {
        lg->seq++;
        memcpy(lg->last_sum, sum, 33);
      }
    }
  }
  json_decref(rec);
  return st;
}
