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


# --- vjp ------------------------------------------------------------------------------

def noisy_objective(w):
    z = np.random.normal(size=w.shape)
    return np.sum(np.sin(w * z))


def noisy_map(w):
    z = np.random.normal(size=w.shape)
    return np.sin(w * z)


def test_vjp_fn_uses_the_run_that_made_the_value():
    w = np.array([0.3, -0.5, 0.8])
    np.random.seed(7)
    out, vjp_fn = derivo.vjp(noisy_objective, w)
    np.random.seed(7)
    z = np.random.normal(size=w.shape)
    assert_close(out, float(np.sum(np.sin(w * z))))
    (first,) = vjp_fn(1.0)
    np.testing.assert_allclose(first, np.cos(w * z) * z, rtol=1e-12)
    (second,) = vjp_fn(1.0)
    np.testing.assert_array_equal(second, first)
    (doubled,) = vjp_fn(2.0)
    np.testing.assert_allclose(doubled, 2.0 * first, rtol=1e-12)


def test_vjp_fn_of_an_array_result_refuses_a_run_that_draws_again():
    w = np.array([0.3, -0.5])
    np.random.seed(3)
    out, vjp_fn = derivo.vjp(noisy_map, w)
    np.random.seed(3)
    z = np.random.normal(size=w.shape)
    np.testing.assert_array_equal(out, np.sin(w * z))
    (gradient,) = vjp_fn(np.array([1.0, 2.0]))
    np.testing.assert_allclose(gradient, np.cos(w * z) * z * [1.0, 2.0], rtol=1e-12)
    with pytest.raises(derivo.DerivoError, match="running it again for this cotangent gave "
                       "another result"):
        vjp_fn(np.array([1.0, 0.0]))


def cubes(x):
    return x * x * x


def test_vjp_fn_of_an_array_result_may_be_called_again_when_the_run_repeats():
    x = np.array([0.5, -1.5])
    out, vjp_fn = derivo.vjp(cubes, x)
    for cotangent in ([1.0, 0.0], [0.0, 1.0], [2.0, -1.0]):
        (gradient,) = vjp_fn(np.array(cotangent))
        np.testing.assert_allclose(gradient, 3 * x * x * cotangent, rtol=1e-12)


def test_a_cotangent_of_the_wrong_shape_is_refused_with_the_expected_shape():
    _, vjp_fn = derivo.vjp(cubes, np.array([0.5, -1.5]))
    with pytest.raises(derivo.DerivoError, match=r"must be an array of shape \(2,\), like the "
                       r"result, got array\(\[1., 1., 1.\]\)"):
        vjp_fn(np.ones(3))
    _, vjp_fn = derivo.vjp(returns_a_pair, 2.0, 3.0)
    with pytest.raises(derivo.DerivoError, match="must be a tuple of 2 cotangents"):
        vjp_fn(1.0)
    assert vjp_fn((1.0, 0.0)) == (3.0, 2.0)


@pytest.mark.parametrize("scalar", [np.float32(1.5), np.float64(1.5)])
def test_vjp_differentiates_numpy_float_scalars(scalar):
    out, vjp_fn = derivo.vjp(cubes, scalar)
    (gradient,) = vjp_fn(1.0)
    assert gradient is not None and type(gradient) is type(scalar)
    assert_close(float(gradient), 3 * 1.5 ** 2, rtol=1e-6)


def test_vjp_gives_no_cotangent_for_integer_scalars():
    # like grad, which refuses to differentiate with respect to an integer
    assert derivo.vjp(cubes, np.int64(2))[1](1.0) == (None,)


# --- gradients of the arguments' structure and dtype --------------------------------

def sine_sum(x):
    return np.sum(np.sin(x) * 2.0)


def test_float32_arguments_get_float32_gradients():
    x = np.array([0.5, 1.5], dtype=np.float32)
    gradient = derivo.grad(sine_sum)(x)
    assert gradient.dtype == np.float32
    np.testing.assert_allclose(gradient, 2.0 * np.cos(x.astype(float)), rtol=1e-6)
    value, gradient = derivo.value_and_grad(sine_sum)(x)
    assert gradient.dtype == np.float32
    (gradient,) = derivo.vjp(sine_sum, x)[1](1.0)
    assert gradient.dtype == np.float32
    assert type(derivo.grad(cubes)(np.float32(2.0))) is np.float32
    assert derivo.grad(sine_sum)(x.astype(float)).dtype == np.float64


def one_used(x, y):
    return np.sum(x * 2.0)


def one_used_scalar(x, y):
    return x * 2.0


@pytest.mark.parametrize("loops", ["stack", "checkpoint", "reversible"])
@pytest.mark.parametrize("func", [one_used, one_used_scalar])
def test_an_argument_nothing_reaches_gets_zeros_of_its_shape(func, loops):
    x = 1.5 if func is one_used_scalar else np.ones(2)
    gx, gy = derivo.grad(func, wrt=(0, 1), loops=loops)(x, np.ones((3, 2)))
    np.testing.assert_array_equal(gx, 2.0 * np.ones_like(x))
    assert isinstance(gy, np.ndarray) and gy.shape == (3, 2) and not gy.any()


def grows_its_argument(xs, y):
    xs.append(y)
    return xs[0] * xs[2]


def test_a_list_the_function_appends_to_gets_a_gradient_of_its_length():
    gradient = derivo.grad(grows_its_argument)([1.0, 2.0], 3.0)
    assert gradient == [3.0, 0.0]


# --- saved modules check their arguments as the entry does ---------------------------

def products_read_by_item(x, y):
    s = x * y
    return s[0] + s[1]


def test_a_saved_module_of_scalar_code_refuses_an_array(tmp_path):
    df = derivo.grad(products_read_by_item)
    y = np.array([1.0, 2.0])
    assert_close(df(1.0, y), 3.0)  # in process: array code, which sums
    path = df.save(tmp_path / "saved_products.py")
    namespace = {}
    exec(compile(open(path).read(), str(path), "exec"), namespace)
    saved = namespace[df.__name__]
    with pytest.raises(TypeError, match="takes numbers, not arrays"):
        saved(1.0, y)
