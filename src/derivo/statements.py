"""What a statement of the statement form (see ``ssa``) binds, reads and writes:
the small questions every analysis asks of it."""

from . import syntax as S
from .ssa import is_append


def assigned_names(stmt):
    """The names an assignment binds, or the array or list it writes into."""
    if is_append(stmt):
        return [stmt.value.func.value.id]
    target = stmt.targets[0]
    if isinstance(target, S.Tuple):
        return [t.id for t in target.elts]
    if isinstance(target, S.Subscript):
        return [target.value.id]
    return [target.id]


def is_item_write(stmt):
    return isinstance(stmt, S.Assign) and isinstance(stmt.targets[0], S.Subscript)


def is_range(iterable, parsed):
    return isinstance(iterable, S.Call) and isinstance(iterable.func, S.Name) and \
        parsed.resolve(iterable.func.id) is range


def names_of(node):
    """Every name ``node`` (a node or a list of them) reads or binds."""
    return {n.id for n in S.walk(node) if isinstance(n, S.Name)}


def changed_in(block):
    """Names ``block`` assigns, writes into or calls a method of (``xs.append(v)``)."""
    return S.stored_names(block) | {
        n for s in S.walk(block) if is_item_write(s) for n in assigned_names(s)} | {
        n.func.value.id for n in S.walk(block) if isinstance(n, S.Call)
        and isinstance(n.func, S.Attribute) and isinstance(n.func.value, S.Name)}


def index_value(node):
    """An index as a value: ``1:n`` becomes ``slice(1, n, None)``."""
    if isinstance(node, S.Slice):
        parts = [S.deepcopy(p) if p is not None else S.const(None)
                 for p in (node.lower, node.upper, node.step)]
        return S.call("slice", *parts)
    if isinstance(node, S.Tuple):
        return S.tuple_([index_value(e) for e in node.elts])
    return S.deepcopy(node)
