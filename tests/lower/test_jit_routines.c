/* tests/lower/test_jit_routines.c: the JIT's routine steps (src/lower/
 * routines.c) equal the interpreter bit for bit, NaN payloads included
 * (signaling NaNs too): pad (negative and interior padding), concatenate,
 * split, dynamic_slice and dynamic_update_slice (XLA's index clamping, every
 * index dtype), cumsum/cumprod/cummax/cummin (forward and reverse), across
 * dtypes and sizes 0, 1 and odd (cumsum/cumprod: NaN payloads of NaN + NaN
 * aside, which the C compiler's operand order decides); they plan with no fallback step; the golden
 * programs that use them plan with none (f16 cumsum still falls back). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit_util.h"
#include "lower/lower.h"

/* Overwrites some float elements with NaNs of distinct payloads, signaling
 * ones included, so a routine that moves or folds them must keep the
 * interpreter's bits. */
static void put_nans(ft_array *a, uint64_t seed) {
  ft_dtype dt = a->aval.dtype;
  int64_t n = ft_array_size(a);
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = jt_rng(&seed);
    if (r % 5) continue;
    if (dt == FT_F32) {
      static const uint32_t p[] = {0x7fa00001u, 0xffc12345u, 0x7f800003u, 0x7fc00000u};
      memcpy((uint32_t *)a->data + i, &p[r / 5 % 4], 4);
    } else if (dt == FT_F64) {
      static const uint64_t p[] = {0x7ff4000000000001ull, 0xfff8000000012345ull, 0x7ff0000000000007ull};
      memcpy((uint64_t *)a->data + i, &p[r / 5 % 3], 8);
    }
  }
}

/* Parses text, evaluates it with the interpreter and the JIT on inputs from
 * fill (or random), asserts every output equal byte for byte, and returns
 * the JIT's number of fallback steps. */
static int check_prog_nan(const char *text, ft_array *const *given, int n_given, bool payloads) {
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "routine test");
  ck_assert_msg(j != NULL, "%s\n%s", ft_ctx_error(C), text);
  int n_in = ft_jaxpr_num_inputs(j), n_out = ft_jaxpr_num_outputs(j);
  ft_array *in[16] = {0}, *want[16] = {0}, *got[16] = {0};
  for (int k = 0; k < n_in; k++) {
    if (k < n_given && given[k]) {
      in[k] = given[k];
      continue;
    }
    in[k] = ft_array_alloc(C, &j->invars[k]->aval);
    jt_fill(in[k], 1000u + (uint64_t)k * 77u + strlen(text));
    put_nans(in[k], 7u + (uint64_t)k);
  }
  ck_assert_msg(ft_eval(C, j, n_in, in, n_out, want) == FT_OK, "%s\n%s", ft_ctx_error(C), text);
  ft_jit_options o = {.no_disk_cache = true};
  ft_fn *fn = ft_jit(C, j, &o);
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(C));
  ck_assert_msg(ft_call(fn, n_in, in, n_out, got) == FT_OK, "%s", ft_ctx_error(C));
  for (int k = 0; k < n_out; k++) {
    bool strict = true;
    ck_assert_msg(jt_same(want[k], got[k], &strict, NULL), "output %d differs:\n%s", k, text);
    if (!payloads) continue;
    ck_assert_msg(strict, "output %d differs in NaN payloads:\n%s", k, text);
    ck_assert_msg(!want[k]->nbytes || !memcmp(want[k]->data, got[k]->data, want[k]->nbytes),
                  "output %d differs:\n%s", k, text);
  }
  ft_jit_stats st;
  ck_assert_int_eq(ft_fn_stats(fn, &st), FT_OK);
  for (int k = 0; k < n_out; k++) ft_array_free(want[k]), ft_array_free(got[k]);
  for (int k = 0; k < n_in; k++)
    if (!(k < n_given && given[k])) ft_array_free(in[k]);
  ft_fn_free(fn);
  ft_jaxpr_free(j);
  return st.n_fallback;
}

static int check_prog(const char *text, ft_array *const *given, int n_given) {
  return check_prog_nan(text, given, n_given, true);
}

static const char *const DTYPES[] = {"f32", "f64", "i32", "u8", "i64", "u64", "i8", "u16", "bool"};
enum { N_DTYPES = sizeof DTYPES / sizeof DTYPES[0] };

/* Out dim of pad: lo + hi + d + (d - 1) * interior (d > 0). */
static int64_t pad_dim(int64_t d, int64_t lo, int64_t hi, int64_t in) {
  return lo + hi + d + (d > 0 ? (d - 1) * in : 0);
}

START_TEST(pad_bitwise) {
  static const struct {
    int rank;
    int64_t dims[2], cfg[2][3];
  } cases[] = {
      {2, {3, 4}, {{1, 2, 1}, {-1, 0, 0}}}, {2, {3, 4}, {{0, 0, 0}, {2, -2, 2}}},
      {2, {0, 3}, {{1, 1, 0}, {0, 0, 1}}},  {1, {1}, {{0, 0, 0}}},
      {1, {5}, {{-2, 3, 2}}},               {1, {7}, {{-3, -3, 0}}},
      {2, {1, 5}, {{2, 0, 3}, {-1, -1, 1}}}, {1, {3}, {{-5, 2, 1}}},
  };
  char text[2048];
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int t = 0; t < N_DTYPES; t++) {
      const char *dt = DTYPES[t];
      char ind[64] = "", outd[64] = "", cfg[256] = "";
      for (int d = 0; d < cases[c].rank; d++) {
        const int64_t *g = cases[c].cfg[d];
        size_t n1 = strlen(ind), n2 = strlen(outd), n3 = strlen(cfg);
        snprintf(ind + n1, sizeof ind - n1, "%s%lld", d ? "," : "", (long long)cases[c].dims[d]);
        snprintf(outd + n2, sizeof outd - n2, "%s%lld", d ? "," : "",
                 (long long)pad_dim(cases[c].dims[d], g[0], g[1], g[2]));
        snprintf(cfg + n3, sizeof cfg - n3, "(%lld, %lld, %lld)%s", (long long)g[0], (long long)g[1],
                 (long long)g[2], cases[c].rank == 1 ? "," : d ? "" : ", ");
      }
      snprintf(text, sizeof text,
               "{ lambda ; a:%s[%s] p:%s[]. let\n"
               "    b:%s[%s] = pad[padding_config=(%s)] a p\n"
               "  in (b,) }\n", dt, ind, dt, dt, outd, cfg);
      ck_assert_int_eq(check_prog(text, NULL, 0), 0);
    }
  /* a literal padding value */
  ck_assert_int_eq(check_prog("{ lambda ; a:f32[3,4]. let\n"
                              "    b:f32[8,3] = pad[padding_config=((1, 2, 1), (-1, 0, 0))] a -1.5:f32[]\n"
                              "  in (b,) }\n", NULL, 0), 0);
}
END_TEST

START_TEST(concatenate_split_bitwise) {
  char text[2048];
  for (int t = 0; t < N_DTYPES; t++) {
    const char *d = DTYPES[t];
    snprintf(text, sizeof text,
             "{ lambda ; a:%s[2,3] b:%s[1,3] z:%s[2,0] e:%s[0,3]. let\n"
             "    c:%s[5,3] = concatenate[dimension=0] a b a\n"
             "    f:%s[2,6] = concatenate[dimension=1] a z a\n"
             "    g:%s[3,3] = concatenate[dimension=0] e a e b\n"
             "  in (c, f, g) }\n", d, d, d, d, d, d, d);
    ck_assert_int_eq(check_prog(text, NULL, 0), 0);
    snprintf(text, sizeof text,
             "{ lambda ; a:%s[7,2] m:%s[3,5] v:%s[1]. let\n"
             "    b:%s[3,2] c:%s[0,2] e:%s[4,2] = split[axis=0 sizes=(3, 0, 4)] a\n"
             "    f:%s[3,2] _:%s[3,3] = split[axis=1 sizes=(2, 3)] m\n"
             "    g:%s[1] h:%s[0] = split[axis=0 sizes=(1, 0)] v\n"
             "  in (b, c, e, f, g, h) }\n", d, d, d, d, d, d, d, d, d, d);
    ck_assert_int_eq(check_prog(text, NULL, 0), 0);
  }
}
END_TEST

/* Start indices in range, negative, past the end and huge unsigned: each
 * clamped into [0, dim - size] as XLA does, by both engines. */
START_TEST(dynamic_slices_bitwise) {
  static const char *const idt[] = {"i32", "u32", "i64", "u8", "i8", "u64"};
  static const int64_t vals[] = {0, 1, 2, 3, -1, -7, 100, INT64_MIN, INT64_MAX};
  char text[2048];
  for (int t = 0; t < N_DTYPES; t++)
    for (size_t q = 0; q < sizeof idt / sizeof idt[0]; q++) {
      const char *d = DTYPES[t], *x = idt[q];
      snprintf(text, sizeof text,
               "{ lambda ; a:%s[5,4] u:%s[2,3] i:%s[] j:%s[] v:%s[7] w:%s[0]. let\n"
               "    b:%s[2,2] = dynamic_slice[slice_sizes=(2, 2)] a i j\n"
               "    c:%s[5,4] = dynamic_update_slice a u j i\n"
               "    e:%s[1] = dynamic_slice[slice_sizes=(1,)] v i\n"
               "    f:%s[0] = dynamic_slice[slice_sizes=(0,)] v j\n"
               "    g:%s[7] = dynamic_update_slice v w i\n"
               "    h:%s[5,0] = dynamic_slice[slice_sizes=(5, 0)] a i 2:%s[]\n"
               "  in (b, c, e, f, g, h) }\n", d, d, x, x, d, d, d, d, d, d, d, d, x);
      ft_jaxpr *j = ft_parse(C, text, strlen(text), "ds");
      ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
      for (size_t a = 0; a < sizeof vals / sizeof vals[0]; a += 2)
        for (size_t b = 1; b < sizeof vals / sizeof vals[0]; b += 3) {
          ft_array *idx[6] = {0};
          idx[2] = ft_array_alloc(C, &j->invars[2]->aval);
          idx[3] = ft_array_alloc(C, &j->invars[3]->aval);
          ft_set_i64(idx[2], 0, vals[a]);
          ft_set_i64(idx[3], 0, vals[b]);
          ck_assert_int_eq(check_prog(text, idx, 6), 0);
          ft_array_free(idx[2]), ft_array_free(idx[3]);
        }
      ft_jaxpr_free(j);
    }
}
END_TEST

START_TEST(cumulative_bitwise) {
  static const char *const prims[] = {"cumsum", "cumprod", "cummax", "cummin"};
  static const struct {
    const char *dims;
    int axis;
  } shapes[] = {{"0,3", 0}, {"0,3", 1}, {"1", 0}, {"7", 0}, {"3,5", 0}, {"3,5", 1}, {"2,3,5", 1}, {"4,1", 1}};
  char text[1024];
  for (size_t p = 0; p < 4; p++)
    for (int t = 0; t < N_DTYPES; t++) {
      if (!strcmp(DTYPES[t], "bool")) continue; /* not a cumulative dtype (the verifier refuses) */
      for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int rev = 0; rev < 2; rev++) {
          const char *d = DTYPES[t], *sh = shapes[s].dims;
          snprintf(text, sizeof text,
                   "{ lambda ; a:%s[%s]. let\n"
                   "    b:%s[%s] = %s[axis=%d reverse=%s] a\n"
                   "  in (b,) }\n", d, sh, d, sh, prims[p], shapes[s].axis, rev ? "True" : "False");
          /* NaN + NaN keeps one operand's payload, and which one is the C
           * compiler's choice of operand order (addsd/mulsd): docs/determinism.md
           * leaves payloads of arithmetic open. Moves (cummax/cummin) are exact. */
          ck_assert_int_eq(check_prog_nan(text, NULL, 0, p >= 2), 0);
        }
    }
  /* f16 and cumlogsumexp still run as interpreter steps, and still agree */
  ck_assert_int_eq(check_prog("{ lambda ; a:f16[6]. let\n    b:f16[6] = cumsum[axis=0 reverse=False] a\n"
                              "  in (b,) }\n", NULL, 0), 1);
  ck_assert_int_eq(check_prog("{ lambda ; a:f32[6]. let\n"
                              "    b:f32[6] = cumlogsumexp[axis=0 reverse=False] a\n  in (b,) }\n",
                              NULL, 0), 1);
}
END_TEST

/* The golden programs using these primitives: no fallback step is left for
 * them (split_reduce_precision keeps its two reduce_precision), and the
 * results are the interpreter's bits. */
START_TEST(golden_programs_have_fewer_fallbacks) {
  static const struct {
    const char *name;
    int fallbacks;
  } cases[] = {{"concatenate", 0}, {"cumulative", 0}, {"cumulative_i32", 0},
               {"dynamic_slice", 0}, {"pad_negative_interior", 0}, {"split_reduce_precision", 2}};
  const char *dir = getenv("FT_GOLDEN");
  ck_assert_ptr_nonnull(dir);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.jaxpr", dir, cases[c].name);
    size_t len;
    char *text = jt_read_all(path, &len);
    ck_assert_ptr_nonnull(text);
    ft_array *in[16] = {0};
    int n = 0;
    for (; n < 16; n++) {
      snprintf(path, sizeof path, "%s/%s.in%d.npy", dir, cases[c].name, n);
      if (!(in[n] = ft_npy_read(C, path))) break;
    }
    ft_ctx_clear_error(C);
    int fb = check_prog(text, in, n);
    ck_assert_msg(fb == cases[c].fallbacks, "%s: %d fallbacks", cases[c].name, fb);
    for (int k = 0; k < n; k++) ft_array_free(in[k]);
    free(text);
  }
}
END_TEST

START_TEST(rule_status_and_plan) {
  static const ft_prim native[] = {FT_P_PAD, FT_P_CONCATENATE, FT_P_SPLIT, FT_P_DYNAMIC_SLICE,
                                   FT_P_DYNAMIC_UPDATE_SLICE, FT_P_CUMSUM, FT_P_CUMPROD,
                                   FT_P_CUMMAX, FT_P_CUMMIN};
  for (size_t i = 0; i < sizeof native / sizeof native[0]; i++)
    ck_assert_ptr_null(ft_lower_rule_status(native[i]));
  ck_assert_ptr_nonnull(ft_lower_rule_status(FT_P_CUMLOGSUMEXP));
  const char *text = "{ lambda ; a:f32[3]. let\n    b:f32[3] = cumsum[axis=0 reverse=True] a\n  in (b,) }\n";
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "plan");
  ft_jit_options o = {.no_disk_cache = true};
  ft_fn *fn = ft_jit(C, j, &o);
  ck_assert_ptr_nonnull(fn);
  char *plan = ft_fn_plan(fn);
  ck_assert_ptr_nonnull(strstr(plan, "routine cumsum#0 (native, no interpreter)"));
  ck_assert_ptr_null(strstr(plan, "FALLBACK"));
  ft_free(plan);
  ft_fn_free(fn);
  ft_jaxpr_free(j);
}
END_TEST

int main(void) {
  Suite *s = suite_create("jit_routines");
  TCase *t = tcase_create("routines");
  tcase_add_checked_fixture(t, jt_setup, jt_teardown);
  tcase_set_timeout(t, 600);
  tcase_add_test(t, pad_bitwise);
  tcase_add_test(t, concatenate_split_bitwise);
  tcase_add_test(t, dynamic_slices_bitwise);
  tcase_add_test(t, cumulative_bitwise);
  tcase_add_test(t, golden_programs_have_fewer_fallbacks);
  tcase_add_test(t, rule_status_and_plan);
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
