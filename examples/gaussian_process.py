"""Fit a Gaussian process's kernel hyperparameters by gradient descent on the
negative log marginal likelihood.

With the squared-exponential kernel plus noise,

    K = amplitude * exp(-|x_i - x_j|^2 / (2 lengthscale^2)) + noise * I

the negative log-likelihood of observations y is

    nll = y^T K^-1 y / 2 + log det K / 2 + n log(2 pi) / 2

computed the stable way: one Cholesky factorisation K = L L^T
(scipy.linalg.cho_factor), K^-1 y by two triangular solves with it
(cho_solve), and log det K = 2 sum(log diag L).  The hyperparameters are
optimised as logarithms, so that they stay positive.  derivo differentiates
through the factorisation; its adjoint reuses the factor.

    python examples/gaussian_process.py
"""
import numpy as np
import scipy.linalg

import derivo


def squared_distances(X):
    return np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)


def negative_log_likelihood(log_amplitude, log_lengthscale, log_noise, distances, y):
    amplitude = np.exp(log_amplitude)
    lengthscale = np.exp(log_lengthscale)
    noise = np.exp(log_noise)
    n = y.shape[0]
    K = amplitude * np.exp(-0.5 * distances / lengthscale ** 2) + noise * np.eye(n)
    factor = scipy.linalg.cho_factor(K, lower=True)
    alpha = scipy.linalg.cho_solve(factor, y)
    log_det = 2.0 * np.sum(np.log(np.diag(factor[0])))
    return 0.5 * (y @ alpha) + 0.5 * log_det + 0.5 * n * np.log(2 * np.pi)


HYPERPARAMETERS = ("log_amplitude", "log_lengthscale", "log_noise")
gp_nll_grad = derivo.value_and_grad(negative_log_likelihood, wrt=HYPERPARAMETERS)


def problem(n=60, seed=0):
    """Noisy samples of a smooth function on [0, 10]: (distances, y)."""
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(0.0, 10.0, size=(n, 1)), axis=0)
    y = np.sin(X[:, 0]) + 0.5 * np.sin(3.0 * X[:, 0]) + 0.1 * rng.normal(size=n)
    return squared_distances(X), y


def central_differences(f, params, data, h=1e-6):
    out = []
    for i in range(len(params)):
        up, down = list(params), list(params)
        up[i] += h
        down[i] -= h
        out.append((f(*up, *data) - f(*down, *data)) / (2 * h))
    return np.array(out)


def fit(params, data, steps=200, rate=0.01):
    """Gradient descent on the log hyperparameters; the history of (step, nll)."""
    params = np.array(params, dtype=float)
    history = []
    for step in range(steps + 1):
        value, gradient = gp_nll_grad(*params, *data)
        if step % 40 == 0:
            history.append((step, value))
        params = params - rate * np.array(gradient)
    return params, history


def main():
    data = problem()
    start = (0.0, 0.0, -1.0)
    value, gradient = gp_nll_grad(*start, *data)
    numeric = central_differences(negative_log_likelihood, start, data)
    print("gradient at the start", np.round(gradient, 6))
    print("central differences  ", np.round(numeric, 6))
    print(f"max relative difference {np.max(np.abs(np.array(gradient) - numeric) / np.abs(numeric)):.1e}")
    print()
    params, history = fit(start, data)
    for step, nll in history:
        print(f"  step {step:3d}  negative log-likelihood {nll:9.4f}")
    amplitude, lengthscale, noise = np.exp(params)
    print(f"fitted: amplitude {amplitude:.3f}, lengthscale {lengthscale:.3f}, noise variance "
          f"{noise:.4f} (the data's noise variance is 0.01)")
    print()
    print(gp_nll_grad.source)


if __name__ == "__main__":
    main()
