"""The worked example of the operator-overloading seed, differentiated from its source.

f(x1, x2) = ln(x1) + x1*x2 - sin(x2) at (2, 5) has the gradient (1/x1 + x2, x1 - cos(x2))
= (5.5, 1.7163378145367738).

    python examples/seed004.py
"""
import math

import derivo


def f(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


f_grad = derivo.grad(f, wrt=(0, 1))


def main():
    x1, x2 = 2.0, 5.0
    print(f"f({x1}, {x2}) = {f(x1, x2)!r}")
    print(f"derivo.grad(f, wrt=(0, 1))({x1}, {x2}) = {f_grad(x1, x2)!r}")
    print(f"by hand (1/x1 + x2, x1 - cos(x2))  = {(1 / x1 + x2, x1 - math.cos(x2))!r}")
    value, grad_x1 = derivo.value_and_grad(f, wrt=0)(x1, x2)
    print(f"derivo.value_and_grad(f, wrt=0)({x1}, {x2}) = ({value!r}, {grad_x1!r})")
    print()
    print(f_grad.source)


if __name__ == "__main__":
    main()
