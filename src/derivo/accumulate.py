"""Which adjoint accumulators the generated code adds into in place.

The rule.  A statement ``bx = add_at(bx, g, x, i)`` (likewise ``add_field``,
``zeroed`` and ``bxs, last = pop_adjoint(bxs)``) calls the helper's in-place
form, ``add_at_in_place``, which changes the value bx holds, only where the
name ``bx`` *owns* that value: on every path that reaches the statement,

- ``bx`` was last bound to a value the generated code made itself: a number
  (immutable), the result of arithmetic, or of a helper that returns a new
  array or container (``getitem_vjp``, ``zeros_for``, ``add_at``,
  ``add_adjoints``, ``zeroed``...), or to what an in-place form returned
  for ``bx`` itself (the value it was given, or a new one);
- and since then no other name, container, view or callee may have come to
  hold that value: ``bx`` was not assigned to another name, put in a list,
  passed to a function other than derivo's runtime helpers and NumPy's (which
  keep nothing), yielded or returned.  A helper's result may hold or view its
  arguments (``part(bx, i)`` is a view of bx): it counts as holding them,
  unless arithmetic consumes it at once (``bv + part(bx, i)``).

Everything else (a parameter, the caller's seed, a primal value, another
adjoint, what a call returns) is added to functionally, into a new value,
which the name then owns.  An accumulator that enters a loop shared and would
be owned on every trip if it entered owned is copied once before the loop
(``bx = owned(bx)``), not on every trip.

The decision is a forward sweep of :mod:`derivo.dataflow` over the finished
gradient function, whose state is the set of names that own their values;
where paths meet, a name owns its value only if it does on each of them.
"""

import builtins
import functools
import types

from . import dataflow, runtime
from . import syntax as S

#: the helpers with an in-place form, runtime.<name>_in_place: the functional one
#: returns a new value; the in-place one, its first argument (changed) or a new value
FUNCTIONAL = (runtime.add_at, runtime.add_field, runtime.zeroed, runtime.pop_adjoint)
FORMS = tuple((helper, getattr(runtime, helper.__name__ + "_in_place")) for helper in FUNCTIONAL)
#: the helpers that return a pair, the new (or first) value and an item of it
_PAIRS = (runtime.pop_adjoint, runtime.pop_adjoint_in_place)
#: the other helpers whose result is a new value (or a number)
_NEW = FUNCTIONAL + (
    runtime.owned, runtime.add_adjoints, runtime.getitem_vjp, runtime.field_vjp, runtime.zeros_for,
    runtime.first_equal_vjp, runtime.sort_like, runtime.unsort, runtime.copy_vjp,
    runtime.sum_vjp, runtime.split_like, runtime.unstack, runtime.hstack_vjp, runtime.vstack_vjp)
#: helpers whose result is a new value, or their first argument or a view of it:
#: new when that argument is (the in-place forms check that a view is writable)
_THROUGH = (runtime.unbroadcast, runtime.zero_as, runtime.shaped_like, runtime.part,
            runtime.expand)
#: builtins that keep no reference to their arguments beyond their result
_BUILTINS = {getattr(builtins, name) for name in (
    "len", "range", "reversed", "enumerate", "zip", "isinstance", "type", "list", "tuple",
    "float", "int", "bool", "abs", "min", "max", "sum", "any", "all")}
#: libraries whose functions keep no reference to their arguments beyond their result
_LIBRARIES = ("numpy", "math", "cmath", "scipy")


def add_in_place(function, namespace, bind):
    """Rewrite, in the generated ``function``, each ``bx = add_at(bx, ...)`` (or
    another of FUNCTIONAL) whose ``bx`` owns its value into the helper's
    in-place form, and each in-place form whose ``bx`` does not (differentiated
    again, a gradient's own updates may be pushed and read back) into the
    functional one; ``namespace`` is the generated module's and ``bind(name)``
    gives the name the code calls a :mod:`derivo.runtime` helper by."""
    sweep = _Owners(namespace, function)
    sweep.track(function)
    if not sweep.tracked:
        return  # no update to rewrite
    sweep.run(function.body, frozenset())
    for stmt in [stmt for stmt, _ in sweep.before.values()]:
        if not sweep.owns(stmt):
            _own_before_a_loop(function, stmt, sweep, bind)
    for stmt, _ in sweep.before.values():
        functional, in_place = _forms(sweep.helper(stmt.value))
        stmt.value.func = S.name(bind((in_place if sweep.owns(stmt) else functional).__name__))


def _own_before_a_loop(function, stmt, sweep, bind):
    """``bx = owned(bx)`` (a copy) before the outermost loop around ``stmt`` where
    that makes ``stmt`` own bx on every trip: a loop whose accumulator enters it
    shared then copies it once, not on every trip."""
    target = sweep.receiver(stmt)
    for block, index in dataflow.enclosing(function.body, stmt)[:-1]:
        if not isinstance(block[index], dataflow.LOOPS):
            continue
        copy = S.copy_location(S.assign(target, S.call(bind("owned"), S.name(target))),
                               block[index])
        block.insert(index, copy)
        sweep.rerun(function.body)
        if sweep.owns(stmt):
            return
        del block[index]
        sweep.rerun(function.body)


class _Owners(dataflow.Forward):
    """The names that own their values (a frozenset), before each statement."""

    def __init__(self, namespace, function):
        self.namespace, self.function = namespace, function
        self.before = {}  # id(update) -> (the update, the names owning their values before it)
        self.tracked = set()  # the names the state may hold

    @functools.cached_property
    def local(self):
        """The function's parameters and the names it assigns (the rewrites add
        none: a copy before a loop assigns the update's receiver)."""
        args = self.function.args
        return S.stored_names(self.function.body) | {a.id for a in args.args + args.kwonlyargs}

    def track(self, function):
        """Hold in the state only the names ``function``'s updates change: whether
        a name owns its value depends on no other name's, and is asked only of
        an update's receiver (so the state stays small, not every name assigned)."""
        self.tracked = {self.receiver(stmt) for stmt in S.statements(function)
                        if self.receiver(stmt) and _forms(self.helper(stmt.value))}

    def rerun(self, body):
        self.before = {}
        self.run(body, frozenset())

    def owns(self, update):
        """Whether the update ``update`` (one of FORMS) owns the value it changes."""
        return self.keeps_owning(update.value, self.receiver(update), self.before[id(update)][1])

    def join(self, one, other):
        return one & other

    def at(self, stmt, state):
        if self.receiver(stmt) and _forms(self.helper(stmt.value)):
            self.before[id(stmt)] = (stmt, state)  # a loop's last pass has its fixpoint

    def enter(self, stmt, state):
        if isinstance(stmt, S.For):  # the target may view the iterable (rows of an array)
            return state - self.kept(stmt.iter)
        return state - self.escaped(stmt.test)

    def enter_body(self, loop, state):
        return state - S.stored_names(loop.target) if isinstance(loop, S.For) else state

    def simple(self, stmt, state):
        if isinstance(stmt, S.Assign):
            target = self.receiver(stmt)
            owns = target is not None and (
                self.new(stmt.value) or self.keeps_owning(stmt.value, target, state))
            state = state - self.kept(stmt.value) - S.stored_names(stmt)
            for node in stmt.targets:  # bx[i] = v changes the value bx owns
                state -= self.escaped(node)
            return state | {target} if owns and target in self.tracked else state
        if isinstance(stmt, S.AugAssign):  # x += e, x[i] += e: e is consumed
            return state - self.escaped(stmt.value) - self.escaped(stmt.target)
        if isinstance(stmt, S.Expr):  # the result is dropped
            return state - self.escaped(stmt.value)
        # a return, a nested function, anything else: all it reads may be kept
        return state - S.loaded_names(stmt) - S.stored_names(stmt)

    # --- expressions ---------------------------------------------------------------

    def receiver(self, stmt):
        """The name an assignment binds its value to: ``bx`` in ``bx = e``, and in
        ``bxs, last = pop_adjoint(bxs)`` (of the pair, only the first is new);
        else None."""
        if not isinstance(stmt, S.Assign):
            return None
        target = stmt.targets[0]
        if len(stmt.targets) == 1 and isinstance(target, S.Tuple) and target.elts and \
                isinstance(target.elts[0], S.Name) and \
                any(self.helper(stmt.value) is pair for pair in _PAIRS):
            return target.elts[0].id
        return S.single_target(stmt)

    def helper(self, node):
        """The object a call ``node`` calls, when its function is a name the
        module binds (not a local variable); else None."""
        if isinstance(node, S.Call) and isinstance(node.func, S.Name) and \
                node.func.id not in self.local:
            return self.namespace.get(node.func.id, getattr(builtins, node.func.id, None))
        return None

    def new(self, node):
        """Whether ``node``'s value is new (nothing else holds it) or a number."""
        if isinstance(node, (S.Constant, S.BinOp, S.UnaryOp, S.Compare)):
            return True
        helper = self.helper(node)
        return any(helper is h for h in _NEW) or any(helper is h for h in _THROUGH) and \
            bool(node.args) and self.new(node.args[0])

    def keeps_owning(self, node, target, owned):
        """Whether ``target = node`` leaves ``target`` owning its value: a helper
        that returns its first argument, ``target`` owning it, or a new value;
        no other argument may hold or keep ``target``."""
        if not _forms(self.helper(node)) or not node.args or target is None:
            return False
        first, rest = node.args[0], node.args[1:] + [k.value for k in node.keywords]
        return isinstance(first, S.Name) and first.id == target and target in owned and \
            not any(target in self.kept(arg) for arg in rest)

    def kept(self, node):
        """The names whose values ``node``'s value, or something else afterwards,
        may hold or view."""
        held, escaped = self.references(node)
        return held | escaped

    def escaped(self, node):
        """The names whose values something other than ``node``'s value may keep."""
        return self.references(node)[1]

    def references(self, node):
        """(held, escaped): the names whose values ``node``'s value may hold or view,
        and those a callee or a closure may keep elsewhere."""
        if node is None or isinstance(node, S.Constant):
            return set(), set()
        if isinstance(node, S.Name):
            return ({node.id} if isinstance(node.ctx, S.Load) else set()), set()
        if isinstance(node, (S.BinOp, S.UnaryOp, S.Compare)):  # a new value: operands consumed
            return set(), set().union(*map(self.escaped, _operands(node)))
        if isinstance(node, S.Call) and not self.keeps_nothing(node.func):
            loaded = S.loaded_names(node)
            return loaded, loaded
        if isinstance(node, (S.Call, S.Subscript, S.Attribute, S.Starred, S.gast.IfExp,
                             S.gast.BoolOp, S.Tuple, S.gast.List, S.gast.Set, S.gast.Dict,
                             S.gast.Slice)):
            parts = [self.references(n) for n in _operands(node)]
            return set().union(*(h for h, _ in parts)), set().union(*(e for _, e in parts))
        loaded = S.loaded_names(node)  # a lambda, a comprehension, a yield: may keep all it reads
        return loaded, loaded

    def keeps_nothing(self, func):
        """Whether calling ``func`` keeps no reference to the arguments beyond its
        result: derivo's runtime helpers, the builtins above, functions of NumPy,
        math and SciPy."""
        if isinstance(func, S.Name):
            if func.id in self.local:
                return False
            obj = self.namespace.get(func.id, getattr(builtins, func.id, None))
            return isinstance(obj, types.FunctionType) and obj.__module__ in (
                "derivo.runtime", "derivo.trees") or any(obj is b for b in _BUILTINS)
        root = func
        while isinstance(root, S.Attribute):
            root = root.value
        module = self.namespace.get(root.id) if isinstance(root, S.Name) and \
            root.id not in self.local else None
        return isinstance(module, types.ModuleType) and \
            module.__name__.partition(".")[0] in _LIBRARIES


def _forms(helper):
    """(the functional helper, its in-place form) when ``helper`` is one of the
    two; else None."""
    return next((pair for pair in FORMS if any(helper is form for form in pair)), None)


def _operands(node):
    """The expressions directly inside ``node`` (a call's keyword arguments too)."""
    children = [child for child in S.gast.iter_child_nodes(node) if isinstance(child, S.gast.expr)]
    if isinstance(node, S.Call):
        children += [keyword.value for keyword in node.keywords]
    return children
