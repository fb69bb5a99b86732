/* tools/ftc_opt.c: `ftc opt`, equality saturation on a jaxpr (ft_optimize):
 * prints the jaxpr before and after, the rules that fired, the cost and
 * equation counts before and after, and with --explain the proofs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftc.h"

static void usage(void) {
  printf("usage: ftc opt FILE [--tier exact|algebraic] [--explain] [--grad [--argnums 0,2]] [--quiet]\n\n"
         "Optimizes the jaxpr in FILE by equality saturation (ft_optimize) and prints\n"
         "it before and after, the rules that fired with their counts, and the cost\n"
         "model (FLOPs + bytes/4 + 1 per equation) and equation counts before and after.\n\n"
         "options:\n"
         "  --tier exact      rewrites that keep every output bit (the default)\n"
         "  --tier algebraic  also reassociation, distribution, x*0, x-x, x+0.0, exp(log x),\n"
         "                    matrix-chain reordering (may change rounding)\n"
         "  --explain         print a proof (chain of rule applications) for each\n"
         "                    rewritten equation small enough to show\n"
         "  --grad            optimize the gradient of FILE (as ftc grad computes it)\n"
         "  --argnums 0,2     with --grad: the inputs to differentiate (default 0)\n"
         "  --quiet           print only the optimized jaxpr and the summary\n"
         "FILE '-' reads standard input.\n");
}

static int print_jaxpr(ft_ctx *ctx, const char *title, const ft_jaxpr *j) {
  char *s = ft_jaxpr_print(ctx, j);
  if (!s) return ftc_fail("opt", "out of memory");
  if (title) printf("# %s\n", title);
  printf("%s\n", s);
  ft_free(s);
  return 0;
}

int ftc_cmd_opt(int argc, char **argv) {
  if (ftc_wants_help(argc, argv)) {
    usage();
    return 0;
  }
  const char *file = NULL;
  ft_opt_tier tier = FT_OPT_EXACT;
  bool explain = false, grad = false, quiet = false;
  int argnums[64], n_argnums = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--tier")) {
      if (++i >= argc) return ftc_usage("opt", "--tier needs exact or algebraic");
      if (!strcmp(argv[i], "exact")) tier = FT_OPT_EXACT;
      else if (!strcmp(argv[i], "algebraic")) tier = FT_OPT_ALGEBRAIC;
      else return ftc_usage("opt", "unknown tier '%s' (exact or algebraic)", argv[i]);
    } else if (!strcmp(a, "--explain")) {
      explain = true;
    } else if (!strcmp(a, "--grad")) {
      grad = true;
    } else if (!strcmp(a, "--quiet")) {
      quiet = true;
    } else if (!strcmp(a, "--argnums")) {
      if (++i >= argc) return ftc_usage("opt", "--argnums needs a value such as 0,2");
      for (char *p = argv[i]; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || n_argnums == 64 || (*end && *end != ','))
          return ftc_usage("opt", "bad --argnums '%s'", argv[i]);
        argnums[n_argnums++] = (int)v;
        p = *end == ',' ? end + 1 : end;
      }
    } else if (a[0] == '-' && a[1]) {
      return ftc_usage("opt", "unknown option '%s'", a);
    } else if (file) {
      return ftc_usage("opt", "expected one FILE, got '%s' and '%s'", file, a);
    } else {
      file = a;
    }
  }
  if (!file) return ftc_usage("opt", "missing FILE");
  if (n_argnums && !grad) return ftc_usage("opt", "--argnums is only used with --grad");
  size_t len = 0;
  char *text = ftc_read_file(file, &len);
  if (!text) return ftc_fail("opt", "cannot read '%s'", file);
  ft_ctx *ctx = ftc_ctx_new();
  ft_jaxpr *j = ctx ? ft_parse(ctx, text, len, file) : NULL, *g = NULL, *r = NULL;
  ft_opt_report rep = {.want_proofs = explain};
  int rc = 1;
  if (!j) {
    ftc_fail("opt", "%s", ctx ? ft_ctx_error(ctx) : "out of memory");
    goto done;
  }
  if (grad && !(g = ft_grad(ctx, j, n_argnums, argnums, false))) {
    ftc_fail("opt", "grad: %s", ft_ctx_error(ctx));
    goto done;
  }
  const ft_jaxpr *in = g ? g : j;
  if (!quiet && print_jaxpr(ctx, g ? "before (the gradient)" : "before", in)) goto done;
  if (!(r = ft_optimize(ctx, in, tier, &rep))) {
    ftc_fail("opt", "%s", ft_ctx_error(ctx));
    goto done;
  }
  if (print_jaxpr(ctx, quiet ? NULL : "after", r)) goto done;
  printf("# tier %s: %d iteration%s, %s; e-graph %zu nodes, %zu classes\n",
         tier == FT_OPT_EXACT ? "exact" : "algebraic", rep.iterations,
         rep.iterations == 1 ? "" : "s", rep.stop_reason, rep.egraph_nodes, rep.egraph_classes);
  printf("# rules fired:%s\n", rep.n_rules ? "" : " none");
  for (int i = 0; i < rep.n_rules; i++) printf("#   %-22s %lld\n", rep.rules[i].name, (long long)rep.rules[i].count);
  printf("# equations: %d -> %d\n", rep.eqns_before, rep.eqns_after);
  printf("# cost:      %.6g -> %.6g (%.1f%%)\n", rep.cost_before, rep.cost_after,
         rep.cost_before > 0 ? 100.0 * (rep.cost_after - rep.cost_before) / rep.cost_before : 0.0);
  if (explain) {
    printf("# proofs (%d):\n", rep.n_proofs);
    for (int i = 0; i < rep.n_proofs; i++) printf("%s", rep.proofs[i]);
  }
  rc = 0;
done:
  ft_opt_report_free(&rep);
  ft_jaxpr_free(r);
  ft_jaxpr_free(g);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
  free(text);
  return rc;
}
