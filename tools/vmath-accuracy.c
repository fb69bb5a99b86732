/* vmath-accuracy: measures the maximum ulp error of every function of the
 * shared math library (src/lower/vmath) against a __float128 (libquadmath)
 * reference and writes the table docs/math.md is made of.
 *
 *   vmath-accuracy [-n SAMPLES] [-o FILE] [-j JITREPORT]
 *
 * It writes the whole of docs/math.md: the method, the table, and, with -j,
 * the output of `test_vmath_jit --full` (the bit-equality check) verbatim.
 *
 * For each function and dtype it evaluates SAMPLES inputs from each of two
 * sets, with a fixed seed: "bits" (uniformly random bit patterns: every
 * binade, subnormals, huge arguments, NaNs, infinities) and "range" (uniform
 * in the function's typical range, from vmath.def), plus a list of special
 * values. Error is |computed - exact| / ulp(exact) in the target type; a
 * result that should be inf/NaN/finite and is not counts as a special-value
 * failure. */
#include <inttypes.h>
#include <math.h>
#include <quadmath.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"
#include "lower/vmath/vm_complex.h"
#include "lower/vmath/vmath.h"

typedef __float128 quad;

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double rng_unit(void)
{
    return (double)(rng_next() >> 11) * 0x1p-53;
}

/* ---- references --------------------------------------------------------- */

static quad q_logistic(quad x)
{
    return 1 / (1 + expq(-x));
}

static quad q_rsqrt(quad x)
{
    return 1 / sqrtq(x);
}

/* erf_inv by Newton's method on erf (|y| < 1/2) or erfc (else), started from
 * the library's own double result. */
static quad q_erf_inv(quad y)
{
    if (isnanq(y) || fabsq(y) > 1)
        return nanq("");
    if (fabsq(y) == 1)
        return y > 0 ? HUGE_VALQ : -HUGE_VALQ;
    quad a = fabsq(y);
    quad x = ft_vm_erf_inv_f64((double)a);
    if (!(x > 0))
        x = a;
    const quad k = 2 / sqrtq(M_PIq);
    for (int it = 0; it < 6; it++) {
        quad d = k * expq(-x * x);
        if (a < 0.5Q)
            x += (a - erfq(x)) / d;
        else
            x -= ((1 - a) - erfcq(x)) / d;
    }
    return y < 0 ? -x : x;
}

typedef quad (*qfun1)(quad);
typedef quad (*qfun2)(quad, quad);
typedef float (*ffun1)(float);
typedef double (*dfun1)(double);
typedef float (*ffun2)(float, float);
typedef double (*dfun2)(double, double);

static quad q_exp(quad x) { return expq(x); }
static quad q_exp2(quad x) { return exp2q(x); }
static quad q_log(quad x) { return logq(x); }
static quad q_log1p(quad x) { return log1pq(x); }
static quad q_expm1(quad x) { return expm1q(x); }
static quad q_tanh(quad x) { return tanhq(x); }
static quad q_sin(quad x) { return sinq(x); }
static quad q_cos(quad x) { return cosq(x); }
static quad q_tan(quad x) { return tanq(x); }
static quad q_erf(quad x) { return erfq(x); }
static quad q_erfc(quad x) { return erfcq(x); }
static quad q_cbrt(quad x) { return cbrtq(x); }
static quad q_atan(quad x) { return atanq(x); }
static quad q_asin(quad x) { return asinq(x); }
static quad q_acos(quad x) { return acosq(x); }
static quad q_sinh(quad x) { return sinhq(x); }
static quad q_cosh(quad x) { return coshq(x); }
static quad q_asinh(quad x) { return asinhq(x); }
static quad q_acosh(quad x) { return acoshq(x); }
static quad q_atanh(quad x) { return atanhq(x); }
static quad q_lgamma(quad x) { return lgammaq(x); }
static quad q_sqrt(quad x) { return sqrtq(x); }
static quad q_pow(quad x, quad y) { return powq(x, y); }
static quad q_atan2(quad y, quad x) { return atan2q(y, x); }

/* digamma in quad: the recurrence up to t >= 40, then 12 terms of the
 * asymptotic series (next term below 2^-120); x < 0 by reflection with the
 * exact reduction r = x - round(x). */
static quad q_digamma_pos(quad t)
{
    static const quad b[] = {1.0Q / 6, -1.0Q / 30, 1.0Q / 42, -1.0Q / 30, 5.0Q / 66,
        -691.0Q / 2730, 7.0Q / 6, -3617.0Q / 510, 43867.0Q / 798, -174611.0Q / 330,
        854513.0Q / 138, -236364091.0Q / 2730};
    quad acc = 0;
    while (t < 40) {
        acc += 1 / t;
        t += 1;
    }
    quad s = logq(t) - 1 / (2 * t), p = 1;
    for (int k = 1; k <= 12; k++) {
        p /= t * t;
        s -= b[k - 1] / (2 * k) * p;
    }
    return s - acc;
}

static quad q_digamma(quad x)
{
    if (isnanq(x) || x == -HUGE_VALQ)
        return nanq("");
    if (x == HUGE_VALQ)
        return x;
    if (x == 0)
        return -HUGE_VALQ;
    if (x > 0)
        return q_digamma_pos(x);
    quad r = x - roundq(x);
    if (r == 0)
        return nanq("");
    return q_digamma_pos(1 - x) - M_PIq * cosq(M_PIq * r) / sinq(M_PIq * r);
}

/* exp(-|x|) I_nu(|x|) in quad (nu = 0, 1): the power series
 * sum (x^2/4)^k / (k! (k + nu)!) * (|x|/2)^nu for |x| <= 200, else 30 terms of
 * the asymptotic series e^x / sqrt(2 pi x) * sum (-1)^k prod_j (4 nu^2 - (2j-1)^2) / (k! (8x)^k). */
static quad q_bessel_ie(quad x, int nu)
{
    if (isnanq(x))
        return nanq("");
    quad z = fabsq(x), r;
    if (isinfq(z))
        return 0;
    if (z <= 200) {
        quad term = nu ? z / 2 : 1, s = 0, q = z * z / 4;
        for (int k = 0; k < 2000; k++) {
            s += term;
            term *= q / ((k + 1) * (quad)(k + 1 + nu));
            if (term < s * 1e-40Q && k > z)
                break;
        }
        r = s * expq(-z);
    } else {
        quad s = 1, term = 1;
        for (int k = 1; k <= 30; k++) {
            term *= -(4.0Q * nu * nu - (2 * k - 1) * (quad)(2 * k - 1)) / (k * 8 * z);
            s += term;
        }
        r = s / sqrtq(2 * M_PIq * z);
    }
    return nu && x < 0 ? -r : r;
}

static quad q_bessel_i0e(quad x) { return q_bessel_ie(x, 0); }
static quad q_bessel_i1e(quad x) { return q_bessel_ie(x, 1); }

/* Hurwitz zeta in quad: direct sum until q + k >= 60 (at least 30 terms),
 * then Euler-Maclaurin with 14 Bernoulli terms. */
static quad q_zeta(quad x, quad q)
{
    static const quad b[] = {1.0Q / 6, -1.0Q / 30, 1.0Q / 42, -1.0Q / 30, 5.0Q / 66,
        -691.0Q / 2730, 7.0Q / 6, -3617.0Q / 510, 43867.0Q / 798, -174611.0Q / 330,
        854513.0Q / 138, -236364091.0Q / 2730, 8553103.0Q / 6, -23749461029.0Q / 870};
    if (isnanq(x) || isnanq(q) || x < 1)
        return nanq("");
    if (x == 1)
        return HUGE_VALQ;
    if (q <= 0 && q == floorq(q))
        return HUGE_VALQ;
    if (q < -0x1p12Q || isinfq(q) || isinfq(x))
        return nanq(""); /* outside what the library defines (docs/math.md) */
    quad s = 0;
    int k = 0;
    for (; k < 30 || q + k < 60; k++)
        s += powq(q + k, -x);
    quad w = q + k, bw = powq(w, -x);
    s += w * bw / (x - 1) - bw / 2;
    quad fact = 1, poch = x, wp = bw / w; /* poch = x (x+1) ... (x+2j-2); wp = w^(-x-2j+1) */
    for (int j = 1; j <= 14; j++) {
        fact *= (2 * j - 1) * (2 * j);
        s += b[j - 1] / fact * poch * wp;
        poch *= (x + 2 * j - 1) * (x + 2 * j);
        wp /= w * w;
    }
    return s;
}

static quad q_polygamma(quad m, quad x)
{
    if (isnanq(m) || m < 0 || m != floorq(m) || isinfq(m))
        return nanq("");
    if (m == 0)
        return q_digamma(x);
    quad r = expq(lgammaq(m + 1)) * q_zeta(m + 1, x);
    return fmodq(m, 2) == 1 ? r : -r;
}

/* ---- error measure ------------------------------------------------------ */

typedef struct {
    double max_ulp;
    double worst_x, worst_y;
    long special_fail;
    long count;
} stats;

/* Error of `got` against exact `ref`, in ulps of the target type (mant =
 * 24 or 53); returns -1 for a special-value mismatch. */
static double ulp_err(quad ref, double got, int mant)
{
    int emin = mant == 24 ? -126 : -1022;
    double maxv = mant == 24 ? (double)0x1.fffffep127f : 0x1.fffffffffffffp1023;
    int ref_nan = isnanq(ref);
    if (ref_nan || isnan(got))
        return (ref_nan && isnan(got)) ? 0 : -1;
    quad aref = fabsq(ref);
    /* Overflow threshold of the target type: beyond max + ulp/2, inf. */
    quad over = (quad)maxv + ldexpq(1, (mant == 24 ? 127 : 1023) - mant);
    if (aref >= over)
        return (isinf(got) && (got > 0) == (ref > 0)) ? 0 : -1;
    if (isinf(got))
        return -1;
    int e = aref == 0 ? emin : ilogbq(aref);
    if (e < emin)
        e = emin;
    quad ulp = ldexpq(1, e - (mant - 1));
    return (double)(fabsq((quad)got - ref) / ulp);
}

static void account(stats *s, double err, double x, double y)
{
    s->count++;
    if (err < 0) {
        s->special_fail++;
        if (s->special_fail <= 3)
            fprintf(stderr, "  special mismatch at x=%a y=%a\n", x, y);
        return;
    }
    if (err > s->max_ulp) {
        s->max_ulp = err;
        s->worst_x = x;
        s->worst_y = y;
    }
}

/* ---- input sets --------------------------------------------------------- */

static const double specials[] = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 10.0, -10.0,
    0x1p-1074, -0x1p-1074, 0x1p-1022, 0x1p-149, 0x1p-126, 1e-300, 1e300, 88.72, 709.78, -745.1,
    -103.9, 0x1p20, 0x1p24, 0x1p52, 0x1p60, 1e22, 1e300, 3.14159265358979, 1.5707963267948966,
    0.99999999, -0.99999999, 1.00000001, 0.9999999999999999, 1e-8, -1e-8,
    __builtin_inf(), -__builtin_inf(), __builtin_nan("")};
#define NSPECIAL (sizeof specials / sizeof specials[0])

static double rand_bits64(void)
{
    double x;
    uint64_t u = rng_next();
    memcpy(&x, &u, sizeof x);
    return x;
}

static float rand_bits32(void)
{
    float x;
    uint32_t u = (uint32_t)(rng_next() >> 32);
    memcpy(&x, &u, sizeof x);
    return x;
}

/* set 0: specials, set 1: bits, set 2: range [lo, hi] */
static double draw(int set, long i, int is32, double lo, double hi)
{
    if (set == 0)
        return specials[i];
    if (set == 1)
        return is32 ? (double)rand_bits32() : rand_bits64();
    double x = lo + (hi - lo) * rng_unit();
    return is32 ? (double)(float)x : x;
}

typedef struct {
    const char *name;
    qfun1 q;
    ffun1 f;
    dfun1 d;
    double lo, hi;
} unary;

static quad q_lgamma_pos(quad x) { return lgammaq(x); }

static void run_unary(const unary *u, long n, FILE *out)
{
    stats st[2][3];
    memset(st, 0, sizeof st);
    for (int is32 = 1; is32 >= 0; is32--) {
        for (int set = 0; set < 3; set++) {
            long cnt = set == 0 ? (long)NSPECIAL : n;
            rng_state = 0x1234567ULL + (uint64_t)set * 7919 + (uint64_t)is32;
            for (long i = 0; i < cnt; i++) {
                double x = draw(set, i, is32, u->lo, u->hi);
                /* lgamma: ulp error is unbounded at its zeros on x < 0;
                 * those are measured separately below. */
                if ((u->q == q_lgamma || u->q == q_digamma) && set > 0 && x < 0)
                    x = -x;
                quad ref = u->q(is32 ? (quad)(float)x : (quad)x);
                double got = is32 ? (double)u->f((float)x) : u->d(x);
                account(&st[is32][set], ulp_err(ref, got, is32 ? 24 : 53), x, 0);
            }
        }
    }
    fprintf(out, "| %s | %.2f | %.2f | %.2f | %.2f | %ld |\n", u->name,
            st[1][1].max_ulp, st[1][2].max_ulp, st[0][1].max_ulp, st[0][2].max_ulp,
            st[1][0].special_fail + st[1][1].special_fail + st[1][2].special_fail +
            st[0][0].special_fail + st[0][1].special_fail + st[0][2].special_fail);
    fprintf(stderr, "%-9s f32 %.3f (x=%a) %.3f (x=%a) | f64 %.3f (x=%a) %.3f (x=%a)\n", u->name,
            st[1][1].max_ulp, st[1][1].worst_x, st[1][2].max_ulp, st[1][2].worst_x,
            st[0][1].max_ulp, st[0][1].worst_x, st[0][2].max_ulp, st[0][2].worst_x);
}

/* Binary functions: bits set, and two range sets. */
static void run_binary(const char *name, qfun2 q, ffun2 f, dfun2 d, long n, FILE *out)
{
    stats st[2][4];
    memset(st, 0, sizeof st);
    for (int is32 = 1; is32 >= 0; is32--) {
        for (int set = 0; set < 4; set++) {
            long cnt = set == 0 ? (long)(NSPECIAL * NSPECIAL) : n;
            rng_state = 0x7654321ULL + (uint64_t)set * 7919 + (uint64_t)is32;
            for (long i = 0; i < cnt; i++) {
                double x, y;
                if (set == 0) {
                    x = specials[i / NSPECIAL];
                    y = specials[i % NSPECIAL];
                } else if (set == 1) {
                    x = is32 ? (double)rand_bits32() : rand_bits64();
                    y = is32 ? (double)rand_bits32() : rand_bits64();
                } else if (q == q_zeta || q == q_polygamma) {
                    /* zeta: x in [1, 20] (integer in set 3), q in (0, 20] (set 2)
                     * or (-8, 0) (set 3); polygamma: m in 0..6 integer,
                     * x in (0, 20] or (-8, 0) */
                    double u = rng_unit(), v = rng_unit();
                    x = q == q_zeta ? (set == 2 ? 1 + 19 * u : (double)(2 + (int)(10 * u)))
                                    : (double)(int)(7 * u);
                    y = set == 2 ? 20 * v : -8 * v;
                } else if (set == 2) {
                    /* pow: x in (0, 4], y in [-40, 40]; atan2: [-10, 10]^2 */
                    x = q == q_pow ? 4 * rng_unit() : 20 * rng_unit() - 10;
                    y = q == q_pow ? 80 * rng_unit() - 40 : 20 * rng_unit() - 10;
                } else {
                    /* pow near 1 with large |y| (the hard case); atan2 near
                     * the axes. */
                    x = q == q_pow ? 0.9 + 0.2 * rng_unit() : 1e-3 * (rng_unit() - 0.5);
                    y = q == q_pow ? (is32 ? 1800 : 14000) * (rng_unit() - 0.5) : 20 * rng_unit() - 10;
                }
                if (is32) {
                    x = (float)x;
                    y = (float)y;
                }
                quad ref = q(x, y);
                double got = is32 ? (double)f((float)x, (float)y) : d(x, y);
                account(&st[is32][set], ulp_err(ref, got, is32 ? 24 : 53), x, y);
            }
        }
    }
    double f32r = st[1][2].max_ulp > st[1][3].max_ulp ? st[1][2].max_ulp : st[1][3].max_ulp;
    double f64r = st[0][2].max_ulp > st[0][3].max_ulp ? st[0][2].max_ulp : st[0][3].max_ulp;
    long fails = 0;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 4; b++)
            fails += st[a][b].special_fail;
    fprintf(out, "| %s | %.2f | %.2f | %.2f | %.2f | %ld |\n", name, st[1][1].max_ulp, f32r,
            st[0][1].max_ulp, f64r, fails);
    fprintf(stderr, "%-9s f32 %.3f %.3f (x=%a y=%a) | f64 %.3f %.3f (x=%a y=%a)\n", name,
            st[1][1].max_ulp, f32r, st[1][3].worst_x, st[1][3].worst_y, st[0][1].max_ulp, f64r,
            st[0][3].worst_x, st[0][3].worst_y);
}

/* digamma near its zeros (one at 1.4616, one in each (-n-1, -n)): the
 * error in units of eps * max(1, |digamma(x)|), on x in [-50, 3]. */
static void run_digamma_near_zeros(long n, FILE *out)
{
    double worst[2] = {0, 0};
    for (int is32 = 0; is32 < 2; is32++) {
        rng_state = 0xfedcbaULL + (uint64_t)is32;
        for (long i = 0; i < n; i++) {
            double x = 3 - 53 * rng_unit();
            if (is32)
                x = (float)x;
            quad ref = q_digamma(x);
            double got = is32 ? (double)ft_vm_digamma_f32((float)x) : ft_vm_digamma_f64(x);
            if (isnanq(ref) || isnan(got))
                continue;
            quad unit = is32 ? 0x1p-23Q : 0x1p-52Q;
            quad scale = fabsq(ref) > 1 ? fabsq(ref) : 1;
            double e = (double)(fabsq((quad)got - ref) / (unit * scale));
            if (e > worst[is32])
                worst[is32] = e;
        }
    }
    fprintf(out, "\ndigamma on x in [-50, 3]: max |error| / (eps * max(1, |digamma(x)|)) = "
            "%.2f (f32), %.2f (f64). Its rows above use |x|; relative error is unbounded next "
            "to its zeros (1.4616... and one in each (-n-1, -n)), as for XLA's.\n", worst[1], worst[0]);
}

/* lgamma for x < 0: absolute error in units of 2^-52 (f64) / 2^-23 (f32),
 * the meaningful measure next to its zeros. */
static void run_lgamma_neg(long n, FILE *out)
{
    double worst[2] = {0, 0};
    for (int is32 = 0; is32 < 2; is32++) {
        rng_state = 0xabcdefULL + (uint64_t)is32;
        for (long i = 0; i < n; i++) {
            double x = -50 * rng_unit();
            if (is32)
                x = (float)x;
            quad ref = lgammaq(x);
            double got = is32 ? (double)ft_vm_lgamma_f32((float)x) : ft_vm_lgamma_f64(x);
            if (isinfq(ref) || isinf(got))
                continue;
            quad unit = is32 ? 0x1p-23Q : 0x1p-52Q;
            quad scale = fabsq(ref) > 1 ? fabsq(ref) : 1;
            double e = (double)(fabsq((quad)got - ref) / (unit * scale));
            if (e > worst[is32])
                worst[is32] = e;
        }
    }
    fprintf(out, "\nlgamma on x in [-50, 0): max |error| / (eps * max(1, |lgamma(x)|)) = "
            "%.2f (f32), %.2f (f64). Relative error is unbounded next to the zeros of lgamma "
            "there (as for every libm).\n", worst[1], worst[0]);
}

/* The complex inverse trigonometric and hyperbolic functions
 * (vm_complex.c) against libquadmath's C99 ones: max over the parts of
 * |got - exact| / (eps * max(|re exact|, |im exact|)), complex64 being the
 * double result rounded part by part. No exact zero part is drawn (on a
 * cut XLA ignores the sign of a zero, C99 does not). */
typedef void (*cfn64)(double, double, double *, double *);
typedef __complex128 (*cfnq)(__complex128);

static double cpx_err(cfn64 f, cfnq q, double a, double b, int is32)
{
    double re, im;
    f(a, b, &re, &im);
    if (is32)
        re = (float)re, im = (float)im;
    __complex128 z;
    __real__ z = a;
    __imag__ z = b;
    __complex128 w = q(z);
    quad wr = crealq(w), wi = cimagq(w);
    if (isnanq(wr) || isnanq(wi) || isinfq(wr) || isinfq(wi))
        return 0;
    quad scale = fmaxq(fabsq(wr), fabsq(wi));
    quad unit = is32 ? 0x1p-23Q : 0x1p-52Q;
    if (scale == 0)
        return 0;
    quad e = fmaxq(fabsq((quad)re - wr), fabsq((quad)im - wi)) / (unit * scale);
    return (double)e;
}

static void run_complex_inverse(long n, FILE *out)
{
    static const struct {
        const char *name;
        cfn64 f;
        cfnq q;
    } fs[] = {{"asin", ft_vm_casin_f64, casinq},    {"acos", ft_vm_cacos_f64, cacosq},
              {"atan", ft_vm_catan_f64, catanq},    {"asinh", ft_vm_casinh_f64, casinhq},
              {"acosh", ft_vm_cacosh_f64, cacoshq}, {"atanh", ft_vm_catanh_f64, catanhq}};
    fprintf(out, "\n## Complex inverse trigonometric and hyperbolic functions\n\n"
            "`vm_complex.c` (Kahan's algorithms in double; complex64 rounds each part of the "
            "double result once) against libquadmath's `casinq`... : max over %ld inputs per "
            "cell of |result - exact| / (eps * max(|re exact|, |im exact|)) over both parts. "
            "**range**: both parts uniform in [-4, 4]; **cuts**: within 2^-20 of the cuts "
            "(the real axis beyond ±1, the imaginary axis beyond ±i; both sides, never on "
            "them); **wide**: modulus log-uniform in [2^-60, 2^60], any angle.\n\n", n);
    fprintf(out, "| function | c64 range | c64 cuts | c64 wide | c128 range | c128 cuts | c128 wide |\n");
    fprintf(out, "|---|---|---|---|---|---|---|\n");
    for (size_t k = 0; k < sizeof fs / sizeof fs[0]; k++) {
        double worst[2][3] = {{0, 0, 0}, {0, 0, 0}};
        for (int is32 = 0; is32 < 2; is32++)
            for (int set = 0; set < 3; set++) {
                rng_state = 0x51ab1eULL + (uint64_t)set * 7919 + (uint64_t)is32;
                for (long i = 0; i < n; i++) {
                    double a, b;
                    if (set == 0) {
                        a = -4 + 8 * rng_unit();
                        b = -4 + 8 * rng_unit();
                    } else if (set == 1) {
                        double along = 1 + 3 * rng_unit(), off = 0x1p-20 * (0.001 + rng_unit());
                        along = rng_unit() < 0.5 ? -along : along;
                        off = rng_unit() < 0.5 ? -off : off;
                        int imag_cut = rng_unit() < 0.5;
                        a = imag_cut ? off : along;
                        b = imag_cut ? along : off;
                    } else {
                        double m = exp2(-60 + 120 * rng_unit()), t = 6.283185307179586 * rng_unit();
                        a = m * cos(t);
                        b = m * sin(t);
                    }
                    if (is32)
                        a = (float)a, b = (float)b;
                    if (a == 0 || b == 0)
                        continue;
                    double e = cpx_err(fs[k].f, fs[k].q, a, b, is32);
                    if (e > worst[is32][set])
                        worst[is32][set] = e;
                }
            }
        fprintf(out, "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", fs[k].name, worst[1][0],
                worst[1][1], worst[1][2], worst[0][0], worst[0][1], worst[0][2]);
    }
}

int main(int argc, char **argv)
{
    long n = 1L << 18;
    const char *path = NULL, *jit_report = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            n = strtol(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "-o") && i + 1 < argc)
            path = argv[++i];
        else if (!strcmp(argv[i], "-j") && i + 1 < argc)
            jit_report = argv[++i];
        else {
            fprintf(stderr, "usage: vmath-accuracy [-n SAMPLES] [-o FILE] [-j JITREPORT]\n");
            return 2;
        }
    }
    /* -o FILE: built in memory, written whole through ft_file_write */
    char *mem = NULL;
    size_t mem_len = 0;
    FILE *out = path ? open_memstream(&mem, &mem_len) : stdout;
    if (!out) {
        perror(path);
        return 1;
    }
    static const unary un[] = {
#define q_erf_inv q_erf_inv
#define VM_UNARY(name, lo, hi) {#name, q_##name, ft_vm_##name##_f32, ft_vm_##name##_f64, lo, hi},
#define VM_BINARY(name)
#define VM_TERNARY(name)
#include "lower/vmath/vmath.def"
#undef VM_UNARY
#undef VM_BINARY
#undef VM_TERNARY
    };
    (void)q_lgamma_pos;
    (void)q_digamma;
    fprintf(out,
        "# The shared math library: accuracy and bit equality\n\n"
        "Generated by `tools/vmath-accuracy` (do not edit by hand). Command:\n\n"
        "    build/tools/vmath-accuracy -n %ld -o docs/math.md%s%s\n\n"
        "`src/lower/vmath` holds one C source of elementwise functions, compiled by the C "
        "compiler into the library (the interpreter) and by clang-19 into LLVM bitcode that "
        "JIT modules link and inline; both with `-ffp-contract=off`, no fast-math, no libm "
        "calls, so the two engines give the same bits. A fused multiply-add appears only "
        "where the source writes one (`vm_fmaf`: f32 exp, tanh, logistic, and f32 log, log1p, "
        "erf_inv, which are XLA's algorithms, bitwise JAX's on CPU); fma is correctly "
        "rounded, so it gives the same bits as the instruction in JIT code, in the library's "
        "FMA clone and through libm. Every NaN result is the canonical "
        "positive quiet NaN. f32 exp, exp2, log, log1p, expm1, tanh, logistic, erf_inv, sqrt, "
        "rsqrt are "
        "computed in float; the other f32 functions compute in double through the f64 "
        "function and round once more.\n\n"
        "## Maximum error in ulps\n\n"
        "Reference: `__float128` (libquadmath; erf_inv by Newton steps on erfq/erfcq). "
        "Error = |result - exact| / ulp(exact) in the target type (subnormal ulp below the "
        "normal range). Each cell is the maximum over %ld inputs with a fixed seed: "
        "**bits** = uniformly random bit patterns (all binades, subnormals, huge arguments, "
        "NaN, inf), **range** = uniform in the function's typical range from "
        "`src/lower/vmath/vmath.def` (pow: x in (0,4], y in [-40,40], and x in [0.9,1.1] with "
        "|y| up to 900 (f32) / 7000 (f64); atan2: [-10,10]^2 and x near 0). "
        "Special-value failures counts results that should be inf/NaN/finite and are not, over "
        "both sets and a list of special values (for pow and atan2, all pairs of them). "
        "lgamma's rows use |x| (its x < 0 accuracy is stated below the table).\n\n",
        n, jit_report ? " -j " : "", jit_report ? jit_report : "", n);
    fprintf(out, "| function | f32 bits | f32 range | f64 bits | f64 range | special-value failures |\n");
    fprintf(out, "|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < sizeof un / sizeof un[0]; i++) {
        if (argc > 0 && getenv("VMATH_ONLY") && strcmp(getenv("VMATH_ONLY"), un[i].name))
            continue;
        run_unary(&un[i], n, out);
        fflush(out);
    }
    if (!getenv("VMATH_ONLY") || !strcmp(getenv("VMATH_ONLY"), "pow"))
        run_binary("pow", q_pow, ft_vm_pow_f32, ft_vm_pow_f64, n, out);
    if (!getenv("VMATH_ONLY") || !strcmp(getenv("VMATH_ONLY"), "atan2"))
        run_binary("atan2", q_atan2, ft_vm_atan2_f32, ft_vm_atan2_f64, n, out);
    if (!getenv("VMATH_ONLY") || !strcmp(getenv("VMATH_ONLY"), "digamma"))
        run_digamma_near_zeros(n, out);
    if (!getenv("VMATH_ONLY") || !strcmp(getenv("VMATH_ONLY"), "zeta"))
        run_binary("zeta", q_zeta, ft_vm_zeta_f32, ft_vm_zeta_f64, n, out);
    if (!getenv("VMATH_ONLY") || !strcmp(getenv("VMATH_ONLY"), "polygamma"))
        run_binary("polygamma", q_polygamma, ft_vm_polygamma_f32, ft_vm_polygamma_f64, n, out);
    if (!getenv("VMATH_ONLY") || !strcmp(getenv("VMATH_ONLY"), "lgamma"))
        run_lgamma_neg(n, out);
    if (!getenv("VMATH_ONLY") || !strcmp(getenv("VMATH_ONLY"), "complex"))
        run_complex_inverse(n, out);
    if (jit_report) {
        FILE *jr = fopen(jit_report, "r");
        if (!jr) {
            perror(jit_report);
            return 1;
        }
        fprintf(out, "\n## Interpreter vs JIT, bitwise\n\n"
                "Output of `build/tests/vmath/test_vmath_jit --full 24`: per function and dtype, "
                "2^24 inputs (16 chunks of 2^20: specials, random bit patterns, the typical "
                "range, [-4, 4], small integers), each run through the JIT loop kernel "
                "(bitcode linked, internal + alwaysinline, `default<O2>` with the host target "
                "machine, ORC LLJIT) on the whole array, on a misaligned odd-length tail and on "
                "every length 0..45, and compared bit for bit with the library functions. "
                "\"loop vectorized\" means the optimized kernel contains vector operations on "
                "the element type.\n\n");
        char line[512];
        while (fgets(line, sizeof line, jr))
            fputs(line, out);
        fclose(jr);
    }
    if (path) {
        fclose(out);
        ft_ctx *ctx = ft_ctx_new(NULL);
        ft_status st = ctx ? ft_file_write(ctx, "vmath-accuracy", path, mem, mem_len) : FT_ERR_NOMEM;
        if (st != FT_OK) fprintf(stderr, "%s\n", ctx ? ft_ctx_error(ctx) : "vmath-accuracy: out of memory");
        ft_ctx_free(ctx);
        free(mem);
        if (st != FT_OK) return 1;
    }
    return 0;
}
