"""Forward mode side by side with the function and with reverse mode.

    python benchmarks/forward.py

Prints JVP time / forward time for the Bessel function and the MLP, and the
time of ``derivo.jacobian`` in both modes (and ``mode="auto"``'s choice) for a
tall function (few inputs, many outputs) and a wide one (many inputs, one
output), where Table 8.1 of the reference says which mode should win.
"""

import os
import sys
import timeit

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import derivo  # noqa: E402
from examples.bessel import besselj  # noqa: E402
from examples.mlp import loss, problem  # noqa: E402


def best(function, number, rounds=7):
    return min(timeit.repeat(function, number=number, repeat=rounds)) / number


def tall(x):
    t = np.linspace(0.0, 1.0, 600)
    return np.sin(x[0] * t) + x[1] * t * t + np.exp(-x[2] * t)


def wide(w):
    return np.sum(np.tanh(w) ** 2) + np.sum(w[:-1] * w[1:])


def main():
    print("{:<28} {:>12} {:>12} {:>10}".format("JVP", "forward us", "jvp us", "jvp/fwd"))
    tangent = derivo.tangent(besselj, wrt="z")
    for z in (1.0, 10.0):
        forward = best(lambda: besselj(2, z), 20000)
        jvp = best(lambda: tangent(1.0, 2, z), 20000)
        print("{:<28} {:>12.2f} {:>12.2f} {:>10.2f}".format(
            "Bessel J_2, z={}".format(z), forward * 1e6, jvp * 1e6, jvp / forward))
    args = problem(100, 200, 10, batch=64)
    mlp_tangent = derivo.tangent(loss, wrt=0)
    direction = np.ones_like(args[0])
    forward = best(lambda: loss(*args), 200)
    jvp = best(lambda: mlp_tangent(direction, *args), 200)
    print("{:<28} {:>12.2f} {:>12.2f} {:>10.2f}".format(
        "MLP 100-200-10, batch 64", forward * 1e6, jvp * 1e6, jvp / forward))
    print()
    print("{:<28} {:>12} {:>12} {:>8}".format("jacobian", "forward ms", "reverse ms", "auto"))
    for name, function, x in (("tall: 3 -> 600", tall, np.array([0.5, 1.5, 2.0])),
                              ("wide: 300 -> 1", wide, np.linspace(-1.0, 1.0, 300))):
        times = {}
        for mode in ("forward", "reverse"):
            jacobian = derivo.jacobian(function, mode=mode)
            jacobian(x)
            times[mode] = best(lambda: jacobian(x), 3, rounds=3)
        auto = derivo.jacobian(function)
        auto(x)
        print("{:<28} {:>12.2f} {:>12.2f} {:>8}".format(
            name, times["forward"] * 1e3, times["reverse"] * 1e3,
            getattr(auto, "last_mode", "?")))


if __name__ == "__main__":
    main()
