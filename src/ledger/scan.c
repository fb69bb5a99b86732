/* src/ledger/scan.c: reading a ledger back and judging it. One scan serves
 * verify (report), recover (truncate a torn tail, catch parity up) and repair
 * (rebuild damaged blocks from Reed-Solomon parity, and parity from data that
 * its own hashes prove intact). Every byte of a cleanly closed ledger is under
 * some check: records by their sums and the chain, log bytes and parity blocks
 * by the block hashes in parity entries, entries and headers by their own
 * checksums, objects by their names. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "ledger/ledger.h"

#define MAX_PROBLEMS 100

static const char zero_hex[33] = "00000000000000000000000000000000";

/* Notes a problem; class "corrupt" or "torn". offset/seq -1: not applicable. */
static void problem(ft_lscan *s, const char *cls, const char *file, int64_t offset, int64_t seq,
                    const char *what) {
  if (!strcmp(cls, "corrupt")) s->corrupt = true;
  else s->torn = true;
  if (json_array_size(s->problems) >= MAX_PROBLEMS) return;
  json_t *p = json_pack("{s:s, s:s, s:s}", "class", cls, "file", file, "what", what);
  if (p && offset >= 0) json_object_set_new(p, "offset", json_integer(offset));
  if (p && seq >= 0) json_object_set_new(p, "seq", json_integer(seq));
  json_array_append_new(s->problems, p);
}

void ft_lscan_free(ft_lscan *s) {
  free(s->dir);
  free(s->log);
  free(s->par);
  free(s->tail);
  ft_rs_free(&s->rs);
  json_decref(s->records);
  json_decref(s->problems);
  memset(s, 0, sizeof *s);
}

ft_ledger_health ft_lscan_health(const ft_lscan *s) {
  return s->corrupt ? FT_LEDGER_CORRUPT : s->torn || s->parity_behind ? FT_LEDGER_TORN
                                                                      : FT_LEDGER_CLEAN;
}

/* ---- records ---- */

/* Checks every line of the log; fills records (the valid prefix), the first
 * bad seq, complete_len and the torn/corrupt verdict for a partial last line.
 * complete_len stops before a bad line past the parity's coverage (known
 * once check_log_parity ran: tail_ok). */
static void walk_records(ft_lscan *s) {
  char prev[33];
  memcpy(prev, zero_hex, 33);
  int64_t expect = 1;
  bool prefix_ok = true;
  size_t at = 0;
  while (at < s->log_len) {
    const uint8_t *nl = memchr(s->log + at, '\n', s->log_len - at);
    if (!nl) break;
    size_t len = (size_t)(nl - (s->log + at));
    json_t *rec = NULL;
    const char *why = ft_ledger_check_line((const char *)s->log + at, len, &rec);
    if (!why && json_integer_value(json_object_get(rec, "seq")) != expect) why = "seq out of order";
    if (!why && strcmp(json_string_value(json_object_get(rec, "prev")), prev))
      why = "chain broken: prev is not the sum of the record before";
    if (rec) snprintf(prev, sizeof prev, "%s", json_string_value(json_object_get(rec, "sum")));
    if (why && s->tail_ok && at >= s->covered) {
      /* Past what parity covers nothing was committed (log.tail is the
       * commit point): a line there that is not the next record is an
       * interrupted write, torn like a partial line; recover cuts it. */
      json_decref(rec);
      break;
    }
    if (why) {
      problem(s, "corrupt", "log.jsonl", (int64_t)at, expect, why);
      if (!s->first_bad_seq) s->first_bad_seq = expect;
      prefix_ok = false;
      json_decref(rec);
    } else {
      s->n_records++;
      if (prefix_ok) json_array_append_new(s->records, rec);
      else json_decref(rec);
    }
    expect++;
    at += len + 1;
  }
  s->complete_len = at;
}

/* ---- log parity ---- */

/* Block j of a log stripe, zero-padded past limit (the covered end). */
static void log_block(const ft_lscan *s, uint64_t base, int j, uint64_t limit, uint8_t *out) {
  uint64_t a = base + (uint64_t)j * s->block, b = a + s->block;
  if (b > limit) b = limit;
  if (b > s->log_len) b = s->log_len;
  size_t n = a < b ? (size_t)(b - a) : 0;
  if (n) memcpy(out, s->log + a, n);
  memset(out + n, 0, s->block - n);
}

typedef struct repair_stats {
  int64_t repaired, unrecoverable;
  bool wrote;
} repair_stats;

/* Checks one stripe of the log against its parity entry (whose checksum is
 * already good); with rs != NULL, rebuilds up to m damaged blocks in place:
 * in s->log (and the file) and in the entry (the caller writes it back). */
static void check_stripe(ft_lscan *s, const char *pfile, uint8_t *entry, uint64_t idx,
                         uint64_t covered, repair_stats *rs) {
  int k = s->k, m = s->m, n = k + m;
  ft_lpar_entry e;
  ft_lpar_entry_decode(entry, k, m, s->block, &e);
  uint64_t base = idx * (uint64_t)k * s->block, limit = base + covered;
  uint8_t *buf = malloc((size_t)n * s->block);
  if (!buf) return;
  uint8_t *blocks[96];
  bool lost[96];
  int nlost = 0;
  char what[160];
  for (int i = 0; i < n; i++) {
    blocks[i] = buf + (size_t)i * s->block;
    if (i < k) log_block(s, base, i, limit, blocks[i]);
    else memcpy(blocks[i], e.parity + (size_t)(i - k) * s->block, s->block);
    lost[i] = ft_lpar_block_hash(blocks[i], s->block) != ft_lpar_entry_hash(&e, i);
    if (!lost[i]) continue;
    nlost++;
    if (i < k) {
      snprintf(what, sizeof what, "log bytes damaged (stripe %llu, data block %d)",
               (unsigned long long)idx, i);
      problem(s, "corrupt", "log.jsonl", (int64_t)(base + (uint64_t)i * s->block), -1, what);
    } else {
      snprintf(what, sizeof what, "parity block damaged (stripe %llu, parity block %d)",
               (unsigned long long)idx, i - k);
      problem(s, "corrupt", pfile, -1, -1, what);
    }
  }
  if (rs && nlost) {
    bool ok = ft_rs_decode(&s->rs, s->block, blocks, lost) == 0;
    /* A rebuilt block is trusted only if it matches its recorded hash. */
    for (int i = 0; ok && i < n; i++)
      if (lost[i] && ft_lpar_block_hash(blocks[i], s->block) != ft_lpar_entry_hash(&e, i))
        ok = false;
    if (!ok) {
      rs->unrecoverable++;
    } else {
      for (int i = 0; i < n; i++) {
        if (!lost[i]) continue;
        rs->repaired++;
        if (i >= k) {
          memcpy((uint8_t *)e.parity + (size_t)(i - k) * s->block, blocks[i], s->block);
          continue;
        }
        uint64_t a = base + (uint64_t)i * s->block, b = a + s->block;
        if (b > limit) b = limit;
        if (a >= b) continue;
        if (b > s->log_len) {
          uint8_t *nl = realloc(s->log, (size_t)b + 1);
          if (!nl) continue;
          s->log = nl;
          memset(s->log + s->log_len, 0, (size_t)(b - s->log_len));
          s->log_len = (size_t)b;
        }
        memcpy(s->log + a, blocks[i], (size_t)(b - a));
      }
      rs->wrote = true;
    }
  }
  free(buf);
}

/* Reads log.par and log.tail, derives coverage, checks every stripe. */
static void check_log_parity(ft_lscan *s, repair_stats *rs) {
  size_t sw = (size_t)s->k * s->block;
  s->entry_size = ft_lpar_entry_size(s->k, s->m, s->block);
  size_t body = s->par_len >= FT_LPAR_HEADER ? s->par_len - FT_LPAR_HEADER : 0;
  s->n_entries = body / s->entry_size;
  if (body % s->entry_size) {
    s->par_torn = true;
    problem(s, "torn", "parity/log.par", (int64_t)(FT_LPAR_HEADER + s->n_entries * s->entry_size),
            -1, "partial parity entry (a write was interrupted)");
  }
  ft_lpar_header th;
  ft_lpar_entry te;
  s->tail_ok = s->tail_len == FT_LPAR_HEADER + s->entry_size &&
               ft_lpar_header_decode(s->tail, s->tail_len, &th) && th.kind == FT_LPAR_TAIL &&
               th.k == (uint32_t)s->k && th.m == (uint32_t)s->m && th.block == s->block &&
               ft_lpar_entry_decode(s->tail + FT_LPAR_HEADER, s->k, s->m, s->block, &te);
  s->covered = (uint64_t)s->n_entries * sw;
  if (s->log_len == 0 && s->n_entries == 0 && (!s->tail || !s->tail_ok)) {
    /* Nothing recorded yet, so nothing to protect: a missing tail, or one
     * left by an earlier creation with other parameters (a re-creation of
     * an empty ledger rewrites log.par, then the tail), is an interrupted
     * creation that recovery finishes. */
    problem(s, "torn", "parity/log.tail", -1, -1, "ledger creation was interrupted");
    s->tail_stale = true;
  } else if (!s->tail_ok) {
    problem(s, "corrupt", "parity/log.tail", -1, -1, "damaged or missing");
  } else if (te.stripe < s->n_entries) {
    s->tail_stale = true;
  } else if (te.stripe > s->n_entries) {
    problem(s, "corrupt", "parity/log.tail", -1, -1, "names a stripe past parity/log.par");
    s->tail_ok = false;
  } else {
    s->covered += te.covered;
  }
  for (size_t i = 0; i < s->n_entries; i++) {
    uint8_t *e = s->par + FT_LPAR_HEADER + i * s->entry_size;
    ft_lpar_entry pe;
    char what[96];
    if (!ft_lpar_entry_decode(e, s->k, s->m, s->block, &pe) || pe.stripe != i ||
        pe.covered != sw) {
      snprintf(what, sizeof what, "parity entry %zu damaged", i);
      problem(s, "corrupt", "parity/log.par", (int64_t)(e - s->par), -1, what);
      continue;
    }
    check_stripe(s, "parity/log.par", e, i, sw, rs);
  }
  if (s->tail_ok && !s->tail_stale)
    check_stripe(s, "parity/log.tail", s->tail + FT_LPAR_HEADER, s->n_entries, te.covered, rs);
}

/* ---- objects ---- */

static bool is_hex(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return s[n] == 0;
}

/* Parity of an object checked against its (known good or repaired) bytes. */
static bool objpar_ok(ft_lscan *s, const uint8_t *par, size_t plen, const uint8_t h[16],
                      const uint8_t *data, size_t len, bool check_blocks, ft_lpar_header *hd) {
  if (!ft_lpar_header_decode(par, plen, hd) || hd->kind != FT_LPAR_OBJ ||
      hd->k != (uint32_t)s->k || hd->m != (uint32_t)s->m || memcmp(hd->ident, h, 16))
    return false;
  size_t b = hd->block, sw = (size_t)s->k * b, es = ft_lpar_entry_size(s->k, s->m, b);
  size_t n = (size_t)((hd->data_len + sw - 1) / sw);
  if (plen != FT_LPAR_HEADER + n * es) return false;
  uint8_t *blk = malloc(b);
  bool ok = blk != NULL;
  for (size_t i = 0; ok && i < n; i++) {
    ft_lpar_entry e;
    const uint8_t *ep = par + FT_LPAR_HEADER + i * es;
    size_t want = hd->data_len - i * sw < sw ? (size_t)(hd->data_len - i * sw) : sw;
    ok = ft_lpar_entry_decode(ep, s->k, s->m, b, &e) && e.stripe == i && e.covered == want;
    for (int j = 0; ok && check_blocks && j < s->k + s->m; j++) {
      if (j < s->k) {
        size_t a = i * sw + (size_t)j * b, c = a + b < len ? a + b : len;
        size_t have = a < c ? c - a : 0;
        if (have) memcpy(blk, data + a, have);
        memset(blk + have, 0, b - have);
      } else {
        memcpy(blk, e.parity + (size_t)(j - s->k) * b, b);
      }
      ok = ft_lpar_block_hash(blk, b) == ft_lpar_entry_hash(&e, j);
    }
  }
  free(blk);
  return ok;
}

/* Rebuilds a damaged object from its parity; the result must hash to h. */
static uint8_t *rebuild_object(ft_lscan *s, const uint8_t *par, const ft_lpar_header *hd,
                               const uint8_t *data, size_t len, const uint8_t h[16]) {
  size_t b = hd->block, sw = (size_t)s->k * b, es = ft_lpar_entry_size(s->k, s->m, b);
  size_t n = (size_t)((hd->data_len + sw - 1) / sw), n_blk = (size_t)(s->k + s->m);
  uint8_t *out = calloc(1, n * sw + 1), *buf = malloc(n_blk * b);
  bool ok = out && buf;
  if (ok && data) memcpy(out, data, len < hd->data_len ? len : (size_t)hd->data_len);
  for (size_t i = 0; ok && i < n; i++) {
    ft_lpar_entry e;
    ft_lpar_entry_decode(par + FT_LPAR_HEADER + i * es, s->k, s->m, b, &e);
    uint8_t *blocks[96];
    bool lost[96];
    for (int j = 0; j < s->k + s->m; j++) {
      blocks[j] = j < s->k ? out + i * sw + (size_t)j * b : buf + (size_t)j * b;
      if (j >= s->k) memcpy(blocks[j], e.parity + (size_t)(j - s->k) * b, b);
      lost[j] = ft_lpar_block_hash(blocks[j], b) != ft_lpar_entry_hash(&e, j);
    }
    ok = ft_rs_decode(&s->rs, b, blocks, lost) == 0;
    /* Bytes past the object's end must come back as the zero padding. */
    if (ok && i == n - 1)
      for (size_t t = (size_t)hd->data_len; t < n * sw; t++) out[t] = 0;
  }
  uint8_t got[16];
  if (ok) ft_lhash128(out, (size_t)hd->data_len, got);
  free(buf);
  if (!ok || memcmp(got, h, 16)) {
    free(out);
    return NULL;
  }
  return out;
}

/* Checks (and with rs, repairs) one object and its parity file. */
static void check_object(ft_lscan *s, const char *hex, repair_stats *rs) {
  char *path = ft_ledger_object_path(s->dir, hex), *ppath = ft_ledger_objpar_path(s->dir, hex);
  char file[64];
  snprintf(file, sizeof file, "objects/%.2s/%s", hex, hex + 2);
  uint8_t h[16], got[16], *data = NULL, *par = NULL;
  size_t len = 0, plen = 0;
  ft_lunhex(hex, h);
  bool have = path && !ft_lio_read_file(path, &data, &len);
  if (have) ft_lhash128(data, len, got);
  bool good = have && !memcmp(got, h, 16);
  bool phave = ppath && !ft_lio_read_file(ppath, &par, &plen);
  ft_lpar_header hd;
  bool pok = phave && objpar_ok(s, par, plen, h, data, len, good, &hd);
  if (!good) problem(s, "corrupt", file, -1, -1, have ? "content does not match its hash"
                                                      : "missing");
  if (!pok)
    problem(s, "corrupt", ppath ? ppath + strlen(s->dir) + 1 : "parity/obj", -1, -1,
            "object parity damaged or missing");
  if (rs && good && !pok) {
    size_t n;
    uint8_t *np = ft_lpar_object_file(&s->rs, s->block, data, len, h, &n);
    if (np && !ft_lio_write_atomic(ppath, np, n, true)) rs->repaired++, rs->wrote = true;
    else rs->unrecoverable++;
    free(np);
  } else if (rs && !good) {
    uint8_t *fixed = phave && objpar_ok(s, par, plen, h, NULL, 0, false, &hd)
                         ? rebuild_object(s, par, &hd, data, len, h)
                         : NULL;
    if (fixed && !ft_lio_write_atomic(path, fixed, (size_t)hd.data_len, true))
      rs->repaired++, rs->wrote = true;
    else rs->unrecoverable++;
    free(fixed);
  }
  free(data);
  free(par);
  free(path);
  free(ppath);
}

/* Every object file, every object a record stores, and leftovers. With
 * cleanup, removes tmp files and parity files without an object. */
static void check_objects(ft_lscan *s, repair_stats *rs, bool cleanup) {
  json_t *seen = json_object();
  char *odir = ft_lio_path("%s/objects", s->dir);
  DIR *d = odir ? opendir(odir) : NULL;
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (!is_hex(de->d_name, 2)) continue;
    char *sub = ft_lio_path("%s/%s", odir, de->d_name);
    DIR *d2 = sub ? opendir(sub) : NULL;
    struct dirent *f;
    while (d2 && (f = readdir(d2))) {
      char hex[40];
      if (is_hex(f->d_name, 30)) {
        memcpy(hex, de->d_name, 2);
        memcpy(hex + 2, f->d_name, 31);
        json_object_set_new(seen, hex, json_true());
      } else if (cleanup && strstr(f->d_name, ".tmp")) {
        char *t = ft_lio_path("%s/%s", sub, f->d_name);
        if (t) unlink(t);
        free(t);
      }
    }
    if (d2) closedir(d2);
    free(sub);
  }
  if (d) closedir(d);
  free(odir);
  /* Objects the records say are stored must exist. */
  size_t i, j;
  json_t *rec, *o;
  json_array_foreach(s->records, i, rec) {
    for (int io = 0; io < 2; io++) {
      json_array_foreach(json_object_get(rec, io ? "outputs" : "inputs"), j, o) {
        const char *hex = json_string_value(json_object_get(o, "hash"));
        if (json_is_true(json_object_get(o, "stored")) && !json_object_get(seen, hex))
          json_object_set_new(seen, hex, json_false());
      }
    }
  }
  const char *hex;
  json_t *v;
  json_object_foreach(seen, hex, v) {
    s->n_objects++;
    check_object(s, hex, rs);
  }
  if (cleanup) {
    char *pdir = ft_lio_path("%s/parity/obj", s->dir);
    d = pdir ? opendir(pdir) : NULL;
    while (d && (de = readdir(d))) {
      if (de->d_name[0] == '.' || (is_hex(de->d_name, 32) && json_object_get(seen, de->d_name)))
        continue;
      char *t = ft_lio_path("%s/%s", pdir, de->d_name);
      if (t) unlink(t);
      free(t);
    }
    if (d) closedir(d);
    free(pdir);
  }
  json_decref(seen);
}

/* ---- the scan ---- */

static int read_opt(const char *dir, const char *name, uint8_t **data, size_t *len) {
  char *p = ft_lio_path("%s/%s", dir, name);
  int r = p ? ft_lio_read_file(p, data, len) : -1;
  free(p);
  return r;
}

/* Reads the files and the parameters (from log.par's header, else log.tail's). */
static ft_status load(ft_ctx *ctx, const char *dir, ft_lscan *s) {
  memset(s, 0, sizeof *s);
  s->dir = strdup(dir);
  s->problems = json_array();
  s->records = json_array();
  if (!s->dir || !s->problems || !s->records)
    return ft_set_error(ctx, FT_ERR_NOMEM, "ledger: out of memory");
  if (read_opt(dir, "log.jsonl", &s->log, &s->log_len))
    return ft_set_error(ctx, FT_ERR_IO, "%s is not a ledger: cannot read log.jsonl: %s", dir,
                        strerror(errno));
  read_opt(dir, "parity/log.par", &s->par, &s->par_len);
  read_opt(dir, "parity/log.tail", &s->tail, &s->tail_len);
  ft_lpar_header h;
  s->par_header_ok = s->par && ft_lpar_header_decode(s->par, s->par_len, &h) &&
                     h.kind == FT_LPAR_LOG;
  if (!s->par_header_ok && s->log_len == 0 && (!s->par || s->par_len < FT_LPAR_HEADER)) {
    /* Killed while creating the ledger: nothing was recorded yet. */
    problem(s, "torn", "parity/log.par", -1, -1, "ledger creation was interrupted");
    s->unborn = true;
    h = (ft_lpar_header){8, 2, 4096, FT_LPAR_LOG, 0, {0}};
  } else if (!s->par_header_ok) {
    problem(s, "corrupt", "parity/log.par", 0, -1, s->par ? "header damaged" : "missing");
    if (!(s->tail && ft_lpar_header_decode(s->tail, s->tail_len, &h) && h.kind == FT_LPAR_TAIL))
      return FT_OK;
  }
  s->params_ok = true;
  s->k = (int)h.k;
  s->m = (int)h.m;
  s->block = h.block;
  if (ft_rs_init(&s->rs, s->k, s->m)) return ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  return FT_OK;
}

/* Judges what load() read: parity, records, the tail, objects. */
static void judge(ft_lscan *s, repair_stats *rs, bool cleanup) {
  if (s->params_ok && s->par_header_ok) check_log_parity(s, rs);
  else if (s->unborn) s->parity_behind = true;
  else s->corrupt = true;
  walk_records(s);
  if (s->complete_len < s->log_len) {
    if (s->params_ok && s->complete_len >= s->covered)
      problem(s, "torn", "log.jsonl", (int64_t)s->complete_len, s->n_records + 1,
              "torn last record (a write was interrupted)");
    else
      problem(s, "corrupt", "log.jsonl", (int64_t)s->complete_len, s->n_records + 1,
              "partial record inside the region parity covers");
  }
  if (s->params_ok && s->par_header_ok) {
    if (s->covered > s->log_len)
      problem(s, "corrupt", "log.jsonl", (int64_t)s->log_len, -1,
              "shorter than its parity says (bytes lost)");
    else if (s->covered && s->log[s->covered - 1] != '\n' && s->tail_ok && !s->tail_stale)
      /* A fresh tail always ends at a record; a stale one at a stripe edge. */
      problem(s, "corrupt", "parity/log.tail", -1, -1, "parity ends inside a record");
    else if (s->covered < s->complete_len || s->tail_stale || s->par_torn)
      s->parity_behind = true;
  }
  if (s->params_ok) check_objects(s, rs, cleanup);
}

ft_status ft_lscan_run(ft_ctx *ctx, const char *dir, ft_lscan *s) {
  ft_status st = load(ctx, dir, s);
  if (!st) judge(s, NULL, false);
  return st;
}

ft_status ft_ledger_load_records(ft_ctx *ctx, const char *dir, json_t **records,
                                 ft_ledger_health *health) {
  ft_lscan s;
  ft_status st = load(ctx, dir, &s);
  if (!st) {
    walk_records(&s);
    if (s.complete_len < s.log_len) s.torn = true;
    *records = json_incref(s.records);
    if (health) *health = ft_lscan_health(&s);
  }
  ft_lscan_free(&s);
  return st;
}

/* ---- reports ---- */

static const char *health_name(ft_ledger_health h) {
  return h == FT_LEDGER_CLEAN ? "clean" : h == FT_LEDGER_TORN ? "torn" : "corrupt";
}

void ft_ledger_report_fill(ft_ledger_report *out, json_t *rep) {
  memset(out, 0, sizeof *out);
  const char *h = json_string_value(json_object_get(rep, "health"));
  out->health = !h || !strcmp(h, "clean") ? FT_LEDGER_CLEAN
                : !strcmp(h, "torn")      ? FT_LEDGER_TORN
                                          : FT_LEDGER_CORRUPT;
#define GET(f) out->f = json_integer_value(json_object_get(rep, #f))
  GET(records);
  GET(first_bad_seq);
  GET(checked);
  GET(diverged);
  GET(not_replayable);
  GET(repaired_blocks);
  GET(unrecoverable);
#undef GET
  out->json = ft_ledger_canon(rep);
  json_decref(rep);
}

void ft_ledger_report_free(ft_ledger_report *r) {
  if (!r) return;
  free(r->json);
  memset(r, 0, sizeof *r);
}

static json_t *scan_report(const char *cmd, const ft_lscan *s) {
  return json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:O}", "command", cmd, "dir",
                   s->dir, "health", health_name(ft_lscan_health(s)), "records",
                   (json_int_t)s->n_records, "first_bad_seq", (json_int_t)s->first_bad_seq,
                   "objects", (json_int_t)s->n_objects, "log_bytes", (json_int_t)s->log_len,
                   "covered_bytes", (json_int_t)s->covered, "problems", s->problems);
}

static void fill_from_scan(ft_ledger_report *out, const char *cmd, const ft_lscan *s,
                           int64_t repaired, int64_t unrecoverable) {
  json_t *rep = scan_report(cmd, s);
  if (!strcmp(cmd, "recover")) json_object_set_new(rep, "truncated_bytes", json_integer(repaired));
  json_object_set_new(rep, "repaired_blocks", json_integer(repaired));
  json_object_set_new(rep, "unrecoverable", json_integer(unrecoverable));
  if (out) ft_ledger_report_fill(out, rep);
  else json_decref(rep);
}

ft_status ft_ledger_verify(ft_ctx *ctx, const char *dir, ft_ledger_report *out) {
  if (out) memset(out, 0, sizeof *out);
  if (!dir) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "ledger: no directory given");
  ft_lscan s;
  ft_status st = ft_lscan_run(ctx, dir, &s);
  if (!st) fill_from_scan(out, "verify", &s, 0, 0);
  ft_lscan_free(&s);
  return st;
}

/* ---- recover and repair ---- */

/* An exclusive lock on the ledger (the writer's lock), or -1. */
static int lock_ledger(ft_ctx *ctx, const char *dir) {
  char *p = ft_lio_path("%s/log.jsonl", dir);
  int fd = p ? open(p, O_RDWR | O_CLOEXEC) : -1;
  free(p);
  if (fd < 0) {
    ft_set_error(ctx, FT_ERR_IO, "%s is not a ledger: cannot open log.jsonl: %s", dir,
                 strerror(errno));
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB)) {
    close(fd);
    ft_set_error(ctx, FT_ERR_IO, "ledger %s: in use by a writer", dir);
    return -1;
  }
  return fd;
}

int ft_lscan_rebuild_log_parity(ft_lscan *s, size_t from, bool sync) {
  size_t sw = (size_t)s->k * s->block, es = ft_lpar_entry_size(s->k, s->m, s->block);
  size_t full = s->log_len / sw;
  uint8_t *stripe = calloc(1, sw), *buf = malloc(FT_LPAR_HEADER + (full - from + 1) * es);
  char *ppath = ft_lio_path("%s/parity/log.par", s->dir);
  char *tpath = ft_lio_path("%s/parity/log.tail", s->dir);
  char *pdir = ft_lio_path("%s/parity", s->dir);
  int r = stripe && buf && ppath && tpath && pdir && !ft_lio_mkdir(pdir) ? 0 : -1;
  free(pdir);
  ft_lpar_header h = {(uint32_t)s->k, (uint32_t)s->m, (uint32_t)s->block, FT_LPAR_LOG, 0, {0}};
  if (!r) ft_lpar_header_encode(&h, buf);
  for (size_t i = from; !r && i <= full; i++) {
    size_t have = s->log_len - i * sw < sw ? s->log_len - i * sw : sw;
    memcpy(stripe, s->log + i * sw, have);
    memset(stripe + have, 0, sw - have);
    ft_lpar_entry_build(&s->rs, s->block, i, have, stripe,
                        buf + FT_LPAR_HEADER + (i - from) * es);
  }
  if (!r && from == 0) {
    r = ft_lio_write_atomic(ppath, buf, FT_LPAR_HEADER + full * es, sync);
  } else if (!r) {
    int fd = open(ppath, O_RDWR | O_CLOEXEC);
    uint64_t off = FT_LPAR_HEADER + from * es;
    r = fd < 0 || ftruncate(fd, (off_t)off) ||
        ft_lio_pwrite(fd, buf + FT_LPAR_HEADER, (full - from) * es, off) || (sync && ft_lio_fsync(fd));
    if (fd >= 0) close(fd);
  }
  if (!r) {
    /* The tail file is the header (tail kind) and the entry of stripe 'full'. */
    uint8_t *t = buf + FT_LPAR_HEADER + (full - from) * es - FT_LPAR_HEADER;
    uint8_t save[FT_LPAR_HEADER];
    memcpy(save, t, FT_LPAR_HEADER);
    h.kind = FT_LPAR_TAIL;
    ft_lpar_header_encode(&h, t);
    r = ft_lio_write_atomic(tpath, t, FT_LPAR_HEADER + es, sync);
    memcpy(t, save, FT_LPAR_HEADER);
  }
  free(stripe);
  free(buf);
  free(ppath);
  free(tpath);
  return r;
}

ft_status ft_ledger_recover(ft_ctx *ctx, const char *dir, ft_ledger_report *out) {
  if (out) memset(out, 0, sizeof *out);
  if (!dir) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "ledger: no directory given");
  int lock = lock_ledger(ctx, dir);
  if (lock < 0) return FT_ERR_IO;
  ft_lscan s;
  ft_status st = ft_lscan_run(ctx, dir, &s);
  int64_t cut = 0;
  if (!st && s.corrupt) {
    fill_from_scan(out, "recover", &s, 0, 0);
    st = ft_set_error(ctx, FT_ERR_IO, "ledger %s is damaged, not just torn: nothing was "
                      "changed; run 'ftledger repair %s'", dir, dir);
  } else if (!st) {
    if (s.complete_len < s.log_len) {
      cut = (int64_t)(s.log_len - s.complete_len);
      if (ftruncate(lock, (off_t)s.complete_len)) st = FT_ERR_IO;
      s.log_len = s.complete_len;
    }
    if (!st && (s.parity_behind || s.torn) &&
        ft_lscan_rebuild_log_parity(&s, s.n_entries, true))
      st = FT_ERR_IO;
    if (st) ft_set_error(ctx, st, "ledger %s: recover could not write: %s", dir, strerror(errno));
    /* Crash leftovers: tmp files and parity of objects never written. */
    if (!st) check_objects(&s, NULL, true);
    for (int i = 0; !st && i < 2; i++) {
      char *t = ft_lio_path("%s/parity/log.%s.tmp", dir, i ? "tail" : "par");
      if (t) unlink(t);
      free(t);
    }
    ft_lscan_free(&s);
    if (!st) st = ft_lscan_run(ctx, dir, &s);
    if (!st) {
      fill_from_scan(out, "recover", &s, cut, 0);
      if (ft_lscan_health(&s) != FT_LEDGER_CLEAN)
        st = ft_set_error(ctx, FT_ERR_IO, "ledger %s: still not clean after recover", dir);
    }
  }
  ft_lscan_free(&s);
  close(lock);
  return st;
}

/* Writes the repaired log bytes and log parity back. */
static int write_back(ft_lscan *s) {
  char *lp = ft_lio_path("%s/log.jsonl", s->dir), *pp = ft_lio_path("%s/parity/log.par", s->dir);
  char *tp = ft_lio_path("%s/parity/log.tail", s->dir);
  int r = lp && pp && tp ? 0 : -1;
  int fd = r ? -1 : open(lp, O_WRONLY | O_CLOEXEC);
  /* Rewriting equal bytes is harmless; only damaged blocks differ. */
  if (fd < 0 || ft_lio_pwrite(fd, s->log, s->log_len, 0) || ft_lio_fsync(fd)) r = -1;
  if (fd >= 0) close(fd);
  fd = r ? -1 : open(pp, O_WRONLY | O_CLOEXEC);
  if (!r && (fd < 0 || ft_lio_pwrite(fd, s->par, s->par_len, 0) || ft_lio_fsync(fd))) r = -1;
  if (fd >= 0) close(fd);
  if (!r && s->tail_ok) r = ft_lio_write_atomic(tp, s->tail, s->tail_len, true);
  free(lp);
  free(pp);
  free(tp);
  return r;
}

ft_status ft_ledger_repair(ft_ctx *ctx, const char *dir, ft_ledger_report *out) {
  if (out) memset(out, 0, sizeof *out);
  if (!dir) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "ledger: no directory given");
  int lock = lock_ledger(ctx, dir);
  if (lock < 0) return FT_ERR_IO;
  ft_lscan s;
  repair_stats rs = {0, 0, false};
  ft_status st = load(ctx, dir, &s);
  if (!st) {
    judge(&s, &rs, false);
    if (rs.wrote && write_back(&s))
      st = ft_set_error(ctx, FT_ERR_IO, "ledger %s: cannot write repairs: %s", dir,
                        strerror(errno));
  }
  /* Parity damaged beyond its own repair is rebuilt from data that verifies. */
  if (!st) {
    ft_lscan_free(&s);
    st = ft_lscan_run(ctx, dir, &s);
  }
  if (!st && s.corrupt && s.params_ok && !s.first_bad_seq && s.complete_len == s.log_len &&
      s.covered <= s.log_len) {
    bool only_parity = true;
    size_t i;
    json_t *p;
    json_array_foreach(s.problems, i, p) {
      const char *f = json_string_value(json_object_get(p, "file"));
      if (strncmp(f, "parity/log.", 11)) only_parity = false;
    }
    if (only_parity) {
      if (ft_lscan_rebuild_log_parity(&s, 0, true)) {
        st = ft_set_error(ctx, FT_ERR_IO, "ledger %s: cannot rewrite parity", dir);
      } else {
        rs.repaired++;
        ft_lscan_free(&s);
        st = ft_lscan_run(ctx, dir, &s);
      }
    }
  }
  if (!st) {
    /* What is left: the stripes and objects parity could not rebuild, or,
     * when the damage is not of that kind (a parity entry and its data, a
     * record rewritten with its parity), each damaged place the rescan
     * found. The report and the message give the same number. */
    int64_t left = rs.unrecoverable;
    if (s.corrupt && !left) {
      size_t i;
      json_t *p;
      json_array_foreach(s.problems, i, p)
        left += !strcmp(json_string_value(json_object_get(p, "class")), "corrupt");
      if (!left) left = 1;
    }
    if (!s.corrupt) left = 0;
    fill_from_scan(out, "repair", &s, rs.repaired, left);
    if (s.corrupt)
      st = ft_set_error(ctx, FT_ERR_IO, "ledger %s: damage remains that parity cannot repair "
                        "(%lld %s beyond repair; 'ftledger verify %s' lists them); nothing "
                        "was guessed", dir, (long long)left,
                        left == 1 ? "place" : "places", dir);
  }
  ft_lscan_free(&s);
  close(lock);
  return st;
}
