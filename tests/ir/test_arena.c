/* tests/ir/test_arena.c: the arena's reuse of freed big chunks (issue 26,
 * src/ir/arena.c): a chunk of a freed arena is taken again by the next
 * arena that needs one of its size (so a big transform does not fault in
 * fresh pages on every call), ft_arena_alloc still returns zeroed memory
 * from a reused chunk, small arenas do not take big chunks, and freeing the
 * last ft_ctx gives the kept chunks back. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "ir/ir.h"

/* Fills an arena with about `total` bytes in 64 KiB pieces; returns the
 * last piece. */
static unsigned char *fill(ft_arena *a, size_t total, int byte) {
  unsigned char *p = NULL;
  for (size_t used = 0; used < total; used += 65536) {
    p = ft_arena_alloc_raw(a, 65536);
    ck_assert_ptr_nonnull(p);
    memset(p, byte, 65536);
  }
  return p;
}

START_TEST(big_chunks_are_reused) {
  ft_arena *a = ft_arena_new();
  ck_assert_ptr_nonnull(a);
  fill(a, (size_t)48 << 20, 0xab);
  ft_arena_free(a);
  /* the same growth again, without zeroing: a reused chunk still holds
   * a's bytes (a fresh mapping would hold zeros) */
  ft_arena *b = ft_arena_new();
  size_t seen = 0;
  for (size_t used = 0; used < ((size_t)48 << 20); used += 65536) {
    unsigned char *p = ft_arena_alloc_raw(b, 65536);
    ck_assert_ptr_nonnull(p);
    seen += p[0] == 0xab && p[65535] == 0xab;
  }
  ck_assert_msg(seen >= 256, "only %zu of 768 pieces came from a reused chunk", seen);
  ft_arena_free(b);
  /* ft_arena_alloc zeroes, whatever chunk it takes */
  ft_arena *c = ft_arena_new();
  for (size_t used = 0; used < ((size_t)48 << 20); used += 65536) {
    unsigned char *p = ft_arena_alloc(c, 65536);
    ck_assert_ptr_nonnull(p);
    for (size_t k = 0; k < 65536; k += 4093) ck_assert_int_eq(p[k], 0);
    ck_assert_int_eq(p[65535], 0);
  }
  ft_arena_free(c);
}
END_TEST

/* The last ft_ctx_free releases the kept chunks. */
START_TEST(last_context_releases_kept_chunks) {
  ft_ctx_options o = FT_CTX_OPTIONS_INIT;
  ft_ctx *c1 = ft_ctx_new(&o), *c2 = ft_ctx_new(&o);
  ck_assert_ptr_nonnull(c1);
  ck_assert_ptr_nonnull(c2);
  ft_arena_release_kept(); /* what an earlier test left (no fork under CK_FORK=no) */
  ck_assert_uint_eq(ft_arena_kept_bytes(), 0);
  ft_arena *a = ft_arena_new();
  fill(a, (size_t)8 << 20, 0xcd);
  ft_arena_free(a);
  size_t kept = ft_arena_kept_bytes();
  ck_assert_uint_ge(kept, (size_t)1 << 20);
  ft_ctx_free(c1); /* c2 still lives: the chunks stay kept */
  ck_assert_uint_eq(ft_arena_kept_bytes(), kept);
  ft_ctx_free(c2); /* the last context: released */
  ck_assert_uint_eq(ft_arena_kept_bytes(), 0);
  ft_arena *d = ft_arena_new();
  fill(d, (size_t)8 << 20, 0xef);
  ft_arena_free(d);
  ck_assert_uint_ge(ft_arena_kept_bytes(), (size_t)1 << 20);
  ft_ctx *c3 = ft_ctx_new(&o);
  ft_ctx_free(c3); /* the last context again */
  ck_assert_uint_eq(ft_arena_kept_bytes(), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("arena");
  TCase *tc = tcase_create("arena");
  tcase_add_test(tc, big_chunks_are_reused);
  tcase_add_test(tc, last_context_releases_kept_chunks);
  suite_add_tcase(s, tc);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
