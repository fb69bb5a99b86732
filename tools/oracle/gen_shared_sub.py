#!/usr/bin/env python3
"""Generate fixtures/shared_sub/: programs whose JAX 0.12 printout shares or
names sub-jaxprs (hoisted `let f = { ... } in`, one name for jaxprs of
different shapes, one jaxpr called with different operands, inline and
hoisted definitions mixed), with JAX's forward, jvp and grad results, for
tests/transforms/test_shared_sub.c (issues 16 and 28).

Usage: .venv-oracle/bin/python tools/oracle/gen_shared_sub.py

Per case (float32):
  <case>.jaxpr        str(jax.make_jaxpr(f)(*args)) + "\\n"
  <case>.in<k>.npy    the arguments (seeded by crc32 of the name)
  <case>.out<k>.npy   f(*args)
  <case>.jvp<k>.npy   the output tangents of jax.jvp(f, args, ones)
  <case>.grad<k>.npy  jax.grad(f, argnums=0, has_aux=...)(*args): the
                      gradient, then the aux outputs when f has more than
                      one output
and MANIFEST.json with the jax version and, per case, the number of inputs,
outputs and grad outputs. PRINT_CASES (print_only in the manifest) write
only <case>.jaxpr: programs whose sub-jaxprs have constvars.
"""

from __future__ import annotations

import json
import os
import zlib

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "fixtures", "shared_sub")
CASES = []


def case(name):
    def deco(builder):
        CASES.append((name, builder))
        return builder
    return deco


def randn(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@case("resize_two_shapes")  # issue 28: every gradient element wrong, aux a scalar
def _(rng):
    def f(x):
        r = jax.image.resize(x, (9, 12, 3), "linear")
        r2 = jax.image.resize(x, (3, 4, 3), "linear")
        return jnp.sum(r ** 2) + jnp.sum(r2), r
    return f, (randn(rng, 6, 8, 3),)


@case("resize_mean_target")
def _(rng):
    def f(x):
        t = jnp.cos(jnp.arange(9 * 12 * 3, dtype=jnp.float32)).reshape(9, 12, 3)
        r = jax.image.resize(x, (9, 12, 3), "linear")
        s = jax.image.resize(x * 2.0, (4, 5, 3), "cubic")
        return jnp.mean((r - t) ** 2) + jnp.sum(jnp.sin(s)), s
    return f, (randn(rng, 6, 8, 3),)


@case("linspace_scan_body")  # issue 16: the jvp's scan body took other literals
def _(rng):
    def f(x):
        def body(c, s):
            for _ in range(4):
                c = jnp.tanh(c * 0.5 + jnp.sin(s)) * 1.25
            return c, c * 3.0
        xs = jnp.linspace(0., 1., 5) * x
        c, ys = jax.lax.scan(body, x, xs)
        return c + ys.sum()
    return f, (np.float32(1.5),)


@case("linspace_scan_inline")
def _(rng):
    def f(x):
        def body(c, s):
            return c * 0.5 + jnp.sin(s), c
        xs = jnp.linspace(0., 1., 5) * x
        c, ys = jax.lax.scan(body, x, xs)
        return c + ys.sum()
    return f, (np.float32(1.5),)


@case("where_helpers")
def _(rng):
    def f(x):
        r = jnp.where(x > 0, x, 0.1 * x)
        s = jnp.where(x[:2] > 0.5, x[:2] ** 2, 1.0)
        return jnp.sum(r ** 2) + jnp.sum(s), r
    return f, (randn(rng, 6, 8, 3),)


@case("nn_helpers")
def _(rng):
    def f(x):
        y = jax.nn.gelu(x)
        z = jax.nn.softplus(x[0])
        w = jnp.clip(x, -0.5, 0.5)
        u = jax.nn.softplus(x[1:3] * 2.0)
        return jnp.sum(y) + jnp.sum(z) + jnp.sum(w ** 3) + jnp.sum(u), y
    return f, (randn(rng, 4, 5),)


@case("jit_twice_big")
def _(rng):
    @jax.jit
    def g(x):
        y = x
        for _ in range(12):
            y = jnp.sin(y) * 1.5
        return y
    def f(x):
        return g(x).sum() + g(x * 2.0 + 1.0).sum() * 0.5
    return f, (randn(rng, 3),)


@case("scatter_shared_update")
def _(rng):
    def f(x):
        seg = jnp.arange(5) // 2
        a = x.at[1].add(2.0) + x.at[2].add(3.0)
        b = jax.ops.segment_sum(x * x, seg, 3).sum()
        return jnp.sum(a * a) + b
    return f, (randn(rng, 5),)


# Printouts only (no arrays): sub-jaxprs with constvars, i.e. functions that
# close over arrays (a hoisted or inline jit, a custom_jvp/custom_vjp, cond
# branches, a scan body, a while loop, nested jits). Their constants live in
# the ClosedJaxpr, not in the text, so these are print checks: `ftc print`
# must reproduce JAX's text byte for byte (test_shared_sub.c).
PRINT_CASES = []


def print_case(name):
    def deco(builder):
        PRINT_CASES.append((name, builder))
        return builder
    return deco


_C = np.arange(3, dtype=np.float32)
_D = np.arange(6, dtype=np.float32).reshape(2, 3)


@print_case("consts_jit_hoisted")
def _():
    @jax.jit
    def g(y):
        return y * jnp.asarray(_C) + 1.0
    return lambda x: g(x) + g(x * 2)


@print_case("consts_jit_inline")
def _():
    @jax.jit
    def g(y):
        return y * jnp.asarray(_C) + 1.0
    return lambda x: g(x)


@print_case("consts_jit_nested")
def _():
    @jax.jit
    def g(y):
        @jax.jit
        def k(z):
            return z - jnp.asarray(_D)[0]
        return k(y) * jnp.asarray(_C)
    return lambda x: g(x) + g(x + 1.0)


@print_case("consts_jit_in_scan")
def _():
    @jax.jit
    def g(y):
        return jnp.sin(y) * jnp.asarray(_C)

    def body(carry, s):
        return g(carry) + s, carry
    return lambda x: jax.lax.scan(body, x, jnp.ones((4, 3), jnp.float32))


@print_case("consts_two_jits")
def _():
    @jax.jit
    def g(y):
        return y * jnp.asarray(_C)

    @jax.jit
    def g2(y):
        return y @ jnp.asarray(_D).T
    return lambda x: (g(x), g2(x), g(x * 3))


@print_case("consts_custom_jvp")
def _():
    @jax.custom_jvp
    def h(x):
        return jnp.sin(x) * jnp.asarray(_C)

    @h.defjvp
    def hj(p, t):
        return h(p[0]), t[0] * jnp.asarray(_C)
    return lambda x: h(x).sum()


@print_case("consts_custom_vjp_grad")
def _():
    @jax.custom_vjp
    def h(x):
        return jnp.sin(x) * jnp.asarray(_C)

    def hf(x):
        return h(x), jnp.cos(x)

    def hb(r, g):
        return (g * r * jnp.asarray(_C),)
    h.defvjp(hf, hb)
    return lambda x: (h(x).sum(), jax.grad(lambda y: h(y).sum())(x))


@print_case("consts_cond_branches")
def _():
    return lambda x: jax.lax.cond(x[0] > 0, lambda y: y * jnp.asarray(_C), lambda y: y - jnp.asarray(_C), x)


@print_case("consts_jit_cond")
def _():
    @jax.jit
    def g(y):
        return jax.lax.cond(y[0] > 0, lambda z: z * jnp.asarray(_C), lambda z: z, y)
    return lambda x: g(x) + g(-x)


@print_case("consts_while")
def _():
    return lambda x: jax.lax.while_loop(lambda v: v[0] < jnp.asarray(_C)[2] * 5,
                                        lambda v: v + jnp.asarray(_C), x)


@case("nn_softmax_onehot")
def _(rng):
    def f(x):
        lab = jax.nn.one_hot(jnp.arange(4) % 3, 5)
        p = jax.nn.log_softmax(x, axis=-1)
        q = jax.nn.softmax(x[:2] * 2.0, axis=0)
        r = jax.nn.logsumexp(x[1:], axis=1)
        return -jnp.sum(lab * p) + jnp.sum(q * q) + jnp.sum(r), q
    return f, (randn(rng, 4, 5),)


@case("where_in_scan")
def _(rng):
    def f(x):
        def body(c, s):
            c = jnp.where(c > s, c * 0.5, s - c)
            return c, jnp.where(s > 0, c, -c)
        c, ys = jax.lax.scan(body, x[0], x[1:])
        w = jnp.where(x > 0.1, x, 0.0)
        return jnp.sum(c) + jnp.sum(ys ** 2) + jnp.sum(w), ys
    return f, (randn(rng, 5, 3),)


@case("linspace_two_shapes")
def _(rng):
    def f(x):
        xp = jnp.linspace(-2.0, 2.0, 6)
        y = jnp.sin(xp * x) * 2.0
        z = jnp.linspace(0.0, 1.0, 4) * x[:4]
        w = jnp.linspace(x[0], x[1], 3)
        return jnp.sum(y * x) + jnp.sum(z ** 2) + jnp.sum(jnp.cos(w))
    return f, (randn(rng, 6),)


def save(name, what, arrays):
    for k, a in enumerate(arrays):
        np.save(os.path.join(OUT, f"{name}.{what}{k}.npy"), np.asarray(a))


def main():
    os.makedirs(OUT, exist_ok=True)
    manifest = {"jax": jax.__version__, "cases": {}}
    for name, builder in CASES:
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        f, args = builder(rng)
        args = tuple(jnp.asarray(a) for a in args)
        with open(os.path.join(OUT, name + ".jaxpr"), "w") as fh:
            fh.write(str(jax.make_jaxpr(f)(*args)) + "\n")
        outs = f(*args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        has_aux = len(outs) > 1
        save(name, "in", args)
        save(name, "out", outs)
        tangents = tuple(np.ones_like(a) for a in args)
        _, touts = jax.jvp(f, args, tangents)
        save(name, "jvp", touts if isinstance(touts, tuple) else (touts,))
        if has_aux:
            g, aux = jax.grad(lambda *a: (f(*a)[0], f(*a)[1:]), has_aux=True)(*args)
            grads = (g, *aux)
        else:
            grads = (jax.grad(f)(*args),)
        save(name, "grad", grads)
        manifest["cases"][name] = {"n_in": len(args), "n_out": len(outs), "has_aux": has_aux}
    manifest["print_only"] = []
    for name, builder in PRINT_CASES:
        f = builder()
        with open(os.path.join(OUT, name + ".jaxpr"), "w") as fh:
            fh.write(str(jax.make_jaxpr(f)(jnp.ones(3, jnp.float32))) + "\n")
        manifest["print_only"].append(name)
    with open(os.path.join(OUT, "MANIFEST.json"), "w") as fh:
        json.dump(manifest, fh, indent=1, sort_keys=True)
        fh.write("\n")
    print(f"jax {jax.__version__}: {len(CASES)} cases written to {OUT}")


if __name__ == "__main__":
    main()
