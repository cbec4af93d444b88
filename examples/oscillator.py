"""A harmonic oscillator integrated by symplectic Euler, differentiated two ways.

Each step only adds to a variable something that does not depend on it
(``x += dt * v``, then ``v -= dt * stiffness * x``), so every step can be undone.
``derivo.grad(..., loops="reversible")`` uses that: its reverse sweep runs the
loop backwards, subtracting what the forward sweep added (each trip checks that gives x
and v back to the bit, and saves the few it does not).  The default, ``loops="stack"``,
saves the overwritten values instead (memory linear in the number of steps).

    python examples/oscillator.py
"""
import derivo


def energy_after(stiffness, x0, steps=1000, dt=0.01):
    x = x0
    v = 0.0
    for _ in range(steps):
        x += dt * v
        v -= dt * stiffness * x
    return 0.5 * v * v + 0.5 * stiffness * x * x


energy_grad = derivo.grad(energy_after, wrt=("stiffness", "x0"), loops="reversible")
energy_grad_stack = derivo.grad(energy_after, wrt=("stiffness", "x0"))


def main():
    args = (2.0, 1.0, 1000)
    reversible = energy_grad(*args)
    stack = energy_grad_stack(*args)
    h = 1e-6
    numeric = ((energy_after(2.0 + h, 1.0, 1000) - energy_after(2.0 - h, 1.0, 1000)) / (2 * h),
               (energy_after(2.0, 1.0 + h, 1000) - energy_after(2.0, 1.0 - h, 1000)) / (2 * h))
    print("energy after 1000 steps:", energy_after(*args))
    print("gradient, reversible loop:", reversible)
    print("gradient, stack:          ", stack)
    print("central differences:      ", numeric)
    print()
    print(energy_grad.source)


if __name__ == "__main__":
    main()
