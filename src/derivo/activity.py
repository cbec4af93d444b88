"""Activity: which names of a function in statement form (see ``ssa``) get
derivatives.

A name is *varied* when it depends on a differentiated argument, *useful* when
it reaches a result through differentiable operations, and *active* when both:
only active names get adjoints and tangents.  Dependence flows along the
arguments of a primitive that its rule differentiates (a :class:`Site`); a
comparison, ``int(x)`` or ``x.shape`` stops it.  *Influential* names may change
a result through any operation, or a branch or a loop they decide.  The
refusals that follow from activity alone live here too: a set of
differentiated values, and a differentiated value given to an argument its
rule has no derivative for.
"""

import functools

import numpy as np

from . import checkpoints, dataflow, form, rules
from . import syntax as S
from .errors import NoDerivativeRule, UnsupportedSyntax
from .ssa import is_append
from .statements import assigned_names, is_item_write, names_of

DIFFERENTIABLE_OPS = (S.Add, S.Sub, S.Mult, S.Div, S.Pow, S.Mod, S.MatMult)


class Site:
    """One application of a primitive: its rule and its arguments bound to the
    rule's parameter names, ``[(param, argument node, template or None)]``
    (``forward``: for forward mode, where an argument with only a tangent rule
    has a rule: see :meth:`derivo.rules.Rule.templates_for`)."""

    def __init__(self, key, positional, keywords, label=None, forward=False):
        self.key = key
        self._label = label  # how messages name it, or a function that says (see label)
        self.npositional = len(positional)
        self.keywords = [k.arg for k in keywords]
        self.rule = rules.lookup(key, len(positional), self.keywords) \
            if hashable(key) and None not in self.keywords else None
        if self.rule is None:
            self.args = [(None, a, None) for a in positional] + \
                [(k.arg, k.value, None) for k in keywords]
            return
        templates = self.rule.templates_for(forward)
        self.args = [(param, arg, templates[i] if i < len(templates) else None)
                     for i, (param, arg) in enumerate(zip(self.rule.params, positional))]
        extras = positional[len(self.rule.params):]
        vararg = next((t.varargs for t in templates if t is not None and t.varargs), None)
        if vararg:  # x.transpose(1, 0, 2): the template sees axes == (1, 0, 2)
            self.args.append((vararg, S.tuple_(extras), None))
        else:
            self.args += [(None, arg, None) for arg in extras]
        for k in keywords:
            index = self.rule.params.index(k.arg) if k.arg in self.rule.params else len(templates)
            self.args.append((k.arg, k.value, templates[index]
                              if index < len(templates) else None))

    @property
    def label(self):
        """The callee as messages name it (how the user wrote it, found only when
        a message needs it)."""
        label = self._label() if callable(self._label) else self._label
        return label or rules.label_of(self.key)


class Activity:
    """The activity of the function ``normalized``: ``varied``, ``useful`` and
    ``active`` names, found by :meth:`propagate`.  ``local_names``: the
    function's locals, a set the indexing of loops adds to (see ``indexing``)."""

    def __init__(self, normalized, local_names, forward=False):
        self.normalized = normalized
        self.forward = forward  # for forward mode (see Site)
        self.parsed = normalized.parsed
        self.local_names = local_names
        self.varied = self.useful = self.active = set()

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
                # a function held in a local name, or in an item of a local
                # container, is a value its result depends on (f of out,
                # f = derivo.vjp(g, x), moves with x; so does fns[0] of
                # fns = [lambda z: z * x])
                if isinstance(node, S.Call) and (
                        isinstance(node.func, S.Name) and node.func.id in self.local_names
                        or isinstance(node.func, S.Subscript)):
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
            return Site(key, args, node.keywords,
                        label=functools.partial(self.parsed.words, node.func),
                        forward=self.forward)
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

    def propagate(self, wrt):
        """Find the varied, useful and active names, ``wrt`` the differentiated
        parameters."""
        assignments = [s for s in S.walk(self.normalized.tree)
                       if isinstance(s, (S.Assign, S.For)) or is_append(s)]

        def flows(stmt):
            if isinstance(stmt, S.For):
                return [stmt.target.id], self.differentiable_names(stmt.iter)
            if is_append(stmt):
                items = stmt.value.func.value.id
                return [items], self.differentiable_names(stmt.value.args[0]) | {items}
            targets = assigned_names(stmt)
            sources = self.differentiable_names(stmt.value)
            return targets, sources | set(targets) if is_item_write(stmt) else sources

        edges = [(set(targets), sources) for targets, sources in map(flows, assignments)]
        varied = dataflow.reached(wrt, [(sources, targets) for targets, sources in edges])
        useful = dataflow.reached(self.normalized.results, edges)
        self.active = varied & useful
        self.varied, self.useful = varied, useful

    @functools.cached_property
    def influential(self):
        """Names whose values may change a result, through any operation (a
        comparison, ``int``) or a branch or a loop they decide: the names the
        results and the tests read, and what those read, back to the parameters."""
        tree = self.normalized.tree
        influential = set(self.normalized.results)
        edges = []
        for node in S.walk(tree):
            if isinstance(node, (S.If, S.While)):
                influential |= names_of(node.test)
            elif isinstance(node, S.For):  # its trip count: what it iterates over
                influential |= names_of(node.iter)
            elif isinstance(node, S.Assign):
                edges.append((set(assigned_names(node)), names_of(node.value) | (
                    names_of(node.targets[0]) if is_item_write(node) else set())))
            elif is_append(node):
                edges.append(({node.value.func.value.id}, names_of(node.value)))
        return dataflow.reached(influential, edges)

    def refuse_arguments_without_rule(self):
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

    def refuse_sets(self):
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


def hashable(key):
    try:
        hash(key)
    except TypeError:
        return False
    return True
