/* tests/trace/test_trace.c: tracing C functions into jaxprs. A small MLP
 * with softmax cross-entropy (equation count, output aval, determinism);
 * programs whose JAX 0.10.2 printout is in fixtures/golden (the traced
 * jaxpr prints the same text); control flow with captured values;
 * constants; and misuse (ft_trace returns NULL, the message names the
 * primitive and both shapes). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"

static ft_ctx *C;
static void setup(void) { C = ft_ctx_new(NULL); }
static void teardown(void) { ft_ctx_free(C); }

static ft_aval av(ft_dtype dt, int rank, int64_t d0, int64_t d1) {
  ft_aval a = {0};
  a.dtype = dt;
  a.rank = rank;
  a.dims[0] = d0;
  a.dims[1] = d1;
  return a;
}

static char *read_golden(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/golden/%s.jaxpr", FT_FIXTURES, name);
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  char *buf = calloc(1, 1 << 16);
  size_t n = fread(buf, 1, (1 << 16) - 1, f);
  fclose(f);
  buf[n] = 0;
  return buf;
}

/* The traced jaxpr prints exactly as JAX printed the same program. */
static void assert_prints_as(const ft_jaxpr *j, const char *golden) {
  char *want = read_golden(golden);
  char *got = ft_jaxpr_print(C, j);
  ck_assert_ptr_nonnull(got);
  size_t n = strlen(got);
  while (n && got[n - 1] == '\n') got[--n] = 0;
  size_t m = strlen(want);
  while (m && want[m - 1] == '\n') want[--m] = 0;
  ck_assert_msg(!strcmp(got, want), "%s:\n--- traced\n%s\n--- JAX\n%s", golden, got, want);
  ft_free(got);
  free(want);
}

/* ------------------------------------------------------------------ MLP */

/* loss = -mean(sum(one_hot(y) * log_softmax(relu(x W1 + b1) W2 + b2), -1)) */
static int mlp(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)max_out, (void)user;
  ft_val *x = in[0], *w1 = in[1], *b1 = in[2], *w2 = in[3], *b2 = in[4], *y = in[5];
  ft_val *h = ft_relu(ft_np_add(ft_matmul(x, w1), b1));               /* 4 eqns */
  ft_val *logits = ft_np_add(ft_matmul(h, w2), b2);                   /* 3 */
  ft_val *logp = ft_log_softmax(logits, -1);                          /* 10 */
  ft_val *onehot = ft_one_hot(y, 3, FT_F32);                          /* 4 */
  int last = -1;
  ft_val *ll = ft_sum(ft_np_mul(onehot, logp), 1, &last, false);     /* 2 */
  out[0] = ft_neg(ft_mean(ll, -1, NULL, false));                      /* 3 */
  (void)t;
  return 1;
}

static const ft_aval *mlp_avals(void) {
  static ft_aval a[6];
  a[0] = av(FT_F32, 2, 8, 4);
  a[1] = av(FT_F32, 2, 4, 16);
  a[2] = av(FT_F32, 1, 16, 0);
  a[3] = av(FT_F32, 2, 16, 3);
  a[4] = av(FT_F32, 1, 3, 0);
  a[5] = av(FT_I32, 1, 8, 0);
  return a;
}

START_TEST(mlp_trace) {
  ft_jaxpr *j = ft_trace(C, mlp, NULL, 6, mlp_avals());
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  ck_assert_int_eq(ft_jaxpr_num_inputs(j), 6);
  ck_assert_int_eq(ft_jaxpr_num_outputs(j), 1);
  ck_assert_int_eq(ft_jaxpr_num_eqns(j), 26);
  ft_aval o;
  ck_assert_int_eq(ft_jaxpr_output_aval(j, 0, &o), FT_OK);
  ck_assert_int_eq(o.dtype, FT_F32);
  ck_assert_int_eq(o.rank, 0);
  ck_assert_int_eq(ft_jaxpr_verify(C, j), FT_OK);
  /* determinism: a second trace is the same program */
  ft_jaxpr *k = ft_trace(C, mlp, NULL, 6, mlp_avals());
  ck_assert_ptr_nonnull(k);
  char h1[33], h2[33];
  ft_jaxpr_hash_hex(j, h1);
  ft_jaxpr_hash_hex(k, h2);
  ck_assert_str_eq(h1, h2);
  ck_assert_str_ne(h1, "00000000000000000000000000000000");
  char *p1 = ft_jaxpr_print(C, j), *p2 = ft_jaxpr_print(C, k);
  ck_assert_str_eq(p1, p2);
  ck_assert_ptr_nonnull(strstr(p1, "dot_general"));
  ck_assert_ptr_nonnull(strstr(p1, "max -inf:f32[]"));
  ft_free(p1);
  ft_free(p2);
  ft_jaxpr_free(j);
  ft_jaxpr_free(k);
}
END_TEST

/* ------------------------------------------------------- JAX printouts */

/* fixtures/golden/mlp_loss: mean((tanh(x W1 + b1) W2 + b2 - y) ** 2) */
static int mlp_loss(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)max_out, (void)user;
  ft_val *h = ft_tanh(ft_np_add(ft_matmul(in[4], in[0]), in[1]));
  ft_val *pred = ft_np_add(ft_matmul(h, in[2]), in[3]);
  out[0] = ft_mean(ft_np_pow(ft_np_sub(pred, in[5]), ft_weak_i(t, 2)), -1, NULL, false);
  return 1;
}

START_TEST(golden_mlp_loss) {
  ft_aval a[6] = {av(FT_F32, 2, 4, 3), av(FT_F32, 1, 3, 0), av(FT_F32, 2, 3, 2),
                  av(FT_F32, 1, 2, 0), av(FT_F32, 2, 5, 4), av(FT_F32, 2, 5, 2)};
  ft_jaxpr *j = ft_trace(C, mlp_loss, NULL, 6, a);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  assert_prints_as(j, "mlp_loss");
  ft_jaxpr_free(j);
}
END_TEST

static int log_softmax0(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  out[0] = ft_log_softmax(in[0], 0);
  return 1;
}

/* fixtures/golden/logsumexp_softmax: logsumexp, softmax, jit(log_softmax) */
static int lse_softmax(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  int ax = 1;
  out[0] = ft_logsumexp(in[0], 1, &ax, false);
  out[1] = ft_softmax(in[0], 1);
  return ft_jit_call(t, "log_softmax", log_softmax0, NULL, 1, in, out + 2, max_out - 2) == 1 ? 3 : -1;
}

START_TEST(golden_logsumexp_softmax) {
  ft_aval a = av(FT_F32, 2, 2, 4);
  ft_jaxpr *j = ft_trace(C, lse_softmax, NULL, 1, &a);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  assert_prints_as(j, "logsumexp_softmax");
  ft_jaxpr_free(j);
}
END_TEST

static int br_cos(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  out[0] = ft_cos(in[0]);
  return 1;
}
static int br_sin2(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  out[0] = ft_mul(ft_sin(in[0]), ft_weak_f(t, 2.0));
  return 1;
}
/* fixtures/golden/cond_binary: lax.cond(p, sin(x)*2, cos(x)) */
static int cond_binary(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  ft_trace_fn br[2] = {br_cos, br_sin2};
  return ft_cond(t, in[0], 2, br, NULL, 1, in + 1, out, max_out);
}

START_TEST(golden_cond_binary) {
  ft_aval a[2] = {av(FT_BOOL, 0, 0, 0), av(FT_F32, 1, 3, 0)};
  ft_jaxpr *j = ft_trace(C, cond_binary, NULL, 2, a);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  assert_prints_as(j, "cond_binary");
  ft_jaxpr_free(j);
}
END_TEST

static int cumsum_body(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  out[0] = ft_add(in[0], in[1]);
  out[1] = ft_mul(out[0], ft_weak_f(t, 2.0));
  return 2;
}
/* fixtures/golden/scan_cumsum */
static int scan_cumsum(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  int64_t two = 2;
  ft_val *init = ft_full(t, FT_F32, 1, &two, 0.0);
  return ft_scan(t, cumsum_body, NULL, -1, false, 1, &init, 1, in, out, max_out);
}

START_TEST(golden_scan_cumsum) {
  ft_aval a = av(FT_F32, 2, 5, 2);
  ft_jaxpr *j = ft_trace(C, scan_cumsum, NULL, 1, &a);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  assert_prints_as(j, "scan_cumsum");
  ft_jaxpr_free(j);
}
END_TEST

/* fixtures/golden/while_loop_consts: while sum(x) < c: x = x + |k| + 0.1,
 * with k a constant array closed over by the body and c by the cond. */
typedef struct wl { ft_val *k, *c; } wl;
static int wl_cond(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  wl *w = user;
  int ax = 0;
  out[0] = ft_lt(ft_reduce_sum(in[0], 1, &ax), w->c);
  return 1;
}
static int wl_body(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  wl *w = user;
  out[0] = ft_add(ft_add(in[0], ft_abs(w->k)), ft_weak_f(t, 0.1));
  return 1;
}
static int while_consts(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  static const float kdata[3] = {1, -2, 3};
  int64_t three = 3;
  wl w = {ft_constant(t, FT_F32, 1, &three, kdata), in[1]};
  return ft_while_loop(t, wl_cond, wl_body, &w, 1, in, out);
}

START_TEST(golden_while_loop_consts) {
  ft_aval a[2] = {av(FT_F32, 1, 3, 0), av(FT_F32, 0, 0, 0)};
  ft_jaxpr *j = ft_trace(C, while_consts, NULL, 2, a);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  assert_prints_as(j, "while_loop_consts");
  ft_jaxpr_free(j);
}
END_TEST

/* ------------------------------------------------------------ constants */

static int consts(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  static const double data[4] = {1, 2, 3, 4};
  int64_t d[2] = {2, 2};
  double s = 7;
  ft_val *k = ft_constant(t, FT_F64, 2, d, data);
  ft_val *lit = ft_constant(t, FT_F64, 0, NULL, &s);
  out[0] = ft_add(ft_mul(in[0], k), lit);
  out[1] = ft_const_i32(t, 5);
  return 2;
}

START_TEST(constants) {
  ft_aval a = av(FT_F64, 2, 2, 2);
  ft_jaxpr *j = ft_trace(C, consts, NULL, 1, &a);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  char *p = ft_jaxpr_print(C, j);
  ck_assert_str_eq(p, "{ lambda a:f64[2,2]; b:f64[2,2]. let\n"
                      "    c:f64[2,2] = mul b a\n"
                      "    d:f64[2,2] = add c 7.0:f64[]\n"
                      "  in (d, 5:i32[]) }");
  ft_free(p);
  ft_jaxpr_free(j);
}
END_TEST

/* ----------------------------------------------------- capture and jit */

static int cap_branch0(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  ft_val **outer = user;
  out[0] = ft_add(in[0], outer[0]); /* closes over an outer value */
  return 1;
}
static int cap_branch1(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  ft_val **outer = user;
  out[0] = ft_mul(outer[1], in[0]);
  return 1;
}
static int capture(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  ft_val *outer[2] = {ft_exp(in[1]), ft_sin(in[1])};
  ft_trace_fn br[2] = {cap_branch0, cap_branch1};
  return ft_cond(t, in[0], 2, br, outer, 1, in + 1, out, max_out);
}

START_TEST(cond_captures) {
  ft_aval a[2] = {av(FT_I32, 0, 0, 0), av(FT_F32, 1, 4, 0)};
  ft_jaxpr *j = ft_trace(C, capture, NULL, 2, a);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  char *p = ft_jaxpr_print(C, j);
  /* both branches take both captured values (c, d) before the operand */
  ck_assert_msg(strstr(p, "] e c d b") != NULL, "%s", p);
  ck_assert_msg(strstr(p, "clamp 0:i32[] a 1:i32[]") != NULL, "%s", p);
  ft_free(p);
  ck_assert_int_eq(ft_jaxpr_num_eqns(j), 4);
  ft_jaxpr_free(j);
}
END_TEST

/* ----------------------------------------------------------- misuse */

static int bad_add(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  ft_val *s = ft_add(in[0], in[1]); /* f32[3] + f32[4] */
  ck_assert_ptr_null(s);
  ck_assert(ft_tracer_failed(t));
  /* sticky: later ops are no-ops returning NULL */
  ck_assert_ptr_null(ft_exp(s));
  ck_assert_ptr_null(ft_exp(in[0]));
  out[0] = ft_neg(s);
  return 1;
}

START_TEST(misuse_shapes) {
  ft_aval a[2] = {av(FT_F32, 1, 3, 0), av(FT_F32, 1, 4, 0)};
  ck_assert_ptr_null(ft_trace(C, bad_add, NULL, 2, a));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_SHAPE);
  ck_assert_str_eq(ft_ctx_error(C), "add: operand shapes f32[3] and f32[4] do not match");
}
END_TEST

static int bad_matmul(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  out[0] = ft_sum(ft_matmul(in[0], in[1]), -1, NULL, false);
  return 1;
}

START_TEST(misuse_matmul) {
  ft_aval a[2] = {av(FT_F32, 2, 5, 4), av(FT_F32, 2, 3, 2)};
  ck_assert_ptr_null(ft_trace(C, bad_matmul, NULL, 2, a));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_SHAPE);
  ck_assert_str_eq(ft_ctx_error(C), "dot_general: contracting dimensions of f32[5,4] and f32[3,2] differ: "
                                    "lhs axis 1 has size 4, rhs axis 0 has size 3");
}
END_TEST

static int bad_dtype(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  out[0] = ft_sub(in[0], in[1]);
  return 1;
}

START_TEST(misuse_dtypes) {
  ft_aval a[2] = {av(FT_F32, 1, 3, 0), av(FT_I32, 1, 3, 0)};
  ck_assert_ptr_null(ft_trace(C, bad_dtype, NULL, 2, a));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_TYPE);
  ck_assert_str_eq(ft_ctx_error(C), "sub: operand dtypes f32 and i32 do not match (f32[3], i32[3])");
}
END_TEST

static int np_broadcast_error(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  out[0] = ft_np_add(in[0], in[1]);
  return 1;
}

START_TEST(misuse_np_broadcast) {
  ft_aval a[2] = {av(FT_F32, 2, 2, 4), av(FT_F32, 1, 3, 0)};
  ck_assert_ptr_null(ft_trace(C, np_broadcast_error, NULL, 2, a));
  ck_assert_str_eq(ft_ctx_error(C), "add: operand shapes f32[2,4] and f32[3] cannot be broadcast together");
}
END_TEST

static int bad_axis(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  int ax = 5;
  out[0] = ft_sum(in[0], 1, &ax, false);
  return 1;
}

START_TEST(misuse_axis) {
  ft_aval a = av(FT_F32, 2, 2, 3);
  ck_assert_ptr_null(ft_trace(C, bad_axis, NULL, 1, &a));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_SHAPE);
  ck_assert_str_eq(ft_ctx_error(C), "reduce_sum: axis 5 out of range for operand f32[2,3]");
}
END_TEST

static int returns_null(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  out[0] = NULL;
  return 1;
}
static int returns_error(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  return -1;
}
static int user_fail(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  ft_tracer_fail(t, "my model is wrong");
  return -1;
}

static ft_val *escaped;
static int leak_body(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  escaped = ft_neg(in[0]);
  out[0] = in[0];
  return 1;
}
static int escape(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  ft_val *r[1];
  if (ft_jit_call(t, "f", leak_body, NULL, 1, in, r, 1) != 1) return -1;
  out[0] = ft_add(r[0], escaped); /* a value of a finished sub-trace */
  return 1;
}

static int cond_mismatch_b0(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  out[0] = in[0];
  return 1;
}
static int cond_mismatch_b1(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  int ax = 0;
  out[0] = ft_reduce_sum(in[0], 1, &ax);
  return 1;
}
static int cond_mismatch(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  ft_trace_fn br[2] = {cond_mismatch_b0, cond_mismatch_b1};
  return ft_cond(t, in[0], 2, br, NULL, 1, in + 1, out, max_out);
}

START_TEST(misuse_other) {
  ft_aval a[2] = {av(FT_I32, 0, 0, 0), av(FT_F32, 1, 3, 0)};
  ck_assert_ptr_null(ft_trace(C, returns_null, NULL, 2, a));
  ck_assert_str_eq(ft_ctx_error(C), "ft_trace: output 0 is NULL");
  ck_assert_ptr_null(ft_trace(C, returns_error, NULL, 2, a));
  ck_assert_str_eq(ft_ctx_error(C), "ft_trace: the traced function returned -1 (failure)");
  ck_assert_ptr_null(ft_trace(C, user_fail, NULL, 2, a));
  ck_assert_str_eq(ft_ctx_error(C), "my model is wrong");
  ck_assert_ptr_null(ft_trace(C, escape, NULL, 1, a + 1));
  ck_assert_msg(strstr(ft_ctx_error(C), "add: a value of a finished sub-trace") != NULL, "%s", ft_ctx_error(C));
  ck_assert_ptr_null(ft_trace(C, cond_mismatch, NULL, 2, a));
  ck_assert_str_eq(ft_ctx_error(C), "cond: branches must agree on outputs: output 0 is f32[3] in branch 0 "
                                    "and f32[] in branch 1");
  ck_assert_ptr_null(ft_trace(C, NULL, NULL, 0, NULL));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_INVALID_ARG);
  ft_aval bad = av(FT_F32, 9, 1, 1);
  ck_assert_ptr_null(ft_trace(C, returns_null, NULL, 1, &bad));
  ck_assert_str_eq(ft_ctx_error(C), "ft_trace: input 0 has an invalid aval");
}
END_TEST

/* Shapes whose dims fit int64 but whose element count does not: an error
 * at the op (or at ft_trace's inputs), never a wrapped ft_aval_size. */
static int huge_broadcast(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  int64_t shape[3] = {INT64_C(1) << 28, INT64_C(1) << 28, 2};
  out[0] = ft_broadcast_in_dim(in[0], 3, shape, NULL);
  return 1;
}

static int huge_reshape(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  int64_t ns[2] = {INT64_C(4611686018427387904), 4};
  out[0] = ft_reshape(in[0], 2, ns);
  return 1;
}

static int huge_constant(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)in, (void)max_out, (void)user;
  int64_t dims[2] = {INT64_C(4611686018427387904), 4};
  float v = 0;
  out[0] = ft_constant(t, FT_F32, 2, dims, &v);
  return 1;
}

static int negate_it(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  out[0] = ft_neg(in[0]);
  return 1;
}

START_TEST(element_count_overflow) {
  ft_aval s = av(FT_F32, 0, 0, 0), v4 = av(FT_F32, 1, 4, 0);
  ck_assert_ptr_null(ft_trace(C, huge_broadcast, NULL, 1, &s));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_SHAPE);
  ck_assert_str_eq(ft_ctx_error(C), "broadcast_in_dim: result 0 would be f32[268435456,268435456,2], "
                                    "more than 2^56 elements");
  ck_assert_ptr_null(ft_trace(C, huge_reshape, NULL, 1, &v4));
  ck_assert_str_eq(ft_ctx_error(C), "reshape: new_sizes (4611686018427387904, 4) have more than 2^56 elements");
  ck_assert_ptr_null(ft_trace(C, huge_constant, NULL, 1, &v4));
  ck_assert_str_eq(ft_ctx_error(C), "ft_constant: shape f32[4611686018427387904,4] has more than 2^56 elements");
  ft_aval huge = av(FT_F32, 2, INT64_C(4611686018427387904), 4);
  ck_assert_ptr_null(ft_trace(C, huge_reshape, NULL, 1, &huge));
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_SHAPE);
  ck_assert_str_eq(ft_ctx_error(C), "ft_trace: input 0 (f32[4611686018427387904,4]) has more than 2^56 elements");
  /* exactly 2^56 elements is a valid (if unallocatable) shape */
  ft_aval edge = av(FT_I8, 2, INT64_C(1) << 28, INT64_C(1) << 28);
  ft_jaxpr *j = ft_trace(C, negate_it, NULL, 1, &edge);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr_free(j);
  edge.dims[1]++;
  ck_assert_ptr_null(ft_trace(C, negate_it, NULL, 1, &edge));
  ck_assert_str_eq(ft_ctx_error(C), "ft_trace: input 0 (i8[268435456,268435457]) has more than 2^56 elements");
}
END_TEST

/* ---------------------------------------------------- every op traces */

static int many_ops(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  ft_val *x = in[0], *i = in[1];
  int n = 0;
  int ax0 = 0, ax1 = 1, perm[2] = {1, 0};
  int64_t s23[2] = {2, 3}, s6[1] = {6}, st[2] = {0, 1}, lim[2] = {2, 3}, cfg[6] = {1, 0, 0, 0, 1, 1};
  ft_val *unary[] = {ft_neg(x), ft_sign(x), ft_floor(x), ft_ceil(x), ft_round(x, 1), ft_is_finite(x),
                     ft_exp(x), ft_exp2(x), ft_log(x), ft_log1p(x), ft_expm1(x), ft_tanh(x),
                     ft_logistic(x), ft_sin(x), ft_cos(x), ft_tan(x), ft_asin(x), ft_acos(x), ft_atan(x),
                     ft_sinh(x), ft_cosh(x), ft_asinh(x), ft_acosh(x), ft_atanh(x), ft_sqrt(x),
                     ft_rsqrt(x), ft_cbrt(x), ft_square(x), ft_abs(x), ft_erf(x), ft_erfc(x),
                     ft_erf_inv(x), ft_integer_pow(x, 3), ft_not(i), ft_copy(x), ft_copy_p(x),
                     ft_stop_gradient(x), ft_reduce_precision(x, 8, 7)};
  for (size_t k = 0; k < sizeof unary / sizeof *unary; k++) out[n++] = unary[k];
  ft_val *binary[] = {ft_add(x, x), ft_add_any(x, x), ft_sub(x, x), ft_mul(x, x), ft_div(x, x),
                      ft_rem(x, x), ft_pow(x, x), ft_max(x, x), ft_min(x, x), ft_atan2(x, x),
                      ft_nextafter(x, x), ft_and(i, i), ft_or(i, i), ft_xor(i, i), ft_shift_left(i, i),
                      ft_shift_right_logical(i, i), ft_shift_right_arithmetic(i, i), ft_eq(x, x),
                      ft_ne(x, x), ft_lt(x, x), ft_le(x, x), ft_gt(x, x), ft_ge(x, x)};
  for (size_t k = 0; k < sizeof binary / sizeof *binary; k++) out[n++] = binary[k];
  ft_val *cases[2] = {x, x};
  out[n++] = ft_select_n(ft_lt(x, x), 2, cases);
  out[n++] = ft_clamp(ft_weak_f(t, 0.0), x, ft_weak_f(t, 1.0));
  out[n++] = ft_convert(x, FT_I32);
  out[n++] = ft_bitcast_convert(x, FT_U32);
  int bd[2] = {0, 1};
  int64_t s423[3] = {4, 2, 3};
  int bd3[2] = {1, 2};
  out[n++] = ft_broadcast_in_dim(x, 3, s423, bd3);
  out[n++] = ft_reshape(x, 1, s6);
  out[n++] = ft_transpose(x, ft_val_rank(x), perm);
  out[n++] = ft_squeeze(ft_expand_dims(x, 1, &ax0), 1, &ax0);
  out[n++] = ft_rev(x, 1, &ax1);
  out[n++] = ft_slice(x, ft_val_rank(x), st, lim, NULL);
  ft_val *idx[2] = {ft_const_i32(t, 0), ft_const_i32(t, 1)};
  int64_t sz[2] = {1, 2};
  out[n++] = ft_dynamic_slice(x, idx, sz);
  out[n++] = ft_dynamic_update_slice(x, ft_dynamic_slice(x, idx, sz), idx);
  ft_val *two[2] = {x, x};
  out[n++] = ft_concatenate(2, two, 0);
  out[n++] = ft_pad(x, ft_weak_f(t, 0.0), cfg);
  int64_t sizes[2] = {1, 2};
  ft_val *parts[2];
  if (ft_split(x, 1, 2, sizes, parts) != 2) return -1;
  out[n++] = parts[1];
  out[n++] = ft_reduce_sum(x, 1, &ax0);
  out[n++] = ft_reduce_max(x, 1, &ax0);
  out[n++] = ft_reduce_min(x, 1, &ax0);
  out[n++] = ft_reduce_prod(x, 1, &ax0);
  out[n++] = ft_reduce_and(i, 1, &ax0);
  out[n++] = ft_reduce_or(i, 1, &ax0);
  out[n++] = ft_argmax(x, 1, FT_I32);
  out[n++] = ft_argmin(x, 0, FT_I32);
  out[n++] = ft_cumsum(x, -1, false);
  out[n++] = ft_cumprod(x, 0, true);
  out[n++] = ft_cummax(x, 0, false);
  out[n++] = ft_cummin(x, 0, false);
  out[n++] = ft_cumlogsumexp(x, 0, false);
  ft_dot_dims dd = {.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {1}};
  out[n++] = ft_dot_general(x, x, &dd, FT_F32);
  out[n++] = ft_iota(t, FT_I32, 2, s23, 1);
  out[n++] = ft_sort(x, -1, true);
  ft_val *srt[2];
  ft_val *keys[2] = {x, i};
  if (ft_sort_multi(2, keys, 0, false, 1, srt) != 2) return -1;
  out[n++] = srt[1];
  ft_val *tv, *ti;
  if (ft_top_k(x, 2, &tv, &ti) != 2) return -1;
  out[n++] = ti;
  int64_t len3 = 3;
  out[n++] = ft_fft(ft_fft(x, FT_RFFT, 1, &len3), FT_IRFFT, 1, &len3);
  out[n++] = ft_np_where(ft_np_gt(x, ft_weak_f(t, 0.5)), x, ft_weak_f(t, 0.0));
  out[n++] = ft_np_div(i, i);
  out[n++] = ft_softmax(x, 0);
  out[n++] = ft_amin(x, 1, &ax1, true);
  out[n++] = ft_broadcast_to(x, 3, s423);
  (void)bd;
  for (int k = 0; k < n; k++)
    if (!out[k]) return -1;
  return n;
}

START_TEST(every_op) {
  ft_aval a[2] = {av(FT_F32, 2, 2, 3), av(FT_I32, 2, 2, 3)};
  ft_jaxpr *j = ft_trace(C, many_ops, NULL, 2, a);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  ck_assert_int_ge(ft_jaxpr_num_outputs(j), 100);
  ft_aval o;
  ck_assert_int_eq(ft_jaxpr_output_aval(j, ft_jaxpr_num_outputs(j) - 6, &o), FT_OK);
  ck_assert_int_eq(o.dtype, FT_F32); /* irfft(rfft(x)) */
  ck_assert_int_eq(o.dims[1], 3);
  ft_jaxpr_free(j);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("trace");
  TCase *tc = tcase_create("trace");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, mlp_trace);
  tcase_add_test(tc, golden_mlp_loss);
  tcase_add_test(tc, golden_logsumexp_softmax);
  tcase_add_test(tc, golden_cond_binary);
  tcase_add_test(tc, golden_scan_cumsum);
  tcase_add_test(tc, golden_while_loop_consts);
  tcase_add_test(tc, constants);
  tcase_add_test(tc, cond_captures);
  tcase_add_test(tc, misuse_shapes);
  tcase_add_test(tc, misuse_matmul);
  tcase_add_test(tc, misuse_dtypes);
  tcase_add_test(tc, misuse_np_broadcast);
  tcase_add_test(tc, misuse_axis);
  tcase_add_test(tc, misuse_other);
  tcase_add_test(tc, element_count_overflow);
  tcase_add_test(tc, every_op);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
