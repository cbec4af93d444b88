"""The cost of containers of parameters: the MLP of examples/mlp_dict.py with its
parameters as four arrays, as a dict and as a dataclass.

    python benchmarks/containers.py [rounds]     # 7 rounds by default

For each: first use at the first size (derivo.grad and its first call: transforming,
compiling, the checks a container's first call makes), then per call, min / median microseconds
over interleaved rounds in one process, of the derivative as a user calls it and of
its generated code alone (the difference is what checking the arguments and putting
the gradient in their structure costs).  Two sizes: (3, 8, 2, batch 64), the
example's, and (3, 4, 2, batch 1), where per-call overhead dominates.
"""
import dataclasses
import os
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_HERE, os.path.join(_HERE, "..")]

import derivo  # noqa: E402
from _timing import interleaved  # noqa: E402
from examples.mlp_dict import data, init  # noqa: E402


def arrays_loss(W1, b1, W2, b2, X, Y):
    hidden = np.tanh(X @ W1 + b1)
    residual = hidden @ W2 + b2 - Y
    return 0.5 * np.sum(residual * residual) / X.shape[0]


def dict_loss(params, X, Y):
    hidden = np.tanh(X @ params["W1"] + params["b1"])
    residual = hidden @ params["W2"] + params["b2"] - Y
    return 0.5 * np.sum(residual * residual) / X.shape[0]


@dataclasses.dataclass
class Params:
    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray


def dataclass_loss(p, X, Y):
    hidden = np.tanh(X @ p.W1 + p.b1)
    residual = hidden @ p.W2 + p.b2 - Y
    return 0.5 * np.sum(residual * residual) / X.shape[0]


SIZES = [(3, 8, 2, 64), (3, 4, 2, 1)]


def variants(n_in, n_hidden, n_out, batch):
    params = init(n_in, n_hidden, n_out)
    X, Y = data(batch, n_in, n_out)
    arrays = [params[k] for k in ("W1", "b1", "W2", "b2")]
    return {
        "four arrays": (arrays_loss, dict(wrt=(0, 1, 2, 3)), (*arrays, X, Y)),
        "a dict": (dict_loss, {}, (params, X, Y)),
        "a dataclass": (dataclass_loss, {}, (Params(*arrays), X, Y)),
    }


def main(rounds):
    for size in SIZES:
        print("MLP {} -> {} -> {}, batch {}".format(*size))
        made = {}
        for name, (loss, options, args) in variants(*size).items():
            start = time.perf_counter()
            gradient = derivo.grad(loss, **options)
            gradient(*args)
            made[name] = (gradient, args, time.perf_counter() - start)
        for name, (gradient, args, first) in made.items():
            times = interleaved({"derivative": gradient, "generated code alone":
                                 gradient.derivo_function}, args, rounds)
            (entry, entry_median), (raw, raw_median) = times["derivative"], \
                times["generated code alone"]
            print("  {:12s} first use {:>8s}   per call {:7.1f} / {:7.1f} us   generated "
                  "code alone {:7.1f} / {:7.1f} us   ratio {:.2f}".format(
                      name, "{:.1f} ms".format(first * 1e3) if size == SIZES[0] else "cached",
                      entry, entry_median, raw, raw_median, entry / raw))
        print()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
