# Tests of the frankentrace Python package (tools/python-tests runs them with
# a Python that has JAX and with one that does not).
import pytest

try:
    import jax  # noqa: F401
    HAVE_JAX = True
except ImportError:
    HAVE_JAX = False

needs_jax = pytest.mark.skipif(not HAVE_JAX, reason="JAX is not installed in this Python")
