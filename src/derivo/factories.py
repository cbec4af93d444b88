"""Stage 1d: local functions given to a call, and functions a call returns.

A local function that reads the caller's locals, given to a user function
(``euler(lambda y: -k * y, y0)``, lifted to ``partial(lambda_line9, k=k)``),
is given as the lifted function itself, with the locals as arguments of their
own: the call calls a copy of ``euler`` that takes ``f_k`` and passes it where
it calls ``f`` (``f(y, k=f_k)``), provided it only calls ``f``.  The later
stages then see a function given by name (see :mod:`derivo.callees`).


``def make(a): def f(x): return a * x; return f`` makes a function closing over
``a``; ``scale = make(2.0)`` then ``scale(x)`` calls it.  Lifted (see lift),
``make`` ends in ``return partial(f, a=a)``: what ``scale`` holds is ``f`` with
the values ``make`` computed for its free names.  derivo reads that from the
code: ``scale = make(2.0)`` becomes ``scale = make_closure(2.0)``, a copy of
``make`` that returns those values as a tuple, and ``scale(x)`` becomes
``f(x, a=scale[0])``.  The values then flow through the caller as a tuple does,
differentiated like any other.

A derivative made inside (``derivo.grad(f)(x)``, f a global, its options
constants) is made when the function is transformed, and the call calls it:
derivo differentiates through its generated code, as through one made outside.

For a function a call returns (a closure factory), only a name assigned once,
from a call of a user function whose one ``return`` is its last statement and
gives a local function, and read only as the function of calls, is rewritten; anything else is left for the later stages to judge.
"""

import collections
import functools
import types

from . import syntax as S
from .lift import code_key, compile_trees
from .names import identifier


def call_returned_functions(parsed, parse):
    """Rewrite, in place, the closure factories ``parsed``'s function calls (see
    the module's docstring); ``parse`` reads a user function."""
    counts = collections.Counter()  # {name: how many times it is assigned}
    loads = collections.defaultdict(list)  # {name: the Names that read it}
    called, assignments = set(), []  # ids of the called expressions; each ``name = call()``
    for node in S.walk(parsed.tree):
        if isinstance(node, S.Name):
            if isinstance(node.ctx, S.Load):
                loads[node.id].append(node)
            else:
                counts[node.id] += 1
        elif isinstance(node, S.Call):
            called.add(id(node.func))
        elif isinstance(node, S.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], S.Name) and isinstance(node.value, S.Call):
            assignments.append(node)
    for stmt in assignments:
        name = stmt.targets[0].id
        uses = loads[name]
        if counts[name] != 1 or not uses or any(id(n) not in called for n in uses):
            continue
        made = _closure_maker(parsed, stmt.value, parse)
        if made is None:
            continue
        maker, function, keys = made
        stmt.value.func = S.copy_location(S.name(parsed.hold(maker.__name__, maker)),
                                          stmt.value.func)
        held = parsed.hold(identifier(function.__name__), function)
        for call in S.walk(parsed.tree):
            if isinstance(call, S.Call) and isinstance(call.func, S.Name) and call.func.id == name:
                call.keywords += [S.gast.keyword(arg=key, value=S.copy_location(
                    S.subscript(S.name(name), S.const(i)), call)) for i, key in enumerate(keys)]
                call.func = S.copy_location(S.name(held), call.func)
    return parsed


#: derivo's functions that make a derivative of a function: made at transformation
_MAKERS = ("grad", "value_and_grad", "tangent", "elementwise_grad")


def make_inner_derivatives(parsed):
    """Make each call ``derivo.grad(f, wrt=0)(x)`` of ``parsed``'s function, whose
    function and options name no local, a call of the derivative it makes."""
    for call in [n for n in S.walk(parsed.tree) if isinstance(n, S.Call)]:
        maker = call.func
        if not isinstance(maker, S.Call):
            continue
        made_by = parsed.resolve_callee(maker)
        if not (S.is_derivo(made_by) and getattr(made_by, "__name__", None) in _MAKERS):
            continue
        args = [_known(parsed, a) for a in maker.args]
        keywords = {k.arg: _known(parsed, k.value) for k in maker.keywords}
        if any(v is _UNKNOWN for v in args) or None in keywords or \
                any(v is _UNKNOWN for v in keywords.values()):
            continue
        try:
            made = made_by(*args, **keywords)
        except Exception:  # (refused: the call is refused as one derivo cannot read)
            continue
        name = parsed.hold(identifier(getattr(made, "__name__", "derivative")), made)
        call.func = S.copy_location(S.name(name), maker)
    return parsed


_UNKNOWN = object()


def _known(parsed, node):
    """The value of a constant, or of what a free name (or an attribute of one)
    refers to, if it is a function or a constant; _UNKNOWN for anything else."""
    if isinstance(node, S.Constant):
        return node.value
    if isinstance(node, (S.Name, S.Attribute)):
        value = parsed.resolve_expression(node)
        if callable(value) or type(value) in S.LITERAL_TYPES or \
                isinstance(value, tuple) and all(type(v) in S.LITERAL_TYPES for v in value):
            return value
    return _UNKNOWN


def pass_closed_over_locals(parsed, parse):
    """Rewrite, in place, each call of ``parsed``'s function that gives a user
    function a partial of a lifted local function (see the module's docstring)."""
    for call in [n for n in S.walk(parsed.tree) if isinstance(n, S.Call)]:
        if any(isinstance(a, S.Starred) for a in call.args) or \
                any(k.arg is None for k in call.keywords):
            continue
        function = parsed.resolve_callee(call)
        if not isinstance(function, types.FunctionType) or S.is_derivo(function) or \
                (getattr(function, "__module__", None) or "").startswith(("numpy", "scipy")):
            continue
        code = function.__code__
        positional = code.co_varnames[:code.co_argcount]
        given = {**dict(zip(positional, call.args)), **{k.arg: k.value for k in call.keywords}}
        closed = {name: {k.arg: k.value for k in value.keywords}
                  for name, value in given.items() if _a_closed_over_local(parsed, value)}
        if not closed:
            continue
        try:
            callee = parse(function)
        except Exception:  # (not a function derivo reads: later stages say why)
            continue
        made = _taking_closed_over(callee, closed) if all(
            _only_called(callee.tree, name) for name in closed) else None
        if made is not None:
            _give_closed_over(call, positional, closed)
            call.func = S.copy_location(S.name(parsed.hold(made.__name__, made)), call.func)
    return parsed


def _a_closed_over_local(parsed, node):
    """Whether ``node`` is ``partial(lifted, k=k, ...)`` of a lifted local function."""
    return isinstance(node, S.Call) and isinstance(node.func, S.Name) and \
        parsed.closure.get(node.func.id) is functools.partial and len(node.args) == 1 and \
        isinstance(node.args[0], S.Name) and node.keywords and \
        all(k.arg is not None for k in node.keywords) and \
        hasattr(parsed.closure.get(node.args[0].id), "derivo_lifted")


def _only_called(tree, name):
    """Whether ``tree`` reads ``name`` only as the function of calls."""
    called = {id(n.func) for n in S.walk(tree) if isinstance(n, S.Call)}
    return all(id(n) in called for n in S.walk(tree)
               if isinstance(n, S.Name) and n.id == name and isinstance(n.ctx, S.Load))


def _extra_name(parameter, local):
    return "{}_{}".format(parameter, local)


def _taking_closed_over(callee, closed):
    """A copy of the function ``callee`` parses to that takes, for each parameter
    of ``closed`` ({parameter: {local: expression}}), the locals its function reads
    as keyword-only parameters, and passes them where it calls that function;
    None when those parameters' names are taken."""
    tree = callee.tree
    extra = [_extra_name(name, local) for name, keywords in closed.items() for local in keywords]
    taken = {n.id for n in S.walk(tree) if isinstance(n, S.Name)} | set(callee.globals)
    if set(extra) & taken:
        return None  # (a name it uses already: left for the later stages)
    tree.args.kwonlyargs += [S.param(n) for n in extra]
    tree.args.kw_defaults += [None] * len(extra)
    for node in S.walk(tree):
        if isinstance(node, S.Call) and isinstance(node.func, S.Name) and node.func.id in closed:
            node.keywords += [S.gast.keyword(arg=local, value=S.copy_location(
                S.name(_extra_name(node.func.id, local)), node)) for local in closed[node.func.id]]
    function = callee.func
    tree.name = identifier(function.__name__)
    made = compile_trees(callee, [tree], {})[tree.name]
    made.derivo_key = (code_key(function), tuple(extra))
    return made


def _give_closed_over(call, positional, closed):
    """``call`` gives the lifted functions in place of their partials, and the
    locals they read as keywords (see :func:`_taking_closed_over`)."""
    for position, argument in enumerate(call.args):
        if position < len(positional) and positional[position] in closed:
            call.args[position] = argument.args[0]
    for keyword in call.keywords:
        if keyword.arg in closed:
            keyword.value = keyword.value.args[0]
    call.keywords += [S.gast.keyword(arg=_extra_name(name, local), value=value)
                      for name, keywords in closed.items() for local, value in keywords.items()]


def _closure_maker(parsed, call, parse):
    """(a copy of the factory ``call`` calls returning the values of the free names
    of the function it returns, that function, those names) or None."""
    factory = parsed.resolve_callee(call)
    if not isinstance(factory, types.FunctionType) or S.is_derivo(factory):
        return None
    try:
        inner = parse(factory)
    except Exception:  # (not a function derivo reads: later stages say why)
        return None
    body = inner.tree.body
    if sum(isinstance(n, S.Return) for n in S.walk(inner.tree)) != 1 or \
            not isinstance(body[-1], S.Return) or body[-1].value is None:
        return None
    returned = body[-1].value
    keys, values = [], []
    if isinstance(returned, S.Call) and isinstance(returned.func, S.Name) and \
            inner.closure.get(returned.func.id) is functools.partial and \
            len(returned.args) == 1 and all(k.arg is not None for k in returned.keywords):
        keys = [k.arg for k in returned.keywords]
        values = [k.value for k in returned.keywords]
        returned = returned.args[0]
    if not isinstance(returned, S.Name) or returned.id not in inner.closure or \
            not hasattr(inner.closure[returned.id], "derivo_lifted"):
        return None
    function = inner.closure[returned.id]
    body[-1] = S.copy_location(S.return_(S.tuple_(values)), body[-1])
    inner.tree.name = identifier(factory.__name__ + "_closure")
    maker = compile_trees(inner, [inner.tree], {})[inner.tree.name]
    return maker, function, keys
