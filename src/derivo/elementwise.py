"""``derivo.elementwise_grad``: the derivative of an elementwise function, element
by element, to any order.

For ``f`` that maps each element of an array on its own (``np.tanh``), the
Jacobian is diagonal and one forward-mode pass with a tangent of ones gives its
diagonal: ``f'(x)`` at every element.  ``elementwise_grad(f)`` is a two-line
function that makes that pass through ``derivo.tangent(f)``; derivo reads its
source like any other, so ``elementwise_grad(elementwise_grad(f))`` is forward
mode over forward mode, and so on, with no tangent passes per element.
"""

import numpy as np

from . import api, codegen
from .errors import DerivoError
from .runtime import one_like

_MADE = {}


def elementwise_grad(func: api.Function, wrt: api.Wrt = 0) -> api.Function:
    """The derivative of ``func`` with respect to ``wrt``, element by element: for
    ``func`` elementwise in that argument (each element of the result depends on
    the same element of it alone), ``elementwise_grad(func)(x)`` is the array of
    ``func``'s derivatives at the elements of ``x`` (for a float, the derivative).
    It nests to any order (forward mode over forward mode)::

        d = derivo.elementwise_grad
        d(d(d(d(np.tanh))))(np.linspace(-3.0, 3.0, 7))   # tanh'''' at 7 points

    Used on a function that is not elementwise it gives the sums of the Jacobian's
    rows, not a derivative: use ``derivo.jacobian`` there.
    """
    names = api.resolve_wrt(func, wrt)
    if len(names) != 1:
        raise DerivoError("elementwise_grad differentiates with respect to one parameter, "
                          "got wrt={!r}".format(wrt))
    key = (func, names)
    try:
        return _MADE[key]
    except KeyError:
        made = _MADE[key] = _made(func, names[0])
        return made
    except TypeError:  # an unhashable callable
        return _made(func, names[0])


def _made(func, name):
    """``def f_elementwise_grad(x, ...): return f_jvp(one_like(x), x, ...)[1]``."""
    inner = api._as_python(func)
    params = [p.name for p in api._parameters(inner) if p.kind != p.KEYWORD_ONLY]
    if name not in params:
        raise DerivoError("elementwise_grad differentiates a positional parameter; {!r} is "
                          "keyword-only".format(name))
    label = getattr(inner, "__name__", "f")
    made_name = "{}_elementwise_grad".format(label)
    tangent_name = "{}_jvp".format(label)
    source = "def {}({}):\n    return {}(one_like({}), {})[1]\n".format(
        made_name, ", ".join(params), tangent_name, name, ", ".join(params))
    tangent = api.tangent(func, wrt=name)
    namespace = {tangent_name: tangent, "one_like": one_like, "np": np}
    made = codegen.compile_module(source, namespace, made_name)[made_name]
    made.source = _with_tangent_source(tangent, source)
    made.__defaults__ = getattr(inner, "__defaults__", None)
    made.__doc__ = "The elementwise derivative of {} with respect to {}.".format(label, name)
    return made


def _with_tangent_source(tangent, source):
    """``source`` after the generated source of the tangent it calls (its
    ``.source``, as a derivative has); the tangent is made here, once, as its
    first call would.  A tangent made only when called with arguments (one that
    specialises on what it is given), or one derivo refuses, leaves ``source``
    alone: the call reports why."""
    try:
        return tangent.source + "\n\n" + source
    except Exception:  # (raised again, with the user's line, when it is called)
        return source
