#!/usr/bin/env python3
"""Generate fixtures/spmd/ (issue 27, docs/spmd.md): JAX 0.12 shard_map
programs over a 4-device CPU mesh with the named-axis collectives, their
printouts and their values.

Usage: .venv-oracle/bin/python tools/oracle/gen_spmd.py [OUT_DIR]

Per case: <case>.jaxpr (str(jax.make_jaxpr(f)(x)) + "\\n"), <case>.in0.npy,
<case>.out0.npy; CASES lists the case names, each followed by its flags:
`linear` (f is linear in its input: the test checks jvp(f)(x, t) ==
(f(x), f(t))), `vmap` (<case>.vmap0.npy: jax.vmap(f) of [x, t], t[i] =
(i % 5) - 2), `grad` (a scalar loss of two inputs (x, w): also
<case>.in1.npy, <case>.grad.jaxpr (jax.grad(f) w.r.t. x),
<case>.grad0.npy, its value, and <case>.hessian0.npy, jax.hessian(f)
w.r.t. x). Inputs are small integers stored as f32, so
every sum is exact and JAX's all-reduce order cannot change a bit: the C
test compares bit for bit. Seeds: crc32(case name) as in
gen_conformance.py (whose helpers this imports).

Meshes: MESH ('i': 4) and MESH2 ('i': 2, 'j': 2; devices row-major).
jax.pmap in JAX 0.12 is built on shard_map: its printout is a jit holding
a shard_map[check_vma=False] (there is no xla_pmap primitive any more); the
pmap_* cases capture that.
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
MESH2 = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("i", "j"))
RING = [(0, 1), (1, 2), (2, 3), (3, 0)]


def sm(f, outs=P("i"), ins=P("i"), check_vma=True, mesh=MESH):
    return shard_map(f, mesh=mesh, in_specs=ins, out_specs=outs, check_vma=check_vma)


def sm2(f, outs, ins=P("i", "j"), check_vma=True):
    return sm(f, outs, ins, check_vma, MESH2)


def scan_psum(a):
    def step(c, r):
        s = jax.lax.psum(r, "i")
        return c + s, s * 2.0
    return jax.lax.scan(step, jnp.zeros(a.shape[1:], a.dtype), a)[1]


def cond_psum(a):
    s = jax.lax.psum(jnp.sum(a), "i")
    return jax.lax.cond(s > 0, lambda b: jax.lax.psum(b, "i"), lambda b: jax.lax.psum(b * 3.0, "i"), a)


def while_psum(a):
    return jax.lax.fori_loop(0, 2, lambda k, c: jax.lax.ppermute(c, "i", RING) + c, a)


def scan_ppermute(a):
    def step(c, r):
        c = jax.lax.ppermute(c, "i", RING) + r
        return c, c
    return jax.lax.scan(step, a[0] * 0.0, a)[1]


def loss_of(body, check_vma=True, ins=(P("i"), P("i")), mesh=MESH):
    """A scalar loss of (x, w): the body's per-index partial loss psummed
    over the mesh inside shard_map."""
    names = tuple(mesh.axis_names)
    return shard_map(lambda a, b: jax.lax.psum(jnp.sum(body(a, b)), names), mesh=mesh, in_specs=ins,
                     out_specs=P(), check_vma=check_vma)


def dp_linear(w, x):
    """A data-parallel linear model: w replicated, the batch x split; the
    mean squared output over the global batch (pmean)."""
    def body(w, x):
        y = x @ w
        return jax.lax.pmean(jnp.sum(y * y), "i")
    return shard_map(body, mesh=MESH, in_specs=(P(), P("i")), out_specs=P())(w, x)


def pmap_of(f):
    return jax.pmap(f, axis_name="i")


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
    # all_to_all with split_axis != concat_axis (the result shape needs the mesh's axis size)
    "all_to_all_s0c1": (sm(lambda a: jax.lax.all_to_all(a, "i", 0, 1, tiled=True)), (16, 8)),
    "all_to_all_s1c0": (sm(lambda a: jax.lax.all_to_all(a, "i", 1, 0, tiled=True)), (8, 8)),
    "all_to_all_untiled": (sm(lambda a: jax.lax.all_to_all(a, "i", 1, 0), ins=P(None, "i")), (4, 16)),
    "all_to_all_3d_s2c1": (sm(lambda a: jax.lax.all_to_all(a, "i", 2, 1, tiled=True)), (8, 4, 8)),
    "loss_grad": (jax.grad(lambda x: sm(lambda a: jax.lax.psum(jnp.sum(a * a), "i"), outs=P())(x)), (8, 3)),
    # two-axis mesh ('i': 2, 'j': 2)
    "m2_psum_j": (sm2(lambda a: jax.lax.psum(a, "j"), outs=P("i")), (4, 6)),
    "m2_psum_i": (sm2(lambda a: jax.lax.psum(a, "i"), outs=P(None, "j")), (4, 6)),
    "m2_psum_ij": (sm2(lambda a: jax.lax.psum(a, ("i", "j")), outs=P()), (4, 6)),
    "m2_psum_ji": (sm2(lambda a: jax.lax.psum(a, ("j", "i")), outs=P()), (4, 6)),
    "m2_axis_index": (sm2(lambda a: a * (jax.lax.axis_index("i") * 10 + jax.lax.axis_index("j")).astype(jnp.float32),
                          outs=P("i", "j")), (4, 6)),
    "m2_axis_index_ij": (sm2(lambda a: a * jax.lax.axis_index(("i", "j")).astype(jnp.float32),
                             outs=P("i", "j")), (4, 6)),
    "m2_all_gather_j": (sm2(lambda a: jax.lax.all_gather(a, "j", axis=1, tiled=True), outs=P("i", "j")), (4, 6)),
    "m2_all_gather_ij": (sm2(lambda a: jax.lax.all_gather(a, ("i", "j"), axis=0, tiled=True),
                             ins=P(("i", "j")), outs=P(("i", "j"))), (8, 3)),
    "m2_ppermute_i": (sm2(lambda a: jax.lax.ppermute(a, "i", [(0, 1), (1, 0)]), outs=P("i", "j")), (4, 6)),
    "m2_psum_scatter_j": (sm2(lambda a: jax.lax.psum_scatter(a, "j", scatter_dimension=0, tiled=True),
                              outs=P(("i", "j"))), (8, 6)),
    "m2_all_to_all_j": (sm2(lambda a: jax.lax.all_to_all(a, "j", 0, 0, tiled=True), outs=P("i", "j")), (8, 6)),
    "m2_all_to_all_j_s1c0": (sm2(lambda a: jax.lax.all_to_all(a, "j", 1, 0, tiled=True), outs=P("i", "j")),
                             (4, 8)),
    "m2_all_to_all_ij_s0c1": (sm2(lambda a: jax.lax.all_to_all(a, ("i", "j"), 0, 1, tiled=True),
                                  ins=P(("i", "j")), outs=P(("i", "j"))), (16, 2)),
    "m2_spec_joint": (sm2(lambda a: jax.lax.psum(a, ("i", "j")), ins=P(("i", "j")), outs=P()), (8, 3)),
    "m2_spec_ji": (sm2(lambda a: jax.lax.psum(a, "i"), ins=P(("j", "i")), outs=P("j")), (8, 3)),
    # collectives inside control flow of a body
    "cf_scan_psum": (sm(scan_psum, outs=P(None)), (8, 3)),
    "cf_cond_psum": (sm(cond_psum, outs=P()), (8, 3)),
    "cf_while_ppermute": (sm(while_psum), (8, 3)),
    "cf_scan_ppermute": (sm(scan_ppermute), (8, 3)),
    # jax.pmap (a jit of a shard_map[check_vma=False] in JAX 0.12)
    "pmap_psum": (pmap_of(lambda a: jax.lax.psum(a, "i")), (4, 2, 3)),
    "pmap_axis_index": (pmap_of(lambda a: a * jax.lax.axis_index("i").astype(jnp.float32)), (4, 2, 3)),
    "pmap_all_gather": (pmap_of(lambda a: jax.lax.all_gather(a, "i")), (4, 3)),
    "pmap_ppermute": (pmap_of(lambda a: jax.lax.ppermute(a, "i", RING)), (4, 3)),
}

NONLINEAR = {"pmax", "pmin", "cf_cond_psum"}

# Cases whose jax.vmap is captured too (flag `vmap`): <case>.vmap0.npy is
# jax.vmap(f) of the batch [x, t], t[i] = (i % 5) - 2 over x's elements in
# order (the C test's second example).
VMAP = {"all_to_all_s0c1", "all_to_all_s1c0", "all_to_all_untiled", "all_to_all_3d_s2c1",
        "m2_all_to_all_j_s1c0", "m2_all_to_all_ij_s0c1"}

# Scalar losses of (x, w): value and jax.grad w.r.t. x (reverse mode through shard_map).
GRAD_CASES = {
    "g_psum": (loss_of(lambda a, b: a * a * b), (8, 3)),
    "g_psum_nocheck": (loss_of(lambda a, b: a * a * b, check_vma=False), (8, 3)),
    "g_cubic_relu": (loss_of(lambda a, b: jnp.maximum(a, 0.0) * a * a + b * a), (8, 3)),
    "g_pmean_replicated_w": (loss_of(lambda a, b: jax.lax.pmean(a, "i") * b, ins=(P(), P("i"))), (2, 3), (8, 3)),
    "g_all_gather": (loss_of(lambda a, b: jax.lax.all_gather(a, "i", tiled=True) * b, ins=(P("i"), P())),
                     (8, 3), (8, 3)),
    "g_all_gather_untiled": (loss_of(lambda a, b: jax.lax.all_gather(a, "i", axis=1) * b, ins=(P("i"), P())),
                             (8, 3), (2, 4, 3)),
    "g_ppermute": (loss_of(lambda a, b: jax.lax.ppermute(a * a, "i", RING) * b), (8, 3)),
    "g_ppermute_partial": (loss_of(lambda a, b: jax.lax.ppermute(a, "i", [(0, 2), (3, 1)]) * b), (8, 3)),
    "g_psum_scatter": (loss_of(lambda a, b: jax.lax.psum_scatter(a * a, "i", tiled=True) * b), (16, 3), (4, 3)),
    "g_all_to_all": (loss_of(lambda a, b: jax.lax.all_to_all(a, "i", 0, 0, tiled=True) * b * a), (16, 3)),
    "g_all_to_all_s0c1": (loss_of(lambda a, b: jax.lax.all_to_all(a * a, "i", 0, 1, tiled=True) *
                                  jax.lax.all_to_all(b, "i", 0, 1, tiled=True)), (16, 4)),
    "g_all_to_all_m2_s1c0": (loss_of(lambda a, b: jax.lax.all_to_all(a * a, "j", 1, 0, tiled=True) *
                                     jax.lax.all_to_all(b * a, "j", 1, 0, tiled=True),
                                     ins=(P("i", "j"), P("i", "j")), mesh=MESH2), (4, 8)),
    "g_dp_linear": (dp_linear, (3, 2), (8, 3)),
    "g_m2": (loss_of(lambda a, b: jax.lax.psum(a, "j") * b * a, ins=(P("i", "j"), P("i", "j")), mesh=MESH2),
             (4, 6)),
    "g_scan": (loss_of(lambda a, b: scan_psum(a * b) * a), (8, 3)),
    "g_pmap": (lambda x, w: jnp.sum(pmap_of(lambda a, b: jax.lax.psum(a * a, "i") * b)(x, w)), (4, 2, 3)),
}


def write(out, name, text):
    with open(os.path.join(out, name), "w") as fh:
        fh.write(text + "\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else OUT_DEFAULT
    os.makedirs(out, exist_ok=True)
    lines = []
    for name, (f, shape) in CASES.items():
        rng = np.random.default_rng(gc.seed_of(name))
        x = rng.integers(-8, 9, size=shape).astype(np.float32)
        write(out, name + ".jaxpr", str(jax.make_jaxpr(f)(x)))
        np.save(os.path.join(out, name + ".in0.npy"), x)
        np.save(os.path.join(out, name + ".out0.npy"), np.asarray(f(x)))
        flags = "" if name in NONLINEAR else " linear"
        if name in VMAP:
            t = (np.arange(x.size) % 5 - 2).astype(np.float32).reshape(x.shape)
            np.save(os.path.join(out, name + ".vmap0.npy"), np.asarray(jax.vmap(f)(np.stack([x, t]))))
            flags += " vmap"
        lines.append(name + flags)
    for name, (f, *shapes) in GRAD_CASES.items():
        rng = np.random.default_rng(gc.seed_of(name))
        xs = [rng.integers(-4, 5, size=s).astype(np.float32) for s in (shapes * 2)[:2]]
        g = jax.grad(f)
        write(out, name + ".jaxpr", str(jax.make_jaxpr(f)(*xs)))
        write(out, name + ".grad.jaxpr", str(jax.make_jaxpr(g)(*xs)))
        for k, x in enumerate(xs):
            np.save(os.path.join(out, "%s.in%d.npy" % (name, k)), x)
        np.save(os.path.join(out, name + ".out0.npy"), np.asarray(f(*xs)))
        np.save(os.path.join(out, name + ".grad0.npy"), np.asarray(g(*xs)))
        np.save(os.path.join(out, name + ".hessian0.npy"), np.asarray(jax.hessian(f)(*xs)))
        lines.append(name + " grad")
    with open(os.path.join(out, "CASES"), "w") as fh:
        fh.write("".join(n + "\n" for n in lines))


if __name__ == "__main__":
    main()
