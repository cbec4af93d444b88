"""First use and per call of code that reaches its functions through values,
next to the same computation written flat.

    python benchmarks/functions_as_values.py [trials]   # 7 by default

Candidates: ``examples/model_class.py``'s ``derivo.grad(model.loss)`` (a bound
method whose ``loss`` calls ``self.predict``, which picks its activation from a
dict by ``self.activation``, and ``self.penalty``), its closure loss (a lambda
inside, the model a closure variable) under ``derivo.value_and_grad``, the same
loss written as one flat function, and ``examples/mlp.py``'s loss, an existing
example of about the same size.  First use: the transformation on a cache miss
(``derivo.cache.clear()`` before each trial) and the first call; min and median
over the trials.  Per call: the derivatives made, interleaved (see _timing).
"""

import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "src"), ROOT, os.path.dirname(os.path.abspath(__file__))]

import numpy as np  # noqa: E402

import derivo  # noqa: E402
from derivo import cache  # noqa: E402
from _timing import interleaved  # noqa: E402
from examples import mlp  # noqa: E402
from examples.model_class import Regressor, closure_loss, problem  # noqa: E402


def flat_loss(W, v, X, y):
    r = np.log1p(np.exp(X @ W)) @ v - y
    return np.mean(r * r) + 1e-3 * (np.sum(W * W) + np.sum(v * v))


def workloads():
    W, v, X, y = problem()
    model = Regressor("softplus")
    A1, b1, A2, b2, Xm, Ym = mlp.problem()
    return {
        "model.loss (method)": (lambda: derivo.grad(model.loss, wrt=("W", "v")), (W, v, X, y)),
        "closure loss": (lambda: derivo.value_and_grad(closure_loss(model, X, y),
                                                       wrt=("W", "v")), (W, v)),
        "flat loss": (lambda: derivo.grad(flat_loss, wrt=("W", "v")), (W, v, X, y)),
        "mlp.loss (existing)": (lambda: derivo.grad(mlp.loss, wrt=mlp.PARAMETERS),
                                (A1, b1, A2, b2, Xm, Ym)),
    }


def first_use(make, args, trials):
    seconds = []
    for _ in range(trials):
        cache.clear()
        start = time.perf_counter()
        make()(*args)
        seconds.append(time.perf_counter() - start)
    return min(seconds), statistics.median(seconds)


def main(trials):
    found = workloads()
    print("first use (transform + first call), ms")
    print("{:24} {:>8} {:>8}".format("", "min", "median"))
    for name, (make, args) in found.items():
        low, middle = first_use(make, args, trials)
        print("{:24} {:8.1f} {:8.1f}".format(name, 1e3 * low, 1e3 * middle))
    print()
    print("per call, us")
    made = {name: make() for name, (make, _) in found.items()}
    for name, (_, args) in found.items():
        low, middle = interleaved({name: made[name]}, args)[name]
        print("{:24} {:8.1f} {:8.1f}".format(name, low, middle))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
