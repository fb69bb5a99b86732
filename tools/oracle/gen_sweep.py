#!/usr/bin/env python3
"""Generate the sweep of JAX's public numerical API (fixtures/sweep/, family
`sweep`) and the whole-program family (fixtures/program2/, family
`program2`), in the conformance fixture format of gen_conformance.py (whose
capture, transform and manifest code this reuses).

The sweep calls the array functions of jax.numpy, jax.numpy.fft, jax.nn,
jax.scipy.special, jax.scipy.stats (logpdf/pdf/cdf/... of each
distribution) and jax.lax on small seeded inputs of the dtypes each accepts,
with the keyword variants people use (axis, keepdims, where=, approximate=,
mode=, norm=, ...). Float cases in f32 also capture JAX's jvp, vmap and vjp
(grad when the output is one float scalar). The programs are written as
users write them: models, losses, optimizers, physics, solvers, with jit
nested inside, closures over arrays and pytree inputs.

Usage:
  .venv-oracle/bin/python tools/oracle/gen_sweep.py            # -> fixtures/sweep
  .venv-oracle/bin/python tools/oracle/gen_sweep.py --programs # -> fixtures/program2
  .venv-oracle/bin/python tools/oracle/gen_sweep.py --list
  .venv-oracle/bin/python tools/oracle/gen_sweep.py --out /tmp/s --only CASE...

Deterministic, as gen_conformance.py: seeds are crc32(case name).
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_conformance as gc  # noqa: E402  (capture, transforms, manifest)

import numpy as np  # noqa: E402

ROOT = gc.ROOT
PROGRAMS = "--programs" in sys.argv or os.environ.get("FT_SWEEP_PROGRAMS") == "1"
if "--programs" in sys.argv:
    sys.argv.remove("--programs")

ONLY = set(sys.argv[sys.argv.index("--only") + 1:]) if "--only" in sys.argv else set()
DIFF = ("jvp", "vjp", "vmap")   # float cases in f32; vjp becomes grad for a scalar output
FWD = ()


def x64_prefix(dtn):
    return "x64_" if dtn in ("f64", "i64", "u64", "c128") else ""


def mk(dtn, rng, shape, lo, hi):
    """A seeded array of dtype dtn in [lo, hi] (integers: inclusive)."""
    d = gc.dt(dtn) if dtn != "c64" else np.complex64
    if dtn == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dtn.startswith(("i", "u")):
        return rng.integers(int(lo), int(hi), size=shape, endpoint=True).astype(d)
    if dtn == "c64":
        return (rng.uniform(lo, hi, size=shape) + 1j * rng.uniform(lo, hi, size=shape)).astype(d)
    return np.asarray(rng.uniform(lo, hi, size=shape)).astype(d)


def U(shape=(3, 4), lo=-2.0, hi=2.0):
    return lambda rng, dtn: mk(dtn, rng, shape, lo, hi)


def const(v):
    return lambda rng, dtn: v


def as_dt(maker, dtn):
    return lambda rng, _d: maker(rng, dtn)


def grad_or_vjp(fn, makers, dtn):
    """vjp becomes grad when fn's output is one float scalar."""
    import jax
    rng = np.random.default_rng(0)
    try:
        out = jax.eval_shape(fn, *[m(rng, dtn) for m in makers])
    except Exception:  # noqa: BLE001 - the capture reports it
        return "vjp"
    leaves = jax.tree_util.tree_leaves(out)
    if len(leaves) == 1 and leaves[0].shape == () and gc.is_float_aval(leaves[0]):
        return "grad"
    return "vjp"


def S(name, fn, makers, dtypes=("f32",), tf=DIFF, group=None, family="sweep", prefix="sweep"):
    """Registers fn(*args) for each dtype; makers build the arguments (from
    the case's rng and dtype). Transforms only for f32 (and the first dtype
    when no f32 is given)."""
    group = group or name.split("__")[0]
    tdt = "f32" if "f32" in dtypes else dtypes[0]
    for dtn in dtypes:
        ts = ()
        cname = f"{x64_prefix(dtn)}{prefix}_{name}_{dtn}"
        if os.environ.get("FT_SWEEP_FORWARD_ONLY") == "1":
            ts = ()  # the forward function only (a quick partial capture)
        elif dtn == tdt and tf and ONLY and cname not in ONLY:
            ts = tf  # not captured in this run: no need to trace it
        elif dtn == tdt and tf:
            ts = tuple(grad_or_vjp(fn, makers, dtn) if t == "vjp" else t for t in tf)
            if not dtn.startswith(("f", "bf", "c")):
                ts = tuple(t for t in ts if t == "vmap")

        def b(rng, fn=fn, makers=makers, dtn=dtn):
            return fn, [m(rng, dtn) for m in makers]
        gc.case(f"{x64_prefix(dtn)}{prefix}_{name}_{dtn}", family, group, ts)(b)


F = ("f32", "f64")
F4 = ("f32", "f64", "f16", "bf16")
FI = ("f32", "i32")
I = ("i32", "i64", "u8")


# --------------------------------------------------------------------------
# jax.numpy
# --------------------------------------------------------------------------

def reg_numpy():
    import jax.numpy as jnp

    unary = {  # name -> (lo, hi, dtypes)
        "abs": (-3, 3, F4), "negative": (-3, 3, F4), "positive": (-3, 3, F), "sign": (-3, 3, F4),
        "floor": (-3, 3, F4), "ceil": (-3, 3, F4), "trunc": (-3, 3, F), "rint": (-3, 3, F),
        "round": (-3, 3, F), "exp": (-5, 5, F4), "exp2": (-5, 5, F),
        "expm1": (-3, 3, F4), "log": (0.1, 5, F4), "log2": (0.1, 5, F), "log10": (0.1, 5, F),
        "log1p": (-0.5, 5, F4), "sqrt": (0.1, 5, F4), "cbrt": (-5, 5, F), "square": (-3, 3, F4),
        "reciprocal": (0.5, 3, F), "sin": (-3, 3, F4), "cos": (-3, 3, F4), "tan": (-1.2, 1.2, F),
        "arcsin": (-0.9, 0.9, F), "arccos": (-0.9, 0.9, F), "arctan": (-3, 3, F),
        "sinh": (-3, 3, F), "cosh": (-3, 3, F), "tanh": (-3, 3, F4), "arcsinh": (-3, 3, F),
        "arccosh": (1.1, 4, F), "arctanh": (-0.9, 0.9, F), "deg2rad": (-90, 90, F),
        "rad2deg": (-3, 3, F), "sinc": (-3, 3, F), "i0": (-3, 3, F), "fabs": (-3, 3, F),
        "signbit": (-3, 3, F), "isfinite": (-3, 3, F), "isinf": (-3, 3, ("f32",)),
        "isnan": (-3, 3, ("f32",)), "nan_to_num": (-3, 3, F), "conj": (-3, 3, F),
        "real": (-3, 3, ("f32",)), "imag": (-3, 3, ("f32",)), "angle": (-3, 3, ("f32",)),
        "spacing": (-3, 3, ("f32",)), "logical_not": (-3, 3, ("bool",)),
        "ones_like": (-3, 3, F), "zeros_like": (-3, 3, F), "invert": (0, 100, I),
    }
    for n, (lo, hi, dts) in unary.items():
        fn = getattr(jnp, n)
        S(f"jnp_{n}", (lambda x, fn=fn: fn(x)), [U((3, 4), lo, hi)], dts)
    for n in ("abs", "negative", "sign", "square", "positive"):
        S(f"jnp_{n}__int", (lambda x, fn=getattr(jnp, n): fn(x)), [U((3, 4), -50, 50)], ("i32", "i64", "i8"))
    S("jnp_round__dec2", lambda x: jnp.round(x, 2), [U((3, 4), -3, 3)], F)
    S("jnp_around__dec1", lambda x: jnp.around(x, 1), [U((3, 4), -3, 3)], F)
    S("jnp_modf", lambda x: jnp.modf(x), [U((3, 4), -3, 3)], F)
    S("jnp_frexp", lambda x: jnp.frexp(x), [U((3, 4), -30, 30)], F, FWD)
    S("jnp_nan_to_num__vals", lambda x: jnp.nan_to_num(jnp.log(x), nan=1.5, neginf=-7.0),
      [U((3, 4), -1, 3)], F, FWD)
    S("jnp_clip", lambda x: jnp.clip(x, -1.0, 1.5), [U((3, 4))], F4)
    S("jnp_clip__int", lambda x: jnp.clip(x, 3, 40), [U((3, 4), 0, 60)], I)
    S("jnp_clip__min", lambda x: jnp.clip(x, min=0.5), [U((3, 4))], F)
    S("jnp_sort_complex", lambda x: jnp.sort_complex(x), [U((6,))], ("f32",), FWD)

    binary = {
        "add": F4, "subtract": F4, "multiply": F4, "divide": F4, "true_divide": F,
        "maximum": F4, "minimum": F4, "fmax": F, "fmin": F, "power": F, "float_power": ("f64",),
        "arctan2": F, "hypot": F, "logaddexp": F, "logaddexp2": F, "copysign": F,
        "nextafter": F, "heaviside": F, "fmod": F, "remainder": F, "mod": F,
        "floor_divide": F, "greater": F, "greater_equal": F, "less": F, "less_equal": F,
        "equal": F, "not_equal": F, "isclose": F,
    }
    for n, dts in binary.items():
        lo, hi = (0.5, 3) if n in ("power", "float_power") else (-3, 3)
        fn = getattr(jnp, n)
        S(f"jnp_{n}", (lambda x, y, fn=fn: fn(x, y)), [U((3, 4), lo, hi), U((3, 4), lo, hi)], dts)
    for n in ("add", "multiply", "maximum", "power", "divide"):
        fn = getattr(jnp, n)
        S(f"jnp_{n}__bcast", (lambda x, y, fn=fn: fn(x, y)), [U((3, 1), 0.5, 2), U((4,), 0.5, 2)], F)
        S(f"jnp_{n}__scalar", (lambda x, fn=fn: fn(x, 2.0)), [U((3, 4), 0.5, 2)], ("f32",))
    ibin = ("add", "subtract", "multiply", "floor_divide", "remainder", "mod", "maximum",
            "minimum", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
            "right_shift", "gcd", "lcm", "greater", "equal", "fmod")
    for n in ibin:
        fn = getattr(jnp, n)
        hi2 = 5 if "shift" in n else 20
        S(f"jnp_{n}__int", (lambda x, y, fn=fn: fn(x, y)), [U((3, 4), 1, 60), U((3, 4), 1, hi2)], I)
    S("jnp_power__int", lambda x, y: jnp.power(x, y), [U((3, 4), -4, 4), U((3, 4), 0, 4)], ("i32",), FWD)
    S("jnp_power__intexp", lambda x, y: jnp.power(x, y), [U((3, 4), 0.5, 2), as_dt(U((3, 4), 0, 4), "i32")], F)
    S("jnp_ldexp", lambda x, y: jnp.ldexp(x, y), [U((3, 4)), as_dt(U((3, 4), -4, 4), "i32")], F)
    S("jnp_divmod", lambda x, y: jnp.divmod(x, y), [U((3, 4), -5, 5), U((3, 4), 0.5, 2)], F)
    for n in ("logical_and", "logical_or", "logical_xor"):
        S(f"jnp_{n}", (lambda x, y, fn=getattr(jnp, n): fn(x, y)), [U((3, 4)), U((3, 4))], ("bool",))
    S("jnp_where", lambda c, x, y: jnp.where(c, x, y), [as_dt(U((3, 4)), "bool"), U(), U()], F4)
    S("jnp_where__scalar", lambda x: jnp.where(x > 0, x, 0.0), [U()], F)

    # reductions with the keyword variants people use
    red = {"sum": F4, "prod": F, "mean": F4, "var": F, "std": F, "max": F4, "min": F4,
           "amax": F, "amin": F, "ptp": F, "nansum": F, "nanmean": F, "nanmax": F,
           "nanmin": F, "nanprod": F, "nanvar": F, "nanstd": F, "median": F,
           "nanmedian": ("f32",), "average": F, "all": ("bool",), "any": ("bool",),
           "count_nonzero": ("f32",), "argmax": F, "argmin": F, "nanargmax": ("f32",),
           "nanargmin": ("f32",)}
    for n, dts in red.items():
        fn = getattr(jnp, n)
        axes = [None, 0, 1, -1]
        if n not in ("argmax", "argmin", "nanargmax", "nanargmin", "median", "nanmedian", "average"):
            axes.append((0, 1))
        for ax in axes:
            tag = "all" if ax is None else ("01" if isinstance(ax, tuple) else str(ax).replace("-", "m"))
            S(f"jnp_{n}__ax{tag}", (lambda x, fn=fn, ax=ax: fn(x, axis=ax)), [U((3, 4), -2, 3)],
              dts if ax is None else dts[:1])
        if n not in ("average", "count_nonzero"):
            S(f"jnp_{n}__keepdims", (lambda x, fn=fn: fn(x, axis=1, keepdims=True)), [U((3, 4), -2, 3)], dts[:1])
    for n in ("sum", "prod", "mean", "max", "min", "var", "std", "all", "any"):
        fn = getattr(jnp, n)
        kw = {"initial": -5.0} if n in ("max",) else {"initial": 5.0} if n == "min" else {}
        d = ("bool",) if n in ("all", "any") else ("f32",)
        S(f"jnp_{n}__where", (lambda x, m, fn=fn, kw=kw: fn(x, axis=1, where=m, **kw)),
          [U((3, 4), -2, 3), as_dt(U((3, 4)), "bool")], d)
    for n in ("sum", "prod", "max", "min"):
        S(f"jnp_{n}__int", (lambda x, fn=getattr(jnp, n): fn(x, axis=0)), [U((3, 4), -9, 9)], ("i32", "i64", "u8"))
    S("jnp_sum__dtype", lambda x: jnp.sum(x, dtype=jnp.float32), [U((3, 4), -9, 9)], ("i32", "f16"), FWD)
    S("jnp_mean__int", lambda x: jnp.mean(x, axis=0), [U((3, 4), -9, 9)], ("i32",))
    S("jnp_var__ddof", lambda x: jnp.var(x, axis=0, ddof=1), [U()], F)
    S("jnp_std__ddof", lambda x: jnp.std(x, ddof=1), [U()], F)
    S("jnp_average__weights", lambda x, w: jnp.average(x, axis=1, weights=w), [U(), U((4,), 0.1, 1)], F)
    for q in (0.0, 0.25, 0.5, 0.9):
        S(f"jnp_quantile__q{int(q * 100)}", (lambda x, q=q: jnp.quantile(x, q)), [U((7,))], F)
    for m in ("linear", "lower", "higher", "nearest", "midpoint"):
        S(f"jnp_percentile__{m}", (lambda x, m=m: jnp.percentile(x, 30.0, axis=1, method=m)), [U()], ("f32",))
    S("jnp_nanquantile", lambda x: jnp.nanquantile(x, 0.5, axis=0), [U()], ("f32",), FWD)
    for n in ("cumsum", "cumprod", "nancumsum", "nancumprod"):
        fn = getattr(jnp, n)
        for ax in (0, 1, None):
            S(f"jnp_{n}__ax{ax if ax is not None else 'all'}", (lambda x, fn=fn, ax=ax: fn(x, axis=ax)),
              [U((3, 4), 0.5, 1.5)], F if ax == 1 else ("f32",))
    S("jnp_cumsum__int", lambda x: jnp.cumsum(x, axis=1), [U((3, 4), -9, 9)], ("i32", "u8"))
    S("jnp_cumulative_sum", lambda x: jnp.cumulative_sum(x, axis=1, include_initial=True), [U()], F)
    S("jnp_cumulative_prod", lambda x: jnp.cumulative_prod(x, axis=0), [U((3, 4), 0.5, 1.5)], F)
    S("jnp_diff", lambda x: jnp.diff(x), [U()], F)
    S("jnp_diff__n2ax0", lambda x: jnp.diff(x, n=2, axis=0), [U((4, 3))], F)
    S("jnp_ediff1d", lambda x: jnp.ediff1d(x), [U((6,))], F)
    S("jnp_gradient", lambda x: jnp.gradient(x), [U((7,))], F)
    S("jnp_trapezoid", lambda y: jnp.trapezoid(y, dx=0.5), [U((7,))], F)
    S("jnp_trapezoid__x", lambda y, x: jnp.trapezoid(y, x), [U((7,)), U((7,))], ("f32",))
    S("jnp_logsumexp", lambda x: jnp.logaddexp.reduce(x, axis=0), [U()], ("f32",), FWD)

    # linear algebra-ish and contractions
    S("jnp_dot", lambda a, b: jnp.dot(a, b), [U((3, 4)), U((4, 2))], F4)
    S("jnp_dot__vec", lambda a, b: jnp.dot(a, b), [U((5,)), U((5,))], F)
    S("jnp_dot__int", lambda a, b: jnp.dot(a, b), [U((3, 4), -5, 5), U((4, 2), -5, 5)], ("i32",))
    S("jnp_matmul", lambda a, b: a @ b, [U((3, 4)), U((4, 5))], F4)
    S("jnp_matmul__batch", lambda a, b: jnp.matmul(a, b), [U((2, 3, 4)), U((2, 4, 2))], F)
    S("jnp_matmul__bcast", lambda a, b: jnp.matmul(a, b), [U((2, 3, 4)), U((4, 2))], F)
    S("jnp_matmul__matvec", lambda a, b: a @ b, [U((3, 4)), U((4,))], F)
    S("jnp_vdot", lambda a, b: jnp.vdot(a, b), [U(), U()], F)
    S("jnp_inner", lambda a, b: jnp.inner(a, b), [U((3, 4)), U((2, 4))], F)
    S("jnp_outer", lambda a, b: jnp.outer(a, b), [U((3,)), U((4,))], F)
    S("jnp_tensordot", lambda a, b: jnp.tensordot(a, b, axes=1), [U((2, 3)), U((3, 4))], F)
    S("jnp_tensordot__ax2", lambda a, b: jnp.tensordot(a, b, axes=([0, 1], [1, 0])), [U((2, 3)), U((3, 2))], F)
    S("jnp_kron", lambda a, b: jnp.kron(a, b), [U((2, 2)), U((2, 3))], F)
    S("jnp_cross", lambda a, b: jnp.cross(a, b), [U((4, 3)), U((4, 3))], F)
    S("jnp_trace", lambda a: jnp.trace(a), [U((4, 4))], F)
    S("jnp_trace__offset", lambda a: jnp.trace(a, offset=1), [U((3, 4))], ("f32",))
    for eq, shp in (("ij,jk->ik", ((3, 4), (4, 2))), ("ij->ji", ((3, 4),)), ("ii->i", ((3, 3),)),
                    ("ij,ij->i", ((3, 4), (3, 4))), ("bij,bjk->bik", ((2, 3, 4), (2, 4, 2))),
                    ("i,j->ij", ((3,), (4,))), ("ij->", ((3, 4),)), ("ijk->kj", ((2, 3, 4),)),
                    ("ij,jk,kl->il", ((2, 3), (3, 4), (4, 2)))):
        tag = eq.replace(",", "_").replace("->", "_to_") or "x"
        S(f"jnp_einsum__{tag}", (lambda *a, eq=eq: jnp.einsum(eq, *a)), [U(s) for s in shp], F)
    S("jnp_linalg_norm", lambda x: jnp.linalg.norm(x), [U((5,))], F)
    S("jnp_linalg_norm__ord1", lambda x: jnp.linalg.norm(x, ord=1), [U((5,))], ("f32",))
    S("jnp_linalg_norm__inf", lambda x: jnp.linalg.norm(x, ord=jnp.inf), [U((5,))], ("f32",))
    S("jnp_linalg_norm__fro", lambda x: jnp.linalg.norm(x, axis=1), [U()], ("f32",))
    S("jnp_linalg_vector_norm", lambda x: jnp.linalg.vector_norm(x, axis=0, keepdims=True), [U()], ("f32",))
    S("jnp_linalg_matrix_transpose", lambda x: jnp.linalg.matrix_transpose(x), [U((2, 3, 4))], ("f32",))
    S("jnp_linalg_vecdot", lambda a, b: jnp.linalg.vecdot(a, b), [U(), U()], ("f32",))

    # shape and data movement
    S("jnp_reshape", lambda x: jnp.reshape(x, (4, 3)), [U()], F4)
    S("jnp_reshape__m1", lambda x: x.reshape(2, -1), [U()], ("f32", "i32"))
    S("jnp_ravel", lambda x: jnp.ravel(x), [U()], FI)
    S("jnp_ravel__F", lambda x: jnp.ravel(x, order="F"), [U()], ("f32",))
    S("jnp_transpose", lambda x: jnp.transpose(x), [U((2, 3, 4))], FI)
    S("jnp_transpose__axes", lambda x: jnp.transpose(x, (1, 0, 2)), [U((2, 3, 4))], ("f32",))
    S("jnp_swapaxes", lambda x: jnp.swapaxes(x, 0, 2), [U((2, 3, 4))], ("f32",))
    S("jnp_moveaxis", lambda x: jnp.moveaxis(x, 0, -1), [U((2, 3, 4))], ("f32",))
    S("jnp_flip", lambda x: jnp.flip(x), [U()], FI)
    S("jnp_flip__ax1", lambda x: jnp.flip(x, axis=1), [U()], ("f32",))
    S("jnp_fliplr", lambda x: jnp.fliplr(x), [U()], ("f32",))
    S("jnp_flipud", lambda x: jnp.flipud(x), [U()], ("f32",))
    S("jnp_rot90", lambda x: jnp.rot90(x), [U()], ("f32",))
    S("jnp_rot90__k2", lambda x: jnp.rot90(x, k=2), [U()], ("f32",))
    S("jnp_roll", lambda x: jnp.roll(x, 2), [U()], FI)
    S("jnp_roll__ax", lambda x: jnp.roll(x, -1, axis=1), [U()], ("f32",))
    S("jnp_roll__multi", lambda x: jnp.roll(x, (1, 2), axis=(0, 1)), [U()], ("f32",))
    S("jnp_squeeze", lambda x: jnp.squeeze(x), [U((3, 1, 4))], ("f32",))
    S("jnp_expand_dims", lambda x: jnp.expand_dims(x, (0, 2)), [U()], ("f32",))
    S("jnp_newaxis", lambda x: x[:, None, :], [U()], ("f32",))
    S("jnp_broadcast_to", lambda x: jnp.broadcast_to(x, (2, 3, 4)), [U((4,))], FI)
    S("jnp_broadcast_arrays", lambda x, y: jnp.broadcast_arrays(x, y), [U((3, 1)), U((4,))], ("f32",))
    S("jnp_atleast_2d", lambda x: jnp.atleast_2d(x), [U((4,))], ("f32",))
    S("jnp_atleast_3d", lambda x: jnp.atleast_3d(x), [U((3, 4))], ("f32",))
    S("jnp_concatenate", lambda x, y: jnp.concatenate([x, y]), [U(), U((2, 4))], F4)
    S("jnp_concatenate__ax1", lambda x, y: jnp.concatenate([x, y], axis=1), [U(), U((3, 2))], FI)
    S("jnp_concatenate__none", lambda x, y: jnp.concatenate([x, y], axis=None), [U(), U((2,))], ("f32",))
    S("jnp_stack", lambda x, y: jnp.stack([x, y]), [U(), U()], FI)
    S("jnp_stack__ax1", lambda x, y: jnp.stack([x, y], axis=1), [U(), U()], ("f32",))
    S("jnp_stack__axm1", lambda x, y: jnp.stack((x, y, x), axis=-1), [U(), U()], ("f32",))
    S("jnp_hstack", lambda x, y: jnp.hstack([x, y]), [U(), U()], ("f32",))
    S("jnp_vstack", lambda x, y: jnp.vstack([x, y]), [U((4,)), U((4,))], ("f32",))
    S("jnp_dstack", lambda x, y: jnp.dstack([x, y]), [U(), U()], ("f32",))
    S("jnp_column_stack", lambda x, y: jnp.column_stack([x, y]), [U((4,)), U((4,))], ("f32",))
    S("jnp_append", lambda x, y: jnp.append(x, y), [U(), U((3,))], ("f32",))
    S("jnp_split", lambda x: jnp.split(x, 2, axis=1), [U()], FI)
    S("jnp_split__idx", lambda x: jnp.split(x, [1, 3]), [U((5, 2))], ("f32",))
    S("jnp_array_split", lambda x: jnp.array_split(x, 3), [U((7,))], ("f32",))
    S("jnp_hsplit", lambda x: jnp.hsplit(x, 2), [U()], ("f32",))
    S("jnp_vsplit", lambda x: jnp.vsplit(x, 3), [U()], ("f32",))
    S("jnp_unstack", lambda x: jnp.unstack(x), [U()], ("f32",))
    S("jnp_tile", lambda x: jnp.tile(x, (2, 1)), [U()], FI)
    S("jnp_tile__1d", lambda x: jnp.tile(x, 3), [U((4,))], ("f32",))
    S("jnp_repeat", lambda x: jnp.repeat(x, 2), [U()], FI)
    S("jnp_repeat__ax", lambda x: jnp.repeat(x, 3, axis=0), [U()], ("f32",))
    S("jnp_repeat__counts", lambda x: jnp.repeat(x, np.array([1, 0, 2]), axis=0,
                                                 total_repeat_length=3), [U()], ("f32",))
    for mode in ("constant", "edge", "reflect", "symmetric", "wrap", "linear_ramp", "maximum",
                 "minimum", "mean", "median", "empty"):
        S(f"jnp_pad__{mode}", (lambda x, mode=mode: jnp.pad(x, ((1, 2), (2, 1)), mode=mode)),
          [U()], ("f32",) if mode == "empty" else FI if mode in ("constant", "edge", "wrap") else ("f32",),
          FWD if mode == "empty" else DIFF)
    S("jnp_pad__cval", lambda x: jnp.pad(x, 2, constant_values=1.5), [U((4,))], F)
    S("jnp_pad__reflect_odd", lambda x: jnp.pad(x, (3, 2), mode="reflect", reflect_type="odd"), [U((5,))], ("f32",))
    S("jnp_diag", lambda x: jnp.diag(x), [U((4,))], F)
    S("jnp_diag__extract", lambda x: jnp.diag(x, k=1), [U((4, 4))], ("f32",))
    S("jnp_diagonal", lambda x: jnp.diagonal(x), [U()], ("f32",))
    S("jnp_diagflat", lambda x: jnp.diagflat(x), [U((3,))], ("f32",))
    S("jnp_triu", lambda x: jnp.triu(x), [U((4, 4))], FI)
    S("jnp_tril", lambda x: jnp.tril(x, k=-1), [U((4, 4))], FI)
    S("jnp_fill_diagonal", lambda x: jnp.fill_diagonal(x, 0.0, inplace=False), [U((4, 4))], ("f32",))
    S("jnp_take", lambda x: jnp.take(x, jnp.array([2, 0, 3])), [U()], FI)
    S("jnp_take__ax", lambda x: jnp.take(x, jnp.array([2, 0, 2]), axis=1), [U()], ("f32",))
    S("jnp_take__clip", lambda x, i: jnp.take(x, i, mode="clip"), [U((5,)), as_dt(U((4,), -3, 8), "i32")], ("f32",))
    S("jnp_take__wrap", lambda x, i: jnp.take(x, i, mode="wrap"), [U((5,)), as_dt(U((4,), -7, 8), "i32")], ("f32",))
    S("jnp_take__fill", lambda x, i: jnp.take(x, i, mode="fill", fill_value=-1.0),
      [U((5,)), as_dt(U((4,), -2, 7), "i32")], ("f32",))
    S("jnp_take_along_axis", lambda x, i: jnp.take_along_axis(x, i, axis=1),
      [U(), as_dt(U((3, 2), 0, 3), "i32")], ("f32",))
    S("jnp_take_along_axis__argsort", lambda x: jnp.take_along_axis(x, jnp.argsort(x, axis=0), axis=0), [U()], ("f32",))
    S("jnp_put_along_axis", lambda x, i: jnp.put_along_axis(x, i, 0.0, axis=1, inplace=False),
      [U(), as_dt(U((3, 1), 0, 3), "i32")], ("f32",))
    S("jnp_select", lambda x: jnp.select([x < -1, x > 1], [x * 2, -x], default=0.5), [U()], F)
    S("jnp_choose", lambda i, a, b: jnp.choose(i, [a, b]), [as_dt(U((4,), 0, 1), "i32"), U((4,)), U((4,))], ("f32",))
    S("jnp_piecewise", lambda x: jnp.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v * v]), [U((6,))], F)
    S("jnp_sort", lambda x: jnp.sort(x), [U()], ("f32", "f64", "i32", "bf16"))
    S("jnp_sort__ax0", lambda x: jnp.sort(x, axis=0), [U()], ("f32",))
    S("jnp_sort__desc", lambda x: jnp.sort(x, descending=True), [U((6,))], ("f32",))
    S("jnp_sort__none", lambda x: jnp.sort(x, axis=None), [U()], ("f32",))
    S("jnp_argsort", lambda x: jnp.argsort(x), [U()], FI)
    S("jnp_argsort__stable_desc", lambda x: jnp.argsort(x, stable=True, descending=True), [U((6,), -3, 3)], ("i32",))
    S("jnp_lexsort", lambda a, b: jnp.lexsort((a, b)), [U((6,), 0, 3), U((6,), 0, 2)], ("i32",))
    S("jnp_partition", lambda x: jnp.partition(x, 2), [U((6,))], ("f32",))
    S("jnp_argpartition", lambda x: jnp.argpartition(x, 2), [U((6,))], ("f32",))
    S("jnp_searchsorted", lambda a, v: jnp.searchsorted(a, v), [lambda r, d: np.sort(mk(d, r, (6,), -3, 3)), U((4,))], FI)
    S("jnp_searchsorted__right", lambda a, v: jnp.searchsorted(a, v, side="right"),
      [lambda r, d: np.sort(mk(d, r, (6,), -3, 3)), U((4,))], ("i32",))
    for m in ("scan", "scan_unrolled", "sort", "compare_all"):
        S(f"jnp_searchsorted__{m}", (lambda a, v, m=m: jnp.searchsorted(a, v, method=m)),
          [lambda r, d: np.sort(mk(d, r, (6,), -3, 3)), U((4,))], ("f32",))
    S("jnp_digitize", lambda x: jnp.digitize(x, jnp.array([-1.0, 0.0, 1.0])), [U((6,))], ("f32",))
    S("jnp_bincount", lambda x: jnp.bincount(x, length=6), [U((8,), 0, 5)], ("i32",))
    S("jnp_bincount__w", lambda x, w: jnp.bincount(x, weights=w, length=5),
      [as_dt(U((8,), 0, 4), "i32"), U((8,))], ("f32",))
    S("jnp_histogram", lambda x: jnp.histogram(x, bins=4, range=(-2.0, 2.0)), [U((10,))], ("f32",), FWD)
    S("jnp_unique", lambda x: jnp.unique(x, size=6, fill_value=0), [U((8,), 0, 4)], ("i32",))
    S("jnp_unique__counts", lambda x: jnp.unique(x, size=5, return_counts=True, fill_value=-1),
      [U((8,), 0, 4)], ("i32",))
    S("jnp_nonzero", lambda x: jnp.nonzero(x > 0, size=5, fill_value=-1), [U((8,))], ("f32",))
    S("jnp_argwhere", lambda x: jnp.argwhere(x > 0, size=4), [U()], ("f32",))
    S("jnp_flatnonzero", lambda x: jnp.flatnonzero(x > 0.5, size=3), [U((7,))], ("f32",))
    S("jnp_extract", lambda x: jnp.extract(x > 0, x, size=4), [U((7,))], ("f32",))
    S("jnp_compress", lambda x: jnp.compress(jnp.array([True, False, True]), x, axis=0), [U()], ("f32",))
    S("jnp_isin", lambda x: jnp.isin(x, jnp.array([1, 3, 5])), [U((6,), 0, 6)], ("i32",))
    S("jnp_in1d_union", lambda a, b: jnp.union1d(a, b, size=8, fill_value=0), [U((4,), 0, 5), U((4,), 0, 5)], ("i32",))
    S("jnp_intersect1d", lambda a, b: jnp.intersect1d(a, b, size=3, fill_value=-1), [U((4,), 0, 5), U((4,), 0, 5)], ("i32",))
    S("jnp_setdiff1d", lambda a, b: jnp.setdiff1d(a, b, size=3, fill_value=-1), [U((4,), 0, 5), U((4,), 0, 5)], ("i32",))
    S("jnp_array_equal", lambda a, b: jnp.array_equal(a, b), [U(), U()], ("f32",))
    S("jnp_allclose", lambda a, b: jnp.allclose(a, b, atol=0.5), [U(), U()], ("f32",))
    S("jnp_convolve", lambda a, b: jnp.convolve(a, b), [U((6,)), U((3,))], F)
    S("jnp_convolve__same", lambda a, b: jnp.convolve(a, b, mode="same"), [U((6,)), U((3,))], ("f32",))
    S("jnp_convolve__valid", lambda a, b: jnp.convolve(a, b, mode="valid"), [U((6,)), U((3,))], ("f32",))
    S("jnp_correlate", lambda a, b: jnp.correlate(a, b, mode="full"), [U((6,)), U((3,))], ("f32",))
    S("jnp_interp", lambda x: jnp.interp(x, jnp.array([-2.0, 0.0, 1.0, 2.0]), jnp.array([0.0, 1.0, 3.0, 2.0])), [U((6,))], F)
    S("jnp_interp__lr", lambda x: jnp.interp(x, jnp.array([-1.0, 1.0]), jnp.array([0.0, 1.0]), left=-5.0, right=5.0),
      [U((6,))], ("f32",))
    S("jnp_polyval", lambda c, x: jnp.polyval(c, x), [U((4,)), U((5,))], F)
    S("jnp_polyadd", lambda a, b: jnp.polyadd(a, b), [U((3,)), U((4,))], ("f32",))
    S("jnp_polymul", lambda a, b: jnp.polymul(a, b), [U((3,)), U((4,))], ("f32",))
    S("jnp_polyder", lambda a: jnp.polyder(a), [U((4,))], ("f32",))
    S("jnp_polyint", lambda a: jnp.polyint(a), [U((4,))], ("f32",))
    S("jnp_vander", lambda x: jnp.vander(x, 4), [U((5,))], F)
    S("jnp_cov", lambda x: jnp.cov(x), [U()], F)
    S("jnp_corrcoef", lambda x: jnp.corrcoef(x), [U()], ("f32",))
    S("jnp_meshgrid", lambda x, y: jnp.meshgrid(x, y), [U((3,)), U((4,))], ("f32",))
    S("jnp_meshgrid__ij", lambda x, y: jnp.meshgrid(x, y, indexing="ij"), [U((3,)), U((4,))], ("f32",))
    S("jnp_full_like", lambda x: jnp.full_like(x, 2.5), [U()], ("f32",), FWD)
    S("jnp_arange", lambda x: x + jnp.arange(4.0), [U((4,))], F)
    S("jnp_arange__int", lambda x: x * jnp.arange(2, 14, 3), [U((4,), -3, 3)], ("i32",))
    S("jnp_linspace", lambda x: x * jnp.linspace(0.0, 1.0, 5), [U((5,))], F)
    S("jnp_linspace__noend", lambda x: x + jnp.linspace(-1.0, 1.0, 4, endpoint=False), [U((4,))], ("f32",))
    S("jnp_logspace", lambda x: x * jnp.logspace(0.0, 2.0, 4), [U((4,))], ("f32",))
    S("jnp_geomspace", lambda x: x * jnp.geomspace(1.0, 8.0, 4), [U((4,))], ("f32",))
    S("jnp_eye", lambda x: x @ jnp.eye(4), [U()], ("f32",))
    S("jnp_eye__k", lambda x: x * jnp.eye(3, 4, k=1), [U()], ("f32",))
    S("jnp_identity", lambda x: x + jnp.identity(3), [U((3, 3))], ("f32",))
    S("jnp_tri", lambda x: x * jnp.tri(3, 4), [U()], ("f32",))
    S("jnp_indices", lambda x: x + jnp.indices((3, 4)).sum(0), [U()], ("f32",))
    S("jnp_astype", lambda x: x.astype(jnp.int32), [U((3, 4), -9, 9)], F4, FWD)
    S("jnp_astype__f2f", lambda x: x.astype(jnp.float16), [U()], ("f32",))
    S("jnp_astype__i2f", lambda x: x.astype(jnp.float32), [U((3, 4), -9, 9)], ("i32", "u8", "bool"))
    S("jnp_astype__bool", lambda x: x.astype(bool), [U((3, 4), -1, 1)], ("f32", "i32"), FWD)
    S("jnp_view", lambda x: x.view(jnp.int32), [U()], ("f32",), FWD)

    # indexing as users write it
    S("idx_int", lambda x: x[1], [U()], FI)
    S("idx_neg", lambda x: x[-1, -2], [U()], ("f32",))
    S("idx_slice", lambda x: x[1:3], [U()], FI)
    S("idx_slice_step", lambda x: x[::2, 1::2], [U((5, 6))], ("f32",))
    S("idx_slice_neg_step", lambda x: x[::-1, ::-2], [U((5, 6))], ("f32",))
    S("idx_ellipsis", lambda x: x[..., 1], [U((2, 3, 4))], ("f32",))
    S("idx_fancy", lambda x: x[jnp.array([2, 0, 1, 2])], [U()], FI)
    S("idx_fancy2", lambda x: x[jnp.array([0, 2]), jnp.array([1, 3])], [U()], ("f32",))
    S("idx_fancy_neg", lambda x: x[jnp.array([-1, 0, -2])], [U((5,))], ("f32",))
    S("idx_dynamic", lambda x, i: x[i], [U(), as_dt(const(np.int32(2)), "i32")], ("f32",))
    S("idx_dynamic_arr", lambda x, i: x[i, 1:], [U(), as_dt(U((2,), 0, 2), "i32")], ("f32",))
    S("idx_bool_where", lambda x: jnp.where(x > 0, x, jnp.zeros_like(x)).sum(1), [U()], ("f32",))
    S("idx_mixed", lambda x: x[1:, jnp.array([0, 3])], [U()], ("f32",))
    S("at_set", lambda x: x.at[1].set(0.0), [U()], FI)
    S("at_set_slice", lambda x, v: x.at[:, 1:3].set(v), [U(), U((3, 2))], ("f32",))
    S("at_add", lambda x: x.at[jnp.array([0, 2, 0])].add(1.5), [U((5,))], F)
    S("at_add__int", lambda x: x.at[jnp.array([0, 2, 0])].add(3), [U((5,), 0, 9)], ("i32",))
    S("at_mul", lambda x: x.at[jnp.array([1, 3])].multiply(2.0), [U((5,))], ("f32",))
    S("at_min", lambda x: x.at[jnp.array([1, 1, 3])].min(jnp.array([0.5, -0.5, 0.0])), [U((5,))], ("f32",))
    S("at_max", lambda x: x.at[jnp.array([1, 1, 3])].max(jnp.array([0.5, -0.5, 0.0])), [U((5,))], ("f32",))
    S("at_divide", lambda x: x.at[2].divide(4.0), [U((5,))], ("f32",))
    S("at_power", lambda x: x.at[2].power(2.0), [U((5,), 0.5, 2)], ("f32",))
    S("at_get_fill", lambda x: x.at[jnp.array([0, 7])].get(mode="fill", fill_value=-1.0), [U((5,))], ("f32",))
    S("at_set_dyn", lambda x, i, v: x.at[i].set(v), [U((5,)), as_dt(const(np.int32(3)), "i32"), U(())], ("f32",))
    S("at_add_2d", lambda x, v: x.at[jnp.array([0, 2]), 1].add(v), [U(), U((2,))], ("f32",))
    S("at_sub", lambda x: x.at[jnp.array([0, 3])].subtract(1.0), [U((5,))], ("f32",))


# --------------------------------------------------------------------------
# jax.numpy.fft
# --------------------------------------------------------------------------

def reg_fft():
    import jax.numpy as jnp
    fft = jnp.fft

    def cabs(f):
        return lambda *a: jnp.abs(f(*a))
    for n in ("fft", "ifft"):
        fn = getattr(fft, n)
        S(f"fft_{n}", (lambda x, fn=fn: fn(x)), [U((8,))], F)
        S(f"fft_{n}__abs", cabs(lambda x, fn=fn: fn(x)), [U((8,))], ("f32",))
        for norm in ("ortho", "forward", "backward"):
            S(f"fft_{n}__{norm}", (lambda x, fn=fn, norm=norm: fn(x, norm=norm)), [U((6,))], ("f32",))
        S(f"fft_{n}__n", (lambda x, fn=fn: fn(x, n=10)), [U((8,))], ("f32",))
        S(f"fft_{n}__ntrunc", (lambda x, fn=fn: fn(x, n=5)), [U((8,))], ("f32",))
        S(f"fft_{n}__ax0", (lambda x, fn=fn: fn(x, axis=0)), [U((4, 3))], ("f32",))
    for n in ("rfft",):
        fn = getattr(fft, n)
        S(f"fft_{n}", (lambda x, fn=fn: fn(x)), [U((8,))], F)
        S(f"fft_{n}__abs", cabs(lambda x, fn=fn: fn(x)), [U((8,))], F)
        S(f"fft_{n}__odd", (lambda x, fn=fn: fn(x)), [U((7,))], ("f32",))
        for norm in ("ortho", "forward"):
            S(f"fft_{n}__{norm}", (lambda x, fn=fn, norm=norm: fn(x, norm=norm)), [U((6,))], ("f32",))
        S(f"fft_{n}__n", (lambda x, fn=fn: fn(x, n=12)), [U((8,))], ("f32",))
        S(f"fft_{n}__ax0", (lambda x, fn=fn: fn(x, axis=0)), [U((4, 3))], ("f32",))
    S("fft_irfft", lambda x: fft.irfft(fft.rfft(x)), [U((8,))], F)
    S("fft_irfft__n", lambda x: fft.irfft(fft.rfft(x), n=7), [U((8,))], ("f32",))
    S("fft_irfft__ortho", lambda x: fft.irfft(fft.rfft(x, norm="ortho"), norm="ortho"), [U((6,))], ("f32",))
    S("fft_hfft", lambda x: fft.hfft(fft.ifft(x)), [U((6,))], ("f32",))
    S("fft_ihfft", lambda x: fft.ihfft(x), [U((6,))], ("f32",))
    for n in ("fft2", "ifft2", "fftn", "ifftn"):
        fn = getattr(fft, n)
        S(f"fft_{n}", (lambda x, fn=fn: fn(x)), [U((4, 4))], F)
        S(f"fft_{n}__abs", cabs(lambda x, fn=fn: fn(x)), [U((4, 3))], ("f32",))
    S("fft_fftn__axes", lambda x: fft.fftn(x, axes=(0, 2)), [U((2, 3, 4))], ("f32",))
    S("fft_fftn__s", lambda x: fft.fftn(x, s=(4, 6)), [U((3, 4))], ("f32",))
    S("fft_fft2__ortho", lambda x: fft.fft2(x, norm="ortho"), [U((4, 4))], ("f32",))
    S("fft_rfft2", lambda x: fft.rfft2(x), [U((4, 6))], F)
    S("fft_rfftn", lambda x: fft.rfftn(x), [U((2, 3, 4))], ("f32",))
    S("fft_irfft2", lambda x: fft.irfft2(fft.rfft2(x)), [U((4, 6))], F)
    S("fft_irfftn", lambda x: fft.irfftn(fft.rfftn(x), s=(4, 6)), [U((4, 6))], ("f32",))
    S("fft_fftshift", lambda x: fft.fftshift(x), [U((7,))], FI)
    S("fft_ifftshift", lambda x: fft.ifftshift(x), [U((3, 4))], ("f32",))
    S("fft_fftshift__ax", lambda x: fft.fftshift(x, axes=1), [U((3, 4))], ("f32",))
    S("fft_fftfreq", lambda x: x * fft.fftfreq(6, d=0.5), [U((6,))], F)
    S("fft_rfftfreq", lambda x: x * fft.rfftfreq(8), [U((5,))], ("f32",))
    S("fft_power_spectrum", lambda x: jnp.sum(jnp.abs(fft.rfft(x)) ** 2), [U((8,))], F)
    S("fft_convolve", lambda a, b: fft.irfft(fft.rfft(a) * fft.rfft(b), n=8), [U((8,)), U((8,))], ("f32",))
    S("fft_real_imag", lambda x: jnp.real(fft.fft(x)) + jnp.imag(fft.fft(x)), [U((6,))], ("f32",))


# --------------------------------------------------------------------------
# jax.nn
# --------------------------------------------------------------------------

def reg_nn():
    import jax
    import jax.numpy as jnp
    nn = jax.nn
    acts = ("relu", "relu6", "sigmoid", "softplus", "soft_sign", "silu", "swish", "log_sigmoid",
            "leaky_relu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh", "elu", "celu",
            "selu", "gelu", "sparse_plus", "sparse_sigmoid", "squareplus", "mish", "tanh",
            "identity", "log1mexp")
    for n in acts:
        fn = getattr(nn, n)
        lo, hi = (0.1, 4) if n == "log1mexp" else (-4, 4)
        S(f"nn_{n}", (lambda x, fn=fn: fn(x)), [U((3, 4), lo, hi)], F4 if n in ("relu", "sigmoid", "gelu", "silu", "softplus") else F)
    S("nn_gelu__exact", lambda x: nn.gelu(x, approximate=False), [U()], F)
    S("nn_leaky_relu__slope", lambda x: nn.leaky_relu(x, negative_slope=0.2), [U()], ("f32",))
    S("nn_elu__alpha", lambda x: nn.elu(x, alpha=0.5), [U()], ("f32",))
    S("nn_celu__alpha", lambda x: nn.celu(x, alpha=2.0), [U()], ("f32",))
    S("nn_squareplus__b", lambda x: nn.squareplus(x, b=2.0), [U()], ("f32",))
    S("nn_glu", lambda x: nn.glu(x), [U((3, 4))], F)
    S("nn_glu__ax0", lambda x: nn.glu(x, axis=0), [U((4, 3))], ("f32",))
    for n in ("softmax", "log_softmax", "logsumexp", "standardize", "logmeanexp"):
        fn = getattr(nn, n)
        S(f"nn_{n}", (lambda x, fn=fn: fn(x)), [U()], F4 if n in ("softmax", "log_softmax") else F)
        S(f"nn_{n}__ax0", (lambda x, fn=fn: fn(x, axis=0)), [U()], ("f32",))
        S(f"nn_{n}__axall", (lambda x, fn=fn: fn(x, axis=None)), [U()], ("f32",))
    S("nn_softmax__where", lambda x, m: nn.softmax(x, where=m), [U(), as_dt(U(), "bool")], ("f32",), FWD)
    S("nn_log_softmax__where", lambda x, m: nn.log_softmax(x, where=m), [U(), as_dt(U(), "bool")], ("f32",), FWD)
    S("nn_logsumexp__b", lambda x, b: nn.logsumexp(x, axis=1, b=b), [U(), U((3, 4), 0.1, 1)], ("f32",))
    S("nn_logsumexp__sign", lambda x, b: nn.logsumexp(x, b=b, return_sign=True), [U((5,)), U((5,))], ("f32",))
    S("nn_logsumexp__keepdims", lambda x: nn.logsumexp(x, axis=1, keepdims=True), [U()], ("f32",))
    S("nn_logsumexp__where", lambda x, m: nn.logsumexp(x, axis=1, where=m), [U(), as_dt(U(), "bool")], ("f32",), FWD)
    S("nn_standardize__eps", lambda x: nn.standardize(x, axis=1, epsilon=1e-3), [U()], ("f32",))
    S("nn_one_hot", lambda i: nn.one_hot(i, 5), [U((4,), 0, 4)], ("i32",))
    S("nn_one_hot__oob", lambda i: nn.one_hot(i, 3), [U((5,), -1, 4)], ("i32",))
    S("nn_one_hot__dtype", lambda i: nn.one_hot(i, 4, dtype=jnp.bfloat16), [U((3,), 0, 3)], ("i32",))
    S("nn_one_hot__ax0", lambda i: nn.one_hot(i, 4, axis=0), [U((3,), 0, 3)], ("i32",))
    S("nn_dot_product_attention", lambda q, k, v: nn.dot_product_attention(q, k, v),
      [U((1, 4, 2, 8)), U((1, 5, 2, 8)), U((1, 5, 2, 8))], ("f32",))
    S("nn_dot_product_attention__causal", lambda q, k, v: nn.dot_product_attention(q, k, v, is_causal=True),
      [U((1, 4, 2, 8)), U((1, 4, 2, 8)), U((1, 4, 2, 8))], ("f32",))
    S("nn_dot_product_attention__bias", lambda q, k, v, b: nn.dot_product_attention(q, k, v, bias=b),
      [U((1, 3, 1, 4)), U((1, 3, 1, 4)), U((1, 3, 1, 4)), U((1, 1, 3, 3))], ("f32",))
    S("nn_dot_product_attention__scale", lambda q, k, v: nn.dot_product_attention(q, k, v, scale=0.3),
      [U((1, 3, 1, 4)), U((1, 3, 1, 4)), U((1, 3, 1, 4))], ("f32",))


# --------------------------------------------------------------------------
# jax.scipy.special and jax.scipy.stats
# --------------------------------------------------------------------------

def reg_scipy():
    import jax.scipy.special as sp
    import jax.scipy.stats as st
    import jax.numpy as jnp

    un = {"erf": (-3, 3), "erfc": (-3, 3), "erfinv": (-0.9, 0.9), "expit": (-5, 5),
          "logit": (0.05, 0.95), "log_ndtr": (-5, 5), "ndtr": (-4, 4), "ndtri": (0.05, 0.95),
          "gammaln": (0.2, 6), "digamma": (0.2, 6), "gamma": (0.2, 5), "loggamma": (0.2, 6),
          "gammasgn": (-3.5, 4), "entr": (0.0, 3), "i0": (-3, 3), "i0e": (-3, 3), "i1": (-3, 3),
          "i1e": (-3, 3), "erfcinv": (0.1, 1.9), "erfcx": (-2, 3), "dawsn": (-3, 3),
          "exp1": (0.2, 3), "expi": (0.2, 3), "spence": (0.1, 3), "factorial": (0, 6),
          "sici": (0.2, 4), "fresnel": (-2, 2), "wofz": (-2, 2)}
    for n, (lo, hi) in un.items():
        fn = getattr(sp, n)
        S(f"sp_{n}", (lambda x, fn=fn: fn(x)), [U((3, 4), lo, hi)], F)
    bi = {"xlogy": ((0, 3), (0.1, 3)), "xlog1py": ((0, 3), (-0.5, 3)), "betaln": ((0.3, 4), (0.3, 4)),
          "gammainc": ((0.3, 4), (0.1, 5)), "gammaincc": ((0.3, 4), (0.1, 5)),
          "kl_div": ((0.1, 3), (0.1, 3)), "rel_entr": ((0.1, 3), (0.1, 3)), "zeta": ((1.5, 5), (0.5, 3)),
          "polygamma": ((0, 3), (0.5, 4)), "poch": ((0.5, 3), (0.0, 3)), "boxcox": ((0.5, 3), (-1, 1)),
          "boxcox1p": ((0.0, 3), (-1, 1)), "expn": ((0, 3), (0.2, 3)), "comb": ((3, 8), (0, 3)),
          "bessel_jn": ((0.2, 5), (0, 0))}
    for n, ((a0, a1), (b0, b1)) in bi.items():
        fn = getattr(sp, n)
        ints = n in ("polygamma", "expn")
        if n == "bessel_jn":
            S(f"sp_{n}", lambda x: sp.bessel_jn(x, v=2), [U((5,), a0, a1)], F)
            continue
        mk0 = (as_dt(U((3, 4), a0, a1), "i32") if ints else
               (lambda r, d, a0=a0, a1=a1: np.floor(mk(d, r, (3, 4), a0, a1 + 0.99))) if n == "comb"
               else U((3, 4), a0, a1))
        mk1 = (lambda r, d: np.floor(mk(d, r, (3, 4), 0, 3.99))) if n == "comb" else U((3, 4), b0, b1)
        S(f"sp_{n}", (lambda x, y, fn=fn: fn(x, y)), [mk0, mk1], F)
    S("sp_betainc", lambda a, b, x: sp.betainc(a, b, x), [U((4,), 0.5, 3), U((4,), 0.5, 3), U((4,), 0.05, 0.95)], F)
    S("sp_hyp1f1", lambda a, b, x: sp.hyp1f1(a, b, x), [U((4,), 0.5, 2), U((4,), 1, 3), U((4,), 0.1, 1)], ("f32",))
    S("sp_hyp2f1", lambda a, b, c, x: sp.hyp2f1(a, b, c, x),
      [U((4,), 0.2, 1), U((4,), 0.2, 1), U((4,), 1.5, 3), U((4,), 0.05, 0.5)], ("f32",))
    S("sp_owens_t", lambda h, a: sp.owens_t(h, a), [U((4,), -2, 2), U((4,), 0.1, 2)], ("f32",))
    S("sp_multigammaln", lambda a: sp.multigammaln(a, 3), [U((4,), 1.5, 4)], F)
    S("sp_logsumexp", lambda x: sp.logsumexp(x, axis=0), [U()], F)
    S("sp_softmax", lambda x: sp.softmax(x, axis=1), [U()], F)
    S("sp_log_softmax", lambda x: sp.log_softmax(x, axis=0), [U()], ("f32",))
    S("sp_bernoulli", lambda x: x * sp.bernoulli(5)[:5], [U((5,))], ("f32",), FWD)
    S("sp_sph_harm_y", lambda t, p: sp.sph_harm_y(jnp.array([1, 2]), jnp.array([0, 1]), t, p, n_max=3),
      [U((2,), 0.1, 3), U((2,), 0.1, 3)], ("f32",), FWD)

    # stats: each distribution's methods, on floats in its support
    dists = {  # name -> (methods, x range, extra args (shape params))
        "norm": (("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"), (-3, 3), [(-0.5, 0.5), (0.5, 2)]),
        "expon": (("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"), (0.05, 4), []),
        "uniform": (("logpdf", "pdf", "cdf", "ppf"), (0.05, 0.95), []),
        "cauchy": (("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"), (-3, 3), []),
        "laplace": (("logpdf", "pdf", "cdf"), (-3, 3), []),
        "logistic": (("logpdf", "pdf", "cdf", "ppf", "sf", "isf"), (-3, 3), []),
        "t": (("logpdf", "pdf"), (-3, 3), [(1.5, 6)]),
        "gamma": (("logpdf", "pdf", "cdf", "sf", "logcdf", "logsf"), (0.1, 4), [(0.5, 3)]),
        "beta": (("logpdf", "pdf", "cdf", "sf", "logcdf", "logsf"), (0.05, 0.95), [(0.5, 3), (0.5, 3)]),
        "chi2": (("logpdf", "pdf", "cdf", "sf", "logcdf", "logsf"), (0.1, 5), [(1, 5)]),
        "pareto": (("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"), (1.1, 5), [(1, 3)]),
        "gennorm": (("logpdf", "pdf", "cdf"), (-2, 2), [(0.8, 3)]),
        "vonmises": (("logpdf", "pdf"), (-3, 3), [(0.5, 3)]),
        "wrapcauchy": (("logpdf", "pdf"), (0.1, 6), [(0.1, 0.9)]),
        "gumbel_l": (("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"), (-2, 2), []),
        "gumbel_r": (("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"), (-2, 2), []),
        "truncnorm": (("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"), (-0.9, 0.9), [(-1.5, -1), (1, 1.5)]),
    }
    meths = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf", "logpmf", "pmf")
    for dn, (_, (lo, hi), extra) in dists.items():
        dist = getattr(st, dn)
        for m in [m for m in meths if hasattr(dist, m)]:
            fn = getattr(dist, m)
            xr = (0.05, 0.95) if m in ("ppf", "isf") else (lo, hi)
            makers = [U((5,), *xr)] + [U((5,), a, b) for a, b in extra]
            S(f"st_{dn}_{m}", (lambda *a, fn=fn: fn(*a)), makers, F if m in ("logpdf", "cdf") else ("f32",))
        if dn in ("norm", "expon", "cauchy", "laplace", "logistic", "uniform"):
            fn = dist.logpdf
            S(f"st_{dn}_logpdf__locscale", (lambda x, fn=fn, dn=dn: fn(x, 0.5, 2.0) if dn != "uniform" else fn(x, -1.0, 3.0)),
              [U((5,), lo, hi)], ("f32",))
    disc = {"poisson": (("logpmf", "pmf", "cdf"), [(0.5, 4)]),
            "bernoulli": (("logpmf", "pmf", "cdf", "ppf"), [(0.1, 0.9)]),
            "geom": (("logpmf", "pmf", "cdf"), [(0.1, 0.9)]),
            "binom": (("logpmf", "pmf"), [(5, 5), (0.1, 0.9)]),
            "nbinom": (("logpmf", "pmf"), [(1, 4), (0.1, 0.9)]),
            "betabinom": (("logpmf", "pmf"), [(5, 5), (0.5, 3), (0.5, 3)])}
    for dn, (_, extra) in disc.items():
        dist = getattr(st, dn)
        for m in [m for m in meths if hasattr(dist, m)]:
            fn = getattr(dist, m)
            hi = 1 if dn == "bernoulli" else 5
            k = (lambda r, d, hi=hi: np.floor(mk(d, r, (5,), 0, hi + 0.99))) if m != "ppf" else U((5,), 0.05, 0.95)
            makers = [k] + [U((5,), a, b) for a, b in extra]
            S(f"st_{dn}_{m}", (lambda *a, fn=fn: fn(*a)), makers, ("f32",), FWD if m != "logpmf" else ("jvp", "vmap"))
    S("st_multivariate_normal_logpdf", lambda x, m: st.multivariate_normal.logpdf(x, m, jnp.eye(3) * 0.5 + 0.1),
      [U((4, 3)), U((3,))], F)
    S("st_multivariate_normal_pdf", lambda x, m: st.multivariate_normal.pdf(x, m, jnp.diag(jnp.array([1.0, 2.0, 0.5]))),
      [U((4, 3)), U((3,))], ("f32",))
    S("st_dirichlet_logpdf", lambda x, a: st.dirichlet.logpdf(x / jnp.sum(x), a), [U((3,), 0.1, 1), U((3,), 0.5, 3)], F)
    S("st_multinomial_logpmf", lambda p: st.multinomial.logpmf(jnp.array([1.0, 2.0, 1.0]), 4, p / jnp.sum(p)),
      [U((3,), 0.1, 1)], ("f32",))
    S("st_rankdata", lambda x: st.rankdata(x), [U((6,))], ("f32",), FWD)
    S("st_mode", lambda x: st.mode(x), [U((6,), 0, 3)], ("i32",), FWD)
    S("st_sem", lambda x: st.sem(x, axis=0), [U()], ("f32",))


# --------------------------------------------------------------------------
# jax.lax
# --------------------------------------------------------------------------

def reg_lax():
    import jax
    import jax.numpy as jnp
    from jax import lax

    un = {"neg": (-3, 3), "sign": (-3, 3), "floor": (-3, 3), "ceil": (-3, 3), "is_finite": (-3, 3),
          "exp": (-3, 3), "exp2": (-3, 3), "log": (0.1, 4), "log1p": (-0.5, 3), "expm1": (-2, 2),
          "tanh": (-3, 3), "logistic": (-4, 4), "sin": (-3, 3), "cos": (-3, 3), "tan": (-1.2, 1.2),
          "asin": (-0.9, 0.9), "acos": (-0.9, 0.9), "atan": (-3, 3), "sinh": (-2, 2), "cosh": (-2, 2),
          "asinh": (-3, 3), "acosh": (1.1, 4), "atanh": (-0.9, 0.9), "sqrt": (0.1, 4),
          "rsqrt": (0.1, 4), "cbrt": (-4, 4), "abs": (-3, 3), "square": (-3, 3), "erf": (-2, 2),
          "erfc": (-2, 2), "erf_inv": (-0.9, 0.9), "lgamma": (0.2, 5), "digamma": (0.2, 5),
          "bessel_i0e": (-3, 3), "bessel_i1e": (-3, 3), "reciprocal": (0.5, 3), "stop_gradient": (-3, 3)}
    for n, (lo, hi) in un.items():
        fn = getattr(lax, n)
        S(f"lax_{n}", (lambda x, fn=fn: fn(x)), [U((6,), lo, hi)], F4 if n in ("exp", "tanh", "sqrt", "log") else F)
    for n, rm in (("round_away", lax.RoundingMethod.AWAY_FROM_ZERO), ("round_even", lax.RoundingMethod.TO_NEAREST_EVEN)):
        S(f"lax_{n}", (lambda x, rm=rm: lax.round(x, rm)), [U((6,), -3, 3)], F)
    bi = {"add": (-3, 3), "sub": (-3, 3), "mul": (-3, 3), "div": (0.5, 3), "rem": (0.5, 3),
          "pow": (0.5, 2), "max": (-3, 3), "min": (-3, 3), "atan2": (-3, 3), "nextafter": (-3, 3),
          "eq": (-1, 1), "ne": (-1, 1), "lt": (-1, 1), "le": (-1, 1), "gt": (-1, 1), "ge": (-1, 1),
          "igamma": (0.3, 3), "igammac": (0.3, 3), "zeta": (1.5, 4), "polygamma": (0, 2),
          "igamma_grad_a": (0.5, 3), "random_gamma_grad": (0.5, 3)}
    for n, (lo, hi) in bi.items():
        fn = getattr(lax, n)
        m0 = (lambda r, d: np.floor(mk(d, r, (6,), 0, 2.99))) if n == "polygamma" else U((6,), lo, hi)
        S(f"lax_{n}", (lambda x, y, fn=fn: fn(x, y)), [m0, U((6,), lo if n != "polygamma" else 0.5, hi + 1)], F)
    for n in ("add", "sub", "mul", "div", "rem", "max", "min", "and", "or", "xor",
              "shift_left", "shift_right_logical", "shift_right_arithmetic"):
        fn = getattr(lax, n if n not in ("and", "or", "xor") else f"bitwise_{n}")
        lo, hi = (0, 7) if "shift" in n else (1, 50)
        S(f"lax_{n}__int", (lambda x, y, fn=fn: fn(x, y)), [U((6,), -40, 50), U((6,), lo, hi)], ("i32", "u32", "i64", "i8"))
    for n in ("population_count", "clz", "bitwise_not"):
        S(f"lax_{n}", (lambda x, fn=getattr(lax, n): fn(x)), [U((6,), 0, 1000)], ("i32", "u32", "u8"))
    S("lax_mulhi", lambda x, y: lax.mul(x, y) >> 16, [U((6,), 0, 300), U((6,), 0, 300)], ("u32",))
    S("lax_pow__int", lambda x, y: lax.pow(x, y), [U((6,), 0.5, 2), as_dt(U((6,), -3, 4), "i32")], F)
    for k in (0, 1, 2, 3, -1, -3, 5):
        S(f"lax_integer_pow__{k if k >= 0 else 'm' + str(-k)}", (lambda x, k=k: lax.integer_pow(x, k)),
          [U((6,), 0.5, 2)], F)
    S("lax_integer_pow__int", lambda x: lax.integer_pow(x, 3), [U((6,), -5, 5)], ("i32",))
    S("lax_clamp", lambda x: lax.clamp(-1.0, x, 1.0), [U((6,))], F)
    S("lax_clamp__arr", lambda lo, x, hi: lax.clamp(lo, x, hi), [U((6,), -2, 0), U((6,)), U((6,), 0, 2)], ("f32",))
    S("lax_select", lambda p, x, y: lax.select(p, x, y), [as_dt(U((6,)), "bool"), U((6,)), U((6,))], F)
    S("lax_select_n", lambda i, x, y, z: lax.select_n(i, x, y, z), [as_dt(U((6,), 0, 2), "i32"), U((6,)), U((6,)), U((6,))], ("f32",))
    S("lax_complex", lambda x, y: lax.abs(lax.complex(x, y)), [U((6,)), U((6,))], ("f32",))
    S("lax_complex_parts", lambda x, y: (lax.real(lax.complex(x, y) * lax.complex(y, x)),
                                          lax.imag(lax.conj(lax.complex(x, y)))), [U((6,)), U((6,))], ("f32",))
    for src, dst in (("f32", jnp.int32), ("f32", jnp.float16), ("f32", jnp.bfloat16), ("f32", jnp.bool_),
                     ("i32", jnp.float32), ("i32", jnp.uint8), ("f64", jnp.float32), ("u8", jnp.int32)):
        S(f"lax_convert__{np.dtype(dst).name}", (lambda x, dst=dst: lax.convert_element_type(x, dst)),
          [U((6,), -300, 300)], (src,), FWD)
    S("lax_bitcast", lambda x: lax.bitcast_convert_type(x, jnp.int32), [U((6,))], ("f32",), FWD)
    S("lax_bitcast__back", lambda x: lax.bitcast_convert_type(x, jnp.float32), [U((6,), 0, 10**9)], ("i32",), FWD)
    S("lax_bitcast__u16", lambda x: lax.bitcast_convert_type(x, jnp.uint16), [U((6,))], ("f32",), FWD)
    S("lax_reduce_precision", lambda x: lax.reduce_precision(x, 5, 10), [U((6,), -100, 100)], F)
    S("lax_broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)), [U()], F)
    S("lax_broadcast", lambda x: lax.broadcast(x, (2,)), [U()], ("f32",))
    S("lax_reshape", lambda x: lax.reshape(x, (2, 6)), [U()], ("f32",))
    S("lax_reshape__dims", lambda x: lax.reshape(x, (12,), dimensions=(1, 0)), [U()], ("f32",))
    S("lax_squeeze", lambda x: lax.squeeze(x, (1,)), [U((3, 1, 4))], ("f32",))
    S("lax_expand_dims", lambda x: lax.expand_dims(x, (0, 3)), [U()], ("f32",))
    S("lax_rev", lambda x: lax.rev(x, (0, 1)), [U()], FI)
    S("lax_transpose", lambda x: lax.transpose(x, (2, 0, 1)), [U((2, 3, 4))], FI)
    S("lax_pad", lambda x: lax.pad(x, 0.5, ((1, 2, 0), (0, 1, 1))), [U()], F)
    S("lax_pad__neg", lambda x: lax.pad(x, 0.0, ((-1, 1, 0), (2, -2, 1))), [U()], ("f32",))
    S("lax_concatenate", lambda x, y: lax.concatenate([x, y, x], 1), [U(), U((3, 2))], FI)
    S("lax_slice", lambda x: lax.slice(x, (0, 1), (3, 4), (2, 2)), [U()], FI)
    S("lax_slice_in_dim", lambda x: lax.slice_in_dim(x, 1, 3, axis=1), [U()], ("f32",))
    S("lax_index_in_dim", lambda x: lax.index_in_dim(x, 2, axis=1, keepdims=False), [U()], ("f32",))
    S("lax_dynamic_slice", lambda x, i: lax.dynamic_slice(x, (i, 1), (2, 2)), [U(), as_dt(const(np.int32(2)), "i32")], FI)
    S("lax_dynamic_slice__clamp", lambda x, i: lax.dynamic_slice(x, (i, i), (2, 3)), [U(), as_dt(const(np.int32(7)), "i32")], ("f32",))
    S("lax_dynamic_update_slice", lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 0)),
      [U(), U((2, 4)), as_dt(const(np.int32(1)), "i32")], FI)
    S("lax_dynamic_slice_in_dim", lambda x, i: lax.dynamic_slice_in_dim(x, i, 2, axis=1), [U(), as_dt(const(np.int32(1)), "i32")], ("f32",))
    S("lax_dynamic_index_in_dim", lambda x, i: lax.dynamic_index_in_dim(x, i, axis=0, keepdims=False),
      [U(), as_dt(const(np.int32(2)), "i32")], ("f32",))
    S("lax_split", lambda x: lax.split(x, (1, 3), axis=1), [U()], ("f32",))
    S("lax_iota", lambda x: x + lax.iota(jnp.float32, 6), [U((6,))], ("f32",))
    S("lax_broadcasted_iota", lambda x: x * lax.broadcasted_iota(jnp.int32, (3, 4), 1), [U((3, 4), -3, 3)], ("i32",))
    for n in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod"):
        fn = getattr(lax, n)
        for ax in ((0,), (1,), (0, 1)):
            S(f"lax_{n}__ax{''.join(map(str, ax))}", (lambda x, fn=fn, ax=ax: fn(x, ax)), [U((3, 4), 0.5, 1.5)],
              F if ax == (1,) else ("f32",))
        S(f"lax_{n}__int", (lambda x, fn=fn: fn(x, (1,))), [U((3, 4), -5, 5)], ("i32", "u8"))
    for n in ("reduce_and", "reduce_or", "reduce_xor"):
        S(f"lax_{n}", (lambda x, fn=getattr(lax, n): fn(x, (1,))), [U((3, 4), 0, 200)], ("bool", "i32"))
    S("lax_argmax", lambda x: lax.argmax(x, 1, jnp.int32), [U()], FI)
    S("lax_argmin", lambda x: lax.argmin(x, 0, jnp.int32), [U()], FI)
    for n in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"):
        fn = getattr(lax, n)
        S(f"lax_{n}", (lambda x, fn=fn: fn(x, axis=1)), [U((3, 4), 0.5, 1.5)], F)
        S(f"lax_{n}__reverse", (lambda x, fn=fn: fn(x, axis=0, reverse=True)), [U((3, 4), 0.5, 1.5)], ("f32",))
        if n != "cumlogsumexp":
            S(f"lax_{n}__int", (lambda x, fn=fn: fn(x, axis=0)), [U((3, 4), -3, 3)], ("i32",))
    S("lax_sort", lambda x: lax.sort(x), [U((6,))], FI)
    S("lax_sort__multi", lambda k, v: lax.sort((k, v), num_keys=1), [U((6,), 0, 3), U((6,))], ("f32",))
    S("lax_sort__dim0", lambda x: lax.sort(x, dimension=0), [U()], ("f32",))
    S("lax_sort_key_val", lambda k, v: lax.sort_key_val(k, v), [U((6,)), U((6,))], ("f32",))
    S("lax_top_k", lambda x: lax.top_k(x, 3), [U((7,))], FI)
    S("lax_top_k__2d", lambda x: lax.top_k(x, 2), [U((3, 5))], ("f32",))
    S("lax_approx_max_k", lambda x: lax.approx_max_k(x, 2), [U((3, 5))], ("f32",), FWD)
    S("lax_dot", lambda a, b: lax.dot(a, b), [U((3, 4)), U((4, 2))], F4)
    S("lax_dot_general", lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
      [U((2, 3, 4)), U((2, 4, 5))], F)
    S("lax_dot_general__nobatch", lambda a, b: lax.dot_general(a, b, (((0,), (0,)), ((), ()))),
      [U((4, 3)), U((4, 2))], ("f32",))
    S("lax_dot_general__prec", lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ())),
                                                             precision=lax.Precision.HIGHEST), [U((3, 4)), U((4, 2))], ("f32",))
    S("lax_dot_general__pref", lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ())),
                                                             preferred_element_type=jnp.float32),
      [U((3, 4)), U((4, 2))], ("bf16", "f16"), FWD)
    S("lax_dot_general__int", lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))),
      [U((3, 4), -5, 5), U((4, 2), -5, 5)], ("i32", "i8"))
    # convolutions as users call them
    S("lax_conv", lambda x, w: lax.conv(x, w, (1, 1), "SAME"), [U((1, 2, 5, 5)), U((3, 2, 3, 3))], F)
    S("lax_conv__valid_stride", lambda x, w: lax.conv(x, w, (2, 2), "VALID"), [U((1, 2, 6, 6)), U((2, 2, 3, 3))], ("f32",))
    S("lax_conv_general_dilated", lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), ((1, 1), (0, 0)), lhs_dilation=(1, 1), rhs_dilation=(2, 1)),
      [U((1, 2, 6, 5)), U((2, 2, 2, 2))], ("f32",))
    S("lax_conv_general_dilated__nhwc", lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
      [U((2, 5, 5, 2)), U((3, 3, 2, 4))], ("f32",))
    S("lax_conv_general_dilated__groups", lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), "VALID", feature_group_count=2), [U((1, 4, 5, 5)), U((4, 2, 2, 2))], ("f32",))
    S("lax_conv_general_dilated__1d", lambda x, w: lax.conv_general_dilated(x, w, (1,), "SAME"),
      [U((2, 3, 8)), U((4, 3, 3))], ("f32",))
    S("lax_conv_general_dilated__lhsdil", lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), ((1, 1), (1, 1)), lhs_dilation=(2, 2)), [U((1, 1, 4, 4)), U((1, 1, 3, 3))], ("f32",))
    S("lax_conv_transpose", lambda x, w: lax.conv_transpose(x, w, (2, 2), "SAME",
                                                            dimension_numbers=("NCHW", "OIHW", "NCHW")),
      [U((1, 2, 4, 4)), U((3, 2, 3, 3))], ("f32",))
    S("lax_conv_with_general_padding", lambda x, w: lax.conv_with_general_padding(
        x, w, (1, 1), ((1, 0), (0, 1)), None, None), [U((1, 2, 5, 5)), U((2, 2, 2, 2))], ("f32",))
    # windows
    S("lax_reduce_window_max", lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (1, 1), "VALID"), [U((4, 5))], F)
    S("lax_reduce_window_sum", lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 3), (2, 1), "SAME"), [U((4, 5))], F)
    S("lax_reduce_window_min", lambda x: lax.reduce_window(x, jnp.inf, lax.min, (3,), (2,), "VALID"), [U((7,))], ("f32",))
    S("lax_reduce_window__pad", lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), ((1, 0), (0, 1))),
      [U((3, 4))], ("f32",))
    S("lax_reduce_window__dil", lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (2,), (1,), "VALID",
                                                            window_dilation=(2,)), [U((7,))], ("f32",))
    S("lax_reduce_window__int", lambda x: lax.reduce_window(x, 0, lax.add, (2, 2), (1, 1), "VALID"),
      [U((3, 4), -5, 5)], ("i32",))
    S("lax_reduce__generic", lambda x: lax.reduce(x, 0.0, lambda a, b: a + b * b, (1,)), [U()], ("f32",))
    S("lax_reduce__multi", lambda x, y: lax.reduce((x, y), (0.0, 1.0), lambda a, b: (a[0] + b[0], a[1] * b[1]), (0,)),
      [U(), U((3, 4), 0.5, 1.5)], ("f32",))
    # gather / scatter through lax
    dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    S("lax_gather", lambda x, i: lax.gather(x, i, dn, (1, 4)), [U((5, 4)), as_dt(U((3, 1), 0, 4), "i32")], ("f32",))
    S("lax_gather__clip", lambda x, i: lax.gather(x, i, dn, (1, 4), mode="clip"),
      [U((5, 4)), as_dt(U((3, 1), -2, 7), "i32")], ("f32",))
    S("lax_gather__fill", lambda x, i: lax.gather(x, i, dn, (1, 4), mode="fill", fill_value=0.0),
      [U((5, 4)), as_dt(U((3, 1), -2, 7), "i32")], ("f32",))
    sdn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,))
    for n in ("scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max", "scatter_sub"):
        fn = getattr(lax, n)
        S(f"lax_{n}", (lambda x, i, u, fn=fn: fn(x, i, u, sdn)),
          [U((5, 4)), as_dt(const(np.array([[0], [3], [0]], np.int32)), "i32"), U((3, 4))], ("f32",))
    S("lax_scatter_add__int", lambda x, i, u: lax.scatter_add(x, i, u, sdn),
      [U((5, 4), -5, 5), as_dt(const(np.array([[1], [1], [4]], np.int32)), "i32"), U((3, 4), -5, 5)], ("i32",))
    S("lax_scatter__oob", lambda x, i, u: lax.scatter(x, i, u, sdn, mode=lax.GatherScatterMode.FILL_OR_DROP),
      [U((5, 4)), as_dt(const(np.array([[0], [9], [2]], np.int32)), "i32"), U((3, 4))], ("f32",))
    # misc lax
    S("lax_optimization_barrier", lambda x, y: lax.optimization_barrier((x * 2.0, y)), [U((4,)), U((4,))], ("f32",))
    S("lax_tie_stop", lambda x: x * lax.stop_gradient(x), [U((4,))], ("f32",))
    S("lax_empty", lambda x: x + jnp.empty((4,)) * 0.0, [U((4,))], ("f32",), FWD)
    S("lax_platform_dependent", lambda x: lax.platform_dependent(x, cpu=jnp.sin, default=jnp.cos), [U((4,))], ("f32",))
    S("lax_polynomial", lambda x: jnp.polyval(jnp.array([1.0, -2.0, 0.5]), x), [U((5,))], F)
    S("lax_cond", lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x), [as_dt(const(np.bool_(True)), "bool"), U((4,))], ("f32",))
    S("lax_cond__false", lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x), [as_dt(const(np.bool_(False)), "bool"), U((4,))], ("f32",))
    S("lax_switch", lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, jnp.tanh], x), [as_dt(const(np.int32(2)), "i32"), U((4,))], ("f32",))
    S("lax_switch__clamp", lambda i, x: lax.switch(i, [jnp.sin, jnp.cos], x), [as_dt(const(np.int32(-4)), "i32"), U((4,))], ("f32",))
    S("lax_while_loop", lambda x: lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.1), (0, x))[1],
      [U((4,))], ("f32",), ("jvp", "vmap"))
    S("lax_fori_loop", lambda x: lax.fori_loop(0, 5, lambda i, c: c * 0.9 + jnp.sin(c), x), [U((4,))], F)
    S("lax_fori_loop__unroll", lambda x: lax.fori_loop(0, 4, lambda i, c: c + i * c, x, unroll=2), [U((4,))], ("f32",))
    S("lax_scan", lambda x: lax.scan(lambda c, v: (c + v, c * v), 0.0, x), [U((5,))], F)
    S("lax_scan__reverse", lambda x: lax.scan(lambda c, v: (c * 0.5 + v, c), 1.0, x, reverse=True), [U((5,))], ("f32",))
    S("lax_scan__length", lambda x: lax.scan(lambda c, _: (c * 1.1, c), x, None, length=4), [U((3,))], ("f32",))
    S("lax_scan__pytree", lambda x, y: lax.scan(lambda c, v: ((c[0] + v[0], c[1] * v[1]), c[0]),
                                                (0.0, 1.0), (x, y)), [U((5,)), U((5,))], ("f32",))
    S("lax_associative_scan", lambda x: lax.associative_scan(jnp.add, x), [U((6,))], ("f32",))
    S("lax_associative_scan__mul_rev", lambda x: lax.associative_scan(jnp.multiply, x, reverse=True), [U((6,), 0.5, 1.5)], ("f32",))
    S("lax_map", lambda x: lax.map(lambda r: jnp.sum(r * r), x), [U()], ("f32",))
    S("lax_custom_root", lambda a: lax.custom_root(lambda x: x * x - a, jnp.ones_like(a),
                                                   lambda f, x0: lax.fori_loop(0, 8, lambda i, x: x - f(x) / (2 * x), x0),
                                                   lambda g, y: y / 2.0), [U((3,), 1, 4)], ("f32",), ("jvp",))
    S("lax_checkpoint", lambda x: jax.checkpoint(lambda v: jnp.sin(jnp.sin(v)))(x), [U((4,))], ("f32",))
    S("lax_checkpoint__policy", lambda x: jax.checkpoint(lambda v: jnp.sum(jnp.tanh(v @ v.T)),
                                                         policy=jax.checkpoint_policies.nothing_saveable)(x),
      [U()], ("f32",))
    S("lax_custom_jvp", lambda x: jax.nn.relu(x) + jax.nn.softplus(x), [U((5,))], ("f32",))
    S("lax_custom_linear_solve", lambda b: lax.custom_linear_solve(
        lambda x: 2.0 * x, b, lambda mv, r: r / 2.0, symmetric=True), [U((4,))], ("f32",), ("jvp",))


# --------------------------------------------------------------------------
# Whole programs (family program2)
# --------------------------------------------------------------------------

def reg_programs():
    from sweep_programs import register as reg
    reg(lambda *a, **k: S(*a, family="program2", prefix="prog2", **k), U, mk)


def register():
    if PROGRAMS:
        reg_programs()
    else:
        reg_numpy()
        reg_fft()
        reg_nn()
        reg_scipy()
        reg_lax()


# Fixtures stay small: a transform whose printout is larger than this is not
# kept, nor a case whose own printout is (JAX's expansions of expi, exp1 and
# expn are tens of kilobytes of polynomial code: one printout checks them).
MAX_T_BYTES = 12000
MAX_CASE_BYTES = 24000


def prune(out):
    """Drops the transforms (and cases) whose printouts are over the caps
    above, recording each under transforms_not_kept / the manifest's
    cases_not_kept, and repacks every case's .npys with the arrays still
    named by the manifest."""
    import json
    path = os.path.join(out, "MANIFEST.json")
    with open(path) as fh:
        m = json.load(fh)
    size = lambda f: os.path.getsize(os.path.join(out, f))
    dropped = m.setdefault("cases_not_kept", {})
    for name in sorted(m["cases"]):
        c = m["cases"][name]
        files = [c["jaxpr"]] + [t["jaxpr"] for t in c["transforms"].values()]
        if size(c["jaxpr"]) > MAX_CASE_BYTES:
            dropped[name] = f"printout over {MAX_CASE_BYTES} bytes"
            for f in files + [f"{name}.npys"]:
                os.remove(os.path.join(out, f))
            del m["cases"][name]
            continue
        for t in sorted(c["transforms"]):
            if size(c["transforms"][t]["jaxpr"]) > MAX_T_BYTES:
                os.remove(os.path.join(out, c["transforms"][t]["jaxpr"]))
                del c["transforms"][t]
                c.setdefault("transforms_not_kept", {})[t] = f"printout over {MAX_T_BYTES} bytes"
        with open(os.path.join(out, f"{name}.npys"), "rb") as fh:
            old = fh.read()
        new = bytearray()
        ents = [c] + [c["transforms"][t] for t in sorted(c["transforms"])]
        for e in ents:
            for key in ("consts", "inputs", "outputs", "sub_consts"):
                arrays = e.get(key, [])
                if key == "sub_consts":
                    arrays = [a for sub in arrays for a in sub]
                for a in arrays:
                    blob = old[a["offset"]:a["offset"] + a["length"]]
                    a["offset"] = len(new)
                    new += blob
        with open(os.path.join(out, f"{name}.npys"), "wb") as fh:
            fh.write(bytes(new))
    m["num_cases"] = len(m["cases"])
    with open(path, "w") as fh:
        json.dump(m, fh, sort_keys=True, indent=0)
        fh.write("\n")


if __name__ == "__main__" and "--prune" in sys.argv:
    prune(sys.argv[sys.argv.index("--prune") + 1])
elif __name__ == "__main__":
    which = "program2" if PROGRAMS else "sweep"
    script = os.path.abspath(__file__)
    if PROGRAMS:  # the child passes see it through the environment
        os.environ["FT_SWEEP_PROGRAMS"] = "1"
    out = os.path.join(ROOT, "fixtures", which)
    if "--out" in sys.argv:
        out = os.path.abspath(sys.argv[sys.argv.index("--out") + 1])
    try:
        gc.main(register=register, out_default=os.path.join(ROOT, "fixtures", which), script=script,
                generator="tools/oracle/gen_sweep.py" + (" --programs" if PROGRAMS else ""),
                doc=__doc__, lax_json=False)
    finally:
        if "--pass" not in sys.argv and "--list" not in sys.argv and \
                os.path.exists(os.path.join(out, "MANIFEST.json")):
            prune(out)
