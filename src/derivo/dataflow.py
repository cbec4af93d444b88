"""Data flow over structured statements: the one place that knows program order.

derivo's trees have no goto: control moves through ``if``, ``for`` and
``while`` (with ``break`` and ``continue``), ``return`` and ``raise``.  Both
sweeps below follow exactly those edges:

:class:`Forward`
    carries a state from the top of a block down, joins it where branches
    meet and iterates a loop's head to a fixpoint (the state before the first
    trip joined with the states its trips end, or ``continue``, with).  A loop
    is left from its head (the test fails, the items run out) and by its
    ``break`` statements; code after a ``return`` or a ``raise`` is not reached.
:class:`Backward`
    carries what is needed below a statement up to above it (liveness is the
    example: :func:`live_before`), with ``break`` needing what is needed after
    its loop and ``continue`` what is needed at its head.

An analysis subclasses one and says what a simple statement does to the
state (``simple``) and, where it must, what a compound statement's header
reads (``enter``).  States are values (frozensets, tuples): a sweep never
changes one in place (a forward sweep may change a copy of its own through a
run of simple statements: see :meth:`Forward.straight`).  :func:`after` and
:func:`before` name the code that may
run after, or must have run before, a statement, by these same edges.
"""

import collections

from . import syntax as S

LOOPS = (S.For, S.While)
_ENDS = (S.Return, S.gast.Raise)
#: The statements that move control elsewhere than to the next one
_CONTROL = (S.If, *LOOPS, S.Break, S.Continue, *_ENDS)


class Exits:
    """The states control leaves a block with: falling through its end (None
    when it never does), by ``break`` and by ``continue`` (None when none)."""

    def __init__(self, fall, breaks=None, continues=None):
        self.fall, self.breaks, self.continues = fall, breaks, continues


class Forward:
    """A forward sweep; subclass and define :meth:`simple` and :meth:`join`."""

    def simple(self, stmt, state):
        """The state after a statement that is not a branch, a loop or a jump."""
        return state

    def straight(self, stmts, state):
        """The state after ``stmts``, statements that are not branches, loops or
        jumps, run one after the other (each :meth:`at`, then :meth:`simple`).
        A sweep whose states grow with the function may instead change a copy of
        ``state`` of its own in place, one copy for the whole run (copying per
        statement costs the square of the run's length); it then calls no
        :meth:`at`."""
        for stmt in stmts:
            self.at(stmt, state)
            state = self.simple(stmt, state)
        return state

    def join(self, one, other):
        """The state where paths with these states meet."""
        return one | other

    def enter(self, stmt, state):
        """The state after a branch or a loop evaluates its test or iterable
        (on every trip, for a loop's test)."""
        return state

    def enter_body(self, loop, state):
        """The state at the top of a loop's body, given the state at its head
        (a ``for`` loop has just assigned its target)."""
        return state

    def end_trip(self, loop, state):
        """The state a trip of ``loop`` ends with (falling through its body, by
        ``continue`` or by ``break``), given the state at that end."""
        return state

    def leave(self, stmt, state):
        """The state control leaves a branch or a loop with (after it, or, from a
        branch, at a ``break`` or ``continue`` inside it), given the joined state
        of the paths that leave it so."""
        return state

    def _left(self, stmt, state):
        return None if state is None else self.leave(stmt, state)

    def _ended(self, loop, state):
        return None if state is None else self.end_trip(loop, state)

    def stop(self, stmt, state):
        """A ``return`` or a ``raise`` ends the paths that reach it."""

    def at(self, stmt, state):
        """Called with each statement and the state control reaches it with."""

    def meet(self, one, other):
        if one is None:
            return other
        return one if other is None else self.join(one, other)

    def run(self, block, state):
        """The :class:`Exits` of ``block`` entered with ``state``."""
        breaks = continues = None
        straight = []  # the statements since the last that moves control elsewhere
        for stmt in block:
            if not isinstance(stmt, _CONTROL):
                straight.append(stmt)
                continue
            state, straight = self.straight(straight, state), []
            self.at(stmt, state)
            if isinstance(stmt, S.If):
                state = self.enter(stmt, state)
                then, other = self.run(stmt.body, state), self.run(stmt.orelse, state)
                breaks = self.meet(breaks, self._left(stmt, self.meet(then.breaks, other.breaks)))
                continues = self.meet(continues, self._left(
                    stmt, self.meet(then.continues, other.continues)))
                state = self._left(stmt, self.meet(then.fall, other.fall))
                if state is None:
                    return Exits(None, breaks, continues)
            elif isinstance(stmt, LOOPS):
                state = self.loop(stmt, state)
            elif isinstance(stmt, S.Break):
                return Exits(None, self.meet(breaks, state), continues)
            elif isinstance(stmt, S.Continue):
                return Exits(None, breaks, self.meet(continues, state))
            else:  # a return or a raise
                self.stop(stmt, self.simple(stmt, state))
                return Exits(None, breaks, continues)
        return Exits(self.straight(straight, state), breaks, continues)

    def loop(self, loop, state):
        """The state after ``loop``: its head iterated to a fixpoint."""
        if isinstance(loop, S.For):
            state = self.enter(loop, state)
        head, breaks = state, None
        while True:
            tested = self.enter(loop, head) if isinstance(loop, S.While) else head
            trip = self.run(loop.body, self.enter_body(loop, tested))
            breaks = self._ended(loop, trip.breaks)
            back = self.meet(head, self._ended(loop, self.meet(trip.fall, trip.continues)))
            if back == head:
                break
            head = back
        exit = self.enter(loop, head) if isinstance(loop, S.While) else head
        orelse = getattr(loop, "orelse", None)
        if orelse:
            exit = self.run(orelse, exit).fall
        return self.leave(loop, self.meet(exit, breaks))


class Backward:
    """A backward sweep; subclass and define :meth:`simple` (and :meth:`join`)."""

    def __init__(self):
        # (needed at the head, needed after) of each loop around, innermost last
        self.loops = []

    def simple(self, stmt, after):
        """What is needed before a statement that is not a branch, a loop or a
        jump, given what is needed after it."""
        return after

    def join(self, one, other):
        return one | other

    def header(self, stmt, after):
        """What is needed before a branch's test or a loop's head, given what
        is needed after it: the names it reads too."""
        return after

    def run(self, block, after):
        """What is needed before ``block``, given what is needed after it."""
        for stmt in reversed(block):
            after = self.statement(stmt, after)
        return after

    def statement(self, stmt, after):
        if isinstance(stmt, S.If):
            return self.header(stmt, self.join(self.run(stmt.body, after),
                                               self.run(stmt.orelse, after)))
        if isinstance(stmt, LOOPS):
            return self.loop(stmt, after)
        if isinstance(stmt, S.Break):
            return self.loops[-1][1]
        if isinstance(stmt, S.Continue):
            return self.loops[-1][0]
        if isinstance(stmt, _ENDS):
            return self.simple(stmt, self.ended())
        return self.simple(stmt, after)

    def ended(self):
        """What is needed where control leaves the function."""
        return frozenset()

    def loop(self, loop, after):
        """What is needed at the head of ``loop``, iterated to a fixpoint."""
        orelse = getattr(loop, "orelse", None)
        exit = self.run(orelse, after) if orelse else after
        head = self.header(loop, exit)
        while True:
            self.loops.append((head, after))
            trip = self.body(loop, self.run(loop.body, head))
            self.loops.pop()
            grown = self.join(head, self.header(loop, trip) if isinstance(loop, S.While)
                              else trip)
            if grown == head:
                return head
            head = grown

    def body(self, loop, needed):
        """What is needed at a loop's head for what its body needs at its top
        (a ``for`` loop's target is assigned there)."""
        return needed


class _Liveness(Backward):
    def __init__(self, reads, writes):
        super().__init__()
        self.reads, self.writes = reads, writes

    def simple(self, stmt, after):
        return (after - self.writes(stmt)) | self.reads(stmt)

    def header(self, stmt, after):
        head = stmt.test if isinstance(stmt, (S.If, S.While)) else stmt.iter
        return after | self.reads(head)

    def body(self, loop, needed):
        return needed - self.writes(loop.target) if isinstance(loop, S.For) else needed


def live_before(block, live_after, reads, writes):
    """The names read, before they are assigned again, by what runs from the top
    of ``block`` on, given those live after it; ``reads(node)`` and
    ``writes(node)`` are the names a statement (or a test, an iterable, a
    target) reads and surely assigns."""
    return _Liveness(reads, writes).run(block, frozenset(live_after))


class _Recorded(_Liveness):
    def __init__(self, reads, writes):
        super().__init__(reads, writes)
        self.after = {}

    def statement(self, stmt, after):
        self.after[id(stmt)] = after  # a loop's last pass runs with its final head
        return super().statement(stmt, after)


def live_after_each(body, reads, writes):
    """{id(statement): the names live right after it}, for every statement of
    the function ``body``, in one sweep (see :func:`live_before`)."""
    liveness = _Recorded(reads, writes)
    liveness.run(body, frozenset())
    return liveness.after


def in_order(body):
    """Every statement of ``body``, nested ones too, in the order they are written."""
    for stmt in body:
        yield stmt
        for field in ("body", "orelse"):
            nested = getattr(stmt, field, None)
            if isinstance(nested, list):
                yield from in_order(nested)


def live_after(body, stmt, reads, writes):
    """The names live right after ``stmt``, somewhere in the function ``body``:
    read before being assigned again by the code that may run next (in a loop,
    the rest of its trip and the trips after)."""
    path = enclosing(body, stmt)
    if path is None:
        return frozenset()
    liveness = _Liveness(reads, writes)
    live = frozenset()  # live after the statement that holds this level's block
    owner = None
    for block, index in path:
        if isinstance(owner, LOOPS) and block is owner.body:
            head = liveness.loop(owner, live)
            liveness.loops.append((head, live))
            live = head
        live = liveness.run(block[index + 1:], live)
        owner = block[index]
    return live


def enclosing(body, stmt):
    """[(block, index)] from ``body`` down to the block holding ``stmt``: the
    position of each compound statement on the way, then of ``stmt``; None when
    ``stmt`` is not in ``body``."""
    for index, inner in enumerate(body):
        if inner is stmt:
            return [(body, index)]
        for field in ("body", "orelse"):
            nested = getattr(inner, field, None)
            if isinstance(nested, list) and nested:
                found = enclosing(nested, stmt)
                if found is not None:
                    return [(body, index)] + found
    return None


def state_before(sweep, body, target, state):
    """The state the :class:`Forward` ``sweep`` has each time control reaches the
    statement ``target`` in ``body`` entered with ``state``, joined; None when
    it never does."""
    seen = []
    sweep.at = lambda stmt, reached: seen.append(reached) if stmt is target else None
    try:
        sweep.run(body, state)
    finally:
        del sweep.at
    found = None
    for each in seen:
        found = sweep.meet(found, each)
    return found


def reached(start, edges):
    """``start`` and every name reached from it along ``edges``, pairs (from a
    name in the first set, to the names of the second)."""
    following = collections.defaultdict(list)  # name -> the targets of its edges
    for sources, targets in edges:
        for name in sources:
            following[name].append(targets)
    reached, todo = set(start), list(start)
    while todo:  # each name once: linear in the edges, whatever their order
        for targets in following.get(todo.pop(), ()):
            fresh = targets - reached
            reached |= fresh
            todo += fresh
    return reached
