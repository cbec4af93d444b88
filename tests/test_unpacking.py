"""Calls that unpack their arguments: ``f(*t)`` of a tuple built in the function
is the call of its items; ``rs.randn(*x.shape)``, ``zip(*pairs)`` and the like on
values no derivative flows through run as written; a differentiated value
unpacked into a call is refused with what to write."""

import math

import numpy as np
import pytest

import derivo
from derivo import DerivoError

from checks import assert_close
from test_functions_as_values import assert_all_modes, fd


def scaled(z, c, offset=0.0):
    if z > c:
        return z * c + offset
    return math.sin(z) * c


def through_a_tuple(x, a):
    params = (x, a * x)
    return scaled(*params) + scaled(*params, 1.0)


def test_a_tuple_unpacked_into_a_user_function():
    assert_all_modes(through_a_tuple, 0.3, 0.7)
    assert_all_modes(through_a_tuple, 2.5, 0.2)


def noisy(mean, scale):
    rs = np.random.RandomState(0)
    return np.sum(mean * rs.randn(*mean.shape) * scale)


def test_a_shape_unpacked_into_a_function_of_no_derivative():
    mean = np.array([[0.5, 1.0, -2.0], [0.1, 0.2, 0.3]])
    noise = np.random.RandomState(0).randn(2, 3)
    assert np.allclose(derivo.grad(noisy)(mean, 2.0), 2.0 * noise)
    assert_close(derivo.grad(noisy, wrt=1)(mean, 2.0), float(np.sum(mean * noise)))


def transposed(x, pairs):
    columns = list(zip(*pairs))
    return x * sum(columns[0]) + x * x * max(columns[1])


def test_zip_of_unpacked_data():
    pairs = [(1.0, 4.0), (2.0, 3.0)]
    assert_close(derivo.grad(transposed)(0.5, pairs), 3.0 + 2 * 0.5 * 4.0)


def unpacks_a_differentiated_list(x):
    values = [x, 2.0 * x]
    return math.hypot(*values)


def test_a_differentiated_value_unpacked_into_a_call_is_refused():
    with pytest.raises(DerivoError) as info:
        derivo.grad(unpacks_a_differentiated_list)(0.5)
    assert info.value.lineno == unpacks_a_differentiated_list.__code__.co_firstlineno + 2
    assert "one by one" in str(info.value)


def keywords_unpacked(x):
    options = {"offset": 1.0}
    return np.sum(np.tanh(x) * np.full(3, **{"fill_value": 2.0})) + options["offset"]


def test_keywords_unpacked_into_a_function_of_no_derivative():
    x = np.array([0.1, 0.2, 0.3])
    assert np.allclose(derivo.grad(keywords_unpacked)(x), fd(keywords_unpacked, x))


def product_of(*factors):
    total = 1.0
    for factor in factors:
        total = total * factor
    return total


def weighted(x, **weights):
    if weights["sharp"]:
        return math.tanh(x * weights["scale"])
    return x * weights["scale"]


def calls_helpers_that_gather(x, a):
    return product_of(x, a, x) + weighted(x, scale=2.0, sharp=True) + product_of()


def test_user_functions_taking_args_and_kwargs():
    assert_all_modes(calls_helpers_that_gather, 0.3, 0.7)


def differentiated_through_kwargs(x):
    return weighted(x, scale=x, sharp=False) + weighted(x, scale=x * x, sharp=True)


def passes_its_kwargs_on(x, **options):
    return np.sum(np.tanh(x * options["scale"])) + len(options)


def differentiated_into_a_kwargs_read_whole(x):
    return passes_its_kwargs_on(x, scale=x)


def test_a_differentiated_value_gathered_into_kwargs():
    assert_all_modes(differentiated_through_kwargs, 0.4)
    x = np.array([0.2, -0.3])  # (len(options) reads the dict, whose items are names)
    assert np.allclose(derivo.grad(differentiated_into_a_kwargs_read_whole)(x),
                       fd(differentiated_into_a_kwargs_read_whole, x))


def values_of_a_parameter(params, y):
    w, k = params.values()
    return w * k * y


def items_of_a_parameter(params, y):
    (_, w), (_, k) = params.items()
    return w * k * y


def values_of_a_local_dict(x, y):
    d = {"a": y * x, "b": 2.0}
    u, v = d.values()
    return u * v


@pytest.mark.parametrize("f", [values_of_a_parameter, items_of_a_parameter])
def test_a_dict_view_unpacked_is_read_by_position(f):
    # d.values() takes no index: the generated code's seq[0] was a TypeError
    params = {"w": 0.8, "k": 2.0}
    gradient = derivo.grad(f, wrt=(0, 1))(params, 0.5)
    assert gradient[0] == pytest.approx({"w": 1.0, "k": 0.4}) and gradient[1] == pytest.approx(1.6)
    assert derivo.jvp(f, (params, 0.5), ({"w": 1.0, "k": 0.0}, 1.0))[1] == pytest.approx(2.6)


def test_a_local_dict_view_unpacked_is_read_by_position():
    assert derivo.grad(values_of_a_local_dict, wrt=(0, 1))(0.7, -0.4) == \
        pytest.approx((2.0 * -0.4, 2.0 * 0.7))
