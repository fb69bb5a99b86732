#!/usr/bin/env python3
"""Generate the loop conformance fixtures (fixtures/loops/) from real JAX:
programs built on scan, fori_loop, while_loop and jax.checkpoint (sequence
models, ODE integrators, optimizers that run a fixed number of steps,
buffer writes, pytree carries with integer counters and flags, cond and
switch inside loop bodies, nested loops), each with the transforms JAX
defines for it (grad, jvp, vmap, hessian, ...).

The format is gen_conformance.py's (fixtures/conformance/; see its
docstring): <case>.jaxpr, <case>.<T>.jaxpr, <case>.npys and one
MANIFEST.json. tests/conformance runs this directory after the conformance
one (conf_opts.loops_dir).

Usage:

  .venv-oracle/bin/python tools/oracle/gen_loops.py          # everything
  .venv-oracle/bin/python tools/oracle/gen_loops.py --list
  .venv-oracle/bin/python tools/oracle/gen_loops.py --out DIR --only NAME...

The capture, the transforms (jvp gives integer operands float0 tangents
of their shape) and the command line are gen_conformance.py's (imported, as
gen_sweep.py does); this file holds the registry.

Deterministic: seeds are crc32(case name). Every program exists in f32 and
in f64 (x64_ names, run in a child process with jax_enable_x64).
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import gen_conformance as gc  # noqa: E402  (case registry, capture, transforms)

OUT_DEFAULT = os.path.join(ROOT, "fixtures", "loops")

G, JV, VM, H, VG, JR, GG = "grad", "jvp", "vmap", "hessian", "vmap_grad", "jacrev", "grad_grad"
FULL = (G, JV, VM, H)


def register_loops():
    import jax
    import jax.numpy as jnp
    from jax import lax

    def rn(r, *shape, s=1.0):
        return (s * r.standard_normal(shape)).astype(np.float32)

    P = {}

    # ---------------------------------------------------------- sequence models
    def rnn(wx, wh, xs):
        def step(h, x):
            h = jnp.tanh(x @ wx + h @ wh)
            return h, h
        h, hs = lax.scan(step, jnp.zeros(wh.shape[0], xs.dtype), xs)
        return jnp.sum(hs ** 2) + jnp.sum(h)
    P["rnn"] = (lambda r: (rnn, [rn(r, 3, 4, s=.5), rn(r, 4, 4, s=.5), rn(r, 5, 3)]), FULL + (VG,))

    def lstm(w, u, b, xs):
        n = u.shape[0]

        def step(carry, x):
            h, c = carry
            z = x @ w + h @ u + b
            i, f, o, g = (jax.nn.sigmoid(z[:n]), jax.nn.sigmoid(z[n:2 * n]),
                          jax.nn.sigmoid(z[2 * n:3 * n]), jnp.tanh(z[3 * n:]))
            c = f * c + i * g
            h = o * jnp.tanh(c)
            return (h, c), h
        z0 = jnp.zeros(n, xs.dtype)
        (h, c), hs = lax.scan(step, (z0, z0), xs)
        return jnp.sum(hs * hs) + jnp.sum(c)
    P["lstm"] = (lambda r: (lstm, [rn(r, 2, 12, s=.5), rn(r, 3, 12, s=.5), rn(r, 12, s=.1),
                                   rn(r, 5, 2)]), (G, JV, VM, VG))

    def gru(w, u, xs):
        n = u.shape[0]

        def step(h, x):
            zx, zh = x @ w, h @ u
            z = jax.nn.sigmoid(zx[:n] + zh[:n])
            rr = jax.nn.sigmoid(zx[n:2 * n] + zh[n:2 * n])
            hh = jnp.tanh(zx[2 * n:] + rr * zh[2 * n:])
            h = (1 - z) * h + z * hh
            return h, None
        h, _ = lax.scan(step, jnp.ones(n, xs.dtype) * 0.1, xs)
        return jnp.sum(h ** 2)
    P["gru"] = (lambda r: (gru, [rn(r, 2, 9, s=.5), rn(r, 3, 9, s=.5), rn(r, 4, 2)]), (G, JV, VM))

    def rnn_rev(wh, xs):
        def step(h, x):
            h = jnp.sin(h @ wh) + x
            return h, jnp.sum(h)
        h, ys = lax.scan(step, jnp.zeros(wh.shape[0], xs.dtype), xs, reverse=True)
        return jnp.sum(ys * jnp.arange(1, xs.shape[0] + 1, dtype=xs.dtype)) + jnp.sum(h * h)
    P["rnn_reverse"] = (lambda r: (rnn_rev, [rn(r, 3, 3, s=.6), rn(r, 6, 3)]), FULL)

    def rnn_unroll(wh, xs):
        def step(h, x):
            h = jnp.tanh(h @ wh + x)
            return h, h[0]
        h, ys = lax.scan(step, jnp.zeros(wh.shape[0], xs.dtype), xs, unroll=2)
        return jnp.sum(ys) + jnp.sum(h ** 2)
    P["rnn_unroll2"] = (lambda r: (rnn_unroll, [rn(r, 3, 3, s=.6), rn(r, 5, 3)]), FULL)

    def birnn(wf, wb, xs):
        def mk(w):
            def step(h, x):
                h = jnp.tanh(h @ w + x)
                return h, h
            return step
        z = jnp.zeros(wf.shape[0], xs.dtype)
        _, hf = lax.scan(mk(wf), z, xs)
        _, hb = lax.scan(mk(wb), z, xs, reverse=True)
        return jnp.sum(hf * hb)
    P["birnn"] = (lambda r: (birnn, [rn(r, 3, 3, s=.5), rn(r, 3, 3, s=.5), rn(r, 4, 3)]), (G, JV, VM))

    def stacked(ws, xs):
        def layer(seq, w):
            def step(h, x):
                h = jnp.tanh(h @ w + x)
                return h, h
            _, out = lax.scan(step, jnp.zeros(w.shape[0], seq.dtype), seq)
            return out, jnp.sum(out[-1])
        out, lasts = lax.scan(layer, xs, ws)
        return jnp.sum(out ** 2) + jnp.sum(lasts)
    P["stacked_rnn_nested"] = (lambda r: (stacked, [rn(r, 2, 3, 3, s=.5), rn(r, 4, 3)]), FULL)

    def online_softmax(q, ks, vs):
        def step(c, kv):
            m, s, acc = c
            k, v = kv
            sc = jnp.dot(q, k)
            m2 = jnp.maximum(m, sc)
            s = s * jnp.exp(m - m2) + jnp.exp(sc - m2)
            acc = acc * jnp.exp(m - m2) + jnp.exp(sc - m2) * v
            return (m2, s, acc), None
        init = (jnp.array(-1e9, q.dtype), jnp.array(0.0, q.dtype), jnp.zeros(vs.shape[1], q.dtype))
        (m, s, acc), _ = lax.scan(step, init, (ks, vs))
        return jnp.sum((acc / s) ** 2)
    P["online_softmax"] = (lambda r: (online_softmax, [rn(r, 3), rn(r, 5, 3), rn(r, 5, 2)]), (G, JV, VM, H))

    def ema(alpha, xs):
        def step(m, x):
            m = alpha * m + (1 - alpha) * x
            return m, m
        _, ms = lax.scan(step, xs[0], xs)
        return jnp.sum(ms ** 2)
    P["ema_scalar_const"] = (lambda r: (ema, [np.float32(0.8), rn(r, 7)]), FULL)

    def conv1d_scan(k, xs):
        def step(buf, x):
            buf = jnp.concatenate([buf[1:], x[None]])
            return buf, jnp.dot(buf, k)
        _, ys = lax.scan(step, jnp.zeros(k.shape[0], xs.dtype), xs)
        return jnp.sum(jnp.tanh(ys))
    P["shift_register_conv"] = (lambda r: (conv1d_scan, [rn(r, 3), rn(r, 6)]), FULL)

    # ---------------------------------------------------------- ODE integrators
    def spring(x0, v0):
        def body(i, s):
            x, v = s
            a = -4.0 * x - 0.3 * v
            v = v + 0.05 * a
            return x + 0.05 * v, v
        x, v = lax.fori_loop(0, 25, body, (x0, v0))
        return jnp.sum(x * x + 0.5 * v * v)
    P["spring_euler"] = (lambda r: (spring, [rn(r, 3), rn(r, 3)]), FULL + (VG, JR))

    def pendulum_rk4(th0, w0):
        def f(s):
            th, w = s
            return w, -jnp.sin(th) - 0.1 * w

        def body(i, s):
            h = 0.1
            k1 = f(s)
            k2 = f(tuple(a + 0.5 * h * b for a, b in zip(s, k1)))
            k3 = f(tuple(a + 0.5 * h * b for a, b in zip(s, k2)))
            k4 = f(tuple(a + h * b for a, b in zip(s, k3)))
            return tuple(a + h / 6 * (b1 + 2 * b2 + 2 * b3 + b4)
                         for a, b1, b2, b3, b4 in zip(s, k1, k2, k3, k4))
        th, w = lax.fori_loop(0, 12, body, (th0, w0))
        return jnp.sum(jnp.cos(th)) + jnp.sum(w * w)
    P["pendulum_rk4"] = (lambda r: (pendulum_rk4, [rn(r, 2), rn(r, 2)]), FULL)

    def leapfrog(q0, p0, k):
        def body(i, s):
            q, p = s
            p = p - 0.05 * k * jnp.tanh(q)
            q = q + 0.1 * p
            p = p - 0.05 * k * jnp.tanh(q)
            return q, p
        q, p = lax.fori_loop(0, 15, body, (q0, p0))
        return jnp.sum(q ** 2) + jnp.sum(p ** 3)
    P["leapfrog"] = (lambda r: (leapfrog, [rn(r, 3), rn(r, 3), np.float32(1.5)]), FULL)

    def lotka(z0, th):
        def body(i, z):
            x, y = z[0], z[1]
            dx = th[0] * x - th[1] * x * y
            dy = th[2] * x * y - th[3] * y
            return z + 0.02 * jnp.stack([dx, dy])
        z = lax.fori_loop(0, 20, body, z0)
        return jnp.sum(jnp.log(z))
    P["lotka_volterra"] = (lambda r: (lotka, [np.array([1.0, 0.5], np.float32),
                                              np.array([1.1, 0.4, 0.1, 0.4], np.float32)]), FULL)

    def heat(u0, kappa):
        def body(i, u):
            lap = jnp.roll(u, 1) - 2 * u + jnp.roll(u, -1)
            return u + kappa * lap
        u = lax.fori_loop(0, 10, body, u0)
        return jnp.sum(u ** 4)
    P["heat_equation"] = (lambda r: (heat, [rn(r, 6), np.float32(0.2)]), FULL)

    def time_dep(x0, w):
        def body(i, x):
            t = i.astype(x.dtype) * 0.1
            return x + 0.1 * jnp.sin(w * t) * jnp.cos(x)
        return jnp.sum(lax.fori_loop(0, 10, body, x0))
    P["nonautonomous_ode_counter"] = (lambda r: (time_dep, [rn(r, 3), rn(r, 3)]), FULL)

    # ---------------------------------------------------------- fixed-step optimizers
    def gd_quadratic(x0, a, b):
        def loss(x):
            return 0.5 * x @ a @ x - b @ x

        def body(i, x):
            return x - 0.1 * jax.grad(loss)(x)
        x = lax.fori_loop(0, 8, body, x0)
        return loss(x)
    P["gd_quadratic"] = (lambda r: (gd_quadratic, [rn(r, 3), np.eye(3, dtype=np.float32) * 2 + 0.1,
                                                   rn(r, 3)]), FULL)

    def momentum(w0, xs, ys):
        def loss(w):
            return jnp.mean((jnp.tanh(xs @ w) - ys) ** 2)

        def body(i, s):
            w, m = s
            g = jax.grad(loss)(w)
            m = 0.9 * m + g
            return w - 0.2 * m, m
        w, _ = lax.fori_loop(0, 6, body, (w0, jnp.zeros_like(w0)))
        return loss(w)
    P["momentum_sgd"] = (lambda r: (momentum, [rn(r, 3, s=.3), rn(r, 5, 3), rn(r, 5)]), (G, JV, VM))

    def newton_fixed(a):
        def body(i, x):
            return 0.5 * (x + a / x)
        return jnp.sum(lax.fori_loop(0, 6, body, a * 0.5 + 1.0))
    P["newton_sqrt_fixed"] = (lambda r: (newton_fixed, [r.uniform(.5, 4, 3).astype(np.float32)]), FULL)

    def adam_like(w0, t):
        def body(i, s):
            w, m, v = s
            g = 2 * (w - t) + jnp.cos(w)
            m = 0.9 * m + 0.1 * g
            v = 0.99 * v + 0.01 * g * g
            k = (i + 1).astype(w.dtype)
            mh = m / (1 - 0.9 ** k)
            vh = v / (1 - 0.99 ** k)
            return w - 0.05 * mh / (jnp.sqrt(vh) + 1e-3), m, v
        z = jnp.zeros_like(w0)
        w, _, _ = lax.fori_loop(0, 5, body, (w0, z, z))
        return jnp.sum((w - t) ** 2)
    P["adam_steps"] = (lambda r: (adam_like, [rn(r, 3), rn(r, 3)]), (G, JV, VM))

    # ---------------------------------------------------------- buffer writes
    def buffer_dus(x):
        def body(i, buf):
            return lax.dynamic_update_slice(buf, jnp.sin(x[i] * (i + 1).astype(x.dtype))[None], (i,))
        buf = lax.fori_loop(0, x.shape[0], body, jnp.zeros_like(x))
        return jnp.sum(buf * x)
    P["buffer_dynamic_update_slice"] = (lambda r: (buffer_dus, [rn(r, 5)]), FULL)

    def buffer_at_set(x, w):
        def body(i, buf):
            prev = lax.dynamic_slice(buf, (jnp.maximum(i - 1, 0),), (1,))[0]
            return buf.at[i].set(jnp.tanh(w * prev + x[i]))
        buf = lax.fori_loop(1, x.shape[0], body, x)
        return jnp.sum(buf ** 2)
    P["buffer_recurrence_at_set"] = (lambda r: (buffer_at_set, [rn(r, 6), np.float32(0.7)]), FULL)

    def buffer_rows(a, x):
        def body(i, m):
            row = jnp.tanh(a @ x * (i + 1).astype(x.dtype))
            return m.at[i, :].set(row)
        m = lax.fori_loop(0, 3, body, jnp.zeros((3, a.shape[0]), x.dtype))
        return jnp.sum(m @ x)
    P["buffer_matrix_rows"] = (lambda r: (buffer_rows, [rn(r, 3, 3), rn(r, 3)]), (G, JV, VM))

    def scatter_add_loop(x, idx):
        def body(i, acc):
            return acc.at[idx[i]].add(x[i] ** 2)
        acc = lax.fori_loop(0, x.shape[0], body, jnp.zeros(4, x.dtype))
        return jnp.sum(jnp.sin(acc))
    P["scatter_add_in_body"] = (lambda r: (scatter_add_loop, [rn(r, 6), np.array([0, 2, 2, 1, 3, 0],
                                                                                np.int32)]), (G, JV, VM))

    def gather_loop(table, idx):
        def step(h, i):
            h = jnp.tanh(h * table[i] + table[(i + 1) % table.shape[0]])
            return h, h
        _, hs = lax.scan(step, jnp.zeros((), table.dtype), idx)
        return jnp.sum(hs)
    P["gather_in_body"] = (lambda r: (gather_loop, [rn(r, 5), np.array([1, 4, 0, 2, 2, 3],
                                                                        np.int32)]), FULL)

    def dyn_slice_window(x):
        def body(i, acc):
            w = lax.dynamic_slice(x, (i,), (3,))
            return acc + jnp.prod(w)
        return lax.fori_loop(0, x.shape[0] - 2, body, jnp.zeros((), x.dtype))
    P["dynamic_slice_window"] = (lambda r: (dyn_slice_window, [rn(r, 7)]), FULL)

    def cumprod_loop(x):
        def body(i, buf):
            prev = lax.dynamic_index_in_dim(buf, i - 1, keepdims=False)
            return lax.dynamic_update_index_in_dim(buf, prev * x[i], i, 0)
        buf = lax.fori_loop(1, x.shape[0], body, x)
        return jnp.sum(buf)
    P["cumprod_buffer"] = (lambda r: (cumprod_loop, [r.uniform(.5, 1.5, 5).astype(np.float32)]), FULL)

    # ---------------------------------------------------------- pytree carries, counters, flags
    def pytree_counter(x, w):
        def body(c, xi):
            n, acc, st = c
            acc = acc + jnp.sin(w * xi) * n.astype(x.dtype)
            st = {"a": st["a"] * 0.9 + xi, "b": st["b"] + acc * st["a"]}
            return (n + 1, acc, st), n
        (n, acc, st), ns = lax.scan(body, (jnp.int32(1), jnp.zeros((), x.dtype),
                                           {"a": jnp.zeros((), x.dtype), "b": jnp.zeros((), x.dtype)}), x)
        return acc + st["b"] + jnp.sum(ns).astype(x.dtype)
    P["pytree_int_counter"] = (lambda r: (pytree_counter, [rn(r, 5), np.float32(1.3)]), FULL)

    def bool_flag(x):
        def body(c, xi):
            flag, s = c
            s = jnp.where(flag, s + xi * xi, s * xi)
            return (jnp.logical_not(flag), s), flag
        (f, s), fl = lax.scan(body, (jnp.bool_(True), jnp.ones((), x.dtype)), x)
        return s + jnp.sum(fl.astype(x.dtype))
    P["bool_flag_carry"] = (lambda r: (bool_flag, [rn(r, 6)]), FULL)

    def horner(c, x):
        def body(i, acc):
            return acc * x + c[i]
        return jnp.sum(lax.fori_loop(0, c.shape[0], body, jnp.zeros_like(x)))
    P["horner"] = (lambda r: (horner, [rn(r, 5), rn(r, 4)]), FULL + (JR,))

    def horner_x(x, c):
        def body(acc, ci):
            return acc * x + ci, None
        acc, _ = lax.scan(body, jnp.zeros_like(x), c)
        return jnp.sum(acc ** 2)
    P["horner_scan_wrt_x"] = (lambda r: (horner_x, [rn(r, 4), rn(r, 6)]), FULL + (JR,))

    def closed_over(x):
        W = jnp.asarray(np.linspace(-1, 1, 9).reshape(3, 3), x.dtype)

        def step(h, _):
            return jnp.tanh(W @ h + x), None
        h, _ = lax.scan(step, x, None, length=5)
        return jnp.sum(h)
    P["closed_over_consts_xs_none"] = (lambda r: (closed_over, [rn(r, 3)]), FULL)

    def counter_ys(x):
        def step(c, _):
            i, v = c
            v = v * jnp.cos(x * i.astype(x.dtype))
            return (i + 1, v), v
        _, vs = lax.scan(step, (jnp.int32(0), jnp.ones_like(x)), None, length=4)
        return jnp.sum(vs)
    P["counter_only_ys"] = (lambda r: (counter_ys, [rn(r, 2)]), FULL)

    def mixed_xs(w, xs, ms):
        def step(h, xm):
            x, m = xm
            h2 = jnp.tanh(w * h + x)
            return jnp.where(m, h2, h), h2 * m
        h, ys = lax.scan(step, jnp.zeros_like(w), (xs, ms))
        return jnp.sum(h) + jnp.sum(ys ** 2)
    P["masked_steps_bool_xs"] = (lambda r: (mixed_xs, [rn(r, 3), rn(r, 5, 3),
                                                       r.integers(0, 2, (5, 3)).astype(bool)]), (G, JV, VM))

    # ---------------------------------------------------------- cond / switch inside bodies
    def cond_body(x):
        def body(i, s):
            return lax.cond(i % 2 == 0, lambda v: jnp.sin(v) * 1.5, lambda v: v * v - 0.5, s)
        return jnp.sum(lax.fori_loop(0, 6, body, x))
    P["cond_in_body"] = (lambda r: (cond_body, [rn(r, 3)]), FULL)

    def switch_body(x, w):
        def step(h, k):
            h = lax.switch(k, [lambda v: jnp.tanh(v * w), lambda v: v + w, lambda v: jnp.exp(-v * v)], h)
            return h, h
        h, hs = lax.scan(step, x, jnp.array([0, 2, 1, 0, 2], np.int32))
        return jnp.sum(hs) + jnp.sum(h)
    P["switch_in_body"] = (lambda r: (switch_body, [rn(r, 3), rn(r, 3)]), FULL)

    def cond_data(x):
        def step(h, xi):
            h = lax.cond(xi > 0, lambda: h * xi + 1.0, lambda: jnp.sin(h) - xi)
            return h, h
        _, hs = lax.scan(step, jnp.zeros((), x.dtype), x)
        return jnp.sum(hs ** 2)
    P["cond_data_dependent"] = (lambda r: (cond_data, [rn(r, 6)]), FULL)

    # ---------------------------------------------------------- nesting
    def matpow(a):
        def body(i, m):
            return lax.fori_loop(0, 2, lambda j, q: q @ a * 0.5, m)
        m = lax.fori_loop(0, 3, body, jnp.eye(a.shape[0], dtype=a.dtype))
        return jnp.sum(m)
    P["nested_fori_matpow"] = (lambda r: (matpow, [rn(r, 3, 3)]), FULL)

    def nested_scan_consts(w, xs):
        def outer(c, row):
            def inner(d, e):
                d = jnp.sin(d * w + e)
                return d, d
            d, ds = lax.scan(inner, c, row)
            return d + c, jnp.sum(ds)
        c, ys = lax.scan(outer, jnp.zeros((), xs.dtype), xs)
        return c + jnp.sum(ys ** 2)
    P["nested_scan_closure"] = (lambda r: (nested_scan_consts, [np.float32(0.9), rn(r, 3, 4)]), FULL)

    # ---------------------------------------------------------- while_loop (forward only)
    def newton_while(a):
        def body(s):
            x, i = s
            return 0.5 * (x + a / x), i + 1
        return lax.while_loop(lambda s: (s[1] < 20) & (jnp.max(jnp.abs(s[0] * s[0] - a)) > 1e-3),
                              body, (a * 0.5 + 1.0, 0))[0]
    P["while_newton_tol"] = (lambda r: (newton_while, [r.uniform(.5, 9, 4).astype(np.float32)]), (JV, VM))

    def while_scalar(a):
        def body(s):
            x, i = s
            return x * 0.5 + 0.01 * jnp.sin(a), i + 1
        x, n = lax.while_loop(lambda s: s[0] > 0.1, body, (a * a + 2.0, 0))
        return x * n.astype(x.dtype)
    P["while_data_trip_count"] = (lambda r: (while_scalar, [np.float32(1.3)]), (JV, VM))

    def fori_dynamic(x, n):
        return lax.fori_loop(0, n, lambda i, v: jnp.cos(v) + 0.1 * v, x)
    P["fori_dynamic_bounds"] = (lambda r: (fori_dynamic, [rn(r, 3), np.int32(4)]), (JV, VM))

    # ---------------------------------------------------------- checkpoint
    def ck_mlp(w, x):
        @jax.checkpoint
        def layer(h):
            return jnp.tanh(h @ w)
        return jnp.sum(layer(layer(x)) ** 2)
    P["checkpoint_mlp"] = (lambda r: (ck_mlp, [rn(r, 3, 3, s=.6), rn(r, 2, 3)]), (G, JV, VM, H))

    def ck_scan(w, xs):
        @jax.checkpoint
        def step(h, x):
            h = jnp.tanh(h @ w + x)
            return h, jnp.sum(h)
        h, ys = lax.scan(step, jnp.zeros(w.shape[0], xs.dtype), xs)
        return jnp.sum(ys) + jnp.sum(h * h)
    P["checkpoint_scan_body"] = (lambda r: (ck_scan, [rn(r, 3, 3, s=.6), rn(r, 5, 3)]), FULL)

    def ck_dots(w, xs):
        step = jax.checkpoint(lambda h, x: (jnp.sin(h @ w) + x, None),
                              policy=jax.checkpoint_policies.dots_saveable)
        h, _ = lax.scan(step, jnp.zeros(w.shape[0], xs.dtype), xs)
        return jnp.sum(h ** 2)
    P["checkpoint_dots_saveable"] = (lambda r: (ck_dots, [rn(r, 3, 3, s=.6), rn(r, 4, 3)]), (G, JV, VM))

    def ck_nothing(w, x):
        f = jax.checkpoint(lambda v: jnp.exp(jnp.sin(v @ w)),
                           policy=jax.checkpoint_policies.nothing_saveable)
        return jnp.sum(f(x) * x)
    P["checkpoint_nothing_saveable"] = (lambda r: (ck_nothing, [rn(r, 3, 3, s=.5), rn(r, 3)]), (G, JV, VM))

    def ck_nobatch(w, x):
        f = jax.checkpoint(lambda v: jnp.tanh(v @ w) @ w,
                           policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)
        return jnp.sum(f(x) ** 2)
    P["checkpoint_dots_no_batch"] = (lambda r: (ck_nobatch, [rn(r, 3, 3, s=.5), rn(r, 2, 3)]), (G, JV, VM))

    def ck_everything(w, x):
        f = jax.checkpoint(lambda v: jnp.cos(v * w) * v,
                           policy=jax.checkpoint_policies.everything_saveable)
        return jnp.sum(f(x))
    P["checkpoint_everything_saveable"] = (lambda r: (ck_everything, [rn(r, 3), rn(r, 3)]), (G, JV, VM))

    def ck_nocse(w, x):
        f = jax.checkpoint(lambda v: jnp.sin(v * w), prevent_cse=False)
        return jnp.sum(f(x) ** 2)
    P["checkpoint_prevent_cse_false"] = (lambda r: (ck_nocse, [rn(r, 3), rn(r, 3)]), (G, JV))

    for pn, (bld, ts) in P.items():
        for dtn in ("f32", "f64"):
            def b(rng, bld=bld, dtn=dtn):
                f, args = bld(rng)
                return f, [np.asarray(a).astype(gc.dt(dtn)) if np.asarray(a).dtype.kind == "f"
                           else a for a in args]
            gc.case(f"{gc.pname(dtn)}loop_{pn}_{dtn}", "loop", pn, ts)(b)


def main():
    """gen_conformance's command line and capture (two child passes, one
    manifest), with this registry. JAX defines every transform registered
    here, so a transform JAX refuses is a generator bug: the run fails."""
    gc.main(register=register_loops, out_default=OUT_DEFAULT, script=os.path.abspath(__file__),
            generator="tools/oracle/gen_loops.py", doc=__doc__, lax_json=False)
    if "--pass" in sys.argv or "--list" in sys.argv:
        return
    out = OUT_DEFAULT
    if "--out" in sys.argv:
        out = os.path.abspath(sys.argv[sys.argv.index("--out") + 1])
    with open(os.path.join(out, "MANIFEST.json")) as fh:
        cases = json.load(fh)["cases"]
    refused = {k: c["transforms_refused_by_jax"] for k, c in cases.items()
               if c.get("transforms_refused_by_jax")}
    for k, v in sorted(refused.items()):
        print(f"failed: {k}: JAX refused {v}", file=sys.stderr)
    if refused:
        sys.exit(1)


if __name__ == "__main__":
    main()
