"""Bayesian optimisation of a one-dimensional function, after autograd's
examples/bayesian_optimization.py: a Gaussian process models the function from
the points seen so far, and the next point is the one that maximises the expected
new maximum, found by L-BFGS-B with derivo's gradient of the acquisition.  The
acquisition returns an array of one element, as autograd's does.

    python examples/bayesian_optimization.py
"""
import numpy as np
from scipy.optimize import minimize
from scipy.stats import norm

import derivo


def rbf_covariance(kernel_params, x, xp):
    output_scale = np.exp(kernel_params[0])
    lengthscales = np.exp(kernel_params[1:])
    diffs = np.expand_dims(x / lengthscales, 1) - np.expand_dims(xp / lengthscales, 0)
    return output_scale * np.exp(-0.5 * np.sum(diffs ** 2, axis=2))


def predict(params, x, y, xstar):
    """The GP's predictive mean and covariance at xstar."""
    mean, noise_scale, cov_params = params[0], np.exp(params[1]) + 0.0001, params[2:]
    cov_f_f = rbf_covariance(cov_params, xstar, xstar)
    cov_y_f = rbf_covariance(cov_params, x, xstar)
    cov_y_y = rbf_covariance(cov_params, x, x) + noise_scale * np.eye(len(y))
    weights = np.linalg.solve(cov_y_y, cov_y_f).T
    return mean + np.dot(weights, y - mean), cov_f_f - np.dot(weights, cov_y_f)


def expected_new_max(mean, std, max_so_far):
    return (max_so_far - (mean - max_so_far) * norm.cdf(mean, max_so_far, std)
            + std * norm.pdf(mean, max_so_far, std))


def negative_acquisition(xstar, params, X, y):
    mean, cov = predict(params, X, y, np.atleast_2d(xstar))
    return -expected_new_max(mean, np.sqrt(np.diag(cov)), np.max(y))


acquisition_value_and_grad = derivo.value_and_grad(negative_acquisition)


def example_function(x):
    return np.sum(x * np.sin(10.0 * x) + x) - 1


def next_point(params, X, y, rs):
    best = None
    for start in rs.rand(5) * 1.1:
        result = minimize(acquisition_value_and_grad, x0=np.array([start]), args=(params, X, y),
                          jac=True, method="L-BFGS-B", bounds=[(0.0, 1.1)],
                          options={"maxiter": 10})
        if best is None or result.fun < best.fun:
            best = result
    return best.x


def main(iterations=8):
    params = np.array([0.0, -3.0, 0.0, -2.0])
    X, y = np.array([[0.55]]), np.array([example_function(0.55)])
    rs = np.random.RandomState(0)
    for _ in range(iterations):
        x = next_point(params, X, y, rs)
        X, y = np.vstack([X, [x]]), np.append(y, example_function(x))
    print("best x {:.3f}, f(x) {:.3f} after {} evaluations".format(X[np.argmax(y), 0],
                                                                   np.max(y), len(y)))
    return X, y


if __name__ == "__main__":
    main()
