"""A saved module of a derivative taken with respect to containers read by name
(a dataclass, a NamedTuple, a dict of them) returns gradients of the same
structure and types as the derivative does, in grad and value_and_grad, with
has_aux and with several arguments."""

import dataclasses
import importlib.util
from typing import NamedTuple

import numpy as np
import pytest

import derivo


@dataclasses.dataclass
class Params:
    w: np.ndarray
    b: float


class Pair(NamedTuple):
    w: np.ndarray
    b: float


def loss(p, x):
    return np.sum((x * p.w + p.b) ** 2)


def nested_loss(p, x):
    return np.sum((x * p["layer"].w + p["layer"].b) ** 2) + p["scale"] ** 2


def loss_and_fit(p, x):
    fit = x * p.w + p.b
    return np.sum(fit ** 2), fit


def two_losses(p, q):
    return np.sum(p.w * q["w"]) + p.b * q["b"]


def _saved(derivative, tmp_path, name):
    path = tmp_path / "saved_{}.py".format(name)
    derivative.save(str(path))
    spec = importlib.util.spec_from_file_location("saved_" + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, derivative.__name__)


def _assert_same(saved, live):
    assert type(saved) is type(live)
    if isinstance(live, dict):
        assert set(saved) == set(live)
        for key in live:
            _assert_same(saved[key], live[key])
    elif dataclasses.is_dataclass(live):
        for field in dataclasses.fields(live):
            _assert_same(getattr(saved, field.name), getattr(live, field.name))
    elif isinstance(live, tuple):
        assert len(saved) == len(live)
        for a, b in zip(saved, live):
            _assert_same(a, b)
    else:
        np.testing.assert_allclose(saved, live)


X = np.array([1.0, 2.0])
CASES = {
    "dataclass": (derivo.grad(loss), (Params(np.array([0.5, 0.2]), 0.1), X)),
    "namedtuple": (derivo.grad(loss), (Pair(np.array([0.5, 0.2]), 0.1), X)),
    "nested": (derivo.grad(nested_loss),
               ({"layer": Params(np.array([0.5, 0.2]), 0.1), "scale": 2.0}, X)),
    "value_and_grad": (derivo.value_and_grad(loss), (Params(np.array([0.5, 0.2]), 0.1), X)),
    "has_aux": (derivo.grad(loss_and_fit, has_aux=True), (Params(np.array([0.5, 0.2]), 0.1), X)),
    "two": (derivo.grad(two_losses, wrt=(0, 1)),
            (Params(np.array([0.5, 0.2]), 0.1), {"w": np.array([1.0, -1.0]), "b": 3.0})),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_saved_module_gives_the_gradients_structure(case, tmp_path):
    derivative, args = CASES[case]
    live = derivative(*args)
    _assert_same(_saved(derivative, tmp_path, case)(*args), live)
