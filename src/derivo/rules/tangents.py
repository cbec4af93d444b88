"""Forward-mode rules of the primitives whose rules are written as VJPs.

Rules written as partials need nothing here: forward mode multiplies each
partial by its argument's tangent (but for the exponent of ``**``, below).
Each ``defvjp`` entry of the other tables gets its Jacobian-vector products:
``defjvp(f, jvp for arg0, jvp for arg1, ...)``, each a lambda of ``(t, ans,
*args, **options)`` where ``t`` is that argument's tangent.  Most primitives here are linear in the argument, so the
JVP is the primitive applied to the tangent.
"""

import math
import operator

import numpy as np

from .. import syntax as S
from ..adjoints import (cumprod_jvp, interp_fp_jvp, interp_x_partial, interp_xp_jvp, pad_sources,
                        partition_sources, ptp_weights, quantile_jvp, select_choices,
                        trapezoid_weights)
from ..runtime import (addable, as_array, expand, is_real, kind_of, power_exponent_jvp,
                       prod_vjp, size, sort_like)
from . import CONSTANT, FIELD, GETITEM, Method, defjvp
from .builtins import others_product, others_product_in_items

# --- builtins --------------------------------------------------------------------

# x ** y: the exponent adds nothing where its tangent is 0 (a branch made y a
# constant), not 0 times log(x), which is NaN at x < 0.
for _power in (S.Pow, pow, math.pow, np.power):
    defjvp(_power, None, lambda t, ans, x, y: power_exponent_jvp(t, ans, x))

defjvp(max, lambda t, ans, iterable: t[list(iterable).index(ans)])
defjvp(min, lambda t, ans, iterable: t[list(iterable).index(ans)])
defjvp(sorted, lambda t, ans, iterable: sort_like(t, iterable))
defjvp(list, lambda t, ans, iterable: list(t))
defjvp(tuple, lambda t, ans, iterable: tuple(t))
defjvp(sum, lambda t, ans, iterable, start=0: sum(t), lambda t, ans, iterable, start=0: t)
defjvp(math.fsum, lambda t, ans, iterable: math.fsum(t))
defjvp(math.prod, lambda t, ans, iterable, start=1: math.fsum(map(operator.mul, others_product(start, iterable), t)),
       lambda t, ans, iterable, start=1: t * math.prod(iterable))
# (a list: addable makes the two arguments' terms add item by item, not join)
defjvp(others_product, lambda t, ans, adjoint, items: addable(others_product(t, items)),
       lambda t, ans, adjoint, items: addable(others_product_in_items(t, adjoint, items)))
defjvp(math.dist, lambda t, ans, p, q: math.fsum(map(operator.mul, map(operator.sub, p, q), t)) / ans,
       lambda t, ans, p, q: math.fsum(map(operator.mul, map(operator.sub, q, p), t)) / ans)

# --- NumPy ------------------------------------------------------------------------

defjvp(np.abs, lambda t, ans, x: t * np.sign(x) if is_real(x) else np.real(np.conj(x) * t) / np.where(ans == 0, 1, ans))
for _real in (np.real, Method("real")):
    defjvp(_real, lambda t, ans, x: np.real(t))
for _imag in (np.imag, Method("imag")):
    defjvp(_imag, lambda t, ans, x: np.imag(t))
for _conj in (np.conj, Method("conj"), Method("conjugate")):
    defjvp(_conj, lambda t, ans, x: np.conj(t))
defjvp(np.angle, lambda t, ans, z, deg=False: np.imag(t / np.where(z == 0, 1, z)) * (180 / np.pi if deg else 1) if not is_real(z) else np.zeros(np.shape(z)))
defjvp(np.select, CONSTANT, lambda t, ans, condlist, choicelist, default=0: np.select(condlist, t, 0.0),
       lambda t, ans, condlist, choicelist, default=0: np.where(select_choices(condlist) == len(condlist), t, 0.0))
defjvp(np.where, CONSTANT, lambda t, ans, condition, x, y: np.where(condition, t, 0.0),
       lambda t, ans, condition, x, y: np.where(condition, 0.0, t))

# --- linear algebra -------------------------------------------------------------

defjvp(S.MatMult, lambda t, ans, a, b: t @ b, lambda t, ans, a, b: a @ t)
defjvp(np.matmul, lambda t, ans, a, b: np.matmul(t, b), lambda t, ans, a, b: np.matmul(a, t))
defjvp(np.dot, lambda t, ans, a, b: np.dot(t, b), lambda t, ans, a, b: np.dot(a, t))
defjvp(Method("dot"), lambda t, ans, a, b: np.dot(t, b), lambda t, ans, a, b: np.dot(a, t))
defjvp(np.inner, lambda t, ans, a, b: np.inner(t, b), lambda t, ans, a, b: np.inner(a, t))
defjvp(np.outer, lambda t, ans, a, b: np.outer(t, b), lambda t, ans, a, b: np.outer(a, t))
defjvp(np.einsum, CONSTANT, lambda t, ans, subscripts, a: np.einsum(subscripts, t))
defjvp(np.einsum, CONSTANT, lambda t, ans, subscripts, a, b: np.einsum(subscripts, t, b),
       lambda t, ans, subscripts, a, b: np.einsum(subscripts, a, t))
defjvp(np.einsum, CONSTANT, lambda t, ans, subscripts, a, b, c: np.einsum(subscripts, t, b, c),
       lambda t, ans, subscripts, a, b, c: np.einsum(subscripts, a, t, c),
       lambda t, ans, subscripts, a, b, c: np.einsum(subscripts, a, b, t))
defjvp(np.einsum, CONSTANT, lambda t, ans, subscripts, a, b, c, d: np.einsum(subscripts, t, b, c, d),
       lambda t, ans, subscripts, a, b, c, d: np.einsum(subscripts, a, t, c, d),
       lambda t, ans, subscripts, a, b, c, d: np.einsum(subscripts, a, b, t, d),
       lambda t, ans, subscripts, a, b, c, d: np.einsum(subscripts, a, b, c, t))

# --- reductions ------------------------------------------------------------------

for _sum in (np.sum, Method("sum")):
    defjvp(_sum, lambda t, ans, a, axis=None, dtype=None, out=None, keepdims=False: np.sum(t, axis=axis, keepdims=keepdims))
for _mean in (np.mean, Method("mean")):
    defjvp(_mean, lambda t, ans, a, axis=None, dtype=None, out=None, keepdims=False: np.mean(t, axis=axis, keepdims=keepdims))
for _prod in (np.prod, Method("prod")):
    defjvp(_prod, lambda t, ans, a, axis=None, dtype=None, out=None, keepdims=False: np.sum(t * prod_vjp(np.ones(np.shape(ans)), ans, a, axis, keepdims), axis=axis, keepdims=keepdims))
for _extremum in (np.max, np.amax, np.min, np.amin, Method("max"), Method("min")):
    defjvp(_extremum, lambda t, ans, a, axis=None, out=None, keepdims=False: np.sum(t * (a == expand(ans, a, axis, keepdims)), axis=axis, keepdims=keepdims) / np.sum(a == expand(ans, a, axis, keepdims), axis=axis, keepdims=keepdims))

for _var in (np.var, Method("var")):
    defjvp(_var, lambda t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False: np.sum(t * (a - np.mean(a, axis=axis, keepdims=True)), axis=axis, keepdims=keepdims) * (2 / (size(a) / size(ans) - ddof)))
for _std in (np.std, Method("std")):  # 0 where std is 0 (see numpy.py)
    defjvp(_std, lambda t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False: np.sum(t * (a - np.mean(a, axis=axis, keepdims=True)), axis=axis, keepdims=keepdims) / ((size(a) / size(ans) - ddof) * np.where(ans == 0, np.inf, ans)))
for _cumsum in (np.cumsum, Method("cumsum")):
    defjvp(_cumsum, lambda t, ans, a, axis=None, dtype=None, out=None: np.cumsum(t, axis=axis))
for _cumprod in (np.cumprod, Method("cumprod")):
    defjvp(_cumprod, lambda t, ans, a, axis=None, dtype=None, out=None: cumprod_jvp(t, ans, a, axis))

defjvp(np.nansum, lambda t, ans, a, axis=None, dtype=None, out=None, keepdims=False: np.sum(np.where(np.isnan(a), 0.0, t), axis=axis, keepdims=keepdims))
defjvp(np.nanmean, lambda t, ans, a, axis=None, dtype=None, out=None, keepdims=False: np.sum(np.where(np.isnan(a), 0.0, t), axis=axis, keepdims=keepdims) / np.sum(~np.isnan(a), axis=axis, keepdims=keepdims))
defjvp(np.ptp, lambda t, ans, a, axis=None, out=None, keepdims=False: np.sum(t * ptp_weights(a, axis), axis=axis, keepdims=keepdims))
defjvp(np.average, lambda t, ans, a, axis=None, weights=None, keepdims=False: np.average(t, axis, weights, keepdims=keepdims))
defjvp(np.quantile, lambda t, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False: quantile_jvp(t, ans, a, q, axis, keepdims, method), CONSTANT)
defjvp(np.percentile, lambda t, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False: quantile_jvp(t, ans, a, np.divide(q, 100), axis, keepdims, method), CONSTANT)
defjvp(np.median, lambda t, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False: quantile_jvp(t, ans, a, 0.5, axis, keepdims, "linear"))
defjvp(np.trapezoid, lambda t, ans, y, x=None, dx=1.0, axis=-1: np.sum(t * trapezoid_weights(y, x, dx, axis), axis))

# --- shapes --------------------------------------------------------------------------

for _reshape in (np.squeeze, np.expand_dims, np.atleast_1d, np.atleast_2d, np.atleast_3d, np.copy,
                 np.asarray, np.array):
    defjvp(_reshape, lambda t, ans, a, *shape: np.reshape(t, np.shape(ans)))
for _method in ("reshape", "squeeze", "item"):
    defjvp(Method(_method), lambda t, ans, a, *shape: np.reshape(t, np.shape(ans)))
defjvp(np.reshape, lambda t, ans, a, shape=None, order="C": np.reshape(t, np.shape(ans), order=order))
for _ravel in (np.ravel, Method("ravel"), Method("flatten"), Method("copy")):
    defjvp(_ravel, lambda t, ans, a, order="C": np.reshape(t, np.shape(ans), order=order))
defjvp(np.full, CONSTANT, lambda t, ans, shape, fill_value, dtype=None: t + np.zeros(np.shape(ans)))
defjvp(np.full_like, CONSTANT, lambda t, ans, a, fill_value, dtype=None: t + np.zeros(np.shape(ans)))
defjvp(Method("astype"), lambda t, ans, a, dtype, *options: np.reshape(t, np.shape(ans)) if kind_of(ans) == "f" else np.zeros(np.shape(ans)))
defjvp(np.transpose, lambda t, ans, a, axes=None: np.transpose(t, axes))
defjvp(Method("transpose"), lambda t, ans, a, *axes: as_array(t).transpose(*axes))
defjvp(Method("T"), lambda t, ans, a: np.transpose(t))
defjvp(np.concatenate, lambda t, ans, arrays, axis=0: np.concatenate(t, axis))
defjvp(np.stack, lambda t, ans, arrays, axis=0: np.stack(t, axis))
defjvp(np.hstack, lambda t, ans, arrays: np.hstack(t))
defjvp(np.vstack, lambda t, ans, arrays: np.vstack(t))
if hasattr(np, "row_stack"):
    defjvp(np.row_stack, lambda t, ans, tup: np.vstack(t))
defjvp(np.column_stack, lambda t, ans, tup: np.column_stack(t))
defjvp(np.append, lambda t, ans, arr, values, axis=None: np.append(t, np.zeros(np.shape(values)), axis),
       lambda t, ans, arr, values, axis=None: np.append(np.zeros(np.shape(arr)), t, axis))
defjvp(np.split, lambda t, ans, ary, indices_or_sections, axis=0: np.split(t, indices_or_sections, axis), CONSTANT)
defjvp(np.array_split, lambda t, ans, ary, indices_or_sections, axis=0: np.array_split(t, indices_or_sections, axis), CONSTANT)
defjvp(np.hsplit, lambda t, ans, ary, indices_or_sections: np.hsplit(t, indices_or_sections), CONSTANT)
defjvp(np.vsplit, lambda t, ans, ary, indices_or_sections: np.vsplit(t, indices_or_sections), CONSTANT)
defjvp(np.dsplit, lambda t, ans, ary, indices_or_sections: np.dsplit(t, indices_or_sections), CONSTANT)

defjvp(np.roll, lambda t, ans, a, shift, axis=None: np.roll(t, shift, axis))
defjvp(np.flip, lambda t, ans, a, axis=None: np.flip(t, axis))
defjvp(np.fliplr, lambda t, ans, a: np.fliplr(t))
defjvp(np.flipud, lambda t, ans, a: np.flipud(t))
defjvp(np.triu, lambda t, ans, m, k=0: np.triu(t, k))
defjvp(np.tril, lambda t, ans, m, k=0: np.tril(t, k))
defjvp(np.diag, lambda t, ans, v, k=0: np.diag(t, k))
defjvp(np.swapaxes, lambda t, ans, a, axis1, axis2: np.swapaxes(t, axis1, axis2))
defjvp(np.moveaxis, lambda t, ans, a, source, destination: np.moveaxis(t, source, destination))
defjvp(np.rot90, lambda t, ans, m, k=1, axes=None: np.rot90(t, k, (0, 1) if axes is None else axes))
defjvp(np.rollaxis, lambda t, ans, a, axis, start=0: np.rollaxis(t, axis, start))
defjvp(np.broadcast_to, lambda t, ans, array, shape, subok=False: np.broadcast_to(t, np.shape(ans)), CONSTANT)
defjvp(np.diff, lambda t, ans, a, n=1, axis=-1: np.diff(t, n, axis))
defjvp(np.gradient, lambda t, ans, f, *varargs, axis=None, edge_order=1: np.gradient(t, *varargs, axis=axis, edge_order=edge_order))
defjvp(np.interp, lambda t, ans, x, xp, fp, left=None, right=None, period=None: t * interp_x_partial(x, xp, fp, left, right, period),
       lambda t, ans, x, xp, fp, left=None, right=None, period=None: interp_xp_jvp(t, x, xp, fp, left, right, period),
       lambda t, ans, x, xp, fp, left=None, right=None, period=None: interp_fp_jvp(t, x, xp, left, right, period))
defjvp(np.convolve, lambda t, ans, a, v, mode="full": np.convolve(t, v, mode),
       lambda t, ans, a, v, mode="full": np.convolve(a, t, mode), CONSTANT)
defjvp(np.correlate, lambda t, ans, a, v, mode="valid": np.correlate(t, v, mode),
       lambda t, ans, a, v, mode="valid": np.correlate(a, t, mode), CONSTANT)
defjvp(np.repeat, lambda t, ans, a, repeats, axis=None: np.repeat(t, repeats, axis), CONSTANT)
defjvp(np.tile, lambda t, ans, A, reps: np.tile(t, reps), CONSTANT)

# --- indexing ----------------------------------------------------------------------

defjvp(GETITEM, lambda t, ans, x, index: t[index], CONSTANT)
defjvp(np.diagonal, lambda t, ans, a, offset=0, axis1=0, axis2=1: np.diagonal(t, offset, axis1, axis2))
defjvp(np.take, lambda t, ans, a, indices, axis=None: np.take(t, indices, axis), CONSTANT)
defjvp(np.take_along_axis, lambda t, ans, arr, indices, axis: np.take_along_axis(t, indices, axis), CONSTANT)
defjvp(np.compress, CONSTANT, lambda t, ans, condition, a, axis=None: np.compress(condition, t, axis))
defjvp(np.pad, lambda t, ans, array, pad_width, mode="constant": np.append(np.ravel(t), 0.0)[pad_sources(array, pad_width, mode)], CONSTANT)
defjvp(np.sort, lambda t, ans, a, axis=-1, kind=None: np.take_along_axis(t, np.argsort(a, axis, kind="stable"), axis))
defjvp(np.partition, lambda t, ans, a, kth, axis=-1, kind="introselect", order=None: np.ravel(t)[partition_sources(a, ans, axis)], CONSTANT)
defjvp(FIELD, lambda t, ans, x, name: getattr(t, name), CONSTANT)
defjvp(Method("values"), lambda t, ans, d: list(t.values()))
defjvp(Method("items"), lambda t, ans, d: list(t.items()))
