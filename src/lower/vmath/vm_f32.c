/* Single-precision functions of the shared math library.
 *
 * The functions fused elementwise chains use most (exp, exp2, log, expm1,
 * tanh, logistic) are written in float so a JIT loop vectorizes at full
 * width. The rest compute in double through the f64 functions and round
 * once more: that costs speed but gives about 0.5 ulp and keeps one
 * implementation per function. Rules: vm_internal.h. Accuracy: docs/math.md. */
#include "lower/vmath/vm_internal.h"
#include "lower/vmath/vm_coef.h"

#define VM_LN2F_HI 0x1.62e4p-1f /* 16 bits: k * hi exact for |k| < 2^8 */
#define VM_LN2F_LO 0x1.7f7d1cp-20f
#define VM_INVLN2F 0x1.715476p0f
#define VM_LN2F 0x1.62e430p-1f

/* e^x for non-NaN x: < 1 ulp. */
static inline float vm_expf_core(float x)
{
    float xc = x > 100.0f ? 100.0f : (x < -110.0f ? -110.0f : x);
    float kd = vm_rintf(xc * VM_INVLN2F);
    float hi = xc - kd * VM_LN2F_HI;
    float r = hi - kd * VM_LN2F_LO;
    float p = 1.0f + (r + r * r * vmc_expf(r));
    return vm_scalef(p, (int32_t)kd);
}

float ft_vm_exp_f32(float x)
{
    float r = vm_expf_core(x == x ? x : 0.0f);
    return x == x ? r : VM_NAN32;
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

float ft_vm_log_f32(float x)
{
    int ok = x > 0.0f && x < VM_INF32;
    float xs = ok ? x : 1.0f;
    int sub = xs < 0x1p-126f;
    xs = sub ? xs * 0x1p23f : xs;
    uint32_t ix = asu32(xs) + (0x3f800000U - 0x3f3504f3U);
    int32_t k = (int32_t)(ix >> 23) - 0x7f - (sub ? 23 : 0);
    float f = asf32((ix & 0x007fffffU) + 0x3f3504f3U) - 1.0f;
    float s = f / (2.0f + f);
    float z = s * s;
    float rr = z * vmc_logf(z);
    float hfsq = 0.5f * f * f;
    float dk = (float)k;
    float r = s * (hfsq + rr) + dk * 0x1.2fefa2p-17f - hfsq + f + dk * 0x1.62e3p-1f;
    r = x == 0.0f ? -VM_INF32 : r;
    r = x == VM_INF32 ? VM_INF32 : r;
    return (x < 0.0f || x != x) ? VM_NAN32 : r;
}

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

/* tanh(|x|) from e = expm1(2|x|) with the sign of x: e/(e+2) below 0.55,
 * where 1 - 2/(e+2) would cancel, and 1 - 2/(e+2) above, where e + 2
 * may round (e > 2^24) but 2/(e+2) is then far below the result's ulp.
 * |x| is clamped at 9.1, past which tanh rounds to 1, so 2^n <= 2^26 needs
 * no overflow path and no second scaling. One division for both paths
 * (the numerator is selected): ~25% fewer vector instructions than
 * expm1's general core. */
float ft_vm_tanh_f32(float x)
{
    float a = vm_fabsf(x);
    a = a < 9.1f ? a : 9.1f; /* NaN -> 9.1; replaced at the end */
    float y = a + a;
    float kd = vm_rintf(y * VM_INVLN2F);
    float hi = y - kd * VM_LN2F_HI;
    float lo = kd * VM_LN2F_LO;
    float r = hi - lo;
    float rlo = (hi - r) - lo;
    float em = r + ((0.5f * r * r + r * r * r * vmc_expm1f(r)) + rlo);
    float t = vm_pow2if((int32_t)kd);
    float e = t * em + (t - 1.0f);
    int small = a < 0.55f;
    float q = (small ? e : 2.0f) / (e + 2.0f);
    float res = small ? q : 1.0f - q;
    return x == x ? vm_copysignf(res, x) : VM_NAN32;
}

/* 1/(1+e^-x) from e = e^-|x|: 1/(1+e) for x >= 0, e/(1+e) below (one
 * division, the numerator selected). |x| is clamped at 104, where e^-|x|
 * rounds to 0 (and so does the result for x < 0). */
float ft_vm_logistic_f32(float x)
{
    float a = vm_fabsf(x);
    a = a < 104.0f ? a : 104.0f; /* NaN -> 104; replaced at the end */
    float kd = vm_rintf(a * -VM_INVLN2F);
    float hi = -a - kd * VM_LN2F_HI;
    float r = hi - kd * VM_LN2F_LO;
    float p = 1.0f + (r + r * r * vmc_expf(r));
    /* e = p 2^n with n in [-150, 0]: p 2^(n+75) is exact and normal, and
     * the product with 2^-75 rounds once, as vm_scalef's two steps would
     * (the same bits for half the integer work). */
    float e = (p * vm_pow2if((int32_t)kd + 75)) * 0x1p-75f;
    float res = (x >= 0.0f ? 1.0f : e) / (1.0f + e);
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
VM_VIA_F64(log1p)
VM_VIA_F64(sin)
VM_VIA_F64(cos)
VM_VIA_F64(tan)
VM_VIA_F64(erf)
VM_VIA_F64(erfc)
VM_VIA_F64(erf_inv)
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
