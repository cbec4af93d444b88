"""What reverse mode's primal sweep keeps for its reverse sweep, and how it is given back.

A derivative keeps what its reverse sweep reads on one stack: the primal sweep
(:mod:`derivo.primal`) pushes a value before a statement overwrites it, the
reverse sweep (:mod:`derivo.reverse`) pops it back after reversing that
statement, so the two run the same statements in opposite orders and agree
on the stack's order by construction.  What is kept was decided by
:mod:`derivo.saving` (``analysis.saving``); the Tape emits each push and its
pop, and names what else the two sweeps share: the stack and its ``push`` and
``pop``, the ``runtime.Undo`` that checks each update ``loops="reversible"``
undoes, a counted loop's counter at entry, and the residuals of each call of a
user function whose VJP comes in halves (see :mod:`derivo.residuals`).
"""

import builtins

from . import checkpoints, runtime
from . import syntax as S
from .outline import Loop
from .statements import is_item_write


class Tape:
    """The names and the stack protocol the primal and reverse sweeps of one
    function share, and the bindings of the helpers their code calls."""

    def __init__(self, analysis, module):
        self.analysis = analysis
        self.saving = analysis.saving   # what the primal saves, or undoes, for the reverse
        self.parsed = analysis.parsed
        self.normalized = analysis.normalized
        self.namer = analysis.normalized.namer
        self.module = module        # the generated module, for helper functions and names
        self.starts = {}            # id(counted loop) -> name of its counter at entry
        self.undos = {}             # id(checked update) -> (it, the name of its runtime.Undo)
        # id(call statement) -> the name of its residuals, for each call of a user
        # function whose VJP comes in halves
        self.residuals = {}
        self.kept_in_loops = self._residuals_kept_in_loops()
        # names an undone update binds to a new value (x = x * e): the reverse gives
        # one back an array equal to the one it held, not that array
        self.rebound = {self.saving.inverses[i][0] for i in self.saving.undone
                        if i in self.saving.inverses}
        self.used = bool(analysis.saving.pushes) or bool(self.kept_in_loops) or any(
            isinstance(callee, Loop) for _, callee, _ in analysis.calls)
        if self.used:
            self.stack = self.namer.fresh("stack")
            self.push = self.namer.fresh("push")
            self.pop = self.namer.fresh("pop")

    def start(self):
        """``stack = []`` and its push and pop, where anything is kept."""
        if not self.used:
            return []
        return [S.assign(self.stack, S.gast.List(elts=[], ctx=S.Load())),
                S.assign(self.push, S.attribute(self.stack, "append")),
                S.assign(self.pop, S.attribute(self.stack, "pop"))]

    def builtin(self, ident):
        """The name generated code calls a builtin by (an alias if the user's code
        gives the name another meaning)."""
        return self.module.bind(ident, getattr(builtins, ident), avoid=self.parsed.local_names)

    def runtime(self, helper):
        """The name generated code calls a :mod:`derivo.runtime` helper by."""
        return self.module.bind(helper, getattr(runtime, helper), avoid=self.parsed.local_names)

    def checkpoints(self, helper):
        return self.module.bind(helper, getattr(checkpoints, helper),
                                avoid=self.parsed.local_names)

    # --- calls of user functions -------------------------------------------------

    def differentiated_call(self, stmt):
        """(callee, its differentiated parameters) of a call of a user function
        the reverse sweep differentiates through, or None."""
        entry = next((c for c in self.analysis.calls if c[0] is stmt), None)
        if entry is None or isinstance(entry[1], Loop) or not entry[2] or \
                not self.call_targets(stmt)[1]:
            return None
        return entry[1], tuple(entry[2])

    def keeps_residuals(self, stmt):
        call = self.differentiated_call(stmt)
        return call is not None and self.module.splits(call[0])

    def _residuals_kept_in_loops(self):
        """The ids of the calls in loops whose residuals each trip pushes."""
        return {id(stmt) for loop in S.walk(self.normalized.tree)
                if isinstance(loop, (S.For, S.While)) for stmt in S.statements(loop.body)
                if isinstance(stmt, S.Assign) and self.keeps_residuals(stmt)}

    def call_targets(self, stmt):
        """The names a call assigns, and those of them that are active."""
        target = stmt.targets[0]
        names = [t.id for t in target.elts] if isinstance(target, S.Tuple) else [target.id]
        return names, [n for n in names if n in self.analysis.active]

    # --- what is kept, and how it is given back ------------------------------------

    def checks_undo(self, stmt):
        return id(stmt) in self.saving.checked and id(stmt) in self.saving.undone

    def undo_object(self, stmt):
        """The name of the runtime.Undo that checks and undoes ``stmt``."""
        if id(stmt) not in self.undos:
            self.undos[id(stmt)] = (stmt, self.namer.fresh("undo_" + stmt.targets[0].id))
        return self.undos[id(stmt)][1]

    def needs_trip_counter(self, loop):
        return id(loop) in self.saving.reversed and id(loop) not in self.saving.counted

    def loop_start(self, loop):
        """For a loop its integer step counts: (k, the name of k before the loop)."""
        step = self.saving.counted[id(loop)]
        name = self.saving.inverses[id(step)][0]
        if id(loop) not in self.starts:
            self.starts[id(loop)] = self.namer.fresh(name + "0")
        return name, self.starts[id(loop)]

    def save(self, ident, stmt=None):
        """``push(x)`` before ``stmt`` overwrites x; a copy of the part an
        in-place write ``x[i] = v`` overwrites, and x itself after it where an undone
        update may bind x to another array before the reverse gives the part back."""
        if stmt is not None and is_item_write(stmt):
            item = stmt.targets[0]
            part = S.gast.Subscript(value=S.name(ident), slice=S.deepcopy(item.slice),
                                    ctx=S.Load())
            kept = [S.Expr(value=S.call(self.push, S.call(self.runtime("copy_of"), part)))]
            if ident in self.rebound:
                kept.append(S.Expr(value=S.call(self.push, S.name(ident))))
            return kept
        return [S.Expr(value=S.call(self.push, S.name(ident)))]

    def restore(self, stmt, part="all"):
        """Give back the values ``stmt`` overwrote: undo an integer step, or pop.

        ``part`` is ``"targets"``, ``"temporaries"`` (kept intermediate values,
        pushed before the targets) or ``"all"``.
        """
        if id(stmt) in self.saving.undone:
            if part == "temporaries":
                return []
            name, inverse = self.saving.inverses[id(stmt)]
            if self.checks_undo(stmt):  # x = undo_x.back(x, e): x - e, or x as saved
                inverse = S.call(S.attribute(self.undo_object(stmt), "back"), S.name(name),
                                 S.deepcopy(inverse.right))
            return [S.effect(S.assign(name, S.deepcopy(inverse)))]
        stored = set(self.analysis.planner.stored(stmt))
        names = [n for n in self.saving.pushes.get(id(stmt), [])
                 if part == "all" or (n in stored) == (part == "temporaries")]
        if is_item_write(stmt):
            item = stmt.targets[0]
            # (the array written, where an undo rebound its name: see save)
            return [s for n in names for s in
                    ([S.effect(S.assign(n, S.call(self.pop)))] if n in self.rebound else []) +
                    [S.effect(S.assign(S.gast.Subscript(
                        value=S.name(n), slice=S.deepcopy(item.slice), ctx=S.Store()),
                        S.call(self.pop)))]]
        return [S.effect(S.assign(n, S.call(self.pop))) for n in reversed(names)]

    def restore_residuals(self, stmt):
        """``f_residuals = pop()`` for a call in a loop, which pushed them."""
        if id(stmt) not in self.kept_in_loops:
            return []
        return [S.effect(S.assign(self.residuals[id(stmt)], S.call(self.pop)))]
