"""Python control flow that derivo differentiates: each construct is marked where it appears.

The derivative of a program with branches is the derivative of the path the inputs take,
so derivo's gradient agrees with a central finite difference away from the branch boundaries.

    python examples/control_flow.py
"""
import math

import derivo


def shaped(x, y):
    if x < 0.0:                                  # early return
        return y * math.exp(x)
    if x < 1.0:                                  # if / elif / else
        a = x * x
    elif x < 2.0:
        a = 2.0 * x - 1.0
    else:
        a = 3.0 + math.log(x / 2.0)
    a = a * y if y > 0.0 else a - y              # conditional expression
    for w in (0.5, 1.5, 2.5):                    # for over a tuple of floats
        if w * a > 4.0:
            continue                             # continue
        a += w * math.sin(w * x)
    t = a
    while t > 0.1:                               # while with a data-dependent exit
        t *= 0.5
        if t < y:
            break                                # break
    return max(t, 0.06) + min(a, 2.0 + y * y)    # min / max


shaped_grad = derivo.grad(shaped, wrt=("x", "y"))


def central_difference(f, args, i, h=1e-6):
    hi = list(args)
    lo = list(args)
    hi[i] += h
    lo[i] -= h
    return (f(*hi) - f(*lo)) / (2 * h)


def main():
    print(f"{'x':>5} {'y':>5} {'f(x, y)':>12} {'df/dx':>12} {'(finite diff)':>14} {'df/dy':>12} {'(finite diff)':>14}")
    for x, y in ((-0.5, 2.0), (0.5, 0.3), (0.8, 1.5), (1.5, -0.5), (1.2, -0.3), (3.0, 1.2)):
        dx, dy = shaped_grad(x, y)
        fx = central_difference(shaped, (x, y), 0)
        fy = central_difference(shaped, (x, y), 1)
        print(f"{x:5.2f} {y:5.2f} {shaped(x, y):12.8f} {dx:12.8f} {fx:14.8f} {dy:12.8f} {fy:14.8f}")
    print()
    print(shaped_grad.source)


if __name__ == "__main__":
    main()
