#!/usr/bin/env python3
"""The held-out programs (heldout_programs.py) through the Python package,
as a JAX user calls it: ft.jit(f), ft.jit(ft.grad(f)) for a scalar float
loss, ft.jit(ft.vmap(f)) on inputs stacked twice, each compared with
jax.jit of the same; integers exactly, floats within a loose normwise bound
(f16/bf16 2e-2, f32 2e-4, f64 1e-9 of the largest |JAX| value). Prints one
line per difference (DIFF) or error (ERR), then "done N".

  tools/python-ext BUILD .venv-oracle/bin/python      # builds the extension
  PYTHONPATH=BUILD/python/cp312 .venv-oracle/bin/python \
      tools/oracle/heldout_python_check.py [--x64] [PROGRAM...]
"""
import os
import sys
import zlib
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ['JAX_PLATFORMS'] = 'cpu'
import numpy as np, jax, jax.numpy as jnp
x64 = '--x64' in sys.argv
if x64: jax.config.update('jax_enable_x64', True)
import frankentrace as ft  # noqa: E402
import gen_sweep as gs
from heldout_programs import register
progs = []
def P(name, fn, makers, dtypes=("f32",), tf=()):
    progs.append((name, fn, makers, dtypes, tf))
register(P, gs.U)
def cmp(a, b):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    if len(la) != len(lb): return f"leaf count {len(la)} vs {len(lb)}"
    if jax.tree_util.tree_structure(a) != jax.tree_util.tree_structure(b):
        return f"structure {jax.tree_util.tree_structure(a)} vs {jax.tree_util.tree_structure(b)}"
    for k, (x, y) in enumerate(zip(la, lb)):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype: return f"leaf {k}: {x.dtype}{x.shape} vs {y.dtype}{y.shape}"
        if x.dtype.kind in 'iub':
            if not np.array_equal(x, y): return f"leaf {k}: ints differ {x.ravel()[:6]} vs {y.ravel()[:6]}"
        else:
            xf, yf = x.astype(np.float64), y.astype(np.float64)
            tol = {2: 2e-2, 4: 2e-4, 8: 1e-9, 16: 1e-9}[x.dtype.itemsize]
            scale = max(np.nanmax(np.abs(yf[np.isfinite(yf)])) if np.isfinite(yf).any() else 1.0, 1e-30)
            bad = ~((np.isnan(xf) & np.isnan(yf)) | (xf == yf) | (np.abs(xf - yf) <= tol * scale))
            if bad.any():
                i = np.argmax(bad.ravel())
                return f"leaf {k}: elem {i}: ft {xf.ravel()[i]!r} jax {yf.ravel()[i]!r} (scale {scale:.3g})"
    return None
only = [a for a in sys.argv[1:] if not a.startswith('--')]
nbad = 0
for name, fn, makers, dtypes, tf in progs:
    if only and name not in only: continue
    for d in dtypes:
        if (d in ('f64', 'i64')) != x64: continue
        cname = f"{'x64_' if x64 else ''}ho_{name}_{d}"
        rng = np.random.default_rng(zlib.crc32(cname.encode()))
        args = [m(rng, d) for m in makers]
        checks = [("jit", lambda: ft.jit(fn)(*args), lambda: jax.jit(fn)(*args))]
        try:
            out = jax.eval_shape(fn, *args)
            leaves = jax.tree_util.tree_leaves(out)
            scalar = len(leaves) == 1 and leaves[0].shape == () and jnp.issubdtype(leaves[0].dtype, jnp.floating)
        except Exception:
            scalar = False
        if scalar and np.asarray(args[0]).dtype.kind == 'f' and 'vjp' in tf:
            checks.append(("grad", lambda: ft.jit(ft.grad(fn))(*args), lambda: jax.jit(jax.grad(fn))(*args)))
        if 'vmap' in tf:
            bargs = [np.stack([a, a]) for a in args]
            checks.append(("vmap", lambda: ft.jit(ft.vmap(fn))(*bargs), lambda: jax.jit(jax.vmap(fn))(*bargs)))
        for cn, f_ft, f_jax in checks:
            try:
                want = f_jax()
            except Exception:  # noqa: BLE001 - JAX refuses it: nothing to compare
                continue
            try:
                got = f_ft()
            except Exception as e:
                print(f"ERR  {cname} {cn}: {type(e).__name__}: {str(e).splitlines()[0][:300]}"); nbad += 1; continue
            r = cmp(got, want)
            if r: print(f"DIFF {cname} {cn}: {r}"); nbad += 1
print("done", nbad)
