"""Derivative rules: one declarative table per library.

A rule gives, for each argument of a primitive, its partial derivative as a
one-line lambda of ``(ans, *args)``; ``ans`` is the primitive's result.  The
lambda is a *template*: its source is parsed once, when a derivative first needs
it, and its parameter names are replaced by expressions when derivo pastes it
into generated code.  Reverse mode multiplies the output adjoint by the partial;
forward mode sums partials times tangents; both come from the same entry, so
they cannot disagree.

Tables register themselves when imported (see ``builtins.py``)::

    defpartials(math.sin, lambda ans, x: math.cos(x))
    defpartials(math.atan2, lambda ans, y, x: x / (x * x + y * y),
                            lambda ans, y, x: -y / (x * x + y * y))
    nondifferentiable(math.floor, math.factorial)

``None`` in place of a partial marks an argument derivo does not
differentiate through (an integer count, a flag).
"""

import ast
import dis
import functools
import inspect
import linecache
import operator
import sys

from .. import syntax as S
from ..errors import DerivoError

#: primitive (a function, an operator's gast class, a Method) -> {arity: Rule}
RULES = {}
#: functions whose result is never differentiated (comparisons are handled by ssa)
NONDIFFERENTIABLE = set()
WITHOUT_RULE = set()
OPERATOR_FUNCTIONS = {S.Add: operator.add, S.Sub: operator.sub, S.Mult: operator.mul,
                      S.Div: operator.truediv, S.Pow: operator.pow, S.Mod: operator.mod,
                      S.MatMult: operator.matmul, S.USub: operator.neg, S.UAdd: operator.pos}


class Template:
    """A one-expression lambda whose parameters are placeholders.

    Its syntax tree is read the first time a derivative needs it: importing
    derivo registers a few hundred templates, and parsing them all up front
    took most of the import time.
    """

    def __init__(self, fn):
        if fn.__name__ != "<lambda>":
            raise DerivoError("a derivative template must be a one-line lambda, got {!r}"
                              .format(fn.__qualname__))
        self.fn = fn
        code = fn.__code__
        self.params = list(code.co_varnames[:code.co_argcount])
        self.varargs = code.co_varnames[code.co_argcount + code.co_kwonlyargcount] \
            if code.co_flags & inspect.CO_VARARGS else None
        self.globals = fn.__globals__
        self.optional = len(fn.__defaults__ or ())  # how many trailing params have defaults
        if not S.is_derivo(fn):
            # A rule of the user's is read now, so that registering a template
            # derivo cannot read fails where it is written.
            _ = self._tree

    @property
    def body(self):
        return self._tree[0]

    @property
    def defaults(self):
        """{parameter: syntax tree of its default}"""
        return self._tree[1]

    @functools.cached_property
    def _tree(self):
        return _lambda_tree(self.fn)

    @functools.cached_property
    def uses(self):
        """The placeholders the body reads."""
        return self._used & (set(self.params) | {self.varargs})

    @functools.cached_property
    def free_names(self):
        """The other names the body reads (``math``, ``np``), sorted."""
        return sorted(self._used - set(self.params) - {self.varargs})

    @functools.cached_property
    def _used(self):
        return {n.id for n in S.walk(self.body) if isinstance(n, S.Name)}

    def instantiate(self, bindings, rename_free=None):
        """The body with each parameter replaced by a copy of ``bindings[param]``
        (or of its default).

        ``rename_free`` maps a free name of the template (``math``) to the name
        the generated module binds it under.
        """
        rename_free = rename_free or {}
        bindings = dict(self.defaults, **bindings)

        class Substitute(S.NodeTransformer):
            def visit_Name(self, node):
                if node.id in bindings:
                    return S.deepcopy(bindings[node.id])
                if node.id in rename_free:
                    return S.name(rename_free[node.id])
                return node

        return Substitute().visit(S.deepcopy(self.body))


class Method:
    """The key of a rule for a method called on a value: ``x.sum(axis=0)``."""

    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return isinstance(other, Method) and other.name == self.name

    def __hash__(self):
        return hash(("method", self.name))

    def __repr__(self):
        return "." + self.name


#: the key of indexing, ``x[i]``: a method call in all but syntax
GETITEM = Method("__getitem__")


class Rule:
    """How to differentiate one primitive: a template per positional argument.

    ``style`` is ``"partial"`` (templates of ``(ans, *args)`` giving the partial
    derivative, multiplied by the output adjoint; elementwise, so with several
    array arguments the result is reduced to each argument's shape) or
    ``"vjp"`` (templates of ``(g, ans, *args, **options)`` giving the
    argument's adjoint contribution directly).  A ``"vjp"`` rule differentiates
    in forward mode through its ``jvps``: templates of ``(t, ans, *args,
    **options)`` giving the output tangent's share of an argument whose
    tangent is ``t`` (see :func:`defjvp`).
    """

    def __init__(self, primitive, templates, label, style):
        self.primitive = primitive
        self.label = label
        self.style = style
        self.jvps = []
        self.templates = [None if t is None else Template(t) for t in templates]
        first = next((t for t in self.templates if t is not None), None)
        self.table = first.fn.__module__ if first else None  # where the rule was written
        lead = 1 if style == "partial" else 2
        self.params = first.params[lead:] if first else []
        self.required = len(self.params) - first.optional if first else 0
        for template in self.templates:
            if template is not None and template.params[lead:] != self.params:
                raise DerivoError("the templates of {} must all take ({}*args) with the "
                                  "same args".format(label, "ans, " if lead == 1 else "g, ans, "))
        if style == "partial" and len(self.params) != len(self.templates):
            raise DerivoError("the partials of {} must each take (ans, *args) with {} "
                              "args".format(label, len(self.templates)))

    @property
    def arity(self):
        return len(self.params)

    @property
    def broadcasts(self):
        """Whether arguments may broadcast against each other (elementwise rules)."""
        return self.style == "partial" and self.arity > 1

    def accepts(self, nargs, keywords=()):
        varargs = any(t is not None and t.varargs for t in self.templates)
        given = set(self.params[:nargs]) | set(keywords)
        return (all(p in given for p in self.params[:self.required])
                and (varargs or nargs <= len(self.params))
                and all(k in self.params[nargs:] for k in keywords))

    def __call__(self, *args):
        """The primitive itself, evaluated (operators through :mod:`operator`)."""
        return OPERATOR_FUNCTIONS.get(self.primitive, self.primitive)(*args)

    def partial_values(self, *args):
        """The partials at ``args`` as numbers (None where not differentiable)."""
        ans = self(*args)
        values = []
        for template in self.templates:
            if template is None:
                values.append(None)
                continue
            bindings = dict(zip(template.params, [S.const(ans)] + [S.const(a) for a in args]))
            expression = S.gast.gast_to_ast(S.gast.Expression(body=template.instantiate(bindings)))
            ast.fix_missing_locations(expression)
            values.append(eval(compile(expression, "<rule>", "eval"), template.globals))
        return values


def label_of(primitive):
    if isinstance(primitive, (type, Method)):
        return getattr(primitive, "__name__", repr(primitive))
    module = getattr(primitive, "__module__", None) or ""
    qualname = getattr(primitive, "__qualname__", None) or getattr(primitive, "__name__", None) \
        or repr(primitive)
    if module.startswith("numpy"):
        module = "np" + {"numpy.linalg": ".linalg"}.get(module, "")
    return qualname if module in ("builtins", "") else module + "." + qualname


def _register(rule):
    RULES.setdefault(rule.primitive, {})[rule.arity] = rule
    return rule


def defpartials(primitive, *partials, label=None):
    """Register ``primitive``'s partial derivatives, one lambda of
    ``(ans, *args)`` per argument (None for an argument not differentiated)."""
    return _register(Rule(primitive, partials, label or label_of(primitive), "partial"))


def defvjp(primitive, *vjps, label=None):
    """Register ``primitive``'s vector-Jacobian products, one lambda of
    ``(g, ans, *args, **options)`` per positional argument (None for one not
    differentiated); ``g`` is the output's adjoint, the result the argument's."""
    return _register(Rule(primitive, vjps, label or label_of(primitive), "vjp"))


def defjvp(primitive, *jvps):
    """Give the ``"vjp"`` rule of ``primitive`` its Jacobian-vector products, for
    forward mode: one lambda of ``(t, ans, *args, **options)`` per positional
    argument (None for one not differentiated), where ``t`` is the argument's
    tangent and the result its share of the output's tangent.  Arguments and
    options are bound by name, so a lambda names only those it reads; the rule
    with as many positional arguments gets them (``np.einsum`` has two)."""
    templates = [None if j is None else Template(j) for j in jvps]
    rules = [rule for rule in RULES.get(primitive, {}).values()
             if rule.style == "vjp" and len(rule.templates) == len(templates)]
    used = set()
    if len(rules) > 1:  # only then read the templates (see Template)
        used = set().union(*[t.uses for t in templates if t is not None]) - {"t", "ans"} - {
            t.varargs for t in templates if t is not None}
        rules = [rule for rule in rules if used <= set(rule.params)]
    if not rules:
        raise DerivoError("defjvp({}): no vector-Jacobian rule of it takes {} positional "
                          "argument(s) named as the tangent rules read them ({})".format(
                              label_of(primitive), len(templates), ", ".join(sorted(used))))
    for rule in rules:
        rule.jvps = templates
    return rules[0]


def nondifferentiable(*primitives):
    """Declare functions whose results carry no derivative (counts, tests, rounding)."""
    NONDIFFERENTIABLE.update(primitives)


def without_rule(*primitives):
    """Declare functions derivo evaluates as they are, whose results move with
    their arguments but have no rule here (``np.arange``, ``np.linspace``): a
    differentiated argument is refused."""
    WITHOUT_RULE.update(primitives)


def load_tables():
    """Register the rules of each library table whose library the program has
    imported (see :mod:`derivo.rules.scipy`): derivo does not import SciPy."""
    if _UNLOADED_TABLES and "scipy" in sys.modules:
        from . import scipy as table
        for module in [m for m in _UNLOADED_TABLES if m in sys.modules]:
            _UNLOADED_TABLES.discard(module)
            table.TABLES[module]()


#: the submodules of :mod:`derivo.rules.scipy` not registered yet
_UNLOADED_TABLES = {"scipy.special", "scipy.linalg", "scipy.stats"}


def table():
    """The registered primitives by group, ``{group: sorted labels}``: one group
    per rule table (``numpy``, ``builtins``, ``scipy``...), and the functions
    declared not differentiable or without a rule.  A primitive with rules for
    several arities counts once."""
    load_tables()
    groups = {}
    for by_arity in RULES.values():
        rule = next(iter(by_arity.values()))
        group = (rule.table or "user").rpartition(".")[2]
        groups.setdefault(group, set()).add(rule.label)
    groups["not differentiable"] = {label_of(p) for p in NONDIFFERENTIABLE}
    groups["evaluated, no rule"] = {label_of(p) for p in WITHOUT_RULE}
    return {group: sorted(labels) for group, labels in sorted(groups.items())}


def lookup(primitive, nargs, keywords=()):
    """The rule for ``primitive`` called with ``nargs`` positional arguments and
    these keyword names, or None."""
    load_tables()
    try:
        candidates = RULES.get(primitive, {})
    except TypeError:  # unhashable callables have no rules
        return None
    for arity in sorted(candidates):
        if candidates[arity].accepts(nargs, keywords):
            return candidates[arity]
    return None


def is_primitive(obj):
    load_tables()
    try:
        return obj in RULES or obj in NONDIFFERENTIABLE or obj in WITHOUT_RULE
    except TypeError:
        return False


def is_nondifferentiable(obj):
    load_tables()
    try:
        return obj in NONDIFFERENTIABLE
    except TypeError:
        return False


# --- finding a lambda's syntax tree --------------------------------------

_MODULE_TREES = {}


def _lambda_tree(fn):
    code = fn.__code__
    filename = code.co_filename
    if filename not in _MODULE_TREES:
        # Parse each table once and index its lambdas by line: a table holds dozens.
        source = "".join(linecache.getlines(filename, fn.__globals__))
        if not source:
            raise DerivoError("{}:{}: cannot read the source of this derivative template; "
                              "write it in a file".format(filename, code.co_firstlineno))
        by_line = {}
        for node in ast.walk(ast.parse(source)):  # the C parser; gast only for the winner
            if isinstance(node, ast.Lambda):
                by_line.setdefault(node.lineno, []).append(node)
        _MODULE_TREES[filename] = by_line
    params = list(code.co_varnames[:code.co_argcount])
    candidates = [node for node in _MODULE_TREES[filename].get(code.co_firstlineno, [])
                  if [a.arg for a in node.args.args] == params]
    if len(candidates) > 1:
        # Several on one line (defpartials(S.Add, lambda ans, x, y: 1, lambda ...)):
        # the one that compiles to fn's code.  Column positions would tell them
        # apart on 3.11 only: 3.10 has none, and 3.12 has none for a constant body.
        # Lambdas that compile alike are alike, so the first of them will do.
        candidates = [node for node in candidates if _compiles_to(node, code)][:1]
    if len(candidates) != 1:
        raise DerivoError("{}:{}: cannot find the source of this derivative template; "
                          "put each lambda on its own line".format(
                              filename, code.co_firstlineno))
    lambda_ = S.from_ast(candidates[0])
    defaults = dict(zip(params[len(params) - len(lambda_.args.defaults):],
                        lambda_.args.defaults))
    return lambda_.body, defaults


def _compiles_to(lambda_node, code):
    """Whether the ``ast.Lambda`` ``lambda_node`` compiles to ``code``."""
    expression = ast.fix_missing_locations(ast.Expression(body=lambda_node))
    compiled = next(c for c in compile(expression, code.co_filename, "eval").co_consts
                    if isinstance(c, type(code)))
    return _instructions(compiled) == _instructions(code)


#: Instructions that only say how a call is made, and the name loads whose form
#: depends on how the source was compiled: compiling a module, 3.11 and later
#: read a function of an imported module with LOAD_ATTR, compiling a lambda alone
#: with LOAD_METHOD.
_CALL_FORMS = {"RESUME", "CACHE", "PUSH_NULL", "PRECALL", "CALL", "KW_NAMES",
               "CALL_FUNCTION", "CALL_METHOD"}
_NAME_LOADS = {"LOAD_METHOD": "LOAD_ATTR", "LOAD_NAME": "LOAD_GLOBAL"}


def _instructions(code):
    """``code``'s instructions, as (operation, argument), up to the forms above."""
    return [(_NAME_LOADS.get(i.opname, i.opname), i.argval)
            for i in dis.get_instructions(code) if i.opname not in _CALL_FORMS]


from . import builtins  # noqa: E402,F401  (registers the builtins and math table)
from . import numpy  # noqa: E402,F401  (registers the NumPy table)
from . import tangents  # noqa: E402,F401  (forward-mode rules of the VJP entries)
from . import runtime  # noqa: E402,F401  (rules of derivo.runtime: generated code is differentiable)
