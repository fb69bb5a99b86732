/* tests/ledger/lt.c: see lt.h. */
#include "lt.h"

#include <ctype.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *lt_tmpdir(void) {
  const char *base = getenv("TMPDIR");
  char *t = ft_lio_path("%s/ftledger-test-XXXXXX", base && *base ? base : "/tmp");
  ck_assert_ptr_nonnull(t);
  ck_assert_ptr_nonnull(mkdtemp(t));
  return t;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb; (void)flag; (void)ftw;
  return remove(p);
}

void lt_rmrf(char *dir) {
  if (!dir) return;
  nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  free(dir);
}

ft_ledger *lt_open(ft_ctx *ctx, const char *dir, int k, int m, int block) {
  ft_ledger_options o = {.size = sizeof(ft_ledger_options), .fsync = FT_LEDGER_FSYNC_NEVER, .calls = FT_LEDGER_CALLS_BYTES,
                         .parity_k = k, .parity_m = m, .block_size = block};
  ft_ledger *lg = ft_ledger_open(ctx, dir, &o);
  ck_assert_msg(lg != NULL, "open %s: %s", dir, ft_ctx_error(ctx));
  ck_assert_int_eq(ft_ctx_attach_ledger(ctx, lg), FT_OK);
  return lg;
}

const char *lt_text(int i) {
  static char buf[256];
  snprintf(buf, sizeof buf, "{ lambda ; a:f32[%d]. let b:f32[%d] = sin a in (b) } # step %d",
           i + 1, i + 1, i);
  return buf;
}

ft_status lt_append(ft_ctx *ctx, int i) {
  char in[256], out[256], params[64];
  snprintf(in, sizeof in, "%s", lt_text(i));
  size_t n = strlen(in);
  for (size_t j = 0; j <= n; j++) out[j] = (char)toupper((unsigned char)in[j]);
  snprintf(params, sizeof params, "{\"i\":%d,\"argnums\":[0]}", i);
  ft_ledger_obj inp = {.name = "jaxpr", .data = in, .len = n};
  ft_ledger_obj outp = {.name = "jaxpr", .data = out, .len = n};
  ft_ledger_rule rules[2] = {{"sin.jvp", 1 + i % 3, NULL}, {"mul.transpose", 2, "(mul a b) ~ x"}};
  ft_ledger_event ev = {.kind = FT_LEDGER_TRANSFORM, .op = "upper", .params_json = params,
                        .inputs = &inp, .n_inputs = 1, .outputs = &outp, .n_outputs = 1,
                        .fired = rules, .n_fired = 2, .time_ns = 1000 + i};
  return ft_ledger_record(ctx, &ev);
}

void lt_make(const char *dir, int n, int k, int m, int block) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger *lg = lt_open(ctx, dir, k, m, block);
  for (int i = 0; i < n; i++) ck_assert_int_eq(lt_append(ctx, i), FT_OK);
  ck_assert_int_eq(ft_ledger_num_records(lg), n);
  ck_assert_int_eq(ft_ledger_close(lg), FT_OK);
  ft_ctx_free(ctx);
}

ft_ledger_health lt_health(const char *dir) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger_report r;
  ck_assert_int_eq(ft_ledger_verify(ctx, dir, &r), FT_OK);
  ft_ledger_health h = r.health;
  ft_ledger_report_free(&r);
  ft_ctx_free(ctx);
  return h;
}

static lt_snap *snap_cur;

static int snap_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb; (void)ftw;
  if (flag != FTW_F) return 0;
  lt_snap *s = snap_cur;
  s->files = realloc(s->files, (s->n + 1) * sizeof *s->files);
  lt_file *f = &s->files[s->n++];
  f->path = strdup(p + strlen(s->root) + 1);
  ck_assert_int_eq(ft_lio_read_file(p, &f->data, &f->len), 0);
  return 0;
}

static int cmp_file(const void *a, const void *b) {
  return strcmp(((const lt_file *)a)->path, ((const lt_file *)b)->path);
}

void lt_snap_take(const char *dir, lt_snap *s) {
  memset(s, 0, sizeof *s);
  s->root = strdup(dir);
  snap_cur = s;
  nftw(dir, snap_one, 16, FTW_PHYS);
  qsort(s->files, s->n, sizeof *s->files, cmp_file);
}

void lt_snap_free(lt_snap *s) {
  for (size_t i = 0; i < s->n; i++) {
    free(s->files[i].path);
    free(s->files[i].data);
  }
  free(s->files);
  free(s->root);
  memset(s, 0, sizeof *s);
}

const char *lt_snap_diff(const lt_snap *a, const lt_snap *b) {
  size_t i = 0;
  for (; i < a->n && i < b->n; i++) {
    const lt_file *x = &a->files[i], *y = &b->files[i];
    if (strcmp(x->path, y->path)) return x->path;
    if (x->len != y->len || memcmp(x->data, y->data, x->len)) return x->path;
  }
  if (i < a->n) return a->files[i].path;
  if (i < b->n) return b->files[i].path;
  return NULL;
}

void lt_snap_restore_file(const lt_snap *s, size_t i) {
  char *p = ft_lio_path("%s/%s", s->root, s->files[i].path);
  int fd = open(p, O_WRONLY | O_TRUNC);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ft_lio_pwrite(fd, s->files[i].data, s->files[i].len, 0), 0);
  close(fd);
  free(p);
}

void lt_poke(const char *root, const char *path, size_t off, uint8_t v) {
  char *p = ft_lio_path("%s/%s", root, path);
  int fd = open(p, O_WRONLY);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(pwrite(fd, &v, 1, (off_t)off), 1);
  close(fd);
  free(p);
}
