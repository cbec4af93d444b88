"""A trained network kept as a list of layer objects, and the gradient of its loss with
respect to the input: which pixels of x the prediction is most sensitive to.

    python examples/layer_objects.py

derivo reads `for layer in self.layers: x = layer.forward(x)` as a branch over the classes
of the layers the model holds, each arm the class's `forward` with the layer as `self`; a
layer whose `forward` calls what the object says (`ACTIVATIONS[self.activation]`) is called
as itself.  The `functools.partial` the loss makes is called as the function it wraps.
"""
import functools

import numpy as np

import derivo

ACTIVATIONS = {"tanh": np.tanh, "softplus": lambda z: np.log1p(np.exp(z))}


class Dense:
    def __init__(self, W, b, activation):
        self.W, self.b, self.activation = W, b, activation

    def forward(self, x):
        return ACTIVATIONS[self.activation](self.W @ x + self.b)


class Residual:
    def __init__(self, W):
        self.W = W

    def forward(self, x):
        return x + 0.5 * np.tanh(self.W @ x)


class Model:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x


def huber(delta, r):
    small = np.abs(r) <= delta
    return np.where(small, 0.5 * r * r, delta * (np.abs(r) - 0.5 * delta))


def make_model(n, seed=0):
    rng = np.random.default_rng(seed)
    return Model([Dense(rng.normal(size=(n, n)) / np.sqrt(n), np.zeros(n), "tanh"),
                  Residual(rng.normal(size=(n, n)) / np.sqrt(n)),
                  Dense(rng.normal(size=(1, n)) / np.sqrt(n), np.zeros(1), "softplus")])


MODEL = make_model(4)


def loss(x, target):
    robust = functools.partial(huber, 0.5)
    return np.sum(robust(MODEL(x) - target))


saliency = derivo.grad(loss)


def central_differences(f, x, h=1e-6):
    steps = np.eye(x.size) * h
    return np.array([(f(x + step) - f(x - step)) / (2 * h) for step in steps])


if __name__ == "__main__":
    x = np.array([0.5, -1.0, 2.0, 0.1])
    gradient = saliency(x, 3.0)
    print("loss", round(float(loss(x, 3.0)), 6))
    print("d loss / d x", np.round(gradient, 6))
    error = np.max(np.abs(gradient - central_differences(lambda v: loss(v, 3.0), x)))
    print("largest difference from central differences", "%.1e" % error)
