"""A call of a function a dict holds, by a key the code computes (derivo.dispatch):
a branch over the dict's keys, made again when the dict gains or loses one."""

import numpy as np
import pytest

import derivo

ACTIVATIONS = {"tanh": np.tanh, "sin": np.sin}


def activated_energy(x, name):
    return np.sum(ACTIVATIONS[name](x) ** 2)


@pytest.fixture
def activations():
    kept = dict(ACTIVATIONS)
    yield ACTIVATIONS
    ACTIVATIONS.clear()
    ACTIVATIONS.update(kept)


def test_a_key_added_after_the_first_call_is_called(activations):
    x = np.array([0.3, 0.7])
    grad = derivo.grad(activated_energy)
    np.testing.assert_allclose(grad(x, "tanh"), 2 * np.tanh(x) / np.cosh(x) ** 2)
    activations["cube"] = lambda z: z ** 3
    np.testing.assert_allclose(grad(x, "cube"), 6 * x ** 5)
    _, tangent = derivo.jvp(activated_energy, (x, "cube"), (np.ones(2), None))
    assert tangent == pytest.approx(np.sum(6 * x ** 5))


def test_a_key_removed_after_the_first_call_raises_as_the_lookup_does(activations):
    x = np.array([0.3, 0.7])
    grad = derivo.grad(activated_energy)
    np.testing.assert_allclose(grad(x, "sin"), 2 * np.sin(x) * np.cos(x))
    del activations["sin"]
    with pytest.raises(KeyError):
        grad(x, "sin")
    np.testing.assert_allclose(grad(x, "tanh"), 2 * np.tanh(x) / np.cosh(x) ** 2)


def test_a_closure_s_dict_is_read_as_it_is_at_each_call():
    table = {"square": lambda z: z * z}

    def energy(x, name):
        return table[name](x) * 3.0

    grad = derivo.grad(energy)
    assert grad(2.0, "square") == pytest.approx(12.0)
    table["exp"] = np.exp
    assert grad(2.0, "exp") == pytest.approx(3.0 * np.exp(2.0))
