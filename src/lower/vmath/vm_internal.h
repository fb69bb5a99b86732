/* Helpers shared by the vmath sources: bit casts, exact rounding tricks and
 * error-free transformations (two-sum, Dekker product).
 *
 * Rules every vmath source follows, so gcc and clang give the same bits and
 * clang's loops vectorize:
 *   - no libm calls, no fminf/fmaxf/rint: clamps and selects are ternaries;
 *   - no FP contraction (both compilers get -ffp-contract=off), no
 *     fast-math; a fused multiply-add is written out as vm_fmaf/vm_fma
 *     where an algorithm wants one: fma is correctly rounded, so every
 *     build gives the same bits (the JIT's host code uses the instruction;
 *     the library's gcc build gets an FMA clone of each function that uses
 *     it through VM_FMA_CLONES, and libm's fma on CPUs without FMA);
 *   - no branches on data: every path is computed and selected, so an
 *     inlined call inside a loop stays a straight-line body;
 *   - float-to-int conversions only of values known to be in range (NaN
 *     inputs are replaced before converting), so there is no UB to exploit. */
#ifndef FT_VM_INTERNAL_H
#define FT_VM_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "lower/vmath/vmath.h"
#include "lower/vmath/vm_coef.h"

static inline uint64_t asu64(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline double asf64(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static inline uint32_t asu32(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float asf32(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

#define VM_NAN64 asf64(0x7ff8000000000000ULL)
#define VM_NAN32 asf32(0x7fc00000U)
#define VM_INF64 asf64(0x7ff0000000000000ULL)
#define VM_INF32 asf32(0x7f800000U)

/* a*b + c with one rounding. */
static inline float vm_fmaf(float a, float b, float c)
{
    return __builtin_fmaf(a, b, c);
}

static inline double vm_fma(double a, double b, double c)
{
    return __builtin_fma(a, b, c);
}

/* For the functions that call vm_fmaf: in the library's gcc build on
 * x86-64, an FMA clone chosen at load time (ifunc), so the interpreter
 * gets the instruction instead of a libm call per use. The bitcode build
 * (clang) has no clones: the JIT compiles it for the host CPU. Sanitized
 * builds have none either: an ifunc resolver runs during relocation, before
 * the sanitizer runtime is up (TSan crashed there). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define VM_FMA_CLONES __attribute__((target_clones("fma", "default")))
#else
#define VM_FMA_CLONES
#endif

/* The canonical NaN for any NaN result (the contract in vmath.h). */
static inline double vm_canon64(double r)
{
    return r != r ? VM_NAN64 : r;
}

static inline float vm_canon32(float r)
{
    return r != r ? VM_NAN32 : r;
}

static inline double vm_fabs(double x)
{
    return asf64(asu64(x) & 0x7fffffffffffffffULL);
}

static inline float vm_fabsf(float x)
{
    return asf32(asu32(x) & 0x7fffffffU);
}

/* |x| with the sign of s. */
static inline double vm_copysign(double x, double s)
{
    return asf64((asu64(x) & 0x7fffffffffffffffULL) | (asu64(s) & 0x8000000000000000ULL));
}

static inline float vm_copysignf(float x, float s)
{
    return asf32((asu32(x) & 0x7fffffffU) | (asu32(s) & 0x80000000U));
}

static inline int vm_isinf(double x)
{
    return vm_fabs(x) == VM_INF64;
}

/* Round to nearest even, exact for |x| <= 2^51 (magic-number trick: valid
 * only because no fast-math reassociates it away). */
static inline double vm_rint(double x)
{
    return (x + 0x1.8p52) - 0x1.8p52;
}

static inline float vm_rintf(float x)
{
    return (x + 0x1.8p23f) - 0x1.8p23f;
}

/* 2^n for -1022 <= n <= 1023. */
static inline double vm_pow2i(int64_t n)
{
    return asf64((uint64_t)(n + 1023) << 52);
}

static inline float vm_pow2if(int32_t n)
{
    return asf32((uint32_t)(n + 127) << 23);
}

/* y * 2^n with one rounding for results in the subnormal range; n within
 * [-2044, 2046]. */
static inline double vm_scale(double y, int64_t n)
{
    int64_t n1 = n / 2;
    return y * vm_pow2i(n1) * vm_pow2i(n - n1);
}

static inline float vm_scalef(float y, int32_t n)
{
    int32_t n1 = n / 2;
    return y * vm_pow2if(n1) * vm_pow2if(n - n1);
}

/* s + e = a + b exactly (Knuth). */
static inline double vm_two_sum(double a, double b, double *e)
{
    double s = a + b;
    double bb = s - a;
    *e = (a - (s - bb)) + (b - bb);
    return s;
}

/* s + e = a + b exactly, given |a| >= |b| or a == 0 (Dekker). */
static inline double vm_fast_two_sum(double a, double b, double *e)
{
    double s = a + b;
    *e = b - (s - a);
    return s;
}

/* Veltkamp split: a = hi + lo, each with at most 26 significant bits.
 * Needs |a| < 2^995. */
static inline double vm_split(double a, double *lo)
{
    double c = 134217729.0 * a;
    double hi = c - (c - a);
    *lo = a - hi;
    return hi;
}

/* p + e = a * b exactly without FMA (Dekker); |a|, |b| < 2^995. */
static inline double vm_two_prod(double a, double b, double *e)
{
    double p = a * b;
    double al, bl;
    double ah = vm_split(a, &al);
    double bh = vm_split(b, &bl);
    *e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    return p;
}

/* sin(r + rl) and cos(r + rl) for |r| <= pi/4, |rl| <= ulp(r). */
static inline double vm_sin_kernel(double r, double rl)
{
    double z = r * r;
    return r + (r * z * vmc_sin(z) + rl * (1.0 - 0.5 * z));
}

static inline double vm_cos_kernel(double r, double rl)
{
    double zl, z = vm_two_prod(r, r, &zl);
    double hz = 0.5 * z;
    double w = 1.0 - hz;
    return w + (((1.0 - w) - hz) + ((z * z * vmc_cos(z) - 0.5 * zl) - r * rl));
}

/* Internal kernels shared between the vmath sources (hidden in the
 * library; internal after linking in the JIT). */
double ft_vm_exp_core(double x, double xlo, int64_t k);
double ft_vm_log_dd(double x, double *lo);
double ft_vm_log1p_acc_f64(double x);
double ft_vm_expm1_core(double x);
void ft_vm_sincos_core(double x, double *s, double *c);

#endif
