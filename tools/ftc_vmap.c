/* tools/ftc_vmap.c: the ftc commands of batching — vmap (before/after),
 * and jacfwd, jacrev, hessian (which compose vmap with jvp/vjp). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftc.h"

static ft_jaxpr *load(ft_ctx *ctx, const char *cmd, const char *path) {
  size_t len;
  char *text = ftc_read_file(path, &len);
  if (!text) {
    ftc_fail(cmd, "cannot read '%s': %s", path, strerror(errno));
    return NULL;
  }
  ft_jaxpr *j = ft_parse(ctx, text, len, strcmp(path, "-") ? path : "<stdin>");
  free(text);
  if (!j) fprintf(stderr, "ftc %s: %s\n", cmd, ft_ctx_error(ctx));
  return j;
}

/* "0,none,-1" -> n axes (none: FT_VMAP_NONE); a single entry applies to
 * all. Returns the count, or -1 (message printed). */
static int parse_axes(const char *cmd, const char *opt, const char *s, int *axes, int max) {
  int n = 0;
  const char *p = s;
  while (*p) {
    if (n == max) return ftc_fail(cmd, "%s: too many entries", opt), -1;
    if (!strncmp(p, "none", 4) || !strncmp(p, "None", 4)) {
      axes[n++] = FT_VMAP_NONE;
      p += 4;
    } else {
      char *end;
      long v = strtol(p, &end, 10);
      if (end == p || v < -64 || v > 64)
        return ftc_fail(cmd, "%s: expected an axis or 'none' at '%s'", opt, p), -1;
      axes[n++] = (int)v;
      p = end;
    }
    if (*p == ',') p++;
    else if (*p) return ftc_fail(cmd, "%s: expected ',' at '%s'", opt, p), -1;
  }
  return n;
}

/* Expands a list of one entry to n; checks the count otherwise. */
static int *fit_axes(const char *cmd, const char *opt, const int *got, int n_got, int n) {
  int *r = malloc(sizeof(int) * (size_t)(n + 1));
  if (!r) return ftc_fail(cmd, "out of memory"), NULL;
  if (n_got == 1 || n_got == 0) {
    for (int i = 0; i < n; i++) r[i] = n_got ? got[0] : 0;
    return r;
  }
  if (n_got != n) {
    free(r);
    ftc_fail(cmd, "%s has %d entries but the jaxpr has %d", opt, n_got, n);
    return NULL;
  }
  memcpy(r, got, sizeof(int) * (size_t)n);
  return r;
}

static int print_jaxpr(ft_ctx *ctx, const char *cmd, const ft_jaxpr *j) {
  char *s = ft_jaxpr_print(ctx, j);
  if (!s) return ftc_fail(cmd, "%s", ft_ctx_error(ctx));
  fputs(s, stdout);
  if (!*s || s[strlen(s) - 1] != '\n') fputc('\n', stdout);
  ft_free(s);
  return 0;
}

int ftc_cmd_vmap(int argc, char **argv) {
  if (ftc_wants_help(argc, argv)) {
    printf("usage: ftc vmap FILE [--in-axes AXES] [--out-axes AXES] [--axis-size N] [--quiet]\n\n"
           "Batches the per-example program in FILE (jax.vmap) and prints it before and\n"
           "after. AXES is a comma-separated list with one entry per input (output),\n"
           "each an axis (negative counts from the end) or 'none'; one entry applies\n"
           "to all. Defaults: --in-axes 0 --out-axes 0 --axis-size 4. --quiet prints\n"
           "only the result.\n");
    return 0;
  }
  const char *file = NULL, *ins = "0", *outs = "0";
  long size = 4;
  int quiet = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--in-axes") && i + 1 < argc) ins = argv[++i];
    else if (!strcmp(argv[i], "--out-axes") && i + 1 < argc) outs = argv[++i];
    else if (!strcmp(argv[i], "--axis-size") && i + 1 < argc) {
      char *end;
      size = strtol(argv[++i], &end, 10);
      if (*end || size < 0) return ftc_fail("vmap", "--axis-size: expected a size, got '%s'", argv[i]);
    } else if (!strcmp(argv[i], "--quiet")) quiet = 1;
    else if (argv[i][0] == '-' && argv[i][1])
      return ftc_fail("vmap", "unknown option '%s' (try 'ftc vmap --help')", argv[i]);
    else if (file) return ftc_fail("vmap", "expected one FILE");
    else file = argv[i];
  }
  if (!file) return ftc_fail("vmap", "missing FILE (try 'ftc vmap --help')");
  int ia[256], oa[256];
  int ni = parse_axes("vmap", "--in-axes", ins, ia, 256), no = parse_axes("vmap", "--out-axes", outs, oa, 256);
  if (ni < 0 || no < 0) return 1;
  ft_ctx *ctx = ftc_ctx_new();
  ft_jaxpr *j = load(ctx, "vmap", file), *v = NULL;
  int rc = 1, *in_axes = NULL, *out_axes = NULL;
  if (!j) goto done;
  in_axes = fit_axes("vmap", "--in-axes", ia, ni, ft_jaxpr_num_inputs(j));
  out_axes = fit_axes("vmap", "--out-axes", oa, no, ft_jaxpr_num_outputs(j));
  if (!in_axes || !out_axes) goto done;
  if (!(v = ft_vmap(ctx, j, in_axes, out_axes, size))) {
    ftc_fail("vmap", "%s", ft_ctx_error(ctx));
    goto done;
  }
  if (!quiet) {
    printf("# before\n");
    if (print_jaxpr(ctx, "vmap", j)) goto done;
    printf("# after: vmap, in_axes=%s out_axes=%s axis_size=%ld\n", ins, outs, size);
  }
  rc = print_jaxpr(ctx, "vmap", v);
done:
  free(in_axes);
  free(out_axes);
  ft_jaxpr_free(v);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
  return rc;
}

typedef ft_jaxpr *(*jac_fn)(ft_ctx *, const ft_jaxpr *, int);

static int jac_cmd(const char *cmd, jac_fn fn, const char *what, int argc, char **argv) {
  if (ftc_wants_help(argc, argv)) {
    printf("usage: ftc %s FILE [--argnum K]\n\n"
           "Prints %s of the program in FILE with respect to input K (default 0):\n"
           "for each floating output y, d y / d x shaped y.shape + x.shape.\n", cmd, what);
    return 0;
  }
  const char *file = NULL;
  int argnum = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--argnum") && i + 1 < argc) argnum = atoi(argv[++i]);
    else if (argv[i][0] == '-' && argv[i][1])
      return ftc_fail(cmd, "unknown option '%s' (try 'ftc %s --help')", argv[i], cmd);
    else if (file) return ftc_fail(cmd, "expected one FILE");
    else file = argv[i];
  }
  if (!file) return ftc_fail(cmd, "missing FILE (try 'ftc %s --help')", cmd);
  ft_ctx *ctx = ftc_ctx_new();
  ft_jaxpr *j = load(ctx, cmd, file), *r = NULL;
  int rc = 1;
  if (j && !(r = fn(ctx, j, argnum))) ftc_fail(cmd, "%s", ft_ctx_error(ctx));
  if (r) rc = print_jaxpr(ctx, cmd, r);
  ft_jaxpr_free(r);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
  return rc;
}

int ftc_cmd_jacfwd(int argc, char **argv) {
  return jac_cmd("jacfwd", ft_jacfwd, "the Jacobian by forward mode (vmap of jvp)", argc, argv);
}

int ftc_cmd_jacrev(int argc, char **argv) {
  return jac_cmd("jacrev", ft_jacrev, "the Jacobian by reverse mode (vmap of vjp)", argc, argv);
}

int ftc_cmd_hessian(int argc, char **argv) {
  return jac_cmd("hessian", ft_hessian, "the Hessian (jacfwd of jacrev)", argc, argv);
}
