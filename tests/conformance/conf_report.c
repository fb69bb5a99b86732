/* tests/conformance/conf_report.c: writes docs/conformance.md from a run of
 * the harness (conf_run). Everything in the file comes from the run, the
 * fixtures' manifests, the known-failure list and JAX's own primitive list
 * (fixtures/conformance/LAX_PRIMITIVES.json); nothing is typed by hand, and
 * nothing depends on the machine or the time, so a rerun on the same tree
 * gives the same file. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"

static const char *POLICY =
    "## Tolerance policy\n\n"
    "Every output of every case is compared with JAX's under one of five classes, chosen\n"
    "from the primitives of the program (the manifest lists them) and the output dtype:\n\n"
    "| class | applies to | bound |\n"
    "|---|---|---|\n"
    "| bitwise | integer and bool outputs; float outputs of programs made only of operations "
    "IEEE-754 makes exact (data movement, comparisons, selection, conversions, integer ops, "
    "`add sub mul div sqrt neg abs rem max min square nextafter`, sort, gather/scatter) "
    "| identical bits (any NaN matches any NaN) |\n"
    "| ULP | a float output of one transcendental primitive | that primitive's bound for the "
    "dtype (the table below; 16-bit floats: 1 ulp) |\n"
    "| reduction | sums, products, dots, convolutions, FFTs (our order is the canonical one of "
    "docs/determinism.md, XLA's is its own) | `|got - want| <= (2n + 4) eps S`, n the reduction "
    "length, eps the dtype's epsilon, S the largest finite `|want|` of that output (or 4 ulp) |\n"
    "| arithmetic chain | float programs of two or more different arithmetic ops and nothing "
    "inexact else: XLA contracts `a*b+c` into an FMA and divides by a constant through its "
    "reciprocal, FrankenTrace does neither (docs/determinism.md §1) | `|got - want| <= 8 eps S` "
    "(or 4 ulp) |\n"
    "| composite | whole programs, and everything produced by our own transforms (a "
    "different program from JAX's) | `|got - want| <= 16 (n + 8) eps S` (or 16 ulp) |\n\n"
    "An infinity must match exactly. XLA on CPU flushes subnormals (FTZ/DAZ) and FrankenTrace "
    "does not (docs/determinism.md §1): a subnormal of ours matches JAX's zero, and an element "
    "also passes when our result on the inputs with subnormals flushed to zero passes.\n"
    "Where one of our elements is beyond the bound, it is checked against a long double "
    "reference: if JAX's value is the less accurate one (and ours is within the bound of the "
    "reference) the element is recorded under *Where JAX is less accurate* and does not fail; "
    "the bound is never loosened for it.\n\n";

static int cmp_pstat(const void *a, const void *b) {
  const conf_pstat *x = a, *y = b;
  int c = strcmp(x->prim, y->prim);
  return c ? c : (int)x->dt - (int)y->dt;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A skip reason without the case-specific tail (names of vars, shapes). */
static void reason_key(const char *r, char *out, size_t n) {
  snprintf(out, n, "%.120s", r);
  char *p = strstr(out, " (eqn");
  if (p) *p = 0;
  if (strlen(out) > 110) strcpy(out + 107, "...");
}

static void write_skips(const conf_stats *st, FILE *f) {
  typedef struct { char key[128]; int n; char ex[96]; } agg;
  agg *a = calloc((size_t)st->n_notes + 1, sizeof *a);
  int na = 0;
  for (int i = 0; i < st->n_notes; i++) {
    const conf_note *nt = &st->notes[i];
    if (nt->status != CONF_SKIP) continue;
    char key[128];
    reason_key(nt->reason, key, sizeof key);
    int k = 0;
    while (k < na && strcmp(a[k].key, key)) k++;
    if (k == na) {
      snprintf(a[na].key, sizeof a[na].key, "%s", key);
      snprintf(a[na].ex, sizeof a[na].ex, "%.60s (%.30s)", nt->case_name, nt->check);
      na++;
    }
    a[k].n++;
  }
  fprintf(f, "## Skipped checks, by reason\n\n");
  if (!na) fprintf(f, "None.\n\n");
  else {
    fprintf(f, "| reason | checks | first case |\n|---|---|---|\n");
    for (int i = 0; i < na; i++) fprintf(f, "| %s | %d | %s |\n", a[i].key, a[i].n, a[i].ex);
    fprintf(f, "\n");
  }
  free(a);
}

static void write_notes(const conf_stats *st, FILE *f, conf_status which, const char *title,
                        const char *none) {
  int n = 0;
  for (int i = 0; i < st->n_notes; i++) n += st->notes[i].status == which;
  fprintf(f, "## %s (%d)\n\n", title, n);
  if (!n) {
    fprintf(f, "%s\n\n", none);
    return;
  }
  fprintf(f, "| case | check | reason |\n|---|---|---|\n");
  for (int i = 0; i < st->n_notes; i++) {
    const conf_note *nt = &st->notes[i];
    if (nt->status == which) fprintf(f, "| %s | %s | %s |\n", nt->case_name, nt->check, nt->reason);
  }
  fprintf(f, "\n");
}

/* The known failures grouped by reason (entries that share a reason share
 * its text): the entries, how many checks and cases each reason covers in
 * this run, and its cases (the first ones, when there are many). */
static void write_known(const conf_stats *st, FILE *f) {
  fprintf(f, "## Known failures, by reason\n\n"
             "The list in `tests/conformance/conf_known.c`: entries (case glob / check glob) "
             "grouped by their reason, with how many checks and cases they matched in this run. "
             "A check an entry names that passes fails the test (\"unexpected pass\"), so an "
             "entry is removed when its cause is fixed.\n\n");
  if (!conf_n_known_failures) fprintf(f, "(empty)\n\n");
  bool *done = calloc((size_t)conf_n_known_failures + 1, sizeof *done);
  for (int i = 0; i < conf_n_known_failures; i++) {
    if (done[i]) continue;
    const char *why = conf_known_failures[i].reason;
    int checks = 0, cases = 0, listed = 0;
    const char *last = "";
    for (int j = i; j < conf_n_known_failures; j++)
      if (conf_known_failures[j].reason == why || !strcmp(conf_known_failures[j].reason, why))
        done[j] = true;
    for (int n = 0; n < st->n_notes; n++) {
      const conf_note *nt = &st->notes[n];
      if (nt->status != CONF_KNOWN || nt->known < 0 ||
          strcmp(conf_known_failures[nt->known].reason, why))
        continue;
      checks++;
      if (strcmp(last, nt->case_name)) cases++, last = nt->case_name;
    }
    fprintf(f, "- %s\n  - %d checks in %d cases; entries:", why, checks, cases);
    for (int j = i; j < conf_n_known_failures; j++)
      if (!strcmp(conf_known_failures[j].reason, why))
        fprintf(f, " K%d `%s` / `%s`;", j + 1, conf_known_failures[j].case_glob,
                conf_known_failures[j].check_glob);
    fprintf(f, "\n  - cases:");
    last = "";
    for (int n = 0; n < st->n_notes && listed < 12; n++) {
      const conf_note *nt = &st->notes[n];
      if (nt->status != CONF_KNOWN || nt->known < 0 ||
          strcmp(conf_known_failures[nt->known].reason, why) || !strcmp(last, nt->case_name))
        continue;
      fprintf(f, "%s%s", listed ? ", " : " ", nt->case_name);
      last = nt->case_name, listed++;
    }
    fprintf(f, "%s\n", cases > listed ? ", ..." : listed ? "" : " none in this run");
  }
  fprintf(f, "\n");
  free(done);
}

static void write_prims(const conf_stats *st, FILE *f) {
  conf_pstat *ps = malloc(((size_t)st->n_ps + 1) * sizeof *ps);
  memcpy(ps, st->ps, (size_t)st->n_ps * sizeof *ps);
  qsort(ps, (size_t)st->n_ps, sizeof *ps, cmp_pstat);
  fprintf(f, "## Largest error per primitive\n\n"
             "From the interpreter on the per-primitive cases (family `prim`) and the golden "
             "cases with a single primitive: the largest distance from JAX's value over all "
             "outputs of that primitive and dtype, in ulps of the dtype (and in eps*S, see the "
             "policy), and the bound it is held to.\n\n"
             "| primitive | dtype | outputs | bitwise | max ulp | max eps*S | bound | JAX less accurate |\n"
             "|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < st->n_ps; i++) {
    const conf_pstat *p = &ps[i];
    char bound[48];
    switch (p->tol.cls) {
    case CONF_EXACT: snprintf(bound, sizeof bound, "bitwise"); break;
    case CONF_ULP: snprintf(bound, sizeof bound, "%g ulp", p->tol.ulp); break;
    case CONF_REDUCE: snprintf(bound, sizeof bound, "(2n+4) eps*S"); break;
    case CONF_CHAIN: snprintf(bound, sizeof bound, "8 eps*S"); break;
    default: snprintf(bound, sizeof bound, "16(n+8) eps*S"); break;
    }
    fprintf(f, "| `%s` | %s | %d | %d | %.0f | %.2f | %s | %d |\n", p->prim, ft_dtype_name(p->dt),
            p->outputs, p->bitwise, p->max_ulp, p->max_nrm, bound, p->jax_less_accurate);
  }
  fprintf(f, "\n");
  free(ps);
}

static bool seen(const conf_stats *st, const char *p) {
  for (int i = 0; i < st->n_seen; i++)
    if (!strcmp(st->seen[i], p)) return true;
  return false;
}

static void write_coverage(const conf_stats *st, const char *lax_json, FILE *f) {
  fprintf(f, "## Coverage of JAX's primitives\n\n");
  json_error_t err;
  json_t *m = lax_json ? json_load_file(lax_json, 0, &err) : NULL;
  if (!m) {
    fprintf(f, "No primitive list (LAX_PRIMITIVES.json) was given.\n\n");
    return;
  }
  json_t *prims = json_object_get(m, "primitives");
  int total = 0, impl = 0, tested = 0, coll = 0, coll_impl = 0;
  size_t cap = json_object_size(prims) + 1;
  const char **missing = calloc(cap, sizeof *missing), **untested = calloc(cap, sizeof *untested);
  int n_missing = 0, n_untested = 0;
  const char *name;
  json_t *mod;
  json_object_foreach(prims, name, mod) {
    bool collective = strstr(json_string_value(mod), ".parallel") != NULL;
    ft_prim p = ft_prim_lookup(name, strlen(name));
    bool ok = p != FT_NUM_PRIMS && ft_eval_rule_status(p) == NULL;
    total++, impl += ok;
    if (collective) coll++, coll_impl += ok;
    if (!ok) missing[n_missing++] = name;
    else if (seen(st, name)) tested++;
    else untested[n_untested++] = name;
  }
  qsort(missing, (size_t)n_missing, sizeof *missing, cmp_str);
  qsort(untested, (size_t)n_untested, sizeof *untested, cmp_str);
  fprintf(f, "JAX %s defines %d primitives in `jax._src.lax.*`, `jax._src.pjit`, "
             "`jax._src.custom_derivatives`, `jax._src.ad_util` and `jax._src.ad_checkpoint` "
             "(listed by `tools/oracle/gen_conformance.py --lax-primitives`). A primitive counts "
             "as implemented when it is in `src/ir/prims.def` and the interpreter has a rule "
             "for it.\n\n"
             "- implemented: **%d / %d** (%d / %d without the %d multi-device collectives of "
             "`lax.parallel`)\n- implemented and exercised by a conformance case: %d\n\n",
          json_string_value(json_object_get(m, "jax_version")), total, impl, total, impl - coll_impl,
          total - coll, coll, tested);
  fprintf(f, "Missing (%d): ", n_missing);
  for (int i = 0; i < n_missing; i++) fprintf(f, "%s`%s`", i ? ", " : "", missing[i]);
  fprintf(f, ".\n\nImplemented but not exercised by any case (%d): ", n_untested);
  for (int i = 0; i < n_untested; i++) fprintf(f, "%s`%s`", i ? ", " : "", untested[i]);
  fprintf(f, "%s\n\nIn `prims.def` but not a JAX %s primitive: ", n_untested ? "." : "none.",
          json_string_value(json_object_get(m, "jax_version")));
  int k = 0;
  for (int p = 0; p < FT_NUM_PRIMS; p++) {
    const char *pn = ft_prim_get((ft_prim)p)->name;
    if (!json_object_get(prims, pn)) fprintf(f, "%s`%s`", k++ ? ", " : "", pn);
  }
  fprintf(f, "%s\n\n", k ? "." : "none.");
  free(missing), free(untested);
  json_decref(m);
}

int conf_write_report(const conf_stats *st, const char *lax_json, FILE *f) {
  fprintf(f, "# Conformance against JAX %s\n\n"
             "<!-- GENERATED by tools/conformance-report from fixtures/golden, "
             "fixtures/conformance, fixtures/sweep, fixtures/program2 and tests/conformance; "
             "do not edit. -->\n\n"
             "Every case was captured from real JAX %s on CPU by `tools/oracle/` (printouts, "
             "inputs, outputs, and for transforms JAX's transformed printouts and outputs). "
             "The harness (`tests/conformance/`) parses each printout, prints it back, runs "
             "it in each engine (%d: ",
          st->jax_version, st->jax_version, st->n_engines);
  for (int e = 0; e < st->n_engines; e++) fprintf(f, "%s%s", e ? ", " : "", st->engines[e]);
  fprintf(f, "), and applies our own transforms to JAX's forward jaxpr.\n\n%s", POLICY);
  fprintf(f, "## Summary\n\n"
             "- cases: **%d** — pass %d, fail %d, known failures %d\n"
             "- checks: %d — pass %d, fail %d, known failures %d, skipped %d\n\n",
          st->cases, st->pass, st->fail, st->known, st->checks, st->checks_pass, st->checks_fail,
          st->checks_known, st->checks_skip);
  fprintf(f, "## Cases per family\n\n| family | cases | pass | fail | known failure | with skipped "
             "checks |\n|---|---|---|---|---|---|\n");
  for (int i = 0; i < st->n_fam; i++) {
    const conf_family *fm = &st->fam[i];
    fprintf(f, "| %s | %d | %d | %d | %d | %d |\n", fm->name, fm->cases, fm->pass, fm->fail,
            fm->known, fm->with_skips);
  }
  fprintf(f, "\nFamilies: `golden` is fixtures/golden (the parser's and interpreter's first "
             "set); `prim` one primitive across dtypes and shapes (scalar, 0-size, vectors with "
             "edge values); `transform`, `control`, `program` are functions with JAX's "
             "transforms of them; `sweep` is fixtures/sweep, JAX's public numerical API "
             "(`jax.numpy`, `jax.numpy.fft`, `jax.nn`, `jax.scipy.special`, `jax.scipy.stats`, "
             "`jax.lax`) called with the keyword variants people use, in each dtype it "
             "accepts, with JAX's jvp, vjp (grad for a scalar output) and vmap of the f32 "
             "cases; `program2` is fixtures/program2, whole programs as users write them "
             "(models, losses, optimizers, physics, solvers; jit nested inside, closures over "
             "arrays, pytree parameters) with their transforms "
             "(`tools/oracle/gen_sweep.py`); `heldout` is fixtures/heldout, whole programs "
             "written by someone who did not build the features they run (transformer and "
             "VAE losses, integrators, while-loop solvers, a Kalman smoother, optimizers over "
             "pytrees, scatter/gather in every mode, NaN branches, integer wraparound and "
             "bits, dtype promotion, f16/bf16, custom rules, nested transforms; "
             "`tools/oracle/gen_heldout.py`); `heldout2` is fixtures/heldout2, their second "
             "wave (jax.random in training steps, linear algebra in models, shard_map losses, "
             "checkpoint policies, custom rules, control flow under grad and vmap, fft, "
             "scipy likelihoods, low-precision mixes, nested transforms; "
             "`tools/oracle/gen_heldout.py --wave2`).\n\n");
  fprintf(f, "## Transforms\n\nPer (case, transform): *JAX's program* is JAX's printout of the "
             "transformed function, parsed and run by our engines; *ours* is our transform "
             "of JAX's forward jaxpr (`ft_grad`, `ft_jvp`, `ft_vjp_jaxpr`, `ft_vmap`, "
             "`ft_jacfwd`, `ft_jacrev`, `ft_hessian` and compositions), run by our engines.\n\n"
             "| transform | JAX's program: pass | fail | known | ours: pass | fail | known | "
             "skip |\n|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < st->n_tf; i++) {
    const conf_tstat *t = &st->tf[i];
    fprintf(f, "| %s | %d | %d | %d | %d | %d | %d | %d |\n", t->name, t->jax_pass, t->jax_fail,
            t->jax_known, t->ours_pass, t->ours_fail, t->ours_known, t->ours_skip);
  }
  fprintf(f, "\n");
  write_skips(st, f);
  write_notes(st, f, CONF_FAIL, "Failures", "None.");
  write_known(st, f);
  write_notes(st, f, CONF_INFO, "Where JAX is less accurate than us",
              "No element beyond its bound was closer to the long double reference in JAX.");
  write_prims(st, f);
  write_coverage(st, lax_json, f);
  return ferror(f) ? -1 : 0;
}
