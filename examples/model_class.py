"""A model class trained by gradient descent, as people write one.

A small regression network is an object: it knows its activation by name (looked up in a dict of
functions, one of them a lambda), ``predict`` uses it, and ``loss`` calls ``self.predict`` and
adds a penalty.  Training differentiates the bound method ``model.loss`` with respect to the
weights; a second model trains with a loss written as a closure over the data, with a lambda
inside.  derivo reads which functions run from the model (its class, ``self.activation``) and
inlines them: the generated gradient reads like ``loss`` with ``predict`` and the activation
pasted in.  Changing ``model.activation`` makes derivo transform again.

    python examples/model_class.py
"""
import numpy as np

import derivo

ACTIVATIONS = {
    "tanh": np.tanh,
    "softplus": lambda z: np.log1p(np.exp(z)),
    "swish": lambda z: z / (1.0 + np.exp(-z)),
}


class Regressor:
    """One hidden layer: ``act(X @ W) @ v``, with an L2 penalty on the weights."""

    def __init__(self, activation="tanh", l2=1e-3):
        self.activation = activation
        self.l2 = l2

    def predict(self, W, v, X):
        act = ACTIVATIONS[self.activation]
        return act(X @ W) @ v

    def penalty(self, W, v):
        return self.l2 * (np.sum(W * W) + np.sum(v * v))

    def loss(self, W, v, X, y):
        r = self.predict(W, v, X) - y
        return np.mean(r * r) + self.penalty(W, v)


def mean_squared_error(W, v, X, y, activation="tanh"):
    """The loss of a model written as a function: the activation is a parameter."""
    act = ACTIVATIONS[activation]
    r = act(X @ W) @ v - y
    return np.mean(r * r)


mean_squared_error_grad = derivo.grad(mean_squared_error, wrt=("W", "v"))


def closure_loss(model, X, y):
    """The loss of ``model`` on (X, y) as a function of the weights alone."""
    scale = 1.0 / len(y)
    squared = lambda r: r * r  # noqa: E731

    def loss(W, v):
        r = model.predict(W, v, X) - y
        return scale * np.sum(squared(r)) + model.penalty(W, v)
    return loss


def problem(n=64, d=3, hidden=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X @ np.array([1.0, -2.0, 0.5])[:d])
    W = rng.normal(size=(d, hidden)) / np.sqrt(d)
    v = rng.normal(size=hidden) / np.sqrt(hidden)
    return W, v, X, y


def train(gradient, W, v, steps=300, rate=0.1):
    for _ in range(steps):
        gW, gv = gradient(W, v)
        W, v = W - rate * gW, v - rate * gv
    return W, v


def main():
    W0, v0, X, y = problem()
    for name in ACTIVATIONS:
        model = Regressor(name)
        gradient = derivo.grad(model.loss, wrt=("W", "v"))
        W, v = train(lambda W, v: gradient(W, v, X, y), W0, v0)
        print(f"{name:9s} loss {model.loss(W0, v0, X, y):.4f} -> {model.loss(W, v, X, y):.4f}")
    model = Regressor("softplus")
    step = derivo.value_and_grad(closure_loss(model, X, y), wrt=("W", "v"))
    W, v = W0, v0
    for i in range(301):
        value, (gW, gv) = step(W, v)
        if i % 100 == 0:
            print(f"closure loss, step {i:3d}: {value:.4f}")
        W, v = W - 0.1 * gW, v - 0.1 * gv
    print()
    print(step.source)


if __name__ == "__main__":
    main()
