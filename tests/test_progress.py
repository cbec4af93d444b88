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
