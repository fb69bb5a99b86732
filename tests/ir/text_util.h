/* tests/ir/text_util.h: helpers shared by the IR text tests (reading fixture
 * files, listing a directory's .jaxpr files). Header-only: each test is one
 * executable. */
#ifndef FT_TEST_TEXT_UTIL_H
#define FT_TEST_TEXT_UTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads a whole file; NULL if it cannot. Caller frees. */
static inline char *tu_slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (!b) {
    fclose(f);
    return NULL;
  }
  *len = fread(b, 1, (size_t)n, f);
  b[*len] = 0;
  fclose(f);
  return b;
}

static int tu_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The sorted paths of dir's *.jaxpr files; *n receives the count. Free each
 * path and the array. */
static inline char **tu_list(const char *dir, int *n) {
  *n = 0;
  DIR *d = opendir(dir);
  if (!d) return NULL;
  char **v = NULL;
  int cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 7 || strcmp(e->d_name + l - 6, ".jaxpr")) continue;
    if (*n == cap) {
      cap = cap ? cap * 2 : 64;
      v = realloc(v, sizeof *v * (size_t)cap);
    }
    size_t pl = strlen(dir) + l + 2;
    v[*n] = malloc(pl);
    snprintf(v[*n], pl, "%s/%s", dir, e->d_name);
    (*n)++;
  }
  closedir(d);
  if (*n) qsort(v, (size_t)*n, sizeof *v, tu_cmp);
  return v;
}

static inline void tu_free_list(char **v, int n) {
  for (int i = 0; i < n; i++) free(v[i]);
  free(v);
}

#endif
