"""bench/random/bench_jax.py: jax.jit of jax.random.uniform / normal over
2^24 f32 from one key; prints "name median_ms min_ms" per sampler."""
import os
import time
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import numpy as np  # noqa: E402

N, REPS = 1 << 24, 15
key = jax.random.key(42)
for name, f in [("uniform", lambda k: jax.random.uniform(k, (N,))),
                ("normal", lambda k: jax.random.normal(k, (N,)))]:
    g = jax.jit(f)
    g(key).block_until_ready()
    g(key).block_until_ready()
    ts = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        g(key).block_until_ready()
        ts.append(1e3 * (time.perf_counter() - t0))
    print(f"{name} {np.median(ts):.3f} {min(ts):.3f}")
