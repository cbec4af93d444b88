"""A predator-prey model integrated by explicit Euler, its gradient taken with checkpoints.

The Lotka-Volterra equations dx/dt = alpha x - beta x y (prey), dy/dt = delta x y - gamma y
(predators) are stepped ``steps`` times by explicit Euler, both populations updated at once
from the old ones (``x, y = x + dt * f(x, y), y + dt * g(x, y)``); the loss is the misfit of
the final state.  Its gradient in the four rates needs, in reverse order, every state the loop
went through.  ``loops="stack"`` (the default) saves them all as the loop runs: memory grows
with the number of steps.  ``derivo.grad(..., loops="checkpoint", checkpoints=10)`` keeps at
most 10 loop states whatever the number of steps and recomputes the others from the nearest
kept one: derivo outlines the loop's body into a step function, and ``derivo.checkpoints`` runs
it on the binomial schedule (revolve), which makes the fewest step calls possible with 10
states, C*(K, 10) of Eq. 8.3 for K steps (``derivo.checkpoints.optimal_cost``).

``loops="reversible"`` does not apply here: an explicit-Euler step reads the variable it
updates (the new x is x + dt * (alpha x - beta x y)), so it cannot be undone by subtraction,
and derivo refuses it with the offending line.

    python examples/integrator.py
"""
import derivo
from derivo.checkpoints import LAST_RUN, optimal_cost

PARAMETERS = ("alpha", "beta", "delta", "gamma")


def predator_prey(alpha, beta, delta, gamma, steps=1000, dt=0.01):
    x = 1.0  # prey
    y = 0.5  # predators
    for _ in range(steps):
        x, y = x + dt * (alpha * x - beta * x * y), y + dt * (delta * x * y - gamma * y)
    return (x - 1.5) ** 2 + (y - 0.5) ** 2


predator_prey_grad = derivo.grad(predator_prey, wrt=PARAMETERS, loops="checkpoint",
                                 checkpoints=10)
predator_prey_grad_stack = derivo.grad(predator_prey, wrt=PARAMETERS)


def central_difference(f, args, i, h=1e-6):
    hi = list(args)
    lo = list(args)
    hi[i] += h
    lo[i] -= h
    return (f(*hi) - f(*lo)) / (2 * h)


def main():
    steps = 1000
    args = (1.1, 0.4, 0.1, 0.4, steps, 0.01)
    checkpointed = predator_prey_grad(*args)
    run = dict(LAST_RUN)
    stack = predator_prey_grad_stack(*args)
    print(f"loss after {steps} steps: {predator_prey(*args)!r}")
    for i, name in enumerate(PARAMETERS):
        fd = central_difference(predator_prey, args, i)
        print(f"d loss / d {name:5s}: checkpoint {checkpointed[i]: .12f}   "
              f"stack {stack[i]: .12f}   central difference {fd: .12f}")
    print(f"checkpointed loop: {run['steps']} steps, at most {run['most_held']} of "
          f"{run['slots']} states kept, {run['forward_steps'] + run['recomputed_steps']} step "
          f"calls (the optimum C*({steps}, {run['slots']}) = {optimal_cost(steps, run['slots'])})")
    try:
        derivo.grad(predator_prey, wrt=PARAMETERS, loops="reversible")
    except derivo.DerivoError as error:
        print(f"loops='reversible' is refused: {error}")
    print()
    print(predator_prey_grad.source)


if __name__ == "__main__":
    main()
