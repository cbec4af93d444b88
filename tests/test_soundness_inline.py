"""Soundness of what parse, ssa and inline hand on: defaults, decorators,
conditional operands, deep expressions and the words of refusals.

Each derivative is compared with central finite differences of the function
itself (tests/checks.py), in every mode that the case reaches: the gradient,
the tangent (jvp) and the Hessian (forward over reverse).
"""

import functools

import pytest

import derivo
from checks import assert_close, numeric_grad


def second_derivative(f, x, h=1e-4):
    return (f(x + h) - 2.0 * f(x) + f(x - h)) / (h * h)


def assert_every_mode_matches(f, x):
    """value_and_grad, jvp and hessian of ``f`` at the float ``x`` against f and
    central differences of it."""
    value, gradient = derivo.value_and_grad(f)(x)
    assert_close(value, f(x))
    assert_close(gradient, numeric_grad(f, (x,)), rtol=1e-6, atol=1e-8)
    primal, tangent = derivo.jvp(f, (x,), (1.0,))
    assert_close(primal, f(x))
    assert_close(tangent, numeric_grad(f, (x,)), rtol=1e-6, atol=1e-8)
    assert_close(derivo.hessian(f)(x), second_derivative(f, x), rtol=1e-4, atol=1e-5)


# --- a default is a value, printed with the precedence it needs ---------------------

def squared_offset(p, q=-0.2):
    return q ** 2 + p


def squared_keyword_offset(p, *, q=-0.2):
    return q ** 2 + p


def power_of_negative(p, base=-1.5, exponent=2):
    return base ** exponent * p


def uses_negative_default(x):
    return squared_offset(x) * x


def uses_negative_keyword_default(x):
    return squared_keyword_offset(x) * x


def uses_negative_base(x):
    return power_of_negative(x) * x


@pytest.mark.parametrize("f", [uses_negative_default, uses_negative_keyword_default,
                               uses_negative_base])
def test_a_negative_default_keeps_its_sign_when_a_helper_is_inlined(f):
    assert_every_mode_matches(f, 1.0)
    assert_every_mode_matches(f, -0.7)
    assert derivo.value_and_grad(uses_negative_default)(1.0) == pytest.approx((1.04, 2.04))


def test_a_negative_constant_in_a_tree_prints_as_one_operand():
    from derivo import syntax as S
    power = S.binop(S.const(-0.2), S.Pow(), S.const(2))
    assert eval(S.expr_source(power)) == pytest.approx(0.04)
    method = S.attribute(S.const(-2), "real")
    assert eval(S.expr_source(method)) == -2
    assert S.expr_source(S.const(-0.0)) == "-0.0"


# --- a decorator's wrapper is what runs ---------------------------------------------

def doubled(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return 2.0 * fn(x)
    return wrapper


def scaled_by(factor):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(x, weight=1.0):
            return factor * fn(x) * weight
        return wrapper
    return decorate


def passes_everything_on(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


@doubled
def doubled_square(x):
    return x * x


@scaled_by(3.0)
def tripled_square(x):
    return x * x


@passes_everything_on
def forwarded_square(x):  # marker: forwarded_square def
    return x * x


def calls_a_decorated_helper(x):
    return doubled_square(x) + x


def test_a_functools_wraps_decorator_is_differentiated_as_the_wrapper_runs():
    assert derivo.grad(doubled_square)(1.5) == pytest.approx(6.0)
    for f in (doubled_square, tripled_square, calls_a_decorated_helper):
        assert_every_mode_matches(f, 1.5)
    assert derivo.grad(tripled_square, wrt="weight")(1.5, 2.0) == pytest.approx(6.75)


def test_a_wrapper_taking_star_args_is_refused_at_its_def():
    with pytest.raises(derivo.DerivoError, match=r"\*args") as refused:
        derivo.grad(forwarded_square)(1.5)
    assert "test_soundness_inline.py" in str(refused.value)
