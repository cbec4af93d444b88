"""Derivatives of NumPy: elementwise functions as partials, the rest as VJPs.

``defpartials`` entries are elementwise: derivo multiplies the partial by the
output adjoint and, when arguments broadcast, sums the result back to each
argument's shape.  ``defvjp`` entries give an argument's adjoint directly, as a
lambda of ``(g, ans, *args, **options)``.  Helpers with no one-line NumPy
spelling live in :mod:`derivo.runtime`.
"""

import numpy as np

from .. import syntax as S
from ..runtime import (dot_vjp_left, dot_vjp_right, einsum_vjp, expand, extremum_vjp,
                       getitem_vjp, hstack_vjp, inner_vjp_left, inner_vjp_right, is_real,
                       kind_of, log_times, matmul_vjp_left, matmul_vjp_right, prod_vjp,
                       reduced_share, size, split_like, transpose_vjp, transposed, unbroadcast,
                       unstack, vstack_vjp)
from ..adjoints import (appended_sources, average_weights, column_stack_vjp, convolve_vjp, cumprod_vjp,
                        correlate_vjp, diag_vjp, diff_vjp, gathered_vjp, gradient_vjp,
                        interp_fp_vjp, interp_x_vjp, interp_xp_vjp, pad_sources,
                        partition_sources, positions, ptp_weights, quantile_vjp, repeat_vjp,
                        reverse_cumsum, rollaxis_vjp, select_choices, select_vjp, split_vjp,
                        tile_vjp, trapezoid_weights)
from . import CONSTANT, GETITEM, NEW, Method, defpartials, defvjp, nondifferentiable, without_rule

# --- elementwise --------------------------------------------------------------

defpartials(np.exp, lambda ans, x: ans)
defpartials(np.expm1, lambda ans, x: ans + 1)
defpartials(np.log, lambda ans, x: 1 / x)
defpartials(np.log1p, lambda ans, x: 1 / (1 + x))
defpartials(np.sqrt, lambda ans, x: 0.5 / ans)
defpartials(np.square, lambda ans, x: 2 * x)
# |z| of a complex z, as JAX: the adjoint of a real result is real, and a complex
# argument's adjoint is conj(dL/dz) (its real part the derivative in the real part)
defvjp(np.abs, lambda g, ans, x: g * np.sign(x) if is_real(x) else np.real(g) * np.conj(x) / np.where(ans == 0, 1, ans), returns=NEW)
# The parts of a complex z = x + iy, as JAX: z's adjoint is dL/dx - i dL/dy (so a
# holomorphic function's adjoint is g f'(z)); of a real x, real part 1, imaginary 0.
# x.real and x.imag are views of x, and so are np.real(x) and, of a real x,
# x.conj(), which returns x itself: returns=0.  np.conj is a ufunc: a new array.
for _real in (np.real, Method("real")):
    defvjp(_real, lambda g, ans, x: g, returns=0)
for _imag in (np.imag, Method("imag")):
    defvjp(_imag, lambda g, ans, x: -1j * g if not is_real(x) else np.zeros(np.shape(x)), returns=0)
for _conj, _returns in ((np.conj, NEW), (Method("conj"), 0), (Method("conjugate"), 0)):
    defvjp(_conj, lambda g, ans, x: np.conj(g), returns=_returns)
# arg z = atan2(y, x): its adjoint is -i g / z; of a real x a step function (0)
defvjp(np.angle, lambda g, ans, z, deg=False: np.real(g) * -1j / np.where(z == 0, 1, z) * (180 / np.pi if deg else 1) if not is_real(z) else np.zeros(np.shape(z)), returns=NEW)
defpartials(np.sin, lambda ans, x: np.cos(x))
defpartials(np.cos, lambda ans, x: -np.sin(x))
defpartials(np.tan, lambda ans, x: 1 + ans * ans)
defpartials(np.tanh, lambda ans, x: 1 - ans * ans)
defpartials(np.sinh, lambda ans, x: np.cosh(x))
defpartials(np.cosh, lambda ans, x: np.sinh(x))
defpartials(np.arctan, lambda ans, x: 1 / (1 + x * x))
defpartials(np.arcsin, lambda ans, x: 1 / np.sqrt(1 - x * x))
defpartials(np.arccos, lambda ans, x: -1 / np.sqrt(1 - x * x))
defpartials(np.negative, lambda ans, x: -1)
defpartials(np.fabs, lambda ans, x: np.sign(x))  # real numbers only, as np.fabs takes
defpartials(np.reciprocal, lambda ans, x: -(ans * ans))
defpartials(np.cbrt, lambda ans, x: 1 / (3 * ans * ans))
defpartials(np.exp2, lambda ans, x: ans * np.log(2))
defpartials(np.log2, lambda ans, x: 1 / (x * np.log(2)))
defpartials(np.log10, lambda ans, x: 1 / (x * np.log(10)))
defpartials(np.arcsinh, lambda ans, x: 1 / np.sqrt(x * x + 1))
defpartials(np.arccosh, lambda ans, x: 1 / np.sqrt(x * x - 1))
defpartials(np.arctanh, lambda ans, x: 1 / (1 - x * x))
for _to_radians in (np.deg2rad, np.radians):
    defpartials(_to_radians, lambda ans, x: np.pi / 180)
for _to_degrees in (np.rad2deg, np.degrees):
    defpartials(_to_degrees, lambda ans, x: 180 / np.pi)
# sinc(x) = sin(pi x) / (pi x): (cos(pi x) - sinc(x)) / x, 0 at x = 0
defpartials(np.sinc, lambda ans, x: np.where(x == 0, 0.0, (np.cos(np.pi * x) - ans) / np.where(x == 0, 1.0, x)))
# nan and infinities are replaced by constants
defpartials(np.nan_to_num, lambda ans, x: np.isfinite(x))
defpartials(np.fmax, lambda ans, x, y: x >= y, lambda ans, x, y: x < y)
defpartials(np.fmin, lambda ans, x, y: x <= y, lambda ans, x, y: x > y)
defpartials(np.logaddexp2, lambda ans, x, y: np.exp2(x - ans), lambda ans, x, y: np.exp2(y - ans))
defpartials(np.arctan2, lambda ans, y, x: x / (x * x + y * y), lambda ans, y, x: -y / (x * x + y * y))
defpartials(np.hypot, lambda ans, x, y: x / ans, lambda ans, x, y: y / ans)
# a step in x1; x2 is the value where x1 == 0
defpartials(np.heaviside, CONSTANT, lambda ans, x1, x2: x1 == 0)
defpartials(np.copysign, lambda ans, x, y: np.sign(x) * np.copysign(1.0, y), CONSTANT)
defpartials(np.power, lambda ans, x, y: y * x ** (y - (y != 0)), lambda ans, x, y: log_times(ans, x))
defpartials(np.maximum, lambda ans, x, y: x >= y, lambda ans, x, y: x < y)
defpartials(np.minimum, lambda ans, x, y: x <= y, lambda ans, x, y: x > y)
defpartials(np.logaddexp, lambda ans, x, y: np.exp(x - ans), lambda ans, x, y: np.exp(y - ans))
# Where a bound is attained the result moves with the bound; ties go to a, then to
# a_min.  A bound given as None is a constant.
defpartials(np.clip, lambda ans, a, a_min, a_max: ans == a,
            lambda ans, a, a_min, a_max: (ans != a) & (ans == a_min),
            lambda ans, a, a_min, a_max: (ans != a) & (ans != a_min))
defpartials(Method("clip"), lambda ans, a, min=None, max=None: ans == a,
            lambda ans, a, min=None, max=None: (ans != a) & (ans == min),
            lambda ans, a, min=None, max=None: (ans != a) & (ans != min))
# the function spellings of the operators
defpartials(np.add, lambda ans, x, y: 1, lambda ans, x, y: 1)
defpartials(np.subtract, lambda ans, x, y: 1, lambda ans, x, y: -1)
defpartials(np.multiply, lambda ans, x, y: y, lambda ans, x, y: x)
for _divide in (np.divide, np.true_divide):
    defpartials(_divide, lambda ans, x, y: 1 / y, lambda ans, x, y: -ans / y)
defpartials(np.positive, lambda ans, x: 1)
# x mod y = x - floor(x / y) y (np.mod is np.remainder)
defpartials(np.remainder, lambda ans, x, y: 1, lambda ans, x, y: -((x - ans) / y))
defvjp(np.full, CONSTANT, lambda g, ans, shape, fill_value, dtype=None: unbroadcast(g, fill_value), returns=NEW)
defvjp(np.full_like, CONSTANT, lambda g, ans, a, fill_value, dtype=None: unbroadcast(g, fill_value), returns=NEW)
defvjp(Method("astype"), lambda g, ans, a, dtype, *options: np.reshape(g, np.shape(a)) if kind_of(ans) == "f" else np.zeros(np.shape(a)), returns=NEW)
# np.select: each element is its first true condition's choice, or the default
defvjp(np.select, CONSTANT, lambda g, ans, condlist, choicelist, default=0: select_vjp(g, condlist, choicelist),
       lambda g, ans, condlist, choicelist, default=0: unbroadcast(np.where(select_choices(condlist) == len(condlist), g, 0.0), default), returns=NEW)
defvjp(np.where, CONSTANT,
       lambda g, ans, condition, x, y: unbroadcast(np.where(condition, g, 0.0), x),
       lambda g, ans, condition, x, y: unbroadcast(np.where(condition, 0.0, g), y), returns=NEW)

# --- linear algebra -------------------------------------------------------------

defvjp(S.MatMult, lambda g, ans, a, b: matmul_vjp_left(g, a, b),
       lambda g, ans, a, b: matmul_vjp_right(g, a, b), label="@", returns=NEW)
defvjp(np.matmul, lambda g, ans, a, b: matmul_vjp_left(g, a, b),
       lambda g, ans, a, b: matmul_vjp_right(g, a, b), returns=NEW)
defvjp(np.dot, lambda g, ans, a, b: dot_vjp_left(g, a, b),
       lambda g, ans, a, b: dot_vjp_right(g, a, b), returns=NEW)
defvjp(Method("dot"), lambda g, ans, a, b: dot_vjp_left(g, a, b),
       lambda g, ans, a, b: dot_vjp_right(g, a, b), returns=NEW)
defvjp(np.inner, lambda g, ans, a, b: inner_vjp_left(g, a, b),
       lambda g, ans, a, b: inner_vjp_right(g, a, b), returns=NEW)
defvjp(np.outer, lambda g, ans, a, b: np.reshape(g @ np.ravel(b), np.shape(a)),
       lambda g, ans, a, b: np.reshape(np.ravel(a) @ g, np.shape(b)), returns=NEW)
defvjp(np.einsum, CONSTANT, lambda g, ans, subscripts, a: einsum_vjp(g, subscripts, [a], 0))
defvjp(np.einsum, CONSTANT, lambda g, ans, subscripts, a, b: einsum_vjp(g, subscripts, [a, b], 0),
       lambda g, ans, subscripts, a, b: einsum_vjp(g, subscripts, [a, b], 1))
defvjp(np.einsum, CONSTANT, lambda g, ans, subscripts, a, b, c: einsum_vjp(g, subscripts, [a, b, c], 0),
       lambda g, ans, subscripts, a, b, c: einsum_vjp(g, subscripts, [a, b, c], 1),
       lambda g, ans, subscripts, a, b, c: einsum_vjp(g, subscripts, [a, b, c], 2))
defvjp(np.einsum, CONSTANT, lambda g, ans, subscripts, a, b, c, d: einsum_vjp(g, subscripts, [a, b, c, d], 0),
       lambda g, ans, subscripts, a, b, c, d: einsum_vjp(g, subscripts, [a, b, c, d], 1),
       lambda g, ans, subscripts, a, b, c, d: einsum_vjp(g, subscripts, [a, b, c, d], 2),
       lambda g, ans, subscripts, a, b, c, d: einsum_vjp(g, subscripts, [a, b, c, d], 3))

# --- reductions ------------------------------------------------------------------

for _sum in (np.sum, Method("sum")):
    defvjp(_sum, lambda g, ans, a, axis=None, dtype=None, out=None, keepdims=False: expand(g, a, axis, keepdims), returns=NEW)
# (the factor applied before the adjoint is spread, on fewer numbers)
for _mean in (np.mean, Method("mean")):
    defvjp(_mean, lambda g, ans, a, axis=None, dtype=None, out=None, keepdims=False: expand(g * reduced_share(a, axis), a, axis, keepdims), returns=NEW)
for _prod in (np.prod, Method("prod")):
    defvjp(_prod, lambda g, ans, a, axis=None, dtype=None, out=None, keepdims=False: prod_vjp(g, ans, a, axis, keepdims), returns=NEW)
for _extremum in (np.max, np.amax, np.min, np.amin, Method("max"), Method("min")):
    defvjp(_extremum, lambda g, ans, a, axis=None, out=None, keepdims=False: extremum_vjp(g, ans, a, axis, keepdims), returns=NEW)

# the variance's partials are 2 (a - mean) / (N - ddof), N the count reduced over;
# the standard deviation's (a - mean) / ((N - ddof) std), and 0 where std is 0 (all
# of a equal: the cone's apex, where 0 is a subgradient and central differences agree)
for _var in (np.var, Method("var")):
    defvjp(_var, lambda g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False: expand(g, a, axis, keepdims) * (2 * (a - np.mean(a, axis=axis, keepdims=True)) / (size(a) / size(ans) - ddof)), returns=NEW)
for _std in (np.std, Method("std")):
    defvjp(_std, lambda g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False: expand(g / np.where(ans == 0, np.inf, ans), a, axis, keepdims) * ((a - np.mean(a, axis=axis, keepdims=True)) / (size(a) / size(ans) - ddof)), returns=NEW)
for _cumsum in (np.cumsum, Method("cumsum")):
    defvjp(_cumsum, lambda g, ans, a, axis=None, dtype=None, out=None: reverse_cumsum(g, a, axis), returns=NEW)
# the products of the other elements, exact where a holds zeros
for _cumprod in (np.cumprod, Method("cumprod")):
    defvjp(_cumprod, lambda g, ans, a, axis=None, dtype=None, out=None: cumprod_vjp(g, ans, a, axis), returns=NEW)

defvjp(np.nansum, lambda g, ans, a, axis=None, dtype=None, out=None, keepdims=False: np.where(np.isnan(a), 0.0, expand(g, a, axis, keepdims)), returns=NEW)
defvjp(np.nanmean, lambda g, ans, a, axis=None, dtype=None, out=None, keepdims=False: np.where(np.isnan(a), 0.0, expand(g, a, axis, keepdims) / np.sum(~np.isnan(a), axis=axis, keepdims=True)), returns=NEW)
# max - min: each shared among the elements attaining it
defvjp(np.ptp, lambda g, ans, a, axis=None, out=None, keepdims=False: expand(g, a, axis, keepdims) * ptp_weights(a, axis), returns=NEW)
# the weights are options: a differentiated weight is refused (so is returned=)
defvjp(np.average, lambda g, ans, a, axis=None, weights=None, keepdims=False: expand(g, a, axis, keepdims) * average_weights(a, weights, axis), returns=NEW)
# linear interpolation between two order statistics (method="linear" only)
defvjp(np.quantile, lambda g, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False: quantile_vjp(g, a, q, axis, keepdims, method), CONSTANT, returns=NEW)
defvjp(np.percentile, lambda g, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False: quantile_vjp(g, a, np.divide(q, 100), axis, keepdims, method), CONSTANT, returns=NEW)
defvjp(np.median, lambda g, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False: quantile_vjp(g, a, 0.5, axis, keepdims, "linear"), returns=NEW)
# linear in y; the sample points x and the spacing dx are options (refused if differentiated)
defvjp(np.trapezoid, lambda g, ans, y, x=None, dx=1.0, axis=-1: np.expand_dims(g, axis) * trapezoid_weights(y, x, dx, axis), returns=NEW)

# --- shapes --------------------------------------------------------------------------

# Functions that only rearrange (or copy) their argument: the adjoint is the
# output's adjoint in the argument's shape.
defvjp(np.reshape, lambda g, ans, a, shape=None, order="C": np.reshape(g, np.shape(a), order=order), returns=0)
defvjp(np.ravel, lambda g, ans, a, order="C": np.reshape(g, np.shape(a), order=order), returns=0)
defvjp(np.squeeze, lambda g, ans, a, axis=None: np.reshape(g, np.shape(a)), returns=0)
defvjp(np.expand_dims, lambda g, ans, a, axis: np.reshape(g, np.shape(a)), returns=0)
# np.float64(x): the number as NumPy's double, the same value
defpartials(np.float64, lambda ans, x: 1.0, returns=NEW)
# a.item(): the one element of a size-1 array, as a Python number
defvjp(Method("item"), lambda g, ans, a: np.reshape(g, np.shape(a)), returns=NEW)
for _copy in (np.atleast_1d, np.atleast_2d, np.atleast_3d, np.copy, np.asarray, np.array):
    defvjp(_copy, lambda g, ans, a, dtype=None: np.reshape(g, np.shape(a)), returns=NEW if _copy in (np.copy, np.array) else 0)
defvjp(Method("reshape"), lambda g, ans, a, *shape: np.reshape(g, np.shape(a)), returns=0)
for _method in ("ravel", "flatten", "copy"):
    defvjp(Method(_method), lambda g, ans, a, order="C": np.reshape(g, np.shape(a), order=order), returns=0 if _method == "ravel" else NEW)
defvjp(Method("squeeze"), lambda g, ans, a, axis=None: np.reshape(g, np.shape(a)), returns=0)
defvjp(np.transpose, lambda g, ans, a, axes=None: transpose_vjp(g, (axes,)), returns=0)
defvjp(Method("transpose"), lambda g, ans, a, *axes: transpose_vjp(g, axes), returns=0)
defvjp(Method("T"), lambda g, ans, a: transposed(g), returns=0)
defvjp(np.concatenate, lambda g, ans, arrays, axis=0: split_like(g, arrays, axis), returns=NEW)
defvjp(np.stack, lambda g, ans, arrays, axis=0: unstack(g, arrays, axis), returns=NEW)
defvjp(np.hstack, lambda g, ans, arrays: hstack_vjp(g, arrays), returns=NEW)
defvjp(np.vstack, lambda g, ans, arrays: vstack_vjp(g, arrays), returns=NEW)
if hasattr(np, "row_stack"):  # (NumPy 2 deprecates it, for np.vstack)
    defvjp(np.row_stack, lambda g, ans, tup: vstack_vjp(g, tup), returns=NEW)
defvjp(np.column_stack, lambda g, ans, tup: column_stack_vjp(g, tup), returns=NEW)
defvjp(np.append, lambda g, ans, arr, values, axis=None: gathered_vjp(g, arr, appended_sources(arr, values, axis, 0)),
       lambda g, ans, arr, values, axis=None: gathered_vjp(g, values, appended_sources(arr, values, axis, 1)), returns=NEW)
for _split in (np.split, np.array_split):
    defvjp(_split, lambda g, ans, ary, indices_or_sections, axis=0: split_vjp(g, ans, axis), CONSTANT, returns=NEW)
defvjp(np.hsplit, lambda g, ans, ary, indices_or_sections: split_vjp(g, ans, 1 if np.ndim(ary) > 1 else 0), CONSTANT, returns=NEW)
defvjp(np.vsplit, lambda g, ans, ary, indices_or_sections: split_vjp(g, ans, 0), CONSTANT, returns=NEW)
defvjp(np.dsplit, lambda g, ans, ary, indices_or_sections: split_vjp(g, ans, 2), CONSTANT, returns=NEW)

# Rearrangements and selections: the adjoint is the output's adjoint moved back.
defvjp(np.roll, lambda g, ans, a, shift, axis=None: np.roll(g, np.negative(shift), axis), returns=NEW)
defvjp(np.flip, lambda g, ans, a, axis=None: np.flip(g, axis), returns=0)
defvjp(np.fliplr, lambda g, ans, a: np.fliplr(g), returns=0)
defvjp(np.flipud, lambda g, ans, a: np.flipud(g), returns=0)
defvjp(np.triu, lambda g, ans, m, k=0: np.triu(g, k), returns=NEW)
defvjp(np.tril, lambda g, ans, m, k=0: np.tril(g, k), returns=NEW)
defvjp(np.diag, lambda g, ans, v, k=0: diag_vjp(g, v, k), returns=NEW)
defvjp(np.swapaxes, lambda g, ans, a, axis1, axis2: np.swapaxes(g, axis1, axis2), returns=0)
defvjp(np.moveaxis, lambda g, ans, a, source, destination: np.moveaxis(g, destination, source), returns=0)
defvjp(np.rot90, lambda g, ans, m, k=1, axes=None: np.rot90(g, -k, (0, 1) if axes is None else axes), returns=0)
defvjp(np.rollaxis, lambda g, ans, a, axis, start=0: rollaxis_vjp(g, a, axis, start), returns=0)
defvjp(np.broadcast_to, lambda g, ans, array, shape, subok=False: unbroadcast(g, array), CONSTANT, returns=0)
defvjp(np.diff, lambda g, ans, a, n=1, axis=-1: diff_vjp(g, n, axis), returns=NEW)
# linear in f; the spacings (numbers or coordinates) are constants (refused if differentiated)
defvjp(np.gradient, lambda g, ans, f, *varargs, axis=None, edge_order=1: gradient_vjp(g, f, varargs, axis, edge_order), returns=NEW)
# piecewise linear: in x the segment's slope, in fp and xp the segment's knots move it
defvjp(np.interp, lambda g, ans, x, xp, fp, left=None, right=None, period=None: interp_x_vjp(g, x, xp, fp, left, right, period),
       lambda g, ans, x, xp, fp, left=None, right=None, period=None: interp_xp_vjp(g, x, xp, fp, left, right, period),
       lambda g, ans, x, xp, fp, left=None, right=None, period=None: interp_fp_vjp(g, x, xp, fp, left, right, period), returns=NEW)
defvjp(np.convolve, lambda g, ans, a, v, mode="full": convolve_vjp(g, a, v, 0, np.correlate),
       lambda g, ans, a, v, mode="full": convolve_vjp(g, a, v, 1, np.correlate), CONSTANT, returns=NEW)
defvjp(np.correlate, lambda g, ans, a, v, mode="valid": correlate_vjp(g, a, v, 0),
       lambda g, ans, a, v, mode="valid": correlate_vjp(g, a, v, 1), CONSTANT, returns=NEW)
defvjp(np.repeat, lambda g, ans, a, repeats, axis=None: repeat_vjp(g, a, repeats, axis), CONSTANT, returns=NEW)
defvjp(np.tile, lambda g, ans, A, reps: tile_vjp(g, A, reps), CONSTANT, returns=NEW)

# --- indexing ----------------------------------------------------------------------

defvjp(GETITEM, lambda g, ans, x, index: getitem_vjp(g, x, index), CONSTANT, label="[]",
       returns=0)
# Selections: the adjoint goes back to the positions the primitive picked, found
# by applying it to the array of positions.
defvjp(np.diagonal, lambda g, ans, a, offset=0, axis1=0, axis2=1: gathered_vjp(g, a, np.diagonal(positions(a), offset, axis1, axis2)), returns=0)
defvjp(np.take, lambda g, ans, a, indices, axis=None: gathered_vjp(g, a, np.take(positions(a), indices, axis)), CONSTANT, returns=NEW)
defvjp(np.take_along_axis, lambda g, ans, arr, indices, axis: gathered_vjp(g, arr, np.take_along_axis(positions(arr), indices, axis)), CONSTANT, returns=NEW)
defvjp(np.compress, CONSTANT, lambda g, ans, condition, a, axis=None: gathered_vjp(g, a, np.compress(condition, positions(a), axis)), returns=NEW)
defvjp(np.pad, lambda g, ans, array, pad_width, mode="constant": gathered_vjp(g, array, pad_sources(array, pad_width, mode)), CONSTANT, returns=NEW)
# (ties: sorted as np.argsort's stable sort orders them)
defvjp(np.sort, lambda g, ans, a, axis=-1, kind=None: gathered_vjp(g, a, np.take_along_axis(positions(a), np.argsort(a, axis, kind="stable"), axis)), returns=NEW)
defvjp(np.partition, lambda g, ans, a, kth, axis=-1, kind="introselect", order=None: gathered_vjp(g, a, partition_sources(a, ans, axis)), CONSTANT, returns=NEW)

nondifferentiable(
    np.shape, np.ndim, np.size, np.zeros, np.ones, np.zeros_like, np.ones_like, np.empty,
    np.eye, np.identity, np.sign,
    np.argmax, np.argmin, np.argsort, np.argpartition, np.floor, np.ceil, np.round, np.rint, np.isnan,
    np.isinf, np.isfinite, np.allclose, np.isclose, np.array_equal, np.any, np.all,
    np.greater, np.less, np.equal, np.count_nonzero, np.isrealobj,
    Method("shape"), Method("ndim"), Method("size"), Method("dtype"), Method("argmax"),
    Method("argmin"), Method("argsort"), Method("argpartition"), Method("any"), Method("all"), returns=NEW)
without_rule(np.arange, np.linspace, returns=NEW)
