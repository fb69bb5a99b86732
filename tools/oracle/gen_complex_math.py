#!/usr/bin/env python3
"""fixtures/complex_math/cases.json: JAX 0.12's complex64/complex128 results
of the elementwise transcendentals (exp, log, sqrt, sin, cos, tan, sinh,
cosh, tanh, log1p, expm1, pow, exp2, logistic, sign), the inverse trigonometric and hyperbolic
functions (asin, acos, atan, asinh, acosh, atanh: random values, the
branch cuts on both sides of their signed zeros, the branch points and
large and tiny arguments) with their jvps, and the jvp of abs on complex
input, and the jvps of exp2, logistic and sign, for
tests/lower/test_complex_math.c. Values are stored as float.hex strings
of the parts. Deterministic (fixed seed).

  .venv-oracle/bin/python tools/oracle/gen_complex_math.py

XLA's bits depend on the CPU it compiles for (its fused multiply-adds in
complex products): rerun on this project's 2026-12-02 VM, the asin, acos,
asinh and acosh jvps differed from the committed ones by an ulp in a few
elements, so the exp2/logistic/sign cases were appended to the committed
file rather than replacing it.
"""
import json
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "fixtures", "complex_math", "cases.json")
FNS = ["exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "log1p", "expm1"]
INV = ["asin", "acos", "atan", "asinh", "acosh", "atanh"]


def inverse_inputs(rng):
    """Random values, then the cuts (real axis beyond +-1, imaginary axis
    beyond +-i) with either signed zero, just off them, the branch points,
    zeros, tiny and large values (within float32's range)."""
    z = list(rng.uniform(-3, 3, 16) + 1j * rng.uniform(-3, 3, 16))
    for v in (2.0, 1.5, 1e3, 0.5):
        for s in (1.0, -1.0):
            z += [complex(s * v, 0.0), complex(s * v, -0.0)]
            z += [complex(0.0, s * v), complex(-0.0, s * v)]
    z += [2 + 1e-9j, 2 - 1e-9j, -2 + 1e-9j, 1e-9 + 2j, -1e-9 + 2j, -1e-9 - 2j]
    z += [1 + 0j, -1 + 0j, 1j, -1j, 0j, complex(-0.0, 0.0), complex(0.0, -0.0)]
    z += [1e-20 + 1e-20j, -3e-8 + 2e-8j, 1e30 + 1e30j, -3e37 + 1j, 1 - 3e37j,
          0.999 + 1e-3j, -1.001 - 1e-4j, 1e-3 + 1.0001j]
    return np.array(z, dtype=np.complex128)


def parts(a):
    a = np.asarray(a).reshape(-1)
    return [[float(v.real).hex(), float(v.imag).hex()] for v in a.astype(np.complex128)]


def main():
    rng = np.random.default_rng(17)
    n = 24
    z = rng.uniform(-3, 3, n) + 1j * rng.uniform(-3, 3, n)
    z[:6] = [1 + 2j, -1 + 0.5j, 0.5 - 0.25j, -2 - 1j, 1e-3 + 2e-3j, 10 + 1j]
    w = rng.uniform(-2, 2, n) + 1j * rng.uniform(-1, 1, n)
    cases = []
    for dtn, ct in (("c64", np.complex64), ("c128", np.complex128)):
        x = jnp.asarray(z.astype(ct))
        for f in FNS:
            cases.append({"prim": f, "dtype": dtn, "x": parts(x),
                          "y": parts(getattr(lax, f)(x))})
        y = jnp.asarray(w.astype(ct))
        cases.append({"prim": "pow", "dtype": dtn, "x": parts(x), "w": parts(y),
                      "y": parts(lax.pow(x, y))})
        t = jnp.asarray((np.roll(z, 3) * 0.5).astype(ct))
        _, dy = jax.jvp(jnp.abs, (x,), (t,))
        cases.append({"prim": "abs_jvp", "dtype": dtn, "x": parts(x), "t": parts(t),
                      "y": [[float(v).hex(), "0x0.0p+0"] for v in np.asarray(dy, np.float64)]})
    zi = inverse_inputs(rng)
    zt = rng.uniform(-3, 3, 16) + 1j * rng.uniform(-3, 3, 16)
    tt = rng.uniform(-1, 1, 16) + 1j * rng.uniform(-1, 1, 16)
    # asinh's jvp scales x so that its squares cannot overflow: two values
    # whose squares overflow in c64, for asinh only (the others' jvps
    # overflow there too, and XLA contracts the complex products into fmas,
    # which changes the overflowed result; FrankenTrace does not contract)
    zb = zt.copy()
    zb[:2] = [1e30 + 2e30j, -3e20 + 1j]
    for dtn, ct in (("c64", np.complex64), ("c128", np.complex128)):
        x = jnp.asarray(zi.astype(ct))
        for f in INV:
            cases.append({"prim": f, "dtype": dtn, "x": parts(x),
                          "y": parts(getattr(lax, f)(x))})
        t = jnp.asarray(tt.astype(ct))
        for f in INV:
            x = jnp.asarray((zb if f == "asinh" else zt).astype(ct))
            _, dy = jax.jvp(getattr(lax, f), (x,), (t,))
            cases.append({"prim": f + "_jvp", "dtype": dtn, "x": parts(x), "t": parts(t),
                          "y": parts(dy)})
    # exp2, logistic, sign (branch ribeta): the 24 values above plus zeros
    # (sign(0) = 0), a real and an imaginary one and tiny and large ones;
    # their jvps on 16 random values (sign's: JAX 0.12's _sign_jvp_rule)
    # and at 0 for sign. Drawn after the others, which keep their values.
    ze = np.concatenate([z, [0j, complex(-0.0, 0.0), 3 + 0j, -2j, 1e-30 + 1e-30j,
                             -40 + 1j, 40 - 2j, 1e30 - 1e30j]])
    zj = rng.uniform(-3, 3, 16) + 1j * rng.uniform(-3, 3, 16)
    zj[-1] = 0j
    tj = rng.uniform(-1, 1, 16) + 1j * rng.uniform(-1, 1, 16)
    for dtn, ct in (("c64", np.complex64), ("c128", np.complex128)):
        for f in ("exp2", "logistic", "sign"):
            x = jnp.asarray((ze if f == "sign" else ze[:-1]).astype(ct))
            cases.append({"prim": f, "dtype": dtn, "x": parts(x),
                          "y": parts(getattr(lax, f)(x))})
            x, t = jnp.asarray(zj.astype(ct)), jnp.asarray(tj.astype(ct))
            _, dy = jax.jvp(getattr(lax, f), (x,), (t,))
            cases.append({"prim": f + "_jvp", "dtype": dtn, "x": parts(x), "t": parts(t),
                          "y": parts(dy)})
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as fh:
        json.dump({"jax_version": jax.__version__, "cases": cases}, fh, indent=0, sort_keys=True)
        fh.write("\n")


if __name__ == "__main__":
    main()
