"""``with`` blocks whose manager touches no differentiated value: their body is
differentiated and runs inside the manager; ``try`` is refused with what to
write instead."""

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


def guarded(x):
    try:
        y = math.log(x)
    except ValueError:
        y = x
    return y


def test_try_is_refused_with_what_to_write():
    with pytest.raises(DerivoError) as info:
        derivo.grad(guarded)(0.5)
    message = str(info.value)
    assert info.value.lineno == guarded.__code__.co_firstlineno + 1
    assert "if" in message and "try" in message
