"""Every example runs to the end as the README says to run it, and the derivatives the examples
define match closed forms or finite differences (tests/test_generated.py only compares their
saved source with golden files)."""

import pathlib
import subprocess
import sys

import math

import numpy as np
import pytest

from checks import assert_close, numeric_grad
from examples.integrator import (PARAMETERS, predator_prey, predator_prey_grad,
                                 predator_prey_grad_stack)
from examples.nesting import curvature, penalized, penalized_grad, slope
from examples.path import length_grad, path_length, unit_vector_difference

REPO = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p.name for p in (REPO / "examples").glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("example", EXAMPLES)
def test_example_runs(example):
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
