"""A bound method, a functools.partial or a callable object given to derivo is
differentiated as the call it makes: with respect to its own parameters, the
bound object and arguments read at each call."""

import functools
import math
import typing

import numpy as np
import pytest

import derivo

from checks import assert_close, numeric_grad


def central(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


class Model:
    def __init__(self, X, y):
        self.X, self.y, self.scale = X, y, 1.0

    def loss(self, w, penalty=0.1):
        r = np.tanh(self.X @ w) * self.scale - self.y
        return np.sum(r * r) + penalty * np.sum(w * w)

    def energy(self, x):
        return self.scale * math.sin(x) * x

    def __call__(self, x):
        return self.scale * math.exp(-x * x)

    @classmethod
    def doubled(cls, x):
        return 2.0 * x * x

    @staticmethod
    def cube(x):
        return x * x * x


@pytest.fixture
def model():
    rng = np.random.default_rng(0)
    return Model(rng.normal(size=(6, 3)), rng.normal(size=6))


def test_a_bound_method_is_differentiated_in_its_own_parameters(model):
    w = np.array([0.3, -0.2, 0.5])
    grad = derivo.grad(model.loss)(w)
    for i in range(3):
        e = np.eye(3)[i]
        assert_close(grad[i], central(lambda t: model.loss(w + t * e), 0.0), rtol=1e-6)
    assert_close(derivo.grad(model.loss, wrt="penalty")(w, 0.1), float(np.sum(w * w)),
                 rtol=1e-12)


def test_the_object_is_read_when_called(model):
    grad = derivo.grad(model.energy)
    assert_close(grad(0.7), math.cos(0.7) * 0.7 + math.sin(0.7), rtol=1e-12)
    model.scale = 3.0
    assert_close(grad(0.7), 3.0 * (math.cos(0.7) * 0.7 + math.sin(0.7)), rtol=1e-12)


def test_value_and_grad_vjp_jvp_and_second_order_of_a_method(model):
    x = 0.7
    expected = math.cos(x) * x + math.sin(x)
    second = -math.sin(x) * x + 2 * math.cos(x)
    assert_close(derivo.value_and_grad(model.energy)(x), (model.energy(x), expected),
                 rtol=1e-12)
    out, vjp_fn = derivo.vjp(model.energy, x)
    assert_close(vjp_fn(2.0), (2.0 * expected,), rtol=1e-12)
    assert_close(derivo.jvp(model.energy, (x,), (1.0,)), (out, expected), rtol=1e-12)
    assert_close(derivo.hessian(model.energy)(x), second, rtol=1e-10)
    assert_close(derivo.grad(derivo.grad(model.energy))(x), second, rtol=1e-10)
    assert_close(derivo.hvp(model.energy, (x,), (1.0,)), (second,), rtol=1e-10)


def test_a_callable_object_classmethod_and_staticmethod(model):
    assert_close(derivo.grad(model)(0.4), -2 * 0.4 * math.exp(-0.16), rtol=1e-12)
    assert_close(derivo.grad(Model.doubled)(3.0), 12.0, rtol=1e-15)
    assert_close(derivo.grad(Model.cube)(2.0), 12.0, rtol=1e-15)


def power(x, y, c=1.0):
    return c * x ** y


def test_a_partial_binds_leading_arguments_and_keywords():
    assert_close(derivo.grad(functools.partial(power, 3.0))(2.0), math.log(3.0) * 9.0,
                 rtol=1e-12)
    squared = functools.partial(power, y=2.0, c=0.5)
    assert_close(derivo.grad(squared)(3.0), 3.0, rtol=1e-15)
    nested = functools.partial(functools.partial(power, c=2.0), 2.0)
    assert_close(derivo.grad(nested)(3.0), 2.0 * math.log(2.0) * 8.0, rtol=1e-12)


def test_a_bound_derivative_shows_its_source(model):
    derivative = derivo.grad(model.energy)
    assert derivative.source.startswith("def energy_grad(self, x):")
    assert "energy_grad" in derivative._repr_markdown_()


class Pair(typing.NamedTuple):
    w: float
    b: float


class Line:
    def loss(self, p, x):
        return p[0] * x * x + p[1] * x


def line(p, x, c=0.0):
    return p.w * x * x + p.b * x + c


@pytest.mark.parametrize("entry", [Line().loss, functools.partial(Line.loss, Line())])
def test_vjp_and_jvp_of_a_bound_function_given_a_list(entry):
    out, vjp_fn = derivo.vjp(entry, [0.5, 2.0], 1.5)
    assert out == pytest.approx(0.5 * 2.25 + 3.0)
    assert vjp_fn(1.0) == ([2.25, 1.5], pytest.approx(2 * 0.5 * 1.5 + 2.0))
    _, tangent = derivo.jvp(entry, ([0.5, 2.0], 1.5), ([1.0, 0.0], 0.0))
    assert tangent == pytest.approx(2.25)


def test_vjp_of_a_partial_given_a_named_tuple():
    entry = functools.partial(line, c=0.1)
    _, vjp_fn = derivo.vjp(entry, Pair(0.5, 2.0), 1.5)
    assert vjp_fn(1.0) == (Pair(2.25, 1.5), pytest.approx(3.5))
    second = derivo.jacobian(derivo.grad(entry, wrt=1), wrt=(1,))(Pair(0.5, 2.0), 1.5)
    assert second == pytest.approx((1.0,))


def test_hessian_and_jacobians_of_a_partial_with_keywords():
    entry = functools.partial(line, c=0.1)
    p = Pair(0.5, 2.0)
    assert derivo.hessian(entry, wrt=1)(p, 1.5) == pytest.approx(1.0)
    for mode in ("forward", "reverse"):
        assert derivo.jacobian(entry, wrt=(1,), mode=mode)(p, 1.5) == \
            pytest.approx((2 * 0.5 * 1.5 + 2.0,))
    assert derivo.jacobian(derivo.grad(entry, wrt=1), wrt=(1,))(p, 1.5) == pytest.approx((1.0,))


# --- class-based decorators: an object whose __call__ takes *args and **kwargs --------


class logged:
    """A decorator written as a class, as functools.update_wrapper's docs show it."""

    def __init__(self, fn):
        functools.update_wrapper(self, fn)
        self.fn = fn

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


class counted:
    def __init__(self, fn):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fn(*args, **kwargs)


@logged
def scaled_product(x, y, scale=2.0):
    return scale * np.sin(x) * y * y


@logged
def fit(w, X, y):
    r = np.tanh(X @ w) - y
    return np.sum(r * r)


def calls_a_decorated_function(x):
    return scaled_product(x, 3.0) + x * x


@counted
def counted_square(x):
    return x * x


def test_a_class_decorated_function_is_differentiated_as_the_function_it_calls():
    args = (0.7, 1.5)
    assert_close(derivo.grad(scaled_product)(*args), numeric_grad(scaled_product, args),
                 rtol=1e-7)
    assert_close(derivo.grad(scaled_product, wrt="y")(*args),
                 numeric_grad(scaled_product, args, wrt=1), rtol=1e-7)
    assert_close(derivo.grad(scaled_product, wrt=(0, 1))(*args, scale=3.0),
                 tuple(numeric_grad(scaled_product, args, wrt=i, kwargs={"scale": 3.0})
                       for i in (0, 1)), rtol=1e-7)
    assert derivo.grad(scaled_product).source.startswith("def scaled_product_grad(")
    x = 0.7
    assert_close(derivo.grad(derivo.grad(scaled_product))(x, 1.5),
                 -2.0 * np.sin(x) * 1.5 * 1.5, rtol=1e-10)


def test_array_derivatives_of_a_class_decorated_function():
    rng = np.random.default_rng(0)
    X, y, w = rng.normal(size=(6, 3)), rng.normal(size=6), rng.normal(size=3)
    h = 1e-6
    expected = [(fit(w + h * e, X, y) - fit(w - h * e, X, y)) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(derivo.grad(fit)(w, X, y), np.array(expected), rtol=1e-6)
    hessian = derivo.hessian(fit)(w, X, y)
    gradient = derivo.grad(fit)
    columns = [(gradient(w + h * e, X, y) - gradient(w - h * e, X, y)) / (2 * h)
               for e in np.eye(3)]
    np.testing.assert_allclose(hessian, np.array(columns).T, rtol=1e-5)
    np.testing.assert_allclose(derivo.jacobian(fit)(w, X, y), np.array(expected), rtol=1e-6)


def test_a_class_decorated_function_called_inside_is_differentiated_through():
    x = 0.4
    assert_close(derivo.grad(calls_a_decorated_function)(x),
                 numeric_grad(calls_a_decorated_function, (x,)), rtol=1e-7)


def test_a_decorator_changing_its_own_attributes_is_refused_with_what_to_write():
    with pytest.raises(derivo.DerivoError, match=r"test_bound.py:\d+:\d+: cannot "
                       r"differentiate augmented assignment to 'self.calls': .*has_aux"):
        derivo.grad(counted_square)(2.0)
