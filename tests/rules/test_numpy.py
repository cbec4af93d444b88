"""Every rule of the NumPy table, checked through the whole pipeline with arrays.

The parametrisation walks ``derivo.rules.RULES`` and takes every rule written in
``derivo.rules.numpy``; each rule is looked up in ``PROBES`` below, which holds
one or more *probe expressions* calling the primitive (``np.NAME(...)`` for
functions, ``x0.NAME(...)`` for methods, ``@``, ``.T``, ``x0[...]``) and the
float64 arguments it is called with.  A rule added to the table without a probe
shows up here as a failing case (and ``test_every_numpy_rule_has_a_probe`` says
which), so no rule can skip these tests.

For every probe, a real module is written with

    def probe(x0, x1, ...):  return EXPR
    def loss(x0, x1, ...):   return np.sum((EXPR) * W)

(``W`` a fixed random array of the output's shape, so the output adjoint is not
all ones) and two checks run through derivo's generated code:

- derivo's gradient of ``loss`` matches central finite differences (h=1e-6),
  element by element, and each gradient has its argument's shape;
- the dot-product test ``<JVP(v), u> == <v, VJP(u)>``: the VJP is
  ``derivo.vjp(probe, ...)`` with a random cotangent ``u`` of the output's shape,
  the JVP is a central finite-difference directional derivative of ``probe``
  along a random direction ``v`` (nothing on that side comes from derivo).

Probes that expose a bug in derivo are marked ``xfail(strict=True)`` with the
bug in the reason, so the mark has to go when the bug is fixed.
"""

import math
import warnings

import numpy as np
import pytest

import derivo
from probing import (Probe, assert_dot_product, assert_gradient_matches_differences, load, normal,
                     positive, seed, shaped, table_tests)
from derivo import rules
from derivo import syntax as S
from derivo.rules import GETITEM, Method

TABLE = "derivo.rules.numpy"
RTOL = 1e-6

# Constants the probes may use (index arrays, masks, conditions, clip bounds).
PRELUDE = """\
import numpy as np

IDX = np.array([0, 2, 2, 1])
MASK = np.array([[True, False, True, True],
                 [False, False, True, False],
                 [True, True, False, True]])
COND = np.array([[True, False, True, False],
                 [False, True, True, False],
                 [True, True, False, False]])
LO = np.array([-0.9, -0.3, 0.0, 0.3])
ONES34 = np.ones((3, 4))
XS = np.array([-0.4, 0.3, 1.1, 1.7, 2.6])
XP = np.array([0.0, 0.5, 1.2, 2.0])
"""
CLIP_POINTS = (-0.9, -0.5, -0.3, 0.0, 0.3, 0.7)


# --- argument makers: each takes a numpy Generator ----------------------------------

def unit(*shape):
    """Inside (-1, 1), for arcsin/arccos/tan."""
    return lambda rng: shaped(lambda s: rng.uniform(-0.8, 0.8, size=s), shape)


def nonzero(*shape):
    """Normal draws pushed at least 0.2 away from 0 (abs, prod, where x0 > 0)."""
    def make(rng):
        x = rng.normal(size=shape)
        x = x + 0.2 * np.where(x >= 0, 1.0, -1.0)
        return float(x) if shape == () else x
    return make


def avoiding(*shape, points=CLIP_POINTS):
    """Uniform on (-1.2, 1.2) but at least 0.05 away from every clip bound."""
    def make(rng):
        x = rng.uniform(-1.2, 1.2, size=shape)
        for p in points:
            near = np.abs(x - p) < 0.05
            x = np.where(near, p + 0.05 * np.where(x >= p, 1.0, -1.0) + 0.01 * (x - p), x)
        return float(x) if shape == () else x
    return make


def knots(count):
    """Increasing points from 0, 0.3 to 0.7 apart (np.interp's xp)."""
    return lambda rng: np.cumsum(np.concatenate([[0.0], rng.uniform(0.3, 0.7, size=count - 1)]))


# --- the probes ------------------------------------------------------------------------

PROBES = {}


def probe(primitive, expr, *args, arity=None, xfail=None):
    p = Probe(primitive, expr, args, arity, xfail)
    PROBES.setdefault(p.key, []).append(p)


# Elementwise unary functions: a matrix, a vector and a Python float.
UNARY = [(np.exp, normal), (np.expm1, normal), (np.log, positive), (np.log1p, positive),
         (np.sqrt, positive), (np.square, normal), (np.abs, nonzero), (np.sin, normal),
         (np.cos, normal), (np.tan, unit), (np.tanh, normal), (np.sinh, normal),
         (np.cosh, normal), (np.arctan, normal), (np.arcsin, unit), (np.arccos, unit),
         (np.negative, normal), (np.fabs, nonzero), (np.reciprocal, nonzero),
         (np.cbrt, nonzero), (np.exp2, normal), (np.log2, positive), (np.log10, positive),
         (np.arcsinh, normal), (np.arccosh, lambda *s: (lambda rng: positive(*s)(rng) + 1.0)),
         (np.arctanh, unit), (np.deg2rad, normal), (np.radians, normal), (np.rad2deg, normal),
         (np.degrees, normal), (np.sinc, nonzero), (np.nan_to_num, normal), (np.positive, normal)]
for _f, _domain in UNARY:
    _name = "abs" if _f is np.abs else _f.__name__
    for _shape in ((3, 4), (5,), ()):
        probe(_f, "np.{}(x0)".format(_name), _domain(*_shape))

# The parts of complex intermediates, in real losses (tests/test_complex.py sweeps the
# elementwise rules along complex paths)
for _key, _call in ((np.real, "np.real({})"), (np.imag, "np.imag({})"),
                   (np.angle, "np.angle({})"), (np.angle, "np.angle({}, deg=True)"),
                   (np.conj, "np.abs(np.conj({}) * (2 - 1j))"), (Method("real"), "({}).real"),
                   (Method("imag"), "({}).imag"),
                   (Method("conj"), "np.real(({}).conj() * (1 + 3j))"),
                   (Method("conjugate"), "np.imag(({}).conjugate() ** 2)")):
    probe(_key, _call.format("x0 + 1j * x1"), normal(3, 4), normal(4))
    probe(_key, _call.format("x0 * np.exp(0.5j * x1)"), positive(5), normal())
for _f in (np.real, np.imag, np.conj, np.angle):  # of a real array: itself, or constant
    probe(_f, "np.{}(x0) * x0".format(_f.__name__), nonzero(3))

# Elementwise binary functions: shapes that broadcast, and scalars on either side.
BROADCAST_PAIRS = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3), (3,)), ((), (3, 4)),
                   ((3, 4), ()), ((4,), (3, 1))]
for _f, _first, _second in ((np.power, positive, normal), (np.maximum, normal, normal),
                            (np.minimum, normal, normal), (np.logaddexp, normal, normal),
                            (np.fmax, normal, normal), (np.fmin, normal, normal),
                            (np.logaddexp2, normal, normal), (np.arctan2, normal, nonzero),
                            (np.hypot, nonzero, nonzero), (np.copysign, nonzero, nonzero),
                            (np.add, normal, normal), (np.subtract, normal, normal),
                            (np.multiply, normal, normal), (np.divide, normal, nonzero),
                            (np.true_divide, normal, nonzero)):
    for _a, _b in BROADCAST_PAIRS:
        probe(_f, "np.{}(x0, x1)".format(_f.__name__), _first(*_a), _second(*_b))
probe(np.power, "np.power(x0, 3)", normal(3, 4))
probe(np.power, "np.power(x0, 0.5)", positive(3, 4))
probe(np.power, "np.power(2.0, x0)", normal(3, 4))
probe(np.maximum, "np.maximum(x0, 0.0)", nonzero(3, 4))
probe(np.minimum, "np.minimum(x0, 0.0)", nonzero(3, 4))
probe(np.sinc, "np.sinc(x0 * 0.0)", normal(3))  # the partial at 0
probe(np.heaviside, "np.heaviside(LO, x0)", normal(4))  # x0 where LO is 0
probe(np.heaviside, "np.heaviside(x0, x1) * x0", nonzero(3, 4), normal())
probe(np.nan_to_num, "np.nan_to_num(np.log(x0))", nonzero(3, 4))  # nan where x0 < 0

probe(np.clip, "np.clip(x0, -0.5, 0.7)", avoiding(3, 4))
probe(Method("clip"), "x0.clip(-0.5, 0.7)", avoiding(3, 4))
probe(Method("clip"), "x0.clip(max=0.7)", avoiding(5))
probe(Method("clip"), "x0.clip(min=LO)", avoiding(3, 4))
probe(Method("clip"), "x0.clip(x1, x2)", normal(3, 4), normal(), positive(3, 1))
probe(np.remainder, "np.remainder(x0, 2.5)", normal(3, 4))
probe(np.remainder, "np.mod(x0, x1)", normal(3, 4), lambda rng: rng.uniform(1.5, 2.5, size=4))
probe(np.clip, "np.clip(x0, a_min=-0.5, a_max=0.7)", avoiding(5))
probe(np.clip, "np.clip(x0, LO, 0.7)", avoiding(3, 4))
probe(np.clip, "np.clip(x0, LO, 0.7)", avoiding(3, 1))
probe(np.clip, "np.clip(x0, -0.5, 0.7)", avoiding())
# bounds that are differentiated: the result moves with a bound where it is attained
probe(np.clip, "np.clip(x0, x1, 0.7)", avoiding(3, 4), normal(3, 4))
probe(np.clip, "np.clip(x0, -0.5, x1)", avoiding(3, 4), normal(4))
probe(np.clip, "np.clip(x0, x1, x2)", normal(3, 4), normal(), positive(3, 1))
probe(np.clip, "np.clip(x0, None, x1)", normal(5), normal())

probe(np.where, "np.where(x0 > 0.0, x0, x1)", nonzero(3, 4), normal(3, 4))
probe(np.where, "np.where(COND, x0, x1)", normal(3, 1), normal(4))
probe(np.where, "np.where(COND, x0, x1)", normal(), normal(3, 4))
probe(np.where, "np.where(COND, x0, 0.0)", normal(3, 4))
probe(np.where, "np.where(COND, 1.0, x0)", normal(4))
probe(np.where, "np.where(x0 > x1, x0 - x1, 0.0)", normal(3, 4), normal(4))

# Products: vector.vector, matrix.vector, vector.matrix, matrix.matrix, stacks.
PRODUCT_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4))]
STACKED_SHAPES = [((2, 2, 3), (3, 4)), ((2, 2, 3), (2, 3, 4)), ((3,), (2, 3, 4)),
                  ((2, 2, 3), (3,)), ((2, 1, 2, 3), (3, 3, 4))]
for _a, _b in PRODUCT_SHAPES + STACKED_SHAPES:
    probe(S.MatMult, "x0 @ x1", normal(*_a), normal(*_b))
    probe(np.matmul, "np.matmul(x0, x1)", normal(*_a), normal(*_b))
for _a, _b in PRODUCT_SHAPES + [((), (2, 3)), ((2, 3), ()), ((2, 2, 3), (3,)),
                                ((2, 2, 3), (3, 4))]:
    probe(np.dot, "np.dot(x0, x1)", normal(*_a), normal(*_b))
for _a, _b in PRODUCT_SHAPES:
    probe(Method("dot"), "x0.dot(x1)", normal(*_a), normal(*_b))
probe(Method("dot"), "x0.T.dot(x1)", normal(3, 2), normal(3, 4))

probe(np.inner, "np.inner(x0, x1)", normal(3), normal(3))
probe(np.inner, "np.inner(x0, x1)", normal(2, 3), normal(4, 3))
probe(np.inner, "np.inner(x0, x1)", normal(2, 3), normal(3))
probe(np.outer, "np.outer(x0, x1)", normal(3), normal(4))
probe(np.outer, "np.outer(x0, x1)", normal(2, 2), normal(3))

for _subscripts, _shapes in (("ij,jk->ik", ((2, 3), (3, 4))), ("ij,ij->", ((2, 3), (2, 3))),
                             ("i,j->ij", ((3,), (4,))), ("ij,jk", ((2, 3), (3, 4))),
                             ("ij,j->i", ((2, 3), (3,))), ("bij,bjk->bik", ((2, 2, 3), (2, 3, 4))),
                             ("i,i->", ((4,), (4,))), ("ij,kj->ikj", ((2, 3), (4, 3)))):
    probe(np.einsum, "np.einsum({!r}, x0, x1)".format(_subscripts),
          *(normal(*s) for s in _shapes), arity=3)
for _subscripts, _shapes in (("ij,jk,kl->il", ((2, 3), (3, 4), (4, 2))),
                             ("i,ij,j->", ((3,), (3, 4), (4,))), ("bi,ij,bj->b", ((2, 3), (3, 4), (2, 4))),
                             ("ij,jk,kl,lm->im", ((2, 3), (3, 2), (2, 4), (4, 3)))):
    probe(np.einsum, "np.einsum({!r}, {})".format(_subscripts, ", ".join(
        "x{}".format(i) for i in range(len(_shapes)))), *(normal(*s) for s in _shapes),
        arity=len(_shapes) + 1)
for _subscripts, _shape in (("ij->j", (3, 4)), ("ij->", (3, 4)), ("ij->ji", (3, 4)),
                            ("ijk->ki", (2, 3, 4))):
    probe(np.einsum, "np.einsum({!r}, x0)".format(_subscripts), normal(*_shape), arity=2)

probe(S.MatMult, "x0 @ x0", normal(3, 3))
probe(np.dot, "np.dot(x0, x0)", normal(4))
probe(np.einsum, "np.einsum('ij,ij->', x0, x0)", normal(2, 3), arity=3)
probe(np.einsum, "np.einsum('ij,ij->i', x0, x0)", normal(2, 3), arity=3)


def with_zero(*shape):
    """Normal draws with one exact zero (the product's gradient is still finite)."""
    def make(rng):
        x = nonzero(*shape)(rng)
        x.flat[1] = 0.0
        return x
    return make


def with_zeros(*shape):
    """Normal draws with zeros at the start, inside and twice in a row."""
    def make(rng):
        x = nonzero(*shape)(rng)
        x.flat[[0, 5, 6]] = 0.0
        return x
    return make


# Reductions: axis None/0/1/-1 (and a tuple on a 3-d array), keepdims True/False.
REDUCTION_AXES = [[], ["axis=0"], ["axis=1"], ["axis=-1"], ["axis=None"]]


def reductions(primitive, head, domain):
    """``head`` is ``np.sum(x0`` or ``x0.sum(``: the probes add the keywords."""
    def spell(keywords):
        lead = ", " if head.endswith("x0") and keywords else ""
        return head + lead + ", ".join(keywords) + ")"

    for axis in REDUCTION_AXES:
        for keepdims in ([], ["keepdims=True"], ["keepdims=False"]):
            probe(primitive, spell(axis + keepdims), domain(3, 4))
    probe(primitive, spell(["axis=(0, 2)"]), domain(2, 3, 4))
    probe(primitive, spell(["axis=(0, 2)", "keepdims=True"]), domain(2, 3, 4))
    probe(primitive, spell([]), domain(5))


for _f in (np.sum, np.mean, np.prod, np.max, np.amax, np.min, np.amin):
    reductions(_f, "np." + _f.__name__ + "(x0", nonzero if _f is np.prod else normal)
    # the axis given positionally
    probe(_f, "np.{}(x0, 1)".format(_f.__name__), nonzero(3, 4))
for _name in ("sum", "mean", "prod", "max", "min"):
    reductions(Method(_name), "x0." + _name + "(", nonzero if _name == "prod" else normal)
    probe(Method(_name), "x0.{}(0)".format(_name), nonzero(3, 4))

probe(np.prod, "np.prod(x0)", with_zero(4))
probe(np.prod, "np.prod(x0, axis=1)", with_zero(2, 3))

# Shapes.
probe(np.reshape, "np.reshape(x0, (4, 3))", normal(3, 4))
probe(np.reshape, "np.reshape(x0, (4, 3), order='F')", normal(3, 4))
probe(np.ravel, "np.ravel(x0, order='F')", normal(3, 4))
probe(Method("flatten"), "x0.flatten('F')", normal(3, 4))
probe(Method("ravel"), "x0.ravel(order='F')", normal(3, 4))
probe(np.full, "np.full((2, 3), x0)", normal())
probe(np.full, "np.full((2, 3), x0)", normal(3))
probe(np.full_like, "np.full_like(ONES34, x0)", normal(4))
probe(Method("astype"), "x0.astype(float)", normal(3, 4))
probe(Method("astype"), "x0.astype(np.float64) * x0", normal(3))
probe(np.clip, "np.clip(x0, None, 0.7)", avoiding(3, 4))
probe(np.reshape, "np.reshape(x0, -1)", normal(3, 4))
probe(np.reshape, "np.reshape(x0, (2, -1, 2))", normal(3, 4))
probe(np.ravel, "np.ravel(x0)", normal(3, 4))
probe(np.squeeze, "np.squeeze(x0)", normal(3, 1, 4))
probe(np.squeeze, "np.squeeze(x0, 1)", normal(3, 1, 1))
probe(np.squeeze, "np.squeeze(x0, axis=1)", normal(3, 1, 1))
probe(np.expand_dims, "np.expand_dims(x0, 0)", normal(3, 4))
probe(np.expand_dims, "np.expand_dims(x0, -1)", normal(3, 4))
probe(np.expand_dims, "np.expand_dims(x0, axis=1)", normal(3, 4))
probe(np.atleast_1d, "np.atleast_1d(x0)", normal())
probe(np.atleast_1d, "np.atleast_1d(x0)", normal(3))
probe(np.atleast_2d, "np.atleast_2d(x0)", normal(3))
probe(np.copy, "np.copy(x0)", normal(3, 4))
probe(np.asarray, "np.asarray(x0)", normal(3, 4))
probe(np.float64, "np.float64(x0) * 1.0", normal())
probe(Method("item"), "x0.item()", normal(1, 1))
probe(Method("item"), "x0[1].item()", normal(3))
probe(np.array, "np.array(x0)", normal(3, 4))
probe(np.array, "np.array([x0, x1])", normal(3), normal(3))
probe(np.array, "np.array([x0, 2.0 * x0])", normal(2, 3))
probe(Method("reshape"), "x0.reshape(4, 3)", normal(3, 4))
probe(Method("reshape"), "x0.reshape((2, 6))", normal(3, 4))
probe(Method("reshape"), "x0.reshape(-1)", normal(3, 4))
probe(Method("reshape"), "x0.reshape(3, 1)", normal(3))
probe(Method("ravel"), "x0.ravel()", normal(3, 4))
probe(Method("flatten"), "x0.flatten()", normal(3, 4))
probe(Method("squeeze"), "x0.squeeze()", normal(3, 1, 4))
probe(Method("copy"), "x0.copy()", normal(3, 4))
probe(np.transpose, "np.transpose(x0)", normal(3, 4))
probe(np.transpose, "np.transpose(x0)", normal(2, 3, 4))
probe(np.transpose, "np.transpose(x0, (1, 0, 2))", normal(2, 3, 4))
probe(np.transpose, "np.transpose(x0, axes=(2, 0, 1))", normal(2, 3, 4))
probe(Method("transpose"), "x0.transpose()", normal(3, 4))
probe(Method("transpose"), "x0.transpose()", normal(2, 3, 4))
probe(Method("transpose"), "x0.transpose(1, 0, 2)", normal(2, 3, 4))
probe(Method("transpose"), "x0.transpose((1, 0, 2))", normal(2, 3, 4))
probe(Method("T"), "x0.T", normal(3, 4))
probe(Method("T"), "x0.T", normal(2, 3, 4))
probe(Method("T"), "x0.T", normal(3))
probe(np.concatenate, "np.concatenate([x0, x1])", normal(2, 3), normal(1, 3))
probe(np.concatenate, "np.concatenate((x0, x1), axis=1)", normal(2, 3), normal(2, 2))
probe(np.concatenate, "np.concatenate([x0, x1, x0], axis=-1)", normal(2, 3), normal(2, 1))
probe(np.concatenate, "np.concatenate([x0, x1], 0)", normal(3), normal(2))
probe(np.stack, "np.stack([x0, x1])", normal(2, 3), normal(2, 3))
probe(np.stack, "np.stack((x0, x1), axis=1)", normal(2, 3), normal(2, 3))
probe(np.stack, "np.stack([x0, x1, x0], axis=-1)", normal(2, 3), normal(2, 3))
probe(np.hstack, "np.hstack([x0, x1])", normal(3), normal(2))
probe(np.hstack, "np.hstack((x0, x1, x0))", normal(2, 3), normal(2, 1))
probe(np.vstack, "np.vstack([x0, x1])", normal(3), normal(3))
probe(np.vstack, "np.vstack((x0, x1))", normal(2, 3), normal(1, 3))
probe(np.vstack, "np.vstack([x0, x1])", normal(3), normal(2, 3))
if hasattr(np, "row_stack"):
    probe(np.row_stack, "np.row_stack([x0, x1])", normal(3), normal(2, 3))

# Statistics and running sums.
for _name in ("var", "std"):
    for _keywords in ("", ", axis=0", ", axis=1", ", axis=-1, keepdims=True", ", ddof=1",
                      ", axis=(0, 1), ddof=1, keepdims=True", ", 1"):
        probe(getattr(np, _name), "np.{}(x0{})".format(_name, _keywords), normal(3, 4))
        probe(Method(_name), "x0.{}({})".format(_name, _keywords[2:]), normal(3, 4))
    probe(getattr(np, _name), "np.{}(x0, axis=(0, 2))".format(_name), normal(2, 3, 4))
    probe(getattr(np, _name), "np.{}(x0)".format(_name), normal(5))
for _name, _domain in (("cumsum", normal), ("cumprod", nonzero)):
    for _keywords in ("", ", axis=0", ", axis=1", ", axis=-1", ", 0"):
        probe(getattr(np, _name), "np.{}(x0{})".format(_name, _keywords), _domain(3, 4))
        probe(Method(_name), "x0.{}({})".format(_name, _keywords[2:]), _domain(3, 4))
    probe(getattr(np, _name), "np.{}(x0)".format(_name), _domain(5))
for _keywords in ("", ", axis=0", ", axis=1"):  # the products of the others, at zeros
    probe(np.cumprod, "np.cumprod(x0{})".format(_keywords), with_zero(3, 4))
    probe(np.cumprod, "np.cumprod(x0{})".format(_keywords), with_zeros(3, 4))
probe(np.diff, "np.diff(x0)", normal(5))
probe(np.diff, "np.diff(x0)", normal(3, 4))
probe(np.diff, "np.diff(x0, axis=0)", normal(3, 4))
probe(np.diff, "np.diff(x0, 2)", normal(6))
for _mode in ("full", "same", "valid"):
    probe(np.convolve, "np.convolve(x0, x1, {!r})".format(_mode), normal(6), normal(3))
    probe(np.convolve, "np.convolve(x0, x1, mode={!r})".format(_mode), normal(2), normal(5))
probe(np.diff, "np.diff(x0, n=3, axis=1)", normal(2, 5))
probe(np.diff, "np.diff(x0, 2, 0)", normal(4, 3))

# Rearrangements.
probe(np.roll, "np.roll(x0, 2)", normal(5))
probe(np.roll, "np.roll(x0, -1)", normal(3, 4))
probe(np.roll, "np.roll(x0, 1, axis=1)", normal(3, 4))
probe(np.roll, "np.roll(x0, (1, -2), axis=(0, 1))", normal(3, 4))
probe(np.flip, "np.flip(x0)", normal(3, 4))
probe(np.flip, "np.flip(x0, 1)", normal(3, 4))
probe(np.flip, "np.flip(x0, axis=(0, 2))", normal(2, 3, 4))
probe(np.swapaxes, "np.swapaxes(x0, 0, 1)", normal(3, 4))
probe(np.swapaxes, "np.swapaxes(x0, -1, 0)", normal(2, 3, 4))
probe(np.moveaxis, "np.moveaxis(x0, 0, -1)", normal(2, 3, 4))
probe(np.moveaxis, "np.moveaxis(x0, (0, 1), (2, 0))", normal(2, 3, 4))
probe(np.fliplr, "np.fliplr(x0)", normal(3, 4))
probe(np.flipud, "np.flipud(x0)", normal(3, 4))
probe(np.flipud, "np.flipud(x0)", normal(5))
for _f in (np.triu, np.tril):
    probe(_f, "np.{}(x0)".format(_f.__name__), normal(3, 4))
    probe(_f, "np.{}(x0, 1)".format(_f.__name__), normal(4, 4))
    probe(_f, "np.{}(x0, k=-1)".format(_f.__name__), normal(2, 3, 3))
probe(np.diag, "np.diag(x0)", normal(4))
probe(np.diag, "np.diag(x0, 1)", normal(3))
probe(np.diag, "np.diag(x0, k=-2)", normal(3))
probe(np.diag, "np.diag(x0)", normal(3, 3))
probe(np.diag, "np.diag(x0)", normal(3, 5))
probe(np.diag, "np.diag(x0, 1)", normal(4, 3))
probe(np.diag, "np.diag(x0, -1)", normal(3, 4))
probe(np.repeat, "np.repeat(x0, 3)", normal(4))
probe(np.repeat, "np.repeat(x0, 2)", normal(2, 3))
probe(np.repeat, "np.repeat(x0, 2, axis=1)", normal(2, 3))
probe(np.repeat, "np.repeat(x0, [1, 0, 2], axis=0)", normal(3, 2))
probe(np.repeat, "np.repeat(x0, 3)", normal())
probe(np.tile, "np.tile(x0, 3)", normal(4))
probe(np.tile, "np.tile(x0, (2, 1))", normal(4))
probe(np.tile, "np.tile(x0, (2, 3))", normal(2, 3))
probe(np.tile, "np.tile(x0, 2)", normal(2, 3))
probe(np.tile, "np.tile(x0, (2, 1, 2))", normal(2, 3))
# broadcast_to: a new leading axis, a size-1 axis stretched, both
probe(np.broadcast_to, "np.broadcast_to(x0, (2, 3))", normal(3))
probe(np.broadcast_to, "np.broadcast_to(x0, (3, 4))", normal(3, 1))
probe(np.broadcast_to, "np.broadcast_to(x0, (2, 3, 4))", normal(1, 4))

probe(np.rot90, "np.rot90(x0)", normal(3, 4))
probe(np.rot90, "np.rot90(x0, 2)", normal(3, 4))
probe(np.rot90, "np.rot90(x0, k=-1, axes=(1, 2))", normal(2, 3, 4))
probe(np.rollaxis, "np.rollaxis(x0, 2)", normal(2, 3, 4))
probe(np.rollaxis, "np.rollaxis(x0, 0, 3)", normal(2, 3, 4))
probe(np.rollaxis, "np.rollaxis(x0, -1, start=1)", normal(2, 3, 4))
probe(np.broadcast_to, "np.broadcast_to(x0, (3, 4))", normal(4))
probe(np.broadcast_to, "np.broadcast_to(x0, (2, 3, 4))", normal(3, 1))
probe(np.atleast_3d, "np.atleast_3d(x0)", normal(3, 4))
probe(np.atleast_3d, "np.atleast_3d(x0)", normal(3))
probe(np.column_stack, "np.column_stack([x0, x1])", normal(3), normal(3, 2))
probe(np.column_stack, "np.column_stack((x0, x1, x0))", normal(4), normal(4))
probe(np.append, "np.append(x0, x1)", normal(2, 3), normal(4))
probe(np.append, "np.append(x0, x1, axis=0)", normal(2, 3), normal(1, 3))
probe(np.append, "np.append(x0, x1, 1)", normal(2, 3), normal(2, 2))
for _split, _expr, _shape in ((np.split, "np.split(x0, 3)", (6,)),
                              (np.split, "np.split(x0, [1, 3], axis=1)", (2, 5)),
                              (np.array_split, "np.array_split(x0, 3)", (7,)),
                              (np.array_split, "np.array_split(x0, 2, 1)", (2, 5)),
                              (np.hsplit, "np.hsplit(x0, 2)", (3, 4)),
                              (np.hsplit, "np.hsplit(x0, [1])", (5,)),
                              (np.vsplit, "np.vsplit(x0, 2)", (4, 3)),
                              (np.dsplit, "np.dsplit(x0, [1])", (2, 2, 3))):
    probe(_split, "np.sum({0}[0] ** 2) * np.sum({0}[-1]) + {0}[1]".format(_expr), normal(*_shape))
probe(np.split, "np.split(x0, 3)[1]", normal(6))
# the pieces' adjoint as one array (np.array of the pieces), not a list
probe(np.split, "np.array(np.split(x0, 2)) * x0[:3]", normal(6))
for _mode in ("full", "same", "valid"):
    probe(np.correlate, "np.correlate(x0, x1, {!r})".format(_mode), normal(6), normal(3))
    probe(np.correlate, "np.correlate(x0, x1, mode={!r})".format(_mode), normal(2), normal(5))
probe(np.correlate, "np.correlate(x0, x1)", normal(5), normal(2))

# Reductions beyond sums: NaN-skipping ones, ptp, weighted averages, quantiles, trapezoid.
NANS = "np.where(MASK, x0, np.nan)"
for _f in (np.nansum, np.nanmean):
    for _keywords in ("", ", axis=0", ", axis=1, keepdims=True", ", axis=-1", ", 1"):
        probe(_f, "np.{}({}{})".format(_f.__name__, NANS, _keywords), normal(3, 4))
    probe(_f, "np.{}(x0)".format(_f.__name__), normal(5))
for _keywords in ("", ", axis=0", ", axis=1, keepdims=True", ", keepdims=True", ", 1"):
    probe(np.ptp, "np.ptp(x0{})".format(_keywords), normal(3, 4))
probe(np.ptp, "np.ptp(x0, axis=(0, 2))", normal(2, 3, 4))
for _keywords in ("", ", axis=0", ", axis=1, keepdims=True", ", weights=LO, axis=1",
                  ", 0, ONES34 + LO", ", axis=None, weights=ONES34 + LO", ", axis=(0, 1)"):
    probe(np.average, "np.average(x0{})".format(_keywords), normal(3, 4))
for _f, _q in ((np.quantile, ", 0.3"), (np.quantile, ", q=0.75"), (np.percentile, ", 40"),
               (np.percentile, ", q=90.0"), (np.median, "")):
    for _keywords in ("", ", axis=0", ", axis=1, keepdims=True", ", keepdims=True", ", axis=-1"):
        probe(_f, "np.{}(x0{}{})".format(_f.__name__, _q, _keywords), normal(3, 4))
    probe(_f, "np.{}(x0{})".format(_f.__name__, _q), normal(6))
for _keywords in ("", ", dx=0.5", ", axis=0", ", LO", ", x=LO, axis=-1", ", ONES34 + LO, axis=1",
                  ", x=LO[:3], axis=0"):
    probe(np.trapezoid, "np.trapezoid(x0{})".format(_keywords), normal(3, 4))
probe(np.trapezoid, "np.trapezoid(x0)", normal(5))

# Selections.
probe(np.diagonal, "np.diagonal(x0)", normal(3, 4))
probe(np.diagonal, "np.diagonal(x0, 1)", normal(3, 4))
probe(np.diagonal, "np.diagonal(x0, offset=-1, axis1=1, axis2=2)", normal(2, 3, 4))
probe(np.take, "np.take(x0, IDX)", normal(3, 4))
probe(np.take, "np.take(x0, IDX, axis=1)", normal(3, 4))
probe(np.take, "np.take(x0, [2, 0, 2], 0)", normal(3, 4))
probe(np.take, "np.take(x0, 3)", normal(5))
probe(np.take_along_axis, "np.take_along_axis(x0, np.argsort(x0, axis=1), axis=1)", normal(3, 4))
probe(np.take_along_axis, "np.take_along_axis(x0, IDX[:3, None] % 3, 0)", normal(3, 4))
probe(np.compress, "np.compress([True, False, True], x0, axis=0)", normal(3, 4))
probe(np.compress, "np.compress(COND[0], x0, 1)", normal(3, 4))
probe(np.compress, "np.compress(MASK.ravel(), x0)", normal(3, 4))
for _mode in ("", ", 'constant'", ", mode='edge'", ", 'reflect'", ", mode='symmetric'", ", 'wrap'"):
    probe(np.pad, "np.pad(x0, 2{})".format(_mode), normal(3, 4))
    probe(np.pad, "np.pad(x0, ((1, 2), (0, 3)){})".format(_mode), normal(3, 4))
probe(np.pad, "np.pad(x0, (2, 1))", normal(5))
for _keywords in ("", ", axis=0", ", 1", ", axis=None", ", axis=-1, kind='stable'"):
    probe(np.sort, "np.sort(x0{})".format(_keywords), normal(3, 4))
probe(np.sort, "np.sort(x0)", normal(6))
for _keywords in ("2", "1, axis=0", "[0, 3]", "-1, axis=None", "(1, 2), -1"):
    probe(np.partition, "np.partition(x0, {})".format(_keywords), normal(3, 4))
probe(np.partition, "np.partition(x0, 200)", normal(400))  # where NumPy's arrangement differs
probe(np.partition, "np.partition(x0, kth=1)", normal(5))

# np.select: the first true condition's choice, else the default (each may broadcast)
probe(np.select, "np.select([COND, x0 > 0.0], [x0, x1])", nonzero(3, 4), normal(3, 4))
probe(np.select, "np.select([x0 > 0.5, x0 < -0.5], [x0 * x0, np.sin(x0)], default=x1)",
      avoiding(3, 4, points=(-0.5, 0.5)), normal(4))
probe(np.select, "np.select([COND], [x0], x1)", normal(3, 1), normal())
probe(np.select, "np.select((MASK, COND), (x0, 2.0), default=x0)", normal(4))

# np.gradient: spacing none, a number, numbers per axis, coordinates; an axis; both edge orders
# (a tuple of derivatives, one per axis, stacked: the probes' cotangent is an array)
for _arguments in ("", ", 0.5", ", 2.0, 0.5", ", LO[:3] + 1.0, XP", ", 0.3, edge_order=2",
                   ", [0.0, 0.5, 1.5], XS[1:], edge_order=2", ", axis=(1, 0)"):
    probe(np.gradient, "np.stack(np.gradient(x0{}))".format(_arguments), normal(3, 4))
for _arguments in (", LO, axis=1", ", axis=0", ", axis=-1, edge_order=2"):
    probe(np.gradient, "np.gradient(x0{})".format(_arguments), normal(3, 4))
for _arguments in ("", ", 0.2", ", XS", ", XS, edge_order=2", ", edge_order=2"):
    probe(np.gradient, "np.gradient(x0{})".format(_arguments), normal(5))
probe(np.gradient, "np.gradient(x0)", normal(2))
probe(np.gradient, "np.gradient(x0, 0.5)[1]", normal(3, 4))
probe(np.gradient, "np.abs(np.gradient(x0 * (1 + 2j), 0.5)) ** 2", normal(5))  # complex f
probe(np.gradient, "np.abs(np.gradient(x0, edge_order=2) * (1 - 1j))", nonzero(5))
probe(np.gradient, "np.gradient(x0, axis=(0, 2), edge_order=2)[0]", normal(3, 2, 4))

# np.interp: x (away from the knots), the knots xp and the values fp; ends and a period
probe(np.interp, "np.interp(XS, XP, x0)", normal(4))
probe(np.interp, "np.interp(x0, XP, x1)", avoiding(6, points=(0.0, 0.5, 1.2, 2.0)), normal(4))
probe(np.interp, "np.interp(XS, x0, x1)", knots(4), normal(4))
probe(np.interp, "np.interp(x0, x1, x2)", avoiding(3, points=(0.0, 0.45, 0.9)), knots(3), normal(3))
probe(np.interp, "np.interp(XS, x0, x1, left=0.5, right=-1.0)", knots(4), normal(4))
probe(np.interp, "np.interp(x0, XP, x1, 2.0, 3.0)", avoiding(5, points=(0.0, 0.5, 1.2, 2.0)), normal(4))
probe(np.interp, "np.interp(XS, XP, x0, period=1.5)", normal(4))
probe(np.interp, "np.interp(XS, x0, x1, period=2.5)", knots(4), normal(4))
probe(np.interp, "np.interp(x0, [0.7], x1)", avoiding(3, points=(0.7,)), normal(1))
probe(np.interp, "np.interp(x0, XP, x1)", avoiding(points=(0.0, 0.5, 1.2, 2.0)), normal(4))
# complex values fp: a real x's and xp's adjoint is the real part of what reaches them
probe(np.interp, "np.abs(np.interp(x0, x1, x2 * (1 + 2j) - 0.5j)) ** 2",
      avoiding(3, points=(0.0, 0.45, 0.9)), knots(3), normal(3))

# Indexing reads.
for _expr, _shape in (("x0[1]", (3, 4)), ("x0[-1]", (3, 4)), ("x0[1:3]", (5,)),
                      ("x0[::-2]", (5,)), ("x0[1:, 2]", (3, 4)), ("x0[:, -1]", (3, 4)),
                      ("x0[-2, -3]", (3, 4)), ("x0[IDX]", (3, 4)), ("x0[IDX]", (5,)),
                      ("x0[[0, 2, 2]]", (5,)), ("x0[IDX, 1]", (3, 4)), ("x0[MASK]", (3, 4)),
                      ("x0[x0 > 0.0]", (3, 4)), ("x0[None, 1:]", (5,)), ("x0[..., 0]", (2, 3, 4)),
                      ("x0[1][2]", (3, 4)), ("x0[1:2, IDX]", (3, 4))):
    probe(GETITEM, _expr, nonzero(*_shape))


# Python's operators on arrays (rules of the builtins table; not generated from it,
# but the array behaviour of + - * / ** is what the NumPy table builds on).
OPERATOR_PROBES = []
for _op in ("+", "-", "*", "/"):
    for _a, _b in BROADCAST_PAIRS:
        OPERATOR_PROBES.append(Probe(None, "x0 {} x1".format(_op),
                                     (normal(*_a), (nonzero if _op == "/" else normal)(*_b))))
for _a, _b in BROADCAST_PAIRS:
    OPERATOR_PROBES.append(Probe(
        None, "x0 ** x1", (positive(*_a), normal(*_b))))
OPERATOR_PROBES += [Probe(None, "x0 ** 2", (normal(3, 4),)),
                    Probe(None, "-x0", (normal(3, 4),)),
                    Probe(None, "+x0", (normal(3, 4),)),
                    Probe(None, "abs(x0)", (nonzero(3, 4),))]


def operator_cases():
    for p in OPERATOR_PROBES:
        marks = [pytest.mark.xfail(strict=True, reason=p.xfail)] if p.xfail else []
        yield pytest.param(p, id=p.id, marks=marks)


def check_probe(p, tmp_path):
    arguments = p.arguments()
    module = load(tmp_path, PRELUDE, p, arguments, "numpy")
    assert_gradient_matches_differences(module, arguments, RTOL)


def check_dot_product(p, tmp_path):
    arguments = p.arguments()
    assert_dot_product(load(tmp_path, PRELUDE, p, arguments, "numpy"), arguments, seed(p), RTOL)


# --- the tests -----------------------------------------------------------------------

(test_rule_matches_finite_differences, test_rule_dot_product,
 test_rule_forward_matches_finite_differences,
 test_every_numpy_rule_has_a_probe) = table_tests(TABLE, PROBES, PRELUDE, RTOL, "numpy")


@pytest.mark.parametrize("p", list(operator_cases()))
def test_operator_on_arrays_matches_finite_differences(p, tmp_path):
    check_probe(p, tmp_path)


@pytest.mark.parametrize("p", list(operator_cases()))
def test_operator_on_arrays_dot_product(p, tmp_path):
    check_dot_product(p, tmp_path)


def test_table_covers_the_issue_list():
    required = [np.exp, np.log, np.log1p, np.expm1, np.sqrt, np.square, np.abs, np.sign,
                np.sin, np.cos, np.tan, np.tanh, np.sinh, np.cosh, np.arctan, np.arcsin,
                np.arccos, np.power, np.maximum, np.minimum, np.clip, np.where, np.logaddexp,
                np.dot, np.matmul, np.outer, np.inner, np.sum, np.mean, np.prod, np.max,
                np.min, np.linalg.norm, np.linalg.solve, np.linalg.inv, np.trace, np.einsum,
                np.reshape, np.transpose, np.expand_dims, np.squeeze, np.concatenate,
                np.stack, np.hstack, np.vstack, np.shape, np.zeros, np.ones, np.zeros_like,
                np.ones_like, np.full]
    missing = [f.__name__ for f in required if not rules.is_primitive(f)]
    assert not missing
    for key in (S.MatMult, GETITEM, Method("T"), Method("sum"), Method("reshape"),
                Method("dot")):
        assert key in rules.RULES
    for f in (np.sign, np.zeros, np.argmax, np.floor):
        assert rules.is_nondifferentiable(f)
    # their values move with their arguments: refused when those are differentiated
    for f in (np.arange, np.linspace):
        assert rules.is_primitive(f) and not rules.is_nondifferentiable(f)


@pytest.mark.parametrize("expr", ["np.einsum('ii->i', x0)",
                                  "np.einsum('...i,i->...', x0, x0[0])",
                                  "np.percentile(x0, [30, 70])",
                                  # np.dot pairs a's rows with b's stacks, unlike matmul
                                  "np.dot(x0, np.stack([x0, x0]))",
                                  # spacings, ends and periods are constants
                                  "np.gradient(x0, x0[0, 0])",
                                  "np.gradient(x0, axis=0, edge_order=x0[0, 0])",
                                  "np.interp(x0, [0.0, 1.0], [1.0, 2.0], left=x0[0, 0])",
                                  "np.interp(x0, [0.0, 1.0], [1.0, 2.0], None, x0[0, 0])",
                                  "np.interp(x0, [0.0, 1.0], [1.0, 2.0], period=x0[0, 0])"])
def test_refused_forms_raise_derivo_error(expr, tmp_path):
    """Forms the table does not differentiate say so instead of returning a number."""
    arguments = [np.random.default_rng(1).normal(size=(3, 3))]
    p = Probe(None, expr, (lambda rng: arguments[0],))
    module = load(tmp_path, PRELUDE, p, arguments, "numpy")
    with pytest.raises(derivo.DerivoError):
        derivo.grad(module.loss)(*arguments)


def test_generated_code_compiles_without_warnings(tmp_path):
    """A template's ``axes is None`` with literal axes is folded, not compiled
    (``(1, 0, 2) is None`` makes Python emit a SyntaxWarning)."""
    arguments = [np.random.default_rng(2).normal(size=(2, 3, 4))]
    p = Probe(None, "np.transpose(x0, (1, 0, 2))", (lambda rng: arguments[0],))
    module = load(tmp_path, PRELUDE, p, arguments, "numpy")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        derivative = derivo.grad(module.loss)
    assert not [str(w.message) for w in caught]
    assert "is None" not in derivative.source


def test_probe_points_are_deterministic():
    p = PROBES[(np.exp, 1)][0]
    np.testing.assert_array_equal(p.arguments()[0], p.arguments()[0])
    assert math.isfinite(float(np.sum(p.arguments()[0])))


@pytest.mark.parametrize("method", [False, True])
def test_std_of_an_array_whose_entries_are_equal_has_the_derivative_zero(method):
    # all entries equal: the apex of a cone, where 0 is a subgradient; an array
    # clipped to one value keeps every entry equal nearby, so 0 is the derivative
    def spread(x, c):
        clipped = np.clip(x, c - 1.0, -0.4)
        return (clipped.std() if method else np.std(clipped)) + c

    x = np.array([0.45, -0.81, 0.95, 0.21])
    gx, gc = derivo.grad(spread, wrt=(0, 1))(x, 0.6)
    np.testing.assert_array_equal(gx, np.zeros(4))
    assert gc == 1.0
    assert derivo.jvp(spread, (x, 0.6), (np.ones(4), 1.0))[1] == 1.0


def zero_exponent_powers(x, y):
    return np.sum(x ** y + np.power(x, y))


def test_a_zero_exponents_partial_in_the_base_is_zero_at_a_zero_base():
    x, y = np.array([0.0, 2.0, 0.0]), np.array([0.0, 3.0, 2.0])
    with np.errstate(all="raise"):  # (no 0 * inf on the way)
        np.testing.assert_array_equal(derivo.grad(zero_exponent_powers)(x, y), [0.0, 24.0, 0.0])
        tangent = derivo.jvp(zero_exponent_powers, (x, y), (np.ones(3), np.zeros(3)))[1]
    assert tangent == 24.0
    with np.errstate(all="raise"):
        exponent = derivo.grad(zero_exponent_powers, wrt=1)(x, y)
    np.testing.assert_array_equal(exponent, [0.0, 2 * 8.0 * np.log(2.0), 0.0])
