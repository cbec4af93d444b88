"""Stage 2b: paste small user functions into their callers.

A call to a user function whose statement form is straight-line code (no
branch, loop or in-place write) is replaced by that code, its names made fresh
in the caller, its parameters replaced by the call's arguments (names or
constants, see ``ssa``).  The caller's adjoint then differentiates the callee's
statements directly: no call, and no recomputation of the callee's forward
pass inside its VJP.  Other calls stay calls and get a VJP function of their own.

Inlined statements carry the call's source position: the generated code's
comments and derivo's errors point at the caller's line.
"""

from . import form
from . import syntax as S
from .outline import Loop
from .errors import DerivoError

MAX_DEPTH = 4  # a deeper chain of straight-line helpers is left as calls
SIMPLE = (S.Assign, S.Expr, S.gast.Assert)


def inline_calls(normalized, normalize_function, depth=0):
    """Inline, in place, the straight-line user functions ``normalized`` calls.

    ``normalize_function(func)`` gives a user function's statement form.
    """
    _inline_block(normalized.tree.body, normalized, normalize_function, depth)
    form.check(normalized.tree, "inline")
    return normalized


def _inline_block(block, caller, normalize_function, depth):
    index = 0
    while index < len(block):
        stmt = block[index]
        for field in ("body", "orelse"):
            if isinstance(getattr(stmt, field, None), list):
                _inline_block(getattr(stmt, field), caller, normalize_function, depth)
        replacement = _inline(stmt, caller, normalize_function, depth)
        if replacement is None:
            index += 1
        else:
            block[index:index + 1] = replacement
            index += len(replacement)


def _inline(stmt, caller, normalize_function, depth):
    callee = form.annotation(getattr(stmt, "value", None), "user_function")
    if callee is None or isinstance(callee, Loop) or not isinstance(stmt, S.Assign) \
            or depth >= MAX_DEPTH:
        return None
    try:
        function = normalize_function(callee)
    except DerivoError:
        return None  # left as a call: transforming it reports the problem
    if not _straight(function.tree.body[:-1]) or form.annotation(function.tree, "owned"):
        return None
    inline_calls(function, normalize_function, depth + 1)
    body = function.tree.body[:-1]
    bindings = _bind_arguments(stmt.value, function)
    if bindings is None or not _same_globals(function, caller, bindings):
        return None
    renames = {}
    for name in sorted(_locals(function) - set(bindings)):
        renames[name] = caller.namer.fresh(name)
    targets = stmt.targets[0]
    returns_tuple = isinstance(function.tree.body[-1].value, S.Tuple)
    if isinstance(targets, S.Tuple) != returns_tuple:
        return None  # t = f(x) of a tuple, even of one value: left as a call
    targets = targets.elts if returns_tuple else [targets]
    if len(targets) != len(function.results):
        return None
    copies = []
    arguments = {b.id for b in bindings.values() if isinstance(b, S.Name)}
    for target, result in zip(targets, function.results):
        if result in renames and target.id not in arguments and len(targets) == 1:
            renames[result] = target.id  # the callee computes straight into the target
        else:
            copies.append(S.assign(target.id, _substituted(S.name(result), renames, bindings)))
    statements = [_substituted(s, renames, bindings) for s in S.deepcopy(body)] + copies
    for original, pasted in zip(body, statements):
        if _updated_name(pasted) is None:
            pasted.augmented = False  # v += e of a parameter given a constant: v = 1.0 + e
    for new in statements:
        for node in S.walk(new):
            if hasattr(node, "lineno"):
                S.copy_location(node, stmt)
        S.copy_location(new, stmt)
    return statements


def _updated_name(stmt):
    """The name ``stmt`` updates in place when it is ``y1 = y + e`` made of
    ``y += e`` (see ssa), or None."""
    left = stmt.value.left if form.annotation(stmt, "augmented") and \
        isinstance(stmt.value, S.BinOp) else None
    return left.id if isinstance(left, S.Name) else None


def _straight(body):
    """Straight-line code that writes into nothing: assignments, asserts, and
    expressions evaluated for effect (but no ``xs.append``)."""
    for stmt in body:
        if not isinstance(stmt, SIMPLE):
            return False
        if isinstance(stmt, S.Assign) and isinstance(stmt.targets[0], S.Subscript):
            return False
        if isinstance(stmt, S.Expr) and isinstance(stmt.value, S.Call) and \
                isinstance(stmt.value.func, S.Attribute):
            return False
    return True


def _bind_arguments(call, function):
    """{parameter: argument node} for a call, defaults included, or None."""
    params = function.params
    bindings = dict(zip(params, call.args))
    for keyword in call.keywords:
        if keyword.arg not in params or keyword.arg in bindings:
            return None
        bindings[keyword.arg] = keyword.value
    func = function.parsed.func
    defaults = dict(zip(params[len(params) - len(func.__defaults__ or ()):
                               len(function.tree.args.args)], func.__defaults__ or ()))
    defaults.update(func.__kwdefaults__ or {})
    for param in params:
        if param not in bindings:
            value = defaults.get(param, call)
            if not isinstance(value, (int, float, bool, str, type(None))):
                return None  # no default, or one that is not a literal
            bindings[param] = S.const(value)
    return bindings


def _locals(function):
    names = set(function.params)
    for node in S.walk(function.tree):
        if isinstance(node, S.Name) and isinstance(node.ctx, S.Store):
            names.add(node.id)
    return names


def _same_globals(function, caller, bindings):
    """Whether each free name of the callee means the same in the caller."""
    local = _locals(function)
    caller_locals = caller.parsed.local_names | {
        n.id for n in S.walk(caller.tree) if isinstance(n, S.Name)
        and isinstance(n.ctx, S.Store)}
    for node in S.walk(function.tree.body):
        if isinstance(node, S.Name) and node.id not in local:
            if node.id in caller_locals or \
                    caller.parsed.resolve(node.id) is not function.parsed.resolve(node.id):
                return False
    return True


def _substituted(tree, renames, bindings):
    class Rename(S.NodeTransformer):
        def visit_Name(self, node):
            if isinstance(node.ctx, S.Load) and node.id in bindings:
                return S.deepcopy(bindings[node.id])
            if node.id in renames:
                return S.copy_location(type(node)(id=renames[node.id], ctx=node.ctx,
                                                  annotation=None, type_comment=None), node)
            return node

    return Rename().visit(tree)
