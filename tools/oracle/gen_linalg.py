#!/usr/bin/env python3
"""Generate the linear-algebra conformance family (fixtures/linalg/, family
`linalg`, issue 20): jnp.linalg.cholesky, det, slogdet and
jax.scipy.linalg's solve_triangular, cho_factor/cho_solve, lu_factor/
lu_solve, and jax.lax.linalg's cholesky, triangular_solve (every flag), lu,
lu_pivots_to_permutation, tridiagonal_solve, symmetric_product and
cholesky_update, on small (n <= 8) well- and ill-conditioned, batched
inputs in f32 and f64; the f32 cases also capture JAX's jvp, vmap and
grad/vjp. Programs: a Gaussian-process log marginal likelihood (with its
gradient and hessian in the hyperparameters), a Kalman filter step and a
logistic-regression Newton step.

It reuses gen_sweep.py's registration (S, seeded makers, the size caps of
prune) and gen_conformance.py's capture, transforms and manifest.

Usage:
  .venv-oracle/bin/python tools/oracle/gen_linalg.py           # -> fixtures/linalg
  .venv-oracle/bin/python tools/oracle/gen_linalg.py --list
  .venv-oracle/bin/python tools/oracle/gen_linalg.py --out /tmp/l --only CASE...
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_conformance as gc  # noqa: E402
import gen_sweep as gs  # noqa: E402  (S, mk, prune)

import numpy as np  # noqa: E402

F = ("f32", "f64")
AD = ("jvp", "vjp", "vmap")
# The GP likelihood's gradient and hessian print to 12-48 KB: this family
# keeps them (gen_sweep's caps are for its one-function cases).
gs.MAX_CASE_BYTES = 48000
gs.MAX_T_BYTES = 48000
FWD = ("vmap",)


def npd(d):
    return {"f32": np.float32, "f64": np.float64}[d]


def spd(n, batch=(), cond=None):
    """A seeded symmetric positive definite matrix M M^T + n I; with cond,
    one with that condition number (Q diag Q^T, eigenvalues log-spaced)."""
    def make(rng, dtn):
        if cond is None:
            m = rng.uniform(-1, 1, size=batch + (n, n))
            a = m @ np.swapaxes(m, -1, -2) + n * np.eye(n)
        else:
            q, _ = np.linalg.qr(rng.uniform(-1, 1, size=(n, n)))
            a = q @ np.diag(np.logspace(0, np.log10(cond), n)) @ q.T
            a = np.broadcast_to((a + a.T) / 2, batch + (n, n))
        return np.asarray(a).astype(npd(dtn))
    return make


def general(n, m=None, batch=(), cond=None):
    """A seeded general matrix with a dominant diagonal (well conditioned),
    or with condition number cond (U diag V^T)."""
    m = n if m is None else m
    def make(rng, dtn):
        if cond is None:
            a = rng.uniform(-1, 1, size=batch + (n, m))
            k = min(n, m)
            idx = np.arange(k)
            a[..., idx, idx] += 2.0 * np.sign(a[..., idx, idx] + 1e-3)
        else:
            u, _ = np.linalg.qr(rng.uniform(-1, 1, size=(n, n)))
            v, _ = np.linalg.qr(rng.uniform(-1, 1, size=(n, n)))
            a = np.broadcast_to(u @ np.diag(np.logspace(0, -np.log10(cond), n)) @ v.T, batch + (n, n))
        return np.asarray(a).astype(npd(dtn))
    return make


def tri(n, lower, batch=()):
    """A triangular matrix with diagonal entries in [1, 2] (and junk in the
    other triangle, which triangular_solve must not read)."""
    def make(rng, dtn):
        a = rng.uniform(-1, 1, size=batch + (n, n))
        idx = np.arange(n)
        a[..., idx, idx] = rng.uniform(1, 2, size=batch + (n,))
        return a.astype(npd(dtn))
    return make


def U(shape, lo=-1.0, hi=1.0):
    return gs.U(shape, lo, hi)


def L(name, fn, makers, dtypes=F, tf=AD):
    gs.S(name, fn, makers, dtypes, tf, family="linalg", prefix="linalg")


def register():
    import jax
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl
    from jax import lax
    from jax.lax import linalg as ll

    # --------------------------------------------------------- cholesky
    L("cholesky", jnp.linalg.cholesky, [spd(4)])
    L("cholesky_batched", jnp.linalg.cholesky, [spd(3, (2,))])
    L("cholesky_ill", jnp.linalg.cholesky, [spd(5, cond=1e4)], ("f64",), FWD)
    L("cholesky_not_pd", jnp.linalg.cholesky, [general(3)], F, ())
    L("cholesky_raw", lambda a: ll.cholesky(a, symmetrize_input=False), [spd(4)])
    L("cho_solve", lambda a, b: jsl.cho_solve(jsl.cho_factor(a, lower=True), b), [spd(4), U((4, 2))])
    L("cho_solve_upper", lambda a, b: jsl.cho_solve(jsl.cho_factor(a), b), [spd(3), U((3,))])
    L("cholesky_update", lambda r, w: ll.cholesky_update(r, w),
      [lambda rng, d: np.ascontiguousarray(np.linalg.cholesky(spd(4)(rng, "f64")).T).astype(npd(d)),
       U((4,))], F, ())

    # ---------------------------------------------------- triangular_solve
    for left in (True, False):
        for lower in (True, False):
            for ta in (False, True):
                nm = f"triangular_solve__{'l' if left else 'r'}{'lo' if lower else 'up'}{'_t' if ta else ''}"
                shape = (4, 2) if left else (2, 4)
                L(nm, lambda a, b, left=left, lower=lower, ta=ta: ll.triangular_solve(
                    a, b, left_side=left, lower=lower, transpose_a=ta), [tri(4, lower), U(shape)])
    L("triangular_solve__unit", lambda a, b: ll.triangular_solve(a, b, left_side=True, lower=True,
                                                                 unit_diagonal=True),
      [tri(4, True), U((4, 3))])
    L("triangular_solve__batched", lambda a, b: ll.triangular_solve(a, b, left_side=True, lower=True),
      [tri(3, True, (2,)), U((2, 3, 2))])
    L("solve_triangular", lambda a, b: jsl.solve_triangular(a, b, lower=True), [tri(5, True), U((5,))])
    L("solve_triangular_trans", lambda a, b: jsl.solve_triangular(a, b, trans=1), [tri(4, False), U((4, 3))])

    # ------------------------------------------------------------------ lu
    L("lu", lambda a: ll.lu(a), [general(4)])
    L("lu_batched", lambda a: ll.lu(a), [general(3, batch=(2,))])
    L("lu_wide", lambda a: ll.lu(a), [general(3, 5)], F, FWD)
    L("lu_tall", lambda a: ll.lu(a), [general(5, 3)], F, FWD)
    L("lu_ill", lambda a: ll.lu(a), [general(5, cond=1e4)], ("f64",), FWD)
    L("lu_factor", lambda a: jsl.lu_factor(a), [general(4)])
    L("lu_solve", lambda a, b: jsl.lu_solve(jsl.lu_factor(a), b), [general(4), U((4, 2))])
    L("lu_pivots_to_permutation", lambda p: ll.lu_pivots_to_permutation(p, 5),
      [lambda rng, d: np.array([2, 3, 2, 4], np.int32)], ("f32",), ())
    L("solve", jnp.linalg.solve, [general(4), U((4,))])
    L("solve_matrix", jnp.linalg.solve, [general(3), U((3, 2))])
    L("inv", jnp.linalg.inv, [general(4)])
    L("solve_grad", lambda a, b: jax.grad(lambda a, b: jnp.sum(jnp.linalg.solve(a, b) ** 2), (0, 1))(a, b),
      [general(3), U((3,))], F, ())
    # custom_linear_solve batched inside the captured function: a and b
    # batched, only b batched (the fixpoint batches matvec's result), and
    # the gradient through the batched solve (its transpose, batched)
    L("solve_vmapped", jax.vmap(jnp.linalg.solve), [general(3, batch=(2,)), U((2, 3))], F, ("jvp", "vjp"))
    L("solve_vmapped_b", jax.vmap(jnp.linalg.solve, (None, 0)), [general(3), U((2, 3))], F, ("jvp", "vjp"))
    L("solve_vmapped_grad", lambda a, b: jax.grad(
        lambda a, b: jnp.sum(jax.vmap(jnp.linalg.solve)(a, b) ** 2), (0, 1))(a, b),
      [general(3, batch=(2,)), U((2, 3))], F, ())
    L("det", jnp.linalg.det, [general(4)], F, FWD)
    L("slogdet", lambda a: jnp.linalg.slogdet(a), [general(5)], F, FWD)

    # ------------------------------------------------------------- expm
    # JAX's Pade approximant with scaling and squaring: log2 of the 1-norm,
    # jnp.digitize (SearchSorted) for the degree, lu_solve, squarings.
    # Its printouts are large (15-30 KB): one case with jvp and vjp, one
    # that squares, forward only.
    L("expm", jsl.expm, [lambda rng, d: (0.5 * rng.uniform(-1, 1, size=(4, 4))).astype(npd(d))],
      F, ("jvp", "vjp"))
    L("expm_scaled", jsl.expm, [lambda rng, d: (3.0 * rng.uniform(-1, 1, size=(3, 3))).astype(npd(d))],
      F, ())

    # --------------------------------------------- tridiagonal, symmetric
    L("tridiagonal_solve", lambda dl, d, du, b: ll.tridiagonal_solve(dl, d, du, b),
      [U((5,)), U((5,), 3.0, 4.0), U((5,)), U((5, 2))])
    L("symmetric_product", lambda a, c: ll.symmetric_product(a, c, alpha=0.5, beta=2.0),
      [U((4, 3)), spd(4)], F, FWD)

    # ------------------------------------------------------------ programs
    def gp_nll(params, x, y):
        ls, sv, nv = jnp.exp(params[0]), jnp.exp(params[1]), jnp.exp(params[2])
        d = (x[:, None, :] - x[None, :, :]) / ls
        k = sv * jnp.exp(-0.5 * jnp.sum(d * d, -1)) + (nv + 1e-6) * jnp.eye(x.shape[0], dtype=x.dtype)
        c = jnp.linalg.cholesky(k)
        alpha = jsl.cho_solve((c, True), y)
        return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diagonal(c))) + 0.5 * y.shape[0] * jnp.log(2 * jnp.pi)
    gp_in = [lambda rng, d: np.array([0.1, 0.2, -1.0]).astype(npd(d)), U((6, 2)), U((6,))]
    L("gp_nll", gp_nll, gp_in)
    L("gp_nll_hessian", lambda p, x, y: jax.hessian(gp_nll)(p, x, y), gp_in, F, ())

    def kalman_step(m, p, y, f, h, q, r):
        m = f @ m
        p = f @ p @ f.T + q
        s = h @ p @ h.T + r
        cf = jsl.cho_factor(s, lower=True)
        k = jsl.cho_solve(cf, h @ p).T
        m = m + k @ (y - h @ m)
        p = p - k @ s @ k.T
        return m, p
    L("kalman_step", kalman_step,
      [U((4,)), spd(4), U((2,)), general(4), U((2, 4)), lambda rng, d: (0.1 * np.eye(4)).astype(npd(d)),
       lambda rng, d: (0.5 * np.eye(2)).astype(npd(d))])

    def newton_step(w, x, y):
        p = jax.nn.sigmoid(x @ w)
        g = x.T @ (p - y) + 0.1 * w
        hm = (x.T * (p * (1 - p))) @ x + 0.1 * jnp.eye(w.shape[0], dtype=w.dtype)
        return w - jsl.cho_solve(jsl.cho_factor(hm, lower=True), g)
    L("logreg_newton_step", newton_step,
      [U((3,)), U((8, 3)), lambda rng, d: (rng.uniform(size=8) > 0.5).astype(npd(d))])
    del lax


if __name__ == "__main__":
    out = os.path.join(gc.ROOT, "fixtures", "linalg")
    if "--out" in sys.argv:
        out = os.path.abspath(sys.argv[sys.argv.index("--out") + 1])
    try:
        gc.main(register=register, out_default=os.path.join(gc.ROOT, "fixtures", "linalg"),
                script=os.path.abspath(__file__), generator="tools/oracle/gen_linalg.py",
                doc=__doc__, lax_json=False)
    finally:
        if "--pass" not in sys.argv and "--list" not in sys.argv and \
                os.path.exists(os.path.join(out, "MANIFEST.json")):
            gs.prune(out)
