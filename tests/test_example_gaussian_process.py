"""examples/gaussian_process.py: the gradient of the GP's negative log-likelihood
(through scipy.linalg.cho_factor and cho_solve) matches finite differences, the
fit lowers it, and the saved gradient runs without derivo."""

import numpy as np
import pytest

pytest.importorskip("scipy")

from examples.gaussian_process import (central_differences, fit, gp_nll_grad,  # noqa: E402
                                       negative_log_likelihood, problem)
from test_save import run_without_derivo  # noqa: E402


@pytest.mark.parametrize("params", [(0.0, 0.0, -1.0), (0.5, -0.7, -3.0), (-1.0, 1.0, 0.5)])
def test_gradient_matches_finite_differences(params):
    data = problem(25, seed=3)
    value, gradient = gp_nll_grad(*params, *data)
    assert value == pytest.approx(negative_log_likelihood(*params, *data), rel=1e-14)
    assert type(gradient) is tuple and len(gradient) == 3
    np.testing.assert_allclose(gradient, central_differences(negative_log_likelihood, params, data),
                               rtol=1e-6, atol=1e-8)


def test_gradient_descent_lowers_the_negative_log_likelihood():
    data = problem(40)
    params, history = fit((0.0, 0.0, -1.0), data, steps=80)
    values = [nll for _, nll in history]
    assert values == sorted(values, reverse=True) and values[-1] < values[0] - 10
    assert np.exp(params[2]) == pytest.approx(0.01, rel=0.5)  # the data's noise variance


def test_saved_gradient_runs_without_derivo(tmp_path):
    path = gp_nll_grad.save(tmp_path / "gp_nll_grad.py")
    text = open(path).read()
    assert "def cho_factor_vjp(" in text and "def cho_solve_vjp_c(" in text
    distances, y = problem(6)
    call = "negative_log_likelihood_value_and_grad(0.1, -0.3, -2.0, np.array({}), np.array({}))" \
        .format(distances.tolist(), y.tolist())
    printed = run_without_derivo(path, "[float(v) for v in {}[1]]".format(call))
    expected = [float(g) for g in gp_nll_grad(0.1, -0.3, -2.0, distances, y)[1]]
    assert eval(printed) == pytest.approx(expected, rel=1e-14)
