"""Checkpointed loops reversed by segments: the generated segment VJP, the
calls and step counts of each schedule, the states held, and the online
schedule against the offline optimum."""

import math
import tracemalloc

import numpy as np
import pytest

import derivo
from checks import numeric_grad
from derivo import checkpoints
from derivo.checkpoints import (checkpointed_while, optimal_cost, segment_length)


def oscillator(stiffness, x, steps):
    v = 0.0
    for _ in range(steps):
        x += 0.01 * v
        v -= 0.01 * stiffness * math.sin(x)
    return x * x + v


def gradient(function, slots, schedule="revolve", wrt=(0, 1)):
    return derivo.grad(function, wrt=wrt, loops="checkpoint", checkpoints=slots,
                       schedule=schedule)


# --- the generated code -----------------------------------------------------------------

def test_the_segments_schedule_calls_the_stack_vjp_of_the_runner():
    source = gradient(oscillator, 4, "segments").source
    assert "def oscillator_trips(items, x, v, stiffness):" in source
    assert "def oscillator_trips_vjp(bresults, items, x, v, stiffness):" in source
    assert "for _ in reversed(items):" in source
    assert "pop().reverse(oscillator_trips_vjp, " in source
    assert "_step" not in source  # no VJP of a single trip


@pytest.mark.parametrize("schedule", ["revolve", "halving"])
def test_every_schedule_of_a_for_loop_calls_the_stack_vjp_of_the_runner(schedule):
    source = gradient(oscillator, 4, schedule).source
    assert "def oscillator_trips_vjp(bresults, items, x, v, stiffness):" in source
    assert "pop().reverse(oscillator_trips_vjp, " in source
    assert "_step" not in source


def test_a_segment_vjp_is_the_adjoint_of_its_trips():
    derivative = gradient(oscillator, 4, "segments")
    namespace = derivative.derivo_function.__globals__
    trips, vjp = namespace["oscillator_trips"], namespace["oscillator_trips_vjp"]

    def through(x, v, stiffness):  # the segment's trips 3 .. 9 and a loss of their state
        x1, v1 = trips(range(3, 10), x, v, stiffness)
        return 0.7 * x1 + 0.2 * v1

    got = vjp((0.7, 0.2), range(3, 10), 0.4, -0.1, 2.0)
    assert got == pytest.approx(numeric_grad(through, (0.4, -0.1, 2.0), (0, 1, 2)), rel=1e-6)


def counted_while(x, w, steps):
    k = 0
    while k < steps:
        x = math.sin(x * w) + 0.1
        k += 1
    return x


def test_a_while_loop_reverses_trip_by_trip_under_any_schedule():
    derivative = gradient(counted_while, 3, "segments")
    assert "while done < trips and k < steps:" in derivative.source
    assert "pop().reverse(counted_while_step_vjp, " in derivative.source
    for steps in (0, 1, 5, 40):
        expected = derivo.grad(counted_while, wrt=(0, 1))(0.3, 1.2, steps)
        assert derivative(0.3, 1.2, steps) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_a_saved_module_of_the_segments_schedule_runs_without_derivo(tmp_path):
    from test_save import run_without_derivo
    derivative = gradient(oscillator, 6, "segments")
    saved = derivative.save(tmp_path / "oscillator_grad.py")
    assert run_without_derivo(saved, "oscillator_grad(2.0, 0.3, 500)") == \
        repr(derivative(2.0, 0.3, 500))


# --- calls and step counts ------------------------------------------------------------------

@pytest.mark.parametrize("steps, slots", [(2, 2), (5, 4), (10, 3), (100, 5), (999, 10),
                                          (1000, 7)])
def test_revolve_stays_optimal_and_reverses_stretches_in_one_call(steps, slots):
    result = gradient(oscillator, slots)(2.0, 0.3, steps)
    run = checkpoints.LAST_RUN
    assert run["unit"] == 1
    assert run["forward_steps"] + run["recomputed_steps"] == optimal_cost(steps, slots)
    if steps <= slots + 1:  # the primal loop kept every state: a call per trip, no recomputing
        assert run["segments"] == steps and run["recomputed_steps"] == 0
    else:  # trips whose states all fit in the slots are reversed by one call
        assert run["segments"] < 0.7 * steps
    assert run["most_held"] <= slots
    assert result == pytest.approx(derivo.grad(oscillator, wrt=(0, 1))(2.0, 0.3, steps),
                                   rel=1e-12)


def segments_cost(steps, slots):
    """The trips the ``segments`` schedule runs: C*(U, S - B + 1) over U segments
    of B trips (each advance a whole segment), each segment's VJP running its
    trips after the first again, and the primal loop the last segment's."""
    unit = segment_length(steps, slots)
    units = -(-steps // unit)
    last = steps - (units - 1) * unit
    return unit * optimal_cost(units, slots - unit + 1) + steps - units + last - 1


@pytest.mark.parametrize("steps, slots", [(1, 4), (7, 4), (100, 5), (1000, 10), (1001, 10),
                                          (5000, 13), (20000, 15)])
def test_the_segments_schedule_runs_revolve_over_segments(steps, slots):
    result = gradient(oscillator, slots, "segments")(2.0, 0.3, steps)
    run = checkpoints.LAST_RUN
    unit = segment_length(steps, slots)
    assert run["unit"] == unit and run["steps"] == steps
    assert run["segments"] == -(-steps // unit)  # one VJP call per segment
    assert run["forward_steps"] + run["recomputed_steps"] == segments_cost(steps, slots)
    assert run["most_held"] <= slots
    assert result == pytest.approx(derivo.grad(oscillator, wrt=(0, 1))(2.0, 0.3, steps),
                                   rel=1e-11)
    if steps <= 100:
        assert result == pytest.approx(numeric_grad(oscillator, (2.0, 0.3, steps), (0, 1)),
                                       rel=1e-6)


def test_segments_are_longer_when_calls_cost_more_than_recomputing():
    assert segment_length(1, 10) == 1
    assert segment_length(100000, 3) == 1  # few slots: each one saves many trips
    lengths = [segment_length(100000, slots) for slots in (8, 12, 17, 25)]
    assert lengths == sorted(lengths) and lengths[-1] > 1
    for slots in (8, 17):  # within 30% of the optimum's trips, for far fewer calls
        unit = segment_length(100000, slots)
        assert segments_cost(100000, slots) <= 1.3 * optimal_cost(100000, slots)
        assert unit >= 2


# --- the states in memory ---------------------------------------------------------------------

def relax(x, w, n):
    for _ in range(n):
        x = np.tanh(x * w)
    return np.sum(x)


@pytest.mark.parametrize("schedule", ["revolve", "segments", "halving"])
@pytest.mark.parametrize("slots", [4, 10])
def test_memory_is_flat_in_the_trip_count(schedule, slots):
    """Peak traced memory in states (arrays of the loop's state): the slots and
    a few more (the argument, the tape's copies of the initial state, the
    VJP's temporaries and adjoints), the same for 50 and 1500 trips."""
    x = np.linspace(-1.0, 1.0, 20000)
    derivative = gradient(relax, slots, schedule)
    peaks = []
    for n in (50, 400, 1500):
        tracemalloc.start()
        result = derivative(x, 0.9, n)
        peaks.append(tracemalloc.get_traced_memory()[1] / x.nbytes)
        tracemalloc.stop()
        assert checkpoints.LAST_RUN["most_held"] <= slots
    assert max(peaks) <= slots + 9
    if schedule != "halving":  # (halving keeps about log2 n states, up to its slots)
        assert max(peaks) - min(peaks) < 1.5
    expected = derivo.grad(relax, wrt=(0, 1))(x, 0.9, 1500)
    np.testing.assert_allclose(result[0], expected[0], rtol=1e-12)
    assert result[1] == pytest.approx(expected[1], rel=1e-12)


def test_the_split_keeps_no_cache():
    checkpoints.optimal_split(10 ** 6, 10)
    assert not hasattr(checkpoints.optimal_split, "cache_info")


# --- online checkpointing -----------------------------------------------------------------------

def online_calls(steps, slots):
    """Step calls of the online schedule for a while loop of ``steps`` trips."""
    def trips(count, i, x, a):
        done = min(count, steps - i)
        return done, i + done, x

    def step_vjp(seeds, i, x, a):
        return seeds + (0.0,)

    stack = []
    checkpointed_while(stack.append, trips, (0, 1.0), (2.0,), slots)
    stack.pop().reverse(step_vjp, (0.0, 1.0), invariants=(0,))
    run = checkpoints.LAST_RUN
    assert run["steps"] == steps and run["most_held"] <= slots
    return run["forward_steps"] + run["recomputed_steps"]


@pytest.mark.parametrize("slots", [3, 4, 5, 10, 20])
def test_online_schedule_is_within_a_third_of_the_offline_optimum(slots):
    # From twice the slots on: just after the first thinnings the kept states
    # are the fewest, the online schedule's worst case (up to 1.5 times the
    # optimum's few trips for slots + 1 trips).
    for steps in list(range(2 * slots + 3, 200)) + [1000, 10 ** 4, 10 ** 5]:
        ratio = (online_calls(steps, slots) + 1) / (optimal_cost(steps, slots) + 1)
        assert ratio < 1.33, (steps, slots, ratio)


def test_online_schedule_at_a_million_trips_and_five_slots():
    # (4.2 times the optimum when the last kept segment was left two slots)
    assert online_calls(10 ** 6, 5) < 1.05 * optimal_cost(10 ** 6, 5)
