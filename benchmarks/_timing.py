"""Interleaved timing shared by the benchmarks: every candidate is timed once per round, in one process."""
import statistics
import timeit

TARGET_SECONDS = 0.05


def call_timer(fn, args):
    """A timer of ``fn`` called as a user calls it, the arguments written out:
    ``fn(a0, a1)``.  Through ``fn(*args)`` a bound method, as a derivo derivative
    is, costs about 10 ns more than a plain function, which a user's call does not."""
    names = ["a{}".format(k) for k in range(len(args))]
    return timeit.Timer("fn({})".format(", ".join(names)),
                        globals={"fn": fn, **dict(zip(names, args))})


def calibrate(fn, args, target=TARGET_SECONDS):
    """How many calls of fn take about `target` seconds."""
    timer = call_timer(fn, args)
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= target / 10:
            return max(1, round(number * target / elapsed))
        number *= 10


def interleaved(candidates, args, rounds=7):
    """Per-call microseconds of each candidate: {name: (min, median)}.

    Rounds alternate between the candidates, so a slow phase of the machine hits them all alike.
    """
    timers = {name: call_timer(fn, args) for name, fn in candidates.items()}
    numbers = {name: calibrate(fn, args) for name, fn in candidates.items()}
    samples = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, timer in timers.items():
            samples[name].append(timer.timeit(numbers[name]) / numbers[name] * 1e6)
    return {name: (min(s), statistics.median(s)) for name, s in samples.items()}
