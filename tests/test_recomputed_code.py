"""Code derivo runs twice: a checkpointed loop's trips, and the body of a helper
with a loop or a branch (its VJP runs it again), may call only what is known to
give the same result when run again (see derivo.fence.refuse_rerun_calls).

A call that may not is refused at the user's file:line:col of the call itself,
with what to write instead; code that only calls known functions is
differentiated, and compared here with central differences.
"""

import inspect
import math
import os

import numpy as np
import pytest

import derivo
from checks import assert_close, numeric_grad

THIS_FILE = os.path.abspath(__file__)


def line_of(function, text):
    """The file line number of the first line of ``function`` holding ``text``,
    and the column where ``text`` starts there."""
    lines, first = inspect.getsourcelines(function)
    for offset, line in enumerate(lines):
        if text in line:
            return first + offset, line.index(text)
    raise AssertionError("{!r} is not in {}".format(text, function.__name__))


def refusal(call):
    with pytest.raises(derivo.DerivoError) as caught:
        call()
    return caught.value


def assert_refused_at(error, function, text):
    line, column = line_of(function, text)
    assert (error.filename, error.lineno, error.col) == (THIS_FILE, line, column), str(error)


# --- a draw through a function value ------------------------------------------------

def through_a_default(x, draw=np.random.randn):
    s = x
    for i in range(4):
        s = s * 0.9 + 0.1 * draw()
    return s


def through_a_local_alias(x, rng):
    s = x
    draw = rng.normal
    for i in range(4):
        s = s + np.sin(s) * draw()
    return s


def through_a_local_object(x):
    noise = Noise(0.1)
    s = x
    for i in range(4):
        s = s + np.sin(s) * noise.sample()
    return s


class Noise:
    def __init__(self, scale):
        self.scale = scale
        self.rng = np.random.default_rng(0)

    def sample(self):
        return self.scale * self.rng.standard_normal()


def test_a_draw_through_a_default_function_is_refused_in_a_checkpointed_loop():
    error = refusal(lambda: derivo.grad(through_a_default, loops="checkpoint")(1.0))
    assert_refused_at(error, through_a_default, "draw()")
    message = str(error)
    assert "runs the trips of a checkpointed loop again" in message
    assert "draws random numbers (numpy.random.RandomState.randn)" in message
    assert "draw the numbers before the loop and index them" in message
    assert 'loops="stack"' in message


def test_a_local_alias_of_a_generator_method_is_refused_in_a_checkpointed_loop():
    # silently wrong before: the alias was no name of a list of random methods
    error = refusal(lambda: derivo.grad(through_a_local_alias, loops="checkpoint")(
        1.0, np.random.default_rng(0)))
    assert_refused_at(error, through_a_local_alias, "draw()")
    assert "numpy.random.Generator.normal" in str(error)


def test_a_method_derivo_does_not_know_of_a_local_object_is_refused():
    error = refusal(lambda: derivo.grad(through_a_local_object, loops="checkpoint")(1.0))
    assert_refused_at(error, through_a_local_object, "noise.sample()")
    assert "'sample' is not a method derivo knows" in str(error)
    assert "declare it with derivo.nondifferentiable" in str(error)


def through_a_list_of_functions(x):
    noises = [np.random.randn]
    s = x
    for i in range(3):
        s = s + 0.1 * noises[0]()
    return s


def test_a_function_derivo_cannot_see_is_refused():
    error = refusal(lambda: derivo.grad(through_a_list_of_functions, loops="checkpoint")(1.0))
    assert_refused_at(error, through_a_list_of_functions, "noises[0]()")
    assert "'noises[0]' holds a function derivo cannot see" in str(error)


def draw_key(v):
    return np.random.rand()


def through_a_key(x, ws):
    s = x
    for i in range(3):
        s = s * max(ws, key=draw_key)
    return s


def test_a_function_given_to_a_known_call_is_checked_too():
    error = refusal(lambda: derivo.grad(through_a_key, loops="checkpoint")(1.0, [0.5, 0.9]))
    assert_refused_at(error, draw_key, "np.random.rand()")


def test_the_stack_differentiates_the_draws_the_refusal_points_to():
    def at(x):
        return through_a_local_alias(x, np.random.default_rng(0))

    gradient = derivo.grad(through_a_local_alias, loops="stack")(1.0, np.random.default_rng(0))
    assert_close(gradient, numeric_grad(at, (1.0,)), rtol=1e-6)


def predrawn(x, eps):
    s = x
    for i in range(4):
        s = s + np.sin(s) * eps[i]
    return s


def test_numbers_drawn_before_the_loop_and_indexed_are_checkpointed():
    eps = np.random.default_rng(0).normal(size=4)
    gradient = derivo.grad(predrawn, loops="checkpoint", checkpoints=2)(1.0, eps)
    assert_close(gradient, numeric_grad(predrawn, (1.0, eps)), rtol=1e-6)


def drawn_while(x):
    s, n = x, 0
    while np.random.rand() < 0.9 and n < 20:
        s = s * 0.9 + 0.1
        n += 1
    return s


def test_a_while_test_that_draws_is_refused():
    # the reverse sweep runs the test again when it recomputes trips
    error = refusal(lambda: derivo.grad(drawn_while, loops="checkpoint")(1.0))
    assert_refused_at(error, drawn_while, "np.random.rand()")


# --- helpers, followed transitively ---------------------------------------------------

def jitter(s):
    return s + 0.01 * np.random.randn()


def through_a_helper(x):
    s = x
    for i in range(3):
        s = jitter(s) * 0.5
    return s


def test_a_draw_in_a_helper_of_a_checkpointed_loop_is_refused_where_it_is():
    error = refusal(lambda: derivo.grad(through_a_helper, loops="checkpoint")(1.0))
    assert_refused_at(error, jitter, "np.random.randn()")
    line, _ = line_of(through_a_helper, "jitter(s)")
    assert "(called by 'jitter(s)' at {}:{})".format(THIS_FILE, line) in str(error)


def branching_draw(x):
    if x > 0:
        return x * np.random.randn()
    return x


def calls_a_branching_draw(x):
    return branching_draw(x) * 2.0


def test_a_branching_helper_that_draws_is_differentiated_at_its_draw():
    # its VJP comes in halves (derivo.residuals): the helper runs once, and draws once
    np.random.seed(0)
    gradient = derivo.grad(calls_a_branching_draw)(1.0)
    np.random.seed(0)
    assert gradient == 2.0 * np.random.randn()


def test_a_branching_helper_that_draws_is_refused_saying_why_where_it_runs_again():
    # a second derivative differentiates a VJP that runs the helper again
    error = refusal(lambda: derivo.grad(derivo.grad(calls_a_branching_draw))(1.0))
    assert_refused_at(error, branching_draw, "np.random.randn()")
    message = str(error)
    assert "'np.random.randn()' here: the derivative runs 'branching_draw' again" in message
    assert "a function with a loop or a branch gets a VJP of its own" in message
    assert "draws random numbers" in message
    assert "draw the numbers in the caller and pass them in" in message
    assert "then branching_draw(..., eps)" in message


def noisy_energy(q):
    return q * q * np.random.randn()


noisy_force = derivo.grad(noisy_energy)


def through_a_derivative(x):
    s = x
    for i in range(3):
        s = s - 0.1 * noisy_force(s)
    return s


def test_a_draw_in_the_function_of_a_derivative_called_in_a_checkpointed_loop_is_refused():
    error = refusal(lambda: derivo.grad(through_a_derivative, loops="checkpoint")(1.0))
    assert_refused_at(error, noisy_energy, "np.random.randn()")


# --- what passes: known functions, followed helpers, function values ------------------

def smooth_step(s, k):
    if s != s:  # what a raise computes stops the run: it is no value run again
        raise ValueError("not a number: {}".format(s))
    if s > 0:
        return s - k * math.sin(s)
    return s + k * s * s


def deterministic(x, weights, act=np.tanh):
    s = x
    history = []
    for i in range(5):
        s = smooth_step(s, 0.1) + act(weights[i % 2] * s)
        history.append(s)
        s = s + 0.01 * float(np.sum(np.asarray(history) * 0.0)) + 0.01 * abs(s)
    return s * max(1.0, len(history) / 5.0)


@pytest.mark.parametrize("schedule", ["revolve", "segments"])
def test_a_checkpointed_loop_of_known_calls_is_differentiated(schedule):
    weights = np.array([0.7, -0.4])
    gradient = derivo.grad(deterministic, loops="checkpoint", checkpoints=2,
                           schedule=schedule)(0.3, weights)
    assert_close(gradient, numeric_grad(deterministic, (0.3, weights)), rtol=1e-6)


def energy(q):
    return q * q * 0.5 + math.cos(q)


force = derivo.grad(energy)


def through_a_force(x):
    s = x
    for i in range(5):
        s = s - 0.1 * force(s)
    return s


def test_a_derivative_called_in_a_checkpointed_loop_is_differentiated():
    gradient = derivo.grad(through_a_force, loops="checkpoint", checkpoints=2)(0.8)
    assert_close(gradient, numeric_grad(through_a_force, (0.8,)), rtol=1e-6)


GRID = np.linspace(0.0, 1.0, 5)


def binned(x):
    s = x
    for i in range(4):
        k = np.searchsorted(GRID, 0.3 * i)  # NumPy's, no rule, not differentiated
        s = s * (1.0 + 0.1 * k)
    return s


def test_a_numpy_function_without_a_rule_is_run_again_in_a_checkpointed_loop():
    gradient = derivo.grad(binned, loops="checkpoint", checkpoints=2)(0.8)
    assert_close(gradient, numeric_grad(binned, (0.8,)), rtol=1e-6)


def seeded_inside(x):
    s = x
    for i in range(3):
        s = s + 0.1 * np.random.default_rng(i).normal()
    return s


def test_a_generator_made_in_the_loop_is_refused_at_its_making():
    error = refusal(lambda: derivo.grad(seeded_inside, loops="checkpoint")(1.0))
    assert_refused_at(error, seeded_inside, "np.random.default_rng(i)")
    assert "numpy.random.default_rng" in str(error)


def test_a_branching_helper_of_known_calls_is_differentiated():
    def f(x):
        return smooth_step(x, 0.3) * smooth_step(-x, 0.2)

    assert_close(derivo.grad(f)(0.7), numeric_grad(f, (0.7,)), rtol=1e-6)


# --- a gradient with respect to a float is a float ------------------------------------

def test_the_gradient_of_an_int_times_a_float_is_a_float():
    gradient = derivo.grad(lambda x, i=2: i * x)(1.0)
    assert type(gradient) is float and gradient == 2.0
    product = derivo.grad(lambda x, y: x * y)(1.0, 3)
    assert type(product) is float and product == 3.0
    scaled = derivo.grad(lambda x, n: x * n + x * (n * 2))(1.0, 3)
    assert type(scaled) is float and scaled == 9.0
