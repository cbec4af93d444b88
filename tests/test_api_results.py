"""The API's surface: what grad, value_and_grad and vjp take and give back, and
what they refuse (issues 20, 22, 23), each against finite differences or a
closed form."""

import inspect
import math
import os
import sys

import numpy as np
import pytest

import derivo
from checks import assert_close, numeric_grad

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
from bessel import besselj  # noqa: E402


def smooth_tanh(x):
    return np.tanh(x)


def dtanh_by_vjp(x):
    out, pullback = derivo.vjp(smooth_tanh, x)
    return pullback(1.0)[0]


dtanh = derivo.grad(smooth_tanh)


def dtanh_by_derivative(x):
    return dtanh(x)


def line_of(func, text):
    """The line of ``func``'s source where ``text`` first appears."""
    lines, first = inspect.getsourcelines(func)
    return first + next(i for i, line in enumerate(lines) if text in line)


def second_derivative_of_tanh(x):
    t = math.tanh(x)
    return -2.0 * t * (1.0 - t * t)


# --- a derivative inside a differentiated function ---------------------------------

def test_a_function_calling_vjp_and_its_pullback_is_refused_at_the_vjp_line():
    line = line_of(dtanh_by_vjp, "derivo.vjp")
    with pytest.raises(derivo.DerivoError, match=r"test_api_results.py:{}:\d+: cannot "
                       r"differentiate through 'derivo.vjp' called inside".format(line)):
        derivo.grad(dtanh_by_vjp)(0.5)


def test_a_derivative_called_inside_is_differentiated_through():
    assert_close(derivo.grad(dtanh_by_derivative)(0.5), second_derivative_of_tanh(0.5))


def apply_local(x):
    scale = lambda v: v * 3.0  # noqa: E731
    fn = scale if x > 0 else scale
    return fn(x)


def test_a_call_of_a_local_function_value_moves_with_what_made_it():
    # the callee a local name holds depends on x: derivo cannot see through it
    with pytest.raises(derivo.DerivoError):
        derivo.grad(apply_local)(0.5)


def square(x):
    return x * x


def test_grad_of_value_and_grad_is_refused_with_what_to_write():
    with pytest.raises(derivo.DerivoError, match=r"a value_and_grad.*derivo.grad\(square\)"):
        derivo.grad(derivo.value_and_grad(square))
    assert_close(derivo.grad(derivo.grad(square))(1.5), 2.0)


# --- results grad cannot take --------------------------------------------------------

def returns_a_pair(x, y):
    return x * y, x + y


def returns_a_list(x):
    return [x * x]


def returns_a_string(x):
    y = x * 2.0
    return "y"


def returns_none(x):
    y = x * 2.0
    return None


def returns_an_array(x):
    return np.array([x, 2.0 * x])


@pytest.mark.parametrize("kind", [derivo.grad, derivo.value_and_grad])
@pytest.mark.parametrize("func, what", [
    (returns_a_pair, "returns a tuple of 2 values.*has_aux=True"),
    (returns_a_list, "returns a list.*np.sum"),
    (returns_a_string, "returns a str.*np.sum"),
    (returns_none, "returns None"),
])
def test_a_result_that_is_not_one_number_is_refused_at_its_line(kind, func, what):
    with pytest.raises(derivo.DerivoError, match=r"test_api_results.py:{}:\d+: .*{}".format(
            line_of(func, "    return"), what)):
        kind(func, wrt=0)(1.5, 2.0) if func is returns_a_pair else kind(func)(1.5)


def test_an_array_result_is_refused_with_what_to_write():
    with pytest.raises(derivo.DerivoError, match=r"shape \(2,\).*np.sum"):
        derivo.grad(returns_an_array)(1.5)


# --- what grad differentiates with respect to ------------------------------------

def test_an_integer_argument_is_refused_with_float_suggested():
    with pytest.raises(derivo.DerivoError, match=r"besselj: cannot differentiate with respect "
                       r"to v=2, which holds integers.*pass float\(v\)"):
        derivo.grad(besselj, wrt="v")(2, 1.0)
    # the derivative in z of the same function, with the integer order v held
    assert_close(derivo.grad(besselj, wrt="z")(2, 1.0),
                 numeric_grad(lambda z: besselj(2, z), (1.0,)))


def scaled_sum(w, c):
    return np.sum(w * c)


@pytest.mark.parametrize("value, hint", [
    (3, r"float\(x\)"), (np.int64(3), r"float\(x\)"), (np.array([1, 2]), r"x.astype\(float\)"),
    ([1.0, 2], "floats in x"),
])
def test_integers_are_refused_in_every_form(value, hint):
    with pytest.raises(derivo.DerivoError, match=hint):
        derivo.grad(square)(value)
    with pytest.raises(derivo.DerivoError, match=hint):
        derivo.value_and_grad(square)(value)


def test_bools_are_refused():
    with pytest.raises(derivo.DerivoError, match="cannot differentiate with respect to x=True"):
        derivo.grad(square)(True)


def test_an_integer_argument_not_differentiated_is_fine():
    np.testing.assert_array_equal(derivo.grad(scaled_sum)(np.array([1.0, 2.0]), 3), [3.0, 3.0])


def test_wrt_empty_is_an_error():
    with pytest.raises(derivo.DerivoError, match=r"wrt=\(\) names no parameter"):
        derivo.grad(square, wrt=())
