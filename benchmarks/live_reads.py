"""What live reads cost: re-requesting a derivative, and the per-call check.

    python benchmarks/live_reads.py [rounds]

Prints, per case, the minimum over ``rounds`` (default 31) interleaved rounds of:

- ``derivo.grad(f, wrt=...)`` again for a function already transformed (a cache hit);
- the cached call overhead: ``d(a0, a1)`` minus ``d.derivo_function(a0, a1)``, the
  derivative's entry (the check that the names the derivative depends on still
  hold what they held, then the argument types' check) over the generated code;
- the check alone: the entry's test of the names it read (``cache.LiveReads.check``),
  run in a function of its own, minus an empty function's call;
- the first call after a module-level array the function reads was rebound (the
  entry notices it and refreshes the generated code's binding), per rebinding.
"""
import os
import sys
import timeit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import derivo  # noqa: E402
from derivo import api  # noqa: E402
from examples import bessel, seed004  # noqa: E402

X = np.array([1.0, 2.0])


def loss(w):
    return np.sum((X * w - 1.0) ** 2)


def _best(timer, rounds, number):
    return min(timer.repeat(repeat=rounds, number=number)) / number


def cache_hits(rounds):
    cases = [("bessel", "derivo.grad(besselj, wrt='z')", {"besselj": bessel.besselj}),
             ("seed-004", "derivo.grad(f, wrt=(0, 1))", {"f": seed004.f}),
             ("array loss", "derivo.value_and_grad(loss)", {"loss": loss})]
    for label, statement, names in cases:
        scope = dict(names, derivo=derivo)
        eval(statement, scope)  # the transformation, once
        yield label, _best(timeit.Timer(statement, globals=scope), rounds, 20000)


def overheads(rounds):
    cases = [("seed-004 f_grad (2 floats)", derivo.grad(seed004.f, wrt=(0, 1)), (2.0, 5.0)),
             ("Bessel grad (int, float)", derivo.grad(bessel.besselj, wrt="z"), (2, 1.0))]
    for label, d, (a0, a1) in cases:
        wrapped = timeit.Timer("d(a0, a1)", globals={"d": d, "a0": a0, "a1": a1})
        direct = timeit.Timer("d(a0, a1)", globals={"d": d.derivo_function, "a0": a0, "a1": a1})
        pairs = [(wrapped.timeit(20000) / 20000, direct.timeit(20000) / 20000)
                 for _ in range(rounds)]
        yield label, min(p[0] for p in pairs) - min(p[1] for p in pairs)


def check_alone(rounds):
    if not hasattr(api, "_LIVE"):  # a derivo from before live reads: nothing to time
        return
    cases = [("seed-004 f_grad", derivo.grad(seed004.f, wrt=(0, 1))),
             ("Bessel grad", derivo.grad(bessel.besselj, wrt="z")),
             ("array loss grad", derivo.grad(loss))]
    for label, d in cases:
        generated = d.__self__._generated
        prefix = generated.entry_names[api._LIVE]
        check, holders = generated.live.check(prefix)
        scope = dict(holders, **generated.live.entry_values(prefix))
        exec("def probe():\n    try:\n        fresh = {}\n    except Exception:\n"
             "        fresh = False\n    return fresh\n\ndef empty():\n    return True\n"
             .format(check), scope)
        assert scope["probe"]()
        probe, empty = timeit.Timer("p()", globals={"p": scope["probe"]}), \
            timeit.Timer("p()", globals={"p": scope["empty"]})
        pairs = [(probe.timeit(20000) / 20000, empty.timeit(20000) / 20000) for _ in range(rounds)]
        yield label, check.count(" and ") + 1, min(p[0] for p in pairs) - min(p[1] for p in pairs)


def rebinding(rounds):
    global X
    d = derivo.grad(loss)
    arrays = [np.array([1.0, 2.0]), np.array([10.0, 20.0])]

    def rebind_and_call():
        global X
        for array in arrays:
            X = array
            d(0.5)

    def call_twice():
        d(0.5)
        d(0.5)

    rebound = _best(timeit.Timer(rebind_and_call), rounds, 2000)
    steady = _best(timeit.Timer(call_twice), rounds, 2000)
    X = np.array([1.0, 2.0])
    return (rebound - steady) / 2


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 31
    print("derivative requested again (a cache hit), min over {} rounds:".format(rounds))
    for label, seconds in cache_hits(rounds):
        print("  {:30s} {:8.2f} us".format(label, seconds * 1e6))
    print("cached call overhead, d(a0, a1) minus d.derivo_function(a0, a1):")
    for label, seconds in overheads(rounds):
        print("  {:30s} {:8.3f} us".format(label, seconds * 1e6))
    print("the check of the names read, alone:")
    for label, tests, seconds in check_alone(rounds):
        print("  {:30s} {:8.3f} us  ({} identity tests)".format(label, seconds * 1e6, tests))
    print("first call after a module-level array was rebound, over a steady call:")
    print("  {:30s} {:8.2f} us".format("array loss", rebinding(rounds) * 1e6))


if __name__ == "__main__":
    main()
