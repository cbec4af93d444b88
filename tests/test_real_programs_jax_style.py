"""Objective functions written as JAX and autograd users write them (the JAX
tutorials' MLP, flax/haiku-like model classes, optax-like update loops,
attention, a transformer block, a simulation with a data-dependent exit, a
Newton solver), with numpy in place of jax.numpy, differentiated unchanged.

Every gradient is compared, leaf by leaf, with central differences of the
program itself; some also with JAX (skipped when JAX is not installed) where
JAX computes what finite differences cannot check well (Hessians, jvp, vjp)."""

import dataclasses
import functools
import math
from typing import NamedTuple

import numpy as np
import pytest

import derivo

H = 1e-6


# --- the checking helpers: leaves of a container, a central difference of each ---

def _leaves(tree):
    """The float leaves of a dict/list/tuple/NamedTuple/dataclass, in order."""
    if isinstance(tree, dict):
        return [leaf for key in tree for leaf in _leaves(tree[key])]
    if isinstance(tree, (list, tuple)):
        return [leaf for part in tree for leaf in _leaves(part)]
    if dataclasses.is_dataclass(tree):
        return [leaf for f in dataclasses.fields(tree) for leaf in _leaves(getattr(tree, f.name))]
    return [tree] if isinstance(tree, (float, np.ndarray)) else []


def _rebuilt(tree, leaves):
    """``tree`` with its float leaves taken in order from the iterator ``leaves``."""
    if isinstance(tree, dict):
        return {key: _rebuilt(tree[key], leaves) for key in tree}
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*(_rebuilt(part, leaves) for part in tree))
    if isinstance(tree, (list, tuple)):
        return type(tree)(_rebuilt(part, leaves) for part in tree)
    if dataclasses.is_dataclass(tree):
        return dataclasses.replace(tree, **{f.name: _rebuilt(getattr(tree, f.name), leaves)
                                            for f in dataclasses.fields(tree)})
    return next(leaves) if isinstance(tree, (float, np.ndarray)) else tree


def numeric_gradient(f, args, wrt=0):
    """Central differences of the scalar ``f(*args)`` in every float of ``args[wrt]``,
    with the structure of ``args[wrt]``."""
    leaves = _leaves(args[wrt])

    def at(changed):
        moved = list(args)
        moved[wrt] = _rebuilt(args[wrt], iter(changed))
        return f(*moved)

    gradient = []
    for i, leaf in enumerate(leaves):
        flat = np.array(leaf, dtype=float).ravel()
        derivative = np.empty_like(flat)
        for j in range(flat.size):
            steps = []
            for step in (H, -H):
                bumped = flat.copy()
                bumped[j] += step
                value = bumped.reshape(np.shape(leaf)) if np.ndim(leaf) else float(bumped[0])
                steps.append(at(leaves[:i] + [value] + leaves[i + 1:]))
            derivative[j] = (steps[0] - steps[1]) / (2 * H)
        gradient.append(derivative.reshape(np.shape(leaf)) if np.ndim(leaf) else float(derivative[0]))
    return _rebuilt(args[wrt], iter(gradient))


def assert_same_tree(actual, expected, rtol=1e-5, atol=1e-7):
    """The same container types and keys, and leaves that agree."""
    assert type(actual) is type(expected), (type(actual), type(expected))
    if isinstance(expected, dict):
        assert list(actual) == list(expected)
    got, want = _leaves(actual), _leaves(expected)
    assert len(got) == len(want)
    for a, e in zip(got, want):
        assert np.shape(a) == np.shape(e)
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


def assert_gradient(f, *args, wrt=0, rtol=1e-5, atol=1e-7):
    """derivo.grad of ``f`` in argument ``wrt`` equals central differences."""
    got = derivo.grad(f, wrt=wrt)(*args)
    assert_same_tree(got, numeric_gradient(f, args, wrt), rtol=rtol, atol=atol)
    return got


def user_tree_map(fn, tree, *rest):
    """What users write in place of jax.tree_util.tree_map for dicts, lists and tuples."""
    if isinstance(tree, dict):
        return {k: user_tree_map(fn, v, *(r[k] for r in rest)) for k, v in tree.items()}
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*(user_tree_map(fn, *parts) for parts in zip(tree, *rest)))
    if isinstance(tree, (list, tuple)):
        return type(tree)(user_tree_map(fn, *parts) for parts in zip(tree, *rest))
    return fn(tree, *rest)


def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


RNG = np.random.default_rng(22)


def _data(n=6, d=3, k=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    labels = rng.integers(0, k, size=n)
    return X, labels


# --- 1. the JAX tutorial MLP: params a list of (W, b) tuples, logsumexp cross-entropy ---

def init_network_params(sizes, seed=0):
    rng = np.random.default_rng(seed)
    return [(0.5 * rng.normal(size=(m, n)), 0.1 * rng.normal(size=n))
            for m, n in zip(sizes[:-1], sizes[1:])]


def relu(x):
    return np.maximum(0, x)


def predict_tuples(params, image):
    activations = image
    for w, b in params[:-1]:
        outputs = np.dot(activations, w) + b
        activations = np.tanh(outputs)
    final_w, final_b = params[-1]
    logits = np.dot(activations, final_w) + final_b
    return logits - logsumexp_rows(logits)


def logsumexp_rows(x):
    top = x.max(axis=-1, keepdims=True)
    return top + np.log(np.sum(np.exp(x - top), axis=-1, keepdims=True))


def one_hot(labels, k):
    return np.eye(k)[labels]


def tutorial_loss(params, images, targets):
    preds = predict_tuples(params, images)
    return -np.mean(preds * targets)


def test_the_jax_tutorial_mlp_with_a_list_of_tuples():
    params = init_network_params([3, 5, 4, 4])
    X, labels = _data()
    grads = assert_gradient(tutorial_loss, params, X, one_hot(labels, 4))
    assert type(grads) is list and all(type(g) is tuple for g in grads)


def test_the_jax_tutorial_mlp_agrees_with_jax():
    jax = _jax()
    jnp = jax.numpy
    params = init_network_params([3, 5, 4])
    X, labels = _data()
    targets = one_hot(labels, 4)

    def jax_loss(params):
        activations = X
        for w, b in params[:-1]:
            activations = jnp.tanh(activations @ w + b)
        logits = activations @ params[-1][0] + params[-1][1]
        preds = logits - jax.scipy.special.logsumexp(logits, axis=-1, keepdims=True)
        return -jnp.mean(preds * targets)

    got = derivo.grad(tutorial_loss)(params, X, targets)
    want = jax.grad(jax_loss)(params)
    for (gw, gb), (ww, wb) in zip(got, want):
        np.testing.assert_allclose(gw, ww, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(gb, wb, rtol=1e-10, atol=1e-12)


# --- 2. a list of dicts, an L2 penalty as a generator expression, SGD with a tree_map ---

def init_dict_layers(sizes, seed=1):
    rng = np.random.default_rng(seed)
    layers = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        layers.append({"W": rng.normal(size=(n_in, n_out)) / np.sqrt(n_in),
                       "b": np.zeros(n_out)})
    return layers


def forward_dicts(params, x):
    for layer in params[:-1]:
        x = relu(x @ layer["W"] + layer["b"])
    last = params[-1]
    return x @ last["W"] + last["b"]


def regularised_mse(params, x, y, l2=1e-2):
    err = forward_dicts(params, x) - y
    penalty = sum(np.sum(layer["W"] ** 2) for layer in params)
    return np.mean(err ** 2) + l2 * penalty


def sgd_step(params, x, y, lr=0.1):
    grads = derivo.grad(regularised_mse)(params, x, y)
    return user_tree_map(lambda p, g: p - lr * g, params, grads)


def test_a_list_of_dicts_trained_by_sgd_in_a_loop():
    params = init_dict_layers([3, 6, 2])
    X = RNG.normal(size=(8, 3)) + 0.1  # keeps relu inputs away from its kink
    Y = np.sin(X[:, :2])
    assert_gradient(regularised_mse, params, X, Y)
    losses = [regularised_mse(params, X, Y)]
    for _ in range(20):
        params = sgd_step(params, X, Y)
        losses.append(regularised_mse(params, X, Y))
    assert losses[-1] < 0.7 * losses[0]


# --- 3. a dict of tuples walked in sorted order, enumerate, a decaying weight ---

def dict_of_tuples_loss(params, x):
    total = 0.0
    for i, (name, (W, b)) in enumerate(sorted(params.items())):
        x = np.tanh(x @ W + b)
        total = total + 0.5 ** i * np.sum(x ** 2)
    return total


def test_a_dict_of_tuples_walked_in_sorted_order():
    params = {"layer1": (RNG.normal(size=(3, 3)), RNG.normal(size=3)),
              "layer0": (RNG.normal(size=(2, 3)), RNG.normal(size=3))}
    grads = assert_gradient(dict_of_tuples_loss, params, RNG.normal(size=(4, 2)))
    assert list(grads) == ["layer1", "layer0"]


# --- 4. Adam with a NamedTuple state, the step calling derivo.value_and_grad ---

class AdamState(NamedTuple):
    m: object
    v: object
    count: int


def adam_init(params):
    zeros = user_tree_map(np.zeros_like, params)
    return AdamState(zeros, zeros, 0)


def adam_update(grads, state, lr=0.05, b1=0.9, b2=0.999, eps=1e-8):
    count = state.count + 1
    m = user_tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.m, grads)
    v = user_tree_map(lambda v, g: b2 * v + (1 - b2) * g ** 2, state.v, grads)
    scale = lr * math.sqrt(1 - b2 ** count) / (1 - b1 ** count)
    updates = user_tree_map(lambda m, v: -scale * m / (np.sqrt(v) + eps), m, v)
    return updates, AdamState(m, v, count)


def linear_model_loss(params, x, y):
    pred = x @ params["w"] + params["b"]
    return np.mean((pred - y) ** 2)


def test_adam_with_a_namedtuple_state_fits_a_line():
    x = RNG.normal(size=(20, 2))
    y = x @ np.array([1.5, -2.0]) + 0.3
    params = {"w": np.zeros(2), "b": 0.0}
    state = adam_init(params)
    step = derivo.value_and_grad(linear_model_loss)
    first, _ = step(params, x, y)
    for _ in range(200):
        value, grads = step(params, x, y)
        updates, state = adam_update(grads, state)
        params = user_tree_map(lambda p, u: p + u, params, updates)
    assert value < 1e-2 * first
    assert_gradient(linear_model_loss, params, x, y)


# --- 5. a flax-like model class: __call__, methods calling methods, static/class methods ---

class MLP:
    def __init__(self, sizes, activation="tanh"):
        self.sizes = tuple(sizes)
        self.activation = activation

    @classmethod
    def create(cls, *sizes):
        return cls(sizes)

    @property
    def n_layers(self):
        return len(self.sizes) - 1

    @staticmethod
    def act(x):
        return np.tanh(x)

    def init(self, seed=0):
        rng = np.random.default_rng(seed)
        return [{"w": rng.normal(size=(m, n)) / np.sqrt(m), "b": 0.1 * rng.normal(size=n)}
                for m, n in zip(self.sizes[:-1], self.sizes[1:])]

    def layer(self, p, x):
        return x @ p["w"] + p["b"]

    def __call__(self, params, x):
        if x.ndim == 1:
            x = x[None, :]
        assert x.shape[1] == self.sizes[0], "input width"
        for i in range(self.n_layers - 1):
            x = self.act(self.layer(params[i], x))
        return self.layer(params[-1], x)

    def loss(self, params, x, y):
        return np.mean((self(params, x) - y) ** 2)


def test_a_model_class_loss_given_as_a_bound_method():
    model = MLP.create(3, 5, 2)
    params = model.init()
    X, Y = RNG.normal(size=(6, 3)), RNG.normal(size=(6, 2))
    grads = assert_gradient(model.loss, params, X, Y)
    assert len(grads) == model.n_layers
    # one example, a 1-d input, takes the shape-dependent branch
    assert_gradient(model.loss, params, X[0], Y[:1])


def test_a_partial_of_a_loss_taking_the_model_first():
    def loss(model, params, x, y):
        return model.loss(params, x, y)
    model = MLP([2, 4, 1])
    params = model.init(seed=3)
    X, Y = RNG.normal(size=(5, 2)), RNG.normal(size=(5, 1))
    assert_gradient(functools.partial(loss, model), params, X, Y)


# --- 6. a frozen dataclass of parameters, a haiku-like module holding its config ---

@dataclasses.dataclass(frozen=True)
class LinearParams:
    weight: np.ndarray
    bias: np.ndarray


@dataclasses.dataclass(frozen=True)
class Config:
    l2: float = 0.01
    loss: str = "huber"


def huber(r, delta=1.0):
    small = np.abs(r) <= delta
    return np.where(small, 0.5 * r ** 2, delta * (np.abs(r) - 0.5 * delta))


def squared(r):
    return 0.5 * r ** 2


LOSSES = {"huber": huber, "mse": squared}


def configured_loss(params, config, x, y):
    residual = x @ params.weight + params.bias - y
    data_term = np.mean(LOSSES[config.loss](residual))
    return data_term + config.l2 * np.sum(params.weight ** 2)


@pytest.mark.parametrize("kind", ["huber", "mse"])
def test_a_frozen_dataclass_of_parameters_and_a_loss_chosen_from_a_dict(kind):
    params = LinearParams(RNG.normal(size=(3, 2)), RNG.normal(size=2))
    x, y = RNG.normal(size=(10, 3)), 2 * RNG.normal(size=(10, 2))
    grads = assert_gradient(configured_loss, params, Config(loss=kind), x, y)
    assert isinstance(grads, LinearParams)


# --- 7. activations as lambdas in a dict, closures made in a loop ---

ACTIVATIONS = {"relu": lambda x: np.maximum(x, 0.0), "tanh": np.tanh,
               "softplus": lambda x: np.log1p(np.exp(x))}


def net_with_activations(params, x, names):
    for (W, b), name in zip(params, names):
        x = ACTIVATIONS[name](x @ W + b)
    return np.sum(x)


def test_activations_chosen_by_name_from_a_dict_of_lambdas():
    params = [(RNG.normal(size=(3, 4)), RNG.normal(size=4)),
              (RNG.normal(size=(4, 2)), RNG.normal(size=2))]
    assert_gradient(net_with_activations, params, RNG.normal(size=(5, 3)), ("tanh", "softplus"))


def scaled_features(scales):
    return [lambda x, s=s: np.sin(s * x) for s in scales]


def feature_loss(w, x, features):
    design = np.stack([f(x) for f in features], axis=1)
    return np.sum((design @ w - 1.0) ** 2)


def test_closures_made_in_a_loop_with_a_default_argument():
    features = scaled_features([0.5, 1.0, 2.0])
    assert_gradient(feature_loss, RNG.normal(size=3), RNG.normal(size=7), features)


# --- 8. *args / **kwargs forwarding, zip(*...) of parameters ---

def apply_fn(fn, *args, **kwargs):
    return fn(*args, **kwargs)


def forwarded_loss(params, x, temperature=1.0):
    Ws, bs = zip(*params)
    out = apply_fn(forward_tuples, Ws, bs, x, scale=1.0 / temperature)
    weight_norm = sum(np.sum(W ** 2) for W in Ws)
    return np.sum(out ** 2) + 1e-3 * weight_norm


def forward_tuples(Ws, bs, x, scale=1.0):
    for W, b in zip(Ws, bs):
        x = np.tanh(scale * (x @ W) + b)
    return x


def test_args_and_kwargs_forwarded_and_parameters_unzipped():
    params = init_network_params([2, 3, 3], seed=5)
    assert_gradient(forwarded_loss, params, RNG.normal(size=(4, 2)), 2.0)
    assert_gradient(forwarded_loss, params, RNG.normal(size=(4, 2)), 2.0, wrt=2)


# --- 9. has_aux with a dict of metrics, value_and_grad with has_aux ---

def classifier_loss(params, x, labels):
    logits = x @ params["W"] + params["b"]
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))
    picked = np.take_along_axis(log_probs, labels[:, None], axis=-1)[:, 0]
    loss = -np.mean(picked)
    accuracy = np.mean(np.argmax(logits, axis=-1) == labels)
    return loss, {"accuracy": accuracy, "loss": loss, "n": x.shape[0]}


def test_has_aux_returning_a_dict_of_metrics():
    X, labels = _data(n=8, d=3, k=4)
    params = {"W": RNG.normal(size=(3, 4)), "b": RNG.normal(size=4)}
    grads, metrics = derivo.grad(classifier_loss, has_aux=True)(params, X, labels)
    (value, aux), grads2 = derivo.value_and_grad(classifier_loss, has_aux=True)(params, X, labels)
    loss, expected = classifier_loss(params, X, labels)
    assert value == pytest.approx(loss) and metrics == expected and aux == expected
    want = numeric_gradient(lambda p, x, l: classifier_loss(p, x, l)[0], (params, X, labels))
    assert_same_tree(grads, want)
    assert_same_tree(grads2, want)


# --- 10. try/except, np.errstate, assert and print around the arithmetic ---

def careful_log_likelihood(theta, x):
    assert theta.ndim == 1, "theta must be a vector"
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.exp(theta[0] + theta[1] * x)
    try:
        ll = np.sum(x * np.log(rate) - rate)
    except FloatingPointError:
        ll = -np.inf
    print("log-likelihood", float(ll))
    return -ll


def test_try_errstate_assert_and_print(capsys):
    assert_gradient(careful_log_likelihood, np.array([0.1, -0.3]), RNG.uniform(0, 2, size=9))
    assert "log-likelihood" in capsys.readouterr().out


# --- 11. masks, np.where and a masked mean over padded sequences ---

def masked_sequence_loss(w, x, lengths):
    n, t = x.shape[0], x.shape[1]
    mask = np.arange(t)[None, :] < lengths[:, None]
    pred = np.tanh(x * w[0] + w[1])
    per_step = np.where(mask, (pred - 0.5) ** 2, 0.0)
    return np.sum(per_step) / np.maximum(np.sum(mask), 1) + 0.0 * n


def test_a_masked_mean_over_padded_sequences():
    x = RNG.normal(size=(4, 6))
    assert_gradient(masked_sequence_loss, np.array([0.7, -0.2]), x, np.array([6, 3, 1, 4]))


# --- 12. einsum: a bilinear score and a batched quadratic form ---

def bilinear_loss(A, u, v):
    scores = np.einsum("bi,ij,bj->b", u, A, v)
    quad = np.einsum("bi,bi->b", u @ A, u)
    return np.sum(np.log1p(np.exp(-scores))) + 0.1 * np.mean(quad ** 2)


def test_einsum_bilinear_and_batched_forms():
    A = RNG.normal(size=(3, 3))
    u, v = RNG.normal(size=(5, 3)), RNG.normal(size=(5, 3))
    assert_gradient(bilinear_loss, A, u, v)
    assert_gradient(bilinear_loss, A, u, v, wrt=1)


# --- 13. batch norm and layer norm ---

def batch_norm(x, gamma, beta, eps=1e-5):
    mean = np.mean(x, axis=0)
    var = np.mean((x - mean) ** 2, axis=0)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta


def normed_loss(params, x):
    h = batch_norm(x @ params["W"], params["g1"], params["b1"])
    h = layer_norm(np.tanh(h), params["g2"], params["b2"])
    return np.sum(h[:, 0] * np.arange(1, h.shape[0] + 1)) + np.sum(h ** 3) / h.size


def test_batch_norm_then_layer_norm():
    params = {"W": RNG.normal(size=(3, 4)), "g1": 1 + 0.1 * RNG.normal(size=4),
              "b1": RNG.normal(size=4), "g2": np.ones(4), "b2": np.zeros(4)}
    assert_gradient(normed_loss, params, RNG.normal(size=(6, 3)))


# --- 14. attention and a tiny transformer block ---

def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def attention(q, k, v, causal=True):
    d = q.shape[-1]
    scores = q @ k.T / np.sqrt(d)
    if causal:
        mask = np.tril(np.ones((q.shape[0], k.shape[0]), dtype=bool))
        scores = np.where(mask, scores, -1e9)
    return softmax(scores) @ v


def transformer_block(params, x, n_heads=2):
    t, d = x.shape
    head = d // n_heads
    h = layer_norm(x, params["ln1_g"], params["ln1_b"])
    q, k, v = h @ params["Wq"], h @ params["Wk"], h @ params["Wv"]
    heads = [attention(q[:, i * head:(i + 1) * head], k[:, i * head:(i + 1) * head],
                       v[:, i * head:(i + 1) * head]) for i in range(n_heads)]
    x = x + np.concatenate(heads, axis=-1) @ params["Wo"]
    h = layer_norm(x, params["ln2_g"], params["ln2_b"])
    x = x + np.tanh(h @ params["W1"]) @ params["W2"]
    return x


def lm_loss(params, tokens, targets):
    x = params["embed"][tokens] + params["pos"][:tokens.shape[0]]
    for block in params["blocks"]:
        x = transformer_block(block, x)
    logits = x @ params["embed"].T
    log_probs = logits - logsumexp_rows(logits)
    return -np.mean(log_probs[np.arange(targets.shape[0]), targets])


def init_transformer(vocab=5, d=4, t=6, n_blocks=2, seed=3):
    rng = np.random.default_rng(seed)

    def block():
        shapes = {"Wq": (d, d), "Wk": (d, d), "Wv": (d, d), "Wo": (d, d),
                  "W1": (d, 2 * d), "W2": (2 * d, d)}
        p = {name: rng.normal(size=s) / np.sqrt(s[0]) for name, s in shapes.items()}
        p.update(ln1_g=np.ones(d), ln1_b=np.zeros(d), ln2_g=np.ones(d), ln2_b=np.zeros(d))
        return p
    return {"embed": rng.normal(size=(vocab, d)), "pos": 0.1 * rng.normal(size=(t, d)),
            "blocks": [block() for _ in range(n_blocks)]}


def test_a_tiny_transformer_language_model():
    params = init_transformer()
    tokens = np.array([0, 3, 1, 4, 2])
    targets = np.array([3, 1, 4, 2, 0])
    grads = assert_gradient(lm_loss, params, tokens, targets)
    assert list(grads["blocks"][0]) == list(params["blocks"][0])


def test_attention_agrees_with_jax_in_reverse_and_forward_mode():
    jax = _jax()
    jnp = jax.numpy
    q, k, v = (RNG.normal(size=(4, 3)) for _ in range(3))

    def jax_attention(q, k, v):
        scores = q @ k.T / jnp.sqrt(q.shape[-1])
        scores = jnp.where(jnp.tril(jnp.ones((4, 4), dtype=bool)), scores, -1e9)
        return jax.nn.softmax(scores, axis=-1) @ v

    ct = RNG.normal(size=(4, 3))
    out, pullback = derivo.vjp(attention, q, k, v)
    jout, jpullback = jax.vjp(jax_attention, q, k, v)
    np.testing.assert_allclose(out, jout, rtol=1e-12)
    for got, want in zip(pullback(ct), jpullback(ct)):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    tangents = tuple(RNG.normal(size=(4, 3)) for _ in range(3))
    _, tangent = derivo.jvp(attention, (q, k, v), tangents)
    _, jtangent = jax.jvp(jax_attention, (q, k, v), tangents)
    np.testing.assert_allclose(tangent, jtangent, rtol=1e-9, atol=1e-12)


# --- 15. a bouncing ball: a while loop with a data-dependent exit ---

def simulate_ball(v0, dt=0.01, g=9.81, drag=0.1):
    x, y, vx, vy = 0.0, 0.0, v0[0], v0[1]
    t = 0.0
    while y >= 0.0 and t < 5.0:
        speed = np.sqrt(vx * vx + vy * vy)
        vx = vx - dt * drag * speed * vx
        vy = vy - dt * (g + drag * speed * vy)
        x = x + dt * vx
        y = y + dt * vy
        t += dt
    return x


def test_a_simulation_whose_loop_exits_on_its_state():
    v0 = np.array([3.0, 4.0])
    # the trip count is piecewise constant in v0: a small step keeps it fixed
    got = derivo.grad(simulate_ball)(v0)
    want = numeric_gradient(simulate_ball, (v0,))
    np.testing.assert_allclose(got, want, rtol=1e-4)


# --- 16. Newton's method for an implicit function, checked by the implicit function theorem ---

def newton_root(a, b, tol=1e-12, max_iter=50):
    x = 1.0
    for _ in range(max_iter):
        f = x ** 3 + a * x - b
        step = f / (3 * x ** 2 + a)
        x = x - step
        if abs(step) < tol:
            break
    return x


def test_newton_iterations_give_the_implicit_derivative():
    a, b = 2.0, 3.0
    x = newton_root(a, b)
    da, db = derivo.grad(newton_root, wrt=(0, 1))(a, b)
    # x^3 + a x - b = 0  =>  dx/da = -x / (3x^2 + a), dx/db = 1 / (3x^2 + a)
    assert da == pytest.approx(-x / (3 * x ** 2 + a), rel=1e-9)
    assert db == pytest.approx(1 / (3 * x ** 2 + a), rel=1e-9)


# --- 17. Hessians: of a logistic loss, and jacobian(grad(f)) ---

def logistic_loss(w, X, y):
    z = X @ w
    return np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * np.sum(w ** 2)


def test_the_hessian_of_a_logistic_loss_in_closed_form():
    X = RNG.normal(size=(10, 3))
    y = (RNG.uniform(size=10) > 0.5).astype(float)
    w = RNG.normal(size=3)
    p = 1 / (1 + np.exp(-X @ w))
    expected = X.T @ (X * (p * (1 - p))[:, None]) + np.eye(3)
    np.testing.assert_allclose(derivo.hessian(logistic_loss)(w, X, y), expected, rtol=1e-10)
    np.testing.assert_allclose(derivo.jacobian(derivo.grad(logistic_loss))(w, X, y), expected,
                               rtol=1e-10)


def test_hessian_vector_products_agree_with_jax():
    jax = _jax()
    jnp = jax.numpy
    X = RNG.normal(size=(10, 3))
    y = (RNG.uniform(size=10) > 0.5).astype(float)
    w, v = RNG.normal(size=3), RNG.normal(size=3)

    def jax_loss(w):
        z = X @ w
        return jnp.sum(jnp.logaddexp(0.0, z) - y * z) + 0.5 * jnp.sum(w ** 2)

    want = jax.jvp(jax.grad(jax_loss), (w,), (v,))[1]
    _, forward_over_reverse = derivo.jvp(derivo.grad(logistic_loss), (w, X, y),
                                         (v, np.zeros_like(X), np.zeros_like(y)))
    np.testing.assert_allclose(forward_over_reverse, want, rtol=1e-10)
    _, pullback = derivo.vjp(derivo.grad(logistic_loss), w, X, y)
    np.testing.assert_allclose(pullback(v)[0], want, rtol=1e-10)


# --- 18. an RNN scanned over time with a python loop over the inputs ---

def rnn_loss(params, xs, ys):
    h = np.zeros(params["Wh"].shape[0])
    loss = 0.0
    for x_t, y_t in zip(xs, ys):
        h = np.tanh(params["Wh"] @ h + params["Wx"] @ x_t + params["b"])
        pred = params["Wy"] @ h
        loss = loss + np.sum((pred - y_t) ** 2)
    return loss / len(xs)


def test_an_rnn_scanned_over_a_sequence():
    params = {"Wh": 0.5 * RNG.normal(size=(4, 4)), "Wx": RNG.normal(size=(4, 2)),
              "b": np.zeros(4), "Wy": RNG.normal(size=(1, 4))}
    xs = RNG.normal(size=(5, 2))
    ys = RNG.normal(size=(5, 1))
    assert_gradient(rnn_loss, params, xs, ys)


# --- 19. a Gaussian mixture negative log-likelihood with the logsumexp trick ---

def gmm_nll(params, x):
    means, log_stds, logits = params
    log_weights = logits - logsumexp_rows(logits[None, :])[0]
    z = (x[:, None] - means[None, :]) / np.exp(log_stds)[None, :]
    comp = -0.5 * z ** 2 - log_stds - 0.5 * np.log(2 * np.pi) + log_weights
    top = np.max(comp, axis=1, keepdims=True)
    return -np.sum(top[:, 0] + np.log(np.sum(np.exp(comp - top), axis=1)))


def test_a_gaussian_mixture_with_params_a_tuple():
    params = (np.array([-1.0, 0.5, 2.0]), np.array([0.1, -0.2, 0.3]), np.zeros(3))
    assert_gradient(gmm_nll, params, RNG.normal(size=12))


# --- 20. a model class with a NamedTuple of parameters and an apply staticmethod ---

class Params(NamedTuple):
    w: np.ndarray
    b: float


class Regressor:
    penalty = 0.1

    def __init__(self, features):
        self.features = features

    @staticmethod
    def apply(params, phi):
        return phi @ params.w + params.b

    def design(self, x):
        return np.stack([f(x) for f in self.features], axis=-1)

    def loss(self, params, x, y):
        pred = self.apply(params, self.design(x))
        return np.mean((pred - y) ** 2) + self.penalty * params.w @ params.w


def test_a_namedtuple_of_parameters_through_a_static_apply():
    model = Regressor([np.sin, np.cos, lambda x: x ** 2])
    params = Params(RNG.normal(size=3), 0.5)
    x = RNG.normal(size=10)
    grads = assert_gradient(model.loss, params, x, np.sin(2 * x))
    assert isinstance(grads, Params)


# --- 21. an objective built from closures returned by a factory ---

def make_loss(x, y, weight_decay):
    def predict(w):
        return x @ w

    def loss(w):
        r = predict(w) - y
        return r @ r / len(y) + weight_decay * np.sum(w ** 2)
    return loss


def test_a_loss_made_by_a_factory_of_closures():
    x, y = RNG.normal(size=(8, 3)), RNG.normal(size=8)
    loss = make_loss(x, y, 0.1)
    w = RNG.normal(size=3)
    assert_gradient(loss, w)
    # the minimiser of a ridge loss in closed form: the gradient vanishes there
    w_star = np.linalg.solve(x.T @ x / 8 + 0.1 * np.eye(3), x.T @ y / 8)
    np.testing.assert_allclose(derivo.grad(loss)(w_star), 0.0, atol=1e-12)


# --- 22. a physics energy minimised: springs between points, forces as -grad ---

def spring_energy(positions, edges, rest_lengths, k=1.0):
    total = 0.0
    for (i, j), rest in zip(edges, rest_lengths):
        d = positions[i] - positions[j]
        total = total + 0.5 * k * (np.sqrt(d @ d) - rest) ** 2
    return total


def test_forces_of_a_spring_network_sum_to_zero():
    positions = RNG.normal(size=(4, 2))
    edges = [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)]
    rest = [1.0, 1.0, 1.0, 1.0, 1.4]
    forces = -assert_gradient(spring_energy, positions, edges, rest)
    np.testing.assert_allclose(forces.sum(axis=0), 0.0, atol=1e-12)


# --- 23. a value_and_grad training loop of a classifier with has_aux metrics ---

def test_a_training_loop_logging_its_metrics():
    X, labels = _data(n=30, d=3, k=3, seed=4)
    X = X + 2 * one_hot(labels, 3)
    params = {"W": np.zeros((3, 3)), "b": np.zeros(3)}
    step = derivo.value_and_grad(classifier_loss, has_aux=True)
    history = []
    for epoch in range(30):
        (loss, metrics), grads = step(params, X, labels)
        params = {k: params[k] - 0.5 * grads[k] for k in params}
        history.append(metrics["accuracy"])
    assert history[-1] > 0.8 and history[-1] >= history[0]
