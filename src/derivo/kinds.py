"""Value kinds: what a name of a function in statement form may hold.

Surely a scalar (with arrays around, a broadcast against a scalar needs no
reduction, and a number is never changed in place); a Python list (appended
to, or assigned one); a container, whose adjoint may be a list of adjoints
added element by element; a parameter read item by item, whose adjoint is
added into in place; and an index that surely holds an int.
"""

import collections
import functools
import math

import numpy as np

from . import form, rules, runtime
from . import syntax as S
from .ssa import CONSUMERS, is_append
from .statements import assigned_names, is_item_write, is_range

SCALAR_REDUCTIONS = (np.sum, np.mean, np.max, np.min, np.amax, np.amin, np.prod,
                     np.linalg.norm, np.trace, np.argmax, np.argmin, np.count_nonzero)
#: math functions of an iterable: the adjoint of a list given to one is a list
_MATH_OVER_ITERABLES = ("fsum", "prod", "dist", "sumprod")


class Kinds:
    """The kinds of the values of ``normalized`` (``arrays``: values may be
    arrays), given its ``activity``: ``scalars``, ``lists``, ``containers`` and
    ``read_item_by_item``, sets of names."""

    def __init__(self, normalized, arrays, activity):
        self.normalized = normalized
        self.parsed = normalized.parsed
        self.arrays = arrays
        self.activity = activity
        self._find_scalars()
        self._find_lists()
        self._find_read_item_by_item()

    def _find_scalars(self):
        """Names that surely hold a scalar (with arrays around, a broadcast against
        a scalar needs no reduction)."""
        assignments = [s for s in S.walk(self.normalized.tree) if isinstance(s, S.Assign)]
        loops = [s for s in S.walk(self.normalized.tree) if isinstance(s, S.For)]
        candidates = {s.targets[0].id for s in assignments if isinstance(s.targets[0], S.Name)}
        candidates |= {loop.target.id for loop in loops if is_range(loop.iter, self.parsed)}
        candidates -= set(S.param_names(self.normalized.tree))
        candidates -= {t.id for s in assignments if isinstance(s.targets[0], S.Tuple)
                       for t in s.targets[0].elts}
        candidates -= {loop.target.id for loop in loops if not is_range(loop.iter, self.parsed)}
        self.scalars = set(candidates)
        changed = True
        while changed:  # drop names with a non-scalar assignment until none is left
            changed = False
            for stmt in assignments:
                name = stmt.targets[0]
                if isinstance(name, S.Name) and name.id in self.scalars \
                        and not self.is_scalar(stmt.value):
                    self.scalars.discard(name.id)
                    changed = True

    def is_scalar(self, node):
        if isinstance(node, S.Constant):
            return isinstance(node.value, (int, float))
        if isinstance(node, S.Name):
            return node.id in self.scalars
        if isinstance(node, (S.BinOp, S.UnaryOp)) and not self.arrays:
            return True  # scalar code's arithmetic is of numbers (it refuses xs + ys)
        if isinstance(node, S.BinOp):
            return self.is_scalar(node.left) and self.is_scalar(node.right)
        if isinstance(node, S.UnaryOp):
            return self.is_scalar(node.operand)
        if isinstance(node, S.Subscript):  # x.shape[0]
            return isinstance(node.value, S.Attribute) and node.value.attr == "shape"
        if isinstance(node, S.Attribute):
            return node.attr in ("size", "ndim")
        if isinstance(node, S.Call):
            callee = self.parsed.callee_key(node)
            if getattr(callee, "__module__", None) == "math" or \
                    callee in (len, float, int, round, bool):
                return True
            if callee in (max, min, abs) and node.args and not node.keywords:
                return all(self.is_scalar(arg) for arg in node.args)
            if isinstance(callee, rules.Method):  # x.sum()
                return callee.name in ("sum", "mean", "max", "min", "prod", "argmax",
                                       "argmin", "item") and not node.args and not node.keywords
            reduction = callee in SCALAR_REDUCTIONS
            return reduction and len(node.args) == 1 and not node.keywords
        return False

    def _find_lists(self):
        """Names holding Python lists (appended to, or assigned a list), and
        containers: those, every indexed name, which may be a list too, every
        name given to a call of a user function (whose VJP gives back a list for
        a list), and every name given whole to ``sum``, ``max``... (a checkpointed
        loop's list is a list the function never appends to).  The adjoint of a
        container may be a list of adjoints, added element by element."""
        tree = self.normalized.tree
        assigned = [(s.targets[0].id, s.value) for s in S.walk(tree)
                    if isinstance(s, S.Assign) and isinstance(s.targets[0], S.Name)]
        self.lists = {s.value.func.value.id for s in S.walk(tree) if is_append(s)}
        self.lists |= {target for target, value in assigned if isinstance(value, S.List)}
        self.dicts = {target for target, value in assigned if isinstance(value, S.gast.Dict)}
        # ys = items1, e = owned(items): a copy holds what its source holds
        copies = [(target, self._copied_name(value)) for target, value in assigned
                  if self._copied_name(value) is not None]
        for kind in (self.lists, self.dicts):
            while any(source in kind and target not in kind for target, source in copies):
                kind |= {target for target, source in copies if source in kind}
        self.containers = self.lists | {n.value.id for n in S.walk(tree)
                                        if isinstance(n, (S.Subscript, S.Attribute))
                                        and isinstance(n.value, S.Name)
                                        and self._is_item_read(n)}
        # a copy and its source hold one object, read by item (seq1 = args; seq1[0])
        while any((target in self.containers) != (source in self.containers)
                  for target, source in copies):
            self.containers |= {name for pair in copies if set(pair) & self.containers
                                for name in pair}
        self.containers |= {argument.id for call in S.walk(tree) if isinstance(call, S.Call)
                            and form.annotation(call, "user_function") is not None
                            for argument in call.args + [k.value for k in call.keywords]
                            if isinstance(argument, S.Name)}
        self.containers |= {argument.id for call in S.walk(tree) if isinstance(call, S.Call)
                            for argument in self._iterated_whole(call)
                            if isinstance(argument, S.Name)}

    def _copied_name(self, value):
        """``y`` for ``y`` and for ``owned(y)`` (derivo's copy, in generated code)."""
        if isinstance(value, S.Name):
            return value.id
        if isinstance(value, S.Call) and len(value.args) == 1 and not value.keywords and \
                isinstance(value.args[0], S.Name) and \
                self.normalized.parsed.callee_key(value) is runtime.owned:
            return value.args[0].id
        return None

    def _is_item_read(self, node):
        """Whether ``node`` reads an item (``x[i]``) or a container's field (``p.w``)."""
        if isinstance(node, S.Subscript):
            return True
        site = self.activity.site(node)
        return site is not None and site.key == rules.FIELD

    def _iterated_whole(self, call):
        """The arguments ``call`` iterates whole: the first of ``sum(xs)``,
        ``max(xs)`` (not of ``max(a, b)``), both points of ``math.dist(p, q)``."""
        callee = self.parsed.callee_key(call)
        if callee is math.dist:
            return call.args
        if call.args and any(callee is c for c in CONSUMERS) and (
                len(call.args) == 1 or callee is sum):
            return call.args[:1]
        return []

    def _find_read_item_by_item(self):
        """Parameters that may hold containers, that the function never assigns,
        writes into, appends to or returns, and whose items it reads only where
        a number or an array goes: as operands of arithmetic or of a ``math``
        function or NumPy ufunc, directly or through a name used only so.  (An
        item that is a list itself, summed by ``sum`` or indexed, has a list for
        adjoint, which ``+=`` would not add; a list item in arithmetic, as in
        ``X[0] + X[1]``, joins lists, which derivo does not differentiate.)  Their
        adjoints can be added into in place, item by item (see
        ``item_adjoints.add_items_in_place``)."""
        tree = self.normalized.tree
        changed = S.stored_names(tree.body) | set(self.normalized.results) | {
            name for s in S.walk(tree) if is_item_write(s) for name in assigned_names(s)}
        candidates = set(S.param_names(tree)) & self.containers & self.activity.active - changed
        parents = {id(child): parent for parent in S.walk(tree)
                   for child in S.gast.iter_child_nodes(parent)}
        uses = collections.defaultdict(list)
        for node in S.walk(tree):
            if isinstance(node, S.Name) and isinstance(node.ctx, S.Load):
                uses[node.id].append(node)

        def numeric_use(node):
            parent = parents.get(id(node))
            if isinstance(parent, (S.BinOp, S.UnaryOp, S.Compare)):
                return True
            if isinstance(parent, S.Call) and node in parent.args:
                callee = self.parsed.callee_key(parent)
                return isinstance(callee, np.ufunc) or \
                    getattr(callee, "__module__", None) == "math" and \
                    callee.__name__ not in _MATH_OVER_ITERABLES
            return False

        for ident in sorted(candidates):
            for item in (n for n in uses[ident] if isinstance(parents.get(id(n)), S.Subscript)):
                read = parents[id(item)]
                holder = parents.get(id(read))
                if isinstance(holder, S.Assign) and isinstance(holder.targets[0], S.Name):
                    ok = all(map(numeric_use, uses[holder.targets[0].id]))
                else:
                    ok = read.value is item and numeric_use(read)
                if not ok:
                    candidates.discard(ident)
                    break
        self.read_item_by_item = sorted(candidates)

    def integral(self, index):
        """Whether ``index`` surely holds an int (or a tuple of them): a literal, or
        a name only ever assigned as the target of a loop over ``range``."""
        if isinstance(index, S.Tuple):
            return all(map(self.integral, index.elts))
        if isinstance(index, S.UnaryOp) and isinstance(index.op, S.USub):
            index = index.operand
        if isinstance(index, S.Constant):
            return type(index.value) is int
        return isinstance(index, S.Name) and index.id in self._counters

    @functools.cached_property
    def _counters(self):
        tree = self.normalized.tree
        stores = [n for n in S.walk(tree) if isinstance(n, S.Name) and
                  isinstance(n.ctx, (S.Store, S.gast.Param))]
        once = {name for name, count in collections.Counter(n.id for n in stores).items()
                if count == 1}
        ranges = {s.targets[0].id for s in S.walk(tree) if isinstance(s, S.Assign)
                  and isinstance(s.targets[0], S.Name) and s.targets[0].id in once
                  and is_range(s.value, self.parsed)}  # seq1 = range(n)
        by_range = {id(loop.target) for loop in S.walk(tree) if isinstance(loop, S.For) and (
            is_range(loop.iter, self.parsed) or isinstance(loop.iter, S.Name)
            and loop.iter.id in ranges)}
        return {n.id for n in stores if id(n) in by_range} - {
            n.id for n in stores if id(n) not in by_range}
