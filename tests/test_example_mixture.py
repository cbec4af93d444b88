"""examples/mixture_model.py: the Gaussian mixture's gradient (through scipy.stats.norm.logpdf,
logsumexp and log_softmax) matches central differences, and gradient ascent recovers the
components the points were drawn from."""

import numpy as np
import pytest

pytest.importorskip("scipy")

from examples.mixture_model import fit, log_likelihood, log_likelihood_grad, sample  # noqa: E402


def central_differences(args, index, h=1e-6):
    x = args[index]
    out = np.zeros(x.shape)
    for position in np.ndindex(x.shape):
        step = np.zeros(x.shape)
        step[position] = h
        up, down = list(args), list(args)
        up[index], down[index] = x + step, x - step
        out[position] = (log_likelihood(*up) - log_likelihood(*down)) / (2 * h)
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_the_gradient_matches_central_differences(seed):
    rng = np.random.default_rng(seed)
    args = [rng.normal(size=3), rng.normal(size=3) * 2, 0.3 * rng.normal(size=3), sample(50, seed)]
    gradients = log_likelihood_grad(*args)
    assert len(gradients) == 3
    for index, got in enumerate(gradients):
        np.testing.assert_allclose(got, central_differences(args, index), rtol=1e-6, atol=1e-9)


def test_gradient_ascent_recovers_the_components():
    x = sample()
    logits, means, log_scales = fit(x)
    order = np.argsort(means)
    np.testing.assert_allclose(means[order], [-4.0, 0.0, 5.0], atol=0.3)
    np.testing.assert_allclose(np.exp(log_scales)[order], [1.0, 0.5, 1.5], atol=0.2)
    weights = np.exp(logits - np.log(np.sum(np.exp(logits))))[order]
    np.testing.assert_allclose(weights, [0.5, 0.3, 0.2], atol=0.06)
