"""Every rule of the runtime table, and Hessians of array functions through it.

Generated gradient code calls the helpers of :mod:`derivo.runtime` (and of
:mod:`derivo.adjoints` and :mod:`derivo.linalg_adjoints`, which NumPy's rules
call); the rules in ``derivo.rules.runtime`` make that code differentiable
(``derivo.hessian`` and ``derivo.hvp`` run forward mode over ``derivo.grad``'s
code).

The parametrisation walks ``derivo.rules.RULES`` and takes every rule written
in ``derivo.rules.runtime``; each is looked up in ``PROBES`` below: probe
expressions calling the helper directly, with the float64 arguments they are
called with (constants that only give shapes or indices live in ``PRELUDE``).
A rule added to the table without a probe shows up as a failing case that
names it.  For every probe a real module is written with

    def probe(x0, x1, ...):  return EXPR
    def loss(x0, x1, ...):   return np.sum((EXPR) * W)

and three checks run through derivo's generated code:

- reverse mode: derivo's gradient of ``loss`` matches central finite
  differences, element by element, in each argument's shape (an argument the
  helper reads only for a shape gets a zero gradient, as its finite
  difference is);
- forward mode: ``derivo.jvp(probe, ...)`` along a random direction ``v``
  matches the central finite-difference directional derivative;
- the dot-product test ``<JVP(v), u> == <v, VJP(u)>`` with ``derivo.jvp`` on
  one side and ``derivo.vjp`` on the other: nothing but derivo on either side,
  so the VJP and JVP templates of each rule are checked against each other.

The end-to-end tests at the bottom compare ``derivo.hessian`` and
``derivo.hvp`` of small array functions (the helpers their gradient code
calls) with finite differences of ``derivo.grad`` and with closed forms.
Failures that expose a bug elsewhere in derivo are ``xfail(strict=True)`` with
the bug in the reason, so the mark has to go when the bug is fixed.
"""

import importlib.util
import inspect
import zlib

import numpy as np
import pytest
import scipy.linalg

import derivo
from probing import (H, Probe, assert_gradient_matches_differences, coverage_gaps, load,
                     normal, numeric_gradient, positive, random_like, rule_cases, rule_of,
                     table_rules)
from derivo import adjoints, linalg_adjoints, rules, runtime
from examples.mlp import loss as mlp_loss

TABLE = "derivo.rules.runtime"
RTOL = 1e-6

PRELUDE = """\
import dataclasses
from typing import NamedTuple

import numpy as np
from scipy.signal import correlate as signal_correlate

from derivo.runtime import (add_field, add_field_in_place, field_vjp, items_vjp, unpacked_vjp,
                            values_vjp)
from derivo.runtime import (add_adjoints, add_at, add_at_in_place, addable, as_array, copy_of,
                            copy_vjp, dot_vjp_left, dot_vjp_right, einsum_vjp, expand,
                            extremum_vjp, first_equal_vjp, getitem_vjp, hstack_vjp,
                            inner_vjp_left, inner_vjp_right, log, log_times, matmul_vjp_left,
                            matmul_vjp_right, norm_vjp, owned, part, pop_adjoint,
                            pop_adjoint_in_place, power_exponent_jvp, prod_vjp, scalar_seed,
                            shaped_like,
                            sort_like, split_like, stored_part, stored_tangent, sum_vjp,
                            swap_last, tangent_owned,
                            transpose_vjp, transposed, unbroadcast, unsort, unstack, vstack_vjp,
                            zero_as, zero_gradient, zeroed, zeroed_in_place)
from derivo.adjoints import (column_stack_vjp, convolve_vjp, correlate_vjp, cumprod_jvp, cumprod_vjp,
                             diag_vjp, interp_fp_vjp,
                             reversed_conj, solve_triangular_vjp_b,
                             interp_x_vjp, diff_vjp, gathered_vjp, gradient_vjp,
                             pad_sources, quantile_vjp, repeat_vjp, reverse_cumsum, rollaxis_vjp,
                             select_vjp, split_vjp, tile_vjp)
from derivo.linalg_adjoints import (block_diag_vjp, cross_vjp, fftn_vjp, irfftn_vjp, kron_vjp,
                                    real_like, rfftn_vjp,
                                    tensordot_vjp_a, tensordot_vjp_b, trace_vjp)

L4 = np.zeros(4)
L5 = np.zeros(5)
L14 = np.zeros((1, 4))
L31 = np.zeros((3, 1))
L34 = np.zeros((3, 4))
Z34 = np.array([[0.7, -1.3, 1.9, 0.4], [1.2, 0.0, -0.8, 2.1], [0.0, 1.4, 0.0, -0.6]])
L234 = np.zeros((2, 3, 4))
LIST3 = [1.0, 2.0, 3.0]
UNSORTED = [2.0, -1.0, 2.0, 0.5]
IDX = np.array([0, 2, 2, 1])
FLOATS34 = np.zeros((3, 4))
INTS34 = np.zeros((3, 4), dtype=int)
PERM = np.array([1, 2, 0])
MASK = np.array([[True, False, True, True],
                 [False, False, True, False],
                 [True, True, False, True]])
TIES = np.array([[1.0, 3.0, 3.0, 0.5],
                 [2.0, -1.0, 0.0, 2.0],
                 [0.0, 0.0, 0.0, 0.0]])
PIECES = [np.zeros((2, 3)), np.zeros((1, 3))]
COLUMNS = [np.zeros((2, 3)), np.zeros((2, 1))]
ROWS = [np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((2, 3))]
VECTORS = [np.zeros(3), np.zeros(2)]
D2 = {"a": np.zeros(3), "b": np.zeros(3)}
PADDED = pad_sources(L34, 1, "constant")
REFLECTED = pad_sources(L4, (2, 3), "reflect")
STACKED = [np.zeros(3), np.zeros((3, 2))]
L8 = np.zeros(8)
CL4 = np.zeros(4, dtype=complex)
KNOTS = np.array([-2.0, -0.5, 0.7, 2.5])
CL5 = np.zeros(5, dtype=complex)
CL34 = np.zeros((3, 4), dtype=complex)
BLOCKS = [np.zeros((2, 2)), np.zeros(3), np.zeros((1, 2))]
COORDS = np.array([0.0, 0.5, 1.5, 2.0, 3.5])
A34 = np.array([[0.3, -1.2, 2.0, 0.7],
                [1.5, 0.1, -0.4, 0.9],
                [-2.0, 0.6, 1.1, -0.8]])


@dataclasses.dataclass
class Record:
    w: np.ndarray
    b: float


class Pair(NamedTuple):
    w: np.ndarray
    b: float


RECORD = Record(np.zeros(3), 0.0)
PAIR = Pair(np.zeros(3), 0.0)
"""


# --- the probes ------------------------------------------------------------------------

PROBES = {}


def probe(primitive, expr, *args):
    p = Probe(primitive, expr, args)
    PROBES.setdefault(p.key, []).append(p)


# The scalar helper of the builtins table.
probe(runtime.log, "log(x0)", positive(3, 4))
probe(runtime.log, "log(x0)", positive())
probe(runtime.log_times, "log_times(x0, x1)", normal(3, 4), positive(3, 4))
probe(runtime.log_times, "log_times(x0, x1)", normal(), positive())
probe(runtime.power_exponent_jvp, "power_exponent_jvp(x0, x1, x2)", normal(3, 4), normal(3, 4),
      positive(3, 4))
probe(runtime.power_exponent_jvp, "power_exponent_jvp(x0, x1, x2)", normal(), normal(), positive())

# Broadcasting: unbroadcast sums down to like's shape, shaped_like broadcasts up.
for _like, _shape in (("L4", (3, 4)), ("L31", (3, 4)), ("L34", (3, 4)), ("1.0", (3, 4)),
                      ("L14", (2, 3, 4)), ("L4", (2, 3, 4)), ("2.0", ())):
    probe(runtime.unbroadcast, "unbroadcast(x0, {})".format(_like), normal(*_shape))
probe(runtime.unbroadcast, "unbroadcast(x0, x1)", normal(3, 4), normal(4))
probe(runtime.unbroadcast, "unbroadcast(x0 * x1, x1)", normal(3, 4), normal(3, 1))
for _shape in ((3, 4), (4,), (3, 1), ()):
    probe(runtime.shaped_like, "shaped_like(x0, L34)", normal(*_shape))
probe(runtime.shaped_like, "shaped_like(x0, x1)", normal(4), normal(3, 4))

# Reductions: expand spreads a reduction's adjoint over the axes it reduced.
for _axis, _keepdims, _shape, _like in (("None", False, (), "L34"), ("None", True, (1, 1), "L34"),
                                        ("0", False, (4,), "L34"), ("1", True, (3, 1), "L34"),
                                        ("-1", False, (3,), "L34"), ("(0, 2)", False, (3,), "L234"),
                                        ("(0, 2)", True, (1, 3, 1), "L234")):
    probe(runtime.expand, "expand(x0, {}, {}, {})".format(_like, _axis, _keepdims),
          normal(*_shape))
probe(runtime.expand, "expand(x0, x1, 1, False)", normal(3), normal(3, 4))

for _axis, _keepdims, _shape in (("None", False, ()), ("1", False, (3,)), ("0", True, (1, 4)),
                                 ("-1", True, (3, 1))):
    probe(runtime.extremum_vjp, "extremum_vjp(x0, np.max(x1, axis={a}, keepdims={k}), x1, "
          "{a}, {k})".format(a=_axis, k=_keepdims), normal(*_shape), normal(3, 4))
# ties share the adjoint
probe(runtime.extremum_vjp, "extremum_vjp(x0, np.max(TIES, axis=1), TIES, 1, False)", normal(3))
probe(runtime.extremum_vjp, "extremum_vjp(x0, np.min(TIES), TIES, None, False)", normal())

probe(runtime.norm_vjp, "norm_vjp(x0, x1, x2, None, None, False)", normal(), positive(),
      normal(5))
probe(runtime.norm_vjp, "norm_vjp(x0, x1, x2, None, 1, False)", normal(3), positive(3),
      normal(3, 4))
probe(runtime.norm_vjp, "norm_vjp(x0, x1, x2, 2, 0, True)", normal(1, 4), positive(1, 4),
      normal(3, 4))
probe(runtime.norm_vjp, "norm_vjp(x0, x1, x2, 'fro', None, False)", normal(), positive(),
      normal(3, 4))
probe(runtime.norm_vjp, "norm_vjp(x0, x1, x2, None, (0, 1), False)", normal(), positive(),
      normal(3, 4))
probe(runtime.norm_vjp, "norm_vjp(x0, np.linalg.norm(x1), x1, None, None, False)", normal(),
      normal(4))

# Products: vector.vector, matrix.vector, vector.matrix, matrix.matrix, stacks.
PRODUCT_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4))]
STACKED_SHAPES = [((2, 2, 3), (3, 4)), ((2, 2, 3), (2, 3, 4)), ((3,), (2, 3, 4)),
                  ((2, 2, 3), (3,)), ((2, 1, 2, 3), (3, 3, 4))]


def product_probes(left, right, product, pairs):
    for a, b in pairs:
        out = np.shape(product(np.zeros(a), np.zeros(b)))
        probe(left, "{}(x0, x1, x2)".format(left.__name__), normal(*out), normal(*a), normal(*b))
        probe(right, "{}(x0, x1, x2)".format(right.__name__), normal(*out), normal(*a),
              normal(*b))


product_probes(runtime.matmul_vjp_left, runtime.matmul_vjp_right, np.matmul,
               PRODUCT_SHAPES + STACKED_SHAPES)
product_probes(runtime.dot_vjp_left, runtime.dot_vjp_right, np.dot,
               PRODUCT_SHAPES + [((), (2, 3)), ((2, 3), ()), ((2, 2, 3), (3,)),
                                 ((2, 2, 3), (3, 4))])
product_probes(runtime.inner_vjp_left, runtime.inner_vjp_right, np.inner,
               [((3,), (3,)), ((2, 3), (4, 3)), ((2, 3), (3,)), ((3,), (2, 3)),
                ((), (2, 3))])
# the other factor's shape alone (a constant)
probe(runtime.matmul_vjp_left, "matmul_vjp_left(x0, L34, x1)", normal(3, 2), normal(4, 2))
probe(runtime.matmul_vjp_right, "matmul_vjp_right(x0, x1, L34)", normal(2, 4), normal(2, 3))

for _subscripts, _shapes in (("ij,jk->ik", ((2, 3), (3, 4))), ("ij,ij->", ((2, 3), (2, 3))),
                             ("i,j->ij", ((3,), (4,))), ("ij,j->i", ((2, 3), (3,))),
                             ("bij,bjk->bik", ((2, 2, 3), (2, 3, 4))),
                             ("ij,kj->ikj", ((2, 3), (4, 3)))):
    _out = np.shape(np.einsum(_subscripts, *(np.zeros(s) for s in _shapes)))
    for _index in (0, 1):
        probe(runtime.einsum_vjp, "einsum_vjp(x0, {!r}, [x1, x2], {})".format(_subscripts, _index),
              normal(*_out), *(normal(*s) for s in _shapes))
for _subscripts, _shape in (("ij->j", (3, 4)), ("ij->", (3, 4)), ("ijk->ki", (2, 3, 4))):
    _out = np.shape(np.einsum(_subscripts, np.zeros(_shape)))
    probe(runtime.einsum_vjp, "einsum_vjp(x0, {!r}, [x1], 0)".format(_subscripts),
          normal(*_out), normal(*_shape))

# Shapes.
probe(runtime.transpose_vjp, "transpose_vjp(x0, ())", normal(3, 4))
probe(runtime.transpose_vjp, "transpose_vjp(x0, (None,))", normal(2, 3, 4))
probe(runtime.transpose_vjp, "transpose_vjp(x0, ((1, 2, 0),))", normal(2, 3, 4))
probe(runtime.transpose_vjp, "transpose_vjp(x0, (2, 0, 1))", normal(2, 3, 4))
probe(runtime.transpose_vjp, "transpose_vjp(x0, (PERM,))", normal(2, 3, 4))
probe(runtime.swap_last, "swap_last(x0)", normal(3, 4))
probe(runtime.swap_last, "swap_last(x0)", normal(2, 3, 4))
probe(runtime.transposed, "transposed(x0)", normal(3, 4))
probe(runtime.transposed, "transposed(x0)", normal())
probe(runtime.as_array, "as_array(x0)", normal(3, 4))
probe(runtime.split_like, "split_like(x0, PIECES, 0)[1]", normal(3, 3))
probe(runtime.split_like, "split_like(x0, PIECES, 0)[0] * split_like(x0, PIECES, 0)[1]",
      normal(3, 3))
probe(runtime.split_like, "np.concatenate(split_like(x0, COLUMNS, -1)[::-1], 1)", normal(2, 4))
probe(runtime.split_like, "split_like(x0, COLUMNS, None)[1] * 2.0", normal(8))
probe(runtime.unstack, "unstack(x0, ROWS, 0)[2]", normal(3, 2, 3))
probe(runtime.unstack, "np.stack(unstack(x0, ROWS, 1), 0) * x0[:, 0]", normal(2, 3, 3))
probe(runtime.hstack_vjp, "hstack_vjp(x0, VECTORS)[0]", normal(5))
probe(runtime.hstack_vjp, "hstack_vjp(x0, COLUMNS)[1]", normal(2, 4))
probe(runtime.vstack_vjp, "vstack_vjp(x0, PIECES)[0]", normal(3, 3))
probe(runtime.vstack_vjp, "vstack_vjp(x0, [L4, L14])[1]", normal(2, 4))

# Indexing.
for _expr, _shape in (("getitem_vjp(x0, L34, 1)", (4,)), ("getitem_vjp(x0, L5, slice(1, 3))", (2,)),
                      ("getitem_vjp(x0, L34, IDX)", (4, 4)),
                      ("getitem_vjp(x0, L34, (IDX, 1))", (4,)),
                      ("getitem_vjp(x0, L34, MASK)", (7,)),
                      ("getitem_vjp(x0, L34, (slice(None), -1))", (3,)),
                      ("getitem_vjp(x0, L34, (1, 2))", ()),
                      ("np.array(getitem_vjp(x0, LIST3, 1))", ()),
                      ("np.array(getitem_vjp(x0, LIST3, slice(0, 2)))", (2,))):
    probe(runtime.getitem_vjp, _expr, normal(*_shape))
probe(runtime.getitem_vjp, "getitem_vjp(x0, x1, IDX)", normal(4, 4), normal(3, 4))

# Of max(xs), min(xs) and sorted(xs) of a list (ties: UNSORTED holds 2.0 twice).
probe(runtime.first_equal_vjp, "np.array(first_equal_vjp(x0, 2.0, UNSORTED))", normal())
probe(runtime.first_equal_vjp, "first_equal_vjp(x0, 2.0, np.array(UNSORTED))", normal())
probe(runtime.unsort, "np.array(unsort(x0, UNSORTED))", normal(4))
probe(runtime.sort_like, "np.array(sort_like(x0, UNSORTED))", normal(4))
probe(runtime.copy_vjp, "np.array(copy_vjp(x0, UNSORTED))", normal(4))
probe(runtime.copy_vjp, "copy_vjp(list(x0), L34)", normal(3, 4))
probe(runtime.sum_vjp, "np.array(sum_vjp(x0, LIST3))", normal())
probe(runtime.sum_vjp, "sum_vjp(x0, L34)", normal(4))
probe(runtime.zero_as, "zero_as(x0, L34)", normal(3, 4))
probe(runtime.zero_as, "zero_as(x0 * 0.0, L34)", normal())
for _expr, _shape in (("part(x0, 1)", (3, 4)), ("part(x0, (slice(None), 2))", (3, 4)),
                      ("part(x0, IDX[[0, 1, 3]])", (3, 4)), ("part(x0, MASK)", (3, 4)),
                      ("part(x0, 2)", ())):
    probe(runtime.part, _expr, normal(*_shape))
# stored_part: part for a float array, zero for an integer one (which truncates what it stores)
for _array in ("FLOATS34", "INTS34"):
    probe(runtime.stored_part, "stored_part(x0, {}, (slice(None), 2))".format(_array),
          normal(3, 4))
    probe(runtime.stored_tangent, "stored_tangent(x0, {})".format(_array), normal(3))
for _expr, _shape in (("zeroed(x0, 1)", (3, 4)), ("zeroed(x0, (slice(None), 2))", (3, 4)),
                      ("zeroed(x0, IDX)", (3, 4)), ("zeroed(x0, MASK)", (3, 4)),
                      ("zeroed(x0, 0)", ())):
    probe(runtime.zeroed, _expr, normal(*_shape))
    # zeroed_in_place sets in place: into an array only the expression holds (x0 * 1.0)
    probe(runtime.zeroed_in_place, _expr.replace("zeroed(x0", "zeroed_in_place(x0 * 1.0"),
          normal(*_shape))

# The adjoints of NumPy functions (derivo.adjoints): linear in the adjoint x0.
for _axis, _shape in (("1", (3, 4)), ("0", (3, 4)), ("None", (12,))):
    probe(adjoints.reverse_cumsum, "reverse_cumsum(x0, L34, {})".format(_axis), normal(*_shape))
for _n, _axis, _shape in ((1, -1, (3, 3)), (2, 0, (1, 4)), (3, 1, (3, 1))):
    probe(adjoints.diff_vjp, "diff_vjp(x0, {}, {})".format(_n, _axis), normal(*_shape))
# np.diag of a vector (the adjoint a matrix) and of a matrix (the adjoint its diagonal)
for _v, _k, _shape in (("L4", 0, (4, 4)), ("L4", 1, (5, 5)), ("L4", -2, (6, 6)),
                       ("L34", 0, (3,)), ("L34", 1, (3,)), ("L34", -1, (2,))):
    probe(adjoints.diag_vjp, "diag_vjp(x0, {}, {})".format(_v, _k), normal(*_shape))
for _repeats, _axis, _shape in (("2", "1", (3, 8)), ("np.array([1, 0, 2])", "0", (3, 4)),
                                ("2", "None", (24,))):
    probe(adjoints.repeat_vjp, "repeat_vjp(x0, L34, {}, {})".format(_repeats, _axis),
          normal(*_shape))
for _like, _reps, _shape in (("L34", "2", (3, 8)), ("L4", "(2, 2)", (2, 8)),
                             ("L34", "(2, 1, 1)", (2, 3, 4))):
    probe(adjoints.tile_vjp, "tile_vjp(x0, {}, {})".format(_like, _reps), normal(*_shape))
probe(adjoints.rollaxis_vjp, "rollaxis_vjp(x0, L234, 2, 0)", normal(4, 2, 3))
probe(adjoints.rollaxis_vjp, "rollaxis_vjp(x0, L234, 0, 3)", normal(3, 4, 2))
probe(linalg_adjoints.trace_vjp, "trace_vjp(x0, L34, 0, 0, 1)", normal())
probe(linalg_adjoints.trace_vjp, "trace_vjp(x0, L234, 1, 1, 2)", normal(2))
probe(linalg_adjoints.trace_vjp, "trace_vjp(x0, L234, -1, 2, 0)", normal(3))
# sources: positions repeated (IDX) and from nowhere (-1, the constant of np.pad)
probe(adjoints.gathered_vjp, "gathered_vjp(x0, L5, IDX)", normal(4))
probe(adjoints.gathered_vjp, "gathered_vjp(x0, L5, IDX)", normal())
probe(adjoints.gathered_vjp, "gathered_vjp(x0, L34, PADDED)", normal(5, 6))
probe(adjoints.gathered_vjp, "gathered_vjp(x0, L4, REFLECTED)", normal(9))
for _q, _axis, _keepdims, _shape in ((0.3, 1, False, (3,)), (0.5, None, False, ()),
                                     (0.75, 0, True, (1, 4))):
    probe(adjoints.quantile_vjp, "quantile_vjp(x0, A34, {}, {}, {}, 'linear')".format(
        _q, _axis, _keepdims), normal(*_shape))
# the array gives the order only: its gradient is zero
probe(adjoints.quantile_vjp, "quantile_vjp(x0, x1, 0.4, None, False, 'linear')", normal(),
      normal(3, 4))
# pieces of an adjoint (of np.column_stack, np.split, np.select's choices)
probe(adjoints.column_stack_vjp, "column_stack_vjp(x0, STACKED)[0]", normal(3, 3))
probe(adjoints.column_stack_vjp, "column_stack_vjp(x0, STACKED)[1] * x0[:, :2]", normal(3, 3))
probe(adjoints.split_vjp, "split_vjp([x0, x1], PIECES, 0)", normal(2, 3), normal(1, 3))
probe(adjoints.split_vjp, "split_vjp([0.0, x0], COLUMNS, 1)", normal(2, 1))
# (forward mode adds the pieces' tangents as an array of them: runtime.addable)
probe(adjoints.split_vjp, "split_vjp(add_at([0.0, x1], x0, PIECES, 0), PIECES, 0)", normal(2, 3),
      normal(1, 3))
for _index in (0, 1):
    probe(adjoints.select_vjp, "select_vjp(x0, [MASK, TIES > 1.0], [L34, L4])[{}]".format(_index),
          normal(3, 4))
# np.gradient's adjoint: one per axis, spacings as numbers or coordinates
probe(adjoints.gradient_vjp, "gradient_vjp([x0, x1], L34, (), None, 1)", normal(3, 4), normal(3, 4))
probe(adjoints.gradient_vjp, "gradient_vjp(x0, L5, (0.5,), None, 2)", normal(5))
probe(adjoints.gradient_vjp, "gradient_vjp(x0, L5, (COORDS,), None, 1)", normal(5))
probe(adjoints.gradient_vjp, "gradient_vjp(x0, L34, (), 1, 2)", normal(3, 4))
# Products: linear in the adjoint x0 and in the other factor (the one whose adjoint
# it is gives a shape).
for _axes, _a, _b, _out in (("2", (2, 3, 4), (3, 4, 5), (2, 5)),
                            ("([1], [0])", (2, 3), (3, 4), (2, 4)),
                            ("((0, 2), (1, 0))", (3, 2, 4), (4, 3, 5), (2, 5)),
                            ("0", (2,), (3,), (2, 3))):
    for _helper in (linalg_adjoints.tensordot_vjp_a, linalg_adjoints.tensordot_vjp_b):
        probe(_helper, "{}(x0, x1, x2, {})".format(_helper.__name__, _axes), normal(*_out),
              normal(*_a), normal(*_b))
for _a, _b, _out in (((2, 3), (3, 2), (6, 6)), ((3,), (2, 2), (2, 6)),
                     ((2, 1, 2), (3,), (2, 1, 6))):
    for _first in (True, False):
        probe(linalg_adjoints.kron_vjp, "kron_vjp(x0, x1, x2, {})".format(_first), normal(*_out),
              normal(*_a), normal(*_b))
for _axes, _a, _b, _out in (("-1, -1, -1, None", (4, 3), (4, 3), (4, 3)),
                            ("-1, -1, -1, None", (2,), (2,), ()),
                            ("-1, -1, -1, None", (3, 2), (3,), (3, 3)),
                            ("0, -1, 0, None", (3, 4), (4, 3), (3, 4)),
                            ("-1, -1, -1, 0", (3, 2), (3, 2), (3, 2))):
    for _first in (True, False):
        probe(linalg_adjoints.cross_vjp, "cross_vjp(x0, x1, x2, {}, {})".format(_axes, _first),
              normal(*_out), normal(*_a), normal(*_b))
# np.convolve's and np.correlate's modes (read off the adjoint's length), with the
# first argument longer or shorter than the second
for _mode, _a, _v in (("full", 5, 3), ("same", 5, 3), ("valid", 5, 3), ("same", 2, 5),
                      ("valid", 3, 4), ("full", 1, 3)):
    _out = len(np.convolve(np.zeros(_a), np.zeros(_v), _mode))
    for _which in (0, 1):
        probe(adjoints.convolve_vjp, "convolve_vjp(x0, x1, x2, {}, np.correlate)".format(_which),
              normal(_out), normal(_a), normal(_v))
    _out = len(np.correlate(np.zeros(_a), np.zeros(_v), _mode))
    for _which in (0, 1):
        probe(adjoints.correlate_vjp, "correlate_vjp(x0, x1, x2, {})".format(_which),
              normal(_out), normal(_a), normal(_v))
# scipy.signal.convolve's (n-dimensional)
for _out, _a, _v, _which in (((4, 5), (2, 3), (3, 3), 0), ((2, 3), (3, 4), (2, 2), 1),
                             ((3, 4), (3, 4), (2, 3), 1)):
    probe(adjoints.convolve_vjp, "convolve_vjp(x0, x1, x2, {}, signal_correlate)".format(_which),
          normal(*_out), normal(*_a), normal(*_v))
# np.fft's adjoints: transforms cut or padded to the argument's lengths (x0's shape
# is the transform's), real for a real argument
for _helper, _expr, _shape in (
        (linalg_adjoints.fftn_vjp, "fftn_vjp(x0, L4, [0], None, False)", (4,)),
        (linalg_adjoints.fftn_vjp, "fftn_vjp(x0, L4, [0], 'ortho', True)", (6,)),
        (linalg_adjoints.fftn_vjp, "fftn_vjp(x0, L34, [0, 1], None, False)", (3, 4)),
        (linalg_adjoints.fftn_vjp, "fftn_vjp(x0, L34, [0], 'forward', False)", (2, 4)),
        (linalg_adjoints.fftn_vjp, "np.imag(fftn_vjp(x0, CL4, [0], None, True))", (4,)),
        (linalg_adjoints.rfftn_vjp, "rfftn_vjp(x0, L8, None, [0], None)", (5,)),
        (linalg_adjoints.rfftn_vjp, "rfftn_vjp(x0, L8, [6], [0], 'ortho')", (4,)),
        (linalg_adjoints.rfftn_vjp, "rfftn_vjp(x0, L34, None, None, 'forward')", (3, 3)),
        (linalg_adjoints.irfftn_vjp, "irfftn_vjp(x0, L5, None, [0], None)", (8,)),
        (linalg_adjoints.irfftn_vjp, "np.imag(irfftn_vjp(x0, CL5, [9], [0], 'ortho'))", (9,)),
        (linalg_adjoints.irfftn_vjp, "np.real(irfftn_vjp(x0, CL34, None, None, 'forward'))",
         (3, 6)),
        (linalg_adjoints.irfftn_vjp, "np.imag(irfftn_vjp(x0, CL34, [2, 5], [0, 1], None))", (2, 5)),
        (linalg_adjoints.real_like, "real_like(x0 * (1 + 2j), L4)", (4,)),
        (linalg_adjoints.real_like, "np.imag(real_like(x0 * (1 + 2j), CL4))", (4,))):
    probe(_helper, _expr, normal(*_shape))
# scipy.linalg.block_diag's: an array's block (np.atleast_2d of it)
for _index in (0, 1, 2):
    probe(linalg_adjoints.block_diag_vjp, "block_diag_vjp(x0, BLOCKS, {})".format(_index),
          normal(4, 7))
# np.interp's adjoints in x and fp (x1 the points, some outside the knots; x2 fp)
for _options in ("None, None, None", "0.0, 1.0, None", "None, None, 3.0"):
    for _helper in (adjoints.interp_x_vjp, adjoints.interp_fp_vjp):
        probe(_helper, "{}(x0, x1, KNOTS, x2, {})".format(_helper.__name__, _options),
              normal(6), normal(6), normal(4))
probe(adjoints.reversed_conj, "reversed_conj(x0)", normal(3, 4))
probe(adjoints.reversed_conj, "np.imag(reversed_conj(x0 * (1 - 2j)))", normal(5))
# scipy.linalg.solve_triangular's adjoint in b: x1 a well-conditioned triangle
# (its other triangle is not read), x0 one or several right-hand sides
def triangle(*shape):
    return lambda rng: rng.normal(size=shape) + 4.0 * np.eye(shape[0])


for _trans, _lower, _shape in ((0, False, (3,)), (1, True, (3, 2)), ("T", False, (3, 2)),
                               ("N", True, (3,))):
    probe(adjoints.solve_triangular_vjp_b,
          "solve_triangular_vjp_b(x0, x1, {!r}, {})".format(_trans, _lower), normal(*_shape),
          triangle(3, 3))

# prod_vjp: the adjoint x0 times the product of the other elements of x1, a lane
# of which may hold zeros (none, one, two or three of them).
def with_zeros(*values):
    return lambda rng: np.array(values, dtype=float)


ZEROS_BY_ROW = with_zeros([0.7, -1.3, 1.9, 0.4], [1.2, 0.0, -0.8, 2.1], [0.0, 1.4, 0.0, -0.6])
probe(runtime.prod_vjp, "prod_vjp(x0, np.prod(x1, axis=1), x1, 1, False)", normal(3), normal(3, 4))
probe(runtime.prod_vjp, "prod_vjp(x0, np.prod(x1, axis=1), x1, 1, False)", normal(3), ZEROS_BY_ROW)
probe(runtime.prod_vjp, "prod_vjp(x0, np.prod(x1, axis=0, keepdims=True), x1, 0, True)",
      normal(1, 4), ZEROS_BY_ROW)
probe(runtime.prod_vjp, "prod_vjp(x0, np.prod(x1), x1, None, False)", normal(),
      with_zeros(0.5, -1.5, 0.0, 2.0))
probe(runtime.prod_vjp, "prod_vjp(x0, np.prod(x1), x1, None, False)", normal(),
      with_zeros(0.0, 1.5, 0.0, 0.0, 0.8))
probe(runtime.prod_vjp, "prod_vjp(x0, np.prod(x1, axis=(0, 2)), x1, (0, 2), False)", normal(3),
      normal(2, 3, 4))
probe(runtime.prod_vjp, "prod_vjp(x0, np.prod(x1), x1, None, False)", normal(), normal())
# cumprod_vjp and cumprod_jvp: linear in x0, and their second derivatives in x1
# (refused where x1 holds a zero); Z34 holds zeros, so only x0 varies there.
for _axis, _shape in (("1", (3, 4)), ("0", (3, 4)), ("None", (12,))):
    for _helper in ("cumprod_vjp", "cumprod_jvp"):
        _lane = _shape if _helper == "cumprod_vjp" else (3, 4)
        probe(getattr(adjoints, _helper), "{}(x0, np.cumprod(x1, {}), x1, {})".format(
            _helper, _axis, _axis), normal(*_lane), normal(3, 4))
        probe(getattr(adjoints, _helper), "{}(x0, np.cumprod(Z34, {}), Z34, {})".format(
            _helper, _axis, _axis), normal(*_lane))

# Copies and sums of adjoints.
probe(runtime.owned, "owned(x0)", normal(3, 4))
probe(runtime.owned, "owned(x0)", normal())
probe(runtime.tangent_owned, "tangent_owned(x0, x1, (x1,), (x0,))", normal(3, 4), normal(3, 4))
probe(runtime.tangent_owned, "tangent_owned(x0, x1 * 1.0, (x1,), (x0,))", normal(3, 4),
      normal(3, 4))
probe(runtime.copy_of, "copy_of(x0)", normal(3, 4))
probe(runtime.copy_of, "copy_of(x0[1])", normal(3, 4))
probe(runtime.add_adjoints, "add_adjoints(x0, x1)", normal(3, 4), normal(3, 4))
probe(runtime.add_adjoints, "add_adjoints(x0, x1)", normal(), normal(3, 4))
probe(runtime.add_adjoints, "add_adjoints(x0, x1)", normal(4), normal(3, 4))
probe(runtime.add_adjoints, "np.array(add_adjoints([x0, x1], [x1, 2.0]))", normal(), normal())
probe(runtime.add_adjoints, "np.array(add_adjoints(0.0, [x0, x1]))", normal(), normal())
probe(runtime.add_adjoints, "np.stack(add_adjoints([x0, 0.0], [x1, x1 * x0]))", normal(3),
      normal(3))
probe(runtime.add_adjoints, "add_adjoints([x0, 0.0], [x1, x0])[1] * x1[0]", normal(3), normal(3))
# add_at adds into a new adjoint; add_at_in_place adds in place, into an array or list only
# the expression holds (x0 * 1.0, a list display).
for _expr, _shapes in (("add_at(x0, x1, L34, 1)", ((3, 4), (4,))),
                       ("add_at(x0 * 1.0, x1, L34, 1)", ((3, 4), (4,))),
                       ("add_at(x0 * 1.0, x1, L34, (slice(None), -1))", ((3, 4), (3,))),
                       ("add_at(x0 * 1.0, x1, L34, IDX)", ((3, 4), (4, 4))),
                       ("add_at(x0 * 1.0, x1, L34, MASK)", ((3, 4), (7,))),
                       ("add_at(0.0, x0, L34, (1, 2))", ((),)),
                       ("add_at(x0 * 1.0, x1, L4, np.int64(3))", ((4,), ())),
                       ("np.array(add_at([x0, 0.0, x1], x1, LIST3, 1))", ((), ())),
                       ("np.array(add_at([x0, 2.0 * x0, 0.0], x1, LIST3, slice(1, 3)))",
                        ((), (2,)))):
    probe(runtime.add_at, _expr, *(normal(*shape) for shape in _shapes))
    if not _expr.startswith("add_at(x0,"):
        probe(runtime.add_at_in_place, _expr.replace("add_at", "add_at_in_place"),
              *(normal(*shape) for shape in _shapes))
# The adjoints of containers read by key or by name: a dict's under its keys, a
# record's under its fields' names, a NamedTuple's by position.
probe(runtime.values_vjp, "values_vjp([x0, x1 * x0], D2)['b']", normal(3), normal(3))
probe(runtime.items_vjp, "items_vjp([[0.0, x0], [0.0, x1 * x0]], D2)['b']", normal(3), normal(3))
probe(runtime.unpacked_vjp, "unpacked_vjp({'a': x0, 'b': x1, 'c': x0}, D2, ['b'])['a'] * x1",
      normal(3), normal(3))
probe(runtime.field_vjp, "field_vjp(x0, RECORD, 'w')['w'] * x1", normal(3), normal(3))
probe(runtime.field_vjp, "field_vjp(x0, PAIR, 'w')[0] * x1", normal(3), normal(3))
for _add in ("add_field", "add_field_in_place"):
    probe(getattr(runtime, _add), _add + "({'w': x0 * 1.0, 'b': 0.0}, x1, RECORD, 'w')['w']",
          normal(3), normal(3))
    probe(getattr(runtime, _add), _add + "([x0 * 1.0, 0.0], x1 * x0, PAIR, 'w')[0]",
          normal(3), normal(3))
probe(runtime.addable, "addable([x0, x1 * x0])", normal(), normal())
probe(runtime.addable, "addable(x0)", normal(3))
# pop_adjoint returns a pair (a list and an array): an item of it is read back.
probe(runtime.pop_adjoint, "pop_adjoint([x0, x1, x0 * x1])[1]", normal(3), normal(3))
probe(runtime.pop_adjoint, "np.stack(pop_adjoint([x0, x1, x0 * x1])[0])", normal(3), normal(3))
probe(runtime.pop_adjoint_in_place, "pop_adjoint_in_place([x0, x1, x0 * x1])[1]", normal(3),
      normal(3))
probe(runtime.pop_adjoint_in_place, "np.stack(pop_adjoint_in_place([x0, x1, x0 * x1])[0])",
      normal(3), normal(3))


def directions(p, arguments, out):
    rng = np.random.default_rng(zlib.crc32(p.expr.encode()) + 1)
    return [random_like(rng, x) for x in arguments], random_like(rng, out)


def check_probe(p, tmp_path):
    arguments = p.arguments()
    module = load(tmp_path, PRELUDE, p, arguments, "runtime")
    assert_gradient_matches_differences(module, arguments, RTOL)


def check_tangent(p, tmp_path):
    arguments = p.arguments()
    module = load(tmp_path, PRELUDE, p, arguments, "runtime")
    v, _ = directions(p, arguments, module.probe(*arguments))
    out, tangent = derivo.jvp(module.probe, arguments, v)
    np.testing.assert_allclose(np.asarray(out, dtype=float),
                               np.asarray(module.probe(*arguments), dtype=float), rtol=1e-12)
    up = [x + H * d for x, d in zip(arguments, v)]
    down = [x - H * d for x, d in zip(arguments, v)]
    expected = (np.asarray(module.probe(*up)) - np.asarray(module.probe(*down))) / (2 * H)
    assert np.shape(tangent) == np.shape(expected)
    np.testing.assert_allclose(np.asarray(tangent, dtype=float), expected, rtol=RTOL, atol=1e-8)


def check_dot_product(p, tmp_path):
    arguments = p.arguments()
    module = load(tmp_path, PRELUDE, p, arguments, "runtime")
    v, u = directions(p, arguments, module.probe(*arguments))
    _, tangent = derivo.jvp(module.probe, arguments, v)
    _, vjp_fn = derivo.vjp(module.probe, *arguments)
    cotangents = vjp_fn(u)
    assert len(cotangents) == len(arguments)
    for ct, x in zip(cotangents, arguments):
        assert np.shape(ct) == np.shape(x)
    left = float(np.sum(np.asarray(tangent, dtype=float) * u))
    right = float(sum(np.sum(d * ct) for d, ct in zip(v, cotangents)))
    assert left == pytest.approx(right, rel=1e-10, abs=1e-12)


# --- the rules -----------------------------------------------------------------------

@pytest.mark.parametrize("key,p", list(rule_cases(TABLE, PROBES)))
def test_rule_matches_finite_differences(key, p, tmp_path):
    assert p is not None, "no probe in tests/rules/test_runtime.py for " + rule_of(key).label
    check_probe(p, tmp_path)


@pytest.mark.parametrize("key,p", list(rule_cases(TABLE, PROBES)))
def test_rule_tangent_matches_finite_differences(key, p, tmp_path):
    assert p is not None, "no probe in tests/rules/test_runtime.py for " + rule_of(key).label
    check_tangent(p, tmp_path)


@pytest.mark.parametrize("key,p", list(rule_cases(TABLE, PROBES)))
def test_rule_dot_product(key, p, tmp_path):
    assert p is not None, "no probe in tests/rules/test_runtime.py for " + rule_of(key).label
    check_dot_product(p, tmp_path)


def test_every_runtime_rule_has_a_probe():
    missing, stale = coverage_gaps(PROBES, table_rules(TABLE), TABLE)
    assert not missing, "rules with no probe: " + ", ".join(missing)
    assert not stale, "probes for rules not in the runtime table: " + ", ".join(stale)


#: helpers of derivo.runtime with no rule, and why
WITHOUT_RULES = {
    "others_product_jvp": "in prod_vjp's second-order rules only: a third derivative of "
                          "array code, refused",
    "split_stacked": "called by hstack_vjp and vstack_vjp only, never by generated code",
    "gradient_by_tangents": "its derivative needs the tangents of the tangent function it is "
                            "given: a third derivative of array code, refused",
    "einsum_vjp_operands_vjp": "in einsum_vjp's second-order rules only: a third derivative "
                               "of array code, refused",
    "einsum_vjp_operands_jvp": "in einsum_vjp's second-order rules only: a third derivative "
                               "of array code, refused",
    "replayable": "keeps an iterator's items for a reverse loop over what a call made, which "
                  "indexing left alone as not differentiated; a second derivative that finds "
                  "a differentiated value there is refused rather than given a made-up rule",
}


def test_every_runtime_helper_has_a_rule():
    """A helper added to derivo.runtime needs a rule here (or a reason above),
    or generated code calling it cannot be differentiated."""
    helpers = [name for name, obj in vars(runtime).items()
               if inspect.isfunction(obj) and obj.__module__ == runtime.__name__
               and not name.startswith("_")]
    missing = [name for name in helpers
               if not rules.is_primitive(getattr(runtime, name)) and name not in WITHOUT_RULES]
    assert not missing, "runtime helpers with no rule: " + ", ".join(missing)
    for name in WITHOUT_RULES:
        assert not rules.is_primitive(getattr(runtime, name)), name + " has a rule now"


#: helpers the VJP rules of NumPy, np.linalg, np.fft and scipy.signal call that have
#: no rule here (a Hessian through them is refused by name), and why
WITHOUT_SECOND_ORDER = dict.fromkeys(
    ["cho_factor_vjp", "cho_solve_vjp_c", "cholesky_vjp", "eig_vjp", "eigh_vjp", "eigvals_vjp",
     "eigvalsh_vjp", "lstsq_vjp_a", "lstsq_vjp_b", "lu_factor_vjp", "lu_solve_vjp_b",
     "lu_solve_vjp_lu", "matrix_power_vjp", "multi_dot_vjp", "norm_vjp_any", "pinv_vjp", "qr_vjp",
     "scipy_cholesky_vjp", "scipy_solve_vjp_a", "slogdet_vjp", "solve_triangular_vjp_a",
     "svd_vjp"],
    "not linear in the matrix or matrices: each needs a rule of its own")
WITHOUT_SECOND_ORDER["interp_xp_vjp"] = "np.interp's adjoint in the knots, a slope over a " \
                                        "width that moves with them"


def helpers_of_vjp_rules():
    """{name: labels} of derivo's helpers that VJP rules of the library tables call."""
    for module in ("scipy.linalg", "scipy.signal"):
        importlib.import_module(module)  # registers its lazy table
    rules.load_tables()
    tables = ("derivo.rules.numpy", "derivo.rules.linalg", "derivo.rules.fft",
              "derivo.rules.scipy_signal")
    found = {}
    for by_arity in rules.RULES.values():
        for rule in by_arity.values():
            if rule.table not in tables or rule.style != "vjp":
                continue
            for template in filter(None, rule.templates):
                for name in template.fn.__code__.co_names:
                    value = template.fn.__globals__.get(name)
                    if inspect.isfunction(value) and value.__module__.startswith("derivo."):
                        found.setdefault(name, set()).add(rule.label)
    return found


def test_every_helper_of_a_vjp_rule_has_a_rule():
    """The gradient code of a NumPy function calls the helpers its VJP rule does:
    without a rule of their own (or a reason above), its Hessian is refused."""
    found = helpers_of_vjp_rules()
    missing = {name: sorted(labels) for name, labels in found.items()
               if name not in WITHOUT_SECOND_ORDER
               and not rules.is_primitive(found_helper(name))
               and not rules.is_nondifferentiable(found_helper(name))}
    assert not missing, "helpers of VJP rules with no rule: {}".format(missing)
    for name in WITHOUT_SECOND_ORDER:
        assert name in found, name + " is called by no VJP rule now"
        assert not rules.is_primitive(found_helper(name)), name + " has a rule now"


def found_helper(name):
    for module in (runtime, adjoints, linalg_adjoints):
        if hasattr(module, name):
            return getattr(module, name)
    raise AssertionError("no helper " + name)


def test_constants_are_nondifferentiable():
    for helper in (runtime.scalar_seed, runtime.zero_gradient, runtime.zeros_for,
                   runtime.copysign_one):
        assert rules.is_nondifferentiable(helper)
        assert helper not in rules.RULES


def test_gradient_through_the_constants(tmp_path):
    path = tmp_path / "constants_probe.py"
    path.write_text(PRELUDE + "\n\ndef f(x):\n    return np.sum(x * scalar_seed(np.sum(x)) "
                    "+ zero_gradient(x) * x)\n")
    spec = importlib.util.spec_from_file_location("constants_probe", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_array_equal(derivo.grad(module.f)(x), np.ones(3))
    np.testing.assert_array_equal(derivo.hessian(module.f)(x), np.zeros((3, 3)))


# --- Hessians of array functions: forward over reverse -------------------------------

def cubes(x):
    return np.sum(x * x * x)


def with_bias(x, b):
    return np.sum(np.tanh(x + b) ** 2)


def layer(x, W):
    return np.sum(np.tanh(x @ W) ** 2)


def mean_and_max(x):
    return np.mean(x ** 2) + np.max(x)


def gram(x):
    return np.sum(x.T @ x)


def neighbours(x):
    return np.sum(x[1:] * x[:-1])


def point(seed, *shape):
    return np.random.default_rng(seed).uniform(-1.0, 1.0, size=shape)


X0 = point(1, 4, 3)
W0 = point(2, 3, 2)
MLP_SHAPES = {"A1": (3, 2), "b1": (3,), "A2": (2, 3), "b2": (2,), "X": (5, 2), "Y": (5, 2)}
MLP = tuple(point(10 + i, *s) for i, s in enumerate(MLP_SHAPES.values()))


# derivo.hessian differentiates float scalars and 1-D arrays: functions of
# matrices are differentiated through a flat vector of their entries.  (Written
# out rather than calling the functions above: see test_gradient_through_an_inlined_helper.)
def layer_in_W(w):
    W = np.reshape(w, (3, 2))
    return np.sum(np.tanh(X0 @ W) ** 2)


def layer_in_x(v):
    x = np.reshape(v, (4, 3))
    return np.sum(np.tanh(x @ W0) ** 2)


def gram_flat(v):
    x = np.reshape(v, (3, 2))
    return np.sum(x.T @ x)


def bias_in_b(b):
    return np.sum(np.tanh(X0 + b) ** 2)


def mlp_flat(theta):
    A1 = np.reshape(theta[:6], (3, 2))
    b1 = theta[6:9]
    A2 = np.reshape(theta[9:15], (2, 3))
    b2 = theta[15:17]
    return mlp_loss(A1, b1, A2, b2, MLP[4], MLP[5])


def fd_hessian(f, x, h=1e-5):
    """Central differences of derivo.grad(f): columns of the Hessian."""
    gradient = derivo.grad(f)
    columns = []
    for j in range(np.size(x)):
        step = np.zeros(np.shape(x))
        step[j] = h
        columns.append((np.asarray(gradient(x + step)) - np.asarray(gradient(x - step))) / (2 * h))
    return np.stack(columns, axis=-1)


HESSIANS = [(cubes, 4), (mean_and_max, 5), (neighbours, 5), (bias_in_b, 3), (layer_in_W, 6),
            (layer_in_x, 12), (gram_flat, 6), (mlp_flat, 17)]


def fd_gradient(f, x, h=1e-6):
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(np.size(x))])


@pytest.mark.parametrize("f, n", HESSIANS, ids=[f.__name__ for f, _ in HESSIANS])
def test_hessian_matches_finite_differences_of_the_gradient(f, n):
    x = point(n, n)
    # the gradient first: a wrong gradient would have a matching wrong Hessian
    np.testing.assert_allclose(derivo.grad(f)(x), fd_gradient(f, x), rtol=1e-6, atol=1e-8)
    hessian = derivo.hessian(f)(x)
    assert hessian.shape == (n, n)
    np.testing.assert_allclose(hessian, fd_hessian(f, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(hessian, hessian.T, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("f, n", HESSIANS, ids=[f.__name__ for f, _ in HESSIANS])
def test_the_gradient_code_calls_runtime_helpers(f, n):
    """These Hessians go through the runtime table (not only NumPy rules)."""
    source = derivo.grad(f).source
    assert any(helper + "(" in source for helper in
               ("expand", "unbroadcast", "matmul_vjp_left", "matmul_vjp_right",
                "getitem_vjp", "extremum_vjp"))


def test_hessians_against_closed_forms():
    x = point(20, 4)
    np.testing.assert_allclose(derivo.hessian(cubes)(x), np.diag(6 * x), rtol=1e-12)
    # the max contributes nothing away from ties
    np.testing.assert_allclose(derivo.hessian(mean_and_max)(x), 2 / 4 * np.eye(4), rtol=1e-12)
    ones = np.eye(5, k=1) + np.eye(5, k=-1)
    np.testing.assert_allclose(derivo.hessian(neighbours)(point(21, 5)), ones, atol=1e-15)
    # sum(x.T @ x) = sum over rows k of (sum of row k)^2
    block = np.kron(np.eye(3), 2 * np.ones((2, 2)))
    np.testing.assert_allclose(derivo.hessian(gram_flat)(point(22, 6)), block, atol=1e-14)
    b = point(23, 3)
    s = np.tanh(X0 + b)
    # d^2/db^2 sum tanh(x + b)^2 = sum over rows of 2 (1 - s^2)(1 - 3 s^2), diagonal in b
    expected = np.diag(np.sum(2 * (1 - s * s) * (1 - 3 * s * s), axis=0))
    np.testing.assert_allclose(derivo.hessian(bias_in_b)(b), expected, rtol=1e-10, atol=1e-12)


def test_hessian_with_several_arguments_and_broadcasting():
    x, b = point(30, 3), 0.3
    (hxx, hxb), (hbx, hbb) = derivo.hessian(with_bias, wrt=("x", "b"))(x, b)
    s = np.tanh(x + b)
    second = 2 * (1 - s * s) * (1 - 3 * s * s)
    np.testing.assert_allclose(hxx, np.diag(second), rtol=1e-10)
    np.testing.assert_allclose(hxb, second, rtol=1e-10)
    np.testing.assert_allclose(hbx, second, rtol=1e-10)
    assert hbb == pytest.approx(np.sum(second), rel=1e-10)


def fd_hvp(f, primals, tangents, h=1e-5):
    """A central difference of derivo.grad(f) (w.r.t. every argument) along tangents."""
    gradient = derivo.grad(f, wrt=tuple(range(len(primals))))
    up = gradient(*[p + h * t for p, t in zip(primals, tangents)])
    down = gradient(*[p - h * t for p, t in zip(primals, tangents)])
    return [(u - d) / (2 * h) for u, d in zip(up, down)]


def scaled_gram(x, c):
    return c * np.sum(x.T @ x)


# (with two arguments or more: see test_hvp_of_a_function_of_one_array)
HVPS = [(layer, (X0, W0)), (with_bias, (X0, point(40, 3))), (scaled_gram, (point(41, 3, 2), 2.0)),
        (mlp_loss, MLP)]


@pytest.mark.parametrize("f, primals", HVPS, ids=[f.__name__ for f, _ in HVPS])
def test_hvp_matches_finite_differences_of_the_gradient(f, primals):
    rng = np.random.default_rng(len(primals))
    tangents = [random_like(rng, p) for p in primals]
    gradient = derivo.grad(f, wrt=tuple(range(len(primals))))(*primals)
    for index, g in enumerate(gradient):  # a wrong gradient would have a matching wrong hvp
        np.testing.assert_allclose(g, numeric_gradient(f, list(primals), index), rtol=1e-6,
                                   atol=1e-8)
    got = derivo.hvp(f, primals, tangents)
    expected = fd_hvp(f, primals, tangents)
    assert len(got) == len(primals)
    for g, e, p in zip(got, expected, primals):
        assert np.shape(g) == np.shape(p)
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-8)


def test_hvp_against_the_hessian():
    x, v = point(50, 3), point(51, 3)
    hessian = derivo.hessian(with_bias, wrt=("x", "b"))(x, 0.4)
    hx, hb = derivo.hvp(with_bias, (x, 0.4), (v, 0.5))
    np.testing.assert_allclose(hx, hessian[0][0] @ v + hessian[0][1] * 0.5, rtol=1e-10)
    assert hb == pytest.approx(hessian[1][0] @ v + hessian[1][1] * 0.5, rel=1e-10)


def test_hvp_of_a_function_of_one_array():
    x, v = point(60, 4), point(61, 4)
    (product,) = derivo.hvp(cubes, (x,), (v,))
    np.testing.assert_allclose(product, 6 * x * v, rtol=1e-12)


def test_hessian_of_a_function_of_a_matrix():
    x = point(62, 3, 2)
    hessian = derivo.hessian(gram)(x)
    np.testing.assert_allclose(np.reshape(hessian, (6, 6)), np.kron(np.eye(3), 2 * np.ones((2, 2))))


def squares_of(x):
    return np.sum(x.T * x)


def through_a_helper(v):
    return squares_of(v * 1.0)


def test_gradient_through_an_inlined_helper():
    v = point(64, 4)
    np.testing.assert_allclose(derivo.grad(through_a_helper)(v), 2 * v, rtol=1e-12)
    np.testing.assert_allclose(derivo.hessian(through_a_helper)(v), 2 * np.eye(4), rtol=1e-12)


def restores_a_write(x):
    y = x * 2.0
    z = np.sum(y * x)
    y[0] = 5.0 * x[0]
    return z + np.sum(y ** 2)


def test_hessian_through_a_restored_write():
    x = point(63, 3)
    np.testing.assert_allclose(derivo.hessian(restores_a_write)(x), np.diag([54.0, 12.0, 12.0]),
                               rtol=1e-12)


def test_hessian_through_writes_lists_and_stacks():
    """Gradient code with zeroed/part/add_adjoints (writes into an array),
    add_adjoints of lists, pop_adjoint and unstack (a list grown in a loop)."""
    for f, n in ((writes_in_place, 3), (list_of_values, 3), (stacked_in_a_loop, 4),
                 (list_of_arrays, 4), (norms_and_products, 4), (einsum_of_a_matrix, 6),
                 (transposed, 12), (row_maxima, 12), (concatenated, 4)):
        x = np.random.default_rng(n).uniform(0.5, 1.5, size=n)
        # the gradient first: a wrong gradient would have a matching wrong Hessian
        np.testing.assert_allclose(derivo.grad(f)(x), fd_gradient(f, x), rtol=1e-6,
                                   atol=1e-8, err_msg=f.__name__)
        hessian = derivo.hessian(f)(x)
        np.testing.assert_allclose(hessian, fd_hessian(f, x), rtol=1e-6, atol=1e-7,
                                   err_msg=f.__name__)
        np.testing.assert_allclose(hessian, hessian.T, rtol=1e-9, atol=1e-10,
                                   err_msg=f.__name__)


def writes_in_place(x):
    y = np.zeros(3)
    y[0] = x[0] ** 2
    y[1:] = x[1:] * x[0]
    y[2] = y[2] * x[1]
    return np.sum(y ** 2)


def list_of_values(x):
    xs = [x[0] ** 2, x[1] * x[0], np.sin(x[2])]
    return xs[0] * xs[1] + xs[1] * xs[2] + xs[2] ** 2


def stacked_in_a_loop(x):
    parts = []
    for i in range(3):
        parts.append(x[i] * x)
    return np.sum(np.stack(parts) ** 2)


def list_of_arrays(x):
    xs = [x[:2] * x[2], x[1:] ** 2]
    return np.sum(xs[0] ** 2) * np.sum(xs[1] ** 3)


def norms_and_products(x):
    return np.linalg.norm(x) ** 3 + np.dot(x, x) * np.inner(x, x ** 2)


def einsum_of_a_matrix(v):
    x = np.reshape(v, (2, 3))
    return np.einsum("ij,ij->", x, x ** 2) + np.sum(np.einsum("ij,kj->ik", x, x) ** 2)


def transposed(v):
    x = np.reshape(v, (2, 3, 2))
    return np.sum(np.transpose(x, (1, 0, 2)) ** 3 * np.arange(12.0).reshape(3, 2, 2))


def row_maxima(v):
    x = np.reshape(v, (3, 4))
    return np.sum(np.max(x, axis=1) ** 2) + np.sum(np.min(x ** 2, axis=0, keepdims=True))


def concatenated(x):
    y = np.concatenate([x, x ** 2])
    return np.sum(np.sin(y) * y)


def test_generated_code_compiles_without_warnings(tmp_path):
    """The transpose_vjp rule reads literal axes without ``is`` (``(2, 0, 1)[0] is
    None`` would make Python emit a SyntaxWarning)."""
    import warnings

    p = Probe(None, "transpose_vjp(x0, (2, 0, 1))", (normal(2, 3, 4),))
    arguments = p.arguments()
    module = load(tmp_path, PRELUDE, p, arguments, "runtime")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        derivo.vjp(module.probe, *arguments)[1](np.ones((3, 4, 2)))
        derivo.hessian(transposed)(np.linspace(0.5, 1.5, 12))
    assert not [str(w.message) for w in caught]


def test_the_tangent_of_an_einsum_adjoint_takes_a_zero_for_an_operand_nothing_reaches():
    # forward mode gives an operand nothing differentiated reaches the tangent 0.0
    rng = np.random.default_rng(3)
    A, x, adjoint, dx = rng.normal(size=(3, 4)), rng.normal(size=3), rng.normal(size=4), \
        rng.normal(size=3)
    with_zero = runtime.einsum_vjp_operands_jvp([0.0, dx], adjoint, "ij,i->j", [A, x], 0)
    with_zeros = runtime.einsum_vjp_operands_jvp([np.zeros((3, 4)), dx], adjoint, "ij,i->j",
                                                 [A, x], 0)
    np.testing.assert_allclose(with_zero, with_zeros)
    np.testing.assert_allclose(with_zero, np.outer(dx, adjoint))




def interpolated(x):
    return np.sum(np.interp(x, np.array([0.0, 1.0, 4.0]) * x[0], [1.0, 3.0, 2.0]) ** 2)


def chained(x):
    return np.sum(np.linalg.multi_dot([np.outer(x, x), np.outer(x, x ** 2), x]))


def eigenvalues(x):
    return np.sum(np.linalg.eigvalsh(np.outer(x, x) + np.diag(x)) ** 3)


def solved_in_the_matrix(x):
    return np.sum(scipy.linalg.solve_triangular(np.outer(x, x) + np.eye(3), x, lower=True) ** 2)


@pytest.mark.parametrize("f, helper", [(interpolated, "interp_x_vjp"), (chained, "multi_dot_vjp"),
                                       (eigenvalues, "eigvalsh_vjp"),
                                       (solved_in_the_matrix, "solve_triangular_vjp_a")])
def test_a_hessian_through_an_adjoint_with_no_rule_is_refused_by_name(f, helper):
    """These adjoints have no rule here (interp_x_vjp none in the knots xp): the
    Hessian names them instead of a wrong number."""
    with pytest.raises(derivo.DerivoError, match=helper):
        derivo.hessian(f)(np.array([0.5, 1.5, 2.0]))
