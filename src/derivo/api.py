"""The public API: grad, value_and_grad, vjp, tangent, jvp, source, save_module,
and the Derivative object (jacobian, hessian and hvp, built of these, are in
:mod:`derivo.jacobians`)."""

import ast
import functools
import inspect
import linecache
import math
import operator
import os
import types
import weakref

from typing import Any, Callable, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import (__version__, cache, callees, codegen, display, numba_backend, rules, save,
               specialise, trees)
from . import syntax as S
from .errors import GENERATED_ORIGINS, DerivoError, user_line
from .fence import check_supported
from .parse import (GENERATED_PREFIX, MISSING, parse, parsing_once, record_function_parts,
                    record_reads, recording_reads, too_deep)
from .analyze import MEMORY_REFUSALS, parameters_read_whole, sequence_arithmetic
from .checkpoints import SCHEDULES
from .transform import Build, collection_paused, is_generated, uses_numpy


#: A parameter given by position or name, or a tuple of them.
Wrt = Union[int, str, Sequence[Union[int, str]]]
Function = Callable[..., Any]

KIND_LABELS = {"grad": "Gradient", "value_and_grad": "Value and gradient",
               "vjp": "Vector-Jacobian product", "jvp": "Jacobian-vector product"}


#: The public function that makes each kind of derivative.
_MADE_BY = {"grad": "grad", "value_and_grad": "value_and_grad", "vjp": "vjp", "jvp": "tangent"}

_NDARRAY = np.ndarray
_PLAIN_REALS = frozenset({float, int})
#: What a Derivative's entry reads besides its arguments (see entry_guard).
_MATRIX = np.matrix
_GUARD_GLOBALS = {"derivo_float": float, "derivo_ndarray": _NDARRAY,
                  "derivo_float64": np.dtype(np.float64),
                  "derivo_matrix": _MATRIX,
                  "derivo_containers": frozenset({_NDARRAY, _MATRIX, list, tuple})}
#: The names the entry adds to the generated code: its first parameter, the
#: Derivative it is bound to, and the guard's globals.
_ENTRY_NAMES = ("derivo_self", *_GUARD_GLOBALS)
#: The prefix of the names of the entry's check of the names the derivative read
#: (see cache.LiveReads.check)
_LIVE = "derivo_live"
# The kinds whose differentiated arguments a call checks (derivo.vjp and derivo.jvp
# choose theirs by type before calling).
_TYPE_CHECKED_KINDS = ("grad", "value_and_grad")
_DEFAULT = object()
#: (loop strategy, checkpoints, schedule, backend): the options of the generated code
DEFAULT_LOOPS = ("stack", None, "revolve", "python")
_FLOATS = frozenset({float})


def _item_types(items):
    """The types of a list's or a tuple's items, as a set.  This runs on every
    call with a list: a list of floats, the common case, is told by counting its
    floats, a quarter faster than collecting the types (no hashing)."""
    if items and type(items[0]) is float and \
            operator.countOf(map(type, items), float) == len(items):
        return _FLOATS
    return set(map(type, items))


def _is_real(value):
    if type(value) is _NDARRAY:  # the common cases first: this runs on every call
        return value.dtype.kind in "fiu"
    if type(value) in _PLAIN_REALS:
        return True
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, float, np.integer, np.floating)):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "fiu"
    if isinstance(value, (list, tuple)):
        # the types of a list of plain numbers collected at C speed: this runs on every call
        return _item_types(value) <= _PLAIN_REALS or all(_is_real(item) for item in value)
    return False


def _integral(value):
    """Whether ``value`` is an integer, an integer array, or a list or tuple
    holding one at any depth."""
    if isinstance(value, (list, tuple)):
        return any(map(_integral, value))
    return np.asarray(value).dtype.kind in "iu" if isinstance(value, np.ndarray) else \
        isinstance(value, (int, np.integer))


def _low_precision(value):
    """Whether ``value`` is a NumPy array or scalar of a float type narrower than
    float64 (whose gradient is of its dtype)."""
    return isinstance(value, (np.ndarray, np.floating)) and value.dtype.kind == "f" and \
        value.dtype.itemsize < 8


def _as_floats_hint(name, value):
    if isinstance(value, np.ndarray):
        return "{}.astype(float)".format(name)
    if isinstance(value, (list, tuple)):
        return "floats in {}".format(name)
    return "float({})".format(name)


def _holds_array(value, item_types=None):
    """Whether ``value`` is an array, or a container holding one at any depth
    (``item_types``: the types of its items, when already collected).  Scalar
    code run on it would add arrays in place where it adds numbers."""
    if type(value) is _NDARRAY:
        return True
    if not isinstance(value, (list, tuple)):
        return type(value) not in _PLAIN_REALS and trees.is_record(value) and \
            any(isinstance(leaf, _NDARRAY) for leaf in trees.leaves(value))
    types = _item_types(value) if item_types is None else item_types
    return not types <= _PLAIN_REALS and any(map(_holds_array, value))


def _in_structure(gradient, value, item_types=None):
    """``gradient`` in the structure of the argument ``value``, as JAX and autograd
    give it: a tuple for a tuple, a list for a list and an array for an array, at
    every depth.  The generated code keeps the adjoint of a tuple of numbers as an
    array, and leaves 0.0 for a container, or an item, that no adjoint reached:
    that 0.0 becomes zeros of value's shape.  ``item_types``: the types of value's
    items, when collected."""
    kind = type(value)
    if kind is _NDARRAY:
        return gradient if type(gradient) is _NDARRAY and gradient.shape == value.shape else \
            np.broadcast_to(np.asarray(gradient, dtype=float), value.shape).copy()
    if not issubclass(kind, (list, tuple)):
        # an item of a tuple kept in an array: a NumPy scalar, made a Python float
        return float(gradient) if isinstance(gradient, np.floating) or \
            type(gradient) is _NDARRAY and gradient.ndim == 0 else gradient
    items = _item_types(value) if item_types is None else item_types
    if _kept_as_is(gradient, value, items):
        return gradient
    if not (isinstance(gradient, (list, tuple)) or np.ndim(gradient) > 0) or \
            len(gradient) != len(value):
        gradient = [gradient] * len(value)
    parts = map(_in_structure, gradient, value)
    return kind(*parts) if hasattr(kind, "_fields") else kind(parts)  # a NamedTuple too


def _kept_as_is(gradient, value, item_types):
    """Whether ``gradient`` already has the structure of ``value``, a list of
    numbers (``item_types``: the types of its items): a list of the same length,
    as the scalar code makes it (its items may be NumPy scalars)."""
    return type(value) is list and type(gradient) is list and \
        len(gradient) == len(value) and item_types <= _PLAIN_REALS


def _is_tree(value):
    """Whether ``value`` is, or holds at any depth, a container read by name (a
    dict, a dataclass, a NamedTuple, a registered class: see derivo.trees),
    whose gradient derivo.trees puts in its structure."""
    if type(value) in _PLAIN_REALS or type(value) is _NDARRAY:
        return False
    if type(value) is list or type(value) is tuple:
        return any(map(_is_tree, value))
    return trees.is_record(value)


_LAZY_ARRAY = ("; an array of another library (a Dask array) may be data the function "
               "reads, not a parameter: pass the parameters as NumPy arrays (np.asarray)")


def _is_lazy_array(value):
    """Whether ``value`` is an array of another library that NumPy's functions
    dispatch to (a Dask array)."""
    return hasattr(type(value), "__array_function__") and not isinstance(value, np.ndarray)


def _short_repr(value):
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class Generated(NamedTuple):
    """One compiled derivative and what produced it."""

    function: object
    source: str
    namespace: dict
    user_sources: dict
    build: Build
    entry_code: object  # the code of the Derivative's entry (see _entry)
    entry_names: dict  # the names the entry adds (see _entry_names)
    entry_globals: dict  # the globals its code reads besides the generated code's
    live: cache.LiveReads  # what the transformation read, which each call checks
    backend: str = "python"  # what compiled the code (see numba_backend)


class _DerivativeType(type):
    # What derivo.grad returns is a Derivative's entry bound to it (see Derivative),
    # and isinstance(df, derivo.Derivative) holds for it.
    def __instancecheck__(cls, obj):
        # an entry carries derivo_function; a Derivative's other methods do not
        return type.__instancecheck__(cls, obj) or \
            type.__instancecheck__(cls, getattr(obj, "__self__", None)) and \
            "derivo_function" in getattr(getattr(obj, "__func__", None), "__dict__", {})


class _ArgumentChecks:
    """What a derivative checks of the arguments it differentiates, on every
    call: that each is real, or a container of reals, and that the function
    does not join or repeat a list it differentiates (its adjoint would be
    silently wrong).  ``checked`` holds (position or None, name) per argument."""

    def __init__(self, func, checked):
        self.func = func
        self.checked = checked

    def __call__(self, args, kwargs, item_types):
        """Refuse a differentiated argument that is not real: a string, None, a
        bool or a complex number would give a meaningless derivative.  Refuse a
        list or tuple the function would join or repeat with + or *, whose
        adjoint would be silently wrong.

        Returns the differentiated arguments (``_DEFAULT`` for one left to its
        default value).
        """
        values = []
        for index, name in self.checked:
            value = args[index] if index is not None and index < len(args) else \
                kwargs.get(name, _DEFAULT)
            values.append(value)
            if value is not _DEFAULT and _is_tree(value):
                self.check_tree(name, value)
                continue
            flat = isinstance(value, (list, tuple)) and item_types[id(value)] <= _PLAIN_REALS
            if value is not _DEFAULT and not flat and not _is_real(value):
                raise DerivoError(
                    "{}: cannot differentiate with respect to {}={}: derivo differentiates "
                    "real numbers (float, int, NumPy arrays of them) and containers of them "
                    "(lists, tuples, dicts, dataclasses, NamedTuples, classes registered with "
                    "derivo.register_container), got {}{}".format(
                        self.func.__qualname__, name, _short_repr(value),
                        type(value).__name__, _LAZY_ARRAY if _is_lazy_array(value) else ""))
            floats = flat and item_types[id(value)] is _FLOATS  # told at C speed
            if value is not _DEFAULT and not floats and _integral(value):
                raise DerivoError(
                    "{0}: cannot differentiate with respect to {1}={2}, which holds integers: "
                    "derivo differentiates floats (as JAX does), and {0} may use {1} as an "
                    "integer (math.factorial({1}), range({1})), whose derivative is not its "
                    "change with {1}; if {0} is smooth in {1}, pass {3}, else leave {1} out "
                    "of wrt".format(self.func.__qualname__, name, _short_repr(value),
                                    _as_floats_hint(name, value)))
            if isinstance(value, (list, tuple)):
                self.refuse_joined(name, value, flat)
        return values

    def check_tree(self, name, value):
        """Refuse the container ``value`` given for the parameter ``name`` when it
        holds a complex number, whose derivative derivo does not take, or when
        the function may join or repeat a list in it; its other leaves that are
        not floats (ints, strings, flags) pass through and get None.  A container
        given for a parameter the function reads only as a number is refused."""
        if name not in self.read_whole:
            raise DerivoError(
                "{}: cannot differentiate with respect to {}={}: derivo differentiates real "
                "numbers, and containers of them that the function reads by part ({}[...], "
                "{}.field), but {} uses {} only as a number".format(
                    self.func.__qualname__, name, _short_repr(value), name, name,
                    self.func.__qualname__, name))
        for leaf in trees.leaves(value):
            if trees.is_complex(leaf):
                raise DerivoError(
                    "{}: cannot differentiate with respect to {}={}: it holds the complex "
                    "number {}, and derivo differentiates real numbers; pass its real and "
                    "imaginary parts as floats".format(
                        self.func.__qualname__, name, _short_repr(value),
                        _short_repr(leaf)))
        if trees.holds_sequence(value):  # (else nothing in it can be joined)
            self.refuse_joined(name, value, False)

    def refuse_joined(self, name, value, flat):
        """Refuse the container ``value`` given for the parameter ``name`` if
        the function may join or repeat it, or a list inside it, with + or *: its
        adjoint would be silently wrong.  ``flat``: its items are plain numbers
        (only the list itself, or a tuple zip makes of its items, can be joined)."""
        for path, error in self.sequence_arithmetic.get(name, {}).items():
            if (not path or path[0] is trees.ZIPPED) if flat else trees.sequence_on(value, path):
                raise error

    @functools.cached_property
    def read_whole(self):
        return _deeply(parameters_read_whole, self.func)

    @functools.cached_property
    def sequence_arithmetic(self):
        return _deeply(sequence_arithmetic, self.func)


class Derivative(metaclass=_DerivativeType):
    """A generated derivative: call it like the function it was made from.

    ``.source`` is the code that runs; ``.save(path)`` writes it as a standalone
    module.  A function that does not use NumPy gets scalar code; if it is then
    called with arrays, derivo generates (once) array code for it.

    What the user calls is ``.call``: the *entry*, the generated function compiled
    again with one more parameter first, bound to this Derivative, and a guard on
    its ``def`` line (see :func:`entry_guard`) that checks the argument types; a
    call the guard does not pass takes :meth:`_call_checked`.  A bound method
    costs a few nanoseconds over calling the generated function; a Python-level
    ``__call__`` or a ``functools.partial`` subclass cost ten times that, more than
    many whole gradients.  The entry carries the public attributes (``source``,
    ``save``, ``kind``, ``wrt``...), which the bound method shows as its own.

    The entry first checks that the names the transformation read still hold what
    they held (see :class:`cache.LiveReads`); a call that finds one changed takes
    :meth:`_call_stale`, which gives the generated code the names' new values, or
    transforms the function again and puts the new code in the same entry.
    """

    def __init__(self, func, kind, wrt, tuple_wrt, loops=DEFAULT_LOOPS,
                 has_aux=False, pullback=False, bound=((), {})):
        func = _as_python(func)
        positional = [p.name for p in _parameters(func) if p.kind != p.KEYWORD_ONLY]
        self._arguments = _ArgumentChecks(func, [
            (positional.index(n) if n in positional else None, n) for n in wrt
        ] if kind in _TYPE_CHECKED_KINDS else [])
        self.__wrapped__ = func
        self.kind = kind
        self.wrt = wrt
        self._tuple_wrt = tuple_wrt
        self._loops = loops
        self.__doc__ = "{} of {} with respect to {}.".format(
            KIND_LABELS[kind], func.__qualname__, ", ".join(wrt))
        self._has_aux = has_aux
        self._pullback = pullback
        # whether a call gave an argument holding a record, whose gradient a saved
        # module then rebuilds in its type (a dict's is a dict as it is)
        self._record_gradients = False
        # (parsing makes as many tree nodes as a transform: see collection_paused)
        with parsing_once(), collection_paused():
            # the parameters that may say what the function calls (see specialise)
            self._callee_parameters = specialise.callee_parameters(func, wrt)
            # (``bound``: the arguments a bound method or a partial gives first)
            self._fixed = specialise.fixed_values(func, self._callee_parameters, 0, *bound)
            try:
                self._install()
            except DerivoError as error:
                if not specialise.waits_for_arguments(error, self._callee_parameters, func):
                    raise
                # what a parameter calls is known at the first call: transformed then
                self.call = types.MethodType(specialise.pending_entry(), self)
                self.source = "# derivo transforms {} at its first call, for what {} " \
                    "hold\n".format(func.__qualname__, ", ".join(self._callee_parameters))
                self.call.__func__.__dict__.update(source=self.source)
        entry = self.call.__func__
        entry.__module__ = func.__module__
        entry.__doc__ = self.__doc__
        entry.__dict__.update(
            kind=kind, wrt=wrt, save=self.save, module_source=self.module_source,
            derivo_reads=self._reads_now, __wrapped__=func, _repr_html_=self._repr_html_,
            _repr_markdown_=self._repr_markdown_,
            # the entry's own (inspect drops the bound first one), not __wrapped__'s
            __signature__=inspect.signature(entry))

    def _install(self):
        """Transform the function as it is now (or find it in the cache) and make
        the entry run the result: a new entry the first time, later the same
        entry (what the user holds) with the new code."""
        func = self.__wrapped__
        arrays = uses_numpy(func)
        generated = self._generated = _generate(
            func, self.kind, self.wrt, self._tuple_wrt, arrays, self._loops,
            self._has_aux, self._pullback, self._fixed)
        self._function = generated.function
        # what derivo differentiates in a caller (compiled code: its Python source)
        self.derivo_function = getattr(self._function, "derivo_python", self._function)
        # ... and in a caller's array code (see transform.Build.with_array_code)
        self.derivo_function.derivo_array_code = self._for_arrays
        self._array_generated = None
        self._rerunning = {}  # arrays -> the Generated differentiated again (see there)
        self._scalar_only = not arrays
        self.source = generated.source
        self.__name__ = self._function.__name__
        if "call" not in self.__dict__:
            self.call = types.MethodType(_entry(generated), self)
        else:
            entry = self.call.__func__
            made = _entry(generated, entry.__globals__)
            entry.__code__ = made.__code__
            entry.__defaults__, entry.__kwdefaults__ = made.__defaults__, made.__kwdefaults__
            entry.__signature__ = inspect.signature(made)
        self.call.__func__.__dict__.update(source=self.source, derivo_function=self._function)

    def _call_stale(self, args, kwargs):
        """A call that found a name the derivative read changed (see the class), or
        a parameter it specialised on holding something else (see specialise)."""
        entry = self.call.__func__
        defaults = entry.__defaults__, entry.__kwdefaults__
        self._specialise(args, kwargs)
        self._bring_up_to_date()
        return self._call_checked(*_defaults_anew(entry, defaults, args, kwargs))

    def _specialise(self, args, kwargs, lead=None):
        """Transform again (or find in the cache) for what this call's arguments
        call, unless the code in the entry was made for that; ``lead``: how many
        arguments come before the function's own (the entry's: a cotangent, tangents)."""
        if not self._callee_parameters:
            return
        if lead is None:
            lead = {"vjp": 1, "jvp": len(self.wrt)}.get(self.kind, 0)
        fixed = specialise.fixed_values(self.__wrapped__, self._callee_parameters, lead,
                                        args, kwargs)
        generated = getattr(self, "_generated", None)
        if generated is None or set(fixed) != set(self._fixed) or \
                not generated.live.matches(fixed):
            with cache.lock():
                self._fixed = fixed
                self._install()

    def _reads_now(self):
        """What the transformation read, brought up to date: ``(where, name, path,
        value)`` for each (see cache.LiveReads)."""
        self._bring_up_to_date()
        live = self._generated.live
        return [(*read, seen) for read, seen in zip(live.reads, live.seen)]

    def _bring_up_to_date(self):
        """Make the generated code see what the function's names hold now:
        refresh the values it reads, or transform the function again when what
        the transformation depended on changed."""
        if "_generated" not in self.__dict__:
            raise DerivoError(
                "{} is transformed at its first call, for the functions its parameters {} "
                "hold then: call it before using it another way".format(
                    self.__wrapped__.__qualname__, ", ".join(self._callee_parameters)))
        with cache.lock():
            entry_scope = self.call.__func__.__globals__
            generated = self._generated
            if not generated.live.refresh(generated.function.__globals__, generated.namespace,
                                          entry_scope):
                self._install()
                generated = self._generated
                generated.live.refresh(generated.function.__globals__, generated.namespace,
                                       entry_scope)
            entry_scope.update(generated.live.entry_values(generated.entry_names[_LIVE]))
            if generated.backend == "numba":  # it compiled the values it read as constants
                generated.function.derivo_recompile(generated.namespace, entry_scope)

    def _call_checked(self, args, kwargs):
        values = [*args, *kwargs.values()]
        # the types of each list's items, collected once at C speed for the checks
        # and the gradients' structure: this runs on every call with a list
        item_types = {id(v): _item_types(v) for v in values if isinstance(v, (list, tuple))}
        differentiated = self._arguments(args, kwargs, item_types) \
            if self._arguments.checked else ()
        result = self._code_to_run(values, item_types)(*args, **kwargs)
        if any(map(_low_precision, differentiated)):
            result = self._gradients_in_precision(result, differentiated)
        if any(map(_is_tree, differentiated)):
            self._record_gradients |= any(map(trees.holds_record, differentiated))
            return self._gradients_of_trees(result, differentiated)
        # lists or tuples among the arguments: some may be differentiated
        return self._gradients_in_structure(result, differentiated, item_types) \
            if item_types else result

    def _code_to_run(self, values, item_types=None):
        """The generated function to call with the arguments ``values``: scalar code
        called with arrays, or lists of them, switches to array code.  An np.matrix
        is refused."""
        if _MATRIX in map(type, values):
            raise DerivoError(
                "{}: cannot differentiate with an np.matrix argument: its * is a matrix "
                "product, which derivo's rules for * do not follow; pass np.asarray(m) and "
                "write @ for the products".format(self.__wrapped__.__qualname__))
        item_types = item_types or {}
        if self._scalar_only and any(_holds_array(v, item_types.get(id(v))) for v in values):
            return self._for_arrays()
        return self._function

    def _gradients(self, result):
        """The gradients in what the generated code returned, one per
        differentiated argument."""
        grads = result[1] if self.kind == "value_and_grad" else \
            result[0] if self._has_aux else result
        return (grads,) if len(self.wrt) == 1 and not self._tuple_wrt else grads

    def _with_gradients(self, result, grads):
        """``result`` with the gradients ``grads`` (one per differentiated argument)."""
        grads = grads[0] if len(self.wrt) == 1 and not self._tuple_wrt else tuple(grads)
        if self.kind == "value_and_grad":
            return result[0], grads
        return (grads, result[1]) if self._has_aux else grads

    def _gradients_in_structure(self, result, values, item_types):
        """``result`` with the gradient of each list or tuple in ``values`` (the
        differentiated arguments) in its structure (see :func:`_in_structure`)."""
        grads = self._gradients(result)
        if all(not isinstance(value, (list, tuple)) or
               _kept_as_is(gradient, value, item_types[id(value)])
               for gradient, value in zip(grads, values)):
            return result  # the common case, lists of numbers with lists of adjoints
        return self._with_gradients(result, [
            gradient if not isinstance(value, (list, tuple)) else
            _in_structure(gradient, value, item_types[id(value)])
            for gradient, value in zip(grads, values)])

    def _gradients_of_trees(self, result, values):
        """``result`` with the gradient of each of ``values`` (the differentiated
        arguments) in its structure and types (see derivo.trees)."""
        return self._with_gradients(result, [
            trees.in_structure(gradient, value) if _is_tree(value) else
            _in_structure(gradient, value) if isinstance(value, (list, tuple)) else
            _of_dtype(gradient, value)
            for gradient, value in zip(self._gradients(result), values)])

    def _gradients_in_precision(self, result, values):
        """``result`` with the gradient of each float32 (or float16) array or NumPy
        scalar in ``values`` (the differentiated arguments) of its dtype, as JAX
        gives it: the generated code computes in float64 where NumPy promotes."""
        return self._with_gradients(result, list(map(_of_dtype, self._gradients(result), values)))

    def _for_arrays(self):
        """The array code of the function as it is now (see _bring_up_to_date)."""
        self._bring_up_to_date()
        if not self._scalar_only:
            return self._function
        with cache.lock():
            generated = self._array_generated
            if generated is None or not generated.live.matches(self._fixed) or \
                    not generated.live.refresh(generated.function.__globals__,
                                               generated.namespace):
                generated = self._array_generated = _generate(
                    self.__wrapped__, self.kind, self.wrt, self._tuple_wrt, True, self._loops,
                    self._has_aux, self._pullback, self._fixed)
                generated.live.refresh(generated.function.__globals__, generated.namespace)
                generated.function.derivo_array_code = self._for_arrays
            return generated.function

    def _differentiated_again(self, arrays=False):
        """The code a second derivative differentiates (array code with
        ``arrays``): forward mode differentiates one function's stack, so there
        the VJPs of called functions run them again rather than hand a stack
        from a forward half to a backward half (see transform.Build)."""
        code = self._for_arrays() if arrays else _current_code(self)
        generated = self._array_generated if arrays and self._scalar_only else self._generated
        if not generated.build.splits_any():
            return code
        with cache.lock():
            made = self._rerunning.get(arrays)
            if made is None or not made.live.matches(self._fixed) or \
                    not made.live.refresh(made.function.__globals__, made.namespace):
                made = self._rerunning[arrays] = _generate(
                    self.__wrapped__, self.kind, self.wrt, self._tuple_wrt,
                    arrays or not self._scalar_only, self._loops, self._has_aux,
                    self._pullback, self._fixed, keeps_residuals=False)
                made.live.refresh(made.function.__globals__, made.namespace)
                made.function.derivo_made_by = self  # (a refusal in it is said of self's)
            return made.function

    def __repr__(self):
        # how it was made: derivo.grad(besselj, wrt='z'), derivo.tangent(f, wrt=('x', 'y'))
        wrt = self.wrt if self._tuple_wrt else self.wrt[0]
        return "derivo.{}({}, wrt={!r})".format(
            _MADE_BY[self.kind], self.__wrapped__.__qualname__, wrt)

    def _repr_html_(self):
        return display.html_of(self.__doc__, self.source)

    def _repr_markdown_(self):
        return display.markdown(self.__doc__, self.source)

    def __reduce__(self):
        # Copied or unpickled, a derivative is made again from what it was made of
        # (a cache hit when this process made it already).
        return Derivative, (self.__wrapped__, self.kind, self.wrt, self._tuple_wrt, self._loops,
                            self._has_aux, self._pullback)

    def __getattr__(self, name):
        # A bound method pickles as getattr(its __self__, its __name__): this is how
        # an unpickled derivative finds its entry again.
        if name == self.__dict__.get("__name__"):
            return self.call
        raise AttributeError(name)

    def module_source(self, data=None):
        """The text :meth:`save` writes: imports, the user functions the generated
        code calls, and the generated functions; large arrays go into ``data``
        when it is a dict (see :func:`codegen.module_text`)."""
        return _module_text([self], data)

    def _module_parts(self):
        """What this derivative's module holds, as :class:`save.ModuleParts`."""
        self._bring_up_to_date()
        user_sources = dict(self._generated.user_sources)
        namespace = {k: v for k, v in self._generated.namespace.items() if k not in user_sources}
        for name, value in self._generated.namespace.items():
            if isinstance(value, Derivative):
                # a derivative the code calls (dg = derivo.grad(g)): its generated code,
                # under the name the code calls it by
                called = value.__self__ if isinstance(value, types.MethodType) else value
                user_sources[name] = "{}\n\n{} = {}\n".format(
                    called.source.rstrip(), name, called.derivo_function.__name__)
                namespace.update(called._generated.namespace)
                namespace.pop(name, None)
        for name in user_sources:
            function = self._generated.namespace.get(name)
            if inspect.isfunction(function):  # the globals its body reads (mm in mm.sin(t))
                for ident in function.__code__.co_names:
                    value = function.__globals__.get(ident, MISSING)
                    if value is MISSING or ident in user_sources:
                        continue
                    if namespace.setdefault(ident, value) is not value:
                        raise DerivoError(
                            "cannot save the derivative as a module: {} reads {!r}, which the "
                            "module's other code uses for something else".format(name, ident))
        scalar_guarded = self._scalar_only and _parameters(self._function)
        parameters_guard, held = specialise.saved_guard(self._generated.live,
                                                        self._function.__name__)
        namespace.update(held)
        guard = (self._saved_scalar_guard() if scalar_guarded else "") + parameters_guard
        if self._generated.backend == "numba":  # the user functions are compiled too
            body, namespace = numba_backend.saved_module(
                _joined(user_sources, self.source), namespace, self._function.__name__, guard)
            return save.ModuleParts(self.__doc__, {}, namespace, body)
        source = self.source if not guard else codegen.with_prologue(
            self.source, self._function.__name__, guard)
        if self._record_gradients and self.kind in ("grad", "value_and_grad"):
            source = self._structured_source(source, namespace)
        return save.ModuleParts(self.__doc__, user_sources, namespace, source)

    def _structured_source(self, source, namespace):
        """``source`` with its function renamed ``<name>_adjoints`` and called by a
        function of the old name that gives each gradient its argument's structure
        and types, as this derivative does (see :func:`derivo.trees.structured`)."""
        name = self._function.__name__
        raw = name + "_adjoints"
        tree = ast.parse(source)
        definition = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
        params = ast.unparse(definition.args)
        call = ", ".join([a.arg for a in definition.args.args] +
                         ["{0}={0}".format(a.arg) for a in definition.args.kwonlyargs])
        grads = "result[1]" if self.kind == "value_and_grad" else \
            "result[0]" if self._has_aux else "result"
        if len(self.wrt) == 1 and not self._tuple_wrt:
            shaped = "structured({}, {})".format(grads, self.wrt[0])
        else:
            shaped = "tuple(structured(g, v) for g, v in zip({}, ({},)))".format(
                grads, ", ".join(self.wrt))
        result = "result[0], {}".format(shaped) if self.kind == "value_and_grad" else \
            "{}, result[1]".format(shaped) if self._has_aux else shaped
        namespace["structured"] = trees.structured
        renamed = source.replace("def {}(".format(name), "def {}(".format(raw), 1)
        return "{}\n\ndef {}({}):\n    result = {}({})\n    return {}\n".format(
            renamed.rstrip() + "\n", name, params, raw, call, result)

    def _saved_scalar_guard(self):
        """The check a saved module of scalar code runs first: the entry in this
        process switches to array code for an array argument, which a saved
        module cannot generate, so it refuses one (scalar code run on arrays
        would not sum what broadcasting spread)."""
        params = [p.name for p in _parameters(self._function)]
        return ("if any(getattr(arg, 'ndim', 0) for arg in ({}{})):\n"
                "    raise TypeError({!r})\n".format(
                    ", ".join(params), "," if len(params) == 1 else "",
                    "{} takes numbers, not arrays: it was generated from NumPy-free "
                    "code".format(self._function.__name__)))

    def save(self, path, overwrite=False):
        """Write the derivative as a standalone module at ``path`` and return ``path``.
        It refuses to replace a source file the derivative was made from, and a file
        derivo did not write unless ``overwrite=True`` (see :mod:`derivo.save`)."""
        return save_module(path, self, overwrite=overwrite)

    def _source_files(self):
        """The files of the function, of the user functions its code calls and of
        the modules it reads."""
        values = [self.__wrapped__, *self._generated.namespace.values()]
        files = {getattr(getattr(v, "__code__", None), "co_filename", None) for v in values}
        files |= {getattr(v, "__file__", None) for v in values if isinstance(v, types.ModuleType)}
        return sorted(f for f in files - {None} if os.path.isfile(f))


def _deeply(analysis, func):
    """``analysis(func)``, recursing as deep as a transformation may (an expression
    Python compiles may nest 200 deep), and refused where deeper."""
    with S.deep_recursion():
        try:
            return analysis(func)
        except RecursionError:
            raise too_deep(func) from None


def save_module(path: Union[str, "os.PathLike[str]"], *derivatives: Callable[..., Any],
                overwrite: bool = False) -> Union[str, "os.PathLike[str]"]:
    """Write ``derivatives`` as one standalone module at ``path``, and return ``path``;
    ``df.save(path)`` is ``save_module(path, df)``.  Each generated function keeps its
    name (``f_grad``), and the helpers and imports they share are written once::

        derivo.save_module("generated/model_grads.py", derivo.grad(loss), derivo.grad(energy))

    It refuses to replace a source file a derivative was made from, and a file derivo
    did not write unless ``overwrite=True`` (see :mod:`derivo.save`)."""
    made = [_derivative_object(d) for d in derivatives]
    if not made:
        raise DerivoError("save_module needs at least one derivative to write")
    data = {}
    text = _module_text(made, data)
    files = sorted({f for d in made for f in d._source_files()})
    return save.write_module(text, path, files, overwrite, data)


def _derivative_object(derivative):
    """The :class:`Derivative` behind what derivo.grad & co. returned."""
    owner = getattr(getattr(derivative, "save", None), "__self__", None)
    if not isinstance(owner, Derivative):
        raise DerivoError("save_module takes derivatives (what derivo.grad & co. return), "
                          "got {!r}".format(derivative))
    return owner


def _module_text(derivatives, data):
    """The module of ``derivatives`` (see :meth:`Derivative.module_source`)."""
    files = sorted({codegen.file_label(d.__wrapped__.__code__.co_filename) for d in derivatives})
    header = "{} Generated by derivo {} from {}; do not edit.".format(
        " ".join(d.__doc__ for d in derivatives), __version__, ", ".join(files))
    parts = save.merged([d._module_parts() for d in derivatives])
    try:
        return codegen.module_text(_joined(parts.user_sources, parts.source), parts.namespace,
                                   header, data)
    except DerivoError as error:
        where = error.construct and error.filename is None and \
            _first_use(derivatives, error.construct)
        if not where:
            raise
        raise DerivoError(error.message, *where, construct=error.construct) from None


def _first_use(derivatives, name):
    """(file, line, col) of the user's line whose generated code first reads
    ``name``, in the code of ``derivatives``; else (a value a parameter held,
    which the saved module's guard reads) the ``def`` of the first one's function."""
    for derivative in derivatives:
        tree = ast.parse(derivative.source)
        lines = sorted(node.lineno for node in ast.walk(tree)
                       if isinstance(node, ast.Name) and node.id == name)
        if lines:
            return user_line(derivative.derivo_function.__code__.co_filename, lines[0])
    code = derivatives[0].__wrapped__.__code__
    return code.co_filename, code.co_firstlineno, 0


def _joined(user_sources, source):
    """The user functions of ``user_sources`` (name -> source), then ``source``."""
    user = "\n\n".join(text.rstrip() + "\n" for _, text in sorted(user_sources.items()))
    return (user + "\n\n" + source) if user else source


def entry_guard(function, checked, arrays, names=None, numbers=()):
    """The statement a :class:`Derivative`'s entry runs before the generated code
    ``function``: a call whose arguments are not of the types the code was
    generated for goes to ``derivo_self._call_checked(args, kwargs)``.

    A differentiated argument (a name in ``checked``) must be a float or an int,
    or in array code a real array; another argument of array code must not be
    an np.matrix (the checked call refuses it); an argument of scalar code must
    not be an array, nor a list or a tuple unless its code reads it only as a
    number (a name in ``numbers``): the checked call switches to array code for
    an array or a list holding one.  ``names`` renames the names the guard reads
    (see :func:`_entry_names`).  "" when there is nothing to check.
    """
    names = dict(zip(_ENTRY_NAMES, _ENTRY_NAMES), **(names or {}))
    # x.__class__ rather than type(x): one attribute read costs less than a call,
    # and this runs on every call
    # (an int, an integer array or a list takes the checked call, which refuses ints)
    real = "{arg}.__class__ is {derivo_float}"
    # (a float32 array takes the checked call, which gives its gradient its dtype)
    real_array = ("({arg}.__class__ is {derivo_ndarray} and {arg}.dtype is {derivo_float64} "
                  "or " + real + ")")
    not_array = "{arg}.__class__ is not {derivo_ndarray}"
    # a list that may hold arrays takes the checked call too (to array code), and
    # an np.matrix, which it refuses
    not_container = "{arg}.__class__ not in {derivo_containers}"
    not_matrix = "{arg}.__class__ is not {derivo_matrix}"
    params = list(inspect.signature(function).parameters.values())
    # parse makes positional-only parameters ordinary ones, and *args is refused
    assert all(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in params)
    positional, keywords, tests = [], [], []
    for param in params:
        (keywords if param.kind == param.KEYWORD_ONLY else positional).append(param.name)
        if param.name in checked:
            test = real_array if arrays else real
        elif arrays:
            test = not_matrix
        else:
            test = not_array if param.name in numbers else not_container
        tests.append(test.format(arg=param.name, **names))
    if not tests:
        return ""
    fallback = _method_call(names["derivo_self"], "_call_checked", positional, keywords)
    return "if not ({}):\n    return {}\n".format(" and ".join(tests), fallback)


def _defaults_anew(entry, defaults, args, kwargs):
    """``args`` and ``kwargs``, which ``entry`` filled in with ``defaults`` (its
    ``__defaults__`` and ``__kwdefaults__`` then), with its defaults now instead:
    the function's, set anew (``f.__defaults__ = ...``)."""
    positional, keywords = defaults
    if positional and entry.__defaults__ and len(entry.__defaults__) == len(positional):
        args = list(args)
        first = len(args) - len(positional)
        for index, (old, new) in enumerate(zip(positional, entry.__defaults__)):
            if first + index >= 0 and args[first + index] is old:
                args[first + index] = new
    if keywords and entry.__kwdefaults__:
        kwargs = {name: entry.__kwdefaults__.get(name, value)
                  if name in keywords and value is keywords[name] else value
                  for name, value in kwargs.items()}
    return tuple(args), kwargs


def _method_call(derivative, method, positional, keywords):
    """The text of the call ``derivative.method(args, kwargs)`` of the arguments
    named ``positional`` and ``keywords``."""
    return "{}.{}(({}{}), {{{}}})".format(
        derivative, method, ", ".join(positional), "," if len(positional) == 1 else "",
        ", ".join("{0!r}: {0}".format(name) for name in keywords))


def _entry_names(function):
    """A name for each of :data:`_ENTRY_NAMES` that ``function``'s code does not use,
    and under :data:`_LIVE` a prefix no name it uses starts with."""
    taken = codegen.names_used(function.__code__)
    names = {}
    for name in _ENTRY_NAMES:
        names[name] = name
        while names[name] in taken:
            names[name] += "_"
    names[_LIVE] = _LIVE
    while any(name.startswith(names[_LIVE]) for name in taken):
        names[_LIVE] += "_"
    return names


def _live_check(function, check, names):
    """The statements an entry runs first: a call that finds the expression ``check``
    false, or failing (a name deleted), goes to ``derivo_self._call_stale(args,
    kwargs)`` (see cache.LiveReads.check)."""
    code = function.__code__
    positional = code.co_varnames[:code.co_argcount]
    keywords = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
    stale = _method_call(names["derivo_self"], "_call_stale", positional, keywords)
    return ("try:\n    {fresh} = {check}\nexcept Exception:\n    {fresh} = False\n"
            "if not {fresh}:\n    return {stale}\n").format(
                fresh=names[_LIVE] + "_fresh", check=check, stale=stale)


def _entry(generated, scope=None):
    """A new copy of the generated function behind its guard, with the Derivative
    to bind it to as first parameter (see :class:`Derivative`), defined in
    ``scope`` (a new dict by default)."""
    function = generated.function
    scope = {} if scope is None else scope
    scope.update(function.__globals__)
    scope.update((generated.entry_names[name], value) for name, value in _GUARD_GLOBALS.items())
    scope.update(generated.entry_globals)
    scope.update(generated.live.entry_values(generated.entry_names[_LIVE]))
    exec(generated.entry_code, scope)
    entry = scope[function.__name__]
    entry.__defaults__ = function.__defaults__
    entry.__kwdefaults__ = function.__kwdefaults__
    return entry


def _parameters(func):
    try:  # the parameters of the code derivo differentiates, a wrapper's own
        signature = inspect.signature(func, follow_wrapped=False)
    except (TypeError, ValueError):
        return []
    return [p for p in signature.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def resolve_wrt(func, wrt):
    """Parameter names for ``wrt`` (a position, a name, or a tuple of them)."""
    func = _as_python(func)
    _refuse_opaque(func)
    code = getattr(func, "__code__", None)
    if code is not None and code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        parsed = parse(func)  # a wrapper(*args) too: derivo differentiates what runs
        check_supported(parsed, parsed.tree)
    params = _parameters(func)
    names = [p.name for p in params]
    positional = [p.name for p in params if p.kind != p.KEYWORD_ONLY]
    label = getattr(func, "__qualname__", repr(func))
    resolved = []
    for item in wrt if isinstance(wrt, (tuple, list)) else (wrt,):
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise DerivoError("wrt must be a parameter position or name (or a tuple of "
                              "them), got {!r}".format(item))
        if isinstance(item, int):
            if not -len(positional) <= item < len(positional):
                raise DerivoError("wrt={} is out of range: {} has {} positional parameter(s) "
                                  "({})".format(item, label, len(positional),
                                                ", ".join(positional)))
            item = positional[item]
        elif item not in names:
            raise DerivoError("wrt={!r} names no parameter of {} (its parameters: {})"
                              .format(item, label, ", ".join(names)))
        resolved.append(item)
    return tuple(resolved)


def _generate(func, kind, names, tuple_wrt, arrays, loops=DEFAULT_LOOPS,
              has_aux=False, pullback=False, fixed=None, keeps_residuals=True):
    """Transform and compile ``func`` (or find it in the cache); ``loops`` is
    (strategy, checkpoints, schedule, backend); for ``has_aux`` and ``pullback``
    see :func:`derivo.reverse.reverse`; ``fixed``: the values of the parameters
    that say what it calls (see specialise); ``keeps_residuals``: see
    transform.Build."""
    if loops[3] == "numba" and numba_backend.falls_back(func.__qualname__, arrays):
        loops = (*loops[:3], "python")
    fixed = fixed or {}
    options = (kind, names, tuple_wrt, arrays, loops, has_aux, pullback,
               specialise.key(fixed), keeps_residuals)

    def valid(generated):
        return generated.live.unchanged() and generated.live.matches(fixed)

    def build():
        shared = cache.sibling(func, *options)
        if shared is not None and loops[3] == "python":  # (dispatchers are not moved)
            moved = _moved(*shared, func)
            if valid(moved):
                return moved
        generated = transform()
        cache.keep_sibling(func, generated, *options)
        return generated

    @S.deep_recursion()
    def transform():
        try:
            return transformed()
        except RecursionError:
            raise too_deep(func) from None

    # (the collector paused for printing, reading and compiling the source too,
    # not only for Build.add: each collection walks every tree node alive)
    @collection_paused()
    def transformed():
        generation = rules.generation
        with recording_reads() as reads:
            # numba types a stack per function: a VJP handing one on runs again
            module = Build(arrays, *loops[:3],
                           keeps_residuals=keeps_residuals and loops[3] != "numba")
            name = module.add(func, list(names), kind, tuple_wrt, has_aux=has_aux,
                              pullback=pullback, fixed=fixed)
            made_by = _made_by(func)
            if made_by is not None:
                # code derivo generated reads what its Derivative refreshes: that one
                # is brought up to date before this one's reads are checked
                record_reads([({"derivative": made_by.call}, "derivative", (), made_by.call)])
            elif isinstance(func, types.FunctionType):
                record_function_parts({"function": func}, "function", (), func)
            if loops[3] == "numba":
                numba_backend.nopython(module.functions, module.namespace)
            source = module.source()
            numbers = {p.name for p in _parameters(func)} - parameters_read_whole(func)
        live = cache.LiveReads(reads.values(), generation)
        namespace = codegen.compile_module(source, module.namespace, name)
        compiled, entry_source = namespace[name], source
        GENERATED_ORIGINS[compiled.__code__.co_filename] = module.origins
        if loops[3] == "numba":
            compiled, entry_source = numba_backend.compiled(
                namespace, [f.name for f in module.functions], name)
        compiled.__defaults__ = func.__defaults__
        compiled.__kwdefaults__ = func.__kwdefaults__
        checked = names if kind in _TYPE_CHECKED_KINDS else ()
        entry_names = _entry_names(compiled)
        check, holders = live.check(entry_names[_LIVE])
        guard = _live_check(compiled, check, entry_names) + \
            entry_guard(compiled, set(checked), arrays, entry_names, numbers)
        entry_code, entry_globals = codegen.compile_with_prologue(
            compiled, entry_source, guard, entry_names["derivo_self"])
        entry_globals.update(holders)
        return Generated(compiled, source, module.namespace, module.called_sources(), module,
                         entry_code, entry_names, entry_globals, live, loops[3])

    key = cache.key_of(func, *options)
    return cache.lookup(key, build, valid)


def _moved(made_from, generated, func):
    """What ``generated`` (the transformation of ``made_from``) is for ``func``, a
    closure of the same code with cells of its own: the generated functions again,
    in a namespace of their own, reading ``func``'s cells (a closure made
    again in a loop, ``derivo.grad(lambda w: loss(w, X))``, is not transformed
    again)."""
    places = dict(zip(map(id, made_from.__closure__ or ()), func.__closure__ or ()))
    shared = generated.function.__globals__
    scope = dict(shared)
    for ident, value in shared.items():  # each generated function, in the new namespace
        if isinstance(value, types.FunctionType) and value.__globals__ is shared:
            scope[ident] = types.FunctionType(value.__code__, scope, value.__name__,
                                              value.__defaults__, value.__closure__)
            scope[ident].__kwdefaults__ = value.__kwdefaults__
    compiled = scope[generated.function.__name__]
    compiled.__defaults__ = func.__defaults__
    compiled.__kwdefaults__ = func.__kwdefaults__
    entry_globals = {ident: places.get(id(value), value)
                     for ident, value in generated.entry_globals.items()}
    return generated._replace(function=compiled, namespace=dict(generated.namespace),
                              entry_globals=entry_globals, live=generated.live.moved(places))


_PRIMITIVE_FUNCTIONS = {}


def _as_python(func):
    """``func`` itself, or for a primitive with a rule (``np.tanh``, ``math.sin``)
    a Python function of the rule's parameters that calls it, written once per
    primitive: derivo differentiates that through the rule."""
    if hasattr(func, "__code__") or not rules.is_primitive(func) or \
            rules.is_nondifferentiable(func) or func not in rules.RULES:
        return func
    if func not in _PRIMITIVE_FUNCTIONS:
        rule = rules.RULES[func][min(rules.RULES[func])]
        params = ", ".join(rule.params[:rule.required] or rule.params)
        label = rules.label_of(func)
        called = label if label.split(".")[0] in ("np", "math") else "primitive"
        name = getattr(func, "__name__", "primitive")
        source = "def {}({}):\n    return {}({})\n".format(name, params, called, params)
        filename = "<derivo primitive {}>".format(label)
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        namespace = {"np": np, "math": math, "primitive": func}
        exec(compile(source, filename, "exec"), namespace)
        _PRIMITIVE_FUNCTIONS[func] = namespace[name]
    return _PRIMITIVE_FUNCTIONS[func]


def _derivative(func, wrt, kind, loops=DEFAULT_LOOPS, has_aux=False,
                pullback=False):
    """The derivative of ``func``: the one made before for the same function and
    options when there is one (each call checks it is still the function's)."""
    func = _as_python(func)
    user = _differentiated_by(func)
    if isinstance(func, Derivative):
        if func.kind == "value_and_grad" and kind != "jvp":
            raise DerivoError(
                "cannot differentiate {}, a value_and_grad: it returns (value, gradient), a "
                "pair; differentiate derivo.grad({}) for the second derivative, or "
                "derivo.value_and_grad(derivo.grad({}))".format(
                    func.__name__, func.__wrapped__.__name__, func.__wrapped__.__name__))
        # derivo reads its generated code like any other function
        func = getattr(func, "__self__", func)._differentiated_again()
    key = (kind, func, wrt, _types(wrt), loops, has_aux, pullback)
    made = cache.derivative(key)
    if made is None:
        try:
            made = cache.remember(key, _new_derivative(func, wrt, kind, loops, has_aux, pullback))
        except DerivoError as error:
            if not str(error.filename).startswith(GENERATED_PREFIX):
                raise
            if user is not None:
                raise _refused_again(error, user) from None
            first = _first_differentiated(func)
            if first is not None:  # (a derivative of a derivative of first: the message says so)
                raise _at_definition(error.message, first, error) from None
            located = user_line(error.filename, error.lineno) if error.lineno else None
            if located is None:
                raise
            # (code derivo generated that no Derivative claims: its lines say whose it is)
            raise type(error)("cannot differentiate this function a second time: {}".format(
                _refused_line(error)), *located, error.construct) from None
    return made


def _made_by(func):
    """The Derivative whose generated code ``func`` is, or None."""
    array_code = getattr(func, "derivo_array_code", None)
    return getattr(array_code, "__self__", None) or getattr(func, "derivo_made_by", None)


def _derivative_of(func):
    """What ``func``, a Derivative or its generated code, is the derivative of; None
    for anything else."""
    derivative = func if isinstance(func, Derivative) else _made_by(func)
    return getattr(derivative, "__wrapped__", None)


def _is_derivative_code(func):
    return isinstance(func, Derivative) or is_generated(func)


def _differentiated_by(func):
    """The user's function that ``func``, a Derivative or its generated code, is the
    derivative of; None for anything else (and for a derivative of a derivative)."""
    user = _derivative_of(func)
    return None if user is None or _is_derivative_code(user) else user


def _first_differentiated(func):
    """The user's function at the bottom of the chain of derivatives ``func`` is the
    top of (f for ``derivo.grad(derivo.grad(f))``); None if there is none."""
    user = _derivative_of(func)
    while user is not None and _is_derivative_code(user):
        user = _derivative_of(user)
    return user


def _at_definition(message, user, error, line=None):
    """A refusal of the kind of ``error`` saying ``message``, located in ``user``'s
    file at ``line`` (its ``def`` by default), where that line's text starts."""
    code = getattr(user, "__code__", None)
    if code is None:
        return type(error)(message, None, None, None, error.construct)
    line = line or code.co_firstlineno
    text = linecache.getline(code.co_filename, line)
    return type(error)(message, code.co_filename, line, len(text) - len(text.lstrip()),
                       error.construct)


def _refused_again(error, user):
    """``error``, a refusal of the code derivo generated for the function ``user``,
    located at ``user`` and said of it."""
    code = getattr(user, "__code__", None)
    label = getattr(user, "__qualname__", repr(user))
    where = code.co_firstlineno if code else None
    if error.construct in MEMORY_REFUSALS:
        # (the inner message names derivo's temporaries: say it of the user's writes)
        write = _first_write_in_place(user)
        where = write.lineno if write is not None else where
        reason = ("the code derivo generated for its derivative writes into arrays in place "
                  "where it does{}, and derivo does not follow such writes through a second "
                  "derivative; differentiate a version of {} that makes new arrays instead "
                  "(y = np.where(..., v, y), y = y + e)".format(
                      "" if write is None else " (line {}: {})".format(
                          write.lineno, parse(user).source_line(write.lineno)), label))
    else:
        found = user_line(error.filename, error.lineno) if error.lineno else None
        if found is not None and code is not None and found[0] == code.co_filename:
            where = found[1]
        reason = "{}; differentiate a version of {} without this construct".format(
            _refused_line(error), label)
    return _at_definition("cannot differentiate {} a second time: {}".format(label, reason),
                          user, error, where)


def _refused_line(error):
    """What ``error``, a refusal of derivo's generated code, says of it."""
    return "derivo refuses line {} of the derivative it generated for it ({})".format(
        error.lineno, error.message)


def _first_write_in_place(func):
    """The first statement of ``func`` writing into an array in place
    (``y[i] = v``, ``y += e``), or None."""
    try:
        tree = parse(func).tree
    except DerivoError:
        return None
    return next((node for node in S.walk(tree) if isinstance(node, S.gast.AugAssign) or (
        isinstance(node, S.Assign) and any(isinstance(t, S.Subscript) for t in node.targets))),
        None)


def _current_code(derivative):
    """The generated code of ``derivative`` (a Derivative or its entry), brought up
    to date with the function's names first (see Derivative._bring_up_to_date)."""
    derivative = getattr(derivative, "__self__", derivative)
    derivative._bring_up_to_date()
    return derivative.derivo_function


def _refuse_opaque(func):
    """Refuse what derivo.hessian or derivo.jacobian returns: functools.wraps gave it
    the function's source to find, and its own code is derivo's."""
    if getattr(func, "derivo_opaque", False):
        raise DerivoError("derivo cannot differentiate {} (what derivo.hessian or "
                          "derivo.jacobian returns) yet; differentiate a derivo.grad of it, "
                          "or use derivo.hvp".format(func.__qualname__))


def _new_derivative(func, wrt, kind, loops, has_aux, pullback):
    _refuse_opaque(func)
    spread = spread_copies(func)
    if spread is not None:
        return _of_spread(func, wrt, kind, loops, has_aux, pullback, spread)
    bound = _bound_parts(func)
    if bound is not None:
        return _of_bound(func, bound, wrt, kind, loops, has_aux)
    if not callable(func) or not hasattr(func, "__code__"):
        parse(func)  # raises the error that explains what is missing
        raise DerivoError("derivo differentiates Python functions, got {!r}".format(func))
    names = resolve_wrt(func, wrt)
    if isinstance(wrt, (tuple, list)) and not names:
        raise DerivoError("wrt=() names no parameter: give at least one")
    return Derivative(func, kind, names, isinstance(wrt, (tuple, list)), loops, has_aux,
                      pullback).call


def _bound_parts(func):
    """(function, arguments, keywords) that ``func`` calls the Python function
    with first: a bound method of a user object (``model.loss``: the object), a
    ``functools.partial``, a user object's ``__call__``, a derivative of one of
    those (its generated code, bound alike); None for anything else."""
    if hasattr(func, "derivo_bound"):
        entry, args, keywords = func.derivo_bound
        if not hasattr(entry, "derivo_function"):  # transformed at its first call
            raise DerivoError("{} is transformed at its first call, for the functions it "
                              "is given: call it once before differentiating it".format(
                                  func.__wrapped__.__qualname__ if hasattr(
                                      func.__wrapped__, "__qualname__") else func.__wrapped__))
        return entry.derivo_function, args, keywords
    if isinstance(func, types.MethodType) and not isinstance(func.__self__, Derivative):
        inner = _bound_parts(func.__func__)
        if inner is None:
            return (func.__func__, (func.__self__,), {}) \
                if inspect.isfunction(func.__func__) else None
        return inner[0], (*inner[1], func.__self__), inner[2]
    if isinstance(func, functools.partial):
        inner = _bound_parts(func.func) or (func.func, (), {})
        if not inspect.isfunction(inner[0]):
            return None
        return inner[0], (*inner[1], *func.args), {**inner[2], **func.keywords}
    call = getattr(type(func), "__call__", None)
    if not inspect.isfunction(func) and inspect.isfunction(call):
        return _bound_parts(types.MethodType(call, func))
    return None


def _of_bound(func, bound, wrt, kind, loops, has_aux):
    """The derivative of ``func`` (see :func:`_bound_parts`): the derivative of the
    function it calls, with respect to the same parameters, given ``func``'s
    bound arguments after the derivative's own leading ones (a vjp's cotangent,
    a jvp's tangents)."""
    function, args, keywords = bound
    names = resolve_wrt(func, wrt)
    entry = Derivative(function, kind, names, isinstance(wrt, (tuple, list)), loops,
                       has_aux, bound=(args, keywords)).call
    lead = {"vjp": 1, "jvp": len(names)}.get(kind, 0)
    if not lead:
        derivative = functools.partial(entry, *args, **keywords)
    else:
        def derivative(*given, **more):
            return entry(*given[:lead], *args, *given[lead:], **keywords, **more)
    for attribute in ("source", "kind", "wrt", "save", "module_source", "__doc__", "__name__",
                      "_repr_html_", "_repr_markdown_"):
        setattr(derivative, attribute, getattr(entry, attribute))
    derivative.__wrapped__ = func
    derivative.derivo_bound = (entry, args, keywords)  # to nest it
    return derivative


#: {function taking *args or **kwargs: {(positional count, keywords): callees.spread's copy}}
_SPREAD_COPIES = weakref.WeakKeyDictionary()


def _spread_copy(func, npositional, keywords):
    """callees.spread of ``func`` for a call of ``npositional`` positional arguments
    and the ``keywords`` (sorted), made once for each."""
    copies = _SPREAD_COPIES.setdefault(func, {})
    if (npositional, keywords) not in copies:
        copies[npositional, keywords] = callees.spread(func, npositional, keywords)
    return copies[npositional, keywords]


def spread_copies(func):
    """For ``func`` when the code it runs takes ``*args`` or ``**kwargs`` (a
    wrapper, a class-based decorator's ``__call__``): the function making its copy
    for a call's arguments (see :func:`spread_calls`); None for any other."""
    if hasattr(func, "derivo_spread"):
        return func.derivo_spread
    if inspect.isfunction(func):
        return functools.partial(_spread_copy, func) if \
            callees.takes_spread_arguments(func) and not is_generated(func) else None
    bound = _bound_parts(func)
    if bound is not None and callees.takes_spread_arguments(bound[0]):
        return _bound_spread(bound, func)
    return None


def _bound_spread(bound, func):
    """For ``func``, bound to a function taking ``*args`` or ``**kwargs`` (see
    :func:`_bound_parts`): (its copy for a call's arguments, bound as it is, and
    {keyword: the copy's parameter}), as :func:`spread_calls` makes them.  The
    copy has ``func``'s name, which functools.update_wrapper gives an object."""
    function, args, keywords = bound
    name = getattr(func, "__name__", None)
    name = name if isinstance(name, str) and name.isidentifier() else None

    def spread(npositional, given):
        copy, renamed = _spread_copy(function, npositional + len(args),
                                     tuple(sorted({*given, *keywords})))
        if name is not None:
            copy = callees.copy_function(copy, name)
            copy.__qualname__ = getattr(func, "__qualname__", name)
        return functools.partial(copy, *args, **{renamed.get(k, k): v
                                                 for k, v in keywords.items()}), renamed
    return spread


def _spread_wrt(func, wrt, renamed):
    """``wrt`` for the copy of ``func`` a call made (see :func:`spread_calls`): a name
    or a position of the signature ``func`` shows (a functools.wraps wrapper shows
    the wrapped function's) is the keyword parameter of the copy where the call
    gives it as a keyword, else its position."""
    try:
        shown = [p.name for p in inspect.signature(func).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        shown = []

    def each(w):
        if isinstance(w, int) and not isinstance(w, bool) and -len(shown) <= w < len(shown):
            return renamed.get(shown[w], w)
        if not isinstance(w, str):
            return w
        return renamed[w] if w in renamed else shown.index(w) if w in shown else w
    return type(wrt)(map(each, wrt)) if isinstance(wrt, (tuple, list)) else each(wrt)


def spread_calls(func, make, lead=0, spread=None):
    """For ``func``, which takes ``*args`` or ``**kwargs``: a function that, at each
    call, calls ``make(copy, renamed)`` for the copy of ``func`` taking that call's
    arguments by name (see callees.spread; ``renamed``: {keyword: the copy's
    parameter}), made once per count of positional
    arguments (after ``lead`` leading ones, a vjp's cotangent or a jvp's
    tangents) and set of keywords.  Its ``last`` is the one it called last, whose
    ``source`` and ``__name__`` it takes.  ``func`` may be such a function itself (a derivative
    of a derivative): then the copy is what it calls for those arguments; or a
    callable whose copies ``spread(npositional, keywords)`` makes (see :func:`spread_copies`)."""
    made = {}  # (positional count, keywords) -> (make(copy, renamed), keywords renamed)
    spread = spread or spread_copies(func)

    def made_for(npositional, keywords):
        shape = (npositional, tuple(sorted(keywords)))
        if shape not in made:
            copy, renamed = spread(*shape)
            made[shape] = make(copy, renamed), renamed
        return made[shape]

    @functools.wraps(func)
    def call(*given, **keywords):
        function, renamed = made_for(len(given) - lead, keywords)
        call.last = function
        if hasattr(function, "source"):  # a derivative: named and shown as its code is
            call.source, call.__name__ = function.source, function.__name__
        return function(*given, **{renamed.get(k, k): v for k, v in keywords.items()})

    call.derivo_spread = made_for
    call.last = None
    call.source = "# derivo transforms {} at each call, for the arguments it is " \
        "given\n".format(func.__qualname__)
    return call


def _of_spread(func, wrt, kind, loops, has_aux, pullback, spread=None):
    """The derivative of ``func``, which takes ``*args`` or ``**kwargs``: the
    derivative of its copy for each call's arguments (see :func:`spread_calls`);
    ``wrt`` counts the positional arguments as the call gives them."""
    several = isinstance(wrt, (tuple, list))

    def make(copy, renamed):
        wrt_here = _spread_wrt(func, wrt, renamed)
        if isinstance(getattr(copy, "__self__", None), Derivative):  # a derivative's entry
            return _derivative(copy, wrt_here, kind, loops, has_aux, pullback)
        if isinstance(copy, functools.partial):  # the copy of a bound function
            return _of_bound(copy, _bound_parts(copy), wrt_here, kind, loops, has_aux)
        return Derivative(copy, kind, resolve_wrt(copy, wrt_here), several, loops, has_aux,
                          pullback).call

    derivative = spread_calls(func, make, {"vjp": 1, "jvp": len(wrt) if several else 1}.get(
        kind, 0), spread)

    def save(path=None):
        if derivative.last is None:
            raise DerivoError("{} takes *args or **kwargs: derivo transforms it for the "
                              "arguments of each call; call the derivative once before "
                              "saving it".format(func.__qualname__))
        return derivative.last.save(path)

    derivative.save = save
    derivative.kind, derivative.wrt = kind, wrt
    derivative.__doc__ = "{} of {} with respect to {}.".format(
        KIND_LABELS[kind], func.__qualname__, wrt)
    return derivative


LOOP_STRATEGIES = ("stack", "checkpoint", "reversible")


def _loop_options(loops, checkpoints, schedule, backend="python"):
    if loops not in LOOP_STRATEGIES:
        raise DerivoError("loops={!r}: choose one of {}".format(
            loops, ", ".join(map(repr, LOOP_STRATEGIES))))
    if checkpoints is not None and (isinstance(checkpoints, bool) or not isinstance(
            checkpoints, int) or checkpoints < 1):
        raise DerivoError("checkpoints={!r}: give the number of loop states to keep, a "
                          "positive integer".format(checkpoints))
    if schedule not in SCHEDULES:
        raise DerivoError("schedule={!r}: choose one of {}".format(
            schedule, ", ".join(map(repr, SCHEDULES))))
    return loops, checkpoints, schedule, numba_backend.check_backend(backend, loops)


def _transform(kind, func, wrt, loops="stack", checkpoints=None, schedule="revolve",
               has_aux=False, backend="python"):
    # asked again for the same function and options, the same derivative at once
    key = (kind, func, wrt, _types(wrt), loops, checkpoints, type(checkpoints), schedule,
           has_aux, backend)
    made = cache.derivative(key)
    if made is not None:
        return made
    options = _loop_options(loops, checkpoints, schedule, backend)
    if func is None:
        return lambda f: _refused_here(_derivative, f, wrt, kind, options, has_aux)
    made = _refused_here(_derivative, func, wrt, kind, options, has_aux)
    # a derivative of a derivative is looked up by its generated code (see _derivative)
    return made if isinstance(func, Derivative) else cache.remember(key, made)


def _refused_here(function, *args):
    """``function(*args)``; a refusal from inside the pipeline is raised again from
    here, so the user's traceback ends at the API call, not in derivo's stages."""
    try:
        return function(*args)
    except DerivoError as exc:
        raise exc.with_traceback(None) from None


def _types(wrt):
    """What tells apart options that compare equal: wrt=1 from wrt=True (refused)."""
    return tuple(map(type, wrt)) if type(wrt) is tuple else type(wrt)


def grad(func: Optional[Function] = None, *, wrt: Wrt = 0, has_aux: bool = False,
         loops: str = "stack", checkpoints: Optional[int] = None,
         schedule: str = "revolve", backend: str = "python") -> Function:
    """The gradient of ``func`` with respect to ``wrt``::

        df = derivo.grad(f, wrt=(0, "y"))
        df(2.0, 5.0)          # (df/dx, df/dy) at (2, 5)
        df.source             # the generated code

    ``wrt`` is a parameter position or name, or a tuple of them (then the
    result is a tuple).  Works as ``grad(f)``, ``@grad`` and ``@grad(wrt=...)``.

    ``loops`` chooses how the reverse sweep gets back the values a loop
    overwrote: ``"stack"`` saves them as the loop runs (memory grows with the
    trip count); ``"reversible"`` undoes each update instead (``s *= c``
    becomes ``s /= c``) where that gives s back to the bit, which each trip
    checks, and saves s where it does not: constant memory while the undos are
    exact; refused with the offending line when an update cannot be undone;
    ``"checkpoint"``
    keeps at most ``checkpoints`` states of each outermost loop and recomputes
    the others (see :mod:`derivo.checkpoints`): the optimal binomial schedule
    for ``for`` loops (``schedule="halving"`` for recursive halving,
    ``schedule="segments"`` for the binomial schedule over segments of a few
    trips: a few percent more recomputation, several times faster in
    CPython), an online one for ``while`` loops.  ``for x in
    derivo.checkpointed(...)`` checkpoints one loop whatever ``loops`` says.

    ``has_aux=True``: ``func`` returns a pair ``(loss, aux)``; the gradient is
    the loss's, returned as ``(gradient, aux)`` with ``aux`` untouched.

    ``backend="numba"`` compiles the generated code with ``numba.njit`` (an
    optional extra: ``pip install 'derivo[numba]'``), once per argument
    signature: for scalar and loop code; a function that uses NumPy keeps
    NumPy's kernels and runs as Python (see :mod:`derivo.numba_backend`).
    """
    return _transform("grad", func, wrt, loops, checkpoints, schedule, has_aux, backend)


def value_and_grad(func: Optional[Function] = None, *, wrt: Wrt = 0, has_aux: bool = False,
                   loops: str = "stack", checkpoints: Optional[int] = None,
                   schedule: str = "revolve", backend: str = "python") -> Function:
    """Like :func:`grad`, returning ``(func(*args), gradient)``; with
    ``has_aux=True``, ``((loss, aux), gradient)``::

        value, gradient = derivo.value_and_grad(loss)(w, X, y)
    """
    return _transform("value_and_grad", func, wrt, loops, checkpoints, schedule, has_aux,
                      backend)


def vjp(func: Function, *args: Any, backend: str = "python",
        **kwargs: Any) -> Tuple[Any, Callable[[Any], tuple]]:
    """``(func(*args, **kwargs), vjp_fn)``::

        out, vjp_fn = derivo.vjp(np.tanh, x)
        (bx,) = vjp_fn(np.ones_like(out))

    ``vjp_fn(cotangent)`` returns one
    cotangent per positional argument: for a float or a float array, and for a
    list or a tuple of numbers and arrays (in its structure); ``None`` for the
    others (ints, bools, strings...).

    The value and ``vjp_fn`` come from one run of ``func``: its reverse sweep
    runs on the values that run kept (a random draw is the same).  A scalar
    result's ``vjp_fn`` scales the gradient of that run (the product is linear
    in the cotangent); another result's runs ``func`` again after its first call,
    and refuses when that run's result differs from the first.

    ``backend="numba"`` (see :func:`grad`; ``backend`` is not passed to
    ``func``): ``vjp_fn`` runs the compiled VJP, forward and reverse sweeps,
    for each cotangent.
    """
    loops = _loop_options("stack", None, "revolve", backend)
    differentiable = tuple(i for i, a in enumerate(args) if _differentiable_or_container(a))
    if not differentiable:
        out = func(*map(_copied, args), **kwargs)
        return out, lambda cotangent: tuple(None for _ in args)
    code = _code_for(func, [*args, *kwargs.values()])
    if isinstance(code, Derivative) or is_generated(code) or _bound_parts(code) is not None \
            or backend != "python":  # (compiled code is no generator to resume)
        return _vjp_by_running_again(code, func, differentiable, args, kwargs, loops)
    _refuse_opaque(code)
    if callees.takes_spread_arguments(code):  # its copy taking these arguments by name
        code, renamed = _spread_copy(code, len(args), tuple(sorted(kwargs)))
        kwargs = {renamed.get(k, k): v for k, v in kwargs.items()}
    derivative = _derivative(code, differentiable, "vjp", pullback=True).__self__
    _refuse_joined_sequences(derivative.call, code, args, differentiable)
    # its code runs directly, without the entry's checks
    derivative._specialise(args, kwargs, lead=0)
    derivative._bring_up_to_date()
    run = derivative._code_to_run([*args, *kwargs.values()])
    sweeps = [run(*args, **kwargs)]  # the generator whose primal sweep is done
    out = next(sweeps[0])
    label = getattr(func, "__qualname__", repr(func))
    scalar = not trees.is_container(out) and np.ndim(out) == 0  # (np.ndim of (s, [s, x]) fails)
    unit_gradients = []  # a scalar result's, for the cotangent 1.0

    def vjp_fn(cotangent):
        _check_cotangent(label, cotangent, out)
        if scalar and unit_gradients:
            return _cotangents_per_argument(_scaled(unit_gradients[0], cotangent), args,
                                            differentiable)
        if not sweeps:
            sweeps.append(run(*args, **kwargs))
            if not _same_value(next(sweeps[0]), out):
                raise DerivoError(
                    "vjp_fn of {}: running it again for this cotangent gave another result "
                    "(a random draw?); a result that is not a scalar gets one cotangent per "
                    "derivo.vjp: call derivo.vjp again".format(label))
        try:
            sweeps.pop().send(1.0 if scalar else cotangent)
        except StopIteration as stop:
            grads = stop.value
        if scalar:
            unit_gradients.append(grads)
            grads = _scaled(grads, cotangent)
        return _cotangents_per_argument(grads, args, differentiable)

    return out, vjp_fn


def _same_value(value, other):
    """Whether two results of a function are the same, bit for bit (NaN too)."""
    if isinstance(value, (list, tuple)):
        return type(other) is type(value) and len(other) == len(value) and \
            all(map(_same_value, value, other))
    if _is_tree(value):
        return type(other) is type(value) and trees.same_structure(other, value) and \
            all(map(_same_value, trees.leaves(value), trees.leaves(other)))
    return np.shape(value) == np.shape(other) and \
        bool(np.all((value == other) | (value != value) & (other != other)))


def _vjp_by_running_again(code, func, differentiable, args, kwargs, loops=DEFAULT_LOOPS):
    """vjp of code derivo generated, whose VJP is a tangent pass over it (see
    transform.Build.add_over_tangents), or compiled: ``vjp_fn`` runs it for each
    cotangent; generated code draws nothing at random."""
    out = func(*map(_copied, args), **kwargs)
    derivative = _derivative(code, differentiable, "vjp", loops)
    _refuse_joined_sequences(derivative, func, args, differentiable)
    label = getattr(func, "__qualname__", repr(func))

    def vjp_fn(cotangent):
        _check_cotangent(label, cotangent, out)
        return _cotangents_per_argument(derivative(cotangent, *args, **kwargs), args,
                                        differentiable)

    return out, vjp_fn


def _cotangents_per_argument(grads, args, differentiable):
    """One cotangent per argument in ``args`` from the gradients of those at
    ``differentiable`` (None for the others), each in its argument's structure."""
    grads = iter(grads if isinstance(grads, tuple) else (grads,))
    return tuple(None if i not in differentiable else trees.in_structure(next(grads), a)
                 if _is_tree(a) else _in_structure(next(grads), a)
                 if isinstance(a, (list, tuple)) else _of_dtype(next(grads), a)
                 for i, a in enumerate(args))


def _of_dtype(gradient, value):
    """``gradient`` of the dtype of ``value`` when that is a narrow float (see
    Derivative._gradients_in_precision)."""
    if not _low_precision(value):
        return gradient
    if isinstance(value, np.ndarray):
        return np.asarray(gradient, dtype=value.dtype).reshape(value.shape)
    return value.dtype.type(gradient)


def _scaled(gradient, factor):
    """``gradient`` (a number, an array, or a list or tuple of them) times ``factor``."""
    if type(gradient) in (list, tuple):
        return type(gradient)(_scaled(g, factor) for g in gradient)
    if type(gradient) is dict:
        return {key: _scaled(g, factor) for key, g in gradient.items()}
    return gradient * factor


def _check_cotangent(label, cotangent, out):
    """Refuse a cotangent not of the shape of the result ``out`` (in its structure
    for a tuple or a list, and for a dict, a dataclass...)."""
    if _is_tree(out):
        if trees.same_structure(cotangent, out):
            return
        expected = "of the structure {}".format(trees.describe(out))
    elif type(out) in (list, tuple):
        if type(cotangent) in (list, tuple) and len(cotangent) == len(out):
            for item, value in zip(cotangent, out):
                _check_cotangent(label, item, value)
            return
        expected = "a {} of {} cotangents".format(type(out).__name__, len(out))
    elif not isinstance(cotangent, (list, tuple)) and np.shape(cotangent) == np.shape(out) \
            and _is_real(cotangent):
        return
    else:
        expected = "a number" if np.ndim(out) == 0 else \
            "an array of shape {}".format(np.shape(out))
    raise DerivoError("vjp_fn of {}: the cotangent must be {}, like the result, got {}".format(
        label, expected, _short_repr(cotangent)))


def tangent(func: Optional[Function] = None, *, wrt: Wrt = 0,
            backend: str = "python") -> Function:
    """The forward-mode derivative (Jacobian-vector product) of ``func`` w.r.t. ``wrt``.

    The result is a :class:`Derivative` called with one tangent per ``wrt``
    parameter first, then ``func``'s own arguments, returning
    ``(func(*args), tangent)``::

        df = derivo.tangent(f, wrt=("x", "y"))
        value, tangent = df(dx, dy, x, y)     # tangent = df/dx * dx + df/dy * dy

    Its ``.source`` is the generated tangent code (no stack: the primal
    statements with their tangents interleaved).  Works as ``@tangent`` too.
    ``backend="numba"``: see :func:`grad`.
    """
    return _transform("jvp", func, wrt, backend=backend)


def _copied(value):
    """``value`` with the arrays and lists in it copied."""
    if isinstance(value, np.ndarray):
        return np.copy(value)
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):  # a NamedTuple
        return type(value)(*map(_copied, value))
    if isinstance(value, (list, tuple)):
        return type(value)(map(_copied, value))
    if type(value) is dict:
        return {key: _copied(item) for key, item in value.items()}
    return value


def _refuse_joined_sequences(derivative, func, args, positions):
    """Refuse the lists and tuples among ``args`` (at ``positions``) that ``func``
    may join or repeat (see _ArgumentChecks.refuse_joined)."""
    if hasattr(derivative, "derivo_spread"):  # one Derivative per call's arguments
        derivative = derivative.derivo_spread(len(args), ())[0]
        func = derivative.__self__.__wrapped__
    names = [p.name for p in _parameters(func)]
    # a bound function's derivative calls its Derivative's entry (see _of_bound)
    owner = derivative.derivo_bound[0].__self__ if hasattr(derivative, "derivo_bound") \
        else derivative.__self__
    for index in positions:
        value = args[index]
        if isinstance(value, (list, tuple)):
            owner._arguments.refuse_joined(names[index], value,
                                           _item_types(value) <= _PLAIN_REALS)


def _differentiable(value):
    return isinstance(value, (float, np.floating)) or (
        isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.inexact))


def _differentiable_or_container(value):
    """What vjp and jvp differentiate: a float, a float array, or a list or tuple
    of real numbers and arrays."""
    return _differentiable(value) or isinstance(value, (list, tuple)) and _is_real(value) or \
        _is_tree(value) and any(map(trees.is_differentiable_leaf, trees.leaves(value)))


def _zero_tangent(value):
    if _is_tree(value):
        return trees.zeros_in_structure(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_zero_tangent(v) for v in value)
    return np.zeros(np.shape(value)) if isinstance(value, np.ndarray) else 0.0


def _same_structure(tangent, primal):
    """Whether ``tangent`` is of the structure of the list or tuple ``primal``: the
    same kinds of container, of the same lengths, holding real numbers and arrays
    of the same shapes."""
    if _is_tree(primal):
        return trees.same_structure(tangent, primal)
    if isinstance(primal, (list, tuple)):
        return type(tangent) is type(primal) and len(tangent) == len(primal) and \
            all(map(_same_structure, tangent, primal))
    return _is_real(tangent) and np.shape(tangent) == np.shape(primal)


def jvp(func: Function, primals: Sequence[Any], tangents: Sequence[Any],
        backend: str = "python") -> Tuple[Any, Any]:
    """``(func(*primals), tangent)``: the Jacobian-vector product, in forward mode::

        value, slope = derivo.jvp(f, primals=(2.0, 5.0), tangents=(1.0, 0.0))

    ``tangents`` has one entry per primal.  Float and float-array primals, and
    lists and tuples of numbers and arrays, are differentiated (their tangent,
    of the primal's structure, may be None for zero); any other primal (an int,
    a flag) must get None or 0 as its tangent.  The tangent has the structure of
    ``func``'s result (a tuple for a tuple).  ``backend="numba"``: see :func:`grad`.
    """
    loops = _loop_options("stack", None, "revolve", backend)
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise DerivoError("jvp needs one tangent per primal, got {} primals and {} "
                          "tangents".format(len(primals), len(tangents)))
    differentiable = tuple(i for i, p in enumerate(primals) if _differentiable_or_container(p))
    label = getattr(func, "__qualname__", repr(func))
    for i, (primal, tangent) in enumerate(zip(primals, tangents)):
        if i not in differentiable and tangent is not None and \
                not (np.ndim(tangent) == 0 and tangent == 0):
            raise DerivoError(
                "jvp of {}: argument {} is {!r}, not a float, so derivo does not "
                "differentiate it; give it the tangent None".format(label, i, primal))
    # A None tangent is a symbolic zero: its argument is left out of the tangent code,
    # so no partial derivative of it is multiplied by a zero (0 * nan is nan).
    differentiable = tuple(i for i in differentiable if tangents[i] is not None)
    seeds = []
    for i in differentiable:
        primal, tangent = primals[i], tangents[i]
        if trees.is_container(primal) and not _same_structure(tangent, primal):
            raise DerivoError("jvp of {}: the tangent of argument {} is {}, not of the "
                              "structure of its primal {}".format(
                                  label, i, _short_repr(tangent), _short_repr(primal)))
        elif not trees.is_container(primal) and np.shape(tangent) != np.shape(primal):
            raise DerivoError("jvp of {}: the tangent of argument {} has shape {}, its "
                              "primal {}".format(label, i, np.shape(tangent), np.shape(primal)))
        else:
            seeds.append(_zeros_for_none(tangent, primal) if _is_tree(primal) else tangent)
    if not differentiable:
        out = func(*map(_copied, primals))
        return out, _zero_tangent(out)
    derivative = _derivative(_code_for(func, primals), differentiable, "jvp", loops)
    _refuse_joined_sequences(derivative, func, primals, differentiable)
    out, tangent = derivative(*seeds, *primals)
    # the tangent code may hold a list of lists' tangent as NumPy made it (an object
    # array) or a tuple of numbers' as an array
    if _is_tree(out):
        return out, trees.in_structure(tangent, out)
    return out, _in_structure(tangent, out) if type(out) in (list, tuple) else tangent


def _zeros_for_none(tangent, primal):
    """The container ``primal``'s tangent with 0.0 for the None of each leaf not
    differentiated: the tangent code multiplies it (see jacobians._zero_seed)."""
    return trees.unflattened(primal, (0.0 if leaf is None else leaf
                                      for leaf in trees.leaves(tangent)))


def _code_for(func, values):
    """What differentiating ``func`` at ``values`` differentiates: a derivative's
    array code when one of them is an array (its scalar code, run on arrays, would
    not sum what broadcasting spread), else ``func`` itself."""
    if isinstance(func, Derivative) and any(map(_holds_array, values)):
        return getattr(func, "__self__", func)._differentiated_again(arrays=True)
    return func


def source(derivative: Function) -> str:
    """The generated source of a :class:`Derivative` (same as ``.source``)::

        print(derivo.source(derivo.grad(f)))
    """
    if not isinstance(derivative, Derivative):
        raise DerivoError("derivo.source takes a derivative made by derivo.grad, "
                          "value_and_grad, vjp or tangent, got {!r}".format(derivative))
    return derivative.source


def cache_info() -> "cache.CacheInfo":
    """(hits, misses, size) of derivo's transformation cache: ``derivo.cache_info().hits``."""
    return cache.info()
