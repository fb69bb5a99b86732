#!/usr/bin/env python3
"""Generate the `ragged` conformance family (fixtures/ragged/, issue 17
§1): JAX 0.12's ragged_dot_general (lax.ragged_dot, lax.ragged_dot_general)
in its three modes, f32 and f64, with JAX's jvp, vjp/grad and vmap where
JAX defines them (transforms captured for f32, gen_sweep.S):

- RAGGED_NONCONTRACTING, the MoE case ragged_dot(lhs[m,k], rhs[g,k,n],
  group_sizes[g]): groups covering every row, rows in no group, an empty
  group, an extra batch dimension with 2-D group sizes, precision and
  preferred_element_type, an infinity in one group's rhs (JAX's CPU result
  is NaN in the rows of the other groups: 0 * inf), negative sizes
  (overlapping groups), a larger problem for the summation bound;
- RAGGED_CONTRACTING (the rhs gradient's mode): jvp and vmap (JAX refuses
  its transpose);
- RAGGED_BATCH: JAX on CPU ignores group_sizes there (a dense dot).

group_sizes is an argument (int32), so JAX's vmap sees every operand
batched at axis 0, the only batching JAX 0.12 implements.

It reuses gen_sweep.py's registration and gen_conformance.py's capture.

Usage:
  .venv-oracle/bin/python tools/oracle/gen_ragged.py          # -> fixtures/ragged
  .venv-oracle/bin/python tools/oracle/gen_ragged.py --list
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_conformance as gc  # noqa: E402
import gen_sweep as gs  # noqa: E402  (S, U, prune)

import numpy as np  # noqa: E402

F = ("f32", "f64")
AD = ("jvp", "vjp", "vmap")


def C(name, fn, makers, dtypes=F, tf=AD):
    gs.S(name, fn, makers, dtypes, tf, family="ragged", prefix="rag")


def U(shape, lo=-1.0, hi=1.0):
    return gs.U(shape, lo, hi)


def I(*v):
    return lambda rng, dtn: np.array(v, np.int32)


def register():
    import jax.numpy as jnp
    from jax import lax

    RD = lax.RaggedDotDimensionNumbers
    moe = lambda a, b, g: lax.ragged_dot(a, b, g)
    # ---------------------------------------------- RAGGED_NONCONTRACTING
    C("moe", moe, [U((8, 4)), U((3, 4, 5)), I(3, 1, 4)])
    C("moe_grad", lambda a, b, g: (lax.ragged_dot(a, b, g) ** 2).sum(), [U((6, 3)), U((2, 3, 4)), I(4, 2)],
      F, ("vjp",))
    C("moe_partial", moe, [U((8, 4)), U((3, 4, 5)), I(2, 0, 3)])  # rows 5..7 in no group
    C("moe_precision", lambda a, b, g: lax.ragged_dot(a, b, g, precision=lax.Precision.HIGHEST,
                                                      preferred_element_type=jnp.float32),
      [U((5, 3)), U((2, 3, 4)), I(2, 3)], ("f32",))

    def inf_rhs(rng, dtn):
        r = gs.mk(dtn, rng, (3, 4, 5), -1.0, 1.0)
        r[2, 1, 3] = np.inf
        return r
    C("moe_inf_other_group", moe, [U((7, 4)), inf_rhs, I(3, 2, 2)], F, ())
    C("moe_negative_sizes", moe, [U((7, 3)), U((3, 3, 2)), I(3, -1, 4)], F, ())
    C("moe_large", moe, [U((64, 32)), U((4, 32, 16)), I(10, 20, 30, 4)], F, ("vmap",))
    bdims = RD(dot_dimension_numbers=(([2], [2]), ([0], [1])), lhs_ragged_dimensions=[1],
               rhs_group_dimensions=[0])
    C("noncontracting_batch", lambda a, b, g: lax.ragged_dot_general(a, b, g, bdims),
      [U((2, 6, 4)), U((3, 2, 4, 5)), lambda rng, dtn: np.array([[2, 1, 3], [0, 4, 2]], np.int32)])
    # ------------------------------------------------- RAGGED_CONTRACTING
    cdims = RD(dot_dimension_numbers=(([0], [0]), ([], [])), lhs_ragged_dimensions=[0],
               rhs_group_dimensions=[])
    C("contracting", lambda a, b, g: lax.ragged_dot_general(a, b, g, cdims),
      [U((6, 4)), U((6, 5)), I(2, 1, 3)], F, ("jvp", "vmap"))
    C("contracting_partial", lambda a, b, g: lax.ragged_dot_general(a, b, g, cdims),
      [U((7, 3)), U((7, 2)), I(3, 0, 2)], F, ())
    # ------------------------------------------------------- RAGGED_BATCH
    bbdims = RD(dot_dimension_numbers=(([2], [1]), ([0], [0])), lhs_ragged_dimensions=[0],
                rhs_group_dimensions=[])
    C("batch", lambda a, b, g: lax.ragged_dot_general(a, b, g, bbdims),
      [U((6, 3, 4)), U((6, 4, 5)), I(1, 2, 0)], F, ("jvp", "vmap"))


if __name__ == "__main__":
    out = os.path.join(gc.ROOT, "fixtures", "ragged")
    if "--out" in sys.argv:
        out = os.path.abspath(sys.argv[sys.argv.index("--out") + 1])
    try:
        gc.main(register=register, out_default=os.path.join(gc.ROOT, "fixtures", "ragged"),
                script=os.path.abspath(__file__), generator="tools/oracle/gen_ragged.py",
                doc=__doc__, lax_json=False)
    finally:
        if "--pass" not in sys.argv and "--list" not in sys.argv and \
                os.path.exists(os.path.join(out, "MANIFEST.json")):
            gs.prune(out)
