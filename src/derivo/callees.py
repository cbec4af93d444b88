"""What a call calls, made plain for the stages after ssa.

- A user function reached through a value: ``functools.partial`` of it, a method
  bound to an object (``model.predict``, ``self.predict``), an object's
  ``__call__``.  The call becomes a call of the function itself, with what the
  value holds given first (the object, read where the call reads it; the
  partial's arguments, as names the generated module binds or as constants).
- A function reached through a parameter, a local alias or an item
  (``loss_fn(w)``, ``ACTIVATIONS[kind](x)``): the call becomes a call of a name
  holding it.
- A user function taking ``*args`` or ``**kwargs``: the call becomes a call of a
  copy taking the arguments this call gives.
- A method of a loop's item, ``layer.forward(x)`` of ``for layer in LAYERS``,
  or the item itself where each is a function (``f(x)`` of ``for f in BASIS``):
  :func:`item_call` says which functions the list's classes run, for
  derivo.dispatch to branch over them and derivo.fence to read them.

From then on each is a call of a user function (inlined, or given a VJP) or of a
primitive like any other.  The values the call went through are reads the
derivative checks on each call (see :class:`derivo.cache.LiveReads`), so a call
after they changed transforms again.
"""

import dataclasses
import functools
import inspect
import types

from . import rules
from . import syntax as S
from .lift import code_key, compile_trees
from .parse import MISSING, PARAMETERS, called_by_class, parse, record_reads, recording_reads
from .memory import is_user_function, user_function
from .names import identifier
from .trees import builds_a_record


def direct_call(call, callee, parsed):
    """The user function that runs when ``call`` calls ``callee``, with ``call``
    made a call of it (in place); None, leaving ``call`` as it is, for a callee
    that is not a user function reached through a value."""
    if is_user_function(callee) or rules.is_primitive(callee):
        _name_what_is_called(call, callee, parsed)
        if not is_user_function(callee):
            return None
        function = _spread(callee, call, parsed) or callee
        function = given_functions(function, call, parsed) or function
        if function is callee:
            return None
        call.func = S.copy_location(S.name(parsed.hold(identifier(function.__name__), function)),
                                    call.func)
        return function
    if isinstance(callee, type):
        if builds_a_record(callee):
            _record_rule(callee)
        return None  # (a class makes an object: what its __init__ does is not a value)
    function, given = user_function(callee)
    if function is None:
        return None
    bound, keywords = _bound_arguments(callee)
    if len(bound) != given:
        return None
    receiver = _receiver(call, callee)
    origin = parsed.origin_of(receiver) if receiver is not None else None
    call.args = [receiver if receiver is not None else _argument(parsed, value, call)
                 for value in bound[:1]] + [_argument(parsed, value, call)
                                            for value in bound[1:]] + call.args
    given_keywords = {k.arg for k in call.keywords}
    call.keywords = [S.gast.keyword(arg=name, value=_argument(parsed, value, call))
                     for name, value in keywords.items() if name not in given_keywords] + \
        call.keywords
    function = _spread(function, call, parsed) or function  # __call__(self, *args, **kwargs)
    if origin is not None:  # what it calls through self is read where the caller read self
        function = _specialised(function, bound[0], origin)
    elif _read_nowhere(receiver, parsed):  # (an analysis's copy: see with_its_object)
        function = with_its_object(function, callee)
    call.func = S.copy_location(S.name(parsed.hold(identifier(function.__name__), function)),
                                call.func)
    return function


def _name_what_is_called(call, callee, parsed):
    """Make a call through a parameter, a local alias or an item (``loss_fn(w)``,
    ``act(x)`` of ``act = ACTIVATIONS[kind]``) a call of a name holding what it
    calls: later stages, and the callers it is pasted into, see the function."""
    root = S.root_name(call.func)
    if isinstance(callee, rules.Method) or root is None or \
            isinstance(call.func, S.Attribute) and root.id not in parsed.fixed or \
            parsed.resolve_expression(call.func) is not MISSING:
        return  # (x.sum(), np.tanh(x): what the call says is what it calls)
    name = parsed.hold(identifier(getattr(callee, "__name__", "function")), callee)
    call.func = S.copy_location(S.name(name), call.func)


def _spread(function, call, parsed):
    """For a call of a user function taking ``*args`` or ``**kwargs``, the copy of it
    :func:`spread` makes for the arguments the call gives, the call's keywords
    renamed to match.  None for any other call."""
    if any(isinstance(a, S.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        return None
    made = spread(function, len(call.args), [k.arg for k in call.keywords])
    if made is None:
        return None
    copy, renamed = made
    for keyword in call.keywords:
        keyword.arg = renamed.get(keyword.arg, keyword.arg)
    return copy


def takes_spread_arguments(function):
    """Whether ``function`` is a Python function taking ``*args`` or ``**kwargs``."""
    code = getattr(function, "__code__", None)
    return code is not None and bool(code.co_flags & (inspect.CO_VARARGS |
                                                       inspect.CO_VARKEYWORDS))


def spread(function, npositional, keywords):
    """For a user function taking ``*args`` or ``**kwargs``, a copy whose parameters
    are the arguments a call of ``npositional`` positional arguments and the
    ``keywords`` gives (``args_0``, ``args_1``, a keyword-only ``c``, or ``kwargs_c``
    where the function has a name ``c``), which
    builds ``args`` and ``kwargs`` from them first; and {keyword: the copy's
    parameter for it}.  None for any other function."""
    if not takes_spread_arguments(function):
        return None
    callee = parse(function)
    tree, args = callee.tree, callee.tree.args
    named = [a.id for a in args.args + args.kwonlyargs]
    first = tree.body[0]
    built = []
    renamed = {}
    if args.vararg is not None:
        extra = ["{}_{}".format(args.vararg.id, i)
                 for i in range(max(npositional - len(args.args), 0))]
        args.args += [S.param(name) for name in extra]
        if _VarargsAsNames(args.vararg.id, extra,
                           "len" not in function.__globals__).rewrite(tree):
            built.append(S.assign(args.vararg.id, S.tuple_([S.name(n) for n in extra])))
        args.vararg = None
    if args.kwarg is not None:
        # a keyword is its parameter's name, unless the function has that name already
        taken = set(named) | {n.id for n in S.walk(tree) if isinstance(n, S.Name)}
        renamed = {k: k if k not in taken else "{}_{}".format(args.kwarg.id, k)
                   for k in keywords if k not in named}
        args.kwonlyargs += [S.param(name) for name in renamed.values()]
        args.kw_defaults += [None] * len(renamed)
        if _read_by_key(tree, args.kwarg.id, renamed):
            built.append(S.assign(args.kwarg.id, S.gast.Dict(
                keys=[S.const(k) for k in renamed],
                values=[S.name(n) for n in renamed.values()])))
        args.kwarg = None
    for stmt in built:
        for node in S.walk(stmt):
            S.copy_location(node, first)
    tree.body = built + tree.body
    tree.name = identifier(function.__name__)
    copy = compile_trees(callee, [tree], {})[tree.name]
    copy.__qualname__ = function.__qualname__  # (what messages and docstrings call it)
    copy.derivo_key = (code_key(function), npositional, tuple(keywords))
    return copy, renamed


class _VarargsAsNames(S.NodeTransformer):
    """Reads of ``*args`` that name its items (``args[0]``, ``len(args)``,
    ``args + (ones,)``, ``(ones,) + args``) made reads of the parameters the call
    gives: a tuple it builds is then a tuple of those, as the call wrote it."""

    def __init__(self, vararg, names, builtin_len):
        self.vararg, self.names, self.builtin_len = vararg, names, builtin_len

    def rewrite(self, tree):
        """Rewrite ``tree``; whether ``args`` is still read otherwise (then it is
        built as a tuple).  A function that assigns ``args`` is left as it is."""
        if self.vararg in S.stored_names(tree.body):
            return True
        self.visit(tree)
        return any(isinstance(n, S.Name) and n.id == self.vararg for n in S.walk(tree.body))

    def _items(self, node):
        if isinstance(node, S.Name) and node.id == self.vararg:
            return [S.copy_location(S.name(n), node) for n in self.names]
        return list(node.elts) if isinstance(node, S.Tuple) else None

    def visit_BinOp(self, node):
        self.generic_visit(node)
        left, right = self._items(node.left), self._items(node.right)
        if isinstance(node.op, S.Add) and left is not None and right is not None:
            return S.copy_location(S.tuple_(left + right), node)
        return node

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if isinstance(node.value, S.Name) and node.value.id == self.vararg and \
                isinstance(node.slice, S.Constant) and type(node.slice.value) is int and \
                -len(self.names) <= node.slice.value < len(self.names):
            return S.copy_location(S.name(self.names[node.slice.value]), node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, S.Name) and node.func.id == "len" and self.builtin_len and \
                len(node.args) == 1 \
                and not node.keywords and isinstance(node.args[0], S.Name) and \
                node.args[0].id == self.vararg:
            return S.copy_location(S.const(len(self.names)), node)
        return node


def _read_by_key(tree, kwargs, given):
    """Make each ``kwargs["c"]`` of ``tree`` the parameter ``given["c"]``, and, in a
    function that never changes ``kwargs`` (no assignment, no method), a call's
    ``**kwargs`` the keywords ``c=given["c"]``; whether ``kwargs`` is still read
    otherwise (then it is built as a dict)."""
    unchanged = kwargs not in S.stored_names(tree.body) and not any(
        isinstance(n, S.Attribute) and isinstance(n.value, S.Name) and n.value.id == kwargs
        for n in S.walk(tree.body))

    class Keys(S.NodeTransformer):
        def visit_Call(self, node):
            self.generic_visit(node)
            if unchanged:
                node.keywords = [new for k in node.keywords for new in (
                    [S.copy_location(S.keyword(arg=key, value=S.name(name)), k)
                     for key, name in given.items()]
                    if k.arg is None and isinstance(k.value, S.Name) and k.value.id == kwargs
                    else [k])]
            return node

        def visit_Subscript(self, node):
            self.generic_visit(node)
            if isinstance(node.value, S.Name) and node.value.id == kwargs and \
                    isinstance(node.slice, S.Constant) and node.slice.value in given and \
                    isinstance(node.ctx, S.Load):
                return S.copy_location(S.name(given[node.slice.value]), node)
            return node

    Keys().visit(tree)
    return any(isinstance(n, S.Name) and n.id == kwargs for n in S.walk(tree.body))


def _looped_items(parsed, name, loops):
    """(the expression of the list, its items) when ``name`` takes its values from
    a list or a tuple the transformation reads (see :func:`derivo.parse.loop_lists`):
    a global, a closure variable, an attribute of a fixed ``self``, a parameter a
    derivative specialises on; None for any other name."""
    listed = loops.get(name)
    if listed is None:
        return None
    items = parsed.resolve_expression(listed, items=True)
    return (listed, items) if isinstance(items, (list, tuple)) and items else None


def item_call(parsed, call, loops=None):
    """(the item's name, the method's, the list's expression, its items, {class:
    (the index of its first item, its function)}) for ``call`` of a method of a
    loop's item, ``layer.forward(x)`` or ``layer(x)`` (its ``__call__``), each of
    whose items (see :func:`_looped_items`) is an object of a class defining it as
    a user function; with {} for the classes where each item is a function,
    called as it is (a user function or a primitive: ``f(x)`` of ``for f in
    BASIS``); None for any other call.  ``loops``: the loop lists (see
    :func:`derivo.parse.loop_lists`) of the tree ``call`` is in, if not the
    function's own."""
    func = call.func
    name, attr = (func.value, func.attr) if isinstance(func, S.Attribute) else \
        (func, "__call__")
    loops = parsed.loop_lists if loops is None else loops
    looped = _looped_items(parsed, name.id, loops) if isinstance(name, S.Name) else None
    if looped is None:
        return None
    if attr == "__call__" and all(is_user_function(item) or rules.is_primitive(item)
                                  for item in looped[1]):
        return name.id, attr, *looped, {}
    methods = _item_methods(looped[1], attr)
    return None if methods is None else (name.id, attr, *looped, methods)


def _item_methods(items, attr):
    """{class: (the index of its first item, its function ``attr``)} of the
    classes of ``items``, in the order they come; None unless every item's
    ``attr`` is a user function of its class (not one the item holds itself)."""
    found = {}
    for index, item in enumerate(items):
        function = inspect.getattr_static(type(item), attr, None)  # (no staticmethod)
        if not is_user_function(function) or attr in getattr(item, "__dict__", {}):
            return None
        found.setdefault(type(item), (index, function))
    return found


def _record_rule(cls):
    """Register the rule of building ``cls``, a dataclass or a NamedTuple."""
    if issubclass(cls, tuple):
        rules.record_rule(cls, cls._fields, range(len(cls._fields)))
    else:
        fields = [f.name for f in dataclasses.fields(cls) if f.init]
        rules.record_rule(cls, fields, fields)


def given_functions(function, call, parsed):
    """For a call that gives ``function`` a function for a parameter it calls
    (``odeint(dynamics, y0, ts)`` with ``def odeint(f, y0, ts): ... f(y, t)``), a
    copy of ``function`` that knows what those parameters hold; None for any other
    call.  The caller's read of what it gives is checked as the caller's own (a
    global it names, a parameter it is said to hold): the copy reads nothing more.
    (A local function reading the caller's locals is given as one that takes
    them: see :func:`derivo.factories.pass_closed_over_locals`.)"""
    if any(isinstance(a, S.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        return None
    try:
        called = parse(function).callee_parameters
    except Exception:  # (the transformation reports what it cannot read)
        return None
    code = function.__code__
    positional = code.co_varnames[:code.co_argcount]
    given = {**dict(zip(positional, call.args)), **{k.arg: k.value for k in call.keywords}}
    fixed = {}
    for name in sorted(set(called) & set(given)):
        with recording_reads() as reads:
            value = parsed.resolve_expression(given[name], items=True) if isinstance(
                given[name], (S.Name, S.Attribute, S.Subscript)) else MISSING
        followed = value is not MISSING and _followed(value)
        if followed:
            fixed[name] = value
        # what the copy is told depends on what the caller gives; a parameter
        # given something not followed is checked by the caller's own entry
        record_reads(read for read in reads.values() if followed or read[0] is not PARAMETERS)
    fixed.update(_function_defaults(function, set(called) - set(given)))
    if not fixed:
        return None
    key = (code_key(function), tuple((name, id(value)) for name, value in sorted(fixed.items())))
    if key not in _GIVEN:  # one copy per function given: a recursive call calls itself
        copy = copy_function(function)
        copy.derivo_fixed = (fixed, dict.fromkeys(fixed))  # (read where the caller reads them)
        copy.derivo_key = key
        _GIVEN[key] = copy  # (it holds what it is given: no id in a key is reused)
    return _GIVEN[key]


def _function_defaults(function, names):
    """{parameter: its default} for those of ``names`` whose default is a function
    derivo follows (``def predict(params, x, nonlinearity=np.tanh)`` called as
    ``predict(params, x)``, autograd's neural_net_regression.py)."""
    code = function.__code__
    positional = code.co_varnames[:code.co_argcount]
    defaults = dict(zip(positional[len(positional) - len(function.__defaults__ or ()):],
                        function.__defaults__ or ()))
    defaults.update(function.__kwdefaults__ or {})
    return {name: value for name, value in defaults.items() if name in names and _followed(value)}


def _followed(value):
    """Whether ``value`` is a function a copy may be told a parameter holds."""
    return callable(value) and not isinstance(value, type) and (
        is_user_function(value) or rules.is_primitive(value))


#: {(a function's key, its parameters with the ids of the functions they hold): its copy}
_GIVEN = {}


def copy_function(function, name=None):
    """A new function object running ``function``'s code, with its attributes
    (and the ``__name__`` ``name``, if given)."""
    copy = types.FunctionType(function.__code__, function.__globals__, name or function.__name__,
                              function.__defaults__, function.__closure__)
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__qualname__, copy.__module__ = function.__qualname__, function.__module__
    copy.__dict__.update(function.__dict__)
    return copy


def _specialised(function, obj, origin):
    """A copy of ``function`` whose first parameter is known to hold ``obj``, which
    the derivative's entry reads at ``origin`` (see :attr:`derivo.parse.Parsed.fixed`;
    None: nowhere)."""
    code = function.__code__
    copy = copy_function(function)
    first = code.co_varnames[0]
    copy.derivo_fixed = ({first: obj}, {first: origin})
    # (transform.Build: a VJP per object)
    copy.derivo_key = (code_key(function), id(obj), origin[1:] if origin is not None else None)
    return copy


def with_its_object(function, callee):
    """``function``, what ``callee`` runs (see :func:`derivo.memory.user_function`),
    as a copy knowing what its ``self`` holds when ``callee`` is a method bound to
    an object or an object called (its ``__call__``), for an analysis of what it
    does (``self.layers`` it loops over: see derivo.writes); the transformation of
    the call reads and checks that object itself.  ``function`` for any other."""
    if isinstance(callee, types.MethodType) and not isinstance(callee.__self__, type):
        obj = callee.__self__
    elif called_by_class(callee):
        obj = callee
    else:
        return function
    key = (function.__code__, id(obj))
    if key not in _WITH_OBJECT:  # (it holds the object: no id in a key is reused)
        _WITH_OBJECT[key] = _specialised(function, obj, None)
    return _WITH_OBJECT[key]


#: {(a method's code, the id of its object): the copy knowing it (see with_its_object)}
_WITH_OBJECT = {}


def _read_nowhere(receiver, parsed):
    """Whether ``receiver`` is a chain of a parameter known to hold an object the
    derivative's entry reads nowhere (a copy made by :func:`with_its_object`)."""
    root = S.root_name(receiver) if receiver is not None else None
    return root is not None and root.id in parsed.fixed and \
        root.id in parsed.origins and parsed.origins[root.id] is None


def _receiver(call, callee):
    """The expression of the call that is the object a method is bound to
    (``self`` of ``self.predict(x)``, ``model`` of ``model(x)``), read where the call
    is; None when the call does not say it (a classmethod's class, a bound method
    held in an attribute of another object)."""
    if isinstance(callee, types.MethodType):
        func, obj = call.func, callee.__self__
        if not isinstance(func, S.Attribute) or isinstance(obj, type) or \
                func.attr in getattr(obj, "__dict__", {}) or \
                getattr(type(obj), func.attr, None) is not callee.__func__:
            return None
        return S.deepcopy(func.value)
    if isinstance(callee, functools.partial):
        return None
    return S.deepcopy(call.func)


def _bound_arguments(callee):
    """(the positional arguments, the keywords) ``callee`` gives the function it
    calls before the call's own."""
    if isinstance(callee, types.MethodType):
        return [callee.__self__], {}
    if isinstance(callee, functools.partial):
        inner, keywords = _bound_arguments(callee.func) if not is_user_function(
            callee.func) else ([], {})
        return inner + list(callee.args), {**keywords, **callee.keywords}
    return [callee], {}  # an object: its __call__


def _argument(parsed, value, call):
    node = S.const(value) if type(value) in S.LITERAL_TYPES and not isinstance(
        value, complex) else S.name(parsed.hold(_hint(value), value))
    return S.copy_location(node, call)


def _hint(value):
    name = value.__name__ if isinstance(value, type) else \
        getattr(type(value), "__name__", "value").lower()
    return name if name.isidentifier() else "value"
