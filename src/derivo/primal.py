"""Stage 4a: the primal sweep of a reverse-mode derivative.

The user's statements in statement form, run forwards, with what the reverse
sweep (:mod:`derivo.reverse`) reads kept as :mod:`derivo.saving` decided: a
``push`` of each value a statement overwrites before it does (see
:mod:`derivo.tape`, which also pops it back), intermediate values a rule reads
in temporaries (``t1 = x @ w``, the plans' ``stored``), an update
``loops="reversible"`` undoes checked as it runs, a call of a user function
whose VJP comes in halves as its forward half, an outlined loop run by
:mod:`derivo.checkpoints`, and the run-time checks analysis asked for (memory a
write must not share, copies derivo may write into).
"""

from . import syntax as S
from .outline import Loop
from .statements import index_value

_SYMBOLS = {S.Add: "+", S.Sub: "-", S.Mult: "*", S.Div: "/"}


class PrimalSweep:
    """Emits the primal sweep of one function, keeping what ``tape`` (a
    :class:`derivo.tape.Tape`) records for the reverse sweep."""

    def __init__(self, tape):
        self.tape = tape
        self.analysis = tape.analysis
        self.saving = tape.saving
        self.parsed = tape.parsed
        self.module = tape.module
        self.namer = tape.namer
        self.assigned_once = S.values_assigned_once(tape.normalized.tree)

    def sweep(self, tree):
        """The statements of ``tree``'s primal sweep, all but its final return,
        after the stack and the names the reverse sweep may read before any
        statement assigns them (``t1 = None``)."""
        out = self.tape.start()
        for ident in sorted(self.saving.init_none):
            out.append(S.assign(ident, S.const(None)))
        out += [self.apart(*check) for check in getattr(tree, "apart", [])]
        out += [self.own(ident) for ident in getattr(tree, "owned", [])]
        code = self.block(tree.body[:-1])
        # the runtime.Undo of each checked update, named as the block met it
        undos = [S.assign(name, S.call(self.tape.runtime("Undo"),
                                       S.const(_SYMBOLS[type(stmt.value.op)])))
                 for stmt, name in self.tape.undos.values()]
        return out + undos + code

    def block(self, block):
        """The primal code of a block: each statement with what it keeps."""
        out = []
        for index, stmt in enumerate(block):
            saved = self.saving.pushes.get(id(stmt), [])
            if isinstance(stmt, (S.For, S.While)):
                out += [s for n in saved for s in self.tape.save(n)]
                if id(stmt) in self.saving.counted and id(stmt) in self.saving.reversed:
                    name, start = self.tape.loop_start(stmt)
                    out.append(S.assign(start, S.name(name)))
                if self.iterates_once(stmt):
                    out.append(S.assign(stmt.iter.id, S.call(self.tape.runtime("replayable"),
                                                             S.name(stmt.iter.id))))
                out.append(self.loop(stmt))
                continue
            if self.is_unused_counter(stmt, block, index):
                continue
            out += [s for n in saved for s in self.tape.save(n, stmt)]
            if isinstance(stmt, S.If):
                out.append(S.if_(S.deepcopy(stmt.test), self.block(stmt.body),
                                 self.block(stmt.orelse)))
            elif self.tape.checks_undo(stmt):
                out.append(self.checked_step(stmt))
            else:
                out += self.assign(stmt)
            if getattr(stmt, "owns", False):
                out.append(self.own(stmt.targets[0].id))
            if id(stmt) in self.analysis.shared_checks:
                out.append(self.apart(stmt.targets[0].id,
                                      *self.analysis.shared_checks[id(stmt)]))
        return out

    def iterates_once(self, loop):
        """Whether ``loop``, which the reverse sweep runs backwards, iterates over
        what a call other than ``range`` made: an iterator (``zip``, a generator)
        can be read once, forwards, so the forward loop keeps the items it takes
        (runtime.replayable)."""
        if not (isinstance(loop, S.For) and isinstance(loop.iter, S.Name)
                and id(loop) in self.saving.reversed):
            return False
        value = self.assigned_once.get(loop.iter.id)
        return isinstance(value, S.Call) and \
            not S.calls_builtin(value, range, self.module.namespace)

    def is_unused_counter(self, stmt, block, index):
        """``n = 0`` before a loop whose reverse needs no trip count."""
        following = block[index + 1] if index + 1 < len(block) else None
        return (isinstance(following, (S.For, S.While)) and following.trips
                and not self.tape.needs_trip_counter(following)
                and isinstance(stmt, S.Assign) and isinstance(stmt.targets[0], S.Name)
                and stmt.targets[0].id == following.trips)

    def loop(self, loop):
        """A loop around its body's primal code, counting its trips only where
        the reverse loop needs the count."""
        body = loop.body
        if loop.trips and not self.tape.needs_trip_counter(loop):
            body = body[1:]  # the trip counter's increment
        if isinstance(loop, S.While):
            return S.copy_location(S.while_(S.deepcopy(loop.test), self.block(body)), loop)
        target, iterable = loop.target.id, loop.iter
        row = getattr(loop, "row", None)  # row = X[i] of a loop over values
        if row is not None and id(row) in self.saving.reloads:
            # Only the reverse loop reads X[i] (again), so this one iterates over X
            # as the user wrote it: cheaper than counting and indexing.
            target, iterable = row.targets[0].id, row.value.value
            body = [stmt for stmt in body if stmt is not row]
        return S.copy_location(S.for_(target, S.deepcopy(iterable), self.block(body)), loop)

    def assign(self, stmt):
        """The statement as the user wrote it, or, where the adjoint reads
        intermediate values of it, in steps that keep them (``t1 = x @ w``)."""
        if isinstance(getattr(getattr(stmt, "value", None), "user_function", None), Loop):
            return [self.checkpointed(stmt)]
        if isinstance(stmt, S.Assign) and self.tape.keeps_residuals(stmt):
            return self.forward_half(stmt)
        plan = self.analysis.plans.get(id(stmt))
        copy = S.deepcopy(stmt)
        copy.effects = getattr(stmt, "opaque", False)
        if plan is None or not plan.stored:
            return [copy]
        steps = []

        def build(node):
            if isinstance(node, S.gast.keyword):  # f(x, cov=...): its value may be stored
                return S.gast.keyword(arg=node.arg, value=build(node.value))
            if not isinstance(node, S.gast.expr):
                return S.deepcopy(node)
            new = S.deepcopy(node) if isinstance(node, (S.Name, S.Constant)) else \
                type(node)(**{f: _map(build, getattr(node, f)) for f in node._fields})
            if id(node) in plan.stored:
                # an index with slices (A[:, i]) is kept as the value it stands for
                value = index_value(new) if isinstance(node, (S.Slice, S.Tuple)) and any(
                    isinstance(n, S.Slice) for n in S.walk(node)) else new
                steps.append(S.copy_location(S.assign(plan.stored[id(node)], value), stmt))
                return S.name(plan.stored[id(node)])
            return new

        copy.value = build(stmt.value)
        return steps + [copy]

    def checked_step(self, stmt):
        """``x = x + e`` (or ``e + x``) as ``x = undo_x.step(x, e)``: the same value
        (``+`` and ``*`` of numbers commute to the bit), and x saved where the
        reverse sweep's ``x - e`` would not give it back exactly."""
        name, inverse = self.saving.inverses[id(stmt)]
        step = S.call(S.attribute(self.tape.undo_object(stmt), "step"), S.name(name),
                      S.deepcopy(inverse.right))
        return S.effect(S.copy_location(S.assign(name, step), stmt))

    def checkpointed(self, stmt):
        """An outlined loop (see outline) run by :mod:`derivo.checkpoints`, which
        pushes its tape when the reverse sweep will pop it."""
        loop, call = stmt.value.user_function, stmt.value
        taped = any(c[0] is stmt for c in self.analysis.calls)
        push = S.name(self.tape.push) if taped else S.const(None)
        args = list(call.args)
        iterations = [args.pop(0)] if loop.kind == "for" else []
        state, invariants = args[:len(loop.state)], args[len(loop.state):]
        runner = self.module.outlined_function(loop.runner)
        keywords = [S.gast.keyword(arg="slots", value=S.const(loop.slots))] \
            if loop.slots is not None else []
        if loop.kind == "for" and loop.schedule != "revolve":
            keywords.append(S.gast.keyword(arg="schedule", value=S.const(loop.schedule)))
        value = S.call(self.tape.checkpoints("checkpointed_" + loop.kind), push, S.name(runner),
                       *S.deepcopy(iterations),
                       S.tuple_(S.deepcopy(state)), S.tuple_(S.deepcopy(invariants)),
                       keywords=keywords)
        return S.copy_location(S.effect(S.assign(S.deepcopy(stmt.targets[0]), value)), stmt)

    def forward_half(self, stmt):
        """``y, f_residuals = f_forward(x)`` for ``y = f(x)``: f's value and what
        its backward half needs, pushed where a later trip overwrites it."""
        callee, params = self.tape.differentiated_call(stmt)
        forward, _ = self.module.vjp_halves(callee, params, self.parsed, stmt.value)
        kept = self.tape.residuals[id(stmt)] = self.namer.fresh(
            forward.rpartition("_forward")[0] + "_residuals")
        call = S.copy_location(S.call(forward, *S.deepcopy(stmt.value.args),
                                      keywords=S.deepcopy(stmt.value.keywords)), stmt.value)
        out = [S.copy_location(S.effect(S.assign(S.tuple_(
            [S.deepcopy(stmt.targets[0]), S.store(kept)], store_ctx=True), call)), stmt)]
        if id(stmt) in self.tape.kept_in_loops:
            out += self.tape.save(kept)
        return out

    def apart(self, ident, other, message):
        """``unshared(x, other, message)``: refuse x sharing memory with other."""
        return S.Expr(value=S.call(self.tape.runtime("unshared"), S.name(ident), S.name(other),
                                   S.const(message)))

    def own(self, ident):
        """``x = owned(x)``: a copy derivo may write into (see ssa._mark_owned)."""
        return S.effect(S.assign(ident, S.call(self.tape.runtime("owned"), S.name(ident))))


def _map(function, value):
    return [function(v) for v in value] if isinstance(value, list) else function(value)
