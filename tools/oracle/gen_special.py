#!/usr/bin/env python3
"""Conformance cases of issue 17's Bessel primitives (branch special):
bessel_i0e and bessel_i1e (elementwise, with jvp/vjp/vmap and grad of a
sum), f32 and f64, on both of Cephes' expansions (|x| <= 8 and |x| > 8),
the switch at 8, and the special values (0, -0, tiny |x| below eps where
i1e's jvp takes its 0.5 branch, inf, -inf, NaN).

regularized_incomplete_beta (lax.betainc, branch ribeta), f32 and f64:
values on both sides of JAX's switch to the symmetry relation, with vmap;
jvp, vjp and grad in x with a and b as literals (JAX refuses a tangent of
a or b); a row of edges (x = 0 and 1, a or b zero or infinite, NaN in each
operand, a below twice the smallest normal, huge a and b, operands out of
the domain); size-1 and rank-0 operand broadcasting.

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


def beta_inputs(rng, dty):
    """(a, b, x) of shape (4, 6): a, b in (0.3, 8), x in (0.02, 0.98); the
    second row puts x on the far side of (a + 1) / (a + b + 2), where JAX
    evaluates the fraction of I_{1-x}(b, a)."""
    a = rng.uniform(0.3, 8.0, size=(4, 6))
    b = rng.uniform(0.3, 8.0, size=(4, 6))
    x = rng.uniform(0.02, 0.98, size=(4, 6))
    sw = (a[1] + 1) / (a[1] + b[1] + 2)
    x[1] = sw + (1 - sw) * rng.uniform(0.05, 0.9, size=6)
    return a.astype(dty), b.astype(dty), x.astype(dty)


def beta_edges(dty):
    """(a, b, x) of shape (4, 6): JAX's special cases and extreme operands.
    `small` is below twice the smallest normal (JAX's small-a prefactor)
    but not subnormal (XLA flushes subnormal inputs)."""
    inf, nan = np.inf, np.nan
    small = 2e-38 if dty == np.float32 else 3e-308
    a = [[1.5, 2.0, 0.0, 3.0, inf, 2.0],
         [nan, 2.0, 2.0, -1.0, 2.0, 2.0],
         [small, 1e-3, 2.0, 1e4, 1e6, 0.5],
         [2.0, 3.0, 0.1, 50.0, 0.0, 0.0]]
    b = [[2.0, 3.0, 2.0, 0.0, 2.0, inf],
         [2.0, nan, 2.0, 2.0, -1.0, 2.0],
         [3.0, 3.0, small, 1e4, 1e6, 1e6],
         [2.0, 0.999, 20.0, 0.02, 0.0, 2.0]]
    x = [[0.0, 1.0, 0.5, 0.5, 0.5, 0.5],
         [0.5, 0.5, nan, 0.5, 0.5, -0.1],
         [0.3, 0.3, 0.3, 0.5, 0.5, 1e-6],
         [1.1, 0.999, 1e-5, 0.98, 0.5, 0.0]]
    return [np.array(v, dtype=dty) for v in (a, b, x)]


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

        nm = "regularized_incomplete_beta"

        @mine(f"{pre}prim_betainc_{d}", nm, ("vmap",))
        def b(rng, dty=dty):
            return lax.betainc, list(beta_inputs(rng, dty))

        @mine(f"{pre}prim_betainc_edges_{d}", nm)
        def b(rng, dty=dty):
            return lax.betainc, beta_edges(dty)

        @mine(f"{pre}prim_betainc_bcast_{d}", nm, ("vmap",))
        def b(rng, dty=dty):
            a, bb, x = beta_inputs(rng, dty)
            return lax.betainc, [a[:, :1], np.asarray(bb[0, 0]), x]

        def in_x(x):
            # JAX differentiates betainc in x only: a and b are literals here
            return (lax.betainc(0.5, 3.0, x), lax.betainc(2.5, 4.0, x),
                    lax.betainc(7.0, 1.5, x))

        @mine(f"{pre}prim_betainc_x_{d}", nm, ("jvp", "vjp", "vmap"))
        def b(rng, dty=dty):
            return in_x, [beta_inputs(rng, dty)[2]]

        @mine(f"{pre}prim_betainc_sum_{d}", nm, ("grad",))
        def b(rng, dty=dty):
            return (lambda x: lax.betainc(2.5, 4.0, x).sum()), [beta_inputs(rng, dty)[2]]


def main():
    G.main_extra(register_special, NAMES, __file__)


if __name__ == "__main__":
    main()
