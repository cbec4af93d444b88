"""Every example runs to the end as the README says to run it, and the derivatives the examples
define match closed forms or finite differences (tests/test_generated.py only compares their
saved source with golden files)."""

import pathlib
import subprocess
import sys

import math

import numpy as np
import pytest

import derivo

from checks import EXAMPLE_NEEDS, assert_close, example_runs_here, numeric_grad
from examples.integrator import (PARAMETERS, predator_prey, predator_prey_grad,
                                 predator_prey_grad_stack)
from examples.horner import horner, horner_grad, squared_error, squared_error_grad
from examples.nesting import curvature, penalized, penalized_grad, slope
from examples.path import (length_grad, path_length, segment_lengths, segments_grad,
                           unit_vector_difference)
from examples.robust_line import KEEP, fit, points, trimmed_loss, trimmed_loss_grad

REPO = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p.name for p in (REPO / "examples").glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("example", EXAMPLES)
def test_example_runs(example):
    if not example_runs_here(example[:-3]):
        pytest.skip("needs {}".format(EXAMPLE_NEEDS[example[:-3]]))
    done = subprocess.run([sys.executable, str(REPO / "examples" / example)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("n, dimension", [(2, 2), (5, 2), (9, 3)])
def test_path_length_gradient_is_the_difference_of_unit_vectors(n, dimension):
    points = np.random.default_rng(n).normal(size=(n, dimension))
    before = points.copy()
    assert np.allclose(length_grad(points), unit_vector_difference(points), rtol=1e-12, atol=1e-14)
    assert np.array_equal(points, before)  # the caller's array is not written
    assert path_length(points) > 0
    # the same path walked over zip(points, points[1:])
    assert segment_lengths(points) == pytest.approx(path_length(points), rel=1e-14)
    assert np.allclose(segments_grad(points), unit_vector_difference(points), rtol=1e-12,
                       atol=1e-14)


@pytest.mark.parametrize("gradient", [predator_prey_grad, predator_prey_grad_stack])
def test_integrator_gradients_match_finite_differences(gradient):
    args = (1.1, 0.4, 0.1, 0.4, 300)
    assert_close(gradient(*args), numeric_grad(predator_prey, args, PARAMETERS), rtol=1e-5)


@pytest.mark.parametrize("x, a", [(0.7, 0.3), (-1.2, -0.5)])
def test_nesting_derivatives_match_closed_forms(x, a):
    # energy = (x^2 - 1)^2 + a x + 0.1 sin 3x
    assert slope(x, a) == pytest.approx(4 * x * (x * x - 1) + a + 0.3 * math.cos(3 * x))
    assert curvature(x, a) == pytest.approx(12 * x * x - 4 - 0.9 * math.sin(3 * x))
    assert_close(penalized_grad(x, a), numeric_grad(penalized, (x, a), (0, 1)))


@pytest.mark.parametrize("degree, x", [(0, 0.7), (3, 1.5), (6, -0.8)])
def test_horner_gradients_are_powers_and_the_derivative_polynomial(degree, x):
    coefficients = [0.5 * k - 1.0 for k in range(degree + 1)]
    bcoefficients, bx = horner_grad(coefficients, x)
    assert isinstance(bcoefficients, list)
    assert_close(tuple(bcoefficients), tuple(x ** (degree - k) for k in range(degree + 1)),
                 rtol=1e-12)
    assert bx == pytest.approx(sum((degree - k) * c * x ** (degree - k - 1)
                                   for k, c in enumerate(coefficients[:-1])), rel=1e-12)
    assert horner(coefficients, x) == pytest.approx(
        sum(c * x ** (degree - k) for k, c in enumerate(coefficients)))


def test_horner_squared_error_gradient_through_a_call_not_inlined():
    # horner keeps its loop, so squared_error calls its VJP, which gives back a list: the list's
    # adjoint used to be summed with += into a float 0.0 (a TypeError)
    coefficients, xs, ys = [0.3, -1.0, 2.0], [-1.0, 0.25, 0.5, 2.0], [1.0, 0.0, -1.0, 0.5]
    gradient = squared_error_grad(coefficients, xs, ys)
    assert isinstance(gradient, list)
    h = 1e-6
    for k in range(len(coefficients)):
        up, down = list(coefficients), list(coefficients)
        up[k] += h
        down[k] -= h
        expected = (squared_error(up, xs, ys) - squared_error(down, xs, ys)) / (2 * h)
        assert gradient[k] == pytest.approx(expected, rel=1e-7)


@pytest.mark.parametrize("params", [(0.0, 0.0), (1.5, 2.0), (2.1, 0.7)])
def test_trimmed_loss_gradient_is_a_tuple_matching_finite_differences(params):
    xs, ys = points()
    gradient = trimmed_loss_grad(params, xs, ys)
    assert type(gradient) is tuple and {type(g) for g in gradient} == {float}
    h = 1e-6
    for i in range(2):
        up, down = list(params), list(params)
        up[i] += h
        down[i] -= h
        expected = (trimmed_loss(tuple(up), xs, ys) - trimmed_loss(tuple(down), xs, ys)) / (2 * h)
        assert gradient[i] == pytest.approx(expected, rel=1e-6)


def test_the_trimmed_fit_ignores_the_outliers():
    xs, ys = points()
    slope, intercept = fit((0.0, 0.0), xs, ys)
    assert slope == pytest.approx(2.0, abs=0.02) and intercept == pytest.approx(1.0, abs=0.1)
    residuals = sorted(abs(slope * x + intercept - y) for x, y in zip(xs, ys))
    assert residuals[KEEP] > 10  # the three outliers are the points it does not fit


def test_model_class_gradients_match_finite_differences_and_follow_the_activation():
    from examples.model_class import ACTIVATIONS, Regressor, closure_loss, problem
    W, v, X, y = problem(n=16, hidden=4)
    for name in ACTIVATIONS:
        model = Regressor(name)
        gradient = derivo.grad(model.loss, wrt=("W", "v"))
        gW, gv = gradient(W, v, X, y)
        assert np.allclose(gW, central(lambda M: model.loss(M, v, X, y), W), rtol=1e-5)
        assert np.allclose(gv, central(lambda u: model.loss(W, u, X, y), v), rtol=1e-5)
    model = Regressor("tanh")
    loss = closure_loss(model, X, y)
    value, (gW, gv) = derivo.value_and_grad(loss, wrt=("W", "v"))(W, v)
    assert np.isclose(value, model.loss(W, v, X, y))
    model.activation = "swish"  # read again by the next call: transformed again
    value, (gW, gv) = derivo.value_and_grad(loss, wrt=("W", "v"))(W, v)
    assert np.isclose(value, model.loss(W, v, X, y))
    assert np.allclose(gv, central(lambda u: model.loss(W, u, X, y), v), rtol=1e-5)


def central(f, x, h=1e-6):
    g = np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        step = np.zeros(x.shape)
        step[i] = h
        g[i] = (f(x + step) - f(x - step)) / (2 * h)
    return g


def test_bayesian_optimization_acquisition_gradient_matches_differences():
    from examples.bayesian_optimization import acquisition_value_and_grad, negative_acquisition
    params, X, y = np.array([0.0, -3.0, 0.0, -2.0]), np.array([[0.2], [0.7]]), np.array([0.1, -0.4])
    value, gradient = acquisition_value_and_grad(np.array([0.45]), params, X, y)
    h = 1e-6
    expected = (negative_acquisition(np.array([0.45 + h]), params, X, y)
                - negative_acquisition(np.array([0.45 - h]), params, X, y)) / (2 * h)
    assert np.shape(value) == (1,)
    assert_close(gradient[0], float(expected[0]), rtol=1e-5)


def test_mlp_activations_gradient_has_the_structure_and_values_of_its_parameters():
    from examples.mlp_activations import activations_loss_grad, init_params, loss
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(20, 2)), rng.normal(size=20)
    names = ("tanh", "relu", "softplus", "linear")
    params = init_params([2, 5, 4, 3, 1], seed=2)
    grads = activations_loss_grad(params, names, x, y)
    assert [type(g) for g in grads] == [list] * len(params)
    h = 1e-6
    for layer, part, index in [(0, 0, (1, 2)), (1, 1, (3,)), (2, 0, (0, 1)), (3, 1, (0,))]:
        def moved(step):
            changed = [list(p) for p in params]
            changed[layer][part] = changed[layer][part].copy()
            changed[layer][part][index] += step
            return loss(changed, names, x, y)
        expected = (moved(h) - moved(-h)) / (2 * h)
        assert grads[layer][part][index] == pytest.approx(expected, rel=1e-5, abs=1e-8)


def test_the_decorated_loss_gradient_matches_finite_differences():
    from examples.decorated_loss import data, decorated_loss_grad, loss
    inputs, targets = data()
    keywords = dict(inputs=inputs, targets=targets, ridge=0.01)
    slope, intercept, h = 0.4, -0.3, 1e-6
    g_slope, g_intercept = decorated_loss_grad(slope, intercept, **keywords)
    assert g_slope == pytest.approx(
        (loss(slope + h, intercept, **keywords) - loss(slope - h, intercept, **keywords)) / (2 * h),
        rel=1e-6)
    assert g_intercept == pytest.approx(
        (loss(slope, intercept + h, **keywords) - loss(slope, intercept - h, **keywords)) / (2 * h),
        rel=1e-6)
    with np.errstate(invalid="ignore"), pytest.raises(FloatingPointError):
        decorated_loss_grad(np.inf, intercept, **keywords)


def test_layer_objects_saliency_matches_central_differences():
    from examples import layer_objects
    rng = np.random.default_rng(3)
    for target in (0.0, 3.0):
        x = rng.normal(size=4)
        expected = layer_objects.central_differences(lambda v: layer_objects.loss(v, target), x)
        np.testing.assert_allclose(layer_objects.saliency(x, target), expected,
                                   rtol=1e-6, atol=1e-9)
        tangent = derivo.jvp(layer_objects.loss, (x, target), (np.eye(4)[1], 0.0))[1]
        assert_close(tangent, expected[1], rtol=1e-6, atol=1e-9)


def test_pair_potentials_forces_match_finite_differences():
    from examples.pair_potentials import (cluster_energy, cluster_gradient, lennard_jones, morse,
                                          pair_force)
    assert_close(pair_force(1.3), numeric_grad(lennard_jones, (1.3,)), rtol=1e-7)
    assert_close(derivo.grad(morse)(0.9), numeric_grad(morse, (0.9,)), rtol=1e-7)
    atoms = np.array([[0.0, 0.0, 0.0], [1.3, 0.0, 0.0], [0.5, 1.2, 0.0], [0.6, 0.4, 1.1]])
    h = 1e-6
    expected = np.zeros_like(atoms)
    for index in np.ndindex(atoms.shape):
        step = np.zeros_like(atoms)
        step[index] = h
        expected[index] = (cluster_energy(atoms + step) - cluster_energy(atoms - step)) / (2 * h)
    np.testing.assert_allclose(cluster_gradient(atoms), expected, rtol=1e-6, atol=1e-8)
