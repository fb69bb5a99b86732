"""The JAX-free API: parse, Program, the library's transforms on parsed
programs, errors, arrays, ledgers and AOT. Runs with or without JAX."""
import os
import threading

import numpy as np
import pytest

import frankentrace as ft

AXPY = "{ lambda ; a:f32[] b:f32[4] c:f32[4]. let d:f32[4] = mul a b; e:f32[4] = add d c in (e,) }"
TANH = "{ lambda ; a:f32[5]. let b:f32[5] = tanh a; c:f32[] = reduce_sum[axes=(0,) out_sharding=None] b in (c,) }"
WITH_CONST = "{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = mul a b in (c,) }"


def test_parse_and_call_exact():
    p = ft.parse(AXPY)
    assert [str(a) for a in p.in_avals] == ["f32[]", "f32[4]", "f32[4]"]
    b = np.array([1, 2, 3, 4], np.float32)
    c = np.array([0.5, -1, 0, 8], np.float32)
    (y,) = p(np.float32(2.0), b, c)
    assert y.dtype == np.float32 and y.tolist() == [2.5, 3.0, 6.0, 16.0]
    (z,) = p.eval(np.float32(2.0), b, c)  # the interpreter: the same bits
    assert z.tobytes() == y.tobytes()
    assert len(p.hash) == 32


def test_jit_complex_division_in_an_extension():
    # The extension is dlopened RTLD_LOCAL: libgcc_s (C's complex division,
    # __divsc3/__divdc3, which the kernels call) is not in the process's
    # global scope, and compiling this failed with 'Symbols not found'.
    for dt, ct in (("c64", np.complex64), ("c128", np.complex128)):
        p = ft.parse(f"{{ lambda ; a:{dt}[3] b:{dt}[3]. let c:{dt}[3] = div a b in (c,) }}")
        a = np.array([1 + 2j, -3.5 + 0.25j, 1e30 + 1e30j], ct)
        b = np.array([0.5 - 1j, 2 + 0j, 1e-30 + 3e30j], ct)
        (y,) = p(a, b)
        (z,) = p.eval(a, b)  # the interpreter's C division: the same bits
        assert y.dtype == ct and y.tobytes() == z.tobytes()
        assert np.allclose(y[:2], a[:2] / b[:2], rtol=1e-6)


def test_load_jaxpr_from_file(tmp_path):
    f = tmp_path / "axpy.jaxpr"
    f.write_text(AXPY)
    p = ft.load_jaxpr(f)
    (y,) = p(np.float32(1.0), np.ones(4, np.float32), np.ones(4, np.float32))
    assert y.tolist() == [2.0] * 4


def test_constants_bound_or_leading():
    p = ft.parse(WITH_CONST)
    (y,) = p(np.array([1, 2, 3], np.float32), np.array([4, 5, 6], np.float32))  # consts first
    assert y.tolist() == [4, 10, 18]
    q = ft.parse(WITH_CONST, consts=[np.array([1, 2, 3], np.float32)])
    assert q.consts_bound
    (y,) = q(np.array([4, 5, 6], np.float32))
    assert y.tolist() == [4, 10, 18]


def test_outputs_own_library_buffers_and_go_back_without_copy():
    p = ft.parse(AXPY)
    (y,) = p(np.float32(1.0), np.ones(4, np.float32), np.ones(4, np.float32))
    assert not y.flags.owndata and y.base is not None  # the library's buffer, kept alive by y
    assert y.ctypes.data % 64 == 0 and y.flags.c_contiguous and y.flags.writeable
    assert ft._ft.is_aligned(y)  # so it is passed back in without a copy
    a = ft.aligned(np.arange(4, dtype=np.float32))
    assert ft._ft.is_aligned(a) and ft.aligned(a) is a
    del p
    y += 1  # still valid after the program is gone
    assert y.tolist() == [3.0] * 4


def test_inputs_converted_to_the_program_dtype_and_layout():
    p = ft.parse(AXPY)
    b = np.arange(8, dtype=np.float64)[::2]  # f64, strided: converted
    (y,) = p(2, b, [0, 0, 0, 0])
    assert y.tolist() == [0.0, 4.0, 8.0, 12.0]


def test_library_transforms_on_a_parsed_program():
    p = ft.parse(TANH)
    x = np.linspace(-1, 1, 5).astype(np.float32)
    (g,) = p.grad()(x)
    want = 1 - np.tanh(x.astype(np.float64)) ** 2
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-7)
    v, g2 = p.value_and_grad()(x)
    assert g2.tobytes() == g.tobytes()
    np.testing.assert_allclose(v, np.tanh(x.astype(np.float64)).sum(), rtol=1e-6)
    (jac,) = p.jacrev()(x)
    assert jac.tobytes() == g.tobytes()
    (h,) = p.hessian()(x)
    t = np.tanh(x.astype(np.float64))
    np.testing.assert_allclose(h, np.diag(-2 * t * (1 - t * t)), rtol=1e-5, atol=1e-6)
    vm = p.vmap(3)
    xs = np.stack([x, 2 * x, -x])
    (ys,) = vm(xs)
    for i in range(3):
        assert ys[i].tobytes() == p(xs[i])[0].tobytes()  # vmap == stacked calls, bitwise


def test_stages_and_plan():
    p = ft.parse(TANH)
    assert "tanh" in p.text and "reduce_sum" in p.optimize().text
    assert "step" in p.plan().lower() or "kernel" in p.plan().lower()


@pytest.mark.parametrize("text, cls, words", [
    ("{ lambda ; a:f32[3]. let b:f32[3] = frobnicate a in (b,) }", ft.FrankenTraceError, "frobnicate"),
    ("{ lambda ; a:f32[3]. let b:f32[3] = mul a in (b,) }", ft.FrankenTraceError, "mul"),
    ("{ lambda ; a:f32[3] let }", ft.ParseError, "1:"),
    ("", ft.ParseError, ""),
    ("{ lambda ; a:f32[3]. let b:i32[3] = add a a in (b,) }", ft.FrankenTraceError, "add"),
])
def test_bad_text_raises_with_the_library_message(text, cls, words):
    with pytest.raises(cls) as e:
        ft.parse(text)
    assert words in str(e.value)
    assert e.value.status.startswith("FT_ERR_")


def test_error_classes():
    with pytest.raises(ft.ParseError) as e:
        ft.parse("{ lambda ; a:f32[3]. let b = in (b,) }")
    assert e.value.status == "FT_ERR_PARSE" and "^" in str(e.value)
    assert issubclass(ft.ParseError, ft.FrankenTraceError)
    assert issubclass(ft.TypeCheckError, TypeError)
    assert issubclass(ft.UnsupportedError, ft.FrankenTraceError)
    assert issubclass(ft.ExecutionError, RuntimeError)


def test_bad_calls_never_crash():
    p = ft.parse(AXPY)
    with pytest.raises(ft.TypeCheckError):
        p(np.float32(1.0), np.ones(5, np.float32), np.ones(4, np.float32))  # shape
    with pytest.raises(ft.TypeCheckError):
        p(np.float32(1.0))  # arity
    with pytest.raises((TypeError, ValueError)):
        p(object(), np.ones(4, np.float32), np.ones(4, np.float32))
    fn = p.compile()
    with pytest.raises(TypeError):
        fn(1.0, 2.0, 3.0)  # not arrays
    with pytest.raises(ft.TypeCheckError):
        fn(np.ones(4, np.int32), np.ones(4, np.float32), np.ones(4, np.float32))
    with pytest.raises(ft.TypeCheckError):
        fn(np.ones((2, 2, 2, 2, 2, 2, 2, 2, 2), np.float32), np.ones(4, np.float32), np.ones(4, np.float32))
    with pytest.raises(ft.TypeCheckError):
        fn(np.array(["x"]), np.ones(4, np.float32), np.ones(4, np.float32))
    with pytest.raises(TypeError):
        ft.parse(b"bytes")
    with pytest.raises(ft.FrankenTraceError):
        p.grad(argnums=7)
    with pytest.raises(ft.FrankenTraceError):
        ft.parse(TANH).vmap(3, in_axes=5)


def test_calls_from_threads_agree():
    p = ft.parse(TANH)
    x = np.linspace(-3, 3, 5).astype(np.float32)
    (want,) = p(x)
    got = []

    def work():
        for _ in range(50):
            got.append(p(x)[0].tobytes())

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(got) == 200 and set(got) == {want.tobytes()}


def test_ledger_records_and_verifies(tmp_path):
    d = tmp_path / "ledger"
    with ft.ledger(d):
        p = ft.parse(TANH)
        g = p.grad()
        g(np.ones(5, np.float32))
    r = ft.ledger_verify(d)
    assert r.ok and r.health == "clean" and r.first_bad_seq == 0
    import json
    kinds = [json.loads(line)["kind"] for line in (d / "log.jsonl").read_text().splitlines()]
    assert {"parse", "transform", "compile", "call"} <= set(kinds), kinds
    # Damage a byte of the log: verify says so (no exception, no crash).
    path = d / "log.jsonl"
    data = bytearray(path.read_bytes())
    data[10] ^= 0x20
    path.write_bytes(bytes(data))
    r2 = ft.ledger_verify(d)
    assert not r2.ok and r2.health == "corrupt"
    with pytest.raises(ft.FrankenTraceError):
        ft.ledger_verify(tmp_path / "no-such-ledger")


def test_ledgers_do_not_nest(tmp_path):
    with ft.ledger(tmp_path / "a"):
        with pytest.raises(ft.FrankenTraceError, match="already open"):
            with ft.ledger(tmp_path / "b"):
                pass
    assert ft.ledger_verify(tmp_path / "a").ok


def test_aot_roundtrip(tmp_path):
    p = ft.parse(AXPY)
    so = tmp_path / "libaxpy.so"
    ft._core.export_program(p, so, "axpy")
    f = ft.load_aot(so)
    b = np.array([1, 2, 3, 4], np.float32)
    (y,) = f(np.float32(3.0), b, b)
    assert y.tobytes() == p(np.float32(3.0), b, b)[0].tobytes()
    g = ft.load_aot(so, name="axpy", jaxpr=AXPY)  # the ftc-compile way: signature from the program
    assert g(np.float32(3.0), b, b)[0].tolist() == [4, 8, 12, 16]
    with pytest.raises(ft.TypeCheckError):
        f(np.float32(3.0), b[:3], b)
    with pytest.raises(ft.FrankenTraceError):
        ft.load_aot(tmp_path / "missing.so")


def test_aligned_numpy_allocator():
    with ft.aligned_numpy():
        xs = [np.ones(n, np.float32) for n in (1, 7, 1000, 100000)]
        ys = [np.arange(n, dtype=np.float64) * 2 for n in (3, 33)]
        z = np.ones(5, np.float32)
        z.resize(5000, refcheck=False)  # realloc keeps the alignment
    assert all(ft._ft.is_aligned(a) for a in xs + ys + [z])
    assert z[:5].tolist() == [1.0] * 5 and ys[1][-1] == 64.0
    try:
        from numpy._core.multiarray import get_handler_name
    except ImportError:  # NumPy 1.x
        from numpy.core.multiarray import get_handler_name
    assert get_handler_name(xs[0]) == "frankentrace_aligned64"
    assert get_handler_name(np.ones(3)) != "frankentrace_aligned64"  # restored after the block
