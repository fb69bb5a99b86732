#!/usr/bin/env python3
"""Conformance cases of issue 17's Bessel primitives (branch special):
bessel_i0e and bessel_i1e (elementwise, with jvp/vjp/vmap and grad of a
sum), f32 and f64, on both of Cephes' expansions (|x| <= 8 and |x| > 8),
the switch at 8, and the special values (0, -0, tiny |x| below eps where
i1e's jvp takes its 0.5 branch, inf, -inf, NaN).

Registered with gen_conformance.py's machinery and merged into the
committed fixtures/conformance/MANIFEST.json, as gen_prims017.py does:

  .venv-oracle/bin/python tools/oracle/gen_special.py
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


def bessel_inputs(rng, dty, edges):
    """x of shape (4, 6) over (-30, 30), a row near the switch at |x| = 8;
    with edges, the first row holds special values."""
    x = rng.uniform(-30.0, 30.0, size=(4, 6))
    x[1] = [8.0, -8.0, 7.5, 8.5, 0.25, -1.5]
    if edges:
        x[0] = [0.0, -0.0, 1e-9, np.inf, -np.inf, np.nan]
    return x.astype(dty)


def register_special():
    from jax import lax

    ELEM = ("jvp", "vjp", "vmap")
    for dtn in ("f32", "x64:f64"):
        x64 = dtn.startswith("x64:")
        d = dtn.split(":")[-1]
        pre = "x64_" if x64 else ""
        dty = G.dt(d)
        for nm, fn in (("bessel_i0e", lax.bessel_i0e), ("bessel_i1e", lax.bessel_i1e)):
            @mine(f"{pre}prim_{nm}_{d}", nm, ELEM)
            def b(rng, dty=dty, fn=fn):
                return fn, [bessel_inputs(rng, dty, False)]

            @mine(f"{pre}prim_{nm}_edges_{d}", nm)
            def b(rng, dty=dty, fn=fn):
                return fn, [bessel_inputs(rng, dty, True)]

            @mine(f"{pre}prim_{nm}_sum_{d}", nm, ("grad",))
            def b(rng, dty=dty, fn=fn):
                x = bessel_inputs(rng, dty, False)
                x[0, :2] = [1e-9, -1e-9]
                return (lambda x: fn(x).sum()), [x]


def main():
    G.main_extra(register_special, NAMES, __file__)


if __name__ == "__main__":
    main()
