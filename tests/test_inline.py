"""``derivo.inline``: straight-line user functions are pasted into their callers."""

import math

import numpy as np
import pytest

import derivo
from checks import assert_grad_matches

SCALE = 3.0


def square_plus(u, c=1.0):
    v = u * u
    return v + c


def accel(theta, omega, damping):
    return -math.sin(theta) - damping * omega


def branchy(u):
    if u > 0:
        return u
    return -u


def nested(u):
    return square_plus(u, c=SCALE) * 2.0


def pair(u, w):
    return u * w, u + w


def caller(x, y):
    a = square_plus(x)
    b = nested(y) + accel(x, y, 0.5)
    p, q = pair(a, b)
    for _ in range(3):
        a = square_plus(a * 0.5, c=y)
    return a + b + p * q + branchy(x - y)


def test_straight_line_helpers_are_inlined_and_others_called():
    source = derivo.grad(caller, wrt=(0, 1)).source
    code = "\n".join(line.split("#")[0] for line in source.splitlines())
    for inlined in ("square_plus", "accel", "nested", "pair"):
        assert inlined + "(" not in code
    assert "branchy_forward(" in code and "branchy_backward(" in code


@pytest.mark.parametrize("args", [(0.7, -0.4), (-1.2, 0.9), (0.3, 0.3001)])
def test_inlined_code_differentiates_like_the_original(args):
    assert_grad_matches(caller, *args, wrt=(0, 1))


def test_inlined_statements_point_at_the_call():
    source = derivo.grad(nested).source
    line = nested.__code__.co_firstlineno + 1
    assert "# line {}: return square_plus(u, c=SCALE) * 2.0".format(line) in source


def shadows_math(x):
    math = 2.0
    return accel(x, x, math) * math


def test_a_callee_global_shadowed_in_the_caller_is_not_inlined():
    source = derivo.grad(shadows_math).source
    assert "accel_forward(" in source
    assert_grad_matches(shadows_math, 0.4)


def gram_trace(x):
    return np.sum(x.T * x)


def through_gram(v):
    return gram_trace(v * 1.0)


def test_an_attribute_of_a_renamed_argument_is_differentiated():
    # Inlined, the callee's x.T reads the caller's temporary t1.T: an attribute of
    # a local, not of a module, so its contribution must not be dropped.
    v = np.arange(6.0)
    assert "gram_trace_vjp" not in derivo.grad(through_gram).source  # inlined
    np.testing.assert_allclose(derivo.grad(through_gram)(v), 2 * v, rtol=1e-12)
