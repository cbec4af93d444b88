"""Stage 1c: a ``with`` block becomes the calls it makes around its body.

``with np.errstate(divide="ignore"): y = np.log(x)`` runs its body between the
manager's ``__enter__`` and ``__exit__``; derivo differentiates the body, and
the manager (``np.errstate``, ``warnings.catch_warnings()``, a timer, a lock)
is code run for its effect, which no differentiated value reaches::

    errstate = np.errstate(divide="ignore")
    errstate.__enter__()
    y = np.log(x)
    errstate.__exit__(None, None, None)

The primal sweep runs the body inside the manager; the adjoint sweep runs
after it has exited.  A differentiated function that raises stops, so a
manager's handling of an exception (``contextlib.suppress``) never comes into
play.  A body that leaves the block early (``break``, ``continue``, a
``return`` that is not its last statement) is refused: ``__exit__`` would be
skipped.
"""

from . import syntax as S
from .errors import UnsupportedSyntax
from .names import Namer, names_in


def lower_with_blocks(parsed):
    """Replace, in place, every ``with`` block of ``parsed``'s tree by the calls
    it makes around its body."""
    if not any(isinstance(n, S.gast.With) for n in S.walk(parsed.tree.body)):
        return parsed
    namer = Namer(names_in(parsed.tree) | set(parsed.globals) | set(parsed.closure))
    _lower_block(parsed, parsed.tree.body, namer)
    parsed.__dict__.pop("local_names", None)  # (a cached property of the tree)
    return parsed


def _lower_block(parsed, block, namer):
    index = 0
    while index < len(block):
        stmt = block[index]
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                _lower_block(parsed, inner, namer)
        if isinstance(stmt, S.gast.With):
            lowered = _lowered(parsed, stmt, namer)
            block[index:index + 1] = lowered
            index += len(lowered)
        else:
            index += 1


def _lowered(parsed, stmt, namer):
    body = list(stmt.body)
    _refuse_early_exits(parsed, stmt, body)
    returned = body.pop() if isinstance(body[-1], S.Return) else None
    before, after = [], []
    for item in stmt.items:
        manager = S.copy_location(S.store(namer.fresh(_manager_name(item.context_expr))),
                                  item.context_expr)
        before.append(_located(S.assign(manager, item.context_expr), item.context_expr))
        enter = S.call(S.attribute(S.name(manager.id), "__enter__"))
        if item.optional_vars is None:
            before.append(_located(S.gast.Expr(value=enter), item.context_expr))
        else:
            before.append(_located(S.assign(item.optional_vars, enter), item.context_expr))
        leave = S.call(S.attribute(S.name(manager.id), "__exit__"),
                       S.const(None), S.const(None), S.const(None))
        after.insert(0, _located(S.gast.Expr(value=leave), stmt))
    if returned is None:
        return before + body + after
    result = namer.fresh("result")
    kept = _located(S.assign(result, returned.value), returned)
    return before + body + [kept] + after + [_located(S.return_(S.name(result)), returned)]


def _refuse_early_exits(parsed, stmt, body):
    """Refuse a jump out of the block before its end: it would skip ``__exit__``."""
    loops = [n for n in S.walk(body) if isinstance(n, (S.For, S.While))]
    inside = {id(n) for loop in loops for n in S.walk(loop.body)}
    for node in S.walk(body):
        early = isinstance(node, S.Return) and node is not body[-1] or \
            isinstance(node, (S.Break, S.Continue)) and id(node) not in inside
        if early:
            raise parsed.error(
                UnsupportedSyntax, node,
                "cannot differentiate a 'with' block left early: its manager's __exit__ "
                "would not run; set a result and leave the block at its end", "with")
    if any(isinstance(n, (S.FunctionDef, S.gast.Lambda)) for n in S.walk(stmt.items)):
        raise parsed.error(UnsupportedSyntax, stmt, "cannot differentiate a 'with' whose "
                           "manager defines a function", "with")


def _manager_name(expr):
    """A name for the manager ``expr`` makes: ``errstate`` for ``np.errstate(...)``."""
    func = expr.func if isinstance(expr, S.Call) else expr
    ident = func.attr if isinstance(func, S.Attribute) else getattr(func, "id", "context")
    return ident if ident.endswith("context") else ident + "_context"


def _located(stmt, node):
    for child in S.walk(stmt):
        S.copy_location(child, node)
    return stmt
