#!/usr/bin/env python3
"""Generate fixtures/spmd/ (issue 27, docs/spmd.md): JAX 0.12 shard_map
programs over a 4-device CPU mesh with the named-axis collectives, their
printouts and their values.

Usage: .venv-oracle/bin/python tools/oracle/gen_spmd.py [OUT_DIR]

Per case: <case>.jaxpr (str(jax.make_jaxpr(f)(x)) + "\\n"), <case>.in0.npy,
<case>.out0.npy; CASES lists the case names. Inputs are small integers
stored as f32, so every sum is exact and JAX's all-reduce order cannot
change a bit: the C test compares bit for bit. Seeds: crc32(case name) as
in gen_conformance.py (whose helpers this imports).
"""

import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_conformance as gc  # noqa: E402  (seed_of: shared with the conformance fixtures)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import shard_map  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

OUT_DEFAULT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "fixtures", "spmd")
MESH = Mesh(np.array(jax.devices()[:4]), ("i",))
RING = [(0, 1), (1, 2), (2, 3), (3, 0)]


def sm(f, outs=P("i"), ins=P("i"), check_vma=True):
    return shard_map(f, mesh=MESH, in_specs=ins, out_specs=outs, check_vma=check_vma)


CASES = {
    "psum": (sm(lambda a: jax.lax.psum(a, "i"), outs=P()), (8, 3)),
    "psum_nocheck": (sm(lambda a: jax.lax.psum(a, "i"), outs=P(), check_vma=False), (8, 3)),
    "pmax": (sm(lambda a: jax.lax.pmax(a, "i"), outs=P()), (8, 3)),
    "pmin": (sm(lambda a: jax.lax.pmin(a, "i"), outs=P()), (8, 3)),
    "pmean": (sm(lambda a: jax.lax.pmean(a, "i"), outs=P()), (8, 3)),
    "all_gather": (sm(lambda a: jax.lax.all_gather(a, "i")), (8, 3)),
    "all_gather_tiled_dim1": (sm(lambda a: jax.lax.all_gather(a, "i", axis=1, tiled=True),
                                 ins=P(None, "i"), outs=P(None, "i")), (3, 8)),
    "ppermute": (sm(lambda a: jax.lax.ppermute(a, "i", RING)), (8, 3)),
    "ppermute_partial": (sm(lambda a: jax.lax.ppermute(a, "i", [(0, 2), (3, 1)])), (8, 3)),
    "psum_scatter": (sm(lambda a: jax.lax.psum_scatter(a, "i", tiled=True)), (16, 3)),
    "psum_scatter_untiled": (sm(lambda a: jax.lax.psum_scatter(a, "i")), (16, 3)),
    "axis_index": (sm(lambda a: a * jax.lax.axis_index("i").astype(jnp.float32)), (8, 3)),
    "all_to_all": (sm(lambda a: jax.lax.all_to_all(a, "i", 0, 0, tiled=True)), (16, 3)),
    "loss_grad": (jax.grad(lambda x: sm(lambda a: jax.lax.psum(jnp.sum(a * a), "i"), outs=P())(x)), (8, 3)),
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else OUT_DEFAULT
    os.makedirs(out, exist_ok=True)
    for name, (f, shape) in CASES.items():
        rng = np.random.default_rng(gc.seed_of(name))
        x = rng.integers(-8, 9, size=shape).astype(np.float32)
        text = str(jax.make_jaxpr(f)(x)) + "\n"
        y = np.asarray(f(x))
        with open(os.path.join(out, name + ".jaxpr"), "w") as fh:
            fh.write(text)
        np.save(os.path.join(out, name + ".in0.npy"), x)
        np.save(os.path.join(out, name + ".out0.npy"), y)
    with open(os.path.join(out, "CASES"), "w") as fh:
        fh.write("".join(n + "\n" for n in CASES))


if __name__ == "__main__":
    main()
