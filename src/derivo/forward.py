"""Stage 4 (forward mode): write the tangent of a function in statement form.

The generated function runs the user's statements as they are, each active
assignment ``y = expr`` next to its tangent ``dy = ...``: the sum, over the
operands of each operation, of the operand's tangent times the rule's partial
derivative.  The tangent goes *before* the assignment when it reads the old
value of ``y`` (``s = s * c`` needs the old ``s``: ``ds = ds * c + s * dc``
first), otherwise after it, so it may read ``y`` as the operation's result.

Forward mode needs no stack: branches, loops, ``break``, ``continue`` and the
early returns (already structural after ``ssa``) are copied as they are, so
its memory does not grow with the number of loop trips.  A call to a user
function becomes a call to that function's own tangent code, tangents first:
``t, dt = helper_jvp(dx, x, n)``.  Lists grow and arrays are written with their
tangents (``dxs.append(dv)``, ``dx[i] = dv``), and the stack of reverse-mode code
carries tangents too, so derivo's own gradients have tangents (Hessians).

Tangents are symbolic zeros until a differentiated value reaches them: no
``dy = 0.0`` is written for a value that does not depend on the inputs, and a
zero is materialised only where control paths meet (after a branch, at a loop
head) and one of them has a tangent.
"""

import builtins

import numpy as np

from . import optimize, rules, runtime
from . import syntax as S
from .analyze import analyze
from .errors import NoDerivativeRule, UnsupportedSyntax
from .memory import is_new_array
from .parse import parameter_names
from .plans import same_operands
from .rules import Template
from .ssa import is_append
from .statements import assigned_names, index_value, is_item_write

#: the tangent of an elementwise operation whose operands broadcast, when every
#: term is an operand's tangent as it is (``x + b``): it takes the result's shape
_BROADCAST = Template(lambda t, ans: np.broadcast_to(t, np.shape(ans)))


class Tangents:
    """Emits one function's statements interleaved with their tangents."""

    def __init__(self, analysis, module, name):
        self.analysis = analysis
        self.arrays = analysis.arrays
        self.parsed = analysis.parsed
        self.normalized = analysis.normalized
        self.namer = analysis.normalized.namer
        self.module = module        # the generated module, for helper functions and names
        self.name = name
        self.tangents = {}
        self.zero = set()           # active names whose tangent is a symbolic zero here
        self.defined = set()        # names surely holding a value here
        self.loops = []             # per enclosing loop: its (breaks, continues), each
                                    # with the zeros and the defined names where it jumps
        self.last_line = None

    def tangent(self, ident):
        """The name of ``ident``'s tangent: ``dz`` for ``z``."""
        if ident not in self.tangents:
            self.tangents[ident] = self.namer.fresh("d" + ident)
        return self.tangents[ident]

    def builtin(self, ident):
        return self.module.bind(ident, getattr(builtins, ident), avoid=self.parsed.local_names)

    def runtime(self, helper):
        return self.module.bind(helper, getattr(runtime, helper), avoid=self.parsed.local_names)

    def zero_like(self, value):
        """A zero tangent for ``value`` (an expression, evaluated only if needed)."""
        if self.arrays and value is not None:
            return S.call(self.runtime("zero_gradient"), value)
        return S.const(0.0)

    def zero_of(self, ident, defined=None):
        """A zero tangent for the variable ``ident``, one that can be written into
        if ``ident`` is (a list's tangent is a list), of its shape where it
        surely holds a value (is in ``defined``, by default the names defined here)."""
        defined = self.defined if defined is None else defined
        # a global (written into, as only a used name gets here) surely holds a value
        if ident not in defined and ident in self.analysis.local_names:
            return S.const(0.0)
        if ident in self.analysis.dicts:  # a dict's tangent is a dict, written into by key
            return S.call(S.attribute(S.name(self.builtin("dict")), "fromkeys"), S.name(ident),
                          S.const(0.0))
        if ident in self.analysis.lists or (ident in self.written and not self.arrays):
            return S.binop(S.list_([S.const(0.0)]), S.Mult(),
                           S.call(self.builtin("len"), S.name(ident)))
        return self.zero_like(S.name(ident))

    def owned(self, ident):
        """``x = owned(x)``: a copy generated code may write into."""
        stmt = S.assign(ident, S.call(self.runtime("owned"), S.name(ident)))
        stmt.effects = True
        return stmt

    # --- the whole function -------------------------------------------------------

    def function(self):
        tree = self.normalized.tree
        body, final = tree.body[:-1], tree.body[-1]
        args = tree.args
        params = [a.id for a in args.args]
        wrt = self.analysis.wrt
        seeds = [self.tangent(w) for w in wrt]
        self.zero = set(self.analysis.active) - set(wrt)
        self.defined = set(params) | {a.id for a in args.kwonlyargs}
        self.written = {stmt.targets[0].value.id for stmt in S.walk(tree)
                        if is_item_write(stmt)}
        self.writes_in_place = bool(self.written & self.analysis.active)
        self.stacks, self.item_pops = _stacks_with_tangents(
            tree, self.analysis.active, self.parsed)
        # Arrays the function writes into in place are copies, and so are their tangents.
        out = []
        for ident, other, message in getattr(tree, "apart", []):
            out.append(S.Expr(value=S.call(self.runtime("unshared"), S.name(ident),
                                           S.name(other), S.const(message))))
        for ident in getattr(tree, "owned", []):
            out.append(self.owned(ident))
            if ident in self.analysis.active and ident in wrt:
                out.append(self.owned(self.tangent(ident)))
        out += self.block(body)
        if self.zero is None:  # the body always raises
            self.zero = set()
        results = self.normalized.results
        tangents = [self.result_tangent(r) for r in results]
        tangent = S.tuple_(tangents) if isinstance(final.value, S.Tuple) else tangents[0]
        out.append(S.return_(S.tuple_([S.deepcopy(final.value), tangent])))
        function = S.function(
            self.name, seeds + params, out, defaults=S.deepcopy(args.defaults),
            kwonly=[a.id for a in args.kwonlyargs], kw_defaults=S.deepcopy(args.kw_defaults))
        return optimize.optimize(function)

    def stack_operation(self, stmt):
        """``push(x)``: ``push(x)`` then ``push(dx)``; ``x = pop()``: ``dx = pop()``
        then ``x = pop()`` (the tangent was pushed last)."""
        copy = S.effect(S.deepcopy(stmt))
        alias = _stack_use(stmt, self.stacks)
        if isinstance(stmt, S.Expr):
            (item,) = stmt.value.args
            name = _pushed_name(item)
            if name not in self.analysis.active:
                return [copy]
            if isinstance(item, S.Name):
                tangent = self.name_tangent(item) or self.zero_of(name)
            elif name in self.zero:
                tangent = S.const(0.0)
            else:  # push(copy_of(x[i])): the part of x's tangent too
                tangent = S.deepcopy(item)
                tangent.args[0].value = S.name(self.tangent(name))
            return [copy, S.effect(S.Expr(value=S.call(alias, tangent)))]
        target = stmt.targets[0].id
        if self.item_pops.get(id(stmt)) in self.analysis.active:
            # t = pop() restoring x[i] = t: t carries the part's saved tangent.
            self.analysis.active.add(target)
        if target not in self.analysis.active:
            return [copy]
        self.zero.discard(target)
        return [S.effect(S.assign(self.tangent(target), S.call(alias))), copy]

    def result_tangent(self, ident):
        if ident in self.analysis.active and ident not in self.zero:
            return S.name(self.tangent(ident))
        return self.zero_of(ident, self.defined | {ident})  # (it has one at the return)

    # --- statements ----------------------------------------------------------------

    def block(self, stmts):
        """The code of ``stmts``; leaves ``self.zero`` as None if it never falls through."""
        out = []
        for index, stmt in enumerate(stmts):
            if self.is_trip_counter(stmt, stmts, index):
                continue
            out += self.statement(stmt)
            if self.zero is None:
                break
        return out

    def statement(self, stmt):
        if _stack_use(stmt, self.stacks) is not None:
            return self.stack_operation(stmt)
        if isinstance(stmt, S.Assign):
            if is_item_write(stmt):
                return self.item_write(stmt)
            if getattr(stmt.value, "user_function", None) is not None:
                code = self.call(stmt)
            else:
                code = self.assign(stmt)
            if isinstance(stmt.value, S.Constant) and stmt.value.value is None:
                # x = None (as before a loop that pushes x): no list to zero yet
                self.defined -= _stored(stmt.targets[0])
            else:
                self.defined |= _stored(stmt.targets[0])
            if getattr(stmt, "owns", False):
                code.append(self.owned(stmt.targets[0].id))
            if id(stmt) in self.analysis.shared_checks:  # z = y[i]: refused if a view
                ident = stmt.targets[0].id
                source, message = self.analysis.shared_checks[id(stmt)]
                code.append(S.Expr(value=S.call(self.runtime("unshared"), S.name(ident),
                                                S.name(source), S.const(message))))
            return code
        if is_append(stmt):
            return self.append(stmt)
        if isinstance(stmt, S.If):
            return self.branch(stmt)
        if isinstance(stmt, (S.For, S.While)):
            return self.loop(stmt)
        if isinstance(stmt, (S.Break, S.Continue)):
            jumps = self.loops[-1][0 if isinstance(stmt, S.Break) else 1]
            jump = S.copy_location(type(stmt)(), stmt)
            jumps.append((jump, self.zero, set(self.defined)))
            self.zero = None
            return [jump]
        if isinstance(stmt, S.gast.Raise):
            self.zero = None
        return [S.effect(S.deepcopy(stmt))]

    def is_trip_counter(self, stmt, block, index):
        """``n = 0`` before a loop that counts its trips: the count is for the
        reverse sweep (the loop drops its ``n = n + 1``)."""
        if not isinstance(stmt, S.Assign) or not isinstance(stmt.targets[0], S.Name):
            return False
        following = block[index + 1] if index + 1 < len(block) else None
        return isinstance(following, (S.For, S.While)) and \
            stmt.targets[0].id == following.trips

    def assign(self, stmt):
        target = stmt.targets[0].id
        copy = S.deepcopy(stmt)
        copy.effects = getattr(stmt, "opaque", False)
        plan = self.analysis.plans.get(id(stmt))
        if target not in self.analysis.active or plan is None:
            return [copy]
        after = target not in _names(stmt.value)
        expression = ExpressionTangent(self, plan, stmt.value, target, after)
        tangent = expression.tangent(stmt.value)
        if tangent is None and target in self.analysis.lists and isinstance(stmt.value, S.List):
            # A list that grows or is written gets a tangent list from the start.
            tangent = S.list_(expression.zero(e) for e in stmt.value.elts)
        if tangent is None:
            self.zero.add(target)
            return [copy]
        if getattr(stmt, "owns", False):
            # the primal is copied after the assignment (ssa._mark_owned): so is its tangent
            tangent = S.call(self.runtime("owned"), tangent)
        elif self.writes_in_place:
            tangent = self.owned_like(stmt.value, tangent)
        copy.value = expression.primal()
        if isinstance(tangent, S.Name) and tangent.id == self.tangent(target):
            self.zero.discard(target)
            return self.commented(stmt, expression.out + [copy])  # y = y + c: dy stays
        # Before the assignment only if it reads the value the assignment replaces.
        after = after or target not in _names(tangent)
        tangent = S.assign(self.tangent(target), tangent)
        self.zero.discard(target)
        code = expression.out + ([copy, tangent] if after else [tangent, copy])
        return self.commented(stmt, code)

    def owned_like(self, value, tangent):
        """The tangent of ``value``, copied where it must be: a tangent has its
        primal's ownership, so when ``value`` is a new array (``a.copy()``,
        ``a + 0.0``) its tangent is a new array too, not another tangent's
        memory (``da``, ``np.reshape(da, s)``) that the function may write into
        (``da[0] = 0.0``).  Each arm of a conditional expression on its own."""
        if isinstance(value, S.IfExp) and isinstance(tangent, S.IfExp):
            tangent.body = self.owned_like(value.body, tangent.body)
            tangent.orelse = self.owned_like(value.orelse, tangent.orelse)
        elif is_new_array(value, self.parsed) and self.may_be_a_tangents_memory(tangent):
            tangent = S.call(self.runtime("owned"), tangent)
        return tangent

    def may_be_a_tangents_memory(self, tangent):
        """Whether the expression ``tangent`` may evaluate to (part of) the memory
        of a tangent it reads: anything but arithmetic and NumPy calls that make
        a new array."""
        if isinstance(tangent, (S.BinOp, S.UnaryOp, S.Compare, S.Constant)):
            return False  # arithmetic makes a new array, or an immutable number
        if isinstance(tangent, S.IfExp):
            return any(map(self.may_be_a_tangents_memory, (tangent.body, tangent.orelse)))
        if isinstance(tangent, S.Call) and _makes_a_new_array(tangent, self.module.namespace):
            return False
        return bool(_names(tangent) & set(self.tangents.values()))

    def commented(self, stmt, code):
        """Point back at the user's line where derivo rewrote it (``s *= c``
        became ``s = s * c``), once per line."""
        line = getattr(stmt, "lineno", None)
        text = self.parsed.source_line(line)
        if line is None or line == self.last_line or not text:
            return code
        self.last_line = line
        if " ".join(S.to_source(stmt).split()) == text:
            return code
        return [self.module.comments.statement("line {}: {}".format(line, text))] + code

    def call(self, stmt):
        """``t = helper(x, n)`` becomes ``t, dt = helper_jvp(dx, x, n)``."""
        copy = S.effect(S.deepcopy(stmt))
        target = stmt.targets[0]
        names = [t.id for t in target.elts] if isinstance(target, S.Tuple) else [target.id]
        active = [n for n in names if n in self.analysis.active]
        if not active:
            return [copy]
        call = stmt.value
        _, callee, active_params = next(c for c in self.analysis.calls if c[0] is stmt)
        by_param = dict(zip(parameter_names(callee), call.args))
        by_param.update({k.arg: k.value for k in call.keywords})
        seeds = [(p, self.name_tangent(by_param[p])) for p in active_params]
        seeds = [(p, t) for p, t in seeds if t is not None]
        if not seeds:
            self.zero |= set(active)
            return [copy]
        helper = self.module.jvp_function(callee, tuple(p for p, _ in seeds), self.parsed, call)
        tangents = [S.store(self.tangent(n)) for n in names]
        tangent_target = tangents[0] if isinstance(target, S.Name) else \
            S.tuple_(tangents, store_ctx=True)
        copy.targets = [S.tuple_([S.deepcopy(target), tangent_target], store_ctx=True)]
        copy.value = S.call(helper, *[t for _, t in seeds], *S.deepcopy(call.args),
                            keywords=S.deepcopy(call.keywords))
        self.zero -= set(active)
        owned = [self.owned(self.tangent(n)) if n in self.written
                 else self.owned_as(n, seeds, by_param)
                 for n in active if n in self.written or self.writes_in_place]
        return self.commented(stmt, [copy] + owned)

    def owned_as(self, ident, seeds, by_param):
        """``dv = tangent_owned(dv, v, (a,), (da,))``: after a call, ``ident``'s tangent
        is copied when it shares an argument's tangent but ``ident`` does not
        share that argument (whether it does is known only when the call returns)."""
        arguments = S.tuple_([S.deepcopy(by_param[p]) for p, _ in seeds])
        tangents = S.tuple_([S.deepcopy(tangent) for _, tangent in seeds])
        stmt = S.assign(self.tangent(ident), S.call(
            self.runtime("tangent_owned"), S.name(self.tangent(ident)), S.name(ident),
            arguments, tangents))
        stmt.effects = True
        return stmt

    def append(self, stmt):
        """``xs.append(v)``, and ``dxs.append(dv)`` if xs has a tangent."""
        copy = S.effect(S.deepcopy(stmt))
        items, item = stmt.value.func.value.id, stmt.value.args[0]
        if items not in self.analysis.active:
            return [copy]
        before = self.first_tangent(stmt, items)
        self.zero.discard(items)
        tangent = self.name_tangent(item) or self.zero_like(S.deepcopy(item))
        grow = S.Expr(value=S.call(S.attribute(self.tangent(items), "append"), tangent))
        return self.commented(stmt, before + [copy, grow])

    def item_write(self, stmt):
        """``x[i] = v``: ``dx[i] = dv`` first (the index may read x)."""
        copy = S.effect(S.deepcopy(stmt))
        item, value = stmt.targets[0], stmt.value
        array = item.value.id
        if array not in self.analysis.active:
            return [copy]
        before = self.first_tangent(stmt, array)
        self.zero.discard(array)
        tangent = self.name_tangent(value)
        if tangent is None:
            tangent = self.zero_like(None)
        elif self.arrays:  # (an integer array stores v truncated, which has no tangent)
            tangent = S.call(self.runtime("stored_tangent"), tangent, S.name(array))
        part = S.gast.Subscript(value=S.name(self.tangent(array)), slice=S.deepcopy(item.slice),
                                ctx=S.Store())
        write = S.assign(part, tangent)
        write.effects = True
        return self.commented(stmt, before + [write, copy])

    def first_tangent(self, stmt, written):
        """A write into ``written`` whose tangent is a symbolic zero makes its first
        tangent, a new array: refused where another name of that memory, read
        afterwards, keeps its symbolic zero (see Analysis.tangent_shares)."""
        if written not in self.zero:
            return []
        self.refuse_unshared_tangents([stmt], {written})
        return self.materialize([written])

    def refuse_unshared_tangents(self, writes, made):
        """Tangents made for the names ``made`` are new arrays: refused where one of
        ``writes`` changes the memory of such a name and another name of that memory
        keeps its symbolic zero, so would not see the tangent's change."""
        for stmt in writes:
            if set(assigned_names(stmt)) & made:
                for other, refusal in self.analysis.tangent_shares.get(id(stmt), ()):
                    if other in self.zero:
                        raise refusal

    def name_tangent(self, node):
        """The tangent of a name or constant, or None for a symbolic zero."""
        if isinstance(node, S.Name) and node.id in self.analysis.active \
                and node.id not in self.zero:
            return S.name(self.tangent(node.id))
        return None

    # --- control flow ----------------------------------------------------------

    def materialize(self, names, defined=None):
        """Zero tangents for ``names`` (see :meth:`zero_of`)."""
        return [S.assign(self.tangent(n), self.zero_of(n, defined)) for n in sorted(names)]

    def branch(self, stmt):
        """An ``if``, with the symbolic zeros of both arms merged after it."""
        start, defined = set(self.zero), set(self.defined)
        then_code = self.block(stmt.body)
        then_zero, then_defined = self.zero, self.defined
        self.zero, self.defined = set(start), set(defined)
        else_code = self.block(stmt.orelse)
        else_zero, else_defined = self.zero, self.defined
        arms = [(code, zero, known) for code, zero, known in (
            (then_code, then_zero, then_defined), (else_code, else_zero, else_defined))
            if zero is not None]
        if not arms:
            self.zero, self.defined = None, defined
        else:
            self.zero = set.intersection(*[zero for _, zero, _ in arms])
            for code, zero, known in arms:
                self.defined = known
                code += self.materialize(zero - self.zero)
            self.defined = set.intersection(*[known for _, _, known in arms])
        return [S.copy_location(S.if_(S.deepcopy(stmt.test), then_code, else_code), stmt)]

    def loop(self, loop):
        """A loop, copied; tangents it may make nonzero are materialised first,
        so the loop head sees the same zeros on every trip."""
        assigned = _assigned(loop.body) & self.analysis.active  # writes in place included
        target = loop.target.id if isinstance(loop, S.For) else None
        if target in self.analysis.active:
            assigned.add(target)
        # the tangents the body may make are made here, so its writes are checked here
        made = self.zero & assigned
        self.refuse_unshared_tangents(
            [node for node in S.walk(loop) if id(node) in self.analysis.tangent_shares], made)
        before = self.materialize(made)
        head = self.zero - assigned
        defined = set(self.defined)
        self.zero = set(head)
        if target:
            self.defined.add(target)
            if target in self.analysis.active:
                # it runs over values that carry no tangent (a loop over active
                # values was rewritten to index them, see derivo.indexing)
                self.zero.add(target)
        self.loops.append(([], []))
        body = loop.body[1:] if loop.trips else loop.body  # without its trip counter
        code = self.block(body)
        breaks, continues = self.loops.pop()
        if self.zero is not None:
            code += self.materialize(self.zero - head)
        for jump, zero, defined_there in breaks + continues:
            _insert_before(code, jump, self.materialize(zero - head, defined_there))
        self.zero, self.defined = set(head), defined
        if isinstance(loop, S.While):
            header = S.while_(S.deepcopy(loop.test), code)
        else:
            header = S.for_(target, S.deepcopy(loop.iter), code)
        return before + [S.copy_location(header, loop)]


class ExpressionTangent:
    """The tangent of one expression of one statement.

    Values the partial derivatives read are the statement's own sub-expressions;
    one read twice is computed once, into a temporary that the statement itself
    then reads as well.
    """

    def __init__(self, sweep, plan, root, target, after):
        self.sweep = sweep
        self.plan = plan
        self.root = root
        self.target = target
        self.after = after      # the tangent follows the assignment: root's value is target
        self.out = []           # temporaries, computed before the statement and its tangent
        self.values = {}
        self.arms = 0           # inside a conditional arm: no temporaries (it may not run)

    def primal(self):
        """The statement's value, reading the temporaries the tangent bound."""
        if id(self.root) in self.values:
            return S.name(self.values[id(self.root)])
        return self.rebuilt(self.root, primal=True)

    def tangent(self, node):
        """``node``'s tangent as an expression, or None for a symbolic zero."""
        entry = self.plan.nodes.get(id(node))
        if entry is None:
            return None
        sweep = self.sweep
        if entry.kind == "name":
            return sweep.name_tangent(node)
        if entry.kind == "ifexp":
            self.arms += 1
            arms = [self.tangent(arm) for arm in entry.operands]
            zeros = [self.zero(arm) if t is None else t for arm, t in zip(entry.operands, arms)]
            self.arms -= 1
            if all(t is None for t in arms):
                return None
            return S.gast.IfExp(test=self.value(node.test), body=zeros[0], orelse=zeros[1])
        if entry.kind == "sequence":
            elements = [self.tangent(e) for e in entry.operands]
            if all(t is None for t in elements):
                return None
            elements = [self.zero_shaped(e) if t is None else t
                        for e, t in zip(entry.operands, elements)]
            if isinstance(node, S.gast.Dict):
                return S.gast.Dict(keys=[S.deepcopy(k) for k in node.keys], values=elements)
            return type(node)(elts=elements, ctx=S.Load())
        if isinstance(node, S.BinOp) and isinstance(node.op, S.Add) and \
                any(map(sweep.analysis.builds_a_sequence, (node.left, node.right))):
            return self.joined_tangent(node)
        return self.rule_tangent(node, entry)

    def joined_tangent(self, node):
        """``a + b`` of lists or tuples joins them, and its tangent joins theirs:
        a symbolic zero is written out, as zeros of its operand's length."""
        operands = (node.left, node.right)
        tangents = [self.tangent(operand) for operand in operands]
        if all(t is None for t in tangents):
            return None
        for index, operand in enumerate(operands):
            if tangents[index] is not None:
                continue
            if isinstance(operand, (S.List, S.Tuple)):  # a display: zeros of its items
                tangents[index] = self.zero_shaped(operand)
                continue
            tuple_ = isinstance(operand, S.Name) and operand.id in self.sweep.analysis.tuples
            zero = (S.tuple_ if tuple_ else S.list_)([S.const(0.0)])
            tangents[index] = S.binop(zero, S.Mult(), S.call(
                self.sweep.builtin("len"), self.value(operand)))
        return S.binop(tangents[0], S.Add(), tangents[1])

    def zero(self, node):
        """A zero tangent shaped like ``node``'s value."""
        return self.sweep.zero_like(self.value(node) if self.sweep.arrays else None)

    def zero_shaped(self, node):
        """A zero tangent for an item of a display: a display of zeros for a
        display (``[(x,), (1.0, y)]`` has the tangent ``[(dx,), (0.0, 0.0)]``), a
        name's zero as its variable's (a list's is a list), else :meth:`zero`."""
        if isinstance(node, (S.List, S.Tuple)):
            return type(node)(elts=list(map(self.zero_shaped, node.elts)), ctx=S.Load())
        if isinstance(node, S.gast.Dict) and None not in node.keys:
            return S.gast.Dict(keys=[S.deepcopy(k) for k in node.keys],
                               values=list(map(self.zero_shaped, node.values)))
        if isinstance(node, S.Name):
            return self.sweep.zero_of(node.id)
        return self.zero(node)

    def rule_tangent(self, node, entry):
        rule = entry.rule
        selected = self.selected_tangent(node, entry)
        if selected is not None:
            return selected
        terms, broadcast = [], bool(entry.reduce)
        for index in entry.active:
            param, operand, template = entry.operands[index]
            tangent = self.tangent(operand)
            if tangent is None:
                continue
            # a keyword argument's tangent rule is its parameter's, not its place's
            position = rule.params.index(param) if param in rule.params else index
            jvp = rule.jvps[position] if position < len(rule.jvps) else None
            if rule.style == "partial" and jvp is None:
                partial = self.instantiate(template, node, entry, {})
                if index == 1 and rule.primitive is S.Mult:
                    term = S.binop(partial, S.Mult(), tangent)  # x * dy, as one writes it
                else:
                    term = S.binop(tangent, S.Mult(), partial)
                broadcast = broadcast and (index in entry.reduce and not _names(partial)) \
                    and not same_operands(entry.operands)
            else:
                if jvp is None:
                    raise self.sweep.parsed.error(
                        NoDerivativeRule, node, "cannot differentiate {!r} in forward mode: its "
                        "rule gives only a vector-Jacobian product (register a tangent rule "
                        "with derivo.rules.defjvp)".format(rule.label), rule.label)
                term = self.instantiate(jvp, node, entry, {"t": tangent})
                broadcast = False
            terms.append(optimize.simplify(term))
        if not terms:
            return None
        total = terms[0]
        for term in terms[1:]:
            positive = _negated(term)
            if positive is not None:
                total = S.binop(total, S.Sub(), positive)
            else:
                total = S.binop(total, S.Add(), term)
        if broadcast and self.sweep.arrays:
            total = self.instantiate(_BROADCAST, node, entry, {"t": total})
        return total

    def selected_tangent(self, node, entry):
        """The tangent of an operation whose partials choose one operand (max(a, b):
        ``1.0 if a >= b else 0.0`` and its complement): the chosen one's tangent,
        ``da if a >= b else db``, which holds for tuples too, where a product
        with the partial would not.  None if the partials are not such a choice,
        or no operand has a tangent."""
        # (a constant argument has no template: then no operand is chosen)
        if entry.rule.style != "partial" or any(entry.rule.jvps) or any(
                template is None or _choice_arms(template.body) is None
                for _, _, template in entry.operands):
            return None
        tangents = [self.tangent(operand) if index in entry.active else None
                    for index, (_, operand, _) in enumerate(entry.operands)]
        if all(t is None for t in tangents):
            return None
        chosen, test = {}, None
        for index, (_, operand, template) in enumerate(entry.operands):
            partial = self.instantiate(template, node, entry, {})
            arms = _choice_arms(partial)
            if test is not None and S.expr_source(partial.test) != S.expr_source(test):
                return None
            test = partial.test
            chosen[arms] = index
        if set(chosen) != {True, False}:
            return None
        when_true, when_false = (
            tangents[chosen[arm]] or self.zero_shaped(entry.operands[chosen[arm]][1])
            for arm in (True, False))
        return S.gast.IfExp(test=test, body=when_true, orelse=when_false)

    def instantiate(self, template, node, entry, bindings):
        bindings = dict(bindings)
        if "ans" in template.uses:
            bindings["ans"] = self.value(node)
        for param, argument, _ in entry.operands:
            if param in template.uses and param not in bindings:
                bindings[param] = self.value(argument)
        # An option the user did not pass is not passed on either: the template's
        # ``np.sum(t, axis=axis)`` reads ``np.sum(t)`` when the call gave no axis.
        unset = {p: "__derivo_unset_{}__".format(p) for p in template.defaults
                 if p not in bindings}
        bindings.update({p: S.name(marker) for p, marker in unset.items()})
        sweep = self.sweep
        expression = template.instantiate(bindings, sweep.module.template_names(
            template, sweep.parsed.local_names))
        return _drop_unset(expression, {marker: template.defaults[p]
                                        for p, marker in unset.items()})

    def value(self, node, primal=False):
        """An expression for ``node``'s value.  A value the tangent reads is
        bound to a temporary (which the statement then reads too) when it is read
        twice, or is an array operation: the statement computes it anyway."""
        if isinstance(node, (S.Name, S.Constant)):
            return S.deepcopy(node)
        if node is self.root and self.after:
            return S.name(self.target)
        if isinstance(node, (S.Slice, S.Tuple)) and any(
                isinstance(n, S.Slice) for n in S.walk(node)):
            return index_value(node)
        if id(node) in self.values:
            return S.name(self.values[id(node)])
        expression = self.rebuilt(node, primal)
        if primal or self.arms:
            return expression
        stored = self.plan.stored.get(id(node))
        if stored or node is self.root or self.plan.requests.get(id(node), 0) > 1 or (
                self.sweep.arrays and not isinstance(node, (S.Subscript, S.Attribute))
                and not self.sweep.analysis.is_scalar(node)):
            temp = stored or self.sweep.namer.numbered("t")
            self.out.append(S.assign(temp, expression))
            self.values[id(node)] = temp
            return S.name(temp)
        return expression

    def rebuilt(self, node, primal=False):
        """``node`` with its sub-expressions replaced by their (shared) values."""
        if id(node) not in self.plan.nodes:
            return S.deepcopy(node)
        copy = S.deepcopy(node)
        for field in node._fields:
            original = getattr(node, field)
            arm = int(isinstance(node, S.IfExp) and field != "test")
            self.arms += arm
            if isinstance(original, S.gast.expr):
                setattr(copy, field, self.value(original, primal))
            elif isinstance(original, list):
                setattr(copy, field, [self.value(o, primal) if isinstance(o, S.gast.expr)
                                      else S.deepcopy(o) for o in original])
            self.arms -= arm
        return copy


def _stacks_with_tangents(tree, active, parsed):
    """``push = stack.append`` and ``pop = stack.pop`` (how reverse-mode code
    saves values) -> ({alias: (stack, 'append' | 'pop')}, the pops restoring
    an array's part, see :func:`_item_pops`), for the stacks some
    differentiated value goes through.  Their pushes push tangents too, and
    their pops pop them, so that ``grad`` code has a tangent (a Hessian)."""
    aliases = {}
    for stmt in S.walk(tree):
        if isinstance(stmt, S.Assign) and isinstance(stmt.targets[0], S.Name) and \
                isinstance(stmt.value, S.Attribute) and \
                stmt.value.attr in ("append", "pop") and \
                isinstance(stmt.value.value, S.Name):
            aliases[stmt.targets[0].id] = (stmt.value.value.id, stmt.value.attr)
    item_pops = _item_pops(tree, aliases)
    pushed, popped = {}, {}
    for stmt in S.walk(tree):
        alias = _stack_use(stmt, aliases)
        if alias is not None:
            stack = aliases[alias][0]
            if isinstance(stmt, S.Expr):
                pushed.setdefault(stack, set()).update(
                    _pushed_name(a) for a in stmt.value.args)
            else:
                popped.setdefault(stack, set()).add(
                    item_pops.get(id(stmt), stmt.targets[0].id))
    carried = {}
    for stack in set(pushed) | set(popped):
        names = pushed.get(stack, set()) | popped.get(stack, set())
        if not names & active:
            continue
        # Each push of x is undone by an ``x = pop()``, as in reverse-mode code: then
        # a tangent goes on the stack exactly when its value's name has one.
        if pushed.get(stack) != popped.get(stack):
            stmt = next(s for s in S.walk(tree) if _stack_use(s, aliases) is not None
                        and aliases[_stack_use(s, aliases)][0] == stack)
            raise parsed.error(
                UnsupportedSyntax, stmt, "cannot differentiate the list {!r} in forward "
                "mode: differentiated values go through it, and only lists where each "
                "'push(x)' is undone by an 'x = pop()' are supported".format(stack),
                "list")
        carried[stack] = names
    return {alias: use for alias, use in aliases.items() if use[0] in carried}, item_pops


def _stack_use(stmt, aliases):
    """The alias ``stmt`` pushes with (``push(x)``) or pops with (``x = pop()``)."""
    if isinstance(stmt, S.Expr):
        call = stmt.value
        kind = "append"
    elif isinstance(stmt, S.Assign) and isinstance(stmt.targets[0], S.Name):
        call = stmt.value
        kind = "pop"
    else:
        return None
    if isinstance(call, S.Call) and isinstance(call.func, S.Name) and \
            aliases.get(call.func.id, (None, None))[1] == kind and \
            len(call.args) == (kind == "append") and not call.keywords:
        return call.func.id
    return None


def _pushed_name(item):
    """The name whose value ``push(item)`` saves: ``x`` for ``x`` and for
    ``copy_of(x[i])`` (a part an item write overwrites); else None."""
    if isinstance(item, S.Name):
        return item.id
    if isinstance(item, S.Call) and len(item.args) == 1 and \
            isinstance(item.args[0], S.Subscript) and isinstance(item.args[0].value, S.Name):
        return item.args[0].value.id
    return None


def _item_pops(tree, aliases):
    """{id(t = pop()): x} for each pop that the next statement writes back
    into an array, ``x[i] = t``: reverse-mode code restoring an overwritten part."""
    found = {}
    for block in S.blocks(tree):
        for stmt, following in zip(block, block[1:]):
            if _stack_use(stmt, aliases) is not None and isinstance(stmt, S.Assign) \
                    and is_item_write(following) and isinstance(following.value, S.Name) \
                    and following.value.id == stmt.targets[0].id:
                found[id(stmt)] = following.targets[0].value.id
    return found


def _makes_a_new_array(call, namespace):
    """Whether the generated code's ``call`` (``np.dot(a, b)``) gives a new
    array: a ufunc, derivo's own copy or zeros, or a primitive the rule tables
    declare ``returns=NEW`` (see memory.call_result)."""
    function = call.func
    if isinstance(function, S.Attribute) and isinstance(function.value, S.Name):
        owner = namespace.get(function.value.id)
        callee = getattr(owner, function.attr, None) if owner is np else None
    elif isinstance(function, S.Name):
        callee = namespace.get(function.id)
    else:
        return False
    if isinstance(callee, np.ufunc) or callee in (runtime.owned, runtime.zero_gradient):
        return True
    return callee is not None and rules.returns(
        callee, len(call.args), [k.arg for k in call.keywords]) == rules.NEW


def _drop_unset(expression, defaults):
    """Leave out keywords whose value is an unset option's marker; elsewhere
    the marker stands for the option's default."""
    class Drop(S.NodeTransformer):
        def visit_Call(self, call):
            call.keywords = [k for k in call.keywords if not (
                isinstance(k.value, S.Name) and k.value.id in defaults)]
            return self.generic_visit(call)

        def visit_Name(self, name):
            if name.id in defaults:
                return S.deepcopy(defaults[name.id])
            return name

    return Drop().visit(expression)


def _choice_arms(partial):
    """True for ``1.0 if test else 0.0``, False for ``0.0 if test else 1.0``, else None."""
    if not isinstance(partial, S.gast.IfExp) or not all(
            isinstance(arm, S.Constant) for arm in (partial.body, partial.orelse)):
        return None
    return {(1.0, 0.0): True, (0.0, 1.0): False}.get((partial.body.value, partial.orelse.value))


def _negated(term):
    """``a`` if ``term`` is ``-a`` (or ``-a * b``, ``-a / b``), else None: then
    ``s + term`` reads ``s - a``, which is the same number."""
    if isinstance(term, S.UnaryOp) and isinstance(term.op, S.USub):
        return term.operand
    if isinstance(term, S.BinOp) and isinstance(term.op, (S.Mult, S.Div)):
        left = _negated(term.left)
        if left is not None:
            return S.binop(left, term.op, term.right)
    return None


def _names(node):
    return {n.id for n in S.walk(node) if isinstance(n, S.Name)}


def _stored(target):
    return {n.id for n in S.walk(target) if isinstance(n, S.Name)}


def _assigned(block):
    """Names a block assigns, writes into (``x[i] = v``) or appends to."""
    names = set()
    for node in S.walk(block):
        if isinstance(node, S.Name) and isinstance(node.ctx, S.Store):
            names.add(node.id)
        elif is_item_write(node) or is_append(node):
            names |= set(assigned_names(node))
    return names


def _insert_before(block, node, stmts):
    """Insert ``stmts`` before ``node`` wherever it sits in the nested ``block``."""
    if not stmts:
        return
    for index, stmt in enumerate(block):
        if stmt is node:
            block[index:index] = stmts
            return
        if isinstance(stmt, S.If):
            _insert_before(stmt.body, node, stmts)
            _insert_before(stmt.orelse, node, stmts)


def _refuse_checked_undos(normalized):
    """A loops="reversible" derivative checks its undos as it runs (runtime.Undo),
    which has no tangent: refuse it, saying what to use instead."""
    parsed, tree = normalized.parsed, normalized.tree
    for node in S.walk(tree):
        if isinstance(node, S.Call) and parsed.callee_key(node) is runtime.Undo:
            raise parsed.error(
                UnsupportedSyntax, node, "cannot differentiate {}, a loops='reversible' "
                "derivative, again: its reverse sweep checks each undo as it runs, which "
                "derivo does not differentiate; take the inner derivative with "
                "loops='stack' or loops='checkpoint'".format(tree.name), "reversible loop")


def forward(normalized, wrt, module, name, arrays=False):
    """The tangent FunctionDef of ``normalized`` w.r.t. the parameter names ``wrt``.

    It takes one tangent per ``wrt`` parameter, then the function's own
    parameters, and returns ``(value, tangent)``; with several results both
    are tuples.
    """
    _refuse_checked_undos(normalized)
    return Tangents(analyze(normalized, wrt, arrays, mode="forward"), module, name).function()
