"""Which names may share memory: what derivo asks before it lets an array be
changed in place.

A write into an array (``y[0] = v``, ``y += e``, ``y.fill(0.0)``) changes every
name for that memory, which derivo's statement form, where each name has its
own value and adjoint, does not.  One flow-sensitive ownership analysis
(:class:`Flow`, :func:`sharing_faults`) answers for a function in statement
form; what a call returns comes from an allow-list (:func:`call_result`: the
rule tables' ``returns=``, and for a user function :func:`returned_parameters`).
A helper's summaries (the parameters it returns, those it writes: see
``writes.parameter_writes``) are read by the same analysis over the helper's
own statement form (:func:`helper_flow`), once per function (:func:`summarized`).
"""

import functools
import inspect
import os
import sys
import types
import weakref

import numpy as np

from . import dataflow, form, rules
from . import syntax as S
from .errors import DerivoError, UnsupportedSyntax
from .parse import MISSING, parse, record_reads, recording_reads

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


def _may_not_copy(call):
    """Whether ``call`` is given ``copy=`` anything but a true constant."""
    return any(k.arg == "copy" and not (isinstance(k.value, S.Constant) and k.value.value)
               for k in call.keywords)


def is_new_array(value, parsed):
    """Whether ``value`` is surely memory no other name holds: arithmetic, a list
    display, or a call this model knows makes a new array or container (a
    ufunc, an allocator, ``.copy()``, a primitive declared to return one)."""
    if isinstance(value, (S.BinOp, S.UnaryOp, S.Constant, S.List)):
        return True
    # list(xs) is a new list: writing into it changes none of xs
    return isinstance(value, S.Call) and call_result(value, parsed)[0] in ("new", "holds")


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


def summarized(compute):
    """``compute(func, *options)``, a summary of the user function ``func`` read
    from its source, made once per function and options: what making it read
    from the user's namespaces (see :func:`derivo.parse.recording_reads`) is
    kept with it, counted as read by each build that asks again, and checked
    then: a name that holds something else now, or a rule registered since,
    makes the summary anew.  Only a
    summary made with no other in progress is kept (one made inside another
    takes the outer function's as unknown)."""
    cache = weakref.WeakKeyDictionary()
    making = []

    @functools.wraps(compute)
    def summary(func, *options):
        kept = cache.get(func, {}).get(options)
        if kept is not None and kept[2] is rules.generation and \
                all(_holds(*read) for read in kept[0]):
            record_reads(kept[0])
            return kept[1]
        making.append(func)
        try:
            with recording_reads() as reads:
                result = compute(func, *options)
        finally:
            making.pop()
        record_reads(reads.values())
        if not making:
            cache.setdefault(func, {})[options] = (list(reads.values()), result,
                                                   rules.generation)
        return result
    return summary


def _holds(where, ident, path, value):
    """Whether the name ``ident`` of ``where`` (a globals dict or a closure cell),
    followed along the attributes ``path``, holds ``value`` now."""
    try:
        now = where.cell_contents if isinstance(where, types.CellType) else where[ident]
        for step in path:
            now = getattr(now, step)
    except (KeyError, TypeError, ValueError, AttributeError):
        return False
    return now is value


_RETURNS_IN_PROGRESS = set()


#: Puts a user function's :class:`~derivo.parse.Parsed` in statement form:
#: ``ssa.normalize``, which sets it (see :func:`read_helpers_with`), since
#: normalising reads what helpers return from here
_statement_form = None


def read_helpers_with(normalize):
    """Summarize user functions (see :func:`helper_flow`) over their statement
    form as ``normalize`` makes it."""
    global _statement_form
    _statement_form = normalize


def helper_flow(func, arrays=True):
    """The ownership :class:`Flow` of the user function ``func`` in statement
    form, the one analysis its summaries read (which parameters it writes, see
    ``writes.parameter_writes``, and may return, :func:`returned_parameters`).
    Raises a DerivoError where its source cannot be read or normalised."""
    parsed = parse(func).copy()
    args = parsed.tree.args
    # *args and **kwargs read as parameters holding what a call gives them
    # (see :func:`arguments`), which is all a summary asks of them
    args.kwonlyargs += [a for a in (args.vararg, args.kwarg) if a is not None]
    args.kw_defaults += [None] * ((args.vararg is not None) + (args.kwarg is not None))
    args.vararg = args.kwarg = None
    if not any(isinstance(node, S.Return) for node in S.walk(parsed.tree)):
        # a procedure returns None where it ends (the statement form has a return)
        parsed.tree.body.append(S.Return(value=S.const(None)))
    normalized = _statement_form(parsed)
    tree, parsed = normalized.tree, normalized.parsed
    local = parsed.local_names | {n.id for n in S.walk(tree) if isinstance(n, S.Name)
                                  and isinstance(n.ctx, (S.Store, S.gast.Param))}
    return Flow(tree, parsed, local, arrays=arrays)


@summarized
def returned_parameters(func):
    """The parameters whose memory what ``func`` returns may share (all of them
    for ``ident(v)``, none for ``np.tanh(x @ W)``), or None when its source
    cannot be read (or it is being read: recursion)."""
    code = func.__code__
    if code in _RETURNS_IN_PROGRESS:
        return None
    _RETURNS_IN_PROGRESS.add(code)
    try:
        flow = helper_flow(func)
        return set().union(*(flow.parameters(stmt.value) for stmt in flow.order
                             if isinstance(stmt, S.Return) and stmt.value is not None))
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


# --- who may change an array: one flow-sensitive analysis ---------------------------

def _item_of(obj):
    """The abstract object for an item of ``obj``: a row (a view) or a number of
    an array, which only the run tells apart."""
    return obj if obj[0] == "item" else ("item", obj)


class Ref:
    """What a value may refer to, as sets of abstract objects (a parameter's
    array, what one statement allocates, a global, an item of one of these):
    the objects it may *be*, or be a view of (``views``), and those a container
    it is may hold (``holds``).  ``sources``: the names it is an item of
    (``z = y[0]``); ``sites``: the statements that gave a name objects another
    value refers to (``z = y[1:]``), for messages."""

    __slots__ = ("views", "holds", "sources", "sites")

    def __init__(self, views=frozenset(), holds=frozenset(), sources=frozenset(),
                 sites=frozenset()):
        self.views, self.holds, self.sources, self.sites = views, holds, sources, sites

    def __or__(self, other):
        return Ref(self.views | other.views, self.holds | other.holds,
                   self.sources | other.sources, self.sites | other.sites)

    def __eq__(self, other):
        return (self.views, self.holds, self.sources, self.sites) == \
            (other.views, other.holds, other.sources, other.sites)

    def everything(self):
        return self.views | self.holds

    def item(self, source=None):
        """An item of this value (of the name ``source``): one of what a list
        holds, or an item of an array."""
        return Ref(self.holds | frozenset(map(_item_of, self.views)), self.holds,
                   frozenset([source]) if source else frozenset())

    def renamed(self, old, new):
        marks = (old, ("item", old))
        if self.views.isdisjoint(marks) and self.holds.isdisjoint(marks):
            return self  # (a Ref is never changed: sharing it is safe)

        def swap(objects):
            return frozenset(new if o == old else ("item", new) if o == ("item", old) else o
                             for o in objects)
        return Ref(swap(self.views), swap(self.holds), self.sources, self.sites)


NOTHING = Ref()


class Fault:
    """An in-place change of memory another name may refer to: ``stmt`` changes,
    through ``name``, what ``other`` refers to (``site``: the statement that
    made them share, or None), and ``other`` is read afterwards.  ``kind``:
    "update" (``y += e``), "write" (``y[i] = v``, ``ys.append(v)``) or "item",
    a change of an array ``other`` may be an item of (``z = y[i]``: a row, a
    view, or a number; only the run tells)."""

    def __init__(self, kind, stmt, name, other, site):
        self.kind, self.stmt, self.name, self.other, self.site = kind, stmt, name, other, site

    def error(self, parsed, readable):
        """The refusal: ``readable(name)`` tells whether a name is the user's."""
        where = getattr(self.stmt, "lineno", "?")
        if self.kind == "unowned" and _is_item_update(self.stmt):
            return parsed.error(
                UnsupportedSyntax, self.stmt, "cannot differentiate updating {0} in place "
                "(line {1}): it may be {2}, an array derivo does not own, which NumPy "
                "changes in place; write {0} = {0} + ... for a new array".format(
                    parsed.words(self.stmt.targets[0]), where, self.other), "aliased update")
        if self.kind == "item update":
            line = getattr(self.site, "lineno", None)
            other = "{!r} holds at another index".format(self.name) \
                if self.other == self.name else "{!r}{} refers to".format(
                    self.other, "" if line is None else " (line {})".format(line))
            return parsed.error(
                UnsupportedSyntax, self.stmt, "cannot differentiate updating {0} in place "
                "(line {1}): it may be an array that {2} too; NumPy changes that array in "
                "place, derivo does not follow the change; write {0} = {0} + ... for a new "
                "array (or put copies in {3!r})".format(
                    parsed.words(self.stmt.targets[0]), where, other, self.name),
                "aliased update")
        if self.kind == "unowned":
            site = self.site if isinstance(self.site, S.Assign) else self.stmt
            words = parsed.words(site.value) if S.single_target(site) else self.name
            return parsed.error(
                UnsupportedSyntax, site, "cannot differentiate writing into {0!r} (line {2}): "
                "it may share memory with another array, {4} (assigned {1!r}, line {3}), "
                "which derivo does not own; write into a copy, e.g. {0} = {5}".format(
                    self.name, words, where, getattr(site, "lineno", "?"), self.other,
                    _copy_of(parsed, site, self.name)),
                "aliased write")
        if self.kind == "update":
            if self.other == self.name:  # a helper's v += e, pasted here (see inline)
                return parsed.error(
                    UnsupportedSyntax, self.stmt, "cannot differentiate this call: the "
                    "function updates its argument {0!r} in place (+= and the like), which "
                    "NumPy does and derivo does not follow; give it a copy "
                    "({0}.copy())".format(self.name), "aliased update")
            line = getattr(self.site, "lineno", None)
            other = "{!r}{}".format(self.other, "" if line is None else
                                    " (line {})".format(line)) if readable(self.other) \
                else "a value the code reads after the update"
            return parsed.error(
                UnsupportedSyntax, self.stmt, "cannot differentiate {0!r} updated in place "
                "(line {2}): it may be another name for {1}, which NumPy would update too "
                "and the code reads afterwards; write {0} = {0} + ... instead (or "
                "{0} = {0}.copy() first)".format(self.name, other, where), "aliased update")
        site = self.site if isinstance(self.site, S.Assign) else self.stmt
        alias = S.single_target(site) or self.other
        source = self.name if alias == self.other else self.other
        words = parsed.words(site.value) if S.single_target(site) else source
        return parsed.error(
            UnsupportedSyntax, site, "cannot differentiate {0!r} sharing memory with {1!r} "
            "({2}, line {3}): line {4} writes into that memory through {5!r} and {6!r} is "
            "read afterwards; NumPy shows the change through both names, which share "
            "memory, and derivo's adjoints cannot follow it; make a copy "
            "({0} = {7})".format(alias, source, words, getattr(site, "lineno", "?"),
                                 where, self.name, self.other, _copy_of(parsed, site, source)),
            "aliased write")


def _copy_of(parsed, site, name):
    """A copy of what ``site`` assigns, as a message writes it (``y.copy()``,
    ``(y if c else z).copy()``), or of ``name`` where it assigns several names."""
    if not S.single_target(site):
        return name + ".copy()"
    words = parsed.words(site.value)
    if not isinstance(site.value, (S.Name, S.Attribute, S.Call, S.Subscript)):
        words = "(" + words + ")"
    return words + ".copy()"


class _Refs(dataflow.Forward):
    """What each name may refer to before each statement (``before``): a forward
    may-analysis whose state maps names to :class:`Ref`.  Each statement that
    makes a new array or container is an allocation site; when a site runs again,
    what it made before becomes that site's *older* object, so a name bound on an
    earlier trip shares nothing with the newest (recency)."""

    def __init__(self, parsed, local, scalars, arrays, lists, owned):
        self.parsed, self.local, self.owned = parsed, local, owned
        self.scalars, self.arrays, self.lists = scalars, arrays, lists
        self.before = {}  # id(statement) -> the state control reaches it with
        self.site = None  # the statement being read: what it allocates is its object
        self.allocated = set()  # ids of the statements _fresh has seen

    def join(self, one, other):
        joined = dict(one)
        for name, ref in other.items():
            joined[name] = joined[name] | ref if name in joined else ref
        return joined

    def at(self, stmt, state):
        self.site = stmt
        seen = self.before.get(id(stmt))
        self.before[id(stmt)] = state if seen is None else self.join(seen, state)

    def enter_body(self, loop, state):
        if isinstance(loop, S.For):
            source = loop.iter.id if isinstance(loop.iter, S.Name) else None
            return self._bind(dict(state), loop.target,
                              self.of(loop.iter, state).item(source), loop)
        return state

    def simple(self, stmt, state):
        if self.is_update(stmt):
            # x += e: the same array, changed
            return self._bind(dict(state), stmt.targets[0], self.of(stmt.value.left, state),
                              stmt)
        if isinstance(stmt, S.Assign):
            target = stmt.targets[0]
            returned = form.annotation(stmt.value, "returns")
            if isinstance(target, S.Tuple) and returned is not None and \
                    len(returned) == len(target.elts):
                # x, v = <loop>(..., x, v, ...): each is (a copy of) its own argument
                values = [self.of(stmt.value.args[i], state) for i in returned]
                state = dict(state)
                for element, value in zip(target.elts, values):
                    self._bind(state, element, value, stmt)
                return state
            value = self.of(stmt.value, state, stmt)
            state = self._fresh(state, stmt)
            if isinstance(target, S.Subscript):  # ys[i] = v: ys holds v from now on
                root = S.root_name(target)
                if root is not None:
                    state[root.id] = self.of(root, state) | Ref(holds=value.everything())
                return state
            return self._bind(state, target, value, stmt)
        if is_call_of(stmt, "append"):
            items = stmt.value.func.value.id
            state = dict(state)
            state[items] = self.of(stmt.value.func.value, state) | \
                Ref(holds=self.of(stmt.value.args[0], state).everything())
        return state

    def owns(self, obj):
        """Whether the function may write into the abstract object ``obj``: what
        it allocated, a parameter it copies on entry, an item of one of these."""
        kind = obj[0]
        if kind == "item":
            return self.owns(obj[1])
        return kind in ("new", "old") or kind == "param" and obj[1] in self.owned

    def is_update(self, stmt):
        """Whether ``stmt`` is ``x1 = x + e`` that ssa made of ``x += e``, in place
        when x may be an array."""
        return self.arrays and isinstance(stmt, S.Assign) and \
            form.annotation(stmt, "augmented") and isinstance(stmt.value, S.BinOp) and \
            isinstance(stmt.value.left, S.Name) and isinstance(stmt.targets[0], S.Name) and \
            stmt.value.left.id not in self.scalars

    def _fresh(self, state, stmt):
        """The state as ``stmt`` allocates anew: what it made before is older
        (nothing, the first time control reaches it)."""
        if id(stmt) not in self.allocated:
            self.allocated.add(id(stmt))
            return dict(state)
        new, old = ("new", id(stmt)), ("old", id(stmt))
        return {name: ref.renamed(new, old) for name, ref in state.items()}

    def _bind(self, state, target, ref, stmt):
        if isinstance(target, S.Name):
            shares = ref.views - {("new", id(stmt))}
            state[target.id] = Ref(ref.views, ref.holds, ref.sources,
                                   frozenset([id(stmt)]) if shares else frozenset())
        elif isinstance(target, (S.Tuple, S.List)):
            for element in target.elts:
                part = Ref(ref.views | ref.holds, ref.holds)
                self._bind(state, element.value if isinstance(element, S.gast.Starred)
                           else element, part, stmt)
        return state

    def of(self, value, state, stmt=None):
        """The :class:`Ref` of the expression ``value`` in ``state``; a new array
        or container is the object of site ``stmt`` (the statement being read)."""
        new = Ref(frozenset([("new", id(stmt if stmt is not None else self.site))]))
        if isinstance(value, S.Name):
            if value.id in state:
                return state[value.id]
            return NOTHING if value.id in self.local else Ref(frozenset([("global", value.id)]))
        source = value.value.id if isinstance(getattr(value, "value", None), S.Name) else None
        if isinstance(value, S.Attribute):
            if value.attr in _METADATA:
                return NOTHING  # x.shape: a new tuple, or a number
            inner = self.of(value.value, state)
            return inner if value.attr in _VIEWS else inner.item(source)
        if isinstance(value, S.Subscript):
            inner = self.of(value.value, state)
            if source in self.lists:
                # a slice of a list is a new list, an item one of what it holds
                return new | Ref(holds=inner.holds) if _is_slicing(value.slice) else \
                    Ref(inner.holds, inner.holds)
            return inner if _is_slicing(value.slice) else inner.item(source)
        if isinstance(value, S.gast.Starred):
            return self.of(value.value, state)
        if isinstance(value, (S.Tuple, S.List, S.gast.Set, S.gast.Dict)):
            parts = value.values if isinstance(value, S.gast.Dict) else value.elts
            return new | Ref(holds=self._all(parts, state))
        if isinstance(value, (S.IfExp, S.gast.BoolOp, S.gast.NamedExpr)):
            parts = [value.body, value.orelse] if isinstance(value, S.IfExp) else \
                value.values if isinstance(value, S.gast.BoolOp) else [value.value]
            found = NOTHING
            for part in parts:
                found = found | self.of(part, state, stmt)
            return found
        if isinstance(value, S.BinOp) and isinstance(value.op, (S.Add, S.Mult)):
            # + and * of lists make a new one holding what they did
            joined = [o for o in (value.left, value.right) if isinstance(o, (S.List, S.Tuple))
                      or isinstance(o, S.Name) and o.id in self.lists]
            return new | Ref(holds=frozenset().union(*(self.of(o, state).holds
                                                       for o in joined)))
        if isinstance(value, (S.BinOp, S.UnaryOp)):
            return new
        if isinstance(value, S.Call):
            return self._returned(value, state, new)
        return NOTHING

    def _all(self, values, state):
        return frozenset().union(*(self.of(v, state).everything() for v in values))

    def _returned(self, call, state, new):
        returned = form.annotation(call, "returns")
        how, parts = ("is", [call.args[i] for i in returned]) if returned is not None else \
            call_result(call, self.parsed)
        if how == "new":
            return new
        if how == "holds":
            return new | Ref(holds=self._all(parts, state))
        if how == "is":
            found = NOTHING
            for part in parts:
                found = found | self.of(part, state)
            return Ref(found.views, found.holds, found.sources)
        # a call derivo cannot read may return anything reachable from its arguments,
        # or memory no name here refers to
        return Ref(self._all(parts + [call.func], state) | {("unknown", id(call))},
                   self._all(parts, state))


#: Attributes of an array that are views of it
_VIEWS = ("T", "mT", "real", "imag", "flat")


def _is_slicing(index):
    """Whether ``x[index]`` is a slice of x (a view of an array), not an item."""
    parts = index.elts if isinstance(index, S.Tuple) else [index]
    return any(isinstance(part, S.gast.Slice) or isinstance(part, S.Constant) and
               part.value in (Ellipsis, None) for part in parts)


def is_call_of(stmt, method):
    """Whether ``stmt`` is ``xs.method(v)`` as a statement, on a name."""
    value = getattr(stmt, "value", None)
    return isinstance(stmt, S.Expr) and isinstance(value, S.Call) and \
        isinstance(value.func, S.Attribute) and value.func.attr == method and \
        isinstance(value.func.value, S.Name) and len(value.args) == 1 and not value.keywords


def _reads(node):
    if isinstance(node, (S.If, S.While)):
        return S.loaded_names(node.test)
    return S.loaded_names(node.iter) if isinstance(node, S.For) else S.loaded_names(node)


def _writes(node):
    if isinstance(node, S.Assign):
        return {n.id for target in node.targets for n in S.walk(target)
                if isinstance(n, S.Name) and isinstance(n.ctx, S.Store)}
    return {n.id for n in S.walk(node) if isinstance(n, S.Name) and isinstance(n.ctx, S.Store)} \
        if isinstance(node, (S.Name, S.Tuple, S.List)) else set()


def _change(refs, stmt):
    """(kind, the name changed through, the names that may be it afterwards) when
    ``stmt`` changes memory in place, else None."""
    if refs.is_update(stmt):
        return "update", stmt.value.left.id, {stmt.targets[0].id}
    if isinstance(stmt, S.Assign) and isinstance(stmt.targets[0], S.Subscript) and \
            S.root_name(stmt.targets[0]) is not None:
        name = S.root_name(stmt.targets[0]).id
        return "write", name, {name}
    if is_call_of(stmt, "append"):
        return "write", stmt.value.func.value.id, {stmt.value.func.value.id}
    return None


def _is_item_update(stmt):
    """Whether ``stmt`` is ``L[i] = L[i] + e`` that ssa made of ``L[i] += e``."""
    return isinstance(stmt, S.Assign) and isinstance(stmt.targets[0], S.Subscript) and \
        form.annotation(stmt, "augmented")


def _held_arrays(refs, stmt, state, statements):
    """The :class:`Ref` of what ``stmt``, ``L[i] = L[i] + e`` that ssa made of
    ``L[i] += e``, changes in place when L is a container: the objects L may
    hold that may be arrays (not a parameter or a name that holds numbers);
    None when L is an array (the write is ``L[i] = v``) or holds only numbers."""
    if not (refs.arrays and _is_item_update(stmt)):
        return None
    name = S.root_name(stmt.targets[0]).id
    ref = refs.of(S.name(name), state)
    displays = (S.List, S.Tuple, S.gast.Dict, S.gast.ListComp, S.gast.DictComp)
    if name not in refs.lists and not any(
            isinstance(getattr(statements.get(o[1]), "value", None), displays)
            for o in ref.views if o[0] in ("new", "old")):
        return None  # an array: L[i] += e writes into it, as L[i] = L[i] + e does

    def number(obj):
        kind, what = obj
        if kind == "param":
            return what in refs.scalars
        made = statements.get(what) if kind in ("new", "old") else None
        return isinstance(made, S.Assign) and isinstance(made.targets[0], S.Name) and \
            made.targets[0].id in refs.scalars

    held = frozenset(o for o in ref.holds if not number(o))
    return Ref(held) if held else None


def _telling(obj):
    """Which unowned object a message names first: a parameter, then a call's
    result, then a global (a module holding the function called)."""
    kind = (obj if obj[0] != "item" else obj[1])[0]
    return ["param", "unknown", "global"].index(kind) if kind in ("param", "unknown", "global") \
        else 3, str(obj)


def _described(obj):
    """Words for the abstract object ``obj`` derivo does not own."""
    kind, what = obj if obj[0] != "item" else obj[1]
    return {"param": "parameter {!r}".format(what), "global": "{!r}".format(what)}.get(
        kind, "memory a call derivo cannot read returns")


def _conflict(kind, changed, seen, other):
    """How a change (``kind``) of the memory of the value ``changed`` reaches
    the value ``seen`` of the name ``other``, or None."""
    if kind == "update" and changed.sources and seen.sources and \
            other not in changed.sources:
        # two items of one value: numbers, or rows (views) that may overlap,
        # which only the run tells
        items = {o for o in changed.views if o[0] == "item"}
        return "item" if items & seen.views else None
    whole = {o for o in changed.views if o[0] != "item"}
    if whole & seen.everything():
        return kind
    if whole & {o[1] for o in seen.everything() if o[0] == "item"}:
        # other may be an item of the array changed (a row, or a number), or hold one
        return "item"
    items = {o for o in changed.views if o[0] == "item"}
    # a change of an item changes its array when the item is a row; an update
    # (x += e) of a number does not, which only the run tells: for an update only
    # the name the item was taken from counts
    if (items | {o[1] for o in items}) & seen.everything() and \
            (kind != "update" or other in changed.sources):
        return kind
    return None


class Flow:
    """The ownership analysis of one statement-form function, run once: what
    each name may refer to before each statement (``refs``, see :class:`_Refs`)
    and the names live after each (``live``), to ask which names a change in
    place reaches.  derivo writes only into what it owns: arrays the function
    allocates, parameters it copies on entry (``tree.owned``)."""

    def __init__(self, tree, parsed, local, scalars=frozenset(), arrays=True,
                 lists=frozenset()):
        self.tree = tree
        self.refs = _Refs(parsed, local, scalars, arrays, lists,
                          set(form.annotation(tree, "owned")))
        self.refs.run(tree.body, {p: Ref(frozenset([("param", p)])) for p in all_params(tree)})
        self.live = dataflow.live_after_each(tree.body, _reads, _writes)
        self.order = list(dataflow.in_order(tree.body))
        self.statement = {}  # id(expression node) -> the statement that evaluates it
        for stmt in self.order:
            own = stmt.test if isinstance(stmt, (S.If, S.While)) else \
                stmt.iter if isinstance(stmt, S.For) else stmt
            for node in S.walk(own):
                self.statement[id(node)] = stmt

    def reached(self, expression, deep=False, at=None, read_afterwards=True):
        """The names that, when ``expression`` is evaluated (as part of the node
        ``at``, by default itself), refer to memory a change of what it is
        (``deep``: or holds) changes, and (``read_afterwards``) are read
        afterwards; empty where the code never runs."""
        stmt = self.statement.get(id(expression if at is None else at))
        state = self.refs.before.get(id(stmt)) if stmt is not None else None
        if state is None:
            return set()
        ref = self.refs.of(expression, state)
        changed = _bases(ref.everything() if deep else ref.views)
        names = set(self.live.get(id(stmt), ())) if read_afterwards else set(state)
        if isinstance(stmt, (S.If, S.While, S.For)):
            names |= S.loaded_names(stmt)  # (its body runs after the test)
        return {name for name in names
                if _bases(self.refs.of(S.name(name), state).everything()) & changed}


    def parameters(self, expression, deep=True):
        """The parameters whose memory ``expression`` may refer to as its
        statement runs: be, be a view or an item of, or (``deep``) hold."""
        stmt = self.statement.get(id(expression))
        state = self.refs.before.get(id(stmt)) if stmt is not None else None
        if state is None:
            return set()
        ref = self.refs.of(expression, state)
        return {o[1] for o in _bases(ref.everything() if deep else ref.views)
                if o[0] == "param"}

    def bases(self, expression, at):
        """The abstract objects whose memory ``expression`` may refer to (be, be a view
        or an item of, or hold) before the statement ``at`` runs, what a site
        allocated on any trip counted as one; empty where the code never runs."""
        state = self.refs.before.get(id(at))
        if state is None:
            return frozenset()
        return frozenset(("new", o[1]) if o[0] == "old" else o
                         for o in _bases(self.refs.of(expression, state).everything()))

    def written(self, name, at):
        """The abstract objects whose memory an item write into ``name`` (``name[i]
        = v``) changes before the statement ``at`` runs: what ``name`` is or is a
        view of, not the items it holds (a dict's item write rebinds its key)."""
        state = self.refs.before.get(id(at))
        if state is None:
            return frozenset()
        statements = {id(stmt): stmt for stmt in self.order}
        return frozenset(o for o in (("new", o[1]) if o[0] == "old" else o for o in
                                     _bases(self.refs.of(S.name(name), state).views))
                         if not _makes_a_container(statements.get(o[1])))

    def sharing(self, name, at):
        """{other name: "view" or "item"} of the names that, before the statement
        ``at`` runs, may refer to memory ``name`` refers to, read afterwards or
        not: a view of it (or it of them), or an item of it (a number, or a row
        of an array with more than one axis: only the run tells)."""
        state = self.refs.before.get(id(at))
        if state is None:
            return {}
        changed = _bases(self.refs.of(S.name(name), state).views)
        found = {}
        for other, ref in state.items():
            if other == name or not _bases(ref.views) & changed:
                continue
            found[other] = "view" if {o for o in ref.views if o[0] != "item"} & changed \
                else "item"
        return found


def _makes_a_container(stmt):
    """Whether ``stmt`` assigns a new dict or list (``d = {}``, ``xs = [a, b]``),
    whose item writes rebind an item and change no value."""
    value = getattr(stmt, "value", None)
    return isinstance(value, (S.gast.Dict, S.List, S.gast.DictComp, S.gast.ListComp)) or \
        isinstance(value, S.Call) and isinstance(value.func, S.Name) and \
        value.func.id in ("dict", "list") and not value.args[1:]


def _bases(objects):
    """The objects of ``objects``, an item counted as the object it is of."""
    return {o[1] if o[0] == "item" else o for o in objects}


def sharing_faults(tree, parsed, local, scalars=frozenset(), arrays=True, lists=frozenset()):
    """Every in-place change in the statement-form function ``tree`` of memory
    that another name, read afterwards, may refer to, or that the function does
    not own (see :class:`Fault`), in the order of the statements."""
    flow = Flow(tree, parsed, local, scalars, arrays, lists)
    refs, live, order = flow.refs, flow.live, flow.order
    statements = {id(n): n for n in order}
    position = {id(n): index for index, n in enumerate(order)}
    faults = []
    for stmt in order:
        state = refs.before.get(id(stmt))
        change = _change(refs, stmt) if state is not None else None
        if change is None:
            continue
        kind, name, spared = change
        changed = refs.of(S.name(name), state)
        held = _held_arrays(refs, stmt, state, statements)
        if held is not None:
            # L[i] += e on a container: NumPy changes the array L[i] in place
            # (and rebinds L[i] to it), so every other reference to it changes
            kind, changed, spared = "item update", held, set()
        foreign = sorted((o for o in changed.views if not refs.owns(o)), key=_telling)
        if kind == "item update" and foreign:
            faults.append(Fault("unowned", stmt, name, " or ".join(
                sorted({_described(o) for o in foreign})), None))
            continue
        if kind == "write" and name in local and foreign:
            # (a write into a global by its own name: analyze refuses it as such)
            sites = sorted(changed.sites & position.keys(), key=position.get)
            faults.append(Fault("unowned", stmt, name, _described(foreign[0]),
                                statements[sites[0]] if sites else None))
            continue
        for other in sorted(live.get(id(stmt), ()) - spared):
            seen = refs.of(S.name(other), state)
            how = _conflict(kind, changed, seen, other)
            if how is None:
                continue
            # the statement that made them share: other's binding, else name's
            sites = sorted(seen.sites & position.keys(), key=position.get) or \
                sorted(changed.sites & position.keys(), key=position.get)
            faults.append(Fault(how, stmt, name, other, statements[sites[0]] if sites else None))
    return faults
