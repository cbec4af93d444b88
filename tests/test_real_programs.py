"""Objective functions written as the field writes them (after autograd's
examples: black-box variational inference, a Gaussian process, a mixture model,
an RNN and an LSTM with a dict of parameters, a VAE, a GAN, a neural ODE, a heat
simulation, logistic regression by minibatch, Newton's method, a Bayesian neural
network), differentiated unchanged, each gradient's projection on a random
direction of its parameters compared with a central difference of the function."""

import numpy as np
import pytest
from scipy.special import logsumexp

import derivo

from checks import assert_close

H = 1e-6


# --- a direction over the float leaves of a container, and its difference ---

def _random_like(tree, rng):
    if isinstance(tree, dict):
        return {k: _random_like(v, rng) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_random_like(v, rng) for v in tree)
    return rng.standard_normal(np.shape(tree)) if np.ndim(tree) else float(rng.standard_normal())


def _stepped(tree, direction, step):
    if isinstance(tree, dict):
        return {k: _stepped(v, direction[k], step) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_stepped(v, d, step) for v, d in zip(tree, direction))
    return tree + step * direction


def _inner(a, b):
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b)
        return sum(_inner(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        assert type(b) is type(a) and len(a) == len(b)
        return sum(_inner(x, y) for x, y in zip(a, b))
    assert np.shape(a) == np.shape(b)
    return float(np.sum(np.asarray(a) * np.asarray(b)))


def assert_directional(f, args, wrt=0, has_aux=False, rtol=1e-5):
    """derivo.grad of ``f`` at ``args``, projected on a random direction of
    argument ``wrt``, equals the central difference of ``f`` along it; the
    gradient has the argument's structure."""
    result = derivo.grad(f, wrt=wrt, has_aux=has_aux)(*args)
    gradient = result[0] if has_aux else result
    direction = _random_like(args[wrt], np.random.default_rng(7))

    def along(step):
        moved = list(args)
        moved[wrt] = _stepped(args[wrt], direction, step)
        value = f(*moved)
        return value[0] if has_aux else value

    expected = (along(H) - along(-H)) / (2 * H)
    assert_close(_inner(gradient, direction), expected, rtol=rtol, atol=1e-7)
    return result


# --- black-box variational inference, a Gaussian q reparameterised ---

def log_density(x):
    mu, log_sigma = x[:, 0], x[:, 1]
    sigma_density = np.sum(-0.5 * log_sigma ** 2 / 1.35 ** 2)
    mu_density = np.sum(-0.5 * mu ** 2 * np.exp(-2 * log_sigma) - log_sigma)
    return sigma_density + mu_density


def gaussian_entropy(log_std):
    return 0.5 * log_std.shape[0] * (1.0 + np.log(2 * np.pi)) + np.sum(log_std)


def variational_objective(params, eps):
    mean, log_std = params[:2], params[2:]
    samples = eps * np.exp(log_std) + mean
    lower_bound = gaussian_entropy(log_std) + log_density(samples) / len(eps)
    return -lower_bound


def test_black_box_variational_inference():
    rng = np.random.default_rng(0)
    assert_directional(variational_objective,
                       [0.3 * rng.standard_normal(4), rng.standard_normal((10, 2))])


# --- a Gaussian process's negative log marginal likelihood ---

def rbf_covariance(kernel_params, x, xp):
    output_scale = np.exp(kernel_params[0])
    lengthscales = np.exp(kernel_params[1:])
    diffs = np.expand_dims(x / lengthscales, 1) - np.expand_dims(xp / lengthscales, 0)
    return output_scale * np.exp(-0.5 * np.sum(diffs ** 2, axis=2))


def gp_negative_log_likelihood(params, x, y):
    mean, noise_scale = params[0], np.exp(params[1]) + 0.0001
    cov_y_y = rbf_covariance(params[2:], x, x) + noise_scale * np.eye(len(y))
    d = y - mean * np.ones(len(y))
    _, logdet = np.linalg.slogdet(cov_y_y)
    return 0.5 * (logdet + d @ np.linalg.solve(cov_y_y, d) + len(y) * np.log(2 * np.pi))


def test_gaussian_process_marginal_likelihood():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 1))
    assert_directional(gp_negative_log_likelihood,
                       [0.1 * rng.standard_normal(4), x, np.sin(x[:, 0])])


# --- a mixture model: the responsibilities come back as aux ---

def mixture_negative_log_likelihood(params, data):
    log_weights = params["logits"] - logsumexp(params["logits"])
    scales = np.exp(params["log_scales"])
    components = -0.5 * ((data[:, None] - params["means"]) / scales) ** 2 \
        - params["log_scales"] - 0.5 * np.log(2 * np.pi)
    joint = log_weights + components
    log_likelihood = logsumexp(joint, axis=1)
    responsibilities = np.exp(joint - log_likelihood[:, None])
    return -np.mean(log_likelihood), responsibilities


def test_mixture_model_with_aux():
    rng = np.random.default_rng(2)
    params = {"logits": rng.standard_normal(3), "means": rng.standard_normal(3),
              "log_scales": 0.1 * rng.standard_normal(3)}
    data = rng.standard_normal(20)
    gradient, responsibilities = assert_directional(
        mixture_negative_log_likelihood, [params, data], has_aux=True)
    assert set(gradient) == set(params)
    np.testing.assert_allclose(responsibilities, mixture_negative_log_likelihood(params, data)[1])


# --- an RNN and an LSTM, parameters in a dict (autograd's rnn.py, lstm.py) ---

def sigmoid(x):
    return 0.5 * (np.tanh(x) + 1.0)


def concat_and_multiply(weights, *args):
    cat_state = np.hstack(args + (np.ones((args[0].shape[0], 1)),))
    return np.dot(cat_state, weights)


def rnn_predict(params, inputs):
    def update_rnn(input, hiddens):
        return np.tanh(concat_and_multiply(params['change'], input, hiddens))

    def hiddens_to_output_probs(hiddens):
        output = concat_and_multiply(params['predict'], hiddens)
        return output - logsumexp(output, axis=1, keepdims=True)

    num_sequences = inputs.shape[1]
    hiddens = np.repeat(params['init hiddens'], num_sequences, axis=0)
    output = [hiddens_to_output_probs(hiddens)]
    for input in inputs:
        hiddens = update_rnn(input, hiddens)
        output.append(hiddens_to_output_probs(hiddens))
    return output


def rnn_log_likelihood(params, inputs, targets):
    logprobs = rnn_predict(params, inputs)
    loglik = 0.0
    num_time_steps, num_examples, _ = inputs.shape
    for t in range(num_time_steps):
        loglik += np.sum(logprobs[t] * targets[t])
    return loglik / (num_time_steps * num_examples)


def lstm_predict(params, inputs):
    def update_lstm(input, hiddens, cells):
        change = np.tanh(concat_and_multiply(params['change'], input, hiddens))
        forget = sigmoid(concat_and_multiply(params['forget'], input, hiddens))
        ingate = sigmoid(concat_and_multiply(params['ingate'], input, hiddens))
        outgate = sigmoid(concat_and_multiply(params['outgate'], input, hiddens))
        cells = cells * forget + ingate * change
        hiddens = outgate * np.tanh(cells)
        return hiddens, cells

    num_sequences = inputs.shape[1]
    hiddens = np.repeat(params['init hiddens'], num_sequences, axis=0)
    cells = np.repeat(params['init cells'], num_sequences, axis=0)
    output = []
    for input in inputs:
        hiddens, cells = update_lstm(input, hiddens, cells)
        output.append(concat_and_multiply(params['predict'], hiddens))
    return output


def lstm_loss(params, inputs, targets):
    outputs = lstm_predict(params, inputs)
    return sum(np.sum((o - t) ** 2) for o, t in zip(outputs, targets))


def _recurrent_params(rng, lstm):
    size = 4 + 6 + 1
    params = {'init hiddens': 0.1 * rng.standard_normal((1, 6)),
              'change': 0.1 * rng.standard_normal((size, 6)),
              'predict': 0.1 * rng.standard_normal((7, 4))}
    if lstm:
        params['init cells'] = 0.1 * rng.standard_normal((1, 6))
        for gate in ('forget', 'ingate', 'outgate'):
            params[gate] = 0.1 * rng.standard_normal((size, 6))
    return params


@pytest.mark.parametrize("loss, lstm", [(rnn_log_likelihood, False), (lstm_loss, True)])
def test_recurrent_networks(loss, lstm):
    rng = np.random.default_rng(3)
    inputs, targets = rng.standard_normal((5, 3, 4)), rng.standard_normal((5, 3, 4))
    assert_directional(loss, [_recurrent_params(rng, lstm), inputs, targets])


# --- a VAE's lower bound and a GAN's objective, networks as lists of (W, b) ---

def relu(x):
    return np.maximum(0, x)


def neural_net_predict(params, inputs):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = relu(outputs)
    return outputs


def diag_gaussian_log_density(x, mu, log_std):
    return np.sum(-0.5 * ((x - mu) / np.exp(log_std)) ** 2 - log_std
                  - 0.5 * np.log(2 * np.pi), axis=-1)


def unpack_gaussian_params(params):
    D = np.shape(params)[-1] // 2
    return params[:, :D], params[:, D:]


def vae_lower_bound(gen_params, rec_params, data, eps):
    q_means, q_log_stds = unpack_gaussian_params(neural_net_predict(rec_params, data))
    latents = q_means + np.exp(q_log_stds) * eps
    logits = neural_net_predict(gen_params, latents)
    log_px = np.sum(-np.logaddexp(0, -logits) * data - np.logaddexp(0, logits) * (1 - data),
                    axis=1)
    log_qz = diag_gaussian_log_density(latents, q_means, q_log_stds)
    log_pz = diag_gaussian_log_density(latents, 0.0, 0.0)
    return np.mean(log_px + log_pz - log_qz)


def gan_objective(gen_params, dsc_params, real_data, noise):
    def logsigmoid(x):
        return x - np.logaddexp(0, x)
    fake_data = neural_net_predict(gen_params, noise)
    logprobs_fake = logsigmoid(neural_net_predict(dsc_params, fake_data))
    logprobs_real = logsigmoid(neural_net_predict(dsc_params, real_data))
    return np.mean(logprobs_real) - np.mean(logprobs_fake)


def _network(rng, sizes):
    return [(0.3 * rng.standard_normal((m, n)), 0.1 * rng.standard_normal(n))
            for m, n in zip(sizes[:-1], sizes[1:])]


@pytest.mark.parametrize("wrt", [0, 1])
def test_variational_autoencoder(wrt):
    rng = np.random.default_rng(4)
    data = (rng.random((7, 6)) > 0.5).astype(float)
    args = [_network(rng, [2, 5, 6]), _network(rng, [6, 5, 4]), data,
            rng.standard_normal((7, 2))]
    assert_directional(vae_lower_bound, args, wrt=wrt)


@pytest.mark.parametrize("wrt", [0, 1])
def test_generative_adversarial_network(wrt):
    rng = np.random.default_rng(5)
    args = [_network(rng, [2, 5, 3]), _network(rng, [3, 5, 1]),
            rng.standard_normal((6, 3)), rng.standard_normal((6, 2))]
    assert_directional(gan_objective, args, wrt=wrt)


# --- a neural ODE integrated by Euler steps, the dynamics handed to the solver ---

def ode_func(params, y, t):
    W1, b1, W2, b2 = params
    h = np.tanh(np.dot(y, W1) + b1)
    return np.dot(h, W2) + b2


def odeint_euler(f, y0, ts, params):
    y = y0
    for i in range(len(ts) - 1):
        y = y + (ts[i + 1] - ts[i]) * f(params, y, ts[i])
    return y


def neural_ode_loss(params, y0, ts, target):
    return np.sum((odeint_euler(ode_func, y0, ts, params) - target) ** 2)


def decay(y):
    return -np.sin(y)


def euler(f, y0, steps, h):
    y = y0
    for _ in range(steps):
        y = y + h * f(y)
    return y


def solved_with_a_global(k, y0):
    return np.sum(euler(decay, k * y0, 5, 0.1) ** 2)


def solved_with_a_local_def(k, y0):
    def rhs(y):
        return -np.tanh(y)
    return np.sum(euler(rhs, k * y0, 5, 0.1) ** 2)


def solved_with_a_primitive(k, y0):
    return np.sum(euler(np.cos, k * y0, 5, 0.1) ** 2)


def solved_with_a_lambda(k, y0):
    return np.sum(euler(lambda y: -k * np.sin(y), y0, 5, 0.1) ** 2)


def solved_with_a_closure(k, y0):
    def rhs(y):
        return -k * np.tanh(y) + k * k
    return np.sum(euler(rhs, y0, 5, 0.1) ** 2)


def solved_with_what_it_is_given(k, y0, dynamics):
    return np.sum(euler(dynamics, k * y0, 5, 0.1) ** 2)


def test_neural_ode():
    rng = np.random.default_rng(6)
    params = (0.3 * rng.standard_normal((2, 5)), 0.1 * rng.standard_normal(5),
              0.3 * rng.standard_normal((5, 2)), 0.1 * rng.standard_normal(2))
    assert_directional(neural_ode_loss, [params, rng.standard_normal((3, 2)),
                                         np.linspace(0.0, 1.0, 6), rng.standard_normal((3, 2))])


@pytest.mark.parametrize("loss", [solved_with_a_global, solved_with_a_local_def,
                                  solved_with_a_primitive, solved_with_a_lambda,
                                  solved_with_a_closure])
def test_a_solver_given_its_dynamics(loss):
    assert_directional(loss, [1.3, np.array([0.3, -0.5])])


def test_a_solver_given_the_dynamics_the_caller_is_given():
    gradient = derivo.grad(solved_with_what_it_is_given)
    y0 = np.array([0.3, -0.5])
    for dynamics in (decay, np.tanh, decay):
        expected = (solved_with_what_it_is_given(1.3 + H, y0, dynamics) -
                    solved_with_what_it_is_given(1.3 - H, y0, dynamics)) / (2 * H)
        assert_close(gradient(1.3, y0, dynamics), expected, rtol=1e-5)


def test_a_solver_given_other_dynamics_transforms_again():
    global decay
    gradient = derivo.grad(solved_with_a_global)
    y0 = np.array([0.3, -0.5])
    first = gradient(1.3, y0)
    saved = decay
    try:
        def decay(y):
            return -np.cos(y)
        again = gradient(1.3, y0)
        expected = (solved_with_a_global(1.3 + H, y0) - solved_with_a_global(1.3 - H, y0)) / (2 * H)
    finally:
        decay = saved
    assert_close(again, expected, rtol=1e-5)
    assert abs(again - first) > 1e-3


# --- heat diffusion on a periodic grid with np.roll ---

def heat_step(u, alpha):
    laplacian = np.roll(u, 1, axis=0) + np.roll(u, -1, axis=0) + \
        np.roll(u, 1, axis=1) + np.roll(u, -1, axis=1) - 4 * u
    return u + alpha * laplacian


def simulate(initial, alpha=0.1, steps=10):
    u = initial
    for _ in range(steps):
        u = heat_step(u, alpha)
    return u


def heat_loss(initial, target):
    return np.mean((simulate(initial) - target) ** 2)


def test_heat_simulation():
    rng = np.random.default_rng(8)
    assert_directional(heat_loss, [rng.standard_normal((6, 6)), rng.standard_normal((6, 6))])


# --- logistic regression: a closure over the data, a minibatch by index ---

def make_objective(inputs, targets, batch_size):
    def logistic_predictions(weights, x):
        return 0.5 * (np.tanh(np.dot(x, weights)) + 1)

    def training_loss(weights, i):
        idx = slice(i * batch_size, (i + 1) * batch_size)
        preds = logistic_predictions(weights, inputs[idx])
        label_probabilities = preds * targets[idx] + (1 - preds) * (1 - targets[idx])
        return -np.sum(np.log(label_probabilities))
    return training_loss


def test_logistic_regression_by_minibatch():
    rng = np.random.default_rng(9)
    objective = make_objective(rng.standard_normal((20, 3)),
                               (rng.random(20) > 0.5).astype(float), 5)
    for batch in range(4):
        assert_directional(objective, [rng.standard_normal(3), batch])


# --- Newton's method: the Hessian and the gradient of a gradient on arrays ---

def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


rosenbrock_grad = derivo.grad(rosenbrock)


def gradient_norm(x):
    return np.sum(rosenbrock_grad(x) ** 2)


def hessian_vector_product(x, v):
    return np.dot(derivo.grad(rosenbrock)(x), v)


def test_a_gradient_made_inside_is_differentiated_through():
    x, v = np.array([0.5, 0.8, 1.1]), np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(derivo.grad(hessian_vector_product)(x, v),
                               derivo.hessian(rosenbrock)(x) @ v)


def test_newton_steps():
    x = np.array([0.5, 0.8, 1.1])
    hessian = derivo.hessian(rosenbrock)(x)
    by_differences = np.array([(rosenbrock_grad(x + H * e) - rosenbrock_grad(x - H * e)) / (2 * H)
                               for e in np.eye(3)])
    np.testing.assert_allclose(hessian, by_differences, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(derivo.jacobian(rosenbrock_grad)(x), hessian)
    assert_directional(gradient_norm, [x])
    for _ in range(20):
        x = x - np.linalg.solve(derivo.hessian(rosenbrock)(x), rosenbrock_grad(x))
    np.testing.assert_allclose(x, np.ones(3), atol=1e-8)


# --- a Bayesian neural network's log posterior over a flat weight vector ---

def bnn_log_posterior(weights, inputs, targets, noise_variance=0.01):
    W1, b1 = weights[:4].reshape(1, 4), weights[4:8]
    W2, b2 = weights[8:12].reshape(4, 1), weights[12]
    outputs = np.dot(np.tanh(np.dot(inputs, W1) + b1), W2) + b2
    log_prior = -0.5 * np.sum(weights ** 2)
    log_likelihood = -np.sum((outputs - targets) ** 2) / noise_variance
    return log_prior + log_likelihood


def test_bayesian_neural_network():
    rng = np.random.default_rng(10)
    assert_directional(bnn_log_posterior, [rng.standard_normal(13),
                                           rng.standard_normal((10, 1)),
                                           rng.standard_normal((10, 1))])


# --- a hidden Markov model's log-likelihood by the forward algorithm (hmm_em.py) ---

def log_partition_function(natural_params, data):
    if isinstance(data, list):
        return sum(map(lambda x: log_partition_function(natural_params, x), data))
    log_pi, log_A, log_B = natural_params
    log_pi = log_pi - logsumexp(log_pi)
    log_A = log_A - logsumexp(log_A, axis=1, keepdims=True)
    log_B = log_B - logsumexp(log_B, axis=1, keepdims=True)
    log_alpha = log_pi
    for y in data:
        log_alpha = logsumexp(log_alpha[:, None] + log_A, axis=0) + log_B[:, y]
    return logsumexp(log_alpha)


def weighted_by_a_local_def(w, xs, ys):
    def term(x, y):
        return np.sum(np.tanh(w * x) * y)
    return sum(map(term, xs, ys))


def test_hidden_markov_model():
    rng = np.random.default_rng(11)
    params = (rng.standard_normal(3), rng.standard_normal((3, 3)),
              rng.standard_normal((3, 4)))
    assert_directional(log_partition_function, [params, [np.array([0, 1, 3]),
                                                         np.array([2, 1, 1, 0])]])


def test_map_of_a_local_def_over_two_lists():
    rng = np.random.default_rng(12)
    xs = [rng.standard_normal(3) for _ in range(4)]
    ys = [rng.standard_normal(3) for _ in range(4)]
    assert_directional(weighted_by_a_local_def, [rng.standard_normal(3), xs, ys])



def walk(f, xs, depth):
    if depth == 0:
        return f(xs)
    return walk(f, xs * 0.5, depth - 1) + f(xs)


def walked(w):
    return np.sum(walk(np.sin, w, 3))


def test_a_recursive_helper_handing_on_the_function_it_is_given():
    assert_directional(walked, [np.array([0.3, 0.8])])
