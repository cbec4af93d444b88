"""Stage 1c: a ``with`` block becomes the calls it makes around its body, and a
``try`` a branch on whether its body raises.

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
from .runtime import raised


def lower_with_blocks(parsed):
    """Replace, in place, every ``with`` block of ``parsed``'s tree by the calls
    it makes around its body, and every ``try`` by a branch (see :func:`_branch`)."""
    if not any(isinstance(n, (S.gast.With, S.gast.Try)) for n in S.walk(parsed.tree.body)):
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
        if isinstance(stmt, (S.gast.With, S.gast.Try)):
            lowered = _lowered(parsed, stmt, namer) if isinstance(stmt, S.gast.With) else \
                _branch(parsed, stmt, namer)
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


def _branch(parsed, stmt, namer):
    """``try: BODY except E as e: HANDLER else: ELSE finally: FINALLY`` as a
    branch on the exception the body raises, the path taken recorded like an
    ``if``'s::

        def attempt():
            BODY
            return (names BODY assigns)
        caught = raised(attempt, (E,))
        if caught is None:
            (names BODY assigns) = attempt()
            ELSE
        elif isinstance(caught, E):
            e = caught
            HANDLER
        FINALLY

    ``attempt`` is a local function (see lift): the branch the body returns from
    is differentiated as any call, and the body runs twice (once to tell whether
    it raises), so it may not change anything in place or leave the block.  A
    handler sees the names as they were before the ``try``: it may not read one
    the body assigns."""
    body_names = sorted(_assigned(stmt.body))
    _refuse_unsafe_body(parsed, stmt, body_names)
    if not stmt.handlers:
        return stmt.body + stmt.orelse + stmt.finalbody
    attempt, caught = namer.fresh("attempt"), namer.fresh("caught")
    held = parsed.hold("raised", raised)
    outputs = S.tuple_([S.name(n) for n in body_names])
    definition = S.function(attempt, [], S.deepcopy(stmt.body) + [S.return_(outputs)])
    classes = S.tuple_([h.type if h.type is not None else S.name("Exception")
                        for h in stmt.handlers])
    test = S.assign(caught, S.call(held, S.name(attempt), classes))
    targets = S.tuple_([S.store(n) for n in body_names], store_ctx=True)
    taken = [S.assign(targets, S.call(attempt))] if body_names else []
    branch = [S.if_(S.compare_is_none(caught), taken + stmt.orelse or [S.Pass()],
                    _handlers(stmt.handlers, caught))]
    lowered = [definition, test] + branch + stmt.finalbody
    for new in lowered[:3]:
        for node in S.walk(new):
            if getattr(node, "lineno", None) is None:
                S.copy_location(node, stmt)
    return lowered


def _handlers(handlers, caught):
    """The ``elif isinstance(caught, E): ...`` chain of the handlers."""
    chain = [S.gast.Raise(exc=S.name(caught), cause=None)]  # (raised catches no other)
    for handler in reversed(handlers):
        body = list(handler.body)
        if handler.name is not None:
            body.insert(0, S.copy_location(S.assign(handler.name, S.name(caught)), handler))
        kind = handler.type if handler.type is not None else S.name("Exception")
        test = S.call(S.name("isinstance"), S.name(caught), S.deepcopy(kind))
        chain = [S.copy_location(S.if_(S.copy_location(test, handler), body, chain), handler)]
    return chain


def _assigned(block):
    return {n.id for n in S.walk(block) if isinstance(n, S.Name) and isinstance(n.ctx, S.Store)}


def _refuse_unsafe_body(parsed, stmt, body_names):
    for node in S.walk(stmt.body):
        jumps = isinstance(node, (S.Return, S.Break, S.Continue, S.gast.Raise))
        writes = isinstance(node, (S.Subscript, S.Attribute)) and isinstance(node.ctx, S.Store) \
            or isinstance(node, (S.AugAssign,)) and not isinstance(node.target, S.Name) \
            or isinstance(node, S.Call) and isinstance(node.func, S.Attribute) and \
            node.func.attr in ("append", "extend", "insert", "pop", "update", "sort")
        if jumps or writes:
            raise parsed.error(
                UnsupportedSyntax, node,
                "cannot differentiate this 'try': derivo runs its body once to tell whether "
                "it raises, then again for its values, so the body may not {}; compute the "
                "values in it and act on them after the try".format(
                    "leave the block" if jumps else "change a value in place"), "try")
    for handler in stmt.handlers:
        for node in S.walk(handler.body):
            if isinstance(node, S.Name) and isinstance(node.ctx, S.Load) and \
                    node.id in body_names:
                raise parsed.error(
                    UnsupportedSyntax, node,
                    "cannot differentiate this 'except': it reads {!r}, which the 'try' "
                    "body assigns, and derivo gives a handler the values from before the "
                    "'try'; use another name in the body".format(node.id), "try")
