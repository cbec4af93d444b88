"""A called function's VJP in two halves that hand over its residuals.

A user function that its caller calls (rather than inlines) gets a *forward*
function and a *backward* function, as JAX's ``vjp`` and tangent's split
functions do.  The caller's primal sweep calls ``f_forward(x, n)``, which runs
f's primal sweep once and returns f's value and its *residuals*: the values
f's reverse sweep reads (its stack, the values its last statements left, the
parameters it reads).  The caller's reverse sweep calls
``f_backward(bs, residuals)``, which runs f's reverse sweep only.  f's body runs
once per call: a random draw, a side effect or a ``try`` body is not repeated,
and the gradient is that of the run that made the value.

:func:`split` makes the halves out of f's VJP as a generator (see
:func:`derivo.reverse.reverse`'s ``pullback``), whose ``yield`` of f's value
stands between its primal and its reverse sweeps.
"""

from . import syntax as S
from .names import Namer, names_in


def split(pullback, forward_name, backward_name, stack):
    """The (forward, backward) FunctionDefs of ``pullback``, a VJP generator
    whose body has, at its top level, ``bs = yield value`` after its primal
    sweep.  ``stack`` is (the stack's name, {alias: the stack's method it
    binds}), or None when the function keeps no stack: the backward binds its
    own aliases (``pop = stack.pop``) rather than receive them."""
    body = pullback.body
    middle = next(i for i, stmt in enumerate(body) if _suspends(stmt))
    primal = body[:middle]
    if primal and S.is_comment(primal[-1]):  # the reverse sweep's heading
        primal = primal[:-1]
    reverse = body[middle + 1:]
    seed, value = body[middle].targets[0].id, body[middle].value.value
    aliases = stack[1] if stack else {}
    read = set(_read_before_assigned(reverse))
    if read & set(aliases):
        read.add(stack[0])
    params = S.param_names(pullback)
    # the stack, the parameters, then the values the primal sweep made, in order
    made = list(dict.fromkeys(([stack[0]] if stack else []) + params + [
        n.id for stmt in primal for n in S.walk(stmt)
        if isinstance(n, S.Name) and isinstance(n.ctx, S.Store)]))
    residuals = [n for n in made if n in read and n not in aliases]
    primal = _none_where_unassigned(
        [s for s in primal if not _binds_unused_alias(s, aliases, primal)],
        [n for n in residuals if n not in params], {stack[0] if stack else None, *aliases})
    if len(residuals) == 1:
        handed, unpack = residuals[0], []
    else:
        handed = Namer(names_in(pullback)).fresh("residuals")
        unpack = [S.assign(S.tuple_([S.store(n) for n in residuals], store_ctx=True),
                           S.name(handed))] if residuals else []
    rebound = [S.assign(alias, S.attribute(stack[0], method))
               for alias, method in aliases.items() if alias in read]
    forward = S.function(forward_name, [], primal + [S.return_(S.tuple_(
        [value, S.name(handed) if len(residuals) == 1 else
         S.tuple_([S.name(n) for n in residuals])]))])
    forward.args = pullback.args
    backward = S.function(backward_name, [seed, handed], unpack + rebound + reverse)
    return forward, backward


def _none_where_unassigned(primal, names, stack_names):
    """``primal`` with ``x = None`` after its stack's lines for each of ``names``
    that a loop or a branch may leave unassigned: it is handed over all the same
    (and read only where it was assigned)."""
    unset = [n for n in names if n not in _kept_always(primal)]
    start = next((i for i, stmt in enumerate(primal)
                  if S.single_target(stmt) not in stack_names), len(primal))
    return primal[:start] + [S.assign(n, S.const(None)) for n in unset] + primal[start:]


def _suspends(stmt):
    return isinstance(stmt, S.Assign) and isinstance(stmt.value, S.gast.Yield)


def _binds_unused_alias(stmt, aliases, primal):
    """Whether ``stmt`` binds an alias of the stack that ``primal`` never reads."""
    name = S.single_target(stmt)
    return name in aliases and name not in S.loaded_names(primal)


def _kept_always(block):
    """The names ``block`` surely assigns: those a top-level statement assigns,
    and those both arms of a top-level branch do."""
    assigned = set()
    for stmt in block:
        if isinstance(stmt, S.If):
            assigned |= _kept_always(stmt.body) & _kept_always(stmt.orelse)
        elif not isinstance(stmt, (S.For, S.While)):
            assigned |= S.stored_names(stmt)
    return assigned


def _read_before_assigned(block, assigned=None, found=None):
    """The names ``block`` may read before it assigns them: what it needs from
    the code run before it.  A statement's reads come before its stores
    (``x = x + 1``, ``bx += g`` read x, bx); a loop's or a branch's stores leave
    the names unassigned after it (it may run no trip, or the other arm)."""
    assigned = set() if assigned is None else assigned
    found = [] if found is None else found
    for stmt in block:
        if isinstance(stmt, (S.For, S.While, S.If)):
            head = stmt.iter if isinstance(stmt, S.For) else stmt.test
            _note_reads(head, assigned, found)
            inner = assigned | (S.stored_names(stmt.target) if isinstance(stmt, S.For)
                                else set())
            _read_before_assigned(stmt.body, set(inner), found)
            _read_before_assigned(stmt.orelse, set(assigned), found)
            continue
        _note_reads(stmt, assigned, found)
        if isinstance(stmt, S.gast.AugAssign) and isinstance(stmt.target, S.Name) and \
                stmt.target.id not in assigned and stmt.target.id not in found:
            found.append(stmt.target.id)
        assigned |= S.stored_names(stmt)
    return found


def _note_reads(node, assigned, found):
    for name in [n.id for n in S.walk(node) if isinstance(n, S.Name) and
                 isinstance(n.ctx, S.Load)]:
        if name not in assigned and name not in found:
            found.append(name)
