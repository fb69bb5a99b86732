#!/usr/bin/env python3
"""Conformance cases of the issue 17 leftovers (branch prims2): igamma,
igammac and igamma_grad_a (elementwise, with jvp/vjp/vmap, and grad of a
sum so that JAX's jvp rule in a binds igamma_grad_a), f32 and f64, on
both branches of JAX's lowering (series for x < a or x < 1, continued
fraction otherwise) and its special values (x = 0, x = inf, a = inf,
domain errors, NaN); log2 (lax.log2, which jnp.log2 binds in 0.12);
complex64/complex128 asin, acos, atan, asinh, acosh, atanh (with jvp and
vmap) on values on both sides of their branch cuts and near them.

Registered with gen_conformance.py's machinery and merged into the
committed fixtures/conformance/MANIFEST.json, as gen_prims017.py does:

  .venv-oracle/bin/python tools/oracle/gen_prims2.py
"""
from __future__ import annotations

import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import numpy as np  # noqa: E402

import gen_conformance as G  # noqa: E402

NAMES, mine = G.prim_collector()


def ig_inputs(rng, dty, edges):
    """(a, x) of shape (4, 6): a in (0.05, 12), x in [0, 20), half of the
    elements on each side of JAX's series / continued fraction switch; with
    edges, the first row holds special values."""
    a = rng.uniform(0.05, 12.0, size=(4, 6))
    x = a * rng.uniform(0.2, 1.8, size=(4, 6))
    x[1, :3] = rng.uniform(0, 1, size=3)
    if edges:
        a[0] = [0.0, 1.0, np.inf, -1.0, np.nan, 3.0]
        x[0] = [0.0, 0.0, 5.0, 2.0, 1.0, np.inf]
    return a.astype(dty), x.astype(dty)


def cpx_inputs(rng, dty):
    """(3, 8) complex values: a row of random values, a row on the cuts
    (the real axis beyond +-1, the imaginary axis beyond +-i, both signed
    zeros) and a row just off them, at the branch points and at 0."""
    z = rng.uniform(-3, 3, size=(3, 8)) + 1j * rng.uniform(-3, 3, size=(3, 8))
    z[1] = [complex(2, 0), complex(2, -0.0), complex(-1.5, 0), complex(-1.5, -0.0),
            complex(0, 2), complex(-0.0, 2), complex(0, -1.5), complex(-0.0, -1.5)]
    z[2] = [2 + 1e-6j, 2 - 1e-6j, -2 + 1e-6j, 1e-6 + 2j, -1e-6 - 2j, 1 + 0j, -1j, 0j]
    return z.astype(dty)


def register_prims2():
    from jax import lax
    from jax._src.lax import special as S

    ELEM = ("jvp", "vjp", "vmap")
    for dtn in ("f32", "x64:f64"):
        x64 = dtn.startswith("x64:")
        d = dtn.split(":")[-1]
        pre = "x64_" if x64 else ""
        dty = G.dt(d)
        for nm, fn, ts in (("igamma", lax.igamma, ELEM), ("igammac", lax.igammac, ELEM),
                           ("igamma_grad_a", S.igamma_grad_a, ("vmap",))):
            @mine(f"{pre}prim_{nm}_{d}", nm, ts)
            def b(rng, dty=dty, fn=fn):
                return fn, list(ig_inputs(rng, dty, False))

            @mine(f"{pre}prim_{nm}_edges_{d}", nm)
            def b(rng, dty=dty, fn=fn):
                return fn, list(ig_inputs(rng, dty, True))

        @mine(f"{pre}prim_log2_{d}", "log2", ("jvp", "vjp", "vmap"))
        def b(rng, dty=dty):
            x = rng.uniform(0, 40, size=(3, 5))
            x[0] = [0.0, -1.0, np.inf, np.nan, 1.0]
            x[1, :3] = [2.0, 8.0, 0.5]
            return lax.log2, [x.astype(dty)]

        @mine(f"{pre}prim_log2_sum_{d}", "log2", ("grad",))
        def b(rng, dty=dty):
            return (lambda x: lax.log2(x).sum()), [rng.uniform(0.1, 40, size=(3, 5)).astype(dty)]

        cd = "c64" if d == "f32" else "c128"
        cdty = np.complex64 if d == "f32" else np.complex128
        for nm in ("asin", "acos", "atan", "asinh", "acosh", "atanh"):
            @mine(f"{pre}prim_{nm}_{cd}", nm, ("jvp", "vmap"))
            def b(rng, cdty=cdty, fn=getattr(lax, nm)):
                return fn, [cpx_inputs(rng, cdty)]

        for nm, fn in (("igamma", lax.igamma), ("igammac", lax.igammac)):
            @mine(f"{pre}prim_{nm}_sum_{d}", nm, ("grad",))
            def b(rng, dty=dty, fn=fn):
                return (lambda a, x: fn(a, x).sum()), list(ig_inputs(rng, dty, False))


def main():
    G.main_extra(register_prims2, NAMES, __file__)


if __name__ == "__main__":
    main()
