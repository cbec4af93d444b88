"""Checkpointed loops at run time: keep a few loop states, recompute the rest.

Generated code with ``loops="checkpoint"`` runs a loop through
:func:`checkpointed_for` or :func:`checkpointed_while`, which call the loop's
body (outlined by ``derivo.outline`` as a step function) once per trip, keep
at most ``slots`` states, and push a :class:`Tape` on the generated function's
stack.  The reverse sweep pops the tape and calls :meth:`Tape.reverse` with the
step's VJP, which walks the trips backwards, recomputing each state it needs
from the nearest kept one.

Counting as chapter 8.5 of the AD textbook does (calls of the step, the last
one excluded since only the VJP needs no s_K), the schedules cost:

``revolve``
    the binomial schedule (treeverse): exactly the optimum C*(K, S) of
    Eq. 8.3, C*(K, S) = r K - binom(S + r, S + 1) where r is the least integer
    with binom(S + r, S) >= K.
``halving``
    recursive halving: C(K) = 2 C(K/2) + K/2, needing log2 K slots.
online (``while`` loops)
    the trip count is unknown while the loop runs: the tape keeps every
    state until ``slots`` are taken, then thins them to every other one as
    the loop goes on, using about two thirds of the slots; the rest serve the
    reverse sweep, which runs the optimal schedule between kept states.

A state is copied when kept if it is a NumPy array or a list, since the loop
may write into it.
"""

from math import comb

import numpy as np


def repetitions(steps, slots):
    """The least r with binom(slots + r, slots) >= steps: how many times the
    busiest step runs in the optimal schedule."""
    r = 0
    while comb(slots + r, slots) < steps:
        r += 1
    return r


def optimal_cost(steps, slots):
    """C*(K, S): calls of the step the optimal schedule makes to reverse K
    steps keeping S states (the initial state included)."""
    if steps <= 1:
        return 0
    if slots == 1:
        return steps * (steps - 1) // 2
    r = repetitions(steps, slots)
    return r * steps - comb(slots + r, slots + 1)


def optimal_split(steps, slots):
    """Where the optimal schedule keeps its next state: a split l reaching the
    minimum of Eq. 8.3, C*(K - l, S - 1) + C*(l, S) + l."""
    r = repetitions(steps, slots)
    return max(1, steps - comb(slots - 1 + r, slots - 1),
               comb(slots + r - 2, slots) if r >= 2 else 1)


def halving_split(steps, slots):
    return steps // 2


SCHEDULES = {"revolve": optimal_split, "halving": halving_split}

# What the last reversed loop did, for benchmarks and tests: its trips, slots,
# calls of the step in the primal loop before its last trip (forward_steps)
# and in the reverse sweep (recomputed_steps; the two sum to what Eq. 8.3
# counts), and the most states it kept at once.
LAST_RUN = {}


def checkpointed(iterable, checkpoints=None, schedule="revolve"):
    """Mark a ``for`` loop for checkpointing in reverse mode::

        for _ in derivo.checkpointed(range(steps), checkpoints=10):

    keeps at most 10 loop states, whatever ``loops=`` says.  Run as plain
    Python, this returns ``iterable`` itself.
    """
    return iterable


def checkpointed_for(push, step, iterations, state, invariants, slots=None,
                     schedule="revolve"):
    """Run ``state = step(item, *state, *invariants)`` for each item of
    ``iterations``, keeping states for :meth:`Tape.reverse`; return the final state.

    Without ``slots``, a loop of K trips keeps ceil(log2 K) states (at least 2).
    """
    steps = len(iterations)
    if slots is None:
        slots = max(2, (steps - 1).bit_length())
    tape = Tape(step, iterations, state, invariants, slots, SCHEDULES[schedule])
    if push is not None:
        push(tape)
    return tape.output(tape.run_counted(state, steps))


def checkpointed_while(push, test, step, state, invariants, slots=None):
    """Run ``state = step(*state, *invariants)`` while ``test(*state, *invariants)``,
    keeping at most ``slots`` states (20 without it) whatever the trip count."""
    tape = Tape(step, None, state, invariants, slots or 20, optimal_split)
    if push is not None:
        push(tape)
    return tape.output(tape.run_online(test, state))


def _zero_like(value):
    return np.zeros(np.shape(value)) if isinstance(value, np.ndarray) else 0.0


def _kept(state):
    """A copy of a state the loop cannot write into."""
    return tuple(v.copy() if isinstance(v, (np.ndarray, list)) else v for v in state)


class Tape:
    """The states a checkpointed loop kept, and how to reverse it."""

    def __init__(self, step, iterations, state, invariants, slots, split):
        if not isinstance(slots, int) or slots < 1:
            raise ValueError("a checkpointed loop needs at least one slot, got {!r}"
                             .format(slots))
        self.step = step
        self.iterations = iterations  # None for a while loop
        self.single = len(state) == 1  # the step takes and returns a bare value
        self.invariants = invariants
        self.slots = slots
        self.split = split
        self.steps = 0
        self.kept = []          # (trip index, state), the initial state first
        self.last = None        # the state before the last trip, for its VJP
        self.forward_steps = 0  # calls of the step before the last trip
        self.recomputed_steps = 0  # ... made again by the reverse sweep
        self.held = self.most_held = 0  # kept states in memory, now and at most

    def output(self, state):
        return state[0] if self.single else state

    def call_step(self, args):
        result = self.step(*args, *self.invariants)
        return (result,) if self.single else result

    # --- forward --------------------------------------------------------------

    def advance(self, state, start, count):
        """The state ``count`` trips after ``state``, the state at trip ``start``."""
        if self.iterations is None:
            for _ in range(count):
                state = self.call_step(state)
        else:
            iterations = self.iterations
            for index in range(start, start + count):
                state = self.call_step((iterations[index],) + state)
        return state

    def run_counted(self, state, steps):
        """The primal loop, which is also the schedule's first descent: it keeps
        the states the reverse sweep will start from again."""
        self.steps = steps
        if steps == 0:
            return state
        # On a copy: the step may write into its state, never into the caller's arrays.
        state = _kept(state)
        self.kept = [(0, _kept(state))]
        start, length, slots = 0, steps, self.slots
        while length > 1 and slots > 1:
            split = self.split(length, slots)
            state = self.advance(state, start, split)
            start, length, slots = start + split, length - split, slots - 1
            self.kept.append((start, _kept(state)))
        self.most_held = len(self.kept)
        state = self.advance(state, start, length - 1)
        self.last = _kept(state)
        self.forward_steps = steps - 1
        return self.advance(state, steps - 1, 1)

    def run_online(self, test, state):
        """The primal ``while`` loop: keep every state until the slots run out,
        then thin the kept ones to every other one whenever two thirds of the
        slots are taken, so they always span the trips made so far."""
        state = _kept(state)
        kept = [(0, _kept(state))]
        self.most_held = 1
        budget = self.slots
        thinned = max(2, (2 * self.slots + 2) // 3)
        spacing, trips, previous = 1, 0, None
        while test(*state, *self.invariants):
            if trips and trips % spacing == 0 and self.slots > 1:
                if len(kept) >= budget:
                    while len(kept) >= thinned:
                        kept = kept[::2]
                        spacing *= 2
                    budget = thinned
                if trips % spacing == 0:
                    kept.append((trips, _kept(state)))
                    self.most_held = max(self.most_held, len(kept))
            previous = state
            state = self.call_step(state)
            trips += 1
        self.steps = trips
        if trips:
            if kept[-1][0] == trips - 1:
                kept.pop()  # the same state as self.last
            self.last = _kept(previous)
            self.forward_steps = trips - 1
        self.kept = kept
        return state

    # --- reverse --------------------------------------------------------------

    def reverse(self, vjp, seeds, invariants=()):
        """The adjoints of the loop's inputs from those of its outputs (``seeds``).

        ``vjp(seed, *step arguments)`` is the step's VJP: it returns a tuple, the
        adjoints of the state variables, then those of the invariants at the
        positions ``invariants``.  So does this method (a bare value for just
        one), with the invariants' adjoints summed over the trips.
        """
        self.vjp = vjp
        self.totals = tuple(_zero_like(self.invariants[i]) for i in invariants)
        self.seeds = (seeds,) if self.single else seeds
        if self.steps:
            self.adjoint_step(self.steps - 1, self.last)
            # Below each kept state, the trips up to the next one, reversed with
            # the slots not taken by the kept states before it.
            ends = [start for start, _ in self.kept[1:]] + [self.steps - 1]
            for index in range(len(self.kept) - 1, -1, -1):
                start, state = self.kept[index]
                self.held = index + 1
                self.reverse_range(start, ends[index] - start, self.slots - index, state)
        result = self.seeds + self.totals
        self.kept = self.last = self.vjp = self.seeds = None
        LAST_RUN.update(steps=self.steps, slots=self.slots, forward_steps=self.forward_steps,
                        recomputed_steps=self.recomputed_steps, most_held=self.most_held)
        return result[0] if len(result) == 1 else result

    def reverse_range(self, start, length, slots, state):
        """Reverse trips start .. start + length - 1 from ``state``, the state at
        ``start``, keeping at most ``slots`` states (``state`` included)."""
        if length == 1:
            self.adjoint_step(start, state)
        elif length > 1 and slots <= 1:
            for offset in range(length - 1, -1, -1):
                self.adjoint_step(start + offset, self.recompute(state, start, offset))
        elif length > 1:
            split = self.split(length, slots)
            middle = self.recompute(state, start, split)
            self.held += 1
            self.most_held = max(self.most_held, self.held)
            self.reverse_range(start + split, length - split, slots - 1, middle)
            self.held -= 1
            self.reverse_range(start, split, slots, state)

    def recompute(self, state, start, count):
        """The state ``count`` trips after the kept ``state``, which stays as it is."""
        self.recomputed_steps += count
        return self.advance(_kept(state), start, count)

    def adjoint_step(self, index, state):
        """Take the seeds from after trip ``index`` to before it."""
        seed = self.seeds[0] if self.single else self.seeds
        args = state if self.iterations is None else (self.iterations[index],) + state
        result = self.vjp(seed, *_kept(args), *self.invariants)
        count = len(self.seeds)
        self.seeds = result[:count]
        invariants = result[count:]
        self.totals = tuple(a + b for a, b in zip(self.totals, invariants))

