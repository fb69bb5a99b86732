/* tests/ir/test_golden.c: the text format against real JAX printouts.
 *  - every fixtures/golden/NAME.jaxpr (JAX 0.12.0.1) parses, verifies and prints
 *    back byte for byte; printing is a fixpoint of parse;
 *  - every fixtures/compat/VERSION/NAME.jaxpr (JAX 0.4.35, 0.6.0, 0.7.2, 0.10.2)
 *    parses and verifies, and its printout re-parses to the same hash;
 *  - renaming every variable leaves the printout and the hash unchanged;
 *  - tests/ir/data/NAME.jaxpr (extra JAX 0.10.2 printouts) round-trip too. */
#include <check.h>
#include <ctype.h>

#include "ir/ir.h"
#include "text_util.h"

static ft_ctx *ctx;

static void setup(void) { ctx = ft_ctx_new(NULL); }
static void teardown(void) { ft_ctx_free(ctx); }

/* print(parse(text)) == text (the file ends with print()'s newline), and
 * parse(print(j)) gives the same text and hash. Returns "" or why not. */
static const char *roundtrip(const char *path, char *why, size_t wn) {
  size_t n;
  char *text = tu_slurp(path, &n), *out = NULL, *out2 = NULL;
  ft_jaxpr *j = NULL, *k = NULL;
  why[0] = 0;
  if (!text) snprintf(why, wn, "cannot read");
  else if (!(j = ft_parse(ctx, text, n, path))) snprintf(why, wn, "%s", ft_ctx_error(ctx));
  else if (!(out = ft_jaxpr_print(ctx, j))) snprintf(why, wn, "print failed");
  else if (strlen(out) + 1 != n || memcmp(out, text, n - 1) || text[n - 1] != '\n')
    snprintf(why, wn, "printed differently:\n%s", out);
  else if (!(k = ft_parse(ctx, out, strlen(out), "reprint"))) snprintf(why, wn, "reparse: %s", ft_ctx_error(ctx));
  else if (!(out2 = ft_jaxpr_print(ctx, k)) || strcmp(out, out2)) snprintf(why, wn, "not a fixpoint");
  else {
    uint8_t h1[16], h2[16];
    ft_jaxpr_hash(j, h1);
    ft_jaxpr_hash(k, h2);
    if (memcmp(h1, h2, 16)) snprintf(why, wn, "hash changed on reparse");
  }
  free(out2), free(out), free(text);
  ft_jaxpr_free(k), ft_jaxpr_free(j);
  return why;
}

/* Runs roundtrip on every file of dir; fails listing every file that does
 * not round-trip (not only the first). */
static void check_dir(const char *dir, int min_files) {
  int n, bad = 0;
  char **files = tu_list(dir, &n);
  ck_assert_msg(n >= min_files, "expected at least %d files in %s, found %d", min_files, dir, n);
  static char report[16384], why[4096];
  report[0] = 0;
  for (int i = 0; i < n; i++)
    if (roundtrip(files[i], why, sizeof why)[0]) {
      bad++;
      size_t l = strlen(report);
      snprintf(report + l, sizeof report - l, "%s: %.600s\n", files[i], why);
    }
  tu_free_list(files, n);
  ck_assert_msg(bad == 0, "%d of %d files do not round-trip byte-exact:\n%s", bad, n, report);
}

START_TEST(golden_roundtrip) { check_dir("fixtures/golden", 40); }
END_TEST

START_TEST(extra_data_roundtrip) { check_dir("tests/ir/data", 5); }
END_TEST

/* Older printouts: parse + verify, then print -> parse is a fixpoint with
 * the same canonical hash. Returns "" or why not. */
static const char *compat_one(const char *path, char *why, size_t wn) {
  size_t len = 0;
  char *text = tu_slurp(path, &len), *out = NULL, *out2 = NULL;
  ft_jaxpr *j = NULL, *k = NULL;
  why[0] = 0;
  if (!text) snprintf(why, wn, "cannot read");
  else if (!(j = ft_parse(ctx, text, len, path))) snprintf(why, wn, "%s", ft_ctx_error(ctx));
  else if (ft_jaxpr_verify(ctx, j) != FT_OK) snprintf(why, wn, "verify: %s", ft_ctx_error(ctx));
  else if (!(out = ft_jaxpr_print(ctx, j))) snprintf(why, wn, "print failed");
  else if (!(k = ft_parse(ctx, out, strlen(out), "reprint"))) snprintf(why, wn, "reparse: %s", ft_ctx_error(ctx));
  else if (!(out2 = ft_jaxpr_print(ctx, k)) || strcmp(out, out2)) snprintf(why, wn, "not a fixpoint");
  else {
    uint8_t h1[16], h2[16];
    ft_jaxpr_hash(j, h1);
    ft_jaxpr_hash(k, h2);
    if (memcmp(h1, h2, 16)) snprintf(why, wn, "hash changed on reparse");
  }
  free(out2), free(out), free(text);
  ft_jaxpr_free(k), ft_jaxpr_free(j);
  return why;
}

static void check_compat(const char *version) {
  char dir[256];
  snprintf(dir, sizeof dir, "fixtures/compat/%s", version);
  int n, bad = 0;
  char **files = tu_list(dir, &n);
  ck_assert_msg(n >= 40, "expected at least 40 files in %s, found %d", dir, n);
  static char report[16384], why[4096];
  report[0] = 0;
  for (int i = 0; i < n; i++)
    if (compat_one(files[i], why, sizeof why)[0]) {
      bad++;
      size_t l = strlen(report);
      snprintf(report + l, sizeof report - l, "%s: %.600s\n", files[i], why);
    }
  tu_free_list(files, n);
  ck_assert_msg(bad == 0, "%d of %d %s printouts fail:\n%s", bad, n, version, report);
}

START_TEST(compat_0_4_35) { check_compat("0.4.35"); }
END_TEST
START_TEST(compat_0_6_0) { check_compat("0.6.0"); }
END_TEST
START_TEST(compat_0_7_2) { check_compat("0.7.2"); }
END_TEST
START_TEST(compat_0_10_2) { check_compat("0.10.2"); }
END_TEST

/* A compat printout and the 0.12 printout of the same program name the
 * same jaxpr after normalization (old pjit/scan/broadcast_in_dim params).
 * Not scan_cumsum: JAX 0.12 records that its ys went through the forwarding
 * filter (ft_out's RightsOnly), which older printouts do not say; not
 * reduce_f32: jnp.max binds out_sharding in 0.12, not in 0.7. */
START_TEST(compat_matches_golden_hash) {
  static const char *same[] = {"unary_sin", "fori_loop_static", "cond_switch3",
                               "dot_precision", "fft_c2c"};
  for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
    char a[256], b[256];
    snprintf(a, sizeof a, "fixtures/golden/%s.jaxpr", same[i]);
    snprintf(b, sizeof b, "fixtures/compat/0.7.2/%s.jaxpr", same[i]);
    size_t na, nb;
    char *ta = tu_slurp(a, &na), *tb = tu_slurp(b, &nb);
    ck_assert(ta && tb);
    ft_jaxpr *ja = ft_parse(ctx, ta, na, a), *jb = ft_parse(ctx, tb, nb, b);
    ck_assert_msg(ja && jb, "%s", ft_ctx_error(ctx));
    char *pa = ft_jaxpr_print(ctx, ja), *pb = ft_jaxpr_print(ctx, jb);
    ck_assert_msg(!strcmp(pa, pb), "%s: 0.7.2 normalizes to\n%s\nbut 0.12 prints\n%s", same[i], pb, pa);
    free(pa), free(pb), free(ta), free(tb);
    ft_jaxpr_free(ja), ft_jaxpr_free(jb);
  }
}
END_TEST

/* ---- alpha-renaming */

static bool is_word(char c) { return isalnum((unsigned char)c) || c == '_' || c == '.'; }

static bool keyword(const char *s, size_t n) {
  static const char *kw[] = {"lambda", "let", "in", "inf", "nan", "True", "False", "None", "_"};
  for (size_t i = 0; i < sizeof kw / sizeof *kw; i++)
    if (strlen(kw[i]) == n && !memcmp(kw[i], s, n)) return true;
  return false;
}

/* Is position i inside a param value? The nearest unclosed bracket decides:
 * `[` (params) or `(` not after "in " (a param tuple) are params; `{` (a
 * jaxpr body) and the outputs tuple `in (...)` hold operands. */
static bool param_context(const char *t, size_t i) {
  int depth = 0;
  for (size_t k = i; k-- > 0;) {
    char c = t[k];
    if (c == ')' || c == ']' || c == '}') depth++;
    else if (c == '(' || c == '[' || c == '{') {
      if (depth) {
        depth--;
        continue;
      }
      if (c == '{') return false;
      if (c == '[') return true;
      return !(k >= 3 && !memcmp(t + k - 3, "in ", 3));
    }
  }
  return false;
}

/* Renames variables: binders (`x:` followed by a type) and the operands
 * that refer to them, leaving primitives, params and keywords alone. Every
 * name x becomes "v" + x + "_q", so the mapping is injective. */
static char *rename_vars(const char *t, size_t n) {
  char *out = malloc(n * 4 + 16);
  size_t o = 0, i = 0;
  while (i < n) {
    if (!is_word(t[i]) || (i && is_word(t[i - 1]))) {
      out[o++] = t[i++];
      continue;
    }
    size_t j = i;
    while (j < n && is_word(t[j])) j++;
    size_t len = j - i;
    bool lower = true;
    for (size_t k = i; k < j; k++) lower &= t[k] >= 'a' && t[k] <= 'z';
    bool after_eq = i && t[i - 1] == '=';                         /* name=g, jaxpr=g */
    bool prim = i >= 2 && t[i - 1] == ' ' && t[i - 2] == '=';     /* " = prim" */
    bool hoisted = i >= 4 && !memcmp(t + i - 4, "let ", 4) && t[j] != ':'; /* let g = */
    bool type = i && t[i - 1] == ':';                             /* a:f32[] */
    bool in_params = param_context(t, i);
    if (lower && len <= 4 && !after_eq && !prim && !hoisted && !type && !in_params && !keyword(t + i, len) &&
        !(j < n && (t[j] == '[' || t[j] == '=' || t[j] == '('))) {
      out[o++] = 'v';
      memcpy(out + o, t + i, len);
      o += len;
      memcpy(out + o, "_q", 2);
      o += 2;
    } else {
      memcpy(out + o, t + i, len);
      o += len;
    }
    i = j;
  }
  out[o] = 0;
  return out;
}

START_TEST(alpha_renaming_golden) {
  int n, renamed = 0, bad = 0;
  char **files = tu_list("fixtures/golden", &n);
  static char report[16384];
  report[0] = 0;
  for (int i = 0; i < n; i++) {
    size_t len = 0;
    char *text = tu_slurp(files[i], &len);
    char *alt = rename_vars(text, len);
    if (strcmp(alt, text)) { /* else no variables (empty_no_args) */
      renamed++;
      ft_jaxpr *a = ft_parse(ctx, text, len, files[i]);
      ft_jaxpr *b = a ? ft_parse(ctx, alt, strlen(alt), "renamed") : NULL;
      char *pa = a ? ft_jaxpr_print(ctx, a) : NULL, *pb = b ? ft_jaxpr_print(ctx, b) : NULL;
      uint8_t h1[16] = {0}, h2[16] = {1};
      if (a && b) ft_jaxpr_hash(a, h1), ft_jaxpr_hash(b, h2);
      if (!pa || !pb || strcmp(pa, pb) || memcmp(h1, h2, 16)) {
        bad++;
        size_t l = strlen(report);
        snprintf(report + l, sizeof report - l, "%s: %.300s\n", files[i],
                 !pa || !pb ? ft_ctx_error(ctx) : "printout or hash differs");
      }
      free(pa), free(pb);
      ft_jaxpr_free(a), ft_jaxpr_free(b);
    }
    free(alt), free(text);
  }
  tu_free_list(files, n);
  ck_assert_int_ge(renamed, n - 2);
  ck_assert_msg(bad == 0, "%d renamed files differ:\n%s", bad, report);
}
END_TEST

/* Hand-written names, any identifiers, same program as JAX's naming. */
START_TEST(alpha_renaming_by_hand) {
  const char *jax = "{ lambda ; a:f32[3] b:f32[3]. let\n"
                    "    c:f32[3] = mul a b\n    d:f32[3] = sin c\n  in (d, a) }";
  const char *mine = "{ lambda ; x:f32[3] weights_1:f32[3]. let prod:f32[3] = mul x weights_1;"
                     " out:f32[3] = sin prod in (out, x) }";
  const char *other = "{ lambda ; x:f32[3] y:f32[3]. let p:f32[3] = mul y x; q:f32[3] = sin p in (q, x) }";
  ft_jaxpr *a = ft_parse(ctx, jax, strlen(jax), "jax"), *b = ft_parse(ctx, mine, strlen(mine), "mine");
  ft_jaxpr *c = ft_parse(ctx, other, strlen(other), "other");
  ck_assert_msg(a && b && c, "%s", ft_ctx_error(ctx));
  char ha[33], hb[33], hc[33];
  ft_jaxpr_hash_hex(a, ha);
  ft_jaxpr_hash_hex(b, hb);
  ft_jaxpr_hash_hex(c, hc);
  ck_assert_str_eq(ha, hb);
  ck_assert_str_ne(ha, hc); /* operands swapped: a different program */
  char *pb = ft_jaxpr_print(ctx, b);
  ck_assert_str_eq(pb, "{ lambda ; a:f32[3] b:f32[3]. let\n    c:f32[3] = mul a b\n    d:f32[3] = sin c\n  in (d, a) }");
  free(pb);
  ft_jaxpr_free(a), ft_jaxpr_free(b), ft_jaxpr_free(c);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("ir_text_golden");
  TCase *t = tcase_create("golden");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 60);
  tcase_add_test(t, golden_roundtrip);
  tcase_add_test(t, extra_data_roundtrip);
  tcase_add_test(t, compat_0_4_35);
  tcase_add_test(t, compat_0_6_0);
  tcase_add_test(t, compat_0_7_2);
  tcase_add_test(t, compat_0_10_2);
  tcase_add_test(t, compat_matches_golden_hash);
  tcase_add_test(t, alpha_renaming_golden);
  tcase_add_test(t, alpha_renaming_by_hand);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *r = srunner_create(suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
