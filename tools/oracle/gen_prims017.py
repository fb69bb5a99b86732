#!/usr/bin/env python3
"""Conformance cases of JAX 0.12's structural, integer and miscellaneous
primitives (issue 17 §1): stack, unstack, tile, polynomial, clz,
population_count, mulhi, reduce_xor, optimization_barrier,
sharding_constraint, layout_constraint, reshard, platform_index (through
jnp.diagonal), empty, scatter-sub, and select_and_gather_add /
select_and_scatter_add (through the jvp and grad of max/min pooling).

The cases are registered with gen_conformance.py's machinery (same
captures, same MANIFEST.json entries) but only these are run, and their
entries are merged into the committed fixtures/conformance/MANIFEST.json,
so the other fixtures are not regenerated:

  .venv-oracle/bin/python tools/oracle/gen_prims017.py
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


def register_prims017():
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax._src.lax import lax as llax
    from jax._src import pjit as jpjit

    VEC = ("grad", "jvp", "vjp", "vmap", "jacfwd", "jacrev")
    VOUT = ("jvp", "vjp", "vmap", "jacfwd", "jacrev")

    for dtn in ("f32", "x64:f64"):
        x64 = dtn.startswith("x64:")
        d = dtn.split(":")[-1]
        pre = "x64_" if x64 else ""
        dty = G.dt(d)

        @mine(f"{pre}prim_stack_{d}", "stack", VOUT)
        def b(rng, dty=dty):
            a, c = G.randn(rng, 2, 3, dtype=dty), G.randn(rng, 2, 3, dtype=dty)
            return (lambda a, c: jnp.stack([a, c, a * c], axis=1)), [a, c]

        @mine(f"{pre}prim_unstack_{d}", "unstack", VOUT)
        def b(rng, dty=dty):
            a = G.randn(rng, 3, 4, dtype=dty)
            return (lambda a: llax.unstack_p.bind(a, axis=1)), [a]

        @mine(f"{pre}prim_tile_{d}", "tile", VOUT)
        def b(rng, dty=dty):
            a = G.randn(rng, 2, 3, dtype=dty)
            return (lambda a: jnp.tile(a, (2, 3))), [a]

        @mine(f"{pre}prim_polyval_{d}", "polynomial", VOUT)
        def b(rng, dty=dty):
            c = G.randn(rng, 4, dtype=dty)
            x = G.fl_input(rng, dty, (7,), -2, 2, edges=False)
            return jnp.polyval, [c, x]

        @mine(f"{pre}prim_polynomial_bcast_{d}", "polynomial", VOUT)
        def b(rng, dty=dty):
            x = G.fl_input(rng, dty, (2, 3), -2, 2, edges=False)
            c0 = G.randn(rng, 2, 3, dtype=dty)
            c1 = G.randn(rng, 1, 3, dtype=dty)
            return (lambda x, c0, c1: lax.polynomial(x, [c0, c1, dty(0.5)])), [x, c0, c1]

        @mine(f"{pre}prim_polynomial_long_{d}", "polynomial", VOUT)
        def b(rng, dty=dty):  # 10 coefficients: JAX lowers it as a scan from zeros
            x = G.fl_input(rng, dty, (6,), -1.5, 1.5, edges=False)
            cs = [dty(v) for v in G.randn(rng, 10, dtype=dty)]
            return (lambda x: lax.polynomial(x, cs)), [x]

        @mine(f"{pre}prim_polynomial_edges_{d}", "polynomial")
        def b(rng, dty=dty):  # inf/nan/-0 through both the unrolled and the scan form
            x = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, 1.0], dty)
            return (lambda x: (lax.polynomial(x, [1.0, 2.0, 3.0]),
                               lax.polynomial(x, [1.0, 2.0, 3.0], unroll=1))), [x]

        @mine(f"{pre}prim_optimization_barrier_{d}", "optimization_barrier", VEC)
        def b(rng, dty=dty):
            a = G.randn(rng, 5, dtype=dty)
            def f(a):
                u, v = lax.optimization_barrier((jnp.sin(a), a * 2))
                return jnp.sum(u * v)
            return f, [a]

        @mine(f"{pre}prim_sharding_constraint_{d}", "sharding_constraint", VEC)
        def b(rng, dty=dty):
            a = G.randn(rng, 4, dtype=dty)
            s = jax.sharding.SingleDeviceSharding(jax.devices()[0])
            return (lambda a: jnp.sum(jax.lax.with_sharding_constraint(a * a, s))), [a]

        @mine(f"{pre}prim_reshard_{d}", "reshard", VOUT)
        def b(rng, dty=dty):
            a = G.randn(rng, 4, dtype=dty)
            mesh = jax.make_mesh((1,), ("x",))
            ns = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
            return (lambda a: jax.sharding.reshard(a * 3, ns)), [a]

        @mine(f"{pre}prim_diagonal_{d}", "platform_index", VOUT)
        def b(rng, dty=dty):  # jnp.diagonal of a square matrix: platform_index + cond
            a = G.randn(rng, 3, 3, dtype=dty)
            return jnp.diagonal, [a]

        @mine(f"{pre}prim_trace_diag_{d}", "platform_index", VEC)
        def b(rng, dty=dty):
            a = G.randn(rng, 4, 4, dtype=dty)
            return (lambda a: jnp.sum(jnp.diagonal(a) ** 2)), [a]

        @mine(f"{pre}prim_scatter_sub_{d}", "scatter-sub", VOUT)
        def b(rng, dty=dty):
            a = G.randn(rng, 4, 3, dtype=dty)
            u = G.randn(rng, 2, 3, dtype=dty)
            idx = np.array([2, 0], np.int32)
            return (lambda a, u: a.at[idx].subtract(u)), [a, u]

        # max/min pooling: JAX's jvp prints select_and_gather_add, its grad
        # select_and_scatter_add (transposed); strided, padded, overlapping
        @mine(f"{pre}prim_maxpool_{d}", "select_and_gather_add", VEC)
        def b(rng, dty=dty):
            x = G.randn(rng, 5, 6, dtype=dty)
            return (lambda x: jnp.sum(lax.reduce_window(x, -jnp.inf, lax.max, (2, 3), (2, 2),
                                                        ((1, 0), (0, 1))) ** 2)), [x]

        @mine(f"{pre}prim_minpool_{d}", "select_and_scatter_add", VEC)
        def b(rng, dty=dty):
            x = G.randn(rng, 6, 4, dtype=dty)
            return (lambda x: jnp.sum(jnp.sin(lax.reduce_window(x, jnp.inf, lax.min, (3, 2), (1, 1),
                                                                "VALID")))), [x]

        @mine(f"{pre}prim_maxpool_dilated_{d}", "select_and_gather_add", ("jvp", "vmap"))
        def b(rng, dty=dty):  # dilations: forward mode only (JAX cannot transpose it)
            x = G.randn(rng, 7, 5, dtype=dty)
            return (lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (1, 2), "SAME",
                                                base_dilation=(1, 2), window_dilation=(2, 1))), [x]

        @mine(f"{pre}prim_empty_{d}", "empty")
        def b(rng, dty=dty):
            a = G.randn(rng, 3, dtype=dty)
            return (lambda a: (lax.empty((2, 3), np.dtype(dty)), lax.empty((3,), jnp.int32), a)), [a]

    # layout_constraint with an explicit Layout (f32 only)
    from jax.experimental.layout import Layout, with_layout_constraint

    @mine("prim_layout_constraint_f32", "layout_constraint", VOUT)
    def b(rng):
        a = G.randn(rng, 2, 3)
        return (lambda a: with_layout_constraint(a + 1, Layout((0, 1)))), [a]

    # integer primitives
    for d in ("i8", "u8", "i32", "u32", "x64:i64", "x64:u64"):
        x64 = d.startswith("x64:")
        dn = d.split(":")[-1]
        pre = "x64_" if x64 else ""
        dty = G.dt(dn)

        @mine(f"{pre}prim_clz_{dn}", "clz")
        def b(rng, dty=dty):
            return lax.clz, [G.int_input(rng, dty, (24,))]

        @mine(f"{pre}prim_population_count_{dn}", "population_count")
        def b(rng, dty=dty):
            return lax.population_count, [G.int_input(rng, dty, (24,))]

        @mine(f"{pre}prim_mulhi_{dn}", "mulhi")
        def b(rng, dty=dty):
            return (lambda a, c: llax.mulhi_p.bind(a, c)), [G.int_input(rng, dty, (24,)),
                                                            G.int_input(rng, dty, (24,))]

        @mine(f"{pre}prim_reduce_xor_{dn}", "reduce_xor")
        def b(rng, dty=dty):
            a = G.int_input(rng, dty, (4, 6))
            return (lambda a: (lax.reduce(a, dty(0), lax.bitwise_xor, (0,)),
                               lax.reduce(a, dty(0), lax.bitwise_xor, (0, 1)))), [a]

    @mine("prim_reduce_xor_bool", "reduce_xor")
    def b(rng):
        a = G.bool_input(rng, (3, 5))
        return (lambda a: lax.reduce(a, np.bool_(False), lax.bitwise_xor, (1,))), [a]

    @mine("prim_stack_i32_bool", "stack")
    def b(rng):
        a = G.int_input(rng, np.dtype(np.int32), (3,))
        m = G.bool_input(rng, (3,))
        return (lambda a, m: (jnp.stack([a, a + 1], axis=0), jnp.stack([m, ~m], axis=1))), [a, m]

    # the _to comparisons (JAX binds them in sort comparators; bound here
    # directly): total order over signed zeros, NaNs and infinities
    for d in ("f32", "f16", "i32", "u32", "x64:f64"):
        x64 = d.startswith("x64:")
        dn = d.split(":")[-1]
        pre = "x64_" if x64 else ""
        dty = G.dt(dn)

        @mine(f"{pre}prim_total_order_{dn}", "lt_to")
        def b(rng, dty=dty):
            if np.issubdtype(dty, np.floating):
                v = np.array([-np.nan, -np.inf, -1.5, -0.0, 0.0, 1.5, np.inf, np.nan], dty)
                a = np.repeat(v, len(v)).astype(dty)
                c = np.tile(v, len(v)).astype(dty)
            else:
                a = G.int_input(rng, dty, (24,))
                c = np.concatenate([a[:12], G.int_input(rng, dty, (12,))]).astype(dty)
            return (lambda a, c: (llax.eq_to_p.bind(a, c), llax.le_to_p.bind(a, c),
                                  llax.lt_to_p.bind(a, c))), [a, c]


def main():
    G.main_extra(register_prims017, NAMES, __file__)


if __name__ == "__main__":
    main()
