#!/usr/bin/env python3
"""Conformance cases of the issue 17 leftovers (branch prims, third
round): JAX 0.12's SearchSorted HiPrim (jnp.searchsorted's four methods,
both sides, NaN / signed zero / infinity queries in lax.sort's total order,
integer and complex arrays, an unsorted array on which the binary search's
probes decide the answer, hijax.searchsorted's batch_dims and dimension,
vmap of a mapped sorted array, a mapped query, both), and the functions
built on it (jnp.digitize, jnp.interp); the Frexp and Ldexp HiPrims
(jnp.frexp, jnp.ldexp) on every float dtype's edge values (subnormals,
which JAX flushes, infinities, NaN, signed zeros) and extreme exponents; complex reduce_prod (jnp.prod of c64/c128);
the Nonzero HiPrim (jnp.nonzero, argwhere, flatnonzero, unique with size=,
fill values, hijax.nonzero's batch axes, vmap with a mapped fill value);
approx_top_k (lax.approx_max_k/approx_min_k: XLA's exact CPU fallback,
ties, NaN, signed zeros).

Registered with gen_conformance.py's machinery and merged into the
committed fixtures/conformance/MANIFEST.json, as gen_prims2.py does:

  .venv-oracle/bin/python tools/oracle/gen_prims3.py
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


METHODS = ("scan", "scan_unrolled", "compare_all", "sort")


def ss_sorted(dty):
    """A sorted array with duplicates, both zeros, infinities and NaNs at
    the end (lax.sort's order)."""
    return np.array([-np.inf, -3.0, -1.0, -0.0, 0.0, 0.0, 1.5, 1.5, 1.5, 7.0, np.inf, np.nan],
                    dtype=dty)


def ss_query(rng, dty):
    q = rng.uniform(-5, 9, size=(3, 6))
    q[0] = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0]
    q[1, :4] = [1.5, -3.0, 7.0, 100.0]
    return q.astype(dty)


def register_prims3():
    import jax
    import jax.numpy as jnp
    from jax._src.numpy import hijax

    for dtn in ("f32", "x64:f64"):
        x64 = dtn.startswith("x64:")
        d = dtn.split(":")[-1]
        pre = "x64_" if x64 else ""
        dty = G.dt(d)
        for m in METHODS:
            for side in ("left", "right"):
                @mine(f"{pre}prim_searchsorted_{m}_{side}_{d}", "SearchSorted", ("jvp", "vmap"))
                def b(rng, dty=dty, m=m, side=side):
                    return (lambda a, q: jnp.searchsorted(a, q, side=side, method=m)), \
                        [ss_sorted(dty), ss_query(rng, dty)]

            # an unsorted array: the binary search's probes decide (scan),
            # the counting methods count
            @mine(f"{pre}prim_searchsorted_unsorted_{m}_{d}", "SearchSorted")
            def b(rng, dty=dty, m=m):
                a = np.array([5.0, -1.0, 3.0, np.nan, 2.0, 0.0, 9.0, -4.0, 1.0], dtype=dty)
                return (lambda a, q: jnp.searchsorted(a, q, method=m)), [a, ss_query(rng, dty)]

        @mine(f"{pre}prim_searchsorted_sorter_{d}", "SearchSorted")
        def b(rng, dty=dty):
            a = rng.uniform(-4, 4, size=10).astype(dty)
            return (lambda a, s, q: jnp.searchsorted(a, q, side="right", sorter=s)), \
                [a, np.argsort(a).astype(np.int32), ss_query(rng, dty)]

        @mine(f"{pre}prim_searchsorted_dim_{d}", "SearchSorted", ("vmap",))
        def b(rng, dty=dty):
            a = np.sort(rng.uniform(-4, 4, size=(3, 7, 2)), axis=1).astype(dty)
            return (lambda a, q: hijax.searchsorted(a, q, dimension=1, side="right")), \
                [a, rng.uniform(-5, 5, size=(4, 2)).astype(dty)]

        @mine(f"{pre}prim_searchsorted_batch_{d}", "SearchSorted", ("vmap",))
        def b(rng, dty=dty):
            a = np.sort(rng.uniform(-4, 4, size=(3, 2, 6)), axis=2).astype(dty)
            return (lambda a, q: hijax.searchsorted(a, q, batch_dims=1, dimension=2,
                                                    method="compare_all")), \
                [a, rng.uniform(-5, 5, size=(3, 5)).astype(dty)]

        for nm, axes in (("sorted", (0, None)), ("query", (None, 1)), ("both", (1, 0))):
            @mine(f"{pre}prim_searchsorted_vmap_{nm}_{d}", "SearchSorted")
            def b(rng, dty=dty, axes=axes):
                a = np.sort(rng.uniform(-4, 4, size=(3, 8)), axis=1).astype(dty)
                q = rng.uniform(-5, 5, size=(3, 4)).astype(dty)
                if axes[0] == 1:
                    a = np.ascontiguousarray(a.T)
                if axes == (None, 1):
                    a = a[0]
                return jax.vmap(lambda a, q: jnp.searchsorted(a, q), in_axes=axes), [a, q]

        @mine(f"{pre}prim_digitize_{d}", "SearchSorted", ("jvp", "vmap"))
        def b(rng, dty=dty):
            bins = np.array([-2.0, -0.5, 0.0, 1.0, 3.0], dtype=dty)
            return (lambda x, bins: jnp.digitize(x, bins, right=True)), [ss_query(rng, dty), bins]

        @mine(f"{pre}prim_interp_{d}", "SearchSorted", ("jvp", "vjp", "vmap", "grad"))
        def b(rng, dty=dty):
            xp = np.sort(rng.uniform(-3, 3, size=8)).astype(dty)
            fp = rng.uniform(-1, 1, size=8).astype(dty)
            x = rng.uniform(-4, 4, size=6).astype(dty)
            return (lambda x, xp, fp: jnp.interp(x, xp, fp).sum()), [x, xp, fp]

    for dtn in ("f16", "bf16", "f32", "x64:f64"):
        x64 = dtn.startswith("x64:")
        d = dtn.split(":")[-1]
        pre = "x64_" if x64 else ""
        dty = G.dt(d)

        @mine(f"{pre}prim_frexp_{d}", "Frexp", ("jvp", "vjp", "vmap"))
        def b(rng, dty=dty):
            return jnp.frexp, [G.fl_input(rng, dty, (4, 6), -300, 300)]

        @mine(f"{pre}prim_ldexp_{d}", "Ldexp", ("jvp", "vjp", "vmap"))
        def b(rng, dty=dty):
            n = rng.integers(-40, 40, size=(4, 6)).astype(np.int32)
            n[3, :4] = [-100000, 100000, -2147483648, 2147483647]
            return jnp.ldexp, [G.fl_input(rng, dty, (4, 6), -300, 300), n]

    @mine("prim_ldexp_u8_f32", "Ldexp")
    def b(rng):
        return jnp.ldexp, [G.fl_input(rng, np.float32, (4, 6), -3, 3),
                           rng.integers(0, 256, size=(4, 6)).astype(np.uint8)]

    @mine("prim_frexp_ldexp_sum_f32", "Frexp", ("grad",))
    def b(rng):
        def f(x):
            m, e = jnp.frexp(x)
            return (jnp.ldexp(m * m, e) + m).sum()
        return f, [rng.uniform(-50, 50, size=(3, 5)).astype(np.float32)]

    for d, pre, dty in (("c64", "", np.complex64), ("c128", "x64_", np.complex128)):
        @mine(f"{pre}prim_reduce_prod_{d}", "reduce_prod")
        def b(rng, dty=dty):
            z = rng.uniform(0.5, 1.5, size=(3, 20)) * np.exp(1j * rng.uniform(-3, 3, size=(3, 20)))
            z[2, :3] = [np.inf + 0j, 0j, 1 + 1j]
            return (lambda z: (jnp.prod(z, axis=1), jnp.prod(z[:2, :5], axis=0))), [z.astype(dty)]

    def nz_input(rng, dty, shape):
        x = rng.integers(-1, 2, size=shape) * (rng.uniform(size=shape) < 0.5)
        x = x.astype(dty)
        if np.issubdtype(dty, np.floating):
            x.flat[1], x.flat[2] = -0.0, np.nan
        return x

    for nm, dty in (("f32", np.float32), ("i32", np.int32), ("bool", np.bool_)):
        @mine(f"prim_nonzero_{nm}", "Nonzero", ("vmap",))
        def b(rng, dty=dty):
            return (lambda x: jnp.nonzero(x, size=7)), [nz_input(rng, dty, (3, 5))]

    @mine("prim_nonzero_fill_f32", "Nonzero", ("vmap",))
    def b(rng):
        return (lambda x: jnp.nonzero(x, size=9, fill_value=(-1, 5))), [nz_input(rng, np.float32, (3, 4))]

    @mine("prim_nonzero_argwhere_f32", "Nonzero", ("vmap",))
    def b(rng):
        return (lambda x: jnp.argwhere(x, size=4, fill_value=3)), [nz_input(rng, np.float32, (2, 3, 2))]

    @mine("prim_nonzero_flat_c64", "Nonzero")
    def b(rng):
        z = np.array([0, 1j, 0, 2, 0 - 0j, np.nan, 0, 3 + 1j], dtype=np.complex64)
        return (lambda z: jnp.flatnonzero(z, size=6)), [z]

    @mine("prim_nonzero_batch_f32", "Nonzero")
    def b(rng):
        from jax._src.numpy import hijax
        x = nz_input(rng, np.float32, (4, 3, 5))
        return (lambda x: hijax.nonzero(x, size=6, axes=(0, 2), fill_value=(-1, 9))), [x]

    @mine("prim_nonzero_vmap_fill_f32", "Nonzero")
    def b(rng):
        x = nz_input(rng, np.float32, (3, 6))
        fv = np.array([-1, -2, -3], dtype=np.int32)
        return jax.vmap(lambda x, f: jnp.nonzero(x, size=5, fill_value=f)), [x, fv]

    @mine("prim_unique_size_f32", "Nonzero")
    def b(rng):
        return (lambda x: jnp.unique(x, size=6, fill_value=0.0)), \
            [rng.integers(0, 4, size=(9,)).astype(np.float32)]

    for dtn in ("f32", "x64:f64"):
        x64 = dtn.startswith("x64:")
        d = dtn.split(":")[-1]
        pre = "x64_" if x64 else ""
        dty = G.dt(d)
        for nm, fn in (("max", jax.lax.approx_max_k), ("min", jax.lax.approx_min_k)):
            @mine(f"{pre}prim_approx_{nm}_k_{d}", "approx_top_k", ("jvp", "vjp", "vmap"))
            def b(rng, dty=dty, fn=fn):
                x = rng.integers(-3, 4, size=(3, 12)).astype(dty)  # ties
                x[0, :5] = [np.nan, -0.0, 0.0, np.inf, -np.inf]
                return (lambda x: fn(x, 5)), [x]

            @mine(f"{pre}prim_approx_{nm}_k_axis0_{d}", "approx_top_k", ("vmap",))
            def b(rng, dty=dty, fn=fn):
                return (lambda x: fn(x, 3, reduction_dimension=0)), \
                    [rng.uniform(-2, 2, size=(7, 4)).astype(dty)]

    @mine("prim_searchsorted_i32", "SearchSorted", ("vmap",))
    def b(rng):
        a = np.array([-7, -2, -2, 0, 3, 3, 3, 10, 2147483647], dtype=np.int32)
        q = np.array([[-8, -2, 3, 2147483647], [0, 1, 10, -2147483648]], dtype=np.int32)
        return (lambda a, q: jnp.searchsorted(a, q, side="right")), [a, q]

    @mine("prim_searchsorted_u8_sort", "SearchSorted")
    def b(rng):
        a = np.array([0, 1, 1, 4, 200, 255], dtype=np.uint8)
        q = np.array([0, 1, 2, 255, 254, 100], dtype=np.uint8)
        return (lambda a, q: jnp.searchsorted(a, q, method="sort")), [a, q]

    @mine("prim_searchsorted_c64", "SearchSorted")
    def b(rng):
        a = np.array([-1 + 2j, 0 - 1j, 0 + 0j, 0 + 3j, 2 - 5j, np.nan + 0j], dtype=np.complex64)
        q = np.array([0 + 1j, 0 - 0j, 2 - 5j, 5 + 0j, -3 + 0j], dtype=np.complex64)
        return (lambda a, q: jnp.searchsorted(a, q, side="right")), [a, q]


def main():
    G.main_extra(register_prims3, NAMES, __file__)


if __name__ == "__main__":
    main()
