/* Single-precision functions of the shared math library.
 *
 * The functions fused elementwise chains use most (exp, exp2, log, expm1,
 * tanh, logistic) are written in float so a JIT loop vectorizes at full
 * width. The rest compute in double through the f64 functions and round
 * once more: that costs speed but gives about 0.5 ulp and keeps one
 * implementation per function. exp, tanh and logistic use fused
 * multiply-adds (vm_fmaf): Cody-Waite reduction against ln2 split in two
 * floats, polynomial steps (Estrin, Horner), the final scaling folded
 * into one fma; tanh and logistic share one core, which a loop computing
 * both of one value evaluates once. log, log1p and erf_inv are XLA's
 * algorithms (at the end of this file), so jax.random's samplers are
 * bitwise JAX's. Rules: vm_internal.h. Accuracy: docs/math.md. */
#include "lower/vmath/vm_internal.h"
#include "lower/vmath/vm_coef.h"
#include "lower/vmath/vm_expf.h"

/* The two exp fits of vm_coef.h with fma: degree 4 in Estrin's scheme
 * (r2 = r*r is shared with the caller; a shorter dependency chain for the
 * fused loops tanh and logistic sit in), degree 5 by Horner. */
static inline float vm_pexpf4(float r, float r2)
{
    const float *c = vmc_expf_c;
    return vm_fmaf(r2, vm_fmaf(c[4], r2, vm_fmaf(c[3], r, c[2])), vm_fmaf(c[1], r, c[0]));
}

/* 2^k from kp = x + VM_RINT_MAGIC with k = round(x), -127 < k + bias < 128. */
static inline float vm_pow2_of_magic(float kp, uint32_t bias)
{
    return asf32((asu32(kp) + (127u + bias - VM_RINT_BITS)) << 23);
}

VM_FMA_CLONES float ft_vm_exp_f32(float x)
{
    return vm_expf_body(x);
}

float ft_vm_exp2_f32(float x)
{
    float xc = x > 130.0f ? 130.0f : (x < -160.0f ? -160.0f : x);
    xc = xc == xc ? xc : 0.0f;
    float n = vm_rintf(xc);
    float r = (xc - n) * VM_LN2F;
    float p = 1.0f + (r + r * r * vmc_expf(r));
    p = vm_scalef(p, (int32_t)n);
    return x == x ? p : VM_NAN32;
}

/* f32 log and log1p are XLA's on CPU (bitwise jax.numpy.log / log1p, JAX
 * 0.12), defined with erf_inv at the end of this file. */

/* e^x - 1 for non-NaN x: 2^n (expm1(r) + 1) - 1 without cancellation. */
static inline float vm_expm1f_core(float x)
{
    float xc = x > 100.0f ? 100.0f : (x < -30.0f ? -30.0f : x);
    float kd = vm_rintf(xc * VM_INVLN2F);
    float hi = xc - kd * VM_LN2F_HI;
    float lo = kd * VM_LN2F_LO;
    float r = hi - lo;
    float rlo = (hi - r) - lo;
    float em = r + ((0.5f * r * r + r * r * r * vmc_expm1f(r)) + rlo);
    int32_t n = (int32_t)kd;
    float t = vm_pow2if(n > 24 ? 0 : n);
    float small = t * em + (t - 1.0f);
    float big = vm_scalef(em + 1.0f, n);
    float res = n > 24 ? big : small;
    return x == 0.0f ? x : res;
}

float ft_vm_expm1_f32(float x)
{
    float r = vm_expm1f_core(x == x ? x : 0.0f);
    return x == x ? r : VM_NAN32;
}

/* The core tanh and logistic share: for a = min(|x|, 104) (NaN -> 104),
 * e^-a = 2^k (1 + em) with em = expm1(r), r = -a - k ln2 (Cody-Waite, ln2
 * as two floats), |r| <= ln2/2 + tiny, k = round(-a/ln2) in [-150, 0];
 * *kp = k + VM_RINT_MAGIC. Both functions evaluate it from x with the same
 * operations, so a JIT loop that computes both of one value (a fused chain
 * such as tanh(x)*logistic(x)) holds one copy after the optimizer's common
 * subexpression elimination: the reduction and the polynomial, two thirds
 * of each function's work, are done once. */
static inline float vm_expm1_negabs_core(float x, float *kp)
{
    float a = vm_fabsf(x);
    a = a < 104.0f ? a : 104.0f;
    float k = vm_fmaf(a, -VM_INVLN2F, VM_RINT_MAGIC);
    float kd = k - VM_RINT_MAGIC;
    float r = vm_fmaf(kd, -VM_LN2F_TAIL, vm_fmaf(kd, -VM_LN2F, -a));
    float r2 = r * r;
    *kp = k;
    return vm_fmaf(r2, vm_pexpf4(r, r2), r);
}

/* tanh|x| = -e/(2 + e) with e = expm1(-2|x|) in (-1, 0]: no cancellation
 * anywhere, so one path and one division. From the shared core,
 * e^-2|x| = 2^2k (1 + w) with w = expm1(2r) = em (2 + em), one fma
 * (2 em is exact); then e = tt w + (tt - 1) and 2 + e = tt w + (tt + 1),
 * tt = 2^2k, each one fma (tt - 1 and tt + 1 are exact for 2k >= -24;
 * past that their rounding is part of the measured maximum). k is clamped at -63 so that tt stays normal: there |x| > 43 and
 * tanh rounds to 1 either way. Squaring through w costs about half an ulp
 * against evaluating expm1(-2|x|) on its own (max 2.84 against 2.03 ulp,
 * all f32 inputs), for a fused tanh-and-logistic loop about a fifth faster
 * (docs/jit.md, round 4). The sign of x is copied onto the result, so
 * tanh(-0) = -0. */
VM_FMA_CLONES float ft_vm_tanh_f32(float x)
{
    float kp;
    float em = vm_expm1_negabs_core(x, &kp);
    float w = vm_fmaf(em, em, em + em);
    float kq = kp > VM_RINT_MAGIC - 63.0f ? kp : VM_RINT_MAGIC - 63.0f;
    /* asu32(kq) = VM_RINT_BITS + k, whose low byte is k mod 256: shifted
     * by 24 it is 2k in the exponent field, plus the bias 127. */
    float tt = asf32((asu32(kq) << 24) + 0x3f800000U);
    float q = vm_fmaf(tt, w, tt - 1.0f) / vm_fmaf(tt, w, tt + 1.0f);
    /* A select, not a branch: clang turns `x == x ? f(q) : NaN` into one
     * and sinks the whole body into it, where it no longer dominates
     * logistic's copy of the core and cannot be merged with it. */
    float res = vm_copysignf(q, x);
    return x == x ? res : VM_NAN32;
}

/* 1/(1+e) for x >= 0 and e/(1+e) below, e = e^-|x| from the shared core,
 * computed scaled by 2^75 so that no intermediate is subnormal:
 * E = 2^75 e = t1 + t1 em (t1 = 2^(k+75), normal for the clamp |x| <= 104,
 * where e rounds to 0) and D = 2^75 (1 + e) = t1 em + (t1 + 2^75), each one
 * fma; the division (2^75 or E)/D rounds once, into the subnormal range
 * too. */
VM_FMA_CLONES float ft_vm_logistic_f32(float x)
{
    float kp;
    float em = vm_expm1_negabs_core(x, &kp);
    float t1 = vm_pow2_of_magic(kp, 75);
    float num = x >= 0.0f ? 0x1p75f : vm_fmaf(t1, em, t1);
    float res = num / vm_fmaf(t1, em, t1 + 0x1p75f);
    return x == x ? res : VM_NAN32;
}

float ft_vm_sqrt_f32(float x)
{
    return vm_canon32(__builtin_sqrtf(x));
}

float ft_vm_rsqrt_f32(float x)
{
    return vm_canon32(1.0f / __builtin_sqrtf(x));
}

/* Through double: one more rounding of a result within ~1 ulp of double. */
#define VM_VIA_F64(name)                                                    \
    float ft_vm_##name##_f32(float x)                                      \
    {                                                                       \
        return vm_canon32((float)ft_vm_##name##_f64((double)x));           \
    }
VM_VIA_F64(sin)
VM_VIA_F64(cos)
VM_VIA_F64(tan)
VM_VIA_F64(erfc)
VM_VIA_F64(cbrt)
VM_VIA_F64(atan)
VM_VIA_F64(asin)
VM_VIA_F64(acos)
VM_VIA_F64(sinh)
VM_VIA_F64(cosh)
VM_VIA_F64(asinh)
VM_VIA_F64(acosh)
VM_VIA_F64(atanh)
VM_VIA_F64(lgamma)
#undef VM_VIA_F64

float ft_vm_pow_f32(float x, float y)
{
    return vm_canon32((float)ft_vm_pow_f64((double)x, (double)y));
}

float ft_vm_atan2_f32(float y, float x)
{
    return vm_canon32((float)ft_vm_atan2_f64((double)y, (double)x));
}

/* ---- erf_inv, as XLA computes it on CPU --------------------------------
 *
 * jax.random.normal is sqrt(2) erf_inv(u), so matching JAX's bits needs
 * XLA's f32 erf_inv, which is not the correctly rounded one: XLA expands it
 * (chlo) into Giles' single-precision approximation (M. Giles, "Approximating
 * the erfinv function", GPU Computing Gems, 2011) on w = -log1p(-x^2),
 * its polynomials evaluated with fused multiply-adds, and log1p is XLA's own:
 * a Cephes rational function for |x| < sqrt(2) - 1, else XLA's f32 log of
 * 1 + x (Cephes' logf in Eigen's form: mantissa in [sqrt(1/2), sqrt(2)), a
 * degree-8 polynomial in three parts, the exponent added in two pieces). The
 * fused multiply-adds here and in log / log1p are where LLVM contracts
 * XLA's code. Checked bitwise against jax.lax.erf_inv, jnp.log and
 * jnp.log1p (JAX 0.12, CPU) on 2^20 random bit patterns, 2^20 typical
 * inputs, every f32 in [0.99, 1] (erf_inv) and the special values: the only
 * differences are subnormal inputs, which XLA flushes (docs/random.md;
 * known answers in tests/vmath). Accuracy: XLA's (docs/math.md). */

/* XLA's f32 log: Cephes' logf in Eigen's form. A subnormal x is scaled
 * into the normal range first (XLA on CPU flushes it to zero instead; we
 * never flush, docs/determinism.md). */
VM_FMA_CLONES float ft_vm_log_f32(float x)
{
    int ok = x > 0.0f && x < VM_INF32;
    float xs = ok ? x : 1.0f;
    int sub = xs < 0x1p-126f;
    xs = sub ? xs * 0x1p23f : xs;
    uint32_t b = asu32(xs);
    float e = (float)((int32_t)(b >> 23) - 126 - (sub ? 23 : 0));
    float m = asf32((b & 0x007fffffU) | 0x3f000000U); /* xs = m 2^e, m in [0.5, 1) */
    int below = m < 0.70710677f;
    e = below ? e - 1.0f : e;
    float f = (m - 1.0f) + (below ? m : 0.0f);
    float f2 = f * f, f3 = f2 * f;
    float p = vm_fmaf(7.0376836292e-2f, f, -1.1514610310e-1f);
    float p1 = vm_fmaf(-1.2420140846e-1f, f, 1.4249322787e-1f);
    float p2 = vm_fmaf(2.0000714765e-1f, f, -2.4999993993e-1f);
    p = vm_fmaf(p, f, 1.1676998740e-1f);
    p1 = vm_fmaf(p1, f, -1.6668057665e-1f);
    p2 = vm_fmaf(p2, f, 3.3333331174e-1f);
    p = vm_fmaf(p, f3, p1);
    p = vm_fmaf(p, f3, p2);
    float r = vm_fmaf(-f2, 0.5f, f) + vm_fmaf(p, f3, e * -2.12194440e-4f);
    r = vm_fmaf(e, 0.693359375f, r);
    r = x == 0.0f ? -VM_INF32 : r;
    r = x == VM_INF32 ? VM_INF32 : r;
    return (x < 0.0f || x != x) ? VM_NAN32 : r;
}

/* XLA's f32 log1p: a Cephes rational function for |x| < sqrt(2) - 1, else
 * XLA's log of 1 + x. */
VM_FMA_CLONES float ft_vm_log1p_f32(float x)
{
    static const float num[7] = {4.5270000862445199635215E-5f, 4.9854102823193375972212E-1f,
                                 6.5787325942061044846969E0f,  2.9911919328553073277375E1f,
                                 6.0949667980987787057556E1f,  5.7112963590585538103336E1f,
                                 2.0039553499201281259648E1f};
    static const float den[7] = {1.0f, 1.5062909083469192043167E1f, 8.3047565967967209469434E1f,
                                 2.2176239823732856465394E2f, 3.0909872225312059774938E2f,
                                 2.1642788614495947685003E2f, 6.0118660497603843919306E1f};
    float pn = 0.0f, pd = 0.0f;
    for (int i = 0; i < 7; i++) {
        pn = vm_fmaf(pn, x, num[i]);
        pd = vm_fmaf(pd, x, den[i]);
    }
    float x2 = x * x;
    float small = x + (-0.5f * x2 + (x * x2) * (pn / pd));
    float big = ft_vm_log_f32(x + 1.0f);
    return vm_fabsf(x) < 0.41421356f ? small : (x != x ? VM_NAN32 : big);
}

VM_FMA_CLONES float ft_vm_erf_inv_f32(float x)
{
    static const float lo[9] = {2.81022636e-08f,  3.43273939e-07f, -3.5233877e-06f,
                                -4.39150654e-06f, 0.00021858087f,  -0.00125372503f,
                                -0.00417768164f,  0.246640727f,    1.50140941f};
    static const float hi[9] = {-0.000200214257f, 0.000100950558f, 0.00134934322f,
                                -0.00367342844f,  0.00573950773f,  -0.0076224613f,
                                0.00943887047f,   1.00167406f,     2.83297682f};
    if (vm_fabsf(x) == 1.0f) return x * VM_INF32;
    float w = -ft_vm_log1p_f32(-(x * x));
    if (w != w) return VM_NAN32;
    int small = w < 5.0f;
    const float *c = small ? lo : hi;
    w = small ? w - 2.5f : __builtin_sqrtf(w) - 3.0f;
    float p = c[0];
    for (int i = 1; i < 9; i++) p = vm_fmaf(p, w, c[i]);
    return vm_canon32(p * x);
}


/* XLA's f32 erf on CPU (its erf intrinsic; Eigen's rational interpolant):
 * x P(x^2) / Q(x^2), P of degree 4 and Q of degree 6 in x^2 by Horner's rule
 * with fused multiply-adds as XLA emits them, and +-1 for |x| >= 3.8325069.
 * Not the correctly rounded erf (docs/math.md): jax.random.truncated_normal
 * draws through it. Checked bitwise against jax.lax.erf (docs/random.md). */
VM_FMA_CLONES float ft_vm_erf_f32(float x)
{
    int clamp = 3.832506856900711f <= vm_fabsf(x);
    float x2 = x * x;
    float p = vm_fmaf(x2, 0.00022905065861350646f, 0.0034082910107109506f);
    p = vm_fmaf(x2, p, 0.050955695062380861f);
    p = vm_fmaf(x2, p, 0.18520832239976145f);
    p = vm_fmaf(x2, p, 1.128379143519084f);
    p = x * p;
    float q = vm_fmaf(x2, -1.1791602954361697e-7f, 0.000023547966471313185f);
    q = vm_fmaf(x2, q, 0.0010179625278914885f);
    q = vm_fmaf(x2, q, 0.014070470171167667f);
    q = vm_fmaf(x2, q, 0.11098505178285362f);
    q = vm_fmaf(x2, q, 0.49746925110067538f);
    q = vm_fmaf(x2, q, 1.0f);
    float one = asf32(0x3f800000U | (asu32(x) & 0x80000000U)); /* copysign(1, x) */
    return vm_canon32(clamp ? one : p / q);
}
