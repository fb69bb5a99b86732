"""The JAX-free half of the package: errors, arrays, Program, ledgers, AOT.

Nothing here imports JAX. Programs come from jaxpr text (ft.parse /
ft.load_jaxpr) and run through the library's JIT (Program.__call__) or its
reference interpreter (Program.eval).
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import os
from typing import NamedTuple

import numpy as np

from . import _ft


class FrankenTraceError(Exception):
    """A failure reported by the FrankenTrace library; the message is the
    library's own. ``status`` names the library's status code."""

    status = "FT_ERR_?"


class ParseError(FrankenTraceError, ValueError):
    """Malformed jaxpr text (the message has line:col and a caret)."""


class TypeCheckError(FrankenTraceError, TypeError):
    """A dtype, shape, arity or parameter mismatch (FT_ERR_TYPE, FT_ERR_SHAPE)."""


class UnsupportedError(FrankenTraceError, NotImplementedError):
    """A valid request the library cannot do; the message names what."""


class ExecutionError(FrankenTraceError, RuntimeError):
    """Evaluation failed: a hardened-mode guard, a loop limit, a cancellation."""


_ft._set_errors(FrankenTraceError, ParseError, TypeCheckError, UnsupportedError, ExecutionError)

try:  # bfloat16 arrays need ml_dtypes (JAX depends on it); optional otherwise.
    import ml_dtypes as _ml_dtypes

    _ft._set_bfloat16(np.dtype(_ml_dtypes.bfloat16))
    _BF16 = np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - depends on the environment
    _BF16 = None

# The library's short dtype names (as jaxprs print them) and NumPy's.
_NP_DTYPES = {
    "bool": np.dtype(np.bool_), "i8": np.dtype(np.int8), "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32), "i64": np.dtype(np.int64), "u8": np.dtype(np.uint8),
    "u16": np.dtype(np.uint16), "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16), "f32": np.dtype(np.float32), "f64": np.dtype(np.float64),
    "c64": np.dtype(np.complex64), "c128": np.dtype(np.complex128),
}
if _BF16 is not None:
    _NP_DTYPES["bf16"] = _BF16
_FT_NAMES = {v: k for k, v in _NP_DTYPES.items()}


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype of a library dtype name ("f32" -> float32)."""
    try:
        return _NP_DTYPES[name]
    except KeyError:
        raise TypeCheckError(f"frankentrace: dtype {name} has no NumPy equivalent here") from None


def ft_dtype_name(dt) -> str:
    """The library's name of a NumPy dtype (float32 -> "f32")."""
    try:
        return _FT_NAMES[np.dtype(dt)]
    except KeyError:
        raise TypeCheckError(f"frankentrace: dtype {np.dtype(dt)} is not supported") from None


def as_array(x, dtype=None) -> np.ndarray:
    """x as a C-contiguous NumPy array, without a copy when it already is one
    (NumPy arrays, objects with __array_interface__, DLPack exporters such as
    jax.Array on CPU); converted to dtype when given and different."""
    if isinstance(x, np.ndarray):
        a = x
    elif hasattr(x, "__dlpack__") and not isinstance(x, np.generic):
        try:
            a = np.from_dlpack(x)
        except (TypeError, ValueError, RuntimeError, BufferError):
            a = np.asarray(x)
    else:
        a = np.asarray(x)
    if dtype is not None and a.dtype != dtype:
        a = a.astype(dtype)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    return a


def aligned_empty(shape, dtype=np.float32) -> np.ndarray:
    """An uninitialized C-order array whose data is 64-byte aligned: arrays
    like this (and every array FrankenTrace returns) are passed to the
    library without a copy."""
    dtype = np.dtype(dtype)
    shape = tuple(int(s) for s in np.atleast_1d(shape)) if np.ndim(shape) else (int(shape),)
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    buf = np.empty(n + 64, dtype=np.uint8)
    off = (-buf.ctypes.data) % 64
    return buf[off:off + n].view(dtype).reshape(shape)


def aligned(x) -> np.ndarray:
    """x (array-like) as a 64-byte aligned C-order copy, unless it is one."""
    a = as_array(x)
    if _ft.is_aligned(a):
        return a
    b = aligned_empty(a.shape, a.dtype)
    b[...] = a
    return b


@contextlib.contextmanager
def aligned_numpy():
    """Inside the block (in this thread or async context), NumPy allocates
    array data 64-byte aligned (NEP 49 allocator), so new NumPy arrays go to
    the library without a copy::

        with ft.aligned_numpy():
            x = np.random.rand(1 << 20).astype(np.float32)
    """
    old = _ft.set_handler(_ft.aligned_handler())
    try:
        yield
    finally:
        _ft.set_handler(old)


class Aval(NamedTuple):
    dtype: str
    shape: tuple
    weak_type: bool = False

    def __str__(self):
        return f"{self.dtype}[{','.join(str(d) for d in self.shape)}]"


class Program:
    """A jaxpr held by the library. Calling it compiles it once (the
    library's JIT, cached) and runs it: ``prog(*arrays)`` returns a tuple with
    one NumPy array per output. ``eval`` runs the reference interpreter."""

    def __init__(self, handle, consts=None):
        self._h = handle
        self._fn = None
        if consts is not None:
            self.bind_consts(consts)

    # -- description
    @property
    def text(self) -> str:
        return self._h.text()

    def __str__(self):
        return self.text

    def __repr__(self):
        ins = ", ".join(str(a) for a in self.in_avals)
        outs = ", ".join(str(a) for a in self.out_avals)
        return f"<frankentrace.Program ({ins}) -> ({outs}), {self._h.num_eqns()} equations>"

    @property
    def hash(self) -> str:
        return self._h.hash()

    @property
    def in_avals(self):
        return [Aval(d, s, w) for d, s, w in self._h.input_avals()]

    @property
    def out_avals(self):
        return [Aval(d, s, w) for d, s, w in self._h.output_avals()]

    @property
    def const_avals(self):
        return [Aval(d, s, w) for d, s, w in self._h.const_avals()]

    @property
    def consts_bound(self) -> bool:
        return self._h.consts_bound()

    def bind_consts(self, values):
        """Gives the constvars their values (once), so that the program takes
        its inputs only."""
        avs = self.const_avals
        if len(values) != len(avs):
            raise TypeCheckError(
                f"frankentrace: the program has {len(avs)} constants, {len(values)} values given")
        self._h.bind_consts([as_array(v, numpy_dtype(a.dtype)) for v, a in zip(values, avs)])
        self._fn = None
        self._in_dtypes = None

    # -- running
    def _inputs(self, args):
        dts = self.__dict__.get("_in_dtypes")
        if dts is None:  # computed once (bind_consts resets it)
            avs = self.in_avals if self.consts_bound else self.const_avals + self.in_avals
            dts = self._in_dtypes = [numpy_dtype(a.dtype) for a in avs]
        if len(args) != len(dts):
            raise TypeCheckError(f"frankentrace: the program takes {len(dts)} arrays, {len(args)} given")
        return [as_array(x, dt) for x, dt in zip(args, dts)]

    def compile(self, allow_fallback=True, optimize=True):
        """The compiled function (cached on the program for the defaults)."""
        if allow_fallback and optimize:
            if self._fn is None:
                self._fn = _ft.jit(self._h, True, True)
            return self._fn
        return _ft.jit(self._h, allow_fallback, optimize)

    def __call__(self, *args):
        return self.compile()(*self._inputs(args))

    def eval(self, *args):
        """Runs the reference interpreter (slow, the oracle of compiled code)."""
        return self._h.eval(self._inputs(args))

    def plan(self) -> str:
        """The compiled execution plan (steps: fused kernels, GEMMs, fallbacks)."""
        return self.compile().plan()

    # -- transforms (the library's own)
    def grad(self, argnums=0, has_aux=False) -> "Program":
        argnums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        return Program(_ft.grad(self._h, argnums, has_aux))

    def value_and_grad(self, argnums=0, has_aux=False) -> "Program":
        argnums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        return Program(_ft.value_and_grad(self._h, argnums, has_aux))

    def jvp(self) -> "Program":
        return Program(_ft.jvp(self._h))

    def vjp(self) -> "Program":
        return Program(_ft.vjp_jaxpr(self._h))

    def jacfwd(self, argnum=0) -> "Program":
        return Program(_ft.jacfwd(self._h, argnum))

    def jacrev(self, argnum=0) -> "Program":
        return Program(_ft.jacrev(self._h, argnum))

    def hessian(self, argnum=0) -> "Program":
        return Program(_ft.hessian(self._h, argnum))

    def vmap(self, axis_size, in_axes=0, out_axes=0) -> "Program":
        ins = self.in_avals
        n_out = len(self.out_avals)
        in_axes = [in_axes] * len(ins) if in_axes is None or isinstance(in_axes, int) else list(in_axes)
        out_axes = [out_axes] * n_out if out_axes is None or isinstance(out_axes, int) else list(out_axes)
        avals = []
        for a, ax in zip(ins, in_axes):
            shape = list(a.shape)
            if ax is not None:
                shape.insert(ax if ax >= 0 else len(shape) + 1 + ax, axis_size)
            avals.append((a.dtype, tuple(shape)))
        return Program(_ft.vmap(self._h, in_axes, out_axes, avals))

    def optimize(self, algebraic=False) -> "Program":
        return Program(_ft.optimize(self._h, algebraic))


def parse(text: str, name: str | None = None, consts=None) -> Program:
    """Parses jaxpr text as JAX prints it (print(jax.make_jaxpr(f)(x))).
    consts: values of its constvars (in order), when it has any."""
    if not isinstance(text, str):
        raise TypeError("frankentrace.parse: text must be a str")
    return Program(_ft.parse(text, name), consts)


def load_jaxpr(source, consts=None) -> Program:
    """A Program from jaxpr text, or from a file (a path or os.PathLike) holding it."""
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "{" not in source
                                           and os.path.exists(source)):
        with open(source, encoding="utf-8") as f:
            return Program(_ft.parse(f.read(), os.fspath(source)), consts)
    return parse(source, None, consts)


# ---------------------------------------------------------------- ledger

@contextlib.contextmanager
def ledger(path, calls: str = "hashes"):
    """Records everything the library does inside the block (parses,
    transforms, optimizations, compilations and, per ``calls`` = "none",
    "hashes" or "bytes", the calls) in the ledger directory ``path``."""
    modes = {"none": 0, "hashes": 1, "bytes": 2}
    if calls not in modes:
        raise ValueError(f"frankentrace.ledger: calls must be one of {sorted(modes)}")
    _ft.ledger_open(os.fspath(path), modes[calls])
    try:
        yield os.fspath(path)
    finally:
        _ft.ledger_close()


class LedgerReport(NamedTuple):
    health: str          # "clean", "torn" or "corrupt"
    records: int
    first_bad_seq: int   # 0: none
    report: dict         # the library's full report

    @property
    def ok(self) -> bool:
        return self.health == "clean"


def ledger_verify(path) -> LedgerReport:
    """Checks a ledger directory (checksums, hash chain, objects, parity)."""
    health, records, first_bad, js = _ft.ledger_verify(os.fspath(path))
    return LedgerReport(health, records, first_bad, json.loads(js) if js else {})


# ------------------------------------------------------------------- AOT

def _aval_from_json(d):
    return Aval(d["dtype"], tuple(d["shape"]))


class AotFunction:
    """A function from a shared library made by ``ftc compile --emit so`` or
    ``ft.export``: ``fn(*arrays)`` returns a tuple of NumPy arrays. The call
    releases the GIL (ctypes)."""

    def __init__(self, path, name, in_avals, out_avals):
        self.path, self.name = os.fspath(path), name
        self.in_avals, self.out_avals = list(in_avals), list(out_avals)
        _preload_runtime()
        self._lib = ctypes.CDLL(os.path.abspath(self.path))
        try:
            self._fn = getattr(self._lib, name)
            self._err = getattr(self._lib, name + "_error")
        except AttributeError:
            raise FrankenTraceError(f"frankentrace.load_aot: {self.path} has no function '{name}'") from None
        self._fn.restype = ctypes.c_int
        self._fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        self._err.restype = ctypes.c_char_p

    def __call__(self, *args):
        if len(args) != len(self.in_avals):
            raise TypeCheckError(f"frankentrace: {self.name} takes {len(self.in_avals)} arrays, {len(args)} given")
        ins = []
        for i, (x, a) in enumerate(zip(args, self.in_avals)):
            arr = as_array(x, numpy_dtype(a.dtype))
            if tuple(arr.shape) != tuple(a.shape):
                raise TypeCheckError(f"frankentrace: {self.name}: argument {i} has shape {arr.shape}, "
                                     f"expected {a} ")
            ins.append(arr)
        outs = [aligned_empty(a.shape, numpy_dtype(a.dtype)) for a in self.out_avals]
        in_ptrs = (ctypes.c_void_p * max(1, len(ins)))(*[a.ctypes.data for a in ins])
        out_ptrs = (ctypes.c_void_p * max(1, len(outs)))(*[a.ctypes.data for a in outs])
        st = self._fn(in_ptrs, out_ptrs)
        if st:
            raise ExecutionError(f"{self.name}: {(self._err() or b'').decode(errors='replace')}")
        return tuple(outs)


def _preload_runtime():
    """Loads libfrankentrace_rt (which AOT libraries need) globally: from
    $FT_AOT_LIBDIR when set, else the copy installed in the package (pip
    install .), else by its SONAME."""
    d = os.environ.get("FT_AOT_LIBDIR")
    cand = [os.path.join(d, "libfrankentrace_rt.so.1")] if d else []
    here = os.path.dirname(os.path.abspath(__file__))
    # A wheel holds the versioned file only (libfrankentrace_rt.so.0.2.0);
    # loaded by path, its SONAME (libfrankentrace_rt.so.1) satisfies the
    # AOT library's NEEDED entry.
    cand += sorted(os.path.join(here, f) for f in os.listdir(here) if f.startswith("libfrankentrace_rt.so"))
    cand.append("libfrankentrace_rt.so.1")
    errors = []
    for c in cand:
        try:
            ctypes.CDLL(c, mode=ctypes.RTLD_GLOBAL)
            return
        except OSError as e:
            errors.append(str(e))
    raise FrankenTraceError("frankentrace.load_aot: cannot load libfrankentrace_rt "
                            "(set FT_AOT_LIBDIR to its directory): " + "; ".join(errors))


def load_aot(path, name: str | None = None, jaxpr=None) -> AotFunction:
    """Loads an AOT shared library. Its signature comes from the sidecar
    ``<path>.json`` that ft.export writes or, for ``ftc compile`` output,
    from the program it was compiled from (``jaxpr``: text, a path or a
    Program)."""
    path = os.fspath(path)
    meta_path = path + ".json"
    if jaxpr is None and os.path.exists(meta_path):
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
        return AotFunction(path, name or meta["name"], [_aval_from_json(a) for a in meta["inputs"]],
                           [_aval_from_json(a) for a in meta["outputs"]])
    if jaxpr is None:
        raise FrankenTraceError(f"frankentrace.load_aot: no {meta_path}; pass jaxpr= (the program compiled)")
    prog = jaxpr if isinstance(jaxpr, Program) else load_jaxpr(jaxpr)
    ins = prog.in_avals if prog.consts_bound else prog.const_avals + prog.in_avals
    return AotFunction(path, name or "ft_main", ins, prog.out_avals)


def export_program(prog: Program, path, name: str = "ft_main"):
    """Writes prog as an AOT shared library at path (and the sidecar
    ``<path>.json`` that load_aot reads)."""
    path = os.fspath(path)
    _ft.emit(prog._h, "so", name, path)
    ins = prog.in_avals if prog.consts_bound else prog.const_avals + prog.in_avals
    meta = {"name": name, "inputs": [{"dtype": a.dtype, "shape": list(a.shape)} for a in ins],
            "outputs": [{"dtype": a.dtype, "shape": list(a.shape)} for a in prog.out_avals]}
    with open(path + ".json", "w", encoding="utf-8") as f:
        json.dump(meta, f)
    return path
