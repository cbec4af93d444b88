"""Derivatives of functions whose parameters say what they call.

``def train(loss_fn, w): return loss_fn(w)``, a method's ``self.predict(x)``,
``ACTIVATIONS[name](x)``: which function runs depends on an argument.  derivo
transforms such a function for the values a call gives those parameters (see
:attr:`derivo.parse.Parsed.fixed`): the function called is inlined or
differentiated like any user function.  The transformation records what it
resolved through each parameter (the function ``loss_fn`` held, the function of
``self.predict``, the key ``name``), and the derivative's entry checks those on
every call: a call with another function transforms again (see
:meth:`derivo.cache.LiveReads.matches`), never reusing the code made for the
old one.

Values that are data (arrays, numbers, lists) are never specialised on: a
derivative is not made again for each new array.
"""

import inspect

import numpy as np

from .parse import EQUAL, PARAMETERS, called_by_class, parse

#: Values a derivative never specialises on: what the generated code reads as data
_DATA = (np.ndarray, np.generic, float, complex, list, tuple, dict, set, type(None))


def callee_parameters(func, wrt):
    """{parameter: the lines of the calls it says the callee of} of ``func`` (a
    Python function) for the parameters whose values may say what it calls (see
    :attr:`derivo.parse.Parsed.callee_parameters`), ``wrt`` left out."""
    try:
        found = parse(func).callee_parameters
    except Exception:  # (the transformation reports what it cannot read)
        return {}
    return {name: lines for name, lines in sorted(found.items()) if name not in wrt}


def waits_for_arguments(error, parameters, func):
    """Whether ``error``, raised transforming ``func`` before any call, may be for
    want of what ``parameters`` (see :func:`callee_parameters`) hold: it is at a
    call one of them says the callee of, or in code ``func`` calls (a helper that
    calls what such a call gives it)."""
    if not parameters:
        return False
    if any(error.lineno in lines for lines in parameters.values()):
        return True
    code = getattr(func, "__code__", None)
    return code is None or error.filename != code.co_filename or \
        error.lineno not in {line for _, _, line in code.co_lines()}


def fixed_values(func, names, lead, args, kwargs):
    """{parameter: value} of the parameters ``names`` of ``func`` for a call of its
    derivative with ``args`` and ``kwargs`` (after ``lead`` arguments of its own:
    a cotangent, tangents), defaults filled in, data left out."""
    params = [p for p in inspect.signature(func, follow_wrapped=False).parameters.values()]
    positional = [p.name for p in params if p.kind != p.KEYWORD_ONLY]
    given = dict(zip(positional, args[lead:]))
    given.update((k, v) for k, v in kwargs.items() if k in names)
    defaults = {p.name: p.default for p in params if p.default is not p.empty}
    values = {}
    for name in names:
        value = given.get(name, defaults.get(name, inspect.Parameter.empty))
        if value is not inspect.Parameter.empty and _says_what_runs(value):
            values[name] = value
    return values


def _says_what_runs(value):
    """Whether ``value`` may be what a call calls: not data, or a container of
    functions (``fns[0](x)``, ``acts["tanh"](x)``) or of objects whose methods run
    (``layer.forward(x)`` of ``for layer in layers``: see derivo.dispatch)."""
    if isinstance(value, dict):
        return any(map(callable, value.values()))
    if isinstance(value, (list, tuple)):
        # (at C speed: a list of a million numbers takes milliseconds)
        return any(map(callable, value)) or not all(
            issubclass(kind, _DATA) for kind in set(map(type, value)))
    return not isinstance(value, _DATA)


def pending_entry():
    """An entry (see :class:`derivo.api.Derivative`) for a derivative not transformed
    yet: its first call transforms it for the functions it is given."""
    scope = {}
    exec("def pending(derivo_self, *args, **kwargs):\n"
         "    return derivo_self._call_stale(args, kwargs)\n", scope)
    return scope["pending"]


def key(fixed):
    """The part of the cache's key a specialisation adds: each parameter with the
    function, key or class it holds (an object's class says what its methods run;
    the cached transformation checks the rest, see LiveReads.matches)."""
    return tuple((name, _identity(fixed[name])) for name in sorted(fixed))


def _identity(value):
    if isinstance(value, (str, int, type)) or callable(value) and not called_by_class(value):
        try:
            hash(value)
            return value
        except TypeError:
            pass
    return type(value)


def saved_guard(live, name):
    """The check a saved module of the generated function ``name`` runs first, and
    the values it compares with ({name in the module: value}): it was made for the
    keys its parameters held (``activation == 'tanh'``) and the functions they
    held (``loss_fn is loss_fn_held``, ``self.predict.__func__ is
    self_predict_held``), which a saved module cannot transform again for, so it
    refuses others; '' when the transformation read none (see cache.LiveReads)."""
    tests, held = [], {}
    for (where, ident, path), seen in zip(live.reads, live.seen):
        if where is not PARAMETERS or not all(isinstance(step, str) for step in path):
            continue
        read = ident + "".join("." + step for step in path if step != EQUAL)
        if path and path[-1] == EQUAL:
            tests.append("{} != {!r}".format(read, seen))
        else:
            kept = "_".join([ident, *(step for step in path if step != "__func__"), "held"])
            held[kept] = seen
            tests.append("{} is not {}".format(read, kept))
    if not tests:
        return "", held
    told = [t.replace(" != ", " == ") for t in tests if " != " in t] + [
        "{} is {}".format(t.split(" is not ")[0], getattr(held[t.split(" is not ")[1]],
                                                        "__qualname__", "the one it held"))
        for t in tests if " is not " in t]
    return "if {}:\n    raise ValueError({!r})\n".format(" or ".join(tests), (
        "{} was generated for {}: derive again for other values".format(
            name, ", ".join(told)))), held
