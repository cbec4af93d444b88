"""Calls of a function looked up by a key the code computes, made branches.

``ACTIVATIONS[name](x)`` with ``name`` a loop's variable (``for (w, b), name in
zip(params, names)``) calls another function on each trip, which no single
derivative covers.  When the dict is one the transformation reads (a global, a
closure variable, a constant item of one) and every value in it is a function,
the call becomes a branch over its keys, each arm the call of one function
(``if name == "relu": t = ACTIVATIONS["relu"](x) elif ...``), which derivo
differentiates like any branch; any other key raises ``KeyError``, as the
lookup would.  Each arm reads its item by a constant key, and the dict's set
of keys is read too: the derivative's entry checks both on every call, and a
dict that gained or lost a key is branched over again.
"""

from . import syntax as S
from .parse import MISSING

#: The statements whose value is evaluated first and always (see ssa._EVALUATED_FIRST)
_VALUE_FIRST = (S.Assign, S.Return, S.Expr)
#: The keys a branch compares with ==
_KEY_TYPES = (str, int, bool)


def branch_on_keys(block, namer, parsed):
    """Rewrite, in ``block`` and the blocks nested in it, each statement calling a
    dict's function by a computed key into a branch over the keys that assigns
    the call's value to a new name, which the statement reads instead."""
    index = 0
    while index < len(block):
        stmt = block[index]
        for nested in ("body", "orelse"):
            if isinstance(getattr(stmt, nested, None), list):
                branch_on_keys(getattr(stmt, nested), namer, parsed)
        found = _call_by_key(stmt, parsed) if isinstance(stmt, _VALUE_FIRST) else None
        if found is None:
            index += 1
            continue
        call, table = found
        result = namer.fresh("called")
        branch = [S.gast.Raise(exc=S.call(S.name("KeyError"), S.deepcopy(call.func.slice)),
                               cause=None)]
        for key in reversed(list(table)):
            arm = S.call(S.subscript(S.deepcopy(call.func.value), S.const(key)),
                         *map(S.deepcopy, call.args),
                         keywords=[S.deepcopy(k) for k in call.keywords])
            test = S.gast.Compare(left=S.deepcopy(call.func.slice), ops=[S.gast.Eq()],
                                  comparators=[S.const(key)])
            branch = [S.if_(test, [S.assign(result, arm)], branch)]
        for node in S.walk(branch):
            S.copy_location(node, call)
        _replace(stmt, call, S.copy_location(S.name(result), call))
        block[index:index] = branch
        index += 1  # (the statement again: it may call another function by a key)


def _call_by_key(stmt, parsed):
    """(the call, the dict) of the first call in ``stmt``'s value of a function
    held in a dict the transformation reads, by a key that is a name or an
    attribute of one it cannot read; None if there is none.  Not under ``and``,
    ``or``, a conditional expression or a lambda, which may not evaluate it."""
    pending = [stmt.value] if stmt.value is not None else []
    while pending:
        node = pending.pop(0)
        if isinstance(node, (S.gast.IfExp, S.gast.BoolOp, S.gast.Lambda)) or \
                not isinstance(node, S.AST):
            continue
        if isinstance(node, S.Call) and isinstance(node.func, S.Subscript) and \
                _names_a_value(node.func.slice) and \
                parsed.resolve_callee(node) is MISSING:
            table = parsed.resolve_expression(node.func.value, items=True)
            if isinstance(table, dict) and table and all(
                    type(k) in _KEY_TYPES and callable(v) for k, v in table.items()):
                parsed.read_keys(node.func.value, table)
                return node, table
        pending.extend(S.gast.iter_child_nodes(node))
    return None


def _names_a_value(key):
    """Whether ``key`` is a name or a chain of attributes of one: reading it again
    in each test gives the same value."""
    while isinstance(key, S.Attribute):
        key = key.value
    return isinstance(key, S.Name)


def _replace(tree, old, new):
    """Put ``new`` where ``old`` is in ``tree``."""
    for node in S.walk(tree):
        for field, value in S.gast.iter_fields(node):
            if value is old:
                setattr(node, field, new)
            elif isinstance(value, list) and any(v is old for v in value):
                value[:] = [new if v is old else v for v in value]
