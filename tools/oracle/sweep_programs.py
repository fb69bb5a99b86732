"""Whole programs as users write them, for gen_sweep.py --programs
(fixtures/program2/, family `program2`): models, losses, optimizers,
physics, solvers; with jit nested inside, closures over arrays and pytree
parameters (passed to inner jitted functions as dicts and tuples).

register(P, U, mk): P(name, fn, makers, dtypes, tf) registers one program
(gen_sweep.S with the program2 family); U(shape, lo, hi) and mk(...) make
seeded inputs."""

import numpy as np

F = ("f32", "f64")
F1 = ("f32",)
AD = ("jvp", "vjp", "vmap")      # vjp becomes grad for a scalar loss
FWDAD = ("jvp", "vmap")          # while loops: JAX has no reverse mode


def npd(d):
    """The NumPy dtype of a dtype name ("f32", "f64")."""
    return {"f32": np.float32, "f64": np.float64}[d]


def register(P, U, mk):
    import jax
    import jax.numpy as jnp
    from jax import lax

    # ---------------------------------------------------------------- models
    @jax.jit
    def dense(p, x):
        return x @ p["w"] + p["b"]

    def mlp2(w1, b1, w2, b2, x):
        params = ({"w": w1, "b": b1}, {"w": w2, "b": b2})
        h = jnp.tanh(dense(params[0], x))
        return jnp.mean(dense(params[1], h) ** 2)
    P("mlp2_tanh", mlp2, [U((4, 6), -0.5, 0.5), U((6,), -0.1, 0.1), U((6, 2), -0.5, 0.5),
                          U((2,), -0.1, 0.1), U((5, 4))], F, AD)

    def mlp3(w1, w2, w3, x):
        h = jax.nn.relu(x @ w1)
        h = jax.nn.relu(h @ w2)
        return jax.nn.log_softmax(h @ w3)
    P("mlp3_relu", mlp3, [U((4, 8), -0.6, 0.6), U((8, 8), -0.4, 0.4), U((8, 3), -0.5, 0.5), U((5, 4))], F, AD)

    def ln(x, g, b, eps=1e-5):
        m = jnp.mean(x, -1, keepdims=True)
        v = jnp.var(x, -1, keepdims=True)
        return (x - m) / jnp.sqrt(v + eps) * g + b

    def mlp_gelu_ln(w1, w2, g, b, x):
        h = jax.nn.gelu(ln(x @ w1, g, b))
        return jnp.sum(h @ w2)
    P("mlp_gelu_layernorm", mlp_gelu_ln, [U((4, 6), -0.5, 0.5), U((6, 2), -0.5, 0.5), U((6,), 0.8, 1.2),
                                          U((6,), -0.1, 0.1), U((3, 4))], F, AD)

    def cnn(w, wd, x):
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME")
        y = jax.nn.relu(y)
        y = lax.reduce_window(y, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        return jnp.sum(y.reshape(y.shape[0], -1) @ wd)
    P("cnn_conv_relu_pool", cnn, [U((3, 1, 3, 3), -0.5, 0.5), U((12, 2), -0.3, 0.3), U((2, 1, 4, 4))], F, AD)

    def cnn_nhwc(w, x):
        y = lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        y = jax.nn.silu(y)
        y = lax.reduce_window(y, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1), "VALID") / 4.0
        return jnp.mean(y)
    P("cnn_nhwc_avgpool", cnn_nhwc, [U((2, 2, 2, 3), -0.5, 0.5), U((1, 5, 5, 2))], F1, AD)

    def conv1d(w, x):
        y = lax.conv_general_dilated(x, w, (1,), ((2, 0),))  # causal padding
        return jnp.sum(jnp.tanh(y) ** 2)
    P("conv1d_causal", conv1d, [U((2, 3, 3), -0.5, 0.5), U((1, 3, 8))], F1, AD)

    def attention(q, k, v, mask):
        s = q @ k.T / np.sqrt(q.shape[-1]).astype(q.dtype)
        s = jnp.where(mask, s, -1e9)
        return jax.nn.softmax(s, axis=-1) @ v

    def attn_head(q, k, v):
        mask = jnp.tril(jnp.ones((q.shape[0], k.shape[0]), bool))
        return jnp.sum(attention(q, k, v, mask) ** 2)
    P("attention_causal", attn_head, [U((4, 8)), U((4, 8)), U((4, 8))], F, AD)

    def mha(x, wq, wk, wv, wo):
        T, D = x.shape
        H = 2

        def split(t):
            return t.reshape(T, H, D // H).transpose(1, 0, 2)
        q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
        s = jnp.einsum("htd,hsd->hts", q, k) / np.sqrt(D // H).astype(x.dtype)
        o = jnp.einsum("hts,hsd->htd", jax.nn.softmax(s, -1), v)
        return o.transpose(1, 0, 2).reshape(T, D) @ wo
    P("multihead_attention", mha, [U((3, 4)), U((4, 4), -0.5, 0.5), U((4, 4), -0.5, 0.5),
                                   U((4, 4), -0.5, 0.5), U((4, 4), -0.5, 0.5)], F1, AD)

    def block(x, wq, wk, wv, w1, w2):
        h = ln(x, 1.0, 0.0)
        T = x.shape[0]
        x = x + attention(h @ wq, h @ wk, h @ wv, jnp.tril(jnp.ones((T, T), bool)))
        h = ln(x, 1.0, 0.0)
        return jnp.sum((x + jax.nn.gelu(h @ w1) @ w2) ** 2)
    P("transformer_block", block, [U((3, 4)), U((4, 4), -0.5, 0.5), U((4, 4), -0.5, 0.5),
                                   U((4, 4), -0.5, 0.5), U((4, 8), -0.5, 0.5), U((8, 4), -0.5, 0.5)], F, AD)

    def elman(wx, wh, xs):
        def step(h, x):
            h = jnp.tanh(x @ wx + h @ wh)
            return h, h.sum()
        h, ys = lax.scan(step, jnp.zeros(wh.shape[0], xs.dtype), xs)
        return jnp.sum(ys) + jnp.sum(h ** 2)
    P("rnn_elman_scan", elman, [U((3, 4), -0.5, 0.5), U((4, 4), -0.5, 0.5), U((5, 3))], F, AD)

    def gru(wz, wr, wn, xs):
        def step(h, x):
            xh = jnp.concatenate([x, h])
            z = jax.nn.sigmoid(xh @ wz)
            r = jax.nn.sigmoid(xh @ wr)
            n = jnp.tanh(jnp.concatenate([x, r * h]) @ wn)
            h = (1 - z) * n + z * h
            return h, h
        h, hs = lax.scan(step, jnp.zeros(3, xs.dtype), xs)
        return jnp.mean(hs ** 2)
    P("gru_scan", gru, [U((5, 3), -0.5, 0.5), U((5, 3), -0.5, 0.5), U((5, 3), -0.5, 0.5), U((4, 2))], F1, AD)

    def lstm(w, xs):
        def step(c, x):
            h, cc = c
            g = jnp.concatenate([x, h]) @ w
            i, f, o, u = jnp.split(g, 4)
            cc = jax.nn.sigmoid(f) * cc + jax.nn.sigmoid(i) * jnp.tanh(u)
            h = jax.nn.sigmoid(o) * jnp.tanh(cc)
            return (h, cc), h
        (h, c), hs = lax.scan(step, (jnp.zeros(2, xs.dtype), jnp.zeros(2, xs.dtype)), xs)
        return jnp.sum(hs) + jnp.sum(c)
    P("lstm_scan", lstm, [U((5, 8), -0.5, 0.5), U((4, 3))], F1, AD)

    def embed(table, ids, w):
        e = jnp.take(table, ids, axis=0)
        return jnp.sum(jnp.mean(e, axis=0) @ w)
    P("embedding_mean", embed, [U((6, 4)), lambda r, d: r.integers(0, 6, 5).astype(np.int32), U((4, 2))], F1, AD)

    def resblock(w1, w2, x):
        y = jax.nn.relu(lax.conv(x, w1, (1, 1), "SAME"))
        y = lax.conv(y, w2, (1, 1), "SAME")
        return jnp.sum(jax.nn.relu(x + y))
    P("resnet_block", resblock, [U((2, 2, 3, 3), -0.4, 0.4), U((2, 2, 3, 3), -0.4, 0.4), U((1, 2, 4, 4))], F1, AD)

    def batchnorm(x, g, b):
        m = jnp.mean(x, axis=0)
        v = jnp.mean((x - m) ** 2, axis=0)
        y = (x - m) * lax.rsqrt(v + 1e-5) * g + b
        return jnp.sum(jnp.tanh(y)), (m, v)
    P("batchnorm_train", batchnorm, [U((6, 3)), U((3,), 0.8, 1.2), U((3,), -0.1, 0.1)], F, ("jvp", "vmap"))

    def autoenc(we, wd, x):
        z = jax.nn.sigmoid(x @ we)
        r = z @ wd
        return jnp.mean((r - x) ** 2)
    P("autoencoder", autoenc, [U((6, 2), -0.5, 0.5), U((2, 6), -0.5, 0.5), U((4, 6))], F, AD)

    def mdn(logits, mu, logs, y):
        logp = jax.nn.log_softmax(logits) - 0.5 * ((y - mu) / jnp.exp(logs)) ** 2 - logs - 0.9189385
        return -jax.nn.logsumexp(logp)
    P("mixture_density_nll", mdn, [U((4,)), U((4,)), U((4,), -0.5, 0.5), U(())], F, AD)

    def rbf_gp(x, y, ls):
        d2 = jnp.sum((x[:, None, :] - x[None, :, :]) ** 2, -1)
        K = jnp.exp(-0.5 * d2 / ls ** 2) + 0.1 * jnp.eye(x.shape[0], dtype=x.dtype)
        return y @ K @ y
    P("gp_rbf_quadform", rbf_gp, [U((4, 2)), U((4,)), U((), 0.5, 2)], F, AD)

    def kmeans(x, c):
        d = jnp.sum((x[:, None, :] - c[None]) ** 2, -1)
        a = jnp.argmin(d, axis=1)
        oh = jax.nn.one_hot(a, c.shape[0], dtype=x.dtype)
        cnt = oh.sum(0)[:, None]
        return jnp.where(cnt > 0, oh.T @ x / jnp.maximum(cnt, 1), c), a
    P("kmeans_step", kmeans, [U((8, 2)), U((3, 2))], F, ("vmap",))

    def softreg(w, x, labels):
        logits = x @ w
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], axis=1))
    P("softmax_regression", softreg, [U((4, 3), -0.5, 0.5), U((6, 4)),
                                      lambda r, d: r.integers(0, 3, 6).astype(np.int32)], F, AD)

    # ---------------------------------------------------------------- losses
    P("loss_mse", lambda p, t: jnp.mean((p - t) ** 2), [U((6,)), U((6,))], F, AD)
    P("loss_huber", lambda p, t: jnp.mean(jnp.where(jnp.abs(p - t) < 1.0, 0.5 * (p - t) ** 2, jnp.abs(p - t) - 0.5)),
      [U((8,)), U((8,))], F, AD)
    P("loss_mae", lambda p, t: jnp.mean(jnp.abs(p - t)), [U((6,)), U((6,))], F1, AD)
    P("loss_xent_int_labels", lambda lg, y: -jnp.mean(jax.nn.log_softmax(lg)[jnp.arange(lg.shape[0]), y]),
      [U((4, 5)), lambda r, d: r.integers(0, 5, 4).astype(np.int32)], F, AD)
    P("loss_bce_logits", lambda lg, y: -jnp.mean(y * jax.nn.log_sigmoid(lg) + (1 - y) * jax.nn.log_sigmoid(-lg)),
      [U((6,), -4, 4), lambda r, d: (r.uniform(size=6) > 0.5).astype(npd(d))], F, AD)
    P("loss_hinge", lambda s, y: jnp.mean(jnp.maximum(0.0, 1.0 - y * s)),
      [U((6,)), lambda r, d: np.sign(r.uniform(-1, 1, 6)).astype(npd(d))], F, AD)
    P("loss_kl", lambda p, q: jnp.sum(jax.nn.softmax(p) * (jax.nn.log_softmax(p) - jax.nn.log_softmax(q))),
      [U((5,)), U((5,))], F, AD)

    def focal(lg, y, gamma=2.0):
        p = jax.nn.sigmoid(lg)
        pt = jnp.where(y > 0.5, p, 1 - p)
        return -jnp.mean((1 - pt) ** gamma * jnp.log(jnp.clip(pt, 1e-6, 1.0)))
    P("loss_focal", focal, [U((6,), -3, 3), lambda r, d: (r.uniform(size=6) > 0.5).astype(npd(d))], F1, AD)

    def cosine(a, b):
        an = a / jnp.linalg.norm(a, axis=-1, keepdims=True)
        bn = b / jnp.linalg.norm(b, axis=-1, keepdims=True)
        return jnp.mean(1.0 - jnp.sum(an * bn, -1))
    P("loss_cosine", cosine, [U((3, 4)), U((3, 4))], F, AD)

    def smooth_xent(lg, y, eps=0.1):
        n = lg.shape[-1]
        t = jax.nn.one_hot(y, n, dtype=lg.dtype) * (1 - eps) + eps / n
        return -jnp.mean(jnp.sum(t * jax.nn.log_softmax(lg), -1))
    P("loss_label_smoothing", smooth_xent, [U((3, 4)), lambda r, d: r.integers(0, 4, 3).astype(np.int32)], F1, AD)

    def l2_reg_loss(w1, w2, x, y):
        params = {"a": w1, "b": [w2]}
        pred = jnp.tanh(x @ params["a"]) @ params["b"][0]
        reg = sum(jnp.sum(p ** 2) for p in jax.tree_util.tree_leaves(params))
        return jnp.mean((pred - y) ** 2) + 1e-2 * reg
    P("loss_l2_tree", l2_reg_loss, [U((3, 4), -0.5, 0.5), U((4,), -0.5, 0.5), U((5, 3)), U((5,))], F, AD)

    # ---------------------------------------------------------------- optimizers
    def quad_loss(p, A, b):
        return 0.5 * p @ A @ p - b @ p + 0.1 * jnp.sum(p ** 4)

    def spd(r, d):
        m = r.uniform(-1, 1, (4, 4))
        return ((m @ m.T + 4 * np.eye(4)) / 4).astype(npd(d))

    def sgd(w, b, x, y):
        params = {"w": w, "b": b}

        @jax.jit
        def loss(p):
            return jnp.mean((x @ p["w"] + p["b"] - y) ** 2)
        g = jax.grad(loss)(params)
        new = jax.tree_util.tree_map(lambda p, gg: p - 0.1 * gg, params, g)
        return new["w"], new["b"], loss(new)
    P("opt_sgd_step", sgd, [U((3,)), U(()), U((5, 3)), U((5,))], F, ("jvp", "vmap"))

    def momentum(p0, A, b):
        def step(i, s):
            p, v = s
            g = jax.grad(quad_loss)(p, A, b)
            v = 0.9 * v + g
            return p - 0.05 * v, v
        p, v = lax.fori_loop(0, 6, step, (p0, jnp.zeros_like(p0)))
        return quad_loss(p, A, b)
    P("opt_sgd_momentum_loop", momentum, [U((4,)), spd, U((4,))], F, AD)

    def adam_step(p, m, v, g, t):
        b1, b2, lr, eps = 0.9, 0.999, 1e-2, 1e-8
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mh = m / (1 - b1 ** t)
        vh = v / (1 - b2 ** t)
        return p - lr * mh / (jnp.sqrt(vh) + eps), m, v
    P("opt_adam_step", lambda p, m, v, g: adam_step(p, m, v, g, 3.0),
      [U((5,)), U((5,), -0.1, 0.1), U((5,), 0.0, 0.1), U((5,))], F, ("jvp", "vjp", "vmap"))

    def adam_loop(p0, A, b):
        def step(i, s):
            p, m, v = s
            g = jax.grad(quad_loss)(p, A, b)
            return adam_step(p, m, v, g, (i + 1).astype(p.dtype))
        p, _, _ = lax.fori_loop(0, 5, step, (p0, jnp.zeros_like(p0), jnp.zeros_like(p0)))
        return quad_loss(p, A, b)
    P("opt_adam_loop", adam_loop, [U((4,)), spd, U((4,))], F, AD)

    def rmsprop(p0, A, b):
        def step(s, _):
            p, r = s
            g = jax.grad(quad_loss)(p, A, b)
            r = 0.9 * r + 0.1 * g * g
            p = p - 0.05 * g / (jnp.sqrt(r) + 1e-6)
            return (p, r), quad_loss(p, A, b)
        _, losses = lax.scan(step, (p0, jnp.zeros_like(p0)), None, length=4)
        return losses
    P("opt_rmsprop_scan", rmsprop, [U((4,)), spd, U((4,))], F1, AD)

    def adagrad(p0, A, b):
        def step(i, s):
            p, acc = s
            g = jax.grad(quad_loss)(p, A, b)
            acc = acc + g * g
            return p - 0.2 * g / jnp.sqrt(acc + 1e-7), acc
        return lax.fori_loop(0, 4, step, (p0, jnp.zeros_like(p0)))[0]
    P("opt_adagrad", adagrad, [U((4,)), spd, U((4,))], F1, AD)

    def clip_global(g1, g2):
        gs = (g1, g2)
        n = jnp.sqrt(sum(jnp.sum(g * g) for g in gs))
        s = jnp.minimum(1.0, 1.0 / n)
        return jax.tree_util.tree_map(lambda g: g * s, gs)
    P("opt_clip_global_norm", clip_global, [U((3, 2)), U((4,))], F, AD)

    def cosine_sched(p0, A, b):
        def step(i, p):
            lr = 0.05 * 0.5 * (1 + jnp.cos(jnp.pi * i / 6))
            return p - lr * jax.grad(quad_loss)(p, A, b)
        return lax.fori_loop(0, 6, step, p0)
    P("opt_cosine_schedule", cosine_sched, [U((4,)), spd, U((4,))], F1, AD)

    # ---------------------------------------------------------------- physics
    def forces(x, m):
        d = x[None, :, :] - x[:, None, :]
        r2 = jnp.sum(d * d, -1) + 0.1
        inv = m[None, :] / (r2 * jnp.sqrt(r2))
        inv = inv * (1 - jnp.eye(x.shape[0], dtype=x.dtype))
        return jnp.sum(inv[:, :, None] * d, axis=1)

    def nbody_step(x, v, m):
        a = forces(x, m)
        v = v + 0.01 * a
        return x + 0.01 * v, v
    P("nbody_step", nbody_step, [U((4, 3)), U((4, 3), -0.1, 0.1), U((4,), 0.5, 2)], F, AD)

    def nbody_leapfrog(x, v, m):
        def step(i, s):
            x, v = s
            v = v + 0.005 * forces(x, m)
            x = x + 0.01 * v
            v = v + 0.005 * forces(x, m)
            return x, v
        x, v = lax.fori_loop(0, 3, step, (x, v))
        ke = 0.5 * jnp.sum(m[:, None] * v ** 2)
        return ke + jnp.sum(x ** 2)
    P("nbody_leapfrog", nbody_leapfrog, [U((4, 3)), U((4, 3), -0.1, 0.1), U((4,), 0.5, 2)], F, AD)

    def heat1d(u0, kappa):
        def step(i, u):
            lap = jnp.roll(u, 1) - 2 * u + jnp.roll(u, -1)
            return u + kappa * lap
        return lax.fori_loop(0, 10, step, u0)
    P("heat_equation_1d", heat1d, [U((12,), 0, 1), U((), 0.1, 0.3)], F, AD)

    def heat2d(u0):
        def step(u, _):
            p = jnp.pad(u, 1, mode="edge")
            lap = p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * u
            u = u + 0.2 * lap
            return u, jnp.mean(u)
        return lax.scan(step, u0, None, length=5)
    P("heat_equation_2d", heat2d, [U((5, 6), 0, 1)], F, AD)

    def wave(u, up):
        def step(i, s):
            u, up = s
            lap = jnp.roll(u, 1) - 2 * u + jnp.roll(u, -1)
            return 2 * u - up + 0.25 * lap, u
        return lax.fori_loop(0, 8, step, (u, up))[0]
    P("wave_equation", wave, [U((10,)), U((10,))], F1, AD)

    def rk4(f, y, h):
        k1 = f(y)
        k2 = f(y + h / 2 * k1)
        k3 = f(y + h / 2 * k2)
        k4 = f(y + h * k3)
        return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

    def oscillator(y0, w):
        f = lambda y: jnp.stack([y[1], -w * w * y[0]])
        return lax.fori_loop(0, 10, lambda i, y: rk4(f, y, 0.1), y0)
    P("harmonic_rk4", oscillator, [U((2,)), U((), 0.5, 2)], F, AD)

    def lorenz(y0):
        def f(y):
            return jnp.stack([10.0 * (y[1] - y[0]), y[0] * (28.0 - y[2]) - y[1], y[0] * y[1] - 8.0 / 3.0 * y[2]])
        def step(y, _):
            y = rk4(f, y, 0.005)
            return y, y
        return lax.scan(step, y0, None, length=6)[1]
    P("lorenz_rk4_scan", lorenz, [U((3,), 0.5, 1.5)], F, AD)

    def spring_energy(x, k):
        d = x[1:] - x[:-1] - 1.0
        return 0.5 * jnp.sum(k * d * d)
    P("spring_chain_energy", spring_energy, [U((6,), 0, 5), U((5,), 0.5, 2)], F, AD)
    P("spring_chain_forces", lambda x, k: -jax.grad(spring_energy)(x, k), [U((6,), 0, 5), U((5,), 0.5, 2)], F1, AD)

    def pendulum(th, om):
        def step(s, _):
            th, om = s
            om = om - 0.05 * jnp.sin(th)
            th = th + 0.05 * om
            return (th, om), jnp.cos(th)
        (th, om), ys = lax.scan(step, (th, om), None, length=8)
        return th, jnp.sum(ys)
    P("pendulum_symplectic", pendulum, [U((3,), -1, 1), U((3,), -0.5, 0.5)], F, AD)

    def advection(u0, c):
        def step(i, u):
            return u - c * (u - jnp.roll(u, 1))
        return lax.fori_loop(0, 6, step, u0)
    P("advection_upwind", advection, [U((8,), 0, 1), U((), 0.2, 0.8)], F1, AD)

    def ising(s, J):
        return -J * jnp.sum(s * (jnp.roll(s, 1, 0) + jnp.roll(s, 1, 1)))
    P("ising_energy", ising, [U((4, 4), -1, 1), U((), 0.5, 1.5)], F1, AD)

    def lj(x):
        d = x[:, None, :] - x[None, :, :]
        r2 = jnp.sum(d * d, -1) + jnp.eye(x.shape[0], dtype=x.dtype)
        inv6 = (1.0 / r2) ** 3
        e = 4 * (inv6 * inv6 - inv6)
        return 0.5 * jnp.sum(jnp.where(jnp.eye(x.shape[0], dtype=bool), 0.0, e))
    P("lennard_jones", lj, [lambda r, d: (np.arange(12).reshape(4, 3) * 0.6 + r.uniform(-0.1, 0.1, (4, 3))).astype(npd(d))], F, AD)

    # ---------------------------------------------------------------- solvers
    def newton_sqrt(a):
        def cond(s):
            x, i = s
            return (i < 20) & (jnp.max(jnp.abs(x * x - a)) > 1e-5)
        return lax.while_loop(cond, lambda s: (0.5 * (s[0] + a / s[0]), s[1] + 1), (a, 0))[0]
    P("solve_newton_sqrt_while", newton_sqrt, [U((4,), 0.5, 5)], F1, FWDAD)

    def newton_fixed(a):
        f = lambda x: x ** 3 + x - a
        return lax.fori_loop(0, 8, lambda i, x: x - f(x) / jax.grad(lambda z: jnp.sum(f(z)))(x), jnp.ones_like(a))
    P("solve_newton_autodiff", newton_fixed, [U((3,), 0.5, 3)], F, AD)

    def fixed_point_cos(x0):
        return lax.fori_loop(0, 30, lambda i, x: jnp.cos(x), x0)
    P("solve_fixed_point_cos", fixed_point_cos, [U((4,), 0, 1)], F, AD)

    def bisection(a):
        f = lambda x: x ** 3 - a

        def body(i, s):
            lo, hi = s
            mid = 0.5 * (lo + hi)
            go_right = f(mid) < 0
            return jnp.where(go_right, mid, lo), jnp.where(go_right, hi, mid)
        lo, hi = lax.fori_loop(0, 25, body, (jnp.zeros_like(a), jnp.full_like(a, 4.0)))
        return 0.5 * (lo + hi)
    P("solve_bisection_fori", bisection, [U((4,), 0.5, 8)], F, ("vmap",))

    def jacobi(A, b):
        D = jnp.diag(A)
        R = A - jnp.diag(D)
        return lax.fori_loop(0, 15, lambda i, x: (b - R @ x) / D, jnp.zeros_like(b))
    P("solve_jacobi", jacobi, [spd, U((4,))], F, AD)

    def rosen_gd(x0):
        rosen = lambda x: jnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
        x = lax.fori_loop(0, 10, lambda i, x: x - 1e-3 * jax.grad(rosen)(x), x0)
        return rosen(x)
    P("solve_rosenbrock_gd", rosen_gd, [U((4,), -0.5, 0.5)], F, AD)

    def power_iter(A):
        def step(i, v):
            w = A @ v
            return w / jnp.linalg.norm(w)
        v = lax.fori_loop(0, 20, step, jnp.ones(A.shape[0], A.dtype))
        return v @ A @ v
    P("solve_power_iteration", power_iter, [spd], F, AD)

    def cg(A, b):
        def step(i, s):
            x, r, p, rs = s
            Ap = A @ p
            alpha = rs / (p @ Ap)
            x = x + alpha * p
            r = r - alpha * Ap
            rs2 = r @ r
            p = r + rs2 / rs * p
            return x, r, p, rs2
        x0 = jnp.zeros_like(b)
        return lax.fori_loop(0, 4, step, (x0, b, b, b @ b))[0]
    P("solve_conjugate_gradient", cg, [spd, U((4,))], F, AD)

    def golden(c):
        f = lambda x: (x - c) ** 2 + 0.1 * jnp.sin(5 * x)
        g = 0.6180339887

        def body(i, s):
            a, b = s
            x1 = b - g * (b - a)
            x2 = a + g * (b - a)
            left = f(x1) < f(x2)
            return jnp.where(left, a, x1), jnp.where(left, x2, b)
        a, b = lax.fori_loop(0, 20, body, (jnp.full_like(c, -3.0), jnp.full_like(c, 3.0)))
        return 0.5 * (a + b)
    P("solve_golden_section", golden, [U((3,), -1, 1)], F1, ("vmap",))

    def secant(a):
        f = lambda x: jnp.exp(x) - a

        def cond(s):
            return (s[2] < 15) & (jnp.abs(s[1] - s[0]) > 1e-6)

        def body(s):
            x0, x1, i = s
            x2 = x1 - f(x1) * (x1 - x0) / (f(x1) - f(x0))
            return x1, x2, i + 1
        return lax.while_loop(cond, body, (jnp.zeros_like(a), jnp.ones_like(a), 0))[1]
    P("solve_secant_while", secant, [U((), 1.5, 5)], F1, FWDAD)

    W = np.linspace(-1.0, 1.0, 9).reshape(3, 3).astype(np.float32)

    def euler_closure(y0):
        Wj = jnp.asarray(W, y0.dtype)

        def step(y, _):
            y = y + 0.1 * jnp.tanh(Wj @ y)
            return y, y[0]
        return lax.scan(step, y0, None, length=5)
    P("ode_euler_closure", euler_closure, [U((3,))], F, AD)

    def halley(a):
        f = lambda x: x ** 3 - 2 * x - a
        d1 = lambda x: 3 * x ** 2 - 2
        d2 = lambda x: 6 * x
        return lax.fori_loop(0, 6, lambda i, x: x - 2 * f(x) * d1(x) / (2 * d1(x) ** 2 - f(x) * d2(x)),
                             jnp.full_like(a, 2.0))
    P("solve_halley", halley, [U((3,), 0, 3)], F, AD)

    def smooth_max(x, t):
        return t * jax.nn.logsumexp(x / t)
    P("smooth_max", smooth_max, [U((6,)), U((), 0.2, 1)], F, AD)

    def cumtrapz(y, dx):
        return jnp.concatenate([jnp.zeros(1, y.dtype), jnp.cumsum(0.5 * (y[1:] + y[:-1]) * dx)])
    P("cumulative_trapezoid", cumtrapz, [U((7,)), U((), 0.1, 0.5)], F, AD)

    def quad_sin(a):
        x = jnp.linspace(0.0, 1.0, 17).astype(a.dtype)
        y = jnp.sin(a[:, None] * x[None, :])
        return jnp.trapezoid(y, x, axis=1)
    P("quadrature_trapezoid", quad_sin, [U((3,), 0.5, 3)], F, AD)

    def value_iter(R, Pm):
        def step(i, V):
            Q = R + 0.9 * jnp.einsum("asn,n->sa", Pm, V)
            return jnp.max(Q, axis=1)
        return lax.fori_loop(0, 10, step, jnp.zeros(R.shape[0], R.dtype))
    P("value_iteration", value_iter, [U((4, 2)), lambda r, d: (lambda m: (m / m.sum(-1, keepdims=True)).astype(npd(d)))(r.uniform(0.1, 1, (2, 4, 4)))],
      F1, AD)

    def viterbi(logT, logE):
        def step(delta, e):
            s = delta[:, None] + logT
            return jnp.max(s, 0) + e, jnp.argmax(s, 0)
        d, back = lax.scan(step, logE[0], logE[1:])
        return jnp.max(d), back
    P("viterbi_scan", viterbi, [U((3, 3), -2, 0), U((5, 3), -2, 0)], F1, ("jvp", "vmap"))

    def sinkhorn(C):
        K = -C / 0.5

        def step(i, s):
            f, g = s
            f = -jax.nn.logsumexp(K + g[None, :], axis=1) + jnp.log(1.0 / C.shape[0])
            g = -jax.nn.logsumexp(K + f[:, None], axis=0) + jnp.log(1.0 / C.shape[1])
            return f, g
        f, g = lax.fori_loop(0, 10, step, (jnp.zeros(C.shape[0], C.dtype), jnp.zeros(C.shape[1], C.dtype)))
        return jnp.sum(jnp.exp(K + f[:, None] + g[None, :]) * C)
    P("sinkhorn", sinkhorn, [U((3, 4), 0, 1)], F, AD)

    def thomas(a, b, c, d):
        def fwd(carry, abcd):
            cp, dp = carry
            ai, bi, ci, di = abcd
            m = bi - ai * cp
            cn, dn = ci / m, (di - ai * dp) / m
            return (cn, dn), (cn, dn)
        _, (cp, dp) = lax.scan(fwd, (jnp.zeros((), d.dtype), jnp.zeros((), d.dtype)), (a, b, c, d))

        def bwd(x, cd):
            ci, di = cd
            x = di - ci * x
            return x, x
        _, xs = lax.scan(bwd, jnp.zeros((), d.dtype), (cp, dp), reverse=True)
        return xs
    P("solve_tridiagonal_thomas", thomas, [U((5,), -0.5, 0.5), U((5,), 3, 4), U((5,), -0.5, 0.5), U((5,))], F, AD)

    def horner_scan(c, x):
        return lax.scan(lambda acc, ci: (acc * x + ci, None), jnp.zeros_like(x), c)[0]
    P("horner_scan", horner_scan, [U((5,)), U((4,))], F, AD)

    # ------------------------------------------------ jit nesting, closures, pytrees
    def nested(x, y):
        @jax.jit
        def inner(a, b):
            return jnp.sin(a) * b, jnp.cos(b)

        @jax.jit
        def middle(t):
            u, v = inner(t["x"], t["y"])
            return jnp.sum(u) + jnp.sum(inner(v, u)[0])
        return middle({"x": x, "y": y})
    P("jit_nested_pytree", nested, [U((4,)), U((4,))], F, AD)

    scale = np.array([1.0, 2.0, 0.5, -1.0], np.float32)

    def closure(x):
        s = jnp.asarray(scale, x.dtype)
        f = jax.jit(lambda v: jnp.tanh(v * s) + s)
        return jnp.sum(f(x) ** 2)
    P("closure_over_array", closure, [U((4,))], F, AD)

    def vmap_inside(W, xs):
        f = lambda x: jnp.tanh(W @ x)
        return jnp.sum(jax.vmap(f)(xs) ** 2)
    P("vmap_inside", vmap_inside, [U((3, 4), -0.5, 0.5), U((5, 4))], F, AD)

    def grad_inside(x):
        g = jax.grad(lambda v: jnp.sum(jnp.sin(v) * v))
        return jnp.sum(g(x) ** 2)
    P("grad_inside", grad_inside, [U((4,))], F, AD)

    def per_example_grads(w, xs, ys):
        loss = lambda w, x, y: (jnp.dot(w, x) - y) ** 2
        return jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)
    P("per_example_grads", per_example_grads, [U((3,)), U((4, 3)), U((4,))], F, ("jvp", "vjp"))

    def hvp(x, v):
        f = lambda z: jnp.sum(jnp.sin(z) * z ** 2)
        return jax.jvp(jax.grad(f), (x,), (v,))[1]
    P("hessian_vector_product", hvp, [U((4,)), U((4,))], F, ("vmap", "jvp"))

    def jac_prog(x):
        J = jax.jacfwd(lambda z: jnp.tanh(jnp.outer(z, z)).sum(0))(x)
        return jnp.trace(J)
    P("jacobian_trace", jac_prog, [U((3,))], F, AD)

    def tree_ops(a, b, c):
        tree = {"a": a, "bc": (b, c)}
        doubled = jax.tree_util.tree_map(lambda t: 2.0 * t + 1.0, tree)
        flat = jnp.concatenate([jnp.ravel(t) for t in jax.tree_util.tree_leaves(doubled)])
        return jnp.sum(jnp.exp(-flat ** 2))
    P("pytree_tree_map", tree_ops, [U((2, 2)), U((3,)), U(())], F, AD)

    def checkpointed(w, x):
        layer = jax.checkpoint(lambda h: jnp.tanh(h @ w))
        h = x
        for _ in range(3):
            h = layer(h)
        return jnp.sum(h ** 2)
    P("checkpointed_layers", checkpointed, [U((3, 3), -0.7, 0.7), U((2, 3))], F1, AD)

    def cond_model(x, flag):
        return lax.cond(flag > 0, lambda v: jnp.sum(jnp.sin(v)), lambda v: jnp.sum(v ** 2), x)
    P("cond_in_model", cond_model, [U((4,)), lambda r, d: np.int32(1)], F1, AD)

    def sort_based(x):
        s = jnp.sort(x)
        w = jnp.linspace(0.0, 1.0, x.shape[0]).astype(x.dtype)
        return jnp.sum(s * w)
    P("sorted_weighted_sum", sort_based, [U((6,))], F, AD)

    def topk_softmax(x):
        v, i = lax.top_k(x, 3)
        return jnp.sum(jax.nn.softmax(v) * i.astype(x.dtype))
    P("topk_softmax", topk_softmax, [U((7,))], F1, AD)

    def segment_mean(x, seg):
        s = jax.ops.segment_sum(x, seg, num_segments=3)
        c = jax.ops.segment_sum(jnp.ones_like(x), seg, num_segments=3)
        return s / jnp.maximum(c, 1.0)
    P("segment_mean", segment_mean, [U((8,)), lambda r, d: r.integers(0, 3, 8).astype(np.int32)], F, AD)

    def image_norm(img):
        m = jnp.mean(img, axis=(1, 2), keepdims=True)
        s = jnp.std(img, axis=(1, 2), keepdims=True)
        return jnp.clip((img - m) / (s + 1e-5), -2.0, 2.0)
    P("image_normalize", image_norm, [U((2, 3, 3), 0, 1)], F1, AD)

    def fft_filter(x):
        X = jnp.fft.rfft(x)
        k = jnp.arange(X.shape[0])
        X = jnp.where(k < 3, X, 0.0)
        return jnp.fft.irfft(X, n=x.shape[0])
    P("fft_lowpass", fft_filter, [U((8,))], F, AD)
