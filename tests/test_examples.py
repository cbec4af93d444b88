"""Every example runs to the end as the README says to run it, and the path example's gradient
matches its closed form at random paths (the other examples' derivatives are checked by the tests
of what they use and by tests/test_generated.py)."""

import pathlib
import subprocess
import sys

import numpy as np
import pytest

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
