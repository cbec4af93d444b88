"""derivo's memory model: what a call returns comes from an allow-list (the rule
tables' ``returns=``), and every loop strategy makes the same refusals.

Each program here writes into memory that another name may share.  derivo
either differentiates it right (checked against central differences) or
refuses it with a message naming the user's line.
"""

import inspect
import operator

import numpy as np
import pytest

import derivo
from derivo import rules
from derivo.errors import DerivoError

from checks import assert_close, numeric_grad


def line_of(func, text):
    """The file line of ``func`` whose source holds ``text``."""
    lines, first = inspect.getsourcelines(func)
    return first + next(i for i, line in enumerate(lines) if text in line)


def assert_refused_at(call, func, text):
    with pytest.raises(DerivoError) as info:
        call()
    assert "{}:{}:".format(__file__, line_of(func, text)) in str(info.value), str(info.value)
    return info.value


def array_grad(f, x, *rest, h=1e-6):
    """Central differences of ``f(x, *rest)`` in each entry of the array x."""
    grad = np.zeros_like(x)
    for i in range(x.size):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        grad[i] = (f(up, *rest) - f(down, *rest)) / (2 * h)
    return grad


# --- every loop strategy refuses alike -----------------------------------------------


def update_through_an_alias_in_a_loop(x, w):
    s = np.zeros(2) + x
    t = s
    for i in range(3):
        u = t * w
        s += u  # t sees this update
    return np.sum(s)


@pytest.mark.parametrize("loops", ["stack", "checkpoint", "reversible"])
def test_an_update_through_an_alias_is_refused_by_every_loop_strategy(loops):
    assert update_through_an_alias_in_a_loop(1.0, 0.5) == 6.75
    assert_close(numeric_grad(update_through_an_alias_in_a_loop, (1.0, 0.5), wrt=1), 13.5,
                 rtol=1e-5)
    error = assert_refused_at(
        lambda: derivo.value_and_grad(update_through_an_alias_in_a_loop, wrt=1,
                                      loops=loops)(1.0, 0.5),
        update_through_an_alias_in_a_loop, "s += u")
    assert "'s'" in str(error) and "'t'" in str(error)


def column_written_in_a_checkpointed_loop(a, c):
    W = np.ones((3, 2)) * c
    v = a
    for i in range(3):
        v = W[:, 0]
        W[1:3] = v[1:3, None] * c
    return np.sum(W) + np.sum(v)


def test_a_view_written_in_a_checkpointed_loop_is_refused():
    assert_refused_at(
        lambda: derivo.grad(column_written_in_a_checkpointed_loop, wrt=1,
                            loops="checkpoint")(np.ones(3), 0.7),
        column_written_in_a_checkpointed_loop, "v = W[:, 0]")


def fresh_array_updated_in_a_checkpointed_loop(x, w):
    s = np.zeros(2) + x
    for i in range(3):
        u = s * w
        s += u
    return np.sum(s)


def test_an_update_of_an_array_no_other_name_shares_is_still_checkpointed():
    f = fresh_array_updated_in_a_checkpointed_loop
    value, grad = derivo.value_and_grad(f, wrt=1, loops="checkpoint")(1.0, 0.5)
    assert_close(value, f(1.0, 0.5))
    assert_close(grad, numeric_grad(f, (1.0, 0.5), wrt=1), rtol=1e-5)


# --- a call derivo does not know may return what it is given ---------------------------


def through_operator_getitem(x, w):
    y = operator.getitem(x, slice(None))
    y[0] = w
    return np.sum(x * x)


def through_ndarray_view(x, w):
    y = np.ndarray.view(x)
    y[0] = w
    return np.sum(x * x)


def through_ma_getdata(x, w):
    y = np.ma.getdata(x)
    y[0] = w
    return np.sum(x * x)


@pytest.mark.parametrize("func", [through_operator_getitem, through_ndarray_view,
                                  through_ma_getdata])
def test_a_write_through_what_an_unknown_function_returns_is_refused(func):
    x = np.array([1.0, 2.0, 3.0])
    assert_close(float(numeric_grad(lambda w: func(x.copy(), w), (5.0,))), 10.0, rtol=1e-5)
    # the refusal names the assignment that gives the array its second name
    assert_refused_at(lambda: derivo.grad(func, wrt=1)(x.copy(), 5.0), func, "    y = ")


def through_a_dunder(x, w):
    z = x.__iadd__(w)
    return np.sum(x * x)


def test_a_dunder_called_by_name_counts_as_a_change_of_its_object():
    x = np.array([1.0, 2.0, 3.0])
    assert_close(float(numeric_grad(lambda w: through_a_dunder(x.copy(), w), (5.0,))),
                 float(2 * np.sum(x + 5.0)), rtol=1e-5)
    assert_refused_at(lambda: derivo.grad(through_a_dunder, wrt=1)(x.copy(), 5.0),
                      through_a_dunder, "x.__iadd__(w)")


# --- helpers, conditional aliases, the same array passed twice ------------------------


def ident(z):
    return z


def head(z):
    return z[:2]


def through_what_a_helper_returns(x):
    y = x * 1.0
    b = ident(y)
    b[0] = 2.0
    return np.sum(y * y)


def through_a_slice_a_helper_returns(x):
    y = x * 1.0
    b = head(y)
    b[0] = 2.0
    return np.sum(y * y)


def through_a_conditional_alias(x, c):
    y = x * 1.0
    w = x * 2.0
    b = y if c > 0 else w
    b[0] = 2.0
    return np.sum(y * y)


@pytest.mark.parametrize("func, args", [
    (through_what_a_helper_returns, ()),
    (through_a_slice_a_helper_returns, ()),
    (through_a_conditional_alias, (1.0,)),
])
def test_a_write_through_another_name_for_an_array_is_refused(func, args):
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(array_grad(func, x, *args), [0.0, 4.0, 6.0], atol=1e-5)
    assert_refused_at(lambda: derivo.grad(func)(x.copy(), *args), func, "    b = ")


def writes_one_reads_the_other(a, b):
    a[0] = 0.0
    return np.sum(b * b)


def test_the_same_array_given_as_a_written_parameter_and_another_is_refused():
    x = np.array([1.0, 2.0, 3.0])
    for call in (lambda: derivo.grad(writes_one_reads_the_other, wrt=1)(x, x),
                 lambda: derivo.jvp(writes_one_reads_the_other, (x, x), (x, x))):
        assert_refused_at(call, writes_one_reads_the_other, "a[0] = 0.0")
    assert np.array_equal(x, [1.0, 2.0, 3.0])


def test_arrays_apart_given_to_a_written_parameter_are_differentiated():
    x = np.array([1.0, 2.0, 3.0])
    grad = derivo.grad(writes_one_reads_the_other, wrt=1)(x, x.copy())
    np.testing.assert_allclose(
        grad, array_grad(lambda b: writes_one_reads_the_other(x.copy(), b), x), rtol=1e-5)
    assert np.array_equal(x, [1.0, 2.0, 3.0])


# --- what stays accepted ------------------------------------------------------------------


def writes_into_declared_new_arrays(x):
    y = np.dot(np.ones((3, 3)), x)
    z = np.concatenate([x, x])
    y[0] = y[1] * x[2]
    z[1] = z[0] * 2.0
    return np.sum(y * y) + np.sum(z * x[0])


def test_writes_into_arrays_the_rule_tables_declare_new_are_differentiated():
    x = np.array([0.5, -1.0, 2.0])
    grad = derivo.grad(writes_into_declared_new_arrays)(x)
    np.testing.assert_allclose(grad, array_grad(writes_into_declared_new_arrays, x),
                               rtol=1e-5)


def test_the_rule_tables_declare_what_a_primitive_returns():
    assert rules.returns(np.dot, 2) == rules.NEW
    assert rules.returns(np.reshape, 2) == 0                  # a view of its argument
    assert rules.returns(rules.Method("reshape"), 2) == 0     # of the method's object
    assert rules.returns(rules.Method("copy"), 1) == rules.NEW
    assert rules.returns(max, 2) == rules.ARGUMENT
    assert rules.returns(np.sin, 1) == rules.NEW              # an elementwise rule
    assert rules.returns(np.zeros, 1) == rules.NEW
    assert rules.returns(operator.getitem, 2) is None         # no entry: may be anything


# --- ownership follows the flow ------------------------------------------------------


def writes_through_a_view_of_an_array_read_no_more(x):
    a = x * 2.0
    y = a[1:]
    y[0] = x[0] * 3.0   # changes a too, which nothing reads afterwards
    return np.sum(y * y)


def test_a_write_through_a_view_of_an_array_nothing_reads_afterwards_is_differentiated():
    # refused before ownership followed the flow: y was assigned a view
    f = writes_through_a_view_of_an_array_read_no_more
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(derivo.grad(f)(x), array_grad(f, x), rtol=1e-5)
    np.testing.assert_allclose(derivo.jvp(f, (x,), (np.ones(3),))[1],
                               np.sum(array_grad(f, x)), rtol=1e-5)


def writes_through_a_view_of_an_array_read_afterwards(x):
    a = x * 2.0
    y = a[1:]
    y[0] = x[0] * 3.0
    return np.sum(y * y) + np.sum(a * a)


def test_a_write_through_a_view_names_both_names_and_their_lines():
    f = writes_through_a_view_of_an_array_read_afterwards
    error = assert_refused_at(lambda: derivo.grad(f)(np.array([1.0, 2.0, 3.0])), f,
                              "y = a[1:]")
    message = str(error)
    assert "'y'" in message and "'a'" in message, message
    assert "line {}".format(line_of(f, "y[0] = ")) in message, message
    assert "y = a[1:].copy()" in message, message


def copies_then_writes_the_original(a):
    v = a.copy()
    a[0] = 1.0
    return np.sum(v)


def test_a_copys_tangent_is_its_own():
    # forward mode: the copy's tangent must not alias the original's
    _, tangent = derivo.jvp(copies_then_writes_the_original, (np.array([2.0, 3.0]),),
                            (np.array([1.0, 0.0]),))
    assert tangent == pytest.approx(1.0)


def rebinds_a_view_each_trip(x):
    s = x * 1.0
    total = 0.0
    for i in range(3):
        t = s * 2.0     # a new array each trip: last trip's t is no other name's
        t[0] = t[1]
        total = total + np.sum(t)
        s = t
    return total


def test_an_array_made_anew_each_trip_is_owned_on_each():
    f = rebinds_a_view_each_trip
    x = np.array([1.0, 2.0, 3.0])
    for loops in ("stack", "checkpoint"):
        np.testing.assert_allclose(derivo.grad(f, loops=loops)(x), array_grad(f, x),
                                   rtol=1e-5)


def writes_into_what_an_unknown_call_returns_of_nothing(x):
    y = np.ma.getdata(np.zeros(3))  # may be memory no name here refers to
    y[0] = x
    return np.sum(y) * x


def test_a_write_into_what_an_unknown_call_returns_is_refused_even_without_arguments():
    f = writes_into_what_an_unknown_call_returns_of_nothing
    assert_refused_at(lambda: derivo.grad(f)(2.0), f, "y = np.ma.getdata")


def writes_after_a_checkpointed_loop(a, c):
    s = 0.0
    y = a * 1.0
    i = 0
    k = 0
    while i < 3:
        k = i % 3
        i = i + 1
        s = s + np.tanh(y[k] * c)
        y[k] = np.tanh(y[k] * c)
    y[k] = np.tanh(y[k] * c)  # y is the loop's state: (a copy of) the array made above
    return s + np.sum(y * y)


def test_an_array_a_checkpointed_loop_carries_is_still_owned_after_it():
    f = writes_after_a_checkpointed_loop
    x = np.array([0.3, -0.5, 0.8])
    want = array_grad(lambda a: f(a, 0.7), x)
    for loops in ("stack", "checkpoint"):
        np.testing.assert_allclose(derivo.grad(f, loops=loops)(x, 0.7), want, rtol=1e-5)
