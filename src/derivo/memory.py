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
import types

import numpy as np

from . import rules
from . import syntax as S
from .errors import DerivoError
from .parse import parse

VIEWS = (np.reshape, np.ravel, np.squeeze, np.expand_dims, np.transpose, np.swapaxes,
          np.moveaxis, np.rollaxis, np.flip, np.fliplr, np.flipud, np.rot90, np.diagonal,
          np.real, np.imag, np.atleast_1d, np.atleast_2d, np.atleast_3d, np.asarray,
          np.asanyarray, np.ascontiguousarray, np.asfortranarray, np.broadcast_to,
          np.require, np.asmatrix, np.asarray_chkfinite, np.real_if_close, np.trim_zeros,
          np.lib.stride_tricks.as_strided, np.lib.stride_tricks.sliding_window_view,
          *(getattr(module, "matrix_transpose") for module in (np, np.linalg)
            if hasattr(module, "matrix_transpose")))  # NumPy 2


VIEW_METHODS = ("reshape", "ravel", "view", "transpose", "squeeze", "swapaxes", "conj",
                "conjugate", "__array__")


def shared_sources(value, parsed, lists=()):
    """Names whose memory ``value`` may share: ``y``, ``y.T``, ``y[1:3]``, a row
    ``y[i]``, ``y.reshape(s)``, ``np.ravel(y)``, either branch of ``a if c else b``
    (an item or slice of one of ``lists``, a list, is a copy or a value)."""
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
        callee = parsed.callee_key(value)
        given = [*value.args, *(k.value for k in value.keywords)]
        if _may_not_copy(value):  # np.array(y, copy=None), y.astype(t, copy=False)
            parts = [value.func.value] if isinstance(callee, rules.Method) else []
            return [source for part in parts + given
                    for source in shared_sources(part, parsed, lists)]
        if (callee is max or callee is min) and len(value.args) > 1:  # one of them
            return [source for argument in value.args
                    for source in shared_sources(argument, parsed, lists)]
        if isinstance(callee, rules.Method) and callee.name in VIEW_METHODS:
            return shared_sources(value.func.value, parsed, lists)
        if callee in VIEWS and value.args:
            return shared_sources(value.args[0], parsed, lists)
        function, given = user_function(callee)
        if function is not None:  # ident(y) is y; dense(W, x) returns a new array
            returned = returned_parameters(function)
            return [source for name, argument in arguments(value, function, given)
                    if returned is None or name in returned
                    for source in shared_sources(argument, parsed, lists)]
    return []


def _may_not_copy(call):
    """Whether ``call`` is given ``copy=`` anything but a true constant."""
    return any(k.arg == "copy" and not (isinstance(k.value, S.Constant) and k.value.value)
               for k in call.keywords)


def may_share_memory(value, parsed):
    """Whether assigning ``value`` may give an existing array another name (``x``,
    ``x.T``, ``x[1:3]``, ``x.reshape(s)``, ``np.ravel(x)``): a write through either
    name changes what both hold."""
    callee = parsed.callee_key(value) if isinstance(value, S.Call) else None
    return isinstance(value, (S.Name, S.Attribute, S.Subscript)) or \
        isinstance(callee, rules.Method) and callee.name != "copy" or callee in VIEWS


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
#: NumPy functions that return a list of views of their first argument
_VIEW_LISTS = (np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit, np.broadcast_arrays,
               *(getattr(np, name) for name in ("unstack",) if hasattr(np, name)))  # NumPy 2
#: Builtins whose result shares no memory with their arguments
_NEW_BUILTINS = (len, float, int, bool, abs, round, range, sum, pow, str, repr, isinstance)
#: Attributes of an array that share none of its memory
_METADATA = ("shape", "ndim", "size", "dtype", "itemsize", "nbytes", "strides")
#: Methods whose result may be what the object is or holds (the others make a new value)
_SHARING_METHODS = {*VIEW_METHODS, "pop", "popitem", "get", "setdefault", "__getitem__",
                    "item"}


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
        callee = self.parsed.callee_key(call)
        given = [*call.args, *(k.value for k in call.keywords)]
        if _may_not_copy(call):  # x.astype(float, copy=False) may be x
            parts = [call.func.value] if isinstance(call.func, S.Attribute) else []
            return self._everything(parts + given), self._everything_held(parts + given)
        if isinstance(callee, rules.Method):
            if callee.name not in _SHARING_METHODS:
                return set(), set()
            return self._item(self.of(call.func.value)) if callee.name not in VIEW_METHODS \
                else self.of(call.func.value)
        if is_in(callee, _HOLDERS):
            return set(), self._everything(given)
        if is_in(callee, VIEWS) and call.args:  # np.reshape(y, shape): a view of y
            return self.of(call.args[0])
        if is_in(callee, _VIEW_LISTS) and call.args:  # np.split(y, 2): views of y
            return set(), self._everything(call.args[:1])
        if isinstance(callee, np.ufunc) or S.is_derivo(callee) or \
                is_in(callee, _NEW_BUILTINS) or is_numpy(callee):
            return set(), set()
        function, offset = user_function(callee)
        returned = returned_parameters(function) if function is not None else None
        if returned is not None:  # dense(W, x) returns np.tanh(x @ W): nothing of W
            given = [argument for name, argument in arguments(call, function, offset)
                     if name in returned]
            return self._everything(given), self._everything_held(given)
        everything = self._everything(given + [call.func])
        return everything, self._everything_held(given)

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
    filename = function.__code__.co_filename
    return filename.startswith(_STANDARD_LIBRARY) and "-packages" not in filename


def in_a_library(function):
    """Whether ``function`` is a library's, not the user's: Python's own (see
    :func:`in_the_standard_library`) or an installed package's (under a
    site-packages or dist-packages folder, or NumPy's or SciPy's wherever they
    are), or code not written in Python.  derivo never reads a library's
    source: a call into one needs a rule, and is refused by name without one."""
    if not hasattr(function, "__code__"):
        return True
    filename = function.__code__.co_filename
    module = (getattr(function, "__module__", None) or "").partition(".")[0]
    return in_the_standard_library(function) or module in ("numpy", "scipy") or any(
        part in ("site-packages", "dist-packages") for part in filename.split(os.sep))
