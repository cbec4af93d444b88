"""A polynomial evaluated by Horner's rule, a Python loop over a list, fitted by gradient descent.

horner(coefficients, x) runs one trip per coefficient (highest degree first):

    value = (((c0 * x + c1) * x + c2) * x + ...)

Its gradient with respect to the list is the list of powers of x, and with respect to x the
derivative polynomial. derivo's reverse sweep walks the list backwards and stores each
coefficient's adjoint in one list (``bcoefficients[i] = bvalue``), so the gradient costs time
linear in the degree, as the loop does.

    python examples/horner.py
"""
import derivo


def horner(coefficients, x):
    value = 0.0
    for c in coefficients:
        value = value * x + c
    return value


horner_grad = derivo.grad(horner, wrt=(0, 1))


def squared_error(coefficients, xs, ys):
    """Mean squared error of the polynomial on the samples (xs[i], ys[i]), written as Python
    is: derivo differentiates the generator expression as the loop it stands for."""
    return sum((horner(coefficients, x) - y) ** 2 for x, y in zip(xs, ys)) / len(xs)


squared_error_grad = derivo.grad(squared_error)


def main():
    coefficients, x = [2.0, -3.0, 0.5, 1.0], 1.5   # 2x^3 - 3x^2 + x/2 + 1
    bcoefficients, bx = horner_grad(coefficients, x)
    print(f"p(x) = 2x^3 - 3x^2 + x/2 + 1 at x = {x}: {horner(coefficients, x)}")
    print(f"d p / d coefficients = {bcoefficients}   (x^3, x^2, x, 1 = "
          f"{[x ** 3, x ** 2, x, 1.0]})")
    print(f"d p / d x            = {bx}   (6x^2 - 6x + 1/2 = {6 * x * x - 6 * x + 0.5})")
    print()

    xs = [k / 10 - 1.0 for k in range(21)]
    ys = [1.0 - 2.0 * t + 0.5 * t ** 3 for t in xs]   # the cubic to recover
    fitted = [0.0, 0.0, 0.0, 0.0]
    for step in range(1001):
        gradient = squared_error_grad(fitted, xs, ys)
        fitted = [c - 0.5 * g for c, g in zip(fitted, gradient)]
        if step % 250 == 0:
            print(f"step {step:4d}: squared error {squared_error(fitted, xs, ys):.3e}, coefficients "
                  f"{[round(c, 4) for c in fitted]}")
    print("target coefficients [0.5, 0.0, -2.0, 1.0]")
    print()
    print(horner_grad.source)


if __name__ == "__main__":
    main()
