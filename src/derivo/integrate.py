"""The derivatives of ``scipy.integrate.odeint`` and ``solve_ivp`` by the adjoint
method, as autograd's odeint rule.

``ys = odeint(func, y0, t, args=(...))`` solves dy/dt = func(y, t, *args).  Its VJP
runs the adjoint system backwards from the last time to the first, between each
pair of output times, with the tolerances the forward solve was given:

    dy/dt = func(y, t, *args)        (the state, run back)
    da/dt = -a^T dfunc/dy            (a: the adjoint of y; a(t_i) += g_i at each output)
    db/dt = -a^T dfunc/dargs         (b: the adjoint of args, from 0 at the last time)

``func`` is the user's function: derivo makes its VJP (``derivo.vjp``), so this
module sits above the API, and registers its rule only once the program has
imported scipy.integrate (see :func:`derivo.rules.lazy_table`).  Forward mode
solves the sensitivity system beside the state instead, ds/dt = dfunc/dy s +
dfunc/dargs dargs from s(t_0) = dy0, with ``derivo.jvp`` of func.
Differentiating the output times ``t`` is refused.

``sol = solve_ivp(fun, t_span, y0, method, t_eval, args=..., rtol=..., atol=...)``
is run back the same way, with its method and tolerances, from its last output time
to ``t_span[0]`` (t_eval may start later); the adjoint of ``sol`` is that of
``sol.y``.  Its times (t_span, t_eval), events= and forward mode are refused.
"""

import numpy as np

from . import api, trees
from .errors import DerivoError
from .rules import CONSTANT, NEW, defjvp, defvjp, lazy_table

#: the last backward solve, [the result it ran back from, a copy of its output adjoint,
#: the adjoints it gave]: the rule's templates for y0 and for args ask for the same
#: solve.  The result is held (its id could go to a later array), the adjoint copied
#: (a caller may change it in place between two calls, as a Jacobian's rows do).
_LAST = [None, None, None]


def adjoints(adjoint, ys, func, t, args, rtol, atol, tfirst):
    """(the adjoint of y0, the adjoints of args, a tuple) for ``ys = odeint(...)``
    and the output adjoint ``adjoint`` (of ys's shape)."""
    from scipy.integrate import odeint

    def step(dynamics, state, start, end):
        return odeint(dynamics, state, [start, end], rtol=rtol, atol=atol)[1]
    return _last_solve(ys, adjoint, lambda: _solve_backwards(adjoint, ys, func, t, args,
                                                              tfirst, step))


def ivp_adjoints(adjoint, sol, fun, t_span, y0, method, args, events, rtol, atol):
    """(the adjoint of y0, the adjoints of args) for ``sol = solve_ivp(fun, t_span,
    y0, method, t_eval, args=args, rtol=rtol, atol=atol)`` and the adjoint of
    ``sol`` (a dict: its ``y``'s under "y").  The backward solves use the same
    method and tolerances, from the last output time to t_span's start."""
    from scipy.integrate import solve_ivp
    if events is not None:
        raise DerivoError("derivo differentiates scipy.integrate.solve_ivp without events= "
                          "only: an event moves the end of the solution")
    g = adjoint.get("y", 0.0) if isinstance(adjoint, dict) else adjoint
    g = np.zeros(np.shape(sol.y)) if np.ndim(g) == 0 else np.asarray(g)
    times, states, g = np.asarray(sol.t), np.asarray(sol.y).T, g.T
    if times[0] != t_span[0]:    # the solution starts at t_span[0], before the first output
        times = np.concatenate([[t_span[0]], times])
        states = np.vstack([np.ravel(y0), states])
        g = np.vstack([np.zeros(g.shape[1]), g])

    def step(dynamics, state, start, end):
        return solve_ivp(lambda s, x: dynamics(x, s), (start, end), state, method=method,
                         rtol=rtol, atol=atol).y[:, -1]
    a, arg_adjoints = _last_solve(sol, g, lambda: _solve_backwards(g, states, fun, times, args,
                                                                   True, step))
    return np.reshape(a, np.shape(y0)), arg_adjoints


def _last_solve(result, adjoint, solve):
    """The backward ``solve()`` from ``result``'s output adjoint ``adjoint``, made
    once for the templates of y0 and of args (see _LAST)."""
    if _LAST[0] is not result or not np.array_equal(_LAST[1], adjoint):
        _LAST[:] = [result, np.array(adjoint), solve()]
    return _LAST[2]


def _solve_backwards(adjoint, ys, func, t, args, tfirst, step):
    """The adjoint system run back from t[-1] to t[0], one ``step(dynamics,
    state, start, end)`` (the state at ``end``) between each pair of times."""
    args = tuple(args or ())
    g = np.reshape(adjoint, (len(t), -1))
    states = np.reshape(ys, (len(t), -1))
    size = states.shape[1]
    sizes = [_size(a) for a in args]

    def augmented(state, s):
        y, a = state[:size], state[size:2 * size]
        at = (s, y) if tfirst else (y, s)
        dy, vjp_fn = api.vjp(func, *at, *args)
        cotangents = vjp_fn(-a.reshape(np.shape(dy)))
        own = cotangents[1] if tfirst else cotangents[0]
        pieces = [np.ravel(dy), np.ravel(own)] + [_raveled(c, arg) for c, arg in
                                                  zip(cotangents[2:], args)]
        return np.concatenate(pieces)

    a, b = g[-1], np.zeros(sum(sizes))
    for i in range(len(t) - 1, 0, -1):
        state = np.concatenate([states[i], a, b])
        back = step(augmented, state, t[i], t[i - 1])
        a, b = back[size:2 * size] + g[i - 1], back[2 * size:]
    ends = np.cumsum([0] + sizes)
    arg_adjoints = tuple(_shaped_like(b[start:end], arg)
                         for start, end, arg in zip(ends, ends[1:], args))
    return a, arg_adjoints


# An argument in args may be a container (autograd's ode_net.py passes a list of
# (W, b) tuples): the adjoint system carries its leaves raveled one after another.

def _size(arg):
    return sum(int(np.size(leaf)) for leaf in trees.leaves(arg))


def _raveled(cotangent, arg):
    """The cotangent of ``arg`` as one flat vector, leaf after leaf (zeros where
    no cotangent reached a leaf)."""
    if cotangent is None:
        return np.zeros(_size(arg))
    pieces = trees.leaves(cotangent) if trees.is_container(arg) else [cotangent]
    return np.concatenate([np.zeros(np.size(leaf)) if c is None else np.ravel(c)
                           for c, leaf in zip(pieces, trees.leaves(arg))])


def _shaped_like(flat, arg):
    """The flat adjoint ``flat`` of ``arg`` in ``arg``'s structure and shapes."""
    if not trees.is_container(arg):
        shape = np.shape(arg)
        return flat.reshape(shape) if shape else float(flat[0])
    found = trees.parts(arg)
    items = list(found.values() if isinstance(found, dict) else found)
    ends = np.cumsum([0] + [_size(item) for item in items])
    grads = [_shaped_like(flat[start:end], item) for start, end, item in zip(ends, ends[1:], items)]
    return trees.rebuilt(arg, dict(zip(found, grads)) if isinstance(found, dict) else grads)


def tangent(func, y0, t, args, rtol, atol, tfirst, y0_tangent=None, args_tangent=None):
    """The tangent of ``odeint(func, y0, t, args)`` for tangents of y0 and of args
    (None: zero)."""
    from scipy.integrate import odeint
    args = tuple(args or ())
    start = np.ravel(y0).astype(float)
    size = start.size
    y0_tangent = np.zeros(size) if y0_tangent is None else np.ravel(y0_tangent)
    args_tangent = tuple(trees.zeros_in_structure(a) if trees.is_container(a) else np.zeros(np.shape(a))
                         for a in args) if args_tangent is None \
        else tuple(args_tangent)

    def sensitivities(state, s):
        y, dy = state[:size].reshape(np.shape(y0)), state[size:].reshape(np.shape(y0))
        at, moves = ((s, y), (0.0, dy)) if tfirst else ((y, s), (dy, 0.0))
        value, change = api.jvp(func, (*at, *args), (*moves, *args_tangent))
        return np.concatenate([np.ravel(value), np.ravel(change)])

    out = odeint(sensitivities, np.concatenate([start, y0_tangent]), t, rtol=rtol, atol=atol)
    return out[:, size:].reshape((len(t),) + np.shape(np.atleast_1d(y0)))


def register():
    from scipy.integrate import odeint, solve_ivp

    # func is the user's dynamics (a function: CONSTANT), times odeint's t (no rule)
    defvjp(odeint, CONSTANT,
           lambda g, ans, func, y0, times, args=None, rtol=None, atol=None, tfirst=False: np.reshape(adjoints(g, ans, func, times, args, rtol, atol, tfirst)[0], np.shape(y0)),
           None,
           lambda g, ans, func, y0, times, args=None, rtol=None, atol=None, tfirst=False: adjoints(g, ans, func, times, args, rtol, atol, tfirst)[1],
           label="scipy.integrate.odeint", returns=NEW)
    defjvp(odeint, CONSTANT,
           lambda t, ans, func, y0, times, args=None, rtol=None, atol=None, tfirst=False: tangent(func, y0, times, args, rtol, atol, tfirst, y0_tangent=t),
           None,
           lambda t, ans, func, y0, times, args=None, rtol=None, atol=None, tfirst=False: tangent(func, y0, times, args, rtol, atol, tfirst, args_tangent=t))


    # solve_ivp(fun, t_span, y0, method, t_eval, dense_output, events, vectorized, args):
    # the times (t_span, t_eval) have no rule; the options are constants
    defvjp(solve_ivp, CONSTANT, None,
           lambda g, ans, fun, t_span, y0, method="RK45", t_eval=None, dense_output=False, events=None, vectorized=False, args=None, rtol=1e-3, atol=1e-6: ivp_adjoints(g, ans, fun, t_span, y0, method, args, events, rtol, atol)[0],
           CONSTANT, None, CONSTANT, CONSTANT, CONSTANT,
           lambda g, ans, fun, t_span, y0, method="RK45", t_eval=None, dense_output=False, events=None, vectorized=False, args=None, rtol=1e-3, atol=1e-6: ivp_adjoints(g, ans, fun, t_span, y0, method, args, events, rtol, atol)[1],
           label="scipy.integrate.solve_ivp", returns=NEW)


lazy_table("scipy.integrate", register)
