"""Checkpointed loops at run time: keep a few loop states, recompute the rest.

Generated code with ``loops="checkpoint"`` runs a loop through
:func:`checkpointed_for` or :func:`checkpointed_while`.  They run the loop
(outlined by ``derivo.outline`` as a function running a given stretch of
trips) from one kept state to the next, keep at most ``slots`` states, and
push a :class:`Tape` on the generated function's stack.  The reverse sweep
pops the tape and calls :meth:`Tape.reverse` with the VJP of that function,
derivo's ordinary stack-reversed code for a stretch of trips (a *segment*),
which walks the trips backwards, recomputing each state it needs from the
nearest kept one, and reverses each stretch whose states all fit in the
slots in one call (a ``while`` loop: with the VJP of one trip, trip by trip).
With ``backend="numba"`` compiled copies of these schedules run instead
(:mod:`derivo.numba_checkpoints`): a change to one here is made there too, as
tests/test_numba_backend.py checks (the same step counts).

Counting as section 8.5 of Blondel and Roulet, *The Elements of Differentiable
Programming* (2024), does (trips run, the last one excluded since the VJP needs
s_{K-1}, not s_K), the schedules cost:

``revolve``
    the binomial schedule (treeverse): exactly the optimum C*(K, S) of
    Eq. 8.3, C*(K, S) = r K - binom(S + r, S + 1) where r is the least integer
    with binom(S + r, S) >= K.
``halving``
    recursive halving: C(K) = 2 C(K/2) + K/2, needing log2 K slots.
``segments``
    the binomial schedule over segments of B trips (:func:`segment_length`),
    each reversed by one call of the VJP whose stack holds B - 1 states, so
    slots - B + 1 states are kept: a few percent more trips than C*(K, S),
    B times fewer calls.
online (``while`` loops)
    the trip count is unknown while the loop runs: the tape keeps every
    state until ``slots`` are taken, then thins them to every other one as
    the loop goes on.  When it ends, the reverse sweep starts its segments
    from the kept states that make the cheapest schedule (:func:`best_roots`)
    and drops the others, giving their slots to the schedules between them.

A state is copied when kept if it is a NumPy array or a list, since the loop
may write into it.  A state the schedule no longer needs is dropped at once,
so at most ``slots`` kept states (and the state before the last trip) are in
memory at any time, whatever the trip count.
"""

import sys
from math import comb
from typing import Any, Iterable, Optional

import numpy as np

from .runtime import add_adjoints, owned, zero_gradient


def repetitions(steps, slots):
    """The least r with binom(slots + r, slots) >= steps: how many times the
    busiest step runs in the optimal schedule."""
    if steps <= slots + 1:
        return 1 if steps > 1 else 0
    high = 2
    while comb(slots + high, slots) < steps:
        high *= 2
    low = high // 2  # binom(slots + low, slots) < steps <= binom(slots + high, slots)
    while high - low > 1:
        middle = (low + high) // 2
        if comb(slots + middle, slots) < steps:
            low = middle
        else:
            high = middle
    return high


def fewer_repetitions(steps, slots, enough):
    """repetitions(steps, slots), knowing that ``enough`` repetitions suffice
    (those of a problem containing this one): a search down from it."""
    while enough > 1 and comb(slots + enough - 1, slots) >= steps:
        enough -= 1
    return enough if steps > 1 else 0


def optimal_cost(steps, slots):
    """C*(K, S): calls of the step the optimal schedule makes to reverse K
    steps keeping S states (the initial state included)."""
    if steps <= 1:
        return 0
    if slots == 1:
        return steps * (steps - 1) // 2
    r = repetitions(steps, slots)
    return r * steps - comb(slots + r, slots + 1)


def optimal_split(steps, slots, r=None):
    """Where the optimal schedule keeps its next state: a split l reaching the
    minimum of Eq. 8.3, C*(K - l, S - 1) + C*(l, S) + l (the least of them).
    ``r``: repetitions(steps, slots), when the caller knows it."""
    if r is None:
        r = repetitions(steps, slots)
    return max(1, steps - comb(slots - 1 + r, slots - 1),
               comb(slots + r - 2, slots) if r >= 2 else 1)


def halving_split(steps, slots, r=None):
    """Recursive halving (Algorithm 7 of the chapter): the middle, whatever the slots."""
    return steps // 2


SCHEDULES = {"revolve": optimal_split, "halving": halving_split, "segments": optimal_split}

#: What one call of a loop's generated functions costs beyond its trips, counted
#: in trips of a scalar loop body: the checkpointed pendulum's time beyond its
#: schedule's trips (benchmarks/loops.py), over its calls, is 11-15 trips a call.
CALL_COST = 12


def segment_length(steps, slots):
    """The trips of one segment of the ``segments`` schedule for ``steps`` trips
    and ``slots`` states: the binomial schedule over segments of B trips keeps
    slots - B + 1 states and reverses each segment in one call, its stack
    holding the other B - 1.  B minimises the trips the schedule runs plus
    CALL_COST per call (two calls a segment: running it up to a kept state,
    and its VJP)."""
    best, least = 1, -1
    for unit in range(1, max(1, slots - 1) + 1 if steps > 1 else 1):
        units = -(-steps // unit)
        cost = unit * optimal_cost(units, slots - unit + 1) + steps - units + \
            2 * CALL_COST * units
        if least < 0 or cost < least:  # (the least B of the cheapest; a loop numba compiles)
            best, least = unit, cost
    return best


def best_roots(starts, end, slots):
    """The kept states an online schedule reverses from: indices into ``starts``
    (the trips where kept states start, 0 first), for reversing trips 0 ..
    end - 1 with ``slots`` states.  Segment k, from the k-th chosen state to the
    next, is reversed with the slots the k states before it leave (slots - k),
    costing C*(its trips, slots - k); the choice minimises their sum, by
    dynamic programming from the last kept state back."""
    # cost[i, k]: the least cost of trips starts[i] .. end - 1 with the state at
    # starts[i] as the k-th chosen one; then, the next chosen one (None: none).
    cost = {}
    for i in range(len(starts) - 1, -1, -1):
        for k in range(min(i, slots - 1) + 1):
            here = slots - k
            options = [(optimal_cost(end - starts[i], here), None)]
            if here > 1:
                options += [(optimal_cost(starts[j] - starts[i], here) + cost[j, k + 1][0], j)
                            for j in range(i + 1, len(starts)) if (j, k + 1) in cost]
            cost[i, k] = min(options, key=lambda option: option[0])
    chosen, i, k = [0], 0, 0
    while cost[i, k][1] is not None:
        i, k = cost[i, k][1], k + 1
        chosen.append(i)
    return chosen


# What the last reversed loop did, for benchmarks and tests: its trips, slots,
# calls of the step in the primal loop before its last trip (forward_steps)
# and in the reverse sweep (recomputed_steps; the two sum to what Eq. 8.3
# counts), the most states it kept at once, the calls of its VJP, and the
# trips of a unit of the schedule (segments).
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
    unit = segment_length(steps, slots) if schedule == "segments" else 1
    tape = Tape(trips, iterations, state, invariants, slots, SCHEDULES[schedule], unit)
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
    """The states a checkpointed loop kept, and how to reverse it.

    The schedule counts in *units* of ``unit`` trips (1 but for the
    ``segments`` schedule); unit u starts at trip u * unit.  ``segmented``
    (a ``for`` loop): :meth:`reverse` takes the VJP of a segment of trips, not
    of one trip."""

    def __init__(self, trips, iterations, state, invariants, slots, split, unit=1):
        if not isinstance(slots, int) or slots < 1:
            raise ValueError("a checkpointed loop needs at least one slot, got {!r}"
                             .format(slots))
        self.trips = trips      # runs some trips of the loop (see checkpointed_for/_while)
        self.iterations = iterations  # None for a while loop
        self.single = len(state) == 1  # the loop's functions take and return a bare value
        # States are copied when kept only if the loop could write into them.
        self.copies = any(isinstance(v, (np.ndarray, list, dict)) for v in state)
        self.invariants = invariants
        self.slots = slots
        self.unit = unit
        self.budget = slots - unit + 1  # kept states; a segment's stack holds unit - 1
        self.split = split
        self.revolve = split is optimal_split
        self.segmented = iterations is not None
        self.steps = 0
        self.kept = []          # (unit index, state, r or None), the initial state first
        self.last = None        # the state before the last unit, for its VJP
        self.forward_steps = 0  # calls of the step before the last trip
        self.recomputed_steps = 0  # ... made again by the reverse sweep
        self.segments = 0       # calls of the VJP
        self.held = self.most_held = 0  # kept states in memory, now and at most

    def output(self, state):
        return state[0] if self.single else state

    def keep(self, state):
        """``state``, copied if the loop may write into it."""
        return _kept(state) if self.copies else state

    def span(self, start, count):
        """(first trip, trips) of ``count`` units from unit ``start``."""
        first = start * self.unit
        return first, min((start + count) * self.unit, self.steps) - first

    # --- forward --------------------------------------------------------------

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
        state = _kept(state) if self.copies else tuple(state)
        self.kept = [(0, self.keep(state), None)]
        start, length, slots = 0, -(-steps // self.unit), self.budget
        r = repetitions(length, slots)
        while length > 1 and slots > 1:
            split = self.split(length, slots, r)
            state = self.run(state, *self.span(start, split))[1]
            start, length, slots = start + split, length - split, slots - 1
            r = fewer_repetitions(length, slots, r) if self.revolve else None
            self.kept.append((start, self.keep(state), None))
        self.most_held = len(self.kept)
        state = self.run(state, *self.span(start, length - 1))[1]
        self.last = self.keep(state)
        self.forward_steps = steps - 1
        first, count = self.span(start + length - 1, 1)
        return self.run(state, first, count)[1]

    def run_online(self, state):
        """The primal ``while`` loop: keep every state until the slots run out,
        then thin the kept ones to every other one whenever they are all taken,
        so they always span the trips made so far.  A state is kept once the
        loop makes a trip from it (until then it is the one the loop goes on
        from, as the state before the last trip is at the end)."""
        state = _kept(state) if self.copies else tuple(state)
        kept = [(0, self.keep(state))]
        self.most_held = 1
        spacing, trips = 1, 0
        while True:
            due = trips and self.slots > 1 and trips % spacing == 0
            candidate = self.keep(state) if due else None
            # Up to the next place a state may be kept (with one slot, the end).
            request = spacing - trips % spacing if self.slots > 1 else sys.maxsize
            done, state = self.run(state, trips, request)
            if done and candidate is not None:
                if len(kept) == self.slots:
                    kept = kept[::2]
                    spacing *= 2
                if trips % spacing == 0:
                    kept.append((trips, candidate))
                    self.most_held = max(self.most_held, len(kept))
            del candidate
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
                self.last = self.recompute(last, start, trips - 1 - start)  # (unit: 1 trip)
            roots = best_roots([start for start, _ in kept], trips - 1, self.slots) \
                if kept else []
            kept = [kept[i] + (None,) for i in roots]
        self.kept = kept
        return state

    # --- reverse --------------------------------------------------------------

    def reverse(self, vjp, seeds, invariants=()):
        """The adjoints of the loop's inputs from those of its outputs (``seeds``).

        ``vjp(seed, items, *state, *invariants)`` is the VJP of ``trips``, from
        the adjoints after a segment of trips to those before it (a ``while``
        loop's: ``vjp(seed, *state, *invariants)``, the step's): it returns
        a tuple, the adjoints of the state variables, then those of the
        invariants at the positions ``invariants``.  So does this method (a
        bare value for just one), with the invariants' adjoints summed over
        the trips.
        """
        self.vjp = vjp
        self.totals = [zero_gradient(self.invariants[i]) for i in invariants]
        self.seeds = (seeds,) if self.single else seeds
        if self.steps:
            units = -(-self.steps // self.unit)
            last, self.last = self.last, None
            self.held = len(self.kept)
            self.segment(units - 1, 1, last, kept=False)
            del last
            self.reverse_kept(units - 1)
        result = self.seeds + tuple(self.totals)
        self.vjp = self.seeds = self.totals = None
        LAST_RUN.update(steps=self.steps, slots=self.slots, forward_steps=self.forward_steps,
                        recomputed_steps=self.recomputed_steps, most_held=self.most_held,
                        segments=self.segments, unit=self.unit)
        return result[0] if len(result) == 1 else result

    def reverse_kept(self, end):
        """Reverse units 0 .. end - 1 from the kept states, the deepest last: the
        units from the last one up to ``end``, with the slots the states before
        it leave, keeping one more state at each split of the schedule (the
        deepest, reversed first); once they are reversed, that state goes and
        ``end`` moves to its start.  The kept states are the schedule's only
        record (for revolve with ``r``, repetitions a split there can do with:
        those of a problem containing it), so nothing else is held per level.
        """
        kept, revolve, unit, free = self.kept, self.revolve, self.unit, self.budget + 1
        while kept:
            start, state, r = kept[-1]
            length = end - start
            slots = free - len(kept)
            self.held = len(kept)
            if length > 1 and slots > 1 and not (revolve and length * unit <= slots + unit):
                if revolve:
                    r = fewer_repetitions(length, slots, r or repetitions(length, slots))
                    kept[-1] = start, state, r
                split = self.split(length, slots, r)
                kept.append((start + split, self.recompute(state, start, split), r))
                if len(kept) > self.most_held:
                    self.most_held = len(kept)
                continue
            kept.pop()
            if length > 0 and slots <= 1:  # one slot: each unit from this state alone
                for offset in range(length - 1, 0, -1):
                    self.segment(start + offset, 1, self.recompute(state, start, offset),
                                 kept=False)
                self.segment(start, 1, state)
            elif length > 0:
                # Room for every state (the one the last trip runs from uncounted, as
                # the splits leave it): the optimum keeps them all, C*(k, s) = k - 1.
                self.segment(start, length, state)
            del state
            end = start

    def recompute(self, state, start, count):
        """The state ``count`` units after the kept ``state`` (the state at unit
        ``start``), which stays as it is."""
        first = start * self.unit
        count = min(first + count * self.unit, self.steps) - first
        self.recomputed_steps += count
        if self.copies:
            state = _kept(state)
        if self.iterations is None:
            return self.trips(count, *state, *self.invariants)[1:]
        state = self.trips(self.iterations[first:first + count], *state, *self.invariants)
        return (state,) if self.single else state

    def segment(self, start, count, state, kept=True):
        """Take the seeds from after ``count`` units from unit ``start`` to before
        them, from ``state``, the state at ``start`` (one of the kept states
        counted in ``held``, or with ``kept`` False one recomputed for this
        segment), keeping the states of the trips after the first (recomputed,
        as Eq. 8.3 counts): one call of the segment VJP, its stack holding
        them, or a list of them and a call of the step's VJP per trip.  The
        state the segment's last trip runs from is not counted in
        ``most_held``, as the state before the loop's last trip is not."""
        first = start * self.unit
        trips = min(first + count * self.unit, self.steps) - first
        self.recomputed_steps += trips - 1
        self.most_held = max(self.most_held, self.held + max(0, trips - 2 + (not kept)))
        if self.segmented:
            self.segments += 1
            seed = self.seeds[0] if self.single else self.seeds
            self.take(self.vjp(seed, self.iterations[first:first + trips], *state,
                               *self.invariants))
            return
        states = [state]
        for index in range(first, first + trips - 1):
            states.append(self.run(_kept(states[-1]) if self.copies else states[-1],
                                   index, 1)[1])
        while states:
            self.trip(states.pop())

    def trip(self, state):
        """Take the seeds from after a trip of a ``while`` loop to before it, from
        ``state``, the state it runs from: one call of the step's VJP (which
        copies on entry any array it writes into)."""
        self.segments += 1
        seed = self.seeds[0] if self.single else self.seeds
        self.take(self.vjp(seed, *state, *self.invariants))

    def take(self, result):
        """The seeds and the invariants' summed adjoints after a call of the VJP."""
        count = len(self.seeds)
        self.seeds = result[:count]
        if self.totals:  # a container's adjoints (a list's, a record's) add item by item
            self.totals = list(map(add_adjoints, self.totals, result[count:]))
