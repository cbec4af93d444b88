"""Interleaved timing shared by the benchmarks: every candidate is timed once per round, in one process."""
import statistics
import timeit

TARGET_SECONDS = 0.05


def calibrate(fn, args, target=TARGET_SECONDS):
    """How many calls of fn(*args) take about `target` seconds."""
    timer = timeit.Timer("fn(*args)", globals={"fn": fn, "args": args})
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
    timers = {name: timeit.Timer("fn(*args)", globals={"fn": fn, "args": args})
              for name, fn in candidates.items()}
    numbers = {name: calibrate(fn, args) for name, fn in candidates.items()}
    samples = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, timer in timers.items():
            samples[name].append(timer.timeit(numbers[name]) / numbers[name] * 1e6)
    return {name: (min(s), statistics.median(s)) for name, s in samples.items()}
