/* tools/ftc_ir.c: the ftc commands that work on one jaxpr file: print, hash,
 * dot and run (the reference interpreter). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ftc.h"

/* Parses FILE ('-' = stdin) into a jaxpr, printing the library's message
 * (with line:col and a caret) on failure. */
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

/* The single positional FILE of commands that take exactly one. */
static const char *one_file(const char *cmd, int argc, char **argv) {
  const char *file = NULL;
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-' && argv[i][1]) {
      ftc_usage(cmd, "unknown option '%s'", argv[i]);
      return NULL;
    }
    if (file) {
      ftc_usage(cmd, "expected one FILE, got '%s' and '%s'", file, argv[i]);
      return NULL;
    }
    file = argv[i];
  }
  if (!file) ftc_usage(cmd, "missing FILE");
  return file;
}

int ftc_cmd_print(int argc, char **argv) {
  if (ftc_wants_help(argc, argv)) {
    printf("usage: ftc print FILE\n\nParses a jaxpr (as JAX prints it, JAX 0.4.35 to 0.12), verifies it and\n"
           "prints it in canonical form: exactly what JAX 0.12.0.1 prints for it\n"
           "(printing an older JAX's dialect, such as 0.10's, is not offered).\n");
    return 0;
  }
  const char *file = one_file("print", argc, argv);
  if (!file) return 2;
  ft_ctx *ctx = ftc_ctx_new();
  ft_jaxpr *j = load(ctx, "print", file);
  int rc = 1;
  if (j) {
    char *s = ft_jaxpr_print(ctx, j);
    if (s) {
      fputs(s, stdout);
      rc = 0;
    } else {
      ftc_fail("print", "out of memory");
    }
    ft_free(s);
  }
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
  return rc;
}

int ftc_cmd_hash(int argc, char **argv) {
  if (ftc_wants_help(argc, argv)) {
    printf("usage: ftc hash FILE\n\nPrints the canonical XXH3-128 hash of a jaxpr (32 hex digits): renaming\n"
           "variables does not change it, any semantic change does.\n");
    return 0;
  }
  const char *file = one_file("hash", argc, argv);
  if (!file) return 2;
  ft_ctx *ctx = ftc_ctx_new();
  ft_jaxpr *j = load(ctx, "hash", file);
  if (j) {
    char hex[33];
    ft_jaxpr_hash_hex(j, hex);
    printf("%s\n", hex);
  }
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
  return j ? 0 : 1;
}

int ftc_cmd_dot(int argc, char **argv) {
  if (ftc_wants_help(argc, argv)) {
    printf("usage: ftc dot FILE\n\nWrites a Graphviz DOT picture of a jaxpr to standard output\n"
           "(e.g. ftc dot f.jaxpr | dot -Tsvg > f.svg).\n");
    return 0;
  }
  const char *file = one_file("dot", argc, argv);
  if (!file) return 2;
  ft_ctx *ctx = ftc_ctx_new();
  ft_jaxpr *j = load(ctx, "dot", file);
  int rc = 1;
  if (j) {
    char *s = ft_jaxpr_dot(ctx, j);
    if (s) fputs(s, stdout), rc = 0;
    else ftc_fail("dot", "%s", ft_ctx_error(ctx));
    ft_free(s);
  }
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
  return rc;
}

static int run_usage(void) {
  printf("usage: ftc run FILE --in a.npy [--in b.npy ...] [--out-dir DIR] [--engine interp|jit]\n"
         "               [--profile OUT.json] [--stats] [--max-iterations N] [--max-seconds S]\n"
         "               [--sub-const K=FILE.npy ...]\n\n"
         "Runs a jaxpr with the reference interpreter (default) or compiled by the JIT\n"
         "(--engine jit: bit-identical results). Inputs are .npy files in the\n"
         "order of the jaxpr's constvars then invars. Outputs are written to\n"
         "DIR/out0.npy, DIR/out1.npy, ... in output order (DIR is created if\n"
         "needed); without --out-dir they are summarized on standard output.\n"
         "--profile and --stats compile the jaxpr and run it on the executor (threads:\n"
         "FT_NUM_THREADS, else one per CPU): one warm-up call, then 10 profiled calls.\n"
         "--profile writes the last call as a Chrome trace (chrome://tracing, Perfetto):\n"
         "every step with its thread, wave and duration. --stats prints per-step time\n"
         "and bytes after the outputs.\n"
         "--max-iterations and --max-seconds bound every while_loop and scan (each\n"
         "execution of a loop): past either, the run fails with exit status 1.\n"
         "--sub-const K=FILE.npy binds the next constant of sub-jaxpr K (repeat it\n"
         "for each, in order): JAX prints the NumPy constants of a nested jaxpr\n"
         "(jnp.piecewise's tables in jax.scipy.special's sici and spence) without\n"
         "their values; sub-jaxprs with constants are numbered depth first, in\n"
         "equation order (ft_jaxpr_bind_sub_consts). Unbound, the run is refused\n"
         "naming them.\n");
  return 0;
}

/* Prints a short summary of an output array: aval and the first values. */
static void summarize(int k, const ft_array *a) {
  ft_aval av = ft_array_aval(a);
  char buf[128];
  printf("out%d: %s = ", k, ft_aval_str(&av, buf, sizeof buf));
  ftc_print_values(a, 8);
  putchar('\n');
}

/* --sub-const K=FILE.npy (repeated): binds sub-jaxpr K's constants, the
 * files of each K in the order given (ft_jaxpr_bind_sub_consts). Nonzero
 * after printing the error. */
static int bind_sub_consts(ft_ctx *ctx, ft_jaxpr *j, int n, const char **specs) {
  int nsub = ft_jaxpr_num_sub_consts(j), rc = 1;
  int *ks = calloc((size_t)n, sizeof *ks);
  ft_array **vals = calloc((size_t)n, sizeof *vals);
  if (!ks || !vals) { ftc_fail("run", "out of memory"); goto out; }
  for (int i = 0; i < n; i++) {
    char *end = NULL;
    long k = strtol(specs[i], &end, 10);
    if (end == specs[i] || *end != '=' || !end[1] || k < 0 || k >= nsub) {
      ftc_fail("run", "--sub-const '%s': expected K=FILE.npy with K in [0, %d) (the program's "
               "sub-jaxprs with constants)", specs[i], nsub);
      goto out;
    }
    ks[i] = (int)k;
  }
  for (int k = 0; k < nsub; k++) {
    int m = 0;
    for (int i = 0; i < n; i++)
      if (ks[i] == k && !(vals[m++] = ft_npy_read(ctx, strchr(specs[i], '=') + 1))) {
        ftc_fail("run", "--sub-const '%s': %s", specs[i], ft_ctx_error(ctx));
        for (int q = 0; q < m - 1; q++) ft_array_free(vals[q]);
        goto out;
      }
    ft_status st = m ? ft_jaxpr_bind_sub_consts(ctx, j, k, m, (const ft_array *const *)vals) : FT_OK;
    for (int q = 0; q < m; q++) ft_array_free(vals[q]);
    if (st) {
      ftc_fail("run", "--sub-const of sub-jaxpr %d: %s", k, ft_ctx_error(ctx));
      goto out;
    }
  }
  rc = 0;
out:
  free(ks);
  free(vals);
  return rc;
}

int ftc_cmd_run(int argc, char **argv) {
  if (ftc_wants_help(argc, argv)) return run_usage();
  const char *file = NULL, *out_dir = NULL, *engine = "interp", *profile = NULL;
  bool stats = false;
  char *stats_text = NULL;
  const char **ins = calloc((size_t)argc, sizeof *ins);
  const char **subs = calloc((size_t)argc, sizeof *subs); /* --sub-const K=FILE, in order */
  int n_ins = 0, n_subs = 0, rc = 1;
  ft_ctx *ctx = ftc_ctx_new();
  ft_jaxpr *j = NULL;
  ft_array **in = NULL, **out = NULL;
  int n_out = 0;
  if (!ins || !subs || !ctx) { ftc_fail("run", "out of memory"); goto done; }
  ft_loop_limits lim = {.size = sizeof(ft_loop_limits)};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--stats")) {
      stats = true;
    } else if (!strcmp(argv[i], "--max-iterations") || !strcmp(argv[i], "--max-seconds")) {
      bool iters = argv[i][6] == 'i';
      char *end = NULL;
      const char *v = i + 1 < argc ? argv[i + 1] : NULL;
      errno = 0;
      double d = v ? strtod(v, &end) : 0;
      long long n = v ? strtoll(v, NULL, 10) : 0;
      if (!v || !*v || *end || errno || d <= 0 || (iters && (double)n != d)) {
        rc = ftc_usage("run", "%s needs a positive %s", argv[i], iters ? "integer" : "number of seconds");
        goto done;
      }
      if (iters) lim.max_iterations = n;
      else lim.max_seconds = d;
      i++;
    } else if (!strcmp(argv[i], "--sub-const")) {
      if (i + 1 >= argc) { rc = ftc_usage("run", "--sub-const needs a value K=FILE.npy"); goto done; }
      subs[n_subs++] = argv[++i];
    } else if (!strcmp(argv[i], "--in") || !strcmp(argv[i], "--out-dir") ||
               !strcmp(argv[i], "--engine") || !strcmp(argv[i], "--profile")) {
      if (i + 1 >= argc) { rc = ftc_usage("run", "%s needs a value", argv[i]); goto done; }
      if (argv[i][2] == 'p') profile = argv[++i];
      else if (argv[i][2] == 'i') ins[n_ins++] = argv[++i];
      else if (argv[i][2] == 'e') engine = argv[++i];
      else out_dir = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1]) {
      rc = ftc_usage("run", "unknown option '%s'", argv[i]);
      goto done;
    } else if (file) {
      rc = ftc_usage("run", "expected one FILE, got '%s' and '%s'", file, argv[i]);
      goto done;
    } else {
      file = argv[i];
    }
  }
  if (!file) { rc = ftc_usage("run", "missing FILE"); goto done; }
  ft_ctx_set_loop_limits(ctx, &lim);
  if (!(j = load(ctx, "run", file))) goto done;
  if (n_subs && bind_sub_consts(ctx, j, n_subs, subs)) goto done;
  if (ft_dist_size(ctx) > 1 && ft_dist_check_program(ctx, j) != FT_OK) { /* under mpirun */
    ftc_fail("run", "%s", ft_ctx_error(ctx));
    goto done;
  }
  in = calloc((size_t)n_ins + 1, sizeof *in);
  n_out = ft_jaxpr_num_outputs(j);
  out = calloc((size_t)n_out + 1, sizeof *out);
  if (!in || !out) { ftc_fail("run", "out of memory"); goto done; }
  for (int i = 0; i < n_ins; i++) {
    ft_aval want;
    if (!(in[i] = ft_npy_read(ctx, ins[i])) ||
        (ft_jaxpr_input_aval(j, i - (n_ins - ft_jaxpr_num_inputs(j)), &want) == FT_OK &&
         !strncmp(ft_dtype_name(want.dtype), "key<", 4) && /* PRNG keys print key<impl> */
         ft_array_wrap_keys(ctx, in[i], want.dtype))) { /* key inputs: their key data */
      ftc_fail("run", "%s: %s", ins[i], ft_ctx_error(ctx));
      goto done;
    }
  }
  if (strcmp(engine, "interp") && strcmp(engine, "jit")) {
    rc = ftc_usage("run", "--engine must be interp or jit, got '%s'", engine);
    goto done;
  }
  ft_status rst;
  if (profile || stats) {
    char *json = NULL;
    rst = ft_profile_jaxpr(ctx, j, n_ins, (const ft_array *const *)in, n_out, out,
                           profile ? &json : NULL, stats ? &stats_text : NULL, 10);
    if (rst == FT_OK && profile && ft_file_write(ctx, "profile", profile, json, strlen(json))) {
      ftc_fail("run", "%s", ft_ctx_error(ctx));
      free(json);
      goto done;
    }
    free(json);
  } else {
    ft_fn *fn = strcmp(engine, "jit") ? NULL : ft_jit(ctx, j, ftc_jit_options());
    rst = !strcmp(engine, "jit") && !fn ? ft_ctx_status(ctx)
          : fn ? ft_call(fn, n_ins, (const ft_array *const *)in, n_out, out) : ft_eval(ctx, j, n_ins, (const ft_array *const *)in, n_out, out);
    ft_fn_free(fn);
  }
  ftc_report_guards("run", ctx);
  if (rst != FT_OK) {
    ftc_fail("run", "%s", ft_ctx_error(ctx));
    goto done;
  }
  if (out_dir && ftc_dist_rank() == 0 && mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
    ftc_fail("run", "cannot create '%s': %s", out_dir, strerror(errno));
    goto done;
  }
  for (int k = 0; k < n_out && ftc_dist_rank() == 0; k++) { /* under mpirun: rank 0 */
    if (!out_dir) { summarize(k, out[k]); continue; }
    char path[4096];
    snprintf(path, sizeof path, "%s/out%d.npy", out_dir, k);
    if (ft_npy_write(ctx, out[k], path) != FT_OK) {
      ftc_fail("run", "%s", ft_ctx_error(ctx));
      goto done;
    }
  }
  if (stats_text) fputs(stats_text, stdout);
  rc = 0;
done:
  free(stats_text);
  for (int i = 0; in && i < n_ins; i++) ft_array_free(in[i]);
  for (int k = 0; out && k < n_out; k++) ft_array_free(out[k]);
  free(in);
  free(out);
  free(ins);
  free(subs);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
  return rc;
}
