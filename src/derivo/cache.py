"""Stage 7: transform each (function, options) once, and keep it live.

The key holds the function's code object, the identities of its globals dict,
closure cells and defaults, and the options; redefining the function (a new code
object) gives a new entry.  What the function's names hold is not in the key: a
generated derivative reads it live (see :class:`LiveReads`), and an entry found
is used only if what the transformation depended on is unchanged.  A closure made
again by the same ``def`` (new cells) finds the transformation of the last one
(see :func:`sibling`).  A lock makes threads that ask for the same derivative at
once share one transformation.

Asked again for the same function and options, ``derivo.grad`` & co. return the
derivative they made (see :func:`derivative`), which checks itself on each call.
"""

import threading
import types
from collections import namedtuple

import numpy as np

from . import memory, rules
from .parse import EQUAL, MISSING, PARAMETERS, Item, View, is_derivative

CacheInfo = namedtuple("CacheInfo", "hits misses size")

_entries = {}
_lock = threading.RLock()
_stats = {"hits": 0, "misses": 0}
#: (kind, function, wrt, loop options) -> the derivative derivo.grad & co. returned
_derivatives = {}
#: How many derivatives _derivatives keeps: the oldest go first (each holds its function)
DERIVATIVES_KEPT = 1024
#: the key_of of a function without its cells -> (that function, what it was transformed to)
_siblings = {}


def key_of(func, *options):
    cells = tuple(map(id, func.__closure__ or ()))
    return (func.__code__, id(func.__globals__), cells, id(func.__defaults__),
            id(func.__kwdefaults__)) + options


def _sibling_key(func, options):
    return (func.__code__, id(func.__globals__), id(func.__defaults__),
            id(func.__kwdefaults__)) + options


def sibling(func, *options):
    """``(made_from, value)`` last kept by :func:`keep_sibling` for a function of the
    same code, globals and defaults as ``func`` (a closure made again by the same
    ``def``), or None."""
    return _siblings.get(_sibling_key(func, options))


def keep_sibling(func, value, *options):
    """Keep ``value``, what ``func`` was transformed to, for :func:`sibling`."""
    _siblings[_sibling_key(func, options)] = (func, value)


def derivative(key):
    """The derivative made for ``key`` (see :func:`remember`), or None.  This runs each
    time a user asks for a derivative: ``derivo.grad(loss)(w)`` in a training loop."""
    try:
        found = _derivatives.get(key)
    except TypeError:  # an unhashable wrt, a list: not remembered
        return None
    if found is not None:
        _stats["hits"] += 1
    return found


def remember(key, made):
    """Keep the derivative ``made`` for ``key``; return it."""
    with _lock:
        try:
            _derivatives[key] = made
        except TypeError:
            return made
        while len(_derivatives) > DERIVATIVES_KEPT:
            del _derivatives[next(iter(_derivatives))]
    return made


class LiveReads:
    """What a transformation read from the user's namespaces, and how a call checks it.

    ``reads`` holds one ``(where, name, path, value)`` per free name and attribute
    path the transformation resolved (see :func:`derivo.parse.recording_reads`).  A
    *data* read (an array, a number: a name read for its value, not called) the
    generated code reads through its own globals, which :meth:`refresh` sets to
    what the name holds now; the transformation depended on the value's type
    (scalar or array code) and nothing else.  Any other read (a function inlined or
    called, a module, a class) the transformation depended on as it was: when it
    changed, or when a rule was registered since (``rules.generation``), the
    derivative is made again.  A derivative the code calls counts with what it read.
    An attribute of a library's module (``np.sum``, ``math.log``) is taken as it
    was: the check tests the name of the module (``np``), not what the library holds.
    A read whose ``where`` is :data:`~derivo.parse.PARAMETERS` is what the
    transformation resolved through a parameter (the function ``loss_fn`` held):
    the entry checks it on each call, reading the argument (see :meth:`matches`).
    """

    def __init__(self, reads, generation):
        reads = [read for read in reads if not _of_a_library_module(*read)]
        self.reads = [(where, ident, path) for where, ident, path, _ in reads]
        self.seen = [value for *_, value in reads]
        self.data = [not path and _is_data(value) and where is not PARAMETERS
                     for where, _, path, value in reads]
        self.kinds = [_kind(value) if data else None for value, data in zip(self.seen, self.data)]
        # a bound method is made anew at each read, a key may be a string made anew,
        # a view (a dict's keys, a list's classes) is a new value
        self.equal = [_is_bound_method(value) or EQUAL in path or
                      any(isinstance(step, View) for step in path)
                      for (_, _, path, value) in reads]
        self.generation = generation
        # derivatives the code calls: brought up to date first, so that what their
        # generated code reads agrees with what the function's names hold
        self.derivatives = [value for value in self.seen if is_derivative(value)]

    def moved(self, places):
        """These reads from other places: ``places`` maps the id of a cell or
        globals dict read to the one to read instead (another closure's cell)."""
        return LiveReads([(places.get(id(where), where), ident, path, seen)
                          for (where, ident, path), seen in zip(self.reads, self.seen)],
                         self.generation)

    def _current(self, index, arguments=None):
        """What a read holds now; a read of a parameter's (see
        :attr:`derivo.parse.Parsed.fixed`) in ``arguments``, or as it was."""
        where, ident, path = self.reads[index]
        if where is PARAMETERS and arguments is None:
            return self.seen[index]  # (the entry checks it on each call)
        try:
            value = arguments[ident] if where is PARAMETERS else \
                where.cell_contents if isinstance(where, types.CellType) else where[ident]
            for step in path:
                value = value[step.key] if isinstance(step, Item) else \
                    value if step is EQUAL else step.of(value) if isinstance(step, View) \
                    else getattr(value, step)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            return MISSING
        return value

    def unchanged(self):
        """Whether the transformation would come out the same now: every read holds
        what it held (a data read: a value of the same kind) and no rule came since."""
        if rules.generation is not self.generation:
            return False
        for derivative in self.derivatives:
            derivative.derivo_reads()
        for index, (seen, data, kind) in enumerate(zip(self.seen, self.data, self.kinds)):
            now = self._current(index)
            if now is not seen and not (data and now is not MISSING and _kind(now) == kind) \
                    and not (self.equal[index] and now == seen):
                return False
        return True

    def matches(self, arguments):
        """Whether the parameters this transformation specialised on (see
        :attr:`derivo.parse.Parsed.fixed`) say the same of ``arguments`` ({parameter:
        value}): the same functions called, the same keys."""
        for index, (where, _, _) in enumerate(self.reads):
            if where is PARAMETERS:
                now, seen = self._current(index, arguments), self.seen[index]
                if now is not seen and not (self.equal[index] and now == seen):
                    return False
        return True

    def refresh(self, *scopes):
        """Give each name the generated code reads for its value what it holds now,
        in ``scopes`` (the generated code's globals dicts); False, changing nothing,
        when the derivative must be made again instead."""
        if not self.unchanged():
            return False
        now = {index: self._current(index) for index, data in enumerate(self.data) if data}
        by_name = {}
        for index, value in now.items():
            if by_name.setdefault(self.reads[index][1], value) is not value:
                return False  # one name, two namespaces (an inlined helper's): they part now
        for index, value in now.items():
            self.seen[index] = value
        for scope in scopes:
            scope.update((name, value) for name, value in by_name.items() if name in scope)
        return True

    def check(self, prefix):
        """The expression a call evaluates to tell that nothing changed, and the
        namespaces it reads, named from ``prefix``: one identity test per read, and one
        of the rule registry's generation (the values it compares with: see
        :meth:`entry_values`)."""
        holders, tests, roots = {}, [], {}
        for index, (where, ident, path) in enumerate(self.reads):
            if where is PARAMETERS:  # the entry's own parameter
                root = ident
            else:
                holder = holders.setdefault(id(where), ("{}_in{}".format(prefix, len(holders)),
                                                        where))[0]
                root = holder + (".cell_contents" if isinstance(where, types.CellType) else
                                 "[{!r}]".format(ident))
            if not path:
                roots[id(where), ident] = "{}_seen{}".format(prefix, index)
            # np.sum read from the np already checked: one lookup fewer
            read = roots.get((id(where), ident), root) if path else root
            read += "".join("[{!r}]".format(step.key) if isinstance(step, Item) else
                            "" if step is EQUAL else "." + step for step in path
                            if not isinstance(step, View))
            if path and isinstance(path[-1], View):
                read = path[-1].written.format(read)
            tests.append("{} {} {}_seen{}".format(read, "==" if self.equal[index] else "is",
                                                  prefix, index))
        tests.append("{0}_rules.generation is {0}_generation".format(prefix))
        return " and ".join(tests), dict(holders.values())

    def entry_values(self, prefix):
        """The globals :meth:`check`'s expression compares with, which :meth:`refresh`
        changes."""
        values = {"{}_seen{}".format(prefix, index): value for index, value in enumerate(self.seen)}
        values.update({prefix + "_rules": rules, prefix + "_generation": self.generation})
        return values


def _of_a_library_module(where, ident, path, value):
    """Whether the read ``where[ident].path`` is an attribute of a library's module."""
    if not path or where is PARAMETERS:
        return False
    try:
        root = where.cell_contents if isinstance(where, types.CellType) else where[ident]
    except (KeyError, ValueError):
        return False
    return isinstance(root, types.ModuleType) and memory.is_library_module(root)


def _is_data(value):
    """Whether the generated code reads ``value`` only for what it is: not a module, a
    class, or anything called (whose code or rule the transformation used)."""
    return not (callable(value) or isinstance(value, types.ModuleType))


def _is_bound_method(value):
    """Whether ``value`` is a method bound to an object (``rng.normal``), not a
    function of a module (``math.sin``, whose ``__self__`` is the module)."""
    return isinstance(value, (types.MethodType, types.BuiltinMethodType)) and \
        not isinstance(value.__self__, types.ModuleType)


def _kind(value):
    """What the transformation saw of a data value: its type, an array's dtype, and
    the types of a list's or a tuple's items (scalar or array code follows them),
    collected at C speed: a list of a million numbers takes milliseconds."""
    if isinstance(value, np.ndarray):
        return type(value), value.dtype
    if isinstance(value, (list, tuple)):
        return type(value), frozenset(map(type, value))
    return type(value)


def lookup(key, build, valid=lambda value: True):
    """The cached value for ``key``, calling ``build()`` on a miss or when
    ``valid(value)`` says the cached value went stale."""
    with _lock:
        if key in _entries and valid(_entries[key]):
            _stats["hits"] += 1
            return _entries[key]
        _stats["misses"] += 1
        value = _entries[key] = build()
        return value


def lock():
    """The lock under which derivatives are transformed and brought up to date."""
    return _lock


def info():
    """(hits, misses, size) of the transformation cache."""
    with _lock:
        return CacheInfo(_stats["hits"], _stats["misses"], len(_entries))


def clear():
    with _lock:
        _entries.clear()
        _derivatives.clear()
        _siblings.clear()
