"""A small regression network written as JAX users write one: its parameters a list of
[W, b] pairs, each layer's nonlinearity looked up by name in a dict of lambdas, and the
weights' L2 penalty over the columns of zip(*params).

    python examples/mlp_activations.py

derivo reads `for (W, b), name in zip(params, names)` and `ACTIVATIONS[name](...)` as they
are: the dict lookup becomes a branch over its keys, and the gradient of `params` comes back
as a list of [dW, db] pairs, the structure it was given.
"""
import numpy as np

import derivo

ACTIVATIONS = {
    "tanh": np.tanh,
    "relu": lambda z: np.maximum(z, 0.0),
    "softplus": lambda z: np.log1p(np.exp(z)),
    "linear": lambda z: z,
}


def init_params(sizes, seed=0):
    rng = np.random.default_rng(seed)
    return [[rng.normal(scale=1.0 / np.sqrt(m), size=(m, n)), np.zeros(n)]
            for m, n in zip(sizes[:-1], sizes[1:])]


def predict(params, names, x):
    for (W, b), name in zip(params, names):
        x = ACTIVATIONS[name](x @ W + b)
    return x


def loss(params, names, x, y, penalty=1e-3):
    weights, biases = zip(*params)
    fit = np.mean((predict(params, names, x)[:, 0] - y) ** 2)
    return fit + penalty * sum(np.sum(W * W) for W in weights)


activations_loss_grad = derivo.grad(loss)


def train(x, y, names, steps=300, rate=0.1):
    params = init_params([x.shape[1], 16, 16, 1])
    for _ in range(steps):
        grads = activations_loss_grad(params, names, x, y)
        params = [[W - rate * dW, b - rate * db] for (W, b), (dW, db) in zip(params, grads)]
    return params


if __name__ == "__main__":
    rng = np.random.default_rng(1)
    x = rng.uniform(-2.0, 2.0, size=(200, 1))
    y = np.sin(2.0 * x[:, 0]) + 0.05 * rng.normal(size=200)
    names = ("tanh", "softplus", "linear")
    start = init_params([1, 16, 16, 1])
    print("loss before", round(float(loss(start, names, x, y)), 4))
    params = train(x, y, names)
    print("loss after ", round(float(loss(params, names, x, y)), 4))
    grads = activations_loss_grad(params, names, x, y)
    print("gradient structure", [(dW.shape, db.shape) for dW, db in grads])
