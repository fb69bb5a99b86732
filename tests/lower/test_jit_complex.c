/* tests/lower/test_jit_complex.c: complex64/complex128 elementwise work in
 * compiled loop kernels (issue 6, "all arithmetic dtypes"), equal to the
 * interpreter bit for bit.
 *
 *  - every operation the interpreter defines on complex values: add,
 *    add_any, sub, mul, div (libgcc's __divsc3/__divdc3 in both engines),
 *    neg, square, abs (hypot), copy_p, stop_gradient, eq, ne, select_n,
 *    conversions to and from every other dtype kernels keep, real, imag,
 *    conj (of complex and of float), complex, iota, complex literals;
 *  - both complex dtypes; shapes of size 0 and 1, rank 0, random shapes,
 *    and loops long enough to be vectorized (not optnone);
 *  - broadcast, transposed, reversed and strided-slice operands (views);
 *  - parts drawn from the special values (±0, ±inf, NaN, the largest and
 *    smallest normals, subnormals) and from wide exponent ranges, where
 *    division's scaling and hypot's overflow avoidance matter;
 *  - reduce_sum of complex values (the parts' canonical sums) over every
 *    axis set of a few shapes, split into block partials when long;
 *  - JAX's fixtures/ad_complex programs and their gradients;
 *  - every program plans with no fallback step; a reduction of a real
 *    value computed from complex ones keeps the complex producers in their
 *    own loop kernel and still has none.
 * Values compare byte for byte except that two NaNs are equal (NaN
 * payloads are outside the contract, docs/determinism.md). */
#include <stdarg.h>

#include "jit_util.h"
#include "lower/lower.h"

static const double SPECIAL[] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, INFINITY, -INFINITY, NAN, -NAN,
                                 3.4028234663852886e38, 1.1754943508222875e-38, 1.4e-45, 1.7976931348623157e308,
                                 2.2250738585072014e-308, 4.9e-324, 1e-310, 6e37, 1e300, 1e-300};
enum { NSPECIAL = sizeof SPECIAL / sizeof SPECIAL[0] };

/* One part of a complex value: a special value, a small one, or one with
 * an exponent anywhere in (most of) the part type's range. */
static double rand_part(uint64_t *s, bool f64) {
  uint64_t r = jt_rng(s);
  double u = (double)(jt_rng(s) >> 11) * 0x1p-53;
  switch (r % 6) {
  case 0: return SPECIAL[(r >> 8) % NSPECIAL];
  case 1: case 2: return 8 * u - 4;
  default: {
    int span = f64 ? 1000 : 125, e = (int)((r >> 8) % (uint64_t)(2 * span + 1)) - span;
    return ldexp((r >> 40) & 1 ? -u : u, e);
  }
  }
}

static void fill(ft_array *a, uint64_t seed) {
  ft_dtype dt = a->aval.dtype;
  if (!ft_dtype_is_complex(dt)) {
    jt_fill(a, seed);
    return;
  }
  int64_t n = ft_array_size(a);
  for (int64_t i = 0; i < n; i++) {
    double re = rand_part(&seed, dt == FT_C128), im = rand_part(&seed, dt == FT_C128);
    if (jt_rng(&seed) % 16 == 0) im = re; /* equal parts (and, below, equal elements) */
    ft_set_c128(a, i, re, im);
  }
  /* some elements equal to the previous one, so eq/ne see equality */
  size_t es = ft_dtype_size(dt);
  for (int64_t i = 1; i < n; i += 5) memcpy((char *)a->data + i * es, (char *)a->data + (i - 1) * es, es);
}

static ft_jaxpr *parse_text(const char *text) {
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "complex test");
  if (!j) fprintf(stderr, "%s\n", text);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  return j;
}

static int n_checked; /* outputs compared, to show the tests did run */

/* Runs the program in text through ft_eval and ft_jit (opt level lvl, the
 * e-graph off; lvl < 0: level 0 with the default e-graph) on random
 * inputs; asserts equal outputs and no fallback step. */
static void check_text(const char *name, const char *text, uint64_t seed, int lvl) {
  ft_jaxpr *j = parse_text(text);
  int n_in = ft_jaxpr_num_inputs(j), n_out = ft_jaxpr_num_outputs(j);
  ft_array *in[16] = {0}, *want[32] = {0}, *got[32] = {0};
  ck_assert(n_in <= 16 && n_out <= 32);
  for (int k = 0; k < n_in; k++) {
    ft_aval av;
    ck_assert_int_eq(ft_jaxpr_input_aval(j, k, &av), FT_OK);
    in[k] = ft_array_alloc(C, &av);
    ck_assert_ptr_nonnull(in[k]);
    fill(in[k], seed * 131 + (uint64_t)k);
  }
  ck_assert_msg(ft_eval(C, j, n_in, (const ft_array *const *)in, n_out, want) == FT_OK, "%s: %s", name, ft_ctx_error(C));
  ft_jit_options o = {.size = sizeof(ft_jit_options), .no_cache = true, .opt_level = lvl < 0 ? 0 : lvl, .no_optimize = lvl >= 0};
  ft_fn *fn = ft_jit(C, j, &o);
  ck_assert_msg(fn != NULL, "%s: %s", name, ft_ctx_error(C));
  ck_assert_msg(ft_call(fn, n_in, (const ft_array *const *)in, n_out, got) == FT_OK, "%s: %s", name, ft_ctx_error(C));
  ft_jit_stats s;
  ck_assert_int_eq(ft_fn_stats(fn, &s), FT_OK);
  char *plan = ft_fn_plan(fn);
  ck_assert_msg(s.n_fallback == 0 && !strstr(plan, "FALLBACK"), "%s:\n%s", name, plan);
  ft_free(plan);
  for (int k = 0; k < n_out; k++) {
    int64_t at = -1;
    bool ok = jt_same(got[k], want[k], NULL, &at);
    if (!ok && at >= 0) {
      ft_dtype dt = want[k]->aval.dtype;
      size_t es = ft_dtype_is_complex(dt) ? ft_dtype_size(dt) / 2 : ft_dtype_size(dt);
      uint64_t g = 0, w = 0;
      memcpy(&g, (char *)got[k]->data + (size_t)at * es, es < 8 ? es : 8);
      memcpy(&w, (char *)want[k]->data + (size_t)at * es, es < 8 ? es : 8);
      fprintf(stderr, "%s (O%d): output %d (%s) differs at part %lld: jit 0x%llx, interp 0x%llx\n",
              name, lvl, k, ft_dtype_name(dt), (long long)at, (unsigned long long)g,
              (unsigned long long)w);
    }
    ck_assert_msg(ok, "%s: output %d differs", name, k);
    n_checked++;
  }
  for (int k = 0; k < n_out; k++) ft_array_free(want[k]), ft_array_free(got[k]);
  for (int k = 0; k < n_in; k++) ft_array_free(in[k]);
  ft_fn_free(fn);
  ft_jaxpr_free(j);
}

static void checkf(const char *name, uint64_t seed, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void checkf(const char *name, uint64_t seed, const char *fmt, ...) {
  char text[8192];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  ck_assert(n > 0 && n < (int)sizeof text);
  check_text(name, text, seed, 0);
  check_text(name, text, seed + 1, 3);
  check_text(name, text, seed + 2, -1); /* with the default exact-tier e-graph */
}

/* The two complex dtypes: name in jaxprs, part dtype, JAX's dtype names. */
typedef struct cdt {
  const char *c, *r, *cname, *rname;
} cdt;
static const cdt CDT[2] = {{"c64", "f32", "complex64", "float32"}, {"c128", "f64", "complex128", "float64"}};

/* Shapes: rank 0, size 0, size 1, small odd ones, vectorized ones. */
static const char *SHAPES[] = {"", "0", "1", "7", "3,5", "2,0,3", "1,1", "64,80", "4099"};
enum { NSHAPES = sizeof SHAPES / sizeof SHAPES[0] };

START_TEST(arith) {
  for (int t = 0; t < 2; t++)
    for (int s = 0; s < NSHAPES; s++) {
      const char *C_ = CDT[t].c, *R = CDT[t].r, *S = SHAPES[s];
      checkf("arith", (uint64_t)(t * 100 + s), "{ lambda ; a:%s[%s] b:%s[%s]. let\n"
             "    c:%s[%s] = add a b\n    d:%s[%s] = sub a b\n    e:%s[%s] = mul a b\n"
             "    f:%s[%s] = div a b\n    g:%s[%s] = neg a\n    h:%s[%s] = square b\n"
             "    i:%s[%s] = abs a\n    j:bool[%s] = eq a b\n    k:bool[%s] = ne a b\n"
             "    l:bool[%s] = eq a a\n    m:bool[%s] = ne b b\n    n:%s[%s] = add_any a b\n"
             "    o:%s[%s] = copy_p a\n    p:%s[%s] = stop_gradient b\n"
             "    q:%s[%s] = div e f\n    r:%s[%s] = mul q g\n"
             "  in (c, d, e, f, g, h, i, j, k, l, m, n, o, p, r) }",
             C_, S, C_, S, C_, S, C_, S, C_, S, C_, S, C_, S, C_, S, R, S, S, S, S, S, C_, S,
             C_, S, C_, S, C_, S, C_, S);
    }
  ck_assert_int_gt(n_checked, 0);
}
END_TEST

START_TEST(parts) {
  /* the coverage matrix's lower column: compiled */
  ck_assert_ptr_null(ft_lower_rule_status(FT_P_REAL));
  ck_assert_ptr_null(ft_lower_rule_status(FT_P_IMAG));
  ck_assert_ptr_null(ft_lower_rule_status(FT_P_CONJ));
  ck_assert_ptr_null(ft_lower_rule_status(FT_P_COMPLEX));
  for (int t = 0; t < 2; t++)
    for (int s = 0; s < NSHAPES; s++) {
      const cdt *d = &CDT[t];
      const char *S = SHAPES[s];
      checkf("parts", (uint64_t)(t * 100 + s), "{ lambda ; a:%s[%s] x:%s[%s] y:%s[%s]. let\n"
             "    b:%s[%s] = real a\n    c:%s[%s] = imag a\n    e:%s[%s] = conj[input_dtype=%s] a\n"
             "    f:%s[%s] = complex x y\n    g:%s[%s] = conj[input_dtype=%s] x\n"
             "    h:%s[%s] = mul f g\n    i:%s[%s] = real h\n    j:%s[%s] = add b c\n"
             "  in (b, c, e, f, g, h, i, j) }",
             d->c, S, d->r, S, d->r, S, d->r, S, d->r, S, d->c, S, d->cname, d->c, S, d->c, S,
             d->rname, d->c, S, d->r, S, d->r, S);
    }
}
END_TEST

/* Views: a broadcast row, a transposed operand, a reversed one, a strided
 * slice, a reshape; random sizes, each operand from its own buffer. */
START_TEST(views) {
  uint64_t rs = 7;
  for (int t = 0; t < 2; t++)
    for (int rep = 0; rep < 8; rep++) {
      const char *T = CDT[t].c;
      int m = rep == 0 ? 0 : rep == 1 ? 1 : (int)(jt_rng(&rs) % 40) + 1;
      int n = rep == 2 ? 1 : (int)(jt_rng(&rs) % 70) + 1;
      if (rep == 7) m = 48, n = 96; /* vectorized */
      checkf("views", (uint64_t)(t * 100 + rep), "{ lambda ; a:%s[%d,%d] b:%s[%d] c:%s[%d,%d] w:%s[%d,%d]. let\n"
             "    d:%s[%d,%d] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(%d, %d) sharding=None] b\n"
             "    e:%s[%d,%d] = transpose[permutation=(1, 0)] c\n"
             "    f:%s[%d,%d] = mul a d\n    g:%s[%d,%d] = div e a\n    h:%s[%d,%d] = sub d e\n"
             "    i:%s[%d,%d] = rev[dimensions=(0, 1)] a\n    j:%s[%d,%d] = add i f\n"
             "    k:%s[%d,%d] = slice[limit_indices=(%d, %d) start_indices=(0, 0) strides=(1, 2)] w\n"
             "    l:%s[%d,%d] = mul k e\n    o:%s[%d] = reshape[dimensions=None new_sizes=(%d,) sharding=None] l\n"
             "    p:%s[%d,%d] = transpose[permutation=(1, 0)] g\n"
             "  in (f, g, h, j, l, o, p) }",
             T, m, n, T, n, T, n, m, T, m, 2 * n, T, m, n, m, n, T, m, n, T, m, n, T, m, n, T, m, n,
             T, m, n, T, m, n, T, m, n, m, 2 * n - 1, T, m, n, T, m * n, m * n, T, n, m);
    }
}
END_TEST

/* convert_element_type between complex and every other kernel dtype, both
 * ways, and between the complex dtypes. */
START_TEST(conversions) {
  static const char *other[][2] = {{"f32", "float32"}, {"f64", "float64"}, {"f16", "float16"},
                                   {"bf16", "bfloat16"}, {"i32", "int32"}, {"i64", "int64"},
                                   {"u8", "uint8"}, {"u64", "uint64"}, {"i8", "int8"}, {"bool", "bool"},
                                   {"c64", "complex64"}, {"c128", "complex128"}};
  int no = sizeof other / sizeof other[0];
  for (int t = 0; t < 2; t++)
    for (int q = 0; q < no; q++)
      for (int s = 0; s < NSHAPES; s += 2) {
        const cdt *d = &CDT[t];
        const char *S = SHAPES[s];
        checkf("conversions", (uint64_t)(t * 1000 + q * 10 + s), "{ lambda ; a:%s[%s] x:%s[%s]. let\n"
               "    b:%s[%s] = convert_element_type[new_dtype=%s weak_type=False] a\n"
               "    c:%s[%s] = convert_element_type[new_dtype=%s weak_type=False] x\n"
               "    e:%s[%s] = add c a\n"
               "  in (b, c, e) }",
               d->c, S, other[q][0], S, other[q][0], S, other[q][1], d->c, S, d->cname, d->c, S);
      }
}
END_TEST

/* select_n with a bool and an int32 predicate, complex literals, iota,
 * and the predicate computed from complex compares. */
START_TEST(select_literal_iota) {
  for (int t = 0; t < 2; t++)
    for (int s = 0; s < NSHAPES; s++) {
      const cdt *d = &CDT[t];
      const char *S = SHAPES[s];
      checkf("select", (uint64_t)(t * 100 + s), "{ lambda ; p:bool[%s] q:i32[%s] a:%s[%s] b:%s[%s] c:%s[%s]. let\n"
             "    e:%s[%s] = select_n p a b\n    f:%s[%s] = select_n q a b c\n"
             "    g:bool[%s] = eq a b\n    h:%s[%s] = select_n g c a\n"
             "    i:%s[%s] = mul a (1.5-2.25j):%s[]\n    j:%s[%s] = add i (-0.0+3e-39j):%s[]\n"
             "    k:%s[%s] = div (1+0j):%s[] b\n"
             "  in (e, f, h, j, k) }",
             S, S, d->c, S, d->c, S, d->c, S, d->c, S, d->c, S, S, d->c, S, d->c, S, d->c, d->c, S,
             d->c, d->c, S, d->c);
    }
  for (int t = 0; t < 2; t++) {
    const cdt *d = &CDT[t];
    checkf("iota", (uint64_t)t, "{ lambda ; a:%s[5,300]. let\n"
           "    b:%s[5,300] = iota[dimension=1 dtype=%s shape=(5, 300) sharding=None]\n"
           "    c:%s[5,300] = mul a b\n  in (b, c) }",
           d->c, d->c, d->cname, d->c);
  }
}
END_TEST

/* Division and abs where the naive formulas overflow or underflow: both
 * engines must run the same scaled algorithms. Every pair of special
 * values, as numerator and denominator parts. */
START_TEST(division_specials) {
  for (int t = 0; t < 2; t++) {
    const cdt *d = &CDT[t];
    int n = NSPECIAL * NSPECIAL;
    char text[1024];
    snprintf(text, sizeof text, "{ lambda ; a:%s[%d] b:%s[%d]. let\n"
             "    c:%s[%d] = div a b\n    e:%s[%d] = abs a\n    f:%s[%d] = mul a b\n"
             "    g:%s[%d] = div b a\n  in (c, e, f, g) }",
             d->c, n, d->c, n, d->c, n, d->r, n, d->c, n, d->c, n);
    ft_jaxpr *j = parse_text(text);
    ft_aval av = ft_aval_make(t ? FT_C128 : FT_C64, 1, (int64_t[]){n});
    ft_array *in[2] = {ft_array_alloc(C, &av), ft_array_alloc(C, &av)};
    for (int k = 0; k < 2; k++)
      for (int i = 0; i < n; i++) /* a: (s_i, s_j); b: (s_j, -s_i) */
        ft_set_c128(in[k], i, k ? SPECIAL[i % NSPECIAL] : SPECIAL[i / NSPECIAL],
                    k ? -SPECIAL[i / NSPECIAL] : SPECIAL[i % NSPECIAL]);
    ft_array *want[4] = {0}, *got[4] = {0};
    ck_assert_int_eq(ft_eval(C, j, 2, (const ft_array *const *)in, 4, want), FT_OK);
    ft_jit_options o = {.size = sizeof(ft_jit_options), .no_cache = true, .no_optimize = true};
    ft_fn *fn = ft_jit(C, j, &o);
    ck_assert_ptr_nonnull(fn);
    ck_assert_int_eq(ft_call(fn, 2, (const ft_array *const *)in, 4, got), FT_OK);
    for (int k = 0; k < 4; k++) {
      int64_t at = -1;
      ck_assert_msg(jt_same(got[k], want[k], NULL, &at), "%s output %d differs at part %lld", d->c, k,
                    (long long)at);
      ft_array_free(got[k]), ft_array_free(want[k]);
    }
    ft_array_free(in[0]), ft_array_free(in[1]);
    ft_fn_free(fn);
    ft_jaxpr_free(j);
  }
}
END_TEST

/* A reduction of a real value computed from complex ones: the complex
 * producers are not copied into the reduction kernel (it computes real
 * values only); their group stores the value, the sum reads it. */
START_TEST(reduce_of_complex_producers) {
  for (int t = 0; t < 2; t++) {
    const cdt *d = &CDT[t];
    checkf("reduce", (uint64_t)t, "{ lambda ; a:%s[40,300] b:%s[40,300]. let\n"
           "    c:%s[40,300] = mul a b\n    e:%s[40,300] = abs c\n"
           "    f:%s[40] = reduce_sum[axes=(1,) out_sharding=None] e\n"
           "    g:%s[40,300] = real a\n    h:%s[] = reduce_max[axes=(0, 1) out_sharding=None] g\n"
           "  in (f, h) }",
           d->c, d->c, d->c, d->r, d->r, d->r, d->r);
  }
}
END_TEST

/* reduce_sum of complex values: the canonical-order sums of the parts
 * (one real reduction over the parts view), over every axis set of a few
 * shapes, sizes 0 and 1, a transposed operand, a fused producer (stored
 * first), and full sums long enough to be split into block partials. */
START_TEST(complex_reduce_sum) {
  static const char *cases[][3] = {
      /* shape, axes, result shape */
      {"3,5", "(0,)", "5"}, {"3,5", "(1,)", "3"}, {"3,5", "(0, 1)", ""}, {"3,5", "()", "3,5"},
      {"0,4", "(0,)", "4"}, {"4,0", "(1,)", "4"}, {"1", "(0,)", ""}, {"", "()", ""},
      {"6,7,8", "(0, 2)", "7"}, {"6,7,8", "(1,)", "6,8"}, {"70000", "(0,)", ""},
      {"3,20000", "(1,)", "3"}, {"40000,2", "(0,)", "2"}, {"64,129", "(0, 1)", ""}};
  for (int t = 0; t < 2; t++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      const char *T = CDT[t].c, *S = cases[c][0], *A = cases[c][1], *R = cases[c][2];
      checkf("reduce_sum", (uint64_t)(t * 100 + c), "{ lambda ; a:%s[%s] b:%s[%s]. let\n"
             "    c:%s[%s] = reduce_sum[axes=%s out_sharding=None] a\n"
             "    d:%s[%s] = mul a b\n    e:%s[%s] = reduce_sum[axes=%s out_sharding=None] d\n"
             "    f:%s[%s] = neg e\n"
             "  in (c, f) }",
             T, S, T, S, T, R, A, T, S, T, R, A, T, R);
    }
  for (int t = 0; t < 2; t++) { /* a transposed operand (a view) */
    const char *T = CDT[t].c;
    checkf("reduce_sum view", (uint64_t)t, "{ lambda ; a:%s[30,50]. let\n"
           "    b:%s[50,30] = transpose[permutation=(1, 0)] a\n"
           "    c:%s[50] = reduce_sum[axes=(1,) out_sharding=None] b\n"
           "    d:%s[30] = reduce_sum[axes=(0,) out_sharding=None] b\n  in (c, d) }",
           T, T, T, T);
  }
}
END_TEST

/* Complex kernels inside a control step: a scan with a complex carry and
 * complex rows (its kernels hoisted into the one module). */
START_TEST(scan_carry) {
  for (int t = 0; t < 2; t++) {
    const cdt *d = &CDT[t];
    checkf("scan", (uint64_t)t, "{ lambda ; a:%s[4] b:%s[6,4]. let\n"
           "    c:%s[4] d:%s[6,4] = scan[\n"
           "      jaxpr={ lambda ; e:%s[4] f:%s[4]. let\n"
           "          g:%s[4] = mul e f\n          h:%s[4] = add g (0.5+0.25j):%s[]\n"
           "          i:%s[4] = abs h\n"
           "          j:%s[4] = convert_element_type[new_dtype=%s weak_type=False] i\n"
           "          k:%s[4] = div h j\n        in (k, g) }\n"
           "      length=6\n      num_carry=1\n      num_consts=0\n      reverse=False\n      unroll=1\n"
           "    ] a b\n  in (c, d) }",
           d->c, d->c, d->c, d->c, d->c, d->c, d->c, d->c, d->c, d->r, d->c, d->cname, d->c);
  }
}
END_TEST

/* The operations that move parts (neg, copies, conj, real, imag, complex,
 * select_n, conversions) on NaNs with payloads, signalling ones included:
 * exact bytes. The interpreter takes c64 parts through double, which
 * quiets a signalling NaN (codegen.c, via_f64); c128 parts stay as they
 * are. */
START_TEST(nan_payloads) {
  static const uint32_t n32[] = {0x7fa00001u, 0xffc12345u, 0x7f800003u, 0x7fc00000u, 0x3f800000u, 0x80000000u};
  static const uint64_t n64[] = {0x7ff4000000000001ull, 0xfff8000000012345ull, 0x7ff0000000000007ull,
                                 0x3ff0000000000000ull, 0x8000000000000000ull};
  for (int t = 0; t < 2; t++) {
    const cdt *d = &CDT[t];
    char text[2048];
    snprintf(text, sizeof text, "{ lambda ; a:%s[64] x:%s[64] y:%s[64] p:bool[64]. let\n"
             "    b:%s[64] = neg a\n    c:%s[64] = copy_p a\n    e:%s[64] = conj[input_dtype=%s] a\n"
             "    f:%s[64] = real a\n    g:%s[64] = imag a\n    h:%s[64] = complex x y\n"
             "    i:%s[64] = conj[input_dtype=%s] x\n    j:%s[64] = select_n p a h\n"
             "    k:%s[64] = convert_element_type[new_dtype=%s weak_type=False] x\n"
             "    l:f32[64] = convert_element_type[new_dtype=float32 weak_type=False] a\n"
             "    m:f64[64] = convert_element_type[new_dtype=float64 weak_type=False] a\n"
             "    n:c64[64] = convert_element_type[new_dtype=complex64 weak_type=False] a\n"
             "    o:c128[64] = convert_element_type[new_dtype=complex128 weak_type=False] a\n"
             "  in (b, c, e, f, g, h, i, j, k, l, m, n, o) }",
             d->c, d->r, d->r, d->c, d->c, d->c, d->cname, d->r, d->r, d->c, d->c, d->rname, d->c,
             d->c, d->cname);
    ft_jaxpr *j = parse_text(text);
    ft_array *in[4];
    for (int k = 0; k < 4; k++) {
      ft_aval av;
      ck_assert_int_eq(ft_jaxpr_input_aval(j, k, &av), FT_OK);
      in[k] = ft_array_alloc(C, &av);
      int64_t words = (int64_t)(in[k]->nbytes / (t ? 8 : 4));
      for (int64_t w = 0; w < words; w++) {
        if (k == 3) break;
        if (t) memcpy((uint64_t *)in[k]->data + w, &n64[(w * 7 + k) % 5], 8);
        else memcpy((uint32_t *)in[k]->data + w, &n32[(w * 7 + k) % 6], 4);
      }
      if (k == 3)
        for (int64_t w = 0; w < 64; w++) ((uint8_t *)in[k]->data)[w] = (uint8_t)(w % 3 == 0);
    }
    int n_out = ft_jaxpr_num_outputs(j);
    ft_array *want[16] = {0}, *got[16] = {0};
    ck_assert_int_eq(ft_eval(C, j, 4, (const ft_array *const *)in, n_out, want), FT_OK);
    ft_fn *fn = ft_jit(C, j, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_cache = true, .no_optimize = true});
    ck_assert_ptr_nonnull(fn);
    ck_assert_int_eq(ft_call(fn, 4, (const ft_array *const *)in, n_out, got), FT_OK);
    for (int k = 0; k < n_out; k++) {
      ck_assert_msg(!memcmp(got[k]->data, want[k]->data, want[k]->nbytes), "%s: output %d bytes differ",
                    d->c, k);
      ft_array_free(got[k]), ft_array_free(want[k]);
    }
    for (int k = 0; k < 4; k++) ft_array_free(in[k]);
    ft_fn_free(fn);
    ft_jaxpr_free(j);
  }
}
END_TEST

/* JAX's programs with complex values (fixtures/ad_complex: fft, rfft,
 * irfft and the complex parts, with real/imag/complex/conj around them)
 * and their gradients (ft_grad: complex mul, add_any, conj, complex of
 * the cotangents): every one plans with no fallback step and the JIT's
 * outputs equal ft_eval's on JAX's inputs. (test_ad_complex checks
 * ft_eval's gradients against JAX's.) */
static ft_array *fixture_npy(const char *dir, const char *name, const char *sfx) {
  char path[1024];
  snprintf(path, sizeof path, "%s/../ad_complex/%s.%s.npy", dir, name, sfx);
  ft_array *a = ft_npy_read(C, path);
  ck_assert_msg(a != NULL, "%s: %s", path, ft_ctx_error(C));
  return a;
}

static void jit_equals_eval(const char *name, const ft_jaxpr *j, int n_in, ft_array **in) {
  int n_out = ft_jaxpr_num_outputs(j);
  ft_array *want[8] = {0}, *got[8] = {0};
  ck_assert(n_out <= 8);
  ck_assert_msg(ft_eval(C, j, n_in, (const ft_array *const *)in, n_out, want) == FT_OK, "%s: %s", name, ft_ctx_error(C));
  ft_fn *fn = ft_jit(C, j, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_cache = true});
  ck_assert_msg(fn != NULL, "%s: %s", name, ft_ctx_error(C));
  ck_assert_msg(ft_call(fn, n_in, (const ft_array *const *)in, n_out, got) == FT_OK, "%s: %s", name, ft_ctx_error(C));
  ft_jit_stats s;
  ck_assert_int_eq(ft_fn_stats(fn, &s), FT_OK);
  char *plan = ft_fn_plan(fn);
  ck_assert_msg(s.n_fallback == 0 && !strstr(plan, "FALLBACK"), "%s:\n%s", name, plan);
  ft_free(plan);
  for (int k = 0; k < n_out; k++) {
    ck_assert_msg(jt_same(got[k], want[k], NULL, NULL), "%s: output %d differs", name, k);
    ft_array_free(got[k]), ft_array_free(want[k]);
    n_checked++;
  }
  ft_fn_free(fn);
}

START_TEST(ad_complex_fixtures) {
  static const struct { const char *name; int n_in; } cases[] = {
      {"fft", 3}, {"ifft", 3}, {"fft2", 3}, {"rfft_even", 3}, {"rfft_odd", 3}, {"rfft2", 3},
      {"irfft_even", 2}, {"irfft_odd", 2}, {"irfft2", 2}, {"parts", 2}};
  const char *dir = getenv("FT_GOLDEN");
  ck_assert_ptr_nonnull(dir);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char path[1024], name[64];
    snprintf(path, sizeof path, "%s/../ad_complex/%s.jaxpr", dir, cases[c].name);
    size_t len = 0;
    char *text = jt_read_all(path, &len);
    ck_assert_msg(text != NULL, "%s", path);
    ft_jaxpr *j = ft_parse(C, text, len, path);
    ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
    ft_jaxpr *g = ft_grad(C, j, 0, NULL, false);
    ck_assert_msg(g != NULL, "%s: %s", path, ft_ctx_error(C));
    ft_array *in[4] = {0};
    for (int i = 0; i < cases[c].n_in; i++) {
      char sfx[16];
      snprintf(sfx, sizeof sfx, "in%d", i);
      in[i] = fixture_npy(dir, cases[c].name, sfx);
    }
    jit_equals_eval(cases[c].name, j, cases[c].n_in, in);
    snprintf(name, sizeof name, "grad %s", cases[c].name);
    jit_equals_eval(name, g, cases[c].n_in, in);
    for (int i = 0; i < cases[c].n_in; i++) ft_array_free(in[i]);
    ft_jaxpr_free(g), ft_jaxpr_free(j);
    free(text);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("jit_complex");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, jt_setup, jt_teardown);
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, arith);
  tcase_add_test(tc, parts);
  tcase_add_test(tc, views);
  tcase_add_test(tc, conversions);
  tcase_add_test(tc, select_literal_iota);
  tcase_add_test(tc, division_specials);
  tcase_add_test(tc, nan_payloads);
  tcase_add_test(tc, reduce_of_complex_producers);
  tcase_add_test(tc, complex_reduce_sum);
  tcase_add_test(tc, scan_carry);
  tcase_add_test(tc, ad_complex_fixtures);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int nf = srunner_ntests_failed(sr);
  srunner_free(sr);
  return nf ? 1 : 0;
}
