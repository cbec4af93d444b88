"""Bessel J_2'(z): forward call vs derivo's gradient vs a hand-written adjoint (and autograd if installed).

    python benchmarks/bessel.py

Times are per call, in microseconds, from interleaved rounds in one process.
"""
import os

# One thread each, so that numpy's BLAS pool does not compete with the timed Python code.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import inspect  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import derivo  # noqa: E402
from _timing import interleaved  # noqa: E402
from examples.bessel import besselj  # noqa: E402


def besselj_grad_hand(v, z, atol=1e-8):
    """dJ_v/dz by reverse mode, written by hand: the stack holds each term before it is overwritten."""
    half = z / 2
    q = half * half
    s = half ** v / math.factorial(v)
    stack = []
    push = stack.append
    k = 0
    while abs(s) > atol:
        k += 1
        push(s)
        s *= (-1) / k / (k + v) * q
    pop = stack.pop
    # out is the sum of every term, so each term's adjoint starts at 1.
    bs = 1.0
    bq = 0.0
    while k:
        s = pop()
        c = (-1) / k / (k + v)
        bq += bs * s * c
        bs = bs * c * q + 1.0
        k -= 1
    bhalf = bs * v * half ** (v - 1) / math.factorial(v) + bq * 2 * half
    return bhalf / 2


def central_difference(v, z, h=1e-3):
    """Five-point central difference: at z=10 the series' terms reach ~565 for a sum of ~0.25, and the
    rounding that cancellation leaves is too much for a two-point difference to reach 1e-7."""
    if len({trip_count(v, z + d) for d in (-2 * h, -h, 0.0, h, 2 * h)}) != 1:
        raise SystemExit(f"the series' trip count changes within z={z} +- {2 * h}: finite difference meaningless")
    f = besselj
    return (f(v, z - 2 * h) - 8 * f(v, z - h) + 8 * f(v, z + h) - f(v, z + 2 * h)) / (12 * h)


def check(v, z, grads):
    references = {"central difference": central_difference(v, z), "hand adjoint": besselj_grad_hand(v, z)}
    try:
        from scipy.special import jvp
        references["scipy.special.jvp"] = jvp(v, z, 1)
    except ImportError:
        pass
    for name, g in grads.items():
        got = g(v, z)
        for ref_name, expected in references.items():
            rel = abs(got - expected) / abs(expected)
            if rel > 1e-7:
                raise SystemExit(f"{name} gives {got!r} at v={v}, z={z}; {ref_name} {expected!r} (rel. {rel:.1e})")
    return list(references)


def trip_count(v, z, atol=1e-8):
    k = 0
    s = (z / 2) ** v / math.factorial(v)
    while abs(s) > atol:
        k += 1
        s *= (-1) / k / (k + v) * (z / 2) ** 2
    return k


def first_use_ms(trials=5):
    """Time derivo.grad plus its first call on fresh copies of besselj, so every trial misses the cache."""
    source = inspect.getsource(besselj)
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(trials):
            # A file of its own (so inspect finds the source) and a shifted first line (so the code object differs).
            path = os.path.join(tmp, f"besselj_copy_{i}.py")
            with open(path, "w") as f:
                f.write("\n" * i + source)
            namespace = {"math": math}
            exec(compile("\n" * i + source, path, "exec"), namespace)
            fresh = namespace["besselj"]
            misses = derivo.cache_info()[1]
            start = time.perf_counter()
            derivo.grad(fresh, wrt="z")(2, 1.0)
            times.append((time.perf_counter() - start) * 1e3)
            if derivo.cache_info()[1] == misses:
                raise SystemExit("derivo's cache did not miss on a fresh copy of besselj: first use not measured")
    return min(times), statistics.median(times)


def autograd_grad():
    try:
        import autograd
        g = autograd.grad(besselj, 1)
        g(2, 1.0)
        return g
    except Exception as err:  # not installed, or it cannot trace besselj
        print(f"autograd: n/a ({type(err).__name__}: {err})")
        return None


def main():
    v = 2
    grads = {"derivo": derivo.grad(besselj, wrt="z"), "hand": besselj_grad_hand}
    ag = autograd_grad()
    if ag is not None:
        grads["autograd"] = ag
    for z in (1.0, 10.0):
        references = check(v, z, grads)
    print(f"checked {', '.join(grads)} against {', '.join(references)}: within 1e-7 relative at z=1 and z=10")
    print()

    names = ["forward", *grads]
    header = (f"{'z':>5} {'iters':>5} " + " ".join(f"{n + ' us':>16}" for n in names)
              + f" {'derivo/fwd':>10} {'hand/fwd':>9} {'derivo/hand':>11}"
              + (f" {'autograd/fwd':>12}" if "autograd" in grads else ""))
    print("per call, min / median over 7 interleaved rounds of ~50 ms; ratios of minima")
    print(header)
    for z in (1.0, 10.0):
        t = interleaved({"forward": besselj, **grads}, (v, z))
        fwd, dvo, hand = t["forward"][0], t["derivo"][0], t["hand"][0]
        row = (f"{z:5.1f} {trip_count(v, z):5d} "
               + " ".join(f"{t[n][0]:7.2f} / {t[n][1]:6.2f}" for n in names)
               + f" {dvo / fwd:10.2f} {hand / fwd:9.2f} {dvo / hand:11.2f}")
        if "autograd" in grads:
            row += f" {t['autograd'][0] / fwd:12.0f}"
        print(row)
    print()
    best, median = first_use_ms()
    print(f"first use (transform + compile + one call, cache miss): min {best:.1f} ms, median {median:.1f} ms")


if __name__ == "__main__":
    main()
