"""Checkpointed loops end to end: ``loops="checkpoint"`` and ``derivo.checkpointed``.

Every gradient here is compared with central differences, a closed form, or the
``loops="stack"`` gradient of the same function (to 1e-10 relative: the
checkpointed sweep recomputes the same states and runs the same arithmetic).
Tests that expose a bug in derivo are marked ``xfail(strict=True)`` with the
bug in the reason (none today).
"""

import inspect
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import derivo
from derivo import checkpoints
from derivo.checkpoints import optimal_cost
from checks import assert_close, numeric_grad
from examples.bessel import besselj
from examples.oscillator import energy_after

THIS_FILE = os.path.abspath(__file__)
CHECKPOINTS = [1, 2, 3, 10, None]
SCHEDULES = ["revolve", "halving"]


# --- helpers ----------------------------------------------------------------------------

def checkpointed_grad(f, wrt=0, **options):
    return derivo.grad(f, wrt=wrt, loops="checkpoint", **options)


def assert_same(actual, expected, rel=1e-10, abs_=1e-13):
    """Scalars, arrays or tuples of them agree to ``rel`` (the same computation)."""
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), (actual, expected)
        for a, e in zip(actual, expected):
            assert_same(a, e, rel, abs_)
        return
    assert actual is not None, expected
    assert np.shape(actual) == np.shape(expected), (actual, expected)
    np.testing.assert_allclose(actual, expected, rtol=rel, atol=abs_)


def stack_and_checkpoint(f, args, wrt=0, kwargs=None, **options):
    """The checkpointed gradient, after checking it against the stack one."""
    kwargs = kwargs or {}
    got = checkpointed_grad(f, wrt, **options)(*args, **kwargs)
    assert_same(got, derivo.grad(f, wrt=wrt)(*args, **kwargs))
    return got


def numeric_array_grad(f, args, index, h=1e-6):
    """Central differences of the scalar ``f(*args)`` w.r.t. ``args[index]`` (float or
    array); ``f`` gets copies of the arrays so a function writing into them is fine."""
    def at(position, delta):
        moved = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        if position is None:
            moved[index] = moved[index] + delta
        else:
            moved[index][position] += delta
        return float(f(*moved))

    x = args[index]
    if not isinstance(x, np.ndarray):
        return (at(None, h) - at(None, -h)) / (2 * h)
    out = np.zeros(x.shape)
    for position in np.ndindex(x.shape):
        out[position] = (at(position, h) - at(position, -h)) / (2 * h)
    return out


def line_of(func, marker):
    """The line number in this file of the first line of ``func`` containing ``marker``."""
    lines, start = inspect.getsourcelines(func)
    for offset, text in enumerate(lines):
        if marker in text:
            return start + offset
    raise AssertionError("{!r} not in the source of {}".format(marker, func.__name__))


def function_source(source, name):
    """The text of generated function ``name`` in a module ``source``."""
    start = source.index("def {}(".format(name))
    end = source.find("\ndef ", start + 1)
    return source[start:] if end < 0 else source[start:end]


# --- counted loops ----------------------------------------------------------------------

def recurrence(a, b, n):
    x = a
    y = 0.5
    for i in range(n):
        x, y = math.sin(x * b) + y, math.exp(-y * y) * x + 0.1 * i
    return x * y + x


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("slots", CHECKPOINTS)
@pytest.mark.parametrize("n", [0, 1, 2, 7, 50])
def test_oscillator(n, slots, schedule):
    args = (2.0, 1.0, n, 0.05)
    got = stack_and_checkpoint(energy_after, args, ("stiffness", "x0"),
                               checkpoints=slots, schedule=schedule)
    assert_close(got, numeric_grad(energy_after, args, ("stiffness", "x0")), rtol=1e-6)
    if n == 0:  # energy = stiffness x0^2 / 2
        assert got == (0.5, 2.0)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("slots", CHECKPOINTS)
@pytest.mark.parametrize("n", [0, 1, 2, 7, 50])
def test_recurrence_with_sin_and_exp(n, slots, schedule):
    args = (0.3, 1.1, n)
    got = stack_and_checkpoint(recurrence, args, (0, 1), checkpoints=slots, schedule=schedule)
    assert_close(got, numeric_grad(recurrence, args, (0, 1)), rtol=1e-6, atol=1e-8)
    if n == 0:  # a + 0.5 a
        assert got == (1.5, 0.0)
    else:
        assert checkpoints.LAST_RUN["steps"] == n


@pytest.mark.parametrize("n", [1, 2, 5, 9, 50])
def test_default_checkpoints_keep_about_log2_states(n):
    stack_and_checkpoint(recurrence, (0.3, 1.1, n), (0, 1))
    run = checkpoints.LAST_RUN
    assert run["slots"] == max(2, (n - 1).bit_length())
    assert run["most_held"] <= run["slots"]


@pytest.mark.parametrize("n", [0, 1, 7])
def test_value_and_grad(n):
    args = (0.3, 1.1, n)
    value, gradient = derivo.value_and_grad(recurrence, wrt=(0, 1), loops="checkpoint",
                                            checkpoints=2)(*args)
    assert value == recurrence(*args)
    assert_same(gradient, derivo.grad(recurrence, wrt=(0, 1))(*args))
    value, gradient = derivo.value_and_grad(energy_after, wrt="stiffness", loops="checkpoint",
                                            checkpoints=3, schedule="halving")(2.0, 1.0, n)
    assert value == energy_after(2.0, 1.0, n)
    assert_close(gradient, numeric_grad(energy_after, (2.0, 1.0, n), "stiffness"))


def relax(x, *, rate=0.3, n=10):
    y = x
    for _ in range(n):
        y = y + rate * math.sin(y)
    return y


@pytest.mark.parametrize("kwargs", [{}, {"rate": 0.4, "n": 12}, {"n": 0}, {"rate": 0.2}])
def test_keyword_parameters(kwargs):
    got = stack_and_checkpoint(relax, (0.7,), ("x", "rate"), kwargs, checkpoints=2)
    assert_close(got, numeric_grad(relax, (0.7,), ("x", "rate"), kwargs=kwargs))


def local_invariants(x, w, n):
    c = math.exp(w)
    d = c * x
    y = x
    for i in range(n):
        y = math.sin(y) * c + d
    return y


@pytest.mark.parametrize("n", [0, 1, 6])
def test_several_parameters_through_local_invariants(n):
    args = (0.3, 0.2, n)
    got = stack_and_checkpoint(local_invariants, args, (0, 1), checkpoints=2)
    assert_close(got, numeric_grad(local_invariants, args, (0, 1)))
    single = checkpointed_grad(local_invariants, "w", checkpoints=2)(*args)
    assert_same(single, got[1])


def strided(x, n):
    y = x
    for i in range(2, n, 3):
        y = y * math.cos(0.1 * i) + 0.01 * n * y * y
    return y


def over_constants(x, coefficients):
    y = x
    for c in coefficients:
        y = y * c + math.sin(y)
    return y


def test_range_with_a_step_and_loops_over_constant_sequences():
    got = stack_and_checkpoint(strided, (0.8, 20), checkpoints=2)
    assert_close(got, numeric_grad(strided, (0.8, 20)))
    assert checkpoints.LAST_RUN["steps"] == len(range(2, 20, 3))
    for coefficients in ([0.5, 1.5, -0.3, 2.0], (0.5, 1.5, -0.3, 2.0),
                         np.array([0.5, 1.5, -0.3, 2.0])):
        got = stack_and_checkpoint(over_constants, (0.8, coefficients), checkpoints=2)
        assert_close(got, numeric_grad(over_constants, (0.8, coefficients)))


# --- while loops ------------------------------------------------------------------------

def newton_sqrt(a):
    x = a
    while abs(x * x - a) > 1e-13 * a:
        x = 0.5 * (x + a / x)
    return x


def count_up(x):
    n = 0
    y = x
    while y < 10.0:
        y = y * 1.5 + 0.1 * n
        n += 1
    return y * n


@pytest.mark.parametrize("slots", [1, 2, 3, 5, None])
@pytest.mark.parametrize("v,z,atol,trips", [
    (1, 0.0, 1e-8, 0), (2, 0.0, 1e-8, 0),    # s = 0: no trip
    (0, 0.01, 1e-4, 1),                      # one trip
    (1, 1.0, 1e-8, 5), (3, 10.0, 1e-8, 18),  # many
])
def test_bessel(v, z, atol, trips, slots):
    got = stack_and_checkpoint(besselj, (v, z, atol), "z", checkpoints=slots)
    assert checkpoints.LAST_RUN["steps"] == trips
    # d/dz J_v = (J_{v-1} - J_{v+1}) / 2, with J_{-1} = -J_1
    below = -besselj(1, z, 1e-15) if v == 0 else besselj(v - 1, z, 1e-15)
    if atol <= 1e-8:  # the series is truncated: only then is it the closed form
        assert_close(got, (below - besselj(v + 1, z, 1e-15)) / 2, rtol=1e-6, atol=1e-8)
    if z:
        assert_close(got, numeric_grad(besselj, (v, z, atol), "z"), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("slots", [1, 2, 3, None])
@pytest.mark.parametrize("a", [0.3, 2.0, 1e4])
def test_newton_iteration(a, slots):
    got = stack_and_checkpoint(newton_sqrt, (a,), checkpoints=slots)
    assert checkpoints.LAST_RUN["steps"] > 2
    assert_close(got, 0.5 / math.sqrt(a), rtol=1e-9)


@pytest.mark.parametrize("slots", [1, 2, 3, None])
@pytest.mark.parametrize("x,trips", [(0.3, 7), (2.0, 4), (7.0, 1), (12.0, 0)])
def test_while_loop_counting_with_an_int(x, trips, slots):
    got = stack_and_checkpoint(count_up, (x,), checkpoints=slots)
    assert checkpoints.LAST_RUN["steps"] == trips
    assert_close(got, numeric_grad(count_up, (x,)))


def counted_while(x, m):
    y = x
    k = 0
    while k < m:
        y = math.sin(y) + 0.1 * k
        k += 1
    return y


@pytest.mark.parametrize("slots", [
    1, 2, 3, 5])
def test_while_loop_keeps_at_most_its_slots(slots):
    for trips in (2, 3, 9, 40):
        got = stack_and_checkpoint(counted_while, (0.5, trips), checkpoints=slots)
        assert_close(got, numeric_grad(counted_while, (0.5, trips)))
        run = checkpoints.LAST_RUN
        assert run["steps"] == trips
        assert run["most_held"] <= slots, run


# --- what the body may contain ----------------------------------------------------------

def branchy(x, w, n):
    s = x
    for i in range(n):
        if s > 0.5:
            s = s * w - 0.2
        else:
            s = s + w * math.exp(-s)
    return s


@pytest.mark.parametrize("slots", [1, 3, None])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 30])
def test_if_else_in_the_body(n, slots):
    args = (0.7, 0.9, n)
    got = stack_and_checkpoint(branchy, args, (0, 1), checkpoints=slots)
    assert_close(got, numeric_grad(branchy, args, (0, 1)), rtol=1e-6, atol=1e-8)
    if n == 30:  # the trips go down both arms
        s, taken = 0.7, set()
        for _ in range(n):
            taken.add(s > 0.5)
            s = s * 0.9 - 0.2 if s > 0.5 else s + 0.9 * math.exp(-s)
        assert taken == {True, False} and s == branchy(*args)


def inner_loop(x, w, n):
    s = x
    t = 0.0
    for i in range(n):
        acc = 0.0
        for j in range(3):
            acc += math.sin(s * (j + 1)) * w
        t = t + 0.1 * acc
        s = s * 0.9 + 0.05 * acc
    return s + t * t


@pytest.mark.parametrize("n", [0, 1, 7])
def test_nested_inner_loop_stays_a_stack_loop_in_the_step(n):
    args = (0.7, 0.4, n)
    got = stack_and_checkpoint(inner_loop, args, (0, 1), checkpoints=2)
    assert_close(got, numeric_grad(inner_loop, args, (0, 1)))
    source = checkpointed_grad(inner_loop, (0, 1), checkpoints=2).source
    assert source.count("checkpointed_for(") == 1
    trips = function_source(source, "inner_loop_trips")
    assert "for j in range(3):" in trips
    vjp = function_source(source, "inner_loop_trips_vjp")
    assert "for j in reversed(range(3)):" in vjp


def helper(u, w):
    return u * math.cos(w) + 0.1 * math.sin(u)


def calls_a_helper(x, w, n):
    s = x
    for i in range(n):
        s = helper(s, w) + 0.3 * helper(w, s)
    return s


@pytest.mark.parametrize("n", [0, 1, 7])
def test_body_calls_a_user_helper(n):
    args = (0.7, 0.4, n)
    got = stack_and_checkpoint(calls_a_helper, args, (0, 1), checkpoints=3)
    assert_close(got, numeric_grad(calls_a_helper, args, (0, 1)))


def helper_with_loop(y, n):
    for i in range(n):
        y = math.sin(y) + 0.5
    return y


def calls_a_helper_with_a_loop(x, n):
    z = x * 2.0
    for k in range(3):
        z = helper_with_loop(z, n) * x
    return z


@pytest.mark.parametrize("n", [0, 1, 4])
def test_body_calls_a_helper_that_has_its_own_loop(n):
    got = stack_and_checkpoint(calls_a_helper_with_a_loop, (0.7, n), checkpoints=2)
    assert_close(got, numeric_grad(calls_a_helper_with_a_loop, (0.7, n)))


def counter_in_state(x, n):
    y = x
    k = 0
    for i in range(n):
        k += 2
        y = y + 0.01 * k * math.sin(y)
    return y * k


@pytest.mark.parametrize("n", [0, 1, 7])
def test_integer_counter_in_the_state(n):
    got = stack_and_checkpoint(counter_in_state, (0.7, n), checkpoints=2)
    assert_close(got, numeric_grad(counter_in_state, (0.7, n)))
    if n:
        trips = function_source(checkpointed_grad(counter_in_state, checkpoints=2).source,
                                "counter_in_state_trips")
        assert trips.startswith("def counter_in_state_trips(items, k, y):")  # k is state


def last_value(x, n):
    y = x
    last = 0.0
    for i in range(n):
        y = math.sin(y) + x
        last = y * y
    return last + y


@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_state_assigned_in_the_loop_and_read_after_it(n):
    got = stack_and_checkpoint(last_value, (0.7, n), checkpoints=2)
    assert_close(got, numeric_grad(last_value, (0.7, n)))
    if n == 0:
        assert got == 1.0


def carried(x, n):
    y = x
    prev = 0.0
    for i in range(n):
        y = y + 0.5 * prev
        prev = math.sin(y * x)
    return y


@pytest.mark.parametrize("slots", [1, 2, None])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 7])
def test_derivative_flows_through_a_carried_value_not_read_after_the_loop(n, slots):
    # prev is a constant before the loop and nothing reads it after: only the
    # trip-to-trip flow carries x's influence through it.
    got = stack_and_checkpoint(carried, (0.7, n), checkpoints=slots)
    assert_close(got, numeric_grad(carried, (0.7, n)))
    if n == 2:  # y = x + 0.5 sin(x^2)
        assert_close(got, 1.0 + math.cos(0.49) * 0.7, rtol=1e-12)


def everything(x, w, n):
    s = x
    t = 0.0
    k = 0
    last = 0.0
    prev = 1.0
    for i in range(n):
        if s > 0.5:
            s = helper(s, w) + prev * 0.3
        else:
            s = s + w * math.exp(-s)
        acc = 0.0
        for j in range(3):
            acc += s * (j + 1) * w
        t = t + 0.01 * acc
        k += 1
        last = s * t
        prev = math.sin(s * w)
    return last + t * k + s


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("slots", [1, 2, 3, None])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 30])
def test_a_body_with_everything(n, slots, schedule):
    args = (0.7, 0.4, n)
    got = stack_and_checkpoint(everything, args, (0, 1), checkpoints=slots, schedule=schedule)
    assert_close(got, numeric_grad(everything, args, (0, 1)), rtol=1e-6, atol=1e-7)


# --- NumPy ------------------------------------------------------------------------------

def linear_flow(x0, A, dt, n):
    x = x0
    for _ in range(n):
        x = x + dt * (A @ x)
    return np.sum(x * x)


def written_in_place(x0, w, n):
    x = x0.copy()
    m = len(x)
    for t in range(n):
        i = t % m
        x[i] = x[i] * w + math.sin(x[(i + 1) % m])
    return np.sum(x * x)


def writes_into_its_parameter(x, w, n):
    m = len(x)
    for t in range(n):
        x[t % m] = x[t % m] * w + 0.1
    return np.sum(x * x)


def rng(seed):
    return np.random.default_rng(seed)


@pytest.mark.parametrize("slots", [1, 2, None])
@pytest.mark.parametrize("n", [
    0, 1, 7])
def test_array_state_updated_by_whole_array_operations(n, slots):
    x0, A = rng(0).normal(size=3), 0.5 * rng(1).normal(size=(3, 3))
    saved = x0.copy(), A.copy()
    args = (x0, A, 0.1, n)
    got = stack_and_checkpoint(linear_flow, args, (0, 1, 2), checkpoints=slots)
    assert np.array_equal(x0, saved[0]) and np.array_equal(A, saved[1])
    assert got[0].shape == (3,) and got[1].shape == (3, 3)
    for index, value in zip((0, 1, 2), got):
        np.testing.assert_allclose(value, numeric_array_grad(linear_flow, args, index),
                                   rtol=1e-6, atol=1e-8)
    assert np.array_equal(x0, saved[0]) and np.array_equal(A, saved[1])


@pytest.mark.parametrize("slots", [1, 2, None])
@pytest.mark.parametrize("n", [0, 1, 7])
def test_array_state_written_in_place(n, slots):
    x0 = np.array([0.3, -0.5, 0.8])
    args = (x0, 0.9, n)
    got = stack_and_checkpoint(written_in_place, args, (0, 1), checkpoints=slots)
    assert np.array_equal(x0, [0.3, -0.5, 0.8])
    for index, value in zip((0, 1), got):
        np.testing.assert_allclose(value, numeric_array_grad(written_in_place, args, index),
                                   rtol=1e-6, atol=1e-8)


def test_a_body_writing_into_a_parameter_leaves_the_input_alone():
    x = np.array([0.3, -0.5, 0.8])
    stack = derivo.grad(writes_into_its_parameter, wrt=(0, 1))(x, 0.9, 7)
    assert np.array_equal(x, [0.3, -0.5, 0.8])  # the stack gradient copies
    got = checkpointed_grad(writes_into_its_parameter, (0, 1), checkpoints=2)(x, 0.9, 7)
    assert_same(got, stack)
    assert np.array_equal(x, [0.3, -0.5, 0.8])
    for index, value in zip((0, 1), got):
        np.testing.assert_allclose(value, numeric_array_grad(writes_into_its_parameter,
                                                             (x, 0.9, 7), index),
                                   rtol=1e-6, atol=1e-8)


# --- the derivo.checkpointed marker -----------------------------------------------------

def marked(x, w, n):
    y = x
    z = 1.0
    for i in derivo.checkpointed(range(n), checkpoints=3):
        y, z = math.sin(y * w) + 0.1 * z, z * math.cos(y)
    return y + z


def unmarked(x, w, n):
    y = x
    z = 1.0
    for i in range(n):
        y, z = math.sin(y * w) + 0.1 * z, z * math.cos(y)
    return y + z


def marked_halving(x, n):
    y = x
    for i in derivo.checkpointed(range(n), checkpoints=2, schedule="halving"):
        y = math.sin(y) + 0.01 * i
    return y


def marked_inside_a_stack_loop(x, n):
    y = x
    for j in range(3):
        for i in derivo.checkpointed(range(n), checkpoints=2):
            y = math.sin(y) * (1.0 + 0.1 * j)
    return y


@pytest.mark.parametrize("n", [0, 1, 10])
def test_marker_checkpoints_one_loop_under_the_default_strategy(n):
    args = (0.7, 1.3, n)
    assert marked(*args) == unmarked(*args)  # plain Python: the marker is the iterable
    assert derivo.checkpointed(range(n), checkpoints=3) == range(n)
    gradient = derivo.grad(marked, wrt=(0, 1))
    assert "checkpointed_for" in gradient.source and "slots=3" in gradient.source
    assert "checkpointed_for" not in derivo.grad(unmarked, wrt=(0, 1)).source
    got = gradient(*args)
    assert_same(got, derivo.grad(unmarked, wrt=(0, 1))(*args))
    assert_close(got, numeric_grad(marked, args, (0, 1)))
    if n:
        assert checkpoints.LAST_RUN["slots"] == 3
        assert checkpoints.LAST_RUN["steps"] == n


@pytest.mark.parametrize("loops", ["reversible", "checkpoint"])
def test_marker_under_the_other_strategies(loops):
    got = derivo.grad(marked, wrt=(0, 1), loops=loops)(0.7, 1.3, 10)
    assert_same(got, derivo.grad(unmarked, wrt=(0, 1))(0.7, 1.3, 10))
    assert checkpoints.LAST_RUN["slots"] == 3  # the marker's option wins


def test_marker_with_the_halving_schedule():
    gradient = derivo.grad(marked_halving)
    assert "schedule='halving'" in gradient.source
    assert_close(gradient(0.7, 16), numeric_grad(marked_halving, (0.7, 16)))
    run = checkpoints.LAST_RUN
    assert run["slots"] == 2 and run["most_held"] <= 2
    # recursive halving over 16 trips with 2 slots: more steps than the optimum
    assert run["forward_steps"] + run["recomputed_steps"] > optimal_cost(16, 2)


@pytest.mark.parametrize("n", [0, 1, 5])
def test_marked_loop_inside_a_stack_loop(n):
    gradient = derivo.grad(marked_inside_a_stack_loop)
    assert gradient.source.count("checkpointed_for(") == 1
    assert "for j in range(3):" in function_source(gradient.source,
                                                   "marked_inside_a_stack_loop_grad")
    assert_close(gradient(0.7, n), numeric_grad(marked_inside_a_stack_loop, (0.7, n)))


def marker_one_slot(x, n):
    y = x
    for i in derivo.checkpointed(range(n), checkpoints=1, schedule="revolve"):
        y = math.sin(y)
    return y


def marker_without_slots(x, n):
    y = x
    for i in derivo.checkpointed(range(n), checkpoints=0):  # refused: slots
        y = math.sin(y)
    return y


def marker_with_a_word(x, n):
    y = x
    for i in derivo.checkpointed(range(n), checkpoints="x"):  # refused: slots
        y = math.sin(y)
    return y


def marker_bad_schedule(x, n):
    y = x
    for i in derivo.checkpointed(range(n), schedule="nope"):  # refused: schedule
        y = math.sin(y)
    return y


def marker_variable_option(x, n, s):
    y = x
    for i in derivo.checkpointed(range(n), checkpoints=s):  # refused: constant
        y = math.sin(y)
    return y


@pytest.mark.parametrize("func,marker,words", [
    (marker_bad_schedule, "refused: schedule", "schedule='nope'"),
    (marker_variable_option, "refused: constant", "constant checkpoints="),
    (marker_without_slots, "refused: slots", "checkpoints=0"),
    (marker_with_a_word, "refused: slots", "checkpoints='x'"),
])
def test_bad_marker_options_are_refused_with_their_line(func, marker, words):
    args = (0.7, 3) + ((2,) if func is marker_variable_option else ())
    # as plain Python the marker returns its iterable
    assert func(*args) == math.sin(math.sin(math.sin(0.7)))
    with pytest.raises(derivo.DerivoError) as info:
        derivo.grad(func)(*args)
    assert isinstance(info.value, derivo.UnsupportedSyntax)
    assert info.value.filename == THIS_FILE
    assert info.value.lineno == line_of(func, marker)
    assert words in str(info.value)
    # the same loop with good options: d sin(sin(sin(x))) / dx
    expected = math.cos(math.sin(math.sin(0.7))) * math.cos(math.sin(0.7)) * math.cos(0.7)
    assert_close(derivo.grad(marker_one_slot)(0.7, 3), expected, rtol=1e-12)
    assert checkpoints.LAST_RUN["slots"] == 1


def simple_marked(x, n):
    y = x
    for i in derivo.checkpointed(range(n), checkpoints=2):
        y = y * y * 0.5 + x
    return y


def test_hessian_of_a_marked_function_is_refused_not_zero():
    # Forward mode over checkpointed code would miss the derivatives flowing
    # through the tape the loop pushes: refused, with the generated line.
    with pytest.raises(derivo.UnsupportedSyntax, match="checkpointed loop"):
        derivo.hessian(simple_marked)(0.7, 3)


# --- which loops loops="checkpoint" outlines --------------------------------------------

def two_loops_and_a_nest(x, n):
    y = x
    for i in range(n):
        for j in range(2):
            y = math.sin(y) + 0.1 * j * x
    z = y
    k = 0
    while k < n:
        for j in range(2):
            z = z * y * 0.5 + 0.01
        k += 1
    return z


def loop_in_a_branch(x, n, flag):
    y = x
    if flag:
        for i in range(n):
            y = y * math.cos(y)
    else:
        y = 2.0 * y
    return y


@pytest.mark.parametrize("n", [0, 1, 4])
def test_only_outermost_loops_are_outlined(n):
    gradient = checkpointed_grad(two_loops_and_a_nest, checkpoints=2)
    source = gradient.source
    assert source.count("checkpointed_for(") == 1
    assert source.count("checkpointed_while(") == 1
    main = function_source(source, "two_loops_and_a_nest_grad")
    assert not [line for line in main.splitlines()
                if line.lstrip().startswith(("for ", "while "))], main
    steps = [name for name in ("two_loops_and_a_nest_trips", "two_loops_and_a_nest_trips1")
             if "def {}(".format(name) in source]
    assert len(steps) == 2
    assert all("for j in range(2):" in function_source(source, s) for s in steps)
    got = stack_and_checkpoint(two_loops_and_a_nest, (0.7, n), checkpoints=2)
    assert_close(got, numeric_grad(two_loops_and_a_nest, (0.7, n)))


@pytest.mark.parametrize("flag", [True, False])
def test_a_loop_inside_an_if_is_outlined(flag):
    gradient = checkpointed_grad(loop_in_a_branch, checkpoints=2)
    assert gradient.source.count("checkpointed_for(") == 1
    got = stack_and_checkpoint(loop_in_a_branch, (0.8, 4, flag), checkpoints=2)
    assert_close(got, numeric_grad(loop_in_a_branch, (0.8, 4, flag)))


# --- LAST_RUN ---------------------------------------------------------------------------

def sines(x, n):
    y = x
    for i in range(n):
        y = math.sin(y) + 0.1 * i
    return y


@pytest.mark.parametrize("slots", [1, 2, 3, 5])
@pytest.mark.parametrize("steps", [1, 2, 5, 10, 33, 100])
def test_revolve_makes_the_optimal_number_of_steps(steps, slots):
    got = stack_and_checkpoint(sines, (0.5, steps), checkpoints=slots)
    assert_close(got, numeric_grad(sines, (0.5, steps)))
    run = checkpoints.LAST_RUN
    assert run["steps"] == steps and run["slots"] == slots
    assert run["forward_steps"] == steps - 1
    assert run["forward_steps"] + run["recomputed_steps"] == optimal_cost(steps, slots)
    assert run["most_held"] <= slots


@pytest.mark.parametrize("slots", [1, 2, 3, 5])
@pytest.mark.parametrize("steps", [1, 2, 5, 16, 33])
def test_halving_keeps_at_most_its_slots(steps, slots):
    stack_and_checkpoint(sines, (0.5, steps), checkpoints=slots, schedule="halving")
    run = checkpoints.LAST_RUN
    assert run["steps"] == steps and run["most_held"] <= slots
    assert run["forward_steps"] + run["recomputed_steps"] >= optimal_cost(steps, slots)


# --- refusals ---------------------------------------------------------------------------

def with_break(x, n):
    y = x
    for i in range(n):
        y = y * 1.1
        if y > 3.0:
            break  # refused
    return y


def with_continue(x, n):
    y = x
    for i in range(n):
        if i % 2:
            continue  # refused
        y = y * 1.1
    return y


def with_return(x, n):
    y = x
    for i in range(n):
        y = y * 1.1
        if y > 3.0:
            return y  # refused
    return y


def while_with_break(x, n):
    y = x
    while y < 10.0 * n:
        y = y * 1.5
        if y > 3.0:
            break  # refused
    return y


def no_value_before(x, n):
    for i in range(n):  # refused
        if i == 0:
            z = x
        z = z * 1.1
    return z


def read_after_without_value(x, n):
    y = x
    for i in range(n):  # refused
        last = y * 2.0
        y = y * 1.1
    return last


def loop_variable_after(x, n):
    y = x
    for i in range(n):  # refused
        y = y * 1.1
    return y * i


def over_differentiated_values(x, n):
    s = 0.0
    for v in (x, x * n):  # refused
        s = s * 2.0 + v * v
    return s


@pytest.mark.parametrize("func,words", [
    (with_break, "'break'"),
    (with_continue, "'continue'"),
    (with_return, "returns from inside"),
    (while_with_break, "'break'"),
    (no_value_before, "'z' may have no value before the loop"),
    (read_after_without_value, "'last' may have no value before the loop"),
    (loop_variable_after, "loop variable 'i'"),
    (over_differentiated_values, "loop over differentiated values"),
])
def test_refusals_point_at_the_users_line(func, words):
    args = (0.8, 5)
    if func is not over_differentiated_values:  # the stack handles them all
        assert_close(derivo.grad(func)(*args), numeric_grad(func, args))
    with pytest.raises(derivo.UnsupportedSyntax) as info:
        checkpointed_grad(func, checkpoints=2)(*args)
    err = info.value
    assert isinstance(err, derivo.DerivoError)
    assert words in str(err), str(err)
    assert err.filename == THIS_FILE
    assert err.lineno == line_of(func, "# refused")
    assert str(err).startswith("{}:{}:".format(THIS_FILE, err.lineno))


def marked_with_a_break(x, n):
    y = x
    for i in derivo.checkpointed(range(n), checkpoints=2):
        y = y * 1.1
        if y > 3.0:
            break  # refused
    return y


def test_a_marked_loop_with_a_break_is_refused_under_the_stack_strategy():
    assert marked_with_a_break(0.8, 20) == with_break(0.8, 20)
    with pytest.raises(derivo.UnsupportedSyntax) as info:
        derivo.grad(marked_with_a_break)(0.8, 20)
    assert info.value.filename == THIS_FILE
    assert info.value.lineno == line_of(marked_with_a_break, "# refused")
    assert "'break'" in str(info.value)


@pytest.mark.parametrize("options,words", [
    ({"loops": "checkpoint", "checkpoints": 0}, "checkpoints=0"),
    ({"loops": "checkpoint", "checkpoints": -2}, "checkpoints=-2"),
    ({"loops": "checkpoint", "checkpoints": "x"}, "checkpoints='x'"),
    ({"loops": "checkpoint", "checkpoints": True}, "checkpoints=True"),
    ({"loops": "checkpoint", "checkpoints": 2.5}, "checkpoints=2.5"),
    ({"loops": "checkpoint", "schedule": "nope"}, "schedule='nope'"),
    ({"loops": "nope"}, "loops='nope'"),
])
@pytest.mark.parametrize("transform", [derivo.grad, derivo.value_and_grad])
def test_bad_options_are_refused(transform, options, words):
    with pytest.raises(derivo.DerivoError, match=words.replace("(", r"\(")):
        transform(sines, **options)
    with pytest.raises(derivo.DerivoError, match=words):
        transform(**options)(sines)  # the decorator form
    # and good options next to them work
    good = transform(sines, loops="checkpoint", checkpoints=2, schedule="halving")(0.5, 4)
    gradient = good[1] if transform is derivo.value_and_grad else good
    assert_close(gradient, numeric_grad(sines, (0.5, 4)))


def for_else(x, n):
    y = x
    for i in range(n):
        y = y * 1.1 + 0.5
    else:
        y = y * y
    return y


def while_else(x, n):
    y = x
    while y < 5.0 * n:
        y = y * 1.5
    else:
        y = y * y
    return y


@pytest.mark.parametrize("func", [for_else, while_else])
def test_a_loop_else_block_is_refused(func):
    with pytest.raises(derivo.UnsupportedSyntax, match="else"):
        derivo.grad(func)(0.8, 3)  # what the stack strategy does
    with pytest.raises(derivo.UnsupportedSyntax, match="has an else block") as info:
        checkpointed_grad(func, checkpoints=2)
    assert info.value.lineno == func.__code__.co_firstlineno + 2


def loop_variable_read_before(x, n):
    i = 0.5
    y = x * i
    for i in range(n):
        y = y * 1.1 + 0.01 * i
    return y


def test_a_loop_variable_read_only_before_the_loop_is_fine():
    assert_close(derivo.grad(loop_variable_read_before)(0.8, 4),
                 numeric_grad(loop_variable_read_before, (0.8, 4)))
    got = stack_and_checkpoint(loop_variable_read_before, (0.8, 4), checkpoints=2)
    assert_close(got, numeric_grad(loop_variable_read_before, (0.8, 4)))


def positional_only(x, /, n):
    for _ in range(n):
        x = x * 1.1 + math.sin(x)
    return x


def test_a_positional_only_parameter_as_loop_state():
    got = checkpointed_grad(positional_only, checkpoints=2)(0.8, 4)
    assert_close(got, numeric_grad(positional_only, (0.8, 4)))


# --- helpers in another module ----------------------------------------------------------

MODULE_A = """\
import math
C = 0.5
def scale(t):
    return t * C
def inner(y, n):
    for i in range(n):
        y = math.sin(y) * C + scale(y)
    return y
"""

MODULE_B = """\
from {a} import inner
C = 0.25
def scale(t):
    return t * t * C
def outer(x, n):
    z = x
    for k in range(n):
        z = inner(z, 2) * C + scale(z)
    return z
"""


def import_file(path, name):
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_helpers_whose_module_has_a_global_of_the_same_name_read_their_own(tmp_path):
    (tmp_path / "ckpt_mod_a.py").write_text(MODULE_A)
    (tmp_path / "ckpt_mod_b.py").write_text(MODULE_B.format(a="ckpt_mod_a"))
    sys.path.insert(0, str(tmp_path))
    try:
        import_file(tmp_path / "ckpt_mod_a.py", "ckpt_mod_a")
        outer = import_file(tmp_path / "ckpt_mod_b.py", "ckpt_mod_b").outer
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("ckpt_mod_a", None)
        sys.modules.pop("ckpt_mod_b", None)
    # The helpers' module and the caller's both define C: the generated module
    # holds one of them under another name, whatever the loop strategy
    for loops in ("checkpoint", "stack"):
        got = derivo.grad(outer, loops=loops, checkpoints=2)(0.8, 3)
        assert_close(got, numeric_grad(outer, (0.8, 3)))


# --- determinism ------------------------------------------------------------------------

def test_the_same_function_gives_the_same_source():
    def sources():
        return (checkpointed_grad(everything, (0, 1), checkpoints=3).source,
                checkpointed_grad(besselj, "z").source,
                checkpointed_grad(energy_after, (0, 1), schedule="halving").source,
                derivo.grad(marked, wrt=(0, 1)).source,
                checkpointed_grad(two_loops_and_a_nest).source)

    first = sources()
    derivo.cache.clear()  # transform everything again
    before = derivo.cache_info().misses
    second = sources()
    assert derivo.cache_info().misses == before + len(second)
    assert first == second
    gradient = checkpointed_grad(everything, (0, 1), checkpoints=3)
    assert_same(gradient(0.7, 0.4, 7), derivo.grad(everything, wrt=(0, 1))(0.7, 0.4, 7))


def test_the_source_is_the_same_across_processes():
    tests = os.path.dirname(THIS_FILE)
    root = os.path.dirname(tests)
    script = textwrap.dedent("""\
        import sys
        sys.path[:0] = [{src!r}, {root!r}, {tests!r}]
        import derivo, test_reverse_checkpoint as t
        gradient = derivo.grad(t.everything, wrt=(0, 1), loops="checkpoint", checkpoints=2)
        sys.stdout.write(gradient.source)
        sys.stdout.write(derivo.grad(t.two_loops_and_a_nest, loops="checkpoint").source)
        sys.stdout.write("#" + repr(tuple(map(float, gradient(0.7, 0.4, 7)))))
        """).format(src=os.path.join(root, "src"), root=root, tests=tests)
    outputs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
    assert "checkpointed_for(" in outputs[0]
    assert outputs[0] == outputs[1]
    there = eval(outputs[0].rsplit("#", 1)[1])
    here = checkpointed_grad(everything, (0, 1), checkpoints=2)(0.7, 0.4, 7)
    assert there == tuple(map(float, here))
    assert_close(there, numeric_grad(everything, (0.7, 0.4, 7), (0, 1)), rtol=1e-6, atol=1e-7)


def reads_a_list(xs, c):
    s = c
    for i in range(len(xs)):
        s = math.sin(s * 0.5 + xs[i])
    return s


def test_a_checkpointed_loop_reading_a_list():
    # the list's adjoint, a list, was summed into 0.0 with + (a TypeError)
    xs, c = [0.1, 0.2, 0.3, -0.4], 0.5
    checkpointed = derivo.grad(reads_a_list, wrt=(0, 1), loops="checkpoint", checkpoints=2)
    bxs, bc = checkpointed(xs, c)
    assert isinstance(bxs, list)
    stack = derivo.grad(reads_a_list, wrt=(0, 1))(xs, c)
    assert bxs == pytest.approx(stack[0], rel=1e-12) and bc == pytest.approx(stack[1], rel=1e-12)
    h = 1e-6
    for k in range(len(xs)):
        up, down = list(xs), list(xs)
        up[k] += h
        down[k] -= h
        assert bxs[k] == pytest.approx((reads_a_list(up, c) - reads_a_list(down, c)) / (2 * h),
                                       rel=1e-7)


def scaled_items_summed_twice(xs, c):
    items = []
    for i in range(len(xs)):
        items.append(xs[i] * c)
    return sum(items) + sum(items)


def test_a_checkpointed_list_summed_twice_adds_its_adjoints_item_by_item():
    # The loop's list came back from the checkpointed loop, never appended to where it
    # is summed: its two adjoints were joined ([1.0] * n + [1.0] * n), not added.
    xs, c = [0.5, -1.5, 2.0], 0.7
    gx, gc = stack_and_checkpoint(scaled_items_summed_twice, (xs, c), wrt=(0, 1))
    np.testing.assert_allclose(gx, [2 * c] * 3, rtol=1e-12)
    assert gc == pytest.approx(2 * sum(xs), rel=1e-12)


def revisits_pairs(pairs, y):
    s = y
    for i in range(4):
        a, b = pairs[i % 2]
        s = s * a + b * y
    return s


def test_a_list_of_tuples_read_by_index_in_a_checkpointed_loop():
    # each trip's adjoint of pairs is a list holding one pair's adjoint; adding two
    # trips' added a list to 0.0 (TypeError)
    pairs, y = [(1.3, -0.7), (0.5, 0.4), (0.2, 0.1)], 0.9
    bpairs, by = checkpointed_grad(revisits_pairs, wrt=(0, 1), checkpoints=2)(pairs, y)
    h = 1e-6
    for k, j in [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0)]:
        up, down = [list(p) for p in pairs], [list(p) for p in pairs]
        up[k][j] += h
        down[k][j] -= h
        central = (revisits_pairs(up, y) - revisits_pairs(down, y)) / (2 * h)
        assert abs(bpairs[k][j] - central) < 1e-7
    assert_close(by, numeric_grad(revisits_pairs, (pairs, y), 1))
    assert bpairs == derivo.grad(revisits_pairs, wrt=(0, 1))(pairs, y)[0]


def columns_summed_while(x):
    A = np.outer(x, x)
    s = 0.0
    i = 0
    while i < 2:
        s = s + np.sum(A[1:, i] * x[1:]) + np.sum(A[i, :])
        i += 1
    return s


def test_a_checkpointed_while_loop_indexing_with_slices_and_its_counter():
    x = np.array([0.3, -0.7, 1.1])
    gradient = derivo.grad(columns_summed_while, loops="checkpoint")(x)
    expected = [(columns_summed_while(x + 1e-6 * e) - columns_summed_while(x - 1e-6 * e)) / 2e-6
                for e in np.eye(3)]
    np.testing.assert_allclose(gradient, expected, rtol=1e-6)


def dict_updated_in_place(x, y):
    d = {"a": x, "b": y}
    for _ in range(3):
        d["a"] = d["a"] * 0.5 + d["b"]
        d["b"] = math.sin(d["a"]) * y
    return d["a"] + d["b"]


@pytest.mark.parametrize("schedule", ["revolve", "halving", "segments"])
@pytest.mark.parametrize("slots", [1, 2])
def test_a_dict_a_checkpointed_loop_writes_into_is_kept_as_a_copy(schedule, slots):
    # a kept state shared the dict the later trips wrote into: d/dy was -0.05, not 0.34
    got = derivo.grad(dict_updated_in_place, wrt=(0, 1), loops="checkpoint", checkpoints=slots,
                      schedule=schedule)(0.7, -0.4)
    assert_close(got, numeric_grad(dict_updated_in_place, (0.7, -0.4), wrt=(0, 1)),
                 rtol=1e-6, atol=1e-8)


def euler_step(y, a):
    return y * a


def integrate_with_extra_arguments(f, y, n, *args):
    for i in range(n):
        y = y + 0.1 * f(y, *args)
    return y


def integrated_sum(a, y0):
    return np.sum(integrate_with_extra_arguments(euler_step, y0, 5, a))


@pytest.mark.parametrize("loops", ["stack", "checkpoint"])
def test_a_loop_reading_an_array_through_star_args_is_checkpointed(loops):
    # the loop reads args[0]: its adjoint is a list, added item by item across trips
    a, y0, h = np.array([0.5, 0.2]), np.array([1.0, 2.0]), 1e-6
    expected = [(integrated_sum(a + h * e, y0) - integrated_sum(a - h * e, y0)) / (2 * h)
                for e in np.eye(2)]
    np.testing.assert_allclose(derivo.grad(integrated_sum, loops=loops)(a, y0), expected,
                               rtol=1e-7)
