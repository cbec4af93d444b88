"""Functions as values: a def or lambda inside the differentiated function, a
function reached through a parameter, a global, a closure variable, a dict or
list item, a partial, a method of self, an object's __call__.  Each is
differentiated as the function that runs, checked against finite differences in
every mode, and a call that hands another function is transformed again."""

import dataclasses
import functools
import importlib.util
import math

import numpy as np
import pytest

import derivo
from derivo import DerivoError

from checks import assert_close


def fd(f, x, h=1e-6):
    """The central difference of the scalar ``f`` at a float or an array ``x``."""
    if np.ndim(x) == 0:
        return (f(x + h) - f(x - h)) / (2 * h)
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = h
        grad[i] = (f(x + step) - f(x - step)) / (2 * h)
    return grad


def assert_all_modes(f, x, *rest, loops=("stack",)):
    """grad, value_and_grad, vjp, jvp and hessian of ``f`` w.r.t. its first argument
    at the float ``x`` agree with finite differences."""
    expected = fd(lambda v: f(v, *rest), x)
    for strategy in loops:
        assert_close(derivo.grad(f, loops=strategy)(x, *rest), expected, rtol=1e-6)
    value, gradient = derivo.value_and_grad(f)(x, *rest)
    assert_close(value, f(x, *rest))
    assert_close(gradient, expected, rtol=1e-6)
    out, vjp_fn = derivo.vjp(f, x, *rest)
    assert_close(vjp_fn(2.0)[0], 2.0 * expected, rtol=1e-6)
    out, tangent = derivo.jvp(f, (x, *rest), (1.0, *(0.0 for _ in rest)))
    assert_close(tangent, expected, rtol=1e-6)
    second = fd(lambda v: derivo.grad(f)(v, *rest), x, h=1e-5)
    assert_close(derivo.hessian(f)(x, *rest), second, rtol=1e-5, atol=1e-7)


# --- a def or a lambda inside the function -------------------------------------

def with_a_nested_def(x, a):
    def nonlinearity(z):
        return math.tanh(z) * a + z * x
    return nonlinearity(x * a) + nonlinearity(1.0)


def with_a_lambda(x, a):
    act = lambda z: math.sin(z) * a  # noqa: E731
    return act(x) * act(x * x)


def with_a_def_in_a_loop(x, a):
    total = 0.0
    for i in range(4):
        def term(z):
            return z * math.cos(i * a + z)
        total = total + term(x)
    return total


def with_a_branchy_nested_def(x, a):
    def soft(z):
        if z > 0.0:
            return z * a
        return math.exp(z) - 1.0
    return soft(x) * soft(x - 1.0)


def with_nested_defs_calling_each_other(x, a):
    def inner(z):
        return z * a
    def outer(z):
        return math.exp(inner(z)) * x
    return outer(x)


@pytest.mark.parametrize("f", [with_a_nested_def, with_a_lambda, with_a_def_in_a_loop,
                               with_a_branchy_nested_def, with_nested_defs_calling_each_other])
@pytest.mark.parametrize("x", [0.4, 1.3])
def test_local_functions_are_differentiated_in_every_mode(f, x):
    assert_all_modes(f, x, 0.7)


def test_a_nested_function_reads_the_closure_variables_as_they_are_at_the_call():
    # a reads a, which changes after the def: the call sees the new value (as Python does)
    def late(x):
        a = 1.0
        scale = lambda z: z * a  # noqa: E731
        a = 3.0
        return scale(x) * x
    assert late(2.0) == 12.0
    assert_close(derivo.grad(late)(2.0), 12.0)  # 3 x^2 -> 6 x


def loop_with_an_activation(xs, w):
    act = lambda z: np.tanh(z * w)  # noqa: E731
    h = xs[0]
    for i in range(1, len(xs)):
        h = act(h) + xs[i]
    return h * h


@pytest.mark.parametrize("loops", ["stack", "checkpoint"])
def test_a_nested_function_used_in_a_loop_in_each_loop_strategy(loops):
    xs = [0.3, -0.2, 0.5, 0.1, 0.7]
    gradient = derivo.grad(loop_with_an_activation, wrt=1, loops=loops)(xs, 0.8)
    assert_close(gradient, fd(lambda w: loop_with_an_activation(xs, w), 0.8), rtol=1e-6)


def sorted_by_a_key(x, items):
    ordered = sorted(items, key=lambda pair: pair[1])
    return x * ordered[0][0] + x * x * ordered[-1][0]


def test_a_lambda_given_as_a_key_runs_on_the_data():
    items = [(2.0, 3), (5.0, 1), (7.0, 2)]
    assert_close(derivo.grad(sorted_by_a_key)(0.5, items), 5.0 + 2 * 0.5 * 2.0)


def mapped_with_a_closure(x, c):
    scale = lambda t: t * c  # noqa: E731
    return sum(map(scale, [1.0, 2.0])) * x


def test_a_local_function_used_as_a_value_holds_what_it_reads():
    assert_close(derivo.grad(mapped_with_a_closure)(0.5, 2.0), 6.0)


def the_local_function_renamed(x):
    f = lambda z: z * z  # noqa: E731
    f = lambda z: z * z * z  # noqa: E731
    return f(x)


def test_a_local_function_assigned_twice_is_refused_at_the_second():
    with pytest.raises(DerivoError) as info:
        derivo.grad(the_local_function_renamed)(0.5)
    assert "assigned again" in str(info.value)
    assert info.value.lineno == the_local_function_renamed.__code__.co_firstlineno + 2


# --- functions reached through values -------------------------------------------

def train(loss_fn, w):
    return loss_fn(w) * 2.0


def square(w):
    return w * w


def soft_abs(w):
    if w > 0.0:
        return w
    return -w * math.exp(w)


def test_a_function_given_as_an_argument_is_specialised_on_and_checked_each_call():
    gradient = derivo.grad(train, wrt=1)
    assert_close(gradient(square, 0.3), 1.2)
    code = [line for line in gradient.source.splitlines() if not line.strip().startswith("#")]
    assert not any("loss_fn(" in line for line in code)  # square is inlined
    assert_close(gradient(math.sin, 0.3), 2 * math.cos(0.3))
    assert_close(gradient(soft_abs, -0.4), fd(lambda w: train(soft_abs, w), -0.4))
    assert_close(gradient(square, 0.5), 2.0)  # back to the first: its code again


def test_a_function_argument_in_every_mode():
    expected = fd(lambda w: train(soft_abs, w), -0.4)
    value, gradient = derivo.value_and_grad(train, wrt=1)(soft_abs, -0.4)
    assert_close((value, gradient), (train(soft_abs, -0.4), expected))
    out, vjp_fn = derivo.vjp(train, square, 0.3)
    assert vjp_fn(1.0) == (None, pytest.approx(1.2))
    assert_close(derivo.tangent(train, wrt=1)(1.0, square, 0.3)[1], 1.2)
    assert_close(derivo.hessian(train, wrt=1)(square, 0.3), 4.0)
    assert_close(derivo.hessian(train, wrt=1)(math.sin, 0.3), -2 * math.sin(0.3))


ACTIVATIONS = {"tanh": np.tanh, "square": lambda z: z * z, "soft": lambda z: np.log1p(np.exp(z))}
LAYERS = [np.tanh, np.sin]
CHOSEN = "tanh"


def activated(x, kind="tanh"):
    return np.sum(ACTIVATIONS[kind](x))


def activated_by_an_alias(x, kind="tanh"):
    act = ACTIVATIONS[kind]
    return np.sum(act(x) * x)


def activated_by_a_global_name(x):
    return np.sum(ACTIVATIONS[CHOSEN](x))


def through_a_list(x):
    return np.sum(LAYERS[1](LAYERS[0](x)))


@pytest.mark.parametrize("kind", ["tanh", "square", "soft"])
@pytest.mark.parametrize("f", [activated, activated_by_an_alias])
def test_an_item_of_a_dict_of_functions_chosen_by_a_string_argument(f, kind):
    x = np.array([0.3, -0.5, 1.2])
    assert np.allclose(derivo.grad(f)(x, kind), fd(lambda v: f(v, kind), x), rtol=1e-6)
    assert np.allclose(derivo.grad(f)(x, kind=kind), fd(lambda v: f(v, kind), x), rtol=1e-6)


def test_an_item_chosen_by_a_global_name_follows_the_name():
    global CHOSEN
    x = np.array([0.3, -0.5])
    gradient = derivo.grad(activated_by_a_global_name)
    try:
        assert np.allclose(gradient(x), 1 - np.tanh(x) ** 2)
        CHOSEN = "square"
        assert np.allclose(gradient(x), 2 * x)
    finally:
        CHOSEN = "tanh"
    assert np.allclose(gradient(x), 1 - np.tanh(x) ** 2)


def test_a_changed_item_of_the_dict_transforms_again():
    x = np.array([0.3, -0.5])
    gradient = derivo.grad(activated)
    assert np.allclose(gradient(x, "tanh"), 1 - np.tanh(x) ** 2)
    ACTIVATIONS["tanh"], saved = np.sin, ACTIVATIONS["tanh"]
    try:
        assert np.allclose(gradient(x, "tanh"), np.cos(x))
    finally:
        ACTIVATIONS["tanh"] = saved


def test_an_item_of_a_list_of_functions():
    x = np.array([0.3, -0.5])
    assert np.allclose(derivo.grad(through_a_list)(x), fd(through_a_list, x))


CUBE = lambda z: z * z * z  # noqa: E731


def through_a_global_lambda(x):
    return CUBE(x) + x


def through_a_closure(power):
    act = lambda z: z ** power  # noqa: E731

    def loss(x):
        return act(x) * 2.0
    return loss


def test_a_global_lambda_and_a_closure_variable_holding_one():
    assert_all_modes(through_a_global_lambda, 0.7)
    assert_close(derivo.grad(through_a_closure(3))(0.5), 6 * 0.25)
    assert_close(derivo.grad(through_a_closure(4))(0.5), 8 * 0.125)


def scaled(z, c, offset=0.0):
    return z * c + offset * z * z


SCALED = functools.partial(scaled, c=3.0, offset=1.0)


def through_a_partial(x):
    return SCALED(x) * x


def test_a_partial_of_a_user_function_as_a_callee():
    assert_all_modes(through_a_partial, 0.7)


def test_a_module_given_as_an_argument():
    def norm_of(x, xp=np):
        return xp.linalg.norm(x)
    x = np.array([0.3, -0.5, 1.2])
    assert np.allclose(derivo.grad(norm_of)(x), x / np.linalg.norm(x))


# --- methods and objects -----------------------------------------------------------

class Model:
    def __init__(self, scale):
        self.scale = scale

    def predict(self, x):
        return np.tanh(x * self.scale)

    def loss(self, w):
        return np.sum(self.predict(w) ** 2) + self.penalty(w)

    def penalty(self, w):
        return self.weight(self.scale) * np.sum(w * w)

    @classmethod
    def weight(cls, scale):
        return 0.1 * scale

    @staticmethod
    def cube(x):
        return x * x * x

    def __call__(self, x):
        return self.predict(x) * self.scale


class Linear(Model):
    def predict(self, x):
        return x * self.scale


def test_a_method_calling_methods_of_self_given_bound():
    w = np.array([0.2, -0.4])
    model = Model(2.0)
    assert np.allclose(derivo.grad(model.loss)(w), fd(model.loss, w), rtol=1e-6)
    value, gradient = derivo.value_and_grad(model.loss)(w)
    assert np.isclose(value, model.loss(w))


def test_a_method_given_unbound_follows_the_class_of_self():
    w = np.array([0.2, -0.4])
    gradient = derivo.grad(Model.loss, wrt=1)
    for model in (Model(2.0), Model(3.0), Linear(2.0), Model(0.5)):
        assert np.allclose(gradient(model, w), fd(model.loss, w), rtol=1e-6)


def static_and_class(x, model):
    return model.cube(x) + model.weight(x) * x + Model.cube(x)


def calls_an_object(x, model):
    return np.sum(model(x))


def test_static_and_class_methods_and_call_of_an_object():
    model = Model(2.0)
    assert_close(derivo.grad(static_and_class)(0.5, model), 6 * 0.25 + 0.2 * 0.5)
    x = np.array([0.2, -0.4])
    assert np.allclose(derivo.grad(calls_an_object)(x, model),
                       fd(lambda v: calls_an_object(v, model), x))
    assert np.allclose(derivo.grad(calls_an_object)(x, Linear(3.0)), 9.0)


class Layer:
    def __init__(self, act):
        self.act = act  # a function held by the object, not its class

    def __call__(self, x):
        return self.act(x) * 2.0


def through_a_layer(x, layer):
    return np.sum(layer(x))


def test_a_function_an_object_holds_is_read_from_that_object_each_call():
    x = np.array([0.2, -0.4])
    gradient = derivo.grad(through_a_layer)
    assert np.allclose(gradient(x, Layer(np.tanh)), 2 * (1 - np.tanh(x) ** 2))
    assert np.allclose(gradient(x, Layer(np.sin)), 2 * np.cos(x))
    layer = Layer(np.tanh)
    assert np.allclose(gradient(x, layer), 2 * (1 - np.tanh(x) ** 2))
    layer.act = np.sin
    assert np.allclose(gradient(x, layer), 2 * np.cos(x))


def test_an_unknown_function_given_where_a_differentiated_value_flows_is_refused():
    import operator
    with pytest.raises(DerivoError) as info:
        derivo.grad(train, wrt=1)(operator.neg, 0.3)
    assert "'loss_fn'" in str(info.value)
    assert info.value.lineno == train.__code__.co_firstlineno + 1


def returns_a_closure(x):
    def make(c):
        def scaled_by(z):
            return z * c
        return scaled_by
    scale = make(x)
    return scale(x)


def test_a_local_function_returned_with_a_differentiated_value_is_differentiated():
    assert_close(derivo.grad(returns_a_closure)(0.5), 1.0)  # d(x * x)/dx at 0.5


def through_a_container_argument(x, functions, name):
    return functions[name](x) * functions["scale"](x)


def test_a_dict_of_functions_given_as_an_argument():
    gradient = derivo.grad(through_a_container_argument)
    table = {"sin": math.sin, "square": square, "scale": soft_abs}
    for name in ("sin", "square"):
        expected = fd(lambda v: through_a_container_argument(v, table, name), 0.3)
        assert_close(gradient(0.3, table, name), expected)
    table["scale"] = math.exp  # an item changed: transformed again
    assert_close(gradient(0.3, table, "sin"), math.exp(0.3) * (math.cos(0.3) + math.sin(0.3)))


def _weighted(w, d):
    return np.sum(w * d) ** 2


partial = functools.partial


def mapped_partial_by_name(w, data):
    # autograd's hmm_em.py: sum(map(partial(log_partition_function, params), data))
    return sum(map(partial(_weighted, w), data))


DATA = [np.array([1.0, 2.0, -1.0]), np.array([0.5, 0.0, 3.0])]


def test_a_mapped_partial_of_the_differentiated_argument_is_differentiated():
    w = np.array([0.3, -0.2, 0.7])
    expected = sum(2 * np.sum(w * d) * d for d in DATA)
    np.testing.assert_allclose(derivo.grad(mapped_partial_by_name)(w, DATA), expected)


def rebound_before_the_partial(w, data):
    w = w * 2.0
    return sum(map(partial(_weighted, w), data))


def test_a_mapped_partial_of_a_name_assigned_in_the_function_is_refused():
    # read late by a generator, an assigned name could differ from what the partial took
    with pytest.raises(DerivoError, match="partial"):
        derivo.grad(rebound_before_the_partial)(np.ones(3), DATA)


def lambda_in_a_list(x, y):
    fns = [lambda z: z * x]
    return fns[0](2.0) + y


def def_in_a_dict(x, y):
    def scale(z):
        return z * x
    table = {"scale": scale}
    return table["scale"](2.0) + y


def lambdas_made_in_a_loop(x, y):
    fns = [lambda z: z * k for k in (x, y)]   # both read k as the loop left it: y
    return fns[0](1.0) + fns[1](2.0)


@pytest.mark.parametrize("f", [lambda_in_a_list, def_in_a_dict, lambdas_made_in_a_loop])
def test_a_local_function_reading_a_differentiated_value_held_in_a_container_is_refused(f):
    # its derivative went nowhere: d/dx was 0.0, not 2.0
    with pytest.raises(DerivoError, match="does not follow a function holding"):
        derivo.grad(f, wrt=(0, 1))(0.7, -0.4)
    with pytest.raises(DerivoError, match="does not follow a function holding"):
        derivo.jvp(f, (0.7, -0.4), (1.0, None))


def _softplus(z):
    return np.log1p(np.exp(z))


def _layer(x, w, nonlinearity=np.tanh, *, output=_softplus):
    return output(nonlinearity(w * x))


def layer_by_defaults(w, x):
    # autograd's neural_net_regression.py: nn_predict(params, inputs, nonlinearity=np.tanh)
    return np.sum(_layer(x, w))


def layer_given_sin(w, x):
    return np.sum(_layer(x, w, np.sin))


def test_a_function_left_at_its_default_is_followed():
    x, w = np.array([0.5, -1.0, 2.0]), 0.7
    sigmoid = lambda z: 1.0 / (1.0 + np.exp(-z))
    expected = np.sum(sigmoid(np.tanh(w * x)) * (1 - np.tanh(w * x) ** 2) * x)
    assert_close(derivo.grad(layer_by_defaults)(w, x), expected)
    expected_sin = np.sum(sigmoid(np.sin(w * x)) * np.cos(w * x) * x)
    assert_close(derivo.grad(layer_given_sin)(w, x), expected_sin)


def adds_through_nonlocal(x, y):
    total = 0.0

    def add(z):
        nonlocal total
        total += z
    add(x)
    add(y * 2.0)
    return total


def test_a_local_function_assigning_through_nonlocal_is_refused_at_its_line():
    # lifted to module level, it did not compile (SyntaxError: no binding for nonlocal)
    for run in (lambda: derivo.grad(adds_through_nonlocal)(0.7, -0.4),
                lambda: derivo.jvp(adds_through_nonlocal, (0.7, -0.4), (1.0, 0.0))):
        with pytest.raises(DerivoError, match=r"test_functions_as_values\.py:\d+:\d+: "
                                              r"cannot differentiate 'nonlocal'"):
            run()


# --- a partial made inside the function ----------------------------------------

def partial_of_a_lambda(x, a):
    h = functools.partial(lambda u, v: u * v, a)
    return h(x) * x


def partial_of_a_def(x, a):
    b = a * 2.0
    h = functools.partial(scaled, b, offset=x)
    b = 100.0  # (the partial took b before)
    return h(x) + h(x, offset=1.0)


def partial_of_a_local_def_and_of_numpy(x, a):
    def inner(u, v):
        return u * np.sin(v) * x
    h = functools.partial(inner, a)
    k = functools.partial(np.multiply, x)
    return h(x) + k(x) * a


def partial_of_a_partial(x, a):
    h = functools.partial(functools.partial(scaled, offset=a), c=3.0)
    return h(x) * x


A_MODEL = Model(0.5)


def partial_of_a_method(x, a):
    h = functools.partial(A_MODEL.predict, x=a)  # (a keyword bound)
    k = functools.partial(A_MODEL.loss)
    return h() * x + k(x)


@pytest.mark.parametrize("f", [partial_of_a_lambda, partial_of_a_def,
                               partial_of_a_local_def_and_of_numpy, partial_of_a_partial,
                               partial_of_a_method])
def test_a_partial_made_in_the_function_binds_its_arguments_at_the_call(f):
    assert_all_modes(f, 0.7, 2.0)


def test_a_partial_made_in_the_function_of_the_issue():
    assert_close(derivo.grad(partial_of_a_lambda)(3.0, 2.0), 12.0)


# --- a method of each item of a list of objects ------------------------------------

class Dense:
    def __init__(self, W):
        self.W = W

    def forward(self, x):
        return np.tanh(self.W @ x)


class Scale:
    def __init__(self, s):
        self.s = s

    def forward(self, x):
        y = x * self.s
        for _ in range(2):  # (not straight-line: called through its VJP)
            y = y * 1.1
        return y

    def __call__(self, x):
        return x * self.s + np.sin(x)


OBJECTS = [Dense(np.eye(2) * 0.5), Scale(0.8), Dense(np.ones((2, 2)) * 0.3)]
SCALES = (Scale(2.0), Scale(-0.5))


def through_layers(x):
    for layer in OBJECTS:
        x = layer.forward(x)
    return np.sum(x)


def through_enumerated_layers(x):
    for i, layer in enumerate(OBJECTS):
        x = layer.forward(x) * (i + 1.0)
    return np.sum(x)


def through_called_layers(x):
    for layer, w in zip(SCALES, [1.0, 2.0]):
        x = layer(x) * w
    return np.sum(x)


@pytest.mark.parametrize("f", [through_layers, through_enumerated_layers,
                               through_called_layers])
def test_a_method_of_a_loop_over_a_list_of_objects_is_called_by_class(f):
    x = np.array([1.0, 2.0])
    expected = fd(f, x)
    np.testing.assert_allclose(derivo.grad(f)(x), expected, rtol=1e-6)
    value, gradient = derivo.value_and_grad(f)(x)
    assert_close(value, f(x))
    np.testing.assert_allclose(gradient, expected, rtol=1e-6)
    assert_close(derivo.jvp(f, (x,), (np.array([1.0, 0.0]),))[1], expected[0], rtol=1e-6)


def test_a_list_of_objects_changed_between_calls_transforms_again():
    global OBJECTS
    x = np.array([1.0, 2.0])
    gradient = derivo.grad(through_layers)
    np.testing.assert_allclose(gradient(x), fd(through_layers, x), rtol=1e-6)
    saved = OBJECTS
    try:
        OBJECTS[1] = Dense(np.array([[1.0, -1.0], [0.5, 2.0]]))  # a class fewer
        np.testing.assert_allclose(gradient(x), fd(through_layers, x), rtol=1e-6)
        OBJECTS = [Dense(np.eye(2)), Scale(0.5), Dense(np.eye(2) * 0.3)]  # a class more
        np.testing.assert_allclose(gradient(x), fd(through_layers, x), rtol=1e-6)
        OBJECTS.append(Scale(2.0))  # one more of a class it holds
        np.testing.assert_allclose(gradient(x), fd(through_layers, x), rtol=1e-6)
        OBJECTS = [Scale(2.0)]
        gradient(x)
        OBJECTS.append(Dense(np.eye(2)))  # in place, a class it did not hold
        np.testing.assert_allclose(gradient(x), fd(through_layers, x), rtol=1e-6)
    finally:
        OBJECTS = saved


def test_a_saved_derivative_refuses_an_item_its_list_did_not_hold(tmp_path):
    from examples import layer_objects
    x = np.array([0.5, -1.0, 2.0, 0.1])
    path = layer_objects.saliency.save(tmp_path / "saliency.py")
    spec = importlib.util.spec_from_file_location("saved_saliency", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    np.testing.assert_allclose(module.loss_grad(x, 3.0), layer_objects.saliency(x, 3.0))
    layers = layer_objects.MODEL.layers
    layers.append(layer_objects.Residual(np.eye(4)))  # a saved module checks nothing first
    try:
        with pytest.raises(DerivoError, match=r"layer holds an object self\.layers did not "
                                              r"hold .* make the derivative again"):
            module.loss_grad(x, 3.0)
    finally:
        layers.pop()


ACTS = {"tanh": np.tanh, "sin": np.sin}


class Activated:
    """A layer whose method calls what the object says: the call is made per item."""

    def __init__(self, W, kind):
        self.W, self.kind = W, kind

    def forward(self, x):
        return self.act(self.W @ x)

    def act(self, z):
        return ACTS[self.kind](z)


ACTIVATED = [Activated(np.eye(2) * 0.5, "tanh"), Scale(2.0),
             Activated(np.ones((2, 2)) * 0.3, "sin")]


def through_activated_layers(x):
    for layer in ACTIVATED:
        x = layer.forward(x)
    return np.sum(x)


def through_two_items_of_one_class(x):
    return np.sum(ACTIVATED[2].forward(ACTIVATED[0].forward(x)))


@pytest.mark.parametrize("f", [through_activated_layers, through_two_items_of_one_class])
def test_methods_calling_what_each_object_says_follow_each_object(f):
    x = np.array([1.0, 2.0])
    gradient = derivo.grad(f)
    np.testing.assert_allclose(gradient(x), fd(f, x), rtol=1e-6)
    assert_close(derivo.jvp(f, (x,), (np.array([0.0, 1.0]),))[1], fd(f, x)[1], rtol=1e-6)
    saved = ACTIVATED[2].kind
    try:
        ACTIVATED[2].kind = "tanh"  # (the entry checks the key each call)
        np.testing.assert_allclose(gradient(x), fd(f, x), rtol=1e-6)
    finally:
        ACTIVATED[2].kind = saved


def through_layers_made_here(x):
    layers = [Dense(np.eye(2))]
    for layer in layers:
        x = layer.forward(x)
    return np.sum(x)


def partial_assigned_twice(x, a):
    h = functools.partial(scaled, a)
    if a > 0:
        h = functools.partial(scaled, 2.0 * a)
    return h(x)


@pytest.mark.parametrize("f, args, column, instead", [
    (through_layers_made_here, (np.array([1.0, 2.0]),), 12,
     r"call the class's function, Cls.forward\(layer, ...\), or loop over a list held"),
    (partial_assigned_twice, (0.7, 2.0), 11, "assign the partial once and only call it"),
])
def test_a_method_or_a_partial_derivo_cannot_follow_is_refused_at_its_call(f, args, column,
                                                                          instead):
    line = f.__code__.co_firstlineno + (3 if f is through_layers_made_here else 4)
    where = r"test_functions_as_values\.py:{}:{}: ".format(line, column)
    tangents = (np.ones_like(args[0]),) + (None,) * (len(args) - 1)
    for run in (lambda: derivo.grad(f)(*args), lambda: derivo.jvp(f, args, tangents)):
        with pytest.raises(DerivoError, match=where + ".*" + instead):
            run()


def through_layers_given(x, layers):
    for layer in layers:
        x = layer.forward(x)
    return np.sum(x)


class Network:
    """A model holding its layers, called from the loss (an MLP's shape)."""

    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x

    def loss(self, x):
        return np.sum(self(x) ** 2)


NETWORK = Network([Activated(np.eye(2) * 0.5, "tanh"), Dense(np.ones((2, 2)) * 0.3)])


def through_a_network(x):
    return np.sum(NETWORK(x) ** 2) + NETWORK.loss(x)


def test_a_list_of_objects_given_as_an_argument_or_held_by_self():
    x = np.array([1.0, 2.0])
    for f, rest in ((through_layers_given, (OBJECTS,)), (through_layers_given, (ACTIVATED,)),
                    (through_a_network, ()), (NETWORK.loss, ())):
        expected = fd(lambda v: f(v, *rest), x)
        np.testing.assert_allclose(derivo.grad(f)(x, *rest), expected, rtol=1e-6)
        tangents = (np.array([1.0, 0.0]),) + (None,) * len(rest)
        assert_close(derivo.jvp(f, (x, *rest), tangents)[1], expected[0], rtol=1e-6)
    gradient = derivo.grad(through_layers_given)
    for layers in ([Scale(0.5), Dense(np.eye(2))], OBJECTS):  # another list: made for it
        expected = fd(lambda v: through_layers_given(v, layers), x)
        np.testing.assert_allclose(gradient(x, layers), expected, rtol=1e-6)


@pytest.mark.parametrize("f", [through_layers, through_activated_layers, through_a_network])
def test_the_hessian_through_a_list_of_objects(f):
    # its VJPs run their bodies again: the calls of the items' methods pass the rerun check
    x = np.array([1.0, 2.0])
    expected = np.array([fd(lambda v: derivo.grad(f)(v)[i], x, h=1e-5) for i in range(2)])
    np.testing.assert_allclose(derivo.hessian(f)(x), expected, rtol=1e-5, atol=1e-7)


def test_a_checkpointed_loop_over_a_list_of_objects_is_refused_for_the_stack():
    line = through_layers.__code__.co_firstlineno + 2
    with pytest.raises(DerivoError, match=r"test_functions_as_values\.py:{}:12: .* in a "
                                          r"checkpointed loop: .* loops=\"stack\"".format(line)):
        derivo.grad(through_layers, loops="checkpoint")(np.array([1.0, 2.0]))


@dataclasses.dataclass
class Weights:
    W: np.ndarray

    def forward(self, x):
        return np.tanh(self.W @ x)


def through_differentiated_layers(layers, x):
    for layer in layers:
        x = layer.forward(x)
    return np.sum(x)


def through_differentiated_layers_by_class(layers, x):
    for layer in layers:
        x = Weights.forward(layer, x)
    return np.sum(x)


def test_the_method_of_a_differentiated_item_is_refused_for_the_class_s_function():
    layers, x = [Weights(np.eye(2) * 0.5), Weights(np.ones((2, 2)) * 0.3)], np.array([1.0, 2.0])
    line = through_differentiated_layers.__code__.co_firstlineno + 2
    with pytest.raises(DerivoError, match=r"test_functions_as_values\.py:{}:12: .* of one it "
                                          r"differentiates.* Cls\.forward\(layer".format(line)):
        derivo.grad(through_differentiated_layers)(layers, x)
    gradient = derivo.grad(through_differentiated_layers_by_class)(layers, x)
    for index, layer in enumerate(layers):
        def of_w(w):
            changed = list(layers)
            changed[index] = Weights(w)
            return through_differentiated_layers_by_class(changed, x)
        np.testing.assert_allclose(gradient[index].W, fd(of_w, layer.W), rtol=1e-6)


class Doubling:
    @staticmethod
    def forward(x):
        return x * 2.0


DOUBLINGS = [Doubling(), Doubling()]


def through_static_methods(x):
    for layer in DOUBLINGS:
        x = layer.forward(x)
    return np.sum(x)


def test_a_static_method_of_a_loop_s_items_is_refused_not_given_self():
    with pytest.raises(DerivoError, match="Cls.forward"):
        derivo.grad(through_static_methods)(np.array([1.0, 2.0]))


def test_a_list_of_objects_called_per_item_grown_transforms_again():
    global ACTIVATED
    x = np.array([1.0, 2.0])
    gradient = derivo.grad(through_activated_layers)
    np.testing.assert_allclose(gradient(x), fd(through_activated_layers, x), rtol=1e-6)
    saved = ACTIVATED
    try:
        ACTIVATED = ACTIVATED + [Activated(np.eye(2), "sin")]  # (the entry checks the length)
        np.testing.assert_allclose(gradient(x), fd(through_activated_layers, x), rtol=1e-6)
        ACTIVATED.append(Activated(np.eye(2) * 2.0, "tanh"))   # in place too
        np.testing.assert_allclose(gradient(x), fd(through_activated_layers, x), rtol=1e-6)
    finally:
        ACTIVATED = saved


ISSUE_LAYERS = [Dense(np.eye(2) * 0.5), Dense(np.ones((2, 2)))]


def issue_loss(x):
    for layer in ISSUE_LAYERS:  # the convnet / MLP shape of real programs (issue 22)
        x = layer.forward(x)
    return np.sum(x)


def test_the_loop_over_layers_of_the_issue():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(derivo.grad(issue_loss)(x), fd(issue_loss, x), rtol=1e-5)


def keys_in_a_generator(x):
    return sum(np.sum(ACTS[kind](x)) for kind in ("tanh", "sin"))


KINDS = ["tanh", "sin"]


def keys_of_a_global_in_a_generator(x):
    # this raised NameError: the call by a key was moved out of the generator
    return sum(np.sum(ACTS[kind](x)) for kind in KINDS)


def items_in_a_comprehension(x):
    outs = [layer(x) for layer in SCALES]
    return np.sum(outs[0] * outs[1]) + sum(np.sum(layer.forward(x)) for layer in OBJECTS)


@pytest.mark.parametrize("f", [keys_in_a_generator, keys_of_a_global_in_a_generator,
                               items_in_a_comprehension])
def test_calls_by_key_or_on_items_in_a_comprehension(f):
    x = np.array([0.3, -0.2])
    expected = fd(f, x)
    np.testing.assert_allclose(derivo.grad(f)(x), expected, rtol=1e-6)
    assert_close(derivo.jvp(f, (x,), (np.array([1.0, 0.0]),))[1], expected[0], rtol=1e-6)


# --- a loop over a list of functions: each call is a branch over the items ---------

def _square(t):
    return t * t


BASIS = [_square, np.sin, lambda t: t ** 3]


def basis_sum(x):
    return sum(f(x) for f in BASIS)


def basis_loop(x, w):
    total = 0.0
    for f, weight in zip(BASIS, [w, 1.0, w * w]):
        total = total + weight * f(x)
    return total


def test_a_loop_over_a_list_of_functions_calls_each():
    x = 0.7
    assert derivo.grad(basis_sum)(x) == pytest.approx(2 * x + np.cos(x) + 3 * x * x)
    w = 1.5
    _, tangent = derivo.jvp(basis_loop, (x, w), (1.0, 0.0))
    assert tangent == pytest.approx(w * 2 * x + np.cos(x) + w * w * 3 * x * x)
    h = 1e-6
    assert derivo.grad(basis_loop, wrt=1)(x, w) == pytest.approx(
        (basis_loop(x, w + h) - basis_loop(x, w - h)) / (2 * h), rel=1e-6)
    assert derivo.hessian(basis_sum)(x) == pytest.approx(2 - np.sin(x) + 6 * x)


def test_a_list_of_functions_changed_between_calls_is_read_again():
    kept = list(BASIS)
    try:
        grad = derivo.grad(basis_sum)
        assert grad(0.5) == pytest.approx(1.0 + np.cos(0.5) + 0.75)
        BASIS[1] = np.exp                     # an item replaced
        assert grad(0.5) == pytest.approx(1.0 + np.exp(0.5) + 0.75)
        BASIS.append(np.tanh)                 # and one more
        assert grad(0.5) == pytest.approx(1.0 + np.exp(0.5) + 0.75 + 1 / np.cosh(0.5) ** 2)
    finally:
        BASIS[:] = kept


def test_a_function_that_draws_in_a_checkpointed_loop_over_functions_is_refused():
    rng = np.random.default_rng(0)
    noisy = [np.sin, lambda t: t + rng.normal()]

    def rolled(x):
        for _ in range(3):
            for f in noisy:
                x = f(x)
        return x

    with pytest.raises(derivo.DerivoError, match="random"):
        derivo.grad(rolled, loops="checkpoint")(0.3)


# --- a local name given one of several functions: a branch over them ---------------

def _relu(z):
    return np.maximum(z, 0.0)


def chosen_by_a_flag(x, use_tanh):
    act = np.tanh if use_tanh else _relu
    return np.sum(act(x) ** 2)


def chosen_in_branches(x, w):
    if w > 0:
        act = np.sin
    else:
        act = np.cos
    return act(x * w) + act(x)


def chosen_among_lambdas(x, w):
    act = (lambda z: np.tanh(z)) if w > 0 else (lambda z: z * z)
    return act(x * w)


@pytest.mark.parametrize("use_tanh", [True, False])
def test_a_function_chosen_by_a_flag_is_called_by_a_branch(use_tanh):
    x = np.array([0.5, -0.2, 1.3])
    expected = 2 * np.tanh(x) / np.cosh(x) ** 2 if use_tanh else 2 * np.maximum(x, 0.0)
    np.testing.assert_allclose(derivo.grad(chosen_by_a_flag)(x, use_tanh), expected)
    _, tangent = derivo.jvp(chosen_by_a_flag, (x, use_tanh), (np.ones(3), None))
    assert tangent == pytest.approx(np.sum(expected))


@pytest.mark.parametrize("w", [0.8, -0.6])
def test_a_function_chosen_in_branches_is_called_by_a_branch(w):
    x, h = 0.7, 1e-6
    for wrt, step in ((0, (h, 0.0)), (1, (0.0, h))):
        central = (chosen_in_branches(x + step[0], w + step[1]) -
                   chosen_in_branches(x - step[0], w - step[1])) / (2 * h)
        assert derivo.grad(chosen_in_branches, wrt=wrt)(x, w) == pytest.approx(central, rel=1e-6)
    assert derivo.hessian(chosen_in_branches)(x, w) == pytest.approx(
        -w * w * np.sin(x * w) - np.sin(x) if w > 0 else -w * w * np.cos(x * w) - np.cos(x),
        rel=1e-6)
    expected = w * (1 - np.tanh(x * w) ** 2) if w > 0 else 2 * x * w * w
    assert derivo.grad(chosen_among_lambdas)(x, w) == pytest.approx(expected)


def test_a_name_given_a_function_derivo_cannot_see_is_refused_at_the_call():
    def through_a_parameter(x, fns):
        act = fns[0] if x > 0 else np.tanh
        return act(x)

    with pytest.raises(derivo.DerivoError, match="through_a_parameter|act"):
        derivo.grad(through_a_parameter)(0.5, [np.sin])


# --- closures one factory makes are different functions -----------------------------

def _wave(k):
    def phi(x):
        return k * np.sin(k * x)
    return phi


WAVES = [_wave(1.0), _wave(2.0), _wave(3.0)]
LOW, HIGH = _wave(1.0), _wave(2.0)


def waves_summed(x):
    total = 0.0
    for phi in WAVES:
        total = total + phi(x)
    return total


def low_and_high(x):
    return LOW(x) + HIGH(x)


def _waves_slope(ks, x):
    return sum(k * k * np.cos(k * x) for k in ks)


def test_closures_of_one_factory_are_differentiated_each_with_its_own_cells():
    x = 0.7
    assert derivo.grad(low_and_high)(x) == pytest.approx(_waves_slope([1.0, 2.0], x))
    assert derivo.grad(waves_summed)(x) == pytest.approx(_waves_slope([1.0, 2.0, 3.0], x))
    _, tangent = derivo.jvp(waves_summed, (x,), (1.0,))
    assert tangent == pytest.approx(_waves_slope([1.0, 2.0, 3.0], x))
    assert derivo.hessian(waves_summed)(x) == pytest.approx(
        -sum(k ** 3 * np.sin(k * x) for k in (1.0, 2.0, 3.0)))
    kept = list(WAVES)
    try:
        grad = derivo.grad(waves_summed)
        grad(x)
        WAVES[1] = _wave(10.0)  # another closure of the same code
        assert grad(x) == pytest.approx(_waves_slope([1.0, 10.0, 3.0], x))
    finally:
        WAVES[:] = kept
