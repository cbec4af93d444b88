"""The numba backend: generated code that numba's nopython mode compiles, compiled
by ``numba.njit`` (``derivo.grad(f, backend="numba")``).

derivo's reverse and forward modes write plain Python.  :func:`nopython` rewrites
the generated functions of a module, before they are rendered, into the subset
numba types by construction:

- the one stack of mixed values becomes a typed stack per saved variable: the
  generated code pops each name exactly where it pushed it, in reverse order, so
  one LIFO per name pops the same values as the shared one.  A name one of whose
  assignments gives a float, whose pushes are bounded before the first (each in
  a top-level statement, or in a top-level ``for _ in range(...)`` of bounds not
  reassigned, outside any loop within it), saves into a float array of that
  bound and a count (``s_stack[s_top] = s; s_top += 1``); another name into a
  list that grows (``s_stack.append(s)`` ... ``s = s_stack.pop()``);
- ``for _ in reversed(range(n))`` becomes the counted ``range(n - 1, -1, -1)``;
- a name saved before its first assignment on some path starts as ``0``, not
  ``None`` (the placeholder is restored, never read: 0 unifies with an int, a
  float or a bool, so the name keeps one numba type);
- derivo's runtime helpers of numbers and ``math.factorial``, which numba does
  not know, get numba implementations (:data:`_IMPLEMENTED`,
  :func:`_register_implementations`); the generated code calls them unchanged;
- ``loops="reversible"``'s checked undos (``runtime.Undo`` objects) are written
  out as a step count, a typed list of the values saved, and the inverse
  (:func:`_inline_undos`).

- a checkpointed loop runs its schedule in compiled code, a ``for`` loop's
  counted one and a ``while`` loop's online one (:mod:`derivo.numba_checkpoints`,
  :func:`_compiled_checkpoints`), its tape on a typed stack.

What it cannot make nopython is refused with the construct named: the other runtime
helpers (a list's adjoint, an item's), generators (``derivo.vjp``'s pullback),
a called user function that reads a number from its globals (numba would
freeze it), and at a call whatever numba cannot type for its arguments.  Array code (a function that uses NumPy) keeps NumPy's
kernels: the API runs it with the Python backend and logs that it did (see
:func:`falls_back`).

:func:`compiled` compiles the generated functions, and the user functions they
call, once per argument signature (numba's dispatchers), kept with the
derivative; numba compiles the numbers they read as constants, so a changed one
compiles them again.  The generated functions compile with ``cache=True`` from a
file named by a digest of what their code depends on (:mod:`derivo.numba_cache`),
so the same derivative in a new process loads them from disk.  A module written
by ``save`` compiles with ``cache=True`` too (numba caches beside the file:
:func:`saved_module`).
"""

import ast
import builtins
import copy
import functools
import inspect
import logging
import math
import textwrap
import types

import numpy

from . import checkpoints, codegen, numba_cache, numba_checkpoints, runtime
from . import syntax as S
from .errors import DerivoError

LOG = logging.getLogger("derivo")

BACKENDS = ("python", "numba")
INSTALL = "pip install 'derivo[numba]'"

_implemented = []  # whether _register_implementations ran


def require():
    """The numba module, or a DerivoError saying how to install it."""
    try:
        import numba
    except ImportError:
        raise DerivoError("backend='numba' needs numba, an optional extra of derivo: "
                          "{}".format(INSTALL)) from None
    if not _implemented:
        _register_implementations(numba)
        numba_checkpoints.register(numba)
        _implemented.append(True)
    return numba


def check_backend(backend, loops):
    """Refuse a backend that is not one of :data:`BACKENDS`, a numba backend
    without numba, and loops it cannot compile; return ``backend``."""
    if backend not in BACKENDS:
        raise DerivoError("backend={!r}: choose one of {}".format(
            backend, ", ".join(map(repr, BACKENDS))))
    if backend == "numba":
        require()
    return backend


def falls_back(label, arrays):
    """Whether a derivative asked of the numba backend runs as Python instead:
    array code does (numba's element-wise kernels are slower than NumPy's), and
    says so in the log."""
    if arrays:
        LOG.info("backend='numba': %s uses NumPy; it runs as Python code with NumPy's "
                 "kernels (the numba backend compiles scalar and loop code)", label)
    return arrays


# --- the rewrite ------------------------------------------------------------------

def nopython(functions, namespace):
    """Rewrite the generated ``functions`` (gast FunctionDefs, in place) into code
    numba's nopython mode compiles; ``namespace`` is what their free names hold.
    Refuses what cannot be compiled (see the module docstring)."""
    for ident in ("range", "len"):  # the rewritten loops call the builtins by name
        if namespace.get(ident, getattr(builtins, ident)) is not getattr(builtins, ident):
            raise _refusal(functions[0], "code whose global {!r} is not the builtin".format(
                ident))
    for function in functions:
        _placeholders(function)
        _compiled_checkpoints(function, namespace)
        _typed_stacks(function, namespace)
        _counted_reverse_loops(function, namespace)
        _inline_undos(function, namespace)
        _refuse_python_only(function, namespace, {f.name for f in functions})


def _fresh(taken, ident):
    while ident in taken:
        ident += "_"
    taken.add(ident)
    return ident


#: the schedules of checkpoints.checkpointed_for, as numba_checkpoints numbers them
_SCHEDULE_CODES = {"revolve": 0, "halving": 1, "segments": 2}


def _compiled_checkpoints(function, namespace):
    """A checkpointed loop run by compiled code (:mod:`derivo.numba_checkpoints`):
    ``x1, v1 = checkpointed_for(push, f_trips, range(n), (x, v), (k,), ...)`` as
    ``(x1, v1), f_tape = checkpoint_forward(f_trips, range(n), (x, v), (k,), slots,
    schedule)`` and ``push(f_tape)``, and the tape's ``pop().reverse(f_trips_vjp,
    seeds, invariants=...)`` as ``f_tape = pop()`` and a call of
    ``checkpoint_reverse`` with the invariants' adjoints starting at 0.0; a
    ``while`` loop's ``checkpointed_while(push, f_trips, (x, v), (k,), slots=...)``
    and its tape's ``reverse(f_step_vjp, ...)`` alike, as ``online_forward`` and
    ``online_reverse``."""
    taken = {n.id for n in S.walk(function) if isinstance(n, S.Name)}
    tapes = {}  # a loop's VJP's name: (its tape's name, its trips function, its reverse)

    def rewrite(stmt):
        call = getattr(stmt, "value", None)
        if not isinstance(call, S.Call):
            return None
        callee = namespace.get(call.func.id) if isinstance(call.func, S.Name) else None
        if callee is checkpoints.checkpointed_for or callee is checkpoints.checkpointed_while:
            return _checkpoint_forward(stmt, call, namespace, taken, tapes)
        if isinstance(call.func, S.Attribute) and call.func.attr == "reverse" and \
                isinstance(call.func.value, S.Call) and not call.func.value.args:
            return _checkpoint_reverse(function, stmt, call, namespace, tapes)
        return None

    _in_blocks(function, rewrite)


def _while_forward(call):
    """The arguments of ``online_forward`` for a call of ``checkpointed_while``."""
    push, trips, state, invariants = call.args
    options = {k.arg: k.value.value for k in call.keywords}
    return push, trips, [trips, state, invariants, S.const(options.get("slots") or 0)]


def _for_forward(call):
    """The arguments of ``checkpoint_forward`` for a call of ``checkpointed_for``."""
    push, trips, iterations, state, invariants = call.args
    options = {k.arg: k.value.value for k in call.keywords}
    return push, trips, [trips, iterations, state, invariants,
                         S.const(options.get("slots") or 0),
                         S.const(_SCHEDULE_CODES[options.get("schedule", "revolve")])]


def _checkpoint_forward(stmt, call, namespace, taken, tapes):
    """A checkpointed loop's primal run (see _compiled_checkpoints)."""
    name, forward, *reverse, arguments, vjp_of = _COMPILED_SCHEDULES[namespace[call.func.id]]
    push, trips, values = arguments(call)
    vjp = vjp_of(trips.id)
    stem, _, number = trips.id.rpartition("_trips")
    tape = tapes[vjp][0] if vjp in tapes else _fresh(taken, (stem or trips.id) + "_tape" + number)
    tapes[vjp] = (tape, trips.id, reverse)
    value = S.call(_bound(namespace, name, forward), *values)
    target = S.tuple_([stmt.targets[0], S.store(tape)], store_ctx=True)
    out = [S.copy_location(S.assign(target, value), stmt)]
    if isinstance(push, S.Name):
        out.append(S.Expr(value=S.call(push.id, S.name(tape))))
    return out


def _checkpoint_reverse(function, stmt, call, namespace, tapes):
    """The reverse sweep of a checkpointed loop (see _compiled_checkpoints)."""
    vjp, seeds = call.args
    if vjp.id not in tapes or not isinstance(stmt, S.Assign):
        raise _refusal(function, "a checkpointed loop's tape used as {}".format(
            S.expr_source(call)))
    tape, trips, (name, reverse) = tapes[vjp.id]
    positions = next((k.value.value for k in call.keywords if k.arg == "invariants"), ())
    totals = S.tuple_([S.const(0.0) for _ in positions])
    return [S.copy_location(S.assign(S.store(tape), call.func.value), stmt),
            S.copy_location(S.assign(stmt.targets[0], S.call(
                _bound(namespace, name, reverse), S.name(tape), S.name(trips), vjp, seeds,
                totals)), stmt)]


def _step_vjp_of(trips):
    """The name of a while loop's step's VJP from its runner's: outline names
    them ``f_step`` and ``f_trips`` (numbered alike), transform their VJPs ``..._vjp``."""
    stem, _, number = trips.rpartition("_trips")
    return "{}_step{}_vjp".format(stem, number)


#: a Python schedule's function: (the name and function of the compiled one, those
#: of its reverse, the compiled one's arguments from the call, the name of the
#: loop's VJP from its runner's)
_COMPILED_SCHEDULES = {
    checkpoints.checkpointed_for: (
        "checkpoint_forward", numba_checkpoints.checkpoint_forward,
        "checkpoint_reverse", numba_checkpoints.checkpoint_reverse, _for_forward,
        lambda trips: trips + "_vjp"),
    checkpoints.checkpointed_while: (
        "online_forward", numba_checkpoints.online_forward,
        "online_reverse", numba_checkpoints.online_reverse, _while_forward, _step_vjp_of),
}

#: the compiled schedules' functions the generated code calls
_SCHEDULE_FUNCTIONS = (numba_checkpoints.checkpoint_forward,
                       numba_checkpoints.checkpoint_reverse,
                       numba_checkpoints.online_forward, numba_checkpoints.online_reverse)


def _bound(namespace, ident, value):
    """The name ``value`` has in ``namespace``, bound there as ``ident`` (or a
    variant of it) when it has none."""
    while namespace.get(ident, value) is not value:
        ident += "_"
    namespace[ident] = value
    return ident


def _stack_names(function):
    """(stack, push, pop): the names of the shared stack, or None without one."""
    for i, stmt in enumerate(function.body[:-2]):
        if isinstance(stmt, S.Assign) and isinstance(stmt.value, S.gast.List) and \
                not stmt.value.elts:
            push, pop = function.body[i + 1], function.body[i + 2]
            stack = stmt.targets[0].id
            if all(isinstance(s, S.Assign) and isinstance(s.value, S.Attribute) and
                   isinstance(s.value.value, S.Name) and s.value.value.id == stack
                   for s in (push, pop)):
                del function.body[i:i + 3]
                return stack, push.targets[0].id, pop.targets[0].id
    return None


def _typed_stacks(function, namespace):
    """The shared stack as one stack per saved name (see the module docstring):
    a float array and a count of the values on it for a name that holds a float
    and has a bound on its pushes (:func:`_capacity`), a list for the others."""
    names = _stack_names(function)
    if names is None:
        return
    stack, push, pop = names
    taken = {n.id for n in S.walk(function) if isinstance(n, S.Name)}
    pushes = _pushes_by_name(function, push)
    floats = _float_names(function, namespace)
    stacks, tops, start = {}, {}, []
    for ident in sorted(pushes):
        stacks[ident] = _fresh(taken, ident + "_stack")
        capacity = _capacity(function, pushes[ident]) if ident in floats else None
        if capacity is None:
            start.append(S.assign(stacks[ident], S.gast.List(elts=[], ctx=S.Load())))
            continue
        tops[ident] = _fresh(taken, ident + "_top")
        start += [S.assign(stacks[ident], S.call(S.attribute(
                      _numpy_name(namespace, taken), "empty"), capacity)),
                  S.assign(tops[ident], S.const(0))]

    def rewrite(stmt):
        if isinstance(stmt, S.Expr) and _calls(stmt.value, push):
            ident = stmt.value.args[0].id
            if ident not in tops:
                return [S.Expr(value=S.call(S.attribute(stacks[ident], "append"),
                                            S.name(ident)))]
            top = S.subscript(S.name(stacks[ident]), S.name(tops[ident]))
            top.ctx = S.gast.Store()
            return [S.assign(top, S.name(ident)), S.aug_add(tops[ident], S.const(1))]
        if isinstance(stmt, S.Assign) and _calls(stmt.value, pop):
            target = stmt.targets[0]
            if not isinstance(target, S.Name) or target.id not in stacks:
                raise _refusal(function, "a stack pop into {}".format(S.expr_source(target)))
            ident = target.id
            if ident not in tops:
                return [S.assign(ident, S.call(S.attribute(stacks[ident], "pop")))]
            return [S.gast.AugAssign(target=S.store(tops[ident]), op=S.gast.Sub(),
                                     value=S.const(1)),
                    S.assign(ident, S.subscript(S.name(stacks[ident]), S.name(tops[ident])))]
        return None

    _in_blocks(function, rewrite)
    leftover = [n for n in S.walk(function) if isinstance(n, S.Name) and
                n.id in (stack, push, pop)]
    if leftover:
        raise _refusal(function, "the stack used as a value ({})".format(leftover[0].id))
    function.body[:0] = start


def _pushes_by_name(function, push):
    """{saved name: [(the push, the top-level statement it is in, whether a loop
    inside that statement runs it), ...]}."""
    found = {}

    def visit(block, top, looped):
        for stmt in block:
            if isinstance(stmt, S.Expr) and _calls(stmt.value, push):
                saved = stmt.value.args[0]
                if not isinstance(saved, S.Name):
                    raise _refusal(function, "a stack push of {}".format(
                        S.expr_source(saved)))
                found.setdefault(saved.id, []).append((stmt, top or stmt, looped))
            inner = looped or (top is not None and isinstance(stmt, (S.For, S.gast.While)))
            for field in ("body", "orelse", "handlers", "finalbody"):
                if isinstance(getattr(stmt, field, None), list):
                    visit(getattr(stmt, field), top or stmt, inner)

    visit(function.body, None, False)
    return found


def _capacity(function, places):
    """The most values a name's pushes ``places`` push in one call, or None
    without a bound: one for a push in a top-level statement but a loop, and
    the trips of a top-level ``for _ in range(...)`` (its bounds constants or
    parameters never assigned) for a push inside it but not in a loop within."""
    params = {a.id for a in function.args.args}
    counts = S.store_counts(function)
    total = []
    for _, top, looped in places:
        if not isinstance(top, (S.For, S.gast.While)):
            total.append(S.const(1))
            continue
        if looped or not (isinstance(top, S.For) and _calls(top.iter, "range") and
                          not top.iter.keywords and all(
                              isinstance(a, S.Constant) and type(a.value) is int or
                              isinstance(a, S.Name) and a.id in params and counts[a.id] == 1
                              for a in top.iter.args)):
            return None
        total.append(S.call("len", S.call("range", *map(S.deepcopy, top.iter.args))))
    capacity = total[0]
    for term in total[1:]:
        capacity = S.binop(capacity, S.gast.Add(), term)
    return capacity


#: math's functions of numbers that return a float
_FLOAT_MATH = frozenset(
    "acos acosh asin asinh atan atan2 atanh cos cosh copysign degrees erf erfc exp expm1 "
    "fabs fmod gamma hypot lgamma log log10 log1p log2 pow radians sin sinh sqrt tan "
    "tanh".split())


def _float_names(function, namespace):
    """The names of ``function`` one of whose assignments gives a float (numba
    then types the name a float wherever the paths of its values meet; an
    assignment of another number is converted, as a list of them would be)."""
    assignments = [(n.targets[0].id, n.value) for n in S.walk(function)
                   if isinstance(n, S.Assign) and isinstance(n.targets[0], S.Name)]
    assignments += [(n.target.id, n) for n in S.walk(function)
                    if isinstance(n, S.gast.AugAssign) and isinstance(n.target, S.Name)]
    floats, grown = set(), True
    while grown:
        before = len(floats)
        floats |= {ident for ident, value in assignments if _gives_float(value, floats,
                                                                          namespace)}
        grown = len(floats) > before
    return floats


def _gives_float(node, floats, namespace):
    """Whether ``node`` (an expression, or an augmented assignment) gives a float
    (or a complex number, which an array stack of floats refuses) for any numbers
    its names hold, ``floats`` holding floats."""
    if isinstance(node, S.Constant):
        return type(node.value) is float
    if isinstance(node, S.Name):
        return node.id in floats
    if isinstance(node, (S.BinOp, S.gast.AugAssign)):
        left = node.left if isinstance(node, S.BinOp) else node.target
        right = node.right if isinstance(node, S.BinOp) else node.value
        return isinstance(node.op, S.gast.Div) or isinstance(
            node.op, (S.gast.Add, S.gast.Sub, S.gast.Mult, S.gast.Pow, S.gast.Mod)) and (
            _gives_float(left, floats, namespace) or _gives_float(right, floats, namespace))
    if isinstance(node, S.gast.UnaryOp) and isinstance(node.op, (S.gast.USub, S.gast.UAdd)):
        return _gives_float(node.operand, floats, namespace)
    if isinstance(node, S.Call) and isinstance(node.func, S.Attribute) and \
            isinstance(node.func.value, S.Name):
        return namespace.get(node.func.value.id) is math and node.func.attr in _FLOAT_MATH
    return False


def _numpy_name(namespace, taken):
    """The name the generated code reads NumPy by, NumPy under it in ``namespace``."""
    ident = "numpy"
    while namespace.get(ident) is not numpy and (ident in taken or ident in namespace):
        ident += "_"
    namespace[ident] = numpy
    taken.add(ident)
    return ident


def _calls(node, ident):
    return isinstance(node, S.Call) and isinstance(node.func, S.Name) and \
        node.func.id == ident


def _counted_reverse_loops(function, namespace):
    """``for i in reversed(range(...))``, also of the first ``trips`` of the range
    (``range(...)[:trips]``) or of a name holding a range, as a counted loop
    running down; ``reversed(xs)`` of a list or a tuple as ``xs[::-1]``."""
    ranges = _range_names(function)

    def is_call_of(node, builtin):
        return isinstance(node, S.Call) and isinstance(node.func, S.Name) and \
            namespace.get(node.func.id, getattr(builtins, node.func.id, None)) is builtin

    for node in S.walk(function):
        if not isinstance(node, S.For) or not is_call_of(node.iter, reversed):
            continue
        inner, trips = node.iter.args[0], None
        if isinstance(inner, S.Subscript) and is_call_of(inner.value, range) and \
                isinstance(inner.slice, S.Slice) and inner.slice.lower is None and \
                inner.slice.step is None:
            inner, trips = inner.value, inner.slice.upper
        if is_call_of(inner, range):
            node.iter = S.call(S.name(inner.func.id), *_down(inner.args, trips))
        elif isinstance(inner, S.Name) and inner.id in ranges:
            node.iter = S.call("range", *_down(
                [S.attribute(inner.id, "start"), S.attribute(inner.id, "stop"),
                 S.attribute(inner.id, "step")], S.call("len", S.name(inner.id))))
        else:
            node.iter = S.subscript(inner, S.Slice(lower=None, upper=None, step=S.const(-1)))


def _down(args, trips=None):
    """The arguments of the range that runs the first ``trips`` values of
    ``range(*args)`` (all of them for None) backwards."""
    start, step = (S.const(0), S.const(1)) if len(args) == 1 else \
        (args[0], args[2] if len(args) == 3 else S.const(1))
    unit = isinstance(step, S.Constant) and step.value == 1
    stop = args[len(args) > 1]
    if trips is None and unit and isinstance(stop, S.Constant):
        last = S.const(stop.value - 1)
    elif trips is None and unit:  # range(start, stop) down: stop - 1 to start
        last = S.binop(S.deepcopy(stop), S.gast.Sub(), S.const(1))
    else:  # start + (trips - 1) * step down to start, by -step
        trips = trips or S.call("len", S.call("range", *map(S.deepcopy, args)))
        steps = S.binop(trips, S.gast.Sub(), S.const(1))
        last = steps if _is_zero(start) and unit else S.binop(
            S.deepcopy(start), S.gast.Add(), steps if unit else S.binop(
                steps, S.gast.Mult(), S.deepcopy(step)))
    below = S.const(-1) if _is_zero(start) and unit else \
        S.binop(S.deepcopy(start), S.gast.Sub(), S.deepcopy(step))
    return [last, below, S.const(-1) if unit else S.neg(S.deepcopy(step))]


def _is_zero(node):
    return isinstance(node, S.Constant) and node.value == 0


def _placeholders(function):
    """The placeholders of names saved before they are assigned (``x = None``
    before the primal sweep, reverse.py's, which carry no source line) as
    ``x = 0``, or ``x = range(0)`` for a name that only ever holds a range."""
    ranges = _range_names(function)
    for stmt in function.body:
        if isinstance(stmt, S.Assign) and isinstance(stmt.value, (S.gast.List, S.Attribute)):
            continue  # the stack, its push and pop
        if not (isinstance(stmt, S.Assign) and isinstance(stmt.value, S.Constant) and
                stmt.value.value is None and getattr(stmt, "lineno", None) is None):
            break
        ident = stmt.targets[0].id
        stmt.value = S.call("range", S.const(0)) if ident in ranges else S.const(0)


def _range_names(function):
    """The names every assignment of which in ``function`` assigns a ``range(...)``,
    but their placeholders (None) and restores (a pop: a call without arguments)."""
    kinds = {}
    for node in S.walk(function):
        if isinstance(node, S.Assign) and isinstance(node.targets[0], S.Name) and \
                not (isinstance(node.value, S.Constant) and node.value.value is None) and \
                not (isinstance(node.value, S.Call) and not node.value.args):
            value = node.value
            is_range = isinstance(value, S.Call) and isinstance(value.func, S.Name) and \
                value.func.id == "range"
            kinds.setdefault(node.targets[0].id, set()).add(is_range)
    return {ident for ident, seen in kinds.items() if seen == {True}}


#: an update's operator, its inverse, and whether the inverse divides
_UNDONE = {"+": (S.gast.Add, S.gast.Sub, False), "-": (S.gast.Sub, S.gast.Add, False),
           "*": (S.gast.Mult, S.gast.Div, True), "/": (S.gast.Div, S.gast.Mult, False)}


def _inline_undos(function, namespace):
    """runtime.Undo, how ``loops="reversible"`` undoes ``x = x * e`` (``+ - /``) exactly
    or saves x, written out: ``undo_x = Undo('*')`` as a step count and a list of
    (count, x) saved, ``x = undo_x.step(x, e)`` as the update, saving x unless
    the inverse gives it back (a zero x is saved: -0.0 and 0.0 compare equal),
    and ``x = undo_x.back(x, e)`` as the saved x of this count, else the inverse."""
    undos = {}
    taken = {n.id for n in S.walk(function) if isinstance(n, S.Name)}
    for stmt in list(function.body):
        if isinstance(stmt, S.Assign) and isinstance(stmt.value, S.Call) and \
                isinstance(stmt.value.func, S.Name) and \
                namespace.get(stmt.value.func.id) is runtime.Undo:
            ident = stmt.targets[0].id
            names = {part: _fresh(taken, "{}_{}".format(ident, part))
                     for part in ("steps", "saved", "new", "operand")}
            undos[ident] = (_UNDONE[stmt.value.args[0].value], names)
            index = function.body.index(stmt)
            function.body[index:index + 1] = [
                S.assign(names["steps"], S.const(0)),
                S.assign(names["saved"], S.gast.List(elts=[], ctx=S.Load()))]
    if undos:
        _in_blocks(function, lambda stmt: _undone(stmt, undos))


def _in_blocks(tree, rewrite):
    """Replace each statement of every block of ``tree`` by ``rewrite(statement)``
    (a list of statements, or None to keep it)."""
    for node in list(S.walk(tree)):
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                new = []
                for stmt in block:
                    replaced = rewrite(stmt)
                    new += [stmt] if replaced is None else replaced
                block[:] = new


def _undone(stmt, undos):
    """The statements of an Undo's ``step`` or ``back`` (see :func:`_inline_undos`),
    or None for another statement."""
    call = getattr(stmt, "value", None)
    if not (isinstance(stmt, S.Assign) and isinstance(call, S.Call) and
            isinstance(call.func, S.Attribute) and isinstance(call.func.value, S.Name) and
            call.func.value.id in undos):
        return None
    (operation, inverse, divides), names = undos[call.func.value.id]
    steps, saved, new = names["steps"], names["saved"], names["new"]
    target, (old, operand) = stmt.targets[0].id, call.args
    prologue = []
    if not isinstance(operand, (S.Name, S.Constant)):
        prologue = [S.assign(names["operand"], operand)]
        operand = S.name(names["operand"])
    if call.func.attr == "step":
        back = S.binop(S.name(new), inverse(), S.deepcopy(operand))
        exact = S.gast.BoolOp(op=S.gast.And(), values=[
            S.gast.Compare(left=S.deepcopy(old), ops=[S.gast.NotEq()], comparators=[S.const(0)]),
            *([S.gast.Compare(left=S.deepcopy(operand), ops=[S.gast.NotEq()],
                              comparators=[S.const(0)])] if divides else []),
            S.gast.Compare(left=back, ops=[S.gast.Eq()], comparators=[S.deepcopy(old)])])
        return prologue + [
            S.gast.AugAssign(target=S.store(steps), op=S.gast.Add(), value=S.const(1)),
            S.assign(new, S.binop(S.deepcopy(old), operation(), S.deepcopy(operand))),
            S.if_(S.not_(exact), [S.Expr(value=S.call(S.attribute(saved, "append"), S.tuple_(
                [S.name(steps), S.deepcopy(old)])))]),
            S.assign(target, S.name(new))]
    top = S.subscript(S.subscript(S.name(saved), S.const(-1)), S.const(0))
    here = S.gast.BoolOp(op=S.gast.And(), values=[
        S.gast.Compare(left=S.call("len", S.name(saved)), ops=[S.gast.Gt()],
                       comparators=[S.const(0)]),
        S.gast.Compare(left=top, ops=[S.gast.Eq()], comparators=[S.name(steps)])])
    return prologue + [
        S.if_(here, [S.assign(target, S.subscript(S.call(S.attribute(saved, "pop")),
                                                  S.const(1)))],
              [S.assign(target, S.binop(S.deepcopy(old), inverse(), S.deepcopy(operand)))]),
        S.gast.AugAssign(target=S.store(steps), op=S.gast.Sub(), value=S.const(1))]


def _refuse_python_only(function, namespace, generated):
    """Refuse what numba cannot compile: derivo's runtime helpers (but those of
    :data:`_IMPLEMENTED`), generators."""
    for node in S.walk(function):
        if isinstance(node, (S.gast.Yield, S.gast.YieldFrom)):
            raise _refusal(function, "a generator")
        if not isinstance(node, S.Name) or node.id in generated:
            continue
        value = namespace.get(node.id)
        module = getattr(value, "__module__", None) or ""
        if module.startswith("derivo") and not _implemented_helper(value):
            raise _refusal(function, "derivo's runtime helper {}{}".format(
                node.id, _WHY.get(getattr(value, "__name__", None), "")))


#: what a runtime helper the backend refuses is there for
_WHY = {"add_at": " (a list's adjoint)", "add_at_in_place": " (a list's adjoint)",
        "getitem_vjp": " (an item's adjoint)"}


def _refusal(function, construct):
    return DerivoError(
        "backend='numba' cannot compile {} in the generated {}: differentiate it with "
        "backend='python'".format(construct, function.name))


# --- compiling --------------------------------------------------------------------

def compiled(namespace, names, name):
    """The Python function that calls numba's compilation of the generated
    function ``name`` with its arguments (the one a Derivative's entry guards),
    and its source.  The generated functions ``names`` of ``namespace`` and the
    user functions they call are compiled in a scope of their own (each calls
    the others' dispatchers); ``namespace`` keeps the Python functions, and the
    caller's ``derivo_python`` is the generated ``name`` as Python (what a
    derivative of this derivative differentiates)."""
    numba = require()
    function = namespace[name]
    code = function.__code__
    positional = code.co_varnames[:code.co_argcount]
    keywords = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
    params = ", ".join([*positional, *(["*"] if keywords else []), *keywords])
    arguments = ", ".join([*positional, *("{0}={0}".format(k) for k in keywords)])
    taken = set(codegen.names_used(code))
    dispatcher, refused = _fresh(taken, name + "_compiled"), _fresh(taken, "not_compiled")
    source = ("def {}({}):\n    try:\n        return {}({})\n"
              "    except numba.core.errors.NumbaError as error:\n"
              "        raise {}(error) from None\n").format(
                  name, params, dispatcher, arguments, refused)
    scope = {"numba": numba, refused: functools.partial(_not_compiled, name)}
    exec(codegen.compile_source(source, name + " calling numba"), scope)
    caller = scope[name]
    caller.__defaults__, caller.__kwdefaults__ = function.__defaults__, function.__kwdefaults__
    caller.derivo_python = function
    caller.derivo_recompile = functools.partial(
        # (a module numba's cache imports to rebuild a loaded function's environment)
        _compile, numba, dict(namespace, __name__=numba_cache.__name__), names, scope, name,
        dispatcher)
    caller.derivo_recompile(namespace)
    return caller, source


def _compile(numba, compiled, names, caller_scope, name, dispatcher, namespace, *scopes):
    """Compile the generated functions ``names`` in ``compiled`` (their scope)
    with the values of ``namespace``, and give the caller's scope and ``scopes``
    (a Derivative's entry's) the new dispatcher of ``name``; nothing when
    ``compiled`` holds those values already.
    numba compiles the numbers a function reads as constants: new values need a
    new compilation."""
    if dispatcher in caller_scope and all(
            compiled.get(ident) is value for ident, value in namespace.items()
            if not callable(value) and not inspect.ismodule(value)):
        return
    for ident, value in namespace.items():
        if inspect.isfunction(value) and ident not in names and not S.is_derivo(value):
            _refuse_frozen_reads(value)
            compiled[ident] = numba.njit(value)  # a user function the code calls
        elif ident not in names:
            compiled[ident] = value
    # (the Python functions, or the ones compiled before)
    functions = [getattr(compiled[ident], "py_func", compiled[ident]) for ident in names]
    path = numba_cache.source_file(functions, namespace, numba.__version__)
    for ident, function in zip(names, functions):
        code = function.__code__ if path is None else numba_cache.located(function.__code__,
                                                                          path)
        compiled[ident] = numba.njit(cache=path is not None)(types.FunctionType(
            code, compiled, function.__name__, function.__defaults__, function.__closure__))
    for scope in (caller_scope, *scopes):
        scope[dispatcher] = compiled[name]


def _refuse_frozen_reads(function):
    """Refuse a user function the generated code calls that reads a number from
    its globals: numba would compile it in as a constant, and derivo does not
    watch what the function reads when it runs (the generated code calls it)."""
    for ident in function.__code__.co_names:
        value = function.__globals__.get(ident)
        if ident in function.__globals__ and not callable(value) and \
                not inspect.ismodule(value):
            raise DerivoError(
                "backend='numba' would compile the global {!r} that {} reads as a constant, "
                "and not see it change: pass it to {} as an argument, or use "
                "backend='python'".format(ident, function.__qualname__, function.__name__))


def _not_compiled(name, error):
    """The refusal of a call numba could not compile the generated ``name`` for."""
    lines = [line for line in str(error).splitlines() if line.strip()]
    return DerivoError("backend='numba' could not compile the generated {} for these "
                       "arguments ({}); differentiate it with backend='python'".format(
                           name, lines[1].strip() if len(lines) > 1 else error))


# --- what numba does not implement ---------------------------------------------------

def _copysign_one(x):
    return math.copysign(1.0, x)


def _log(x):
    return math.log(x)


def _log_times(ans, x):
    if ans == 0:
        return 0.0
    return ans * math.log(x) if x > 0 else math.nan


def _scalar_seed(result):
    return 1.0


def _add_adjoints(first, second):
    return first + second


def _zero_gradient(like):
    return 0.0


#: derivo's runtime helpers of numbers, and what numba compiles for them
_IMPLEMENTED = {"copysign_one": _copysign_one, "log": _log, "log_times": _log_times,
                "scalar_seed": _scalar_seed, "zero_gradient": _zero_gradient,
                "add_adjoints": _add_adjoints}


def _implemented_helper(value):
    name = getattr(value, "__name__", None)
    return name in _IMPLEMENTED and getattr(runtime, name) is value or \
        any(value is f for f in _SCHEDULE_FUNCTIONS)


def _register_implementations(numba):
    """Give numba implementations of the functions derivo's generated code calls
    that numba does not know: a runtime helper of numbers (:data:`_IMPLEMENTED`),
    ``math.factorial``."""
    from numba import types
    from numba.extending import overload

    def of_numbers(implementation):
        def typer(*args):
            return implementation if all(isinstance(a, types.Number) for a in args) else None
        typer.__signature__ = inspect.signature(implementation)  # numba compares the two
        return typer

    for name, implementation in _IMPLEMENTED.items():
        overload(getattr(runtime, name))(of_numbers(implementation))

    overload(math.factorial)(
        lambda n: _factorial if isinstance(n, types.Integer) else None)


def _factorial(n):
    if n < 0:
        raise ValueError("factorial() not defined for negative values")
    if n > 20:  # Python's int grows; numba's int64 would wrap
        raise OverflowError("factorial() of more than 20 overflows int64")
    out = 1
    for k in range(2, n + 1):
        out *= k
    return out


# --- saved modules ------------------------------------------------------------------

_FACTORIAL_OF_INTS = """
@numba.extending.overload(math.factorial)
def factorial_of_ints(n):
    # numba's math has no factorial: numba compiles numba_factorial for one
    if isinstance(n, numba.types.Integer):
        return numba_factorial
"""


def saved_module(source, namespace, name, guard):
    """``(source, namespace)`` of a saved module of the numba backend: the
    generated functions of ``source`` compiled by ``@numba.njit(cache=True)``,
    the runtime helpers and ``math.factorial`` they call as numba code, and
    ``name`` (the derivative) a Python function that runs ``guard`` first (the
    statements refusing arrays, or "") and calls the compiled one."""
    numba = require()
    if any(value is f for value in namespace.values() for f in _SCHEDULE_FUNCTIONS):
        raise DerivoError(
            "{}: cannot save a checkpointed loop compiled by numba: the saved module would "
            "need derivo's compiled schedule; save the derivative made with "
            "backend='python' (the same code, run by CPython) or loops='stack'".format(name))
    tree = ast.parse(source)
    namespace = dict(namespace, numba=numba, math=math)
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    helpers = []
    for ident in sorted(used):
        if _implemented_helper(namespace.get(ident)):
            helpers.append(_renamed(_IMPLEMENTED[namespace.pop(ident).__name__], ident))
    if any(isinstance(node, ast.Attribute) and node.attr == "factorial" and
           namespace.get(getattr(node.value, "id", None)) is math for node in ast.walk(tree)):
        helpers += [_renamed(_factorial, "numba_factorial", ""), _FACTORIAL_OF_INTS.strip()]
    compiled = _fresh(set(used), name + "_compiled")
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    lines = source.splitlines(keepends=True)
    for function in reversed(functions):
        start = function.lineno - 1
        header = lines[start]
        if function.name == name:
            header = header.replace("def {}(".format(name), "def {}(".format(compiled), 1)
        lines[start] = "@numba.njit(cache=True)\n" + header
    caller = _saved_caller(next(f for f in functions if f.name == name), name, compiled,
                           guard)
    text = "\n\n".join(helpers + ["".join(lines).rstrip(), caller])
    return text + "\n", namespace


def _renamed(function, name, decorator="@numba.njit(cache=True)\n"):
    text = textwrap.dedent(inspect.getsource(function))
    return decorator + text.replace(
        "def {}(".format(function.__name__), "def {}(".format(name), 1).rstrip()


def _saved_caller(definition, name, compiled, guard):
    """The Python function ``name`` of ``definition``'s signature that runs
    ``guard`` and calls ``compiled`` with its arguments."""
    signature = copy.copy(definition)
    signature.name, signature.body, signature.decorator_list = name, [ast.Pass()], []
    header = ast.unparse(signature).splitlines()[0]
    arguments = [a.arg for a in definition.args.args] + [
        "{0}={0}".format(a.arg) for a in definition.args.kwonlyargs]
    body = textwrap.indent(guard, "    ") + "    return {}({})\n".format(
        compiled, ", ".join(arguments))
    return header + "\n" + body
