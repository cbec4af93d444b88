"""What a helper writes into is read from its statement form once and kept: a name the
helper reads that holds something else later makes the summary anew."""

import numpy as np
import pytest

import derivo
from derivo import memory
from derivo.errors import DerivoError

from checks import assert_close, numeric_grad


def writes_first(y):
    y[0] = 1.0


def reads_only(y):
    return y


OPERATION = writes_first


def apply_operation(y):
    for _ in range(1):  # a loop: the helper is read, not inlined
        OPERATION(y)


def loss(a, c):
    y = a * c
    apply_operation(y)
    return np.sum(y * y)


def test_a_summary_follows_what_the_helper_reads_now():
    global OPERATION
    a = np.array([0.3, 0.5, 0.7])
    try:
        with pytest.raises(DerivoError, match="may change"):
            derivo.grad(loss, wrt=1)(a.copy(), 1.2)
        OPERATION = reads_only
        assert_close(derivo.grad(loss, wrt=1)(a.copy(), 1.2),
                     numeric_grad(loss, (a.copy(), 1.2), wrt=1), rtol=1e-5)
        OPERATION = writes_first
        with pytest.raises(DerivoError, match="may change"):
            derivo.grad(loss, wrt=1)(a.copy(), 1.2)
    finally:
        OPERATION = writes_first


def test_a_summary_is_made_once_per_function():
    made = []

    @memory.summarized
    def summary(func):
        made.append(func)
        return func.__name__

    assert summary(reads_only) == summary(reads_only) == "reads_only"
    assert made == [reads_only]


def logs_all(*values):
    return None


def writes_the_rest(y, *rest):
    for r in rest:
        r[0] = 0.0


def returns_the_first(*values):
    return values[0]


def logged(a, c):
    y = a * c
    for _ in range(1):  # a loop: the helper is read, not inlined
        logs_all(y, c)
    return np.sum(y * y)


def rest_written(a, c):
    y = a * c
    z = a * 2.0
    for _ in range(1):
        writes_the_rest(y, z)
    return np.sum(y * z)


def test_a_summary_reads_star_args_as_a_parameter_holding_what_is_given():
    from derivo.writes import parameter_writes
    assert parameter_writes(logs_all, True) == set()
    assert parameter_writes(writes_the_rest, True) == {"rest"}
    assert memory.returned_parameters(returns_the_first) == {"values"}
    a = np.array([0.3, 0.5, 0.7])
    assert_close(derivo.grad(logged, wrt=1)(a.copy(), 1.2),
                 numeric_grad(logged, (a.copy(), 1.2), wrt=1), rtol=1e-5)
    with pytest.raises(DerivoError, match="'writes_the_rest\\(y, z\\)': it may change 'z'"):
        derivo.grad(rest_written, wrt=1)(a.copy(), 1.2)
