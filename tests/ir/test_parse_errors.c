/* tests/ir/test_parse_errors.c: malformed jaxpr text. Each case names the
 * status, a key fragment of the message and the line:col it points at; the
 * message must also show the offending line and a caret. Then a fuzz loop of
 * truncations and byte flips of the golden files: no crash, no leak (the
 * suite runs under ASan+UBSan too). */
#include <check.h>
#include <float.h>
#include <math.h>

#include "ir/ir.h"
#include "text_util.h"

#define HDR "{ lambda ; a:f32[3] n:i32[]. let\n"
#define END "\n  in (b,) }"

typedef struct bad_case {
  const char *text;
  ft_status st;
  const char *fragment;
  const char *where;    /* "line:col" */
} bad_case;

static const bad_case bad[] = {
    {"", FT_ERR_PARSE, "empty input", "1:1"},
    {"  \n  ", FT_ERR_PARSE, "expected '{' to start a jaxpr, found the end", "2:3"},
    {"\x01\x02\xff garbage", FT_ERR_PARSE, "control character 0x01 is not allowed", "1:1"},
    {"\xff\xfe garbage", FT_ERR_PARSE, "expected '{' to start a jaxpr", "1:1"},
    {HDR "    b:f32[3] = foo a" END, FT_ERR_PARSE, "unknown primitive 'foo'", "2:16"},
    {HDR "    b:f32[3] = add a" END, FT_ERR_PARSE, "primitive 'add' takes 2 operands, got 1", "2:16"},
    {HDR "    b:f32[3] c:f32[3] = neg a" END, FT_ERR_PARSE, "primitive 'neg' has 1 result, got 2", "2:25"},
    {HDR "    b:f32[3] = neg z" END, FT_ERR_PARSE, "undefined variable 'z'", "2:20"},
    {HDR "    a:f32[3] = neg a" END, FT_ERR_PARSE, "variable 'a' is already defined (at line 1, column 12)", "2:5"},
    {HDR "    b:f32[3] = neg c\n    c:f32[3] = neg a" END, FT_ERR_PARSE, "undefined variable 'c'", "2:20"},
    {"{ lambda ; a:f32[3. let in (a,) }", FT_ERR_PARSE, "expected ',' or ']' in the shape", "1:19"},
    {"{ lambda ; a:f33[3]. let in (a,) }", FT_ERR_PARSE, "unknown dtype 'f33'", "1:14"},
    {"{ lambda ; a:f32[-1]. let in (a,) }", FT_ERR_PARSE, "expected a dimension", "1:18"},
    {"{ lambda ; a f32[3]. let in (a,) }", FT_ERR_PARSE, "expected ':' after variable name", "1:13"},
    {"{ lambda ; a:f32[1,1,1,1,1,1,1,1,1]. let in (a,) }", FT_ERR_PARSE, "rank exceeds the maximum of 8", "1:34"},
    /* element counts: each dim fits int64, their product must stay under 2^56 */
    {"{ lambda ; a:f32[4611686018427387904,4]. let in (a,) }", FT_ERR_PARSE,
     "shape f32[4611686018427387904,4] has more than 2^56 elements", "1:14"},
    {"{ lambda ; a:f32[72057594037927937]. let in (a,) }", FT_ERR_PARSE,
     "shape f32[72057594037927937] has more than 2^56 elements", "1:14"},
    {"{ lambda ; a:i8[0,4294967296,4294967296]. let in (a,) }", FT_ERR_PARSE,
     "shape i8[0,4294967296,4294967296] has more than 2^56 elements", "1:14"},
    {HDR "    b:f32[268435456,268435456,2] = broadcast_in_dim[broadcast_dimensions=() shape=(268435456, 268435456, 2) sharding=None] 1.0:f32[]" END,
     FT_ERR_PARSE, "shape f32[268435456,268435456,2] has more than 2^56 elements", "2:7"},
    {HDR "    b:f32[3] = add a 1.0:f32[4611686018427387904,4]" END, FT_ERR_PARSE,
     "shape f32[4611686018427387904,4] has more than 2^56 elements", "2:26"},
    {HDR "    b:f32[3] = neg a", FT_ERR_PARSE, "unexpected end of text: expected an equation or 'in'", "2:21"},
    {"{ lambda ; a:f32[3]. let\n  in (a,)", FT_ERR_PARSE, "expected '}' to close the jaxpr", "2:10"},
    {"{ lambda ; a:f32[3]. let in (a,) } }", FT_ERR_PARSE, "unexpected text after the jaxpr", "1:36"},
    {"{ lambda ; a:f32[3]. let in a }", FT_ERR_PARSE, "expected '(' and the outputs after 'in'", "1:29"},
    {"{ lambda ; a:f32[3] let in (a,) }", FT_ERR_PARSE, "expected a variable binder like 'a:f32[3]' or '.'", "1:21"},
    {"{ lambda a:f32[3]. let in (a,) }", FT_ERR_PARSE, "expected a variable binder like 'a:f32[3]' or ';'", "1:18"},
    {"{ lambda ; a:f32[3]. in (a,) }", FT_ERR_PARSE, "expected 'let' after the input binders", "1:22"},
    {HDR "    b:f32[] = reduce_sum[axes=0 out_sharding=None] a" END, FT_ERR_PARSE,
     "param 'axes' of reduce_sum expects a tuple of ints", "2:31"},
    {HDR "    b:f32[3] = neg[foo=1] a" END, FT_ERR_PARSE, "unknown param 'foo' of neg", "2:20"},
    {HDR "    b:f32[] = reduce_sum a" END, FT_ERR_PARSE, "missing param 'axes' of reduce_sum", "2:15"},
    {HDR "    b:f32[] = reduce_sum[axes=(0,) axes=(0,)] a" END, FT_ERR_PARSE, "duplicate param 'axes' of reduce_sum", "2:36"},
    {HDR "    b:f32[3] = convert_element_type[new_dtype=float99 weak_type=False] a" END, FT_ERR_PARSE,
     "param 'new_dtype' of convert_element_type expects a dtype", "2:47"},
    {HDR "    b:f32[3] = cumsum[axis=0 reverse=1] a" END, FT_ERR_PARSE, "param 'reverse' of cumsum expects True or False", "2:38"},
    {HDR "    b:c64[3] = fft[fft_lengths=(3,) fft_type=7] a" END, FT_ERR_PARSE,
     "param 'fft_type' of fft expects one of its enum values", "2:46"},
    {HDR "    b:f32[] = dot_general[dimension_numbers=((0,), (0,))] a a" END, FT_ERR_PARSE,
     "param 'dimension_numbers' of dot_general expects dimension numbers", "2:45"},
    {HDR "    b:f32[] = reduce_sum[axes=(0," END, FT_ERR_PARSE, "expected ',' or ')' in a tuple", "3:6"},
    {HDR "    b:f32[] = reduce_sum[axes=(0,", FT_ERR_PARSE, "expected a param value, found the end of the text", "2:34"},
    {HDR "    b:f32[] = reduce_sum[axes=(0,)", FT_ERR_PARSE, "expected a param name or ']' in the params of reduce_sum", "2:35"},
    {HDR "    b:f32[3] = mul a 1.5:i32[]" END, FT_ERR_PARSE, "literal of integer type i32 must be an integer", "2:22"},
    {HDR "    b:u8[3] = add a 300:u8[]" END, FT_ERR_PARSE, "integer literal out of range for u8", "2:21"},
    /* a float written in digits that rounds to inf is out of range, as 300:u8 is */
    {HDR "    b:f32[3] = add a 1e999:f32[]" END, FT_ERR_PARSE, "float literal 1e999 is out of range", "2:22"},
    {HDR "    b:f32[3] = add a -1e999" END, FT_ERR_PARSE, "float literal -1e999 is out of range", "2:22"},
    {HDR "    b:f32[3] = add a 1e39:f32[]" END, FT_ERR_PARSE, "float literal out of range for f32", "2:22"},
    {HDR "    b:f32[3] = add a -3.4028235677973366e+38:f32[]" END, FT_ERR_PARSE, "float literal out of range for f32", "2:22"},
    {HDR "    b:f16[] = neg 65520.0:f16[]" END, FT_ERR_PARSE, "float literal out of range for f16", "2:19"},
    {HDR "    b:bf16[] = neg 3.4e38:bf16[]" END, FT_ERR_PARSE, "float literal out of range for bf16", "2:20"},
    {HDR "    b:c64[] = neg (1+1e39j):c64[]" END, FT_ERR_PARSE, "float literal out of range for c64", "2:19"},
    {HDR "    b:f32[3] = mul a 2.0:f32[3]" END, FT_ERR_PARSE, "a literal must be a scalar", "2:26"},
    {HDR "    b:f32[3] = mul a 1.2.3:f32[]" END, FT_ERR_PARSE, "malformed number '1.2.3'", "2:22"},
    {HDR "    b:f32[3] = mul a True:f32[]" END, FT_ERR_PARSE, "literal of type f32 must be a number", "2:22"},
    {HDR "    b:f32[3] neg a" END, FT_ERR_PARSE, "expected '=' after the equation's result binders", "2:14"},
    {HDR "    b:f32[3] = neg _" END, FT_ERR_PARSE, "'_' (a dropped result) cannot be used as an operand", "2:20"},
    {HDR "    b:f32[3] = jit[name=g jaxpr=g] a" END, FT_ERR_PARSE, "unknown jaxpr 'g'", "2:33"},
    {HDR "    b:f32[3] = jit[name=jvp(f jaxpr={ lambda ; c:f32[3]. let  in (c,) }] a" END, FT_ERR_PARSE,
     "param 'name' of jit expects a name", "2:25"},
    {HDR "    b:f32[3] = jit[name=f) jaxpr={ lambda ; c:f32[3]. let  in (c,) }] a" END, FT_ERR_PARSE,
     "param 'name' of jit expects a name", "2:25"},
    {"let g = { lambda ; a:f32[3]. let  in (a,) } in\nlet g = { lambda ; a:f32[3]. let  in (a,) } in\n"
     "{ lambda ; a:f32[3]. let  in (a,) }", FT_ERR_PARSE, "hoisted jaxpr 'g' is already defined", "2:5"},
    {"let g = { lambda ; a:f32[3]. let b:f32[3] = jit[name=g jaxpr=g] a in (b,) } in\n{ lambda ; a:f32[3]. let  in (a,) }",
     FT_ERR_PARSE, "jaxpr 'g' refers to itself", "1:62"},
    {HDR "    b:f32[3] = cond[branches={ lambda ; c:f32[3]. let  in (c,) }] n a" END, FT_ERR_PARSE,
     "expected '(' to start a tuple of jaxprs", "2:30"},
    {HDR "    b:f32[3] = gather[dimension_numbers=G(a=(1,] mode=1] a n" END, FT_ERR_PARSE, "mismatched ']', expected ')'", "2:48"},
    {HDR "    b:f32[3] = jit[name=f jaxpr={ lambda ; c:f32[3]. let d:f32[3] = neg e in (d,) }] a" END,
     FT_ERR_PARSE, "undefined variable 'e'", "2:73"},
    {HDR "    b:f32[3] = jit[name=f jaxpr={ lambda ; c:f32[3]. let d:f32[3] = neg a in (d,) }] a" END,
     FT_ERR_PARSE, "undefined variable 'a'", "2:73"}, /* sub-jaxprs are closed */
    {"{ lambda ; a:key<foo>[]. let  in (a,) }", FT_ERR_PARSE, "unknown PRNG key implementation 'foo'", "1:18"},
    {"{ lambda ; a:key<fry[]. let  in (a,) }", FT_ERR_PARSE, "expected a PRNG key type such as key<fry>", "1:14"},
    {"{ lambda ; a:f32<host>[3]. let  in (a,) }", FT_ERR_PARSE, "unsupported type annotation", "1:17"},
    {"{ lambda ; a:f32[3@x]. let  in (a,) }", FT_ERR_PARSE, "sharding annotations in types are not supported", "1:19"},
};

START_TEST(bad_input_table) {
  ck_assert_int_ge((int)(sizeof bad / sizeof *bad), 30);
  ft_ctx *ctx = ft_ctx_new(NULL);
  const bad_case *c = &bad[_i];
  ft_jaxpr *j = ft_parse(ctx, c->text, strlen(c->text), "bad.jaxpr");
  ck_assert_msg(j == NULL, "case %d parsed: %s", _i, c->text);
  ck_assert_int_eq(ft_ctx_status(ctx), c->st);
  const char *msg = ft_ctx_error(ctx);
  ck_assert_msg(strstr(msg, c->fragment), "case %d: message lacks '%s':\n%s", _i, c->fragment, msg);
  char where[64];
  snprintf(where, sizeof where, "bad.jaxpr:%s: ", c->where);
  ck_assert_msg(!strncmp(msg, where, strlen(where)), "case %d: expected at %s:\n%s", _i, c->where, msg);
  /* the line and a caret under the column follow the message */
  const char *nl = strchr(msg, '\n');
  ck_assert_ptr_nonnull(nl);
  const char *nl2 = strchr(nl + 1, '\n');
  ck_assert_ptr_nonnull(nl2);
  ck_assert_msg(nl2[strlen(nl2) - 1] == '^', "case %d: no caret:\n%s", _i, msg);
  ft_ctx_free(ctx);
}
END_TEST

/* The caret sits under the column named in the message. */
START_TEST(caret_column) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  const char *t = "{ lambda ; a:f32[3]. let\n    b:f32[3] = neg zz\n  in (b,) }";
  ck_assert_ptr_null(ft_parse(ctx, t, strlen(t), "x"));
  ck_assert_str_eq(ft_ctx_error(ctx), "x:2:20: undefined variable 'zz'\n    b:f32[3] = neg zz\n                   ^");
  ft_ctx_free(ctx);
}
END_TEST

/* Hardened mode refuses params this build does not know, as strict does:
 * dropping one could change what the program computes. */
START_TEST(unknown_param_hardened) {
  ft_ctx_options o = {.size = sizeof(ft_ctx_options), .mode = FT_MODE_HARDENED};
  ft_ctx *ctx = ft_ctx_new(&o);
  const char *t = "{ lambda ; a:f32[3]. let b:f32[3] = neg[foo=(1, 2)] a in (b,) }";
  ck_assert_ptr_null(ft_parse(ctx, t, strlen(t), "x"));
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(ctx), "unknown param 'foo' of neg"));
  ft_ctx_free(ctx);
}
END_TEST

/* The edges of float literal ranges: values that round to the largest
 * finite number are kept (rounded, as JAX rounds a weak Python float), inf
 * spelled as inf is inf, and underflow rounds to zero like any rounding. */
static double lit_value(const char *lit) {
  char t[160];
  char ty[16] = "f32[]";
  const char *colon = strchr(lit, ':');
  if (colon) snprintf(ty, sizeof ty, "%s", colon + 1);
  snprintf(t, sizeof t, "{ lambda ; . let b:%s = neg %s in (b,) }", ty, lit);
  ft_ctx *ctx = ft_ctx_new(NULL);
  ft_jaxpr *j = ft_parse(ctx, t, strlen(t), "x");
  ck_assert_msg(j != NULL, "%s: %s", lit, ft_ctx_error(ctx));
  double v = j->eqns[0].in[0]->lit.f;
  ft_jaxpr_free(j);
  ft_ctx_free(ctx);
  return v;
}

START_TEST(float_literal_edges) {
  /* the text's double is kept; it rounds to FLT_MAX, not to inf */
  double v = lit_value("3.4028235677973362e+38:f32[]");
  ck_assert_double_eq(v, 3.4028235677973362e+38);
  ck_assert_float_eq((float)v, FLT_MAX);
  v = lit_value("-3.4028234663852886e+38:f32[]");
  ck_assert_float_eq((float)v, -FLT_MAX);
  ck_assert_double_eq(lit_value("65519.99:f16[]"), 65519.99);
  ck_assert_double_eq(lit_value("1e300:f64[]"), 1e300);
  ck_assert(isinf(lit_value("inf:f32[]")) && lit_value("inf:f32[]") > 0);
  ck_assert(isinf(lit_value("-inf:f16[]")) && lit_value("-inf:f16[]") < 0);
  ck_assert_double_eq(lit_value("1e-999:f32[]"), 0.0);
}
END_TEST

/* A type error the parser cannot see (shapes) comes from the verifier,
 * prefixed with the text's name. */
START_TEST(verify_errors_pass_through) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  const char *t = "{ lambda ; a:f32[3]. let b:f32[4] = neg a in (b,) }";
  ck_assert_ptr_null(ft_parse(ctx, t, strlen(t), "shape.jaxpr"));
  ck_assert_int_ne(ft_ctx_status(ctx), FT_OK);
  ck_assert_int_ne(ft_ctx_status(ctx), FT_ERR_PARSE);
  ck_assert_msg(!strncmp(ft_ctx_error(ctx), "shape.jaxpr: ", 13), "%s", ft_ctx_error(ctx));
  ft_ctx_free(ctx);
}
END_TEST

START_TEST(null_and_empty_args) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  ck_assert_ptr_null(ft_parse(ctx, NULL, 0, "x"));
  ck_assert_int_eq(ft_ctx_status(ctx), FT_ERR_INVALID_ARG);
  ck_assert_ptr_null(ft_parse(ctx, "{", 0, NULL)); /* len 0: empty */
  ck_assert(!strncmp(ft_ctx_error(ctx), "<input>:1:1: empty input", 24));
  ck_assert_ptr_null(ft_jaxpr_print(ctx, NULL));
  ck_assert_int_eq(ft_ctx_status(ctx), FT_ERR_INVALID_ARG);
  ft_ctx_free(ctx);
}
END_TEST

/* ---- fuzzing */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* Parses a mutant; on success it must print and re-parse. */
static int try_parse(ft_ctx *ctx, const char *t, size_t n) {
  ft_jaxpr *j = ft_parse(ctx, t, n, "fuzz");
  if (!j) {
    ck_assert_int_ne(ft_ctx_status(ctx), FT_OK);
    ck_assert(ft_ctx_error(ctx)[0] != 0);
    return 0;
  }
  char *s = ft_jaxpr_print(ctx, j);
  ck_assert_ptr_nonnull(s);
  ft_jaxpr *k = ft_parse(ctx, s, strlen(s), "fuzz-reprint");
  ck_assert_msg(k != NULL, "a printed mutant does not re-parse: %s\n%s", ft_ctx_error(ctx), s);
  ft_jaxpr_free(k);
  free(s);
  ft_jaxpr_free(j);
  return 1;
}

START_TEST(fuzz_truncations_and_flips) {
  static const char interesting[] = "{}[]()<>:;=,._ \n-01eaxj'\"\\";
  int n, parsed = 0, tried = 0;
  char **files = tu_list("fixtures/golden", &n);
  ck_assert_int_ge(n, 40);
  ft_ctx *ctx = ft_ctx_new(NULL);
  for (int f = 0; f < n; f++) {
    size_t len = 0;
    char *text = tu_slurp(files[f], &len);
    /* Mutants are copied into exact-size buffers so ASan sees overreads. */
    for (int k = 0; k < 12; k++, tried++) {
      size_t cut = len ? (size_t)(rnd() % len) : 0;
      char *m = malloc(cut ? cut : 1);
      memcpy(m, text, cut);
      parsed += try_parse(ctx, m, cut);
      free(m);
    }
    for (int k = 0; k < 24; k++, tried++) {
      char *m = malloc(len);
      memcpy(m, text, len);
      int flips = 1 + (int)(rnd() % 3);
      for (int q = 0; q < flips && len; q++) {
        size_t at = (size_t)(rnd() % len);
        m[at] = (rnd() & 1) ? interesting[rnd() % (sizeof interesting - 1)] : (char)(rnd() & 0xff);
      }
      parsed += try_parse(ctx, m, len);
      free(m);
    }
    free(text);
  }
  ft_ctx_free(ctx);
  tu_free_list(files, n);
  ck_assert_int_gt(tried, 1000);
  ck_assert_int_lt(parsed, tried); /* the mutants are mostly rejected */
}
END_TEST

/* Deep nesting is rejected, not a stack overflow. */
START_TEST(deep_nesting) {
  ft_ctx *ctx = ft_ctx_new(NULL);
  size_t n = 200000;
  char *t = malloc(n);
  memset(t, '(', n);
  memcpy(t, "{ lambda ; a:f32[3]. let b:f32[] = reduce_sum[axes=", 51);
  ck_assert_ptr_null(ft_parse(ctx, t, n, "deep"));
  ck_assert(strstr(ft_ctx_error(ctx), "nested too deeply"));
  free(t);
  ft_ctx_free(ctx);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("ir_text_errors");
  TCase *t = tcase_create("errors");
  tcase_set_timeout(t, 60);
  tcase_add_loop_test(t, bad_input_table, 0, (int)(sizeof bad / sizeof *bad));
  tcase_add_test(t, caret_column);
  tcase_add_test(t, float_literal_edges);
  tcase_add_test(t, unknown_param_hardened);
  tcase_add_test(t, verify_errors_pass_through);
  tcase_add_test(t, null_and_empty_args);
  tcase_add_test(t, fuzz_truncations_and_flips);
  tcase_add_test(t, deep_nesting);
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
