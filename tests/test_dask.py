"""Dask arrays as data: derivo's generated NumPy code keeps them lazy.

A model's parameters are NumPy arrays and floats; its data are chunked Dask
arrays.  derivo's gradient is then a Dask expression (a float parameter's
too), built without computing anything, equal to the gradient with the same
data in memory.  Differentiating with respect to a Dask array is refused.
"""

import numpy as np
import pytest

import derivo
from checks import dask_computations

da = pytest.importorskip("dask.array")
import dask  # noqa: E402


def logistic(w, b, X, y):
    z = X @ w + b
    return np.mean(np.logaddexp(0.0, -y * z)) + 1e-3 * np.sum(w * w)


def mlp(W1, b1, W2, X, y):
    hidden = np.tanh(X @ W1 + b1)
    out = hidden @ W2
    return np.sum((out - y) ** 2) / X.shape[0]


def standardized(w, X):
    mu = np.mean(X, axis=0)
    sd = np.std(X, axis=0)
    Z = (X - mu) / sd
    return np.sum(np.max(Z * w, axis=1) ** 2) + np.linalg.norm(Z.T @ Z @ w)


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 4))
    y = np.sign(X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.1)
    return X, y, da.from_array(X, chunks=(150, 4)), da.from_array(y, chunks=150)


def central(f, args, index, h=1e-6):
    """Central differences of ``f`` in its argument ``index`` (a float or an array)."""
    x = np.asarray(args[index], dtype=float)
    grad = np.zeros(x.shape)
    for position in np.ndindex(x.shape):
        step = np.zeros(x.shape)
        step[position] = h
        shifted = [list(args), list(args)]
        for sign, copy in zip((1, -1), shifted):
            copy[index] = x + sign * step if x.shape else float(x) + sign * h
        grad[position] = (f(*shifted[0]) - f(*shifted[1])) / (2 * h)
    return grad if x.shape else float(grad)


def lazily(derivative, *args):
    with dask_computations() as computes:
        result = derivative(*args)
    assert computes.count == 0
    return result


def test_a_logistic_gradient_is_lazy_and_right(data):
    X, y, X_dask, y_dask = data
    w, b = np.array([0.3, -0.1, 0.2, 0.05]), 0.1
    grads = lazily(derivo.grad(logistic, wrt=(0, 1)), w, b, X_dask, y_dask)
    assert all(isinstance(g, da.Array) for g in grads)
    gw, gb = dask.compute(*grads)
    np.testing.assert_allclose(gw, central(logistic, (w, b, X, y), 0), rtol=1e-6)
    assert gb == pytest.approx(central(logistic, (w, b, X, y), 1), rel=1e-6)


def test_value_and_grad_and_vjp_are_lazy(data):
    X, y, X_dask, y_dask = data
    w = np.array([0.3, -0.1, 0.2, 0.05])
    value, gw = lazily(derivo.value_and_grad(logistic), w, 0.1, X_dask, y_dask)
    assert isinstance(value, da.Array)
    assert float(value) == pytest.approx(logistic(w, 0.1, X, y), rel=1e-12)
    np.testing.assert_allclose(gw.compute(), derivo.grad(logistic)(w, 0.1, X, y), rtol=1e-12)
    out, vjp_fn = derivo.vjp(logistic, w, 0.1, X_dask, y_dask)
    np.testing.assert_allclose(np.asarray(vjp_fn(2.0)[0]),
                               2.0 * derivo.grad(logistic)(w, 0.1, X, y), rtol=1e-12)


def test_a_small_network_and_standardized_features(data):
    X, y, X_dask, y_dask = data
    rng = np.random.default_rng(4)
    W1, b1, W2 = rng.normal(size=(4, 5)), rng.normal(size=5), rng.normal(size=5)
    grads = lazily(derivo.grad(mlp, wrt=(0, 1, 2)), W1, b1, W2, X_dask, y_dask)
    args = (W1, b1, W2, X, y)
    for index, got in enumerate(dask.compute(*grads)):
        np.testing.assert_allclose(got, central(mlp, args, index), rtol=1e-6, atol=1e-9)
    w = rng.normal(size=4)
    got = lazily(derivo.grad(standardized), w, X_dask)
    np.testing.assert_allclose(got.compute(), central(standardized, (w, X), 0), rtol=1e-6)


def test_differentiating_with_respect_to_a_dask_array_is_refused(data):
    X, y, X_dask, y_dask = data
    with pytest.raises(derivo.DerivoError, match="np.asarray"):
        derivo.grad(logistic, wrt=2)(np.zeros(4), 0.0, X_dask, y_dask)


def test_the_example_fits():
    from examples import dask_regression
    X, y, truth = dask_regression.make_data(20_000)
    w, b = dask_regression.fit(X, y, steps=3)
    assert np.corrcoef(w, truth)[0, 1] > 0.9


def test_a_gradient_computes_on_a_local_cluster(data):
    distributed = pytest.importorskip("distributed")
    X, y, X_dask, y_dask = data
    w = np.array([0.3, -0.1, 0.2, 0.05])
    with distributed.Client(processes=False, n_workers=2, threads_per_worker=1,
                            dashboard_address=None) as client:
        grads = lazily(derivo.grad(logistic, wrt=(0, 1)), w, 0.1, X_dask, y_dask)
        gw, gb = client.compute(list(grads), sync=True)
    expected = derivo.grad(logistic, wrt=(0, 1))(w, 0.1, X, y)
    np.testing.assert_allclose(gw, expected[0], rtol=1e-12)
    assert gb == pytest.approx(expected[1], rel=1e-12)
