"""Checkpointed loops at run time: keep a few loop states, recompute the rest.

Generated code with ``loops="checkpoint"`` runs a loop through
:func:`checkpointed_for` or :func:`checkpointed_while`.  They run the loop
(outlined by ``derivo.outline`` as a function running a given stretch of
trips) from one kept state to the next, keep at most ``slots`` states, and
push a :class:`Tape` on the generated function's stack.  The reverse sweep
pops the tape and calls :meth:`Tape.reverse` with the VJP of one trip, which
walks the trips backwards, recomputing each state it needs from the nearest
kept one.

Counting as section 8.5 of Blondel and Roulet, *The Elements of Differentiable
Programming* (2024), does (trips run, the last one excluded since the VJP needs
s_{K-1}, not s_K), the schedules cost:

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

import functools
import sys
from math import comb
from typing import Any, Iterable, Optional

import numpy as np

from .runtime import add_adjoints, owned, zero_gradient


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


@functools.lru_cache(maxsize=4096)
def optimal_split(steps, slots):
    """Where the optimal schedule keeps its next state: a split l reaching the
    minimum of Eq. 8.3, C*(K - l, S - 1) + C*(l, S) + l."""
    r = repetitions(steps, slots)
    return max(1, steps - comb(slots - 1 + r, slots - 1),
               comb(slots + r - 2, slots) if r >= 2 else 1)


def halving_split(steps, slots):
    """Recursive halving (Algorithm 7 of the chapter): the middle, whatever the slots."""
    return steps // 2


SCHEDULES = {"revolve": optimal_split, "halving": halving_split}

# What the last reversed loop did, for benchmarks and tests: its trips, slots,
# calls of the step in the primal loop before its last trip (forward_steps)
# and in the reverse sweep (recomputed_steps; the two sum to what Eq. 8.3
# counts), and the most states it kept at once.
LAST_RUN = {}


def checkpointed(iterable: Iterable[Any], checkpoints: Optional[int] = None,
                 schedule: str = "revolve") -> Iterable[Any]:
    """Mark a ``for`` loop for checkpointing in reverse mode::

        for _ in derivo.checkpointed(range(steps), checkpoints=10):

    keeps at most 10 loop states, whatever ``loops=`` says.  Run as plain
    Python, this returns ``iterable`` itself.
    """
    return iterable


def checkpointed_for(push, trips, iterations, state, invariants, slots=None,
                     schedule="revolve"):
    """Run a ``for`` loop over ``iterations`` through ``trips(items, *state,
    *invariants)``, which runs the trips of ``items`` and returns the state,
    keeping states for :meth:`Tape.reverse`; return the final state.

    Without ``slots``, a loop of K trips keeps ceil(log2 K) states (at least 2).
    """
    steps = len(iterations)
    if slots is None:
        slots = max(2, (steps - 1).bit_length())
    tape = Tape(trips, iterations, state, invariants, slots, SCHEDULES[schedule])
    if push is not None:
        push(tape)
    return tape.output(tape.run_counted(state, steps))


def checkpointed_while(push, trips, state, invariants, slots=None):
    """Run a ``while`` loop through ``trips(count, *state, *invariants)``, which
    runs at most ``count`` trips and returns how many it ran and the state,
    keeping at most ``slots`` states (20 without it) whatever the trip count."""
    tape = Tape(trips, None, state, invariants, slots or 20, optimal_split)
    if push is not None:
        push(tape)
    return tape.output(tape.run_online(state))


def _kept(state):
    """A copy of a state the loop cannot write into."""
    return tuple(map(owned, state))


class Tape:
    """The states a checkpointed loop kept, and how to reverse it."""

    def __init__(self, trips, iterations, state, invariants, slots, split):
        if not isinstance(slots, int) or slots < 1:
            raise ValueError("a checkpointed loop needs at least one slot, got {!r}"
                             .format(slots))
        self.trips = trips      # runs some trips of the loop (see checkpointed_for/_while)
        self.iterations = iterations  # None for a while loop
        self.single = len(state) == 1  # the step takes and returns a bare value
        # States are copied when kept only if the loop could write into them.
        self.keep = _kept if any(isinstance(v, (np.ndarray, list)) for v in state) else tuple
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

    # --- forward --------------------------------------------------------------

    def advance(self, state, start, count):
        """The state ``count`` trips after ``state``, the state at trip ``start``."""
        return self.run(state, start, count)[1]

    def run(self, state, start, count):
        """(trips run, state) after at most ``count`` trips from ``state``, the
        state at trip ``start`` (a while loop may end sooner)."""
        if self.iterations is not None:
            state = self.trips(self.iterations[start:start + count], *state, *self.invariants)
            return count, (state,) if self.single else state
        result = self.trips(count, *state, *self.invariants)
        return result[0], result[1:]

    def run_counted(self, state, steps):
        """The primal loop, which is also the schedule's first descent: it keeps
        the states the reverse sweep will start from again."""
        self.steps = steps
        if steps == 0:
            return state
        # On a copy: the step may write into its state, never into the caller's arrays.
        state = self.keep(state)
        self.kept = [(0, self.keep(state))]
        start, length, slots = 0, steps, self.slots
        while length > 1 and slots > 1:
            split = self.split(length, slots)
            state = self.advance(state, start, split)
            start, length, slots = start + split, length - split, slots - 1
            self.kept.append((start, self.keep(state)))
        self.most_held = len(self.kept)
        state = self.advance(state, start, length - 1)
        self.last = self.keep(state)
        self.forward_steps = steps - 1
        return self.advance(state, steps - 1, 1)

    def run_online(self, state):
        """The primal ``while`` loop: keep every state until the slots run out,
        then thin the kept ones to every other one whenever two thirds of the
        slots are taken, so they always span the trips made so far."""
        state = self.keep(state)
        kept = [(0, self.keep(state))]
        self.most_held = 1
        budget = self.slots
        thinned = max(2, (2 * self.slots + 2) // 3)
        spacing, trips = 1, 0
        while True:
            if trips and self.slots > 1:
                if len(kept) >= budget:
                    while len(kept) >= thinned:
                        kept = kept[::2]
                        spacing *= 2
                    budget = thinned
                if trips % spacing == 0:
                    kept.append((trips, self.keep(state)))
                    self.most_held = max(self.most_held, len(kept))
            # Up to the next place a state may be kept (with one slot, the end).
            request = spacing - trips % spacing if self.slots > 1 else sys.maxsize
            done, state = self.run(state, trips, request)
            trips += done
            if done < request:
                break
        self.steps = trips
        while kept and kept[-1][0] >= trips:
            kept.pop()  # the final state, where no trip starts
        if trips:
            self.forward_steps = trips - 1
            start, last = kept[-1]
            if start == trips - 1:
                kept.pop()
                self.last = last
            else:
                self.last = self.recompute(last, start, trips - 1 - start)
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
        self.totals = [zero_gradient(self.invariants[i]) for i in invariants]
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
        result = self.seeds + tuple(self.totals)
        self.kept = self.last = self.vjp = self.seeds = None
        LAST_RUN.update(steps=self.steps, slots=self.slots, forward_steps=self.forward_steps,
                        recomputed_steps=self.recomputed_steps, most_held=self.most_held)
        return result[0] if len(result) == 1 else result

    def reverse_range(self, start, length, slots, state):
        """Reverse trips start .. start + length - 1 from ``state``, the state at
        ``start``, keeping at most ``slots`` states (``state`` included)."""
        if length == 1:
            self.adjoint_step(start, state)
        elif 1 < length <= slots and self.split is optimal_split:
            # Room for every state: the optimum keeps them all (C*(k, s) = k - 1).
            states = [state]
            for offset in range(length - 1):
                states.append(self.recompute(states[-1], start + offset, 1))
            self.most_held = max(self.most_held, self.held + length - 1)
            for offset in range(length - 1, -1, -1):
                self.adjoint_step(start + offset, states.pop())
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
        return self.advance(self.keep(state), start, count)

    def adjoint_step(self, index, state):
        """Take the seeds from after trip ``index`` to before it."""
        seed = self.seeds[0] if self.single else self.seeds
        args = state if self.iterations is None else (self.iterations[index],) + state
        result = self.vjp(seed, *self.keep(args), *self.invariants)
        count = len(self.seeds)
        self.seeds = result[:count]
        totals = self.totals
        for position in range(len(totals)):  # a list's adjoints add item by item
            totals[position] = add_adjoints(totals[position], result[count + position])

