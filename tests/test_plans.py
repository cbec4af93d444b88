"""``derivo.plans``: an operand of a broadcast whose adjoint is summed where it
is used (a matrix product's VJP sums it down itself) is not reduced to its
shape first, so the reverse sweep reads and saves no value for that shape.
Each gradient is checked against central differences, with shapes that make
the broadcast sum something."""

import numpy as np
import pytest

import derivo
from derivo.analyze import analyze
from derivo.parse import parse
from derivo.ssa import normalize
from probing import numeric_gradient


def rnn_step(W, U, b, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(h @ W + xs[t] @ U + b)  # b (3, 4): h grows from (4,) to (3, 4)
    return np.sum(h * h)


def row_times_matrix_plus_block(a, B, C):
    return np.sum(np.sin(a @ B + C) * C)  # a (1, m): a @ B is one row of C's shape


def scalar_product_plus_vector(v, w, c):
    return np.sum((v @ w + c) ** 2)  # v @ w a number, broadcast to c's shape


def stacked_products(A, B, x):
    return np.sum(np.tanh(A @ x + B @ x) * 1.5)  # A a stack, B one matrix


def product_of_two_sums(W, h, c, d):
    return np.sum((W @ h + c) * (W @ h - d))


def squared_product_plus_block(W, h, C):
    return np.sum(np.cos((W @ h) * (W @ h) + C))


def scaled_product_plus_block(W, h, C):
    return np.sum(np.cos((W @ h) * 2.0 + C))


rng = np.random.default_rng(7)
CASES = [
    (rnn_step, [rng.normal(size=(4, 4)) * 0.5, rng.normal(size=(2, 4)), rng.normal(size=(3, 4)),
                rng.normal(size=4), rng.normal(size=(3, 2))]),
    (row_times_matrix_plus_block, [rng.normal(size=(1, 3)), rng.normal(size=(3, 4)),
                                   rng.normal(size=(5, 4))]),
    (scalar_product_plus_vector, [rng.normal(size=3), rng.normal(size=3), rng.normal(size=4)]),
    (stacked_products, [rng.normal(size=(2, 3, 4)), rng.normal(size=(3, 4)),
                        rng.normal(size=4)]),
    (product_of_two_sums, [rng.normal(size=(3, 4)), rng.normal(size=4),
                           rng.normal(size=(2, 3)), rng.normal(size=(5, 1, 3))]),
    (squared_product_plus_block, [rng.normal(size=(3, 4)), rng.normal(size=4),
                                  rng.normal(size=(2, 3))]),
    (scaled_product_plus_block, [rng.normal(size=(3, 4)), rng.normal(size=4),
                                 rng.normal(size=(2, 3))]),
]


@pytest.mark.parametrize("func, arguments", CASES, ids=[c[0].__name__ for c in CASES])
def test_broadcast_products_match_differences(func, arguments):
    wrt = tuple(range(len(arguments) - (func is rnn_step)))
    grads = derivo.grad(func, wrt=wrt)(*arguments)
    for index, grad in zip(wrt, grads):
        expected = numeric_gradient(func, arguments, index)
        assert np.shape(grad) == np.shape(arguments[index])
        np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-7)


def test_rnn_step_saves_no_value_for_a_shape():
    analysis = analyze(normalize(parse(rnn_step)), ["W", "U", "b", "h0"], arrays=True)
    saved = sorted(n for names in analysis.saving.pushes.values() for n in names)
    assert saved == ["h", "t2", "t3"], saved  # the row xs[t], tanh's value, h before


def test_tangents_still_broadcast_to_the_value():
    # forward mode plans its own reductions: a product's tangent is not summed
    W, h, C = CASES[5][1]
    value, tangent = derivo.jvp(scaled_product_plus_block, (W, h, C),
                                (np.ones_like(W), np.zeros_like(h), np.zeros_like(C)))
    step = 1e-6
    expected = (scaled_product_plus_block(W + step, h, C) -
                scaled_product_plus_block(W - step, h, C)) / (2 * step)
    assert value == pytest.approx(scaled_product_plus_block(W, h, C))
    assert tangent == pytest.approx(expected, rel=1e-6)
