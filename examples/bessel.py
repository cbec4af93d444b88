"""The Bessel function of the first kind J_v(z) by its power series, and its derivative in z.

The flagship example: a `while` loop whose trip count depends on the data, with in-place
updates (`k += 1`, `s *= ...`, `out += s`). derivo writes the reverse-mode adjoint as plain
Python, with a stack holding only the values the loop overwrites and the adjoint needs.

    python examples/bessel.py
"""
import math

import derivo


def besselj(v, z, atol=1e-8):
    k = 0
    s = (z / 2) ** v / math.factorial(v)
    out = s
    while abs(s) > atol:
        k += 1
        s *= (-1) / k / (k + v) * (z / 2) ** 2
        out += s
    return out


besselj_grad = derivo.grad(besselj, wrt="z")


def main():
    v, z = 2, 1.0
    print(f"J_{v}({z}) = {besselj(v, z)!r}")
    # J_v'(z) = (J_{v-1}(z) - J_{v+1}(z)) / 2, which is 0.21024361585183... here
    print(f"d/dz J_{v}(z) at z={z} = {besselj_grad(v, z)!r}")
    print()
    print("Generated gradient source (derivo.grad(besselj, wrt='z').source):")
    print()
    print(besselj_grad.source)


if __name__ == "__main__":
    main()
