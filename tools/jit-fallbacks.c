/* tools/jit-fallbacks: counts the JIT's fallback steps (equations that run
 * the interpreter's rule instead of compiled code, docs/jit.md) over a set
 * of jaxpr files, at every depth (control-flow sub-programs included), and
 * groups them by primitive, operand dtypes and reason.
 *
 *   jit-fallbacks [--no-optimize] [--files] PATH...
 *
 * A PATH is a .jaxpr file or a folder searched recursively for them (the
 * usual run: `jit-fallbacks fixtures`). Each file is planned as ft_jit plans
 * it: the exact-tier e-graph rewrite first (--no-optimize skips it, as
 * `ftc compile --emit plan` does), then ft_program_plan; no code is
 * generated. --files also lists every file with a fallback. Files that do
 * not parse or plan are counted and named on stderr. Exit status 0, or 2 on
 * a usage error. The plan comes from the public call ft_jit_plan_fallbacks
 * (src/api/tools.c). */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ft.h"

typedef struct group {
  char key[256];
  int n;
} group;

typedef struct tally {
  group *g;
  int n_g, cap_g;
  int files, with_fallback, failed, total, nested;
  bool optimize, list_files;
} tally;

static void add_group(tally *t, const char *key) {
  for (int i = 0; i < t->n_g; i++)
    if (!strcmp(t->g[i].key, key)) {
      t->g[i].n++;
      return;
    }
  if (t->n_g == t->cap_g) {
    int cap = t->cap_g ? 2 * t->cap_g : 32;
    group *ng = realloc(t->g, (size_t)cap * sizeof *ng);
    if (!ng) return;
    t->g = ng;
    t->cap_g = cap;
  }
  snprintf(t->g[t->n_g].key, sizeof t->g[t->n_g].key, "%s", key);
  t->g[t->n_g++].n = 1;
}

/* Tallies the "DEPTH KEY" lines of ft_jit_plan_fallbacks. */
static void add_lines(tally *t, char *lines) {
  for (char *l = lines; l && *l;) {
    char *nl = strchr(l, '\n');
    if (nl) *nl = '\0';
    char *key = strchr(l, ' ');
    if (key) {
      add_group(t, key + 1);
      t->nested += atoi(l) > 0;
    }
    l = nl ? nl + 1 : l + strlen(l);
  }
}

static void one_file(tally *t, const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "jit-fallbacks: cannot read %s\n", path);
    t->failed++;
    return;
  }
  char *text = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 4096 > cap) {
      cap = cap ? 2 * cap : 65536;
      char *nt = realloc(text, cap);
      if (!nt) break;
      text = nt;
    }
    size_t r = fread(text + len, 1, cap - len, f);
    len += r;
    if (r == 0) break;
  }
  fclose(f);
  t->files++;
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_jaxpr *j = text ? ft_parse(ctx, text, len, path) : NULL;
  free(text);
  int n = 0;
  char *lines = NULL;
  if (!j || ft_jit_plan_fallbacks(ctx, j, &n, &lines, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_optimize = !t->optimize})) {
    fprintf(stderr, "jit-fallbacks: %s: %s\n", path, ft_ctx_error(ctx));
    t->failed++;
  } else {
    add_lines(t, lines);
    t->total += n;
    t->with_fallback += n > 0;
    if (n && t->list_files) printf("%4d  %s\n", n, path);
  }
  ft_free(lines);
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Files in sorted order, so runs print the same list. */
static void one_path(tally *t, const char *path) {
  struct stat st;
  if (stat(path, &st)) {
    fprintf(stderr, "jit-fallbacks: no such file or folder: %s\n", path);
    t->failed++;
    return;
  }
  if (!S_ISDIR(st.st_mode)) {
    one_file(t, path);
    return;
  }
  DIR *d = opendir(path);
  if (!d) return;
  char **names = NULL;
  int n = 0, cap = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 256;
      char **nn = realloc(names, (size_t)cap * sizeof *nn);
      if (!nn) break;
      names = nn;
    }
    names[n++] = strdup(de->d_name);
  }
  closedir(d);
  if (n) qsort(names, (size_t)n, sizeof *names, by_name);
  for (int i = 0; i < n; i++) {
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/%s", path, names[i]);
    size_t l = strlen(names[i]);
    struct stat ss;
    if (!stat(sub, &ss) && S_ISDIR(ss.st_mode)) one_path(t, sub);
    else if (l > 6 && !strcmp(names[i] + l - 6, ".jaxpr")) one_file(t, sub);
    free(names[i]);
  }
  free(names);
}

static int by_count(const void *a, const void *b) {
  const group *x = a, *y = b;
  return x->n != y->n ? y->n - x->n : strcmp(x->key, y->key);
}

int main(int argc, char **argv) {
  tally t = {.optimize = true};
  int n_paths = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--no-optimize")) t.optimize = false;
    else if (!strcmp(argv[i], "--files")) t.list_files = true;
    else if (argv[i][0] == '-') {
      fprintf(stderr, "usage: %s [--no-optimize] [--files] PATH...\n", argv[0]);
      return 2;
    } else n_paths++;
  }
  if (!n_paths) {
    fprintf(stderr, "usage: %s [--no-optimize] [--files] PATH...\n", argv[0]);
    return 2;
  }
  for (int i = 1; i < argc; i++)
    if (argv[i][0] != '-') one_path(&t, argv[i]);
  if (t.n_g) qsort(t.g, (size_t)t.n_g, sizeof *t.g, by_count);
  printf("%d files (%d not planned), %d with fallback steps; %d fallback steps (%d inside "
         "control-flow sub-programs)%s\n",
         t.files, t.failed, t.with_fallback, t.total, t.nested,
         t.optimize ? "" : "; exact-tier rewrite skipped");
  for (int i = 0; i < t.n_g; i++) printf("%5d  %s\n", t.g[i].n, t.g[i].key);
  free(t.g);
  return 0;
}
