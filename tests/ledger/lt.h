/* tests/ledger/lt.h: helpers shared by the ledger tests: scratch directories,
 * building small ledgers with known records, snapshots of every file of a
 * ledger (to check byte-exact repairs and untouched records). */
#ifndef LT_H
#define LT_H
#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ledger/ledger.h"

/* A fresh empty directory under $TMPDIR (malloc'd path). */
char *lt_tmpdir(void);
/* Removes dir and everything in it, and frees the path. */
void lt_rmrf(char *dir);
/* Opens dir with fsync off and the given parity geometry; asserts success. */
ft_ledger *lt_open(ft_ctx *ctx, const char *dir, int k, int m, int block);
/* Appends the i-th test record: a transform "upper" whose input is a small
 * text object and whose output is that text upper-cased, plus fired rules. */
ft_status lt_append(ft_ctx *ctx, int i);
/* The text lt_append uses as the input of record i (static buffer). */
const char *lt_text(int i);
/* Creates dir with n records (k, m, block as given) and closes it. */
void lt_make(const char *dir, int n, int k, int m, int block);
/* Verifies dir and returns its health (asserting the call ran). */
ft_ledger_health lt_health(const char *dir);

/* Every regular file under a directory, with its bytes. */
typedef struct lt_file {
  char *path;  /* relative to the snapshot root */
  uint8_t *data;
  size_t len;
} lt_file;
typedef struct lt_snap {
  char *root;
  lt_file *files;
  size_t n;
} lt_snap;
void lt_snap_take(const char *dir, lt_snap *s);
void lt_snap_free(lt_snap *s);
/* Path of the first file that differs (or is missing/extra), else NULL. */
const char *lt_snap_diff(const lt_snap *a, const lt_snap *b);
/* Writes file i of s back as it was. */
void lt_snap_restore_file(const lt_snap *s, size_t i);
/* Reads/writes one byte of root/path. */
void lt_poke(const char *root, const char *path, size_t off, uint8_t v);
/* One test per case (named after it), so CK_RUN_CASE=name runs one. */
#define LT_ADD(suite, fn)                                                      \
  do {                                                                         \
    TCase *tc_ = tcase_create(#fn);                                            \
    tcase_set_timeout(tc_, 300);                                               \
    tcase_add_test(tc_, fn);                                                   \
    suite_add_tcase(suite, tc_);                                               \
  } while (0)
#endif
