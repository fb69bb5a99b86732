/* The regularized incomplete gamma functions and the derivative in a:
 * igamma P(a, x), igammac Q(a, x), igamma_grad_a dP/da.
 *
 * Written as JAX 0.12 lowers them (jax/_src/lax/special.py: igamma_impl,
 * igammac_impl, igamma_grad_a_impl and their
 * _igamma_series / _igammac_continued_fraction loops, Cephes' algorithm
 * with forward-mode derivatives), in the operands' own precision: the f32
 * functions compute in float as XLA does, so the only differences from
 * JAX are those of the log/exp/lgamma/digamma they call (ulps), not of the
 * algorithm. JAX runs each loop over the whole array with a per-element
 * 'enabled' mask that freezes finished elements; per element that is the
 * scalar loop below (the continued fraction's counter c runs for every
 * element, but only enabled elements read it).
 *
 * Departure from vm_internal.h's no-branches rule: the loops end when their
 * element converges (up to 2000 steps), so they branch on data; vm_llvm.c
 * keeps these functions out of line (as zeta), and the bits are the same in
 * both builds (no contraction, no libm). */
#include "lower/vmath/vm_internal.h"

enum { VM_IG_VALUE, VM_IG_DERIV };

#define VM_IGAMMA_DEFS(T, SFX, EPS, MAXV)                                                      \
    /* The series of P(a, x) (x < a or x < 1), as _igamma_series. */                          \
    static T vm_ig_series_##SFX(T ax, T x, T a, int enabled, int mode)                        \
    {                                                                                          \
        T r = a, c = 1, ans = 1, dc_da = 0, dans_da = 0;                                       \
        while (enabled) {                                                                      \
            r = r + (T)1;                                                                      \
            dc_da = dc_da * (x / r) - (c * x) / (r * r);                                       \
            dans_da = dans_da + dc_da;                                                         \
            c = c * (x / r);                                                                   \
            ans = ans + c;                                                                     \
            T q = dc_da / dans_da;                                                             \
            enabled = mode == VM_IG_VALUE ? c / ans > (T)EPS : (q < 0 ? -q : q) > (T)EPS;      \
        }                                                                                      \
        if (mode == VM_IG_VALUE) return (ans * ax) / a;                                        \
        T dlogax_da = ft_vm_log_##SFX(x) - ft_vm_digamma_##SFX(a + (T)1);                      \
        return ax * (ans * dlogax_da + dans_da) / a;                                           \
    }                                                                                          \
                                                                                               \
    /* The continued fraction of Q(a, x), as _igammac_continued_fraction. */                  \
    static T vm_ig_cf_##SFX(T ax, T x, T a, int enabled, int mode)                            \
    {                                                                                          \
        T y = (T)1 - a, z = x + y + (T)1, c = 0;                                               \
        T pkm2 = 1, qkm2 = x, pkm1 = x + (T)1, qkm1 = z * x;                                   \
        T ans = pkm1 / qkm1;                                                                   \
        T dpkm2 = 0, dqkm2 = 0, dpkm1 = 0, dqkm1 = -x;                                         \
        T dans = (dpkm1 - ans * dqkm1) / qkm1;                                                 \
        const T big = (T)1 / (T)EPS;                                                           \
        while (c < (T)2000 && enabled) {                                                       \
            c = c + (T)1;                                                                      \
            y = y + (T)1;                                                                      \
            z = z + (T)2;                                                                      \
            T yc = y * c;                                                                      \
            T pk = pkm1 * z - pkm2 * yc;                                                       \
            T qk = qkm1 * z - qkm2 * yc;                                                       \
            int nz = qk != (T)0;                                                               \
            T r = pk / qk;                                                                     \
            T d = (ans - r) / r;                                                               \
            T t = nz ? (d < 0 ? -d : d) : (T)1;                                                \
            ans = nz ? r : ans;                                                                \
            T dpk = dpkm1 * z - pkm1 - dpkm2 * yc + pkm2 * c;                                  \
            T dqk = dqkm1 * z - qkm1 - dqkm2 * yc + qkm2 * c;                                  \
            T dn = nz ? (dpk - ans * dqk) / qk : dans;                                         \
            T gd = dn - dans;                                                                  \
            T g = nz ? (gd < 0 ? -gd : gd) : (T)1;                                             \
            pkm2 = pkm1, pkm1 = pk, qkm2 = qkm1, qkm1 = qk;                                    \
            dpkm2 = dpkm1, dqkm2 = dqkm1, dpkm1 = dpk, dqkm1 = dqk;                            \
            if ((pk < 0 ? -pk : pk) > big) {                                                   \
                pkm2 = pkm2 * (T)EPS, pkm1 = pkm1 * (T)EPS;                                    \
                qkm2 = qkm2 * (T)EPS, qkm1 = qkm1 * (T)EPS;                                    \
                dpkm2 = dpkm2 * (T)EPS, dqkm2 = dqkm2 * (T)EPS;                                \
                dpkm1 = dpkm1 * (T)EPS, dqkm1 = dqkm1 * (T)EPS;                                \
            }                                                                                  \
            dans = dn;                                                                         \
            enabled = mode == VM_IG_VALUE ? t > (T)EPS : g > (T)EPS;                           \
        }                                                                                      \
        if (mode == VM_IG_VALUE) return ans * ax;                                              \
        T dlogax_da = ft_vm_log_##SFX(x) - ft_vm_digamma_##SFX(a);                             \
        return ax * (ans * dlogax_da + dans);                                                  \
    }                                                                                          \
                                                                                               \
    /* a log x - x - lgamma(a), and whether it is below -log(max). */                         \
    static T vm_ig_ax_##SFX(T a, T x, int *underflow)                                         \
    {                                                                                          \
        T ax = a * ft_vm_log_##SFX(x) - x - ft_vm_lgamma_##SFX(a);                             \
        *underflow = ax < -ft_vm_log_##SFX((T)MAXV);                                           \
        return ft_vm_exp_##SFX(ax);                                                            \
    }                                                                                          \
                                                                                               \
    T ft_vm_igamma_##SFX(T a, T x)                                                             \
    {                                                                                          \
        int nan = a != a || x != x, x_inf = x == (T)VM_INF64, a_inf = a == (T)VM_INF64;        \
        int a0 = a == (T)0, x0 = x == (T)0;                                                    \
        int dom = x < (T)0 || a < (T)0 || (a0 && x0) || (a_inf && x_inf) || nan;               \
        int use_c = x >= (T)1 && x > a, under;                                                 \
        T ax = vm_ig_ax_##SFX(a, x, &under);                                                   \
        int en = !(x0 || dom || under || x_inf || a_inf);                                      \
        T out = use_c ? (T)1 - vm_ig_cf_##SFX(ax, x, a, en && use_c, VM_IG_VALUE)              \
                      : vm_ig_series_##SFX(ax, x, a, en && !use_c, VM_IG_VALUE);               \
        out = a_inf ? (T)0 : out;                                                              \
        out = x0 ? (T)0 : out;                                                                 \
        out = x_inf ? (T)1 : out;                                                              \
        return vm_canon_##SFX(dom ? (T)VM_NAN64 : out);                                        \
    }                                                                                          \
                                                                                               \
    T ft_vm_igammac_##SFX(T a, T x)                                                            \
    {                                                                                          \
        int nan = a != a || x != x, x_inf = x == (T)VM_INF64, a_inf = a == (T)VM_INF64;        \
        int a0 = a == (T)0, x0 = x == (T)0;                                                    \
        int dom = x < (T)0 || a < (T)0 || (a0 && x0) || (a_inf && x_inf) || nan;               \
        int use_p = x < (T)1 || x < a, under;                                                  \
        T ax = vm_ig_ax_##SFX(a, x, &under);                                                   \
        int en = !(dom || under || x_inf || a0 || a_inf);                                      \
        T out = use_p ? (T)1 - vm_ig_series_##SFX(ax, x, a, en && use_p, VM_IG_VALUE)          \
                      : vm_ig_cf_##SFX(ax, x, a, en && !use_p, VM_IG_VALUE);                   \
        out = a_inf ? (T)1 : out;                                                              \
        out = (x_inf || a0) ? (T)0 : out;                                                      \
        return vm_canon_##SFX(dom ? (T)VM_NAN64 : out);                                        \
    }                                                                                          \
                                                                                               \
    T ft_vm_igamma_grad_a_##SFX(T a, T x)                                                      \
    {                                                                                          \
        int nan = a != a || x != x, x0 = x == (T)0;                                            \
        int dom = x < (T)0 || a <= (T)0;                                                       \
        int use_c = x > (T)1 && x > a, under;                                                  \
        T ax = vm_ig_ax_##SFX(a, x, &under);                                                   \
        int en = !(x0 || dom || under || nan);                                                 \
        T out = use_c ? -vm_ig_cf_##SFX(ax, x, a, en && use_c, VM_IG_DERIV)                           \
                      : vm_ig_series_##SFX(ax, x, a, en && !use_c, VM_IG_DERIV);                      \
        out = x0 ? (T)0 : out;                                                                 \
        return vm_canon_##SFX((dom || nan) ? (T)VM_NAN64 : out);                               \
    }

static inline float vm_canon_f32(float r) { return vm_canon32(r); }
static inline double vm_canon_f64(double r) { return r != r ? VM_NAN64 : r; }

VM_IGAMMA_DEFS(float, f32, 0x1p-23f, 3.40282346638528859812e+38f)
VM_IGAMMA_DEFS(double, f64, 0x1p-52, 1.79769313486231570815e+308)
