"""Objective functions of autograd's examples/ ported as a user ports them
(``autograd.numpy`` -> ``numpy``, ``autograd.scipy`` -> ``scipy``, ``grad`` ->
``derivo.grad``), each derivative compared with a central difference or with
autograd on the original code.  Programs derivo still refuses are tested to
refuse with a DerivoError, never a number."""

import itertools

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp
from scipy.stats import multivariate_normal as mvn
from scipy.stats import norm
from scipy.stats import t as student_t

import derivo

from checks import assert_close

H = 1e-6


def directional(f, x, gradient, *rest):
    direction = np.random.default_rng(3).standard_normal(np.shape(x))
    expected = (f(x + H * direction, *rest) - f(x - H * direction, *rest)) / (2 * H)
    assert_close(float(np.sum(gradient * direction)), float(np.sum(expected)), rtol=1e-5, atol=1e-7)


# --- tanh.py: elementwise_grad four deep ---

def tanh(x):
    return (1.0 - np.exp(-2 * x)) / (1.0 + np.exp(-(2 * x)))


def test_tanh_to_the_fourth_derivative():
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp

    def autograd_tanh(x):
        return (1.0 - anp.exp(-2 * x)) / (1.0 + anp.exp(-(2 * x)))
    x = np.linspace(-7, 7, 70)
    mine, theirs = tanh, autograd_tanh
    for _ in range(4):
        mine, theirs = derivo.elementwise_grad(mine), autograd.elementwise_grad(theirs)
        np.testing.assert_allclose(mine(x), theirs(x), rtol=1e-9, atol=1e-10)


# --- negative_binomial_maxlike.py: gammaln, a gradient inside a lambda ---

def negbin_loglike(r, p, x):
    return gammaln(r + x) - gammaln(r) - gammaln(x + 1) + x * np.log(p) + r * np.log(1 - p)


def test_negative_binomial_newton_derivatives():
    x = np.random.RandomState(0).poisson(np.random.RandomState(1).gamma(5, 1.0, size=200))
    loglike = lambda r, p: np.sum(negbin_loglike(r, p, x))  # noqa: E731
    p = lambda r: np.sum(x) / np.sum(r + x)  # noqa: E731
    rprime = lambda r: derivo.grad(loglike)(r, p(r))  # noqa: E731
    assert_close(derivo.grad(rprime)(3.0), (rprime(3.0 + H) - rprime(3.0 - H)) / (2 * H),
                 rtol=1e-5)
    both = derivo.grad(loglike, wrt=(0, 1))(3.0, 0.4)
    assert_close(both[1], (loglike(3.0, 0.4 + H) - loglike(3.0, 0.4 - H)) / (2 * H), rtol=1e-5)


def test_negative_binomial_third_derivative_is_refused():
    # autograd's newton passes fprime2=grad(grad(rprime)): a third derivative of array code
    x = np.array([3, 5, 1, 8])
    loglike = lambda r, p: np.sum(negbin_loglike(r, p, x))  # noqa: E731
    rprime = lambda r: derivo.grad(loglike)(r, 0.4)  # noqa: E731
    with pytest.raises(derivo.DerivoError):
        derivo.grad(derivo.grad(rprime))(3.0)


# --- logistic_regression.py: data as globals, boolean targets ---

def sigmoid(x):
    return 0.5 * (np.tanh(x) + 1)


def logistic_predictions(weights, inputs):
    return sigmoid(np.dot(inputs, weights))


def training_loss(weights):
    preds = logistic_predictions(weights, inputs)
    label_probabilities = preds * targets + (1 - preds) * (1 - targets)
    return -np.sum(np.log(label_probabilities))


inputs = np.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30],
                   [0.74, -2.49, 1.39]])
targets = np.array([True, True, False, True])


def test_logistic_regression_trains():
    training_gradient_fun = derivo.grad(training_loss)
    weights = np.array([0.0, 0.0, 0.0])
    directional(training_loss, weights + 0.1, training_gradient_fun(weights + 0.1))
    before = training_loss(weights)
    for _ in range(100):
        weights -= training_gradient_fun(weights) * 0.01
    assert training_loss(weights) < 0.5 * before


# --- define_gradient.py: a user's rule ---

def user_logsumexp(x):
    max_x = np.max(x)
    return max_x + np.log(np.sum(np.exp(x - max_x)))


derivo.defvjp(user_logsumexp,
              lambda g, ans, x: np.full(x.shape, g) * np.exp(x - np.full(x.shape, ans)))


def example_func(y):
    z = y ** 2
    lse = user_logsumexp(z)
    return np.sum(lse)


def test_a_users_own_gradient():
    y = np.random.default_rng(0).standard_normal(10)
    directional(example_func, y, derivo.grad(example_func)(y))


# --- gaussian_process.py, deep_gaussian_process.py, bayesian_optimization.py ---

def make_gp_funs(cov_func, num_cov_params):
    def unpack_kernel_params(params):
        mean = params[0]
        cov_params = params[2:]
        noise_scale = np.exp(params[1]) + 0.0001
        return mean, cov_params, noise_scale

    def predict(params, x, y, xstar):
        mean, cov_params, noise_scale = unpack_kernel_params(params)
        cov_f_f = cov_func(cov_params, xstar, xstar)
        cov_y_f = cov_func(cov_params, x, xstar)
        cov_y_y = cov_func(cov_params, x, x) + noise_scale * np.eye(len(y))
        pred_mean = mean + np.dot(np.linalg.solve(cov_y_y, cov_y_f).T, y - mean)
        pred_cov = cov_f_f - np.dot(np.linalg.solve(cov_y_y, cov_y_f).T, cov_y_f)
        return pred_mean, pred_cov

    def log_marginal_likelihood(params, x, y):
        mean, cov_params, noise_scale = unpack_kernel_params(params)
        cov_y_y = cov_func(cov_params, x, x) + noise_scale * np.eye(len(y))
        prior_mean = mean * np.ones(len(y))
        return mvn.logpdf(y, prior_mean, cov_y_y)
    return num_cov_params + 2, predict, log_marginal_likelihood


def rbf_covariance(kernel_params, x, xp):
    output_scale = np.exp(kernel_params[0])
    lengthscales = np.exp(kernel_params[1:])
    diffs = np.expand_dims(x / lengthscales, 1) - np.expand_dims(xp / lengthscales, 0)
    return output_scale * np.exp(-0.5 * np.sum(diffs ** 2, axis=2))


def test_deep_gaussian_process():
    n_data = 12
    X = np.linspace(-2, 2, n_data).reshape(n_data, 1)
    y = np.sign(X[:, 0]) + 0.1 * np.random.RandomState(0).randn(n_data)
    n1, _, lml1 = make_gp_funs(rbf_covariance, 2)
    n2, _, lml2 = make_gp_funs(rbf_covariance, 2)

    def log_marginal_likelihood(all_params):
        layer1_params, layer2_params = all_params[:n1], all_params[n1:n1 + n2]
        h = all_params[n1 + n2:]
        return lml1(layer1_params, X, h) + lml2(layer2_params, np.atleast_2d(h).T, y)
    objective = lambda params: -log_marginal_likelihood(params)  # noqa: E731
    p0 = 0.1 * np.random.RandomState(0).randn(n1 + n2 + n_data)
    value, gradient = derivo.value_and_grad(objective)(p0)
    assert value == pytest.approx(objective(p0))
    directional(objective, p0, gradient)


def expected_new_max(mean, std, max_so_far):
    return (max_so_far - (mean - max_so_far) * norm.cdf(mean, max_so_far, std)
            + std * norm.pdf(mean, max_so_far, std))


def defaultmax(x, default=-np.inf):
    if x.size == 0:
        return default
    return np.max(x)


def test_bayesian_optimization_acquisition_of_shape_one():
    _, predict, _ = make_gp_funs(rbf_covariance, 2)
    X, y = np.array([[0.1], [0.5], [0.9]]), np.array([0.2, -0.3, 0.5])
    model_params = np.zeros(4)

    def predict_func(xstar, model_params=model_params, X=X, y=y):
        mean, cov = predict(model_params, X, y, xstar)
        return mean, np.sqrt(np.diag(cov))

    def acquisition_function(xstar, y=y):
        xstar = np.atleast_2d(xstar)
        mean, std = predict_func(xstar)
        return expected_new_max(mean, std, defaultmax(y))
    objective = lambda x: -acquisition_function(x)  # noqa: E731
    value, gradient = derivo.value_and_grad(objective)(np.array([0.3]))
    assert np.shape(value) == (1,)
    directional(objective, np.array([0.3]), gradient)


# --- ica.py: scipy.stats.t.logpdf ---

def test_independent_component_analysis():
    observed, latent, n_samples = 5, 2, 7
    num_weights, num_latents = observed * latent, latent * n_samples
    data = np.random.RandomState(1).randn(n_samples, observed)

    def logprob(weights, latents, noise_std, observed_data):
        preds = np.dot(weights, latents).T
        return np.sum(student_t.logpdf(preds, 2.4, observed_data, noise_std))

    def objective(params):
        weights = np.reshape(params[:num_weights], (observed, latent))
        latents = np.reshape(params[num_weights:num_weights + num_latents], (latent, n_samples))
        return -logprob(weights, latents, np.exp(params[-1]), data) / n_samples
    p0 = np.random.RandomState(0).randn(num_weights + num_latents + 1)
    directional(objective, p0, derivo.grad(objective)(p0))


# --- natural_gradient_black_box_svi.py: a random state read in the objective ---

def black_box_variational_inference(logprob, D, num_samples):
    def unpack_params(params):
        return params[:D], params[D:]

    def gaussian_entropy(log_std):
        return 0.5 * D * (1.0 + np.log(2 * np.pi)) + np.sum(log_std)
    rs = np.random.RandomState(0)

    def variational_objective(params, t):
        mean, log_std = unpack_params(params)
        samples = rs.randn(num_samples, D) * np.exp(log_std) + mean
        lower_bound = gaussian_entropy(log_std) + np.mean(logprob(samples, t))
        return -lower_bound
    return variational_objective, derivo.grad(variational_objective), unpack_params


def test_natural_gradient_black_box_svi():
    obs_dim = 4
    Y = np.random.RandomState(42).randn(obs_dim)

    def log_density(x, t):
        mu, log_sigma = x[:, :obs_dim], x[:, obs_dim:]
        sigma_density = np.sum(norm.logpdf(log_sigma, 0, 1.35), axis=1)
        mu_density = np.sum(norm.logpdf(Y, mu, np.exp(log_sigma)), axis=1)
        return sigma_density + mu_density
    lam = np.concatenate([-np.ones(2 * obs_dim), -2 * np.ones(2 * obs_dim)])
    _, gradient, _ = black_box_variational_inference(log_density, 2 * obs_dim, 50)
    found = gradient(lam, 0)
    direction = np.random.default_rng(1).standard_normal(lam.shape)
    plus = black_box_variational_inference(log_density, 2 * obs_dim, 50)[0](lam + H * direction, 0)
    minus = black_box_variational_inference(log_density, 2 * obs_dim, 50)[0](lam - H * direction, 0)
    assert_close(np.sum(found * direction), (plus - minus) / (2 * H), rtol=1e-5)


# --- neural_net.py: l2 norm of the flattened parameters (flatten written by hand) ---

def flatten(params):
    return np.concatenate([np.ravel(p) for layer in params for p in layer]), None


def neural_net_predict(params, inputs):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs - logsumexp(outputs, axis=1, keepdims=True)


def log_posterior(params, inputs, targets, L2_reg):
    flattened, _ = flatten(params)
    log_prior = -L2_reg * np.dot(flattened, flattened)
    return log_prior + np.sum(neural_net_predict(params, inputs) * targets)


def test_neural_net_log_posterior():
    rs = np.random.RandomState(0)
    params = [(0.1 * rs.randn(m, n), 0.1 * rs.randn(n)) for m, n in itertools.pairwise([4, 5, 3])]
    X, T = rs.randn(6, 4), np.eye(3)[[0, 1, 2, 0, 1, 2]]
    gradient = derivo.grad(log_posterior)(params, X, T, 1.0)
    W0 = params[0][0]
    directional(lambda W: log_posterior([(W, params[0][1]), params[1]], X, T, 1.0), W0,
                gradient[0][0])


# --- sinusoid.py: a Taylor series with a data-dependent break, second order ---

def taylor_sin(x):
    currterm = x
    ans = currterm
    for i in range(1000):
        currterm = -currterm * x ** 2 / ((2 * i + 3) * (2 * i + 2))
        ans = ans + currterm
        if np.abs(currterm) < 0.2:
            break
    return ans


def test_taylor_series_second_derivative():
    autograd = pytest.importorskip("autograd")
    for x in np.linspace(-10, 10, 9):
        assert_close(derivo.grad(derivo.grad(taylor_sin))(x),
                     autograd.grad(autograd.grad(taylor_sin))(x), rtol=1e-9, atol=1e-12)


# --- fluidsim.py: a helper that changes its arguments in place ---

def project(vx, vy):
    p = np.zeros(vx.shape)
    for k in range(3):
        p = (vx + np.roll(p, 1, axis=0) + np.roll(p, -1, axis=1)) / 4.0
    vx -= 0.5 * (np.roll(p, -1, axis=0) - np.roll(p, 1, axis=0))
    vy -= 0.5 * (np.roll(p, -1, axis=1) - np.roll(p, 1, axis=1))
    return vx, vy


def fluid_objective(v):
    vx, vy = project(v * v, v + 1.0)
    return np.sum(vx * vy)


def test_fluidsim_project_writing_its_arguments():
    # fluidsim.py's project (a loop: not inlined) changes what it is given in place;
    # its derivative changes copies
    v = np.random.default_rng(5).normal(size=(4, 4))
    directional(fluid_objective, v, derivo.grad(fluid_objective)(v))


# --- gaussian_mixture_model.py: a loop over zip(*) of the tuple a helper returns ---

def gmm_log_likelihood(params, data):
    cluster_lls = []
    for log_proportion, mean, cov_sqrt in zip(*unpack_gmm_params(params)):
        cov = np.dot(cov_sqrt.T, cov_sqrt)
        cluster_lls.append(log_proportion + mvn.logpdf(data, mean, cov))
    return np.sum(logsumexp(np.vstack(cluster_lls), axis=0))


def unpack_gmm_params(params):
    log_proportions = params["log proportions"] - logsumexp(params["log proportions"])
    return log_proportions, params["means"], params["lower triangles"]


def test_gmm_loop_over_zip_of_a_returned_tuple_unpacked():
    rng = np.random.default_rng(4)
    params = {"log proportions": rng.normal(size=3), "means": rng.normal(size=(3, 2)),
              "lower triangles": rng.normal(size=(3, 2, 2)) * 0.3 + np.eye(2)}
    data = rng.normal(size=(5, 2))
    grads = derivo.grad(gmm_log_likelihood)(params, data)
    assert list(grads) == list(params)
    for key, value in params.items():
        assert np.shape(grads[key]) == np.shape(value)
        directional(lambda v: gmm_log_likelihood({**params, key: v}, data), value, grads[key])


# --- mixture_variational_inference.py: random draws in a called function ---

def diag_gaussian_log_density(x, mu, log_std):
    return np.sum(norm.logpdf(x, mu, np.exp(log_std)), axis=-1)


def unpack_gaussian_params(params):
    D = np.shape(params)[0] // 2
    return params[:D], params[D:]


def variational_log_density_gaussian(params, x):
    mean, log_std = unpack_gaussian_params(params)
    return diag_gaussian_log_density(x, mean, log_std)


def sample_diag_gaussian(params, num_samples, rs):
    mean, log_std = unpack_gaussian_params(params)
    return rs.randn(num_samples, np.shape(mean)[0]) * np.exp(log_std) + mean


def build_mog_elbo(logprob, num_samples, k, rs):
    def unpack_mixture_params(mixture_params):
        log_weights = mixture_params[:k] - logsumexp(mixture_params[:k])
        return log_weights, np.reshape(mixture_params[k:], (k, -1))

    def mixture_log_density(var_mixture_params, x):
        log_weights, var_params = unpack_mixture_params(var_mixture_params)
        component_log_densities = np.vstack(
            [variational_log_density_gaussian(params_k, x) for params_k in var_params]).T
        return logsumexp(component_log_densities + log_weights, axis=1, keepdims=False)

    def mixture_elbo(var_mixture_params, t):
        def mixture_lower_bound(params):
            samples = sample_diag_gaussian(params, num_samples, rs)
            log_qs = np.reshape(mixture_log_density(var_mixture_params, samples), (num_samples, -1))
            log_ps = np.reshape(logprob(samples, t), (num_samples, -1))
            return np.mean(log_ps - log_qs)
        log_weights, var_params = unpack_mixture_params(var_mixture_params)
        component_elbos = np.stack([mixture_lower_bound(params_k) for params_k in var_params])
        return np.sum(component_elbos * np.exp(log_weights))
    return mixture_elbo


def two_bumps(x, t):
    mu, log_sigma = x[:, 0], x[:, 1]
    return np.logaddexp(norm.logpdf(log_sigma, 0, 1.35) + norm.logpdf(mu, -0.5, np.exp(log_sigma)),
                        norm.logpdf(log_sigma, 0.1, 1.35) + norm.logpdf(mu, 0.5, np.exp(log_sigma)))


def test_mixture_variational_inference():
    k = 3
    params = np.concatenate([np.ones(k)] + [np.concatenate([-np.ones(2) + 0.1 * i, -np.ones(2)])
                                            for i in range(k)])

    def fresh():
        return build_mog_elbo(two_bumps, 10, k, np.random.RandomState(0))
    gradient = derivo.grad(fresh())(params, 0)
    direction = np.random.default_rng(1).standard_normal(params.shape)
    expected = (fresh()(params + H * direction, 0) - fresh()(params - H * direction, 0)) / (2 * H)
    assert_close(np.sum(gradient * direction), expected, rtol=1e-5)
