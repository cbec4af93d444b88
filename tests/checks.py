"""The one checking helper used by every end-to-end test.

``numeric_grad`` is a central finite difference; ``assert_grad_matches`` runs
``derivo.grad`` and compares with it.  Nothing here calls derivo except
``assert_grad_matches`` itself, so the reference values never come from derivo.
"""

import inspect
import math

__all__ = ["numeric_grad", "assert_grad_matches", "assert_close", "resolve_wrt",
           "dask_computations", "EXAMPLE_NEEDS", "example_runs_here"]


def resolve_wrt(f, wrt):
    """Map one ``wrt`` entry (position or parameter name) to (position, name)."""
    params = list(inspect.signature(f).parameters.values())
    if isinstance(wrt, bool) or not isinstance(wrt, (int, str)):
        raise TypeError(f"wrt must be an int position or a parameter name, got {wrt!r}")
    if isinstance(wrt, int):
        if not 0 <= wrt < len(params):
            raise IndexError(f"{f.__name__} has no positional argument {wrt}")
        return wrt, params[wrt].name
    for i, p in enumerate(params):
        if p.name == wrt:
            return i, wrt
    raise KeyError(f"{f.__name__} has no argument named {wrt!r}")


def _partial(f, args, kwargs, wrt, h):
    pos, name = resolve_wrt(f, wrt)
    args = list(args)
    kwargs = dict(kwargs)
    if name in kwargs:
        x = kwargs[name]

        def call(v):
            kw = dict(kwargs)
            kw[name] = v
            return f(*args, **kw)

    elif pos < len(args):
        x = args[pos]

        def call(v):
            a = list(args)
            a[pos] = v
            return f(*a, **kwargs)

    else:  # differentiate at the parameter's default value
        x = inspect.signature(f).parameters[name].default
        if x is inspect.Parameter.empty:
            raise TypeError(f"no value for argument {name!r}")

        def call(v):
            kw = dict(kwargs)
            kw[name] = v
            return f(*args, **kw)

    if not isinstance(x, float):
        raise TypeError(f"numeric_grad: argument {name!r} must be a float, got {x!r}")
    # The step is relative for large |x| so that x + step != x in floating point.
    step = h * max(1.0, abs(x))
    return (call(x + step) - call(x - step)) / (2.0 * step)


def numeric_grad(f, args, wrt=0, h=1e-6, kwargs=None):
    """Central difference of ``f(*args, **kwargs)`` with respect to ``wrt``.

    ``wrt`` is a position, a parameter name (resolved with
    ``inspect.signature``), or a tuple of them; a tuple gives a tuple.
    Only float arguments can be differentiated.
    """
    kwargs = kwargs or {}
    if isinstance(wrt, tuple):
        return tuple(_partial(f, args, kwargs, w, h) for w in wrt)
    return _partial(f, args, kwargs, wrt, h)


def _close(actual, expected, rtol, atol):
    return abs(actual - expected) <= atol + rtol * abs(expected)


def assert_close(actual, expected, rtol=1e-6, atol=1e-8):
    """Compare a scalar or a tuple of scalars, elementwise, with a clear message."""
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple), f"expected a tuple, got {actual!r}"
        assert len(actual) == len(expected), f"expected {len(expected)} values, got {actual!r}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert a is not None, f"component {i}: got None, expected {e!r}"
            assert math.isfinite(a), f"component {i}: got {a!r}, expected {e!r}"
            assert _close(a, e, rtol, atol), f"component {i}: got {a!r}, expected {e!r}"
    else:
        assert actual is not None and not isinstance(actual, tuple), (
            f"expected a scalar, got {actual!r}"
        )
        assert math.isfinite(actual), f"got {actual!r}, expected {expected!r}"
        assert _close(actual, expected, rtol, atol), f"got {actual!r}, expected {expected!r}"


def assert_grad_matches(f, *args, wrt=0, rtol=1e-6, atol=1e-8, h=1e-6, **kwargs):
    """``derivo.grad(f, wrt=wrt)(*args, **kwargs)`` equals the central difference.

    Returns derivo's gradient so a test can check more about it.
    """
    import derivo

    got = derivo.grad(f, wrt=wrt)(*args, **kwargs)
    expected = numeric_grad(f, args, wrt, h=h, kwargs=kwargs)
    assert_close(got, expected, rtol=rtol, atol=atol)
    return got


#: example (its file's stem) -> the optional package it needs, one of derivo's extras
EXAMPLE_NEEDS = {"dask_regression": "dask"}


def example_runs_here(stem):
    """Whether the example ``stem`` can run: what it needs is installed."""
    import importlib.util
    needed = EXAMPLE_NEEDS.get(stem)
    return needed is None or importlib.util.find_spec(needed) is not None


def dask_computations():
    """A Dask callback whose ``count`` is the number of computations run while it
    is active (``with dask_computations() as computed: ...``); needs dask."""
    from dask.callbacks import Callback

    class Computations(Callback):
        def __init__(self):
            super().__init__()
            self.count = 0

        def _start(self, graph):
            self.count += 1

    return Computations()
