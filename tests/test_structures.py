"""A gradient has the structure and the types of its argument: a NamedTuple's is a
NamedTuple of the same class, in every mode that returns one."""

from typing import NamedTuple

import numpy as np

import derivo


class Line(NamedTuple):
    slope: float
    offset: float


def squared_error(line, x):
    slope, offset = line
    return (slope * x + offset - 1.0) ** 2


def test_a_namedtuple_argument_gets_a_namedtuple_gradient():
    line, x = Line(2.0, 0.5), 3.0
    residual = 2.0 * x + 0.5 - 1.0
    gradient = derivo.grad(squared_error)(line, x)
    assert type(gradient) is Line and gradient == Line(2 * residual * x, 2 * residual)
    value, gradient = derivo.value_and_grad(squared_error)(line, x)
    assert value == residual ** 2 and type(gradient) is Line
    out, vjp_fn = derivo.vjp(squared_error, line, x)
    assert type(vjp_fn(1.0)[0]) is Line


def total(lines, x):
    out = 0.0
    for slope, offset in lines:
        out = out + slope * x + offset
    return out


def test_namedtuples_in_a_list_keep_their_class():
    gradient = derivo.grad(total)([Line(1.0, 2.0), Line(3.0, 4.0)], 0.5)
    assert type(gradient) is list and all(type(g) is Line for g in gradient)
    assert gradient == [Line(0.5, 1.0), Line(0.5, 1.0)]


def test_an_array_in_a_namedtuple():
    class Params(NamedTuple):
        w: np.ndarray
        b: float

    def loss(params, X):
        w, b = params
        return np.sum((X @ w + b) ** 2)

    X = np.array([[1.0, 2.0], [3.0, -1.0]])
    params = Params(np.array([0.5, -0.25]), 0.1)
    gradient = derivo.grad(loss)(params, X)
    r = X @ params.w + params.b
    assert type(gradient) is Params
    np.testing.assert_allclose(gradient.w, 2 * X.T @ r, rtol=1e-12)
    assert abs(gradient.b - 2 * np.sum(r)) < 1e-12
