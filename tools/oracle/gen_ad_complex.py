"""tools/oracle/gen_ad_complex.py: fixtures/ad_complex/, JAX's gradients of
real losses through fft (all four types) and the complex-part primitives
(real, imag, conj, complex), for tests/transforms/test_ad_complex.c.

Per case NAME: NAME.jaxpr (JAX's printout of the loss, float64/complex128),
NAME.in<i>.npy (its inputs) and NAME.grad.npy (jax.grad of the loss with
respect to input 0: for a complex input, JAX's dL/dRe - i dL/dIm).

Run: .venv-oracle/bin/python tools/oracle/gen_ad_complex.py
"""
import os
import sys

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "ad_complex")
rng = np.random.default_rng(20261130)


def real(*shape):
    return rng.uniform(-1.0, 1.0, shape)


def cplx(*shape):
    return real(*shape) + 1j * real(*shape)


def spectrum_loss(X, w1, w2):
    # nonlinear in the imaginary part, so the gradient needs residuals
    return jnp.sum(w1 * jnp.real(X) + w2 * jnp.imag(X) ** 2)


def signal_loss(y, w):
    return jnp.sum(w * y ** 2 + 0.5 * y)


CASES = {
    "rfft_even": (lambda x, w1, w2: spectrum_loss(jnp.fft.rfft(x), w1, w2),
                  [real(8), real(5), real(5)]),
    "rfft_odd": (lambda x, w1, w2: spectrum_loss(jnp.fft.rfft(x), w1, w2),
                 [real(3, 7), real(3, 4), real(3, 4)]),
    "rfft2": (lambda x, w1, w2: spectrum_loss(jnp.fft.rfft2(x), w1, w2),
              [real(4, 6), real(4, 4), real(4, 4)]),
    "irfft_even": (lambda z, w: signal_loss(jnp.fft.irfft(z, n=8), w),
                   [cplx(5), real(8)]),
    "irfft_odd": (lambda z, w: signal_loss(jnp.fft.irfft(z, n=7), w),
                  [cplx(2, 4), real(2, 7)]),
    "irfft2": (lambda z, w: signal_loss(jnp.fft.irfft2(z, s=(4, 6)), w),
               [cplx(4, 4), real(4, 6)]),
    "fft": (lambda z, w1, w2: spectrum_loss(jnp.fft.fft(z), w1, w2),
            [cplx(6), real(6), real(6)]),
    "ifft": (lambda z, w1, w2: spectrum_loss(jnp.fft.ifft(z), w1, w2),
             [cplx(2, 5), real(2, 5), real(2, 5)]),
    "fft2": (lambda z, w1, w2: spectrum_loss(jnp.fft.fft2(z), w1, w2),
             [cplx(3, 4), real(3, 4), real(3, 4)]),
    "parts": (lambda z, x: jnp.sum(3.0 * jnp.real(z) ** 2 + x * jnp.imag(z))
              + jnp.sum(jnp.imag(jnp.conj(z) * jax.lax.complex(x, x * x))),
              [cplx(4), real(4)]),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    only = sys.argv[1:]
    for name, (f, args) in CASES.items():
        if only and name not in only:
            continue
        text = str(jax.make_jaxpr(f)(*args))
        with open(os.path.join(OUT, name + ".jaxpr"), "w") as fh:
            fh.write(text + "\n")
        for i, a in enumerate(args):
            np.save(os.path.join(OUT, f"{name}.in{i}.npy"), np.asarray(a))
        g = jax.grad(f)(*args)
        np.save(os.path.join(OUT, name + ".grad.npy"), np.asarray(g))
        print(name, np.asarray(g).dtype, np.asarray(g).shape)


if __name__ == "__main__":
    main()
