"""Adjoints and tangents of NumPy's and SciPy's linear algebra and of np.fft.

The tables :mod:`derivo.rules.linalg` and :mod:`derivo.rules.fft` call these
from their templates, and generated code calls them (a saved module copies
them, see :data:`derivo.codegen.HELPER_MODULES`).  The rules are written the
stable way: inverses are applied by solving, factorisations the forward pass
returned are reused, and eigen- and singular-vector rules say where they fail
(repeated eigenvalues or singular values).

Complex values follow JAX's convention: the adjoint ``g`` of a complex value
``z`` is dL/dRe z - i dL/dIm z, so that a real loss changes by Re(sum(g * dz)).
A linear map's adjoint is then its plain transpose (no conjugate), and the
adjoint of a real argument is the real part of the transpose applied to ``g``.
"""

import numpy as np

from .adjoints import cholesky_jvp
from .errors import DerivoError
from .runtime import expand, swap_last, unbroadcast


class TupleTangent(tuple):
    """The tangent of a primitive with several results (``lstsq``): the shares
    of its arguments add result by result, not by joining the tuples."""

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return TupleTangent(a + b for a, b in zip(self, other))

    __radd__ = __add__

    def __neg__(self):
        return TupleTangent(-a for a in self)

    def __sub__(self, other):
        return self + -TupleTangent(other)


def part(adjoint, index, like):
    """Result ``index``'s share of the adjoint of a primitive with several
    results: zeros like ``like`` where no adjoint reached it (a plain 0.0)."""
    if isinstance(adjoint, (list, tuple)) or (isinstance(adjoint, np.ndarray) and adjoint.ndim):
        item = adjoint[index]
    else:  # no adjoint reached any result
        item = adjoint
    if np.ndim(item) == 0 and np.ndim(like) > 0 and item == 0:
        return np.zeros(np.shape(like))
    return item


def real_like(value, like):
    """``value``, its real part when ``like`` is real: the adjoint of a real
    argument of a map whose results are complex."""
    if np.iscomplexobj(value) and not np.iscomplexobj(like):
        return np.real(value)
    return value


#: what to write instead of a complex matrix A + iB, where a real one does the same
_REAL_EMBEDDING = {
    "np.linalg.eigh": "the real symmetric [[A, -B], [B, A]] of a Hermitian A + iB has its "
                      "eigenvalues, each twice",
    "np.linalg.eigvalsh": "the real symmetric [[A, -B], [B, A]] of a Hermitian A + iB has its "
                          "eigenvalues, each twice",
    "np.linalg.svd": "the real [[A, -B], [B, A]] has the singular values of A + iB, each twice",
}


def _real_only(label, *arrays):
    """Refuse complex arguments of a rule written for real matrices only, saying
    what to write instead."""
    if any(np.iscomplexobj(a) for a in arrays):
        instead = _REAL_EMBEDDING.get(label, "split a complex matrix into its real and "
                                             "imaginary parts")
        raise DerivoError("derivo differentiates {} of real matrices only; {}".format(
            label, instead))


def _identity_like(matrix):
    return np.broadcast_to(np.eye(np.shape(matrix)[-1]), np.shape(matrix))


def _outer_last(u, v):
    """u[..., :, None] * v[..., None, :]"""
    return np.expand_dims(u, -1) * np.expand_dims(v, -2)


# --- determinants, inverses, solves ------------------------------------------------

def slogdet_vjp(adjoint, ans, a):
    """The adjoint of ``np.linalg.slogdet(a)`` (the sign's is zero): the log
    determinant's adjoint times A^-T, by a solve."""
    scale = np.expand_dims(part(adjoint, 1, ans[1]), (-2, -1))
    return np.linalg.solve(swap_last(a), scale * _identity_like(a))


def slogdet_jvp(tangent, ans, a):
    return (np.zeros(np.shape(ans[0])),
            np.trace(np.linalg.solve(a, tangent), axis1=-2, axis2=-1))


def pinv_vjp(adjoint, ans, a):
    """The adjoint of ``X = pinv(A)`` (Golub and Pereyra 1973), the transpose of
    pinv_jvp: -X^T G X^T + (I - A X) G^T X X^T + X^T X G^T (I - X A).  A must
    keep its rank: pinv jumps where a singular value crosses rcond."""
    x, xt, gt = ans, swap_last(ans), swap_last(adjoint)
    m, n = np.shape(a)[-2], np.shape(a)[-1]
    left = np.eye(m) - a @ x      # I - A X, (m, m)
    right = np.eye(n) - x @ a     # I - X A, (n, n)
    return (-(xt @ adjoint @ xt) + swap_last(left) @ gt @ x @ xt
            + xt @ x @ gt @ swap_last(right))


def pinv_jvp(tangent, ans, a):
    """dX = -X dA X + X X^T dA^T (I - A X) + (I - X A) dA^T X^T X."""
    x, xt, dt = ans, swap_last(ans), swap_last(tangent)
    m, n = np.shape(a)[-2], np.shape(a)[-1]
    return (-(x @ tangent @ x) + x @ xt @ dt @ (np.eye(m) - a @ x)
            + (np.eye(n) - x @ a) @ dt @ xt @ x)


def _lstsq_parts(a, b):
    """(pinv(A), the solution, the residual b - A x) of least squares."""
    x_pinv = np.linalg.pinv(a)
    solution = x_pinv @ b
    return x_pinv, solution, b - a @ solution


def lstsq_vjp_a(adjoint, ans, a, b):
    """The adjoint in A of ``np.linalg.lstsq(a, b)`` (solution, residuals, rank,
    singular values), A of full rank: x = pinv(A) b; the residuals' adjoint is
    -2 r x^T (the solution is where they are least); the singular values' that
    of svd."""
    x_pinv, solution, residual = _lstsq_parts(a, b)
    as_matrix = (lambda v: v[:, None]) if np.ndim(b) == 1 else (lambda v: v)
    g_x = as_matrix(part(adjoint, 0, ans[0]))
    result = pinv_vjp(g_x @ swap_last(as_matrix(b)), x_pinv, a)
    if np.size(ans[1]):
        g_res = np.reshape(part(adjoint, 1, ans[1]), (1, -1))
        result = result - 2 * (as_matrix(residual) * g_res) @ swap_last(as_matrix(solution))
    g_sv = part(adjoint, 3, ans[3])
    if np.any(g_sv):
        u, _, vh = np.linalg.svd(a, full_matrices=False)
        result = result + (u * g_sv) @ vh
    return result


def lstsq_vjp_b(adjoint, ans, a, b):
    x_pinv, _, residual = _lstsq_parts(a, b)
    result = swap_last(x_pinv) @ part(adjoint, 0, ans[0])
    if np.size(ans[1]):
        g_res = part(adjoint, 1, ans[1])
        result = result + 2 * residual * (g_res if np.ndim(b) > 1 else g_res[0])
    return result


def lstsq_jvp_a(tangent, ans, a, b):
    x_pinv, solution, residual = _lstsq_parts(a, b)
    d_solution = pinv_jvp(tangent, x_pinv, a) @ b
    d_residuals = -2 * np.sum(residual * (tangent @ solution), axis=0) if np.size(ans[1]) \
        else np.zeros(0)
    d_sv = np.zeros(np.shape(ans[3]))
    if np.size(ans[3]):
        u, _, vh = np.linalg.svd(a, full_matrices=False)
        d_sv = np.sum(u * (tangent @ swap_last(vh)), axis=-2)
    return TupleTangent((d_solution, np.reshape(d_residuals, np.shape(ans[1])), 0, d_sv))


def lstsq_jvp_b(tangent, ans, a, b):
    x_pinv, _, residual = _lstsq_parts(a, b)
    d_residuals = 2 * np.sum(residual * tangent, axis=0) if np.size(ans[1]) else np.zeros(0)
    return TupleTangent((x_pinv @ tangent, np.reshape(d_residuals, np.shape(ans[1])), 0,
                         np.zeros(np.shape(ans[3]))))


def matrix_power_vjp(adjoint, a, n):
    """The adjoint of ``matrix_power(A, n)``: sum over k of (A^T)^k G (A^T)^(n-1-k);
    for n < 0 that of B^-n with B = A^-1, then -B^T (.) B^T."""
    base = np.linalg.inv(a) if n < 0 else np.asarray(a)
    powers = [_identity_like(base)]
    for _ in range(abs(n) - 1):
        powers.append(powers[-1] @ base)
    total = sum(swap_last(powers[k]) @ adjoint @ swap_last(powers[abs(n) - 1 - k])
                for k in range(abs(n))) if n else np.zeros(np.shape(a))
    return -(swap_last(base) @ total @ swap_last(base)) if n < 0 else total


def matrix_power_jvp(tangent, a, n):
    base = np.linalg.inv(a) if n < 0 else np.asarray(a)
    change = -(base @ tangent @ base) if n < 0 else tangent
    powers = [_identity_like(base)]
    for _ in range(abs(n) - 1):
        powers.append(powers[-1] @ base)
    return sum(powers[k] @ change @ powers[abs(n) - 1 - k] for k in range(abs(n))) \
        if n else np.zeros(np.shape(a))


# --- products --------------------------------------------------------------------------

def multi_dot_vjp(adjoint, arrays):
    """The adjoints of ``np.linalg.multi_dot(arrays)``, one per array: the
    product of those before it, transposed, times G times that of those after
    (a first vector is a row, a last one a column)."""
    matrices = [np.asarray(m) for m in arrays]
    first_vector, last_vector = matrices[0].ndim == 1, matrices[-1].ndim == 1
    if first_vector:
        matrices[0] = matrices[0][None, :]
    if last_vector:
        matrices[-1] = matrices[-1][:, None]
    g = np.reshape(adjoint, (matrices[0].shape[0], matrices[-1].shape[1]))
    before = [np.eye(matrices[0].shape[0])]
    for m in matrices[:-1]:
        before.append(before[-1] @ m)
    after = [np.eye(matrices[-1].shape[1])]
    for m in reversed(matrices[1:]):
        after.append(m @ after[-1])
    after.reverse()
    result = [before[i].T @ g @ after[i].T for i in range(len(matrices))]
    return [np.reshape(r, np.shape(m)) for r, m in zip(result, arrays)]


def multi_dot_jvp(tangent, arrays):
    """The sum over the arrays with a tangent of the product with that array
    replaced by its tangent."""
    total = 0.0
    for i, t in enumerate(tangent):
        if np.ndim(t) == 0 and t == 0:
            continue
        total = total + np.linalg.multi_dot(list(arrays[:i]) + [t] + list(arrays[i + 1:]))
    return total


def _tensordot_axes(axes, a_ndim, b_ndim):
    """``tensordot``'s axes as two lists of summed axes (a's, b's), non-negative."""
    if np.ndim(axes) == 0:
        return list(range(a_ndim - axes, a_ndim)), list(range(axes))
    first, second = axes
    first = [first] if np.ndim(first) == 0 else list(first)
    second = [second] if np.ndim(second) == 0 else list(second)
    return [i % a_ndim for i in first], [i % b_ndim for i in second]


def tensordot_vjp_a(adjoint, a, b, axes):
    """The adjoint in a of ``np.tensordot(a, b, axes)``: G contracted with b
    over b's free axes, a's axes put back in order."""
    a_sum, b_sum = _tensordot_axes(axes, np.ndim(a), np.ndim(b))
    a_free = [i for i in range(np.ndim(a)) if i not in a_sum]
    b_free = [i for i in range(np.ndim(b)) if i not in b_sum]
    g_free = list(range(len(a_free), len(a_free) + len(b_free)))
    out = np.tensordot(adjoint, b, (g_free, b_free))
    # out's axes: a's free ones, then b's summed ones in b's order (paired with a's)
    placed = a_free + [a_sum[b_sum.index(j)] for j in sorted(b_sum)]
    return np.transpose(out, np.argsort(placed))


def tensordot_vjp_b(adjoint, a, b, axes):
    a_sum, b_sum = _tensordot_axes(axes, np.ndim(a), np.ndim(b))
    a_free = [i for i in range(np.ndim(a)) if i not in a_sum]
    b_free = [i for i in range(np.ndim(b)) if i not in b_sum]
    out = np.tensordot(a, adjoint, (a_free, list(range(len(a_free)))))
    placed = [b_sum[a_sum.index(i)] for i in sorted(a_sum)] + b_free
    return np.transpose(out, np.argsort(placed))


def kron_vjp(adjoint, a, b, first):
    """The adjoint of ``np.kron(a, b)`` in a (``first``) or b: the adjoint cut
    into blocks, each block weighed by b (by a's entries)."""
    shape_a, shape_b = np.shape(a), np.shape(b)
    ndim = max(len(shape_a), len(shape_b))
    shape_a = (1,) * (ndim - len(shape_a)) + shape_a
    shape_b = (1,) * (ndim - len(shape_b)) + shape_b
    blocks = np.reshape(adjoint, [size for pair in zip(shape_a, shape_b) for size in pair])
    if first:
        reduced = np.tensordot(blocks, np.reshape(b, shape_b),
                               (list(range(1, 2 * ndim, 2)), list(range(ndim))))
        return np.reshape(reduced, np.shape(a))
    reduced = np.tensordot(blocks, np.reshape(a, shape_a),
                           (list(range(0, 2 * ndim, 2)), list(range(ndim))))
    return np.reshape(reduced, np.shape(b))


def cross_vjp(adjoint, a, b, axisa, axisb, axisc, axis, first):
    """The adjoint of ``np.cross(a, b, ...)`` in a (``first``) or b:
    <g, a x b> = <a, b x g> = <b, g x a>, for 3- and 2-vectors."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a3, b3 = (_as_3_vectors(np.moveaxis(v, ax, -1)) for v, ax in ((a, axisa), (b, axisb)))
    g = np.asarray(adjoint)
    if np.shape(a)[axisa] == 2 and np.shape(b)[axisb] == 2:
        g3 = np.stack([np.zeros(g.shape), np.zeros(g.shape), g], axis=-1)
    else:
        g3 = np.moveaxis(g, axisc, -1)
    like, ax = (a, axisa) if first else (b, axisb)
    share = np.cross(b3, g3) if first else np.cross(g3, a3)
    share = share[..., :np.shape(like)[ax]]
    return unbroadcast(np.moveaxis(share, -1, ax), like)


def _as_3_vectors(v):
    return v if v.shape[-1] == 3 else np.concatenate([v, np.zeros(v.shape[:-1] + (1,))], -1)


def trace_vjp(adjoint, a, offset, axis1, axis2):
    """The adjoint of ``np.trace(a, offset, axis1, axis2)``: g on that diagonal."""
    shape = np.shape(a)
    diagonal = np.eye(shape[axis1], shape[axis2], k=offset)
    spread = np.reshape(adjoint, np.shape(adjoint) + (1, 1)) * diagonal
    return np.moveaxis(spread, (-2, -1), (axis1, axis2))


# --- norms -----------------------------------------------------------------------------

def _norm_axes(x, ord, axis):
    """The axes ``np.linalg.norm(x, ord, axis)`` reduces, as a tuple."""
    if axis is None:
        return tuple(range(np.ndim(x)))
    return tuple(a % np.ndim(x) for a in ((axis,) if np.ndim(axis) == 0 else axis))


def norm_vjp_any(adjoint, ans, x, ord, axis, keepdims):
    """The adjoint of ``np.linalg.norm(x, ord, axis, keepdims)`` for every ord:
    vector norms (inf, -inf, 0, 1, p) elementwise, matrix norms (nuc, 2, -2 by
    the singular vectors; 1, -1, inf, -inf by the column or row reached)."""
    x = np.asarray(x)
    _real_only("np.linalg.norm", x)
    axes = _norm_axes(x, ord, axis)
    if ord is None or (ord == "fro" and len(axes) == 2) or (ord == 2 and len(axes) == 1):
        from .runtime import norm_vjp  # (here: a saved module copies what it needs only)
        return norm_vjp(adjoint, ans, x, ord, axis, keepdims)   # the Euclidean norm
    if len(axes) == 1:
        return expand(adjoint, x, axis, keepdims) * _vector_norm_partials(x, ans, ord, axis,
                                                                          keepdims)
    g = np.asarray(adjoint)
    if keepdims:
        g = np.squeeze(g, axes)
    matrices = np.moveaxis(x, axes, (-2, -1))
    share = np.expand_dims(g, (-2, -1)) * _matrix_norm_partials(matrices, ord)
    return np.moveaxis(share, (-2, -1), axes)


def _vector_norm_partials(x, ans, ord, axis, keepdims):
    size = np.abs(x)
    if ord in (np.inf, -np.inf):
        hits = size == expand(ans, x, axis, keepdims)
        return np.sign(x) * hits / np.sum(hits, axis=axis, keepdims=True)
    if ord == 0:
        return np.zeros(x.shape)
    if ord == 1:
        return np.sign(x)
    # p-norm: sign(x) |x|^(p-1) / norm^(p-1)
    return np.sign(x) * (size / expand(ans, x, axis, keepdims)) ** (ord - 1)


def _matrix_norm_partials(matrices, ord):
    """d norm / d matrix for a stack of matrices (..., m, n)."""
    if ord in ("nuc", 2, -2):
        u, s, vh = np.linalg.svd(matrices, full_matrices=False)
        if ord == "nuc":
            return u @ vh
        k = 0 if ord == 2 else -1
        return _outer_last(u[..., :, k], vh[..., k, :])
    if ord in (1, -1, np.inf, -np.inf):
        line = -2 if ord in (1, -1) else -1   # columns sum over rows, rows over columns
        sums = np.sum(np.abs(matrices), axis=line, keepdims=True)
        reached = np.max(sums, axis=-1 - (line == -1), keepdims=True) if ord > 0 else \
            np.min(sums, axis=-1 - (line == -1), keepdims=True)
        hits = sums == reached
        return np.sign(matrices) * hits / np.sum(hits, axis=(-2, -1), keepdims=True)
    raise DerivoError("np.linalg.norm has no matrix norm ord={!r}".format(ord))


def norm_jvp(tangent, ans, x, ord, axis, keepdims):
    """The tangent of a norm: its partials against the tangent, over the axes
    it reduces (each result reads its own vector or matrix only)."""
    partials = norm_vjp_any(np.ones(np.shape(ans)), ans, x, ord, axis, keepdims)
    return np.sum(partials * tangent, axis=_norm_axes(x, ord, axis), keepdims=keepdims)


# --- factorisations ----------------------------------------------------------------------

def _copy_lower_to_upper(m):
    return np.tril(m) + swap_last(np.tril(m, -1))


def qr_vjp(adjoint, ans, a, mode):
    """The adjoint of ``Q, R = np.linalg.qr(A)`` for A with at least as many rows
    as columns (reduced, or square complete): (G_Q + Q copyltu(M)) R^-T with
    M = R G_R^T - G_Q^T Q (Walter and Lehmann 2018), by a solve with R."""
    _qr_supported(a, mode)
    if mode == "r":  # R alone: Q from a second factorisation
        q, r, g_r = np.linalg.qr(a)[0], ans, adjoint
        g_q = np.zeros(np.shape(q))
    else:
        (q, r), g_q, g_r = ans, part(adjoint, 0, ans[0]), part(adjoint, 1, ans[1])
    m = r @ swap_last(g_r) - swap_last(g_q) @ q
    b = g_q + q @ _copy_lower_to_upper(m)
    return swap_last(np.linalg.solve(r, swap_last(b)))


def qr_jvp(tangent, ans, a, mode):
    """dQ = Q (Omega - Q^T dA R^-1) + dA R^-1, dR = (Q^T dA R^-1 - Omega) R with
    Omega the skew part of Q^T dA R^-1's strict lower triangle (Townsend)."""
    _qr_supported(a, mode)
    q, r = (np.linalg.qr(a)[0], ans) if mode == "r" else ans
    dx_rinv = swap_last(np.linalg.solve(swap_last(r), swap_last(tangent)))
    qt_dx_rinv = swap_last(q) @ dx_rinv
    lower = np.tril(qt_dx_rinv, -1)
    omega = lower - swap_last(lower)
    dq = q @ (omega - qt_dx_rinv) + dx_rinv
    dr = (qt_dx_rinv - omega) @ r
    return dr if mode == "r" else (dq, dr)


def _qr_supported(a, mode):
    _real_only("np.linalg.qr", a)
    rows, cols = np.shape(a)[-2:]
    if rows < cols or mode not in ("reduced", "r") and not (mode == "complete" and rows == cols):
        raise DerivoError("derivo differentiates np.linalg.qr of matrices with at least as many "
                          "rows as columns, in mode 'reduced' or 'r' (got {}x{}, mode={!r}); "
                          "a wide matrix's Q and R are not smooth in it".format(rows, cols, mode))


def _symmetric_from(tangent, uplo):
    """The symmetric matrix eigh sees when it reads ``tangent``'s triangle."""
    if uplo == "U":
        return np.triu(tangent) + swap_last(np.triu(tangent, 1))
    return np.tril(tangent) + swap_last(np.tril(tangent, -1))


def _onto_triangle(gradient, uplo):
    """A symmetric matrix's gradient in the triangle eigh reads: the diagonal,
    and both off-diagonal halves added into the one triangle."""
    both = gradient + swap_last(gradient)
    diagonal = gradient * np.eye(np.shape(gradient)[-1])
    return diagonal + (np.tril(both, -1) if uplo != "U" else np.triu(both, 1))


def _eigen_gaps(w):
    """F[i, j] = 1 / (w_j - w_i) off the diagonal, 0 on it (inf where two
    eigenvalues are equal: their eigenvectors are not determined)."""
    gaps = np.expand_dims(w, -2) - np.expand_dims(w, -1)
    eye = np.eye(np.shape(w)[-1], dtype=bool)
    with np.errstate(divide="ignore"):
        return np.where(eye, 0.0, 1.0 / np.where(eye, 1.0, gaps))


def eigh_vjp(adjoint, ans, a, uplo):
    """The adjoint of ``w, V = np.linalg.eigh(A)``: V (diag(G_w) + F o (V^T G_V))
    V^T, put in the triangle eigh reads.  Eigenvalues alone (G_V zero) are
    always differentiable; eigenvectors need distinct eigenvalues (F's 1/gap)."""
    _real_only("np.linalg.eigh", a)
    w, v = ans
    g_w, g_v = part(adjoint, 0, w), part(adjoint, 1, v)
    inner = np.expand_dims(g_w, -1) * np.eye(np.shape(w)[-1])
    if np.any(g_v):
        inner = inner + _eigen_gaps(w) * (swap_last(v) @ g_v)
    return _onto_triangle(v @ inner @ swap_last(v), uplo)


def eigh_jvp(tangent, ans, a, uplo):
    """dw = diag(V^T dA V), dV = V (F o V^T dA V), dA the symmetric matrix read."""
    w, v = ans
    inner = swap_last(v) @ _symmetric_from(tangent, uplo) @ v
    return np.diagonal(inner, axis1=-2, axis2=-1).copy(), v @ (_eigen_gaps(w) * inner)


def eigvalsh_vjp(adjoint, a, uplo):
    """The adjoint of ``np.linalg.eigvalsh(A)``: V diag(g) V^T (eigh once more
    for V), in the triangle read; defined at repeated eigenvalues too."""
    _real_only("np.linalg.eigvalsh", a)
    _, v = np.linalg.eigh(a, uplo)
    return _onto_triangle((v * np.expand_dims(adjoint, -2)) @ swap_last(v), uplo)


def eigvalsh_jvp(tangent, a, uplo):
    _, v = np.linalg.eigh(a, uplo)
    return np.sum(v * (_symmetric_from(tangent, uplo) @ v), axis=-2)


def eig_vjp(adjoint, ans, a):
    """The adjoint of ``w, V = np.linalg.eig(A)`` (unit eigenvectors, of any
    phase: a loss must not depend on it): V^-T (diag(G_w) + F o (V^T G_V)
    - F o (V^T conj(V) Re diag(V^T G_V))) V^T; eigenvectors need distinct
    eigenvalues.  Real for a real A."""
    w, v = ans
    g_w, g_v = part(adjoint, 0, w), part(adjoint, 1, v)
    inner = np.expand_dims(g_w, -1) * np.eye(np.shape(w)[-1])
    if np.any(g_v):
        gaps = _eigen_gaps(w)
        vt_gv = swap_last(v) @ g_v
        norms = np.expand_dims(np.real(np.diagonal(vt_gv, axis1=-2, axis2=-1)), -2)
        inner = inner + gaps * vt_gv - gaps * ((swap_last(v) @ np.conj(v)) * norms)
    return real_like(np.linalg.solve(swap_last(v), inner @ swap_last(v)), a)


def eig_jvp(tangent, ans, a):
    """dw = diag(P), dV = V (F o P + diag(c)) with P = V^-1 dA V and c keeping
    each eigenvector of unit length (Re v^H dv = 0)."""
    w, v = ans
    p = np.linalg.solve(v, tangent @ v)
    change = v @ (_eigen_gaps(w) * p)
    lengths = -np.real(np.sum(np.conj(v) * change, axis=-2))
    return np.diagonal(p, axis1=-2, axis2=-1).copy(), change + v * np.expand_dims(lengths, -2)


def eigvals_vjp(adjoint, a):
    """The adjoint of ``np.linalg.eigvals(A)``: V^-T diag(g) V^T (eig once more)."""
    _, v = np.linalg.eig(a)
    return real_like(np.linalg.solve(swap_last(v), np.expand_dims(adjoint, -1) *
                                     swap_last(v)), a)


def eigvals_jvp(tangent, a):
    _, v = np.linalg.eig(a)
    return np.diagonal(np.linalg.solve(v, tangent @ v), axis1=-2, axis2=-1).copy()


def _svd_supported(a, full_matrices):
    _real_only("np.linalg.svd", a)
    rows, cols = np.shape(a)[-2:]
    if full_matrices and rows != cols:
        raise DerivoError("derivo differentiates np.linalg.svd of a {}x{} matrix with "
                          "full_matrices=False only: the extra singular vectors of "
                          "full_matrices=True are not determined".format(rows, cols))


def svd_vjp(adjoint, ans, a, full_matrices, compute_uv):
    """The adjoint of ``U, s, Vh = np.linalg.svd(A)`` (Townsend 2016): singular
    values alone are differentiable where they are distinct from each other
    ... and always for compute_uv=False: U diag(g) Vh; the vectors need distinct
    nonzero singular values (1 / (s_j^2 - s_i^2) and 1 / s)."""
    if not compute_uv:
        _real_only("np.linalg.svd", a)
        u, _, vh = np.linalg.svd(a, full_matrices=False)
        return (u * np.expand_dims(adjoint, -2)) @ vh
    _svd_supported(a, full_matrices)
    u, s, vh = ans
    g_u, g_s, g_vh = part(adjoint, 0, u), part(adjoint, 1, s), part(adjoint, 2, vh)
    v, g_v = swap_last(vh), swap_last(g_vh)
    k = np.shape(s)[-1]
    eye = np.eye(k)
    squares = np.expand_dims(s * s, -2) - np.expand_dims(s * s, -1)
    f = np.where(eye > 0, 0.0, 1.0 / np.where(eye > 0, 1.0, squares))
    ut_gu, vt_gv = swap_last(u) @ g_u, swap_last(v) @ g_v
    inner = (f * (ut_gu - swap_last(ut_gu))) * np.expand_dims(s, -2) \
        + eye * np.expand_dims(g_s, -1) \
        + np.expand_dims(s, -1) * (f * (vt_gv - swap_last(vt_gv)))
    result = u @ inner @ vh
    rows, cols = np.shape(a)[-2:]
    if rows > cols:
        result = result + (np.eye(rows) - u @ swap_last(u)) @ (g_u / np.expand_dims(s, -2)) @ vh
    elif cols > rows:
        result = result + u @ swap_last(g_v / np.expand_dims(s, -2)) @ (np.eye(cols) - v @ vh)
    return result


def svd_jvp(tangent, ans, a, full_matrices, compute_uv):
    """ds = diag(U^T dA V); dU, dV from the off-diagonal of U^T dA V and, for
    a matrix that is not square, its part outside U's (V's) span."""
    if not compute_uv:
        u, _, vh = np.linalg.svd(a, full_matrices=False)
        return np.sum(u * (tangent @ swap_last(vh)), axis=-2)
    _svd_supported(a, full_matrices)
    u, s, vh = ans
    v = swap_last(vh)
    k = np.shape(s)[-1]
    eye = np.eye(k)
    d_s_matrix = swap_last(u) @ tangent @ v
    ds = np.diagonal(d_s_matrix, axis1=-2, axis2=-1).copy()
    squares = np.expand_dims(s * s, -2) - np.expand_dims(s * s, -1)
    f = np.where(eye > 0, 0.0, 1.0 / np.where(eye > 0, 1.0, squares))
    row = np.expand_dims(s, -2)
    dss, sds = d_s_matrix * row, swap_last(row) * d_s_matrix
    du = u @ (f * (dss + swap_last(dss)))
    dv = v @ (f * (sds + swap_last(sds)))
    rows, cols = np.shape(a)[-2:]
    if rows > cols:
        dav = tangent @ v
        du = du + (dav - u @ (swap_last(u) @ dav)) / row
    elif cols > rows:
        dahu = swap_last(tangent) @ u
        dv = dv + (dahu - v @ (vh @ dahu)) / row
    return du, ds, swap_last(dv)


# --- scipy.linalg: factorisations reused by their solves ----------------------------------

def _factor(c, lower):
    """The lower Cholesky factor L held in ``c``'s triangle (A = L L^T)."""
    return np.tril(c) if lower else swap_last(np.triu(c))


def _other_triangle(matrix, lower):
    """The triangle cho_factor leaves as it found it (A's own entries)."""
    return np.triu(matrix, 1) if lower else np.tril(matrix, -1)


class FactorAdjoint(np.ndarray):
    """The adjoint of cho_factor's ``c``: an ordinary array, which also knows
    the part of it that came from an adjoint G_A of the matrix A = L L^T the
    factor stands for (cho_solve's adjoint is tril((G_A + G_A^T) L)) and the
    rest, added to it from elsewhere.  G_A is kept as its factors, G_A = P Q^T
    (``pairs``: (P, Q) with as many columns as the solves' right-hand sides).
    cho_factor's adjoint gives that part back as sym(G_A), with no solve (it is
    the identity there), and solves for the rest only.  Sums keep the parts;
    any other operation, or a change in place (a copy of the value checks),
    makes it an ordinary array again."""

    @classmethod
    def of(cls, value, pairs, rest):
        """``value`` (a new array, not copied) with its parts."""
        adjoint = value.view(cls)
        adjoint.pairs, adjoint.rest, adjoint.value = pairs, rest, value.copy()
        return adjoint

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        def plain(x):
            return x.view(np.ndarray) if isinstance(x, FactorAdjoint) else x
        if "out" in kwargs:
            kwargs["out"] = tuple(plain(x) for x in kwargs["out"])
        result = getattr(ufunc, method)(*map(plain, inputs), **kwargs)
        if ufunc is not np.add or method != "__call__" or "out" in kwargs or \
                not all(np.shape(x) in ((), np.shape(result)) for x in inputs):
            return result
        known = [x for x in inputs if isinstance(x, FactorAdjoint) and x.unchanged()]
        if len(known) < sum(isinstance(x, FactorAdjoint) for x in inputs):
            return result
        return FactorAdjoint.of(result, [pair for x in known for pair in x.pairs],
                                sum(x.rest if isinstance(x, FactorAdjoint) else x for x in inputs))

    def unchanged(self):
        return getattr(self, "value", None) is not None and \
            np.array_equal(self.view(np.ndarray), self.value)

    def twice_symmetric(self):
        """G_A + G_A^T = [P Q] [Q P]^T, one product."""
        p, q = (np.concatenate(parts, axis=1) for parts in zip(*self.pairs))
        return np.concatenate([p, q], axis=1) @ np.concatenate([q, p], axis=1).T


def cho_factor_vjp(adjoint, ans, a, lower):
    """The adjoint of ``c, lower = cho_factor(A, lower)``: the factor's adjoint
    through the Cholesky adjoint onto the triangle potrf reads, and the other
    triangle of c, which is A's own, as it came.  A symmetric gradient S goes
    onto one triangle as 2 S there with S's own diagonal."""
    c = ans[0]
    g = part(adjoint, 0, c)
    twice = 0.0     # 2 S of the part that came from cho_solve: 2 sym(G_A)
    if isinstance(g, FactorAdjoint) and g.unchanged():
        twice, g = g.twice_symmetric(), g.rest
    if np.ndim(g) == 0:
        return _triangle_of_twice(twice, lower)
    diagonal = np.diagonal(g)
    if np.count_nonzero(g) == np.count_nonzero(diagonal):   # a log determinant's adjoint
        twice_diagonal_part = _diagonal_cholesky_adjoint(2.0 * diagonal, c, lower)  # a new array
        twice_diagonal_part += twice
        return _triangle_of_twice(twice_diagonal_part, lower)
    g_factor = np.tril(g) if lower else swap_last(np.triu(g))
    symmetric = 0.5 * twice + _cholesky_adjoint(g_factor, _factor(c, lower))
    return _onto_triangle(symmetric, "L" if lower else "U") + _other_triangle(g, lower)


def _triangle_of_twice(twice, lower):
    """2 S in the triangle potrf reads, S's diagonal on the diagonal: of twice
    = 2 S, whose other triangle need not hold anything (a new array)."""
    result = np.tril(twice) if lower else np.triu(twice)
    result[np.diag_indices_from(result)] *= 0.5
    return result


def _diagonal_cholesky_adjoint(g_diagonal, c, lower):
    """_cholesky_adjoint of a diagonal adjoint D (a log determinant's) of the
    factor held in c's triangle: phi(L^T D) is diag(d), d = L_ii D_ii / 2, so it
    is L^-T diag(d) L^-1 = M^T M - N^T N with M = sqrt(d+) L^-1, N = sqrt(d-)
    L^-1: one inversion of the factor, and LAPACK's lauum for each sign present
    (both read one triangle, so c goes in as it is, see _fortran_factor).  The
    symmetric result is held in c's triangle only (the lower one if ``lower``)."""
    from scipy.linalg.lapack import dlauum, dtrtri
    held, holds_lower = _fortran_factor(c, lower)
    inverse, info = dtrtri(held, lower=holds_lower)   # L^-1, or U^-1 = L^-T
    if info:
        raise DerivoError("the Cholesky factor is singular (LAPACK's dtrtri: {})".format(info))
    d = 0.5 * np.diagonal(held) * g_diagonal
    signs = [sign for sign in (1.0, -1.0) if np.any(sign * d > 0)]
    result = 0.0
    for sign in signs:
        weights = np.sqrt(np.maximum(sign * d, 0.0))
        # the inverse is scaled in place for the last sign, and lauum works in place
        out = inverse if sign == signs[-1] else None
        scaled = np.multiply(inverse, weights[:, None] if holds_lower else weights, out=out)
        # lauum: M^T M of a lower M, P P^T of an upper P (P = M^T)
        product, info = dlauum(scaled, lower=holds_lower, overwrite_c=1)
        held_product = product if holds_lower == lower else product.T
        signed = held_product if sign > 0 else -held_product
        result = signed if np.ndim(result) == 0 else result + signed
    return np.zeros(np.shape(c)) if np.ndim(result) == 0 else result


def _fortran_factor(c, lower):
    """(c or c.T, whichever is Fortran-ordered, and whether it holds the factor
    in its lower triangle): LAPACK reads that without a copy."""
    if c.flags.f_contiguous:
        return c, lower
    return c.T, not lower


def _cholesky_adjoint(g_factor, factor):
    """cholesky_vjp by LAPACK's triangular routines: L^-T sym(phi(L^T G)) L^-1,
    phi the lower triangle with its diagonal halved, sym(M) = (M + M^T) / 2.
    The congruence is one sygst (half the work of two triangular solves) on
    the matrices reversed in both axes: reversed, L is upper triangular U,
    and sygst makes U^-T M U^-1.  Arrays go to BLAS in Fortran order (a C
    array's transpose), which it reads without a copy."""
    from scipy.linalg.blas import dtrmm
    from scipy.linalg.lapack import dsygst
    # G^T L = G^T (L^T)^T, both Fortran-ordered views; its transpose is L^T G
    inner = np.tril(dtrmm(1.0, factor.T, g_factor.T, side=1, lower=0, trans_a=1).T)
    inner[np.diag_indices_from(inner)] *= 0.5
    symmetric = 0.5 * (inner + inner.T)
    reversed_result, info = dsygst(np.asfortranarray(symmetric[::-1, ::-1]),
                                   np.asfortranarray(factor[::-1, ::-1]), itype=1, lower=0)
    if info:
        raise DerivoError("LAPACK's dsygst failed ({}) in the adjoint of a Cholesky "
                          "factorisation".format(info))
    upper = np.triu(reversed_result)
    return (upper + np.triu(upper, 1).T)[::-1, ::-1]


def cho_factor_jvp(tangent, ans, a, lower):
    c = ans[0]
    d_factor = cholesky_jvp(_symmetric_from(tangent, "L" if lower else "U"), _factor(c, lower))
    held = d_factor if lower else swap_last(d_factor)
    return held + _other_triangle(tangent, lower), 0.0


def cho_solve_vjp_c(adjoint, ans, c_and_lower, b):
    """The adjoint in (c, lower) of ``x = cho_solve((c, lower), b)``, A = L L^T:
    with G_A = -A^-1 g x^T (one solve with the factor), the factor's adjoint is
    tril((G_A + G_A^T) L) (for an upper factor U = L^T, its transpose), kept
    with G_A's factors (see FactorAdjoint).  G_A = P Q^T has as many columns
    as b, so (G_A + G_A^T) L = [P Q] [L^T Q, L^T P]^T: one product with L read
    from c's triangle, and one of the thin matrices."""
    from scipy.linalg.blas import dtrmm
    from scipy.linalg.lapack import dpotrs
    c, lower = c_and_lower
    n = len(c)
    right = np.reshape(ans, (n, -1))
    held, holds_lower = _fortran_factor(c, lower)
    # potrs, not cho_solve: the forward pass checked the factor is finite
    solved, info = dpotrs(held, np.reshape(adjoint, (n, -1)), lower=holds_lower)
    left = -solved
    # (v^T L)^T = L^T v
    times_factor = dtrmm(1.0, held, np.concatenate([right, left], axis=1), lower=holds_lower,
                         trans_a=holds_lower)
    g_factor = np.tril(np.concatenate([left, right], axis=1) @ times_factor.T)
    return [FactorAdjoint.of(g_factor if lower else g_factor.T, [(left, right)], 0.0), 0.0]


def cho_solve_jvp_c(tangent, ans, c_and_lower, b):
    from scipy.linalg import cho_solve
    c, lower = c_and_lower
    factor, d_factor = _factor(c, lower), _factor(part(tangent, 0, c), lower)
    d_a = d_factor @ factor.T + factor @ d_factor.T
    return -cho_solve(c_and_lower, d_a @ ans)


def _lu_parts(lu, piv):
    """(L, U, perm) of ``lu_factor``'s (lu, piv): P A = L U with (P A) = A[perm]."""
    n = np.shape(lu)[-1]
    perm = np.arange(n)
    for i, j in enumerate(piv):
        perm[[i, j]] = perm[[j, i]]
    return np.tril(lu, -1) + np.eye(n), np.triu(lu), perm


def _lu_square(lu):
    if np.ndim(lu) != 2 or np.shape(lu)[0] != np.shape(lu)[1]:
        raise DerivoError("derivo differentiates scipy.linalg.lu_factor of square matrices "
                          "only (got shape {})".format(np.shape(lu)))


def lu_factor_vjp(adjoint, ans, a):
    """The adjoint of ``lu, piv = lu_factor(A)``, P A = L U packed in lu:
    P^T L^-T (tril(L^T G, -1) + triu(G U^T)) U^-T, by triangular solves."""
    from scipy.linalg import solve_triangular
    lu, piv = ans
    _lu_square(lu)
    lower, upper, perm = _lu_parts(lu, piv)
    g = part(adjoint, 0, lu)
    inner = np.tril(lower.T @ g, -1) + np.triu(g @ upper.T)
    left = solve_triangular(lower, inner, trans=1, lower=True, unit_diagonal=True)
    both = solve_triangular(upper, left.T, lower=False).T
    return both[np.argsort(perm)]


def lu_factor_jvp(tangent, ans, a):
    """d lu = L tril(X, -1) + triu(X) U with X = L^-1 P dA U^-1."""
    from scipy.linalg import solve_triangular
    lu, piv = ans
    _lu_square(lu)
    lower, upper, perm = _lu_parts(lu, piv)
    left = solve_triangular(lower, np.asarray(tangent)[perm], lower=True, unit_diagonal=True)
    x = solve_triangular(upper, left.T, trans=1, lower=False).T
    return lower @ np.tril(x, -1) + np.triu(x) @ upper, 0.0


def _lu_transposed(trans):
    if trans in (0, "N"):
        return False
    if trans in (1, "T", 2, "C"):  # real matrices: the conjugate transpose is the transpose
        return True
    raise DerivoError("scipy.linalg.lu_solve has no trans={!r}".format(trans))


def lu_solve_vjp_lu(adjoint, ans, lu_and_piv, b, trans):
    """The adjoint in (lu, piv) of ``x = lu_solve((lu, piv), b, trans)``: with
    G_A = -A^-T g x^T (A^T: -x (A^-1 g)^T) and A = P^T L U,
    tril(P G_A U^T, -1) + triu(L^T P G_A)."""
    from scipy.linalg import lu_solve
    lu, piv = lu_and_piv
    lower, upper, perm = _lu_parts(lu, piv)
    transposed = _lu_transposed(trans)
    g_b = np.reshape(lu_solve(lu_and_piv, adjoint, trans=0 if transposed else 1), (len(lu), -1))
    x = np.reshape(ans, (len(lu), -1))
    g_a = -(x @ g_b.T) if transposed else -(g_b @ x.T)
    moved = g_a[perm]
    return [np.tril(moved @ upper.T, -1) + np.triu(lower.T @ moved), 0]


def lu_solve_vjp_b(adjoint, lu_and_piv, trans):
    from scipy.linalg import lu_solve
    return lu_solve(lu_and_piv, adjoint, trans=0 if _lu_transposed(trans) else 1)


def lu_solve_jvp_lu(tangent, ans, lu_and_piv, b, trans):
    from scipy.linalg import lu_solve
    lu, piv = lu_and_piv
    lower, upper, perm = _lu_parts(lu, piv)
    d_lu = part(tangent, 0, lu)
    d_a = (np.tril(d_lu, -1) @ upper + lower @ np.triu(d_lu))[np.argsort(perm)]
    transposed = _lu_transposed(trans)
    change = (d_a.T if transposed else d_a) @ ans
    return -lu_solve(lu_and_piv, change, trans=1 if transposed else 0)


def scipy_solve_vjp_a(adjoint, ans, a, b, lower, assume_a, transposed):
    """The adjoint in A of ``scipy.linalg.solve(a, b, lower, assume_a=...,
    transposed=...)``: -A^-T g x^T (or its transpose), onto the triangle read
    for a symmetric or triangular A."""
    import scipy.linalg as la
    if np.ndim(a) != 2:
        raise DerivoError("derivo differentiates scipy.linalg.solve of one matrix, not a stack "
                          "of {}; solve them one by one or with np.linalg.solve".format(
                              np.shape(a)[:-2]))
    g_b = la.solve(a, adjoint, lower=lower, assume_a=assume_a, transposed=not transposed)
    g_b, x = np.reshape(g_b, (len(a), -1)), np.reshape(ans, (len(a), -1))
    g_a = -(x @ g_b.T) if transposed else -(g_b @ x.T)
    return _read_part(g_a, lower, assume_a)


def _read_part(gradient, lower, assume_a):
    """``gradient`` for the entries of A scipy.linalg.solve reads with assume_a."""
    if assume_a in (None, "gen", "general"):
        return gradient
    if assume_a in ("sym", "symmetric", "pos", "positive definite"):
        return _onto_triangle(gradient, "L" if lower else "U")
    if assume_a in ("lower triangular", "upper triangular"):
        return np.tril(gradient) if assume_a.startswith("lower") else np.triu(gradient)
    raise DerivoError("derivo differentiates scipy.linalg.solve with assume_a general, "
                      "symmetric, positive definite or triangular, not {!r}".format(assume_a))


def scipy_solve_jvp_a(tangent, ans, a, b, lower, assume_a, transposed):
    import scipy.linalg as la
    change = _effective(tangent, lower, assume_a)
    return -la.solve(a, (change.T if transposed else change) @ ans, lower=lower,
                     assume_a=assume_a, transposed=transposed)


def _effective(tangent, lower, assume_a):
    """The change of the matrix scipy.linalg.solve sees for a change of A."""
    if assume_a in ("sym", "symmetric", "pos", "positive definite"):
        return _symmetric_from(tangent, "L" if lower else "U")
    if assume_a in ("lower triangular", "upper triangular"):
        return np.tril(tangent) if assume_a.startswith("lower") else np.triu(tangent)
    return _read_part(tangent, lower, assume_a)


def scipy_cholesky_vjp(adjoint, ans, a, lower):
    """The adjoint of ``scipy.linalg.cholesky(A, lower)`` (an upper factor by
    default), onto the triangle potrf reads."""
    g_factor = np.tril(adjoint) if lower else swap_last(np.triu(adjoint))
    symmetric = _cholesky_adjoint(g_factor, ans if lower else swap_last(ans))
    return _onto_triangle(symmetric, "L" if lower else "U")


def scipy_cholesky_jvp(tangent, ans, a, lower):
    factor = ans if lower else swap_last(ans)
    change = cholesky_jvp(_symmetric_from(tangent, "L" if lower else "U"), factor)
    return change if lower else swap_last(change)


def block_diag_vjp(adjoint, arrays, index):
    """The adjoint of array ``index`` of ``scipy.linalg.block_diag(*arrays)``:
    its block of the adjoint (each array a block as np.atleast_2d makes it)."""
    shapes = [np.shape(np.atleast_2d(a)) for a in arrays]
    row = sum(s[0] for s in shapes[:index])
    col = sum(s[1] for s in shapes[:index])
    rows, cols = shapes[index]
    return np.reshape(adjoint[row:row + rows, col:col + cols], np.shape(arrays[index]))


def block_diag_jvp(tangent, arrays, index):
    from scipy.linalg import block_diag
    return block_diag(*[tangent if i == index else np.zeros(np.shape(a))
                        for i, a in enumerate(arrays)])


# --- np.fft: linear maps, so the adjoint of a transform is its transpose -----------------

def _fitted(array, lengths, axes):
    """``array`` cut, or padded with zeros, along ``axes`` to ``lengths``."""
    array = np.asarray(array)
    for length, axis in zip(lengths, axes):
        have = array.shape[axis]
        if have > length:
            array = np.take(array, np.arange(length), axis=axis)
        elif have < length:
            widths = [(0, 0)] * array.ndim
            widths[axis] = (0, length - have)
            array = np.pad(array, widths)
    return array


def fft_axes(a, s, axes):
    """The axes np.fft.fftn(a, s, axes) transforms, non-negative."""
    ndim = np.ndim(a)
    if axes is None:
        axes = range(ndim) if s is None else range(ndim - len(s), ndim)
    return [axis % ndim for axis in axes]


def fftn_vjp(adjoint, a, axes, norm, inverse):
    """The adjoint of ``np.fft.fftn(a, s, axes, norm)`` (``inverse``: ifftn):
    the same transform of the adjoint (the DFT matrix is symmetric), cut or
    padded back to a's lengths."""
    transform = np.fft.ifftn if inverse else np.fft.fftn
    out = transform(adjoint, axes=axes, norm=norm)
    return real_like(_fitted(out, [np.shape(a)[i] for i in axes], axes), a)


def rfftn_vjp(adjoint, a, s, axes, norm):
    """The adjoint of ``np.fft.rfftn(a, s, axes, norm)``: rfftn is fftn with the
    last axis cut to n // 2 + 1, so its transpose is fftn of the adjoint padded
    back to n there, made real."""
    axes = fft_axes(a, s, axes)
    lengths = list(s) if s is not None else [np.shape(a)[i] for i in axes]
    out = np.real(np.fft.fftn(adjoint, s=lengths, axes=axes, norm=norm))
    return _fitted(out, [np.shape(a)[i] for i in axes], axes)


def rfftn_transpose(g, adjoint, a, s, axes, norm):
    """The transpose of ``rfftn_vjp(adjoint, a, s, axes, norm)`` in its adjoint:
    fftn of g fitted to the lengths s (np.fft pads or cuts as the transpose of
    fitting to a's lengths does), cut to the half spectrum the adjoint holds."""
    axes = fft_axes(a, s, axes)
    lengths = list(s) if s is not None else [np.shape(a)[i] for i in axes]
    out = np.fft.fftn(g, s=lengths, axes=axes, norm=norm)
    return real_like(out[tuple(map(slice, np.shape(adjoint)))], adjoint)


#: the norm under which rfft scales as irfft does under the key
_DUAL_NORM = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def irfftn_vjp(adjoint, a, s, axes, norm):
    """The adjoint of ``np.fft.irfftn(a, s, axes, norm)`` (real results of a
    half spectrum): along the last axis conj(w * rfft(g)), w 1 at frequency
    0 (and n / 2) and 2 elsewhere, as those stand for two of the full
    spectrum; along the others ifftn, the transpose of itself."""
    axes = fft_axes(a, s, axes)
    last = axes[-1]
    n = s[-1] if s is not None else 2 * (np.shape(a)[last] - 1)
    spectrum = np.fft.rfft(adjoint, n=n, axis=last, norm=_DUAL_NORM[norm])
    weights = np.full(spectrum.shape[last], 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    shape = [1] * spectrum.ndim
    shape[last] = -1
    out = np.conj(spectrum * np.reshape(weights, shape))
    if len(axes) > 1:
        out = np.fft.ifftn(out, axes=axes[:-1], norm=norm)
    return real_like(_fitted(out, [np.shape(a)[i] for i in axes], axes), a)
