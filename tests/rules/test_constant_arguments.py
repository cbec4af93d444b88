"""An argument a rule has no template for: CONSTANT (the result is constant in
it, or constant by steps: a zero derivative) or None (no rule: a differentiated
value reaching it is refused at the user's line, in every mode)."""

import inspect
import math
import os

import numpy as np
import pytest

import derivo
from derivo import rules


def line_of(func, marker):
    lines, start = inspect.getsourcelines(func)
    return start + next(i for i, text in enumerate(lines) if marker in text)


def assert_points_at(err, line, word):
    """The message is one line, ``<this file>:<line>:<col>: ...``, naming ``word``."""
    message = str(err)
    assert "\n" not in message.strip()
    assert message.startswith("{}:{}:".format(__file__, line)) or \
        "{}:{}:".format(os.path.basename(__file__), line) in message, message
    assert word in message


def refusal(make, f, *args):
    with pytest.raises(derivo.NoDerivativeRule) as info:
        make(f)(*args)
    return info.value


def grad_of(f):
    return derivo.grad(f)


def jvp_of(f):
    return lambda *args: derivo.jvp(f, args, tuple(np.ones_like(a) for a in args))


def hessian_of(f):
    return derivo.hessian(f)


MODES = [grad_of, jvp_of, hessian_of]


# --- CONSTANT: accepted, with a zero derivative in that argument ------------------

def copysign_of_differentiated_sign(x):
    return np.sum(np.copysign(x * x, x - 0.5))


def where_with_a_float_condition(x):
    return np.sum(np.where(x - 0.5, x ** 3, 2.0 * x))


def test_a_piecewise_constant_argument_has_a_zero_derivative():
    x = np.array([0.2, 1.3, 2.0])
    assert np.allclose(derivo.grad(copysign_of_differentiated_sign)(x),
                       2 * x * np.sign(x - 0.5))
    # a nonzero float is true: every element takes x ** 3
    assert np.allclose(derivo.grad(where_with_a_float_condition)(x), 3 * x * x)
    assert np.allclose(derivo.hessian(where_with_a_float_condition)(x), np.diag(6 * x))
    _, tangent = derivo.jvp(copysign_of_differentiated_sign, (x,), (np.ones(3),))
    assert tangent == pytest.approx(np.sum(2 * x * np.sign(x - 0.5)))


def test_the_tables_declare_their_constant_arguments():
    assert rules.lookup(np.copysign, 2).constant == {"y"}
    assert rules.lookup(np.where, 3).constant == {"condition"}
    assert rules.lookup(math.copysign, 2).constant == {"y"}
    assert rules.lookup(np.einsum, 2).constant == {"subscripts"}


# --- None and options past the templates: refused --------------------------------

def norm_of_differentiated_order(p):
    return np.linalg.norm(np.array([1.0, 2.0, 3.0]), ord=p) * p


@pytest.mark.parametrize("make", MODES)
def test_an_option_without_a_rule_is_refused(make):
    err = refusal(make, norm_of_differentiated_order, 3.0)
    assert_points_at(err, line_of(norm_of_differentiated_order, "np.linalg.norm("),
                     "np.linalg.norm")
    assert "with respect to its argument 'ord'" in str(err)
    assert "derivo.stop_gradient" in str(err)


def scaled(a, b):
    return a * b


derivo.defvjp(scaled, lambda g, ans, a, b: g * b, None)
derivo.defjvp(scaled, lambda t, ans, a, b: t * b, None)


def scaled_by_itself(x):
    return scaled(x, x) + x


def scaled_by_a_constant(x, y):
    return scaled(x, y)


@pytest.mark.parametrize("make", MODES)
def test_a_user_rule_with_none_is_refused_where_a_differentiated_value_reaches_it(make):
    err = refusal(make, scaled_by_itself, 2.0)
    assert_points_at(err, line_of(scaled_by_itself, "scaled(x, x)"), "scaled")
    assert "no derivative of" in str(err) and "its argument 'b'" in str(err)


def test_a_user_rule_with_none_differentiates_the_other_argument():
    assert derivo.grad(scaled_by_a_constant)(2.0, 3.0) == pytest.approx(3.0)
    assert derivo.tangent(scaled_by_a_constant)(1.0, 2.0, 3.0)[1] == pytest.approx(3.0)
    with pytest.raises(derivo.NoDerivativeRule, match="its argument 'b'"):
        derivo.jvp(scaled_by_a_constant, (2.0, 3.0), (1.0, 0.0))  # y has a tangent too


def stepped(a, b):
    return a * math.floor(b)


derivo.defvjp(stepped, lambda g, ans, a, b: g * math.floor(b), derivo.rules.CONSTANT)
derivo.defjvp(stepped, lambda t, ans, a, b: t * math.floor(b), derivo.rules.CONSTANT)


def stepped_by_itself(x):
    return stepped(x, x) * x


@pytest.mark.parametrize("make", MODES)
def test_a_user_rule_declaring_constant_is_accepted(make):
    # d/dx of x * floor(x) * x is 2 x floor(x) almost everywhere
    if make is hessian_of:
        assert make(stepped_by_itself)(2.5) == pytest.approx(2 * math.floor(2.5))
    elif make is grad_of:
        assert make(stepped_by_itself)(2.5) == pytest.approx(2 * 2.5 * math.floor(2.5))
    else:
        assert make(stepped_by_itself)(2.5)[1] == pytest.approx(2 * 2.5 * math.floor(2.5))


def sums_through_a_local_module(x):
    mod = np
    return mod.sum(mod.exp(x))


def test_a_method_option_names_the_module_spelling():
    err = refusal(grad_of, sums_through_a_local_module, np.array([0.1, 0.2]))
    assert "np.sum" in str(err)
