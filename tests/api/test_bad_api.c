/* tests/api/test_bad_api.c: the bad-input table of the C API (issue 18).
 * Each row misuses one public function and asserts the status, that the
 * message on the context names what is wrong and where (a substring), and
 * that no file was written or left half-written in the output directory.
 * Run with FT_BAD_API_LIST=1 to print each row's status and message. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ft.h"

static ft_ctx *C;
static char dir[256], odir[300];
static ft_jaxpr *SIN, *TWO, *INT, *LOOP;
static ft_array *F3, *F4, *I3;

static ft_jaxpr *parse(const char *t) {
  ft_jaxpr *j = ft_parse(C, t, strlen(t), "t");
  if (!j) {
    fprintf(stderr, "setup: %s\n", ft_ctx_error(C));
    exit(2);
  }
  return j;
}

/* Runs a jaxpr-returning call: FT_OK when it returned one (freed). */
static ft_status jx(ft_jaxpr *j) {
  if (!j) return ft_ctx_status(C);
  ft_jaxpr_free(j);
  return FT_OK;
}
static ft_status ax(ft_array *a) {
  if (!a) return ft_ctx_status(C);
  ft_array_free(a);
  return FT_OK;
}
static ft_status sx(char *s) {
  if (!s) return ft_ctx_status(C);
  ft_free(s);
  return FT_OK;
}
static ft_status fx(ft_fn *f) {
  if (!f) return ft_ctx_status(C);
  ft_fn_free(f);
  return FT_OK;
}
static ft_status ex(ft_jaxpr *j, int n_in, ft_array **in, int n_out) {
  ft_array *out[4] = {0};
  ft_status st = ft_eval(C, j, n_in, (const ft_array *const *)in, n_out, out);
  for (int k = 0; k < 4; k++) ft_array_free(out[k]);
  return st;
}
static ft_status cx(ft_jaxpr *j, int n_in, ft_array **in, int n_out) {
  ft_fn *f = ft_jit(C, j, NULL);
  if (!f) return ft_ctx_status(C);
  ft_array *out[4] = {0};
  ft_status st = ft_call(f, n_in, (const ft_array *const *)in, n_out, out);
  for (int k = 0; k < 4; k++) ft_array_free(out[k]);
  ft_fn_free(f);
  return st;
}
static ft_status tx(const char *expr) { return jx(ft_transform(C, TWO, expr)); }
static ft_status px(const char *text) { return jx(ft_parse(C, text, strlen(text), "api")); }
static ft_status nx(const char *bytes, size_t n) { return ax(ft_npy_read_mem(C, bytes, n, "mem.npy")); }
static char *opath(const char *name) {
  static char p[400];
  snprintf(p, sizeof p, "%s/%s", odir, name);
  return p;
}

typedef struct row {
  const char *name;
  ft_status want;
  const char *msg;  /* a substring of the message */
  ft_status (*run)(void);
} row;

#define ROW(name, want, msg, expr) static ft_status r_##name(void) { return expr; }
#include "test_bad_api.rows"
#undef ROW
#define ROW(name, want, msg, expr) {#name, want, msg, r_##name},
static const row rows[] = {
#include "test_bad_api.rows"
};
#undef ROW

/* The output directory's listing with sizes: must not change. */
static void listing(char *buf, size_t n) {
  buf[0] = 0;
  DIR *d = opendir(odir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
    struct stat st;
    char p[600];
    snprintf(p, sizeof p, "%s/%s", odir, e->d_name);
    stat(p, &st);
    size_t l = strlen(buf);
    snprintf(buf + l, n - l, "%s:%lld ", e->d_name, (long long)st.st_size);
  }
  if (d) closedir(d);
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/ft_bad_api_XXXXXX", tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) return 2;
  snprintf(odir, sizeof odir, "%s/o", dir);
  mkdir(odir, 0777);
  FILE *keep = fopen(opath("keep.npy"), "w");
  fputs("old", keep);
  fclose(keep);
  C = ft_ctx_new(NULL);
  SIN = parse("{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }");
  TWO = parse("{ lambda ; a:f32[3] b:f32[3]. let c:f32[3] = mul a b\n"
              "    d:f32[] = reduce_sum[axes=(0,) out_sharding=None] c in (d,) }");
  INT = parse("{ lambda ; a:i32[3]. let b:i32[] = reduce_sum[axes=(0,) out_sharding=None] a in (b,) }");
  LOOP = parse("{ lambda ; a:c64[3]. let b:c64[] = reduce_max[axes=(0,)] a in (b,) }");
  F3 = ft_array_new(C, FT_F32, 1, (int64_t[]){3});
  F4 = ft_array_new(C, FT_F32, 1, (int64_t[]){4});
  I3 = ft_array_new(C, FT_I32, 1, (int64_t[]){3});
  bool list = getenv("FT_BAD_API_LIST") != NULL;
  int pass = 0, fail = 0;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const row *r = &rows[i];
    char before[4096], after[4096];
    listing(before, sizeof before);
    ft_ctx_clear_error(C);
    ft_status st = r->run();
    const char *msg = ft_ctx_error(C);
    listing(after, sizeof after);
    if (list) printf("%-28s %d %s\n", r->name, st, msg);
    const char *why = st != r->want                 ? "status"
                      : !strstr(msg, r->msg)        ? "message"
                      : strcmp(before, after) != 0  ? "a file in the output directory changed"
                                                    : NULL;
    if (why) {
      fprintf(stderr, "FAIL %s: %s: status %d (want %d), message '%s' (want '%s'); files '%s' -> '%s'\n",
              r->name, why, st, r->want, msg, r->msg, before, after);
      fail++;
    } else {
      pass++;
    }
  }
  ft_array_free(F3), ft_array_free(F4), ft_array_free(I3);
  ft_jaxpr_free(SIN), ft_jaxpr_free(TWO), ft_jaxpr_free(INT), ft_jaxpr_free(LOOP);
  ft_ctx_free(C);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
  printf("%d passed, %d failed\n", pass, fail);
  return fail ? 1 : 0;
}
