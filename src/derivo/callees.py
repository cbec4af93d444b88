"""A call of a user function reached through a value: ``functools.partial`` of
it, a method bound to an object (``model.predict``), an object's ``__call__``.

ssa makes such a call a call of the function itself, with what the value holds
given first (the object, the partial's arguments) as names the generated module
binds, or as constants: from then on it is a call of a user function like any
other, inlined or given a VJP.  The value the call's name held is a read the
derivative checks on each call (see :class:`derivo.cache.LiveReads`), so calling
it after the name holds another value transforms again.
"""

import functools
import types

from . import rules
from . import syntax as S
from .parse import MISSING
from .memory import is_user_function, user_function
from .names import identifier


def direct_call(call, callee, parsed):
    """The user function that runs when ``call`` calls ``callee``, with ``call``
    made a call of it (in place); None, leaving ``call`` as it is, for a callee
    that is not a user function reached through a value."""
    if is_user_function(callee) or rules.is_primitive(callee):
        _name_what_is_called(call, callee, parsed)
        return None
    if isinstance(callee, type):
        return None  # (a class makes an object: what its __init__ does is not a value)
    function, given = user_function(callee)
    if function is None:
        return None
    bound, keywords = _bound_arguments(callee)
    if len(bound) != given:
        return None
    receiver = _receiver(call, callee)
    origin = parsed.origin_of(receiver) if receiver is not None else None
    if origin is not None:  # what it calls through self is read where the caller read self
        function = _specialised(function, bound[0], origin)
    call.func = S.copy_location(S.name(parsed.hold(identifier(function.__name__), function)),
                                call.func)
    call.args = [receiver if receiver is not None else _argument(parsed, value, call)
                 for value in bound[:1]] + [_argument(parsed, value, call)
                                            for value in bound[1:]] + call.args
    given_keywords = {k.arg for k in call.keywords}
    call.keywords = [S.gast.keyword(arg=name, value=_argument(parsed, value, call))
                     for name, value in keywords.items() if name not in given_keywords] + \
        call.keywords
    return function


def _name_what_is_called(call, callee, parsed):
    """Make a call through a parameter, a local alias or an item (``loss_fn(w)``,
    ``act(x)`` of ``act = ACTIVATIONS[kind]``) a call of a name holding what it
    calls: later stages, and the callers it is pasted into, see the function."""
    if not isinstance(call.func, S.Name) and not isinstance(call.func, S.Subscript) or \
            parsed.resolve_expression(call.func) is not MISSING:
        return
    name = parsed.hold(identifier(getattr(callee, "__name__", "function")), callee)
    call.func = S.copy_location(S.name(name), call.func)


def _specialised(function, obj, origin):
    """A copy of ``function`` whose first parameter is known to hold ``obj``, which
    the derivative's entry reads at ``origin`` (see :attr:`derivo.parse.Parsed.fixed`)."""
    code = function.__code__
    copy = types.FunctionType(code, function.__globals__, function.__name__,
                              function.__defaults__, function.__closure__)
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__qualname__, copy.__module__ = function.__qualname__, function.__module__
    first = code.co_varnames[0]
    copy.derivo_fixed = ({first: obj}, {first: origin})
    copy.derivo_key = (code, id(obj), origin[1:])  # (transform.Build: a VJP per object)
    return copy


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
