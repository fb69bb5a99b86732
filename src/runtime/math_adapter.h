/* src/runtime/math_adapter.h: the one place where the interpreter gets its
 * transcendental functions. They come from the shared vector math library
 * (src/lower/vmath), so the interpreter and the JIT agree bitwise
 * (DESIGN.md §6, §10). FT_USE_VMATH 0 falls back to libm (plus a local
 * erf_inv) for builds without vmath; such builds do not agree with the JIT. */
#ifndef FT_MATH_ADAPTER_H
#define FT_MATH_ADAPTER_H

#include <math.h>

#ifndef FT_USE_VMATH
#define FT_USE_VMATH 1
#endif

#if FT_USE_VMATH
#include "lower/vmath/vmath.h"
#define FTM(name, sfx) ft_vm_##name##_##sfx
#else

static inline float ftm_logistic_f32(float x) { return 1.0f / (1.0f + expf(-x)); }
static inline double ftm_logistic_f64(double x) { return 1.0 / (1.0 + exp(-x)); }

/* erf_inv by Giles' approximation refined with two Newton steps in double. */
static inline double ftm_erf_inv_f64(double x) {
  if (isnan(x) || x < -1.0 || x > 1.0) return NAN;
  if (x == 1.0) return INFINITY;
  if (x == -1.0) return -INFINITY;
  if (x == 0.0) return x;
  double w = -log((1.0 - x) * (1.0 + x)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;  p = -0.00125372503 + p * w; p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;    p = 1.50140941 + p * w;
  } else {
    w = sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w; p = 0.00134934322 + p * w;  p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;  p = -0.0076224613 + p * w;  p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;     p = 2.83297682 + p * w;
  }
  double y = p * x;
  for (int i = 0; i < 2; i++) {
    double err = erf(y) - x;
    y -= err / (1.1283791670955126 * exp(-y * y));
  }
  return y;
}
static inline float ftm_erf_inv_f32(float x) { return (float)ftm_erf_inv_f64(x); }

#define FTM_LIBM(name, f, d)                                                   \
  static inline float ftm_##name##_f32(float x) { return f(x); }               \
  static inline double ftm_##name##_f64(double x) { return d(x); }
FTM_LIBM(exp, expf, exp)
FTM_LIBM(exp2, exp2f, exp2)
FTM_LIBM(log, logf, log)
FTM_LIBM(log1p, log1pf, log1p)
FTM_LIBM(expm1, expm1f, expm1)
FTM_LIBM(tanh, tanhf, tanh)
FTM_LIBM(sin, sinf, sin)
FTM_LIBM(cos, cosf, cos)
FTM_LIBM(tan, tanf, tan)
FTM_LIBM(erf, erff, erf)
FTM_LIBM(erfc, erfcf, erfc)
FTM_LIBM(cbrt, cbrtf, cbrt)
FTM_LIBM(atan, atanf, atan)
FTM_LIBM(asin, asinf, asin)
FTM_LIBM(acos, acosf, acos)
FTM_LIBM(sinh, sinhf, sinh)
FTM_LIBM(cosh, coshf, cosh)
FTM_LIBM(asinh, asinhf, asinh)
FTM_LIBM(acosh, acoshf, acosh)
FTM_LIBM(atanh, atanhf, atanh)
#undef FTM_LIBM
static inline float ftm_sqrt_f32(float x) { return sqrtf(x); }
static inline double ftm_sqrt_f64(double x) { return sqrt(x); }
static inline float ftm_rsqrt_f32(float x) { return 1.0f / sqrtf(x); }
static inline double ftm_rsqrt_f64(double x) { return 1.0 / sqrt(x); }
static inline float ftm_pow_f32(float x, float y) { return powf(x, y); }
static inline double ftm_pow_f64(double x, double y) { return pow(x, y); }
static inline float ftm_atan2_f32(float y, float x) { return atan2f(y, x); }
static inline double ftm_atan2_f64(double y, double x) { return atan2(y, x); }
/* No libm has these: the library's own (they are in every build). */
#include "lower/vmath/vmath.h"
#define ftm_lgamma_f32 ft_vm_lgamma_f32
#define ftm_lgamma_f64 ft_vm_lgamma_f64
#define ftm_digamma_f32 ft_vm_digamma_f32
#define ftm_digamma_f64 ft_vm_digamma_f64
#define ftm_bessel_i0e_f32 ft_vm_bessel_i0e_f32
#define ftm_bessel_i0e_f64 ft_vm_bessel_i0e_f64
#define ftm_bessel_i1e_f32 ft_vm_bessel_i1e_f32
#define ftm_bessel_i1e_f64 ft_vm_bessel_i1e_f64
#define ftm_polygamma_f32 ft_vm_polygamma_f32
#define ftm_polygamma_f64 ft_vm_polygamma_f64
#define ftm_zeta_f32 ft_vm_zeta_f32
#define ftm_zeta_f64 ft_vm_zeta_f64
#define ftm_igamma_f32 ft_vm_igamma_f32
#define ftm_igamma_f64 ft_vm_igamma_f64
#define ftm_igammac_f32 ft_vm_igammac_f32
#define ftm_igammac_f64 ft_vm_igammac_f64
#define ftm_igamma_grad_a_f32 ft_vm_igamma_grad_a_f32
#define ftm_igamma_grad_a_f64 ft_vm_igamma_grad_a_f64
#define ftm_betainc_f32 ft_vm_betainc_f32
#define ftm_betainc_f64 ft_vm_betainc_f64
#define FTM(name, sfx) ftm_##name##_##sfx
#endif

#endif /* FT_MATH_ADAPTER_H */
