"""Stage 1d: a function a call returns, called later (a closure factory).

``def make(a): def f(x): return a * x; return f`` makes a function closing over
``a``; ``scale = make(2.0)`` then ``scale(x)`` calls it.  Lifted (see lift),
``make`` ends in ``return partial(f, a=a)``: what ``scale`` holds is ``f`` with
the values ``make`` computed for its free names.  derivo reads that from the
code: ``scale = make(2.0)`` becomes ``scale = make_closure(2.0)``, a copy of
``make`` that returns those values as a tuple, and ``scale(x)`` becomes
``f(x, a=scale[0])``.  The values then flow through the caller as a tuple does,
differentiated like any other.

Only a name assigned once, from a call of a user function whose one ``return``
is its last statement and gives a local function, and read only as the function
of calls, is rewritten; anything else is left for the later stages to judge.
"""

import functools
import types

from . import syntax as S
from .lift import compile_trees
from .names import identifier


def call_returned_functions(parsed, parse):
    """Rewrite, in place, the closure factories ``parsed``'s function calls (see
    the module's docstring); ``parse`` reads a user function."""
    counts = S.store_counts(parsed.tree)
    loads = [n for n in S.walk(parsed.tree) if isinstance(n, S.Name) and isinstance(n.ctx, S.Load)]
    called = {id(n.func) for n in S.walk(parsed.tree) if isinstance(n, S.Call)}
    for stmt in list(S.walk(parsed.tree)):
        if not (isinstance(stmt, S.Assign) and len(stmt.targets) == 1 and
                isinstance(stmt.targets[0], S.Name) and isinstance(stmt.value, S.Call)):
            continue
        name = stmt.targets[0].id
        uses = [n for n in loads if n.id == name]
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
