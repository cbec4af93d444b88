"""Stage 5: tidy generated code without changing what it computes.

- ``simplify``: algebra on one expression that is exact in floating point
  (multiplying by one, double negation, folding constant arithmetic), so a rule
  such as ``g * (1 / y)`` reads ``g / y`` and ``y * x ** (y - 1)`` at ``y = 2``
  reads ``2 * x``.
- ``optimize``: removes assignments to temporaries nobody reads.

Multiplications by zero are never folded: ``0 * inf`` is ``nan``, and the
generated code must propagate NaN and inf exactly like the user's function.
"""

import operator

from . import syntax as S

_FOLD = {S.Add: operator.add, S.Sub: operator.sub, S.Mult: operator.mul}


def _number(node):
    if isinstance(node, S.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, S.UnaryOp) and isinstance(node.op, S.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    return None


def _is(node, value):
    number = _number(node)
    return number is not None and number == value


def _constant(value):
    return S.neg(S.const(-value)) if value < 0 else S.const(value)


class _Simplify(S.NodeTransformer):
    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, S.USub):
            if isinstance(node.operand, S.UnaryOp) and isinstance(node.operand.op, S.USub):
                return node.operand.operand
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        left, right, op = node.left, node.right, node.op
        a, b = _number(left), _number(right)
        if a is not None and b is not None and type(op) in _FOLD:
            return _constant(_FOLD[type(op)](a, b))
        if isinstance(op, S.Mult):
            if _is(right, 1):
                return left
            if _is(left, 1):
                return right
            if _is(right, -1):
                return self.visit(S.neg(left))
            if _is(left, -1):
                return self.visit(S.neg(right))
            if isinstance(right, S.BinOp) and isinstance(right.op, S.Div) and _is(right.left, 1):
                return S.binop(left, S.Div(), right.right)
            if isinstance(right, S.UnaryOp) and isinstance(right.op, S.USub):
                return S.neg(S.binop(left, S.Mult(), right.operand))
        if isinstance(op, S.Pow) and _is(right, 1):
            return left
        if isinstance(op, S.Div) and _is(right, 1):
            return left
        return node


def simplify(expression):
    """``expression`` with exact algebraic identities applied."""
    return _Simplify().visit(expression)


def optimize(function):
    """Remove assignments to names that nothing reads, until none is left."""
    params = {a.id for a in function.args.args + function.args.kwonlyargs}
    while True:
        loaded = {n.id for n in S.walk(function) if isinstance(n, S.Name)
                  and isinstance(n.ctx, S.Load)}
        removed = _remove_dead(function.body, loaded | params)
        if not removed:
            return function


def _remove_dead(block, live):
    removed = False
    kept = []
    for stmt in block:
        if isinstance(stmt, S.Assign) and isinstance(stmt.targets[0], S.Name) \
                and stmt.targets[0].id not in live and _pure(stmt.value):
            removed = True
            continue
        for field in ("body", "orelse"):
            if isinstance(getattr(stmt, field, None), list):
                removed |= _remove_dead(getattr(stmt, field), live)
        kept.append(stmt)
    block[:] = kept
    return removed


def _pure(expression):
    """Whether evaluating ``expression`` can be skipped: no calls, no subscripts."""
    return not any(isinstance(n, (S.Call, S.Subscript)) for n in S.walk(expression))
