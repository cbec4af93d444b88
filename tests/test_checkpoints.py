"""The checkpointing schedules: their cost against Eq. 8.3 of the AD chapter,
computed here independently, and the tape run by hand-written steps."""

import dataclasses
import math
from typing import NamedTuple

import numpy as np
import pytest

import derivo
from checks import numeric_grad
from derivo import checkpoints
from derivo.checkpoints import Tape, checkpointed_for, checkpointed_while, optimal_cost

MAX_STEPS = 1000
SLOTS = (1, 2, 3, 5, 10)


def recurrence(max_steps, max_slots):
    """C*(k, s) of Eq. 8.3 by dynamic programming: C(1, s) = 0,
    C(k, 1) = k (k - 1) / 2, C(k, s) = min_l C(k - l, s - 1) + C(l, s) + l."""
    table = np.zeros((max_steps + 1, max_slots + 1), dtype=np.int64)
    ks = np.arange(max_steps + 1)
    table[:, 1] = ks * (ks - 1) // 2
    for s in range(2, max_slots + 1):
        for k in range(2, max_steps + 1):
            split = np.arange(1, k)
            table[k, s] = np.min(table[k - split, s - 1] + table[split, s] + split)
    return table


@pytest.fixture(scope="module")
def optimum():
    return recurrence(MAX_STEPS, max(SLOTS))


def test_closed_form_is_the_recurrence(optimum):
    for s in SLOTS:
        for k in range(1, MAX_STEPS + 1):
            assert optimal_cost(k, s) == optimum[k, s], (k, s)


def test_split_reaches_the_minimum(optimum):
    for s in (2, 3, 5, 10):
        for k in range(2, 400):
            split = checkpoints.optimal_split(k, s)
            assert 1 <= split < k
            assert optimum[k - split, s - 1] + optimum[split, s] + split == optimum[k, s]


def oscillator(stiffness, x, steps):
    v = 0.0
    for _ in range(steps):
        x += 0.01 * v
        v -= 0.01 * stiffness * math.sin(x)
    return x * x + v


COUNTED_CASES = [(k, s) for s in (2, 3, 5, 10) for k in (1, 2, 3, 7, 10, 33, 100)] + [
    (127, 2), (128, 3), (500, 5), (999, 10), (1000, 2), (1000, 3), (1000, 5), (1000, 10)]


@pytest.mark.parametrize("steps, slots", COUNTED_CASES)
def test_generated_code_makes_the_optimal_number_of_steps(steps, slots, optimum):
    gradient = derivo.grad(oscillator, wrt=(0, 1), loops="checkpoint", checkpoints=slots)
    result = gradient(2.0, 0.3, steps)
    run = checkpoints.LAST_RUN
    assert run["steps"] == steps and run["slots"] == slots
    assert run["forward_steps"] + run["recomputed_steps"] == optimum[steps, slots]
    assert run["most_held"] <= slots
    expected = derivo.grad(oscillator, wrt=(0, 1))(2.0, 0.3, steps)
    assert result == pytest.approx(expected, rel=1e-12, abs=1e-14)
    if steps <= 100:  # the stack gradient itself, against central differences
        assert result == pytest.approx(numeric_grad(oscillator, (2.0, 0.3, steps), (0, 1)),
                                       rel=1e-6, abs=1e-8)


def halving_cost(k):
    """C(K) = 2 C(K / 2) + K / 2 (Algorithm 7), for K a power of 2."""
    return 0 if k == 1 else 2 * halving_cost(k // 2) + k // 2


@pytest.mark.parametrize("steps", [2, 4, 16, 64, 256])
def test_halving_makes_the_steps_of_algorithm_7(steps):
    gradient = derivo.grad(oscillator, wrt=0, loops="checkpoint", schedule="halving",
                           checkpoints=steps.bit_length())
    result = gradient(2.0, 0.3, steps)
    assert result == pytest.approx(numeric_grad(oscillator, (2.0, 0.3, steps), 0),
                                   rel=1e-6, abs=1e-8)
    run = checkpoints.LAST_RUN
    assert run["forward_steps"] + run["recomputed_steps"] == halving_cost(steps)
    assert run["most_held"] <= math.log2(steps) + 1


# --- the tape with a hand-written step and VJP ---------------------------------

def step(i, x, v, a):
    return x + 0.1 * v, v - 0.1 * a * math.sin(x) + 0.01 * i


def trips(items, x, v, a):
    """The loop over ``items`` of ``step``, as outline writes it."""
    for i in items:
        x, v = step(i, x, v, a)
    return x, v


def step_vjp(seed, i, x, v, a):
    bx1, bv1 = seed
    return (bx1 - 0.1 * bv1 * a * math.cos(x), 0.1 * bx1 + bv1, -0.1 * bv1 * math.sin(x))


def trips_vjp(seed, items, x, v, a):
    """The VJP of ``trips``: its states kept in a list, then ``step_vjp`` backwards."""
    states = [(x, v)]
    for i in items:
        states.append(step(i, *states[-1], a))
    total = 0.0
    for i in reversed(items):
        states.pop()
        bx, bv, ba = step_vjp(seed, i, *states[-1], a)
        seed, total = (bx, bv), total + ba
    return seed + (total,)


def stored_reverse(steps):
    """The adjoint with every state kept: the reference."""
    states = [(1.0, 0.5)]
    for i in range(steps):
        states.append(step(i, *states[-1], 2.0))
    seeds, total = (1.0, 0.0), 0.0
    for i in reversed(range(steps)):
        bx, bv, ba = step_vjp(seeds, i, *states[i], 2.0)
        seeds, total = (bx, bv), total + ba
    return seeds + (total,)


@pytest.mark.parametrize("steps", [0, 1, 2, 5, 40])
@pytest.mark.parametrize("slots", [1, 2, 4, 50])
@pytest.mark.parametrize("schedule", ["revolve", "halving"])
def test_counted_tape_matches_the_stored_adjoint(steps, slots, schedule):
    stack = []
    final = checkpointed_for(stack.append, trips, range(steps), (1.0, 0.5), (2.0,),
                             slots, schedule)
    state = (1.0, 0.5)
    for i in range(steps):
        state = step(i, *state, 2.0)
    assert final == state
    result = stack.pop().reverse(trips_vjp, (1.0, 0.0), invariants=(0,))
    assert result == pytest.approx(stored_reverse(steps), rel=1e-13, abs=1e-15)


def counted_trips(steps):
    """A while loop ``while i < steps`` of ``step``, as outline writes it."""
    def run(count, i, x, v, a):
        done = 0
        while done < count and i < steps:
            x, v = step(i, x, v, a)
            i += 1
            done += 1
        return done, i, x, v
    return run


def counter_vjp(seed, i, x, v, a):
    return (0.0,) + step_vjp(seed[1:], i, x, v, a)


@pytest.mark.parametrize("steps", [0, 1, 2, 3, 10, 99, 1000])
@pytest.mark.parametrize("slots", [2, 3, 10])
def test_online_tape_keeps_at_most_its_slots(steps, slots):
    stack = []
    final = checkpointed_while(stack.append, counted_trips(steps), (0, 1.0, 0.5), (2.0,),
                               slots)
    assert final[0] == steps
    result = stack.pop().reverse(counter_vjp, (0.0, 1.0, 0.0), invariants=(0,))
    assert result[1:] == pytest.approx(stored_reverse(steps), rel=1e-12, abs=1e-15)
    run = checkpoints.LAST_RUN
    assert run["most_held"] <= slots
    if steps > 1:
        assert run["forward_steps"] + run["recomputed_steps"] >= optimal_cost(steps, slots)


@pytest.mark.parametrize("steps, bound", [(10, 1.6), (100, 1.25), (1000, 1.25),
                                          (10000, 1.25)])
def test_online_schedule_is_close_to_the_offline_optimum(steps, bound):
    # With 10 trips and 10 slots the loop ends just as the slots run out, after
    # the kept states were thinned: the worst case of the online schedule.
    stack = []
    checkpointed_while(stack.append, counted_trips(steps), (0, 1.0, 0.5), (2.0,), 10)
    stack.pop().reverse(counter_vjp, (0.0, 1.0, 0.0), invariants=(0,))
    run = checkpoints.LAST_RUN
    ratio = (run["forward_steps"] + run["recomputed_steps"]) / optimal_cost(steps, 10)
    assert ratio < bound


def test_kept_arrays_are_copies():
    def write_trips(items, x):
        for i in items:
            x[0] += 1.0  # writes into the state it was given
        return x

    def write_vjp(seed, i, x):
        return (seed,)

    stack = []
    start = np.zeros(2)
    checkpointed_for(stack.append, write_trips, range(6), (start,), (), 2)
    tape = stack.pop()
    assert [state[0][0] for _, state, _ in tape.kept] == [0.0] + [
        float(i) for i, _, _ in tape.kept[1:]]
    tape.reverse(write_vjp, np.ones(2))


def test_a_tape_needs_a_slot():
    with pytest.raises(ValueError, match="at least one slot"):
        Tape(trips, range(3), (1.0, 0.5), (2.0,), 0, checkpoints.optimal_split)


# --- what every loop strategy refuses or gets right ----------------------------------

def closures_kept_by_a_loop(x, y):
    fns = []
    for i in range(2):
        fns.append(lambda z: z * x)
    return fns[0](0.5) + y


def closures_of_the_loop_variable(x, y):
    fns = []
    for k in (x, y):
        fns.append(lambda z: z * k)
    return fns[0](0.5)


def local_functions_kept_by_a_loop(x, y):
    fns = []
    for i in range(2):
        def scaled(z):
            return z * x
        fns.append(scaled)
    return fns[0](0.5) + y


@pytest.mark.parametrize("loops", ["stack", "checkpoint", "reversible"])
@pytest.mark.parametrize("f", [closures_kept_by_a_loop, closures_of_the_loop_variable,
                               local_functions_kept_by_a_loop])
def test_functions_a_loop_keeps_are_refused_by_every_strategy(f, loops):
    # a checkpointed loop is checked as the function it came from: the stack
    # strategy's refusals of what its body does hold for every strategy
    with pytest.raises(derivo.DerivoError, match="does not follow a function holding"):
        derivo.value_and_grad(f, wrt=(0, 1), loops=loops)(0.7, -0.4)


class Weights(NamedTuple):
    w: float
    v: list


@dataclasses.dataclass
class Scales:
    a: float
    b: list


def cosines_of_a_record(P, y):
    s = 0.0
    for rep in range(3):
        s += math.cos(y * P.w) + P.v[1] * y
    return s


def cosines_of_a_dataclass(P, y):
    s = 0.0
    for rep in range(3):
        s += math.cos(y * P.a) * P.b[0]
    return s


def _with_first_field(P, value):
    return dataclasses.replace(P, a=value) if dataclasses.is_dataclass(P) else \
        P._replace(w=value)


def _fields(P):
    return dataclasses.astuple(P) if dataclasses.is_dataclass(P) else tuple(P)


@pytest.mark.parametrize("checkpoints", [1, 2])
@pytest.mark.parametrize("f, P", [(cosines_of_a_record, Weights(0.8, [0.4, 0.5])),
                                  (cosines_of_a_dataclass, Scales(0.8, [0.4, 0.5]))])
def test_a_checkpointed_loop_sums_the_adjoint_of_a_record_holding_a_list(f, P, checkpoints):
    stack = derivo.grad(f, wrt=(0, 1))(P, 0.3)
    gP, gy = derivo.grad(f, wrt=(0, 1), loops="checkpoint", checkpoints=checkpoints)(P, 0.3)
    assert gy == pytest.approx(numeric_grad(f, (P, 0.3), wrt=1))
    assert type(gP) is type(stack[0])
    first, items = _fields(gP)
    assert first == pytest.approx(numeric_grad(lambda w: f(_with_first_field(P, w), 0.3),
                                               (_fields(P)[0],)))
    assert list(items) == pytest.approx(list(_fields(stack[0])[1]))
