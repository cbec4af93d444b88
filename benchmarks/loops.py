"""Loop strategies side by side: memory and time of the gradient of a long loop.

    python benchmarks/loops.py [--quick]

For the oscillator of examples/oscillator.py at K steps, prints the forward
time, then for ``loops="stack"`` and ``loops="reversible"`` the gradient time
and its peak traced memory (tracemalloc, measured in a separate run from the
timing), each as a ratio to the forward run, and for the Bessel function the
reversible gradient / forward time.

Then ``loops="checkpoint"`` (see derivo.checkpoints):

- the explicit-Euler predator-prey integrator of examples/integrator.py at K
  steps: the same measures for the stack, checkpoint S=10, checkpoint
  S=ceil(log2 K) and halving S=ceil(log2 K), with the step calls each
  checkpointed gradient made against the optimum C*(K, S) of Eq. 8.3;
- C*(K, S): the step calls the generated code reports against an independent
  dynamic program over Eq. 8.3;
- online checkpointing of a ``while`` loop (trip count unknown while it runs):
  its step calls against the offline optimum, and the most states it held;
- the checkpointed pendulum of examples/pendulum.py (revolve and segments
  schedules, S = ceil(log2 K)): gradient / forward time against what the
  schedule itself costs, its step calls / K plus the stack gradient / forward;
- peak traced memory of the checkpointed pendulum from 1e3 to 1e6 steps at a
  fixed S, which must stay flat, and the online schedule's step calls against
  the offline optimum at 1e6 trips for 3, 5 and 10 slots.

run_all.py prints the same checkpoint rows (pendulum_checkpoint_rows,
checkpoint_memory, online_ratio) against the targets of issue 24.
"""

import math
import os
import sys
import time
import tracemalloc

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import derivo  # noqa: E402
from derivo.checkpoints import LAST_RUN, checkpointed_while, optimal_cost  # noqa: E402
from examples.bessel import besselj  # noqa: E402
from examples.integrator import PARAMETERS, predator_prey  # noqa: E402
from examples.oscillator import energy_after  # noqa: E402
from examples.pendulum import simulate  # noqa: E402


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


# --- loops="checkpoint" --------------------------------------------------------------------

def predator_prey_while(alpha, beta, delta, gamma, steps=1000, dt=0.01):
    """examples/integrator.py's loop written as a ``while`` loop: checkpointed, it runs the
    online schedule, which does not know the trip count while the loop runs."""
    x = 1.0
    y = 0.5
    n = 0
    while n < steps:
        x, y = x + dt * (alpha * x - beta * x * y), y + dt * (delta * x * y - gamma * y)
        n += 1
    return (x - 1.5) ** 2 + (y - 0.5) ** 2


def integrator_args(k):
    """The rates of examples/integrator.py over ten time units in k steps."""
    return (1.1, 0.4, 0.1, 0.4, k, 10.0 / k)


def checkpoint_gradient(function, slots, schedule="revolve"):
    return derivo.grad(function, wrt=PARAMETERS, loops="checkpoint", checkpoints=slots,
                       schedule=schedule)


def same_gradient(result, reference):
    return all(math.isclose(a, b, rel_tol=1e-8) for a, b in zip(result, reference))


def step_calls():
    """Calls of the step the last reversed loop made, as Eq. 8.3 counts them."""
    return LAST_RUN["forward_steps"] + LAST_RUN["recomputed_steps"]


def timed_runs(function, args, repeats):
    """(the first call's result, the best time over ``repeats`` calls)."""
    best, result = float("inf"), None
    for index in range(repeats):
        start = time.perf_counter()
        value = function(*args)
        best = min(best, time.perf_counter() - start)
        if index == 0:
            result = value
    return result, best


def integrator_table(quick):
    steps = (1000, 10000) if quick else (1000, 10000, 100000, 1000000)
    repeats = {1000: 5, 10000: 3, 100000: 2, 1000000: 1}
    # tracemalloc slows the checkpointed gradient about fivefold (~100 s a run at 1e6 steps):
    # at 1e6 only the forward, stack and checkpoint S=10 runs are traced.
    traced_at_1e6 = ("stack", "checkpoint S=10")
    print("integrator (examples/integrator.py): predator-prey by explicit Euler, gradient w.r.t. "
          "alpha, beta, delta, gamma; dt = 10/K")
    print("{:>8} {:>11} {:>8} | {:<16} {:>10} {:>7} {:>10} {:>9} | {:>10} {:>10} {:>6}".format(
        "steps K", "forward ms", "fwd mem", "strategy", "grad ms", "x fwd", "peak mem", "x fwd",
        "step calls", "C*(K,S)", "x C*"))
    for k in steps:
        args = integrator_args(k)
        log_slots = math.ceil(math.log2(k))
        strategies = [("stack", derivo.grad(predator_prey, wrt=PARAMETERS), None),
                      ("checkpoint S=10", checkpoint_gradient(predator_prey, 10), 10),
                      ("checkpoint S={}".format(log_slots),
                       checkpoint_gradient(predator_prey, log_slots), log_slots),
                      ("halving S={}".format(log_slots),
                       checkpoint_gradient(predator_prey, log_slots, "halving"), log_slots)]
        forward_time = best_time(predator_prey, args, max(3, repeats[k]))
        forward_memory = peak_memory(predator_prey, args)
        rows, reference = [], None
        for label, gradient, slots in strategies:
            LAST_RUN.clear()
            result, seconds = timed_runs(gradient, args, repeats[k])
            calls = step_calls() if slots else None
            if reference is None:
                reference = result
            assert same_gradient(result, reference), (label, k, result, reference)
            memory = None
            if k < 1000000 or label in traced_at_1e6:
                memory = peak_memory(gradient, args)
            rows.append((label, seconds, memory, calls, slots))
        for index, (label, seconds, memory, calls, slots) in enumerate(rows):
            head = " " * 29
            if index == 0:
                head = "{:>8} {:>11.3f} {:>6.1f}KB".format(k, forward_time * 1e3,
                                                         forward_memory / 1024)
            memory_cells = "{:>10} {:>9}".format("-", "-")
            if memory is not None:
                memory_cells = "{:>8.1f}KB {:>9.1f}".format(memory / 1024,
                                                            memory / max(forward_memory, 1))
            if calls is None:
                call_cells = "{:>10} {:>10} {:>6}".format("-", "-", "-")
            else:
                optimum = optimal_cost(k, slots)
                call_cells = "{:>10} {:>10} {:>6.2f}".format(calls, optimum, calls / optimum)
            print("{} | {:<16} {:>10.3f} {:>7.2f} {} | {}".format(
                head, label, seconds * 1e3, seconds / forward_time, memory_cells, call_cells),
                flush=True)
    print("x fwd: gradient time / forward time, then peak traced memory (tracemalloc, a separate "
          "run) / the forward run's")
    print("x C*: step calls (LAST_RUN forward_steps + recomputed_steps) / C*(K, S) of Eq. 8.3, "
          "the fewest possible with S states (1.00: optimal)")
    print("every gradient agrees with the stack's to 1e-8 relative; S=ceil(log2 K); at 1e6 steps "
          "each strategy is timed once, and the S=ceil(log2 K) rows are not traced (-)")


def optimal_costs(max_steps, max_slots):
    """C*(k, s) for k <= max_steps and s <= max_slots (table[s, k]) by the dynamic program of
    Eq. 8.3: C(1, s) = 0, C(k, 1) = k (k - 1) / 2, C(k, s) = min over 1 <= l < k of
    C(k - l, s - 1) + C(l, s) + l."""
    k = np.arange(max_steps + 1, dtype=np.int64)
    table = np.zeros((max_slots + 1, max_steps + 1), dtype=np.int64)
    table[1] = k * (k - 1) // 2
    table[1, 0] = 0
    for s in range(2, max_slots + 1):
        fewer, row = table[s - 1], table[s]
        for steps in range(2, max_steps + 1):
            # l = 1 .. steps - 1: C(steps - l, s - 1) + C(l, s) + l
            row[steps] = (fewer[steps - 1:0:-1] + row[1:steps] + k[1:steps]).min()
    return table


def optimal_cost_table():
    ks, slots = (10, 100, 1000), (2, 3, 5, 10)
    table = optimal_costs(max(ks), max(slots))
    gradients = {s: checkpoint_gradient(predator_prey, s) for s in slots}
    print("C*(K, S): step calls of examples/integrator.py's checkpointed gradient (revolve), as "
          "LAST_RUN reports them, against Eq. 8.3 solved by dynamic programming")
    print("{:>6} {:>4} {:>10} {:>10} {:>12} {:>13}".format(
        "K", "S", "reported", "C* (DP)", "closed form", "reported/C*"))
    for k in ks:
        for s in slots:
            LAST_RUN.clear()
            gradients[s](*integrator_args(k))
            calls, optimum = step_calls(), int(table[s, k])
            print("{:>6} {:>4} {:>10} {:>10} {:>12} {:>13}".format(
                k, s, calls, optimum, optimal_cost(k, s),
                "{:.3f}".format(calls / optimum) if optimum else "-"))
    print("reported/C*: 1.000 when the generated code ran an optimal schedule; closed form: "
          "derivo.checkpoints.optimal_cost(K, S)")


def online_table():
    stack = derivo.grad(predator_prey_while, wrt=PARAMETERS)
    print("online checkpointing (while loops): examples/integrator.py's loop as `while n < steps`, "
          "reversed with S slots")
    print("{:>7} {:>4} {:>11} {:>10} {:>13} {:>10}".format(
        "K", "S", "step calls", "C*(K,S)+1", "calls/(C*+1)", "most held"))
    for slots in (10, 5, 3):
        gradient = checkpoint_gradient(predator_prey_while, slots)
        for k in (10, 100, 1000, 10000, 100000)[:5 if slots > 3 else 4]:
            args = integrator_args(k)
            LAST_RUN.clear()
            result = gradient(*args)
            calls, held = step_calls(), LAST_RUN["most_held"]
            assert LAST_RUN["steps"] == k, LAST_RUN
            assert same_gradient(result, stack(*args)), (slots, k)
            optimum = optimal_cost(k, slots) + 1
            print("{:>7} {:>4} {:>11} {:>10} {:>13.2f} {:>6} {}".format(
                k, slots, calls, optimum, calls / optimum, held,
                "<= S" if held <= slots else "> S!"), flush=True)
    print("calls/(C*+1): step calls of the online schedule (the trip count unknown until the loop "
          "ends) / the offline optimum for the same K and S (+1 guards C* = 0)")
    print("most held: the most loop states the tape kept at once (LAST_RUN most_held); every "
          "gradient agrees with the stack's to 1e-8 relative")


# --- the checkpointed pendulum: time against the schedule's cost, memory, online ---------

PENDULUM_WRT = ("damping", "theta0")


def pendulum_args(k):
    """examples/pendulum.py over ten seconds of motion in k steps."""
    return (0.3, 1.0, k, 10.0 / k)


def pendulum_checkpoint_rows(k, repeats):
    """For the checkpointed pendulum at k steps with S = ceil(log2 k) slots, per schedule:
    (schedule, gradient / forward, step calls / k, bound, their ratio), where bound = step calls
    / k + the stack gradient / forward (what the schedule costs: its trips and the stack adjoint
    of every trip).  Every gradient must equal the stack's to 1e-9 relative."""
    args = pendulum_args(k)
    slots = math.ceil(math.log2(k))
    schedules = ("revolve", "segments")
    candidates = {"forward": simulate, "stack": derivo.grad(simulate, wrt=PENDULUM_WRT)}
    candidates.update((schedule, derivo.grad(simulate, wrt=PENDULUM_WRT, loops="checkpoint",
                                             checkpoints=slots, schedule=schedule))
                      for schedule in schedules)
    reference = candidates["stack"](*args)
    calls = {}
    for schedule in schedules:
        result = candidates[schedule](*args)
        assert all(math.isclose(a, b, rel_tol=1e-9) for a, b in zip(result, reference)), schedule
        calls[schedule] = step_calls()
    # Interleaved, each round timing every candidate once, in CPU time (time.process_time):
    # on a loaded machine a call of a second is preempted where one of 25 ms may not be.
    best = dict.fromkeys(candidates, float("inf"))
    for _ in range(repeats):
        for name, function in candidates.items():
            start = time.process_time()
            function(*args)
            best[name] = min(best[name], time.process_time() - start)
    stack_ratio = best["stack"] / best["forward"]
    rows = []
    for schedule in schedules:
        ratio, per_trip = best[schedule] / best["forward"], calls[schedule] / k
        bound = per_trip + stack_ratio
        rows.append((schedule, ratio, per_trip, bound, ratio / bound))
    return slots, stack_ratio, rows


def checkpoint_memory(ks, slots, schedule="segments"):
    """{k: (peak traced bytes, most states held)} of the checkpointed pendulum's gradient."""
    gradient = derivo.grad(simulate, wrt=PENDULUM_WRT, loops="checkpoint", checkpoints=slots,
                           schedule=schedule)
    peaks = {}
    for k in ks:
        gradient(*pendulum_args(min(k, 1000)))  # compiled and warm
        peaks[k] = (peak_memory(gradient, pendulum_args(k)), LAST_RUN["most_held"])
    return peaks


def online_ratio(k, slots):
    """Step calls of the online schedule (a while loop of k trips, reversed with ``slots``
    states) / those of the offline optimum C*(k, slots).  The tape runs a loop whose trips cost
    nothing (a step count and no arithmetic), so 1e6 trips take seconds; the counts are those
    of any while loop of k trips (tests/test_checkpoint_segments.py checks them)."""
    def trips(count, i):
        done = min(count, k - i)
        return done, i + done

    def step_vjp(seed, i):
        return (seed,)

    stack = []
    checkpointed_while(stack.append, trips, (0,), (), slots)
    stack.pop().reverse(step_vjp, 0.0)
    assert LAST_RUN["steps"] == k and LAST_RUN["most_held"] <= slots
    return (step_calls() + 1) / (optimal_cost(k, slots) + 1)


def checkpoint_tables(quick):
    k = 10000 if quick else 100000
    slots, stack_ratio, rows = pendulum_checkpoint_rows(k, 3 if quick else 5)
    print("checkpointed pendulum (examples/pendulum.py) at {} steps, S = ceil(log2 K) = {}; the "
          "stack gradient / forward: {:.2f}".format(k, slots, stack_ratio))
    print("{:<9} {:>9} {:>13} {:>9} {:>13}".format(
        "schedule", "grad/fwd", "step calls/K", "bound", "grad/fwd/bound"))
    for schedule, ratio, per_trip, bound, over in rows:
        print("{:<9} {:>9.2f} {:>13.2f} {:>9.2f} {:>13.2f}".format(
            schedule, ratio, per_trip, bound, over), flush=True)
    print("bound: step calls / K + stack gradient / forward, what the schedule itself costs "
          "(target: grad/fwd within 1.25 x bound)")
    print()
    ks = (1000, 10000) if quick else (1000, 10000, 100000, 1000000)
    print("checkpoint memory: peak traced memory (tracemalloc) of the checkpointed pendulum's "
          "gradient, S = 10")
    print("{:<9} ".format("schedule") + " ".join("{:>16}".format("K={:g}".format(k)) for k in ks))
    for schedule in ("revolve", "segments"):
        peaks = checkpoint_memory(ks, 10, schedule)
        print("{:<9} ".format(schedule) + " ".join(
            "{:>8.1f}KB {:>2} st".format(peaks[k][0] / 1024, peaks[k][1]) for k in ks), flush=True)
    print("st: the most loop states kept at once (<= S); target: peak flat within 10% from 1e4 "
          "to 1e6 steps")
    print()
    k = 10000 if quick else 1000000
    print("online checkpointing at {} trips: step calls / offline optimum C*(K, S)".format(k))
    print(" ".join("S={}: {:.3f}".format(s, online_ratio(k, s)) for s in (3, 5, 10)))


def main():
    began = time.perf_counter()
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
    print()
    integrator_table(quick)
    print()
    optimal_cost_table()
    print()
    online_table()
    print()
    checkpoint_tables(quick)
    print()
    print("total {:.0f} s".format(time.perf_counter() - began))


if __name__ == "__main__":
    main()
