"""A softmax classifier's mean cross-entropy with scipy.special.logsumexp: the forward loss, derivo's
gradient and a hand-written one, side by side in one process.

    python benchmarks/softmax.py [rounds]     # 7 rounds by default

Two sizes: (features 50, classes 10, batch 256), where the matrix products and the exponentials
dominate, and (4, 3, batch 8), where per-call overhead dominates.  Both gradients are checked
against central differences before anything is timed.  Times are per call, in microseconds,
min / median over interleaved rounds; the target (issue 21) is derivo/hand within 1.2.
"""
import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import sys  # noqa: E402

import numpy as np  # noqa: E402
from scipy.special import logsumexp  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_HERE, os.path.join(_HERE, "..")]

import derivo  # noqa: E402
from _timing import interleaved  # noqa: E402

SIZES = [(50, 10, 256), (4, 3, 8)]


def loss(W, b, X, Y):
    """Mean cross-entropy of softmax(X W + b) against the one-hot labels Y."""
    logits = X @ W + b
    return np.mean(logsumexp(logits, axis=1) - np.sum(logits * Y, axis=1))


loss_grad = derivo.grad(loss, wrt=("W", "b"))


def loss_grad_hand(W, b, X, Y):
    """d loss / d logits = (softmax(logits) - Y) / n; then the products' adjoints."""
    logits = X @ W + b
    shares = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
    g = (shares - Y) / X.shape[0]
    return X.T @ g, g.sum(axis=0)


def problem(features, classes, batch, seed=0):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(features, classes)) / np.sqrt(features)
    b = 0.1 * rng.normal(size=classes)
    X = rng.normal(size=(batch, features))
    Y = np.eye(classes)[rng.integers(classes, size=batch)]
    return W, b, X, Y


def check(args):
    """Both gradients against central differences at a few positions of each parameter."""
    rng = np.random.default_rng(1)
    h = 1e-6
    for got_all in (loss_grad_hand(*args), loss_grad(*args)):
        for index, got in enumerate(got_all):
            x = args[index]
            for _ in range(6):
                position = tuple(int(rng.integers(n)) for n in x.shape)
                step = np.zeros(x.shape)
                step[position] = h
                up, down = list(args), list(args)
                up[index], down[index] = x + step, x - step
                expected = (loss(*up) - loss(*down)) / (2 * h)
                if not np.isclose(got[position], expected, rtol=1e-5, atol=1e-9):
                    raise SystemExit("a gradient disagrees with central differences")


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    print(f"per call, microseconds: min / median over {rounds} interleaved rounds "
          f"(one process, one BLAS thread); ratios of minima")
    for features, classes, batch in SIZES:
        args = problem(features, classes, batch)
        check(args)
        times = interleaved({"forward": loss, "derivo": loss_grad, "hand": loss_grad_hand},
                            args, rounds=rounds)
        print()
        print(f"softmax classifier: features {features}, classes {classes}, batch {batch} "
              f"(both gradients agree with central differences)")
        print(f"  {'':10s} {'min us':>10s} {'median us':>10s} {'/forward':>9s}")
        forward = times["forward"][0]
        for name, (best, median) in times.items():
            print(f"  {name:10s} {best:10.1f} {median:10.1f} {best / forward:9.2f}")
        print(f"  derivo/hand {times['derivo'][0] / times['hand'][0]:.2f} (target 1.2)")


if __name__ == "__main__":
    main()
