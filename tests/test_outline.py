"""Stage 1b: which loops are outlined, and what their state and invariants are."""

import math

import numpy as np
import pytest

import derivo
from derivo import syntax as S
from derivo.errors import UnsupportedSyntax
from derivo.names import Namer
from derivo.outline import Loop, outline_loops
from derivo.parse import parse


def outlined(func, loops="checkpoint"):
    """The Loop callees of ``func``'s outlined loops, in order."""
    parsed = outline_loops(parse(func), loops, None, "revolve", Namer())
    return [n.user_function for n in S.walk(parsed.tree) if isinstance(n, S.Call)
            and isinstance(getattr(n, "user_function", None), Loop)]


def oscillator(k, x, steps, dt):
    v = 0.0
    for _ in range(steps):
        x += dt * v
        v -= dt * k * x
    return x + v


def test_state_is_what_the_loop_carries_and_invariants_what_it_reads():
    [loop] = outlined(oscillator)
    assert loop.kind == "for"
    assert loop.state == ["x", "v"]
    assert loop.invariants == ["dt", "k"]
    assert loop.params == ["(iterations)", "x", "v", "dt", "k"]
    assert [a.id for a in loop.step.tree.args.args] == ["_", "x", "v", "dt", "k"]
    assert S.to_source(loop.runner.tree).startswith(
        "def oscillator_trips(items, x, v, dt, k):\n    for _ in items:")


def temporaries(a, n):
    total = 0.0
    for i in range(n):
        t = a * i        # assigned before it is read in every trip: not state
        total += math.sin(t)
    return total


def test_a_temporary_of_one_trip_is_not_state():
    [loop] = outlined(temporaries)
    assert loop.state == ["total"]
    assert loop.invariants == ["a"]


def read_after(a, n):
    last = 0.0
    for i in range(n):
        last = a * i
    return last


def test_a_value_read_after_the_loop_is_state():
    [loop] = outlined(read_after)
    assert loop.state == ["last"]


def branch_assigned(a, n):
    y = a
    for i in range(n):
        if i % 2:
            t = y
        else:
            y = y * a
        y = y + 0.0 * t
    return y


def test_a_value_assigned_on_one_branch_only_is_exposed():
    with pytest.raises(UnsupportedSyntax, match="'t' may have no value before the loop"):
        outlined(branch_assigned)


def newton(a, x):
    while abs(x * x - a) > 1e-12:
        x = 0.5 * (x + a / x)
    return x


def test_while_loop_runs_a_bounded_number_of_trips():
    [loop] = outlined(newton)
    assert loop.kind == "while"
    assert loop.state == ["x"]
    assert loop.invariants == ["a"]
    runner = S.to_source(loop.runner.tree)
    assert runner.startswith("def newton_trips(trips, x, a):")
    assert "while done < trips and abs(x * x - a) > 1e-12:" in runner
    assert "return done, x" in runner


def nested(a, n):
    s = 0.0
    for i in range(n):
        for j in range(3):
            s += a * j
    return s


def test_only_outermost_loops_are_outlined():
    [loop] = outlined(nested)
    assert loop.state == ["s"]
    assert any(isinstance(n, S.For) for n in S.walk(loop.step.tree))


def marked(a, n):
    s = 0.0
    for i in range(2):
        s += a
    for i in derivo.checkpointed(range(n), checkpoints=4, schedule="halving"):
        s = s * a
    return s


def test_the_marker_outlines_one_loop_under_any_strategy():
    [loop] = outlined(marked, loops="stack")
    assert (loop.slots, loop.schedule) == (4, "halving")
    assert outlined(oscillator, loops="stack") == []


def marked_inside(a, n):
    s = 0.0
    for i in range(n):
        for _ in derivo.checkpointed(range(3), checkpoints=2):
            s = s * a + 1.0
    return s


def test_a_marked_loop_inside_a_checkpointed_loop_is_refused():
    with pytest.raises(derivo.UnsupportedSyntax, match="mark the outer loop only") as info:
        derivo.grad(marked_inside, loops="checkpoint")
    assert info.value.construct == "checkpointed"


def test_a_marked_loop_inside_an_ordinary_loop_is_checkpointed():
    args, h = (0.9, 3), 1e-6
    expected = (marked_inside(args[0] + h, 3) - marked_inside(args[0] - h, 3)) / (2 * h)
    assert derivo.grad(marked_inside)(*args) == pytest.approx(expected, rel=1e-7)
    assert derivo.checkpoints.LAST_RUN["slots"] == 2


def no_state(a, n):
    for i in range(n):
        t = a * i
    return a


def test_a_loop_nothing_reads_after_stays():
    assert outlined(no_state) == []


def jumps_break(a, n):
    for i in range(n):
        if a > i:
            break
        a = a * 2
    return a


def jumps_return(a, n):
    for i in range(n):
        if a > i:
            return a
        a = a * 2
    return a


def inner_break_is_fine(a, n):
    for i in range(n):
        for j in range(5):
            if j > 2:
                break
            a = a * 1.1
    return a


def target_after(a, n):
    for i in range(n):
        a = a * 2
    return a * i


def bad_marker(a, n):
    for i in derivo.checkpointed(range(n), checkpoints=n):
        a = a * 2
    return a


def writes_into_its_argument(x, n):
    y = x * 1.0
    for i in range(n):
        y[0] = y[1] * 0.5   # on the second trip this writes into x
        y = x
    return y[0]


def read_through_another_name(x, n):
    y = x * 1.0
    z = y[1:]
    for i in range(1, n):
        y[i] = y[i] * y[i - 1]   # z sees this too
    return z[0] * z[1]


def loops_over_a_zip(w, xs, ys):
    total = 0.0
    for x, y in zip(xs, ys):
        total = total + (w * x - y) ** 2
    return total


def loops_over_pairs(w, pairs):
    total = 0.0
    for x, y in pairs:
        total = total + (w * x - y) ** 2
    return total


@pytest.mark.parametrize("func, message", [
    (loops_over_a_zip, r"an iterator; loop over range\(len\(...\)\) and index"),
    (loops_over_pairs, r"not 'x, y'; loop over range\(len\(...\)\) and unpack"),
    (jumps_break, "has a 'break'"),
    (jumps_return, "returns from inside"),
    (target_after, "loop variable 'i'"),
    (bad_marker, "constant checkpoints"),
])
def test_refusals_point_at_the_line(func, message):
    with pytest.raises(UnsupportedSyntax, match=message) as info:
        outlined(func)
    assert info.value.filename == __file__
    assert info.value.lineno > func.__code__.co_firstlineno


def test_a_break_of_an_inner_loop_is_allowed():
    [loop] = outlined(inner_break_is_fine)
    assert loop.state == ["a"]


@pytest.mark.parametrize("func, message", [
    (writes_into_its_argument, "writing into 'y' .*: it may share memory with another array"),
    (read_through_another_name, "'z' sharing memory with 'y'"),
])
def test_a_checkpointed_loop_writing_into_shared_memory_is_refused_as_the_function_is(
        func, message):
    # the memory model reads the function whole, before the loop is outlined
    for loops in ("checkpoint", "stack"):
        with pytest.raises(UnsupportedSyntax, match=message) as info:
            derivo.grad(func, loops=loops)(np.array([1.0, 2.0, 3.0]), 3)
        assert info.value.filename == __file__
        assert info.value.lineno > func.__code__.co_firstlineno
