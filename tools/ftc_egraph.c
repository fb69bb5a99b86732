/* tools/ftc_egraph.c: `ftc egraph RULES TERMS`: runs equality saturation
 * with the engine in src/egraph on a rule file and a terms file, printing
 * per-iteration statistics, the final sizes, and optionally a proof of an
 * equality and the cheapest extracted terms. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frankentrace_egraph.h"
#include "ftc.h"

static void help(void) {
  printf("usage: ftc egraph RULES TERMS [options]\n\n"
         "Adds every term of TERMS (one a line) to one e-graph and runs the rules of\n"
         "RULES (`name: LHS => RHS`, one a line) by equality saturation: each iteration\n"
         "searches all rules, applies all matches, then rebuilds once (egg's semantics).\n\n"
         "options:\n"
         "  --iters N             iteration limit (default 10)\n"
         "  --scheduler S         simple (every match; default) or backoff (egg's:\n"
         "                        match limit 1000, ban length 5, both doubling)\n"
         "  --node-limit K        stop when the e-graph has more than K e-nodes\n"
         "  --time-limit S        stop after S seconds\n"
         "  --memory-limit MB     stop when the engine's arrays exceed MB megabytes\n"
         "  --rules-stats         also print the matches of every rule per iteration\n"
         "  --extract             print the cheapest term (AST size) of each start term\n"
         "  --explain A B         prove that terms A and B are equal (both are added\n"
         "                        before running; explanations are recorded)\n"
         "  -q, --quiet           print only the final sizes\n"
         "  -h, --help            this help\n\n"
         "Exit status: 0 on success, 1 on bad input (rule errors show line:col), 2 on\n"
         "bad usage, 3 when --explain's terms did not become equal.\n");
}

typedef struct {
  bool rules_stats, quiet;
} print_opts;

static void on_iter(void *ud, const ft_egraph *eg, const ft_egraph_rules *rs, size_t iter,
                    const ft_egraph_iter_stats *st) {
  const print_opts *po = ud;
  (void)eg;
  if (po->quiet) return;
  if (iter == 0)
    printf("%5s %12s %12s %12s %12s %9s %9s %9s %9s\n", "iter", "e-nodes", "e-classes", "matches",
           "applied", "search_s", "apply_s", "rebuild_s", "total_s");
  printf("%5zu %12zu %12zu %12zu %12zu %9.4f %9.4f %9.4f %9.4f\n", iter + 1, st->nodes,
         st->classes, st->total_matches, st->total_applied, st->search_s, st->apply_s,
         st->rebuild_s, st->total_s);
  if (po->rules_stats)
    for (size_t r = 0; r < ft_egraph_rules_count(rs); r++)
      if (st->matches[r])
        printf("        %-20s %12zu matches %12zu applied\n", ft_egraph_rule_name(rs, r),
               st->matches[r], st->applied[r]);
  fflush(stdout);
}

static bool parse_size(const char *s, size_t *out) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (!*s || *end) return false;
  *out = (size_t)v;
  return true;
}

static int explain(ft_egraph *eg, const ft_egraph_rules *rs, uint32_t ta, uint32_t tb) {
  ft_egraph_proof pf;
  ft_egraph_status s = ft_egraph_explain_ids(eg, rs, ta, tb, &pf);
  if (s == FT_EGRAPH_ENOTEQUAL) {
    printf("not equal: %s\n", ft_egraph_error(eg));
    return 3;
  }
  if (s != FT_EGRAPH_OK) return ftc_fail("egraph", "explain: %s", ft_egraph_error(eg));
  printf("proof (%zu steps):\n", pf.nsteps ? pf.nsteps - 1 : 0);
  for (size_t i = 0; i < pf.nsteps; i++) {
    if (pf.steps[i].rule < 0) printf("  %s\n", pf.steps[i].term);
    else
      printf("  = %s   [%s%s]\n", pf.steps[i].term, ft_egraph_rule_name(rs, (size_t)pf.steps[i].rule),
             pf.steps[i].backward ? " <=" : "");
  }
  ft_egraph_proof_free(&pf);
  return 0;
}

int ftc_cmd_egraph(int argc, char **argv) {
  if (ftc_wants_help(argc, argv)) {
    help();
    return 0;
  }
  const char *files[2] = {NULL, NULL}, *ex_a = NULL, *ex_b = NULL;
  int nfiles = 0;
  bool extract = false;
  print_opts po = {false, false};
  ft_egraph_run_opts o = ft_egraph_run_defaults();
  o.scheduler = FT_SCHED_SIMPLE;
  o.iter_limit = 10;
  o.node_limit = 0;
  o.time_limit = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool has = i + 1 < argc;
    if (!strcmp(a, "--iters") && has) {
      if (!parse_size(argv[++i], &o.iter_limit)) return ftc_fail("egraph", "--iters wants a count"), 2;
    } else if (!strcmp(a, "--scheduler") && has) {
      const char *s = argv[++i];
      if (!strcmp(s, "simple")) o.scheduler = FT_SCHED_SIMPLE;
      else if (!strcmp(s, "backoff")) o.scheduler = FT_SCHED_BACKOFF;
      else return ftc_fail("egraph", "--scheduler is simple or backoff, not '%s'", s), 2;
    } else if (!strcmp(a, "--node-limit") && has) {
      if (!parse_size(argv[++i], &o.node_limit)) return ftc_fail("egraph", "--node-limit wants a count"), 2;
    } else if (!strcmp(a, "--time-limit") && has) {
      char *end;
      o.time_limit = strtod(argv[++i], &end);
      if (*end || o.time_limit <= 0) return ftc_fail("egraph", "--time-limit wants seconds"), 2;
    } else if (!strcmp(a, "--memory-limit") && has) {
      size_t mb;
      if (!parse_size(argv[++i], &mb)) return ftc_fail("egraph", "--memory-limit wants megabytes"), 2;
      o.memory_limit = mb << 20;
    } else if (!strcmp(a, "--explain") && i + 2 < argc) {
      ex_a = argv[++i];
      ex_b = argv[++i];
    } else if (!strcmp(a, "--extract")) extract = true;
    else if (!strcmp(a, "--rules-stats")) po.rules_stats = true;
    else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) po.quiet = true;
    else if (a[0] == '-' && a[1]) return ftc_fail("egraph", "unknown or incomplete option '%s' (try --help)", a), 2;
    else if (nfiles < 2) files[nfiles++] = a;
    else return ftc_fail("egraph", "too many files (try --help)"), 2;
  }
  if (nfiles != 2) return ftc_fail("egraph", "wants RULES and TERMS files (try --help)"), 2;
  char *rules_text = ftc_read_file(files[0], NULL);
  if (!rules_text) return ftc_fail("egraph", "cannot read %s", files[0]);
  char *terms_text = ftc_read_file(files[1], NULL);
  if (!terms_text) {
    free(rules_text);
    return ftc_fail("egraph", "cannot read %s", files[1]);
  }
  int rc = 0;
  ft_egraph *eg = ft_egraph_new();
  ft_egraph_rules *rs = NULL;
  ft_eclass *roots = NULL;
  size_t nroots = 0;
  uint32_t ta = FT_EGRAPH_NONE, tb = FT_EGRAPH_NONE;
  if (!eg) {
    rc = ftc_fail("egraph", "out of memory");
    goto out;
  }
  if (ex_a) ft_egraph_enable_explanations(eg);
  if (!(rs = ft_egraph_rules_parse(eg, rules_text, files[0]))) {
    rc = ftc_fail("egraph", "%s", ft_egraph_error(eg));
    goto out;
  }
  if (ft_egraph_add_terms(eg, terms_text, files[1], &roots, &nroots) != FT_EGRAPH_OK) {
    rc = ftc_fail("egraph", "%s", ft_egraph_error(eg));
    goto out;
  }
  if (ex_a && ((ta = ft_egraph_add_term_id(eg, ex_a)) == FT_EGRAPH_NONE ||
               (tb = ft_egraph_add_term_id(eg, ex_b)) == FT_EGRAPH_NONE)) {
    rc = ftc_fail("egraph", "--explain: %s", ft_egraph_error(eg));
    goto out;
  }
  o.on_iter = on_iter;
  o.ud = &po;
  ft_egraph_report rep;
  if (ft_egraph_run(eg, rs, &o, &rep) != FT_EGRAPH_OK) {
    rc = ftc_fail("egraph", "%s", ft_egraph_error(eg));
    goto out;
  }
  printf("stop: %s after %zu iterations; e-nodes %zu, e-classes %zu; %.3f s\n",
         ft_egraph_stop_name(rep.stop), rep.niters, ft_egraph_num_nodes(eg),
         ft_egraph_num_classes(eg), rep.total_s);
  if (!po.quiet)
    printf("node ids %u (dead duplicates included), engine arrays %.1f MB\n",
           ft_egraph_num_ids(eg), (double)ft_egraph_memory(eg) / (1 << 20));
  if (rep.stop == FT_STOP_ERROR) rc = ftc_fail("egraph", "%s", ft_egraph_error(eg));
  ft_egraph_report_free(&rep);
  if (!rc && extract) {
    ft_egraph_term *t = ft_egraph_extract(eg, roots, nroots, FT_EXTRACT_TREE, NULL, NULL);
    if (!t) rc = ftc_fail("egraph", "extract: %s", ft_egraph_error(eg));
    for (size_t i = 0; t && i < t->nroots; i++) {
      char *s = ft_egraph_term_print(eg, t, i);
      printf("extract %zu: %s\n", i + 1, s ? s : "?");
      free(s);
    }
    ft_egraph_term_free(t);
  }
  if (!rc && ex_a) rc = explain(eg, rs, ta, tb);
out:
  free(roots);
  ft_egraph_rules_free(rs);
  ft_egraph_free(eg);
  free(rules_text);
  free(terms_text);
  return rc;
}
