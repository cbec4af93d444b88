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

In place of a partial (or a VJP, or a JVP) ``CONSTANT`` marks an argument the
result does not vary with (a count, an axis, a shape, an index, a boolean mask),
or varies with only by steps (np.copysign's sign, np.where's condition): its
derivative is zero.  ``None`` marks an argument derivo has *no rule* for: a
differentiated value reaching it is refused (see
``Analysis._refuse_arguments_without_rule``), and so is one reaching an option
past the templates (``axis=``, ``ord=``) or a ``*args`` of a template.

Each entry also says what the primitive returns, for derivo's memory model
(:mod:`derivo.memory`): ``returns=NEW`` a new array or an immutable value that
shares no memory with the arguments; ``returns=k`` (an int) the argument at
position k or a view of it (a method's object is position 0); ``returns=ARGUMENT``
one of its arguments as it is (``max(a, b)``); ``returns=None``, the default of
every entry but ``defpartials``, that it may be, or hold, anything reachable from
its arguments.  An elementwise ``defpartials`` entry computes a new value and
defaults to NEW.
"""

import ast
import dis
import functools
import inspect
import linecache
import operator
import sys
from typing import Any, Callable, Optional

from .. import syntax as S
from ..errors import DerivoError

#: primitive (a function, an operator's gast class, a Method) -> {arity: Rule}
RULES = {}
#: what a primitive returns, for memory (see the module's docstring)
NEW, ARGUMENT = "new", "argument"
#: primitive without a rule (nondifferentiable, without_rule) -> what it returns
RETURNS = {}
#: functions whose result is never differentiated (comparisons are handled by ssa)
NONDIFFERENTIABLE = set()
WITHOUT_RULE = set()
#: A new object each time a rule is registered or a function declared: a
#: derivative made before checks it on each call and is made again when it changed.
generation = object()


class _Constant:
    def __repr__(self):
        return "CONSTANT"


#: a template's stand-in for an argument the result is constant in (see above)
CONSTANT = _Constant()
OPERATOR_FUNCTIONS = {S.Add: operator.add, S.Sub: operator.sub, S.Mult: operator.mul,
                      S.Div: operator.truediv, S.Pow: operator.pow, S.Mod: operator.mod,
                      S.MatMult: operator.matmul, S.USub: operator.neg, S.UAdd: operator.pos}


class Template:
    """A rule's function of placeholders, pasted into generated code: the body of
    a one-expression lambda, or a call of a ``def`` (whose body stays its own).

    A lambda's syntax tree is read the first time a derivative needs it:
    importing derivo registers a few hundred templates, and parsing them all up
    front took most of the import time.  The names its body reads are its
    closure's (read when the template is used), then its module's.
    """

    def __init__(self, fn):
        if not inspect.isfunction(fn):
            raise DerivoError("a derivative rule must be a lambda or a def, got {!r}"
                              .format(fn))
        self.fn = fn
        code = fn.__code__
        self.params = list(code.co_varnames[:code.co_argcount])
        self.varargs = code.co_varnames[code.co_argcount + code.co_kwonlyargcount] \
            if code.co_flags & inspect.CO_VARARGS else None
        #: options given by keyword only (``np.gradient(f, *varargs, axis=None)``)
        self.keyword_only = list(code.co_varnames[
            code.co_argcount:code.co_argcount + code.co_kwonlyargcount])
        self.globals = _Scope(fn)
        self.optional = len(fn.__defaults__ or ())  # how many trailing params have defaults
        if set(self.keyword_only) - set(fn.__kwdefaults__ or ()):
            raise DerivoError("{}:{}: a derivative template's keyword-only parameters must have "
                              "defaults".format(code.co_filename, code.co_firstlineno))
        if fn.__name__ != "<lambda>" and self.keyword_only:
            raise DerivoError("{}:{}: a def derivative rule takes no keyword-only parameters; "
                              "write it as a lambda".format(code.co_filename,
                                                            code.co_firstlineno))
        if any(type(value) not in S.LITERAL_TYPES
               for value in (fn.__defaults__ or ()) + tuple((fn.__kwdefaults__ or {}).values())):
            raise DerivoError("{}:{}: a derivative template's defaults must be literals (a "
                              "number, a string, None): generated code holds their values"
                              .format(code.co_filename, code.co_firstlineno))
        if fn.__name__ != "<lambda>":
            self._tree = _call_tree(fn, self.params, self.varargs)
        elif not S.is_derivo(fn):
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
        return self._used & (set(self.params) | set(self.keyword_only) | {self.varargs})

    @functools.cached_property
    def free_names(self):
        """The other names the body reads (``math``, ``np``), sorted."""
        return sorted(self._used - set(self.params) - set(self.keyword_only) - {self.varargs})

    @functools.cached_property
    def _used(self):
        return {n.id for n in S.walk(self.body) if isinstance(n, S.Name)}

    def instantiate(self, bindings, rename_free=None):
        """The body with each parameter replaced by a copy of ``bindings[param]``
        (or of its default).

        ``rename_free`` maps a free name of the template (``math``) to the name
        the generated module binds it under.
        """
        substitute = _Substitute(dict(self.defaults, **bindings), rename_free or {})
        return substitute.visit(S.deepcopy(self.body))


class _Substitute(S.NodeTransformer):
    """A copy of each of ``bindings`` (name -> tree) for a read of its name, and
    a read of ``rename_free[name]`` for one of a free name."""

    def __init__(self, bindings, rename_free):
        self.bindings, self.rename_free = bindings, rename_free

    def visit_Name(self, node):
        if node.id in self.bindings:
            return S.deepcopy(self.bindings[node.id])
        if node.id in self.rename_free:
            return S.name(self.rename_free[node.id])
        return node


class _Scope:
    """What a template's free names mean: the cells of its closure, read when
    asked, then its module's globals, then a name for the function itself (a
    ``def`` rule's call reads it)."""

    def __init__(self, fn):
        self.cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        self.module = fn.__globals__
        self.own = {_own_name(fn): fn}

    def get(self, name, default=None):
        if name in self.cells:
            try:
                return self.cells[name].cell_contents
            except ValueError:  # a cell not filled yet
                return default
        return self.module.get(name, self.own.get(name, default))

    def as_dict(self):
        """Every name at once, for ``eval``."""
        return {**self.module, **self.own,
                **{name: self.get(name) for name in self.cells}}


def _own_name(fn):
    return "derivo_rule_" + fn.__name__


def _call_tree(fn, params, varargs):
    """``(body, defaults)`` of the template of a ``def`` rule: a call of it."""
    args = [S.name(p) for p in params] + \
        ([S.gast.Starred(value=S.name(varargs), ctx=S.Load())] if varargs else [])
    defaults = dict(zip(params[len(params) - len(fn.__defaults__ or ()):],
                        (S.const(d) for d in fn.__defaults__ or ())))
    return S.call(S.name(_own_name(fn)), *args), defaults


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
#: the key of reading a container's field, ``p.w`` when no rule is for ``.w``
#: (a dataclass's, a NamedTuple's: see derivo.trees): an item read by name
FIELD = Method("__getattr__")


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

    def __init__(self, primitive, templates, label, style, returns=None):
        self.primitive = primitive
        self.returns = returns  # NEW, ARGUMENT, an argument's position or None
        self.label = label
        self.style = style
        self.jvps = []
        self.templates = [None if t is None or t is CONSTANT else Template(t)
                          for t in templates]
        first = next((t for t in self.templates if t is not None), None)
        self.table = first.fn.__module__ if first else None  # where the rule was written
        lead = 1 if style == "partial" else 2
        self.params = first.params[lead:] if first else []
        self.keyword_only = first.keyword_only if first else []
        self.required = len(self.params) - first.optional if first else 0
        #: the parameters the result is constant in (CONSTANT in their place)
        self.constant = {p for p, t in zip(self.params, templates) if t is CONSTANT}
        for template in self.templates:
            if template is not None and (template.params[lead:] != self.params
                                         or template.keyword_only != self.keyword_only):
                raise DerivoError("the templates of {} must all take ({}*args) with the "
                                  "same args".format(label, "ans, " if lead == 1 else "g, ans, "))
        if style == "partial" and len(self.params) != len(self.templates):
            raise DerivoError("the partials of {} must each take (ans, *args) with {} "
                              "args".format(label, len(self.templates)))

    def templates_for(self, forward):
        """The templates that say which arguments have a rule: the partials or
        VJPs; in forward mode, an argument with a tangent rule only (one whose
        second derivative in reverse mode derivo lacks) has one too."""
        if not forward:
            return self.templates
        return [template if template is not None or i >= len(self.jvps) else self.jvps[i]
                for i, template in enumerate(self.templates)]

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
                and all(k in self.params[nargs:] or k in self.keyword_only for k in keywords))

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
            values.append(eval(compile(expression, "<rule>", "eval"), template.globals.as_dict()))
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


def _registry_changed():
    global generation
    generation = object()


def _register(rule):
    RULES.setdefault(rule.primitive, {})[rule.arity] = rule
    _registry_changed()
    return rule


def defpartials(primitive: Any, *partials: Optional[Callable[..., Any]],
                label: Optional[str] = None, returns: Any = NEW) -> "Rule":
    """Register ``primitive``'s partial derivatives, one lambda of
    ``(ans, *args)`` per argument (CONSTANT for one the result is constant in,
    None for one without a rule: a differentiated value there is refused)::

        derivo.defpartials(softplus, lambda ans, x: 1 / (1 + math.exp(-x)))
    """
    return _register(Rule(primitive, partials, label or label_of(primitive), "partial",
                          returns))


def defvjp(primitive: Any, *vjps: Optional[Callable[..., Any]], label: Optional[str] = None,
           returns: Any = None) -> "Rule":
    """Register ``primitive``'s vector-Jacobian products, one lambda of
    ``(g, ans, *args, **options)`` per positional argument (CONSTANT or None, as
    in :func:`defpartials`); ``g`` is the output's adjoint, the result the argument's::

        derivo.defvjp(rowsum, lambda g, ans, x: np.broadcast_to(g[:, None], x.shape))
    """
    return _register(Rule(primitive, vjps, label or label_of(primitive), "vjp", returns))


def defjvp(primitive: Any, *jvps: Optional[Callable[..., Any]]) -> "Rule":
    """Give the ``"vjp"`` rule of ``primitive`` its Jacobian-vector products, for
    forward mode: one lambda of ``(t, ans, *args, **options)`` per positional
    argument (CONSTANT or None for one not differentiated), where ``t`` is the argument's
    tangent and the result its share of the output's tangent.  Arguments and
    options are bound by name, so a lambda names only those it reads; the rule
    with as many positional arguments gets them (``np.einsum`` has two)::

        derivo.defjvp(rowsum, lambda t, ans, x: t.sum(axis=1))

    A ``"partial"`` rule may get them too, for the arguments whose share is not
    the tangent times the partial (None keeps that product).
    """
    templates = [None if j is None or j is CONSTANT else Template(j) for j in jvps]
    rules = [rule for rule in RULES.get(primitive, {}).values()
             if len(rule.templates) == len(templates)]
    used = set()
    if len(rules) > 1:  # only then read the templates (see Template)
        used = set().union(*[t.uses for t in templates if t is not None]) - {"t", "ans"} - {
            t.varargs for t in templates if t is not None}
        rules = [rule for rule in rules if used <= set(rule.params)]
    if not rules:
        raise DerivoError("defjvp({}): no rule of it (partials or vector-Jacobian) takes {} "
                          "positional argument(s) named as the tangent rules read them "
                          "({})".format(
                              label_of(primitive), len(templates), ", ".join(sorted(used))))
    for rule in rules:
        rule.jvps = templates
    _registry_changed()
    return rules[0]


def primitive(partials: Any = None, vjps: Any = None, jvps: Any = None,
              returns: Any = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator that registers the function it decorates as a primitive with
    these rules (see :func:`defpartials`, :func:`defvjp`, :func:`defjvp`; each a
    function or a tuple of them, one per argument) and what it ``returns`` (see
    the module's docstring); derivo then uses the rules instead of reading the
    function's body.

    >>> @derivo.primitive(partials=lambda ans, x: 1 / (1 + math.exp(-x)))
    ... def softplus(x):
    ...     return math.log1p(math.exp(x))
    """
    def as_tuple(rules):
        return rules if isinstance(rules, tuple) else (rules,)

    if (partials is None) == (vjps is None):
        raise DerivoError("derivo.primitive takes partials= or vjps=, one of them")

    def register(fn):
        if partials is not None:
            defpartials(fn, *as_tuple(partials), **({} if returns is None else
                                                     {"returns": returns}))
        else:
            defvjp(fn, *as_tuple(vjps), returns=returns)
            if jvps is not None:
                defjvp(fn, *as_tuple(jvps))
        return fn
    return register


def nondifferentiable(*primitives: Any, returns: Any = None) -> None:
    """Declare functions whose results carry no derivative (counts, tests,
    rounding): ``derivo.nondifferentiable(my_rounding_function)``."""
    NONDIFFERENTIABLE.update(primitives)
    RETURNS.update(dict.fromkeys(primitives, returns))
    _registry_changed()


def without_rule(*primitives, returns=None):
    """Declare functions derivo evaluates as they are, whose results move with
    their arguments but have no rule here (``np.arange``, ``np.linspace``): a
    differentiated argument is refused."""
    WITHOUT_RULE.update(primitives)
    RETURNS.update(dict.fromkeys(primitives, returns))
    _registry_changed()


def returns(primitive, nargs, keywords=()):
    """What ``primitive`` called so returns (see the module's docstring): NEW,
    ARGUMENT, the position of the argument it is a view of, or None (may be or
    hold anything reachable from its arguments)."""
    rule = lookup(primitive, nargs, keywords)
    if rule is not None:
        return rule.returns
    try:
        return RETURNS.get(primitive)
    except TypeError:  # unhashable
        return None


def load_tables():
    """Register the rules of each library table whose library the program has
    imported (see :func:`lazy_table`): derivo does not import SciPy."""
    if _LAZY_TABLES and "scipy" in sys.modules:
        for module in [m for m in _LAZY_TABLES if m in sys.modules]:
            _LAZY_TABLES.pop(module)()


#: library module (a SciPy submodule) -> the function registering its rules
_LAZY_TABLES = {}


def lazy_table(module, register):
    """Call ``register()`` (which registers the rules of ``module``, a SciPy
    submodule) once the program has imported ``module``: the tables of
    :mod:`derivo.rules.scipy` and :mod:`derivo.integrate`."""
    _LAZY_TABLES[module] = register


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


def record_rule(cls, fields, keys):
    """The rule of building the record class ``cls`` (a dataclass, a NamedTuple:
    see derivo.trees.builds_a_record) from its ``fields``: each field's adjoint is
    the part of the record's adjoint under its key (``keys``: field names, or
    positions for a NamedTuple); a zero adjoint (0.0) stays zero."""
    rule = lookup(cls, len(fields))
    if rule is None:
        rule = Rule(cls, [_record_part(cls, fields, key) for key in keys], label_of(cls), "vjp")
        # (registered without a new generation: a derivative that called cls
        # was refused, so none depends on cls having no rule)
        RULES.setdefault(cls, {})[rule.arity] = rule
    return rule


def _record_part(cls, fields, key):
    name = "{}_{}_vjp".format(cls.__name__, key)
    scope = {"key": key}
    exec("def {}(g, ans, {}):\n    return g if type(g) is float else g[key]\n".format(
        name, ", ".join(fields)), scope)
    scope[name].__module__ = RECORDS  # (the rule's table: see Rule.table)
    return scope[name]


#: The table of the rules of building records (see record_rule), which have no
#: tangent rules: forward mode refuses a record built inside
RECORDS = "derivo.rules.records"


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
    values = fn.__defaults__ or ()  # what the lambda holds, not the text that made it
    defaults = dict(zip(params[len(params) - len(values):], map(S.const, values)))
    defaults.update({name: S.const(value) for name, value in (fn.__kwdefaults__ or {}).items()})
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
from . import linalg  # noqa: E402,F401  (np.linalg and tensor products; scipy.linalg lazily)
from . import fft  # noqa: E402,F401  (np.fft)
from . import tangents  # noqa: E402,F401  (forward-mode rules of the VJP entries)
from . import runtime  # noqa: E402,F401  (rules of derivo.runtime: generated code is differentiable)
from . import scipy  # noqa: E402,F401  (SciPy's tables, registered once SciPy is imported)
