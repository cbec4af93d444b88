"""The container examples' gradients (examples/mlp_dict.py, a dict of parameters;
examples/linear_dataclass.py, a dataclass) match central differences, come back
in their argument's structure, and training lowers the loss."""

import dataclasses

import numpy as np

from examples import linear_dataclass, mlp_dict


def test_the_dict_mlp_gradient_is_a_dict_that_matches_finite_differences():
    params = mlp_dict.init()
    X, Y = mlp_dict.data()
    grads = mlp_dict.mlp_loss_grad(params, X, Y)
    assert list(grads) == list(params) and grads["activation"] is None
    for key in ("W1", "b1", "W2", "b2"):
        np.testing.assert_allclose(grads[key], mlp_dict.central_difference(params, key, X, Y),
                                   rtol=1e-5, atol=1e-8)


def test_training_the_dict_mlp_through_a_closure_lowers_the_loss():
    params = mlp_dict.init()
    X, Y = mlp_dict.data()
    trained, history = mlp_dict.train(params, X, Y, steps=60)
    assert history[-1] < 0.5 * history[0]
    assert trained["activation"] == "tanh" and trained["W1"].shape == params["W1"].shape
    assert mlp_dict.mlp_loss(trained, X, Y) < history[-1]


def test_the_dataclass_gradient_is_a_model_that_matches_finite_differences():
    model, X, onehot = linear_dataclass.example_args()
    rng = np.random.default_rng(3)
    model = dataclasses.replace(model, weights=rng.normal(size=model.weights.shape),
                                bias=rng.normal(size=model.bias.shape))
    gradient = linear_dataclass.model_loss_grad(model, X, onehot)
    assert type(gradient) is linear_dataclass.Model and gradient.classes is None
    for field in ("weights", "bias", "l2"):
        np.testing.assert_allclose(
            getattr(gradient, field),
            linear_dataclass.central_difference(model, field, X, onehot), rtol=1e-5, atol=1e-8)
