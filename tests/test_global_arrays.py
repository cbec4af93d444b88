"""A function that reads an array from a global or a closure, and calls no NumPy
function, is array code: a float parameter's cotangent is summed over what
broadcasting spread (``X * mu``), as for a function that calls np.sum."""

import numpy as np
import pytest

import derivo

X = np.array([0.0, 1.0, 2.0, 4.0])
ROWS = [np.array([1.0, 2.0]), np.array([3.0, -1.0])]


def scaled(mu):
    return X * mu


def rows_scaled(mu):
    return ROWS[0] * mu + ROWS[1] * mu * mu


def closure(data):
    def shifted(mu):
        return (data - mu) * (data - mu)
    return shifted


@pytest.mark.parametrize("func, mu", [(scaled, 1.3), (rows_scaled, 0.7), (closure(X), 0.4)])
def test_a_float_parameters_cotangent_is_a_float(func, mu):
    out, vjp_fn = derivo.vjp(func, mu)
    u = np.linspace(0.5, 1.5, np.size(out)).reshape(np.shape(out))
    cotangent, = vjp_fn(u)
    h = 1e-6
    expected = np.sum(u * (func(mu + h) - func(mu - h)) / (2 * h))
    assert np.ndim(cotangent) == 0
    assert float(cotangent) == pytest.approx(expected, rel=1e-7)
    _, tangent = derivo.jvp(func, (mu,), (1.0,))
    np.testing.assert_allclose(tangent, (func(mu + h) - func(mu - h)) / (2 * h), rtol=1e-7)


PARAMS = {"scale": X, "shift": {"by": np.array([0.5, -0.5, 1.0, 0.0])}}


def dict_scaled(mu):
    return PARAMS["scale"] * mu + PARAMS["shift"]["by"] * mu * mu


def test_a_global_dict_of_arrays_makes_array_code():
    mu, h = 0.8, 1e-6
    cotangent, = derivo.vjp(dict_scaled, mu)[1](np.ones(4))
    assert np.ndim(cotangent) == 0
    expected = np.sum((dict_scaled(mu + h) - dict_scaled(mu - h)) / (2 * h))
    assert float(cotangent) == pytest.approx(expected, rel=1e-7)
