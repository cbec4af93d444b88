"""Gaussian-process negative log-likelihood (examples/gaussian_process.py): derivo's gradient
in the three log hyperparameters against a hand-written one, side by side in one process.

    python benchmarks/gp.py [rounds]     # 7 rounds by default

The hand-written gradient is the textbook one: with W = K^-1 - alpha alpha^T (K^-1 from the
Cholesky factor, cho_solve with the identity), d nll / d theta = tr(W dK/dtheta) / 2.  derivo
differentiates through cho_factor and cho_solve instead (its adjoints reuse the factor: two
triangular solves and a product).  Two sizes: n = 60 (the example) and n = 400, where the
O(n^3) work dominates.  Both gradients are checked against each other, and the hand-written
one against central differences, before anything is timed.  Per call, microseconds, min /
median over interleaved rounds; the target is derivo/hand <= 1.2.
"""
import os

# One thread each, before NumPy is imported (see benchmarks/mlp.py).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import sys  # noqa: E402

import numpy as np  # noqa: E402
from scipy.linalg import cho_factor, cho_solve  # noqa: E402

import derivo  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_HERE, os.path.join(_HERE, "..")]

from _timing import interleaved  # noqa: E402
from examples.gaussian_process import (HYPERPARAMETERS, central_differences,  # noqa: E402
                                       negative_log_likelihood, problem)

SIZES = (60, 400)
POINT = (0.1, -0.3, -2.0)
gp_grad = derivo.grad(negative_log_likelihood, wrt=HYPERPARAMETERS)


def nll_grad_hand(log_amplitude, log_lengthscale, log_noise, distances, y):
    """(d/d log_amplitude, d/d log_lengthscale, d/d log_noise) of the nll, written by hand."""
    amplitude, lengthscale, noise = np.exp(log_amplitude), np.exp(log_lengthscale), np.exp(log_noise)
    n = y.shape[0]
    scaled = distances / lengthscale ** 2
    signal = amplitude * np.exp(-0.5 * scaled)
    K = signal + noise * np.eye(n)
    factor = cho_factor(K, lower=True)
    alpha = cho_solve(factor, y)
    W = cho_solve(factor, np.eye(n)) - np.outer(alpha, alpha)
    # dK/d log_amplitude = signal, dK/d log_lengthscale = signal * scaled, dK/d log_noise = noise I
    weighted = W * signal
    return 0.5 * np.sum(weighted), 0.5 * np.sum(weighted * scaled), 0.5 * noise * np.trace(W)


def check(args):
    hand = nll_grad_hand(*args)
    numeric = central_differences(negative_log_likelihood, args[:3], args[3:])
    if not np.allclose(hand, numeric, rtol=1e-5, atol=1e-8):
        raise SystemExit("the hand-written gradient disagrees with central differences")
    if not np.allclose(gp_grad(*args), hand, rtol=1e-9):
        raise SystemExit("derivo's gradient disagrees with the hand-written one")


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    print(f"per call, microseconds: min / median over {rounds} interleaved rounds of ~50 ms "
          f"(one process, one BLAS thread); ratios of minima")
    for n in SIZES:
        args = POINT + problem(n)
        check(args)
        times = interleaved({"forward": negative_log_likelihood, "derivo": gp_grad,
                             "hand": nll_grad_hand}, args, rounds=rounds)
        print()
        print(f"GP negative log-likelihood, n = {n} (derivo agrees with the hand-written gradient "
              f"to 1e-9, which agrees with central differences)")
        for name, (best, median) in times.items():
            print(f"  {name:8s} {best:10.1f} {median:10.1f}")
        fwd, derivo_t, hand_t = (times[k][0] for k in ("forward", "derivo", "hand"))
        print(f"  derivo/forward {derivo_t / fwd:.2f}   hand/forward {hand_t / fwd:.2f}   "
              f"derivo/hand {derivo_t / hand_t:.2f}")


if __name__ == "__main__":
    main()
