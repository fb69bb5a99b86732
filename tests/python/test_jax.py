"""The JAX-shaped API, checked against JAX itself on the same functions.

Tolerance: functions of +, -, *, / and reductions small enough to be exact
must match bitwise; transcendental ones within a few float32 ulps
(rtol 2e-6), as the conformance harness allows (docs/conformance.md)."""
import numpy as np
import pytest

from conftest import needs_jax

pytestmark = needs_jax

import frankentrace as ft  # noqa: E402

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # the module is skipped
    pass

RTOL = 2e-6


def close(a, b, rtol=RTOL, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def same_tree(a, b, rtol=RTOL, atol=1e-6):
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    assert ta == tb, (ta, tb)
    for x, y in zip(la, lb):
        assert np.asarray(x).shape == np.asarray(y).shape
        assert np.asarray(x).dtype == np.asarray(y).dtype, (np.asarray(x).dtype, np.asarray(y).dtype)
        close(x, y, rtol, atol)


X = np.linspace(-2, 2, 7, dtype=np.float32)


def test_jit_exact_arithmetic_bitwise():
    f = lambda x, y: (x * 2.0 + y) / 4.0 - x
    y = np.arange(7, dtype=np.float32)
    got = ft.jit(f)(X, y)
    assert isinstance(got, np.ndarray)
    assert got.tobytes() == np.asarray(jax.jit(f)(X, y)).tobytes()


def test_jit_transcendentals_and_cache():
    f = lambda x: jnp.tanh(x) * jnp.exp(-x * x) + jnp.sin(x)
    g = ft.jit(f)
    close(g(X), jax.jit(f)(X))
    close(g(X), jax.jit(f)(X))  # cached: the C path
    assert g.size() == 1
    x2 = np.linspace(0, 1, 3, dtype=np.float32)
    close(g(x2), jax.jit(f)(x2))  # a new shape: a second entry
    assert g.size() == 2


def test_pytrees_closed_over_constants_and_scalars():
    W = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
    b = jnp.ones(3) * 0.5

    def f(params, x, scale):
        h = jnp.tanh(x @ params["w"] + b)
        return {"out": h * scale, "stats": (h.sum(), jnp.max(h))}

    params = {"w": W}
    x = np.ones((4, 2), np.float32)
    same_tree(ft.jit(f)(params, x, 2.0), jax.jit(f)(params, x, 2.0))
    # Python scalars are weakly typed, as in JAX; float64 input is canonicalized to f32.
    same_tree(ft.jit(f)(params, x.astype(np.float64), 3), jax.jit(f)(params, x.astype(np.float64), 3))


def test_static_argnums():
    def f(x, n):
        for _ in range(n):
            x = jnp.sin(x)
        return x

    g = ft.jit(f, static_argnums=1)
    close(g(X, 1), jnp.sin(X))
    close(g(X, 3), jax.jit(f, static_argnums=1)(X, 3))
    assert len(g._cache) == 2


def test_donate_argnums_accepted():
    f = ft.jit(lambda x: x + 1.0, donate_argnums=0)
    assert f(np.zeros(3, np.float32)).tolist() == [1, 1, 1]


def test_jax_array_and_dlpack_inputs():
    xj = jnp.asarray(X)
    f = lambda x: x * 3.0
    assert ft.jit(f)(xj).tobytes() == np.asarray(jax.jit(f)(xj)).tobytes()


def loss(params, x, y):
    pred = jnp.tanh(x @ params["w1"]) @ params["w2"]
    return jnp.mean((pred - y) ** 2)


def mlp_data():
    rng = np.random.default_rng(0)
    params = {"w1": rng.normal(size=(3, 8)).astype(np.float32) * 0.5,
              "w2": rng.normal(size=(8, 2)).astype(np.float32) * 0.5}
    x = rng.normal(size=(16, 3)).astype(np.float32)
    y = rng.normal(size=(16, 2)).astype(np.float32)
    return params, x, y


def test_grad_value_and_grad_pytrees():
    params, x, y = mlp_data()
    same_tree(ft.grad(loss)(params, x, y), jax.jit(jax.grad(loss))(params, x, y), rtol=1e-5)
    same_tree(ft.value_and_grad(loss)(params, x, y), jax.jit(jax.value_and_grad(loss))(params, x, y), rtol=1e-5)
    same_tree(ft.grad(loss, argnums=(0, 1))(params, x, y), jax.jit(jax.grad(loss, argnums=(0, 1)))(params, x, y),
              rtol=1e-5)
    same_tree(ft.jit(ft.grad(loss))(params, x, y), jax.jit(jax.grad(loss))(params, x, y), rtol=1e-5)


def test_has_aux():
    def f(x):
        return jnp.sum(jnp.sin(x)), {"c": jnp.cos(x)}

    same_tree(ft.grad(f, has_aux=True)(X), jax.jit(jax.grad(f, has_aux=True))(X))
    same_tree(ft.value_and_grad(f, has_aux=True)(X), jax.jit(jax.value_and_grad(f, has_aux=True))(X))


def test_second_derivative_by_composition():
    f = lambda x: jnp.sin(x) * x
    d2 = ft.grad(ft.grad(f))
    for v in [0.5, 1.5]:
        close(d2(np.float32(v)), jax.grad(jax.grad(f))(np.float32(v)), rtol=1e-5)


def test_jvp_vjp():
    f = lambda x, y: (jnp.sin(x) * y, jnp.sum(x * y))
    y = np.arange(7, dtype=np.float32) / 3
    tx, ty = np.ones(7, np.float32), np.full(7, 0.5, np.float32)
    same_tree(ft.jvp(f, (X, y), (tx, ty)), jax.jvp(f, (X, y), (tx, ty)))
    out, fn = ft.vjp(f, X, y)
    out_j, fn_j = jax.vjp(f, X, y)
    same_tree(out, out_j)
    ct = (np.ones(7, np.float32), np.float32(2.0))
    same_tree(fn(ct), fn_j(ct))


def test_vmap_in_axes_out_axes():
    f = lambda w, x: jnp.tanh(w @ x)
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    xs = np.linspace(-1, 1, 20, dtype=np.float32).reshape(5, 4)
    same_tree(ft.vmap(f, in_axes=(None, 0))(w, xs), jax.vmap(f, in_axes=(None, 0))(w, xs))
    same_tree(ft.vmap(f, in_axes=(None, 0), out_axes=1)(w, xs),
              jax.vmap(f, in_axes=(None, 0), out_axes=1)(w, xs))
    xt = np.ascontiguousarray(xs.T)
    same_tree(ft.vmap(f, in_axes=(None, 1))(w, xt), jax.vmap(f, in_axes=(None, 1))(w, xt))


def test_per_example_gradients_compose():
    params, x, y = mlp_data()
    g = ft.jit(ft.vmap(ft.grad(loss), in_axes=(None, 0, 0)))
    gj = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
    same_tree(g(params, x[:, None, :], y[:, None, :]), gj(params, x[:, None, :], y[:, None, :]), rtol=1e-5)


def test_jacobians_and_hessian():
    f = lambda x: jnp.sin(x) * jnp.sum(x * x)
    x = X[:4]
    same_tree(ft.jacfwd(f)(x), jax.jit(jax.jacfwd(f))(x), rtol=1e-5)
    same_tree(ft.jacrev(f)(x), jax.jit(jax.jacrev(f))(x), rtol=1e-5)
    s = lambda x: jnp.sum(jnp.sin(x) * x)
    same_tree(ft.hessian(s)(x), jax.jit(jax.hessian(s))(x), rtol=1e-5, atol=1e-5)


def test_jacobians_of_pytrees_tuple_argnums_has_aux():
    def f(p, z):
        y = jnp.sin(p["a"]) * jnp.sum(p["b"] ** 2) + z[0]
        return {"y": y, "s": jnp.sum(y * z)}, jnp.cos(z)

    p = {"a": X[:3], "b": np.array([0.5, -1.0], np.float32)}
    z = np.array([0.1, 0.2, 0.3], np.float32)
    same_tree(ft.jacfwd(f, argnums=(0, 1), has_aux=True)(p, z), jax.jit(jax.jacfwd(f, argnums=(0, 1), has_aux=True))(p, z),
              rtol=1e-5, atol=1e-5)
    same_tree(ft.jacrev(f, argnums=(0, 1), has_aux=True)(p, z), jax.jit(jax.jacrev(f, argnums=(0, 1), has_aux=True))(p, z),
              rtol=1e-5, atol=1e-5)
    s = lambda p: f(p, z)[0]["s"]
    same_tree(ft.hessian(s)(p), jax.jit(jax.hessian(s))(p), rtol=1e-5, atol=1e-5)  # blocks across leaves
    low = ft.jit(ft.jacrev(s)).lower(p)
    assert low.as_text("plan") and low.as_text("jaxpr")
    with pytest.raises(ft.UnsupportedError, match="several"):
        ft.vmap(ft.jacfwd(lambda p: f(p, z)[0]))({"a": np.ones((2, 3), np.float32),
                                                  "b": np.ones((2, 2), np.float32)})


def test_lower_as_text_stages():
    f = lambda x: jnp.sum(jnp.sin(x) * 1.0)
    low = ft.jit(ft.grad(f)).lower(X)
    assert "sin" in low.as_text("jaxpr")
    assert "cos" in low.as_text("grad")
    assert low.as_text("optimized").startswith("{")
    assert "step" in low.as_text("plan").lower() or "kernel" in low.as_text("plan").lower()
    with pytest.raises(ValueError, match="stages"):
        low.as_text("nope")


def test_ledger_records_a_jit(tmp_path):
    d = tmp_path / "ledger"
    f = ft.jit(ft.grad(lambda x: jnp.sum(jnp.tanh(x))))
    with ft.ledger(d):
        f(X)
    r = ft.ledger_verify(d)
    assert r.ok and r.records >= 3


def test_export_and_load_aot(tmp_path):
    f = lambda x, y: jnp.tanh(x) * y
    y = np.full(7, 2.0, np.float32)
    path = ft.export(f, X, y, path=tmp_path / "libf.so")
    g = ft.load_aot(path)
    (out,) = g(X, y)
    assert out.tobytes() == ft.jit(lambda x, y: (jnp.tanh(x) * y,))(X, y)[0].tobytes()
    close(out, jax.jit(f)(X, y))


def test_errors_surface_as_exceptions():
    with pytest.raises(ft.TypeCheckError, match="scalar"):
        ft.grad(lambda x: x * 2.0)(X)  # not a scalar output
    with pytest.raises(ft.FrankenTraceError):
        ft.grad(lambda x: jnp.sum(x))(np.arange(3, dtype=np.int32))  # integer input
    with pytest.raises(TypeError):
        ft.jit(lambda x, n: x * n, static_argnums=1)(X, [1, 2])  # unhashable static
    with pytest.raises(ft.TypeCheckError):
        ft.vmap(lambda a, b: a + b)(np.ones((3, 2), np.float32), np.ones((4, 2), np.float32))


def test_fast_path_threads_and_numpy_scalars():
    import threading
    f = lambda x, s: jnp.tanh(x) * s
    g = ft.jit(f)
    s = np.float32(1.5)  # a NumPy scalar: not weakly typed, on the C path
    want = np.asarray(jax.jit(f)(X, s))
    close(g(X, s), want)
    assert g.size() == 1
    got = []

    def work():
        for _ in range(100):
            got.append(g(X, s).tobytes())

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(set(got)) == 1 and len(got) == 400
    close(np.frombuffer(got[0], np.float32), want)
    # A Python float is weakly typed: another entry (slow path), the same value.
    close(g(X, 1.5), want)


def test_jvp_vjp_has_aux_and_integer_inputs():
    def f(x, k):
        y = jnp.sin(x) * k.astype(jnp.float32)
        return y, {"k2": k * 2, "c": jnp.cos(x)}

    k = np.arange(7, dtype=np.int32)
    t = np.ones(7, np.float32)
    tk = np.zeros(7, dtype=jax.dtypes.float0)
    got = ft.jvp(f, (X, k), (t, tk), has_aux=True)
    want = jax.jvp(f, (X, k), (t, tk), has_aux=True)
    same_tree(got, want)
    out, fn, aux = ft.vjp(f, X, k, has_aux=True)
    out_j, fn_j, aux_j = jax.vjp(f, X, k, has_aux=True)
    same_tree((out, aux), (out_j, aux_j))
    ct = np.linspace(0, 1, 7, dtype=np.float32)
    gx, gk = fn(ct)
    gx_j, gk_j = fn_j(ct)
    close(gx, gx_j)
    assert gk.dtype == gk_j.dtype and gk.shape == gk_j.shape


def test_ft_inside_a_jax_trace_is_a_clear_error():
    g = ft.grad(lambda x: jnp.sum(jnp.sin(x)))
    with pytest.raises(ft.UnsupportedError, match="JAX tracer"):
        ft.jit(lambda x: g(x) * 2.0)(X)
    with pytest.raises(ft.UnsupportedError, match="JAX tracer"):
        jax.jit(lambda x: g(x))(X)


def test_custom_jvp_rule_only_named_is_refused():
    # JAX prints a custom_jvp rule written in Python only by name (jvp=_):
    # differentiating the function instead would give NaN at 0 here, where
    # the rule gives 0 (docs/autodiff.md), so ft.grad refuses.
    @jax.custom_jvp
    def safe_norm(x):
        return jnp.sqrt(jnp.sum(x ** 2, -1))

    @safe_norm.defjvp
    def _(p, t):
        x, = p
        dx, = t
        n = safe_norm(x)
        return n, jnp.sum(jnp.where(n[..., None] > 0, x / jnp.where(n > 0, n, 1.0)[..., None], 0.0) * dx, -1)

    x = np.array([[0.0, 0.0], [3.0, 4.0]], np.float32)
    with pytest.raises(ft.UnsupportedError, match=r"custom_jvp_call 'safe_norm'.*jvp=_"):
        ft.grad(lambda x: jnp.sum(safe_norm(x)))(x)


def test_relu_gets_jaxs_rule_at_zero():
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    f = lambda x: jnp.sum(jax.nn.relu(x))
    np.testing.assert_array_equal(np.asarray(ft.grad(f)(x)), np.asarray(jax.grad(f)(x)))
