#!/usr/bin/env python3
"""The run of `ftc demo` in JAX (docs/demo.md): the same data, split,
initialization, shuffles and Adam steps, so the demo can print how far its
loss trajectory is from JAX's.

Usage: .venv-oracle/bin/python tools/oracle/gen_demo.py [--out fixtures/demo]

Writes, for the default configuration of `ftc demo` (seed 0, batch 32,
12 epochs, Adam lr 0.01) of each model (mlp: 64-128-10, ReLU; cnn: 3x3 conv
to 8 channels, ReLU, 2x2 max pool, dense 128-10):
  <model>_loss.npy  f32[steps]  the loss of each training step (before its update)
  <model>.txt       "key value" lines: the configuration, steps, final train/test
                    accuracy, the FNV-1a-64 hash of the initial and final weights
                    (the bytes of the four parameter arrays, f32 little-endian, in order)
and, for tests/demo (init identical to JAX):
  init.txt          per model and seed: the initial weights' FNV-1a-64 hash and
                    the bits of the first four values of the two weight arrays
Deterministic: JAX's threefry, fixed seeds, no timestamps.
"""
import argparse
import os

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

IN, HIDDEN, CLASSES, CH = 64, 128, 10, 8


def fnv1a64(arrays):
    h = 0xCBF29CE484222325
    for a in arrays:
        for b in np.ascontiguousarray(a, dtype=np.float32).tobytes():
            h ^= b
            h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def load(root):
    images = np.load(os.path.join(root, "data", "digits", "images.npy"))
    labels = np.load(os.path.join(root, "data", "digits", "labels.npy"))
    seen = np.zeros(10, dtype=np.int64)
    test = np.zeros(len(labels), dtype=bool)
    for i, c in enumerate(labels):
        test[i] = seen[c] % 5 == 4
        seen[c] += 1
    x = images.astype(np.float32) / np.float32(16)
    y = labels.astype(np.int32)
    return x[~test], y[~test], x[test], y[test]


def glorot(key, shape, fan_in, fan_out):
    # uniform in [-lim, lim) as (2u - 1) * lim: u*2-1 is exact, so the only
    # rounding is the product with lim (no fused multiply-add can change it).
    # Fans as jax.nn.initializers.glorot_uniform computes them (OIHW for conv).
    lim = float(np.sqrt(6.0 / (fan_in + fan_out)))
    u = jax.random.uniform(key, shape, jnp.float32)
    return (u * 2.0 - 1.0) * lim


def init(model, seed):
    key = jax.random.key(seed)
    k_init, k_shuffle = jax.random.split(key)
    k1, k2 = jax.random.split(k_init)
    if model == "cnn":
        params = (glorot(k1, (CH, 1, 3, 3), 9, 9 * CH), jnp.zeros((CH,), jnp.float32),
                  glorot(k2, (CH * 16, CLASSES), CH * 16, CLASSES), jnp.zeros((CLASSES,), jnp.float32))
    else:
        params = (glorot(k1, (IN, HIDDEN), IN, HIDDEN), jnp.zeros((HIDDEN,), jnp.float32),
                  glorot(k2, (HIDDEN, CLASSES), HIDDEN, CLASSES), jnp.zeros((CLASSES,), jnp.float32))
    return params, k_shuffle


def mlp_logits(params, x):
    w1, b1, w2, b2 = params
    h = jnp.maximum(x @ w1 + b1, 0.0)
    return h @ w2 + b2


def cnn_logits(params, x):
    k, b1, w2, b2 = params
    n = x.shape[0]
    c = lax.conv_general_dilated(x.reshape(n, 1, 8, 8), k, (1, 1), ((1, 1), (1, 1)))
    h = jnp.maximum(c + b1.reshape(1, CH, 1, 1), 0.0)
    p = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    return p.reshape(n, CH * 16) @ w2 + b2


LOGITS = {"mlp": mlp_logits, "cnn": cnn_logits}


LR, B1, B2, EPS = 0.01, 0.9, 0.999, 1e-8


def make_train_step(logits_fn):
  def loss_fn(params, x, y):
    logp = jax.nn.log_softmax(logits_fn(params, x), axis=-1)
    return -jnp.mean(jnp.sum(y * logp, axis=-1))

  @jax.jit
  def train_step(params, m, v, t, x, y):
    loss, g = jax.value_and_grad(loss_fn)(params, x, y)
    m = tuple(B1 * mi + (1 - B1) * gi for mi, gi in zip(m, g))
    v = tuple(B2 * vi + (1 - B2) * gi * gi for vi, gi in zip(v, g))
    c1 = 1 - B1 ** t
    c2 = 1 - B2 ** t
    params = tuple(p - LR * (mi / c1) / (jnp.sqrt(vi / c2) + EPS)
                   for p, mi, vi in zip(params, m, v))
    return params, m, v, loss
  return train_step


def run(root, model, seed, batch, epochs):
    xtr, ytr, xte, yte = load(root)
    train_step = make_train_step(LOGITS[model])
    predict = jax.jit(lambda params, x: jnp.argmax(LOGITS[model](params, x), axis=-1))
    params, k_shuffle = init(model, seed)
    init_hash = fnv1a64(params)
    m = tuple(jnp.zeros_like(p) for p in params)
    v = tuple(jnp.zeros_like(p) for p in params)
    onehot = np.eye(CLASSES, dtype=np.float32)[ytr]
    losses = []
    n = len(ytr)
    t = 0
    for epoch in range(epochs):
        perm = np.asarray(jax.random.permutation(jax.random.fold_in(k_shuffle, epoch), n))
        for s in range(n // batch):
            idx = perm[s * batch:(s + 1) * batch]
            t += 1
            params, m, v, loss = train_step(params, m, v, jnp.float32(t), xtr[idx], onehot[idx])
            losses.append(float(loss))
    acc_tr = float(np.mean(np.asarray(predict(params, xtr)) == ytr))
    acc_te = float(np.mean(np.asarray(predict(params, xte)) == yte))
    return dict(losses=np.array(losses, np.float32), init_hash=init_hash,
                final_hash=fnv1a64(params), acc_train=acc_tr, acc_test=acc_te)


def main():
    ap = argparse.ArgumentParser()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--out", default=os.path.join(root, "fixtures", "demo"))
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--models", default="mlp,cnn")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    seed, batch = 0, 32
    for model in args.models.split(","):
        r = run(root, model, seed, batch, args.epochs)
        np.save(os.path.join(args.out, f"{model}_loss.npy"), r["losses"])
        meta = [("model", model), ("seed", seed), ("batch", batch), ("epochs", args.epochs),
                ("steps", len(r["losses"])), ("optimizer", "adam"), ("lr", LR), ("b1", B1),
                ("b2", B2), ("eps", EPS), ("jax", jax.__version__), ("init_hash", r["init_hash"]),
                ("final_hash", r["final_hash"]), ("acc_train", repr(r["acc_train"])),
                ("acc_test", repr(r["acc_test"])), ("loss_first", repr(float(r["losses"][0]))),
                ("loss_last", repr(float(r["losses"][-1])))]
        with open(os.path.join(args.out, f"{model}.txt"), "w") as f:
            for k, v in meta:
                f.write(f"{k} {v}\n")
        print(open(os.path.join(args.out, f"{model}.txt")).read(), end="")
    with open(os.path.join(args.out, "init.txt"), "w") as f:
        f.write("# model seed fnv1a64(params) param0[:4] param2[:4] (float32 bits, hex)\n")
        for model, s in (("mlp", 0), ("mlp", 7), ("cnn", 0)):
            params, _ = init(model, s)
            bits = lambda a: " ".join(f"{int(b):08x}" for b in
                                      np.asarray(a, np.float32).ravel()[:4].view(np.uint32))
            f.write(f"{model} {s} {fnv1a64(params)} {bits(params[0])} {bits(params[2])}\n")


if __name__ == "__main__":
    main()
