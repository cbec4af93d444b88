"""scipy.integrate.odeint, differentiated by the adjoint method (derivo.integrate): the
gradient in y0 and in the parameters given through args= matches central differences, with
the user's dynamics differentiated by derivo; the output times are refused.  solve_ivp the same
way, with t_eval or the solver's own steps, and events= refused.  Forward mode solves the
sensitivities of both; the Hessian through odeint runs the adjoint system's tangent."""

import numpy as np
import pytest

pytest.importorskip("scipy")
from scipy.integrate import odeint, solve_ivp  # noqa: E402

import derivo  # noqa: E402

TIMES = np.linspace(0.0, 2.0, 6)


def oscillator(y, t, k, c):
    return np.array([y[1], -k * y[0] - c * y[1]])


def oscillator_loss(y0, k, c):
    ys = odeint(oscillator, y0, TIMES, args=(k, c), rtol=1e-10, atol=1e-10)
    return np.sum(ys[:, 0] * np.linspace(1.0, 2.0, 6)) + np.sum(ys[-1] ** 2)


def forced(t, y, w):
    return -y * w + np.sin(t) * np.array([1.0, 0.5, -0.25])


def forced_loss(y0, w):
    parameters = (w,)
    ys = odeint(forced, y0, TIMES, args=parameters, tfirst=True, rtol=1e-10, atol=1e-10)
    return np.sum(np.tanh(ys))


def logistic_growth(y, t):
    return y * (1.0 - y)


def growth_loss(y0):
    return np.sum(odeint(logistic_growth, y0, TIMES, rtol=1e-10, atol=1e-10) ** 2)


def differences(f, args, index, h=1e-5):
    x = args[index]
    if np.ndim(x) == 0:
        up, down = list(args), list(args)
        up[index], down[index] = x + h, x - h
        return (f(*up) - f(*down)) / (2 * h)
    out = np.zeros(np.shape(x))
    for position in np.ndindex(out.shape):
        step = np.zeros(out.shape)
        step[position] = h
        up, down = list(args), list(args)
        up[index], down[index] = x + step, x - step
        out[position] = (f(*up) - f(*down)) / (2 * h)
    return out


@pytest.mark.parametrize("f,args", [
    (oscillator_loss, (np.array([1.0, 0.0]), 2.0, 0.3)),
    (forced_loss, (np.array([0.5, -0.2, 0.1]), np.array([0.7, 1.3, 0.4]))),
    (growth_loss, (np.array([0.1, 0.4]),)),
], ids=["args=(k, c)", "tfirst, args as a name", "no args"])
def test_the_gradient_matches_central_differences(f, args):
    wrt = tuple(range(len(args)))
    gradient = derivo.grad(f, wrt=wrt)(*args)
    for index, got in enumerate(gradient):
        assert np.shape(got) == np.shape(args[index])
        np.testing.assert_allclose(got, differences(f, args, index), rtol=1e-5, atol=1e-7)


def test_the_rule_is_listed_once_scipy_integrate_is_imported():
    assert "scipy.integrate.odeint" in derivo.rules.table()["integrate"]


def moving_times(y0, stop):
    return np.sum(odeint(logistic_growth, y0, np.array([0.0, stop])))


def test_the_output_times_are_refused():
    with pytest.raises(derivo.NoDerivativeRule, match="its argument 'times'") as info:
        derivo.grad(moving_times, wrt=1)(np.array([0.2]), 1.0)
    assert str(info.value).startswith(__file__)


@pytest.mark.parametrize("f,args", [
    (oscillator_loss, (np.array([1.0, 0.0]), 2.0, 0.3)),
    (forced_loss, (np.array([0.5, -0.2, 0.1]), np.array([0.7, 1.3, 0.4]))),
    (growth_loss, (np.array([0.1, 0.4]),)),
], ids=["args=(k, c)", "tfirst, args as a name", "no args"])
def test_forward_mode_solves_the_sensitivities(f, args):
    rng = np.random.default_rng(3)
    tangents = tuple(rng.normal(size=np.shape(a)) if np.ndim(a) else float(rng.normal())
                     for a in args)
    value, tangent = derivo.jvp(f, args, tangents)
    assert value == pytest.approx(f(*args))
    expected = sum(np.sum(differences(f, args, i) * d) for i, d in enumerate(tangents))
    assert tangent == pytest.approx(expected, rel=1e-5, abs=1e-7)


def final_state(y0, k, c):
    return odeint(oscillator, y0, TIMES, args=(k, c), rtol=1e-10, atol=1e-10)[-1]


def test_the_rows_of_the_jacobian_of_the_final_state_match_central_differences():
    # one reverse sweep per row, through the same forward result
    y0 = np.array([1.0, 0.2])
    expected = np.stack([differences(lambda *a: final_state(*a)[i], (y0, 2.0, 0.3), 0)
                         for i in range(2)])
    out, vjp_fn = derivo.vjp(final_state, y0, 2.0, 0.3)
    u = np.array([1.0, 0.0])
    first = vjp_fn(u)[0].copy()
    u[:] = [0.0, 1.0]  # changed in place: a new adjoint, not the last one again
    np.testing.assert_allclose(vjp_fn(u)[0], expected[1], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(first, expected[0], rtol=1e-5, atol=1e-7)


# --- solve_ivp -----------------------------------------------------------------------

def ivp_decay_loss(y0, k):
    """Output times from t_span's start, args as a tuple."""
    sol = solve_ivp(lambda t, y, k: -k * y + np.sin(t), (0.0, 1.5), y0, args=(k,),
                    t_eval=np.linspace(0.0, 1.5, 4), rtol=1e-10, atol=1e-10)
    return np.sum(sol.y ** 2) + np.sum(sol.y[:, -1])


def ivp_oscillator_loss(y0, k, c):
    """The first output after t_span's start, another method."""
    sol = solve_ivp(lambda t, y, k, c: np.array([y[1], -k * y[0] - c * y[1]]), (0.0, 2.0), y0,
                    method="DOP853", t_eval=[0.5, 1.0, 2.0], args=(k, c), rtol=1e-11, atol=1e-11)
    return np.sum(sol.y[0] * np.array([1.0, -2.0, 0.5])) + np.sum(sol.y[1] ** 2)


def ivp_adaptive_loss(y0, w):
    """No t_eval: the solver's own steps; only the last state matters."""
    sol = solve_ivp(lambda t, y, w: -y * w, (0.0, 1.0), y0, args=(w,), rtol=1e-10,
                    atol=1e-10)
    return np.sum(np.tanh(sol.y[:, -1]))


@pytest.mark.parametrize("f,args", [
    (ivp_decay_loss, (np.array([1.0, -0.5]), 0.7)),
    (ivp_oscillator_loss, (np.array([1.0, 0.0]), 2.0, 0.3)),
    (ivp_adaptive_loss, (np.array([0.5, -0.2, 0.1]), np.array([0.7, 1.3, 0.4]))),
], ids=["t_eval from the start", "t_eval later, DOP853", "adaptive steps"])
def test_solve_ivp_gradient_matches_central_differences(f, args):
    wrt = tuple(range(len(args)))
    gradient = derivo.grad(f, wrt=wrt)(*args)
    for index in wrt:
        np.testing.assert_allclose(gradient[index], differences(f, args, index), rtol=1e-5,
                                   atol=1e-7)


def ivp_with_events(y0):
    sol = solve_ivp(lambda t, y: -y, (0.0, 1.0), y0, events=lambda t, y: y[0] - 0.5)
    return np.sum(sol.y)


def test_solve_ivp_with_events_is_refused():
    with pytest.raises(derivo.DerivoError, match="without events"):
        derivo.grad(ivp_with_events)(np.array([1.0, 2.0]))


IVP_CASES = [(ivp_decay_loss, (np.array([1.0, -0.5]), 0.7)),
             (ivp_oscillator_loss, (np.array([1.0, 0.0]), 2.0, 0.3)),
             (ivp_adaptive_loss, (np.array([0.5, -0.2, 0.1]), np.array([0.7, 1.3, 0.4])))]


@pytest.mark.parametrize("f,args", IVP_CASES,
                         ids=["t_eval from the start", "t_eval later, DOP853", "adaptive steps"])
@pytest.mark.parametrize("moved", ["all", "y0", "args"])
def test_forward_mode_through_solve_ivp_solves_the_sensitivities(f, args, moved):
    rng = np.random.default_rng(4)
    tangents = [rng.normal(size=np.shape(a)) if np.ndim(a) else float(rng.normal())
                for a in args]
    if moved == "y0":
        tangents[1:] = [None] * (len(args) - 1)
    elif moved == "args":
        tangents[0] = None
    value, tangent = derivo.jvp(f, args, tuple(tangents))
    assert value == pytest.approx(f(*args))
    expected = sum(np.sum(differences(f, args, i) * d) for i, d in enumerate(tangents)
                   if d is not None)
    assert tangent == pytest.approx(expected, rel=1e-5, abs=1e-7)


def test_forward_mode_through_solve_ivp_refuses_events():
    with pytest.raises(derivo.DerivoError, match="without events"):
        derivo.jvp(ivp_with_events, (np.array([1.0, 2.0]),), (np.ones(2),))


def layered(y, t, layers):
    for W, b in layers:
        y = np.tanh(np.dot(y, W) + b)
    return y


def layered_loss(layers, y0):
    ys = odeint(layered, y0, TIMES, args=(layers,), rtol=1e-10, atol=1e-10)
    return np.sum(ys ** 2)


def test_an_argument_in_args_may_be_a_list_of_weight_tuples():
    # autograd's ode_net.py passes args=(params,) with params a list of (W, b)
    rng = np.random.default_rng(5)
    layers = [(0.5 * rng.normal(size=(2, 3)), 0.1 * rng.normal(size=3)),
              (0.5 * rng.normal(size=(3, 2)), 0.1 * rng.normal(size=2))]
    y0 = np.array([0.4, -0.3])
    gradient = derivo.grad(layered_loss)(layers, y0)
    assert isinstance(gradient, list) and isinstance(gradient[1], tuple)
    for i, layer in enumerate(layers):
        for j, leaf in enumerate(layer):
            def along(x, i=i, j=j):
                moved = [list(pair) for pair in layers]
                moved[i][j] = x
                return layered_loss([tuple(pair) for pair in moved], y0)
            np.testing.assert_allclose(gradient[i][j], differences(along, (leaf,), 0),
                                       rtol=1e-5, atol=1e-7)


def test_forward_mode_takes_a_tangent_in_the_structure_of_a_list_argument():
    rng = np.random.default_rng(6)
    layers = [(0.5 * rng.normal(size=(2, 2)), 0.1 * rng.normal(size=2))]
    direction = [(rng.normal(size=(2, 2)), rng.normal(size=2))]
    y0 = np.array([0.4, -0.3])
    _, slope = derivo.jvp(layered_loss, (layers, y0), (direction, np.zeros(2)))
    moved = lambda s: layered_loss([(layers[0][0] + s * direction[0][0],
                                     layers[0][1] + s * direction[0][1])], y0)
    assert slope == pytest.approx(differences(moved, (0.0,), 0), rel=1e-5)
    _, slope_y0 = derivo.jvp(lambda y: layered_loss(layers, y), (y0,), (np.ones(2),))
    assert slope_y0 == pytest.approx(differences(lambda s: layered_loss(layers, y0 + s), (0.0,), 0),
                                     rel=1e-5)


# --- second derivatives ----------------------------------------------------------------

def hessian_by_differences(f, args):
    """The Hessian in all of ``args`` (flattened, one after another) by central
    differences of derivo's gradient (checked against differences above)."""
    sizes = [np.size(a) for a in args]
    flat = np.concatenate([np.ravel(a) for a in args])

    def unflat(vector):
        pieces = np.split(vector, np.cumsum(sizes)[:-1])
        return [p.reshape(np.shape(a)) if np.ndim(a) else float(p[0]) for p, a in zip(pieces, args)]

    def gradient(vector):
        grads = derivo.grad(f, wrt=tuple(range(len(args))))(*unflat(vector))
        return np.concatenate([np.ravel(g) for g in grads])

    h = 1e-5
    columns = [(gradient(flat + h * e) - gradient(flat - h * e)) / (2 * h)
               for e in np.eye(flat.size)]
    return np.stack(columns, axis=1)


@pytest.mark.parametrize("f,args", [
    (oscillator_loss, (np.array([1.0, 0.0]), 2.0, 0.3)),
    (forced_loss, (np.array([0.5, -0.2, 0.1]), np.array([0.7, 1.3, 0.4]))),
    (growth_loss, (np.array([0.1, 0.4]),)),
], ids=["args=(k, c)", "tfirst, args as a name", "no args"])
def test_the_hessian_through_odeint_matches_differences_of_the_gradient(f, args):
    # forward over reverse: the tangent of the adjoint system, run back beside it
    wrt = tuple(range(len(args)))
    blocks = derivo.hessian(f, wrt=wrt)(*args)
    if len(args) == 1:
        blocks = ((blocks,),)
    sizes = [np.size(a) for a in args]
    got = np.block([[np.reshape(blocks[i][j], (sizes[i], sizes[j])) for j in wrt] for i in wrt])
    expected = hessian_by_differences(f, args)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=2e-4)  # (the ODE solves' noise)
    np.testing.assert_allclose(got, got.T, rtol=1e-6, atol=1e-8)


def test_the_adjoint_solve_and_its_transpose_pass_the_dot_product_test():
    # the rule of adjoints in its output adjoint: <adjoints(v), u> = <v, transpose(u)>
    from derivo.integrate import adjoints, adjoints_transpose
    rng = np.random.default_rng(8)
    y0, k, c = np.array([1.0, 0.0]), 2.0, 0.3
    ys = odeint(oscillator, y0, TIMES, args=(k, c), rtol=1e-10, atol=1e-10)
    v = rng.normal(size=ys.shape)
    u = (rng.normal(size=2), (float(rng.normal()), float(rng.normal())))
    a, (dk, dc) = adjoints(v, ys, oscillator, TIMES, (k, c), 1e-10, 1e-10, False)
    back = adjoints_transpose(u, ys, oscillator, TIMES, (k, c), 1e-10, 1e-10, False)
    assert np.dot(a, u[0]) + dk * u[1][0] + dc * u[1][1] == pytest.approx(np.sum(v * back),
                                                                          rel=1e-7)
