"""A primitive given to derivo directly (derivo.grad(np.tanh), derivo.vjp(math.sin, x))
is differentiated through its rule."""

import math

import numpy as np
import pytest

import derivo

from checks import assert_close


def test_grad_of_a_math_function():
    assert_close(derivo.grad(math.sin)(0.3), math.cos(0.3), rtol=1e-15)
    assert_close(derivo.grad(math.atan2, wrt=(0, 1))(1.0, 2.0), (2.0 / 5.0, -1.0 / 5.0),
                 rtol=1e-15)


def test_grad_and_vjp_of_a_numpy_function():
    assert_close(derivo.grad(np.tanh)(0.5), 1.0 - np.tanh(0.5) ** 2, rtol=1e-15)
    x = np.array([0.1, 0.5, -2.0])
    out, vjp_fn = derivo.vjp(np.tanh, x)
    np.testing.assert_array_equal(out, np.tanh(x))
    (cotangent,) = vjp_fn(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(cotangent, np.array([1.0, 2.0, 3.0]) * (1.0 - np.tanh(x) ** 2),
                               rtol=1e-15)


def test_forward_mode_and_second_derivatives():
    out, tangent = derivo.jvp(np.exp, (0.7,), (2.0,))
    assert_close((out, tangent), (math.exp(0.7), 2.0 * math.exp(0.7)), rtol=1e-15)
    assert_close(derivo.hessian(math.exp)(1.0), math.e, rtol=1e-15)
    assert_close(derivo.grad(derivo.grad(math.sin))(0.4), -math.sin(0.4), rtol=1e-15)


def test_one_wrapper_per_primitive_is_cached():
    derivo.grad(math.cos)
    hits = derivo.cache_info().hits
    derivo.grad(math.cos)
    assert derivo.cache_info().hits == hits + 1


def test_a_primitive_without_a_rule_is_refused():
    with pytest.raises(derivo.DerivoError, match="ldexp"):
        derivo.grad(np.ldexp)
