"""Stage 1a: a ``functools.partial`` made inside the function and only called.

``h = partial(fn, a, k=c)`` followed by calls ``h(x)`` becomes ``h = fn`` (or
nothing, when ``fn`` is a name the function never assigns) and calls
``fn(a, x, k=c)``: the partial's arguments bound at each call, which derivo
differentiates like any call of ``fn`` (a user function, a lambda, a local
``def``, a NumPy function), in every mode.  A partial takes its arguments when
it is made: each one that is neither a constant nor a name the function never
assigns is first copied to a name of its own where the partial was made.

A partial read otherwise (given to a function, returned, stored) is left as
written: the call that receives it says what derivo can do with it.
"""

import functools

from . import syntax as S
from .names import Namer, names_in


def bind_partials(parsed):
    """Rewrite, in place, the partials of ``parsed`` (a :class:`derivo.parse.Parsed`)
    that are only called, a partial of a partial too; give back ``parsed``."""
    namer = None
    while True:
        stores = S.store_counts(parsed.tree)
        found = next(((block, stmt, calls) for block in _blocks(parsed.tree) for stmt in block
                      if _made_partial(stmt, parsed) and stores[stmt.targets[0].id] == 1
                      for calls in [_calls_of(parsed.tree, stmt.targets[0].id)]
                      if calls is not None), None)
        if found is None:
            break
        namer = namer or Namer(names_in(parsed.tree) | set(parsed.globals) |
                               set(parsed.closure))
        _bind(*found, namer, S.stored_names(parsed.tree))
        parsed.__dict__.pop("local_names", None)  # (a cached property of the tree)
    return parsed


def _bind(block, stmt, calls, namer, assigned):
    """Make ``calls`` of the partial ``stmt`` makes calls of what it wraps, with
    its arguments, and ``stmt`` what names them (see the module's docstring)."""
    name, made = stmt.targets[0].id, stmt.value
    before, bound = _bound_arguments(made, name, namer, assigned)
    fn = made.args[0]
    if _named_for_good(fn, assigned):
        callee = fn  # (each call names it: no name needed for it)
    else:  # (a partial of a partial is bound in turn)
        callee = S.copy_location(S.name(name), fn)
        before.append(S.copy_location(S.assign(name, fn), stmt))
    for call in calls:
        given = {k.arg for k in call.keywords}
        call.func = S.deepcopy(callee)
        call.args = [S.deepcopy(a) for a in bound.args] + call.args
        call.keywords = [S.deepcopy(k) for k in bound.keywords
                         if k.arg not in given] + call.keywords  # (the call's win)
    index = next(i for i, s in enumerate(block) if s is stmt)
    block[index:index + 1] = before or [S.copy_location(S.Pass(), stmt)]


def _blocks(tree):
    """Every statement list of ``tree``, nested ones included."""
    for node in S.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            value = getattr(node, field, None)
            if isinstance(value, list) and value and isinstance(value[0], S.gast.stmt):
                yield value


def _made_partial(stmt, parsed):
    """Whether ``stmt`` is ``name = functools.partial(fn, ...)``, nothing unpacked."""
    if not (isinstance(stmt, S.Assign) and len(stmt.targets) == 1 and
            isinstance(stmt.targets[0], S.Name) and isinstance(stmt.value, S.Call)):
        return False
    made = stmt.value
    return len(made.args) >= 1 and not any(isinstance(a, S.Starred) for a in made.args) and \
        all(k.arg is not None for k in made.keywords) and \
        parsed.resolve_expression(made.func) is functools.partial


def _calls_of(tree, name):
    """The calls of ``name`` in ``tree``, or None when it is read another way (a
    value given, returned) or a call unpacks its arguments."""
    calls = [n for n in S.walk(tree) if isinstance(n, S.Call) and
             isinstance(n.func, S.Name) and n.func.id == name]
    reads = [n for n in S.walk(tree) if isinstance(n, S.Name) and n.id == name and
             isinstance(n.ctx, S.Load)]
    if len(reads) != len(calls) or any(
            isinstance(a, S.Starred) for c in calls for a in c.args) or any(
            k.arg is None for c in calls for k in c.keywords):
        return None
    return calls


def _bound_arguments(made, name, namer, assigned):
    """(statements, a call holding the arguments the partial gives): an argument
    the function may change after the partial took it is copied first."""
    before = []

    def taken(value, hint):
        if isinstance(value, S.Constant) or \
                isinstance(value, S.Name) and value.id not in assigned:
            return value
        copy = namer.fresh("{}_{}".format(name, hint))
        before.append(S.copy_location(S.assign(copy, value), value))
        return S.copy_location(S.name(copy), value)

    args = [taken(a, "arg{}".format(i)) for i, a in enumerate(made.args[1:])]
    keywords = [S.copy_location(S.gast.keyword(arg=k.arg, value=taken(k.value, k.arg)), k)
                for k in made.keywords]
    return before, S.call(made.func, *args, keywords=keywords)


def _named_for_good(fn, assigned):
    """Whether ``fn`` is a name, or attributes of one, that holds one thing
    throughout: never assigned (a local ``def`` is made once: see lift)."""
    while isinstance(fn, S.Attribute):
        fn = fn.value
    return isinstance(fn, S.Name) and fn.id not in assigned
