#!/usr/bin/env python3
"""Generate the `ctlprims` conformance family (fixtures/ctlprims/, issue 17
§1's last numerical primitives): JAX 0.12's CustomRoot (lax.custom_root:
Newton and bisection solvers written with fori_loop, scan and plain Python
loops, vector roots, has_aux, a solve with consts of its own; JAX's jvp,
grad and vmap where JAX defines them) and the generic reduce
(lax.reduce with a computation that is not a known monoid: a (value,
index) argmax over two operands, a non-associative fold `a*0.5 + b` whose
result shows the order of application (sequential up to 32 elements along
the reduced dims, XLA's TreeReductionRewriter past 32: windows of 32 with
SAME padding, recursively), several reduced dims, an empty reduced dim;
JAX's jvp (its pairwise-tree _reduce_jvp), grad and vmap), and the generic
reduce_window (lax.reduce_window with such a computation: a*0.5 + b windows
with strides, low padding and dilations, a (value, index) argmax pooling,
a log-sum-exp pooling, a window product; JAX's jvp, grad and vmap).

f32 and f64; the transforms are captured for f32 (gen_sweep.S). The
tangent_solve of every CustomRoot case computes its solve without calling
the linear map g: a g call binds _RootLinearMap[f=fun] in JAX's jvp
printout, a HiPrim whose function JAX does not print (not parsed here).

It reuses gen_sweep.py's registration and gen_conformance.py's capture.

Usage:
  .venv-oracle/bin/python tools/oracle/gen_ctlprims.py          # -> fixtures/ctlprims
  .venv-oracle/bin/python tools/oracle/gen_ctlprims.py --list
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_conformance as gc  # noqa: E402
import gen_sweep as gs  # noqa: E402  (S, U, prune)

import numpy as np  # noqa: E402

F = ("f32", "f64")
AD = ("jvp", "vjp", "vmap")


def C(name, fn, makers, dtypes=F, tf=AD):
    gs.S(name, fn, makers, dtypes, tf, family="ctlprims", prefix="ctl")


def U(shape, lo=-1.0, hi=1.0):
    return gs.U(shape, lo, hi)


def register():
    import jax
    import jax.numpy as jnp
    from jax import lax

    # ------------------------------------------------------------ CustomRoot
    def newton_sqrt(x):
        """sqrt(x) as the root of y*y - x: Newton in a fori_loop."""
        f = lambda y: y * y - x
        solve = lambda g, y0: lax.fori_loop(0, 20, lambda i, y: 0.5 * (y + x / y), y0)
        tsolve = lambda g, y: y / (2.0 * jnp.sqrt(x))
        return lax.custom_root(f, jnp.ones_like(x), solve, tsolve)
    C("custom_root_newton_sqrt", lambda x: newton_sqrt(x) * jnp.arange(1, x.shape[0] + 1, dtype=x.dtype),
      [U((4,), 0.5, 4.0)])
    C("custom_root_newton_sqrt_sum", lambda x: newton_sqrt(x).sum(), [U((3,), 0.5, 4.0)])

    def cube_root(x):
        """The root of y**3 - x by Newton in an unrolled Python loop (the
        solve's jaxpr closes over x: its consts are an operand group)."""
        f = lambda y: y ** 3 - x
        def solve(g, y):
            for _ in range(8):
                y = y - g(y) / (3.0 * y * y)
            return y
        tsolve = lambda g, y: y / (3.0 * jnp.cbrt(x) ** 2)
        return lax.custom_root(f, jnp.full_like(x, 1.5), solve, tsolve)
    C("custom_root_cube_root", cube_root, [U((5,), 1.0, 9.0)])

    def bisect(c):
        """The root of tanh(y) - c in [-3, 3] by 30 bisection steps (a scan);
        the tangent solve divides by 1 - tanh(y)**2 at the root."""
        f = lambda y: jnp.tanh(y) - c
        def solve(g, y0):
            def step(lohi, _):
                lo, hi = lohi
                mid = 0.5 * (lo + hi)
                neg = g(mid) < 0
                return (jnp.where(neg, mid, lo), jnp.where(neg, hi, mid)), None
            (lo, hi), _ = lax.scan(step, (y0 - 3.0, y0 + 3.0), None, length=30)
            return 0.5 * (lo + hi)
        tsolve = lambda g, y: y / (1.0 - c * c)
        return lax.custom_root(f, jnp.zeros_like(c), solve, tsolve)
    C("custom_root_bisect_tanh", bisect, [U((2, 3), -0.8, 0.8)])

    def aux_root(x):
        """has_aux: the solve returns (root, iteration count)."""
        f = lambda y: y * y - x
        def solve(g, y0):
            def body(c):
                i, y = c
                return i + 1, 0.5 * (y + x / y)
            n, y = lax.while_loop(lambda c: c[0] < 12, body, (0, y0))
            return y, n
        tsolve = lambda g, y: y / (2.0 * jnp.sqrt(x))
        r, n = lax.custom_root(f, jnp.ones_like(x), solve, tsolve, has_aux=True)
        return r, n
    C("custom_root_has_aux", aux_root, [U((3,), 0.5, 4.0)], F, ("vmap",))

    def fixed_point(a, b):
        """A 2-vector root of A y - b by Jacobi sweeps (a fori_loop), the
        tangent solve a linear solve with A."""
        f = lambda y: a @ y - b
        def solve(g, y0):
            d = jnp.diagonal(a)
            return lax.fori_loop(0, 40, lambda i, y: y - g(y) / d, y0)
        tsolve = lambda g, y: jnp.linalg.solve(a, y)
        return lax.custom_root(f, jnp.zeros_like(b), solve, tsolve)
    dd = lambda rng, dtn: (np.array([[4.0, 1.0], [0.5, 3.0]]) +
                           0.1 * rng.uniform(-1, 1, (2, 2))).astype(gc.dt(dtn))
    C("custom_root_jacobi_2x2", fixed_point, [dd, U((2,))], F, ("vmap",))

    # --------------------------------------------------------- generic reduce
    def argmax_pair(x):
        """A (value, index) argmax over two operands: the first maximum."""
        idx = lax.broadcasted_iota(jnp.int32, x.shape, x.ndim - 1)
        def red(a, b):
            av, ai = a
            bv, bi = b
            pick = (av > bv) | ((av == bv) & (ai < bi))
            return jnp.where(pick, av, bv), jnp.where(pick, ai, bi)
        return lax.reduce((x, idx), (jnp.array(-jnp.inf, x.dtype), jnp.int32(0)), red, (x.ndim - 1,))
    C("reduce_argmax_pair", argmax_pair, [U((3, 7))], F, ("vmap",))
    C("reduce_argmax_pair_long", argmax_pair, [U((2, 45))], F, ())

    def halve_add(dims):
        """a*0.5 + b: not associative, so the result shows the order."""
        def fn(x):
            return lax.reduce(x, jnp.array(0.0, x.dtype), lambda a, b: a * 0.5 + b, dims)
        return fn
    C("reduce_halve_add_short", halve_add((1,)), [U((3, 9))])
    C("reduce_halve_add_33", halve_add((0,)), [U((33,))], F, ("vmap",))
    C("reduce_halve_add_100", halve_add((0,)), [U((100,))], F, ())
    C("reduce_halve_add_2000x3", halve_add((0,)), [U((2000, 3))], F, ())
    C("reduce_halve_add_two_dims", halve_add((0, 2)), [U((3, 40, 35))], F, ())
    C("reduce_halve_add_dims_20", halve_add((2, 0)), [U((6, 7, 3))])
    C("reduce_halve_add_empty", halve_add((1,)), [U((3, 0))], F, ())

    def softclip_max(x):
        """max(u, v) + 0*v (the held-out program's computation), over axis 0."""
        return lax.reduce(x, jnp.array(0.0, x.dtype), lambda a, b: jnp.maximum(a, b) + 0.0 * b, (0,))
    C("reduce_max_plus_zero", softclip_max, [U((5, 4))])

    def logaddexp_reduce(x):
        """A log-sum-exp fold (a smooth, differentiable computation)."""
        return lax.reduce(x, jnp.array(-jnp.inf, x.dtype), jnp.logaddexp, (1,))
    C("reduce_logaddexp", logaddexp_reduce, [U((3, 6))])
    C("reduce_logaddexp_sum", lambda x: logaddexp_reduce(x).sum(), [U((2, 5))], F, ("vjp",))


    # --------------------------------------------------- generic reduce_window
    def rw_halve_add(win, strides, pad, bd=None, wd=None):
        """a*0.5 + b over each window: the result shows XLA CPU's order
        (row-major over the window from the init value, pads skipped)."""
        def fn(x):
            return lax.reduce_window(x, jnp.array(0.0, x.dtype), lambda a, b: a * 0.5 + b, win, strides, pad,
                                     bd, wd)
        return fn
    C("rw_halve_add_2d", rw_halve_add((2, 3), (1, 1), "VALID"), [U((4, 5))])
    C("rw_halve_add_3d_strided", rw_halve_add((2, 2, 3), (1, 2, 2), "VALID"), [U((3, 5, 7))], F, ("vmap",))
    C("rw_halve_add_low_pad", rw_halve_add((2, 3), (1, 1), ((1, 2), (2, 0))), [U((3, 4))])
    C("rw_halve_add_dilated_1d", rw_halve_add((3,), (2,), ((2, 3),), (2,), (2,)), [U((9,))])
    C("rw_halve_add_dilated_2d", rw_halve_add((2, 2), (1, 2), ((1, 1), (0, 0)), (1, 2), (2, 1)), [U((5, 4))],
      F, ())
    C("rw_halve_add_long", rw_halve_add((40,), (5,), "VALID"), [U((60,))], F, ())

    def rw_argmax_pool(x):
        """(value, index) argmax pooling over two operands, 2x2 windows."""
        idx = lax.broadcasted_iota(jnp.int32, x.shape, 1) + x.shape[1] * lax.broadcasted_iota(jnp.int32, x.shape, 0)
        def red(a, b):
            av, ai = a
            bv, bi = b
            pick = (av > bv) | ((av == bv) & (ai < bi))
            return jnp.where(pick, av, bv), jnp.where(pick, ai, bi)
        return lax.reduce_window((x, idx), (jnp.array(-jnp.inf, x.dtype), jnp.int32(0)), red, (2, 2), (2, 2),
                                 "VALID")
    C("rw_argmax_pool", rw_argmax_pool, [U((4, 6))], F, ("vmap",))

    def rw_logaddexp(x):
        """A smooth log-sum-exp pooling (low padding only)."""
        return lax.reduce_window(x, jnp.array(-jnp.inf, x.dtype), jnp.logaddexp, (2, 2), (1, 1),
                                 ((1, 0), (1, 0)))
    C("rw_logaddexp", rw_logaddexp, [U((3, 4))])
    C("rw_logaddexp_sum", lambda x: rw_logaddexp(x).sum(), [U((3, 3))], F, ("vjp",))

    def rw_product(x):
        """The held-out program's window product (u * v, VALID)."""
        return lax.reduce_window(x, np.asarray(1, x.dtype), lambda u, v: u * v, (2, 2), (1, 1), "VALID")
    C("rw_product", rw_product, [U((3, 4), 0.5, 2.0)])


if __name__ == "__main__":
    out = os.path.join(gc.ROOT, "fixtures", "ctlprims")
    if "--out" in sys.argv:
        out = os.path.abspath(sys.argv[sys.argv.index("--out") + 1])
    try:
        gc.main(register=register, out_default=os.path.join(gc.ROOT, "fixtures", "ctlprims"),
                script=os.path.abspath(__file__), generator="tools/oracle/gen_ctlprims.py",
                doc=__doc__, lax_json=False)
    finally:
        if "--pass" not in sys.argv and "--list" not in sys.argv and \
                os.path.exists(os.path.join(out, "MANIFEST.json")):
            gs.prune(out)
