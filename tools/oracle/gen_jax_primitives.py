#!/usr/bin/env python3
"""Writes fixtures/jax_primitives_0.12.txt: every primitive JAX registers.

Imports every module under jax._src (those that import on this machine:
GPU/TPU back ends and optional dependencies may not), then lists each
core.Primitive instance found in a module's namespace or anywhere in the
heap (gc), once per name, with the module that defines it. One line per
primitive, sorted by name:

    <name> <module>

`ftc coverage --jax` reads this file and prints each primitive with its
state in FrankenTrace. Run with the oracle's Python:

    .venv-oracle/bin/python tools/oracle/gen_jax_primitives.py
"""
import argparse
import gc
import importlib
import os
import pkgutil
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DEFAULT = os.path.join(HERE, "..", "..", "fixtures", "jax_primitives_0.12.txt")
HIPRIMS_NUMPY = ("Frexp", "Ldexp", "Nonzero", "SearchSorted")
# lax.custom_root's HiPrim and the linear map its jvp/grad printouts bind
HIPRIMS_LAX = ("CustomRoot", "_RootLinearMap")


def collect():
    import jax
    import jax._src as S
    from jax._src import core
    import jax.numpy, jax.scipy.special, jax.nn, jax.random, jax.lax  # noqa: F401,E401
    found = {}
    mods = sorted(m.name for m in pkgutil.walk_packages(S.__path__, "jax._src."))
    for mn in mods:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = importlib.import_module(mn)
        except Exception:  # noqa: BLE001 (an optional back end or dependency)
            continue
        for v in list(vars(m).values()):
            if isinstance(v, core.Primitive):
                # the defining module: the deepest one holding it (packages
                # such as jax._src.lax re-export their submodules' primitives)
                mod = getattr(m, "__name__", mn)
                if v.name not in found or mod.count(".") > found[v.name].count("."):
                    found[v.name] = mod
    for v in gc.get_objects():
        if isinstance(v, core.Primitive) and v.name not in found:
            found[v.name] = "(heap)"
    # HiJAX primitives are classes (jax._src.hijax.HiPrim), not registered
    # instances; these are the ones jax.numpy binds and prints by their class
    # name (jnp.searchsorted/digitize/interp, nonzero/argwhere/unique with
    # size=, frexp, ldexp)
    from jax._src import hijax

    def subclasses(c):
        for sc in c.__subclasses__():
            yield sc
            yield from subclasses(sc)
    for c in subclasses(hijax.HiPrim):
        if c.__name__ in HIPRIMS_NUMPY + HIPRIMS_LAX:
            found[c.__name__] = c.__module__
    return jax.__version__, found


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=OUT_DEFAULT)
    args = ap.parse_args()
    version, found = collect()
    with open(args.out, "w") as fh:
        fh.write(f"# primitives registered by JAX {version} "
                 f"(tools/oracle/gen_jax_primitives.py): name module\n")
        for name in sorted(found):
            fh.write(f"{name} {found[name]}\n")
    print(f"{len(found)} primitives -> {os.path.relpath(args.out)}", file=sys.stderr)


if __name__ == "__main__":
    main()
