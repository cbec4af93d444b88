"""derivo.elementwise_grad: derivatives of elementwise functions, element by
element, to any order, against closed forms and finite differences."""

import math

import numpy as np
import pytest

import derivo

d = derivo.elementwise_grad
X = np.linspace(-3.0, 3.0, 13)


def tanh_derivatives(x):
    """tanh and its first four derivatives, with t = tanh x and s = 1 - t^2."""
    t = np.tanh(x)
    s = 1 - t * t
    return [t, s, -2 * t * s, -2 * s * s + 4 * t * t * s, 16 * t * s * s - 8 * t ** 3 * s]


def softplus(x):
    return np.log1p(np.exp(x))


def damped(x, rate=0.5):
    return np.exp(-rate * x) * np.sin(3.0 * x)


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_the_derivatives_of_tanh_to_the_fourth(order):
    derivative = np.tanh
    for _ in range(order):
        derivative = d(derivative)
    np.testing.assert_allclose(derivative(X), tanh_derivatives(X)[order], atol=1e-12)
    assert derivative(0.7) == pytest.approx(tanh_derivatives(0.7)[order], abs=1e-12)


def tanh_by_exponentials(x):
    return (1.0 - np.exp(-2 * x)) / (1.0 + np.exp(-(2 * x)))


@pytest.mark.parametrize("order", [3, 4])
def test_a_users_tanh_to_the_fourth(order):
    # (autograd's examples/tanh.py) the third pass differentiates derivo's own
    # np.broadcast_to of the second's adjoint code
    derivative = tanh_by_exponentials
    for _ in range(order):
        derivative = d(derivative)
    np.testing.assert_allclose(derivative(X), tanh_derivatives(X)[order], atol=1e-11)


def test_a_users_elementwise_function_and_its_second_derivative():
    h = 1e-5
    np.testing.assert_allclose(d(softplus)(X), 1 / (1 + np.exp(-X)), rtol=1e-12)
    second = (d(damped)(X + h) - d(damped)(X - h)) / (2 * h)
    np.testing.assert_allclose(d(d(damped))(X), second, rtol=1e-6, atol=1e-8)


def test_a_parameter_that_is_not_the_first():
    rate = d(damped, wrt="rate")(X, 0.5)
    np.testing.assert_allclose(rate, -X * damped(X), rtol=1e-12, atol=1e-14)


def test_it_composes_with_grad_and_math():
    assert derivo.grad(d(np.tanh))(0.3) == pytest.approx(tanh_derivatives(0.3)[2], rel=1e-12)
    assert d(d(math.sin))(0.3) == pytest.approx(-math.sin(0.3), rel=1e-12)


def test_asking_again_gives_the_same_function():
    assert d(np.tanh) is d(np.tanh)


def test_several_parameters_are_refused():
    with pytest.raises(derivo.DerivoError, match="one parameter"):
        d(damped, wrt=(0, 1))


def test_the_source_is_the_tangent_and_the_pass_of_ones():
    made = derivo.elementwise_grad(np.tanh)
    assert "def tanh_jvp(dx, x):" in made.source
    assert made.source.rstrip().endswith("return tanh_jvp(one_like(x), x)[1]")
    twice = derivo.elementwise_grad(made)
    assert "def tanh_elementwise_grad_jvp(" in twice.source
