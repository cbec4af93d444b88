"""Stage 1b: a ``def`` or ``lambda`` inside a function becomes a function of its own.

A local function reads the enclosing function's locals when it is called
(``lambda z: np.tanh(z) * a``).  Lifted, it takes each local it reads as a
keyword-only parameter, and each call passes the value the name holds at the
call (``act(x)`` becomes ``act(x, a=a)``): what the closure would have read,
so a local function defined in a loop, or reading a name assigned after its
``def``, means what it meant.  The caller's locals then reach the local
function as arguments, and derivo differentiates its calls as calls of any user
function: inlined when they are straight-line code, through a VJP otherwise.

A local function used as a value (``sorted(items, key=lambda t: t[1])``,
``map(act, xs)``) becomes the lifted function, or a ``functools.partial`` of
it holding the locals it reads, taken where the value is made.

The lifted functions are real Python functions (compiled from their trees, in
the enclosing function's globals, with each other in their closure), so the
generated code may call them; ``parse`` reads their tree from
``func.derivo_lifted``, not from the file.
"""

import functools

from . import syntax as S
from .errors import UnsupportedSyntax
from .names import Namer, names_in


class Lifted:
    """What ``parse`` reads for a lifted function: its tree and where it was written."""

    def __init__(self, tree, filename, lines, first_line):
        self.tree = tree
        self.filename = filename
        self.lines = lines
        self.first_line = first_line


class _Local:
    """A local function found in the enclosing function's body."""

    def __init__(self, name, node, statement):
        self.name = name            # the name the user gave it (None: an anonymous lambda)
        self.node = node            # its FunctionDef or Lambda
        self.statement = statement  # the def or the ``name = lambda`` (None: anonymous)
        self.tree = None            # the lifted FunctionDef
        self.lifted = None          # the lifted function's name
        self.free = []              # the enclosing function's locals it reads


def code_key(function):
    """What tells apart the code a Python function runs: a copy's ``derivo_key``
    (see derivo.callees), else its code object and the cells it closes over (the
    closures one factory makes are different functions)."""
    key = getattr(function, "derivo_key", None)
    if key is not None:
        return key
    return function.__code__, tuple(map(id, function.__closure__ or ()))


def lift_local_functions(parsed):
    """Lift, in place, the local functions of ``parsed`` (a
    :class:`derivo.parse.Parsed`): its tree then holds no ``def`` or ``lambda``,
    and ``parsed.closure`` holds the lifted functions under the names its calls use."""
    if not any(isinstance(n, (S.FunctionDef, S.gast.Lambda)) for n in S.walk(parsed.tree.body)):
        return _partials_mapped(parsed)
    # a local function keeps its name where no global, closure variable or other
    # local has it (``g = make(a)`` beside make's own ``def g``)
    lambdas = {n.targets[0].id for n in S.walk(parsed.tree.body) if isinstance(n, S.Assign)
               and isinstance(n.value, S.gast.Lambda) and isinstance(n.targets[0], S.Name)}
    defined = {n.name for n in S.walk(parsed.tree.body) if isinstance(n, S.FunctionDef)} | \
        lambdas
    defined -= S.stored_names(parsed.tree.body) - lambdas
    taken = names_in(parsed.tree) - defined | set(parsed.globals) | set(parsed.closure)
    namer = Namer(taken)
    if _builtin_map(parsed):
        _MapsAsGenerators(defined - lambdas, namer, _partial_names(parsed)).visit(parsed.tree)
    functions = _lift(parsed, parsed.tree, set(parsed.closure), namer)
    parsed.closure.update(functions)
    parsed.__dict__.pop("local_names", None)  # (a cached property of the tree)
    return parsed


def _builtin_map(parsed):
    return "map" not in set(parsed.globals) | set(parsed.closure) | S.stored_names(parsed.tree)


def _partial_names(parsed):
    """The names under which ``parsed`` reads ``functools.partial``."""
    return {name for scope in (parsed.globals, parsed.closure) for name, value in scope.items()
            if value is functools.partial} - S.stored_names(parsed.tree)


def _partials_mapped(parsed):
    """``parsed`` with its ``map(partial(f, a), xs)`` as generators, in a function
    holding no local function (see _MapsAsGenerators)."""
    partials = _partial_names(parsed)
    if not partials or not _builtin_map(parsed):
        return parsed
    namer = Namer(names_in(parsed.tree) | set(parsed.globals) | set(parsed.closure))
    _MapsAsGenerators(set(), namer, partials).visit(parsed.tree)
    parsed.__dict__.pop("local_names", None)  # (a cached property of the tree)
    return parsed


class _MapsAsGenerators(S.NodeTransformer):
    """``map(lambda x: body, xs)`` becomes ``(body for x in xs)``, and ``map(f, xs,
    ys)`` of a local ``def f`` ``(f(a, b) for a, b in zip(xs, ys))``: what map
    yields, as a generator derivo differentiates, the lambda's free names read
    where they were (the builtin ``map`` only, of functions given nothing more).
    ``map(partial(f, a, 2), xs)`` (autograd's hmm_em.py) becomes ``(f(a, 2, x) for
    x in xs)`` where each argument the partial binds is a constant or a name the
    function never assigns: read late by the generator, it holds what the partial
    took."""

    def __init__(self, local_defs, namer, partials=frozenset()):
        self.local_defs, self.namer, self.partials = local_defs, namer, partials
        self.assigned = set()

    def visit_Call(self, node):
        self.generic_visit(node)
        if not (isinstance(node.func, S.Name) and node.func.id == "map" and
                len(node.args) >= 2 and not node.keywords and
                not any(isinstance(a, S.Starred) for a in node.args)):
            return node
        function, iterables = node.args[0], node.args[1:]
        if isinstance(function, S.gast.Lambda):
            args = function.args
            if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or \
                    len(args.posonlyargs + args.args) != len(iterables):
                return node
            names = [a.id for a in args.posonlyargs + args.args]
            element = function.body
        elif isinstance(function, S.Name) and function.id in self.local_defs:
            names = [self.namer.fresh("item") for _ in iterables]
            element = S.call(S.name(function.id), *[S.name(n) for n in names])
        elif self._bound_early(function):
            names = [self.namer.fresh("item") for _ in iterables]
            element = S.call(function.args[0], *function.args[1:], *[S.name(n) for n in names])
        else:
            return node
        if len(names) == 1:
            target, iterable = S.store(names[0]), iterables[0]
        else:
            target = S.tuple_([S.store(n) for n in names], store_ctx=True)
            iterable = S.call(S.name("zip"), *iterables)
        loop = S.gast.comprehension(target=target, iter=iterable, ifs=[], is_async=0)
        made = S.gast.GeneratorExp(elt=element, generators=[loop])
        for part in S.walk(made):
            if getattr(part, "lineno", None) is None:
                S.copy_location(part, node)
        return S.copy_location(made, node)

    def visit_FunctionDef(self, node):
        self.assigned = self.assigned | S.stored_names(node)  # (an outer def's too)
        return self.generic_visit(node)

    def _bound_early(self, function):
        """Whether ``function`` is ``partial(f, *args)`` whose args a generator may
        read late: constants, and names the function never assigns."""
        return isinstance(function, S.Call) and isinstance(function.func, S.Name) and \
            function.func.id in self.partials and not function.keywords and \
            len(function.args) >= 1 and isinstance(function.args[0], S.Name) and \
            all(isinstance(a, S.gast.Constant) or
                isinstance(a, S.Name) and a.id not in self.assigned
                for a in function.args[1:])


def _lift(parsed, tree, outer_cells, namer):
    """Lift the local functions of ``tree`` (a FunctionDef), its own and theirs;
    return {lifted name: function} for all of them."""
    locals_ = _locals_of(tree)
    found = _local_functions(parsed, tree)
    named = {}
    for local in found:  # (a second definition of a name is refused below)
        if local.name is not None:
            named.setdefault(local.name, local)
    _refuse_rebound(parsed, tree, named)
    functions = {}
    for local in found:
        local.tree = _as_function(parsed, local, namer)
        functions.update(_lift(parsed, local.tree, outer_cells | locals_, namer))
    visible = (locals_ | outer_cells) - set(named)
    for local in found:
        own = _locals_of(local.tree)
        local.free = sorted({n.id for n in S.walk(local.tree.body) if isinstance(n, S.Name)
                             and isinstance(n.ctx, S.Load)} & visible - own)
    _close_over_calls(found, named)
    for local in found:
        local.tree.args.kwonlyargs += [S.param(name) for name in local.free]
        local.tree.args.kw_defaults += [None] * len(local.free)
        _Rewrite(parsed, named, []).rewrite(local.tree)
    _Rewrite(parsed, named, found).rewrite(tree)
    functions.update(compile_trees(parsed, [local.tree for local in found], functions))
    return functions


def _locals_of(tree):
    args = tree.args
    params = {a.id for a in args.posonlyargs + args.args + args.kwonlyargs}
    params |= {a.id for a in (args.vararg, args.kwarg) if a is not None}
    return params | _stored_outside_functions(tree.body)


def _stored_outside_functions(body):
    names = set()
    for node in _walk_own(body):
        if isinstance(node, S.Name) and isinstance(node.ctx, S.Store):
            names.add(node.id)
        elif isinstance(node, S.FunctionDef):
            names.add(node.name)
    return names


def _walk_own(body):
    """The nodes of ``body`` outside the bodies of the local functions it defines
    (their defaults and decorators too: those run where the function is made)."""
    todo = list(body)
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, (S.FunctionDef, S.gast.Lambda)):
            todo += node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
            todo += getattr(node, "decorator_list", [])
            continue
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, S.AST):
                todo.append(value)
            elif isinstance(value, list):
                todo += [item for item in value if isinstance(item, S.AST)]


def _local_functions(parsed, tree):
    """The local functions ``tree``'s own body makes, in the order written."""
    found = []
    for node in _walk_own(tree.body):
        if isinstance(node, S.FunctionDef):
            found.append(_Local(node.name, node, node))
        elif isinstance(node, S.Assign) and isinstance(node.value, S.gast.Lambda) and \
                len(node.targets) == 1 and isinstance(node.targets[0], S.Name):
            found.append(_Local(node.targets[0].id, node.value, node))
    assigned = {id(local.node) for local in found}
    found += [_Local(None, node, None) for node in _walk_own(tree.body)
              if isinstance(node, S.gast.Lambda) and id(node) not in assigned]
    return sorted(found, key=lambda local: (local.node.lineno, local.node.col_offset))


def _refuse_rebound(parsed, tree, named):
    """Refuse a local function's name that names something else too: derivo reads
    which function a call calls from the code, not from the values the name takes."""
    definitions = {id(local.statement) for local in named.values()}
    for node in _walk_own(tree.body):
        targets = []
        if isinstance(node, S.FunctionDef) and id(node) not in definitions:
            targets = [node]
        elif isinstance(node, S.Name) and isinstance(node.ctx, S.Store):
            targets = [node]
        for target in targets:
            name = getattr(target, "id", getattr(target, "name", None))
            statement = named.get(name)
            if statement is None or _is_definition_target(target, statement):
                continue
            raise parsed.error(
                UnsupportedSyntax, target,
                "cannot differentiate through {0!r}: it names a local function (line {1}) "
                "and is assigned again here; give each function a name of its own".format(
                    name, statement.node.lineno), "local function")
    params = _locals_of(tree) - _stored_outside_functions(tree.body)
    for name in set(named) & params:
        raise parsed.error(UnsupportedSyntax, named[name].statement,
                           "cannot differentiate through {!r}: a local function named like "
                           "a parameter; rename it".format(name), "local function")


def _is_definition_target(target, local):
    statement = local.statement
    return target is statement or isinstance(statement, S.Assign) and \
        target is statement.targets[0]


def _is_literal(node):
    """Whether a default is a constant, a signed number like -0.5 included."""
    if isinstance(node, S.UnaryOp) and isinstance(node.op, (S.USub, S.UAdd)):
        node = node.operand
    return isinstance(node, S.Constant)


def _as_function(parsed, local, namer):
    """The FunctionDef of a local function, named for the module it goes to."""
    node = local.node
    if getattr(node, "decorator_list", None):
        raise parsed.error(UnsupportedSyntax, node.decorator_list[0],
                           "cannot differentiate a decorated local function; define it at "
                           "module level", "decorator")
    for inner in S.walk(node):
        # compiled at module level, a nonlocal statement names no variable
        if isinstance(inner, (S.gast.Nonlocal, S.gast.Global)):
            construct = "nonlocal" if isinstance(inner, S.gast.Nonlocal) else "global"
            raise parsed.error(UnsupportedSyntax, inner,
                               "cannot differentiate {!r} in a local function: assigning "
                               "enclosing variables would make the derivative depend on "
                               "hidden state; return the value instead".format(construct),
                               construct)
    for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
        if not _is_literal(default):
            raise parsed.error(
                UnsupportedSyntax, default,
                "cannot differentiate a local function whose default is not a constant: "
                "derivo passes the locals it reads when it is called, and a default is "
                "read when it is made; pass the value as an argument", "local function")
    base = local.name or "lambda_line{}".format(node.lineno)
    local.lifted = namer.fresh(base)
    if isinstance(node, S.FunctionDef):
        tree = S.deepcopy(node)
        tree.name = local.lifted
    else:
        body = S.copy_location(S.return_(S.deepcopy(node.body)), node.body)
        tree = S.gast.FunctionDef(name=local.lifted, args=S.deepcopy(node.args), body=[body],
                                  decorator_list=[], returns=None, type_comment=None,
                                  type_params=[])
    tree.decorator_list = []
    tree.args.args, tree.args.posonlyargs = tree.args.posonlyargs + tree.args.args, []
    return S.copy_location(tree, node)


def _close_over_calls(found, named):
    """A local function that uses another one reads what that one reads."""
    changed = True
    while changed:
        changed = False
        for local in found:
            used = {n.id for n in S.walk(local.tree.body) if isinstance(n, S.Name)
                    and isinstance(n.ctx, S.Load) and n.id in named}
            own = _locals_of(local.tree)
            more = {name for other in used for name in named[other].free} - own - \
                set(local.free)
            if more:
                local.free = sorted(set(local.free) | more)
                changed = True


class _Rewrite(S.NodeTransformer):
    """Calls of local functions pass the locals they read; a local function used
    as a value is its lifted function with those locals given; the ``def`` and
    ``name = lambda`` statements of ``found`` go."""

    def __init__(self, parsed, named, found):
        self.parsed = parsed
        self.named = named
        self.removed = {id(local.statement) for local in found if local.statement is not None}
        self.anonymous = {id(local.node): local for local in found if local.statement is None}

    def rewrite(self, tree):
        self.generic_visit(tree)
        for node in S.walk(tree):  # a block that held only a def
            if getattr(node, "body", None) == []:
                node.body = [S.copy_location(S.Pass(), node)]

    def visit_FunctionDef(self, node):
        return None if id(node) in self.removed else node

    def visit_Assign(self, node):
        return None if id(node) in self.removed else self.generic_visit(node)

    def visit_Lambda(self, node):
        local = self.anonymous.get(id(node))
        return node if local is None else self.value_of(local, node)

    def visit_Call(self, node):
        func = node.func
        local = self.named.get(func.id) if isinstance(func, S.Name) else None
        if local is None:
            return self.generic_visit(node)
        node.args = [self.visit(arg) for arg in node.args]
        node.keywords = [self.visit(keyword) for keyword in node.keywords]
        node.func = S.copy_location(S.name(local.lifted), func)
        node.keywords += [S.gast.keyword(arg=name, value=S.copy_location(S.name(name), func))
                          for name in local.free]
        return node

    def visit_Name(self, node):
        local = self.named.get(node.id)
        if local is None or not isinstance(node.ctx, S.Load):
            return node
        return self.value_of(local, node)

    def value_of(self, local, node):
        lifted = S.copy_location(S.name(local.lifted), node)
        if not local.free:
            return lifted
        partial = self.parsed.hold("partial", functools.partial)
        keywords = [S.gast.keyword(arg=name, value=S.copy_location(S.name(name), node))
                    for name in local.free]
        return S.copy_location(S.call(S.copy_location(S.name(partial), node), lifted,
                                      keywords=keywords), node)


def compile_trees(parsed, trees, functions):
    """The Python functions of lifted trees, each seeing the others (and those of
    ``functions``) in its closure."""
    if not trees:
        return {}
    names = [t.name for t in trees] + list(functions)
    held = {n.id for tree in trees for n in S.walk(tree) if isinstance(n, S.Name)} & \
        set(parsed.closure)
    functions = {**{name: parsed.closure[name] for name in sorted(held)}, **functions}
    maker = S.function("derivo_lifted", list(functions),
                       S.deepcopy(trees) + [S.return_(S.tuple_([S.name(n) for n in names]))])
    S.copy_location(maker, trees[0])
    code = S.compile_tree(maker, parsed.filename)
    scope = {}
    exec(code, parsed.globals, scope)
    made = dict(zip(names, scope["derivo_lifted"](*functions.values())))
    for tree in trees:
        made[tree.name].derivo_lifted = Lifted(tree, parsed.filename, parsed.lines,
                                               parsed.first_line)
    return {tree.name: made[tree.name] for tree in trees}
