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
dfunc/dargs dargs from s(t_0) = dy0, with ``derivo.jvp`` of func.  A Hessian
(forward mode over the gradient's code) runs the adjoint system back with its
own tangent system beside it (see :func:`adjoints_tangent`).
Differentiating the output times ``t`` is refused.

``sol = solve_ivp(fun, t_span, y0, method, t_eval, args=..., rtol=..., atol=...)``
is run back the same way, with its method and tolerances, from its last output time
to ``t_span[0]`` (t_eval may start later); the adjoint of ``sol`` is that of
``sol.y``.  Forward mode solves its sensitivity system beside the state as for
odeint, with the same method and tolerances, at the output times of ``sol``.
Its times (t_span, t_eval) and events= are refused.
"""

import numpy as np

from . import api, trees
from .errors import DerivoError
from .rules import CONSTANT, NEW, defjvp, defvjp, lazy_table

class _LastSolves:
    """The last ``count`` backward solves, each (the result it ran back from, a
    copy of the numbers it ran back with, what it gave): the rule's templates
    for y0 and for args ask for the same solve.  The result is held (its id could
    go to a later array), the numbers copied (a caller may change them in place
    between two calls, as a Jacobian's rows do)."""

    def __init__(self, count):
        self.count, self.last = count, []

    def __call__(self, result, numbers, solve):
        """``solve()``, run back from ``result`` with ``numbers``, made once."""
        for held, copy, made in self.last:
            if held is result and np.array_equal(copy, numbers):
                return made
        self.last = (self.last + [(result, np.array(numbers), solve())])[-self.count:]
        return self.last[-1][2]


#: the adjoint systems solved; for a Hessian, their tangent systems, one for each
#: differentiated argument of adjoints (the output adjoint, the states, args)
_last_solve, _last_tangent_solve = _LastSolves(1), _LastSolves(3)


def adjoints(adjoint, ys, func, times, args, rtol, atol, tfirst):
    """(the adjoint of y0, the adjoints of args, a tuple) for ``ys = odeint(...)``
    and the output adjoint ``adjoint`` (of ys's shape)."""
    return _last_solve(ys, adjoint, lambda: _solve_backwards(
        adjoint, ys, func, times, args, tfirst, _odeint_step(rtol, atol)))


def _odeint_step(rtol, atol):
    """``step(dynamics, state, start, end)``: the state at ``end``, by odeint."""
    from scipy.integrate import odeint

    def step(dynamics, state, start, end):
        return odeint(dynamics, state, [start, end], rtol=rtol, atol=atol)[1]
    return step


def ivp_adjoints(adjoint, sol, fun, t_span, y0, method, args, events, rtol, atol):
    """(the adjoint of y0, the adjoints of args) for ``sol = solve_ivp(fun, t_span,
    y0, method, t_eval, args=args, rtol=rtol, atol=atol)`` and the adjoint of
    ``sol`` (a dict: its ``y``'s under "y").  The backward solves use the same
    method and tolerances, from the last output time to t_span's start."""
    from scipy.integrate import solve_ivp
    _refuse_events(events)
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


def _solve_backwards(adjoint, ys, func, t, args, tfirst, step):
    """The adjoint system run back from t[-1] to t[0], one ``step(dynamics,
    state, start, end)`` (the state at ``end``) between each pair of times."""
    args = tuple(args or ())
    g = np.reshape(adjoint, (len(t), -1))
    states = np.reshape(ys, (len(t), -1))
    size = states.shape[1]

    def augmented(state, s):
        y, a = state[:size], state[size:2 * size]
        at = (s, y) if tfirst else (y, s)
        dy, vjp_fn = api.vjp(func, *at, *args)
        cotangents = vjp_fn(-a.reshape(np.shape(dy)))
        own = cotangents[1] if tfirst else cotangents[0]
        pieces = [np.ravel(dy), np.ravel(own)] + [_raveled(c, arg) for c, arg in
                                                  zip(cotangents[2:], args)]
        return np.concatenate(pieces)

    layout = _Layout(size, args)
    state = _run_back(t, layout.start(states[-1], g[-1]), augmented, step,
                      lambda back, i: layout.restart(back, states[i], g[i]))
    return layout.adjoint(state), layout.arg_adjoints(state)


def _run_back(t, state, dynamics, step, restart):
    """The state of an adjoint system run back from t[-1], where it is ``state``,
    to t[0], ``restart(state, i)`` at each output time t[i] before it."""
    for i in range(len(t) - 1, 0, -1):
        state = restart(step(dynamics, state, t[i], t[i - 1]), i - 1)
    return state


def adjoints_tangent(adjoint, ys, func, times, args, rtol, atol, tfirst, adjoint_tangent=None,
                     ys_tangent=None, args_tangent=None):
    """The tangent of ``adjoints(adjoint, ys, func, times, args, ...)`` (forward
    over reverse: a Hessian) for tangents of the output adjoint, of the states
    and of args (None: zero): the adjoint system run back with its tangent
    system beside it, whose dynamics are the tangent of the adjoint system's
    (derivo.jvp of derivo's VJP code of func)."""
    args = tuple(args or ())
    g = np.reshape(adjoint, (len(times), -1))
    states = np.reshape(ys, (len(times), -1))
    moved_g = np.zeros(g.shape) if adjoint_tangent is None else np.reshape(adjoint_tangent, g.shape)
    moved_states = np.zeros(states.shape) if ys_tangent is None else \
        np.reshape(ys_tangent, states.shape)
    moved_args = _zero_tangents(args) if args_tangent is None else tuple(args_tangent)
    numbers = np.concatenate([np.ravel(adjoint), np.ravel(moved_g), np.ravel(moved_states)]
                             + [_raveled(t, arg) for t, arg in zip(moved_args, args)])
    return _last_tangent_solve(ys, numbers, lambda: _solve_tangent_backwards(
        g, states, moved_g, moved_states, func, times, args, moved_args, rtol, atol, tfirst))


def _solve_tangent_backwards(g, states, moved_g, moved_states, func, times, args, moved_args,
                             rtol, atol, tfirst):
    """The adjoint system and its tangent system run back from times[-1] to
    times[0] (see adjoints_tangent)."""
    size = states.shape[1]
    own = 1 if tfirst else 0
    pullback = api._derivative(func, (own,) + tuple(range(2, 2 + len(args))), "vjp")
    layout = _Layout(size, args)

    def augmented(state, s):
        y, a = state[:size], state[size:2 * size]
        dy, da = state[layout.length:layout.length + size], layout.adjoint(state, layout.length)
        at, moves = ((s, y), (None, dy)) if tfirst else ((y, s), (dy, None))
        value, change = api.jvp(func, (*at, *args), (*moves, *moved_args))
        seed = -a.reshape(np.shape(value))
        cotangents, moved_cotangents = api.jvp(
            pullback, (seed, *at, *args), (-da.reshape(np.shape(value)), *moves, *moved_args))
        if not args:  # (the VJP of one argument gives its cotangent alone)
            cotangents, moved_cotangents = (cotangents,), (moved_cotangents,)
        return np.concatenate(
            [np.ravel(value), np.ravel(cotangents[0])]
            + [_raveled(c, arg) for c, arg in zip(cotangents[1:], args)]
            + [np.ravel(change), np.ravel(moved_cotangents[0])]
            + [_raveled(c, arg) for c, arg in zip(moved_cotangents[1:], args)])

    def restart(state, i):
        return np.concatenate([layout.restart(state, states[i], g[i]),
                               layout.restart(state, moved_states[i], moved_g[i],
                                              layout.length)])

    start = np.concatenate([layout.start(states[-1], g[-1]),
                            layout.start(moved_states[-1], moved_g[-1])])
    state = _run_back(times, start, augmented, _odeint_step(rtol, atol), restart)
    return AdjointsTangent(layout.adjoint(state, layout.length),
                           layout.flat_arg_adjoints(state, layout.length), layout)


class AdjointsTangent(tuple):
    """The tangent of what :func:`adjoints` returns, (y0's adjoint, args'
    adjoints), indexed as that pair is.  Forward mode adds the shares of the
    tangents of the output adjoint, of the states and of args: they add leaf
    by leaf (a tuple's + would join them)."""

    def __new__(cls, adjoint, flat_arg_adjoints, layout):
        made = super().__new__(cls, (adjoint, layout.shaped(flat_arg_adjoints)))
        made.parts = (adjoint, flat_arg_adjoints, layout)
        return made

    def __add__(self, other):
        if not isinstance(other, AdjointsTangent):
            return NotImplemented
        (a, b, layout), (c, d, _) = self.parts, other.parts
        return AdjointsTangent(a + c, b + d, layout)


def adjoints_transpose(cotangent, ys, func, times, args, rtol, atol, tfirst):
    """The VJP of :func:`adjoints` in its output adjoint, in which it is linear:
    adjoints is the transpose of odeint's tangent map from (y0, args), so its
    own transpose is that tangent map (ys[0] is y0)."""
    parts = cotangent if isinstance(cotangent, (list, tuple)) else (0.0, 0.0)
    y0_part = None if np.ndim(parts[0]) == 0 and parts[0] == 0 else parts[0]
    args_part = None if not isinstance(parts[1], (list, tuple)) else parts[1]
    return tangent(func, ys[0], times, args, rtol, atol, tfirst, y0_tangent=y0_part,
                   args_tangent=args_part)


class _Layout:
    """Where the parts of a backward solve's state lie: the state y (``size``
    numbers), its adjoint a, then the adjoints b of ``args``, raveled; from
    ``offset`` in a longer state (the tangent system's follows the adjoint
    system's: see adjoints_tangent)."""

    def __init__(self, size, args):
        self.size, self.args = size, args
        self.sizes = [_size(a) for a in args]
        self.length = 2 * size + sum(self.sizes)

    def start(self, y, g):
        """At the last output time: the state there, its adjoint g, b zero."""
        return np.concatenate([y, g, np.zeros(sum(self.sizes))])

    def restart(self, state, y, g, offset=0):
        """At an earlier output time: the state there (the solve ran it back
        from the next), its adjoint added to a; b carries on."""
        part = state[offset:offset + self.length].copy()
        part[:self.size] = y
        part[self.size:2 * self.size] += g
        return part

    def adjoint(self, state, offset=0):
        return state[offset + self.size:offset + 2 * self.size]

    def flat_arg_adjoints(self, state, offset=0):
        return state[offset + 2 * self.size:offset + self.length]

    def arg_adjoints(self, state, offset=0):
        return self.shaped(self.flat_arg_adjoints(state, offset))

    def shaped(self, flat):
        """The adjoints of args, raveled one after another in ``flat``, in
        their structures and shapes."""
        ends = np.cumsum([0] + self.sizes)
        return tuple(_shaped_like(flat[start:end], arg)
                     for start, end, arg in zip(ends, ends[1:], self.args))


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
    args_tangent = _zero_tangents(args) if args_tangent is None else tuple(args_tangent)

    def sensitivities(state, s):
        y, dy = state[:size].reshape(np.shape(y0)), state[size:].reshape(np.shape(y0))
        at, moves = ((s, y), (0.0, dy)) if tfirst else ((y, s), (dy, 0.0))
        value, change = api.jvp(func, (*at, *args), (*moves, *args_tangent))
        return np.concatenate([np.ravel(value), np.ravel(change)])

    out = odeint(sensitivities, np.concatenate([start, y0_tangent]), t, rtol=rtol, atol=atol)
    return out[:, size:].reshape((len(t),) + np.shape(np.atleast_1d(y0)))


class SolutionTangent(dict):
    """The tangent of a ``solve_ivp`` result: that of its ``y`` (its times ``t``
    do not move), read as the result's fields are (``sol.y``, ``sol["y"]``).
    Forward mode adds the shares of y0's and of args' tangents: they add field
    by field."""

    def __getattr__(self, name):
        if name not in self:
            raise DerivoError("derivo's tangent of a scipy.integrate.solve_ivp result has "
                              "its fields y and t only, not {!r}".format(name))
        return self[name]

    def __add__(self, other):
        if not isinstance(other, SolutionTangent):
            return NotImplemented
        return SolutionTangent(t=self["t"], y=self["y"] + other["y"])


def ivp_tangent(sol, fun, t_span, y0, method, args, events, rtol, atol, y0_tangent=None,
                args_tangent=None):
    """The tangent of ``sol = solve_ivp(fun, t_span, y0, method, ..., args=args)``
    for tangents of y0 and of args (None: zero): the sensitivity system
    ds/dt = dfun/dy s + dfun/dargs dargs from s(t_span[0]) = dy0, solved beside
    the state at sol's output times."""
    from scipy.integrate import solve_ivp
    _refuse_events(events)
    args = tuple(args or ())
    start = np.ravel(y0).astype(float)
    size = start.size
    y0_tangent = np.zeros(size) if y0_tangent is None else np.ravel(y0_tangent)
    args_tangent = _zero_tangents(args) if args_tangent is None else tuple(args_tangent)

    def sensitivities(s, state):
        y, dy = state[:size].reshape(np.shape(y0)), state[size:].reshape(np.shape(y0))
        value, change = api.jvp(fun, (s, y, *args), (0.0, dy, *args_tangent))
        return np.concatenate([np.ravel(value), np.ravel(change)])

    out = solve_ivp(sensitivities, t_span, np.concatenate([start, y0_tangent]), method=method,
                    t_eval=sol.t, rtol=rtol, atol=atol)
    return SolutionTangent(t=np.zeros(np.shape(sol.t)), y=out.y[size:])


def _zero_tangents(args):
    return tuple(trees.zeros_in_structure(a) if trees.is_container(a) else np.zeros(np.shape(a))
                 for a in args)


def _refuse_events(events):
    if events is not None:
        raise DerivoError("derivo differentiates scipy.integrate.solve_ivp without events= "
                          "only: an event moves the end of the solution")


def register():
    from scipy.integrate import odeint, solve_ivp

    # func is the user's dynamics (a function: CONSTANT), times odeint's t (no rule)
    defvjp(odeint, CONSTANT,
           lambda g, ans, func, y0, times, args=None, rtol=None, atol=None, tfirst=False: np.reshape(adjoints(g, ans, func, times, args, rtol, atol, tfirst)[0], np.shape(y0)),
           None,
           lambda g, ans, func, y0, times, args=None, rtol=None, atol=None, tfirst=False: adjoints(g, ans, func, times, args, rtol, atol, tfirst)[1],
           label="scipy.integrate.odeint", returns=NEW)
    # the Hessian runs forward mode over the gradient's code, which calls adjoints
    defvjp(adjoints, lambda g, ans, adjoint, ys, func, times, args, rtol, atol, tfirst: adjoints_transpose(g, ys, func, times, args, rtol, atol, tfirst),
           None, CONSTANT, CONSTANT, None, CONSTANT, CONSTANT, CONSTANT)
    defjvp(adjoints, lambda t, ans, adjoint, ys, func, times, args, rtol, atol, tfirst: adjoints_tangent(adjoint, ys, func, times, args, rtol, atol, tfirst, adjoint_tangent=t),
           lambda t, ans, adjoint, ys, func, times, args, rtol, atol, tfirst: adjoints_tangent(adjoint, ys, func, times, args, rtol, atol, tfirst, ys_tangent=t),
           CONSTANT, CONSTANT,
           lambda t, ans, adjoint, ys, func, times, args, rtol, atol, tfirst: adjoints_tangent(adjoint, ys, func, times, args, rtol, atol, tfirst, args_tangent=t),
           CONSTANT, CONSTANT, CONSTANT)
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
    defjvp(solve_ivp, CONSTANT, None,
           lambda t, ans, fun, t_span, y0, method="RK45", t_eval=None, dense_output=False, events=None, vectorized=False, args=None, rtol=1e-3, atol=1e-6: ivp_tangent(ans, fun, t_span, y0, method, args, events, rtol, atol, y0_tangent=t),
           CONSTANT, None, CONSTANT, CONSTANT, CONSTANT,
           lambda t, ans, fun, t_span, y0, method="RK45", t_eval=None, dense_output=False, events=None, vectorized=False, args=None, rtol=1e-3, atol=1e-6: ivp_tangent(ans, fun, t_span, y0, method, args, events, rtol, atol, args_tangent=t))


lazy_table("scipy.integrate", register)
