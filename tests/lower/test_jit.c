/* tests/lower/test_jit.c: the JIT against the reference interpreter.
 *
 *  - every golden program that parses and evaluates (fixtures/golden) gives
 *    the same bits through ft_jit/ft_call as through ft_eval;
 *  - every elementwise primitive, per dtype, on random shapes (sizes 0, 1,
 *    lengths that are not multiples of 16, broadcasting), fused in one
 *    program per dtype and shape (few LLVM modules: fast under ASan);
 *  - reductions in the canonical order, views (transpose, slice, rev);
 *  - the loops vectorize (<16 x float> or <8 x float> in the optimized IR);
 *  - the compile cache: a second ft_jit hits memory; a fresh process (the
 *    memory cache cleared) hits the disk; a corrupted entry is detected and
 *    rebuilt. */
#include <dirent.h>
#include <stdarg.h>
#include <unistd.h>

#include "jit_util.h"
#include "lower/lower.h"

/* Runs j through the interpreter and the JIT on in[], compares. Returns the
 * number of differing outputs (messages on stderr). */
static int jit_vs_interp(const char *name, const ft_jaxpr *j, int n_in, ft_array **in,
                         const ft_jit_options *opts, bool *strict) {
  int n_out = ft_jaxpr_num_outputs(j), bad = 0;
  ft_array **want = calloc((size_t)n_out + 1, sizeof *want), **got = calloc((size_t)n_out + 1, sizeof *got);
  ck_assert(want && got);
  ft_ctx_clear_error(C);
  if (ft_eval(C, j, n_in, (const ft_array *const *)in, n_out, want) != FT_OK) {
    free(want), free(got);
    return -1; /* the interpreter cannot run it: nothing to compare */
  }
  ft_fn *fn = ft_jit(C, j, opts);
  if (!fn) {
    fprintf(stderr, "%s: ft_jit failed: %s\n", name, ft_ctx_error(C));
    bad = n_out ? n_out : 1;
  } else if (ft_call(fn, n_in, (const ft_array *const *)in, n_out, got) != FT_OK) {
    fprintf(stderr, "%s: ft_call failed: %s\n", name, ft_ctx_error(C));
    bad = n_out ? n_out : 1;
  } else {
    for (int k = 0; k < n_out; k++) {
      int64_t at = -1;
      if (jt_same(got[k], want[k], strict, &at)) continue;
      bad++;
      char av[64];
      ft_aval a = ft_array_aval(want[k]);
      fprintf(stderr, "%s: output %d (%s) differs at element %lld: jit %.17g, interp %.17g\n", name, k,
              ft_aval_str(&a, av, sizeof av), (long long)at,
              at >= 0 ? ft_get_f64(got[k], at) : 0.0, at >= 0 ? ft_get_f64(want[k], at) : 0.0);
      if (getenv("JT_PLAN")) {
        char *plan = ft_fn_plan(fn);
        fprintf(stderr, "%s", plan);
        ft_free(plan);
      }
    }
  }
  for (int k = 0; k < n_out; k++) ft_array_free(want[k]), ft_array_free(got[k]);
  free(want), free(got);
  ft_fn_free(fn);
  return bad;
}

/* ------------------------------------------------------------- golden */
static void as_dtype(ft_array *a, ft_dtype want) {
  if (a && want == FT_BF16 && a->aval.dtype == FT_U16) a->aval.dtype = FT_BF16;
}

START_TEST(golden_jit_equals_interp) {
  const char *dir = getenv("FT_GOLDEN");
  ck_assert_msg(dir != NULL, "FT_GOLDEN is not set");
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int cases = 0, compared = 0, bad_cases = 0, outs = 0, nan_payload = 0;
  struct dirent *de;
  char path[4096];
  ft_jit_options opts = {.size = sizeof(ft_jit_options), .no_cache = true};
  while ((de = readdir(d))) {
    size_t nl = strlen(de->d_name);
    if (nl < 7 || strcmp(de->d_name + nl - 6, ".jaxpr")) continue;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(nl - 6), de->d_name);
    const char *only = getenv("JT_ONLY");
    if (only && strcmp(only, name)) continue;
    cases++;
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    size_t len = 0;
    char *text = jt_read_all(path, &len);
    ft_ctx_clear_error(C);
    ft_jaxpr *j = ft_parse(C, text, len, path);
    free(text);
    if (!j) continue;
    ft_array *in[64] = {0};
    int n_in = 0;
    for (int k = 0; n_in < 64; k++) {
      snprintf(path, sizeof path, "%s/%s.const%d.npy", dir, name, k);
      if (!(in[n_in] = ft_npy_read(C, path))) break;
      if (k < j->n_const) as_dtype(in[n_in], j->constvars[k]->aval.dtype);
      n_in++;
    }
    for (int k = 0; n_in < 64; k++) {
      snprintf(path, sizeof path, "%s/%s.in%d.npy", dir, name, k);
      if (!(in[n_in] = ft_npy_read(C, path))) break;
      if (k < j->n_in) as_dtype(in[n_in], j->invars[k]->aval.dtype);
      n_in++;
    }
    bool strict = true;
    int r = jit_vs_interp(name, j, n_in, in, &opts, &strict);
    if (r >= 0) {
      compared++;
      outs += ft_jaxpr_num_outputs(j);
      if (r > 0) bad_cases++;
      if (!strict) nan_payload++;
    }
    for (int k = 0; k < n_in; k++) ft_array_free(in[k]);
    ft_jaxpr_free(j);
  }
  closedir(d);
  fprintf(stderr, "golden jit: %d cases, %d run by the interpreter and compared (%d outputs), %d differ; "
          "%d differ only in NaN payloads\n", cases, compared, outs, bad_cases, nan_payload);
  ck_assert_int_gt(compared, 100);
  ck_assert_int_eq(bad_cases, 0);
}
END_TEST

/* The MLP loss and its gradient: bitwise equal, and the plan compiles the
 * elementwise work, uses GEMM and has no fallback. */
static ft_jaxpr *load_golden(const char *name, ft_array **in, int *n_in) {
  const char *dir = getenv("FT_GOLDEN");
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.jaxpr", dir, name);
  size_t len;
  char *text = jt_read_all(path, &len);
  ck_assert_ptr_nonnull(text);
  ft_jaxpr *j = ft_parse(C, text, len, path);
  free(text);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  *n_in = 0;
  for (int k = 0; k < 16; k++) {
    snprintf(path, sizeof path, "%s/%s.in%d.npy", dir, name, k);
    if (!(in[*n_in] = ft_npy_read(C, path))) break;
    (*n_in)++;
  }
  ft_ctx_clear_error(C);
  return j;
}

START_TEST(mlp_loss_and_grad) {
  static const char *const names[] = {"mlp_loss", "grad_mlp_loss"};
  for (int t = 0; t < 2; t++) {
    ft_array *in[16];
    int n_in;
    ft_jaxpr *j = load_golden(names[t], in, &n_in);
    bool strict = true;
    ft_jit_options o = {.size = sizeof(ft_jit_options), .no_cache = true};
    ck_assert_int_eq(jit_vs_interp(names[t], j, n_in, in, &o, &strict), 0);
    ck_assert(strict);
    ft_fn *fn = ft_jit(C, j, &o);
    ck_assert_ptr_nonnull(fn);
    ft_jit_stats s;
    ck_assert_int_eq(ft_fn_stats(fn, &s), FT_OK);
    ck_assert_int_eq(s.n_fallback, 0);
    ck_assert_int_ge(s.n_gemm, 2);
    ck_assert_int_gt(s.n_fused_eqns, 0);
    ft_fn_free(fn);
    for (int k = 0; k < n_in; k++) ft_array_free(in[k]);
    ft_jaxpr_free(j);
  }
}
END_TEST

/* ------------------------------------------------- elementwise primitives */
typedef struct tb {
  char *p;
  size_t n, cap;
  int nv;          /* next generated var */
  char outs[8192]; /* ", "-separated output names */
} tb;

static void tb_put(tb *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tb_put(tb *t, const char *fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int w = vsnprintf(t->p + t->n, t->cap - t->n, fmt, ap);
    va_end(ap);
    if ((size_t)w < t->cap - t->n) {
      t->n += (size_t)w;
      return;
    }
    t->cap = t->cap * 2 + (size_t)w + 64;
    t->p = realloc(t->p, t->cap);
    ck_assert_ptr_nonnull(t->p);
  }
}

/* Adds `zN:<type> = <rhs>` and lists zN as an output. */
static void tb_eqn(tb *t, const char *type, const char *rhs) {
  tb_put(t, "    z%d:%s = %s\n", t->nv, type, rhs);
  size_t l = strlen(t->outs);
  snprintf(t->outs + l, sizeof t->outs - l, "%sz%d", l ? ", " : "", t->nv);
  t->nv++;
}

static const char *const UNARY_F[] = {"neg", "sign", "floor", "ceil", "round[rounding_method=0]",
  "round[rounding_method=1]", "exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin",
  "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "sqrt", "rsqrt",
  "cbrt", "square", "abs", "erf", "erfc", "erf_inv", "integer_pow[y=3]", "integer_pow[y=-2]",
  "integer_pow[y=0]", "copy", "stop_gradient", "lgamma", "digamma", "log2", "bessel_i0e",
  "bessel_i1e"};
static const char *const BINARY_F[] = {"add", "sub", "mul", "div", "rem", "pow", "max", "min",
  "atan2", "nextafter", "polygamma", "zeta", "igamma", "igammac", "igamma_grad_a"};
static const char *const UNARY_I[] = {"neg", "sign", "abs", "square", "not", "copy", "integer_pow[y=3]"};
static const char *const BINARY_I[] = {"add", "sub", "mul", "div", "rem", "max", "min", "and", "or",
  "xor", "shift_left", "shift_right_logical", "shift_right_arithmetic"};
static const char *const BINARY_B[] = {"max", "min", "and", "or", "xor"};
static const char *const CMP[] = {"eq", "ne", "lt", "le", "gt", "ge"};
static const ft_dtype NATIVE[] = {FT_BOOL, FT_I8, FT_I16, FT_I32, FT_I64, FT_U8, FT_U16, FT_U32,
                                  FT_U64, FT_F32, FT_F64};
static const char *const SHAPES[] = {"[37]", "[]", "[1]", "[3,17]", "[0]", "[2,1,33]", "[5,4]", "[129]"};

/* The program for dtype dt on shape S: every primitive of the dtype on
 * inputs a, b (dt[S]), r (dt broadcastable: S with size-1 trailing dims), s
 * (dt[] scalar), c (bool[S]), w (i32[S]); chains to exercise fusion. */
static char *elementwise_program(ft_dtype dt, const char *S, const char *R) {
  tb t = {0};
  t.cap = 1 << 14;
  t.p = malloc(t.cap);
  const char *d = ft_dtype_name(dt), *ld = ft_dtype_long_name(dt);
  bool fl = dt == FT_F32 || dt == FT_F64, isbool = dt == FT_BOOL;
  char T[64], B[64], rhs[256];
  snprintf(T, sizeof T, "%s%s", d, S);
  snprintf(B, sizeof B, "bool%s", S);
  tb_put(&t, "{ lambda ; a:%s b:%s r:%s%s s:%s[] c:%s w:i32%s. let\n", T, T, d, R, d, B, S);
  const char *const *un = fl ? UNARY_F : isbool ? (const char *const[]){"not", "copy"} : UNARY_I;
  size_t nun = fl ? FT_COUNTOF(UNARY_F) : isbool ? 2 : FT_COUNTOF(UNARY_I);
  const char *const *bin = fl ? BINARY_F : isbool ? BINARY_B : BINARY_I;
  size_t nbin = fl ? FT_COUNTOF(BINARY_F) : isbool ? FT_COUNTOF(BINARY_B) : FT_COUNTOF(BINARY_I);
  for (size_t i = 0; i < nun; i++) {
    snprintf(rhs, sizeof rhs, "%s a", un[i]);
    tb_eqn(&t, T, rhs);
  }
  if (fl) tb_eqn(&t, B, "is_finite a");
  if (fl) tb_eqn(&t, T, "pow a w"); /* an integer exponent (converted to dt) */
  for (size_t i = 0; i < nbin; i++) {
    snprintf(rhs, sizeof rhs, "%s a b", bin[i]);
    tb_eqn(&t, T, rhs);
    snprintf(rhs, sizeof rhs, "%s s a", bin[i]); /* scalar operand */
    tb_eqn(&t, T, rhs);
    snprintf(rhs, sizeof rhs, "%s a r", bin[i]); /* size-1 broadcasting */
    tb_eqn(&t, T, rhs);
  }
  if (fl) { /* the ternary family: same shapes, a scalar operand, size-1 broadcasting */
    tb_eqn(&t, T, "regularized_incomplete_beta a b r");
    tb_eqn(&t, T, "regularized_incomplete_beta s a b");
    tb_eqn(&t, T, "regularized_incomplete_beta r s a");
  }
  for (size_t i = 0; i < FT_COUNTOF(CMP); i++) {
    snprintf(rhs, sizeof rhs, "%s a b", CMP[i]);
    tb_eqn(&t, B, rhs);
  }
  tb_eqn(&t, T, "select_n c a b");
  tb_eqn(&t, T, "select_n w a b a");
  if (!isbool) tb_eqn(&t, T, "clamp s a b");
  for (size_t i = 0; i < FT_COUNTOF(NATIVE); i++) {
    char to[64];
    snprintf(to, sizeof to, "%s%s", ft_dtype_name(NATIVE[i]), S);
    snprintf(rhs, sizeof rhs, "convert_element_type[new_dtype=%s weak_type=False] a",
             ft_dtype_long_name(NATIVE[i]));
    tb_eqn(&t, to, rhs);
  }
  /* a fused chain with literals, a scalar broadcast and a select */
  const char *one = fl ? "1.0" : isbool ? "True" : "1";
  tb_put(&t, "    y0:%s = %s a b\n", T, isbool ? "and" : "mul");
  tb_put(&t, "    y1:%s = %s y0 %s:%s[]\n", T, isbool ? "or" : "add", one, d);
  tb_put(&t, "    y2:%s = broadcast_in_dim[broadcast_dimensions=() shape=%s sharding=None] s\n", T,
         strcmp(S, "[]") ? S : "()");
  tb_put(&t, "    y3:%s = max y1 y2\n", T);
  tb_put(&t, "    y4:%s = select_n c y3 a\n", T);
  tb_eqn(&t, T, fl ? "tanh y4" : "max y4 b");
  (void)ld;
  tb_put(&t, "  in (%s) }\n", t.outs);
  return t.p;
}

static ft_array *rand_array(ft_dtype dt, const ft_aval *shape, uint64_t seed) {
  ft_aval av = *shape;
  av.dtype = dt;
  ft_array *a = ft_array_alloc(C, &av);
  ck_assert_ptr_nonnull(a);
  jt_fill(a, seed);
  return a;
}

START_TEST(elementwise_all_dtypes) {
  ft_dtype dt = NATIVE[_i];
  int fails = 0;
  for (int si = 0; si < 2; si++) {
    const char *S = SHAPES[(_i * 3 + si * 5) % FT_COUNTOF(SHAPES)];
    char R[64];
    /* r: the first dim of S, then 1s */
    if (!strcmp(S, "[]")) snprintf(R, sizeof R, "[]");
    else {
      int d0 = atoi(S + 1), rank = 1;
      for (const char *q = S; *q; q++) rank += *q == ',';
      int w = snprintf(R, sizeof R, "[%d", d0);
      for (int k = 1; k < rank; k++) w += snprintf(R + w, sizeof R - (size_t)w, ",1");
      snprintf(R + w, sizeof R - (size_t)w, "]");
    }
    char *text = elementwise_program(dt, S, R);
    ft_jaxpr *j = ft_parse(C, text, strlen(text), "elementwise");
    ck_assert_msg(j != NULL, "%s\n%s", ft_ctx_error(C), text);
    free(text);
    ft_array *in[6];
    for (int k = 0; k < 6; k++) {
      ft_aval av;
      ck_assert_int_eq(ft_jaxpr_input_aval(j, k, &av), FT_OK);
      in[k] = rand_array(av.dtype, &av, (uint64_t)(_i * 100 + si * 10 + k));
    }
    char name[64];
    snprintf(name, sizeof name, "elementwise %s%s", ft_dtype_name(dt), S);
    bool strict = true;
    /* the second shape at opt_level 3: every kernel vectorized (at 2, small
     * kernels are compiled unoptimized) */
    ft_jit_options o = {.size = sizeof(ft_jit_options), .no_cache = true, .opt_level = si ? 3 : 2};
    int r = jit_vs_interp(name, j, 6, in, &o, &strict);
    ck_assert_msg(r >= 0, "%s: the interpreter failed: %s", name, ft_ctx_error(C));
    fails += r;
    for (int k = 0; k < 6; k++) ft_array_free(in[k]);
    ft_jaxpr_free(j);
  }
  ck_assert_int_eq(fails, 0);
}
END_TEST

/* ------------------------------------------- reductions, views, vectorization */
static ft_jaxpr *parse_text(const char *text) {
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "test");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  return j;
}

/* Integer reductions and scans wrap as XLA's do (two's complement), in the
 * interpreter (without undefined behaviour: the sanitized build runs this)
 * and bitwise alike in the JIT. Columns of a:i64[3,2] / a:i32[3,2]:
 * (MAX, 1, 1) and (MIN, -1, MIN). */
START_TEST(int_reductions_wrap) {
  static const struct {
    const char *eqn, *out;
    int64_t want64[6], want32[6];
  } cases[] = {
      {"reduce_sum[axes=(0,) out_sharding=None] a", "[2]",
       {INT64_MIN + 1, -1}, {INT32_MIN + 1, -1}},
      {"reduce_prod[axes=(0,) out_sharding=None] a", "[2]", {INT64_MAX, 0}, {INT32_MAX, 0}},
      {"reduce_max[axes=(0,) out_sharding=None] a", "[2]", {INT64_MAX, -1}, {INT32_MAX, -1}},
      {"reduce_min[axes=(0,) out_sharding=None] a", "[2]", {1, INT64_MIN}, {1, INT32_MIN}},
      {"cumsum[axis=0 reverse=False] a", "[3,2]",
       {INT64_MAX, INT64_MIN, INT64_MIN, INT64_MAX, INT64_MIN + 1, -1},
       {INT32_MAX, INT32_MIN, INT32_MIN, INT32_MAX, INT32_MIN + 1, -1}},
      {"cumprod[axis=0 reverse=True] a", "[3,2]",
       {INT64_MAX, 0, 1, INT64_MIN, 1, INT64_MIN}, {INT32_MAX, 0, 1, INT32_MIN, 1, INT32_MIN}},
  };
  for (int w = 0; w < 2; w++) {
    const char *dt = w ? "i32" : "i64";
    int64_t v[6] = {w ? INT32_MAX : INT64_MAX, w ? INT32_MIN : INT64_MIN, 1, -1, 1,
                    w ? INT32_MIN : INT64_MIN};
    const int64_t dims[2] = {3, 2};
    ft_array *in = ft_array_new(C, w ? FT_I32 : FT_I64, 2, dims);
    ck_assert_ptr_nonnull(in);
    for (int i = 0; i < 6; i++) ft_set_i64(in, i, v[i]);
    for (size_t c = 0; c < FT_COUNTOF(cases); c++) {
      char text[256];
      snprintf(text, sizeof text, "{ lambda ; a:%s[3,2]. let b:%s%s = %s in (b,) }", dt, dt,
               cases[c].out, cases[c].eqn);
      ft_jaxpr *j = parse_text(text);
      ft_array *out = NULL;
      ck_assert_msg(ft_eval(C, j, 1, (const ft_array *const *)&in, 1, &out) == FT_OK, "%s: %s", text, ft_ctx_error(C));
      for (int64_t i = 0; i < ft_array_size(out); i++)
        ck_assert_msg(ft_get_i64(out, i) == (w ? cases[c].want32[i] : cases[c].want64[i]),
                      "%s: element %lld is %lld", text, (long long)i, (long long)ft_get_i64(out, i));
      bool strict = true;
      ck_assert_int_eq(jit_vs_interp(text, j, 1, &in, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_cache = true}, &strict), 0);
      ft_array_free(out);
      ft_jaxpr_free(j);
    }
    ft_array_free(in);
  }
}
END_TEST

/* NaN bits: every float elementwise primitive, on all pairs of special
 * values (infinities, signed zeros, NaNs of both signs, ...), gives the
 * same bits in both engines, NaN sign and payload included (one program per
 * dtype, so the kernels are fused as a real program's would be). */
START_TEST(nan_bits_elementwise) {
  static const char *const un[] = {"neg", "sign", "floor", "ceil", "round[rounding_method=0]",
    "round[rounding_method=1]", "exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin",
    "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "sqrt",
    "rsqrt", "cbrt", "square", "abs", "erf", "erfc", "erf_inv", "integer_pow[y=3]",
    "integer_pow[y=-2]", "integer_pow[y=0]", "copy", "lgamma", "digamma"};
  static const char *const bin[] = {"add", "sub", "mul", "div", "rem", "pow", "max", "min",
    "atan2", "nextafter"};
  static const double v[] = {INFINITY, -INFINITY, 0.0, -0.0, NAN, -NAN, -1.0, 1.0, 2.0, -2.0,
                             0.5, -0.5, 1e30, -1e30, 3.0, -7.5};
  enum { NV = FT_COUNTOF(v), N = NV * NV };
  static const char *const dts[] = {"f32", "f64", "f16", "bf16"};
  static const ft_dtype dtv[] = {FT_F32, FT_F64, FT_F16, FT_BF16};
  for (int d = 0; d < 4; d++) {
    tb t = {0};
    char T[32], rhs[96];
    snprintf(T, sizeof T, "%s[%d]", dts[d], N);
    tb_put(&t, "{ lambda ; a:%s b:%s. let\n", T, T);
    for (size_t i = 0; i < FT_COUNTOF(un); i++) {
      snprintf(rhs, sizeof rhs, "%s a", un[i]);
      tb_eqn(&t, T, rhs);
    }
    for (size_t i = 0; i < FT_COUNTOF(bin); i++) {
      snprintf(rhs, sizeof rhs, "%s a b", bin[i]);
      tb_eqn(&t, T, rhs);
    }
    tb_put(&t, "  in (%s) }\n", t.outs);
    ft_jaxpr *j = parse_text(t.p);
    free(t.p);
    const int64_t dims[1] = {N};
    ft_array *in[2];
    for (int k = 0; k < 2; k++) {
      in[k] = ft_array_new(C, dtv[d], 1, dims);
      ck_assert_ptr_nonnull(in[k]);
      for (int i = 0; i < N; i++) {
        double x = k ? v[i % NV] : v[i / NV];
        if (dtv[d] == FT_F16 || dtv[d] == FT_BF16) { /* the sign of -NaN kept */
          uint16_t h = dtv[d] == FT_F16 ? ft_f64_to_f16(x) : ft_f64_to_bf16(x);
          ((uint16_t *)ft_array_data_mut(in[k]))[i] = h;
        } else {
          ft_set_f64(in[k], i, x);
        }
      }
    }
    bool strict = true;
    ck_assert_int_eq(jit_vs_interp(dts[d], j, 2, in, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_cache = true}, &strict), 0);
    ck_assert_msg(strict, "%s: NaN bits differ between the JIT and the interpreter", dts[d]);
    ft_array_free(in[0]), ft_array_free(in[1]);
    ft_jaxpr_free(j);
  }
}
END_TEST

/* Which NaN reduce_max/reduce_min return, when NaNs of several signs and
 * payloads meet: the JIT's lanes and tree and the interpreter's fold agree
 * bit for bit (an order-free rule: the greatest positive NaN, else the
 * negative NaN of greatest magnitude, else the extreme). 37 elements (two
 * lane blocks and a tail), 40 random mixes of +-NaN (payloads 0 and 1),
 * +-inf, +-0 and 1.0, every float dtype. */
START_TEST(nan_bits_maxmin_reductions) {
  static const char *const dts[] = {"f32", "f64", "f16", "bf16"};
  static const ft_dtype dtv[] = {FT_F32, FT_F64, FT_F16, FT_BF16};
  enum { N = 37 };
  const int64_t dims[1] = {N};
  uint64_t seed = 18;
  for (int d = 0; d < 4; d++) {
    char text[512];
    snprintf(text, sizeof text,
             "{ lambda ; a:%s[%d]. let b:%s[] = reduce_max[axes=(0,) out_sharding=None] a\n"
             "    c:%s[] = reduce_min[axes=(0,) out_sharding=None] a in (b, c) }",
             dts[d], N, dts[d], dts[d]);
    ft_jaxpr *j = parse_text(text);
    int w = ft_dtype_bits(dtv[d]);
    uint64_t sign = UINT64_C(1) << (w - 1);
    uint64_t qnan = w == 64 ? UINT64_C(0x7ff8000000000000) : w == 32 ? 0x7fc00000u : dtv[d] == FT_F16 ? 0x7e00 : 0x7fc0;
    uint64_t inf = w == 64 ? UINT64_C(0x7ff0000000000000) : w == 32 ? 0x7f800000u : dtv[d] == FT_F16 ? 0x7c00 : 0x7f80;
    uint64_t one = w == 64 ? UINT64_C(0x3ff0000000000000) : w == 32 ? 0x3f800000u : dtv[d] == FT_F16 ? 0x3c00 : 0x3f80;
    const uint64_t pick[8] = {qnan, qnan | sign, qnan | 1, qnan | 1 | sign, inf, inf | sign, sign, 0};
    for (int trial = 0; trial < 40; trial++) {
      ft_array *in = ft_array_new(C, dtv[d], 1, dims);
      ck_assert_ptr_nonnull(in);
      for (int i = 0; i < N; i++) {
        uint64_t r = jt_rng(&seed), v = r % 3 ? one : pick[(r >> 8) % 8];
        memcpy((char *)ft_array_data_mut(in) + (size_t)i * (size_t)(w / 8), &v, (size_t)(w / 8));
      }
      bool strict = true;
      ck_assert_int_eq(jit_vs_interp(dts[d], j, 1, &in, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_cache = true}, &strict), 0);
      ck_assert_msg(strict, "%s trial %d: NaN bits differ between the JIT and the interpreter", dts[d], trial);
      ft_array_free(in);
    }
    ft_jaxpr_free(j);
  }
  /* the rule itself, in the interpreter: +NaN (payload 1) over +NaN, -NaN, inf */
  const float xs[5] = {1.0f, -INFINITY, INFINITY, 2.0f, -1.0f};
  ft_array *in = ft_array_new(C, FT_F32, 1, (const int64_t[]){5});
  memcpy(ft_array_data_mut(in), xs, sizeof xs);
  uint32_t *u = ft_array_data_mut(in);
  u[0] = 0xffc00000u, u[3] = 0x7fc00001u, u[4] = 0x7fc00000u;
  ft_jaxpr *j = parse_text("{ lambda ; a:f32[5]. let b:f32[] = reduce_max[axes=(0,) out_sharding=None] a\n"
                           "    c:f32[] = reduce_min[axes=(0,) out_sharding=None] a in (b, c) }");
  ft_array *out[2] = {0};
  ck_assert_int_eq(ft_eval(C, j, 1, (const ft_array *const *)&in, 2, out), FT_OK);
  ck_assert_uint_eq(*(const uint32_t *)ft_array_data(out[0]), 0x7fc00001u);
  ck_assert_uint_eq(*(const uint32_t *)ft_array_data(out[1]), 0x7fc00001u);
  ft_array_free(out[0]), ft_array_free(out[1]), ft_array_free(in);
  ft_jaxpr_free(j);
}
END_TEST

/* Sums over more than two canonical blocks (4096) with a tail, strided
 * (axis 0) and contiguous (axis 1) runs, all axes, through views
 * (transpose, slice, rev, broadcast) and fused producers; f32, f64, i32. */
START_TEST(reductions_and_views) {
  static const char *const dts[] = {"f32", "f64", "i32"};
  for (int t = 0; t < 3; t++) {
    const char *d = dts[t];
    char text[4096];
    snprintf(text, sizeof text,
             "{ lambda ; a:%s[3,9001] b:%s[9001,3] c:%s[4,5,6]. let\n"
             "    e:%s[3] = reduce_sum[axes=(1,) out_sharding=None] a\n"
             "    f:%s[3] = reduce_sum[axes=(0,) out_sharding=None] b\n"
             "    g:%s[] = reduce_sum[axes=(0, 1) out_sharding=None] a\n"
             "    h:%s[3] = reduce_max[axes=(1,) out_sharding=None] a\n"
             "    i:%s[3] = reduce_min[axes=(0,) out_sharding=None] b\n"
             "    j:%s[6] = reduce_prod[axes=(0, 1) out_sharding=None] c\n"
             "    k:%s[4,6,5] = transpose[permutation=(0, 2, 1)] c\n"
             "    l:%s[4,6,5] = mul k k\n"
             "    m:%s[2,5,3] = slice[limit_indices=(4, 5, 6) start_indices=(0, 0, 0) strides=(2, 1, 2)] c\n"
             "    n:%s[2,5,3] = rev[dimensions=(1,)] m\n"
             "    o:%s[5] = reduce_sum[axes=(0, 2) out_sharding=None] n\n"
             "    p:%s[4,5,6] = add c c\n"
             "    q:%s[4,5] = reduce_sum[axes=(2,) out_sharding=None] p\n"
             "    r:%s[2,4,5] = broadcast_in_dim[broadcast_dimensions=(1, 2) shape=(2, 4, 5) sharding=None] q\n"
             "    s:%s[9001,3] = transpose[permutation=(1, 0)] a\n"
             "    u:%s[9001,3] = sub s b\n"
             "  in (e, f, g, h, i, j, l, n, o, r, u) }\n",
             d, d, d, d, d, d, d, d, d, d, d, d, d, d, d, d, d, d, d);
    ft_jaxpr *j = parse_text(text);
    ft_array *in[3];
    for (int k = 0; k < 3; k++) {
      ft_aval av;
      ft_jaxpr_input_aval(j, k, &av);
      in[k] = rand_array(av.dtype, &av, (uint64_t)(t * 10 + k));
      if (av.dtype != FT_I32) /* finite values: sums of mixed infinities are NaN either way */
        for (int64_t e = 0; e < ft_array_size(in[k]); e++)
          if (!isfinite(ft_get_f64(in[k], e))) ft_set_f64(in[k], e, 0.25);
    }
    bool strict = true;
    ft_jit_options o = {.size = sizeof(ft_jit_options), .no_cache = true};
    ck_assert_int_eq(jit_vs_interp(d, j, 3, in, &o, &strict), 0);
    ft_fn *fn = ft_jit(C, j, &o);
    ft_jit_stats s;
    ft_fn_stats(fn, &s);
    /* all compiled, views included, o too (reduced axes (0, 2) of a
     * strided view: not one arithmetic run) */
    ck_assert_int_eq(s.n_fallback, 0);
    ft_fn_free(fn);
    for (int k = 0; k < 3; k++) ft_array_free(in[k]);
    ft_jaxpr_free(j);
  }
}
END_TEST

/* Reductions fused with their elementwise producers (the producers are
 * recomputed inside the reduction kernel, in the canonical order), over
 * several non-adjacent axes of strided views, argmax/argmin, on f32, f64,
 * i32, u8 (argmax) and bool (reduce_or), sizes 0, 1, 16k+r and more than
 * two 4096-blocks; one module per dtype, compiled at opt_level 2 (small
 * kernels unoptimized) and 3 (vectorized). Every output bitwise equal to
 * the interpreter, and no fallback step. */
START_TEST(fused_reductions) {
  static const char *const dts[] = {"f32", "f64", "i32"};
  for (int t = 0; t < 3; t++) {
    const char *d = dts[t];
    bool fl = t < 2;
    char text[8192];
    snprintf(text, sizeof text,
             "{ lambda ; a:%s[3,9001] b:%s[4,5,6] c:%s[0,7] x:%s[37] y:%s[1] u:u8[6,33]. let\n"
             "    p:%s[3,9001] = mul a a\n"
             "    q:%s[3,9001] = %s p 1%s:%s[]\n"
             "    r:%s[3] = reduce_sum[axes=(1,) out_sharding=None] q\n"
             "    s:%s[9001,3] = transpose[permutation=(1, 0)] a\n"
             "    s2:%s[9001,3] = sub s 2%s:%s[]\n"
             "    s3:%s[3] = reduce_max[axes=(0,) out_sharding=None] s2\n"
             "    e:%s[4,5,6] = add b b\n"
             "    f:%s[5] = reduce_sum[axes=(0, 2) out_sharding=None] e\n"
             "    g:%s[6,5,4] = transpose[permutation=(2, 1, 0)] b\n"
             "    h:%s[5] = reduce_prod[axes=(0, 2) out_sharding=None] g\n"
             "    i:%s[6] = reduce_min[axes=(1, 2) out_sharding=None] g\n"
             "    j:i32[4,6] = argmax[axes=(1,) index_dtype=int32] b\n"
             "    k:i32[5,6] = argmin[axes=(0,) index_dtype=int32] b\n"
             "    l:%s[7] = reduce_sum[axes=(0,) out_sharding=None] c\n"
             "    m:%s[0] = reduce_max[axes=(1,) out_sharding=None] c\n"
             "    n:%s[] = reduce_sum[axes=(0,) out_sharding=None] x\n"
             "    o:%s[] = reduce_sum[axes=(0,) out_sharding=None] y\n"
             "    x2:%s[37] = mul x x\n"
             "    v:%s[] = reduce_sum[axes=(0,) out_sharding=None] x2\n"
             "    w:i64[33] = argmax[axes=(0,) index_dtype=int64] u\n"
             "    z:i32[] = argmin[axes=(0,) index_dtype=int32] x\n"
             "    bb:bool[4,5,6] = gt b 0%s:%s[]\n"
             "    cc:bool[5] = reduce_or[axes=(0, 2)] bb\n"
             "  in (r, s3, f, h, i, j, k, l, m, n, o, v, w, z, cc) }\n",
             d, d, d, d, d, d, d, fl ? "add" : "max", fl ? ".0" : "", d, d, d, d, fl ? ".0" : "", d, d, d,
             d, d, d, d, d, d, d, d, d, d, fl ? ".0" : "", d);
    ft_jaxpr *j = parse_text(text);
    ft_array *in[6];
    for (int k = 0; k < 6; k++) {
      ft_aval av;
      ft_jaxpr_input_aval(j, k, &av);
      in[k] = rand_array(av.dtype, &av, (uint64_t)(t * 10 + k + 100));
      if (fl) /* finite values: sums of mixed infinities are NaN either way */
        for (int64_t e = 0; e < ft_array_size(in[k]) && av.dtype != FT_U8; e++)
          if (!isfinite(ft_get_f64(in[k], e)) && e % 7) ft_set_f64(in[k], e, 0.25);
    }
    for (int lvl = 2; lvl <= 3; lvl++) {
      bool strict = true;
      ft_jit_options o = {.size = sizeof(ft_jit_options), .no_cache = true, .opt_level = lvl};
      ck_assert_int_eq(jit_vs_interp(d, j, 6, in, &o, &strict), 0);
      ft_fn *fn = ft_jit(C, j, &o);
      ft_jit_stats s;
      ft_fn_stats(fn, &s);
      ck_assert_int_eq(s.n_fallback, 0);
      if (lvl == 2) {
        /* mul, add/max fused into r's reduction: no loop kernel stores p or q */
        char *plan = ft_fn_plan(fn);
        ck_assert_ptr_null(strstr(plan, "fused: mul#0"));
        ft_free(plan);
      }
      ft_fn_free(fn);
    }
    for (int k = 0; k < 6; k++) ft_array_free(in[k]);
    ft_jaxpr_free(j);
  }
}
END_TEST

/* Sums and products over a leading axis whose innermost kept axis is
 * contiguous and a multiple of 16 long (bias gradients) run 16 outputs at
 * a time (codegen.c's reduce16), the others one by one: the canonical
 * order of every output either way. Reduced lengths 2 .. 8200 (one and
 * three blocks of 4096), kept rows of 16 .. 512, two kept axes, two reduced
 * axes, a fused producer with a broadcast operand, a row length that is
 * not a multiple of 16 (one by one), f32 and f64, opt levels 2 and 3, the
 * executor's chunks on two threads (starts that are not multiples of 16).
 * Bitwise against the interpreter. */
START_TEST(column_sums) {
  static const char *const dts[] = {"f32", "f64"};
  static const int64_t shapes[][2] = {{2, 16}, {17, 32}, {128, 512}, {4097, 48}, {8200, 16}, {3, 20}, {33, 40}};
  for (int t = 0; t < 2; t++)
    for (size_t si = 0; si < FT_COUNTOF(shapes); si++) {
      const char *d = dts[t];
      long long R = (long long)shapes[si][0], D = (long long)shapes[si][1];
      char text[4096];
      snprintf(text, sizeof text,
               "{ lambda ; a:%s[%lld,%lld] b:%s[%lld] c:%s[2,%lld,3,%lld]. let\n"
               "    s:%s[%lld] = reduce_sum[axes=(0,) out_sharding=None] a\n"
               "    m:%s[%lld,%lld] = mul a a\n"
               "    bb:%s[%lld,%lld] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(%lld, %lld) sharding=None] b\n"
               "    e:%s[%lld,%lld] = add m bb\n"
               "    p:%s[%lld] = reduce_sum[axes=(0,) out_sharding=None] e\n"
               "    q:%s[%lld] = reduce_prod[axes=(0,) out_sharding=None] a\n"
               "    u:%s[3,%lld] = reduce_sum[axes=(0, 1) out_sharding=None] c\n"
               "  in (s, p, q, u) }\n",
               d, R, D, d, D, d, R, D, d, D, d, R, D, d, R, D, R, D, d, R, D, d, D, d, D, d, D);
      ft_jaxpr *j = parse_text(text);
      for (int fill = 0; fill < 2; fill++) {
        ft_array *in[3];
        for (int k = 0; k < 3; k++) {
          ft_aval av;
          ft_jaxpr_input_aval(j, k, &av);
          in[k] = rand_array(av.dtype, &av, (uint64_t)(t * 1000 + (int)si * 100 + fill * 10 + k));
          /* fill 1: values near 1 (products stay finite), signed zeros */
          int64_t n = ft_array_size(in[k]);
          for (int64_t e = 0; fill == 1 && e < n; e++)
            ft_set_f64(in[k], e, e % 7 == 3 ? (e % 2 ? -0.0 : 0.0) : 1.0 + ft_get_f64(in[k], e) * 1e-3);
        }
        for (int lvl = 2; lvl <= 3; lvl++) {
          char name[96];
          snprintf(name, sizeof name, "column %s[%lld,%lld] fill %d O%d", d, R, D, fill, lvl);
          bool strict = true;
          ft_jit_options o = {.size = sizeof(ft_jit_options), .no_cache = true, .opt_level = lvl};
          ck_assert_int_eq(jit_vs_interp(name, j, 3, in, &o, &strict), 0);
        }
        for (int k = 0; k < 3; k++) ft_array_free(in[k]);
      }
      ft_jaxpr_free(j);
    }
  /* a [128,512] column sum runs contiguous vector loads, no gathers, in its
   * 16-output body (the one-by-one head and tail may keep them) */
  ft_jaxpr *j = parse_text("{ lambda ; a:f32[128,512]. let\n"
                           "    s:f32[512] = reduce_sum[axes=(0,) out_sharding=None] a\n  in (s,) }\n");
  char *ir = jt_emit(j, FT_EMIT_LLVM);
  ck_assert_msg(strstr(ir, "load <16 x float>") || strstr(ir, "load <8 x float>"), "no vector load");
  free(ir);
  ft_jaxpr_free(j);
}
END_TEST

/* Float reduce_max/reduce_min and argmax/argmin run 16 lanes then a lane
 * tree (n >= 16): the same value (NaN wins, -0 < +0) and the same index
 * (first extreme, first NaN) as the interpreter's sequential scan. Lengths
 * 0, 1, 15, 16, 17, 4097, 65541; NaN at the first, a middle, lane-boundary and the
 * last positions; -0/+0 mixes; +-inf; contiguous rows, strided columns and
 * a fused producer; opt_level 2 and 3. jt_same compares any two NaNs as
 * equal (NaN payloads are outside the contract, docs/determinism.md §1). */
START_TEST(maxmin_lanes) {
  static const char *const dts[] = {"f32", "f64"};
  /* 65541: a split reduction of 17 block partials, whose fold runs 16
   * lanes too */
  static const int64_t lens[] = {0, 1, 15, 16, 17, 4097, 65541};
  for (int t = 0; t < 2; t++)
    for (size_t li = 0; li < FT_COUNTOF(lens); li++) {
      const char *d = dts[t];
      long long L = (long long)lens[li];
      char text[4096];
      int w = snprintf(text, sizeof text,
                       "{ lambda ; a:%s[%lld] b:%s[3,%lld]. let\n"
                       "    c:%s[] = reduce_max[axes=(0,) out_sharding=None] a\n"
                       "    e:%s[] = reduce_min[axes=(0,) out_sharding=None] a\n"
                       "    f:%s[3] = reduce_max[axes=(1,) out_sharding=None] b\n"
                       "    g:%s[3] = reduce_min[axes=(1,) out_sharding=None] b\n"
                       "    h:%s[%lld,3] = transpose[permutation=(1, 0)] b\n"
                       "    i:%s[3] = reduce_max[axes=(0,) out_sharding=None] h\n"
                       "    k:%s[%lld] = neg a\n"
                       "    m:%s[] = reduce_min[axes=(0,) out_sharding=None] k\n",
                       d, L, d, L, d, d, d, d, d, L, d, d, L, d);
      if (L > 0)
        snprintf(text + w, sizeof text - (size_t)w,
                 "    n:i32[] = argmax[axes=(0,) index_dtype=int32] a\n"
                 "    o:i32[] = argmin[axes=(0,) index_dtype=int32] a\n"
                 "    p:i32[3] = argmax[axes=(1,) index_dtype=int32] b\n"
                 "    q:i32[3] = argmin[axes=(0,) index_dtype=int32] h\n"
                 "    r:i64[] = argmax[axes=(0,) index_dtype=int64] k\n"
                 "  in (c, e, f, g, i, m, n, o, p, q, r) }\n");
      else
        snprintf(text + w, sizeof text - (size_t)w, "  in (c, e, f, g, i, m) }\n");
      ft_jaxpr *j = parse_text(text);
      for (int fill = 0; fill < 8; fill++) {
        ft_array *in[2];
        for (int k = 0; k < 2; k++) {
          ft_aval av;
          ft_jaxpr_input_aval(j, k, &av);
          in[k] = rand_array(av.dtype, &av, (uint64_t)(t * 1000 + (int)li * 100 + fill * 10 + k));
          int64_t n = ft_array_size(in[k]);
          for (int64_t e = 0; fill > 0 && e < n; e++) { /* fill 0: jt_fill, specials included */
            double v = ft_get_f64(in[k], e);
            if (!isfinite(v)) v = (double)(e % 5) - 2.0;
            int64_t col = e % (L > 0 ? L : 1);
            if (fill == 1 && (col == 0 || col == L - 1)) v = NAN;
            if (fill == 2 && (col == L / 2 || col == 16 || col == 31)) v = col == 16 ? -NAN : NAN;
            if (fill == 3) v = e % 3 ? 0.0 : -0.0; /* all zeros: the sign decides */
            if (fill == 4) v = e % 4 ? -0.0 : 0.0;
            if (fill == 5) v = (e * 7) % 3 == 0 ? INFINITY : (e * 5) % 3 == 1 ? -INFINITY : v;
            if (fill == 6) v = e == n - 1 ? NAN : (e % 17 == 3 ? 1e30 : v); /* ties of the extreme */
            if (fill == 7) v = e % 2 ? -INFINITY : INFINITY;
            ft_set_f64(in[k], e, v);
          }
        }
        for (int lvl = 2; lvl <= 3; lvl++) {
          char name[64];
          snprintf(name, sizeof name, "maxmin %s[%lld] fill %d O%d", d, L, fill, lvl);
          bool strict = true;
          ft_jit_options o = {.size = sizeof(ft_jit_options), .no_cache = true, .opt_level = lvl};
          ck_assert_int_eq(jit_vs_interp(name, j, 2, in, &o, &strict), 0);
        }
        for (int k = 0; k < 2; k++) ft_array_free(in[k]);
      }
      ft_jaxpr_free(j);
    }
  /* the optimized IR of a large f32 reduce_max and argmax has vector max / compares */
  static const char *const vt[] = {
      "{ lambda ; x:f32[5000]. let y:f32[] = reduce_max[axes=(0,) out_sharding=None] x in (y,) }\n",
      "{ lambda ; x:f32[5000]. let y:i32[] = argmax[axes=(0,) index_dtype=int32] x in (y,) }\n"};
  for (int v = 0; v < 2; v++) {
    ft_jaxpr *j = parse_text(vt[v]);
    char *ir = jt_emit(j, FT_EMIT_LLVM);
    if (v == 0) /* reduce_max keeps integer max/min of order keys (lane_maxmin) */
      ck_assert_msg(strstr(ir, "@llvm.smax.v16i32") || strstr(ir, "icmp sgt <16 x i32>") ||
                        strstr(ir, "@llvm.smax.v8i32") || strstr(ir, "icmp sgt <8 x i32>"),
                    "the max reduction did not vectorize");
    else
      ck_assert_msg(strstr(ir, "fcmp ogt <16 x float>") || strstr(ir, "fcmp ogt <8 x float>"),
                    "the argmax reduction did not vectorize");
    free(ir);
    ft_jaxpr_free(j);
  }
}
END_TEST

/* Reductions with few long outputs (at most 16, at least 4 blocks of 4096)
 * run as two kernels (docs/jit.md): block partials, which the executor
 * shares among threads, then a left-to-right fold of each output's
 * partials. Sums and products keep the canonical order's bits, max/min
 * their exact value: f32 and f64; lengths of exactly 4 blocks, 4 blocks and
 * one element (a last block of one value), and a 15-value tail; one output,
 * 3 contiguous rows, 3 strided columns, a fused producer; random values
 * with specials, finite values, all -0.0, a NaN last; 1, 2 and 3 threads.
 * The plan shows the partials kernel (n/4096 outputs of 4096 elements). */
START_TEST(split_reductions) {
  static const char *const dts[] = {"f32", "f64"};
  static const int64_t lens[] = {16384, 16385, 20479};
  for (int t = 0; t < 2; t++)
    for (size_t li = 0; li < FT_COUNTOF(lens); li++) {
      const char *d = dts[t];
      long long L = (long long)lens[li];
      char text[4096];
      snprintf(text, sizeof text,
               "{ lambda ; a:%s[%lld] b:%s[3,%lld] c:%s[%lld]. let\n"
               "    s:%s[] = reduce_sum[axes=(0,) out_sharding=None] a\n"
               "    p:%s[] = reduce_prod[axes=(0,) out_sharding=None] c\n"
               "    mx:%s[] = reduce_max[axes=(0,) out_sharding=None] a\n"
               "    mn:%s[] = reduce_min[axes=(0,) out_sharding=None] a\n"
               "    r:%s[3] = reduce_sum[axes=(1,) out_sharding=None] b\n"
               "    h:%s[%lld,3] = transpose[permutation=(1, 0)] b\n"
               "    q:%s[3] = reduce_sum[axes=(0,) out_sharding=None] h\n"
               "    m2:%s[3] = reduce_max[axes=(0,) out_sharding=None] h\n"
               "    k:%s[%lld] = mul a a\n"
               "    f:%s[] = reduce_sum[axes=(0,) out_sharding=None] k\n"
               "  in (s, p, mx, mn, r, q, m2, f) }\n",
               d, L, d, L, d, L, d, d, d, d, d, d, L, d, d, d, L, d);
      ft_jaxpr *j = parse_text(text);
      for (int fill = 0; fill < 4; fill++) {
        ft_array *in[3];
        for (int k = 0; k < 3; k++) {
          ft_aval av;
          ft_jaxpr_input_aval(j, k, &av);
          in[k] = rand_array(av.dtype, &av, (uint64_t)(t * 1000 + (int)li * 100 + fill * 10 + k));
          int64_t n = ft_array_size(in[k]);
          for (int64_t e = 0; e < n; e++) {
            double v = ft_get_f64(in[k], e);
            if (fill == 1 && !isfinite(v)) v = (double)(e % 5) - 2.0;
            if (fill == 2) v = -0.0;
            if (fill == 3 && e == n - 1) v = NAN;
            if (k == 2 && fill != 2) v = 1.0 + (double)((e * 37) % 101 - 50) * 1e-4; /* products near 1 */
            ft_set_f64(in[k], e, v);
          }
        }
        for (int threads = 1; threads <= 3; threads++) {
          ft_ctx *outer = C;
          ft_ctx_options co = {.size = sizeof(ft_ctx_options), .num_threads = threads};
          C = ft_ctx_new(&co);
          char name[64];
          snprintf(name, sizeof name, "split %s[%lld] fill %d threads %d", d, L, fill, threads);
          bool strict = true;
          ft_jit_options o = {.size = sizeof(ft_jit_options), .no_cache = true, .opt_level = 3};
          ck_assert_int_eq(jit_vs_interp(name, j, 3, in, &o, &strict), 0);
          if (fill == 0 && threads == 1) {
            ft_fn *fn = ft_jit(C, j, &o);
            ck_assert_ptr_nonnull(fn);
            char *plan = ft_fn_plan(fn), want[64];
            snprintf(want, sizeof want, "%lld outputs x 4096 elements", (L + 4095) / 4096);
            ck_assert_msg(strstr(plan, want), "no partials kernel in the plan:\n%s", plan);
            ft_free(plan);
            ft_fn_free(fn);
          }
          ft_ctx_free(C);
          C = outer;
        }
        for (int k = 0; k < 3; k++) ft_array_free(in[k]);
      }
      ft_jaxpr_free(j);
    }
}
END_TEST

/* Control flow runs as compiled sub-programs: every golden cond / while /
 * scan / jit / custom_jvp_call program plans with no fallback step at any
 * depth (golden_jit_equals_interp checks the bits). */
START_TEST(control_flow_compiles) {
  static const char *const names[] = {"cond_binary", "cond_multi_output_consts", "cond_switch3",
    "fori_loop_dynamic", "fori_loop_static", "grad_rnn_scan", "jit_big_hoisted", "nested_jit",
    "jvp_newton_while", "newton_while", "rnn_scan", "scan_cumsum", "scan_no_xs_length",
    "scan_reverse_unroll", "while_loop_collatz", "while_loop_consts", "custom_jvp_relu",
    "custom_vjp_user"};
  for (size_t t = 0; t < FT_COUNTOF(names); t++) {
    ft_array *in[16];
    int n_in;
    ft_jaxpr *j = load_golden(names[t], in, &n_in);
    ft_jit_options o = {.size = sizeof(ft_jit_options), .no_cache = true};
    ft_fn *fn = ft_jit(C, j, &o);
    ck_assert_msg(fn != NULL, "%s: %s", names[t], ft_ctx_error(C));
    ft_jit_stats s;
    ft_fn_stats(fn, &s);
    char *plan = ft_fn_plan(fn);
    ck_assert_msg(s.n_fallback == 0, "%s:\n%s", names[t], plan);
    ck_assert_msg(strstr(plan, "control ") != NULL, "%s:\n%s", names[t], plan);
    ft_free(plan);
    ft_fn_free(fn);
    for (int k = 0; k < n_in; k++) ft_array_free(in[k]);
    ft_jaxpr_free(j);
  }
}
END_TEST

/* JAX 0.10.2's vmap of a while_loop with per-lane trip counts (verbatim):
 * cond_jaxpr returns bool[3]; the loop runs while any lane is true and a
 * finished lane keeps its carry (rows of the f32[3,2] carry). Both engines
 * give JAX's values, and the JIT compiles the loop (no fallback). */
START_TEST(while_batched_predicate) {
  static const char text[] =
      "{ lambda ; a:f32[3,2]. let\n"
      "    b:i32[3] = broadcast_in_dim 0:i32[]\n"
      "    c:i32[3] d:f32[3,2] = while[\n"
      "      body_jaxpr={ lambda ; e:i32[3] f:f32[3,2]. let\n"
      "          g:i32[3] = add e 1:i32[]\n"
      "          h:f32[3,2] = mul f 2.0:f32[]\n"
      "        in (g, h) }\n"
      "      body_nconsts=0\n"
      "      cond_jaxpr={ lambda ; i:i32[3] j:f32[3,2]. let\n"
      "          k:f32[3,1] = slice[limit_indices=(3, 1) start_indices=(0, 0) strides=None] j\n"
      "          l:f32[3] = squeeze[dimensions=(1,)] k\n"
      "          m:bool[3] = lt l 10.0:f32[]\n"
      "        in (m,) }\n"
      "      cond_nconsts=0\n"
      "    ] b a\n"
      "  in (c, d) }\n";
  ft_jaxpr *j = parse_text(text);
  float xv[6] = {1.0f, 0.5f, 3.0f, 1.0f, 20.0f, 5.0f};
  int32_t want_c[3] = {4, 2, 0};
  float want_d[6] = {16.0f, 8.0f, 12.0f, 4.0f, 20.0f, 5.0f};
  ft_array *x = ft_array_from_data(C, FT_F32, 2, (int64_t[]){3, 2}, xv);
  ft_array *o[2] = {NULL, NULL};
  ck_assert_int_eq(ft_eval(C, j, 1, (const ft_array *const *)&x, 2, o), FT_OK);
  ck_assert_mem_eq(ft_array_data(o[0]), want_c, sizeof want_c);
  ck_assert_mem_eq(ft_array_data(o[1]), want_d, sizeof want_d);
  ft_array_free(o[0]), ft_array_free(o[1]);
  ft_jit_options opt = {.size = sizeof(ft_jit_options), .no_cache = true};
  ft_fn *fn = ft_jit(C, j, &opt);
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(C));
  ft_jit_stats st;
  ft_fn_stats(fn, &st);
  ck_assert_int_eq(st.n_fallback, 0);
  o[0] = o[1] = NULL;
  ck_assert_int_eq(ft_call(fn, 1, (const ft_array *const *)&x, 2, o), FT_OK);
  ck_assert_mem_eq(ft_array_data(o[0]), want_c, sizeof want_c);
  ck_assert_mem_eq(ft_array_data(o[1]), want_d, sizeof want_d);
  ft_array_free(o[0]), ft_array_free(o[1]), ft_array_free(x);
  ft_fn_free(fn);
  ft_jaxpr_free(j);
}
END_TEST

/* The coverage matrix's view of the JIT. */
START_TEST(rule_status) {
  ck_assert_ptr_null(ft_lower_rule_status(FT_P_TANH));
  ck_assert_ptr_null(ft_lower_rule_status(FT_P_ARGMAX));
  ck_assert_ptr_null(ft_lower_rule_status(FT_P_WHILE));
  ck_assert_ptr_null(ft_lower_rule_status(FT_P_DOT_GENERAL));
  ck_assert_ptr_null(ft_lower_rule_status(FT_P_SORT)); /* a routine step (routines.c) */
  ck_assert_ptr_null(ft_lower_rule_status(FT_P_EMPTY2));      /* a routine step (zeros) */
  /* what remains an interpreter step says so */
  for (int p = 0; p < FT_NUM_PRIMS; p++) {
    const char *w = ft_lower_rule_status((ft_prim)p);
    if (w && strncmp(w, "n/a: ", 5))
      ck_assert_msg(!strncmp(w, "unsupported: runs as an interpreter step: ", 42), "%s", w);
  }
}
END_TEST

/* The fused chain of the benchmark compiles to one kernel whose loop is
 * vectorized (AVX-512: <16 x float>; AVX2: <8 x float>), with the math
 * inlined (no call left). The math library's own fused multiply-adds
 * (written out as fma in its source: correctly rounded, the same bits in
 * the library) are there; contraction of the user's a*b + c never is
 * (user_arithmetic_not_contracted). */
START_TEST(elementwise_kernel_vectorizes) {
  const char *text = "{ lambda ; x:f32[5000]. let\n"
                     "    a:f32[5000] = tanh x\n    b:f32[5000] = logistic x\n"
                     "    c:f32[5000] = mul a b\n    d:f32[5000] = mul x x\n"
                     "    e:f32[5000] = add c d\n  in (e,) }\n";
  ft_jaxpr *j = parse_text(text);
  char *plan = jt_emit(j, FT_EMIT_PLAN);
  ck_assert_ptr_nonnull(strstr(plan, "1 compiled kernels, 0 GEMM, 0 fallback"));
  free(plan);
  char *ir = jt_emit(j, FT_EMIT_LLVM);
  ck_assert_msg(strstr(ir, "<16 x float>") || strstr(ir, "<8 x float>"), "the loop did not vectorize");
  ck_assert_ptr_null(strstr(ir, "call float @ft_vm_"));
  ck_assert_ptr_null(strstr(ir, "fmuladd"));
  ck_assert_ptr_null(strstr(ir, " contract "));
  ck_assert_ptr_nonnull(strstr(ir, "llvm.fma.v"));
  /* tanh and logistic share one core (vm_f32.c), merged by the optimizer:
   * the core's reduction, whose constant is -1/ln2 as a float, appears once
   * for every two divisions (tanh's and logistic's), in the vector body,
   * the vector epilogue and the scalar remainder alike. */
  int n_core = 0, n_div = 0;
  for (const char *l = ir; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    const char *e = strchr(l, '\n');
    size_t len = e ? (size_t)(e - l) : strlen(l);
    char line[4096];
    if (len >= sizeof line) len = sizeof line - 1;
    memcpy(line, l, len);
    line[len] = 0;
    n_core += strstr(line, "0xBFF7154760000000") != NULL;
    n_div += strstr(line, " fdiv ") != NULL;
  }
  ck_assert_int_gt(n_div, 0);
  ck_assert_int_eq(2 * n_core, n_div);
  free(ir);
  ft_jaxpr_free(j);
}
END_TEST

/* The exact tier never fuses a user's multiply and add: x*y + z, x*y - z
 * and z + x*y stay a rounded product and a rounded sum, in f32 and f64,
 * vectorized or not. */
START_TEST(user_arithmetic_not_contracted) {
  const char *dts[2] = {"f32", "f64"};
  for (int d = 0; d < 2; d++) {
    char text[512];
    snprintf(text, sizeof text,
             "{ lambda ; x:%s[4099] y:%s[4099] z:%s[4099]. let\n"
             "    p:%s[4099] = mul x y\n    a:%s[4099] = add p z\n"
             "    b:%s[4099] = sub p z\n    c:%s[4099] = add z p\n  in (a, b, c) }\n",
             dts[d], dts[d], dts[d], dts[d], dts[d], dts[d], dts[d]);
    ft_jaxpr *j = parse_text(text);
    char *ir = jt_emit(j, FT_EMIT_LLVM);
    ck_assert_ptr_nonnull(strstr(ir, "fmul"));
    ck_assert_ptr_null(strstr(ir, "llvm.fma"));
    ck_assert_ptr_null(strstr(ir, "fmuladd"));
    ck_assert_ptr_null(strstr(ir, " contract "));
    free(ir);
    ft_jaxpr_free(j);
  }
}
END_TEST

/* ---------------------------------------------------------------- cache */
static ft_fn *jit_with(ft_jaxpr *j, const char *dir, ft_jit_stats *s) {
  ft_jit_options o = {.size = sizeof(ft_jit_options), .cache_dir = dir};
  ft_fn *fn = ft_jit(C, j, &o);
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(C));
  ft_fn_stats(fn, s);
  return fn;
}

static void check_runs(ft_fn *fn, ft_jaxpr *j) {
  ft_array *in[1];
  ft_aval av;
  ft_jaxpr_input_aval(j, 0, &av);
  in[0] = rand_array(FT_F32, &av, 7);
  ft_array *want[1], *got[1];
  ck_assert_int_eq(ft_eval(C, j, 1, (const ft_array *const *)in, 1, want), FT_OK);
  ck_assert_int_eq(ft_call(fn, 1, (const ft_array *const *)in, 1, got), FT_OK);
  ck_assert(jt_same(got[0], want[0], NULL, NULL));
  ft_array_free(in[0]), ft_array_free(want[0]), ft_array_free(got[0]);
}

START_TEST(compile_cache) {
  char dir[] = "/tmp/ft_jit_cache_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  /* a program no other test compiles (its own cache key) */
  char text[512];
  snprintf(text, sizeof text, "{ lambda ; x:f32[77]. let\n    a:f32[77] = exp x\n"
           "    b:f32[77] = mul a %d.0:f32[]\n  in (b,) }\n", (int)getpid() % 1000 + 3);
  ft_jaxpr *j = parse_text(text);
  ft_jit_stats s;
  ft_jit_cache_clear();
  ft_fn *f1 = jit_with(j, dir, &s);
  ck_assert(!s.mem_hit && !s.disk_hit);
  check_runs(f1, j);
  /* the same program again, renamed: an in-memory hit */
  ft_fn *f2 = jit_with(j, dir, &s);
  ck_assert(s.mem_hit);
  check_runs(f2, j);
  ft_fn_free(f1);
  ft_fn_free(f2);
  /* as a new process would: the memory cache empty, the disk cache warm */
  ft_jit_cache_clear();
  ft_fn *f3 = jit_with(j, dir, &s);
  ck_assert(s.disk_hit && !s.mem_hit && !s.disk_corrupt);
  check_runs(f3, j);
  ft_fn_free(f3);
  /* corrupt the object (one flipped byte in the middle): detected, rebuilt */
  DIR *d = opendir(dir);
  struct dirent *de;
  char path[4200] = "";
  while ((de = readdir(d)))
    if (strstr(de->d_name, ".ftobj")) snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
  closedir(d);
  ck_assert(path[0]);
  FILE *f = fopen(path, "r+b");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, n / 2, SEEK_SET);
  int c = fgetc(f);
  fseek(f, n / 2, SEEK_SET);
  fputc(c ^ 0x5a, f);
  fclose(f);
  ft_jit_cache_clear();
  ft_fn *f4 = jit_with(j, dir, &s);
  ck_assert(s.disk_corrupt && !s.disk_hit);
  check_runs(f4, j);
  ft_fn_free(f4);
  /* the rebuilt entry is good again; a truncated one is detected too */
  ft_jit_cache_clear();
  ft_fn *f5 = jit_with(j, dir, &s);
  ck_assert(s.disk_hit);
  ft_fn_free(f5);
  ck_assert_int_eq(truncate(path, 100), 0);
  ft_jit_cache_clear();
  ft_fn *f6 = jit_with(j, dir, &s);
  ck_assert(s.disk_corrupt && !s.disk_hit);
  check_runs(f6, j);
  ft_fn_free(f6);
  ft_jit_cache_clear();
  unlink(path);
  rmdir(dir);
  ft_jaxpr_free(j);
}
END_TEST

/* ft_call_into writes caller-provided outputs; bad arguments are errors. */
START_TEST(call_into_and_errors) {
  ft_jaxpr *j = parse_text("{ lambda ; x:f32[]. let\n    a:f32[] = mul x 2.0:f32[]\n"
                           "    b:f32[] = add a 1.0:f32[]\n  in (b, x, 3.0:f32[]) }\n");
  ft_fn *fn = ft_jit(C, j, NULL);
  ck_assert_ptr_nonnull(fn);
  float xv = 1.5f;
  ft_array *x = ft_array_from_data(C, FT_F32, 0, NULL, &xv);
  ft_array *o[3] = {ft_array_new(C, FT_F32, 0, NULL), ft_array_new(C, FT_F32, 0, NULL),
                    ft_array_new(C, FT_F32, 0, NULL)};
  ck_assert_int_eq(ft_call_into(fn, 1, (const ft_array *const *)&x, 3, o), FT_OK);
  ck_assert(*(const float *)ft_array_data(o[0]) == 4.0f);
  ck_assert(*(const float *)ft_array_data(o[1]) == 1.5f);
  ck_assert(*(const float *)ft_array_data(o[2]) == 3.0f);
  ck_assert_int_eq(ft_call_into(fn, 0, NULL, 3, o), FT_ERR_INVALID_ARG);
  ft_array *wrong = ft_array_new(C, FT_F64, 0, NULL);
  ck_assert_int_eq(ft_call_into(fn, 1, (const ft_array *const *)&wrong, 3, o), FT_ERR_TYPE);
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "input 0"));
  ft_array_free(wrong);
  for (int k = 0; k < 3; k++) ft_array_free(o[k]);
  ft_array_free(x);
  ft_fn_free(fn);
  ft_jaxpr_free(j);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("jit");
  TCase *t = tcase_create("jit");
  tcase_add_checked_fixture(t, jt_setup, jt_teardown);
  tcase_set_timeout(t, 900);
  tcase_add_test(t, mlp_loss_and_grad);
  tcase_add_loop_test(t, elementwise_all_dtypes, 0, (int)FT_COUNTOF(NATIVE));
  tcase_add_test(t, reductions_and_views);
  tcase_add_test(t, int_reductions_wrap);
  tcase_add_test(t, nan_bits_elementwise);
  tcase_add_test(t, nan_bits_maxmin_reductions);
  tcase_add_test(t, fused_reductions);
  tcase_add_test(t, maxmin_lanes);
  tcase_add_test(t, column_sums);
  tcase_add_test(t, split_reductions);
  tcase_add_test(t, control_flow_compiles);
  tcase_add_test(t, while_batched_predicate);
  tcase_add_test(t, rule_status);
  tcase_add_test(t, elementwise_kernel_vectorizes);
  tcase_add_test(t, user_arithmetic_not_contracted);
  tcase_add_test(t, compile_cache);
  tcase_add_test(t, call_into_and_errors);
  tcase_add_test(t, golden_jit_equals_interp);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
