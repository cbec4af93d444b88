"""Damped pendulum, many steps: forward call vs derivo's gradient vs a hand-written adjoint.

    python benchmarks/pendulum.py [steps ...]      (default 10000)

With numba installed it also times the forward compiled by numba.njit and derivo's
gradient with backend="numba" (its first call, transform and compile, printed apart),
and with JAX jax.jit(jax.grad) of the loop written with lax.fori_loop (float64).
Times are per call, in milliseconds, from interleaved rounds in one process (every
candidate of one step count side by side).
"""
import os

# One thread each, so that numpy's BLAS pool does not compete with the timed Python code.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")

import math  # noqa: E402
import sys  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import derivo  # noqa: E402
from _timing import interleaved  # noqa: E402
from examples.pendulum import simulate  # noqa: E402


def simulate_grad_hand(damping, theta0, steps=1000, dt=0.01):
    """(d loss/d damping, d loss/d theta0) by reverse mode, written by hand with accel inlined.

    Each step overwrites theta and omega, and its adjoint needs both old values: two pushes a step.
    """
    sin = math.sin
    cos = math.cos
    theta = theta0
    omega = 0.0
    stack = []
    push = stack.append
    for _ in range(steps):
        push(theta)
        push(omega)
        omega += dt * (-sin(theta) - damping * omega)
        theta += dt * omega
    pop = stack.pop
    decay = 1.0 - dt * damping
    btheta = 2.0 * theta
    bomega = 0.2 * omega
    bdamping = 0.0
    for _ in range(steps):
        bomega += dt * btheta
        omega = pop()
        theta = pop()
        bdamping -= dt * omega * bomega
        btheta -= dt * cos(theta) * bomega
        bomega *= decay
    return bdamping, btheta


def central_difference(args, i, h=1e-6):
    hi = list(args)
    lo = list(args)
    hi[i] += h
    lo[i] -= h
    return (simulate(*hi) - simulate(*lo)) / (2 * h)


def check(args, grads):
    fd = (central_difference(args, 0), central_difference(args, 1))
    hand = simulate_grad_hand(*args)
    for name, g in grads.items():
        got = g(*args)
        for ref_name, expected in (("central difference", fd), ("hand adjoint", hand)):
            for i in (0, 1):
                rel = abs(got[i] - expected[i]) / abs(expected[i])
                if rel > 1e-6:
                    raise SystemExit(f"{name} gives {got!r} at {args}; {ref_name} {expected!r} (rel. {rel:.1e})")


def compiled_candidates():
    """{name: (gradient or forward, a note)} of the compiled competitors that import:
    numba's forward, derivo's numba backend (a function of the step count: each is
    transformed and compiled on its first call, timed here), and jax.jit(jax.grad)."""
    import time
    candidates = {}
    try:
        import numba
    except ImportError as err:
        print(f"numba rows: n/a ({err})")
    else:
        from run_all import numba_forward
        forward = numba_forward(numba, simulate)
        start = time.perf_counter(), time.process_time()
        derivative = derivo.grad(simulate, wrt=("damping", "theta0"), backend="numba")
        made = time.perf_counter(), time.process_time()
        derivative(0.3, 1.0, 10, 0.01)
        called = time.perf_counter(), time.process_time()
        candidates["numba fwd"] = forward
        candidates["numba"] = derivative
        print("numba backend (wall / CPU s): transform {:.3f} / {:.3f}, first call (numba "
              "compiles, or loads from its cache) {:.3f} / {:.3f}".format(
                  made[0] - start[0], made[1] - start[1], called[0] - made[0],
                  called[1] - made[1]))
    try:
        import jax
    except ImportError as err:
        print(f"jax.jit row: n/a ({err})")
    else:
        from run_all import simulate_fori
        jax.config.update("jax_enable_x64", True)
        jitted = jax.jit(jax.grad(simulate_fori(jax.numpy, jax.lax), argnums=(0, 1)),
                         static_argnums=(2,))

        def jit(damping, theta0, steps, dt):
            return tuple(float(g) for g in jitted(damping, theta0, steps, dt))

        candidates["jax.jit"] = jit
    return candidates


def main():
    counts = [int(a) for a in sys.argv[1:]] or [10_000]
    compiled = compiled_candidates()
    for steps in counts:
        time_steps(steps, compiled)


def time_steps(steps, compiled):
    # The same ten seconds of motion at any step count, so the gradient stays of order one.
    args = (0.3, 1.0, steps, 10.0 / steps)
    grads = {"derivo": derivo.grad(simulate, wrt=("damping", "theta0")), "hand": simulate_grad_hand}
    grads.update((name, fn) for name, fn in compiled.items() if name != "numba fwd")
    check(args, grads)
    print(f"{', '.join(grads)} agree with a central difference and each other to 1e-6 "
          f"relative at {steps} steps")
    print()

    forwards = {"forward": simulate}
    if "numba fwd" in compiled:
        forwards["numba fwd"] = compiled["numba fwd"]
        forwards["numba fwd"](*args)
    t = interleaved({**forwards, **grads}, args)
    fwd, dvo, hand = t["forward"][0], t["derivo"][0], t["hand"][0]
    print("per call, min / median over 7 interleaved rounds of ~50 ms; ratios of minima")
    print(f"{'steps':>6} {'forward ms':>17} {'derivo ms':>17} {'hand ms':>17} "
          f"{'derivo/fwd':>10} {'hand/fwd':>9} {'derivo/hand':>11}")
    print(f"{steps:6d} " + " ".join(f"{t[n][0] / 1e3:7.3f} / {t[n][1] / 1e3:7.3f}" for n in ("forward", "derivo", "hand"))
          + f" {dvo / fwd:10.2f} {hand / fwd:9.2f} {dvo / hand:11.2f}")
    if compiled:
        print()
        print(f"{'compiled':>10} {'min ms':>8} {'median ms':>10} {'/numba fwd':>11} "
              f"{'jax.jit/it':>11}")
        for name in ("numba fwd", "numba", "jax.jit"):
            if name in t:
                row = f"{name:>10} {t[name][0] / 1e3:8.3f} {t[name][1] / 1e3:10.3f}"
                row += f" {t[name][0] / t['numba fwd'][0]:11.2f}" if "numba fwd" in t else " " * 12
                row += f" {t['jax.jit'][0] / t[name][0]:11.2f}" if "jax.jit" in t else ""
                print(row)
    print()


if __name__ == "__main__":
    main()
