"""A one-dimensional Gaussian mixture fitted by gradient ascent on its log-likelihood.

    log p(x) = logsumexp_k (log w_k + log N(x; mu_k, sigma_k))

The weights are a softmax of free logits and the scales exponentials of free log-scales, so
every parameter is unconstrained; derivo differentiates scipy.stats.norm.logpdf in the data,
loc and scale, and scipy.special.logsumexp and log_softmax, from their rules.

    python examples/mixture_model.py
"""
import numpy as np
from scipy.special import log_softmax, logsumexp
from scipy.stats import norm

import derivo


def log_likelihood(logits, means, log_scales, x):
    """The mean log-likelihood of the points x under the mixture."""
    log_weights = log_softmax(logits)
    components = norm.logpdf(x[:, None], loc=means, scale=np.exp(log_scales))
    return np.mean(logsumexp(log_weights + components, axis=1))


log_likelihood_grad = derivo.grad(log_likelihood, wrt=("logits", "means", "log_scales"))


def sample(n=400, seed=0):
    """Points from three well separated components."""
    rng = np.random.default_rng(seed)
    which = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    return rng.normal(np.array([-4.0, 0.0, 5.0])[which], np.array([1.0, 0.5, 1.5])[which])


def fit(x, steps=500, rate=0.5):
    params = [np.zeros(3), np.array([-1.0, 0.0, 1.0]), np.zeros(3)]
    for _ in range(steps):
        gradients = log_likelihood_grad(*params, x)
        params = [p + rate * g for p, g in zip(params, gradients)]
    return params


if __name__ == "__main__":
    x = sample()
    logits, means, log_scales = fit(x)
    order = np.argsort(means)
    print("weights", np.round(np.exp(log_softmax(logits))[order], 2))
    print("means  ", np.round(means[order], 2))
    print("scales ", np.round(np.exp(log_scales)[order], 2))
    print("mean log-likelihood", round(float(log_likelihood(logits, means, log_scales, x)), 4))
