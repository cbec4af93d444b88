"""The few helpers generated code calls; saved modules import them from here.

Each is small, has no state, and exists because the operation has no one-line
NumPy spelling.
"""

import numpy as np


def unbroadcast(adjoint, like):
    """Sum ``adjoint`` down to the shape of ``like``, undoing NumPy broadcasting."""
    shape = np.shape(like)
    if np.shape(adjoint) == shape:
        return adjoint
    extra = np.ndim(adjoint) - len(shape)
    summed = np.sum(adjoint, axis=tuple(range(extra))) if extra > 0 else adjoint
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and np.shape(summed)[i] != 1)
    if axes:
        summed = np.sum(summed, axis=axes, keepdims=True)
    return summed if shape else float(summed)
