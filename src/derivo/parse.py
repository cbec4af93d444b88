"""Stage 1: a function object -> its syntax tree and the names it can see.

The tree's line and column numbers are those of the user's file, so every
later error can point at the user's source.
"""

import ast
import builtins
import contextlib
import functools
import inspect
import re
import textwrap
import threading
import types
import weakref
from dataclasses import dataclass, field

from . import syntax as S
from .rules import Method, is_nondifferentiable
from .errors import SourceUnavailable, UnsupportedSyntax
from .contexts import lower_with_blocks
from .factories import call_returned_functions, make_inner_derivatives, pass_closed_over_locals
from .lift import lift_local_functions
from .partials import bind_partials
from .names import Namer, names_in

MISSING = object()
#: The start of the file name of a module derivo generated (see codegen)
GENERATED_PREFIX = "<derivo generated "
#: The reads being recorded by this thread (see recording_reads), innermost last
_RECORDING = threading.local()
#: The values held under a name (see Parsed.hold), across every function's Parsed:
#: a name held for one value is not given to another, so that the functions one
#: generated module combines never give a name two meanings
_HELD = weakref.WeakValueDictionary()
#: the functions whose callee parameters are being read, on this thread
_EXAMINING = threading.local()


@contextlib.contextmanager
def recording_reads():
    """Record what each free name resolved inside the block meant: yields a dict
    filled with one ``(where, name, path, value)`` per name and attribute path read
    (``where``: the globals dict or the closure cell holding ``name``; ``path``: the
    attributes read from it, ``("linalg", "norm")`` for ``np.linalg.norm``).  Names
    that resolved to a builtin, or to nothing, are left out."""
    stack = _RECORDING.__dict__.setdefault("stack", [])
    reads = {}
    stack.append(reads)
    try:
        yield reads
    finally:
        stack.pop()


@contextlib.contextmanager
def parsing_once():
    """Parse each function once inside the block (one request for a derivative):
    :func:`parse` gives a copy of the first :class:`Parsed`, and records again
    the reads that parsing made, for whichever recording is open then."""
    memos = _RECORDING.__dict__.setdefault("parsed", [])
    memos.append({})  # {id(function): (function, its Parsed, the reads parsing made)}
    try:
        yield
    finally:
        memos.pop()


#: what a Python function runs besides its name: what may be set anew on it
FUNCTION_PARTS = ("__code__", "__defaults__", "__kwdefaults__")


def _record(where, ident, path, value):
    stack = getattr(_RECORDING, "stack", None)
    if stack:
        reads = stack[-1]
        reads.setdefault((id(where), ident, path), (where, ident, path, value))
        if isinstance(value, types.FunctionType) and where is not PARAMETERS and \
                EQUAL not in path and not any(isinstance(step, View) for step in path):
            record_function_parts(where, ident, path, value)
        if is_derivative(value):
            # a derivative's code is read as it is now, and what it read counts as read
            # here (but not what it read of its own parameters)
            for read in value.derivo_reads():
                if read[0] is not PARAMETERS:
                    reads.setdefault((id(read[0]), read[1], read[2]), read)


def record_function_parts(where, ident, path, function):
    """Count as read, at ``path`` of ``ident`` in ``where``, the parts of
    ``function`` its code was read from (see :data:`FUNCTION_PARTS`): setting
    ``f.__code__`` (as IPython's autoreload does) or ``f.__defaults__`` makes the
    derivative again.  Defaults it has none of are not read: no call the
    derivative makes leaves out an argument for one."""
    stack = getattr(_RECORDING, "stack", None)
    for part in FUNCTION_PARTS:
        read, value = path + (part,), getattr(function, part)
        if value is not None or part == "__code__":
            stack[-1].setdefault((id(where), ident, read), (where, ident, read, value))


def record_reads(reads):
    """Count ``reads``, ``(where, name, path, value)`` each (see
    :func:`recording_reads`), as read by the block being recorded now."""
    for read in reads:
        _record(*read)


class _Parameters:
    """Where a read of a parameter's value is from (see :attr:`Parsed.fixed`): the
    call's arguments, which the derivative's entry checks on each call."""

    def __repr__(self):
        return "PARAMETERS"


PARAMETERS = _Parameters()


def called_by_class(obj):
    """Whether calling ``obj`` runs the ``__call__`` of its class, a Python function."""
    return not isinstance(obj, (types.FunctionType, types.MethodType, functools.partial,
                                type, types.BuiltinFunctionType)) and \
        isinstance(getattr(type(obj), "__call__", None), types.FunctionType)


def is_derivative(value):
    """Whether ``value`` is what derivo.grad & co. return: a Derivative's entry."""
    return type(value) is types.MethodType and "derivo_reads" in value.__func__.__dict__


class Item(tuple):
    """A step of a read's path: the item of a key (``ACTIVATIONS["tanh"]``)."""

    def __new__(cls, key):
        return tuple.__new__(cls, (key,))

    @property
    def key(self):
        return self[0]

    def of(self, obj):
        """``obj[key]``, or MISSING."""
        try:
            return obj[self[0]]
        except (KeyError, IndexError, TypeError):
            return MISSING


#: What a call that unpacks its arguments calls, for rule lookup (see Parsed.callee_key)
UNPACKED = type("Unpacked", (), {"__repr__": lambda self: "UNPACKED"})()
#: The step of a read's path that says its value is compared by equality (a key)
EQUAL = "=="


class View:
    """The last step of a read's path when the read is of a view of the value,
    compared by equality: ``of(value)`` computes it, ``written`` is the check's
    expression of it from the value's (see cache.LiveReads.check)."""

    def __init__(self, label, of, written):
        self.label, self.of, self.written = label, of, written

    def __repr__(self):
        return self.label


#: The set of a dict's keys (code branched over them, see derivo.dispatch)
KEYS = View("keys", frozenset, "frozenset({})")
#: The classes of a list's items, in order (code branched over them)
CLASSES = View("classes", lambda items: tuple(map(type, items)), "tuple(map(type, {}))")


@dataclass
class Parsed:
    """A user function ready for normalisation."""

    func: object
    tree: object            # the gast FunctionDef, decorators removed
    filename: str
    lines: list             # the function's source lines, as in the file
    first_line: int         # the file line number of lines[0]
    globals: dict = field(repr=False)
    closure: dict = field(repr=False)
    #: {parameter: the value a call gives it} for the parameters whose value says
    #: what a call calls (``loss_fn(w)``, ``self.predict(x)``, ``ACTS[name](x)``)
    fixed: dict = field(default_factory=dict, repr=False)
    #: {parameter: (where, name, path)}: how the derivative's entry reads a fixed
    #: parameter's value (a callee's ``self``: what its caller called the method on);
    #: the parameter of the entry itself by default
    origins: dict = field(default_factory=dict, repr=False)

    def copy(self):
        """A Parsed of its own: the tree copied, and the dicts later stages add to."""
        return Parsed(self.func, S.deepcopy(self.tree), self.filename, self.lines,
                      self.first_line, self.globals, dict(self.closure), dict(self.fixed),
                      dict(self.origins))

    def hold(self, ident, value):
        """A name, ``ident`` when free, under which the generated module holds
        ``value`` (a function a call was made to call, what it is given): kept
        with the closure, which nothing reads live."""
        for name, held in self.closure.items():
            if held is value and self._holder(name) is None:
                return name
        taken = set(self.globals) | set(self.closure) | {
            n.id for n in S.walk(self.tree) if isinstance(n, S.Name)}
        name, counter = ident, 0
        while name in taken or _HELD.get(name, value) is not value:
            counter += 1
            name = "{}{}".format(ident, counter)
        self.closure[name] = value
        try:
            _HELD[name] = value
        except TypeError:  # (a number: held in this function's code alone)
            pass
        return name

    def is_held(self, ident):
        """Whether ``ident`` is a name :meth:`hold` gave: the generated module may
        hold its value under another name."""
        return ident in self.closure and self._holder(ident) is None

    def resolve(self, ident):
        """The object a free name refers to, or MISSING."""
        where = self._holder(ident)
        if where is None:
            # a default held under a name of its own (see _hold_defaults) is in the
            # cache's key with the function's defaults: nothing to read live
            return self.closure[ident] if ident in self.closure else \
                getattr(builtins, ident, MISSING)
        value = self.closure[ident] if where is not self.globals else self.globals[ident]
        _record(where, ident, (), value)
        return value

    def _holder(self, ident):
        """The closure cell or the globals dict that holds the free name ``ident``,
        or None (a builtin, a default the function holds, or nothing)."""
        if ident in self.closure:
            func = self.func
            while isinstance(func, Outlined):  # a loop's step reads its function's cells
                func = func._parsed.func
            return dict(zip(func.__code__.co_freevars, func.__closure__ or ())).get(ident)
        return self.globals if ident in self.globals else None

    def resolve_callee(self, call):
        """The object a call's function expression (``f``, ``math.sin``,
        ``ACTIVATIONS[name]``) names, or MISSING when it is a local value or cannot
        be looked up."""
        return self.resolve_expression(call.func, items=True)

    def resolve_expression(self, func, items=False):
        """The object a name or a chain of attributes of a free name (``np.r_``)
        refers to, or MISSING when it is a local value or cannot be looked up.
        With ``items``, the chain may take items too (``LAYERS[0].act``), each of a
        constant key or of a free name holding one."""
        path = []
        while isinstance(func, S.Attribute) or items and isinstance(func, S.Subscript):
            if isinstance(func, S.Attribute):
                path.append(func.attr)
            else:
                key = self._key(func.slice)
                if key is MISSING:
                    return MISSING
                path.append(Item(key))
            func = func.value
        if not isinstance(func, S.Name):
            return MISSING
        if func.id in self.local_names:
            if not items:
                return MISSING
            if func.id in self.fixed:
                return self._resolve_fixed(func.id, path[::-1])
            obj = self._alias(func.id)
            for step in reversed(path):
                obj = step.of(obj) if isinstance(step, Item) else getattr(obj, step, MISSING)
            return obj
        obj = self.resolve(func.id)
        for step in reversed(path):
            obj = step.of(obj) if isinstance(step, Item) else getattr(obj, step, MISSING)
        where = self._holder(func.id)
        if path and obj is not MISSING and where is not None:
            _record(where, func.id, tuple(reversed(path)), obj)
        return obj

    def _resolve_fixed(self, ident, path):
        """What ``path`` of the parameter ``ident`` holds in this specialisation (see
        :attr:`fixed`), recorded for the entry to check: a method of an object by
        its function (another object of the class calls the same code)."""
        if ident not in self.fixed or ident in self._stored:
            return MISSING
        obj = self.fixed[ident]
        for step in path:
            obj = step.of(obj) if isinstance(step, Item) else getattr(obj, step, MISSING)
        if ident in self.origins and self.origins[ident] is None:
            return obj  # (a function its caller gave, read and checked there: see callees)
        where, root, base = self.origins.get(ident, (PARAMETERS, ident, ()))
        path = base + tuple(path)
        if isinstance(obj, types.MethodType) and path:
            _record(where, root, path + ("__func__",), obj.__func__)
        elif called_by_class(obj):  # its __call__ is its class's
            _record(where, root, path + ("__class__",), type(obj))
        elif obj is not MISSING:
            _record(where, root, path, obj)
        return obj

    def origin_of(self, node):
        """How the derivative's entry reads the value of the expression ``node``
        (``self``, ``model.layers[0]``, ``SCALER``): (where, name, path) of a chain
        of attributes and constant items of a fixed parameter or a free name;
        None for anything else."""
        path = []
        while isinstance(node, S.Attribute) or isinstance(node, S.Subscript) and \
                isinstance(node.slice, S.Constant):
            path.append(node.attr if isinstance(node, S.Attribute) else Item(node.slice.value))
            node = node.value
        if not isinstance(node, S.Name):
            return None
        if node.id in self.fixed and node.id not in self._stored:
            if node.id in self.origins and self.origins[node.id] is None:
                return None
            where, root, base = self.origins.get(node.id, (PARAMETERS, node.id, ()))
            return where, root, base + tuple(reversed(path))
        where = None if node.id in self.local_names else self._holder(node.id)
        return None if where is None else (where, node.id, tuple(reversed(path)))

    def read_keys(self, node, table):
        """Record, for the entry to check on each call, the keys of ``table``, the
        dict the expression ``node`` reads: code made for those keys (a branch
        over them, see derivo.dispatch) is made again when the dict gains one."""
        origin = self.origin_of(node)
        if origin is not None:
            where, ident, path = origin
            _record(where, ident, path + (KEYS,), KEYS.of(table))

    def _alias(self, ident):
        """What a local name assigned once, from an expression naming a function
        (``act = ACTIVATIONS[kind]``), holds; MISSING for any other local."""
        value = self._assigned_once.get(ident)
        if value is None or isinstance(value, S.Name) and value.id == ident:
            return MISSING
        obj = self.resolve_expression(value, items=True)
        return obj if callable(obj) else MISSING

    @functools.cached_property
    def _assigned_once(self):
        """{name: the value of its one assignment} of the names assigned once."""
        counts = S.store_counts(self.tree)
        return {n.targets[0].id: n.value for n in S.walk(self.tree)
                if isinstance(n, S.Assign) and len(n.targets) == 1
                and isinstance(n.targets[0], S.Name) and counts[n.targets[0].id] == 1}

    @functools.cached_property
    def callee_parameters(self):
        """{parameter: the lines of the calls it says the callee of} for the
        parameters whose value says what a call calls: the root of a call's
        function expression (``loss_fn(w)``, ``self.predict(x)``), or the key of an
        item in it (``ACTS[name](x)``), and never assigned.  A derivative
        specialises on what they hold (see :attr:`fixed`)."""
        args = self.tree.args
        params = {a.id for a in args.args + args.kwonlyargs} - self._stored
        assigned = {n.targets[0].id: n.value for n in S.walk(self.tree)
                    if isinstance(n, S.Assign) and len(n.targets) == 1
                    and isinstance(n.targets[0], S.Name)}
        lines = {}
        for call in (n for n in S.walk(self.tree) if isinstance(n, S.Call)):
            chains, found = [call.func], set()
            while chains:
                func = chains.pop()
                while isinstance(func, (S.Attribute, S.Subscript)):
                    if isinstance(func, S.Subscript):
                        chains.append(func.slice)  # ACTIVATIONS[kind], ACTIVATIONS[self.kind]
                    func = func.value
                if isinstance(func, S.Name) and func.id not in found:
                    found.add(func.id)
                    if func.id in assigned:  # act = ACTIVATIONS[kind]; act(x)
                        chains.append(assigned[func.id])
                    if func.id in self.loop_lists:  # for layer in layers: layer.forward(x)
                        chains.append(self.loop_lists[func.id])
            for param in (found | self._handed_to_a_callee(call)) & params:
                lines.setdefault(param, set()).add(call.lineno)
        return lines

    @functools.cached_property
    def loop_lists(self):
        """{name: the expression of the list it takes its values from} of this
        function's loops (see :func:`loop_lists`)."""
        return loop_lists(self.tree, self.resolve_expression)

    def _handed_to_a_callee(self, call):
        """The names ``call`` gives, as they are, to a user function for parameters
        that say what it calls (``euler(f, y0)`` of ``def euler(f, y0): ... f(y)``)."""
        given = [*call.args, *(k.value for k in call.keywords)]
        if not any(isinstance(v, S.Name) for v in given) or \
                any(isinstance(a, S.Starred) for a in call.args):
            return set()
        callee = self.resolve_expression(call.func)
        code = getattr(callee, "__code__", None)
        active = getattr(_EXAMINING, "codes", frozenset())  # (a recursive function)
        if not isinstance(callee, types.FunctionType) or code in active or \
                (getattr(callee, "__module__", None) or "").startswith(("numpy", "scipy", "derivo")):
            return set()
        _EXAMINING.codes = active | {code}
        try:
            called = parse(callee).callee_parameters
        except Exception:  # (not a function derivo reads: its call says why, later)
            return set()
        finally:
            _EXAMINING.codes = active
        given = dict(zip(code.co_varnames[:code.co_argcount], call.args))
        given.update((k.arg, k.value) for k in call.keywords if k.arg is not None)
        return {value.id for name, value in given.items()
                if name in called and isinstance(value, S.Name)}

    @functools.cached_property
    def _stored(self):
        return S.stored_names(self.tree)

    def _key(self, node):
        """The value of an item's key that is a constant, or a string or a number a
        free name or a fixed parameter holds, or an attribute of one
        (``ACTIVATIONS[self.activation]``): read again on each call, as another
        key is another callee.  MISSING for any other key."""
        if isinstance(node, S.Constant):
            return node.value
        origin = self.origin_of(node)
        if origin is None:
            return MISSING
        value = self._value_of(node)
        if type(value) not in (str, int, bool):
            return MISSING
        where, ident, path = origin
        _record(where, ident, path + (EQUAL,), value)
        return value

    def record_classes(self, node):
        """Record, for the entry to check, the classes of the items of the list the
        chain ``node`` (see :meth:`origin_of`) holds, in order: code made for them."""
        origin = self.origin_of(node)
        if origin is not None:
            where, ident, path = origin
            _record(where, ident, path + (CLASSES,), CLASSES.of(self._value_of(node)))

    def _value_of(self, node):
        """The value of a chain :meth:`origin_of` reads, as this transformation sees it."""
        path = []
        while isinstance(node, (S.Attribute, S.Subscript)):
            path.append(node.attr if isinstance(node, S.Attribute) else Item(node.slice.value))
            node = node.value
        obj = self.fixed[node.id] if node.id in self.fixed else self.resolve(node.id)
        for step in reversed(path):
            obj = step.of(obj) if isinstance(step, Item) else getattr(obj, step, MISSING)
        return obj

    def callee_key(self, call):
        """What a call calls, for rule lookup: the resolved object, or a
        :class:`~derivo.rules.Method` for a method of a local value (``x.sum()``);
        :data:`UNPACKED` for a call that unpacks arguments (``f(*args)``,
        ``f(**kw)``) into anything but a function without derivative: a rule is
        chosen by the arguments a call gives, which these do not say."""
        callee = self.resolve_callee(call)
        if callee is MISSING and isinstance(call.func, S.Attribute):
            callee = Method(call.func.attr)
        unpacks = any(isinstance(a, S.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords)
        if unpacks and not is_nondifferentiable(callee):
            return UNPACKED
        return callee

    @functools.cached_property
    def local_names(self):
        args = self.tree.args
        return {a.id for a in args.posonlyargs + args.args + args.kwonlyargs} | {
            n.id for n in S.walk(self.tree) if isinstance(n, S.Name)
            and isinstance(n.ctx, S.Store)}

    def error(self, cls, node, message, construct=None):
        """An error of class ``cls`` located at ``node`` in the user's file."""
        return cls(message, self.filename, getattr(node, "lineno", None),
                   getattr(node, "col_offset", None), construct)

    def words(self, node):
        """How the user wrote the expression ``node``, for a message: its printed
        source when the lines it stands on hold that text, else the text of the
        file where it stands when that is an expression (a temporary of ssa's,
        t1, stands where what it holds was written), else its printed source."""
        printed = S.expr_source(node)
        lines = self._lines_of(node)
        written = " ".join(line.strip() for line in lines)
        if not lines or re.search(r"(?<![\w.]){}(?!\w)".format(re.escape(printed)), written):
            return printed
        first, last = node.col_offset, node.end_col_offset
        if len(lines) == 1:
            text = lines[0].encode()[first:last].decode(errors="replace")
        else:
            text = "\n".join([lines[0].encode()[first:].decode(errors="replace")] + lines[1:-1]
                             + [lines[-1].encode()[:last].decode(errors="replace")])
        try:
            S.parse_expr("(" + text + "\n)")
        except SyntaxError:
            return printed
        return " ".join(text.split())

    def _lines_of(self, node):
        """The file lines an expression node spans, or [] if it spans none of
        this function's (no position, or one outside it)."""
        start, end = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        if start is None or end is None or getattr(node, "end_col_offset", None) is None:
            return []
        first, last = start - self.first_line, end - self.first_line
        if not 0 <= first <= last < len(self.lines):
            return []
        return [line.rstrip("\n") for line in self.lines[first:last + 1]]

    def source_line(self, lineno):
        """The stripped text of a file line of this function ('' if outside it)."""
        index = (lineno or 0) - self.first_line
        return self.lines[index].strip() if 0 <= index < len(self.lines) else ""


class Outlined:
    """A function derivo wrote from part of a user's function (a checkpointed
    loop's step, or its runner of several trips).

    It stands in for a Python function wherever the pipeline takes one: it
    parses to a tree whose positions are those of the user's file.
    """

    def __init__(self, parsed, tree):
        self.__name__ = self.__qualname__ = tree.name
        self.tree = tree
        self.params = [a.id for a in tree.args.args]
        self._parsed = parsed

    def parse(self):
        """A fresh :class:`Parsed` (later stages rewrite the tree they get)."""
        return Parsed(
            self, S.deepcopy(self.tree), self._parsed.filename, self._parsed.lines,
            self._parsed.first_line, self._parsed.globals, self._parsed.closure,
            self._parsed.fixed, self._parsed.origins)


def loop_lists(tree, resolve_expression):
    """{name: the expression of the list it takes its values from} for the names
    a ``for`` loop or a comprehension of ``tree`` takes from a list, and nothing
    else assigns: the target (``for layer in layers``), or one of what
    ``enumerate`` or ``zip`` pair (``for i, layer in enumerate(layers)``, ``for w,
    layer in zip(ws, layers)``); ``resolve_expression`` tells those two."""
    stores = S.store_counts(tree)
    found = {}
    for loop in (n for n in S.walk(tree) if isinstance(n, (S.For, S.gast.comprehension))):
        target, iterable = loop.target, loop.iter
        if isinstance(target, S.Name):
            pairs = [(target, iterable)]
        elif isinstance(target, S.Tuple) and isinstance(iterable, S.Call) and \
                not iterable.keywords:
            made_by = resolve_expression(iterable.func)
            pairs = list(zip(target.elts[1:], iterable.args)) if made_by is enumerate \
                else list(zip(target.elts, iterable.args)) if made_by is zip else []
        else:
            pairs = []
        found.update((name.id, listed) for name, listed in pairs
                     if isinstance(name, S.Name) and stores[name.id] == 1)
    return found


def parameter_names(func):
    """The names of a function's parameters, in order (keyword-only ones last)."""
    params = getattr(func, "params", None)  # an Outlined function, or an outline.Loop
    if params is not None:
        return list(params)
    code = func.__code__
    return list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])


@S.deep_recursion()
def parse(func):
    """Parse ``func`` (a plain Python function, or an :class:`Outlined` one) into a
    :class:`Parsed`, a fresh one each time (later stages rewrite what they get;
    see :func:`parsing_once`).  Its passes recurse as deep as the user's
    expressions nest, wherever derivo parses from."""
    if isinstance(func, Outlined):
        return func.parse()
    memos = getattr(_RECORDING, "parsed", None)
    if not memos:
        return _parse(func)
    found = memos[-1].get(id(func))
    if found is None or found[0] is not func:
        with recording_reads() as reads:
            parsed = _parse(func)
        found = memos[-1][id(func)] = (func, parsed, list(reads.values()))
    for read in found[2]:
        _record(*read)
    return found[1].copy()


def _parse(func):
    lifted = getattr(func, "derivo_lifted", None)
    fixed, origins = getattr(func, "derivo_fixed", ({}, {}))  # (see callees)
    if lifted is not None:  # a local function of a user's function (see lift)
        tree = S.deepcopy(lifted.tree)
        if func.__name__.isidentifier():  # (a copy named anew keeps its name)
            tree.name = func.__name__
        parsed = call_returned_functions(Parsed(
            func, tree, lifted.filename, lifted.lines, lifted.first_line,
            func.__globals__, _closure_of(func), dict(fixed), dict(origins)), parse)
        return pass_closed_over_locals(make_inner_derivatives(parsed), parse)
    # A wrapper (functools.wraps) is differentiated as the code it runs, which calls
    # what it wraps through its closure: never as its __wrapped__
    name = getattr(func, "__qualname__", repr(func))
    code = getattr(func, "__code__", None)
    if code is None:
        raise SourceUnavailable(
            "cannot differentiate {!r}: it is not a Python function, so it has no "
            "source (give derivo a rule for it instead)".format(name))
    filename = code.co_filename
    try:
        lines, first_line = inspect.getsourcelines(code)  # (a function's would unwrap it)
    except (OSError, TypeError) as exc:
        raise SourceUnavailable(
            "cannot find the source of {!r} ({}); derivo reads a function's source, "
            "so define it in a file".format(name, exc), filename, code.co_firstlineno)
    first_line = max(first_line, 1)
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = _indent_width(text) - _indent_width(dedented)
    shift = first_line - 1
    if _indent_width(dedented):
        # A line at column 0 inside a string stopped dedent: parse the source
        # as the body of a block instead, keeping its columns.
        dedented, indent, shift = "if 1:\n" + text, 0, first_line - 2
    tree = _function_tree(dedented, func, filename, first_line, shift, indent)
    for node in S.walk(tree):
        if hasattr(node, "lineno"):
            node.lineno += shift
            node.col_offset += indent
            if getattr(node, "end_lineno", None) is not None:  # (where a statement ends)
                node.end_lineno += shift
                node.end_col_offset += indent
    tree.decorator_list = []
    # Generated functions take positional-only parameters as ordinary ones.
    tree.args.args, tree.args.posonlyargs = tree.args.posonlyargs + tree.args.args, []
    parsed = Parsed(func, tree, filename, lines, first_line, func.__globals__, _closure_of(func),
                    dict(fixed), dict(origins))
    _hold_defaults(parsed)
    _unfreeze_distributions(parsed)
    parsed = call_returned_functions(
        lift_local_functions(bind_partials(lower_with_blocks(parsed))), parse)
    return pass_closed_over_locals(make_inner_derivatives(parsed), parse)


def _closure_of(func):
    """{free name: the value its cell holds} (an empty cell left out)."""
    closure = {}
    for ident, cell in zip(func.__code__.co_freevars, func.__closure__ or ()):
        try:
            closure[ident] = cell.cell_contents
        except ValueError:
            pass
    return closure


def _unfreeze_distributions(parsed):
    """Call a frozen distribution's method on its family, with the parameters it
    was frozen with after the method's own arguments: ``norm(mu, s).logpdf(x)``
    becomes ``norm.logpdf(x, mu, s)``, as SciPy's frozen methods compute it, so
    the family's rule applies (a distribution frozen into a name first: see
    _refreeze_where_called)."""
    _refreeze_where_called(parsed)
    for call in S.walk(parsed.tree):
        if not (isinstance(call, S.Call) and isinstance(call.func, S.Attribute)
                and isinstance(call.func.value, S.Call)):
            continue
        frozen = call.func.value
        if any(isinstance(a, S.gast.Starred) for a in frozen.args) or \
                not is_distribution(parsed.resolve_callee(frozen)):
            continue
        call.func = S.copy_location(S.attribute(frozen.func, call.func.attr), call.func)
        call.args = call.args + frozen.args
        call.keywords = call.keywords + frozen.keywords


def _refreeze_where_called(parsed):
    """Freeze a distribution held in a name again where its methods are called:
    ``d = norm(mu, 2.0)`` becomes ``d_arg = mu`` (the values it froze, but
    constants), and ``d.logpdf(x)`` ``norm(d_arg, 2.0).logpdf(x)``.  Only of a
    name the function assigns once, a distribution; the assignment stays if the
    name is read otherwise too."""
    tree = parsed.tree
    stores, reads = {}, {}
    for node in S.walk(tree):
        if isinstance(node, S.Name):
            counts = stores if isinstance(node.ctx, (S.Store, S.gast.Param)) else reads
            counts[node.id] = counts.get(node.id, 0) + 1
        elif isinstance(node, (S.gast.Global, S.gast.Nonlocal)):
            stores.update(dict.fromkeys(node.names, 2))
    namer = Namer(names_in(tree) | set(parsed.globals) | set(parsed.closure))
    for body in _statement_lists(tree):
        for stmt in list(body):
            if not (isinstance(stmt, S.Assign) and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], S.Name) and isinstance(stmt.value, S.Call)
                    and stores.get(stmt.targets[0].id) == 1):
                continue
            frozen = stmt.value
            if any(isinstance(a, S.gast.Starred) for a in frozen.args) or None in [
                    k.arg for k in frozen.keywords] or \
                    not is_distribution(parsed.resolve_callee(frozen)):
                continue
            held = stmt.targets[0].id
            captured = []  # (name, value) of the parameters that are not constants

            def capture(value, base):
                if isinstance(value, S.Constant):
                    return S.deepcopy(value)
                captured.append((namer.fresh(base), value))
                return S.name(captured[-1][0])

            refrozen = S.call(S.deepcopy(frozen.func),
                              *[capture(a, held + "_arg") for a in frozen.args],
                              keywords=[S.gast.keyword(arg=k.arg, value=capture(
                                  k.value, "{}_{}".format(held, k.arg)))
                                  for k in frozen.keywords])
            methods = [call for call in S.walk(tree) if isinstance(call, S.Call)
                       and isinstance(call.func, S.Attribute)
                       and isinstance(call.func.value, S.Name) and call.func.value.id == held]
            for call in methods:
                call.func.value = S.copy_location(S.deepcopy(refrozen), call.func.value)
            at = body.index(stmt)
            if reads.get(held, 0) == len(methods) and (captured or len(body) > 1):
                body.pop(at)
            body[at:at] = [S.copy_location(S.assign(name, S.deepcopy(value)), stmt)
                           for name, value in captured]


def _statement_lists(tree):
    """Every list of statements in ``tree`` (bodies, else branches, handlers')."""
    for node in S.walk(tree):
        for part in ("body", "orelse", "finalbody"):
            body = getattr(node, part, None)
            if isinstance(body, list) and body and isinstance(body[0], S.gast.stmt):
                yield body


def is_distribution(obj):
    """Whether ``obj`` is a family of scipy.stats (``norm``, ``multivariate_normal``):
    calling it freezes its parameters."""
    return getattr(type(obj), "__module__", "").startswith("scipy.stats.") and \
        callable(obj) and not inspect.isroutine(obj) and not inspect.isclass(obj)


def _hold_defaults(parsed):
    """Make the tree's defaults the values the function object holds
    (``__defaults__``, ``__kwdefaults__``), not the source that made them:
    ``c=c`` in a closure, or a global rebound since, means something else (or
    nothing) where the generated code runs.  A literal becomes a constant; any
    other value a name that resolves to it: the source's own name when that
    still means the value (``w=W``) and is not a local's (``W=W``), else a name
    of its own held with the closure's."""
    func, args = parsed.func, parsed.tree.args
    values = list(func.__defaults__ or ())
    keywords = func.__kwdefaults__ or {}
    if not (values or keywords or args.defaults or any(args.kw_defaults)):
        return  # no default, in the source or the function object
    taken = set(parsed.globals) | set(parsed.closure) | {
        n.id for n in S.walk(parsed.tree) if isinstance(n, S.Name)}

    def held(param, value, written):
        if type(value) in S.LITERAL_TYPES:
            return S.copy_location(S.const(value), written)
        # (``w=w`` names a parameter where the generated signature reads it)
        if isinstance(written, S.Name) and written.id not in parsed.local_names and \
                parsed.resolve(written.id) is value:
            return written
        ident, counter = "{}_default".format(param), 0
        while ident in taken:
            counter += 1
            ident = "{}_default{}".format(param, counter)
        taken.add(ident)
        parsed.closure[ident] = value
        return S.copy_location(S.name(ident), written)

    with_defaults = args.args[len(args.args) - len(values):] if values else []
    args.defaults = [held(a.id, v, w) for a, v, w in zip(with_defaults, values, args.defaults)]
    args.kw_defaults = [None if a.id not in keywords else held(a.id, keywords[a.id], w or a)
                        for a, w in zip(args.kwonlyargs, args.kw_defaults)]


def too_deep(func):
    """The refusal of ``func`` when derivo's passes over it recurse deeper than
    :data:`~derivo.syntax.RECURSION_LIMIT`: it names the statement holding its
    most deeply nested expression."""
    if isinstance(func, Outlined):
        statement, filename = S.deepest(func.tree), func._parsed.filename
    else:
        code = func.__code__
        filename, statement = code.co_filename, None
        try:
            lines, first_line = inspect.getsourcelines(code)
            text = textwrap.dedent("".join(lines))
            statement = S.deepest(ast.parse(text))
            statement.lineno += max(first_line, 1) - 1
            statement.col_offset += _indent_width("".join(lines)) - _indent_width(text)
        except (OSError, TypeError, SyntaxError):
            pass
    return UnsupportedSyntax(
        "cannot differentiate this expression: it nests deeper than derivo's passes can "
        "follow; compute its parts in statements of their own", filename,
        getattr(statement, "lineno", None), getattr(statement, "col_offset", None),
        "deep expression")


def _runs(code, body, shift, indent):
    """Whether the code object ``code`` was compiled from the expression ``body``
    (a lambda's, at ``shift`` lines and ``indent`` columns from the file's)."""
    start = (body.lineno + shift, body.col_offset + indent)
    end = (body.end_lineno + shift, body.end_col_offset + indent)
    return any(line is not None and column is not None and
               start <= (line, column) and (end_line, end_column) <= end
               for line, end_line, column, end_column in code.co_positions())


def _indent_width(text):
    first = next((line for line in text.splitlines() if line.strip()), "")
    return len(first) - len(first.lstrip())


#: What a lambda's lines may stand inside (an argument list, a dict display): the
#: source of a lambda is the whole lines holding it, which may not parse alone, and
#: its last line may close the display (``"softplus": lambda x: ...}``)
_SURROUNDINGS = (("(\n", "\n)"), ("{\n", "\n}"), ("f(\n", "\n)"), ("[\n", "\n]"),
                 ("(\n", ""), ("{\n", ""), ("f(\n", ""), ("[\n", ""))


def _parsed_module(source):
    """The module of ``source``, or of it inside one of :data:`_SURROUNDINGS`
    (positions those of ``source``); None if neither parses."""
    try:
        return S.gast.parse(source)
    except SyntaxError:
        pass
    for before, after in _SURROUNDINGS:
        try:
            module = S.gast.parse(before + source + after)
        except SyntaxError:
            continue
        for node in S.walk(module):
            if hasattr(node, "lineno"):
                node.lineno -= 1
                if getattr(node, "end_lineno", None) is not None:
                    node.end_lineno -= 1
        return module
    return None


def _function_tree(source, func, filename, first_line, shift=0, indent=0):
    module = _parsed_module(source)
    if module is None:
        raise SourceUnavailable("cannot parse the source of {!r}".format(func.__qualname__),
                                filename, first_line)
    body = module.body[0].body if source.startswith("if 1:\n") else module.body
    defs = [n for n in body if isinstance(n, (S.FunctionDef, S.gast.AsyncFunctionDef))]
    if func.__name__ != "<lambda>" and defs:
        return defs[0]
    lambdas = [n for n in S.walk(module) if isinstance(n, S.gast.Lambda)
               and [a.id for a in n.args.posonlyargs + n.args.args] == list(
                   func.__code__.co_varnames[:func.__code__.co_argcount])]
    if len(lambdas) > 1:  # several on one line: the one whose body the code runs
        lambdas = [lam for lam in lambdas if _runs(func.__code__, lam.body, shift, indent)]
    if len(lambdas) != 1:
        raise UnsupportedSyntax(
            "cannot tell which lambda on this line to differentiate; use a def",
            filename, first_line, None, "lambda")
    lam = lambdas[0]
    body = S.return_(lam.body)
    S.copy_location(body, lam)
    tree = S.function("lambda_line{}".format(first_line + lam.lineno - 1),
                      [a.id for a in lam.args.posonlyargs + lam.args.args], [body],
                      defaults=lam.args.defaults, kwonly=[a.id for a in lam.args.kwonlyargs],
                      kw_defaults=lam.args.kw_defaults)
    S.copy_location(tree, lam)
    return tree
