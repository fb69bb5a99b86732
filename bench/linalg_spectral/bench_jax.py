"""bench/linalg_spectral/bench_jax.py: jax.jit of jnp.linalg.eigh / svd of
one 256 x 256 f32 matrix; prints "name median_ms min_ms" per workload."""
import os
import time
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

N, REPS = 256, 11
x = jnp.asarray(np.random.default_rng(42).uniform(-1, 1, (N, N)).astype(np.float32))
for name, f in [("eigh", jnp.linalg.eigh), ("svd", jnp.linalg.svd)]:
    g = jax.jit(f)
    jax.block_until_ready(g(x))
    jax.block_until_ready(g(x))
    ts = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        jax.block_until_ready(g(x))
        ts.append(1e3 * (time.perf_counter() - t0))
    print(f"{name} {np.median(ts):.3f} {min(ts):.3f}")
