"""A dataclass or a NamedTuple built inside the differentiated function, its
fields read there or by a helper: each field's adjoint flows back to what built
it.  Checked against central differences; what derivo cannot follow (a
``__post_init__``, a field left to its default) is refused at the user's line."""

import dataclasses
import math
from typing import NamedTuple

import numpy as np
import pytest

import derivo
from derivo import DerivoError

from checks import assert_close

H = 1e-6


class Pair(NamedTuple):
    w: np.ndarray
    b: float


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: float
    name: str


@dataclasses.dataclass
class Checked:
    w: float

    def __post_init__(self):
        self.w = abs(self.w)


@dataclasses.dataclass
class WithDefault:
    w: float
    b: float = 1.0


def apply(layer, x):
    return np.tanh(layer.w * x + layer.b)


def built_by_keyword_and_position(x, b):
    pair = Pair(x * 2.0, b)
    layer = Layer(w=x, b=b * b, name="first")
    return float(np.sum(pair.w * layer.w)) + pair.b * layer.b + pair[1]


def built_and_given_to_a_helper(x, b):
    layer = Layer(np.sin(x), b, "hidden")
    return float(np.sum(apply(layer, x)))


def built_in_a_loop(x, b):
    total = 0.0
    for i in range(3):
        pair = Pair(x * i, b + i)
        total = total + float(np.sum(pair.w ** 2)) * pair.b
    return total


class Line(NamedTuple):
    slope: float
    offset: float


def built_of_floats(x, b):
    line = Line(float(np.sum(x)) * b, b)
    return line.slope * line.offset + line[0]


def built_as_aux(x, b):
    pair = Pair(x, b)
    return float(np.sum(pair.w * pair.b)), pair


@pytest.mark.parametrize("f", [built_by_keyword_and_position, built_and_given_to_a_helper,
                               built_in_a_loop, built_of_floats])
def test_a_record_built_inside(f):
    x, b = np.array([0.3, -0.7, 1.1]), 0.8
    gx, gb = derivo.grad(f, wrt=(0, 1))(x, b)
    for i in range(3):
        step = np.zeros(3)
        step[i] = H
        assert_close(gx[i], (f(x + step, b) - f(x - step, b)) / (2 * H), rtol=1e-6)
    assert_close(gb, (f(x, b + H) - f(x, b - H)) / (2 * H), rtol=1e-6)
    value, gradient = derivo.value_and_grad(f, wrt=1)(x, b)
    assert_close(value, f(x, b))
    assert_close(gradient, gb)


def test_a_record_built_inside_comes_back_as_aux():
    x = np.array([0.3, -0.7])
    gradient, pair = derivo.grad(built_as_aux, has_aux=True)(x, 0.8)
    np.testing.assert_allclose(gradient, [0.8, 0.8])
    assert type(pair) is Pair and pair.b == 0.8


def with_a_post_init(x):
    return Checked(x).w * x


def with_a_default_left_out(x):
    return WithDefault(x).w * x


@pytest.mark.parametrize("f", [with_a_post_init, with_a_default_left_out])
def test_a_record_derivo_cannot_follow_is_refused(f):
    with pytest.raises(DerivoError) as info:
        derivo.grad(f)(0.5)
    assert info.value.lineno == f.__code__.co_firstlineno + 1
