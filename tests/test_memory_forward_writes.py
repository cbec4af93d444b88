"""Forward mode and writes through another name: the tangents of two names for
one array share memory as the values do, so a write through one reaches the
other's tangent, unless one of them has no tangent (activity does not follow
the alias) or ssa copies the name written through.  derivo then refuses, as
reverse mode does; elsewhere the tangent agrees with central differences.
"""

import numpy as np
import pytest

import derivo
from derivo.errors import DerivoError

from checks import assert_close


def ident(r):
    return r


def write_through_an_alias_only_the_write_reaches(a, c):
    y = a * 1.0
    b = ident(y)
    b[0] = 2.0 * c  # b has no tangent of its own: nothing reads b afterwards
    for i in range(2):
        y[i] = np.tanh(y[i] * c)
    return np.sum(y * y)


def write_through_a_conditional_alias(a, c):
    y = a * 1.0
    z = a * 0.5
    b = y if c > 0.14 else z
    b[0] = 2.0 * c
    y[1] = np.tanh(y[1] * c)
    return np.sum(y * y) + np.sum(z)


def write_in_a_loop_through_a_name_another_reads(a, c):
    y = a * 0.5
    b = y
    for i in range(2):
        y[1] = c  # y's first tangent is made before the loop, where b has none
    return np.sum(b * b)


def write_where_both_names_are_differentiated(a, c):
    y = a * c
    b = ident(y)
    b[0] = 2.0 * c
    return np.sum(y * y) + np.sum(b)


def central(f, a, c, h=1e-6):
    return (f(a.copy(), c + h) - f(a.copy(), c - h)) / (2 * h)


@pytest.mark.parametrize("f", [write_through_an_alias_only_the_write_reaches,
                               write_through_a_conditional_alias,
                               write_in_a_loop_through_a_name_another_reads])
def test_a_write_that_activity_cannot_follow_is_refused_in_forward_mode(f):
    a = np.array([0.3, 0.5, 0.7])
    for take in (lambda: derivo.jvp(f, (a.copy(), 1.0), (None, 1.0)),
                 lambda: derivo.value_and_grad(f, wrt=1)(a.copy(), 1.0)):
        with pytest.raises(DerivoError, match="sharing memory with"):
            take()


@pytest.mark.parametrize("f, da", [(write_where_both_names_are_differentiated, None),
                                   (write_in_a_loop_through_a_name_another_reads, np.zeros(3))])
def test_a_write_both_tangents_see_is_differentiated_in_forward_mode(f, da):
    a = np.array([0.3, 0.5, 0.7])
    value, tangent = derivo.jvp(f, (a.copy(), 1.3), (da, 1.0))
    assert_close(value, f(a.copy(), 1.3))
    assert_close(tangent, central(f, a, 1.3), rtol=1e-5)


def written_twice_with_the_same_arithmetic(x):
    y = x * 1.0
    y[::-1] = y * 2.0
    y[::-1] = y * 2.0
    return np.sum(y * np.arange(4.0))


@pytest.mark.parametrize("mode", ["jvp", "grad"])
def test_the_same_arithmetic_after_a_write_is_computed_again(mode):
    # y * 2.0 reads y after the first write changed it: not the first y * 2.0
    x = np.array([0.4537, -0.8121, 0.9473, 0.2089])
    expected = written_twice_with_the_same_arithmetic(x.copy())
    if mode == "jvp":
        value, tangent = derivo.jvp(written_twice_with_the_same_arithmetic, (x.copy(),),
                                    (np.ones(4),))
        assert value == pytest.approx(expected)
        assert tangent == pytest.approx(4.0 * np.sum(np.arange(4.0)))
    else:
        value, gradient = derivo.value_and_grad(written_twice_with_the_same_arithmetic)(x.copy())
        assert value == pytest.approx(expected)
        np.testing.assert_allclose(gradient, 4.0 * np.arange(4.0))
