#!/usr/bin/env python3
"""Generate fixtures/spectral/ (family `spectral`): JAX 0.12's jnp.linalg
qr, eigh, eigvalsh, svd, eig, eigvals, norm (ord=2, 'nuc'), pinv, lstsq and
matrix_rank, jax.scipy.linalg.schur and hessenberg, lax.linalg.tridiagonal,
and the PCA and least-squares programs, in the conformance fixture format
of gen_conformance.py (whose capture, transform and manifest code this
reuses). Each case in f32 and f64 (x64_ prefix), with JAX's jvp, vjp (grad
for a scalar output) and vmap where JAX defines them; inputs are
well-conditioned, ill-conditioned (close singular values/eigenvalues) and
degenerate (repeated eigenvalues, rank deficiency: JAX's derivatives are
inf/NaN there, and ours must be the same), single and batched.

Eigenvector and singular-vector signs are not unique, but JAX on CPU calls
LAPACK (syevd, gesdd, geqrf+orgqr, geev) and so do we, on the same column-major
matrices: the signs are compared exactly, as JAX gives them.

Usage:
  .venv-oracle/bin/python tools/oracle/gen_spectral.py            # -> fixtures/spectral
  .venv-oracle/bin/python tools/oracle/gen_spectral.py --list
Deterministic: seeds are crc32(case name).
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_conformance as gc  # noqa: E402  (capture, transforms, manifest)

import numpy as np  # noqa: E402

ROOT = gc.ROOT
FAMILY = "spectral"
D = ("jvp", "vjp", "vmap")


def sym(rng, n, batch=()):
    a = rng.uniform(-1.0, 1.0, size=batch + (n, n))
    return a + np.swapaxes(a, -1, -2)


def with_spectrum(rng, w):
    """Q diag(w) Q^T with a seeded orthogonal Q."""
    q, _ = np.linalg.qr(rng.standard_normal((len(w), len(w))))
    return (q * np.asarray(w, dtype=np.float64)) @ q.T


def with_singular(rng, m, n, s):
    u, _ = np.linalg.qr(rng.standard_normal((m, m)))
    v, _ = np.linalg.qr(rng.standard_normal((n, n)))
    k = min(m, n)
    d = np.zeros((m, n))
    d[np.arange(k), np.arange(k)] = s
    return u @ d @ v.T


def unif(shape):
    return lambda rng: rng.uniform(-1.0, 1.0, size=shape)


def reg(name, fn, makers, transforms=D, dtypes=("f32", "f64")):
    for dtn in dtypes:
        cname = f"{'x64_' if dtn == 'f64' else ''}spec_{name}_{dtn}"
        ts = tuple(transforms)
        if "vjp" in ts:
            ts = tuple(t if t != "vjp" else _vjp_or_grad(fn, makers) for t in ts)

        def b(rng, fn=fn, makers=makers, dtn=dtn):
            return fn, [np.asarray(m(rng)).astype(gc.dt(dtn)) for m in makers]
        gc.case(cname, FAMILY, name.split("__")[0], ts)(b)


def reg_c(name, fn, makers, transforms=("vmap",)):
    """A complex case in c64 and c128 (x64_ prefix); makers give complex
    arrays."""
    for dtn in ("c64", "c128"):
        cname = f"{'x64_' if dtn == 'c128' else ''}spec_{name}_{dtn}"

        def b(rng, fn=fn, makers=makers, dtn=dtn):
            ct = np.complex64 if dtn == "c64" else np.complex128
            return fn, [np.asarray(m(rng)).astype(ct) for m in makers]
        gc.case(cname, FAMILY, name.split("__")[0], tuple(transforms))(b)


def cunif(shape):
    return lambda rng: rng.uniform(-1.0, 1.0, size=shape) + 1j * rng.uniform(-1.0, 1.0, size=shape)


def herm(rng, n, batch=()):
    a = cunif(batch + (n, n))(rng)
    return a + np.conj(np.swapaxes(a, -1, -2))


def _vjp_or_grad(fn, makers):
    import jax
    rng = np.random.default_rng(0)
    out = jax.eval_shape(fn, *[np.asarray(m(rng), np.float32) for m in makers])
    leaves = jax.tree_util.tree_leaves(out)
    if len(leaves) == 1 and leaves[0].shape == () and gc.is_float_aval(leaves[0]):
        return "grad"
    return "vjp"


def register():
    import jax.numpy as jnp
    la = jnp.linalg

    # ---- eigh / eigvalsh
    reg("eigh__4", la.eigh, [lambda r: sym(r, 4)])
    reg("eigh__batched", la.eigh, [lambda r: sym(r, 3, (2,))])
    reg("eigh__upper_nosym", lambda a: la.eigh(a, UPLO="U", symmetrize_input=False),
        [unif((4, 4))], ("vmap",))
    reg("eigh__close", la.eigh, [lambda r: with_spectrum(r, [1.0, 1.0 + 1e-3, 5.0])])
    reg("eigh__repeated", la.eigh, [lambda r: with_spectrum(r, [2.0, 2.0, -1.0])])
    reg("eigvalsh__5", la.eigvalsh, [lambda r: sym(r, 5)])
    reg("eigvalsh__sum", lambda a: jnp.sum(la.eigvalsh(a) * jnp.arange(1.0, 4.0, dtype=a.dtype)),
        [lambda r: sym(r, 3)], ("grad", "vmap"))

    # ---- svd
    reg("svd__square", la.svd, [unif((4, 4))])
    reg("svd__thin_tall", lambda a: la.svd(a, full_matrices=False), [unif((5, 3))])
    reg("svd__thin_wide", lambda a: la.svd(a, full_matrices=False), [unif((3, 5))])
    reg("svd__full_tall", la.svd, [unif((5, 3))], ("vmap",))  # JAX: no JVP for full m != n
    reg("svd__full_wide", la.svd, [unif((2, 4))], ("vmap",))
    reg("svd__values", lambda a: la.svd(a, compute_uv=False), [unif((4, 3))])
    reg("svd__batched", lambda a: la.svd(a, full_matrices=False), [unif((2, 4, 3))])
    reg("svd__illcond", lambda a: la.svd(a, full_matrices=False),
        [lambda r: with_singular(r, 4, 3, [1.0, 1e-3, 1e-6])], ("jvp", "vmap"))
    reg("svd__rank_deficient", lambda a: la.svd(a, full_matrices=False),
        [lambda r: with_singular(r, 4, 3, [2.0, 1.0, 0.0])], ("jvp",), dtypes=("f64",))

    # ---- qr (JAX's qr_jvp_rule; complete mode on a tall operand solves with
    # lu(q_nn - I))
    reg("qr__reduced", la.qr, [unif((5, 3))])
    reg("qr__complete", lambda a: la.qr(a, mode="complete"), [unif((5, 3))])
    reg("qr__complete_square", lambda a: la.qr(a, mode="complete"), [unif((4, 4))],
        ("jvp", "vjp"))
    reg("qr__wide", la.qr, [unif((3, 5))])
    reg("qr__r", lambda a: la.qr(a, mode="r"), [unif((4, 4))], ("jvp",))
    reg("qr__batched", la.qr, [unif((2, 4, 3))], ("jvp", "vjp"))
    reg("qr__sum", lambda a: jnp.sum(la.qr(a)[0] * jnp.arange(1.0, 13.0, dtype=a.dtype).reshape(4, 3))
        + jnp.sum(la.qr(a)[1]), [unif((4, 3))], ("grad", "vmap"))

    # ---- eig (JAX's JVP solves with the eigenvectors: a complex custom_linear_solve
    # vmapped over da's columns; eigenvector derivatives only with enable_eigvec_derivs)
    reg("eig__5", la.eig, [unif((5, 5))], ("vmap",))
    reg("eigvals__jvp", la.eigvals, [unif((4, 4))], ("jvp",))
    reg("eigvals__batched_jvp", la.eigvals, [unif((2, 3, 3))], ("jvp",))
    reg("eigvals__abs_sum", lambda a: jnp.sum(jnp.abs(la.eigvals(a)) * jnp.arange(1.0, 5.0, dtype=a.dtype))
        + jnp.sum(la.eigvals(a).real), [unif((4, 4))], ("grad",))
    # (the seeds of these names give real eigenvectors whose signs JAX's LAPACK
    # and OpenBLAS's geev choose alike: geev leaves a real eigenvector's sign
    # to the implementation)
    reg("eig__derivs", lambda a: __import__("jax").lax.linalg.eig(a, enable_eigvec_derivs=True),
        [unif((4, 4))], ("jvp",), ("f32",))
    reg("eig__derivs_d", lambda a: __import__("jax").lax.linalg.eig(a, enable_eigvec_derivs=True),
        [unif((4, 4))], ("jvp",), ("f64",))
    reg("eig__left_derivs_b", lambda a: __import__("jax").lax.linalg.eig(
        a, compute_left_eigenvectors=True, enable_eigvec_derivs=True), [unif((3, 3))], ("jvp",))

    # ---- complex operands: eigh of a Hermitian matrix, svd, qr (forward, vmap)
    reg_c("eigh__herm", la.eigh, [lambda r: herm(r, 4)])
    reg_c("eigh__herm_batched", la.eigh, [lambda r: herm(r, 3, (2,))], ())
    reg_c("eigvalsh__herm", la.eigvalsh, [lambda r: herm(r, 4)], ())
    reg_c("svd__cpx", la.svd, [cunif((4, 3))])
    reg_c("svd__cpx_thin", lambda a: la.svd(a, full_matrices=False), [cunif((3, 5))], ())
    reg_c("svd__cpx_values", lambda a: la.svd(a, compute_uv=False), [cunif((4, 4))], ())
    reg_c("qr__cpx", la.qr, [cunif((4, 3))])
    reg_c("qr__cpx_complete", lambda a: la.qr(a, mode="complete"), [cunif((4, 3))], ())
    reg_c("qr__cpx_wide", la.qr, [cunif((2, 3, 4))], ())

    reg_c("eig__cpx", la.eig, [cunif((3, 3))], ("vmap",))
    reg_c("eig__cpx_left", lambda a: __import__("jax").lax.linalg.eig(a, compute_left_eigenvectors=True),
          [cunif((3, 3))], ())
    reg_c("eigvals__cpx_jvp", la.eigvals, [cunif((3, 3))], ("jvp",))

    # ---- complex JVPs (JAX's rules with _H: eigh of a Hermitian matrix, svd,
    # qr), vjps, and grads of real-valued losses (|v|^2, |u|^2 and |q|^2 do not
    # depend on the vectors' phases)
    reg_c("eigh__herm_jvp", la.eigh, [lambda r: herm(r, 4)], ("jvp", "vjp"))
    reg_c("eigh__herm_batched_jvp", la.eigh, [lambda r: herm(r, 3, (2,))], ("jvp",))
    reg_c("eigh__herm_loss", lambda a: jnp.sum(la.eigh(a)[0] * jnp.arange(1.0, 4.0))
          + jnp.sum(jnp.abs(la.eigh(a)[1]) ** 2 * jnp.arange(1.0, 10.0).reshape(3, 3)),
          [lambda r: herm(r, 3)], ("grad", "vmap"))
    reg_c("svd__cpx_thin_jvp", lambda a: la.svd(a, full_matrices=False), [cunif((4, 3))], ("jvp", "vjp"))
    reg_c("svd__cpx_wide_jvp", lambda a: la.svd(a, full_matrices=False), [cunif((3, 5))], ("jvp",))
    reg_c("svd__cpx_square_jvp", la.svd, [cunif((3, 3))], ("jvp",))
    reg_c("svd__cpx_values_jvp", lambda a: la.svd(a, compute_uv=False), [cunif((4, 3))], ("jvp",))
    reg_c("svd__cpx_loss", lambda a: jnp.sum(la.svd(a, compute_uv=False) * jnp.arange(1.0, 4.0))
          + jnp.sum(jnp.abs(la.svd(a, full_matrices=False)[0]) ** 2 * jnp.arange(1.0, 13.0).reshape(4, 3)),
          [cunif((4, 3))], ("grad", "vmap"))
    reg_c("qr__cpx_jvp", la.qr, [cunif((4, 3))], ("jvp", "vjp"))
    reg_c("qr__cpx_complete_jvp", lambda a: la.qr(a, mode="complete"), [cunif((4, 3))], ("jvp",))
    reg_c("qr__cpx_wide_jvp", la.qr, [cunif((3, 5))], ("jvp",))
    reg_c("qr__cpx_batched_jvp", la.qr, [cunif((2, 4, 3))], ("jvp",))
    reg_c("qr__cpx_loss", lambda a: jnp.sum(jnp.abs(la.qr(a)[0]) ** 2 * jnp.arange(1.0, 13.0).reshape(4, 3))
          + jnp.sum(jnp.real(la.qr(a)[1]) * jnp.arange(1.0, 10.0).reshape(3, 3)),
          [cunif((4, 3))], ("grad", "vmap"))

    # ---- pivoted QR (jax.scipy.linalg.qr(pivoting=True): qr[pivoting=True], ?geqp3)
    jqr = __import__("jax.scipy.linalg", fromlist=["qr"]).qr
    reg("qr__pivoting", lambda a: jqr(a, pivoting=True), [unif((4, 3))], ("jvp", "vmap"))
    reg("qr__pivoting_economic", lambda a: jqr(a, pivoting=True, mode="economic"), [unif((3, 5))],
        ("jvp",))
    reg_c("qr__cpx_pivoting", lambda a: jqr(a, pivoting=True), [cunif((4, 4))], ())

    # ---- geqrf (jnp.linalg.qr(mode="raw")) and ormqr (jax.lax.linalg.ormqr): no derivative in JAX
    lla = __import__("jax.lax.linalg", fromlist=["ormqr"])
    reg("geqrf__raw", lambda a: la.qr(a, mode="raw"), [unif((4, 3))], ("vmap",))
    reg("geqrf__wide", lambda a: la.qr(a, mode="raw"), [unif((2, 3, 5))], ())

    def orm(left, tr):
        def f(a, c):
            h, tau = la.qr(a, mode="raw")
            return lla.ormqr(h.T, tau, c, left=left, transpose=tr)
        return f
    for left, tr, cs in ((True, False, (4, 2)), (True, True, (4, 2)), (False, False, (2, 4)),
                         (False, True, (2, 4))):
        reg(f"ormqr__{'l' if left else 'r'}{'t' if tr else ''}", orm(left, tr), [unif((4, 3)), unif(cs)],
            ("vmap",) if left and not tr else ())
    reg_c("geqrf__cpx", lambda a: la.qr(a, mode="raw"), [cunif((4, 3))], ())
    reg_c("ormqr__cpx_lt", orm(True, True), [cunif((4, 3)), cunif((4, 2))], ())

    # ---- schur, hessenberg, tridiagonal (JAX defines no derivative)
    import jax.scipy.linalg as jsl
    from jax import lax
    reg("schur__5", jsl.schur, [unif((5, 5))], ("vmap",))
    reg("schur__values_only", lambda a: lax.linalg.schur(a, compute_schur_vectors=False),
        [unif((4, 4))], ())
    reg("hessenberg__5", jsl.hessenberg, [unif((5, 5))], ("vmap",))
    reg("hessenberg__raw", lax.linalg.hessenberg, [unif((2, 4, 4))], ())
    reg("hessenberg__calc_q", lambda a: jsl.hessenberg(a, calc_q=True), [unif((4, 4))], ("vmap",))
    reg("tridiagonal__lower", lax.linalg.tridiagonal, [lambda r: sym(r, 5)], ("vmap",))
    reg("tridiagonal__upper", lambda a: lax.linalg.tridiagonal(a, lower=False),
        [lambda r: sym(r, 4, (2,))], ())
    # complex: ?gees (complex Schur form), ?gehrd, ?hetrd (d, e real), ?ungqr
    reg_c("schur__cpx", jsl.schur, [cunif((4, 4))], ("vmap",))
    reg_c("schur__cpx_values_only", lambda a: lax.linalg.schur(a, compute_schur_vectors=False),
          [cunif((2, 3, 3))], ())
    reg_c("hessenberg__cpx", jsl.hessenberg, [cunif((5, 5))], ("vmap",))
    reg_c("hessenberg__cpx_raw", lax.linalg.hessenberg, [cunif((2, 4, 4))], ())
    reg_c("hessenberg__cpx_calc_q", lambda a: jsl.hessenberg(a, calc_q=True), [cunif((4, 4))], ("vmap",))
    reg_c("tridiagonal__cpx_lower", lax.linalg.tridiagonal, [lambda r: herm(r, 5)], ("vmap",))
    reg_c("tridiagonal__cpx_upper", lambda a: lax.linalg.tridiagonal(a, lower=False),
          [lambda r: herm(r, 4, (2,))], ())
    def hprod(k=None):  # jnp.linalg.qr(mode="raw") gives geqrf's result transposed
        def f(a):
            h, tau = la.qr(a, mode="raw")
            return lax.linalg.householder_product(jnp.swapaxes(h, -1, -2), tau[..., :k])
        return f
    reg_c("householder_product__cpx", hprod(), [cunif((5, 3))], ("vmap",))
    reg_c("householder_product__cpx_few", hprod(1), [cunif((2, 4, 3))], ())

    # ---- functions built on svd
    reg("norm__2", lambda a: la.norm(a, 2), [unif((4, 3))], ("grad", "vmap"))
    reg("norm__nuc", lambda a: la.norm(a, "nuc"), [unif((3, 4))], ("grad", "vmap"))
    reg("norm__fro", lambda a: la.norm(a, "fro"), [unif((3, 4))], ("grad",))
    reg("pinv__tall", la.pinv, [unif((4, 3))], ("jvp", "vmap"))
    reg("lstsq__vec", lambda a, b: la.lstsq(a, b)[0], [unif((5, 3)), unif((5,))])
    reg("lstsq__mat", lambda a, b: la.lstsq(a, b), [unif((5, 3)), unif((5, 2))], ("vmap",))
    reg("matrix_rank__deficient", la.matrix_rank,
        [lambda r: with_singular(r, 4, 3, [2.0, 1.0, 0.0])], ("vmap",))

    # ---- programs
    def pca_eigh(x):
        xc = x - jnp.mean(x, axis=0)
        cov = xc.T @ xc / (x.shape[0] - 1)
        w, v = la.eigh(cov)
        z = xc @ v[:, -2:]
        return jnp.sum(z ** 2) + jnp.sum(w)

    def pca_svd(x):
        xc = x - jnp.mean(x, axis=0)
        _, s, vt = la.svd(xc, full_matrices=False)
        z = xc @ vt[:2].T
        return jnp.sum(s[:2] ** 2) / (x.shape[0] - 1) + 0.1 * jnp.sum(z ** 2)

    def least_squares(a, b):
        x = la.lstsq(a, b)[0]
        r = a @ x - b
        return jnp.sum(r ** 2) + jnp.sum(x ** 2)

    pca_data = lambda r: r.standard_normal((8, 3)) * np.array([3.0, 1.0, 0.3])
    reg("prog__pca_eigh", pca_eigh, [pca_data], ("grad", "vmap"))
    reg("prog__pca_svd", pca_svd, [pca_data], ("grad", "vmap"))
    reg("prog__least_squares", least_squares, [unif((6, 3)), unif((6,))], ("grad", "vmap"))


if __name__ == "__main__":
    gc.main(register=register, out_default=os.path.join(ROOT, "fixtures", FAMILY),
            script=os.path.abspath(__file__), generator="tools/oracle/gen_spectral.py",
            doc=__doc__, lax_json=False)
