/* Double-precision exponentials, logarithms, trigonometry, pow, cbrt and the
 * hyperbolic functions of the shared math library, plus the kernels the
 * other vmath sources build on (exp with an extra low part and a power-of-two
 * shift, log as a double-double, sin/cos of a reduced argument).
 * Rules: see vm_internal.h. Accuracy: docs/math.md. */
#include "lower/vmath/vm_internal.h"
#include "lower/vmath/vm_coef.h"

/* e^(x + xlo) * 2^k for any non-NaN x (|xlo| tiny against 1), k in
 * [-64, 64]. fdlibm's reduction and rational form: < 1 ulp. */
double ft_vm_exp_core(double x, double xlo, int64_t k)
{
    double xc = x > 1100.0 ? 1100.0 : (x < -1100.0 ? -1100.0 : x);
    double kd = vm_rint(xc * VM_INVLN2);
    double hi = xc - kd * VM_LN2_HI; /* exact */
    double lo = kd * VM_LN2_LO - xlo;
    double r = hi - lo;
    double t = r * r;
    double c = r - t * vmc_exp_r(t);
    double y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    return vm_scale(y, (int64_t)kd + k);
}

double ft_vm_exp_f64(double x)
{
    double r = ft_vm_exp_core(x == x ? x : 0.0, 0.0, 0);
    return x == x ? r : VM_NAN64;
}

double ft_vm_exp2_f64(double x)
{
    double xs = x == x ? x : 0.0;
    xs = xs > 1100.0 ? 1100.0 : (xs < -1100.0 ? -1100.0 : xs);
    double n = vm_rint(xs);
    double r = xs - n; /* exact, |r| <= 1/2 */
    double e, rh = vm_two_prod(r, VM_LN2, &e);
    double r2 = ft_vm_exp_core(rh, e + r * VM_LN2_TAIL, (int64_t)n);
    return x == x ? r2 : VM_NAN64;
}

/* log(x) = hi + *lo with relative error about 2^-64, for finite x > 0
 * (subnormals included). Table-driven: z = x/2^k, r = z*invc - 1 exactly as
 * a double-double, log = k*ln2 + log(c) + log1p(r). */
double ft_vm_log_dd(double x, double *lo)
{
    int sub = x < 0x1p-1022;
    double xs = sub ? x * 0x1p52 : x;
    uint64_t ix = asu64(xs);
    uint64_t tmp = ix - VM_LOG_OFF;
    int i = (int)((tmp >> 45) & 127);
    int64_t k = (int64_t)(tmp >> 52) - ((tmp >> 63) ? 4096 : 0) - (sub ? 52 : 0);
    double z = asf64(ix - (tmp & (0xfffULL << 52)));
    double pl, ph = vm_two_prod(z, vm_log_invc[i], &pl);
    double rh0 = ph - 1.0; /* exact: ph is within 1% of 1 */
    double r = rh0 + pl;
    double rlo = pl - (r - rh0);
    double kd = (double)k;
    double e1, w = vm_two_sum(kd * VM_LN2_HI, vm_log_logc_hi[i], &e1);
    double e2, hi = vm_two_sum(w, r, &e2);
    double r2 = r * r;
    double tail = (-0.5 * r2 + r2 * r * vmc_log1p(r)) + rlo * (1.0 - r);
    double l = ((e1 + e2) + (kd * VM_LN2_LO + vm_log_logc_lo[i])) + tail;
    double h = hi + l;
    *lo = l - (h - hi);
    return h;
}

double ft_vm_log_f64(double x)
{
    int ok = x > 0.0 && x < VM_INF64;
    double lo, hi = ft_vm_log_dd(ok ? x : 1.0, &lo);
    double r = hi + lo;
    r = x == 0.0 ? -VM_INF64 : r;
    r = x == VM_INF64 ? VM_INF64 : r;
    r = (x < 0.0 || x != x) ? VM_NAN64 : r;
    return r;
}

/* log1p to about 2^-64 relative (the library's own; the complex functions
 * build on it). */
double ft_vm_log1p_acc_f64(double x)
{
    int ok = x > -1.0 && x < VM_INF64;
    double xs = ok ? x : 0.0;
    double e, u = vm_two_sum(1.0, xs, &e); /* u + e = 1 + x exactly */
    double lo, hi = ft_vm_log_dd(u, &lo);
    double r = hi + (lo + e / u);
    r = x == 0.0 ? x : r; /* keeps -0 */
    r = x == -1.0 ? -VM_INF64 : r;
    r = x == VM_INF64 ? VM_INF64 : r;
    r = (x < -1.0 || x != x) ? VM_NAN64 : r;
    return r;
}

/* XLA's f64 log1p on CPU (its elemental emitter, as for f32 in vm_f32.c):
 * for x in (sqrt(1/2) - 1, sqrt(2) - 1) Cephes' rational function x - x^2/2 + x^3 P(x)/Q(x)
 * (the polynomials by Horner's rule with fused multiply-adds, where LLVM
 * contracts XLA's code), else log(1 + x) with the rounded sum. jax.lax.log1p
 * and f64 erf_inv (so f64 normal, exponential, laplace) use it. */
VM_FMA_CLONES double ft_vm_log1p_f64(double x)
{
    static const double num[7] = {4.5270000862445199635215E-5, 4.9854102823193375972212E-1,
                                  6.5787325942061044846969E0,  2.9911919328553073277375E1,
                                  6.0949667980987787057556E1,  5.7112963590585538103336E1,
                                  2.0039553499201281259648E1};
    static const double den[7] = {1.0, 1.5062909083469192043167E1, 8.3047565967967209469434E1,
                                  2.2176239823732856465394E2, 3.0909872225312059774938E2,
                                  2.1642788614495947685003E2, 6.0118660497603843919306E1};
    double pn = 0.0, pd = 0.0;
    for (int i = 0; i < 7; i++) {
        pn = vm_fma(pn, x, num[i]);
        pd = vm_fma(pd, x, den[i]);
    }
    double x2 = x * x;
    double small = x + (-0.5 * x2 + (x * x2) * (pn / pd));
    double big = ft_vm_log_f64(x + 1.0);
    int in = x > -0.29289321881345247560 && x < 0.41421356237309504880; /* 1 + x in (sqrt(1/2), sqrt(2)) */
    return in ? small : (x != x ? VM_NAN64 : big);
}

/* expm1 for non-NaN x: e^x - 1 = 2^n (expm1(r) + 1) - 1, with the sum
 * arranged so no term cancels: < 1.5 ulp. */
double ft_vm_expm1_core(double x)
{
    double xc = x > 710.0 ? 710.0 : (x < -40.0 ? -40.0 : x);
    double kd = vm_rint(xc * VM_INVLN2);
    double hi = xc - kd * VM_LN2_HI;
    double lo = kd * VM_LN2_LO;
    double r = hi - lo;
    double rlo = (hi - r) - lo;
    double em = r + ((0.5 * r * r + r * r * r * vmc_expm1(r)) + rlo * (1.0 + r));
    int64_t n = (int64_t)kd;
    double t = vm_pow2i(n > 1000 ? 0 : n);
    double small = t * em + (t - 1.0);
    double big = vm_scale(em + 1.0, n);
    double res = n > 1000 ? big : small;
    return x == 0.0 ? x : res;
}

double ft_vm_expm1_f64(double x)
{
    double r = ft_vm_expm1_core(x == x ? x : 0.0);
    return x == x ? r : VM_NAN64;
}

double ft_vm_tanh_f64(double x)
{
    double a = vm_fabs(x);
    a = a > 40.0 ? 40.0 : (a == a ? a : 0.0);
    double e = ft_vm_expm1_core(2.0 * a);
    double t = e / (e + 2.0);
    return x == x ? vm_copysign(t, x) : VM_NAN64;
}

double ft_vm_logistic_f64(double x)
{
    double a = vm_fabs(x);
    double e = ft_vm_exp_core(a == a ? -a : 0.0, 0.0, 0);
    double d = 1.0 + e;
    double r = x >= 0.0 ? 1.0 / d : e / d;
    return x == x ? r : VM_NAN64;
}

/* ---- sin / cos ---------------------------------------------------------- */

/* x mod pi/2 for x in [2^20, 2^1024): Payne-Hanek with 2/pi as 24-bit
 * chunks. Each product of a 26/27-bit half of x with a chunk is exact and
 * reduced mod 4 exactly; the sum is kept as a double-double, so the reduced
 * argument is accurate to about 2^-104 absolute. */
static double vm_reduce_large(double ax, double *rlo, int64_t *quadrant)
{
    static const double chunk_scale[6] = {1.0, 0x1p-24, 0x1p-48, 0x1p-72, 0x1p-96, 0x1p-120};
    int64_t e = (int64_t)((asu64(ax) >> 52) & 0x7ff) - 1023;
    int64_t j0 = e >= 54 ? (e - 54) / 24 : 0;
    double xs = ax * vm_pow2i(-24 * j0 - 24);
    double xh = asf64(asu64(xs) & 0xfffffffff8000000ULL);
    double xl = xs - xh;
    double hi = 0.0, lo = 0.0, nacc = 0.0, err;
#define VM_TERM(T)                                                          \
    do {                                                                    \
        double t_ = (T), q_ = t_ * 0.25;                                    \
        q_ = q_ >= 0x1p52 ? q_ : (q_ + 0x1p52) - 0x1p52;                    \
        hi = vm_two_sum(hi, t_ - 4.0 * q_, &err);                           \
        lo += err;                                                          \
    } while (0)
#define VM_CHUNK(k)                                                         \
    do {                                                                    \
        double c_ = vm_2opi_chunk[j0 + (k)] * chunk_scale[k];              \
        VM_TERM(xh * c_);                                                   \
        VM_TERM(xl * c_);                                                   \
    } while (0)
    VM_CHUNK(0);
    VM_CHUNK(1);
    double n0 = vm_rint(hi);
    hi -= n0;
    nacc += n0;
    VM_CHUNK(2);
    VM_CHUNK(3);
    VM_CHUNK(4);
    VM_CHUNK(5);
#undef VM_CHUNK
#undef VM_TERM
    double n1 = vm_rint(hi);
    hi -= n1;
    nacc += n1;
    double fl, fh = vm_fast_two_sum(hi, lo, &fl);
    /* (fh + fl) * pi/2 */
    double pe, ph = vm_two_prod(fh, VM_PIO2_HI, &pe);
    double pl = pe + (fh * VM_PIO2_LO + fl * VM_PIO2_HI);
    double r = ph + pl;
    *rlo = pl - (r - ph);
    *quadrant = (int64_t)nacc & 3;
    return r;
}

/* sin and cos of a finite x. Cody-Waite with pi/2 in three 33-bit pieces
 * below 2^20, Payne-Hanek above, both computed and selected. */
void ft_vm_sincos_core(double x, double *s, double *c)
{
    double ax = vm_fabs(x);
    double am = ax > 0x1p20 ? 0.0 : ax;
    double n = vm_rint(am * VM_2OPI);
    double t = am - n * VM_PIO2_1;
    double e1, a1 = vm_two_sum(t, -(n * VM_PIO2_2), &e1);
    double e2, a2 = vm_two_sum(a1, -(n * VM_PIO2_3), &e2);
    double ml, mh = vm_fast_two_sum(a2, (e1 + e2) - n * VM_PIO2_3T, &ml);
    int64_t mq = (int64_t)n & 3;

    double bl;
    int64_t bq;
    double bh = vm_reduce_large(ax > 0x1p20 ? ax : 0x1p20, &bl, &bq);
    int big = ax > 0x1p20;
    double r = big ? bh : mh, rl = big ? bl : ml;
    int64_t q = big ? bq : mq;

    double sn = vm_sin_kernel(r, rl);
    double cs = vm_cos_kernel(r, rl);
    double sv = (q & 1) ? cs : sn;
    double cv = (q & 1) ? sn : cs;
    sv = (q & 2) ? -sv : sv;
    cv = ((q + 1) & 2) ? -cv : cv;
    *s = x < 0.0 ? -sv : sv;
    *c = cv;
}

double ft_vm_sin_f64(double x)
{
    double s, c;
    int fin = vm_fabs(x) < VM_INF64;
    ft_vm_sincos_core(fin ? x : 0.0, &s, &c);
    s = x == 0.0 ? x : s;
    return fin ? s : VM_NAN64;
}

double ft_vm_cos_f64(double x)
{
    double s, c;
    int fin = vm_fabs(x) < VM_INF64;
    ft_vm_sincos_core(fin ? x : 0.0, &s, &c);
    return fin ? c : VM_NAN64;
}

double ft_vm_tan_f64(double x)
{
    double s, c;
    int fin = vm_fabs(x) < VM_INF64;
    ft_vm_sincos_core(fin ? x : 0.0, &s, &c);
    double t = s / c;
    t = x == 0.0 ? x : t;
    return fin ? t : VM_NAN64;
}

/* ---- pow ---------------------------------------------------------------- */

/* C99 Annex F pow. The general case is exp(y * log|x|) with log as a
 * double-double and the product kept exact, so the error stays near 1 ulp
 * even when y*log|x| is near the overflow threshold. */
double ft_vm_pow_f64(double x, double y)
{
    double ax = vm_fabs(x), ay = vm_fabs(y);
    double ti = (double)(int64_t)(ay < 0x1p52 ? ay : 0.0);
    int yint = ay >= 0x1p52 || ti == ay;
    int yodd = yint && ay < 0x1p53 && (((int64_t)(ay < 0x1p53 ? ay : 0.0)) & 1);

    int axok = ax > 0.0 && ax < VM_INF64;
    double ll, lh = ft_vm_log_dd(axok ? ax : 1.0, &ll);
    double yc = ay < 0x1p64 ? y : vm_copysign(0x1p64, y);
    yc = yc == yc ? yc : 0.0;
    double pl, ph = vm_two_prod(yc, lh, &pl);
    pl += yc * ll;
    double r = ft_vm_exp_core(ph, pl, 0);
    r = (x < 0.0 && yodd) ? -r : r;
    r = (x < 0.0 && !yint) ? VM_NAN64 : r;

    /* x = ±0 */
    double zr = y < 0.0 ? VM_INF64 : 0.0;
    zr = yodd ? vm_copysign(zr, x) : zr;
    r = x == 0.0 ? zr : r;
    /* x = ±inf */
    double ir = y < 0.0 ? 0.0 : VM_INF64;
    ir = (x < 0.0 && yodd) ? -ir : ir;
    r = ax == VM_INF64 ? ir : r;
    /* y = ±inf */
    double yr = ((ax < 1.0) == (y > 0.0)) ? 0.0 : VM_INF64;
    yr = ax == 1.0 ? 1.0 : yr;
    r = ay == VM_INF64 ? yr : r;
    r = (x != x || y != y) ? VM_NAN64 : r;
    r = (y == 0.0 || x == 1.0) ? 1.0 : r;
    return r;
}

/* ---- sqrt, cbrt --------------------------------------------------------- */

double ft_vm_sqrt_f64(double x)
{
    return vm_canon64(__builtin_sqrt(x));
}

double ft_vm_rsqrt_f64(double x)
{
    return vm_canon64(1.0 / __builtin_sqrt(x));
}

/* Bit-trick estimate, two Halley steps, then fdlibm's last Newton step on a
 * 23-bit value whose square is exact: < 0.7 ulp, exact on perfect cubes. */
double ft_vm_cbrt_f64(double x)
{
    double ax = vm_fabs(x);
    int ok = ax > 0.0 && ax < VM_INF64;
    double a = ok ? ax : 1.0;
    int sub = a < 0x1p-1022, big = a > 0x1p1000; /* keep 2a and t^3 finite */
    double as = sub ? a * 0x1p54 : (big ? a * 0x1p-54 : a);
    uint64_t hw = asu64(as) >> 32;
    uint64_t th = hw / 3 + 715094163ULL;
    double t = asf64(th << 32);
    double t3 = t * t * t;
    t = t * ((t3 + 2.0 * as) / (2.0 * t3 + as));
    t3 = t * t * t;
    t = t * ((t3 + 2.0 * as) / (2.0 * t3 + as));
    t = asf64((asu64(t) + 0x80000000ULL) & 0xffffffffc0000000ULL);
    double s = t * t;
    double q = as / s;
    double w = t + t;
    q = (q - t) / (w + q);
    t = t + t * q;
    t = sub ? t * 0x1p-18 : (big ? t * 0x1p18 : t);
    double r = ok ? vm_copysign(t, x) : x;
    return vm_canon64(r);
}

/* ---- sinh, cosh --------------------------------------------------------- */

double ft_vm_sinh_f64(double x)
{
    double a = vm_fabs(x);
    a = a == a ? a : 0.0;
    double e = ft_vm_expm1_core(a < 22.0 ? a : 0.0);
    double small = 0.5 * (e + e / (e + 1.0));
    double big = ft_vm_exp_core(a, 0.0, -1);
    double r = a < 22.0 ? small : big;
    r = x == 0.0 ? x : vm_copysign(r, x);
    return x == x ? r : VM_NAN64;
}

double ft_vm_cosh_f64(double x)
{
    double a = vm_fabs(x);
    a = a == a ? a : 0.0;
    double e = ft_vm_exp_core(a < 22.0 ? a : 0.0, 0.0, 0);
    double small = 0.5 * (e + 1.0 / e);
    double big = ft_vm_exp_core(a, 0.0, -1);
    double r = a < 22.0 ? small : big;
    return x == x ? r : VM_NAN64;
}
