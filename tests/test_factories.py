"""A function a call returns and the caller calls later (a closure factory),
inside or outside the differentiated function, checked against central
differences in grad, value_and_grad and jvp."""

import math

import numpy as np
import pytest

import derivo

from checks import assert_close

H = 1e-6


def make_scaler(a):
    def scale(x):
        return a * x
    return scale


def make_layer(w, b):
    shift = b * 2.0
    act = lambda z: np.tanh(z @ w + shift)  # noqa: E731
    return act


def make_plain():
    def square(x):
        return x * x
    return square


def with_a_global_factory(x, a):
    scale = make_scaler(a)
    return math.sin(scale(x)) + scale(x * x)


def with_a_local_factory(x, a):
    def make(b):
        def g(z):
            return b * math.sin(z)
        return g
    g = make(a)
    return g(x) * g(a)


def with_a_factory_computing_values(x, a):
    def make(b):
        c = b * b
        def f(z):
            return c * z + math.exp(z)
        return f
    f = make(a * x)
    total = 0.0
    for i in range(3):
        total = total + f(x + i)
    return total


def with_a_factory_of_no_free_names(x, a):
    square = make_plain()
    return square(x * a)


def with_a_layer(x, a):
    layer = make_layer(np.array([[a, 0.5], [0.25, x]]), x)
    return float(np.sum(layer(np.array([1.0, -2.0]))))


@pytest.mark.parametrize("f", [with_a_global_factory, with_a_local_factory,
                               with_a_factory_computing_values, with_a_factory_of_no_free_names,
                               with_a_layer])
def test_a_returned_function_called(f):
    x, a = 0.7, 1.3
    for position in (0, 1):
        def along(step):
            args = [x, a]
            args[position] += step
            return f(*args)
        expected = (along(H) - along(-H)) / (2 * H)
        assert_close(derivo.grad(f, wrt=position)(x, a), expected, rtol=1e-6)
        value, gradient = derivo.value_and_grad(f, wrt=position)(x, a)
        assert_close(value, f(x, a))
        assert_close(gradient, expected, rtol=1e-6)
    tangent = derivo.jvp(f, (x, a), (1.0, 0.0))[1]
    assert_close(tangent, (f(x + H, a) - f(x - H, a)) / (2 * H), rtol=1e-6)
