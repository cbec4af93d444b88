"""Logistic regression and softmax cross-entropy, with logsumexp written in NumPy.

Binary logistic regression with labels y in {0, 1} and logits z = X w + b:

    loss = mean(log(1 + e^z) - y z)          (log(1 + e^z) = logaddexp(0, z), computed stably)

Multiclass softmax regression with integer labels and logits Z = X W + b, one row per example:

    logsumexp(Z) = m + log(sum(exp(Z - m)))   with m the row maximum (so exp never overflows)
    loss = mean(logsumexp(Z) - Z[i, label_i])

The labels are integer arrays: derivo reads them (for indexing) and does not differentiate them.

    python examples/logistic.py
"""
import numpy as np

import derivo


def logistic_loss(w, b, X, y):
    z = X @ w + b
    return np.mean(np.logaddexp(0.0, z) - y * z)


def logsumexp(Z):
    m = np.max(Z, axis=1, keepdims=True)
    return m[:, 0] + np.log(np.sum(np.exp(Z - m), axis=1))


def softmax_cross_entropy(W, b, X, labels):
    Z = X @ W + b
    picked = Z[np.arange(X.shape[0]), labels]
    return np.mean(logsumexp(Z) - picked)


logistic_grad = derivo.grad(logistic_loss, wrt=("w", "b"))
softmax_grad = derivo.value_and_grad(softmax_cross_entropy, wrt=("W", "b"))


def binary_problem(n=200, d=3, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    true_w = np.array([2.0, -1.0, 0.5])[:d]
    y = (X @ true_w + 0.3 * rng.normal(size=n) > 0).astype(float)
    return np.zeros(d), 0.0, X, y


def multiclass_problem(n=300, d=4, k=3, seed=2):
    rng = np.random.default_rng(seed)
    centers = 2.0 * rng.normal(size=(k, d))
    labels = rng.integers(0, k, size=n)
    X = centers[labels] + rng.normal(size=(n, d))
    return np.zeros((d, k)), np.zeros(k), X, labels


def central_difference(f, args, index, h=1e-6):
    x = args[index]
    if isinstance(x, float):
        up, down = list(args), list(args)
        up[index], down[index] = x + h, x - h
        return (f(*up) - f(*down)) / (2 * h)
    g = np.zeros(np.shape(x))
    for position in np.ndindex(g.shape):
        step = np.zeros(g.shape)
        step[position] = h
        up, down = list(args), list(args)
        up[index], down[index] = x + step, x - step
        g[position] = (f(*up) - f(*down)) / (2 * h)
    return g


def check(name, f, gradient, args, indices):
    worst = max(np.max(np.abs(np.asarray(g) - central_difference(f, args, i)))
                / max(np.max(np.abs(central_difference(f, args, i))), 1e-12)
                for i, g in zip(indices, gradient))
    print(f"  {name}: max relative difference to central differences {worst:.1e}")


def main():
    w, b, X, y = binary_problem()
    rng = np.random.default_rng(3)
    probe = (rng.normal(size=w.shape), 0.1, X, y)
    print("gradient check at a random point:")
    check("logistic_grad", logistic_loss, logistic_grad(*probe), probe, (0, 1))
    W, c, Xm, labels = multiclass_problem()
    probe_m = (rng.normal(size=W.shape), rng.normal(size=c.shape), Xm, labels)
    check("softmax_grad ", softmax_cross_entropy, softmax_grad(*probe_m)[1], probe_m, (0, 1))
    print()

    print(f"logistic regression, {X.shape[0]} examples, {X.shape[1]} features, gradient descent:")
    for step in range(301):
        gw, gb = logistic_grad(w, b, X, y)
        if step % 50 == 0:
            accuracy = np.mean((X @ w + b > 0) == (y > 0.5))
            print(f"  step {step:3d}  loss {logistic_loss(w, b, X, y):.4f}  accuracy {accuracy:.3f}")
        w, b = w - 1.0 * gw, b - 1.0 * gb
    true_w = np.array([2.0, -1.0, 0.5])
    print(f"  direction of w {np.round(w / np.linalg.norm(w), 3)}; the labels came from "
          f"sign(X @ {true_w} + noise), direction {np.round(true_w / np.linalg.norm(true_w), 3)}")
    print()

    print(f"softmax regression, {Xm.shape[0]} examples, {W.shape[1]} classes, gradient descent:")
    for step in range(201):
        value, (gW, gc) = softmax_grad(W, c, Xm, labels)
        if step % 40 == 0:
            accuracy = np.mean(np.argmax(Xm @ W + c, axis=1) == labels)
            print(f"  step {step:3d}  cross-entropy {value:.4f}  accuracy {accuracy:.3f}")
        W, c = W - 0.5 * gW, c - 0.5 * gc
    print()
    print(softmax_grad.source)


if __name__ == "__main__":
    main()
