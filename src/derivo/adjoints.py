"""Adjoints and tangents of NumPy and SciPy functions with no one-line spelling.

The rule tables (:mod:`derivo.rules.numpy`, :mod:`derivo.rules.scipy`) call these
from their templates; like :mod:`derivo.runtime`, generated code calls them.
Factorisations the forward pass made are reused (the Cholesky factor ``ans``),
and inverses are applied by solving, never formed.
"""

import numpy as np

from .runtime import swap_last


def reverse_cumsum(adjoint, like, axis):
    """The adjoint of ``np.cumsum(like, axis)``: sums from the end (over the
    flattened array when ``axis`` is None), in ``like``'s shape."""
    if axis is None:
        return np.reshape(np.flip(np.cumsum(np.flip(np.ravel(adjoint)))), np.shape(like))
    return np.flip(np.cumsum(np.flip(adjoint, axis), axis), axis)


def diff_vjp(adjoint, n, axis):
    """The adjoint of ``np.diff(a, n, axis)``: the transpose of the n-th
    difference, (-1)**n times the n-th difference of the adjoint with n zeros
    added at either end of ``axis``."""
    moved = np.moveaxis(adjoint, axis, -1)
    padded = np.pad(moved, [(0, 0)] * (moved.ndim - 1) + [(n, n)])
    return (-1) ** n * np.moveaxis(np.diff(padded, n), -1, axis)


def diag_vjp(adjoint, v, k):
    """The adjoint of ``np.diag(v, k)``: the k-th diagonal of the adjoint for a
    vector ``v``; for a matrix, the adjoint placed on its k-th diagonal."""
    if np.ndim(v) == 1:
        return np.diagonal(adjoint, k).copy()
    result = np.zeros(np.shape(v))
    rows = np.arange(len(adjoint)) + max(-k, 0)
    result[rows, rows + k] = adjoint
    return result


def repeat_vjp(adjoint, like, repeats, axis):
    """The adjoint of ``np.repeat(like, repeats, axis)`` (an integer count or
    one per item): the sum of each item's copies."""
    if axis is None:
        adjoint, axis, flat = np.ravel(adjoint), 0, np.ravel(like)
    else:
        flat = np.asarray(like)
    axis = axis % max(flat.ndim, 1)
    counts = np.broadcast_to(repeats, (flat.shape[axis],))
    owner = np.repeat(np.arange(flat.shape[axis]), counts)
    moved = np.moveaxis(np.asarray(adjoint), axis, 0)
    total = np.zeros((flat.shape[axis],) + moved.shape[1:])
    np.add.at(total, owner, moved)
    return np.reshape(np.moveaxis(total, 0, axis), np.shape(like))


def tile_vjp(adjoint, like, reps):
    """The adjoint of ``np.tile(like, reps)``: the sum over the tiles."""
    shape = np.shape(like)
    reps = (reps,) if np.ndim(reps) == 0 else tuple(reps)
    ndim = max(len(shape), len(reps))
    shape_full = (1,) * (ndim - len(shape)) + shape
    reps_full = (1,) * (ndim - len(reps)) + reps
    split = [size for pair in zip(reps_full, shape_full) for size in pair]
    summed = np.sum(np.reshape(adjoint, split), axis=tuple(range(0, 2 * ndim, 2)))
    return np.reshape(summed, shape)


def _phi(matrix):
    """The lower triangle of ``matrix`` with its diagonal halved."""
    return np.tril(matrix) - 0.5 * np.eye(matrix.shape[-1]) * matrix


def cholesky_vjp(adjoint, factor):
    """The adjoint of ``L = np.linalg.cholesky(A)`` (A symmetric): the symmetric
    part of L^-T phi(L^T G) L^-1 (Murray 2016), by two triangular solves."""
    inner = _phi(swap_last(factor) @ adjoint)
    upper = swap_last(factor)
    left = np.linalg.solve(upper, inner)            # L^-T phi
    both = swap_last(np.linalg.solve(upper, swap_last(left)))  # L^-T phi L^-1
    return 0.5 * (both + swap_last(both))


def cholesky_jvp(tangent, factor):
    """The tangent of ``L = np.linalg.cholesky(A)``: L phi(L^-1 dA L^-T)."""
    inner = np.linalg.solve(factor, swap_last(np.linalg.solve(factor, swap_last(tangent))))
    return factor @ _phi(inner)
