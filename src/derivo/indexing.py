"""For loops over values become indexed loops.

``for row in X`` over a differentiated array or list becomes ``for i in
range(len(X)): row = X[i]``, so the read of each row gets the adjoint of any
other indexing; so do ``for i, row in enumerate(X)``, ``for x, y in zip(X,
Y)`` (over ``range(min(len(X), len(Y)))``) and ``for row in reversed(X)``
(over ``range(len(X) - 1, -1, -1)``).  Only activity says which loops need it,
so this runs between two rounds of it (see ``analyze``); it is the one
analysis that rewrites the tree.
"""

import collections
import inspect

from . import rules
from . import syntax as S
from .errors import UnsupportedSyntax
from .statements import changed_in, names_of


class Indexing:
    """Indexes the loops over values of ``normalized`` that need it, given its
    ``activity``; ``reverse``: a reverse sweep runs the loops backwards.
    :meth:`run` fills ``items``, ``[(body, names)]``, for each loop indexed the
    statements of its body and the names its items are given, and
    ``new_names``, the locals it adds."""

    def __init__(self, normalized, activity, reverse):
        self.normalized = normalized
        self.parsed = normalized.parsed
        self.activity = activity
        self.reverse = reverse
        self.items = []
        self.new_names = set()

    def run(self):
        """Index the loops that need it; whether any changed (activity must then
        be computed again).

        ``enumerate``, ``zip`` and ``reversed`` are indexed whenever the loop's
        body is differentiated, even over values that are not: the reverse loop
        could not run their iterators backwards (forward mode, which runs them
        forwards, indexes them when the body assigns a differentiated name).  A
        loop whose body rebinds or writes into ``X`` keeps its form: over values
        it is refused later with the reason, over an iterator here."""
        changed = False
        active = self.activity.active
        for block in S.blocks(self.normalized.tree):
            for stmt in list(block):
                if not (isinstance(stmt, S.For) and isinstance(stmt.target, S.Name)
                        and self.parsed.resolve("range") is range
                        and self.parsed.resolve("len") is len):
                    continue
                form = self._loop_form(block, stmt)
                if form is None:
                    continue
                kind = form[0]
                # a reverse sweep runs the body backwards when it changes a value that is
                # differentiated, by assigning it or writing into it
                touched = changed_in(stmt.body) if self.reverse else S.stored_names(stmt.body)
                if stmt.target.id in active and \
                        self.activity.differentiable_names(stmt.iter) & active or \
                        kind != "values" and touched & active:
                    changed |= self._index(block, stmt, form)
        return changed

    def _index(self, block, stmt, form):
        """Rewrite ``stmt``, a loop of ``block`` of the given form (see
        :meth:`_loop_form`), to index what it iterates over; False if it keeps
        its form (a loop over values whose body changes them)."""
        kind, sequences, targets, start, dropped = form
        namer = self.normalized.namer
        written_as = sequences  # as the user wrote them, for the message below
        if kind in ("zip", "enumerate"):
            sequences = [self._reversed_as_slice(block, stmt, s) for s in sequences]
            written_as = [S.call(S.name("reversed"), new.value) if new is not old
                          else old for new, old in zip(sequences, written_as)]
        body = [s for s in stmt.body if s not in dropped]
        written = changed_in(body)
        overwritten = next((named for items, named in zip(sequences, written_as)
                            if names_of(items) & written), None)
        if overwritten is not None and kind == "values":
            return False
        if overwritten is not None:
            raise self.parsed.error(
                UnsupportedSyntax, stmt, "cannot differentiate this loop over {}: "
                "its body changes {!r}, which it iterates over; loop over "
                "range(len(...)) and index instead".format(
                    "an iterator" if kind == "iterator" else kind + "(...)",
                    self.parsed.words(overwritten)), "loop over an iterator")
        self.items.append((body, targets))
        block[:] = [s for s in block if s not in dropped]
        # the keys reversed(d) yields are not d[i]: a reversed loop whose items are not
        # differentiated indexes a list of them
        listed = kind == "iterator" or kind == "reversed" and \
            targets[0] not in self.activity.active
        sequence_names = [self._named(block, stmt, items, listed) for items in sequences]
        heads = []
        if kind == "enumerate" and start is None and targets[0] not in written:
            index, targets = targets[0], targets[1:]
        else:
            index = namer.fresh("i")
            if kind == "enumerate":
                count = S.name(index) if start is None else \
                    S.binop(S.name(index), S.Add(), S.deepcopy(start))
                heads.append(S.copy_location(S.assign(targets[0], count), stmt))
                targets = targets[1:]
        for target, items in zip(targets, sequence_names):
            row = S.copy_location(S.assign(target, S.subscript(
                S.name(items), S.name(index))), stmt)
            row.item = True  # cheaper to read again than to save (see saving)
            heads.append(row)
        if kind == "values":
            stmt.row = heads[0]
        lengths = [S.call(S.name("len"), S.name(items)) for items in sequence_names]
        if kind == "reversed":
            bounds = [S.binop(lengths[0], S.Sub(), S.const(1)), S.const(-1), S.const(-1)]
        elif len(lengths) > 1:
            bounds = [S.call(S.name("min"), *lengths)]
        else:
            bounds = lengths
        stmt.target = S.store(index)
        stmt.iter = S.call(S.name("range"), *bounds)
        stmt.body[:] = body[:1] + heads + body[1:] if stmt.trips else heads + body
        self.new_names |= {index, *sequence_names}
        return True

    def _named(self, block, loop, items, listed=False):
        """The name of a sequence ``loop`` indexes: a new one assigned before the
        loop, unless it is a name already (a list of it, if an iterator or
        ``listed``)."""
        if listed and self.parsed.resolve("list") is list or self._maybe_an_iterator(items):
            items = S.copy_location(S.call(S.name("list"), items), loop)
        if isinstance(items, S.Name):
            return items.id
        temporary = self.normalized.namer.fresh("items")
        block.insert(block.index(loop), S.copy_location(S.assign(temporary, items), loop))
        return temporary

    def _reversed_as_slice(self, block, loop, sequence):
        """``X[::-1]`` for a sequence of zip or enumerate that is ``reversed(X)``
        (or a name assigned it just before the loop, as ssa hoists it: the
        assignment goes when nothing else reads the name), which cannot be
        indexed; the same items, whose adjoints reach X by indexing.  Any other
        sequence as it is."""
        value, earlier = sequence, None
        if isinstance(sequence, S.Name):
            position = block.index(loop)
            earlier = next((s for s in reversed(block[:position])
                            if sequence.id in S.stored_names([s])), None)
            value = earlier.value if isinstance(earlier, S.Assign) and \
                S.single_target(earlier) == sequence.id else None
            between = block[block.index(earlier) + 1:position] if value is not None else []
            if value is not None and names_of(value) & S.stored_names(between):
                value = None
        if not (isinstance(value, S.Call) and self.parsed.callee_key(value) is reversed and
                len(value.args) == 1 and not value.keywords and
                not isinstance(value.args[0], S.gast.Starred)):
            return sequence
        if earlier is not None and S.load_counts(self.normalized.tree)[sequence.id] == 1:
            block.remove(earlier)
        backwards = S.Slice(lower=None, upper=None, step=S.const(-1))
        return S.copy_location(S.subscript(S.deepcopy(value.args[0]), backwards), loop)

    def _may_have_no_length(self, sequence):
        """Whether ``sequence``, an argument of ``zip`` or ``enumerate``, may have no
        ``len``: a generator expression, or a call of an iterator's maker (``zip``,
        ``map``, an ``itertools`` function, a generator function)."""
        if isinstance(sequence, S.Name):  # (ssa puts a call derivo has no rule for on a line)
            tree = self.normalized.tree
            if S.load_counts(tree)[sequence.id] != 1:
                return False  # read again: a list of it would take what the rest reads
            sequence = S.values_assigned_once(tree).get(sequence.id)
        if isinstance(sequence, S.gast.GeneratorExp):
            return True
        if not isinstance(sequence, S.Call):
            return False
        callee = self.parsed.callee_key(sequence)
        return any(callee is maker for maker in _ITERATORS) or \
            getattr(callee, "__module__", None) == "itertools" or \
            inspect.isgeneratorfunction(callee)

    def _maybe_an_iterator(self, sequence):
        """Whether a loop's sequence, read by the loop alone, is a dict's view or
        a ``map``/``filter`` (not differentiated) of one that cannot be indexed
        (``d.values()``, ``map(f, xs)``): the reverse loop indexes a list of it.
        Other iterators are left alone: one could be endless (``itertools.count()``)."""
        if isinstance(sequence, S.Name):
            tree = self.normalized.tree
            others = S.load_counts(tree)[sequence.id] - any(n is sequence for n in S.walk(tree))
            sequence = None if others else S.values_assigned_once(tree).get(sequence.id)
        if not isinstance(sequence, S.Call) or self.parsed.resolve("list") is not list:
            return False
        callee = self.parsed.callee_key(sequence)
        if callee is map or callee is filter:  # of parameters, or of views
            return not self.activity.differentiable_names(sequence) & self.activity.active and \
                len(sequence.args) > 1 and all(
                isinstance(a, S.Name) and a.id in S.param_names(self.normalized.tree) or
                self._maybe_an_iterator(a) for a in sequence.args[1:])
        return isinstance(callee, rules.Method) and \
            callee.name in ("values", "keys", "items") and not sequence.args

    def _loop_form(self, block, loop):
        """(kind, sequences, targets, start, statements to drop) of a for loop over
        values ("values"), ``enumerate(X[, start])``, ``zip(X, Y, ...)`` or
        ``reversed(X)``, or ("iterator", [the call], ...) for one of those whose
        items are read otherwise (``for (i, j), w in zip(pairs, ws)``).  ssa left ``for x, y in zip(xs, ys)`` as
        ``seq1 = zip(xs, ys)`` before the loop (and what it hoisted out of it),
        ``for item1 in seq1: seq2 = item1; x = seq2[0]; y = seq2[1]``."""
        iterable, dropped = loop.iter, []
        position = block.index(loop)
        reads = sum(isinstance(n, S.Name) and isinstance(n.ctx, S.Load) and n.id == iterable.id
                    for n in S.walk(self.normalized.tree)) if isinstance(iterable, S.Name) else 0
        if reads == 1:  # the loop's own: the assignment can go
            for earlier in reversed(block[:position]):
                if isinstance(earlier, S.Assign) and isinstance(earlier.targets[0], S.Name) \
                        and earlier.targets[0].id == iterable.id:
                    if isinstance(earlier.value, S.Call):
                        iterable, dropped = earlier.value, [earlier]
                    break
        callee = self.parsed.callee_key(iterable) if isinstance(iterable, S.Call) else None
        kind = {enumerate: "enumerate", zip: "zip", reversed: "reversed"}.get(
            callee if callable(callee) else None)
        if kind is None:
            return ("values", [loop.iter], [loop.target.id], None, [])
        args = iterable.args
        counts = {"enumerate": (1, 2), "zip": range(1, len(args) + 1), "reversed": (1,)}
        # an iterator whose items are not read as the indexed forms read them (nested
        # unpacking, keywords, starred arguments), or over what has no length to
        # index by (zip(itertools.count(), xs)): the reverse loop indexes a list of it
        listed = ("iterator", [iterable], [loop.target.id], None, dropped)
        if iterable.keywords or len(args) not in counts[kind] or \
                any(isinstance(a, S.gast.Starred) or self._may_have_no_length(a)
                    for a in args) or \
                kind == "zip" and len(args) > 1 and self.parsed.resolve("min") is not min:
            return listed
        if kind == "reversed":
            return (kind, args, [loop.target.id], None, dropped)
        width = 2 if kind == "enumerate" else len(args)
        unpack = _unpacking(loop, width)
        if unpack is None:
            return listed
        targets = [s.targets[0].id for s in unpack[1:]]
        sequences = args[:1] if kind == "enumerate" else args
        start = args[1] if kind == "enumerate" and len(args) == 2 else None
        if start is not None and not (isinstance(start, S.Constant) or isinstance(
                start, S.Name) and start.id not in S.stored_names(loop.body)):
            return listed
        return (kind, sequences, targets, start, dropped + unpack)


_ITERATORS = (zip, enumerate, map, filter, iter)


def _unpacking(loop, width):
    """The statements ssa made of ``for a, b in ...`` (``width`` names) at the top
    of the loop's body: ``seq2 = item1``, ``a = seq2[0]``, ``b = seq2[1]``, with
    item1 and seq2 read nowhere else; or None.  A nested target (``for (w, b), x
    in ...``) splits an item further, ``seq3 = seq2[0]``, ``w = seq3[0]``...,
    before the next item: those statements stay in the body."""
    top = 1 if loop.trips else 0
    if len(loop.body) <= top or _read_by(loop.body[top]) != (loop.target.id, None):
        return None
    whole = loop.body[top].targets[0].id
    unpack, nested = [loop.body[top]], set()
    for stmt in loop.body[top + 1:]:
        if len(unpack) == width + 1:
            break
        read = _read_by(stmt)
        if read == (whole, len(unpack) - 1):
            unpack.append(stmt)
        elif read is not None and read[1] is not None and \
                read[0] in nested | {s.targets[0].id for s in unpack[1:]}:
            nested.add(stmt.targets[0].id)
        else:
            return None
    if len(unpack) != width + 1:
        return None
    reads = collections.Counter(n.id for n in S.walk(loop) if isinstance(n, S.Name))
    if reads[loop.target.id] != 2 or reads[whole] != width + 1:
        return None
    return unpack


def _read_by(stmt):
    """(name, index) of ``t = name[index]`` (a constant index), (name, None) of
    ``t = name``, None of any other statement."""
    if not (isinstance(stmt, S.Assign) and isinstance(stmt.targets[0], S.Name)):
        return None
    value = stmt.value
    if isinstance(value, S.Name):
        return value.id, None
    if isinstance(value, S.Subscript) and isinstance(value.value, S.Name) and \
            isinstance(value.slice, S.Constant):
        return value.value.id, value.slice.value
    return None
