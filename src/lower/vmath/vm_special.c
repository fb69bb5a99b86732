/* Double-precision inverse trigonometric and hyperbolic functions, erf,
 * erfc, erf_inv and lgamma of the shared math library. Piecewise
 * polynomials come from vm_coef.h (gen_coef.py); a piece is chosen by
 * counting the bounds below x, so there is no branch. Rules: vm_internal.h. */
#include "lower/vmath/vm_internal.h"

/* log1p(u) for u > -1 finite: log of the exact double-double 1 + u. */
static double vm_log1p_core(double u)
{
    double e, s = vm_two_sum(1.0, u, &e);
    double lo, hi = ft_vm_log_dd(s, &lo);
    return hi + (lo + e / s);
}

/* ---- atan, atan2 -------------------------------------------------------- */

/* atan(t) for t in [0, 1]. */
static double vm_atan01(double t)
{
    double z = t * t;
    double small = t + t * z * vmc_atan(z);
    int i = (t >= vmc_atanp_bound[1]) + (t >= vmc_atanp_bound[2]) + (t >= vmc_atanp_bound[3]);
    double piece = vmc_atanp(i, t - vmc_atanp_centre[i]);
    return t < 0.5 ? small : piece;
}

double ft_vm_atan_f64(double x)
{
    double a = vm_fabs(x);
    a = a == a ? a : 0.0;
    int inv = a > 1.0;
    double v = vm_atan01(inv ? 1.0 / a : a);
    v = inv ? VM_PIO2_HI - (v - VM_PIO2_LO) : v;
    return x == x ? vm_copysign(v, x) : VM_NAN64;
}

double ft_vm_atan2_f64(double y, double x)
{
    double ay = vm_fabs(y), ax = vm_fabs(x);
    int xneg = (int)(asu64(x) >> 63);
    double mx = ay > ax ? ay : ax, mn = ay > ax ? ax : ay;
    double t = mn / mx;
    t = t == t ? t : 0.0; /* 0/0, inf/inf: handled below */
    double v = vm_atan01(t);
    v = ay > ax ? VM_PIO2_HI - (v - VM_PIO2_LO) : v;
    v = xneg ? VM_PI_HI - (v - VM_PI_LO) : v;
    double both_inf = xneg ? VM_3PIO4 : VM_PIO4_HI;
    v = (ay == VM_INF64 && ax == VM_INF64) ? both_inf : v;
    v = vm_copysign(v, y);
    return (x != x || y != y) ? VM_NAN64 : v;
}

/* ---- asin, acos --------------------------------------------------------- */

/* For 1/2 < a <= 1: s + sl = sqrt((1-a)/2) as a double-double and the tail
 * of asin(s) beyond s, so 2*asin(s) keeps about 2^-60 relative accuracy. */
static double vm_asin_half(double a, double *tail)
{
    double w = (1.0 - a) * 0.5; /* exact */
    double s = __builtin_sqrt(w);
    double e, ss = vm_two_prod(s, s, &e);
    double sl = s > 0.0 ? ((w - ss) - e) / (2.0 * s) : 0.0;
    *tail = sl + s * w * vmc_asin(w);
    return s;
}

double ft_vm_asin_f64(double x)
{
    double a = vm_fabs(x);
    int ok = a <= 1.0;
    a = ok ? a : 0.0;
    double z = a * a;
    double small = a + a * z * vmc_asin(z);
    double tail, s = vm_asin_half(a > 0.5 ? a : 1.0, &tail);
    double big = VM_PIO2_HI - (2.0 * s + (2.0 * tail - VM_PIO2_LO));
    double v = a <= 0.5 ? small : big;
    return ok ? vm_copysign(v, x) : VM_NAN64;
}

double ft_vm_acos_f64(double x)
{
    double a = vm_fabs(x);
    int ok = a <= 1.0;
    double xs = ok ? x : 0.0;
    a = ok ? a : 0.0;
    double z = xs * xs;
    double as = xs + xs * z * vmc_asin(z);
    double mid = VM_PIO2_HI - (as - VM_PIO2_LO);
    double tail, s = vm_asin_half(a > 0.5 ? a : 1.0, &tail);
    double pos = 2.0 * s + 2.0 * tail;
    double neg = (VM_PI_HI - 2.0 * s) - (2.0 * tail - VM_PI_LO);
    double v = a <= 0.5 ? mid : (xs > 0.0 ? pos : neg);
    return ok ? v : VM_NAN64;
}

/* ---- asinh, acosh, atanh ------------------------------------------------ */

double ft_vm_asinh_f64(double x)
{
    double a = vm_fabs(x);
    int fin = a < VM_INF64;
    a = fin ? a : 1.0;
    double a2 = a < 0x1p28 ? a * a : 0.0;
    double u = a + a2 / (1.0 + __builtin_sqrt(1.0 + a2));
    double small = vm_log1p_core(a < 2.0 ? u : 0.0);
    double arg = a < 0x1p28 ? a + __builtin_sqrt(a2 + 1.0) : a;
    double lo, hi = ft_vm_log_dd(arg, &lo);
    double big = a < 0x1p28 ? hi + lo : (hi + VM_LN2_HI) + (lo + VM_LN2_LO);
    double v = a < 2.0 ? small : big;
    v = fin ? v : VM_INF64;
    v = x == 0.0 ? x : vm_copysign(v, x);
    return x == x ? v : VM_NAN64;
}

double ft_vm_acosh_f64(double x)
{
    int ok = x >= 1.0 && x < VM_INF64;
    double a = ok ? x : 1.0;
    double t = a - 1.0;
    double small = vm_log1p_core(a < 2.0 ? t + __builtin_sqrt(2.0 * t + t * t) : 0.0);
    double arg = a < 0x1p28 ? a + __builtin_sqrt(a * a - 1.0) : a;
    double lo, hi = ft_vm_log_dd(arg, &lo);
    double big = a < 0x1p28 ? hi + lo : (hi + VM_LN2_HI) + (lo + VM_LN2_LO);
    double v = a < 2.0 ? small : big;
    v = x == VM_INF64 ? VM_INF64 : v;
    return (x >= 1.0) ? v : VM_NAN64;
}

double ft_vm_atanh_f64(double x)
{
    double a = vm_fabs(x);
    int ok = a < 1.0;
    a = ok ? a : 0.0;
    double d = 1.0 - a;
    double u = a < 0.5 ? 2.0 * a + 2.0 * a * a / d : 2.0 * a / d;
    double v = 0.5 * vm_log1p_core(u);
    v = vm_fabs(x) == 1.0 ? VM_INF64 : v;
    v = x == 0.0 ? x : vm_copysign(v, x);
    return (ok || vm_fabs(x) == 1.0) ? v : VM_NAN64;
}

/* ---- erf, erfc ---------------------------------------------------------- */

/* erfc(a) for 0.5 <= a <= 28: exp(-a^2) (with a^2 exact) times a smooth
 * piecewise polynomial. */
static double vm_erfc_pos(double a)
{
    int i = 0;
    for (int k = 1; k < 12; k++)
        i += a >= vmc_erfcg_bound[k];
    double g = vmc_erfcg(i, a - vmc_erfcg_centre[i]);
    double sl, sq = vm_two_prod(a, a, &sl);
    return ft_vm_exp_core(-sq, -sl, 0) * g;
}

double ft_vm_erf_f64(double x)
{
    double a = vm_fabs(x);
    a = a == a ? a : 0.0;
    double small = a * vmc_erf(a * a < 1.0 ? a * a : 1.0);
    double big = 1.0 - vm_erfc_pos(a < 1.0 ? 1.0 : (a > 7.0 ? 7.0 : a));
    double v = a < 1.0 ? small : big;
    return x == x ? vm_copysign(v, x) : VM_NAN64;
}

double ft_vm_erfc_f64(double x)
{
    double xs = x == x ? x : 0.0;
    double a = vm_fabs(xs);
    double ac = a < 0.5 ? 0.5 : (a > 28.0 ? 28.0 : a);
    double e = vm_erfc_pos(ac);
    double xm = a < 1.0 ? xs : 0.0;
    double mid = 1.0 - xm * vmc_erf(xm * xm);
    double v = xs >= 0.5 ? e : (xs > -1.0 ? mid : 2.0 - e);
    return x == x ? v : VM_NAN64;
}

/* ---- erf_inv ------------------------------------------------------------ */

/* XLA's f64 erf_inv on CPU (its chlo expansion): Giles' double-precision
 * approximation (M. Giles, "Approximating the erfinv function", GPU
 * Computing Gems, 2011) on w = -log1p(-y^2) with XLA's log1p: a polynomial
 * in w - 3.125 (w < 6.25, 23 coefficients), in sqrt(w) - 3.25 (w < 16, 19)
 * or in sqrt(w) - 5 (17), Horner's rule with fused multiply-adds (LLVM
 * contracts XLA's c + p*z), the coefficient of each step selected by w as
 * XLA selects it. The coefficients are the constants of XLA's expansion
 * (Giles' published ones), written in hex. Checked bitwise against
 * jax.lax.erf_inv in f64 (docs/random.md), so f64 jax.random.normal is
 * bitwise JAX's where XLA's f64 log (glibc's) is correctly rounded. */
VM_FMA_CLONES double ft_vm_erf_inv_f64(double y)
{
    static const double a[23] = {
        -0x1.135d2e746e627p-68, -0x1.8ddf93324d327p-63, 0x1.7b83eef0b7c9fp-60,
        0x1.9ba72cd589b91p-57, -0x1.33689090a6b96p-53, 0x1.82e11898132e0p-56,
        0x1.de4acfd9e26bap-48, -0x1.6d33eed66c487p-45, -0x1.6f2167040d8e2p-44,
        0x1.72a22c2d77e20p-39, -0x1.c8859c4e5c0afp-37, -0x1.dc583d118a561p-35,
        0x1.20f47ccf46b3cp-30, -0x1.1a9e38dc84d60p-28, -0x1.f36cd6d3d46a9p-26,
        0x1.c6b4f5d03b787p-22, -0x1.6e8a5434ae8a2p-20, -0x1.d1d1f7b8736f6p-17,
        0x1.879c2a212f024p-13, -0x1.845769484fca8p-11, -0x1.8b6c33114f909p-8,
        0x1.ebd80d9b13e28p-3, 0x1.a755e7c99ae86p+0};
    static const double b[19] = {
        0x1.3040f87dbd932p-29, 0x1.85cbe52878635p-24, -0x1.2777453dd3955p-22,
        0x1.395abcd554c6cp-26, 0x1.936388a3790adp-20, -0x1.0d5db812b5083p-18,
        0x1.8860cd5d652f6p-19, 0x1.a29a0cacdfb23p-17, -0x1.8cef1f80281f2p-15,
        0x1.1e684d0b9188ap-14, 0x1.932cd54c8a222p-16, -0x1.7448a89ef8aa3p-12,
        0x1.f3cc55ad40c25p-11, -0x1.ba924132f38b1p-10, 0x1.468eeca533cf8p-9,
        -0x1.ebadabb891bbdp-9, 0x1.5ffcfe5b76afcp-8, 0x1.0158a6d641d39p+0,
        0x1.8abcc380d5a48p+1};
    static const double c[17] = {
        -0x1.dcec3a7785389p-36, -0x1.18feec0e38727p-32, 0x1.9e6bf2dda45e3p-30,
        -0x1.0468fb24e2f5fp-28, 0x1.05ac6a8fba182p-27, -0x1.0102e495fb9c0p-26,
        0x1.f4c20e1334af8p-26, -0x1.22d220fdf9c3ep-24, 0x1.ebc8bb824cb54p-23,
        -0x1.0a8d40ea372ccp-20, 0x1.2fbd29d093d2bp-18, -0x1.4a3497e1e0facp-16,
        0x1.3ebf4eb00938fp-14, -0x1.c2f36a8fc5d53p-13, -0x1.22ea5df04047cp-13,
        0x1.02a30d1fba0dcp+0, 0x1.3664ddd1ad7fbp+2};
    double w = -ft_vm_log1p_f64(y * -y);
    int lt6 = w < 6.25, lt16 = w < 16.0;
    double s = __builtin_sqrt(lt6 ? 6.25 : w); /* w >= 6.25 (or NaN) when used */
    double z = lt6 ? w - 3.125 : s - (lt16 ? 3.25 : 5.0);
    double p = lt16 ? (lt6 ? a[0] : b[0]) : c[0];
    for (int i = 1; i < 17; i++)
        p = vm_fma(p, z, lt16 ? (lt6 ? a[i] : b[i]) : c[i]);
    for (int i = 17; i < 19; i++)
        p = lt16 ? vm_fma(p, z, lt6 ? a[i] : b[i]) : p;
    for (int i = 19; i < 23; i++)
        p = lt6 ? vm_fma(p, z, a[i]) : p;
    double v = p * y;
    return vm_canon64(vm_fabs(y) == 1.0 ? y * VM_INF64 : v);
}

/* ---- lgamma ------------------------------------------------------------- */

/* lgamma(t) for 0.5 <= t < 10: lgamma(t)/((t-1)(t-2)) below 3, so the zeros
 * at 1 and 2 keep full relative accuracy; lgamma itself above. */
static double vm_lgamma_table(double t)
{
    int i = 0, j = 0;
    for (int k = 1; k < 8; k++)
        i += t >= vmc_lgh_bound[k];
    for (int k = 1; k < 5; k++)
        j += t >= vmc_lgd_bound[k];
    double h = ((t - 1.0) * (t - 2.0)) * vmc_lgh(i, t - vmc_lgh_centre[i]);
    double d = vmc_lgd(j, t - vmc_lgd_centre[j]);
    return t < 3.0 ? h + 0.0 : d; /* + 0.0: lgamma(1) = lgamma(2) = +0 */
}

/* lgamma(x) for x >= 10, Stirling's series; lh + ll = log(x). */
static double vm_lgamma_stirling(double x, double lh, double ll)
{
    double q = 1.0 / x, q2 = q * q;
    double ser = q * (1.0 / 12 + q2 * (-1.0 / 360 + q2 * (1.0 / 1260 + q2 * (-1.0 / 1680 +
                 q2 * (1.0 / 1188 + q2 * (-691.0 / 360360 + q2 * (1.0 / 156 +
                 q2 * (-3617.0 / 122400))))))));
    double xm = x - 0.5;
    int huge = x > 0x1p900;
    double xs = huge ? 1.0 : xm;
    double pl, ph = vm_two_prod(xs, lh, &pl);
    pl += xs * ll;
    double e, s = vm_two_sum(ph, -x, &e);
    double v = s + ((e + pl) + (VM_LNSQRT2PI + ser));
    return huge ? x * ((lh + ll) - 1.0) : v;
}

double ft_vm_lgamma_f64(double x)
{
    double a = vm_fabs(x);
    int fin = a < VM_INF64;
    double p = (fin && a > 0.0) ? a : 1.0; /* lgamma(p) is needed for x and -x */
    double lo, hi = ft_vm_log_dd(p, &lo);
    double tbl = vm_lgamma_table(p < 0.5 ? p + 1.0 : (p < 10.0 ? p : 9.0));
    double tiny = tbl - (hi + lo);
    double st = vm_lgamma_stirling(p >= 10.0 ? p : 10.0, p >= 10.0 ? hi : VM_LN2 * 3.321928094887362,
                                   p >= 10.0 ? lo : 0.0);
    double lgp = p < 0.5 ? tiny : (p < 10.0 ? tbl : st);

    /* x < 0: lgamma(x) = log(pi / |x sin(pi x)|) - lgamma(-x). */
    double ps = p < 0x1p51 ? p : 0.0;
    double r = vm_fabs(ps - vm_rint(ps)); /* exact, in [0, 1/2] */
    double sa = r <= 0.25 ? r : 0.5 - r;  /* exact */
    double pe, ph = vm_two_prod(sa, VM_PI_HI, &pe);
    pe += sa * VM_PI_LO;
    double sv = r <= 0.25 ? vm_sin_kernel(ph, pe) : vm_cos_kernel(ph, pe);
    double ml, mh = ft_vm_log_dd(r > 0.0 ? p * sv : 1.0, &ml);
    double neg = (VM_LNPI - mh) - (ml + lgp);

    double v = x > 0.0 ? lgp : neg;
    v = (x <= 0.0 && (r == 0.0 || a >= 0x1p51)) ? VM_INF64 : v;
    v = fin ? v : VM_INF64;
    return x == x ? v : VM_NAN64;
}
