"""A recurrent network unrolled by a for loop over time steps, trained to sum its inputs.

    h_0 = h0,   h_t = tanh(W h_{t-1} + U x_t + b)  for t = 1..T,   y = V h_T + c
    loss = 1/2 ||y - target||^2

Reverse mode needs every h_{t-1} on the way back (backpropagation through time); each
iteration of the loop overwrites h, so derivo's generated code pushes the old h on a stack
in the forward sweep and pops it in the reverse sweep.

    python examples/rnn.py
"""
import numpy as np

import derivo


def rnn_loss(W, U, b, V, c, h0, xs, target):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
    y = V @ h + c
    r = y - target
    return 0.5 * np.sum(r * r)


rnn_grad = derivo.grad(rnn_loss, wrt=("W", "U", "b", "V", "c", "h0"))

PARAMETERS = ("W", "U", "b", "V", "c", "h0")


def initial(n_hidden=8, n_in=2, n_out=2, seed=0):
    rng = np.random.default_rng(seed)
    return [0.3 * rng.normal(size=(n_hidden, n_hidden)),
            0.5 * rng.normal(size=(n_hidden, n_in)),
            np.zeros(n_hidden),
            0.5 * rng.normal(size=(n_out, n_hidden)),
            np.zeros(n_out),
            np.zeros(n_hidden)]


def sequences(count, steps=6, n_in=2, seed=1):
    """Input sequences and their target: the mean of each input channel over time."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        xs = rng.uniform(-1, 1, size=(steps, n_in))
        yield xs, xs.mean(axis=0)


def central_difference(f, args, index, h=1e-6):
    x = args[index]
    g = np.zeros(x.shape)
    for position in np.ndindex(x.shape):
        step = np.zeros(x.shape)
        step[position] = h
        up, down = list(args), list(args)
        up[index], down[index] = x + step, x - step
        g[position] = (f(*up) - f(*down)) / (2 * h)
    return g


def main():
    params = initial()
    xs, target = next(sequences(1, seed=9))
    args = [p + 0.1 for p in params] + [xs, target]
    print(f"RNN with {params[0].shape[0]} hidden units over {xs.shape[0]} time steps")
    print("gradient check, derivo vs central differences (h=1e-6):")
    for index, (name, g) in enumerate(zip(PARAMETERS, rnn_grad(*args))):
        fd = central_difference(rnn_loss, args, index)
        err = np.max(np.abs(g - fd)) / np.max(np.abs(fd))
        print(f"  d loss / d {name:2s} shape {str(g.shape):7s} max |derivo - fd| / max |fd| = {err:.1e}")
    print()

    test = list(sequences(50, seed=2))
    print("stochastic gradient descent on the task 'output the mean of the inputs', step 0.1:")
    for epoch in range(6):
        if epoch:
            for xs, target in sequences(200, seed=10 + epoch):
                grads = rnn_grad(*params, xs, target)
                params = [p - 0.1 * g for p, g in zip(params, grads)]
        held_out = np.mean([rnn_loss(*params, xs, target) for xs, target in test])
        print(f"  epoch {epoch}  mean held-out loss {held_out:.5f}")
    print()
    print(rnn_grad.source)


if __name__ == "__main__":
    main()
