"""Held-out whole programs for gen_heldout.py (fixtures/heldout/, family
`heldout`): written by someone who did not build the features they run,
as users write them, to check FrankenTrace where the other families do not
look: transformer and VAE training losses, integrators and their parameter
gradients, while-loop solvers, a Kalman filter and smoother, PDEs through
convolutions, hand-written pytree optimizers, losses with integer labels,
gather/scatter with duplicate and out-of-bounds indices in every mode,
jnp.where over NaN-producing branches, integer wraparound, shifts and bit
tricks, weak-type promotion, f16/bf16, masked reductions, sorting and
cumulative ops, jax.nn, jax.checkpoint, custom_jvp/custom_vjp, nested
transforms (per-example gradients, jacfwd, jacrev, hessian), pytrees,
closures and static arguments.

register(P, U) registers the programs: P(name, fn, makers, dtypes, tf) is
gen_sweep.S bound to the heldout family; U(shape, lo, hi) makes a seeded
float input of the case's dtype; a maker may also be any
`lambda rng, dtype_name: array`."""

import functools

import numpy as np

F = ("f32", "f64")
F1 = ("f32",)
AD = ("jvp", "vjp", "vmap")      # vjp becomes grad for a scalar output
FWD = ("jvp", "vmap")            # while loops: JAX has no reverse mode
VM = ("vmap",)


def npd(d):
    return {"f32": np.float32, "f64": np.float64, "f16": np.float16}.get(d, np.float32)


def ints(shape, lo, hi, dt=np.int32):
    """Seeded integers in [lo, hi] of a fixed dtype (whatever the case's)."""
    return lambda r, d: r.integers(lo, hi, size=shape, endpoint=True).astype(dt)


def fixed(v):
    """A fixed array, converted to the case's float dtype."""
    return lambda r, d: np.asarray(v, dtype=npd(d))


def raw(v):
    """A fixed array of its own dtype."""
    return lambda r, d: np.asarray(v)


def register(P, U):
    import jax
    import jax.numpy as jnp
    from jax import lax

    # ================================================================ models
    def layernorm(x, g, b, eps=1e-6):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return g * (x - mu) * lax.rsqrt(var + eps) + b

    def causal_mha(x, wqkv, wo, heads):
        T, D = x.shape
        qkv = x @ wqkv
        q, k, v = jnp.split(qkv, 3, axis=-1)
        hd = D // heads
        q = q.reshape(T, heads, hd)
        k = k.reshape(T, heads, hd)
        v = v.reshape(T, heads, hd)
        logits = jnp.einsum("thd,shd->hts", q, k) * (hd ** -0.5)
        mask = jnp.arange(T)[:, None] >= jnp.arange(T)[None, :]
        logits = jnp.where(mask[None], logits, jnp.finfo(x.dtype).min)
        att = jax.nn.softmax(logits, axis=-1)
        o = jnp.einsum("hts,shd->thd", att, v).reshape(T, D)
        return o @ wo

    def gpt_block_loss(params, x, y):
        h = x + causal_mha(layernorm(x, params["ln1_g"], params["ln1_b"]), params["wqkv"], params["wo"], 2)
        m = layernorm(h, params["ln2_g"], params["ln2_b"])
        h = h + jax.nn.gelu(m @ params["w1"], approximate=False) @ params["w2"]
        logits = h @ params["wout"]
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=-1))

    def gpt(wqkv, wo, w1, w2, wout, g1, g2, x, y):
        p = {"wqkv": wqkv, "wo": wo, "w1": w1, "w2": w2, "wout": wout, "ln1_g": g1,
             "ln1_b": jnp.zeros_like(g1), "ln2_g": g2, "ln2_b": jnp.zeros_like(g2)}
        return gpt_block_loss(p, x, y)
    P("gpt_block_xent", gpt, [U((4, 12), -0.4, 0.4), U((4, 4), -0.4, 0.4), U((4, 8), -0.4, 0.4),
                              U((8, 4), -0.4, 0.4), U((4, 5), -0.5, 0.5), U((4,), 0.8, 1.2),
                              U((4,), 0.8, 1.2), U((5, 4)), ints((5,), 0, 4)], F, AD)

    def gpt_grads(wqkv, wo, w1, w2, wout, x, y):
        p = {"wqkv": wqkv, "wo": wo, "w1": w1, "w2": w2, "wout": wout,
             "ln1_g": jnp.ones(4, x.dtype), "ln1_b": jnp.zeros(4, x.dtype),
             "ln2_g": jnp.ones(4, x.dtype), "ln2_b": jnp.zeros(4, x.dtype)}
        loss, g = jax.value_and_grad(gpt_block_loss)(p, x, y)
        return loss, g["wqkv"], g["w2"], g["ln2_g"]
    P("gpt_block_value_and_grad", gpt_grads,
      [U((4, 12), -0.4, 0.4), U((4, 4), -0.4, 0.4), U((4, 8), -0.4, 0.4),
       U((8, 4), -0.4, 0.4), U((4, 5), -0.5, 0.5), U((5, 4)), ints((5,), 0, 4)], F1, ("jvp", "vmap"))

    def vae_loss(we, wmu, wlv, wd, x, eps):
        h = jax.nn.softplus(x @ we)
        mu, logvar = h @ wmu, h @ wlv
        z = mu + jnp.exp(0.5 * logvar) * eps
        logits = z @ wd
        rec = -jnp.sum(x * jax.nn.log_sigmoid(logits) + (1 - x) * jax.nn.log_sigmoid(-logits), axis=-1)
        kl = -0.5 * jnp.sum(1 + logvar - mu ** 2 - jnp.exp(logvar), axis=-1)
        return jnp.mean(rec + kl)
    P("vae_elbo", vae_loss, [U((6, 5), -0.5, 0.5), U((5, 2), -0.5, 0.5), U((5, 2), -0.5, 0.5),
                             U((2, 6), -0.5, 0.5), U((3, 6), 0, 1), U((3, 2), -1, 1)], F, AD)

    def vae_sgd_step(we, wmu, wlv, wd, x, eps):
        ps = (we, wmu, wlv, wd)
        loss, gs = jax.value_and_grad(lambda p: vae_loss(*p, x, eps))(ps)
        new = jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, ps, gs)
        return loss, vae_loss(*new, x, eps)
    P("vae_sgd_step", vae_sgd_step, [U((6, 5), -0.5, 0.5), U((5, 2), -0.5, 0.5), U((5, 2), -0.5, 0.5),
                                     U((2, 6), -0.5, 0.5), U((3, 6), 0, 1), U((3, 2), -1, 1)], F1, ("jvp", "vmap"))

    def conv_transpose_decoder(w1, w2, z):
        # NCHW upsampling decoder: two stride-2 transposed convolutions
        y = lax.conv_transpose(z, w1, (2, 2), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))
        y = jax.nn.leaky_relu(y, 0.1)
        y = lax.conv_transpose(y, w2, (2, 2), "VALID", dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return jnp.mean(jax.nn.sigmoid(y) ** 2)
    P("conv_transpose_decoder", conv_transpose_decoder,
      [U((3, 2, 3, 3), -0.5, 0.5), U((1, 3, 2, 2), -0.5, 0.5), U((2, 2, 2, 2))], F, AD)

    def depthwise_separable(wdw, wpw, x):
        C = x.shape[-1]
        y = lax.conv_general_dilated(x, wdw, (1, 1), ((1, 1), (1, 1)), rhs_dilation=(2, 2),
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=C)
        y = jax.nn.relu6(y)
        y = jnp.einsum("nhwc,cd->nhwd", y, wpw)
        return jnp.sum(jnp.max(y, axis=(1, 2)))
    P("depthwise_separable_conv", depthwise_separable,
      [U((3, 3, 1, 3), -0.5, 0.5), U((3, 4), -0.5, 0.5), U((1, 5, 6, 3), -1, 1)], F1, AD)

    def bidir_rnn(wf, wb, xs):
        def cell(w):
            def step(h, x):
                h = jnp.tanh(jnp.concatenate([x, h]) @ w)
                return h, h
            return step
        H = wf.shape[1]
        _, hf = lax.scan(cell(wf), jnp.zeros(H, xs.dtype), xs)
        _, hb = lax.scan(cell(wb), jnp.zeros(H, xs.dtype), xs, reverse=True)
        return jnp.sum(jnp.concatenate([hf, hb], axis=-1) ** 2)
    P("rnn_bidirectional_scan", bidir_rnn, [U((5, 3), -0.5, 0.5), U((5, 3), -0.5, 0.5), U((6, 2))], F, AD)

    def bag_of_words(emb, w, tokens, doc_ids, labels):
        vecs = emb[tokens]                                     # gather rows (repeats)
        docs = jax.ops.segment_sum(vecs, doc_ids, num_segments=3)
        counts = jax.ops.segment_sum(jnp.ones_like(doc_ids, dtype=emb.dtype), doc_ids, num_segments=3)
        docs = docs / jnp.maximum(counts, 1.0)[:, None]
        logits = docs @ w
        lse = jax.nn.logsumexp(logits, axis=1)
        return jnp.mean(lse - jnp.take_along_axis(logits, labels[:, None], 1)[:, 0])
    P("bag_of_words_segment_sum", bag_of_words,
      [U((7, 4)), U((4, 3), -0.5, 0.5), raw(np.array([1, 3, 3, 0, 6, 1, 1, 2], np.int32)),
       raw(np.array([0, 0, 0, 2, 2, 2, 2, 0], np.int32)), raw(np.array([2, 0, 1], np.int32))], F, AD)

    def moe(wg, we, x):
        gate = x @ wg                                  # (N, E)
        vals, idx = lax.top_k(gate, 2)
        probs = jax.nn.softmax(vals, axis=-1)          # (N, 2)
        outs = jnp.einsum("nd,edk->nek", x, we)        # (N, E, K)
        chosen = jnp.take_along_axis(outs, idx[:, :, None], axis=1)
        return jnp.sum(jnp.sum(probs[:, :, None] * chosen, axis=1) ** 2)
    P("mixture_of_experts_top2", moe, [U((3, 4), -1, 1), U((4, 3, 2), -0.5, 0.5), U((5, 3))], F, AD)

    def gnn(w_msg, w_upd, h, src, dst):
        msg = jnp.tanh(h[src] @ w_msg)
        agg = jnp.zeros_like(h[:, :msg.shape[1]]).at[dst].add(msg)
        deg = jnp.zeros(h.shape[0], h.dtype).at[dst].add(1.0)
        agg = agg / jnp.where(deg > 0, deg, 1.0)[:, None]
        return jnp.sum(jax.nn.silu(jnp.concatenate([h, agg], -1) @ w_upd))
    P("gnn_message_passing", gnn,
      [U((3, 3), -0.5, 0.5), U((6, 2), -0.5, 0.5), U((5, 3)),
       raw(np.array([0, 1, 2, 3, 4, 0, 2], np.int32)), raw(np.array([1, 2, 1, 1, 0, 2, 2], np.int32))], F, AD)

    # ================================================================ losses
    def xent_ignore(logits, labels):
        valid = labels >= 0
        safe = jnp.where(valid, labels, 0)
        logp = jax.nn.log_softmax(logits)
        nll = -jnp.take_along_axis(logp, safe[:, None], axis=-1)[:, 0]
        return jnp.sum(jnp.where(valid, nll, 0.0)) / jnp.maximum(jnp.sum(valid), 1)
    P("loss_xent_ignore_index", xent_ignore, [U((6, 4)), raw(np.array([1, -1, 3, 0, -1, 2], np.int32))], F, AD)

    def focal_multiclass(logits, labels, gamma=2.0, alpha=0.25):
        logp = jax.nn.log_softmax(logits, axis=-1)
        lp = jnp.take_along_axis(logp, labels[..., None], axis=-1)[..., 0]
        p = jnp.exp(lp)
        return -jnp.mean(alpha * (1 - p) ** gamma * lp)
    P("loss_focal_multiclass", focal_multiclass, [U((2, 3, 4)), ints((2, 3), 0, 3)], F, AD)

    def huber_optax(pred, tgt, delta=1.5):
        err = pred - tgt
        abs_err = jnp.abs(err)
        quad = jnp.minimum(abs_err, delta)
        lin = abs_err - quad
        return jnp.mean(0.5 * quad ** 2 + delta * lin)
    P("loss_huber_optax", huber_optax, [U((8,), -3, 3), U((8,), -3, 3)], F, AD)

    def info_nce(a, b, t):
        a = a / jnp.linalg.norm(a, axis=-1, keepdims=True)
        b = b / jnp.linalg.norm(b, axis=-1, keepdims=True)
        s = a @ b.T / t
        labels = jnp.arange(a.shape[0])
        return jnp.mean(jax.nn.logsumexp(s, axis=1) - s[labels, labels])
    P("loss_info_nce", info_nce, [U((4, 3)), U((4, 3)), U((), 0.1, 0.5)], F, AD)

    def triplet(a, p, n):
        d = lambda u, v: jnp.sqrt(jnp.sum((u - v) ** 2, -1) + 1e-12)
        return jnp.mean(jax.nn.relu(d(a, p) - d(a, n) + 0.2))
    P("loss_triplet_margin", triplet, [U((5, 3)), U((5, 3)), U((5, 3))], F, AD)

    def hmm_forward(log_pi, log_A, log_B, obs):
        def step(alpha, o):
            alpha = jax.nn.logsumexp(alpha[:, None] + log_A, axis=0) + log_B[:, o]
            return alpha, jax.nn.logsumexp(alpha)
        alpha, lls = lax.scan(step, log_pi + log_B[:, obs[0]], obs[1:])
        return jax.nn.logsumexp(alpha), lls
    P("hmm_forward_loglik", hmm_forward,
      [U((3,), -2, 0), U((3, 3), -2, 0), U((3, 4), -2, 0), ints((6,), 0, 3)], F, AD)

    def dice_loss(logits, mask):
        p = jax.nn.sigmoid(logits)
        inter = jnp.sum(p * mask, axis=(1, 2))
        return 1.0 - jnp.mean((2 * inter + 1.0) / (jnp.sum(p, (1, 2)) + jnp.sum(mask, (1, 2)) + 1.0))
    P("loss_dice", dice_loss, [U((2, 4, 4)), lambda r, d: (r.uniform(size=(2, 4, 4)) > 0.5).astype(npd(d))], F1, AD)

    # ================================================================ optimizers
    def quad_loss(p, A, b):
        r = A @ p["w"] + p["b"] - b
        return 0.5 * jnp.sum(r * r) + 0.01 * jnp.sum(p["w"] ** 2)

    def adam_tree(w, bias, A, b, lr):
        params = {"w": w, "b": bias}
        m = jax.tree_util.tree_map(jnp.zeros_like, params)
        v = jax.tree_util.tree_map(jnp.zeros_like, params)

        def step(i, s):
            p, m, v = s
            g = jax.grad(quad_loss)(p, A, b)
            t = (i + 1).astype(w.dtype)
            m = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, m, g)
            v = jax.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, v, g)
            mh = jax.tree_util.tree_map(lambda m: m / (1 - 0.9 ** t), m)
            vh = jax.tree_util.tree_map(lambda v: v / (1 - 0.999 ** t), v)
            p = jax.tree_util.tree_map(lambda p, m, v: p - lr * m / (jnp.sqrt(v) + 1e-8), p, mh, vh)
            return p, m, v
        p, _, _ = lax.fori_loop(0, 6, step, (params, m, v))
        return quad_loss(p, A, b)
    P("opt_adam_pytree_fori", adam_tree, [U((3,), -1, 1), U((4,), -0.2, 0.2), U((4, 3)), U((4,)), U((), 0.01, 0.1)], F, AD)

    def rmsprop_momentum_wd(w, xs, ys):
        def loss(w, x, y):
            return jnp.mean((jnp.tanh(x @ w) - y) ** 2)

        def step(s, batch):
            w, sq, mom = s
            x, y = batch
            l, g = jax.value_and_grad(loss)(w, x, y)
            g = g + 1e-3 * w
            sq = 0.9 * sq + 0.1 * g * g
            mom = 0.8 * mom + 0.05 * g * lax.rsqrt(sq + 1e-6)
            return (w - mom, sq, mom), l
        (w, _, _), ls = lax.scan(step, (w, jnp.zeros_like(w), jnp.zeros_like(w)), (xs, ys))
        return jnp.sum(ls) + jnp.sum(w ** 2)
    P("opt_rmsprop_momentum_scan", rmsprop_momentum_wd, [U((3, 2), -0.5, 0.5), U((4, 5, 3)), U((4, 5, 2), -0.5, 0.5)], F, AD)

    def nesterov_clip_warmup(w1, w2, x, y, step0):
        params = [w1, w2]

        def loss(ps):
            return jnp.mean((jnp.tanh(x @ ps[0]) @ ps[1] - y) ** 2)

        def body(i, s):
            ps, vel = s
            gs = jax.grad(loss)(ps)
            gn = jnp.sqrt(sum(jnp.sum(g * g) for g in jax.tree_util.tree_leaves(gs)))
            scale = jnp.minimum(1.0, 0.5 / (gn + 1e-6))
            gs = [g * scale for g in gs]
            lr = 0.3 * jnp.minimum((step0 + i + 1) / 4, 1.0)
            vel = [0.9 * v + g for v, g in zip(vel, gs)]
            ps = [p - lr * (g + 0.9 * v) for p, g, v in zip(ps, gs, vel)]
            return ps, vel
        ps, _ = lax.fori_loop(0, 5, body, (params, [jnp.zeros_like(p) for p in params]))
        return loss(ps)
    P("opt_nesterov_clip_warmup", nesterov_clip_warmup,
      [U((3, 4), -0.5, 0.5), U((4, 1), -0.5, 0.5), U((6, 3)), U((6, 1)), raw(np.int32(1))], F, AD)

    def lars_trust_ratio(w, g):
        wn = jnp.linalg.norm(w)
        gn = jnp.linalg.norm(g)
        trust = jnp.where((wn > 0) & (gn > 0), 0.001 * wn / gn, 1.0)
        return w - 0.1 * trust * g
    P("opt_lars_trust_ratio", lars_trust_ratio, [U((3, 3)), U((3, 3))], F, AD)
    P("opt_lars_trust_ratio_zero_grad", lars_trust_ratio, [U((3, 3)), fixed(np.zeros((3, 3)))], F1, AD)

    # ================================================================ ODE and physics
    def lotka_volterra_rk4(theta, y0):
        a, b, c, d = theta[0], theta[1], theta[2], theta[3]

        def f(y):
            return jnp.stack([a * y[0] - b * y[0] * y[1], d * y[0] * y[1] - c * y[1]])

        def step(i, y):
            h = 0.05
            k1 = f(y)
            k2 = f(y + h / 2 * k1)
            k3 = f(y + h / 2 * k2)
            k4 = f(y + h * k3)
            return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        y = lax.fori_loop(0, 20, step, y0)
        return jnp.sum((y - jnp.array([1.0, 1.0], y.dtype)) ** 2)
    P("ode_lotka_volterra_rk4_fori", lotka_volterra_rk4, [U((4,), 0.5, 1.5), U((2,), 0.5, 2)], F, AD + ("hessian",))

    def dopri_scan(k, y0):
        def f(y):
            return -k * y + jnp.sin(y)

        def step(y, _):
            h = 0.1
            k1 = f(y)
            k2 = f(y + h * (1 / 5) * k1)
            k3 = f(y + h * (3 / 40 * k1 + 9 / 40 * k2))
            k4 = f(y + h * (44 / 45 * k1 - 56 / 15 * k2 + 32 / 9 * k3))
            k5 = f(y + h * (19372 / 6561 * k1 - 25360 / 2187 * k2 + 64448 / 6561 * k3 - 212 / 729 * k4))
            k6 = f(y + h * (9017 / 3168 * k1 - 355 / 33 * k2 + 46732 / 5247 * k3 + 49 / 176 * k4 - 5103 / 18656 * k5))
            y5 = y + h * (35 / 384 * k1 + 500 / 1113 * k3 + 125 / 192 * k4 - 2187 / 6784 * k5 + 11 / 84 * k6)
            return y5, y5
        _, ys = lax.scan(step, y0, None, length=6)
        return ys
    P("ode_dopri5_scan", dopri_scan, [U((3,), 0.5, 2), U((3,), -1, 1)], F, AD)

    def heat_conv(u0, alpha):
        lap = jnp.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], u0.dtype)[None, None]

        def step(u, _):
            up = jnp.pad(u, 1, mode="wrap")
            du = lax.conv_general_dilated(up[None, None], lap, (1, 1), "VALID")[0, 0]
            u = u + alpha * du
            return u, jnp.sum(u * u)
        u, e = lax.scan(step, u0, None, length=5)
        return jnp.sum(u[1:3, 1:3]) + jnp.sum(e)
    P("heat_2d_conv_periodic", heat_conv, [U((5, 6), 0, 1), U((), 0.05, 0.2)], F, AD)

    def wave2d(u0, c):
        def step(s, _):
            u, up = s
            lap = (jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1) - 4 * u)
            un = 2 * u - up + c ** 2 * lap
            un = un.at[0, :].set(0.0).at[-1, :].set(0.0)
            return (un, u), None
        (u, _), _ = lax.scan(step, (u0, u0), None, length=6)
        return jnp.sum(u ** 2)
    P("wave_2d_leapfrog_dirichlet", wave2d, [U((5, 5), -1, 1), U((), 0.2, 0.4)], F, AD)

    def nbody_energy(x, mass, iu):
        d = x[:, None, :] - x[None, :, :]
        r = jnp.sqrt(jnp.sum(d ** 2, -1) + 0.01)
        return -jnp.sum((mass[:, None] * mass[None, :] / r)[iu])

    def nbody_forces(pos, mass):
        # jnp.triu_indices: traced through jnp.nonzero (JAX 0.12's Nonzero)
        return -jax.grad(nbody_energy)(pos, mass, jnp.triu_indices(pos.shape[0], 1))
    P("nbody_forces_triu", nbody_forces, [U((5, 2)), U((5,), 0.5, 2)], F, AD)

    def nbody_forces_np(pos, mass):
        # np.triu_indices: constant index arrays, a gather
        return -jax.grad(nbody_energy)(pos, mass, np.triu_indices(pos.shape[0], 1))
    P("nbody_forces_triu_numpy", nbody_forces_np, [U((5, 2)), U((5,), 0.5, 2)], F, AD)

    def md_periodic(x, L):
        d = x[:, None, :] - x[None, :, :]
        d = d - L * jnp.round(d / L)
        r2 = jnp.sum(d * d, -1)
        n = x.shape[0]
        r2 = jnp.where(jnp.eye(n, dtype=bool), 1.0, r2)
        e = jnp.where(jnp.eye(n, dtype=bool), 0.0, jnp.exp(-r2))
        return 0.5 * jnp.sum(e)
    P("md_minimum_image", md_periodic, [U((4, 2), 0, 3), U((), 2.5, 3.5)], F, AD)

    def double_pendulum(q, qd):
        def lag(q, qd):
            t1, t2 = q[0], q[1]
            w1, w2 = qd[0], qd[1]
            T = w1 ** 2 + 0.5 * w2 ** 2 + w1 * w2 * jnp.cos(t1 - t2)
            V = -2 * jnp.cos(t1) - jnp.cos(t2)
            return T - V

        def accel(q, qd):
            M = jax.hessian(lag, 1)(q, qd)
            rhs = jax.grad(lag, 0)(q, qd) - jax.jacfwd(jax.grad(lag, 1), 0)(q, qd) @ qd
            det = M[0, 0] * M[1, 1] - M[0, 1] * M[1, 0]
            inv = jnp.array([[M[1, 1], -M[0, 1]], [-M[1, 0], M[0, 0]]]) / det
            return inv @ rhs

        def step(s, _):
            q, qd = s
            qd = qd + 0.02 * accel(q, qd)
            q = q + 0.02 * qd
            return (q, qd), q[0]
        (q, qd), tr = lax.scan(step, (q, qd), None, length=4)
        return tr
    P("double_pendulum_lagrangian", double_pendulum, [U((2,), -1, 1), U((2,), -0.5, 0.5)], F, ("jvp", "vmap"))

    def gray_scott(u, v):
        def lap(a):
            return jnp.roll(a, 1, 0) + jnp.roll(a, -1, 0) + jnp.roll(a, 1, 1) + jnp.roll(a, -1, 1) - 4 * a

        def step(i, s):
            u, v = s
            uvv = u * v * v
            return (u + 0.16 * lap(u) - uvv + 0.035 * (1 - u),
                    v + 0.08 * lap(v) + uvv - 0.095 * v)
        u, v = lax.fori_loop(0, 8, step, (u, v))
        return jnp.mean(u) + jnp.var(v)
    P("reaction_diffusion_gray_scott", gray_scott, [U((4, 5), 0.5, 1), U((4, 5), 0, 0.5)], F, AD)

    def burgers(u0, nu):
        def step(u, _):
            ux = (jnp.roll(u, -1) - jnp.roll(u, 1)) / 0.2
            uxx = (jnp.roll(u, -1) - 2 * u + jnp.roll(u, 1)) / 0.01
            u = u + 0.001 * (-u * ux + nu * uxx)
            return u, jnp.max(jnp.abs(u))
        return lax.scan(step, u0, None, length=5)
    P("burgers_1d", burgers, [U((8,), -1, 1), U((), 0.05, 0.2)], F, AD)

    def kalman_smoother(ys, q, r):
        A = jnp.array([[1.0, 0.1], [0.0, 1.0]], ys.dtype)
        H = jnp.array([1.0, 0.0], ys.dtype)
        Q = q * jnp.eye(2, dtype=ys.dtype)

        def fwd(c, y):
            m, P = c
            mp = A @ m
            Pp = A @ P @ A.T + Q
            S = H @ Pp @ H + r
            K = Pp @ H / S
            m = mp + K * (y - H @ mp)
            P = Pp - jnp.outer(K, H @ Pp)
            return (m, P), (m, P, mp, Pp)
        m0 = jnp.zeros(2, ys.dtype)
        P0 = jnp.eye(2, dtype=ys.dtype)
        _, (ms, Ps, mps, Pps) = lax.scan(fwd, (m0, P0), ys)

        def inv2(M):
            det = M[0, 0] * M[1, 1] - M[0, 1] * M[1, 0]
            return jnp.array([[M[1, 1], -M[0, 1]], [-M[1, 0], M[0, 0]]]) / det

        def bwd(c, x):
            ms_next, Ps_next = c
            m, P, mp_next, Pp_next = x
            G = P @ A.T @ inv2(Pp_next)
            m = m + G @ (ms_next - mp_next)
            P = P + G @ (Ps_next - Pp_next) @ G.T
            return (m, P), m[0]
        _, xs = lax.scan(bwd, (ms[-1], Ps[-1]), (ms[:-1], Ps[:-1], mps[1:], Pps[1:]), reverse=True)
        return jnp.concatenate([xs, ms[-1:, 0]])
    P("kalman_rts_smoother", kalman_smoother, [U((6,), -1, 1), U((), 0.05, 0.2), U((), 0.2, 0.5)], F, AD)

    # ================================================================ solvers
    def kepler_newton(M, e):
        def cond(s):
            E, i = s
            return (i < 30) & jnp.any(jnp.abs(E - e * jnp.sin(E) - M) > 1e-6)

        def body(s):
            E, i = s
            return E - (E - e * jnp.sin(E) - M) / (1 - e * jnp.cos(E)), i + 1
        E, n = lax.while_loop(cond, body, (M, jnp.int32(0)))
        return E, n
    P("solve_kepler_newton_while", kepler_newton, [U((4,), 0, 3), U((), 0.1, 0.6)], F, FWD)

    def bisect_while(c):
        def f(x):
            return x ** 3 - 2 * x - c

        def cond(s):
            lo, hi, k = s
            return (hi - lo > 1e-4) & (k < 60)

        def body(s):
            lo, hi, k = s
            mid = 0.5 * (lo + hi)
            left = jnp.sign(f(mid)) == jnp.sign(f(lo))
            return jnp.where(left, mid, lo), jnp.where(left, hi, mid), k + 1
        lo, hi, k = lax.while_loop(cond, body, (jnp.asarray(-3.0, c.dtype), jnp.asarray(3.0, c.dtype), 0))
        return 0.5 * (lo + hi), k
    P("solve_bisection_while_scalar", bisect_while, [U((), -1, 1)], F, VM)

    @jax.custom_vjp
    def fixed_point(a, x0):
        def cond(s):
            x, xp, i = s
            return (i < 50) & (jnp.max(jnp.abs(x - xp)) > 1e-6)

        def body(s):
            x, _, i = s
            return jnp.tanh(a @ x) + 0.5, x, i + 1
        return lax.while_loop(cond, body, (jnp.tanh(a @ x0) + 0.5, x0, 0))[0]

    def fp_fwd(a, x0):
        x = fixed_point(a, x0)
        return x, (a, x)

    def fp_bwd(res, g):
        a, x = res
        _, vjp_a = jax.vjp(lambda a: jnp.tanh(a @ x) + 0.5, a)
        _, vjp_x = jax.vjp(lambda x: jnp.tanh(a @ x) + 0.5, x)

        def cond(s):
            u, up, i = s
            return (i < 50) & (jnp.max(jnp.abs(u - up)) > 1e-7)

        def body(s):
            u, _, i = s
            return vjp_x(u)[0] + g, u, i + 1
        u = lax.while_loop(cond, body, (g, jnp.zeros_like(g), 0))[0]
        return vjp_a(u)[0], jnp.zeros_like(x)
    fixed_point.defvjp(fp_fwd, fp_bwd)

    def implicit_layer(a, x0, w):
        return jnp.sum(w * fixed_point(a, x0))
    P("implicit_fixed_point_custom_vjp", implicit_layer, [U((3, 3), -0.3, 0.3), U((3,)), U((3,))], F, ("vjp",))

    @jax.custom_jvp
    def log1pexp(x):
        return jnp.log1p(jnp.exp(x))

    @log1pexp.defjvp
    def _l1pe_jvp(primals, tangents):
        x, = primals
        t, = tangents
        return log1pexp(x), t * jax.nn.sigmoid(x)

    def safe_softplus_net(w, x):
        return jnp.sum(log1pexp(x @ w))
    P("custom_jvp_log1pexp", safe_softplus_net, [U((3, 2), -5, 5), U((4, 3), -5, 5)], F, AD + ("hessian",))

    def sqrt_root(a):
        x = lax.custom_root(lambda x: x * x - a, jnp.ones_like(a),
                            lambda f, x0: lax.fori_loop(0, 12, lambda i, x: 0.5 * (x + a / x), x0),
                            lambda g, y: y / (2.0 * jnp.sqrt(a)))
        return jnp.sum(x * jnp.arange(1, a.shape[0] + 1, dtype=a.dtype))
    P("custom_root_sqrt_grad", sqrt_root, [U((3,), 1, 4)], F1, ("vjp", "jvp"))

    def gauss_seidel(A, b):
        n = b.shape[0]

        def sweep(k, x):
            def row(i, x):
                s = A[i] @ x - A[i, i] * x[i]
                return x.at[i].set((b[i] - s) / A[i, i])
            return lax.fori_loop(0, n, row, x)
        return lax.fori_loop(0, 6, sweep, jnp.zeros_like(b))
    spd = lambda r, d: (lambda m: (m @ m.T + 4 * np.eye(4)).astype(npd(d)))(r.uniform(-1, 1, (4, 4)))
    P("solve_gauss_seidel_dynamic_index", gauss_seidel, [spd, U((4,))], F, AD)

    # ================================================================ gather / scatter
    def scatter_modes(vals, idx):
        base = jnp.arange(6.0, dtype=vals.dtype)
        a = base.at[idx].add(vals)                            # duplicates accumulate; out of bounds dropped
        b = base.at[idx].add(vals, mode="drop")
        c = base.at[idx].max(vals, mode="drop")
        d = base.at[idx].min(vals, mode="clip")
        f = base.at[idx].set(vals, mode="clip")
        return a, b, c, d, f
    P("scatter_modes_duplicates_oob", scatter_modes,
      [U((7,), -3, 3), raw(np.array([1, 1, 4, -1, 9, 4, 1], np.int32))], F, AD)

    def scatter_mul(vals, idx):
        base = jnp.arange(1.0, 7.0, dtype=vals.dtype)
        return base.at[idx].mul(vals, mode="drop"), base.at[idx].mul(vals, mode="clip"), \
            jax.ops.segment_prod(vals, jnp.clip(idx, 0, 3), num_segments=5)
    P("scatter_mul_duplicates_oob", scatter_mul,
      [U((7,), -3, 3), raw(np.array([1, 1, 4, -1, 9, 4, 1], np.int32))], F, VM)

    def gather_modes(table, idx):
        a = jnp.take(table, idx, axis=0, mode="clip")
        b = jnp.take(table, idx, axis=0, mode="fill", fill_value=-7.0)
        c = table.at[idx].get(mode="fill", fill_value=jnp.nan)
        d = table[jnp.clip(idx, 0, table.shape[0] - 1)]
        return jnp.sum(a * 2.0) + jnp.sum(b), c, d
    P("gather_modes_fill_clip", gather_modes,
      [U((4, 3)), raw(np.array([0, 5, -1, 3, -6, 2], np.int32))], F, AD)

    def histogram_scatter(x, w):
        bins = jnp.clip(jnp.floor((x + 2.0) / 0.5).astype(jnp.int32), 0, 7)
        h = jnp.zeros(8, x.dtype).at[bins].add(w)
        cnt = jnp.zeros(8, jnp.int32).at[bins].add(1)
        return h, cnt
    P("histogram_scatter_add", histogram_scatter, [U((20,), -3, 3), U((20,), 0, 1)], F, AD)

    def segment_extrema(data, seg):
        mx = jax.ops.segment_max(data, seg, num_segments=5)
        mn = jax.ops.segment_min(data, seg, num_segments=5)
        return jnp.where(jnp.isfinite(mx), mx, 0.0) + jnp.where(jnp.isfinite(mn), mn, 0.0), mx
    P("segment_max_min_empty", segment_extrema,
      [U((8,), -2, 2), raw(np.array([0, 0, 1, 3, 3, 3, 0, 1], np.int32))], F, AD)

    def advanced_index(x, rows, cols):
        y = x[rows[:, None], cols[None, :]]
        z = x[:, cols].sum(1)
        return jnp.sum(y ** 2) + jnp.sum(z) * jnp.sum(x[rows, rows % x.shape[1]])
    P("advanced_indexing_grad", advanced_index,
      [U((5, 4)), raw(np.array([4, 0, 4], np.int32)), raw(np.array([3, 1], np.int32))], F, AD)

    def sliding_window(x, k):
        n = x.shape[0] - 3

        def body(i, acc):
            w = lax.dynamic_slice(x, (i,), (4,))
            return lax.dynamic_update_slice(acc, jnp.reshape(jnp.sum(w * k), (1,)), (i,))
        return lax.fori_loop(0, n + 1, body, jnp.zeros(n + 1, x.dtype))
    P("sliding_window_dynamic_slice", sliding_window, [U((9,)), U((4,))], F, AD)

    def dyn_slice_clamp(x, start):
        # start out of range: dynamic_slice clamps, dynamic_update_slice clamps
        a = lax.dynamic_slice(x, (start, 0), (2, 3))
        b = lax.dynamic_update_slice(x, -a, (start - 1, 1))
        return a, b
    P("dynamic_slice_clamped_start", dyn_slice_clamp, [U((4, 4)), raw(np.int32(7))], F1, AD)

    def onehot_accuracy(logits, labels):
        pred = jnp.argmax(logits, axis=-1)
        acc = jnp.mean(pred == labels)
        oh = jax.nn.one_hot(labels, logits.shape[-1], dtype=logits.dtype)
        return acc, pred, -jnp.sum(oh * jax.nn.log_softmax(logits)) / logits.shape[0]
    P("onehot_argmax_accuracy", onehot_accuracy,
      [fixed([[1.0, 2.0, 2.0], [0.5, -1.0, 0.5], [3.0, 0.0, 1.0], [0.0, 0.0, 0.0]]),
       raw(np.array([1, 0, 0, 5], np.int32))], F, AD)

    # ================================================================ where / NaN
    def where_log(x):
        y = jnp.where(x > 0, jnp.log(x), 0.0)                        # grad NaN at x == 0
        safe = jnp.where(x > 0, x, 1.0)
        z = jnp.where(x > 0, jnp.log(safe), 0.0)                     # the double-where trick
        return jnp.sum(y) + 2 * jnp.sum(z)
    P("where_nan_branch_log", where_log, [fixed([-1.0, 0.0, 0.5, 2.0, -0.0, 3.0])], F, AD)

    def where_sqrt(x):
        return jnp.sum(jnp.where(x >= 0, jnp.sqrt(x), -x) + jnp.where(x > 1, x / (x - 1), 0.0))
    P("where_nan_branch_sqrt_div", where_sqrt, [fixed([-2.0, -0.5, 0.0, 0.25, 1.0, 4.0])], F, AD)

    def nan_reductions(x):
        x = jnp.where(x > 1.0, jnp.nan, x)
        return (jnp.nansum(x, axis=0), jnp.nanmean(x, axis=1), jnp.nanmax(x), jnp.nanmin(x, axis=0),
                jnp.nanvar(x, axis=1), jnp.nanargmax(x, axis=1), jnp.isnan(x).sum())
    P("nan_aware_reductions", nan_reductions, [U((3, 4), -1, 2)], F, ("jvp", "vmap"))

    def nan_propagation(x, y):
        return (jnp.maximum(x, y), jnp.minimum(x, y), jnp.fmax(x, y), jnp.fmin(x, y),
                jnp.max(jnp.stack([x, y])), jnp.clip(x, -1.0, y), jnp.sort(x), jnp.argmax(x))
    P("nan_propagation_max_min_sort", nan_propagation,
      [fixed([1.0, np.nan, -2.0, np.inf, 0.0]), fixed([np.nan, 3.0, -np.inf, 2.0, -0.0])], F, ())

    def safe_norm_grad(x):
        n = jnp.linalg.norm(x, axis=-1)
        safe = jnp.sqrt(jnp.maximum(jnp.sum(x * x, -1), 1e-30))
        return jnp.sum(n) + jnp.sum(safe)
    P("norm_at_zero_grad", safe_norm_grad, [fixed([[0.0, 0.0, 0.0], [3.0, 4.0, 0.0], [1e-20, 0.0, 0.0]])], F, AD)

    # ================================================================ integers and bits
    def xorshift_hash(seed):
        x = seed.astype(jnp.uint32)

        def body(i, x):
            x = x ^ (x << 13)
            x = x ^ (x >> 17)
            x = x ^ (x << 5)
            return x * jnp.uint32(0x9E3779B1)
        h = lax.fori_loop(0, 4, body, x)
        rot = (h << 7) | (h >> 25)
        return h, rot, (h >> 8).astype(jnp.float32) / (1 << 24)
    P("int_xorshift_hash_u32", xorshift_hash, [raw(np.array([0, 1, 12345, 2**31 - 1, -5, 99], np.int32))], ("i32",), VM)

    def uint8_image(img, delta):
        wrap = img + delta                                           # uint8 wraparound
        sat = jnp.clip(img.astype(jnp.int16) + delta.astype(jnp.int16), 0, 255).astype(jnp.uint8)
        mean = jnp.mean(img, axis=(0, 1))
        hi = img >> 4
        lo = img & jnp.uint8(0x0F)
        inv = ~img
        sub = img - delta                                            # wraps below 0
        avg = ((img.astype(jnp.uint16) + delta) // 2).astype(jnp.uint8)
        return wrap, sat, mean, hi | (lo << 4), inv, sub, avg
    P("uint8_image_arith", uint8_image,
      [ints((3, 4, 2), 0, 255, np.uint8), ints((2,), 100, 250, np.uint8)], ("u8",), VM)

    def int8_overflow(a, b):
        s = a + b
        p = a * b
        n = -a
        ab = jnp.abs(a)
        w = (a.astype(jnp.int32) * 300).astype(jnp.int8)
        return s, p, n, ab, w, jnp.sum(a), jnp.sum(a, dtype=jnp.int8)
    P("int8_overflow_wrap", int8_overflow,
      [raw(np.array([-128, -1, 0, 1, 127, 100, -100], np.int8)),
       raw(np.array([-1, -128, 5, 127, 127, 100, -100], np.int8))], ("i8",), VM)

    def int_division(a, b):
        return (a // b, a % b, lax.div(a, b), lax.rem(a, b), jnp.floor_divide(a, 3),
                jnp.remainder(a, -3), jnp.fmod(a, 3), jnp.divmod(a, b)[1])
    P("int_div_rem_signs", int_division,
      [raw(np.array([7, -7, 7, -7, 0, 13, -13, 2**31 - 1], np.int32)),
       raw(np.array([2, 2, -2, -2, 5, 4, -4, 3], np.int32))], ("i32",), VM)

    def int_div_zero(a, b):
        return lax.div(a, b), lax.rem(a, b), a // b, a % b
    P("int_div_by_zero_and_min", int_div_zero,
      [raw(np.array([5, -5, 0, -2**31, -2**31, 7], np.int32)),
       raw(np.array([0, 0, 0, -1, 0, 0], np.int32))], ("i32",), ())

    def shifts(x, s):
        return (lax.shift_left(x, s), lax.shift_right_arithmetic(x, s), lax.shift_right_logical(x, s),
                jnp.left_shift(x, 3), jnp.right_shift(x, 2), x.view(jnp.uint32) >> 31)
    P("int_shifts_wide", shifts,
      [raw(np.array([1, -1, 12345, -98765, 2**30, -2**31, 7, 3], np.int32)),
       raw(np.array([0, 1, 31, 32, 33, 40, -1, 5], np.int32))], ("i32",), VM)

    def bit_tricks(x):
        pc = lax.population_count(x)
        lz = lax.clz(x)
        lowbit = x & (-x)
        is_pow2 = (x > 0) & ((x & (x - 1)) == 0)
        parity = pc & 1
        return pc, lz, lowbit, is_pow2, parity, jnp.bitwise_count(x)
    P("int_popcount_clz_bits", bit_tricks,
      [raw(np.array([0, 1, 2, 3, 64, 255, -1, 2**31 - 1, -2**31, 96], np.int32))], ("i32",), VM)

    def u32_mulhi_mix(a, b):
        lo = a * b
        hi = lax.mul(a >> 16, b >> 16)
        return lo, hi, a + b, a - b, jnp.maximum(a, b), (a > b)
    P("u32_wraparound", u32_mulhi_mix,
      [raw(np.array([0, 1, 4294967295, 2147483648, 65536, 123456789], np.uint32)),
       raw(np.array([4294967295, 4294967295, 2, 2, 65536, 987654321], np.uint32))], ("u32",), VM)

    def bool_logic(a, b, x):
        cnt = jnp.count_nonzero(a, axis=1)
        anyb = jnp.any(a & ~b, axis=0)
        allb = jnp.all(a | b, where=x > 0)
        cs = jnp.cumsum(a, axis=1)
        xo = jnp.logical_xor(a, b).sum()
        sel = jnp.sum(jnp.where(a, x, 0))
        return cnt, anyb, allb, cs, xo, sel, jnp.mean(a), a.astype(jnp.int8) - b
    P("bool_logic_counts", bool_logic,
      [lambda r, d: r.integers(0, 2, (3, 4)).astype(bool), lambda r, d: r.integers(0, 2, (3, 4)).astype(bool),
       ints((3, 4), -3, 3)], ("i32",), VM)

    # ================================================================ dtype promotion
    def weak_promotion(xh, xb, i, u8, i8):
        a = xh * 2.0                   # f16 stays f16 (weak float)
        b = xb + 1                     # bf16 stays bf16
        c = i + 1.5                    # int32 + weak float -> f32
        d = u8 + 3                     # uint8 stays uint8 (wraps at 256)
        e = u8 + i8                    # uint8 + int8 -> int16
        f = xh + xb                    # f16 + bf16 -> f32
        g = i * 2 ** 20                # int32 wraps
        h = jnp.float32(1) + xh        # f32 (strong) + f16 -> f32
        return a, b, c, d, e, f, g, h, u8 * 2.5
    P("dtype_weak_type_promotion", weak_promotion,
      [raw(np.array([1.5, -2.25, 60000.0], np.float16)),
       lambda r, d: np.array([1.0, 3.140625, 256.0], dtype=jnp.bfloat16),
       raw(np.array([1, 2047, -3], np.int32)), raw(np.array([250, 3, 128], np.uint8)),
       raw(np.array([-128, 127, 5], np.int8))], ("mixed",), ())

    def x64_promotion(i, u, f):
        return i + u, u * 2, f * 2, i / 2, u.astype(jnp.int32) - 1, i + f, jnp.sum(u), jnp.mean(i)
    P("dtype_promotion_u32_i32", x64_promotion,
      [raw(np.array([-1, 2, 2**31 - 1], np.int32)), raw(np.array([4294967295, 2, 1], np.uint32)),
       raw(np.array([0.1, 2.5, -3.0], np.float32))], ("mixed",), ())
    P("dtype_promotion_u32_i32_x64", x64_promotion,
      [raw(np.array([-1, 2, 2**31 - 1], np.int32)), raw(np.array([4294967295, 2, 1], np.uint32)),
       raw(np.array([0.1, 2.5, -3.0], np.float32))], ("i64",), ())

    def f16_layernorm_softmax(x, g):
        x32 = x.astype(jnp.float32)
        mu = jnp.mean(x32, -1, keepdims=True)
        var = jnp.var(x32, -1, keepdims=True)
        y = ((x32 - mu) * lax.rsqrt(var + 1e-5)).astype(x.dtype) * g
        return jax.nn.softmax(y, axis=-1), jnp.exp(x), jnp.sum(x * x, -1)
    P("f16_layernorm_softmax", f16_layernorm_softmax, [U((3, 5), -4, 12), U((5,), 0.5, 2)], ("f16",), ("jvp", "vmap"))
    P("bf16_layernorm_softmax", f16_layernorm_softmax,
      [lambda r, d: r.uniform(-4, 12, (3, 5)).astype(jnp.bfloat16),
       lambda r, d: r.uniform(0.5, 2, (5,)).astype(jnp.bfloat16)], ("bf16",), ("vmap",))

    def bf16_matmul_f32_acc(a, b):
        c = jnp.matmul(a, b, preferred_element_type=jnp.float32)
        d = lax.dot_general(a, b, (((1,), (0,)), ((), ())))
        return c, d, a.astype(jnp.float32).sum(), jnp.sum(a, dtype=jnp.float32)
    P("bf16_matmul_preferred_f32", bf16_matmul_f32_acc,
      [lambda r, d: r.uniform(-2, 2, (4, 8)).astype(jnp.bfloat16),
       lambda r, d: r.uniform(-2, 2, (8, 3)).astype(jnp.bfloat16)], ("bf16",), ("vmap",))

    def f16_overflow(x):
        big = x * jnp.float16(1000.0)
        return big, jnp.exp(x), x.astype(jnp.float32) * 1e5, (x * 1e5).astype(jnp.float32), \
            jnp.float16(65504) + x, jnp.sum(big)
    P("f16_overflow_rounding", f16_overflow, [raw(np.array([0.1, 70.0, -80.0, 11.5, 1e-7, 6e-8], np.float16))], ("f16",), ())

    def convert_rounding(x):
        return (x.astype(jnp.int32), x.astype(jnp.uint8), x.astype(jnp.float16), x.astype(jnp.bfloat16),
                jnp.round(x), jnp.round(x, 1), jnp.rint(x), jnp.trunc(x), x.astype(jnp.int8), x.astype(bool))
    P("float_to_int_convert", convert_rounding,
      [fixed([0.5, 1.5, 2.5, -0.5, -1.5, 2.7, -2.7, 255.9, 300.0, -1.0, 0.0, 65519.0, 1e10, -1e10])], F, ())

    # ================================================================ reductions
    def masked_reductions(x, m):
        return (jnp.sum(x, axis=1, keepdims=True, where=m), jnp.max(x, axis=0, where=m, initial=-10.0),
                jnp.mean(x, axis=1, where=m), jnp.var(x, axis=0, ddof=1), jnp.std(x, axis=1, keepdims=True),
                jnp.argmax(x, axis=1, keepdims=True), jnp.prod(x, axis=0, where=m), jnp.min(x, axis=1, where=m, initial=5.0))
    P("reductions_keepdims_where", masked_reductions,
      [U((3, 4)), raw(np.array([[1, 0, 1, 1], [0, 0, 0, 0], [1, 1, 1, 0]], bool))], F, AD)

    def logsumexp_variants(x, b):
        a = jax.nn.logsumexp(x, axis=1, b=b)
        s, sgn = jax.scipy.special.logsumexp(x, axis=0, b=b - 0.5, return_sign=True)
        c = jax.nn.logsumexp(x, where=b > 0.3, axis=-1, keepdims=True)
        return a, s, sgn, c
    P("logsumexp_b_sign_where", logsumexp_variants, [U((3, 4)), U((3, 4), 0, 1)], F, AD)

    def norms(x):
        return (jnp.linalg.norm(x), jnp.linalg.norm(x, ord=1, axis=1), jnp.linalg.norm(x, ord=jnp.inf, axis=0),
                jnp.linalg.norm(x, ord=1), jnp.linalg.norm(x, ord=jnp.inf), jnp.linalg.norm(x, ord=3, axis=1),
                jnp.linalg.norm(x, ord=-jnp.inf, axis=1))
    P("vector_matrix_norms", norms, [U((3, 4))], F, AD)

    # ================================================================ sorting, cumulative
    def sort_ops(x, keys):
        desc = jnp.sort(x, axis=-1, descending=True)
        idx = jnp.argsort(keys, stable=True)
        idx_d = jnp.argsort(keys, descending=True, stable=True)
        lex = jnp.lexsort((x[0], keys))
        v, i = lax.top_k(x, 3)
        med = jnp.median(x, axis=1)
        q = jnp.quantile(x, 0.3, axis=1)
        return desc, idx, idx_d, lex, v, i, med, q, x[:, idx]
    P("sort_argsort_topk_ties", sort_ops,
      [fixed([[3.0, 1.0, 2.0, 1.0, 5.0], [0.0, -1.0, 0.0, 2.0, -1.0]]), raw(np.array([2, 1, 2, 0, 1], np.int32))],
      F, AD)

    def cumulative(x):
        return (jnp.cumsum(x, axis=1), jnp.cumprod(x, axis=0), lax.cummax(x, axis=1),
                lax.cummin(x, axis=0, reverse=True), lax.cumlogsumexp(x, axis=1),
                jnp.cumsum(x[:, ::-1], axis=1)[:, ::-1], jnp.diff(x, axis=1), jnp.cumulative_sum(x, axis=1, include_initial=True))
    P("cumulative_ops_ties_zero", cumulative,
      [fixed([[1.0, 3.0, 3.0, 0.0, -2.0], [2.0, 0.0, 2.0, 4.0, 4.0], [-1.0, -1.0, 0.5, 3.0, 0.0]])], F, AD)

    def running_max_drawdown(prices):
        peak = lax.cummax(prices)
        dd = (prices - peak) / peak
        return jnp.min(dd), jnp.sum(jnp.log(prices[1:] / prices[:-1]))
    P("running_max_drawdown", running_max_drawdown, [fixed([1.0, 1.2, 1.1, 1.3, 0.9, 1.0, 1.3, 1.25])], F, AD)

    # ================================================================ jax.nn
    def nn_zoo(x):
        return (jax.nn.celu(x), jax.nn.selu(x), jax.nn.elu(x, 0.5), jax.nn.hard_tanh(x), jax.nn.relu6(x),
                jax.nn.log_sigmoid(x), jax.nn.softplus(x), jax.nn.swish(x), jax.nn.mish(x),
                jax.nn.squareplus(x), jax.nn.sparse_plus(x), jax.nn.hard_sigmoid(x), jax.nn.hard_swish(x),
                jax.nn.glu(jnp.concatenate([x, x[::-1]])), jax.nn.relu(x), jax.nn.standardize(x),
                jax.nn.sparse_sigmoid(x))
    P("nn_activation_zoo_kinks", nn_zoo, [fixed([-3.0, -1.0, 0.0, 0.5, 1.0, 3.0, 6.0, -6.0, 20.0, -20.0])], F, AD)

    def nn_softmax_where(x, m):
        return jax.nn.softmax(x, where=m, axis=-1), jax.nn.log_softmax(x, axis=0), jax.nn.one_hot(jnp.argmax(x, 1), 4)
    P("nn_softmax_where_mask", nn_softmax_where, [U((3, 4)), raw(np.array([[1, 1, 0, 1], [1, 0, 0, 0], [1, 1, 1, 1]], bool))],
      F, AD)

    # ================================================================ checkpoint, custom rules
    def remat_mlp(w1, w2, w3, x):
        @functools.partial(jax.checkpoint, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)
        def layer(w, h):
            return jnp.sin(h @ w) * jnp.tanh(h)

        h = layer(w1, x)
        h = jax.checkpoint(layer)(w2, h)
        h = jax.checkpoint(lambda h: layer(w3, h), prevent_cse=False)(h)
        return jnp.sum(h ** 2)
    P("checkpoint_policies_mlp", remat_mlp, [U((3, 3), -1, 1), U((3, 3), -1, 1), U((3, 3), -1, 1), U((2, 3))], F, AD + ("vmap_grad",))

    @jax.custom_vjp
    def round_ste(x):
        return jnp.round(x)
    round_ste.defvjp(lambda x: (jnp.round(x), None), lambda _, g: (g,))

    @jax.custom_vjp
    def clip_gradient(x, lo, hi):
        return x
    clip_gradient.defvjp(lambda x, lo, hi: (x, (lo, hi)),
                         lambda res, g: (jnp.clip(g, res[0], res[1]), None, None))

    def quantized_net(w, x):
        wq = round_ste(w * 4.0) / 4.0
        h = clip_gradient(jnp.tanh(x @ wq), -0.1, 0.1)
        return jnp.sum(h ** 2) + jnp.sum(jnp.round(w))
    P("custom_vjp_ste_clip_grad", quantized_net, [U((3, 2), -1, 1), U((4, 3))], F, ("vjp", "vmap", "jacrev"))

    @jax.custom_jvp
    def safe_div(a, b):
        return jnp.where(b == 0, 0.0, a / jnp.where(b == 0, 1.0, b))

    @safe_div.defjvp
    def _sd_jvp(p, t):
        a, b = p
        ta, tb = t
        bs = jnp.where(b == 0, 1.0, b)
        out = safe_div(a, b)
        return out, jnp.where(b == 0, 0.0, ta / bs - out * tb / bs)

    def custom_jvp_div(a, b):
        return jnp.sum(safe_div(a, b) ** 2)
    P("custom_jvp_safe_div", custom_jvp_div, [U((5,)), fixed([1.0, 0.0, -2.0, 0.5, 0.0])], F, AD + ("hessian",))

    # ================================================================ nested transforms
    def per_example_grads_tree(w, b, xs, ys):
        def loss(p, x, y):
            return (jnp.tanh(x @ p["w"] + p["b"]) - y) ** 2
        g = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))({"w": w, "b": b}, xs, ys)
        norms = jnp.sqrt(jnp.sum(g["w"] ** 2, axis=1) + g["b"] ** 2)
        clipped = jax.tree_util.tree_map(lambda t: t / jnp.maximum(1.0, norms).reshape((-1,) + (1,) * (t.ndim - 1)), g)
        return jax.tree_util.tree_map(lambda t: t.mean(0), clipped)
    P("dp_sgd_per_example_clip", per_example_grads_tree, [U((3,)), U(()), U((5, 3)), U((5,))], F, ("jvp", "vmap"))

    def jac_nets(x, w):
        f = lambda x: jnp.tanh(w @ x) * x[::-1]
        jf = jax.jacfwd(f)(x)
        jr = jax.jacrev(f)(x)
        h = jax.hessian(lambda x: jnp.sum(f(x) ** 2))(x)
        return jf, jr, h, jnp.trace(h)
    P("jacfwd_jacrev_hessian_inside", jac_nets, [U((3,)), U((3, 3), -1, 1)], F, AD)

    def hutchinson_logdet(x, vs):
        f = lambda x: x + 0.1 * jnp.sin(x)[::-1] * jnp.cumsum(x)
        def one(v):
            _, jv = jax.jvp(f, (x,), (v,))
            return v @ jv
        return jnp.mean(jax.vmap(one)(vs))
    P("hutchinson_trace_vmap_jvp", hutchinson_logdet, [U((4,)), lambda r, d: np.sign(r.uniform(-1, 1, (6, 4))).astype(npd(d))],
      F, AD)

    def vmap_axes(W, xs):
        f = lambda w, x: jnp.tanh(w @ x)
        a = jax.vmap(f, in_axes=(None, 1), out_axes=1)(W, xs)
        b = jax.vmap(jax.vmap(lambda w, x: w * x, in_axes=(0, None)), in_axes=(None, 0))(W[0], xs.T)
        return a, b
    P("vmap_in_out_axes_nested", vmap_axes, [U((3, 4)), U((4, 5))], F, AD)

    # ================================================================ jit, static args, closures, control
    @functools.partial(jax.jit, static_argnames=("n", "mode"))
    def poly_features(x, n, mode):
        feats = [x ** k for k in range(1, n + 1)]
        if mode == "cos":
            feats = [jnp.cos(f) for f in feats]
        return jnp.stack(feats, -1)

    def static_args_prog(x, w):
        a = poly_features(x, 3, "id") @ w
        b = poly_features(x, 3, "cos") @ w
        return jnp.sum(a * b)
    P("jit_static_argnames", static_args_prog, [U((4,), -1, 1), U((3,), -1, 1)], F, AD)

    table = np.linspace(-1, 1, 12).reshape(4, 3)

    def closure_consts(x):
        T = jnp.asarray(table, x.dtype)

        @jax.jit
        def inner(y):
            return jnp.tanh(y @ T.T) + T[:, 0]
        return jnp.sum(inner(x) ** 2), inner(2 * x)
    P("closure_over_numpy_const", closure_consts, [U((2, 3))], F, AD)

    def switch_cond_pytree(i, x, y):
        branches = [lambda p: (p[0] + p[1], p[1]), lambda p: (p[0] * p[1], -p[1]),
                    lambda p: (jnp.sin(p[0]), p[1] ** 2)]
        a = lax.switch(i, branches, (x, y))                         # clamps out-of-range i
        b = lax.cond(jnp.sum(x) > 0, lambda p: {"u": p["u"] * 2}, lambda p: {"u": p["u"] - 1}, {"u": y})
        return a[0], a[1], b["u"]
    P("switch_clamp_cond_pytree", switch_cond_pytree, [raw(np.int32(5)), U((3,)), U((3,))], F, AD)
    P("switch_negative_index", switch_cond_pytree, [raw(np.int32(-3)), U((3,)), U((3,))], F1, AD)

    def while_pytree_count(x):
        def cond(s):
            return (s["i"] < 10) & (jnp.linalg.norm(s["x"]) > 0.1)

        def body(s):
            return {"x": s["x"] * 0.7 + 0.01 * jnp.sin(s["x"]), "i": s["i"] + 1, "hist": s["hist"].at[s["i"]].set(jnp.sum(s["x"]))}
        out = lax.while_loop(cond, body, {"x": x, "i": jnp.int32(0), "hist": jnp.full(10, -1.0, x.dtype)})
        return out["x"], out["i"], out["hist"]
    P("while_pytree_early_exit", while_pytree_count, [U((3,), -2, 2)], F, FWD)

    def einsum_chain(a, b, c):
        return jnp.einsum("ij,jk,kl->il", a, b, c), jnp.einsum("bij,bjk->bik", a[None] * c[:1, :1], b[None]), \
            jnp.einsum("ii->i", a @ a.T), jnp.einsum("ij,ij->", a, a)
    P("einsum_three_operand", einsum_chain, [U((3, 4)), U((4, 5)), U((5, 2))], F, AD)

    def conv_correlate(x, k):
        return jnp.convolve(x, k, mode="full"), jnp.correlate(x, k, mode="same"), jnp.convolve(x, k, mode="valid"), \
            jnp.polyval(k, x)
    P("jnp_convolve_correlate_polyval", conv_correlate, [U((7,)), U((3,))], F, AD)

    def clip_round_grad(x):
        return jnp.sum(jnp.clip(x, -1.0, 1.0) * 3 + jnp.floor(x) + jnp.abs(x) + jnp.maximum(x, 0.0) + jnp.sign(x) * x)
    P("clip_round_abs_grad_at_kinks", clip_round_grad, [fixed([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0])], F, AD + ("hessian",))

    def dropout_fixed_key(w, x):
        key = jax.random.PRNGKey(42)
        keep = jax.random.bernoulli(key, 0.75, x.shape)
        return jnp.sum(jnp.where(keep, x / 0.75, 0.0) @ w)
    P("dropout_prngkey_bernoulli", dropout_fixed_key, [U((3, 2)), U((4, 3))], F1, AD)

    def stft_energy(x):
        frames = jnp.stack([x[i:i + 4] for i in range(0, x.shape[0] - 3, 2)])
        win = jnp.hanning(4).astype(x.dtype)
        spec = jnp.fft.rfft(frames * win, axis=-1)
        return jnp.sum(jnp.abs(spec) ** 2)
    P("stft_power", stft_energy, [U((10,))], F, AD)

    def tree_flatten_ravel(w, b, s):
        from jax.flatten_util import ravel_pytree
        flat, unravel = ravel_pytree({"w": w, "b": b, "s": s})
        flat = flat * jnp.arange(flat.shape[0], dtype=flat.dtype)
        p = unravel(flat)
        return jnp.sum(p["w"] @ p["b"]) * p["s"], flat
    P("ravel_pytree_roundtrip", tree_flatten_ravel, [U((2, 3)), U((3,)), U(())], F, AD)

    # ================================================================ more: pooling, padding, scans
    def avgpool_padded(x):
        s = lax.reduce_window(x, 0.0, lax.add, (1, 3, 3), (1, 2, 2), ((0, 0), (1, 1), (1, 1)))
        c = lax.reduce_window(jnp.ones_like(x), 0.0, lax.add, (1, 3, 3), (1, 2, 2), ((0, 0), (1, 1), (1, 1)))
        m = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2), (1, 1, 1), "SAME")
        return jnp.sum((s / c) ** 2) + jnp.sum(m)
    P("pool_avg_exclude_pad_max_same", avgpool_padded, [U((2, 5, 5))], F, AD)

    def pad_modes(x):
        return (jnp.pad(x, ((1, 2), (2, 1)), mode="reflect"), jnp.pad(x, 2, mode="edge"),
                jnp.pad(x, ((0, 1), (1, 0)), mode="symmetric"), jnp.pad(x, 1, constant_values=-1.5),
                lax.pad(x, 0.0, ((1, -1, 1), (-1, 2, 0))))
    P("pad_modes_reflect_edge_negative", pad_modes, [U((3, 4))], F, AD)

    def linear_recurrence(a, b):
        # h_t = a_t * h_{t-1} + b_t by a parallel (associative) scan
        def comb(l, r):
            return r[0] * l[0], r[0] * l[1] + r[1]
        _, h = lax.associative_scan(comb, (a, b))
        def step(h, ab):
            h = ab[0] * h + ab[1]
            return h, h
        _, h2 = lax.scan(step, jnp.zeros_like(b[0]), (a, b), unroll=3)
        return h, h2
    P("linear_recurrence_associative_scan", linear_recurrence, [U((7, 2), 0.5, 1.0), U((7, 2))], F, AD)

    def dynamic_roll(x, k):
        return jnp.roll(x, k, axis=0), jnp.roll(x, -2 * k), jnp.rot90(x, 1), jnp.tril(x, -1) + jnp.triu(x, 2)
    P("roll_traced_shift_rot90_tril", dynamic_roll, [U((4, 5)), raw(np.int32(3))], F, AD)

    def multi_key_sort(k1, k2, v):
        a, b, c = lax.sort((k1, k2, v), num_keys=2)
        order = jnp.lexsort((k2, k1))
        return a, b, c, order, v[order]
    P("sort_two_keys_payload", multi_key_sort,
      [raw(np.array([2, 1, 2, 1, 0, 2], np.int32)), fixed([0.5, 0.5, -1.0, 0.5, 3.0, -1.0]), U((6,))], F, AD)

    def ties_grad(x):
        return jnp.max(x) + jnp.sum(jnp.max(x, axis=0)) + jnp.sum(jnp.min(x, axis=1)) + jnp.sum(jnp.sort(x.ravel())[::3])
    P("max_min_sort_ties_grad", ties_grad, [fixed([[1.0, 3.0, 3.0], [3.0, -1.0, -1.0], [0.0, 2.0, 3.0]])], F, AD)

    def argmax_nan(x):
        return jnp.argmax(x, axis=1), jnp.argmin(x, axis=0), jnp.max(x, axis=1), jnp.nanargmin(x, axis=1)
    P("argmax_with_nan_inf", argmax_nan,
      [fixed([[1.0, np.nan, 3.0, 3.0], [-np.inf, -np.inf, 0.0, np.nan], [2.0, 2.0, -0.0, 0.0]])], F, ())

    def int_pow_mean(x, e):
        return x ** 3, jnp.power(x, e), jnp.mean(x), jnp.cumsum(x.astype(jnp.int8)), jnp.sum(x * x, dtype=jnp.int16), \
            lax.integer_pow(x, 0), jnp.square(x), jnp.abs(x) ** 2
    P("int_pow_mean_cumsum_int8", int_pow_mean,
      [raw(np.array([-3, -1, 0, 2, 5, 100, 1291, -1291], np.int32)), raw(np.array([0, 3, 2, 1, 0, 2, 3, 3], np.int32))], ("i32",), VM)

    def select_piecewise(x, i):
        a = lax.select_n(i, x, -x, 2 * x)
        b = jnp.piecewise(x, [x < -1, (x >= -1) & (x < 1)], [lambda v: -v - 1, lambda v: v ** 2 / 2, lambda v: v - 0.5])
        c = jnp.select([x < 0, x > 1], [x ** 2, jnp.sqrt(x)], default=1.0)
        return jnp.sum(a) + jnp.sum(b * c)
    P("select_n_piecewise_select", select_piecewise, [fixed([-2.0, -0.5, 0.0, 0.5, 1.5, 3.0]), raw(np.array([0, 1, 2, 2, 1, 0], np.int32))], F, AD)

    def sdpa(q, k, v):
        o = jax.nn.dot_product_attention(q, k, v, is_causal=True)
        return jnp.sum(o ** 2)
    P("nn_dot_product_attention_causal", sdpa, [U((2, 5, 2, 4)), U((2, 5, 2, 4)), U((2, 5, 2, 4))], F1, AD)

    def vmap_scatter_batched_idx(x, idx, v):
        return jax.vmap(lambda x, i, v: x.at[i].add(v).at[i[0]].multiply(2.0))(x, idx, v)
    P("vmap_scatter_batched_indices", vmap_scatter_batched_idx,
      [U((3, 5)), raw(np.array([[0, 0, 4], [1, 3, 1], [4, 4, 4]], np.int32)), U((3, 3))], F, AD)

    def lax_map_grad(W, xs):
        return jnp.sum(lax.map(lambda x: jnp.tanh(W @ x) ** 2, xs))
    P("lax_map_body", lax_map_grad, [U((3, 3), -1, 1), U((4, 3))], F, AD)

    def lr_schedule_cond(step, g, p):
        lr = lax.cond(step < 5, lambda s: 0.1 * (s + 1) / 5, lambda s: 0.1 * 0.5 ** ((s - 5) // 10), step.astype(p.dtype))
        lr2 = jnp.where(step < 5, 1.0, jnp.cos(step.astype(p.dtype) / 100.0))
        return p - lr * lr2 * g
    P("lr_schedule_cond_int_step", lr_schedule_cond, [raw(np.int32(27)), U((4,)), U((4,))], F, AD)

    def split_stack_shapes(x):
        a, b, c = jnp.split(x, [1, 3], axis=1)
        parts = jnp.array_split(x, 3, axis=0)
        y = jnp.stack([a[:, 0], c[:, 0]], axis=-1)
        z = jnp.concatenate([p.sum(0, keepdims=True) for p in parts])
        return y, z, jnp.expand_dims(b, 0).squeeze(0).T.reshape(-1), jnp.moveaxis(x[None], 0, -1)
    P("split_stack_moveaxis", split_stack_shapes, [U((5, 4))], F, AD)

    def reduce_precision_chain(x):
        y = lax.reduce_precision(x, exponent_bits=5, mantissa_bits=10)
        z = lax.reduce_precision(x * 1e3, exponent_bits=8, mantissa_bits=7)
        return y, z, y.astype(jnp.float16).astype(x.dtype) - y
    P("reduce_precision_f16_bf16", reduce_precision_chain, [fixed([0.1, 1 / 3, 65519.0, 65520.0, 1e-8, -2.5e-5, 3.14159265])], F, ())

    # ================================================================ more: low precision accumulation
    def f16_long_reductions(x):
        return (jnp.sum(x), jnp.mean(x, axis=0), jnp.var(x, axis=1), jnp.cumsum(x, axis=1)[:, -1],
                jnp.max(x), jnp.prod(x[:2, :8] * 0.5 + 1, axis=1), jax.nn.logsumexp(x, axis=1), jnp.std(x))
    P("lowp_long_reductions", f16_long_reductions, [U((6, 200), 0, 4)], ("f16", "bf16"), ("vmap",))

    def lowp_matmul_conv(a, b, w, x):
        c = a @ b
        d = jnp.einsum("ij,kj->ik", a, a)
        y = lax.conv_general_dilated(x, w, (1,), "SAME")
        return c, d, y
    P("lowp_matmul_conv", lowp_matmul_conv, [U((5, 64), -1, 1), U((64, 3), -1, 1), U((2, 3, 5), -1, 1), U((1, 3, 40), -1, 1)],
      ("f16", "bf16"), ("vmap",))

    def lowp_softmax_xent(logits, labels):
        lp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.mean(jnp.take_along_axis(lp, labels[:, None], axis=-1)), jax.nn.softmax(logits, axis=-1)
    P("lowp_softmax_xent", lowp_softmax_xent, [U((4, 100), -8, 8), ints((4,), 0, 99)], ("f16", "bf16"), ("vmap",))

    def int_matmul(a, b):
        return (jnp.matmul(a, b, preferred_element_type=jnp.int32), lax.dot(a.astype(jnp.int32) * 1000, b.astype(jnp.int32) * 1000),
                jnp.sum(a, dtype=jnp.int8), jnp.einsum("ij->j", a.astype(jnp.int16)))
    P("int8_matmul_accumulate", int_matmul, [ints((4, 40), -128, 127, np.int8), ints((40, 3), -128, 127, np.int8)], ("i8",), VM)

    def f32_long_sum(x):
        return jnp.sum(x), jnp.sum(x ** 2) - jnp.sum(x) ** 2 / x.size, jnp.cumsum(x)[-1], jnp.prod(1 + x * 1e-3), jnp.mean(x, where=x > 0)
    P("f32_long_sum_cancellation", f32_long_sum, [U((5000,), 999, 1001)], F1, ("jvp", "vjp"))

    # ================================================================ more: indexing shapes
    def indexing_shapes(x, i, j):
        a = x[:, i, ::2]                     # advanced index between slices
        b = x[i, :, j]                       # advanced indices split by a slice: batch axis first
        c = x[..., None, j]
        d = x[::-1, 1:, -1]
        e = x[np.array([True, False, True])]
        f = jnp.take_along_axis(x, jnp.broadcast_to(j[None, None, :1] - 4, (3, 4, 1)), axis=2)
        return jnp.sum(a) + jnp.sum(b ** 2) + jnp.sum(c * 3) + jnp.sum(d * e[0, :3, :1]) + jnp.sum(f)
    P("indexing_mixed_advanced_slices", indexing_shapes,
      [U((3, 4, 5)), raw(np.array([3, 0, 3], np.int32)), raw(np.array([4, 1, 1], np.int32))], F, AD)

    def scatter_2d(x, i, j, v):
        a = x.at[:, i].set(v[:, :3] * 2)
        b = x.at[i, j].add(v[0, :3])
        c = x.at[::2].multiply(0.5)
        d = x.at[::-1, 1].set(-1.0)
        e = x.at[i[:, None], j[None, :]].max(v[:3, :3])
        return jnp.sum(a ** 2) + jnp.sum(b * c) + jnp.sum(d) + jnp.sum(e)
    P("scatter_2d_slices_broadcast", scatter_2d,
      [U((4, 5)), raw(np.array([1, 1, 3], np.int32)), raw(np.array([0, 4, 0], np.int32)), U((4, 5))], F, AD)

    def nan_to_int(x):
        return x.astype(jnp.int32), x.astype(jnp.uint32), x.astype(jnp.int8), x.astype(jnp.uint16), jnp.nan_to_num(x).astype(jnp.int32)
    P("float_specials_to_int", nan_to_int, [fixed([np.nan, np.inf, -np.inf, -1.0, -0.5, 4294967295.0, 4294967296.0, -2147483649.0, 65535.5, -129.0])], F, ())

    def int64_ops(a, b):
        return a * b, a + b, a // (b | 1), lax.shift_right_logical(a, 60), a.astype(jnp.float32), a.astype(jnp.float64), \
            jnp.abs(a), jnp.sign(a), jnp.cumsum(a), a.astype(jnp.int32)
    P("int64_wrap_convert", int64_ops,
      [raw(np.array([2**62, -2**63, 2**53 + 1, -7, 9007199254740993, 123456789012345], np.int64)),
       raw(np.array([4, -1, 3, 2, 1, -1000], np.int64))], ("i64",), VM)

    # ================================================================ more: nesting
    def nested_control(x, n):
        def inner_scan(c, t):
            c = lax.cond(t % 2 == 0, lambda c: c * 0.9 + jnp.sin(c), lambda c: c - 0.1 * c ** 2, c)
            return c, jnp.sum(c)
        def body(i, s):
            c, acc = s
            c, ys = lax.scan(inner_scan, c, jnp.arange(3) + i)
            return c, acc + jnp.sum(ys)
        c, acc = lax.fori_loop(0, n, body, (x, jnp.zeros((), x.dtype)))
        return jnp.sum(c) + acc
    P("nested_fori_scan_cond", lambda x: nested_control(x, 3), [U((3,), -1, 1)], F, AD + ("hessian",))

    def vmap_while_batched_trip(x0):
        def collatz_like(x):
            def cond(s):
                return (s[0] > 1.0) & (s[1] < 40)
            def body(s):
                v, k = s
                return jnp.where(jnp.floor(v) % 2 == 0, v / 2, 3 * v + 1), k + 1
            return lax.while_loop(cond, body, (x, 0))
        return jax.vmap(collatz_like)(jnp.floor(x0))
    P("vmap_while_batched_trip_counts", vmap_while_batched_trip, [U((5,), 2, 30)], F, VM)

    # ================================================================ more: generic reductions, numpy helpers
    def generic_reduce(x):
        # lax.reduce with a computation that is not a known monoid, and two operands
        a = lax.reduce(x, np.float32(0).astype(x.dtype), lambda u, v: jnp.maximum(u, v) + 0.0 * v, (1,))
        v, i = lax.reduce((x, lax.broadcasted_iota(jnp.int32, x.shape, 1)), (jnp.asarray(-jnp.inf, x.dtype), jnp.int32(0)),
                          lambda p, q: (jnp.where(p[0] >= q[0], p[0], q[0]), jnp.where(p[0] >= q[0], p[1], q[1])), (1,))
        w = lax.reduce_window(x, np.asarray(1, x.dtype), lambda u, v: u * v, (2, 2), (1, 1), "VALID")
        return a, v, i, w
    P("lax_reduce_custom_computation", generic_reduce, [U((3, 4), 0.5, 2)], F, ("vmap",))

    def numpy_helpers(x, idx):
        bc = jnp.bincount(idx, weights=jnp.concatenate([x[0], x[1, :1]]), length=6)
        ur = jnp.unravel_index(idx, (2, 3))
        rm = jnp.ravel_multi_index((idx % 2, idx % 3), (2, 3), mode="clip")
        g1, g2 = jnp.meshgrid(x[0, :3], x[1, :2], indexing="ij")
        k = jnp.kron(x[:2, :2], jnp.eye(2, dtype=x.dtype))
        fd = jnp.fill_diagonal(x[:, :3], -1.0, inplace=False)
        rp = jnp.repeat(x[0, :3], jnp.array([2, 0, 3]), total_repeat_length=5)
        cr = jnp.cross(x[0, :3], x[1, :3])
        return bc, ur[0], ur[1], rm, g1 * g2, k, fd, rp, cr, jnp.trace(x), jnp.tensordot(x, x, axes=([1], [1]))
    P("numpy_helpers_bincount_kron_repeat", numpy_helpers, [U((3, 4)), raw(np.array([0, 5, 5, 2, 1], np.int32))], F, AD)

    def custom_pytree_stopgrad(w, b, x, y):
        from collections import namedtuple
        Params = namedtuple("Params", ["w", "b"])
        p = Params(w, b)
        target = jax.lax.stop_gradient(jnp.tanh(x @ p.w + p.b))
        pred = x @ p.w + p.b
        loss = jnp.mean((pred - y) ** 2) + 0.1 * jnp.mean((pred - target) ** 2)
        g = jax.grad(lambda q: jnp.sum((x @ q.w + q.b - y) ** 2))(p)
        return loss + jnp.sum(g.w) * 0.01 + jnp.sum(g.b) * 0.01
    P("namedtuple_params_stop_gradient", custom_pytree_stopgrad, [U((3, 2)), U((2,)), U((4, 3)), U((4, 2))], F, AD)

    def custom_gradient_fn(x):
        @jax.custom_gradient
        def clipped_log(v):
            return jnp.log(v), lambda g: (g / jnp.maximum(v, 0.1),)
        return jnp.sum(clipped_log(x) * x)
    P("custom_gradient_decorator", custom_gradient_fn, [U((5,), 0.01, 2)], F, ("vjp", "vmap"))

    def vectorize_sig(a, b):
        f = jnp.vectorize(lambda u, v: jnp.dot(u, v) / (jnp.linalg.norm(u) * jnp.linalg.norm(v)), signature="(n),(n)->()")
        return f(a, b)
    P("vectorize_signature_cosine", vectorize_sig, [U((2, 3, 4)), U((3, 4))], F, AD)

    def fori_dynamic(x, n):
        return lax.fori_loop(0, n, lambda i, c: c * 0.5 + jnp.sin(c + i), x)
    P("fori_loop_traced_trip_count", fori_dynamic, [U((3,)), raw(np.int32(4))], F, FWD)

    def scan_unroll_full(x):
        def step(c, _):
            c = jnp.tanh(c @ jnp.array([[0.5, -0.3], [0.2, 0.9]], x.dtype))
            return c, c.sum()
        a = lax.scan(step, x, None, length=5, unroll=True)
        b = lax.scan(step, x, None, length=5, reverse=True, unroll=2)
        return a, b
    P("scan_unroll_true_reverse", scan_unroll_full, [U((2,))], F, AD)

    def named_calls(x):
        @functools.partial(jax.named_call, name="my_block")
        def block(v):
            with jax.named_scope("inner"):
                return jnp.sin(v) * 2
        return jnp.sum(block(x) ** 2)
    P("named_call_scope", named_calls, [U((4,))], F, AD)

    def top_k_rows(x):
        v, i = lax.top_k(x, 2)
        v2, i2 = lax.top_k(-x.T, 1)
        return jnp.sum(v * jnp.arange(2, dtype=x.dtype)), i, v2, i2
    P("top_k_rows_ties", top_k_rows, [fixed([[1.0, 3.0, 3.0, 2.0], [0.0, 0.0, 0.0, 0.0], [-1.0, 5.0, 2.0, 5.0]])], F, AD)
