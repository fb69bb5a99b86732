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

/* The batch size vmap needs when --axis-size is not given: the size of the
 * mapped axis of each --in array (a parsed jaxpr's constants come first and
 * are not mapped), which must agree. Returns it, or after a message -1
 * (bad input) or -2 (a usage error). */
static long axis_size_from_inputs(ft_ctx *ctx, const ft_jaxpr *j, const int *in_axes, int n_ins,
                                  const char *const *ins) {
  int nc = ft_jaxpr_consts_bound(j) ? 0 : ft_jaxpr_num_consts(j), n = ft_jaxpr_num_inputs(j);
  if (n_ins != nc + n)
    return ftc_fail("vmap", "the jaxpr takes %d inputs (%d constants, then %d arguments); %d given with --in",
                    nc + n, nc, n, n_ins), -1;
  long size = -1;
  const char *from = NULL;
  for (int k = 0; k < n; k++) {
    if (in_axes[k] == FT_VMAP_NONE) continue;
    ft_array *a = ft_npy_read(ctx, ins[nc + k]);
    if (!a) return ftc_fail("vmap", "%s", ft_ctx_error(ctx)), -1;
    ft_aval av = ft_array_aval(a);
    ft_array_free(a);
    int ax = in_axes[k] < 0 ? in_axes[k] + av.rank : in_axes[k];
    if (ax < 0 || ax >= av.rank)
      return ftc_fail("vmap", "--in %s has rank %d: no axis %d to map", ins[nc + k], av.rank, in_axes[k]), -1;
    if (size >= 0 && av.dims[ax] != size)
      return ftc_fail("vmap", "mapped axes disagree: %s has %lld, %s has %ld", ins[nc + k],
                      (long long)av.dims[ax], from, size), -1;
    size = (long)av.dims[ax];
    from = ins[nc + k];
  }
  if (size < 0) return ftc_usage("vmap", "no input is mapped: give --axis-size N"), -2;
  return size;
}

int ftc_cmd_vmap(int argc, char **argv) {
  if (ftc_wants_help(argc, argv)) {
    printf("usage: ftc vmap FILE [--in-axes AXES] [--out-axes AXES] (--axis-size N | --in a.npy ...)\n"
           "                [--run] [--quiet]\n\n"
           "Batches the per-example program in FILE (jax.vmap) and prints it before and\n"
           "after. AXES is a comma-separated list with one entry per input (output),\n"
           "each an axis (negative counts from the end) or 'none'; one entry applies\n"
           "to all. Defaults: --in-axes 0 --out-axes 0. The batch size is --axis-size,\n"
           "or the size of the mapped axis of the batched inputs given with --in (one\n"
           "per input, in order; a parsed jaxpr's constants first). --run evaluates\n"
           "the batched program on them. --quiet prints only the result.\n");
    return 0;
  }
  const char *file = NULL, *ins = "0", *outs = "0";
  const char **npys = calloc((size_t)argc + 1, sizeof *npys);
  long size = -1;
  int quiet = 0, run = 0, n_npys = 0;
  if (!npys) return ftc_fail("vmap", "out of memory");
  for (int i = 1; i < argc; i++) {
    bool has = i + 1 < argc;
    const char *a = argv[i];
    if ((!strcmp(a, "--in-axes") || !strcmp(a, "--out-axes") || !strcmp(a, "--axis-size") ||
         !strcmp(a, "--in")) && !has) {
      free(npys);
      return ftc_usage("vmap", "%s needs a value", a);
    }
    if (!strcmp(a, "--in-axes")) ins = argv[++i];
    else if (!strcmp(a, "--out-axes")) outs = argv[++i];
    else if (!strcmp(a, "--in")) npys[n_npys++] = argv[++i];
    else if (!strcmp(a, "--axis-size")) {
      char *end;
      errno = 0;
      size = strtol(argv[++i], &end, 10);
      if (*end || !*argv[i] || errno || size < 0) {
        free(npys);
        return ftc_usage("vmap", "--axis-size: expected a size, got '%s'", argv[i]);
      }
    } else if (!strcmp(a, "--quiet")) quiet = 1;
    else if (!strcmp(a, "--run")) run = 1;
    else {
      int st = 0;
      if (a[0] == '-' && a[1]) st = ftc_usage("vmap", "unknown option '%s'", a);
      else if (file) st = ftc_usage("vmap", "expected one FILE, got '%s' and '%s'", file, a);
      else file = a;
      if (st) { free(npys); return st; }
    }
  }
  int st = 0;
  if (!file) st = ftc_usage("vmap", "missing FILE");
  else if (size < 0 && !n_npys) st = ftc_usage("vmap", "needs the batch size: --axis-size N, or the batched inputs with --in");
  else if (run && !n_npys) st = ftc_usage("vmap", "--run needs the inputs (--in)");
  int ia[256], oa[256];
  int ni = st ? 0 : parse_axes("vmap", "--in-axes", ins, ia, 256);
  int no = st ? 0 : parse_axes("vmap", "--out-axes", outs, oa, 256);
  if (!st && (ni < 0 || no < 0)) st = 2;
  if (st) { free(npys); return st; }
  ft_ctx *ctx = ftc_ctx_new();
  ft_jaxpr *j = load(ctx, "vmap", file), *v = NULL;
  int rc = 1, *in_axes = NULL, *out_axes = NULL;
  if (!j) goto done;
  in_axes = fit_axes("vmap", "--in-axes", ia, ni, ft_jaxpr_num_inputs(j));
  out_axes = fit_axes("vmap", "--out-axes", oa, no, ft_jaxpr_num_outputs(j));
  if (!in_axes || !out_axes) goto done;
  if (size < 0 && (size = axis_size_from_inputs(ctx, j, in_axes, n_npys, npys)) < 0) {
    rc = size == -2 ? 2 : 1;
    goto done;
  }
  if (!(v = ft_vmap(ctx, j, ft_jaxpr_num_inputs(j), in_axes, ft_jaxpr_num_outputs(j), out_axes, size))) {
    ftc_fail("vmap", "%s", ft_ctx_error(ctx));
    goto done;
  }
  if (!quiet) {
    printf("# before\n");
    if (print_jaxpr(ctx, "vmap", j)) goto done;
    printf("# after: vmap, in_axes=%s out_axes=%s axis_size=%ld\n", ins, outs, size);
  }
  rc = print_jaxpr(ctx, "vmap", v);
  if (!rc && run) rc = ftc_run_and_print(ctx, "vmap", v, n_npys, npys);
done:
  free(in_axes);
  free(out_axes);
  free(npys);
  ft_jaxpr_free(v);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
  return rc;
}

typedef ft_jaxpr *(*jac_fn)(ft_ctx *, const ft_jaxpr *, int);

static int jac_cmd(const char *cmd, jac_fn fn, const char *what, int argc, char **argv) {
  if (ftc_wants_help(argc, argv)) {
    printf("usage: ftc %s FILE [--argnum K] [--run --in a.npy ...] [--quiet]\n\n"
           "Prints %s of the program in FILE with respect to input K (default 0):\n"
           "for each floating output y, d y / d x shaped y.shape + x.shape. Only the\n"
           "result is printed (--quiet is accepted, as by every transform command).\n"
           "--run evaluates it with the reference interpreter on the inputs given with\n"
           "--in (the same inputs as FILE's, in order; a parsed jaxpr's constants first).\n",
           cmd, what);
    return 0;
  }
  const char *file = NULL;
  int argnum = 0, n_ins = 0;
  bool run = false;
  const char **ins = calloc((size_t)argc + 1, sizeof *ins);
  if (!ins) return ftc_fail(cmd, "out of memory");
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--argnum")) {
      char *end;
      if (i + 1 >= argc) return ftc_usage(cmd, "--argnum needs a value");
      long v = strtol(argv[++i], &end, 10);
      if (end == argv[i] || *end || v < 0 || v > 1 << 20)
        return ftc_usage(cmd, "--argnum: expected an input index, got '%s'", argv[i]);
      argnum = (int)v;
    } else if (!strcmp(argv[i], "--quiet")) {
      /* accepted as by every transform command: this one prints only the result */
    } else if (!strcmp(argv[i], "--run")) {
      run = true;
    } else if (!strcmp(argv[i], "--in")) {
      if (i + 1 >= argc) return free(ins), ftc_usage(cmd, "--in needs a value");
      ins[n_ins++] = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return free(ins), ftc_usage(cmd, "unknown option '%s'", argv[i]);
    } else if (file) {
      return free(ins), ftc_usage(cmd, "expected one FILE, got '%s' and '%s'", file, argv[i]);
    } else {
      file = argv[i];
    }
  }
  if (!file) return free(ins), ftc_usage(cmd, "missing FILE");
  if (n_ins && !run) return free(ins), ftc_usage(cmd, "--in is for --run (the inputs to evaluate on)");
  ft_ctx *ctx = ftc_ctx_new();
  ft_jaxpr *j = load(ctx, cmd, file), *r = NULL;
  int rc = 1;
  if (j && !(r = fn(ctx, j, argnum))) ftc_fail(cmd, "%s", ft_ctx_error(ctx));
  if (r) rc = print_jaxpr(ctx, cmd, r);
  if (r && !rc && run) rc = ftc_run_and_print(ctx, cmd, r, n_ins, ins);
  free(ins);
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
