#!/usr/bin/env python3
"""Generate fixtures/spmd_train/ (issue 27, docs/spmd.md "MPI"): one SGD
step of a small data-parallel MLP as JAX 0.12 prints it. The global batch
splits over a 4-index mesh axis 'i'; every index computes the gradient of
its shard's loss inside the shard_map body, psum combines them, and the
step returns the updated parameters (replicated, P()).

Usage: .venv-oracle/bin/python tools/oracle/gen_spmd_train.py [OUT_DIR [BATCH HIDDEN NAME]]

Writes step.jaxpr (or NAME.jaxpr with another batch and hidden width:
bench/mpi uses a larger one) (str(jax.make_jaxpr(step)(...)) + "\\n"). The C test
(tests/mpi) trains with it over the simulated axis and over 2 and 4 MPI
ranks and compares the weights bit for bit; the values are FrankenTrace's
own (no JAX values are needed: the reference is the one-process run).
"""

import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import shard_map  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DEFAULT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "fixtures", "spmd_train")
MESH = Mesh(np.array(jax.devices()[:4]), ("i",))
BATCH, DIN, HID, DOUT, LR = 16, 4, 8, 2, 0.05


def loss(w1, b1, w2, x, y):
    h = jnp.tanh(x @ w1 + b1)
    return jnp.sum((h @ w2 - y) ** 2) / (x.shape[0] * 4)


def body(w1, b1, w2, x, y):
    g = jax.grad(loss, argnums=(0, 1, 2))(w1, b1, w2, x, y)
    return tuple(jax.lax.psum(gi, "i") for gi in g)


def step(w1, b1, w2, x, y):
    grads = shard_map(body, mesh=MESH, in_specs=(P(), P(), P(), P("i"), P("i")),
                      out_specs=(P(), P(), P()), check_vma=False)(w1, b1, w2, x, y)
    return tuple(p - LR * g for p, g in zip((w1, b1, w2), grads))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else OUT_DEFAULT
    batch, hid, name = (int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]) if len(sys.argv) > 4 else (BATCH, HID, "step")
    os.makedirs(out, exist_ok=True)
    args = (jnp.zeros((DIN, hid), jnp.float32), jnp.zeros((hid,), jnp.float32),
            jnp.zeros((hid, DOUT), jnp.float32), jnp.zeros((batch, DIN), jnp.float32),
            jnp.zeros((batch, DOUT), jnp.float32))
    with open(os.path.join(out, name + ".jaxpr"), "w") as f:
        f.write(str(jax.make_jaxpr(step)(*args)) + "\n")


if __name__ == "__main__":
    main()
