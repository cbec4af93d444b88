"""The fence: the Python constructs derivo refuses, and why, in one table;
and the calls refused in code derivo runs twice.

``ssa`` calls :func:`check_supported` before normalising a function, so every
refusal names the construct and points at the user's file, line and column.
``transform`` calls :func:`refuse_rerun_calls` on a checkpointed loop's body
and a helper's, which the reverse sweep runs again.
"""

import functools
import types

import numpy as np

from . import rules
from . import syntax as S
from .callees import given_functions, item_call
from .errors import UnsupportedSyntax
from .lift import code_key
from .memory import user_function
from .parse import MISSING, is_derivative, parse
from .trees import builds_a_record

_GENERATOR = "generators are not supported; collect what it yields in a list and return it"

# The fence: statements and expressions outside derivo's subset, and why.
REFUSED = {
    S.gast.Yield: _GENERATOR,
    S.gast.YieldFrom: _GENERATOR,
    S.gast.Await: "async code is not supported",
    S.gast.AsyncFunctionDef: "async functions are not supported",
    S.gast.AsyncFor: "async loops are not supported",
    S.gast.AsyncWith: "async code is not supported",
    S.gast.Global: "assigning module globals would make the derivative depend on hidden state",
    S.gast.Nonlocal: "assigning enclosing variables would make the derivative depend on hidden state",
    S.gast.Lambda: "lambdas inside a differentiated function are not supported; "
                   "define the function at module level",
    S.gast.FunctionDef: "nested functions are not supported; define the function at "
                        "module level",
    S.gast.ClassDef: "class definitions are not supported",
    S.gast.Delete: "'del' is not supported; build the value without the item instead "
                   "(xs = xs[1:])",
    S.gast.Import: "imports inside a differentiated function are not supported",
    S.gast.ImportFrom: "imports inside a differentiated function are not supported",
    S.gast.NamedExpr: "assignment expressions (:=) are not supported; assign on a line of "
                      "its own",
    # ssa lowers the others into loops (see ssa._lower_comprehensions)
    S.gast.ListComp: "a comprehension in a while test or under and, or, if-else is not "
                     "supported; compute it in a statement of its own",
    S.gast.SetComp: "set comprehensions are not supported; write a for loop",
    S.gast.DictComp: "a comprehension in a while test or under and, or, if-else is not "
                     "supported; compute it in a statement of its own",
    S.gast.GeneratorExp: "a generator expression is differentiated as the argument of sum, "
                         "min, max, any, all, list, tuple or sorted, outside a while test "
                         "and and, or, if-else; write a list comprehension instead",
    S.gast.Match: "'match' is not supported",
}
REFUSED_CALLS = {"exec", "eval", "globals", "locals", "vars", "setattr", "delattr"}

CONSTRUCT_NAMES = {
    S.gast.Yield: "yield", S.gast.YieldFrom: "yield from", S.gast.Await: "await",
    S.gast.AsyncFunctionDef: "async def", S.gast.AsyncFor: "async for",
    S.gast.AsyncWith: "async with", S.gast.Global: "global", S.gast.Nonlocal: "nonlocal",
    S.gast.Lambda: "lambda",
    S.gast.FunctionDef: "def", S.gast.ClassDef: "class", S.gast.Delete: "del",
    S.gast.Import: "import", S.gast.ImportFrom: "import", S.gast.NamedExpr: ":=",
    S.gast.ListComp: "list comprehension", S.gast.SetComp: "set comprehension",
    S.gast.DictComp: "dict comprehension", S.gast.GeneratorExp: "generator expression",
    S.gast.Match: "match",
}


def check_supported(parsed, tree):
    """Raise UnsupportedSyntax at the first construct derivo cannot differentiate."""
    unpacked = set()  # the ids of the f(*args) of calls (S.walk meets a call first)
    for node in S.walk(tree):
        if node is tree:
            if isinstance(tree, S.gast.AsyncFunctionDef):
                raise parsed.error(UnsupportedSyntax, tree, "cannot differentiate 'async def': "
                                   "async functions are not supported", "async def")
            if tree.args.vararg or tree.args.kwarg:
                raise parsed.error(UnsupportedSyntax, tree,
                                   "cannot differentiate '*args'/'**kwargs' parameters: "
                                   "name each parameter", "*args")
            continue
        kind = type(node)
        if kind in REFUSED:
            construct = CONSTRUCT_NAMES[kind]
            raise parsed.error(UnsupportedSyntax, node, "cannot differentiate {!r}: {}"
                               .format(construct, REFUSED[kind]), construct)
        if isinstance(node, (S.For, S.While)) and node.orelse:
            loop = "for" if isinstance(node, S.For) else "while"
            raise parsed.error(UnsupportedSyntax, node,
                               "cannot differentiate '{}...else': move the else block "
                               "after the loop with a flag".format(loop), loop + "-else")
        if isinstance(node, S.Call) and isinstance(node.func, S.Name) \
                and node.func.id in REFUSED_CALLS:
            raise parsed.error(UnsupportedSyntax, node,
                               "cannot differentiate '{}': code built at run time cannot "
                               "be transformed".format(node.func.id), node.func.id)
        if isinstance(node, S.Call):
            unpacked.update(id(a) for a in node.args if isinstance(a, S.Starred))
        elif isinstance(node, S.Starred) and id(node) not in unpacked:
            raise parsed.error(UnsupportedSyntax, node,
                               "cannot differentiate '*' unpacking outside a call's arguments: "
                               "write the items one by one", "*")


# --- code derivo runs twice ------------------------------------------------------------
#
# A checkpointed loop's trips run again in the reverse sweep, and so does the body of a
# helper derivo gives a VJP of its own; the derivative is right only if they compute
# what they computed the first time.  Code derivo runs twice may therefore call only
# what is known to give the same result from the same arguments: an allow-list (what a
# call may call is open-ended; a list of the calls that draw random numbers never ends).

#: Builtins whose result depends on their arguments alone (print writes them: it
#: feeds no value).  Not iter or next, which move an iterator on, nor map, filter.
RERUN_BUILTINS = frozenset({
    abs, all, any, bool, callable, chr, complex, dict, divmod, enumerate, float, format,
    frozenset, getattr, hasattr, int, isinstance, issubclass, len, list, max, min, ord, pow,
    print, range, repr, reversed, round, set, slice, sorted, str, sum, tuple, type, zip})
#: Modules every function of which depends on its arguments alone (NumPy's random
#: module aside: the calls of RANDOM_MODULES are refused before these are allowed)
RERUN_MODULES = ("math", "cmath", "operator", "numpy")
#: Methods of lists, dicts, strings and arrays the rule tables do not list, known by
#: name on a local value (none is a method of a random generator)
RERUN_METHODS = frozenset({
    "append", "extend", "insert", "pop", "index", "count", "get", "setdefault", "update",
    "item", "tolist", "fill", "sort", "reverse", "round", "nonzero", "diagonal", "repeat",
    "swapaxes", "format", "join", "split", "strip", "startswith", "endswith", "replace",
    # a with block's manager entered and left (its making is a call checked on its own)
    "__enter__", "__exit__"})
#: The modules of the generators whose functions and methods draw from hidden state
#: (np.random.normal is a method of NumPy's global RandomState, random.gauss of
#: Python's Random): refused even where a rule table lists one
RANDOM_MODULES = ("numpy.random", "random")


class Rerun:
    """Why a call in code derivo runs twice may give another result: ``node`` (the
    innermost call, in the file of ``parsed``), ``reason``, and whether it draws
    random numbers; ``via``: the calls of user functions that led to it, innermost
    first."""

    def __init__(self, parsed, node, reason, random):
        self.parsed, self.node, self.reason, self.random = parsed, node, reason, random
        self.via = []


def _module_of(obj):
    return getattr(obj, "__module__", None) or ""


def _in_modules(module, modules):
    return any(module == m or module.startswith(m + ".") for m in modules)


def _owner(callee):
    """The object ``callee`` is a method of, or None (a function, a module's builtin)."""
    owner = getattr(callee, "__self__", None)
    return None if isinstance(owner, types.ModuleType) else owner


def random_source(callee):
    """The name of what ``callee`` draws with (``numpy.random.Generator.normal``) when
    calling it draws from a random generator's hidden state: a function of, or a
    method of an object of, :data:`RANDOM_MODULES`; else None."""
    owner = _owner(callee)
    for module in (type(owner).__module__ or "" if owner is not None else "",
                   _module_of(callee)):
        top = next((m for m in RANDOM_MODULES if _in_modules(module, (m,))), None)
        if top is not None:
            name = getattr(callee, "__name__", "")
            return ".".join([top, type(owner).__name__, name] if owner is not None else
                            [top, name])
    return None


def _known_method(name):
    return name in RERUN_METHODS or rules.is_primitive(rules.Method(name))


def _is_known(callee):
    """Whether ``callee`` is a primitive of the rule tables, a builtin or a function
    of the allow-list, a ufunc, derivo's own, a record class, or a method of an
    array or a container (``x.sum`` of an array a fixed parameter holds)."""
    if rules.is_primitive(callee) or isinstance(callee, np.ufunc) or S.is_derivo(callee) or \
            builds_a_record(callee) or _in_modules(_module_of(callee), RERUN_MODULES):
        return True
    try:
        if callee in RERUN_BUILTINS:
            return True
    except TypeError:  # unhashable
        return False
    return isinstance(callee, types.BuiltinMethodType) and _owner(callee) is not None and \
        _known_method(callee.__name__)


def rerun_reason(parsed, call, seen):
    """None if ``call`` surely gives the same result when run again, else a
    :class:`Rerun`; ``seen``: the code of the user functions checked or being
    checked (a recursive function is checked once)."""
    callee = parsed.resolve_callee(call)
    looped = item_call(parsed, call) if callee is MISSING else None
    if looped is not None:  # layer.forward(x) of for layer in LAYERS
        return _reason_in_items(parsed, call, *looped[2:], seen)
    if callee is MISSING:
        if not isinstance(call.func, S.Attribute):
            return Rerun(parsed, call, "{!r} holds a function derivo cannot see when it "
                         "transforms the code (a parameter, a default or a local name given "
                         "a function)".format(parsed.words(call.func)), False)
        if _known_method(call.func.attr):
            return None  # x.sum(), xs.append(v): a method of an array or a container
        return Rerun(parsed, call, "{!r} is not a method derivo knows of an array, a list or "
                     "a dict, and {!r} is a value it cannot see when it transforms the "
                     "code".format(call.func.attr, parsed.words(call.func.value)), False)
    source = random_source(callee)
    if source is not None:
        return Rerun(parsed, call, "it draws random numbers ({}), from a generator's state "
                     "that running it again does not restore".format(source), True)
    if _is_known(callee):
        return _reason_in_arguments(parsed, call, seen)
    while is_derivative(callee):  # derivo.grad(energy): it runs energy's code
        callee = callee.__wrapped__
    function, given = user_function(callee)
    if function is None:
        return Rerun(parsed, call, "derivo has no rule for {!r} and cannot tell that it "
                     "gives the same result each time".format(parsed.words(call.func)), False)
    function = given_functions(function, call, parsed) or function
    found = _reason_in_body(function, _self_of(callee) if given else None, seen)
    if found is not None:
        found.via.append((parsed, call))
    return found


def _reason_in_items(parsed, call, iterable, items, methods, seen):
    """The first reason in the functions a call of a loop's item runs (see
    :func:`derivo.callees.item_call`), each read for its class's first item, or
    each item where the items are functions (the call of each, ``BASIS[0](x)``)."""
    if not methods:
        for index in range(len(items)):
            each = S.copy_location(S.call(S.subscript(S.deepcopy(iterable), S.const(index)),
                                          *call.args, keywords=call.keywords), call)
            found = rerun_reason(parsed, each, seen)
            if found is not None:
                return found
        return None
    for index, function in methods.values():
        found = _reason_in_body(function, items[index], seen)
        if found is not None:
            found.via.append((parsed, call))
            return found
    return _reason_in_arguments(parsed, call, seen)


def _self_of(callee):
    """What the first parameter of the function calling ``callee`` runs holds: the
    object of a bound method, an object called as a function (its ``__call__``);
    None for a class (its ``__init__`` gets a new object) or a partial."""
    if isinstance(callee, types.MethodType):
        return callee.__self__
    return None if isinstance(callee, (type, functools.partial)) else callee


def _reason_in_arguments(parsed, call, seen):
    """A function given to a call is called by it: each argument naming one must
    pass too (``sorted(xs, key=draw)``)."""
    for value in [*call.args, *(k.value for k in call.keywords)]:
        if not isinstance(value, (S.Name, S.Attribute)):
            continue
        given = parsed.resolve_expression(value, items=True)
        if given is not MISSING and callable(given) and not isinstance(given, type):
            found = rerun_reason(parsed, S.copy_location(S.call(value), value), seen)
            if found is not None:
                return found
    return None


def _reason_in_body(function, owner, seen):
    """The first call in the body of the user function ``function`` (a method of
    ``owner``, when not None) that may give another result when run again."""
    key = code_key(function)
    if key in seen:
        return None
    seen.add(key)
    parsed = parse(function)  # (SourceUnavailable names the function: derivo reads it)
    if owner is not None and parsed.tree.args.args:
        parsed.fixed.setdefault(parsed.tree.args.args[0].id, owner)
    return first_rerun_reason(parsed, parsed.tree.body, seen)


def first_rerun_reason(parsed, body, seen=None):
    """The first call in ``body`` (the user's statements or expressions, read
    with ``parsed``) that may give another result when run again, as a
    :class:`Rerun`, following the user functions it calls (the first random draw
    among them if there is one); None if none may."""
    seen = set() if seen is None else seen
    # what a raise or an assert computes is never a value: it stops the run
    messages = [getattr(stop, "exc" if isinstance(stop, S.gast.Raise) else "msg")
                for stop in S.walk(body) if isinstance(stop, (S.gast.Raise, S.gast.Assert))]
    stopped = {id(n) for n in S.walk([m for m in messages if m is not None])}
    first = None
    for node in S.walk(body):
        if isinstance(node, S.Call) and id(node) not in stopped:
            found = rerun_reason(parsed, node, seen)
            if found is not None and found.random:
                return found  # a draw before the call of what it made (default_rng().normal)
            first = first or found
    return first


def refuse_rerun_calls(parsed, body, why, instead):
    """Refuse a call in ``body`` that may give another result when run again:
    derivo runs ``body`` again (``why`` says when), and a second run computing
    other numbers than the first would make a wrong derivative.  The error
    points at the call itself, inside the user function that makes it;
    ``instead`` says what to write.

    Refused, not saved: a checkpointed loop could keep each trip's results of
    such calls and replay them when it recomputes the trip, but those grow with
    the trips, the memory checkpointing exists not to spend (``loops="stack"``
    makes that trade for a whole loop, an array drawn before the loop makes it
    in sight), and a replay would need the trip number wherever a trip is
    recomputed (the step's VJP, a segment's VJP, numba's compiled runner)."""
    found = first_rerun_reason(parsed, body)
    if found is None:
        return
    via = "".join(" (called by {!r} at {}:{})".format(
        caller.words(call), caller.filename, call.lineno) for caller, call in found.via)
    advice = instead if found.random else \
        "if it does give the same result from the same arguments, declare it with " \
        "derivo.nondifferentiable (or give it a rule); else " + instead
    raise found.parsed.error(
        UnsupportedSyntax, found.node,
        "cannot differentiate {!r}{} here: {}; {}, so a second run may compute other "
        "numbers than the value was made of; {}".format(
            found.parsed.words(found.node), via, why, found.reason, advice),
        "random draw" if found.random else "call run again")
