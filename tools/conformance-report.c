/* tools/conformance-report: runs the conformance harness over the JAX
 * fixtures and writes the report (docs/conformance.md is its output; it is
 * never edited by hand).
 *
 *   conformance-report [-o docs/conformance.md] [--dump CHECKS.tsv] [FIXTURES_DIR]
 *
 * --dump writes every check, one a line (case, check, status, reason): the
 * input for keeping tests/conformance/conf_known.c exact.
 *
 * FIXTURES_DIR defaults to ./fixtures (golden/, conformance/, loops/,
 * sweep/, program2/, linalg/, spectral/, heldout/, heldout2/, ctlprims/, ragged/). Exit status
 * 0 when every case passes or is a known failure, 1 otherwise, 2 on a usage
 * or I/O error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "ft.h"

int main(int argc, char **argv) {
  const char *out_path = NULL, *fx = "fixtures", *dump_path = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-o") && i + 1 < argc) out_path = argv[++i];
    else if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump_path = argv[++i];
    else if (argv[i][0] == '-') {
      fprintf(stderr, "usage: %s [-o FILE] [--dump FILE] [FIXTURES_DIR]\n", argv[0]);
      return 2;
    } else fx = argv[i];
  }
  char g[4096], c[4096], l[4096], sw[4096], p2[4096], la[4096], sp[4096], ho[4096], ho2[4096],
      lax[4096];
  snprintf(g, sizeof g, "%s/golden", fx);
  snprintf(c, sizeof c, "%s/conformance", fx);
  snprintf(l, sizeof l, "%s/loops", fx);
  snprintf(sw, sizeof sw, "%s/sweep", fx);
  snprintf(p2, sizeof p2, "%s/program2", fx);
  snprintf(la, sizeof la, "%s/linalg", fx);
  snprintf(sp, sizeof sp, "%s/spectral", fx);
  snprintf(ho, sizeof ho, "%s/heldout", fx);
  char cp[4096];
  snprintf(cp, sizeof cp, "%s/ctlprims", fx);
  char rg[4096];
  snprintf(rg, sizeof rg, "%s/ragged", fx);
  snprintf(ho2, sizeof ho2, "%s/heldout2", fx);
  snprintf(lax, sizeof lax, "%s/conformance/LAX_PRIMITIVES.json", fx);
  conf_opts o = {.golden_dir = g, .conf_dir = c, .more_dirs = {l, sw, p2, la, sp, ho, ho2, cp, rg},
                 .n_more = 9};
  if (dump_path && !(o.dump = fopen(dump_path, "w"))) {
    perror(dump_path);
    return 2;
  }
  if (getenv("FT_CONF_ONLY")) o.only = getenv("FT_CONF_ONLY");
  if (getenv("FT_CONF_SET") && !strcmp(getenv("FT_CONF_SET"), "sweep")) o.golden_dir = o.conf_dir = NULL;
  conf_stats st;
  int rr = conf_run(&o, &st);
  if (o.dump) fclose(o.dump);
  if (rr) return 2;
  /* -o FILE: the report is built in memory and written whole (a temporary
   * file renamed into place), never left half-written. */
  char *mem = NULL;
  size_t mem_len = 0;
  FILE *f = out_path ? open_memstream(&mem, &mem_len) : stdout;
  if (!f) {
    perror(out_path);
    conf_stats_free(&st);
    return 2;
  }
  int r = conf_write_report(&st, lax, f);
  if (f != stdout && fclose(f)) r = -1;
  if (out_path && !r) {
    ft_ctx *ctx = ft_ctx_new(NULL);
    if (!ctx || ft_file_write(ctx, "conformance-report", out_path, mem, mem_len) != FT_OK) {
      fprintf(stderr, "%s\n", ctx ? ft_ctx_error(ctx) : "conformance-report: out of memory");
      r = -1;
    }
    ft_ctx_free(ctx);
  }
  free(mem);
  fprintf(stderr, "conformance-report: %d cases, %d pass, %d fail, %d known failures%s%s\n",
          st.cases, st.pass, st.fail, st.known, out_path ? "; wrote " : "", out_path ? out_path : "");
  int status = r ? 2 : st.fail ? 1 : 0;
  conf_stats_free(&st);
  return status;
}
