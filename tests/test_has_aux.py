"""grad and value_and_grad with has_aux=True: the function returns (loss, aux),
the loss is differentiated and aux comes back untouched, as in JAX."""

import numpy as np
import pytest

import derivo
from checks import assert_close, numeric_grad


def product_and_sum(x, y):
    return x * y, x + y


def loss_and_state(w):
    p = np.tanh(w)
    return np.sum(p * p), {"p": p, "steps": 3}


def loop_and_trace(x, n):
    s = x
    trace = []
    for i in range(n):
        s = np.sin(s) * 1.5
        trace.append(s)
    return np.sum(s * s), trace


def _central(f, w, h=1e-6):
    """Central differences of the scalar f at the array w, one per entry."""
    out = np.zeros_like(w)
    for i in range(w.size):
        e = np.zeros_like(w)
        e.flat[i] = h
        out.flat[i] = (f(w + e) - f(w - e)) / (2 * h)
    return out


def test_grad_with_aux_returns_the_gradient_and_the_aux_untouched():
    gradient, aux = derivo.grad(product_and_sum, has_aux=True)(2.0, 3.0)
    assert_close(gradient, numeric_grad(lambda x, y: x * y, (2.0, 3.0)))
    assert aux == 5.0
    grads, aux = derivo.grad(product_and_sum, wrt=(0, 1), has_aux=True)(2.0, 3.0)
    assert_close(grads, (3.0, 2.0)) and aux == 5.0


def test_value_and_grad_with_aux_returns_the_value_and_aux_then_the_gradient():
    (value, aux), gradient = derivo.value_and_grad(product_and_sum, has_aux=True)(2.0, 3.0)
    assert (value, aux) == (6.0, 5.0)
    assert_close(gradient, 3.0)


@pytest.mark.parametrize("loops", ["stack", "checkpoint"])
def test_an_array_loss_with_a_dict_aux_matches_finite_differences(loops):
    w = np.array([0.1, -0.4, 0.7])
    gradient, aux = derivo.grad(loss_and_state, has_aux=True, loops=loops)(w)
    np.testing.assert_allclose(gradient, _central(lambda v: loss_and_state(v)[0], w),
                               rtol=1e-6)
    assert set(aux) == {"p", "steps"} and aux["steps"] == 3
    np.testing.assert_array_equal(aux["p"], np.tanh(w))
    (value, aux), gradient = derivo.value_and_grad(loss_and_state, has_aux=True)(w)
    assert_close(value, loss_and_state(w)[0])
    np.testing.assert_array_equal(aux["p"], np.tanh(w))
    np.testing.assert_allclose(gradient, _central(lambda v: loss_and_state(v)[0], w),
                               rtol=1e-6)


@pytest.mark.parametrize("loops", ["stack", "checkpoint"])
def test_an_aux_the_loop_builds_is_what_the_function_returns(loops):
    x = np.array([0.3, 0.8])
    (value, trace), gradient = derivo.value_and_grad(
        loop_and_trace, has_aux=True, loops=loops)(x, 4)
    expected_value, expected_trace = loop_and_trace(x, 4)
    assert_close(value, expected_value)
    assert len(trace) == 4
    for got, want in zip(trace, expected_trace):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(gradient, _central(lambda v: loop_and_trace(v, 4)[0], x),
                               rtol=1e-6)


def scalar_loop_and_trace(x, n):
    s = x
    trace = []
    for i in range(n):
        s = s * 0.5 + x
        trace.append(s)
    return s * s, trace


@pytest.mark.parametrize("loops", ["stack", "checkpoint"])
def test_a_scalar_loop_with_a_list_aux(loops):
    (value, trace), gradient = derivo.value_and_grad(
        scalar_loop_and_trace, has_aux=True, loops=loops)(0.7, 5)
    assert (value, trace) == scalar_loop_and_trace(0.7, 5)
    assert_close(gradient, numeric_grad(lambda x: scalar_loop_and_trace(x, 5)[0], (0.7,)))


def one_value(x):
    return x * x


def three_values(x):
    return x * x, x, 2.0 * x


def test_has_aux_needs_a_pair_and_names_the_return():
    with pytest.raises(derivo.DerivoError, match=r"test_has_aux.py:\d+:\d+: with has_aux=True, "
                       r"one_value must return a pair \(loss, aux\), got 1"):
        derivo.grad(one_value, has_aux=True)(1.0)
    with pytest.raises(derivo.DerivoError, match="got 3 value"):
        derivo.grad(three_values, has_aux=True)(1.0)


def test_has_aux_of_a_derivative_is_refused():
    with pytest.raises(derivo.DerivoError, match="has_aux=True takes a function"):
        derivo.grad(derivo.grad(one_value), has_aux=True)(1.0)
