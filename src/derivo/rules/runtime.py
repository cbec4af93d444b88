"""Derivatives of derivo's own runtime helpers, so generated code is differentiable.

``derivo.grad`` of a NumPy function writes code that calls the helpers of
:mod:`derivo.runtime` (``unbroadcast``, ``expand``, ``matmul_vjp_left``, ...).
``derivo.hessian`` and ``derivo.hvp`` run forward mode over that code (forward
over reverse), so every helper the generated code calls needs a rule, like any
NumPy function: a VJP (what ``defvjp`` registers; reverse mode through a helper
called directly) and a JVP (``defjvp``; what forward over reverse uses).

The helpers are linear in the adjoint they move around (bilinear, for the VJPs
of products: linear in the adjoint and in the other factor).  So each gets, per
differentiated argument, a JVP that is the helper applied to the tangent and a
VJP that is the helper's transpose (``unbroadcast`` sums, its transpose
broadcasts back).  Arguments that only give shapes, axes, indices or select
positions (``like``, ``axis``, ``index``, the ``ans`` of ``extremum_vjp``) get
CONSTANT: the result does not vary with them (almost everywhere).

The helpers of :mod:`derivo.adjoints` and :mod:`derivo.linalg_adjoints` that
NumPy's rules call (``reverse_cumsum``, ``diff_vjp``, ``tile_vjp``, ``gathered_vjp``,
``tensordot_vjp_a``...) are here too, and the helpers that only give positions or
weights are constants.  ``prod_vjp`` is not linear in its array: the
product of the other elements, whose tangent (``others_product_jvp``) is exact
where the array holds zeros; ``cumprod_vjp``'s is exact away from zeros and
refused at them.

Not here: the helpers of ``loops="checkpoint"``; the tangents the rules here call
(``others_product_jvp``, ``einsum_vjp_operands_jvp``, ``cumprod_second``: a third
derivative of array code is refused); and the adjoints whose derivatives need more than a line:
np.interp's in its knots xp (``interp_xp_vjp``, and the others' changes with xp),
those of np.linalg.multi_dot and matrix_power, and those of the decompositions
and solves in their matrices (``eigh_vjp``, ``svd_vjp``, ``solve_triangular_vjp_a``...:
not linear in them).  ``derivo.hessian`` refuses each of those by name;
tests/rules/test_runtime.py lists them.
"""

import numpy as np

from ..runtime import (add_adjoints, add_at, add_at_in_place, add_field, add_field_in_place,
                       addable, as_array, copy_of, copy_vjp, copysign_one, dot_vjp_left,
                       dot_vjp_right, einsum_vjp, einsum_vjp_operands_jvp, einsum_vjp_operands_vjp, expand, extremum_vjp, field_vjp,
                       first_equal_vjp, getitem_vjp, holds_no_zero, hstack_vjp, inner_vjp_left,
                       inner_vjp_right, is_real, items_vjp, key_of, kind_of, log, log_times,
                       matmul_vjp_left, matmul_vjp_right, norm_vjp, one_like,
                       others_product_jvp, owned, part, prod_vjp,
                       pop_adjoint, pop_adjoint_in_place, power_exponent_jvp, raised,
                       reduced_share, scalar_seed, shaped_like, size, sort_like, split_like,
                       stored_part, stored_tangent,
                       stop_gradient, sum_vjp, swap_last, tangent_owned, transpose_vjp, transposed,
                       unbroadcast, unknown_item, unshared, unsort, unpacked_vjp, unstack, values_vjp, vstack_vjp, zero_as,
                       zero_gradient, zeroed, zeroed_in_place, zeros_for)
from ..adjoints import (appended_sources, average_weights, column_stack_vjp, convolve_vjp,
                        cumprod_jvp, cumprod_second, cumprod_second_tangent, cumprod_vjp,
                        convolved_cut, correlate_mode, correlate_vjp, diag_vjp, diff_vjp,
                        gathered_vjp, gradient_vjp, interp_fp_jvp, interp_fp_vjp,
                        interp_slope_vjp, interp_x_vjp, pad_sources, partition_sources,
                        positions, ptp_weights, quantile_jvp, quantile_vjp, repeat_vjp,
                        reverse_cumsum, reversed_conj, rollaxis_vjp, select_choices, select_vjp,
                        flipped_trans, solve_triangular_jvp_a, solve_triangular_vjp_a,
                        solve_triangular_vjp_b, split_vjp, tile_vjp, trapezoid_weights)
from ..linalg_adjoints import (block_diag_jvp, block_diag_vjp, cross_vjp, fft_axes, fftn_vjp,
                               irfftn_vjp, kron_vjp, real_like, rfftn_transpose, rfftn_vjp,
                               tensordot_vjp_a, tensordot_vjp_b, trace_vjp)
from . import CONSTANT, defjvp, defpartials, defvjp, nondifferentiable

# --- constants -------------------------------------------------------------------------

# The seed 1.0 and zero gradients do not vary with their argument; the sign
# abs() sees is a step function.
nondifferentiable(scalar_seed, zero_gradient, zeros_for, copysign_one, one_like)
# unshared only checks (and returns None); raised tells which way a try went; the
# others read an array's size (or its share of a mean) and dtype.
nondifferentiable(unshared, raised, size, reduced_share, kind_of, is_real)
# unknown_item makes the error a branch over a list's items raises where none matched
nondifferentiable(unknown_item)
# Where each element of a selection came from (integer positions, which move with
# the array's values only in steps, as a sort's order does; select_choices reads
# boolean conditions).
nondifferentiable(positions, pad_sources, appended_sources, partition_sources, select_choices)
# Weights that do not vary with the array: ptp's shares of its max and min are
# a step function of it, and np.average's and np.trapezoid's weights are built
# from options a derivative refuses to differentiate (the array gives a shape).
nondifferentiable(ptp_weights, average_weights, trapezoid_weights)
# the axes an n-dimensional transform of np.fft runs along
nondifferentiable(fft_axes)
# whether an array holds no zero (a step function of it)
nondifferentiable(holds_no_zero)

# --- the scalar helpers of the builtins table ------------------------------------------

defpartials(log, lambda ans, x: 1 / x)
# NaN or inf where x <= 0 (np.divide: a float 0 / 0 raises), as log_times gives NaN
defpartials(log_times, lambda result, power, x: log(x), lambda result, power, x: np.divide(power, x))
defpartials(power_exponent_jvp, lambda result, t, power, x: log_times(power, x),
            lambda result, t, power, x: t * log(x), lambda result, t, power, x: t * np.divide(power, x))

# --- broadcasting and reductions -----------------------------------------------------

defvjp(transposed, lambda g, ans, value: transposed(g), returns=0)
defjvp(transposed, lambda t, ans, value: transposed(t))
defvjp(as_array, lambda g, ans, value: g, returns=0)
defjvp(as_array, lambda t, ans, value: as_array(t))

# unbroadcast sums over broadcast axes; its transpose broadcasts back.
defvjp(unbroadcast, lambda g, ans, adjoint, like: np.broadcast_to(g, np.shape(adjoint)), CONSTANT)
defjvp(unbroadcast, lambda t, ans, adjoint, like: unbroadcast(t, like), CONSTANT)
# expand broadcasts a reduction's adjoint back; its transpose is the reduction.
defvjp(expand, lambda g, ans, adjoint, like, axis, keepdims: unbroadcast(np.sum(g, axis=axis, keepdims=keepdims), adjoint), CONSTANT, CONSTANT, CONSTANT)
defjvp(expand, lambda t, ans, adjoint, like, axis, keepdims: expand(t, like, axis, keepdims), CONSTANT, CONSTANT, CONSTANT)
# shaped_like broadcasts when a zero adjoint was a plain 0.0.
defvjp(shaped_like, lambda g, ans, adjoint, like: unbroadcast(g, adjoint), CONSTANT)
defjvp(shaped_like, lambda t, ans, adjoint, like: shaped_like(t, like), CONSTANT)
# The elements attaining max/min are fixed near a point (ties aside): only the
# adjoint is differentiated, and the transpose weighs g by the same shares.
defvjp(extremum_vjp, lambda g, ans, adjoint, top, like, axis, keepdims: np.sum(g * extremum_vjp(np.ones(np.shape(top)), top, like, axis, keepdims), axis=axis, keepdims=keepdims), CONSTANT, CONSTANT, CONSTANT, CONSTANT)
defjvp(extremum_vjp, lambda t, ans, adjoint, top, like, axis, keepdims: extremum_vjp(t, top, like, axis, keepdims), CONSTANT, CONSTANT, CONSTANT, CONSTANT)
# norm_vjp = expand(adjoint / norm) * x: a product, each factor differentiated.
defvjp(norm_vjp, lambda g, ans, adjoint, norm, x, ord, axis, keepdims: np.sum(g * x, axis=axis, keepdims=keepdims) / norm,
       lambda g, ans, adjoint, norm, x, ord, axis, keepdims: -np.sum(g * x, axis=axis, keepdims=keepdims) * adjoint / (norm * norm),
       lambda g, ans, adjoint, norm, x, ord, axis, keepdims: norm_vjp(adjoint, norm, g, ord, axis, keepdims), CONSTANT, CONSTANT, CONSTANT)
defjvp(norm_vjp, lambda t, ans, adjoint, norm, x, ord, axis, keepdims: norm_vjp(t, norm, x, ord, axis, keepdims),
       lambda t, ans, adjoint, norm, x, ord, axis, keepdims: -norm_vjp(adjoint * t / norm, norm, x, ord, axis, keepdims),
       lambda t, ans, adjoint, norm, x, ord, axis, keepdims: norm_vjp(adjoint, norm, t, ord, axis, keepdims), CONSTANT, CONSTANT, CONSTANT)

# --- the adjoints of NumPy's functions (derivo.adjoints, derivo.linalg_adjoints) -----

# The adjoints of NumPy's cumulative sums, differences, repeats, tiles, traces and
# of the functions that select elements (np.sort, np.take, np.pad, np.diagonal...,
# through gathered_vjp).  Each is linear in the adjoint, so its tangent is itself
# applied to the tangent, and its transpose is the NumPy function it is the
# adjoint of, applied to g.
# reverse_cumsum sums from the end (over the flattened array with axis None).
defvjp(reverse_cumsum, lambda g, ans, adjoint, like, axis: np.cumsum(g, axis), CONSTANT, CONSTANT)
defjvp(reverse_cumsum, lambda t, ans, adjoint, like, axis: reverse_cumsum(t, like, axis), CONSTANT, CONSTANT)
# cumprod_vjp(adjoint, product, a, axis) and cumprod_jvp(tangent, product, a, axis)
# are linear in the adjoint (the tangent) and each other's transpose; in a, both move
# by cumprod_second or cumprod_second_tangent, the products' second derivatives
# contracted with the two directions.  ``product`` is np.cumprod(a): CONSTANT, as
# prod_vjp's below.
defvjp(cumprod_vjp, lambda g, ans, adjoint, product, a, axis: cumprod_jvp(g, product, a, axis), CONSTANT,
       lambda g, ans, adjoint, product, a, axis: cumprod_second(adjoint, g, product, a, axis), CONSTANT)
defjvp(cumprod_vjp, lambda t, ans, adjoint, product, a, axis: cumprod_vjp(t, product, a, axis), CONSTANT,
       lambda t, ans, adjoint, product, a, axis: cumprod_second(adjoint, t, product, a, axis), CONSTANT)
defvjp(cumprod_jvp, lambda g, ans, tangent, product, a, axis: cumprod_vjp(g, product, a, axis), CONSTANT,
       lambda g, ans, tangent, product, a, axis: cumprod_second(g, tangent, product, a, axis), CONSTANT)
defjvp(cumprod_jvp, lambda t, ans, tangent, product, a, axis: cumprod_jvp(t, product, a, axis), CONSTANT,
       lambda t, ans, tangent, product, a, axis: cumprod_second_tangent(tangent, t, product, a, axis), CONSTANT)
defvjp(diff_vjp, lambda g, ans, adjoint, n, axis: np.diff(g, n, axis), CONSTANT, CONSTANT)
defjvp(diff_vjp, lambda t, ans, adjoint, n, axis: diff_vjp(t, n, axis), CONSTANT, CONSTANT)
# (np.diag of a vector's adjoint, a matrix, takes its diagonal, and the other way round)
defvjp(diag_vjp, lambda g, ans, adjoint, v, k: np.diag(g, k), CONSTANT, CONSTANT)
defjvp(diag_vjp, lambda t, ans, adjoint, v, k: diag_vjp(t, v, k), CONSTANT, CONSTANT)
defvjp(repeat_vjp, lambda g, ans, adjoint, like, repeats, axis: np.repeat(g, repeats, axis), CONSTANT, CONSTANT, CONSTANT)
defjvp(repeat_vjp, lambda t, ans, adjoint, like, repeats, axis: repeat_vjp(t, like, repeats, axis), CONSTANT, CONSTANT, CONSTANT)
defvjp(tile_vjp, lambda g, ans, adjoint, like, reps: np.tile(g, reps), CONSTANT, CONSTANT)
defjvp(tile_vjp, lambda t, ans, adjoint, like, reps: tile_vjp(t, like, reps), CONSTANT, CONSTANT)
defvjp(rollaxis_vjp, lambda g, ans, adjoint, like, axis, start: np.rollaxis(g, axis, start), CONSTANT, CONSTANT, CONSTANT)
defjvp(rollaxis_vjp, lambda t, ans, adjoint, like, axis, start: rollaxis_vjp(t, like, axis, start), CONSTANT, CONSTANT, CONSTANT)
defvjp(trace_vjp, lambda g, ans, adjoint, a, offset, axis1, axis2: np.trace(g, offset, axis1, axis2), CONSTANT, CONSTANT, CONSTANT, CONSTANT)
defjvp(trace_vjp, lambda t, ans, adjoint, a, offset, axis1, axis2: trace_vjp(t, a, offset, axis1, axis2), CONSTANT, CONSTANT, CONSTANT, CONSTANT)
# gathered_vjp sums the adjoint onto the flat positions ``sources`` (-1: none);
# its transpose reads g back at them (0 where from none), summed to the
# adjoint's shape where the adjoint was broadcast to the sources'.
defvjp(gathered_vjp, lambda g, ans, adjoint, like, sources: unbroadcast(np.where(np.asarray(sources) < 0, 0.0, np.ravel(g)[sources]), adjoint), CONSTANT, CONSTANT)
defjvp(gathered_vjp, lambda t, ans, adjoint, like, sources: gathered_vjp(t, like, sources), CONSTANT, CONSTANT)
# quantile_vjp weighs two order statistics, fixed near a point (ties aside): the
# transpose is the quantile's own tangent (quantile_jvp), in the adjoint's shape.
defvjp(quantile_vjp, lambda g, ans, adjoint, a, q, axis, keepdims, method: unbroadcast(quantile_jvp(g, adjoint, a, q, axis, keepdims, method), adjoint), CONSTANT, CONSTANT, CONSTANT, CONSTANT, CONSTANT)
defjvp(quantile_vjp, lambda t, ans, adjoint, a, q, axis, keepdims, method: quantile_vjp(t, a, q, axis, keepdims, method), CONSTANT, CONSTANT, CONSTANT, CONSTANT, CONSTANT)

# gradient_vjp is the transpose of np.gradient's stencils (one adjoint per axis
# differentiated along, a list of them for several): its transpose is np.gradient.
defvjp(gradient_vjp, lambda g, ans, adjoint, f, spacing, axis, edge_order: np.gradient(g, *spacing, axis=axis, edge_order=edge_order), CONSTANT, CONSTANT, CONSTANT, CONSTANT)
defjvp(gradient_vjp, lambda t, ans, adjoint, f, spacing, axis, edge_order: gradient_vjp(t, f, spacing, axis, edge_order), CONSTANT, CONSTANT, CONSTANT, CONSTANT)
# Pieces of an adjoint, one per array: joining them back is the transpose, as
# for hstack_vjp.  np.select's choices each take the adjoint where they were
# chosen (select_choices): the transpose adds each choice's g where it was.
defvjp(column_stack_vjp, lambda g, ans, adjoint, arrays: np.reshape(np.column_stack(list(map(np.broadcast_to, g, map(np.shape, ans)))), np.shape(adjoint)), CONSTANT)
defjvp(column_stack_vjp, lambda t, ans, adjoint, arrays: column_stack_vjp(t, arrays), CONSTANT)
defvjp(split_vjp, lambda g, ans, adjoint, pieces, axis: split_like(g, pieces, axis), CONSTANT, CONSTANT)
defjvp(split_vjp, lambda t, ans, adjoint, pieces, axis: split_vjp(t, pieces, axis), CONSTANT, CONSTANT)
defvjp(select_vjp, lambda g, ans, adjoint, condlist, choicelist: unbroadcast(sum(np.where(select_choices(condlist) == index, part, 0.0) for index, part in enumerate(g)), adjoint), CONSTANT, CONSTANT)
defjvp(select_vjp, lambda t, ans, adjoint, condlist, choicelist: select_vjp(t, condlist, choicelist), CONSTANT, CONSTANT)

# The adjoints of np.fft's transforms are transforms of the adjoint, and real_like
# takes the real part of one for a real argument; its transpose gives g back (the
# adjoint of a real part, as np.real's rule).  fftn_vjp is the transform fitted to
# a's lengths: its transpose is the same transform (the DFT matrix is symmetric)
# of g at the adjoint's lengths, which np.fft pads or cuts to as the fitting's
# transpose does.  rfftn_vjp pads a half spectrum and takes the real part.
defvjp(real_like, lambda g, ans, value, like: g, CONSTANT)
defjvp(real_like, lambda t, ans, value, like: real_like(t, like), CONSTANT)
defvjp(fftn_vjp, lambda g, ans, adjoint, a, axes, norm, inverse: real_like(np.fft.ifftn(g, [np.shape(adjoint)[i] for i in axes], axes, norm) if inverse else np.fft.fftn(g, [np.shape(adjoint)[i] for i in axes], axes, norm), adjoint), CONSTANT, CONSTANT, CONSTANT, CONSTANT)
defjvp(fftn_vjp, lambda t, ans, adjoint, a, axes, norm, inverse: fftn_vjp(t, a, axes, norm, inverse), CONSTANT, CONSTANT, CONSTANT, CONSTANT)
defvjp(rfftn_vjp, lambda g, ans, adjoint, a, s, axes, norm: rfftn_transpose(g, adjoint, a, s, axes, norm), CONSTANT, CONSTANT, CONSTANT, CONSTANT)
defjvp(rfftn_vjp, lambda t, ans, adjoint, a, s, axes, norm: rfftn_vjp(t, a, s, axes, norm), CONSTANT, CONSTANT, CONSTANT, CONSTANT)
# irfftn_vjp is the transpose of np.fft.irfftn (the pairing of a complex adjoint c
# with z, Re(c z), is symmetric), so its transpose is irfftn again.
defvjp(irfftn_vjp, lambda g, ans, adjoint, a, s, axes, norm: np.fft.irfftn(g, s, axes, norm), CONSTANT, CONSTANT, CONSTANT, CONSTANT)
defjvp(irfftn_vjp, lambda t, ans, adjoint, a, s, axes, norm: irfftn_vjp(t, a, s, axes, norm), CONSTANT, CONSTANT, CONSTANT, CONSTANT)
# block_diag_vjp reads an array's block of the adjoint; block_diag_jvp, which puts
# it in its place among zeros, is its transpose.
defvjp(block_diag_vjp, lambda g, ans, adjoint, arrays, index: block_diag_jvp(g, arrays, index), CONSTANT, CONSTANT)
defjvp(block_diag_vjp, lambda t, ans, adjoint, arrays, index: block_diag_vjp(t, arrays, index), CONSTANT, CONSTANT)

# np.interp's adjoints in x and fp, where the segment each x falls in is fixed
# (knots aside).  interp_x_vjp is the adjoint times the slope of fp, linear in fp:
# interp_slope_vjp is that slope's transpose, spreading each x's share over its
# segment's knots.  interp_fp_vjp weighs the two knots by 1 - f and f, and f moves
# with x by 1 / width: the same spread of the adjoint times x's tangent, whose
# transpose is the slope again.  Their changes with the knots xp are not here (None:
# a Hessian in xp is refused).
defvjp(interp_x_vjp, lambda g, ans, adjoint, x, xp, fp, left, right, period: interp_x_vjp(g, x, xp, fp, left, right, period), CONSTANT, None,
       lambda g, ans, adjoint, x, xp, fp, left, right, period: interp_slope_vjp(adjoint * g, x, xp, fp, left, right, period), CONSTANT, CONSTANT, CONSTANT)
defjvp(interp_x_vjp, lambda t, ans, adjoint, x, xp, fp, left, right, period: interp_x_vjp(t, x, xp, fp, left, right, period), CONSTANT, None,
       lambda t, ans, adjoint, x, xp, fp, left, right, period: interp_x_vjp(adjoint, x, xp, t, left, right, period), CONSTANT, CONSTANT, CONSTANT)
defvjp(interp_fp_vjp, lambda g, ans, adjoint, x, xp, fp, left, right, period: interp_fp_jvp(g, x, xp, left, right, period),
       lambda g, ans, adjoint, x, xp, fp, left, right, period: interp_x_vjp(adjoint, x, xp, g, left, right, period), None, CONSTANT, CONSTANT, CONSTANT, CONSTANT)
defjvp(interp_fp_vjp, lambda t, ans, adjoint, x, xp, fp, left, right, period: interp_fp_vjp(t, x, xp, fp, left, right, period),
       lambda t, ans, adjoint, x, xp, fp, left, right, period: interp_slope_vjp(adjoint * t, x, xp, fp, left, right, period), None, CONSTANT, CONSTANT, CONSTANT, CONSTANT)

# prod_vjp(adjoint, product, like, axis, keepdims) is expand(adjoint) times the product
# of the other elements of like, which is not linear in like: its tangent in like is
# others_product_jvp's, and that is symmetric in the tangent and the weight it is
# transposed against (both sums over pairs j != i of prod_{k != i, j} like_k).
# ``product`` is np.prod(like), which the helper reads only to divide it where like
# has no zero: CONSTANT, as its changes are like's, which the rules in like count.
defvjp(prod_vjp, lambda g, ans, adjoint, product, like, axis, keepdims: unbroadcast(np.sum(g * prod_vjp(np.ones(np.shape(product)), product, like, axis, keepdims), axis=axis, keepdims=keepdims), adjoint), CONSTANT,
       lambda g, ans, adjoint, product, like, axis, keepdims: others_product_jvp(g * expand(adjoint, like, axis, keepdims), like, axis), CONSTANT, CONSTANT)
defjvp(prod_vjp, lambda t, ans, adjoint, product, like, axis, keepdims: prod_vjp(t, product, like, axis, keepdims), CONSTANT,
       lambda t, ans, adjoint, product, like, axis, keepdims: expand(adjoint, like, axis, keepdims) * others_product_jvp(t, like, axis), CONSTANT, CONSTANT)

# --- products: bilinear in the adjoint and the other factor --------------------------

# <matmul_vjp_left(adjoint, a, b), x> = <adjoint, x @ b>: the adjoint's transpose
# is g @ b and b's is the right VJP with g in a's place (and the other way round).
defvjp(matmul_vjp_left, lambda g, ans, adjoint, a, b: np.matmul(g, b), CONSTANT,
       lambda g, ans, adjoint, a, b: matmul_vjp_right(adjoint, g, b))
defjvp(matmul_vjp_left, lambda t, ans, adjoint, a, b: matmul_vjp_left(t, a, b), CONSTANT,
       lambda t, ans, adjoint, a, b: matmul_vjp_left(adjoint, a, t))
defvjp(matmul_vjp_right, lambda g, ans, adjoint, a, b: np.matmul(a, g),
       lambda g, ans, adjoint, a, b: matmul_vjp_left(adjoint, a, g), CONSTANT)
defjvp(matmul_vjp_right, lambda t, ans, adjoint, a, b: matmul_vjp_right(t, a, b),
       lambda t, ans, adjoint, a, b: matmul_vjp_right(adjoint, t, b), CONSTANT)
defvjp(dot_vjp_left, lambda g, ans, adjoint, a, b: np.dot(g, b), CONSTANT,
       lambda g, ans, adjoint, a, b: dot_vjp_right(adjoint, g, b))
defjvp(dot_vjp_left, lambda t, ans, adjoint, a, b: dot_vjp_left(t, a, b), CONSTANT,
       lambda t, ans, adjoint, a, b: dot_vjp_left(adjoint, a, t))
defvjp(dot_vjp_right, lambda g, ans, adjoint, a, b: np.dot(a, g),
       lambda g, ans, adjoint, a, b: dot_vjp_left(adjoint, a, g), CONSTANT)
defjvp(dot_vjp_right, lambda t, ans, adjoint, a, b: dot_vjp_right(t, a, b),
       lambda t, ans, adjoint, a, b: dot_vjp_right(adjoint, t, b), CONSTANT)
defvjp(inner_vjp_left, lambda g, ans, adjoint, a, b: np.inner(g, b), CONSTANT,
       lambda g, ans, adjoint, a, b: inner_vjp_right(adjoint, g, b))
defjvp(inner_vjp_left, lambda t, ans, adjoint, a, b: inner_vjp_left(t, a, b), CONSTANT,
       lambda t, ans, adjoint, a, b: inner_vjp_left(adjoint, a, t))
defvjp(inner_vjp_right, lambda g, ans, adjoint, a, b: np.inner(a, g),
       lambda g, ans, adjoint, a, b: inner_vjp_left(adjoint, a, g), CONSTANT)
defjvp(inner_vjp_right, lambda t, ans, adjoint, a, b: inner_vjp_right(t, a, b),
       lambda t, ans, adjoint, a, b: inner_vjp_right(adjoint, t, b), CONSTANT)
# tensordot_vjp_a(adjoint, a, b, axes) contracts the adjoint with b (a gives a
# shape): <tensordot_vjp_a(G, a, b), x> = <G, tensordot(x, b)>, so the adjoint's
# transpose is tensordot(g, b) and b's the other VJP with g in a's place.
defvjp(tensordot_vjp_a, lambda g, ans, adjoint, a, b, axes: np.tensordot(g, b, axes), CONSTANT,
       lambda g, ans, adjoint, a, b, axes: tensordot_vjp_b(adjoint, g, b, axes), CONSTANT)
defjvp(tensordot_vjp_a, lambda t, ans, adjoint, a, b, axes: tensordot_vjp_a(t, a, b, axes), CONSTANT,
       lambda t, ans, adjoint, a, b, axes: tensordot_vjp_a(adjoint, a, t, axes), CONSTANT)
defvjp(tensordot_vjp_b, lambda g, ans, adjoint, a, b, axes: np.tensordot(a, g, axes),
       lambda g, ans, adjoint, a, b, axes: tensordot_vjp_a(adjoint, a, g, axes), CONSTANT, CONSTANT)
defjvp(tensordot_vjp_b, lambda t, ans, adjoint, a, b, axes: tensordot_vjp_b(t, a, b, axes),
       lambda t, ans, adjoint, a, b, axes: tensordot_vjp_b(adjoint, t, b, axes), CONSTANT, CONSTANT)
# kron_vjp(adjoint, a, b, first) is the adjoint in a (first: weighed by b, a gives a
# shape) or in b (weighed by a): <kron_vjp(G, x, b, True), a> = <G, kron(a, b)> =
# <kron_vjp(G, a, x, False), b>.  The factor that gives a shape has no derivative.
defvjp(kron_vjp, lambda g, ans, adjoint, a, b, first: np.kron(g, b) if first else np.kron(a, g),
       lambda g, ans, adjoint, a, b, first: np.zeros(np.shape(a)) if first else kron_vjp(adjoint, a, g, True),
       lambda g, ans, adjoint, a, b, first: kron_vjp(adjoint, g, b, False) if first else np.zeros(np.shape(b)), CONSTANT)
defjvp(kron_vjp, lambda t, ans, adjoint, a, b, first: kron_vjp(t, a, b, first),
       lambda t, ans, adjoint, a, b, first: np.zeros(np.shape(ans)) if first else kron_vjp(adjoint, t, b, False),
       lambda t, ans, adjoint, a, b, first: kron_vjp(adjoint, a, t, True) if first else np.zeros(np.shape(ans)), CONSTANT)
# cross_vjp(adjoint, a, b, ..., first) is b x g in a's shape (first) or g x a in b's:
# the adjoint of x -> x x b (of x -> a x x), so the adjoint's transpose is that map.
# It is linear in the other vector too: <b x G, x> = <b, G x x> and <G x a, x> =
# <a, x x G> give their transposes.  The vector it is the adjoint in gives a shape.
defvjp(cross_vjp, lambda g, ans, adjoint, a, b, axisa, axisb, axisc, axis, first: np.cross(g, b, axisa, axisb, axisc, axis) if first else np.cross(a, g, axisa, axisb, axisc, axis),
       lambda g, ans, adjoint, a, b, axisa, axisb, axisc, axis, first: np.zeros(np.shape(a)) if first else cross_vjp(adjoint, a, g, axisa, axisb, axisc, axis, True),
       lambda g, ans, adjoint, a, b, axisa, axisb, axisc, axis, first: cross_vjp(adjoint, g, b, axisa, axisb, axisc, axis, False) if first else np.zeros(np.shape(b)),
       CONSTANT, CONSTANT, CONSTANT, CONSTANT, CONSTANT)
defjvp(cross_vjp, lambda t, ans, adjoint, a, b, axisa, axisb, axisc, axis, first: cross_vjp(t, a, b, axisa, axisb, axisc, axis, first),
       lambda t, ans, adjoint, a, b, axisa, axisb, axisc, axis, first: np.zeros(np.shape(ans)) if first else cross_vjp(adjoint, t, b, axisa, axisb, axisc, axis, False),
       lambda t, ans, adjoint, a, b, axisa, axisb, axisc, axis, first: cross_vjp(adjoint, a, t, axisa, axisb, axisc, axis, True) if first else np.zeros(np.shape(ans)),
       CONSTANT, CONSTANT, CONSTANT, CONSTANT, CONSTANT)
# convolve_vjp(adjoint, in1, in2, which, correlate) is the adjoint in in1 (which 0)
# or in2 of a convolution cut to a mode: linear in the adjoint and in the other
# argument (the one it is the adjoint of gives a shape).  Its transpose in the
# adjoint is the cut convolution; in the other argument, the other adjoint:
# <G, cut(x * y)> is <x, convolve_vjp(G, x, y, 0)> and <y, convolve_vjp(G, x, y, 1)>.
defvjp(convolve_vjp, lambda g, ans, adjoint, in1, in2, which, correlate: convolved_cut(g, adjoint, in1, in2, which, correlate),
       lambda g, ans, adjoint, in1, in2, which, correlate: np.zeros(np.shape(in1)) if which == 0 else convolve_vjp(adjoint, in1, g, 0, correlate),
       lambda g, ans, adjoint, in1, in2, which, correlate: convolve_vjp(adjoint, g, in2, 1, correlate) if which == 0 else np.zeros(np.shape(in2)), CONSTANT, CONSTANT)
defjvp(convolve_vjp, lambda t, ans, adjoint, in1, in2, which, correlate: convolve_vjp(t, in1, in2, which, correlate),
       lambda t, ans, adjoint, in1, in2, which, correlate: np.zeros(np.shape(ans)) if which == 0 else convolve_vjp(adjoint, t, in2, 1, correlate),
       lambda t, ans, adjoint, in1, in2, which, correlate: convolve_vjp(adjoint, in1, t, 0, correlate) if which == 0 else np.zeros(np.shape(ans)), CONSTANT, CONSTANT)
# reversed_conj (of scipy.signal.correlate's rule) reverses and conjugates: its
# own transpose.
defvjp(reversed_conj, lambda g, ans, x: reversed_conj(g))
defjvp(reversed_conj, lambda t, ans, x: reversed_conj(t))
# correlate_vjp(adjoint, a, v, which), the same for np.correlate(a, v, mode): its
# transpose in the adjoint is np.correlate in the mode the adjoint's length tells.
defvjp(correlate_vjp, lambda g, ans, adjoint, a, v, which: np.correlate(g, v, correlate_mode(adjoint, a, v)) if which == 0 else np.correlate(a, g, correlate_mode(adjoint, a, v)),
       lambda g, ans, adjoint, a, v, which: np.zeros(np.shape(a)) if which == 0 else correlate_vjp(adjoint, a, g, 0),
       lambda g, ans, adjoint, a, v, which: correlate_vjp(adjoint, g, v, 1) if which == 0 else np.zeros(np.shape(v)), CONSTANT)
defjvp(correlate_vjp, lambda t, ans, adjoint, a, v, which: correlate_vjp(t, a, v, which),
       lambda t, ans, adjoint, a, v, which: np.zeros(np.shape(ans)) if which == 0 else correlate_vjp(adjoint, t, v, 1),
       lambda t, ans, adjoint, a, v, which: correlate_vjp(adjoint, a, t, 0) if which == 0 else np.zeros(np.shape(ans)), CONSTANT)
# solve_triangular_vjp_b(adjoint, a, trans, lower) is X = op(A)^-T G, the solve with
# the other of A and A^T (flipped_trans): linear in G, its transpose the solve
# op(A)^-1 g; in A, the tangent and adjoint of that other solve's solution (ans).
defvjp(solve_triangular_vjp_b, lambda g, ans, adjoint, a, trans, lower: solve_triangular_vjp_b(g, a, flipped_trans(trans), lower),
       lambda g, ans, adjoint, a, trans, lower: solve_triangular_vjp_a(g, ans, a, adjoint, flipped_trans(trans), lower), CONSTANT, CONSTANT)
defjvp(solve_triangular_vjp_b, lambda t, ans, adjoint, a, trans, lower: solve_triangular_vjp_b(t, a, trans, lower),
       lambda t, ans, adjoint, a, trans, lower: solve_triangular_jvp_a(t, ans, a, flipped_trans(trans), lower), CONSTANT, CONSTANT)
# einsum_vjp(adjoint, subscripts, operands, index) is the einsum with the adjoint
# in operand index's place: linear in the adjoint and in each other operand; the
# operand at index only gives a shape.
defvjp(einsum_vjp, lambda g, ans, adjoint, subscripts, operands, index: np.einsum(subscripts, *(operands[:index] + [g] + operands[index + 1:])), CONSTANT,
       lambda g, ans, adjoint, subscripts, operands, index: einsum_vjp_operands_vjp(g, adjoint, subscripts, operands, index), CONSTANT)
defjvp(einsum_vjp, lambda t, ans, adjoint, subscripts, operands, index: einsum_vjp(t, subscripts, operands, index), CONSTANT,
       lambda t, ans, adjoint, subscripts, operands, index: einsum_vjp_operands_jvp(t, adjoint, subscripts, operands, index), CONSTANT)

# --- shapes ----------------------------------------------------------------------------

# A permutation of the axes: its transpose is the inverse permutation, the one
# transpose_vjp undoes (``axes`` as transpose_vjp reads it: (), (None,),
# (permutation,) or the permutation's entries).
defvjp(transpose_vjp, lambda g, ans, adjoint, axes: np.transpose(g, tuple(axes[0]) if len(axes) == 1 and np.ndim(axes[0]) == 1 else None if not axes or axes == (None,) else axes), CONSTANT)
defjvp(transpose_vjp, lambda t, ans, adjoint, axes: transpose_vjp(t, axes), CONSTANT)
defvjp(swap_last, lambda g, ans, matrix: swap_last(g))
defjvp(swap_last, lambda t, ans, matrix: swap_last(t))
# Pieces of an adjoint (lists, one per array): joining them back is the
# transpose (a piece's adjoint may be a plain 0.0: it is broadcast to the piece).
defvjp(split_like, lambda g, ans, adjoint, arrays, axis: np.concatenate(list(map(np.broadcast_to, g, map(np.shape, ans))), axis), CONSTANT, CONSTANT)
defjvp(split_like, lambda t, ans, adjoint, arrays, axis: split_like(t, arrays, axis), CONSTANT, CONSTANT)
defvjp(unstack, lambda g, ans, adjoint, arrays, axis: np.stack(list(map(np.broadcast_to, g, map(np.shape, ans))), axis), CONSTANT, CONSTANT)
defjvp(unstack, lambda t, ans, adjoint, arrays, axis: unstack(t, arrays, axis), CONSTANT, CONSTANT)
defvjp(hstack_vjp, lambda g, ans, adjoint, arrays: np.reshape(np.hstack(list(map(np.broadcast_to, g, map(np.shape, ans)))), np.shape(adjoint)), CONSTANT)
defjvp(hstack_vjp, lambda t, ans, adjoint, arrays: hstack_vjp(t, arrays), CONSTANT)
defvjp(vstack_vjp, lambda g, ans, adjoint, arrays: np.reshape(np.vstack(list(map(np.broadcast_to, g, map(np.shape, ans)))), np.shape(adjoint)), CONSTANT)
defjvp(vstack_vjp, lambda t, ans, adjoint, arrays: vstack_vjp(t, arrays), CONSTANT)

# --- indexing --------------------------------------------------------------------------

# getitem_vjp scatters into zeros (adding repeated positions); reading the same
# positions back is its transpose.
defvjp(getitem_vjp, lambda g, ans, adjoint, like, index: g[index], CONSTANT, CONSTANT)
defjvp(getitem_vjp, lambda t, ans, adjoint, like, index: getitem_vjp(t, like, index), CONSTANT, CONSTANT)
# field_vjp is getitem_vjp under the field's key (a NamedTuple's: its position).
defvjp(field_vjp, lambda g, ans, adjoint, like, name: g[key_of(like, name)], CONSTANT, CONSTANT)
defjvp(field_vjp, lambda t, ans, adjoint, like, name: field_vjp(t, like, name), CONSTANT, CONSTANT)

# Of max(xs), min(xs), sorted(xs) and list(xs).  Sorting and putting back in
# place are each other's transpose; copy_vjp's transpose is copy_vjp again, into
# the structure of the copy's adjoint (given as the items).
defvjp(first_equal_vjp, lambda g, ans, adjoint, result, items: g[list(items).index(result)], CONSTANT, CONSTANT)
defjvp(first_equal_vjp, lambda t, ans, adjoint, result, items: first_equal_vjp(t, result, items), CONSTANT, CONSTANT)
defvjp(unsort, lambda g, ans, adjoint, items: sort_like(g, items), CONSTANT)
defjvp(unsort, lambda t, ans, adjoint, items: unsort(t, items), CONSTANT)
defvjp(sort_like, lambda g, ans, tangent, items: unsort(g, items), CONSTANT)
defjvp(sort_like, lambda t, ans, tangent, items: sort_like(t, items), CONSTANT)
defvjp(copy_vjp, lambda g, ans, adjoint, items: copy_vjp(g, adjoint), CONSTANT)
defjvp(copy_vjp, lambda t, ans, adjoint, items: copy_vjp(t, items), CONSTANT)
# sum_vjp repeats the adjoint once per item; its transpose sums the repeats.
defvjp(sum_vjp, lambda g, ans, adjoint, items: unbroadcast(np.sum(np.asarray(g, dtype=float), axis=0), adjoint), CONSTANT)
defjvp(sum_vjp, lambda t, ans, adjoint, items: sum_vjp(t, items), CONSTANT)
# zero_as is the identity, but for the 0.0 that stands for zeros
defvjp(zero_as, lambda g, ans, adjoint, like: unbroadcast(g, adjoint), CONSTANT)
defjvp(zero_as, lambda t, ans, adjoint, like: zero_as(t, like), CONSTANT)

defvjp(part, lambda g, ans, adjoint, index: getitem_vjp(g, adjoint, index) if np.ndim(adjoint) else unbroadcast(g, adjoint), CONSTANT)
defjvp(part, lambda t, ans, adjoint, index: part(t, index), CONSTANT)
# stored_part is part, or zero for an integer array (which stored_tangent zeroes too)
defvjp(stored_part, lambda g, ans, adjoint, array, index: stored_tangent(getitem_vjp(g, adjoint, index) if np.ndim(adjoint) else unbroadcast(g, adjoint), array), CONSTANT, CONSTANT)
defjvp(stored_part, lambda t, ans, adjoint, array, index: stored_part(t, array, index), CONSTANT, CONSTANT)
defvjp(stored_tangent, lambda g, ans, tangent, array: stored_tangent(g, array), CONSTANT)
defjvp(stored_tangent, lambda t, ans, tangent, array: stored_tangent(t, array), CONSTANT)
# zeroed is a projection (it zeroes adjoint[index]): its own transpose.  zeroed_in_place
# is zeroed in place (see derivo.accumulate): the same numbers, the same rules.
for _zeroed in (zeroed, zeroed_in_place):
    defvjp(_zeroed, lambda g, ans, adjoint, index: zeroed(g, index), CONSTANT)
    defjvp(_zeroed, lambda t, ans, adjoint, index: zeroed(t, index), CONSTANT)

# --- copies and sums of adjoints -----------------------------------------------------

defvjp(owned, lambda g, ans, array: g)
defjvp(owned, lambda t, ans, array: owned(t))
# tangent_owned gives its first argument back, or a copy of it.
defvjp(tangent_owned, lambda g, ans, tangent, primal, arguments, tangents: g, CONSTANT, CONSTANT, CONSTANT)
defjvp(tangent_owned, lambda t, ans, tangent, primal, arguments, tangents: owned(t), CONSTANT, CONSTANT, CONSTANT)
defvjp(copy_of, lambda g, ans, part: g)
defjvp(copy_of, lambda t, ans, part: copy_of(t))
# A zero (0.0) standing for a list or array adds nothing: its adjoint is the sum.
# Forward mode adds the two tangents with ``+``, which joins lists: a list of
# adjoints becomes an array so that they add element by element (see addable).
defvjp(add_adjoints, lambda g, ans, first, second: g if isinstance(first, list) else unbroadcast(g, first),
       lambda g, ans, first, second: g if isinstance(second, list) else unbroadcast(g, second))
defjvp(add_adjoints, lambda t, ans, first, second: addable(t),
       lambda t, ans, first, second: addable(t))
# addable only changes a list of tangents into an array of them.
defvjp(addable, lambda g, ans, tangents: list(g) if isinstance(tangents, list) else g)
defjvp(addable, lambda t, ans, tangents: addable(t))
# add_at(total, adjoint, like, index) is add_adjoints(total, getitem_vjp(adjoint, like, index));
# add_at_in_place is add_at added in place (see derivo.accumulate): the same rules.
for _add in (add_at, add_at_in_place):
    defvjp(_add, lambda g, ans, total, adjoint, like, index: g if isinstance(total, list) else unbroadcast(g, total),
           lambda g, ans, total, adjoint, like, index: g[index], CONSTANT, CONSTANT)
    defjvp(_add, lambda t, ans, total, adjoint, like, index: addable(t),
           lambda t, ans, total, adjoint, like, index: addable(getitem_vjp(t, like, index)), CONSTANT, CONSTANT)
# values_vjp, items_vjp and unpacked_vjp put a dict's adjoints under its keys, or
# a display's under its entries' keys: linear in the adjoint, their tangents are
# themselves of the tangent, and their transposes read the keys back.
defvjp(values_vjp, lambda g, ans, adjoint, entries: [g[key] for key in entries], CONSTANT)
defjvp(values_vjp, lambda t, ans, adjoint, entries: values_vjp(t, entries), CONSTANT)
defvjp(items_vjp, lambda g, ans, adjoint, entries: [[0.0, g[key]] for key in entries], CONSTANT)
defjvp(items_vjp, lambda t, ans, adjoint, entries: items_vjp(t, entries), CONSTANT)
defvjp(unpacked_vjp, lambda g, ans, adjoint, entries, later: _unpacked_transpose(g, adjoint, entries, later), CONSTANT, CONSTANT)
defjvp(unpacked_vjp, lambda t, ans, adjoint, entries, later: unpacked_vjp(t, entries, later), CONSTANT, CONSTANT)


def _unpacked_transpose(g, adjoint, entries, later):
    """The transpose of unpacked_vjp: ``g``, the adjoint of ``entries``, under
    the keys of the display's ``adjoint`` that it reaches (0.0 under the others)."""
    if not isinstance(g, dict) or not isinstance(adjoint, dict):
        return g
    reached = unpacked_vjp(g, entries, later)
    return {key: reached.get(key, 0.0) for key in adjoint}


# add_field(total, adjoint, like, name) is add_adjoints(total, field_vjp(adjoint, like, name)).
for _add in (add_field, add_field_in_place):
    defvjp(_add, lambda g, ans, total, adjoint, like, name: g,
           lambda g, ans, total, adjoint, like, name: g[key_of(like, name)], CONSTANT, CONSTANT)
    defjvp(_add, lambda t, ans, total, adjoint, like, name: addable(t),
           lambda t, ans, total, adjoint, like, name: addable(field_vjp(t, like, name)), CONSTANT, CONSTANT)
# pop_adjoint(adjoints) is (adjoints[:-1], adjoints[-1]) (pop_adjoint_in_place pops the
# list itself): the transpose puts the pair back together (``ans[0]``: the list without
# its last item).
for _pop in (pop_adjoint, pop_adjoint_in_place):
    defvjp(_pop, lambda g, ans, adjoints: [*(g[0] if isinstance(g[0], list) else [g[0]] * len(ans[0])), g[1]])
    defjvp(_pop, lambda t, ans, adjoints: pop_adjoint(t))

nondifferentiable(stop_gradient)  # its result is a constant to derivatives
