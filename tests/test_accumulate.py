"""derivo.accumulate: generated code adds into an adjoint in place only where it owns it.

Each case is one where adding in place into an accumulator that another name, the
caller's cotangent or a returned gradient also holds would change that other value;
the gradients are checked against central differences, the values the caller holds
for being left as they were, and the source for the form each update takes.
"""

import dataclasses

import numpy as np
import pytest

import derivo
from probing import numeric_gradient

RNG = np.random.default_rng(19)


def read_then_shared(X, Y):
    a = X[0] * 3.0
    Z = X + Y  # bX and bY are both bZ: adding a[0]'s adjoint into bX in place changes bY
    return np.sum(Z * Z) + a


def test_an_adjoint_another_adjoint_holds_is_added_to_in_a_new_array():
    X, Y = RNG.normal(size=3), RNG.normal(size=3)
    df = derivo.grad(read_then_shared, wrt=(0, 1))
    assert "bX = add_at(bX, " in df.source and "add_at_in_place" not in df.source
    bX, bY = df(X, Y)
    for got, index in ((bX, 0), (bY, 1)):
        np.testing.assert_allclose(got, numeric_gradient(read_then_shared, [X, Y], index),
                                   rtol=1e-6)
    np.testing.assert_allclose(bY, 2 * (X + Y), rtol=1e-12)


def both_items(xs):
    s = 0.0
    for i in range(1, len(xs)):
        s = s + np.sin(xs[i]) * xs[i - 1]  # two reads of xs on each trip, one accumulator
    return s


@pytest.mark.parametrize("make", [np.asarray, list], ids=["array", "list"])
def test_an_accumulator_a_loop_reads_twice_per_trip_is_added_into(make):
    xs = RNG.normal(size=5)
    df = derivo.grad(both_items)
    assert "bxs = add_at_in_place(bxs, " in df.source and "add_at(" not in df.source
    expected = numeric_gradient(lambda v: both_items(make(v)), [xs], 0)
    np.testing.assert_allclose(np.asarray(df(make(xs)), dtype=float), expected, rtol=1e-6)


def shifted(X):
    t = X[0] * 2.0
    return X + t  # X's adjoint starts as the caller's cotangent itself


def test_the_callers_cotangent_is_never_written_into():
    X = RNG.normal(size=3)
    out, pullback = derivo.vjp(shifted, X)
    cotangent = RNG.normal(size=3)
    kept = cotangent.copy()
    (bX,) = pullback(cotangent)
    np.testing.assert_array_equal(cotangent, kept)
    jacobian = np.eye(3) + np.outer(np.ones(3), [2.0, 0.0, 0.0])
    np.testing.assert_allclose(bX, jacobian.T @ cotangent, rtol=1e-12)


def rows_and_whole(X, w):
    s = np.sum(X * w)  # X's adjoint is w broadcast: a view of nothing the code owns
    for i in range(X.shape[0]):
        s = s + np.tanh(X[i] @ w)
    return s


def test_a_returned_gradient_the_user_changes_leaves_the_next_call_as_it_was():
    X, w = RNG.normal(size=(4, 3)), RNG.normal(size=3)
    df = derivo.grad(rows_and_whole, wrt=(0, 1))
    first = df(X, w)
    expected = [numeric_gradient(rows_and_whole, [X, w], index) for index in (0, 1)]
    for got, want in zip(first, expected):
        np.testing.assert_allclose(got, want, rtol=1e-6)
        got[...] = 1e6  # the user's to change
    np.testing.assert_array_equal(w, w.copy())
    for got, want in zip(df(X, w), expected):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def returned_twice(x, y):
    z = x * y
    return z, z


def test_a_gradient_returned_twice_is_one_value_added_to_in_a_new_one():
    x, y = RNG.normal(size=3), RNG.normal(size=3)
    _, pullback = derivo.vjp(returned_twice, x, y)
    first, second = RNG.normal(size=3), RNG.normal(size=3)
    kept = first.copy(), second.copy()
    bx, by = pullback((first, second))
    np.testing.assert_array_equal(first, kept[0])
    np.testing.assert_array_equal(second, kept[1])
    np.testing.assert_allclose(bx, (kept[0] + kept[1]) * y, rtol=1e-12)
    np.testing.assert_allclose(by, (kept[0] + kept[1]) * x, rtol=1e-12)


def aliased_argument(X):
    Y = X  # one array under two names
    a = Y[1] * Y[2]
    return np.sum(X * X) + a


def test_an_adjoint_aliasing_an_argument():
    X = RNG.normal(size=4)
    kept = X.copy()
    gradient = derivo.grad(aliased_argument)(X)
    np.testing.assert_array_equal(X, kept)
    np.testing.assert_allclose(gradient, numeric_gradient(aliased_argument, [X], 0),
                               rtol=1e-6)


def written(x, v):
    y = np.tanh(x)
    y[0] = v
    s = y + x  # y's adjoint is x's: zeroing its part y[0] in place would change x's
    return np.sum(s * s)


def test_zeroing_an_adjoint_another_adjoint_holds():
    x = RNG.normal(size=3)
    df = derivo.grad(written, wrt=(0, 1))
    assert "zeroed(" in df.source and "zeroed_in_place" not in df.source
    bx, bv = df(x, 0.7)
    np.testing.assert_allclose(bx, numeric_gradient(written, [x, 0.7], 0), rtol=1e-6)
    assert bv == pytest.approx(numeric_gradient(written, [x, 0.7], 1), rel=1e-6)


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: float


def layer_loss(layer, x):
    a = layer.b * 2.0
    h = np.tanh(layer.w * x) + a
    return np.sum(h * h) + layer.b * np.sum(layer.w)


def test_a_records_adjoint_is_a_dict_added_into_once_owned():
    layer, x = Layer(RNG.normal(size=3), 0.4), RNG.normal(size=3)
    df = derivo.grad(layer_loss)
    assert "add_field_in_place(" in df.source or "add_at_in_place(" in df.source
    got = df(layer, x)
    gradient = got if isinstance(got, dict) else {"w": got.w, "b": got.b}

    def at(w, b):
        return layer_loss(Layer(w, b), x)
    np.testing.assert_allclose(gradient["w"], numeric_gradient(at, [layer.w, layer.b], 0),
                               rtol=1e-6)
    assert gradient["b"] == pytest.approx(numeric_gradient(at, [layer.w, layer.b], 1), rel=1e-6)


def accumulated(params, x):
    s = 0.0
    for name in ["a", "b", "a"]:
        s = s + np.sum(params[name] * x)
    return s * params["b"][0]


def test_a_dicts_adjoint_a_loop_adds_into():
    params = {"a": RNG.normal(size=2), "b": RNG.normal(size=2)}
    x = RNG.normal(size=2)
    df = derivo.grad(accumulated)
    gradient = df(params, x)

    def at(a, b):
        return accumulated({"a": a, "b": b}, x)
    for index, key in enumerate("ab"):
        np.testing.assert_allclose(gradient[key],
                                   numeric_gradient(at, [params["a"], params["b"]], index),
                                   rtol=1e-6)


def test_the_second_derivative_of_an_in_place_accumulation():
    xs = RNG.normal(size=4)
    hessian = derivo.hessian(both_items)(xs)
    gradient = derivo.grad(both_items)
    expected = np.array([numeric_gradient(lambda v: gradient(v)[i], [xs], 0)
                         for i in range(4)])
    np.testing.assert_allclose(hessian, expected, rtol=1e-5, atol=1e-8)


def appended(x):
    out = []
    out.append(x * 2.0)
    out.append(x * 3.0)
    return out


def test_the_callers_list_of_cotangents_is_never_popped():
    _, pullback = derivo.vjp(appended, 0.5)
    cotangent = [1.0, 10.0]
    assert pullback(cotangent) == (32.0,) and cotangent == [1.0, 10.0]
    assert pullback(cotangent) == (32.0,)


def grown(x, n):
    ys = []
    for i in range(n):
        ys.append(np.sin(x * i))
    s = 0.0
    for y in ys:
        s = s + np.sum(y * y)
    return s


def test_a_list_the_reverse_sweep_owns_is_popped_in_place():
    df = derivo.grad(grown)
    assert "pop_adjoint_in_place(" in df.source
    x = RNG.normal(size=2)
    np.testing.assert_allclose(df(x, 5), numeric_gradient(lambda v: grown(v, 5), [x], 0),
                               rtol=1e-6)


def entered_shared(X, Y, w):
    s = 0.0
    for i in range(X.shape[0]):
        s = s + np.tanh(X[i] @ w)
    Z = X + Y  # reversed first: X's adjoint enters the loop as Y's too
    return s + np.sum(Z * Z)


def test_an_accumulator_shared_before_a_loop_is_copied_once_before_it():
    df = derivo.grad(entered_shared, wrt=(0, 1, 2))
    assert "bX = owned(bX)\n    for " in df.source
    assert "bX = add_at_in_place(bX, " in df.source
    X, Y, w = RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3)), RNG.normal(size=3)
    gradient = df(X, Y, w)
    for index, got in enumerate(gradient):
        np.testing.assert_allclose(got, numeric_gradient(entered_shared, [X, Y, w], index),
                                   rtol=1e-6)
    np.testing.assert_allclose(gradient[1], 2 * (X + Y), rtol=1e-12)
