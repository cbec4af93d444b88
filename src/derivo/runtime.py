"""The few helpers generated code calls; saved modules import them from here.

Each is small, has no state, and exists because the operation has no one-line
NumPy spelling.
"""

import math
import operator
from typing import Any

import numpy as np

from .errors import DerivoError
from .trees import key_of, zeros_like_parts

#: values whose numbers are at hand: an array that is not lazy, a number
_CONCRETE = (np.ndarray, np.generic, float, int)
#: arrays of at most this many elements are copied rather than viewed when spread
_SMALL = 1 << 16


def unknown_item(message, lineno, col):
    """The error generated code raises at the user's ``lineno:col`` where a loop's
    item is an object the branch over its list's items was not made for (see
    derivo.dispatch): its file is the one whose generated code runs."""
    return DerivoError(message, None, lineno, col)


def unbroadcast(adjoint, like):
    """Sum ``adjoint`` down to the shape of ``like``, undoing NumPy broadcasting;
    of a real ``like`` met with a complex value, the real part (the adjoint of a
    real value is real, as in JAX)."""
    # Attributes, not np.shape: on small arrays a function call costs as much as
    # the arithmetic, and this runs once per broadcasting operation.
    try:
        shape = like.shape
        if adjoint.dtype.kind == "c" and like.dtype.kind != "c":
            adjoint = adjoint.real
        if adjoint.shape == shape:
            return adjoint
    except AttributeError:
        shape = np.shape(like)
        if not is_real(adjoint) and is_real(like):
            adjoint = np.real(adjoint)
        if np.shape(adjoint) == shape:
            return adjoint
        if np.ndim(adjoint) < len(shape):
            return adjoint  # a number stands for itself at each place (0.0: unreached)
        adjoint = adjoint if hasattr(adjoint, "ndim") else np.asarray(adjoint)
    adjoint = _summed_to(adjoint, shape)
    if shape or not isinstance(adjoint, _CONCRETE):
        return adjoint
    return complex(adjoint) if adjoint.dtype.kind == "c" else float(adjoint)


def _summed_to(adjoint, shape):
    """``adjoint``, an array broadcast from ``shape``, summed down to it."""
    extra = adjoint.ndim - len(shape)
    if extra == 1:  # a bias added to a batch: the common case
        adjoint = adjoint.sum(axis=0)
    elif extra > 0:
        adjoint = adjoint.sum(axis=tuple(range(extra)))
    if 1 in shape:
        axes = tuple(i for i, n in enumerate(shape) if n == 1 and adjoint.shape[i] != 1)
        if axes:
            adjoint = adjoint.sum(axis=axes, keepdims=True)
    return adjoint


def _shape(value):
    # The attribute, not np.shape: these helpers run once per operation, and on
    # small arrays a function call costs as much as the arithmetic.
    try:
        return value.shape
    except AttributeError:
        return np.shape(value)


def _ndim(value):
    try:
        return value.ndim
    except AttributeError:
        return np.ndim(value)


def one_like(value):
    """Ones of ``value``'s shape (1.0 for a number): the tangent of an elementwise
    derivative."""
    return np.ones(value.shape) if isinstance(value, np.ndarray) else 1.0


def zero_gradient(like):
    """The gradient of an argument nothing depends on: zero of its shape (a list
    of them for a list or a tuple, as the adjoints of their items are kept)."""
    if isinstance(like, np.ndarray):
        return np.zeros(np.shape(like))
    if type(like) is list or type(like) is tuple:
        return [zero_gradient(item) for item in like]
    return dict.fromkeys(like, 0.0) if type(like) is dict else 0.0


def scalar_seed(result):
    """The seed of ``grad``, after checking the result is a scalar: 1.0 for a
    number, ones of its shape for an array of one element (as autograd takes
    ``np.atleast_2d(x)``-shaped losses: the derivative of its one element)."""
    if isinstance(result, (bool, np.bool_)) or \
            not isinstance(result, (int, float, complex, np.number, np.ndarray)):
        raise DerivoError("grad needs a function returning a number, got a {}; return the "
                          "loss alone, or pass has_aux=True and return (loss, aux)".format(
                              type(result).__name__))
    if _ndim(result) != 0 and np.size(result) == 1:
        return np.ones(np.shape(result))
    if _ndim(result) != 0:
        raise DerivoError("grad needs a function returning a scalar, got an array of shape "
                          "{}; return np.sum(...) of it for the gradient of its sum, or use "
                          "derivo.vjp with a cotangent of that shape".format(
                              np.shape(result)))
    return 1.0


def expand(adjoint, like, axis, keepdims):
    """Spread the adjoint of a reduction over ``axis`` back to ``like``'s shape."""
    shape = _shape(like)
    if axis is None and not keepdims and isinstance(adjoint, _CONCRETE):
        # empty + fill: on small arrays a third of np.full, a fifth of broadcast_to
        spread = np.empty(shape)
        spread.fill(adjoint)
        return spread
    if axis is not None and not keepdims:
        # the reduced axes back as length 1: a reshape, a fraction of np.expand_dims
        kept = list(shape)
        for a in (axis,) if type(axis) is int else axis:
            kept[a] = 1
        adjoint = np.reshape(adjoint, kept)
    if type(adjoint) is np.ndarray and math.prod(shape) <= _SMALL:
        # a copy: on a small array a broadcast view costs more to make, and
        # makes the arithmetic that reads it slower, than copying the numbers
        spread = np.empty(shape, dtype=adjoint.dtype)
        spread[...] = adjoint
        return spread
    return np.broadcast_to(adjoint, shape)


def reduced_share(like, axis):
    """Each element's share of a mean of ``like`` over ``axis``: one over the
    count of elements it is taken over (1 over none: an empty array's adjoint
    is empty, whatever the factor).  Read from the shape, so a derivative need
    not keep the mean itself."""
    shape = _shape(like)
    if axis is None:
        return 1 / max(math.prod(shape), 1)
    return 1 / max(math.prod(shape[a] for a in ((axis,) if type(axis) is int else axis)), 1)


def extremum_vjp(adjoint, ans, like, axis, keepdims):
    """Adjoint of max/min: shared equally among the elements that attain it."""
    hits = as_array(like) == expand(ans, like, axis, keepdims)
    counts = np.sum(hits, axis=axis, keepdims=True)
    return expand(adjoint, like, axis, keepdims) * hits / counts


def _arrays(a, b):
    """``a`` and ``b``, a list or a tuple made an array: NumPy's products take
    them as arrays, and their adjoints read ``.T`` and multiply by them.  Its
    callers test for two arrays first, so that the common case makes no call:
    an RNN's gradient calls them a few times per step."""
    return as_array(a), as_array(b)


def as_array(value):
    """``value``, a list or a tuple made an array; any array as it is (a Dask
    array stays lazy: ``np.asarray`` would compute it)."""
    return np.asarray(value) if type(value) in (list, tuple) else value


def transposed(value):
    """``value.T`` of an array of any library, or of a number (``np.transpose``,
    which does the same, costs five times as much on a small array)."""
    try:
        return value.T
    except AttributeError:
        return np.asarray(value).T


def size(value):
    """``np.size(value)``, read from the attribute of an array of any library (a
    Dask array's is known without computing it)."""
    try:
        return value.size
    except AttributeError:
        return np.size(value)


def is_real(value):
    """``np.isrealobj(value)``, from the dtype of an array of any library."""
    return kind_of(value) != "c"


def kind_of(value):
    """The kind of ``value``'s dtype ("f", "c", "i"...), read from the attribute of an
    array of any library."""
    dtype = getattr(value, "dtype", None)
    return (dtype if dtype is not None else np.asarray(value).dtype).kind


def _product_adjoint(adjoint, a, b, a_ndim, b_ndim):
    """``adjoint`` summed down to the shape of ``a @ b`` where it was broadcast
    to more: the adjoint of a product that is an operand of a broadcast (``W @ h
    + u``) reaches its VJP as the broadcast left it (see ``derivo.plans``)."""
    if a_ndim == 2 == b_ndim:
        shape = (a.shape[0], b.shape[1])
    elif b_ndim == 1:
        shape = a.shape[:-1]
    elif a_ndim == 1:
        shape = b.shape[:-2] + b.shape[-1:]
    else:
        shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    given = _shape(adjoint)
    if given == shape or len(given) < len(shape):  # (a 0.0 standing for zeros)
        return adjoint
    return _summed_to(adjoint, shape)


def matmul_vjp_left(adjoint, a, b):
    """Adjoint of ``a`` in ``a @ b`` (vectors, matrices, stacks of matrices),
    from an adjoint of the product's shape or one broadcast from it."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray:
        a, b = _arrays(a, b)
    a_ndim, b_ndim = _ndim(a), _ndim(b)
    # no reduction where the adjoint has the product's shape (told without a call
    # for vectors and matrices)
    if a_ndim > 2 or b_ndim > 2 or \
            getattr(adjoint, "shape", ()) != a.shape[:a_ndim - 1] + b.shape[1:]:
        adjoint = _product_adjoint(adjoint, a, b, a_ndim, b_ndim)
    if a_ndim == 2 == b_ndim:
        return adjoint @ b.T
    if b_ndim == 1:
        return adjoint * b if a_ndim == 1 else np.multiply.outer(adjoint, b)
    if a_ndim == 1:
        if b_ndim == 2:  # h @ W
            return b @ adjoint
        return unbroadcast((b @ adjoint[..., None])[..., 0], a)
    return unbroadcast(adjoint @ np.swapaxes(b, -1, -2), a)


def matmul_vjp_right(adjoint, a, b):
    """Adjoint of ``b`` in ``a @ b``, from an adjoint as :func:`matmul_vjp_left` takes."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray:
        a, b = _arrays(a, b)
    a_ndim, b_ndim = _ndim(a), _ndim(b)
    if a_ndim > 2 or b_ndim > 2 or \
            getattr(adjoint, "shape", ()) != a.shape[:a_ndim - 1] + b.shape[1:]:
        adjoint = _product_adjoint(adjoint, a, b, a_ndim, b_ndim)
    if a_ndim == 2 == b_ndim:
        return a.T @ adjoint
    if a_ndim == 1:
        if b_ndim <= 2:
            return adjoint * a if b_ndim == 1 else np.multiply.outer(a, adjoint)
        return unbroadcast(a[:, None] * adjoint[..., None, :], b)
    if b_ndim == 1:
        if a_ndim == 2:  # W @ h
            return adjoint @ a
        return unbroadcast((np.swapaxes(a, -1, -2) @ adjoint[..., None])[..., 0], b)
    return unbroadcast(np.swapaxes(a, -1, -2) @ adjoint, b)


def dot_vjp_left(adjoint, a, b):
    """Adjoint of ``a`` in ``np.dot(a, b)`` (scalars, vectors and matrices)."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray:
        a, b = _arrays(a, b)
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(adjoint * b, a)
    _dot_supported(a, b)
    return matmul_vjp_left(adjoint, a, b)


def dot_vjp_right(adjoint, a, b):
    """Adjoint of ``b`` in ``np.dot(a, b)``."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray:
        a, b = _arrays(a, b)
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(adjoint * a, b)
    _dot_supported(a, b)
    return matmul_vjp_right(adjoint, a, b)


def _dot_supported(a, b):
    # Beyond two dimensions np.dot pairs every row of a with every stack of b,
    # unlike matmul: refuse rather than return matmul's adjoint.
    if np.ndim(a) >= 2 and np.ndim(b) > 2:
        raise DerivoError("derivo differentiates np.dot of vectors and matrices only, got "
                          "shapes {} and {}; use np.matmul or np.einsum".format(
                              np.shape(a), np.shape(b)))


def inner_vjp_left(adjoint, a, b):
    """Adjoint of ``a`` in ``np.inner(a, b)``: sums over the last axes."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray:
        a, b = _arrays(a, b)
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(adjoint * b, a)
    a_rest, b_rest = np.ndim(a) - 1, np.ndim(b) - 1
    return np.tensordot(adjoint, b, axes=(list(range(a_rest, a_rest + b_rest)),
                                          list(range(b_rest))))


def inner_vjp_right(adjoint, a, b):
    """Adjoint of ``b`` in ``np.inner(a, b)``."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray:
        a, b = _arrays(a, b)
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(adjoint * a, b)
    a_rest = np.ndim(a) - 1
    summed = np.tensordot(a, adjoint, axes=(list(range(a_rest)), list(range(a_rest))))
    return np.moveaxis(summed, 0, -1)


def holds_no_zero(a):
    """Whether the array ``a`` is known to hold no zero (a lazy array's values
    are not tested: not known)."""
    return isinstance(a, _CONCRETE) and not np.any(np.equal(a, 0))


def prod_vjp(adjoint, ans, like, axis, keepdims):
    """Adjoint of ``np.prod``: the product of the other elements, computed
    without dividing (a zero element must not turn the gradient into nan)."""
    a = as_array(like)
    if holds_no_zero(a):
        return expand(adjoint * ans, a, axis, keepdims) / a
    flat, back = _lanes(a, axis)
    ones = np.ones(flat.shape[:-1] + (1,))
    before = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return expand(adjoint, a, axis, keepdims) * back(before * after)


def others_product_jvp(tangent, like, axis):
    """The tangent, along ``tangent`` of ``like``, of the product of the other
    elements of each lane ``np.prod(like, axis)`` reduces (what prod_vjp
    multiplies the adjoint by): exact where ``like`` holds zeros."""
    a = as_array(like)
    lanes, back = _lanes(a, axis)
    t, _ = _lanes(np.broadcast_to(tangent, np.shape(a)), axis)
    zero = lanes == 0
    count = np.sum(zero, axis=-1, keepdims=True)
    nonzero = np.where(zero, 1.0, lanes)
    rest = np.prod(nonzero, axis=-1, keepdims=True)  # the product of the nonzero elements
    ratios = np.where(zero, 0.0, t / nonzero)  # t_j / a_j at the nonzero a_j
    ratio_sum = np.sum(ratios, axis=-1, keepdims=True)
    at_zeros = np.sum(np.where(zero, t, 0.0), axis=-1, keepdims=True)  # t_j at the zero a_j
    # d prod_{j != i} a_j = sum over j != i of t_j prod_{k != i, j} a_k.  At a nonzero
    # a_i that is (rest / a_i) (ratio_sum - t_i / a_i) with no zero in the lane, (rest / a_i)
    # t_p with one zero a_p, and 0 with more.  At a zero a_i: rest ratio_sum when it is the
    # only zero, rest t_q when a_q is the other one, and 0 with more.
    off_zeros = rest / nonzero * np.where(count == 0, ratio_sum - ratios,
                                          np.where(count == 1, at_zeros, 0.0))
    on_zeros = rest * np.where(count == 1, ratio_sum, np.where(count == 2, at_zeros - t, 0.0))
    return back(np.where(zero, on_zeros, off_zeros))


def _lanes(a, axis):
    """``a`` with the axes a reduction over ``axis`` reduces moved last and joined
    into one, and the function putting an array of that shape back in a's."""
    ndim = np.ndim(a)
    axes = tuple(range(ndim)) if axis is None else (
        (axis,) if np.ndim(axis) == 0 else tuple(axis))
    axes = tuple(x % ndim for x in axes)
    kept = [i for i in range(ndim) if i not in axes]
    moved = np.transpose(a, kept + list(axes))
    order = tuple(np.argsort(kept + list(axes)))
    return moved.reshape(moved.shape[:len(kept)] + (-1,)), \
        lambda lanes: np.transpose(lanes.reshape(moved.shape), order)


def transpose_vjp(adjoint, axes):
    """Adjoint of ``x.transpose(*axes)`` or ``np.transpose(x, axes)``."""
    if len(axes) == 1 and np.ndim(axes[0]) == 1:
        axes = tuple(axes[0])
    if not axes or axes == (None,):
        return np.transpose(adjoint)
    return np.transpose(adjoint, np.argsort(axes))


def swap_last(matrix):
    """The transpose of a matrix, or of each matrix of a stack."""
    return np.swapaxes(matrix, -1, -2)


def copysign_one(x):
    """The sign of ``x`` as abs() sees it (zero counts as positive), for a
    float or an array."""
    return math.copysign(1.0, x) if type(x) is float else np.copysign(1.0, x)


def log(x):
    """The natural logarithm of a float or an array: NaN below 0 and -inf at 0, as
    NumPy gives, where math.log raises."""
    if type(x) is float:
        return math.log(x) if x > 0 else -math.inf if x == 0 else math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(x)


def log_times(ans, x):
    """``ans * log(x)``, the partial of ``ans = x ** y`` in y, with 0 where x is 0
    (as JAX gives): the limit there for y > 0, where log(0) would raise or give
    -inf times 0, and also for y = 0, where 0 ** y is 1; 0 where ``ans``
    underflowed to 0; NaN where x < 0, as NumPy gives."""
    if type(ans) is float or type(ans) is int:
        if x == 0 or ans == 0:
            return 0.0
        return ans * math.log(x) if x > 0 else math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.equal(x, 0) | np.equal(ans, 0), 0.0, ans * np.log(x))


def power_exponent_jvp(t, ans, x):
    """``t * ans * log(x)``, the share of ``ans = x ** y``'s tangent that y's tangent
    ``t`` makes, with 0 where t is 0: a y constant there (a branch made it one)
    adds nothing, also where log(x) is NaN (x < 0)."""
    if np.ndim(t) == 0 and t == 0:
        return 0.0 if np.ndim(ans) == 0 else np.zeros(np.shape(ans))
    with np.errstate(invalid="ignore"):
        share = t * log_times(ans, x)
    return np.where(np.equal(t, 0), 0.0, share) if np.ndim(t) else share


def shaped_like(adjoint, like):
    """A gradient in the shape of its argument (a loop that never ran leaves 0.0)."""
    try:
        if _shape(adjoint) == _shape(like):
            return adjoint
    except ValueError:  # a ragged list: of arrays, or of arrays and zeros
        if type(adjoint) is np.ndarray and adjoint.dtype == object:
            adjoint = list(adjoint)  # the tangent of its adjoints (see addable)
        elif not isinstance(adjoint, (list, tuple)):
            adjoint = [adjoint] * len(like)
        if len(adjoint) != len(like):
            raise
        return [shaped_like(a, item) for a, item in zip(adjoint, like)]
    return np.broadcast_to(adjoint, _shape(like)).copy()


def zero_as(adjoint, like):
    """``adjoint``, or zeros shaped like the array ``like`` where it is the 0.0
    standing for a zero adjoint."""
    if type(like) is np.ndarray and not isinstance(adjoint, (np.ndarray, list)) and \
            adjoint == 0:
        return np.zeros(like.shape)
    return adjoint


#: The helpers that read their second argument only for its shape (see
#: optimize._shapes_from_sources).
SHAPE_READERS = (unbroadcast, expand, shaped_like, zero_as)


def zeros_for(like):
    """The zero adjoint of the container ``like`` that its items' adjoints are
    added into: a list of zeros when like is a list (or a tuple of values of
    other shapes), a dict of zeros for a dict, else a float array of like's
    shape."""
    if type(like) is dict:
        return dict.fromkeys(like, 0.0)
    if isinstance(like, list) or isinstance(like, tuple) and \
            not all(np.isscalar(item) for item in like):
        return [0.0] * len(like)
    return np.zeros(np.shape(like))


def _unreached(adjoint):
    """Whether ``adjoint`` is the 0.0 that stands for a container's adjoint before
    any contribution reached it (a branch not taken, a loop that never ran)."""
    return not isinstance(adjoint, (list, tuple, np.ndarray)) and adjoint == 0


def getitem_vjp(adjoint, like, index):
    """Adjoint of ``x[index]``: the adjoint scattered into zeros_for(x)."""
    out = zeros_for(like)
    if type(out) is dict:
        out[index] = adjoint
        return out
    if isinstance(out, list):
        positions = range(len(like))[index]
        if isinstance(positions, int):
            out[positions] = adjoint
        elif not _unreached(adjoint):  # 0.0: a loop over the slice never ran
            for position, value in zip(positions, adjoint):
                out[position] = value
        return out
    np.add.at(out, index, adjoint)
    return out


def field_vjp(adjoint, like, name):
    """Adjoint of the field read ``like.name`` (of a dataclass, a NamedTuple, a
    registered class: see derivo.trees): a NamedTuple's is its item's; another's,
    the adjoint under ``name`` in a dict of zeros for its fields."""
    key = key_of(like, name)
    if type(key) is int:
        return getitem_vjp(adjoint, like, key)
    out = zeros_like_parts(like)
    if type(out) is not dict or key not in out:
        raise DerivoError(
            "cannot differentiate '.{}' of a {}: derivo has no derivative rule for it, and it "
            "is not a field of a dataclass, a NamedTuple or a registered container (register "
            "one with derivo.register_container, or a rule with derivo.defvjp)".format(
                name, type(like).__name__))
    out[key] = adjoint
    return out


def add_field(total, adjoint, like, name):
    """``add_adjoints(total, field_vjp(adjoint, like, name))``: a new adjoint,
    ``total`` left as it is (see add_at)."""
    key = key_of(like, name)
    if type(key) is int:
        return add_at(total, adjoint, like, key)
    return add_adjoints(total, field_vjp(adjoint, like, name))


def add_field_in_place(total, adjoint, like, name):
    """add_field, added into ``total`` itself where it is a dict: for an
    accumulator the generated code owns (see add_at_in_place)."""
    key = key_of(like, name)
    if type(key) is int:
        return add_at_in_place(total, adjoint, like, key)
    if type(total) is dict:
        total[key] = add_adjoints(total[key], adjoint)
        return total
    return add_field(total, adjoint, like, name)


def first_equal_vjp(adjoint, result, items):
    """Adjoint of ``max(items)`` or ``min(items)`` of one list: all of it goes to
    the first item equal to the result, the one Python's max and min return."""
    out = zeros_for(items)
    out[list(items).index(result)] = adjoint
    return out


def _listed(items):
    """``items`` as a sequence read by position: a dict's view (``d.items()``) or
    another iterable sorted was given, listed."""
    return items if isinstance(items, (list, tuple, np.ndarray)) else list(items)


def _sorting_order(items):
    """The positions of ``items`` in the order ``sorted(items)`` lists them (both stable)."""
    items = _listed(items)
    return sorted(range(len(items)), key=items.__getitem__)


def sort_like(tangent, items):
    """The tangent of ``sorted(items)``: the items' tangents in the order sorted
    puts the items."""
    if _unreached(tangent):
        return tangent
    return [tangent[position] for position in _sorting_order(items)]


def unsort(adjoint, items):
    """Adjoint of ``sorted(items)``: each item's adjoint back where the item was."""
    if _unreached(adjoint):
        return adjoint
    out = zeros_for(_listed(items))
    for position, value in zip(_sorting_order(items), adjoint):
        out[position] = value
    return out


def copy_vjp(adjoint, items):
    """Adjoint of ``list(items)`` or ``tuple(items)``: the copy's adjoint, in a
    list of its own (in an array, for an array)."""
    if _unreached(adjoint):
        return adjoint
    if isinstance(items, np.ndarray):
        # item by item: the copy's adjoint may hold rows no adjoint reached (0.0)
        out = np.zeros(items.shape)
        for position, value in enumerate(adjoint):
            out[position] += value
        return out
    return list(adjoint)


def sum_vjp(adjoint, items):
    """Adjoint of builtin ``sum(items)``: every item's is the sum's, in a list for
    a list (or a tuple), in an array of its shape for an array, whose items are
    its rows."""
    if type(items) is np.ndarray:
        out = np.empty(items.shape)
        out[...] = adjoint
        return out
    return [adjoint] * len(items)


def split_like(adjoint, arrays, axis):
    """Adjoint of ``np.concatenate(arrays, axis)``: one piece per array (with
    axis None, of the arrays flattened, each piece in its array's shape)."""
    if axis is None:
        sizes = [np.size(a) for a in arrays]
        pieces = np.split(adjoint, np.cumsum(sizes)[:-1])
        return [np.reshape(p, np.shape(a)) for p, a in zip(pieces, arrays)]
    sizes = [np.shape(a)[axis] for a in arrays]
    return np.split(adjoint, np.cumsum(sizes)[:-1], axis)


def unstack(adjoint, arrays, axis):
    """Adjoint of ``np.stack(arrays, axis)``."""
    return [np.take(adjoint, i, axis) for i in range(len(arrays))]


def split_stacked(adjoint, arrays, at_least, axis):
    """Adjoint of ``np.hstack``/``np.vstack``: pieces shaped like the arrays."""
    widened = [at_least(a) for a in arrays]
    pieces = split_like(adjoint, widened, axis)
    return [np.reshape(p, np.shape(a)) for p, a in zip(pieces, arrays)]


def hstack_vjp(adjoint, arrays):
    axis = 0 if all(np.ndim(a) <= 1 for a in arrays) else 1
    return split_stacked(adjoint, arrays, np.atleast_1d, axis)


def vstack_vjp(adjoint, arrays):
    return split_stacked(adjoint, arrays, np.atleast_2d, 0)


def norm_vjp(adjoint, ans, x, ord, axis, keepdims):
    """Adjoint of the 2-norm (Frobenius for matrices) of ``x``: x / |x|, and 0
    where the norm is 0 (the cone's apex, where 0 is a subgradient and central
    differences agree)."""
    matrix = (np.ndim(x) > 1 and axis is None) or np.ndim(axis) == 1
    if ord not in (None, 2, "fro") or (ord == 2 and matrix) or (ord == "fro" and not matrix):
        raise DerivoError("derivo differentiates np.linalg.norm only for the 2-norm of "
                          "vectors and the Frobenius norm, not ord={!r}".format(ord))
    return expand(adjoint / np.where(ans == 0, np.inf, ans), x, axis, keepdims) * x


def einsum_vjp(adjoint, subscripts, operands, index):
    """Adjoint of operand ``index`` of ``np.einsum(subscripts, *operands)``."""
    inputs, output = _einsum_parts(subscripts, len(operands))
    target = inputs[index]
    if len(set(target)) != len(target):
        raise DerivoError("derivo does not differentiate einsum with an index repeated "
                          "in one operand ({!r})".format(subscripts))
    others = [s for i, s in enumerate(inputs) if i != index]
    present = "".join(c for c in target if c in output + "".join(others))
    reduced = np.einsum(",".join([output] + others) + "->" + present, adjoint,
                        *[o for i, o in enumerate(operands) if i != index])
    # Indices summed away by this operand alone come back by broadcasting.
    missing = tuple(i for i, c in enumerate(target) if c not in present)
    if missing:
        reduced = np.broadcast_to(np.expand_dims(reduced, missing), np.shape(operands[index]))
    return reduced


def einsum_vjp_operands_vjp(g, adjoint, subscripts, operands, index):
    """The adjoints of ``operands`` in ``einsum_vjp(adjoint, subscripts, operands,
    index)`` given ``g``, its result's: linear in each other operand (the einsum
    with ``g`` in operand index's place), none for the one at index."""
    with_g = operands[:index] + [g] + operands[index + 1:]
    return [np.zeros(np.shape(operand)) if j == index else
            einsum_vjp(adjoint, subscripts, with_g, j) for j, operand in enumerate(operands)]


def einsum_vjp_operands_jvp(t, adjoint, subscripts, operands, index):
    """The tangent of ``einsum_vjp(adjoint, subscripts, operands, index)`` along
    ``t``, the operands' tangents: a sum over the operands other than index."""
    # (the tangent of an operand nothing differentiated reaches is a 0.0)
    t = [np.broadcast_to(tangent, np.shape(operand)) for tangent, operand in zip(t, operands)]
    shares = [einsum_vjp(adjoint, subscripts, operands[:j] + [t[j]] + operands[j + 1:], index)
              for j in range(len(operands)) if j != index]
    return sum(shares[1:], shares[0]) if shares else np.zeros(np.shape(operands[index]))


def _einsum_parts(subscripts, count):
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        inputs, output = subscripts.split("->")
    else:
        inputs = subscripts
        letters = inputs.replace(",", "")
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    inputs = inputs.split(",")
    if len(inputs) != count or "." in subscripts:
        raise DerivoError("derivo differentiates einsum with explicit indices only, "
                          "got {!r}".format(subscripts))
    return inputs, output


def owned(array):
    """A copy of an array, a list or a dict the generated code is about to write
    into; anything else (a number) as it is."""
    if isinstance(array, np.ndarray):
        return array.copy()
    if isinstance(array, list):
        return list(array)
    return type(array)(array) if isinstance(array, dict) else array


class Undo:
    """How ``loops="reversible"`` undoes one update ``x = x + e`` (``-``, ``*``,
    ``/``), exactly or not at all.

    ``x = undo.step(x, e)`` in the forward sweep computes ``x + e`` and checks
    that ``(x + e) - e`` gives back x's bits; where it does not (rounding, an
    underflow, a zero factor) it saves x, with the count of steps so far.
    ``x = undo.back(x, e)`` in the reverse sweep gives x back: what was saved
    at this count, else ``x - e``, which the check proved exact.  Memory grows
    only with the steps that cannot be undone.
    """

    __slots__ = ("operation", "inverse", "steps", "saved")
    OPERATIONS = {"+": (operator.add, operator.sub), "-": (operator.sub, operator.add),
                  "*": (operator.mul, operator.truediv), "/": (operator.truediv, operator.mul)}

    def __init__(self, symbol):
        self.operation, self.inverse = self.OPERATIONS[symbol]
        self.steps = 0
        self.saved = []   # (step count, the value that step overwrote)

    def step(self, old, operand):
        new = self.operation(old, operand)
        self.steps += 1
        # The common case first: nonzero floats, whose equal values have equal bits.
        if type(old) is float and type(new) is float and old:
            try:
                if self.inverse(new, operand) == old:
                    return new
            except ZeroDivisionError:
                pass
        elif _same_bits(self.undone(new, operand), old):
            return new
        self.saved.append((self.steps, old))
        return new

    def back(self, new, operand):
        saved = self.saved
        if saved and saved[-1][0] == self.steps:
            old = saved.pop()[1]
        else:
            old = self.inverse(new, operand)
        self.steps -= 1
        return old

    def undone(self, new, operand):
        """``new - operand`` (the inverse), or None where it fails (``x / 0.0``)."""
        with np.errstate(all="ignore"):
            try:
                return self.inverse(new, operand)
            except (ArithmeticError, TypeError, ValueError):
                return None


def _same_bits(value, original):
    """Whether ``value`` is ``original`` to the bit: the same type, and for an
    array the same shape, dtype and bytes (0.0 is not -0.0; a NaN, with its bits)."""
    kind = type(original)
    if type(value) is not kind:
        return False
    if kind is float:
        return value == original and math.copysign(1.0, value) == math.copysign(1.0, original)
    if kind is int:
        return value == original
    if kind is np.ndarray or isinstance(original, np.generic):
        return np.shape(value) == np.shape(original) and value.dtype == original.dtype and \
            value.tobytes() == original.tobytes()
    return False


def tangent_owned(tangent, primal, arguments, tangents):
    """``tangent``, or a copy of it when it shares memory with the tangent of one
    of ``arguments`` whose primal ``primal`` does not share: a tangent has its
    primal's ownership (a helper's ``z * 1.0`` is a new array, its tangent
    ``dz`` is not).  ``tangents`` are the arguments' tangents, in order."""
    if isinstance(tangent, np.ndarray) and any(
            np.may_share_memory(tangent, argument_tangent) and
            not np.may_share_memory(primal, argument)
            for argument, argument_tangent in zip(arguments, tangents)):
        return tangent.copy()
    return tangent


def unshared(value, source, message):
    """Refuse (``message``) a value that shares memory with an array written
    into later (``row = A[i]``): the reverse sweep cannot follow the write."""
    if isinstance(value, np.ndarray) and isinstance(source, np.ndarray) and \
            np.may_share_memory(value, source):
        raise DerivoError(message)


def replayable(items):
    """What a loop the reverse sweep runs backwards iterates over: ``items``, or a
    Replay of it where it is an iterator, which only one pass can read."""
    return Replay(items) if iter(items) is items else items


class Replay:
    """The items of an iterator, kept as a loop takes them, so that the loop's
    reverse can run over them backwards (``reversed``) or over the first n
    (``[:n]``, a loop that breaks)."""

    def __init__(self, items):
        self.items, self.taken = items, []

    def __iter__(self):
        for item in self.items:
            self.taken.append(item)
            yield item

    def __getitem__(self, part):
        return self.taken[part]

    def __reversed__(self):
        return reversed(self.taken)


def copy_of(part):
    """The values an in-place write is about to overwrite."""
    return np.copy(part)


def part(adjoint, index):
    """``adjoint[index]``, where a zero adjoint may be a plain ``0.0``: the adjoint
    of what an in-place write ``x[index] = v`` wrote.  An index that repeats a
    position is refused: NumPy keeps the last of the values written there."""
    if type(adjoint) is np.ndarray and (type(index) is list or type(index) is np.ndarray or (
            type(index) is tuple and any(type(i) in (list, np.ndarray) for i in index))):
        _refuse_repeats(adjoint, index)
    # np.ndim of a list would copy it into an array: a loop would pay len(list) a trip
    if type(adjoint) is list or isinstance(adjoint, dict) or np.ndim(adjoint):
        return adjoint[index]
    return adjoint


def stored_part(adjoint, array, index):
    """The adjoint of the value ``array[index] = v`` stored: ``part(adjoint,
    index)``, or zeros when ``array`` holds integers or bools, which NumPy turns
    ``v`` into (a truncated value does not change with ``v``)."""
    return stored_tangent(part(adjoint, index), array)


def stored_tangent(tangent, array):
    """The tangent of the value ``array[index] = v`` stores: ``v``'s tangent, or
    zeros when ``array`` holds integers or bools (see :func:`stored_part`)."""
    if type(array) is np.ndarray and array.dtype.kind in "biu":
        return np.zeros(np.shape(tangent)) if np.ndim(tangent) else 0.0
    return tangent


def _refuse_repeats(adjoint, index):
    positions = np.arange(adjoint.size).reshape(adjoint.shape)[index]
    if np.unique(positions).size < np.size(positions):
        raise DerivoError(
            "derivo does not differentiate a write through an index that repeats a position "
            "({!r}): NumPy keeps only the last value written there; write each position "
            "once".format(index))


def zeroed(adjoint, index):
    """``adjoint`` with ``adjoint[index]`` set to zero: the part of an array an
    in-place write replaced no longer affects the result.  In a new array (a
    list of adjoints becomes one: once, in a loop), ``adjoint`` left as it is
    (derivo.accumulate counts on that); a number as it is.  A dict's adjoint
    (the write ``d[key] = ...``) gets 0.0 under the key, in a new dict."""
    if isinstance(adjoint, dict):
        return type(adjoint)({**adjoint, index: 0.0})
    if type(adjoint) is not list and not np.ndim(adjoint):
        return adjoint.copy() if type(adjoint) is np.ndarray else adjoint
    if type(adjoint) is list and len(set(map(np.shape, adjoint))) > 1:
        adjoint = list(adjoint)  # items of different shapes (0.0 and a pair): no array
        positions = range(len(adjoint))[index]
        for position in [positions] if isinstance(positions, int) else positions:
            adjoint[position] = 0.0
        return adjoint
    adjoint = np.array(adjoint, dtype=float)  # a list too: the array its items make up
    adjoint[index] = 0.0
    return adjoint


def zeroed_in_place(adjoint, index):
    """zeroed, set in ``adjoint`` itself where it is a writable float array: for
    an adjoint the generated code owns (see add_at_in_place)."""
    if type(adjoint) is np.ndarray and adjoint.dtype == _FLOAT and adjoint.flags.writeable \
            and adjoint.ndim:
        adjoint[index] = 0.0
        return adjoint
    return zeroed(adjoint, index)


def pop_adjoint(adjoints):
    """``(rest, last)``: the adjoint of the item an ``append`` added is the last
    of the list's adjoints, ``rest`` a new list of the others.  A zero adjoint
    (``0.0``) stays zero."""
    if isinstance(adjoints, (list, np.ndarray)):
        return pop_adjoint_in_place(list(adjoints))
    return adjoints, adjoints


def pop_adjoint_in_place(adjoints):
    """pop_adjoint, popped from ``adjoints`` itself where it is a list: for an
    adjoint the generated code owns (see add_at_in_place)."""
    if isinstance(adjoints, list):
        last = adjoints.pop()
        return adjoints, last
    return pop_adjoint(adjoints)


def add_at(total, adjoint, like, index):
    """``add_adjoints(total, getitem_vjp(adjoint, like, index))``: the adjoint of
    ``like[index]`` added to ``total``, the adjoint of ``like`` so far, in a new
    adjoint; ``total`` is left as it is."""
    return add_adjoints(total, getitem_vjp(adjoint, like, index))


def add_at_in_place(total, adjoint, like, index):
    """add_at, added into ``total`` itself where it is a dict, a list of like's
    length or a writable float array of like's shape; else add_at's new adjoint.

    Generated code calls it only for an accumulator it owns (derivo.accumulate
    decides which, when it writes the code): no other name, container or view
    holds it.  A loop reading ``x[i]`` then adds into one adjoint, where a new
    copy on every trip would make its reverse sweep quadratic in ``len(x)``.
    """
    kind = type(total)
    if kind is dict:
        total[index] = add_adjoints(total[index], adjoint)
        return total
    # a list of like's length: added into item by item
    if kind is list and type(like) in (list, tuple) and len(total) == len(like):
        positions = index if type(index) is int else range(len(like))[index]
        if type(positions) is int:
            element = total[positions]
            total[positions] = element + adjoint if type(element) is float and \
                type(adjoint) is float else add_adjoints(element, adjoint)
        elif not _unreached(adjoint):  # 0.0: a loop over the slice never ran
            for position, value in zip(positions, adjoint):
                total[position] = add_adjoints(total[position], value)
        return total
    if kind is np.ndarray and type(like) is np.ndarray and total.dtype == _FLOAT and \
            total.flags.writeable and total.shape == like.shape:
        if _is_basic(index):  # no position twice: += adds each once
            total[index] += adjoint
        else:
            np.add.at(total, index, adjoint)
        return total
    return add_at(total, adjoint, like, index)


def _is_basic(index):
    kind = type(index)
    if kind is tuple:
        return all(map(_is_basic, index))
    return kind is int or kind is slice or index is None or index is Ellipsis or \
        isinstance(index, np.integer)


_FLOAT = np.dtype(float)


def addable(tangents):
    """Tangents of a container's adjoints that add element by element with ``+``
    (as forward mode adds the tangents of a sum): for a list an array, of objects
    when they are arrays (or arrays and zeros); for a dict a :class:`Keyed`.
    Anything else is returned as it is."""
    if isinstance(tangents, dict):
        return Keyed((key, addable(value)) for key, value in tangents.items())
    if not isinstance(tangents, list):
        return tangents
    tangents = [addable(tangent) for tangent in tangents]  # a list of lists: arrays of arrays
    if any(map(np.ndim, tangents)):
        return np.array([*tangents, None], dtype=object)[:-1]  # never an array of arrays' items
    return np.asarray(tangents)


class Keyed(dict):
    """The tangent of a dict's adjoint, that adds key by key with ``+``: a key
    one side lacks, and the 0.0 that stands for no adjoint, add nothing."""

    def __add__(self, other):
        if not isinstance(other, dict):
            if _unreached(other):
                return self
            return NotImplemented
        return Keyed((key, addable(self.get(key, 0.0)) + addable(other.get(key, 0.0)))
                     for key in {**self, **other})

    __radd__ = __add__


def add_adjoints(first, second):
    """The sum of two adjoints of one value, a new one (derivo.accumulate counts
    on that): lists of adjoints (for a list) add element by element, lists and
    dicts in them too (the adjoint of a list of lists, tuples or dicts), and a
    zero (``0.0``) adds nothing."""
    if isinstance(first, dict) or isinstance(second, dict):
        return _add_keyed(first, second)
    if not isinstance(first, list) and not isinstance(second, list):
        return first + second
    first, second = [list(a) if isinstance(a, np.ndarray) else a for a in (first, second)]
    if not isinstance(first, list):
        return list(second) if np.ndim(first) == 0 and first == 0 else \
            [first + b for b in second]
    if not isinstance(second, list):
        return list(first) if np.ndim(second) == 0 and second == 0 else \
            [a + second for a in first]
    # a list's items may be adjoints of containers: lists, or dicts (a list of dicts)
    return [add_adjoints(a, b) if type(a) in (list, dict) or type(b) in (list, dict) else a + b
            for a, b in zip(first, second)]


def unpacked_vjp(adjoint, entries, later):
    """Adjoint of ``entries`` unpacked into a dict display, ``{**entries, ...}``,
    from the dict's ``adjoint``: each of its keys' adjoint, but those of keys a
    later entry of the display replaces (``later``: the keys and unpacked dicts
    after it), which no longer reach the dict."""
    if _unreached(adjoint):
        return adjoint
    replaced = set()
    for entry in later:
        replaced.update(entry if type(entry) is dict else (entry,))
    return {key: 0.0 if key in replaced else adjoint[key] for key in entries}


def values_vjp(adjoint, entries):
    """Adjoint of ``d.values()``: the adjoint of the i-th value (a list of them,
    or 0.0 for none) under the i-th key."""
    if _unreached(adjoint):
        return adjoint
    return dict(zip(entries, adjoint))


def items_vjp(adjoint, entries):
    """Adjoint of ``d.items()``: the adjoint of the i-th pair's value under the
    i-th key (a pair's adjoint may be 0.0, or 0.0 for its key's part)."""
    if _unreached(adjoint):
        return adjoint
    return {key: 0.0 if _unreached(pair) else pair[1] for key, pair in zip(entries, adjoint)}


def _add_keyed(first, second):
    """The sum of two adjoints of a container read by key (dicts of adjoints,
    or the 0.0 standing for one no adjoint reached yet)."""
    if not isinstance(first, dict):
        return dict(second) if _unreached(first) else {k: first + v for k, v in second.items()}
    if not isinstance(second, dict):
        return dict(first) if _unreached(second) else {k: v + second for k, v in first.items()}
    return {key: add_adjoints(value, second[key]) for key, value in first.items()}


def gradient_by_tangents(tangent, args, kwargs, positions, cotangent=None):
    """``(value, products)``: the value of a function and the products of
    ``cotangent`` with its derivatives in the arguments at ``positions``, from its
    tangent function ``tangent`` (one tangent per position, then the function's
    arguments; it returns the value and the output's tangent).  One tangent pass
    per component of each of those arguments, a float counting as one; each
    product is shaped like its argument.  Without a cotangent, the gradient of
    a result that must be a number."""
    zeros = [np.zeros(np.shape(args[p])) if isinstance(args[p], np.ndarray) else 0.0
             for p in positions]
    value, products = None, []
    for index, position in enumerate(positions):
        argument = args[position]
        if not isinstance(argument, (np.ndarray, float, int)):
            raise DerivoError("cannot differentiate a derivative with respect to a {}: its "
                              "tangent passes take a float or an array; pass np.asarray of "
                              "it".format(type(argument).__name__))
        product = np.zeros(np.shape(argument)) if isinstance(argument, np.ndarray) else 0.0
        for component in range(np.size(argument)):
            direction = 1.0
            if isinstance(argument, np.ndarray):
                direction = np.zeros(argument.shape)
                direction.flat[component] = 1.0
            directions = zeros[:index] + [direction] + zeros[index + 1:]
            value, derivative = tangent(*directions, *args, **kwargs)
            if cotangent is None and np.ndim(derivative):
                raise DerivoError("grad needs a scalar result, and this derivative returns an "
                                  "array of shape {}; use derivo.jacobian, derivo.hessian or "
                                  "derivo.vjp".format(np.shape(derivative)))
            inner = np.sum(derivative if cotangent is None else
                           np.multiply(cotangent, derivative))
            if isinstance(argument, np.ndarray):
                product.flat[component] = inner
            else:
                product = float(inner)
        products.append(product)
    return value, tuple(products)


def stop_gradient(x: Any) -> Any:
    """``x`` itself, through which no derivative flows: differentiated code treats
    the result as a constant (``derivo.stop_gradient``, as in JAX)::

        loss = np.sum(w * derivo.stop_gradient(target(w)))
    """
    return x


def raised(body, exceptions):
    """The exception of one of the classes ``exceptions`` that calling ``body()``
    raises, or None when it returns (see :mod:`derivo.contexts`: a ``try``)."""
    try:
        body()
    except exceptions as exception:
        return exception
    return None
