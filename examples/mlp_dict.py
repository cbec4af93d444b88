"""A two-layer perceptron whose parameters live in a dict, trained by gradient
descent on a loss that closes over the data, as JAX and autograd users write it.

    params = {"W1": ..., "b1": ..., "W2": ..., "b2": ...}
    value, grads = derivo.value_and_grad(batch_loss)(params)   # grads: a dict too

The gradient is a dict with the same keys, in the same order; the generated code
reads params["W1"] as the loss does.  The dict may carry settings that are not
floats (here the activation's name): they pass through and get None.

    python examples/mlp_dict.py
"""
import numpy as np

import derivo


def predict(params, X):
    hidden = np.tanh(X @ params["W1"] + params["b1"])
    return hidden @ params["W2"] + params["b2"]


def mlp_loss(params, X, Y):
    residual = predict(params, X) - Y
    return 0.5 * np.sum(residual * residual) / X.shape[0]


mlp_loss_grad = derivo.grad(mlp_loss)


def init(n_in=3, n_hidden=8, n_out=2, seed=0):
    rng = np.random.default_rng(seed)
    return {"W1": rng.normal(size=(n_in, n_hidden)) / np.sqrt(n_in),
            "b1": np.zeros(n_hidden),
            "W2": rng.normal(size=(n_hidden, n_out)) / np.sqrt(n_hidden),
            "b2": np.zeros(n_out),
            "activation": "tanh"}


def data(n=64, n_in=3, n_out=2, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_in))
    teacher = rng.normal(size=(n_in, n_out))
    return X, np.sin(X @ teacher)


def train(params, X, Y, steps=300, rate=0.5):
    """Gradient descent on the loss of the whole batch, a closure over X and Y."""
    def batch_loss(p):
        return mlp_loss(p, X, Y)

    value_and_grad = derivo.value_and_grad(batch_loss)
    history = []
    for step in range(steps):
        value, grads = value_and_grad(params)
        history.append(value)
        params = {key: value if grads[key] is None else value - rate * grads[key]
                  for key, value in params.items()}
    return params, history


def central_difference(params, key, X, Y, h=1e-6):
    x = params[key]
    g = np.zeros(x.shape)
    for position in np.ndindex(x.shape):
        step = np.zeros(x.shape)
        step[position] = h
        up, down = dict(params), dict(params)
        up[key], down[key] = x + step, x - step
        g[position] = (mlp_loss(up, X, Y) - mlp_loss(down, X, Y)) / (2 * h)
    return g


def main():
    params = init()
    X, Y = data()
    grads = mlp_loss_grad(params, X, Y)
    print("gradient check, derivo vs central differences (h=1e-6):")
    for key, g in grads.items():
        if g is None:
            print(f"  d loss / d {key:10s} None (a {type(params[key]).__name__}, not a float)")
            continue
        fd = central_difference(params, key, X, Y)
        error = np.max(np.abs(g - fd)) / np.max(np.abs(fd))
        print(f"  d loss / d {key:10s} shape {str(g.shape):7s} max |derivo - fd| / max |fd| "
              f"= {error:.1e}")
    print()
    trained, history = train(params, X, Y)
    print("gradient descent, step size 0.5:")
    for step in range(0, len(history), 50):
        print(f"  step {step:3d}  loss {history[step]:.6f}")
    print(f"  final     loss {mlp_loss(trained, X, Y):.6f}")
    print()
    print("the generated gradient (mlp_loss_grad.source):")
    print()
    print(mlp_loss_grad.source)


if __name__ == "__main__":
    main()
