"""Logistic regression on data that is never in memory at once, with Dask.

The loss is plain NumPy code. Given Dask arrays for the data, derivo's gradient
of it is a lazy Dask expression too (nothing is computed while it is made), and
each step of gradient descent computes it chunk by chunk: the features are drawn
chunk by chunk, used and dropped, so memory holds a few chunks whatever the
number of rows (1e8 rows of 20 features would be 16 GB).

    pip install 'dask[array]'
    python examples/dask_regression.py [ROWS]      # default 500,000 rows
"""
import sys
import time

import numpy as np
import dask
import dask.array as da

import derivo

FEATURES = 20
CHUNK_ROWS = 100_000


def loss(w, b, X, y):
    z = X @ w + b
    return np.mean(np.logaddexp(0.0, -y * z)) + 1e-3 * np.sum(w * w)


dask_loss_grad = derivo.value_and_grad(loss, wrt=("w", "b"))


def make_data(rows, seed=0):
    """Features drawn lazily, and labels of a known linear rule with noise."""
    random = da.random.RandomState(seed)
    X = random.normal(size=(rows, FEATURES), chunks=(CHUNK_ROWS, FEATURES))
    truth = np.linspace(-1.0, 1.0, FEATURES)
    noise = random.normal(scale=0.5, size=rows, chunks=CHUNK_ROWS)
    y = da.sign(X @ truth + 0.3 + noise)
    return X, y, truth


def fit(X, y, steps=15, rate=2.0):
    w, b = np.zeros(X.shape[1]), 0.0
    for step in range(steps):
        value, (gw, gb) = dask_loss_grad(w, b, X, y)     # lazy: a Dask graph
        value, gw, gb = dask.compute(value, gw, gb)      # one pass over the data
        w, b = w - rate * gw, b - rate * gb
        print(f"step {step:2d}: loss {value:.5f}")
    return w, b


def main(rows=500_000):
    X, y, truth = make_data(rows)
    print(f"{rows:,} rows x {FEATURES} features ({X.nbytes / 1e6:,.0f} MB if it were in "
          f"memory), in chunks of {CHUNK_ROWS:,} rows")
    start = time.perf_counter()
    w, b = fit(X, y)
    seconds = time.perf_counter() - start
    print(f"fitted in {seconds:.1f} s; the direction found is {np.corrcoef(w, truth)[0, 1]:.4f}"
          " correlated with the true one")


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 500_000)
