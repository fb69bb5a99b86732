/* tests/ledger/test_ledger_damage.c: bit rot. Every single-byte corruption
 * of a small ledger (every offset of every file, two values each) must be
 * detected by verify; random ones of a larger ledger too. Up to m damaged
 * blocks per stripe are repaired byte-exactly; more are reported as
 * unrecoverable and left exactly as they were. A damaged ledger is never
 * opened for writing, and repair's counts agree with its message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lt.h"

/* Flips one byte of file fi at off with mask and checks verify notices. */
static void expect_detected(const char *dir, const lt_snap *s, size_t fi, size_t off,
                            uint8_t mask) {
  const lt_file *f = &s->files[fi];
  lt_poke(dir, f->path, off, f->data[off] ^ mask);
  ft_ledger_health h = lt_health(dir);
  ck_assert_msg(h != FT_LEDGER_CLEAN, "undetected: %s offset %zu mask 0x%02x", f->path, off, mask);
  lt_poke(dir, f->path, off, f->data[off]);
}

START_TEST(test_every_byte_of_small_ledger) {
  char *dir = lt_tmpdir();
  lt_make(dir, 4, 8, 2, 64); /* several complete stripes, a tail, 8 objects */
  lt_snap s;
  lt_snap_take(dir, &s);
  size_t total = 0, checked = 0;
  unsigned seed = 12345;
  for (size_t fi = 0; fi < s.n; fi++) {
    total += s.files[fi].len;
    for (size_t off = 0; off < s.files[fi].len; off++) {
      /* The lowest bit, and a random other change, of every byte. */
      expect_detected(dir, &s, fi, off, 0x01);
      expect_detected(dir, &s, fi, off, (uint8_t)(2 + rand_r(&seed) % 254));
      checked += 2;
    }
  }
  ck_assert_uint_ge(s.n, 19); /* log, log.par, log.tail, 8 objects, 8 parity files */
  ck_assert_uint_gt(total, 2000);
  ck_assert_uint_eq(checked, 2 * total);
  lt_snap t;
  lt_snap_take(dir, &t);
  ck_assert_ptr_null(lt_snap_diff(&s, &t));
  ck_assert_int_eq(lt_health(dir), FT_LEDGER_CLEAN);
  lt_snap_free(&t);
  lt_snap_free(&s);
  lt_rmrf(dir);
}
END_TEST

START_TEST(test_random_bytes_of_larger_ledger) {
  char *dir = lt_tmpdir();
  lt_make(dir, 80, 0, 0, 0); /* default geometry: k=8, m=2, 4096-byte blocks */
  lt_snap s;
  lt_snap_take(dir, &s);
  size_t total = 0;
  for (size_t fi = 0; fi < s.n; fi++) total += s.files[fi].len;
  unsigned seed = 777;
  for (int trial = 0; trial < 300; trial++) {
    /* Pick a byte uniformly over all bytes of the ledger. */
    size_t at = (size_t)rand_r(&seed) % total, fi = 0;
    while (at >= s.files[fi].len) at -= s.files[fi++].len;
    expect_detected(dir, &s, fi, at, (uint8_t)(1 + rand_r(&seed) % 255));
  }
  lt_snap_free(&s);
  lt_rmrf(dir);
}
END_TEST

static size_t file_index(const lt_snap *s, const char *path) {
  for (size_t i = 0; i < s->n; i++)
    if (!strcmp(s->files[i].path, path)) return i;
  ck_abort_msg("no file %s", path);
  return 0;
}

/* Damages one whole block: randomizes 1..len of its bytes (at least one changes). */
static void damage(const char *dir, const lt_snap *s, const char *path, size_t off, size_t len,
                   unsigned *seed) {
  const lt_file *f = &s->files[file_index(s, path)];
  int n = 1 + rand_r(seed) % (int)len;
  for (int i = 0; i < n; i++) {
    size_t o = off + (size_t)rand_r(seed) % len;
    if (o < f->len) lt_poke(dir, path, o, (uint8_t)(f->data[o] ^ (1 + rand_r(seed) % 255)));
  }
}

enum { K = 8, M = 2, B = 64 };

/* Block b of log stripe st: data blocks in log.jsonl, parity in log.par. */
static void damage_log_block(const char *dir, const lt_snap *s, size_t st, int b, unsigned *seed) {
  size_t head = 16 + 8 * (K + M) + 8, es = head + M * B;
  if (b < K) damage(dir, s, "log.jsonl", st * K * B + (size_t)b * B, B, seed);
  else damage(dir, s, "parity/log.par", 64 + st * es + head + (size_t)(b - K) * B, B, seed);
}

static void pick_blocks(int t, int *out, unsigned *seed) {
  for (int i = 0; i < t; i++) {
    bool again;
    do {
      out[i] = rand_r(seed) % (K + M);
      again = false;
      for (int j = 0; j < i; j++) again |= out[j] == out[i];
    } while (again);
  }
}

START_TEST(test_repair_up_to_m_blocks_per_stripe) {
  char *dir = lt_tmpdir();
  lt_make(dir, 30, K, M, B);
  lt_snap orig;
  lt_snap_take(dir, &orig);
  size_t stripes = orig.files[file_index(&orig, "log.jsonl")].len / (K * B);
  ck_assert_uint_ge(stripes, 10);
  unsigned seed = 99;
  ft_ctx *ctx = ft_ctx_new(NULL);
  for (int trial = 0; trial < 60; trial++) {
    int t = 1 + trial % M, blocks[K + M];
    size_t st = (size_t)rand_r(&seed) % stripes;
    pick_blocks(t, blocks, &seed);
    for (int i = 0; i < t; i++) damage_log_block(dir, &orig, st, blocks[i], &seed);
    ck_assert_int_eq(lt_health(dir), FT_LEDGER_CORRUPT);
    ft_ledger_report r;
    ck_assert_msg(ft_ledger_repair(ctx, dir, &r) == FT_OK, "%s", ft_ctx_error(ctx));
    ck_assert_int_eq(r.health, FT_LEDGER_CLEAN);
    ck_assert_int_eq(r.repaired_blocks, t);
    ck_assert_int_eq(r.unrecoverable, 0);
    ft_ledger_report_free(&r);
    lt_snap now;
    lt_snap_take(dir, &now);
    const char *d = lt_snap_diff(&orig, &now);
    ck_assert_msg(d == NULL, "trial %d: %s differs after repair", trial, d);
    lt_snap_free(&now);
  }
  /* Several stripes at once, up to m blocks each (some in the tail stripe). */
  for (size_t st = 0; st < stripes; st += 3) {
    int blocks[K + M];
    pick_blocks(M, blocks, &seed);
    for (int i = 0; i < M; i++) damage_log_block(dir, &orig, st, blocks[i], &seed);
  }
  ft_ledger_report r;
  ck_assert_int_eq(ft_ledger_repair(ctx, dir, &r), FT_OK);
  ft_ledger_report_free(&r);
  lt_snap now;
  lt_snap_take(dir, &now);
  ck_assert_ptr_null(lt_snap_diff(&orig, &now));
  lt_snap_free(&now);
  ft_ctx_free(ctx);
  lt_snap_free(&orig);
  lt_rmrf(dir);
}
END_TEST

START_TEST(test_more_than_m_is_unrecoverable_and_untouched) {
  char *dir = lt_tmpdir();
  lt_make(dir, 30, K, M, B);
  lt_snap orig;
  lt_snap_take(dir, &orig);
  size_t stripes = orig.files[file_index(&orig, "log.jsonl")].len / (K * B);
  unsigned seed = 4242;
  ft_ctx *ctx = ft_ctx_new(NULL);
  for (int trial = 0; trial < 20; trial++) {
    int t = M + 1 + trial % 2, blocks[K + M];
    size_t st = (size_t)rand_r(&seed) % stripes;
    pick_blocks(t, blocks, &seed);
    for (int i = 0; i < t; i++) damage_log_block(dir, &orig, st, blocks[i], &seed);
    lt_snap damaged;
    lt_snap_take(dir, &damaged);
    ft_ledger_report r;
    ck_assert_int_eq(ft_ledger_repair(ctx, dir, &r), FT_ERR_IO);
    ck_assert_int_eq(r.health, FT_LEDGER_CORRUPT);
    ck_assert_int_eq(r.unrecoverable, 1);
    ck_assert_int_eq(r.repaired_blocks, 0);
    ck_assert_ptr_nonnull(strstr(ft_ctx_error(ctx), "cannot repair"));
    ft_ledger_report_free(&r);
    /* Nothing was written: no guess, no "repair". */
    lt_snap now;
    lt_snap_take(dir, &now);
    ck_assert_ptr_null(lt_snap_diff(&damaged, &now));
    ck_assert_int_eq(lt_health(dir), FT_LEDGER_CORRUPT);
    lt_snap_free(&now);
    lt_snap_free(&damaged);
    for (size_t i = 0; i < orig.n; i++) lt_snap_restore_file(&orig, i);
  }
  ck_assert_int_eq(lt_health(dir), FT_LEDGER_CLEAN);
  ft_ctx_free(ctx);
  lt_snap_free(&orig);
  lt_rmrf(dir);
}
END_TEST

START_TEST(test_repair_objects_and_parity_files) {
  char *dir = lt_tmpdir();
  lt_make(dir, 6, K, M, B);
  lt_snap orig;
  lt_snap_take(dir, &orig);
  unsigned seed = 5;
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger_report r;
  /* An object (about 60 bytes: 16-byte blocks) with 1, 2 and 3 blocks hit. */
  size_t oi = 0;
  while (strncmp(orig.files[oi].path, "objects/", 8)) oi++;
  const char *opath = orig.files[oi].path;
  size_t olen = orig.files[oi].len, ob = ft_lpar_object_block(olen, K, B);
  ck_assert_uint_eq(ob, 16);
  for (int t = 1; t <= M + 1; t++) {
    for (int i = 0; i < t; i++) damage(dir, &orig, opath, (size_t)i * ob, ob, &seed);
    ft_status st = ft_ledger_repair(ctx, dir, &r);
    lt_snap now;
    lt_snap_take(dir, &now);
    if (t <= M) {
      ck_assert_int_eq(st, FT_OK);
      ck_assert_int_eq(r.repaired_blocks, 1); /* one object rebuilt */
      ck_assert_ptr_null(lt_snap_diff(&orig, &now));
    } else {
      ck_assert_int_eq(st, FT_ERR_IO);
      ck_assert_int_eq(r.unrecoverable, 1);
      ck_assert_int_eq(lt_health(dir), FT_LEDGER_CORRUPT);
      lt_snap_restore_file(&orig, oi);
    }
    ft_ledger_report_free(&r);
    lt_snap_free(&now);
  }
  /* Damaged or deleted parity is rebuilt from data that verifies. */
  const char *parity_hits[] = {"parity/log.par", "parity/log.tail"};
  for (int i = 0; i < 2; i++) {
    lt_poke(dir, parity_hits[i], 3, 'X');               /* a header byte */
    lt_poke(dir, parity_hits[i], 64 + 5, 0xEE);         /* an entry's stripe field */
    ck_assert_int_eq(lt_health(dir), FT_LEDGER_CORRUPT);
    ck_assert_msg(ft_ledger_repair(ctx, dir, &r) == FT_OK, "%s: %s", parity_hits[i],
                  ft_ctx_error(ctx));
    ft_ledger_report_free(&r);
    lt_snap now;
    lt_snap_take(dir, &now);
    ck_assert_ptr_null(lt_snap_diff(&orig, &now));
    lt_snap_free(&now);
  }
  size_t pi = 0;
  while (strncmp(orig.files[pi].path, "parity/obj/", 11)) pi++;
  char *p = ft_lio_path("%s/%s", dir, orig.files[pi].path);
  ck_assert_int_eq(unlink(p), 0);
  free(p);
  ck_assert_int_eq(lt_health(dir), FT_LEDGER_CORRUPT);
  ck_assert_int_eq(ft_ledger_repair(ctx, dir, &r), FT_OK);
  ft_ledger_report_free(&r);
  /* The log's last bytes lost (a truncated file) come back from parity. */
  char *lp = ft_lio_path("%s/log.jsonl", dir);
  ck_assert_int_eq(truncate(lp, (off_t)orig.files[file_index(&orig, "log.jsonl")].len - 10), 0);
  free(lp);
  ck_assert_int_eq(lt_health(dir), FT_LEDGER_CORRUPT);
  ck_assert_int_eq(ft_ledger_repair(ctx, dir, &r), FT_OK);
  ft_ledger_report_free(&r);
  lt_snap now;
  lt_snap_take(dir, &now);
  ck_assert_ptr_null(lt_snap_diff(&orig, &now));
  lt_snap_free(&now);
  /* Repairing a clean ledger changes nothing. */
  ck_assert_int_eq(ft_ledger_repair(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.repaired_blocks, 0);
  ft_ledger_report_free(&r);
  ft_ctx_free(ctx);
  lt_snap_free(&orig);
  lt_rmrf(dir);
}
END_TEST

/* Opening dir for writing must fail, name the damage and say how to repair,
 * and leave every file as it was (auto_recover too: recover refuses damage). */
static void expect_open_refused(const char *dir, const char *want) {
  lt_snap before, after;
  lt_snap_take(dir, &before);
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger_options o = {.size = sizeof(ft_ledger_options), .fsync = FT_LEDGER_FSYNC_NEVER};
  ck_assert_ptr_null(ft_ledger_open(ctx, dir, &o));
  ck_assert_int_eq(ft_ctx_status(ctx), FT_ERR_IO);
  if (want) ck_assert_str_eq(ft_ctx_error(ctx), want);
  char repair[512];
  snprintf(repair, sizeof repair, "run 'ftledger repair %s'", dir);
  ck_assert_msg(strstr(ft_ctx_error(ctx), repair), "%s", ft_ctx_error(ctx));
  o.auto_recover = true;
  ck_assert_ptr_null(ft_ledger_open(ctx, dir, &o));
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(ctx), "repair"));
  lt_snap_take(dir, &after);
  ck_assert_ptr_null(lt_snap_diff(&before, &after));
  lt_snap_free(&after);
  lt_snap_free(&before);
  ft_ctx_free(ctx);
}

START_TEST(test_damaged_ledger_not_opened_for_writing) {
  char *dir = lt_tmpdir();
  lt_make(dir, 30, K, M, B);
  lt_snap orig;
  lt_snap_take(dir, &orig);
  size_t li = file_index(&orig, "log.jsonl"), pi = file_index(&orig, "parity/log.par");
  size_t ti = file_index(&orig, "parity/log.tail");
  size_t log_len = orig.files[li].len, stripes = log_len / (K * B);
  size_t head = 16 + 8 * (K + M) + 8, es = head + M * B;
  ck_assert_uint_ge(stripes, 10);
  ck_assert_uint_gt(log_len % (K * B), B); /* a growing stripe of more than one block */
  char want[768];
  /* a complete stripe's data, its parity block, its entry */
  lt_poke(dir, "log.jsonl", 5, orig.files[li].data[5] ^ 0x20);
  snprintf(want, sizeof want, "ledger %s: log.jsonl is damaged (bytes 0..63 do not match their "
           "parity); not opened for writing; run 'ftledger repair %s'", dir, dir);
  expect_open_refused(dir, want);
  lt_snap_restore_file(&orig, li);
  size_t off = 64 + 3 * es + head + B + 7; /* stripe 3, parity block 1 */
  lt_poke(dir, "parity/log.par", off, orig.files[pi].data[off] ^ 1);
  snprintf(want, sizeof want, "ledger %s: parity/log.par is damaged (stripe 3, parity block 1); "
           "not opened for writing; run 'ftledger repair %s'", dir, dir);
  expect_open_refused(dir, want);
  lt_snap_restore_file(&orig, pi);
  off = 64 + 2 * es + 20; /* stripe 2's entry: a block hash */
  lt_poke(dir, "parity/log.par", off, orig.files[pi].data[off] ^ 1);
  snprintf(want, sizeof want, "ledger %s: parity/log.par is damaged (entry 2); not opened for "
           "writing; run 'ftledger repair %s'", dir, dir);
  expect_open_refused(dir, want);
  lt_snap_restore_file(&orig, pi);
  /* the growing stripe: its data (the bytes the next append re-protects),
   * the tail's parity */
  size_t g = stripes * K * B + B + 3;
  lt_poke(dir, "log.jsonl", g, orig.files[li].data[g] ^ 0x04);
  snprintf(want, sizeof want, "ledger %s: log.jsonl is damaged (bytes %zu..%zu do not match "
           "their parity); not opened for writing; run 'ftledger repair %s'", dir,
           stripes * K * B + B, stripes * K * B + 2 * B - 1, dir);
  expect_open_refused(dir, want);
  lt_snap_restore_file(&orig, li);
  off = 64 + head + 9; /* the tail's parity block 0 */
  lt_poke(dir, "parity/log.tail", off, orig.files[ti].data[off] ^ 0x80);
  snprintf(want, sizeof want, "ledger %s: parity/log.tail is damaged (stripe %zu, parity block "
           "0); not opened for writing; run 'ftledger repair %s'", dir, stripes, dir);
  expect_open_refused(dir, want);
  lt_snap_restore_file(&orig, ti);
  /* repaired, it opens and grows, and verifies */
  lt_poke(dir, "log.jsonl", g, orig.files[li].data[g] ^ 0x04);
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger_report r;
  ck_assert_msg(ft_ledger_repair(ctx, dir, &r) == FT_OK, "%s", ft_ctx_error(ctx));
  ck_assert_int_eq(r.repaired_blocks, 1);
  ck_assert_int_eq(r.unrecoverable, 0);
  ft_ledger_report_free(&r);
  ft_ledger *lg = lt_open(ctx, dir, K, M, B);
  ck_assert_int_eq(ft_ledger_num_records(lg), 30);
  ck_assert_int_eq(lt_append(ctx, 30), FT_OK);
  ck_assert_int_eq(ft_ledger_close(lg), FT_OK);
  ck_assert_int_eq(ft_ledger_verify(ctx, dir, &r), FT_OK);
  ck_assert_int_eq(r.health, FT_LEDGER_CLEAN);
  ck_assert_int_eq(r.records, 31);
  ft_ledger_report_free(&r);
  ft_ctx_free(ctx);
  lt_snap_free(&orig);
  lt_rmrf(dir);
}
END_TEST

/* Every byte of the log and its parity, flipped: never opened for writing. */
START_TEST(test_every_flip_of_log_refuses_open) {
  char *dir = lt_tmpdir();
  lt_make(dir, 4, 8, 2, 64);
  lt_snap s;
  lt_snap_take(dir, &s);
  const char *files[] = {"log.jsonl", "parity/log.par", "parity/log.tail"};
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger_options o = {.size = sizeof(ft_ledger_options), .fsync = FT_LEDGER_FSYNC_NEVER};
  size_t tried = 0;
  for (int fi = 0; fi < 3; fi++) {
    const lt_file *f = &s.files[file_index(&s, files[fi])];
    for (size_t off = 0; off < f->len; off++) {
      lt_poke(dir, f->path, off, f->data[off] ^ 0x01);
      ft_ledger *lg = ft_ledger_open(ctx, dir, &o);
      ck_assert_msg(lg == NULL, "opened with %s offset %zu flipped", f->path, off);
      ck_assert_int_eq(ft_ctx_status(ctx), FT_ERR_IO);
      lt_poke(dir, f->path, off, f->data[off]);
      tried++;
    }
  }
  ck_assert_uint_gt(tried, 1000);
  ft_ledger *lg = ft_ledger_open(ctx, dir, &o);
  ck_assert_ptr_nonnull(lg);
  ft_ledger_close(lg);
  lt_snap t;
  lt_snap_take(dir, &t);
  ck_assert_ptr_null(lt_snap_diff(&s, &t));
  lt_snap_free(&t);
  ft_ctx_free(ctx);
  lt_snap_free(&s);
  lt_rmrf(dir);
}
END_TEST

/* Damage parity cannot rebuild and that is not a stripe's worth of blocks (a
 * stripe whose entry is damaged too): the report's count and the message's
 * agree, and both count what verify lists. */
START_TEST(test_repair_counts_match_message) {
  char *dir = lt_tmpdir();
  lt_make(dir, 30, K, M, B);
  lt_snap orig;
  lt_snap_take(dir, &orig);
  size_t li = file_index(&orig, "log.jsonl"), pi = file_index(&orig, "parity/log.par");
  size_t head = 16 + 8 * (K + M) + 8, es = head + M * B;
  size_t off = 64 + 2 * es + 20, d = 2 * K * B + 10;
  lt_poke(dir, "parity/log.par", off, orig.files[pi].data[off] ^ 1);
  lt_poke(dir, "log.jsonl", d, orig.files[li].data[d] ^ 0x02);
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_ledger_report v, r;
  ck_assert_int_eq(ft_ledger_verify(ctx, dir, &v), FT_OK);
  ck_assert_int_eq(v.health, FT_LEDGER_CORRUPT);
  ck_assert_int_eq(ft_ledger_repair(ctx, dir, &r), FT_ERR_IO);
  ck_assert_int_eq(r.health, FT_LEDGER_CORRUPT);
  ck_assert_int_eq(r.repaired_blocks, 0);
  /* verify lists three: the damaged entry, the record that no longer
   * parses, and the chain broken after it */
  ck_assert_int_eq(r.unrecoverable, 3);
  ck_assert_ptr_nonnull(strstr(v.json, "\"what\":\"parity entry 2 damaged\""));
  ck_assert_ptr_nonnull(strstr(v.json, "\"what\":\"not JSON\""));
  ck_assert_ptr_nonnull(strstr(v.json, "\"what\":\"chain broken: prev is not the sum of the record before\""));
  char want[600];
  snprintf(want, sizeof want, "ledger %s: damage remains that parity cannot repair (3 places "
           "beyond repair; 'ftledger verify %s' lists them); nothing was guessed", dir, dir);
  ck_assert_str_eq(ft_ctx_error(ctx), want);
  ft_ledger_report_free(&r);
  ft_ledger_report_free(&v);
  ft_ctx_free(ctx);
  lt_snap_free(&orig);
  lt_rmrf(dir);
}
END_TEST

int main(void) {
  ft_ledger_fault_nosync(true); /* durability is not under test here; speed is */
  Suite *s = suite_create("ledger_damage");
  LT_ADD(s, test_every_byte_of_small_ledger);
  LT_ADD(s, test_random_bytes_of_larger_ledger);
  LT_ADD(s, test_repair_up_to_m_blocks_per_stripe);
  LT_ADD(s, test_more_than_m_is_unrecoverable_and_untouched);
  LT_ADD(s, test_repair_objects_and_parity_files);
  LT_ADD(s, test_damaged_ledger_not_opened_for_writing);
  LT_ADD(s, test_every_flip_of_log_refuses_open);
  LT_ADD(s, test_repair_counts_match_message);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
