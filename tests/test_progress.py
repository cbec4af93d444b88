"""A slow transform says what it did through the "derivo" logger."""

import logging
import math

import derivo
from derivo import transform


def f(x, y):
    return math.log(x) + x * y - math.sin(y)


def test_each_transform_is_logged_and_a_slow_one_at_info(caplog, monkeypatch):
    caplog.set_level(logging.DEBUG, logger="derivo")
    monkeypatch.setattr(transform, "SLOW_SECONDS", -1.0)   # every transform counts as slow

    def g(x):
        return math.cos(x) * x

    derivo.grad(g)
    messages = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "derivo"]
    assert (logging.DEBUG, "transforming the grad of " + g.__qualname__) in messages
    assert any(level == logging.INFO and message.startswith(
        "transformed the grad of " + g.__qualname__ + " in ") for level, message in messages)


def test_a_quick_transform_stays_at_debug(caplog):
    caplog.set_level(logging.INFO, logger="derivo")

    def h(x):
        return x * x + 1.0

    derivo.grad(h)
    assert not [r for r in caplog.records if r.name == "derivo"]


def test_a_long_hessian_says_how_far_it_is(caplog, monkeypatch):
    import numpy as np
    from derivo import jacobians
    caplog.set_level(logging.INFO, logger="derivo")
    monkeypatch.setattr(jacobians, "SLOW_SECONDS", -1.0)   # every computation counts as long
    clock = iter(range(0, 1000, 2))
    monkeypatch.setattr(jacobians.time, "perf_counter", lambda: float(next(clock)))

    def energy(x):
        return np.sum(x ** 3)

    hessian = derivo.hessian(energy)(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(hessian, np.diag([6.0, 12.0, 18.0]))
    said = [r.getMessage() for r in caplog.records if r.name == "derivo"
            and "tangent passes" in r.getMessage()]
    assert said[-1].startswith("Hessian of " + energy.__qualname__ + ": 3 of 3 tangent passes")
