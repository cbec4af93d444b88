"""Checkpointed loops run by compiled code (``backend="numba"``).

The numba backend rewrites the generated code's call of
:func:`derivo.checkpoints.checkpointed_for` and its tape's ``reverse`` into
calls of :func:`checkpoint_forward` and :func:`checkpoint_reverse`, and those
of :func:`derivo.checkpoints.checkpointed_while` into :func:`online_forward`
and :func:`online_reverse`, which numba compiles together with the generated
code (each specialised to the loop's ``trips`` function and VJP, passed as
first-class functions).  They run the schedules of
:class:`derivo.checkpoints.Tape`: for counted loops revolve, halving and
segments, for ``while`` loops the online one (``Tape.run_online``, its choice
of the states to reverse from, revolve's splits trip by trip), the same
states kept and so the same step counts, with the kept states in a list of
``slots`` state tuples allocated once and their trip numbers in a list of
integers: the tape is a tuple the generated code keeps on a typed stack.  The
recursion of ``Tape.reverse_kept`` is a loop over the kept states, the deepest
one last.

The functions are plain Python as well (tests run them without numba); the
few operations on tuples of any length numba types only with constant
indices (:func:`state_of`, :func:`taken`, ...) get numba implementations
written out for each length (:func:`register`).
"""

from .checkpoints import (fewer_repetitions, halving_split, optimal_cost, optimal_split, repetitions,
                          segment_length)


def checkpoint_forward(trips, iterations, state, invariants, slots, schedule_code):
    """The primal loop over ``iterations`` through ``trips(items, *state,
    *invariants)`` (it returns the state, a bare value for one variable),
    keeping the states the reverse sweep starts from: (the final state as the
    generated code assigns it, the tape).  ``slots`` 0: ceil(log2 K), at least
    2; ``schedule_code``: 0 revolve, 1 halving, 2 segments."""
    steps = len(iterations)
    if slots == 0:
        slots = max(2, bit_length(steps - 1))
    unit = segment_length(steps, slots) if schedule_code == 2 and steps > 1 else 1
    budget = slots - unit + 1
    kept = [state] * budget
    starts = [0] * budget
    last = state
    count = 0
    if steps > 0:
        count = 1
        start, length, free = 0, -(-steps // unit), budget
        r = repetitions(length, free)
        while length > 1 and free > 1:
            split = split_of(schedule_code, length, free, r)
            state = run(trips, iterations, state, invariants, start * unit,
                        min((start + split) * unit, steps))
            start, length, free = start + split, length - split, free - 1
            if schedule_code != 1:
                r = fewer_repetitions(length, free, r)
            kept[count] = state
            starts[count] = start
            count += 1
        state = run(trips, iterations, state, invariants, start * unit,
                    (start + length - 1) * unit)
        last = state
        state = run(trips, iterations, state, invariants, (start + length - 1) * unit, steps)
    shape = (steps, slots, unit, budget, schedule_code, count)
    return bare_if_one(state), (shape, kept, starts, last, iterations, invariants)


def split_of(schedule_code, length, free, r):
    if schedule_code == 1:
        return halving_split(length, free)
    return optimal_split(length, free, r)


def bit_length(n):
    bits = 0
    while n > 0:
        n >>= 1
        bits += 1
    return bits


def run(trips, iterations, state, invariants, first, stop):
    """The state after trips first .. stop - 1 from ``state``, the one at ``first``."""
    if stop <= first:
        return state
    return state_of(trips(items_of(iterations, first, stop), *state, *invariants), state)


def checkpoint_reverse(tape, trips, segment_vjp, seeds, totals):
    """The adjoints of :func:`reversed_counting`, without its count."""
    return reversed_counting(tape, trips, segment_vjp, seeds, totals)[0]


def reversed_counting(tape, trips, segment_vjp, seeds, totals):
    """(the adjoints, the trips the reverse sweep recomputed) of the loop of
    ``tape`` (what :func:`checkpoint_forward` returned with the final state).
    The adjoints of the loop's state before it (then the invariants', ``totals``
    summed over the trips) from ``seeds``, those after it, a bare value for one
    state variable (and so is the result, for one adjoint), with
    ``segment_vjp(seed, items, *state, *invariants)``, the VJP of a segment of
    trips."""
    shape, kept, starts, last, iterations, invariants = tape
    steps, slots, unit, budget, schedule_code, count = shape
    seeds = as_tuple(seeds)
    if steps == 0:
        return bare_if_one(seeds + totals), 0
    units = -(-steps // unit)
    recomputed = 0
    seeds, totals, extra = segment(segment_vjp, iterations, invariants, seeds, totals,
                                   units - 1, 1, last, unit, steps)
    recomputed += extra
    end, held = units - 1, count
    while held > 0:
        start, state = starts[held - 1], kept[held - 1]
        length = end - start
        free = budget - (held - 1)
        if length <= 0:  # a state kept where the units left to reverse end
            held -= 1
            continue
        if length > 1 and free > 1 and not (schedule_code != 1 and
                                            length * unit <= free + unit):
            # Keep the state at the split, deeper; reverse the units after it first.
            split = split_of(schedule_code, length, free, repetitions(length, free))
            kept[held] = run(trips, iterations, state, invariants, start * unit,
                             min((start + split) * unit, steps))
            recomputed += min((start + split) * unit, steps) - start * unit
            starts[held] = start + split
            held += 1
            continue
        # Room for every state (or one unit): one segment.  One slot: each unit alone.
        first = start if free > 1 else end - 1
        if first > start:
            state = run(trips, iterations, state, invariants, start * unit, first * unit)
            recomputed += (first - start) * unit
        seeds, totals, extra = segment(segment_vjp, iterations, invariants, seeds, totals,
                                       first, end - first, state, unit, steps)
        recomputed += extra
        end = first
        if first == start:
            held -= 1
    return bare_if_one(seeds + totals), recomputed


def segment(segment_vjp, iterations, invariants, seeds, totals, start, count, state, unit,
            steps):
    """(seeds, totals, trips recomputed) after reversing ``count`` units from unit
    ``start``, from ``state``, the state there: one call of the segment VJP."""
    first = start * unit
    stop = min(first + count * unit, steps)
    result = segment_vjp(seed_of(seeds), items_of(iterations, first, stop), *state,
                         *invariants)
    seeds, totals = taken(result, seeds, totals)
    return seeds, totals, stop - first - 1


# --- while loops: the online schedule --------------------------------------------------

#: a request of trips no while loop reaches (one slot: the whole loop in one call)
UNBOUNDED = 2 ** 62


def online_forward(trips, state, invariants, slots):
    """The primal ``while`` loop through ``trips(count, *state, *invariants)`` (it
    runs at most ``count`` trips and returns how many it ran, then the state),
    keeping states as :meth:`derivo.checkpoints.Tape.run_online` does: every
    state until the ``slots`` are taken, then every other one, so that they span
    the trips made so far.  (The final state as the generated code assigns it,
    the tape); ``slots`` 0: 20."""
    if slots == 0:
        slots = 20
    kept = [state] * slots
    starts = [0] * slots
    count, spacing, total = 1, 1, 0
    while True:
        due = total > 0 and slots > 1 and total % spacing == 0
        candidate = state  # the state a trip runs from is kept once the trip ran
        request = spacing - total % spacing if slots > 1 else UNBOUNDED
        result = trips(request, *state, *invariants)
        done, state = result[0], result[1:]
        if done > 0 and due:
            if count == slots:  # thin the kept states to every other one
                for i in range(0, count, 2):
                    kept[i // 2], starts[i // 2] = kept[i], starts[i]
                count, spacing = (count + 1) // 2, spacing * 2
            if total % spacing == 0:
                kept[count], starts[count] = candidate, total
                count += 1
        total += done
        if done < request:
            break
    last, recomputed = kept[0], 0
    if total == 0:
        count = 0
    else:
        start, last = starts[count - 1], kept[count - 1]
        if start == total - 1:
            count -= 1
        else:  # the state before the last trip, from the last kept one
            last = ahead(trips, last, invariants, total - 1 - start)
            recomputed = total - 1 - start
        if count > 0:
            count = keep_best_roots(kept, starts, count, total - 1, slots)
    shape = (total, slots, count, recomputed)
    return bare_if_one(state), (shape, kept, starts, last, invariants)


def ahead(trips, state, invariants, count):
    """The state ``count`` trips after ``state`` (the loop runs them all)."""
    return trips(count, *state, *invariants)[1:]


def keep_best_roots(kept, starts, count, end, slots):
    """Keep, first in ``kept`` and ``starts``, the kept states
    :func:`derivo.checkpoints.best_roots` chooses to reverse trips 0 .. end - 1
    from (the same dynamic programming, the same ties); return how many."""
    # cost[i * slots + k]: the least cost of trips starts[i] .. end - 1 with the
    # state at starts[i] as the k-th chosen one; after: the next chosen (-1: none).
    cost = [0] * (count * slots)
    after = [-1] * (count * slots)
    for i in range(count - 1, -1, -1):
        for k in range(min(i, slots - 1) + 1):
            here = slots - k
            least, choice = optimal_cost(end - starts[i], here), -1
            if here > 1:
                for j in range(i + 1, count):
                    option = optimal_cost(starts[j] - starts[i], here) + cost[j * slots + k + 1]
                    if option < least:
                        least, choice = option, j
            cost[i * slots + k], after[i * slots + k] = least, choice
    i, k, chosen = 0, 0, 1
    while after[i * slots + k] >= 0:
        i, k = after[i * slots + k], k + 1
        kept[chosen], starts[chosen] = kept[i], starts[i]
        chosen += 1
    return chosen


def online_reverse(tape, trips, step_vjp, seeds, totals):
    """The adjoints of :func:`reversed_online`, without its count."""
    return reversed_online(tape, trips, step_vjp, seeds, totals)[0]


def reversed_online(tape, trips, step_vjp, seeds, totals):
    """(the adjoints, the trips recomputed, those of :func:`online_forward`
    included) of the loop of ``tape``, as :meth:`derivo.checkpoints.Tape.reverse`
    reverses a ``while`` loop: its last trip from the state before it, then the
    trips before from the kept states, the deepest last, splitting each stretch
    the slots cannot hold whole as revolve does.  ``step_vjp(seed, *state,
    *invariants)`` is the VJP of one trip; seeds and totals as
    :func:`reversed_counting`'s."""
    shape, kept, starts, last, invariants = tape
    steps, slots, held, recomputed = shape
    seeds = as_tuple(seeds)
    if steps == 0:
        return bare_if_one(seeds + totals), 0
    seeds, totals = taken(step_vjp(seed_of(seeds), *last, *invariants), seeds, totals)
    end = steps - 1
    while held > 0:
        start, state = starts[held - 1], kept[held - 1]
        length = end - start
        free = slots + 1 - held
        if length > 1 and free > 1 and length > free + 1:
            # Keep the state at the split, deeper; reverse the trips after it first.
            split = optimal_split(length, free, repetitions(length, free))
            kept[held], starts[held] = ahead(trips, state, invariants, split), start + split
            recomputed += split
            held += 1
            continue
        held -= 1
        if length > 0 and free <= 1:  # one slot: each trip from this state alone
            for offset in range(length - 1, 0, -1):
                seeds, totals = taken(step_vjp(seed_of(seeds), *ahead(
                    trips, state, invariants, offset), *invariants), seeds, totals)
                recomputed += offset
            seeds, totals = taken(step_vjp(seed_of(seeds), *state, *invariants), seeds,
                                  totals)
        elif length > 0:  # room for the states of every trip: run them, then reverse
            states = [state] * length
            for i in range(1, length):
                states[i] = ahead(trips, states[i - 1], invariants, 1)
            for i in range(length - 1, -1, -1):
                seeds, totals = taken(step_vjp(seed_of(seeds), *states[i], *invariants),
                                      seeds, totals)
            recomputed += length - 1
        end = start
    return bare_if_one(seeds + totals), recomputed


# --- operations numba types only for each length of tuple (see register) -----------------

def items_of(iterations, first, stop):
    """``iterations[first:stop]`` (numba's: a range of a range, see register)."""
    return iterations[first:stop]


def state_of(value, like):
    """The state tuple of what ``trips`` returned: a bare value for one variable."""
    return (value,) if len(like) == 1 else value


def as_tuple(value):
    return value if isinstance(value, tuple) else (value,)


def bare_if_one(values):
    return values[0] if len(values) == 1 else values


def seed_of(seeds):
    """What a VJP takes as its seed: a bare value for one state variable."""
    return seeds[0] if len(seeds) == 1 else seeds


def taken(result, seeds, totals):
    """(the new seeds, the totals plus the invariants' adjoints) from a VJP's result."""
    count = len(seeds)
    return result[:count], tuple(a + b for a, b in zip(totals, result[count:]))


# --- numba implementations ---------------------------------------------------------------

def register(numba):
    """Give numba implementations of the tuple operations above, written out for
    each length of tuple (numba indexes a tuple of mixed types only by constants),
    and of the schedule's arithmetic (math.comb)."""
    import math
    import operator

    from numba import types
    from numba.extending import overload

    def written(source, name, **scope):
        exec(source, scope)
        return scope[name]

    @overload(state_of)
    def _state_of(value, like):
        if len(like) == 1:
            return lambda value, like: (value,)
        return lambda value, like: value

    @overload(as_tuple)
    def _as_tuple(value):
        if isinstance(value, types.BaseTuple):
            return lambda value: value
        return lambda value: (value,)

    @overload(bare_if_one)
    def _bare_if_one(values):
        if len(values) == 1:
            return lambda values: values[0]
        return lambda values: values

    @overload(seed_of)
    def _seed_of(seeds):
        if len(seeds) == 1:
            return lambda seeds: seeds[0]
        return lambda seeds: seeds

    @overload(taken)
    def _taken(result, seeds, totals):
        count = len(seeds)
        sums = "".join("totals[{0}] + result[{1}], ".format(i, count + i)
                       for i in range(len(totals)))
        return written("def impl(result, seeds, totals):\n"
                       "    return result[:{}], ({})\n".format(count, sums), "impl")

    @overload(operator.getitem)
    def _range_slice(iterations, part):
        # a range of a range, as Python's: the items of a segment, reversed(items)
        if isinstance(iterations, types.RangeType) and isinstance(part, types.SliceType):
            def impl(iterations, part):
                start, stop, step = part.indices(len(iterations))
                return range(iterations.start + start * iterations.step,
                             iterations.start + stop * iterations.step,
                             iterations.step * step)
            return impl
        return None

    overload(math.comb)(lambda n, k: _comb if all(
        isinstance(a, types.Integer) for a in (n, k)) else None)
    for function in (repetitions, fewer_repetitions, optimal_cost, optimal_split, halving_split,
                     segment_length, checkpoint_forward, checkpoint_reverse,
                     reversed_counting, split_of, bit_length, run, segment, items_of,
                     online_forward, ahead, keep_best_roots, online_reverse,
                     reversed_online):
        overload(function)(_itself(function))


def _itself(function):
    """A numba typer compiling ``function`` itself (its signature, as numba wants)."""
    def typer(*args):
        return function
    import inspect
    typer.__signature__ = inspect.signature(function)
    return typer


def _comb(n, k):
    """binom(n, k) for numba (math.comb's, as long as it fits int64)."""
    if k < 0 or k > n:
        return 0
    k = min(k, n - k)
    out = 1
    for i in range(k):
        out = out * (n - i) // (i + 1)
    return out
