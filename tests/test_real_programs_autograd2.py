"""autograd's example programs (those after "h" by file name: hmm_em, ica,
logistic_regression, mixture_variational_inference, natural_gradient_black_box_svi,
negative_binomial_maxlike, neural_net, neural_net_regression, ode_net, rkhs,
rosenbrock, sinusoid)
ported as a user ports them: ``autograd.numpy`` becomes ``numpy``,
``autograd.scipy`` becomes ``scipy``, ``grad`` becomes ``derivo.grad``; every
derivative compared with a central difference of the unchanged function."""

import itertools
from functools import partial

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp
from scipy.stats import norm, t

import derivo

from checks import assert_close
from test_real_programs import assert_directional

H = 1e-6


def central(f, x, h=H):
    return (f(x + h) - f(x - h)) / (2 * h)


# --- hmm_em.py: the E step is the gradient of the log partition function ---

def log_partition_function(natural_params, data):
    if isinstance(data, list):
        return sum(map(partial(log_partition_function, natural_params), data))
    log_pi, log_A, log_B = natural_params
    log_alpha = log_pi
    for y in data:
        log_alpha = logsumexp(log_alpha[:, None] + log_A, axis=0) + log_B[:, y]
    return logsumexp(log_alpha)


def normalize(a):
    def replace_zeros(a):
        return np.where(a > 0.0, a, 1.0)
    return a / replace_zeros(a.sum(-1, keepdims=True))


def test_hmm_em_expected_statistics():
    rng = np.random.default_rng(0)
    params = [normalize(rng.random(3)), normalize(rng.random((3, 3))), normalize(rng.random((3, 4)))]
    natural_params = list(map(np.log, params))
    data = [np.array([0, 2, 1, 3]), np.array([1, 1, 0])]
    loglike, E_stats = derivo.value_and_grad(log_partition_function)(natural_params, data)
    assert_close(loglike, log_partition_function(natural_params, data))
    assert isinstance(E_stats, list) and len(E_stats) == 3
    assert_directional(log_partition_function, [natural_params, data])


# --- ica.py: a Student-t likelihood of the predicted observations ---

def make_ica_funs(observed_dimension, latent_dimension):
    def predict(weights, latents):
        return np.dot(weights, latents).T

    def logprob(weights, latents, noise_std, observed):
        preds = predict(weights, latents)
        log_lik = np.sum(t.logpdf(preds, 2.4, observed, noise_std))
        return log_lik

    num_weights = observed_dimension * latent_dimension

    def unpack_weights(weights):
        return np.reshape(weights, (observed_dimension, latent_dimension))

    return num_weights, logprob, unpack_weights


def test_ica_objective():
    observed_dimension, latent_dimension, n_samples = 6, 2, 5
    num_weights, logprob, unpack_weights = make_ica_funs(observed_dimension, latent_dimension)
    num_latent_params = latent_dimension * n_samples
    rs = np.random.RandomState(0)
    data = rs.randn(n_samples, observed_dimension)

    def unpack_params(params):
        weights = unpack_weights(params[:num_weights])
        latents = np.reshape(params[num_weights:num_weights + num_latent_params],
                             (latent_dimension, n_samples))
        noise_std = np.exp(params[-1])
        return weights, latents, noise_std

    def objective(params):
        weight_matrix, latents, noise_std = unpack_params(params)
        return -logprob(weight_matrix, latents, noise_std, data) / n_samples

    params = rs.randn(num_weights + num_latent_params + 1) * 0.3
    value, gradient = derivo.value_and_grad(objective)(params)
    assert_close(value, objective(params))
    assert_directional(objective, [params])


# --- logistic_regression.py: the module-level globals, the boolean targets ---

def sigmoid(x):
    return 0.5 * (np.tanh(x) + 1)


def logistic_predictions(weights, inputs):
    return sigmoid(np.dot(inputs, weights))


def training_loss(weights):
    preds = logistic_predictions(weights, inputs)
    label_probabilities = preds * targets + (1 - preds) * (1 - targets)
    return -np.sum(np.log(label_probabilities))


inputs = np.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30], [0.74, -2.49, 1.39]])
targets = np.array([True, True, False, True])


def test_logistic_regression_trains():
    training_gradient_fun = derivo.grad(training_loss)
    weights = np.array([0.0, 0.0, 0.0])
    assert_directional(training_loss, [weights + 0.1])
    initial = training_loss(weights)
    for _ in range(100):
        weights -= training_gradient_fun(weights) * 0.01
    assert training_loss(weights) < initial


# --- negative_binomial_maxlike.py: Newton on grad(loglike) with grad(grad(...)) ---

def negbin_loglike(r, p, x):
    return gammaln(r + x) - gammaln(r) - gammaln(x + 1) + x * np.log(p) + r * np.log(1 - p)


def test_negative_binomial_maxlike():
    x = np.random.default_rng(2).negative_binomial(5, 0.5, size=200).astype(float)
    loglike = lambda r, p: np.sum(negbin_loglike(r, p, x))
    p = lambda r: np.sum(x) / np.sum(r + x)
    rprime = lambda r: derivo.grad(loglike)(r, p(r))
    r0 = 3.0
    assert_close(rprime(r0), (loglike(r0 + H, p(r0)) - loglike(r0 - H, p(r0))) / (2 * H), rtol=1e-5)
    assert_close(derivo.grad(rprime)(r0), central(rprime, r0, 1e-4), rtol=1e-4)
    grad_both = derivo.grad(loglike, wrt=(0, 1))(r0, 0.4)
    assert_close(grad_both[1], (loglike(r0, 0.4 + H) - loglike(r0, 0.4 - H)) / (2 * H), rtol=1e-5)


# --- neural_net.py: a list of (W, b) tuples, log-softmax by logsumexp ---

def init_random_params(scale, layer_sizes, rs=None):
    rs = rs if rs is not None else np.random.RandomState(0)
    return [(scale * rs.randn(m, n), scale * rs.randn(n))
            for m, n in itertools.pairwise(layer_sizes)]


def neural_net_predict(params, inputs):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs - logsumexp(outputs, axis=1, keepdims=True)


def l2_norm(params):
    flattened = np.concatenate([np.ravel(leaf) for layer in params for leaf in layer])
    return np.dot(flattened, flattened)


def log_posterior(params, inputs, targets, L2_reg):
    log_prior = -L2_reg * l2_norm(params)
    log_lik = np.sum(neural_net_predict(params, inputs) * targets)
    return log_prior + log_lik


def test_neural_net_classifier():
    rs = np.random.RandomState(1)
    params = init_random_params(0.3, [5, 4, 3])
    images = rs.randn(7, 5)
    labels = np.eye(3)[rs.randint(0, 3, size=7)]

    def objective(params, iter):
        idx = slice(iter * 4, (iter + 1) * 4)
        return -log_posterior(params, images[idx], labels[idx], 1.0)

    assert_directional(objective, [params, 1])


# --- mixture_variational_inference.py: a mixture of Gaussians as q ---

def diag_gaussian_log_density(x, mu, log_std):
    return np.sum(norm.logpdf(x, mu, np.exp(log_std)), axis=-1)


def unpack_gaussian_params(params):
    D = np.shape(params)[0] // 2
    mean, log_std = params[:D], params[D:]
    return mean, log_std


def variational_log_density_gaussian(params, x):
    mean, log_std = unpack_gaussian_params(params)
    return diag_gaussian_log_density(x, mean, log_std)


def log_normalize(x):
    return x - logsumexp(x)


def build_mixture_log_density(k):
    def unpack_mixture_params(mixture_params):
        log_weights = log_normalize(mixture_params[:k])
        var_params = np.reshape(mixture_params[k:], (k, -1))
        return log_weights, var_params

    def mixture_log_density(var_mixture_params, x):
        log_weights, var_params = unpack_mixture_params(var_mixture_params)
        component_log_densities = np.vstack(
            [variational_log_density_gaussian(params_k, x) for params_k in var_params]).T
        return logsumexp(component_log_densities + log_weights, axis=1, keepdims=False)

    return mixture_log_density


def test_mixture_variational_log_density():
    k, D = 3, 2
    mixture_log_density = build_mixture_log_density(k)
    rs = np.random.RandomState(3)
    params = np.concatenate([np.ones(k)] + [np.concatenate([rs.randn(D), -0.5 + 0.1 * rs.randn(D)])
                                            for _ in range(k)])
    x = rs.randn(6, D)
    assert_directional(lambda p, x: np.mean(mixture_log_density(p, x)), [params, x])


# --- natural_gradient_black_box_svi.py: a normal-normal model's ELBO ---

def test_natural_gradient_black_box_svi():
    obs_dim, num_samples = 3, 50
    Y = np.random.RandomState(4).randn(obs_dim) * 0.5
    eps = np.random.RandomState(5).randn(num_samples, 2 * obs_dim)

    def log_density(x, t):
        mu, log_sigma = x[:, :obs_dim], x[:, obs_dim:]
        sigma_density = np.sum(norm.logpdf(log_sigma, 0, 1.35), axis=1)
        mu_density = np.sum(norm.logpdf(Y, mu, np.exp(log_sigma)), axis=1)
        return sigma_density + mu_density

    def unpack_params(params):
        mean, log_std = params[:2 * obs_dim], params[2 * obs_dim:]
        return mean, log_std

    def gaussian_entropy(log_std):
        return 0.5 * 2 * obs_dim * (1.0 + np.log(2 * np.pi)) + np.sum(log_std)

    def objective(params, t):
        mean, log_std = unpack_params(params)
        samples = eps * np.exp(log_std) + mean
        lower_bound = gaussian_entropy(log_std) + np.mean(log_density(samples, t))
        return -lower_bound

    def fisher_diag(lam):
        _mu, log_sigma = unpack_params(lam)
        return np.concatenate([np.exp(-2.0 * log_sigma), np.ones(len(log_sigma)) * 2])

    gradient = derivo.grad(objective)
    natural_gradient = lambda lam, i: (1.0 / fisher_diag(lam)) * gradient(lam, i)
    lam = np.concatenate([-0.1 * np.ones(2 * obs_dim), -0.5 * np.ones(2 * obs_dim)])
    assert_directional(objective, [lam, 0])
    np.testing.assert_allclose(natural_gradient(lam, 0) * fisher_diag(lam), gradient(lam, 0))


# --- ode_net.py: odeint of a ReLU network with its params in args ---

def nn_predict(inputs, t, params):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.maximum(0, outputs)
    return outputs


def test_ode_net_training_loss():
    from scipy.integrate import odeint

    params = init_random_params(0.3, [2, 4, 2], rs=np.random.RandomState(6))
    true_y0 = np.array([2.0, 0.0])
    t = np.linspace(0.0, 1.0, 5)
    true_y = np.stack([np.cos(t), -np.sin(t)], axis=1) * 2

    def ode_pred(params, y0, t):
        return odeint(nn_predict, y0, t, tuple((params,)), rtol=1e-10, atol=1e-10)

    def train_loss(params, iter):
        pred = ode_pred(params, true_y0, t)
        return np.mean((pred - true_y) ** 2)

    assert_directional(train_loss, [params, 0], rtol=1e-4)


# --- rosenbrock.py: value_and_grad handed to scipy.optimize.minimize ---

def rosenbrock(x):
    return 100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2


def test_rosenbrock_minimize():
    from scipy.optimize import minimize

    rosenbrock_with_grad = derivo.value_and_grad(rosenbrock)
    result = minimize(rosenbrock_with_grad, x0=np.array([0.0, 0.0]), jac=True, method="CG")
    np.testing.assert_allclose(result.x, np.ones(2), atol=1e-4)
    assert_directional(rosenbrock, [np.array([0.3, -0.2])])


# --- sinusoid.py: grad(grad(...)) of sin and of a Taylor series with a break ---

def sinusoid_taylor(x):
    currterm = x
    ans = currterm
    for i in range(1000):
        currterm = -currterm * x**2 / ((2 * i + 3) * (2 * i + 2))
        ans = ans + currterm
        if np.abs(currterm) < 0.2:
            break
    return ans


def test_sinusoid_second_derivatives():
    d_fun = derivo.grad(np.sin)
    dd_fun = derivo.grad(d_fun)
    xs = np.linspace(-10, 10, 7)
    np.testing.assert_allclose([dd_fun(x) for x in xs], -np.sin(xs), atol=1e-12)
    d_taylor = derivo.grad(sinusoid_taylor)
    dd_taylor = derivo.grad(d_taylor)
    for x in xs:
        assert_close(d_taylor(x), central(sinusoid_taylor, x), rtol=1e-5, atol=1e-6)
        assert_close(dd_taylor(x), central(d_taylor, x), rtol=1e-5, atol=1e-6)


# --- rkhs.py: a function-valued argument made a vector space by autograd's
# Box/VSpace machinery; derivo has no such extension point, so the port keeps
# the coefficients of the RKHS function as the differentiated array ---

def sq_exp_kernel(x1, x2):
    return np.exp(-((x1 - x2) ** 2))


def test_rkhs_regression_by_coefficients():
    xs = np.arange(5.0)
    ys = np.array([1, 2, 3, 2, 1])

    def logprob(alphas, xs, ys):
        f = lambda x: np.sum(alphas * sq_exp_kernel(x, xs))
        return -sum((f(x) - y) ** 2 for x, y in zip(xs, ys))

    assert_directional(logprob, [np.zeros(5) + 0.1, xs, ys])


# --- second derivatives and forward mode of the same programs ---

def test_rosenbrock_hessian_is_the_closed_form():
    x = np.array([0.3, -0.2])
    expected = np.array([[1200 * x[0] ** 2 - 400 * x[1] + 2, -400 * x[0]],
                         [-400 * x[0], 200.0]])
    np.testing.assert_allclose(derivo.hessian(rosenbrock)(x), expected, rtol=1e-12)


def test_logistic_regression_forward_mode_and_hessian_vector_product():
    weights = np.array([0.2, -0.4, 0.1])
    direction = np.array([1.0, 0.5, -2.0])
    value, slope = derivo.jvp(training_loss, (weights,), (direction,))
    assert_close(value, training_loss(weights))
    assert_close(slope, central(lambda s: training_loss(weights + s * direction), 0.0), rtol=1e-6)
    gradient = derivo.grad(training_loss)
    (curvature,) = derivo.hvp(training_loss, (weights,), (direction,))
    expected = (gradient(weights + 1e-5 * direction) - gradient(weights - 1e-5 * direction)) / 2e-5
    np.testing.assert_allclose(curvature, expected, rtol=1e-6)


def test_ica_gradient_matches_autograd_on_the_original_code():
    agnp = pytest.importorskip("autograd.numpy")
    autograd = pytest.importorskip("autograd")
    from autograd.scipy.stats import t as ag_t

    rs = np.random.RandomState(8)
    weights, latents, observed = rs.randn(4, 2), rs.randn(2, 3), rs.randn(3, 4)

    def original_logprob(weights, latents, noise_std, observed):
        preds = agnp.dot(weights, latents).T
        return agnp.sum(ag_t.logpdf(preds, 2.4, observed, noise_std))

    _, logprob, _ = make_ica_funs(4, 2)
    expected = autograd.grad(original_logprob, argnum=(0, 1, 2))(weights, latents, 0.7, observed)
    got = derivo.grad(logprob, wrt=(0, 1, 2))(weights, latents, 0.7, observed)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-10)


class RKHSFun:
    """rkhs.py's function-valued argument, without autograd's VSpace for it."""

    def __init__(self, kernel, alphas=None):
        self.alphas = alphas if alphas is not None else {}
        self.kernel = kernel

    def __call__(self, x):
        return sum([a * self.kernel(x, x_repr) for x_repr, a in self.alphas.items()], 0.0)


def test_rkhs_function_valued_argument_is_refused_with_what_to_write():
    def logprob(f, xs, ys):
        return -sum((f(x) - y) ** 2 for x, y in zip(xs, ys))

    f = RKHSFun(sq_exp_kernel, {0.0: 0.5, 2.0: 0.3})
    with pytest.raises(derivo.DerivoError, match="register_container"):
        derivo.grad(logprob)(f, range(5), [1, 2, 3, 2, 1])


# --- neural_net_regression.py: the nonlinearity a keyword default, norm.logpdf ---

def nn_predict_with(params, inputs, nonlinearity=np.tanh):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = nonlinearity(outputs)
    return outputs


def log_gaussian(params, scale):
    flat_params = np.concatenate([np.ravel(leaf) for layer in params for leaf in layer])
    return np.sum(norm.logpdf(flat_params, 0, scale))


def regression_logprob(weights, inputs, targets, noise_scale=0.1):
    predictions = nn_predict_with(weights, inputs)
    return np.sum(norm.logpdf(predictions, targets, noise_scale))


def test_neural_net_regression_objective():
    rs = np.random.RandomState(9)
    inputs = np.linspace(-1, 1, 8)[:, np.newaxis]
    targets = np.cos(3 * inputs) / 2.0 + 0.05 * rs.randn(8, 1)
    params = init_random_params(0.3, [1, 4, 4, 1], rs=rs)

    def objective(weights, t):
        return -regression_logprob(weights, inputs, targets) - log_gaussian(weights, 10.0)

    assert_directional(objective, [params, 0])
