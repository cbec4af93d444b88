"""derivo.runtime's helpers themselves, beyond their derivative rules (tests/rules/test_runtime.py).

add_at accumulates the adjoint of a container read item by item into a new adjoint;
add_at_in_place, which generated code calls only for an accumulator it owns (see
derivo.accumulate), adds into the accumulator itself, and gives the same numbers.
"""

import dataclasses

import numpy as np
import pytest

import derivo
from derivo.runtime import (add_adjoints, add_at, add_at_in_place, add_field, add_field_in_place,
                            getitem_vjp, matmul_vjp_left, matmul_vjp_right, part, pop_adjoint,
                            pop_adjoint_in_place, unbroadcast, zeroed, zeroed_in_place)

X = np.arange(12.0).reshape(3, 4)
INDICES = [1, -1, (2, 3), slice(0, 2), (slice(None), 1), np.int64(2), np.array([0, 2, 0]),
           X > 5.0, (np.array([0, 0]), np.array([1, 1]))]


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_add_into_adds_like_a_scatter_into_zeros(index):
    adjoint = np.full(np.shape(X[index]), 0.5)
    expected = add_adjoints(np.ones(X.shape), getitem_vjp(adjoint, X, index))
    total = np.ones(X.shape)
    assert add_at_in_place(total, adjoint, X, index) is total
    np.testing.assert_array_equal(total, expected)
    kept = np.ones(X.shape)
    np.testing.assert_array_equal(add_at(kept, adjoint, X, index), expected)
    np.testing.assert_array_equal(kept, np.ones(X.shape))


def test_add_at_leaves_its_total_and_what_holds_it_as_they_are():
    base = np.ones(6)
    result = add_at(base[:3], 2.0, np.zeros(3), 0)
    np.testing.assert_array_equal(result, [3.0, 1.0, 1.0])
    np.testing.assert_array_equal(base, np.ones(6))
    shared = [0.0, 0.0]
    assert add_at(shared, 1.0, [2.0, 3.0], 0) == [1.0, 0.0] and shared == [0.0, 0.0]
    record = {"w": 1.0, "b": 0.0}
    assert add_at(record, 2.0, {"w": 1.0, "b": 2.0}, "w") == {"w": 3.0, "b": 0.0}
    assert record == {"w": 1.0, "b": 0.0}


def test_add_into_does_not_write_into_other_dtypes_or_read_only_arrays():
    total = np.ones(3, dtype=np.float32)
    result = add_at_in_place(total, 0.25, np.zeros(3), 2)
    assert result.dtype == np.float64 and total[2] == 1.0
    frozen = np.ones(3)
    frozen.flags.writeable = False
    np.testing.assert_array_equal(add_at_in_place(frozen, 1.0, np.zeros(3), 0), [2.0, 1.0, 1.0])
    np.testing.assert_array_equal(frozen, np.ones(3))


def test_add_at_starts_from_a_zero():
    for add in (add_at, add_at_in_place):
        np.testing.assert_array_equal(add(0.0, 2.0, np.zeros(3), 1), [0.0, 2.0, 0.0])
        assert add(0.0, 2.0, [1.0, 2.0, 3.0], -1) == [0.0, 0.0, 2.0]


def test_add_into_lists_and_dicts():
    total = [0.0, 1.0, np.ones(2)]
    before = total
    total = add_at_in_place(total, 2.0, [5.0, 6.0, np.zeros(2)], 1)
    total = add_at_in_place(total, np.full(2, 3.0), [5.0, 6.0, np.zeros(2)], np.int64(2))
    total = add_at_in_place(total, [1.0, 1.0], [5.0, 6.0, np.zeros(2)], slice(0, 2))
    assert total is before and total[:2] == [1.0, 4.0]
    np.testing.assert_array_equal(total[2], [4.0, 4.0])
    record = {"w": 1.0, "b": 0.0}
    assert add_at_in_place(record, 2.0, {"w": 1.0, "b": 2.0}, "w") is record and record["w"] == 3.0


@dataclasses.dataclass
class Layer:
    w: float
    b: float


def test_add_field_into_adds_into_the_dict_add_field_copies():
    record = {"w": 1.0, "b": 0.0}
    assert add_field(record, 2.0, Layer(1.0, 2.0), "b") == {"w": 1.0, "b": 2.0}
    assert record == {"w": 1.0, "b": 0.0}
    assert add_field_in_place(record, 2.0, Layer(1.0, 2.0), "b") is record and record["b"] == 2.0


def rows(X, w):
    s = 0.0
    for i in range(X.shape[0]):
        s = s + np.tanh(X[i] @ w)
    return s


def items(xs):
    s = 0.0
    for x in xs:
        s = s + x * x * xs[0]
    return s


def shuffled(X, order, w):
    s = 0.0
    for k in range(len(order)):
        s = s + np.tanh(X[order[k]] @ w)
    return s


def test_a_loop_reading_items_adds_into_one_accumulator():
    """The reverse sweep adds each item's adjoint into one array or list (linear in
    the trip count), where add_adjoints(b, getitem_vjp(...)) made a new one on every
    trip: with ``bX[i] += g`` when i surely counts a range, else with add_at_in_place."""
    df = derivo.grad(rows, wrt=(0, 1))
    assert "bX[i] += " in df.source and "add_at" not in df.source
    rng = np.random.default_rng(5)
    X, w = rng.normal(size=(6, 3)), rng.normal(size=3)
    bX, bw = df(X, w)
    sech2 = 1.0 / np.cosh(X @ w) ** 2
    np.testing.assert_allclose(bX, np.outer(sech2, w), rtol=1e-12)
    np.testing.assert_allclose(bw, sech2 @ X, rtol=1e-12)

    order = [2, 0, 2, 5]  # X[2] twice
    df = derivo.grad(shuffled, wrt=(0, 2))
    assert "bX = add_at_in_place(bX, " in df.source
    bX, bw = df(X, order, w)
    rows_read = X[order]
    sech2 = 1.0 / np.cosh(rows_read @ w) ** 2
    expected = np.zeros_like(X)
    np.add.at(expected, order, np.outer(sech2, w))
    np.testing.assert_allclose(bX, expected, rtol=1e-12)
    np.testing.assert_allclose(bw, sech2 @ rows_read, rtol=1e-12)

    xs = [0.5, -1.5, 2.0, 0.25]
    gradient = derivo.grad(items)(xs)
    squares = sum(x * x for x in xs)
    expected = [2 * x * xs[0] for x in xs]
    expected[0] += squares
    np.testing.assert_allclose(gradient, expected, rtol=1e-12)


def test_zero_at_sets_in_place_what_zeroed_copies():
    total = np.ones(4)
    assert zeroed_in_place(total, 1) is total
    np.testing.assert_array_equal(total, [1.0, 0.0, 1.0, 1.0])
    result = zeroed(total, 2)
    np.testing.assert_array_equal(result, [1.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(total, [1.0, 0.0, 1.0, 1.0])
    ints = np.ones(2, dtype=int)
    np.testing.assert_array_equal(zeroed_in_place(ints, 0), [0.0, 1.0])
    assert ints[0] == 1
    rows = [np.ones(2), np.full(2, 2.0)]  # a list of adjoints becomes their array
    for zero in (zeroed, zeroed_in_place):
        np.testing.assert_array_equal(zero(rows, 0), [[0.0, 0.0], [2.0, 2.0]])
        assert zero(0.0, 3) == 0.0
    pairs = [(1.0, 2.0), 0.0, (3.0, 4.0)]  # a pair's adjoint and a zero: no array holds them
    assert zeroed(pairs, 0) == [0.0, 0.0, (3.0, 4.0)] and pairs[0] == (1.0, 2.0)
    assert zeroed(pairs, slice(1, None)) == [(1.0, 2.0), 0.0, 0.0]
    np.testing.assert_array_equal(zeroed([1.0, 2.0, 3.0], slice(0, 2)), [0.0, 0.0, 3.0])
    assert part([1.0, 2.0], 1) == 2.0 and part(0.0, 5) == 0.0


def squares_written(xs):
    ys = [0.0] * len(xs)
    for i in range(len(xs)):
        ys[i] = xs[i] * xs[i]
    s = 0.0
    for y in ys:
        s = s + y * xs[0]
    return s


def test_a_loop_writing_items_keeps_one_adjoint():
    xs = [0.5, -1.5, 2.0]
    expected = [2 * x * xs[0] for x in xs]
    expected[0] += sum(x * x for x in xs)
    np.testing.assert_allclose(derivo.grad(squares_written)(xs), expected, rtol=1e-12)


def stacked_after_a_read(X):
    s = X[1, 0] * X[0, 1]
    return s + np.sum(np.stack(X) ** 2)


def stacked_after_a_write(X, v):
    Y = np.tanh(X)
    Y[0] = v * Y[1]
    return np.sum(np.stack(Y) ** 2)


def test_an_array_whose_adjoint_is_a_list_of_rows():
    """np.stack gives its argument a list of adjoints, one per row: add_at and
    zeroed must not treat it as the adjoint of a list (a review found both)."""
    X = np.array([[0.5, -1.0], [1.5, 0.3]])
    np.testing.assert_allclose(np.array(derivo.grad(stacked_after_a_read)(X)),
                               2 * X + [[0.0, X[1, 0]], [X[0, 1], 0.0]], rtol=1e-12)
    bX, bv = derivo.grad(stacked_after_a_write, wrt=(0, 1))(X, 0.7)
    T = np.tanh(X)
    # the sum is (v**2 + 1) * sum(tanh(X[1])**2)
    np.testing.assert_allclose(bX, [[0.0, 0.0], 2 * (0.7 ** 2 + 1) * T[1] * (1 - T[1] ** 2)],
                               rtol=1e-12)
    np.testing.assert_allclose(bv, np.sum(2 * 0.7 * T[1] ** 2), rtol=1e-12)


def test_pop_adjoint_in_place_pops_the_list_pop_adjoint_copies():
    adjoints = [1.0, 2.0, 3.0]
    assert pop_adjoint(adjoints) == ([1.0, 2.0], 3.0) and adjoints == [1.0, 2.0, 3.0]
    rest, last = pop_adjoint_in_place(adjoints)
    assert rest is adjoints and adjoints == [1.0, 2.0] and last == 3.0
    rows, row = pop_adjoint_in_place(np.eye(2))  # an array's rows become a list
    assert type(rows) is list and len(rows) == 1 and list(row) == [0.0, 1.0]
    assert pop_adjoint(0.0) == pop_adjoint_in_place(0.0) == (0.0, 0.0)


PRODUCTS = [((3, 4), (4, 5), (2, 3, 5)), ((1, 4), (4, 5), (3, 5)), ((3, 4), (4,), (2, 3)),
            ((4,), (4, 5), (6, 5)), ((4,), (4,), (3,)), ((2, 3, 4), (4, 5), (7, 2, 3, 5)),
            ((3, 4), (4, 1), (3, 6))]


@pytest.mark.parametrize("a_shape, b_shape, adjoint_shape", PRODUCTS, ids=repr)
def test_matmul_vjps_sum_an_adjoint_broadcast_from_the_product(a_shape, b_shape,
                                                                 adjoint_shape):
    # the adjoint of a product broadcast against something larger (W @ h + B)
    # arrives as the broadcast left it: the VJPs give the product's adjoint
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=a_shape), rng.normal(size=b_shape)
    adjoint = rng.normal(size=adjoint_shape)
    product = a @ b
    summed = unbroadcast(adjoint, product)
    assert np.shape(summed) == np.shape(product)
    np.testing.assert_allclose(matmul_vjp_left(adjoint, a, b), matmul_vjp_left(summed, a, b))
    np.testing.assert_allclose(matmul_vjp_right(adjoint, a, b), matmul_vjp_right(summed, a, b))
    assert np.shape(matmul_vjp_left(adjoint, a, b)) == a_shape
    assert np.shape(matmul_vjp_right(adjoint, a, b)) == b_shape
