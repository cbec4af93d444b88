"""A neural ODE fitted to a damped oscillation, integrated by Euler steps.

    dy/dt = f(y; params) = W2 tanh(W1 y + b1) + b2,   y(0) = y0

The solver takes the dynamics as a function (``odeint(dynamics, y0, ts, params)``), as
solvers do; the loss is a closure made by ``make_loss`` over the data. derivo sees which
function each call is given and differentiates through the solver's loop.

    python examples/neural_ode.py
"""
import numpy as np

import derivo


def dynamics(y, params):
    hidden = np.tanh(params["W1"] @ y + params["b1"])
    return params["W2"] @ hidden + params["b2"]


def odeint(f, y0, ts, params):
    """The states at the times ``ts`` by explicit Euler steps of dy/dt = f(y, params)."""
    y = y0
    states = [y0]
    for i in range(len(ts) - 1):
        y = y + (ts[i + 1] - ts[i]) * f(y, params)
        states.append(y)
    return states


def trajectory_loss(params, y0, ts, observed):
    predicted = odeint(dynamics, y0, ts, params)
    return sum(np.sum((p - o) ** 2) for p, o in zip(predicted, observed)) / len(ts)


trajectory_loss_grad = derivo.grad(trajectory_loss)


def make_loss(y0, ts, observed):
    def loss(params):
        return trajectory_loss(params, y0, ts, observed)
    return loss


def data(n=40):
    ts = np.linspace(0.0, 4.0, n)
    observed = [np.array([np.exp(-0.3 * t) * np.cos(2 * t), -np.exp(-0.3 * t) * np.sin(2 * t)])
                for t in ts]
    return observed[0], ts, observed


def init(hidden=16, seed=0):
    rng = np.random.default_rng(seed)
    return {"W1": 0.5 * rng.normal(size=(hidden, 2)), "b1": np.zeros(hidden),
            "W2": 0.5 * rng.normal(size=(2, hidden)), "b2": np.zeros(2)}


def train(params, loss, steps=300, rate=0.05):
    """Gradient descent with momentum; the losses along the way."""
    loss_grad = derivo.value_and_grad(loss)
    velocity = {k: np.zeros_like(v) for k, v in params.items()}
    history = []
    for _ in range(steps):
        value, grads = loss_grad(params)
        history.append(value)
        velocity = {k: 0.9 * velocity[k] - rate * grads[k] for k in params}
        params = {k: params[k] + velocity[k] for k in params}
    return params, history


if __name__ == "__main__":
    y0, ts, observed = data()
    loss = make_loss(y0, ts, observed)
    params, history = train(init(), loss)
    print("loss before", round(float(history[0]), 4), "after", round(float(loss(params)), 4))
