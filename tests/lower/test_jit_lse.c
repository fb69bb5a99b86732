/* tests/lower/test_jit_lse.c: the one-pass logsumexp (docs/jit.md,
 * "One-pass logsumexp"). jax.nn.logsumexp's printout (the max, the
 * is_finite select, stop_gradient, the shift, exp, the sum) over the
 * trailing axes of an f32 array:
 *   - the interpreter and the JIT recognize it (the plan shows the two LSE
 *     kernels) and agree bit for bit, on 1 and 2 threads;
 *   - against the two-pass evaluation (the same program with exp's result
 *     also returned, so that nothing matches): rows of at most 4096
 *     elements, and rows with a NaN, +inf, only -inf or a zero maximum, are
 *     bitwise the same; longer rows agree to a few ulps (the block
 *     rescaling e^(m_b - M));
 *   - the shift (stop_gradient of the max) is the two-pass one bit for bit,
 *     signed zeros included;
 *   - the pattern is left alone when an intermediate has another (live)
 *     reader; a dead reader does not count, in either engine. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit_util.h"

/* jax.nn.logsumexp(x, axis=trailing k axes) on f32[dims]; extra: also
 * return exp's result (then the pattern must not match). */
static char *lse_text(int rank, const int64_t *dims, int k, bool extra) {
  static char s[4096];
  char shape[128] = "", kept[128] = "", ones[128] = "", axes[64] = "", bd[64] = "", zero[192] = "";
  for (int d = 0; d < rank; d++) {
    char t[32];
    snprintf(t, sizeof t, "%s%lld", d ? "," : "", (long long)dims[d]);
    strcat(shape, t);
    snprintf(t, sizeof t, "%s%lld", d ? "," : "", d < rank - k ? (long long)dims[d] : 1LL);
    strcat(ones, t);
    if (d < rank - k) {
      snprintf(t, sizeof t, "%s%lld", d ? "," : "", (long long)dims[d]);
      strcat(kept, t);
      snprintf(t, sizeof t, "%d,", d);
      strcat(bd, t);
    } else {
      snprintf(t, sizeof t, "%d,", d);
      strcat(axes, t);
    }
  }
  /* as JAX prints it: a non-scalar maximum selects against a broadcast 0 */
  if (rank > k) snprintf(zero, sizeof zero, "    z:f32[%s] = broadcast_in_dim 0.0:f32[]\n", kept);
  snprintf(s, sizeof s,
           "{ lambda ; a:f32[%s]. let\n"
           "    b:f32[%s] = reduce_max[axes=(%s) out_sharding=None] a\n"
           "    c:f32[%s] = max -inf:f32[] b\n"
           "    d:bool[%s] = is_finite c\n"
           "%s"
           "    e:f32[%s] = select_n d %s c\n"
           "    f:f32[%s] = stop_gradient e\n"
           "    g:f32[%s] = broadcast_in_dim[broadcast_dimensions=(%s)] f\n"
           "    h:f32[%s] = sub a g\n"
           "    i:f32[%s] = exp h\n"
           "    j:f32[%s] = reduce_sum[axes=(%s) out_sharding=None] i\n"
           "    _:f32[%s] = sign j\n"
           "    k:f32[%s] = abs j\n"
           "    l:f32[%s] = log k\n"
           "    m:f32[%s] = add l f\n"
           "  in (m, j, f%s) }\n",
           shape, kept, axes, kept, kept, zero, kept, rank > k ? "z" : "0.0:f32[]", kept, ones, bd, shape,
           shape, kept, axes, kept, kept, kept, kept, extra ? ", i" : "");
  return s;
}

static ft_jaxpr *parse(const char *text) {
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "lse");
  ck_assert_msg(j != NULL, "%s\n%s", ft_ctx_error(C), text);
  return j;
}

/* Outputs of j on x: the interpreter's, and the JIT's on 1 and 2 threads
 * (asserted equal to the interpreter's bit for bit). */
static void run_both(ft_jaxpr *j, ft_array *x, ft_array **want) {
  int n_out = ft_jaxpr_num_outputs(j);
  ck_assert_int_eq(ft_eval(C, j, 1, (const ft_array *const *)&x, n_out, want), FT_OK);
  for (int t = 1; t <= 2; t++) {
    ft_ctx_options co = FT_CTX_OPTIONS_INIT;
    co.num_threads = t;
    ft_ctx *c = ft_ctx_new(&co);
    ft_jit_options o = FT_JIT_OPTIONS_INIT;
    o.no_disk_cache = true;
    ft_fn *fn = ft_jit(c, j, &o);
    ck_assert_msg(fn != NULL, "%s", ft_ctx_error(c));
    ft_array *got[5] = {0};
    ck_assert_msg(ft_call(fn, 1, (const ft_array *const *)&x, n_out, got) == FT_OK, "%s", ft_ctx_error(c));
    for (int k = 0; k < n_out; k++) {
      int64_t where = -1;
      ck_assert_msg(jt_same(want[k], got[k], NULL, &where), "JIT (%d threads) output %d differs at %lld", t,
                    k, (long long)where);
      ft_array_free(got[k]);
    }
    ft_fn_free(fn);
    ft_ctx_free(c);
  }
}

static float f32_at(const ft_array *a, int64_t i) { return ((const float *)a->data)[i]; }

static double ulps(float a, float b) {
  if (a == b) return 0;
  return fabs((double)a - (double)b) / (nextafterf(fabsf(b), INFINITY) - fabsf(b));
}

/* One shape: one-pass (interp == JIT) against the two-pass (interp == JIT),
 * specials planted in some rows. Returns the largest ulp difference of the
 * final result over the rows. */
static double check_shape(int rank, const int64_t *dims, int k, uint64_t seed, bool specials) {
  ft_jaxpr *one = parse(lse_text(rank, dims, k, false));
  ft_jaxpr *two = parse(lse_text(rank, dims, k, true));
  char *plan = jt_emit(one, FT_EMIT_PLAN);
  ck_assert_msg(strstr(plan, "one-pass logsumexp") != NULL, "%s", plan);
  free(plan);
  plan = jt_emit(two, FT_EMIT_PLAN);
  ck_assert_msg(strstr(plan, "one-pass logsumexp") == NULL, "%s", plan);
  free(plan);
  ft_array *x = ft_array_alloc(C, &one->invars[0]->aval);
  int64_t total = ft_array_size(x), n = 1;
  for (int d = rank - k; d < rank; d++) n *= dims[d];
  int64_t rows = total / n;
  float *xv = x->data;
  for (int64_t i = 0; i < total; i++) xv[i] = (float)((double)(jt_rng(&seed) >> 11) * 0x1p-53 * 40.0 - 20.0);
  if (specials && rows >= 8) {
    xv[0 * n + n / 2] = NAN;                             /* row 0: a NaN */
    xv[1 * n + n - 1] = INFINITY;                        /* row 1: +inf */
    for (int64_t q = 0; q < n; q++) xv[2 * n + q] = -INFINITY; /* row 2: only -inf */
    for (int64_t q = 0; q < n; q++) xv[3 * n + q] = -fabsf(xv[3 * n + q]);
    xv[3 * n + n / 3] = -0.0f;                           /* row 3: max -0 */
    for (int64_t q = 0; q < n; q++) xv[4 * n + q] = -fabsf(xv[4 * n + q]);
    xv[4 * n] = -0.0f, xv[4 * n + n - 1] = 0.0f;         /* row 4: max +0 (and a -0) */
    xv[5 * n + n / 2] = -INFINITY;                       /* row 5: one -inf */
    xv[6 * n] = 1e30f;                                   /* row 6: a huge value first */
  }
  ft_array *o1[3] = {0}, *o2[4] = {0};
  run_both(one, x, o1);
  run_both(two, x, o2);
  double worst = 0;
  for (int64_t r = 0; r < rows; r++) {
    float a = f32_at(o1[0], r), b = f32_at(o2[0], r), sa = f32_at(o1[1], r), sb = f32_at(o2[1], r);
    float fa = f32_at(o1[2], r), fb = f32_at(o2[2], r);
    ck_assert_msg(memcmp(&fa, &fb, 4) == 0, "row %lld: shift %a vs %a", (long long)r, fa, fb);
    bool exact = n <= 4096 || (specials && rows >= 8 && r <= 2);
    if (exact) {
      ck_assert_msg(memcmp(&a, &b, 4) == 0 || (isnan(a) && isnan(b)),
                    "row %lld of %lld: one-pass %a, two-pass %a", (long long)r, (long long)n, a, b);
      ck_assert_msg(memcmp(&sa, &sb, 4) == 0 || (isnan(sa) && isnan(sb)), "row %lld sum: %a vs %a",
                    (long long)r, sa, sb);
      continue;
    }
    ck_assert_msg(isfinite(a) && isfinite(b), "row %lld: %a %a", (long long)r, a, b);
    double u = ulps(a, b), us = ulps(sa, sb);
    if (u > worst) worst = u;
    ck_assert_msg(u <= 4 && us <= 8, "row %lld (n %lld): result %a vs %a (%.1f ulp), sum %a vs %a (%.1f ulp)",
                  (long long)r, (long long)n, a, b, u, sa, sb, us);
  }
  for (int q = 0; q < 3; q++) ft_array_free(o1[q]);
  for (int q = 0; q < 4; q++) ft_array_free(o2[q]);
  ft_array_free(x);
  ft_jaxpr_free(one);
  ft_jaxpr_free(two);
  return worst;
}

START_TEST(small_rows_bitwise) {
  check_shape(1, (int64_t[]){5}, 1, 1, false);
  check_shape(2, (int64_t[]){8, 1000}, 1, 2, true);
  check_shape(2, (int64_t[]){16, 4096}, 1, 3, true);
  check_shape(3, (int64_t[]){9, 4, 33}, 2, 4, true);
  check_shape(3, (int64_t[]){2, 3, 7}, 1, 5, false);
}
END_TEST

START_TEST(long_rows_close) {
  check_shape(1, (int64_t[]){4097}, 1, 6, false);
  check_shape(2, (int64_t[]){8, 3 * 4096 + 7}, 1, 7, true);
  check_shape(1, (int64_t[]){1 << 18}, 1, 8, false);
  check_shape(2, (int64_t[]){3, 20000}, 2, 9, false); /* over both axes: one row */
}
END_TEST

/* A reader of an intermediate (here h = x - g) keeps the two passes: the
 * program is not the pattern, and both engines still agree. */
START_TEST(other_reader_keeps_two_passes) {
  const char *text =
      "{ lambda ; a:f32[4,5000]. let\n"
      "    b:f32[4] = reduce_max[axes=(1,) out_sharding=None] a\n"
      "    c:f32[4] = max -inf:f32[] b\n"
      "    d:bool[4] = is_finite c\n"
      "    z:f32[4] = broadcast_in_dim 0.0:f32[]\n"
      "    e:f32[4] = select_n d z c\n"
      "    f:f32[4] = stop_gradient e\n"
      "    g:f32[4,1] = broadcast_in_dim[broadcast_dimensions=(0,)] f\n"
      "    h:f32[4,5000] = sub a g\n"
      "    i:f32[4,5000] = exp h\n"
      "    j:f32[4] = reduce_sum[axes=(1,) out_sharding=None] i\n"
      "    k:f32[4,5000] = mul h 2.0:f32[]\n"
      "  in (j, k) }\n";
  ft_jaxpr *j = parse(text);
  char *plan = jt_emit(j, FT_EMIT_PLAN);
  ck_assert_msg(strstr(plan, "one-pass logsumexp") == NULL, "%s", plan);
  free(plan);
  ft_array *x = ft_array_alloc(C, &j->invars[0]->aval);
  jt_fill(x, 11);
  ft_array *o[2] = {0};
  run_both(j, x, o);
  ft_array_free(o[0]), ft_array_free(o[1]), ft_array_free(x);
  ft_jaxpr_free(j);
}
END_TEST

/* A dead reader of an intermediate (its result unused) does not count:
 * the JIT's rewrite drops it, and the interpreter must take the same path
 * (one pass) so that both agree bit for bit on long rows. */
START_TEST(dead_reader_ignored) {
  const char *text =
      "{ lambda ; a:f32[2,9000]. let\n"
      "    b:f32[2] = reduce_max[axes=(1,) out_sharding=None] a\n"
      "    c:f32[2] = max -inf:f32[] b\n"
      "    d:bool[2] = is_finite c\n"
      "    z:f32[2] = broadcast_in_dim 0.0:f32[]\n"
      "    e:f32[2] = select_n d z c\n"
      "    f:f32[2] = stop_gradient e\n"
      "    g:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] f\n"
      "    h:f32[2,9000] = sub a g\n"
      "    i:f32[2,9000] = exp h\n"
      "    j:f32[2] = reduce_sum[axes=(1,) out_sharding=None] i\n"
      "    k:f32[2,9000] = mul h 2.0:f32[]\n"
      "    l:f32[2] = log j\n"
      "  in (l,) }\n";
  ft_jaxpr *j = parse(text);
  char *plan = jt_emit(j, FT_EMIT_PLAN);
  ck_assert_msg(strstr(plan, "one-pass logsumexp") != NULL, "%s", plan);
  free(plan);
  ft_array *x = ft_array_alloc(C, &j->invars[0]->aval);
  uint64_t seed = 21;
  for (int64_t q = 0; q < ft_array_size(x); q++)
    ((float *)x->data)[q] = (float)((double)(jt_rng(&seed) >> 11) * 0x1p-53 * 30.0 - 15.0);
  ft_array *o[1] = {0};
  run_both(j, x, o);
  ft_array_free(o[0]), ft_array_free(x);
  ft_jaxpr_free(j);
}
END_TEST

int main(void) {
  Suite *s = suite_create("jit_lse");
  TCase *tc = tcase_create("lse");
  tcase_add_checked_fixture(tc, jt_setup, jt_teardown);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, small_rows_bitwise);
  tcase_add_test(tc, long_rows_close);
  tcase_add_test(tc, other_reader_keeps_two_passes);
  tcase_add_test(tc, dead_reader_ignored);
  suite_add_tcase(s, tc);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
