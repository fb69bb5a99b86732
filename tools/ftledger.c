/* tools/ftledger.c: the ledger's command-line tool: show, verify, replay,
 * reexec, repair, recover, diff, export, merge (per-rank ledgers). Every command takes --json to print
 * the library's report instead of text. Exit status: 0 all good; 1 torn
 * (verify), divergence (replay, reexec) or difference (diff); 2 a usage
 * error (as ftc); 3 the command could not run (not a ledger, I/O); 4
 * corrupt or unrecoverable (as fsck's 4: errors left uncorrected). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "blas_threads.h"
#include "ft.h"

enum { EXIT_OK = 0, EXIT_SOFT = 1, EXIT_USAGE = 2, EXIT_ERR = 3, EXIT_BAD = 4 };

typedef struct opts {
  bool json;
  const char *pos[2];     /* positional arguments */
  int npos;
  long long seq;          /* show --seq */
  const char *kind;       /* show --kind */
  const char *html, *dot, *records; /* export outputs */
  const char *out;        /* merge --out */
} opts;

static int usage(FILE *out) {
  fprintf(out,
          "usage: ftledger <command> [--json] ...\n\n"
          "  show DIR [--seq N] [--kind K]   list records (with --seq: IR before/after)\n"
          "  verify DIR                      check chain, sums, objects, parity\n"
          "                                  (exit 0 clean, 1 torn tail, 4 corrupt)\n"
          "  replay DIR                      recompute transforms; check output hashes\n"
          "  reexec DIR                      re-run logged calls; check outputs bit for bit\n"
          "  repair DIR                      rebuild damaged blocks from parity\n"
          "  recover DIR                     truncate a torn tail, catch parity up\n"
          "  diff A B                        first record where two ledgers diverge\n"
          "  export DIR [--html OUT] [--dot OUT] [--records OUT]   ('-' = stdout)\n"
          "  merge DIR [--out FILE]          join the per-rank ledgers DIR/rank0, rank1, ...\n"
          "                                  (ftc --ledger DIR under mpirun) into one JSON\n"
          "                                  line per record, {\"rank\":R,\"record\":...}, in\n"
          "                                  record order then rank order ('-' = stdout)\n\n"
          "verify DIR of per-rank ledgers checks each one, then that every rank ran the\n"
          "same programs (the jaxpr hashes of their calls) in the same order (exit 4 if not).\n"
          "--json prints the full report as JSON. Options take values as '--opt VALUE'\n"
          "or '--opt=VALUE'. --version prints the version.\n"
          "Exit 2: a usage error; 3: the command could not run (not a ledger, I/O).\n");
  return out == stdout ? EXIT_OK : EXIT_USAGE;
}

static int fail(const char *cmd, ft_ctx *ctx) {
  fprintf(stderr, "ftledger %s: %s\n", cmd, ft_ctx_error(ctx));
  return EXIT_ERR;
}

/* Parses the options after the command; on a usage error prints what is
 * wrong and returns false. "--opt=VALUE" is the same as "--opt VALUE". */
static bool parse_args(int argc, char **argv, opts *o) {
  memset(o, 0, sizeof *o);
  o->seq = -1;
  const char *cmd = argv[1];
  for (int i = 2; i < argc; i++) {
    char *a = argv[i], *eq = strncmp(a, "--", 2) ? NULL : strchr(a, '=');
    const char *val = NULL;
    if (eq) *eq = 0, val = eq + 1;  /* argv's strings are ours to modify */
    bool takes = !strcmp(a, "--seq") || !strcmp(a, "--kind") || !strcmp(a, "--html") ||
                 !strcmp(a, "--dot") || !strcmp(a, "--records") || !strcmp(a, "--out");
    if (takes && !val) {
      if (i + 1 >= argc) {
        fprintf(stderr, "ftledger %s: %s needs a value\n", cmd, a);
        return false;
      }
      val = argv[++i];
    } else if (!takes && val) {
      fprintf(stderr, "ftledger %s: %s takes no value\n", cmd, a);
      return false;
    }
    if (!strcmp(a, "--json")) o->json = true;
    else if (!strcmp(a, "--seq")) {
      char *end;
      errno = 0;
      o->seq = strtoll(val, &end, 10);
      if (end == val || *end || errno || o->seq < 1) {
        fprintf(stderr, "ftledger %s: --seq takes a record number (1, 2, ...), not '%s'\n", cmd, val);
        return false;
      }
    } else if (!strcmp(a, "--kind")) o->kind = val;
    else if (!strcmp(a, "--html")) o->html = val;
    else if (!strcmp(a, "--dot")) o->dot = val;
    else if (!strcmp(a, "--records")) o->records = val;
    else if (!strcmp(a, "--out")) o->out = val;
    else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "ftledger %s: unknown option '%s'\n", cmd, a);
      return false;
    } else if (o->npos < 2) o->pos[o->npos++] = a;
    else {
      fprintf(stderr, "ftledger %s: unexpected argument '%s'\n", cmd, a);
      return false;
    }
  }
  return true;
}

static const char *health_name(ft_ledger_health h) {
  return h == FT_LEDGER_CLEAN ? "clean" : h == FT_LEDGER_TORN ? "torn" : "corrupt";
}

static json_t *load(const char *text) {
  json_t *j = json_loads(text ? text : "{}", 0, NULL);
  return j ? j : json_object();
}

#define JI(j, k) ((long long)json_integer_value(json_object_get(j, k)))
#define JS(j, k) (json_string_value(json_object_get(j, k)) ? json_string_value(json_object_get(j, k)) : "")

static void print_problems(const json_t *rep) {
  size_t i;
  json_t *p;
  json_array_foreach(json_object_get(rep, "problems"), i, p) {
    printf("  %-7s %s", JS(p, "class"), JS(p, "file"));
    if (json_object_get(p, "offset")) printf(" @%lld", JI(p, "offset"));
    if (json_object_get(p, "seq")) printf(" (record %lld)", JI(p, "seq"));
    printf(": %s\n", JS(p, "what"));
  }
}

/* verify, recover and repair share their report shape. */
static int cmd_check(const char *cmd, const opts *o, ft_ctx *ctx) {
  ft_ledger_report r;
  ft_status st = !strcmp(cmd, "verify")    ? ft_ledger_verify(ctx, o->pos[0], &r)
                 : !strcmp(cmd, "recover") ? ft_ledger_recover(ctx, o->pos[0], &r)
                                           : ft_ledger_repair(ctx, o->pos[0], &r);
  if (!r.json) return fail(cmd, ctx);
  if (o->json) {
    puts(r.json);
  } else {
    json_t *rep = load(r.json);
    printf("ledger %s: %s - %lld records, %lld objects, %lld of %lld log bytes under parity\n",
           o->pos[0], health_name(r.health), JI(rep, "records"), JI(rep, "objects"),
           JI(rep, "covered_bytes"), JI(rep, "log_bytes"));
    if (!strcmp(cmd, "repair"))
      printf("repaired %lld blocks or files; %lld %s beyond repair\n",
             (long long)r.repaired_blocks, (long long)r.unrecoverable,
             r.unrecoverable == 1 ? "place" : "places");
    if (!strcmp(cmd, "recover") && r.repaired_blocks)
      printf("truncated a torn record of %lld bytes\n", (long long)r.repaired_blocks);
    print_problems(rep);
    if (st) fprintf(stderr, "ftledger %s: %s\n", cmd, ft_ctx_error(ctx));
    json_decref(rep);
  }
  int code = r.health == FT_LEDGER_CLEAN ? EXIT_OK : r.health == FT_LEDGER_TORN ? EXIT_SOFT
                                                                                : EXIT_BAD;
  if (strcmp(cmd, "verify") && st && code == EXIT_OK) code = EXIT_BAD;
  ft_ledger_report_free(&r);
  return code;
}

static int cmd_replay(const char *cmd, const opts *o, ft_ctx *ctx) {
  ft_ledger_report r;
  ft_status st = !strcmp(cmd, "replay") ? ft_ledger_replay(ctx, o->pos[0], &r)
                                        : ft_ledger_reexec(ctx, o->pos[0], &r);
  if (st) return fail(cmd, ctx);
  if (o->json) {
    puts(r.json);
  } else {
    json_t *rep = load(r.json);
    printf("%s %s: %lld records; %lld recomputed, %lld match, %lld diverged; %lld not "
           "replayable yet\n", cmd, o->pos[0], (long long)r.records, (long long)r.checked,
           JI(rep, "ok"), (long long)r.diverged, (long long)r.not_replayable);
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(rep, "not_replayable_by"), key, v)
      printf("  not replayable: %s x%lld\n", key, (long long)json_integer_value(v));
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(rep, "divergences"), i, d)
      printf("  DIVERGED #%lld %s %s: %s\n", JI(d, "seq"), JS(d, "kind"), JS(d, "op"),
             JS(d, "why"));
    if (r.first_bad_seq) printf("first divergence: record %lld\n", (long long)r.first_bad_seq);
    if (r.health != FT_LEDGER_CLEAN)
      printf("note: the log reads as %s; run 'ftledger %s %s'\n", health_name(r.health),
             r.health == FT_LEDGER_TORN ? "recover" : "repair", o->pos[0]);
    json_decref(rep);
  }
  int code = r.diverged ? EXIT_SOFT : EXIT_OK;
  ft_ledger_report_free(&r);
  return code;
}

static int cmd_diff(const opts *o, ft_ctx *ctx) {
  ft_ledger_report r;
  if (ft_ledger_diff(ctx, o->pos[0], o->pos[1], &r)) return fail("diff", ctx);
  if (o->json) {
    puts(r.json);
  } else if (!r.first_bad_seq) {
    printf("same: %lld records\n", (long long)r.records);
  } else {
    json_t *rep = load(r.json);
    printf("first divergence at record %lld; differs in:", (long long)r.first_bad_seq);
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(rep, "fields"), i, f) printf(" %s", json_string_value(f));
    printf("\n");
    for (int side = 0; side < 2; side++) {
      char *t = json_dumps(json_object_get(rep, side ? "record_b" : "record_a"),
                           JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
      printf("  %s: %s\n", side ? "b" : "a", t ? t : "?");
      free(t);
    }
    if (json_object_get(rep, "note")) printf("note: %s\n", JS(rep, "note"));
    json_decref(rep);
  }
  int code = r.first_bad_seq ? EXIT_SOFT : EXIT_OK;
  ft_ledger_report_free(&r);
  return code;
}

/* Prints a stored object's text (IR before/after), if it is text. */
static void show_object(ft_ctx *ctx, const char *dir, const json_t *o, const char *label) {
  void *d;
  size_t n;
  printf("    %-4s %s %.16s... (%lld B)%s\n", label, JS(o, "name"), JS(o, "hash"), JI(o, "size"),
         json_is_true(json_object_get(o, "stored")) ? "" : " not stored");
  if (!json_is_true(json_object_get(o, "stored"))) return;
  if (ft_ledger_object_read(ctx, dir, JS(o, "hash"), &d, &n)) {
    printf("      (%s)\n", ft_ctx_error(ctx));
    return;
  }
  bool text = memchr(d, 0, n) == NULL;
  if (text) printf("%s%s", (char *)d, n && ((char *)d)[n - 1] == '\n' ? "" : "\n");
  else printf("      (%zu bytes of binary data)\n", n);
  ft_free(d);
}

static int cmd_show(const opts *o, ft_ctx *ctx) {
  char *text = ft_ledger_export(ctx, o->pos[0], FT_LEDGER_JSON);
  if (!text) return fail("show", ctx);
  json_t *recs = load(text), *sel = json_array();
  ft_free(text);
  size_t i, j;
  json_t *rec, *x;
  json_array_foreach(recs, i, rec) {
    if ((o->seq < 0 || JI(rec, "seq") == o->seq) && (!o->kind || !strcmp(JS(rec, "kind"), o->kind)))
      json_array_append(sel, rec);
  }
  if (o->json) {
    char *t = json_dumps(sel, JSON_SORT_KEYS | JSON_COMPACT);
    puts(t ? t : "[]");
    free(t);
  }
  json_array_foreach(o->json ? NULL : sel, i, rec) {
    char *params = json_dumps(json_object_get(rec, "params"), JSON_SORT_KEYS | JSON_COMPACT);
    printf("#%-5lld %-9s %-12s %s  [%s]", JI(rec, "seq"), JS(rec, "kind"), JS(rec, "op"),
           params ? params : "{}", JS(rec, "mode"));
    if (json_object_get(rec, "time_ns")) printf("  %.3f ms", (double)JI(rec, "time_ns") / 1e6);
    printf("\n");
    free(params);
    for (int io = 0; io < 2; io++) {
      json_array_foreach(json_object_get(rec, io ? "outputs" : "inputs"), j, x) {
        if (o->seq >= 0) show_object(ctx, o->pos[0], x, io ? "out" : "in");
        else printf("    %-4s %s %.16s... (%lld B)\n", io ? "out" : "in", JS(x, "name"),
                    JS(x, "hash"), JI(x, "size"));
      }
    }
    if (!strcmp(JS(rec, "kind"), "guard")) {
      json_t *gp = json_object_get(rec, "params");
      printf("    guard %s fired in %s, equation %lld (%s), output %lld: %s\n", JS(rec, "op"),
             JS(gp, "engine"), JI(gp, "eqn"), JS(gp, "prim"), JI(gp, "output"), JS(gp, "decision"));
      printf("    %s\n", JS(gp, "message"));
    }
    json_t *fired = json_object_get(rec, "fired");
    if (json_array_size(fired)) {
      printf("    fired");
      json_array_foreach(fired, j, x) {
        if (json_object_get(x, "rule")) printf(" %s x%lld", JS(x, "rule"), JI(x, "count"));
      }
      printf("\n");
    }
  }
  if (!o->json && !json_array_size(sel)) printf("(no matching records)\n");
  json_decref(sel);
  json_decref(recs);
  return EXIT_OK;
}

/* '-' is standard output; a file is written whole or not at all. */
static int write_out(ft_ctx *ctx, const char *path, const char *text) {
  if (strcmp(path, "-")) return ft_file_write(ctx, "ftledger export", path, text, strlen(text)) ? -1 : 0;
  return fputs(text, stdout) < 0 ? -1 : 0;
}

static int cmd_export(const opts *o, ft_ctx *ctx) {
  const char *outs[3] = {o->records, o->html, o->dot};
  static const ft_ledger_format fmts[3] = {FT_LEDGER_JSON, FT_LEDGER_HTML, FT_LEDGER_DOT};
  static const char *const names[3] = {"records", "html", "dot"};
  if (!o->records && !o->html && !o->dot) {
    fprintf(stderr, "ftledger export: give --html OUT, --dot OUT or --records OUT\n");
    return EXIT_USAGE;
  }
  json_t *rep = json_pack("{s:s, s:s, s:{}}", "command", "export", "dir", o->pos[0], "written");
  for (int i = 0; i < 3; i++) {
    if (!outs[i]) continue;
    char *text = ft_ledger_export(ctx, o->pos[0], fmts[i]);
    if (!text) {
      json_decref(rep);
      return fail("export", ctx);
    }
    if (write_out(ctx, outs[i], text)) {
      if (strcmp(outs[i], "-")) fprintf(stderr, "%s\n", ft_ctx_error(ctx));
      else fprintf(stderr, "ftledger export: cannot write to standard output: %s\n", strerror(errno));
      ft_free(text);
      json_decref(rep);
      return EXIT_ERR;
    }
    json_object_set_new(json_object_get(rep, "written"), names[i],
                        json_pack("{s:s, s:I}", "path", outs[i], "bytes", (json_int_t)strlen(text)));
    ft_free(text);
  }
  if (o->json) {
    char *t = json_dumps(rep, JSON_SORT_KEYS | JSON_COMPACT);
    if (t) fprintf(stderr, "%s\n", t); /* stdout may carry an export */
    free(t);
  }
  json_decref(rep);
  return EXIT_OK;
}

/* ---- per-rank ledgers (issue 27, docs/spmd.md): ftc --ledger DIR under
 * mpirun writes DIR/rank0, DIR/rank1, ... */

/* The number of rank ledgers in dir (0: dir is not a set of them). */
static int num_ranks(const char *dir) {
  char p[4096];
  snprintf(p, sizeof p, "%s/log.jsonl", dir);
  FILE *f = fopen(p, "rb");
  if (f) return fclose(f), 0;
  int n = 0;
  for (;; n++) {
    snprintf(p, sizeof p, "%s/rank%d/log.jsonl", dir, n);
    if (!(f = fopen(p, "rb"))) return n;
    fclose(f);
  }
}

/* The records of rank r's log, parsed (a JSON array; NULL on I/O error). */
static json_t *rank_records(const char *dir, int r) {
  char p[4096];
  snprintf(p, sizeof p, "%s/rank%d/log.jsonl", dir, r);
  FILE *f = fopen(p, "rb");
  if (!f) return NULL;
  json_t *all = json_array();
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  while ((len = getline(&line, &cap, f)) > 0) {
    json_t *rec = json_loadb(line, (size_t)len, 0, NULL);
    if (rec) json_array_append_new(all, rec);
  }
  free(line);
  fclose(f);
  return all;
}

/* The program (jaxpr hash) of each call record, in order. */
static json_t *rank_programs(const json_t *recs) {
  json_t *progs = json_array(), *rec, *in;
  size_t i, k;
  json_array_foreach(recs, i, rec) {
    if (strcmp(JS(rec, "kind"), "call")) continue;
    json_array_foreach(json_object_get(rec, "inputs"), k, in)
      if (!strcmp(JS(in, "name"), "jaxpr")) json_array_append_new(progs, json_string(JS(in, "hash")));
  }
  return progs;
}

static int cmd_ranks_verify(const opts *o, ft_ctx *ctx, int n) {
  int worst = EXIT_OK;
  json_t *progs0 = NULL;
  for (int r = 0; r < n; r++) {
    char d[4096];
    snprintf(d, sizeof d, "%s/rank%d", o->pos[0], r);
    opts one = *o;
    one.pos[0] = d;
    one.json = false;
    int code = cmd_check("verify", &one, ctx);
    if (code > worst) worst = code;
    json_t *recs = rank_records(o->pos[0], r);
    if (!recs) {
      fprintf(stderr, "ftledger verify: cannot read %s/log.jsonl\n", d);
      json_decref(progs0);
      return EXIT_ERR;
    }
    json_t *progs = rank_programs(recs);
    json_decref(recs);
    if (r == 0) {
      progs0 = progs;
      continue;
    }
    size_t n0 = json_array_size(progs0), nr = json_array_size(progs);
    for (size_t c = 0; c < n0 || c < nr; c++) {
      const char *a = c < n0 ? json_string_value(json_array_get(progs0, c)) : "(none)";
      const char *b = c < nr ? json_string_value(json_array_get(progs, c)) : "(none)";
      if (strcmp(a, b)) {
        printf("ftledger verify: rank %d's call %zu ran program %s, rank 0's ran %s\n", r, c + 1, b, a);
        worst = EXIT_BAD;
        break;
      }
    }
    json_decref(progs);
  }
  if (worst == EXIT_OK)
    printf("ftledger verify: %d ranks ran the same programs (%zu calls each)\n", n, json_array_size(progs0));
  json_decref(progs0);
  return worst;
}

/* Every record of every rank: by seq, then rank. */
static int cmd_merge(const opts *o, ft_ctx *ctx) {
  int n = num_ranks(o->pos[0]);
  if (n == 0) {
    fprintf(stderr, "ftledger merge: %s holds no per-rank ledgers (rank0, rank1, ...)\n", o->pos[0]);
    return EXIT_ERR;
  }
  int code = cmd_ranks_verify(o, ctx, n);
  if (code != EXIT_OK) {
    fprintf(stderr, "ftledger merge: the rank ledgers do not verify (see above); nothing written\n");
    return code;
  }
  json_t **recs = calloc((size_t)n, sizeof *recs);
  size_t most = 0;
  for (int r = 0; recs && r < n; r++) {
    if (!(recs[r] = rank_records(o->pos[0], r))) {
      fprintf(stderr, "ftledger merge: cannot read rank %d\n", r);
      code = EXIT_ERR;
    } else if (json_array_size(recs[r]) > most) {
      most = json_array_size(recs[r]);
    }
  }
  const char *out = o->out ? o->out : "-";
  FILE *f = !recs || code ? NULL : strcmp(out, "-") ? fopen(out, "wb") : stdout;
  if (!code && !f) {
    fprintf(stderr, "ftledger merge: cannot write %s: %s\n", out, strerror(errno));
    code = EXIT_ERR;
  }
  for (size_t i = 0; f && i < most; i++)
    for (int r = 0; r < n; r++) {
      json_t *rec = json_array_get(recs[r], i);
      if (!rec) continue;
      json_t *line = json_pack("{s:i, s:O}", "rank", r, "record", rec);
      char *text = json_dumps(line, JSON_SORT_KEYS | JSON_COMPACT);
      if (text) fprintf(f, "%s\n", text);
      free(text);
      json_decref(line);
    }
  if (f && f != stdout && fclose(f)) {
    fprintf(stderr, "ftledger merge: cannot write %s: %s\n", out, strerror(errno));
    code = EXIT_ERR;
  }
  for (int r = 0; recs && r < n; r++) json_decref(recs[r]);
  free(recs);
  return code;
}

int main(int argc, char **argv) {
  tool_blas_single_threaded(argv);
  if (argc < 2) return usage(stderr);
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) return usage(stdout);
  if (!strcmp(cmd, "--version")) {
    printf("ftledger %s\n", ft_version());
    return EXIT_OK;
  }
  for (int i = 2; i < argc; i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return usage(stdout);
  static const char *const known[] = {"show", "verify", "replay", "reexec", "repair",
                                      "recover", "diff", "export", "merge"};
  bool found = false;
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) found |= !strcmp(cmd, known[i]);
  if (!found) {
    fprintf(stderr, "ftledger: unknown command '%s'\n", cmd);
    return usage(stderr);
  }
  opts o;
  if (!parse_args(argc, argv, &o)) return usage(stderr);
  int want = !strcmp(cmd, "diff") ? 2 : 1;
  if (o.npos != want) {
    fprintf(stderr, "ftledger %s: expected %s\n", cmd, want == 2 ? "two ledgers A B" : "one ledger DIR");
    return usage(stderr);
  }
  ft_ctx *ctx = ft_ctx_new(NULL);
  if (!ctx) return EXIT_ERR;
  int code;
  if (!strcmp(cmd, "show")) code = cmd_show(&o, ctx);
  else if (!strcmp(cmd, "replay") || !strcmp(cmd, "reexec")) code = cmd_replay(cmd, &o, ctx);
  else if (!strcmp(cmd, "diff")) code = cmd_diff(&o, ctx);
  else if (!strcmp(cmd, "export")) code = cmd_export(&o, ctx);
  else if (!strcmp(cmd, "merge")) code = cmd_merge(&o, ctx);
  else if (!strcmp(cmd, "verify") && num_ranks(o.pos[0]) > 0) code = cmd_ranks_verify(&o, ctx, num_ranks(o.pos[0]));
  else code = cmd_check(cmd, &o, ctx);
  ft_ctx_free(ctx);
  return code;
}
