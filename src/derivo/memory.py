"""Which names may share memory: what derivo asks before it lets an array be
changed in place.

A write into an array (``y[0] = v``, ``y += e``, ``y.fill(0.0)``) changes every
name for that memory, which derivo's statement form, where each name has its
own value and adjoint, does not.  ``shared_sources`` answers for one value
(``w = y.T`` is y), :class:`Memory` for a whole function, through lists that
hold arrays and calls of user functions (:func:`returned_parameters`).  ssa,
outline and analyze all ask here, so they agree.
"""

import functools
import inspect
import os
import sys
import types

import numpy as np

from . import rules
from . import syntax as S
from .errors import DerivoError
from .parse import MISSING, parse

def call_result(call, parsed):
    """What the result of ``call`` may share memory with, as (how, parts):
    ``("new", [])`` for a new array or an immutable value; ``("is", parts)`` when it
    may be (a view of) one of the expressions ``parts``; ``("holds", parts)`` for a
    new container of them (``list(ys)``); ``("any", parts)`` when it may be or hold
    anything reachable from ``parts``, and may have written into them.

    An allow-list: a call counts as new only when derivo knows it is (a ufunc,
    derivo's own runtime, a rule-table primitive declared ``returns=NEW``, a user
    function whose summary returns none of its parameters); every other call,
    ``operator.getitem``, ``np.ndarray.view``, a dunder, a function derivo cannot
    look up, is ``"any"`` of its arguments (and of a method's object)."""
    callee = parsed.callee_key(call)
    if callee is MISSING and isinstance(call.func, S.Name):
        # zeros = np.zeros; zeros(3): the function the local name is assigned once
        value = S.values_assigned_once(parsed.tree).get(call.func.id)
        named = parsed.callee_key(S.call(value)) if isinstance(value, (S.Name, S.Attribute)) \
            else MISSING
        if named is not MISSING and not isinstance(named, rules.Method):
            return call_result(S.call(value, *call.args, keywords=call.keywords), parsed)
    obj = [call.func.value] if isinstance(call.func, S.Attribute) else []
    given = [*call.args, *(k.value for k in call.keywords)]
    if _may_not_copy(call):  # np.array(y, copy=None), y.astype(t, copy=False)
        return "any", obj + given
    if is_in(callee, _HOLDERS):
        return "holds", given
    if isinstance(callee, rules.Method):
        declared = rules.returns(callee, 1 + len(call.args), [k.arg for k in call.keywords])
        positional = obj + list(call.args)
    else:
        declared = rules.returns(callee, len(call.args), [k.arg for k in call.keywords])
        positional = list(call.args)
    if declared == rules.NEW or isinstance(callee, np.ufunc) or is_in(callee, _STRINGS) or \
            not isinstance(callee, rules.Method) and S.is_derivo(callee):  # derivo's runtime
        return "new", []
    if declared == rules.ARGUMENT:  # max(a, b): one of them
        return "is", positional
    if isinstance(declared, int) and not isinstance(declared, bool):
        return "is", positional[declared:declared + 1]
    function, offset = user_function(callee)
    returned = returned_parameters(function) if function is not None else None
    if returned is not None:  # ident(y) is y; dense(W, x) returns a new array
        parts = [argument for name, argument in arguments(call, function, offset)
                 if name in returned]
        return ("is", parts) if parts else ("new", [])
    return "any", obj + given


def shared_sources(value, parsed, lists=()):
    """Names whose memory ``value`` may share: ``y``, ``y.T``, ``y[1:3]``, a row
    ``y[i]``, ``y.reshape(s)``, ``ident(y)``, either branch of ``a if c else b``,
    what a call derivo does not know is given (an item or slice of one of
    ``lists``, a list, is a copy or a value)."""
    if isinstance(value, S.Name):
        return [value.id]
    if isinstance(value, S.IfExp):
        return shared_sources(value.body, parsed, lists) + \
            shared_sources(value.orelse, parsed, lists)
    if isinstance(value, S.Attribute) and value.attr in ("T", "mT", "real", "imag", "flat"):
        return shared_sources(value.value, parsed, lists)
    if isinstance(value, S.Subscript):
        if isinstance(value.value, S.Name) and value.value.id in lists:
            return []
        return shared_sources(value.value, parsed, lists)
    if isinstance(value, S.Call):
        how, parts = call_result(value, parsed)
        if how in ("is", "any"):
            return [source for part in parts for source in shared_sources(part, parsed, lists)]
    return []


def _may_not_copy(call):
    """Whether ``call`` is given ``copy=`` anything but a true constant."""
    return any(k.arg == "copy" and not (isinstance(k.value, S.Constant) and k.value.value)
               for k in call.keywords)


def may_share_memory(value, parsed):
    """Whether assigning ``value`` may give an existing array another name (``x``,
    ``x.T``, ``x[1:3]``, ``x.reshape(s)``, ``a if c else x``, ``ident(x)``, a call
    derivo does not know): a write through either name changes what both hold."""
    if isinstance(value, S.IfExp):
        return may_share_memory(value.body, parsed) or may_share_memory(value.orelse, parsed)
    if isinstance(value, S.Call):
        return call_result(value, parsed)[0] in ("is", "any")
    return isinstance(value, (S.Name, S.Attribute, S.Subscript))


def all_params(tree):
    """The names of a function tree's parameters, ``*args`` and ``**kwargs`` too."""
    args = tree.args
    return {a.id for a in args.posonlyargs + args.args + args.kwonlyargs +
            [args.vararg, args.kwarg] if a is not None}


def arguments(call, callee, given=0):
    """(parameter name, argument node) for each argument of ``call`` of
    ``callee``, the function's first ``given`` parameters given otherwise (a
    method's self, what a ``functools.partial`` holds).  An argument beyond the
    positional parameters pairs with ``*args``' name, a keyword without a
    parameter of its name with ``**kwargs``'; one unpacked (``*xs``, ``**kw``)
    pairs with every parameter it may reach."""
    code = callee.__code__
    positional = list(code.co_varnames[given:code.co_argcount])
    names = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    extra = code.co_argcount + code.co_kwonlyargcount
    varargs = code.co_varnames[extra] if code.co_flags & inspect.CO_VARARGS else None
    extra += bool(varargs)
    varkw = code.co_varnames[extra] if code.co_flags & inspect.CO_VARKEYWORDS else None
    for position, argument in enumerate(call.args):
        if isinstance(argument, S.gast.Starred):
            for name in positional[position:] + [varargs]:
                yield name, argument.value
        else:
            yield positional[position] if position < len(positional) else varargs, argument
    for keyword in call.keywords:
        if keyword.arg is None:
            for name in names + [varkw]:
                yield name, keyword.value
        else:
            yield keyword.arg if keyword.arg in names else varkw, keyword.value


#: Calls that return a new container of what they are given (``list(xs)``): a
#: change of that container changes none of its items
_HOLDERS = (list, tuple, sorted, reversed, iter, zip, enumerate, dict, set, frozenset, map,
            filter)
#: Builtins without a rule whose result is a new string
_STRINGS = (str, repr)
#: Attributes of an array that share none of its memory
_METADATA = ("shape", "ndim", "size", "dtype", "itemsize", "nbytes", "strides")


class Memory:
    """Which names may share memory with which of ``roots``, read from ``tree``
    in no particular order: ``w = y``, ``w = y[1:]``, ``w = y.reshape(3)`` and
    ``for w in y`` make w *be* (a view of) y; ``ws = [y]`` and ``ws = list(ys)``
    make ws *hold* y.  A change of what w is changes y; a change of ws itself
    (``ws.append(v)``, ``ws[0] = v``) changes no y, a change of ``ws[0]`` does.
    A call derivo knows nothing of may return (a view of) what it is given
    (``ident(y)``); NumPy functions other than the views (``np.where(y, ...)``),
    arithmetic and ufuncs make new values."""

    def __init__(self, parsed, tree, roots):
        self.parsed = parsed
        self.views = {root: {root} for root in roots}
        self.holds = {}
        bindings = list(self._bindings(tree))
        grew = True
        while grew:
            grew = False
            for target, shared in bindings:
                grew |= self._bind(target, *shared())

    def of(self, value):
        """(the roots ``value`` may be, the roots it may hold)."""
        if isinstance(value, S.Name):
            return self.views.get(value.id, set()), self.holds.get(value.id, set())
        if isinstance(value, S.Attribute) and value.attr in _METADATA:
            return set(), set()  # x.shape: a new tuple, or a number
        if isinstance(value, (S.Subscript, S.Attribute, S.gast.Starred)):
            return self._item(self.of(value.value))
        if isinstance(value, (S.Tuple, S.List, S.gast.Set)):
            return set(), self._everything(value.elts)
        if isinstance(value, S.gast.Dict):
            return set(), self._everything(value.values)
        if isinstance(value, (S.IfExp, S.gast.BoolOp, S.gast.NamedExpr)):
            parts = [value.body, value.orelse] if isinstance(value, S.IfExp) else \
                value.values if isinstance(value, S.gast.BoolOp) else [value.value]
            found = [self.of(part) for part in parts]
            return set().union(*(v for v, _ in found)), set().union(*(h for _, h in found))
        if isinstance(value, S.Call):
            return self._returned(value)
        return set(), set()

    def _returned(self, call):
        how, parts = call_result(call, self.parsed)
        if how == "new":
            return set(), set()
        if how == "holds":
            return set(), self._everything(parts)
        if how == "is":
            return self._everything_viewed(parts), self._everything_held(parts)
        everything = self._everything(parts + [call.func])
        return everything, self._everything_held(parts)

    def _everything_viewed(self, values):
        return set().union(*(self.of(value)[0] for value in values)) if values else set()

    def _everything(self, values):
        found = set()
        for value in values:
            views, holds = self.of(value)
            found |= views | holds
        return found

    def _everything_held(self, values):
        return set().union(*(self.of(value)[1] for value in values)) if values else set()

    @staticmethod
    def _item(shared):
        """An item of what ``shared`` describes (a row of an array is a view of it)."""
        views, holds = shared
        return views | holds, holds

    def _bindings(self, tree):
        """(target, a function giving what the value shares) for every binding."""
        for node in S.walk(tree):
            if isinstance(node, S.Assign):
                for target in node.targets:
                    yield target, functools.partial(self.of, node.value)
            elif isinstance(node, (S.gast.AugAssign, S.gast.AnnAssign)) and node.value:
                yield node.target, functools.partial(self._added, node.target, node.value)
            elif isinstance(node, (S.For, S.gast.comprehension)):
                yield node.target, functools.partial(lambda n: self._item(self.of(n.iter)), node)
            elif isinstance(node, S.gast.NamedExpr):
                yield node.target, functools.partial(self.of, node.value)

    def _added(self, target, value):
        # xs += ys makes xs hold ys's items; an array's x += y shares nothing new
        views, holds = self.of(target)
        return views, holds | self._everything([value])

    def _bind(self, target, views, holds):
        """Record that ``target`` may be ``views`` and hold ``holds``; whether that grew."""
        if isinstance(target, S.Name):
            grew = not (views <= self.views.get(target.id, set()) and
                        holds <= self.holds.get(target.id, set()))
            self.views.setdefault(target.id, set()).update(views)
            self.holds.setdefault(target.id, set()).update(holds)
            return grew
        if isinstance(target, (S.Tuple, S.List)):
            grew = False
            for element in target.elts:
                if isinstance(element, S.gast.Starred):
                    grew |= self._bind(element.value, set(), views | holds)
                else:
                    grew |= self._bind(element, views | holds, holds)
            return grew
        root = S.root_name(target)  # ys[0] = y: ys holds y from now on
        if root is not None and isinstance(target, (S.Subscript, S.Attribute)):
            return self._bind(root, set(), views | holds)
        return False

    def returned_in_order(self, body):
        """The roots what ``body`` returns may be or hold, reading its statements
        in order from what was bound so far, where a name assigned anew no longer
        shares what it did (``v = v - np.mean(v)``); None when a branch, a loop or
        another statement comes first, which the order-free reading must answer."""
        for stmt in body:
            if isinstance(stmt, S.Return):
                views, holds = self.of(stmt.value) if stmt.value is not None else ((), ())
                return set(views) | set(holds)
            if any(isinstance(node, S.gast.NamedExpr) for node in S.walk(stmt)):
                return None
            if isinstance(stmt, S.Assign):
                views, holds = self.of(stmt.value)
                for target in stmt.targets:
                    if isinstance(target, S.Name):
                        self.views[target.id], self.holds[target.id] = set(views), set(holds)
                    else:
                        self._bind(target, views, holds)
            elif isinstance(stmt, S.gast.AugAssign):
                self._bind(stmt.target, *self._added(stmt.target, stmt.value))
            elif not isinstance(stmt, (S.Expr, S.Pass)):
                return None
        return set()  # it returns None

    def changed_by(self, changed, deep=False):
        """The roots a change of what the expression ``changed`` is may change,
        or, ``deep``, of what it is or holds."""
        views, holds = self.of(changed)
        return views | holds if deep else views

    def sharing(self, roots):
        """The names that are or hold one of ``roots``."""
        return {name for name in set(self.views) | set(self.holds)
                if (self.views.get(name, set()) | self.holds.get(name, set())) & roots}


_RETURNS_IN_PROGRESS = set()


def returned_parameters(func):
    """The parameters whose memory what ``func`` returns may share (all of them
    for ``ident(v)``, none for ``np.tanh(x @ W)``), or None when its source
    cannot be read (or it is being read: recursion)."""
    code = func.__code__
    if code in _RETURNS_IN_PROGRESS:
        return None
    _RETURNS_IN_PROGRESS.add(code)
    try:
        parsed = parse(func)
        params = all_params(parsed.tree)
        returned = Memory(parsed, [], params).returned_in_order(parsed.tree.body)
        if returned is not None:  # v = v - np.mean(v); return v: a new array
            return returned
        memory = Memory(parsed, parsed.tree, params)
        returned = set()
        for node in S.walk(parsed.tree):
            if isinstance(node, S.Return) and node.value is not None:
                views, holds = memory.of(node.value)
                returned |= views | holds
        return returned
    except DerivoError:
        return None
    finally:
        _RETURNS_IN_PROGRESS.discard(code)


def is_in(obj, objects):
    return any(obj is candidate for candidate in objects)


def is_numpy(obj):
    return (getattr(obj, "__module__", None) or "").partition(".")[0] == "numpy"


def is_user_function(callee):
    """Whether ``callee`` is a Python function of the user's, which derivo reads."""
    return isinstance(callee, types.FunctionType) and not rules.is_primitive(callee) and \
        not S.is_derivo(callee) and not in_a_library(callee)


def user_function(callee):
    """(the user function that runs when ``callee`` is called, how many of its
    first parameters the call does not give): a user function itself (0); the
    function of a bound method of a user object or class (1, self); a user
    class's ``__init__`` (1) or, for an instance, its ``__call__`` (1); what a
    ``functools.partial`` calls (and as many more as the partial gives).
    (None, 0) for anything else: NumPy, builtins, Python's own, derivo."""
    if isinstance(callee, functools.partial):
        function, given = user_function(callee.func)
        return (function, given + len(callee.args)) if function is not None else (None, 0)
    if isinstance(callee, types.MethodType) and not S.is_derivo(callee.__self__):
        function, given = callee.__func__, 1
    elif isinstance(callee, type):
        function, given = getattr(callee, "__init__", None), 1
    elif isinstance(callee, types.FunctionType):
        function, given = callee, 0
    else:
        function, given = getattr(type(callee), "__call__", None), 1
    if not is_user_function(function) or rules.is_primitive(callee):
        return None, 0
    return function, given


_STANDARD_LIBRARY = os.path.join(os.path.dirname(os.__file__), "")


def in_the_standard_library(function):
    """Whether ``function`` is Python's own (``heapq.nsmallest``).  derivo does not
    read it as the user's: the ones that change what they are given are known by
    name, and its source, which calls what it is given (``key(elem)``) and
    handles exceptions, would make every call look like a change, or be refused
    for a construct the user never wrote."""
    return _standard_file(function.__code__.co_filename)


def _standard_file(filename):
    return filename.startswith(_STANDARD_LIBRARY) and "-packages" not in filename


def _library_file(filename, module):
    """Whether the file ``filename`` of the module named ``module`` is a library's."""
    return _standard_file(filename) or module.partition(".")[0] in ("numpy", "scipy") or any(
        part in ("site-packages", "dist-packages") for part in filename.split(os.sep))


def in_a_library(function):
    """Whether ``function`` is a library's, not the user's: Python's own (see
    :func:`in_the_standard_library`) or an installed package's (under a
    site-packages or dist-packages folder, or NumPy's or SciPy's wherever they
    are), or code not written in Python.  derivo never reads a library's
    source: a call into one needs a rule, and is refused by name without one."""
    if not hasattr(function, "__code__"):
        return True
    return _library_file(function.__code__.co_filename,
                         getattr(function, "__module__", None) or "")


def is_library_module(module):
    """Whether ``module`` is a library's (``math``, ``numpy.linalg``), not the
    user's: built into Python, or a file :func:`in_a_library` would call a library's."""
    filename = getattr(module, "__file__", None)
    return filename is None and module.__name__ in sys.builtin_module_names or \
        filename is not None and _library_file(filename, module.__name__)
