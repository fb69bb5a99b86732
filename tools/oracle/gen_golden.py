#!/usr/bin/env python3
"""Generate FrankenTrace golden/conformance fixtures from real JAX.

Usage (see tools/oracle/README.md):

  # full golden set for the pinned JAX (printouts + .npy inputs/outputs +
  # MANIFEST.json + PARAMS.json) into fixtures/golden/
  .venv-oracle/bin/python tools/oracle/gen_golden.py

  # printouts only (older JAX releases, parser compatibility)
  .venv-oracle-0.4.35/bin/python tools/oracle/gen_golden.py \
      --compat --out fixtures/compat/0.4.35

Every `<case>.jaxpr` file holds exactly `str(jax.make_jaxpr(f)(*args))` plus
one trailing newline.  Cases whose name starts with `x64_` are traced and run
in a separate process with `jax_enable_x64=True` (the flag is global).

The top-level invocation spawns one child process per pass (`--pass normal`,
`--pass x64`), each of which writes its files and a partial manifest; the
parent merges the partial manifests.  Output is deterministic: seeded inputs,
sorted JSON keys, no timestamps.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import zlib

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# --------------------------------------------------------------------------
# Case registry
# --------------------------------------------------------------------------

CASES: list[tuple[str, object]] = []


def case(name):
    """Register a case.  The decorated builder takes a seeded numpy Generator
    and returns (f, args) where args is a list/tuple of example arguments."""
    def deco(builder):
        assert not any(n == name for n, _ in CASES), name
        CASES.append((name, builder))
        return builder
    return deco


def seed_of(name: str) -> int:
    return zlib.crc32(name.encode("utf-8"))


f32 = np.float32
INF = float("inf")
NAN = float("nan")
# Edge values valid for any float function (results may be nan/inf).
EDGE_BASIC = [-0.0, 0.0, INF, -INF, NAN, 1e-45, -1e-40, 1e-7, -1e-7, 1.0, -1.0]
EDGE_HUGE = [3.0e38, -3.0e38, 1e30, -1e30, 1.1754944e-38, 0.5, -0.5, 2.5, -2.5]


def fvec(vals, dtype=f32):
    return np.asarray(vals, dtype=dtype)


def edge_input(rng, lo, hi, n_random=12, huge=True, dtype=f32):
    """Edge values followed by seeded uniform values in [lo, hi)."""
    vals = list(EDGE_BASIC) + (list(EDGE_HUGE) if huge else [])
    vals += list(rng.uniform(lo, hi, size=n_random))
    return fvec(vals, dtype)


def randn(rng, *shape, dtype=f32):
    return rng.standard_normal(shape).astype(dtype)


def register_all():
    import jax
    import jax.numpy as jnp
    from jax import lax

    # ------------------------------------------------------------------
    # Elementwise unary (float32) -- one case per primitive, via jax.lax
    # ------------------------------------------------------------------
    # name -> (fn, lo, hi, include_huge_edges)
    unary = {
        "neg": (lax.neg, -10, 10, True),
        "sign": (lax.sign, -10, 10, True),
        "floor": (lax.floor, -10, 10, True),
        "ceil": (lax.ceil, -10, 10, True),
        "is_finite": (lax.is_finite, -10, 10, True),
        "exp": (lax.exp, -20, 20, True),
        "exp2": (lax.exp2, -20, 20, True),
        "log": (lax.log, 0.001, 100, True),
        "log1p": (lax.log1p, -0.999, 100, True),
        "expm1": (lax.expm1, -20, 20, True),
        "tanh": (lax.tanh, -10, 10, True),
        "logistic": (lax.logistic, -20, 20, True),
        "sin": (lax.sin, -10, 10, False),
        "cos": (lax.cos, -10, 10, False),
        "tan": (lax.tan, -1.5, 1.5, False),
        "asin": (lax.asin, -1, 1, False),
        "acos": (lax.acos, -1, 1, False),
        "atan": (lax.atan, -50, 50, True),
        "sinh": (lax.sinh, -10, 10, True),
        "cosh": (lax.cosh, -10, 10, True),
        "asinh": (lax.asinh, -100, 100, True),
        "acosh": (lax.acosh, 1, 100, True),
        "atanh": (lax.atanh, -1, 1, False),
        "sqrt": (lax.sqrt, 0, 100, True),
        "rsqrt": (lax.rsqrt, 0.001, 100, True),
        "cbrt": (lax.cbrt, -100, 100, True),
        "square": (lax.square, -10, 10, True),
        "abs": (lax.abs, -10, 10, True),
        "erf": (lax.erf, -4, 4, True),
        "erfc": (lax.erfc, -4, 10, True),
        "erf_inv": (lax.erf_inv, -1, 1, False),
    }
    for pname, (fn, lo, hi, huge) in unary.items():
        def builder(rng, fn=fn, lo=lo, hi=hi, huge=huge):
            return fn, [edge_input(rng, lo, hi, huge=huge)]
        case(f"unary_{pname}")(builder)

    @case("unary_round")
    def _(rng):
        x = fvec(EDGE_BASIC + [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, 1e30]
                 + list(rng.uniform(-10, 10, 8)))
        return (lambda x: (lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
                           lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN))), [x]

    @case("unary_integer_pow")
    def _(rng):
        x = edge_input(rng, -4, 4, huge=False)
        return (lambda x: (lax.integer_pow(x, 2), lax.integer_pow(x, 3),
                           lax.integer_pow(x, -2), lax.integer_pow(x, 0),
                           x ** 5)), [x]

    @case("int_unary_i32")
    def _(rng):
        x = np.asarray([0, 1, -1, 7, -7, 2**31 - 1, -2**31, 123456, -98765,
                        46341], dtype=np.int32)
        return (lambda x: (lax.neg(x), lax.sign(x), lax.abs(x),
                           lax.bitwise_not(x), lax.integer_pow(x, 2),
                           lax.integer_pow(x, 3))), [x]

    @case("accuracy_out_dtype_params")
    def _(rng):
        x = randn(rng, 4)
        return (lambda x: (lax.exp(x, accuracy=lax.AccuracyMode.HIGHEST),
                           lax.sin(x, accuracy=lax.AccuracyMode.DEFAULT),
                           lax.mul(x, x, out_dtype=np.dtype("float32")))), [x]

    @case("not_bool")
    def _(rng):
        x = np.asarray([True, False, True, True, False], dtype=np.bool_)
        return (lambda x: lax.bitwise_not(x)), [x]

    # ------------------------------------------------------------------
    # Elementwise binary
    # ------------------------------------------------------------------
    def binary_inputs(rng, n_random=10):
        a = [-0.0, 0.0, 1.0, -1.0, INF, -INF, NAN, 1.0, 0.0, INF, 1e-45, 3e38,
             5.5, -5.5, 7.0, -7.0]
        b = [0.0, -0.0, 0.0, 0.0, INF, 1.0, 1.0, NAN, 0.0, -INF, 2.0, 10.0,
             2.0, 2.0, -3.0, -3.0]
        a += list(rng.uniform(-10, 10, n_random))
        b += list(rng.uniform(-10, 10, n_random))
        return fvec(a), fvec(b)

    @case("binary_arith_f32")
    def _(rng):
        a, b = binary_inputs(rng)
        return (lambda a, b: (lax.add(a, b), lax.sub(a, b), lax.mul(a, b),
                              lax.div(a, b))), [a, b]

    @case("binary_rem_f32")
    def _(rng):
        a, b = binary_inputs(rng)
        return (lambda a, b: lax.rem(a, b)), [a, b]

    @case("binary_pow_f32")
    def _(rng):
        a, b = binary_inputs(rng)
        a = np.concatenate([a, fvec([-2.0, -2.0, 0.0, 0.0, 1.0, 4.0])])
        b = np.concatenate([b, fvec([3.0, 0.5, -1.0, 0.0, NAN, 0.5])])
        return (lambda a, b: lax.pow(a, b)), [a, b]

    @case("binary_max_min_f32")
    def _(rng):
        a, b = binary_inputs(rng)
        return (lambda a, b: (lax.max(a, b), lax.min(a, b))), [a, b]

    @case("binary_atan2_f32")
    def _(rng):
        a, b = binary_inputs(rng)
        a = np.concatenate([a, fvec([0.0, -0.0, 0.0, -0.0, INF, -INF])])
        b = np.concatenate([b, fvec([-0.0, -0.0, 0.0, 0.0, INF, -INF])])
        return (lambda a, b: lax.atan2(a, b)), [a, b]

    @case("binary_nextafter_f32")
    def _(rng):
        a, b = binary_inputs(rng)
        a = np.concatenate([a, fvec([0.0, -0.0, 1.0, 3.4028235e38, 1e-45])])
        b = np.concatenate([b, fvec([1.0, -1.0, 1.0, INF, 0.0])])
        return (lambda a, b: lax.nextafter(a, b)), [a, b]

    @case("int_arith_i32")
    def _(rng):
        a = np.asarray([7, -7, 7, -7, 0, 2**31 - 1, -2**31, 100, 13, -13, 5, 1],
                       dtype=np.int32)
        b = np.asarray([2, 2, -2, -2, 3, 1, -1, 7, 13, 4, -3, 1],
                       dtype=np.int32)
        b[6] = 1  # avoid INT_MIN / -1
        return (lambda a, b: (lax.add(a, b), lax.sub(a, b), lax.mul(a, b),
                              lax.div(a, b), lax.rem(a, b), lax.max(a, b),
                              lax.min(a, b))), [a, b]

    @case("bitwise_i32")
    def _(rng):
        a = rng.integers(-2**31, 2**31, size=8, dtype=np.int64).astype(np.int32)
        b = rng.integers(-2**31, 2**31, size=8, dtype=np.int64).astype(np.int32)
        return (lambda a, b: (lax.bitwise_and(a, b), lax.bitwise_or(a, b),
                              lax.bitwise_xor(a, b), lax.bitwise_not(a))), [a, b]

    @case("bitwise_bool")
    def _(rng):
        a = np.asarray([True, True, False, False])
        b = np.asarray([True, False, True, False])
        return (lambda a, b: (lax.bitwise_and(a, b), lax.bitwise_or(a, b),
                              lax.bitwise_xor(a, b), ~a)), [a, b]

    @case("shifts_i32")
    def _(rng):
        a = np.asarray([1, -1, 12345, -12345, 2**31 - 1, -2**31, 7, -8, 1, -1],
                       dtype=np.int32)
        s = np.asarray([0, 1, 4, 4, 31, 31, 32, 33, -1, 40], dtype=np.int32)
        return (lambda a, s: (lax.shift_left(a, s),
                              lax.shift_right_logical(a, s),
                              lax.shift_right_arithmetic(a, s))), [a, s]

    @case("shifts_u32")
    def _(rng):
        a = np.asarray([1, 0xFFFFFFFF, 0x80000000, 12345, 7, 1], dtype=np.uint32)
        s = np.asarray([0, 1, 31, 4, 32, 100], dtype=np.uint32)
        return (lambda a, s: (lax.shift_left(a, s),
                              lax.shift_right_logical(a, s),
                              lax.shift_right_arithmetic(a, s))), [a, s]

    @case("compare_f32")
    def _(rng):
        a, b = binary_inputs(rng, n_random=4)
        return (lambda a, b: (lax.eq(a, b), lax.ne(a, b), lax.lt(a, b),
                              lax.le(a, b), lax.gt(a, b), lax.ge(a, b))), [a, b]

    @case("compare_i32")
    def _(rng):
        a = rng.integers(-5, 5, size=12).astype(np.int32)
        b = rng.integers(-5, 5, size=12).astype(np.int32)
        return (lambda a, b: (a == b, a != b, a < b, a <= b, a > b,
                              a >= b)), [a, b]

    @case("compare_u32")
    def _(rng):
        a = np.asarray([0, 1, 0xFFFFFFFF, 5, 0x80000000], dtype=np.uint32)
        b = np.asarray([1, 0, 0, 5, 0x7FFFFFFF], dtype=np.uint32)
        return (lambda a, b: (lax.lt(a, b), lax.ge(a, b))), [a, b]

    @case("select_n_ternary")
    def _(rng):
        which = np.asarray([0, 1, 2, 2, 1, 0], dtype=np.int32)
        a, b, c = (randn(rng, 6) for _ in range(3))
        return (lambda w, a, b, c: lax.select_n(w, a, b, c)), [which, a, b, c]

    @case("select_n_where_bool")
    def _(rng):
        a, b = randn(rng, 2, 3), randn(rng, 2, 3)
        return (lambda a, b: jnp.where(a > b, a, b)), [a, b]

    @case("clamp_f32")
    def _(rng):
        x = edge_input(rng, -3, 3, n_random=8)
        lo = np.full_like(x, -1.0)
        return (lambda lo, x: (lax.clamp(lo, x, f32(1.0)),
                               lax.clamp(-0.5, x, 0.5))), [lo, x]

    # ------------------------------------------------------------------
    # Shapes / data movement
    # ------------------------------------------------------------------
    @case("broadcast_reshape")
    def _(rng):
        x = randn(rng, 3)
        return (lambda x: (lax.broadcast_in_dim(x, (2, 3, 4), (1,)),
                           jnp.reshape(x, (3, 1)),
                           lax.reshape(jnp.arange(6.0, dtype=f32), (2, 3),
                                       dimensions=(0,)),
                           jnp.broadcast_to(x, (2, 3)))), [x]

    @case("transpose_3d")
    def _(rng):
        x = randn(rng, 2, 3, 4)
        return (lambda x: (lax.transpose(x, (2, 0, 1)), x.T)), [x]

    @case("squeeze_expand")
    def _(rng):
        x = randn(rng, 1, 3, 1)
        return (lambda x: (lax.squeeze(x, (0, 2)), jnp.squeeze(x, 0),
                           jnp.expand_dims(x, 1))), [x]

    @case("rev_2d")
    def _(rng):
        x = randn(rng, 3, 4)
        return (lambda x: (lax.rev(x, (0,)), lax.rev(x, (0, 1)),
                           jnp.flip(x, 1))), [x]

    @case("slice_strided")
    def _(rng):
        x = randn(rng, 4, 6)
        return (lambda x: (lax.slice(x, (1, 0), (3, 6), (1, 2)),
                           x[:, 1:4], x[::2])), [x]

    @case("dynamic_slice")
    def _(rng):
        x = randn(rng, 5, 4)
        i = np.asarray(3, dtype=np.int32)
        j = np.asarray(-1, dtype=np.int32)
        return (lambda x, i, j: (lax.dynamic_slice(x, (i, j), (2, 2)),
                                 lax.dynamic_slice_in_dim(x, i + 5, 3, 0))
                ), [x, i, j]

    @case("dynamic_update_slice")
    def _(rng):
        x = randn(rng, 4, 4)
        u = randn(rng, 2, 3)
        i = np.asarray(3, dtype=np.int32)
        return (lambda x, u, i: (lax.dynamic_update_slice(x, u, (i, 0)),
                                 lax.dynamic_update_slice(x, u, (0, -i)))
                ), [x, u, i]

    @case("concatenate")
    def _(rng):
        a, b = randn(rng, 2, 3), randn(rng, 1, 3)
        return (lambda a, b: (lax.concatenate([a, b, a], 0),
                              jnp.concatenate([a, a], axis=1))), [a, b]

    @case("pad_negative_interior")
    def _(rng):
        x = randn(rng, 3, 4)
        return (lambda x: (lax.pad(x, f32(0.0), [(1, 2, 1), (-1, 0, 0)]),
                           lax.pad(x, f32(-1.5), [(0, 0, 0), (2, -2, 2)]),
                           jnp.pad(x, 1))), [x]

    @case("iota_2d")
    def _(rng):
        return (lambda: (lax.iota(np.int32, 5),
                         lax.broadcasted_iota(np.float32, (2, 3), 1),
                         lax.broadcasted_iota(np.uint8, (3, 2), 0))), []

    # ------------------------------------------------------------------
    # Reductions, cumulative
    # ------------------------------------------------------------------
    @case("reduce_f32")
    def _(rng):
        x = randn(rng, 3, 4)
        return (lambda x: (jnp.sum(x, axis=0), jnp.max(x, axis=1), jnp.min(x),
                           jnp.prod(x, axis=(0, 1)))), [x]

    @case("reduce_i32")
    def _(rng):
        x = rng.integers(-9, 9, size=(2, 5)).astype(np.int32)
        return (lambda x: (jnp.sum(x), jnp.max(x, 0), jnp.min(x, 1),
                           jnp.prod(x, 1))), [x]

    @case("reduce_bool")
    def _(rng):
        x = rng.integers(0, 2, size=(3, 4)).astype(np.bool_)
        x[0] = True
        return (lambda x: (jnp.all(x, axis=1), jnp.any(x, axis=0),
                           jnp.all(x), jnp.any(x))), [x]

    @case("reduce_nan_inf")
    def _(rng):
        x = fvec([1.0, NAN, -INF, 2.0, INF, -0.0, 0.0, 3.0])
        return (lambda x: (jnp.max(x), jnp.min(x), jnp.sum(x[2:5]),
                           jnp.max(x[5:7]))), [x]

    @case("argmax_argmin")
    def _(rng):
        x = fvec([[1.0, 3.0, 3.0, -1.0], [NAN, 0.0, 5.0, NAN],
                  [-INF, -INF, 0.0, -0.0]])
        return (lambda x: (jnp.argmax(x, axis=1), jnp.argmin(x, axis=1),
                           jnp.argmax(x, axis=0), jnp.argmin(x))), [x]

    @case("cumulative")
    def _(rng):
        x = randn(rng, 2, 5)
        return (lambda x: (jnp.cumsum(x, axis=1), jnp.cumprod(x, axis=0),
                           lax.cummax(x, axis=1), lax.cummin(x, axis=1, reverse=True),
                           lax.cumsum(x, axis=1, reverse=True))), [x]

    @case("cumulative_i32")
    def _(rng):
        x = rng.integers(-5, 6, size=8).astype(np.int32)
        return (lambda x: (jnp.cumsum(x), lax.cumprod(x), lax.cummax(x),
                           lax.cummin(x))), [x]

    # ------------------------------------------------------------------
    # dot_general
    # ------------------------------------------------------------------
    @case("matmul_f32")
    def _(rng):
        a, b = randn(rng, 3, 4), randn(rng, 4, 2)
        return (lambda a, b: (a @ b, jnp.dot(a[0], b))), [a, b]

    @case("dot_batched_einsum")
    def _(rng):
        a, b = randn(rng, 2, 3, 4), randn(rng, 2, 4, 5)
        return (lambda a, b: (jnp.einsum("bij,bjk->bik", a, b),
                              lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
                              jnp.einsum("bij,bjk->kib", a, b))), [a, b]

    @case("dot_i32_preferred")
    def _(rng):
        a = rng.integers(-9, 9, size=(2, 3)).astype(np.int8)
        b = rng.integers(-9, 9, size=(3, 2)).astype(np.int8)
        return (lambda a, b: (lax.dot(a, b, preferred_element_type=np.int32),
                              lax.dot_general(a, b, (((1,), (0,)), ((), ())))
                              )), [a, b]

    @case("dot_precision")
    def _(rng):
        a, b = randn(rng, 4), randn(rng, 4, 3)
        return (lambda a, b: (
            lax.dot(a, b, precision=lax.Precision.HIGHEST),
            lax.dot_general(a, b, (((0,), (0,)), ((), ())),
                            precision=(lax.Precision.DEFAULT, lax.Precision.HIGH),
                            preferred_element_type=np.float32))), [a, b]

    # ------------------------------------------------------------------
    # Conversions
    # ------------------------------------------------------------------
    @case("convert_dtypes")
    def _(rng):
        x = fvec([0.0, -0.0, 1.5, -1.5, 2.5, -2.7, 100.9, 255.0, 256.0, -129.0,
                  1e-45, 65504.0, 70000.0, 3.1415927])
        i = np.asarray([0, 1, -1, 255, 256, -129, 2**31 - 1, -2**31],
                       dtype=np.int32)
        return (lambda x, i: (
            x.astype(np.int32), i.astype(np.float32), x.astype(np.bool_),
            (x > 0).astype(np.float32), i.astype(np.uint8), i.astype(np.int8),
            x.astype(np.float16), x.astype(jnp.bfloat16), i.astype(np.uint32),
            (x > 0).astype(np.int32))), [x, i]

    @case("convert_special_f32_to_f16_bf16")
    def _(rng):
        x = edge_input(rng, -70000, 70000, n_random=6)
        return (lambda x: (x.astype(np.float16), x.astype(jnp.bfloat16),
                           x.astype(np.float16).astype(np.float32))), [x]

    @case("bitcast_convert")
    def _(rng):
        x = fvec([1.0, -0.0, INF, NAN])
        u = np.asarray([0x3F800000, 0x7F800000, 0x00000001, 0xFFFFFFFF],
                       dtype=np.uint32)
        return (lambda x, u: (lax.bitcast_convert_type(x, np.int32),
                              lax.bitcast_convert_type(u, np.float32),
                              lax.bitcast_convert_type(x, np.uint8),
                              lax.bitcast_convert_type(
                                  u.astype(np.uint8).reshape(2, 2), np.uint16))
                ), [x, u]

    @case("copy_stop_gradient")
    def _(rng):
        x = randn(rng, 4)
        return (lambda x: (jnp.copy(x), lax.stop_gradient(x) * 2.0,
                           jnp.array(x, copy=True))), [x]

    # ------------------------------------------------------------------
    # Sorting
    # ------------------------------------------------------------------
    @case("sort_1d")
    def _(rng):
        x = fvec([3.0, NAN, -0.0, 0.0, -INF, 1.0, INF, -2.0, 1.0, NAN])
        return (lambda x: (jnp.sort(x), lax.sort(x, is_stable=False))), [x]

    @case("sort_2d_dims")
    def _(rng):
        x = rng.integers(-5, 5, size=(3, 4)).astype(np.int32)
        return (lambda x: (lax.sort(x, dimension=0), jnp.sort(x, axis=1),
                           jnp.sort(x, axis=None))), [x]

    @case("sort_multi_operand")
    def _(rng):
        k = fvec([3.0, 1.0, 2.0, 1.0, 3.0, 0.0])
        v = np.arange(6, dtype=np.int32)
        w = randn(rng, 6)
        return (lambda k, v, w: lax.sort((k, v, w), num_keys=1)), [k, v, w]

    @case("sort_two_keys")
    def _(rng):
        k1 = np.asarray([1, 0, 1, 0, 1, 0], dtype=np.int32)
        k2 = fvec([0.5, 0.25, -1.0, 0.25, 0.0, 2.0])
        v = np.arange(6, dtype=np.uint8)
        return (lambda a, b, c: lax.sort((a, b, c), num_keys=2)), [k1, k2, v]

    @case("sort_drop_var")
    def _(rng):
        k = randn(rng, 5)
        v = randn(rng, 5)
        return (lambda k, v: lax.sort((k, v), num_keys=1)[1]), [k, v]

    @case("argsort")
    def _(rng):
        x = fvec([0.3, -1.0, 0.3, 2.0, -5.0, 0.0])
        return (lambda x: (jnp.argsort(x), jnp.argsort(-x, stable=True))), [x]

    # ------------------------------------------------------------------
    # FFT
    # ------------------------------------------------------------------
    @case("fft_c2c")
    def _(rng):
        x = (randn(rng, 8) + 1j * randn(rng, 8)).astype(np.complex64)
        return (lambda x: (jnp.fft.fft(x), jnp.fft.ifft(x),
                           lax.fft(x, "FFT", (8,)))), [x]

    @case("fft_rfft_irfft")
    def _(rng):
        x = randn(rng, 8)
        return (lambda x: (jnp.fft.rfft(x), jnp.fft.irfft(jnp.fft.rfft(x)),
                           lax.fft(lax.fft(x, "RFFT", (8,)), "IRFFT", (8,)))
                ), [x]

    @case("fft_2d")
    def _(rng):
        x = randn(rng, 4, 4)
        return (lambda x: (jnp.fft.fft2(x), jnp.fft.rfft2(x))), [x]

    # ------------------------------------------------------------------
    # Control flow & calls
    # ------------------------------------------------------------------
    @case("cond_binary")
    def _(rng):
        x = randn(rng, 3)
        return (lambda p, x: lax.cond(p, lambda x: jnp.sin(x) * 2.0,
                                      lambda x: jnp.cos(x), x)
                ), [np.asarray(True), x]

    @case("cond_switch3")
    def _(rng):
        x = randn(rng, 3)
        y = np.asarray(1.5, dtype=f32)
        return (lambda i, x, y: lax.switch(
            i, [lambda x, y: x + y, lambda x, y: x * y,
                lambda x, y: jnp.exp(x) - y], x, y)
                ), [np.asarray(2, dtype=np.int32), x, y]

    @case("cond_multi_output_consts")
    def _(rng):
        x = randn(rng, 4)
        c = randn(rng, 4)
        def f(p, x):
            return lax.cond(p > 0, lambda x: (x + c, jnp.sum(x)),
                            lambda x: (x - c, jnp.max(x)), x)
        return f, [np.asarray(-1.0, dtype=f32), x]

    @case("fori_loop_static")
    def _(rng):
        x = randn(rng, 3)
        return (lambda x: lax.fori_loop(0, 4, lambda i, c: c * 0.5 + i, x)), [x]

    @case("fori_loop_dynamic")
    def _(rng):
        x = randn(rng, 3)
        return (lambda x, n: lax.fori_loop(0, n, lambda i, c: c * 0.5 + i, x)
                ), [x, np.asarray(5, dtype=np.int32)]

    @case("while_loop_collatz")
    def _(rng):
        def f(n):
            def cond(s):
                return s[0] != 1
            def body(s):
                n, k = s
                n = jnp.where(n % 2 == 0, n // 2, 3 * n + 1)
                return n, k + 1
            return lax.while_loop(cond, body, (n, jnp.int32(0)))
        return f, [np.asarray(27, dtype=np.int32)]

    @case("while_loop_consts")
    def _(rng):
        c = randn(rng, 3)
        def f(x, lim):
            return lax.while_loop(lambda s: jnp.sum(s) < lim,
                                  lambda s: s + jnp.abs(c) + 0.1, x)
        return f, [randn(rng, 3), np.asarray(10.0, dtype=f32)]

    @case("scan_cumsum")
    def _(rng):
        xs = randn(rng, 5, 2)
        def f(xs):
            def step(c, x):
                c = c + x
                return c, c * 2.0
            return lax.scan(step, jnp.zeros(2, np.float32), xs)
        return f, [xs]

    @case("scan_reverse_unroll")
    def _(rng):
        xs = randn(rng, 6)
        ys = randn(rng, 6)
        def f(xs, ys):
            def step(c, xy):
                x, y = xy
                return c * 0.9 + x * y, (c, x - y)
            return lax.scan(step, f32(0.0), (xs, ys), reverse=True, unroll=2)
        return f, [xs, ys]

    @case("scan_no_xs_length")
    def _(rng):
        def f(x):
            return lax.scan(lambda c, _: (c * 2.0 + 1.0, c), x, None, length=4)
        return f, [randn(rng, 2)]

    @case("nested_jit")
    def _(rng):
        inner = jax.jit(lambda a, b: jnp.tanh(a) * b + 1.0)
        def f(x, y):
            return inner(x, y) + jax.jit(lambda z: z * 3.0)(x)
        return f, [randn(rng, 4), randn(rng, 4)]

    @case("jit_shared_hoisted")
    def _(rng):
        @jax.jit
        def g(a):
            return jnp.sin(a) + 1.0
        return (lambda x, y: g(x) * g(y)), [randn(rng, 3), randn(rng, 3)]

    @case("jit_big_hoisted")
    def _(rng):
        @jax.jit
        def big(a):
            for k in range(12):
                a = a * 1.5 + float(k)
            return a
        return (lambda x: big(x) - 1.0), [randn(rng, 3)]

    @case("jit_static_and_donate")
    def _(rng):
        from functools import partial
        @partial(jax.jit, static_argnums=1, donate_argnums=0, keep_unused=True)
        def g(a, n, unused):
            return a * n
        return (lambda x: g(x, 3, x) + g(x, 4, x)), [randn(rng, 3)]

    @case("custom_jvp_relu")
    def _(rng):
        x = edge_input(rng, -3, 3, n_random=4, huge=False)
        return (lambda x: (jax.nn.relu(x), jax.nn.gelu(x, approximate=False))), [x]

    @case("custom_jvp_user")
    def _(rng):
        @jax.custom_jvp
        def softplus(x):
            return jnp.log1p(jnp.exp(x))
        @softplus.defjvp
        def softplus_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return softplus(x), t * jax.nn.sigmoid(x)
        return (lambda x: softplus(x) * 2.0), [randn(rng, 5)]

    @case("custom_vjp_user")
    def _(rng):
        @jax.custom_vjp
        def clip_grad(x, lim):
            return jnp.sin(x) * lim
        def fwd(x, lim):
            return clip_grad(x, lim), (jnp.cos(x), lim)
        def bwd(res, g):
            c, lim = res
            return (jnp.clip(g * c * lim, -1.0, 1.0), jnp.sum(g))
        clip_grad.defvjp(fwd, bwd)
        return (lambda x, l: clip_grad(x, l)), [randn(rng, 4),
                                                np.asarray(2.0, dtype=f32)]

    @case("grad_custom_vjp")
    def _(rng):
        @jax.custom_vjp
        def f(x):
            return jnp.sin(x)
        def fwd(x):
            return jnp.sin(x), jnp.cos(x)
        def bwd(c, g):
            return (g * c * 0.5,)
        f.defvjp(fwd, bwd)
        return jax.grad(lambda x: jnp.sum(f(x))), [randn(rng, 4)]

    @case("grad_custom_jvp")
    def _(rng):
        return jax.grad(lambda x: jnp.sum(jax.nn.relu(x) * x)), [randn(rng, 5)]

    # ------------------------------------------------------------------
    # Literals, naming, structure
    # ------------------------------------------------------------------
    @case("literals_f32")
    def _(rng):
        def f(x):
            return (x * 2.0, x + 1e-7, x * 1e20, x + jnp.inf, x - jnp.inf,
                    x * jnp.nan, x - 3.0, x * f32(1e-7), x * f32(0.1),
                    x + 0.1, x / 3.0, x * 1e-45, x + 123456789.0,
                    x * 0.0, x * -0.0, jnp.maximum(x, -2.5))
        return f, [randn(rng, 3)]

    @case("literals_int_bool")
    def _(rng):
        def f(i, b):
            return (i + 1, i * -3, i - 2147483647, i // 7, b & True,
                    b | False, jnp.where(b, i, 0), i > -1)
        return f, [np.asarray([1, -2, 3], dtype=np.int32),
                   np.asarray([True, False, True])]

    @case("literals_small_dtypes")
    def _(rng):
        def f(h, bh, u, s):
            return (h * 2.0, h + jnp.float16(0.1), bh * 3.0,
                    bh + jnp.bfloat16(0.1), u + 3, u * jnp.uint8(255),
                    s - 1, s * jnp.int8(-128))
        return f, [randn(rng, 3).astype(np.float16),
                   randn(rng, 3).astype(jnp.bfloat16),
                   np.asarray([0, 100, 255], dtype=np.uint8),
                   np.asarray([-128, 0, 127], dtype=np.int8)]

    @case("literal_outputs")
    def _(rng):
        return (lambda x: (x, 1, True, jnp.float16(2.5), jnp.uint8(3), -2.0,
                           1e-7, jnp.nan, -jnp.inf)), [randn(rng, 2)]

    @case("return_input")
    def _(rng):
        return (lambda x: x), [randn(rng, 3)]

    @case("return_literal")
    def _(rng):
        return (lambda x: 1.0), [randn(rng, 3)]

    @case("return_input_twice")
    def _(rng):
        return (lambda x, y: (y, x, y)), [randn(rng, 2), randn(rng, 1)]

    @case("empty_no_args")
    def _(rng):
        return (lambda: ()), []

    @case("flat_let_semicolons")
    def _(rng):
        return (lambda x: jnp.sin(jnp.cos(x))), [np.asarray(0.5, dtype=f32)]

    @case("multi_output")
    def _(rng):
        def f(x, y):
            s = x + y
            return s, x * y, {"a": jnp.sum(s), "b": (x - y, 7)}
        return f, [randn(rng, 3), randn(rng, 3)]

    @case("dropvar_unused_eqn")
    def _(rng):
        def f(x):
            _unused = jnp.sin(x)  # traced, not returned -> printed as `_`
            return x * 2.0
        return f, [randn(rng, 3)]

    @case("constvar_closure")
    def _(rng):
        w = randn(rng, 3)
        m = randn(rng, 2, 3)
        return (lambda x: m @ (x * w) + np.float32(0.5)), [randn(rng, 3)]

    @case("constvar_no_args")
    def _(rng):
        c = np.arange(4, dtype=np.int32)
        return (lambda: c * 2 + jnp.arange(4, dtype=np.int32)), []

    @case("many_vars_naming")
    def _(rng):
        def f(x):
            for k in range(30):
                x = jnp.sin(x) if k % 2 else x * 1.01
            return x
        return f, [randn(rng, 2)]

    @case("long_line_wrapping")
    def _(rng):
        args = [randn(rng, 1, 2) for _ in range(28)]
        def f(*xs):
            return lax.concatenate(list(xs), 0), lax.sort(xs[:6], num_keys=1)
        return f, args

    # ------------------------------------------------------------------
    # dtypes
    # ------------------------------------------------------------------
    @case("f16_arith")
    def _(rng):
        a = fvec([1.0, -0.0, 65504.0, 6e-8, NAN, INF, 0.1, 3.0], np.float16)
        b = randn(rng, 8).astype(np.float16)
        return (lambda a, b: (a + b, a * b, jnp.exp(a), jnp.sqrt(jnp.abs(a)),
                              a / b, jnp.sum(a[:4]))), [a, b]

    @case("bf16_arith")
    def _(rng):
        a = fvec([1.0, -0.0, 3e38, 1e-40, NAN, INF, 0.1, 3.0]).astype(jnp.bfloat16)
        b = randn(rng, 8).astype(jnp.bfloat16)
        return (lambda a, b: (a + b, a * b, jnp.tanh(a), a.astype(np.float32),
                              jnp.maximum(a, b))), [a, b]

    @case("u8_arith")
    def _(rng):
        a = np.asarray([0, 1, 127, 128, 200, 255], dtype=np.uint8)
        b = np.asarray([1, 255, 1, 128, 100, 2], dtype=np.uint8)
        return (lambda a, b: (a + b, a - b, a * b, a // b, a % b, a & b,
                              a | b, ~a, a < b, a >> 1)), [a, b]

    @case("i8_arith")
    def _(rng):
        a = np.asarray([-128, -1, 0, 1, 127, 100], dtype=np.int8)
        b = np.asarray([1, 3, -5, 7, 1, 100], dtype=np.int8)
        return (lambda a, b: (a + b, a - b, a * b, lax.div(a, b),
                              lax.rem(a, b), -a, jnp.abs(a))), [a, b]

    @case("u32_arith")
    def _(rng):
        a = np.asarray([0, 1, 0xFFFFFFFF, 0x80000000, 12345], dtype=np.uint32)
        b = np.asarray([1, 2, 2, 3, 0xFFFFFFFF], dtype=np.uint32)
        return (lambda a, b: (a + b, a - b, a * b, a // b, a % b,
                              jnp.maximum(a, b), a ^ b)), [a, b]

    @case("scalars_f32")
    def _(rng):
        return (lambda a, b: (a * b + 1.0, jnp.sin(a), a > b, jnp.maximum(a, b))
                ), [np.asarray(1.5, dtype=f32), np.asarray(-2.0, dtype=f32)]

    @case("zero_size")
    def _(rng):
        e = np.zeros((0,), dtype=f32)
        z = np.zeros((2, 0), dtype=np.int32)
        x = randn(rng, 3)
        return (lambda e, z, x: (jnp.sum(e), jnp.concatenate([e, x]), e * 2.0,
                                 jnp.max(z, axis=1, initial=-1), z.T, jnp.prod(e),
                                 jnp.sort(e))), [e, z, x]

    @case("weak_type_scalars")
    def _(rng):
        def f(s, x, i):
            y = x * s + 2           # s is a weak-typed f32[] invar
            k = i + 3               # i is a weak-typed i32[] invar
            return y, k, jnp.asarray(s) * 2, lax.convert_element_type(k, np.float32)
        return f, [1.5, randn(rng, 3), 4]

    @case("weak_type_convert")
    def _(rng):
        # Python int argument -> weak i32[] invar; promoting it to float
        # prints convert_element_type[... weak_type=True].
        return (lambda i, x: (jnp.sin(i), i * 1.5, x * i)), [3, randn(rng, 3)]

    # ------------------------------------------------------------------
    # Extra primitives (gather/scatter, split, reduce_precision, ...)
    # ------------------------------------------------------------------
    @case("gather_scatter")
    def _(rng):
        x = randn(rng, 5)
        i = np.asarray([0, 4, -1, 2], dtype=np.int32)
        return (lambda x, i: (x[i], x.at[i].add(1.0), x.at[i].set(0.0),
                              x.at[i].max(0.5), jnp.take(x, i, mode="clip"))
                ), [x, i]

    @case("split_reduce_precision")
    def _(rng):
        x = randn(rng, 6)
        return (lambda x: (*jnp.split(x, [2, 5]),
                           lax.reduce_precision(x, exponent_bits=5, mantissa_bits=10),
                           lax.reduce_precision(x, exponent_bits=8, mantissa_bits=7))
                ), [x]

    @case("logsumexp_softmax")
    def _(rng):
        x = randn(rng, 2, 4)
        return (lambda x: (jax.nn.logsumexp(x, axis=1), jax.nn.softmax(x),
                           jax.nn.log_softmax(x, axis=0))), [x]

    @case("cumlogsumexp_reduce_window")
    def _(rng):
        x = randn(rng, 6)
        y = randn(rng, 1, 4, 4, 1)
        return (lambda x, y: (lax.cumlogsumexp(x),
                              lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1),
                                                (1, 2, 2, 1), "VALID"),
                              lax.reduce_window(y, 0.0, lax.add, (1, 3, 3, 1),
                                                (1, 1, 1, 1), "SAME"))), [x, y]

    @case("conv_general")
    def _(rng):
        x = randn(rng, 1, 2, 5, 5)
        w = randn(rng, 3, 2, 2, 2)
        return (lambda x, w: lax.conv_general_dilated(
            x, w, (1, 1), "VALID")), [x, w]

    @case("top_k_clip_misc")
    def _(rng):
        x = randn(rng, 6)
        return (lambda x: (*lax.top_k(x, 3), jnp.clip(x, -0.5, 0.5),
                           jnp.mean(x), jnp.var(x), jnp.linalg.norm(x))), [x]

    # ------------------------------------------------------------------
    # Realistic programs
    # ------------------------------------------------------------------
    def mlp_params(rng):
        return (randn(rng, 4, 3), randn(rng, 3), randn(rng, 3, 2), randn(rng, 2))

    def mlp_loss(params, x, y):
        w1, b1, w2, b2 = params
        h = jnp.tanh(x @ w1 + b1)
        out = h @ w2 + b2
        return jnp.mean((out - y) ** 2)

    @case("mlp_loss")
    def _(rng):
        p = mlp_params(rng)
        return (lambda w1, b1, w2, b2, x, y: mlp_loss((w1, b1, w2, b2), x, y)
                ), [*p, randn(rng, 5, 4), randn(rng, 5, 2)]

    @case("grad_mlp_loss")
    def _(rng):
        p = mlp_params(rng)
        return (jax.grad(lambda w1, b1, w2, b2, x, y:
                         mlp_loss((w1, b1, w2, b2), x, y), argnums=(0, 1, 2, 3))
                ), [*p, randn(rng, 5, 4), randn(rng, 5, 2)]

    @case("jvp_mlp_loss")
    def _(rng):
        p = mlp_params(rng)
        x, y = randn(rng, 5, 4), randn(rng, 5, 2)
        def f(w1, t1):
            return jax.jvp(lambda w: mlp_loss((w, *p[1:]), x, y), (w1,), (t1,))
        return f, [p[0], randn(rng, 4, 3)]

    def softmax_xent(logits, labels):
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.sum(jax.nn.one_hot(labels, logits.shape[-1]) * logp,
                                 axis=-1))

    @case("softmax_xent")
    def _(rng):
        return softmax_xent, [randn(rng, 4, 5),
                              np.asarray([0, 4, 2, 1], dtype=np.int32)]

    @case("value_and_grad_softmax_xent")
    def _(rng):
        return jax.value_and_grad(softmax_xent), [
            randn(rng, 4, 5), np.asarray([0, 4, 2, 1], dtype=np.int32)]

    def layer_norm(x, g, b):
        mu = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
        return (x - mu) * lax.rsqrt(var + 1e-5) * g + b

    @case("layer_norm")
    def _(rng):
        return layer_norm, [randn(rng, 3, 6), randn(rng, 6), randn(rng, 6)]

    @case("vmap_layer_norm")
    def _(rng):
        return (jax.vmap(layer_norm, in_axes=(0, None, None))
                ), [randn(rng, 4, 2, 6), randn(rng, 6), randn(rng, 6)]

    @case("grad_layer_norm")
    def _(rng):
        return jax.grad(lambda x, g, b: jnp.sum(layer_norm(x, g, b) ** 2),
                        argnums=(0, 1)), [randn(rng, 3, 6), randn(rng, 6),
                                          randn(rng, 6)]

    def logreg_loss(w, b, x, y):
        z = x @ w + b
        return jnp.mean(jnp.logaddexp(0.0, z) - y * z)

    @case("logreg_loss")
    def _(rng):
        return logreg_loss, [randn(rng, 3), np.asarray(0.1, dtype=f32),
                             randn(rng, 8, 3),
                             (rng.uniform(size=8) > 0.5).astype(f32)]

    @case("grad_logreg_loss")
    def _(rng):
        return jax.grad(logreg_loss, argnums=(0, 1)), [
            randn(rng, 3), np.asarray(0.1, dtype=f32), randn(rng, 8, 3),
            (rng.uniform(size=8) > 0.5).astype(f32)]

    @case("hessian_logreg_loss")
    def _(rng):
        x = randn(rng, 8, 3)
        y = (rng.uniform(size=8) > 0.5).astype(f32)
        return (jax.hessian(lambda w: logreg_loss(w, f32(0.1), x, y))
                ), [randn(rng, 3)]

    @case("vmap_grad_logistic")
    def _(rng):
        return (jax.vmap(jax.grad(lambda w, x: jax.nn.sigmoid(jnp.dot(w, x))),
                         in_axes=(None, 0))), [randn(rng, 3), randn(rng, 4, 3)]

    def rnn(wx, wh, h0, xs):
        def step(h, x):
            h = jnp.tanh(x @ wx + h @ wh)
            return h, jnp.sum(h)
        return lax.scan(step, h0, xs)

    @case("rnn_scan")
    def _(rng):
        return rnn, [randn(rng, 2, 3) * 0.5, randn(rng, 3, 3) * 0.5,
                     np.zeros(3, f32), randn(rng, 5, 2)]

    @case("grad_rnn_scan")
    def _(rng):
        return (jax.grad(lambda wx, wh, h0, xs: jnp.sum(rnn(wx, wh, h0, xs)[1]),
                         argnums=(0, 1))
                ), [randn(rng, 2, 3) * 0.5, randn(rng, 3, 3) * 0.5,
                    np.zeros(3, f32), randn(rng, 5, 2)]

    def newton_sqrt(a):
        def cond(s):
            x, k = s
            return (jnp.max(jnp.abs(x * x - a)) > 1e-5) & (k < 50)
        def body(s):
            x, k = s
            return 0.5 * (x + a / x), k + 1
        x, k = lax.while_loop(cond, body, (jnp.maximum(a, 1.0), 0))
        return x, k

    @case("newton_while")
    def _(rng):
        return newton_sqrt, [rng.uniform(0.5, 20, size=4).astype(f32)]

    @case("jvp_newton_while")
    def _(rng):
        return (lambda a, t: jax.jvp(lambda a: newton_sqrt(a)[0], (a,), (t,))
                ), [rng.uniform(0.5, 20, size=4).astype(f32), np.ones(4, f32)]

    @case("vmap_cond")
    def _(rng):
        return (jax.vmap(lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x))
                ), [np.asarray([True, False, True]), randn(rng, 3)]

    # ------------------------------------------------------------------
    # x64 cases (separate process, jax_enable_x64=True)
    # ------------------------------------------------------------------
    @case("x64_f64_math")
    def _(rng):
        x = np.asarray(EDGE_BASIC + [1e300, -1e-310, 0.1, 2.5]
                       + list(rng.uniform(-5, 5, 6)), dtype=np.float64)
        return (lambda x: (jnp.exp(x), jnp.sin(x), x * 0.1, x + 1e-300,
                           jnp.tanh(x), jnp.sqrt(jnp.abs(x)), jnp.sum(x[9:]))), [x]

    @case("x64_i64_arith")
    def _(rng):
        a = np.asarray([2**62, -2**63, 2**63 - 1, 5, -7, 0], dtype=np.int64)
        b = np.asarray([3, 1, 2, -2, 2, 9], dtype=np.int64)
        return (lambda a, b: (a + b, a * b, a // b, lax.rem(a, b), a + 1,
                              a * 3000000000, a >> 3, jnp.cumsum(a))), [a, b]

    @case("x64_convert_mixed")
    def _(rng):
        x = randn(rng, 4).astype(np.float64)
        i = np.asarray([1, -2, 3, 2**40], dtype=np.int64)
        s = randn(rng, 4)
        u = np.asarray([1, 2, 3, 2**63], dtype=np.uint64)
        return (lambda x, i, s, u: (x.astype(f32), i.astype(np.float64),
                                    s.astype(np.float64) + x, i.astype(np.int32),
                                    x + i, u.astype(np.float64), u + 1)
                ), [x, i, s, u]

    @case("x64_literals")
    def _(rng):
        def f(x, i):
            return (x * 2.0, x + 0.1, x * np.float64(1e-300), x + np.float64(1e300),
                    i + 2**40, i * -1, x * f32(0.1), jnp.arange(3), jnp.arange(3.0))
        return f, [randn(rng, 3).astype(np.float64),
                   np.asarray([1, 2, 3], dtype=np.int64)]

    @case("x64_newton_f64")
    def _(rng):
        return newton_sqrt, [rng.uniform(0.5, 20, size=4)]

    @case("x64_grad_mlp_f64")
    def _(rng):
        p = [a.astype(np.float64) for a in mlp_params(rng)]
        return (jax.grad(lambda w1, b1, w2, b2, x, y:
                         mlp_loss((w1, b1, w2, b2), x, y), argnums=0)
                ), [*p, randn(rng, 3, 4).astype(np.float64),
                    randn(rng, 3, 2).astype(np.float64)]

    @case("x64_fft_c128")
    def _(rng):
        x = rng.standard_normal(8)
        return (lambda x: (jnp.fft.rfft(x), jnp.fft.fft(x))), [x]


# --------------------------------------------------------------------------
# Introspection helpers
# --------------------------------------------------------------------------

SHORT = {"float16": "f16", "bfloat16": "bf16", "float32": "f32",
         "float64": "f64", "int8": "i8", "int16": "i16", "int32": "i32",
         "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32",
         "uint64": "u64", "bool": "bool", "complex64": "c64",
         "complex128": "c128"}


def short_dtype(dt) -> str:
    name = np.dtype(dt).name
    return SHORT.get(name, name)


def sub_jaxprs(params):
    from jax._src import core
    for _, v in sorted(params.items()):
        vals = v if isinstance(v, (tuple, list)) else (v,)
        for j in vals:
            # JAX 0.12 folded ClosedJaxpr into Jaxpr (consts attached).
            closed = getattr(core, "ClosedJaxpr", None)
            if closed is not None and isinstance(j, closed):
                yield j.jaxpr
            elif isinstance(j, core.Jaxpr):
                yield j


def walk_eqns(jaxpr):
    for eqn in jaxpr.eqns:
        yield eqn
        for sub in sub_jaxprs(eqn.params):
            yield from walk_eqns(sub)


def split_top(s: str) -> list[str]:
    """Split the inside of `prim[...]` into `k=v` items at top-level spaces
    that are followed by an identifier and '='."""
    items, depth, start = [], 0, 0
    pairs = {"(": ")", "[": "]", "{": "}"}
    closing = set(pairs.values())
    i = 0
    while i < len(s):
        ch = s[i]
        if ch in pairs:
            depth += 1
        elif ch in closing:
            depth -= 1
        elif ch == " " and depth == 0 and re.match(r"[A-Za-z_][A-Za-z0-9_]*=",
                                                   s[i + 1:]):
            items.append(s[start:i])
            start = i + 1
        i += 1
    items.append(s[start:])
    return [x for x in items if x]


def eqn_params_printed(eqn):
    """Return (prim_name, [(param, value_text)]) as the printer renders the
    equation on one line (params in printed order)."""
    from jax._src import core
    ctx = core.JaxprPpContext()
    settings = core.JaxprPpSettings()
    doc = core.pp_eqn(eqn, ctx, settings)
    try:
        line = doc.format(width=10**9, use_color=False)
    except TypeError:
        line = doc.format(width=10**9)
    line = line.strip()
    name = eqn.primitive.name
    m = re.search(r"(?:^| = )" + re.escape(name) + r"(\[| |$)", line)
    if not m or m.group(1) != "[":
        return name, []
    start = m.end()
    depth, i = 1, start
    while depth:
        ch = line[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        i += 1
    inner = line[start:i - 1]
    out = []
    for item in split_top(inner):
        k, _, v = item.partition("=")
        out.append((k, v))
    return name, out


ADDR_RE = re.compile(r" at 0x([0-9a-fA-F]+)")


def mask_addresses(s: str) -> str:
    """Mask Python object addresses the way JAX >= 0.7 does itself, so that
    printouts from older JAX (which print raw `<function f at 0x7f...>`
    params) are deterministic."""
    return ADDR_RE.sub(lambda m: " at 0x" + "X" * len(m.group(1)), s)


def abbreviate_value(v: str) -> str:
    v = mask_addresses(v)
    if v.startswith("{ lambda"):
        return "{ lambda ... }"
    if v.startswith("(") and "{ lambda" in v:
        return "({ lambda ... } ...)"
    if len(v) > 400:
        return v[:397] + "..."
    return v


def aval_info(aval):
    return {"dtype": short_dtype(aval.dtype), "shape": list(aval.shape),
            "weak_type": bool(getattr(aval, "weak_type", False))}


def to_numpy_for_save(a):
    """bf16 arrays are stored as their raw uint16 bit patterns."""
    a = np.asarray(a)
    if a.dtype.name == "bfloat16":
        return a.view(np.uint16), "bf16_bits_as_u16"
    return a, None


# --------------------------------------------------------------------------
# Pass runner (child process)
# --------------------------------------------------------------------------

def run_pass(which: str, out_dir: str, compat: bool, only: list[str] | None):
    import jax
    if which == "x64":
        jax.config.update("jax_enable_x64", True)
    try:
        jax.config.update("jax_platforms", "cpu")
    except Exception:
        pass
    try:
        jax.config.update("jax_pprint_use_color", False)
    except Exception:
        pass
    register_all()
    version = jax.__version__
    os.makedirs(out_dir, exist_ok=True)
    manifest_cases, skipped, params_seen = {}, {}, {}
    for name, builder in CASES:
        if (name.startswith("x64_")) != (which == "x64"):
            continue
        if only and name not in only:
            continue
        rng = np.random.default_rng(seed_of(name))
        try:
            f, args = builder(rng)
            closed = jax.make_jaxpr(f)(*args)
            text = str(closed)
            if compat:
                text = mask_addresses(text)
            elif ADDR_RE.search(text):
                raise RuntimeError(f"{name}: unmasked address in printout")
        except Exception as e:  # noqa: BLE001 - older JAX may lack features
            if not compat:
                raise
            msg = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            skipped[name] = msg[:300]
            continue
        with open(os.path.join(out_dir, f"{name}.jaxpr"), "w") as fh:
            fh.write(text + "\n")

        prims = set()
        for eqn in walk_eqns(closed.jaxpr):
            prims.add(eqn.primitive.name)
            try:
                pname, plist = eqn_params_printed(eqn)
            except Exception:  # noqa: BLE001
                continue
            ent = params_seen.setdefault(pname, {"orders": {}, "examples": {},
                                                 "count": 0})
            ent["count"] += 1
            order = " ".join(k for k, _ in plist)
            ent["orders"].setdefault(order, name)
            for k, v in plist:
                ex = ent["examples"].setdefault(k, [])
                av = abbreviate_value(v)
                if av not in ex and len(ex) < 4:
                    ex.append(av)

        entry = {"jaxpr": f"{name}.jaxpr", "x64": which == "x64",
                 "primitives": sorted(prims),
                 "num_constvars": len(closed.jaxpr.constvars)}
        if not compat:
            inputs = []
            for k, (a, aval) in enumerate(zip(args, closed.in_avals)):
                arr = np.asarray(a, dtype=aval.dtype) if np.ndim(a) == 0 and \
                    not isinstance(a, np.ndarray) else np.asarray(a)
                arr, storage = to_numpy_for_save(arr)
                fn = f"{name}.in{k}.npy"
                np.save(os.path.join(out_dir, fn), arr, allow_pickle=False)
                info = aval_info(aval)
                info["file"] = fn
                if storage:
                    info["storage"] = storage
                inputs.append(info)
            outs = jax.jit(f)(*args)
            leaves = jax.tree_util.tree_leaves(outs)
            assert len(leaves) == len(closed.out_avals), name
            outputs = []
            for k, (o, aval) in enumerate(zip(leaves, closed.out_avals)):
                arr = np.asarray(o)
                if arr.dtype != np.dtype(aval.dtype):
                    arr = arr.astype(aval.dtype)
                arr, storage = to_numpy_for_save(arr)
                fn = f"{name}.out{k}.npy"
                np.save(os.path.join(out_dir, fn), arr, allow_pickle=False)
                info = aval_info(aval)
                info["file"] = fn
                if storage:
                    info["storage"] = storage
                outputs.append(info)
            consts = []
            for k, (c, v) in enumerate(zip(closed.consts,
                                           closed.jaxpr.constvars)):
                arr, storage = to_numpy_for_save(np.asarray(c))
                fn = f"{name}.const{k}.npy"
                np.save(os.path.join(out_dir, fn), arr, allow_pickle=False)
                info = aval_info(v.aval)
                info["file"] = fn
                if storage:
                    info["storage"] = storage
                consts.append(info)
            entry["consts"] = consts
            entry["inputs"] = inputs
            entry["outputs"] = outputs
        manifest_cases[name] = entry
    return {"jax_version": version, "cases": manifest_cases, "skipped": skipped,
            "params": params_seen}


# --------------------------------------------------------------------------
# Parent: spawn passes and merge
# --------------------------------------------------------------------------

REQUIRED = """neg sign floor ceil round is_finite exp exp2 log log1p expm1 tanh
logistic sin cos tan asin acos atan sinh cosh asinh acosh atanh sqrt rsqrt cbrt
square abs erf erfc erf_inv integer_pow not add sub mul div rem pow max min
atan2 nextafter and or xor shift_left shift_right_logical
shift_right_arithmetic eq ne lt le gt ge select_n clamp broadcast_in_dim reshape
transpose squeeze rev reduce_sum reduce_max reduce_min reduce_prod reduce_and
reduce_or argmax argmin cumsum cumprod cummax cummin dot_general slice
dynamic_slice dynamic_update_slice concatenate pad iota convert_element_type
bitcast_convert_type copy stop_gradient sort fft cond while scan jit
custom_jvp_call custom_vjp_call""".split()


def merge_params(parts):
    merged = {}
    for part in parts:
        for prim, ent in part["params"].items():
            m = merged.setdefault(prim, {"orders": {}, "examples": {}, "count": 0})
            m["count"] += ent["count"]
            for order, case_name in ent["orders"].items():
                m["orders"].setdefault(order, case_name)
            for k, vals in ent["examples"].items():
                ex = m["examples"].setdefault(k, [])
                for v in vals:
                    if v not in ex and len(ex) < 4:
                        ex.append(v)
    # Summarize: printed param names in order of the most complete ordering.
    out = {}
    for prim in sorted(merged):
        m = merged[prim]
        orders = sorted(m["orders"].items())
        all_names = []
        for order, _ in orders:
            for k in order.split():
                if k not in all_names:
                    all_names.append(k)
        always = [k for k in all_names
                  if all(k in o.split() for o, _ in orders)]
        out[prim] = {
            "eqn_count": m["count"],
            "printed_orders": {o if o else "(no params)": c for o, c in orders},
            # A list (not a dict) so that the printed order survives
            # json.dump(sort_keys=True).
            "params": [{"name": k, "always_printed": k in always,
                        "examples": m["examples"].get(k, [])}
                       for k in all_names],
        }
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None,
                    help="output dir (default fixtures/golden, or "
                         "fixtures/compat/<jax version> with --compat)")
    ap.add_argument("--compat", action="store_true",
                    help="printouts only; skip cases that fail on this JAX")
    ap.add_argument("--pass", dest="which", choices=["normal", "x64"],
                    help="internal: run one pass in this process")
    ap.add_argument("--partial", help="internal: partial manifest path")
    ap.add_argument("--only", nargs="*", help="only these cases (debugging)")
    ap.add_argument("--list", action="store_true", help="list case names")
    args = ap.parse_args()

    if args.list:
        register_all()
        for name, _ in CASES:
            print(name)
        return

    if args.which:
        res = run_pass(args.which, args.out, args.compat, args.only)
        with open(args.partial, "w") as fh:
            json.dump(res, fh, sort_keys=True)
        return

    if args.out is None:
        if args.compat:
            import jax
            args.out = os.path.join(ROOT, "fixtures", "compat", jax.__version__)
        else:
            args.out = os.path.join(ROOT, "fixtures", "golden")
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    if not args.only:
        # Remove generated files from a previous run (keep hand-written docs).
        for fn in os.listdir(out):
            if fn.endswith((".jaxpr", ".npy")) or fn in ("MANIFEST.json",
                                                         "PARAMS.json"):
                os.remove(os.path.join(out, fn))

    parts = []
    for which in ("normal", "x64"):
        partial = os.path.join(out, f".partial-{which}.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--pass", which,
               "--out", out, "--partial", partial]
        if args.compat:
            cmd.append("--compat")
        if args.only:
            cmd += ["--only", *args.only]
        env = dict(os.environ, JAX_PLATFORMS="cpu")
        subprocess.run(cmd, check=True, env=env)
        with open(partial) as fh:
            parts.append(json.load(fh))
        os.remove(partial)

    version = parts[0]["jax_version"]
    cases = {}
    skipped = {}
    for p in parts:
        cases.update(p["cases"])
        skipped.update(p["skipped"])
    covered = sorted({pr for c in cases.values() for pr in c["primitives"]})
    # `jit` was printed as `pjit` before JAX 0.7.
    def have(pr):
        return pr in covered or (pr == "jit" and "pjit" in covered)
    manifest = {
        "jax_version": version,
        "generator": "tools/oracle/gen_golden.py",
        "mode": "compat" if args.compat else "golden",
        "num_cases": len(cases),
        "cases": cases,
        "skipped": skipped,
        "primitives_covered": covered,
        "required_primitives_missing": [p for p in REQUIRED if not have(p)],
        "extra_primitives": [p for p in covered if p not in REQUIRED],
        "notes": [
            "<case>.jaxpr holds exactly str(jax.make_jaxpr(f)(*args)) + '\\n'.",
            "Cases named x64_* were traced/run with jax_enable_x64=True.",
            "consts lists the values of the jaxpr constvars (in order), saved "
            "as <case>.const<k>.npy; they are not part of the printed text.",
            "inputs/outputs list the flattened (pytree-leaf) avals from the "
            "jaxpr's in_avals/out_avals; outputs were computed with jax.jit "
            "on CPU.",
            "storage=bf16_bits_as_u16: the .npy holds the raw bfloat16 bit "
            "patterns as uint16.",
            "weak_type=true inputs were Python scalars at trace time; the .npy "
            "holds them as 0-d arrays of the printed dtype.",
        ] + (["compat mode: printouts only; ' at 0x<hex>' object addresses "
              "are masked to ' at 0xXXXX...' (same length) for determinism, "
              "as JAX >= 0.7 does itself; otherwise the text is exactly "
              "str(jax.make_jaxpr(f)(*args))."] if args.compat else []),
    }
    if not args.only:
        with open(os.path.join(out, "MANIFEST.json"), "w") as fh:
            json.dump(manifest, fh, sort_keys=True, indent=1)
            fh.write("\n")
        with open(os.path.join(out, "PARAMS.json"), "w") as fh:
            json.dump({"jax_version": version, "primitives": merge_params(parts)},
                      fh, sort_keys=True, indent=1)
            fh.write("\n")
    print(f"jax {version}: {len(cases)} cases written to {out}; "
          f"{len(skipped)} skipped; missing required: "
          f"{manifest['required_primitives_missing']}")


if __name__ == "__main__":
    main()
