"""Held-out whole programs, second wave, for gen_heldout.py --wave2
(fixtures/heldout2/, family `heldout2`): written by someone who did not
build the features they run, as users write them, in the areas the first
wave (heldout_programs.py) covers thinly: jax.random inside training steps
(dropout, initializers, reparameterised VAEs, Monte Carlo and score-function
estimators, permutation minibatching, Langevin/HMC/SDE noise, gamma and
Dirichlet samples), linear algebra in models (a Gaussian process with
cholesky and gradients wrt its hyperparameters, a Kalman filter with solve,
Newton and Levenberg-Marquardt steps, lstsq/pinv/QR least squares, PCA by
svd and eigh, orthogonal init, expm, slogdet), shard_map data-parallel
losses with psum/pmean/pmax/ppermute and their gradients, jax.checkpoint
with policies, custom_jvp/custom_vjp models, scan/while/fori/cond/switch
with grad and vmap (GRU, neural ODE, bouncing ball, bisection, implicit
Newton), jnp.fft, jax.nn, jax.scipy.special/stats in likelihoods,
f16/bf16/int mixes (loss scaling, quantisation, bf16 attention), pytrees and
nested transforms (Hessian-vector products, per-example gradients, MAML,
linearize/linear_transpose, Gauss-Newton).

register(P, U) as heldout_programs.register: P(name, fn, makers, dtypes, tf)
is gen_sweep.S bound to the heldout2 family; U(shape, lo, hi) a seeded
float input of the case's dtype. shard_map programs run on a 4-device CPU
mesh (gen_heldout.py --wave2 sets XLA_FLAGS)."""

import functools

import numpy as np

from heldout_programs import fixed, ints, raw

F = ("f32", "f64")
F1 = ("f32",)
AD = ("jvp", "vjp", "vmap")      # vjp becomes grad for a scalar output
FWD = ("jvp", "vmap")
VM = ("vmap",)


def key(seed):
    """A raw threefry key (uint32[2]) as jax.random.PRNGKey(seed) makes it."""
    return raw(np.array([0, seed], np.uint32))


def spd(n, jitter=0.5):
    """A seeded symmetric positive definite matrix of the case's dtype."""
    def mk(r, d):
        a = r.uniform(-1, 1, (n, n))
        m = a @ a.T + jitter * np.eye(n)
        return m.astype({"f64": np.float64}.get(d, np.float32))
    return mk


def register(P, U):
    import jax
    import jax.numpy as jnp
    import jax.scipy as jsp
    from jax import lax

    # ============================================================ jax.random in training
    def mlp_dropout_step(w1, w2, x, y, k):
        def loss(ps, k):
            k1, k2 = jax.random.split(k)
            h = jax.nn.relu(x @ ps[0])
            keep = jax.random.bernoulli(k1, 0.8, h.shape)
            h = jnp.where(keep, h / 0.8, 0.0)
            out = h @ ps[1]
            keep2 = jax.random.bernoulli(k2, 0.9, out.shape)
            out = jnp.where(keep2, out / 0.9, 0.0)
            return jnp.mean((out - y) ** 2)
        l, g = jax.value_and_grad(loss)((w1, w2), k)
        new = jax.tree_util.tree_map(lambda p, gg: p - 0.05 * gg, (w1, w2), g)
        return l, new[0], new[1], loss(new, jax.random.fold_in(k, 1))
    P("random_mlp_dropout_train_step", mlp_dropout_step,
      [U((4, 6), -0.5, 0.5), U((6, 2), -0.5, 0.5), U((5, 4)), U((5, 2)), key(7)], F, AD)

    def glorot_from_seed(seed, x):
        k = jax.random.key(seed)
        k1, k2 = jax.random.split(k)
        w1 = jax.nn.initializers.glorot_uniform()(k1, (3, 5), x.dtype)
        w2 = jax.nn.initializers.he_normal()(k2, (5, 2), x.dtype)
        b = jax.nn.initializers.normal(0.1)(jax.random.fold_in(k, 3), (2,), x.dtype)
        return jnp.tanh(x @ w1) @ w2 + b
    P("random_init_typed_key_from_seed", glorot_from_seed, [raw(np.int32(1234)), U((4, 3))], F, AD)

    def vae_reparam(we, wmu, wlv, wd, x, k):
        h = jnp.tanh(x @ we)
        mu, logvar = h @ wmu, h @ wlv
        eps = jax.random.normal(k, mu.shape, x.dtype)
        z = mu + jnp.exp(0.5 * logvar) * eps
        recon = jax.nn.sigmoid(z @ wd)
        bce = -jnp.sum(x * jnp.log(recon + 1e-7) + (1 - x) * jnp.log(1 - recon + 1e-7))
        kl = -0.5 * jnp.sum(1 + logvar - mu ** 2 - jnp.exp(logvar))
        return (bce + kl) / x.shape[0]
    P("random_vae_reparam_normal", vae_reparam,
      [U((6, 4), -0.5, 0.5), U((4, 2), -0.5, 0.5), U((4, 2), -0.5, 0.5), U((2, 6), -0.5, 0.5),
       U((3, 6), 0, 1), key(3)], F, AD)

    def mc_pathwise(mu, log_sigma, k):
        eps = jax.random.normal(k, (256,) + mu.shape, mu.dtype)
        z = mu + jnp.exp(log_sigma) * eps
        f = jnp.sin(z) ** 2 + 0.1 * z ** 3
        return jnp.mean(jnp.sum(f, axis=-1))
    P("random_mc_pathwise_estimator", mc_pathwise, [U((3,), -1, 1), U((3,), -1, 0), key(11)], F, AD)

    def score_function(logits, k):
        a = jax.random.categorical(k, logits, shape=(64,))
        logp = jax.nn.log_softmax(logits)[a]
        reward = jnp.array([1.0, -0.5, 2.0, 0.3], logits.dtype)[a]
        baseline = jnp.mean(reward)
        return jnp.mean(lax.stop_gradient(reward - baseline) * logp)
    P("random_score_function_categorical", score_function, [U((4,), -1, 1), key(5)], F, AD)

    def perm_minibatch_epoch(w, b, X, Y, k):
        n = X.shape[0]
        perm = jax.random.permutation(k, n)
        Xb = X[perm].reshape(4, n // 4, X.shape[1])
        Yb = Y[perm].reshape(4, n // 4)

        def step(p, batch):
            xb, yb = batch
            def loss(p):
                logits = xb @ p[0] + p[1]
                return jnp.mean(jax.nn.softplus(logits) - yb * logits)
            l, g = jax.value_and_grad(loss)(p)
            return (p[0] - 0.5 * g[0], p[1] - 0.5 * g[1]), l
        (w, b), ls = lax.scan(step, (w, b), (Xb, Yb))
        return w, b, ls
    P("random_permutation_minibatch_epoch", perm_minibatch_epoch,
      [U((3,), -0.5, 0.5), U((), -0.1, 0.1), U((12, 3)), lambda r, d: (r.uniform(size=12) > 0.5).astype(np.float32 if d == "f32" else np.float64),
       key(21)], F, AD)

    def langevin(x0, k):
        def grad_u(x):
            return jax.grad(lambda x: jnp.sum(0.5 * x ** 2 + 0.25 * x ** 4))(x)

        def body(i, x):
            noise = jax.random.normal(jax.random.fold_in(k, i), x.shape, x.dtype)
            return x - 0.01 * grad_u(x) + jnp.sqrt(0.02) * noise
        return lax.fori_loop(0, 20, body, x0)
    P("random_langevin_fold_in_fori", langevin, [U((4,)), key(9)], F, AD)

    def gumbel_softmax(logits, w, k):
        g = jax.random.gumbel(k, logits.shape, logits.dtype)
        y = jax.nn.softmax((logits + g) / 0.5, axis=-1)
        hard = jax.nn.one_hot(jnp.argmax(y, -1), logits.shape[-1], dtype=y.dtype)
        st = hard - lax.stop_gradient(y) + y
        return jnp.sum((st @ w) ** 2)
    P("random_gumbel_softmax_straight_through", gumbel_softmax, [U((3, 4)), U((4, 2)), key(13)], F, AD)

    def trunc_normal_layer(x, k):
        w = jax.random.truncated_normal(k, -2.0, 2.0, (3, 4), x.dtype) * 0.5
        b = jax.random.uniform(jax.random.fold_in(k, 7), (4,), x.dtype, minval=-0.1, maxval=0.1)
        return jnp.sum(jax.nn.gelu(x @ w + b))
    P("random_truncated_normal_uniform_init", trunc_normal_layer, [U((5, 3)), key(17)], F, AD)

    def augment(img, w, k):
        k1, k2, k3 = jax.random.split(k, 3)
        oy, ox = jax.random.randint(k1, (2,), 0, 3)
        crop = lax.dynamic_slice(img, (oy, ox), (4, 4))
        flip = jax.random.bernoulli(k2)
        crop = jnp.where(flip, crop[:, ::-1], crop)
        crop = crop + 0.05 * jax.random.normal(k3, crop.shape, crop.dtype)
        return jnp.sum(jnp.tanh(crop.reshape(-1) @ w))
    P("random_augment_crop_flip_noise", augment, [U((6, 6)), U((16, 3), -0.3, 0.3), key(23)], F, AD)

    def per_example_noise(x, w, k):
        ks = jax.random.split(k, x.shape[0])
        def one(xi, ki):
            return jnp.sum(jnp.tanh(xi @ w + 0.1 * jax.random.normal(ki, (w.shape[1],), xi.dtype)))
        return jnp.mean(jax.vmap(one)(x, ks))
    P("random_split_keys_vmap_noise", per_example_noise, [U((5, 3)), U((3, 4)), key(29)], F, AD)

    def weighted_choice(p, x, k):
        idx = jax.random.choice(k, 6, shape=(3,), replace=False, p=jax.nn.softmax(p))
        idx2 = jax.random.choice(jax.random.fold_in(k, 1), 6, shape=(5,), replace=True)
        return x[idx], jnp.sum(x[idx2] * p[idx2]), idx
    P("random_choice_weighted_no_replace", weighted_choice, [U((6,)), U((6,)), key(31)], F, AD)

    def bits_and_ints(k):
        a = jax.random.bits(k, (6,), jnp.uint32)
        b = jax.random.randint(jax.random.fold_in(k, 1), (6,), -5, 9)
        c = jax.random.randint(jax.random.fold_in(k, 2), (4,), 0, 256, dtype=jnp.uint8)
        d = jax.random.permutation(jax.random.fold_in(k, 3), jnp.arange(7))
        e = jax.random.bits(jax.random.fold_in(k, 4), (3,), jnp.uint8)
        return a, b, c, d, e
    P("random_bits_randint_permutation_ints", bits_and_ints, [key(37)], ("u32",), VM)

    def gamma_dirichlet(alpha, conc, k):
        k1, k2 = jax.random.split(k)
        g = jax.random.gamma(k1, alpha, (4,) + alpha.shape, alpha.dtype)
        d = jax.random.dirichlet(k2, conc, (3,), conc.dtype)
        return jnp.sum(jnp.log(g) * alpha) + jnp.sum(d * jnp.arange(conc.shape[0], dtype=conc.dtype))
    P("random_gamma_dirichlet_implicit_grad", gamma_dirichlet, [U((3,), 0.8, 3.0), U((4,), 0.5, 2.0), key(41)], F1, AD)

    def poisson_counts(rate, k):
        c = jax.random.poisson(k, rate, (5,) + rate.shape)
        return c, jnp.mean(c.astype(rate.dtype), 0) - rate
    P("random_poisson_counts", poisson_counts, [U((3,), 0.5, 20.0), key(43)], F1, VM)

    def mvn_sample_loss(mean, a, k):
        cov = a @ a.T + 0.5 * jnp.eye(3, dtype=a.dtype)
        z = jax.random.multivariate_normal(k, mean, cov, (8,), method="cholesky")
        return jnp.mean(jnp.sum(z ** 2, -1))
    P("random_multivariate_normal_cholesky", mvn_sample_loss, [U((3,)), U((3, 3), -1, 1), key(47)], F, AD)

    # ============================================================ linear algebra in models
    def rbf(X1, X2, ls, sf):
        d2 = jnp.sum((X1[:, None, :] - X2[None, :, :]) ** 2, -1)
        return sf ** 2 * jnp.exp(-0.5 * d2 / ls ** 2)

    def gp_nll(log_ls, log_sf, log_sn, X, y):
        ls, sf, sn = jnp.exp(log_ls), jnp.exp(log_sf), jnp.exp(log_sn)
        n = X.shape[0]
        K = rbf(X, X, ls, sf) + (sn ** 2 + 1e-6) * jnp.eye(n, dtype=X.dtype)
        L = jnp.linalg.cholesky(K)
        alpha = jsp.linalg.cho_solve((L, True), y)
        return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(L))) + 0.5 * n * jnp.log(2 * jnp.pi)
    P("linalg_gp_nll_cholesky_hypergrad", gp_nll,
      [fixed(0.2), fixed(0.1), fixed(-1.0), U((7, 2), -2, 2), U((7,), -1, 1)], F, AD)

    def gp_hyper_adam(log_ls, log_sf, X, y):
        def step(c, i):
            p, m, v = c
            g = jax.grad(lambda p: gp_nll(p[0], p[1], jnp.log(0.3).astype(X.dtype), X, y))(p)
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            t = (i + 1).astype(X.dtype)
            p = p - 0.05 * (m / (1 - 0.9 ** t)) / (jnp.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
            return (p, m, v), p
        p0 = jnp.stack([log_ls, log_sf])
        (p, _, _), path = lax.scan(step, (p0, jnp.zeros_like(p0), jnp.zeros_like(p0)), jnp.arange(5))
        return p, path
    P("linalg_gp_hyperparam_adam_scan", gp_hyper_adam, [fixed(0.0), fixed(0.0), U((6, 1), -2, 2), U((6,), -1, 1)], F, FWD)

    def gp_predict(log_ls, X, y, Xs):
        ls = jnp.exp(log_ls)
        K = rbf(X, X, ls, 1.0) + 0.01 * jnp.eye(X.shape[0], dtype=X.dtype)
        Ks = rbf(Xs, X, ls, 1.0)
        L = jnp.linalg.cholesky(K)
        v = jsp.linalg.solve_triangular(L, Ks.T, lower=True)
        a = jsp.linalg.solve_triangular(L.T, jsp.linalg.solve_triangular(L, y, lower=True), lower=False)
        mean = Ks @ a
        var = 1.0 - jnp.sum(v ** 2, 0)
        return mean, var
    P("linalg_gp_predict_solve_triangular", gp_predict, [fixed(-0.3), U((6, 1), -2, 2), U((6,)), U((3, 1), -2, 2)], F, AD)

    def kalman_filter(A, Q, H, R, ys):
        n = A.shape[0]

        def step(c, y):
            m, P_, ll = c
            m = A @ m
            P_ = A @ P_ @ A.T + Q
            S = H @ P_ @ H.T + R
            K = jnp.linalg.solve(S, H @ P_).T
            r = y - H @ m
            m = m + K @ r
            P_ = (jnp.eye(n, dtype=A.dtype) - K @ H) @ P_
            sign, logdet = jnp.linalg.slogdet(S)
            ll = ll - 0.5 * (r @ jnp.linalg.solve(S, r) + logdet + r.shape[0] * jnp.log(2 * jnp.pi))
            return (m, P_, ll), m
        (m, P_, ll), ms = lax.scan(step, (jnp.zeros(n, A.dtype), jnp.eye(n, dtype=A.dtype), jnp.zeros((), A.dtype)), ys)
        return ll, ms
    P("linalg_kalman_filter_solve_slogdet", kalman_filter,
      [fixed([[1.0, 0.1], [0.0, 0.95]]), fixed([[0.01, 0.0], [0.0, 0.02]]), fixed([[1.0, 0.0], [0.3, 1.0]]),
       fixed([[0.2, 0.05], [0.05, 0.3]]), U((6, 2))], F, AD)

    def newton_logreg(w0, X, y):
        def nll(w):
            z = X @ w
            return jnp.sum(jax.nn.softplus(z) - y * z) + 0.5 * jnp.sum(w ** 2)

        def body(i, w):
            g = jax.grad(nll)(w)
            Hm = jax.hessian(nll)(w)
            return w - jnp.linalg.solve(Hm, g)
        w = lax.fori_loop(0, 4, body, w0)
        return w, nll(w)
    P("linalg_newton_logreg_hessian_solve", newton_logreg,
      [U((3,), -0.1, 0.1), U((10, 3)), lambda r, d: (r.uniform(size=10) > 0.5).astype(np.float32 if d == "f32" else np.float64)], F, AD)

    def levenberg_marquardt(p0, t, yobs):
        def resid(p):
            return p[0] * jnp.exp(-p[1] * t) + p[2] - yobs

        def body(i, c):
            p, lam = c
            r = resid(p)
            J = jax.jacfwd(resid)(p)
            A = J.T @ J + lam * jnp.diag(jnp.diag(J.T @ J))
            dp = jnp.linalg.solve(A, -J.T @ r)
            better = jnp.sum(resid(p + dp) ** 2) < jnp.sum(r ** 2)
            p = jnp.where(better, p + dp, p)
            lam = jnp.where(better, lam * 0.5, lam * 3.0)
            return p, lam
        p, lam = lax.fori_loop(0, 6, body, (p0, jnp.asarray(1e-2, p0.dtype)))
        return p, lam, jnp.sum(resid(p) ** 2)
    P("linalg_levenberg_marquardt_jacfwd", levenberg_marquardt,
      [fixed([1.0, 0.5, 0.0]), lambda r, d: np.linspace(0, 3, 9).astype(np.float32 if d == "f32" else np.float64),
       lambda r, d: (2.0 * np.exp(-1.3 * np.linspace(0, 3, 9)) + 0.5 + 0.01 * r.standard_normal(9)).astype(np.float32 if d == "f32" else np.float64)],
      F, FWD)

    def lstsq_fit(A, b):
        x, res, rank, sv = jnp.linalg.lstsq(A, b)
        return x, jnp.sum((A @ x - b) ** 2), sv
    P("linalg_lstsq_polyfit", lstsq_fit, [U((8, 3)), U((8,))], F, AD)

    def pinv_ridge(A, b, lam):
        x1 = jnp.linalg.pinv(A) @ b
        x2 = jnp.linalg.solve(A.T @ A + lam * jnp.eye(A.shape[1], dtype=A.dtype), A.T @ b)
        return jnp.sum(x1 ** 2) + jnp.sum(x2 * x1)
    P("linalg_pinv_vs_ridge_solve", pinv_ridge, [U((7, 3)), U((7,)), fixed(0.1)], F, AD)

    def pca_svd(X):
        Xc = X - X.mean(0)
        U_, s, Vt = jnp.linalg.svd(Xc, full_matrices=False)
        Z = Xc @ Vt[:2].T
        recon = Z @ Vt[:2]
        return jnp.mean((Xc - recon) ** 2), s ** 2 / (X.shape[0] - 1)
    P("linalg_pca_svd_reconstruction", pca_svd, [U((9, 4))], F, AD)

    def pca_eigh(X):
        Xc = X - X.mean(0)
        C = Xc.T @ Xc / (X.shape[0] - 1)
        evals, evecs = jnp.linalg.eigh(C)
        top = evecs[:, -1]
        top = top * jnp.sign(top[jnp.argmax(jnp.abs(top))])
        return evals, evals[-1] / jnp.sum(evals), jnp.abs(Xc @ top)
    P("linalg_pca_eigh_explained_variance", pca_eigh, [U((10, 3))], F, AD)

    def orthogonal_init(x, k):
        a = jax.random.normal(k, (4, 4), x.dtype)
        q, r = jnp.linalg.qr(a)
        q = q * jnp.sign(jnp.diag(r))
        w = jax.nn.initializers.orthogonal()(jax.random.fold_in(k, 1), (4, 3), x.dtype)
        h = jnp.tanh(x @ q) @ w
        return jnp.sum(h ** 2), jnp.abs(q.T @ q - jnp.eye(4, dtype=x.dtype)).max() < 1e-4
    P("linalg_orthogonal_init_qr", orthogonal_init, [U((3, 4)), key(53)], F, AD)

    def mvn_logpdf(x, mean, a):
        cov = a @ a.T + jnp.eye(3, dtype=a.dtype)
        l1 = jsp.stats.multivariate_normal.logpdf(x, mean, cov)
        L = jnp.linalg.cholesky(cov)
        z = jsp.linalg.solve_triangular(L, (x - mean).T, lower=True)
        l2 = -0.5 * jnp.sum(z ** 2, 0) - jnp.sum(jnp.log(jnp.diag(L))) - 1.5 * jnp.log(2 * jnp.pi)
        return jnp.sum(l1), jnp.sum(l2)
    P("linalg_mvn_logpdf_vs_cholesky", mvn_logpdf, [U((5, 3)), U((3,)), U((3, 3), -1, 1)], F, AD)

    def linear_ode_expm(A, x0, t):
        return jsp.linalg.expm(A * t) @ x0
    P("linalg_expm_linear_ode", linear_ode_expm, [U((3, 3), -1, 1), U((3,)), fixed(0.7)], F, AD)

    def flow_logdet(W, b, x):
        y = x @ W + b
        sign, ld = jnp.linalg.slogdet(W)
        xr = (y - b) @ jnp.linalg.inv(W)
        return jnp.sum(-0.5 * y ** 2) + x.shape[0] * ld, jnp.linalg.det(W), jnp.max(jnp.abs(xr - x))
    P("linalg_flow_slogdet_inv_det", flow_logdet, [spd(3, 1.0), U((3,)), U((4, 3))], F, AD)

    def qr_lstsq(A, b):
        q, r = jnp.linalg.qr(A)
        x = jsp.linalg.solve_triangular(r, q.T @ b, lower=False)
        return x, jnp.linalg.norm(A @ x - b)
    P("linalg_qr_least_squares", qr_lstsq, [U((6, 3)), U((6,))], F, AD)

    def lu_solve_batched(A, B):
        lu, piv = jsp.linalg.lu_factor(A)
        X = jsp.linalg.lu_solve((lu, piv), B)
        return X, jnp.linalg.cond(A), jnp.linalg.matrix_rank(A)
    P("linalg_lu_factor_solve_cond", lu_solve_batched, [spd(4, 0.3), U((4, 2))], F, FWD)

    def cholesky_whitening(X):
        C = jnp.cov(X, rowvar=False) + 1e-3 * jnp.eye(X.shape[1], dtype=X.dtype)
        L = jnp.linalg.cholesky(C)
        Z = jsp.linalg.solve_triangular(L, (X - X.mean(0)).T, lower=True).T
        return jnp.sum(Z[:, 0] * Z[:, 1]), jnp.linalg.eigvalsh(C)
    P("linalg_cov_cholesky_whitening", cholesky_whitening, [U((8, 3))], F, AD)

    # ============================================================ shard_map data parallelism
    from jax.sharding import Mesh, PartitionSpec as PS
    mesh = Mesh(np.array(jax.devices()[:4]), ("i",))
    mesh2 = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("i", "j"))

    def sm_mse_pmean(w, b, X, Y):
        def local(w, b, x, y):
            pred = jnp.tanh(x @ w + b)
            return lax.pmean(jnp.mean((pred - y) ** 2), "i")
        return jax.shard_map(local, mesh=mesh, in_specs=(PS(), PS(), PS("i"), PS("i")), out_specs=PS())(w, b, X, Y)
    P("shard_map_dp_mse_pmean", sm_mse_pmean, [U((3, 2), -0.5, 0.5), U((2,), -0.1, 0.1), U((8, 3)), U((8, 2))], F1, AD)

    def sm_grad_psum_step(w, X, Y):
        def local(w, x, y):
            def loss(w):
                return jnp.sum((x @ w - y) ** 2)
            l, g = jax.value_and_grad(loss)(w)
            n = lax.psum(x.shape[0], "i")
            g = lax.psum(g, "i") / n
            l = lax.psum(l, "i") / n
            return w - 0.1 * g, l
        return jax.shard_map(local, mesh=mesh, in_specs=(PS(), PS("i"), PS("i")), out_specs=(PS(), PS()))(w, X, Y)
    P("shard_map_dp_grad_psum_sgd", sm_grad_psum_step, [U((3,), -0.5, 0.5), U((8, 3)), U((8,))], F1, AD)

    def sm_softmax_pmax(logits):
        def local(z):
            m = lax.pmax(jnp.max(z, axis=1, keepdims=True), "i")
            e = jnp.exp(z - m)
            s = lax.psum(jnp.sum(e, axis=1, keepdims=True), "i")
            return e / s
        return jax.shard_map(local, mesh=mesh, in_specs=PS(None, "i"), out_specs=PS(None, "i"))(logits)
    P("shard_map_vocab_parallel_softmax_pmax", lambda z: jnp.sum(sm_softmax_pmax(z) * jnp.arange(8.0, dtype=z.dtype)),
      [U((3, 8), -3, 3)], F1, AD)

    def sm_2d_matmul(X, W):
        def local(x, w):
            return lax.psum(x @ w, "j")
        out = jax.shard_map(local, mesh=mesh2, in_specs=(PS("i", "j"), PS("j", None)), out_specs=PS("i", None))(X, W)
        return jnp.sum(jnp.tanh(out))
    P("shard_map_2d_mesh_row_col_psum", sm_2d_matmul, [U((4, 6)), U((6, 3), -0.5, 0.5)], F1, AD)

    def sm_halo_heat(u):
        def local(u):
            perm_r = [(i, (i + 1) % 4) for i in range(4)]
            perm_l = [(i, (i - 1) % 4) for i in range(4)]
            for _ in range(3):
                left = lax.ppermute(u[-1:], "i", perm_r)
                right = lax.ppermute(u[:1], "i", perm_l)
                ext = jnp.concatenate([left, u, right])
                u = u + 0.2 * (ext[:-2] - 2 * u + ext[2:])
            return u
        return jax.shard_map(local, mesh=mesh, in_specs=PS("i"), out_specs=PS("i"))(u)
    P("shard_map_ppermute_halo_heat", lambda u: jnp.sum(sm_halo_heat(u) ** 2), [U((12,))], F1, AD)

    def sm_axis_index_pos(x, w):
        def local(x, w):
            i = lax.axis_index("i")
            pos = (i * x.shape[0] + jnp.arange(x.shape[0])).astype(x.dtype)
            h = jnp.sin(x @ w + pos[:, None] * 0.1)
            everyone = lax.all_gather(jnp.sum(h, 1), "i", tiled=True)
            return lax.psum(jnp.sum(h ** 2), "i"), jnp.sum(h, 1) * jnp.max(everyone)
        return jax.shard_map(local, mesh=mesh, in_specs=(PS("i"), PS()), out_specs=(PS(), PS("i")))(x, w)
    P("shard_map_axis_index_all_gather", sm_axis_index_pos, [U((8, 2)), U((2, 3))], F1, AD)

    # ============================================================ checkpoint with policies
    from jax.ad_checkpoint import checkpoint_name

    def remat_named(w1, w2, w3, x):
        def block(w, h):
            a = checkpoint_name(h @ w, "proj")
            return jax.nn.gelu(a) + h
        pol = jax.checkpoint_policies.save_only_these_names("proj")
        h = jax.checkpoint(block, policy=pol)(w1, x)
        h = jax.checkpoint(block, policy=jax.checkpoint_policies.nothing_saveable)(w2, h)
        h = jax.checkpoint(block, policy=jax.checkpoint_policies.everything_saveable)(w3, h)
        return jnp.mean(h ** 2)
    P("checkpoint_save_only_names_gelu", remat_named,
      [U((3, 3), -0.5, 0.5), U((3, 3), -0.5, 0.5), U((3, 3), -0.5, 0.5), U((4, 3))], F, AD + ("vmap_grad",))

    def remat_scan_rnn(wh, wx, xs):
        @functools.partial(jax.checkpoint, policy=jax.checkpoint_policies.dots_saveable)
        def cell(h, x):
            return jnp.tanh(h @ wh + x @ wx)

        def step(h, x):
            h = cell(h, x)
            return h, jnp.sum(h)
        h, ys = lax.scan(step, jnp.zeros(wh.shape[0], xs.dtype), xs)
        return jnp.sum(ys) + jnp.sum(h ** 2)
    P("checkpoint_dots_saveable_scan_rnn", remat_scan_rnn, [U((3, 3), -0.6, 0.6), U((2, 3), -0.6, 0.6), U((6, 2))], F, AD)

    def remat_static(w, x):
        @functools.partial(jax.checkpoint, static_argnums=(2,))
        def layer(w, x, act):
            y = x @ w
            return jnp.tanh(y) if act == "tanh" else jax.nn.softplus(y)
        return jnp.sum(layer(w, layer(w, x, "tanh"), "softplus"))
    P("checkpoint_static_argnums_offload_free", remat_static, [U((3, 3), -0.5, 0.5), U((2, 3))], F, AD + ("hessian",))

    # ============================================================ custom_jvp / custom_vjp models
    @jax.custom_vjp
    def clip_grad_norm_layer(x):
        return x

    def _cg_fwd(x):
        return x, None

    def _cg_bwd(_, g):
        n = jnp.sqrt(jnp.sum(g ** 2))
        return (g * jnp.minimum(1.0, 0.5 / (n + 1e-12)),)
    clip_grad_norm_layer.defvjp(_cg_fwd, _cg_bwd)

    def mlp_clipped(w1, w2, x):
        h = clip_grad_norm_layer(jnp.tanh(x @ w1))
        return jnp.sum((h @ w2) ** 2)
    P("custom_vjp_grad_norm_clip_layer", mlp_clipped, [U((3, 4)), U((4, 2)), U((5, 3))], F, AD)

    @jax.custom_jvp
    def softplus_stable(x):
        return jnp.logaddexp(x, 0.0)

    @softplus_stable.defjvp
    def _sps_jvp(p, t):
        x, = p
        dx, = t
        return softplus_stable(x), jax.nn.sigmoid(x) * dx

    def softplus_net(w, x):
        return jnp.sum(softplus_stable(x @ w) * jnp.arange(1, w.shape[1] + 1, dtype=x.dtype))
    P("custom_jvp_softplus_hessian", softplus_net, [U((3, 2)), fixed([[30.0, -40.0, 0.5], [0.0, 1.0, -2.0]])], F, AD + ("hessian",))

    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def fixed_point(f, a, x0):
        def cond(c):
            return (c[1] < 100) & (jnp.max(jnp.abs(f(a, c[0]) - c[0])) > 1e-6)

        def body(c):
            return f(a, c[0]), c[1] + 1
        return lax.while_loop(cond, body, (x0, 0))[0]

    def _fp_fwd(f, a, x0):
        z = fixed_point(f, a, x0)
        return z, (a, z)

    def _fp_bwd(f, res, g):
        a, z = res
        _, vjp_a = jax.vjp(lambda a: f(a, z), a)
        _, vjp_z = jax.vjp(lambda z: f(a, z), z)

        def cond(c):
            return (c[1] < 100) & (jnp.max(jnp.abs(c[2])) > 1e-7)

        def body(c):
            u, k, _ = c
            un = g + vjp_z(u)[0]
            return un, k + 1, un - u
        u = lax.while_loop(cond, body, (g, 0, jnp.ones_like(g)))[0]
        return vjp_a(u)[0], jnp.zeros_like(z)
    fixed_point.defvjp(_fp_fwd, _fp_bwd)

    def deq_layer(W, x):
        f = lambda a, z: jnp.tanh(a[0] @ z + a[1])
        z = fixed_point(f, (W, x), jnp.zeros_like(x))
        return jnp.sum(z ** 2)
    P("custom_vjp_deq_nondiff_fixed_point", lambda W, x: deq_layer(W * 0.3, x), [U((3, 3), -1, 1), U((3,))], F, ("vjp", "vmap"))

    @jax.custom_vjp
    def grad_reverse(x, lam):
        return x

    def _gr_fwd(x, lam):
        return x, lam

    def _gr_bwd(lam, g):
        return -lam * g, jnp.zeros_like(lam)
    grad_reverse.defvjp(_gr_fwd, _gr_bwd)

    def dann(wf, wc, wd, x, y, dom):
        feat = jnp.tanh(x @ wf)
        cls = jnp.mean((feat @ wc - y) ** 2)
        dl = grad_reverse(feat, jnp.asarray(0.5, x.dtype)) @ wd
        dom_loss = jnp.mean(jax.nn.softplus(dl[:, 0]) - dom * dl[:, 0])
        return cls + dom_loss
    P("custom_vjp_gradient_reversal_dann", dann,
      [U((3, 4), -0.5, 0.5), U((4,), -0.5, 0.5), U((4, 1), -0.5, 0.5), U((6, 3)), U((6,)),
       fixed([0.0, 1.0, 0.0, 1.0, 1.0, 0.0])], F, AD)

    @jax.custom_jvp
    def safe_norm(x):
        return jnp.sqrt(jnp.sum(x ** 2, -1))

    @safe_norm.defjvp
    def _sn_jvp(p, t):
        x, = p
        dx, = t
        n = safe_norm(x)
        return n, jnp.sum(jnp.where(n[..., None] > 0, x / jnp.where(n > 0, n, 1.0)[..., None], 0.0) * dx, -1)

    def safe_norm_scan(xs):
        def step(c, x):
            return c + safe_norm(x), safe_norm(x * c)
        c, ys = lax.scan(step, jnp.zeros((), xs.dtype), xs)
        return c + jnp.sum(jax.vmap(safe_norm)(xs) * ys)
    P("custom_jvp_safe_norm_in_scan_vmap", safe_norm_scan,
      [fixed([[0.0, 0.0], [3.0, 4.0], [0.0, 0.0], [1.0, -1.0]])], F, AD)

    # ============================================================ control flow with grad and vmap
    def gru(params, xs):
        Wz, Wr, Wh = params

        def step(h, x):
            hx = jnp.concatenate([h, x])
            z = jax.nn.sigmoid(hx @ Wz)
            r = jax.nn.sigmoid(hx @ Wr)
            hh = jnp.tanh(jnp.concatenate([r * h, x]) @ Wh)
            h = (1 - z) * h + z * hh
            return h, h
        h, hs = lax.scan(step, jnp.zeros(Wz.shape[1], xs.dtype), xs)
        return h

    def gru_batch_loss(Wz, Wr, Wh, X, y):
        hs = jax.vmap(lambda xs: gru((Wz, Wr, Wh), xs))(X)
        return jnp.mean((hs.sum(-1) - y) ** 2)
    P("control_gru_vmap_batch_grad", gru_batch_loss,
      [U((5, 3), -0.5, 0.5), U((5, 3), -0.5, 0.5), U((5, 3), -0.5, 0.5), U((4, 6, 2)), U((4,))], F, AD)

    def neural_ode(w1, w2, y0):
        def f(y, t):
            return jnp.tanh(jnp.concatenate([y, t[None]]) @ w1) @ w2

        def rk4(i, y):
            h = jnp.asarray(0.1, y.dtype)
            t = i * h
            k1 = f(y, t)
            k2 = f(y + h / 2 * k1, t + h / 2)
            k3 = f(y + h / 2 * k2, t + h / 2)
            k4 = f(y + h * k3, t + h)
            return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        yT = lax.fori_loop(0, 10, rk4, y0)
        return jnp.sum((yT - jnp.array([1.0, -1.0], y0.dtype)) ** 2)
    P("control_neural_ode_rk4_fori_paramgrad", neural_ode, [U((3, 4), -0.5, 0.5), U((4, 2), -0.5, 0.5), U((2,))], F, AD)

    def hmc_step(q0, k):
        def U_(q):
            return 0.5 * jnp.sum(q ** 2 * jnp.array([1.0, 4.0], q.dtype))
        gU = jax.grad(U_)
        k1, k2 = jax.random.split(k)
        p0 = jax.random.normal(k1, q0.shape, q0.dtype)
        eps = 0.1

        def leap(c, _):
            q, p = c
            p = p - eps / 2 * gU(q)
            q = q + eps * p
            p = p - eps / 2 * gU(q)
            return (q, p), U_(q)
        (q, p), us = lax.scan(leap, (q0, p0), None, length=8)
        h0 = U_(q0) + 0.5 * jnp.sum(p0 ** 2)
        h1 = U_(q) + 0.5 * jnp.sum(p ** 2)
        accept = jnp.log(jax.random.uniform(k2, (), q0.dtype)) < h0 - h1
        qn = lax.cond(accept, lambda: q, lambda: q0)
        return qn, us, h1 - h0
    P("control_hmc_leapfrog_scan_accept_cond", hmc_step, [U((2,)), key(59)], F, AD)

    def bisection_cubic(a, b, c):
        def f(x):
            return x ** 3 + a * x ** 2 + b * x + c

        def cond(s):
            lo, hi, i = s
            return (hi - lo > 1e-5) & (i < 60)

        def body(s):
            lo, hi, i = s
            mid = 0.5 * (lo + hi)
            left = jnp.sign(f(mid)) == jnp.sign(f(lo))
            return jnp.where(left, mid, lo), jnp.where(left, hi, mid), i + 1
        lo, hi, n = lax.while_loop(cond, body, (jnp.asarray(-10.0, a.dtype), jnp.asarray(10.0, a.dtype), 0))
        return 0.5 * (lo + hi), n
    P("control_bisection_while_vmap", jax.vmap(bisection_cubic), [U((5,), -1, 1), U((5,), 0, 2), U((5,), -3, 3)], F, ("vmap",))

    def newton_implicit(theta, x):
        # y solves y + theta*sin(y) = x (Kepler-like); gradient by lax.custom_root-free implicit diff
        @jax.custom_jvp
        def solve(theta, x):
            def body(i, y):
                return y - (y + theta * jnp.sin(y) - x) / (1 + theta * jnp.cos(y))
            return lax.fori_loop(0, 30, body, x)

        @solve.defjvp
        def _(p, t):
            th, xx = p
            dth, dx = t
            y = solve(th, xx)
            return y, (dx - jnp.sin(y) * dth) / (1 + th * jnp.cos(y))
        return jnp.sum(solve(theta, x) ** 2)
    P("control_newton_fori_implicit_custom_jvp", newton_implicit, [U((4,), 0.1, 0.8), U((4,), -3, 3)], F, AD + ("hessian",))

    def bouncing_ball(h0, v0, e):
        def step(c, _):
            h, v = c
            v = v - 9.81 * 0.02
            h = h + 0.02 * v
            h, v = lax.cond(h < 0, lambda: (-h * e, -v * e), lambda: (h, v))
            return (h, v), h
        (h, v), hs = lax.scan(step, (h0, v0), None, length=40)
        return jnp.sum(hs) * 0.02 + v
    P("control_bouncing_ball_scan_cond", bouncing_ball, [fixed(1.0), fixed(0.5), fixed(0.8)], F, AD + ("jacrev",))

    def state_machine(xs, w):
        def step(c, x):
            s, acc = c
            branches = [lambda a: a + x * w[0], lambda a: a * jnp.cos(x * w[1]), lambda a: a - jnp.tanh(x) * w[2]]
            acc = lax.switch(s, branches, acc)
            s = (s + (x > 0).astype(jnp.int32)) % 3
            return (s, acc), acc
        (s, acc), accs = lax.scan(step, (jnp.int32(0), jnp.asarray(1.0, xs.dtype)), xs)
        return acc, accs, s
    P("control_switch_state_machine_scan", state_machine, [U((8,)), U((3,), 0.5, 1.5)], F, AD)

    def fixed_point_sqrt(a):
        def cond(c):
            x, xp, i = c
            return jnp.any(jnp.abs(x - xp) > 1e-6 * x) & (i < 50)

        def body(c):
            x, _, i = c
            return 0.5 * (x + a / x), x, i + 1
        x, _, n = lax.while_loop(cond, body, (a, a + 1.0, 0))
        return x, n
    P("control_while_tol_maxiter_sqrt", fixed_point_sqrt, [U((6,), 0.01, 1e4)], F, FWD)

    def scan_dict_carry(p, xs):
        def step(c, x):
            c = {"pos": c["pos"] + 0.1 * c["vel"], "vel": c["vel"] * p["damp"] + x * p["gain"],
                 "t": c["t"] + 1}
            return c, {"e": 0.5 * jnp.sum(c["vel"] ** 2), "p": c["pos"]}
        c0 = {"pos": jnp.zeros(2, xs.dtype), "vel": jnp.ones(2, xs.dtype), "t": jnp.int32(0)}
        c, out = lax.scan(step, c0, xs)
        return c["pos"], out["e"], out["p"], c["t"]
    P("control_scan_dict_carry_pytree_out", lambda d, g, xs: scan_dict_carry({"damp": d, "gain": g}, xs),
      [fixed(0.9), U((2,)), U((7, 2))], F, AD)

    def euler_maruyama(theta, sigma, x0, k):
        dt = 0.05
        ks = jax.random.split(k, 20)

        def step(x, kk):
            dW = jnp.sqrt(dt) * jax.random.normal(kk, x.shape, x.dtype)
            x = x + theta * (1.0 - x) * dt + sigma * dW
            return x, x
        xT, xs = lax.scan(step, x0, ks)
        return jnp.mean(xT), jnp.var(xs)
    P("control_euler_maruyama_ou_scan_keys", euler_maruyama, [fixed(1.5), fixed(0.3), U((16,), -1, 1), key(61)], F, AD)

    def adaptive_ode(y0):
        # Heun-Euler with step control, forward only (while)
        def f(y):
            return jnp.array([y[1], -jnp.sin(y[0])], y.dtype)

        def cond(s):
            t, y, h, n = s
            return (t < 2.0) & (n < 200)

        def body(s):
            t, y, h, n = s
            h = jnp.minimum(h, 2.0 - t)
            k1 = f(y)
            k2 = f(y + h * k1)
            y_heun = y + h / 2 * (k1 + k2)
            err = jnp.max(jnp.abs(y_heun - (y + h * k1)))
            ok = err < 1e-3
            t = jnp.where(ok, t + h, t)
            y = jnp.where(ok, y_heun, y)
            h = h * jnp.clip(0.9 * jnp.sqrt(1e-3 / (err + 1e-12)), 0.2, 5.0)
            return t, y, h, n + 1
        t, y, h, n = lax.while_loop(cond, body, (jnp.asarray(0.0, y0.dtype), y0, jnp.asarray(0.1, y0.dtype), 0))
        return y, n
    P("control_adaptive_heun_while", adaptive_ode, [fixed([1.0, 0.0])], F, FWD)

    # ============================================================ jnp.fft
    def fft_circular_conv(x, k):
        n = x.shape[-1]
        y = jnp.fft.irfft(jnp.fft.rfft(x) * jnp.fft.rfft(k, n), n)
        direct = jnp.stack([jnp.sum(x * jnp.roll(k[::-1], i + 1)) for i in range(n)])
        return jnp.sum(y ** 2), jnp.max(jnp.abs(y - direct))
    P("fft_circular_convolution_rfft", fft_circular_conv, [U((8,)), U((8,))], F, AD)

    def spectral_derivative(u):
        n = u.shape[0]
        kk = 2 * jnp.pi * jnp.fft.fftfreq(n, d=1.0 / n).astype(u.dtype)
        du = jnp.fft.ifft(1j * kk * jnp.fft.fft(u)).real
        d2u = jnp.fft.irfft(-(jnp.fft.rfftfreq(n, 1.0 / n) * 2 * jnp.pi) ** 2 * jnp.fft.rfft(u), n)
        return jnp.sum(u * du) + jnp.sum(d2u ** 2) * 1e-3
    P("fft_spectral_derivative_fftfreq",
      lambda a: spectral_derivative(jnp.sin(2 * jnp.pi * jnp.arange(16, dtype=a.dtype) / 16 * a[0]) + a[1] * jnp.cos(jnp.arange(16, dtype=a.dtype))),
      [fixed([2.0, 0.3])], F, AD)

    def lowpass2d(img):
        Fimg = jnp.fft.fft2(img)
        fy = jnp.fft.fftfreq(img.shape[0])[:, None]
        fx = jnp.fft.fftfreq(img.shape[1])[None, :]
        mask = (jnp.sqrt(fy ** 2 + fx ** 2) < 0.3).astype(img.dtype)
        out = jnp.fft.ifft2(Fimg * mask).real
        return jnp.sum((out - img) ** 2), jnp.fft.fftshift(jnp.abs(Fimg))
    P("fft_fft2_lowpass_fftshift", lowpass2d, [U((6, 6))], F, AD)

    def power_spectrum_loss(x, target):
        ps = jnp.abs(jnp.fft.rfft(x, norm="ortho")) ** 2
        lp = jnp.log(ps + 1e-6)
        return jnp.mean((lp - target) ** 2)
    P("fft_power_spectrum_log_loss_ortho", power_spectrum_loss, [U((10,)), U((6,), -2, 1)], F, AD)

    def fftn_hfft(x):
        a = jnp.fft.rfftn(x, axes=(0, 2))
        b = jnp.fft.irfftn(a, s=(x.shape[0], x.shape[2]), axes=(0, 2))
        c = jnp.fft.hfft(x[0, 0], n=6)
        d = jnp.fft.ihfft(x[1, :, 0])
        return jnp.sum(jnp.abs(a)), b, c, jnp.abs(d)
    P("fft_rfftn_irfftn_hfft_ihfft", fftn_hfft, [U((4, 3, 4))], F, AD)

    def fft_autocorr(x):
        n = x.shape[0]
        xc = x - x.mean()
        f = jnp.fft.fft(xc, n=2 * n)
        ac = jnp.fft.ifft(f * jnp.conj(f))[:n].real
        return ac / ac[0]
    P("fft_autocorrelation_zero_pad", fft_autocorr, [U((9,))], F, AD)

    # ============================================================ jax.nn
    def nn_zoo2(x):
        return (jax.nn.glu(x, axis=-1), jax.nn.hard_tanh(x), jax.nn.celu(x, 0.7), jax.nn.selu(x),
                jax.nn.elu(x, 0.5), jax.nn.mish(x), jax.nn.squareplus(x), jax.nn.sparse_plus(x),
                jax.nn.hard_swish(x), jax.nn.log_sigmoid(x), jax.nn.soft_sign(x), jax.nn.standardize(x, axis=-1))
    P("nn_zoo2_glu_celu_mish_squareplus", nn_zoo2, [fixed([[-3.0, -1.0, -0.5, 0.0], [0.25, 1.0, 2.5, 40.0]])], F, AD)

    def nn_masked_softmax_xent(logits, labels, mask):
        lp = jax.nn.log_softmax(logits, axis=-1, where=mask)
        oh = jax.nn.one_hot(labels, logits.shape[-1], dtype=logits.dtype)
        lse = jax.nn.logsumexp(logits, axis=-1, where=mask)
        return -jnp.sum(jnp.where(mask, oh * lp, 0.0)), lse, jax.nn.softmax(logits, axis=(0, 1))
    P("nn_masked_log_softmax_where_onehot", nn_masked_softmax_xent,
      [U((3, 4)), raw(np.array([1, 0, 3], np.int32)),
       raw(np.array([[True, True, False, True], [True, False, True, True], [False, True, True, True]]))], F, AD)

    def nn_init_zoo(x, k):
        ks = jax.random.split(k, 4)
        w1 = jax.nn.initializers.lecun_uniform()(ks[0], (3, 4), x.dtype)
        w2 = jax.nn.initializers.variance_scaling(2.0, "fan_out", "truncated_normal")(ks[1], (4, 4), x.dtype)
        w3 = jax.nn.initializers.xavier_normal()(ks[2], (4, 2), x.dtype)
        b = jax.nn.initializers.uniform(0.05)(ks[3], (2,), x.dtype)
        return jnp.sum(jax.nn.swish(jax.nn.relu(x @ w1) @ w2) @ w3 + b)
    P("nn_initializers_variance_scaling", nn_init_zoo, [U((5, 3)), key(67)], F, AD)

    def attention_with_bias_mask(q, k, v, bias):
        mask = jnp.tril(jnp.ones((q.shape[1], k.shape[1]), bool))[None, None]
        o = jax.nn.dot_product_attention(q, k, v, bias=bias, mask=mask, scale=0.3)
        return jnp.sum(o * jnp.arange(o.shape[-1], dtype=o.dtype))
    P("nn_dot_product_attention_bias_mask", attention_with_bias_mask,
      [U((1, 4, 2, 3)), U((1, 4, 2, 3)), U((1, 4, 2, 3)), U((1, 2, 4, 4), -1, 1)], F1, AD)

    # ============================================================ scipy special / stats losses
    sp, st = jsp.special, jsp.stats

    def beta_nll(la, lb, x):
        a, b = jnp.exp(la), jnp.exp(lb)
        return -jnp.sum((a - 1) * jnp.log(x) + (b - 1) * jnp.log1p(-x) - sp.betaln(a, b)), \
            -jnp.sum(st.beta.logpdf(x, a, b))
    P("special_beta_nll_betaln_digamma", beta_nll, [fixed(0.3), fixed(-0.2), U((6,), 0.05, 0.95)], F, AD)

    def student_t_regression(w, X, y, log_df):
        df = jnp.exp(log_df)
        r = y - X @ w
        return -jnp.mean(st.t.logpdf(r, df, loc=0.0, scale=0.5))
    P("special_student_t_regression", student_t_regression, [U((3,)), U((8, 3)), U((8,)), fixed(1.0)], F, AD)

    def poisson_glm(w, X, y):
        eta = X @ w
        lam = jnp.exp(eta)
        nll = jnp.sum(lam - sp.xlogy(y, lam) + sp.gammaln(y + 1))
        return nll, -jnp.sum(st.poisson.logpmf(y, lam))
    P("special_poisson_glm_xlogy_gammaln", poisson_glm,
      [U((3,), -0.3, 0.3), U((7, 3)), fixed([0.0, 1.0, 3.0, 0.0, 2.0, 5.0, 1.0])], F, AD)

    def probit(w, X, y):
        z = X @ w
        return -jnp.sum(y * sp.log_ndtr(z) + (1 - y) * sp.log_ndtr(-z)), sp.ndtri(sp.ndtr(z * 0.5))
    P("special_probit_log_ndtr_ndtri", probit, [U((3,)), U((6, 3)), fixed([1.0, 0.0, 0.0, 1.0, 1.0, 0.0])], F, AD)

    def erf_calibration(mu, log_s, y):
        s = jnp.exp(log_s)
        cdf = 0.5 * sp.erfc(-(y - mu) / (s * jnp.sqrt(2.0)))
        pit = sp.erf((y - mu) / s)
        return jnp.mean((cdf - 0.5) ** 2) + jnp.mean(sp.erfinv(0.9 * pit) ** 2)
    P("special_erf_erfc_erfinv_calibration", erf_calibration, [U((5,)), U((5,), -1, 0.5), U((5,))], F, AD)

    def gmm_nll(means, log_stds, logits, x):
        lp = st.norm.logpdf(x[:, None], means[None], jnp.exp(log_stds)[None])
        return -jnp.sum(jsp.special.logsumexp(lp + jax.nn.log_softmax(logits)[None], axis=1))
    P("special_gmm_nll_norm_logpdf_logsumexp", gmm_nll, [fixed([-1.0, 0.5, 2.0]), U((3,), -0.5, 0.2), U((3,)), U((9,), -3, 3)], F, AD)

    def lse_signed(a, b):
        v, s = sp.logsumexp(a, b=b, axis=0, return_sign=True)
        return v, s, sp.logsumexp(a, axis=1, keepdims=True)
    P("special_logsumexp_b_return_sign", lse_signed, [U((4, 3)), U((4, 3), -1, 1)], F, AD)

    def kl_entropy(p_logits, q_logits):
        p = jax.nn.softmax(p_logits)
        q = jax.nn.softmax(q_logits)
        return jnp.sum(sp.rel_entr(p, q)), jnp.sum(sp.kl_div(p, q)), jnp.sum(sp.entr(p)), \
            jnp.sum(sp.xlog1py(p, -q))
    P("special_rel_entr_kl_div_entr_xlog1py", kl_entropy, [U((5,)), U((5,))], F, AD)

    def von_mises_nll(mu, log_kappa, theta):
        kappa = jnp.exp(log_kappa)
        return -jnp.sum(kappa * (jnp.cos(theta - mu) - 1) - jnp.log(2 * jnp.pi * sp.i0e(kappa))), sp.i1e(kappa) / sp.i0e(kappa)
    P("special_von_mises_i0e_i1e", von_mises_nll, [fixed(0.3), fixed(0.7), U((7,), -3, 3)], F, AD)

    def gamma_dirichlet_logpdf(la, x, alpha, p):
        return jnp.sum(st.gamma.logpdf(x, jnp.exp(la), scale=2.0)) + st.dirichlet.logpdf(p, alpha), \
            sp.digamma(alpha), sp.gammainc(jnp.exp(la), x)
    P("special_gamma_dirichlet_logpdf_gammainc", gamma_dirichlet_logpdf,
      [fixed(0.4), U((5,), 0.2, 4), U((3,), 0.5, 3), fixed([0.2, 0.5, 0.3])], F, AD)

    def cauchy_laplace_logistic(x, loc):
        return jnp.sum(st.cauchy.logpdf(x, loc, 2.0) + jnp.log(st.laplace.cdf(x, loc)) + st.logistic.logpdf(x, loc)), \
            st.norm.ppf(jnp.clip(jax.nn.sigmoid(x), 0.01, 0.99)), st.expon.logsf(jnp.abs(x))
    P("special_stats_cauchy_laplace_logistic_ppf", cauchy_laplace_logistic, [U((6,), -3, 3), fixed(0.25)], F, AD)

    # ============================================================ f16 / bf16 / int mixes
    def mixed_precision_step(w1, w2, x, y):
        def loss(ps):
            h = jax.nn.relu(x.astype(jnp.bfloat16) @ ps[0].astype(jnp.bfloat16))
            out = (h @ ps[1].astype(jnp.bfloat16)).astype(jnp.float32)
            return jnp.mean((out - y) ** 2)
        l, g = jax.value_and_grad(loss)((w1, w2))
        return l, w1 - 0.1 * g[0], w2 - 0.1 * g[1], g[0].dtype == jnp.float32
    P("lowp_bf16_compute_f32_master_step", mixed_precision_step,
      [U((4, 8), -0.5, 0.5), U((8, 2), -0.5, 0.5), U((6, 4)), U((6, 2))], F1, ("jvp", "vmap"))

    def f16_loss_scaling(w, x, y, scale):
        def loss(w):
            out = (x.astype(jnp.float16) @ w.astype(jnp.float16)).astype(jnp.float32)
            return jnp.mean((out - y) ** 2) * scale
        g = jax.grad(loss)(w) / scale
        finite = jnp.all(jnp.isfinite(g))
        new_w = lax.cond(finite, lambda: w - 0.1 * g, lambda: w)
        new_scale = jnp.where(finite, scale * 2.0, scale / 2.0)
        return new_w, new_scale, finite
    P("lowp_f16_dynamic_loss_scaling_cond", f16_loss_scaling,
      [U((3, 2), -0.5, 0.5), U((4, 3)), U((4, 2)), fixed(32768.0)], F1, ("jvp", "vmap"))

    def f16_loss_scaling_overflow(w, x, y):
        return f16_loss_scaling(w, x * 300.0, y, jnp.asarray(65536.0, jnp.float32))
    P("lowp_f16_loss_scaling_overflow_skip", f16_loss_scaling_overflow, [U((3, 2), -0.5, 0.5), U((4, 3)), U((4, 2))], F1, ("vmap",))

    def int8_quantize_ste(w, x):
        scale = jnp.max(jnp.abs(w)) / 127.0
        q = jnp.clip(jnp.round(w / scale), -128, 127).astype(jnp.int8)
        deq = q.astype(w.dtype) * scale
        w_ste = w + lax.stop_gradient(deq - w)
        acc = jnp.matmul(x.astype(jnp.int8), q, preferred_element_type=jnp.int32)
        return jnp.sum(jnp.tanh(x @ w_ste)), acc, q
    P("lowp_int8_quantize_ste_int32_accum", int8_quantize_ste, [U((3, 4)), U((2, 3), -4, 4)], F, AD)

    def uint8_pipeline(img, w, labels):
        x = img.astype(jnp.float32) / 255.0
        x = (x - jnp.array([0.485, 0.456], jnp.float32)) / jnp.array([0.229, 0.224], jnp.float32)
        logits = x.reshape(x.shape[0], -1) @ w
        oh = jax.nn.one_hot(labels, 3)
        back = jnp.clip(jnp.round(x * 0.229 * 255.0 + 0.485 * 255.0), 0, 255).astype(jnp.uint8)
        return -jnp.mean(jnp.sum(oh * jax.nn.log_softmax(logits), -1)), back
    P("lowp_uint8_image_normalize_xent", uint8_pipeline,
      [ints((4, 3, 2), 0, 255, np.uint8), U((6, 3), -0.5, 0.5), ints((4,), 0, 2)], F1, AD)

    def position_ids(emb, tokens, seg):
        T = tokens.shape[0]
        pos = jnp.arange(T, dtype=jnp.int32)
        start = jnp.where(jnp.concatenate([jnp.array([True]), seg[1:] != seg[:-1]]), pos, 0)
        start = lax.cummax(start)
        rel = pos - start
        h = emb[tokens] + jnp.sin(rel[:, None].astype(emb.dtype) / (10.0 ** (jnp.arange(emb.shape[1]) / emb.shape[1])))
        same = seg[:, None] == seg[None, :]
        att = jax.nn.softmax(jnp.where(same, h @ h.T, -1e9), -1)
        return jnp.sum(att @ h), rel, (tokens * 31 + rel) % 7
    P("lowp_int_position_ids_segments", position_ids,
      [U((5, 4)), raw(np.array([1, 4, 4, 0, 2, 3, 1], np.int32)), raw(np.array([0, 0, 0, 1, 1, 2, 2], np.int32))], F, AD)

    def bf16_attention(q, k, v):
        s = jnp.einsum("td,sd->ts", q, k, preferred_element_type=jnp.float32) / jnp.sqrt(jnp.float32(q.shape[-1]))
        p = jax.nn.softmax(s, -1).astype(jnp.bfloat16)
        return jnp.einsum("ts,sd->td", p, v), jnp.max(s, -1)
    P("lowp_bf16_attention_f32_softmax", bf16_attention, [U((4, 8)), U((6, 8)), U((6, 8))], ("bf16",), VM)

    def f16_adam_master(w, g16, m, v):
        g = g16.astype(jnp.float32)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w = w - 1e-3 * m / (jnp.sqrt(v) + 1e-8)
        return w, m, v, w.astype(jnp.float16), w.astype(jnp.bfloat16)
    P("lowp_f16_grads_f32_adam_master", f16_adam_master,
      [U((6,)), lambda r, d: r.uniform(-1e-3, 1e-3, 6).astype(np.float16), U((6,), -1e-3, 1e-3), U((6,), 0, 1e-6)],
      F1, ("jvp", "vmap"))

    # ============================================================ pytrees and nested transforms
    def hvp_fwd_over_rev(w, v, X, y):
        def loss(w):
            return jnp.mean(jax.nn.softplus(X @ w) - y * (X @ w)) + 0.01 * jnp.sum(w ** 4)
        return jax.jvp(jax.grad(loss), (w,), (v,))[1]
    P("nested_hvp_forward_over_reverse", hvp_fwd_over_rev, [U((3,)), U((3,)), U((6, 3)), fixed([1.0, 0.0, 1.0, 1.0, 0.0, 0.0])], F, AD)

    def per_example_grad_norms(params, X, y):
        def loss(p, x, t):
            h = jnp.tanh(x @ p["w1"] + p["b1"])
            return (h @ p["w2"] - t) ** 2
        g = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(params, X, y)
        norms = jnp.sqrt(sum(jnp.sum(l.reshape(l.shape[0], -1) ** 2, 1) for l in jax.tree_util.tree_leaves(g)))
        return norms, jax.tree_util.tree_map(lambda a: a.mean(0), g)
    P("nested_per_example_grad_norms_pytree",
      lambda w1, b1, w2, X, y: per_example_grad_norms({"w1": w1, "b1": b1, "w2": w2}, X, y),
      [U((3, 4), -0.5, 0.5), U((4,), -0.1, 0.1), U((4,), -0.5, 0.5), U((5, 3)), U((5,))], F, FWD)

    def gauss_newton(p, t, yobs):
        def model(p):
            return {"a": p[0] * jnp.exp(-p[1] * t), "b": jnp.sin(p[2] * t)}
        J = jax.jacrev(model)(p)
        Jm = jnp.concatenate([J["a"], J["b"]])
        r = jnp.concatenate([model(p)["a"] - yobs, model(p)["b"]])
        G = Jm.T @ Jm
        return G, jnp.linalg.solve(G + 1e-3 * jnp.eye(3, dtype=p.dtype), Jm.T @ r)
    P("nested_jacrev_dict_gauss_newton", gauss_newton, [fixed([1.2, 0.7, 0.9]), U((5,), 0, 2), U((5,))], F, AD)

    def maml(w, xs, ys, xq, yq):
        def loss(w, x, y):
            return jnp.mean((jnp.tanh(x @ w) - y) ** 2)

        def adapted(w):
            for _ in range(2):
                w = w - 0.3 * jax.grad(loss)(w, xs, ys)
            return w
        return loss(adapted(w), xq, yq)
    P("nested_maml_second_order", maml, [U((3, 2), -0.5, 0.5), U((4, 3)), U((4, 2)), U((4, 3)), U((4, 2))], F, AD + ("hessian",))

    def linearize_transpose(x, v, ct):
        f = lambda x: jnp.sin(x) * jnp.cumsum(x) + x[::-1] ** 2
        y, f_jvp = jax.linearize(f, x)
        t = jax.linear_transpose(f_jvp, x)
        return y, f_jvp(v), t(ct)[0]
    P("nested_linearize_linear_transpose", linearize_transpose, [U((5,)), U((5,)), U((5,))], F, AD)

    def vmap_dict_axes(params, xs):
        def f(p, x):
            return {"out": jnp.tanh(p["w"] @ x) * p["s"], "n": jnp.sum(x ** 2)}
        r = jax.vmap(f, in_axes=({"w": None, "s": 0}, 1), out_axes={"out": 1, "n": 0})(params, xs)
        inner = jax.vmap(jax.vmap(jax.grad(lambda a, b: jnp.sin(a * b)), (0, None)), (None, 0))(xs[0], xs[1])
        return r["out"], r["n"], inner
    P("nested_vmap_dict_in_out_axes_grad", lambda w, s, xs: vmap_dict_axes({"w": w, "s": s}, xs),
      [U((2, 3)), U((4,)), U((3, 4))], F, AD)

    def adamw_masked_tree(w, b, g_w, g_b, m_w, m_b):
        params = {"dense": {"kernel": w, "bias": b}}
        grads = {"dense": {"kernel": g_w, "bias": g_b}}
        mom = {"dense": {"kernel": m_w, "bias": m_b}}
        decay = jax.tree_util.tree_map_with_path(lambda path, x: path[-1].key == "kernel", params)
        mom = jax.tree_util.tree_map(lambda m, g: 0.9 * m + g, mom, grads)
        params = jax.tree_util.tree_map(lambda p, m, d: p - 0.01 * (m + jnp.where(d, 1e-2 * p, 0.0)), params, mom, decay)
        leaves, tdef = jax.tree_util.tree_flatten(params)
        return jax.tree_util.tree_unflatten(tdef, [l * 1.0 for l in leaves]), mom
    P("pytree_adamw_mask_tree_map_with_path", adamw_masked_tree,
      [U((3, 2)), U((2,)), U((3, 2)), U((2,)), U((3, 2)), U((2,))], F, AD)

    def ode_sensitivity(y0, k):
        def f(y):
            def body(i, y):
                return y + 0.05 * jnp.array([y[1], -k * jnp.sin(y[0]) - 0.1 * y[1]], y.dtype)
            return lax.fori_loop(0, 15, body, y)
        return jax.jacfwd(f)(y0), jax.jacrev(f)(y0)
    P("nested_ode_sensitivity_jacfwd_jacrev", ode_sensitivity, [fixed([0.5, 0.0]), fixed(2.0)], F, AD)

    def dqn_td(w, s, a, r, s2, done, w_target):
        q = s @ w
        q_sa = jnp.take_along_axis(q, a[:, None], 1)[:, 0]
        q_next = jnp.max(s2 @ lax.stop_gradient(w_target), 1)
        target = r + 0.99 * (1 - done) * q_next
        td = q_sa - lax.stop_gradient(target)
        return jnp.mean(jnp.where(jnp.abs(td) < 1, 0.5 * td ** 2, jnp.abs(td) - 0.5))
    P("nested_dqn_td_stop_gradient_huber", dqn_td,
      [U((4, 3), -0.5, 0.5), U((6, 4)), ints((6,), 0, 2), U((6,)), U((6, 4)), fixed([0.0, 0.0, 1.0, 0.0, 1.0, 0.0]), U((4, 3), -0.5, 0.5)], F, AD)

    def value_and_grad_aux(w, x, y):
        def loss(w):
            pred = x @ w
            l = jnp.mean((pred - y) ** 2)
            return l, {"pred": pred, "mae": jnp.mean(jnp.abs(pred - y))}
        (l, aux), g = jax.value_and_grad(loss, has_aux=True)(w)
        gg = jax.grad(lambda w: loss(w)[0] + 0.1 * loss(w)[1]["mae"])(w)
        return l, aux["pred"], aux["mae"], g, gg
    P("nested_value_and_grad_has_aux_dict", value_and_grad_aux, [U((3,)), U((5, 3)), U((5,))], F, AD)

    def hessian_pytree(a, b):
        def f(p):
            return jnp.sum(p["a"] ** 2 * jnp.sin(p["b"])) + p["a"][0] * p["b"][1] ** 3
        Hm = jax.hessian(f)({"a": a, "b": b})
        return Hm["a"]["a"], Hm["a"]["b"], Hm["b"]["b"]
    P("nested_hessian_dict_params", hessian_pytree, [U((2,)), U((2,))], F, AD)

    def jit_in_grad_in_vmap(w, X):
        @jax.jit
        def inner(w, x):
            return jnp.sum(jnp.tanh(w * x) ** 2)

        @functools.partial(jax.jit, static_argnums=1)
        def scaled(w, n):
            return w * n

        g = jax.vmap(jax.grad(inner), in_axes=(None, 0))(scaled(w, 2), X)
        return jax.jit(jax.vmap(lambda gi: jnp.dot(gi, gi)))(g)
    P("nested_jit_static_in_vmap_grad", jit_in_grad_in_vmap, [U((3,)), U((4, 3))], F, AD)

    def jacobian_logdet_flow(x, w):
        f = lambda x: x + 0.3 * jnp.tanh(w @ x)
        J = jax.jacfwd(f)(x)
        return jnp.linalg.slogdet(J)[1], jax.vmap(lambda xx: jnp.linalg.slogdet(jax.jacrev(f)(xx))[1])(jnp.stack([x, 2 * x]))
    P("nested_jacobian_logdet_residual_flow", jacobian_logdet_flow, [U((3,)), U((3, 3))], F, AD)

    def grad_of_scan_of_grad(theta, xs):
        def energy(x):
            return jnp.sum(theta[0] * x ** 2 + theta[1] * jnp.cos(x))

        def step(x, _):
            x = x - 0.1 * jax.grad(energy)(x)
            return x, energy(x)
        x, es = lax.scan(step, xs, None, length=5)
        return jnp.sum(es)
    P("nested_grad_through_scan_of_grad", grad_of_scan_of_grad, [fixed([0.5, 1.0]), U((4,))], F, AD + ("hessian",))
