"""Damped pendulum, many steps: forward call vs derivo's gradient vs a hand-written adjoint.

    python benchmarks/pendulum.py [steps]      (default 10000)

Times are per call, in milliseconds, from interleaved rounds in one process.
"""
import os

# One thread each, so that numpy's BLAS pool does not compete with the timed Python code.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

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


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    # The same ten seconds of motion at any step count, so the gradient stays of order one.
    args = (0.3, 1.0, steps, 10.0 / steps)
    grads = {"derivo": derivo.grad(simulate, wrt=("damping", "theta0")), "hand": simulate_grad_hand}
    check(args, grads)
    print(f"derivo and hand agree with a central difference and each other to 1e-6 relative at {steps} steps")
    print()

    t = interleaved({"forward": simulate, **grads}, args)
    fwd, dvo, hand = t["forward"][0], t["derivo"][0], t["hand"][0]
    print("per call, min / median over 7 interleaved rounds of ~50 ms; ratios of minima")
    print(f"{'steps':>6} {'forward ms':>17} {'derivo ms':>17} {'hand ms':>17} "
          f"{'derivo/fwd':>10} {'hand/fwd':>9} {'derivo/hand':>11}")
    print(f"{steps:6d} " + " ".join(f"{t[n][0] / 1e3:7.3f} / {t[n][1] / 1e3:7.3f}" for n in ("forward", "derivo", "hand"))
          + f" {dvo / fwd:10.2f} {hand / fwd:9.2f} {dvo / hand:11.2f}")


if __name__ == "__main__":
    main()
