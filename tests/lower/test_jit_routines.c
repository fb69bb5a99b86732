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
  ck_assert_msg(ft_eval(C, j, n_in, (const ft_array *const *)in, n_out, want) == FT_OK, "%s\n%s", ft_ctx_error(C), text);
  ft_jit_options o = {.size = sizeof(ft_jit_options), .no_disk_cache = true};
  ft_fn *fn = ft_jit(C, j, &o);
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(C));
  ck_assert_msg(ft_call(fn, n_in, (const ft_array *const *)in, n_out, got) == FT_OK, "%s", ft_ctx_error(C));
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
               {"dynamic_slice", 0}, {"pad_negative_interior", 0}, {"split_reduce_precision", 0},
               {"sort_1d", 0}, {"sort_2d_dims", 0}, {"sort_drop_var", 0}, {"sort_multi_operand", 0},
               {"sort_two_keys", 0}, {"argsort", 0}, {"gather_scatter", 0},
               {"cumlogsumexp_reduce_window", 0}, {"conv_general", 0}, {"top_k_clip_misc", 0},
               {"fft_c2c", 0}, {"fft_rfft_irfft", 0}, {"zero_size", 0}, {"fft_2d", 0},
               {"x64_fft_c128", 0}};
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
  static const ft_prim moved[] = {FT_P_CUMLOGSUMEXP, FT_P_SORT, FT_P_TOP_K, FT_P_GATHER,
                                  FT_P_SCATTER, FT_P_SCATTER_ADD, FT_P_SCATTER_MUL,
                                  FT_P_SCATTER_MIN, FT_P_SCATTER_MAX, FT_P_REDUCE_WINDOW_SUM,
                                  FT_P_REDUCE_WINDOW_MAX, FT_P_REDUCE_WINDOW_MIN,
                                  FT_P_CONV_GENERAL_DILATED, FT_P_FFT, FT_P_REDUCE_PRECISION};
  for (size_t i = 0; i < sizeof moved / sizeof moved[0]; i++)
    ck_assert_ptr_null(ft_lower_rule_status(moved[i]));
  const char *text = "{ lambda ; a:f32[3]. let\n    b:f32[3] = cumsum[axis=0 reverse=True] a\n  in (b,) }\n";
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "plan");
  ft_jit_options o = {.size = sizeof(ft_jit_options), .no_disk_cache = true};
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

/* ---------------------------------------------------------------------------
 * The primitives whose routine steps run the interpreter's own rule bodies
 * (sort, top_k, gather, the scatter family, reduce_window_*, conv,
 * cumlogsumexp and f16/bf16 cumulative ops, reduce_precision) and fft
 * (FFTW plans made at planning). Each case asserts the JIT's bytes equal
 * the interpreter's and that the plan has no fallback step. */

/* check_prog plus: the plan names a routine step for prim. */
static void check_routine(const char *text, const char *prim, ft_array *const *given, int n_given) {
  ck_assert_msg(check_prog(text, given, n_given) == 0, "a fallback step is left:\n%s", text);
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "routine plan");
  ck_assert_ptr_nonnull(j);
  ft_jit_options o = {.size = sizeof(ft_jit_options), .no_disk_cache = true};
  ft_fn *fn = ft_jit(C, j, &o);
  ck_assert_ptr_nonnull(fn);
  char *plan = ft_fn_plan(fn), want[64];
  snprintf(want, sizeof want, "routine %s#", prim);
  ck_assert_msg(strstr(plan, want) != NULL, "no %s in:\n%s", want, plan);
  ck_assert_msg(strstr(plan, "FALLBACK") == NULL, "%s", plan);
  ft_free(plan);
  ft_fn_free(fn);
  ft_jaxpr_free(j);
}

static const char *const ALL_DTYPES[] = {"f32", "f64", "f16", "bf16", "i32", "u8", "i64", "u64",
                                         "i8", "u16", "bool"};
enum { N_ALL = sizeof ALL_DTYPES / sizeof ALL_DTYPES[0] };

START_TEST(sort_bitwise) {
  static const struct {
    const char *dims;
    int dim;
  } shapes[] = {{"0,3", 0}, {"0,3", 1}, {"1", 0}, {"7", 0}, {"3,5", 0}, {"3,5", 1}, {"2,3,4", 1},
                {"40", 0}};
  char text[1024];
  for (int t = 0; t < N_ALL; t++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (int stable = 0; stable < 2; stable++) {
        const char *d = ALL_DTYPES[t], *sh = shapes[s].dims;
        /* one key; two keys with an f32 payload and a dropped output */
        snprintf(text, sizeof text,
                 "{ lambda ; a:%s[%s] b:f32[%s] c:i32[%s]. let\n"
                 "    e:%s[%s] = sort[dimension=%d is_stable=%s num_keys=1] a\n"
                 "    f:%s[%s] _:f32[%s] g:i32[%s] = sort[dimension=%d is_stable=%s num_keys=2] a b c\n"
                 "  in (e, f, g) }\n",
                 d, sh, sh, sh, d, sh, shapes[s].dim, stable ? "True" : "False", d, sh, sh, sh,
                 shapes[s].dim, stable ? "True" : "False");
        check_routine(text, "sort", NULL, 0);
      }
  /* many equal keys (-0/+0, NaNs of both signs) keep their order */
  ck_assert_int_eq(check_prog("{ lambda ; a:f32[64] b:i32[64]. let\n"
                              "    c:f32[64] d:i32[64] = sort[dimension=0 is_stable=True num_keys=1] a b\n"
                              "  in (c, d) }\n", NULL, 0), 0);
}
END_TEST

START_TEST(top_k_bitwise) {
  static const struct {
    const char *in, *out;
    int k;
  } shapes[] = {{"5", "0", 0}, {"1", "1", 1}, {"7", "3", 3}, {"3,5", "3,5", 5}, {"2,0", "2,0", 0},
                {"4,100", "4,9", 9}};
  char text[1024];
  for (int t = 0; t < N_ALL; t++) {
    if (!strcmp(ALL_DTYPES[t], "bool")) continue; /* top_k refuses bool (shape rule) */
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      const char *d = ALL_DTYPES[t];
      snprintf(text, sizeof text,
               "{ lambda ; a:%s[%s]. let\n"
               "    b:%s[%s] c:i32[%s] = top_k[axis=-1 k=%d] a\n"
               "  in (b, c) }\n", d, shapes[s].in, d, shapes[s].out, shapes[s].out, shapes[s].k);
      check_routine(text, "top_k", NULL, 0);
    }
  }
}
END_TEST

static ft_dtype dtype_named(const char *name) {
  ft_dtype dt = FT_F32;
  ck_assert_int_eq(ft_dtype_from_name(name, &dt), FT_OK);
  return dt;
}

/* Index arrays with in-range, negative and past-the-end entries. */
static ft_array *indices(const char *dt, int rank, const int64_t *dims, int64_t hi, uint64_t seed) {
  ft_aval av = ft_aval_make(dtype_named(dt), rank, dims);
  ft_array *a = ft_array_alloc(C, &av);
  int64_t n = ft_array_size(a);
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = jt_rng(&seed);
    int64_t v = r % 6 == 0 ? -(int64_t)(r % 3) - 1 : r % 6 == 1 ? hi + (int64_t)(r % 3) : (int64_t)(r % (uint64_t)(hi > 0 ? hi : 1));
    if (ft_dtype_is_unsigned(av.dtype) && v < 0) v = hi + 5;
    ft_set_i64(a, i, v);
  }
  return a;
}

START_TEST(gather_scatter_bitwise) {
  static const char *const modes[] = {"GatherScatterMode.CLIP", "GatherScatterMode.FILL_OR_DROP",
                                      "GatherScatterMode.PROMISE_IN_BOUNDS"};
  static const char *const scat[] = {"scatter", "scatter-add", "scatter-mul", "scatter-min",
                                     "scatter-max"};
  static const char *const idt[] = {"i32", "u8", "i64"};
  char text[4096];
  for (int t = 0; t < N_ALL; t++)
    for (size_t m = 0; m < 3; m++)
      for (size_t q = 0; q < 3; q++) {
        const char *d = ALL_DTYPES[t], *x = idt[q];
        /* rows of a [6,3] operand (a window of 2 columns), a scalar per index of a [5] one,
         * an empty index set, a one-element operand */
        snprintf(text, sizeof text,
                 "{ lambda ; a:%s[6,3] i:%s[4,1] v:%s[5] j:%s[7,1] z:%s[0,1] w:%s[1]. let\n"
                 "    b:%s[4,2] = gather[\n"
                 "      dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())\n"
                 "      fill_value=None indices_are_sorted=False mode=%s slice_sizes=(1, 2) unique_indices=False\n"
                 "    ] a i\n"
                 "    c:%s[7] = gather[\n"
                 "      dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())\n"
                 "      fill_value=None indices_are_sorted=False mode=%s slice_sizes=(1,) unique_indices=False\n"
                 "    ] v j\n"
                 "    e:%s[0] = gather[\n"
                 "      dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())\n"
                 "      fill_value=None indices_are_sorted=False mode=%s slice_sizes=(1,) unique_indices=False\n"
                 "    ] v z\n"
                 "    f:%s[7] = gather[\n"
                 "      dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())\n"
                 "      fill_value=None indices_are_sorted=False mode=%s slice_sizes=(1,) unique_indices=False\n"
                 "    ] w j\n"
                 "  in (b, c, e, f) }\n",
                 d, x, d, x, x, d, d, modes[m], d, modes[m], d, modes[m], d, modes[m]);
        ft_array *given[6] = {0};
        given[1] = indices(x, 2, (int64_t[]){4, 1}, 6, 11 + m);
        given[3] = indices(x, 2, (int64_t[]){7, 1}, 5, 13 + q);
        check_routine(text, "gather", given, 6);
        ft_array_free(given[1]), ft_array_free(given[3]);
        for (size_t p = 0; p < sizeof scat / sizeof scat[0]; p++) {
          if (!strcmp(d, "bool") && p > 0) continue; /* arithmetic scatters refuse bool (verifier) */
          snprintf(text, sizeof text,
                   "{ lambda ; a:%s[6,3] i:%s[4,1] u:%s[4,2] v:%s[5] j:%s[7,1] y:%s[7] z:%s[0,1] n:%s[0]. let\n"
                   "    b:%s[6,3] = %s[\n"
                   "      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())\n"
                   "      indices_are_sorted=False mode=%s unique_indices=False update_consts=() update_jaxpr=None\n"
                   "    ] a i u\n"
                   "    c:%s[5] = %s[\n"
                   "      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())\n"
                   "      indices_are_sorted=False mode=%s unique_indices=False update_consts=() update_jaxpr=None\n"
                   "    ] v j y\n"
                   "    e:%s[5] = %s[\n"
                   "      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())\n"
                   "      indices_are_sorted=False mode=%s unique_indices=False update_consts=() update_jaxpr=None\n"
                   "    ] v z n\n"
                   "  in (b, c, e) }\n",
                   d, x, d, d, x, d, x, d, d, scat[p], modes[m], d, scat[p], modes[m], d, scat[p],
                   modes[m]);
          ft_array *g2[8] = {0};
          g2[1] = indices(x, 2, (int64_t[]){4, 1}, 6, 17 + p);
          g2[4] = indices(x, 2, (int64_t[]){7, 1}, 5, 19 + m); /* duplicates: order matters */
          /* NaN payloads of arithmetic are outside the contract (see cumulative) */
          ck_assert_int_eq(check_prog_nan(text, g2, 8, p == 0 || p >= 3), 0);
          check_routine(text, scat[p], g2, 8);
          ft_array_free(g2[1]), ft_array_free(g2[4]);
        }
      }
}
END_TEST

START_TEST(reduce_window_bitwise) {
  static const char *const prims[] = {"reduce_window_sum", "reduce_window_max", "reduce_window_min"};
  static const struct {
    const char *in, *out, *wd, *ws, *bd, *wdl, *pad;
  } cases[] = {
      {"7", "6", "(2,)", "(1,)", "(1,)", "(1,)", "((0, 0),)"},
      {"7", "4", "(3,)", "(2,)", "(1,)", "(1,)", "((1, 1),)"},
      {"1", "1", "(1,)", "(1,)", "(1,)", "(1,)", "((0, 0),)"},
      {"0", "1", "(2,)", "(1,)", "(1,)", "(1,)", "((1, 1),)"}, /* pads only: the identity */
      {"4,5", "3,3", "(2, 2)", "(1, 2)", "(1, 1)", "(1, 1)", "((0, 0), (1, 0))"},
      {"4,5", "4,2", "(2, 3)", "(2, 2)", "(2, 1)", "(1, 2)", "((1, 0), (2, 1))"},
      {"3,4", "1,1", "(3, 3)", "(1, 1)", "(1, 1)", "(1, 1)", "((0, 0), (-1, 0))"},
  };
  char text[2048];
  for (size_t p = 0; p < 3; p++)
    for (int t = 0; t < N_ALL; t++)
      for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *d = ALL_DTYPES[t];
        if (p == 0 && !strcmp(d, "bool")) continue; /* reduce_window_sum refuses bool (verifier) */
        snprintf(text, sizeof text,
                 "{ lambda ; a:%s[%s]. let\n"
                 "    b:%s[%s] = %s[base_dilation=%s padding=%s window_dilation=%s "
                 "window_dimensions=%s window_strides=%s] a\n"
                 "  in (b,) }\n", d, cases[c].in, d, cases[c].out, prims[p], cases[c].bd,
                 cases[c].pad, cases[c].wdl, cases[c].wd, cases[c].ws);
        ck_assert_int_eq(check_prog_nan(text, NULL, 0, p > 0), 0);
        check_routine(text, prims[p], NULL, 0);
      }
}
END_TEST

START_TEST(conv_bitwise) {
  static const struct {
    const char *l, *r, *o, *ws, *pad, *ld, *rd;
    int fg;
  } cases[] = {
      {"1,2,5,5", "3,2,2,2", "1,3,4,4", "(1, 1)", "((0, 0), (0, 0))", "(1, 1)", "(1, 1)", 1},
      {"2,4,6,5", "4,2,3,2", "2,4,3,3", "(2, 2)", "((1, 1), (1, 0))", "(1, 1)", "(1, 1)", 2},
      {"1,1,4,4", "2,1,2,2", "1,2,6,1", "(1, 2)", "((0, 0), (1, -1))", "(2, 1)", "(1, 2)", 1},
      {"1,1,1,1", "1,1,1,1", "1,1,1,1", "(1, 1)", "((0, 0), (0, 0))", "(1, 1)", "(1, 1)", 1},
      {"0,2,3,3", "1,2,2,2", "0,1,2,2", "(1, 1)", "((0, 0), (0, 0))", "(1, 1)", "(1, 1)", 1},
  };
  static const char *const dts[] = {"f32", "f64", "f16", "bf16", "i32", "i8"};
  char text[4096];
  for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      const char *d = dts[t];
      snprintf(text, sizeof text,
               "{ lambda ; a:%s[%s] b:%s[%s]. let\n"
               "    c:%s[%s] = conv_general_dilated[\n"
               "      batch_group_count=1\n"
               "      dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), out_spec=(0, 1, 2, 3))\n"
               "      feature_group_count=%d lhs_dilation=%s out_sharding=None padding=%s precision=None\n"
               "      preferred_element_type=None rhs_dilation=%s window_strides=%s\n"
               "    ] a b\n"
               "  in (c,) }\n", d, cases[c].l, d, cases[c].r, d, cases[c].o, cases[c].fg,
               cases[c].ld, cases[c].pad, cases[c].rd, cases[c].ws);
      ck_assert_int_eq(check_prog_nan(text, NULL, 0, false), 0);
      check_routine(text, "conv_general_dilated", NULL, 0);
    }
}
END_TEST

START_TEST(cumulative_more_bitwise) {
  static const char *const prims[] = {"cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"};
  static const char *const dts[] = {"f16", "bf16", "f32", "f64"};
  static const struct {
    const char *dims;
    int axis;
  } shapes[] = {{"0,3", 1}, {"1", 0}, {"7", 0}, {"3,5", 0}, {"2,3,5", 2}};
  char text[1024];
  for (size_t p = 0; p < 5; p++)
    for (size_t t = 0; t < 4; t++)
      for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int rev = 0; rev < 2; rev++) {
          if (p < 4 && t >= 2) continue; /* native folds: cumulative_bitwise */
          snprintf(text, sizeof text,
                   "{ lambda ; a:%s[%s]. let\n"
                   "    b:%s[%s] = %s[axis=%d reverse=%s] a\n"
                   "  in (b,) }\n", dts[t], shapes[s].dims, dts[t], shapes[s].dims, prims[p],
                   shapes[s].axis, rev ? "True" : "False");
          ck_assert_int_eq(check_prog_nan(text, NULL, 0, p == 2 || p == 3), 0);
          check_routine(text, prims[p], NULL, 0);
        }
}
END_TEST

START_TEST(reduce_precision_bitwise) {
  static const char *const dts[] = {"f16", "bf16", "f32", "f64"};
  static const int bits[][2] = {{5, 10}, {8, 7}, {8, 23}, {11, 52}, {2, 0}, {4, 3}, {5, 2}};
  char text[1024];
  for (size_t t = 0; t < 4; t++)
    for (size_t b = 0; b < sizeof bits / sizeof bits[0]; b++)
      for (int shape = 0; shape < 3; shape++) {
        const char *sh = shape == 0 ? "0" : shape == 1 ? "" : "4,9";
        snprintf(text, sizeof text,
                 "{ lambda ; a:%s[%s]. let\n"
                 "    b:%s[%s] = reduce_precision[exponent_bits=%d mantissa_bits=%d] a\n"
                 "  in (b,) }\n", dts[t], sh, dts[t], sh, bits[b][0], bits[b][1]);
        check_routine(text, "reduce_precision", NULL, 0);
      }
}
END_TEST

/* Random complex (or real) contents with a spread of magnitudes: FFTW's
 * codelets then round differently if a different one ran. */
static ft_array *rand_array(const char *dt, const char *dims_text, uint64_t seed) {
  int64_t dims[FT_MAX_RANK];
  int rank = 0;
  for (const char *p = dims_text; *p;) {
    dims[rank++] = strtoll(p, (char **)&p, 10);
    if (*p == ',') p++;
  }
  ft_aval av = ft_aval_make(dtype_named(dt), rank, dims);
  ft_array *a = ft_array_alloc(C, &av);
  int64_t n = ft_array_size(a);
  for (int64_t i = 0; i < n; i++) {
    double re = ((double)(jt_rng(&seed) >> 11) * 0x1p-53 - 0.5) * 1e3;
    double im = ((double)(jt_rng(&seed) >> 11) * 0x1p-53 - 0.5) * 1e-2;
    if (ft_dtype_is_complex(av.dtype)) ft_set_c128(a, i, re, im);
    else ft_set_f64(a, i, re);
  }
  return a;
}

START_TEST(fft_bitwise) {
  static const struct {
    const char *type, *lens, *in_dims, *out_dims;
    bool real_in, real_out;
  } cases[] = {
      {"0", "(8,)", "8", "8", false, false},          {"1", "(8,)", "3,8", "3,8", false, false},
      {"0", "(1,)", "1", "1", false, false},          {"0", "(5,)", "0,5", "0,5", false, false},
      {"0", "(12,)", "4,12", "4,12", false, false},   {"1", "(7,)", "2,3,7", "2,3,7", false, false},
      {"0", "(4, 6)", "3,4,6", "3,4,6", false, false}, {"1", "(2, 3, 5)", "2,3,5", "2,3,5", false, false},
      {"2", "(8,)", "8", "5", true, false},           {"2", "(9,)", "4,9", "4,5", true, false},
      {"2", "(4, 6)", "2,4,6", "2,4,4", true, false},  {"3", "(8,)", "5", "8", false, true},
      {"3", "(9,)", "4,5", "4,9", false, true},       {"3", "(4, 6)", "2,4,4", "2,4,6", false, true},
      {"0", "(256,)", "16,256", "16,256", false, false}, {"2", "(1,)", "3,1", "3,1", true, false},
      {"3", "(1,)", "1", "1", false, true},
  };
  char text[1024];
  for (int dbl = 0; dbl < 2; dbl++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      const char *rt = dbl ? "f64" : "f32", *ct = dbl ? "c128" : "c64";
      const char *it = cases[c].real_in ? rt : ct, *ot = cases[c].real_out ? rt : ct;
      snprintf(text, sizeof text,
               "{ lambda ; a:%s[%s]. let\n"
               "    b:%s[%s] = fft[fft_lengths=%s fft_type=%s] a\n"
               "  in (b,) }\n", it, cases[c].in_dims, ot, cases[c].out_dims, cases[c].lens,
               cases[c].type);
      ft_array *a = rand_array(it, cases[c].in_dims, 100 + c);
      check_routine(text, "fft", &a, 1);
      ft_array_free(a);
    }
  /* Rows of a scan are views at odd offsets (5 * 8 bytes): the routine must
   * not hand FFTW a misaligned array for a plan made on aligned ones. */
  static const int rows[] = {5, 15, 45, 63};
  for (size_t q = 0; q < sizeof rows / sizeof rows[0]; q++)
    for (int dbl = 0; dbl < 2; dbl++) {
      int n = rows[q];
      const char *ct = dbl ? "c128" : "c64", *rt = dbl ? "f64" : "f32";
      snprintf(text, sizeof text,
               "{ lambda ; x:%s[3,%d] r:%s[3,%d]. let\n"
               "    y:%s[3,%d] z:%s[3,%d] = scan[\n"
               "      jaxpr={ lambda ; a:%s[%d] q:%s[%d]. let\n"
               "          b:%s[%d] = fft[fft_lengths=(%d,) fft_type=0] a\n"
               "          c:%s[%d] = fft[fft_lengths=(%d,) fft_type=2] q\n"
               "        in (b, c) }\n"
               "      length=3 num_carry=0 num_consts=0 reverse=False unroll=1\n"
               "    ] x r\n"
               "  in (y, z) }\n",
               ct, n, rt, n + 1, ct, n, ct, (n + 1) / 2 + 1, ct, n, rt, n + 1, ct, n, n, ct,
               (n + 1) / 2 + 1, n + 1);
      char d1[16], d2[16];
      snprintf(d1, sizeof d1, "3,%d", n);
      snprintf(d2, sizeof d2, "3,%d", n + 1);
      ft_array *in[2] = {rand_array(ct, d1, 7 + q), rand_array(rt, d2, 8 + q)};
      ck_assert_int_eq(check_prog(text, in, 2), 0);
      ft_array_free(in[0]), ft_array_free(in[1]);
    }
}
END_TEST

/* convert_element_type between every pair of dtypes with a complex side
 * (loop kernels since codegen.c's cpx_elem, test_jit_complex.c; here too:
 * every pair against the interpreter, no fallback step), and bitcasts
 * between widths: routine steps with the interpreter's conversion. */
START_TEST(convert_bitwise) {
  static const char *const dts[] = {"f16", "bf16", "c64", "c128", "f32", "f64", "i32", "u8",
                                    "i64", "u64", "i8", "bool"};
  static const char *const shapes[] = {"0", "", "7", "3,5"};
  char text[1024];
  int tested = 0;
  for (size_t a = 0; a < sizeof dts / sizeof dts[0]; a++)
    for (size_t b = 0; b < sizeof dts / sizeof dts[0]; b++) {
      bool cpx = a == 2 || a == 3 || b == 2 || b == 3;
      if (!cpx || a == b) continue; /* loop kernels (test_jit.c, test_jit_f16.c); a no-op */
      for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        snprintf(text, sizeof text,
                 "{ lambda ; x:%s[%s]. let\n"
                 "    y:%s[%s] = convert_element_type[new_dtype=%s weak_type=False] x\n"
                 "  in (y,) }\n", dts[a], shapes[s], dts[b], shapes[s],
                 !strcmp(dts[b], "f16") ? "float16" : !strcmp(dts[b], "bf16") ? "bfloat16"
                 : !strcmp(dts[b], "c64") ? "complex64" : !strcmp(dts[b], "c128") ? "complex128"
                 : !strcmp(dts[b], "f32") ? "float32" : !strcmp(dts[b], "f64") ? "float64"
                 : !strcmp(dts[b], "i32") ? "int32" : !strcmp(dts[b], "u8") ? "uint8"
                 : !strcmp(dts[b], "i64") ? "int64" : !strcmp(dts[b], "u64") ? "uint64"
                 : !strcmp(dts[b], "i8") ? "int8" : "bool");
        ft_jaxpr *j = ft_parse(C, text, strlen(text), "convert");
        if (!j) { /* a pair the verifier refuses (none expected): counted below */
          ft_ctx_clear_error(C);
          continue;
        }
        ft_jaxpr_free(j);
        ck_assert_msg(check_prog(text, NULL, 0) == 0, "a fallback step is left:\n%s", text);
        tested++;
      }
    }
  ck_assert_int_ge(tested, 4 * (12 * 12 - 10 * 10 - 2));
  static const char *const bitcasts[] = {
      "{ lambda ; x:f32[4]. let y:u16[4,2] = bitcast_convert_type[new_dtype=uint16] x in (y,) }\n",
      "{ lambda ; x:u8[3,4]. let y:i32[3] = bitcast_convert_type[new_dtype=int32] x in (y,) }\n",
      "{ lambda ; x:f16[2,2]. let y:f32[2] = bitcast_convert_type[new_dtype=float32] x in (y,) }\n",
      "{ lambda ; x:f64[0]. let y:i8[0,8] = bitcast_convert_type[new_dtype=int8] x in (y,) }\n",
  };
  for (size_t i = 0; i < sizeof bitcasts / sizeof bitcasts[0]; i++)
    check_routine(bitcasts[i], "bitcast_convert_type", NULL, 0);
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
  tcase_add_test(t, sort_bitwise);
  tcase_add_test(t, top_k_bitwise);
  tcase_add_test(t, gather_scatter_bitwise);
  tcase_add_test(t, reduce_window_bitwise);
  tcase_add_test(t, conv_bitwise);
  tcase_add_test(t, cumulative_more_bitwise);
  tcase_add_test(t, reduce_precision_bitwise);
  tcase_add_test(t, fft_bitwise);
  tcase_add_test(t, convert_bitwise);
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
