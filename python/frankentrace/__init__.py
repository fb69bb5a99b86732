"""FrankenTrace from Python: JAX's programming model run by a C trace
compiler (jaxprs, the library's own transforms, an LLVM JIT, a ledger).

    import frankentrace as ft, jax.numpy as jnp
    f = ft.jit(lambda x: jnp.tanh(x) * 2.0)
    f(np.ones(3, np.float32))

JAX is needed to trace Python functions (ft.jit, ft.grad, ...) and is
imported on first use; ft.parse/ft.load_jaxpr, ft.Program, ft.load_aot and
ft.ledger work without it. docs/python.md has the whole story.
"""
from . import _ft
from ._core import (Aval, ExecutionError, FrankenTraceError, LedgerReport, ParseError, Program,
                    TypeCheckError, UnsupportedError, aligned, aligned_empty, aligned_numpy, as_array, ledger,
                    ledger_verify, load_aot, load_jaxpr, parse)
from ._jaxapi import (Lowered, export, grad, hessian, jacfwd, jacrev, jit, jvp, make_program,
                      value_and_grad, vjp, vmap)

__version__ = _ft.version()

__all__ = [
    "Aval", "ExecutionError", "FrankenTraceError", "LedgerReport", "Lowered", "ParseError",
    "Program", "TypeCheckError", "UnsupportedError", "aligned", "aligned_empty", "aligned_numpy", "as_array",
    "export", "grad", "hessian", "jacfwd", "jacrev", "jit", "jvp", "ledger", "ledger_verify",
    "load_aot", "load_jaxpr", "make_program", "parse", "value_and_grad", "vjp", "vmap",
]
