"""The first four derivatives of tanh on a grid, by nesting derivo.elementwise_grad.

Each level is forward mode over the level below (one tangent pass of ones: an
elementwise function's Jacobian is diagonal), checked here against the closed
forms with t = tanh x and s = 1 - t^2:

    tanh' = s,  tanh'' = -2ts,  tanh''' = 4t^2 s - 2s^2,  tanh'''' = 16ts^2 - 8t^3 s

    python examples/tanh_derivatives.py
"""
import numpy as np

import derivo

d = derivo.elementwise_grad
tanh_jvp = derivo.tangent(np.tanh)        # the tangent code the first level calls
DERIVATIVES = [np.tanh, d(np.tanh), d(d(np.tanh)), d(d(d(np.tanh))), d(d(d(d(np.tanh))))]


def closed_forms(x):
    t = np.tanh(x)
    s = 1 - t * t
    return [t, s, -2 * t * s, 4 * t * t * s - 2 * s * s, 16 * t * s * s - 8 * t ** 3 * s]


def main():
    x = np.linspace(-3.0, 3.0, 7)
    print("x        " + "".join("{:>9.2f}".format(v) for v in x))
    for order, (derivative, exact) in enumerate(zip(DERIVATIVES, closed_forms(x))):
        values = derivative(x)
        assert np.allclose(values, exact, atol=1e-12), order
        label = "tanh" + "'" * order
        print("{:9}".format(label) + "".join("{:>9.4f}".format(v) for v in values))
    print("\nall four match their closed forms; the first level's tangent code:\n")
    print(tanh_jvp.source)


if __name__ == "__main__":
    main()
