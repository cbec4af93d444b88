"""What changes memory in place, and derivo's refusals of the changes it cannot follow.

The rule (see the README): derivo changes an array in place only through the
name that owns it.  :func:`refuse_shared_writes` applies it to what the
ownership analysis (:func:`~derivo.memory.sharing_faults`) finds;
:func:`refuse_hidden_writes` refuses a change derivo cannot see at all (a method
that changes its object, ``np.copyto``, ``out=``, a helper that writes into what
it is given, read with :func:`parameter_writes`, unless the helper's derivative
writes into copies, read with :func:`derivative_writes`); :func:`refuse_writes_into_globals`
a write into memory the function does not bind.  Each takes the
``analyze.Analysis`` of the function, after activity.
"""

import bisect
import functools
import heapq
import inspect
import operator
import re

import numpy as np

from . import form, rules, trees
from . import syntax as S
from .activity import hashable
from .callees import given_functions, with_its_object
from .errors import DerivoError, SourceUnavailable, UnsupportedSyntax
from .memory import (Flow, all_params, arguments, helper_flow, is_numpy, sharing_faults,
                     summarized, user_function)
from .parse import GENERATED_PREFIX, MISSING
from .ssa import is_append
from .statements import assigned_names, changed_in, is_item_write


def refuse_shared_writes(analysis, writes=True):
    """Refuse an in-place change of memory another name refers to and reads
    afterwards (see :func:`~derivo.memory.sharing_faults`): Python's other
    name sees the change; the statement form gives each name a value and an
    adjoint of its own, so the derivative would be silently wrong.  An
    update (``y += e``) counts where either name may change a result (the
    statement form computes y + e anew); a write (``y[i] = v``,
    ``ys.append(v)``) where either is differentiated (the primal writes as
    Python does, the adjoints do not follow).  In forward mode (not
    ``writes``) the tangents of two names that both have one share memory as
    the values do, so a write counts only where the name written through has
    no tangent and the other has, where the other reaches a result with no
    tangent, or where the name written through is copied after its assignment
    (``stmt.owns``: the copy is not the memory the other name refers to).  A name that may be a
    row of the written array, or a number (``z = y[i]``), is checked as the
    primal runs (``shared_checks``)."""
    tree = analysis.normalized.tree
    faults = sharing_faults(tree, analysis.parsed, analysis.local_names,
                            analysis.scalars, analysis.arrays, analysis.lists)
    influential = analysis.activity.influential if faults else set()
    copied = {s.targets[0].id for s in S.walk(tree) if isinstance(s, S.Assign) and
              isinstance(s.targets[0], S.Name) and form.annotation(s, "owns")}
    for fault in faults:
        if fault.kind == "unowned":
            raise _in_user_names(analysis, fault.error(analysis.parsed,
                                                       _user_names(analysis).__contains__))
        update = fault.kind == "item update" or not (
            is_item_write(fault.stmt) or is_append(fault.stmt))
        if not update:
            # either name's value may vary and either may reach a result: the
            # write makes both vary; or the statement form writes into a copy of
            # name (ssa's stmt.owns) and other's value, which would not see the
            # write, reaches a result at all
            both = {fault.name, fault.other}
            lost = fault.name in copied and fault.other in influential
            if not (both & analysis.varied and both & analysis.useful or lost) or \
                    isinstance(fault.site, S.For):
                continue  # (a loop over what its body writes: plan_statements refuses it)
            # the write's tangent is lost, or other's value reaches a result unseen
            unfollowed = fault.name not in analysis.active and fault.other in analysis.active \
                or fault.other in analysis.useful and fault.other not in analysis.active
            if not writes and (fault.kind == "item" or fault.name not in copied and
                               not unfollowed):
                # (two tangents that share memory as their values do, unless the
                # write makes the written name's first tangent: forward checks)
                analysis.tangent_shares.setdefault(id(fault.stmt), []).append(
                    (fault.other, _in_user_names(analysis, fault.error(
                        analysis.parsed, _user_names(analysis).__contains__))))
                continue
        elif not (set(assigned_names(fault.stmt)) | {fault.other}) & influential:
            continue
        error = _in_user_names(analysis, fault.error(analysis.parsed,
                                                     _user_names(analysis).__contains__))
        site = fault.site
        if fault.kind == "item" and isinstance(site, S.Assign) and \
                isinstance(site.value, S.Subscript) and isinstance(site.value.value, S.Name) \
                and not {fault.name, fault.other} <= _aliases(analysis.normalized.tree,
                                                              S.single_target(site)):
            # z = y[i]: a number, a copy (y[mask]) or a row (a view) of y; only
            # the run tells, so the primal checks (see primal.PrimalSweep.block,
            # forward.Tangents.statement).  Two names of z itself share it whatever
            # it is: refused above.
            analysis.shared_checks[id(site)] = (site.value.value.id, str(error))
        else:
            raise error


def _aliases(tree, name):
    """``name`` and the names ``tree`` makes other names of its value by plain
    assignment (``b = a``, either way, transitively)."""
    copies = [(s.targets[0].id, s.value.id) for s in S.walk(tree)
              if S.single_target(s) and isinstance(s.value, S.Name)]
    found, grown = {name}, True
    while grown:
        grown = False
        for a, b in copies:
            if (a in found) != (b in found):
                found |= {a, b}
                grown = True
    return found


def refuse_writes_into_globals(analysis):
    """Refuse ``x[i] = v`` and ``x.append(v)`` into a name the function does
    not bind (a module global, an enclosing function's variable): memory
    derivo does not own, which the reverse sweep would change back.  Forward
    mode writes only what the function writes, but a differentiated value
    stored there has no tangent where it is read again (by a later call: a
    memoizing decorator's cache), so it refuses those writes."""
    tree = analysis.normalized.tree
    local = set(all_params(tree)) | {n.id for n in S.walk(tree) if isinstance(n, S.Name)
                                      and isinstance(n.ctx, S.Store)}
    for stmt in S.walk(tree):
        if is_item_write(stmt):
            written, value = stmt.targets[0].value.id, stmt.value
        elif is_append(stmt):
            written, value = stmt.value.func.value.id, stmt.value.args[0]
        else:
            continue
        differentiated = analysis.differentiable_names(value) & analysis.active
        if written not in local and (analysis.reverse or differentiated):
            owner = "an enclosing function's variable" if written in analysis.parsed.closure \
                else "a module global"
            raise analysis.parsed.error(
                UnsupportedSyntax, stmt, "cannot differentiate a write into {!r}, {}: "
                "derivo follows only changes to memory the function owns; write into a "
                "local copy ({}_copy = {}.copy(), or list({}) for a list)".format(
                    written, owner, written.lower(), written, written),
                "write into a global")


def refuse_writes_into_items(analysis, body, items):
    """A write into an item a loop takes from what it iterates over (``for row
    in Y: row[0] = v``): a row is a view, and the write changes Y too."""
    for stmt in S.walk(body):
        if isinstance(stmt, S.Assign) and (
                is_item_write(stmt) or analysis.arrays and form.annotation(stmt, "augmented")) \
                and assigned_names(stmt)[0] in items:
            raise analysis.parsed.error(
                UnsupportedSyntax, stmt, "cannot differentiate a write into {!r}, an item "
                "this loop takes from what it iterates over (a row is a view of its "
                "array): index the array instead".format(assigned_names(stmt)[0]),
                "write into a loop item")

def refuse_hidden_writes(analysis):
    """Refuse a change in place that derivo cannot see, to a value that reaches
    a result: a method call whose result is dropped (``xs.extend(v)``,
    ``x.fill(a)``, ``xs.sort()``; ``xs.append(v)`` is followed), a NumPy
    function that writes into its first argument (``np.copyto(x, v)``), or an
    ``out=`` argument.  Activity would not flow through it, and the
    derivative would silently miss it.  A differentiated call of a helper
    that writes into what it is given (``b = set_bnd(a)``) is followed where
    the helper's derivative writes into copies (:func:`_kept_by_the_derivative`)
    and the caller reads the argument no more: the adjoints of earlier lines
    then read the value they were computed with."""
    local = analysis.local_names
    for loop in S.walk(analysis.normalized.tree):
        if isinstance(loop, S.For) and isinstance(loop.target, S.Name) and \
                (S.loaded_names(loop.iter) | changed_in(loop.body)) & analysis.varied:
            items = {loop.target.id}
            for stmt in loop.body:  # and what ssa unpacked it into: item1[0], item1[1]
                if isinstance(stmt, S.Assign) and isinstance(stmt.targets[0], S.Name) and (
                        isinstance(stmt.value, S.Name) and stmt.value.id in items or
                        isinstance(stmt.value, S.Subscript) and
                        isinstance(stmt.value.value, S.Name) and
                        stmt.value.value.id in items and
                        isinstance(stmt.value.slice, S.Constant)):
                    items.add(stmt.targets[0].id)
            refuse_writes_into_items(analysis, loop.body, items)
    flow = None
    # calls whose results are differentiated: one derivo cannot read is refused
    # as such when its derivative is planned (not for what it may change)
    differentiated = {id(node) for stmt in S.walk(analysis.normalized.tree)
                      if isinstance(stmt, S.Assign) and set(assigned_names(stmt)) & analysis.active
                      for node in S.walk(stmt.value) if isinstance(node, S.Call)
                      and analysis.differentiable_names(node) & analysis.active}
    read_before = _read_by_adjoints(analysis)
    for node in S.walk(analysis.normalized.tree):
        changed = []  # expressions whose object the call changes
        if isinstance(node, S.Expr) and isinstance(node.value, S.Call) and \
                not is_append(node) and isinstance(node.value.func, S.Attribute):
            root = S.root_name(node.value.func.value)
            if root is not None and root.id in local:
                changed.append(node.value.func.value)
        # a helper may change what it is given or what that holds (for p in ps: p *= 2)
        handed = _arguments_a_helper_changes(analysis, node) \
            if isinstance(node, S.Call) and not (
                id(node) in differentiated and _unreadable(analysis.parsed.callee_key(node))) \
            else []
        if isinstance(node, S.Call):
            changed += _written_in_place(analysis.parsed, node)
        kept = _kept_by_the_derivative(analysis, node, handed) \
            if handed and id(node) in differentiated else set()
        if (changed or handed) and flow is None:
            flow = Flow(analysis.normalized.tree, analysis.parsed, local, analysis.scalars,
                        analysis.arrays)
        # (a change that involves nothing differentiated, keys.sort(), is harmless)
        for expression, deep in [(e, False) for e in changed] + [(e, True) for e in handed]:
            if analysis.is_scalar(expression):
                continue  # a number is never changed in place: callback(loss)
            # (at the call: what a local name for a method changes is read from
            # the name's assignment, fill = a.fill)
            names = flow.reached(expression, deep, at=node) & local  # w = xs; w.reverse()
            analysis.changed_by_call[id(node)] = \
                analysis.changed_by_call.get(id(node), set()) | names
            # (an adjoint of an earlier line reads a value the change changes,
            # whether or not the primal reads it again)
            read_by_adjoints = set() if id(expression) in kept else read_before(
                node, flow.reached(expression, deep, at=node, read_afterwards=False))
            if names & analysis.useful and (names | S.loaded_names(node)) & analysis.varied or \
                    read_by_adjoints:
                if deep and getattr(handed, "refusal", None) is not None:
                    raise handed.refusal
                raise _change_in_place(analysis, node, expression, names & analysis.useful)


def _kept_by_the_derivative(analysis, call, handed):
    """The ids of the arguments in ``handed`` that ``call`` changes but the
    code derivo runs for it leaves as they were: the callee's forward half
    (reverse mode) or its tangent function, which write into copies (see
    :func:`derivative_writes`).  A VJP that is not split runs the callee
    itself and then recomputes it from what it was given: none."""
    callee = form.annotation(call, "user_function") or analysis.parsed.callee_key(call)
    if analysis.reverse and not analysis.halves(callee):
        return set()
    return {id(e) for e in handed} - {
        id(e) for e in _arguments_a_helper_changes(analysis, call, derivative=True)}


def _read_by_adjoints(analysis):
    """A function of a node and a set of names: those of the names an adjoint
    may read the value of, the operands of operations (``np.clip(y, -1.0, c)``,
    ``y * c``) another of whose operands varies, in a top-level statement up to
    the node's (a change after all of them changes none)."""
    first = {}  # name -> the index of the first top-level statement with such a read
    position = {}  # id(node) -> the index of the top-level statement holding it
    for index, top in enumerate(analysis.normalized.tree.body):
        for stmt in S.walk(top):
            position[id(stmt)] = index
            if not (isinstance(stmt, S.Assign) and set(assigned_names(stmt)) & analysis.active):
                continue
            for node in S.walk(stmt.value):
                operands = [node.left, node.right] if isinstance(node, S.BinOp) else \
                    node.args + [k.value for k in node.keywords] \
                    if isinstance(node, S.Call) else []
                names = {o.id for o in operands if isinstance(o, S.Name)}
                if names & analysis.varied:
                    for name in names:
                        first.setdefault(name, index)

    def read_up_to(node, names):
        reached = position.get(id(node), -1)
        return {name for name in names if first.get(name, reached + 1) <= reached}
    return read_up_to


def _in_user_names(analysis, error):
    """``error`` with the names ssa made said as the user wrote what they hold:
    ``y`` for its version ``y1``, ``zip(y, a)`` for the loop's ``seq1``."""
    versions = dict(form.annotation(analysis.normalized.tree, "versions"))
    if not versions:
        return error
    pattern = r"\b(?:{})\b".format("|".join(map(re.escape, sorted(versions))))
    message = re.sub(pattern, lambda match: versions[match.group(0)], error.message)
    return type(error)(message, error.filename, error.lineno, error.col, error.construct)


def _change_in_place(analysis, node, expression, names):
    """The refusal of ``node``, which changes ``expression`` and so ``names``,
    in the user's words (``h(x * 2.0)``, not ssa's ``h(t1)``)."""
    line = analysis.parsed.source_line(getattr(node, "lineno", None))
    user_names = _user_names(analysis)
    call, changed = analysis.parsed.words(getattr(node, "value", node)), \
        analysis.parsed.words(expression)
    others = sorted(names & user_names - {changed})
    return analysis.parsed.error(
        UnsupportedSyntax, node, "cannot differentiate {!r}: it may change {}{} in "
        "place, which derivo does not follow (only x[i] = v and xs.append(v)); compute a "
        "new value and assign it, or give it a copy".format(
            call, repr(changed) if changed in line else "what it is given",
            " (and {}, which may share its memory)".format(", ".join(map(repr, others)))
            if others else ""),
        "change in place")

def _arguments_a_helper_changes(analysis, call, derivative=False):
    """The arguments given to a user function for the parameters it changes in
    place (``setfirst(y, v)`` with ``def setfirst(y, v): y[0] = v``), and all
    those given to a function derivo cannot read (see :func:`_arguments_changed_by`);
    ``derivative``: that its derivative changes, for a call derivo differentiates."""
    callee = form.annotation(call, "user_function") or analysis.parsed.callee_key(call)
    return _arguments_changed_by(analysis.parsed, call, callee, analysis.arrays,
                                 derivative=derivative)


def _user_names(analysis):
    """The names the user's function assigns or takes (not ssa's temporaries)."""
    return S.stored_names(analysis.parsed.tree) | set(all_params(analysis.parsed.tree))


class _Refused(list):
    """Every argument of a call of a user function whose source derivo refuses
    (a generator, say): it may change any; ``refusal`` is why derivo cannot tell,
    what a refusal of the call says."""

    def __init__(self, arguments, refusal):
        super().__init__(arguments)
        self.refusal = refusal


class _RefusedInside(set):
    """The parameters a function may change, one of whose helpers derivo refuses
    to read (see :class:`_Refused`)."""

    def __init__(self, names, refusal):
        super().__init__(names)
        self.refusal = refusal


def _arguments_changed_by(parsed, call, callee, arrays, seen=frozenset(), derivative=False):
    """The arguments of ``call`` (of ``callee``, resolved by ``parsed``) that it may
    change in place: those a user function changes (see :func:`parameter_writes`),
    be it called as a function, as a method of a user object (``FILLER.go(a)``),
    as a user object (``layer(a)``), as a class or through ``functools.partial``;
    what a function a local name was assigned changes (``zeros = np.zeros``); and
    every argument of a function derivo cannot read (``fn(a)``, fn a parameter,
    ``obj.go(a)`` of a method it does not know).  ``derivative``: what the
    derivative derivo makes of a user function changes (:func:`derivative_writes`)."""
    everything = [*call.args, *(k.value for k in call.keywords)]
    if isinstance(call.func, S.Name) and call.func.id in parsed.local_names and \
            callee is MISSING:  # (not a parameter said to hold callee: see Parsed.fixed)
        return _changed_through_a_local(parsed, call, arrays, seen)
    if _unreadable(callee):
        return everything  # FNS[0](a), obj.go(a) of a local obj, super().go(a)
    if trees.builds_a_record(callee):
        return []  # Params(w=w, b=b): stored, not changed
    if any(_changes_its_arguments(parsed, argument, arrays, seen) for argument in everything):
        return everything  # map(fill, [a]): fill is called with what map was given
    function, given = user_function(callee)
    if function is None or function in seen:
        return []
    function = with_its_object(function, callee)
    if not given:  # odeint(dynamics, y0): what odeint changes, calling dynamics
        seen, function = seen | {function}, given_functions(function, call, parsed) or function
    try:
        written = derivative_writes(function, arrays) if derivative else \
            _written(function, arrays, seen)
    except SourceUnavailable:  # no source: it may change any argument
        return everything
    except DerivoError as refusal:  # a source derivo refuses: likewise, and says why
        return _Refused(everything, refusal)
    changed = [argument for name, argument in arguments(call, function, given)
               if name in written]
    refusal = getattr(written, "refusal", None)  # (of a function it calls)
    return changed if refusal is None else _Refused(changed, refusal)


#: Types whose methods derivo knows: what they change is in _written_in_place
_KNOWN_TYPES = (np.ndarray, np.generic, list, tuple, dict, set, frozenset, str, bytes, int,
                float, complex)


def _unreadable(callee):
    """Whether derivo can neither look ``callee`` up nor knows it as a method."""
    return callee is MISSING or isinstance(callee, rules.Method) and \
        not _a_known_method(callee.name)


def _a_known_method(name):
    """Whether ``name`` is a method of a value derivo knows (a random generator's:
    ``rng.normal(scale=sigma)``), or NumPy's function of that name (``xp.exp(x)``,
    ``xp`` a parameter given ``np``)."""
    return any(hasattr(kind, name) for kind in _KNOWN_TYPES) or hasattr(np, name) or \
        any(hasattr(kind, name) for kind in _generators())


@functools.lru_cache(maxsize=None)
def _generators():
    # imported when first needed: numpy.random takes 10 ms to import
    import numpy.random
    import random
    return (numpy.random.Generator, numpy.random.RandomState, random.Random)


def _changes_its_arguments(parsed, value, arrays, seen):
    """Whether ``value``, given to a call, is a user function that changes one of
    its arguments in place (or a function derivo cannot read)."""
    if isinstance(value, S.gast.Lambda):
        return True
    if not isinstance(value, (S.Name, S.Attribute)) or \
            isinstance(S.root_name(value), S.Name) and S.root_name(value).id in parsed.local_names:
        return False
    callee = parsed.callee_key(S.call(value))
    function, _ = user_function(callee)
    if function is None or function in seen:
        return False
    function = with_its_object(function, callee)
    try:
        return bool(_written(function, arrays, seen))
    except DerivoError:
        return True


def _changed_through_a_local(parsed, call, arrays, seen):
    """The arguments ``call`` may change, its function a local name: what the
    value the name is assigned once changes, be it a function derivo can look up
    (``zeros = np.zeros``) or a method of a local value (``fill = y.fill``,
    which changes y); every argument when the name is a parameter or is assigned
    more than once or otherwise."""
    value = S.values_assigned_once(parsed.tree).get(call.func.id)
    callee = parsed.callee_key(S.call(value)) \
        if isinstance(value, (S.Name, S.Attribute)) else MISSING
    if callee is MISSING:
        return [*call.args, *(k.value for k in call.keywords)]
    if isinstance(callee, rules.Method):
        # fill = y.fill; fill(1.0) changes y, push = hs.append; push(h) grows hs
        # (derivo's own push = stack.append, in code it generated, is followed)
        return [value.value] if callee.name in _MUTATORS and \
            not parsed.filename.startswith(GENERATED_PREFIX) else []
    return _written_in_place(parsed, call, callee) + _arguments_changed_by(
        parsed, S.call(value, *call.args, keywords=call.keywords), callee, arrays, seen)


def _written(func, arrays, seen):
    """:func:`parameter_writes`, inside the reading of the functions ``seen``
    (which count as writing nothing, to end a recursion)."""
    return _parameter_writes(func, arrays, seen) if seen else parameter_writes(func, arrays)


@summarized
def parameter_writes(func, arrays):
    """The parameters ``func`` changes in place, read from its source: written
    into (``y[0] = v``, ``del y[0]``), appended to or given a method call as a
    statement (``ys.append(v)``, ``y[1:].fill(0.0)``), updated with ``+=`` and the
    like when values may be arrays, written by NumPy (``np.copyto(y, v)``,
    ``out=y``), or given to a user function that changes them; itself, or through
    another name that may share its memory (``w = y``, ``w = y[1:]``, ``for row
    in y``), read by the ownership analysis of its statement form (see
    :func:`~derivo.memory.helper_flow`).  Made once per function (see
    :func:`~derivo.memory.summarized`)."""
    return _parameter_writes(func, arrays, frozenset())


@summarized
def derivative_writes(func, arrays):
    """The parameters whose memory the derivative derivo makes of ``func`` may
    change: those :func:`parameter_writes` finds, but for what the statement
    form does not do in place: an item write or an append (ssa copies a
    parameter written on entry and any other written array that may not be
    new after its assignment) and an update ``y += e`` (computed anew)."""
    return _parameter_writes(func, arrays, frozenset(), in_copies=False)


def _parameter_writes(func, arrays, _seen, in_copies=True):
    """:func:`parameter_writes`, the functions ``_seen`` taken to write nothing;
    not ``in_copies``: :func:`derivative_writes`."""
    flow = helper_flow(func, arrays)
    parsed = flow.refs.parsed
    changed = []  # expressions whose object the function changes
    handed = []   # ... given to helpers that change them or what they hold
    refusal = None  # why derivo cannot read one of those helpers
    for node in S.walk(flow.tree):
        if isinstance(node, (S.Assign, S.gast.Delete)):
            for target in _flattened(node.targets):
                if isinstance(target, S.Attribute) or isinstance(target, S.Subscript) and (
                        in_copies or isinstance(node, S.gast.Delete)):
                    changed.append(target.value)
            if in_copies and flow.refs.is_update(node):  # y += e on an array
                changed.append(node.value.left)
        elif isinstance(node, S.Expr) and isinstance(node.value, S.Call) and \
                isinstance(node.value.func, S.Attribute) and (in_copies or not is_append(node)):
            changed.append(node.value.func.value)
        if not isinstance(node, S.Call):
            continue
        changed += _written_in_place(parsed, node)
        given = _arguments_changed_by(parsed, node, parsed.callee_key(node), arrays,
                                      _seen | {func})
        refusal = refusal or getattr(given, "refusal", None)
        handed += given
    written = set().union(*(flow.parameters(e, deep=False) for e in changed),
                          *(flow.parameters(e) for e in handed))
    return written if refusal is None else _RefusedInside(written, refusal)


def _flattened(targets):
    for target in targets:
        if isinstance(target, (S.Tuple, S.List)):
            yield from _flattened(target.elts)
        else:
            yield target.value if isinstance(target, S.gast.Starred) else target


#: Functions that write into their first argument (the shuffles are told by name,
#: see _written_in_place) and the names they give it
_WRITES_INTO_FIRST_ARGUMENT = (
    np.copyto, np.put, np.place, np.putmask, np.fill_diagonal, np.put_along_axis,
    operator.setitem, operator.delitem, operator.iadd, operator.iconcat, operator.isub,
    operator.imul, operator.imatmul, operator.itruediv, operator.ifloordiv, operator.imod,
    operator.ipow, heapq.heapify, heapq.heappush, heapq.heappop, heapq.heapreplace,
    heapq.heappushpop, bisect.insort_left, bisect.insort_right)
_FIRST_ARGUMENT_NAMES = ("dst", "a", "arr", "x")

#: Methods that change their object, called unbound (list.reverse(xs)) on these types
_MUTABLE_TYPES = (list, dict, set, bytearray, np.ndarray)
_MUTATORS = {"append", "extend", "insert", "remove", "pop", "popitem", "clear", "sort",
             "reverse", "update", "setdefault", "add", "discard", "intersection_update",
             "difference_update", "symmetric_difference_update", "fill", "partition", "put",
             "resize", "itemset", "setfield", "setflags", "byteswap", "__setitem__",
             "__delitem__"}


def _changes_its_object(callee):
    """Whether ``callee`` is a method of a list, dict, set or array, taken from its
    type, that changes the object it is given first (``np.ndarray.fill``)."""
    name = getattr(callee, "__name__", "")
    return getattr(callee, "__objclass__", None) in _MUTABLE_TYPES and (
        name in _MUTATORS or name.startswith("__i") and name.endswith("__"))


def _out_position(callee):
    """The position of the ``out`` argument of a NumPy function (np.cumsum's 3),
    of an array method (``a.cumsum``'s 2, told by name), or of a ufunc's
    ``reduce``, ``accumulate`` or ``reduceat``; or None."""
    if isinstance(callee, rules.Method):  # a.cumsum(0, None, out): np.cumsum's, less one
        function = getattr(np, callee.name, None)
        if isinstance(function, np.ufunc) or not is_numpy(function):
            return None
        position = _numpy_out_position(function)
        return position - 1 if position else None
    if isinstance(getattr(callee, "__self__", None), np.ufunc):
        return {"reduce": 3, "accumulate": 3, "reduceat": 4}.get(callee.__name__)
    return _numpy_out_position(callee) if is_numpy(callee) and hashable(callee) else None


@functools.lru_cache(maxsize=None)
def _numpy_out_position(function):
    try:
        params = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return None
    for position, param in enumerate(params):
        if param.kind not in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            return None
        if param.name == "out":
            return position
    return None


def _is_dunder(name):
    return name.startswith("__") and name.endswith("__")


def _written_in_place(parsed, call, callee=None):
    """The expressions whose object a call changes, as NumPy, ``random``,
    ``heapq`` and ``operator`` do: the first argument of ``np.copyto``, of
    ``np.add.at`` and the like, of ``heapq.heappush``, ``operator.setitem``, of a
    method that changes its object called from its type (``list.reverse(xs)``),
    and of a shuffle (NumPy's ``np.random.shuffle``, ``random.shuffle``, or any
    ``.shuffle(x)`` of a value derivo cannot look up, whatever it is); the object
    of a method that changes it, inside an expression too (``r = a.sort()``); a
    ufunc's outputs given after its inputs, the ``out`` argument given by
    position (``np.cumsum(a, 0, None, a)``, ``c.clip(0, 1, a)``), and any call's
    ``out=``.  ``callee``: what the call calls, when not what its function
    expression names (a local alias, ``cp = np.copyto``)."""
    callee = parsed.callee_key(call) if callee is None else callee
    owner = getattr(callee, "__self__", None)
    name = callee.name if isinstance(callee, rules.Method) else getattr(callee, "__name__", None)
    # Shuffles are told by name: np.random.shuffle is a method of NumPy's RandomState,
    # which leaves np.random unimported until a function calls it (importing it takes
    # 10 ms), and a Generator made in the function (rng.shuffle) is not looked up.
    shuffles = name == "shuffle" and (isinstance(callee, rules.Method) or type(
        owner).__module__.partition(".")[0] in ("numpy", "random"))
    written = []
    # np.add.at(x, i, v), and .at of a ufunc derivo cannot look up (op = np.add)
    at = name == "at" and (isinstance(owner, np.ufunc) or isinstance(callee, rules.Method))
    # xp.copyto(y, v), xp a name for NumPy derivo cannot look up (a parameter)
    numpy_by_name = isinstance(callee, rules.Method) and not hasattr(np.ndarray, name) and \
        getattr(np, name, None) in _WRITES_INTO_FIRST_ARGUMENT
    if callee in _WRITES_INTO_FIRST_ARGUMENT or shuffles or at or numpy_by_name or \
            _changes_its_object(callee):
        written += call.args[:1] or [k.value for k in call.keywords
                                     if k.arg in _FIRST_ARGUMENT_NAMES]
    # (xs.append(v) as a statement is followed; the caller looks at statements);
    # a dunder called by name (x.__iadd__(v)) may change its object, but indexing
    if isinstance(callee, rules.Method) and (name in _MUTATORS and name != "append" or
                                             _is_dunder(name) and callee != rules.GETITEM):
        written.append(call.func.value)
    if isinstance(callee, np.ufunc):
        written += call.args[callee.nin:]
    else:
        position = _out_position(callee)
        if position is not None:
            written += call.args[position:position + 1]
    for keyword in call.keywords:
        if keyword.arg == "out":
            written += keyword.value.elts if isinstance(keyword.value, S.Tuple) \
                else [keyword.value]
    return written
