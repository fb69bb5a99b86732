/* tools/ftc_ad.c: the autodiff commands jvp, vjp and grad. Each reads a
 * jaxpr, prints it, transforms it, prints the result, and with --run
 * evaluates the result on .npy inputs with the reference interpreter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftc.h"

typedef struct ad_opts {
  const char *file;
  int argnums[64], n_argnums;
  bool has_aux, value, run, quiet;
  const char *ins[64];
  int n_ins;
} ad_opts;

static void usage(const char *cmd) {
  if (!strcmp(cmd, "grad"))
    printf("usage: ftc grad FILE [--argnums 0,2] [--has-aux] [--value] [--run --in a.npy ...]\n\n"
           "Prints the jaxpr in FILE, then its gradient: a jaxpr mapping the same inputs\n"
           "to d(output 0)/d(input) for each input in --argnums (default 0), followed by\n"
           "the aux outputs with --has-aux. Output 0 must be a real scalar. --value gives\n"
           "value_and_grad: (value, aux..., grads...).\n");
  else if (!strcmp(cmd, "jvp"))
    printf("usage: ftc jvp FILE [--run --in a.npy ...]\n\n"
           "Prints the jaxpr in FILE, then its JVP: inputs (x..., t for each float x),\n"
           "outputs (y..., dy for each float y). Integer values carry no tangents.\n");
  else
    printf("usage: ftc vjp FILE [--run --in a.npy ...]\n\n"
           "Prints the jaxpr in FILE, then its VJP as one jaxpr: inputs (x..., ct for\n"
           "each float y), outputs (y..., ct for each float x).\n");
  printf("\noptions:\n"
         "  --run          evaluate the transformed jaxpr with the reference interpreter\n"
         "  --in FILE.npy  an input of the transformed jaxpr (repeat, in order)\n"
         "  --quiet        print only the transformed jaxpr (and results)\n"
         "FILE '-' reads standard input.\n");
}

static int parse_args(const char *cmd, int argc, char **argv, ad_opts *o) {
  memset(o, 0, sizeof *o);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--argnums") && !strcmp(cmd, "grad")) {
      if (++i >= argc) return ftc_usage(cmd, "--argnums needs a value such as 0,2");
      for (char *p = argv[i]; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || o->n_argnums == 64) return ftc_usage(cmd, "bad --argnums '%s'", argv[i]);
        o->argnums[o->n_argnums++] = (int)v;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return ftc_usage(cmd, "bad --argnums '%s'", argv[i]);
      }
    } else if (!strcmp(a, "--has-aux") && !strcmp(cmd, "grad")) {
      o->has_aux = true;
    } else if (!strcmp(a, "--value") && !strcmp(cmd, "grad")) {
      o->value = true;
    } else if (!strcmp(a, "--run")) {
      o->run = true;
    } else if (!strcmp(a, "--quiet")) {
      o->quiet = true;
    } else if (!strcmp(a, "--in")) {
      if (++i >= argc) return ftc_usage(cmd, "--in needs a .npy file");
      if (o->n_ins == 64) return ftc_fail(cmd, "too many --in");
      o->ins[o->n_ins++] = argv[i];
    } else if (a[0] == '-' && a[1]) {
      return ftc_usage(cmd, "unknown option '%s'", a);
    } else if (o->file) {
      return ftc_usage(cmd, "expected one FILE, got '%s' and '%s'", o->file, a);
    } else {
      o->file = a;
    }
  }
  if (!o->file) return ftc_usage(cmd, "missing FILE");
  if (o->n_ins && !o->run) return ftc_usage(cmd, "--in is only used with --run");
  return 0;
}

static int print_jaxpr(ft_ctx *ctx, const char *cmd, const char *title, const ft_jaxpr *j) {
  char *s = ft_jaxpr_print(ctx, j);
  if (!s) return ftc_fail(cmd, "out of memory");
  if (title) printf("# %s\n", title);
  printf("%s\n", s);
  ft_free(s);
  return 0;
}

int ftc_run_and_print(ft_ctx *ctx, const char *cmd, const ft_jaxpr *j, int n_ins, const char *const *ins) {
  /* ft_eval takes a parsed jaxpr's constants (no values in JAX's text) as
   * leading inputs, and the transforms keep constvars as constvars. */
  int nc = ft_jaxpr_consts_bound(j) ? 0 : ft_jaxpr_num_consts(j);
  int n = nc + ft_jaxpr_num_inputs(j), no = ft_jaxpr_num_outputs(j), rc = 1;
  if (n_ins != n && nc)
    return ftc_fail(cmd, "the %s jaxpr takes %d inputs (the values of its %d constants, then %d arguments); "
                    "%d given with --in", cmd, n, nc, n - nc, n_ins);
  if (n_ins != n) return ftc_fail(cmd, "the %s jaxpr takes %d inputs; %d given with --in", cmd, n, n_ins);
  ft_array **in = calloc((size_t)n + 1, sizeof *in), **out = calloc((size_t)no + 1, sizeof *out);
  if (!in || !out) {
    ftc_fail(cmd, "out of memory");
    goto done;
  }
  for (int i = 0; i < n; i++)
    if (!(in[i] = ft_npy_read(ctx, ins[i]))) {
      ftc_fail(cmd, "%s", ft_ctx_error(ctx));
      goto done;
    }
  if (ft_eval(ctx, j, n, (const ft_array *const *)in, no, out) != FT_OK) {
    ftc_fail(cmd, "%s", ft_ctx_error(ctx));
    goto done;
  }
  for (int k = 0; k < no; k++) {
    ft_aval av = ft_array_aval(out[k]);
    char b[128];
    printf("out%d: %s = ", k, ft_aval_str(&av, b, sizeof b));
    ftc_print_values(out[k], 64);
    putchar('\n');
  }
  rc = 0;
done:
  for (int i = 0; in && i < n; i++) ft_array_free(in[i]);
  for (int k = 0; out && k < no; k++) ft_array_free(out[k]);
  free(in), free(out);
  return rc;
}

static int ad_main(const char *cmd, int argc, char **argv) {
  if (ftc_wants_help(argc, argv)) {
    usage(cmd);
    return 0;
  }
  ad_opts o;
  int st = parse_args(cmd, argc, argv, &o);
  if (st) return st;
  size_t len = 0;
  char *text = ftc_read_file(o.file, &len);
  if (!text) return ftc_fail(cmd, "cannot read '%s'", o.file);
  ft_ctx *ctx = ftc_ctx_new();
  ft_jaxpr *j = ctx ? ft_parse(ctx, text, len, o.file) : NULL, *r = NULL;
  int rc = 1;
  if (!j) {
    ftc_fail(cmd, "%s", ctx ? ft_ctx_error(ctx) : "out of memory");
    goto done;
  }
  /* The transform first: a refused request (--argnums 5) prints only its error. */
  if (!strcmp(cmd, "jvp")) r = ft_jvp(ctx, j);
  else if (!strcmp(cmd, "vjp")) r = ft_vjp_jaxpr(ctx, j);
  else if (o.value) r = ft_value_and_grad(ctx, j, o.n_argnums, o.argnums, o.has_aux);
  else r = ft_grad(ctx, j, o.n_argnums, o.argnums, o.has_aux);
  if (!r) {
    ftc_fail(cmd, "%s", ft_ctx_error(ctx));
    goto done;
  }
  if (!o.quiet && print_jaxpr(ctx, cmd, "input", j)) goto done;
  if (print_jaxpr(ctx, cmd, o.quiet ? NULL : cmd, r)) goto done;
  rc = o.run ? ftc_run_and_print(ctx, cmd, r, o.n_ins, o.ins) : 0;
done:
  ft_jaxpr_free(r);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
  free(text);
  return rc;
}

int ftc_cmd_jvp(int argc, char **argv) { return ad_main("jvp", argc, argv); }
int ftc_cmd_vjp(int argc, char **argv) { return ad_main("vjp", argc, argv); }
int ftc_cmd_grad(int argc, char **argv) { return ad_main("grad", argc, argv); }
