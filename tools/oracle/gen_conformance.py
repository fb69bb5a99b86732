#!/usr/bin/env python3
"""Generate FrankenTrace's conformance fixtures (fixtures/conformance/) from
real JAX: per-primitive cases across dtypes and shapes with edge values,
transforms (grad, jvp, vjp, vmap and their compositions, jacobians,
hessians), control flow and realistic programs.

Usage (see tools/oracle/README.md):

  .venv-oracle/bin/python tools/oracle/gen_conformance.py     # everything
  .venv-oracle/bin/python tools/oracle/gen_conformance.py --list
  .venv-oracle/bin/python tools/oracle/gen_conformance.py --lax-primitives

What a case stores (all names relative to fixtures/conformance/):
  <case>.jaxpr          str(jax.make_jaxpr(f)(*args)) + "\\n"
  <case>.<T>.jaxpr      str(jax.make_jaxpr(T(f))(*args_T)) + "\\n" per transform T
  <case>.npys           every array of the case (inputs, constants, outputs,
                        for the forward function and each transform), as .npy
                        blobs back to back; MANIFEST.json gives each one's
                        offset and length.
MANIFEST.json holds, per case: family, group, jax version, x64, primitives,
dtypes, reduction length, the arrays, and per transform its params, arrays
and printout. LAX_PRIMITIVES.json is JAX's own list of lax primitives (for
the coverage table of docs/conformance.md).

Deterministic: seeds are crc32(case name), JSON keys sorted, no timestamps.
Cases whose name starts with x64_ run in a child process with
jax_enable_x64=True, the rest in another child (the flag is global).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import zlib

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import gen_golden as gg  # noqa: E402  (shared introspection helpers)

OUT_DEFAULT = os.path.join(ROOT, "fixtures", "conformance")

# name -> (family, group, builder, transforms)
CASES: list[tuple[str, str, str, object, tuple]] = []
TRANSFORMS = ("grad", "jvp", "vjp", "vmap", "grad_grad", "vmap_grad",
              "jit_vmap_grad", "jacfwd", "jacrev", "hessian")
VMAP_B = 3  # batch size of every vmap transform


def prim_collector():
    """(names, mine): mine(name, group, transforms) registers a "prim"
    family case as case() does and appends its name to names, the list an
    extra generator hands to main_extra (gen_prims017/2/3.py)."""
    names: list[str] = []

    def mine(name, group, transforms=()):
        names.append(name)
        return case(name, "prim", group, transforms)
    return names, mine


def case(name, family, group, transforms=()):
    def deco(builder):
        assert not any(c[0] == name for c in CASES), name
        for t in transforms:
            assert t in TRANSFORMS, t
        CASES.append((name, family, group, builder, tuple(transforms)))
        return builder
    return deco


def seed_of(name):
    return zlib.crc32(name.encode())


INF, NAN = float("inf"), float("nan")


# --------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------

def edge_vals(dtype):
    """Edge values of a float dtype: signed zeros, infinities, NaN, the
    smallest subnormal and normal, the largest finite, tiny and huge."""
    import ml_dtypes
    fi = ml_dtypes.finfo(dtype)
    return [-0.0, 0.0, INF, -INF, NAN, float(fi.smallest_subnormal),
            -float(fi.smallest_subnormal), float(fi.tiny), float(fi.max),
            -float(fi.max), 1.0, -1.0, 0.5, -2.5, 1e-3, -1e-3]


def fl_input(rng, dtype, shape, lo, hi, edges=True):
    """A float array of shape: edge values first (when edges and the array
    holds more than a few elements), then seeded uniform values."""
    n = int(np.prod(shape)) if shape else 1
    vals = list(rng.uniform(lo, hi, size=n))
    if edges and n >= 16:
        ev = edge_vals(dtype)
        vals[:len(ev)] = ev
    with np.errstate(over="ignore"):  # huge edge values become inf in 16-bit types
        return np.asarray(vals, dtype=np.float64).astype(dtype).reshape(shape)


def int_input(rng, dtype, shape, lo=None, hi=None, edges=True):
    ii = np.iinfo(dtype)
    lo = ii.min if lo is None else lo
    hi = ii.max if hi is None else hi
    n = int(np.prod(shape)) if shape else 1
    vals = list(rng.integers(lo, hi, size=n, endpoint=True, dtype=np.int64)
                if hi <= 2**62 else rng.integers(0, 2**62, size=n))
    if edges and n >= 8:
        ev = [0, 1, ii.max, ii.min, ii.max - 1, ii.min + 1 if ii.min else 2, 7, 3]
        vals[:len(ev)] = ev
    return np.asarray([int(v) for v in vals], dtype=object).astype(dtype).reshape(shape)


def bool_input(rng, shape):
    return rng.integers(0, 2, size=shape).astype(np.bool_)


def randn(rng, *shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


FLOATS = ("f32", "f16", "bf16")      # normal pass
FLOATS64 = ("f64",)                  # x64 pass
DT = {}


def dt(name):
    import jax.numpy as jnp
    if not DT:
        DT.update({"f16": np.float16, "bf16": jnp.bfloat16, "f32": np.float32,
                   "f64": np.float64, "i8": np.int8, "i16": np.int16,
                   "i32": np.int32, "i64": np.int64, "u8": np.uint8,
                   "u32": np.uint32, "u64": np.uint64, "bool": np.bool_})
    return DT[name]


def pname(dtn):
    return "x64_" if dtn in ("f64", "i64", "u64") else ""


SHAPES = {"s": (), "z": (0,), "v": (24,), "m": (3, 5)}


# --------------------------------------------------------------------------
# Primitive cases
# --------------------------------------------------------------------------

def register_prims():
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax._src import ad_util

    unary = {  # name -> (fn, lo, hi)
        "neg": (lax.neg, -10, 10), "sign": (lax.sign, -10, 10),
        "floor": (lax.floor, -10, 10), "ceil": (lax.ceil, -10, 10),
        "round0": (lambda x: lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO), -10, 10),
        "round1": (lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), -10, 10),
        "is_finite": (lax.is_finite, -10, 10),
        "exp": (lax.exp, -20, 20), "exp2": (lax.exp2, -20, 20),
        "log": (lax.log, 0.001, 100), "log1p": (lax.log1p, -0.999, 100),
        "expm1": (lax.expm1, -20, 20), "tanh": (lax.tanh, -10, 10),
        "logistic": (lax.logistic, -20, 20), "sin": (lax.sin, -10, 10),
        "cos": (lax.cos, -10, 10), "tan": (lax.tan, -1.5, 1.5),
        "asin": (lax.asin, -1, 1), "acos": (lax.acos, -1, 1),
        "atan": (lax.atan, -50, 50), "sinh": (lax.sinh, -10, 10),
        "cosh": (lax.cosh, -10, 10), "asinh": (lax.asinh, -100, 100),
        "acosh": (lax.acosh, 1, 100), "atanh": (lax.atanh, -1, 1),
        "sqrt": (lax.sqrt, 0, 100), "rsqrt": (lax.rsqrt, 0.001, 100),
        "cbrt": (lax.cbrt, -100, 100), "square": (lax.square, -10, 10),
        "abs": (lax.abs, -10, 10), "erf": (lax.erf, -4, 4),
        "erfc": (lax.erfc, -4, 10), "erf_inv": (lax.erf_inv, -1, 1),
        "ipow2": (lambda x: lax.integer_pow(x, 2), -4, 4),
        "ipow3": (lambda x: lax.integer_pow(x, 3), -4, 4),
        "ipowm2": (lambda x: lax.integer_pow(x, -2), -4, 4),
        "ipow7": (lambda x: lax.integer_pow(x, 7), -3, 3),
        "copy": (lax.copy_p.bind, -10, 10),
        "stop_gradient": (lax.stop_gradient, -10, 10),
        "reduce_precision": (lambda x: lax.reduce_precision(x, 5, 10), -1e5, 1e5),
    }
    for un, (fn, lo, hi) in unary.items():
        grp = {"round0": "round", "round1": "round", "ipow2": "integer_pow",
               "ipow3": "integer_pow", "ipowm2": "integer_pow",
               "ipow7": "integer_pow"}.get(un, un)
        for dtn in FLOATS + FLOATS64:
            shapes = "svm" if dtn in ("f32", "f64") else "v"
            if dtn == "f32":
                shapes = "szvm"
            for sk in shapes:
                def b(rng, fn=fn, lo=lo, hi=hi, dtn=dtn, sk=sk):
                    return fn, [fl_input(rng, dt(dtn), SHAPES[sk], lo, hi)]
                case(f"{pname(dtn)}prim_{un}_{dtn}_{sk}", "prim", grp)(b)

    # integer unary
    iun = {"neg": lax.neg, "sign": lax.sign, "abs": lax.abs, "not": lax.bitwise_not,
           "ipow2": lambda x: lax.integer_pow(x, 2),
           "ipow3": lambda x: lax.integer_pow(x, 3)}
    for un, fn in iun.items():
        grp = un.replace("ipow2", "integer_pow").replace("ipow3", "integer_pow")
        for dtn in ("i8", "i32", "u8", "u32", "i64", "u64"):
            if un in ("neg", "sign", "abs") and dtn.startswith("u"):
                continue
            def b(rng, fn=fn, dtn=dtn):
                return fn, [int_input(rng, dt(dtn), (12,))]
            case(f"{pname(dtn)}prim_{un}_{dtn}", "prim", grp)(b)

    @case("prim_not_bool", "prim", "not")
    def _(rng):
        return lax.bitwise_not, [bool_input(rng, (2, 3))]

    # float binary
    fbin = {"add": lax.add, "sub": lax.sub, "mul": lax.mul, "div": lax.div,
            "rem": lax.rem, "pow": lax.pow, "max": lax.max, "min": lax.min,
            "atan2": lax.atan2, "nextafter": lax.nextafter,
            "add_any": ad_util.add_jaxvals_p.bind}
    for bn, fn in fbin.items():
        for dtn in FLOATS + FLOATS64:
            shapes = "szvm" if dtn == "f32" else ("vm" if dtn == "f64" else "v")
            if bn == "nextafter" and dtn in ("f16", "bf16"):
                continue
            for sk in shapes:
                def b(rng, fn=fn, dtn=dtn, sk=sk, bn=bn):
                    lo, hi = (0.1, 4) if bn == "pow" else (-10, 10)
                    x = fl_input(rng, dt(dtn), SHAPES[sk], lo, hi)
                    y = fl_input(rng, dt(dtn), SHAPES[sk], -4 if bn == "pow" else -10, 10)
                    if y.size >= 16:  # pair edges with other edges and randoms
                        y = np.roll(y, 5)
                    return fn, [x, y]
                case(f"{pname(dtn)}prim_{bn}_{dtn}_{sk}", "prim", bn)(b)

    # integer binary
    ibin = {"add": lax.add, "sub": lax.sub, "mul": lax.mul, "div": lax.div,
            "rem": lax.rem, "max": lax.max, "min": lax.min,
            "and": lax.bitwise_and, "or": lax.bitwise_or, "xor": lax.bitwise_xor,
            "shift_left": lax.shift_left,
            "shift_right_logical": lax.shift_right_logical,
            "shift_right_arithmetic": lax.shift_right_arithmetic}
    for bn, fn in ibin.items():
        for dtn in ("i8", "i32", "u8", "u32", "i64", "u64"):
            def b(rng, fn=fn, dtn=dtn, bn=bn):
                x = int_input(rng, dt(dtn), (16,))
                bits = np.dtype(dt(dtn)).itemsize * 8
                if bn.startswith("shift"):
                    y = np.asarray([0, 1, 3, bits - 1, bits, bits + 1, 2 * bits, 5,
                                    7, 2, 1, 0, 4, 6, bits - 2, 9], dtype=np.int64)
                    if not dtn.startswith("u"):
                        y[11] = -1
                    y = y.astype(dt(dtn))
                else:
                    y = int_input(rng, dt(dtn), (16,))
                    y = np.roll(y, 3)
                    if bn in ("div", "rem"):  # XLA semantics for /0, MIN/-1 kept
                        y[1] = 0
                return fn, [x, y]
            case(f"{pname(dtn)}prim_{bn}_{dtn}", "prim", bn)(b)

    for bn, fn in {"and": lax.bitwise_and, "or": lax.bitwise_or,
                   "xor": lax.bitwise_xor}.items():
        @case(f"prim_{bn}_bool", "prim", bn)
        def _(rng, fn=fn):
            return fn, [bool_input(rng, (8,)), bool_input(rng, (8,))]

    # comparisons
    cmps = {"eq": lax.eq, "ne": lax.ne, "lt": lax.lt, "le": lax.le,
            "gt": lax.gt, "ge": lax.ge}
    for cn, fn in cmps.items():
        for dtn in ("f32", "f16", "bf16", "i32", "u32", "bool", "f64", "i64"):
            def b(rng, fn=fn, dtn=dtn):
                if dtn == "bool":
                    return fn, [bool_input(rng, (8,)), bool_input(rng, (8,))]
                if dtn[0] in "iu":
                    x = int_input(rng, dt(dtn), (16,), edges=True)
                    return fn, [x, np.roll(x, 1)]
                x = fl_input(rng, dt(dtn), (20,), -2, 2)
                y = np.roll(x, 1)
                y[0] = x[0]
                return fn, [x, y]
            case(f"{pname(dtn)}prim_{cn}_{dtn}", "prim", cn)(b)

    # selection
    for dtn in ("f32", "i32", "bf16", "bool"):
        def mk(rng, dtn, shape):
            if dtn == "bool":
                return bool_input(rng, shape)
            if dtn[0] == "i":
                return int_input(rng, dt(dtn), shape, -100, 100)
            return fl_input(rng, dt(dtn), shape, -5, 5)

        @case(f"prim_select_n2_{dtn}", "prim", "select_n")
        def _(rng, dtn=dtn, mk=mk):
            return lax.select_n, [bool_input(rng, (20,)), mk(rng, dtn, (20,)),
                                  mk(rng, dtn, (20,))]

        @case(f"prim_select_n3_{dtn}", "prim", "select_n")
        def _(rng, dtn=dtn, mk=mk):
            w = rng.integers(0, 3, size=(2, 5)).astype(np.int32)
            return lax.select_n, [w] + [mk(rng, dtn, (2, 5)) for _ in range(3)]

    @case("prim_select_n_scalar_pred", "prim", "select_n")
    def _(rng):
        return lax.select_n, [np.bool_(True), randn(rng, 4), randn(rng, 4)]

    for dtn in ("f32", "i32", "bf16", "f64"):
        @case(f"{pname(dtn)}prim_clamp_{dtn}", "prim", "clamp")
        def _(rng, dtn=dtn):
            if dtn == "i32":
                x = int_input(rng, np.int32, (16,))
                return (lambda x: lax.clamp(np.int32(-5), x, np.int32(100))), [x]
            x = fl_input(rng, dt(dtn), (20,), -3, 3)
            lo = np.full(x.shape, -1, dtype=dt(dtn))
            hi = np.full(x.shape, 1.5, dtype=dt(dtn))
            return lax.clamp, [lo, x, hi]

    # conversions
    conv = [("f32", "i32"), ("f32", "u8"), ("f32", "i8"), ("f32", "u32"),
            ("f32", "f16"), ("f32", "bf16"), ("f32", "bool"), ("i32", "f32"),
            ("i32", "u8"), ("i32", "i8"), ("u32", "i32"), ("bool", "f32"),
            ("bool", "i32"), ("f16", "f32"), ("bf16", "f32"), ("f16", "bf16"),
            ("bf16", "f16"), ("u8", "f32"), ("i8", "i32"), ("f32", "f64"),
            ("f64", "f32"), ("f64", "f16"), ("f64", "bf16"), ("i64", "f32"),
            ("f64", "i64"), ("f32", "i64"), ("i64", "i32"), ("u64", "f64"),
            ("f64", "u64"), ("i32", "i64")]
    for src, dst in conv:
        x64 = any(d in ("f64", "i64", "u64") for d in (src, dst))

        def b(rng, src=src, dst=dst):
            if src == "bool":
                x = bool_input(rng, (8,))
            elif src[0] in "iu":
                x = int_input(rng, dt(src), (16,))
            else:
                x = fl_input(rng, dt(src), (24,), -300, 300)
                if dst[0] in "iu":  # values around the integer range edges
                    ii = np.iinfo(dt(dst))
                    extra = np.asarray([ii.max, ii.min, ii.max + 1.0, ii.min - 1.0,
                                        2.5, -2.5, 0.999, -0.999], np.float64)
                    x = np.concatenate([x, extra.astype(dt(src))])
            return (lambda x: lax.convert_element_type(x, dt(dst))), [x]
        case(f"{'x64_' if x64 else ''}prim_convert_{src}_{dst}", "prim",
             "convert_element_type")(b)

    bitc = [("f32", "i32"), ("i32", "f32"), ("f32", "u8"), ("u8", "f32"),
            ("f16", "u16"), ("bf16", "i16"), ("f64", "i64"), ("f64", "u32")]
    for src, dst in bitc:
        x64 = any(d in ("f64", "i64", "u64") for d in (src, dst))

        def b(rng, src=src, dst=dst):
            if src[0] in "iu":
                shape = (4, 4) if (src, dst) == ("u8", "f32") else (16,)
                x = int_input(rng, dt(src), shape) if src != "u8" else \
                    rng.integers(0, 255, size=shape).astype(np.uint8)
            else:
                x = fl_input(rng, dt(src), (16,), -10, 10)
            target = {"u16": np.uint16, "i16": np.int16}.get(dst) or dt(dst)
            return (lambda x: lax.bitcast_convert_type(x, target)), [x]
        case(f"{'x64_' if x64 else ''}prim_bitcast_{src}_{dst}", "prim",
             "bitcast_convert_type")(b)

    # layout
    LDT = ("f32", "i32", "bool", "bf16")

    def arr(rng, dtn, shape):
        if dtn == "bool":
            return bool_input(rng, shape)
        if dtn[0] in "iu":
            return int_input(rng, dt(dtn), shape, -1000, 1000, edges=False)
        return fl_input(rng, dt(dtn), shape, -5, 5, edges=False)

    layout = {
        "broadcast_in_dim_a": ((3,), lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1,))),
        "broadcast_in_dim_s": ((), lambda x: lax.broadcast_in_dim(x, (2, 3), ())),
        "broadcast_in_dim_z": ((0, 2), lambda x: lax.broadcast_in_dim(x, (0, 3, 2), (0, 2))),
        "broadcast_in_dim_1": ((1, 3), lambda x: lax.broadcast_in_dim(x, (4, 3), (0, 1))),
        "reshape_a": ((2, 3, 4), lambda x: lax.reshape(x, (4, 6))),
        "reshape_s": ((), lambda x: lax.reshape(x, (1, 1))),
        "reshape_z": ((0, 3), lambda x: lax.reshape(x, (3, 0))),
        "reshape_dims": ((2, 3), lambda x: lax.reshape(x, (3, 2), dimensions=(1, 0))),
        "transpose_2d": ((3, 5), lambda x: lax.transpose(x, (1, 0))),
        "transpose_4d": ((2, 3, 1, 4), lambda x: lax.transpose(x, (3, 1, 0, 2))),
        "transpose_z": ((0, 4), lambda x: lax.transpose(x, (1, 0))),
        "squeeze_a": ((1, 4, 1), lambda x: lax.squeeze(x, (0, 2))),
        "squeeze_s": ((1,), lambda x: lax.squeeze(x, (0,))),
        "rev_a": ((3, 4), lambda x: lax.rev(x, (0, 1))),
        "rev_1": ((2, 3, 4), lambda x: lax.rev(x, (2,))),
        "rev_z": ((0,), lambda x: lax.rev(x, (0,))),
        "slice_a": ((5, 6), lambda x: lax.slice(x, (1, 0), (4, 6), (2, 3))),
        "slice_b": ((7,), lambda x: lax.slice(x, (2,), (7,))),
        "slice_z": ((5,), lambda x: lax.slice(x, (3,), (3,))),
        "concatenate_a": ((2, 3), lambda x: lax.concatenate([x, x[:1], x], 0)),
        "concatenate_b": ((2, 3), lambda x: lax.concatenate([x, x[:, :0], x[:, 1:]], 1)),
        "pad_a": ((3, 4), lambda x: lax.pad(x, lax.convert_element_type(0, x.dtype),
                                            ((1, 2, 1), (-1, 0, 0)))),
        "pad_b": ((4,), lambda x: lax.pad(x, x[0], ((0, 0, 2),))),
        "pad_z": ((0,), lambda x: lax.pad(x, lax.convert_element_type(1, x.dtype),
                                          ((2, 1, 3),))),
        "split_a": ((6, 2), lambda x: lax.split(x, (2, 3, 1), 0)),
        "split_b": ((2, 5), lambda x: lax.split(x, (0, 5), 1)),
        "dynamic_slice_a": ((5, 6), lambda x: lax.dynamic_slice(x, (1, 2), (3, 3))),
        "dynamic_slice_clamp": ((5, 6), lambda x: lax.dynamic_slice(x, (4, -3), (3, 2))),
        "dynamic_update_slice_a": ((5, 6), lambda x: lax.dynamic_update_slice(
            x, x[:2, :3], (1, 2))),
        "dynamic_update_slice_clamp": ((5, 6), lambda x: lax.dynamic_update_slice(
            x, x[:2, :3], (9, -1))),
    }
    for ln, (shape, fn) in layout.items():
        grp = ln.rsplit("_", 1)[0]
        for dtn in LDT:
            def b(rng, shape=shape, fn=fn, dtn=dtn):
                return fn, [arr(rng, dtn, shape)]
            case(f"prim_{ln}_{dtn}", "prim", grp)(b)

    for dtn in ("f32", "i32"):
        @case(f"prim_dynamic_slice_traced_idx_{dtn}", "prim", "dynamic_slice")
        def _(rng, dtn=dtn):
            return (lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 3))), \
                [arr(rng, dtn, (4, 5)), np.int32(3), np.int32(-1)]

        @case(f"prim_dynamic_update_slice_traced_idx_{dtn}", "prim",
              "dynamic_update_slice")
        def _(rng, dtn=dtn):
            return (lambda x, u, i: lax.dynamic_update_slice(x, u, (i, np.int32(1)))), \
                [arr(rng, dtn, (4, 5)), arr(rng, dtn, (2, 2)), np.int32(3)]

    # iota
    for dtn in ("i32", "f32", "u8", "bf16", "i64", "f64"):
        for k, (shape, dim) in enumerate([((6,), 0), ((2, 3), 1), ((3, 2, 2), 0), ((0,), 0)]):
            def b(rng, dtn=dtn, shape=shape, dim=dim):
                return (lambda: lax.iota(dt(dtn), shape[0]) if len(shape) == 1 else
                        lax.broadcasted_iota(dt(dtn), shape, dim)), []
            case(f"{pname(dtn)}prim_iota_{dtn}_{k}", "prim", "iota")(b)

    # reductions
    red = {"reduce_sum": lax.reduce_sum_p, "reduce_max": lax.reduce_max_p,
           "reduce_min": lax.reduce_min_p, "reduce_prod": lax.reduce_prod_p}
    rshapes = [((20,), (0,)), ((3, 5), (1,)), ((3, 5), (0,)), ((2, 3, 4), (0, 2)),
               ((0, 3), (0,)), ((3, 0), (1,)), ((), ()), ((4, 6), (0, 1)),
               ((300,), (0,))]
    for rn, p in red.items():
        for dtn in ("f32", "i32", "f16", "bf16", "u8", "f64", "i64"):
            for k, (shape, axes) in enumerate(rshapes):
                if dtn not in ("f32", "i32") and k not in (1, 4, 8):
                    continue
                if k == 8 and rn == "reduce_prod" and dtn[0] == "f":
                    continue  # overflow-dominated; 2 and 4 cover prod order

                def b(rng, p=p, dtn=dtn, shape=shape, axes=axes, rn=rn):
                    if dtn[0] in "iu":
                        x = int_input(rng, dt(dtn), shape, -3 if dtn[0] == "i" else 0, 3,
                                      edges=False)
                    elif rn == "reduce_prod":
                        x = fl_input(rng, dt(dtn), shape, 0.5, 1.5, edges=False)
                    else:
                        x = fl_input(rng, dt(dtn), shape, -5, 5, edges=(k == 0))
                    return (lambda x: p.bind(x, axes=axes, **(
                        {"out_sharding": None} if rn == "reduce_sum" else {}))), [x]
                case(f"{pname(dtn)}prim_{rn}_{dtn}_{k}", "prim", rn)(b)
    for rn, fn in {"reduce_and": lambda x, a: jnp.all(x, axis=a),
                   "reduce_or": lambda x, a: jnp.any(x, axis=a)}.items():
        for k, (shape, axes) in enumerate([((8,), 0), ((3, 4), 1), ((0, 2), 0), ((2, 3), None)]):
            @case(f"prim_{rn}_{k}", "prim", rn)
            def _(rng, fn=fn, shape=shape, axes=axes):
                return (lambda x: fn(x, axes)), [bool_input(rng, shape)]
    for an, fn in {"argmax": lax.argmax, "argmin": lax.argmin}.items():
        for dtn in ("f32", "i32", "bf16", "f64"):
            for k, (shape, axis) in enumerate([((20,), 0), ((3, 5), 1), ((3, 5), 0)]):
                def b(rng, fn=fn, dtn=dtn, shape=shape, axis=axis, k=k):
                    if dtn == "i32":
                        x = int_input(rng, np.int32, shape, -3, 3, edges=False)
                    else:
                        x = fl_input(rng, dt(dtn), shape, -3, 3, edges=False)
                        if k == 0:
                            x[[2, 7]] = [NAN, -0.0]
                            x[9] = x.max() if not np.isnan(x.max()) else 3
                    return (lambda x: fn(x, axis, np.int32)), [x]
                case(f"{pname(dtn)}prim_{an}_{dtn}_{k}", "prim", an)(b)

    # cumulative
    cums = {"cumsum": lax.cumsum, "cumprod": lax.cumprod, "cummax": lax.cummax,
            "cummin": lax.cummin, "cumlogsumexp": lax.cumlogsumexp}
    for cn, fn in cums.items():
        for dtn in ("f32", "i32", "bf16", "f64"):
            if cn == "cumlogsumexp" and dtn == "i32":
                continue
            for k, (shape, axis, rev) in enumerate([((12,), 0, False), ((3, 5), 1, True),
                                                    ((4, 3), 0, False), ((0,), 0, False)]):
                def b(rng, fn=fn, dtn=dtn, shape=shape, axis=axis, rev=rev, cn=cn):
                    if dtn == "i32":
                        x = int_input(rng, np.int32, shape, -4, 4, edges=False)
                    else:
                        lo, hi = (0.5, 1.5) if cn == "cumprod" else (-4, 4)
                        x = fl_input(rng, dt(dtn), shape, lo, hi, edges=False)
                    return (lambda x: fn(x, axis=axis, reverse=rev)), [x]
                case(f"{pname(dtn)}prim_{cn}_{dtn}_{k}", "prim", cn)(b)

    # dot_general
    dots = [
        ("vv", (7,), (7,), ((0,), (0,)), ((), ())),
        ("mv", (4, 6), (6,), ((1,), (0,)), ((), ())),
        ("mm", (3, 5), (5, 4), ((1,), (0,)), ((), ())),
        ("mmT", (5, 3), (4, 5), ((0,), (1,)), ((), ())),
        ("bmm", (2, 3, 4), (2, 4, 5), ((2,), (1,)), ((0,), (0,))),
        ("k0", (3, 0), (0, 2), ((1,), (0,)), ((), ())),
        ("outer", (3,), (4,), ((), ()), ((), ())),
        ("k64", (2, 64), (64, 3), ((1,), (0,)), ((), ())),
        ("batch_only", (3, 4), (3, 4), ((), ()), ((0,), (0,))),
    ]
    for dn, sa, sb, contract, batch in dots:
        for dtn in ("f32", "i32", "f16", "bf16", "f64"):
            if dtn not in ("f32", "f64") and dn not in ("mm", "k64", "bmm"):
                continue

            def b(rng, sa=sa, sb=sb, contract=contract, batch=batch, dtn=dtn):
                if dtn == "i32":
                    x = int_input(rng, np.int32, sa, -9, 9, edges=False)
                    y = int_input(rng, np.int32, sb, -9, 9, edges=False)
                else:
                    x = fl_input(rng, dt(dtn), sa, -2, 2, edges=False)
                    y = fl_input(rng, dt(dtn), sb, -2, 2, edges=False)
                return (lambda x, y: lax.dot_general(x, y, (contract, batch))), [x, y]
            case(f"{pname(dtn)}prim_dot_general_{dn}_{dtn}", "prim", "dot_general")(b)

    @case("prim_dot_general_preferred_i8_i32", "prim", "dot_general")
    def _(rng):
        x = int_input(rng, np.int8, (3, 4), -100, 100, edges=False)
        y = int_input(rng, np.int8, (4, 2), -100, 100, edges=False)
        return (lambda x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ())),
                                             preferred_element_type=np.int32)), [x, y]

    @case("prim_dot_general_preferred_bf16_f32", "prim", "dot_general")
    def _(rng):
        x = fl_input(rng, jnp.bfloat16, (3, 8), -2, 2, edges=False)
        y = fl_input(rng, jnp.bfloat16, (8, 2), -2, 2, edges=False)
        return (lambda x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ())),
                                             preferred_element_type=np.float32)), [x, y]

    # sort / top_k
    for dtn in ("f32", "i32", "bf16", "f64"):
        for k, (shape, dim) in enumerate([((20,), 0), ((3, 6), 1), ((4, 3), 0), ((0,), 0)]):
            def b(rng, dtn=dtn, shape=shape, dim=dim):
                if dtn == "i32":
                    x = int_input(rng, np.int32, shape, -5, 5, edges=False)
                else:
                    x = fl_input(rng, dt(dtn), shape, -3, 3, edges=True)
                return (lambda x: lax.sort(x, dimension=dim)), [x]
            case(f"{pname(dtn)}prim_sort_{dtn}_{k}", "prim", "sort")(b)

    @case("prim_sort_two_operands", "prim", "sort")
    def _(rng):
        k = int_input(rng, np.int32, (12,), 0, 3, edges=False)
        return (lambda k, v: lax.sort((k, v), num_keys=1)), [k, randn(rng, 12)]

    @case("prim_sort_two_keys", "prim", "sort")
    def _(rng):
        a = int_input(rng, np.int32, (12,), 0, 2, edges=False)
        b = fl_input(rng, np.float32, (12,), -1, 1, edges=False)
        return (lambda a, b: lax.sort((a, b), num_keys=2)), [a, b]

    @case("prim_sort_signed_zeros_f32", "prim", "sort")
    def _(rng):  # -0.0 and +0.0 (no subnormals: XLA compares those as zero)
        return (lambda x: lax.sort(x)), [np.asarray([0.0, -0.0, 1.0, -0.0, 0.0, -1.0], np.float32)]

    @case("prim_sort_unstable", "prim", "sort")
    def _(rng):
        return (lambda x: lax.sort(x, is_stable=False)), [randn(rng, 10)]

    for dtn in ("f32", "i32", "bf16"):
        for k, (shape, kk) in enumerate([((10,), 3), ((3, 6), 2), ((5,), 5)]):
            def b(rng, dtn=dtn, shape=shape, kk=kk):
                x = (int_input(rng, np.int32, shape, -50, 50, edges=False) if dtn == "i32"
                     else fl_input(rng, dt(dtn), shape, -3, 3, edges=False))
                return (lambda x: lax.top_k(x, kk)), [x]
            case(f"prim_top_k_{dtn}_{k}", "prim", "top_k")(b)

    # gather / scatter
    for dtn in ("f32", "i32"):
        @case(f"prim_gather_take_{dtn}", "prim", "gather")
        def _(rng, dtn=dtn):
            idx = np.asarray([0, 4, 2, 2, -1, 7], np.int32)
            return (lambda x, i: x[i]), [arr(rng, dtn, (5,)), idx]

        @case(f"prim_gather_rows_{dtn}", "prim", "gather")
        def _(rng, dtn=dtn):
            idx = np.asarray([2, 0, 3], np.int32)
            return (lambda x, i: jnp.take(x, i, axis=0, mode="clip")), [arr(rng, dtn, (4, 3)), idx]

        @case(f"prim_gather_fill_{dtn}", "prim", "gather")
        def _(rng, dtn=dtn):
            idx = np.asarray([1, 9, -7, 3], np.int32)
            return (lambda x, i: jnp.take(x, i, mode="fill", fill_value=-1)), \
                [arr(rng, dtn, (5,)), idx]

        @case(f"prim_gather_2d_{dtn}", "prim", "gather")
        def _(rng, dtn=dtn):
            i = np.asarray([0, 2, 1], np.int32)
            j = np.asarray([3, 0, 1], np.int32)
            return (lambda x, i, j: x[i, j]), [arr(rng, dtn, (3, 4)), i, j]

        for sn in ("set", "add", "mul", "min", "max"):
            @case(f"prim_scatter_{sn}_{dtn}", "prim",
                  "scatter" if sn == "set" else f"scatter-{sn}")
            def _(rng, dtn=dtn, sn=sn):
                idx = np.asarray([1, 3, 1, 9, 0], np.int32)
                upd = arr(rng, dtn, (5,))
                return (lambda x, i, u: getattr(x.at[i], sn)(u)), [arr(rng, dtn, (6,)), idx, upd]

        @case(f"prim_scatter_add_rows_{dtn}", "prim", "scatter-add")
        def _(rng, dtn=dtn):
            idx = np.asarray([2, 0, 2], np.int32)
            return (lambda x, i, u: x.at[i].add(u)), [arr(rng, dtn, (4, 3)), idx,
                                                      arr(rng, dtn, (3, 3))]

    # reduce_window, conv
    for dtn in ("f32", "i32"):
        for wn, init, op in (("sum", 0, lax.add), ("max", -INF, lax.max), ("min", INF, lax.min)):
            for k, (shape, win, strides, pad) in enumerate([
                    ((6,), (3,), (1,), "VALID"), ((5, 6), (2, 2), (2, 2), "VALID"),
                    ((4, 5), (3, 3), (1, 1), "SAME"), ((1, 4, 4, 1), (1, 2, 2, 1), (1, 1, 2, 1),
                                                       ((0, 0), (1, 0), (0, 1), (0, 0)))]):
                def b(rng, dtn=dtn, init=init, op=op, shape=shape, win=win, strides=strides,
                      pad=pad):
                    x = arr(rng, dtn, shape)
                    iv = np.asarray(init, np.float64)
                    if dtn == "i32":
                        iv = {0: 0, -INF: np.iinfo(np.int32).min, INF: np.iinfo(np.int32).max}[init]
                    return (lambda x: lax.reduce_window(x, np.asarray(iv, dt(dtn)), op, win,
                                                        strides, pad)), [x]
                case(f"prim_reduce_window_{wn}_{dtn}_{k}", "prim", f"reduce_window_{wn}")(b)

    convs = [
        ("1d", (1, 2, 9), (3, 2, 3), (1,), "VALID", (1,), (1,), 1),
        ("2d", (2, 3, 6, 6), (4, 3, 3, 3), (1, 1), "SAME", (1, 1), (1, 1), 1),
        ("2d_stride", (1, 2, 7, 7), (2, 2, 3, 3), (2, 2), ((1, 1), (0, 2)), (1, 1), (1, 1), 1),
        ("2d_dil", (1, 1, 8, 8), (2, 1, 3, 3), (1, 1), "VALID", (1, 1), (2, 2), 1),
        ("2d_lhsdil", (1, 1, 4, 4), (1, 1, 2, 2), (1, 1), ((0, 0), (1, 0)), (2, 2), (1, 1), 1),
        ("groups", (1, 4, 5, 5), (4, 2, 3, 3), (1, 1), "VALID", (1, 1), (1, 1), 2),
    ]
    for cn, sl, sr, strides, pad, ld, rd, fg in convs:
        for dtn in ("f32", "f64"):
            def b(rng, sl=sl, sr=sr, strides=strides, pad=pad, ld=ld, rd=rd, fg=fg, dtn=dtn):
                x = fl_input(rng, dt(dtn), sl, -1, 1, edges=False)
                w = fl_input(rng, dt(dtn), sr, -1, 1, edges=False)
                return (lambda x, w: lax.conv_general_dilated(
                    x, w, strides, pad, lhs_dilation=ld, rhs_dilation=rd,
                    feature_group_count=fg)), [x, w]
            case(f"{pname(dtn)}prim_conv_{cn}_{dtn}", "prim", "conv_general_dilated")(b)

    # fft
    for k, (fname, shape) in enumerate([("fft", (8,)), ("ifft", (8,)), ("rfft", (8,)),
                                        ("irfft", (5,)), ("fft2", (4, 4)), ("rfft", (3, 6)),
                                        ("fft", (7,))]):
        for dtn in ("f32", "f64"):
            def b(rng, fname=fname, shape=shape, dtn=dtn):
                x = fl_input(rng, dt(dtn), shape, -1, 1, edges=False)
                if fname in ("fft", "ifft", "fft2", "irfft"):
                    ct = np.complex64 if dtn == "f32" else np.complex128
                    x = (x + 1j * fl_input(rng, dt(dtn), shape, -1, 1, edges=False)).astype(ct)
                return getattr(jnp.fft, fname), [x]
            case(f"{pname(dtn)}prim_fft_{fname}_{dtn}_{k}", "prim", "fft")(b)


# --------------------------------------------------------------------------
# Transforms, control flow, programs
# --------------------------------------------------------------------------

ALL_T = TRANSFORMS
SCALAR_T = ALL_T                           # f: R -> R: everything
VEC_T = ("grad", "jvp", "vjp", "vmap", "vmap_grad", "jit_vmap_grad",
         "jacfwd", "jacrev", "hessian")    # f: R^n -> R
VECOUT_T = ("jvp", "vjp", "vmap", "jacfwd", "jacrev")  # f: R^n -> R^m


def register_transforms():
    import jax
    import jax.numpy as jnp
    from jax import lax

    scal = {
        "sin_x": lambda x: jnp.sin(x) * x,
        "gauss": lambda x: jnp.exp(-x * x),
        "tanh_poly": lambda x: jnp.tanh(x) * x ** 3 + 2.0 * x,
        "log1p_sq": lambda x: jnp.log1p(x * x),
        "rational": lambda x: x ** 3 / (1.0 + x * x),
        "softplus": lambda x: jax.nn.softplus(x),
        "sigmoid": lambda x: jax.nn.sigmoid(3.0 * x),
        "cos_exp": lambda x: jnp.cos(jnp.exp(0.3 * x)),
        "sqrt_1p": lambda x: jnp.sqrt(1.0 + x * x),
        "atan_mix": lambda x: jnp.arctan(x) * jnp.cosh(0.5 * x),
        "pow_abs": lambda x: jnp.abs(x) ** 1.5 + x,
        "where_relu": lambda x: jnp.where(x > 0, x * x, 0.1 * x),
        "erf_x": lambda x: lax.erf(x) * x,
        "max_min": lambda x: jnp.maximum(x, 0.2) * jnp.minimum(x, 1.0),
        "logistic_log": lambda x: jnp.log(jax.nn.sigmoid(x) + 0.5),
    }
    for fn_name, fn in scal.items():
        for dtn in ("f32", "f64"):
            @case(f"{pname(dtn)}tf_scalar_{fn_name}_{dtn}", "transform", fn_name, SCALAR_T)
            def _(rng, fn=fn, dtn=dtn):
                return fn, [np.asarray(rng.uniform(0.2, 1.5), dt(dtn))]

    vec = {
        "sum_sin": lambda x: jnp.sum(jnp.sin(x) * x),
        "logsumexp": lambda x: jax.nn.logsumexp(x),
        "norm": lambda x: jnp.sqrt(jnp.sum(x * x)),
        "quad": lambda x: x @ (jnp.arange(x.shape[0], dtype=x.dtype) + 1.0) * jnp.sum(x ** 2),
        "prod": lambda x: jnp.prod(x),
        "mean_tanh": lambda x: jnp.mean(jnp.tanh(x) ** 2),
        "max_soft": lambda x: jnp.max(x) + jnp.sum(jax.nn.softmax(x) * x),
        "cumsum_sq": lambda x: jnp.sum(jnp.cumsum(x) ** 2),
        "sort_w": lambda x: jnp.sum(jnp.sort(x) * jnp.arange(1.0, x.shape[0] + 1, dtype=x.dtype)),
        "outer_sum": lambda x: jnp.sum(jnp.outer(x, jnp.cos(x))),
        "rosenbrock": lambda x: jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
        "concat_pad": lambda x: jnp.sum(jnp.concatenate([x, jnp.pad(x, 1) * 0.5]) ** 2),
    }
    for fn_name, fn in vec.items():
        for dtn in ("f32", "f64"):
            @case(f"{pname(dtn)}tf_vec_{fn_name}_{dtn}", "transform", fn_name, VEC_T)
            def _(rng, fn=fn, dtn=dtn):
                return fn, [rng.uniform(0.1, 1.2, size=5).astype(dt(dtn))]

    vecout = {
        "tanh_affine": lambda x: jnp.tanh(jnp.arange(12.0, dtype=x.dtype).reshape(3, 4) @ x * 0.1),
        "softmax": lambda x: jax.nn.softmax(x),
        "cumprod": lambda x: jnp.cumprod(x),
        "reverse_mix": lambda x: x[::-1] * jnp.exp(x),
        "broadcast_outer": lambda x: jnp.sin(x[:, None] * x[None, :]),
        "normalize": lambda x: x / jnp.linalg.norm(x),
    }
    for fn_name, fn in vecout.items():
        for dtn in ("f32", "f64"):
            @case(f"{pname(dtn)}tf_vecout_{fn_name}_{dtn}", "transform", fn_name, VECOUT_T)
            def _(rng, fn=fn, dtn=dtn):
                return fn, [rng.uniform(0.1, 1.2, size=4).astype(dt(dtn))]

    two = {
        "dot_tanh": (lambda x, y: jnp.tanh(jnp.dot(x, y)), VEC_T),
        "weighted": (lambda x, y: jnp.sum(jnp.exp(x) * y), VEC_T),
        "mat_quad": (lambda x, y: jnp.sum((y @ x) ** 2), VEC_T),
    }
    for fn_name, (fn, ts) in two.items():
        @case(f"tf_two_{fn_name}_f32", "transform", fn_name, ts)
        def _(rng, fn=fn, fn_name=fn_name):
            if fn_name == "mat_quad":
                return fn, [randn(rng, 4), randn(rng, 3, 4)]
            return fn, [randn(rng, 4), randn(rng, 4)]


def register_control():
    import jax
    import jax.numpy as jnp
    from jax import lax

    def cond_fn(x):
        return lax.cond(jnp.sum(x) > 0, lambda v: jnp.sin(v) * 2.0, lambda v: v * v, x).sum()

    def switch_fn(x):
        i = jnp.clip(jnp.floor(jnp.sum(x)).astype(jnp.int32), 0, 2)
        return lax.switch(i, [lambda v: v.sum(), lambda v: jnp.sum(jnp.exp(v)),
                              lambda v: jnp.sum(v ** 3)], x)

    def while_fn(x):
        def body(c):
            i, v = c
            return i + 1, v * 0.9 + jnp.sin(v)
        return jnp.sum(lax.while_loop(lambda c: c[0] < 5, body, (0, x))[1])

    def fori_fn(x):
        return jnp.sum(lax.fori_loop(0, 4, lambda i, v: v * jnp.cos(v) + 0.1 * i, x))

    def fori_dyn_fn(x, n):
        return jnp.sum(lax.fori_loop(0, n, lambda i, v: v * 0.5 + jnp.tanh(v), x))

    def scan_fn(x):
        def step(c, xi):
            c = jnp.tanh(c * 0.7 + xi)
            return c, c * c
        c, ys = lax.scan(step, 0.0 * x[0], x)
        return c + jnp.sum(ys)

    def scan_rev_fn(x):
        c, ys = lax.scan(lambda c, xi: (c + jnp.exp(-xi), c * xi), 1.0 + 0.0 * x[0], x,
                         reverse=True, unroll=2)
        return c * jnp.sum(ys)

    def nested_jit_fn(x):
        @jax.jit
        def inner(v):
            return jnp.exp(-v) * v
        @jax.jit
        def outer(v):
            return jnp.sum(inner(v) * inner(v + 1.0))
        return outer(x)

    @jax.custom_jvp
    def my_softplus(x):
        return jnp.log1p(jnp.exp(x))

    @my_softplus.defjvp
    def _sp_jvp(p, t):
        (x,), (tx,) = p, t
        return my_softplus(x), jax.nn.sigmoid(x) * tx

    @jax.custom_vjp
    def clip_grad(x):
        return jnp.sin(x)

    def cg_fwd(x):
        return jnp.sin(x), jnp.cos(x)

    def cg_bwd(r, g):
        return (jnp.clip(r * g, -0.5, 0.5),)
    clip_grad.defvjp(cg_fwd, cg_bwd)

    ctl = {
        "cond": (cond_fn, VEC_T),
        "switch": (switch_fn, VEC_T),
        "while": (while_fn, ("jvp", "vmap", "jacfwd")),
        "fori_loop": (fori_fn, VEC_T),
        "scan": (scan_fn, VEC_T),
        "scan_reverse_unroll": (scan_rev_fn, VEC_T),
        "nested_jit": (nested_jit_fn, VEC_T),
        "custom_jvp": (lambda x: jnp.sum(my_softplus(x) * x), VEC_T),
        "custom_vjp": (lambda x: jnp.sum(clip_grad(x) * 3.0),
                       ("grad", "vjp", "vmap", "vmap_grad", "jit_vmap_grad", "jacrev")),
    }
    for cn, (fn, ts) in ctl.items():
        for variant, lo, hi in (("pos", 0.1, 1.0), ("neg", -1.0, -0.1)):
            @case(f"ctl_{cn}_{variant}", "control", cn, ts)
            def _(rng, fn=fn, lo=lo, hi=hi):
                return fn, [rng.uniform(lo, hi, size=4).astype(np.float32)]

    @case("ctl_fori_loop_dynamic", "control", "fori_loop", ("jvp", "vmap"))
    def _(rng):
        return fori_dyn_fn, [randn(rng, 4), np.int32(3)]

    @case("ctl_while_newton_sqrt", "control", "while", ("vmap",))
    def _(rng):
        def f(a):
            def body(c):
                x, i = c
                return 0.5 * (x + a / x), i + 1
            return lax.while_loop(lambda c: (c[1] < 30) & (jnp.max(jnp.abs(c[0] * c[0] - a)) > 1e-6),
                                  body, (a, 0))[0]
        return f, [rng.uniform(0.5, 4.0, size=4).astype(np.float32)]

    @case("ctl_cond_int_operand", "control", "cond", ())
    def _(rng):
        return (lambda p, x, n: lax.cond(p, lambda: x * n, lambda: x - n)), \
            [np.bool_(False), np.arange(4, dtype=np.int32), np.int32(3)]

    @case("ctl_scan_multi_carry", "control", "scan", ("vmap", "jvp"))
    def _(rng):
        def f(xs, h):
            def step(c, x):
                a, b = c
                return (a + x, b * 0.5 + a), a * b
            return lax.scan(step, (h, h * 2), xs)
        return f, [randn(rng, 5, 3), randn(rng, 3)]

    @case("ctl_scan_no_xs", "control", "scan", ("grad", "vmap"))
    def _(rng):
        def f(x):
            c, ys = lax.scan(lambda c, _: (c * 0.9 + 1.0, jnp.sin(c)), x, None, length=6)
            return jnp.sum(c) + jnp.sum(ys)
        return f, [randn(rng, 3)]


def register_special():
    """Special functions (lgamma, digamma, polygamma, zeta), pow with an
    integer exponent, complex transcendentals and the jvp of complex abs
    (issue 17 section 1)."""
    import jax.numpy as jnp
    from jax import lax

    for un, fn in {"lgamma": lax.lgamma, "digamma": lax.digamma}.items():
        for dtn in FLOATS + FLOATS64:
            for sk in ("sv" if dtn == "f32" else "v"):
                def b(rng, fn=fn, dtn=dtn, sk=sk):
                    return fn, [fl_input(rng, dt(dtn), SHAPES[sk], -10, 20)]
                case(f"{pname(dtn)}prim_{un}_{dtn}_{sk}", "prim", un)(b)

    # polygamma(m, x), m integer-valued (and a few that are not: NaN);
    # zeta(x, q). q/x above -2: XLA sums only nine terms before its
    # Euler-Maclaurin tail, which is wrong far below 0 (docs/math.md).
    for dtn in ("f32", "f64", "f16"):
        def b(rng, dtn=dtn):
            x = fl_input(rng, dt(dtn), (24,), -2, 20)
            m = np.asarray([0, 1, 2, 3, 4, 1, 1, 2] * 3, np.float64)
            m[5], m[13] = -1.0, 0.5
            return lax.polygamma, [m.astype(dt(dtn)), x]
        case(f"{pname(dtn)}prim_polygamma_{dtn}", "prim", "polygamma")(b)

        def b(rng, dtn=dtn):
            q = fl_input(rng, dt(dtn), (24,), -2, 20)
            x = np.round(rng.uniform(1, 12, size=24), 1)
            x[:4] = [1.0, 0.5, 2.0, 3.0]
            return lax.zeta, [x.astype(dt(dtn)), q]
        case(f"{pname(dtn)}prim_zeta_{dtn}", "prim", "zeta")(b)

    # pow(float x, integer y)
    for dtn, itn in (("f32", "i32"), ("f16", "i32"), ("bf16", "i32"), ("f64", "i64"),
                     ("f64", "i32"), ("f32", "u32")):
        def b(rng, dtn=dtn, itn=itn):
            x = fl_input(rng, dt(dtn), (24,), -3, 3)
            y = np.asarray(rng.integers(-6, 7, size=24), np.int64)
            y[:5] = [0, -1, 1, 40, -40] if not itn.startswith("u") else [0, 1, 2, 40, 100]
            y = np.roll(y, 7)
            if itn.startswith("u"):
                y = np.abs(y)
            return lax.pow, [x, y.astype(dt(itn))]
        case(f"{pname(dtn)}prim_pow_int_{dtn}_{itn}", "prim", "pow")(b)

    scal = {
        "lgamma_x": lambda x: lax.lgamma(x) * x,
        "digamma_x": lambda x: lax.digamma(x) + x * x,
        "polygamma1": lambda x: lax.polygamma(jnp.ones_like(x), x) * x,
        "pow_int3": lambda x: lax.pow(x, np.int32(3)) + x,
        "pow_intm2": lambda x: lax.pow(x + 1.0, np.int32(-2)),
    }
    for fn_name, fn in scal.items():
        for dtn in ("f32", "f64"):
            @case(f"{pname(dtn)}tf_scalar_{fn_name}_{dtn}", "transform", fn_name, SCALAR_T)
            def _(rng, fn=fn, dtn=dtn):
                return fn, [np.asarray(rng.uniform(0.6, 3.0), dt(dtn))]


def register_programs():
    import jax
    import jax.numpy as jnp
    from jax import lax

    def mlp_params(rng, dtype=np.float32):
        return [(0.5 * randn(rng, 4, 8)).astype(dtype), np.zeros(8, dtype),
                (0.5 * randn(rng, 8, 3)).astype(dtype), np.zeros(3, dtype) + 0.1]

    def mlp_loss(w1, b1, w2, b2, x, y):
        h = jnp.tanh(x @ w1 + b1)
        out = h @ w2 + b2
        return jnp.mean((out - y) ** 2)

    def xent(logits, labels):
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.sum(labels * logp, axis=-1))

    def layer_norm(x, g, b):
        m = jnp.mean(x, axis=-1, keepdims=True)
        v = jnp.mean((x - m) ** 2, axis=-1, keepdims=True)
        return (x - m) * lax.rsqrt(v + 1e-5) * g + b

    def attention(q, k, v):
        s = q @ k.T / jnp.sqrt(jnp.float32(q.shape[-1]))
        return jax.nn.softmax(s, axis=-1) @ v

    def rnn(wx, wh, xs):
        def step(h, x):
            h = jnp.tanh(x @ wx + h @ wh)
            return h, h
        h, hs = lax.scan(step, jnp.zeros(wh.shape[0], xs.dtype), xs)
        return jnp.sum(hs ** 2) + jnp.sum(h)

    def integrator(x0, v0):
        def step(i, s):
            x, v = s
            a = -x - 0.1 * v * jnp.abs(v)
            v = v + 0.05 * a
            return x + 0.05 * v, v
        x, v = lax.fori_loop(0, 20, step, (x0, v0))
        return jnp.sum(x * x + v * v)

    def logreg(w, x, y):
        p = jax.nn.sigmoid(x @ w)
        return -jnp.mean(y * jnp.log(p + 1e-7) + (1 - y) * jnp.log(1 - p + 1e-7))

    def polyfit(c, x, y):
        pred = jnp.polyval(c, x)
        return jnp.mean((pred - y) ** 2)

    def newton_cbrt(a):
        def body(s):
            x, i = s
            return x - (x * x * x - a) / (3 * x * x), i + 1
        return lax.while_loop(lambda s: s[1] < 12, body, (a * 0.5 + 1.0, 0))[0]

    P = {}
    P["mlp_loss"] = (lambda r: (mlp_loss, [*mlp_params(r), randn(r, 5, 4), randn(r, 5, 3)]),
                     ("grad", "jvp", "vjp", "jacrev"))
    P["mlp_train_step"] = (lambda r: ((lambda w1, b1, w2, b2, x, y: [
        p - 0.1 * g for p, g in zip((w1, b1, w2, b2), jax.grad(mlp_loss, argnums=(0, 1, 2, 3))(
            w1, b1, w2, b2, x, y))]), [*mlp_params(r), randn(r, 5, 4), randn(r, 5, 3)]),
        ("jvp", "vjp"))
    P["softmax_xent"] = (lambda r: (xent, [randn(r, 4, 5),
                                           jax.nn.one_hot(r.integers(0, 5, 4), 5).astype(np.float32).__array__()]),
                         ("grad", "jvp", "vjp", "jacfwd", "jacrev", "hessian"))
    P["layer_norm"] = (lambda r: ((lambda x, g, b: jnp.sum(layer_norm(x, g, b) ** 3)),
                                  [randn(r, 3, 6), 1.0 + 0.1 * randn(r, 6), 0.1 * randn(r, 6)]),
                       ("grad", "jvp", "vjp", "vmap", "vmap_grad", "jacrev"))
    P["attention"] = (lambda r: ((lambda q, k, v: jnp.sum(attention(q, k, v) ** 2)),
                                 [randn(r, 4, 8), randn(r, 6, 8), randn(r, 6, 8)]),
                      ("grad", "jvp", "vjp", "vmap", "jacrev"))
    P["rnn_scan"] = (lambda r: (rnn, [0.4 * randn(r, 3, 5), 0.4 * randn(r, 5, 5), randn(r, 6, 3)]),
                     ("grad", "jvp", "vjp", "vmap", "jacfwd"))
    P["physics_fori"] = (lambda r: (integrator, [randn(r, 3), randn(r, 3)]),
                         ("grad", "jvp", "vjp", "vmap", "vmap_grad", "jacfwd", "jacrev", "hessian"))
    P["logreg"] = (lambda r: (logreg, [0.3 * randn(r, 4), randn(r, 10, 4),
                                       (r.uniform(size=10) > 0.5).astype(np.float32)]),
                   ("grad", "jvp", "vjp", "vmap_grad", "jit_vmap_grad", "jacfwd", "jacrev", "hessian"))
    P["polyfit"] = (lambda r: (polyfit, [randn(r, 4), np.linspace(-1, 1, 9).astype(np.float32),
                                         randn(r, 9)]),
                    ("grad", "jvp", "vjp", "jacfwd", "jacrev", "hessian"))
    P["newton_while"] = (lambda r: (newton_cbrt, [r.uniform(0.5, 8, size=5).astype(np.float32)]),
                         ("jvp", "vmap", "jacfwd"))
    for pn, (bld, ts) in P.items():
        for dtn in ("f32", "f64"):
            def b(rng, bld=bld, dtn=dtn):
                f, args = bld(rng)
                return f, [np.asarray(a).astype(dt(dtn)) if np.asarray(a).dtype.kind == "f"
                           else a for a in args]
            case(f"{pname(dtn)}prog_{pn}_{dtn}", "program", pn, ts)(b)


# --------------------------------------------------------------------------
# Transforms as JAX computes them
# --------------------------------------------------------------------------

def is_float_aval(a):
    return np.issubdtype(np.dtype(a.dtype), np.inexact)


def make_transform(t, f, args, rng):
    """Returns (g, g_args, params) for transform t of f at args, matching
    the FrankenTrace API that the harness calls (tests/conformance)."""
    import jax
    n = len(args)
    fl = [k for k, a in enumerate(args) if np.issubdtype(np.asarray(a).dtype, np.inexact)]
    sample = lambda a: (rng.standard_normal(np.shape(a)) * 0.5).astype(np.asarray(a).dtype)

    def batched(a):
        a = np.asarray(a)
        return np.stack([a] + [a + sample(a) if a.dtype.kind == "f" else a
                               for _ in range(VMAP_B - 1)])
    if t == "grad":
        return jax.grad(f), list(args), {"argnums": [0]}
    if t == "grad_grad":
        return jax.grad(jax.grad(f)), list(args), {"argnums": [0]}
    if t == "jvp":
        tans = [sample(args[k]) for k in fl]

        def g(*a):
            xs, ts = a[:n], list(a[n:])
            full = [ts.pop(0) if k in fl else np.zeros(np.shape(xs[k]), jax.dtypes.float0)
                    for k in range(n)]
            return jax.jvp(f, xs, tuple(full))
        return g, list(args) + tans, {}
    if t == "vjp":
        outs = jax.eval_shape(f, *args)
        leaves = jax.tree_util.tree_leaves(outs)
        cts = [sample(np.zeros(o.shape, o.dtype)) + 0.7 for o in leaves if is_float_aval(o)]
        treedef = jax.tree_util.tree_structure(outs)

        def g(*a):
            xs, cs = a[:n], list(a[n:])
            y, pull = jax.vjp(f, *xs)
            full = [cs.pop(0) if is_float_aval(o) else np.zeros(o.shape, jax.dtypes.float0)
                    for o in leaves]
            grads = pull(jax.tree_util.tree_unflatten(treedef, full))
            return y, [gr for k, gr in enumerate(grads) if k in fl]
        return g, list(args) + cts, {}
    if t == "vmap":
        return jax.vmap(f), [batched(a) for a in args], {"axis_size": VMAP_B}
    if t == "vmap_grad":
        return jax.vmap(jax.grad(f)), [batched(a) for a in args], {"axis_size": VMAP_B}
    if t == "jit_vmap_grad":
        return jax.jit(jax.vmap(jax.grad(f))), [batched(a) for a in args], {"axis_size": VMAP_B}
    if t == "jacfwd":
        return jax.jacfwd(f), list(args), {"argnum": 0}
    if t == "jacrev":
        return jax.jacrev(f), list(args), {"argnum": 0}
    if t == "hessian":
        return jax.hessian(f), list(args), {"argnum": 0}
    raise ValueError(t)


# --------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------

class Pack:
    """All arrays of one case, as .npy blobs back to back."""

    def __init__(self, fname):
        self.fname, self.buf = fname, io.BytesIO()

    def add(self, a, aval=None):
        arr, storage = gg.to_numpy_for_save(np.asarray(a))
        off = self.buf.tell()
        np.save(self.buf, arr, allow_pickle=False)
        ent = {"file": self.fname, "offset": off, "length": self.buf.tell() - off,
               "dtype": gg.short_dtype(np.asarray(a).dtype), "shape": list(np.shape(a))}
        if storage:
            ent["storage"] = storage
        return ent


REDUCING = {"reduce_sum", "reduce_prod", "cumsum", "cumprod", "cumlogsumexp",
            "dot_general", "reduce_window_sum", "conv_general_dilated", "fft"}


def reduction_length(jaxpr):
    """The longest reduction (summed or multiplied terms) of any equation."""
    n = 1
    for eqn in gg.walk_eqns(jaxpr):
        p = eqn.primitive.name
        if p not in REDUCING:
            continue
        shp = eqn.invars[0].aval.shape
        if p in ("reduce_sum", "reduce_prod"):
            k = int(np.prod([shp[a] for a in eqn.params["axes"]])) if eqn.params["axes"] else 1
        elif p in ("cumsum", "cumprod", "cumlogsumexp"):
            k = shp[eqn.params["axis"]] if shp else 1
        elif p == "dot_general":
            (ca, _), _ = eqn.params["dimension_numbers"]
            k = int(np.prod([shp[a] for a in ca])) if ca else 1
        elif p == "reduce_window_sum":
            k = int(np.prod(eqn.params["window_dimensions"]))
        elif p == "conv_general_dilated":
            k = int(np.prod(eqn.invars[1].aval.shape[1:]))
        else:  # fft
            k = int(np.prod(eqn.params["fft_lengths"]))
        n = max(n, k)
    return n


def closed_subs(jaxpr):
    """The sub-jaxprs with constants of jaxpr (a jit whose closed jaxpr keeps
    NumPy constants: jnp.piecewise's tables in sici and spence), depth first,
    equations in order, params sorted by name as JAX prints them, a shared
    one once: ft_jaxpr_num_sub_consts's order. JAX's printout names their
    constvars but not the values, so the case carries them (sub_consts)."""
    seen, out = set(), []

    def visit(v):
        if isinstance(v, (tuple, list)):
            for x in v:
                visit(x)
            return
        inner = getattr(v, "jaxpr", None)
        if not hasattr(v, "consts") or inner is None or not hasattr(inner, "eqns"):
            return
        if id(inner) in seen:
            return
        seen.add(id(inner))
        if inner.constvars:
            out.append(v)
        walk(inner)

    def walk(j):
        for e in j.eqns:
            for _, v in sorted(e.params.items()):
                visit(v)
    walk(jaxpr)
    return out


def capture(f, args, name, pack):
    """Printout, arrays and metadata of one (possibly transformed) function."""
    import jax
    closed = jax.make_jaxpr(f)(*args)
    text = str(closed)
    if gg.ADDR_RE.search(text):
        raise RuntimeError(f"{name}: unmasked address in printout")
    # FT_ORACLE_EAGER=1: JAX's outputs op by op (each primitive compiled once
    # per signature and cached) instead of one XLA compilation per function:
    # several times faster for a sweep of many small functions.
    eager = os.environ.get("FT_ORACLE_EAGER") == "1"
    outs = jax.tree_util.tree_leaves(f(*args) if eager else jax.jit(f)(*args))
    assert len(outs) == len(closed.out_avals), name
    ent = {"primitives": sorted({e.primitive.name for e in gg.walk_eqns(closed.jaxpr)}),
           "reduction_length": reduction_length(closed.jaxpr),
           "consts": [pack.add(c) for c in closed.consts],
           "inputs": [pack.add(np.asarray(a, dtype=av.dtype)) for a, av in zip(args, closed.in_avals)],
           "outputs": []}
    subs = closed_subs(closed.jaxpr)
    if subs:
        ent["sub_consts"] = [[pack.add(np.asarray(c)) for c in s.consts] for s in subs]
    if eager:
        ent["outputs_from"] = "eager"
    for o, av in zip(outs, closed.out_avals):
        arr = np.asarray(o)
        if arr.dtype != np.dtype(av.dtype):
            arr = arr.astype(av.dtype)
        ent["outputs"].append(pack.add(arr))
    dts = {gg.short_dtype(v.aval.dtype) for v in closed.jaxpr.invars + closed.jaxpr.outvars
           if hasattr(v, "aval")}
    ent["dtypes"] = sorted(dts)
    return text, ent


def register_all():
    register_prims()
    register_transforms()
    register_control()
    register_programs()
    register_special()


def run_pass(which, out_dir, only, register=register_all):
    """Captures every registered case of one pass (x64 or not) into out_dir;
    register() fills CASES (gen_sweep.py passes its own)."""
    import jax
    if which == "x64":
        jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_pprint_use_color", False)
    register()
    cases, errors = {}, {}
    for name, family, group, builder, transforms in CASES:
        if name.startswith("x64_") != (which == "x64"):
            continue
        if only and name not in only:
            continue
        rng = np.random.default_rng(seed_of(name))
        pack = Pack(f"{name}.npys")
        try:
            f, args = builder(rng)
            text, ent = capture(f, args, name, pack)
        except Exception as e:  # noqa: BLE001 - reported, and the run fails
            errors[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
            print(f"ERROR: {name}: {errors[name]}", file=sys.stderr)
            continue
        with open(os.path.join(out_dir, f"{name}.jaxpr"), "w") as fh:
            fh.write(text + "\n")
        ent.update({"family": family, "group": group, "x64": which == "x64",
                    "jaxpr": f"{name}.jaxpr", "transforms": {}})
        for t in transforms:
            trng = np.random.default_rng(seed_of(name + "/" + t))
            g, gargs, params = make_transform(t, f, args, trng)
            try:
                ttext, tent = capture(g, gargs, f"{name}.{t}", pack)
            except Exception as e:  # noqa: BLE001 - JAX refuses some transforms
                msg = str(e).splitlines()[0][:200]
                print(f"warning: {name}: JAX cannot {t}: {msg}", file=sys.stderr)
                ent.setdefault("transforms_refused_by_jax", {})[t] = msg
                continue
            with open(os.path.join(out_dir, f"{name}.{t}.jaxpr"), "w") as fh:
                fh.write(ttext + "\n")
            tent["jaxpr"] = f"{name}.{t}.jaxpr"
            tent["params"] = params
            ent["transforms"][t] = tent
        with open(os.path.join(out_dir, pack.fname), "wb") as fh:
            fh.write(pack.buf.getvalue())
        cases[name] = ent
        if os.environ.get("FT_ORACLE_JOURNAL"):  # each case as it is done (a long run may stop)
            with open(os.environ["FT_ORACLE_JOURNAL"], "a") as fh:
                fh.write(json.dumps({name: ent}, sort_keys=True) + "\n")
    return {"jax_version": jax.__version__, "cases": cases, "errors": errors}


# The tolerance class of a case, as tests/conformance/conf_compare.c
# (conf_tolerance) decides it from the same primitive list; written to the
# manifest for readers. The harness applies its own copy of the policy.
EXACT = set("""neg sign floor ceil round is_finite sqrt square abs integer_pow not copy
copy_p stop_gradient reduce_precision add add_any sub mul div rem max min nextafter and or
xor shift_left shift_right_logical shift_right_arithmetic eq ne lt le gt ge select_n clamp
convert_element_type bitcast_convert_type broadcast_in_dim reshape transpose squeeze
expand_dims rev slice dynamic_slice dynamic_update_slice concatenate pad split reduce_max
reduce_min reduce_and reduce_or argmax argmin cummax cummin iota sort top_k gather scatter
scatter-min scatter-max reduce_window_max reduce_window_min cond while scan jit pjit
custom_jvp_call custom_vjp_call custom_vjp_call_jaxpr stack unstack tile optimization_barrier
sharding_constraint layout_constraint reshard clz population_count mulhi eq_to le_to lt_to
reduce_xor platform_index empty""".split())
REDUCE_T = set("""reduce_sum reduce_prod cumsum cumprod dot_general reduce_window_sum
conv_general_dilated fft scatter-add scatter-mul scatter-sub""".split())
ULP_T = set("""exp exp2 log log1p expm1 tanh logistic sin cos tan asin acos atan sinh cosh asinh
acosh atanh rsqrt cbrt erf erfc erf_inv pow atan2 cumlogsumexp lgamma digamma polygamma
zeta""".split())
ARITH = set("add add_any sub mul div integer_pow square max min".split())


def tolerance_class(ent):
    if not any(o["dtype"].startswith(("f", "bf", "c")) for o in ent["outputs"]):
        return "bitwise"
    prims = [p for p in ent["primitives"] if p not in EXACT]
    red = [p for p in prims if p in REDUCE_T]
    trans = [p for p in prims if p in ULP_T]
    if not prims:
        return "arithmetic chain" if len(ARITH & set(ent["primitives"])) >= 2 else "bitwise"
    if len(trans) == 1 and len(prims) == 1:
        return f"ulp ({trans[0]})"
    if red and len(red) == len(prims):
        return f"reduction (n={ent['reduction_length']})"
    return f"composite (n={ent['reduction_length']})"


def annotate(manifest):
    """Adds jax_version and tolerance_class to every case and transform."""
    for c in manifest["cases"].values():
        c["jax_version"] = manifest["jax_version"]
        c["tolerance_class"] = tolerance_class(c)
        for t in c["transforms"].values():
            t["tolerance_class"] = {"jax_program": tolerance_class(t),
                                    "ours": f"composite (n={t['reduction_length']})"}
    return manifest


def lax_primitives():
    """JAX's own list of primitives: every core.Primitive instance defined in
    jax._src.lax.* and the modules of jit, custom derivatives and ad_util."""
    import importlib
    import pkgutil
    import jax
    import jax._src.lax as L
    from jax._src import core
    found = {}
    mods = [m.name for m in pkgutil.walk_packages(L.__path__, "jax._src.lax.")]
    mods += ["jax._src.pjit", "jax._src.custom_derivatives", "jax._src.ad_util",
             "jax._src.ad_checkpoint"]
    for mn in sorted(mods):
        try:
            m = importlib.import_module(mn)
        except Exception:  # noqa: BLE001
            continue
        for v in vars(m).values():
            if isinstance(v, core.Primitive):
                found.setdefault(v.name, mn)
    return {"jax_version": jax.__version__, "primitives": dict(sorted(found.items()))}


def main(register=register_all, out_default=OUT_DEFAULT, script=__file__,
         generator="tools/oracle/gen_conformance.py", doc=__doc__, lax_json=True):
    """The command line of a conformance-format generator: two child passes
    (normal and x64) of script, merged into out/MANIFEST.json."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=out_default)
    ap.add_argument("--pass", dest="which", choices=["normal", "x64"])
    ap.add_argument("--partial")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--lax-primitives", action="store_true",
                    help="only write LAX_PRIMITIVES.json")
    ap.add_argument("--annotate", action="store_true",
                    help="only recompute jax_version/tolerance_class in MANIFEST.json")
    args = ap.parse_args()
    if args.annotate:
        path = os.path.join(os.path.abspath(args.out), "MANIFEST.json")
        with open(path) as fh:
            manifest = annotate(json.load(fh))
        with open(path, "w") as fh:
            json.dump(manifest, fh, sort_keys=True, indent=0)
            fh.write("\n")
        return
    if args.list:
        register()
        for c in CASES:
            print(c[0], c[1], c[2], ",".join(c[4]))
        return
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    if args.which:
        with open(args.partial, "w") as fh:
            json.dump(run_pass(args.which, out, args.only, register), fh, sort_keys=True)
        return
    if lax_json and (args.lax_primitives or not args.only):
        with open(os.path.join(out, "LAX_PRIMITIVES.json"), "w") as fh:
            json.dump(lax_primitives(), fh, sort_keys=True, indent=1)
            fh.write("\n")
        if args.lax_primitives:
            return
    if not args.only:
        for fn in os.listdir(out):
            if fn.endswith((".jaxpr", ".npys")) or fn == "MANIFEST.json":
                os.remove(os.path.join(out, fn))
    parts = []
    for which in ("normal", "x64"):
        partial = os.path.join(out, f".partial-{which}.json")
        cmd = [sys.executable, os.path.abspath(script), "--pass", which, "--out", out,
               "--partial", partial] + (["--only", *args.only] if args.only else [])
        subprocess.run(cmd, check=True, env=dict(os.environ, JAX_PLATFORMS="cpu"))
        with open(partial) as fh:
            parts.append(json.load(fh))
        os.remove(partial)
    cases, errors = {}, {}
    for p in parts:
        cases.update(p["cases"])
        errors.update(p["errors"])
    manifest = annotate({"jax_version": parts[0]["jax_version"], "generator":
                         generator, "num_cases": len(cases),
                         "vmap_batch": VMAP_B, "cases": cases})
    if not args.only or out != os.path.abspath(out_default):  # --only: a scratch dir
        with open(os.path.join(out, "MANIFEST.json"), "w") as fh:
            json.dump(manifest, fh, sort_keys=True, indent=0)
            fh.write("\n")
    print(f"jax {manifest['jax_version']}: {len(cases)} cases written to {out}")
    if errors:
        for k, v in sorted(errors.items()):
            print(f"failed: {k}: {v}", file=sys.stderr)
        sys.exit(1)


def main_extra(register, names, script):
    """The command line of a generator that adds a family of cases to
    fixtures/conformance (gen_prims017.py, gen_prims2.py): `register()`
    registers its cases (filling `names`); each dtype pass runs in a child
    (`script --pass normal|x64`), and their cases are merged into the
    existing MANIFEST.json, which is re-annotated and written whole."""
    orig = register_programs

    def reg():
        orig()
        register()
    globals()["register_programs"] = reg
    out = os.path.abspath(OUT_DEFAULT)
    if len(sys.argv) == 3 and sys.argv[1] == "--pass":
        register()  # (only to learn the names; run_pass registers again)
        wanted = list(names)
        CASES.clear()
        res = run_pass(sys.argv[2], out, wanted)
        json.dump(res, sys.stdout, sort_keys=True)
        return
    parts = []
    for which in ("normal", "x64"):
        r = subprocess.run([sys.executable, os.path.abspath(script), "--pass", which],
                           check=True, stdout=subprocess.PIPE,
                           env=dict(os.environ, JAX_PLATFORMS="cpu"))
        parts.append(json.loads(r.stdout))
    path = os.path.join(out, "MANIFEST.json")
    with open(path) as fh:
        manifest = json.load(fh)
    errors = {}
    for p in parts:
        manifest["cases"].update(p["cases"])
        errors.update(p["errors"])
    manifest["num_cases"] = len(manifest["cases"])
    manifest = annotate(manifest)
    with open(path, "w") as fh:
        json.dump(manifest, fh, sort_keys=True, indent=0)
        fh.write("\n")
    n = sum(len(p["cases"]) for p in parts)
    print(f"{n} cases written; MANIFEST.json has {manifest['num_cases']}", file=sys.stderr)
    for k, v in sorted(errors.items()):
        print(f"failed: {k}: {v}", file=sys.stderr)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
