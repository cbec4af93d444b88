"""Calibrating a classifier's confidence: temperature scaling fitted by Newton's method.

A trained classifier's logits are often overconfident. Temperature scaling divides them by
one number T, chosen to minimise the negative log-likelihood of held-out labels. The loss is
NumPy code (a log-softmax over a batch); Newton's method needs its first and second
derivatives in T, ``derivo.grad(nll)`` and ``derivo.grad(derivo.grad(nll))``.  The second
is reverse mode over the generated first derivative, which derivo takes by forward mode.

    python examples/temperature.py
"""
import numpy as np

import derivo


def nll(temperature, logits, labels):
    """Mean negative log-likelihood of ``labels`` under softmax(logits / temperature)."""
    scaled = logits / temperature
    shifted = scaled - np.max(scaled, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    picked = np.sum(log_probs * labels, axis=1)
    return -np.mean(picked)


nll_slope = derivo.grad(nll)
nll_curvature = derivo.grad(nll_slope)


def fit_temperature(logits, labels, temperature=1.0, steps=10):
    """Newton's method on ``nll`` in the temperature."""
    for _ in range(steps):
        step = nll_slope(temperature, logits, labels) / nll_curvature(temperature, logits, labels)
        temperature -= step
    return temperature


def overconfident_problem(samples=200, classes=4, seed=0):
    """Logits of a classifier that is right 70% of the time but twice too sure."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(classes, size=samples)
    noisy = np.where(rng.random(samples) < 0.7, truth, rng.integers(classes, size=samples))
    logits = 3.0 * np.eye(classes)[noisy] + rng.normal(size=(samples, classes))
    return 2.0 * logits, np.eye(classes)[truth]


def main():
    logits, labels = overconfident_problem()
    fitted = fit_temperature(logits, labels)
    print("negative log-likelihood at T=1: {:.4f}".format(nll(1.0, logits, labels)))
    print("fitted temperature T = {:.4f}".format(fitted))
    print("negative log-likelihood at T:   {:.4f}".format(nll(fitted, logits, labels)))
    print("slope there: {:.2e}".format(nll_slope(fitted, logits, labels)))
    print()
    print("The second derivative's generated source (nll_curvature.source):")
    print()
    print(nll_curvature.source)


if __name__ == "__main__":
    main()
