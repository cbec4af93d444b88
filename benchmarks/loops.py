"""Loop strategies side by side: memory and time of the gradient of a long loop.

    python benchmarks/loops.py [--quick]

For the oscillator of examples/oscillator.py at K steps, prints the forward
time, then for ``loops="stack"`` and ``loops="reversible"`` the gradient time
and its peak traced memory (tracemalloc, measured in a separate run from the
timing), each as a ratio to the forward run, and for the Bessel function the
reversible gradient / forward time.
"""

import os
import sys
import time
import tracemalloc

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import derivo  # noqa: E402
from examples.bessel import besselj  # noqa: E402
from examples.oscillator import energy_after  # noqa: E402


def best_time(function, args, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function(*args)
        best = min(best, time.perf_counter() - start)
    return best


def peak_memory(function, args):
    tracemalloc.start()
    function(*args)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main():
    quick = "--quick" in sys.argv
    steps = (1000, 10000) if quick else (1000, 10000, 100000, 1000000)
    gradients = {strategy: derivo.grad(energy_after, wrt=("stiffness", "x0"), loops=strategy)
                 for strategy in ("stack", "reversible")}
    print("oscillator (examples/oscillator.py): gradient w.r.t. stiffness and x0")
    print("{:>9} {:>11} | {:>10} {:>8} {:>11} {:>8} | {:>10} {:>8} {:>11} {:>8}".format(
        "steps", "forward ms", "stack ms", "x fwd", "stack mem", "x fwd",
        "revers. ms", "x fwd", "revers. mem", "x fwd"))
    for k in steps:
        args = (2.0, 1.0, k, 10.0 / k)
        repeats = 3 if k >= 100000 else 7
        forward_time = best_time(energy_after, args, repeats)
        forward_memory = peak_memory(energy_after, args)
        row = [k, forward_time * 1e3]
        reference = gradients["stack"](*args)
        for strategy in ("stack", "reversible"):
            gradient = gradients[strategy]
            result = gradient(*args)
            assert all(abs(a - b) <= 1e-8 * max(1.0, abs(b)) for a, b in zip(result, reference))
            seconds = best_time(gradient, args, repeats)
            memory = peak_memory(gradient, args)
            row += [seconds * 1e3, seconds / forward_time, memory / 1024,
                    memory / max(forward_memory, 1)]
        print("{:>9} {:>11.3f} | {:>10.3f} {:>8.2f} {:>9.0f}KB {:>8.1f} | {:>10.3f} {:>8.2f} "
              "{:>9.0f}KB {:>8.1f}".format(*row))
    print()
    reversible = derivo.grad(besselj, wrt="z", loops="reversible")
    stack = derivo.grad(besselj, wrt="z")
    for z in (1.0, 10.0):
        forward_time = best_time(besselj, (2, z), 20000)
        print("Bessel J_2 at z={:<4}: reversible gradient / forward {:.2f}, stack gradient / "
              "forward {:.2f}".format(z, best_time(reversible, (2, z), 20000) / forward_time,
                                      best_time(stack, (2, z), 20000) / forward_time))


if __name__ == "__main__":
    main()
