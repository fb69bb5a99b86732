/* tests/transforms/test_ad_complex.c: the complex-part primitives (real,
 * imag, conj, complex) and the autodiff of fft (src/transforms/ad_complex.c).
 *
 * Conventions checked here, both JAX's (measured with JAX 0.10.2):
 *  - a cotangent ct of a complex value pairs with a tangent dv as
 *    Re(sum(dv * ct)), without conjugation, so the linearity check of every
 *    transpose rule is <A x, y> == <x, A^T y> with <a, b> = Re(sum(a * b))
 *    (for real arrays the usual dot product);
 *  - grad of a real loss L with respect to z = a + ib is dL/da - i dL/db.
 * Checks:
 *  - exact values of the interpreter, the shape rules' errors, printing
 *    (JAX's printout of a traced function) and parsing back;
 *  - the JVP of each primitive is the primitive on the tangent (bitwise);
 *  - every transpose rule (real, imag, conj, complex, fft of the four
 *    types in 1-3 dimensions, f64 and f32) by the linearity check:
 *    |<Ax,y> - <x,A^T y>| <= 1e-12 max(1, sum |terms|) (f32: 1e-5);
 *  - ft_grad against f64 central differences (h = 1e-6, |g - fd| <= 1e-6 *
 *    max(1, |fd|) per real and imaginary part), for losses through each
 *    primitive and each fft type with complex inputs where the type takes
 *    them;
 *  - exact analytic gradients (grad imag(z) = -i, grad sum(real(rfft(x)))
 *    on 4 points = [3, 0, 1, 0], ...);
 *  - JAX's own gradients (fixtures/ad_complex, tools/oracle/gen_ad_complex.py):
 *    our ft_grad of JAX's printout of the loss matches jax.grad within
 *    |g - g_jax| <= 1e-12 max|g_jax| per element;
 *  - vmap and ft_jit of the new primitives equal per-lane / interpreted
 *    results bit for bit. */
#define AD_SEED 0x9E3779B97F4A7C15ull
#include "ad_util.h"

#ifndef FT_FIXTURES
#define FT_FIXTURES "fixtures"
#endif

/* "{ lambda ; ins. let\n body\n in (outs) }" */
static ft_jaxpr *prog(const char *ins, const char *body, const char *outs) {
  char text[8192];
  snprintf(text, sizeof text, "{ lambda ; %s. let\n%s\n  in (%s) }", ins, body, outs);
  return P(text);
}

/* Random array of av: uniform in [-1, 1) (real and imaginary parts). */
static ft_array *rand_array(const ft_aval *av) {
  ft_array *a = ft_array_new(C, av->dtype, av->rank, av->dims);
  ck_assert_ptr_nonnull(a);
  for (int64_t i = 0; i < ft_aval_size(av); i++) {
    if (ft_dtype_is_complex(av->dtype)) ft_set_c128(a, i, 2 * urand() - 1, 2 * urand() - 1);
    else if (ft_dtype_is_float(av->dtype)) ft_set_f64(a, i, 2 * urand() - 1);
    else ft_set_i64(a, i, (int64_t)(urand() * 3));
  }
  return a;
}

static ft_array *input_array(const ft_jaxpr *j, int i) {
  ft_aval av;
  ft_jaxpr_input_aval(j, i, &av);
  return rand_array(&av);
}

static void expect_c(const ft_array *a, int64_t i, double re, double im) {
  double r, m;
  ft_get_c128(a, i, &r, &m);
  ck_assert_msg(r == re && m == im, "element %lld is %.17g%+.17gi, expected %.17g%+.17gi", (long long)i, r,
                m, re, im);
}

static bool same_bits(const ft_array *a, const ft_array *b) {
  return a->aval.dtype == b->aval.dtype && a->nbytes == b->nbytes && !memcmp(a->data, b->data, a->nbytes);
}

/* ------------------------------------------------------------- primitives */

START_TEST(interpreter_values) {
  ft_jaxpr *j = prog("z:c128[3] x:f64[3] s:f64[]",
                     "    a:f64[3] = real z\n    b:f64[3] = imag z\n"
                     "    c:c128[3] = conj[input_dtype=complex128] z\n"
                     "    d:c128[3] = conj[input_dtype=float64] x\n"
                     "    e:c128[3] = complex x s\n    f:c128[3] = complex 2.5:f64[] x",
                     "a, b, c, d, e, f");
  int64_t n = 3;
  double zv[6] = {1.5, -2.0, -0.0, 3.25, INFINITY, NAN}, xv[3] = {-1.0, 0.0, 7.0}, sv = -4.0;
  ft_array *in[3] = {ft_array_from_data(C, FT_C128, 1, &n, zv), ft_array_from_data(C, FT_F64, 1, &n, xv),
                     ft_array_from_data(C, FT_F64, 0, NULL, &sv)};
  ft_array *o[6];
  run(j, 3, in, o);
  ck_assert_double_eq(ft_get_f64(o[0], 0), 1.5);
  ck_assert(signbit(ft_get_f64(o[0], 1)));
  ck_assert(isinf(ft_get_f64(o[0], 2)));
  ck_assert_double_eq(ft_get_f64(o[1], 0), -2.0);
  ck_assert_double_eq(ft_get_f64(o[1], 1), 3.25);
  ck_assert(isnan(ft_get_f64(o[1], 2)));
  expect_c(o[2], 0, 1.5, 2.0);
  expect_c(o[2], 1, -0.0, -3.25);
  double re, im;
  ft_get_c128(o[2], 1, &re, &im);
  ck_assert(signbit(re));
  for (int i = 0; i < 3; i++) { /* conj of a float: imaginary part +0, as complex(x, 0) */
    ft_get_c128(o[3], i, &re, &im);
    ck_assert(re == xv[i] && im == 0 && !signbit(im));
  }
  expect_c(o[4], 0, -1.0, -4.0);
  expect_c(o[4], 2, 7.0, -4.0);
  expect_c(o[5], 1, 2.5, 0.0);
  expect_c(o[5], 2, 2.5, 7.0);
  free_arrays(6, o), free_arrays(3, in);
  ft_jaxpr_free(j);
  /* complex64: parts round-trip exactly */
  j = prog("z:c64[2]", "    a:f32[2] = real z\n    b:f32[2] = imag z\n    c:c64[2] = complex a b", "c,");
  float zf[4] = {0.1f, -3e38f, 1e-40f, 2.0f};
  int64_t two = 2;
  ft_array *zi = ft_array_from_data(C, FT_C64, 1, &two, zf);
  run(j, 1, &zi, o);
  ck_assert(same_bits(o[0], zi));
  ft_array_free(o[0]), ft_array_free(zi), ft_jaxpr_free(j);
}
END_TEST

static void expect_error(const char *ins, const char *body, const char *want) {
  char text[2048];
  snprintf(text, sizeof text, "{ lambda ; %s. let\n%s\n  in (y,) }", ins, body);
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "test");
  ck_assert_msg(j == NULL, "parsed: %s", text);
  ck_assert_int_eq(ft_ctx_status(C), FT_ERR_TYPE);
  ck_assert_msg(strstr(ft_ctx_error(C), want), "error '%s' lacks '%s'", ft_ctx_error(C), want);
}

START_TEST(shape_rules) {
  expect_error("a:f32[3]", "    y:f32[3] = real a",
               "(real): operand dtype f32 is not accepted (expects a complex type), got f32[3]");
  expect_error("a:f64[3]", "    y:f64[3] = imag a", "(imag): operand dtype f64 is not accepted");
  expect_error("a:i32[3]", "    y:c64[3] = conj[input_dtype=int32] a",
               "(conj): operand dtype i32 is not accepted (expects float32, float64 or a complex type)");
  expect_error("a:c64[3]", "    y:c64[3] = conj[input_dtype=float32] a",
               "(conj): input_dtype=f32 does not match the operand c64[3]");
  expect_error("a:f32[3] b:f64[3]", "    y:c64[3] = complex a b",
               "(complex): operand dtypes f32 and f64 do not match");
  expect_error("a:c64[3] b:c64[3]", "    y:c64[3] = complex a b", "(complex): operand dtype c64 is not accepted");
  /* results: the float type of the complex one and back; broadcasting */
  ft_jaxpr *j = prog("a:f32[] b:f32[2,3]", "    y:c64[2,3] = complex a b\n    r:f32[2,3] = real y", "r,");
  verify(j);
  ft_jaxpr_free(j);
}
END_TEST

/* The printout of a traced function is JAX's (jax.make_jaxpr of the same
 * lax calls, JAX 0.10.2), and it parses back to the same text. */
static int traced(ft_tracer *t, ft_val *const *in, ft_val **out, int max_out, void *user) {
  (void)t, (void)max_out, (void)user;
  ft_val *a = ft_real(in[0]), *b = ft_imag(in[0]);
  out[0] = ft_conj(ft_complex(ft_mul(a, in[1]), b));
  out[1] = ft_conj(in[1]);
  return 2;
}

START_TEST(trace_print_parse) {
  int64_t d[2] = {2, 3};
  ft_aval av[2] = {ft_aval_make(FT_C64, 2, d), ft_aval_make(FT_F32, 2, d)};
  ft_jaxpr *j = ft_trace(C, traced, NULL, 2, av);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  const char *want = "{ lambda ; a:c64[2,3] b:f32[2,3]. let\n"
                     "    c:f32[2,3] = real a\n"
                     "    d:f32[2,3] = imag a\n"
                     "    e:f32[2,3] = mul c b\n"
                     "    f:c64[2,3] = complex e d\n"
                     "    g:c64[2,3] = conj[input_dtype=complex64] f\n"
                     "    h:c64[2,3] = conj[input_dtype=float32] b\n"
                     "  in (g, h) }";
  char *s = ft_jaxpr_print(C, j);
  ck_assert_ptr_nonnull(s);
  ck_assert_str_eq(s, want);
  ft_jaxpr *k = P(s);
  char *s2 = ft_jaxpr_print(C, k);
  ck_assert_str_eq(s2, want);
  ft_free(s), ft_free(s2);
  ft_jaxpr_free(k), ft_jaxpr_free(j);
  /* a weak literal operand takes the other's dtype (lax.complex(x, 2.0)) */
  const char *lit = "{ lambda ; a:f32[3]. let b:c64[3] = complex a 2.0:f32[] in (b,) }";
  j = P(lit);
  s = ft_jaxpr_print(C, j);
  ck_assert_str_eq(s, lit);
  ft_free(s), ft_jaxpr_free(j);
}
END_TEST

/* jvp of a linear primitive is the primitive on the tangent: bitwise. */
START_TEST(jvp_is_the_primitive) {
  ft_jaxpr *j = prog("z:c128[4] x:f64[4] y:f64[4]",
                     "    a:f64[4] = real z\n    b:f64[4] = imag z\n"
                     "    c:c128[4] = conj[input_dtype=complex128] z\n"
                     "    d:c128[4] = conj[input_dtype=float64] x\n    e:c128[4] = complex x y",
                     "a, b, c, d, e");
  ft_jaxpr *f = ft_jvp(C, j);
  ck_assert_msg(f != NULL, "%s", ft_ctx_error(C));
  verify(f);
  ft_array *in[6], *o[10], *ref[5];
  for (int i = 0; i < 6; i++) in[i] = input_array(f, i);
  run(f, 6, in, o);
  run(j, 3, in + 3, ref); /* the primitives applied to the tangents */
  for (int k = 0; k < 5; k++) ck_assert_msg(same_bits(o[5 + k], ref[k]), "tangent %d", k);
  free_arrays(10, o), free_arrays(5, ref), free_arrays(6, in);
  ft_jaxpr_free(f), ft_jaxpr_free(j);
}
END_TEST

/* ------------------------------------------------------------ linearity */

/* <a, b> = Re(sum(a * b)): JAX's pairing of a value and its cotangent. */
static double pair(const ft_array *a, const ft_array *b, double *mag) {
  double s = 0;
  for (int64_t i = 0; i < ft_array_size(a); i++) {
    double ar, ai, br, bi;
    ft_get_c128(a, i, &ar, &ai);
    ft_get_c128(b, i, &br, &bi);
    s += ar * br - ai * bi;
    *mag += fabs(ar * br) + fabs(ai * bi);
  }
  return s;
}

/* j is linear in all of its inputs: checks <A x, y> == <x, A^T y>. */
static void lincheck(const char *ins, const char *body, const char *outs) {
  ft_jaxpr *j = prog(ins, body, outs);
  ft_jaxpr *t = ft_linear_transpose(C, j, 0);
  ck_assert_msg(t != NULL, "transpose: %s\n%s", ft_ctx_error(C), body);
  verify(t);
  int n = ft_jaxpr_num_inputs(j), no = ft_jaxpr_num_outputs(j);
  ft_array *x[8], *y[8], *ax[8], *aty[8];
  for (int i = 0; i < n; i++) x[i] = input_array(j, i);
  run(j, n, x, ax);
  for (int k = 0; k < no; k++) {
    ft_aval av;
    ft_jaxpr_output_aval(j, k, &av);
    y[k] = rand_array(&av);
  }
  run(t, no, y, aty);
  double lhs = 0, rhs = 0, mag = 0;
  for (int k = 0; k < no; k++) lhs += pair(ax[k], y[k], &mag);
  for (int i = 0; i < n; i++) rhs += pair(x[i], aty[i], &mag);
  bool single = strstr(ins, "f32[") || strstr(ins, "c64[");
  double tol = (single ? 1e-5 : 1e-12) * fmax(1.0, mag);
  ck_assert_msg(fabs(lhs - rhs) <= tol, "<Ax,y> = %.17g but <x,A^T y> = %.17g\n%s", lhs, rhs, body);
  free_arrays(n, x), free_arrays(no, y), free_arrays(no, ax), free_arrays(n, aty);
  ft_jaxpr_free(t), ft_jaxpr_free(j);
}

START_TEST(linearity_parts) {
  lincheck("a:c128[2,3]", "    y:f64[2,3] = real a", "y,");
  lincheck("a:c128[2,3]", "    y:f64[2,3] = imag a", "y,");
  lincheck("a:c128[2,3]", "    y:c128[2,3] = conj[input_dtype=complex128] a", "y,");
  lincheck("a:f64[2,3]", "    y:c128[2,3] = conj[input_dtype=float64] a", "y,");
  lincheck("a:f64[2,3] b:f64[2,3]", "    y:c128[2,3] = complex a b", "y,");
  lincheck("a:f64[] b:f64[2,3]", "    y:c128[2,3] = complex a b", "y,");
  lincheck("a:f64[2,1] b:f64[2,3]", "    y:c128[2,3] = complex b a", "y,");
  lincheck("a:c64[5]", "    y:f32[5] = imag a\n    z:f32[5] = real a", "y, z");
  lincheck("a:f32[5] b:f32[5]", "    y:c64[5] = complex a b\n    z:c64[5] = conj[input_dtype=complex64] y", "z,");
}
END_TEST

START_TEST(linearity_fft) {
  /* FFT and IFFT (their own transposes), then RFFT and IRFFT, even and odd
   * last lengths (the mask's Nyquist bin), 1 to 3 dimensions */
  lincheck("a:c128[2,6]", "    y:c128[2,6] = fft[fft_lengths=(6,) fft_type=0] a", "y,");
  lincheck("a:c128[3,4]", "    y:c128[3,4] = fft[fft_lengths=(3, 4) fft_type=1] a", "y,");
  lincheck("a:f64[2,8]", "    y:c128[2,5] = fft[fft_lengths=(8,) fft_type=2] a", "y,");
  lincheck("a:f64[5]", "    y:c128[3] = fft[fft_lengths=(5,) fft_type=2] a", "y,");
  lincheck("a:f64[1]", "    y:c128[1] = fft[fft_lengths=(1,) fft_type=2] a", "y,");
  lincheck("a:f64[2]", "    y:c128[2] = fft[fft_lengths=(2,) fft_type=2] a", "y,");
  lincheck("a:f64[4,6]", "    y:c128[4,4] = fft[fft_lengths=(4, 6) fft_type=2] a", "y,");
  lincheck("a:f64[2,3,5]", "    y:c128[2,3,3] = fft[fft_lengths=(2, 3, 5) fft_type=2] a", "y,");
  lincheck("a:c128[2,5]", "    y:f64[2,8] = fft[fft_lengths=(8,) fft_type=3] a", "y,");
  lincheck("a:c128[4]", "    y:f64[7] = fft[fft_lengths=(7,) fft_type=3] a", "y,");
  lincheck("a:c128[1]", "    y:f64[1] = fft[fft_lengths=(1,) fft_type=3] a", "y,");
  lincheck("a:c128[4,4]", "    y:f64[4,6] = fft[fft_lengths=(4, 6) fft_type=3] a", "y,");
  lincheck("a:c128[3,2,3]", "    y:f64[3,2,4] = fft[fft_lengths=(3, 2, 4) fft_type=3] a", "y,");
  lincheck("a:f32[6]", "    y:c64[4] = fft[fft_lengths=(6,) fft_type=2] a", "y,");
  lincheck("a:c64[4]", "    y:f32[6] = fft[fft_lengths=(6,) fft_type=3] a", "y,");
  /* a chain: rfft, a complex scaling, irfft */
  lincheck("a:f64[2,6]",
           "    b:c128[2,4] = fft[fft_lengths=(6,) fft_type=2] a\n"
           "    c:c128[2,4] = mul b (1.5+0.5j):c128[]\n"
           "    y:f64[2,6] = fft[fft_lengths=(6,) fft_type=3] c", "y,");
}
END_TEST

/* ---------------------------------------------------- numeric gradients */

/* grad of the scalar program j w.r.t. input 0 (other inputs random, fixed),
 * against central differences on each real and imaginary part. */
static void grad_check(ft_jaxpr *j, const char *what) {
  int n = ft_jaxpr_num_inputs(j);
  ft_jaxpr *g = ft_grad(C, j, 0, NULL, false);
  ck_assert_msg(g != NULL, "%s: grad: %s", what, ft_ctx_error(C));
  verify(g);
  ft_array *x[8], *go;
  for (int i = 0; i < n; i++) x[i] = input_array(j, i);
  run(g, n, x, &go);
  bool cpx = ft_dtype_is_complex(x[0]->aval.dtype);
  const double h = 1e-6;
  for (int64_t e = 0; e < ft_array_size(x[0]); e++) {
    double re, im, gre, gim;
    ft_get_c128(x[0], e, &re, &im);
    ft_get_c128(go, e, &gre, &gim);
    for (int part = 0; part < (cpx ? 2 : 1); part++) {
      double v[2];
      for (int s = 0; s < 2; s++) {
        double d = s ? -h : h;
        if (cpx) ft_set_c128(x[0], e, re + (part ? 0 : d), im + (part ? d : 0));
        else ft_set_f64(x[0], e, re + d);
        v[s] = scalar(j, n, x);
      }
      if (cpx) ft_set_c128(x[0], e, re, im);
      else ft_set_f64(x[0], e, re);
      double fd = (v[0] - v[1]) / (2 * h);
      double got = part ? -gim : gre; /* JAX: dL/da - i dL/db */
      ck_assert_msg(fabs(got - fd) <= 1e-6 * fmax(1.0, fabs(fd)),
                    "%s: element %lld %s part: grad %.12g, central difference %.12g", what, (long long)e,
                    part ? "imaginary" : "real", part ? gim : gre, fd);
    }
  }
  ft_array_free(go), free_arrays(n, x);
  ft_jaxpr_free(g), ft_jaxpr_free(j);
}

/* Loss of a complex value v:cT[S]: sum(w1 * real(v) + w2 * imag(v)^2). */
static void spectrum_case(const char *xin, const char *op, const char *yty, const char *wty, const char *what) {
  char ins[256], body[1024];
  snprintf(ins, sizeof ins, "%s w1:%s w2:%s", xin, wty, wty);
  snprintf(body, sizeof body,
           "    v:%s = %s\n    r:%s = real v\n    i:%s = imag v\n    a:%s = mul w1 r\n"
           "    b:%s = integer_pow[y=2] i\n    c:%s = mul w2 b\n    d:%s = add a c\n"
           "    l:f64[] = reduce_sum[axes=(%s) out_sharding=None] d",
           yty, op, wty, wty, wty, wty, wty, wty, strchr(wty, ',') ? "0, 1" : "0,");
  grad_check(prog(ins, body, "l,"), what);
}

/* Loss of a real value: sum(w * v^2 + 0.5 v). */
static void signal_case(const char *xin, const char *op, const char *yty, const char *what) {
  char ins[256], body[1024];
  snprintf(ins, sizeof ins, "%s w:%s", xin, yty);
  snprintf(body, sizeof body,
           "    v:%s = %s\n    a:%s = integer_pow[y=2] v\n    b:%s = mul w a\n    c:%s = mul 0.5:f64[] v\n"
           "    d:%s = add b c\n    l:f64[] = reduce_sum[axes=(%s) out_sharding=None] d",
           yty, op, yty, yty, yty, yty, strchr(yty, ',') ? "0, 1" : "0,");
  grad_check(prog(ins, body, "l,"), what);
}

START_TEST(grad_parts) {
  /* every part primitive in one loss, w.r.t. the complex z and the real x */
  const char *body = "    c:f64[4] = real z\n    d:f64[4] = mul c c\n    e:f64[4] = imag z\n"
                     "    f:f64[4] = mul e x\n    g:c128[4] = conj[input_dtype=complex128] z\n"
                     "    h:c128[4] = complex x d\n    i:c128[4] = mul g h\n    k:f64[4] = real i\n"
                     "    m:f64[4] = imag i\n    n:f64[4] = mul k m\n    o:f64[4] = add n f\n"
                     "    p:c128[4] = conj[input_dtype=float64] x\n    q:c128[4] = mul p z\n"
                     "    r:f64[4] = imag q\n    s:f64[4] = add o r\n"
                     "    l:f64[] = reduce_sum[axes=(0,) out_sharding=None] s";
  grad_check(prog("z:c128[4] x:f64[4]", body, "l,"), "parts (z)");
  grad_check(prog("x:f64[4] z:c128[4]", body, "l,"), "parts (x)");
}
END_TEST

START_TEST(grad_fft) {
  spectrum_case("x:c128[2,6]", "fft[fft_lengths=(6,) fft_type=0] x", "c128[2,6]", "f64[2,6]", "FFT");
  spectrum_case("x:c128[3,4]", "fft[fft_lengths=(3, 4) fft_type=1] x", "c128[3,4]", "f64[3,4]", "IFFT 2-D");
  spectrum_case("x:f64[8]", "fft[fft_lengths=(8,) fft_type=2] x", "c128[5]", "f64[5]", "RFFT even");
  spectrum_case("x:f64[2,7]", "fft[fft_lengths=(7,) fft_type=2] x", "c128[2,4]", "f64[2,4]", "RFFT odd");
  spectrum_case("x:f64[4,6]", "fft[fft_lengths=(4, 6) fft_type=2] x", "c128[4,4]", "f64[4,4]", "RFFT 2-D");
  signal_case("x:c128[5]", "fft[fft_lengths=(8,) fft_type=3] x", "f64[8]", "IRFFT even");
  signal_case("x:c128[2,4]", "fft[fft_lengths=(7,) fft_type=3] x", "f64[2,7]", "IRFFT odd");
  signal_case("x:c128[4,4]", "fft[fft_lengths=(4, 6) fft_type=3] x", "f64[4,6]", "IRFFT 2-D");
}
END_TEST

/* Forward over reverse: the JVP of grad(j) (whose transposed part is made of
 * conj, complex, real, imag and fft) in a random direction of input 0,
 * against central differences of grad(j); the other inputs' tangents are 0. */
static void second_order_check(const char *ins, const char *body, const char *what) {
  ft_jaxpr *j = prog(ins, body, "l,");
  ft_jaxpr *g = ft_grad(C, j, 0, NULL, false);
  ck_assert_msg(g != NULL, "%s: %s", what, ft_ctx_error(C));
  ft_jaxpr *jg = ft_jvp(C, g);
  ck_assert_msg(jg != NULL, "%s: jvp of grad: %s", what, ft_ctx_error(C));
  verify(jg);
  int n = ft_jaxpr_num_inputs(j);
  ft_array *in[8], *o[2], *gp, *gm;
  for (int i = 0; i < n; i++) in[i] = input_array(j, i);
  ft_array *dir = input_array(j, 0);
  for (int i = 0; i < n; i++) {
    in[n + i] = i ? ft_array_new(C, in[i]->aval.dtype, in[i]->aval.rank, in[i]->aval.dims) : dir;
    ck_assert_ptr_nonnull(in[n + i]);
  }
  run(jg, 2 * n, in, o);
  const double h = 1e-6;
  ft_array *x0 = ft_array_clone(C, in[0]);
  for (int s = 0; s < 2; s++) {
    for (int64_t e = 0; e < ft_array_size(x0); e++) {
      double re, im, dr, di;
      ft_get_c128(x0, e, &re, &im);
      ft_get_c128(dir, e, &dr, &di);
      double k = s ? -h : h;
      if (ft_dtype_is_complex(x0->aval.dtype)) ft_set_c128(in[0], e, re + k * dr, im + k * di);
      else ft_set_f64(in[0], e, re + k * dr);
    }
    run(g, n, in, s ? &gm : &gp);
  }
  for (int64_t e = 0; e < ft_array_size(gp); e++) {
    double pr, pi, mr, mi, tr, ti;
    ft_get_c128(gp, e, &pr, &pi);
    ft_get_c128(gm, e, &mr, &mi);
    ft_get_c128(o[1], e, &tr, &ti);
    double fr = (pr - mr) / (2 * h), fi = (pi - mi) / (2 * h);
    ck_assert_msg(fabs(tr - fr) <= 1e-6 * fmax(1.0, fabs(fr)) && fabs(ti - fi) <= 1e-6 * fmax(1.0, fabs(fi)),
                  "%s: element %lld: jvp of grad %.12g%+.12gi, central difference %.12g%+.12gi", what,
                  (long long)e, tr, ti, fr, fi);
  }
  ft_array_free(gp), ft_array_free(gm), ft_array_free(x0), free_arrays(2, o), free_arrays(2 * n, in);
  ft_jaxpr_free(jg), ft_jaxpr_free(g), ft_jaxpr_free(j);
}

START_TEST(second_order) {
  second_order_check("x:f64[2,6] w:f64[2,4]",
                     "    v:c128[2,4] = fft[fft_lengths=(6,) fft_type=2] x\n    r:f64[2,4] = real v\n"
                     "    i:f64[2,4] = imag v\n    a:f64[2,4] = mul r i\n    b:f64[2,4] = mul w a\n"
                     "    l:f64[] = reduce_sum[axes=(0, 1) out_sharding=None] b",
                     "RFFT");
  second_order_check("z:c128[5] w:f64[8]",
                     "    v:f64[8] = fft[fft_lengths=(8,) fft_type=3] z\n    a:f64[8] = integer_pow[y=3] v\n"
                     "    b:f64[8] = mul w a\n    l:f64[] = reduce_sum[axes=(0,) out_sharding=None] b",
                     "IRFFT");
  second_order_check("z:c128[4] x:f64[4]",
                     "    c:c128[4] = conj[input_dtype=complex128] z\n    m:c128[4] = mul c z\n"
                     "    k:c128[4] = complex x x\n    q:c128[4] = mul m k\n    p:c128[4] = mul q z\n"
                     "    r:f64[4] = imag p\n    l:f64[] = reduce_sum[axes=(0,) out_sharding=None] r",
                     "parts");
}
END_TEST

/* --------------------------------------------------------- exact values */

static void grad_values(const char *ins, const char *body, int n_in, ft_array **in, int n, const double *want) {
  ft_jaxpr *j = prog(ins, body, "l,");
  ft_jaxpr *g = ft_grad(C, j, 0, NULL, false);
  ck_assert_msg(g != NULL, "%s", ft_ctx_error(C));
  ft_array *o;
  run(g, n_in, in, &o);
  ck_assert_int_eq(ft_array_size(o), n);
  for (int i = 0; i < n; i++) {
    double re, im;
    ft_get_c128(o, i, &re, &im);
    ck_assert_msg(fabs(re - want[2 * i]) <= 1e-15 && fabs(im - want[2 * i + 1]) <= 1e-15,
                  "%s: element %d is %.17g%+.17gi, expected %g%+gi", body, i, re, im, want[2 * i],
                  want[2 * i + 1]);
  }
  ft_array_free(o), ft_jaxpr_free(g), ft_jaxpr_free(j);
}

START_TEST(exact_gradients) {
  double zv[2] = {1.0, 2.0};
  ft_array *z = ft_array_from_data(C, FT_C128, 0, NULL, zv);
  /* JAX 0.10.2: grad(imag)(1+2j) = -1j, grad(real) = 1, grad(real(conj(z) z)) = 2 conj(z),
   * grad(imag(conj(z))) = 1j */
  grad_values("z:c128[]", "    l:f64[] = imag z", 1, &z, 1, (double[]){0, -1});
  grad_values("z:c128[]", "    l:f64[] = real z", 1, &z, 1, (double[]){1, 0});
  grad_values("z:c128[]", "    c:c128[] = conj[input_dtype=complex128] z\n    m:c128[] = mul c z\n"
              "    l:f64[] = real m", 1, &z, 1, (double[]){2, -4});
  grad_values("z:c128[]", "    c:c128[] = conj[input_dtype=complex128] z\n    l:f64[] = imag c", 1, &z, 1,
              (double[]){0, 1});
  ft_array_free(z);
  double xv[4] = {0, 1, 2, 3};
  int64_t four = 4, three = 3;
  ft_array *x = ft_array_from_data(C, FT_F64, 1, &four, xv);
  /* sum_k Re X_k = sum_j x_j sum_{k<3} cos(pi j k / 2): [3, 0, 1, 0]; the Im part [0, -1, 0, 1] */
  grad_values("x:f64[4]", "    v:c128[3] = fft[fft_lengths=(4,) fft_type=2] x\n    r:f64[3] = real v\n"
              "    l:f64[] = reduce_sum[axes=(0,) out_sharding=None] r", 1, &x, 4,
              (double[]){3, 0, 0, 0, 1, 0, 0, 0});
  grad_values("x:f64[4]", "    v:c128[3] = fft[fft_lengths=(4,) fft_type=2] x\n    r:f64[3] = imag v\n"
              "    l:f64[] = reduce_sum[axes=(0,) out_sharding=None] r", 1, &x, 4,
              (double[]){0, 0, -1, 0, 0, 0, 1, 0});
  ft_array_free(x);
  /* sum(irfft(z, 4)) = Re z_0: the gradient is 1 at DC only */
  double ov[6] = {1, 0, 1, 0, 1, 0};
  ft_array *o = ft_array_from_data(C, FT_C128, 1, &three, ov);
  grad_values("z:c128[3]", "    v:f64[4] = fft[fft_lengths=(4,) fft_type=3] z\n"
              "    l:f64[] = reduce_sum[axes=(0,) out_sharding=None] v", 1, &o, 3,
              (double[]){1, 0, 0, 0, 0, 0});
  ft_array_free(o);
}
END_TEST

/* ------------------------------------------------------- JAX's gradients */

static ft_array *read_npy(const char *name, const char *suffix) {
  char path[1024];
  snprintf(path, sizeof path, "%s/ad_complex/%s.%s.npy", FT_FIXTURES, name, suffix);
  ft_array *a = ft_npy_read(C, path);
  ck_assert_msg(a != NULL, "%s: %s", path, ft_ctx_error(C));
  return a;
}

static void jax_case(const char *name, int n_in) {
  char path[1024];
  snprintf(path, sizeof path, "%s/ad_complex/%s.jaxpr", FT_FIXTURES, name);
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  char text[16384];
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  ck_assert_msg(len < sizeof text - 1, "%s is longer than the test's buffer", path);
  text[len] = 0;
  ft_jaxpr *j = ft_parse(C, text, len, path);
  ck_assert_msg(j != NULL, "%s: %s", path, ft_ctx_error(C));
  ft_jaxpr *g = ft_grad(C, j, 0, NULL, false);
  ck_assert_msg(g != NULL, "%s: grad: %s", name, ft_ctx_error(C));
  ft_array *in[4], *got, *want = read_npy(name, "grad");
  for (int i = 0; i < n_in; i++) {
    char sfx[16];
    snprintf(sfx, sizeof sfx, "in%d", i);
    in[i] = read_npy(name, sfx);
  }
  run(g, n_in, in, &got);
  ck_assert_int_eq(got->aval.dtype, want->aval.dtype);
  ck_assert_int_eq(ft_array_size(got), ft_array_size(want));
  double scale = 0;
  for (int64_t i = 0; i < ft_array_size(want); i++) {
    double re, im;
    ft_get_c128(want, i, &re, &im);
    scale = fmax(scale, hypot(re, im));
  }
  for (int64_t i = 0; i < ft_array_size(want); i++) {
    double gr, gi, wr, wi;
    ft_get_c128(got, i, &gr, &gi);
    ft_get_c128(want, i, &wr, &wi);
    ck_assert_msg(hypot(gr - wr, gi - wi) <= 1e-12 * scale,
                  "%s: element %lld is %.17g%+.17gi, JAX's %.17g%+.17gi", name, (long long)i, gr, gi, wr, wi);
  }
  ft_array_free(got), ft_array_free(want), free_arrays(n_in, in);
  ft_jaxpr_free(g), ft_jaxpr_free(j);
}

START_TEST(matches_jax) {
  jax_case("rfft_even", 3);
  jax_case("rfft_odd", 3);
  jax_case("rfft2", 3);
  jax_case("irfft_even", 2);
  jax_case("irfft_odd", 2);
  jax_case("irfft2", 2);
  jax_case("fft", 3);
  jax_case("ifft", 3);
  jax_case("fft2", 3);
  jax_case("parts", 2);
}
END_TEST

/* ------------------------------------------------------ vmap and the JIT */

START_TEST(vmap_and_jit) {
  const char *body = "    a:f64[3] = real z\n    b:f64[3] = imag z\n    c:c128[3] = complex b x\n"
                     "    d:c128[3] = conj[input_dtype=complex128] c\n    e:c128[3] = conj[input_dtype=float64] a\n"
                     "    f:c128[3] = complex 1.5:f64[] a";
  ft_jaxpr *j = prog("z:c128[3] x:f64[3]", body, "d, e, f");
  /* z batched on axis 1, x unbatched */
  ft_jaxpr *v = ft_vmap(C, j, ft_jaxpr_num_inputs(j), (int[]){1, FT_VMAP_NONE}, ft_jaxpr_num_outputs(j), (int[]){0, 0, 0}, 4);
  ck_assert_msg(v != NULL, "%s", ft_ctx_error(C));
  verify(v);
  ft_array *in[2] = {input_array(v, 0), input_array(v, 1)}, *o[3];
  run(v, 2, in, o);
  for (int lane = 0; lane < 4; lane++) {
    int64_t three = 3;
    double zl[6];
    for (int k = 0; k < 3; k++) ft_get_c128(in[0], k * 4 + lane, &zl[2 * k], &zl[2 * k + 1]);
    ft_array *li[2] = {ft_array_from_data(C, FT_C128, 1, &three, zl), in[1]}, *lo[3];
    run(j, 2, li, lo);
    for (int q = 0; q < 3; q++)
      ck_assert_msg(!memcmp((char *)o[q]->data + lane * lo[q]->nbytes, lo[q]->data, lo[q]->nbytes),
                    "vmap output %d lane %d", q, lane);
    free_arrays(3, lo), ft_array_free(li[0]);
  }
  free_arrays(3, o), free_arrays(2, in);
  /* the JIT compiles them into a loop kernel: bitwise ft_eval */
  ft_fn *fn = ft_jit(C, j, &(ft_jit_options){.size = sizeof(ft_jit_options), .no_disk_cache = true});
  ck_assert_msg(fn != NULL, "%s", ft_ctx_error(C));
  ft_array *ji[2] = {input_array(j, 0), input_array(j, 1)}, *jo[3], *eo[3];
  ck_assert_msg(ft_call(fn, 2, (const ft_array *const *)ji, 3, jo) == FT_OK, "%s", ft_ctx_error(C));
  run(j, 2, ji, eo);
  for (int q = 0; q < 3; q++) ck_assert(same_bits(jo[q], eo[q]));
  free_arrays(3, jo), free_arrays(3, eo), free_arrays(2, ji);
  ft_fn_free(fn), ft_jaxpr_free(v), ft_jaxpr_free(j);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("ad_complex");
  TCase *t = tcase_create("ad_complex");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 120);
  tcase_add_test(t, interpreter_values);
  tcase_add_test(t, shape_rules);
  tcase_add_test(t, trace_print_parse);
  tcase_add_test(t, jvp_is_the_primitive);
  tcase_add_test(t, linearity_parts);
  tcase_add_test(t, linearity_fft);
  tcase_add_test(t, grad_parts);
  tcase_add_test(t, grad_fft);
  tcase_add_test(t, second_order);
  tcase_add_test(t, exact_gradients);
  tcase_add_test(t, matches_jax);
  tcase_add_test(t, vmap_and_jit);
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
