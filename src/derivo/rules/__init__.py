"""Derivative rules: one declarative table per library.

A rule gives, for each argument of a primitive, its partial derivative as a
one-line lambda of ``(ans, *args)``; ``ans`` is the primitive's result.  The
lambda is a *template*: its source is parsed once, here, and its parameter names
are replaced by expressions when derivo pastes it into generated code.  Reverse
mode multiplies the output adjoint by the partial; forward mode sums partials
times tangents; both come from the same entry, so they cannot disagree.

Tables register themselves when imported (see ``builtins.py``)::

    defpartials(math.sin, lambda ans, x: math.cos(x))
    defpartials(math.atan2, lambda ans, y, x: x / (x * x + y * y),
                            lambda ans, y, x: -y / (x * x + y * y))
    nondifferentiable(math.floor, math.factorial)

``None`` in place of a partial marks an argument derivo does not
differentiate through (an integer count, a flag).
"""

import ast
import inspect
import linecache
import operator

from .. import syntax as S
from ..errors import DerivoError

#: primitive (a function object or an operator's gast class) -> {arity: Rule}
RULES = {}
#: functions whose result is never differentiated (comparisons are handled by ssa)
NONDIFFERENTIABLE = set()
OPERATOR_FUNCTIONS = {S.Add: operator.add, S.Sub: operator.sub, S.Mult: operator.mul,
                      S.Div: operator.truediv, S.Pow: operator.pow, S.Mod: operator.mod,
                      S.USub: operator.neg, S.UAdd: operator.pos}


class Template:
    """A one-expression lambda, parsed once, whose parameters are placeholders."""

    def __init__(self, fn):
        self.fn = fn
        self.params, self.body = _lambda_tree(fn)
        self.globals = fn.__globals__
        used = {n.id for n in S.walk(self.body) if isinstance(n, S.Name)}
        self.uses = {p for p in self.params if p in used}
        self.free_names = sorted(used - set(self.params))

    def instantiate(self, bindings, rename_free=None):
        """The body with each parameter replaced by a copy of ``bindings[param]``.

        ``rename_free`` maps a free name of the template (``math``) to the name
        the generated module binds it under.
        """
        rename_free = rename_free or {}

        class Substitute(S.NodeTransformer):
            def visit_Name(self, node):
                if node.id in bindings:
                    return S.deepcopy(bindings[node.id])
                if node.id in rename_free:
                    return S.name(rename_free[node.id])
                return node

        return Substitute().visit(S.deepcopy(self.body))


class Rule:
    """The partial derivatives of one primitive at one arity."""

    def __init__(self, primitive, partials, label):
        self.primitive = primitive
        self.label = label
        self.partials = [None if p is None else Template(p) for p in partials]

    @property
    def arity(self):
        return len(self.partials)

    def __call__(self, *args):
        """The primitive itself, evaluated (operators through :mod:`operator`)."""
        return OPERATOR_FUNCTIONS.get(self.primitive, self.primitive)(*args)

    def partial_values(self, *args):
        """The partials at ``args`` as numbers (None where not differentiable)."""
        ans = self(*args)
        values = []
        for template in self.partials:
            if template is None:
                values.append(None)
                continue
            bindings = dict(zip(template.params, [S.const(ans)] + [S.const(a) for a in args]))
            expression = S.gast.gast_to_ast(S.gast.Expression(body=template.instantiate(bindings)))
            ast.fix_missing_locations(expression)
            values.append(eval(compile(expression, "<rule>", "eval"), template.globals))
        return values


def label_of(primitive):
    if isinstance(primitive, type):
        return primitive.__name__
    module = getattr(primitive, "__module__", None) or ""
    qualname = getattr(primitive, "__qualname__", None) or repr(primitive)
    return qualname if module in ("builtins", "") else module + "." + qualname


def defpartials(primitive, *partials, label=None):
    """Register ``primitive``'s partial derivatives, one lambda per argument."""
    rule = Rule(primitive, partials, label or label_of(primitive))
    for template in rule.partials:
        if template is not None and len(template.params) != len(partials) + 1:
            raise DerivoError("the partials of {} must each take (ans, *args) with {} "
                              "args".format(rule.label, len(partials)))
    RULES.setdefault(primitive, {})[rule.arity] = rule
    return rule


def nondifferentiable(*primitives):
    """Declare functions whose results carry no derivative (counts, tests, rounding)."""
    NONDIFFERENTIABLE.update(primitives)


def lookup(primitive, arity):
    """The rule for ``primitive`` called with ``arity`` arguments, or None."""
    try:
        return RULES.get(primitive, {}).get(arity)
    except TypeError:  # unhashable callables have no rules
        return None


def is_primitive(obj):
    try:
        return obj in RULES or obj in NONDIFFERENTIABLE
    except TypeError:
        return False


def is_nondifferentiable(obj):
    try:
        return obj in NONDIFFERENTIABLE
    except TypeError:
        return False


# --- finding a lambda's syntax tree --------------------------------------

_MODULE_TREES = {}


def _lambda_tree(fn):
    code = fn.__code__
    if fn.__name__ != "<lambda>":
        raise DerivoError("a derivative template must be a one-line lambda, got {!r}"
                          .format(fn.__qualname__))
    filename = code.co_filename
    if filename not in _MODULE_TREES:
        source = "".join(linecache.getlines(filename)) or inspect.getsource(
            inspect.getmodule(fn))
        _MODULE_TREES[filename] = S.gast.parse(source)
    params = list(code.co_varnames[:code.co_argcount])
    candidates = [
        node for node in S.walk(_MODULE_TREES[filename])
        if isinstance(node, S.gast.Lambda) and node.lineno == code.co_firstlineno
        and [a.id for a in node.args.args] == params]
    if len(candidates) > 1 and hasattr(code, "co_positions"):
        column = min(col for line, _, col, _ in code.co_positions()
                     if line == code.co_firstlineno and col)
        candidates = [node for node in candidates
                      if node.body.col_offset <= column < node.body.end_col_offset]
    if len(candidates) != 1:
        raise DerivoError("{}:{}: cannot find the source of this derivative template; "
                          "put each lambda on its own line".format(
                              filename, code.co_firstlineno))
    return params, candidates[0].body


from . import builtins  # noqa: E402,F401  (registers the builtins and math table)
