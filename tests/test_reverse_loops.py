"""How loops are reversed: ``loops="stack"`` (default) and ``loops="reversible"``."""

import itertools
import math
import tracemalloc

import numpy as np
import pytest

import derivo
from examples.bessel import besselj
from examples.pendulum import simulate


def geometric(x, n):
    s = 1.0
    total = 0.0
    for _ in range(n):
        s *= x
        s /= 1.5
        total += s
        total -= 0.25 * x
    return total


@pytest.mark.parametrize("v", [0, 1, 2, 3])
@pytest.mark.parametrize("z", [0.5, 1.0, 3.0, 10.0])
def test_reversible_bessel_matches_the_stack(v, z):
    stack = derivo.grad(besselj, wrt="z")(v, z)
    reversible = derivo.grad(besselj, wrt="z", loops="reversible")(v, z)
    assert reversible == pytest.approx(stack, rel=1e-10, abs=1e-14)


def test_reversible_loop_uses_no_stack():
    source = derivo.grad(besselj, wrt="z", loops="reversible").source
    assert "push" not in source and "pop" not in source
    assert "s = undo_s.back(s, -1 / k / (k + v) * t1)" in source  # s *= c, undone


@pytest.mark.parametrize("x,n", [(0.7, 5), (1.3, 12), (0.9, 0)])
def test_reversible_counted_loop(x, n):
    stack = derivo.grad(geometric)(x, n)
    reversible = derivo.grad(geometric, loops="reversible")(x, n)
    assert reversible == pytest.approx(stack, rel=1e-10)
    h = 1e-6
    assert stack == pytest.approx((geometric(x + h, n) - geometric(x - h, n)) / (2 * h),
                                  rel=1e-6)


def test_reversible_memory_does_not_grow_with_the_trip_count():
    # at x = 0.5 the steps undo exactly but for about a hundred of the 80000
    # (s /= 1.5 rounds, s underflows): those are saved
    gradient = derivo.grad(geometric, loops="reversible")
    peaks = []
    for n in (100, 20000):
        tracemalloc.start()
        gradient(0.5, n)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    stack = derivo.grad(geometric)
    tracemalloc.start()
    stack(0.5, 20000)
    stack_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peaks[1] < peaks[0] + 30000
    assert stack_peak > 20 * 20000  # the stack does grow: a float per step at least


def test_an_update_that_cannot_be_undone_is_refused_with_its_line():
    with pytest.raises(derivo.UnsupportedSyntax) as info:
        derivo.grad(simulate, wrt=("damping", "theta0"), loops="reversible")
    message = str(info.value)
    assert "loops='reversible' cannot undo line" in message
    assert "use loops='stack'" in message


def test_unknown_strategy_is_refused():
    with pytest.raises(derivo.DerivoError, match="loops='tape'"):
        derivo.grad(besselj, wrt="z", loops="tape")


def test_strategies_are_separate_cache_entries():
    stack = derivo.grad(besselj, wrt="z")
    reversible = derivo.grad(besselj, wrt="z", loops="reversible")
    assert stack.source != reversible.source
    assert math.isclose(stack(2, 1.0), reversible(2, 1.0), rel_tol=1e-12)


def halving_with_break(x, tol):
    s = x * x
    k = 0
    while s > tol:  # s tends to 0.2 x: the break ends it when tol is below that
        k += 1
        if k > 6:
            break
        s = s * 0.5 + 0.1 * x
    return s * k


def halving_step_after_break(x, tol):
    s = x * x
    k = 0
    while s > tol and k < 8:
        if s > 100.0:
            break
        k += 1
        s = s * 0.5 + 0.1 * x
    return s * k


@pytest.mark.parametrize("f", [halving_with_break, halving_step_after_break])
@pytest.mark.parametrize("x", [0.3, 2.5, 11.0])
def test_loop_counted_by_an_integer_step(f, x):
    h = 1e-6
    expected = (f(x + h, 0.05) - f(x - h, 0.05)) / (2 * h)
    assert derivo.grad(f)(x, 0.05) == pytest.approx(expected, rel=1e-6, abs=1e-9)


def test_an_integer_step_before_any_jump_replaces_the_trip_counter():
    counted = derivo.grad(halving_with_break).source
    assert "while k != k0:" in counted and "n1" not in counted
    # A break before the step may end an iteration that never counted: keep a counter.
    assert "for _ in range(n1):" in derivo.grad(halving_step_after_break).source


# --- a loop variable the body assigns too ------------------------------------------------

def target_reassigned_over_constants(x0, x1):
    v0 = x0
    for w in [0.15, 0.125]:
        w = math.tanh(w + x1)
        v0 = v0 / (2.0 + math.cos(w))
    return v0


def target_reassigned_over_a_range(x, n):
    s = 1.0
    for i in range(n):
        i = 0.5 * i + 1.0   # the reverse sweep must read this i, not the next item
        s = s * x * i
    return s


def target_reassigned_in_a_nested_loop(x0, x1):
    v0 = x0
    for w in [0.15, 0.125]:
        for u in [x0 * x1, 0.0 * w]:
            w = math.tanh(u * w + x1)
            if w <= x0:
                break
        v0 = v0 / (2.0 + math.cos(w))
    return v0


@pytest.mark.parametrize("f, args, wrt", [
    (target_reassigned_over_constants, (0.8, 1.03), (0, 1)),
    (target_reassigned_over_a_range, (0.7, 4), 0),
    (target_reassigned_in_a_nested_loop, (0.8, 1.03), (0, 1)),
    (target_reassigned_in_a_nested_loop, (0.3, -0.4), (0, 1)),
])
def test_a_loop_variable_the_body_reassigns(f, args, wrt):
    # it used to be given the next item again by the reverse sweep's loop: a silently
    # wrong gradient, found by the fuzzer's loops over values
    gradient = derivo.grad(f, wrt=wrt)(*args)
    gradient = gradient if isinstance(gradient, tuple) else (gradient,)
    for index, got in zip(wrt if isinstance(wrt, tuple) else (wrt,), gradient):
        shifted = [list(args), list(args)]
        shifted[0][index] += 1e-6
        shifted[1][index] -= 1e-6
        expected = (f(*shifted[0]) - f(*shifted[1])) / 2e-6
        assert got == pytest.approx(expected, rel=1e-6, abs=1e-9)


# --- loops over differentiated values ------------------------------------------------

def sines_of_items(xs):
    s = 0.0
    for x in xs:
        s = s + math.sin(x) * x
    return s


def item_read_after_its_loop(xs, c):
    s = c
    for _ in range(2):
        for x in xs:
            s = s + math.sin(x * s)
        s = s * x  # the last item: the next outer trip's reverse must not see xs[0]
    return s


def scaled_by_items(xs, c):
    s = c
    for x in xs:
        s *= 1.0 + x * x
    return s


def list_gradient(f, xs, *rest, h=1e-6):
    out = []
    for j in range(len(xs)):
        up, down = list(xs), list(xs)
        up[j] += h
        down[j] -= h
        out.append((f(up, *rest) - f(down, *rest)) / (2 * h))
    return out


def assert_matches_differences(f, args, grads):
    """Each gradient in ``grads`` (one per argument of ``f``, a float or a list of
    floats) equals central differences."""
    for k, (g, value) in enumerate(zip(grads, args)):
        def moved(v, k=k):
            return f(*args[:k], v, *args[k + 1:])
        if isinstance(value, list):
            assert g == pytest.approx(list_gradient(moved, value), rel=1e-6, abs=1e-9)
        else:
            h = 1e-6
            assert g == pytest.approx((moved(value + h) - moved(value - h)) / (2 * h), rel=1e-6)


def test_the_reverse_loop_reads_each_item_again_instead_of_saving_it():
    df = derivo.grad(sines_of_items)
    assert "push" not in df.source and "pass" not in df.source  # nor a primal loop left
    reverse_loop = df.source.split("for i in reversed(range(len(xs))):\n")[1]
    assert reverse_loop.lstrip().startswith("x = xs[i]\n")
    xs = [0.3, -0.7, 1.1, 2.5]
    assert df(xs) == pytest.approx([x * math.cos(x) + math.sin(x) for x in xs], rel=1e-12)


def test_an_item_an_adjoint_reads_after_its_loop_is_still_saved():
    df = derivo.grad(item_read_after_its_loop, wrt=(0, 1))
    assert "push(x)" in df.source
    xs, c = [0.3, -0.7, 1.1], 0.8
    gx, gc = df(xs, c)
    assert gx == pytest.approx(list_gradient(item_read_after_its_loop, xs, c), rel=1e-7)
    h = 1e-6
    assert gc == pytest.approx((item_read_after_its_loop(xs, c + h) -
                                item_read_after_its_loop(xs, c - h)) / (2 * h), rel=1e-7)


def items_by_index(xs, c):
    s = c
    for i in range(len(xs)):
        t = xs[i]
        s = s * math.cos(t) + t
    return s


def previous_trips_item(xs, c):
    s = c
    t = c
    for i in range(len(xs)):
        s = s * math.sin(t)  # the previous trip's t: it cannot be read again
        t = xs[i]
        s = s + t * t
    return s


def item_at_a_moving_index(xs, c):
    s = c
    k = 0
    for i in range(len(xs) - 1):
        t = xs[k]
        k = k + 1
        s = s * math.cos(t) + xs[i + 1]
    return s


def last_of_a_growing_list(xs, c):
    ys = [c]
    s = 0.0
    for i in range(len(xs)):
        t = ys[-1]
        ys.append(t * xs[i])
        s = s + math.sin(t)
    return s


def items_overwritten_in_the_loop(x, c):
    y = x * c
    s = 0.0
    for i in range(len(x)):
        t = y[i]
        y[i] = t * t
        s = s + t * y[i]
    return s


def test_an_item_read_by_index_is_read_again_instead_of_saved():
    df = derivo.grad(items_by_index, wrt=(0, 1))
    assert "push(t)" not in df.source
    assert df.source.split("for i in reversed(")[1].split("\n")[1].strip() == "t = xs[i]"
    xs, c = [0.3, -0.7, 1.1, 2.5], 0.8
    gx, gc = df(xs, c)
    assert gx == pytest.approx(list_gradient(items_by_index, xs, c), rel=1e-7)


@pytest.mark.parametrize("f", [previous_trips_item, item_at_a_moving_index,
                               last_of_a_growing_list])
def test_an_item_that_would_read_differently_in_the_reverse_loop_is_saved(f):
    df = derivo.grad(f, wrt=(0, 1))
    assert "push(t)" in df.source
    xs, c = [0.3, -0.7, 1.1, 2.5], 0.8
    gx, gc = df(xs, c)
    assert gx == pytest.approx(list_gradient(f, xs, c), rel=1e-6, abs=1e-9)
    h = 1e-6
    assert gc == pytest.approx((f(xs, c + h) - f(xs, c - h)) / (2 * h), rel=1e-6)


def test_an_item_of_an_array_the_loop_writes_into_is_saved():
    df = derivo.grad(items_overwritten_in_the_loop)
    assert "push(t)" in df.source
    x, c = [0.3, -0.7, 1.1, 2.5], 0.8

    def on_array(values, c):
        return items_overwritten_in_the_loop(np.array(values), c)
    assert df(np.array(x), c) == pytest.approx(list_gradient(on_array, x, c), rel=1e-6)


def weighted_by_position(xs, c):
    s = c
    for i, x in enumerate(xs):
        s = s * math.cos(x) + i * x
    return s


def weighted_from_one(xs, c):
    s = c
    for i, x in enumerate(xs, 1):
        s = s + i * math.sin(x * s)
    return s


def index_changed_in_the_body(xs, c):
    s = c
    for i, x in enumerate(xs):
        i = i * 2
        s = s + i * x * x
    return s


def zipped_dot(xs, ys, c):
    s = c
    for x, y in zip(xs, ys):
        s = s * y + math.sin(x * y)
    return s


def zipped_three(xs, ys, zs):
    s = 0.0
    for x, y, z in zip(xs, ys, zs):
        s = s + x * y * z
    return s


def backwards_recurrence(xs, c):
    s = c
    for x in reversed(xs):
        s = s * x + math.sin(s)
    return s


@pytest.mark.parametrize("f, args", [
    (weighted_by_position, ([0.3, -0.7, 1.1], 0.8)),
    (weighted_from_one, ([0.3, -0.7, 1.1], 0.8)),
    (index_changed_in_the_body, ([0.3, -0.7, 1.1], 0.8)),
    (zipped_dot, ([0.3, -0.7, 1.1], [1.5, 0.4], 0.8)),   # zip stops at the shorter
    (zipped_three, ([0.3, -0.7], [1.5, 0.4], [2.0, -1.0])),
    (backwards_recurrence, ([0.3, -0.7, 1.1], 0.8)),
])
def test_loops_over_enumerate_zip_and_reversed(f, args):
    df = derivo.grad(f, wrt=tuple(range(len(args))))
    code = [line for line in df.source.splitlines() if not line.strip().startswith("#")]
    assert not any("enumerate(" in line or " zip(" in line for line in code)
    assert_matches_differences(f, args, df(*args))


def test_the_reverse_of_a_loop_over_reversed_walks_forwards():
    df = derivo.grad(backwards_recurrence, wrt=(0, 1))
    assert "    for i in range(len(xs)):\n" in df.source and "for i in reversed(" not in df.source
    args = ([0.3, -0.7, 1.1], 0.8)
    assert_matches_differences(backwards_recurrence, args, df(*args))


def user_counts_down(xs, c):
    s = c
    for i in range(len(xs) - 1, -1, -1):
        s = s * xs[i] + math.sin(s)
    return s


def user_counts_down_from_the_last_but_one(xs, c):
    s = c
    for i in range(len(xs) - 2, -1, -1):
        s = s * xs[i] + math.sin(s)
    return s


@pytest.mark.parametrize("f", [user_counts_down, user_counts_down_from_the_last_but_one])
def test_a_loop_counting_down_is_walked_up_by_its_reverse(f):
    df = derivo.grad(f, wrt=(0, 1))
    args = ([0.3, -0.7, 1.1], 0.8)
    assert_matches_differences(f, args, df(*args))


def over_dict_values(d, c):
    s = 0.0
    for i, v in enumerate(d.values()):
        s = s + v * c * i
    return s


def over_a_map(xs, c):
    s = c
    for a, b in zip(map(math.sin, xs), xs):
        s = s * a + b * c
    return s


@pytest.mark.parametrize("f, args", [
    (over_dict_values, ({"a": 1.0, "b": 2.0, "c": -0.5}, 0.7)),
    (over_a_map, ([0.3, -0.7, 1.1], 0.8)),
])
def test_a_loop_over_an_iterator_of_constants_is_reversed_over_a_list_of_it(f, args):
    # The reverse loop indexes what the loop iterated; d.values() and map(...) cannot
    # be indexed (this raised TypeError from inside the generated code).
    dc = derivo.grad(f, wrt=1)(*args)
    h = 1e-6
    assert dc == pytest.approx((f(args[0], args[1] + h) - f(args[0], args[1] - h)) / (2 * h),
                               rel=1e-7)


def over_an_endless_count(xs, c):
    s = 0.0
    for i, x in zip(itertools.count(), xs):
        s = s + x * c * i
    return s


def over_an_iterator_read_again(ws, c):
    it = map(float, ws)
    s = 0.0
    for i, w in enumerate(it):
        s = s + w * c
        if i == 0:
            break
    return s + sum(it) * c


def test_an_iterator_read_again_is_not_made_a_list():
    # a list of it would take what sum reads after the loop
    with pytest.raises(TypeError):
        derivo.value_and_grad(over_an_iterator_read_again, wrt=1)([1.0, 2.0, 3.0], 0.7)


def test_a_zip_of_an_endless_count_is_made_a_list_of_pairs():
    # a list of the count never ends, a list of the zip does
    value, gradient = derivo.value_and_grad(over_an_endless_count, wrt=1)([1.0, 2.0], 0.5)
    assert (value, gradient) == (pytest.approx(1.0), pytest.approx(2.0))


def counted_over_reversed(x, c):
    s = c
    for _ in reversed(x):  # its items are not differentiated, its body is
        s = s * c + 1.0
    return s


def named_pairs(xs, ys):
    pairs = zip(xs, ys)
    s = 0.0
    for x, y in pairs:
        s = s + x * y
    return s


def test_iterators_whose_items_are_not_differentiated_are_indexed_too():
    # the reverse loop cannot run a reversed(...) or zip(...) iterator backwards
    dc = derivo.grad(counted_over_reversed, wrt=1)(np.zeros(3), 0.5)
    assert dc == pytest.approx(4 * 0.5 ** 3 + 2 * 0.5 + 1)  # s = c^4 + c^2 + c + 1
    np.testing.assert_allclose(derivo.grad(named_pairs, wrt=(0, 1))([0.1, 0.5], [2.0, 3.0]),
                               ([2.0, 3.0], [0.1, 0.5]), rtol=1e-14)


def writes_what_it_enumerates(x, c):
    y = x * c
    s = 0.0
    for i, v in enumerate(y):
        y[i] = v * v
        s = s + y[i]
    return s


def test_a_loop_that_changes_what_it_enumerates_is_refused():
    with pytest.raises(derivo.DerivoError, match=r"test_reverse_loops.py:\d+:\d+: .*"
                                                 r"enumerate.*changes 'y'"):
        derivo.grad(writes_what_it_enumerates)(np.array([0.5, 1.5]), 2.0)


def test_a_reversible_loop_over_zip():
    df = derivo.grad(zipped_three, wrt=(0, 1, 2), loops="reversible")
    assert "push" not in df.source
    xs, ys, zs = [0.3, -0.7], [1.5, 0.4], [2.0, -1.0]
    np.testing.assert_allclose(
        df(xs, ys, zs), ([y * z for y, z in zip(ys, zs)], [x * z for x, z in zip(xs, zs)],
                         [x * y for x, y in zip(xs, ys)]), rtol=1e-12)


def rows_weighted(X, w):
    s = 0.0
    for row, weight in zip(X, w):
        s = s + np.sum(np.tanh(row)) * weight
    return s


def test_zip_over_the_rows_of_an_array_in_both_modes():
    X, w = np.linspace(-1.0, 1.0, 6).reshape(2, 3), np.array([1.0, 2.0])
    gX, gw = derivo.grad(rows_weighted, wrt=(0, 1))(X, w)
    np.testing.assert_allclose(gX, (1 - np.tanh(X) ** 2) * w[:, None], rtol=1e-12)
    np.testing.assert_allclose(gw, np.tanh(X).sum(axis=1), rtol=1e-12)
    tX, tw = np.ones_like(X), np.array([0.5, -1.0])
    _, tangent = derivo.jvp(rows_weighted, (X, w), (tX, tw))
    assert tangent == pytest.approx(np.sum(gX * tX) + np.sum(gw * tw), rel=1e-12)


def test_a_reversible_loop_over_values():
    # the row was saved like any overwritten value, which loops="reversible" refused
    df = derivo.grad(scaled_by_items, wrt=(0, 1), loops="reversible")
    assert "push" not in df.source
    xs, c = [0.3, -0.7, 1.1], 2.0
    gx, gc = df(xs, c)
    product = math.prod(1.0 + x * x for x in xs)
    assert gc == pytest.approx(product, rel=1e-12)
    assert gx == pytest.approx([c * product * 2 * x / (1.0 + x * x) for x in xs], rel=1e-12)


def neighbours_while(x, c):
    s = c
    i = 1
    while i < x.shape[0]:
        s = s + np.tanh(x[i] * x[i - 1]) * x[0]
        i = i + 1
    return s


def test_a_reversible_loop_of_array_code_recomputes_its_temporaries():
    # array code kept x[i], x[i - 1], ... in temporaries that each trip overwrote and
    # nothing gave back: the reverse sweep read the last trip's (a silently wrong
    # gradient, found by review)
    x, c = np.array([0.5, -1.2, 0.9, 0.3]), 0.7
    stack = derivo.grad(neighbours_while, wrt=(0, 1))(x, c)
    reversible = derivo.grad(neighbours_while, wrt=(0, 1), loops="reversible")
    assert "push" not in reversible.source
    bx, bc = reversible(x, c)
    np.testing.assert_allclose(bx, stack[0], rtol=1e-12)
    assert bc == stack[1] == 1.0
    h = 1e-6
    expected = [(neighbours_while(x + h * e, c) - neighbours_while(x - h * e, c)) / (2 * h)
                for e in np.eye(4)]
    np.testing.assert_allclose(bx, expected, rtol=1e-7)


def squared_row_sums(X):
    s = 0.0
    for row in X:
        s = s + sum(row) ** 2
    return s


def rows_through_another_name(X, c):
    s = 0.0
    for i in range(len(X)):
        row = X[i]
        other = row
        s = s + other[0] * other[1] * c
    return s


def written_after_a_loop_over_it(x, c):
    y = x * 1.0
    s = 0.0
    for v in y:
        s = s + v * v
    y[0] = s       # the reverse loop must read y as the loop saw it: both writes undone
    y[1] = c
    return s + y[0] * y[1]


def test_a_list_of_lists_read_row_by_row():
    # each row's adjoint is a list: X's adjoint must add lists item by item (a review
    # found bX[i] += [...] tried on a 0.0)
    X = [[0.1, 0.2], [0.3, -0.4]]
    np.testing.assert_allclose(derivo.grad(squared_row_sums)(X), [[0.6, 0.6], [-0.2, -0.2]],
                               rtol=1e-12)
    np.testing.assert_allclose(derivo.grad(rows_through_another_name)(X, 0.7),
                               [[0.7 * 0.2, 0.7 * 0.1], [0.7 * -0.4, 0.7 * 0.3]], rtol=1e-12)


def test_items_written_after_a_loop_over_them():
    x = np.array([0.3, 0.5, 0.9])
    s = np.sum(x * x)
    # f = s + s * c with c = 0.7: d/dx = 2x (1 + c)
    np.testing.assert_allclose(derivo.grad(written_after_a_loop_over_it)(x, 0.7),
                               2 * x * 1.7, rtol=1e-12)
    assert s > 0


# --- comprehensions and generator expressions ------------------------------------------

def sum_of_squares(xs):
    return sum(x * x for x in xs)


def positive_part(xs, c):
    return sum(x * c for x in xs if x > 0.2)


def all_products(xs, ys):
    return sum(x * y for x in xs for y in ys)


def shadowed_by_the_comprehension(xs, x):
    s = sum(x * 2.0 for x in xs)
    return s * x


def sines(xs):
    ys = [math.sin(x) for x in xs]
    return ys[0] * ys[-1]


def weighted_sum(xs):
    return sum(i * x for i, x in enumerate(xs))


def double_sum(xs):
    return sum(sum(x * y for y in xs) for x in xs)


def row_norms(X):
    total = 0.0
    for row in X:
        total = total + math.sqrt(sum(v * v for v in row))
    return total


def scaled_array(xs, w):
    v = np.array([x * w for x in xs])
    return np.sum(v * v)


@pytest.mark.parametrize("f, args", [
    (sum_of_squares, ([0.5, 2.0, -1.0],)),
    (positive_part, ([0.1, 0.5, 2.0], 3.0)),
    (all_products, ([0.5, 2.0], [1.0, 3.0])),
    (shadowed_by_the_comprehension, ([0.5, 2.0], 3.0)),
    (sines, ([0.5, 2.0, 1.0],)),
    (weighted_sum, ([0.5, 2.0, 1.0],)),
    (double_sum, ([0.5, 2.0],)),
    (scaled_array, ([0.5, 2.0], 3.0)),
])
def test_comprehensions_are_differentiated_as_loops(f, args):
    assert_matches_differences(f, args, derivo.grad(f, wrt=tuple(range(len(args))))(*args))


def sum_and_last_item(xs, c):
    items = []
    for x in xs:
        items.append(x * c)
    last = items[-1]
    return sum(items) + last * 3.0


def test_each_item_of_a_sum_reads_the_sums_adjoint():
    # The adjoint of sum(items) is one value for every item: the reverse loop reads
    # it, where it popped it from a list of copies.
    df = derivo.grad(positive_part, wrt=(0, 1))
    assert "pop_adjoint" not in df.source and "bitems" not in df.source
    args = ([0.1, 0.5, 2.0], 3.0)
    assert_matches_differences(positive_part, args, df(*args))
    # items[-1] gets more than the sum's adjoint: the list of adjoints stays
    df = derivo.grad(sum_and_last_item, wrt=(0, 1))
    assert "pop_adjoint" in df.source
    args = ([0.1, 0.5, 2.0], 3.0)
    assert_matches_differences(sum_and_last_item, args, df(*args))


def test_a_generator_expression_over_rows_in_both_modes():
    X = [[0.5, 2.0], [1.0, -3.0]]
    gX = derivo.grad(row_norms)(X)
    np.testing.assert_allclose(gX, [[v / math.hypot(*row) for v in row] for row in X],
                               rtol=1e-12)
    values = np.array(X)
    _, tangent = derivo.jvp(row_norms, (values,), (np.ones_like(values),))
    assert tangent == pytest.approx(sum(map(sum, gX)), rel=1e-12)


def loop_variable_kept(x, n):
    i = x
    for i in range(n):
        pass
    return i * x


def item_kept(x, xs):
    v = x
    for v in xs:
        pass
    return v * x


@pytest.mark.parametrize("f, args, expected", [
    (loop_variable_kept, (1.3, 0), 2.6),   # no trip: i is still x
    (loop_variable_kept, (1.3, 3), 2.0),   # i is 2
    (item_kept, (1.3, []), 2.6),
    (item_kept, (1.3, [2.0]), 2.0),
])
def test_a_loop_variable_after_its_loop_in_every_mode(f, args, expected):
    # no trip raised UnboundLocalError in the generated code
    for loops in ("stack", "reversible"):
        assert derivo.grad(f, loops=loops)(*args) == pytest.approx(expected)
    assert derivo.jvp(f, args, (1.0, None))[1] == pytest.approx(expected)


def rebuilds_its_list(xs, a):
    s = 0.0
    for k in range(2):
        s = s + xs[0]
        xs = [xs[0] * a, xs[1]]
    return s


def rebuilds_it_by_comprehension(xs, a):
    s = 0.0
    for k in range(2):
        s = s + xs[0] * xs[1]
        xs = [v * a for v in xs]
    return s


@pytest.mark.parametrize("f", [rebuilds_its_list, rebuilds_it_by_comprehension])
def test_a_list_rebuilt_in_a_loop_in_both_modes(f):
    # the list's adjoint (and tangent) started as 0.0 and was indexed: TypeError
    xs, a = [0.3, 0.5], 0.8
    gx, ga = derivo.grad(f, wrt=(0, 1))(xs, a)
    assert gx == pytest.approx(list_gradient(f, xs, a), rel=1e-6, abs=1e-9)
    h = 1e-6
    slope = (f(xs, a + h) - f(xs, a - h)) / (2 * h)
    assert ga == pytest.approx(slope, rel=1e-6)
    assert derivo.jvp(f, (xs, a), (None, 1.0))[1] == pytest.approx(slope, rel=1e-6)


def test_the_hessian_with_respect_to_a_list():
    # the gradient of a list is a list: its zero was 0.0, which the tangent code indexed
    np.testing.assert_allclose(derivo.hessian(sum_of_squares)([0.3, 0.5]), 2 * np.eye(2))
    assert derivo.grad(positive_part, wrt=(0, 1))([-0.3, -0.5], 2.0) == ([0.0, 0.0], 0.0)


def sums_in_a_loop(xs, c):
    x = c  # not the comprehension's x
    s = 0.0
    for k in range(3):
        s = s + sum(x * 2.0 for x in xs) * x
        x = x * 0.9
    return s


def test_a_checkpointed_loop_holding_a_comprehension():
    # loops="checkpoint" took the comprehension's x for a variable the loop carries
    xs, c = [0.3, -0.2], 0.7
    h = 1e-6
    slope = (sums_in_a_loop(xs, c + h) - sums_in_a_loop(xs, c - h)) / (2 * h)
    for loops in ("stack", "checkpoint"):
        gx, gc = derivo.grad(sums_in_a_loop, wrt=(0, 1), loops=loops)(xs, c)
        assert gc == pytest.approx(slope, rel=1e-6)
        assert gx == pytest.approx(list_gradient(sums_in_a_loop, xs, c), rel=1e-6)


def over_reversed(xs, c):
    s = c
    for x in reversed(xs):
        s = s * x + c
    return s


def test_checkpointing_a_loop_over_an_iterator_is_refused():
    # it crashed with a TypeError: checkpoints resume a loop at a trip number
    with pytest.raises(derivo.UnsupportedSyntax, match=r"reversed\(xs\).*an iterator"):
        derivo.grad(over_reversed, wrt=1, loops="checkpoint")([0.3, 0.5], 0.8)


def a_loop_that_may_not_run_then_one_that_does(x, n):
    s = x
    for i in range(n):
        s = s * 2.0
    for i in range(2):
        s = s + x
    return s * i


def test_a_loop_variable_is_copied_only_from_a_surely_bound_value():
    # with n = 0 the copy before the second loop read an unbound i
    assert derivo.grad(a_loop_that_may_not_run_then_one_that_does)(1.5, 0) == 3.0
    assert derivo.grad(a_loop_that_may_not_run_then_one_that_does)(1.5, 2) == 6.0


def consumes_with_next(xs, c):
    return next(x for x in xs if x > 0) * c


def checks_with_all(xs, c):
    assert all(x > -10.0 for x in xs)
    return sum(x * c for x in xs)


def test_a_generator_expression_is_lowered_only_where_it_is_consumed_at_once():
    assert derivo.grad(checks_with_all, wrt=1)([0.3, 0.5], 0.8) == pytest.approx(0.8)
    with pytest.raises(derivo.UnsupportedSyntax, match="generator expression"):
        derivo.grad(consumes_with_next, wrt=1)([0.3, 0.5], 0.8)


def sorted_constants(x):
    keys = [3.0, 1.0, 2.0]
    keys.sort()  # nothing differentiated in it: harmless
    s = 0.0
    for k in keys:
        s = s + x * k * k
    return s


def comprehension_then_write(xs, a):
    ys = [x * a for x in xs]
    ys[0] = ys[1] * a
    return ys[0] + ys[1]


def test_what_review_found_refused_needlessly_is_differentiated():
    assert derivo.grad(sorted_constants)(1.5) == pytest.approx(14.0)
    assert derivo.grad(comprehension_then_write, wrt=1)([0.3, 0.5], 0.8) == \
        pytest.approx(2 * 0.5 * 0.8 + 0.5)


def polynomial_of_items_from_one(xs, c):
    s = 0.0
    for i in range(1, len(xs)):
        s = s * c + math.sin(xs[i])
    return s


def positive_items_polynomial(xs, c):
    s = 0.0
    for i in range(len(xs)):
        if xs[i] > 0:
            s = s * c + xs[i]
    return s


def items_around_the_end(xs, c):
    s = c
    for i in range(-2, 3):  # xs[-1] and xs[2] are one item
        s = s * c + xs[i]
    return s


def each_item_three_times(xs, c):
    s = 0.0
    for i in range(len(xs)):
        for _ in range(3):
            s = s * c + xs[i]
    return s


@pytest.mark.parametrize("f, stored", [
    (polynomial_of_items_from_one, True),
    (positive_items_polynomial, True),
    (items_around_the_end, False),
    (each_item_three_times, False),
])
def test_an_item_adjoint_is_stored_where_its_position_is_surely_still_zero(f, stored):
    # The reverse loop of a range that never repeats a position stores each item's
    # adjoint (bxs[i] = g) instead of adding it to the zero it surely still is.
    df = derivo.grad(f, wrt=(0, 1))
    assert ("bxs[i] = " in df.source) is stored and ("bxs[i] += " in df.source) is not stored
    args = ([0.5, -1.5, 2.0], 0.7)
    assert_matches_differences(f, args, df(*args))


def product_of_a_slice(xs, n):
    s = 1.0
    for x in xs[:n]:
        s = s * x
    return s


@pytest.mark.parametrize("loops", ["stack", "reversible"])
def test_a_loop_over_a_slice_that_never_runs(loops):
    # no adjoint reaches the slice: getitem_vjp scattered the 0.0 it got (TypeError)
    assert derivo.grad(product_of_a_slice, loops=loops)([1.0, 2.0], 0) == [0.0, 0.0]
    assert derivo.grad(product_of_a_slice, loops=loops)([1.5, 2.0, 3.0], 2) == [2.0, 1.5, 0.0]


def slice_then_item(xs, n):
    s = 0.0
    for v in xs[:n]:
        s = s + v * v
    return s + xs[0]


def test_a_loop_over_a_slice_that_never_runs_beside_another_read():
    # add_at, not getitem_vjp, scatters the slice's 0.0 here
    assert derivo.grad(slice_then_item)([1.0, 2.0, 3.0], 0) == [1.0, 0.0, 0.0]
    assert derivo.grad(slice_then_item)([1.0, 2.0, 3.0], 2) == [3.0, 4.0, 0.0]


def pair_energy(points, pairs, weights):
    total = 0.0
    for (i, j), w in zip(pairs, weights):
        total = total + w * (points[i] - points[j]) ** 2
    return total


def test_a_zip_whose_items_are_unpacked_in_nested_targets_is_walked_back_as_a_list():
    # the reverse loop could not run the zip object backwards (TypeError: not reversible)
    points = np.array([0.5, -1.0, 2.0])
    pairs, weights = [(0, 1), (1, 2), (2, 0)], [1.0, 2.0, 3.0]
    expected = np.zeros(3)
    for (i, j), w in zip(pairs, weights):
        expected[i] += 2 * w * (points[i] - points[j])
        expected[j] -= 2 * w * (points[i] - points[j])
    np.testing.assert_allclose(derivo.grad(pair_energy)(points, pairs, weights), expected,
                               rtol=1e-12)
    _, tangent = derivo.jvp(pair_energy, (points, pairs, weights),
                            (np.ones(3), None, None))
    assert tangent == pytest.approx(expected.sum(), abs=1e-12)


def rows_zipped_with_what_the_body_rebinds(x, M, c):
    Z = M * 0.5
    y = x * 1.0
    q = np.where(y > 0.5, x * c, y)  # its adjoint reads y as it was: the loop is undone
    for row, scaled in zip(M, Z):
        y[[0, 2]] = row[::2] * scaled[0]
        Z = np.tanh(M) * 0.9
    return np.sum(q * q) + np.sum(y * c)


def counted_until_a_break(x, M, c):
    y = x * 1.0
    q = np.where(y > 0.5, x * c, y)
    for k in itertools.count():
        y[k] = M[0, k] * 0.25
        if k >= 1:
            break
    return np.sum(q * q) + np.sum(y * c)


@pytest.mark.parametrize("f", [rows_zipped_with_what_the_body_rebinds, counted_until_a_break])
def test_a_loop_over_an_iterator_is_reversed_over_its_items(f):
    # zip(...) and itertools.count() can be read once, forwards: the reverse loop
    # runs over the items the forward loop took
    x, M, c = np.linspace(0.1, 0.9, 4), np.arange(12.0).reshape(3, 4) / 7, 0.7
    h = 1e-6
    central = (f(x.copy(), M, c + h) - f(x.copy(), M, c - h)) / (2 * h)
    assert derivo.grad(f, wrt=2)(x.copy(), M, c) == pytest.approx(central, rel=1e-6)


def scaled_after_a_view_is_read(x, c):
    y = x * 1.0
    head = y[::2] * c      # the adjoint reads y[::2], a view of y
    y[::-1] = y * c        # written in place: given back in the reverse
    s = 0.0
    for _ in range(3):
        s = s + np.sum(y) * 0.1
        y *= np.cos(c)     # loops="reversible" undoes it, binding y to a new array
    return s + np.sum(head * head)


@pytest.mark.parametrize("loops", ["stack", "reversible"])
def test_a_write_is_given_back_into_the_array_an_undone_update_rebound(loops):
    x, c, h = np.array([0.4537, -0.8121, 0.9473, 0.2089]), 0.6173, 1e-6
    f = scaled_after_a_view_is_read
    central = (f(x.copy(), c + h) - f(x.copy(), c - h)) / (2 * h)
    assert derivo.grad(f, wrt=1, loops=loops)(x.copy(), c) == pytest.approx(central, rel=1e-7)


def counted_along_a_zip(w, xs):
    h = 0.0
    for t, xt in zip(itertools.count(), xs):  # itertools.count() has no length
        h = np.tanh(w * h + xt * t)
    return h


def paired_items_enumerated(x, ys):
    s = 0.0
    for i, (a, b) in enumerate(zip(ys, ys[::-1])):  # nor has a zip
        s = s + x[i] * a * b * s + x[i] ** 2
    return s


def test_a_zip_or_enumerate_of_an_iterator_is_differentiated():
    xs, h = np.array([0.1, -0.3, 0.5]), 1e-6
    f = counted_along_a_zip
    central = (f(0.5 + h, xs) - f(0.5 - h, xs)) / (2 * h)
    assert derivo.grad(f)(0.5, xs) == pytest.approx(central, rel=1e-6)
    assert derivo.jvp(f, (0.5, xs), (1.0, None))[1] == pytest.approx(central, rel=1e-6)
    x, ys = np.array([0.3, 0.5, -0.2]), np.array([1.1, 0.9, 0.7])
    g = paired_items_enumerated
    for i in range(3):
        step = np.eye(3)[i] * h
        assert derivo.grad(g)(x, ys)[i] == pytest.approx(
            (g(x + step, ys) - g(x - step, ys)) / (2 * h), rel=1e-6)
