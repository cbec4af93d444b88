"""A called function's VJP in halves (``derivo.residuals``): the caller's primal
sweep runs the callee once, its reverse sweep runs only the callee's reverse
sweep on the residuals that run handed over."""

import math
import random

import numpy as np
import pytest

import derivo
from checks import assert_close, assert_grad_matches

H = 1e-6


def noisy_sum(x, rs, n):
    s = 0.0
    for _ in range(n):
        s = s + np.sin(x * rs.randn())
    return s


def objective(x, seed):
    rs = np.random.RandomState(seed)
    return noisy_sum(x, rs, 4) * x


def globally_noisy(x, n):
    s = 0.0
    for _ in range(n):
        s = s + np.cos(x + np.random.standard_normal())
    return s


def global_objective(x, seed):
    np.random.seed(seed)
    return globally_noisy(x, 3) + x * x


def central(f, x, *args):
    return (f(x + H, *args) - f(x - H, *args)) / (2 * H)


@pytest.mark.parametrize("x", [0.3, 1.7])
def test_a_draw_from_a_random_state_passed_in_is_the_one_the_value_used(x):
    # each call of objective seeds its own RandomState: the differences draw alike
    assert_close(derivo.grad(objective)(x, 5), central(objective, x, 5), rtol=1e-6)


@pytest.mark.parametrize("x", [0.3, 1.7])
def test_a_draw_from_numpys_global_state_is_the_one_the_value_used(x):
    assert_close(derivo.grad(global_objective)(x, 11), central(global_objective, x, 11),
                 rtol=1e-6)


def test_value_and_grad_gives_the_value_of_the_same_draws():
    value, gradient = derivo.value_and_grad(global_objective)(0.4, 2)
    assert value == global_objective(0.4, 2)
    assert_close(gradient, central(global_objective, 0.4, 2), rtol=1e-6)


def counted(x, n):
    print("run", x)  # a side effect: one line per run of the body
    s = x
    for _ in range(n):
        s = s * 0.9 + math.sin(s)
    return s


def calls_counted(x):
    return counted(x, 3) + counted(2.0 * x, 2)


def runs(capsys):
    return [float(line.split()[1]) for line in capsys.readouterr().out.splitlines()]


def test_the_callee_runs_once_per_call(capsys):
    gradient = derivo.grad(calls_counted)
    runs(capsys)
    gradient(0.6)
    assert runs(capsys) == [0.6, 1.2]
    assert_grad_matches(calls_counted, 0.6)


def calls_counted_in_a_loop(x, n):
    total = 0.0
    for i in range(n):
        total = total + counted(x + i, 2) * x
    return total


def test_a_call_in_a_loop_runs_once_per_trip_and_pops_its_residuals(capsys):
    gradient = derivo.grad(calls_counted_in_a_loop)
    runs(capsys)
    gradient(0.5, 4)
    assert runs(capsys) == [0.5, 1.5, 2.5, 3.5]
    assert_grad_matches(calls_counted_in_a_loop, 0.5, 4)
    source = gradient.source
    assert "counted_residuals = counted_forward(" in source
    assert "push(counted_residuals)" in source and "counted_residuals = pop()" in source


def running_noise(x, rs, n):
    for _ in range(n):
        x = x + 0.1 * np.tanh(x) * rs.randn()
    return x


def noise_in_a_loop(x, seed):
    rs = np.random.RandomState(seed)
    total = 0.0
    for i in range(3):
        total = total + running_noise(x * (i + 1), rs, 2) ** 2
    return total


def test_draws_of_a_callee_called_in_a_loop_are_the_ones_the_value_used():
    assert_close(derivo.grad(noise_in_a_loop)(0.8, 3), central(noise_in_a_loop, 0.8, 3),
                 rtol=1e-6)


def outer_noise(x, rs):
    y = x
    for _ in range(2):
        y = running_noise(y, rs, 2) * 1.1
    return y


def nested_noise(x, seed):
    return outer_noise(x, np.random.RandomState(seed)) ** 2


def test_a_callee_calling_a_callee_hands_on_the_residuals_of_both():
    assert_close(derivo.grad(nested_noise)(0.7, 1), central(nested_noise, 0.7, 1), rtol=1e-6)
    source = derivo.grad(nested_noise).source
    assert "running_noise_forward(" in source and "running_noise_backward(" in source


def early_exit(x, n):
    s = x
    for i in range(n):
        if s > 3.0:
            return s * 2.0
        s = s * 1.5 + math.cos(s)
    return s


def calls_early_exit(x):
    return early_exit(x, 6) * x


@pytest.mark.parametrize("x", [0.2, 2.5, 4.0])
def test_a_callee_that_returns_early(x):
    assert_grad_matches(calls_early_exit, x)


def accumulates_counted(x, n):
    total = 0.0
    for i in range(n):
        total += counted(x + i, 2) * x
    return total


@pytest.mark.parametrize("loops", ["stack", "checkpoint"])
def test_the_loop_strategies_over_a_call_in_a_loop(loops):
    gradient = derivo.grad(accumulates_counted, loops=loops)(0.5, 4)
    assert_close(gradient, central(accumulates_counted, 0.5, 4), rtol=1e-6)


def test_second_derivative_through_the_halves():
    def f(x):
        return counted(x, 3) * x
    hessian = derivo.hessian(f)(0.7)
    first = derivo.grad(f)
    assert_close(hessian, (first(0.7 + H) - first(0.7 - H)) / (2 * H), rtol=1e-5)


def test_the_saved_module_defines_the_halves_and_leaves_the_callee_out(tmp_path):
    gradient = derivo.grad(calls_counted)
    text = open(gradient.save(tmp_path / "counted_grad.py")).read()
    assert "def counted_forward(" in text and "def counted_backward(" in text
    assert "def counted(" not in text  # nothing calls it
    namespace = {}
    exec(compile(text, "counted_grad.py", "exec"), namespace)
    assert_close(namespace["calls_counted_grad"](0.6), gradient(0.6), rtol=1e-12)


def checkpointed_noise(x, seed):
    rs = np.random.RandomState(seed)
    s = x
    for _ in derivo.checkpointed(range(4), checkpoints=2):
        s = running_noise(s, rs, 1)
    return s


def test_a_draw_in_a_callee_of_a_checkpointed_loop_is_refused():
    # the loop's trips run again in the reverse sweep, and with them the callee's draws
    with pytest.raises(derivo.DerivoError, match=r"rs.randn\(\).*the trips of a checkpointed "
                       "loop again"):
        derivo.grad(checkpointed_noise)(0.5, 0)


def jittered(x, n):
    for _ in range(n):
        x = x + 0.1 * math.sin(x) * random.random()
    return x


def test_the_numba_backend_runs_a_callee_again_and_refuses_its_draws():
    pytest.importorskip("numba")
    with pytest.raises(derivo.DerivoError, match=r"random.random\(\).*runs 'jittered' again "
                       "in its reverse sweep"):
        derivo.grad(lambda x: jittered(x, 2) * x, backend="numba")(0.5)


def weighted_sines(X):
    s = 0.0
    for i in range(3):
        s = s * 0.5 + np.sum(np.sin(X) * X)  # its reverse reads X
    return s


def writes_after_the_call(X):
    X = X.copy()
    s = weighted_sines(X)  # its residuals hold X
    X[0] = 5.0
    return s + X[1]


def test_a_write_into_an_argument_after_the_call_is_undone_before_its_backward_half():
    X, direction = np.array([0.3, 0.7, 1.1]), np.array([0.4, -1.0, 0.7])
    gradient = derivo.grad(writes_after_the_call)(X)
    expected = (writes_after_the_call(X + H * direction) -
                writes_after_the_call(X - H * direction)) / (2 * H)
    assert_close(gradient @ direction, expected, rtol=1e-6)


def stepped(x, rate):
    for _ in range(2):
        x = x - rate * math.tanh(x)
    return x


def steps(x, rate, n):
    for _ in range(n):
        x = stepped(x, rate)
    return x * x


def test_a_call_in_a_loop_saves_its_residuals_not_its_arguments():
    assert_grad_matches(steps, 1.5, 0.3, 5, wrt=(0, 1))
    source = derivo.grad(steps, wrt=(0, 1)).source
    caller = source[source.index("def steps_grad"):]
    assert "push(x)" not in caller and "push(stepped_residuals)" in caller


def guarded(x, n):
    try:
        print("run", x)
        y = math.log(x)
    except ValueError:
        y = 0.0
    for _ in range(n):
        y = y * 0.5 + x
    return y


def calls_guarded(x):
    return guarded(x, 2) * x


def test_a_callee_with_a_try_runs_it_as_often_as_its_own_gradient_does(capsys):
    # (the statement form of try runs its body to see whether it raises: see contexts)
    own = derivo.grad(guarded)
    gradient = derivo.grad(calls_guarded)
    runs(capsys)
    own(2.0, 2)
    alone = runs(capsys)
    gradient(2.0)
    assert runs(capsys) == alone
    assert_grad_matches(calls_guarded, 2.0)


def two(x, n):
    a, b = x, 1.0
    for _ in range(n):
        a, b = a * 0.9 + b, math.sin(a) * b
    return a, b


def calls_two(x):
    p, q = two(x, 3)
    r = two(x * 2, 2)
    return p * q + r[0] - r[1]


@pytest.mark.parametrize("x", [0.7, -1.3])
def test_a_callee_returning_a_pair_hands_both_and_its_residuals(x):
    assert_grad_matches(calls_two, x)


def nested_power(x, d):
    print("level", d)
    if d == 0:
        return math.sin(x)
    return nested_power(x * 1.1, d - 1) * x


def test_each_level_of_a_recursion_runs_once(capsys):
    gradient = derivo.grad(nested_power)
    runs(capsys)
    gradient(0.5, 4)
    assert runs(capsys) == [4, 3, 2, 1, 0]
    assert_grad_matches(nested_power, 0.5, 4)
