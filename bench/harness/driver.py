#!/usr/bin/env python3
"""bench/harness/driver.py: runs every benchmark workload in FrankenTrace and
JAX (and NumPy where the issue asks) in one process tree, interleaved
A B A B, and writes one JSON result file.

FrankenTrace runs in a C worker (bench/harness/worker.c) this driver talks to
over a pipe; JAX and NumPy run in this process. For each workload:

  1. the inputs are drawn here (NumPy, fixed seed) and written as .npy; the
     worker reads the same bytes;
  2. each side is set up and warmed up (compile, first call), and its
     number of calls per repetition is calibrated so that one repetition
     lasts about --rep-seconds;
  3. one warm-up repetition each, then for r in 1..reps:
        FrankenTrace rep r, JAX rep r, [NumPy rep r], [FrankenTrace with
        OPENBLAS_CORETYPE unset, rep r]
     so slow drifts of the machine hit all sides alike;
  4. per side: median and minimum of the per-call times; ratios
     FrankenTrace/JAX computed pair by pair (rep r against rep r), then
     their median, min and max;
  5. the outputs are compared (FrankenTrace's saved .npy against JAX's).

Invoked by bench/run; see docs/benchmarks.md for the methodology.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
# A pause before every repetition of every side: a thread pool that spins
# for a while after its work would otherwise take a core from the side
# measured next. NumPy's OpenBLAS threads busy-wait for new work after a
# multi-threaded call (about 2^28 cycles by default); with no pause the
# FrankenTrace repetition after NumPy's mlp_step ran 4.4-5.8 ms, with it
# 3.6 ms (its steady state in a process of its own: 3.0-3.1 ms). The same
# pause for every side.
GAP_SECONDS = 0.25


def log(*a):
    print("[bench]", *a, file=sys.stderr, flush=True)


def sh(cmd, **kw):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False, **kw).stdout.strip()
    except OSError:
        return ""


# ----------------------------------------------------------------- worker
class Worker:
    """The C side: one line in, one line out. Restarted if it dies."""

    def __init__(self, exe, env, label, logdir):
        self.exe, self.env, self.label = exe, env, label
        self.errpath = os.path.join(logdir, f"worker-{label}.stderr")
        self.p = None
        self.start()

    def start(self):
        self.err = open(self.errpath, "a")
        self.p = subprocess.Popen([self.exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, text=True, env=self.env, bufsize=1)

    def cmd(self, line):
        try:
            self.p.stdin.write(line + "\n")
            self.p.stdin.flush()
            ans = self.p.stdout.readline()
        except BrokenPipeError:
            ans = ""
        if not ans:
            rc = self.p.wait()
            self.err.close()
            tail = open(self.errpath).read()[-300:].replace("\n", " ")
            self.start()
            return ["err", f"worker crashed (exit {rc}) on '{line}': {tail}"]
        return ans.rstrip("\n").split(" ", 1) if ans.startswith("err") else ans.split()

    def close(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.flush()
            self.p.wait(timeout=30)
        except Exception:
            self.p.kill()
        self.err.close()


# ------------------------------------------------------------ statistics
def summarize(times):
    return {"median": statistics.median(times), "min": min(times), "max": max(times),
            "reps": len(times), "all": times}


def ratio_stats(a, b):
    r = [x / y for x, y in zip(a, b)]
    return {"median": statistics.median(r), "min": min(r), "max": max(r), "all": r}


# ---------------------------------------------------------------- machine
def machine_info():
    cpu = {}
    try:
        txt = open("/proc/cpuinfo").read()
        cpu["model"] = re.search(r"model name\s*:\s*(.*)", txt).group(1)
        flags = re.search(r"flags\s*:\s*(.*)", txt).group(1).split()
        cpu["flags"] = " ".join(flags)
        cpu["simd"] = [f for f in flags if f.startswith(("avx", "sse4", "fma", "f16c", "amx"))]
    except Exception as e:  # not Linux
        cpu["model"] = platform.processor() or str(e)
    cpu["logical_cpus"] = os.cpu_count()
    cpu["affinity"] = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    mem = sh(["awk", "/MemTotal/ {print $2}", "/proc/meminfo"])
    commit = sh(["git", "-C", ROOT, "rev-parse", "HEAD"])
    # Uncommitted work in the library is part of what was measured: name it.
    status = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "src", "include", "meson.build"],
                            capture_output=True, text=True).stdout
    changes = sorted({line[3:].strip() for line in status.splitlines() if len(line) > 3})
    llvm = sh(["llvm-config-19", "--version"]) or sh(["llvm-config", "--version"])
    env = {k: os.environ.get(k) for k in OPENBLAS_VARS + (
        "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "FT_NUM_THREADS", "XLA_FLAGS",
        "JAX_PLATFORMS", "MALLOC_ARENA_MAX", "LD_PRELOAD", "FT_BENCH_ENGINE")}
    return {"cpu": cpu, "mem_kib": int(mem) if mem.isdigit() else None,
            "kernel": platform.release(), "os": sh(["sh", "-c", ". /etc/os-release; echo $PRETTY_NAME"]),
            "python": platform.python_version(), "commit": commit, "commit_short": commit[:10],
            "worktree_changes": changes, "llvm": llvm, "env": env,
            "gcc": sh(["gcc", "-dumpfullversion"]), "loadavg_start": os.getloadavg()}


# ------------------------------------------------------------------ data
def write_inputs(datadir, name, arrays):
    for i, a in enumerate(arrays):
        np.save(os.path.join(datadir, f"{name}.in{i}.npy"), a)


def make_data(name, sz, rng):
    f32 = np.float32
    if name == "scalar":
        return [np.array(1.5, f32)]
    if name in ("elementwise", "sum", "max", "logsumexp"):
        return [rng.standard_normal(sz["vec"], dtype=f32)]
    if name in ("softmax",):
        return [rng.standard_normal(sz["rows"], dtype=f32)]
    if name == "layernorm":
        r, c = sz["rows"]
        return [rng.standard_normal((r, c), dtype=f32), 1 + 0.1 * rng.standard_normal(c, dtype=f32),
                0.1 * rng.standard_normal(c, dtype=f32)]
    if name == "mlp_step":
        b, dims = 128, (784, 512, 512, 10)
        out = []
        for i in range(3):
            out.append((rng.standard_normal((dims[i], dims[i + 1]), dtype=f32) * np.sqrt(2 / dims[i])).astype(f32))
            out.append(np.zeros(dims[i + 1], f32) + f32(0.01))
        out.append(rng.standard_normal((b, 784), dtype=f32))
        out.append(np.eye(10, dtype=f32)[rng.integers(0, 10, b)])
        return out
    if name == "attention":
        s = sz["seq"]
        return [rng.standard_normal((s, 512), dtype=f32)] + [
            (rng.standard_normal((512, 512), dtype=f32) / np.sqrt(512)).astype(f32) for _ in range(4)]
    if name == "rnn":
        t, h = sz["rnn"]
        return [np.zeros(h, f32), rng.standard_normal((t, h), dtype=f32),
                (0.9 * rng.standard_normal((h, h), dtype=f32) / np.sqrt(h)).astype(f32),
                (rng.standard_normal((h, h), dtype=f32) / np.sqrt(h)).astype(f32),
                0.1 * rng.standard_normal(h, dtype=f32)]
    if name == "fft_real":
        return [rng.standard_normal(sz["fft"], dtype=f32)]
    if name == "fft_batch":
        shape = sz["fft_batch"]
        return [(rng.standard_normal(shape, dtype=f32) + 1j * rng.standard_normal(shape, dtype=f32)).astype(np.complex64)]
    raise KeyError(name)


# ------------------------------------------------------- JAX and NumPy
def jax_functions():
    import jax
    import jax.numpy as jnp
    from jax import lax

    def scalar(x):
        return x * 2 + 1

    def elementwise(x):
        return jnp.tanh(x) * jax.nn.sigmoid(x) + x * x

    def layernorm(x, g, b):
        mu = jnp.mean(x, axis=-1, keepdims=True)
        xc = x - mu
        var = jnp.mean(xc * xc, axis=-1, keepdims=True)
        return xc * lax.rsqrt(var + 1e-5) * g + b

    def mlp_loss(w1, b1, w2, b2, w3, b3, x, y):
        h = jax.nn.relu(x @ w1 + b1)
        h = jax.nn.relu(h @ w2 + b2)
        lp = jax.nn.log_softmax(h @ w3 + b3, axis=-1)
        return jnp.mean(-jnp.sum(y * lp, axis=-1))

    def mlp_step(*a):
        loss, g = jax.value_and_grad(mlp_loss, argnums=(0, 1, 2, 3, 4, 5))(*a)
        return (loss,) + tuple(p - 0.01 * gi for p, gi in zip(a[:6], g))

    def attention(x, wq, wk, wv, wo):
        s = x.shape[0]

        def heads(w):
            return (x @ w).reshape(s, 8, 64).transpose(1, 0, 2)

        q, k, v = heads(wq), heads(wk), heads(wv)
        p = jax.nn.softmax(jnp.einsum("hqd,hkd->hqk", q, k) * 0.125, axis=-1)
        o = jnp.einsum("hqk,hkd->hqd", p, v)
        return o.transpose(1, 0, 2).reshape(s, 512) @ wo

    def rnn(h0, xs, wh, wx, b):
        def body(h, x):
            h = jnp.tanh(h @ wh + x @ wx + b)
            return h, h
        return lax.scan(body, h0, xs)

    return {
        "scalar": scalar, "elementwise": elementwise,
        "sum": lambda x: jnp.sum(x), "max": lambda x: jnp.max(x),
        "logsumexp": lambda x: jax.nn.logsumexp(x),
        "softmax": lambda x: jax.nn.softmax(x, axis=-1), "layernorm": layernorm,
        "mlp_step": mlp_step, "attention": attention, "rnn": rnn,
        "fft_real": lambda x: jnp.fft.rfft(x), "fft_batch": lambda x: jnp.fft.fft(x, axis=-1),
    }


def numpy_functions():
    def sigmoid(x):
        return 1 / (1 + np.exp(-x))

    def logsumexp(x):
        m = np.max(x)
        return m + np.log(np.sum(np.exp(x - m)))

    def softmax(x):
        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e / np.sum(e, axis=-1, keepdims=True)

    def layernorm(x, g, b):
        mu = np.mean(x, axis=-1, keepdims=True)
        xc = x - mu
        var = np.mean(xc * xc, axis=-1, keepdims=True)
        return xc / np.sqrt(var + np.float32(1e-5)) * g + b

    def mlp_step(w1, b1, w2, b2, w3, b3, x, y):
        # Forward and hand-written backward pass: what a NumPy user writes.
        h1p = x @ w1 + b1
        h1 = np.maximum(h1p, 0)
        h2p = h1 @ w2 + b2
        h2 = np.maximum(h2p, 0)
        z = h2 @ w3 + b3
        m = np.max(z, axis=1, keepdims=True)
        e = np.exp(z - m)
        s = np.sum(e, axis=1, keepdims=True)
        lp = z - m - np.log(s)
        loss = np.mean(-np.sum(y * lp, axis=1))
        dz = (e / s * np.sum(y, axis=1, keepdims=True) - y) / np.float32(x.shape[0])
        gw3, gb3 = h2.T @ dz, dz.sum(0)
        d2 = (dz @ w3.T) * (h2p > 0)
        gw2, gb2 = h1.T @ d2, d2.sum(0)
        d1 = (d2 @ w2.T) * (h1p > 0)
        gw1, gb1 = x.T @ d1, d1.sum(0)
        lr = np.float32(0.01)
        return (loss, w1 - lr * gw1, b1 - lr * gb1, w2 - lr * gw2, b2 - lr * gb2, w3 - lr * gw3, b3 - lr * gb3)

    return {
        "elementwise": lambda x: np.tanh(x) * sigmoid(x) + x * x,
        "sum": np.sum, "max": np.max, "logsumexp": logsumexp,
        "softmax": softmax, "layernorm": layernorm, "mlp_step": mlp_step,
    }


# ------------------------------------------------------------ workloads
# (name, issue number, bytes moved per call (for GB/s), flops per call, GEMM-bound)
def workload_table(sz):
    vec = sz["vec"]
    r, c = sz["rows"]
    s = sz["seq"]
    t, h = sz["rnn"]
    mlp_f = 2 * 128 * (784 * 512 + 512 * 512 + 512 * 10)
    return [
        ("scalar", 1, None, None, False),
        ("elementwise", 3, 8 * vec, None, False),
        ("sum", 4, 4 * vec, None, False),
        ("max", 4, 4 * vec, None, False),
        ("logsumexp", 4, 4 * vec, None, False),
        ("mlp_step", 5, None, 2 * mlp_f + 2 * 128 * (512 * 512 + 512 * 10), True),
        ("softmax", 6, 8 * r * c, None, False),
        ("layernorm", 6, 8 * r * c, None, False),
        ("attention", 7, None, 4 * 2 * s * 512 * 512 + 2 * 2 * 8 * s * s * 64, True),
        ("rnn", 8, None, t * 2 * 2 * h * h, True),
        ("fft_real", 9, None, None, False),
        ("fft_batch", 9, None, None, False),
    ]


def timed(fn, k):
    t0 = time.perf_counter()
    for _ in range(k):
        fn()
    return time.perf_counter() - t0


def calibrate(once_seconds, target):
    return max(1, min(2_000_000, int(target / max(once_seconds, 1e-9))))


def compare(ft_paths, ref):
    """max |ft - ref| / max |ref| over every output (0 = identical)."""
    worst = 0.0
    for p, r in zip(ft_paths, ref):
        a = np.load(p)
        r = np.asarray(r)
        if a.shape != r.shape:
            return float("inf")
        scale = float(np.max(np.abs(r))) if r.size else 1.0
        err = float(np.max(np.abs(a.astype(np.complex128) - r.astype(np.complex128)))) if r.size else 0.0
        worst = max(worst, err / (scale if scale > 0 else 1.0))
    return worst


def run_workload(spec, args, datadir, workers, jfns, nfns, rng):
    import jax

    name, issue, nbytes, flops, gemm = spec
    res = {"name": name, "issue": issue, "bytes": nbytes, "flops": flops, "gemm_bound": gemm}
    arrays = make_data(name, args.sizes, rng)
    write_inputs(datadir, name, arrays)
    res["shapes"] = [f"{a.dtype}{list(a.shape)}" for a in arrays]

    # FrankenTrace: one worker (environment as set), plus the coretype-unset
    # worker for GEMM-bound workloads when it is a different command.
    sides = [("ft", workers["set"])]
    if gemm and "alt" in workers:
        sides.append(("ft_alt", workers["alt"]))
    ft = {}
    for label, w in sides:
        ans = w.cmd(f"setup {name} {datadir}")
        if ans[0] != "ok":
            res[label] = {"status": "pending", "why": ans[1] if len(ans) > 1 else "?"}
            continue
        res[label] = {"status": "ok", "engine": ans[1].replace("_", " "), "setup_ms": float(ans[2])}
        t1 = float(w.cmd(f"run {name} 1")[1])
        ft[label] = (w, calibrate(t1, args.rep_seconds))
    # JAX
    jf = jax.jit(jfns[name])
    dev = [jax.device_put(a) for a in arrays]
    t0 = time.perf_counter()
    jout = jax.block_until_ready(jf(*dev))
    res["jax"] = {"status": "ok", "first_call_ms": (time.perf_counter() - t0) * 1e3}

    def jcall():
        jax.block_until_ready(jf(*dev))

    jk = calibrate(timed(jcall, 1), args.rep_seconds)
    # NumPy
    nf = nfns.get(name) if args.numpy else None
    if nf:
        nf(*arrays)
        nk = calibrate(timed(lambda: nf(*arrays), 1), args.rep_seconds)
        res["numpy"] = {"status": "ok"}

    times = {k: [] for k in list(ft) + ["jax"] + (["numpy"] if nf else [])}
    for r in range(-1, args.reps):  # r = -1: warm-up repetition, discarded
        for label, (w, k) in ft.items():
            time.sleep(args.gap)
            ans = w.cmd(f"run {name} {k}")
            if ans[0] != "ok":
                res[label] = {"status": "failed", "why": ans[1]}
                continue
            if r >= 0:
                times[label].append(float(ans[1]) / k)
        time.sleep(args.gap)
        tj = timed(jcall, jk)
        if r >= 0:
            times["jax"].append(tj / jk)
        if nf:
            time.sleep(args.gap)
            tn = timed(lambda: nf(*arrays), nk)
            if r >= 0:
                times["numpy"].append(tn / nk)
        ft = {l: v for l, v in ft.items() if res[l]["status"] == "ok"}

    for label in list(ft) + ["jax"] + (["numpy"] if nf else []):
        res[label].update(summarize(times[label]))
        res[label]["calls_per_rep"] = ft[label][1] if label in ft else (jk if label == "jax" else nk)
    for label in ft:
        res[label]["ratio_vs_jax"] = ratio_stats(times[label], times["jax"])
        # Correctness: FrankenTrace's outputs against JAX's.
        ans = ft[label][0].cmd(f"save {name} {datadir}")
        if ans[0] == "ok":
            ref = jout if isinstance(jout, (tuple, list)) else [jout]
            ref = jax.tree_util.tree_leaves(ref)
            n_out = len(ref)
            paths = [os.path.join(datadir, f"{name}.ft.out{i}.npy") for i in range(n_out)]
            res[label]["max_rel_err_vs_jax"] = compare(paths, [np.asarray(x) for x in ref])
        ft[label][0].cmd(f"free {name}")
    if nf:
        res["numpy"]["ratio_ft_vs_numpy"] = (ratio_stats(times["ft"], times["numpy"]) if "ft" in ft else None)
        res["numpy"]["ratio_vs_jax"] = ratio_stats(times["numpy"], times["jax"])
    for f in os.listdir(datadir):
        if f.startswith(name + ".") and f.endswith(".npy"):
            os.remove(os.path.join(datadir, f))
    return res


def run_compile(args, datadir, worker, jfns, rng):
    """Workload 2: cold compile of the MLP training step to its first result."""
    import jax

    arrays = make_data("mlp_step", args.sizes, rng)
    write_inputs(datadir, "mlp_step", arrays)
    dev = [jax.device_put(a) for a in arrays]
    res = {"name": "compile_mlp_step", "issue": 2}
    ft_t, ft_parts, jx_t, jx_first, jx_steady = [], [], [], [], []
    pending = None
    for r in range(-1, args.compile_reps):
        if pending is None:
            ans = worker.cmd(f"compile mlp_step {datadir}")
            if ans[0] != "ok":
                pending = ans[1] if len(ans) > 1 else "?"
            elif r >= 0:
                v = [float(x) for x in ans[1:]]
                ft_t.append(v[0] / 1e3)
                ft_parts.append(dict(zip(["trace_ms", "grad_ms", "splice_parse_ms", "jit_ms", "first_call_ms"], v[1:])))
        jax.clear_caches()
        f = jax.jit(lambda *a: jfns["mlp_step"](*a))
        t0 = time.perf_counter()
        jax.block_until_ready(f(*dev))
        t1 = time.perf_counter()
        jax.block_until_ready(f(*dev))
        t2 = time.perf_counter()
        if r >= 0:
            jx_first.append(t1 - t0)
            jx_steady.append(t2 - t1)
            jx_t.append((t1 - t0) - (t2 - t1))
    res["jax"] = summarize(jx_t)
    res["jax"]["first_call"] = summarize(jx_first)
    res["jax"]["steady_call"] = summarize(jx_steady)
    if pending is not None:
        res["ft"] = {"status": "pending", "why": pending}
    else:
        res["ft"] = {"status": "ok", "engine": "jit (no compile cache)", **summarize(ft_t)}
        res["ft"]["parts_median_ms"] = {k: statistics.median(p[k] for p in ft_parts) for k in ft_parts[0]}
        res["ft"]["ratio_vs_jax"] = ratio_stats(ft_t, jx_t)
    for f in os.listdir(datadir):
        if f.startswith("mlp_step."):
            os.remove(os.path.join(datadir, f))
    return res


MEMORY_WORKLOADS = ("mlp_step", "softmax", "attention")


def run_memory(args, datadir, worker, jfns, rng):
    """Issue 7: memory of one call. FrankenTrace: the buffer plan's arena
    (planned peak of the intermediates), the intermediates added up (no
    reuse), argument and output bytes. JAX: XLA's buffer assignment from
    jax.jit(f).lower(*args).compile().memory_analysis(). Inputs of the timed
    workloads' shapes, drawn afresh."""
    import jax

    out = []
    for name in MEMORY_WORKLOADS:
        row = {"name": name}
        arrays = make_data(name, args.sizes, rng)
        write_inputs(datadir, name, arrays)
        row["shapes"] = [f"{a.dtype}{list(a.shape)}" for a in arrays]
        ans = worker.cmd(f"setup {name} {datadir}")
        if ans[0] == "ok":
            m = worker.cmd(f"memory {name}")
            if m[0] == "ok":
                v = [int(x) for x in m[1:]]
                row["ft"] = dict(zip(["arena_bytes", "buffers_bytes", "argument_bytes", "output_bytes",
                                      "steps"], v), status="ok")
            else:
                row["ft"] = {"status": "failed", "why": m[1] if len(m) > 1 else "?"}
            worker.cmd(f"free {name}")
        else:
            row["ft"] = {"status": "pending", "why": ans[1] if len(ans) > 1 else "?"}
        try:
            ma = jax.jit(jfns[name]).lower(*arrays).compile().memory_analysis()
            row["jax"] = {k: int(getattr(ma, k)) for k in (
                "temp_size_in_bytes", "argument_size_in_bytes", "output_size_in_bytes",
                "alias_size_in_bytes", "generated_code_size_in_bytes", "peak_memory_in_bytes")
                if hasattr(ma, k)}
        except Exception as e:  # memory_analysis is backend-dependent
            row["jax"] = {"error": repr(e)}
        for f in os.listdir(datadir):
            if f.startswith(name + ".") and f.endswith(".npy"):
                os.remove(os.path.join(datadir, f))
        ft, jx = row.get("ft", {}), row.get("jax", {})
        log(f"memory {name}: ft arena {ft.get('arena_bytes')} B (sum {ft.get('buffers_bytes')} B); "
            f"jax temp {jx.get('temp_size_in_bytes')} B")
        out.append(row)
    return out


def run_overhead(args, worker):
    """Issue 7: the executor's cost per step (target under 1 us), from a
    compiled chain of tiny steps (bench/harness/worker.c, cmd_overhead)."""
    res = {"tiny_steps": args.overhead_steps}
    ans = worker.cmd(f"overhead {args.overhead_steps}")
    if ans[0] != "ok":
        res.update(status="failed", why=ans[1] if len(ans) > 1 else "?")
        return res
    v = [float(x) for x in ans[1:]]
    res.update(status="ok", ns_per_step_1t=v[0], ns_per_step_2t=v[1], steps=int(v[2]),
               call_ns_1t=v[3], call_ns_2t=v[4])
    log(f"executor overhead: {v[0]:.0f} ns/step (1 thread), {v[1]:.0f} ns/step (2 threads)")
    return res


THREAD_WORKLOADS = ("elementwise", "mlp_step")


def run_threads(args, datadir, worker_exe, env):
    """Issue 7: the 2-thread speedup over 1 thread. Two workers, one with
    FT_NUM_THREADS=1 and one with 2, run the same program on the same inputs,
    repetitions alternating (1-thread rep r, 2-thread rep r); the speedup is
    taken pair by pair. The outputs of the two must be the same bytes
    (thread-count independence, DESIGN.md section 10), checked here too."""
    rng = np.random.default_rng(20261131)  # its own stream: other workloads' data stay the same
    ws = {n: Worker(worker_exe, dict(env, FT_NUM_THREADS=str(n)), f"t{n}", datadir) for n in (1, 2)}
    out = []
    for name in THREAD_WORKLOADS:
        row = {"name": name}
        arrays = make_data(name, args.sizes, rng)
        write_inputs(datadir, name, arrays)
        row["shapes"] = [f"{a.dtype}{list(a.shape)}" for a in arrays]
        ks = {}
        for n, w in ws.items():
            ans = w.cmd(f"setup {name} {datadir}")
            if ans[0] != "ok":
                row["status"], row["why"] = "failed", ans[1] if len(ans) > 1 else "?"
                break
            ks[n] = calibrate(float(w.cmd(f"run {name} 1")[1]), args.rep_seconds)
        if len(ks) == 2:
            times = {1: [], 2: []}
            for r in range(-1, args.reps):
                for n, w in ws.items():
                    ans = w.cmd(f"run {name} {ks[n]}")
                    if ans[0] == "ok" and r >= 0:
                        times[n].append(float(ans[1]) / ks[n])
            blobs = {}
            for n, w in ws.items():
                ans = w.cmd(f"save {name} {datadir}")
                files = sorted(f for f in os.listdir(datadir) if f.startswith(name + ".ft.out"))
                blobs[n] = [open(os.path.join(datadir, f), "rb").read() for f in files] if ans[0] == "ok" else None
            row.update(status="ok", t1=summarize(times[1]), t2=summarize(times[2]),
                       speedup=ratio_stats(times[1], times[2]),
                       bitwise_equal=blobs[1] is not None and blobs[1] == blobs[2])
            log(f"threads {name}: 1T {row['t1']['median']*1e3:.3f} ms, 2T {row['t2']['median']*1e3:.3f} ms, "
                f"speedup {row['speedup']['median']:.2f}, bitwise equal {row['bitwise_equal']}")
        for w in ws.values():
            w.cmd(f"free {name}")
        for f in os.listdir(datadir):
            if f.startswith(name + ".") and f.endswith(".npy"):
                os.remove(os.path.join(datadir, f))
        out.append(row)
    for w in ws.values():
        w.close()
    return out


def jax_chain(n):
    import jax.numpy as jnp

    def f(x):
        for i in range(1, n + 1):
            k = i % 4
            x = jnp.sin(x) if k == 0 else x * 1.0001 if k == 1 else x + 0.5 if k == 2 else jnp.tanh(x)
        return jnp.sum(x)
    return f


def run_transforms(args, worker):
    """Workload 10: grad and vmap time per equation (FrankenTrace), and JAX's
    make_jaxpr of the same transform for scale (interleaved per size)."""
    import jax

    out = []
    x, xs = np.ones(8, np.float32), np.ones((16, 8), np.float32)
    for n in args.transform_sizes:
        reps = 3 if n >= 100000 else args.reps
        jreps = 1 if n >= 100000 else min(args.reps, 3 if n >= 10000 else args.reps)
        for kind in ("grad", "vmap"):
            row = {"kind": kind, "equations": n + 1}
            ft_t, jx_t = [], []
            for r in range(max(reps, jreps)):
                if r < reps:
                    ans = worker.cmd(f"transform {kind} {n} 1")
                    if ans[0] != "ok":
                        row["ft"] = {"status": "pending", "why": ans[1]}
                        break
                    ft_t.append(float(ans[1]))
                    row["out_equations"] = int(ans[3])
                if r < jreps and n <= args.jax_transform_max:
                    f = jax_chain(n)
                    t0 = time.perf_counter()
                    if kind == "grad":
                        jax.make_jaxpr(jax.grad(f))(x)
                    else:
                        jax.make_jaxpr(jax.vmap(f))(xs)
                    jx_t.append(time.perf_counter() - t0)
            if ft_t:
                s = summarize(ft_t)
                row["ft"] = {"status": "ok", **s, "us_per_eqn_median": s["median"] * 1e6 / (n + 1),
                             "us_per_eqn_min": s["min"] * 1e6 / (n + 1)}
            if jx_t:
                s = summarize(jx_t)
                row["jax"] = {**s, "us_per_eqn_median": s["median"] * 1e6 / (n + 1)}
            out.append(row)
            log(f"transform {kind} n={n}: ft {row.get('ft', {}).get('us_per_eqn_median', 'pending')} us/eqn")
    return out


def run_limits(exe, args):
    """STREAM and GEMM with the environment as set, then with the OpenBLAS
    coretype variables removed for that command alone (and, when the
    environment sets none, with the project's documented Haswell setting)."""
    out = {}
    base = dict(os.environ)
    common = ["--reps", str(args.limit_reps), "--mib", str(args.stream_mib)]
    variants = [("as_set", base, [])]
    unset = {k: v for k, v in base.items() if k not in OPENBLAS_VARS}
    variants.append(("unset", unset, ["--no-stream"]))
    if not any(base.get(k) for k in OPENBLAS_VARS):
        variants.append(("haswell", dict(unset, OPENBLAS_CORETYPE="Haswell"), ["--no-stream"]))
    for label, env, extra in variants:
        p = subprocess.run([exe] + common + extra, capture_output=True, text=True, env=env)
        if p.returncode != 0:
            out[label] = {"error": p.stderr[-500:]}
            continue
        out[label] = json.loads(p.stdout)
        log(f"limits {label}: corename {out[label]['openblas_corename']}")
    return out


def run_egraph(args):
    """Workload 11: bench/egraph/run (our engine and egglog from PyPI, side by side)."""
    ftc = os.path.join(args.build, "tools", "ftc")
    env = dict(os.environ, FTC=ftc, NS=" ".join(map(str, args.egraph_ns)), REPS=str(args.egraph_reps))
    t0 = time.perf_counter()
    p = subprocess.run([os.path.join(ROOT, "bench", "egraph", "run")], capture_output=True, text=True, env=env)
    res = {"seconds": time.perf_counter() - t0, "table": p.stdout, "rows": []}
    if p.returncode != 0:
        res["status"] = "failed"
        res["why"] = p.stderr[-500:]
        return res
    res["status"] = "ok"
    for line in p.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 14 and cells[0].isdigit():
            def secs(s):
                return float(s.split()[0])
            ratio = [float(x) for x in re.findall(r"[\d.]+", cells[11])]
            ratio_cpu = [float(x) for x in re.findall(r"[\d.]+", cells[12])]
            row = {"n": int(cells[0]), "enodes": int(cells[1]), "eclasses": int(cells[2]),
                   "run_s": secs(cells[3]), "wall_s": secs(cells[4]), "cpu_s": secs(cells[5]),
                   "peak_rss": cells[6], "egglog_run_s": secs(cells[7]), "egglog_wall_s": secs(cells[8]),
                   "egglog_cpu_s": secs(cells[9]), "egglog_peak_rss": cells[10],
                   "ratio": {"median": ratio[0], "min": ratio[1], "max": ratio[2]},
                   "ratio_cpu": {"median": ratio_cpu[0], "min": ratio_cpu[1], "max": ratio_cpu[2]},
                   "runs": cells[13]}
            res["rows"].append(row)
    m = re.search(r"egglog (\S+) run", p.stdout)
    res["egglog_version"] = m[1] if m else None
    return res


def jax_info():
    import jax
    import jaxlib
    info = {"jax": jax.__version__, "jaxlib": jaxlib.__version__, "numpy": np.__version__,
            "devices": [str(d) for d in jax.devices()], "backend": jax.default_backend()}
    try:
        info["numpy_blas"] = [c.get("name") + " " + str(c.get("version")) for c in
                              np.show_config(mode="dicts")["Build Dependencies"].values() if isinstance(c, dict)]
    except Exception:
        pass
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer reps, smaller sizes (development)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build-bench"))
    ap.add_argument("--out", help="result JSON path (default bench/results/<date>-<commit>.json)")
    ap.add_argument("--only", help="comma-separated workload names (plus compile, transforms, egraph, limits, "
                    "memory, overhead, threads)")
    ap.add_argument("--egraph12", action=argparse.BooleanOptionalAction, default=None,
                    help="include the e-graph N=12 run (default: on in full mode)")
    args = ap.parse_args()
    q = args.quick
    args.reps = 5 if q else 9
    args.compile_reps = 5 if q else 7
    args.rep_seconds = 0.03 if q else 0.15
    args.gap = GAP_SECONDS
    args.limit_reps = 5 if q else 10
    args.stream_mib = 64
    args.numpy = True
    args.sizes = ({"vec": 1 << 20, "rows": (512, 1024), "seq": 256, "rnn": (100, 256), "fft": 1 << 16,
                   "fft_batch": (128, 1024)} if q else
                  {"vec": 1 << 24, "rows": (4096, 1024), "seq": 256, "rnn": (100, 256), "fft": 1 << 20,
                   "fft_batch": (1024, 1024)})
    args.transform_sizes = [1000, 10000] if q else [1000, 10000, 100000]
    args.jax_transform_max = 10000 if q else 100000
    args.egraph_ns = [10] if q else ([10, 11, 12] if args.egraph12 in (None, True) else [10, 11])
    if q and args.egraph12:
        args.egraph_ns = [10, 11, 12]
    args.egraph_reps = 3 if q else 5
    args.overhead_steps = 200
    only = set(args.only.split(",")) if args.only else None

    worker_exe = os.path.join(args.build, "bench", "ft-bench-worker")
    limits_exe = os.path.join(args.build, "bench", "ft-bench-limits")
    datadir = os.path.join(args.build, "bench-data")
    shutil.rmtree(datadir, ignore_errors=True)
    os.makedirs(datadir)

    t_start = time.time()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    result = {"schema": 1, "mode": "quick" if q else "full",
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "machine": machine_info(), "settings": {
                  "reps": args.reps, "warmup_reps": 1, "rep_seconds": args.rep_seconds,
                  "compile_reps": args.compile_reps, "sizes": args.sizes, "limit_reps": args.limit_reps,
                  "stream_array_mib": args.stream_mib}}
    result["jax"] = jax_info()
    log("jax", result["jax"]["jax"], "on", result["jax"]["devices"])

    if not only or "limits" in only:
        result["limits"] = run_limits(limits_exe, args)

    # A fresh JIT cache directory per run (the worker passes it to ft_jit):
    # nothing an earlier build left in ~/.cache is ever reused.
    os.environ["FT_BENCH_CACHE_DIR"] = os.path.join(datadir, "ft-cache")
    env_set = dict(os.environ)
    workers = {"set": Worker(worker_exe, env_set, "set", datadir)}
    # GEMM-bound workloads run a second time, interleaved, in a worker whose
    # OpenBLAS kernel choice differs: coretype unset when the environment
    # sets one, else the project's documented conservative Haswell setting.
    unset = {k: v for k, v in env_set.items() if k not in OPENBLAS_VARS}
    if any(env_set.get(k) for k in OPENBLAS_VARS):
        workers["alt"] = Worker(worker_exe, unset, "alt", datadir)
        result["alt_env"] = "OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset"
        result["coretype_note"] = ("GEMM-bound workloads also run with OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE "
                                   "unset for the worker alone")
    else:
        workers["alt"] = Worker(worker_exe, dict(unset, OPENBLAS_CORETYPE="Haswell"), "alt", datadir)
        result["alt_env"] = "OPENBLAS_CORETYPE=Haswell"
        result["coretype_note"] = ("The environment sets neither OPENBLAS_CORETYPE nor OPENBLAS_L2_SIZE, so "
                                   "'as set' is 'unset'; GEMM-bound workloads also run with "
                                   "OPENBLAS_CORETYPE=Haswell (the documented conservative setting) for comparison")
    info = workers["set"].cmd("info")
    result["frankentrace"] = {"info": " ".join(info[1:]), "jit": "jit=1" in info,
                              "threads": "unknown"}
    log("frankentrace:", result["frankentrace"]["info"])

    rng = np.random.default_rng(20261130)
    jfns, nfns = jax_functions(), numpy_functions()
    result["workloads"] = []
    for spec in workload_table(args.sizes):
        if only and spec[0] not in only:
            continue
        log("workload", spec[0])
        try:
            r = run_workload(spec, args, datadir, workers, jfns, nfns, rng)
        except Exception as e:  # a JAX-side failure must not lose the others
            r = {"name": spec[0], "issue": spec[1], "error": repr(e)}
        result["workloads"].append(r)
        ft = r.get("ft", {})
        log(f"  ft {ft.get('engine', ft.get('status'))} median {ft.get('median', float('nan'))*1e3:.3f} ms;"
            f" jax {r.get('jax', {}).get('median', float('nan'))*1e3:.3f} ms")
    if not only or "compile" in only:
        log("compile latency")
        result["compile"] = run_compile(args, datadir, workers["set"], jfns, rng)
    if not only or "transforms" in only:
        result["transforms"] = run_transforms(args, workers["set"])
    if not only or "memory" in only:
        result["memory"] = run_memory(args, datadir, workers["set"], jfns, rng)
    if not only or "overhead" in only:
        result["overhead"] = run_overhead(args, workers["set"])
    if not only or "threads" in only:
        result["threads"] = run_threads(args, datadir, worker_exe, env_set)
    th = workers["set"].cmd("threads")
    result["frankentrace"]["threads"] = (
        f"{th[1]} threads in the worker process after all workloads ran (calls are issued from one thread; "
        f"FT_NUM_THREADS={os.environ.get('FT_NUM_THREADS', 'unset')}, the library's default is the core count)"
        if th[0] == "ok" else "unknown")
    for w in workers.values():
        w.close()
    if not only or "egraph" in only:
        log("e-graph", args.egraph_ns)
        result["egraph"] = run_egraph(args)
    # STREAM again at the end: on a shared machine the bandwidth moves; the
    # report uses the better of the two measurements and shows both.
    if not only or "limits" in only:
        p = subprocess.run([limits_exe, "--reps", str(args.limit_reps), "--mib", str(args.stream_mib), "--no-gemm"],
                           capture_output=True, text=True)
        if p.returncode == 0:
            result["limits"]["stream_end"] = json.loads(p.stdout)["stream"]
    result["machine"]["loadavg_end"] = os.getloadavg()
    result["wall_seconds"] = time.time() - t_start

    out = args.out
    if not out:
        day = datetime.date.today().isoformat()
        sub = "" if not q else "quick/"
        os.makedirs(os.path.join(ROOT, "bench", "results", sub), exist_ok=True)
        out = os.path.join(ROOT, "bench", "results", f"{sub}{day}-{result['machine']['commit_short']}.json")
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    print(out)


if __name__ == "__main__":
    main()
