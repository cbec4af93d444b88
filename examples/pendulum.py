"""A damped pendulum integrated by symplectic Euler: a long counted loop calling a user function.

The loss depends on the damping coefficient and the initial angle through every one of the
`steps` iterations; reverse mode gets both partial derivatives in one backward sweep.

    python examples/pendulum.py
"""
import math

import derivo


def accel(theta, omega, damping):
    return -math.sin(theta) - damping * omega


def simulate(damping, theta0, steps=1000, dt=0.01):
    theta = theta0
    omega = 0.0
    for _ in range(steps):
        omega += dt * accel(theta, omega, damping)
        theta += dt * omega
    return theta * theta + 0.1 * omega * omega


simulate_grad = derivo.grad(simulate, wrt=("damping", "theta0"))


def central_difference(f, args, i, h=1e-6):
    hi = list(args)
    lo = list(args)
    hi[i] += h
    lo[i] -= h
    return (f(*hi) - f(*lo)) / (2 * h)


def main():
    damping, theta0, steps = 0.3, 1.0, 1000
    args = (damping, theta0, steps)
    print(f"loss(damping={damping}, theta0={theta0}, steps={steps}) = {simulate(*args)!r}")
    grads = simulate_grad(*args)
    for name, i, g in (("damping", 0, grads[0]), ("theta0", 1, grads[1])):
        fd = central_difference(simulate, args, i)
        print(f"d loss / d {name:7s}: derivo {g: .12f}   central difference {fd: .12f}   "
              f"rel. diff {abs(g - fd) / max(abs(fd), 1e-300):.1e}")
    print()
    print(simulate_grad.source)


if __name__ == "__main__":
    main()
