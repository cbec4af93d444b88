"""Stage 5: tidy generated code without changing what it computes.

- ``simplify``: algebra on one expression that is exact in floating point
  (multiplying by one, double negation, folding constant arithmetic and exact
  quotients, ``a + -b`` as ``a - b``, ``a * b + b * a`` as ``a * b * 2``), so a
  rule such as ``g * (1 / y)`` reads ``g / y`` and ``y * x ** (y - 1)`` at
  ``y = 2`` reads ``2 * x``.
- ``optimize``: folds constant seeds into their uses, drops copies and
  recomputations between names assigned once, merges an adjoint's first two
  contributions into one sum, folds a temporary read once into the next
  statement, and removes assignments and emptied loops nobody reads
  (dead-code elimination by backward liveness), such as the primal result when
  only the gradient is returned, or a running sum the adjoint never looks at.
  In array code it finishes an adjoint's product in the array its first
  factors made (``bt1 = bs1 / (1 + t4)``, then ``bt1 *= t4``).

Multiplications by zero are never folded: ``0 * inf`` is ``nan``, and the
generated code must propagate NaN and inf exactly like the user's function.
"""

import operator
import re
from fractions import Fraction

from . import dataflow
from . import syntax as S

_FOLD = {S.Add: operator.add, S.Sub: operator.sub, S.Mult: operator.mul}


def _number(node):
    if isinstance(node, S.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, S.UnaryOp) and isinstance(node.op, S.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    return None


def is_number(node):
    """Whether ``node`` is a numeric literal (``2.0``, ``-1``)."""
    return _number(node) is not None


def is_literal(node, value):
    """Whether ``node`` is a numeric literal equal to ``value`` (``-1`` for -1)."""
    number = _number(node)
    return number is not None and number == value


_COMPARE = {S.gast.Eq: operator.eq, S.gast.NotEq: operator.ne, S.gast.Lt: operator.lt,
            S.gast.LtE: operator.le, S.gast.Gt: operator.gt, S.gast.GtE: operator.ge}


def _compared_number(node):
    """``node``, or the int 0 or 1 where it compares two numeric literals."""
    if isinstance(node, S.gast.Compare) and len(node.ops) == 1 and \
            type(node.ops[0]) in _COMPARE:
        a, b = _number(node.left), _number(node.comparators[0])
        if a is not None and b is not None:
            return S.const(int(_COMPARE[type(node.ops[0])](a, b)))
    return node


def _constant(value):
    return S.neg(S.const(-value)) if value < 0 else S.const(value)


class _Simplify(S.NodeTransformer):
    def __init__(self, floats=None):
        self.floats = floats  # the names surely holding floats (None: not known)

    def visit_Call(self, node):
        self.generic_visit(node)
        # getattr(dp, 'w'), a field read's tangent, is dp.w
        if isinstance(node.func, S.Name) and node.func.id == "getattr" and \
                len(node.args) == 2 and not node.keywords and \
                isinstance(node.args[1], S.Constant) and isinstance(node.args[1].value, str) \
                and node.args[1].value.isidentifier():
            return S.gast.Attribute(value=node.args[0], attr=node.args[1].value, ctx=S.Load())
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, S.USub):
            if isinstance(node.operand, S.UnaryOp) and isinstance(node.operand.op, S.USub):
                return node.operand.operand
        return node

    def visit_BinOp(self, node):
        if isinstance(node.op, S.Mult) and isinstance(node.right, S.BinOp) and \
                isinstance(node.right.op, S.Div) and is_literal(node.right.left, 1):
            # g * (1 / y) is g / y (before 1 / 3 folds to a rounded 0.333...)
            node = S.binop(node.left, S.Div(), node.right.right)
        self.generic_visit(node)
        # a comparison of numbers in arithmetic is the int it counts as (2 != 0: 1)
        node.left, node.right = _compared_number(node.left), _compared_number(node.right)
        left, right, op = node.left, node.right, node.op
        a, b = _number(left), _number(right)
        if a is not None and b is not None and type(op) in _FOLD:
            return _constant(_FOLD[type(op)](a, b))
        if a is not None and b and isinstance(op, S.Div) and \
                Fraction(a) / Fraction(b) == Fraction(a / b):
            return _constant(a / b)  # only exact quotients: 1.0 / 2.0, not 1 / 3
        if isinstance(op, S.Mult):
            if is_literal(right, 1) and not _makes_float(right, left, self.floats):
                return left
            if is_literal(left, 1) and not _makes_float(left, right, self.floats):
                return right
            if is_literal(right, -1):
                return self.visit(S.neg(left))
            if is_literal(left, -1):
                return self.visit(S.neg(right))
            if isinstance(right, S.UnaryOp) and isinstance(right.op, S.USub):
                return S.neg(S.binop(left, S.Mult(), right.operand))
            if isinstance(left, S.UnaryOp) and isinstance(left.op, S.USub) and \
                    _number(left) is None:
                return S.neg(S.binop(left.operand, S.Mult(), right))
        if isinstance(op, (S.Add, S.Sub)) and self.floats is not None:
            # a float plus 1.0 * v is a float plus v
            if not _may_be_whole(left, self.floats):
                right = node.right = _without_float_one(right)
            if not _may_be_whole(right, self.floats):
                left = node.left = _without_float_one(left)
        if isinstance(op, S.Add) and isinstance(right, S.UnaryOp) and \
                isinstance(right.op, S.USub) and _number(right) is None:
            return S.binop(left, S.Sub(), right.operand)
        if isinstance(op, S.Add) and _commuted_products(left, right):
            # dx * x + x * dx, the tangent of x * x: one product, doubled (exact:
            # a * b is b * a, and adding a number to itself only doubles it)
            return S.binop(left, S.Mult(), S.const(2))
        if isinstance(op, S.Pow) and is_literal(right, 1):
            return left
        if isinstance(op, S.Div) and is_literal(right, 1):
            return left
        return node


#: Builtins whose result is a bool or an int (or, given arrays, an array of them),
#: and math functions whose result is an int.
_WHOLE_NUMBER_CALLS = {"any", "all", "bool", "len", "int", "round"}
_WHOLE_NUMBER_MATH = {"floor", "ceil", "trunc", "factorial", "comb", "perm", "gcd", "lcm",
                      "isqrt"}


def _makes_float(one, value, floats=None):
    """Whether ``one * value`` (``one`` a literal 1) is a float where ``value`` may
    not be: ``one`` is 1.0 and value a comparison or ``any(...)``, a bool (or a
    bool array), so that the gradient of ``(x > 1.0) * x`` stays a float; or,
    knowing the names that hold ``floats``, a value that may be a whole number
    (``i`` of ``i * x``, an int), so that a gradient with respect to a float is
    a float."""
    return type(_number(one)) is float and (
        _is_whole_number(value) or floats is not None and _may_be_whole(value, floats))


def _is_whole_number(value):
    """Whether ``value`` is surely a bool or an int (or an array of them)."""
    func = value.func if isinstance(value, S.Call) else None
    return isinstance(value, S.Compare) or \
        isinstance(value, S.UnaryOp) and isinstance(value.op, S.Not) or \
        isinstance(func, S.Name) and func.id in _WHOLE_NUMBER_CALLS or \
        isinstance(func, S.Attribute) and isinstance(func.value, S.Name) and \
        func.value.id == "math" and func.attr in _WHOLE_NUMBER_MATH


def _may_be_whole(value, floats):
    """Whether ``value`` may be a bool or an int, by its form, where the names in
    ``floats`` hold floats: a float literal, a quotient or a call (of math and
    NumPy functions, which give floats from floats) is not; a name, an item or
    an attribute not known to be, and arithmetic of those alone, may be."""
    if isinstance(value, S.Constant):
        return type(value.value) is not float
    if isinstance(value, S.Name):
        return value.id not in floats
    if isinstance(value, S.UnaryOp):
        return _may_be_whole(value.operand, floats)
    if isinstance(value, S.BinOp):
        return not isinstance(value.op, S.Div) and _may_be_whole(value.left, floats) and \
            _may_be_whole(value.right, floats)
    if isinstance(value, S.gast.IfExp):
        return _may_be_whole(value.body, floats) or _may_be_whole(value.orelse, floats)
    if isinstance(value, S.Call):
        return _is_whole_number(value)
    return True


def _without_float_one(node):
    """``v`` for ``1.0 * v`` or ``v * 1.0``, else ``node``."""
    if isinstance(node, S.BinOp) and isinstance(node.op, S.Mult):
        for one, value in ((node.left, node.right), (node.right, node.left)):
            if is_literal(one, 1) and type(_number(one)) is float:
                return value
    return node


def _float_names(function, floats):
    """``floats`` and the names of ``function`` every assignment of which gives a
    float by its form (``t1 = math.exp(x)``; see :func:`_may_be_whole`)."""
    values, unknown = {}, set(S.param_names(function))  # (a parameter holds what it is given)
    for stmt in S.statements(function):
        if isinstance(stmt, S.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], S.Name):
            values.setdefault(stmt.targets[0].id, []).append(stmt.value)
        elif isinstance(stmt, S.AugAssign) and isinstance(stmt.target, S.Name):
            values.setdefault(stmt.target.id, []).append(
                S.binop(S.name(stmt.target.id), stmt.op, stmt.value))
        else:  # a loop's target, an unpacking, a with's: their values are not seen
            targets = getattr(stmt, "targets", []) + [
                t for t in [getattr(stmt, "target", None)] if t is not None]
            unknown |= {n.id for n in S.walk(targets) if isinstance(n, S.Name)}
    known = set(floats)
    pending = [name for name in values if name not in known and name not in unknown]
    changed = True
    while changed:  # in the order of the code: one pass for a chain of assignments
        changed = False
        for name in pending:
            if name in known:
                continue
            known.add(name)  # (its own value before, as s = s * 0.5 reads it: by induction)
            if any(_may_be_whole(value, known) for value in values[name]):
                known.discard(name)
            else:
                changed = True
    return known


def _commuted_products(left, right):
    """Whether ``left`` is ``a * b`` and ``right`` is ``b * a``, with no calls."""
    if not all(isinstance(n, S.BinOp) and isinstance(n.op, S.Mult) for n in (left, right)):
        return False
    if any(isinstance(n, S.Call) for n in S.walk(left)):
        return False
    return S.shape(left.left) == S.shape(right.right) and \
        S.shape(left.right) == S.shape(right.left)


def _literal(node):
    """Whether ``node`` is a constant, a negated one (``-1.5``) or a tuple of them."""
    if isinstance(node, S.Constant):
        return True
    if isinstance(node, S.UnaryOp) and isinstance(node.op, S.USub):
        return isinstance(node.operand, S.Constant)
    return isinstance(node, S.Tuple) and all(_literal(e) for e in node.elts)


class _FoldTests(S.NodeTransformer):
    """``(1, 0) is None`` and ``a if True else b``, left by options bound to
    literals in rule templates."""

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (S.Is, S.IsNot)) and \
                _literal(node.left) and _literal(node.comparators[0]):
            right = node.comparators[0]
            same = isinstance(node.left, S.Constant) and isinstance(right, S.Constant) \
                and node.left.value is right.value
            return S.const(same if isinstance(node.ops[0], S.Is) else not same)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if isinstance(node.test, S.Constant):
            return node.body if node.test.value else node.orelse
        return node


def simplify(expression, floats=None):
    """``expression`` with exact algebraic identities applied; ``floats``: the
    names known to hold floats, when they are known (then ``1.0 * v`` stays
    where ``v`` may be an int)."""
    if any(isinstance(node, (S.Compare, S.IfExp)) for node in S.walk(expression)):
        expression = _FoldTests().visit(expression)  # (a walk costs less than its visit)
    return _Simplify(floats).visit(expression)


def optimize(function, shape_readers=(), spreaders=(), in_place=(), floats=frozenset(),
             primals=frozenset()):
    """Fold seeds, drop copies and recomputations between names assigned once,
    let calls of ``shape_readers`` (names of helpers that read their second
    argument only for its shape) read a shape from where it came from, multiply
    by the number a call of ``spreaders`` (names of ``runtime.expand``) would
    spread over an array of the other factor's shape, merge an
    adjoint's first two contributions, then remove assignments whose value
    nothing reads, unless marked ``effects`` (a pop, or a call derivo cannot see
    into).  Finish a product in the new array its first factors made where it
    is assigned to one of ``in_place`` (in array code, the adjoints of values
    that may be arrays).  ``floats``: the names that surely hold floats (the
    adjoints, the differentiated values), which a seed of 1.0 multiplies
    exactly; ``primals``: the names of the function differentiated, which a copy
    keeps (see :func:`_drop_copies`)."""
    floats = _float_names(function, floats)
    uses = _Uses(function)
    _fold_seeds(function, floats, uses)
    _drop_copies(function, uses, primals)
    _read_through_copies_in_blocks(function, uses)
    _drop_recomputations(function, uses)
    _shapes_from_sources(function, shape_readers, uses)
    _multiply_by_the_sum_adjoint(function, spreaders, uses)
    for node in S.statements(function):
        # bx += -e reads better as bx -= e
        if isinstance(node, S.AugAssign) and isinstance(node.op, S.Add) and \
                isinstance(node.value, S.UnaryOp) and isinstance(node.value.op, S.USub):
            node.op, node.value = S.Sub(), node.value.operand
    _merge_contributions(function, floats, uses)
    _fold_single_uses(function, uses)
    _store_where_computed(function, uses)
    _return_short_results(function, uses)
    dead = _DeadCode()
    dead.remove = True
    dead.run(function.body, set())
    _finish_in_place(function, set(in_place))
    return function


class _Uses:
    """How many times each name is assigned (``stores``, a parameter once) and
    read (``loads``) in the function :func:`optimize` works on: counted in one
    walk, then kept equal to a new count by every pass before the dead-code
    removal, each of which reports what it takes out of the tree
    (:meth:`removed`), puts in (:meth:`added`) or renames (:meth:`renamed`)."""

    def __init__(self, function):
        self.stores, self.loads = S.name_counts(function)

    def added(self, *trees, sign=1):
        for node in S.walk(list(trees)):
            if isinstance(node, S.Name):
                counts = self.loads if isinstance(node.ctx, S.Load) else self.stores
                counts[node.id] += sign

    def removed(self, *trees):
        self.added(*trees, sign=-1)

    def renamed(self, renames):
        """Every occurrence of each key of ``renames`` became one of its value."""
        for counts in (self.stores, self.loads):
            for old, new in renames.items():
                counts[new] += counts.pop(old, 0)


def _fold_seeds(function, floats, uses):
    """Replace a seed (``bout = 1.0``, marked ``seed``) that is never reassigned
    by its value, simplifying where it lands: ``bx = bout / x`` becomes
    ``bx = 1.0 / x``, ``bx += -bout * math.cos(x)`` becomes ``bx += -math.cos(x)``.
    An assignment that folding leaves a number (``bt = bout``) is folded next."""
    stores = uses.stores
    seeds = {s.targets[0].id: s.value for s in S.statements(function)
             if getattr(s, "seed", False) and stores.get(s.targets[0].id) == 1}
    if not seeds:
        return
    readers = {}  # name -> the assignments whose value reads it, in program order
    for statements in S.blocks(function):
        for stmt in statements:
            if isinstance(stmt, (S.Assign, S.AugAssign)):
                for name in S.loaded_names(stmt.value):
                    readers.setdefault(name, []).append(stmt)

    class Fold(S.NodeTransformer):
        def visit_Name(self, node):
            if isinstance(node.ctx, S.Load) and node.id in seeds:
                self.folded = True
                uses.loads[node.id] -= 1
                return S.deepcopy(seeds[node.id])
            return node

    while seeds:
        found = {}
        reading = {id(stmt): stmt for name in seeds for stmt in readers.get(name, ())}
        for stmt in reading.values():
            fold = Fold()
            fold.folded = False
            value = fold.visit(stmt.value)
            if not fold.folded:
                continue
            uses.removed(value)  # (the reads of seeds it replaced are uncounted already)
            stmt.value = simplify(value, set(floats) | set(seeds))
            uses.added(stmt.value)
            target = getattr(stmt, "targets", [None])[0]
            if isinstance(target, S.Name) and is_number(stmt.value) and \
                    stores.get(target.id) == 1 and target.id not in seeds:
                stmt.seed = True
                found[target.id] = stmt.value
        seeds = found


def _drop_copies(function, uses, primals=frozenset()):
    """``a = b`` at the top level, with a and b each assigned once: b is renamed a
    and the copy goes (``by1 = bresult1`` after ``bresult, bresult1 = bresults``
    becomes ``bresult, by1 = bresults``), unless b is one of ``primals`` (the
    names of the function differentiated) and a is not (an adjoint that is a
    primal value, ``ba = b`` of ``a * b``) and not returned: then a is renamed b,
    and the value keeps the name the user gave it.  b is renamed only
    if it is not a parameter.  With one assignment each, a and b hold the same
    value wherever either is read."""
    if not any(isinstance(getattr(stmt, "value", None), S.Name) and S.single_target(stmt)
               for stmt in function.body):
        return
    stores = uses.stores
    # a parameter is assigned by every call: never renamed
    params = {arg.id for arg in function.args.args + function.args.kwonlyargs}
    # a returned gradient keeps its name: the names say which gradient is which
    returned = S.loaded_names(function.body[-1]) if isinstance(function.body[-1], S.Return) \
        else set()
    renames, copies, body, index = {}, [], function.body, 0
    while index < len(body):
        stmt = body[index]
        a = S.single_target(stmt)
        b = stmt.value.id if a and isinstance(stmt.value, S.Name) else None
        if b and not getattr(stmt, "effects", False) and stores.get(a) == 1 and \
                stores.get(b) == 1 and a not in params and a not in renames and \
                b not in renames:
            old, new = (a, b) if b in primals and a not in primals | returned else (b, a)
            if old in params:
                index += 1
                continue
            # (a name a copy before renamed to old is new now too)
            for earlier, renamed in renames.items():
                if renamed == old:
                    renames[earlier] = new
            renames[old] = new
            copies.append(stmt)
            index = _remove(body, index)
        else:
            index += 1
    uses.removed(*copies)
    _rename(function, renames, uses)


def _read_through_copies_in_blocks(function, uses):
    """``a = b`` in a loop's or a branch's block, a assigned nowhere else and read
    only further down that block: a's readers read b, and the copy goes (the
    reverse loop of ``sum(f(x) for x in xs)`` had ``bt4 = bt3; bt2 = bt4``).  b is
    not assigned further down the block, so it holds the copied value wherever a
    was read.  (Copies at the top level are :func:`_drop_copies`'.)"""
    nested = [block for block in S.blocks(function) if block is not function.body]
    stores = uses.stores
    for statements in nested:
        index = 0
        while index < len(statements):
            copy, a = statements[index], S.single_target(statements[index])
            if a and isinstance(copy.value, S.Name) and stores[a] == 1 and \
                    not getattr(copy, "effects", False):
                b, after = copy.value.id, statements[index + 1:]
                readers = [n for n in S.walk(function) if isinstance(n, S.Name) and
                           n.id == a and isinstance(n.ctx, S.Load)]
                below = {id(n) for n in S.walk(after)}
                if all(id(n) in below for n in readers) and b not in S.stored_names(after):
                    for reader in readers:
                        reader.id = b
                    uses.loads[a] -= len(readers)
                    uses.loads[b] += len(readers)
                    uses.removed(copy)
                    index = _remove(statements, index)
                    continue
            index += 1


def _drop_recomputations(function, uses):
    """``b = e`` at the top level after ``a = e`` (the same arithmetic on names
    that keep one value) becomes a read of a: a gradient that calls a gradient
    recomputes the callee's temporaries so (``bt2 = 2 * (x * x - 1.0)`` after
    ``bt1 = 2 * (x * x - 1.0)``).

    a and b then name one object, which is only safe when neither could be
    changed in place: arithmetic alone (a list display would be a new list), and
    neither name written into, given to a call, or asked for a method; nor may
    any name the arithmetic reads be, or e would not compute the same value.
    """
    stores = uses.stores
    exposed = _exposed_to_changes(function)

    def unchanging(name):  # one value wherever it is read after its assignment
        # (a parameter's one assignment: the call's)
        return stores.get(name) == 1 and name not in exposed

    computed, renames, body, dropped = {}, {}, [], []
    for stmt in function.body:
        target = S.single_target(stmt)
        reads = _arithmetic_reads(stmt.value) if target and unchanging(target) and \
            not getattr(stmt, "effects", False) else None
        if reads is not None and all(map(unchanging, reads)):
            key = S.shape(stmt.value)
            if key in computed:
                renames[target] = computed[key]
                dropped.append(stmt)
                continue
            computed[key] = target
        body.append(stmt)
    function.body[:] = body
    uses.removed(*dropped)
    _rename(function, renames, uses)


def _shapes_from_sources(function, shape_readers, uses):
    """``expand(g, t7, None, False)`` reads t7 only for its shape.  When
    ``t7 = r * r`` (or ``r / r``, ``r * 2.0``, ``-r``), r has that shape, and
    reading r instead lets ``t7 = r * r`` go if nothing else reads it: the
    gradient of ``np.sum(r * r)`` need not compute ``r * r``.

    Both names are assigned once, and r is never given to a call or asked for a
    method, so its shape is the same wherever it is read.  Forms that change a
    list's length (``r + r``, ``r * 2``) do not count.
    """
    candidates = [(target, _shape_source(stmt.value)) for stmt in S.statements(function)
                  for target in [S.single_target(stmt)] if target and _shape_source(stmt.value)]
    if not candidates or not shape_readers:
        return
    stores = uses.stores
    exposed = _exposed_to_changes(function, harmless=shape_readers)
    same_shape = {target: source for target, source in candidates
                  if stores[target] == 1 and stores[source] == 1 and source not in exposed}
    for node in S.walk(function) if same_shape else ():
        if isinstance(node, S.Call) and isinstance(node.func, S.Name) and \
                node.func.id in shape_readers and len(node.args) > 1 and \
                isinstance(node.args[1], S.Name) and node.args[1].id in same_shape:
            name = node.args[1].id
            while name in same_shape:
                name = same_shape[name]
            uses.loads[node.args[1].id] -= 1
            uses.loads[name] += 1
            node.args[1] = S.name(name)


def _shape_source(value):
    """The name whose shape ``value`` has by its form alone, or None."""
    if isinstance(value, S.UnaryOp) and isinstance(value.op, (S.USub, S.UAdd)) and \
            isinstance(value.operand, S.Name):
        return value.operand.id
    if not isinstance(value, S.BinOp) or isinstance(value.op, (S.Add, S.MatMult)):
        return None
    left, right = value.left, value.right
    if isinstance(left, S.Name) and isinstance(right, S.Name) and left.id == right.id:
        return left.id
    for name, other in ((left, right), (right, left)):
        if isinstance(name, S.Name) and isinstance(other, S.Constant) and \
                type(other.value) is float:
            return name.id
    return None


def _multiply_by_the_sum_adjoint(function, spreaders, uses):
    """``bt7 = expand(g, r, None, False)`` is the adjoint of ``np.sum(r * r)``:
    an array of r's shape filled with the number g.  When its one reader
    multiplies it by r itself (``br = bt7 * r * 2``), the product has r's shape
    anyway, and ``br = g * r * 2`` gives the same numbers without that array.

    bt7, r and g (a name or a number) are each assigned once, so they are the
    same wherever they are read."""
    spreading = [stmt for stmt in S.statements(function) if S.single_target(stmt) and
                 isinstance(stmt.value, S.Call) and isinstance(stmt.value.func, S.Name) and
                 stmt.value.func.id in spreaders]
    if not spreading:
        return
    stores, loads = uses.stores, uses.loads
    spreads = {}
    for stmt in spreading:
        name = S.single_target(stmt)
        value = stmt.value
        if len(value.args) == 4 and not value.keywords and \
                _is_constant(value.args[2], None) and _is_constant(value.args[3], False) and \
                isinstance(value.args[1], S.Name) and stores[value.args[1].id] == 1 and \
                (is_number(value.args[0]) or isinstance(value.args[0], S.Name) and
                 stores[value.args[0].id] == 1) and stores[name] == loads[name] == 1:
            spreads[name] = stmt
    for product in S.walk(function) if spreads else ():
        if not (spreads and isinstance(product, S.BinOp) and isinstance(product.op, S.Mult)):
            continue
        for side, other in (("left", product.right), ("right", product.left)):
            spread = getattr(product, side)
            stmt = spreads.get(getattr(spread, "id", None))
            if stmt is not None and isinstance(other, S.Name) and \
                    other.id == stmt.value.args[1].id:
                uses.removed(spread, stmt.value)
                setattr(product, side, stmt.value.args[0])
                uses.added(stmt.value.args[0])
                stmt.value = S.const(None)  # dead now: dead-code removal drops it
                del spreads[spread.id]
                break


def _is_constant(node, value):
    return isinstance(node, S.Constant) and node.value is value


def _rename(function, renames, uses):
    """Rename every name of ``function`` that is a key of ``renames`` to its value."""
    for node in S.walk(function) if renames else ():
        if isinstance(node, S.Name) and node.id in renames:
            node.id = renames[node.id]
    uses.renamed(renames)


_ARITHMETIC_NODES = (S.BinOp, S.UnaryOp, S.Name, S.Constant, S.gast.operator, S.gast.unaryop,
                     S.gast.expr_context)


def _arithmetic_reads(node):
    """The names ``node`` reads when it is operators on names and constants
    alone, else None."""
    if not isinstance(node, (S.BinOp, S.UnaryOp)):
        return None
    reads = set()
    for n in S.walk(node):
        if not isinstance(n, _ARITHMETIC_NODES):
            return None
        if n.__class__ is S.Name:
            reads.add(n.id)
    return reads


def _pure_arithmetic(node):
    return _arithmetic_reads(node) is not None


def _exposed_to_changes(function, harmless=()):
    """Names written into (``x[i] = v``), passed to a call (other than one of the
    functions named in ``harmless``), or whose method is called."""
    exposed = set()
    for node in S.walk(function):
        if isinstance(node, S.Subscript) and isinstance(node.ctx, S.Store):
            exposed |= S.loaded_names(node.value)
        elif isinstance(node, S.Call) and not (isinstance(node.func, S.Name)
                                               and node.func.id in harmless):
            exposed |= {a.id for a in list(node.args) + [k.value for k in node.keywords]
                        if isinstance(a, S.Name)}
            if isinstance(node.func, S.Attribute) and isinstance(node.func.value, S.Name):
                exposed.add(node.func.value.id)
    return exposed


def _merge_contributions(function, floats, uses):
    """``bx = e1`` directly followed by ``bx += e2`` (or ``-=``, or array code's
    ``bx = bx + e2``) becomes ``bx = e1 + e2``: one expression, as a person
    writes it, and no second store.  The value is the same: the sum is evaluated
    in the same order, and ``e2`` does not read ``bx``.
    """
    for statements in S.blocks(function):
        index = 0
        while index + 1 < len(statements):
            first, second = statements[index], statements[index + 1]
            name = S.single_target(first)
            update = _update_of(second, name) if name else None
            if update is not None and name not in S.loaded_names(update[1]) and \
                    not any(getattr(s, "effects", False) for s in (first, second)):
                uses.removed(first, second)
                first.value = simplify(S.binop(first.value, *update), floats)
                uses.added(first)
                del statements[index + 1]
            else:
                index += 1


_TEMPORARY = re.compile(r"t\d+$")


def _fold_single_uses(function, uses):
    """``t3 = a + b`` directly followed by ``t4 = np.exp(t3)``, t3 a temporary read
    nowhere else, becomes ``t4 = np.exp(a + b)``: the user's expression back in
    one piece, and with arrays one array fewer alive until the function returns.

    Only arithmetic moves, and only into the first operand of the next
    statement: nothing else is evaluated between its old place and its new one.
    """
    stores, loads = uses.stores, uses.loads
    for statements in S.blocks(function):
        index = 0
        while index + 1 < len(statements):
            first, second = statements[index], statements[index + 1]
            name = S.single_target(first)
            use = _first_operand(second.value) if S.single_target(second) else None
            if name and _TEMPORARY.match(name) and stores[name] == loads[name] == 1 and \
                    _pure_arithmetic(first.value) and isinstance(use, S.Name) and \
                    use.id == name and not any(getattr(s, "effects", False)
                                               for s in (first, second)):
                second.value = _replace(second.value, use, first.value)
                stores[name] -= 1
                loads[name] -= 1
                del statements[index]
            else:
                index += 1


def _store_where_computed(function, uses):
    """``bc = e`` whose one reader is a later ``bX[i] += bc`` (or ``=``) in the same
    block becomes ``bX[i] += e`` in bc's place: the reverse of ``value = value * x
    + c`` in ``for c in X`` adds ``bvalue`` to X's adjoint straight away, as a
    person writes it, though ``bvalue`` changes in between.  e is evaluated
    where it was.

    The statements in between assign names only (``=``, ``+=``), none that the
    store reads or bc, and neither they nor e read bX, which no other name holds:
    moving the store up changes nothing they see.
    """
    # Only a name that an item store reads is a candidate: the scan below then
    # runs once per item store, not once per statement.
    item_stored = {stmt.value.id for statements in S.blocks(function) for stmt in statements
                   if _item_store_of(stmt, _name_of(getattr(stmt, "value", None)))}
    if not item_stored:
        return
    stores, loads = uses.stores, uses.loads
    held = _held_elsewhere(function)
    for statements in S.blocks(function):
        for index, computed in enumerate(statements):
            name = S.single_target(computed)
            if name not in item_stored or stores[name] != 1 or loads[name] != 1 or \
                    getattr(computed, "effects", False):
                continue
            for later in range(index + 1, len(statements)):
                stmt = statements[later]
                store = _item_store_of(stmt, name)
                if store is not None and store.value.id not in held | S.loaded_names(computed.value):
                    container, touched = store.value.id, S.loaded_names(store) | {name}
                    between = statements[index + 1:later]
                    if all(S.is_comment(s) or _assigned_name(s) not in touched | {None}
                           and container not in S.loaded_names(s) for s in between):
                        stmt.value = computed.value
                        stores[name] -= 1
                        loads[name] -= 1
                        if isinstance(stmt.value, S.Name):
                            item_stored.add(stmt.value.id)
                        statements[index] = stmt
                        _remove(statements, later)
                    break
                if not (S.is_comment(stmt) or _assigned_name(stmt)):
                    break


_ELEMENTWISE = (S.Add, S.Sub, S.Mult, S.Div, S.Pow)


def _finish_in_place(function, names):
    """``bt1 = bs1 / (1 + t4) * t4`` becomes ``bt1 = bs1 / (1 + t4)`` then
    ``bt1 *= t4``: the last product goes into the array the division made, as a
    person writes it, instead of into one more array of that size.  Only for
    the ``names`` given, adjoints: the user's own statements keep their form.

    The last factor (t4) is a name, not bt1, that the first factors read
    through element-wise operators alone.  So it took part in making their
    array: that array already has the shape and the dtype of the whole product,
    and ``*=`` writes the same numbers into it (``+=``, ``-=`` likewise;
    never ``/=``, which cannot write floats into an array of ints).  The array
    is new and nothing else holds it yet.  A number is immutable, so ``*=`` on
    one makes a new number, as ``*`` does.
    """
    for statements in S.blocks(function):
        index = 0
        while index < len(statements):
            stmt = statements[index]
            name = S.single_target(stmt)
            value = stmt.value if name else None
            if isinstance(value, S.BinOp) and isinstance(value.op, (S.Add, S.Sub, S.Mult)) and \
                    name in names and isinstance(value.right, S.Name) and \
                    value.right.id != name and _made_with(value.left, value.right.id):
                update = S.AugAssign(target=S.store(name), op=value.op, value=value.right)
                stmt.value = value.left
                statements.insert(index + 1, update)
            index += 1


def _made_with(node, ident):
    """Whether ``node`` makes a new value by element-wise operators, at least one
    of them reading the name ``ident`` through element-wise operators alone."""
    def reads(node):
        if isinstance(node, S.Name):
            return node.id == ident
        if isinstance(node, S.UnaryOp) and isinstance(node.op, (S.USub, S.UAdd)):
            return reads(node.operand)
        return isinstance(node, S.BinOp) and isinstance(node.op, _ELEMENTWISE) and (
            reads(node.left) or reads(node.right))
    return not isinstance(node, S.Name) and reads(node)


_RETURN_WIDTH = 79  # a folded return longer than a line is harder to read than the names


def _return_short_results(function, uses):
    """``bx1 = e1; bx2 = e2; return bx1, bx2`` becomes ``return e1, e2`` when each
    result is arithmetic (of names, numbers and calls like ``math.cos(x)``) and
    the return fits on a line: as a person writes a short gradient, and two
    stores and two loads fewer, which on a gradient of a few operations is a few
    percent.  A result that is a helper's call or a copy (``bx0 = bx``) keeps its
    name, and so then do the others: the names say which gradient is which.

    The names fold in the order they were assigned, each assigned once, last,
    and read by the return alone: the expressions are evaluated in the same order.
    """
    body, final = function.body, function.body[-1]
    if not isinstance(final, S.Return) or final.value is None:
        return
    results = final.value.elts if isinstance(final.value, S.Tuple) else [final.value]
    stores, loads = uses.stores, uses.loads
    assigned = [stmt for stmt in body[:-1] if not S.is_comment(stmt)][-len(results):]
    if len(assigned) != len(results) or any(
            not isinstance(result, S.Name) or S.single_target(stmt) != result.id or
            stores[result.id] != 1 or loads[result.id] != 1 or
            getattr(stmt, "effects", False) or not _arithmetic(stmt.value)
            for stmt, result in zip(assigned, results)):
        return
    values = [stmt.value for stmt in assigned]
    value = S.tuple_(values) if isinstance(final.value, S.Tuple) else values[0]
    if len("    return " + S.expr_source(value)) <= _RETURN_WIDTH:
        for result in results:
            stores[result.id] -= 1
            loads[result.id] -= 1
        final.value = value
        body[:-1] = [stmt for stmt in body[:-1] if not any(stmt is a for a in assigned)]


def _arithmetic(node):
    """Operators on names and numbers, and calls of a name's attribute without
    keywords (``math.cos(x)``, ``x.sum()``)."""
    return isinstance(node, (S.BinOp, S.UnaryOp, S.Call)) and all(
        isinstance(n, (S.BinOp, S.UnaryOp, S.Name, S.Constant, S.gast.operator,
                       S.gast.unaryop, S.gast.expr_context)) or
        isinstance(n, S.Call) and isinstance(n.func, S.Attribute) and not n.keywords or
        isinstance(n, S.Attribute) and isinstance(n.value, S.Name)
        for n in S.walk(node))


def _item_store_of(stmt, name):
    """``X[i]`` when ``stmt`` is ``X[i] = name`` or ``X[i] += name``, X a name."""
    target = stmt.targets[0] if isinstance(stmt, S.Assign) and len(stmt.targets) == 1 \
        else getattr(stmt, "target", None) if isinstance(stmt, S.AugAssign) else None
    if isinstance(target, S.Subscript) and isinstance(target.value, S.Name) and \
            isinstance(stmt.value, S.Name) and stmt.value.id == name:
        return target
    return None


def _name_of(node):
    """The identifier of ``node`` when it is a name, else None."""
    return node.id if isinstance(node, S.Name) else None


def _assigned_name(stmt):
    """The name ``stmt`` assigns when it is ``name = e`` or ``name += e``, else None."""
    if isinstance(stmt, S.AugAssign) and isinstance(stmt.target, S.Name):
        return stmt.target.id
    return S.single_target(stmt)


def _held_elsewhere(function):
    """Names whose value another name may hold too: read other than as ``X[...]``
    or in the final return."""
    returned = {id(n) for n in S.walk(function.body[-1])} \
        if isinstance(function.body[-1], S.Return) else set()
    bases, loads = set(), []
    for node in S.walk(function):
        if isinstance(node, S.Subscript):
            bases.add(id(node.value))
        elif isinstance(node, S.Name) and isinstance(node.ctx, S.Load):
            loads.append(node)
    return {n.id for n in loads if id(n) not in bases and id(n) not in returned}


def _remove(statements, index):
    """Delete ``statements[index]``, and the source-line comment above it when no
    code is left under that; return the index of the statement that followed."""
    del statements[index]
    if index > 0 and S.is_comment(statements[index - 1]) and \
            (index == len(statements) or S.is_comment(statements[index])):
        del statements[index - 1]
        return index - 1
    return index


def _first_operand(node):
    """The leaf evaluated first in ``node``, through calls of a function named by
    a name or an attribute of one (``np.exp(x)``: x), operators and subscripts."""
    while True:
        if isinstance(node, S.Call) and node.args and not node.keywords and \
                isinstance(_first_operand(node.func), S.Name) and \
                isinstance(node.func, (S.Name, S.Attribute)):
            node = node.args[0]
        elif isinstance(node, S.BinOp):
            node = node.left
        elif isinstance(node, (S.UnaryOp, S.Attribute, S.Subscript)):
            node = getattr(node, "operand", None) or node.value
        else:
            return node


def _replace(tree, old, new):
    class Replace(S.NodeTransformer):
        def visit_Name(self, node):
            return new if node is old else node
    return Replace().visit(tree)


def _update_of(stmt, name):
    """(op, e) when ``stmt`` is ``name += e``, ``name -= e`` or ``name = name +/- e``."""
    if isinstance(stmt, S.AugAssign) and isinstance(stmt.op, (S.Add, S.Sub)) and \
            isinstance(stmt.target, S.Name) and stmt.target.id == name:
        return stmt.op, stmt.value
    value = stmt.value if S.single_target(stmt) == name else None
    if isinstance(value, S.BinOp) and isinstance(value.op, (S.Add, S.Sub)) and \
            isinstance(value.left, S.Name) and value.left.id == name:
        return value.op, value.right
    return None


def _targets(loop):
    return {n.id for n in S.walk(loop.target) if isinstance(n, S.Name)}


class _DeadCode(dataflow.Backward):
    """Backward liveness (see :mod:`derivo.dataflow`) that, with ``remove``,
    drops the assignments of names nothing reads afterwards."""

    def __init__(self):
        super().__init__()
        self.remove = False

    def run(self, stmts, live):
        """Live names before ``stmts`` given ``live`` after; prunes when removing.
        The block works on a set of its own, which each simple statement changes
        in place (copying it per statement would cost the square of the length)."""
        kept, live = [], set(live)
        for stmt in reversed(stmts):
            before = self.statement(stmt, live)
            if before is None:
                continue  # dead
            live = before if before is live else set(before)
            kept.append(stmt)
        if self.remove:
            stmts[:] = kept[::-1]
        return live

    def ended(self):
        return set()

    def simple(self, stmt, live):
        """Live names before ``stmt`` (``live``, changed), or None when it is dead."""
        if isinstance(stmt, S.Assign):
            target = stmt.targets[0]
            if isinstance(target, S.Name):
                if target.id not in live and not getattr(stmt, "effects", False):
                    return None
                live.discard(target.id)
                live |= S.loaded_names(stmt.value)
                return live
            live -= {n.id for n in S.walk(target) if isinstance(n, S.Name)
                     and isinstance(n.ctx, S.Store)}
            live |= S.loaded_names(stmt.value) | S.loaded_names(target)
            return live
        if isinstance(stmt, S.AugAssign):
            if not isinstance(stmt.target, S.Name):  # x[i] += e: kept, as x is
                live |= S.loaded_names(stmt.value) | S.loaded_names(stmt.target)
                return live
            if stmt.target.id not in live:
                return None
            live |= S.loaded_names(stmt.value)
            return live
        live |= S.loaded_names(stmt)
        return live

    def header(self, stmt, after):
        return after | S.loaded_names(stmt.iter if isinstance(stmt, S.For) else stmt.test)

    def body(self, loop, needed):
        return needed - _targets(loop) if isinstance(loop, S.For) else needed

    def statement(self, stmt, live):
        before = super().statement(stmt, live)
        if self.remove and isinstance(stmt, S.If) and not stmt.body and not stmt.orelse and \
                isinstance(stmt.test, S.Name):
            return None  # both branches emptied: nothing left to choose
        if self.remove and isinstance(stmt, S.For) and all(map(S.is_comment, stmt.body)) \
                and not _targets(stmt) & live:
            # Only walks its sequence (a range or a list the reverse sweep walks
            # again): the primal of a loop whose values the adjoint reads anew.
            return None
        return before

    def loop(self, loop, after):
        remove, self.remove = self.remove, False
        head = super().loop(loop, after)
        self.remove = remove
        if remove:
            self.loops.append((head, after))
            self.run(loop.body, head)
            self.loops.pop()
        return head
