/* tests/lower/test_jit_f16.c: f16 and bf16 elementwise work in compiled
 * loop kernels (issue 6), byte for byte equal to the interpreter.
 *
 *  - every unary, binary, comparison, select_n/clamp and conversion the
 *    interpreter runs on f16/bf16, on all 65536 bit patterns of the dtype
 *    (so every ±0, subnormal, ±inf, NaN payload, max finite is an operand),
 *    paired against a permutation of them, a scalar and a size-1 broadcast;
 *  - conversions into f16/bf16 from f32 values at and beside every rounding
 *    tie (round half to even, subnormal results, the overflow boundary),
 *    from f64 (rounded through f32, as XLA on CPU does) and from 64-bit
 *    integers (through f64);
 *  - shapes of size 0 and 1 and rank 0; broadcast/reshape fused with them;
 *  - every such program plans with no fallback step, and the golden
 *    programs that use f16/bf16 plan with none.
 * The comparison is exact bytes (NaN sign and payload included): the
 * interpreter's 16-bit NaN is canonical, and the JIT must produce it. */
#include <stdarg.h>

#include "jit_util.h"
#include "lower/lower.h"

static ft_jaxpr *parse_text(const char *text) {
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "f16 test");
  if (!j) fprintf(stderr, "%s\n", text); /* too long for a check message */
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  return j;
}

/* A NaN of a 16-bit float dtype (bits b of dtype dt). */
static bool nan16(ft_dtype dt, uint16_t b) {
  return dt == FT_F16 ? (b & 0x7c00) == 0x7c00 && (b & 0x3ff) : (b & 0x7f80) == 0x7f80 && (b & 0x7f);
}

/* Equal bytes, or (nan_free: the e-graph ran) both NaN, as jt_same allows
 * for f32/f64: the exact tier rewrites convert_element_type to the same
 * dtype away, which keeps a NaN's payload the interpreter canonicalizes. */
static bool same_elem(ft_dtype dt, const char *g, const char *w, size_t es, bool nan_free) {
  if (!memcmp(g, w, es)) return true;
  if (!nan_free || es != 2 || (dt != FT_F16 && dt != FT_BF16)) return false;
  uint16_t a, b;
  memcpy(&a, g, 2), memcpy(&b, w, 2);
  return nan16(dt, a) && nan16(dt, b);
}

/* Runs j through ft_eval and ft_jit (opt level lvl) on in[]; asserts every
 * output equal and no fallback step in the plan. With optimize false the
 * e-graph is skipped and equality is byte for byte, NaN payloads included
 * (what the kernels compute); with it true two NaNs are equal. Returns the
 * number of outputs compared. */
static int check_run(const char *name, const ft_jaxpr *j, int n_in, ft_array **in, int lvl,
                     bool optimize) {
  int n_out = ft_jaxpr_num_outputs(j);
  ft_array **want = calloc((size_t)n_out, sizeof *want), **got = calloc((size_t)n_out, sizeof *got);
  ck_assert(want && got);
  ck_assert_msg(ft_eval(C, j, n_in, (const ft_array *const *)in, n_out, want) == FT_OK, "%s: %s", name, ft_ctx_error(C));
  ft_jit_options o = {.size = sizeof(ft_jit_options), .no_cache = true, .opt_level = lvl, .no_optimize = !optimize};
  ft_fn *fn = ft_jit(C, j, &o);
  ck_assert_msg(fn != NULL, "%s: %s", name, ft_ctx_error(C));
  ck_assert_msg(ft_call(fn, n_in, (const ft_array *const *)in, n_out, got) == FT_OK, "%s: %s", name, ft_ctx_error(C));
  ft_jit_stats s;
  ck_assert_int_eq(ft_fn_stats(fn, &s), FT_OK);
  char *plan = ft_fn_plan(fn);
  ck_assert_msg(s.n_fallback == 0 && !strstr(plan, "FALLBACK"), "%s:\n%s", name, plan);
  ft_free(plan);
  int bad = 0;
  for (int k = 0; k < n_out; k++) {
    ck_assert(ft_aval_eq(&got[k]->aval, &want[k]->aval));
    if (!memcmp(got[k]->data, want[k]->data, want[k]->nbytes)) continue;
    ft_dtype dt = want[k]->aval.dtype;
    size_t es = ft_dtype_size(dt);
    int64_t at = 0, n = ft_array_size(want[k]);
    while (at < n && same_elem(dt, (char *)got[k]->data + at * (int64_t)es,
                               (char *)want[k]->data + at * (int64_t)es, es, optimize))
      at++;
    if (at == n) continue;
    uint64_t g = 0, w = 0;
    memcpy(&g, (char *)got[k]->data + at * (int64_t)es, es < 8 ? es : 8);
    memcpy(&w, (char *)want[k]->data + at * (int64_t)es, es < 8 ? es : 8);
    fprintf(stderr, "%s: output %d (%s) differs at %lld: jit 0x%llx, interp 0x%llx\n", name, k,
            ft_dtype_name(want[k]->aval.dtype), (long long)at, (unsigned long long)g,
            (unsigned long long)w);
    bad++;
  }
  for (int k = 0; k < n_out; k++) ft_array_free(want[k]), ft_array_free(got[k]);
  free(want), free(got);
  ft_fn_free(fn);
  ck_assert_int_eq(bad, 0);
  return n_out;
}

/* Both: the kernels' bytes, then the default pipeline (e-graph on). */
static int check_bytes(const char *name, const ft_jaxpr *j, int n_in, ft_array **in, int lvl) {
  check_run(name, j, n_in, in, lvl, true);
  return check_run(name, j, n_in, in, lvl, false);
}

/* ----------------------------------------------------------- the program */
typedef struct tb {
  char buf[1 << 15];
  size_t n;
  int nv;
  char outs[4096];
} tb;

static void put(tb *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(tb *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  t->n += (size_t)vsnprintf(t->buf + t->n, sizeof t->buf - t->n, fmt, ap);
  va_end(ap);
  ck_assert(t->n < sizeof t->buf);
}

/* `zN:<dtype><S> = rhs`, listed as an output */
static void eqn(tb *t, const char *dt, const char *S, const char *rhs) {
  put(t, "    z%d:%s%s = %s\n", t->nv, dt, S, rhs);
  size_t l = strlen(t->outs);
  snprintf(t->outs + l, sizeof t->outs - l, "%sz%d", l ? ", " : "", t->nv++);
}

static const char *const UNARY[] = {"neg", "sign", "floor", "ceil", "round[rounding_method=0]",
  "round[rounding_method=1]", "exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin",
  "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "sqrt", "rsqrt",
  "cbrt", "square", "abs", "erf", "erfc", "erf_inv", "integer_pow[y=3]", "integer_pow[y=-2]",
  "integer_pow[y=5]", "integer_pow[y=0]", "copy", "copy_p", "stop_gradient"};
static const char *const BINARY[] = {"add", "sub", "mul", "div", "rem", "pow", "max", "min",
  "atan2", "nextafter"};
static const char *const CMP[] = {"eq", "ne", "lt", "le", "gt", "ge"};
static const char *const TO[] = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
  "uint32", "uint64", "float32", "float64", "float16", "bfloat16"};
static const char *const TO_SHORT[] = {"bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
  "f32", "f64", "f16", "bf16"};

/* Inputs: a, b: H[S]; r: H[R] (size-1 trailing dims); s: H[]; c: bool[S];
 * w: i32[S]; f: f32[S]; g: f64[S]; i: i64[S]; u: u64[S]. */
enum { N_IN = 10 };
static char *program(const char *H, const char *S, const char *R, const char *flat, const char *P) {
  tb *t = calloc(1, sizeof *t);
  ck_assert_ptr_nonnull(t);
  char rhs[256];
  put(t, "{ lambda ; a:%s%s b:%s%s r:%s%s s:%s[] c:bool%s w:i32%s f:f32%s g:f64%s i:i64%s u:u64%s. let\n",
      H, S, H, S, H, R, H, S, S, S, S, S, S);
  for (size_t k = 0; k < FT_COUNTOF(UNARY); k++) {
    snprintf(rhs, sizeof rhs, "%s a", UNARY[k]);
    eqn(t, H, S, rhs);
  }
  snprintf(rhs, sizeof rhs, "is_finite a");
  eqn(t, "bool", S, rhs);
  for (size_t k = 0; k < FT_COUNTOF(BINARY); k++) {
    snprintf(rhs, sizeof rhs, "%s a b", BINARY[k]);
    eqn(t, H, S, rhs);
    snprintf(rhs, sizeof rhs, "%s s a", BINARY[k]);
    eqn(t, H, S, rhs);
    snprintf(rhs, sizeof rhs, "%s a r", BINARY[k]);
    eqn(t, H, S, rhs);
  }
  for (size_t k = 0; k < FT_COUNTOF(CMP); k++) {
    snprintf(rhs, sizeof rhs, "%s a b", CMP[k]);
    eqn(t, "bool", S, rhs);
  }
  eqn(t, H, S, "select_n c a b");
  eqn(t, H, S, "select_n w a b a");
  eqn(t, H, S, "clamp s a b");
  eqn(t, H, S, "clamp b a s");
  for (size_t k = 0; k < FT_COUNTOF(TO); k++) {
    snprintf(rhs, sizeof rhs, "convert_element_type[new_dtype=%s weak_type=False] a", TO[k]);
    eqn(t, TO_SHORT[k], S, rhs);
  }
  const char *long_h = !strcmp(H, "f16") ? "float16" : "bfloat16";
  static const char *const src[] = {"f", "g", "i", "u", "w", "c"};
  for (size_t k = 0; k < FT_COUNTOF(src); k++) {
    snprintf(rhs, sizeof rhs, "convert_element_type[new_dtype=%s weak_type=False] %s", long_h, src[k]);
    eqn(t, H, S, rhs);
  }
  snprintf(rhs, sizeof rhs, "bitcast_convert_type[new_dtype=%s] a", !strcmp(H, "f16") ? "bfloat16" : "float16");
  eqn(t, !strcmp(H, "f16") ? "bf16" : "f16", S, rhs);
  eqn(t, "u16", S, "bitcast_convert_type[new_dtype=uint16] a");
  /* a fused chain: literals (rounded as the interpreter rounds them), a
   * scalar broadcast, a reshape to 1-d and back, a select */
  put(t, "    y0:%s%s = mul a b\n", H, S);
  put(t, "    y1:%s%s = add y0 0.1:%s[]\n", H, S, H);
  put(t, "    y2:%s%s = broadcast_in_dim[broadcast_dimensions=() shape=%s sharding=None] s\n", H, S, P);
  put(t, "    y3:%s%s = max y1 y2\n", H, S);
  put(t, "    y4:%s[%s] = reshape[dimensions=None new_sizes=(%s,) sharding=None] y3\n", H, flat, flat);
  put(t, "    y5:%s[%s] = tanh y4\n", H, flat);
  put(t, "    y6:%s%s = reshape[dimensions=None new_sizes=%s sharding=None] y5\n", H, S, P);
  eqn(t, H, S, "select_n c y6 a");
  put(t, "    y7:%s%s = integer_pow[y=2] a\n", H, S);
  snprintf(rhs, sizeof rhs, "sub y7 1e-3:%s[]", H);
  eqn(t, H, S, rhs);
  put(t, "  in (%s) }\n", t->outs);
  char *text = strdup(t->buf);
  free(t);
  return text;
}

/* The shape strings: "[256,256]" -> R "[256,1]", flat "65536" and the
 * param form P "(256, 256)" ("(0,)", "()"). */
static void shapes_of(const int64_t *d, int rank, char *S, char *R, char *flat, char *P) {
  int64_t n = 1;
  int ws = sprintf(S, "["), wr = sprintf(R, "["), wp = sprintf(P, "(");
  for (int k = 0; k < rank; k++) {
    wp += sprintf(P + wp, "%s%lld", k ? ", " : "", (long long)d[k]);
    ws += sprintf(S + ws, "%s%lld", k ? "," : "", (long long)d[k]);
    wr += sprintf(R + wr, "%s%lld", k ? "," : "", k ? 1LL : (long long)d[k]);
    n *= d[k];
  }
  sprintf(S + ws, "]"), sprintf(R + wr, "]"), sprintf(P + wp, rank == 1 ? ",)" : ")");
  sprintf(flat, "%lld", (long long)n);
}

/* f32 bits near 16-bit rounding decisions: element k of the form
 * widen(h) with the dropped bits exactly half, half - 1, half + 1, or
 * random; every 16-bit pattern h of dtype dt appears. */
static uint32_t f32_near(ft_dtype dt, uint32_t k, uint64_t *seed) {
  uint16_t h = (uint16_t)(k * 40503u + 7);
  float f = dt == FT_F16 ? ft_f16_to_f32(h) : ft_bf16_to_f32(h);
  uint32_t bits;
  memcpy(&bits, &f, 4);
  int drop = dt == FT_F16 ? 13 : 16;
  uint32_t half = 1u << (drop - 1), mask = (1u << drop) - 1;
  switch (k % 5) {
  case 0: return (bits & ~mask) | half;
  case 1: return (bits & ~mask) | (half - 1);
  case 2: return (bits & ~mask) | (half + 1);
  case 3: return (uint32_t)jt_rng(seed);
  default: /* the f16 subnormal and overflow ranges */
    return (uint32_t)((jt_rng(seed) & 0x80ffffffu) | ((k & 1 ? 101u + k % 13 : 141u + k % 3) << 23));
  }
}

static void fill_inputs(ft_array **in, ft_dtype dt, int64_t n, uint64_t seed) {
  for (int64_t e = 0; e < n; e++) {
    uint16_t a = (uint16_t)e, b = (uint16_t)(e * 40503 + 12345); /* a bijection over 16 bits */
    if (n < 65536) a = (uint16_t)jt_rng(&seed), b = (uint16_t)jt_rng(&seed);
    ((uint16_t *)in[0]->data)[e] = a;
    ((uint16_t *)in[1]->data)[e] = b;
    ((uint8_t *)in[4]->data)[e] = (uint8_t)(jt_rng(&seed) & 1);
    ((int32_t *)in[5]->data)[e] = (int32_t)(jt_rng(&seed) % 5) - 1; /* out of range clamps */
    uint32_t fb = f32_near(dt, (uint32_t)e, &seed);
    memcpy((float *)in[6]->data + e, &fb, 4);
    double gv;
    switch (e % 4) { /* ties after f64 -> f32 only: the two roundings must both happen */
    case 0: gv = 1 + 0x1p-11 + 0x1p-40 * (double)(e % 7 + 1); break;
    case 1: gv = (double)((float *)in[6]->data)[e] * (1 + 0x1p-30); break;
    case 2: gv = ldexp((double)(jt_rng(&seed) >> 11), (int)(jt_rng(&seed) % 200) - 150 - 53); break;
    default: { uint64_t r = jt_rng(&seed); memcpy(&gv, &r, 8); }
    }
    ((double *)in[7]->data)[e] = e % 2 ? -gv : gv;
    int64_t iv = (int64_t)jt_rng(&seed);
    if (e % 3 == 0) iv = (INT64_C(1) << 60) + (INT64_C(1) << 52) + 1; /* a tie only after f64 */
    if (e % 3 == 1) iv = (int64_t)(jt_rng(&seed) % 140000) - 70000;
    ((int64_t *)in[8]->data)[e] = iv;
    ((uint64_t *)in[9]->data)[e] = e % 2 ? jt_rng(&seed) : jt_rng(&seed) % 70000;
  }
  for (int64_t e = 0; e < ft_array_size(in[2]); e++)
    ((uint16_t *)in[2]->data)[e] = (uint16_t)jt_rng(&seed);
  /* s: 1.5 (f16 0x3e00, bf16 0x3fc0) */
  ((uint16_t *)in[3]->data)[0] = dt == FT_F16 ? 0x3e00 : 0x3fc0;
}

static void run_case(ft_dtype dt, const int64_t *dims, int rank, int lvl) {
  char S[64], R[64], flat[64], P[64], name[96];
  shapes_of(dims, rank, S, R, flat, P);
  char *text = program(ft_dtype_name(dt), S, R, flat, P);
  ft_jaxpr *j = parse_text(text);
  free(text);
  ft_array *in[N_IN];
  for (int k = 0; k < N_IN; k++) {
    ft_aval av;
    ck_assert_int_eq(ft_jaxpr_input_aval(j, k, &av), FT_OK);
    in[k] = ft_array_alloc(C, &av);
    ck_assert_ptr_nonnull(in[k]);
  }
  int64_t n = ft_array_size(in[0]);
  fill_inputs(in, dt, n, (uint64_t)n * 31 + (uint64_t)dt);
  snprintf(name, sizeof name, "%s%s", ft_dtype_name(dt), S);
  ck_assert_int_gt(check_bytes(name, j, N_IN, in, lvl), 80);
  for (int k = 0; k < N_IN; k++) ft_array_free(in[k]);
  ft_jaxpr_free(j);
}

/* All 65536 patterns, vectorized (opt level 3). */
START_TEST(all_patterns) {
  static const ft_dtype dts[] = {FT_F16, FT_BF16};
  int64_t d[2] = {256, 256};
  run_case(dts[_i], d, 2, 3);
}
END_TEST

/* Sizes 0 and 1, rank 0 and a ragged 2-d shape, small kernels unoptimized. */
START_TEST(small_shapes) {
  static const ft_dtype dts[] = {FT_F16, FT_BF16};
  static const struct { int rank; int64_t d[2]; } sh[] = {{1, {0}}, {1, {1}}, {0, {0}}, {2, {3, 17}},
                                                           {2, {0, 4}}};
  for (size_t k = 0; k < FT_COUNTOF(sh); k++) run_case(dts[_i], sh[k].d, sh[k].rank, 2);
}
END_TEST

/* The f16/bf16 iota and a literal-only kernel. */
START_TEST(iota_and_literals) {
  const char *text =
      "{ lambda ; . let\n"
      "    a:f16[70000] = iota[dimension=0 dtype=float16 shape=(70000,) sharding=None]\n"
      "    b:bf16[3,300] = iota[dimension=1 dtype=bfloat16 shape=(3, 300) sharding=None]\n"
      "    c:f16[3,300] = broadcast_in_dim[broadcast_dimensions=() shape=(3, 300) sharding=None] 65519.0:f16[]\n"
      "    d:bf16[3,300] = add b 0.3:bf16[]\n"
      "  in (a, b, c, d) }\n";
  ft_jaxpr *j = parse_text(text);
  ck_assert_int_eq(check_bytes("iota", j, 0, NULL, 2), 4);
  ft_jaxpr_free(j);
}
END_TEST

/* Layout views of 16-bit floats (transpose, slice, rev, broadcast, reshape)
 * read by compiled kernels, and a view that is itself an output (a copy
 * kernel). */
START_TEST(views) {
  static const char *const dts[] = {"f16", "bf16"};
  for (int t = 0; t < 2; t++) {
    char text[2048];
    const char *d = dts[t];
    snprintf(text, sizeof text,
             "{ lambda ; a:%s[5,7] b:%s[7]. let\n"
             "    c:%s[7,5] = transpose[permutation=(1, 0)] a\n"
             "    e:%s[7,5] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(7, 5) sharding=None] b\n"
             "    f:%s[7,5] = mul c e\n"
             "    g:%s[3,7] = slice[limit_indices=(5, 7) start_indices=(2, 0) strides=None] a\n"
             "    h:%s[3,7] = rev[dimensions=(1,)] g\n"
             "    i:%s[21] = reshape[dimensions=None new_sizes=(21,) sharding=None] h\n"
             "    k:%s[21] = exp i\n"
             "  in (f, k, c, h) }\n", d, d, d, d, d, d, d, d, d);
    ft_jaxpr *j = parse_text(text);
    ft_aval av0, av1;
    ft_jaxpr_input_aval(j, 0, &av0), ft_jaxpr_input_aval(j, 1, &av1);
    ft_array *in[2] = {ft_array_alloc(C, &av0), ft_array_alloc(C, &av1)};
    uint64_t seed = 99 + (uint64_t)t;
    for (int k = 0; k < 35; k++) ((uint16_t *)in[0]->data)[k] = (uint16_t)jt_rng(&seed);
    for (int k = 0; k < 7; k++) ((uint16_t *)in[1]->data)[k] = (uint16_t)jt_rng(&seed);
    ck_assert_int_eq(check_bytes(d, j, 2, in, 2), 4);
    ft_array_free(in[0]), ft_array_free(in[1]);
    ft_jaxpr_free(j);
  }
}
END_TEST

/* The golden programs with f16/bf16 equations (real JAX data): no fallback
 * step any more, and the JIT gives the interpreter's bytes. */
START_TEST(golden_half_programs) {
  static const char *const names[] = {"bf16_arith", "convert_dtypes", "convert_special_f32_to_f16_bf16",
                                      "f16_arith", "literals_small_dtypes"};
  const char *dir = getenv("FT_GOLDEN");
  ck_assert_ptr_nonnull(dir);
  for (size_t c = 0; c < FT_COUNTOF(names); c++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.jaxpr", dir, names[c]);
    size_t len = 0;
    char *text = jt_read_all(path, &len);
    ck_assert_ptr_nonnull(text);
    ft_jaxpr *j = ft_parse(C, text, len, path);
    free(text);
    ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
    ft_array *in[16] = {0};
    int n = 0;
    for (; n < 16; n++) {
      snprintf(path, sizeof path, "%s/%s.in%d.npy", dir, names[c], n);
      if (!(in[n] = ft_npy_read(C, path))) break;
      ft_aval av;
      if (ft_jaxpr_input_aval(j, n, &av) == FT_OK && av.dtype == FT_BF16 && in[n]->aval.dtype == FT_U16)
        in[n]->aval.dtype = FT_BF16; /* numpy has no bfloat16: stored as its bits */
    }
    ft_ctx_clear_error(C);
    check_bytes(names[c], j, n, in, 2);
    for (int k = 0; k < n; k++) ft_array_free(in[k]);
    ft_jaxpr_free(j);
  }
}
END_TEST

/* What stays out of loop kernels for the 16-bit floats, with its reason. */
START_TEST(still_unsupported) {
  const char *why = NULL;
  ft_jaxpr *j = parse_text("{ lambda ; a:f16[4]. let b:f16[4] = reduce_precision[exponent_bits=4 "
                           "mantissa_bits=2] a; c:c64[4] = convert_element_type[new_dtype=complex64 "
                           "weak_type=False] a in (b, c) }\n");
  ck_assert(!ft_lower_elem_native(&j->eqns[0], &why));
  ck_assert_ptr_nonnull(why);
  /* f16 -> complex compiles (cpx_elem, test_jit_complex.c) */
  ck_assert(ft_lower_elem_native(&j->eqns[1], &why));
  ft_jaxpr_free(j);
}
END_TEST

int main(void) {
  (void)jt_fill, (void)jt_same; /* jit_util.h helpers this file does not need */
  Suite *s = suite_create("jit_f16");
  TCase *t = tcase_create("f16");
  tcase_add_checked_fixture(t, jt_setup, jt_teardown);
  tcase_set_timeout(t, 600);
  tcase_add_loop_test(t, all_patterns, 0, 2);
  tcase_add_loop_test(t, small_shapes, 0, 2);
  tcase_add_test(t, iota_and_literals);
  tcase_add_test(t, views);
  tcase_add_test(t, golden_half_programs);
  tcase_add_test(t, still_unsupported);
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
