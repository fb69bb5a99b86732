/* tests/runtime/test_linalg.c: the factorizations and solves of issue 20
 * (docs/linalg.md): JAX 0.12's printouts parse and print back byte for
 * byte; exact values of cholesky (NaN when not positive definite),
 * triangular_solve (every flag), lu (pivots, permutation),
 * lu_pivots_to_permutation, tridiagonal_solve, symmetric_product and
 * cholesky_update; the interpreter and the JIT agree bitwise on batched
 * operands, with 1, 2 and 8 executor threads; shape and dtype misuse is an
 * error naming the primitive; the C tracing API (ft_cholesky,
 * ft_linalg_solve, ft_inv, ft_det, ft_slogdet) against hand values; the
 * JVP, gradient and vmap rules against finite differences and stacking. */
#include <stdio.h>
#include <stdlib.h>

#include "rt_util.h"

static ft_jaxpr *parse(const char *text) {
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "test");
  ck_assert_msg(j != NULL, "parse failed: %s\n%s", ft_ctx_error(C), text);
  return j;
}

static ft_status run(const char *text, int n_in, ft_array **in, int n_out, ft_array **out) {
  ft_jaxpr *j = parse(text);
  ft_status st = ft_eval(C, j, n_in, (const ft_array *const *)in, n_out, out);
  ft_jaxpr_free(j);
  return st;
}

static ft_array *run1(const char *text, int n_in, ft_array **in) {
  ft_array *o = NULL;
  ft_status st = run(text, n_in, in, 1, &o);
  ck_assert_msg(st == FT_OK, "eval failed: %s\n%s", ft_ctx_error(C), text);
  return o;
}

static void check_f64s(const ft_array *a, int n, const double *want) {
  ck_assert_int_eq(ft_array_size(a), n);
  for (int i = 0; i < n; i++) {
    double g = ft_get_f64(a, i);
    ck_assert_msg((isnan(g) && isnan(want[i])) || g == want[i], "element %d: got %a, want %a", i, g,
                  want[i]);
  }
}

static void check_i64s(const ft_array *a, int n, const int64_t *want) {
  ck_assert_int_eq(ft_array_size(a), n);
  for (int i = 0; i < n; i++)
    ck_assert_msg(ft_get_i64(a, i) == want[i], "element %d: got %lld, want %lld", i,
                  (long long)ft_get_i64(a, i), (long long)want[i]);
}

static bool same_bits(const ft_array *a, const ft_array *b) {
  return a->nbytes == b->nbytes && memcmp(a->data, b->data, a->nbytes) == 0;
}

#define F(...) ((const double[]){__VA_ARGS__})
#define I(...) ((const int64_t[]){__VA_ARGS__})
#define D(...) ((const int64_t[]){__VA_ARGS__})

static ft_array *mat64(int rank, const int64_t *dims, const double *v) { return ARR(FT_F64, rank, dims, v); }

/* --------------------------------------------------- printing round trip */
/* JAX 0.12.0.1's printouts (jax.make_jaxpr, x64). */
static const char *const PRINTOUTS[] = {
    "{ lambda ; a:f64[4,4] b:f64[4,2]. let\n"
    "    c:f64[4,2] = triangular_solve[\n"
    "      conjugate_a=False\n"
    "      left_side=True\n"
    "      lower=True\n"
    "      transpose_a=False\n"
    "      unit_diagonal=False\n"
    "    ] a b\n"
    "  in (c,) }\n",
    "{ lambda ; a:f64[4,4]. let b:f64[4,4] c:i32[4] d:i32[4] = lu a in (b, c, d) }\n",
    "{ lambda ; a:f64[4] b:f64[4] c:f64[4] d:f64[4,2]. let\n"
    "    e:f64[4,2] = tridiagonal_solve[perturb_singular=False] a b c d\n"
    "  in (e,) }\n",
    "{ lambda ; a:f64[4,2] b:f64[4,4]. let\n"
    "    c:f64[4,4] = symmetric_product[alpha=1.0 beta=0.0] a b\n"
    "  in (c,) }\n",
    "{ lambda ; a:f64[4,4] b:f64[4]. let c:f64[4,4] = cholesky_update a b in (c,) }\n",
    "{ lambda ; a:i32[4]. let\n"
    "    b:i32[4] = lu_pivots_to_permutation[permutation_size=4] a\n"
    "  in (b,) }\n",
    "{ lambda ; a:f32[3,3]. let b:f32[3,3] = cholesky a in (b,) }\n",
};

START_TEST(test_print_round_trip) {
  for (size_t i = 0; i < sizeof PRINTOUTS / sizeof *PRINTOUTS; i++) {
    ft_jaxpr *j = parse(PRINTOUTS[i]);
    char *s = ft_jaxpr_print(C, j);
    ck_assert_msg(s != NULL, "%s", ft_ctx_error(C));
    /* the printout has no final newline; the captured text has one */
    size_t n = strlen(PRINTOUTS[i]) - 1;
    ck_assert_msg(strlen(s) == n && !strncmp(s, PRINTOUTS[i], n), "printed\n%s\nwant\n%s", s, PRINTOUTS[i]);
    free(s);
    ft_jaxpr_free(j);
  }
}
END_TEST

/* --------------------------------------------------------------- cholesky */
START_TEST(test_cholesky_values) {
  /* [[4, 2], [2, 3]] = L L^T with L = [[2, 0], [1, sqrt 2]]; the raw
   * primitive keeps the input's upper triangle (7 here), as JAX's */
  ft_array *a = mat64(2, D(2, 2), F(4, 7, 2, 3));
  ft_array *o = run1("{ lambda ; a:f64[2,2]. let b:f64[2,2] = cholesky a in (b,) }", 1, &a);
  check_f64s(o, 4, F(2, 7, 1, sqrt(2.0)));
  ft_array_free(o), ft_array_free(a);
  /* not positive definite: the whole member NaN; the other member exact */
  a = mat64(3, D(2, 2, 2), F(1, 0, 2, 1, 9, 0, 0, 16));
  o = run1("{ lambda ; a:f64[2,2,2]. let b:f64[2,2,2] = cholesky a in (b,) }", 1, &a);
  check_f64s(o, 8, F(NAN, NAN, NAN, NAN, 3, 0, 0, 4));
  ft_array_free(o), ft_array_free(a);
  /* f32 */
  float v[4] = {9, 0, 3, 5};
  a = ARR(FT_F32, 2, D(2, 2), v);
  o = run1("{ lambda ; a:f32[2,2]. let b:f32[2,2] = cholesky a in (b,) }", 1, &a);
  check_f64s(o, 4, F(3, 0, 1, 2));
  ft_array_free(o), ft_array_free(a);
}
END_TEST

/* ------------------------------------------------------- triangular_solve */
static ft_array *tsolve(ft_array *a, ft_array *b, const char *bshape, const char *flags) {
  char text[1024];
  snprintf(text, sizeof text,
           "{ lambda ; a:f64[2,2] b:f64%s. let c:f64%s = triangular_solve[%s] a b in (c,) }",
           bshape, bshape, flags);
  ft_array *in[2] = {a, b};
  return run1(text, 2, in);
}

START_TEST(test_triangular_solve_flags) {
  /* a = [[2, 5], [1, 4]]: lower L = [[2, 0], [1, 4]], upper U = [[2, 5], [0, 4]] */
  ft_array *a = mat64(2, D(2, 2), F(2, 5, 1, 4));
  ft_array *b = mat64(2, D(2, 1), F(2, 9));
  const char *base = "conjugate_a=False unit_diagonal=False";
  char fl[256];
  /* L x = (2, 9): x = (1, 2) */
  snprintf(fl, sizeof fl, "%s left_side=True lower=True transpose_a=False", base);
  ft_array *o = tsolve(a, b, "[2,1]", fl);
  check_f64s(o, 2, F(1, 2));
  ft_array_free(o);
  /* L^T x = (2, 9): x1 = 9/4, x0 = (2 - 9/4)/2 */
  snprintf(fl, sizeof fl, "%s left_side=True lower=True transpose_a=True", base);
  o = tsolve(a, b, "[2,1]", fl);
  check_f64s(o, 2, F((2 - 9.0 / 4) / 2, 9.0 / 4));
  ft_array_free(o);
  /* U x = (2, 9): x1 = 9/4, x0 = (2 - 5 * 9/4)/2 */
  snprintf(fl, sizeof fl, "%s left_side=True lower=False transpose_a=False", base);
  o = tsolve(a, b, "[2,1]", fl);
  check_f64s(o, 2, F((2 - 5 * (9.0 / 4)) / 2, 9.0 / 4));
  ft_array_free(o);
  /* unit diagonal, lower: x0 = 2, x1 = 9 - 2 */
  snprintf(fl, sizeof fl, "conjugate_a=False unit_diagonal=True left_side=True lower=True transpose_a=False");
  o = tsolve(a, b, "[2,1]", fl);
  check_f64s(o, 2, F(2, 7));
  ft_array_free(o), ft_array_free(b);
  /* right side: x L = (4, 8): x1 = 2, x0 = (4 - 2)/2 = 1 */
  b = mat64(2, D(1, 2), F(4, 8));
  snprintf(fl, sizeof fl, "%s left_side=False lower=True transpose_a=False", base);
  o = tsolve(a, b, "[1,2]", fl);
  check_f64s(o, 2, F(1, 2));
  ft_array_free(o), ft_array_free(b), ft_array_free(a);
  /* singular: a zero on the diagonal gives inf/NaN, never an error */
  a = mat64(2, D(2, 2), F(0, 0, 1, 1));
  b = mat64(2, D(2, 1), F(1, 1));
  snprintf(fl, sizeof fl, "%s left_side=True lower=True transpose_a=False", base);
  o = tsolve(a, b, "[2,1]", fl);
  ck_assert(isinf(ft_get_f64(o, 0)));
  ck_assert(!isfinite(ft_get_f64(o, 1)));
  ft_array_free(o), ft_array_free(b), ft_array_free(a);
}
END_TEST

/* -------------------------------------------------------------------- lu */
START_TEST(test_lu_values) {
  ft_array *a = mat64(2, D(2, 2), F(1, 2, 3, 4)), *o[3];
  ck_assert_int_eq(run("{ lambda ; a:f64[2,2]. let b:f64[2,2] c:i32[2] d:i32[2] = lu a in (b, c, d) }",
                       1, &a, 3, o), FT_OK);
  /* row 1 is the pivot: L = [[1, 0], [1/3, 1]], U = [[3, 4], [0, 2 - 4/3]] */
  double l = 1.0 / 3.0;
  check_f64s(o[0], 4, F(3, 4, l, 2 - l * 4));
  check_i64s(o[1], 2, I(1, 1));
  check_i64s(o[2], 2, I(1, 0));
  for (int k = 0; k < 3; k++) ft_array_free(o[k]);
  ft_array_free(a);
  /* wide and tall shapes: pivots min(m, n), permutation m */
  a = mat64(2, D(3, 2), F(1, 0, 0, 1, 5, 0));
  ck_assert_int_eq(run("{ lambda ; a:f64[3,2]. let b:f64[3,2] c:i32[2] d:i32[3] = lu a in (b, c, d) }",
                       1, &a, 3, o), FT_OK);
  check_f64s(o[0], 6, F(5, 0, 0, 1, 0.2, 0));
  check_i64s(o[1], 2, I(2, 1));
  check_i64s(o[2], 3, I(2, 1, 0));
  for (int k = 0; k < 3; k++) ft_array_free(o[k]);
  ft_array_free(a);
  /* a singular matrix factors without NaN (JAX: INFO > 0 is success) */
  a = mat64(2, D(2, 2), F(0, 0, 0, 0));
  ck_assert_int_eq(run("{ lambda ; a:f64[2,2]. let b:f64[2,2] c:i32[2] d:i32[2] = lu a in (b, c, d) }",
                       1, &a, 3, o), FT_OK);
  check_f64s(o[0], 4, F(0, 0, 0, 0));
  check_i64s(o[1], 2, I(0, 1));
  for (int k = 0; k < 3; k++) ft_array_free(o[k]);
  ft_array_free(a);
}
END_TEST

START_TEST(test_pivots_to_permutation) {
  int32_t p[3] = {2, 2, 2};
  ft_array *a = ARR(FT_I32, 1, D(3), p);
  ft_array *o = run1("{ lambda ; a:i32[3]. let b:i32[5] = lu_pivots_to_permutation[permutation_size=5] a in (b,) }",
                     1, &a);
  /* swaps (0,2), (1,2), (2,2) on 0..4: [2,1,0,3,4] -> [2,0,1,3,4] */
  check_i64s(o, 5, I(2, 0, 1, 3, 4));
  ft_array_free(o), ft_array_free(a);
}
END_TEST

/* ---------------------------------------------- tridiagonal, symmetric, update */
START_TEST(test_other_solves) {
  /* T = [[2, 1, 0], [1, 2, 1], [0, 1, 2]]; T (1, 1, 1) = (3, 4, 3) */
  ft_array *dl = mat64(1, D(3), F(99, 1, 1)), *d = mat64(1, D(3), F(2, 2, 2)),
           *du = mat64(1, D(3), F(1, 1, 99)), *b = mat64(2, D(3, 1), F(3, 4, 3));
  ft_array *in[4] = {dl, d, du, b};
  ft_array *o = run1("{ lambda ; a:f64[3] b:f64[3] c:f64[3] d:f64[3,1]. let\n"
                     "    e:f64[3,1] = tridiagonal_solve[perturb_singular=False] a b c d\n  in (e,) }",
                     4, in);
  for (int i = 0; i < 3; i++) ck_assert_msg(fabs(ft_get_f64(o, i) - 1) < 1e-15, "x%d = %a", i, ft_get_f64(o, i));
  ft_array_free(o);
  for (int i = 0; i < 4; i++) ft_array_free(in[i]);
  /* a zero pivot gives NaN */
  dl = mat64(1, D(2), F(0, 0)), d = mat64(1, D(2), F(0, 0)), du = mat64(1, D(2), F(0, 0));
  b = mat64(2, D(2, 1), F(1, 1));
  ft_array *in2[4] = {dl, d, du, b};
  o = run1("{ lambda ; a:f64[2] b:f64[2] c:f64[2] d:f64[2,1]. let\n"
           "    e:f64[2,1] = tridiagonal_solve[perturb_singular=False] a b c d\n  in (e,) }", 4, in2);
  check_f64s(o, 2, F(NAN, NAN));
  ft_array_free(o);
  for (int i = 0; i < 4; i++) ft_array_free(in2[i]);
  /* symmetric_product: 2 a a^T + 3 c */
  ft_array *a = mat64(2, D(2, 1), F(1, 2)), *c = mat64(2, D(2, 2), F(1, 0, 0, 1));
  ft_array *in3[2] = {a, c};
  o = run1("{ lambda ; a:f64[2,1] b:f64[2,2]. let\n"
           "    c:f64[2,2] = symmetric_product[alpha=2.0 beta=3.0] a b\n  in (c,) }", 2, in3);
  check_f64s(o, 4, F(5, 4, 4, 11));
  ft_array_free(o), ft_array_free(a), ft_array_free(c);
  /* cholesky_update of R = I with w = (0, 0): unchanged; with w = (3, 0): R00 = 5? no:
   * R^T R + w w^T = diag(10, 1), so |R00| = sqrt 10 */
  ft_array *r = mat64(2, D(2, 2), F(1, 0, 0, 1)), *w = mat64(1, D(2), F(3, 0));
  ft_array *in4[2] = {r, w};
  o = run1("{ lambda ; a:f64[2,2] b:f64[2]. let c:f64[2,2] = cholesky_update a b in (c,) }", 2, in4);
  ck_assert(fabs(fabs(ft_get_f64(o, 0)) - sqrt(10.0)) < 1e-15);
  check_f64s(o, 4, F(ft_get_f64(o, 0), 0, 0, 1));
  ft_array_free(o), ft_array_free(r), ft_array_free(w);
}
END_TEST

/* ---------------------------------------------------------------- complex */
/* c128 values captured from JAX 0.12.0.1 (cholesky_p.bind, lax.linalg), to
 * 1e-15 relative: the conjugation conventions of each flag. */
static void check_c128(const ft_array *a, int n, const double (*want)[2], const char *what) {
  ck_assert_int_eq(ft_array_size(a), n);
  for (int i = 0; i < n; i++) {
    double re, im;
    ft_get_c128(a, i, &re, &im);
    double s = 1e-15 * (1 + fabs(want[i][0]) + fabs(want[i][1]));
    ck_assert_msg((isnan(want[i][0]) && isnan(re) && isnan(im)) ||
                      (fabs(re - want[i][0]) <= s && fabs(im - want[i][1]) <= s),
                  "%s element %d: got %.17g%+.17gj, want %.17g%+.17gj", what, i, re, im, want[i][0], want[i][1]);
  }
}

START_TEST(test_complex) {
  /* Hermitian positive definite; cholesky keeps the input's upper triangle */
  double a[18] = {4, 0, 1, -2, 0, 0.5, 1, 2, 6, 0, 1, 0, 0, -0.5, 1, 0, 3, 0};
  ft_array *A = ARR(FT_C128, 2, D(3, 3), a);
  ft_array *o = run1("{ lambda ; a:c128[3,3]. let b:c128[3,3] = cholesky a in (b,) }", 1, &A);
  check_c128(o, 9, (const double[][2]){{2, 0}, {1, -2}, {0, 0.5}, {0.5, 1}, {2.179449471770337, 0}, {1, 0},
                                       {0, -0.25}, {0.5735393346764044, 0.057353933467640436}, {1.614082760546911, 0}},
             "cholesky");
  ft_array_free(o);
  /* not positive definite: NaN + NaN i, as JAX */
  double np_[8] = {1, 0, 1, -2, 1, 2, 1, 0};
  ft_array *Bm = ARR(FT_C128, 2, D(2, 2), np_);
  o = run1("{ lambda ; a:c128[2,2]. let b:c128[2,2] = cholesky a in (b,) }", 1, &Bm);
  check_c128(o, 4, (const double[][2]){{NAN, NAN}, {NAN, NAN}, {NAN, NAN}, {NAN, NAN}}, "cholesky not PD");
  ft_array_free(o), ft_array_free(Bm);
  /* lu */
  ft_array *lo[3];
  ck_assert_int_eq(run("{ lambda ; a:c128[3,3]. let b:c128[3,3] c:i32[3] d:i32[3] = lu a in (b, c, d) }",
                       1, &A, 3, lo), FT_OK);
  check_c128(lo[0], 9, (const double[][2]){{4, 0}, {1, -2}, {0, 0.5}, {0.25, 0.5}, {4.75, 0}, {1.25, -0.125},
                                           {0, -0.125}, {0.2631578947368421, 0.02631578947368421},
                                           {2.6052631578947367, 0}}, "lu");
  check_i64s(lo[1], 3, I(0, 1, 2));
  for (int k = 0; k < 3; k++) ft_array_free(lo[k]);
  ft_array_free(A);
  /* triangular_solve, lower, left, each transpose/conjugate combination */
  double t[18] = {2, 1, 0, 0, 0, 0, 1, -1, 3, 0, 0, 0, 0.5, 0, 0, 2, 1, -1};
  double b[12] = {1, 0, 0, 2, 3, -1, 1, 0, 0.5, 0, -1, 0};
  static const double want[4][6][2] = {
      {{0.4, -0.2}, {0.4, 0.8}, {0.9333333333333332, -0.1333333333333333}, {-0.06666666666666672, -0.13333333333333333},
       {0.8999999999999999, -0.8666666666666665}, {-0.6000000000000001, -0.8666666666666667}},
      {{0.3916666666666667, 0.575}, {0.35000000000000003, 0.7833333333333334}, {1.1666666666666665, -0.5},
       {0, 0.3333333333333333}, {0.25, 0.25}, {-0.5, -0.5}},
      {{-0.008333333333333331, -0.44166666666666665}, {-0.45000000000000007, 0.8166666666666669},
       {1.1666666666666665, -0.16666666666666666}, {0, -0.3333333333333333}, {0.25, -0.25}, {-0.5, 0.5}},
      {{0.4, 0.2}, {-0.4, 0.8}, {0.9333333333333332, -0.5333333333333333}, {0.7333333333333334, -0.13333333333333333},
       {1.5666666666666664, 0.19999999999999984}, {0.2666666666666668, 0.8}},
  };
  static const char *flags[4] = {"transpose_a=False conjugate_a=False", "transpose_a=True conjugate_a=False",
                                 "transpose_a=True conjugate_a=True", "transpose_a=False conjugate_a=True"};
  for (int f = 0; f < 4; f++) {
    ft_array *in[2] = {ARR(FT_C128, 2, D(3, 3), t), ARR(FT_C128, 2, D(3, 2), b)};
    char text[512];
    snprintf(text, sizeof text,
             "{ lambda ; a:c128[3,3] b:c128[3,2]. let c:c128[3,2] = triangular_solve[left_side=True "
             "lower=True unit_diagonal=False %s] a b in (c,) }", flags[f]);
    o = run1(text, 2, in);
    check_c128(o, 6, want[f], flags[f]);
    ft_array_free(o), ft_array_free(in[0]), ft_array_free(in[1]);
  }
}
END_TEST

/* ------------------------------------------------------------ bad input */
START_TEST(test_bad_input) {
  static const struct {
    const char *text, *msg;
  } rows[] = {
      {"{ lambda ; a:f64[2,3]. let b:f64[2,3] = cholesky a in (b,) }", "The input to cholesky must be a square matrix"},
      {"{ lambda ; a:i32[2,2]. let b:i32[2,2] = cholesky a in (b,) }", "operand must have a floating or complex type"},
      {"{ lambda ; a:f64[2]. let b:f64[2] = cholesky a in (b,) }", "operand must have rank at least 2"},
      {"{ lambda ; a:f64[2,2] b:f64[3,1]. let c:f64[3,1] = triangular_solve[left_side=True] a b in (c,) }",
       "Incompatible shapes for arguments to triangular_solve"},
      {"{ lambda ; a:f64[2,2] b:f32[2,1]. let c:f32[2,1] = triangular_solve[left_side=True] a b in (c,) }",
       "operands f64[2,2] and f32[2,1] must have the same dtype"},
      {"{ lambda ; a:f64[3,2,2] b:f64[4,2,1]. let c:f64[4,2,1] = triangular_solve[left_side=True] a b in (c,) }",
       "batch dims"},
      {"{ lambda ; a:i32[3]. let b:i32[2] = lu_pivots_to_permutation[permutation_size=2] a in (b,) }",
       "Output permutation size 2"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
    ft_jaxpr *j = ft_parse(C, rows[i].text, strlen(rows[i].text), "test");
    ck_assert_msg(j == NULL, "parsed: %s", rows[i].text);
    ck_assert_msg(strstr(ft_ctx_error(C), rows[i].msg) != NULL, "error '%s' lacks '%s'", ft_ctx_error(C),
                  rows[i].msg);
  }
  /* perturb_singular=True parses but does not run: an explicit refusal */
  ft_array *in[4];
  for (int k = 0; k < 3; k++) in[k] = mat64(1, D(2), F(1, 1));
  in[3] = mat64(2, D(2, 1), F(1, 1));
  ft_array *o = NULL;
  ck_assert_int_eq(run("{ lambda ; a:f64[2] b:f64[2] c:f64[2] d:f64[2,1]. let\n"
                       "    e:f64[2,1] = tridiagonal_solve[perturb_singular=True] a b c d\n  in (e,) }",
                       4, in, 1, &o), FT_ERR_UNSUPPORTED);
  ck_assert(strstr(ft_ctx_error(C), "perturb_singular") != NULL);
  for (int k = 0; k < 4; k++) ft_array_free(in[k]);
}
END_TEST

/* ------------------------------------------ JIT == interpreter, threads */
/* A deterministic pseudo-random fill in [-1, 1). */
static void fill(double *v, int64_t n, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < n; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    v[i] = (double)(s >> 11) / (double)(1ull << 52) - 1.0;
  }
}

/* b x n x n matrices a a^T + n I (positive definite) and b x n x k rhs. */
static const char *PROG =
    "{ lambda ; a:f64[5,7,7] b:f64[5,7,3]. let\n"
    "    c:f64[5,7,7] = cholesky a\n"
    "    d:f64[5,7,3] = triangular_solve[conjugate_a=False left_side=True lower=True transpose_a=False unit_diagonal=False] c b\n"
    "    e:f64[5,7,3] = triangular_solve[conjugate_a=False left_side=True lower=True transpose_a=True unit_diagonal=False] c d\n"
    "    f:f64[5,7,7] g:i32[5,7] h:i32[5,7] = lu a\n"
    "    i:f64[5,7,3] = triangular_solve[conjugate_a=False left_side=True lower=False transpose_a=True unit_diagonal=False] f b\n"
    "  in (e, f, g, h, i) }";

START_TEST(test_jit_matches_interpreter_across_threads) {
  enum { NB = 5, N = 7, K = 3 };
  double a[NB * N * N], m[NB * N * N], rhs[NB * N * K];
  fill(m, NB * N * N, 1);
  fill(rhs, NB * N * K, 2);
  for (int b = 0; b < NB; b++)
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++) {
        double s = i == j ? N : 0;
        for (int q = 0; q < N; q++) s += m[b * N * N + i * N + q] * m[b * N * N + j * N + q];
        a[b * N * N + i * N + j] = s;
      }
  ft_array *in[2] = {mat64(3, D(NB, N, N), a), mat64(3, D(NB, N, K), rhs)};
  ft_jaxpr *j = parse(PROG);
  ft_array *ref[5];
  ck_assert_int_eq(ft_eval(C, j, 2, (const ft_array *const *)in, 5, ref), FT_OK);
  /* the Cholesky solve reproduces b: a x = b to rounding */
  for (int b = 0; b < NB; b++)
    for (int i = 0; i < N; i++)
      for (int c = 0; c < K; c++) {
        double s = 0;
        for (int q = 0; q < N; q++) s += a[b * N * N + i * N + q] * ft_get_f64(ref[0], b * N * K + q * K + c);
        ck_assert(fabs(s - rhs[b * N * K + i * K + c]) < 1e-12);
      }
  static const int threads[] = {1, 2, 8};
  for (int t = 0; t < 3; t++) {
    ft_ctx *ctx = ft_ctx_new(&(ft_ctx_options){.size = sizeof(ft_ctx_options), .num_threads = threads[t]});
    ft_fn *fn = ft_jit(ctx, j, NULL); /* strict: no fallback steps */
    ck_assert_msg(fn != NULL, "jit: %s", ft_ctx_error(ctx));
    ft_array *got[5];
    ck_assert_msg(ft_call(fn, 2, (const ft_array *const *)in, 5, got) == FT_OK, "%s", ft_ctx_error(ctx));
    for (int k = 0; k < 5; k++) {
      ck_assert_msg(same_bits(got[k], ref[k]), "output %d differs with %d threads", k, threads[t]);
      ft_array_free(got[k]);
    }
    ft_fn_free(fn);
    ft_ctx_free(ctx);
  }
  for (int k = 0; k < 5; k++) ft_array_free(ref[k]);
  ft_jaxpr_free(j);
  ft_array_free(in[0]), ft_array_free(in[1]);
}
END_TEST

/* ------------------------------------------------------- the C tracing API */
static int trace_solve(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  (void)t, (void)max_out, (void)u;
  out[0] = ft_linalg_solve(in[0], in[1]);
  out[1] = ft_inv(in[0]);
  out[2] = ft_det(in[0]);
  if (ft_slogdet(in[0], &out[3], &out[4]) < 0) return -1;
  out[5] = ft_cholesky(in[2]);
  for (int k = 0; k < 6; k++)
    if (!out[k]) return -1;
  return 6;
}

START_TEST(test_tracing_api) {
  ft_aval av[3] = {AV(FT_F64, 2, D(2, 2)), AV(FT_F64, 1, D(2)), AV(FT_F64, 2, D(2, 2))};
  ft_jaxpr *j = ft_trace(C, trace_solve, NULL, 3, av);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  /* a = [[0, 2], [4, 1]] (a row swap), b = (4, 6); spd = [[4, 2], [2, 5]] */
  ft_array *in[3] = {mat64(2, D(2, 2), F(0, 2, 4, 1)), mat64(1, D(2), F(4, 6)),
                     mat64(2, D(2, 2), F(4, 2, 2, 5))};
  ft_array *o[6];
  ck_assert_msg(ft_eval(C, j, 3, (const ft_array *const *)in, 6, o) == FT_OK, "%s", ft_ctx_error(C));
  check_f64s(o[0], 2, F(1, 2));                     /* 2 y = 4, 4 x + y = 6 */
  check_f64s(o[1], 4, F(-0.125, 0.25, 0.5, 0));     /* inv [[0,2],[4,1]] */
  ck_assert(fabs(ft_get_f64(o[2], 0) + 8) < 1e-14); /* det = -8 */
  check_f64s(o[3], 1, F(-1));
  ck_assert(fabs(ft_get_f64(o[4], 0) - log(8.0)) < 1e-15);
  check_f64s(o[5], 4, F(2, 0, 1, 2));
  for (int k = 0; k < 6; k++) ft_array_free(o[k]);
  ft_jaxpr_free(j);
  for (int k = 0; k < 3; k++) ft_array_free(in[k]);
}
END_TEST

/* A singular matrix: det 0, slogdet (0, -inf), solve infs/NaNs, no error. */
static int trace_det(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  (void)t, (void)max_out, (void)u;
  out[0] = ft_det(in[0]);
  if (ft_slogdet(in[0], &out[1], &out[2]) < 0) return -1;
  out[3] = ft_linalg_solve(in[0], in[1]);
  return out[0] && out[3] ? 4 : -1;
}

START_TEST(test_singular) {
  ft_aval av[2] = {AV(FT_F64, 2, D(2, 2)), AV(FT_F64, 1, D(2))};
  ft_jaxpr *j = ft_trace(C, trace_det, NULL, 2, av);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  ft_array *in[2] = {mat64(2, D(2, 2), F(1, 2, 2, 4)), mat64(1, D(2), F(1, 1))}, *o[4];
  ck_assert_int_eq(ft_eval(C, j, 2, (const ft_array *const *)in, 4, o), FT_OK);
  check_f64s(o[0], 1, F(0));
  check_f64s(o[1], 1, F(0));
  check_f64s(o[2], 1, F(-INFINITY));
  ck_assert(!isfinite(ft_get_f64(o[3], 0)) || !isfinite(ft_get_f64(o[3], 1)));
  for (int k = 0; k < 4; k++) ft_array_free(o[k]);
  ft_jaxpr_free(j);
  ft_array_free(in[0]), ft_array_free(in[1]);
}
END_TEST

/* ------------------------------------------------------------- AD, vmap */
/* f(a) = sum(w * g(a)) for a program g of one matrix; its gradient against
 * central differences (f64, tolerance 1e-6 relative). */
static void check_grad_of(ft_jaxpr *j, const char *text, int n, const double *a0) {
  ft_jaxpr *g = ft_grad(C, j, 1, (const int[]){0}, false);
  ck_assert_msg(g != NULL, "grad: %s\n%s", ft_ctx_error(C), text);
  ft_array *x = mat64(2, D(n, n), a0), *gr = NULL;
  ck_assert_msg(ft_eval(C, g, 1, (const ft_array *const *)&x, 1, &gr) == FT_OK, "%s", ft_ctx_error(C));
  double h = 1e-6;
  for (int i = 0; i < n * n; i++) {
    double p[64], m[64];
    memcpy(p, a0, sizeof(double) * (size_t)(n * n));
    memcpy(m, a0, sizeof(double) * (size_t)(n * n));
    p[i] += h, m[i] -= h;
    ft_array *xp = mat64(2, D(n, n), p), *xm = mat64(2, D(n, n), m), *yp = NULL, *ym = NULL;
    ck_assert_int_eq(ft_eval(C, j, 1, (const ft_array *const *)&xp, 1, &yp), FT_OK);
    ck_assert_int_eq(ft_eval(C, j, 1, (const ft_array *const *)&xm, 1, &ym), FT_OK);
    double fd = (ft_get_f64(yp, 0) - ft_get_f64(ym, 0)) / (2 * h), an = ft_get_f64(gr, i);
    ck_assert_msg(fabs(fd - an) <= 1e-6 * (1 + fabs(fd)), "%s\nd/da[%d]: analytic %.17g, fd %.17g", text, i,
                  an, fd);
    ft_array_free(xp), ft_array_free(xm), ft_array_free(yp), ft_array_free(ym);
  }
  ft_array_free(x), ft_array_free(gr);
  ft_jaxpr_free(g), ft_jaxpr_free(j);
}

static void check_grad(const char *text, int n, const double *a0) { check_grad_of(parse(text), text, n, a0); }

static const double SPD3[9] = {4, 1, 0.5, 1, 3, 0.25, 0.5, 0.25, 2};
static const double GEN3[9] = {1, 2, 0.5, 3, -1, 2, 0.25, 1, 4};

START_TEST(test_grads) {
  /* cholesky: f = sum(L * W) with a fixed weight pattern via iota */
  check_grad("{ lambda ; a:f64[3,3]. let\n"
             "    b:f64[3,3] = cholesky a\n"
             "    c:i32[3,3] = iota[dimension=0 dtype=int32 shape=(3, 3) sharding=None] \n"
             "    d:i32[3,3] = iota[dimension=1 dtype=int32 shape=(3, 3) sharding=None] \n"
             "    e:bool[3,3] = ge c d\n"
             "    f:f64[3,3] = broadcast_in_dim[broadcast_dimensions=() shape=(3, 3) sharding=None] 0.0:f64[]\n"
             "    g:f64[3,3] = select_n e f b\n"
             "    h:f64[3,3] = mul g g\n"
             "    i:f64[] = reduce_sum[axes=(0, 1) out_sharding=None] h\n"
             "  in (i,) }", 3, SPD3);
  /* triangular_solve in a (both sides of the cheaper-order switch) */
  check_grad("{ lambda ; a:f64[3,3]. let\n"
             "    b:f64[3,3] = triangular_solve[conjugate_a=False left_side=True lower=True transpose_a=False unit_diagonal=False] a a\n"
             "    c:f64[3,3] = mul b b\n"
             "    d:f64[] = reduce_sum[axes=(0, 1) out_sharding=None] c\n"
             "  in (d,) }", 3, SPD3);
  check_grad("{ lambda ; a:f64[3,3]. let\n"
             "    b:f64[3,3] = triangular_solve[conjugate_a=False left_side=False lower=False transpose_a=True unit_diagonal=True] a a\n"
             "    c:f64[3,3] = mul b b\n"
             "    d:f64[] = reduce_sum[axes=(0, 1) out_sharding=None] c\n"
             "  in (d,) }", 3, GEN3);
  /* lu: sum(lu^2) */
  check_grad("{ lambda ; a:f64[3,3]. let\n"
             "    b:f64[3,3] c:i32[3] d:i32[3] = lu a\n"
             "    e:f64[3,3] = mul b b\n"
             "    f:f64[] = reduce_sum[axes=(0, 1) out_sharding=None] e\n"
             "  in (f,) }", 3, GEN3);
}
END_TEST

/* The C API's compositions, differentiated through lu: sum(w * solve(a,
 * b)) + sum(w * inv(a)) + det(a) + logabsdet(a), with fixed b and w. */
static int trace_api_loss(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *u) {
  (void)max_out, (void)u;
  int64_t d[2] = {3, 3};
  double bw[9] = {1, -2, 0.5, 0.25, 3, -1, 2, 1, -0.5};
  ft_val *w = ft_constant(t, FT_F64, 2, d, bw);
  ft_val *x = ft_linalg_solve(in[0], w), *iv = ft_inv(in[0]), *s, *l;
  if (!x || !iv || ft_slogdet(in[0], &s, &l) < 0) return -1;
  ft_val *v = ft_add(ft_sum(ft_mul(w, x), -1, NULL, false), ft_sum(ft_mul(w, iv), -1, NULL, false));
  out[0] = ft_add(ft_add(v, ft_det(in[0])), l);
  return out[0] ? 1 : -1;
}

START_TEST(test_api_grads) {
  ft_aval av = AV(FT_F64, 2, D(3, 3));
  ft_jaxpr *j = ft_trace(C, trace_api_loss, NULL, 1, &av);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  check_grad_of(j, "solve + inv + det + slogdet (C API)", 3, GEN3);
}
END_TEST

/* custom_linear_solve runs its solve jaxpr on its consts and b;
 * differentiated implicitly (JAX's rules: x' = solve(b' - matvec'(x)),
 * transposed through transpose_solve); batched by JAX's fixpoint rule;
 * compiled as a control step running its solve jaxpr (strict ft_jit). */
static const char *CLS =
    "{ lambda ; a:f64[] b:f64[2]. let\n"
    "    c:f64[2] = custom_linear_solve[\n"
    "      const_lengths=_LinearSolveTuple(matvec=1, vecmat=0, solve=1, transpose_solve=0)\n"
    "      jaxprs=_LinearSolveTuple(matvec={ lambda ; a:f64[] b:f64[2]. let c:f64[2] = mul a b in (c,) }, "
    "vecmat=None, solve={ lambda ; a:f64[] b:f64[2]. let c:f64[2] = div b a in (c,) }, transpose_solve=None)\n"
    "    ] a a b\n"
    "  in (c,) }";

/* f evaluated with the interpreter and with strict ft_jit: both give want. */
static void check_both_engines(ft_jaxpr *f, int n_in, ft_array **in, int n_out, const int *counts,
                               const double *const *want) {
  ft_array *o[4] = {NULL};
  ck_assert_msg(ft_eval(C, f, n_in, (const ft_array *const *)in, n_out, o) == FT_OK, "%s", ft_ctx_error(C));
  for (int k = 0; k < n_out; k++) check_f64s(o[k], counts[k], want[k]), ft_array_free(o[k]);
  ft_fn *fn = ft_jit(C, f, NULL); /* strict: no interpreter step */
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(C));
  ck_assert_msg(ft_call(fn, n_in, (const ft_array *const *)in, n_out, o) == FT_OK, "%s", ft_ctx_error(C));
  for (int k = 0; k < n_out; k++) check_f64s(o[k], counts[k], want[k]), ft_array_free(o[k]);
  ft_fn_free(fn);
}

START_TEST(test_custom_linear_solve_forward) {
  ft_jaxpr *j = parse(CLS);
  char *s = ft_jaxpr_print(C, j);
  ck_assert_msg(s && !strcmp(s, CLS), "printed\n%s", s);
  free(s);
  ft_array *in[2] = {mat64(0, NULL, F(2)), mat64(1, D(2), F(2, 5))};
  check_both_engines(j, 2, in, 1, (const int[]){2}, (const double *const[]){F(1, 2.5)});
  /* b batched, a not: x batched, the operator's consts stay unbatched */
  ft_jaxpr *v = ft_vmap(C, j, ft_jaxpr_num_inputs(j), (const int[]){FT_VMAP_NONE, 0}, 0, NULL, 3);
  ck_assert_msg(v != NULL, "%s", ft_ctx_error(C));
  ft_array *vin[2] = {in[0], mat64(2, D(3, 2), F(2, 5, -4, 1, 0, 8))};
  check_both_engines(v, 2, vin, 1, (const int[]){6}, (const double *const[]){F(1, 2.5, -2, 0.5, 0, 4)});
  ft_array_free(vin[1]);
  ft_jaxpr_free(v);
  /* a batched, b not: the fixpoint batches b (matvec's result) by broadcasting it */
  v = ft_vmap(C, j, ft_jaxpr_num_inputs(j), (const int[]){0, FT_VMAP_NONE}, 0, NULL, 2);
  ck_assert_msg(v != NULL, "%s", ft_ctx_error(C));
  s = ft_jaxpr_print(C, v);
  ck_assert_msg(s && strstr(s, "broadcast_in_dim") && strstr(s, "matvec={ lambda ; a:f64[2] b:f64[2,2]. let"),
                "printed\n%s", s);
  free(s);
  vin[0] = mat64(1, D(2), F(2, 4)), vin[1] = in[1];
  check_both_engines(v, 2, vin, 1, (const int[]){4}, (const double *const[]){F(1, 2.5, 0.5, 1.25)});
  ft_array_free(vin[0]);
  ft_jaxpr_free(v);
  ft_array_free(in[0]), ft_array_free(in[1]);
  ft_jaxpr_free(j);
}
END_TEST

/* JAX hoists the jaxprs two custom_linear_solve equations share as
 * top-level lets nothing names, and prints them in full in each tuple: the
 * parser takes each tuple jaxpr printing the same text to be that object,
 * so the text prints back byte for byte (and without the lets, no sharing
 * is made up). */
START_TEST(test_custom_linear_solve_shared_print) {
  static const char *mv = "{ lambda ; a:f64[] b:f64[2]. let c:f64[2] = mul a b in (c,) }",
                    *sv = "{ lambda ; a:f64[] b:f64[2]. let c:f64[2] = div b a in (c,) }";
  char eqn[1024], body[4096], text[8192], alone[4096];
  snprintf(eqn, sizeof eqn,
           "custom_linear_solve[\n"
           "      const_lengths=_LinearSolveTuple(matvec=1, vecmat=0, solve=1, transpose_solve=0)\n"
           "      jaxprs=_LinearSolveTuple(matvec=%s, vecmat=None, solve=%s, transpose_solve=None)\n"
           "    ]", mv, sv);
  snprintf(body, sizeof body,
           "{ lambda ; g:f64[] h:f64[2]. let\n    i:f64[2] = %s g g h\n    j:f64[2] = %s g g i\n  in (j,) }",
           eqn, eqn);
  snprintf(alone, sizeof alone,
           "{ lambda ; a:f64[] b:f64[2]. let\n    c:f64[2] = %s a a b\n    d:f64[2] = %s a a c\n  in (d,) }",
           eqn, eqn);
  snprintf(text, sizeof text,
           "let jaxpr = { lambda ; a:f64[] b:f64[2]. let c:f64[2] = mul a b in (c,) } in\n"
           "let jaxpr1 = { lambda ; d:f64[] e:f64[2]. let f:f64[2] = div e d in (f,) } in\n%s", body);
  for (int k = 0; k < 2; k++) {
    const char *want = k ? alone : text;
    ft_jaxpr *j = parse(want);
    char *s = ft_jaxpr_print(C, j);
    ck_assert_msg(s && !strcmp(s, want), "printed\n%s\nwant\n%s", s, want);
    free(s);
    ft_array *in[2] = {mat64(0, NULL, F(2)), mat64(1, D(2), F(2, 5))}, *o = NULL;
    ck_assert_int_eq(ft_eval(C, j, 2, (const ft_array *const *)in, 1, &o), FT_OK);
    check_f64s(o, 2, F(0.5, 1.25));
    ft_array_free(o), ft_array_free(in[0]), ft_array_free(in[1]);
    ft_jaxpr_free(j);
  }
}
END_TEST

/* grad of sum(solve) through custom_linear_solve: f = sum(b / a), so
 * df/da = -sum(b) / a^2 and df/db = 1 / a (all exact in binary). */
START_TEST(test_custom_linear_solve_grad) {
  const char *text =
      "{ lambda ; a:f64[] b:f64[2]. let\n"
      "    c:f64[2] = custom_linear_solve[\n"
      "      const_lengths=_LinearSolveTuple(matvec=1, vecmat=1, solve=1, transpose_solve=1)\n"
      "      jaxprs=_LinearSolveTuple(matvec={ lambda ; a:f64[] b:f64[2]. let c:f64[2] = mul a b in (c,) }, "
      "vecmat={ lambda ; a:f64[] b:f64[2]. let c:f64[2] = mul b a in (c,) }, "
      "solve={ lambda ; a:f64[] b:f64[2]. let c:f64[2] = div b a in (c,) }, "
      "transpose_solve={ lambda ; a:f64[] b:f64[2]. let c:f64[2] = div b a in (c,) })\n"
      "    ] a a a a b\n"
      "    d:f64[] = reduce_sum[axes=(0,) out_sharding=None] c\n"
      "  in (d,) }";
  ft_jaxpr *j = parse(text);
  ft_jaxpr *g = ft_grad(C, j, 2, (const int[]){0, 1}, false);
  ck_assert_msg(g != NULL, "%s", ft_ctx_error(C));
  ft_array *in[2] = {mat64(0, NULL, F(2)), mat64(1, D(2), F(2, 5))}, *o[2];
  ck_assert_msg(ft_eval(C, g, 2, (const ft_array *const *)in, 2, o) == FT_OK, "%s", ft_ctx_error(C));
  check_f64s(o[0], 1, F(-1.75));
  check_f64s(o[1], 2, F(0.5, 0.5));
  ft_array_free(o[0]), ft_array_free(o[1]);
  /* the gradient batched over a: the transposed solve batched too */
  ft_jaxpr *v = ft_vmap(C, g, ft_jaxpr_num_inputs(g), (const int[]){0, FT_VMAP_NONE}, 0, NULL, 2);
  ck_assert_msg(v != NULL, "%s", ft_ctx_error(C));
  ft_array *vin[2] = {mat64(1, D(2), F(2, 4)), in[1]};
  check_both_engines(v, 2, vin, 2, (const int[]){2, 4},
                     (const double *const[]){F(-1.75, -0.4375), F(0.5, 0.5, 0.25, 0.25)});
  ft_array_free(vin[0]);
  ft_jaxpr_free(v);
  ft_array_free(in[0]), ft_array_free(in[1]);
  ft_jaxpr_free(g), ft_jaxpr_free(j);
}
END_TEST

START_TEST(test_vmap_is_stacking) {
  ft_jaxpr *j = parse("{ lambda ; a:f64[3,3] b:f64[3,2]. let\n"
                      "    c:f64[3,3] = cholesky a\n"
                      "    d:f64[3,2] = triangular_solve[conjugate_a=False left_side=True lower=True transpose_a=False unit_diagonal=False] c b\n"
                      "    e:f64[3,3] f:i32[3] g:i32[3] = lu a\n"
                      "  in (d, e, g) }");
  /* a batched along axis 0, b unbatched */
  ft_jaxpr *v = ft_vmap(C, j, ft_jaxpr_num_inputs(j), (const int[]){0, FT_VMAP_NONE}, 0, NULL, 2);
  ck_assert_msg(v != NULL, "%s", ft_ctx_error(C));
  double a[2 * 9], b[6];
  memcpy(a, SPD3, sizeof SPD3);
  for (int i = 0; i < 9; i++) a[9 + i] = SPD3[i] * (i % 4 == 0 ? 2 : 1);
  fill(b, 6, 3);
  ft_array *in[2] = {mat64(3, D(2, 3, 3), a), mat64(2, D(3, 2), b)}, *o[3];
  ck_assert_msg(ft_eval(C, v, 2, (const ft_array *const *)in, 3, o) == FT_OK, "%s", ft_ctx_error(C));
  for (int m = 0; m < 2; m++) {
    ft_array *one[2] = {mat64(2, D(3, 3), a + 9 * m), in[1]}, *r[3];
    ck_assert_int_eq(ft_eval(C, j, 2, (const ft_array *const *)one, 3, r), FT_OK);
    for (int k = 0; k < 3; k++) {
      size_t nb = r[k]->nbytes;
      ck_assert_msg(memcmp((char *)o[k]->data + nb * (size_t)m, r[k]->data, nb) == 0,
                    "vmap output %d member %d differs from the unbatched run", k, m);
      ft_array_free(r[k]);
    }
    ft_array_free(one[0]);
  }
  for (int k = 0; k < 3; k++) ft_array_free(o[k]);
  ft_array_free(in[0]), ft_array_free(in[1]);
  ft_jaxpr_free(v), ft_jaxpr_free(j);
}
END_TEST

int main(void) {
  Suite *s = suite_create("linalg");
  TCase *tc = tcase_create("linalg");
  tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_print_round_trip);
  tcase_add_test(tc, test_cholesky_values);
  tcase_add_test(tc, test_triangular_solve_flags);
  tcase_add_test(tc, test_lu_values);
  tcase_add_test(tc, test_pivots_to_permutation);
  tcase_add_test(tc, test_other_solves);
  tcase_add_test(tc, test_bad_input);
  tcase_add_test(tc, test_complex);
  tcase_add_test(tc, test_jit_matches_interpreter_across_threads);
  tcase_add_test(tc, test_tracing_api);
  tcase_add_test(tc, test_singular);
  tcase_add_test(tc, test_grads);
  tcase_add_test(tc, test_api_grads);
  tcase_add_test(tc, test_custom_linear_solve_forward);
  tcase_add_test(tc, test_custom_linear_solve_shared_print);
  tcase_add_test(tc, test_custom_linear_solve_grad);
  tcase_add_test(tc, test_vmap_is_stacking);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int nf = srunner_ntests_failed(sr);
  srunner_free(sr);
  return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
