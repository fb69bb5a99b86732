/* tests/lower/test_jit_fallbacks.c: the equations that used to be the JIT's
 * fallback steps (the interpreter's rule, allocating per call) and are now
 * compiled or routine steps: reductions and argmax/argmin of f16/bf16 (and
 * complex sums), dot_general outside the f32/f64 GEMM steps (integer,
 * f16/bf16, complex, mixed operand and result dtypes), reshape with
 * `dimensions`, empty2, mul with an out_dtype equal to its operands'. Each
 * is run by ft_eval and ft_jit on the same inputs (NaN, inf, -0,
 * subnormals included) and the outputs compared byte for byte; each plans
 * with no fallback step. Shapes include sizes 0 and 1 and reductions over
 * leading, middle, trailing and all axes, and over more than one
 * 4096-element block of the canonical order. Last, every golden and
 * conformance fixture plans with no fallback step but complex elementwise
 * ones (another issue's). */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit_util.h"
#include "lower/lower.h"

/* 16-bit float contents: mostly finite values of both signs, with NaNs of
 * both signs (quiet and signaling payloads), infinities, zeros of both
 * signs, subnormals and the largest finite values. */
static void fill16(ft_array *a, uint64_t seed) {
  static const uint16_t f16sp[] = {0x7e00, 0xfe01, 0x7d00, 0x7c00, 0xfc00, 0x8000, 0x0000,
                                   0x0001, 0x83ff, 0x7bff, 0xfbff, 0x3c00};
  static const uint16_t bf16sp[] = {0x7fc0, 0xffc1, 0x7f81, 0x7f80, 0xff80, 0x8000, 0x0000,
                                    0x0001, 0x807f, 0x7f7f, 0xff7f, 0x3f80};
  bool f16 = a->aval.dtype == FT_F16;
  int64_t n = ft_array_size(a);
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = jt_rng(&seed);
    if (r % 9 == 0) {
      ((uint16_t *)a->data)[i] = (f16 ? f16sp : bf16sp)[r / 9 % 12];
    } else {
      double u = (double)(jt_rng(&seed) >> 11) * 0x1p-53;
      ft_set_f64(a, i, r % 3 ? 8 * u - 4 : (u - 0.5) * 300);
    }
  }
}

/* Inputs without specials (for sums whose every partial should be finite,
 * so a mistake in the rounding shows). */
static void fill16_finite(ft_array *a, uint64_t seed) {
  int64_t n = ft_array_size(a);
  for (int64_t i = 0; i < n; i++) {
    double u = (double)(jt_rng(&seed) >> 11) * 0x1p-53;
    ft_set_f64(a, i, 4 * u - 1.5);
  }
}

static void fill_any(ft_array *a, uint64_t seed, bool finite) {
  ft_dtype dt = a->aval.dtype;
  if (dt == FT_F16 || dt == FT_BF16) {
    if (finite) fill16_finite(a, seed);
    else fill16(a, seed);
  } else if (ft_dtype_is_complex(dt)) {
    int64_t n = ft_array_size(a);
    for (int64_t i = 0; i < n; i++) {
      double re = (double)(jt_rng(&seed) >> 11) * 0x1p-50 - 4, im = (double)(jt_rng(&seed) >> 11) * 0x1p-51 - 2;
      if (!finite && i % 7 == 3) re = NAN;
      if (!finite && i % 11 == 5) im = -INFINITY;
      ft_set_c128(a, i, re, im);
    }
  } else {
    jt_fill(a, seed);
  }
}

/* Whether bytes x (dtype dt, es bytes) are a NaN. */
static bool is_nan(ft_dtype dt, const void *x) {
  uint16_t h;
  float f;
  double d;
  switch (dt) {
  case FT_F16: memcpy(&h, x, 2); return (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
  case FT_BF16: memcpy(&h, x, 2); return (h & 0x7f80) == 0x7f80 && (h & 0x7f);
  case FT_F32: memcpy(&f, x, 4); return f != f;
  case FT_F64: memcpy(&d, x, 8); return d != d;
  default: return false;
  }
}

/* ft_eval and ft_jit (no e-graph rewrite: the equation under test is what
 * runs) of text on the same inputs; every output equal byte for byte, or
 * with nan_any two NaNs of any sign and payload (docs/determinism.md: the
 * lanes of a compiled max/min may return another input NaN than the
 * sequential fold, and NaN + NaN keeps either sign). The JIT's fallback count, or -1 when the plan text
 * disagrees with it. */
static int run_cmp(const char *text, uint64_t seed, bool finite, bool nan_any) {
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "fallback test");
  ck_assert_msg(j != NULL, "%s\n%s", ft_ctx_error(C), text);
  int n_in = ft_jaxpr_num_inputs(j), n_out = ft_jaxpr_num_outputs(j);
  ck_assert(n_in <= 8 && n_out <= 8);
  ft_array *in[8] = {0}, *want[8] = {0}, *got[8] = {0};
  for (int k = 0; k < n_in; k++) {
    in[k] = ft_array_alloc(C, &j->invars[k]->aval);
    ck_assert(in[k] != NULL);
    fill_any(in[k], seed + 31u * (uint64_t)k, finite);
  }
  ck_assert_msg(ft_eval(C, j, n_in, (const ft_array *const *)in, n_out, want) == FT_OK, "%s\n%s", ft_ctx_error(C), text);
  /* fallback steps allowed: this file counts them */
  ft_jit_options o = {.size = sizeof(ft_jit_options), .no_cache = true, .no_optimize = true, .allow_fallback = true};
  ft_fn *fn = ft_jit(C, j, &o);
  ck_assert_msg(fn != NULL, "%s\n%s", ft_ctx_error(C), text);
  for (int call = 0; call < 2; call++) { /* the second into the same outputs: no state left */
    if (call == 0) ck_assert_msg(ft_call(fn, n_in, (const ft_array *const *)in, n_out, got) == FT_OK, "%s\n%s", ft_ctx_error(C), text);
    else ck_assert(ft_call_into(fn, n_in, (const ft_array *const *)in, n_out, got) == FT_OK);
    for (int k = 0; k < n_out; k++) {
      ck_assert(ft_aval_eq(&got[k]->aval, &want[k]->aval));
      ft_dtype dt = want[k]->aval.dtype;
      size_t es = ft_dtype_size(dt);
      int64_t n = ft_array_size(want[k]);
      for (int64_t i = 0; i < n; i++) {
        const char *g = (const char *)got[k]->data + (size_t)i * es,
                   *w = (const char *)want[k]->data + (size_t)i * es;
        if (!memcmp(g, w, es) || (nan_any && is_nan(dt, g) && is_nan(dt, w))) continue;
        uint64_t gv = 0, wv = 0;
        memcpy(&gv, g, es < 8 ? es : 8), memcpy(&wv, w, es < 8 ? es : 8);
        ck_abort_msg("call %d, output %d differs at %lld: jit 0x%llx, interpreter 0x%llx\n%s", call,
                     k, (long long)i, (unsigned long long)gv, (unsigned long long)wv, text);
      }
    }
  }
  ft_jit_stats st;
  ck_assert_int_eq(ft_fn_stats(fn, &st), FT_OK);
  char *plan = ft_fn_plan(fn);
  int nf = st.n_fallback;
  if ((nf == 0) != (strstr(plan, "FALLBACK") == NULL)) nf = -1;
  if (nf) fprintf(stderr, "%s\n%s", text, plan);
  ft_free(plan);
  for (int k = 0; k < n_out; k++) ft_array_free(want[k]), ft_array_free(got[k]);
  for (int k = 0; k < n_in; k++) ft_array_free(in[k]);
  ft_fn_free(fn);
  ft_jaxpr_free(j);
  return nf;
}

static int run_text(const char *text, uint64_t seed, bool finite) {
  return run_cmp(text, seed, finite, false);
}

static void dims_text(char *buf, size_t n, int rank, const int64_t *d) {
  size_t w = 0;
  buf[0] = 0;
  for (int i = 0; i < rank && w < n; i++)
    w += (size_t)snprintf(buf + w, n - w, "%s%lld", i ? "," : "", (long long)d[i]);
}

/* ------------------------------------------------------------ reductions */
typedef struct rcase {
  int rank;
  int64_t dims[3];
  int na;
  int axes[3];
} rcase;

static const rcase RCASES[] = {
    {1, {0}, 1, {0}},           {1, {1}, 1, {0}},         {1, {5}, 1, {0}},
    {1, {37}, 1, {0}},          {2, {0, 3}, 1, {0}},      {2, {3, 0}, 1, {1}},
    {3, {3, 5, 7}, 1, {0}},     {3, {3, 5, 7}, 1, {1}},   {3, {3, 5, 7}, 1, {2}},
    {3, {3, 5, 7}, 3, {0, 1, 2}}, {3, {3, 5, 7}, 2, {0, 2}}, {3, {1, 1, 1}, 2, {0, 1}},
    {2, {2, 40}, 1, {1}},       {2, {40, 3}, 1, {0}},     {3, {2, 17, 3}, 0, {0}},
};
enum { N_RCASES = sizeof RCASES / sizeof RCASES[0] };

/* text of `out = prim[axes=...] a` for case c on dtype dt. */
static void reduce_text(char *text, size_t n, const char *prim, const char *dt, const char *odt,
                        const rcase *c, const char *extra) {
  int64_t od[3];
  int orank = 0;
  char ax[64] = "", ind[64], outd[64];
  size_t w = 0;
  for (int d = 0; d < c->rank; d++) {
    bool red = false;
    for (int q = 0; q < c->na; q++) red |= c->axes[q] == d;
    if (!red) od[orank++] = c->dims[d];
  }
  for (int q = 0; q < c->na; q++) w += (size_t)snprintf(ax + w, sizeof ax - w, "%d,%s", c->axes[q], q + 1 < c->na ? " " : "");
  dims_text(ind, sizeof ind, c->rank, c->dims);
  dims_text(outd, sizeof outd, orank, od);
  snprintf(text, n,
           "{ lambda ; a:%s[%s]. let\n"
           "    b:%s[%s] = %s[axes=(%s)%s] a\n"
           "  in (b,) }\n", dt, ind, odt, outd, prim, ax, extra);
}

START_TEST(reductions_16bit) {
  static const char *const prims[] = {"reduce_sum", "reduce_prod", "reduce_max", "reduce_min"};
  static const char *const dts[] = {"f16", "bf16"};
  char text[1024];
  for (int p = 0; p < 4; p++)
    for (int t = 0; t < 2; t++)
      for (int c = 0; c < N_RCASES; c++)
        for (int finite = 0; finite < 2; finite++) {
          reduce_text(text, sizeof text, prims[p], dts[t], dts[t], &RCASES[c], "");
          ck_assert_int_eq(run_cmp(text, 100u + (uint64_t)c, finite, !finite), 0);
        }
}
END_TEST

/* More than one 4096-element block of the canonical order (16 lanes, per
 * step rounding to the 16-bit dtype), and a kept axis over such rows. */
START_TEST(reductions_16bit_blocks) {
  static const char *const dts[] = {"f16", "bf16"};
  static const rcase big[] = {{1, {4096}, 1, {0}}, {1, {4097}, 1, {0}}, {1, {9000}, 1, {0}},
                              {2, {3, 5000}, 1, {1}}, {2, {4500, 2}, 1, {0}}};
  char text[1024];
  for (int t = 0; t < 2; t++)
    for (size_t c = 0; c < sizeof big / sizeof big[0]; c++)
      for (int p = 0; p < 2; p++) {
        reduce_text(text, sizeof text, p ? "reduce_max" : "reduce_sum", dts[t], dts[t], &big[c], "");
        ck_assert_int_eq(run_text(text, 7u + c, true), 0);
        ck_assert_int_eq(run_cmp(text, 9u + c, false, true), 0);
      }
}
END_TEST

START_TEST(argmax_16bit) {
  static const char *const dts[] = {"f16", "bf16"};
  char text[1024];
  for (int t = 0; t < 2; t++)
    for (int c = 0; c < N_RCASES; c++) {
      const rcase *rc = &RCASES[c];
      if (rc->na != 1 || rc->dims[rc->axes[0]] == 0) continue; /* the interpreter refuses those */
      for (int mx = 0; mx < 2; mx++)
        for (int finite = 0; finite < 2; finite++) {
          reduce_text(text, sizeof text, mx ? "argmax" : "argmin", dts[t], "i32", rc, " index_dtype=int32");
          ck_assert_int_eq(run_text(text, 300u + (uint64_t)c, finite), 0);
        }
    }
}
END_TEST

/* f16/bf16 reductions are reduction kernels (widened to f32; sums rounded
 * per step), fused with their elementwise producers. */
START_TEST(half_maxmin_compiled) {
  static const char *const dts[] = {"f16", "bf16"};
  char text[1024];
  for (int t = 0; t < 2; t++) {
    snprintf(text, sizeof text,
             "{ lambda ; a:%s[3,40]. let\n"
             "    b:%s[3,40] = mul a a\n"
             "    c:%s[3,40] = neg b\n"
             "    d:%s[3] = reduce_max[axes=(1,)] c\n"
             "    e:i32[40] = argmin[axes=(0,) index_dtype=int32] a\n"
             "    f:%s[] = reduce_min[axes=(0, 1)] a\n"
             "    g:%s[3] = reduce_sum[axes=(1,)] a\n"
             "  in (d, e, f, g) }\n", dts[t], dts[t], dts[t], dts[t], dts[t], dts[t]);
    ck_assert_int_eq(run_cmp(text, 11u + (uint64_t)t, false, true), 0);
    ck_assert_int_eq(run_cmp(text, 13u + (uint64_t)t, true, false), 0);
    ft_jaxpr *j = ft_parse(C, text, strlen(text), "half");
    ck_assert(j != NULL);
    ft_fn *fn = ft_jit(C, j, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_cache = true, .no_optimize = true});
    ck_assert(fn != NULL);
    char *plan = ft_fn_plan(fn);
    ft_jit_stats st;
    ck_assert_int_eq(ft_fn_stats(fn, &st), FT_OK);
    ck_assert_msg(strstr(plan, "compiled reduction reduce_max") && strstr(plan, "compiled reduction argmin") &&
                      strstr(plan, "compiled reduction reduce_min") && strstr(plan, "compiled reduction reduce_sum"),
                  "%s", plan);
    ck_assert_int_ge(st.n_fused_eqns, 1); /* mul and neg recomputed inside the max */
    ft_free(plan);
    ft_fn_free(fn);
    ft_jaxpr_free(j);
  }
}
END_TEST

/* The new steps on views (a transpose, a broadcast: strided and zero
 * stride loads; a transposed dot operand is copied first) and inside a
 * control-flow sub-program. */
START_TEST(views_and_control) {
  static const char *const cases[] = {
      "{ lambda ; a:f16[5,7] i:i8[3,4]. let\n"
      "    b:f16[7,5] = transpose[permutation=(1, 0)] a\n"
      "    c:f16[7] = reduce_sum[axes=(1,)] b\n"
      "    d:f16[5,7,3] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(5, 7, 3) sharding=None] a\n"
      "    e:f16[7] = reduce_max[axes=(0, 2)] d\n"
      "    f:i32[5] = argmax[axes=(0,) index_dtype=int32] b\n"
      "    g:f16[7] = reduce_prod[axes=(0, 2)] d\n"
      "    j:i8[4,3] = transpose[permutation=(1, 0)] i\n"
      "    k:i32[4,4] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=int32] j i\n"
      "  in (c, e, f, g, k) }\n",
      "{ lambda ; x:bf16[4,33]. let\n"
      "    y:bf16[4] z:i32[4] = scan[\n"
      "      jaxpr={ lambda ; a:bf16[33]. let\n"
      "          b:bf16[33] = mul a a\n"
      "          c:bf16[] = reduce_sum[axes=(0,)] b\n"
      "          d:i32[] = argmin[axes=(0,) index_dtype=int32] a\n"
      "        in (c, d) }\n"
      "      length=4 num_carry=0 num_consts=0 reverse=False unroll=1\n"
      "    ] x\n"
      "  in (y, z) }\n",
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    ck_assert_int_eq(run_cmp(cases[c], 17u + c, true, false), 0);
    ck_assert_int_eq(run_cmp(cases[c], 19u + c, false, true), 0);
  }
}
END_TEST

START_TEST(reductions_complex) {
  static const char *const dts[] = {"c64", "c128"};
  char text[1024];
  for (int t = 0; t < 2; t++)
    for (int c = 0; c < N_RCASES; c++)
      for (int finite = 0; finite < 2; finite++) {
        reduce_text(text, sizeof text, "reduce_sum", dts[t], dts[t], &RCASES[c], "");
        ck_assert_int_eq(run_text(text, 500u + (uint64_t)c, finite), 0);
      }
  static const rcase big = {2, {2, 5000}, 1, {1}};
  reduce_text(text, sizeof text, "reduce_sum", "c64", "c64", &big, "");
  ck_assert_int_eq(run_text(text, 5, true), 0);
}
END_TEST

/* A reduction the interpreter refuses stays a fallback step and fails as
 * the interpreter does (complex max has no order). */
START_TEST(reduction_refused) {
  const char *text = "{ lambda ; a:c64[3]. let\n    b:c64[] = reduce_max[axes=(0,)] a\n  in (b,) }\n";
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "refused");
  ck_assert(j != NULL);
  ck_assert_ptr_null(ft_jit(C, j, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_cache = true, .no_optimize = true}));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_UNSUPPORTED); /* unless allowed */
  ft_fn *fn = ft_jit(C, j, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_cache = true, .no_optimize = true,
                                             .allow_fallback = true});
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(C));
  ft_jit_stats st;
  ck_assert_int_eq(ft_fn_stats(fn, &st), FT_OK);
  ck_assert_int_eq(st.n_fallback, 1);
  ft_array *x = ft_array_alloc(C, &j->invars[0]->aval), *o = NULL;
  ck_assert(ft_call(fn, 1, (const ft_array *const *)&x, 1, &o) != FT_OK);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "reduce_max is not defined for dtype c64"));
  ft_array_free(x);
  ft_fn_free(fn);
  ft_jaxpr_free(j);
}
END_TEST

/* ----------------------------------------------------------- dot_general */
START_TEST(dot_other_dtypes) {
  static const struct {
    const char *l, *r, *o, *pref;
  } dts[] = {
      {"i8", "i8", "i32", " preferred_element_type=int32"}, {"i8", "i8", "i8", ""},
      {"i32", "i32", "i32", ""}, {"u8", "u8", "u8", ""}, {"i64", "i64", "i64", ""},
      {"u32", "u32", "u32", ""}, {"bool", "bool", "bool", ""}, {"f16", "f16", "f16", ""},
      {"bf16", "bf16", "bf16", ""}, {"bf16", "bf16", "f32", " preferred_element_type=float32"},
      {"f16", "f16", "f32", " preferred_element_type=float32"}, {"c64", "c64", "c64", ""},
      {"c128", "c128", "c128", ""}, {"i16", "i16", "i32", " preferred_element_type=int32"},
  };
  static const struct {
    const char *ld, *rd, *od, *dn;
  } shapes[] = {
      {"3,4", "4,5", "3,5", "(([1], [0]), ([], []))"},
      {"2,3,4", "2,4,5", "2,3,5", "(([2], [1]), ([0], [0]))"},
      {"4,3", "5,4", "3,5", "(([0], [1]), ([], []))"},          /* contracting leading dims */
      {"3,0", "0,5", "3,5", "(([1], [0]), ([], []))"},          /* K = 0: zeros */
      {"0,4", "4,5", "0,5", "(([1], [0]), ([], []))"},          /* M = 0 */
      {"1,1", "1,1", "1,1", "(([1], [0]), ([], []))"},
      {"7", "7", "", "(([0], [0]), ([], []))"},                  /* a vector dot */
      {"2,3", "4", "2,3,4", "(([], []), ([], []))"},             /* an outer product */
      {"2,3,64", "2,64,3", "2,3,3", "(([2], [1]), ([0], [0]))"}, /* k64 */
  };
  char text[1024];
  for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (int finite = 0; finite < 2; finite++) {
        snprintf(text, sizeof text,
                 "{ lambda ; a:%s[%s] b:%s[%s]. let\n"
                 "    c:%s[%s] = dot_general[dimension_numbers=%s%s] a b\n"
                 "  in (c,) }\n", dts[t].l, shapes[s].ld, dts[t].r, shapes[s].rd, dts[t].o,
                 shapes[s].od, shapes[s].dn, dts[t].pref);
        ck_assert_int_eq(run_text(text, 40u + s, finite), 0);
      }
}
END_TEST

/* ---------------------------------------------------------------- layout */
START_TEST(reshape_dimensions) {
  static const char *const dts[] = {"f32", "bf16", "bool", "i32", "c64", "f64", "u8"};
  static const struct {
    const char *in, *perm, *out;
  } cases[] = {
      {"2,3", "(1, 0)", "3,2"}, {"2,3,4", "(2, 0, 1)", "4,6"}, {"2,3,4", "(0, 1, 2)", "24"},
      {"0,3", "(1, 0)", "3,0"}, {"1", "(0,)", "1"},           {"3,1,2", "(1, 2, 0)", "1,6"},
  };
  char text[1024];
  for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      snprintf(text, sizeof text,
               "{ lambda ; a:%s[%s]. let\n"
               "    b:%s[%s] = reshape[dimensions=%s new_sizes=(%s,) sharding=None] a\n"
               "  in (b,) }\n", dts[t], cases[c].in, dts[t], cases[c].out, cases[c].perm, cases[c].out);
      ck_assert_int_eq(run_text(text, 60u + c, false), 0);
    }
}
END_TEST

/* ------------------------------------------------------------- elementwise */
START_TEST(empty2_zeros) {
  static const struct {
    const char *dt, *name;
  } dts[] = {{"f32", "float32"}, {"i32", "int32"}, {"bool", "bool"}, {"f16", "float16"},
             {"u8", "uint8"}};
  char text[1024];
  for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
    snprintf(text, sizeof text,
             "{ lambda ; a:%s[3]. let\n"
             "    e:%s[] = empty2[dtype=%s memory_space=MemorySpace.Device] \n"
             "    b:%s[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,) sharding=None] e\n"
             "  in (b, e) }\n", dts[t].dt, dts[t].dt, dts[t].name, dts[t].dt);
    ck_assert_int_eq(run_text(text, 70, false), 0);
  }
  /* complex (its broadcast is another issue's: only the scalar here) */
  ck_assert_int_eq(run_text("{ lambda ; a:c64[3]. let\n"
                            "    e:c64[] = empty2[dtype=complex64 memory_space=MemorySpace.Device] \n"
                            "  in (e,) }\n", 70, false), 0);
}
END_TEST

START_TEST(mul_out_dtype) {
  static const char *const cases[] = {
      "{ lambda ; a:f32[5] b:f32[5]. let\n    c:f32[5] = mul[out_dtype=float32] a b\n  in (c,) }\n",
      "{ lambda ; a:f16[5] b:f16[5]. let\n    c:f16[5] = mul[out_dtype=float16] a b\n  in (c,) }\n",
      "{ lambda ; a:i32[0] b:i32[0]. let\n    c:i32[0] = mul[out_dtype=int32] a b\n  in (c,) }\n",
      "{ lambda ; a:f64[1] b:f64[1]. let\n    c:f64[1] = mul[out_dtype=float64] a b\n  in (c,) }\n",
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    ck_assert_int_eq(run_text(cases[c], 80u + c, false), 0);
  /* another result dtype stays an interpreter step, with the same bits */
  ck_assert_int_eq(run_text("{ lambda ; a:bf16[4] b:bf16[4]. let\n"
                            "    c:f32[4] = mul[out_dtype=float32] a b\n  in (c,) }\n", 90, false),
                   1);
}
END_TEST

/* ------------------------------------------------------------- fixtures */
/* Fallback steps of p at every depth whose primitive is not complex
 * elementwise (real, imag, conj, complex, or complex operands or results). */
static int non_complex_fallbacks(const ft_program *p, char *first, size_t n) {
  int bad = 0;
  for (int i = 0; i < p->n_steps; i++) {
    const ft_step *s = &p->steps[i];
    if (s->kind == FT_STEP_CONTROL) {
      for (int k = 0; k < ft_control_num_subs(s->ctl); k++)
        bad += non_complex_fallbacks(ft_control_sub(s->ctl, k), first, n);
      continue;
    }
    if (s->kind != FT_STEP_FALLBACK) continue;
    const ft_eqn *e = &p->j->eqns[s->eqn];
    bool cpx = false;
    for (int k = 0; k < e->n_in; k++) cpx |= ft_dtype_is_complex(e->in[k]->aval.dtype);
    for (int k = 0; k < e->n_out; k++) cpx |= ft_dtype_is_complex(e->out[k]->aval.dtype);
    if (cpx && ft_prim_get(e->prim)->family != FT_FAM_REDUCE && e->prim != FT_P_DOT_GENERAL) continue;
    if (!bad && first[0] == 0) snprintf(first, n, "%s#%d: %s", ft_prim_get(e->prim)->name, s->eqn, p->why[s->eqn]);
    bad++;
  }
  return bad;
}

static int plan_dir(const char *dir, int *files, char *first, size_t n) {
  DIR *d = opendir(dir);
  ck_assert_msg(d != NULL, "%s", dir);
  struct dirent *de;
  int bad = 0;
  while ((de = readdir(d))) {
    size_t l = strlen(de->d_name);
    if (l < 7 || strcmp(de->d_name + l - 6, ".jaxpr")) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    size_t len;
    char *text = jt_read_all(path, &len);
    ck_assert(text != NULL);
    ft_jaxpr *j = ft_parse(C, text, len, path);
    free(text);
    ck_assert_msg(j != NULL, "%s: %s", path, ft_ctx_error(C));
    ft_jaxpr *opt = ft_optimize(C, j, FT_OPT_EXACT, NULL);
    ck_assert_msg(opt != NULL, "%s: %s", path, ft_ctx_error(C));
    for (int pass = 0; pass < 2; pass++) { /* as ft_jit plans it, and as ftc compile does */
      ft_program *p = ft_program_plan(C, pass ? j : opt, &(ft_plan_options){0});
      ck_assert_msg(p != NULL, "%s: %s", path, ft_ctx_error(C));
      char one[256] = "";
      int b = non_complex_fallbacks(p, one, sizeof one);
      if (b && !first[0]) snprintf(first, n, "%.200s: %.250s", path, one);
      bad += b;
      ft_program_free(p);
    }
    (*files)++;
    ft_jaxpr_free(opt);
    ft_jaxpr_free(j);
  }
  closedir(d);
  return bad;
}

START_TEST(fixtures_plan_without_fallbacks) {
  const char *golden = getenv("FT_GOLDEN");
  ck_assert(golden != NULL);
  char conf[4096];
  snprintf(conf, sizeof conf, "%s/../conformance", golden);
  char first[512] = "";
  int files = 0, bad = plan_dir(golden, &files, first, sizeof first);
  bad += plan_dir(conf, &files, first, sizeof first);
  ck_assert_int_gt(files, 2000);
  ck_assert_msg(bad == 0, "%d fallback steps other than complex elementwise; first %s", bad, first);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("jit_fallbacks");
  TCase *t = tcase_create("core");
  tcase_add_checked_fixture(t, jt_setup, jt_teardown);
  tcase_set_timeout(t, 600);
  tcase_add_test(t, reductions_16bit);
  tcase_add_test(t, reductions_16bit_blocks);
  tcase_add_test(t, argmax_16bit);
  tcase_add_test(t, half_maxmin_compiled);
  tcase_add_test(t, views_and_control);
  tcase_add_test(t, reductions_complex);
  tcase_add_test(t, reduction_refused);
  tcase_add_test(t, dot_other_dtypes);
  tcase_add_test(t, reshape_dimensions);
  tcase_add_test(t, empty2_zeros);
  tcase_add_test(t, mul_out_dtype);
  tcase_add_test(t, fixtures_plan_without_fallbacks);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  (void)jt_same; /* a jit_util.h helper this file does not need (it compares bytes) */
  SRunner *r = srunner_create(suite());
  srunner_run_all(r, CK_NORMAL);
  int nf = srunner_ntests_failed(r);
  srunner_free(r);
  return nf ? 1 : 0;
}
