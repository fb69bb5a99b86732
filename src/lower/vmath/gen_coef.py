#!/usr/bin/env python3
"""Generates vm_coef.h: every constant table of the vector math library.

Run by hand when a fit changes (needs mpmath, e.g. `pip install mpmath`):
    python3 src/lower/vmath/gen_coef.py > src/lower/vmath/vm_coef.h
The output is committed, so building the library needs neither Python nor
mpmath. Each polynomial is a Chebyshev interpolant computed at 80 digits,
written in the monomial basis of (x - centre), rounded to double, and checked
on a dense grid: the comment above each table gives that measured error.
"""
import sys
import mpmath as mp

mp.mp.dps = 80
out = []


def emit(s=""):
    out.append(s)


def mp_to_f32(v):
    import struct
    return struct.unpack("<f", struct.pack("<f", float(v)))[0]


def hexd(v):
    return float(v).hex()


def cheb_fit(f, a, b, c, deg):
    """Monomial coefficients (lowest first) of the degree-deg Chebyshev
    interpolant of f on [a, b], in powers of (x - c)."""
    a, b, c = mp.mpf(a), mp.mpf(b), mp.mpf(c)
    n = deg + 1
    mid, hw = (a + b) / 2, (b - a) / 2
    ts = [mp.cos(mp.pi * (j + mp.mpf(1) / 2) / n) for j in range(n)]
    fs = [f(mid + hw * t) for t in ts]
    ck = []
    for k in range(n):
        s = mp.fsum(fs[j] * mp.cos(k * mp.pi * (j + mp.mpf(1) / 2) / n) for j in range(n))
        ck.append(s * 2 / n)
    ck[0] /= 2
    # Chebyshev -> monomial in t.
    T = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]
    for k in range(2, n):
        prev, prev2 = T[k - 1], T[k - 2]
        cur = [mp.mpf(0)] * (k + 1)
        for i, v in enumerate(prev):
            cur[i + 1] += 2 * v
        for i, v in enumerate(prev2):
            cur[i] -= v
        T.append(cur)
    mt = [mp.mpf(0)] * n
    for k in range(n):
        for i, v in enumerate(T[k]):
            mt[i] += ck[k] * v
    # t = (u - s) / hw with u = x - c, s = mid - c: expand in powers of u.
    s = mid - c
    mu = [mp.mpf(0)] * n
    for i in range(n):
        scale = mt[i] / hw ** i
        for j in range(i + 1):
            mu[j] += scale * mp.binomial(i, j) * (-s) ** (i - j)
    return [float(v) for v in mu]


def check(f, coef, a, b, c, scale=None, npts=3000):
    """Max relative error (or error relative to scale(x)) of the rounded
    coefficients, evaluated exactly, over npts points of [a, b]."""
    worst = mp.mpf(0)
    a, b = mp.mpf(a), mp.mpf(b)
    for j in range(npts + 1):
        x = a + (b - a) * j / npts
        u = x - c
        p = mp.mpf(0)
        for v in reversed(coef):
            p = p * u + mp.mpf(v)
        ref = f(x)
        den = abs(scale(x)) if scale else abs(ref)
        if den == 0:
            continue
        worst = max(worst, abs(p - ref) / den)
    return worst


def log2err(e):
    return "0" if e == 0 else "2^%.1f" % float(mp.log(e, 2))


def horner_expr(coefs, var, fmt):
    """A Horner expression with explicit terms, so both compilers see
    straight-line code that vectorizes."""
    n = len(coefs)
    expr = fmt(n - 1)
    for k in range(n - 2, -1, -1):
        expr = "%s + %s * (%s)" % (fmt(k), var, expr)
    return expr


def poly(name, f, a, b, c, deg, scale=None, note="", single=False):
    coef = cheb_fit(f, a, b, c, deg)
    if single:
        coef = [float(mp_to_f32(v)) for v in coef]
    err = check(f, coef, a, b, c, scale)
    emit("/* %s: %s on [%s, %s], powers of (x - %s), degree %d; max %s error %s */"
         % (name, note, mp.nstr(mp.mpf(a), 8), mp.nstr(mp.mpf(b), 8), c, deg,
            "scaled" if scale else "relative", log2err(err)))
    ty = "float" if single else "double"
    emit("static const %s %s_c[%d] = {%s};" % (ty, name, deg + 1, ", ".join(
        (hexd(v) + "f") if single else hexd(v) for v in coef)))
    emit("static inline %s %s(%s u)\n{\n    return %s;\n}\n"
         % (ty, name, ty, horner_expr(coef, "u", lambda k: "%s_c[%d]" % (name, k))))
    sys.stderr.write("%-16s deg %2d  err %s\n" % (name, deg, log2err(err)))


def pieces(name, f, bounds, deg, mode="direct", note=""):
    """A piecewise table: piece i covers [bounds[i], bounds[i+1]] and is a
    polynomial in (x - centre_i). The caller picks i and centre_i."""
    rows, worst = [], mp.mpf(0)
    centres = []
    for i in range(len(bounds) - 1):
        a, b = bounds[i], bounds[i + 1]
        c = (a + b) / 2
        centres.append(c)
        coef = cheb_fit(f, a, b, c, deg)
        e = check(f, coef, a, b, c, npts=800)
        sys.stderr.write("    %s [%g, %g]: %s\n" % (name, a, b, log2err(e)))
        worst = max(worst, e)
        rows.append(coef)
    emit("/* %s: %s; %d pieces, degree %d, max relative error %s */"
         % (name, note, len(rows), deg, log2err(worst)))
    emit("static const double %s_bound[%d] = {%s};" % (name, len(bounds), ", ".join(hexd(v) for v in bounds)))
    emit("static const double %s_centre[%d] = {%s};" % (name, len(centres), ", ".join(hexd(v) for v in centres)))
    emit("static const double %s_c[%d][%d] = {" % (name, len(rows), deg + 1))
    for r in rows:
        emit("    {%s}," % ", ".join(hexd(v) for v in r))
    emit("};")
    emit("static inline double %s(int i, double u)\n{\n    return %s;\n}\n"
         % (name, horner_expr(rows[0], "u", lambda k: "%s_c[i][%d]" % (name, k))))
    sys.stderr.write("%-16s %d pieces deg %2d  err %s\n" % (name, len(rows), deg, log2err(worst)))


def split_bits(v, bits):
    """v rounded to a double with at most `bits` significant bits."""
    if v == 0:
        return mp.mpf(0)
    e = mp.floor(mp.log(abs(v), 2))
    q = mp.mpf(2) ** (e - bits + 1)
    return mp.nint(v / q) * q


def main():
    emit("/* Generated by src/lower/vmath/gen_coef.py: do not edit by hand. */")
    emit("#ifndef FT_VM_COEF_H\n#define FT_VM_COEF_H\n")

    # ---- log: 128-entry table of (1/c, -log(1/c) as hi+lo), ARM-style split.
    OFF = 0x3fe6955500000000
    N = 128
    invc, logc_hi, logc_lo = [], [], []
    import struct

    def asd(u):
        return struct.unpack("<d", struct.pack("<Q", u))[0]
    rmax = mp.mpf(0)
    for i in range(N):
        lo = mp.mpf(asd(OFF + (i << 45)))
        hi = mp.mpf(asd(OFF + ((i + 1) << 45))) if i + 1 < N else 2 * mp.mpf(asd(OFF))
        if lo <= 1 < hi:
            ic = mp.mpf(1)
        else:
            ic = mp.mpf(float(2 / (lo + hi)))
        rmax = max(rmax, abs(lo * ic - 1), abs(hi * ic - 1))
        lc = -mp.log(ic)
        h = float(lc)
        invc.append(float(ic))
        logc_hi.append(h)
        logc_lo.append(float(lc - mp.mpf(h)))
    emit("/* log: z in [0x1.6955p-1, 0x1.6955p0) is cut into %d intervals by the"
         " top 7 bits of (bits(z) - 0x3fe6955500000000); r = z*invc - 1 has"
         " |r| <= %s. The interval holding 1.0 has invc = 1 exactly. */"
         % (N, mp.nstr(rmax, 5)))
    emit("#define VM_LOG_OFF 0x3fe6955500000000ULL")
    emit("static const double vm_log_invc[%d] = {%s};" % (N, ", ".join(hexd(v) for v in invc)))
    emit("static const double vm_log_logc_hi[%d] = {%s};" % (N, ", ".join(hexd(v) for v in logc_hi)))
    emit("static const double vm_log_logc_lo[%d] = {%s};\n" % (N, ", ".join(hexd(v) for v in logc_lo)))
    ln2 = mp.log(2)
    ln2hi = split_bits(ln2, 42)
    emit("#define VM_LN2_HI %s /* 42 bits: k*hi exact for |k| < 2^11 */" % hexd(ln2hi))
    emit("#define VM_LN2_LO %s" % hexd(ln2 - ln2hi))
    emit("#define VM_LN2 %s" % hexd(ln2))
    emit("#define VM_LN2_TAIL %s" % hexd(ln2 - mp.mpf(float(ln2))))
    emit("#define VM_INVLN2 %s" % hexd(1 / ln2))
    emit("#define VM_PI_HI %s" % hexd(mp.pi))
    emit("#define VM_PI_LO %s" % hexd(mp.pi - mp.mpf(float(mp.pi))))
    emit("#define VM_PIO2_HI %s" % hexd(mp.pi / 2))
    emit("#define VM_PIO2_LO %s" % hexd(mp.pi / 2 - mp.mpf(float(mp.pi / 2))))
    emit("#define VM_PIO4_HI %s" % hexd(mp.pi / 4))
    emit("#define VM_PIO4_LO %s" % hexd(mp.pi / 4 - mp.mpf(float(mp.pi / 4))))
    emit("#define VM_2OPI %s" % hexd(2 / mp.pi))
    emit("#define VM_3PIO4 %s" % hexd(3 * mp.pi / 4))
    emit("#define VM_LNSQRT2PI %s" % hexd(mp.log(2 * mp.pi) / 2))
    emit("#define VM_LNPI %s" % hexd(mp.log(mp.pi)))
    # pi/2 in three 33-bit pieces and a tail (Cody-Waite for n < 2^20).
    rest = mp.pi / 2
    parts = []
    for k in range(3):
        p = split_bits(rest, 33)
        parts.append(p)
        rest -= p
    emit("#define VM_PIO2_1 %s" % hexd(parts[0]))
    emit("#define VM_PIO2_2 %s" % hexd(parts[1]))
    emit("#define VM_PIO2_3 %s" % hexd(parts[2]))
    emit("#define VM_PIO2_3T %s\n" % hexd(rest))
    # 2/pi as 24-bit integer chunks: chunk j holds bits [24j, 24j+24) after
    # the binary point, for the large-argument reduction.
    nchunk = 50
    mp.mp.dps = 450
    v = 2 / mp.pi
    chunks = []
    for j in range(nchunk):
        v *= 2 ** 24
        d = int(mp.floor(v))
        chunks.append(d)
        v -= d
    mp.mp.dps = 80
    emit("static const double vm_2opi_chunk[%d] = {%s};\n" % (nchunk, ", ".join("%d.0" % d for d in chunks)))

    # ---- polynomials
    def hp(g):  # evaluate g with enough digits to survive its cancellation
        def w(x):
            with mp.workdps(300):
                return +g(x)
        return w
    poly("vmc_log1p", hp(lambda r: (mp.log1p(r) - r + r * r / 2) / r ** 3 if r != 0 else mp.mpf(1) / 3),
         -0.0045, 0.0045, 0, 6, note="(log1p(r) - r + r^2/2)/r^3")
    lnh = mp.log(2) / 2
    poly("vmc_exp_r", lambda z: ((mp.sqrt(z) * (mp.exp(mp.sqrt(z)) + 1) / mp.expm1(mp.sqrt(z)) - 2) / z)
         if z != 0 else mp.mpf(1) / 6, 0, (lnh * mp.mpf(1.02)) ** 2, 0, 4,
         note="(r coth(r/2) - 2)/r^2 with z = r^2 (fdlibm form)")
    poly("vmc_expm1", hp(lambda r: (mp.expm1(r) - r - r * r / 2) / r ** 3 if r != 0 else mp.mpf(1) / 6),
         -lnh * mp.mpf(1.02), lnh * mp.mpf(1.02), 0, 10, note="(expm1(r) - r - r^2/2)/r^3")
    poly("vmc_expf", hp(lambda r: (mp.expm1(r) - r) / r ** 2 if r != 0 else mp.mpf(1) / 2),
         -lnh * mp.mpf(1.02), lnh * mp.mpf(1.02), 0, 4, note="(exp(r) - 1 - r)/r^2", single=True)
    poly("vmc_expf5", hp(lambda r: (mp.expm1(r) - r) / r ** 2 if r != 0 else mp.mpf(1) / 2),
         -lnh * mp.mpf(1.02), lnh * mp.mpf(1.02), 0, 5, note="(exp(r) - 1 - r)/r^2 (exp: < 1 ulp with FMA)",
         single=True)
    poly("vmc_expm1f", hp(lambda r: (mp.expm1(r) - r - r * r / 2) / r ** 3 if r != 0 else mp.mpf(1) / 6),
         -lnh * mp.mpf(1.02), lnh * mp.mpf(1.02), 0, 4, note="(expm1(r) - r - r^2/2)/r^3", single=True)
    sm = (mp.sqrt(2) - 1) / (mp.sqrt(2) + 1)
    poly("vmc_logf", hp(lambda z: (mp.log((1 + mp.sqrt(z)) / (1 - mp.sqrt(z))) - 2 * mp.sqrt(z)) / (mp.sqrt(z) * z)
                         if z != 0 else mp.mpf(2) / 3),
         0, sm * sm * mp.mpf(1.01), 0, 3, note="(log((1+s)/(1-s)) - 2s)/s^3, z = s^2", single=True)
    q4 = (mp.pi / 4 * mp.mpf(1.001)) ** 2
    poly("vmc_sin", lambda z: (mp.sin(mp.sqrt(z)) / mp.sqrt(z) - 1) / z if z != 0 else -mp.mpf(1) / 6,
         0, q4, 0, 6, note="(sin(r)/r - 1)/r^2, z = r^2")
    poly("vmc_cos", lambda z: (mp.cos(mp.sqrt(z)) - 1 + z / 2) / z ** 2 if z != 0 else mp.mpf(1) / 24,
         0, q4, 0, 6, note="(cos(r) - 1 + r^2/2)/r^4, z = r^2")
    poly("vmc_erf", lambda z: mp.erf(mp.sqrt(z)) / mp.sqrt(z) if z != 0 else 2 / mp.sqrt(mp.pi),
         0, 1, 0, 14, note="erf(x)/x, z = x^2")
    poly("vmc_atan", lambda z: (mp.atan(mp.sqrt(z)) / mp.sqrt(z) - 1) / z if z != 0 else -mp.mpf(1) / 3,
         0, 0.25, 0, 14, note="(atan(x)/x - 1)/x^2, z = x^2")
    poly("vmc_asin", lambda z: (mp.asin(mp.sqrt(z)) / mp.sqrt(z) - 1) / z if z != 0 else mp.mpf(1) / 6,
         0, 0.25, 0, 16, note="(asin(x)/x - 1)/x^2, z = x^2")
    pieces("vmc_atanp", mp.atan, [0.5, 0.625, 0.75, 0.875, 1.0], 13, note="atan(x)")
    pieces("vmc_erfcg", lambda x: mp.erfc(x) * mp.exp(x * x),
           [0.5, 0.75, 1, 1.5, 2, 3, 4, 6, 8, 12, 16, 22, 28], 17, note="erfc(x)*exp(x^2)")
    lg_h = lambda x: mp.loggamma(x) / ((x - 1) * (x - 2)) if x not in (1, 2) else (
        mp.diff(mp.loggamma, x) / (x - 2 if x == 1 else x - 1))
    pieces("vmc_lgh", lg_h, [0.5, 0.75, 1, 1.25, 1.5, 1.75, 2, 2.5, 3], 16,
           note="lgamma(x)/((x-1)(x-2))")
    pieces("vmc_lgd", mp.loggamma, [3, 4, 5, 6.5, 8, 10], 17, note="lgamma(x)")

    def erfinv_w(w):  # erfinv(y)/y as a function of w = -log(1 - y^2)
        y = mp.sqrt(-mp.expm1(-w))
        return mp.erfinv(y) / y if w != 0 else mp.sqrt(mp.pi) / 2
    pieces("vmc_einvw", erfinv_w, [0, 1, 2.5, 4.5, 6.25], 16, note="erfinv(y)/y in w = -log(1-y^2)")
    pieces("vmc_einvp", lambda p: erfinv_w(p * p), [2.5, 3.25, 4, 5, 6.25], 16,
           note="erfinv(y)/y in p = sqrt(w)")
    emit("#endif")
    print("\n".join(out))


main()
