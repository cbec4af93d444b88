"""Derivatives of derivatives of array code: reverse mode over a generated gradient
runs one tangent pass per component of each differentiated argument
(runtime.gradient_by_tangents)."""

import math

import numpy as np
import pytest

import derivo
from examples.temperature import (fit_temperature, nll, nll_curvature, nll_slope,
                                  overconfident_problem)

W = np.array([0.5, -1.0, 2.0])


def well(x):
    return np.sum(np.tanh(x * W) ** 2)


def second_difference(f, x, h=1e-4):
    return (f(x + h) - 2.0 * f(x) + f(x - h)) / h ** 2


def test_grad_of_grad_of_array_code_in_a_float():
    x = 0.3
    t = np.tanh(x * W)
    exact = np.sum(2.0 * W * W * (1.0 - t * t) * (1.0 - 3.0 * t * t))
    assert derivo.grad(derivo.grad(well))(x) == pytest.approx(exact, rel=1e-12)
    assert derivo.grad(derivo.grad(well))(x) == pytest.approx(second_difference(well, x),
                                                              rel=1e-5)
    value, second = derivo.value_and_grad(derivo.grad(well))(x)
    assert value == pytest.approx(derivo.grad(well)(x), rel=1e-15)
    assert second == pytest.approx(exact, rel=1e-12)


def cubic(v):
    return np.sum(np.sin(v) * v[0]) + np.sum(v ** 3)


def test_the_vjp_of_an_array_gradient_is_a_hessian_vector_product():
    v = np.array([0.2, 0.4, -0.5])
    u = np.array([1.0, 0.0, 2.0])
    out, vjp_fn = derivo.vjp(derivo.grad(cubic), v)
    np.testing.assert_allclose(out, derivo.grad(cubic)(v), rtol=1e-15)
    (product,) = vjp_fn(u)
    np.testing.assert_allclose(product, derivo.hessian(cubic)(v) @ u, rtol=1e-12)


def tanh_sum(x):
    return np.sum(np.tanh(x))


first = derivo.grad(tanh_sum)


def first_sum(x):
    return np.sum(first(x))


def test_elementwise_second_derivative_of_tanh():
    x = np.array([0.1, 0.5, 1.0, -2.0])
    t = np.tanh(x)
    np.testing.assert_allclose(derivo.grad(first_sum)(x), -2.0 * t * (1.0 - t * t),
                               rtol=1e-12)


def test_a_list_argument_of_the_passes_is_refused():
    with pytest.raises(derivo.DerivoError, match="pass np.asarray"):
        derivo.grad(first_sum)([0.1, 0.5])


def test_a_third_derivative_through_the_passes_is_refused():
    def second_sum(x):
        return np.sum(derivo.grad(first_sum)(x))
    with pytest.raises(derivo.DerivoError, match="cannot differentiate"):
        derivo.grad(second_sum)(np.array([0.1, 0.5]))


def test_newton_fits_the_temperature():
    logits, labels = overconfident_problem()
    fitted = fit_temperature(logits, labels)
    assert abs(nll_slope(fitted, logits, labels)) < 1e-10
    assert nll(fitted, logits, labels) < nll(1.0, logits, labels)
    assert nll_curvature(fitted, logits, labels) == pytest.approx(
        second_difference(lambda t: nll(t, logits, labels), fitted, h=1e-3), rel=1e-4)


def test_second_derivatives_of_an_einsum_of_three_and_four_operands():
    A = np.arange(12.0).reshape(3, 4) / 10
    B = np.arange(16.0).reshape(4, 4) / 7
    M = A @ B
    x = np.linspace(0.1, 1.0, 4)

    def quadratic(x):
        return np.einsum("i,ij,jk,k->", x[:3], A, B, x)

    def squared_chain(x):
        return np.sum(np.einsum("ij,jk,k->i", A, B, x) ** 2)

    expected = np.zeros((4, 4))
    expected[:3] = M
    np.testing.assert_allclose(derivo.hessian(quadratic)(x), expected + expected.T, rtol=1e-12)
    np.testing.assert_allclose(derivo.hessian(squared_chain)(x), 2 * M.T @ M, rtol=1e-12)
    gradient_norm = derivo.grad(lambda x: np.sum(derivo.grad(squared_chain)(x) ** 2))
    np.testing.assert_allclose(gradient_norm(x), 8 * M.T @ M @ M.T @ M @ x, rtol=1e-12)


def squared_product(x, y):
    p = math.prod([x, y])
    return p * p


def sine_of_a_product(x, y):
    return math.sin(math.prod([x, y]))


@pytest.mark.parametrize("f, expected", [
    (squared_product, lambda x, y: [[2 * y * y, 4 * x * y], [4 * x * y, 2 * x * x]]),
    (sine_of_a_product, lambda x, y: [
        [-math.sin(x * y) * y * y, math.cos(x * y) - math.sin(x * y) * x * y],
        [math.cos(x * y) - math.sin(x * y) * x * y, -math.sin(x * y) * x * x]])])
def test_the_hessian_through_math_prod(f, expected):
    # the tangent of the product's adjoints joined two lists where it should add them
    assert np.allclose(derivo.hessian(f, wrt=(0, 1))(0.7, -0.4), expected(0.7, -0.4))
