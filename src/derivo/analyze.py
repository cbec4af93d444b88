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

The refusals of in-place changes derivo cannot follow are :mod:`derivo.writes`'s
(on the ownership analysis of :mod:`derivo.memory`); this module keeps the refusal
of joined sequences.
"""

import functools

from . import form, rules, trees
from . import syntax as S
from .activity import Activity
from .errors import DerivoError, UnsupportedSyntax
from .indexing import Indexing
from .kinds import Kinds
from .memory import Flow, arguments, is_user_function
from .parse import parse
from .plans import Planner
from .saving import Saving
from .ssa import normalize
from .statements import is_item_write
from .writes import (refuse_hidden_writes, refuse_shared_writes, refuse_writes_into_globals,
                     refuse_writes_into_items)


class Analysis:
    """What the phases found about ``normalized``, differentiated with respect
    to the parameters ``wrt`` (``arrays``: values may be arrays; ``loops``: the
    strategy of reverse mode; ``reverse``: a reverse sweep runs the loops
    backwards): ``activity``, ``kinds``, ``planner`` (with its ``plans`` and
    ``calls``), ``saving``, and ``shared_checks``, {id(z = y[i]): (y, message)}
    for a view the primal refuses as it runs; in forward mode ``tangent_shares``,
    {id(write): [(other name, refusal)]} for another name of the memory a write
    changes, whose tangent shares the written name's (see writes.py).
    ``halves(callee)``: whether the VJP of a called user function comes in
    halves (see derivo.residuals)."""

    def __init__(self, normalized, wrt, arrays=False, loops="stack", reverse=True,
                 halves=None):
        self.normalized = normalized
        self.halves = halves or (lambda callee: False)
        self.reverse = reverse
        self.arrays = arrays
        self.parsed = normalized.parsed
        self.wrt = list(wrt)
        self.loops = loops
        self.shared_checks = {}
        self.tangent_shares = {}
        self.changed_by_call = {}  # id(call) -> local names it may change in place
        # Every local of the statement form: the user's, and those ssa and inline added.
        self.local_names = self.parsed.local_names | {
            n.id for n in S.walk(normalized.tree) if isinstance(n, S.Name)
            and isinstance(n.ctx, (S.Store, S.gast.Param))}
        self.activity = Activity(normalized, self.local_names, forward=not reverse)
        self.kinds = self.planner = self.saving = None
        self.plans, self.calls = {}, []

    # --- sharing -----------------------------------------------------------

    def refuse_joined_sequences(self):
        """Refuse ``+`` or ``*`` of a differentiated list or tuple the function
        builds (``[a, b] + [c]``, ``[a] * 3``, ``xs + ys`` with xs appended to):
        Python joins or repeats it, while the adjoints of + and * are those of
        numbers and arrays, so the derivative would be silently wrong.  (A list
        the caller passes is checked when the call comes: see
        :func:`sequence_arithmetic`.)"""
        for node in S.walk(self.normalized.tree):
            if not (isinstance(node, S.BinOp) and isinstance(node.op, (S.Add, S.Mult))):
                continue
            for operand in (node.left, node.right):
                if self.builds_a_sequence(operand) and \
                        self.differentiable_names(operand) & self.active:
                    raise _joined_sequence_error(self.parsed, node, operand)

    def builds_a_sequence(self, operand):
        """Whether ``operand`` may be a list or a tuple the function builds (a
        display, a comprehension, list(...), a name assigned one), which + joins."""
        return isinstance(operand, (S.List, S.Tuple, S.gast.ListComp)) or \
            isinstance(operand, S.Name) and operand.id in self.lists | self.tuples or \
            isinstance(operand, S.Call) and \
            self.parsed.callee_key(operand) in (list, tuple, sorted)

    @functools.cached_property
    def tuples(self):
        """The names the function assigns a tuple display."""
        return {s.targets[0].id for s in S.walk(self.normalized.tree)
                if isinstance(s, S.Assign) and isinstance(s.targets[0], S.Name)
                and isinstance(s.value, S.Tuple)}

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
            refuse_writes_into_items(self, body, items)

    def compute_kinds(self):
        """What each name may hold (see ``kinds``)."""
        self.kinds = Kinds(self.normalized, self.arrays, self.activity)

    def plan_statements(self):
        """How each active assignment is differentiated (see ``plans``)."""
        self.planner = Planner(self.normalized, self.arrays, self.loops, self.activity,
                               self.kinds, self.reverse, self.halves)
        self.planner.plan_statements()
        self.plans, self.calls = self.planner.plans, self.planner.calls

    def compute_saving(self):
        """What the reverse sweep saves or undoes (see ``saving``)."""
        tree = self.normalized.tree
        # which memory an item write changes, for the adjoints that read it
        memory = Flow(tree, self.parsed, self.local_names, self.scalars, self.arrays) \
            if any(is_item_write(s) for s in S.walk(tree)) else None
        self.saving = Saving(self.normalized, self.loops, self.activity, self.planner,
                             self.changed_by_call, memory)

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
    def dicts(self):
        return self.kinds.dicts

    @property
    def containers(self):
        return self.kinds.containers

    def is_scalar(self, node):
        return self.kinds.is_scalar(node)

def _joined_sequence_error(parsed, node, operand):
    text = parsed.words(operand)
    if isinstance(operand, S.Tuple) and text == S.expr_source(operand):
        text = "(" + text + ")"
    return parsed.error(
        UnsupportedSyntax, node, "cannot differentiate {!r}: {!r} may be a list or a tuple, "
        "and + joins such sequences, * repeats them; derivo differentiates + and * of "
        "numbers and arrays (build the list item by item, or use NumPy arrays)".format(
            parsed.words(node), text), "list arithmetic")


def parameters_read_whole(func):
    """The parameters of ``func`` its code may read as a list or an array: every
    one read other than as an operand of arithmetic or a comparison, or as an
    argument of a ``math`` function.  (The entry of scalar code sends a list or an
    array given for one of them to the checked call; see ``api.entry_guard``.)"""
    parsed = parse(func)
    tree = parsed.tree
    params = set(S.param_names(tree))
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
    function joins or repeats sequences (see ``api._ArgumentChecks.refuse_joined``).
    Read from the statement form, where a rebinding at the top level is a new name (``xs = np.asarray(xs)``
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
MEMORY_REFUSALS = ("aliased write", "aliased update", "write into a loop item", "change in place")

#: Every mode
_ALL = ("reverse", "forward", "refusals")
#: The phases in the order they run, each with the modes that run it: "reverse"
#: all of them; "forward" no saving (nothing is saved) and no refusal of what
#: only a reverse sweep gets wrong (+ of lists, whose tangents forward mode
#: joins); "refusals" what refuses a function read whole, before its loops are
#: checkpointed (see ``transform.Build.refuse_as_written``).
PHASES = (
    (Analysis.compute_activity, _ALL),
    (Analysis.compute_kinds, _ALL),
    (lambda analysis: analysis.activity.refuse_sets(), _ALL),
    (refuse_hidden_writes, _ALL),
    (lambda analysis: analysis.activity.refuse_arguments_without_rule(), _ALL),
    # tangents share memory as the values do: forward mode refuses no shared write
    (lambda analysis: refuse_shared_writes(analysis, writes=analysis.reverse), _ALL),
    (Analysis.refuse_joined_sequences, ("reverse",)),
    (refuse_writes_into_globals, ("reverse", "forward")),
    (Analysis.plan_statements, _ALL),
    (Analysis.compute_saving, ("reverse",)),
)


def analyze(normalized, wrt, arrays=False, loops="stack", mode="reverse", halves=None):
    """Run the phases ``mode`` needs (see :data:`PHASES`) over ``normalized`` for
    differentiation with respect to the parameter names ``wrt`` (``halves``:
    see :class:`Analysis`)."""
    analysis = Analysis(normalized, wrt, arrays, loops, reverse=mode != "forward",
                        halves=halves)
    first, *rest = [phase for phase, modes in PHASES if mode in modes]
    first(analysis)  # (activity indexes loops: the one phase that changes the tree)
    with S.unchanging(normalized.tree):
        for phase in rest:
            phase(analysis)
    form.check(normalized.tree, "analyze")
    return analysis


def refuse_whole(normalized, wrt, arrays=False):
    """Run the analyses that refuse what derivo cannot differentiate, alone."""
    analyze(normalized, wrt, arrays, mode="refusals")
