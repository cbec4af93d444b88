"""Derivatives of derivatives: Newton's method and a gradient penalty.

derivo differentiates the code it generates like any other code, so
derivatives nest.  Here ``grad(grad(f))`` gives the curvature Newton's method
needs, and ``penalized`` (a loss that calls a gradient, as gradient-penalty
regularisers do) is differentiated through that call.  Reverse mode takes the
gradient of generated code by running forward mode over it: the printed source
shows ``energy_grad_jvp`` (the tangent of the gradient) and the small function
that calls it once per differentiated parameter.

    python examples/nesting.py
"""
import math

import derivo


def energy(x, a):
    """A double well, tilted by ``a``."""
    return (x * x - 1.0) ** 2 + a * x + 0.1 * math.sin(3.0 * x)


slope = derivo.grad(energy, wrt="x")
curvature = derivo.grad(slope, wrt="x")


def newton(x, a, steps=8):
    """Newton's method for a stationary point of ``energy``, from ``x``."""
    for _ in range(steps):
        x -= slope(x, a) / curvature(x, a)
    return x


def penalized(x, a):
    """The energy plus half the squared slope: a gradient penalty."""
    g = slope(x, a)
    return energy(x, a) + 0.5 * g * g


penalized_grad = derivo.grad(penalized, wrt=("x", "a"))


def main():
    x = newton(1.2, 0.3)
    print("stationary point near 1.2: x = {:.12f}, slope there {:.2e}".format(x, slope(x, 0.3)))
    h = 1e-5
    numeric = (slope(0.7 + h, 0.3) - slope(0.7 - h, 0.3)) / (2 * h)
    print("curvature at 0.7: derivo {:.10f}, differences of the slope {:.10f}".format(
        curvature(0.7, 0.3), numeric))
    numeric = ((penalized(0.7 + h, 0.3) - penalized(0.7 - h, 0.3)) / (2 * h),
               (penalized(0.7, 0.3 + h) - penalized(0.7, 0.3 - h)) / (2 * h))
    print("gradient of the penalized energy:", penalized_grad(0.7, 0.3))
    print("central differences:             ", numeric)
    print()
    print(curvature.source)
    print(penalized_grad.source)


if __name__ == "__main__":
    main()
