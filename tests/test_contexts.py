"""``with`` blocks whose manager touches no differentiated value: their body is
differentiated and runs inside the manager.  ``try``: the path taken (the body,
or the handler of what it raised) is recorded like a branch and the adjoint
follows it."""

import contextlib
import math
import threading
import time
import warnings

import numpy as np
import pytest

import derivo
from derivo import DerivoError

from checks import assert_close
from test_functions_as_values import assert_all_modes, fd


def quiet_log(x, a):
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(x * x + a)
    return float(y) * x


def caught(x, a):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = math.sin(x) * a
    return y * y


class Timer:
    """A manager that records, outside the derivative, how long its block took."""

    def __init__(self):
        self.entered = self.exited = 0

    def __enter__(self):
        self.entered += 1
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.exited += 1
        self.seconds = time.perf_counter() - self.start
        return False


TIMER = Timer()
LOCK = threading.Lock()


def timed(x, a):
    with TIMER as clock, LOCK:
        y = math.exp(-x * a) * x
    assert clock.entered > 0
    return y


def returns_inside(x, a):
    with contextlib.nullcontext() as unused:
        z = x * a
        return math.cos(z) + z * z


def in_a_loop(x, a):
    total = 0.0
    for i in range(4):
        with np.errstate(over="ignore"):
            total = total + math.sin(total + x * a * i)
    return total


@pytest.mark.parametrize("f", [quiet_log, caught, timed, returns_inside, in_a_loop])
@pytest.mark.parametrize("x", [0.4, 1.3])
def test_the_body_of_a_with_block_is_differentiated_in_every_mode(f, x):
    assert_all_modes(f, x, 0.7, loops=("stack", "checkpoint"))


def test_the_manager_runs_around_the_body_in_the_primal_sweep():
    entered = TIMER.entered
    assert_close(derivo.grad(timed)(0.4, 0.7), fd(lambda v: timed(v, 0.7), 0.4))
    assert TIMER.entered == TIMER.exited == entered + 1 + 2  # the derivative's run, fd's two


def warns_inside(x):
    with np.errstate(divide="raise"):
        y = np.log(x)
    return np.sum(y)


def test_the_manager_is_in_force_in_the_primal():
    with pytest.raises(FloatingPointError):
        derivo.grad(warns_inside)(np.array([0.0, 1.0]))
    assert np.allclose(derivo.grad(warns_inside)(np.array([2.0, 4.0])), [0.5, 0.25])


def source_of_quiet_log():
    return derivo.grad(quiet_log).source


def test_the_generated_code_enters_and_exits_the_manager():
    source = source_of_quiet_log()
    assert "errstate_context = np.errstate(" in source
    assert source.index("errstate_context.__enter__()") < \
        source.index("errstate_context.__exit__(None, None, None)")


def guarded(x, a):
    try:
        y = math.log(x) * a
    except ValueError:
        y = x * a * a
    return y * x


def solved(A, b):
    try:
        M = np.linalg.inv(A)
    except np.linalg.LinAlgError as error:
        assert "ingular" in str(error)
        M = np.linalg.pinv(A)
    else:
        M = M * 2.0
    finally:
        scale = 3.0
    return np.sum(M @ b) * scale


@pytest.mark.parametrize("x", [0.5, -0.5, 2.0])
def test_the_path_a_try_takes_is_differentiated_in_every_mode(x):
    assert_all_modes(guarded, x, 0.7)


@pytest.mark.parametrize("A", [np.array([[2.0, 1.0], [1.0, 3.0]]),
                               np.array([[1.0, 2.0], [2.0, 4.0]])])  # singular: pinv
def test_a_handler_of_a_library_exception_with_else_and_finally(A):
    b = np.array([1.0, 2.0])
    gradient = derivo.grad(solved, wrt=1)(A, b)
    assert np.allclose(gradient, fd(lambda v: solved(A, v), b), rtol=1e-6)


def reads_what_the_body_assigned(x):
    y = 1.0
    try:
        y = x * 2.0
        z = math.log(x)
    except ValueError:
        z = y
    return z


def writes_in_the_body(x, xs):
    try:
        xs.append(x)
    except ValueError:
        pass
    return x


@pytest.mark.parametrize("f, args, marker", [(reads_what_the_body_assigned, (0.5,), 6),
                                             (writes_in_the_body, (0.5, []), 2)])
def test_a_try_derivo_cannot_follow_is_refused_at_its_line(f, args, marker):
    with pytest.raises(DerivoError) as info:
        derivo.grad(f)(*args)
    assert info.value.lineno == f.__code__.co_firstlineno + marker
    assert "try" in str(info.value) or "except" in str(info.value)
