"""The length of a path through points in the plane, differentiated through a loop over its rows.

    length(P) = sum over i of |P[i+1] - P[i]|

The gradient with respect to an inner vertex is u_i - u_(i+1), the difference of the unit vectors
of the segments into and out of it: it points to where the path shortens fastest.  Gradient
descent on the inner vertices, with the ends held, pulls the path straight.

The function loops `for point in points[1:]`, over the rows of the array being differentiated;
derivo differentiates it as `for i in range(len(...)): point = ...[i]`, so each row's adjoint
goes back to its row of `points`.  `segment_lengths` walks the same path as Python is often
written, `for start, end in zip(points, points[1:])`, which derivo indexes the same way.

    python examples/path.py
"""
import numpy as np

import derivo


def path_length(points):
    total = 0.0
    previous = points[0]
    for point in points[1:]:
        step = point - previous
        total = total + np.sqrt(np.sum(step * step))
        previous = point
    return total


length_grad = derivo.grad(path_length)


def segment_lengths(points):
    total = 0.0
    for start, end in zip(points, points[1:]):
        total = total + np.linalg.norm(end - start)
    return total


segments_grad = derivo.grad(segment_lengths)


def unit_vector_difference(points):
    """The closed form: row i gets u_i - u_(i+1), u_i the unit vector from point i-1 to point i."""
    steps = np.diff(points, axis=0)
    units = steps / np.linalg.norm(steps, axis=1, keepdims=True)
    gradient = np.zeros_like(points)
    gradient[1:] += units
    gradient[:-1] -= units
    return gradient


def zigzag(n=7, seed=3):
    rng = np.random.default_rng(seed)
    xs = np.linspace(0.0, 3.0, n)
    return np.column_stack([xs, rng.normal(scale=0.5, size=n)])


def straighten(points, steps=200, rate=0.05):
    """Gradient descent on the inner vertices; the two ends stay where they are."""
    points = points.copy()
    for _ in range(steps):
        gradient = length_grad(points)
        points[1:-1] -= rate * gradient[1:-1]
    return points


def main():
    points = zigzag()
    gradient = length_grad(points)
    error = np.max(np.abs(gradient - unit_vector_difference(points)))
    print(f"length of the zigzag: {path_length(points):.6f}")
    print(f"largest difference from the closed form u_i - u_(i+1): {error:.2e}")
    if error > 1e-12:
        raise SystemExit("the gradient disagrees with the closed form")
    zipped = np.max(np.abs(segments_grad(points) - gradient))
    print(f"the same over zip(points, points[1:]): largest difference {zipped:.2e}")
    if zipped > 1e-12:
        raise SystemExit("the two formulations disagree")
    straight = straighten(points)
    chord = np.linalg.norm(points[-1] - points[0])
    print(f"after 200 descent steps: {path_length(straight):.6f} (the straight line: {chord:.6f})")
    print()
    print(length_grad.source)


if __name__ == "__main__":
    main()
