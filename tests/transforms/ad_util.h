/* tests/transforms/ad_util.h: helpers shared by autodiff tests — a context
 * per test, a seeded generator, parsing and running jaxprs, arrays from
 * values, a gradient check against f64 central differences, a forward-mode
 * check against the gradient, and the transpose check <A x, y> == <x, A^T y>.
 * Header-only: static inline functions (a test that does not use one gets
 * no warning), so each test program stays one file. AD_SEED (before the
 * include) picks the generator's seed. */
#ifndef FT_TESTS_AD_UTIL_H
#define FT_TESTS_AD_UTIL_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"
#include "transforms/transforms.h"

static ft_ctx *C;
static inline void setup(void) { C = ft_ctx_new(NULL); }
static inline void teardown(void) { ft_ctx_free(C); }

#ifndef AD_SEED
#define AD_SEED 88172645463325252ull
#endif
static uint64_t ad_rng = AD_SEED;
static inline double urand(void) {
  ad_rng ^= ad_rng << 13;
  ad_rng ^= ad_rng >> 7;
  ad_rng ^= ad_rng << 17;
  return (double)(ad_rng >> 11) / 9007199254740992.0;
}

static inline ft_jaxpr *P(const char *text) {
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "test");
  ck_assert_msg(j != NULL, "parse: %s\n%s", ft_ctx_error(C), text);
  return j;
}

static inline void verify(const ft_jaxpr *j) {
  ck_assert_msg(ft_jaxpr_verify(C, j) == FT_OK, "verify: %s", ft_ctx_error(C));
}

static inline void free_arrays(int n, ft_array **a) {
  for (int i = 0; i < n; i++) ft_array_free(a[i]);
}

/* Runs j; returns its outputs (caller frees). */
static inline void run(const ft_jaxpr *j, int n_in, ft_array *const *in, ft_array **out) {
  int no = ft_jaxpr_num_outputs(j);
  ft_status st = ft_eval(C, j, n_in, (const ft_array *const *)in, no, out);
  ck_assert_msg(st == FT_OK, "eval: %s", ft_ctx_error(C));
}

static inline double scalar(const ft_jaxpr *j, int n_in, ft_array *const *in) {
  ft_array *o[8];
  run(j, n_in, in, o);
  double v = ft_get_f64(o[0], 0);
  free_arrays(ft_jaxpr_num_outputs(j), o);
  return v;
}

/* An array of av: floats uniform in [lo, hi), integers from vals (n of
 * them, repeated; NULL: 0). */
static inline ft_array *arr(const ft_aval *av, double lo, double hi, const int64_t *vals, int n) {
  ft_array *a = ft_array_new(C, av->dtype, av->rank, av->dims);
  ck_assert_ptr_nonnull(a);
  for (int64_t i = 0; i < ft_aval_size(av); i++) {
    if (ft_dtype_is_float(av->dtype)) ft_set_f64(a, i, lo + (hi - lo) * urand());
    else ft_set_i64(a, i, vals && n ? vals[i % n] : 0);
  }
  return a;
}

/* Random inputs for j: floats in [lo, hi), the integer inputs in order
 * from idx[k] (n_idx[k] values each). */
static inline void inputs(const ft_jaxpr *j, ft_array **in, double lo, double hi, const int64_t *const *idx,
                   const int *n_idx) {
  int k = 0;
  for (int i = 0; i < ft_jaxpr_num_inputs(j); i++) {
    ft_aval av;
    ft_jaxpr_input_aval(j, i, &av);
    bool fl = ft_dtype_is_float(av.dtype);
    in[i] = arr(&av, lo, hi, fl ? NULL : idx[k], fl ? 0 : n_idx[k]);
    if (!fl) k++;
  }
}

static inline double dot_arrays(const ft_array *a, const ft_array *b) {
  double s = 0;
  for (int64_t i = 0; i < ft_array_size(a); i++) s += ft_get_f64(a, i) * ft_get_f64(b, i);
  return s;
}

/* The gradient of the scalar program j at `in` w.r.t. every float input,
 * checked against central differences (h = 1e-6; |g - fd| <= 1e-6 *
 * max(1, |fd|)), and forward mode against it: the JVP along a random
 * direction v equals <grad, v> to 1e-12 relative. */
static inline void grad_check_at(const ft_jaxpr *j, ft_array **in, const char *what) {
  int n = ft_jaxpr_num_inputs(j), argn[16], na = 0;
  for (int i = 0; i < n; i++)
    if (ft_dtype_is_float(in[i]->aval.dtype)) argn[na++] = i;
  ft_jaxpr *g = ft_grad(C, j, na, argn, false);
  ck_assert_msg(g != NULL, "%s: grad: %s", what, ft_ctx_error(C));
  verify(g);
  ft_array *gr[16];
  run(g, n, in, gr);
  const double h = 1e-6;
  for (int w = 0; w < na; w++) {
    ft_array *x = in[argn[w]];
    for (int64_t e = 0; e < ft_array_size(x); e++) {
      double x0 = ft_get_f64(x, e);
      ft_set_f64(x, e, x0 + h);
      double fp = scalar(j, n, in);
      ft_set_f64(x, e, x0 - h);
      double fm = scalar(j, n, in);
      ft_set_f64(x, e, x0);
      double fd = (fp - fm) / (2 * h), an = ft_get_f64(gr[w], e);
      ck_assert_msg(fabs(an - fd) <= 1e-6 * fmax(1.0, fabs(fd)),
                    "%s: d/d input %d [%lld]: grad %.12g, central difference %.12g", what, argn[w],
                    (long long)e, an, fd);
    }
  }
  /* forward mode: inputs (x..., v for each float x) -> (y, dy) */
  ft_jaxpr *f = ft_jvp(C, j);
  ck_assert_msg(f != NULL, "%s: jvp: %s", what, ft_ctx_error(C));
  verify(f);
  ft_array *fin[32], *fo[2];
  double expect = 0, mag = 0;
  for (int i = 0; i < n; i++) fin[i] = in[i];
  for (int w = 0; w < na; w++) {
    fin[n + w] = arr(&in[argn[w]]->aval, -1, 1, NULL, 0);
    expect += dot_arrays(gr[w], fin[n + w]);
    mag += fabs(dot_arrays(gr[w], fin[n + w]));
  }
  run(f, n + na, fin, fo);
  double got = ft_get_f64(fo[1], 0);
  ck_assert_msg(fabs(got - expect) <= 1e-12 * fmax(1.0, mag), "%s: jvp %.17g but <grad, v> %.17g", what,
                got, expect);
  free_arrays(2, fo), free_arrays(na, fin + n), free_arrays(na, gr);
  ft_jaxpr_free(f), ft_jaxpr_free(g);
}

/* j is linear in its inputs from nnl on (the first nnl are given in nl):
 * checks <A x, y> == <x, A^T y> on random x, y to 1e-12 relative. */
static inline void lincheck_with(const char *text, int nnl, ft_array *const *nl) {
  ft_jaxpr *j = P(text);
  ft_jaxpr *t = ft_linear_transpose(C, j, nnl);
  ck_assert_msg(t != NULL, "transpose: %s\n%s", ft_ctx_error(C), text);
  verify(t);
  int n = ft_jaxpr_num_inputs(j), no = ft_jaxpr_num_outputs(j);
  ft_array *x[16], *y[16], *ax[16], *aty[16], *tin[32];
  for (int i = 0; i < n; i++) {
    ft_aval av;
    ft_jaxpr_input_aval(j, i, &av);
    x[i] = i < nnl ? nl[i] : arr(&av, -1, 1, NULL, 0);
  }
  run(j, n, x, ax);
  int m = 0;
  for (int i = 0; i < nnl; i++) tin[m++] = x[i];
  for (int k = 0; k < no; k++) {
    ft_aval av;
    ft_jaxpr_output_aval(j, k, &av);
    tin[m++] = y[k] = arr(&av, -1, 1, NULL, 0);
  }
  run(t, m, tin, aty);
  double lhs = 0, rhs = 0, mag = 0;
  for (int k = 0; k < no; k++) lhs += dot_arrays(ax[k], y[k]);
  for (int i = nnl; i < n; i++) {
    double d = dot_arrays(x[i], aty[i - nnl]);
    rhs += d, mag += fabs(d);
  }
  ck_assert_msg(fabs(lhs - rhs) <= 1e-12 * fmax(1.0, mag), "<Ax,y> = %.17g but <x,A^T y> = %.17g\n%s", lhs,
                rhs, text);
  free_arrays(n - nnl, x + nnl), free_arrays(no, y), free_arrays(no, ax), free_arrays(n - nnl, aty);
  ft_jaxpr_free(t), ft_jaxpr_free(j);
}

#endif /* FT_TESTS_AD_UTIL_H */
