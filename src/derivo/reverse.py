"""Stage 4: write the adjoint of a function in statement form.

The generated function runs the *primal sweep* (:mod:`derivo.primal`: the
user's statements, with a ``push`` before each assignment that overwrites a
value the adjoint needs) and then the *reverse sweep*, emitted here (each
statement's adjoint, last statement first, with a ``pop`` restoring what the
statement overwrote; :mod:`derivo.tape` holds what the two sweeps share).
Loops run backwards over their recorded trip counts; branches re-read their
recorded tests.

Adjoints are symbolic zeros until their first contribution, which is an
assignment (``bz = ...``) rather than ``bz = 0.0`` followed by ``bz += ...``;
a zero is materialised only where two control paths meet.
"""

import functools

from . import accumulate, item_adjoints, optimize, residuals, rules, runtime
from . import syntax as S
from .analyze import analyze
from .errors import UnsupportedSyntax
from .outline import ITERATIONS, Loop
from .parse import parameter_names
from .plans import Node, Plan, same_operands
from .primal import PrimalSweep
from .ssa import is_append
from .statements import index_value, is_item_write
from .tape import Tape


class Sweep:
    """Emits the derivative of one function: its primal sweep (by a
    :class:`~derivo.primal.PrimalSweep`), its reverse sweep, and the result."""

    def __init__(self, analysis, module, kind, name, tuple_wrt=False):
        self.arrays = analysis.arrays
        self.tuple_wrt = tuple_wrt  # return a tuple of gradients even for one
        self.analysis = analysis
        self.saving = analysis.saving   # what the primal saves, or undoes, for the reverse
        self.parsed = analysis.parsed
        self.normalized = analysis.normalized
        self.namer = analysis.normalized.namer
        self.module = module        # the generated module, for helper functions and names
        self.kind = kind            # 'grad' | 'value_and_grad' | 'vjp'
        self.name = name
        self.adjoints = {}
        self.adjoint_of = {}        # the inverse: adjoint name -> name
        self.zero = set()           # active names whose adjoint is a symbolic zero
        self.materialized = set()   # ... made a real 0.0 where control paths meet
        self.scalar_zeros = set()   # ... whose adjoint may be a 0.0 from elsewhere: a
        #                             VJP's caller, or an adjoint that may be one
        self.loop_depth = 0         # reverse loops open around the statement reversed
        self.tape = Tape(analysis, module)  # what the primal sweep keeps for this one
        self.runtime, self.builtin = self.tape.runtime, self.tape.builtin
        self.last_line = None
        self.aux = None             # the auxiliary result a has_aux gradient returns
        self.pullback = False       # a VJP as a generator (see reverse)

    def may_be_reset(self, adjoint):
        """Whether the adjoint named ``adjoint`` belongs to a name assigned more
        than once: reversing a later assignment, in a branch, leaves it 0.0."""
        return any(self.reassigned.get(ident, 0) > 1
                   for ident, name in self.adjoints.items() if name == adjoint)

    @functools.cached_property
    def reassigned(self):
        return S.store_counts(self.normalized.tree)

    def adjoint_temporary(self, value_name=None):
        """A name for an intermediate adjoint: ``bt3`` for the value kept in
        ``t3``, else the adjoint of a fresh temporary name."""
        return self.adjoint(value_name or self.namer.numbered("t"))

    def adjoint(self, ident):
        if ident not in self.adjoints:
            self.adjoints[ident] = self.namer.fresh("b" + ident)
            self.adjoint_of[self.adjoints[ident]] = ident
        return self.adjoints[ident]

    # --- the whole function -------------------------------------------------------

    def function(self):
        tree = self.normalized.tree
        body, final = tree.body[:-1], tree.body[-1]
        out = PrimalSweep(self.tape).sweep(tree)
        self.value = S.deepcopy(final.value)
        restored = {n for names in self.saving.pushes.values() for n in names} | {
            name for name, _ in self.saving.inverses.values()}
        returned = set(self.normalized.results) | ({self.aux} if self.aux else set())
        if self.kind == "value_and_grad" and restored & returned:
            # The reverse sweep restores the result's old value: keep it first.
            self.value = S.name(self.namer.fresh("value"))
            out.append(S.assign(self.value.id, S.deepcopy(final.value)))
        elif self.aux in restored:
            kept = self.namer.fresh("aux")
            out.append(S.assign(kept, S.name(self.aux)))
            self.aux = kept
        out.append(self.module.comments.statement("reverse sweep"))
        results = self.normalized.results
        params = [a.id for a in tree.args.args]
        seeds = []
        self.zero = set(self.analysis.active)
        if self.kind == "vjp":
            several = isinstance(final.value, S.Tuple)
            seed_param = self.namer.fresh("bresults") if several else self.adjoint(results[0])
            if self.pullback:
                # a generator: it yields the value, and is sent the cotangent for it
                suspend = S.assign(seed_param, S.gast.Yield(value=S.deepcopy(final.value)))
                suspend.effects = True  # kept where it is, read or not
                out.append(suspend)
            else:
                seeds = [seed_param]
            if several:
                out.append(S.assign(S.tuple_([S.store(self.adjoint(r)) for r in results],
                                             store_ctx=True), S.name(seed_param)))
        elif self.arrays and results[0] not in self.analysis.scalars:
            # Only a result that may be an array needs its shape checked (and computed).
            out.append(S.assign(self.adjoint(results[0]),
                                S.call(self.runtime("scalar_seed"), S.name(results[0]))))
        else:
            seed = S.assign(self.adjoint(results[0]), S.const(1.0))
            seed.seed = True  # optimize folds it where it is never updated
            out.append(seed)
            if results[0] not in self.analysis.active | self.analysis.scalars:
                # a result nothing differentiated reaches may be a string or a dict,
                # whose gradient would be a meaningless 0.0
                check = S.gast.Expr(value=S.call(self.runtime("scalar_seed"),
                                                 S.name(results[0])))
                check.effects = True
                out.append(check)
        self.zero -= set(results)
        if self.kind == "vjp":
            self.scalar_zeros |= set(results)  # the caller's 0.0 for a result it never read
        reverse = self.reverse_block(body)
        out += reverse
        out.append(S.return_(self.returned()))
        args = tree.args
        function = S.function(
            self.name, seeds + params, out, defaults=S.deepcopy(args.defaults),
            kwonly=[a.id for a in args.kwonlyargs], kw_defaults=S.deepcopy(args.kw_defaults))
        item_adjoints.add_items_in_place(function, self)
        item_adjoints.read_uniform_adjoints(function, self.module.namespace)
        namespace = self.module.namespace
        shape_readers = {name for name, obj in namespace.items()
                         if any(obj is helper for helper in runtime.SHAPE_READERS)}
        # (a VJP's seed may have any shape: expand's array checks it)
        spreaders = {name for name, obj in namespace.items()
                     if obj is runtime.expand and self.kind != "vjp"}
        in_place = {adjoint for name, adjoint in self.adjoints.items()
                    if name not in self.analysis.scalars} if self.arrays else ()
        # adjoints and differentiated values hold floats (derivo differentiates floats)
        floats = set(self.adjoints.values()) | set(self.analysis.active)
        primals = {n.id for n in S.walk(self.normalized.tree) if isinstance(n, S.Name)}
        function = optimize.optimize(function, shape_readers, spreaders, in_place, floats,
                                     primals)
        accumulate.add_in_place(function, namespace, self.runtime)
        return function

    def returned(self):
        grads = [self.gradient(w) for w in self.analysis.wrt]
        grads = grads[0] if len(grads) == 1 and not self.tuple_wrt else S.tuple_(grads)
        if self.kind == "value_and_grad":
            return S.tuple_([self.value, grads])
        return S.tuple_([grads, S.name(self.aux)]) if self.aux else grads

    def gradient(self, ident):
        if ident in self.analysis.active and ident not in self.zero:
            if self.arrays and (ident in self.materialized
                                or (ident in self.scalar_zeros
                                    and ident not in self.analysis.containers)):
                # Only a zero reached it on some path (a loop that never ran, a return
                # taken before its use); a list's zeros come from the derivative's
                # entry, which knows the length it was given.
                return S.call(self.runtime("shaped_like"), S.name(self.adjoint(ident)),
                              S.name(ident))
            return S.name(self.adjoint(ident))
        if self.arrays:
            return S.call(self.runtime("zero_gradient"), S.name(ident))
        # a list's zeros come from the derivative's entry (api._in_structure):
        # zero_gradient here would make the scalar code read as NumPy code, which
        # derivo cannot differentiate again (grad of grad)
        return S.const(0.0)

    # --- reverse sweep -----------------------------------------------------------

    def reverse_block(self, block):
        out = []
        for stmt in reversed(block):
            out += self.reverse_statement(stmt)
        return out

    def reverse_statement(self, stmt):
        if isinstance(stmt, S.Assign):
            if is_item_write(stmt):
                code = self.reverse_item_write(stmt) + self.tape.restore(stmt)
            elif isinstance(getattr(stmt.value, "user_function", None), Loop):
                # The loop's tape, pushed as it ran, is above what it overwrote.
                code = CallAdjoint(self, stmt).of_checkpointed_loop() + self.tape.restore(stmt)
            elif id(stmt) in self.tape.residuals:
                # its residuals, pushed after the call, are above what it overwrote
                code = self.tape.restore_residuals(stmt) + self.tape.restore(stmt) + \
                    CallAdjoint(self, stmt).of_function()
            elif getattr(stmt.value, "user_function", None) is not None:
                code = self.tape.restore(stmt) + CallAdjoint(self, stmt).of_function()
            elif _reads_own_target(stmt):
                # Its adjoint needs the target's old value: restore that first.
                code = self.shaped_zero(stmt) + self.tape.restore(stmt, "targets") + \
                    self.reverse_assign(stmt) + self.tape.restore(stmt, "temporaries")
            else:
                code = self.shaped_zero(stmt) + self.reverse_assign(stmt) + \
                    self.tape.restore(stmt)
            return self.commented(stmt, code)
        if is_append(stmt):
            return self.commented(stmt, self.reverse_append(stmt))
        if id(stmt) not in self.saving.reversed:
            return []
        if isinstance(stmt, S.If):
            return self.branch(S.deepcopy(stmt.test),
                               lambda: self.reverse_block(stmt.body),
                               lambda: self.reverse_block(stmt.orelse))
        code = self.loop(stmt, lambda: self.reverse_block(stmt.body))
        return code + self.tape.restore(stmt)

    def commented(self, stmt, code):
        if not code:
            return code
        line = getattr(stmt, "lineno", None)
        if line is None or line == self.last_line:
            return code
        self.last_line = line
        text = self.parsed.source_line(line)
        return [self.module.comments.statement("line {}: {}".format(line, text))] + code

    def reverse_assign(self, stmt):
        target = stmt.targets[0].id
        if target not in self.analysis.active or target in self.zero:
            return []
        out = []
        plan = self.analysis.plans[id(stmt)]
        expression = ExpressionAdjoint(self, plan, out)
        seed = S.name(self.adjoint(target))
        if any(n.kind == "ifexp" for n in plan.nodes.values()) and \
                target in {n.id for n in S.walk(stmt.value) if isinstance(n, S.Name)}:
            # The target's own share depends on the branch taken, so it cannot be
            # summed after the fact: start its adjoint afresh from a copy instead.
            copy = self.adjoint_temporary()
            out.append(S.assign(copy, seed))
            self.zero.add(target)
            expression.backprop(stmt.value, S.name(copy))
            return out
        expression.backprop(stmt.value, seed, own=target)
        self.finish_target(target, expression.own_contributions, out)
        return out

    def shaped_zero(self, stmt):
        """``bz = zero_as(bz, z)`` before reversing ``z = e``, where bz may be the
        0.0 standing for a zero adjoint (left where control paths meet, or given
        by a VJP's caller) and e applies a rule that needs its adjoint shaped
        like z (``@``, ``np.stack``, ``einsum``): rules that rearrange an
        adjoint cannot take a scalar for an array (indexing's can)."""
        target = stmt.targets[0].id
        plan = self.analysis.plans.get(id(stmt))
        if not self.arrays or plan is None or target not in self.analysis.active or \
                target in self.zero or target in self.analysis.scalars or \
                not self.may_be_scalar_zero(target) or not any(
                    node.kind == "rule" and node.rule.style == "vjp" and
                    node.rule.primitive not in (rules.GETITEM, rules.FIELD)
                    for node in plan.nodes.values()):
            return []
        adjoint = self.adjoint(target)
        return [S.assign(adjoint, S.call(self.runtime("zero_as"), S.name(adjoint),
                                         S.name(target)))]

    def may_be_scalar_zero(self, ident):
        return ident in self.materialized or ident in self.scalar_zeros

    def reverse_item_write(self, stmt):
        """``x[i] = v``: v receives the adjoint of the part written, which the
        write cut off from x's old value."""
        item = stmt.targets[0]
        array = item.value.id
        if array not in self.analysis.active or array in self.zero:
            return []
        out = []
        value = stmt.value
        zeroed = S.assign(self.adjoint(array), S.call(
            self.runtime("zeroed"), S.name(self.adjoint(array)), index_value(item.slice)))
        if isinstance(value, S.Name) and value.id in self.analysis.active:
            # (an integer array stores v truncated: stored_part gives it no adjoint)
            part = S.call(self.runtime("stored_part" if self.arrays else "part"),
                          S.name(self.adjoint(array)),
                          *([S.name(array)] if self.arrays else []), index_value(item.slice))
            contribution = S.call(self.runtime("unbroadcast"), part, S.deepcopy(value))
            if value.id == array:
                # x[i] = x: x's old value gets the part written after the write's
                # cut, which would otherwise remove it from that same adjoint
                held = self.adjoint_temporary()
                out += [S.assign(held, S.call(self.runtime("copy_of"), contribution)), zeroed]
                ExpressionAdjoint(self, _name_plan(value), out).contribute(
                    value.id, S.name(held), out)
                return out
            ExpressionAdjoint(self, _name_plan(value), out).contribute(value.id, contribution, out)
        out.append(zeroed)
        return out

    def reverse_append(self, stmt):
        """``xs.append(item)``: item receives the last of xs's adjoints; xs is
        given back its old length when an earlier adjoint reads it."""
        items, item = stmt.value.func.value.id, stmt.value.args[0]
        out = []
        if items in self.analysis.active and items not in self.zero:
            adjoint = self.adjoint(items)
            last = self.adjoint_temporary()
            out.append(S.assign(S.tuple_([S.store(adjoint), S.store(last)], store_ctx=True),
                                S.call(self.runtime("pop_adjoint"), S.name(adjoint))))
            if isinstance(item, S.Name) and item.id in self.analysis.active:
                ExpressionAdjoint(self, _name_plan(item), out).contribute(
                    item.id, S.name(last), out)
        if id(stmt) in self.saving.undone:
            out.append(S.effect(S.Expr(value=S.call(S.attribute(items, "pop")))))
        return out

    def finish_target(self, target, own, out):
        """The target's adjoint after its statement: its own inputs' share, or zero."""
        if own:
            total = own[0]
            for term in own[1:]:
                # a container's adjoints are lists, which + would join
                total = S.call(self.runtime("add_adjoints"), total, term) \
                    if target in self.analysis.containers else S.binop(total, S.Add(), term)
            total = optimize.simplify(total)
            if not (isinstance(total, S.Name) and total.id == self.adjoint(target)):
                out.append(S.assign(self.adjoint(target), total))
        else:
            self.zero.add(target)

    # --- control flow ----------------------------------------------------------

    def materialize(self, names):
        self.materialized |= set(names)
        zeros = [S.assign(self.adjoint(n), S.const(0.0)) for n in sorted(names)]
        for stmt, name in zip(zeros, sorted(names)):
            stmt.zero_of = name  # see item_adjoints.add_items_in_place
        return zeros

    def branch(self, test, then_fn, else_fn):
        """An ``if`` in the reverse sweep, merging symbolic zeros of both arms."""
        start = set(self.zero)
        then_code = then_fn()
        then_zero, self.zero = self.zero, set(start)
        else_code = else_fn()
        else_zero = self.zero
        self.zero = then_zero & else_zero
        then_code += self.materialize(then_zero - self.zero)
        else_code += self.materialize(else_zero - self.zero)
        if not then_code and not else_code:
            return []
        if not then_code:
            return [S.if_(S.not_(test), else_code)]
        return [S.if_(test, then_code, else_code)]

    def loop(self, loop, body_fn):
        """The reverse of a loop: its body, backwards, once per recorded trip."""
        entry = set(self.zero)
        head = set(entry)
        last_line = self.last_line
        taken = set(self.namer.taken)
        while True:
            # Each attempt must hand out the same temporaries' names.
            self.zero = set(head)
            self.last_line = last_line
            self.namer.taken = taken | set(self.adjoints.values())
            # a trip may start from the 0.0 made before the loop
            self.scalar_zeros |= entry - head
            scalar_zeros = set(self.scalar_zeros)
            self.loop_depth += 1
            body = body_fn()
            self.loop_depth -= 1
            if isinstance(loop, S.For) and loop.target.id in self.analysis.active:
                # Each trip assigns the target a value of the (undifferentiated)
                # iterable: what reached it after the loop came from there, unless
                # no trip ran and it still holds its earlier value (see ssa).
                self.zero.add(loop.target.id)
            if head <= self.zero:
                # ... or from the 0.0 the trip after it left: then the body again
                self.scalar_zeros |= self.zero - head
                if not self.arrays or self.scalar_zeros <= scalar_zeros:
                    break
                continue
            head &= self.zero
        body += self.materialize(self.zero - head)
        before = self.materialize(entry - head)
        self.zero = set(head)
        if not body:
            return before
        body[:0] = [S.deepcopy(s) for s in loop.body if id(s) in self.saving.reloads]
        if isinstance(loop, S.While) and id(loop) in self.saving.counted:
            name, start = self.tape.loop_start(loop)
            test = S.Compare(left=S.name(name), ops=[S.NotEq()], comparators=[S.name(start)])
            header = S.while_(test, body)
        elif isinstance(loop, S.While):
            header = S.for_(self.namer.fresh("_"), S.call(self.builtin("range"),
                                                          S.name(loop.trips)), body)
        elif not loop.trips and _counts_down(loop.iter, self.module.namespace):
            # for x in reversed(xs) walked range(len(xs) - 1, -1, -1): back is range(len(xs))
            count = S.deepcopy(loop.iter.args[0].left)
            header = S.for_(loop.target.id, S.call(self.builtin("range"), count), body)
        else:
            iterable = S.deepcopy(loop.iter)
            if loop.trips:
                iterable = S.subscript(iterable, S.Slice(lower=None, upper=S.name(loop.trips),
                                                         step=None))
            header = S.for_(loop.target.id, S.call(self.builtin("reversed"), iterable), body)
        return before + [S.copy_location(header, loop)]


def _counts_down(iterable, namespace):
    """Whether ``iterable`` is ``range(n - 1, -1, -1)``, which ``range(n)`` reverses."""
    if not (S.calls_builtin(iterable, range, namespace) and len(iterable.args) == 3):
        return False
    first, stop, step = iterable.args
    return isinstance(first, S.BinOp) and isinstance(first.op, S.Sub) and \
        optimize.is_literal(first.right, 1) and optimize.is_literal(stop, -1) and \
        optimize.is_literal(step, -1)


def _cheap(adjoint):
    """Whether an adjoint expression costs no more to repeat than a temporary
    (a name, a constant, or a negated name, which ends up as ``bx -= ...``)."""
    if isinstance(adjoint, S.UnaryOp) and isinstance(adjoint.op, S.USub):
        adjoint = adjoint.operand
    return isinstance(adjoint, (S.Name, S.Constant))


class CallAdjoint:
    """Back-propagates the adjoints of what one call statement assigns, ``y = f(x)``
    for a user function f or an outlined loop, through its VJP to its arguments."""

    def __init__(self, sweep, stmt):
        self.sweep = sweep
        self.stmt = stmt

    def of_function(self):
        """The call's VJP, and its arguments' adjoints from what it returns."""
        sweep, stmt = self.sweep, self.stmt
        names, active = sweep.tape.call_targets(stmt)
        if not active or all(n in sweep.zero for n in active):
            return []
        call = stmt.value
        _, callee, active_params = next(c for c in sweep.analysis.calls if c[0] is stmt)
        if not active_params:
            sweep.zero |= set(active)
            return []
        results, target = self.result_names(active_params)
        seed = self.seed(names, active)
        if id(stmt) in sweep.tape.residuals:
            _, backward = sweep.module.vjp_halves(callee, tuple(active_params),
                                                  sweep.parsed, call)
            vjp = S.call(backward, seed, S.name(sweep.tape.residuals[id(stmt)]))
        else:
            vjp = S.call(sweep.module.vjp_function(callee, tuple(active_params),
                                                   sweep.parsed, call),
                         seed, *S.deepcopy(call.args), keywords=S.deepcopy(call.keywords))
        out = [S.effect(S.assign(target, vjp))]
        sweep.zero |= set(active)
        self.backprop_arguments(callee, call, zip(active_params, results), out)
        return out

    def of_checkpointed_loop(self):
        """Pop an outlined loop's tape and run the step's VJP backwards over its
        trips (the runner's over segments of trips, see Build.step_vjp); the
        loop's inputs receive what comes out."""
        sweep, stmt = self.sweep, self.stmt
        loop, call = stmt.value.user_function, stmt.value
        names, active = sweep.tape.call_targets(stmt)
        entry = next((c for c in sweep.analysis.calls if c[0] is stmt), None)
        if entry is None:
            return []
        tape = S.call(sweep.tape.pop)
        if all(n in sweep.zero for n in active):
            return [S.effect(S.Expr(value=tape))]
        active_params = entry[2]
        if ITERATIONS in active_params:
            raise sweep.parsed.error(
                UnsupportedSyntax, loop.node, "cannot checkpoint a loop over differentiated "
                "values ({!r}): loop over range(len(...)) and index them".format(
                    sweep.parsed.words(call.args[0])), "checkpointed loop")
        # Every state variable is differentiated: a trip may carry a derivative
        # through one that neither the loop's input nor its output has.
        wrt = loop.state + [p for p in loop.invariants if p in active_params]
        helper = sweep.module.step_vjp(loop, tuple(wrt))
        results, target = self.result_names(wrt)
        differentiated = tuple(loop.invariants.index(p) for p in wrt[len(loop.state):])
        keywords = [S.gast.keyword(arg="invariants", value=S.const(differentiated))] \
            if differentiated else []
        out = [S.effect(S.assign(target, S.call(
            S.attribute(tape, "reverse"), S.name(helper), self.seed(names, active),
            keywords=keywords)))]
        sweep.zero |= set(active)
        self.backprop_arguments(loop, call, [(p, r) for p, r in zip(wrt, results)
                                             if p in active_params], out)
        return out

    def seed(self, names, active):
        """The adjoints of a call's results (0.0 for inactive or zero ones), as
        a tuple when the call's target is one."""
        seeds = [S.name(self.sweep.adjoint(n)) if n in active and n not in self.sweep.zero
                 else S.const(0.0) for n in names]
        return S.tuple_(seeds) if isinstance(self.stmt.targets[0], S.Tuple) else seeds[0]

    def result_names(self, params):
        """Names for the adjoints a VJP returns, one per parameter, and the target
        assigning them."""
        results = [self.sweep.namer.numbered("b" + p) for p in params]
        target = S.store(results[0]) if len(results) == 1 else S.tuple_(
            [S.store(r) for r in results], store_ctx=True)
        return results, target

    def backprop_arguments(self, callee, call, adjoints, out):
        """Send each (parameter, adjoint name) back through the call's argument."""
        by_param = dict(zip(parameter_names(callee), call.args))
        by_param.update({k.arg: k.value for k in call.keywords})
        for param, result in adjoints:
            arg = by_param[param]
            ExpressionAdjoint(self.sweep, self.sweep.analysis.plans[id(arg)], out).backprop(
                arg, S.name(result))


class ExpressionAdjoint:
    """Back-propagates an adjoint through one expression of one statement.

    Intermediate values the partials need are recomputed from the statement's
    inputs (restored by the reverse sweep); a value used twice gets a temporary.
    """

    def __init__(self, sweep, plan, out):
        self.sweep = sweep
        self.plan = plan
        self.out = out
        self.values = {}
        self.own_contributions = []
        self.own = None

    def backprop(self, node, adjoint, own=None):
        self.own = own
        self.root = node
        self._backprop(node, adjoint, self.out)

    def _backprop(self, node, adjoint, out):
        entry = self.plan.nodes.get(id(node))
        if entry is None:
            return
        if entry.kind == "name":
            self.contribute(node.id, adjoint, out)
            return
        if entry.kind == "ifexp":
            sweep = self.sweep

            def arm(index):
                def emit():
                    code = []
                    saved = dict(self.values)
                    if index in entry.active:
                        self._backprop(entry.operands[index], adjoint, code)
                    self.values = saved
                    return code
                return emit

            out += sweep.branch(S.deepcopy(node.test), arm(0), arm(1))
            return
        if entry.kind == "sequence":
            if len(entry.active) > 1 and not isinstance(adjoint, S.Name):
                temp = self.sweep.adjoint_temporary(self.plan.stored.get(id(node)))
                out.append(S.assign(temp, adjoint))
                adjoint = S.name(temp)
            for index in entry.active:
                if isinstance(node, S.gast.Dict):
                    self._backprop(entry.operands[index], self.dict_part(node, index, adjoint),
                                   out)
                    continue
                if isinstance(adjoint, S.Name) and (
                        self.sweep.loop_depth or self.sweep.kind == "vjp" or
                        self.sweep.may_be_reset(adjoint.id)):
                    # in a loop the adjoint may be the 0.0 a trip started from, after
                    # a branch that rebinds the name the 0.0 that branch left, and in a
                    # VJP the 0.0 its caller gives for an item it never read
                    element = S.call(self.sweep.runtime("part"), S.deepcopy(adjoint),
                                     S.const(index))
                else:
                    element = S.subscript(S.deepcopy(adjoint), S.const(index))
                self._backprop(entry.operands[index], element, out)
            return
        rule = entry.rule
        if (len(entry.active) > 1 or rule.style == "vjp") and not _cheap(adjoint):
            temp = self.sweep.adjoint_temporary(self.plan.stored.get(id(node)))
            out.append(S.assign(temp, adjoint))
            adjoint = S.name(temp)
        contributions = []
        for index in entry.active:
            _, operand, template = entry.operands[index]
            bindings = {"g": adjoint}
            if "ans" in template.uses:
                bindings["ans"] = self.value(node, out)
            for param, argument, _ in entry.operands:
                if param in template.uses:
                    bindings[param] = self.value(argument, out)
            expression = template.instantiate(bindings, self.sweep.module.template_names(
                template, self.sweep.parsed.local_names))
            if rule.style == "partial":
                expression = S.binop(S.deepcopy(adjoint), S.Mult(), expression)
            contribution = optimize.simplify(expression)
            if index in entry.reduce and not same_operands(entry.operands):
                contribution = S.call(self.sweep.runtime("unbroadcast"), contribution,
                                      self.value(operand, out))
            contributions.append((operand, contribution))
        for operand, contribution in _merged(contributions):
            self._backprop(operand, contribution, out)

    def dict_part(self, node, index, adjoint):
        """The adjoint of the value at ``index`` of the dict display ``node``
        (``{"w": w, **rest}``) from the dict's: its key's (``part(bd, "w")``: the
        dict's adjoint may be the 0.0 standing for zeros), or for ``**rest``
        those of rest's keys that no later entry replaces."""
        key = node.keys[index]
        if key is not None:
            return S.call(self.sweep.runtime("part"), S.deepcopy(adjoint), S.deepcopy(key))
        later = [S.deepcopy(k if k is not None else v)
                 for k, v in zip(node.keys[index + 1:], node.values[index + 1:])]
        return S.call(self.sweep.runtime("unpacked_vjp"), S.deepcopy(adjoint),
                      S.deepcopy(node.values[index]), S.tuple_(later))

    def contribute(self, ident, adjoint, out):
        sweep = self.sweep
        if sweep.arrays and isinstance(adjoint, S.Subscript):
            # An item of a list's adjoint may be the 0.0 standing for an unused element.
            sweep.materialized.add(ident)
        if ident == self.own:
            self.own_contributions.append(adjoint)
        elif ident in sweep.zero:
            if sweep.arrays and self.may_pass_a_scalar_zero(adjoint):
                sweep.scalar_zeros.add(ident)
            first = S.assign(sweep.adjoint(ident), adjoint)
            # A constant adjoint (bt = 1.0 from a sum) folds into its uses, as the seed does.
            first.seed = optimize.is_number(adjoint)
            if self._calls(adjoint, runtime.getitem_vjp):
                first.item_of = ident  # see item_adjoints.add_items_in_place
            out.append(first)
            sweep.zero.discard(ident)
        elif ident in sweep.analysis.containers:
            name = sweep.adjoint(ident)
            if self._calls(adjoint, runtime.getitem_vjp):  # x[i]'s adjoint, added in place
                out.append(S.assign(name, S.call(sweep.runtime("add_at"), S.name(name),
                                                 *adjoint.args)))
                out[-1].item_of = ident
            elif self._calls(adjoint, runtime.field_vjp):  # p.w's, added in place
                out.append(S.assign(name, S.call(sweep.runtime("add_field"), S.name(name),
                                                 *adjoint.args)))
            else:
                out.append(S.assign(name, S.call(sweep.runtime("add_adjoints"), S.name(name),
                                                 adjoint)))
        elif sweep.arrays:
            # Not ``+=``: an adjoint array may be shared with another adjoint.
            name = sweep.adjoint(ident)
            out.append(S.assign(name, S.binop(S.name(name), S.Add(), adjoint)))
        else:
            out.append(S.aug_add(sweep.adjoint(ident), adjoint))

    def may_pass_a_scalar_zero(self, adjoint):
        """Whether ``adjoint`` may be a plain 0.0: an adjoint that may be one, as
        it is or through helpers (``unbroadcast(stored_part(bz, z, i), w)``), or an
        item of one."""
        while isinstance(adjoint, S.Call) and adjoint.args:
            adjoint = adjoint.args[0]
        if isinstance(adjoint, S.Subscript):
            return True
        if isinstance(adjoint, S.BinOp):  # bz * w: a 0.0 adjoint times a number is a 0.0
            return any(self._reads_an_adjoint(side) and self.may_pass_a_scalar_zero(side)
                       for side in (adjoint.left, adjoint.right))
        of = self.sweep.adjoint_of
        return isinstance(adjoint, S.Name) and adjoint.id in of and \
            self.sweep.may_be_scalar_zero(of[adjoint.id])

    def _reads_an_adjoint(self, expression):
        """Whether ``expression`` is an adjoint, an item of one or a helper's result on one."""
        while isinstance(expression, (S.Call, S.Subscript, S.BinOp)):
            if isinstance(expression, S.BinOp):
                return any(map(self._reads_an_adjoint, (expression.left, expression.right)))
            if isinstance(expression, S.Call):
                if not expression.args:
                    return False
                expression = expression.args[0]
            else:
                expression = expression.value
        return isinstance(expression, S.Name) and expression.id in self.sweep.adjoint_of

    def _calls(self, expression, helper):
        return isinstance(expression, S.Call) and isinstance(expression.func, S.Name) and \
            self.sweep.module.namespace.get(expression.func.id) is helper

    def value(self, node, out, share=True):
        """An expression for ``node``'s value, binding a temporary if it is reused
        and ``share`` (not for an operand evaluated only sometimes: see rebuilt)."""
        if isinstance(node, (S.Name, S.Constant)):
            return S.deepcopy(node)
        if id(node) in self.plan.stored:
            return S.name(self.plan.stored[id(node)])
        if self.plan.result is not None and node is self.root:
            return S.name(self.plan.result)
        if isinstance(node, (S.Slice, S.Tuple)) and any(
                isinstance(n, S.Slice) for n in S.walk(node)):
            return index_value(node)
        if id(node) in self.values:
            return S.name(self.values[id(node)])
        expression = self.rebuilt(node, out, share)
        if share and self.plan.requests.get(id(node), 0) > 1:
            temp = self.sweep.namer.numbered("t")
            out.append(S.assign(temp, expression))
            self.values[id(node)] = temp
            return S.name(temp)
        return expression

    def rebuilt(self, node, out, share=True):
        """``node`` with its sub-expressions replaced by their (shared) values.
        An operand evaluated only when its branch is taken (of ``a if c else b``,
        of ``a and b``) gets no temporary of its own: one would evaluate it
        whatever the branch (max(xs) if xs else 0.0 would raise)."""
        if id(node) not in self.plan.nodes:
            return S.deepcopy(node)
        copy = S.deepcopy(node)
        sometimes = _evaluated_sometimes(node)
        for field in node._fields:
            original = getattr(node, field)
            if isinstance(original, S.gast.expr):
                setattr(copy, field, self.value(original, out,
                                                share and id(original) not in sometimes))
            elif isinstance(original, list):
                setattr(copy, field, [
                    self.value(o, out, share and id(o) not in sometimes)
                    if isinstance(o, S.gast.expr) else S.deepcopy(o) for o in original])
        return copy


def _evaluated_sometimes(node):
    """The ids of the operands of ``node`` that Python evaluates only on a branch."""
    if isinstance(node, S.IfExp):
        return {id(node.body), id(node.orelse)}
    if isinstance(node, S.BoolOp):
        return {id(value) for value in node.values[1:]}
    return set()


def _name_plan(name):
    """The plan of an expression that is just an active name."""
    plan = Plan()
    plan.nodes[id(name)] = Node("name")
    return plan


def _reads_own_target(stmt):
    target = stmt.targets[0]
    names = {t.id for t in S.walk(target) if isinstance(t, S.Name)}
    return bool(names & {n.id for n in S.walk(stmt.value) if isinstance(n, S.Name)})


def _merged(contributions):
    """Equal contributions to one name, as from ``x * x``, become one doubled."""
    merged = []
    for operand, contribution in contributions:
        twin = next((i for i, (o, c) in enumerate(merged) if isinstance(operand, S.Name)
                     and isinstance(o, S.Name) and o.id == operand.id
                     and S.shape(c) == S.shape(contribution)), None)
        if twin is None:
            merged.append((operand, contribution))
        else:
            merged[twin] = (operand, S.binop(contribution, S.Mult(), S.const(2)))
    return merged


def reverse(normalized, wrt, module, kind, name, tuple_wrt=False, arrays=False,
            loops="stack", has_aux=False, pullback=False):
    """The adjoint FunctionDef of ``normalized`` w.r.t. the parameter names ``wrt``.

    With ``arrays``, values may be NumPy arrays: adjoints of broadcasting
    operations are summed back to their operand's shape, and never updated in
    place.  ``loops="reversible"`` undoes loop updates instead of saving them
    (see ``analyze``).  With ``has_aux`` the function returns (loss, aux): the
    loss is differentiated, and aux returned as it is, after the gradient.
    With ``pullback`` a VJP is a generator: its primal sweep runs to a ``yield``
    of the function's value, and its reverse sweep, on the values that run
    kept, when it is sent the cotangent; it returns the gradients.
    """
    aux = _split_results(normalized, kind, has_aux)
    sweep = Sweep(analyze(normalized, wrt, arrays, loops, halves=module.splits), module, kind,
                  name, tuple_wrt)
    sweep.aux, sweep.pullback = aux, pullback
    return sweep.function()


def reverse_in_halves(normalized, wrt, module, names, tuple_wrt=False, arrays=False,
                      loops="stack"):
    """The VJP of ``normalized`` w.r.t. ``wrt`` as the (forward, backward)
    FunctionDefs named ``names`` (see :mod:`derivo.residuals`)."""
    sweep = Sweep(analyze(normalized, wrt, arrays, loops, halves=module.splits), module,
                  "vjp", names[0], tuple_wrt)
    sweep.pullback = True
    tape = sweep.tape
    stack = (tape.stack, {tape.push: "append", tape.pop: "pop"}) if tape.used else None
    return residuals.split(sweep.function(), *names, stack)


def _split_results(normalized, kind, has_aux):
    """The name of the auxiliary result of a ``has_aux`` gradient, which leaves
    ``normalized.results`` as the one differentiated (None without has_aux).
    grad and value_and_grad take one result: a function returning a tuple is
    refused at its return (a vjp takes one cotangent per result)."""
    if kind == "vjp":
        return None
    results, final = normalized.results, normalized.tree.body[-1]
    label = normalized.parsed.tree.name
    if has_aux and len(results) != 2:
        raise normalized.parsed.error(
            UnsupportedSyntax, final, "with has_aux=True, {} must return a pair (loss, aux), "
            "got {} value(s): return loss, (a, b) to pass several".format(label, len(results)),
            "has_aux result")
    if not has_aux and len(results) > 1:
        raise normalized.parsed.error(
            UnsupportedSyntax, final, "{} returns a tuple of {} values, and a gradient is of "
            "one number: return the loss alone, or pass has_aux=True to get (loss, aux) back "
            "as (gradient, aux), the aux untouched".format(label, len(results)), "tuple result")
    _refuse_result_not_a_number(normalized, results[0])
    if not has_aux:
        return None
    normalized.results = results[:1]
    return results[1]


#: What a returned display makes, when it is not a number: a gradient is of one.
_NOT_NUMBERS = {S.List: "a list", S.gast.ListComp: "a list", S.Tuple: "a tuple",
                S.gast.Dict: "a dict", S.gast.Set: "a set", S.gast.JoinedStr: "a string"}


def _refuse_result_not_a_number(normalized, result):
    """Refuse a differentiated result that the code assigns a list, tuple, dict
    or set display, a string or None: grad takes the derivative of one number."""
    for stmt in S.walk(normalized.tree):
        if not (isinstance(stmt, S.Assign) and isinstance(stmt.targets[0], S.Name) and
                stmt.targets[0].id == result):
            continue
        value = stmt.value
        made = _NOT_NUMBERS.get(type(value))
        if isinstance(value, S.Constant) and not isinstance(value.value, (int, float)):
            made = repr(value.value) if value.value is None else "a " + type(value.value).__name__
        if made:
            raise normalized.parsed.error(
                UnsupportedSyntax, stmt, "{} returns {}, and a gradient is of one number: "
                "return the loss (np.sum(...) of an array or of a list's items), or pass "
                "has_aux=True and return (loss, aux) for the rest".format(
                    normalized.parsed.tree.name, made), "result not a number")
