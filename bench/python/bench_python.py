"""Python-side benchmarks of the frankentrace package (issue 25), side by
side with jax.jit in one process, interleaved:

  1. per-call overhead of ft.jit(f)(x) for a scalar f32 function (x*2+1),
     against jax.jit(f)(x) with the same NumPy input;
  2. an MLP training loop driven from Python (784-512-512-10 is too slow for
     a quick run here; 64-128-128-10, batch 64): value_and_grad compiled
     once, SGD update in the compiled step, parameters fed back each step.

Prints a Markdown table. Usage (with the package importable, e.g. after
tools/python-tests build-test):
  PYTHONPATH=build-test/python/cp312 .venv-python/bin/python bench/python/bench_python.py [--quick]
"""
import os
import platform
import sys
import time

import numpy as np

import frankentrace as ft
import jax
import jax.numpy as jnp


def timeit(fn, n, rounds):
    """Median and min over rounds of the mean time per call of n calls."""
    per = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        per.append((time.perf_counter() - t0) / n)
    per.sort()
    return per[len(per) // 2], per[0]


def fmt(s):
    return f"{s * 1e6:.2f} µs" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def main():
    quick = "--quick" in sys.argv
    rows = []

    # 1. call overhead
    f = lambda x: x * 2.0 + 1.0
    x = np.full((), 3.0, np.float32)
    fj, ff = jax.jit(f), ft.jit(f)
    assert np.asarray(fj(x)).tobytes() == ff(x).tobytes()
    n, rounds = (2000, 7) if quick else (20000, 15)
    res = {}
    for _ in range(2):  # interleaved
        res["ft"] = timeit(lambda: ff(x), n, rounds)
        res["jax"] = timeit(lambda: fj(x).block_until_ready(), n, rounds)
    rows.append(("call overhead, `x*2+1`, f32[] NumPy input", res["ft"], res["jax"]))
    xa = ft.aligned(np.ones(1024, np.float32))
    res["ft"] = timeit(lambda: ff(xa), n, rounds)
    res["jax"] = timeit(lambda: fj(xa).block_until_ready(), n, rounds)
    rows.append(("call overhead, `x*2+1`, f32[1024] (64-byte aligned: no copy)", res["ft"], res["jax"]))

    # 2. MLP training loop
    sizes = [64, 128, 128, 10]
    batch = 64
    rng = np.random.default_rng(0)
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        params += [(rng.normal(size=(a, b)) / np.sqrt(a)).astype(np.float32), np.zeros(b, np.float32)]
    xb = rng.normal(size=(batch, sizes[0])).astype(np.float32)
    yb = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]

    def loss(p, x, y):
        h = x
        for i in range(0, len(p) - 2, 2):
            h = jnp.tanh(h @ p[i] + p[i + 1])
        logits = h @ p[-2] + p[-1]
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))

    def step(p, x, y):
        l, g = jax.value_and_grad(loss)(p, x, y)
        return [w - 0.1 * gw for w, gw in zip(p, g)], l

    vg = ft.value_and_grad(loss)  # made once: its compile cache lives on it

    def ft_step(p, x, y):  # the same step with the library's value_and_grad
        l, g = vg(p, x, y)
        return [w - 0.1 * gw for w, gw in zip(p, g)], l

    sj = jax.jit(step)
    sf = ft.jit(step)  # traced by JAX, differentiated and compiled by FrankenTrace
    steps = 20 if quick else 100

    def run(stepper, p0):
        p = list(p0)
        for _ in range(steps):
            p, l = stepper(p, xb, yb)
        return p, l

    _, lj = run(sj, params)
    _, lf = run(sf, params)
    _, lf2 = run(lambda p, x, y: ft_step(p, x, y), params)  # grad by the library, update in NumPy
    agree = abs(float(lj) - float(lf)) / abs(float(lj))
    res_ft = timeit(lambda: run(sf, params), 1, 5 if quick else 9)
    res_jax = timeit(lambda: jax.block_until_ready(run(sj, params)), 1, 5 if quick else 9)
    res_ft2 = timeit(lambda: run(ft_step, params), 1, 5 if quick else 9)
    rows.append((f"MLP {'-'.join(map(str, sizes))} batch {batch}, {steps} SGD steps from Python, "
                 f"ft.jit(step) with jax.value_and_grad inside (loss agrees to {agree:.1e})",
                 (res_ft[0] / steps, res_ft[1] / steps), (res_jax[0] / steps, res_jax[1] / steps)))
    rows.append((f"the same, ft.value_and_grad(loss) compiled, update in NumPy (loss {float(lf2):.4f} "
                 f"vs {float(lj):.4f})", (res_ft2[0] / steps, res_ft2[1] / steps),
                 (res_jax[0] / steps, res_jax[1] / steps)))

    print(f"machine: {platform.machine()} {os.cpu_count()} CPUs, load average "
          f"{' '.join(f'{v:.1f}' for v in os.getloadavg())}; Python {platform.python_version()}, "
          f"jax {jax.__version__}, frankentrace {ft.__version__}")
    print()
    print("| workload | ft median (min) | jax.jit median (min) | ft/jax |")
    print("|---|---:|---:|---:|")
    for name, a, b in rows:
        print(f"| {name} | {fmt(a[0])} ({fmt(a[1])}) | {fmt(b[0])} ({fmt(b[1])}) | {a[0] / b[0]:.2f} |")


if __name__ == "__main__":
    main()
