/* tools/ftc_transform.c: `ftc transform FILE EXPR`: a transform stack named
 * in JAX's spelling ("jit(vmap(grad(f, argnums=0), in_axes=(0, None)))",
 * docs/transform.md) applied to the program in FILE through ft_transform_ex,
 * with the IR printed after every step (--dump) and the result run on .npy
 * inputs (--run): compiled by ft_jit when the stack contains jit, else by
 * the reference interpreter. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ftc.h"

#define MAX_IN 256

typedef struct tr_opts {
  const char *file, *expr, *name, *shapes, *out_dir;
  const char *ins[MAX_IN];
  int n_ins;
  bool dump, run, quiet;
} tr_opts;

static int usage(void) {
  printf("usage: ftc transform FILE EXPR [--dump] [--name NAME] [--in-shapes AVALS]\n"
         "                     [--run --in a.npy ... [--out-dir DIR]] [--quiet]\n\n"
         "Applies the transform stack EXPR, written as in JAX, to the program in FILE\n"
         "and prints the result, e.g.\n"
         "  ftc transform loss.jaxpr 'jit(vmap(grad(f, argnums=0), in_axes=(0, None)))' --dump\n"
         "EXPR := NAME | fn(EXPR, args...) with fn one of grad, value_and_grad, jvp, vjp,\n"
         "vmap, jit, jacfwd, jacrev, hessian; keywords argnums=, has_aux=, in_axes=,\n"
         "out_axes=, axis_size= (values: ints, None, True, False, tuples). NAME is the\n"
         "program in FILE, 'f' unless --name says otherwise. Steps apply inside out;\n"
         "jit is the identity on the IR (the program is compiled when it runs).\n\n"
         "options:\n"
         "  --dump           print the IR after every step, with a header naming it\n"
         "  --name NAME      the program's name in EXPR (default f)\n"
         "  --in-shapes S    the avals the result is called with, e.g. 'f32[8,4],f32[4]':\n"
         "                   a vmap without axis_size= takes its size from them\n"
         "  --run            run the result: with jit in EXPR compiled by ft_jit, else\n"
         "                   by the reference interpreter; --in gives the inputs (in\n"
         "                   order; they also give the shapes when --in-shapes is absent)\n"
         "  --out-dir DIR    with --run, write DIR/out0.npy, ... instead of a summary\n"
         "  --quiet          do not print the IR (only --run's results)\n"
         "A bad EXPR is reported with the column and a caret under it.\n");
  return 0;
}

static int parse_args(int argc, char **argv, tr_opts *o) {
  memset(o, 0, sizeof *o);
  o->name = "f";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--name") || !strcmp(a, "--in-shapes") || !strcmp(a, "--in") ||
        !strcmp(a, "--out-dir")) {
      if (i + 1 >= argc) return ftc_usage("transform", "%s needs a value", a);
      const char *v = argv[++i];
      if (!strcmp(a, "--name")) o->name = v;
      else if (!strcmp(a, "--in-shapes")) o->shapes = v;
      else if (!strcmp(a, "--out-dir")) o->out_dir = v;
      else if (o->n_ins == MAX_IN) return ftc_fail("transform", "too many --in");
      else o->ins[o->n_ins++] = v;
    } else if (!strcmp(a, "--dump")) {
      o->dump = true;
    } else if (!strcmp(a, "--run")) {
      o->run = true;
    } else if (!strcmp(a, "--quiet")) {
      o->quiet = true;
    } else if (a[0] == '-' && a[1]) {
      return ftc_usage("transform", "unknown option '%s'", a);
    } else if (!o->file) {
      o->file = a;
    } else if (!o->expr) {
      o->expr = a;
    } else {
      return ftc_usage("transform", "unexpected argument '%s' (quote EXPR as one argument)", a);
    }
  }
  if (!o->file) return ftc_usage("transform", "missing FILE");
  if (!o->expr) return ftc_usage("transform", "missing EXPR, e.g. 'vmap(grad(f), axis_size=4)'");
  if ((o->n_ins || o->out_dir) && !o->run)
    return ftc_usage("transform", "--in and --out-dir are only used with --run");
  return 0;
}

/* "f32[8,4],f32[4] i32[]": avals separated by ',' or spaces outside [ ].
 * Returns the count, or -1 (message printed). */
static int parse_shapes(const char *s, ft_aval *out, int max) {
  int n = 0;
  const char *p = s;
  for (;;) {
    while (*p == ' ' || *p == ',') p++;
    if (!*p) return n;
    if (n == max) return ftc_fail("transform", "--in-shapes: too many avals"), -1;
    char dt[16];
    size_t k = 0;
    while (p[k] && p[k] != '[' && p[k] != ',' && p[k] != ' ' && k < sizeof dt - 1) dt[k] = p[k], k++;
    dt[k] = 0;
    ft_aval *a = &out[n];
    memset(a, 0, sizeof *a);
    if (ft_dtype_from_name(dt, &a->dtype) != FT_OK)
      return ftc_fail("transform", "--in-shapes: unknown dtype '%s' in '%s'", dt, s), -1;
    p += k;
    if (*p == '[') {
      p++;
      while (*p != ']') {
        char *end;
        long long d = strtoll(p, &end, 10);
        if (end == p || d < 0 || a->rank == FT_MAX_RANK)
          return ftc_fail("transform", "--in-shapes: bad dimension at '%s'", p), -1;
        a->dims[a->rank++] = d;
        p = end;
        while (*p == ' ') p++;
        if (*p == ',') p++;
        else if (*p != ']') return ftc_fail("transform", "--in-shapes: expected ',' or ']' at '%s'", p), -1;
      }
      p++;
    }
    n++;
  }
}

typedef struct dumper {
  ft_ctx *ctx;
  bool print, saw_jit, failed;
} dumper;

static void print_ir(dumper *d, const ft_jaxpr *j) {
  char *s = ft_jaxpr_print(d->ctx, j);
  if (!s) {
    d->failed = true;
    return;
  }
  fputs(s, stdout);
  if (!*s || s[strlen(s) - 1] != '\n') fputc('\n', stdout);
  ft_free(s);
}

static void on_step(void *user, const ft_transform_step *st) {
  dumper *d = user;
  if (!strcmp(st->name, "jit")) d->saw_jit = true;
  if (!d->print) return;
  printf("# step %d: %s", st->index, st->expr);
  if (*st->params) printf("  [%s]", st->params);
  printf("\n");
  print_ir(d, st->result);
}

/* Prints a short summary of an output: aval and the first values. */
static void summarize(int k, const ft_array *a) {
  ft_aval av = ft_array_aval(a);
  char buf[128];
  printf("out%d: %s = ", k, ft_aval_str(&av, buf, sizeof buf));
  ftc_print_values(a, 16);
  putchar('\n');
}

/* Runs r on the inputs: through ft_jit when the stack had a jit. */
static int run(ft_ctx *ctx, const ft_jaxpr *r, bool jit, ft_array **in, int n_in,
               const char *out_dir) {
  int n_out = ft_jaxpr_num_outputs(r), rc = 1;
  ft_array **out = calloc((size_t)n_out + 1, sizeof *out);
  ft_fn *fn = NULL;
  if (!out) return ftc_fail("transform", "out of memory");
  ft_status st;
  if (jit) {
    st = (fn = ft_jit(ctx, r, ftc_jit_options())) ? ft_call(fn, n_in, (const ft_array *const *)in, n_out, out) : ft_ctx_status(ctx);
  } else {
    st = ft_eval(ctx, r, n_in, (const ft_array *const *)in, n_out, out);
  }
  ftc_report_guards("transform", ctx);
  if (st != FT_OK) {
    ftc_fail("transform", "%s", ft_ctx_error(ctx));
    goto done;
  }
  if (out_dir && mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
    ftc_fail("transform", "cannot create '%s': %s", out_dir, strerror(errno));
    goto done;
  }
  if (!out_dir) printf("# run (%s)\n", jit ? "compiled by ft_jit" : "reference interpreter");
  for (int k = 0; k < n_out; k++) {
    if (!out_dir) {
      summarize(k, out[k]);
      continue;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/out%d.npy", out_dir, k);
    if (ft_npy_write(ctx, out[k], path) != FT_OK) {
      ftc_fail("transform", "%s", ft_ctx_error(ctx));
      goto done;
    }
  }
  rc = 0;
done:
  for (int k = 0; k < n_out; k++) ft_array_free(out[k]);
  free(out);
  ft_fn_free(fn);
  return rc;
}

int ftc_cmd_transform(int argc, char **argv) {
  if (ftc_wants_help(argc, argv)) return usage();
  tr_opts o;
  int st = parse_args(argc, argv, &o);
  if (st) return st;
  static ft_aval avals[MAX_IN];
  int n_avals = 0;
  if (o.shapes && (n_avals = parse_shapes(o.shapes, avals, MAX_IN)) < 0) return 2;
  size_t len;
  char *text = ftc_read_file(o.file, &len);
  if (!text) return ftc_fail("transform", "cannot read '%s': %s", o.file, strerror(errno));
  ft_ctx *ctx = ftc_ctx_new();
  ft_jaxpr *j = ctx ? ft_parse(ctx, text, len, strcmp(o.file, "-") ? o.file : "<stdin>") : NULL;
  ft_jaxpr *r = NULL;
  ft_array *in[MAX_IN] = {0};
  int rc = 1;
  free(text);
  if (!j) {
    ftc_fail("transform", "%s", ctx ? ft_ctx_error(ctx) : "out of memory");
    goto done;
  }
  for (int i = 0; i < o.n_ins; i++)
    if (!(in[i] = ft_npy_read(ctx, o.ins[i]))) {
      ftc_fail("transform", "%s", ft_ctx_error(ctx));
      goto done;
    }
  if (!o.shapes)
    for (int i = 0; i < o.n_ins; i++) avals[n_avals++] = ft_array_aval(in[i]);
  dumper d = {.ctx = ctx, .print = o.dump && !o.quiet};
  ft_transform_options topts = {.size = sizeof(ft_transform_options), .in_avals = n_avals ? avals : NULL, .n_in_avals = n_avals,
                                .name = o.name, .on_step = on_step, .user = &d};
  if (d.print) {
    printf("# input: %s\n", o.name);
    print_ir(&d, j);
  }
  if (!(r = ft_transform_ex(ctx, j, o.expr, &topts))) {
    fflush(stdout);
    ftc_fail("transform", "%s", ft_ctx_error(ctx));
    goto done;
  }
  if (!o.dump && !o.quiet) print_ir(&d, r);
  if (d.failed) {
    ftc_fail("transform", "out of memory printing the IR");
    goto done;
  }
  rc = o.run ? run(ctx, r, d.saw_jit, in, o.n_ins, o.out_dir) : 0;
done:
  for (int i = 0; i < o.n_ins; i++) ft_array_free(in[i]);
  ft_jaxpr_free(r);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
  return rc;
}
