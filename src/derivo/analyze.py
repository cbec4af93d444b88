"""Stage 3: what the reverse sweep must compute, read and save.

Four analyses over a function in statement form (see ``ssa``):

activity
    A name is *active* when it depends on a differentiated argument (varied) and
    influences the result (useful).  Only active names get adjoints.  A ``for``
    loop over active values is rewritten here to index them (``for row in X``
    becomes ``for i in range(len(X)): row = X[i]``), since only activity says
    which loops need it.
expression plans
    For each active assignment, which sub-expressions are active, which rule
    differentiates each, and which values the adjoint code must recompute.
    The primal sweep keeps expressions whole; the reverse sweep recomputes the
    intermediate values of one statement from the statement's inputs, so only
    *variables* are ever saved, never temporaries.
saving
    The reverse sweep runs with every variable holding the value it had when the
    statement being reversed ran.  Integer steps (``k += 1``) are undone instead,
    and with ``loops="reversible"`` so is every update in a loop (``s *= c``
    becomes ``s /= c`` in the reverse sweep) where the forward sweep finds the
    undo exact (runtime.Undo saves s where not).  An assignment therefore saves
    the value it overwrites (pushes it on the stack) exactly when some earlier statement's
    adjoint reads that value: a forward data-flow of "read by an adjoint since
    last written" decides it.  Loops and branches record what their reverse
    needs (trip counts, branch tests) the same way; a ``while`` loop counted by an
    integer step is reversed by undoing the step instead of keeping a trip count.
    The item of a loop over values (``row = X[i]``) is read again, not saved.
sharing
    Another name for an array (``z = y``, ``y.T``, a view ``y[1:3]``) read after
    a write into the memory the two share is refused: the write would change z
    in Python, but z's adjoint would never hear of it.
"""

import bisect
import collections
import dataclasses
import functools
import heapq
import inspect
import math
import operator
import re
import types

import numpy as np

from . import checkpoints, dataflow, form, rules, runtime, trees
from . import syntax as S
from .errors import DerivoError, NoDerivativeRule, UnsupportedSyntax
from .memory import (Memory, all_params, arguments, in_a_library, is_numpy,
                     is_user_function, sharing_faults, user_function)
from .outline import Loop
from .parse import GENERATED_PREFIX, MISSING, UNPACKED, is_distribution, parameter_names, parse
from .ssa import CONSUMERS, is_append, normalize

DIFFERENTIABLE_OPS = (S.Add, S.Sub, S.Mult, S.Div, S.Pow, S.Mod, S.MatMult)
SCALAR_REDUCTIONS = (np.sum, np.mean, np.max, np.min, np.amax, np.amin, np.prod,
                     np.linalg.norm, np.trace, np.argmax, np.argmin, np.count_nonzero)


class Node:
    """The plan for one active node of an expression."""

    def __init__(self, kind, operands=(), rule=None):
        self.kind = kind            # 'name' | 'rule' | 'ifexp' | 'sequence'
        # rule: [(param, node, template)]; ifexp: [body, orelse]; sequence: elements
        self.operands = list(operands)
        self.rule = rule
        self.active = []            # indices of operands that receive an adjoint
        self.reduce = set()         # ... whose adjoint may need summing to their shape


#: what to write instead of a NumPy construct that has no rule
_INSTEAD = [(UNPACKED, "the arguments one by one, f(a, b) for f(*pair): derivo chooses a "
                        "function's derivative by the arguments its call gives"),
            (functools.partial, "the call f(x, y) where the function is called (derivo does "
                                "not follow a function holding a differentiated value that is "
                                "stored or returned, as a local function reading one is)"),
            (np.r_, "np.concatenate([np.atleast_1d(x), np.atleast_1d(y)])"),
            (np.c_, "np.stack([x, y], axis=-1) (of vectors) or np.concatenate([x, y], "
                    "axis=-1)")]


class Site:
    """One application of a primitive: its rule and its arguments bound to the
    rule's parameter names, ``[(param, argument node, template or None)]``."""

    def __init__(self, key, positional, keywords, label=None):
        self.key = key
        self.label = label or rules.label_of(key)
        self.npositional = len(positional)
        self.keywords = [k.arg for k in keywords]
        self.rule = rules.lookup(key, len(positional), self.keywords) \
            if _hashable(key) and None not in self.keywords else None
        if self.rule is None:
            self.args = [(None, a, None) for a in positional] + \
                [(k.arg, k.value, None) for k in keywords]
            return
        templates = self.rule.templates
        self.args = [(param, arg, templates[i] if i < len(templates) else None)
                     for i, (param, arg) in enumerate(zip(self.rule.params, positional))]
        extras = positional[len(self.rule.params):]
        vararg = next((t.varargs for t in templates if t is not None and t.varargs), None)
        if vararg:  # x.transpose(1, 0, 2): the template sees axes == (1, 0, 2)
            self.args.append((vararg, S.tuple_(extras), None))
        else:
            self.args += [(None, arg, None) for arg in extras]
        for k in keywords:
            index = self.rule.params.index(k.arg)
            self.args.append((k.arg, k.value, templates[index]
                              if index < len(templates) else None))


class Plan:
    """How to differentiate one expression: the active nodes and needed values."""

    def __init__(self):
        self.nodes = {}        # id(node) -> Node, active nodes only
        self.needs = {}        # id(node) -> how many templates read its value
        self.needed = {}       # id(node) -> node, for every node some template reads
        self.requests = {}     # id(node) -> how often the adjoint code asks for its value
        self.stored = {}       # id(node) -> the name the primal sweep keeps its value in
        self.result = None     # the target, when the adjoint reads the statement's value
        self.reads = set()     # primal names the adjoint reads, as they were before
        self.reads_after = set()  # ... and as the statement left them

    def is_active(self, node):
        return id(node) in self.nodes


class Analysis:
    def __init__(self, normalized, wrt, arrays=False, loops="stack", reverse=True):
        self.normalized = normalized
        self.reverse = reverse  # a reverse sweep runs the loops backwards
        self.arrays = arrays   # values may be arrays: reduce broadcast adjoints
        self.parsed = normalized.parsed
        self.wrt = list(wrt)
        self.plans = {}        # id(assignment) -> Plan
        self.pushes = {}       # id(statement) -> names it saves before overwriting
        self.reversed = set()  # id(compound statement) whose reverse does something
        self.init_none = set()  # names saved before any assignment on some path
        self.loops = loops     # "stack", "checkpoint" or "reversible" (loops undo, not save)
        self.inverses = {}     # id(x = x + e) -> (x, x - e): how the reverse undoes it
        self.undone = set()    # ids of statements the reverse sweep undoes, not pops
        self.checked = set()   # ids of undone x = x + e whose undo is checked as it runs
        self.reloads = set()   # ids of row = X[i] the reverse loop runs again each trip
        self.changed_by_call = {}  # id(call) -> local names it may change in place
        self.counted = {}      # id(while loop) -> the integer step counting its trips
        self.calls = []        # (call statement, user function, active parameter names)
        self.shared_checks = {}  # id(z = y[i]) -> (y, message): the primal refuses a view
        self.read_item_by_item = []  # parameters whose adjoints add items in place
        # Every local of the statement form: the user's, and those ssa and inline added.
        self.local_names = self.parsed.local_names | {
            n.id for n in S.walk(normalized.tree) if isinstance(n, S.Name)
            and isinstance(n.ctx, (S.Store, S.gast.Param))}

    # --- sharing -----------------------------------------------------------

    def refuse_shared_writes(self, writes=True):
        """Refuse an in-place change of memory another name refers to and reads
        afterwards (see :func:`~derivo.memory.sharing_faults`): Python's other
        name sees the change; the statement form gives each name a value and an
        adjoint of its own, so the derivative would be silently wrong.  An
        update (``y += e``) counts where either name may change a result (the
        statement form computes y + e anew); a write (``y[i] = v``,
        ``ys.append(v)``) where either is differentiated (the primal writes as
        Python does, the adjoints do not follow), in forward mode only through
        the alias a statement binds (``b = y; b[0] = v``: derivo may copy b,
        and b's tangent need not be y's; through y, tangents share memory as
        the values do).  A name that may be a row of the written array, or a
        number (``z = y[i]``), is checked as the primal runs (``shared_checks``)."""
        faults = sharing_faults(self.normalized.tree, self.parsed, self.local_names,
                                self.scalars, self.arrays, self.lists)
        for fault in faults:
            if fault.kind == "unowned":
                raise fault.error(self.parsed, self._user_names.__contains__)
            if is_item_write(fault.stmt) or is_append(fault.stmt):
                # (forward mode: a write through the alias a statement binds)
                alias = isinstance(fault.site, S.Assign) and \
                    S.single_target(fault.site) == fault.name
                # (either name's value may vary, and either may reach a result:
                # the write makes both vary)
                both = {fault.name, fault.other}
                if not (writes or alias) or not (both & self.varied and both & self.useful) \
                        or isinstance(fault.site, S.For):
                    continue  # (a loop over what its body writes: plan_statements refuses it)
            elif not {fault.stmt.targets[0].id, fault.other} & self._influential:
                continue
            error = self._in_user_names(fault.error(self.parsed, self._user_names.__contains__))
            site = fault.site
            if fault.kind == "item" and not writes:
                continue  # (tangents share memory as the values do)
            if fault.kind == "item" and isinstance(site, S.Assign) and \
                    isinstance(site.value, S.Subscript) and isinstance(site.value.value, S.Name):
                # y[i]: a number, a copy (y[mask]) or a row (a view) of y; only
                # the run tells, so the primal checks (see reverse.Sweep.primal)
                self.shared_checks[id(site)] = (site.value.value.id, str(error))
            else:
                raise error

    def refuse_joined_sequences(self):
        """Refuse ``+`` or ``*`` of a differentiated list or tuple the function
        builds (``[a, b] + [c]``, ``[a] * 3``, ``xs + ys`` with xs appended to):
        Python joins or repeats it, while the adjoints of + and * are those of
        numbers and arrays, so the derivative would be silently wrong.  (A list
        the caller passes is checked when the call comes: see
        :func:`sequence_arithmetic`.)"""
        tuples = {s.targets[0].id for s in S.walk(self.normalized.tree)
                  if isinstance(s, S.Assign) and isinstance(s.targets[0], S.Name)
                  and isinstance(s.value, S.Tuple)}
        for node in S.walk(self.normalized.tree):
            if not (isinstance(node, S.BinOp) and isinstance(node.op, (S.Add, S.Mult))):
                continue
            for operand in (node.left, node.right):
                built = isinstance(operand, (S.List, S.Tuple, S.gast.ListComp)) or \
                    isinstance(operand, S.Name) and operand.id in self.lists | tuples or \
                    isinstance(operand, S.Call) and \
                    self.parsed.callee_key(operand) in (list, tuple, sorted)
                if built and self.differentiable_names(operand) & self.active:
                    raise _joined_sequence_error(self.parsed, node, operand)

    def refuse_writes_into_globals(self):
        """Refuse ``x[i] = v`` and ``x.append(v)`` into a name the function does
        not bind (a module global, an enclosing function's variable): memory
        derivo does not own, which the reverse sweep would change back.  (Forward
        mode writes only what the function writes.)"""
        tree = self.normalized.tree
        local = set(tree_params(tree)) | {n.id for n in S.walk(tree) if isinstance(n, S.Name)
                                          and isinstance(n.ctx, S.Store)}
        for stmt in S.walk(tree):
            if is_item_write(stmt):
                written = stmt.targets[0].value.id
            elif is_append(stmt):
                written = stmt.value.func.value.id
            else:
                continue
            if written not in local:
                owner = "an enclosing function's variable" if written in self.parsed.closure \
                    else "a module global"
                raise self.parsed.error(
                    UnsupportedSyntax, stmt, "cannot differentiate a write into {!r}, {}: "
                    "derivo follows only changes to memory the function owns; write into a "
                    "local copy ({}_copy = {}.copy(), or list({}) for a list)".format(
                        written, owner, written.lower(), written, written),
                    "write into a global")

    # --- activity ----------------------------------------------------------

    def differentiable_names(self, expr):
        """Names whose value flows differentiably into ``expr``."""
        found = set()
        stack = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, S.Name):
                found.add(node.id)
            elif isinstance(node, S.IfExp):
                stack += [node.body, node.orelse]
            elif isinstance(node, (S.BoolOp, S.Tuple, S.List, S.gast.Set)):
                stack += getattr(node, "values", None) or node.elts
            elif isinstance(node, S.gast.Dict):
                stack += node.values
            elif isinstance(node, S.Starred):  # f(*args)
                stack.append(node.value)
            elif isinstance(node, S.Call) and form.annotation(node, "user_function"):
                stack += list(node.args) + [k.value for k in node.keywords]
            else:
                site = self.site(node)
                if site is not None:
                    stack += [arg for _, arg, template in site.args
                              if template is not None or site.rule is None]
                # a function held in a local name is a value its result depends
                # on (f of out, f = derivo.vjp(g, x), moves with x)
                if isinstance(node, S.Call) and isinstance(node.func, S.Name) and \
                        node.func.id in self.local_names:
                    stack.append(node.func)
        return found

    def site(self, node):
        """The application of a primitive that ``node`` is, or None when it is not
        differentiable at all (a comparison, ``int(x)``, ``x.shape``, a constant)."""
        if isinstance(node, S.BinOp):
            if not isinstance(node.op, DIFFERENTIABLE_OPS):
                return None
            return Site(type(node.op), [node.left, node.right], [])
        if isinstance(node, S.UnaryOp):
            if not isinstance(node.op, (S.USub, S.UAdd)):
                return None
            return Site(type(node.op), [node.operand], [])
        if isinstance(node, S.Call):
            key = self.parsed.callee_key(node)
            args = list(node.args)
            if isinstance(key, rules.Method):
                args.insert(0, node.func.value)
            if rules.is_nondifferentiable(key):
                return None
            if key in (checkpoints.checkpointed_for, checkpoints.checkpointed_while):
                raise self.parsed.error(
                    UnsupportedSyntax, node, "cannot differentiate the code of a checkpointed "
                    "loop: derivatives would flow through the tape it pushes; take this "
                    "derivative of a version with loops='stack' and no derivo.checkpointed",
                    "checkpointed loop")
            return Site(key, args, node.keywords, label=self.parsed.words(node.func))
        if isinstance(node, S.Attribute):
            key = rules.Method(node.attr)
            if rules.is_nondifferentiable(key) or isinstance(node.value, S.Name) and \
                    node.value.id not in self.local_names:
                return None  # x.shape, or a module attribute like math.pi
            if rules.lookup(key, 1, []) is None:
                # p.w with no rule for .w: a field of a container (a dataclass, a
                # NamedTuple), read as the item p["w"] is (see derivo.trees)
                return Site(rules.FIELD, [node.value, S.const(node.attr)], [],
                            label="." + node.attr)
            return Site(key, [node.value], [])
        if isinstance(node, S.Subscript):
            indexed = self.parsed.resolve_expression(node.value)
            if indexed is np.r_ or indexed is np.c_:
                # np.r_[x, y] concatenates its items: a call with no rule, not indexing
                items = node.slice.elts if isinstance(node.slice, S.Tuple) else [node.slice]
                return Site(indexed, list(items), [], label=S.expr_source(node.value))
            return Site(rules.GETITEM, [node.value, node.slice], [])
        return None

    def compute_activity(self):
        """Which names are active (vary with ``wrt`` and reach a result), and which
        surely hold numbers; a loop over an active value is rewritten to index it,
        and activity recomputed."""
        self._propagate_activity()
        if self.index_loops_over_values():
            self._propagate_activity()
        self.compute_scalars()  # (a number is never changed in place)
        self._refuse_dicts_and_sets()
        self._refuse_hidden_writes()
        self._refuse_arguments_without_rule()

    def _refuse_arguments_without_rule(self):
        """Refuse a differentiated value reaching, on its way to a result, an
        argument its primitive's rule has no template for: None in the rule's
        place, an option past the templates (``ord=``), or a ``*args`` of the
        templates.  Activity does not flow through such an argument, so its
        derivative would silently be zero; only an argument the rule declares
        CONSTANT (an axis, a mask, np.copysign's sign) is held constant."""
        for stmt in S.walk(self.normalized.tree):
            if not (isinstance(stmt, S.Assign) and set(assigned_names(stmt)) & self.useful):
                continue
            for node in S.walk(stmt.value):
                site = self.site(node) if isinstance(node, S.gast.expr) else None
                if site is None or site.rule is None:
                    continue
                for param, arg, template in site.args:
                    if template is None and param not in site.rule.constant and \
                            self.differentiable_names(arg) & self.varied:
                        raise self._no_rule_for_argument(node, site, param or "*args")

    def _read_by_adjoints(self):
        """{id(node): the names an adjoint may read the value of} for each node of
        the function: the operands of operations (``np.clip(y, -1.0, c)``,
        ``y * c``) another of whose operands varies, in a top-level statement
        up to the node's (a change after all of them changes none)."""
        read, found = set(), {}
        for top in self.normalized.tree.body:
            for stmt in S.walk(top):
                if not (isinstance(stmt, S.Assign) and set(assigned_names(stmt)) & self.active):
                    continue
                for node in S.walk(stmt.value):
                    operands = [node.left, node.right] if isinstance(node, S.BinOp) else \
                        node.args + [k.value for k in node.keywords] \
                        if isinstance(node, S.Call) else []
                    names = {o.id for o in operands if isinstance(o, S.Name)}
                    if names & self.varied:
                        read = read | names
            found.update((id(node), read) for node in S.walk(top))
        return found

    def _no_rule_for_argument(self, node, site, param):
        message = ("no derivative of {} with respect to its argument {!r}, yet a "
                   "differentiated value flows into it in {!r}; register a rule for it "
                   "(derivo.defvjp), or pass derivo.stop_gradient(...) of the value if it "
                   "is meant as a constant".format(site.label, param, self.parsed.words(node)))
        if isinstance(site.key, rules.Method) and isinstance(node, S.Call):
            # with m = np, m.sum(v) is np.sum(v), taken for the method sum of m
            message += " (for a module's function, call it by the module's name: np.{})" \
                .format(site.key.name)
        return self.parsed.error(NoDerivativeRule, node, message, site.label)

    def _refuse_writes_into_items(self, body, items):
        """A write into an item a loop takes from what it iterates over (``for row
        in Y: row[0] = v``): a row is a view, and the write changes Y too."""
        for stmt in S.walk(body):
            if isinstance(stmt, S.Assign) and (
                    is_item_write(stmt) or self.arrays and form.annotation(stmt, "augmented")) \
                    and assigned_names(stmt)[0] in items:
                raise self.parsed.error(
                    UnsupportedSyntax, stmt, "cannot differentiate a write into {!r}, an item "
                    "this loop takes from what it iterates over (a row is a view of its "
                    "array): index the array instead".format(assigned_names(stmt)[0]),
                    "write into a loop item")

    def _refuse_hidden_writes(self):
        """Refuse a change in place that derivo cannot see, to a value that reaches
        a result: a method call whose result is dropped (``xs.extend(v)``,
        ``x.fill(a)``, ``xs.sort()``; ``xs.append(v)`` is followed), a NumPy
        function that writes into its first argument (``np.copyto(x, v)``), or an
        ``out=`` argument.  Activity would not flow through it, and the
        derivative would silently miss it."""
        local = self.local_names
        for loop in S.walk(self.normalized.tree):
            if isinstance(loop, S.For) and isinstance(loop.target, S.Name) and \
                    (_names(loop.iter) | _changed_in(loop.body)) & self.varied:
                items = {loop.target.id}
                for stmt in loop.body:  # and what ssa unpacked it into: item1[0], item1[1]
                    if isinstance(stmt, S.Assign) and isinstance(stmt.targets[0], S.Name) and (
                            isinstance(stmt.value, S.Name) and stmt.value.id in items or
                            isinstance(stmt.value, S.Subscript) and
                            isinstance(stmt.value.value, S.Name) and
                            stmt.value.value.id in items and
                            isinstance(stmt.value.slice, S.Constant)):
                        items.add(stmt.targets[0].id)
                self._refuse_writes_into_items(loop.body, items)
        memory = None
        # calls whose results are differentiated: one derivo cannot read is refused
        # as such when its derivative is planned (not for what it may change)
        differentiated = {id(node) for stmt in S.walk(self.normalized.tree)
                          if isinstance(stmt, S.Assign) and set(assigned_names(stmt)) & self.active
                          for node in S.walk(stmt.value) if isinstance(node, S.Call)
                          and self.differentiable_names(node) & self.active}
        read_before = self._read_by_adjoints()
        for node in S.walk(self.normalized.tree):
            changed = []  # expressions whose object the call changes
            if isinstance(node, S.Expr) and isinstance(node.value, S.Call) and \
                    not is_append(node) and isinstance(node.value.func, S.Attribute):
                root = S.root_name(node.value.func.value)
                if root is not None and root.id in local:
                    changed.append(node.value.func.value)
            # a helper may change what it is given or what that holds (for p in ps: p *= 2)
            handed = self._arguments_a_helper_changes(node) \
                if isinstance(node, S.Call) and not (
                    id(node) in differentiated and _unreadable(self.parsed.callee_key(node))) \
                else []
            if isinstance(node, S.Call):
                changed += _written_in_place(self.parsed, node)
            if (changed or handed) and memory is None:
                memory = Memory(self.parsed, self.normalized.tree, local)
            # (a change that involves nothing differentiated, keys.sort(), is harmless)
            for expression, deep in [(e, False) for e in changed] + [(e, True) for e in handed]:
                if self.is_scalar(expression):
                    continue  # a number is never changed in place: callback(loss)
                roots = memory.changed_by(expression, deep)
                names = (roots | memory.sharing(roots)) & local  # w = xs; w.reverse()
                self.changed_by_call[id(node)] = self.changed_by_call.get(id(node), set()) | names
                if names & self.useful and ((names | _names(node)) & self.varied or
                                            names & read_before.get(id(node), set())):
                    raise self._change_in_place(node, expression, names & self.useful)

    @functools.cached_property
    def _influential(self):
        """Names whose values may change a result, through any operation (a
        comparison, ``int``) or a branch or a loop they decide: the names the
        results and the tests read, and what those read, back to the parameters."""
        tree = self.normalized.tree
        influential = set(self.normalized.results)
        edges = []
        for node in S.walk(tree):
            if isinstance(node, (S.If, S.While)):
                influential |= _names(node.test)
            elif isinstance(node, S.For):  # its trip count: what it iterates over
                influential |= _names(node.iter)
            elif isinstance(node, S.Assign):
                edges.append((set(assigned_names(node)), _names(node.value) | (
                    _names(node.targets[0]) if is_item_write(node) else set())))
            elif is_append(node):
                edges.append(({node.value.func.value.id}, _names(node.value)))
        return _reached(influential, edges)

    def _in_user_names(self, error):
        """``error`` with the names ssa made said as the user wrote what they
        hold: ``y`` for its version ``y1``, ``zip(y, a)`` for the loop's ``seq1``."""
        versions = dict(form.annotation(self.normalized.tree, "versions"))
        if not versions:
            return error
        pattern = r"\b(?:{})\b".format("|".join(map(re.escape, sorted(versions))))
        message = re.sub(pattern, lambda match: versions[match.group(0)], error.message)
        return type(error)(message, error.filename, error.lineno, error.col, error.construct)

    @functools.cached_property
    def _user_names(self):
        """The names the user's function assigns or takes (not ssa's temporaries)."""
        return S.stored_names(self.parsed.tree) | set(tree_params(self.parsed.tree))

    def _change_in_place(self, node, expression, names):
        """The refusal of ``node``, which changes ``expression`` and so ``names``,
        in the user's words (``h(x * 2.0)``, not ssa's ``h(t1)``)."""
        line = self.parsed.source_line(getattr(node, "lineno", None))
        user_names = self._user_names
        call, changed = self.parsed.words(getattr(node, "value", node)), \
            self.parsed.words(expression)
        others = sorted(names & user_names - {changed})
        return self.parsed.error(
            UnsupportedSyntax, node, "cannot differentiate {!r}: it may change {}{} in "
            "place, which derivo does not follow (only x[i] = v and xs.append(v)); compute a "
            "new value and assign it, or give it a copy".format(
                call, repr(changed) if changed in line else "what it is given",
                " (and {}, which may share its memory)".format(", ".join(map(repr, others)))
                if others else ""),
            "change in place")

    def _arguments_a_helper_changes(self, call):
        """The arguments given to a user function for the parameters it changes in
        place (``setfirst(y, v)`` with ``def setfirst(y, v): y[0] = v``), and all
        those given to a function derivo cannot read (see :func:`_arguments_changed_by`)."""
        callee = form.annotation(call, "user_function") or self.parsed.callee_key(call)
        return _arguments_changed_by(self.parsed, call, callee, self.arrays)

    def _refuse_dicts_and_sets(self):
        """Refuse a set of differentiated values that reaches a result: derivo's
        adjoints and tangents follow numbers, arrays and containers (lists,
        tuples, dicts, dataclasses), and a set has no order to follow."""
        for stmt in S.walk(self.normalized.tree):
            if isinstance(stmt, S.Assign) and set(assigned_names(stmt)) & self.active:
                value = stmt.value
            elif isinstance(stmt, S.For) and isinstance(stmt.target, S.Name) and \
                    stmt.target.id in self.active:
                value = stmt.iter
            else:
                continue
            for node in S.walk(value):
                if isinstance(node, S.gast.Set) and \
                        self.differentiable_names(node) & self.active:
                    raise self.parsed.error(
                        UnsupportedSyntax, node, "cannot differentiate through a set of "
                        "differentiated values: derivo follows derivatives through numbers, "
                        "arrays and containers (lists, tuples, dicts, dataclasses); use a "
                        "list, a tuple or a dict", "set")

    def _propagate_activity(self):
        assignments = [s for s in S.walk(self.normalized.tree)
                       if isinstance(s, (S.Assign, S.For)) or is_append(s)]

        def flows(stmt):
            if isinstance(stmt, S.For):
                return [stmt.target.id], self.differentiable_names(stmt.iter)
            if is_append(stmt):
                items = stmt.value.func.value.id
                return [items], self.differentiable_names(stmt.value.args[0]) | {items}
            names = assigned_names(stmt)
            sources = self.differentiable_names(stmt.value)
            return names, sources | set(names) if is_item_write(stmt) else sources

        edges = [(set(targets), sources) for targets, sources in map(flows, assignments)]
        varied = _reached(self.wrt, [(sources, targets) for targets, sources in edges])
        useful = _reached(self.normalized.results, edges)
        self.active = varied & useful
        self.varied, self.useful = varied, useful

    def index_loops_over_values(self):
        """``for row in X`` over a differentiated array or list becomes
        ``for i in range(len(X)): row = X[i]``, so the read of each row gets the
        adjoint of any other indexing; so do ``for i, row in enumerate(X)``,
        ``for x, y in zip(X, Y)`` (over ``range(min(len(X), len(Y)))``) and
        ``for row in reversed(X)`` (over ``range(len(X) - 1, -1, -1)``).  Returns
        whether any loop changed (activity must then be computed again).

        The last three are indexed whenever the loop's body is differentiated,
        even over values that are not: the reverse loop could not run their
        iterators backwards (forward mode, which runs them forwards, indexes
        them when the body assigns a differentiated name).  A loop whose body
        rebinds or writes into ``X`` keeps its form: over values it is refused
        later with the reason, over an iterator here."""
        changed = False
        namer = self.normalized.namer
        for block in S.blocks(self.normalized.tree):
            for stmt in list(block):
                if not (isinstance(stmt, S.For) and isinstance(stmt.target, S.Name)
                        and self.parsed.resolve("range") is range
                        and self.parsed.resolve("len") is len):
                    continue
                form = self._loop_form(block, stmt)
                if form is None:
                    continue
                kind, sequences, targets, start, dropped = form
                # a reverse sweep runs the body backwards when it changes a value that is
                # differentiated, by assigning it or writing into it
                touched = _changed_in(stmt.body) if self.reverse else S.stored_names(stmt.body)
                if not (stmt.target.id in self.active
                        and self.differentiable_names(stmt.iter) & self.active
                        or kind != "values" and touched & self.active):
                    continue
                written_as = sequences  # as the user wrote them, for the message below
                if kind in ("zip", "enumerate"):
                    sequences = [self._reversed_as_slice(block, stmt, s) for s in sequences]
                    written_as = [S.call(S.name("reversed"), new.value) if new is not old
                                  else old for new, old in zip(sequences, written_as)]
                body = [s for s in stmt.body if s not in dropped]
                written = _changed_in(body)
                overwritten = next((named for items, named in zip(sequences, written_as)
                                    if _names(items) & written), None)
                if overwritten is not None and kind == "values":
                    continue
                if overwritten is not None:
                    raise self.parsed.error(
                        UnsupportedSyntax, stmt, "cannot differentiate this loop over {}(...): "
                        "its body changes {!r}, which it iterates over; loop over "
                        "range(len(...)) and index instead".format(
                            kind, self.parsed.words(overwritten)), "loop over an iterator")
                self._refuse_writes_into_items(body, targets)
                block[:] = [s for s in block if s not in dropped]
                names = []
                for items in sequences:
                    if self._maybe_an_iterator(items):  # indexed below: a list of it
                        items = S.copy_location(S.call(S.name("list"), items), stmt)
                    if not isinstance(items, S.Name):
                        temporary = namer.fresh("items")
                        block.insert(block.index(stmt), S.copy_location(
                            S.assign(temporary, items), stmt))
                        items = S.name(temporary)
                    names.append(items.id)
                heads = []
                if kind == "enumerate" and start is None and targets[0] not in written:
                    index, targets = targets[0], targets[1:]
                else:
                    index = namer.fresh("i")
                    if kind == "enumerate":
                        count = S.name(index) if start is None else \
                            S.binop(S.name(index), S.Add(), S.deepcopy(start))
                        heads.append(S.copy_location(S.assign(targets[0], count), stmt))
                        targets = targets[1:]
                for target, items in zip(targets, names):
                    row = S.copy_location(S.assign(target, S.subscript(
                        S.name(items), S.name(index))), stmt)
                    row.item = True  # cheaper to read again than to save (see _prepare_loop)
                    heads.append(row)
                if kind == "values":
                    stmt.row = heads[0]
                lengths = [S.call(S.name("len"), S.name(items)) for items in names]
                if kind == "reversed":
                    bounds = [S.binop(lengths[0], S.Sub(), S.const(1)), S.const(-1),
                              S.const(-1)]
                elif len(lengths) > 1:
                    bounds = [S.call(S.name("min"), *lengths)]
                else:
                    bounds = lengths
                stmt.target = S.store(index)
                stmt.iter = S.call(S.name("range"), *bounds)
                stmt.body[:] = body[:1] + heads + body[1:] if stmt.trips else heads + body
                self.local_names |= {index, *names}
                changed = True
        return changed

    def _reversed_as_slice(self, block, loop, sequence):
        """``X[::-1]`` for a sequence of zip or enumerate that is ``reversed(X)``
        (or a name assigned it just before the loop, as ssa hoists it: the
        assignment goes when nothing else reads the name), which cannot be
        indexed; the same items, whose adjoints reach X by indexing.  Any other
        sequence as it is."""
        value, earlier = sequence, None
        if isinstance(sequence, S.Name):
            position = block.index(loop)
            earlier = next((s for s in reversed(block[:position])
                            if sequence.id in S.stored_names([s])), None)
            value = earlier.value if isinstance(earlier, S.Assign) and \
                S.single_target(earlier) == sequence.id else None
            between = block[block.index(earlier) + 1:position] if value is not None else []
            if value is not None and _names(value) & S.stored_names(between):
                value = None
        if not (isinstance(value, S.Call) and self.parsed.callee_key(value) is reversed and
                len(value.args) == 1 and not value.keywords and
                not isinstance(value.args[0], S.gast.Starred)):
            return sequence
        if earlier is not None and S.load_counts(self.normalized.tree)[sequence.id] == 1:
            block.remove(earlier)
        backwards = S.Slice(lower=None, upper=None, step=S.const(-1))
        return S.copy_location(S.subscript(S.deepcopy(value.args[0]), backwards), loop)

    def _maybe_an_iterator(self, sequence):
        """Whether a loop's sequence, read by the loop alone, is a dict's view or
        a ``map``/``filter`` (not differentiated) of one that cannot be indexed
        (``d.values()``, ``map(f, xs)``): the reverse loop indexes a list of it.
        Other iterators are left alone: one could be endless (``itertools.count()``)."""
        if isinstance(sequence, S.Name):
            tree = self.normalized.tree
            others = S.load_counts(tree)[sequence.id] - any(n is sequence for n in S.walk(tree))
            sequence = None if others else S.values_assigned_once(tree).get(sequence.id)
        if not isinstance(sequence, S.Call) or self.parsed.resolve("list") is not list:
            return False
        callee = self.parsed.callee_key(sequence)
        if callee is map or callee is filter:  # of parameters, or of views
            return not self.differentiable_names(sequence) & self.active and \
                len(sequence.args) > 1 and all(
                isinstance(a, S.Name) and a.id in tree_params(self.normalized.tree) or
                self._maybe_an_iterator(a) for a in sequence.args[1:])
        return isinstance(callee, rules.Method) and \
            callee.name in ("values", "keys", "items") and not sequence.args

    def _loop_form(self, block, loop):
        """(kind, sequences, targets, start, statements to drop) of a for loop over
        values ("values"), ``enumerate(X[, start])``, ``zip(X, Y, ...)`` or
        ``reversed(X)``, or None.  ssa left ``for x, y in zip(xs, ys)`` as
        ``seq1 = zip(xs, ys)`` before the loop (and what it hoisted out of it),
        ``for item1 in seq1: seq2 = item1; x = seq2[0]; y = seq2[1]``."""
        iterable, dropped = loop.iter, []
        position = block.index(loop)
        reads = sum(isinstance(n, S.Name) and isinstance(n.ctx, S.Load) and n.id == iterable.id
                    for n in S.walk(self.normalized.tree)) if isinstance(iterable, S.Name) else 0
        if reads == 1:  # the loop's own: the assignment can go
            for earlier in reversed(block[:position]):
                if isinstance(earlier, S.Assign) and isinstance(earlier.targets[0], S.Name) \
                        and earlier.targets[0].id == iterable.id:
                    if isinstance(earlier.value, S.Call):
                        iterable, dropped = earlier.value, [earlier]
                    break
        callee = self.parsed.callee_key(iterable) if isinstance(iterable, S.Call) else None
        kind = {enumerate: "enumerate", zip: "zip", reversed: "reversed"}.get(
            callee if callable(callee) else None)
        if kind is None:
            return ("values", [loop.iter], [loop.target.id], None, [])
        args = iterable.args
        counts = {"enumerate": (1, 2), "zip": range(1, len(args) + 1), "reversed": (1,)}
        if iterable.keywords or len(args) not in counts[kind] or \
                any(isinstance(a, S.gast.Starred) for a in args) or \
                kind == "zip" and len(args) > 1 and self.parsed.resolve("min") is not min:
            return None
        if kind == "reversed":
            return (kind, args, [loop.target.id], None, dropped)
        width = 2 if kind == "enumerate" else len(args)
        unpack = _unpacking(loop, width)
        if unpack is None:
            return None
        targets = [s.targets[0].id for s in unpack[1:]]
        sequences = args[:1] if kind == "enumerate" else args
        start = args[1] if kind == "enumerate" and len(args) == 2 else None
        if start is not None and not (isinstance(start, S.Constant) or isinstance(
                start, S.Name) and start.id not in S.stored_names(loop.body)):
            return None
        return (kind, sequences, targets, start, dropped + unpack)

    def compute_lists(self):
        """Names holding Python lists (appended to, or assigned a list), and
        containers: those, every indexed name, which may be a list too, every
        name given to a call of a user function (whose VJP gives back a list for
        a list), and every name given whole to ``sum``, ``max``... (a checkpointed
        loop's list is a list the function never appends to).  The adjoint of a
        container may be a list of adjoints, added element by element."""
        tree = self.normalized.tree
        self.lists = {s.value.func.value.id for s in S.walk(tree) if is_append(s)}
        self.lists |= {s.targets[0].id for s in S.walk(tree)
                       if isinstance(s, S.Assign) and isinstance(s.targets[0], S.Name)
                       and isinstance(s.value, S.List)}
        copies = [(s.targets[0].id, s.value.id) for s in S.walk(tree) if isinstance(s, S.Assign)
                  and isinstance(s.targets[0], S.Name) and isinstance(s.value, S.Name)]
        while any(source in self.lists and target not in self.lists
                  for target, source in copies):  # ys = items1: a list too
            self.lists |= {target for target, source in copies if source in self.lists}
        self.containers = self.lists | {n.value.id for n in S.walk(tree)
                                        if isinstance(n, (S.Subscript, S.Attribute))
                                        and isinstance(n.value, S.Name)
                                        and self._is_item_read(n)}
        self.containers |= {argument.id for call in S.walk(tree) if isinstance(call, S.Call)
                            and form.annotation(call, "user_function") is not None
                            for argument in call.args + [k.value for k in call.keywords]
                            if isinstance(argument, S.Name)}
        self.containers |= {argument.id for call in S.walk(tree) if isinstance(call, S.Call)
                            for argument in self._iterated_whole(call)
                            if isinstance(argument, S.Name)}

    def _is_item_read(self, node):
        """Whether ``node`` reads an item (``x[i]``) or a container's field (``p.w``)."""
        if isinstance(node, S.Subscript):
            return True
        site = self.site(node)
        return site is not None and site.key == rules.FIELD

    def _iterated_whole(self, call):
        """The arguments ``call`` iterates whole: the first of ``sum(xs)``,
        ``max(xs)`` (not of ``max(a, b)``), both points of ``math.dist(p, q)``."""
        callee = self.parsed.callee_key(call)
        if callee is math.dist:
            return call.args
        if call.args and any(callee is c for c in CONSUMERS) and (
                len(call.args) == 1 or callee is sum):
            return call.args[:1]
        return []

    def compute_read_item_by_item(self):
        """Parameters that may hold containers, that the function never assigns,
        writes into, appends to or returns, and whose items it reads only where
        a number or an array goes: as operands of arithmetic or of a ``math``
        function or NumPy ufunc, directly or through a name used only so.  (An
        item that is a list itself, summed by ``sum`` or indexed, has a list for
        adjoint, which ``+=`` would not add; a list item in arithmetic, as in
        ``X[0] + X[1]``, joins lists, which derivo does not differentiate.)  Their
        adjoints can be added into in place, item by item (see
        ``reverse.Sweep.add_items_in_place``)."""
        tree = self.normalized.tree
        changed = S.stored_names(tree.body) | set(self.normalized.results) | {
            name for s in S.walk(tree) if is_item_write(s) for name in assigned_names(s)}
        candidates = set(tree_params(tree)) & self.containers & self.active - changed
        parents = {id(child): parent for parent in S.walk(tree)
                   for child in S.gast.iter_child_nodes(parent)}
        uses = collections.defaultdict(list)
        for node in S.walk(tree):
            if isinstance(node, S.Name) and isinstance(node.ctx, S.Load):
                uses[node.id].append(node)

        def numeric_use(node):
            parent = parents.get(id(node))
            if isinstance(parent, (S.BinOp, S.UnaryOp, S.Compare)):
                return True
            if isinstance(parent, S.Call) and node in parent.args:
                callee = self.parsed.callee_key(parent)
                return isinstance(callee, np.ufunc) or \
                    getattr(callee, "__module__", None) == "math" and \
                    callee.__name__ not in _MATH_OVER_ITERABLES
            return False

        for ident in sorted(candidates):
            for item in (n for n in uses[ident] if isinstance(parents.get(id(n)), S.Subscript)):
                read = parents[id(item)]
                holder = parents.get(id(read))
                if isinstance(holder, S.Assign) and isinstance(holder.targets[0], S.Name):
                    ok = all(map(numeric_use, uses[holder.targets[0].id]))
                else:
                    ok = read.value is item and numeric_use(read)
                if not ok:
                    candidates.discard(ident)
                    break
        self.read_item_by_item = sorted(candidates)

    def integral(self, index):
        """Whether ``index`` surely holds an int (or a tuple of them): a literal, or
        a name only ever assigned as the target of a loop over ``range``."""
        if isinstance(index, S.Tuple):
            return all(map(self.integral, index.elts))
        if isinstance(index, S.UnaryOp) and isinstance(index.op, S.USub):
            index = index.operand
        if isinstance(index, S.Constant):
            return type(index.value) is int
        return isinstance(index, S.Name) and index.id in self._counters

    @functools.cached_property
    def _counters(self):
        tree = self.normalized.tree
        stores = [n for n in S.walk(tree) if isinstance(n, S.Name) and
                  isinstance(n.ctx, (S.Store, S.gast.Param))]
        once = {name for name, count in collections.Counter(n.id for n in stores).items()
                if count == 1}
        ranges = {s.targets[0].id for s in S.walk(tree) if isinstance(s, S.Assign)
                  and isinstance(s.targets[0], S.Name) and s.targets[0].id in once
                  and is_range(s.value, self.parsed)}  # seq1 = range(n)
        by_range = {id(loop.target) for loop in S.walk(tree) if isinstance(loop, S.For) and (
            is_range(loop.iter, self.parsed) or isinstance(loop.iter, S.Name)
            and loop.iter.id in ranges)}
        return {n.id for n in stores if id(n) in by_range} - {
            n.id for n in stores if id(n) not in by_range}

    def compute_scalars(self):
        """Names that surely hold a scalar (with arrays around, a broadcast against
        a scalar needs no reduction)."""
        assignments = [s for s in S.walk(self.normalized.tree) if isinstance(s, S.Assign)]
        loops = [s for s in S.walk(self.normalized.tree) if isinstance(s, S.For)]
        candidates = {s.targets[0].id for s in assignments if isinstance(s.targets[0], S.Name)}
        candidates |= {loop.target.id for loop in loops if is_range(loop.iter, self.parsed)}
        candidates -= set(tree_params(self.normalized.tree))
        candidates -= {t.id for s in assignments if isinstance(s.targets[0], S.Tuple)
                       for t in s.targets[0].elts}
        candidates -= {loop.target.id for loop in loops if not is_range(loop.iter, self.parsed)}
        self.scalars = set(candidates)
        changed = True
        while changed:  # drop names with a non-scalar assignment until none is left
            changed = False
            for stmt in assignments:
                name = stmt.targets[0]
                if isinstance(name, S.Name) and name.id in self.scalars \
                        and not self.is_scalar(stmt.value):
                    self.scalars.discard(name.id)
                    changed = True

    def is_scalar(self, node):
        if isinstance(node, S.Constant):
            return isinstance(node.value, (int, float))
        if isinstance(node, S.Name):
            return node.id in self.scalars
        if isinstance(node, (S.BinOp, S.UnaryOp)) and not self.arrays:
            return True  # scalar code's arithmetic is of numbers (it refuses xs + ys)
        if isinstance(node, S.BinOp):
            return self.is_scalar(node.left) and self.is_scalar(node.right)
        if isinstance(node, S.UnaryOp):
            return self.is_scalar(node.operand)
        if isinstance(node, S.Subscript):  # x.shape[0]
            return isinstance(node.value, S.Attribute) and node.value.attr == "shape"
        if isinstance(node, S.Attribute):
            return node.attr in ("size", "ndim")
        if isinstance(node, S.Call):
            callee = self.parsed.callee_key(node)
            if getattr(callee, "__module__", None) == "math" or \
                    callee in (len, float, int, round, bool):
                return True
            if callee in (max, min, abs) and node.args and not node.keywords:
                return all(self.is_scalar(arg) for arg in node.args)
            if isinstance(callee, rules.Method):  # x.sum()
                return callee.name in ("sum", "mean", "max", "min", "prod", "argmax",
                                       "argmin", "item") and not node.args and not node.keywords
            reduction = callee in SCALAR_REDUCTIONS
            return reduction and len(node.args) == 1 and not node.keywords
        return False

    # --- expression plans ----------------------------------------------------

    def plan_expression(self, expr, target=None, keep=True):
        """The plan of ``expr``, the value assigned to ``target`` (None for an
        argument of a user call); ``keep``: array code may keep intermediate
        values in temporaries (see _store)."""
        plan = Plan()
        self._arms = set()
        self._plan(expr, plan)
        self._store(expr, target, plan, keep)
        self._count_requests(expr, plan, 0)
        return plan

    def _store(self, root, target, plan, keep):
        """Decide, for each value the adjoint needs, where it comes from.

        The statement's own value is its target, if the expression does not read
        the target.  With arrays, other intermediate values are kept by the primal
        sweep in temporaries (recomputing a matrix product costs as much as the
        product), unless not ``keep``; with scalars they are recomputed from the
        statement's inputs, which costs less than saving them in a loop.  Values
        inside a branch of a conditional expression are always recomputed: only
        one branch runs.
        """
        for key, node in plan.needed.items():
            if target is None:  # an argument of a user call: its call recomputes it
                plan.reads |= _names(node)
            elif node is root and target not in _names(root):
                plan.result = target
                plan.reads_after.add(target)
            elif self.arrays and keep and key not in self._arms and \
                    not isinstance(node, (S.Name, S.Constant)) and \
                    (key in plan.nodes or isinstance(node, (S.Call, S.Subscript))):
                plan.stored[key] = self.normalized.namer.numbered("t")
                plan.reads_after.add(plan.stored[key])
            else:
                plan.reads |= _names(node)

    def _count_requests(self, node, plan, rebuilds):
        """A value is asked for by each template reading it and by each rebuild of
        the expression around it; asked for twice, it gets a temporary and its
        own sub-expressions are built once."""
        requests = plan.needs.get(id(node), 0) + rebuilds
        plan.requests[id(node)] = requests
        if id(node) not in plan.nodes or id(node) in plan.stored:
            return  # inactive sub-expressions are copied whole; stored ones read
        for field in node._fields:
            value = getattr(node, field)
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, S.gast.expr):
                    self._count_requests(child, plan, min(requests, 1))

    def _plan(self, node, plan):
        """Fill ``plan`` for ``node``; True if the node is active."""
        if isinstance(node, S.Name):
            if node.id in self.active:
                plan.nodes[id(node)] = Node("name")
                return True
            return False
        if isinstance(node, S.IfExp):
            self._arms |= {id(n) for n in S.walk([node.body, node.orelse])}
            branches = [self._plan(node.body, plan), self._plan(node.orelse, plan)]
            if not any(branches):
                return False
            entry = plan.nodes[id(node)] = Node("ifexp", [node.body, node.orelse])
            entry.active = [i for i, a in enumerate(branches) if a]
            plan.reads |= _names(node.test)
            return True
        if isinstance(node, (S.Tuple, S.List, S.gast.Dict)):
            elements = node.values if isinstance(node, S.gast.Dict) else node.elts
            flags = [self._plan(e, plan) for e in elements]
            if not any(flags):
                return False
            entry = plan.nodes[id(node)] = Node("sequence", elements)
            entry.active = [i for i, a in enumerate(flags) if a]
            if isinstance(node, S.gast.Dict):  # its keys, read again by the adjoint
                plan.reads |= _names([key for key in node.keys if key is not None])
            return True
        site = self.site(node)
        if site is None:
            if self.differentiable_names(node) & self.active:
                self._refuse(node, None)
            return False
        flags = [self._plan(arg, plan) for _, arg, _ in site.args]
        if not any(flags):
            return False
        if site.rule is None:
            self._refuse(node, site)
        entry = plan.nodes[id(node)] = Node("rule", site.args, site.rule)
        for index, ((_, _, template), active) in enumerate(zip(site.args, flags)):
            if not active or template is None:
                continue  # no template: the rule holds this argument constant
            entry.active.append(index)
            if "ans" in template.uses:
                self._need(node, plan)
            for param, arg, _ in site.args:
                if param in template.uses:
                    self._need(arg, plan)
            if site.rule.broadcasts and self.arrays and not all(
                    self.is_scalar(arg) for i, (_, arg, _) in enumerate(site.args) if i != index):
                entry.reduce.add(index)
                self._need(site.args[index][1], plan)  # its shape, to reduce to
        return True

    def _need(self, node, plan):
        plan.needs[id(node)] = plan.needs.get(id(node), 0) + 1
        plan.needed[id(node)] = node

    def _refuse(self, node, site):
        if site is not None:
            known = rules.RULES.get(site.key) if _hashable(site.key) else None
            if known:
                message = ("cannot differentiate {!r} called with {} positional argument(s){}: "
                           "derivo's rules take {}".format(
                               site.label, site.npositional,
                               " and keywords " + ", ".join(site.keywords)
                               if site.keywords else "",
                               " or ".join("({})".format(", ".join(r.params))
                                           for r in known.values())))
            elif isinstance(site.key, types.MethodType) and \
                    not isinstance(site.key.__self__, type) and \
                    not in_a_library(site.key.__func__):  # a user object's, not a classmethod
                func = getattr(node, "func", None)
                owner = self.parsed.words(func.value) if isinstance(func, S.Attribute) else "obj"
                message = ("cannot differentiate {!r}, a method of an object, called on a "
                           "differentiated value: derivo differentiates functions; call it as "
                           "one, {}({}, ...), or register a rule for it with derivo.defpartials "
                           "or derivo.defvjp".format(
                               site.label, site.key.__func__.__qualname__, owner))
            elif site.key is runtime.gradient_by_tangents:
                user = re.sub(r"(_grad|_jvp|_vjp)+$", "", self.parsed.tree.name)
                message = ("cannot differentiate {} a third time: {} is its second "
                           "derivative of array code, whose passes {!r} makes at run time; "
                           "derivo differentiates array code up to second order "
                           "(derivo.hessian, derivo.hvp)".format(
                               user, self.parsed.tree.name, site.label))
            elif S.is_derivo(site.key) and getattr(site.key, "__module__", "") == "derivo.api" \
                    or _calls_derivo_api(node, self.parsed, self.normalized.tree):
                message = ("cannot differentiate through {!r} called inside the differentiated "
                           "function: make the derivative once outside it "
                           "(dg = derivo.grad(g)) and call dg here, which derivo "
                           "differentiates through its code".format(site.label))
            elif is_distribution(site.key):
                message = ("cannot differentiate {0!r} frozen into a value: derivo "
                           "differentiates a frozen distribution's method called on it where "
                           "it is made, {0}(...).logpdf(x), or on the family, "
                           "{0}.logpdf(x, ...)".format(site.label))
            elif isinstance(site.key, type) and (dataclasses.is_dataclass(site.key) or issubclass(
                    site.key, tuple) and hasattr(site.key, "_fields")):
                message = ("cannot differentiate {!r}: derivo differentiates a dataclass or a "
                           "NamedTuple given to the function as an argument, not one "
                           "built inside it yet; build a dict ({{'w': w, ...}}) or a tuple "
                           "there".format(site.label))
            elif any(site.key is construct for construct, _ in _INSTEAD):
                message = ("cannot differentiate {!r}: derivo has no derivative rule for it; "
                           "write {} instead".format(site.label, next(
                               instead for construct, instead in _INSTEAD
                               if site.key is construct)))
            else:
                message = ("cannot differentiate {!r}: derivo has no derivative rule for it and "
                           "a differentiated value flows into it (register one with "
                           "derivo.defpartials or derivo.defvjp)".format(site.label))
            raise self.parsed.error(NoDerivativeRule, node, message, site.label)
        construct = type(node).__name__
        descriptions = {"BoolOp": "'and'/'or' on differentiated values",
                        "Attribute": "attribute access on a differentiated value",
                        "Tuple": "a tuple of differentiated values",
                        "List": "a list of differentiated values",
                        "BinOp": "this operator on differentiated values",
                        "Compare": "a comparison",
                        "Starred": "'*' unpacking of differentiated values into a call (pass "
                                   "them one by one, f(a, b) for f(*pair))",
                        "Call": "a call of a non-differentiable function on differentiated "
                                "values"}
        raise self.parsed.error(
            UnsupportedSyntax, node, "cannot differentiate {}: {!r} is not supported".format(
                descriptions.get(construct, construct), self.parsed.words(node)), construct)

    # --- reads of the reverse sweep --------------------------------------------

    def statement_reads(self, stmt):
        """Primal names the reverse of a simple statement reads (before it runs)."""
        if not isinstance(stmt, S.Assign):
            return set()
        value = stmt.value
        if not set(assigned_names(stmt)) & self.active:
            return set()
        if is_item_write(stmt):
            return _names(stmt.targets[0].slice) | _names(value)
        callee = form.annotation(value, "user_function")
        if isinstance(callee, Loop):
            # the loop's tape keeps copies of its states, but its invariants as they
            # are: the reverse reads those as the code after the loop leaves them
            invariants = value.args[len(value.args) - len(callee.invariants):]
            return set().union(*map(_names, invariants)) if callee.invariants else set()
        if callee is not None:
            return _names(value)
        return self.plans[id(stmt)].reads

    def statement_reads_after(self, stmt):
        """Names the reverse of a statement reads as the statement left them."""
        plan = self.plans.get(id(stmt))
        return plan.reads_after if plan is not None else set()

    def stored(self, stmt):
        """Temporaries the primal sweep keeps for ``stmt``, in evaluation order."""
        plan = self.plans.get(id(stmt))
        return list(plan.stored.values()) if plan is not None else []

    def plan_statements(self):
        # A reversible loop gives back its inputs, not the temporaries its trips
        # overwrote: each trip's are recomputed from what the undo restored.
        recomputed = {id(s) for loop in S.walk(self.normalized.tree)
                      if isinstance(loop, (S.For, S.While)) for s in S.walk(loop.body)} \
            if self.loops == "reversible" else set()
        for stmt in S.walk(self.normalized.tree):
            if isinstance(stmt, S.For) and self.differentiable_names(stmt.iter) & \
                    self.active and stmt.target.id in self.active:
                # index_loops_over_values left it: the body changes the values,
                # or range or len is not the builtin.
                raise self.parsed.error(
                    UnsupportedSyntax, stmt, "cannot differentiate a loop over a "
                    "differentiated array or list ({0!r}) whose body rebinds or writes into "
                    "it (or with range or len redefined): loop over a copy of {0}, or index "
                    "it with range(len(...))".format(self.parsed.words(stmt.iter)),
                    "for over a value")
            if not isinstance(stmt, S.Assign):
                continue
            target = stmt.targets[0]
            if is_item_write(stmt) or not set(assigned_names(stmt)) & self.active:
                continue
            callee = form.annotation(stmt.value, "user_function")
            if callee is not None:
                self._plan_call(stmt, callee)
            else:
                self.plans[id(stmt)] = self.plan_expression(stmt.value, target.id,
                                                            id(stmt) not in recomputed)

    def _plan_call(self, stmt, callee):
        call = stmt.value
        params = parameter_names(callee)
        active = []
        for index, arg in enumerate(call.args):
            if index >= len(params):
                raise self._gathered(call, callee, "*")
            if self.differentiable_names(arg) & self.active:
                active.append(params[index])
        for kw in call.keywords:
            if kw.arg is None:
                raise self.parsed.error(UnsupportedSyntax, call, "cannot differentiate "
                                        "'**' arguments", "**")
            if kw.arg not in params:  # def f(**kw): its gradient would be silently zero
                raise self._gathered(call, callee, "**")
            if self.differentiable_names(kw.value) & self.active:
                active.append(kw.arg)
        for arg in list(call.args) + [k.value for k in call.keywords]:
            plan = self.plan_expression(arg)
            self.plans[id(arg)] = plan
        self.calls.append((stmt, callee, [p for p in params if p in active]))

    def _gathered(self, call, callee, stars):
        """The refusal of a call that gives arguments to ``callee``'s ``*args``
        (``stars`` "*") or ``**kwargs`` ("**")."""
        return self.parsed.error(
            UnsupportedSyntax, call, "cannot differentiate a call of {!r} through its "
            "{}{} parameter: name each parameter".format(
                getattr(callee, "__name__", "?"), stars, "args" if stars == "*" else "kwargs"),
            stars + "args")

    # --- saving: which assignments push, which compounds reverse -----------------

    def compute_saving(self):
        tree = self.normalized.tree
        self.inverses = self._integer_steps(tree)
        self.counted = self._counted_loops(tree)
        needed = set()
        for stmt in S.walk(tree):
            needed |= self.statement_reads(stmt)
        while True:
            self.reversed = {id(s) for s in S.walk(tree) if isinstance(s, (S.If, S.For, S.While))
                             and self._has_reverse(s, needed)}
            grown = set(needed)
            for stmt in S.walk(tree):
                grown |= self._exit_reads(stmt)
            if grown == needed:
                break
            needed = grown
        self.pushes = {}
        self.init_none = set()
        self.undone = set()
        self.reloads = set()
        self._depth = 0
        _Saving(self).run(tree.body, (frozenset(), frozenset(tree_params(tree))))

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
        params = set(tree_params(tree))
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
            return _names(stmt.test)
        if id(stmt) in self.counted:
            return {self.inverses[id(self.counted[id(stmt)])][0]}
        reads = {stmt.trips} if stmt.trips else set()
        if isinstance(stmt, S.For):
            reads |= _names(stmt.iter)
        return reads

    def _prepare_loop(self, loop, read):
        """Before the data-flow enters ``loop`` with ``read``: which items the
        reverse loop reads again, and whether it saves a for loop's target."""
        written = _changed_in(loop.body).union(*(
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

    def _save_for(self, stmt, read, assigned):
        """The data-flow's step over the assignment ``stmt``: record what it saves
        (or how its reverse undoes it) and return what is read after it."""
        names = self.stored(stmt) + assigned_names(stmt)
        read = set(read) | self.statement_reads(stmt)
        saved = [n for n in names if n in read and
                 not (id(stmt) in self.reloads and n == stmt.targets[0].id)]
        counting = any(step is stmt for step in self.counted.values())
        undo = self._undo(stmt, saved) if saved or counting else None
        if undo is not None:
            self.inverses[id(stmt)] = undo
            self.undone.add(id(stmt))
            read = read | (_names(undo[1]) - {undo[0]})  # the undo reads these
        elif saved:
            self.undone.discard(id(stmt))
            self.pushes[id(stmt)] = saved
            self.init_none |= set(saved) - assigned
        read = (read - set(names)) | self.statement_reads_after(stmt)
        if undo is not None:
            read.add(undo[0])  # the undo starts from the value this left
        elif saved and is_item_write(stmt):
            # x[i] = pop() writes into the array this wrote into: a later
            # x = e must save x, or the reverse writes into e's array
            read.add(stmt.targets[0].value.id)
        return read, assigned | set(names)


class _Saving(dataflow.Forward):
    """The forward data-flow of "read by an adjoint since last assigned" that
    decides what each statement saves.  Its state is (the names an adjoint
    reads since their last assignment on some path, the names surely holding a
    value, to spot saves of nothing)."""

    def __init__(self, analysis):
        self.analysis = analysis
        self.depth = 0  # how many loops are around

    def join(self, one, other):
        return one[0] | other[0], one[1] & other[1]

    def simple(self, stmt, state):
        read, assigned = state
        if isinstance(stmt, S.Assign):
            read, assigned = self.analysis._save_for(stmt, read, assigned)
            return frozenset(read), frozenset(assigned)
        if is_append(stmt):
            # Undone by xs.pop() in the reverse sweep when xs is read before.
            items = stmt.value.func.value.id
            if items in read:
                self.analysis.undone.add(id(stmt))  # xs.pop() needs xs as this left it
            else:
                read = read - {items}
        return read, assigned

    def leave(self, stmt, state):
        # the reverse of a branch reads its test wherever control leaves it
        return state[0] | self.analysis._exit_reads(stmt), state[1]

    def enter_body(self, loop, state):
        target = {loop.target.id} if isinstance(loop, S.For) else set()
        return state[0] - target, state[1] | target

    def end_trip(self, loop, state):
        # The reverse loop assigns the target itself, so reads of it inside the
        # body never reach outside the loop.
        return (state[0] - {loop.target.id}, state[1]) if isinstance(loop, S.For) else state

    def loop(self, loop, state):
        self.analysis._prepare_loop(loop, state[0])
        self.depth += 1
        self.analysis._depth = self.depth
        try:
            return super().loop(loop, state)
        finally:
            self.depth -= 1
            self.analysis._depth = self.depth


def _unpacking(loop, width):
    """The statements ssa made of ``for a, b in ...`` (``width`` names) at the top
    of the loop's body: ``seq2 = item1``, ``a = seq2[0]``, ``b = seq2[1]``, with
    item1 and seq2 read nowhere else; or None."""
    top = 1 if loop.trips else 0
    unpack = loop.body[top:top + width + 1]
    if len(unpack) != width + 1 or not all(
            isinstance(s, S.Assign) and isinstance(s.targets[0], S.Name) for s in unpack):
        return None
    whole = unpack[0].targets[0].id
    if not (isinstance(unpack[0].value, S.Name) and unpack[0].value.id == loop.target.id
            and all(isinstance(s.value, S.Subscript) and isinstance(s.value.value, S.Name)
                    and s.value.value.id == whole and isinstance(s.value.slice, S.Constant)
                    and s.value.slice.value == k for k, s in enumerate(unpack[1:]))):
        return None
    reads = collections.Counter(n.id for n in S.walk(loop) if isinstance(n, S.Name))
    if reads[loop.target.id] != 2 or reads[whole] != width + 1:
        return None
    return unpack


def _calls_derivo_api(node, parsed, tree):
    """Whether ``node`` calls what a call of derivo's API returns (``derivo.grad(g)(x)``,
    which ssa splits into ``t = derivo.grad(g)`` and ``t(x)``)."""
    callee = getattr(node, "func", None)
    if isinstance(callee, S.Name):
        callee = S.values_assigned_once(tree).get(callee.id)
    if not isinstance(callee, S.Call):
        return False
    made_by = parsed.resolve_callee(callee)
    return S.is_derivo(made_by) and getattr(made_by, "__module__", "") == "derivo.api"


def _changed_in(block):
    """Names ``block`` assigns, writes into or calls a method of (``xs.append(v)``)."""
    return S.stored_names(block) | {
        n for s in S.walk(block) if is_item_write(s) for n in assigned_names(s)} | {
        n.func.value.id for n in S.walk(block) if isinstance(n, S.Call)
        and isinstance(n.func, S.Attribute) and isinstance(n.func.value, S.Name)}


def _item_read_again(loop, position, written):
    """Whether ``t = X[i]``, statement ``position`` of a for loop's body, gives
    the same value when the reverse loop runs it at the top of the same trip: X
    and the names of the index other than the loop's target are not among the
    names the loop changes (``written``, see :func:`_changed_in`), and no
    statement before it in the body reads t (the previous trip's).  ``row =
    X[i]`` of a loop over values is one by construction."""
    stmt = loop.body[position]
    if not (isinstance(loop, S.For) and isinstance(loop.target, S.Name)
            and isinstance(stmt, S.Assign) and isinstance(stmt.targets[0], S.Name)
            and isinstance(stmt.value, S.Subscript) and isinstance(stmt.value.value, S.Name)):
        return False
    name = stmt.targets[0].id
    reads = {stmt.value.value.id} | (_names(stmt.value.slice) - {loop.target.id})
    return not (reads & written or loop.target.id in written or name in reads
                or any(name in _names(s) for s in loop.body[:position]))


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
    if x in _names(other):
        return None
    return S.binop(S.name(x), _INVERSE_OPS[type(value.op)](), S.deepcopy(other))


def _is_int(node):
    return isinstance(node, S.Constant) and type(node.value) is int


def same_operands(operands):
    """Whether a rule's operands are all one name (``x * x``): nothing to reduce."""
    names = {o.id if isinstance(o, S.Name) else id(o) for _, o, _ in operands}
    return len(names) == 1


def index_value(node):
    """An index as a value: ``1:n`` becomes ``slice(1, n, None)``."""
    if isinstance(node, S.Slice):
        parts = [S.deepcopy(p) if p is not None else S.const(None)
                 for p in (node.lower, node.upper, node.step)]
        return S.call("slice", *parts)
    if isinstance(node, S.Tuple):
        return S.tuple_([index_value(e) for e in node.elts])
    return S.deepcopy(node)


def assigned_names(stmt):
    """The names an assignment binds, or the array or list it writes into."""
    if is_append(stmt):
        return [stmt.value.func.value.id]
    target = stmt.targets[0]
    if isinstance(target, S.Tuple):
        return [t.id for t in target.elts]
    if isinstance(target, S.Subscript):
        return [target.value.id]
    return [target.id]


def is_item_write(stmt):
    return isinstance(stmt, S.Assign) and isinstance(stmt.targets[0], S.Subscript)


def is_range(iterable, parsed):
    return isinstance(iterable, S.Call) and isinstance(iterable.func, S.Name) and \
        parsed.resolve(iterable.func.id) is range


def _hashable(key):
    try:
        hash(key)
    except TypeError:
        return False
    return True


def _reached(start, edges):
    """``start`` and every name reached from it along ``edges``, pairs (from a
    name in the first set, to the names of the second)."""
    reached = set(start)
    grew = True
    while grew:
        grew = False
        for sources, targets in edges:
            if sources & reached and not targets <= reached:
                reached |= targets
                grew = True
    return reached


def _names(node):
    return {n.id for n in S.walk(node) if isinstance(n, S.Name)}


def tree_params(tree):
    args = tree.args
    return [a.id for a in args.posonlyargs + args.args + args.kwonlyargs]


def _joined_sequence_error(parsed, node, operand):
    text = parsed.words(operand)
    if isinstance(operand, S.Tuple) and text == S.expr_source(operand):
        text = "(" + text + ")"
    return parsed.error(
        UnsupportedSyntax, node, "cannot differentiate {!r}: {!r} may be a list or a tuple, "
        "and + joins such sequences, * repeats them; derivo differentiates + and * of "
        "numbers and arrays (build the list item by item, or use NumPy arrays)".format(
            parsed.words(node), text), "list arithmetic")


def _arguments_changed_by(parsed, call, callee, arrays, seen=frozenset()):
    """The arguments of ``call`` (of ``callee``, resolved by ``parsed``) that it may
    change in place: those a user function changes (see :func:`parameter_writes`),
    be it called as a function, as a method of a user object (``FILLER.go(a)``),
    as a user object (``layer(a)``), as a class or through ``functools.partial``;
    what a function a local name was assigned changes (``zeros = np.zeros``); and
    every argument of a function derivo cannot read (``fn(a)``, fn a parameter,
    ``obj.go(a)`` of a method it does not know)."""
    everything = [*call.args, *(k.value for k in call.keywords)]
    if isinstance(call.func, S.Name) and call.func.id in parsed.local_names and \
            callee is MISSING:  # (not a parameter said to hold callee: see Parsed.fixed)
        return _changed_through_a_local(parsed, call, arrays, seen)
    if _unreadable(callee):
        return everything  # FNS[0](a), obj.go(a) of a local obj, super().go(a)
    if any(_changes_its_arguments(parsed, argument, arrays, seen) for argument in everything):
        return everything  # map(fill, [a]): fill is called with what map was given
    function, given = user_function(callee)
    if function is None or function in seen:
        return []
    try:
        written = parameter_writes(function, arrays, seen)
    except DerivoError:  # no source: it may change any argument
        return everything
    return [argument for name, argument in arguments(call, function, given)
            if name in written]


#: Types whose methods derivo knows: what they change is in _written_in_place
_KNOWN_TYPES = (np.ndarray, np.generic, list, tuple, dict, set, frozenset, str, bytes, int,
                float, complex)


def _unreadable(callee):
    """Whether derivo can neither look ``callee`` up nor knows it as a method."""
    return callee is MISSING or isinstance(callee, rules.Method) and \
        not _a_known_method(callee.name)


def _a_known_method(name):
    """Whether ``name`` is a method of a value derivo knows (a random generator's:
    ``rng.normal(scale=sigma)``), or NumPy's function of that name (``xp.exp(x)``,
    ``xp`` a parameter given ``np``)."""
    return any(hasattr(kind, name) for kind in _KNOWN_TYPES) or hasattr(np, name) or \
        any(hasattr(kind, name) for kind in _generators())


@functools.lru_cache(maxsize=None)
def _generators():
    # imported when first needed: numpy.random takes 10 ms to import
    import numpy.random
    import random
    return (numpy.random.Generator, numpy.random.RandomState, random.Random)


def _changes_its_arguments(parsed, value, arrays, seen):
    """Whether ``value``, given to a call, is a user function that changes one of
    its arguments in place (or a function derivo cannot read)."""
    if isinstance(value, S.gast.Lambda):
        return True
    if not isinstance(value, (S.Name, S.Attribute)) or \
            isinstance(S.root_name(value), S.Name) and S.root_name(value).id in parsed.local_names:
        return False
    function, _ = user_function(parsed.callee_key(S.call(value)))
    if function is None or function in seen:
        return False
    try:
        return bool(parameter_writes(function, arrays, seen))
    except DerivoError:
        return True


def _changed_through_a_local(parsed, call, arrays, seen):
    """The arguments ``call`` may change, its function a local name: what the
    value the name is assigned once changes, be it a function derivo can look up
    (``zeros = np.zeros``) or a method of a local value (``fill = y.fill``,
    which changes y); every argument when the name is a parameter or is assigned
    more than once or otherwise."""
    value = S.values_assigned_once(parsed.tree).get(call.func.id)
    callee = parsed.callee_key(S.call(value)) \
        if isinstance(value, (S.Name, S.Attribute)) else MISSING
    if callee is MISSING:
        return [*call.args, *(k.value for k in call.keywords)]
    if isinstance(callee, rules.Method):
        # fill = y.fill; fill(1.0) changes y, push = hs.append; push(h) grows hs
        # (derivo's own push = stack.append, in code it generated, is followed)
        return [value.value] if callee.name in _MUTATORS and \
            not parsed.filename.startswith(GENERATED_PREFIX) else []
    return _written_in_place(parsed, call, callee) + _arguments_changed_by(
        parsed, S.call(value, *call.args, keywords=call.keywords), callee, arrays, seen)


def parameter_writes(func, arrays, _seen=frozenset()):
    """The parameters ``func`` changes in place, read from its source: written
    into (``y[0] = v``, ``del y[0]``), appended to or given a method call as a
    statement (``ys.append(v)``, ``y[1:].fill(0.0)``), updated with ``+=`` and the
    like when values may be arrays, written by NumPy (``np.copyto(y, v)``,
    ``out=y``), or given to a user function that changes them; itself, or through
    another name that may share its memory (``w = y``, ``w = y[1:]``, ``for row
    in y``, see :class:`~derivo.memory.Memory`)."""
    parsed = parse(func)
    tree = parsed.tree
    params = all_params(tree)
    changed = []  # expressions whose object the function changes
    handed = []   # ... given to helpers that change them or what they hold
    for node in S.walk(tree):
        if isinstance(node, (S.Assign, S.gast.AugAssign, S.gast.Delete)):
            for target in _flattened(getattr(node, "targets", None) or [node.target]):
                if isinstance(target, (S.Subscript, S.Attribute)):
                    changed.append(target.value)
                elif arrays and isinstance(node, S.gast.AugAssign):
                    changed.append(target)
        elif isinstance(node, S.Expr) and isinstance(node.value, S.Call) and \
                isinstance(node.value.func, S.Attribute):
            changed.append(node.value.func.value)
        if not isinstance(node, S.Call):
            continue
        changed += _written_in_place(parsed, node)
        handed += _arguments_changed_by(parsed, node, parsed.callee_key(node), arrays,
                                        _seen | {func})
    memory = Memory(parsed, tree, params)
    return {root for expression in changed for root in memory.changed_by(expression)} | {
        root for expression in handed for root in memory.changed_by(expression, deep=True)}


def _flattened(targets):
    for target in targets:
        if isinstance(target, (S.Tuple, S.List)):
            yield from _flattened(target.elts)
        else:
            yield target.value if isinstance(target, S.gast.Starred) else target


def parameters_read_whole(func):
    """The parameters of ``func`` its code may read as a list or an array: every
    one read other than as an operand of arithmetic or a comparison, or as an
    argument of a ``math`` function.  (The entry of scalar code sends a list or an
    array given for one of them to the checked call; see ``api.entry_guard``.)"""
    parsed = parse(func)
    tree = parsed.tree
    params = set(tree_params(tree))
    parents = {id(child): parent for parent in S.walk(tree)
               for child in S.gast.iter_child_nodes(parent)}

    def as_number(node):
        parent = parents.get(id(node))
        if isinstance(parent, (S.BinOp, S.UnaryOp, S.Compare)):
            return True
        return isinstance(parent, S.Call) and node in parent.args and \
            getattr(parsed.resolve_callee(parent), "__module__", None) == "math"

    return {n.id for n in S.walk(tree.body) if isinstance(n, S.Name) and n.id in params
            and isinstance(n.ctx, S.Load) and not as_number(n)}


def sequence_arithmetic(func, _seen=frozenset()):
    """Where ``func`` applies + or * to what it reads from its parameters:
    {parameter: {path: error}}, the paths (see :mod:`derivo.trees`) from the
    parameter to each value read from it that is an operand (``()``: the
    parameter itself, a slice or a copy of it; ``(0,)``: its first item;
    ``(ANY, Field("w"))``: the field w of any item), through calls of user
    functions too, each with the error to raise (at the first such operand).
    Called with a container in which a path reaches a list or a tuple, the
    function joins or repeats sequences (see ``api.Derivative._refuse_joined``).  Read from the statement form,
    where a rebinding at the top level is a new name (``xs = np.asarray(xs)``
    is an array); an operation derivo would not differentiate counts too."""
    normalized = normalize(parse(func))
    parsed, tree = normalized.parsed, normalized.tree
    params = normalized.params
    derived = {p: {p: {()}} for p in params}  # name -> {parameter: paths}
    found = {}

    def paths_of(node):
        return _paths_of(node, parsed, derived)

    def note(param, paths, error):
        for path in paths:
            found.setdefault(param, {}).setdefault(path, error)

    changed = True
    while changed:
        changed = False
        for node in S.walk(tree):
            targets = []
            if isinstance(node, S.Assign) and isinstance(node.targets[0], S.Name):
                targets = [(node.targets[0].id, paths_of(node.value))]
            elif isinstance(node, S.For) and isinstance(node.target, S.Name):
                targets = [(node.target.id, _stepped(paths_of(node.iter), trees.ANY))]
            for name, new in targets:
                merged = _merged_paths(derived.get(name, {}), new)
                if merged != derived.get(name, {}):
                    derived[name] = merged
                    changed = True
    for node in S.walk(tree):
        if isinstance(node, S.BinOp) and isinstance(node.op, (S.Add, S.Mult)):
            for operand in (node.left, node.right):
                for param, paths in paths_of(operand).items():
                    note(param, paths, _joined_sequence_error(parsed, node, operand))
        elif isinstance(node, S.Call):
            callee = form.annotation(node, "user_function") or parsed.resolve_callee(node)
            if not is_user_function(callee) or callee in _seen:
                continue
            try:
                inner = sequence_arithmetic(callee, _seen | {func})
            except DerivoError:  # no source: derivo will refuse the call itself
                continue
            for name, argument in arguments(node, callee):
                for path, error in inner.get(name, {}).items():
                    for param, outer in paths_of(argument).items():
                        note(param, [_joined_path(start, path) for start in outer], error)
    return {p: found[p] for p in params if p in found}


def _stepped(paths, key):
    """``paths`` ({parameter: paths}) each followed by the step ``key``."""
    return {p: {trees.extended(path, key) for path in each} for p, each in paths.items()}


def _paths_of(node, parsed, derived):
    """The paths (see :func:`sequence_arithmetic`) from each parameter to the
    value of ``node``, ``derived`` giving those of the names."""
    def paths_of(inner):
        return _paths_of(inner, parsed, derived)

    if isinstance(node, S.Name):
        return derived.get(node.id, {})
    if isinstance(node, S.Subscript):
        if isinstance(node.slice, S.Slice):
            return paths_of(node.value)
        index = node.slice
        key = index.value if isinstance(index, S.Constant) and \
            isinstance(index.value, (int, str)) else trees.ANY
        return _stepped(paths_of(node.value), key)
    if isinstance(node, S.Attribute) and rules.lookup(rules.Method(node.attr), 1, []) is None:
        return _stepped(paths_of(node.value), trees.Field(node.attr))
    if isinstance(node, S.Call):
        callee = parsed.callee_key(node)
        if callee in (list, tuple, sorted, reversed) and len(node.args) == 1:
            return paths_of(node.args[0])
        if callee in (zip, enumerate):
            # its items are tuples: item[0] of zip(xs, ys) is an item of xs
            sequences = node.args if callee is zip else node.args[:1]
            return _merged_paths(*(_stepped(paths_of(a), trees.ZIPPED) for a in sequences))
    if isinstance(node, S.IfExp):
        return _merged_paths(paths_of(node.body), paths_of(node.orelse))
    return {}


def _joined_path(start, path):
    for key in path:
        start = trees.extended(start, key)
    return start


def _merged_paths(*each):
    merged = {}
    for paths in each:
        for param, found in paths.items():
            merged[param] = merged.get(param, set()) | found
    return merged


#: The kinds of refusal of an in-place change the memory model makes
MEMORY_REFUSALS = ("aliased write", "aliased update", "write into a loop item")


def analyze_memory(normalized, wrt, arrays=False):
    """Run the analyses that refuse in-place changes of shared memory, alone."""
    analysis = Analysis(normalized, wrt, arrays, "stack")
    analysis.compute_activity()
    analysis.compute_lists()
    analysis.compute_read_item_by_item()
    analysis.refuse_shared_writes()
    analysis.plan_statements()
    form.check(normalized.tree, "analyze")


def analyze(normalized, wrt, arrays=False, loops="stack"):
    """Run all analyses of ``normalized`` for differentiation w.r.t. ``wrt`` names."""
    analysis = Analysis(normalized, wrt, arrays, loops)
    analysis.compute_activity()
    analysis.compute_lists()
    analysis.compute_read_item_by_item()
    analysis.refuse_shared_writes()
    analysis.refuse_joined_sequences()
    analysis.refuse_writes_into_globals()
    analysis.plan_statements()
    analysis.compute_saving()
    form.check(normalized.tree, "analyze")
    return analysis


#: Functions that write into their first argument (the shuffles are told by name,
#: see _written_in_place) and the names they give it
_WRITES_INTO_FIRST_ARGUMENT = (
    np.copyto, np.put, np.place, np.putmask, np.fill_diagonal, np.put_along_axis,
    operator.setitem, operator.delitem, operator.iadd, operator.iconcat, operator.isub,
    operator.imul, operator.imatmul, operator.itruediv, operator.ifloordiv, operator.imod,
    operator.ipow, heapq.heapify, heapq.heappush, heapq.heappop, heapq.heapreplace,
    heapq.heappushpop, bisect.insort_left, bisect.insort_right)
_FIRST_ARGUMENT_NAMES = ("dst", "a", "arr", "x")

#: Methods that change their object, called unbound (list.reverse(xs)) on these types
_MUTABLE_TYPES = (list, dict, set, bytearray, np.ndarray)
_MUTATORS = {"append", "extend", "insert", "remove", "pop", "popitem", "clear", "sort",
             "reverse", "update", "setdefault", "add", "discard", "intersection_update",
             "difference_update", "symmetric_difference_update", "fill", "partition", "put",
             "resize", "itemset", "setfield", "setflags", "byteswap", "__setitem__",
             "__delitem__"}


def _changes_its_object(callee):
    """Whether ``callee`` is a method of a list, dict, set or array, taken from its
    type, that changes the object it is given first (``np.ndarray.fill``)."""
    name = getattr(callee, "__name__", "")
    return getattr(callee, "__objclass__", None) in _MUTABLE_TYPES and (
        name in _MUTATORS or name.startswith("__i") and name.endswith("__"))


def _out_position(callee):
    """The position of the ``out`` argument of a NumPy function (np.cumsum's 3),
    of an array method (``a.cumsum``'s 2, told by name), or of a ufunc's
    ``reduce``, ``accumulate`` or ``reduceat``; or None."""
    if isinstance(callee, rules.Method):  # a.cumsum(0, None, out): np.cumsum's, less one
        function = getattr(np, callee.name, None)
        if isinstance(function, np.ufunc) or not is_numpy(function):
            return None
        position = _numpy_out_position(function)
        return position - 1 if position else None
    if isinstance(getattr(callee, "__self__", None), np.ufunc):
        return {"reduce": 3, "accumulate": 3, "reduceat": 4}.get(callee.__name__)
    return _numpy_out_position(callee) if is_numpy(callee) and _hashable(callee) else None


@functools.lru_cache(maxsize=None)
def _numpy_out_position(function):
    try:
        params = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return None
    for position, param in enumerate(params):
        if param.kind not in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            return None
        if param.name == "out":
            return position
    return None


def _is_dunder(name):
    return name.startswith("__") and name.endswith("__")


def _written_in_place(parsed, call, callee=None):
    """The expressions whose object a call changes, as NumPy, ``random``,
    ``heapq`` and ``operator`` do: the first argument of ``np.copyto``, of
    ``np.add.at`` and the like, of ``heapq.heappush``, ``operator.setitem``, of a
    method that changes its object called from its type (``list.reverse(xs)``),
    and of a shuffle (NumPy's ``np.random.shuffle``, ``random.shuffle``, or any
    ``.shuffle(x)`` of a value derivo cannot look up, whatever it is); the object
    of a method that changes it, inside an expression too (``r = a.sort()``); a
    ufunc's outputs given after its inputs, the ``out`` argument given by
    position (``np.cumsum(a, 0, None, a)``, ``c.clip(0, 1, a)``), and any call's
    ``out=``.  ``callee``: what the call calls, when not what its function
    expression names (a local alias, ``cp = np.copyto``)."""
    callee = parsed.callee_key(call) if callee is None else callee
    owner = getattr(callee, "__self__", None)
    name = callee.name if isinstance(callee, rules.Method) else getattr(callee, "__name__", None)
    # Shuffles are told by name: np.random.shuffle is a method of NumPy's RandomState,
    # which leaves np.random unimported until a function calls it (importing it takes
    # 10 ms), and a Generator made in the function (rng.shuffle) is not looked up.
    shuffles = name == "shuffle" and (isinstance(callee, rules.Method) or type(
        owner).__module__.partition(".")[0] in ("numpy", "random"))
    written = []
    # np.add.at(x, i, v), and .at of a ufunc derivo cannot look up (op = np.add)
    at = name == "at" and (isinstance(owner, np.ufunc) or isinstance(callee, rules.Method))
    # xp.copyto(y, v), xp a name for NumPy derivo cannot look up (a parameter)
    numpy_by_name = isinstance(callee, rules.Method) and not hasattr(np.ndarray, name) and \
        getattr(np, name, None) in _WRITES_INTO_FIRST_ARGUMENT
    if callee in _WRITES_INTO_FIRST_ARGUMENT or shuffles or at or numpy_by_name or \
            _changes_its_object(callee):
        written += call.args[:1] or [k.value for k in call.keywords
                                     if k.arg in _FIRST_ARGUMENT_NAMES]
    # (xs.append(v) as a statement is followed; the caller looks at statements);
    # a dunder called by name (x.__iadd__(v)) may change its object, but indexing
    if isinstance(callee, rules.Method) and (name in _MUTATORS and name != "append" or
                                             _is_dunder(name) and callee != rules.GETITEM):
        written.append(call.func.value)
    if isinstance(callee, np.ufunc):
        written += call.args[callee.nin:]
    else:
        position = _out_position(callee)
        if position is not None:
            written += call.args[position:position + 1]
    for keyword in call.keywords:
        if keyword.arg == "out":
            written += keyword.value.elts if isinstance(keyword.value, S.Tuple) \
                else [keyword.value]
    return written


#: math functions of an iterable: the adjoint of a list given to one is a list
_MATH_OVER_ITERABLES = ("fsum", "prod", "dist", "sumprod")
