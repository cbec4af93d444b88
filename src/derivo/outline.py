"""Stage 1b, reverse mode: a checkpointed loop becomes one call.

With ``loops="checkpoint"`` every outermost loop, and under any strategy a
loop over ``derivo.checkpointed(...)``, is *outlined*::

    for _ in range(steps):          x, v = <loop>(range(steps), x, v, dt, stiffness)
        x += dt * v          ->
        v -= dt * stiffness * x     def energy_after_trips(items, x, v, dt, stiffness):
                                        for _ in items:
                                            x += dt * v
                                            v -= dt * stiffness * x
                                        return x, v

                                    def energy_after_step(_, x, v, dt, stiffness):
                                        (the body, once), return x, v

The loop's *state* is what it assigns (or writes into) and something reads
before the loop assigns it again: the next trip, or code after the loop.  Its
*invariants* are the other local names it reads.  The call's callee is a
:class:`Loop`; ``reverse`` runs it through :mod:`derivo.checkpoints`, which
runs stretches of trips with the ``trips`` function and calls the VJP of
``trips`` of a ``for`` loop (its loop reversed with a stack) once per stretch
of trips reversed, or that of ``step`` of a ``while`` loop (an ordinary
derived function) once per trip backwards.

A checkpointed loop must run all its trips from its state alone, so it may
not ``break``, ``continue`` or ``return``, and every state variable needs a
value before the loop.
"""

from . import dataflow
from . import syntax as S
from .checkpoints import SCHEDULES, checkpointed
from .errors import UnsupportedSyntax
from .names import Namer
from .parse import Outlined, Parsed

ITERATIONS = "(iterations)"  # the parameter of a for loop's call that takes its iterable


class Loop:
    """The callee of the call that replaces a checkpointed loop."""

    def __init__(self, parsed, node, step, runner, state, invariants, slots, schedule):
        self.parsed = parsed          # the function holding the loop
        self.node = node              # the user's loop, for messages
        self.kind = "for" if isinstance(node, S.For) else "while"
        self.step = step              # Outlined: one trip, returning the state (for its VJP)
        self.runner = runner          # Outlined: several trips (see _runner)
        self.state = state
        self.invariants = invariants
        self.slots = slots            # None: the runtime's default
        self.schedule = schedule      # 'revolve' or 'halving' (for loops)
        self.params = ([ITERATIONS] if self.kind == "for" else []) + state + invariants

    @property
    def rerun(self):
        """The code the reverse sweep runs again: the body, and a while loop's test
        (a for loop's iterable is read once)."""
        return ([self.node.test] if self.kind == "while" else []) + self.node.body


def outline_loops(parsed, loops, slots, schedule, names):
    """``parsed`` with its checkpointed loops outlined (a new tree), naming the
    step functions with ``names``; ``parsed`` itself when there are none."""
    tree = S.deepcopy(parsed.tree)
    found = []
    _find(parsed, tree.body, loops == "checkpoint", slots, schedule, found, nested=False)
    if not found:
        return parsed
    for loop, block, slots_, schedule_ in found:
        replacement = _outline(parsed, tree, loop, slots_, schedule_, names)
        if replacement is not None:
            block[block.index(loop)] = replacement
    return Parsed(parsed.func, tree, parsed.filename, parsed.lines, parsed.first_line,
                  parsed.globals, parsed.closure)


def _find(parsed, block, every, slots, schedule, found, nested):
    """Collect (loop, block holding it, slots, schedule) for each loop to outline."""
    for stmt in block:
        if isinstance(stmt, (S.For, S.While)):
            marker = _marker(parsed, stmt)
            if marker is not None or every and not nested:
                _refuse_nested_markers(parsed, stmt.body)
                found.append((stmt, block) + (marker or (slots, schedule)))
                continue
            _find(parsed, stmt.body, every, slots, schedule, found, True)
        elif isinstance(stmt, S.If):
            _find(parsed, stmt.body, every, slots, schedule, found, nested)
            _find(parsed, stmt.orelse, every, slots, schedule, found, nested)


def _refuse_nested_markers(parsed, body):
    """A checkpointed loop's body becomes one step; a marked loop inside it would
    run as an ordinary loop of that step, its options silently unused."""
    for node in S.walk(body):
        if isinstance(node, S.For) and isinstance(node.iter, S.Call) and \
                parsed.resolve_callee(node.iter) is checkpointed:
            raise parsed.error(UnsupportedSyntax, node.iter, "cannot checkpoint a loop inside "
                               "a checkpointed loop: mark the outer loop only", "checkpointed")


def _marker(parsed, loop):
    """(slots, schedule) of ``for x in derivo.checkpointed(...)``, which then
    loops over the marker's first argument; None for any other loop."""
    call = loop.iter if isinstance(loop, S.For) else None
    if not isinstance(call, S.Call) or parsed.resolve_callee(call) is not checkpointed:
        return None
    if len(call.args) != 1:
        raise parsed.error(UnsupportedSyntax, call, "derivo.checkpointed takes one iterable "
                           "and keyword options (checkpoints=..., schedule=...)",
                           "checkpointed")
    options = {"checkpoints": None, "schedule": "revolve"}
    for keyword in call.keywords:
        if keyword.arg not in options or not isinstance(keyword.value, S.Constant):
            raise parsed.error(UnsupportedSyntax, keyword.value, "derivo.checkpointed takes "
                               "constant checkpoints=... and schedule=... options",
                               "checkpointed")
        options[keyword.arg] = keyword.value.value
    slots = options["checkpoints"]
    if slots is not None and (type(slots) is not int or slots < 1):
        raise parsed.error(UnsupportedSyntax, call, "checkpoints={!r}: give the number of "
                           "loop states to keep, a positive integer".format(slots),
                           "checkpointed")
    if options["schedule"] not in SCHEDULES:
        raise parsed.error(UnsupportedSyntax, call, "schedule={!r}: choose one of {}".format(
            options["schedule"], ", ".join(map(repr, SCHEDULES))), "checkpointed")
    loop.iter = call.args[0]
    return options["checkpoints"], options["schedule"]


def _outline(parsed, tree, loop, slots, schedule, names):
    """The call replacing ``loop``, or None for a loop nothing after it reads."""
    if loop.orelse:
        raise _error(parsed, loop, "has an else block; move it after the loop with a flag")
    _refuse_jumps(parsed, loop)
    if isinstance(loop, S.For) and isinstance(loop.iter, S.Call) and \
            parsed.resolve_callee(loop.iter) in (enumerate, zip, reversed, iter, map, filter):
        # checkpoints resume a loop at a trip number: it needs a sequence to index
        raise _error(parsed, loop.iter, "iterates over {!r}, an iterator; loop over "
                     "range(len(...)) and index".format(parsed.words(loop.iter)))
    if isinstance(loop, S.For) and not isinstance(loop.target, S.Name):
        raise _error(parsed, loop.target, "needs one loop variable, not {!r}; loop over "
                     "range(len(...)) and unpack the item in the body".format(
                         parsed.words(loop.target)))
    target = [loop.target.id] if isinstance(loop, S.For) else []
    header = [loop.test] if isinstance(loop, S.While) else []
    header_items = [loop.iter] if isinstance(loop, S.For) else []
    read_after = dataflow.live_after(tree.body, loop, _reads, _writes)
    for ident in target:
        if ident in read_after:
            raise _error(parsed, loop.target, "leaves its loop variable {!r} behind, and "
                         "code after the loop reads it; copy it into another name inside "
                         "the loop".format(ident))
    assigned = _assigned(loop.body)
    exposed = set(_loads(header)) | (dataflow.live_before(loop.body, (), _reads, _writes) -
                                     set(target))
    state = [n for n in assigned if n in exposed or n in read_after]
    if not state:
        return None
    changed_items = [n for n in _loads(header_items) if n in state]
    if changed_items:
        # the trips run again from a checkpoint read the items as the last trip left them
        raise _error(parsed, loop.iter, "iterates over {!r}, which its body changes; loop "
                     "over range(len({})) and index it".format(parsed.words(loop.iter),
                                                               changed_items[0]))
    params = frozenset(a.id for a in tree.args.args + tree.args.kwonlyargs)
    defined = dataflow.state_before(_Defined(), tree.body, loop, params) or frozenset()
    for ident in state:
        if ident not in defined:
            raise _error(parsed, loop, "carries {!r} from trip to trip or out of the loop, "
                         "but {!r} may have no value before the loop; assign it "
                         "first".format(ident, ident))
    local = parsed.local_names
    invariants = [n for n in _loads(header + loop.body)
                  if n in local and n not in assigned and n not in target]
    base = names.fresh(parsed.tree.name + "_step")
    body = S.deepcopy(loop.body) + [_located(S.return_(_names_value(state)), loop)]
    step = Outlined(parsed, _located(S.function(base, target + state + invariants, body), loop))
    runner = Outlined(parsed, _located(_runner(
        names.fresh(parsed.tree.name + "_trips"), loop, state, invariants, parsed.local_names),
        loop))
    callee = Loop(parsed, loop, step, runner, state, invariants, slots, schedule)
    iterations = [S.deepcopy(node) for node in header_items]
    call = S.call(base + "_loop", *iterations, *[S.name(n) for n in state + invariants])
    call.user_function = callee
    call.returns = list(range(len(iterations), len(iterations) + len(state)))
    targets = S.store(state[0]) if len(state) == 1 else S.tuple_(
        [S.store(n) for n in state], store_ctx=True)
    return _located(S.assign(targets, call), loop)


def _runner(name, loop, state, invariants, local_names):
    """The loop itself as a function running some of its trips: over the items
    it is given, or (a while loop) at most ``trips`` of them, returning how
    many ran before the state."""
    fresh = Namer(local_names)
    if isinstance(loop, S.For):
        items = fresh.fresh("items")
        body = [S.for_(S.deepcopy(loop.target), S.name(items), S.deepcopy(loop.body)),
                S.return_(_names_value(state))]
        return S.function(name, [items] + state + invariants, body)
    trips, done = fresh.fresh("trips"), fresh.fresh("done")
    test = S.gast.BoolOp(op=S.gast.And(), values=[
        S.gast.Compare(left=S.name(done), ops=[S.gast.Lt()], comparators=[S.name(trips)]),
        S.deepcopy(loop.test)])
    body = [S.assign(done, S.const(0)),
            S.while_(test, S.deepcopy(loop.body) + [S.aug_add(done, S.const(1))]),
            S.return_(_names_value([done] + state))]
    return S.function(name, [trips] + state + invariants, body)


def _error(parsed, node, message):
    return parsed.error(UnsupportedSyntax, node, "cannot checkpoint this loop: it " + message,
                        "checkpointed loop")


def _refuse_jumps(parsed, loop):
    """A checkpointed loop runs every trip: no break or continue of its own, no return."""
    def visit(block, own_level):
        for stmt in block:
            if isinstance(stmt, S.Return):
                raise _error(parsed, stmt, "returns from inside; set a flag and return "
                             "after the loop")
            if own_level and isinstance(stmt, (S.Break, S.Continue)):
                word = "break" if isinstance(stmt, S.Break) else "continue"
                raise _error(parsed, stmt, "has a {!r}, so its trips depend on more than "
                             "its state; use an if around the rest of the body".format(word))
            for field in ("body", "orelse"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list):
                    visit(inner, own_level and not isinstance(stmt, (S.For, S.While)))
    visit(loop.body, True)


def _located(node, origin):
    for inner in S.walk(node):
        if getattr(inner, "lineno", None) is None and hasattr(inner, "_attributes") \
                and "lineno" in inner._attributes:
            S.copy_location(inner, origin)
    return node


def _names_value(names):
    return S.name(names[0]) if len(names) == 1 else S.tuple_([S.name(n) for n in names])


_COMPREHENSIONS = (S.gast.ListComp, S.gast.GeneratorExp, S.gast.SetComp, S.gast.DictComp)


def _names_in_scope(tree):
    """The Name nodes of ``tree`` (or a list of trees) but a comprehension's own
    variables, which live in the comprehension alone (ssa lowers it later)."""
    own = {id(n) for c in S.walk(tree) if isinstance(c, _COMPREHENSIONS)
           for n in _comprehension_variables(c)}
    return [n for n in S.walk(tree) if isinstance(n, S.Name) and id(n) not in own]


def _comprehension_variables(comprehension):
    """The Name nodes of a comprehension's variables: its targets, and their
    reads in it (its first iterable is read outside)."""
    generators = comprehension.generators
    names = {n.id for g in generators for n in S.walk(g.target) if isinstance(n, S.Name)}
    scope = [getattr(comprehension, field) for field in ("elt", "key", "value")
             if hasattr(comprehension, field)]
    scope += [g.target for g in generators] + [c for g in generators for c in g.ifs]
    scope += [g.iter for g in generators[1:]]
    return [n for n in S.walk(scope) if isinstance(n, S.Name) and n.id in names]


def _stored(tree):
    return {n.id for n in _names_in_scope(tree) if isinstance(n.ctx, S.Store)}


def _loads(nodes):
    """Names read by ``nodes``, in order of first appearance."""
    seen = {}
    for inner in _names_in_scope(list(nodes)):
        if isinstance(inner.ctx, S.Load):
            seen.setdefault(inner.id, None)
    return list(seen)


def _assigned(block):
    """Names ``block`` assigns or writes into (``x[i] = v``, ``xs.append(v)``),
    in order of first appearance."""
    seen = {}
    for stmt in block:
        for node in _names_in_scope(stmt):
            if isinstance(node.ctx, S.Store):
                seen.setdefault(node.id, None)
        for node in S.walk(stmt):
            if isinstance(node, S.Subscript) and isinstance(node.ctx, S.Store):
                base = node.value
                while isinstance(base, S.Subscript):
                    base = base.value
                if isinstance(base, S.Name):
                    seen.setdefault(base.id, None)
            elif isinstance(node, S.Call) and isinstance(node.func, S.Attribute) \
                    and isinstance(node.func.value, S.Name) \
                    and node.func.attr in ("append", "extend", "pop", "insert"):
                seen.setdefault(node.func.value.id, None)
    return list(seen)


def _reads(node):
    """Names a statement, a test or an iterable reads (an augmented assignment
    reads its target, and ``x[i] = v`` reads x)."""
    loads = set(_loads([node]))
    if isinstance(node, S.AugAssign) and isinstance(node.target, S.Name):
        loads.add(node.target.id)
    return loads


def _writes(node):
    """Names a simple statement (or a loop's target) surely assigns."""
    if isinstance(node, (S.Assign, S.AugAssign, S.gast.AnnAssign, S.Name, S.Tuple, S.List)):
        return _stored(node)
    return set()


class _Defined(dataflow.Forward):
    """The names surely assigned: a must-analysis."""

    def join(self, one, other):
        return one & other

    def simple(self, stmt, state):
        return state | _stored(stmt)

    def enter_body(self, loop, state):
        return state | _stored(loop.target) if isinstance(loop, S.For) else state
