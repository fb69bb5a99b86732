/* src/replay/replay.c: replaying a ledger. Parts of the library register a
 * replayer per (kind, op) (the parser for "parse", the transforms for
 * "transform", the JIT for "compile", executors for "call"); replay feeds
 * each record's stored inputs and params to it and checks every output hash.
 * Records nobody can recompute yet are counted, not failed. Also diff. */
#include <pthread.h>
#include <string.h>

#include "replay/replay.h"

#define MAX_DIVERGENCES 100

typedef struct replayer {
  ft_ledger_kind kind;
  char *op;  /* NULL: any op */
  ft_ledger_replayer fn;
  void *user;
} replayer;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t builtins_once = PTHREAD_ONCE_INIT;
static replayer *reg;
static size_t reg_n, reg_cap;
static bool in_builtins;

/* The library's replayers go in first, so user registrations override them. */
static void run_builtins(void) {
  in_builtins = true;
  ft_ledger_register_builtins();
  in_builtins = false;
}

static void ensure_builtins(void) {
  if (!in_builtins) pthread_once(&builtins_once, run_builtins);
}

ft_status ft_ledger_register_replayer(ft_ledger_kind kind, const char *op,
                                      ft_ledger_replayer fn, void *user) {
  if ((unsigned)kind >= FT_LEDGER_NUM_KINDS) return FT_ERR_INVALID_ARG;
  ensure_builtins();
  if (op && !strcmp(op, "*")) op = NULL;
  ft_status st = FT_OK;
  pthread_mutex_lock(&reg_lock);
  size_t i = 0;
  while (i < reg_n && !(reg[i].kind == kind && (op ? reg[i].op && !strcmp(reg[i].op, op)
                                                   : !reg[i].op)))
    i++;
  if (!fn) {
    if (i < reg_n) {
      free(reg[i].op);
      reg[i] = reg[--reg_n];
    }
  } else if (i < reg_n) {
    reg[i].fn = fn;
    reg[i].user = user;
  } else {
    if (reg_n == reg_cap) {
      size_t nc = reg_cap ? 2 * reg_cap : 16;
      replayer *nr = realloc(reg, nc * sizeof *nr);
      if (nr) reg = nr, reg_cap = nc;
    }
    char *dup = op ? strdup(op) : NULL;
    if (reg_n == reg_cap || (op && !dup)) {
      free(dup);
      st = FT_ERR_NOMEM;
    } else {
      reg[reg_n++] = (replayer){kind, dup, fn, user};
    }
  }
  pthread_mutex_unlock(&reg_lock);
  return st;
}

ft_ledger_replayer ft_ledger_find_replayer(ft_ledger_kind kind, const char *op, void **user) {
  ft_ledger_replayer fn = NULL;
  ensure_builtins();
  pthread_mutex_lock(&reg_lock);
  for (int pass = 0; pass < 2 && !fn; pass++)
    for (size_t i = 0; i < reg_n && !fn; i++)
      if (reg[i].kind == kind && (pass ? !reg[i].op : reg[i].op && !strcmp(reg[i].op, op))) {
        fn = reg[i].fn;
        *user = reg[i].user;
      }
  pthread_mutex_unlock(&reg_lock);
  return fn;
}

ft_status ft_ledger_object_read(ft_ctx *ctx, const char *dir, const char *hex, void **data,
                                size_t *len) {
  *data = NULL;
  *len = 0;
  if (!dir || !ft_lis_hex32(hex))
    return ft_set_error(ctx, FT_ERR_INVALID_ARG, "ledger: '%s' is not a 32-digit hash",
                        hex ? hex : "(null)");
  char *path = ft_ledger_object_path(dir, hex);
  uint8_t *buf = NULL;
  size_t n = 0;
  if (!path || ft_lio_read_file(path, &buf, &n)) {
    free(path);
    return ft_set_error(ctx, FT_ERR_IO, "ledger %s: object %s is not stored", dir, hex);
  }
  free(path);
  char got[33];
  ft_lhash_hex(buf, n, got);
  if (strcmp(got, hex)) {
    free(buf);
    return ft_set_error(ctx, FT_ERR_IO, "ledger %s: object %s is damaged (its bytes hash to %s)",
                        dir, hex, got);
  }
  *data = buf;
  *len = n;
  return FT_OK;
}

/* ---- replay / reexec ---- */

typedef struct replay_state {
  json_t *rep, *divergences, *missing;
  int64_t checked, diverged, not_replayable, not_applicable, first_bad;
} replay_state;

static void diverge(replay_state *r, const json_t *rec, const char *why) {
  int64_t seq = json_integer_value(json_object_get(rec, "seq"));
  r->diverged++;
  if (!r->first_bad) r->first_bad = seq;
  if (json_array_size(r->divergences) < MAX_DIVERGENCES)
    json_array_append_new(r->divergences,
                          json_pack("{s:I, s:O, s:O, s:s}", "seq", (json_int_t)seq, "kind",
                                    json_object_get(rec, "kind"), "op", json_object_get(rec, "op"),
                                    "why", why));
}

static void not_replayable(replay_state *r, const char *key) {
  r->not_replayable++;
  json_int_t n = json_integer_value(json_object_get(r->missing, key));
  json_object_set_new(r->missing, key, json_integer(n + 1));
}

/* Recomputes one record with fn and compares the outputs. */
static void replay_one(ft_ctx *ctx, const char *dir, replay_state *r, const json_t *rec,
                       ft_ledger_replayer fn, void *user) {
  const json_t *ins = json_object_get(rec, "inputs"), *outs = json_object_get(rec, "outputs");
  /* A trace cannot be recomputed (it needs the user's C function): its
   * replayer is given the stored outputs and checks they reproduce themselves. */
  if (ft_ledger_kind_from_name(json_string_value(json_object_get(rec, "kind"))) == FT_LEDGER_TRACE)
    ins = outs;
  size_t n_in = json_array_size(ins), n_out = json_array_size(outs), i;
  ft_ledger_blob *blobs = calloc(n_in + 1, sizeof *blobs);
  ft_ledger_buf *bufs = calloc(n_out + 1, sizeof *bufs);
  char why[512];
  char *params = ft_ledger_canon(json_object_get(rec, "params"));
  bool skip = false, bad = false;
  if (!blobs || !bufs || !params) {
    diverge(r, rec, "out of memory");
    bad = true;
  }
  /* Inputs must be stored and intact; a damaged one names this record. */
  for (i = 0; !bad && !skip && i < n_in; i++) {
    const char *h = json_string_value(json_object_get(json_array_get(ins, i), "hash"));
    void *d;
    size_t len;
    if (ft_ledger_object_read(ctx, dir, h, &d, &len)) {
      char *p = ft_ledger_object_path(dir, h);
      FILE *f = p ? fopen(p, "rb") : NULL;
      free(p);
      if (f) {
        fclose(f);
        snprintf(why, sizeof why, "input %zu: stored object %s is damaged", i, h);
        diverge(r, rec, why);
        bad = true;
      } else {
        not_replayable(r, "(inputs not stored)");
        skip = true;
      }
    }
    blobs[i].data = d;
    blobs[i].len = len;
  }
  /* A stored output that no longer matches its hash is damage too. */
  for (i = 0; !bad && !skip && i < n_out; i++) {
    const json_t *o = json_array_get(outs, i);
    const char *h = json_string_value(json_object_get(o, "hash"));
    void *d;
    size_t len;
    if (json_is_true(json_object_get(o, "stored")) && ft_ledger_object_read(ctx, dir, h, &d, &len)) {
      snprintf(why, sizeof why, "output %zu: stored object %s is damaged or missing", i, h);
      diverge(r, rec, why);
      bad = true;
    } else if (json_is_true(json_object_get(o, "stored"))) {
      free(d);
    }
  }
  if (!bad && !skip) {
    r->checked++;
    ft_ctx_clear_error(ctx);
    const char *op = json_string_value(json_object_get(rec, "op"));
    ft_status st = fn(ctx, user, op, params, blobs, (int)n_in, bufs, (int)n_out);
    if (st) {
      snprintf(why, sizeof why, "replayer failed: %s", ft_ctx_error(ctx));
      diverge(r, rec, why);
    }
    for (i = 0; !st && i < n_out; i++) {
      const json_t *o = json_array_get(outs, i);
      const char *h = json_string_value(json_object_get(o, "hash"));
      char got[33];
      ft_lhash_hex(bufs[i].data ? bufs[i].data : "", bufs[i].len, got);
      if (strcmp(got, h)) {
        snprintf(why, sizeof why, "output %zu%s%s differs: recorded %s (%lld bytes), "
                 "recomputed %s (%zu bytes)", i, json_object_get(o, "name") ? " " : "",
                 json_object_get(o, "name") ? json_string_value(json_object_get(o, "name")) : "",
                 h, (long long)json_integer_value(json_object_get(o, "size")), got, bufs[i].len);
        diverge(r, rec, why);
        break;
      }
    }
    ft_ctx_clear_error(ctx);
  }
  for (i = 0; blobs && i < n_in; i++) free((void *)blobs[i].data);
  for (i = 0; bufs && i < n_out; i++) free(bufs[i].data);
  free(blobs);
  free(bufs);
  free(params);
}

static ft_status run_replay(ft_ctx *ctx, const char *dir, bool calls, ft_ledger_report *out) {
  if (out) memset(out, 0, sizeof *out);
  if (!dir) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "ledger: no directory given");
  json_t *recs;
  ft_ledger_health health;
  ft_status st = ft_ledger_load_records(ctx, dir, &recs, &health);
  if (st) return st;
  replay_state r = {0};
  r.divergences = json_array();
  r.missing = json_object();
  size_t i;
  json_t *rec;
  json_array_foreach(recs, i, rec) {
    const char *op = json_string_value(json_object_get(rec, "op"));
    const char *kname = json_string_value(json_object_get(rec, "kind"));
    ft_ledger_kind kind = ft_ledger_kind_from_name(kname);
    if (kind == FT_LEDGER_GUARD || calls != (kind == FT_LEDGER_CALL)) {
      r.not_applicable++;
      continue;
    }
    void *user = NULL;
    ft_ledger_replayer fn = ft_ledger_find_replayer(kind, op, &user);
    if (!fn) {
      char key[256];
      snprintf(key, sizeof key, "%s/%s", kname, op);
      not_replayable(&r, key);
      continue;
    }
    replay_one(ctx, dir, &r, rec, fn, user);
  }
  json_t *rep = json_pack(
      "{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o}", "command",
      calls ? "reexec" : "replay", "dir", dir, "health",
      health == FT_LEDGER_CLEAN ? "clean" : health == FT_LEDGER_TORN ? "torn" : "corrupt",
      "records", (json_int_t)json_array_size(recs), "checked", (json_int_t)r.checked, "ok",
      (json_int_t)(r.checked - r.diverged > 0 ? r.checked - r.diverged : 0), "diverged",
      (json_int_t)r.diverged, "not_replayable", (json_int_t)r.not_replayable, "not_applicable",
      (json_int_t)r.not_applicable, "first_bad_seq", (json_int_t)r.first_bad, "divergences",
      r.divergences, "not_replayable_by", r.missing);
  json_decref(recs);
  if (!rep) return ft_set_error(ctx, FT_ERR_NOMEM, "ledger: out of memory");
  if (out) ft_ledger_report_fill(out, rep);
  else json_decref(rep);
  return FT_OK;
}

ft_status ft_ledger_replay(ft_ctx *ctx, const char *dir, ft_ledger_report *out) {
  return run_replay(ctx, dir, false, out);
}

ft_status ft_ledger_reexec(ft_ctx *ctx, const char *dir, ft_ledger_report *out) {
  return run_replay(ctx, dir, true, out);
}

/* ---- diff ---- */

/* The fields that say what happened (not when, nor the chain). */
static json_t *semantic(const json_t *rec) {
  json_t *s = json_object();
  static const char *const keep[] = {"kind", "op", "params", "fired", "mode"};
  for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
    json_object_set(s, keep[i], json_object_get(rec, keep[i]));
  for (int io = 0; io < 2; io++) {
    json_t *arr = json_array(), *o;
    size_t j;
    json_array_foreach(json_object_get(rec, io ? "outputs" : "inputs"), j, o) {
      json_t *c = json_copy(o);
      json_object_del(c, "stored"); /* depends on the call logging level only */
      json_array_append_new(arr, c);
    }
    json_object_set_new(s, io ? "outputs" : "inputs", arr);
  }
  return s;
}

ft_status ft_ledger_diff(ft_ctx *ctx, const char *a, const char *b, ft_ledger_report *out) {
  if (out) memset(out, 0, sizeof *out);
  if (!a || !b) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "ledger diff: two directories needed");
  json_t *ra = NULL, *rb = NULL;
  ft_status st = ft_ledger_load_records(ctx, a, &ra, NULL);
  if (!st) st = ft_ledger_load_records(ctx, b, &rb, NULL);
  if (st) {
    json_decref(ra);
    return st;
  }
  size_t na = json_array_size(ra), nb = json_array_size(rb), n = na < nb ? na : nb, i;
  json_t *fields = json_array(), *ja = NULL, *jb = NULL;
  int64_t first = 0;
  for (i = 0; i < n && !first; i++) {
    json_t *sa = semantic(json_array_get(ra, i)), *sb = semantic(json_array_get(rb, i));
    static const char *const keys[] = {"fired", "inputs", "kind", "mode", "op", "outputs",
                                       "params"}; /* sorted: the report is canonical */
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
      if (!json_equal(json_object_get(sa, keys[k]), json_object_get(sb, keys[k])))
        json_array_append_new(fields, json_string(keys[k]));
    if (json_array_size(fields)) {
      first = (int64_t)i + 1;
      ja = json_incref(json_array_get(ra, i));
      jb = json_incref(json_array_get(rb, i));
    }
    json_decref(sa);
    json_decref(sb);
  }
  if (!first && na != nb) {
    first = (int64_t)n + 1;
    json_array_append_new(fields, json_string(na < nb ? "only in b" : "only in a"));
    ja = na > nb ? json_incref(json_array_get(ra, n)) : json_null();
    jb = nb > na ? json_incref(json_array_get(rb, n)) : json_null();
  }
  const char *va = na ? json_string_value(json_object_get(json_array_get(ra, 0), "version")) : NULL;
  const char *vb = nb ? json_string_value(json_object_get(json_array_get(rb, 0), "version")) : NULL;
  json_t *rep = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:b, s:o}", "command", "diff", "a", a,
                          "b", b, "records", (json_int_t)na, "records_b", (json_int_t)nb,
                          "first_bad_seq", (json_int_t)first, "same", !first, "fields", fields);
  if (rep && first) {
    json_object_set_new(rep, "record_a", ja ? ja : json_null());
    json_object_set_new(rep, "record_b", jb ? jb : json_null());
  } else {
    json_decref(ja);
    json_decref(jb);
  }
  if (rep && va && vb && strcmp(va, vb))
    json_object_set_new(rep, "note", json_string("the ledgers were written by different versions"));
  json_decref(ra);
  json_decref(rb);
  if (!rep) return ft_set_error(ctx, FT_ERR_NOMEM, "ledger: out of memory");
  if (out) ft_ledger_report_fill(out, rep);
  else json_decref(rep);
  return FT_OK;
}
