"""End-to-end tests of reverse mode: one small test per construct.

Every derivative derivo computes is compared with a central finite difference
(``checks.numeric_grad``) or with a closed form, never with derivo itself.
The functions under test live at module level (or inside a test function) so
that derivo can read their source.
"""

import math
import operator

import numpy as np
import pytest

import derivo
from checks import assert_close, assert_grad_matches


def cases(*entries):
    """Flatten ``(function, [args, ...], wrt)`` entries into pytest params."""
    params = []
    for f, points, wrt in entries:
        for args in points:
            params.append(pytest.param(f, args, wrt, id=f"{f.__name__}{args}-wrt{wrt}"))
    return params


# ---------------------------------------------------------------------------
# arithmetic: + - * / ** % and unary minus, ints and floats mixed
# ---------------------------------------------------------------------------

def add(x, y):
    return x + y + 3


def add_int_left(x):
    return 2 + x


def sub(x, y):
    return x - y - 1


def sub_int_left(x):
    return 5 - x


def mul(x, y):
    return x * y * 3


def mul_int_left(x):
    return 4 * x


def div(x, y):
    return x / y


def div_int(x):
    return x / 4 + 1 / x


def neg(x, y):
    return -x * y + -(x + y)


def neg_twice(x):
    return -(-x) * x


def mod_const(x):
    return x % 2.0 * x


def mod_int_divisor(x):
    return (3.0 * x) % 4


def mod_var_divisor(x, y):
    return x % y


def mixed(x, n):
    return (x * n + 1) / (n - x) - n ** 2 * x


def pow_int(x):
    return x ** 3


def pow_neg_int(x):
    return x ** -2


def pow_half(x):
    return x ** 0.5


def pow_base(x):
    return 2.0 ** x


def pow_int_base(x):
    return 3 ** x


def pow_both(x, y):
    return x ** y


def pow_zero(x):
    return x ** 0 + x


ARITH = cases(
    (add, [(1.5, -2.0), (-0.3, 4.0)], (0, 1)),
    (add_int_left, [(1.5,), (-7.0,)], 0),
    (sub, [(1.5, -2.0), (-0.3, 4.0)], (0, 1)),
    (sub_int_left, [(1.5,), (-7.0,)], 0),
    (mul, [(1.5, -2.0), (-0.3, 4.0)], (0, 1)),
    (mul_int_left, [(1.5,), (-7.0,)], 0),
    (div, [(1.5, -2.0), (-0.3, 4.0), (3.0, 0.25)], (0, 1)),
    (div_int, [(1.5,), (-0.7,)], 0),
    (neg, [(1.5, -2.0), (-0.3, 4.0)], (0, 1)),
    (neg_twice, [(1.5,), (-2.5,)], 0),
    (mod_const, [(1.3,), (-1.3,), (5.7,)], 0),
    (mod_int_divisor, [(0.4,), (-2.1,), (3.3,)], 0),
    (mod_var_divisor, [(7.5, 2.0), (-7.5, 2.0), (7.5, -2.0), (1.3, 0.7)], (0, 1)),
    (mixed, [(1.5, 3), (-0.5, 2)], 0),
    (pow_int, [(1.5,), (-2.0,), (0.0,)], 0),
    (pow_neg_int, [(1.5,), (-2.0,)], 0),
    (pow_half, [(0.25,), (9.0,)], 0),
    (pow_base, [(1.5,), (-2.0,), (0.0,)], 0),
    (pow_int_base, [(0.5,), (-1.0,)], 0),
    (pow_both, [(1.5, 2.5), (0.5, -1.5), (3.0, 0.0)], (0, 1)),
    (pow_zero, [(1.5,), (-2.0,)], 0),
)


@pytest.mark.parametrize("f, args, wrt", ARITH)
def test_arithmetic(f, args, wrt):
    assert_grad_matches(f, *args, wrt=wrt)


def test_pow_closed_forms():
    assert_close(derivo.grad(pow_int)(-2.0), 3 * (-2.0) ** 2)
    assert_close(derivo.grad(pow_base)(1.5), math.log(2.0) * 2.0 ** 1.5)
    dx, dy = derivo.grad(pow_both, wrt=(0, 1))(1.5, 2.5)
    assert_close(dx, 2.5 * 1.5 ** 1.5)
    assert_close(dy, math.log(1.5) * 1.5 ** 2.5)


def test_mod_closed_form():
    # d/dy (x % y) = -floor(x / y) away from the jumps
    dx, dy = derivo.grad(mod_var_divisor, wrt=(0, 1))(-7.5, 2.0)
    assert_close(dx, 1.0)
    assert_close(dy, -math.floor(-7.5 / 2.0))


# ---------------------------------------------------------------------------
# every math function
# ---------------------------------------------------------------------------

def m_sin(x):
    return math.sin(x)


def m_cos(x):
    return math.cos(x)


def m_tan(x):
    return math.tan(x)


def m_asin(x):
    return math.asin(x)


def m_acos(x):
    return math.acos(x)


def m_atan(x):
    return math.atan(x)


def m_atan2(y, x):
    return math.atan2(y, x)


def m_sinh(x):
    return math.sinh(x)


def m_cosh(x):
    return math.cosh(x)


def m_tanh(x):
    return math.tanh(x)


def m_exp(x):
    return math.exp(x)


def m_expm1(x):
    return math.expm1(x)


def m_log(x):
    return math.log(x)


def m_log_base_const(x):
    return math.log(x, 3.0)


def m_log_base(x, b):
    return math.log(x, b)


def m_log1p(x):
    return math.log1p(x)


def m_log2(x):
    return math.log2(x)


def m_log10(x):
    return math.log10(x)


def m_sqrt(x):
    return math.sqrt(x)


def m_pow(x, y):
    return math.pow(x, y)


def m_pow_int(x):
    return math.pow(x, 3)


def m_hypot(x, y):
    return math.hypot(x, y)


def m_erf(x):
    return math.erf(x)


def m_erfc(x):
    return math.erfc(x)


def m_fabs(x):
    return math.fabs(x)


def m_composed(x, y):
    return math.exp(math.sin(x) * y) + math.log(1.0 + x * x) * math.sqrt(y)


MATH = cases(
    (m_sin, [(0.3,), (-2.0,), (7.0,)], 0),
    (m_cos, [(0.3,), (-2.0,), (7.0,)], 0),
    (m_tan, [(0.3,), (-1.2,), (2.0,)], 0),
    (m_asin, [(0.2,), (-0.7,), (0.9,)], 0),
    (m_acos, [(0.2,), (-0.7,), (0.9,)], 0),
    (m_atan, [(0.3,), (-4.0,)], 0),
    (m_atan2, [(1.0, 2.0), (-1.0, 2.0), (1.0, -2.0), (-1.0, -0.5)], (0, 1)),
    (m_sinh, [(0.3,), (-2.0,)], 0),
    (m_cosh, [(0.3,), (-2.0,)], 0),
    (m_tanh, [(0.3,), (-2.0,)], 0),
    (m_exp, [(0.3,), (-2.0,), (3.0,)], 0),
    (m_expm1, [(1e-3,), (-2.0,), (1.5,)], 0),
    (m_log, [(0.3,), (2.0,), (50.0,)], 0),
    (m_log_base_const, [(0.3,), (20.0,)], 0),
    (m_log_base, [(8.0, 2.0), (0.3, 10.0), (5.0, 0.5)], (0, 1)),
    (m_log1p, [(-0.5,), (1e-3,), (4.0,)], 0),
    (m_log2, [(0.3,), (8.0,)], 0),
    (m_log10, [(0.3,), (1000.0,)], 0),
    (m_sqrt, [(0.3,), (2.0,), (100.0,)], 0),
    (m_pow, [(1.5, 2.5), (0.5, -1.5)], (0, 1)),
    (m_pow_int, [(1.5,), (-2.0,)], 0),
    (m_hypot, [(3.0, 4.0), (-3.0, 0.5), (1.0, -2.0)], (0, 1)),
    (m_erf, [(0.3,), (-1.5,)], 0),
    (m_erfc, [(0.3,), (-1.5,)], 0),
    (m_fabs, [(0.3,), (-1.5,)], 0),
    (m_composed, [(0.3, 1.5), (-1.2, 0.4)], (0, 1)),
)


@pytest.mark.parametrize("f, args, wrt", MATH)
def test_math_function(f, args, wrt):
    assert_grad_matches(f, *args, wrt=wrt)


@pytest.mark.parametrize(
    "f, x, expected",
    [
        (m_sin, 0.3, math.cos(0.3)),
        (m_cos, 0.3, -math.sin(0.3)),
        (m_tan, 0.3, 1.0 / math.cos(0.3) ** 2),
        (m_asin, -0.7, 1.0 / math.sqrt(1.0 - 0.49)),
        (m_acos, -0.7, -1.0 / math.sqrt(1.0 - 0.49)),
        (m_atan, -4.0, 1.0 / 17.0),
        (m_sinh, -2.0, math.cosh(-2.0)),
        (m_cosh, -2.0, math.sinh(-2.0)),
        (m_tanh, -2.0, 1.0 - math.tanh(-2.0) ** 2),
        (m_exp, -2.0, math.exp(-2.0)),
        (m_expm1, 1e-3, math.exp(1e-3)),
        (m_log, 2.0, 0.5),
        (m_log_base_const, 2.0, 1.0 / (2.0 * math.log(3.0))),
        (m_log1p, -0.5, 2.0),
        (m_log2, 8.0, 1.0 / (8.0 * math.log(2.0))),
        (m_log10, 1000.0, 1.0 / (1000.0 * math.log(10.0))),
        (m_sqrt, 2.0, 0.5 / math.sqrt(2.0)),
        (m_pow_int, -2.0, 12.0),
        (m_erf, -1.5, 2.0 / math.sqrt(math.pi) * math.exp(-2.25)),
        (m_erfc, -1.5, -2.0 / math.sqrt(math.pi) * math.exp(-2.25)),
        (m_fabs, -1.5, -1.0),
        (m_fabs, 0.3, 1.0),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_math_closed_form(f, x, expected):
    assert_close(derivo.grad(f)(x), expected, rtol=1e-12, atol=1e-14)


def test_two_argument_closed_forms():
    dy, dx = derivo.grad(m_atan2, wrt=(0, 1))(-1.0, -0.5)
    assert_close((dy, dx), (-0.5 / 1.25, 1.0 / 1.25), rtol=1e-12)
    dx, dy = derivo.grad(m_hypot, wrt=(0, 1))(-3.0, 4.0)
    assert_close((dx, dy), (-0.6, 0.8), rtol=1e-12)
    dx, db = derivo.grad(m_log_base, wrt=(0, 1))(8.0, 2.0)
    assert_close((dx, db), (1.0 / (8.0 * math.log(2.0)), -3.0 / (2.0 * math.log(2.0))), rtol=1e-12)
    dx, dy = derivo.grad(m_pow, wrt=(0, 1))(1.5, 2.5)
    assert_close((dx, dy), (2.5 * 1.5 ** 1.5, math.log(1.5) * 1.5 ** 2.5), rtol=1e-12)


# ---------------------------------------------------------------------------
# builtins: abs min max pow float
# ---------------------------------------------------------------------------

def b_abs(x):
    return abs(x) * x


def b_min2(x, y):
    return min(x, y) * 2.0


def b_max2(x, y):
    return max(x, y) * 2.0


def b_min3(x, y, z):
    return min(x, y, z) + x * y * z


def b_max3(x, y, z):
    return max(x, y, z) + x * y * z


def b_min_const(x):
    return min(x, 1.0) + max(2.0, x * x)


def b_pow(x, y):
    return pow(x, y) + pow(x, 2)


def b_float(x):
    return float(x) * x


def b_float_int(x, n):
    return x * float(n)


BUILTINS = cases(
    (b_abs, [(1.5,), (-1.5,)], 0),
    (b_min2, [(1.0, 2.0), (3.0, -2.0)], (0, 1)),
    (b_max2, [(1.0, 2.0), (3.0, -2.0)], (0, 1)),
    (b_min3, [(1.0, 2.0, 3.0), (2.0, -1.0, 3.0), (2.0, 1.0, -3.0)], (0, 1, 2)),
    (b_max3, [(1.0, 2.0, 3.0), (2.0, -1.0, 0.5), (4.0, 1.0, -3.0)], (0, 1, 2)),
    (b_min_const, [(0.5,), (-2.0,), (3.0,)], 0),
    (b_pow, [(1.5, 2.5), (0.5, -1.0)], (0, 1)),
    (b_float, [(1.5,), (-2.0,)], 0),
    (b_float_int, [(1.5, 3), (-2.0, -4)], 0),
)


@pytest.mark.parametrize("f, args, wrt", BUILTINS)
def test_builtin(f, args, wrt):
    assert_grad_matches(f, *args, wrt=wrt)


def test_min_max_closed_form():
    assert derivo.grad(b_min2, wrt=(0, 1))(3.0, -2.0) == (0.0, 2.0)
    assert derivo.grad(b_max2, wrt=(0, 1))(3.0, -2.0) == (2.0, 0.0)
    # min of three picks the middle argument here; the product adds y*z, x*z, x*y
    assert_close(derivo.grad(b_min3, wrt=(0, 1, 2))(2.0, -1.0, 3.0), (-3.0, 1.0 + 6.0, -2.0))


# ---------------------------------------------------------------------------
# non-differentiable: factorial, int, round, comparisons, // ;
# functions without a rule are fine when no differentiated value reaches them
# ---------------------------------------------------------------------------

def nd_int(x):
    n = int(x)
    return x * n


def nd_round(x):
    return x * round(x)


def nd_round_digits(x):
    return x * round(x, 1)


def nd_factorial(x, n):
    return x * math.factorial(n)


def nd_comparison(x):
    k = (x > 1.0) + (x > 2.0)
    return k * x * x


def nd_comparison_chain(x, y):
    inside = 0.0 < x < y
    return x * y * inside + x


def nd_floordiv(x):
    q = x // 0.5
    return x * q


def nd_no_rule_on_int(x, n):
    return x * math.gamma(n) + operator.mul(n, n)


NONDIFF = cases(
    (nd_int, [(2.3,), (-3.7,), (0.4,)], 0),
    (nd_round, [(2.3,), (-3.7,)], 0),
    (nd_round_digits, [(2.33,), (-3.77,)], 0),
    (nd_factorial, [(1.5, 4), (-2.0, 0)], 0),
    (nd_comparison, [(0.5,), (1.5,), (2.5,)], 0),
    (nd_comparison_chain, [(0.5, 1.0), (2.0, 1.0)], (0, 1)),
    (nd_floordiv, [(1.3,), (-1.3,)], 0),
    (nd_no_rule_on_int, [(1.5, 4)], 0),
)


@pytest.mark.parametrize("f, args, wrt", NONDIFF)
def test_non_differentiable(f, args, wrt):
    assert_grad_matches(f, *args, wrt=wrt)


def test_non_differentiable_closed_form():
    assert_close(derivo.grad(nd_int)(-3.7), -3.0)
    assert_close(derivo.grad(nd_round)(2.3), 2.0)
    assert_close(derivo.grad(nd_factorial)(1.5, 4), 24.0)
    assert_close(derivo.grad(nd_comparison)(2.5), 2 * 2 * 2.5)
    assert_close(derivo.grad(nd_floordiv)(1.3), 2.0)
    assert_close(derivo.grad(nd_no_rule_on_int)(1.5, 4), 6.0)


# ---------------------------------------------------------------------------
# assignment forms
# ---------------------------------------------------------------------------

def aug_add(x, y):
    s = x
    s += y * x
    s += 2
    return s


def aug_sub(x, y):
    s = x * x
    s -= y
    s -= 3 * x
    return s


def aug_mul(x, y):
    s = x
    s *= y
    s *= x
    s *= 2
    return s


def aug_div(x, y):
    s = x + 1.0
    s /= y
    s /= x
    return s


def aug_pow(x, y):
    s = x
    s **= 3
    t = y
    t **= x
    return s + t


def aug_mod(x, y):
    s = 5.0 * x
    s %= y
    return s * x


def aug_floordiv(x):
    s = 3.0 * x
    s //= 1.0
    return s * x


def aug_all(x, y):
    s = x
    s += y
    s -= 0.5 * x
    s *= y
    s /= x + 1.0
    s **= 2
    s %= 7.0
    return s


def tuple_pack_unpack(x, y):
    a, b = x * y, x + y
    return a * b


def tuple_via_name(x, y):
    t = (x, y * y)
    a, b = t
    return a * b + a


def tuple_nested(x, y):
    (a, b), c = (x, y), x * y
    return a * c - b


def item_target_of_a_literal(x, y):
    p = [0.0, 1.0]
    p[0], b = (x, y), 2.0  # an item target in a literal unpacking crashed the ssa pass
    return p[0][0] * p[0][1] * b


def tuple_rebound_in_a_loop(x, y):
    p = (x, y)
    for i in range(2):
        p = (p[1] * 0.5, p[0])
    return p[0] * x


def tuple_rebound_in_a_while_loop(x, y):
    p = (x, y)
    while p[0] > 0.1:
        p = (p[0] * 0.5, p[1] + p[0])
    return p[1] * x


def tuple_rebound_in_a_branch(x, y):
    p = (x, y)
    if x > 0.0:
        p = (p[1], p[0] * 3.0)
    return p[0] * p[1]


def swap(x, y):
    a = x * 2.0
    b = y
    a, b = b, a
    return a * a * b


def swap_in_loop(x, y, n):
    a, b = x, y
    for i in range(n):
        a, b = b, a * b + 0.1
    return a + 2.0 * b


def chained_targets(x):
    a = b = x * 2
    return a * b + a


def chained_then_overwrite(x, y):
    a = b = x
    a = a * y
    return a + b * b


def overwrite_many(x):
    y = x
    y = y * x
    y = y + x
    y = math.sin(y)
    y = y * y
    y = y - x
    return y


def reuse_and_overwrite(x, y):
    t = x * x
    u = t + t * t
    t = u - x
    u = t * u + y
    t = t * y
    return t * u


ASSIGN = cases(
    (aug_add, [(1.5, -2.0), (-0.3, 4.0)], (0, 1)),
    (aug_sub, [(1.5, -2.0), (-0.3, 4.0)], (0, 1)),
    (aug_mul, [(1.5, -2.0), (-0.3, 4.0)], (0, 1)),
    (aug_div, [(1.5, -2.0), (-0.3, 4.0)], (0, 1)),
    (aug_pow, [(1.5, 2.0), (-0.3, 4.0)], (0, 1)),
    (aug_mod, [(1.5, 2.0), (-0.3, 4.0)], (0, 1)),
    (aug_floordiv, [(1.5,), (-0.7,)], 0),
    (aug_all, [(1.5, -2.0), (0.3, 4.0)], (0, 1)),
    (tuple_pack_unpack, [(1.5, -2.0), (-0.3, 4.0)], (0, 1)),
    (tuple_via_name, [(1.5, -2.0), (-0.3, 4.0)], (0, 1)),
    (tuple_nested, [(1.5, -2.0), (-0.3, 4.0)], (0, 1)),
    (item_target_of_a_literal, [(1.5, -2.0), (-0.3, 4.0)], (0, 1)),
    # each read the tuple's elements from before the loop (or branch) that rebinds it
    (tuple_rebound_in_a_loop, [(1.3, -0.7), (-0.3, 4.0)], (0, 1)),
    (tuple_rebound_in_a_while_loop, [(1.3, -0.7), (0.7, 4.0)], (0, 1)),
    (tuple_rebound_in_a_branch, [(1.3, -0.7), (-0.3, 4.0)], (0, 1)),
    (swap, [(1.5, -2.0), (-0.3, 4.0)], (0, 1)),
    (swap_in_loop, [(1.5, -0.5, 3), (0.7, 0.9, 6), (0.7, 0.9, 0)], (0, 1)),
    (chained_targets, [(1.5,), (-0.3,)], 0),
    (chained_then_overwrite, [(1.5, -2.0), (-0.3, 4.0)], (0, 1)),
    (overwrite_many, [(1.5,), (-0.3,)], 0),
    (reuse_and_overwrite, [(1.5, -2.0), (-0.3, 4.0)], (0, 1)),
)


@pytest.mark.parametrize("f, args, wrt", ASSIGN)
def test_assignment(f, args, wrt):
    assert_grad_matches(f, *args, wrt=wrt)


def test_swap_closed_form():
    # swap returns y * y * (2x): d/dx = 2 y^2, d/dy = 4 x y
    assert_close(derivo.grad(swap, wrt=(0, 1))(1.5, -2.0), (8.0, -12.0))


def unpack_into_itself(p):
    p, q = p
    return p * q * 3.0


def unpack_twice(pair, x):
    a, b = pair
    a = a * x
    c, d = pair
    return a * b + c * d * x


def test_unpacking_a_parameter_reads_its_items_without_a_copy():
    # a, b = pair: a = pair[0], b = pair[1] (there was a copy, seq1 = pair, and
    # its adjoint); p, q = p still reads the items of the p passed in
    assert derivo.grad(unpack_into_itself)((2.0, 5.0)) == (15.0, 6.0)
    twice = derivo.grad(unpack_twice, wrt=(0, 1))
    assert "seq" not in twice.source and "a = pair[0]" in twice.source
    # a*x*b + c*d*x: d/dpair = (x*b + d*x, a*x + c*x), d/dx = a*b + c*d
    (bpair, bx) = twice([2.0, 5.0], 3.0)
    assert_close(tuple(bpair), (30.0, 12.0))
    assert_close(bx, 20.0)


def unpack_into_own_item(a, b):
    p = [a, b]
    p[1], q = p  # p[1] = a, q = b: Python reads both items before it writes
    return p[1] * q


def swap_items(x):
    z = x * 1.0
    z[1], z[0] = z
    return np.sum(z * np.array([1.0, 3.0]))


def test_unpacking_into_an_item_of_the_unpacked_list_reads_every_item_first():
    # read and written item by item, p[1], q = p gave a * a, and so did its jvp
    value, gradient = derivo.value_and_grad(unpack_into_own_item, wrt=(0, 1))(1.3, -0.7)
    assert_close(value, 1.3 * -0.7)
    assert_close(gradient, (-0.7, 1.3))
    assert_close(derivo.jvp(unpack_into_own_item, (1.3, -0.7), (1.0, 0.0)), (1.3 * -0.7, -0.7))
    value, gradient = derivo.value_and_grad(swap_items)(np.array([2.0, 5.0]))
    assert value == 11.0 and gradient.tolist() == [3.0, 1.0]


def test_chained_targets_closed_form():
    # a = b = 2x: 4x^2 + 2x -> 8x + 2
    assert_close(derivo.grad(chained_targets)(1.5), 14.0)


# ---------------------------------------------------------------------------
# branches
# ---------------------------------------------------------------------------

def piecewise(x):
    if x < -1.0:
        y = -x * x
    elif x < 1.0:
        y = 2.0 * x + 1.0
    else:
        y = math.exp(x)
    return y * x


def if_without_else(x, y):
    z = x * y
    if x > 0.0:
        z = z * z
    return z + y


def if_assigns_new_names(x):
    if x > 0.0:
        a = math.sin(x)
        b = x
    else:
        a = x * x
        b = 3.0
    return a * b


def nested_if(x, y):
    if x > 0.0:
        if y > 0.0:
            z = x * y
        else:
            z = x - y * y
    else:
        if y > 1.0:
            z = x * x * y
        elif y > -1.0:
            z = y
        else:
            z = -x * y
    return z * x


def if_on_int(x, n):
    if n % 2 == 0:
        return x * x
    return x * n


def ifexp_abs(x):
    y = x if x > 0 else -x
    return y * 3.0


def ifexp_in_expression(x):
    return (x * x if x > 1 else x * 3) + x


def ifexp_nested(x, y):
    z = x * y if x > y else (y * y if y > 0 else x - y)
    return z


def cond_and(x, y):
    if x > 0.0 and y > 0.0:
        return x * y
    return x + y


def cond_or(x, y):
    if x < 0.0 or y < 0.0:
        z = x * x * y
    else:
        z = x / y
    return z


def cond_not(x):
    if not (x > 1.0):
        return x * x
    return math.log(x)


def cond_not_flag(x, flag):
    y = x
    if not flag:
        y = y * x
    return y


def cond_mixed(x, y, flag):
    if (x > 0.0 and not flag) or (y < 0.0 and x < y):
        return x * y
    return x - y


BRANCHES = cases(
    (piecewise, [(-2.0,), (-0.5,), (0.5,), (2.0,)], 0),
    (if_without_else, [(1.5, -2.0), (-0.3, 4.0)], (0, 1)),
    (if_assigns_new_names, [(1.5,), (-0.3,)], 0),
    (nested_if, [(1.5, 2.0), (1.5, -2.0), (-1.5, 2.0), (-1.5, 0.5), (-1.5, -2.0)], (0, 1)),
    (if_on_int, [(1.5, 2), (1.5, 3), (-0.5, 0)], 0),
    (ifexp_abs, [(1.5,), (-1.5,)], 0),
    (ifexp_in_expression, [(2.0,), (0.5,), (-0.5,)], 0),
    (ifexp_nested, [(2.0, 1.0), (1.0, 2.0), (-1.0, -0.5)], (0, 1)),
    (cond_and, [(1.5, 2.0), (1.5, -2.0), (-1.5, 2.0)], (0, 1)),
    (cond_or, [(1.5, 2.0), (1.5, -2.0), (-1.5, 2.0)], (0, 1)),
    (cond_not, [(0.5,), (2.0,), (-3.0,)], 0),
    (cond_not_flag, [(1.5, True), (1.5, False)], 0),
    (cond_mixed, [(1.5, 2.0, False), (1.5, 2.0, True), (-2.0, -1.0, True), (-0.5, -1.0, True)], (0, 1)),
)


@pytest.mark.parametrize("f, args, wrt", BRANCHES)
def test_branches(f, args, wrt):
    assert_grad_matches(f, *args, wrt=wrt)


def test_ifexp_abs_closed_form():
    df = derivo.grad(ifexp_abs)
    assert_close(df(1.5), 3.0)
    assert_close(df(-1.5), -3.0)


def test_piecewise_closed_form():
    df = derivo.grad(piecewise)
    assert_close(df(-2.0), -3 * 4.0)  # -x^3
    assert_close(df(0.5), 4 * 0.5 + 1.0)  # 2x^2 + x
    assert_close(df(2.0), math.exp(2.0) * 3.0)  # x e^x


# ---------------------------------------------------------------------------
# for loops
# ---------------------------------------------------------------------------

def for_range_n(x, n):
    s = 0.0
    for i in range(n):
        s = s * x + 1.0
    return s


def for_range_n_product(x, n):
    p = 1.0
    for i in range(n):
        p *= x
    return p


def for_range_start_stop(x):
    s = 0.0
    for i in range(2, 6):
        s += x ** i
    return s


def for_range_start_stop_args(x, a, b):
    s = x
    for i in range(a, b):
        s = math.sin(s) + x * i
    return s


def for_range_negative_step(x, n):
    s = 1.0
    for i in range(n, 0, -2):
        s = s * x + i
    return s


def for_range_step(x):
    s = 0.0
    for i in range(1, 10, 3):
        s = s + math.cos(x * i)
    return s


def for_loop_variable_in_math(x):
    s = 0.0
    for i in range(5):
        s += x * i
    return s


def for_over_constant_tuple(x):
    s = 0.0
    for w in (1.0, 2.0, 3.0):
        s += math.sin(w * x)
    return s


def for_over_list_arg(x, coeffs):
    s = 0.0
    for c in coeffs:
        s = s * x + c
    return s


def for_over_list_of_pairs(x, y):
    s = 0.0
    for a, b in ((1.0, 2.0), (3.0, -1.0)):
        s = s + a * x * x + b * y
    return s


def for_loop_var_after_loop(x, n):
    i = 0
    for i in range(n):
        x = x * 1.5
    return x * i


FOR = cases(
    (for_range_n, [(0.5, 0), (0.5, 1), (0.5, 5), (-1.5, 7)], 0),
    (for_range_n_product, [(1.1, 0), (1.1, 4), (-0.9, 5)], 0),
    (for_range_start_stop, [(0.5,), (-1.5,)], 0),
    (for_range_start_stop_args, [(0.5, 1, 4), (-1.5, 3, 3), (0.7, -2, 2)], 0),
    (for_range_negative_step, [(0.5, 7), (-1.5, 6), (2.0, 0)], 0),
    (for_range_step, [(0.5,), (-1.5,)], 0),
    (for_loop_variable_in_math, [(0.5,), (-1.5,)], 0),
    (for_over_constant_tuple, [(0.5,), (-1.5,)], 0),
    (for_over_list_arg, [(0.5, [1.0, -2.0, 3.0]), (-1.5, [2.0]), (1.5, [])], 0),
    (for_over_list_of_pairs, [(0.5, -2.0)], (0, 1)),
    (for_loop_var_after_loop, [(0.5, 3), (-1.5, 4)], 0),
)


@pytest.mark.parametrize("f, args, wrt", FOR)
def test_for_loop(f, args, wrt):
    assert_grad_matches(f, *args, wrt=wrt)


@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_for_range_n_closed_form(n):
    # s = 1 + x + ... + x^(n-1), so ds/dx = sum k x^(k-1)
    x = 0.5
    expected = float(sum(k * x ** (k - 1) for k in range(1, n)))
    assert_close(derivo.grad(for_range_n)(x, n), expected)


def test_loop_variable_closed_form():
    assert_close(derivo.grad(for_loop_variable_in_math)(-1.5), 10.0)


def test_list_argument_closed_form():
    # 1 x^2 - 2 x + 3 -> 2 x - 2
    assert_close(derivo.grad(for_over_list_arg)(0.5, [1.0, -2.0, 3.0]), -1.0)


# ---------------------------------------------------------------------------
# while loops
# ---------------------------------------------------------------------------

def newton_sqrt(x):
    y = x
    while abs(y * y - x) > 1e-12 * x:
        y = 0.5 * (y + x / y)
    return y


def while_counted(x, n):
    k = 0
    s = 1.0
    while k < n:
        s = s * x + k
        k += 1
    return s


def while_data_dependent(x):
    s = x
    k = 0
    while s < 100.0:
        s = s * s + 1.0
        k += 1
    return s * k


@pytest.mark.parametrize("x", [0.5, 2.0, 9.0, 1e4])
def test_while_newton_sqrt(x):
    assert_close(derivo.grad(newton_sqrt)(x), 1.0 / (2.0 * math.sqrt(x)), rtol=1e-8)


WHILE = cases(
    (newton_sqrt, [(0.5,), (2.0,), (9.0,)], 0),
    (while_counted, [(0.5, 0), (0.5, 4), (-1.5, 5)], 0),
    (while_data_dependent, [(0.5,), (1.5,), (-2.5,), (200.0,)], 0),
)


@pytest.mark.parametrize("f, args, wrt", WHILE)
def test_while_loop(f, args, wrt):
    assert_grad_matches(f, *args, wrt=wrt)


# ---------------------------------------------------------------------------
# break and continue
# ---------------------------------------------------------------------------

def for_break(x, n):
    s = 0.0
    for i in range(n):
        if s > 10.0:
            break
        s = s + x * i
    return s * x


def for_continue(x, n):
    s = 1.0
    for i in range(n):
        if i % 2 == 0:
            continue
        s = s * x + i
    return s


def for_break_and_continue(x):
    s = x
    for w in (0.5, -1.0, 2.0, 3.0, 4.0):
        if w < 0.0:
            continue
        s = s * w + x
        if s > 20.0:
            break
    return s


def while_true_break(x):
    s = 1.0
    k = 0
    while True:
        s = s * x + 1.0
        k += 1
        if s > 50.0 or k >= 100:
            break
    return s + k


def while_continue(x, n):
    k = 0
    s = 0.0
    while k < n:
        k += 1
        if k % 3 == 0:
            continue
        s = s * 0.9 + x * k
    return s


def while_break_continue(x):
    k = 0
    s = x
    while k < 50:
        k += 1
        if k % 2 == 1:
            continue
        s = math.sin(s) * x + k
        if s > 9.0:
            break
    return s


BREAK = cases(
    (for_break, [(0.5, 20), (3.3, 20), (-1.5, 6), (0.5, 0)], 0),
    (for_continue, [(0.5, 7), (-1.5, 6)], 0),
    (for_break_and_continue, [(1.5,), (0.5,), (-1.5,)], 0),
    (while_true_break, [(1.5,), (2.5,), (0.5,)], 0),
    (while_continue, [(0.5, 7), (-1.5, 3), (1.0, 0)], 0),
    (while_break_continue, [(1.3,), (0.4,), (-1.2,)], 0),
)


@pytest.mark.parametrize("f, args, wrt", BREAK)
def test_break_continue(f, args, wrt):
    assert_grad_matches(f, *args, wrt=wrt)


def test_for_break_closed_form():
    # x = 3.3, n = 20: s = 3.3 * (1 + 2 + 3) = 19.8 > 10 after i = 3, then break,
    # so the result is x * x * 6 and its derivative 12 x.
    assert_close(derivo.grad(for_break)(3.3, 20), 12 * 3.3)


# ---------------------------------------------------------------------------
# nested loops
# ---------------------------------------------------------------------------

def nested2(x, n, m):
    s = 0.0
    for i in range(n):
        t = x
        for j in range(m):
            t = math.sin(t * x + j)
        s = s * 0.5 + t * i
    return s


def nested2_overwrite_outer(x, n):
    s = x
    for i in range(n):
        for j in range(i):
            s = s * 0.9 + x * j
        s = math.cos(s)
    return s


def nested3(x, y, n):
    s = 0.0
    for i in range(n):
        a = x
        for j in range(2):
            b = a * y
            for k in range(3):
                b = math.sin(b) + a * k
                a = a * 0.9
            a = b
        s += a * i
    return s


def nested_for_while(x):
    s = 0.0
    for i in range(1, 4):
        t = x * i
        while t < 10.0:
            t = t * 1.7 + 0.1
        s += t
    return s


NESTED = cases(
    (nested2, [(0.5, 3, 2), (-1.5, 4, 3), (0.5, 0, 3), (0.5, 3, 0)], 0),
    (nested2_overwrite_outer, [(0.5, 4), (-1.5, 5)], 0),
    (nested3, [(0.5, 0.7, 3), (-1.2, 0.3, 2)], (0, 1)),
    (nested_for_while, [(0.5,), (1.3,)], 0),
)


@pytest.mark.parametrize("f, args, wrt", NESTED)
def test_nested_loops(f, args, wrt):
    assert_grad_matches(f, *args, wrt=wrt)


# ---------------------------------------------------------------------------
# return anywhere
# ---------------------------------------------------------------------------

def return_in_if(x):
    if x > 1.0:
        return x * x
    y = x * 3.0
    return y


def return_in_elif_else(x):
    if x > 1.0:
        return x * x
    elif x > -1.0:
        return math.sin(x)
    else:
        return -x * x * x


def return_in_for(x, n):
    s = 1.0
    for i in range(n):
        s = s * x
        if s > 5.0:
            return s + i
    return -s


def return_in_while(x):
    s = x
    k = 0
    while k < 100:
        k += 1
        s = s * 1.5 + x
        if s > 10.0:
            return s * k
    return s


def return_in_nested_loop(x, n):
    s = x
    for i in range(n):
        for j in range(n):
            s = s * x + j
            if s > 20.0:
                return s - i
    return s


def return_first_statement_in_loop(x, n):
    for i in range(n):
        return x * x * (i + 2)
    return x


RETURNS = cases(
    (return_in_if, [(2.0,), (0.5,)], 0),
    (return_in_elif_else, [(2.0,), (0.5,), (-2.0,)], 0),
    (return_in_for, [(1.5, 10), (2.5, 10), (0.5, 10), (1.5, 0)], 0),
    (return_in_while, [(1.3,), (0.05,), (-0.5,)], 0),
    (return_in_nested_loop, [(1.5, 4), (0.5, 4), (1.5, 0)], 0),
    (return_first_statement_in_loop, [(1.5, 3), (1.5, 0)], 0),
)


@pytest.mark.parametrize("f, args, wrt", RETURNS)
def test_return_anywhere(f, args, wrt):
    assert_grad_matches(f, *args, wrt=wrt)


def test_return_in_if_closed_form():
    df = derivo.grad(return_in_if)
    assert_close(df(2.0), 4.0)
    assert_close(df(0.5), 3.0)


# ---------------------------------------------------------------------------
# calls to other plain Python functions
# ---------------------------------------------------------------------------

def _square(t):
    return t * t


def _poly(t):
    return _square(t) + 3.0 * t


def _scaled(t, a=2.0, b=1.0):
    return a * t + b * t * t


def _kwonly(t, *, power=2, shift=0.0):
    return (t + shift) ** power


def _polar(r, th):
    return r * math.cos(th), r * math.sin(th)


def _step(s, x, i):
    s = s * 0.5 + math.sin(x * i)
    return s


def _int_power(t, n):
    p = 1.0
    for _ in range(n):
        p = p * t
    return p


def call_helper(x):
    return _square(x) * x


def call_helper_twice(x, y):
    return _square(x) + _square(x * y)


def call_helper_chain(x):
    return _poly(math.sin(x))


def call_helper_in_loop(x, n):
    s = 0.0
    for i in range(n):
        s = _step(s, x, i)
    return s


def call_helper_defaults(x, y):
    return _scaled(x) + _scaled(x, 3.0) + _scaled(x, b=y) + _scaled(t=y, a=x)


def call_helper_kwonly(x, y):
    return _kwonly(x) + _kwonly(x, power=3, shift=y)


def call_helper_tuple(x, y):
    a, b = _polar(x, y)
    return a * a * b


def call_helper_int_arg(x, n):
    return _int_power(x, n) + _int_power(x, 2)


CALLS = cases(
    (call_helper, [(1.5,), (-0.5,)], 0),
    (call_helper_twice, [(1.5, -2.0), (-0.5, 3.0)], (0, 1)),
    (call_helper_chain, [(1.5,), (-0.5,)], 0),
    (call_helper_in_loop, [(1.5, 4), (-0.5, 6), (0.5, 0)], 0),
    (call_helper_defaults, [(1.5, -2.0), (-0.5, 3.0)], (0, 1)),
    (call_helper_kwonly, [(1.5, -2.0), (-0.5, 3.0)], (0, 1)),
    (call_helper_tuple, [(1.5, -2.0), (0.5, 0.3)], (0, 1)),
    (call_helper_int_arg, [(1.5, 3), (-0.5, 0)], 0),
)


@pytest.mark.parametrize("f, args, wrt", CALLS)
def test_calls(f, args, wrt):
    assert_grad_matches(f, *args, wrt=wrt)


def test_call_closed_forms():
    assert_close(derivo.grad(call_helper)(-0.5), 3 * 0.25)
    s = math.sin(1.5)
    assert_close(derivo.grad(call_helper_chain)(1.5), (2 * s + 3.0) * math.cos(1.5))
    # r^3 cos^2(th) sin(th)
    r, th = 1.5, -2.0
    dr, dth = derivo.grad(call_helper_tuple, wrt=(0, 1))(r, th)
    c, s = math.cos(th), math.sin(th)
    assert_close((dr, dth), (3 * r * r * c * c * s, r ** 3 * (c ** 3 - 2 * c * s * s)))


# ---------------------------------------------------------------------------
# arguments of the differentiated function: defaults, keywords, ints, bools
# ---------------------------------------------------------------------------

def with_defaults(x, y=2.0, scale=3.0):
    return scale * x * x * y


def with_kwonly(x, y, *, power=2, scale=1.0):
    return scale * x ** power * y


def with_int_and_bool(x, n, flag):
    if flag:
        return x ** n
    return x * n


def test_default_arguments():
    df = derivo.grad(with_defaults)
    assert_close(df(1.5), 2 * 1.5 * 2.0 * 3.0)
    assert_close(df(1.5, 4.0), 2 * 1.5 * 4.0 * 3.0)
    assert_close(df(1.5, 4.0, 0.5), 2 * 1.5 * 4.0 * 0.5)


def test_keyword_arguments():
    df = derivo.grad(with_defaults)
    assert_close(df(1.5, scale=0.5), 2 * 1.5 * 2.0 * 0.5)
    assert_close(df(x=1.5, y=4.0), 2 * 1.5 * 4.0 * 3.0)
    assert_close(df(1.5, scale=-1.0, y=0.25), 2 * 1.5 * 0.25 * -1.0)


def test_keyword_only_arguments():
    df = derivo.grad(with_kwonly)
    assert_close(df(1.5, 2.0), 2 * 1.5 * 2.0)
    assert_close(df(1.5, 2.0, power=3, scale=0.5), 0.5 * 3 * 1.5 ** 2 * 2.0)


def test_wrt_name_passed_as_keyword():
    assert_grad_matches(with_defaults, 1.5, wrt="y", y=4.0)
    assert_close(derivo.grad(with_defaults, wrt="y")(1.5, y=4.0), 3.0 * 1.5 * 1.5)


@pytest.mark.parametrize("n, flag", [(3, True), (3, False), (0, True), (-2, True)])
def test_int_and_bool_pass_through(n, flag):
    x = 1.5
    expected = n * x ** (n - 1) if flag else float(n)
    assert_close(derivo.grad(with_int_and_bool)(x, n, flag), expected)
    assert_grad_matches(with_int_and_bool, x, n, flag)


# ---------------------------------------------------------------------------
# wrt, decorators, value_and_grad, vjp
# ---------------------------------------------------------------------------

def two_args(x, y):
    return x * x * y + math.sin(y)


def three_args(x, y, z):
    return x * y * y * z * z * z


@pytest.mark.parametrize("x, y", [(1.5, -2.0), (-0.5, 3.0)])
def test_wrt_forms(x, y):
    dx = 2 * x * y
    dy = x * x + math.cos(y)
    assert_close(derivo.grad(two_args)(x, y), dx)
    assert_close(derivo.grad(two_args, wrt=0)(x, y), dx)
    assert_close(derivo.grad(two_args, wrt=1)(x, y), dy)
    assert_close(derivo.grad(two_args, wrt="x")(x, y), dx)
    assert_close(derivo.grad(two_args, wrt="y")(x, y), dy)
    assert_close(derivo.grad(two_args, wrt=(0, "y"))(x, y), (dx, dy))
    assert_close(derivo.grad(two_args, wrt=("y", 0))(x, y), (dy, dx))
    assert_close(derivo.grad(two_args, wrt=("x", "y"))(x, y), (dx, dy))


def test_wrt_one_element_tuple_gives_tuple():
    got = derivo.grad(two_args, wrt=(1,))(1.5, -2.0)
    assert isinstance(got, tuple) and len(got) == 1
    assert_close(got, (1.5 * 1.5 + math.cos(-2.0),))


def test_wrt_subset_of_three():
    x, y, z = 1.5, -2.0, 0.5
    got = derivo.grad(three_args, wrt=(2, 0))(x, y, z)
    assert_close(got, (3 * x * y * y * z * z, y * y * z ** 3))
    assert_grad_matches(three_args, x, y, z, wrt=("z", 1, "x"))


def test_decorator_without_arguments():
    @derivo.grad
    def f(x, y):
        return x * x * y

    assert_close(f(1.5, -2.0), 2 * 1.5 * -2.0)


def test_decorator_with_arguments():
    @derivo.grad(wrt="y")
    def f(x, y):
        return x * x * y + y * y

    assert_close(f(1.5, -2.0), 1.5 * 1.5 + 2 * -2.0)


def test_decorator_with_tuple_wrt():
    @derivo.grad(wrt=(0, "y"))
    def f(x, y):
        return math.exp(x * y)

    e = math.exp(1.5 * -2.0)
    assert_close(f(1.5, -2.0), (-2.0 * e, 1.5 * e))


def test_value_and_grad():
    x, y = 1.5, -2.0
    value, dx = derivo.value_and_grad(two_args, wrt=0)(x, y)
    assert_close(value, two_args(x, y), rtol=1e-15, atol=0.0)
    assert_close(dx, 2 * x * y)


def test_value_and_grad_tuple_wrt():
    x, y = 1.5, -2.0
    value, grads = derivo.value_and_grad(two_args, wrt=(0, 1))(x, y)
    assert_close(value, two_args(x, y), rtol=1e-15, atol=0.0)
    assert_close(grads, (2 * x * y, x * x + math.cos(y)))


def test_vjp():
    x, y = 1.5, -2.0
    out, vjp_fn = derivo.vjp(two_args, x, y)
    assert_close(out, two_args(x, y), rtol=1e-15, atol=0.0)
    assert_close(vjp_fn(2.0), (2 * 2 * x * y, 2 * (x * x + math.cos(y))))
    # the pullback can be called again with another cotangent
    assert_close(vjp_fn(-0.5), (-0.5 * 2 * x * y, -0.5 * (x * x + math.cos(y))))


def test_vjp_int_argument_gets_none():
    x, n = 1.5, 3
    out, vjp_fn = derivo.vjp(for_range_n_product, x, n)
    assert_close(out, x ** 3, rtol=1e-15, atol=0.0)
    bx, bn = vjp_fn(2.0)
    assert bn is None
    assert_close(bx, 2.0 * 3 * x * x)


# ---------------------------------------------------------------------------
# the seed 004 example, the Bessel series, a long recurrence
# ---------------------------------------------------------------------------

def seed_f(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


def test_seed_function_gradient():
    g = derivo.grad(seed_f, wrt=(0, 1))(2.0, 5.0)
    assert g[0] == pytest.approx(5.5, rel=1e-15, abs=0.0)
    assert g[1] == pytest.approx(1.7163378145367738, rel=1e-15, abs=0.0)
    assert_close(g, (1 / 2.0 + 5.0, 2.0 - math.cos(5.0)), rtol=1e-15, atol=0.0)


@pytest.mark.parametrize("x1, x2", [(2.0, 5.0), (0.5, -1.0), (7.0, 0.1)])
def test_seed_function_vs_finite_differences(x1, x2):
    assert_grad_matches(seed_f, x1, x2, wrt=(0, 1))


def besselj(v, z, atol=1e-8):
    k = 0
    s = (z / 2) ** v / math.factorial(v)
    out = s
    while abs(s) > atol:
        k += 1
        s *= (-1) / k / (k + v) * (z / 2) ** 2
        out += s
    return out


def test_bessel_value_from_the_issue():
    assert derivo.grad(besselj, wrt="z")(2, 1.0) == pytest.approx(0.2102436158518, abs=1e-12)


@pytest.mark.parametrize("v", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("z", [0.5, 1.0, 3.0, 10.0])
def test_bessel_vs_scipy(v, z):
    special = pytest.importorskip("scipy.special")
    got = derivo.grad(besselj, wrt="z")(v, z, atol=1e-12)
    assert_close(got, float(special.jvp(v, z, 1)), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("v", [0, 2, 4])
@pytest.mark.parametrize("z", [0.5, 2.7, 10.0])
def test_bessel_vs_finite_differences(v, z):
    # with the default tolerance, the derivative of the truncated series itself
    assert_grad_matches(besselj, v, z, wrt="z", rtol=1e-6, atol=1e-8)


def logistic(r, x0, n):
    x = x0
    for _ in range(n):
        x = r * x * (1.0 - x)
    return x


def test_logistic_map_fixed_point():
    # r = 2.8 converges to the fixed point 1 - 1/r, whose derivative is 1/r^2;
    # the dependence on x0 has died out (0.8^1000).
    r = 2.8
    dr, dx0 = derivo.grad(logistic, wrt=(0, 1))(r, 0.3, 1000)
    assert_close(dr, 1.0 / (r * r), rtol=1e-9)
    assert abs(dx0) < 1e-12


@pytest.mark.parametrize("r, x0, n", [(2.8, 0.3, 1000), (3.2, 0.4, 50), (1.5, 0.9, 200)])
def test_logistic_map_vs_finite_differences(r, x0, n):
    assert_grad_matches(logistic, r, x0, n, wrt=(0, 1), rtol=1e-5, atol=1e-8)


def damped_oscillator(x0, v0, k, c, steps=1000, dt=0.01):
    x = x0
    v = v0
    energy = 0.0
    for _ in range(steps):
        a = -k * x - c * v
        v = v + dt * a
        x = x + dt * v
        energy += 0.5 * dt * (v * v + k * x * x)
    return x + energy


@pytest.mark.parametrize("x0, v0, k, c", [(1.0, 0.0, 4.0, 0.3), (-0.5, 2.0, 9.0, 0.05)])
def test_damped_oscillator_1000_steps(x0, v0, k, c):
    assert_grad_matches(
        damped_oscillator, x0, v0, k, c, wrt=(0, 1, 2, 3), rtol=1e-6, atol=1e-8
    )


def test_damped_oscillator_short_run_keyword_steps():
    assert_grad_matches(damped_oscillator, 1.0, 0.5, 4.0, 0.3, wrt=("k", "c"), steps=7, dt=0.1)


def conditional_self_update(x, y):
    a = x * x
    a = a * y if y > 0.0 else a - y
    for _ in range(2):
        a = a * x if a > 0.0 else a - x
    return a


@pytest.mark.parametrize("args", [(0.7, 0.4), (0.7, -0.4), (-0.6, 0.3), (-0.6, -2.0)])
def test_conditional_expression_updating_its_own_target(args):
    assert_grad_matches(conditional_self_update, *args, wrt=(0, 1))


def list_items(xs):
    return xs[0] * xs[1] + xs[0]


def list_loop(xs):
    s = 0.0
    for i in range(len(xs)):
        s = s + xs[i] * xs[i]
    return s


def test_gradient_with_respect_to_a_list_is_a_list():
    # Two contributions to one list's adjoint add element by element (a list
    # adjoint must never be concatenated).
    assert derivo.grad(list_items)([1.5, 2.0]) == [3.0, 1.5]
    assert derivo.grad(list_loop)([1.5, 2.0, 3.0]) == [3.0, 4.0, 6.0]


def largest_square(xs):
    return max(x * x for x in xs) + min([x for x in xs if x > 0.0])


def spread(xs):
    ys = sorted(xs)
    return ys[-1] - ys[0] + ys[1] * ys[2]


@pytest.mark.parametrize("f", [largest_square, spread])
def test_max_min_and_sorted_of_lists(f):
    xs = [0.3, -1.7, 0.9, 0.4]
    gradient = derivo.grad(f)(xs)
    h = 1e-6
    for i in range(len(xs)):
        up, down = list(xs), list(xs)
        up[i] += h
        down[i] -= h
        assert gradient[i] == pytest.approx((f(up) - f(down)) / (2 * h), abs=1e-7)


def test_the_hessian_through_sorted():
    # sorted, [0.3, -1.7, 0.9, 0.4] is [-1.7, 0.3, 0.4, 0.9]: ys[1] * ys[2] is
    # xs[0] * xs[3], the one term of spread that is not linear
    # (a list argument's Hessian is a list of lists, as jax.hessian's)
    hessian = derivo.hessian(spread)([0.3, -1.7, 0.9, 0.4])
    assert hessian == [[0.0, 0.0, 0.0, 1.0], [0.0] * 4, [0.0] * 4, [1.0, 0.0, 0.0, 0.0]]

def masked(x):
    return (x > 1.0) * x


def masked_by_not(x):
    return x * (not x > 3.0)


@pytest.mark.parametrize("f, x, expected", [(masked, 2.0, 1.0), (masked, 0.5, 0.0),
                                            (masked_by_not, 2.0, 1.0),
                                            (masked_by_not, 4.0, 0.0)])
def test_the_gradient_of_a_mask_times_a_value_is_a_float(f, x, expected):
    gradient = derivo.grad(f)(x)
    assert gradient == expected and type(gradient) is float

def sorted_in_a_branch(xs, flag):
    zs = sorted(xs)
    if flag:
        return zs[0] * 2.0
    return 1.0


def copied_rows(p):
    ys = list(p)
    return ys[0][0] * ys[1][1]


def copied_tuple_in_a_loop(xs, n):
    ys = tuple(xs)
    s = 0.0
    i = 0
    while i < n:
        s = s + ys[i]
        i = i + 1
    return s


def read_in_a_loop(xs, n):
    s = 0.0
    i = 0
    while i < n:
        s = s + xs[i] ** 2
        i = i + 1
    return s


@pytest.mark.parametrize("loops", ["stack", "reversible", "checkpoint"])
def test_whole_list_rules_where_no_adjoint_reaches_the_list(loops):
    assert derivo.grad(sorted_in_a_branch, loops=loops)([0.3, -1.2, 2.5], False) == \
        [0.0, 0.0, 0.0]
    assert derivo.grad(sorted_in_a_branch, loops=loops)([0.3, -1.2, 2.5], True) == \
        [0.0, 2.0, 0.0]
    assert derivo.grad(copied_tuple_in_a_loop, loops=loops)([0.3, -1.2], 0) == [0.0, 0.0]
    assert derivo.grad(copied_tuple_in_a_loop, loops=loops)((0.3, -1.2), 1) == (1.0, 0.0)
    assert derivo.grad(read_in_a_loop, loops=loops)([1.0, 2.0], 0) == [0.0, 0.0]


def test_a_copied_list_of_lists():
    assert derivo.grad(copied_rows)([[1.0, 2.0], [3.0, 4.0]]) == [[4.0, 0.0], [0.0, 1.0]]
    assert derivo.grad(copied_rows)(((1.0, 2.0), (3.0, 4.0))) == ((4.0, 0.0), (0.0, 1.0))

def pair_product(p, x):
    a, b = p
    return a * b * x


def test_gradient_with_respect_to_a_tuple_is_a_tuple_of_floats():
    # as JAX and autograd give it (the generated code keeps it as an array)
    gp, gx = derivo.grad(pair_product, wrt=(0, 1))((1.5, 2.0), 3.0)
    assert gp == (6.0, 4.5) and type(gp) is tuple and {type(g) for g in gp} == {float}
    assert gx == 3.0
    value, gp = derivo.value_and_grad(pair_product)((1.5, 2.0), x=3.0)
    assert value == 9.0 and gp == (6.0, 4.5) and type(gp) is tuple
    assert derivo.grad(pair_product)([1.5, 2.0], 3.0) == [6.0, 4.5]


def test_vjp_gives_a_list_or_tuple_argument_its_cotangent_in_its_structure():
    out, vjp_fn = derivo.vjp(pair_product, (1.5, 2.0), 3.0)
    assert out == 9.0 and vjp_fn(2.0) == ((12.0, 9.0), 6.0)
    out, vjp_fn = derivo.vjp(pair_product, [1.5, 2.0], 3)  # an int: no cotangent
    assert vjp_fn(1.0) == ([6.0, 4.5], None)
    assert derivo.vjp(pair_product, (True, 2.0), 3.0)[1](1.0) == (None, 2.0)  # a bool: none

def joined(xs):
    ys = xs + xs
    return ys[0] * ys[3]


def written_into(xs):
    xs[0] = xs[0] * 3.0
    return xs[0] * xs[1]


def test_vjp_refuses_a_list_it_joins_as_grad_does():
    # the list of adjoints of xs + xs was spread over xs's items: a wrong cotangent
    with pytest.raises(derivo.DerivoError, match="joins such sequences"):
        derivo.vjp(joined, [1.0, 2.0, 3.0])


def test_vjp_leaves_the_callers_list_alone():
    xs = [1.0, 5.0]
    out, vjp_fn = derivo.vjp(written_into, xs)
    assert xs == [1.0, 5.0] and out == 15.0 and vjp_fn(1.0) == ([15.0, 3.0],)

def unused_sequence(p, x):
    return x * x


@pytest.mark.parametrize("p, zero", [([1.0, 2.0], [0.0, 0.0]), ((1.0, 2.0), (0.0, 0.0)),
                                     ([[1.0], [2.0, 3.0]], [[0.0], [0.0, 0.0]])])
def test_a_list_or_tuple_nothing_reads_gets_zeros_in_its_structure(p, zero):
    gp, gx = derivo.grad(unused_sequence, wrt=(0, 1))(p, 3.0)
    assert gp == zero and type(gp) is type(zero) and type(gp[0]) is type(zero[0])
    assert gx == 6.0


# --- programs the fuzzer (tests/test_fuzz.py) found derivo getting wrong --------


def fuzz_tuple_of_a_reassigned_local(x, n):
    v = x
    v = 3.0 * x
    p = v, x
    return p[0]


def fuzz_value_restored_by_the_reverse_sweep(x, n):
    v = 1.0
    for i in range(n):
        v = x * v
    return v


def fuzz_return_in_a_loop(x, n):
    for i in range(n):
        if x > 1.0:
            return math.exp(x)
    return 3.0 * x


def fuzz_branches_of_one_line_each(x, n):
    a = x
    b = n
    if x > 0.2:
        b = b + a
    else:
        b = b + b
    return a + b


def fuzz_continue_then_break(x, n):
    y = x
    for i in range(2):
        if i == 0:
            y = 2.0 * y
            continue
        break
    return y


def fuzz_break_then_continue(x, y, n):
    for i in range(3):
        if i == 1:
            break
        y = 2.0 * x
        continue
    return y * y


@pytest.mark.parametrize("f,args,wrt", [
    (fuzz_tuple_of_a_reassigned_local, (0.5, 1), (0,)),
    (fuzz_value_restored_by_the_reverse_sweep, (0.9, 3), (0,)),
    (fuzz_return_in_a_loop, (0.2, 1), (0,)),
    (fuzz_return_in_a_loop, (1.3, 2), (0,)),
    (fuzz_branches_of_one_line_each, (0.5, 1), (0,)),
    (fuzz_continue_then_break, (0.3, 3), (0,)),
    (fuzz_break_then_continue, (0.037, 0.5, 3), (0, 1)),
], ids=lambda p: getattr(p, "__name__", ""))
def test_fuzzer_findings(f, args, wrt):
    value, _ = derivo.value_and_grad(f, wrt=wrt)(*args)
    assert value == f(*args)
    assert_grad_matches(f, *args, wrt=wrt)


def fuzz_return_nested_in_a_branch(x, n):
    if n < 2:
        if n >= 1:
            return 3.0 * x
    return x


def fuzz_break_nested_in_an_elif(x, n):
    for i in range(3):
        if x > 5.0:
            x = x * 2.0
        elif x > 0:
            break
        x = x * x
    return x


@pytest.mark.parametrize("f", [fuzz_return_nested_in_a_branch, fuzz_break_nested_in_an_elif])
def test_a_jump_in_a_branch_that_can_fall_through_into_more_code_is_refused(f):
    with pytest.raises(derivo.UnsupportedSyntax, match="put that code in an else branch"):
        derivo.grad(f)(0.5, 1)


# --- what the optimisations leave in the generated source ---------------------------------

def negated_terms(x, y):
    return -math.sin(x) - y * x


def test_a_negated_adjoint_is_subtracted_not_bound():
    source = derivo.grad(negated_terms, wrt=(0, 1)).source
    assert "bx -= y" in source and "by = -x" in source
    assert "= -b" not in source  # no temporary holding a negated adjoint
    assert_grad_matches(negated_terms, 0.3, 0.7, wrt=(0, 1))


def constant_share(x, y):
    t = x * y
    return t + 2.0 * x


def test_a_constant_adjoint_folds_into_its_uses():
    source = derivo.grad(constant_share, wrt=(0, 1)).source
    assert "bt = " not in source and "bresult" not in source
    assert "bx += y" in source and "by = x" in source
    assert_grad_matches(constant_share, 0.3, 0.7, wrt=(0, 1))


# --- a result that is a tuple of one value -----------------------------------------

def one_tuple(x, y):
    return (x * x * y,)


def indexes_a_one_tuple(x):
    t = one_tuple(x, 2.0)
    return t[0] * 3.0


def one_tuple_or_a_value(x):
    if x > 0:
        return (x,)
    return x


def test_a_one_tuple_result_keeps_its_tuple():
    # d/dx x^2 y = 2xy, d/dy = x^2: the value, tangent and cotangent are 1-tuples
    value, tangent = derivo.jvp(one_tuple, (3.0, 2.0), (1.0, 0.0))
    assert value == (18.0,) and tangent == (12.0,)
    out, vjp_fn = derivo.vjp(one_tuple, 3.0, 2.0)
    assert out == (18.0,) and vjp_fn((1.0,)) == (12.0, 9.0)
    assert derivo.grad(indexes_a_one_tuple)(3.0) == 36.0   # 3 * 2 * 2x
    assert derivo.value_and_grad(indexes_a_one_tuple)(3.0) == (54.0, 36.0)


def test_a_one_tuple_and_a_bare_value_from_one_function_are_refused():
    with pytest.raises(derivo.UnsupportedSyntax, match="different tuple sizes"):
        derivo.jvp(one_tuple_or_a_value, (1.0,), (1.0,))
