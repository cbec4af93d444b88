"""Stage 3: what the modes must compute, read and save, in phases.

``analyze`` runs the phases of :data:`PHASES` that a mode needs over a function
in statement form (see ``ssa``) and returns their findings as one
:class:`Analysis`.  Each phase's logic is a module of its own:

``activity``
    which names vary with the differentiated arguments and reach a result;
``indexing``
    for loops over active values rewritten to index them (between two rounds
    of activity, since only activity says which loops need it);
``kinds``
    which names surely hold scalars, lists, containers, integers;
``plans``
    for each active assignment, which sub-expressions are active, which rule
    differentiates each, and which values its adjoint recomputes or reads;
``saving``
    which assignments the reverse sweep must save (or can undo) the value they
    overwrite, and which loops and branches it reverses.

This module keeps the refusals of in-place changes of memory that more than
one name refers to (another name for an array, ``z = y``, ``y.T``, a view
``y[1:3]``, read after a write into the memory the two share: the write would
change z in Python, but z's adjoint would never hear of it), and of joined
sequences.
"""

import bisect
import functools
import heapq
import inspect
import operator

import numpy as np

from . import form, rules, trees
from . import syntax as S
from .activity import Activity, hashable as _hashable
from .errors import DerivoError, UnsupportedSyntax
from .indexing import Indexing
from .kinds import Kinds
from .memory import (Memory, all_params, arguments, is_numpy, is_user_function,
                     sharing_faults, user_function)
from .parse import GENERATED_PREFIX, MISSING, parse
from .plans import Planner
from .saving import Saving
from .ssa import is_append, normalize
from .statements import assigned_names, is_item_write, names_of as _names, tree_params


class Analysis:
    """What the phases found about ``normalized``, differentiated with respect
    to the parameters ``wrt`` (``arrays``: values may be arrays; ``loops``: the
    strategy of reverse mode; ``reverse``: a reverse sweep runs the loops
    backwards): ``activity``, ``kinds``, ``planner`` (with its ``plans`` and
    ``calls``), ``saving``, and ``shared_checks``, {id(z = y[i]): (y, message)}
    for a view the primal refuses as it runs."""

    def __init__(self, normalized, wrt, arrays=False, loops="stack", reverse=True):
        self.normalized = normalized
        self.reverse = reverse
        self.arrays = arrays
        self.parsed = normalized.parsed
        self.wrt = list(wrt)
        self.loops = loops
        self.shared_checks = {}
        # Every local of the statement form: the user's, and those ssa and inline added.
        self.local_names = self.parsed.local_names | {
            n.id for n in S.walk(normalized.tree) if isinstance(n, S.Name)
            and isinstance(n.ctx, (S.Store, S.gast.Param))}
        self.activity = Activity(normalized, self.local_names)
        self.kinds = self.planner = self.saving = None
        self.plans, self.calls = {}, []

    # --- sharing -----------------------------------------------------------

    def refuse_shared_writes(self, writes=True):
        """Refuse an in-place change of memory another name refers to and reads
        afterwards (see :func:`~derivo.memory.sharing_faults`): Python's other
        name sees the change; the statement form gives each name a value and an
        adjoint of its own, so the derivative would be silently wrong.  An
        update (``y += e``) counts where either name may change a result (the
        statement form computes y + e anew); a write (``y[i] = v``,
        ``ys.append(v)``) where either is differentiated (the primal writes as
        Python does, the adjoints do not follow), reverse mode only
        (``writes``: tangents share memory as the values do).  A name that may
        be a row of the written array, or a number (``z = y[i]``), is checked as
        the primal runs (``shared_checks``)."""
        faults = sharing_faults(self.normalized.tree, self.parsed, self.local_names,
                                self.scalars, self.arrays, self.lists)
        for fault in faults:
            if fault.kind == "unowned":
                raise fault.error(self.parsed, self._user_names.__contains__)
            if is_item_write(fault.stmt) or is_append(fault.stmt):
                if not writes or not {fault.name, fault.other} & self.active or \
                        isinstance(fault.site, S.For):
                    continue  # (a loop over what its body writes: plan_statements refuses it)
            elif not {fault.stmt.targets[0].id, fault.other} & self._influential:
                continue
            error = fault.error(self.parsed, self._user_names.__contains__)
            site = fault.site
            if fault.kind == "item" and not writes:
                continue  # (tangents share memory as the values do)
            if fault.kind == "item" and isinstance(site, S.Assign) and \
                    isinstance(site.value, S.Subscript) and isinstance(site.value.value, S.Name):
                # y[i]: a number, a copy (y[mask]) or a row (a view) of y; only
                # the run tells, so the primal checks (see reverse.Sweep.primal)
                self.shared_checks[id(site)] = (site.value.value.id, str(error))
            else:
                raise error

    def refuse_joined_sequences(self):
        """Refuse ``+`` or ``*`` of a differentiated list or tuple the function
        builds (``[a, b] + [c]``, ``[a] * 3``, ``xs + ys`` with xs appended to):
        Python joins or repeats it, while the adjoints of + and * are those of
        numbers and arrays, so the derivative would be silently wrong.  (A list
        the caller passes is checked when the call comes: see
        :func:`sequence_arithmetic`.)"""
        tuples = {s.targets[0].id for s in S.walk(self.normalized.tree)
                  if isinstance(s, S.Assign) and isinstance(s.targets[0], S.Name)
                  and isinstance(s.value, S.Tuple)}
        for node in S.walk(self.normalized.tree):
            if not (isinstance(node, S.BinOp) and isinstance(node.op, (S.Add, S.Mult))):
                continue
            for operand in (node.left, node.right):
                built = isinstance(operand, (S.List, S.Tuple, S.gast.ListComp)) or \
                    isinstance(operand, S.Name) and operand.id in self.lists | tuples or \
                    isinstance(operand, S.Call) and \
                    self.parsed.callee_key(operand) in (list, tuple, sorted)
                if built and self.differentiable_names(operand) & self.active:
                    raise _joined_sequence_error(self.parsed, node, operand)

    def refuse_writes_into_globals(self):
        """Refuse ``x[i] = v`` and ``x.append(v)`` into a name the function does
        not bind (a module global, an enclosing function's variable): memory
        derivo does not own, which the reverse sweep would change back.  (Forward
        mode writes only what the function writes.)"""
        tree = self.normalized.tree
        local = set(tree_params(tree)) | {n.id for n in S.walk(tree) if isinstance(n, S.Name)
                                          and isinstance(n.ctx, S.Store)}
        for stmt in S.walk(tree):
            if is_item_write(stmt):
                written = stmt.targets[0].value.id
            elif is_append(stmt):
                written = stmt.value.func.value.id
            else:
                continue
            if written not in local:
                owner = "an enclosing function's variable" if written in self.parsed.closure \
                    else "a module global"
                raise self.parsed.error(
                    UnsupportedSyntax, stmt, "cannot differentiate a write into {!r}, {}: "
                    "derivo follows only changes to memory the function owns; write into a "
                    "local copy ({}_copy = {}.copy(), or list({}) for a list)".format(
                        written, owner, written.lower(), written, written),
                    "write into a global")

    # --- the phases --------------------------------------------------------

    def compute_activity(self):
        """Which names are active; a loop over an active value is indexed (see
        ``indexing``), activity computed again, and a write into its item refused."""
        self.activity.propagate(self.wrt)
        indexing = Indexing(self.normalized, self.activity, self.reverse)
        if indexing.run():
            self.local_names.update(indexing.new_names)
            self.activity.propagate(self.wrt)
        for body, items in indexing.items:
            self._refuse_writes_into_items(body, items)

    def compute_kinds(self):
        """What each name may hold (see ``kinds``)."""
        self.kinds = Kinds(self.normalized, self.arrays, self.activity)

    def plan_statements(self):
        """How each active assignment is differentiated (see ``plans``)."""
        self.planner = Planner(self.normalized, self.arrays, self.loops, self.activity,
                               self.kinds, self.reverse)
        self.planner.plan_statements()
        self.plans, self.calls = self.planner.plans, self.planner.calls

    def compute_saving(self):
        """What the reverse sweep saves or undoes (see ``saving``)."""
        self.saving = Saving(self.normalized, self.loops, self.activity, self.planner)

    # --- what the phases found, as the refusals and the modes read it --------

    @property
    def active(self):
        return self.activity.active

    @property
    def varied(self):
        return self.activity.varied

    @property
    def useful(self):
        return self.activity.useful

    def differentiable_names(self, expr):
        return self.activity.differentiable_names(expr)

    @property
    def scalars(self):
        return self.kinds.scalars

    @property
    def lists(self):
        return self.kinds.lists

    @property
    def containers(self):
        return self.kinds.containers

    def is_scalar(self, node):
        return self.kinds.is_scalar(node)

    # --- in-place changes ------------------------------------------------------

    def _refuse_writes_into_items(self, body, items):
        """A write into an item a loop takes from what it iterates over (``for row
        in Y: row[0] = v``): a row is a view, and the write changes Y too."""
        for stmt in S.walk(body):
            if isinstance(stmt, S.Assign) and (
                    is_item_write(stmt) or self.arrays and form.annotation(stmt, "augmented")) \
                    and assigned_names(stmt)[0] in items:
                raise self.parsed.error(
                    UnsupportedSyntax, stmt, "cannot differentiate a write into {!r}, an item "
                    "this loop takes from what it iterates over (a row is a view of its "
                    "array): index the array instead".format(assigned_names(stmt)[0]),
                    "write into a loop item")

    def _refuse_hidden_writes(self):
        """Refuse a change in place that derivo cannot see, to a value that reaches
        a result: a method call whose result is dropped (``xs.extend(v)``,
        ``x.fill(a)``, ``xs.sort()``; ``xs.append(v)`` is followed), a NumPy
        function that writes into its first argument (``np.copyto(x, v)``), or an
        ``out=`` argument.  Activity would not flow through it, and the
        derivative would silently miss it."""
        local = self.local_names
        for loop in S.walk(self.normalized.tree):
            if isinstance(loop, S.For) and isinstance(loop.target, S.Name) and \
                    (_names(loop.iter) | S.stored_names(loop.body)) & self.varied:
                items = {loop.target.id}
                for stmt in loop.body:  # and what ssa unpacked it into: item1[0], item1[1]
                    if isinstance(stmt, S.Assign) and isinstance(stmt.targets[0], S.Name) and (
                            isinstance(stmt.value, S.Name) and stmt.value.id in items or
                            isinstance(stmt.value, S.Subscript) and
                            isinstance(stmt.value.value, S.Name) and
                            stmt.value.value.id in items and
                            isinstance(stmt.value.slice, S.Constant)):
                        items.add(stmt.targets[0].id)
                self._refuse_writes_into_items(loop.body, items)
        memory = None
        # calls whose results are differentiated: one derivo cannot read is refused
        # as such when its derivative is planned (not for what it may change)
        differentiated = {id(node) for stmt in S.walk(self.normalized.tree)
                          if isinstance(stmt, S.Assign) and set(assigned_names(stmt)) & self.active
                          for node in S.walk(stmt.value) if isinstance(node, S.Call)
                          and self.differentiable_names(node) & self.active}
        for node in S.walk(self.normalized.tree):
            changed = []  # expressions whose object the call changes
            if isinstance(node, S.Expr) and isinstance(node.value, S.Call) and \
                    not is_append(node) and isinstance(node.value.func, S.Attribute):
                root = S.root_name(node.value.func.value)
                if root is not None and root.id in local:
                    changed.append(node.value.func.value)
            # a helper may change what it is given or what that holds (for p in ps: p *= 2)
            handed = self._arguments_a_helper_changes(node) \
                if isinstance(node, S.Call) and not (
                    id(node) in differentiated and _unreadable(self.parsed.callee_key(node))) \
                else []
            if isinstance(node, S.Call):
                changed += _written_in_place(self.parsed, node)
            if (changed or handed) and memory is None:
                memory = Memory(self.parsed, self.normalized.tree, local)
            # (a change that involves nothing differentiated, keys.sort(), is harmless)
            for expression, deep in [(e, False) for e in changed] + [(e, True) for e in handed]:
                if self.is_scalar(expression):
                    continue  # a number is never changed in place: callback(loss)
                roots = memory.changed_by(expression, deep)
                names = (roots | memory.sharing(roots)) & local  # w = xs; w.reverse()
                if names & self.useful and (names | _names(node)) & self.varied:
                    raise self._change_in_place(node, expression, names & self.useful)

    @property
    def _influential(self):
        return self.activity.influential

    @functools.cached_property
    def _user_names(self):
        """The names the user's function assigns or takes (not ssa's temporaries)."""
        return S.stored_names(self.parsed.tree) | set(tree_params(self.parsed.tree))

    def _change_in_place(self, node, expression, names):
        """The refusal of ``node``, which changes ``expression`` and so ``names``,
        in the user's words (``h(x * 2.0)``, not ssa's ``h(t1)``)."""
        line = self.parsed.source_line(getattr(node, "lineno", None))
        user_names = self._user_names
        call, changed = self.parsed.words(getattr(node, "value", node)), \
            self.parsed.words(expression)
        others = sorted(names & user_names - {changed})
        return self.parsed.error(
            UnsupportedSyntax, node, "cannot differentiate {!r}: it may change {}{} in "
            "place, which derivo does not follow (only x[i] = v and xs.append(v)); compute a "
            "new value and assign it, or give it a copy".format(
                call, repr(changed) if changed in line else "what it is given",
                " (and {}, which may share its memory)".format(", ".join(map(repr, others)))
                if others else ""),
            "change in place")

    def _arguments_a_helper_changes(self, call):
        """The arguments given to a user function for the parameters it changes in
        place (``setfirst(y, v)`` with ``def setfirst(y, v): y[0] = v``), and all
        those given to a function derivo cannot read (see :func:`_arguments_changed_by`)."""
        callee = form.annotation(call, "user_function") or self.parsed.callee_key(call)
        return _arguments_changed_by(self.parsed, call, callee, self.arrays)


def _joined_sequence_error(parsed, node, operand):
    text = parsed.words(operand)
    if isinstance(operand, S.Tuple) and text == S.expr_source(operand):
        text = "(" + text + ")"
    return parsed.error(
        UnsupportedSyntax, node, "cannot differentiate {!r}: {!r} may be a list or a tuple, "
        "and + joins such sequences, * repeats them; derivo differentiates + and * of "
        "numbers and arrays (build the list item by item, or use NumPy arrays)".format(
            parsed.words(node), text), "list arithmetic")


def _arguments_changed_by(parsed, call, callee, arrays, seen=frozenset()):
    """The arguments of ``call`` (of ``callee``, resolved by ``parsed``) that it may
    change in place: those a user function changes (see :func:`parameter_writes`),
    be it called as a function, as a method of a user object (``FILLER.go(a)``),
    as a user object (``layer(a)``), as a class or through ``functools.partial``;
    what a function a local name was assigned changes (``zeros = np.zeros``); and
    every argument of a function derivo cannot read (``fn(a)``, fn a parameter,
    ``obj.go(a)`` of a method it does not know)."""
    everything = [*call.args, *(k.value for k in call.keywords)]
    if isinstance(call.func, S.Name) and call.func.id in parsed.local_names and \
            callee is MISSING:  # (not a parameter said to hold callee: see Parsed.fixed)
        return _changed_through_a_local(parsed, call, arrays, seen)
    if _unreadable(callee):
        return everything  # FNS[0](a), obj.go(a) of a local obj, super().go(a)
    if any(_changes_its_arguments(parsed, argument, arrays, seen) for argument in everything):
        return everything  # map(fill, [a]): fill is called with what map was given
    function, given = user_function(callee)
    if function is None or function in seen:
        return []
    try:
        written = parameter_writes(function, arrays, seen)
    except DerivoError:  # no source: it may change any argument
        return everything
    return [argument for name, argument in arguments(call, function, given)
            if name in written]


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
    function, _ = user_function(parsed.callee_key(S.call(value)))
    if function is None or function in seen:
        return False
    try:
        return bool(parameter_writes(function, arrays, seen))
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


def parameter_writes(func, arrays, _seen=frozenset()):
    """The parameters ``func`` changes in place, read from its source: written
    into (``y[0] = v``, ``del y[0]``), appended to or given a method call as a
    statement (``ys.append(v)``, ``y[1:].fill(0.0)``), updated with ``+=`` and the
    like when values may be arrays, written by NumPy (``np.copyto(y, v)``,
    ``out=y``), or given to a user function that changes them; itself, or through
    another name that may share its memory (``w = y``, ``w = y[1:]``, ``for row
    in y``, see :class:`~derivo.memory.Memory`)."""
    parsed = parse(func)
    tree = parsed.tree
    params = all_params(tree)
    changed = []  # expressions whose object the function changes
    handed = []   # ... given to helpers that change them or what they hold
    for node in S.walk(tree):
        if isinstance(node, (S.Assign, S.gast.AugAssign, S.gast.Delete)):
            for target in _flattened(getattr(node, "targets", None) or [node.target]):
                if isinstance(target, (S.Subscript, S.Attribute)):
                    changed.append(target.value)
                elif arrays and isinstance(node, S.gast.AugAssign):
                    changed.append(target)
        elif isinstance(node, S.Expr) and isinstance(node.value, S.Call) and \
                isinstance(node.value.func, S.Attribute):
            changed.append(node.value.func.value)
        if not isinstance(node, S.Call):
            continue
        changed += _written_in_place(parsed, node)
        handed += _arguments_changed_by(parsed, node, parsed.callee_key(node), arrays,
                                        _seen | {func})
    memory = Memory(parsed, tree, params)
    return {root for expression in changed for root in memory.changed_by(expression)} | {
        root for expression in handed for root in memory.changed_by(expression, deep=True)}


def _flattened(targets):
    for target in targets:
        if isinstance(target, (S.Tuple, S.List)):
            yield from _flattened(target.elts)
        else:
            yield target.value if isinstance(target, S.gast.Starred) else target


def parameters_read_whole(func):
    """The parameters of ``func`` its code may read as a list or an array: every
    one read other than as an operand of arithmetic or a comparison, or as an
    argument of a ``math`` function.  (The entry of scalar code sends a list or an
    array given for one of them to the checked call; see ``api.entry_guard``.)"""
    parsed = parse(func)
    tree = parsed.tree
    params = set(tree_params(tree))
    parents = {id(child): parent for parent in S.walk(tree)
               for child in S.gast.iter_child_nodes(parent)}

    def as_number(node):
        parent = parents.get(id(node))
        if isinstance(parent, (S.BinOp, S.UnaryOp, S.Compare)):
            return True
        return isinstance(parent, S.Call) and node in parent.args and \
            getattr(parsed.resolve_callee(parent), "__module__", None) == "math"

    return {n.id for n in S.walk(tree.body) if isinstance(n, S.Name) and n.id in params
            and isinstance(n.ctx, S.Load) and not as_number(n)}


def sequence_arithmetic(func, _seen=frozenset()):
    """Where ``func`` applies + or * to what it reads from its parameters:
    {parameter: {path: error}}, the paths (see :mod:`derivo.trees`) from the
    parameter to each value read from it that is an operand (``()``: the
    parameter itself, a slice or a copy of it; ``(0,)``: its first item;
    ``(ANY, Field("w"))``: the field w of any item), through calls of user
    functions too, each with the error to raise (at the first such operand).
    Called with a container in which a path reaches a list or a tuple, the
    function joins or repeats sequences (see ``api.Derivative._refuse_joined``).  Read from the statement form,
    where a rebinding at the top level is a new name (``xs = np.asarray(xs)``
    is an array); an operation derivo would not differentiate counts too."""
    normalized = normalize(parse(func))
    parsed, tree = normalized.parsed, normalized.tree
    params = normalized.params
    derived = {p: {p: {()}} for p in params}  # name -> {parameter: paths}
    found = {}

    def paths_of(node):
        return _paths_of(node, parsed, derived)

    def note(param, paths, error):
        for path in paths:
            found.setdefault(param, {}).setdefault(path, error)

    changed = True
    while changed:
        changed = False
        for node in S.walk(tree):
            targets = []
            if isinstance(node, S.Assign) and isinstance(node.targets[0], S.Name):
                targets = [(node.targets[0].id, paths_of(node.value))]
            elif isinstance(node, S.For) and isinstance(node.target, S.Name):
                targets = [(node.target.id, _stepped(paths_of(node.iter), trees.ANY))]
            for name, new in targets:
                merged = _merged_paths(derived.get(name, {}), new)
                if merged != derived.get(name, {}):
                    derived[name] = merged
                    changed = True
    for node in S.walk(tree):
        if isinstance(node, S.BinOp) and isinstance(node.op, (S.Add, S.Mult)):
            for operand in (node.left, node.right):
                for param, paths in paths_of(operand).items():
                    note(param, paths, _joined_sequence_error(parsed, node, operand))
        elif isinstance(node, S.Call):
            callee = form.annotation(node, "user_function") or parsed.resolve_callee(node)
            if not is_user_function(callee) or callee in _seen:
                continue
            try:
                inner = sequence_arithmetic(callee, _seen | {func})
            except DerivoError:  # no source: derivo will refuse the call itself
                continue
            for name, argument in arguments(node, callee):
                for path, error in inner.get(name, {}).items():
                    for param, outer in paths_of(argument).items():
                        note(param, [_joined_path(start, path) for start in outer], error)
    return {p: found[p] for p in params if p in found}


def _stepped(paths, key):
    """``paths`` ({parameter: paths}) each followed by the step ``key``."""
    return {p: {trees.extended(path, key) for path in each} for p, each in paths.items()}


def _paths_of(node, parsed, derived):
    """The paths (see :func:`sequence_arithmetic`) from each parameter to the
    value of ``node``, ``derived`` giving those of the names."""
    def paths_of(inner):
        return _paths_of(inner, parsed, derived)

    if isinstance(node, S.Name):
        return derived.get(node.id, {})
    if isinstance(node, S.Subscript):
        if isinstance(node.slice, S.Slice):
            return paths_of(node.value)
        index = node.slice
        key = index.value if isinstance(index, S.Constant) and \
            isinstance(index.value, (int, str)) else trees.ANY
        return _stepped(paths_of(node.value), key)
    if isinstance(node, S.Attribute) and rules.lookup(rules.Method(node.attr), 1, []) is None:
        return _stepped(paths_of(node.value), trees.Field(node.attr))
    if isinstance(node, S.Call):
        callee = parsed.callee_key(node)
        if callee in (list, tuple, sorted, reversed) and len(node.args) == 1:
            return paths_of(node.args[0])
        if callee in (zip, enumerate):
            # its items are tuples: item[0] of zip(xs, ys) is an item of xs
            sequences = node.args if callee is zip else node.args[:1]
            return _merged_paths(*(_stepped(paths_of(a), trees.ZIPPED) for a in sequences))
    if isinstance(node, S.IfExp):
        return _merged_paths(paths_of(node.body), paths_of(node.orelse))
    return {}


def _joined_path(start, path):
    for key in path:
        start = trees.extended(start, key)
    return start


def _merged_paths(*each):
    merged = {}
    for paths in each:
        for param, found in paths.items():
            merged[param] = merged.get(param, set()) | found
    return merged


#: The kinds of refusal of an in-place change the memory model makes
MEMORY_REFUSALS = ("aliased write", "aliased update", "write into a loop item")

#: Every mode
_ALL = ("reverse", "forward", "memory")
#: The phases in the order they run, each with the modes that run it: "reverse"
#: all of them; "forward" no saving (nothing is saved) and no refusal of what
#: only a reverse sweep gets wrong (a write into a global, which forward mode
#: makes as the function does; + of lists); "memory" the refusals of in-place
#: changes alone (see ``transform.refuse_memory_faults``).
PHASES = (
    (Analysis.compute_activity, _ALL),
    (Analysis.compute_kinds, _ALL),
    (lambda analysis: analysis.activity.refuse_sets(), _ALL),
    (Analysis._refuse_hidden_writes, _ALL),
    (lambda analysis: analysis.activity.refuse_arguments_without_rule(), _ALL),
    # tangents share memory as the values do: forward mode refuses no shared write
    (lambda analysis: analysis.refuse_shared_writes(writes=analysis.reverse), _ALL),
    (Analysis.refuse_joined_sequences, ("reverse",)),
    (Analysis.refuse_writes_into_globals, ("reverse",)),
    (Analysis.plan_statements, _ALL),
    (Analysis.compute_saving, ("reverse",)),
)


def analyze(normalized, wrt, arrays=False, loops="stack", mode="reverse"):
    """Run the phases ``mode`` needs (see :data:`PHASES`) over ``normalized`` for
    differentiation with respect to the parameter names ``wrt``."""
    analysis = Analysis(normalized, wrt, arrays, loops, reverse=mode != "forward")
    for phase, modes in PHASES:
        if mode in modes:
            phase(analysis)
    form.check(normalized.tree, "analyze")
    return analysis


def analyze_memory(normalized, wrt, arrays=False):
    """Run the analyses that refuse in-place changes of shared memory, alone."""
    analyze(normalized, wrt, arrays, mode="memory")

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
    return _numpy_out_position(callee) if is_numpy(callee) and _hashable(callee) else None


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
