"""Softmax regression whose parameters are a dataclass, read by attribute.

    @dataclasses.dataclass
    class Model:
        weights: np.ndarray
        bias: np.ndarray
        classes: int          # not a float: passes through, its gradient is None

    gradient = derivo.grad(model_loss)(model, X, onehot)    # a Model too

The gradient is an instance of the same dataclass: gradient.weights has the
shape of model.weights.  The generated code reads model.weights as the loss does.

    python examples/linear_dataclass.py
"""
import dataclasses

import numpy as np

import derivo


@dataclasses.dataclass
class Model:
    weights: np.ndarray
    bias: np.ndarray
    classes: int
    l2: float = 1e-3


def log_softmax(scores):
    shifted = scores - np.max(scores, axis=1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))


def model_loss(model, X, onehot):
    scores = X @ model.weights + model.bias
    fit = -np.sum(onehot * log_softmax(scores)) / X.shape[0]
    return fit + model.l2 * np.sum(model.weights * model.weights)


model_loss_grad = derivo.grad(model_loss)


def example_args(n=90, n_in=2, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=2.0, size=(classes, n_in))
    labels = np.arange(n) % classes
    X = centres[labels] + rng.normal(size=(n, n_in))
    model = Model(np.zeros((n_in, classes)), np.zeros(classes), classes)
    return model, X, np.eye(classes)[labels]


def central_difference(model, field, X, onehot, h=1e-6):
    x = np.asarray(getattr(model, field), dtype=float)
    g = np.zeros(x.shape)
    for position in np.ndindex(x.shape):
        step = np.zeros(x.shape)
        step[position] = h
        up = dataclasses.replace(model, **{field: (x + step) if x.ndim else float(x + step)})
        down = dataclasses.replace(model, **{field: (x - step) if x.ndim else float(x - step)})
        g[position] = (model_loss(up, X, onehot) - model_loss(down, X, onehot)) / (2 * h)
    return g


def main():
    model, X, onehot = example_args()
    rng = np.random.default_rng(1)
    start = dataclasses.replace(model, weights=rng.normal(size=model.weights.shape),
                                bias=rng.normal(size=model.bias.shape))
    gradient = model_loss_grad(start, X, onehot)
    print(f"the gradient is a {type(gradient).__name__}; its classes field is "
          f"{gradient.classes!r}")
    print("gradient check, derivo vs central differences (h=1e-6):")
    for field in ("weights", "bias", "l2"):
        fd = central_difference(start, field, X, onehot)
        error = np.max(np.abs(getattr(gradient, field) - fd)) / np.max(np.abs(fd))
        print(f"  d loss / d {field:8s} max |derivo - fd| / max |fd| = {error:.1e}")
    print()
    print("gradient descent on weights and bias, step size 0.5:")
    for step in range(201):
        gradient = model_loss_grad(model, X, onehot)
        if step % 50 == 0:
            accuracy = np.mean(np.argmax(X @ model.weights + model.bias, axis=1) ==
                               np.argmax(onehot, axis=1))
            print(f"  step {step:3d}  loss {model_loss(model, X, onehot):.6f}  accuracy {accuracy:.2f}")
        model = dataclasses.replace(model, weights=model.weights - 0.5 * gradient.weights,
                                    bias=model.bias - 0.5 * gradient.bias)
    print()
    print("the generated gradient (model_loss_grad.source):")
    print()
    print(model_loss_grad.source)


if __name__ == "__main__":
    main()
