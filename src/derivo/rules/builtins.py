"""Partial derivatives of Python's operators, builtins and the math module.

One entry per primitive: ``defpartials(f, d f/d arg0, d f/d arg1, ...)``, each a
lambda of ``(ans, *args)`` where ``ans = f(*args)``; a function of a whole list
(``sum``, ``max(xs)``, ``sorted``, ``list``), not elementwise, gives its VJP instead
(``defvjp``).
"""

import math
import operator

from .. import syntax as S
from ..runtime import (copy_vjp, copysign_one, field_vjp, first_equal_vjp, items_vjp, log_times,
                       sum_vjp, unsort, values_vjp)
from . import (ARGUMENT, CONSTANT, FIELD, NEW, Method, defpartials, defvjp, nondifferentiable,
               without_rule)


# --- operators (keyed by their syntax node class) ---------------------------

defpartials(S.Add, lambda ans, x, y: 1, lambda ans, x, y: 1, label="+")
defpartials(S.Sub, lambda ans, x, y: 1, lambda ans, x, y: -1, label="-")
defpartials(S.Mult, lambda ans, x, y: y, lambda ans, x, y: x, label="*")
defpartials(S.Div, lambda ans, x, y: 1 / y, lambda ans, x, y: -ans / y, label="/")
# (x ** 0 is 1 for every x: its partial in x is 0, also at x = 0, where 0 * x ** -1
# would divide by zero)
defpartials(S.Pow, lambda ans, x, y: y * x ** (y - (y != 0)), lambda ans, x, y: log_times(ans, x), label="**")
defpartials(S.Mod, lambda ans, x, y: 1, lambda ans, x, y: -((x - ans) / y), label="%")
defpartials(S.USub, lambda ans, x: -1, label="unary -")
defpartials(S.UAdd, lambda ans, x: 1, label="unary +")

# --- builtins ---------------------------------------------------------------

defpartials(abs, lambda ans, x: copysign_one(x))
defpartials(float, lambda ans, x: 1)
defpartials(pow, lambda ans, x, y: y * x ** (y - (y != 0)), lambda ans, x, y: log_times(ans, x))
# Ties go to the first argument (of a list, to the first item equal to the result),
# as Python's min and max return the first.
defpartials(max, lambda ans, x, y: 1.0 if x >= y else 0.0, lambda ans, x, y: 0.0 if x >= y else 1.0, returns=ARGUMENT)
defpartials(min, lambda ans, x, y: 1.0 if x <= y else 0.0, lambda ans, x, y: 0.0 if x <= y else 1.0, returns=ARGUMENT)
defvjp(max, lambda g, ans, iterable: first_equal_vjp(g, ans, iterable))
defvjp(min, lambda g, ans, iterable: first_equal_vjp(g, ans, iterable))
defvjp(sorted, lambda g, ans, iterable: unsort(g, iterable))
# copies: the items' adjoints, in a list of their own
defvjp(list, lambda g, ans, iterable: copy_vjp(g, iterable))
defvjp(tuple, lambda g, ans, iterable: copy_vjp(g, iterable))
defvjp(sum, lambda g, ans, iterable, start=0: sum_vjp(g, iterable), lambda g, ans, iterable, start=0: g, returns=NEW)
nondifferentiable(int, round, bool, len, range, isinstance, print, returns=NEW)
# p.w with no rule for .w: a field of a container (see derivo.trees), an item read by name
defvjp(FIELD, lambda g, ans, x, name: field_vjp(g, x, name), CONSTANT, label=".field", returns=0)
# a dict's views: the adjoint of the i-th value (of the i-th pair) is its key's
defvjp(Method("values"), lambda g, ans, d: values_vjp(g, d), returns=NEW)
defvjp(Method("items"), lambda g, ans, d: items_vjp(g, d), returns=NEW)
nondifferentiable(Method("keys"), returns=NEW)
without_rule(divmod, returns=NEW)  # its remainder has a derivative (x % y has a rule)

# --- math -------------------------------------------------------------------

defpartials(math.sin, lambda ans, x: math.cos(x))
defpartials(math.cos, lambda ans, x: -math.sin(x))
defpartials(math.tan, lambda ans, x: 1 + ans * ans)
defpartials(math.asin, lambda ans, x: 1 / math.sqrt(1 - x * x))
defpartials(math.acos, lambda ans, x: -1 / math.sqrt(1 - x * x))
defpartials(math.atan, lambda ans, x: 1 / (1 + x * x))
defpartials(math.atan2, lambda ans, y, x: x / (x * x + y * y), lambda ans, y, x: -y / (x * x + y * y))
defpartials(math.sinh, lambda ans, x: math.cosh(x))
defpartials(math.cosh, lambda ans, x: math.sinh(x))
defpartials(math.tanh, lambda ans, x: 1 - ans * ans)
defpartials(math.asinh, lambda ans, x: 1 / math.sqrt(x * x + 1))
defpartials(math.acosh, lambda ans, x: 1 / math.sqrt(x * x - 1))
defpartials(math.atanh, lambda ans, x: 1 / (1 - x * x))
defpartials(math.exp, lambda ans, x: ans)
defpartials(math.expm1, lambda ans, x: ans + 1)
defpartials(math.log, lambda ans, x: 1 / x)
defpartials(math.log, lambda ans, x, base: 1 / (x * math.log(base)), lambda ans, x, base: -ans / (base * math.log(base)))
defpartials(math.log1p, lambda ans, x: 1 / (1 + x))
defpartials(math.log2, lambda ans, x: 1 / (x * math.log(2)))
defpartials(math.log10, lambda ans, x: 1 / (x * math.log(10)))
defpartials(math.sqrt, lambda ans, x: 0.5 / ans)
defpartials(math.pow, lambda ans, x, y: y * x ** (y - (y != 0)), lambda ans, x, y: log_times(ans, x))
defpartials(math.hypot, lambda ans, x, y: x / ans, lambda ans, x, y: y / ans)
defpartials(math.erf, lambda ans, x: 2 / math.sqrt(math.pi) * math.exp(-x * x))
defpartials(math.erfc, lambda ans, x: -2 / math.sqrt(math.pi) * math.exp(-x * x))
defpartials(math.fabs, lambda ans, x: math.copysign(1.0, x))
defpartials(math.copysign, lambda ans, x, y: math.copysign(1.0, x) * math.copysign(1.0, y), CONSTANT)
defpartials(math.degrees, lambda ans, x: 180 / math.pi)
defpartials(math.radians, lambda ans, x: math.pi / 180)
defpartials(math.fmod, lambda ans, x, y: 1, lambda ans, x, y: -math.trunc(x / y))
defpartials(math.exp2, lambda ans, x: ans * math.log(2))
defpartials(math.cbrt, lambda ans, x: 1 / (3 * ans * ans))
defpartials(math.gamma, lambda ans, x: ans * digamma(x))
defpartials(math.lgamma, lambda ans, x: digamma(x))  # of log |Gamma(x)|, for x < 0 too
defpartials(math.hypot, lambda ans, x, y, z: x / ans, lambda ans, x, y, z: y / ans, lambda ans, x, y, z: z / ans)
defpartials(math.hypot, lambda ans, x, y, z, w: x / ans, lambda ans, x, y, z, w: y / ans,
            lambda ans, x, y, z, w: z / ans, lambda ans, x, y, z, w: w / ans)
defvjp(math.fsum, lambda g, ans, iterable: sum_vjp(g, iterable), returns=NEW)
defvjp(math.prod, lambda g, ans, iterable, start=1: others_product(g * start, iterable),
       lambda g, ans, iterable, start=1: g * math.prod(iterable), returns=NEW)
# the distance's gradient is the unit vector from q to p (undefined where p == q)
defvjp(math.dist, lambda g, ans, p, q: towards(g / ans, p, q),
       lambda g, ans, p, q: towards(g / ans, q, p), returns=NEW)
nondifferentiable(math.factorial, math.floor, math.ceil, math.trunc, math.isnan,
                  math.isinf, math.isfinite, math.isclose, math.comb, math.perm,
                  math.gcd, returns=NEW)


# --- helpers the math rules call ----------------------------------------------

def others_product(adjoint, items):
    """The adjoint of ``math.prod(items)``: each item's is the product of the
    others (no division: zeros are fine)."""
    items = list(items)
    return [adjoint * math.prod(items[:i] + items[i + 1:]) for i in range(len(items))]


def others_product_in_items(weights, adjoint, items):
    """others_product's derivative in ``items``, one map both ways (it is
    symmetric): item i's entry is adjoint * sum over k != i of weights_k times
    the product of the items but i and k.  A Hessian through math.prod uses it."""
    items = list(items)
    n = len(items)
    return [adjoint * sum((weights[k] * math.prod(items[j] for j in range(n) if j not in (i, k))
                           for k in range(n) if k != i), 0.0)
            for i in range(n)]


def towards(scale, p, q):
    """``scale * (p - q)``, coordinate by coordinate, as a list."""
    return [scale * (a - b) for a, b in zip(p, q)]


def digamma(x):
    """The derivative of ``math.lgamma``: shifted up to x >= 10 by psi(x) = psi(x + 1) - 1/x,
    then the asymptotic series; reflected below 0 (exact to about 1e-15)."""
    if x <= 0:
        return digamma(1 - x) - math.pi / math.tan(math.pi * x)
    shift = 0.0
    while x < 10:
        shift -= 1 / x
        x += 1
    inverse = 1 / (x * x)
    series = inverse * (1 / 12 - inverse * (1 / 120 - inverse * (1 / 252 - inverse * (
        1 / 240 - inverse / 132))))
    return shift + math.log(x) - 0.5 / x - series


def trigamma(x):
    """The derivative of :func:`digamma`, the same way."""
    if x <= 0:
        return -trigamma(1 - x) + (math.pi / math.sin(math.pi * x)) ** 2
    shift = 0.0
    while x < 10:
        shift += 1 / (x * x)
        x += 1
    inverse = 1 / (x * x)
    series = 1 / x + inverse / 2 + inverse / x * (1 / 6 - inverse * (1 / 30 - inverse * (
        1 / 42 - inverse * (1 / 30 - inverse * (5 / 66 - inverse * 691 / 2730)))))
    return shift + series


defpartials(digamma, lambda ans, x: trigamma(x))
# others_product(adjoint, items) = [adjoint * P_i]: linear in adjoint, and its
# derivative in items is the same symmetric map for tangents and for adjoints
defvjp(others_product, lambda g, ans, adjoint, items: sum(map(operator.mul, g, others_product(1.0, items)), 0.0),
       lambda g, ans, adjoint, items: others_product_in_items(g, adjoint, items), returns=NEW)
without_rule(trigamma, others_product_in_items, towards, returns=NEW)
