"""Run by tests/test_import.py in a fresh process: a gradient through array methods."""
import numpy as np

import derivo


def scaled_by_its_sum(x):
    return np.sum(x.sum() * x.reshape(-1))


assert np.allclose(derivo.grad(scaled_by_its_sum)(np.ones(3)), 6.0)
