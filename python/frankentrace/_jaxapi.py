"""The JAX-shaped API: ft.jit, ft.grad, ... over Python functions traced by
jax.make_jaxpr. JAX is imported on first use only.

Every function here is a *staged* function: on a call, its arguments are
reduced to a cache key (the pytree structure, each leaf's dtype, shape and
weak type, the static arguments); on a miss, ``_stage`` builds the library
program for those abstract values — tracing a Python function with
jax.make_jaxpr, then applying the library's own transforms (ft_grad,
ft_vmap_avals, ...) — and compiles it with the library's JIT. Staged
functions compose: ft.jit(ft.grad(ft.vmap(f))) stages f once and applies
the transforms to its program; ft.jit is the identity on the program.

Calls with plain NumPy arrays that hit the cache never leave C (the
Dispatcher of _ft.c).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import numpy as np

from . import _ft
from ._core import (Program, TypeCheckError, UnsupportedError, as_array,
                    export_program, ft_dtype_name, numpy_dtype)

_jax = None


def _j():
    """The jax module, imported on first use."""
    global _jax
    if _jax is None:
        try:
            import jax
        except ImportError as e:
            raise ImportError("frankentrace: tracing Python functions needs JAX "
                              "(pip install jax); the JAX-free API is ft.parse, "
                              "ft.Program and ft.load_aot") from e
        _jax = jax
    return _jax


class Leaf(NamedTuple):
    """An abstract leaf: what a traced program's input is specialized to."""
    dtype: np.dtype
    shape: tuple
    weak_type: bool


class Staged(NamedTuple):
    """A library program for given abstract arguments.

    program: takes the dynamic leaves (flattened, in order) and returns flat
    outputs. unflatten: flat outputs -> the result as the function returns
    it. out_kind: 0 one bare output, 1 a flat tuple, 2 anything else (for
    the C fast path). arg_ranges: per positional argument, its range of flat
    leaves, or None when static. stages: name -> Program, in the order made.
    """
    program: Program
    unflatten: Callable
    out_kind: int
    arg_ranges: list
    stages: dict
    out_tree: Any


_CANON = {}


def _canonical(dt):
    c = _CANON.get(dt)
    if c is None:
        c = _CANON[dt] = np.dtype(_j().dtypes.canonicalize_dtype(dt))
    return c


def _leaf_of(x) -> tuple[Any, Leaf]:
    """(value to pass, abstract leaf) for one argument leaf, with JAX's dtype
    canonicalization and weak typing of Python scalars."""
    if type(x) is np.ndarray:  # the common case, first
        dt = x.dtype
        if _canonical(dt) == dt and x.flags.c_contiguous:
            return x, Leaf(dt, x.shape, False)
    jax = _j()
    if isinstance(x, bool):
        a = np.asarray(x)
        return a, Leaf(a.dtype, (), False)
    if isinstance(x, (int, float, complex)) and not isinstance(x, np.generic):
        dt = jax.dtypes.canonicalize_dtype(type(x))
        return np.asarray(x, dtype=dt), Leaf(np.dtype(dt), (), True)
    if isinstance(x, jax.core.Tracer):
        raise UnsupportedError(
            "frankentrace: an ft function was called on a JAX tracer (inside a function JAX is "
            "tracing); ft transforms compose with each other (ft.jit(ft.grad(f))), not under JAX's: "
            "use jax.grad/jax.vmap inside the traced function instead")
    weak = bool(getattr(x, "weak_type", False))
    a = as_array(x)
    dt = _canonical(a.dtype)
    if a.dtype != dt:
        a = a.astype(dt)
    return a, Leaf(dt, tuple(a.shape), weak)


def _out_kind(tree) -> int:
    tu = _j().tree_util
    n = tree.num_leaves
    if tree == tu.tree_structure(0):
        return 0
    if tree == tu.tree_structure(tuple(range(n))):
        return 1
    return 2


def _abstract(leaf: Leaf):
    jax = _j()
    return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, weak_type=leaf.weak_type)


def _to_jaxpr_program(closed) -> Program:
    """A library Program from a jax ClosedJaxpr, constants bound."""
    prog = Program(_ft.parse(str(closed.jaxpr), "jax.make_jaxpr"))
    if prog.const_avals:
        prog.bind_consts([np.asarray(c) for c in closed.consts])
    return prog


class StagedFunction(_ft.Dispatcher):
    """Base of ft.jit and the transforms: a callable with a compile cache."""

    static_argnums: tuple = ()

    def __init__(self, fun: Callable, static_argnums=()):
        self.fun = fun
        self.static_argnums = _norm_argnums(static_argnums)
        self._cache = {}
        functools.update_wrapper(self, fun, updated=())

    # -- keys and staging
    def _split(self, args, kwargs):
        """(key, dynamic flat values, leaves, structures) of a call: cheap;
        the abstract arguments are made on a cache miss only."""
        tu = _j().tree_util
        static = self.static_argnums
        statics = tuple((i, _hashable(args[i])) for i in static if i < len(args)) if static else ()
        flat_vals, leaves, structs = [], [], []
        for i, a in enumerate(args):
            if i in static:
                structs.append(None)
                continue
            xs, tree = tu.tree_flatten(a)
            for x in xs:
                v, lf = _leaf_of(x)
                flat_vals.append(v)
                leaves.append(lf)
            structs.append(tree)
        kw_tree = None
        if kwargs:
            xs, kw_tree = tu.tree_flatten(kwargs)
            for x in xs:
                v, lf = _leaf_of(x)
                flat_vals.append(v)
                leaves.append(lf)
        key = (tuple(structs), kw_tree, tuple(leaves), statics)
        return key, flat_vals, (args, leaves, structs, kw_tree)

    @staticmethod
    def _abstract_args(spec):
        """The arguments with each dynamic leaf an abstract value
        (jax.ShapeDtypeStruct), statics as given."""
        tu = _j().tree_util
        args, leaves, structs, kw_tree = spec
        it = iter(leaves)
        abs_args = []
        for a, tree in zip(args, structs):
            if tree is None:
                abs_args.append(a)
            else:
                abs_args.append(tu.tree_unflatten(tree, [_abstract(next(it)) for _ in range(tree.num_leaves)]))
        abs_kwargs = {}
        if kw_tree is not None:
            abs_kwargs = tu.tree_unflatten(kw_tree, [_abstract(lf) for lf in it])
        return tuple(abs_args), abs_kwargs

    def _stage(self, args, kwargs) -> Staged:  # pragma: no cover - abstract
        raise NotImplementedError

    def _lookup(self, args, kwargs):
        key, flat_vals, spec = self._split(args, kwargs)
        self._last_leaves = spec[1]
        entry = self._cache.get(key)
        if entry is None:
            staged = self._stage(*self._abstract_args(spec))
            entry = (staged, staged.program.compile())
            self._cache[key] = entry
        return entry, flat_vals

    def _slow(self, *args, **kwargs):
        (staged, fn), flat_vals = self._lookup(args, kwargs)
        outs = fn(*flat_vals)
        # Plain, canonical NumPy arguments: later calls take the C path.
        if (not kwargs and not self.static_argnums and staged.out_kind < 2
                and len(args) == len(flat_vals)
                and all((type(a) is np.ndarray and a is v) or
                        (isinstance(a, np.generic) and a.dtype == v.dtype and not weak)
                        for a, v, weak in zip(args, flat_vals, (k.weak_type for k in self._last_leaves)))):
            self.add(tuple(args), fn, staged.out_kind)
        return staged.unflatten(outs)

    # -- inspection
    def lower(self, *args, **kwargs) -> "Lowered":
        (staged, fn), _ = self._lookup(args, kwargs)
        return Lowered(staged, fn)

    def program(self, *args, **kwargs) -> Program:
        """The library program run for these arguments (after all transforms)."""
        return self.lower(*args, **kwargs).program

    def clear_cache(self):
        self._cache.clear()
        self.clear()


def _hashable(v):
    try:
        hash(v)
    except TypeError:
        raise TypeError(f"frankentrace: a static argument must be hashable, got {type(v).__name__}") from None
    return v


def _norm_argnums(a):
    if a is None:
        return ()
    if isinstance(a, int):
        return (a,)
    return tuple(a)


def _stage_of(fun, args, kwargs) -> Staged:
    """The Staged program of fun (a staged function or a Python function)
    for abstract args."""
    if isinstance(fun, StagedFunction):
        return fun._stage(args, kwargs)
    return _trace(fun, args, kwargs, ())


def _trace(fun, args, kwargs, static_argnums) -> Staged:
    """Traces a Python function with jax.make_jaxpr."""
    jax = _j()
    tu = jax.tree_util
    dyn_pos = [i for i in range(len(args)) if i not in static_argnums]
    dyn = [args[i] for i in dyn_pos]
    flat_in, in_tree = tu.tree_flatten((dyn, kwargs))
    ranges, off = [], 0
    for i, a in enumerate(args):
        if i in static_argnums:
            ranges.append(None)
        else:
            n = len(tu.tree_leaves(a))
            ranges.append((off, off + n))
            off += n
    out_store = {}

    def flat_fun(*leaves):
        d, kw = tu.tree_unflatten(in_tree, leaves)
        full = list(args)
        for i, v in zip(dyn_pos, d):
            full[i] = v
        out = fun(*full, **kw)
        flat_out, out_tree = tu.tree_flatten(out)
        out_store["tree"] = out_tree
        return flat_out

    closed = jax.make_jaxpr(flat_fun)(*flat_in)
    prog = _to_jaxpr_program(closed)
    out_tree = out_store["tree"]
    return Staged(prog, lambda outs, t=out_tree: tu.tree_unflatten(t, list(outs)), _out_kind(out_tree),
                  ranges, {"jaxpr": prog}, out_tree)


class Jitted(StagedFunction):
    """ft.jit(f): f traced with jax.make_jaxpr (or staged, when it is an ft
    transform), compiled by the library, cached per input avals and static
    values."""

    def __init__(self, fun, static_argnums=(), donate_argnums=()):
        super().__init__(fun, static_argnums)
        # Donation is accepted for JAX compatibility: inputs are never
        # written and results are new arrays, so it changes nothing.
        self.donate_argnums = _norm_argnums(donate_argnums)

    def _stage(self, args, kwargs):
        if isinstance(self.fun, StagedFunction):
            if self.static_argnums:
                raise UnsupportedError("frankentrace.jit: static_argnums on an ft transform: "
                                       "give them to the innermost ft.jit")
            return self.fun._stage(args, kwargs)
        return _trace(self.fun, args, kwargs, self.static_argnums)


def jit(fun=None, *, static_argnums=(), donate_argnums=()):
    """jax.jit's counterpart: traces ``fun`` with jax.make_jaxpr and runs it
    compiled by FrankenTrace. Usable as a decorator, with or without
    arguments."""
    if fun is None:
        return lambda f: Jitted(f, static_argnums, donate_argnums)
    return Jitted(fun, static_argnums, donate_argnums)


# ------------------------------------------------------------- autodiff

def _flat_argnums(staged: Staged, argnums, fname) -> tuple[list, list]:
    """The flat input indices of the positional arguments argnums, and per
    argnum its (start, stop)."""
    idx, spans = [], []
    for a in argnums:
        if a >= len(staged.arg_ranges) or a < -len(staged.arg_ranges):
            raise TypeCheckError(f"frankentrace.{fname}: argnums {a} is out of range for "
                                 f"{len(staged.arg_ranges)} positional arguments")
        r = staged.arg_ranges[a]
        if r is None:
            raise TypeCheckError(f"frankentrace.{fname}: argnums {a} names a static argument")
        spans.append((len(idx), len(idx) + r[1] - r[0]))
        idx.extend(range(r[0], r[1]))
    return idx, spans


def _arg_trees(staged: Staged, args, argnums):
    tu = _j().tree_util
    return [tu.tree_structure(args[a]) for a in argnums]


def _split_out(staged: Staged, has_aux, fname):
    """(number of value leaves, aux tree or None) of a function returning a
    scalar (or (scalar, aux) with has_aux)."""
    tu = _j().tree_util
    tree = staged.out_tree
    if not has_aux:
        if tree.num_leaves != 1:
            raise TypeCheckError(f"frankentrace.{fname}: the function must return one scalar, "
                                 f"it returns {tree.num_leaves} arrays (has_aux=True for (value, aux))")
        return None
    obj = tu.tree_unflatten(tree, list(range(tree.num_leaves)))
    if not isinstance(obj, (tuple, list)) or len(obj) != 2:
        raise TypeCheckError(f"frankentrace.{fname}: with has_aux=True the function must return (value, aux)")
    if tu.tree_structure(obj[0]).num_leaves != 1:
        raise TypeCheckError(f"frankentrace.{fname}: the value must be one scalar")
    aux_tree = tu.tree_structure(obj[1])
    return aux_tree


class _Grad(StagedFunction):
    def __init__(self, fun, argnums=0, has_aux=False, value_and=False):
        super().__init__(fun)
        self.argnums = argnums
        self.has_aux = has_aux
        self.value_and = value_and

    def _stage(self, args, kwargs):
        tu = _j().tree_util
        name = "value_and_grad" if self.value_and else "grad"
        inner = _stage_of(self.fun, args, kwargs)
        argnums = _norm_argnums(self.argnums)
        idx, spans = _flat_argnums(inner, argnums, name)
        aux_tree = _split_out(inner, self.has_aux, name)
        tf = _ft.value_and_grad if self.value_and else _ft.grad
        prog = Program(tf(inner.program._h, tuple(idx), self.has_aux))
        trees = _arg_trees(inner, args, argnums)
        n_aux = aux_tree.num_leaves if aux_tree is not None else 0
        single = isinstance(self.argnums, int)
        value_and, has_aux = self.value_and, self.has_aux

        def unflatten(outs):
            outs = list(outs)
            if value_and:
                value, aux, g = outs[0], outs[1:1 + n_aux], outs[1 + n_aux:]
            else:
                g, aux = outs[:len(idx)], outs[len(idx):]
            grads = [tu.tree_unflatten(t, g[s:e]) for t, (s, e) in zip(trees, spans)]
            grads = grads[0] if single else tuple(grads)
            aux_v = tu.tree_unflatten(aux_tree, aux) if has_aux else None
            if value_and:
                return ((value, aux_v), grads) if has_aux else (value, grads)
            return (grads, aux_v) if has_aux else grads

        stages = dict(inner.stages)
        stages[name] = prog
        out_tree = tu.tree_structure(unflatten(list(range(len(prog.out_avals)))))
        return Staged(prog, unflatten, _out_kind(out_tree), inner.arg_ranges, stages, out_tree)


def grad(fun, argnums=0, has_aux=False):
    """jax.grad, by the library's reverse mode (ft_grad)."""
    return _Grad(fun, argnums, has_aux, False)


def value_and_grad(fun, argnums=0, has_aux=False):
    """jax.value_and_grad, by the library's reverse mode (ft_value_and_grad)."""
    return _Grad(fun, argnums, has_aux, True)


def _inexact(leaf_dtype) -> bool:
    return np.issubdtype(np.dtype(leaf_dtype), np.inexact) or str(leaf_dtype) == "bfloat16"


def _call_staged(fun, primals):
    """(Staged, flat primal values) for fun at concrete primals."""
    holder = fun if isinstance(fun, StagedFunction) else Jitted(fun)
    key, flat_vals, spec = holder._split(tuple(primals), {})
    staged = holder._stage(*holder._abstract_args(spec))
    return staged, flat_vals


def _float0_zeros(shape):
    """JAX's tangent of an integer or boolean value: float0 zeros."""
    return np.zeros(shape, dtype=_j().dtypes.float0)


def _split_aux(staged: Staged, has_aux, fname):
    """(number of leading 'out' leaves, out tree, aux tree or None)."""
    tu = _j().tree_util
    tree = staged.out_tree
    if not has_aux:
        return tree.num_leaves, tree, None
    obj = tu.tree_unflatten(tree, list(range(tree.num_leaves)))
    if not isinstance(obj, (tuple, list)) or len(obj) != 2:
        raise TypeCheckError(f"frankentrace.{fname}: with has_aux=True the function must return (out, aux)")
    out_tree, aux_tree = tu.tree_structure(obj[0]), tu.tree_structure(obj[1])
    return out_tree.num_leaves, out_tree, aux_tree


def jvp(fun, primals, tangents, has_aux=False):
    """jax.jvp, by the library's forward mode (ft_jvp): returns
    (primals_out, tangents_out), or with has_aux (primals_out,
    tangents_out, aux). Integer and boolean values have float0 tangents."""
    tu = _j().tree_util
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise TypeCheckError("frankentrace.jvp: primals and tangents differ in length")
    staged, flat_p = _call_staged(fun, primals)
    flat_t = tu.tree_leaves(tangents)
    if len(flat_t) != len(flat_p):
        raise TypeCheckError("frankentrace.jvp: the tangents' structure differs from the primals'")
    n_out, out_tree, aux_tree = _split_aux(staged, has_aux, "jvp")
    # ft_jvp takes and returns tangents of inexact values only.
    t_in = [as_array(t, v.dtype) for t, v in zip(flat_t, flat_p) if _inexact(v.dtype)]
    prog = Program(_ft.jvp(staged.program._h))
    outs = prog(*flat_p, *t_in)
    avals = staged.program.out_avals
    n = len(avals)
    y, dy_iter = list(outs[:n]), iter(outs[n:])
    dy = [next(dy_iter) if _inexact(numpy_dtype(a.dtype)) else _float0_zeros(a.shape) for a in avals]
    primal_out = tu.tree_unflatten(out_tree, y[:n_out])
    tangent_out = tu.tree_unflatten(out_tree, dy[:n_out])
    if has_aux:
        return primal_out, tangent_out, tu.tree_unflatten(aux_tree, y[n_out:])
    return primal_out, tangent_out


def vjp(fun, *primals, has_aux=False):
    """jax.vjp, by the library's reverse mode (ft_vjp, forward and backward
    programs; the forward one runs once): returns (primals_out, vjp_fn), or
    with has_aux (primals_out, vjp_fn, aux). Integer and boolean primals get
    float0 cotangents."""
    tu = _j().tree_util
    staged, flat_p = _call_staged(fun, primals)
    n_out, out_tree, aux_tree = _split_aux(staged, has_aux, "vjp")
    fwd_h, bwd_h, n_res = _ft.vjp(staged.program._h)
    fwd, bwd = Program(fwd_h), Program(bwd_h)
    avals = staged.program.out_avals
    n = len(avals)
    outs = fwd(*flat_p)
    y, res = list(outs[:n]), list(outs[n:])
    in_trees = [tu.tree_structure(p) for p in primals]
    sizes = [t.num_leaves for t in in_trees]
    inexact_in = [_inexact(v.dtype) for v in flat_p]

    def vjp_fn(ct):
        flat_ct = tu.tree_leaves(ct)
        if len(flat_ct) != n_out:
            raise TypeCheckError(f"frankentrace.vjp: the cotangent has {len(flat_ct)} arrays, "
                                 f"the output {n_out}")
        cts_in = []
        for k, a in enumerate(avals):
            if not _inexact(numpy_dtype(a.dtype)):
                continue  # float0: not an input of the backward program
            if k < n_out:
                cts_in.append(as_array(flat_ct[k], numpy_dtype(a.dtype)))
            else:  # aux outputs: not differentiated
                cts_in.append(np.zeros(a.shape, numpy_dtype(a.dtype)))
        got = iter(bwd(*res, *cts_in))
        cts = [next(got) if ok else _float0_zeros(v.shape) for ok, v in zip(inexact_in, flat_p)]
        result, off = [], 0
        for t, size in zip(in_trees, sizes):
            result.append(tu.tree_unflatten(t, cts[off:off + size]))
            off += size
        return tuple(result)

    primal_out = tu.tree_unflatten(out_tree, y[:n_out])
    if has_aux:
        return primal_out, vjp_fn, tu.tree_unflatten(aux_tree, y[n_out:])
    return primal_out, vjp_fn


class MultiProgram:
    """Several library programs over the same inputs, run one after the
    other, outputs concatenated: a Jacobian with respect to several array
    leaves is one ft_jacfwd/ft_jacrev program per leaf. It cannot be
    transformed further (there is no one jaxpr)."""

    def __init__(self, programs):
        self.programs = list(programs)
        self._fns = None

    @property
    def _h(self):
        raise UnsupportedError("frankentrace: a Jacobian with respect to several arrays (tuple argnums or "
                               "a pytree argument) is several programs and cannot be transformed further")

    @property
    def out_avals(self):
        return [a for p in self.programs for a in p.out_avals]

    @property
    def text(self):
        return "\n".join(p.text for p in self.programs)

    def optimize(self, algebraic=False):
        return MultiProgram([p.optimize(algebraic) for p in self.programs])

    def compile(self):
        if self._fns is None:
            self._fns = _MultiFn([p.compile() for p in self.programs])
        return self._fns


class _MultiFn:
    def __init__(self, fns):
        self.fns = fns

    def __call__(self, *args):
        return tuple(o for fn in self.fns for o in fn(*args))

    def plan(self):
        return "\n".join(fn.plan() for fn in self.fns)


class _Jac(StagedFunction):
    def __init__(self, fun, argnums, kind, has_aux=False):
        super().__init__(fun)
        self.argnums = argnums
        self.kind = kind
        self.has_aux = has_aux

    def _stage(self, args, kwargs):
        tu = _j().tree_util
        inner = _stage_of(self.fun, args, kwargs)
        single = isinstance(self.argnums, int)
        argnums = _norm_argnums(self.argnums)
        idx, spans = _flat_argnums(inner, argnums, self.kind)
        arg_trees = _arg_trees(inner, args, argnums)
        n_out, out_tree, aux_tree = _split_aux(inner, self.has_aux, self.kind)
        avals = inner.program.out_avals
        for a in avals[:n_out]:
            if not _inexact(numpy_dtype(a.dtype)):
                raise UnsupportedError(f"frankentrace.{self.kind}: every output must be floating "
                                       f"(one is {a.dtype})")
        # The library's programs give one result per inexact output of j.
        n_inexact = sum(1 for a in avals if _inexact(numpy_dtype(a.dtype)))
        h = inner.program._h
        if self.kind == "hessian":
            pairs = [(i, k) for i in idx for k in idx]
            progs = [Program(_ft.hessian(h, i)) if i == k else Program(_ft.jacfwd(_ft.jacrev(h, i), k))
                     for i, k in pairs]
        else:
            tf = _ft.jacfwd if self.kind == "jacfwd" else _ft.jacrev
            progs = [Program(tf(h, i)) for i in idx]
        if self.has_aux:
            progs.append(inner.program)  # the aux values
        prog = progs[0] if len(progs) == 1 else MultiProgram(progs)
        kind, has_aux = self.kind, self.has_aux

        def per_arg(pick):
            """A tree per argnum (a tuple of them for tuple argnums) whose
            leaf for flat leaf index a is pick(a)."""
            res = [tu.tree_unflatten(t, [pick(a) for a in range(s, e)]) for t, (s, e) in zip(arg_trees, spans)]
            return res[0] if single else tuple(res)

        def unflatten(outs):
            outs = list(outs)
            m = len(idx)
            if kind == "hessian":
                per_out = [per_arg(lambda a, k=k: per_arg(lambda b, a=a, k=k: outs[(a * m + b) * n_inexact + k]))
                           for k in range(n_out)]
            else:
                per_out = [per_arg(lambda a, k=k: outs[a * n_inexact + k]) for k in range(n_out)]
            result = tu.tree_unflatten(out_tree, per_out)
            if has_aux:
                return result, tu.tree_unflatten(aux_tree, outs[len(outs) - len(avals):][n_out:])
            return result

        stages = dict(inner.stages)
        if isinstance(prog, Program):
            stages[self.kind] = prog
        res_tree = tu.tree_structure(unflatten(list(range(sum(len(p.out_avals) for p in progs)))))
        return Staged(prog, unflatten, _out_kind(res_tree) if isinstance(prog, Program) else 2,
                      inner.arg_ranges, stages, res_tree)


def jacfwd(fun, argnums=0, has_aux=False):
    """jax.jacfwd (ft_jacfwd: vmap of the library's jvp over the standard
    basis), per array leaf of the argnums."""
    return _Jac(fun, argnums, "jacfwd", has_aux)


def jacrev(fun, argnums=0, has_aux=False):
    """jax.jacrev (ft_jacrev: vmap of the library's vjp over the output
    basis), per array leaf of the argnums."""
    return _Jac(fun, argnums, "jacrev", has_aux)


def hessian(fun, argnums=0, has_aux=False):
    """jax.hessian = jacfwd(jacrev(f)) by the library (ft_hessian on the
    diagonal blocks, ft_jacfwd of ft_jacrev across leaves)."""
    return _Jac(fun, argnums, "hessian", has_aux)


# ------------------------------------------------------------------ vmap

class _Vmap(StagedFunction):
    def __init__(self, fun, in_axes=0, out_axes=0, axis_size=None):
        super().__init__(fun)
        self.in_axes = in_axes
        self.out_axes = out_axes
        self.axis_size = axis_size

    def _stage(self, args, kwargs):
        jax = _j()
        tu = jax.tree_util
        if kwargs:
            raise UnsupportedError("frankentrace.vmap: keyword arguments are not supported (pass them positionally)")
        in_axes = self.in_axes
        if isinstance(in_axes, list):
            in_axes = tuple(in_axes)
        if in_axes is None or isinstance(in_axes, int):
            in_axes = (in_axes,) * len(args)
        if len(in_axes) != len(args):
            raise TypeCheckError(f"frankentrace.vmap: in_axes has {len(in_axes)} entries for {len(args)} arguments")
        # Per leaf axes (an entry may be a pytree prefix of its argument).
        per_leaf, inner_args, size = [], [], self.axis_size
        for a, ax in zip(args, in_axes):
            leaves, tree = tu.tree_flatten(a)
            axes = tu.tree_leaves(tu.tree_map(lambda _: ax, a) if ax is None or isinstance(ax, int)
                                  else tu.tree_map(lambda axis, sub: tu.tree_map(lambda _: axis, sub),
                                                   ax, a, is_leaf=lambda v: v is None),
                                  is_leaf=lambda v: v is None)
            if len(axes) != len(leaves):
                raise TypeCheckError("frankentrace.vmap: in_axes does not match the argument's structure")
            inner_leaves = []
            for lf, axis in zip(leaves, axes):
                shape = tuple(lf.shape)
                if axis is not None:
                    r = len(shape)
                    k = axis if axis >= 0 else r + axis
                    if not 0 <= k < r:
                        raise TypeCheckError(f"frankentrace.vmap: in_axes {axis} is out of range for rank {r}")
                    if size is None:
                        size = shape[k]
                    elif shape[k] != size:
                        raise TypeCheckError(f"frankentrace.vmap: mapped axes have different sizes: "
                                             f"{size} and {shape[k]}")
                    shape = shape[:k] + shape[k + 1:]
                inner_leaves.append(jax.ShapeDtypeStruct(shape, lf.dtype,
                                                         weak_type=getattr(lf, "weak_type", False)))
                per_leaf.append((axis, lf))
            inner_args.append(tu.tree_unflatten(tree, inner_leaves))
        if size is None:
            raise TypeCheckError("frankentrace.vmap: no argument is mapped (give axis_size)")
        inner = _stage_of(self.fun, tuple(inner_args), {})
        outs_n = len(inner.program.out_avals)
        oa = self.out_axes
        if oa is None or isinstance(oa, int):
            out_axes = [oa] * outs_n
        else:
            out_axes = tu.tree_leaves(tu.tree_map(lambda axis, sub: tu.tree_map(lambda _: axis, sub),
                                                  oa, tu.tree_unflatten(inner.out_tree, [0] * outs_n),
                                                  is_leaf=lambda v: v is None),
                                      is_leaf=lambda v: v is None)
        avals = [(ft_dtype_name(lf.dtype), tuple(lf.shape)) for _, lf in per_leaf]
        prog = Program(_ft.vmap(inner.program._h, [ax for ax, _ in per_leaf], out_axes, avals))
        stages = dict(inner.stages)
        stages["vmap"] = prog
        return Staged(prog, inner.unflatten, inner.out_kind, _ranges_of(args), stages, inner.out_tree)


def _ranges_of(args):
    tu = _j().tree_util
    out, off = [], 0
    for a in args:
        n = len(tu.tree_leaves(a))
        out.append((off, off + n))
        off += n
    return out


def vmap(fun, in_axes=0, out_axes=0, axis_size=None):
    """jax.vmap, by the library's batching rules (ft_vmap_avals)."""
    return _Vmap(fun, in_axes, out_axes, axis_size)


# ---------------------------------------------------------- inspection

class Lowered:
    """What ft.jit(f).lower(*args) gives: the program at each stage."""

    def __init__(self, staged: Staged, fn):
        self._staged = staged
        self._fn = fn
        self.program = staged.program

    @property
    def stages(self):
        """The stage names as_text accepts."""
        return list(self._staged.stages) + ["optimized", "plan"]

    def as_text(self, stage: str = "jaxpr") -> str:
        """The IR at a stage: "jaxpr" (as traced), each transform applied
        ("grad", "vmap", ...), "optimized" (the exact-tier e-graph rewrite
        ft_jit runs) or "plan" (the compiled execution plan)."""
        if stage == "plan":
            return self._fn.plan()
        if stage == "optimized":
            return self.program.optimize().text
        try:
            return self._staged.stages[stage].text
        except KeyError:
            raise ValueError(f"frankentrace: no stage '{stage}' here; stages: {', '.join(self.stages)}") from None

    def compile(self):
        return self._fn


def make_program(fun, *args, **kwargs) -> Program:
    """The library program ft.jit(fun) runs for these example arguments."""
    holder = fun if isinstance(fun, StagedFunction) else Jitted(fun)
    return holder.program(*args, **kwargs)


def export(fun, *example_args, path, name: str = "ft_main"):
    """Compiles fun for the example arguments' avals ahead of time into a
    shared library at ``path`` (plus ``<path>.json``, its signature), which
    ft.load_aot calls without JAX. Needs JAX and a C compiler."""
    return export_program(make_program(fun, *example_args), path, name)
