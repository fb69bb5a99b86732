#!/usr/bin/env python3
"""Generate the jax.random conformance fixtures (fixtures/random/) from real
JAX (docs/random.md): every jax.random sampler traced with make_jaxpr on a
threefry key, f32 and f64, scalar and batched shapes, with JAX's outputs.
tests/random/test_random_conformance.c runs each case with the interpreter
and the JIT and compares bitwise (or within the ulp bound a case states,
when JAX's float result goes through an XLA transcendental whose bits the
math library does not reproduce).

Usage: .venv-oracle/bin/python tools/oracle/gen_random.py [--out DIR]

What a case stores (in fixtures/random/):
  <case>.jaxpr       str(jax.make_jaxpr(f)(*args)) + "\\n"
  <case>.in<i>.npy   inputs: the constvars' values, then the key (stored as its
                     key data, u32[...,2])
  <case>.out<k>.npy  JAX's outputs (key outputs as key data)
CASES.txt: one line per case: name n_in n_out tolerance, where tolerance is
`bits` (bitwise), `ulp:N` (floats within N units in the last place;
integers and keys always bitwise) or `blocked:PRIM` (the program uses a
primitive FrankenTrace does not have yet: the test checks it is refused,
naming PRIM, so a case that starts to work must be moved to a real check). Deterministic: fixed seeds, no timestamps.
Cases whose name starts with x64_ run in a child with jax_enable_x64=True.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Float samplers whose JAX bits come from XLA transcendentals the shared
# math library does not match bit for bit: the bound measured on these
# cases (docs/random.md), as (f32, f64); 0 is bitwise. The rest are compared
# bitwise. f32 erf_inv, log, log1p, erf and f64 erf_inv, log1p are XLA's
# (src/lower/vmath), so normal, exponential, gumbel, laplace, logistic and
# what is built on them are bitwise in f32, and in f64 on these fixtures:
# f64 log is glibc's, which the library matches except where glibc is not
# correctly rounded (about 5 in 10,000 inputs; 35 of 2^20 f64 normals).
ULP = {
    # f64 tan is glibc's (measured 1 ulp); generalized_normal's f64 pow
    "cauchy": (0, 2), "generalized_normal": (0, 4),
    # f32: XLA constant-folds erf of the literal bounds with the host libm's
    # erff (glibc 2.36), not with its erf polynomial, which the library
    # matches (measured 27 ulp after erf_inv near |u| = 1); f64: glibc's erf
    "truncated_normal": (32, 8),
    # XLA contracts uniform's floats * (maxval - minval) + minval into an FMA;
    # FrankenTrace rounds the product (no contraction, docs/determinism.md):
    # 1-2 ulp in f32, and in f64 up to 1024 ulp of results near 0
    "uniform_range": (2, 1024),
    # normal through LAPACK's cholesky (JAX's CPU potrf) and a GEMM: the
    # bound covers the BLAS summation order (measured 0 with Haswell kernels)
    "multivariate_normal": (2, 8),
    # random_gamma: f32 pow is glibc's powf inside Marsaglia-Tsang and in
    # beta, dirichlet, ball (measured 1-2 ulp); over many alphas the error
    # grows through v**3 and pow(u, 1/a) for small a (measured 6 / 5 ulp),
    # and in log space near log(g) = 0 (measured 40 / 128)
    "gamma_many": (8, 16), "loggamma_many": (64, 256),
    "beta": (4, 0), "dirichlet": (4, 0), "ball": (4, 4),
}

# grad w.r.t. alpha of losses through gamma, loggamma, beta and dirichlet
# (random_gamma's JVP, docs/random.md): bounds (f32, f64). The tangent is
# igamma_grad_a (series or continued fraction, itself 10 / 37 ulp from XLA:
# docs/special-functions.md) over exp, log, lgamma, so a different program
# from JAX's inlined loops: measured 13-18 ulp in f32 and 27-61 in f64.
AGRAD_ULP = {
    "agrad_gamma": (32, 96), "agrad_loggamma": (32, 96), "agrad_beta": (32, 96),
    "agrad_dirichlet": (32, 96), "agrad_tiny": (32, 96), "agrad_logtiny": (32, 96),
}


def alpha_grads(jax, jnp, dt):
    """(name, loss(alpha, key), alpha): the case is the primal loss; the test
    differentiates it with ft_grad w.r.t. alpha and compares with jax.grad."""
    r = jax.random
    al = jnp.concatenate([jnp.linspace(0.05, 0.95, 8, dtype=dt), jnp.linspace(1.0, 40.0, 16, dtype=dt)])
    w = jnp.linspace(-1.0, 2.0, 24, dtype=dt)
    b = jnp.linspace(0.5, 6.0, 24, dtype=dt)
    wd = jnp.linspace(-1.0, 1.0, 8, dtype=dt).reshape(2, 4)
    return [
        ("agrad_gamma", lambda a, k: jnp.sum(r.gamma(k, a, None, dt) * w), al),
        ("agrad_loggamma", lambda a, k: jnp.sum(r.loggamma(k, a, None, dt) * w), al),
        ("agrad_beta", lambda a, k: jnp.sum(r.beta(k, a, b, None, dt) * w), al),
        ("agrad_dirichlet", lambda a, k: jnp.sum(r.dirichlet(k, a, (2,), dt) * wd),
         jnp.array([0.3, 1.0, 2.5, 7.0], dt)),
        # alphas so small that draws round to 0 (gradient 0) or, in log
        # space, exp(log s) to 0 (replaced by the smallest normal)
        ("agrad_tiny", lambda a, k: jnp.sum(r.gamma(k, a, None, dt)), jnp.array([1e-3, 3e-3, 1e-2, 3e-2] * 4, dt)),
        ("agrad_logtiny", lambda a, k: jnp.sum(r.loggamma(k, a, None, dt)), jnp.array([1e-3, 3e-3, 1e-2, 3e-2] * 4, dt)),
    ]


# Primitives the samplers reach that FrankenTrace does not have yet: none
# (random_gamma and SearchSorted are built).
BLOCKING = ()


def samplers(jax, jnp, dt):
    r = jax.random
    S = [(), (3, 4)]
    out = []
    for si, sh in enumerate(S):
        tag = "s" if si == 0 else "b"
        out += [
            (f"uniform_{tag}", lambda k, sh=sh: r.uniform(k, sh, dt)),
            (f"uniform_range_{tag}", lambda k, sh=sh: r.uniform(k, sh, dt, -2.5, 7.0)),
            (f"normal_{tag}", lambda k, sh=sh: r.normal(k, sh, dt)),
            (f"bits_{tag}", lambda k, sh=sh: r.bits(k, sh)),
            (f"randint_{tag}", lambda k, sh=sh: r.randint(k, sh, -5, 17)),
            (f"bernoulli_{tag}", lambda k, sh=sh: r.bernoulli(k, 0.3, sh)),
            (f"truncated_normal_{tag}", lambda k, sh=sh: r.truncated_normal(k, -1.5, 2.0, sh, dt)),
            (f"exponential_{tag}", lambda k, sh=sh: r.exponential(k, sh, dt)),
            (f"gumbel_{tag}", lambda k, sh=sh: r.gumbel(k, sh, dt)),
            (f"laplace_{tag}", lambda k, sh=sh: r.laplace(k, sh, dt)),
            (f"logistic_{tag}", lambda k, sh=sh: r.logistic(k, sh, dt)),
            (f"cauchy_{tag}", lambda k, sh=sh: r.cauchy(k, sh, dt)),
            (f"rademacher_{tag}", lambda k, sh=sh: r.rademacher(k, sh)),
            (f"gamma_{tag}", lambda k, sh=sh: r.gamma(k, 2.5, sh, dt)),
            (f"beta_{tag}", lambda k, sh=sh: r.beta(k, 2.0, 3.0, sh, dt)),
            (f"poisson_{tag}", lambda k, sh=sh: r.poisson(k, 3.0, sh)),
            (f"t_{tag}", lambda k, sh=sh: r.t(k, 4.0, sh, dt)),
        ]
    out += [
        ("bits8", lambda k: r.bits(k, (5,), jnp.uint8)),
        ("bits16", lambda k: r.bits(k, (5,), jnp.uint16)),
        ("split", lambda k: r.split(k, 4)),
        ("split_2d", lambda k: r.split(k, (2, 3))),
        ("fold_in", lambda k: r.fold_in(k, 1234567)),
        ("key_data", lambda k: r.key_data(k)),
        ("clone", lambda k: r.clone(k)),
        ("categorical", lambda k: r.categorical(k, jnp.log(jnp.array([0.1, 0.2, 0.3, 0.4], dt)), shape=(6,))),
        ("categorical_2d", lambda k: r.categorical(k, jnp.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]], dt), axis=-1)),
        ("choice_replace", lambda k: r.choice(k, 10, (6,))),
        ("choice_noreplace", lambda k: r.choice(k, 10, (6,), replace=False)),
        ("choice_p", lambda k: r.choice(k, 5, (7,), p=jnp.array([0.1, 0.2, 0.3, 0.25, 0.15], dt))),
        ("choice_p_noreplace", lambda k: r.choice(k, 5, (3,), replace=False, p=jnp.array([0.1, 0.2, 0.3, 0.25, 0.15], dt))),
        ("permutation", lambda k: r.permutation(k, 12)),
        ("permutation_array", lambda k: r.permutation(k, jnp.arange(10, dtype=dt))),
        ("shuffle_2d", lambda k: r.permutation(k, jnp.arange(12, dtype=dt).reshape(4, 3), axis=0, independent=True)),
        ("dirichlet", lambda k: r.dirichlet(k, jnp.array([1.0, 2.0, 3.0], dt), (2,), dt)),
        ("multivariate_normal", lambda k: r.multivariate_normal(k, jnp.zeros(2, dt), jnp.array([[2.0, 0.5], [0.5, 1.0]], dt), (3,), dt)),
        ("orthogonal", lambda k: r.orthogonal(k, 3, (), dt)),
        ("ball", lambda k: r.ball(k, 3, 2, (4,), dt)),
        # random_gamma over many alphas (the boost below 1, the rejection
        # loop's tests), in log space, and vmapped over keys and alphas
        ("gamma_many", lambda k: r.gamma(k, jnp.linspace(0.02, 30.0, 384, dtype=dt).reshape(3, 128), None, dt)),
        ("loggamma_many", lambda k: r.loggamma(k, jnp.linspace(0.02, 30.0, 256, dtype=dt), None, dt)),
        ("vmap_gamma", lambda k: jax.vmap(lambda kk, a: r.gamma(kk, a, (3,), dt))(r.split(k, 4), jnp.array([0.3, 1.0, 2.5, 7.0], dt))),
        ("generalized_normal", lambda k: r.generalized_normal(k, 1.5, (5,), dt)),
        ("vmap_normal", lambda k: jax.vmap(lambda kk: r.normal(kk, (3,), dt))(r.split(k, 4))),
        ("vmap_uniform", lambda k: jax.vmap(lambda kk: r.uniform(kk, (3,), dt))(r.split(k, 4))),
        ("loop_keys", lambda k: jax.lax.fori_loop(0, 3, lambda i, c: (r.split(c[0])[0], c[1] + r.uniform(c[0], (2,), dt)), (k, jnp.zeros(2, dt)))[1]),
        ("scan_keys", lambda k: jax.lax.scan(lambda c, x: (r.fold_in(c, 7), r.normal(c, (), dt)), k, None, length=3)[1]),
        ("cond_keys", lambda k: jax.lax.cond(True, lambda kk: r.split(kk, 2)[1], lambda kk: kk, k)),
        ("dropout_grad", lambda k: jax.grad(lambda w: jnp.sum(jnp.where(r.bernoulli(k, 0.5, (4,)), w * 2.0, 0.0) ** 2))(jnp.arange(4, dtype=dt))),
    ]
    return out


def run(out_dir, x64):
    import jax
    jax.config.update("jax_enable_x64", x64)
    import jax.numpy as jnp
    import numpy as np
    dt = jnp.float64 if x64 else jnp.float32
    pre = "x64_" if x64 else ""
    lines = []

    def kd(a):
        if jnp.issubdtype(a.dtype, jax.dtypes.prng_key):
            return np.asarray(jax.random.key_data(a))
        return np.asarray(a)

    for name, f in samplers(jax, jnp, dt):
        case = pre + name
        k = jax.random.key(20261202 if "b" in name[-2:] else 7)
        try:
            closed = jax.make_jaxpr(f)(k)
            text = str(closed)
            outs = jax.tree_util.tree_leaves(jax.jit(f)(k))
        except Exception as ex:  # noqa: BLE001 (recorded, not hidden)
            print(f"{case}: JAX refuses: {ex}", file=sys.stderr)
            continue
        with open(os.path.join(out_dir, case + ".jaxpr"), "w") as fh:
            fh.write(text + "\n")
        ins = [np.asarray(c) for c in closed.consts] + [kd(k)]  # constvars, then the key
        for i, a in enumerate(ins):
            np.save(os.path.join(out_dir, f"{case}.in{i}.npy"), a)
        for i, o in enumerate(outs):
            np.save(os.path.join(out_dir, f"{case}.out{i}.npy"), kd(o))
        base = name.rsplit("_", 1)[0] if name.endswith(("_s", "_b")) else name
        tol = ULP.get(base, (0, 0))[1 if x64 else 0]
        status = "bits" if not tol else f"ulp:{tol}"
        for prim in BLOCKING:
            if f"= {prim}[" in text or f"= {prim} " in text:
                status = f"blocked:{prim}"
                break
        lines.append(f"{case} {len(ins)} {len(outs)} {status}")
    # agrad_ cases: the loss's jaxpr (inputs alpha, key) and JAX's gradient
    for name, f, al in alpha_grads(jax, jnp, dt):
        case = pre + name
        k = jax.random.key(11)
        closed = jax.make_jaxpr(f)(al, k)
        g = jax.jit(jax.grad(f))(al, k)
        with open(os.path.join(out_dir, case + ".jaxpr"), "w") as fh:
            fh.write(str(closed) + "\n")
        ins = [np.asarray(c) for c in closed.consts] + [np.asarray(al), kd(k)]
        for i, a in enumerate(ins):
            np.save(os.path.join(out_dir, f"{case}.in{i}.npy"), a)
        np.save(os.path.join(out_dir, f"{case}.out0.npy"), np.asarray(g))
        tol = AGRAD_ULP[name][1 if x64 else 0]
        lines.append(f"{case} {len(ins)} 1 ulp:{tol}")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "fixtures", "random"))
    ap.add_argument("--child", choices=["x32", "x64"])
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.child:
        print("\n".join(run(a.out, a.child == "x64")))
        return
    lines = []
    for mode in ("x32", "x64"):
        r = subprocess.run([sys.executable, __file__, "--out", a.out, "--child", mode],
                           check=True, capture_output=True, text=True)
        sys.stderr.write(r.stderr)
        lines += [ln for ln in r.stdout.splitlines() if ln.strip()]
    with open(os.path.join(a.out, "CASES.txt"), "w") as fh:
        fh.write("# name n_in n_out tolerance (tools/oracle/gen_random.py)\n")
        fh.write("\n".join(sorted(lines)) + "\n")


if __name__ == "__main__":
    main()
