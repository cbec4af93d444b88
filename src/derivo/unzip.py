"""``zip(*rows)`` and ``f(*items)`` of values the transformation cannot count,
rewritten before the statement form is made into what it reads item by item.

What ``*`` unpacks is counted by what receives it: the names of a tuple target
(``ws, bs = zip(*params)``), of a loop's target (``for m, c in zip(*parts)``), or
the parameters of the user function called (``layer(*params, x)``).  Each item is
then an index or a name, whose adjoint reaches the value it was read from, and
the gradient of a list of pairs is again a list of pairs.  Where nothing counts
the items, the call is left as written (and refused if a differentiated value
flows into it).
"""

import inspect

from . import syntax as S
from .memory import user_function


def unzip_assignments(block, namer, parsed):
    """``a, b = zip(*rows)`` becomes ``a, b = tuple(row[0] for row in rows),
    tuple(row[1] for row in rows)``: the columns of a list of rows, each a tuple as
    zip makes it (``rows`` named first unless it is a name).  Then ``f(*items)``
    in any statement of ``block`` whose callee's parameters count the items (see
    :func:`spread_calls`)."""
    index = 0
    while index < len(block):
        stmt = block[index]
        for nested in ("body", "orelse"):
            if isinstance(getattr(stmt, nested, None), list):
                unzip_assignments(getattr(stmt, nested), namer, parsed)
        before = spread_calls(stmt, namer, parsed)
        rows = _unzipped(stmt.value, parsed) if isinstance(stmt, S.Assign) and \
            len(stmt.targets) == 1 and _width(stmt.targets[0]) else None
        if rows is not None:
            if not isinstance(rows, S.Name):
                named = namer.fresh("rows")
                before.append(S.copy_location(S.assign(named, rows), stmt))
                rows = S.name(named)
            row = namer.fresh("row")
            stmt.value = S.copy_location(S.tuple_([
                S.call(S.name("tuple"), S.gast.GeneratorExp(
                    elt=S.subscript(S.name(row), S.const(k)),
                    generators=[S.gast.comprehension(target=S.store(row), iter=S.deepcopy(rows),
                                                     ifs=[], is_async=0)]))
                for k in range(_width(stmt.targets[0]))]), stmt.value)
            for node in S.walk(stmt.value):
                S.copy_location(node, stmt)
        block[index:index] = before
        index += len(before) + 1


def unzip_loops(block, namer, parsed):
    """``for a, b in zip(*parts)`` becomes ``as_, bs = parts`` before the loop and
    ``for a, b in zip(as_, bs)``: the target's names count the parts, which the
    assignment checks as the loop's first trip would."""
    for inner in list(S.blocks(block)) + [block]:
        index = 0
        while index < len(inner):
            loop = inner[index]
            parts = _unzipped(loop.iter, parsed) if isinstance(loop, S.For) else None
            width = _width(loop.target) if parts is not None else 0
            if not width:
                index += 1
                continue
            names = [namer.fresh(t.id + "s" if isinstance(t, S.Name) else "column")
                     for t in loop.target.elts]
            split = S.copy_location(S.assign(S.tuple_([S.store(n) for n in names], True),
                                             parts), loop)
            loop.iter = S.copy_location(S.call(S.name("zip"), *map(S.name, names)), loop.iter)
            inner.insert(index, split)
            index += 2


def spread_calls(stmt, namer, parsed):
    """The statements that name the items of each ``f(x, *items)`` ``stmt``
    evaluates first (its value, a test, a loop's iterable), for a user function
    ``f`` whose parameters count them (none with a default left to the items, no
    ``*args``): ``w, b = items`` before ``f(x, w, b)``, the names after its
    parameters.  Only items that are a name or a call the whole value is
    (``f(*unpack(p))``) move, so nothing evaluates out of its order."""
    field = {S.Assign: "value", S.Return: "value", S.Expr: "value"}.get(type(stmt))
    value = getattr(stmt, field) if field else None
    before = []
    for call in [n for n in S.walk(value) if isinstance(n, S.Call)] if value else []:
        starred = [a for a in call.args if isinstance(a, S.Starred)]
        if len(starred) != 1 or not (isinstance(starred[0].value, S.Name) or call is value):
            continue
        names = _counted_by(call, parsed)
        if names is None:
            continue
        names = [namer.fresh(n) for n in names]
        before.append(S.copy_location(S.assign(
            S.tuple_([S.store(n) for n in names], True), starred[0].value), stmt))
        at = call.args.index(starred[0])
        call.args[at:at + 1] = [S.copy_location(S.name(n), starred[0]) for n in names]
    return before


def _counted_by(call, parsed):
    """The names of the parameters the one ``*items`` of ``call`` fills, when its
    callee is a user function whose signature says how many: no ``*args``, and
    each positional parameter either without a default or, at the end, given by
    a keyword.  None otherwise."""
    function, given = user_function(parsed.resolve_callee(call))
    if function is None or any(k.arg is None for k in call.keywords):
        return None
    params = list(inspect.signature(function).parameters.values())[given:]
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    keywords = {k.arg for k in call.keywords}
    slots = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    by_position = [p for p in slots if p.name not in keywords]
    count = len(by_position) - (len(call.args) - 1)
    if slots[:len(by_position)] != by_position or count < 0 or \
            any(p.default is not p.empty for p in by_position):
        return None
    at = [isinstance(a, S.Starred) for a in call.args].index(True)
    return [p.name for p in by_position[at:at + count]]


def _unzipped(node, parsed):
    """What ``zip(*rows)`` unpacks, of Python's zip with that one argument; else None."""
    if isinstance(node, S.Call) and isinstance(node.func, S.Name) and \
            parsed.resolve(node.func.id) is zip and len(node.args) == 1 and \
            isinstance(node.args[0], S.Starred) and not node.keywords:
        return node.args[0].value
    return None


def _width(target):
    """How many names a tuple or list target of names or nested targets takes; 0
    for a single name, or a target with ``*rest``."""
    if not isinstance(target, (S.Tuple, S.List)) or \
            any(isinstance(t, S.Starred) for t in target.elts):
        return 0
    return len(target.elts)
