"""A line fitted to points with outliers by a trimmed loss: sorted, max and a tuple of parameters.

The loss sorts the squared residuals and averages all but the largest few, so the outliers
stop pulling the line once they are the points it fits worst; a hinge on the largest
remaining residual (max of a list) keeps the worst kept point in check. derivo
differentiates sorted and max through the positions they pick, and the gradient of the
parameter tuple (slope, intercept) is a tuple, as in JAX and autograd.

    python examples/robust_line.py
"""
import derivo

KEEP = 7  # of the 10 points, the 7 best fitted count


def trimmed_loss(params, xs, ys):
    slope, intercept = params
    squares = sorted((slope * x + intercept - y) ** 2 for x, y in zip(xs, ys))
    kept = squares[:KEEP]
    return sum(kept) / KEEP + 0.1 * max(max(kept) - 1.0, 0.0)


trimmed_loss_grad = derivo.grad(trimmed_loss)


def points():
    """y = 2x + 1 at x = 0..9, with three points thrown far off."""
    xs = [float(x) for x in range(10)]
    ys = [2.0 * x + 1.0 for x in xs]
    for i, offset in ((2, 15.0), (5, -20.0), (8, 25.0)):
        ys[i] += offset
    return xs, ys


def fit(params, xs, ys, steps=400, rate=0.01):
    for _ in range(steps):
        gradient = trimmed_loss_grad(params, xs, ys)
        params = tuple(p - rate * g for p, g in zip(params, gradient))
    return params


def main():
    xs, ys = points()
    params = (0.0, 0.0)
    print(f"gradient at {params}: {trimmed_loss_grad(params, xs, ys)}")
    slope, intercept = fit(params, xs, ys)
    print(f"fitted line: y = {slope:.4f} x + {intercept:.4f}   (the points lie on y = 2 x + 1)")
    print()
    print(trimmed_loss_grad.source)


if __name__ == "__main__":
    main()
