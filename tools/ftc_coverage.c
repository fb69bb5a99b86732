/* tools/ftc_coverage.c: `ftc coverage`, the primitive x rule matrix of
 * DESIGN.md §2. Every pass answers per primitive: a rule (NULL), or an
 * explicit reason ("unsupported: ...", "not linear", "n/a: ..."). Anything
 * else is a hole, which `--strict` turns into a failure (the coverage test).
 * The matrix comes from the public calls ft_coverage_* (src/api/tools.c). */
#include <stdio.h>
#include <string.h>

#include "ftc.h"

static bool explicit_reason(const char *why) {
  return !strncmp(why, "unsupported: ", 13) || !strcmp(why, "not linear") || !strncmp(why, "n/a: ", 5);
}

/* The state of JAX primitive `name` here: "not parsed" when the table
 * lacks it; else the passes with a rule, then each other pass with its
 * explicit reason ("not linear" included). Written to buf. */
static const char *jax_state(const char *name, char *buf, size_t cap) {
  const int ncol = ft_coverage_num_passes();
  int p = ft_primitive_lookup(name);
  if (p < 0) {
    snprintf(buf, cap, "not parsed (no entry in src/ir/prims.def)");
    return buf;
  }
  size_t n = 0;
  int missing = 0;
  buf[0] = '\0';
  for (int c = 0; c < ncol; c++)
    if (!ft_coverage_status(p, c)) n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s%s", n ? " " : "", ft_coverage_pass_name(c));
    else missing++;
  if (!missing) {
    snprintf(buf, cap, "every pass (eval jvp transpose batch egraph lower)");
    return buf;
  }
  for (int c = 0; c < ncol; c++) {
    const char *why = ft_coverage_status(p, c);
    if (why && n < cap) n += (size_t)snprintf(buf + n, cap - n, "; %s: %s", ft_coverage_pass_name(c), why);
  }
  return buf;
}

/* ftc coverage --jax FILE: every primitive JAX registers (the committed
 * list of tools/oracle/gen_jax_primitives.py: "name module" lines) with
 * its state here, then the counts. */
static int coverage_jax(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return ftc_fail("coverage", "cannot read the JAX primitive list '%s'", path);
  char line[512], buf[2048];
  int all = 0, some = 0, none = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || line[0] == '\n') continue;
    char name[256], mod[256] = "";
    if (sscanf(line, "%255s %255s", name, mod) < 1) continue;
    const char *st = jax_state(name, buf, sizeof buf);
    printf("%-32s %s\n", name, st);
    if (!strncmp(st, "not parsed", 10)) none++;
    else if (!strncmp(st, "every pass", 10)) all++;
    else some++;
  }
  fclose(f);
  printf("\n%d JAX primitives: %d with every rule, %d with some passes refused (reasons above), "
         "%d not parsed\n", all + some + none, all, some, none);
  return 0;
}

enum { MAX_COL = 16 };

int ftc_cmd_coverage(int argc, char **argv) {
  const int ncol = ft_coverage_num_passes() < MAX_COL ? ft_coverage_num_passes() : MAX_COL;
  const int nprim = ft_primitive_count();
  if (ftc_wants_help(argc, argv)) {
    printf("usage: ftc coverage [--strict] [--reasons]\n"
           "       ftc coverage --jax [FILE]\n\n"
           "--jax lists every primitive JAX 0.12 registers (FILE, by default\n"
           "%s) with its state here: the passes with a\n"
           "rule and the reason of each other one, or 'not parsed'.\n\n", FTC_JAX_PRIMS);
    printf("Without --jax: prints the primitive x rule matrix: for each primitive in the table and\n"
           "each pass (%s", ft_coverage_pass_name(0));
    for (int c = 1; c < ncol; c++) printf(", %s", ft_coverage_pass_name(c));
    printf("), 'yes' for a rule, '-' for an explicit\n"
           "'unsupported: why' (listed with --reasons), 'HOLE' for neither.\n"
           "--strict exits 1 when there is a hole.\n");
    return 0;
  }
  bool strict = false, reasons = false;
  if (argc >= 2 && !strcmp(argv[1], "--jax")) {
    if (argc > 3) return ftc_fail("coverage", "--jax takes at most one file");
    return coverage_jax(argc == 3 ? argv[2] : FTC_JAX_PRIMS);
  }
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--strict")) strict = true;
    else if (!strcmp(argv[i], "--reasons")) reasons = true;
    else return ftc_usage("coverage", "unknown argument '%s'", argv[i]);
  }
  int holes = 0, yes[MAX_COL] = {0};
  printf("%-24s", "primitive");
  for (int c = 0; c < ncol; c++) printf(" %-9s", ft_coverage_pass_name(c));
  printf("\n");
  for (int p = 0; p < nprim; p++) {
    printf("%-24s", ft_primitive_name(p));
    for (int c = 0; c < ncol; c++) {
      const char *why = ft_coverage_status(p, c);
      const char *cell = !why ? "yes" : explicit_reason(why) ? "-" : "HOLE";
      yes[c] += !why;
      holes += why && !explicit_reason(why);
      printf(" %-9s", cell);
    }
    printf("\n");
  }
  printf("%-24s", "with a rule");
  for (int c = 0; c < ncol; c++) printf(" %3d/%-5d", yes[c], nprim);
  printf("\nholes: %d\n", holes);
  if (reasons) {
    printf("\nexplicit reasons:\n");
    for (int p = 0; p < nprim; p++)
      for (int c = 0; c < ncol; c++) {
        const char *why = ft_coverage_status(p, c);
        if (why && strcmp(why, "not linear"))
          printf("  %s / %s: %s\n", ft_primitive_name(p), ft_coverage_pass_name(c), why);
      }
  }
  return strict && holes ? 1 : 0;
}
