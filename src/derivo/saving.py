"""What the adjoint saves: which assignments push the value they overwrite,
which are undone instead, and which compound statements have a reverse.

The reverse sweep runs with every variable holding the value it had when the
statement being reversed ran.  Integer steps (``k += 1``) are undone instead,
and with ``loops="reversible"`` so is every update in a loop (``s *= c``
becomes ``s /= c`` in the reverse sweep) where the forward sweep finds the
undo exact (runtime.Undo saves s where not).  An assignment therefore saves the
value it overwrites (pushes it on the stack) exactly when some earlier
statement's adjoint reads that value: a forward data-flow of "read by an
adjoint since last written" decides it.  Loops and branches record what their
reverse needs (trip counts, branch tests) the same way; a ``while`` loop counted
by an integer step is reversed by undoing the step instead of keeping a trip
count.  The item of a loop over values (``row = X[i]``) is read again, not
saved.
"""

from . import dataflow, form
from . import syntax as S
from .errors import UnsupportedSyntax
from .ssa import is_append
from .statements import assigned_names, changed_in, is_item_write, names_of


class Saving:
    """What the reverse sweep of ``normalized`` saves (``loops``: the strategy of
    reverse mode), given its ``activity`` and its ``planner``'s plans:

    ``pushes``
        {id(statement): the names it saves before overwriting them}
    ``reversed``
        ids of the compound statements whose reverse does something
    ``init_none``
        names saved before any assignment on some path
    ``inverses``
        {id(x = x + e): (x, x - e)}, how the reverse undoes a statement
    ``undone``
        ids of the statements the reverse undoes instead of popping
    ``checked``
        ids of undone ``x = x + e`` whose undo is checked as it runs
    ``reloads``
        ids of ``row = X[i]`` the reverse loop runs again each trip
    ``counted``
        {id(while loop): the integer step counting its trips}
    """

    def __init__(self, normalized, loops, activity, planner, changed_by_call, memory=None):
        self.normalized = normalized
        self.memory = memory  # the ownership memory.Flow, where the function writes items
        self.changed_by_call = changed_by_call
        self.parsed = normalized.parsed
        self.loops = loops
        self.active = activity.active
        self.planner = planner
        self.checked = set()
        self._depth = 0  # how many loops are around the statement the data-flow is at
        self._compute()

    def _compute(self):
        tree = self.normalized.tree
        self.inverses = self._integer_steps(tree)
        self.counted = self._counted_loops(tree)
        needed = set()
        for stmt in S.walk(tree):
            needed |= self.planner.statement_reads(stmt)
        compounds = [s for s in S.walk(tree) if isinstance(s, (S.If, S.For, S.While))]
        restoring = set()  # ids of compounds reversed to give back what they save
        while True:
            self._find_reversed(tree, compounds, needed, restoring)
            self.pushes = {}
            self.init_none = set()
            self.undone = set()
            self.reloads = set()
            _Flow(self).run(tree.body, (frozenset(), frozenset(S.param_names(tree)),
                                        frozenset()))
            # a write saved for the memory an adjoint reads (see _save_for) is
            # given back by the reverse of each compound around it
            unrestored = {id(c) for c in compounds if id(c) not in self.reversed and
                          any(id(s) in self.pushes for s in S.walk(c))}
            if not unrestored:
                return
            restoring |= unrestored

    def _find_reversed(self, tree, compounds, needed, restoring):
        """The compounds with a reverse (``self.reversed``), and in place in
        ``needed`` the names their reverses read."""
        while True:
            self.reversed = {id(s) for s in compounds
                             if id(s) in restoring or self._has_reverse(s, needed)}
            grown = set(needed)
            for stmt in S.walk(tree):
                grown |= self._exit_reads(stmt)
            if grown == needed:
                return
            needed |= grown

    def _integer_steps(self, tree):
        """Statements ``k = k + c`` where k only ever holds integers.

        Their reverse undoes them (``k = k - c``, exact for integers) instead of
        saving k: loop counters cost no stack.  Returns {id(stmt): (k, inverse)}.
        """
        steps, others = {}, set()
        for stmt in S.walk(tree):
            if isinstance(stmt, S.For):
                others.add(stmt.target.id)
            if not isinstance(stmt, S.Assign):
                continue
            target, value = stmt.targets[0], stmt.value
            if not isinstance(target, S.Name):
                others |= set(assigned_names(stmt))
            elif _is_int(value):
                continue
            elif (isinstance(value, S.BinOp) and isinstance(value.op, (S.Add, S.Sub))
                  and isinstance(value.left, S.Name) and value.left.id == target.id
                  and _is_int(value.right)):
                steps[id(stmt)] = (target.id, _inverse(stmt))
            else:
                others.add(target.id)
        params = set(S.param_names(tree))
        return {key: step for key, step in steps.items()
                if step[0] not in others and step[0] not in params}

    def _counted_loops(self, tree):
        """Top-level ``while`` loops whose iterations an integer step counts:
        ``k += 1`` runs once in every iteration (before any jump) and nowhere
        else in the loop.  Their reverse runs ``while k != k0`` (k0: k before
        the loop), undoing the step, instead of keeping a trip counter.
        Returns {id(loop): step statement}."""
        counted = {}
        for loop in tree.body:
            if not isinstance(loop, S.While) or not loop.trips:
                continue
            for index, stmt in enumerate(loop.body[1:], start=1):
                if id(stmt) in self.inverses:
                    name = self.inverses[id(stmt)][0]
                    jumps = any(isinstance(n, (S.Break, S.Continue, S.gast.Raise))
                                for n in S.walk(loop.body[1:index]))
                    writes = [n for n in S.walk(loop.body) if isinstance(n, S.Name)
                              and isinstance(n.ctx, S.Store) and n.id == name]
                    if not jumps and len(writes) == 1:
                        counted[id(loop)] = stmt
                    break
        return counted

    def _undo(self, stmt, saved):
        """How the reverse sweep gives back what ``stmt`` overwrote, when it need
        not pop: an integer step, anything in a reversible loop, or None."""
        if id(stmt) in self.inverses and set(saved) <= {self.inverses[id(stmt)][0]}:
            return self.inverses[id(stmt)]  # (a later pass may find more to save)
        if self.loops != "reversible" or not self._depth:
            return None
        inverse = _inverse(stmt) if saved == assigned_names(stmt)[:1] else None
        if inverse is None:
            line = getattr(stmt, "lineno", None)
            users = sorted(set(saved) & self.parsed.local_names)  # not ssa's t1 or y1
            raise self.parsed.error(
                UnsupportedSyntax, stmt, "loops='reversible' cannot undo line {} ({!r}{}): "
                "only x += e, x -= e, x *= e and x /= e with e not reading x can be undone; "
                "use loops='stack' or loops='checkpoint'".format(
                    line, self.parsed.source_line(line),
                    ", which overwrites " + ", ".join(users) if users else ""),
                "reversible loop")
        # Floating point does not undo x + e by (x + e) - e in general: the forward
        # sweep checks, trip by trip, that it does, and saves x where not (runtime.Undo).
        self.checked.add(id(stmt))
        return saved[0], inverse

    def _has_reverse(self, compound, needed):
        if isinstance(compound, S.For) and compound.target.id in self.active:
            return True  # its reverse drops the target's adjoint (see reverse.Sweep.loop)
        for stmt in S.walk(compound.body + getattr(compound, "orelse", [])):
            if (isinstance(stmt, S.Assign) or is_append(stmt)) and \
                    set(assigned_names(stmt)) & (self.active | needed):
                return True
        return False

    def _exit_reads(self, stmt):
        """Names the reverse of a compound statement reads, at its exit."""
        if id(stmt) not in self.reversed:
            return set()
        if isinstance(stmt, S.If):
            return names_of(stmt.test)
        if id(stmt) in self.counted:
            return {self.inverses[id(self.counted[id(stmt)])][0]}
        reads = {stmt.trips} if stmt.trips else set()
        if isinstance(stmt, S.For):
            reads |= names_of(stmt.iter)
        return reads

    def _prepare_loop(self, loop, read):
        """Before the data-flow enters ``loop`` with ``read``: which items the
        reverse loop reads again, and whether it saves a for loop's target."""
        written = changed_in(loop.body).union(*(
            self.changed_by_call.get(id(node), ()) for node in S.walk(loop.body)))
        for position, stmt in enumerate(loop.body):
            # The reverse loop reads an item ``t = X[i]`` again at the top of each
            # trip instead of saving it, unless t is assigned again in the loop or
            # an adjoint before the loop needs its old value.
            if form.annotation(stmt, "item") or _item_read_again(loop, position, written):
                name = stmt.targets[0].id
                assignments = [n for n in S.walk(loop) if isinstance(n, S.Name)
                               and isinstance(n.ctx, S.Store) and n.id == name]
                if name not in read and len(assignments) == 1:
                    self.reloads.add(id(stmt))
                else:
                    self.reloads.discard(id(stmt))
        if isinstance(loop, S.For) and loop.target.id in read and id(loop) in self.reversed:
            self.pushes[id(loop)] = [loop.target.id]

    def _read_memory(self, stmt, names):
        """The abstract objects (see :class:`~derivo.memory.Flow`) whose memory
        the names ``names`` may refer to as ``stmt`` runs (a temporary the
        primal keeps for it: what its expression may refer to)."""
        if self.memory is None:
            return frozenset()
        plan = self.planner.plans.get(id(stmt))
        kept = {name: node for node in S.walk(stmt) for name in
                [plan.stored.get(id(node))] if name is not None} if plan is not None else {}
        return frozenset().union(*(self.memory.bases(kept.get(n, S.name(n)), stmt)
                                   for n in names))

    def _memory_read_by(self, stmt):
        """The abstract objects the reverse of ``stmt`` may read: those of the
        names it reads before the statement runs, and of those it reads as the
        statement left them (a result of it: what it allocates, or of what
        it reads, which it may be a view of).  The residuals of a call whose
        VJP comes in halves hold its arguments and what it returned."""
        after = self.planner.statement_reads_after(stmt)
        results = after & set(assigned_names(stmt))
        objects = self._read_memory(stmt, self.planner.statement_reads(stmt) | after - results)
        if (results or self.planner.in_halves(stmt)) and self.memory is not None:
            objects |= {("new", id(stmt))} | self._read_memory(stmt, names_of(stmt.value))
        return objects

    def _save_for(self, stmt, read, assigned, read_memory):
        """The data-flow's step over the assignment ``stmt``: record what it saves
        (or how its reverse undoes it), and change ``read`` and ``assigned``, sets
        of the data-flow's own, in place into what is read and assigned after it."""
        names = self.planner.stored(stmt) + assigned_names(stmt)
        read |= self.planner.statement_reads(stmt)
        if is_item_write(stmt) and self.memory is not None and \
                self.memory.written(stmt.targets[0].value.id, stmt) & read_memory:
            # An adjoint may read a view of (or an item of, a container holding)
            # the array written: the reverse gives the written part back in
            # place, so every name for that memory holds what its adjoint read.
            read.add(stmt.targets[0].value.id)
        saved = [n for n in names if n in read and
                 not (id(stmt) in self.reloads and n == stmt.targets[0].id)]
        counting = any(step is stmt for step in self.counted.values())
        undo = self._undo(stmt, saved) if saved or counting else None
        if undo is not None:
            self.inverses[id(stmt)] = undo
            self.undone.add(id(stmt))
            read |= names_of(undo[1]) - {undo[0]}  # the undo reads these
        elif saved:
            self.undone.discard(id(stmt))
            self.pushes[id(stmt)] = saved
            self.init_none |= set(saved) - assigned
        read -= set(names)
        read |= self.planner.statement_reads_after(stmt)
        if undo is not None:
            read.add(undo[0])  # the undo starts from the value this left
        elif saved and is_item_write(stmt):
            # x[i] = pop() writes into the array this wrote into, at the index
            # this wrote at: a later x = e or i = e must save x or i
            read.add(stmt.targets[0].value.id)
            read |= names_of(stmt.targets[0].slice)
        assigned |= set(names)


class _Flow(dataflow.Forward):
    """The forward data-flow of "read by an adjoint since last assigned" that
    decides what each statement saves.  Its state is (the names an adjoint
    reads since their last assignment on some path, the names surely holding a
    value, to spot saves of nothing)."""

    def __init__(self, saving):
        self.saving = saving
        self.depth = 0  # how many loops are around

    def join(self, one, other):
        return one[0] | other[0], one[1] & other[1], one[2] | other[2]

    def straight(self, stmts, state):
        """(The run's statements change a copy of the state of its own in place;
        this sweep reads no state at a statement.)"""
        if not stmts:
            return state
        read, assigned, read_memory = (set(part) for part in state)
        for stmt in stmts:
            self.step(stmt, read, assigned, read_memory)
        return frozenset(read), frozenset(assigned), frozenset(read_memory)

    def simple(self, stmt, state):
        return self.straight([stmt], state)

    def step(self, stmt, read, assigned, read_memory):
        """Change the state's three sets in place into those after ``stmt``."""
        if isinstance(stmt, S.Assign):
            # the memory adjoints read stays read: a later write into it is saved
            read_memory |= self.saving._memory_read_by(stmt)
            self.saving._save_for(stmt, read, assigned, read_memory)
        elif is_append(stmt):
            # Undone by xs.pop() in the reverse sweep when xs is read before.
            items = stmt.value.func.value.id
            if items in read:
                self.saving.undone.add(id(stmt))  # xs.pop() needs xs as this left it
            else:
                read.discard(items)

    def leave(self, stmt, state):
        # the reverse of a branch reads its test wherever control leaves it
        return state[0] | self.saving._exit_reads(stmt), state[1], state[2]

    def enter_body(self, loop, state):
        target = {loop.target.id} if isinstance(loop, S.For) else set()
        return state[0] - target, state[1] | target, state[2]

    def end_trip(self, loop, state):
        # The reverse loop assigns the target itself, so reads of it inside the
        # body never reach outside the loop.
        return (state[0] - {loop.target.id}, state[1], state[2]) if isinstance(loop, S.For) \
            else state

    def loop(self, loop, state):
        self.saving._prepare_loop(loop, state[0])
        self.depth += 1
        self.saving._depth = self.depth
        try:
            return super().loop(loop, state)
        finally:
            self.depth -= 1
            self.saving._depth = self.depth


def _item_read_again(loop, position, written):
    """Whether ``t = X[i]``, statement ``position`` of a for loop's body, gives
    the same value when the reverse loop runs it at the top of the same trip: X
    and the names of the index other than the loop's target are not among the
    names the loop changes (``written``, see :func:`~derivo.statements.changed_in`), and no
    statement before it in the body reads t (the previous trip's).  ``row =
    X[i]`` of a loop over values is one by construction."""
    stmt = loop.body[position]
    if not (isinstance(loop, S.For) and isinstance(loop.target, S.Name)
            and isinstance(stmt, S.Assign) and isinstance(stmt.targets[0], S.Name)
            and isinstance(stmt.value, S.Subscript) and isinstance(stmt.value.value, S.Name)):
        return False
    name = stmt.targets[0].id
    reads = {stmt.value.value.id} | (names_of(stmt.value.slice) - {loop.target.id})
    return not (reads & written or loop.target.id in written or name in reads
                or any(name in names_of(s) for s in loop.body[:position]))


_INVERSE_OPS = {S.Add: S.Sub, S.Sub: S.Add, S.Mult: S.Div, S.Div: S.Mult}


def _inverse(stmt):
    """For ``x = x + e`` (``-``, ``*``, ``/``; ``e + x``, ``e * x`` too) with e
    not reading x: the expression giving x back, ``x - e``; else None."""
    target, value = stmt.targets[0], stmt.value
    if not isinstance(target, S.Name) or not isinstance(value, S.BinOp) or \
            type(value.op) not in _INVERSE_OPS:
        return None
    x = target.id
    if isinstance(value.left, S.Name) and value.left.id == x:
        other = value.right
    elif isinstance(value.op, (S.Add, S.Mult)) and isinstance(value.right, S.Name) \
            and value.right.id == x:
        other = value.left
    else:
        return None
    if x in names_of(other):
        return None
    return S.binop(S.name(x), _INVERSE_OPS[type(value.op)](), S.deepcopy(other))


def _is_int(node):
    return isinstance(node, S.Constant) and type(node.value) is int
