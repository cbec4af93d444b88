"""Jacobians, Hessians and Hessian-vector products, composed of derivo's own
derivatives: ``jacobian`` runs one JVP per input component or one VJP per
output component, ``hessian`` and ``hvp`` the tangent code of a gradient
(forward over reverse).  Nothing here generates code; it only calls
:mod:`derivo.api`'s derivatives and assembles their results."""

import functools
import inspect
import time
from typing import Any, Sequence

import numpy as np

from . import trees
from .api import (Derivative, Function, Wrt, _code_for, _copied, _derivative, _differentiable,
                  _differentiable_or_container, _in_structure, _is_tree, _refuse_opaque,
                  _short_repr, _spread_wrt, jvp, resolve_wrt, spread_calls, spread_copies)
from .errors import DerivoError
from .transform import LOG, SLOW_SECONDS


def jacobian(func: Function, wrt: Wrt = 0, mode: str = "auto") -> Function:
    """A function computing the Jacobian of ``func`` w.r.t. ``wrt`` at its arguments::

        J = derivo.jacobian(velocity_field)(np.array([0.1, 0.2]))   # shape (2, 2)

    For functions of float scalars or 1-D float arrays that return a scalar, a
    tuple of scalars or a 1-D array.  The Jacobian of one ``wrt`` argument has
    shape ``output shape + input shape`` (a tuple of scalars counts as a 1-D
    output): a float for scalar to scalar, ``(n,)`` for a gradient, ``(m, n)``
    for a vector function of a vector.  A tuple ``wrt`` gives a tuple of them.

    ``mode="forward"`` builds it column by column, one JVP per input
    component (D of them); ``mode="reverse"`` row by row, one VJP per output
    component (M of them).  ``mode="auto"`` follows Table 8.1 of Blondel and
    Roulet, *The Elements of Differentiable Programming* (2024): with dense
    Jacobians both cost about the same per pass, so it
    picks forward mode when M >= D (a tall or square Jacobian, and forward
    mode keeps no tape) and reverse mode when M < D (a wide one, a gradient in
    the extreme).  To know M it evaluates ``func`` once, unless D == 1.  The
    returned function's ``last_mode`` attribute says which mode its last call used.
    """
    if mode not in ("auto", "forward", "reverse"):
        raise DerivoError("jacobian mode must be 'auto', 'forward' or 'reverse', got "
                          "{!r}".format(mode))
    _refuse_opaque(func)
    spread = spread_copies(func)
    if spread is not None:
        return spread_calls(func, lambda copy, renamed: jacobian(
            copy, _spread_wrt(func, wrt, renamed), mode), spread=spread)
    names = resolve_wrt(func, wrt)
    many = isinstance(wrt, (tuple, list))

    @functools.wraps(func)
    def jacobian_fn(*args, **kwargs):
        bound, full = _bound_call(func, names, args, kwargs)
        inputs = [full.arguments[n] for n in names]
        for n, value in zip(names, inputs):
            if not (isinstance(value, float) or (isinstance(value, np.ndarray) and
                                                 value.ndim == 1 and _differentiable(value))):
                raise DerivoError("jacobian differentiates float scalars and 1-D float arrays; "
                                  "argument {!r} is {}{}".format(n, _short_repr(value), (
                                      " (for the Jacobian of a gradient, write "
                                      "derivo.hessian of the scalar function; for one "
                                      "column, derivo.jvp or derivo.hvp)"
                                      if trees.is_container(value) else "")))
        sizes = [np.size(v) for v in inputs]
        chosen = mode
        if chosen == "auto":
            outputs = 1 if sum(sizes) == 1 else _output_size(_primal(func, bound))
            chosen = "forward" if outputs >= sum(sizes) else "reverse"
        jacobian_fn.last_mode = chosen
        if chosen == "forward":
            blocks = _jacobian_forward(func, names, inputs, bound)
        else:
            blocks = _jacobian_reverse(func, names, inputs, bound)
        return tuple(blocks) if many else blocks[0]

    jacobian_fn.mode = mode
    jacobian_fn.last_mode = None
    jacobian_fn.derivo_opaque = True  # see _derivative
    return jacobian_fn


def hessian(func: Function, wrt: Wrt = 0) -> Function:
    """A function computing the Hessian of the scalar ``func`` w.r.t. ``wrt``::

        H = derivo.hessian(f, wrt=(0, 1))(2.0, 5.0)    # ((d2f/dx2, ...), (...))

    Forward over reverse: the tangent code of ``derivo.grad(func, wrt)``, one
    pass per input component.  For a float ``wrt`` the result is a float; for
    an array of shape s an array of shape s + s; for a tuple ``wrt`` a tuple of
    tuples of blocks, ``H[i][j] = d2 f / d wrt_i d wrt_j``.

    For a container argument (a dict, list, tuple, NamedTuple, dataclass, or
    one registered with derivo.register_container, nested in any mix) the
    block is structured as ``jax.hessian`` structures it: the container's
    structure, holding in place of each leaf the container's structure again,
    so that ``H[k1][k2]`` has shape ``p[k1].shape + p[k2].shape``; a leaf that
    is not differentiated (an int, a string, None) gets None.
    """
    _refuse_opaque(func)
    spread = spread_copies(func)
    if spread is not None:
        return spread_calls(func, lambda copy, renamed: hessian(
            copy, _spread_wrt(func, wrt, renamed)), spread=spread)
    names = resolve_wrt(func, wrt)
    many = isinstance(wrt, (tuple, list))
    gradient = _derivative(func, tuple(names) if many else names[0], "grad")

    @functools.wraps(func)
    def hessian_fn(*args, **kwargs):
        bound, full = _bound_call(func, names, args, kwargs)
        inputs = [full.arguments[n] for n in names]
        if isinstance(getattr(gradient, "__self__", None), Derivative):
            gradient.__self__._specialise(args, kwargs)  # (what its parameters call)
        code = _code_for(gradient, full.arguments.values())
        columns = [[] for _ in inputs]   # columns[k]: one tangent per component of input k
        progress = _Progress("Hessian of {}".format(getattr(func, "__qualname__", repr(func))),
                             sum(map(_components, inputs)))
        for k, value in enumerate(inputs):
            tangent = _derivative(code, names[k], "jvp")  # the others' tangents are zeros
            for seed in _bases(value):
                _, dgradient = tangent(seed, *bound.args, **bound.kwargs)
                columns[k].append(dgradient if many else (dgradient,))
                progress.step()
        blocks = [[_hessian_block([c[i] for c in columns[k]], inputs[i], inputs[k])
                   for k in range(len(inputs))] for i in range(len(inputs))]
        if many:
            return tuple(tuple(row) for row in blocks)
        return blocks[0][0]

    hessian_fn.derivo_opaque = True  # see _derivative
    return hessian_fn


def _components(value):
    """How many numbers the differentiated leaves of ``value`` hold."""
    return sum(int(np.size(leaf)) for leaf in trees.leaves(value)
               if trees.is_differentiable_leaf(leaf))


def _bases(value):
    """The unit tangents of ``value``, one per component of its differentiated
    leaves (depth first, each leaf's in C order), in its structure."""
    if not trees.is_container(value):
        if trees.is_differentiable_leaf(value):
            yield from (_basis(value, j) for j in range(np.size(value)))
        return
    found = trees.parts(value)
    keyed = isinstance(found, dict)
    zeros = {key: _zero_seed(item) for key, item in (found.items() if keyed else enumerate(found))}
    for key in zeros:
        for seed in _bases(found[key]):
            grads = dict(zeros)
            grads[key] = seed
            yield trees.rebuilt(value, grads if keyed else list(grads.values()))


def _zero_seed(value):
    """The zero tangent of ``value`` a tangent pass is given: zeros of each
    array's shape, 0.0 for the other leaves (the tangent code multiplies them)."""
    zeros = (np.zeros(np.shape(leaf)) if isinstance(leaf, np.ndarray) and
             trees.is_differentiable_leaf(leaf) else 0.0 for leaf in trees.leaves(value))
    return trees.unflattened(value, zeros)


class _Progress:
    """Says, through the ``derivo`` logger at INFO, how far a long computation of
    ``total`` passes is, once a second after its first second."""

    def __init__(self, label, total):
        self.label, self.total, self.done = label, total, 0
        self.started = self.said = time.perf_counter()

    def step(self):
        self.done += 1
        now = time.perf_counter()
        if now - self.started > SLOW_SECONDS and now - self.said >= 1.0:
            self.said = now
            LOG.info("%s: %d of %d tangent passes, %.1f s", self.label, self.done, self.total,
                     now - self.started)


def _hessian_block(columns, row_input, column_input):
    """d (gradient of row_input) / d column_input, from the gradient's tangents
    along each of column_input's unit tangents (see :func:`_bases`): an array of
    shape row shape + column shape for two leaves, else the row's structure
    holding the column's structure at each leaf (None for a leaf not differentiated)."""
    columns = [trees.in_structure(c, row_input) for c in columns]
    rows = []
    for position, row_leaf in enumerate(trees.leaves(row_input)):
        if not trees.is_differentiable_leaf(row_leaf):
            rows.append(None)
            continue
        parts = [np.asarray(trees.leaves(c)[position], dtype=float) for c in columns]
        block = np.stack(parts, axis=-1) if parts else np.zeros(np.shape(row_leaf) + (0,))
        rows.append(_split_columns(block, np.shape(row_leaf), column_input))
    return trees.unflattened(row_input, iter(rows))


def _split_columns(block, row_shape, column_input):
    """``block`` (row shape + one column per component of column_input) split
    into column_input's leaves, each of shape row shape + its shape."""
    pieces, start = [], 0
    for leaf in trees.leaves(column_input):
        if not trees.is_differentiable_leaf(leaf):
            pieces.append(None)
            continue
        size = int(np.size(leaf))
        pieces.append(_shaped(block[..., start:start + size], row_shape, np.shape(leaf)))
        start += size
    return trees.unflattened(column_input, iter(pieces))


def hvp(func: Function, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple:
    """The Hessian-vector product of the scalar ``func`` at ``primals`` along
    ``tangents``, forward over reverse: one component per primal, in its structure,
    like the cotangents of :func:`vjp` (None for primals that are not floats, float
    arrays, or containers of them: lists, tuples, dicts, NamedTuples, dataclasses)::

        derivo.hvp(f, (2.0, 5.0), (1.0, 0.0))    # (d2f/dx2, d2f/dydx)
    """
    primals, tangents = tuple(primals), tuple(tangents)
    differentiable = tuple(i for i, p in enumerate(primals) if _differentiable_or_container(p))
    if not differentiable:
        return tuple(None for _ in primals)
    gradient = _derivative(func, differentiable, "grad")
    _, product = jvp(gradient, primals, tangents)
    product = iter(product)
    return tuple((trees.in_structure if _is_tree(p) else _in_structure)(next(product), p)
                 if i in differentiable else None for i, p in enumerate(primals))


def _bound_call(func, names, args, kwargs):
    """(the call ``func(*args, **kwargs)`` as given, with the parameters ``names``
    it leaves to their defaults added; the call with every default).  The other
    defaults stay unpassed: a partial's derivative passes its keywords itself."""
    call = inspect.signature(func).bind(*args, **kwargs)
    full = inspect.signature(func).bind(*args, **kwargs)
    full.apply_defaults()
    for name in names:
        call.arguments.setdefault(name, full.arguments[name])
    return call, full


def _primal(func, bound):
    """``func``'s value at the ``bound`` arguments, run on copies of the arrays: a
    function that writes into its argument must not change the caller's array, as
    its derivatives do not."""
    return func(*map(_copied, bound.args), **{k: _copied(v) for k, v in bound.kwargs.items()})


def _output_size(out):
    if _is_tree(out):
        _as_vector(out)  # refuses it
    if isinstance(out, tuple):
        return len(out)
    return int(np.size(out))


def _as_vector(out):
    """A result as a flat array, with the shape its Jacobian's rows take; a
    dict, a dataclass... is refused."""
    if _is_tree(out):
        raise DerivoError(
            "jacobian takes functions returning a number, a tuple of numbers or an array, "
            "got a {}; use derivo.vjp or derivo.jvp, whose cotangents and tangents have "
            "the result's structure".format(type(out).__name__))
    if isinstance(out, tuple):
        return np.array([float(v) for v in out]), (len(out),)
    return np.ravel(np.asarray(out, dtype=float)), np.shape(out)


def _basis(value, j):
    """The j-th unit tangent (in C order) of a value shaped like ``value``."""
    if np.ndim(value) == 0:
        return 1.0
    seed = np.zeros(np.shape(value))
    seed.flat[j] = 1.0
    return seed


def _jacobian_forward(func, names, inputs, bound):
    blocks = []
    for k, value in enumerate(inputs):
        derivative = _derivative(func, names[k], "jvp")  # the others' tangents are zeros
        columns, out_shape = [], ()
        for j in range(np.size(value)):
            _, tangent = derivative(_basis(value, j), *bound.args, **bound.kwargs)
            column, out_shape = _as_vector(tangent)
            columns.append(column)
        blocks.append(_shaped(np.stack(columns, axis=-1), out_shape, np.shape(value)))
    return blocks


def _jacobian_reverse(func, names, inputs, bound):
    derivative = _derivative(func, names, "vjp")
    out = _primal(func, bound)
    flat, out_shape = _as_vector(out)
    rows = [[] for _ in inputs]
    for i in range(flat.size):
        if isinstance(out, tuple):
            seed = tuple(1.0 if j == i else 0.0 for j in range(len(out)))
        elif isinstance(out, np.ndarray):
            seed = _basis(out, i)
        else:
            seed = 1.0
        grads = derivative(seed, *bound.args, **bound.kwargs)
        grads = grads if isinstance(grads, tuple) and len(names) > 1 else (grads,)
        for k, g in enumerate(grads):
            rows[k].append(np.ravel(np.asarray(g, dtype=float)) * np.ones(np.size(inputs[k])))
    return [_shaped(np.stack(r, axis=0), out_shape, np.shape(v)) for r, v in zip(rows, inputs)]


def _shaped(matrix, out_shape, in_shape):
    block = np.reshape(matrix, tuple(out_shape) + tuple(in_shape))
    return float(block) if block.ndim == 0 else block
