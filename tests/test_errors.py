"""Everything derivo refuses raises ``derivo.DerivoError`` pointing at the user's code.

A refusal may happen when ``derivo.grad(f)`` is called or when the result is
first called; both are accepted.  The message is one line,
``file:line:col: message``, with the file and line of the offending construct
in this file, and it names the construct.
"""

import contextlib
import copy
import functools
import heapq
import inspect
import math
import operator
import os
import random
import re
import statistics

import numpy as np
import pytest

import derivo
from derivo import DerivoError

THIS_FILE = os.path.basename(__file__)
LOCATION = re.compile(r"^(?P<file>.*?):(?P<line>\d+):(?P<col>\d+): \S")


def line_of(func, marker):
    """The line number in this file of the first line of ``func`` containing ``marker``."""
    lines, start = inspect.getsourcelines(func)
    for offset, text in enumerate(lines):
        if marker in text:
            return start + offset
    raise AssertionError(f"{marker!r} not found in the source of {func.__name__}")


def refusal(f, *args, **grad_kwargs):
    """The DerivoError raised by ``derivo.grad(f, ...)`` or by its first call."""
    with pytest.raises(DerivoError) as info:
        df = derivo.grad(f, **grad_kwargs)
        df(*args)
    return info.value


def assert_points_at(err, lines, *words):
    """``str(err)`` is ``<this file>:<one of lines>:<col>: ...`` and names the construct."""
    if isinstance(lines, int):
        lines = (lines,)
    msg = str(err)
    assert "\n" not in msg.strip(), f"message is not one line: {msg!r}"
    m = LOCATION.match(msg)
    assert m, f"message does not start with file:line:col: {msg!r}"
    assert m.group("file").endswith(THIS_FILE), msg
    assert int(m.group("line")) in lines, f"expected line {lines}, got: {msg!r}"
    assert any(f"{THIS_FILE}:{line}:" in msg for line in lines), msg
    lowered = msg.lower()
    assert any(w.lower() in lowered for w in words), f"message does not name {words}: {msg!r}"


def test_derivo_error_is_an_exception():
    assert issubclass(DerivoError, Exception)
    assert derivo.DerivoError is DerivoError


# ---------------------------------------------------------------------------
# unsupported syntax
# ---------------------------------------------------------------------------

def uses_yield(x):
    y = x * 2.0
    yield y


def test_generator():
    err = refusal(uses_yield, 1.5)
    assert_points_at(err, line_of(uses_yield, "yield y"), "yield", "generator")


async def uses_async(x):
    return x * 2.0


def test_async_def():
    err = refusal(uses_async, 1.5)
    assert_points_at(err, line_of(uses_async, "async def"), "async")


G = 0.0


def uses_global(x):
    global G; G = x * 2.0  # noqa: E702  (both on one line: either may be reported)
    return G * x


def test_global_assignment():
    err = refusal(uses_global, 1.5)
    assert_points_at(err, line_of(uses_global, "global G"), "global")


def make_nonlocal():
    c = 1.0

    def uses_nonlocal(x):
        nonlocal c; c = x * 2.0  # noqa: E702
        return c * x

    return uses_nonlocal


def test_nonlocal_assignment():
    f = make_nonlocal()
    err = refusal(f, 1.5)
    assert_points_at(err, line_of(f, "nonlocal c"), "nonlocal")


def uses_try(x):
    try:
        y = x * 2.0
    except ValueError:
        y = x
    return y


def test_try_follows_the_path_taken():
    assert derivo.grad(uses_try)(1.5) == 2.0


def leaves_with_early(x):
    for i in range(3):
        with contextlib.nullcontext():
            if x > i:
                break
            x = x * 2.0
    return x


def test_a_with_block_left_early():
    err = refusal(leaves_with_early, 1.5)
    assert_points_at(err, line_of(leaves_with_early, "break"), "with", "__exit__")


def uses_eval(x):
    return eval("x * 2.0")


def test_eval():
    err = refusal(uses_eval, 1.5)
    assert_points_at(err, line_of(uses_eval, 'eval("'), "eval")


def uses_exec(x):
    y = x * 2.0
    exec("y = y * x")
    return y


def test_exec():
    err = refusal(uses_exec, 1.5)
    assert_points_at(err, line_of(uses_exec, 'exec("'), "exec")


# ---------------------------------------------------------------------------
# calls derivo has no derivative for
# ---------------------------------------------------------------------------

def uses_remainder(x):
    y = x * 2.0
    return math.remainder(y, 0.7)


def test_no_rule_python_library_function():
    err = refusal(uses_remainder, 1.5)
    assert_points_at(err, line_of(uses_remainder, "math.remainder"), "remainder")


def uses_operator_mul(x):
    y = x + 1.0
    return operator.mul(y, x)


def test_no_rule_c_function():
    err = refusal(uses_operator_mul, 1.5)
    assert_points_at(err, line_of(uses_operator_mul, "operator.mul"), "mul")


QUADRATIC = np.poly1d([1.0, 2.0, 3.0])


def uses_a_poly1d(x):
    return QUADRATIC(x) * x


def sums_through_a_local_module(x):
    mod = np
    return mod.sum(mod.exp(x))


def test_a_module_called_through_a_local_name_is_refused():
    # mod.sum(v) was taken for the method sum of mod, holding v constant: a zero gradient
    err = refusal(sums_through_a_local_module, np.array([0.1, 0.2]))
    assert_points_at(err, line_of(sums_through_a_local_module, "mod.sum("), "np.sum")
    assert "'mod.sum(mod.exp(x))'" in str(err)  # the expression, not ssa's mod.sum(t1)


def test_no_rule_unhashable_callable():
    # np.poly1d cannot be hashed: looking it up among the rules was a TypeError
    err = refusal(uses_a_poly1d, 1.5)
    assert_points_at(err, line_of(uses_a_poly1d, "QUADRATIC(x)"), "QUADRATIC")


# ---------------------------------------------------------------------------
# no source, bad wrt
# ---------------------------------------------------------------------------

def test_builtin_has_no_source():
    with pytest.raises(DerivoError) as info:   # math.sin has a rule, so it differentiates
        derivo.grad(np.ldexp)(1.0, 2)
    assert "source" in str(info.value).lower()


def test_function_made_by_exec_has_no_source():
    namespace = {}
    exec("def made_by_exec(x):\n    return x * x\n", namespace)
    with pytest.raises(DerivoError) as info:
        derivo.grad(namespace["made_by_exec"])(1.5)
    assert "source" in str(info.value).lower()


def two_args(x, y):
    return x * y


def test_wrt_names_no_argument():
    with pytest.raises(DerivoError) as info:
        derivo.grad(two_args, wrt="nope")(1.0, 2.0)
    assert "nope" in str(info.value)


@pytest.mark.parametrize("wrt", [2, 5, (0, 2), (0, "nope")])
def test_wrt_out_of_range(wrt):
    with pytest.raises(DerivoError):
        derivo.grad(two_args, wrt=wrt)(1.0, 2.0)


def test_error_does_not_poison_later_transforms():
    refusal(leaves_with_early, 1.5)
    assert derivo.grad(two_args)(1.0, 2.0) == pytest.approx(2.0)


# --- bad values: the derivative of a non-real argument means nothing --------------

def scaled(x, y=2.0):
    return x * y + 3.0 * x


@pytest.mark.parametrize("value", ["a", None, True, 1 + 2j, b"x", {"x": 1.0},
                                   np.array(["a"]), np.array([1j]), np.array([True]),
                                   [1.0, "a"], [1.0, True], (2.0, 1j), [np.float64(1.0), True]])
def test_a_non_real_argument_is_refused(value):
    with pytest.raises(DerivoError, match=r"scaled: cannot differentiate with respect to "
                                          r"x=.*derivo differentiates real numbers"):
        derivo.grad(scaled)(value)


def test_a_non_real_keyword_argument_is_refused():
    with pytest.raises(DerivoError, match="with respect to y='b'"):
        derivo.grad(scaled, wrt="y")(1.0, y="b")
    assert derivo.grad(scaled, wrt="y")(1.5) == 1.5  # the default is not checked


@pytest.mark.parametrize("value", [2.0, np.float32(2.0), np.float64(2.0)])
def test_real_scalars_of_every_kind_are_accepted(value):
    assert derivo.grad(scaled)(value) == pytest.approx(5.0)


@pytest.mark.parametrize("value", [2, np.int64(2)])
def test_integer_scalars_are_refused(value):
    with pytest.raises(DerivoError, match=r"which holds integers.*float\(x\)"):
        derivo.grad(scaled)(value)


def test_an_integer_array_is_refused():
    def total(x):
        return np.sum(x * x)

    with pytest.raises(DerivoError, match=r"x.astype\(float\)"):
        derivo.grad(total)(np.array([1, 2]))


# --- NaN and infinities propagate as in the function itself ------------------------

def polynomial(x):
    return x * x + 3.0 * x


def exponential(x):
    return math.exp(x) * 0.5


def rational(x):
    return 1.0 / (1.0 + x * x)


def hyperbolic(x):
    return math.tanh(x) + math.atan(x)


def halving(x):
    s = x
    k = 0
    while abs(s) > 1e-3 and k < 50:
        s = s * 0.5
        k += 1
    return s


def square_root(x):
    return math.sqrt(x)


NAN, INF = math.nan, math.inf
# (function, x, the derivative IEEE arithmetic gives there): the chain rule evaluated
# at x, as a hand-written derivative would evaluate it
NON_FINITE = [
    (polynomial, NAN, NAN), (polynomial, INF, INF), (polynomial, -INF, -INF),   # 2x + 3
    (exponential, NAN, NAN), (exponential, INF, INF), (exponential, -INF, 0.0),  # e^x / 2
    # -2x / (1 + x^2)^2 tends to 0, but its factors at x = inf are 0 and inf: nan
    (rational, NAN, NAN), (rational, INF, NAN), (rational, -INF, NAN),
    (hyperbolic, NAN, NAN), (hyperbolic, INF, 0.0), (hyperbolic, -INF, 0.0),
    # the loop halves s 50 times from an infinity, and not at all from a nan
    (halving, NAN, 1.0), (halving, INF, 0.5 ** 50), (halving, -INF, 0.5 ** 50),
    (square_root, NAN, NAN), (square_root, INF, 0.0),                            # 1 / (2 sqrt x)
]


@pytest.mark.parametrize("func, x, expected", NON_FINITE,
                         ids=["{}({})".format(f.__name__, x) for f, x, _ in NON_FINITE])
def test_nan_and_infinite_inputs_give_what_the_chain_rule_gives(func, x, expected):
    reverse = derivo.grad(func)(x)
    _, forward = derivo.jvp(func, (x,), (1.0,))
    for derivative in (reverse, forward):
        assert isinstance(derivative, float)
        assert derivative == expected or math.isnan(derivative) and math.isnan(expected)


def test_a_derivative_where_the_function_is_undefined_raises_like_it():
    with pytest.raises(ValueError):
        square_root(-INF)
    with pytest.raises(ValueError):
        derivo.grad(square_root)(-INF)


# --- + and * of lists: Python joins and repeats them --------------------------------

def joins_written_lists(a, b):
    z = [a, b] + [b * 2.0]
    return z[0] * z[2] + z[1]


def repeats_a_written_list(a, b):
    z = [a, b] * 2
    return z[0] * z[3]


def joins_written_tuples(a, b):
    z = (a, b) + (a * b,)
    return z[2] + z[0]


def extends_an_appended_list(a, b):
    z = []
    z.append(a)
    z = z + [b]
    return z[0] * z[1]


@pytest.mark.parametrize("f, marker", [
    (joins_written_lists, "z = [a, b] + [b * 2.0]"),
    (repeats_a_written_list, "z = [a, b] * 2"),
    (joins_written_tuples, "z = (a, b) + (a * b,)"),
    (extends_an_appended_list, "z = z + [b]"),
])
def test_joining_or_repeating_a_list_the_function_builds_is_refused(f, marker):
    err = refusal(f, 0.5, 2.0, wrt=(0, 1))
    assert_points_at(err, line_of(f, marker), "list or a tuple")


def joins_its_arguments(xs, ys):
    zs = xs + ys
    return sum(zs)


def doubles_its_argument(xs):
    return sum(xs * 2)


def joins_rows(X):
    s = 0.0
    for i in range(len(X) - 1):
        pair = X[i] + X[i + 1]
        s = s + pair[0] * pair[-1]
    return s


def joined_by_a_helper(xs, ys):
    return xs + ys


def joins_through_a_helper(xs):
    total = 0.0
    for z in joined_by_a_helper(xs, xs):
        total = total + z * z
    return total


@pytest.mark.parametrize("f, args, marker", [
    (joins_its_arguments, ([0.1, 0.2], [0.3]), "zs = xs + ys"),
    (doubles_its_argument, ((0.1, 0.2),), "return sum(xs * 2)"),
    (joins_rows, ([[1.0, 2.0], [0.5, -1.0]],), "pair = X[i] + X[i + 1]"),
    (joins_through_a_helper, ([0.1, 0.2],), "return xs + ys"),
])
def test_joining_or_repeating_lists_passed_in_is_refused_when_called(f, args, marker):
    err = refusal(f, *args, wrt=tuple(range(len(args))))
    source = joined_by_a_helper if f is joins_through_a_helper else f
    assert_points_at(err, line_of(source, marker), "list or a tuple")


def adds_neighbours(X):
    s = 0.0
    for i in range(len(X) - 1):
        s = s + (X[i] + X[i + 1]) * X[i]
    return s


def test_the_same_operations_on_numbers_and_arrays_are_differentiated():
    # the items of a flat list are numbers, and + of arrays adds them
    g = derivo.grad(adds_neighbours)([1.0, 2.0, 0.5])
    # s = (X0 + X1) X0 + (X1 + X2) X1
    assert g == pytest.approx([2 * 1.0 + 2.0, 1.0 + 2 * 2.0 + 0.5, 2.0])
    assert "list or a tuple" in str(refusal(adds_neighbours, [[1.0], [2.0], [0.5]]))
    xs, ys = np.array([0.1, 0.2]), np.array([0.3, 0.5])
    gx, gy = derivo.grad(joins_its_arguments, wrt=(0, 1))(xs, ys)
    assert gx == pytest.approx([1.0, 1.0]) and gy == pytest.approx([1.0, 1.0])


def shifted_by_a_written_list(x):
    return np.sum((x + [1.0, 2.0]) ** 2)


def test_an_array_plus_a_constant_list_is_differentiated():
    x = np.array([0.5, -1.0])
    assert derivo.grad(shifted_by_a_written_list)(x) == pytest.approx(2 * (x + [1.0, 2.0]))


# --- values derivo cannot follow: dicts, sets, changes in place ---------------------

def through_a_dict_display(a, b):
    d = {"x": a, "y": b}
    return d["x"] * d["y"]


def through_a_set(a, b):
    s = {a, b}
    return max(s)


def a_dict_for_the_record(a, b):
    record = {"a": a}  # reaches no result: harmless
    assert record["a"] == a
    return a * b


@pytest.mark.parametrize("f, marker, kind", [
    (through_a_set, "s = {a, b}", "set"),
])
def test_a_set_of_differentiated_values_is_refused_in_both_modes(f, marker, kind):
    # it used to give a zero derivative
    assert_points_at(refusal(f, 0.5, 2.0, wrt=(0, 1)), line_of(f, marker), kind)
    with pytest.raises(DerivoError, match=kind):
        derivo.jvp(f, (0.5, 2.0), (1.0, 0.0))


def test_a_dict_of_differentiated_values_is_differentiated_in_both_modes():
    assert derivo.grad(through_a_dict_display, wrt=(0, 1))(0.5, 2.0) == \
        pytest.approx((2.0, 0.5))
    assert derivo.jvp(through_a_dict_display, (0.5, 2.0), (1.0, 0.0))[1] == pytest.approx(2.0)


def test_a_dict_that_reaches_no_result_is_fine():
    assert derivo.grad(a_dict_for_the_record, wrt=(0, 1))(0.5, 2.0) == pytest.approx((2.0, 0.5))


def extends(a, b):
    xs = [1.0]
    xs.extend([a, b])
    return xs[1] * xs[2]


def fills(a, b):
    x = np.zeros(2)
    x.fill(a)
    return np.sum(x) * b


def sorts(a, b):
    xs = [b, a]
    xs.sort()
    return xs[0] * 2.0 + xs[1]


def copies_into(a, b):
    x = np.zeros(2)
    np.copyto(x, np.array([a, b]))
    return x[0] * x[1]


def shuffles(a, b):
    x = np.array([a, b])
    np.random.shuffle(x)
    return x[0] * b


def copies_into_by_keyword(a, b):
    x = np.zeros(2)
    np.copyto(dst=x, src=np.array([a, b]))
    return x[0] * x[1]


def writes_out_by_position(a, b):
    x = np.array([a, b])
    np.multiply(x, b, x)
    return np.sum(x * x)


def writes_out_tuple(a, b):
    x = np.array([a, b])
    np.multiply(x, b, out=(x,))
    return np.sum(x * x)


def puts_along_axis(a, b):
    x = np.array([a, b])
    np.put_along_axis(x, np.array([0]), a * b, axis=0)
    return np.sum(x * x)


def shuffles_with_a_generator(a, b):
    x = np.array([a, 2.0 * b])
    np.random.default_rng(0).shuffle(x)
    return x[0] * 3.0 + x[1]


def shuffles_a_list(a, b):
    xs = [a, 2.0 * b]
    random.shuffle(xs)
    return xs[0] * 3.0 + xs[1]


def adds_at_with_a_local_ufunc(a, b, op=np.add):
    x = np.array([a, b])
    op.at(x, [0], a)
    return np.sum(x * x)


def copies_into_a_view(a, b):
    x = np.array([a, b])
    np.copyto(x[:1], a * b)
    return np.sum(x * x)


def writes_out_into_a_view(a, b):
    x = np.array([a, b, 3.0])
    np.sin(x[:2], x[:2])
    return np.sum(x)


def writes_out(a, b):
    x = np.zeros(2)
    np.multiply(np.array([a, a]), b, out=x)
    return np.sum(x)


def adds_at(a, b):
    x = np.zeros(2)
    np.add.at(x, [0, 0], a)
    return x[0] * b


def pops(a, b):
    xs = [a, b, a * b]
    xs.pop()
    return xs[0] * xs[-1]


def reverses_unbound(a, b):
    xs = [a, 2.0 * b]
    list.reverse(xs)
    return xs[0] * 3.0 + xs[1]


def fills_unbound(a, b):
    x = np.array([a, b])
    np.ndarray.fill(x, a * b)
    return np.sum(x * x)


def sums_out_by_position(a, b):
    x = np.array([a, b])
    np.cumsum(x * a, 0, None, x)
    return np.sum(x * x)


def sets_an_item_by_operator(a, b):
    xs = [a, b]
    operator.setitem(xs, 0, b)
    return xs[0] * xs[1]


def heapifies(a, b):
    xs = [2.0 * b, a]
    heapq.heapify(xs)
    return xs[0] * 3.0 + xs[1]


def copies_into_another_name(a, b):
    x = np.array([a, b])
    y = x
    np.copyto(y, np.array([b, b]))
    return np.sum(x * a)


def reverses_another_name(a, b):
    xs = [a, 2.0 * b]
    ys = xs
    ys.reverse()
    return xs[0] * 3.0 + xs[1]


@pytest.mark.parametrize("f, marker", [
    (extends, "xs.extend([a, b])"), (fills, "x.fill(a)"), (sorts, "xs.sort()"),
    (reverses_unbound, "list.reverse(xs)"), (fills_unbound, "np.ndarray.fill(x, a * b)"),
    (sums_out_by_position, "np.cumsum(x * a, 0, None, x)"),
    (sets_an_item_by_operator, "operator.setitem(xs, 0, b)"),
    (heapifies, "heapq.heapify(xs)"),
    (copies_into_another_name, "np.copyto(y, np.array([b, b]))"),
    (reverses_another_name, "ys.reverse()"),
    (copies_into, "np.copyto(x, np.array([a, b]))"), (shuffles, "np.random.shuffle(x)"),
    (copies_into_by_keyword, "np.copyto(dst=x, src=np.array([a, b]))"),
    (writes_out_by_position, "np.multiply(x, b, x)"),
    (writes_out_tuple, "np.multiply(x, b, out=(x,))"),
    (puts_along_axis, "np.put_along_axis(x, np.array([0]), a * b, axis=0)"),
    (shuffles_with_a_generator, "np.random.default_rng(0).shuffle(x)"),
    (shuffles_a_list, "random.shuffle(xs)"),
    (adds_at_with_a_local_ufunc, "op.at(x, [0], a)"),
    (copies_into_a_view, "np.copyto(x[:1], a * b)"),
    (writes_out_into_a_view, "np.sin(x[:2], x[:2])"),
    (writes_out, "np.multiply(np.array([a, a]), b, out=x)"),
    (adds_at, "np.add.at(x, [0, 0], a)"), (pops, "xs.pop()"),
])
def test_a_change_in_place_derivo_cannot_follow_is_refused(f, marker):
    # each gave a silently wrong (mostly zero) derivative, pops an IndexError
    assert_points_at(refusal(f, 0.5, 2.0, wrt=(0, 1)), line_of(f, marker), "in place")


def set_first(y, v):
    y[0] = v


def add_to(xs, v):
    xs.append(v)


def increment(v):
    v += 1.0
    return v


def changed_by_a_helper(x):
    y = x.copy()
    set_first(y, 5.0)
    return np.sum(y * y)


def appended_by_a_helper(x):
    xs = [x]
    add_to(xs, x * x)
    return sum(xs)


def shuffle_in_place(y):
    np.random.shuffle(y)


def square_in_place(y):
    np.multiply(y, y, out=y)


def shuffled_by_a_helper(x):
    y = x * 1.0
    shuffle_in_place(y)
    return np.sum(y * np.arange(3.0))


def squared_by_a_helper(x):
    y = x * 1.0
    square_in_place(y)
    return np.sum(y)


def set_both(first, second):
    first[0] = 1.0
    second[0] = 2.0


def second_changed_by_a_helper(x):
    constants, ys = np.zeros(2), np.array([x * x, 3.0])
    set_both(constants, ys)  # only the second is differentiated
    return np.sum(ys) * x


def copy_through_another_name(v, c):
    w = v
    np.copyto(w, c)


def set_first_items(rows):
    for row in rows:
        row[0] = 0.0


def copied_into_by_a_helper(x):
    y = x * 2.0
    copy_through_another_name(y, x * 3.0)
    return np.sum(y * y)


def rows_changed_by_a_helper(x):
    y = x * 2.0
    set_first_items(y)
    return np.sum(y * y)


def incremented_by_a_helper(x):
    y = x * 1.0
    z = increment(y)
    return np.sum(y * z)


@pytest.mark.parametrize("f, args, marker", [
    (changed_by_a_helper, (np.array([1.0, 2.0, 3.0]),), "set_first(y, 5.0)"),
    (appended_by_a_helper, (1.3,), "add_to(xs, x * x)"),
    (incremented_by_a_helper, (np.array([1.0, 2.0]),), "z = increment(y)"),
    (shuffled_by_a_helper, (np.array([1.0, 2.0, 3.0]),), "shuffle_in_place(y)"),
    (squared_by_a_helper, (np.array([1.0, 2.0, 3.0]),), "square_in_place(y)"),
    (second_changed_by_a_helper, (2.0,), "set_both(constants, ys)"),
    (copied_into_by_a_helper, (np.array([1.0, 2.0]),), "copy_through_another_name(y, x * 3.0)"),
    (rows_changed_by_a_helper, (np.ones((2, 2)),), "set_first_items(y)"),
])
def test_a_helper_that_changes_its_argument_in_place_is_refused(f, args, marker):
    # each gave a silently wrong gradient: derivo did not follow the change
    assert_points_at(refusal(f, *args), line_of(f, marker), "in place")


def scalar_step(s, x):
    s += x * 0.5  # a float: rebinding, not a change in place
    return s


def steps(a, b):
    return scalar_step(a, b) * a


def test_a_helper_updating_a_float_parameter_is_differentiated():
    assert derivo.grad(steps, wrt=(0, 1))(0.5, 2.0) == pytest.approx((2 * 0.5 + 1.0, 0.25))


# Changes in place through something other than a plain name: each gave a silently
# wrong gradient (found by review)

def fills_a_slice(x):
    a = x * 2.0
    a[1:].fill(1.0)
    return np.sum(a * x)


def fills_a_list_item(x):
    a = x * 2.0
    ys = [a]
    ys[0].fill(1.0)
    return np.sum(a * x)


def sorts_in_an_expression(x):
    a = x * 2.0
    r = a.sort()
    return np.sum(a * np.arange(3.0))


def fills_rows_in_a_comprehension(x):
    a = np.outer(x, x)
    done = [row.fill(1.0) for row in a]
    return np.sum(a * a)


def sums_into_out_by_position(x):
    a = x * 2.0
    c = x * 3.0
    c.cumsum(0, None, a)
    return np.sum(a * x)


def accumulates_into_out(x):
    a = x * 2.0
    np.add.accumulate(x * x, 0, None, a)
    return np.sum(a * x)


def updates_a_reshaped_view(x):
    a = x * 2.0
    b = a.reshape(3, 1)
    b += 1.0
    return np.sum(a * x)


def updates_a_copy_of_a_copy(x):
    a = x * 2.0
    b = a
    c = b
    c += 1.0
    return np.sum(a * x)


def updates_the_base_of_a_view(x):
    a = x * 2.0
    b = a[1:]
    a += 1.0
    return np.sum(b * x[1:])


def writes_into_a_flipped_view(x):
    a = x * 2.0
    b = np.flip(a)
    b[0] = 5.0
    return np.sum(a * x)


def through_a_dict(v):
    d = {"k": v}
    d["k"][0] = 5.0


def through_a_walrus(v):
    if (w := v) is not None:
        w.fill(1.0)


def through_or(xs):
    ys = xs or [0.0]
    ys.reverse()


def deletes_first(xs):
    del xs[0]


def changed_through_a_dict(x):
    a = x * 2.0
    through_a_dict(a)
    return np.sum(a * x)


def changed_through_a_walrus(x):
    a = x * 2.0
    through_a_walrus(a)
    return np.sum(a * x)


def changed_through_or(x):
    xs = [x[0] * 2.0, x[1]]
    through_or(xs)
    return xs[0] * 3.0 + xs[1]


def first_deleted_by_a_helper(x):
    xs = [x[0] * 2.0, x[1], x[2]]
    deletes_first(xs)
    return xs[0] * 3.0 + xs[1]


def halve_each(params):
    for p in params:
        p *= 0.5


def items_changed_by_a_helper(x):
    W = x * 1.0
    ps = [W]
    halve_each(ps)
    return np.sum(W * W)


def fills_an_astype_without_copy(x):
    z = x * 1.0
    y = z.astype(np.float64, copy=False)
    y.fill(2.0)
    return np.sum(z * z)


def updates_a_view_read_earlier_in_the_loop(x):
    z = x * 1.0
    t = 0.0
    for _ in range(2):
        t = t + np.sum(z * z)
        y = z[1:]
        y += 1.0
    return t


def momentum_step(w, m, g):
    m += g
    return w - 0.1 * m


def momentum_in_a_loop(x):
    m = np.zeros_like(x)
    for _ in range(3):
        x = momentum_step(x, m, x * x)  # m, changed, is read on the next trip
    return np.sum(x)


def doubles_its_rows(x):
    X = np.outer(x, x)
    s = 0.0
    for row in X:
        row *= 2.0
        s += np.sum(row * row)
    return s + np.sum(X ** 3)


def same_array(a):
    return a


def updates_what_a_helper_returned(x):
    u = x * 1.0
    new = same_array(u)  # u itself
    new += 1.0
    return np.sum(u * u)


def updates_a_new_array_viewed_first(x):
    new = np.tanh(x)
    tail = new[1:]
    new += 1.0
    return np.sum(tail * tail)


def fill_the_first(*vs):
    vs[0].fill(1.0)


def filled_through_varargs(x):
    a = x * 2.0
    fill_the_first(a)
    return np.sum(a * x)


def fill(a):
    a.fill(1.0)


def apply_to(fn, a):
    fn(a)


def filled_by_a_function_given_as_argument(x):
    a = x * 2.0
    apply_to(fill, a)
    return np.sum(a * x)


def filled_by_a_function_kept_by_a_caller(x, fn=fill):
    a = x * 2.0
    fn(a)
    return np.sum(a * x)


class Filler:
    def go(self, a):
        a.fill(1.0)

    def __call__(self, a):
        a.fill(2.0)


FILLER = Filler()
FILL_LATER = functools.partial(fill)


def filled_by_a_method(x):
    a = x * 2.0
    FILLER.go(a)
    return np.sum(a * x)


def filled_by_a_callable_object(x):
    a = x * 2.0
    FILLER(a)
    return np.sum(a * x)


def filled_by_a_partial(x):
    a = x * 2.0
    FILL_LATER(a)
    return np.sum(a * x)


def same_after_a_loop(a):
    r = a
    for _ in range(2):
        r = a
    return r


def updates_what_a_helper_with_a_loop_returned(x):
    a = x * 2.0
    y = same_after_a_loop(a)  # not differentiated, so not inlined: a call
    y += 1.0
    return np.sum(a * x)


def updates_a_matrix_transpose(x):
    a = np.reshape(x * 2.0, (1, 3))
    b = np.matrix_transpose(a)
    b += 1.0
    return np.sum(a) * np.sum(x)


class Sub(Filler):
    def go_too(self, a):
        super().go(a)

    def same(self, v):
        return v


class Normalizer:
    def __init__(self, v):
        v /= np.sum(v)


SUB = Sub()
GO_LATER = functools.partial(FILLER.go)
FILLS = [fill]


def fill_key(a):
    a.fill(1.0)
    return 0


def fill_row(r):
    r[:] = 1.0
    return 0.0


def filled_by_a_local_object(x):
    a = x * 2.0
    obj = Filler()
    obj.go(a)
    return np.sum(a * x)


def filled_through_super(x):
    a = x * 2.0
    SUB.go_too(a)
    return np.sum(a * x)


def filled_by_a_partial_of_a_method(x):
    a = x * 2.0
    GO_LATER(a)
    return np.sum(a * x)


def normalized_by_a_constructor(x):
    a = x * 2.0 + 3.0
    Normalizer(a)
    return np.sum(a * x)


def updates_what_a_method_returned(x):
    a = x * 2.0
    y = SUB.same(a)
    y += 1.0
    return np.sum(a * x)


def filled_by_a_function_from_a_list(x):
    a = x * 2.0
    FILLS[0](a)
    return np.sum(a * x)


def filled_through_getattr(x):
    a = x * 2.0
    getattr(np.ndarray, "fill")(a, 1.0)
    return np.sum(a * x)


def filled_through_map(x):
    a = x * 2.0
    list(map(fill, [a]))
    return np.sum(a * x)


def filled_by_a_sort_key(x):
    a = x * 2.0
    sorted([a], key=fill_key)
    return np.sum(a * x)


def filled_along_an_axis(x):
    a = np.reshape(x * 2.0, (1, 3))
    np.apply_along_axis(fill_row, 1, a)
    return np.sum(a * x)


def copied_into_through_a_module_parameter(x, xp=np):
    a = x * 2.0
    xp.copyto(a, x)
    return np.sum(a * x)


def updates_an_item_of_a_list(x):
    a = x * 2.0
    ys = [a, x]
    y = ys[0]
    y += 1.0
    return np.sum(a * x)


def updates_an_array_made_without_a_copy(x):
    a = x * 2.0
    y = np.array(a, copy=None)
    y += 1.0
    return np.sum(a * x)


def updates_a_checked_array(x):
    a = x * 2.0
    y = np.asarray_chkfinite(a)
    y += 1.0
    return np.sum(a * x)


def updates_a_conjugate(x):
    a = x * 2.0
    y = a.conj()
    y += 1.0
    return np.sum(a * x)


def writes_the_real_part(x):
    a = x * 2.0
    y = np.real(a)
    y[0] = 1.0
    return np.sum(a * x)


def writes_the_real_attribute(x):
    a = x * 2.0
    y = a.real
    y *= 3.0
    return np.sum(a * x)


def updates_the_larger(x):
    a = x * 2.0
    y = max(a, x, key=np.sum)
    y += 1.0
    return np.sum(a * x)


def grown_through_a_name_for_append(x):
    hs = []
    push = hs.append
    push(x * 2.0)
    return np.sum(hs[0] * x) + len(hs)


def filled_through_a_name_for_fill(x):
    a = x * 2.0
    fill_a = a.fill
    fill_a(1.0)
    return np.sum(a * x)


def updated_while_the_next_trip_reads_it(x):
    a = x * 2.0
    s = 0.0
    for _ in range(3):
        n = a  # each trip assigns n first, but from a, which the update changes
        s = s + np.sum(n * x)
        y = a
        y += 1.0
    return s


def updated_while_the_loop_test_reads_it(x):
    a = x * 2.0
    n = a
    k = 0
    while np.sum(n) < 20.0 and k < 3:  # reads n before each trip
        n = a
        y = n
        y += 10.0
        k += 1
    return k * np.sum(x * x)


class Stepper:
    def step(self, a):
        a *= 3.0
        return 0


def stepped_by_a_parameter_object(x, opt=Stepper()):
    a = x * 2.0
    unused = opt.step(a)  # a method derivo does not know: its result is no matter
    return np.sum(a * x)


def stepped_in_an_expression(x, opt=Stepper()):
    a = x * 2.0
    opt.step(a) or 0
    return np.sum(a * x)


def updated_then_read_on_its_line(x):
    y = x * 2.0
    s = 0.0
    for _ in range(3):
        n = y; y += 1.0; s = s + np.sum(n * x)  # noqa: E702  (n is y, read after)
    return s


def updated_then_counted(x):
    n = np.zeros(1) + 2.0
    m = n
    m += 1.0  # changes n, and so the number of trips below
    s = 0.0
    for _ in range(int(n[0])):
        s = s + np.sum(x * x)
    return s


def updated_with_two_other_names(x):
    b = x * 0.0 + 1.0
    a = b
    y = b
    y += 1.0  # a, read later, is not read by the result; b is
    unused = np.sum(a)
    return np.sum(b * x)


def updated_while_a_list_holds_it(x):
    a = x * 2.0
    held = [a]
    y = a
    s = 0.0
    for _ in range(3):
        s = s + np.sum(held[0] * x)
        y += 1.0
    return s


def updated_while_looping_over_it(x):
    y = x * 2.0
    s = 0.0
    for n in [y, y, y]:
        s = s + np.sum(n * x)
        y += 1.0
    return s


@pytest.mark.parametrize("f, marker, word", [
    (updates_what_a_helper_returned, "new += 1.0", "updated in place"),
    (updated_while_a_list_holds_it, "y += 1.0", "updated in place"),
    (updated_while_looping_over_it, "y += 1.0", "updated in place"),
    (stepped_by_a_parameter_object, "opt.step(a)", "in place"),
    (stepped_in_an_expression, "opt.step(a) or 0", "in place"),
    (updated_then_read_on_its_line, "y += 1.0", "updated in place"),
    (updated_then_counted, "m += 1.0", "updated in place"),
    (updated_with_two_other_names, "y += 1.0", "updated in place"),
    (updated_while_the_next_trip_reads_it, "y += 1.0", "updated in place"),
    (updated_while_the_loop_test_reads_it, "y += 10.0", "updated in place"),
    (grown_through_a_name_for_append, "push(x * 2.0)", "in place"),
    (filled_through_a_name_for_fill, "fill_a(1.0)", "in place"),
    (filled_by_a_local_object, "obj.go(a)", "in place"),
    (filled_through_super, "SUB.go_too(a)", "in place"),
    (filled_by_a_partial_of_a_method, "GO_LATER(a)", "in place"),
    (normalized_by_a_constructor, "Normalizer(a)", "in place"),
    (updates_what_a_method_returned, "y += 1.0", "updated in place"),
    (filled_by_a_function_from_a_list, "FILLS[0](a)", "in place"),
    (filled_through_getattr, "getattr(np.ndarray", "in place"),
    (filled_through_map, "map(fill, [a])", "in place"),
    (filled_by_a_sort_key, "sorted([a], key=fill_key)", "in place"),
    (filled_along_an_axis, "np.apply_along_axis", "in place"),
    (copied_into_through_a_module_parameter, "xp.copyto(a, x)", "in place"),
    (updates_an_item_of_a_list, "y += 1.0", "updated in place"),
    (updates_an_array_made_without_a_copy, "y += 1.0", "updated in place"),
    (updates_a_checked_array, "y += 1.0", "updated in place"),
    (updates_a_conjugate, "y += 1.0", "updated in place"),
    (writes_the_real_part, "y = np.real(a)", "sharing memory"),
    (writes_the_real_attribute, "y *= 3.0", "updated in place"),
    (updates_the_larger, "y += 1.0", "updated in place"),
    (filled_through_varargs, "fill_the_first(a)", "in place"),
    (filled_by_a_function_given_as_argument, "apply_to(fill, a)", "in place"),
    (filled_by_a_function_kept_by_a_caller, "fn(a)", "in place"),
    (filled_by_a_method, "FILLER.go(a)", "in place"),
    (filled_by_a_callable_object, "FILLER(a)", "in place"),
    (filled_by_a_partial, "FILL_LATER(a)", "in place"),
    (updates_what_a_helper_with_a_loop_returned, "y += 1.0", "updated in place"),
    pytest.param(updates_a_matrix_transpose, "b += 1.0", "updated in place",
                 marks=pytest.mark.skipif(not hasattr(np, "matrix_transpose"),
                                          reason="NumPy 2")),
    (updates_a_new_array_viewed_first, "new += 1.0", "updated in place"),
    (momentum_in_a_loop, "x = momentum_step(x, m, x * x)", "in place"),
    (doubles_its_rows, "row *= 2.0", "updated in place"),
    (items_changed_by_a_helper, "halve_each(ps)", "in place"),
    (fills_an_astype_without_copy, "y.fill(2.0)", "in place"),
    (updates_a_view_read_earlier_in_the_loop, "y += 1.0", "updated in place"),
    (fills_a_slice, "a[1:].fill(1.0)", "in place"),
    (fills_a_list_item, "ys[0].fill(1.0)", "in place"),
    (sorts_in_an_expression, "r = a.sort()", "in place"),
    (fills_rows_in_a_comprehension, "row.fill(1.0)", "in place"),
    (sums_into_out_by_position, "c.cumsum(0, None, a)", "in place"),
    (accumulates_into_out, "np.add.accumulate", "in place"),
    (updates_a_reshaped_view, "b += 1.0", "updated in place"),
    (updates_a_copy_of_a_copy, "c += 1.0", "updated in place"),
    (updates_the_base_of_a_view, "a += 1.0", "updated in place"),
    (writes_into_a_flipped_view, "b = np.flip(a)", "share memory"),
    (changed_through_or, "through_or(xs)", "in place"),
])
def test_a_change_through_a_view_an_item_or_another_name_is_refused(f, marker, word):
    assert_points_at(refusal(f, np.array([3.0, 1.0, 2.0])), line_of(f, marker), word)


def doubles_the_first(v):
    v[0] = 2.0 * v[0]
    return np.sum(v)


def sums_a_doubled_array(x):
    return doubles_the_first(x * 2.0) * x[0]


def exp_of_a_module_given_as_a_default(x, xp=np):
    unused = xp.exp(x)  # a ufunc called as a method: no out argument at position 0
    return 2.0 * x


def test_a_ufunc_called_through_a_parameter_is_no_change_in_place():
    assert derivo.grad(exp_of_a_module_given_as_a_default)(1.5) == 2.0


def test_a_vjp_cotangent_of_the_wrong_shape_is_not_broadcast():
    _, vjp_fn = derivo.vjp(square_sum, np.array([1.0, 2.0, 3.0]))
    (gradient,) = vjp_fn(2.0)
    np.testing.assert_allclose(gradient, [4.0, 8.0, 12.0])
    with pytest.raises(DerivoError, match=r"the cotangent must be a number, like the result"):
        vjp_fn(np.array([[1.0], [2.0]]))


def square_sum(x):
    return np.sum(x * x)


@pytest.mark.parametrize("f, helper, marker, word, advice", [
    (changed_through_a_dict, through_a_dict, 'd["k"][0] =', "assignment", "x[i] = v"),
    (changed_through_a_walrus, through_a_walrus, ":=", ":=", "a line of its own"),
    (first_deleted_by_a_helper, deletes_first, "del xs", "del", "xs = xs[1:]"),
])
def test_a_helper_changing_its_argument_in_a_way_derivo_cannot_read_is_refused_there(
        f, helper, marker, word, advice):
    # what it changes derivo cannot tell, and the construct is why
    error = refusal(f, np.array([3.0, 1.0, 2.0]))
    assert_points_at(error, line_of(helper, marker), word)
    assert advice in str(error)


def test_a_refused_change_in_place_is_told_in_the_users_words():
    # ssa gives x * 2.0 a name (t1); a Hessian's inner VJP is not split, so it
    # would recompute the helper from the array the helper changed
    with pytest.raises(DerivoError) as info:
        derivo.hessian(sums_a_doubled_array)(np.array([3.0, 1.0, 2.0]))
    error = info.value
    assert_points_at(error, line_of(sums_a_doubled_array, "doubles_the_first("), "in place")
    assert "'doubles_the_first(x * 2.0)': it may change 'x * 2.0'" in str(error)
    assert "t1" not in str(error)


def scaled_copy(v, c):
    w = np.zeros_like(v)
    w[1:] = v[1:] * c
    s = np.sin(v)
    s[0] = c
    return w + s


def writes_into_new_arrays_it_makes(x):
    y = x * 2.0
    return np.sum(scaled_copy(y, 3.0) * y)


def test_a_helper_writing_into_arrays_it_made_is_differentiated():
    # np.zeros_like(v) and np.sin(v) share no memory with v: no refusal
    x = np.array([0.3, -1.2, 0.8])
    y = 2 * x
    expected = 2 * (6 * y + np.sin(y) + y * np.cos(y))
    expected[0] = 2 * 3.0
    np.testing.assert_allclose(derivo.grad(writes_into_new_arrays_it_makes)(x), expected,
                               rtol=1e-12)


def writes_into_its_rows(X, a):
    Y = X * 1.0
    for row in Y:
        row[0] = row[1] * a
    return np.sum(Y * Y)


def scales_its_rows(X, a):
    Y = X * 1.0
    for i, row in enumerate(Y):
        row *= a
    return np.sum(Y * Y)


def updates_what_it_iterates(x, a):
    y = x * 1.0
    s = 0.0
    for v in y:
        y += a
        s = s + v * v
    return s


@pytest.mark.parametrize("f, marker, words", [
    (writes_into_its_rows, "row[0] = row[1] * a", "loop takes"),
    (scales_its_rows, "row *= a", "loop takes"),
    (updates_what_it_iterates, "y += a", "updated in place"),
])
def test_a_loop_changing_what_it_iterates_over_is_refused_in_both_modes(f, marker, words):
    # each was silently wrong: a row is a view, and y += a changes the array being read
    X = np.array([[0.3, -0.7], [1.1, 0.5]])
    args = (X, 1.3) if f is not updates_what_it_iterates else (X[0], 1.3)
    assert_points_at(refusal(f, *args, wrt=(0, 1)), line_of(f, marker), words)
    with pytest.raises(DerivoError, match=words):
        derivo.jvp(f, args, (np.ones_like(args[0]), 1.0))


def several_values(x, y):
    return x * x * y + math.sin(x * y)


GRADIENT_OF_SEVERAL = derivo.grad(several_values, wrt=(0, 1))


def through_a_tuple_gradient(x, y):
    t = GRADIENT_OF_SEVERAL(x, y)
    return t[0] * t[1]


def product_of_items(xs):
    return xs[0] * xs[1] * xs[1]


GRADIENT_OF_ITEMS = derivo.grad(product_of_items)


def through_a_list_gradient(xs):
    gradient = GRADIENT_OF_ITEMS(xs)
    return gradient[0] + gradient[1]


def test_differentiating_through_a_derivative_of_a_list_is_refused():
    # its tangent passes took a float direction for the list: TypeError inside them
    error = refusal(through_a_list_gradient, [1.0, 2.0])
    assert_points_at(error, line_of(through_a_list_gradient, "GRADIENT_OF_ITEMS(xs)"),
                     "reads as a list or an array")


def product_of_a_pair(p):
    a, b = p
    return a * a * b


GRADIENT_OF_PAIR = derivo.grad(product_of_a_pair)


def through_a_pair_gradient(x):
    gradient = GRADIENT_OF_PAIR((x, x * x))
    return gradient[0] * gradient[1]


def product_of_a_copied_pair(p):
    q = p
    r = q
    a, b = r
    return a * a * b


GRADIENT_OF_COPIED_PAIR = derivo.grad(product_of_a_copied_pair)


def through_a_copied_pair_gradient(x):
    gradient = GRADIENT_OF_COPIED_PAIR((x, x * x))
    return gradient[0] * gradient[1]


@pytest.mark.parametrize("through, call", [
    (through_a_pair_gradient, "GRADIENT_OF_PAIR((x, x * x))"),
    (through_a_copied_pair_gradient, "GRADIENT_OF_COPIED_PAIR((x, x * x))")])
def test_differentiating_through_a_derivative_of_an_unpacked_tuple_is_refused(through, call):
    # the generated code unpacks a copy of p (seq1 = p; a = seq1[0]), or a copy of
    # a copy: TypeError in the tangent pass before
    error = refusal(through, 1.5)
    assert_points_at(error, line_of(through, call), "reads as a list or an array")


def test_differentiating_through_a_derivative_of_several_values_is_refused():
    # its vector-Jacobian product multiplied a tuple cotangent elementwise: wrong
    error = refusal(through_a_tuple_gradient, 0.7, 1.3, wrt=(0, 1))
    assert_points_at(error, line_of(through_a_tuple_gradient, "GRADIENT_OF_SEVERAL(x, y)"),
                     "returns several values")


class Scaler:
    def __init__(self, k):
        self.k = k

    def apply(self, x, y=1.0):
        return self.k * x * y

    def at(self, x):  # not np.add.at: it writes into nothing
        return x > 0.0


SCALER = Scaler(3.0)


def calls_a_method(x):
    return SCALER.apply(x) * x


def calls_a_method_on_constants(x):
    return SCALER.apply(2.0) * x if SCALER.at(x) else x


def test_a_method_of_an_object_reached_by_a_differentiated_value_is_its_function():
    # derivo once took the method for its function and passed x as self: with y's
    # default, the value and gradient were silently wrong; now the object is self
    assert derivo.grad(calls_a_method)(2.0) == 12.0  # 3 x^2
    assert derivo.grad(lambda x: Scaler.apply(SCALER, x) * x)(2.0) == 12.0


def test_a_method_of_an_object_runs_as_it_is_where_no_derivative_flows():
    assert derivo.grad(calls_a_method_on_constants)(2.0) == 6.0
    assert derivo.grad(calls_a_method_on_constants)(-2.0) == 1.0


def test_differentiating_through_what_hessian_or_jacobian_returns_is_refused():
    # functools.wraps let derivo find the wrapped function's source: it took the
    # derivative of x**3 where the code called its Hessian, 6x
    hessian_of_cube = derivo.hessian(cube)

    def scaled_curvature(x):
        return hessian_of_cube(x) * x

    assert scaled_curvature(2.0) == 24.0
    with pytest.raises(DerivoError, match="hessian_of_cube"):
        derivo.grad(scaled_curvature)(2.0)
    with pytest.raises(DerivoError, match="what derivo.hessian or derivo.jacobian returns"):
        derivo.grad(hessian_of_cube)(2.0)


def cube(x):
    return x ** 3


# Python's own functions written in Python are not read as the user's: their
# source calls what it is given (key(elem)) and handles exceptions, which read as a
# change in place or a refused construct of a file the user never wrote

def smallest_two(xs):
    s = heapq.nsmallest(2, xs)
    return s[0] * s[1]


def mean_of(xs):
    return statistics.mean(xs)


def copied_times_itself(x):
    return copy.copy(x) * x


@pytest.mark.parametrize("f, args, name", [
    (smallest_two, ([3.0, 1.0, 2.0],), "heapq.nsmallest"),
    (mean_of, ([1.0, 2.0],), "statistics.mean"),
    (copied_times_itself, (np.array([1.0, 2.0]),), "copy.copy"),
])
def test_a_standard_library_function_needs_a_rule(f, args, name):
    err = refusal(f, *args)
    assert isinstance(err, derivo.NoDerivativeRule)
    assert_points_at(err, line_of(f, name), name, "no derivative rule")


def total_of_keywords(**kw):
    return np.sum(kw["a"] * kw["b"])


def keywords_gathered(x):
    return total_of_keywords(a=x, b=x * 2.0)


def test_a_call_through_kwargs_reaches_the_keys():
    # the gradient was once silently zero: the arguments reached no parameter of that name
    x = np.array([0.3, -0.5])
    assert np.allclose(derivo.grad(keywords_gathered)(x), 4.0 * x)


def written_through_a_chosen_alias(y, z, c):
    b = y if c > 0.11 else z
    b[0] = 2.0 * c
    return np.sum(y * y) + np.sum(b)


def test_the_copy_a_refusal_suggests_is_of_the_whole_expression():
    error = refusal(written_through_a_chosen_alias, np.ones(3), np.ones(3), 0.5)
    assert_points_at(error, line_of(written_through_a_chosen_alias, "b = y if"), "copy")
    assert "b = (y if c > 0.11 else z).copy()" in str(error)


# ---------------------------------------------------------------------------
# refusals the generated code's run time makes
# ---------------------------------------------------------------------------

def written_through_a_repeated_index(x, c):
    y = x * 1.0
    y[[1, 1]] += c
    return np.sum(y * y)


def repeats_in_a_helper(y, c):
    y = y * 1.0
    y[np.array([0, 0])] += c
    return y


def calls_a_helper_that_repeats(x, c):
    return np.sum(repeats_in_a_helper(x, c) ** 2)


def an_array_result(x):
    y = x * 2.0
    return y


@pytest.mark.parametrize("kwargs", [{}, {"wrt": (0, 1)}])
def test_a_refusal_at_run_time_points_at_the_line_its_code_reverses(kwargs):
    # the repeats are seen only when the index's value is: by the generated code
    err = refusal(written_through_a_repeated_index, np.array([0.5, -0.8, 0.9]), 0.6, **kwargs)
    assert_points_at(err, line_of(written_through_a_repeated_index, "y[[1, 1]]"), "repeats")
    assert err.col == 4


def test_a_refusal_at_run_time_in_a_helper_points_into_the_helper():
    err = refusal(calls_a_helper_that_repeats, np.ones(3), 0.5, wrt=1)
    assert_points_at(err, line_of(repeats_in_a_helper, "y[np.array"), "repeats")


def test_a_refusal_of_the_result_at_run_time_points_at_the_function():
    err = refusal(an_array_result, np.ones(3))
    assert_points_at(err, line_of(an_array_result, "def "), "scalar")


def test_a_refusal_of_an_argument_names_the_function_not_a_line():
    with pytest.raises(DerivoError) as info:
        derivo.grad(an_array_result)("a string")
    assert info.value.filename is None
    assert str(info.value).startswith("an_array_result: cannot differentiate")


def eigenvalues_of_tanh(x, c):
    y = np.tanh(x * c)
    return np.sum(np.linalg.eigvalsh(np.outer(y, y)))


def test_a_refusal_of_a_second_derivative_points_at_the_users_line():
    # eigvalsh's adjoint has no derivative rule: the line of the user's that made it
    with pytest.raises(DerivoError) as info:
        derivo.hessian(eigenvalues_of_tanh, wrt=1)(np.array([0.3, 0.5]), 0.7)
    assert_points_at(info.value, line_of(eigenvalues_of_tanh, "eigvalsh"), "a second time")
    assert info.value.col == 4


def quartic_sum(x):
    return np.sum(x ** 4)


def test_a_third_derivative_of_array_code_is_refused_at_the_user_s_def():
    with pytest.raises(DerivoError, match="a third time") as refused:
        derivo.hessian(derivo.grad(quartic_sum))(np.array([1.0, 2.0]))
    error = refused.value
    assert error.filename == __file__
    assert error.lineno == quartic_sum.__code__.co_firstlineno and error.col == 0


def written_at_a_repeated_position(x, c):
    y = x * 1.0
    y[np.array([1, 1])] += c
    return np.sum(y * y) * c


def test_a_run_time_refusal_in_a_second_derivative_names_the_user_s_file():
    # the tangent code of the gradient raises: its line leads to the gradient's
    # code, whose line leads to the user's
    with pytest.raises(DerivoError, match="repeats a position") as refused:
        derivo.hessian(written_at_a_repeated_position, wrt=1)(np.array([0.5, 1.0, 2.0]), 0.3)
    code = written_at_a_repeated_position.__code__
    assert refused.value.filename == __file__
    assert code.co_firstlineno <= refused.value.lineno <= code.co_firstlineno + 2


def doubled_with_a_vjp_only(x):
    return x * 2.0


derivo.defvjp(doubled_with_a_vjp_only, lambda g, ans, x: g * 2.0)


def tanh_twice(x, n):  # a loop: its VJP comes in halves, and runs again in a Hessian
    for _ in range(n):
        x = np.tanh(x)
    return x


def through_a_looping_helper(x, c):
    return np.sum(doubled_with_a_vjp_only(tanh_twice(x * c, 2)) ** 2)


def test_a_second_derivative_through_a_helper_in_halves_is_refused_at_the_user_s_line():
    with pytest.raises(DerivoError, match="a second time") as refused:
        derivo.hessian(through_a_looping_helper, wrt=1)(np.array([1.0, 2.0]), 0.5)
    assert refused.value.filename == __file__


def _distance_twice(x, y, c0=0.0, *, c1=1.0):
    s = 0.0
    for _ in range(2):
        s += math.dist((x, y), (0.3, 0.5))
    return s * c1 + c0


def test_a_second_derivative_of_a_partial_is_refused_at_the_user_s_line():
    # the partial's derivative is made of the function's: no Derivative claims its code
    partial = functools.partial(_distance_twice, c0=-0.2, c1=0.5)
    with pytest.raises(DerivoError, match="a second time") as refused:
        derivo.hessian(partial)(0.7, 0.2)
    assert refused.value.filename == __file__


def layers_of(w):
    for i in range(0, len(w), 2):
        yield w[i], w[i + 1]  # a generator: derivo cannot read it


def predicts_through_layers(w, x):
    for a, b in layers_of(w):
        x = np.tanh(a * x + b)
    return x


def loss_through_layers(w, x):
    return np.sum(predicts_through_layers(w, x) ** 2)


def test_a_helper_derivo_cannot_read_is_refused_for_its_own_reason_at_every_depth():
    # (not "it may change 'w' in place", which is what derivo cannot tell of it)
    w = np.array([0.5, 0.1, -0.3, 0.2])
    for f in (predicts_through_layers, loss_through_layers):
        with pytest.raises(DerivoError) as refused:
            derivo.grad(f)(w, 0.7)
        assert_points_at(refused.value, line_of(layers_of, "yield"), "yield")
        assert "collect what it yields in a list" in str(refused.value)
