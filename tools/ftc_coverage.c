/* tools/ftc_coverage.c: `ftc coverage`, the primitive x rule matrix of
 * DESIGN.md §2. Every pass answers per primitive: a rule (NULL), or an
 * explicit reason ("unsupported: ...", "not linear", "n/a: ..."). Anything
 * else is a hole, which `--strict` turns into a failure (the coverage test).
 * This tool reads the library's internal tables, so it includes the
 * folders' internal headers; it links the static library. */
#include <stdio.h>
#include <string.h>

#include "ftc.h"
#include "ir/ir.h"
#include "runtime/runtime.h"
#include "transforms/transforms.h"
#include "transforms/vmap.h"
#include "egraph/tensor.h"
#include "lower/lower.h"

typedef struct {
  const char *name;
  const char *(*status)(ft_prim p);
} column;

static const column columns[] = {
    {"eval", ft_eval_rule_status},
    {"jvp", ft_jvp_rule_status},
    {"transpose", ft_transpose_rule_status},
    {"batch", ft_batch_rule_status},
    {"egraph", ft_egraph_rule_status},
    {"lower", ft_lower_rule_status},
};
enum { NCOL = sizeof columns / sizeof columns[0] };

static bool explicit_reason(const char *why) {
  return !strncmp(why, "unsupported: ", 13) || !strcmp(why, "not linear") || !strncmp(why, "n/a: ", 5);
}

int ftc_cmd_coverage(int argc, char **argv) {
  if (ftc_wants_help(argc, argv)) {
    printf("usage: ftc coverage [--strict] [--reasons]\n\n"
           "Prints the primitive x rule matrix: for each primitive in the table and\n"
           "each pass (%s", columns[0].name);
    for (int c = 1; c < NCOL; c++) printf(", %s", columns[c].name);
    printf("), 'yes' for a rule, '-' for an explicit\n"
           "'unsupported: why' (listed with --reasons), 'HOLE' for neither.\n"
           "--strict exits 1 when there is a hole.\n");
    return 0;
  }
  bool strict = false, reasons = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--strict")) strict = true;
    else if (!strcmp(argv[i], "--reasons")) reasons = true;
    else return ftc_usage("coverage", "unknown argument '%s'", argv[i]);
  }
  int holes = 0, yes[NCOL] = {0};
  printf("%-24s", "primitive");
  for (int c = 0; c < NCOL; c++) printf(" %-9s", columns[c].name);
  printf("\n");
  for (int p = 0; p < FT_NUM_PRIMS; p++) {
    printf("%-24s", ft_prim_get((ft_prim)p)->name);
    for (int c = 0; c < NCOL; c++) {
      const char *why = columns[c].status((ft_prim)p);
      const char *cell = !why ? "yes" : explicit_reason(why) ? "-" : "HOLE";
      yes[c] += !why;
      holes += why && !explicit_reason(why);
      printf(" %-9s", cell);
    }
    printf("\n");
  }
  printf("%-24s", "with a rule");
  for (int c = 0; c < NCOL; c++) printf(" %3d/%-5d", yes[c], FT_NUM_PRIMS);
  printf("\nholes: %d\n", holes);
  if (reasons) {
    printf("\nexplicit reasons:\n");
    for (int p = 0; p < FT_NUM_PRIMS; p++)
      for (int c = 0; c < NCOL; c++) {
        const char *why = columns[c].status((ft_prim)p);
        if (why && strcmp(why, "not linear"))
          printf("  %s / %s: %s\n", ft_prim_get((ft_prim)p)->name, columns[c].name, why);
      }
  }
  return strict && holes ? 1 : 0;
}
