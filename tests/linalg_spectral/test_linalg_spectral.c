/* tests/linalg_spectral/test_linalg_spectral.c: ft_eigh, ft_svd, ft_qr
 * (docs/linalg-spectral.md). Known answers are JAX 0.12's on CPU, bit for
 * bit (hex floats printed by float.hex()): the same LAPACK routines on the
 * same column-major matrices give the same bits, signs included. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frankentrace.h"

static ft_ctx *C;
static void setup(void) { C = ft_ctx_new(NULL); }
static void teardown(void) { ft_ctx_free(C); }

static ft_aval mat(ft_dtype dt, int rank, const int64_t *dims) {
  ft_aval a = {.dtype = dt, .rank = rank};
  for (int i = 0; i < rank; i++) a.dims[i] = dims[i];
  return a;
}

static int f_eigh(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  return ft_eigh(in[0], true, true, &out[0], &out[1]);
}
static int f_svd(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  return ft_svd(in[0], false, true, &out[0], &out[1], &out[2]);
}
static int f_qr(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  return ft_qr(in[0], FT_QR_REDUCED, &out[0], &out[1]);
}
static int f_qr_r(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  return ft_qr(in[0], FT_QR_R, NULL, &out[0]);
}
static int f_qr_complete(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  return ft_qr(in[0], FT_QR_COMPLETE, &out[0], &out[1]);
}
static int f_eig(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  return ft_eig(in[0], true, &out[0], &out[1]);
}
/* sum(w * [1, 2, ...]) + sum(v): a loss through eigenvalues and vectors */
static int f_eigh_loss(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)max_out, (void)user;
  ft_val *w, *v;
  if (ft_eigh(in[0], true, true, &w, &v) != 2) return -1;
  int64_t n = ft_val_aval(w).dims[0];
  ft_val *k = ft_iota(t, FT_F64, 1, &n, 0);
  ft_val *sw = ft_reduce_sum(ft_mul(w, k), 1, (int[]){0});
  ft_val *sv = ft_reduce_sum(v, 2, (int[]){0, 1});
  out[0] = ft_add(sw, sv);
  return out[0] ? 1 : -1;
}

/* Runs j through ft_eval; returns outputs (caller frees). */
static void run_eval(ft_jaxpr *j, ft_array *in, int n_out, ft_array **out) {
  ck_assert_msg(ft_eval(C, j, 1, (const ft_array *const *)&in, n_out, out) == FT_OK, "%s", ft_ctx_error(C));
}

static void expect_hex(const ft_array *a, int n, const double *want) {
  const double *d = ft_array_data(a);
  for (int i = 0; i < n; i++)
    ck_assert_msg(memcmp(&d[i], &want[i], 8) == 0, "element %d: got %a want %a", i, d[i], want[i]);
}

START_TEST(eigh_known_answer) {
  int64_t d2[2] = {2, 2};
  ft_aval av = mat(FT_F64, 2, d2);
  ft_jaxpr *j = ft_trace(C, f_eigh, NULL, 1, &av);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  double a[4] = {2, 1, 1, 2};
  ft_array *in = ft_array_from_data(C, FT_F64, 2, d2, a), *out[2] = {0};
  run_eval(j, in, 2, out);
  expect_hex(out[0], 2, (const double[]){0x1.0000000000000p+0, 0x1.8000000000000p+1});
  expect_hex(out[1], 4, (const double[]){-0x1.6a09e667f3bccp-1, 0x1.6a09e667f3bccp-1,
                                         0x1.6a09e667f3bccp-1, 0x1.6a09e667f3bccp-1});
  for (int i = 0; i < 2; i++) ft_array_free(out[i]);
  ft_array_free(in);
  ft_jaxpr_free(j);
}
END_TEST

START_TEST(svd_qr_known_answer) {
  int64_t d[2] = {3, 2};
  ft_aval av = mat(FT_F64, 2, d);
  double a[6] = {1, 2, 3, 4, 5, 6};
  ft_array *in = ft_array_from_data(C, FT_F64, 2, d, a), *out[3] = {0};
  ft_jaxpr *j = ft_trace(C, f_svd, NULL, 1, &av);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  run_eval(j, in, 3, out);
  expect_hex(out[0], 6, (const double[]){-0x1.d6ba6398cb406p-3, 0x1.c45500a49cb1dp-1,
                                         -0x1.0cab5a56a44e2p-1, 0x1.ed1f5f0944f19p-3,
                                         -0x1.a3a81bc715cc3p-1, -0x1.9b8aa23ff470fp-2});
  expect_hex(out[1], 2, (const double[]){0x1.30d10b51174fap+3, 0x1.075267dc7c418p-1});
  expect_hex(out[2], 4, (const double[]){-0x1.3d4013615e66cp-1, -0x1.91ddaf8f30055p-1,
                                         -0x1.91ddaf8f30055p-1, 0x1.3d4013615e66cp-1});
  for (int i = 0; i < 3; i++) ft_array_free(out[i]), out[i] = NULL;
  ft_jaxpr_free(j);
  j = ft_trace(C, f_qr, NULL, 1, &av);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  run_eval(j, in, 2, out);
  expect_hex(out[0], 6, (const double[]){-0x1.5a2cd8c69d618p-3, 0x1.cb4ec140a0230p-1,
                                         -0x1.03a1a294f6094p-1, 0x1.1aa69e4f27779p-2,
                                         -0x1.b0b80ef844ba1p-1, -0x1.615045e2f155cp-2});
  expect_hex(out[1], 4, (const double[]){-0x1.7aa10d193c22dp+2, -0x1.dbfdaa1118664p+2, 0.0,
                                         0x1.a7f9ed76bb33ep-1});
  for (int i = 0; i < 2; i++) ft_array_free(out[i]), out[i] = NULL;
  ft_jaxpr_free(j);
  j = ft_trace(C, f_qr_r, NULL, 1, &av);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  run_eval(j, in, 1, out);
  ck_assert_int_eq(ft_array_aval(out[0]).dims[0], 2);
  ft_array_free(out[0]);
  ft_jaxpr_free(j);
  ft_array_free(in);
}
END_TEST

/* A rotation: the complex pair +-i and its eigenvectors, JAX's bits. */
START_TEST(eig_known_answer) {
  int64_t d2[2] = {2, 2};
  ft_aval av = mat(FT_F64, 2, d2);
  ft_jaxpr *j = ft_trace(C, f_eig, NULL, 1, &av);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  double a[4] = {0, -1, 1, 0};
  ft_array *in = ft_array_from_data(C, FT_F64, 2, d2, a), *out[2] = {0};
  run_eval(j, in, 2, out);
  ck_assert_int_eq(ft_array_aval(out[0]).dtype, FT_C128);
  expect_hex(out[0], 4, (const double[]){0.0, 1.0, 0.0, -1.0});
  const double h = 0x1.6a09e667f3bccp-1;
  expect_hex(out[1], 8, (const double[]){h, 0.0, h, -0.0, 0.0, -h, 0.0, h});
  for (int i = 0; i < 2; i++) ft_array_free(out[i]);
  ft_array_free(in);
  ft_jaxpr_free(j);
}
END_TEST

/* A NaN anywhere: JAX's results are all NaN (LAPACK fails or propagates). */
START_TEST(nan_input_gives_nan) {
  int64_t d2[2] = {2, 2};
  ft_aval av = mat(FT_F64, 2, d2);
  double a[4] = {1, NAN, NAN, 1};
  ft_array *in = ft_array_from_data(C, FT_F64, 2, d2, a), *out[3] = {0};
  ft_trace_fn fs[2] = {f_eigh, f_svd};
  int nouts[2] = {2, 3};
  for (int k = 0; k < 2; k++) {
    ft_jaxpr *j = ft_trace(C, fs[k], NULL, 1, &av);
    ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
    run_eval(j, in, nouts[k], out);
    for (int o = 0; o < nouts[k]; o++) {
      const double *v = ft_array_data(out[o]);
      ft_aval oa = ft_array_aval(out[o]);
      int64_t n = 1;
      for (int q = 0; q < oa.rank; q++) n *= oa.dims[q];
      for (int64_t i = 0; i < n; i++) ck_assert(isnan(v[i]));
      ft_array_free(out[o]), out[o] = NULL;
    }
    ft_jaxpr_free(j);
  }
  ft_array_free(in);
}
END_TEST

START_TEST(misuse_is_an_error) {
  int64_t d1[1] = {3}, d2[2] = {2, 3};
  ft_aval v = mat(FT_F64, 1, d1), r = mat(FT_F64, 2, d2), i = mat(FT_I32, 2, d2);
  ck_assert_ptr_null(ft_trace(C, f_svd, NULL, 1, &v));
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "rank >= 2"));
  ck_assert_ptr_null(ft_trace(C, f_eigh, NULL, 1, &r));
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "square"));
  ck_assert_ptr_null(ft_trace(C, f_qr, NULL, 1, &i));
  ck_assert_ptr_nonnull(strstr(ft_ctx_error(C), "dtype"));
  /* qr's JVP takes complex operands (JAX's rule with _H); complete mode on a tall operand
   * differentiates (JAX's LU completion) */
  int64_t d3[2] = {3, 2};
  ft_aval tall = mat(FT_F64, 2, d3), ctall = mat(FT_C128, 2, d3);
  ft_jaxpr *j = ft_trace(C, f_qr_complete, NULL, 1, &ctall);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr *cj = ft_jvp(C, j); /* complex operands: JAX's rule with _H */
  ck_assert_msg(cj != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr_free(cj);
  ft_jaxpr_free(j);
  j = ft_trace(C, f_qr_complete, NULL, 1, &tall);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr *dj0 = ft_jvp(C, j);
  ck_assert_msg(dj0 != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr_free(dj0);
  ft_jaxpr_free(j);
  j = ft_trace(C, f_qr, NULL, 1, &tall);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr *dj = ft_jvp(C, j);
  ck_assert_msg(dj != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr_free(dj);
  ft_jaxpr_free(j);
}
END_TEST

/* eig's JVP: the eigenvalues of diag(1, 2) move by the diagonal of the
 * tangent (V is diagonal, so V^-1 dA V keeps dA's diagonal exactly);
 * eigenvectors without enable_eigvec_derivs fail closed with JAX's
 * reason; complex eigh of diag(1, 2) moves its eigenvalues by the real
 * diagonal of a Hermitian tangent, exactly. */
START_TEST(eig_jvp) {
  const char *vals =
      "{ lambda ; a:f64[2,2]. let\n"
      "    b:c128[2] = eig[compute_left_eigenvectors=False compute_right_eigenvectors=False "
      "enable_eigvec_derivs=False implementation=None] a\n"
      "  in (b,) }";
  ft_jaxpr *j = ft_parse(C, vals, strlen(vals), "eigvals");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr *dj = ft_jvp(C, j);
  ck_assert_msg(dj != NULL, "%s", ft_ctx_error(C));
  int64_t d[2] = {2, 2};
  double a[4] = {1, 0, 0, 2}, da[4] = {0.25, 3, -5, -0.5};
  ft_array *in[2] = {ft_array_from_data(C, FT_F64, 2, d, a), ft_array_from_data(C, FT_F64, 2, d, da)};
  ft_array *o[2] = {NULL, NULL};
  ck_assert_msg(ft_eval(C, dj, 2, (const ft_array *const *)in, 2, o) == FT_OK, "%s", ft_ctx_error(C));
  const double *w = ft_array_data(o[0]), *dw = ft_array_data(o[1]);
  ck_assert(w[0] == 1 && w[1] == 0 && w[2] == 2 && w[3] == 0);
  ck_assert_msg(dw[0] == 0.25 && dw[1] == 0 && dw[2] == -0.5 && dw[3] == 0, "dw %g%+gi %g%+gi", dw[0], dw[1],
                dw[2], dw[3]);
  for (int k = 0; k < 2; k++) ft_array_free(o[k]), ft_array_free(in[k]);
  ft_jaxpr_free(dj), ft_jaxpr_free(j);
  const char *vecs =
      "{ lambda ; a:f64[2,2]. let\n"
      "    b:c128[2] c:c128[2,2] = eig[compute_left_eigenvectors=False compute_right_eigenvectors=True "
      "enable_eigvec_derivs=False implementation=None] a\n"
      "  in (b, c) }";
  j = ft_parse(C, vecs, strlen(vecs), "eig");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  ck_assert_ptr_null(ft_jvp(C, j));
  ck_assert_msg(strstr(ft_ctx_error(C), "enable_eigvec_derivs=True"), "%s", ft_ctx_error(C));
  ft_jaxpr_free(j);
  const char *herm =
      "{ lambda ; a:c128[2,2]. let\n"
      "    b:c128[2,2] c:f64[2] = eigh[algorithm=None lower=True sort_eigenvalues=True "
      "subset_by_index=None] a\n"
      "  in (b, c) }";
  j = ft_parse(C, herm, strlen(herm), "eigh");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  dj = ft_jvp(C, j);
  ck_assert_msg(dj != NULL, "%s", ft_ctx_error(C));
  double ha[8] = {1, 0, 0, 0, 0, 0, 2, 0}, hda[8] = {0.25, 0, 3, 1, 3, -1, -0.5, 0};
  ft_array *hin[2] = {ft_array_from_data(C, FT_C128, 2, d, ha), ft_array_from_data(C, FT_C128, 2, d, hda)};
  ft_array *ho[4] = {NULL, NULL, NULL, NULL};
  ck_assert_msg(ft_eval(C, dj, 2, (const ft_array *const *)hin, 4, ho) == FT_OK, "%s", ft_ctx_error(C));
  ck_assert_int_eq(ft_array_aval(ho[3]).dtype, FT_F64);
  const double *hw = ft_array_data(ho[1]), *hdw = ft_array_data(ho[3]);
  ck_assert(hw[0] == 1 && hw[1] == 2);
  ck_assert_msg(hdw[0] == 0.25 && hdw[1] == -0.5, "dw %g %g", hdw[0], hdw[1]);
  for (int k = 0; k < 4; k++) ft_array_free(ho[k]);
  for (int k = 0; k < 2; k++) ft_array_free(hin[k]);
  ft_jaxpr_free(dj), ft_jaxpr_free(j);
}
END_TEST

/* grad of a loss through eigh, then vmap of it, run by the interpreter and
 * by the JIT with 1, 2 and 8 executor threads: one set of bits. */
START_TEST(bitwise_across_engines_and_threads) {
  int64_t d[3] = {6, 5, 5};
  ft_aval av = mat(FT_F64, 2, d + 1);
  ft_jaxpr *j = ft_trace(C, f_eigh_loss, NULL, 1, &av);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr *g = ft_grad(C, j, 1, (int[]){0}, false);
  ck_assert_msg(g != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr *vg = ft_vmap(C, g, ft_jaxpr_num_inputs(g), (int[]){0}, ft_jaxpr_num_outputs(g), (int[]){0}, 6);
  ck_assert_msg(vg != NULL, "%s", ft_ctx_error(C));
  double x[6 * 25];
  uint64_t s = 12345;
  for (int i = 0; i < 6 * 25; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (double)(s >> 11) / 9007199254740992.0 - 0.5;
  }
  ft_array *in = ft_array_from_data(C, FT_F64, 3, d, x), *ref = NULL;
  run_eval(vg, in, 1, &ref);
  const double *rv = ft_array_data(ref);
  for (int i = 0; i < 6 * 25; i++) ck_assert(isfinite(rv[i]));
  int threads[3] = {1, 2, 8};
  for (int k = 0; k < 3; k++) {
    ft_ctx *c2 = ft_ctx_new(&(ft_ctx_options){.size = sizeof(ft_ctx_options), .num_threads = threads[k]});
    ft_fn *fn = ft_jit(c2, vg, NULL);
    ck_assert_msg(fn != NULL, "%s", ft_ctx_error(c2));
    ft_array *o = NULL;
    ck_assert_msg(ft_call(fn, 1, (const ft_array *const *)&in, 1, &o) == FT_OK, "%s", ft_ctx_error(c2));
    ck_assert_msg(!memcmp(ft_array_data(o), rv, sizeof x), "threads=%d differs", threads[k]);
    ft_array_free(o);
    ft_fn_free(fn);
    ft_ctx_free(c2);
  }
  ft_array_free(ref);
  ft_array_free(in);
  ft_jaxpr_free(vg);
  ft_jaxpr_free(g);
  ft_jaxpr_free(j);
}
END_TEST

/* complex schur, hessenberg, tridiagonal and householder_product (?gees,
 * ?gehrd, ?hetrd, ?ungqr), batched: the interpreter and the JIT (1 and 2
 * executor threads) give the same bits; t is upper triangular (complex
 * Schur form), hetrd's d is real with the trace of the Hermitian input,
 * and Q H Q^H gives the input back, with Q = diag(1, householder_product
 * of the reflectors below the subdiagonal), as jax.scipy.linalg.hessenberg
 * (calc_q=True) builds it. */
static void qentry(const double *q, int b, int r, int c, double *e) {
  if (r == 0 || c == 0) e[0] = r == c, e[1] = 0;
  else e[0] = q[2 * (b * 9 + (r - 1) * 3 + c - 1)], e[1] = q[2 * (b * 9 + (r - 1) * 3 + c - 1) + 1];
}
START_TEST(complex_reductions_bitwise) {
  const char *src =
      "{ lambda ; a:c128[3,4,4]. let\n"
      "    b:c128[3,4,4] c:c128[3,4,4] = schur[compute_schur_vectors=True select_callable=None "
      "sort_eig_vals=False] a\n"
      "    d:c128[3,4,4] e:c128[3,3] = hessenberg a\n"
      "    f:c128[3,4,4] g:f64[3,4] h:f64[3,3] i:c128[3,3] = tridiagonal[lower=True] a\n"
      "    k:c128[3,3,3] = slice[limit_indices=(3, 4, 3) start_indices=(0, 1, 0) strides=None] d\n"
      "    j:c128[3,3,3] = householder_product k e\n"
      "  in (b, c, d, e, f, g, h, i, j) }";
  ft_jaxpr *j = ft_parse(C, src, strlen(src), "creduce");
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  int64_t d[3] = {3, 4, 4};
  double x[3 * 16 * 2];
  uint64_t s = 777;
  for (int i = 0; i < 3 * 16 * 2; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (double)(s >> 11) / 9007199254740992.0 - 0.5;
  }
  for (int b = 0; b < 3; b++) /* Hermitian members: a = x + x^H */
    for (int r = 0; r < 4; r++)
      for (int c = 0; c <= r; c++) {
        double *u = x + 2 * (b * 16 + r * 4 + c), *l = x + 2 * (b * 16 + c * 4 + r);
        double re = u[0] + l[0], im = u[1] - l[1];
        u[0] = re, u[1] = im, l[0] = re, l[1] = -im;
      }
  ft_array *in = ft_array_from_data(C, FT_C128, 3, d, x);
  ft_array *ref[9] = {0};
  ck_assert_msg(ft_eval(C, j, 1, (const ft_array *const *)&in, 9, ref) == FT_OK, "%s", ft_ctx_error(C));
  const double *t = ft_array_data(ref[0]), *dd = ft_array_data(ref[5]), *hh = ft_array_data(ref[2]);
  const double *q = ft_array_data(ref[8]);
  for (int b = 0; b < 3; b++) {
    double tr = 0, sd = 0;
    for (int r = 0; r < 4; r++) {
      tr += x[2 * (b * 16 + r * 5)], sd += dd[b * 4 + r];
      for (int c = 0; c < r; c++) ck_assert(t[2 * (b * 16 + r * 4 + c)] == 0 && t[2 * (b * 16 + r * 4 + c) + 1] == 0);
    }
    ck_assert_msg(fabs(tr - sd) < 1e-12, "trace %g vs sum(d) %g", tr, sd);
    for (int r = 0; r < 4; r++) /* (Q H Q^H)[r][c] == a[r][c], H the upper Hessenberg part */
      for (int c = 0; c < 4; c++) {
        double re = 0, im = 0;
        for (int k = 0; k < 4; k++)
          for (int l = 0; l < 4; l++) {
            if (k > l + 1) continue;
            double qa[2], qb[2]; /* Q[r][k], Q[c][l] (conjugated below) */
            qentry(q, b, r, k, qa), qentry(q, b, c, l, qb);
            const double *h = hh + 2 * (b * 16 + k * 4 + l);
            double pr = qa[0] * h[0] - qa[1] * h[1], pi = qa[0] * h[1] + qa[1] * h[0];
            re += pr * qb[0] + pi * qb[1], im += pi * qb[0] - pr * qb[1];
          }
        ck_assert_msg(fabs(re - x[2 * (b * 16 + r * 4 + c)]) < 1e-12 &&
                          fabs(im - x[2 * (b * 16 + r * 4 + c) + 1]) < 1e-12,
                      "Q H Q^H differs at %d %d %d", b, r, c);
      }
  }
  int threads[2] = {1, 2};
  for (int k = 0; k < 2; k++) {
    ft_ctx *c2 = ft_ctx_new(&(ft_ctx_options){.size = sizeof(ft_ctx_options), .num_threads = threads[k]});
    ft_fn *fn = ft_jit(c2, j, NULL);
    ck_assert_msg(fn != NULL, "%s", ft_ctx_error(c2));
    ft_array *o[9] = {0};
    ck_assert_msg(ft_call(fn, 1, (const ft_array *const *)&in, 9, o) == FT_OK, "%s", ft_ctx_error(c2));
    for (int r = 0; r < 9; r++) {
      ft_aval av = ft_array_aval(ref[r]);
      size_t nb = (size_t)ft_aval_size(&av) * (av.dtype == FT_F64 ? 8 : 16);
      ck_assert_msg(!memcmp(ft_array_data(o[r]), ft_array_data(ref[r]), nb), "result %d, threads=%d differs", r,
                    threads[k]);
      ft_array_free(o[r]);
    }
    ft_fn_free(fn);
    ft_ctx_free(c2);
  }
  for (int r = 0; r < 9; r++) ft_array_free(ref[r]);
  ft_array_free(in);
  ft_jaxpr_free(j);
}
END_TEST

int main(void) {
  Suite *s = suite_create("linalg_spectral");
  TCase *t = tcase_create("all");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 120);
  tcase_add_test(t, eigh_known_answer);
  tcase_add_test(t, svd_qr_known_answer);
  tcase_add_test(t, eig_known_answer);
  tcase_add_test(t, nan_input_gives_nan);
  tcase_add_test(t, misuse_is_an_error);
  tcase_add_test(t, eig_jvp);
  tcase_add_test(t, bitwise_across_engines_and_threads);
  tcase_add_test(t, complex_reductions_bitwise);
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
