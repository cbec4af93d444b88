"""``L[i] += e`` on a container changes the array L[i] in place, as ``r += e``
does on a row ``r = X[i]``: derivo follows such an update only where no other
reference to that array is read afterwards; elsewhere it refuses, naming the line.
"""

import numpy as np
import pytest

import derivo
from derivo.errors import DerivoError

from checks import assert_close, numeric_grad
from test_memory_model import line_of

MODES = {
    "grad": lambda f, args, wrt: derivo.value_and_grad(f, wrt=wrt)(*args),
    "jvp": lambda f, args, wrt: derivo.jvp(
        f, tuple(args), tuple(1.0 if i == wrt else None for i in range(len(args)))),
}


def assert_refused_at(call, func, text):
    with pytest.raises(DerivoError) as info:
        call()
    assert "{}:{}:".format(__file__, line_of(func, text)) in str(info.value), str(info.value)
    return info.value


def fresh(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def updates_a_parameter_through_a_list(y, z, c):
    L = [y, z]
    L[1] += c  # z changes in place
    return np.sum(z) * c


def updates_an_array_the_list_holds_twice(y, c):
    t = y * 1.0
    L = [t, t]
    L[1] += c  # L[0] is the same array
    return np.sum(L[0]) * c


def updates_an_array_another_name_holds(y, c):
    t = y * 2.0
    L = [t]
    L[0] += c  # t is the same array
    return np.sum(t) * c


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("f, text", [
    (updates_a_parameter_through_a_list, "L[1] += c"),
    (updates_an_array_the_list_holds_twice, "L[1] += c"),
    (updates_an_array_another_name_holds, "L[0] += c")])
def test_an_item_update_seen_through_another_reference_is_refused(f, text, mode):
    args = [np.array([0.1, 0.2, 0.3]), np.array([0.4, 0.5, 0.6]), 1.0][-f.__code__.co_argcount:]
    error = assert_refused_at(lambda: MODES[mode](f, fresh(args), len(args) - 1), f, text)
    assert text.split(" +=")[0] + " = " in str(error)  # what to write instead


def updates_numbers_in_a_list(a, b, c):
    L = [a * 1.0, b * 1.0]
    L[1] += c
    return L[1] * L[0]


def updates_a_list_of_arrays_read_only_through_the_item(y, c):
    L = [y * 1.0]
    L[0] += c
    s = np.sum(y) * c
    return s


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("f, args", [
    (updates_numbers_in_a_list, (0.3, 2.0, 0.1)),
    (updates_a_list_of_arrays_read_only_through_the_item, (np.array([0.1, 0.2]), 0.7))])
def test_an_item_update_nothing_else_sees_is_differentiated(f, args, mode):
    value, derivative = MODES[mode](f, fresh(args), len(args) - 1)
    assert_close(value, f(*fresh(args)))
    assert_close(derivative, numeric_grad(f, fresh(args), wrt=len(args) - 1), rtol=1e-5)


def updates_one_of_two_rows(X, c):
    r0 = X[0]
    r1 = X[0]
    r0 += c  # r1 is the same row
    return np.sum(r1) * c


def updates_one_of_two_numbers(x, c):
    r0 = x[0]
    r1 = x[1]
    r0 += c
    return r1 * r0


@pytest.mark.parametrize("mode", sorted(MODES))
def test_an_update_of_a_row_another_row_name_reads_is_refused(mode):
    X = np.ones((2, 3))
    assert_close(numeric_grad(lambda c: updates_one_of_two_rows(X.copy(), c), (1.0,)), 9.0,
                 rtol=1e-5)
    with pytest.raises(DerivoError, match="'r1' sharing memory with 'r0'"):
        MODES[mode](updates_one_of_two_rows, [X.copy(), 1.0], 1)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_an_update_of_a_number_taken_from_an_array_is_differentiated(mode):
    args = (np.array([1.0, 2.0]), 1.0)
    value, derivative = MODES[mode](updates_one_of_two_numbers, fresh(args), 1)
    assert_close(value, 4.0)
    assert_close(derivative, numeric_grad(updates_one_of_two_numbers, fresh(args), wrt=1),
                 rtol=1e-5)
