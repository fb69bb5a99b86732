/* The shared deterministic math library (DESIGN.md §6, §10).
 *
 * One C source of elementwise functions, compiled twice: by the C compiler
 * into the library (the interpreter calls these symbols) and by clang-19 into
 * LLVM bitcode embedded as ft_vm_bitcode (the JIT links it into each module
 * and inlines it). Both builds use -ffp-contract=off and no fast-math, and the
 * code has no libm calls, so the two engines give the same bits.
 *
 * Names: ft_vm_<fn>_f32(float...) and ft_vm_<fn>_f64(double...) for every fn
 * in vmath.def. Contract, for all of them:
 *   - every NaN result is the canonical positive quiet NaN (0x7fc00000,
 *     0x7ff8000000000000), whatever the NaN inputs were;
 *   - special values (±0, ±inf, domain errors -> NaN, pow's C99 cases)
 *     follow C99 Annex F, which is what JAX/XLA on CPU gives;
 *   - sqrt is the IEEE (correctly rounded) square root; rsqrt(x) = 1/sqrt(x)
 *     with two roundings, rsqrt(+0) = +inf, rsqrt(-0) = -inf;
 *   - logistic(x) = 1/(1+exp(-x)), computed without overflow;
 *   - erf_inv(±1) = ±inf, |x| > 1 -> NaN;
 *   - lgamma(x) = log|Γ(x)|, +inf at non-positive integers.
 * The measured maximum ulp errors are in docs/math.md.
 * Inputs and outputs are never flushed to zero: FTZ/DAZ must be off. */
#ifndef FT_VMATH_H
#define FT_VMATH_H

#include <stddef.h>
#include <stdint.h>

#define VM_UNARY(name, lo, hi) \
    float ft_vm_##name##_f32(float x); \
    double ft_vm_##name##_f64(double x);
#define VM_BINARY(name) \
    float ft_vm_##name##_f32(float x, float y); \
    double ft_vm_##name##_f64(double x, double y);
#define VM_TERNARY(name) \
    float ft_vm_##name##_f32(float x, float y, float z); \
    double ft_vm_##name##_f64(double x, double y, double z);
#include "lower/vmath/vmath.def"
#undef VM_UNARY
#undef VM_BINARY
#undef VM_TERNARY

/* The one-pass logsumexp of jax.nn.logsumexp over contiguous rows (f32),
 * run by both engines (runtime/interp_lse.c, the JIT's LSE steps): block
 * partials, then one combine per row. Contracts at the definitions
 * (vm_f32.c); how the result relates to the two-pass one: docs/jit.md. */
enum { FT_VM_LSE_BLOCK = 4096 };
float ft_vm_lse_block_f32(const float *x, int64_t n, float *m);
float ft_vm_lse_finish_f32(const float *x, int64_t n, const float *pm, const float *ps, int64_t nb,
                           float *shift);

/* The same functions as LLVM bitcode (clang-19 -O2 -ffp-contract=off),
 * for the JIT to link. Owned by the library; never freed. */
extern const unsigned char ft_vm_bitcode[];
extern const size_t ft_vm_bitcode_len;

#endif
