"""backend="numba": derivo's generated code compiled by numba.njit (derivo.numba_backend).

Each compiled derivative is compared with the Python backend's (to rounding) and
with central finite differences, on the examples (Bessel's data-dependent
``while``, the pendulum's long counted loop) and on loop programs written here;
and on the scalar programs tests/test_fuzz.py draws.  Without numba these tests
skip, but the refusal naming the extra runs.
"""

import importlib.util
import logging
import math
import os
import pathlib
import subprocess
import sys
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

import derivo
from derivo import numba_backend, numba_cache

import test_fuzz
from examples import bessel, pendulum


@pytest.fixture
def numba():
    return pytest.importorskip("numba")


def central(f, args, i, h=1e-6):
    up, down = list(args), list(args)
    up[i] += h
    down[i] -= h
    return (f(*up) - f(*down)) / (2 * h)


def same(got, want, rtol=1e-12):
    got, want = np.atleast_1d(got), np.atleast_1d(want)
    return got.shape == want.shape and np.allclose(got, want, rtol=rtol, atol=1e-14)


def dispatcher(derivative):
    """The numba dispatcher a derivative's compiled code runs."""
    from numba.core.registry import CPUDispatcher
    scope = derivative.__self__.call.__func__.__globals__
    found = [v for v in scope.values() if isinstance(v, CPUDispatcher)]
    assert len(found) == 1, list(scope)
    return found[0]


# --- programs with loops --------------------------------------------------------

def nested(x, y, n):
    total = 0.0
    for i in range(n):
        for j in range(i, n + 2, 2):
            if math.sin(x * j) > 0.0:
                total += x * y / (1.0 + j)
            else:
                total -= math.cos(y * i) * x
    return total


def halving(x, tol):
    count = 0
    while x > tol:
        x = x * 0.5 + math.sin(x) * 0.01
        count += 1
    return x * count


def early_exit(x, y, n):
    s = 0.0
    for k in range(n):
        t = x * k  # saved before its first assignment: a placeholder
        if t > 3.0:
            break
        s += t * y
        if s > 2.0:
            continue
        s = s * 0.9
    return s * y


def powers(x, y):
    return x ** y + abs(x - y) + max(x, y) * min(x, 2.0)


def step(x, rate):
    return x - rate * math.tanh(x)


def calls_a_helper(x, rate, n):
    for _ in range(n):
        x = step(x, rate)
    return x * x


def over_values(x, y):
    s = 0.0
    for w in [x, y, x * y]:
        s = s * w + math.exp(-w * w)
    return s


def saved_where_bounded(x, y, n):
    s = x * 1.5 + math.sin(y)
    s = s * s  # saved outside a loop
    u = 0.0
    for i in range(1, n, 2):
        u = u + math.cos(s * i)
        s = s * 0.9 + math.sin(u) * y  # saved in the loop
        if u > 1.0:
            s = s - 0.1 * u  # saved in the loop, on some trips
    return s * u


def two_loops(x, n):
    s = x
    for _ in range(n):
        s = s * 0.9 + math.sin(s)
    for _ in range(3):
        s = s * 1.1 - math.cos(s)
    return s


def bound_reassigned(x, n):
    n = n + 1
    s = x
    for _ in range(n):
        s = s * 0.99 + math.sin(s)
    return s


PROGRAMS = [
    (saved_where_bounded, (0.4, 0.7, 13), (0, 1)),
    (bound_reassigned, (0.3, 20), (0,)),
    (two_loops, (0.3, 10), (0,)),
    (nested, (0.7, 1.3, 5), (0, 1)),
    (halving, (3.0, 1e-3), (0,)),
    (early_exit, (0.4, 1.1, 12), (0, 1)),
    (powers, (1.7, 0.6), (0, 1)),
    (calls_a_helper, (1.5, 0.3, 40), (0, 1)),
]


def check_against_python(f, args, wrt):
    compiled = derivo.grad(f, wrt=wrt, backend="numba")(*args)
    python = derivo.grad(f, wrt=wrt)(*args)
    assert same(compiled, python), (compiled, python)
    for i, g in zip(wrt, compiled):
        assert math.isclose(g, central(f, args, i), rel_tol=1e-5, abs_tol=1e-7)


@pytest.mark.parametrize("z", [0.5, 1.0, 4.0, 10.0])
@pytest.mark.parametrize("v", [0, 2, 5])
def test_bessel_equals_the_python_backend_and_differences(numba, v, z):
    compiled = derivo.grad(bessel.besselj, wrt="z", backend="numba")
    got = compiled(v, z)
    assert same(got, bessel.besselj_grad(v, z))
    # J_v' = (J_{v-1} - J_{v+1}) / 2, J_0' = -J_1
    closed = -bessel.besselj(1, z) if v == 0 else \
        (bessel.besselj(v - 1, z) - bessel.besselj(v + 1, z)) / 2
    assert math.isclose(got, closed, rel_tol=1e-7, abs_tol=1e-9)


@pytest.mark.parametrize("steps", [1, 100, 1000])
def test_pendulum_equals_the_python_backend_and_differences(numba, steps):
    check_against_python(pendulum.simulate, (0.3, 1.0, steps), (0, 1))


@pytest.mark.parametrize("f, args, wrt", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_loop_programs_equal_the_python_backend(numba, f, args, wrt):
    check_against_python(f, args, wrt)


def test_generated_code_has_typed_stacks_and_counted_loops(numba):
    source = derivo.grad(pendulum.simulate, wrt=(0, 1), backend="numba").source
    # a float saved in a counted loop: an array of the loop's trips, and a count
    assert "theta_stack = numpy.empty(len(range(steps)))" in source
    assert "theta_stack[theta_top] = theta\n        theta_top += 1\n" in source
    assert "theta_top -= 1\n        theta = theta_stack[theta_top]\n" in source
    # a while loop's trips are not known before it: a list, which grows
    grows = derivo.grad(bessel.besselj, wrt="z", backend="numba").source
    assert "s_stack.append(s)" in grows and "s = s_stack.pop()" in grows
    assert "for _ in range(steps - 1, -1, -1):" in source
    assert "reversed" not in source and "push" not in source
    stepped = derivo.grad(nested, wrt=(0, 1), backend="numba").source
    assert "reversed" not in stepped and "None" not in stepped
    bounded = derivo.grad(saved_where_bounded, wrt=(0, 1), backend="numba").source
    assert "s1_stack = numpy.empty(len(range(1, n, 2)))" in bounded
    twice = derivo.grad(two_loops, wrt=0, backend="numba").source
    assert "s_stack = numpy.empty(len(range(n)) + len(range(3)))" in twice
    reassigned = derivo.grad(bound_reassigned, wrt=0, backend="numba").source
    assert "s_stack.append(s)" in reassigned  # n is not the loop's trips at the top
    placeholder = derivo.grad(early_exit, wrt=(0, 1), backend="numba").source
    assert "    t = 0\n" in placeholder


def test_value_and_grad_tangent_jvp_vjp(numba):
    args = (0.3, 1.0, 200)
    value, grads = derivo.value_and_grad(pendulum.simulate, wrt=(0, 1), backend="numba")(*args)
    assert value == pendulum.simulate(*args)
    assert same(grads, pendulum.simulate_grad(*args))
    tangent = derivo.tangent(pendulum.simulate, wrt=(0, 1), backend="numba")
    assert same(tangent(1.0, 0.0, *args), derivo.tangent(pendulum.simulate, wrt=(0, 1))(
        1.0, 0.0, *args))
    out, slope = derivo.jvp(bessel.besselj, (2, 3.0), (None, 1.0), backend="numba")
    assert same(slope, bessel.besselj_grad(2, 3.0)) and out == bessel.besselj(2, 3.0)
    out, vjp_fn = derivo.vjp(pendulum.simulate, *args, backend="numba")
    bdamping, btheta0, bsteps = vjp_fn(2.0)
    assert same((bdamping, btheta0), 2 * np.array(pendulum.simulate_grad(*args)))
    assert bsteps is None and out == pendulum.simulate(*args)


def accumulate(x, n):
    s = 1.0
    total = 0.0
    for k in range(n):
        s *= x / (k + 1.0)   # s == 0.0 (an underflow) cannot be undone: it is saved
        total += s
        s /= 1.0 + 1e-3 * x
    return total


@pytest.mark.parametrize("x, n", [(2.5, 30), (1e-200, 5), (0.0, 3), (-1.3, 40)])
def test_reversible_loops_compile_with_their_undos_written_out(numba, x, n):
    compiled = derivo.grad(accumulate, loops="reversible", backend="numba")
    assert "Undo" not in compiled.source and "_saved.append((" in compiled.source
    want = derivo.grad(accumulate, loops="reversible")(x, n)
    assert same(compiled(x, n), want) and same(want, derivo.grad(accumulate)(x, n))
    bessel_grad = derivo.grad(bessel.besselj, wrt="z", loops="reversible", backend="numba")
    assert same(bessel_grad(3, 2.5), bessel.besselj_grad(3, 2.5))


def test_compiles_once_per_signature_and_is_cached(numba):
    compiled = derivo.grad(halving, backend="numba")
    assert derivo.grad(halving, backend="numba") is compiled
    assert derivo.grad(halving) is not compiled
    compiled(3.0, 1e-3)
    compiled(5.0, 1e-4)
    assert len(dispatcher(compiled).signatures) == 1
    compiled(5.0, 1)  # another signature: (float64, int64)
    assert len(dispatcher(compiled).signatures) == 2


RATE = 2.0


def scaled(x):
    return RATE * x * x


def test_a_changed_global_is_compiled_in(numba):
    global RATE
    compiled = derivo.grad(scaled, backend="numba")
    assert compiled(1.5) == 6.0
    RATE = 3.0
    try:
        assert compiled(1.5) == 9.0
    finally:
        RATE = 2.0
    assert compiled(1.5) == 6.0


def rescaled(x, scale):
    y = x
    for _ in range(3):
        y = y * scale + x
    return y


def reads_rate(x):
    y = x
    for _ in range(2):  # (a loop: the caller calls it rather than inline it)
        y = y * RATE
    return y


def calls_rescaled(x, n):
    s = 0.0
    for _ in range(n):
        s = s * 0.5 + rescaled(x, RATE)
    return s


def calls_reads_rate(x, n):
    s = 0.0
    for _ in range(n):
        s = s * 0.5 + reads_rate(x)
    return s


def test_a_called_function_compiles_with_the_numbers_it_is_passed(numba):
    global RATE
    compiled = derivo.grad(calls_rescaled, backend="numba")
    assert "rescaled_vjp(" in compiled.source and "add_adjoints(" in compiled.source
    assert same(compiled(1.0, 3), derivo.grad(calls_rescaled)(1.0, 3))
    RATE = 3.0
    try:
        assert same(compiled(1.0, 3), derivo.grad(calls_rescaled)(1.0, 3))
    finally:
        RATE = 2.0


def test_a_called_function_reading_a_global_number_is_refused(numba):
    with pytest.raises(derivo.DerivoError, match="would compile the global 'RATE' that "
                       "reads_rate reads as a constant"):
        derivo.grad(calls_reads_rate, backend="numba")


def test_a_derivative_of_a_compiled_derivative(numba):
    second = derivo.grad(derivo.grad(powers, backend="numba"), wrt=1)
    assert math.isclose(second(1.7, 0.6), derivo.grad(derivo.grad(powers), wrt=1)(1.7, 0.6))
    stacked = derivo.grad(derivo.grad(two_loops, wrt=0, backend="numba"), wrt=0)
    assert math.isclose(stacked(0.3, 10), derivo.grad(derivo.grad(two_loops, wrt=0), wrt=0)(
        0.3, 10), rel_tol=1e-12)


def test_array_code_keeps_numpy_and_logs_it(numba, caplog):
    def loss(w):
        return np.sum(np.tanh(w) ** 2)

    w = np.linspace(-1.0, 1.0, 5)
    with caplog.at_level(logging.INFO, logger="derivo"):
        got = derivo.grad(loss, backend="numba")(w)
    assert "uses NumPy; it runs as Python code" in caplog.text
    assert same(got, derivo.grad(loss)(w))


# --- checkpointed loops: the schedule run by compiled code ----------------------------

def decaying(rate, x, steps):  # one state variable: bare values through the schedule
    for _ in range(2, 2 + 3 * steps, 3):
        x = x - 0.01 * rate * math.sin(x)
    return x


@pytest.mark.parametrize("schedule", ["revolve", "halving", "segments"])
def test_checkpointed_loops_compile_and_equal_python(numba, schedule):
    options = dict(wrt=("damping", "theta0"), loops="checkpoint", checkpoints=4,
                   schedule=schedule)
    compiled = derivo.grad(pendulum.simulate, backend="numba", **options)
    python = derivo.grad(pendulum.simulate, **options)
    assert "checkpoint_forward(" in compiled.source and "checkpoint_reverse(" in compiled.source
    for steps in (0, 1, 2, 7, 300):
        args = (0.3, 1.0, steps, 0.01)
        assert same(compiled(*args), python(*args)), steps
    args = (0.3, 1.0, 300, 0.01)
    assert compiled(*args)[1] == pytest.approx(central(pendulum.simulate, args, 1), rel=1e-6)
    single = derivo.grad(decaying, wrt=(0, 1), loops="checkpoint", checkpoints=3,
                         schedule=schedule, backend="numba")
    for steps in (0, 1, 40):
        assert same(single(0.7, 0.4, steps), derivo.grad(decaying, wrt=(0, 1))(0.7, 0.4, steps))


def swing(damping, theta, omega, tol):
    """A damped pendulum released from theta, run until it has (nearly) stopped: the
    exit depends on the data; three state variables, one of them a clock."""
    t = 0.0
    while abs(omega) + abs(theta) > tol and t < 20.0:
        omega = omega - 0.05 * (9.81 * math.sin(theta) + damping * omega)
        theta = theta + 0.05 * omega
        t = t + 0.05
    return theta * theta + omega + t * damping


def newton_root(a, tol):
    """sqrt(a) by Newton's iteration run until the residual is below tol: one
    state variable (a bare value through the schedule), as many trips as it takes."""
    x = a
    while abs(x * x - a) > tol:
        x = x - (x * x - a) / (2.0 * x)
    return x


def while_in_a_for(x, y, n):
    """A checkpointed while loop run again on each trip of a for loop: a tape per
    trip on the typed stack."""
    total = 0.0
    for i in range(n):
        z = x + 0.5 * i
        while z > y:
            z = z * 0.7 - 0.01 * y
        total = total + z * z
    return total


@pytest.mark.parametrize("slots", [1, 2, 3, 5, None])
def test_checkpointed_while_loops_compile_and_equal_python(numba, slots):
    options = dict(loops="checkpoint", checkpoints=slots)
    compiled = derivo.grad(swing, wrt=(0, 1, 2), backend="numba", **options)
    python = derivo.grad(swing, wrt=(0, 1, 2), **options)
    assert "online_forward(" in compiled.source and "online_reverse(" in compiled.source
    # no trip, one trip, a few, and about 150 (to the clock's limit)
    for args in ((0.4, 0.0, 0.0, 1e-3), (0.4, 0.0, 0.0, -1.0), (0.4, 0.02, 0.0, 0.3),
                 (0.4, 0.05, 0.0, 0.3), (0.4, 1.0, 0.0, 1e-3), (0.1, 1.0, 0.5, 1e-3)):
        assert same(compiled(*args), python(*args)), (slots, args)
    args = (0.4, 1.0, 0.0, 1e-3)
    for i, got in enumerate(compiled(*args)):
        assert got == pytest.approx(central(swing, args, i), rel=1e-5, abs=1e-8), i
    root = derivo.grad(newton_root, backend="numba", **options)
    for a, want in ((1.0, 1.0), (2.0, 0.5 / math.sqrt(2.0)), (50.0, 0.5 / math.sqrt(50.0))):
        assert same(root(a, 1e-12), derivo.grad(newton_root, **options)(a, 1e-12)), a
        assert root(a, 1e-12) == pytest.approx(want, rel=1e-9)  # a = 1: no trip, x = a
    nested = derivo.grad(while_in_a_for, wrt=(0, 1), backend="numba", **options)
    for n in (0, 1, 4):
        args = (3.0, 1.0, n)
        assert same(nested(*args), derivo.grad(while_in_a_for, wrt=(0, 1), **options)(*args))
    assert nested(3.0, 1.0, 4)[0] == pytest.approx(central(while_in_a_for, (3.0, 1.0, 4), 0),
                                                   rel=1e-6)


def four_loops(x, y, n):
    """Checkpointed for and while loops in one function: their functions are numbered
    (f_trips1, f_step1_vjp, ...), each tape reversed by its own loop's VJP."""
    for _ in range(n):
        x = x - 0.1 * math.sin(x * y)
    while x > 0.1:
        x = x * 0.8
    for _ in range(n):
        y = y + 0.1 * math.cos(x + y)
    while y > 0.2:
        y = y * 0.9 - 0.001 * x
    return x * y


def test_checkpointed_for_and_while_loops_in_one_function(numba):
    options = dict(wrt=(0, 1), loops="checkpoint", checkpoints=2)
    compiled = derivo.grad(four_loops, backend="numba", **options)
    assert compiled.source.count("online_reverse(") == 2
    for args in ((2.0, 1.5, 5), (0.05, 0.1, 0)):
        assert same(compiled(*args), derivo.grad(four_loops, **options)(*args)), args
    assert compiled(2.0, 1.5, 5)[1] == pytest.approx(central(four_loops, (2.0, 1.5, 5), 1),
                                                     rel=1e-6)


def test_bessels_checkpointed_while_loop_compiles(numba):
    compiled = derivo.grad(bessel.besselj, wrt="z", loops="checkpoint", checkpoints=3,
                           backend="numba")
    for v, z in ((3, 1e-3), (0, 0.5), (2, 1.0), (3, 7.5)):  # (3, 1e-3): no trip
        assert same(compiled(v, z), bessel.besselj_grad(v, z), rtol=1e-10), (v, z)


def test_a_checkpointed_while_loop_of_arrays_runs_as_python(numba, caplog):
    def shrink(v, tol):
        while np.sum(v * v) > tol:
            v = v * 0.9 + 0.001 * np.sin(v)
        return np.sum(v * v * v)

    v = np.array([1.0, 2.0, -0.5])
    with caplog.at_level(logging.INFO, logger="derivo"):
        got = derivo.grad(shrink, loops="checkpoint", checkpoints=2, backend="numba")(v, 0.1)
    assert "uses NumPy; it runs as Python code" in caplog.text
    assert same(got, derivo.grad(shrink, loops="checkpoint", checkpoints=2)(v, 0.1))
    assert same(got, derivo.grad(shrink)(v, 0.1))


def test_saving_a_compiled_checkpointed_loop_is_refused(numba, tmp_path):
    gradient = derivo.grad(decaying, wrt=(0, 1), loops="checkpoint", backend="numba")
    gradient(0.7, 0.4, 5)
    with pytest.raises(derivo.DerivoError, match="cannot save a checkpointed loop compiled"):
        gradient.save(str(tmp_path / "saved.py"))
    online = derivo.grad(newton_root, loops="checkpoint", backend="numba")
    with pytest.raises(derivo.DerivoError, match="cannot save a checkpointed loop compiled"):
        online.save(str(tmp_path / "saved.py"))


@pytest.mark.parametrize("schedule, code", [("revolve", 0), ("halving", 1), ("segments", 2)])
def test_the_compiled_schedule_is_the_tapes(schedule, code):
    """numba_checkpoints run as Python: the same adjoints and recomputed trips as
    checkpoints.Tape for every slot count and trip count."""
    from derivo import numba_checkpoints
    from derivo.checkpoints import LAST_RUN

    def oscillator(stiffness, x, steps):
        v = 0.0
        for _ in range(steps):
            x += 0.01 * v
            v -= 0.01 * stiffness * math.sin(x)
        return x * x + v

    for slots in (1, 2, 3, 5, 10):
        gradient = derivo.grad(oscillator, wrt=(0, 1), loops="checkpoint", checkpoints=slots,
                               schedule=schedule)
        scope = gradient.derivo_function.__globals__
        trips = scope["oscillator_trips"]
        vjp = scope["oscillator_trips_vjp"]
        for steps in (0, 1, 2, 7, 50, 333):
            LAST_RUN.clear()
            stiffness_adjoint, x_adjoint = gradient(2.0, 0.3, steps)
            (x, _), tape = numba_checkpoints.checkpoint_forward(
                trips, range(steps), (0.3, 0.0), (2.0,), slots, code)
            (bx, _, bstiffness), recomputed = numba_checkpoints.reversed_counting(
                tape, trips, vjp, (2 * x, 1.0), (0.0,))
            assert (bstiffness, bx) == pytest.approx((stiffness_adjoint, x_adjoint), rel=1e-12)
            assert recomputed == LAST_RUN.get("recomputed_steps", 0), (slots, steps)


def test_the_compiled_online_schedule_is_the_tapes():
    """numba_checkpoints' online schedule run as Python: the same kept states, adjoints
    and recomputed trips as checkpoints.Tape for every slot count and trip count."""
    from derivo import numba_checkpoints
    from derivo.checkpoints import LAST_RUN, checkpointed_while

    def spring(stiffness, x, steps):
        v, n = 0.0, 0.0
        while n < steps:
            x += 0.01 * v
            v -= 0.01 * stiffness * math.sin(x)
            n += 1.0
        return x * x + v

    for slots in (1, 2, 3, 5, 10):
        gradient = derivo.grad(spring, wrt=(0, 1), loops="checkpoint", checkpoints=slots)
        scope = gradient.derivo_function.__globals__
        trips, vjp = scope["spring_trips"], scope["spring_step_vjp"]
        for steps in (0, 1, 2, 3, 7, 50, 333):
            state = (0.3, 0.0, 0.0)  # (x, v, n), as the generated code passes them
            assert scope["checkpointed_while"] is checkpointed_while
            tapes = []
            checkpointed_while(tapes.append, trips, state, (steps, 2.0), slots)
            (x, _, _), tape = numba_checkpoints.online_forward(trips, state, (steps, 2.0),
                                                              slots)
            (shape, _, starts, _, _) = tape
            assert list(starts[:shape[2]]) == [start for start, _, _ in tapes[0].kept]
            LAST_RUN.clear()
            stiffness_adjoint, x_adjoint = gradient(2.0, 0.3, steps)
            (bx, _, _, bstiffness), recomputed = numba_checkpoints.reversed_online(
                tape, trips, vjp, (2 * x, 1.0, 0.0), (0.0,))
            assert (bstiffness, bx) == pytest.approx((stiffness_adjoint, x_adjoint), rel=1e-12)
            assert recomputed == LAST_RUN.get("recomputed_steps", 0), (slots, steps)


def first_of(x, y):
    items = [x, y]
    return items[0] * y


def test_what_numba_cannot_compile_is_refused(numba):
    with pytest.raises(derivo.DerivoError, match="backend='numba' cannot compile derivo's "
                       "runtime helper getitem_vjp.*backend='python'"):
        derivo.grad(first_of, backend="numba")
    with pytest.raises(derivo.DerivoError, match="add_at(_in_place)? .a list's adjoint"):
        derivo.grad(over_values, wrt=(0, 1), backend="numba")


def test_unknown_backend_is_refused():
    with pytest.raises(derivo.DerivoError, match="backend='cuda': choose one of"):
        derivo.grad(powers, backend="cuda")


def test_without_numba_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    with pytest.raises(derivo.DerivoError, match=r"pip install 'derivo\[numba\]'"):
        derivo.grad(halving, wrt=1, backend="numba")
    with pytest.raises(derivo.DerivoError, match=r"derivo\[numba\]"):
        derivo.jvp(powers, (1.0, 2.0), (1.0, 0.0), backend="numba")


def test_saved_module_compiles_with_a_cache(numba, tmp_path):
    path = tmp_path / "besselj_grad_numba.py"
    derivo.grad(bessel.besselj, wrt="z", backend="numba").save(path)
    text = path.read_text()
    assert "@numba.njit(cache=True)\ndef besselj_grad_compiled(" in text
    assert "overload(math.factorial)" in text
    run = ("import sys; sys.path.insert(0, {!r}); import besselj_grad_numba as m; "
           "print(repr(m.besselj_grad(2, 1.0)))".format(str(tmp_path)))
    for _ in range(2):  # the second run loads what the first cached
        out = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True,
                             check=True).stdout
        assert float(out) == bessel.besselj_grad(2, 1.0)
    assert list((tmp_path / "__pycache__").glob("besselj_grad_numba.*.nbi"))


def test_saved_module_with_array_stacks(numba, tmp_path):
    path = tmp_path / "simulate_grad_numba.py"
    derivo.grad(pendulum.simulate, wrt=(0, 1), backend="numba").save(path)
    assert "import numpy\n" in path.read_text()
    spec = importlib.util.spec_from_file_location("simulate_grad_numba", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = (0.3, 1.0, 300)
    assert same(module.simulate_grad(*args), derivo.grad(pendulum.simulate, wrt=(0, 1))(*args))


def test_saved_module_refuses_arrays(numba, tmp_path):
    path = tmp_path / "powers_grad.py"
    derivo.grad(powers, wrt=(0, 1), backend="numba").save(path)
    spec = importlib.util.spec_from_file_location("powers_grad", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert same(module.powers_grad(1.7, 0.6), derivo.grad(powers, wrt=(0, 1))(1.7, 0.6))
    with pytest.raises(TypeError, match="takes numbers, not arrays"):
        module.powers_grad(np.ones(2), 0.6)


def test_cli_backend_numba(numba, tmp_path):
    out = tmp_path / "g.py"
    subprocess.run([sys.executable, "-m", "derivo", "examples/bessel.py", "besselj", "--wrt",
                    "z", "--backend", "numba", "-o", str(out)], check=True)
    assert "@numba.njit(cache=True)" in out.read_text()


@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          phases=[Phase.generate], suppress_health_check=list(HealthCheck))
@given(st.data())
def test_fuzzed_programs_equal_the_python_backend(data):
    pytest.importorskip("numba")
    source, nfloat = data.draw(test_fuzz.programs())
    args = data.draw(test_fuzz.points(nfloat))
    module, _ = test_fuzz.load(source)
    wrt = tuple(range(nfloat))
    try:
        python = derivo.grad(module.f, wrt=wrt)(*args)
    except (derivo.DerivoError, ArithmeticError, ValueError):
        return
    try:
        compiled = derivo.grad(module.f, wrt=wrt, backend="numba")(*args)
    except derivo.DerivoError as refusal:  # named refusals only
        assert "backend='numba'" in str(refusal) and "backend='python'" in str(refusal)
        return
    assert same(compiled, python, rtol=1e-9), (compiled, python, source)


# --- numba's cache of compiled derivatives -------------------------------------------

CACHED_RUN = """
import sys
sys.path[:0] = [{root!r}, {tests!r}]
import derivo, test_numba_backend as t
t.RATE = {rate!r}
print(repr(derivo.grad(t.calls_rescaled, wrt=0, backend="numba")(0.7, 5)))
"""


def cached_run(cache, rate):
    """d calls_rescaled / dx at (0.7, 5) in a new process, RATE holding ``rate``,
    with numba's cache under ``cache``."""
    root = str(pathlib.Path(__file__).resolve().parents[1])
    env = dict(os.environ, DERIVO_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join([os.path.join(root, "src"),
                                           os.environ.get("PYTHONPATH", "")]))
    script = CACHED_RUN.format(root=root, tests=os.path.join(root, "tests"), rate=rate)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, check=True)
    return float(out.stdout)


def test_a_new_process_loads_the_compiled_derivative(numba, tmp_path):
    first = cached_run(tmp_path, 2.0)
    files = sorted(p.name for p in tmp_path.glob("__pycache__/*.nbi"))
    assert files and cached_run(tmp_path, 2.0) == first
    assert sorted(p.name for p in tmp_path.glob("__pycache__/*.nbi")) == files
    assert math.isclose(first, derivo.grad(calls_rescaled, wrt=0)(0.7, 5), rel_tol=1e-12)


def test_the_cache_is_keyed_by_the_numbers_and_functions_read(numba, tmp_path):
    # numba compiles RATE in as a constant: another value is another file
    two, three = cached_run(tmp_path, 2.0), cached_run(tmp_path, 3.0)
    assert len(list(tmp_path.glob("*.py"))) == 2
    global RATE
    try:
        RATE = 3.0
        assert math.isclose(three, derivo.grad(calls_rescaled, wrt=0)(0.7, 5), rel_tol=1e-12)
    finally:
        RATE = 2.0
    assert not math.isclose(two, three)
    code = rescaled.__code__
    functions = [types.SimpleNamespace(__name__="g", __code__=code)]
    before = numba_cache.source_file(functions, {"h": rescaled, "k": 2.0}, "0")
    assert before == numba_cache.source_file(functions, {"h": rescaled, "k": 2.0}, "0")
    assert before != numba_cache.source_file(functions, {"h": step, "k": 2.0}, "0")
    assert before != numba_cache.source_file(functions, {"h": rescaled, "k": 2.5}, "0")
    assert numba_cache.source_file(functions, {"h": rescaled, "k": np.ones(2)}, "0") is None


def scaled_by_a_default(x, weights=np.arange(2000.0)):
    return x * weights[0]


def test_a_default_the_cache_cannot_say_turns_it_off(numba):
    # an array's repr leaves most of its items out: two defaults would share a file
    code = scaled_by_a_default.__code__
    functions = [types.SimpleNamespace(__name__="g", __code__=code)]
    assert numba_cache.source_file(functions, {"h": scaled_by_a_default}, "0") is None


def test_an_empty_cache_directory_turns_the_cache_off(numba, monkeypatch):
    monkeypatch.setenv("DERIVO_CACHE_DIR", "")
    assert numba_cache.directory() is None
    assert numba_cache.source_file([step], {}, "0") is None
