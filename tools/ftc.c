/* tools/ftc.c: the ftc driver. It dispatches to one function per subcommand
 * (listed once in ftc_cmds.def) and owns the shared CLI helpers, among them
 * the global options --ledger DIR and --ledger-calls LEVEL: they may appear
 * anywhere on the line, are removed before the command sees its arguments,
 * and attach the opened ledger to every context a command makes with
 * ftc_ctx_new(). */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include "blas_threads.h"
#include "ftc.h"

typedef struct { const char *name, *summary; int (*fn)(int, char **); } ftc_cmd;

static const ftc_cmd cmds[] = {
#define FTC_CMD(name, summary) {#name, summary, ftc_cmd_##name},
#include "ftc_cmds.def"
#undef FTC_CMD
};

int ftc_wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return 1;
  return 0;
}

int ftc_fail(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "ftc %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return 1;
}

/* f16 and bf16 bits as a float (exact: every value of either is a float). */
static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu, u;
  if (e == 0x1f) u = sign | 0x7f800000u | (m << 13);                /* inf, nan */
  else if (e) u = sign | ((e + 112) << 23) | (m << 13);              /* normal */
  else if (!m) u = sign;                                             /* +-0 */
  else {                                                             /* subnormal: m * 2^-24 */
    float f = (float)m * 0x1p-24f;
    return sign ? -f : f;
  }
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static float bf16_to_float(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* d with the fewest significant digits (15 to 17) that read back as d. */
static void print_f64(double d) {
  char b[40];
  for (int p = 15; p <= 17; p++) {
    snprintf(b, sizeof b, "%.*g", p, d);
    if (strtod(b, NULL) == d || d != d) break;
  }
  fputs(b, stdout);
}

void ftc_print_values(const ft_array *a, int64_t max) {
  ft_aval av = ft_array_aval(a);
  int64_t n = ft_aval_size(&av);
  const void *p = ft_array_data(a);
  putchar('[');
  for (int64_t i = 0; i < n && i < max; i++) {
    if (i) fputs(", ", stdout);
    switch (av.dtype) {
    case FT_BOOL: printf("%d", ((const uint8_t *)p)[i] != 0); break;
    case FT_I8: printf("%d", ((const int8_t *)p)[i]); break;
    case FT_I16: printf("%d", ((const int16_t *)p)[i]); break;
    case FT_I32: printf("%ld", (long)((const int32_t *)p)[i]); break;
    case FT_I64: printf("%lld", (long long)((const int64_t *)p)[i]); break;
    case FT_U8: printf("%u", ((const uint8_t *)p)[i]); break;
    case FT_U16: printf("%u", ((const uint16_t *)p)[i]); break;
    case FT_U32: printf("%lu", (unsigned long)((const uint32_t *)p)[i]); break;
    case FT_U64: printf("%llu", (unsigned long long)((const uint64_t *)p)[i]); break;
    case FT_F16: printf("%.9g", (double)half_to_float(((const uint16_t *)p)[i])); break;
    case FT_BF16: printf("%.9g", (double)bf16_to_float(((const uint16_t *)p)[i])); break;
    case FT_F32: printf("%.9g", (double)((const float *)p)[i]); break;
    case FT_F64: print_f64(((const double *)p)[i]); break;
    case FT_C64: {
      const float *c = (const float *)p + 2 * i;
      printf("%.9g%+.9gj", (double)c[0], (double)c[1]);
      break;
    }
    case FT_C128: {
      const double *c = (const double *)p + 2 * i;
      print_f64(c[0]);
      if (!(c[1] < 0) && !signbit(c[1])) putchar('+');
      print_f64(c[1]);
      putchar('j');
      break;
    }
    default: fputs("?", stdout); break;
    }
  }
  fputs(n > max ? ", ...]" : "]", stdout);
}

int ftc_usage(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "ftc %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (try 'ftc help %s')\n", cmd);
  return 2;
}

/* getopt_long's two spellings of a long option's value: "--argnums=0,1"
 * becomes "--argnums" "0,1" here, once, so every command's parser sees only
 * the separate form. After a "--" nothing is split (the commands take no
 * "--" themselves). Returns a new argv (malloc'd, NULL-terminated) or NULL
 * when out of memory. */
static char **split_long_options(int *argc, char **argv) {
  char **out = malloc(sizeof *out * (2 * (size_t)*argc + 1));
  if (!out) return NULL;
  int n = 0;
  bool opts = true;
  for (int i = 0; i < *argc; i++) {
    char *a = argv[i], *eq = strchr(a, '=');
    if (opts && !strcmp(a, "--")) opts = false;
    if (i && opts && !strncmp(a, "--", 2) && eq && eq > a + 2) {
      *eq = 0;  /* argv's strings are ours to modify (C11 5.1.2.2.1) */
      out[n++] = a;
      out[n++] = eq + 1;
    } else {
      out[n++] = a;
    }
  }
  out[n] = NULL;
  *argc = n;
  return out;
}

char *ftc_read_file(const char *path, size_t *len_out) {
  FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
  if (!f) return NULL;
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t n = fread(buf + len, 1, cap - len - 1, f);
    len += n;
    if (len + 1 < cap) break;
    char *nb = realloc(buf, cap *= 2);
    if (!nb) { free(buf); buf = NULL; }
    else buf = nb;
  }
  int err = ferror(f);
  if (f != stdin) fclose(f);
  if (!buf || err) { free(buf); return NULL; }
  buf[len] = 0;
  if (len_out) *len_out = len;
  return buf;
}

static ft_ledger *ledger;   /* --ledger DIR, open for the whole run */
static ft_ctx *ledger_ctx;  /* the context it was opened with (owns its errors) */
static ft_ctx_options ctx_opts = FT_CTX_OPTIONS_INIT;  /* --mode, --guard-fail, --guard-each-step */
static ft_jit_options jit_opts = FT_JIT_OPTIONS_INIT;  /* --allow-fallback */

const ft_jit_options *ftc_jit_options(void) { return &jit_opts; }

/* MPI (issue 27, docs/spmd.md): under mpirun (Open MPI's, PMIx's or
 * Hydra's environment) or with --dist, every context a command makes runs
 * shard_maps across the ranks. dist_ctx holds the first communicator;
 * --ledger DIR becomes DIR/rank<R> per rank. */
static bool dist_on;
static ft_ctx *dist_ctx;

static bool under_mpirun(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

bool ftc_dist_on(void) { return dist_on; }

int ftc_dist_rank(void) { return dist_ctx ? ft_dist_rank(dist_ctx) : 0; }

ft_ledger *ftc_ledger(void) { return ledger; }

void ftc_report_guards(const char *cmd, const ft_ctx *ctx) {
  for (int i = 0; i < ft_ctx_num_guards(ctx); i++) {
    ft_guard_event g;
    if (ft_ctx_get_guard(ctx, i, &g)) break;
    fprintf(stderr, "ftc %s: guard %s (%s) in %s: %s\n", cmd, ft_guard_kind_name(g.kind),
            g.decision == FT_GUARD_CONTINUED ? "continued" : "failed", g.engine, g.message);
  }
}

ft_ctx *ftc_ctx_new(void) {
  ft_ctx *ctx = ft_ctx_new(&ctx_opts);
  if (!ctx) {
    fprintf(stderr, "ftc: out of memory\n");
    return NULL;
  }
  if ((ledger && ft_ctx_attach_ledger(ctx, ledger) != FT_OK) || (dist_on && ft_dist_init(ctx, NULL) != FT_OK)) {
    fprintf(stderr, "ftc: %s\n", ft_ctx_error(ctx));
    ft_ctx_free(ctx);
    return NULL;
  }
  return ctx;
}

/* Takes --ledger DIR and --ledger-calls LEVEL out of argv (in place) and
 * opens the ledger. Returns 0, or the exit status of a usage error (2) or of
 * a ledger that cannot be opened (1). */
static int global_options(int *argc, char **argv) {
  const char *dir = NULL, *calls = "bytes";
  int n = 1;
  for (int i = 1; i < *argc; i++) {
    bool is_dir = !strcmp(argv[i], "--ledger"), is_calls = !strcmp(argv[i], "--ledger-calls");
    bool is_mode = !strcmp(argv[i], "--mode");
    if (!strcmp(argv[i], "--guard-fail")) { ctx_opts.guard_fail = true; continue; }
    if (!strcmp(argv[i], "--guard-each-step")) { ctx_opts.guard_each_step = true; continue; }
    if (!strcmp(argv[i], "--allow-fallback")) { jit_opts.allow_fallback = true; continue; }
    if (!strcmp(argv[i], "--dist")) { dist_on = true; continue; }
    if (!strcmp(argv[i], "--custom-jvp")) {  /* --custom-jvp=MODE, split already */
      const char *m = i + 1 < *argc ? argv[++i] : "";
      if (!strcmp(m, "refuse")) ctx_opts.custom_jvp = FT_CUSTOM_JVP_REFUSE;
      else if (!strcmp(m, "primal")) ctx_opts.custom_jvp = FT_CUSTOM_JVP_PRIMAL;
      else {
        fprintf(stderr, "ftc: --custom-jvp takes refuse or primal, not '%s'\n", m);
        return 2;
      }
      continue;
    }
    if (!is_dir && !is_calls && !is_mode) {
      argv[n++] = argv[i];
      continue;
    }
    if (is_mode) {
      const char *m = i + 1 < *argc ? argv[++i] : "";
      if (!strcmp(m, "strict")) ctx_opts.mode = FT_MODE_STRICT;
      else if (!strcmp(m, "hardened")) ctx_opts.mode = FT_MODE_HARDENED;
      else {
        fprintf(stderr, "ftc: --mode takes strict or hardened, not '%s'\n", m);
        return 2;
      }
      continue;
    }
    if (i + 1 >= *argc) {
      fprintf(stderr, "ftc: %s needs a value\n", argv[i]);
      return 2;
    }
    if (is_dir) dir = argv[++i];
    else calls = argv[++i];
  }
  argv[n] = NULL;
  *argc = n;
  ft_ledger_options o = {.size = sizeof(ft_ledger_options)};
  if (!strcmp(calls, "none")) o.calls = FT_LEDGER_CALLS_NONE;
  else if (!strcmp(calls, "hashes")) o.calls = FT_LEDGER_CALLS_HASHES;
  else if (!strcmp(calls, "bytes")) o.calls = FT_LEDGER_CALLS_BYTES;
  else {
    fprintf(stderr, "ftc: --ledger-calls takes none, hashes or bytes, not '%s'\n", calls);
    return 2;
  }
  if ((ctx_opts.guard_fail || ctx_opts.guard_each_step) && ctx_opts.mode != FT_MODE_HARDENED) {
    fprintf(stderr, "ftc: --guard-fail and --guard-each-step need --mode hardened\n");
    return 2;
  }
  if (dist_on || under_mpirun()) {
    dist_on = true;
    if (!(dist_ctx = ft_ctx_new(&ctx_opts))) return fprintf(stderr, "ftc: out of memory\n"), 1;
    if (ft_dist_init(dist_ctx, NULL) != FT_OK) {
      fprintf(stderr, "ftc: --dist: %s\n", ft_ctx_error(dist_ctx));
      return 1;
    }
  }
  if (!dir) return 0;
  char rank_dir[4096];
  if (dist_on) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
      fprintf(stderr, "ftc: --ledger %s: %s\n", dir, strerror(errno));
      return 1;
    }
    snprintf(rank_dir, sizeof rank_dir, "%s/rank%d", dir, ft_dist_rank(dist_ctx));
    dir = rank_dir;
  }
  if (!(ledger_ctx = ft_ctx_new(&ctx_opts)) || !(ledger = ft_ledger_open(ledger_ctx, dir, &o))) {
    fprintf(stderr, "ftc: --ledger %s: %s\n", dir, ledger_ctx ? ft_ctx_error(ledger_ctx) : "out of memory");
    ft_ctx_free(ledger_ctx);
    return 1;
  }
  return 0;
}

/* Closes the ledger after the command; a failed final sync fails the run. */
static int close_ledger(int rc) {
  if (!ledger) return rc;
  if (ft_ledger_close(ledger) != FT_OK) {
    fprintf(stderr, "ftc: the ledger could not be synced to disk\n");
    if (!rc) rc = 1;
  }
  ft_ctx_free(ledger_ctx);
  return rc;
}

static void usage(FILE *out) {
  fprintf(out, "usage: ftc <command> [options] [FILE]\n\n"
               "FrankenTrace: JAX's jaxprs, transforms and JIT in C.\n\ncommands:\n");
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
    fprintf(out, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
  fprintf(out, "\n'ftc help <command>' (or 'ftc <command> --help') describes one command.\n"
               "FILE '-' reads standard input. Options take values as '--opt VALUE' or\n"
               "'--opt=VALUE'. Exit status: 0 success, 1 failure, 2 usage error.\n"
               "\nglobal options (anywhere on the line):\n"
               "  --ledger DIR           record what the command does in the ledger DIR\n"
               "                         (created if absent; check it with ftledger)\n"
               "  --ledger-calls LEVEL   none, hashes or bytes (the default): how much of\n"
               "                         each run of a program the ledger keeps; bytes\n"
               "                         lets 'ftledger reexec' re-run it\n"
               "  --mode MODE            strict (the default: fail closed on anything\n"
               "                         unknown) or hardened (also guard at run time:\n"
               "                         NaN/Inf in outputs, promised index bounds, loop\n"
               "                         budgets, the call boundary; each firing is\n"
               "                         printed and written to the ledger)\n"
               "  --guard-fail           hardened: a guard that fires fails the run\n"
               "  --guard-each-step      hardened: also check each equation / JIT step\n"
               "                         for NaN/Inf appearing in its results\n"
               "  --custom-jvp=primal    differentiate a custom_jvp function whose rule\n"
               "                         JAX printed only by name (jvp=softplus_jvp) as\n"
               "                         if it had no rule (refused by default). WRONG\n"
               "                         wherever the rule is not the plain derivative\n"
               "                         (a 'where' giving 0 at a singular point); known\n"
               "                         JAX rules (jax.nn.relu, relu6) are exact anyway\n"
               "  --allow-fallback       let the JIT run equations it does not compile\n"
               "                         through the interpreter (refused by default)\n"
               "  --dist                 run shard_maps across MPI ranks, one block of\n"
               "                         mesh indices per rank (implied under mpirun:\n"
               "                         'mpirun -n 2 ftc run f.jaxpr --in x.npy'); every\n"
               "                         rank reads the same inputs, rank 0 writes the\n"
               "                         outputs, --ledger DIR keeps DIR/rank<R> per rank\n");
}

/* For a JAX transform's name that is not a command, where its work is done. */
static const char *jax_name_hint(const char *name) {
  static const struct { const char *name, *hint; } hints[] = {
      {"jit", ": to run with the JIT, 'ftc run FILE --engine jit --in ...'; to compile ahead of "
              "time, 'ftc compile'; in a stack, 'ftc transform \"jit(grad(f))\"'"},
      {"value_and_grad", ": 'ftc grad FILE --value'"},
      {"jacobian", ": 'ftc jacfwd' or 'ftc jacrev'"},
      {"linearize", ": 'ftc jvp'"},
  };
  for (size_t i = 0; i < sizeof hints / sizeof hints[0]; i++)
    if (!strcmp(name, hints[i].name)) return hints[i].hint;
  return "";
}

/* The command line after split_long_options; returns the exit status. */
static int run(int argc, char **argv) {
  int st = global_options(&argc, argv);
  if (st) return st;
  if (argc < 2) { usage(stderr); return close_ledger(2); }
  if (!strcmp(argv[1], "help") && argc >= 3) {  /* ftc help CMD: that command's --help */
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
      if (!strcmp(argv[2], cmds[i].name)) return close_ledger(cmds[i].fn(2, (char *[]){argv[2], "--help", NULL}));
    fprintf(stderr, "ftc help: unknown command '%s' (try 'ftc help')\n", argv[2]);
    return close_ledger(2);
  }
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || (!strcmp(argv[1], "help") && argc == 2)) {
    usage(stdout);
    return close_ledger(0);
  }
  if (!strcmp(argv[1], "--version")) { printf("ftc %s\n", ft_version()); return close_ledger(0); }
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
    if (!strcmp(argv[1], cmds[i].name)) return close_ledger(cmds[i].fn(argc - 1, argv + 1));
  fprintf(stderr, "ftc: unknown command '%s'%s (try 'ftc --help')\n", argv[1], jax_name_hint(argv[1]));
  return close_ledger(2);
}

int main(int argc, char **argv) {
  tool_blas_single_threaded(argv);
  char **args = split_long_options(&argc, argv);
  if (!args) {
    fprintf(stderr, "ftc: out of memory\n");
    return 1;
  }
  int rc = run(argc, args);
  free(args);
  if (dist_on) {
    ft_ctx_free(dist_ctx);
    if (rc) fflush(NULL);
    ft_dist_shutdown(rc); /* a failed rank aborts the others: none waits forever */
  }
  return rc;
}
