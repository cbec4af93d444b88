"""Nesting: derivatives of derivatives, and functions that call derivatives.

derivo differentiates the code it generated like any other code: forward mode
transforms it directly; reverse mode runs forward mode over it (one tangent
pass per differentiated parameter), since a generated reverse sweep pops a
stack that reverse mode cannot undo.  A straight-line generated function called
by a user's function is pasted into the caller and reversed as plain code.
"""

import math

import numpy as np
import pytest
from scipy import special

import derivo
from checks import assert_close, numeric_grad
from examples.bessel import besselj


@pytest.mark.parametrize("v", [0, 1, 2, 3])
@pytest.mark.parametrize("z", [0.5, 1.0, 3.0, 10.0])
def test_second_derivative_of_bessel(v, z):
    second = derivo.grad(derivo.grad(besselj, wrt="z"), wrt="z")
    # atol=1e-15: the series is summed far enough for its derivatives to converge too
    assert_close(second(v, z, 1e-15), special.jvp(v, z, n=2), rtol=1e-9, atol=1e-12)


def test_third_derivative_of_bessel():
    third = derivo.grad(derivo.grad(derivo.grad(besselj, wrt="z"), wrt="z"), wrt="z")
    assert_close(third(2, 1.5, 1e-15), special.jvp(2, 1.5, n=3), rtol=1e-9, atol=1e-12)


def product(x, y):
    return math.sin(x) * y * y + x * math.exp(y)


def test_grad_of_grad_with_several_parameters_is_a_hessian_row():
    dx = derivo.grad(product, wrt="x")
    row = derivo.grad(dx, wrt=("x", "y"))(0.3, 0.7)
    expected = derivo.hessian(product, wrt=("x", "y"))(0.3, 0.7)[0]
    assert_close(row, expected, rtol=1e-12, atol=1e-12)
    assert_close(row, (-math.sin(0.3) * 0.49, 2 * 0.7 * math.cos(0.3) + math.exp(0.7)),
                 rtol=1e-12, atol=1e-12)


def test_value_and_grad_and_vjp_of_a_grad():
    dy = derivo.grad(product, wrt="y")
    value, slope = derivo.value_and_grad(dy, wrt="y")(0.3, 0.7)
    assert_close(value, dy(0.3, 0.7), rtol=0, atol=0)
    assert_close(slope, 2 * math.sin(0.3) + 0.3 * math.exp(0.7), rtol=1e-12, atol=1e-12)
    out, vjp_fn = derivo.vjp(dy, 0.3, 0.7)
    bx, by = vjp_fn(2.0)
    assert_close((bx, by), (2 * (2 * 0.7 * math.cos(0.3) + math.exp(0.7)), 2 * slope),
                 rtol=1e-12, atol=1e-12)


def test_the_nested_source_shows_the_tangent_pass():
    second = derivo.grad(derivo.grad(besselj, wrt="z"), wrt="z")
    assert "def besselj_grad_jvp(dz, v, z" in second.source
    assert "_, dz = besselj_grad_jvp(1.0, v, z, atol)" in second.source


def h(x, y):
    return math.sin(x) * y * y


dh = derivo.grad(h, wrt="x")
dbessel = derivo.grad(besselj, wrt="z")


def calls_a_straight_gradient(x, y):
    return dh(x, y) * x + y


def calls_a_looping_gradient(z, w):
    return dbessel(2, z) * w + z


@pytest.mark.parametrize("func, point", [(calls_a_straight_gradient, (0.3, 2.0)),
                                         (calls_a_looping_gradient, (1.5, 0.7))])
def test_a_function_calling_a_gradient_in_both_modes(func, point):
    expected = numeric_grad(func, point, wrt=(0, 1))
    reverse = derivo.grad(func, wrt=(0, 1))(*point)
    assert_close(reverse, expected, rtol=1e-6, atol=1e-8)
    for index in range(2):
        tangent = [1.0 if i == index else 0.0 for i in range(2)]
        _, forward = derivo.jvp(func, point, tangent)
        assert_close(forward, reverse[index], rtol=1e-12, atol=1e-12)


def test_a_straight_gradient_is_reversed_inline():
    source = derivo.grad(calls_a_straight_gradient, wrt=(0, 1)).source
    assert "_vjp" not in source and "_jvp" not in source


def test_a_looping_gradient_gets_a_tangent_vjp():
    source = derivo.grad(calls_a_looping_gradient, wrt=(0, 1)).source
    assert "def besselj_grad_vjp(bresult, v, z, atol=1e-08):" in source


def cubes(x):
    return np.sum(x * x * x)


def test_grad_of_an_array_gradient_is_refused_with_a_pointer_to_hessian():
    gradient = derivo.grad(cubes)   # an array: grad of it has no meaning
    with pytest.raises(derivo.DerivoError, match="derivo.hessian"):
        derivo.grad(gradient)(np.ones(3))


def square_of_the_first(x, y):
    return x * x


SLOPE_IN_Y = derivo.grad(square_of_the_first, wrt=1)
SLOPES = derivo.grad(square_of_the_first, wrt=(0, 1))


def through_both_slopes(x):
    a, b = SLOPES(x, 2.0 * x)
    return a * x + b


def test_a_gradient_nothing_depends_on_differentiates_again():
    # its 0.0 once came from zero_gradient, which made the code read as NumPy code
    # and the second derivative was refused
    assert derivo.grad(SLOPE_IN_Y, wrt=1)(1.0, 2.0) == 0.0
    assert derivo.grad(through_both_slopes)(1.5) == pytest.approx(4 * 1.5)  # d/dx 2x^2


def rebound_pair(pair, y):
    a, b = pair
    if y > 0:
        pair = (b, a)
    return pair[0] * a + pair[1] * b * y


def item_written_pair(xs, y):
    a, b = xs
    xs[0] = b * y
    return xs[0] * a + b * xs[1]


@pytest.mark.parametrize("f, pair, expected", [
    # y > 0: f = a b (1 + y)
    (rebound_pair, (1.3, -0.7), (((0.0, 1.9), (1.9, 0.0)), (-0.7, 1.3), 0.0)),
    # f = a b y + b^2
    pytest.param(item_written_pair, [1.3, -0.7], (((0.0, 0.9), (0.9, 2.0)), (-0.7, 1.3), 0.0),
                 marks=pytest.mark.xfail(strict=True, raises=derivo.DerivoError, reason=(
                     "forward mode refuses the write that makes xs's first tangent in the "
                     "gradient's code, as seq1 = xs, read afterwards only for its structure "
                     "(getitem_vjp's like), keeps its symbolic zero (forward.first_tangent)"))),
])
def test_hessian_through_unpacking_a_pair_the_function_changes(f, pair, expected):
    # with no copy of the unpacked pair, its gradient pushed the pair on a stack
    # and the Hessian was refused as an alias of it
    (h_pair, h_pair_y), (h_y_pair, h_y) = derivo.hessian(f, wrt=(0, 1))(pair, 0.9)
    block, cross, h_yy = expected
    np.testing.assert_allclose(h_pair, block, atol=1e-12)
    np.testing.assert_allclose(h_pair_y, cross, atol=1e-12)
    np.testing.assert_allclose(h_y_pair, cross, atol=1e-12)
    assert abs(h_y - h_yy) < 1e-12


def product_of_pair(xs, y):
    return xs[0] * xs[1] * y


@pytest.mark.parametrize("pair", [[1.3, -0.7], (1.3, -0.7)])
def test_hvp_of_a_list_or_tuple_has_its_structure(pair):
    # f = a b y: H @ ((1, 0), 0) = ((0, y), b); hvp gave None for a list or tuple
    product = derivo.hvp(product_of_pair, (pair, 0.9), (type(pair)((1.0, 0.0)), 0.0))
    assert product == (type(pair)((0.0, 0.9)), -0.7)
    assert all(type(v) is float for v in product[0])


def product_of_first_rows(rows):
    return np.sum(rows[0][0] * rows[1][0])


def test_hvp_of_a_list_of_lists_of_arrays():
    # f = sum(a b): H @ (u, w) = (w, u); adding the tangents of the gradient's list
    # of lists concatenated lists (a TypeError)
    a, b = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    u, w = np.array([0.5, 1.0]), np.array([-2.0, 4.0])
    (product,) = derivo.hvp(product_of_first_rows, ([[a], [b]],), ([[u], [w]],))
    assert len(product) == 2 and len(product[0]) == 1 and len(product[1]) == 1
    np.testing.assert_allclose(product[0][0], w, rtol=1e-12)
    np.testing.assert_allclose(product[1][0], u, rtol=1e-12)


def test_forward_over_the_scalar_gradient_of_a_list_gives_floats():
    # the gradient's code calls derivo's helpers (zeros_for); they made its tangent
    # array code, whose items were 0-d arrays
    gradient = derivo.grad(product_of_pair, wrt=(0, 1))
    _, (tangent_xs, tangent_y) = derivo.jvp(gradient, ([1.3, -0.7], 0.9), ([1.0, 0.0], 0.0))
    assert tangent_xs == [0.0, 0.9] and [type(v) for v in tangent_xs] == [float, float]
    assert tangent_y == -0.7


def sum_of_squared_products(x, y):
    s = x * y
    return sum(s * s)


def test_forward_mode_over_a_gradient_called_with_arrays_uses_its_array_code():
    # plain Python code called with arrays: jvp of its gradient ran the scalar
    # gradient, which does not sum over what y was broadcast to
    x = np.array([1.0, 2.0])
    gradient = derivo.grad(sum_of_squared_products, wrt=(0, 1))
    (gx, gy), (tx, ty) = derivo.jvp(gradient, (x, 3.0), (np.zeros(2), 1.0))
    # f = y^2 sum(x^2): df/dy = 2 y sum(x^2), d/dy of that = 2 sum(x^2)
    assert gy == 30.0 and ty == 10.0
    np.testing.assert_allclose(gx, 2 * 9.0 * x)
    np.testing.assert_allclose(tx, 4 * 3.0 * x)  # d/dy (2 y^2 x) = 4 y x
    # reverse over its array code runs on the array code, one tangent pass per component
    (bx, by) = derivo.vjp(derivo.grad(sum_of_squared_products, wrt=1), x, 3.0)[1](1.0)
    np.testing.assert_allclose(bx, 4 * 3.0 * x)   # d/dx (2 y sum(x^2)) = 4 y x
    assert by == 2 * 5.0                          # d/dy (2 y sum(x^2)) = 2 sum(x^2)


def unpacks_in_a_loop(x, y):
    p = [x, y]
    s = 0.0
    for i in range(3):
        a, b = p
        p = [b, a * 1.1]
        s = s + a * b
    return s  # 3.31 x y


def test_hessian_of_unpacking_in_a_loop():
    # the tangent pass zeroed the list pushed before the loop, still None there:
    # [0.0] * len(None)
    rows = derivo.hessian(unpacks_in_a_loop, wrt=(0, 1))(1.3, -0.7)
    np.testing.assert_allclose(rows, [[0.0, 3.31], [3.31, 0.0]], atol=1e-12)


def squares_of_rows(rows, y):
    s = 0.0
    for row in rows:
        for v in row:
            s = s + v * v * y
    return s * s


def test_jvp_of_a_gradient_of_a_list_of_lists_has_its_structure():
    # the tangent of the gradient of a list of lists came back as an object array
    gradient = derivo.grad(squares_of_rows, wrt=(0, 1))
    primals, tangents = ([[1.3, -0.7], [0.4]], 0.9), ([[0.3, 0.2], [-0.1]], 0.5)
    (g_rows, g_y), (t_rows, t_y) = derivo.jvp(gradient, primals, tangents)
    assert type(t_rows) is list and [type(r) for r in t_rows] == [list, list]
    expected, _ = derivo.hvp(squares_of_rows, primals, tangents)
    np.testing.assert_allclose(t_rows[0], expected[0])
    np.testing.assert_allclose(t_rows[1], expected[1])
    # and the product agrees with a central difference of the gradient
    h = 1e-6
    up = derivo.grad(squares_of_rows, wrt=0)([[1.3 + 0.3 * h, -0.7 + 0.2 * h], [0.4 - 0.1 * h]],
                                              0.9 + 0.5 * h)
    down = derivo.grad(squares_of_rows, wrt=0)([[1.3 - 0.3 * h, -0.7 - 0.2 * h],
                                                [0.4 + 0.1 * h]], 0.9 - 0.5 * h)
    np.testing.assert_allclose(t_rows[0], (np.array(up[0]) - down[0]) / (2 * h), rtol=1e-6)


gradient_in_y = derivo.grad(sum_of_squared_products, wrt=1)


def calls_a_gradient(x, y):
    return gradient_in_y(x, y) * y  # 2 y^2 sum(x^2)


def test_a_gradient_called_with_arrays_inside_a_function_runs_its_array_code():
    # the caller's array code inlined the gradient's scalar code: jvp's value and
    # tangent did not sum over x; grad said the function returned an array
    x = np.array([1.0, 2.0])
    assert derivo.jvp(calls_a_gradient, (x, 3.0), (np.zeros(2), 1.0)) == (90.0, 60.0)
    assert derivo.grad(calls_a_gradient, wrt=1)(x, 3.0) == 60.0   # 4 y sum(x^2)


STIFFNESS = 2.0


def stiff_cubic(x):
    return STIFFNESS * x ** 3


def test_a_held_second_derivative_reads_a_global_rebound_after_it_was_made(monkeypatch):
    second = derivo.grad(derivo.grad(stiff_cubic))
    assert second(0.7) == pytest.approx(6 * 2.0 * 0.7)
    monkeypatch.setitem(globals(), "STIFFNESS", 5.0)
    assert second(0.7) == pytest.approx(6 * 5.0 * 0.7)
