"""Adjoints and tangents of NumPy and SciPy functions with no one-line spelling.

The rule tables (:mod:`derivo.rules.numpy`, :mod:`derivo.rules.scipy`) call these
from their templates; like :mod:`derivo.runtime`, generated code calls them.
Factorisations the forward pass made are reused (the Cholesky factor ``ans``),
and inverses are applied by solving, never formed.
"""

import numpy as np

from .errors import DerivoError
from .runtime import holds_no_zero, swap_last


def reverse_cumsum(adjoint, like, axis):
    """The adjoint of ``np.cumsum(like, axis)``: sums from the end (over the
    flattened array when ``axis`` is None), in ``like``'s shape."""
    if axis is None:
        return np.reshape(np.flip(np.cumsum(np.flip(np.ravel(adjoint)))), np.shape(like))
    return np.flip(np.cumsum(np.flip(adjoint, axis), axis), axis)


def _first_zero(lanes):
    """Per lane (the last axis) of ``lanes``: masks of the positions before its
    first zero and of that zero, the product of the elements before it, and the
    running products ``prod(lanes[z+1:i+1])`` after it (all 1 with no zero)."""
    zero = lanes == 0
    index = np.arange(lanes.shape[-1])
    first = np.where(np.any(zero, axis=-1), np.argmax(zero, axis=-1), lanes.shape[-1])[..., None]
    before, at = index < first, index == first
    prefix = np.prod(np.where(before, lanes, 1.0), axis=-1, keepdims=True)
    after = np.cumprod(np.where(index > first, lanes, 1.0), axis=-1)
    return before, at, prefix, after


def cumprod_vjp(adjoint, product, a, axis):
    """The adjoint of ``product = np.cumprod(a, axis)``: element k gets
    ``sum_{i>=k} adjoint_i * prod_{j<=i, j!=k} a_j``.  Before a lane's first zero
    that is ``sum_{i>=k} adjoint_i * product_i / a_k``; at the zero, the product
    before it times the adjoint summed against the products after it; past it,
    0 (each of its products holds the zero)."""
    if axis is None:
        return np.reshape(cumprod_vjp(adjoint, product, np.ravel(a), 0), np.shape(a))
    shares = reverse_cumsum(adjoint * product, a, axis)
    if holds_no_zero(a):
        return shares / a
    lanes, g, shares = (np.moveaxis(x, axis, -1) for x in
                        (a, np.broadcast_to(adjoint, np.shape(product)), shares))
    before, at, prefix, after = _first_zero(lanes)
    at_zero = prefix * reverse_cumsum(g * after, g, -1)
    return np.moveaxis(np.where(before, shares / np.where(before, lanes, 1.0), 0.0) +
                       np.where(at, at_zero, 0.0), -1, axis)


def cumprod_jvp(tangent, product, a, axis):
    """The tangent of ``product = np.cumprod(a, axis)``: ``product_i * sum_{k<=i}
    t_k / a_k`` before a lane's first zero; from the zero on, only the zero's own
    tangent moves the products (every other leaves the factor 0)."""
    if axis is None:
        return cumprod_jvp(np.ravel(np.broadcast_to(tangent, np.shape(a))), product,
                           np.ravel(a), 0)
    if holds_no_zero(a):
        return product * np.cumsum(tangent / a, axis=axis)
    lanes, t, y = (np.moveaxis(x, axis, -1) for x in
                   (a, np.broadcast_to(tangent, np.shape(a)), product))
    before, at, prefix, after = _first_zero(lanes)
    started = y * np.cumsum(np.where(before, t / np.where(before, lanes, 1.0), 0.0), axis=-1)
    from_zero = np.sum(np.where(at, t, 0.0), axis=-1, keepdims=True) * prefix * after
    return np.moveaxis(np.where(before, started, from_zero), -1, axis)


def _refuse_second_at_zero(a):
    if np.any(np.equal(a, 0)):
        raise DerivoError("derivo does not take the second derivative of np.cumprod where "
                          "its array holds a zero (the first derivative is exact there)")


def cumprod_second(adjoint, u, product, a, axis):
    """``sum_i adjoint_i sum_k u_k d2 product_i / da_k da_m`` for each m, with
    ``product = np.cumprod(a, axis)``: ``(R(adjoint * product * C) - u *
    R(adjoint * product) / a) / a``, R summing from the end and C = cumsum(u / a).
    Symmetric in u and the direction m: the VJP and the JVP of cumprod_vjp in a."""
    if axis is None:
        return np.reshape(cumprod_second(adjoint, np.ravel(u), product, np.ravel(a), 0),
                          np.shape(a))
    _refuse_second_at_zero(a)
    weighted = adjoint * product
    return (reverse_cumsum(weighted * np.cumsum(u / a, axis=axis), a, axis) -
            u * reverse_cumsum(weighted, a, axis) / a) / a


def cumprod_second_tangent(t, s, product, a, axis):
    """``sum_{k, m} t_k s_m d2 product_i / da_k da_m`` for each i, with ``product =
    np.cumprod(a, axis)``: ``product * (cumsum(t / a) * cumsum(s / a) - cumsum(t * s / a**2))``."""
    if axis is None:
        t, s, a = (np.ravel(np.broadcast_to(x, np.shape(a))) for x in (t, s, a))
        axis = 0
    _refuse_second_at_zero(a)
    return product * (np.cumsum(t / a, axis=axis) * np.cumsum(s / a, axis=axis) -
                      np.cumsum(t * s / a ** 2, axis=axis))


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


def _kept(reduced, a, axis, keepdims):
    """A reduction's result (or adjoint) with its reduced axes back as length 1,
    to broadcast against ``a``: cheaper than spreading it to a's shape."""
    if keepdims or axis is None:
        return reduced
    # attributes and a reshape, not np.shape and np.expand_dims: this runs twice
    # per logsumexp's adjoint, where a call costs as much as small arithmetic
    shape = list(a.shape if isinstance(a, np.ndarray) else np.shape(a))
    for i in (axis,) if type(axis) is int else axis:
        shape[i] = 1
    return reduced.reshape(shape) if isinstance(reduced, np.ndarray) else \
        np.reshape(reduced, shape)


def _weighted_shares(a, ans, axis, b, keepdims):
    """exp(a - logsumexp) (times the weights ``b``): each element's share of
    ``scipy.special.logsumexp``, never overflowing; a new array."""
    shares = np.exp(a - _kept(ans, a, axis, keepdims))
    return shares if b is None else shares * b


def logsumexp_vjp(adjoint, ans, a, axis, b, keepdims, return_sign):
    """The adjoint of ``scipy.special.logsumexp(a, axis, b, keepdims)`` in a."""
    _refuse_sign(return_sign)
    shares, spread = _weighted_shares(a, ans, axis, b, keepdims), _kept(adjoint, a, axis, keepdims)
    if type(shares) is not np.ndarray or type(spread) is not np.ndarray or \
            spread.dtype.kind == "c":
        return shares * spread
    shares *= spread    # the adjoint made in the shares' array
    return shares


def logsumexp_vjp_b(adjoint, ans, a, axis, b, keepdims, return_sign):
    """The adjoint of ``scipy.special.logsumexp(a, axis, b, keepdims)`` in b."""
    from .runtime import unbroadcast
    _refuse_sign(return_sign)
    return unbroadcast(_kept(adjoint, a, axis, keepdims)
                       * _weighted_shares(a, ans, axis, None, keepdims), b)


def logsumexp_jvp_b(tangent, ans, a, axis, keepdims):
    return np.sum(tangent * _weighted_shares(a, ans, axis, None, keepdims), axis=axis,
                  keepdims=keepdims)


def logsumexp_jvp(tangent, ans, a, axis, b, keepdims, return_sign):
    _refuse_sign(return_sign)
    return np.sum(tangent * _weighted_shares(a, ans, axis, b, keepdims), axis=axis,
                  keepdims=keepdims)


def _refuse_sign(return_sign):
    if return_sign:
        raise DerivoError("cannot differentiate scipy.special.logsumexp(..., "
                          "return_sign=True); differentiate it without return_sign")


def _triangle(matrix, lower):
    return np.tril(matrix) if lower else np.triu(matrix)


def _transposed(trans):
    """Whether ``trans`` of scipy.linalg.solve_triangular solves with A^T."""
    if trans in (0, "N"):
        return False
    if trans in (1, "T"):
        return True
    from .errors import DerivoError
    raise DerivoError("cannot differentiate scipy.linalg.solve_triangular with trans={!r}; "
                      "derivo's rule takes trans 0 or 1".format(trans))


def flipped_trans(trans):
    """The ``trans`` of scipy.linalg.solve_triangular that solves with A^T where
    ``trans`` solves with A, and the other way round."""
    return 0 if _transposed(trans) else 1


def solve_triangular_vjp_a(adjoint, ans, a, b, trans, lower):
    """The adjoint in A of x = op(A)^-1 b, A read in one triangle only."""
    from scipy.linalg import solve_triangular
    transposed = _transposed(trans)
    solved = solve_triangular(a, adjoint, trans=0 if transposed else 1, lower=lower)
    n = np.shape(a)[0]
    outer = np.reshape(solved, (n, -1)) @ np.reshape(ans, (n, -1)).T   # d op(A)
    return -_triangle(outer.T if transposed else outer, lower)


def solve_triangular_vjp_b(adjoint, a, trans, lower):
    from scipy.linalg import solve_triangular
    return solve_triangular(a, adjoint, trans=0 if _transposed(trans) else 1, lower=lower)


def solve_triangular_jvp_a(tangent, ans, a, trans, lower):
    from scipy.linalg import solve_triangular
    change = _triangle(tangent, lower)
    change = change.T if _transposed(trans) else change
    return -solve_triangular(a, change @ ans, trans=trans, lower=lower)


def _mvn_parts(x, mean, cov):
    """(residuals (n, d), C^-1 residuals (n, d), C as a matrix) of
    scipy.stats.multivariate_normal.logpdf(x, mean, cov)."""
    d = np.shape(mean)[-1] if np.ndim(mean) else np.shape(x)[-1]
    residuals = np.reshape(np.asarray(x) - (0.0 if mean is None else mean), (-1, d))
    if np.ndim(cov) not in (0, 2):
        from .errors import DerivoError
        raise DerivoError("cannot differentiate scipy.stats.multivariate_normal.logpdf with a "
                          "covariance of {} dimension(s); give a matrix (np.diag(v))"
                          .format(np.ndim(cov)))
    matrix = cov * np.eye(d) if np.ndim(cov) == 0 else np.asarray(cov)
    solved = np.linalg.solve(matrix, residuals.T).T
    return residuals, solved, matrix


def mvn_logpdf_vjp_x(adjoint, ans, x, mean, cov):
    """The adjoint in x: -g C^-1 (x - mean), for each point."""
    _, solved, _ = _mvn_parts(x, mean, cov)
    return np.reshape(-np.reshape(adjoint, (-1, 1)) * solved, np.shape(x))


def mvn_logpdf_vjp_mean(adjoint, ans, x, mean, cov):
    _, solved, _ = _mvn_parts(x, mean, cov)
    return np.reshape(np.sum(np.reshape(adjoint, (-1, 1)) * solved, axis=0), np.shape(mean))


def mvn_logpdf_vjp_cov(adjoint, ans, x, mean, cov):
    """The adjoint in cov: (C^-1 r r^T C^-1 - C^-1) / 2 weighed by g, summed
    over the points (a number for a covariance given as a number times I)."""
    _, solved, matrix = _mvn_parts(x, mean, cov)
    weights = np.reshape(adjoint, (-1, 1))
    inverse = np.linalg.solve(matrix, np.eye(len(matrix)))
    total = 0.5 * ((solved * weights).T @ solved - np.sum(weights) * inverse)
    return np.trace(total) if np.ndim(cov) == 0 else total


def mvn_logpdf_jvp_residual(tangent, ans, x, mean, cov):
    """The tangent of multivariate_normal.logpdf for a tangent of the residual
    x - mean: -(C^-1 r) . dr for each point."""
    _, solved, matrix = _mvn_parts(x, mean, cov)
    moved = np.reshape(np.asarray(tangent) + np.zeros(matrix.shape[0]), (-1, matrix.shape[0]))
    return np.reshape(-np.sum(solved * moved, axis=1), np.shape(ans))


def mvn_logpdf_jvp_cov(tangent, ans, x, mean, cov):
    """... for a tangent dC of cov: (r^T C^-1 dC C^-1 r - tr(C^-1 dC)) / 2."""
    _, solved, matrix = _mvn_parts(x, mean, cov)
    change = tangent * np.eye(matrix.shape[0]) if np.ndim(tangent) == 0 else tangent
    result = 0.5 * np.sum((solved @ change) * solved, axis=1) - 0.5 * np.trace(
        np.linalg.solve(matrix, change))
    return np.reshape(result, np.shape(ans))


def convolve_vjp(adjoint, in1, in2, which, correlate):
    """The adjoint in in1 (``which`` 0) or in2 (1) of ``convolve(in1, in2, mode)``
    (scipy.signal's, or np.convolve's with ``correlate`` np.correlate): the
    adjoint placed where its mode cut it from the full convolution (centred,
    as both libraries cut), correlated with the other argument's plain
    transpose (no conjugate: JAX's convention; a real argument's adjoint is
    real).  The mode is read off the adjoint's shape."""
    full = [m + n - 1 for m, n in zip(np.shape(in1), np.shape(in2))]
    adjoint = np.asarray(adjoint)
    if list(adjoint.shape) != full:
        spread = np.zeros(full, dtype=np.result_type(adjoint, float))
        spread[tuple(slice((f - o) // 2, (f - o) // 2 + o)
                     for f, o in zip(full, adjoint.shape))] = adjoint
        adjoint = spread
    like, other = (in1, in2) if which == 0 else (in2, in1)
    result = correlate(adjoint, np.conj(other) if np.iscomplexobj(other) else other, "valid")
    return np.real(result) if np.iscomplexobj(result) and not np.iscomplexobj(like) else result


def correlate_vjp(adjoint, a, v, which):
    """The adjoint in a (``which`` 0) or v (1) of ``np.correlate(a, v, mode)``,
    which is np.convolve(a, reversed_conj(v), mode) but for a shorter than v,
    where NumPy swaps them and so cuts mode 'same' from the full result one
    place later when the cut is odd."""
    adjoint = np.asarray(adjoint)
    full = len(a) + len(v) - 1
    if len(adjoint) != full:
        cut = full - len(adjoint)
        start = (cut + 1) // 2 if len(a) < len(v) else cut // 2
        spread = np.zeros(full, dtype=np.result_type(adjoint, float))
        spread[start:start + len(adjoint)] = adjoint
        adjoint = spread
    if which == 0:
        return convolve_vjp(adjoint, a, reversed_conj(v), 0, np.correlate)
    return reversed_conj(convolve_vjp(adjoint, a, reversed_conj(v), 1, np.correlate))


def convolved_cut(g, adjoint, in1, in2, which, correlate):
    """The transpose of ``convolve_vjp(adjoint, in1, in2, which, correlate)`` in
    its adjoint: g (in in1's place, ``which`` 0, or in2's) convolved with the other
    argument, by the library ``correlate`` is of, and cut to the adjoint's shape
    where convolve_vjp placed the adjoint (centred)."""
    if correlate is np.correlate:
        convolve = np.convolve
    else:
        from scipy.signal import convolve
    full = convolve(g, in2, "full") if which == 0 else convolve(in1, g, "full")
    return full[tuple(slice((f - o) // 2, (f - o) // 2 + o)
                      for f, o in zip(np.shape(full), np.shape(adjoint)))]


def correlate_mode(adjoint, a, v):
    """The mode of ``np.correlate(a, v, mode)``, read off the length of its adjoint
    (two modes give one length only where a or v has one element: then they give
    one result)."""
    lengths = {len(a) + len(v) - 1: "full", max(len(a), len(v)): "same"}
    return lengths.get(len(adjoint), "valid")


def reversed_conj(x):
    """x reversed in every axis and conjugated: correlate(a, v) is convolve(a,
    reversed_conj(v)), and reversed_conj is its own adjoint (JAX's convention)."""
    flipped = np.flip(x)
    return np.conj(flipped) if np.iscomplexobj(flipped) else flipped


# --- selections: adjoints scattered back through positions ---------------------------

def positions(like):
    """Each element's flat position in ``like``, in ``like``'s shape: a selection
    (np.take, np.sort, np.pad...) applied to it says where each output came from."""
    return np.arange(np.size(like)).reshape(np.shape(like))


def gathered_vjp(adjoint, like, sources):
    """The adjoint of a selection from ``like`` whose output element i came from
    flat position ``sources[i]`` of ``like`` (-1: from nowhere, a constant): the
    adjoint summed onto those positions, in ``like``'s shape."""
    adjoint = np.asarray(adjoint)
    if adjoint.dtype.kind == "c" and np.isrealobj(like):
        adjoint = adjoint.real
    total = np.zeros(np.size(like) + 1, dtype=np.result_type(adjoint, float))
    np.add.at(total, np.ravel(sources) + 1, np.ravel(np.broadcast_to(adjoint, np.shape(sources))))
    return total[1:].reshape(np.shape(like))


#: np.pad's modes that copy elements of the array (the others compute statistics)
COPYING_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


def pad_sources(like, pad_width, mode):
    """Where each element of ``np.pad(like, pad_width, mode)`` came from (-1 for
    a constant), for :func:`gathered_vjp`."""
    if mode not in COPYING_PAD_MODES:
        raise DerivoError("np.pad(..., mode={!r}) has no derivative rule; derivo "
                          "differentiates the modes {}".format(mode, ", ".join(COPYING_PAD_MODES)))
    if mode == "constant":
        return np.pad(positions(like), pad_width, mode, constant_values=-1)
    return np.pad(positions(like), pad_width, mode)


def appended_sources(arr, values, axis, which):
    """Where each element of ``np.append(arr, values, axis)`` came from in ``arr``
    (``which`` 0) or in ``values`` (1), -1 where from the other."""
    parts = [np.full(np.shape(arr), -1), np.full(np.shape(values), -1)]
    parts[which] = positions((arr, values)[which])
    return np.append(parts[0], parts[1], axis)


def column_stack_vjp(adjoint, arrays):
    """The adjoint of ``np.column_stack(arrays)``: each array's columns."""
    def sources(i):
        return np.column_stack([positions(a) if j == i else np.full(np.shape(a), -1)
                                for j, a in enumerate(arrays)])
    return [gathered_vjp(adjoint, a, sources(i)) for i, a in enumerate(arrays)]


def rollaxis_vjp(adjoint, like, axis, start):
    """The adjoint of ``np.rollaxis(like, axis, start)``: the inverse permutation
    (NumPy's rule: ``axis`` goes before ``start``, counted before it was removed)."""
    ndim = np.ndim(like)
    axis, start = axis % ndim, start + ndim if start < 0 else start
    order = list(range(ndim))
    order.remove(axis)
    order.insert(start - 1 if axis < start else start, axis)
    return np.transpose(adjoint, np.argsort(order))


def partition_sources(a, ans, axis):
    """Where each element of ``ans = np.partition(a, kth, axis)`` came from in
    ``a`` (flat positions, for :func:`gathered_vjp`): the r-th smallest of a
    lane of ``ans`` is the r-th smallest of that lane of ``a`` (ties in the
    order a stable sort gives them).  Matched by value, because np.partition
    and np.argpartition may arrange the elements differently."""
    sources, values, ans = positions(a), np.asarray(a), np.asarray(ans)
    if axis is None:
        sources, values, axis = sources.ravel(), values.ravel(), 0
    ascending = np.take_along_axis(sources, np.argsort(values, axis, kind="stable"), axis)
    found = np.empty_like(ascending)
    np.put_along_axis(found, np.argsort(ans, axis, kind="stable"), ascending, axis)
    return found


def select_choices(condlist):
    """For each element of ``np.select(condlist, choicelist, default)``, the index
    of the choice it came from (the first condition that holds), or
    ``len(condlist)`` where it came from ``default``."""
    chosen = len(condlist)
    for index in range(len(condlist) - 1, -1, -1):  # (the first true condition last)
        chosen = np.where(condlist[index], index, chosen)
    return chosen


def select_vjp(adjoint, condlist, choicelist):
    """The adjoints of np.select's choices: each gets the output's adjoint where
    it was chosen, summed to its shape."""
    from .runtime import unbroadcast
    chosen = select_choices(condlist)
    return [unbroadcast(np.where(chosen == index, adjoint, 0.0), choice)
            for index, choice in enumerate(choicelist)]


def gradient_spacings(f, spacing, axis):
    """np.gradient's spacing of each axis it differentiates along (a number or
    the coordinates), read as NumPy reads ``varargs``: none (1.0), one number
    for every axis, or one per axis."""
    axes = _gradient_axes(f, axis)
    if not spacing:
        return [1.0] * len(axes)
    if len(spacing) == 1 and np.ndim(spacing[0]) == 0:
        return list(spacing) * len(axes)
    return list(spacing)


def _gradient_axes(f, axis):
    ndim = np.ndim(f)
    if axis is None:
        return list(range(ndim))
    return [a % ndim for a in ((axis,) if np.ndim(axis) == 0 else axis)]


def gradient_vjp(adjoint, f, spacing, axis, edge_order):
    """The adjoint of ``np.gradient(f, *spacing, axis=axis, edge_order=edge_order)``
    in f: the sum over the axes of each derivative's transposed stencil applied
    to its adjoint (a tuple of them for several axes; 0.0 for one not used)."""
    axes = _gradient_axes(f, axis)
    if len(axes) == 1:
        parts = [adjoint]
    else:  # one adjoint per axis (a plain 0.0 when no derivative was used)
        parts = list(adjoint) if isinstance(adjoint, (list, tuple)) or np.ndim(adjoint) \
            else [0.0] * len(axes)
    total = np.zeros(np.shape(f), dtype=np.result_type(f, float))
    for part, along, step in zip(parts, axes, gradient_spacings(f, spacing, axis)):
        if np.ndim(part) == 0 and part == 0:
            continue
        if total.dtype.kind != "c":  # a real f's adjoint: the real part of what reaches it
            part = np.real(part)
        count = np.shape(f)[along]
        weights, columns = gradient_stencil(count, step, edge_order)
        moved = np.moveaxis(np.broadcast_to(part, np.shape(f)), along, 0)
        rest = moved.shape[1:]
        points = np.arange(count).reshape((count,) + (1,) * len(rest))
        for k in range(3):
            weighted = np.expand_dims(weights[:, k], tuple(range(1, moved.ndim))) * moved
            # row i, between the first and the last, reads point i - 1 + k (built
            # whole, not written into zeros: the adjoint may be a lazy Dask array)
            spread = np.concatenate([np.zeros((k,) + rest), weighted[1:count - 1],
                                     np.zeros((2 - k,) + rest)]) \
                + (points == columns[0, k]) * weighted[0] + (points == columns[-1, k]) * weighted[-1]
            total = total + np.moveaxis(spread, 0, along)
    return total


def gradient_stencil(count, step, edge_order):
    """np.gradient's weights along one axis of ``count`` points: ``(weights,
    columns)``, each (count, 3), with derivative i = sum over k of weights[i, k]
    f[columns[i, k]].  Each derivative reads three neighbouring points (the
    first and last, the three at their end), so np.gradient applied to the
    indicator of the points i with i % 3 == r gives, at row i, the weight of
    the one point of its three with that remainder: NumPy's own numbers."""
    rows = np.arange(count)
    first = np.clip(rows - 1, 0, max(count - 3, 0))
    columns = np.minimum(first[:, None] + np.arange(3), count - 1)
    indicators = [(rows % 3 == r).astype(float) for r in range(3)]
    derivatives = [np.gradient(indicator, step, edge_order=edge_order)
                   for indicator in indicators]
    weights = np.stack([np.choose(columns[:, k] % 3, derivatives) for k in range(3)], axis=1)
    # a column repeated (fewer than three points) is counted once
    weights[:, 1:][columns[:, 1:] == columns[:, :-1]] = 0.0
    return weights, columns


class InterpSegments:
    """Where each x of ``np.interp(x, xp, fp, left, right, period)`` falls:
    between the knots at positions ``below`` and ``above`` of xp (and fp), a
    ``fraction`` of the way (0 at below, 1 at above), so that the result is
    ``(1 - fraction) fp[below] + fraction fp[above]`` where ``inside`` (x within
    the knots), and ``fp[below]`` (``fp[above]``) left (right) of them unless
    ``left`` (``right``) is given.  With a period, x and xp are taken modulo
    it and the knots sorted and extended by one at either end, as NumPy does
    (each still a knot of xp, moved by a multiple of the period)."""

    def __init__(self, x, xp, left, right, period):
        x, xp = np.asarray(x, dtype=float), np.asarray(xp, dtype=float)
        sources = np.arange(len(xp))
        knots = xp
        if period is not None:
            period = abs(period)
            x, xp = x % period, xp % period
            order = np.argsort(xp, kind="stable")
            sources = np.concatenate([order[-1:], order, order[:1]])
            knots = np.concatenate([xp[order[-1:]] - period, xp[order], xp[order[:1]] + period])
        if len(knots) == 1:  # one knot: fp[0] wherever left and right do not say otherwise
            sources, knots = np.repeat(sources, 2), np.repeat(knots, 2)
        segment = np.clip(np.searchsorted(knots, x, side="right") - 1, 0, len(knots) - 2)
        self.below, self.above = sources[segment], sources[segment + 1]
        self.width = knots[segment + 1] - knots[segment]
        opened = self.width > 0
        self.fraction = np.clip(np.where(opened, x - knots[segment], 0.0)
                                / np.where(opened, self.width, 1.0), 0.0, 1.0)
        self.inside = (x >= knots[0]) & (x <= knots[-1]) & opened
        # outside the knots the result is an end of fp, or left/right when given
        self.kept = ~((x < knots[0]) & (left is not None) | (x > knots[-1]) & (right is not None))

    def weights(self):
        """fp's weights at below and at above."""
        return (1 - self.fraction) * self.kept, self.fraction * self.kept

    def slope(self, fp):
        """d result / d x: the slope of fp over the segment, 0 outside the knots."""
        fp = np.asarray(fp)
        rise = fp[self.above] - fp[self.below]
        return np.where(self.inside, rise, 0.0) / np.where(self.inside, self.width, 1.0)


def interp_x_partial(x, xp, fp, left, right, period):
    """d np.interp(x, xp, fp, ...) / d x, elementwise in x."""
    return InterpSegments(x, xp, left, right, period).slope(fp)


def _real_part(adjoint):
    """The adjoint of a real value (x and xp are): the real part of what reached
    it (JAX's convention; a complex fp makes a complex result)."""
    return np.real(adjoint) if np.iscomplexobj(adjoint) else adjoint


def interp_x_vjp(adjoint, x, xp, fp, left, right, period):
    return _real_part(adjoint * interp_x_partial(x, xp, fp, left, right, period))


def interp_fp_vjp(adjoint, x, xp, fp, left, right, period):
    """The adjoint in fp: each x's adjoint shared between its two knots."""
    segments = InterpSegments(x, xp, left, right, period)
    below, above = segments.weights()
    adjoint = np.broadcast_to(adjoint if np.iscomplexobj(fp) else _real_part(adjoint),
                              np.shape(below))
    total = np.zeros(np.shape(fp), dtype=np.result_type(adjoint, float))
    np.add.at(total, segments.below, below * adjoint)
    np.add.at(total, segments.above, above * adjoint)
    return total


def interp_fp_jvp(tangent, x, xp, left, right, period):
    segments = InterpSegments(x, xp, left, right, period)
    below, above = segments.weights()
    tangent = np.asarray(tangent)
    return below * tangent[segments.below] + above * tangent[segments.above]


def interp_slope_vjp(adjoint, x, xp, fp, left, right, period):
    """The transpose of fp -> d np.interp(x, xp, fp, ...) / d x (the slope of fp
    over each x's segment, linear in fp), applied to ``adjoint``: each x's
    adjoint over its segment's width, added at the knot above and taken from
    the knot below (nothing outside the knots)."""
    segments = InterpSegments(x, xp, left, right, period)
    share = np.broadcast_to(adjoint, np.shape(segments.width)) * \
        np.where(segments.inside, 1.0, 0.0) / np.where(segments.inside, segments.width, 1.0)
    total = np.zeros(np.shape(fp), dtype=np.result_type(share, float))
    np.add.at(total, segments.above, share)
    np.add.at(total, segments.below, -share)
    return total


def _interp_knot_partials(segments, fp):
    """d result / d xp[below] and d result / d xp[above]: moving a knot moves
    the segment under x, by slope (fraction - 1) and by -slope fraction."""
    slope = segments.slope(fp)
    return slope * (segments.fraction - 1), -slope * segments.fraction


def interp_xp_vjp(adjoint, x, xp, fp, left, right, period):
    """The adjoint in xp (the knots), inside the knots' range only (outside, the
    result is an end value or left/right, which do not move with xp)."""
    segments = InterpSegments(x, xp, left, right, period)
    below, above = _interp_knot_partials(segments, fp)
    adjoint = np.broadcast_to(adjoint, np.shape(below))
    total = np.zeros(np.shape(xp), dtype=np.result_type(adjoint, below))
    np.add.at(total, segments.below, below * adjoint)
    np.add.at(total, segments.above, above * adjoint)
    return _real_part(total)


def interp_xp_jvp(tangent, x, xp, fp, left, right, period):
    segments = InterpSegments(x, xp, left, right, period)
    below, above = _interp_knot_partials(segments, fp)
    tangent = np.asarray(tangent)
    return below * tangent[segments.below] + above * tangent[segments.above]


def split_vjp(adjoint, ans, axis):
    """The adjoint of ``np.split`` (and array_split, hsplit...): the pieces' adjoints
    joined along ``axis``, zeros for a piece no adjoint reached.  The pieces' adjoints
    come as a list, or as an array of them (their tangents, which forward mode
    adds element by element: runtime.addable)."""
    pieces = [np.zeros(np.shape(piece)) if _unreached_part(adjoint, i) else adjoint[i]
              for i, piece in enumerate(ans)]
    return np.concatenate(pieces, axis)


def _unreached_part(adjoint, i):
    pieces = isinstance(adjoint, (list, tuple)) or isinstance(adjoint, np.ndarray) and adjoint.ndim
    if not pieces:
        return True  # a plain 0.0: no piece was used
    return np.ndim(adjoint[i]) == 0 and adjoint[i] == 0



# --- statistics ------------------------------------------------------------------------

def ptp_weights(a, axis):
    """d ptp(a) / d a along ``axis``: the max's share minus the min's (each
    shared equally among the elements that attain it)."""
    a = np.asarray(a)
    top = a == np.max(a, axis=axis, keepdims=True)
    bottom = a == np.min(a, axis=axis, keepdims=True)
    return top / np.sum(top, axis=axis, keepdims=True) - \
        bottom / np.sum(bottom, axis=axis, keepdims=True)


def average_weights(a, weights, axis):
    """np.average's weights in ``a``'s shape, divided by their sum along ``axis``
    (a 1-d array of weights lies along ``axis``, as NumPy reads it)."""
    if weights is None:
        weights = np.ones(np.shape(a))
    weights = np.asarray(weights, dtype=float)
    if weights.shape != np.shape(a):
        shape = [1] * np.ndim(a)
        shape[axis] = weights.size
        weights = np.broadcast_to(weights.reshape(shape), np.shape(a))
    return weights / np.sum(weights, axis=axis, keepdims=True)


def quantile_vjp(adjoint, a, q, axis, keepdims, method):
    """The adjoint of ``np.quantile(a, q, axis, method="linear", keepdims)`` with
    one q: the two order statistics q interpolates between get (1 - f) and f of
    it (ties: the one np.argsort puts first)."""
    if method != "linear" or np.ndim(q) or not (axis is None or type(axis) is int):
        raise DerivoError("derivo differentiates np.quantile, np.percentile and np.median "
                          "with one q, an int axis (or none) and method='linear'")
    sources, values = positions(a), np.asarray(a)
    if axis is None:
        sources, values, axis = sources.ravel(), values.ravel(), 0
    sorted_sources = np.take_along_axis(sources, np.argsort(values, axis=axis, kind="stable"), axis)
    count = values.shape[axis]
    virtual = q * (count - 1)
    low = int(np.floor(virtual))
    fraction = virtual - low
    low_sources = np.take(sorted_sources, low, axis)
    high_sources = np.take(sorted_sources, min(low + 1, count - 1), axis)
    adjoint = np.reshape(adjoint, np.shape(low_sources))
    return gathered_vjp(adjoint * (1 - fraction), a, low_sources) + \
        gathered_vjp(adjoint * fraction, a, high_sources)


def quantile_jvp(tangent, ans, a, q, axis, keepdims, method):
    weights = quantile_vjp(np.ones(np.shape(ans)), a, q, axis, keepdims, method)
    return np.sum(weights * tangent, axis=axis, keepdims=keepdims)


def trapezoid_weights(y, x, dx, axis):
    """d np.trapezoid(y, x, dx, axis) / d y, to broadcast against y: each sample
    weighs half the widths of the intervals beside it."""
    count = np.shape(y)[axis]
    if x is None or np.ndim(x) == 1:
        widths = dx * np.ones(count - 1) if x is None else np.diff(x)
        weights = 0.5 * (np.pad(widths, (0, 1)) + np.pad(widths, (1, 0)))
        shape = [1] * np.ndim(y)
        shape[axis] = count
        return weights.reshape(shape)
    widths = np.moveaxis(np.diff(x, axis=axis), axis, -1)
    ends = [(0, 0)] * (widths.ndim - 1)
    weights = 0.5 * (np.pad(widths, ends + [(0, 1)]) + np.pad(widths, ends + [(1, 0)]))
    return np.moveaxis(weights, -1, axis)
