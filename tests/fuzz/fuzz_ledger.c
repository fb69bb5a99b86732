/* tests/fuzz/fuzz_ledger.c: the ledger reader (verify, recover, export,
 * replay). The input is unpacked into a ledger directory:
 *
 *   byte 0          flags: 1 recover, 2 export, 4 replay, 8 reexec
 *   then sections separated by SEP:
 *     log.jsonl, parity/log.par, parity/log.tail,
 *     then pairs: an object (stored as objects/<its hash>), its parity file
 *   an empty section other than the log means the file is absent.
 *
 * Properties: every call returns a status and a report without crashing;
 * verify's verdict is one of the three; a recover that returns FT_OK leaves
 * a ledger that verifies clean, and a second recover changes nothing. */
#include <fcntl.h>
#include <ftw.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "ft.h"
#include "ledger/ledger.h"

#define SEP "\n--8<--\n"

static ft_ctx *ctx;
static char root[64], dir[96];

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  remove(p);
  return 0;
}

static void rm_tree(const char *p) { nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

static void cleanup(void) {
  if (root[0]) rm_tree(root);
}

static void put(const char *rel, const uint8_t *d, size_t n) {
  char p[256];
  snprintf(p, sizeof p, "%s/%s", dir, rel);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) abort();
  if (n && write(fd, d, n) != (ssize_t)n) abort();
  close(fd);
}

/* The next section of [*p, end): its start and length; false when none is left. */
static bool next_section(const uint8_t **p, const uint8_t *end, const uint8_t **s, size_t *n) {
  if (!*p) return false;
  const uint8_t *q = memmem(*p, (size_t)(end - *p), SEP, strlen(SEP));
  *s = *p;
  *n = (size_t)((q ? q : end) - *p);
  *p = q ? q + strlen(SEP) : NULL;
  return true;
}

static void unpack(const uint8_t *data, size_t size) {
  rm_tree(dir);
  if (mkdir(dir, 0755)) abort();
  char sub[256];
  snprintf(sub, sizeof sub, "%s/objects", dir);
  mkdir(sub, 0755);
  snprintf(sub, sizeof sub, "%s/parity", dir);
  mkdir(sub, 0755);
  snprintf(sub, sizeof sub, "%s/parity/obj", dir);
  mkdir(sub, 0755);
  const uint8_t *p = data, *end = data + size, *s;
  size_t n;
  static const char *fixed[] = {"log.jsonl", "parity/log.par", "parity/log.tail"};
  for (int i = 0; i < 3 && next_section(&p, end, &s, &n); i++)
    if (i == 0 || n) put(fixed[i], s, n);
  for (int k = 0; k < 64 && next_section(&p, end, &s, &n); k++) {
    char hex[33], rel[128];
    ft_lhash_hex(s, n, hex);
    snprintf(rel, sizeof rel, "objects/%.2s", hex);
    snprintf(sub, sizeof sub, "%s/%s", dir, rel);
    mkdir(sub, 0755);
    snprintf(rel, sizeof rel, "objects/%.2s/%s", hex, hex + 2);
    put(rel, s, n);
    if (!next_section(&p, end, &s, &n)) break;
    if (n) {
      snprintf(rel, sizeof rel, "parity/obj/%s", hex);
      put(rel, s, n);
    }
  }
}

static void check_report(ft_status st, const ft_ledger_report *r, const char *what) {
  if (st != FT_OK) {
    FUZZ_CHECK(ft_ctx_status(ctx) != FT_OK && ft_ctx_error(ctx)[0], "%s failed silently", what);
    return;
  }
  FUZZ_CHECK(r->health == FT_LEDGER_CLEAN || r->health == FT_LEDGER_TORN ||
                 r->health == FT_LEDGER_CORRUPT, "%s: health %d", what, (int)r->health);
  FUZZ_CHECK(r->records >= 0, "%s: %lld records", what, (long long)r->records);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!ctx) {
    if (!(ctx = ft_ctx_new(&(ft_ctx_options){.size = sizeof(ft_ctx_options), .num_threads = 1}))) abort();
    const char *tmp = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/ftfuzz-ledger-XXXXXX", tmp && strlen(tmp) < 32 ? tmp : "/tmp");
    if (!mkdtemp(root)) abort();
    snprintf(dir, sizeof dir, "%s/L", root);
    atexit(cleanup);
    ft_ledger_fault_nosync(true);
  }
  if (size < 1) return 0;
  unsigned flags = data[0];
  unpack(data + 1, size - 1);
  ft_ctx_clear_error(ctx);
  ft_ledger_report r = {0};
  ft_status st = ft_ledger_verify(ctx, dir, &r);
  check_report(st, &r, "verify");
  ft_ledger_report_free(&r);
  if (flags & 2) {
    for (int f = FT_LEDGER_JSON; f <= FT_LEDGER_DOT; f++) {
      ft_ctx_clear_error(ctx);
      char *s = ft_ledger_export(ctx, dir, (ft_ledger_format)f);
      FUZZ_CHECK(s || ft_ctx_error(ctx)[0], "export %d failed silently", f);
      ft_free(s);
    }
  }
  if (flags & 4) {
    ft_ledger_report rr = {0};
    ft_ctx_clear_error(ctx);
    check_report(ft_ledger_replay(ctx, dir, &rr), &rr, "replay");
    ft_ledger_report_free(&rr);
  }
  if (flags & 8) {
    ft_ledger_report rr = {0};
    ft_ctx_clear_error(ctx);
    check_report(ft_ledger_reexec(ctx, dir, &rr), &rr, "reexec");
    ft_ledger_report_free(&rr);
  }
  if (flags & 1) {
    ft_ledger_report rc = {0}, rv = {0};
    ft_ctx_clear_error(ctx);
    st = ft_ledger_recover(ctx, dir, &rc);
    check_report(st, &rc, "recover");
    if (st == FT_OK) {
      ft_status sv = ft_ledger_verify(ctx, dir, &rv);
      FUZZ_CHECK(sv == FT_OK && rv.health == FT_LEDGER_CLEAN,
                 "recover said FT_OK but verify then says %d (status %d): %s", (int)rv.health, sv,
                 rv.json ? rv.json : "");
    }
    ft_ledger_report_free(&rc);
    ft_ledger_report_free(&rv);
  }
  return 0;
}
