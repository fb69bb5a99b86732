"""bench/rnn/bench_jax.py: jax.jit(jax.grad(loss, argnums=(0, 1, 2))) of a
tanh RNN over T steps (lax.scan; hidden 256, batch 32, input 64, f32), the
program bench_rnn.c differentiates; prints "rnn_grad median_ms min_ms
temp_bytes": call time and XLA's temporary buffer bytes of one call
(compiled.memory_analysis()). Environment: BENCH_T, BENCH_REPS."""
import os
import time
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

T = int(os.environ.get("BENCH_T", "1000"))
REPS = int(os.environ.get("BENCH_REPS", "7"))
H, B, D = 256, 32, 64


def loss(w, u, b, xs):
    def step(h, x):
        return jnp.tanh(h @ w + x @ u + b), None
    hT, _ = jax.lax.scan(step, jnp.zeros((B, H), jnp.float32), xs)
    return jnp.sum(hT)


rng = np.random.default_rng(7)
args = [rng.uniform(-s, s, shape).astype(np.float32)
        for s, shape in [(0.05, (H, H)), (0.1, (D, H)), (0.1, (H,)), (1.0, (T, B, D))]]
g = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))
temp = g.lower(*args).compile().memory_analysis().temp_size_in_bytes
jax.block_until_ready(g(*args))
ts = []
for _ in range(REPS):
    t0 = time.perf_counter()
    jax.block_until_ready(g(*args))
    ts.append(1e3 * (time.perf_counter() - t0))
print(f"rnn_grad {np.median(ts):.3f} {min(ts):.3f} {temp}")
