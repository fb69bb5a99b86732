#!/usr/bin/env python3
"""Generate fixtures/ad_window/: JAX's gradients through pooling and
convolution, for tests/transforms/test_ad_window.c.

Usage: .venv-oracle/bin/python tools/oracle/gen_ad_window.py

Per case (float64, jax_enable_x64):
  <case>.jaxpr      str(jax.make_jaxpr(loss)(*args)) + "\\n"
  <case>.in<k>.npy  the arguments (seeded)
  <case>.grad<k>.npy jax.grad(loss, argnums)(*args), one file per argnum
and MANIFEST.json: per case, the jax version and the argnums. Cases with
argnums None are forward mode: in1 is the tangent of in0 (not an argument
of the jaxpr) and grad0 is the output tangent of jax.jvp.
Pooling inputs are small integers so that windows have ties: the tie rule
(first position in window order wins) is part of what is checked.
"""

from __future__ import annotations

import json
import os
import zlib

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "fixtures", "ad_window")

CASES = []


def case(name, argnums):
    def deco(builder):
        CASES.append((name, argnums, builder))
        return builder
    return deco


def ties(rng, shape, k=4):
    return rng.integers(0, k, size=shape).astype(np.float64)


def normal(rng, shape):
    return rng.standard_normal(shape)


@case("maxpool_nhwc_ties", (0,))
def maxpool_nhwc_ties(rng):
    def f(x, w):
        y = lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1),
                              ((0, 0), (1, 1), (1, 1), (0, 0)))
        return jnp.sum(y * w)
    x = ties(rng, (2, 6, 6, 3))
    return f, [x, normal(rng, (2, 3, 3, 3))]


@case("minpool_dilated_ties", (0,))
def minpool_dilated_ties(rng):
    def f(x, w):
        y = lax.reduce_window(x, jnp.inf, lax.min, (1, 3), (1, 2), ((0, 0), (2, 1)),
                              base_dilation=(1, 2))
        return jnp.sum(y * w)
    x = ties(rng, (2, 9))
    return f, [x, normal(rng, (2, 9))]


# JAX's VJP refuses window dilation for max/min pooling; its JVP does not.
@case("maxpool_window_dilation_jvp", None)
def maxpool_window_dilation_jvp(rng):
    def f(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (2, 3), (1, 2), ((1, 0), (2, 2)),
                                 window_dilation=(2, 2))
    x = ties(rng, (5, 8))
    return f, [x, normal(rng, (5, 8))]


@case("sumpool_dilated", (0,))
def sumpool_dilated(rng):
    def f(x, w):
        y = lax.reduce_window(x, 0.0, lax.add, (1, 3, 2), (1, 2, 1), ((0, 0), (1, 2), (0, 1)),
                              base_dilation=(1, 1, 2), window_dilation=(1, 2, 1))
        return jnp.sum(y * w)
    x = normal(rng, (2, 7, 5))
    y = jax.eval_shape(lambda x: lax.reduce_window(
        x, 0.0, lax.add, (1, 3, 2), (1, 2, 1), ((0, 0), (1, 2), (0, 1)),
        base_dilation=(1, 1, 2), window_dilation=(1, 2, 1)), x)
    return f, [x, normal(rng, y.shape)]


def conv_case(lhs_shape, rhs_shape, dn, **kw):
    def conv(x, k):
        return lax.conv_general_dilated(x, k, dimension_numbers=dn, **kw)

    def build(rng):
        x, k = normal(rng, lhs_shape), normal(rng, rhs_shape)
        y = jax.eval_shape(conv, x, k)

        def f(x, k, w):
            return jnp.sum(conv(x, k) * w)
        return f, [x, k, normal(rng, y.shape)]
    return build


case("conv_nhwc_groups", (0, 1))(conv_case(
    (2, 7, 6, 4), (3, 2, 2, 6), ("NHWC", "HWIO", "NHWC"), window_strides=(2, 1),
    padding=((1, 2), (0, 1)), rhs_dilation=(1, 2), feature_group_count=2))
case("conv_nchw_lhs_dilation_batch_groups", (0, 1))(conv_case(
    (4, 3, 5, 5), (4, 3, 2, 3), ("NCHW", "OIHW", "NCHW"), window_strides=(1, 2),
    padding=((1, 0), (2, 1)), lhs_dilation=(2, 1), batch_group_count=2))


@case("convnet", (0, 1, 2))
def convnet(rng):
    dn = ("NCHW", "OIHW", "NCHW")

    def f(x, k1, k2, w):
        h = lax.conv_general_dilated(x, k1, (1, 1), ((1, 1), (1, 1)), dimension_numbers=dn)
        h = jnp.tanh(h)
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        h = lax.conv_general_dilated(h, k2, (1, 1), "VALID", dimension_numbers=dn,
                                     feature_group_count=2)
        return jnp.sum(h * w)
    return f, [normal(rng, (2, 1, 6, 6)), 0.5 * normal(rng, (4, 1, 3, 3)),
               0.5 * normal(rng, (2, 2, 2, 2)), normal(rng, (2, 2, 2, 2))]


def main():
    os.makedirs(OUT, exist_ok=True)
    manifest = {"jax": jax.__version__, "cases": {}}
    for name, argnums, builder in CASES:
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        f, args = builder(rng)
        with open(os.path.join(OUT, name + ".jaxpr"), "w") as fh:
            fh.write(str(jax.make_jaxpr(f)(*args[:1] if argnums is None else args)) + "\n")
        for k, a in enumerate(args):
            np.save(os.path.join(OUT, f"{name}.in{k}.npy"), np.asarray(a), allow_pickle=False)
        if argnums is None:  # forward mode: args are (x, tangent of x)
            grads = [jax.jvp(f, (args[0],), (args[1],))[1]]
        else:
            grads = jax.grad(f, argnums=argnums)(*args)
        for k, g in enumerate(grads):
            np.save(os.path.join(OUT, f"{name}.grad{k}.npy"), np.asarray(g), allow_pickle=False)
        manifest["cases"][name] = {"argnums": None if argnums is None else list(argnums),
                                   "n_in": len(args)}
    with open(os.path.join(OUT, "MANIFEST.json"), "w") as fh:
        json.dump(manifest, fh, indent=1, sort_keys=True)
        fh.write("\n")


if __name__ == "__main__":
    main()
