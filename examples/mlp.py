"""The multilayer perceptron of Example 8.1.1 in the reference chapter, trained by gradient descent.

One hidden layer with the softplus activation sigma(z) = log(1 + e^z), a linear output layer and
the squared loss, averaged over a batch of examples (one per row of X):

    s1 = sigma(X A1^T + b1)        (batch, hidden); b1 is added to every row
    s2 = s1 A2^T + b2              (batch, out)
    loss = 1/2 * mean over the batch of ||s2 - Y||^2

derivo writes the reverse sweep of Section 8.1.2 as NumPy code: r2 = s2 - Y,
r1 = A2^T r2 (times sigma' at the stored activation), the weight adjoints are outer products
with the stored layer inputs and the bias adjoints are sums over the batch.

    python examples/mlp.py
"""
import numpy as np

import derivo


def softplus(z):
    return np.log1p(np.exp(z))


def loss(A1, b1, A2, b2, X, Y):
    s1 = softplus(X @ A1.T + b1)
    s2 = s1 @ A2.T + b2
    r = s2 - Y
    return 0.5 * np.sum(r * r) / X.shape[0]


loss_grad = derivo.grad(loss, wrt=("A1", "b1", "A2", "b2"))

PARAMETERS = ("A1", "b1", "A2", "b2")


def problem(n_in=3, n_hidden=4, n_out=2, batch=16, seed=0):
    """Deterministic weights and a regression target made by a different random network."""
    rng = np.random.default_rng(seed)
    A1 = rng.normal(size=(n_hidden, n_in)) / np.sqrt(n_in)
    b1 = 0.1 * rng.normal(size=n_hidden)
    A2 = rng.normal(size=(n_out, n_hidden)) / np.sqrt(n_hidden)
    b2 = 0.1 * rng.normal(size=n_out)
    X = rng.normal(size=(batch, n_in))
    teacher = rng.normal(size=(n_out, n_in))
    Y = np.sin(X @ teacher.T)
    return A1, b1, A2, b2, X, Y


def central_difference(f, args, index, h=1e-6):
    """d f / d args[index], one element at a time."""
    x = args[index]
    g = np.zeros(x.shape)
    for position in np.ndindex(x.shape):
        step = np.zeros(x.shape)
        step[position] = h
        up, down = list(args), list(args)
        up[index] = x + step
        down[index] = x - step
        g[position] = (f(*up) - f(*down)) / (2 * h)
    return g


def main():
    args = problem()
    A1, b1, A2, b2, X, Y = args
    print(f"MLP {X.shape[1]} -> {A1.shape[0]} (softplus) -> {A2.shape[0]}, batch {X.shape[0]}, "
          f"squared loss {loss(*args):.6f}")
    print()
    print("gradient check, derivo vs central differences (h=1e-6):")
    for index, (name, g) in enumerate(zip(PARAMETERS, loss_grad(*args))):
        fd = central_difference(loss, args, index)
        err = np.max(np.abs(g - fd)) / np.max(np.abs(fd))
        print(f"  d loss / d {name:2s} shape {str(g.shape):7s} max |derivo - fd| / max |fd| = {err:.1e}")
    print()

    print("gradient descent, step size 0.2:")
    params = list(args[:4])
    for step in range(201):
        grads = loss_grad(*params, X, Y)
        if step % 25 == 0:
            print(f"  step {step:3d}  loss {loss(*params, X, Y):.6f}")
        params = [p - 0.2 * g for p, g in zip(params, grads)]
    print()
    print("the generated gradient (loss_grad.source):")
    print()
    print(loss_grad.source)


if __name__ == "__main__":
    main()
