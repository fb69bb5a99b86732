/* tools/ftc.c: the ftc driver. It dispatches to one function per subcommand
 * (listed once in ftc_cmds.def) and owns the shared CLI helpers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void usage(FILE *out) {
  fprintf(out, "usage: ftc <command> [options] [FILE]\n\n"
               "FrankenTrace: JAX's jaxprs, transforms and JIT in C.\n\ncommands:\n");
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
    fprintf(out, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
  fprintf(out, "\n'ftc <command> --help' describes one command. FILE '-' reads standard input.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) { usage(stderr); return 2; }
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) { printf("ftc %s\n", ft_version()); return 0; }
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
    if (!strcmp(argv[1], cmds[i].name)) return cmds[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "ftc: unknown command '%s' (try 'ftc --help')\n", argv[1]);
  return 2;
}
