"""Forward mode: the Bessel series and the damped pendulum, differentiated by tangent code.

derivo writes each statement's tangent next to the statement (`ds` next to `s`), so the
derivative is computed in the same single pass as the value, with no stack: memory does
not grow with the number of loop trips. One forward pass gives one directional derivative
(a Jacobian-vector product); reverse mode gives the whole gradient of a scalar in one pass.

    python examples/forward_mode.py
"""
import os
import sys

import derivo

# The functions of examples/bessel.py and examples/pendulum.py, differentiated here
# in forward mode instead.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from examples.bessel import besselj  # noqa: E402
from examples.pendulum import simulate  # noqa: E402

# Called with the tangent(s) first, then the function's arguments: (value, tangent).
besselj_jvp = derivo.tangent(besselj, wrt="z")
simulate_jvp = derivo.tangent(simulate, wrt=("damping", "theta0"))


def main():
    v, z = 2, 1.0
    value, slope = derivo.jvp(besselj, (v, z), (None, 1.0))
    # J_v'(z) = (J_{v-1}(z) - J_{v+1}(z)) / 2
    closed = (besselj(v - 1, z) - besselj(v + 1, z)) / 2
    print(f"J_{v}({z}) = {value!r}")
    print(f"d/dz J_{v}(z) at z={z}: forward mode {slope!r}, (J_1 - J_3) / 2 = {closed!r}")
    print()

    damping, theta0, steps = 0.3, 1.0, 1000
    direction = (0.6, -0.8)
    loss, tangent = simulate_jvp(*direction, damping, theta0, steps)
    gradient = derivo.grad(simulate, wrt=("damping", "theta0"))(damping, theta0, steps)
    along = sum(g * d for g, d in zip(gradient, direction))
    print(f"loss(damping={damping}, theta0={theta0}, steps={steps}) = {loss!r}")
    print(f"derivative along {direction}: forward mode {tangent!r}, "
          f"reverse-mode gradient . direction {along!r}")
    print()
    print("Generated tangent source (derivo.tangent(besselj, wrt='z').source):")
    print()
    print(besselj_jvp.source)
    print(simulate_jvp.source)


if __name__ == "__main__":
    main()
