/* Complex transcendentals on (re, im) pairs, built from the library's real
 * functions, in double: complex64 rounds each part of the double result
 * once (XLA computes complex64 in single precision; the bound against it
 * is in tests/conformance/conf_compare.c). Branch cuts are JAX's (XLA's):
 * log and sqrt are cut along the negative real axis, the sign of a zero
 * imaginary part choosing the side for log (log(-1 - 0i) = -i pi) while
 * sqrt(-1 - 0i) = +i as XLA gives. Special values with an infinite or NaN
 * part follow XLA's results where the brief formulas below reach them
 * (exp(inf + 0i) = inf, exp(-inf + 0i) = 0, log(0) = -inf, ...); they are
 * listed in docs/math.md. The interpreter calls these; the JIT runs the
 * same calls as interpreter steps, so both give the same bits. */
#include "lower/vmath/vm_internal.h"

#include "lower/vmath/vm_complex.h"

/* max(|a|, |b|) and log|a + ib| without overflow: log m + log1p(r^2)/2. */
static double vm_clog_abs(double a, double b)
{
    double x = vm_fabs(a), y = vm_fabs(b);
    double m = x > y ? x : y, n = x > y ? y : x;
    double ms = (m > 0.0 && m < VM_INF64) ? m : 1.0;
    double r = n / ms;
    double v = ft_vm_log_f64(ms) + 0.5 * ft_vm_log1p_acc_f64(r * r);
    v = m == 0.0 ? -VM_INF64 : v;
    return m == VM_INF64 ? VM_INF64 : v;
}

/* |a + ib| without overflow. */
static double vm_cabs(double a, double b)
{
    double x = vm_fabs(a), y = vm_fabs(b);
    double m = x > y ? x : y, n = x > y ? y : x;
    double ms = (m > 0.0 && m < VM_INF64) ? m : 1.0;
    double r = n / ms;
    double v = ms * __builtin_sqrt(1.0 + r * r);
    v = m == 0.0 ? 0.0 : v;
    return m == VM_INF64 ? VM_INF64 : v;
}

static int vm_cnan(double a, double b)
{
    return a != a || b != b;
}

void ft_vm_cexp_f64(double a, double b, double *re, double *im)
{
    double e = ft_vm_exp_f64(a);
    double c = ft_vm_cos_f64(b), s = ft_vm_sin_f64(b);
    *re = b == 0.0 ? e : e * c;
    *im = b == 0.0 ? b : e * s;
}

void ft_vm_clog_f64(double a, double b, double *re, double *im)
{
    int nan = vm_cnan(a, b);
    *re = nan ? VM_NAN64 : vm_clog_abs(a, b);
    *im = nan ? VM_NAN64 : ft_vm_atan2_f64(b, a);
}

void ft_vm_csqrt_f64(double a, double b, double *re, double *im)
{
    double m = vm_cabs(a, b);
    double t = __builtin_sqrt(0.5 * (vm_fabs(a) + m));
    double ts = t > 0.0 ? t : 1.0;
    double u = 0.5 * vm_fabs(b) / ts; /* |b| / 2t */
    double r = a >= 0.0 ? t : u;
    double i = a >= 0.0 ? 0.5 * b / ts : (b < 0.0 ? -t : t);
    int binf = vm_fabs(b) == VM_INF64;
    r = binf ? VM_INF64 : r;
    i = binf ? b : i;
    r = (a == 0.0 && b == 0.0) ? 0.0 : r;
    i = (a == 0.0 && b == 0.0) ? b : i;
    int nan = vm_cnan(a, b);
    *re = nan ? VM_NAN64 : vm_canon64(r);
    *im = nan ? VM_NAN64 : vm_canon64(i);
}

/* sinh(a + ib) = sinh a cos b + i cosh a sin b */
void ft_vm_csinh_f64(double a, double b, double *re, double *im)
{
    double c = ft_vm_cos_f64(b), s = ft_vm_sin_f64(b);
    *re = b == 0.0 ? ft_vm_sinh_f64(a) : vm_canon64(ft_vm_sinh_f64(a) * c);
    *im = b == 0.0 ? b : vm_canon64(ft_vm_cosh_f64(a) * s);
}

/* cosh(a + ib) = cosh a cos b + i sinh a sin b */
void ft_vm_ccosh_f64(double a, double b, double *re, double *im)
{
    double c = ft_vm_cos_f64(b), s = ft_vm_sin_f64(b);
    *re = b == 0.0 ? ft_vm_cosh_f64(a) : vm_canon64(ft_vm_cosh_f64(a) * c);
    *im = b == 0.0 ? b : vm_canon64(ft_vm_sinh_f64(a) * s);
}

/* sin(a + ib) = sin a cosh b + i cos a sinh b */
void ft_vm_csin_f64(double a, double b, double *re, double *im)
{
    double c = ft_vm_cos_f64(a), s = ft_vm_sin_f64(a);
    *re = a == 0.0 ? a : vm_canon64(s * ft_vm_cosh_f64(b));
    *im = vm_canon64(c * ft_vm_sinh_f64(b));
}

/* cos(a + ib) = cos a cosh b - i sin a sinh b */
void ft_vm_ccos_f64(double a, double b, double *re, double *im)
{
    double c = ft_vm_cos_f64(a), s = ft_vm_sin_f64(a);
    *re = vm_canon64(c * ft_vm_cosh_f64(b));
    *im = a == 0.0 ? -a * vm_copysign(1.0, b) : vm_canon64(-(s * ft_vm_sinh_f64(b)));
}

/* tanh(a + ib) by Kahan's formula: with t = tan b, s = sinh a,
 * beta = 1 + t^2, rho = sqrt(1 + s^2): (beta rho s + i t) / (1 + beta s^2);
 * for |a| > 22 the real part is ±1 within 2^-63 and the imaginary part
 * 4 sin b cos b e^(-2|a|). */
void ft_vm_ctanh_f64(double a, double b, double *re, double *im)
{
    int big = vm_fabs(a) > 22.0;
    double as = big ? 0.0 : a;
    double t = ft_vm_tan_f64(b), s = ft_vm_sinh_f64(as);
    double beta = 1.0 + t * t, rho = __builtin_sqrt(1.0 + s * s);
    double den = 1.0 + beta * s * s;
    double r = beta * rho * s / den, i = t / den;
    double ea = ft_vm_exp_f64(-2.0 * (big ? vm_fabs(a) : 0.0));
    double rb = vm_copysign(1.0, a);
    double ib = 4.0 * ft_vm_sin_f64(b) * ft_vm_cos_f64(b) * ea;
    r = big ? rb : r;
    i = big ? (b == 0.0 ? b : ib) : i;
    r = b == 0.0 ? ft_vm_tanh_f64(a) : r;
    i = b == 0.0 ? b : i;
    *re = vm_canon64(r);
    *im = vm_canon64(i);
}

/* tan z = -i tanh(iz), iz = -b + ia */
void ft_vm_ctan_f64(double a, double b, double *re, double *im)
{
    double u, v;
    ft_vm_ctanh_f64(-b, a, &u, &v);
    *re = v;
    *im = -u;
}

/* log(1 + z): real part log1p(a(2 + a) + b^2)/2 while that cannot
 * overflow, else log|1 + z|; imaginary part atan2(b, 1 + a). */
void ft_vm_clog1p_f64(double a, double b, double *re, double *im)
{
    int small = vm_fabs(a) < 0x1p500 && vm_fabs(b) < 0x1p500;
    double as = small ? a : 0.0, bs = small ? b : 0.0;
    double rs = 0.5 * ft_vm_log1p_acc_f64(as * (2.0 + as) + bs * bs);
    double rl = vm_clog_abs(1.0 + a, b);
    int nan = vm_cnan(a, b);
    *re = nan ? VM_NAN64 : (small ? rs : rl);
    *im = nan ? VM_NAN64 : ft_vm_atan2_f64(b, 1.0 + a);
}

/* exp(z) - 1: real part expm1(a) cos b - 2 sin^2(b/2) (no cancellation
 * near 0), imaginary part e^a sin b. */
void ft_vm_cexpm1_f64(double a, double b, double *re, double *im)
{
    double h = ft_vm_sin_f64(0.5 * b);
    double r = ft_vm_expm1_f64(a) * ft_vm_cos_f64(b) - 2.0 * h * h;
    double i = ft_vm_exp_f64(a) * ft_vm_sin_f64(b);
    *re = b == 0.0 ? ft_vm_expm1_f64(a) : vm_canon64(r);
    *im = b == 0.0 ? b : vm_canon64(i);
}

/* z^w = exp(w log z); 0^w is 1 for w = 0, 0 for real w > 0, else NaN
 * (XLA's). */
/* exp2 z = exp(log(2) z), JAX's lowering: the product with log 2 + 0i
 * written out as XLA's complex multiply (ln2 a - 0 b, ln2 b + 0 a). */
void ft_vm_cexp2_f64(double a, double b, double *re, double *im)
{
    const double ln2 = 0x1.62e42fefa39efp-1;
    ft_vm_cexp_f64(ln2 * a - 0.0 * b, ln2 * b + 0.0 * a, re, im);
}

/* logistic z = 1 / (1 + exp(-z)), JAX's logistic_impl: 1 + e as (1 + re,
 * 0 + im), the reciprocal by Smith's method (no overflow in the
 * denominator; an infinite 1 + e gives 0). */
void ft_vm_clogistic_f64(double a, double b, double *re, double *im)
{
    double er, ei;
    ft_vm_cexp_f64(-a, -b, &er, &ei);
    double c = 1.0 + er, d = 0.0 + ei;
    int cbig = !(vm_fabs(c) < vm_fabs(d)); /* both branches computed, one selected */
    double r1 = d / c, den1 = c + d * r1, r2 = c / d, den2 = c * r2 + d;
    *re = vm_canon64(cbig ? 1.0 / den1 : r2 / den2);
    *im = vm_canon64(cbig ? -r1 / den1 : -1.0 / den2);
}

void ft_vm_cpow_f64(double a, double b, double c, double d, double *re, double *im)
{
    double lr, li;
    ft_vm_clog_f64(a, b, &lr, &li);
    double pr = c * lr - d * li, pi = c * li + d * lr;
    ft_vm_cexp_f64(pr, pi, re, im);
    int zero = a == 0.0 && b == 0.0;
    double zr = (c == 0.0 && d == 0.0) ? 1.0 : ((c > 0.0 && d == 0.0) ? 0.0 : VM_NAN64);
    double zi = (c == 0.0 && d == 0.0) || (c > 0.0 && d == 0.0) ? 0.0 : VM_NAN64;
    *re = vm_canon64(zero ? zr : *re);
    *im = vm_canon64(zero ? zi : *im);
}

/* rsqrt z in XLA's polar form: |z|^(-1/2) (cos(-t/2) + i sin(-t/2)),
 * t = atan2(b, a), so that the sign of a zero imaginary part picks the side
 * of the cut (rsqrt(-2.5 - 0i) = +0.632i, unlike 1 / sqrt) and
 * rsqrt(0) = inf + NaN i as XLA gives. */
void ft_vm_crsqrt_f64(double a, double b, double *re, double *im)
{
    double m = vm_cabs(a, b);
    double r = m == 0.0 ? VM_INF64 : (m == VM_INF64 ? 0.0 : 1.0 / __builtin_sqrt(m));
    double h = -0.5 * ft_vm_atan2_f64(b, a);
    double rr = r * ft_vm_cos_f64(h), ii = r * ft_vm_sin_f64(h);
    int nan = vm_cnan(a, b);
    *re = nan ? VM_NAN64 : vm_canon64(rr);
    *im = nan ? VM_NAN64 : vm_canon64(ii);
}

/* The principal square root with C99's signed zeros (sqrt(-1 - 0i) = -i):
 * Kahan's formulas below take each side of a cut from the sign of a zero
 * part through these roots. */
static void vm_csqrt_signed(double a, double b, double *re, double *im)
{
    ft_vm_csqrt_f64(a, b, re, im);
    *im = b != b ? *im : vm_copysign(*im, b);
}

/* Past this magnitude 1 ± z and the products of the roots below may
 * overflow; there z^2 swamps 1 and the large-argument forms are exact to
 * double precision (relative error ~ |z|^-2). */
#define VM_CBIG 0x1p500

/* asinh(w) for |w| > VM_CBIG: log(2w) on the right half plane, odd. */
static void vm_casinh_big(double a, double b, double *re, double *im)
{
    int neg = a < 0.0 || (a == 0.0 && vm_copysign(1.0, a) < 0.0);
    double x = neg ? -a : a, y = neg ? -b : b;
    double r = 0.69314718055994531 + vm_clog_abs(x, y);
    double i = ft_vm_atan2_f64(y, x);
    *re = neg ? -r : r;
    *im = neg ? -i : i;
}

/* Kahan's algorithms ("Branch cuts for complex elementary functions",
 * 1987): with s1 = sqrt(1 - z), s2 = sqrt(1 + z),
 *   asin z = atan(x / re(s1 s2)) + i asinh(im(conj(s1) s2)),
 *   acos z = 2 atan(re s1 / re s2) + i asinh(im(conj(s2) s1)),
 * and with s1 = sqrt(z - 1), s2 = sqrt(z + 1),
 *   acosh z = asinh(re(conj(s1) s2)) + 2i atan(im s1 / re s2);
 * asinh z = -i asin(iz). The cuts are the real axis beyond ±1 (asin,
 * acos), the imaginary axis beyond ±i (asinh) and the real axis left of
 * 1 (acosh). On a cut XLA ignores the sign of a zero imaginary part
 * (asin(2 - 0i) = asin(2 + 0i), acosh(-2 - 0i) = log(2 + sqrt 3) + i pi),
 * so the signs of the parts are set from b < 0 after Kahan's formulas. */
void ft_vm_casin_f64(double a, double b, double *re, double *im)
{
    int big = vm_fabs(a) > VM_CBIG || vm_fabs(b) > VM_CBIG;
    double as = big ? 0.0 : a, bs = big ? 0.0 : b;
    double s1r, s1i, s2r, s2i;
    vm_csqrt_signed(1.0 - as, -bs, &s1r, &s1i);
    vm_csqrt_signed(1.0 + as, bs, &s2r, &s2i);
    double r = ft_vm_atan_f64(as / (s1r * s2r - s1i * s2i));
    double i = ft_vm_asinh_f64(s1r * s2i - s1i * s2r);
    /* asin z = -i asinh(iz), iz = -b + ia */
    double u, v;
    vm_casinh_big(-b, a, &u, &v);
    r = big ? v : r;
    i = big ? -u : i;
    i = b < 0.0 ? -vm_fabs(i) : vm_fabs(i); /* XLA's: im has the sign of b, +0 for b = -0 */
    int nan = vm_cnan(a, b);
    *re = nan ? VM_NAN64 : vm_canon64(r);
    *im = nan ? VM_NAN64 : vm_canon64(i);
}

void ft_vm_cacos_f64(double a, double b, double *re, double *im)
{
    int big = vm_fabs(a) > VM_CBIG || vm_fabs(b) > VM_CBIG;
    double as = big ? 0.0 : a, bs = big ? 0.0 : b;
    double s1r, s1i, s2r, s2i;
    vm_csqrt_signed(1.0 - as, -bs, &s1r, &s1i);
    vm_csqrt_signed(1.0 + as, bs, &s2r, &s2i);
    double r = 2.0 * ft_vm_atan_f64(s1r / s2r);
    double i = ft_vm_asinh_f64(s2r * s1i - s2i * s1r);
    /* acos z = pi/2 - asin z */
    double u, v;
    vm_casinh_big(-b, a, &u, &v);
    r = big ? 1.5707963267948966 - v : r;
    i = big ? u : i;
    i = b < 0.0 ? vm_fabs(i) : -vm_fabs(i); /* -im asin z */
    int nan = vm_cnan(a, b);
    *re = nan ? VM_NAN64 : vm_canon64(r);
    *im = nan ? VM_NAN64 : vm_canon64(i);
}

void ft_vm_casinh_f64(double a, double b, double *re, double *im)
{
    double u, v;
    ft_vm_casin_f64(-b, a, &u, &v);
    *re = v;
    *im = -u;
}

void ft_vm_cacosh_f64(double a, double b, double *re, double *im)
{
    int big = vm_fabs(a) > VM_CBIG || vm_fabs(b) > VM_CBIG;
    double as = big ? 0.0 : a, bs = big ? 0.0 : b;
    double s1r, s1i, s2r, s2i;
    vm_csqrt_signed(as - 1.0, bs, &s1r, &s1i);
    vm_csqrt_signed(as + 1.0, bs, &s2r, &s2i);
    double r = ft_vm_asinh_f64(s1r * s2r + s1i * s2i);
    double i = 2.0 * ft_vm_atan_f64(s1i / s2r);
    double ib = ft_vm_atan2_f64(b, a); /* arg z: acosh z ~ log 2z */
    r = big ? 0.69314718055994531 + vm_clog_abs(a, b) : r;
    i = big ? ib : i;
    r = vm_fabs(r);
    i = b < 0.0 ? -vm_fabs(i) : vm_fabs(i); /* XLA's: +0 for b = -0 */
    int nan = vm_cnan(a, b);
    *re = nan ? VM_NAN64 : vm_canon64(r);
    *im = nan ? VM_NAN64 : vm_canon64(i);
}

/* atanh z = sign(x) log1p(4|x| / ((1 - |x|)^2 + y^2)) / 4
 *         + i atan2(2y, (1 - x)(1 + x) - y^2) / 2 (Kahan's; the real part
 * taken at |x| keeps log1p's argument away from -1), and for
 * |z| > VM_CBIG x / |z|^2 + i (pi/2) sign y; atan z = -i atanh(iz). */
void ft_vm_catanh_f64(double a, double b, double *re, double *im)
{
    int big = vm_fabs(a) > VM_CBIG || vm_fabs(b) > VM_CBIG;
    double as = big ? 0.0 : vm_fabs(a), bs = big ? 0.0 : b;
    double d = (1.0 - as) * (1.0 - as) + bs * bs;
    double r = vm_copysign(0.25 * ft_vm_log1p_acc_f64(4.0 * as / d), a);
    double i = 0.5 * ft_vm_atan2_f64(2.0 * bs, (1.0 - as) * (1.0 + as) - bs * bs);
    double m = vm_cabs(a, b);
    double ms = (big && m < VM_INF64) ? m : 1.0;
    double rb = m == VM_INF64 ? vm_copysign(0.0, a) : (a / ms) / ms;
    r = big ? rb : r;
    i = big ? vm_copysign(1.5707963267948966, b) : i;
    r = a == 0.0 ? 0.0 : r; /* XLA's: re atanh(-0 + iy) = +0 */
    int nan = vm_cnan(a, b);
    *re = nan ? VM_NAN64 : vm_canon64(r);
    *im = nan ? VM_NAN64 : vm_canon64(i);
}

void ft_vm_catan_f64(double a, double b, double *re, double *im)
{
    double u, v;
    ft_vm_catanh_f64(-b, a, &u, &v);
    *re = v;
    *im = -u;
}
