/* src/lower/vmath/vm_expf.h: the f32 exponential's body and its constants,
 * shared (static inline) by vm_f32.c (ft_vm_exp_f32 and the functions built
 * on it) and vm_lse.c (the one-pass logsumexp), so that a loop calling it
 * inlines it and vectorizes. Rules: vm_internal.h. */
#ifndef FT_VM_EXPF_H
#define FT_VM_EXPF_H

#include "lower/vmath/vm_internal.h"
#include "lower/vmath/vm_coef.h"

#define VM_LN2F_HI 0x1.62e4p-1f /* 16 bits: k * hi exact for |k| < 2^8 */
#define VM_LN2F_LO 0x1.7f7d1cp-20f
#define VM_INVLN2F 0x1.715476p0f
#define VM_LN2F 0x1.62e430p-1f
/* ln2 = VM_LN2F + VM_LN2F_TAIL to ~2^-54: with fma, k * VM_LN2F is
 * subtracted exactly for the |k| < 2^8 these reductions see. */
#define VM_LN2F_TAIL -0x1.05c610p-29f
/* x + 0x1.8p23 holds round(x) in its low mantissa bits for |x| < 2^22;
 * its bit pattern minus VM_RINT_BITS is that integer. */
#define VM_RINT_MAGIC 0x1.8p23f
#define VM_RINT_BITS 0x4b400000u

static inline float vm_pexpf5(float r)
{
    const float *c = vmc_expf5_c;
    return vm_fmaf(vm_fmaf(vm_fmaf(vm_fmaf(vm_fmaf(c[5], r, c[4]), r, c[3]), r, c[2]), r, c[1]), r, c[0]);
}

/* e^x: < 1 ulp (NaN: the canonical NaN). e^x = 2^k e^r with |r| <= ln2/2 + tiny;
 * e^r - 1 = r + r^2 P(r) and 2^k e^r = t1 + t1 (e^r - 1), scaled by t2,
 * with 2^k = t1 t2 split so that both halves are normal for k in
 * [-159, 145] (the clamp): one rounding, or two in the subnormal range. */
static inline float vm_expf_body(float x)
{
    float xc = x == x ? x : 0.0f; /* one NaN test, shared with the end */
    xc = xc > 100.0f ? 100.0f : (xc < -110.0f ? -110.0f : xc);
    float kp = vm_fmaf(xc, VM_INVLN2F, VM_RINT_MAGIC);
    float kd = kp - VM_RINT_MAGIC;
    float r = vm_fmaf(-kd, VM_LN2F_TAIL, vm_fmaf(-kd, VM_LN2F, xc));
    float em = vm_fmaf(r * r, vm_pexpf5(r), r);
    /* u = k + 256 > 0 and h = floor(k/2) + 128, in unsigned arithmetic:
     * t1 = 2^(h - 128) and t2 = 2^(u - h - 128), exponent fields h - 1 and
     * u - h - 1. (Any split of 2^k into two normal halves gives the same
     * bits: the fma's rounding does not depend on t1's exponent.) */
    uint32_t u = asu32(kp) + (256U - VM_RINT_BITS);
    uint32_t h = u >> 1;
    float t1 = asf32((h - 1U) << 23), t2 = asf32((u - h - 1U) << 23);
    float res = vm_fmaf(t1, em, t1) * t2;
    return x == x ? res : VM_NAN32;
}

#endif
