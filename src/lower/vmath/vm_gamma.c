/* The gamma family beyond lgamma: digamma, Hurwitz zeta and polygamma, in
 * double; the f32 functions round the double result once. Special values
 * follow XLA's CPU results as JAX 0.12 returns them (docs/math.md lists
 * them): digamma(±0) = -inf, digamma at negative integers and at -inf is
 * NaN; zeta(x, q) is +inf at x = 1 and at non-positive integer q, NaN for
 * x < 1; polygamma(m, x) is NaN unless m is a non-negative integer.
 * Rules: vm_internal.h (the loops have fixed trip counts, so they inline
 * into kernels as straight-line code). */
#include "lower/vmath/vm_internal.h"

/* sin(pi a) and cos(pi a) for 0 <= a <= 1/2 (a exact), with pi a carried as
 * a double-double so the kernels see their full argument. */
static void vm_sincospi(double a, double *s, double *c)
{
    double b = a <= 0.25 ? a : 0.5 - a; /* exact */
    double pe, ph = vm_two_prod(b, VM_PI_HI, &pe);
    pe += b * VM_PI_LO;
    double sk = vm_sin_kernel(ph, pe), ck = vm_cos_kernel(ph, pe);
    *s = a <= 0.25 ? sk : ck;
    *c = a <= 0.25 ? ck : sk;
}

/* digamma(p) for p > 0 finite: the recurrence psi(p) = psi(p + 1) - 1/p
 * up to p >= 10, then the asymptotic series
 * log t - 1/(2t) - sum B_2k / (2k t^2k), whose next term at t = 10 is
 * below 2^-60 of the result. */
static double vm_digamma_pos(double p)
{
    double t = p, acc = 0.0;
    for (int k = 0; k < 10; k++) {
        int low = t < 10.0;
        acc += low ? 1.0 / t : 0.0;
        t = low ? t + 1.0 : t;
    }
    double q = 1.0 / t, q2 = q * q;
    double ser = q2 * (1.0 / 12 + q2 * (-1.0 / 120 + q2 * (1.0 / 252 + q2 * (-1.0 / 240 +
                 q2 * (1.0 / 132 + q2 * (-691.0 / 32760 + q2 * (1.0 / 12)))))));
    double lo, hi = ft_vm_log_dd(t, &lo);
    return (hi - (0.5 * q + ser - lo)) - acc;
}

double ft_vm_digamma_f64(double x)
{
    double a = vm_fabs(x);
    int fin = a < VM_INF64;
    double xs = fin ? x : 1.0;
    double p = xs > 0.0 ? xs : 1.0 - xs; /* reflection: psi(1 - x) */
    double pos = vm_digamma_pos(p);
    /* x < 0: psi(x) = psi(1 - x) - pi cot(pi x) */
    int big = vm_fabs(xs) >= 0x1p52; /* every double from 2^52 on is an integer */
    double xr = big ? 0.0 : xs;
    double r1 = xr - 2.0 * vm_rint(0.5 * xr); /* exact: |x/2| < 2^51 */
    double r = r1 - vm_rint(r1);              /* exact, in [-1/2, 1/2] */
    double s, c;
    vm_sincospi(vm_fabs(r), &s, &c);
    double cot = vm_copysign(c / (s != 0.0 ? s : 1.0), r);
    double neg = pos - VM_PI_HI * cot;
    double v = xs > 0.0 ? pos : neg;
    v = (xs < 0.0 && (r == 0.0 || big)) ? VM_NAN64 : v; /* poles at negative integers */
    v = xs == 0.0 ? -VM_INF64 : v;
    v = fin ? v : (x > 0.0 ? VM_INF64 : VM_NAN64);
    return x == x ? vm_canon64(v) : VM_NAN64;
}

/* (2j)! / B_2j for j = 1..12: the Euler-Maclaurin correction weights. */
static const double vm_zeta_em[12] = {
    12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
    7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
    -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18,
};

/* Hurwitz zeta(x, q) = sum_k (q + k)^-x: nine terms summed directly, then
 * the Euler-Maclaurin tail at w = q + 9 (integral, half term, and Bernoulli
 * corrections until they stop changing the sum). For q < 0 (defined for
 * integer x) the direct part is longer, so that w >= 9 as well: XLA keeps
 * nine terms there and returns wrong values for q < -9 (trigamma(-100.3) is
 * 15.07, XLA gives -0.0099); this keeps the mathematical value, and gives
 * NaN below q = -4096 rather than loop that long. */
double ft_vm_zeta_f64(double x, double q)
{
    int nan_in = x != x || q != q;
    double qs = nan_in ? 1.0 : q;
    double xs = nan_in ? 2.0 : x;
    int qbig = vm_fabs(qs) >= 0x1p51;
    int qint = qbig || qs == vm_rint(qs);
    int too_neg = qs < -0x1p12;
    double qq = too_neg ? 1.0 : qs;
    int64_t extra = qq < 0.0 ? (int64_t)(-qq) + 1 : 0;
    int64_t n = 9 + extra;
    double s = 0.0;
    for (int64_t k = 0; k < n; k++)
        s += ft_vm_pow_f64(qq + (double)k, -xs);
    double w = qq + (double)n;
    double b = ft_vm_pow_f64(w, -xs);
    s += w * b / (xs - 1.0);
    s += 0.5 * b;
    double a = 1.0, k = 0.0;
    int done = 0;
    for (int i = 0; i < 12; i++) {
        a *= xs + k;
        b /= w;
        double t = a * b / vm_zeta_em[i];
        done |= !(vm_fabs(t) >= 0x1p-53 * vm_fabs(s)); /* a NaN term ends it too */
        s += done ? 0.0 : t;
        k += 1.0;
        a *= xs + k;
        b /= w;
        k += 1.0;
    }
    double v = s;
    v = (qs <= 0.0 && qint) ? VM_INF64 : v;
    v = too_neg && !qint ? VM_NAN64 : v;
    v = qs == -VM_INF64 ? VM_NAN64 : v; /* XLA's zeta(x, -inf) */
    v = xs < 1.0 ? VM_NAN64 : v;
    v = xs == 1.0 ? VM_INF64 : v;
    return nan_in ? VM_NAN64 : vm_canon64(v);
}

/* polygamma(m, x) = (-1)^(m+1) m! zeta(m + 1, x) for integer m >= 1;
 * digamma for m = 0. m! is the product 2 * 3 * ... * m (exact to 22!),
 * +inf from m = 171 on. */
double ft_vm_polygamma_f64(double m, double x)
{
    int ok = m >= 0.0 && m < VM_INF64 && m == vm_rint(m < 0x1p51 ? m : 0.0);
    ok = ok && m < 0x1p51;
    double ms = ok ? m : 1.0;
    double f = 1.0;
    for (int k = 2; k <= 171; k++)
        f *= (double)k <= ms ? (double)k : 1.0;
    double odd = ms - 2.0 * vm_rint(ms * 0.5 - 0.25); /* 1 when m is odd, else 0 */
    double z = ft_vm_zeta_f64(ms + 1.0, x);
    double r = (odd != 0.0 ? f : -f) * z;
    r = x == -VM_INF64 ? VM_INF64 : r; /* XLA's polygamma(m, -inf), m >= 1 */
    double v = ms == 0.0 ? ft_vm_digamma_f64(x) : r;
    return ok ? vm_canon64(v) : VM_NAN64;
}

float ft_vm_digamma_f32(float x)
{
    return vm_canon32((float)ft_vm_digamma_f64((double)x));
}

float ft_vm_zeta_f32(float x, float q)
{
    return vm_canon32((float)ft_vm_zeta_f64((double)x, (double)q));
}

float ft_vm_polygamma_f32(float m, float x)
{
    return vm_canon32((float)ft_vm_polygamma_f64((double)m, (double)x));
}
