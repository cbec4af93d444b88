"""Loops that read a list or an array item by item: gradient time / forward time at two lengths.

    python benchmarks/items.py

The reverse sweep adds each item's adjoint into one accumulator, so the ratio stays flat as
the length grows; an accumulator copied on every trip (derivo before stop 11) made it grow
linearly with the length (a quadratic reverse sweep). Best of 5 calls each, one process.
"""

import math
import os
import sys
import time

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import derivo  # noqa: E402
from examples.horner import horner  # noqa: E402


def by_index(xs):
    s = 0.0
    for i in range(len(xs)):
        s = s + math.sin(xs[i]) * xs[i]
    return s


def by_value(xs):
    s = 0.0
    for x in xs:
        s = s + math.sin(x) * x
    return s


def rows(X, w):
    s = 0.0
    for i in range(X.shape[0]):
        s = s + np.tanh(X[i] @ w)
    return s


def best(fn, args, repeats=5):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times)


CASES = [
    ("s += sin(xs[i]) * xs[i], a list", by_index, lambda n: ([0.001 * k for k in range(n)],)),
    ("for x in xs: s += sin(x) * x", by_value, lambda n: ([0.001 * k for k in range(n)],)),
    ("s += tanh(X[i] @ w), 50-wide rows", rows,
     lambda n: (np.random.default_rng(0).normal(size=(n, 50)), np.ones(50) / 50)),
    ("Horner's rule, n coefficients", horner, lambda n: ([1.0 / (k + 1) for k in range(n)], 0.9)),
]


def main():
    lengths = (1000, 4000)
    print("gradient time / forward time, best of 5 calls")
    print(f"{'loop':36s}" + "".join(f"{'n=' + str(n):>10s}" for n in lengths))
    for label, f, make in CASES:
        gradient = derivo.grad(f, wrt=tuple(range(len(make(2)))))
        ratios = []
        for n in lengths:
            args = make(n)
            ratios.append(best(gradient, args) / best(f, args))
        print(f"{label:36s}" + "".join(f"{r:9.1f}x" for r in ratios))


if __name__ == "__main__":
    main()
