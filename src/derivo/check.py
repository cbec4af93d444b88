"""Tools users reach for around derivatives: checking one against finite
differences, and the randomized forward gradient (section 8.7 of Blondel and Roulet,
*The Elements of Differentiable Programming*, 2024).

Not a pipeline stage: both call the public API like a user would.
"""

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import api
from .errors import DerivoError


@dataclass
class GradientCheck:
    """What :func:`check_grad` found: derivo's gradient, central finite
    differences, and the worst disagreement between them."""

    derivo: tuple
    numeric: tuple
    max_abs_error: float
    max_rel_error: float
    tolerance: float

    @property
    def ok(self):
        return self.max_rel_error <= self.tolerance

    def __bool__(self):
        return self.ok

    def __str__(self):
        verdict = "OK" if self.ok else "MISMATCH"
        return ("{}: worst relative error {:.2e} (absolute {:.2e}), tolerance {:.0e}"
                .format(verdict, self.max_rel_error, self.max_abs_error, self.tolerance))


def check_grad(func: Callable[..., Any], *args: Any, wrt: Any = 0, step: float = 1e-6,
               tolerance: float = 1e-5, **kwargs: Any) -> "GradientCheck":
    """Compare ``derivo.grad(func, wrt=wrt)(*args, **kwargs)`` with central
    finite differences, element by element::

        derivo.check_grad(f, 2.0, 5.0, wrt=(0, 1)).ok    # True when they agree

    The relative error of an element is ``|derivo - numeric| / max(|numeric|, 1)``:
    relative for large derivatives, absolute near zero, where finite
    differences cannot do better.  A kink or a branch switching within
    ``step`` of the point shows up as a large error here, not as a bug.
    Returns a :class:`GradientCheck` (true when within ``tolerance``).
    """
    names = api.resolve_wrt(func, wrt)
    gradient = api.grad(func, wrt=tuple(names))(*args, **kwargs)
    positions = _positions(func, names)
    numeric = tuple(_central_difference(func, args, kwargs, position, step)
                    for position in positions)
    worst_abs = worst_rel = 0.0
    for ours, theirs in zip(gradient, numeric):
        error = np.abs(np.asarray(ours, dtype=float) - theirs)
        worst_abs = max(worst_abs, float(np.max(error, initial=0.0)))
        worst_rel = max(worst_rel, float(np.max(error / np.maximum(np.abs(theirs), 1.0),
                                                initial=0.0)))
    return GradientCheck(gradient, numeric, worst_abs, worst_rel, tolerance)


def _positions(func, names):
    params = [p.name for p in api._parameters(func)]
    return [params.index(name) for name in names]


def _central_difference(func, args, kwargs, position, step):
    if position >= len(args):
        raise DerivoError("check_grad needs the differentiated arguments passed by position")
    point = np.array(args[position], dtype=float)
    result = np.zeros_like(point)
    for index in np.ndindex(point.shape):
        values = []
        for sign in (1, -1):
            shifted = point.copy()
            h = step * max(1.0, abs(float(point[index])))
            shifted[index] += sign * h
            moved = list(args)
            moved[position] = shifted if point.ndim else float(shifted)
            values.append(func(*moved, **kwargs))
        result[index] = (values[0] - values[1]) / (2 * h)
    return result if point.ndim else float(result)


def forward_gradient(func: Callable[..., Any], wrt: Any = 0, samples: int = 1,
                     rng: Any = None) -> Callable[..., Any]:
    """The randomized forward gradient (Blondel and Roulet, section 8.7): an
    unbiased estimate of the gradient from ``samples`` forward-mode JVPs,
    ``(grad . v) v`` averaged over standard Gaussian directions v::

        estimate = derivo.forward_gradient(f, wrt=(0, 1), samples=100, rng=0)(2.0, 5.0)

    Returns a function of ``func``'s arguments giving one estimate per call
    (a tuple when ``wrt`` is a tuple).  ``rng`` is a ``numpy.random.Generator``
    (or a seed) so estimates can be reproduced.
    """
    names = api.resolve_wrt(func, wrt)
    positions = _positions(func, names)
    generator = np.random.default_rng(rng)
    if samples < 1:
        raise DerivoError("forward_gradient needs at least one sample, got {}".format(samples))

    def estimate(*args):
        totals = [np.zeros(np.shape(args[p])) for p in positions]
        for _ in range(samples):
            directions = [generator.standard_normal(np.shape(args[p])) for p in positions]
            tangents = [None] * len(args)
            for position, direction in zip(positions, directions):
                tangents[position] = direction if np.ndim(args[position]) else float(direction)
            _, derivative = api.jvp(func, args, tangents)
            for total, direction in zip(totals, directions):
                total += derivative * direction
        results = tuple(t / samples if t.ndim else float(t) / samples for t in totals)
        return results if isinstance(wrt, (tuple, list)) else results[0]

    return estimate
