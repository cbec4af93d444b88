"""A least-squares fit whose loss is wrapped by a checking decorator and takes its
parameters as ``*params``, as decorated research code often does.

The decorator is the usual ``functools.wraps`` wrapper forwarding ``*args`` and
``**kwargs``, here refusing a loss that is not finite; the loss unpacks its parameters
itself and takes its data and ridge penalty as keywords. derivo transforms, at each call, a copy of the wrapper taking that call's
arguments by name, so ``wrt`` counts the parameters as the call gives them.

    python examples/decorated_loss.py
"""
import functools

import numpy as np

import derivo



def finite(fn):
    """Raise where ``fn`` gives a value that is not finite (the derivative runs the
    wrapper's code too, so it raises there as well)."""
    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        value = fn(*args, **kwargs)
        if not np.isfinite(value):
            raise FloatingPointError("{} is not finite: {}".format(name, value))
        return value
    return wrapper


@finite
def loss(*params, inputs, targets, ridge=0.0):
    slope, intercept = params
    residuals = slope * inputs + intercept - targets
    return np.mean(residuals ** 2) + ridge * slope ** 2


decorated_loss_grad = derivo.grad(loss, wrt=(0, 1))


def data(seed=0):
    rng = np.random.default_rng(seed)
    inputs = np.linspace(0.0, 1.0, 50)
    return inputs, 3.0 * inputs - 1.0 + 0.05 * rng.normal(size=inputs.shape)


def fit(inputs, targets, steps=500, rate=0.5, ridge=1e-3):
    slope, intercept = 0.0, 0.0
    for _ in range(steps):
        g_slope, g_intercept = decorated_loss_grad(slope, intercept, inputs=inputs,
                                                   targets=targets, ridge=ridge)
        slope, intercept = slope - rate * g_slope, intercept - rate * g_intercept
    return slope, intercept


def main():
    inputs, targets = data()
    slope, intercept = fit(inputs, targets)
    print(f"fitted: y = {slope:.3f} x + {intercept:.3f}   (the data lie near y = 3 x - 1)")
    print()
    print(decorated_loss_grad.source)


if __name__ == "__main__":
    main()
