"""Derivatives of derivatives of array code: reverse mode over a generated gradient
runs one tangent pass per component of each differentiated argument
(runtime.gradient_by_tangents)."""

import math

import numpy as np
import pytest
import scipy.linalg
import scipy.signal

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


# --- Hessians through the adjoints of NumPy's reductions, shapes and selections -----
# Each function's gradient code calls the helper named beside it (a rule of
# derivo.rules.runtime), whose tangent the Hessian goes through.

STEPS = np.array([0.5, 1.0, 2.0, 3.0, 1.5])


def product(x):
    return np.prod(x)


def row_products(x):
    return np.sum(np.prod(np.reshape(x, (2, 3)), axis=1) ** 2)


def column_products(x):
    return np.sum(np.sin(np.prod(np.reshape(x, (3, 2)), axis=0, keepdims=True)))


def squared_cumsum(x):
    return np.sum(np.cumsum(x) ** 2)


def cumsum_of_a_matrix(x):
    return np.sum(np.cumsum(np.reshape(x, (2, 3)), axis=1) ** 3)


def cumprod_sum(x):
    return np.sum(np.cumprod(x) * STEPS[:len(x)])


def squared_differences(x):
    return np.sum(np.diff(x) ** 2 * STEPS[:len(x) - 1])


def second_differences(x):
    return np.sum(np.diff(x ** 2, 2) ** 2)


def sorted_cubes(x):
    return np.sum(np.sort(x) ** 3 * np.arange(len(x)))


def tiled(x):
    return np.sum(np.tile(x, (2, 1)) ** 3 * np.arange(2.0 * len(x)).reshape(2, -1))


def repeated(x):
    return np.sum(np.repeat(x, [1, 2, 0, 3]) ** 3 * np.arange(6.0))


def trace_of_products(x):
    return np.trace(np.outer(x, x) @ np.diag(x ** 2))


def diagonal_squares(x):
    return np.sum(np.diagonal(np.outer(x, x ** 2), 1) ** 2)


def diag_of_a_vector(x):
    return np.sum(np.diag(x, 1) @ np.diag(x ** 2, 1))


def taken(x):
    return np.sum(np.take(x, [0, 2, 2, 3]) ** 3)


def padded(x):
    return np.sum(np.pad(x, (1, 2), mode="reflect") ** 3 * np.arange(len(x) + 3.0))


def rolled_axes(x):
    return np.sum(np.rollaxis(np.reshape(x, (2, 2)), 1) ** 3 * np.arange(4.0).reshape(2, 2))


def median_squared(x):
    return np.median(x ** 2) ** 2 + np.quantile(x, 0.3) ** 3


def partitioned(x):
    return np.sum(np.partition(x, 1) ** 3 * np.arange(len(x)))


def ptp_squared(x):
    return np.ptp(x ** 2) ** 2


def averaged(x):
    return np.average(x ** 2, weights=np.arange(1.0, len(x) + 1)) ** 2 + np.trapezoid(x ** 3)


def selected(x):
    return np.sum(np.select([x > 1.0, x < -1.0], [x ** 2, np.sin(x)], x ** 3) ** 2)


def column_stacked(x):
    return np.sum(np.column_stack([x, x ** 2]) ** 3 * np.arange(2.0 * len(x)).reshape(-1, 2))


def split_pieces(x):
    first, second = np.split(x ** 2, 2)
    return np.sum(first ** 3 * second)


def gradient_squared(x):
    return np.sum(np.gradient(x ** 3, 0.5) ** 2) + \
        np.sum(np.gradient(np.reshape(x, (2, -1)), axis=1) ** 3)


def kron_squared(x):
    return np.sum(np.kron(np.reshape(x, (2, 2)), x[:3] ** 2) ** 2)


def crossed(x):
    return np.sum(np.cross(x[:3], x[1:] ** 2) ** 2)


def tensordot_squared(x):
    return np.sum(np.tensordot(np.reshape(x, (2, 2)), np.outer(x, x[:2]), ([1], [1])) ** 2)


def convolved(x):
    return np.sum(np.convolve(x, x[:3] ** 2, "same") ** 2) + \
        np.sum(np.correlate(x ** 2, x[1:]) ** 2)


def convolved_in_2d(x):
    kernel = np.reshape(x[:4], (2, 2)) ** 2
    return np.sum(scipy.signal.convolve(np.reshape(x, (2, 3)), kernel, "valid") ** 2)


def spectrum(x):
    return np.sum(np.real(np.fft.fft(x ** 2, 6)) ** 2) + np.sum(np.imag(np.fft.ifft(x ** 3)) ** 2)


def half_spectrum(x):
    spectrum = np.fft.rfft(x ** 2, norm="ortho")
    return np.sum(np.real(spectrum) ** 3) + np.sum(np.imag(spectrum) ** 2)


def inverse_half_spectrum(x):
    return np.sum(np.fft.irfft(x ** 2 + 1j * x[::-1], 6) ** 3)


def block_diagonal(x):
    return np.sum(scipy.linalg.block_diag(np.reshape(x[:4], (2, 2)), x[1:] ** 2) ** 3)


def interpolated(v):
    x, fp = v[:3], v[3:]
    return np.sum(np.interp(x, [0.0, 1.0, 4.0, 5.0], fp ** 2) ** 3) + \
        np.sum(np.interp(x, [0.0, 1.0, 4.0, 5.0], fp, period=6.0) ** 3)


def spectrum_in_2d(x):
    return np.sum(np.real(np.fft.fftn(np.reshape(x ** 2, (2, 2)))) ** 2)


def correlated_in_2d(x):
    return np.sum(scipy.signal.correlate(np.reshape(x ** 2, (2, 3)), np.reshape(x[:4], (2, 2))) ** 2)


TRIANGLE = np.array([[2.0, 0.0, 0.0], [0.5, 1.5, 0.0], [-0.3, 0.8, 2.5]])


def solved_triangular(x):
    return np.sum(scipy.linalg.solve_triangular(TRIANGLE, x ** 2, lower=True) ** 3) + \
        np.sum(np.sin(scipy.linalg.solve_triangular(TRIANGLE, x, trans="T", lower=True)))


# (function, point, helper its gradient code calls)
HESSIANS_OF_NUMPY = [
    (product, np.array([0.7, -1.3, 1.9, 0.4]), "prod_vjp"),
    (product, np.array([0.7, 0.0, 1.9, 0.4]), "prod_vjp"),
    (product, np.array([0.0, -1.3, 0.0, 0.4]), "prod_vjp"),
    (row_products, np.array([0.7, 0.0, 1.9, 0.4, 1.1, -0.6]), "prod_vjp"),
    (column_products, np.array([0.7, 0.0, 0.0, 0.4, 1.1, -0.6]), "prod_vjp"),
    (squared_cumsum, np.array([1.0, 2.0, 3.0]), "reverse_cumsum"),
    (cumsum_of_a_matrix, np.array([0.3, -0.2, 0.5, 1.0, 0.1, -0.7]), "reverse_cumsum"),
    (cumprod_sum, np.array([0.7, 1.3, 1.9, 0.4]), "cumprod_vjp"),
    (squared_differences, np.array([0.7, -1.3, 1.9, 0.4]), "diff_vjp"),
    (second_differences, np.array([0.7, -1.3, 1.9, 0.4, 1.0]), "diff_vjp"),
    (sorted_cubes, np.array([0.7, -1.3, 1.9, 0.4]), "gathered_vjp"),
    (tiled, np.array([0.7, -1.3, 1.9]), "tile_vjp"),
    (repeated, np.array([0.7, -1.3, 1.9, 0.4]), "repeat_vjp"),
    (trace_of_products, np.array([0.7, -1.3, 1.9]), "trace_vjp"),
    (diagonal_squares, np.array([0.7, -1.3, 1.9]), "gathered_vjp"),
    (diag_of_a_vector, np.array([0.7, -1.3, 1.9]), "diag_vjp"),
    (taken, np.array([0.7, -1.3, 1.9, 0.4]), "gathered_vjp"),
    (padded, np.array([0.7, -1.3, 1.9, 0.4]), "gathered_vjp"),
    (rolled_axes, np.array([0.7, -1.3, 1.9, 0.4]), "rollaxis_vjp"),
    (median_squared, np.array([0.7, -1.3, 1.9, 0.4, 1.2]), "quantile_vjp"),
    (partitioned, np.array([0.7, -1.3, 1.9, 0.4]), "gathered_vjp"),
    (ptp_squared, np.array([0.7, -1.3, 1.9, 0.4]), "ptp_weights"),
    (averaged, np.array([0.7, -1.3, 1.9, 0.4]), "average_weights"),
    (selected, np.array([0.7, -1.3, 1.9, 0.4]), "select_vjp"),
    (column_stacked, np.array([0.7, -1.3, 1.9]), "column_stack_vjp"),
    (split_pieces, np.array([0.7, -1.3, 1.9, 0.4]), "split_vjp"),
    (gradient_squared, np.array([0.7, -1.3, 1.9, 0.4, 1.0, -0.2]), "gradient_vjp"),
    (kron_squared, np.array([0.7, -1.3, 1.9, 0.4]), "kron_vjp"),
    (crossed, np.array([0.7, -1.3, 1.9, 0.4]), "cross_vjp"),
    (tensordot_squared, np.array([0.7, -1.3, 1.9, 0.4]), "tensordot_vjp_a"),
    (convolved, np.array([0.7, -1.3, 1.9, 0.4, 1.0]), "convolve_vjp"),
    (convolved, np.array([0.7, -1.3, 1.9, 0.4, 1.0]), "correlate_vjp"),
    (convolved_in_2d, np.array([0.7, -1.3, 1.9, 0.4, 1.0, -0.2]), "convolve_vjp"),
    (spectrum, np.array([0.7, -1.3, 1.9, 0.4]), "fftn_vjp"),
    (half_spectrum, np.array([0.7, -1.3, 1.9, 0.4, 1.0]), "rfftn_vjp"),
    (spectrum_in_2d, np.array([0.7, -1.3, 1.9, 0.4]), "fftn_vjp"),
    (correlated_in_2d, np.array([0.7, -1.3, 1.9, 0.4, 1.0, -0.2]), "reversed_conj"),
    (inverse_half_spectrum, np.array([0.7, -1.3, 1.9, 0.4]), "irfftn_vjp"),
    (block_diagonal, np.array([0.7, -1.3, 1.9, 0.4]), "block_diag_vjp"),
    (solved_triangular, np.array([0.7, -1.3, 1.9]), "solve_triangular_vjp_b"),
    (interpolated, np.array([0.3, 2.5, 5.5, 1.0, 2.0, -1.0, 0.5]), "interp_x_vjp"),
    (interpolated, np.array([0.3, 2.5, 5.5, 1.0, 2.0, -1.0, 0.5]), "interp_fp_vjp"),
]


def differences_of_the_gradient(f, x, h=1e-5):
    """Central differences of derivo.grad(f): the Hessian's columns."""
    gradient = derivo.grad(f)
    return np.stack([(gradient(x + h * e) - gradient(x - h * e)) / (2 * h)
                     for e in np.eye(len(x))], axis=-1)


@pytest.mark.parametrize("f, x, helper", HESSIANS_OF_NUMPY,
                         ids=["{}-{}".format(f.__name__, i) for i, (f, _, _) in
                              enumerate(HESSIANS_OF_NUMPY)])
def test_hessian_through_the_adjoints_of_numpy(f, x, helper):
    assert helper + "(" in derivo.grad(f).source
    # the gradient first: a wrong gradient would have a matching wrong Hessian
    h = 1e-6
    differences = [(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(len(x))]
    np.testing.assert_allclose(derivo.grad(f)(x), differences, rtol=1e-6, atol=1e-8)
    hessian = derivo.hessian(f)(x)
    assert hessian.shape == (len(x), len(x))
    np.testing.assert_allclose(hessian, differences_of_the_gradient(f, x), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(hessian, hessian.T, rtol=1e-10, atol=1e-12)


def others_except_two(x):
    """d^2 prod(x) / dx_i dx_j: the product of the elements but i and j (0 on the diagonal)."""
    n = len(x)
    return np.array([[np.prod(np.delete(x, [i, j])) if i != j else 0.0 for j in range(n)]
                     for i in range(n)])


@pytest.mark.parametrize("x", [[0.7, -1.3, 1.9, 0.4], [0.7, 0.0, 1.9, 0.4],
                               [0.0, -1.3, 0.0, 0.4], [0.0, 0.0, 0.0, 0.4], [0.0, 2.0]])
def test_the_hessian_of_a_product_with_zeros_is_exact(x):
    x = np.array(x)
    np.testing.assert_allclose(derivo.hessian(product)(x), others_except_two(x), rtol=1e-14,
                               atol=0)


def test_the_hvp_of_a_product_with_a_zero_is_exact():
    x, v = np.array([0.7, 0.0, 1.9, 0.4]), np.array([1.0, -2.0, 0.5, 3.0])
    (product_times_v,) = derivo.hvp(product, (x,), (v,))
    np.testing.assert_allclose(product_times_v, others_except_two(x) @ v, rtol=1e-14, atol=0)


def running_products_gradient(x):
    """d cumprod_sum / dx_k = sum_{i >= k} STEPS_i prod_{j <= i, j != k} x_j, by the definition."""
    return np.array([sum(STEPS[i] * np.prod(np.delete(x[:i + 1], k)) for i in range(k, len(x)))
                     for k in range(len(x))])


@pytest.mark.parametrize("x", [[0.7, -1.3, 1.9, 0.4], [0.7, 0.0, 1.9, 0.4],
                               [0.0, -1.3, 0.0, 0.4], [0.7, 1.3, 0.0, 0.0]])
def test_running_products_are_differentiated_exactly_at_zeros(x):
    x = np.array(x)
    expected = running_products_gradient(x)
    np.testing.assert_allclose(derivo.grad(cumprod_sum)(x), expected,
                               rtol=1e-14, atol=0)
    v = np.array([1.0, -2.0, 0.5, 3.0])
    _, along = derivo.jvp(cumprod_sum, (x,), (v,))
    np.testing.assert_allclose(along, expected @ v, rtol=1e-14, atol=1e-15)


def test_the_hessian_of_running_products_away_from_zeros_and_its_refusal_at_one():
    x = np.array([0.7, -1.3, 1.9, 0.4])
    hessian = derivo.hessian(cumprod_sum)(x)
    np.testing.assert_allclose(hessian, differences_of_the_gradient(cumprod_sum, x),
                               rtol=1e-6, atol=1e-8)
    with pytest.raises(derivo.DerivoError, match="second derivative of np.cumprod"):
        derivo.hessian(cumprod_sum)(np.array([0.7, 0.0, 1.9, 0.4]))


def test_hessians_of_numpy_against_closed_forms():
    x = np.array([0.7, -1.3, 1.9, 0.4])
    lower = np.tril(np.ones((4, 4)))  # cumsum(x) = lower @ x
    np.testing.assert_allclose(derivo.hessian(squared_cumsum)(x), 2 * lower.T @ lower,
                               rtol=1e-14)
    difference = np.diff(np.eye(4), axis=0)  # diff(x) = difference @ x
    np.testing.assert_allclose(derivo.hessian(squared_differences)(x),
                               2 * difference.T @ np.diag(STEPS[:3]) @ difference, rtol=1e-14)
    # sum(sort(x)^3 r) = sum over i of 6 x_i r_i at the rank r_i of x_i
    ranks = np.argsort(np.argsort(x))
    np.testing.assert_allclose(derivo.hessian(sorted_cubes)(x), np.diag(6 * x * ranks),
                               rtol=1e-14)
    # trace(x x^T diag(x^2)) = sum of x^4
    np.testing.assert_allclose(derivo.hessian(trace_of_products)(x[:3]), np.diag(12 * x[:3] ** 2),
                               rtol=1e-14)
