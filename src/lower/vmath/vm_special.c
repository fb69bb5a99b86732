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

/* erf_inv(y) = y * E(w), w = -log(1 - y^2), with E piecewise in w (w < 6.25)
 * or in sqrt(w) (Giles' split). */
double ft_vm_erf_inv_f64(double y)
{
    double a = vm_fabs(y);
    int ok = a < 1.0;
    double as = ok ? a : 0.0;
    double ys = ok ? y : 0.0;
    double lo, hi = ft_vm_log_dd((1.0 - as) * (1.0 + as), &lo);
    double w = -(hi + lo);
    double ws = w < 6.25 ? w : 0.0;
    int i = (ws >= vmc_einvw_bound[1]) + (ws >= vmc_einvw_bound[2]) + (ws >= vmc_einvw_bound[3]);
    double ec = vmc_einvw(i, ws - vmc_einvw_centre[i]);
    double p = __builtin_sqrt(w < 6.25 ? 6.25 : w);
    int j = (p >= vmc_einvp_bound[1]) + (p >= vmc_einvp_bound[2]) + (p >= vmc_einvp_bound[3]);
    double et = vmc_einvp(j, p - vmc_einvp_centre[j]);
    double v = ys * (w < 6.25 ? ec : et);
    v = a == 1.0 ? vm_copysign(VM_INF64, y) : v;
    return (ok || a == 1.0) ? v : VM_NAN64;
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
