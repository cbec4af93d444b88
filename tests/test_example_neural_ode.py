"""examples/neural_ode.py: the gradient of the closure loss, through a solver given
its dynamics, is a dict that matches central differences, and training fits."""

import numpy as np

import derivo
from examples import neural_ode

H = 1e-6


def test_the_gradient_is_a_dict_that_matches_central_differences():
    y0, ts, observed = neural_ode.data(n=12)
    loss = neural_ode.make_loss(y0, ts, observed)
    params = neural_ode.init(hidden=4)
    grads = derivo.grad(loss)(params)
    assert list(grads) == list(params)
    for key, value in params.items():
        expected = np.zeros_like(value)
        for i in np.ndindex(value.shape):
            step = np.zeros_like(value)
            step[i] = H
            expected[i] = (loss({**params, key: value + step}) -
                           loss({**params, key: value - step})) / (2 * H)
        np.testing.assert_allclose(grads[key], expected, rtol=1e-5, atol=1e-8)


def test_training_fits_the_oscillation():
    y0, ts, observed = neural_ode.data()
    loss = neural_ode.make_loss(y0, ts, observed)
    params, history = neural_ode.train(neural_ode.init(), loss, steps=300)
    assert loss(params) < 0.01 * history[0]
