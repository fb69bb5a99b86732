"""Extra JAX 0.10.2 printouts for tests/ir (run with .venv-oracle/bin/python
from the repository root). Each case pins down a printer rule the golden
fixtures exercise little or not at all."""
import jax, jax.numpy as jnp, numpy as np
from jax import lax

CASES = {}
def case(name):
    def d(f):
        CASES[name] = f
        return f
    return d

f32 = lambda *s: jnp.ones(s, jnp.float32)

@case("cond_branches_hoisted")      # branch jaxprs with > 10 eqns: "jaxpr", "jaxpr1"
def _():
    def big(y, k):
        for i in range(12): y = y * (k + i)
        return y
    return (lambda p, x: lax.cond(p, lambda y: big(y, 1.0), lambda y: big(y, 2.0), x)), (True, f32(3))

@case("while_body_hoisted")         # while: cond before body in the hoisting order
def _():
    def body(c):
        i, y = c
        for k in range(11): y = jnp.sin(y) + k
        return i + 1, y
    return (lambda x: lax.while_loop(lambda c: c[0] < 5, body, (0, x))), (f32(2),)

@case("jit_drop_suggestion")        # an unused jit result lends `_` to the inner var
def _():
    @jax.jit
    def g(x): return jnp.sin(x), jnp.cos(x)
    return (lambda x: g(x)[0]), (f32(3),)

@case("empty_branch_and_trailing_space")  # `let  in`, iota's trailing space
def _():
    return (lambda i, x: (lax.switch(i, [lambda y: y, lambda y: -y], x),
                          lax.iota(jnp.int32, 4))), (1, f32(3))

@case("complex_literals")
def _():
    return (lambda x: (x * (1 + 2j), x + 1j, x - (0.5 - 0.25j))), (jnp.ones(3, jnp.complex64),)

@case("many_outputs_wrap")          # a long binder list wraps greedily
def _():
    return (lambda x: jnp.split(x, 12)), (f32(24),)

@case("vmap_np_int_params")         # np.int64(...) inside params
def _():
    return jax.vmap(lambda x: jnp.pad(x, 1)), (f32(2, 3),)

@case("custom_jvp_consts")          # custom_jvp_call with num_consts != 0
def _():
    c = jnp.arange(3.0)
    @jax.custom_jvp
    def f(x): return jnp.sin(x) * c
    f.defjvp(lambda p, t: (f(p[0]), jnp.cos(p[0]) * c * t[0]))
    return (lambda x: f(x)), (f32(3),)

@case("deep_jit_names")             # suggestions through nested jits
def _():
    @jax.jit
    def inner(a, b): return a * b, a
    @jax.jit
    def outer(a): return inner(a, 2.0)[0] + inner(a, a)[1]
    return (lambda x: outer(x)), (f32(3),)

@case("jit_all_results_dropped")    # `in (_, _, _)`: three different vars, all `_`
def _():
    @jax.jit
    def g(x, y): return jnp.sin(x), -y, jnp.cos(x)
    return (lambda x, y: (g(x, y), x * 2)[1]), (f32(), f32(1))

if __name__ == "__main__":
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    for name, f in CASES.items():
        fn, args = f()
        text = str(jax.make_jaxpr(fn)(*args))
        with open(os.path.join(here, name + ".jaxpr"), "w") as fh:
            fh.write(text + "\n")
        print(name)
