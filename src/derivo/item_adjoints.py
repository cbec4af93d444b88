"""Two rewrites of a finished gradient that make item adjoints what a person writes.

``add_items_in_place`` adds each item's adjoint into its place (``bX[i] += g``)
where the general helper's checks are sure to pass; ``read_uniform_adjoints``
reads one number where a list's adjoints would all be that number.  Both run on
the gradient function reverse mode emitted, before derivo.optimize.
"""

from . import runtime
from . import syntax as S


def add_items_in_place(function, sweep):
    """In ``function``, which the reverse.Sweep ``sweep`` emitted: ``bX[i] += g``
    for ``bX = add_at(bX, g, X, i)`` where add_at's checks are sure to pass: X
    is a parameter the function reads only item by item,
    at integer positions (``X[i]`` with i counting a range, ``X[2]``), and no
    item it reads is a container itself.  Then X's adjoint starts as
    ``zeros_for(X)``, and no other name ever holds it or an item of it.  In
    scalar code, where the items are numbers, an add into a position surely
    still zero becomes a store (see :func:`_assign_first_add`)."""
    if not sweep.analysis.kinds.read_item_by_item:
        return
    assignments = [n for n in S.statements(function)
                   if isinstance(n, (S.Assign, S.AugAssign))]
    for ident in sweep.analysis.kinds.read_item_by_item:
        name = sweep.adjoint(ident)
        writes = [s for s in assignments if name in S.stored_names(
            s.targets if isinstance(s, S.Assign) else s.target)]
        scatters = [s for s in writes if getattr(s, "item_of", None) == ident]
        zeros = [s for s in writes if getattr(s, "zero_of", None) == ident]
        if len(scatters) + len(zeros) < len(writes) or not all(
                sweep.analysis.kinds.integral(s.value.args[-1]) for s in scatters):
            continue
        allowed = {id(s.value.args[0]) for s in scatters} | {
            id(n) for n in S.walk(function.body[-1])}  # the return
        if any(isinstance(n, S.Name) and n.id == name and isinstance(n.ctx, S.Load) and
               id(n) not in allowed for n in S.walk(function)):
            continue
        for stmt in zeros:
            stmt.value = S.call(sweep.runtime("zeros_for"), S.name(ident))
        rewritten, adds = {id(s) for s in scatters}, []
        for block in S.blocks(function):
            for index in reversed(range(len(block))):
                stmt = block[index]
                if id(stmt) not in rewritten:
                    continue
                adjoint, _, position = stmt.value.args[-3:]
                add = S.copy_location(S.gast.AugAssign(
                    target=S.gast.Subscript(value=S.name(name), slice=position,
                                            ctx=S.Store()),
                    op=S.Add(), value=adjoint), stmt)
                adds.append(add)
                total = stmt.value.args[0]
                if isinstance(total, S.Name) and total.id == name:  # add_at(bX, ...)
                    block[index] = add
                else:  # the first contribution, getitem_vjp(g, X, i)
                    zeros.append(S.assign(name, S.call(sweep.runtime("zeros_for"),
                                                       S.name(ident))))
                    block[index:index + 1] = [zeros[-1], add]
        if not sweep.arrays and len(zeros) == len(adds) == 1:  # items are numbers
            _assign_first_add(function, zeros[0], adds[0], sweep.module.namespace)


def read_uniform_adjoints(function, namespace):
    """In ``function``, whose module has the globals ``namespace``: ``bt = g``
    for ``bitems, bt = pop_adjoint(bitems)`` where bitems is ``sum_vjp(g, items)`` (the adjoint of ``sum(items)``, items a list built
    by appends), g a number or a name that keeps one value (assigned once,
    outside any loop): every item's adjoint is g, so the reverse of
    ``sum(f(x) for x in xs)`` reads g on each trip and the list of copies
    goes."""
    pops = {name for name, obj in namespace.items()
            if obj is runtime.pop_adjoint}
    repeats = {name for name, obj in namespace.items()
               if obj is runtime.sum_vjp}
    if not repeats:
        return
    stores = S.store_counts(function)
    places = _places(function)
    constant = {arg.id for arg in function.args.args + function.args.kwonlyargs} | {
        name for stmt in S.statements(function) if isinstance(stmt, S.Assign) and
        not places[id(stmt)][1] for name in S.stored_names(stmt.targets)}
    for stmt in function.body:
        name = S.single_target(stmt)
        value = stmt.value if name else None
        if not (isinstance(value, S.Call) and isinstance(value.func, S.Name) and
                value.func.id in repeats and len(value.args) == 2):
            continue
        each = value.args[0]
        if not (isinstance(each, S.Constant) or isinstance(each, S.Name) and
                stores[each.id] == 1 and each.id in constant):
            continue
        reads = [n for n in S.walk(function) if isinstance(n, S.Name) and n.id == name and
                 isinstance(n.ctx, S.Load)]
        popping = [s for s in S.walk(function) if isinstance(s, S.Assign) and
                   isinstance(s.targets[0], S.Tuple) and len(s.targets[0].elts) == 2 and
                   isinstance(s.value, S.Call) and isinstance(s.value.func, S.Name) and
                   s.value.func.id in pops and len(s.value.args) == 1 and
                   any(s.value.args[0] is n for n in reads)]
        if len(popping) == len(reads) == stores[name] - 1:
            for pop in popping:
                pop.targets[0] = pop.targets[0].elts[1]
                pop.value = S.deepcopy(each)


def _assign_first_add(function, zeros, add, namespace):
    """``bX[i] += g`` becomes ``bX[i] = g`` where bX[i] is surely still zero: ``zeros``
    (``bX = zeros_for(X)``) and ``add`` are bX's only writes, and ``add`` runs after
    it in the same block, or at most once per trip of a loop that block runs next,
    over a range whose positions never repeat.  The store is what a person writes
    (Horner's reverse loop stores each coefficient's adjoint) and costs less than
    reading the zero back to add to it."""
    places = _places(function)
    zeros_block, zeros_loops = places[id(zeros)]
    add_block, add_loops = places[id(add)]
    if add_block is zeros_block:
        first = add_block.index(zeros) < add_block.index(add)
    else:
        loop = add_loops[-1] if add_loops[:-1] == zeros_loops else None
        first = isinstance(loop, S.For) and any(s is loop for s in zeros_block) and \
            zeros_block.index(zeros) < zeros_block.index(loop) and \
            isinstance(add.target.slice, S.Name) and \
            add.target.slice.id == getattr(loop.target, "id", None) and \
            loop.target.id not in S.stored_names(loop.body) and \
            _distinct(loop.iter, namespace, S.values_assigned_once(function))
    if first:
        add_block[add_block.index(add)] = S.copy_location(
            S.gast.Assign(targets=[add.target], value=add.value, type_comment=None), add)


def _places(function):
    """{id(statement): (the block holding it, the loops around it, innermost last)}."""
    places = {}

    def visit(block, loops):
        for stmt in block:
            places[id(stmt)] = (block, loops)
            for field in ("body", "orelse"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list):
                    looped = field == "body" and isinstance(stmt, (S.For, S.While))
                    visit(inner, loops + (stmt,) if looped else loops)
    visit(function.body, ())
    return places


def _distinct(iterable, namespace, values):
    """Whether ``iterable`` (in generated code that reads ``namespace``) yields
    distinct non-negative positions: ``range(n)`` or ``range(k, n)`` with k a
    number, maybe sliced, maybe reversed, maybe named (``values`` holds what a
    name assigned once was assigned)."""
    if S.calls_builtin(iterable, reversed, namespace):
        iterable = iterable.args[0]
    if isinstance(iterable, S.Name):
        iterable = values.get(iterable.id)
    if isinstance(iterable, S.Subscript) and isinstance(iterable.slice, S.Slice) and \
            iterable.slice.step is None:
        iterable = iterable.value
    if not S.calls_builtin(iterable, range, namespace) or len(iterable.args) > 2:
        return False
    start = iterable.args[0] if len(iterable.args) == 2 else None
    return start is None or isinstance(start, S.Constant) and type(start.value) is int \
        and start.value >= 0
