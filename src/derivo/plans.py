"""Expression plans: how the adjoint (or tangent) of each active assignment is
computed.

For each active assignment, which sub-expressions are active, which rule
differentiates each, and which values the adjoint code must recompute or read.
The primal sweep keeps expressions whole; with scalars the reverse sweep
recomputes the intermediate values of one statement from the statement's
inputs, so only *variables* are ever saved, never temporaries; with arrays the
primal keeps in temporaries the intermediate values the adjoint reads.  A call
of a user function is planned argument by argument.  What has no derivative is
refused here, where its plan would be.

The adjoint of an operand of a broadcast (``x + b``) is reduced to the
operand's shape, which the reverse sweep must then read (and a loop save),
unless the operand sums it down itself (:attr:`Plan.summed`): a matrix
product, whose VJP does, or an elementwise operation whose own operands'
adjoints are reduced or summed in turn.  An RNN step ``tanh(W @ h + U @ x +
b)`` so reduces only b's adjoint, and its loop saves neither ``W @ h`` nor
``U @ x``.  Forward mode plans no such thing: a tangent takes its value's shape.
"""

import dataclasses
import functools
import re
import types

import numpy as np

from . import form, rules, runtime
from . import syntax as S
from .activity import hashable
from .errors import NoDerivativeRule, UnsupportedSyntax
from .memory import in_a_library
from .outline import Loop
from .parse import MISSING, UNPACKED, Outlined, is_distribution, parameter_names
from .statements import assigned_names, is_item_write, names_of


#: Rules whose VJPs sum an adjoint broadcast to more than the value's shape down
#: to it (see runtime.matmul_vjp_left)
_SUMS_ITS_ADJOINT = (S.MatMult, np.matmul)
#: the modules of the public functions that make derivatives (derivo.grad, derivo.hessian)
API_MODULES = ("derivo.api", "derivo.jacobians")


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
        # id(node) of the nodes whose adjoint may reach them broadcast to more than
        # their shape: an operand of a broadcast that is one is not reduced to its
        # shape, so the reverse reads no value for that shape (reverse mode only)
        self.summed = set()


class Planner:
    """Plans the active assignments of ``normalized`` (``arrays``: values may be
    arrays; ``loops``: the strategy of reverse mode; ``reverse``: for a reverse
    sweep, not tangents) given its ``activity`` and
    value ``kinds``.  :meth:`plan_statements` fills ``plans``, {id(assignment or
    argument of a user call): Plan}, and ``calls``, [(call statement, user
    function, active parameter names)].  ``halves(callee)``: whether the VJP of
    a called user function comes in halves, whose backward half reads the
    residuals its forward half handed over rather than the call's arguments."""

    def __init__(self, normalized, arrays, loops, activity, kinds, reverse=True,
                 halves=None):
        self.normalized = normalized
        self.parsed = normalized.parsed
        self.arrays = arrays
        self.reverse = reverse  # planned for a reverse sweep (not tangents)
        self.loops = loops
        self.activity = activity
        self.kinds = kinds
        self.halves = halves or (lambda callee: False)
        self.plans = {}
        self.calls = []

    def plan_statements(self):
        # A reversible loop gives back its inputs, not the temporaries its trips
        # overwrote: each trip's are recomputed from what the undo restored.
        recomputed = {id(s) for loop in S.walk(self.normalized.tree)
                      if isinstance(loop, (S.For, S.While)) for s in S.walk(loop.body)} \
            if self.loops == "reversible" else set()
        for stmt in S.walk(self.normalized.tree):
            if isinstance(stmt, S.For) and self.activity.differentiable_names(stmt.iter) & \
                    self.activity.active and stmt.target.id in self.activity.active:
                # indexing left it: the body changes the values,
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
            if is_item_write(stmt) or not set(assigned_names(stmt)) & self.activity.active:
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
            if self.activity.differentiable_names(arg) & self.activity.active:
                active.append(params[index])
        for kw in call.keywords:
            if kw.arg is None:
                raise self.parsed.error(UnsupportedSyntax, call, "cannot differentiate "
                                        "'**' arguments", "**")
            if kw.arg not in params:  # def f(**kw): its gradient would be silently zero
                raise self._gathered(call, callee, "**")
            if self.activity.differentiable_names(kw.value) & self.activity.active:
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
                plan.reads |= names_of(node)
            elif node is root and target not in names_of(root):
                plan.result = target
                plan.reads_after.add(target)
            elif self.arrays and keep and key not in self._arms and \
                    not isinstance(node, (S.Name, S.Constant)) and \
                    (key in plan.nodes or isinstance(node, (S.Call, S.Subscript))):
                plan.stored[key] = self.normalized.namer.numbered("t")
                plan.reads_after.add(plan.stored[key])
            else:
                plan.reads |= names_of(node)

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
            if node.id in self.activity.active:
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
            plan.reads |= names_of(node.test)
            return True
        if isinstance(node, (S.Tuple, S.List, S.gast.Dict)):
            elements = node.values if isinstance(node, S.gast.Dict) else node.elts
            flags = [self._plan(e, plan) for e in elements]
            if not any(flags):
                return False
            entry = plan.nodes[id(node)] = Node("sequence", elements)
            entry.active = [i for i, a in enumerate(flags) if a]
            if isinstance(node, S.gast.Dict):  # its keys, read again by the adjoint
                plan.reads |= names_of([key for key in node.keys if key is not None])
            return True
        site = self.activity.site(node)
        if site is None:
            if self.activity.differentiable_names(node) & self.activity.active:
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
            operand = site.args[index][1]
            if site.rule.broadcasts and self.arrays and id(operand) not in plan.summed and \
                    not all(self.kinds.is_scalar(arg) for i, (_, arg, _) in
                            enumerate(site.args) if i != index):
                entry.reduce.add(index)
                self._need(operand, plan)  # its shape, to reduce to
        if self.reverse and self.arrays and self._sums_its_adjoint(site, entry, plan):
            plan.summed.add(id(node))
        return True

    def _sums_its_adjoint(self, site, entry, plan):
        """Whether the adjoint of this application may come broadcast to more than
        its value's shape: its VJP sums it down (a matrix product's), or it is
        elementwise and each operand's adjoint is reduced to the operand's shape
        or is summed in turn.  Summing in stages gives the sum at once."""
        if site.key in _SUMS_ITS_ADJOINT:
            return True
        return site.rule.broadcasts and not same_operands(site.args) and all(
            index in entry.reduce or id(site.args[index][1]) in plan.summed
            for index in entry.active)

    def _need(self, node, plan):
        plan.needs[id(node)] = plan.needs.get(id(node), 0) + 1
        plan.needed[id(node)] = node

    def _refuse(self, node, site):
        """Refuse ``node``, an active expression with no derivative: a call of
        ``site`` no rule differentiates, or a construct (``site`` None)."""
        if site is not None:
            raise self.parsed.error(NoDerivativeRule, node, self._no_rule(node, site),
                                    site.label)
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

    def _no_rule(self, node, site):
        """Why ``node``, a call of ``site``, has no derivative, and what to write."""
        known = rules.RULES.get(site.key) if hashable(site.key) else None
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
        elif S.is_derivo(site.key) and getattr(site.key, "__module__", "") in API_MODULES \
                or _calls_derivo_api(node, self.parsed, self.normalized.tree):
            message = ("cannot differentiate through {!r} called inside the differentiated "
                       "function: make the derivative once outside it "
                       "(dg = derivo.grad(g)) and call dg here, which derivo "
                       "differentiates through its code".format(site.label))
        elif is_distribution(site.key):
            message = ("cannot differentiate {0!r} frozen into a value: derivo "
                       "differentiates a frozen distribution's method called on it where "
                       "it is made, {0}(...).logpdf(x), or held in a name assigned once "
                       "and only called, or on the family, "
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
        elif isinstance(site.key, rules.Method) and isinstance(self.parsed.func, Outlined):
            message = ("cannot differentiate {!r} in a checkpointed loop: its trips take the "
                       "loop's items as arguments, so derivo cannot tell which function a "
                       "method of one runs; reverse the loop with loops=\"stack\", which "
                       "calls each item's method as the class's function".format(site.label))
        elif isinstance(site.key, rules.Method):
            func = getattr(node, "func", None)
            owner = self.parsed.words(func.value) if isinstance(func, S.Attribute) else "obj"
            message = ("cannot differentiate {0!r}: it is a method of a value derivo does not "
                       "read when it transforms (an item of a list made in the function, or "
                       "of one it differentiates), so which function runs is unknown; call "
                       "the class's function, Cls.{1}({2}, ...), or loop over a list held by "
                       "a global, a closure variable, an attribute of self or an argument not "
                       "differentiated, each of whose items' classes defines {1}".format(
                           site.label, site.key.name, owner))
        elif site.key is MISSING:
            message = ("cannot differentiate {!r}: it calls a value derivo does not follow "
                       "when it transforms (a functools.partial assigned more than once or "
                       "used as a value, an item of a list made in the function); call the "
                       "function it holds where it is called, f(a, x), or assign the partial "
                       "once and only call it".format(site.label))
        else:
            message = ("cannot differentiate {!r}: derivo has no derivative rule for it and "
                       "a differentiated value flows into it (register one with "
                       "derivo.defpartials or derivo.defvjp)".format(site.label))
        return message

    def statement_reads(self, stmt):
        """Primal names the reverse of a simple statement reads (before it runs)."""
        if not isinstance(stmt, S.Assign):
            return set()
        value = stmt.value
        if not set(assigned_names(stmt)) & self.activity.active:
            return set()
        if is_item_write(stmt):
            return names_of(stmt.targets[0].slice) | names_of(value)
        callee = form.annotation(value, "user_function")
        if isinstance(callee, Loop):
            # the loop's tape keeps copies of its states, but its invariants as they
            # are: the reverse reads those as the code after the loop leaves them
            invariants = value.args[len(value.args) - len(callee.invariants):]
            return set().union(*map(names_of, invariants)) if callee.invariants else set()
        if self.in_halves(stmt):
            arguments = list(value.args) + [k.value for k in value.keywords]
            return set().union(*(self.plans[id(a)].reads for a in arguments
                                 if id(a) in self.plans))
        if callee is not None:
            return names_of(value)
        return self.plans[id(stmt)].reads

    def in_halves(self, stmt):
        """Whether ``stmt`` calls a user function whose VJP comes in halves."""
        callee = form.annotation(getattr(stmt, "value", None), "user_function")
        return callee is not None and not isinstance(callee, Loop) and self.halves(callee)

    def statement_reads_after(self, stmt):
        """Names the reverse of a statement reads as the statement left them."""
        plan = self.plans.get(id(stmt))
        return plan.reads_after if plan is not None else set()

    def stored(self, stmt):
        """Temporaries the primal sweep keeps for ``stmt``, in evaluation order."""
        plan = self.plans.get(id(stmt))
        return list(plan.stored.values()) if plan is not None else []


def same_operands(operands):
    """Whether a rule's operands are all one name (``x * x``): nothing to reduce."""
    names = {o.id if isinstance(o, S.Name) else id(o) for _, o, _ in operands}
    return len(names) == 1


def _calls_derivo_api(node, parsed, tree):
    """Whether ``node`` calls what a call of derivo's API returns (``derivo.grad(g)(x)``,
    which ssa splits into ``t = derivo.grad(g)`` and ``t(x)``)."""
    callee = getattr(node, "func", None)
    if isinstance(callee, S.Name):
        callee = S.values_assigned_once(tree).get(callee.id)
    if not isinstance(callee, S.Call):
        return False
    made_by = parsed.resolve_callee(callee)
    return S.is_derivo(made_by) and getattr(made_by, "__module__", "") in API_MODULES
