"""bench/linalg/bench_jax.py: jax.jit of the workloads of bench_linalg.c
(cholesky and solve at n = 64, 256, 1024 in f32; 512 solves of 16x16; the
GP negative log marginal likelihood with its gradient in K at n = 512), on
the same inputs; prints "name median_ms min_ms" per workload."""
import os
import time
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jax.scipy.linalg as jsl  # noqa: E402
import numpy as np  # noqa: E402

REPS = 9


def spd(b, n, seed):
    rng = np.random.default_rng(seed)
    v = rng.uniform(-0.5, 0.5, size=(b, n, n)).astype(np.float32)
    a = 0.5 * np.tril(v, -1)
    a = a + np.swapaxes(a, -1, -2)
    a[:, np.arange(n), np.arange(n)] = n + v[:, np.arange(n), np.arange(n)]
    return a


def run(name, f, *args):
    g = jax.jit(f)
    jax.block_until_ready(g(*args))
    jax.block_until_ready(g(*args))
    ts = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        jax.block_until_ready(g(*args))
        ts.append(1e3 * (time.perf_counter() - t0))
    print(f"{name} {np.median(ts):.3f} {min(ts):.3f}", flush=True)


def gp(k, y):
    c = jnp.linalg.cholesky(k)
    z = jsl.solve_triangular(c, y, lower=True)
    return 0.5 * jnp.sum(z * z) + jnp.sum(jnp.log(jnp.diagonal(c)))


for n in (64, 256, 1024):
    a = spd(1, n, 7)[0]
    b = ((np.arange(n) % 7) - 3).astype(np.float32)
    run(f"cholesky_{n}", jnp.linalg.cholesky, a)
    run(f"solve_{n}", jnp.linalg.solve, a, b)
a = spd(512, 16, 11)
b = ((np.arange(512 * 16) % 5) - 2).astype(np.float32).reshape(512, 16, 1)
run("solve_batch512x16", jnp.linalg.solve, a, b)
k = spd(1, 512, 13)[0]
y = np.sin(np.arange(512)).astype(np.float32)
run("gp_nll_value_and_grad_512", jax.value_and_grad(gp), k, y)
