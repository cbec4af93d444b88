"""Containers of parameters (pytrees) as arguments, results and intermediate
values: dicts, lists, tuples, NamedTuples, dataclasses and registered classes,
nested in any mix, differentiated as a whole in every mode, against central
differences.  A gradient has the structure and the types of its argument;
leaves that are not floats get None."""

import dataclasses
import itertools
from typing import NamedTuple

import numpy as np
import pytest

import derivo

H = 1e-6


# --- a central difference over the float leaves of a tree, written independently ---

def _float_leaf(value):
    return isinstance(value, float) or isinstance(value, np.ndarray) and value.dtype.kind == "f"


def _with_leaf(tree, path, value):
    """``tree`` with the leaf at ``path`` (keys, positions, field names) replaced."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        return {**tree, head: _with_leaf(tree[head], rest, value)}
    if dataclasses.is_dataclass(tree):
        return dataclasses.replace(tree, **{head: _with_leaf(getattr(tree, head), rest, value)})
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return tree._replace(**{tree._fields[head]: _with_leaf(tree[head], rest, value)})
    items = list(tree)
    items[head] = _with_leaf(items[head], rest, value)
    return type(tree)(items)


def _items(tree):
    if isinstance(tree, dict):
        return list(tree.items())
    if dataclasses.is_dataclass(tree):
        return [(f.name, getattr(tree, f.name)) for f in dataclasses.fields(tree)]
    if isinstance(tree, (list, tuple)):
        return list(enumerate(tree))
    return None


def _numeric(f, tree, path, leaf):
    if _items(leaf) is not None:
        parts = [(key, _numeric(f, tree, path + (key,), item)) for key, item in _items(leaf)]
        if isinstance(leaf, dict):
            return dict(parts)
        if dataclasses.is_dataclass(leaf):
            return dataclasses.replace(leaf, **dict(parts))
        values = [v for _, v in parts]
        return type(leaf)(*values) if hasattr(leaf, "_fields") else type(leaf)(values)
    if not _float_leaf(leaf):
        return None
    if isinstance(leaf, float):
        step = H * max(1.0, abs(leaf))
        return float(f(_with_leaf(tree, path, leaf + step)) -
                     f(_with_leaf(tree, path, leaf - step))) / (2 * step)
    gradient = np.zeros(leaf.shape)
    for index in np.ndindex(leaf.shape):
        up, down = leaf.copy(), leaf.copy()
        up[index] += H
        down[index] -= H
        gradient[index] = (f(_with_leaf(tree, path, up)) -
                           f(_with_leaf(tree, path, down))) / (2 * H)
    return gradient


def numeric_tree_grad(f, tree):
    return _numeric(f, tree, (), tree)


def assert_same_tree(actual, expected, rtol=1e-5, atol=1e-7):
    assert type(actual) is type(expected), (actual, expected)
    if expected is None:
        return
    items = _items(expected)
    if items is None:
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)
        assert np.shape(actual) == np.shape(expected)
        return
    actual_items = _items(actual)
    assert [k for k, _ in actual_items] == [k for k, _ in items], (actual, expected)
    for (_, a), (_, e) in zip(actual_items, items):
        assert_same_tree(a, e, rtol, atol)


def check_modes(f, tree, *rest):
    """grad, value_and_grad, vjp and jvp of ``f`` in its first argument, ``tree``,
    against central differences."""
    expected = numeric_tree_grad(lambda t: f(t, *rest), tree)
    assert_same_tree(derivo.grad(f)(tree, *rest), expected)
    value, gradient = derivo.value_and_grad(f)(tree, *rest)
    assert value == pytest.approx(f(tree, *rest))
    assert_same_tree(gradient, expected)
    out, vjp_fn = derivo.vjp(f, tree, *rest)
    assert out == pytest.approx(f(tree, *rest))
    assert_same_tree(vjp_fn(2.0)[0], _scaled(expected, 2.0))
    direction = _direction(tree)
    _, slope = derivo.jvp(f, (tree, *rest), (direction, *(None for _ in rest)))
    assert slope == pytest.approx(_dot(expected, direction), rel=1e-5, abs=1e-7)
    return expected


def _scaled(tree, factor):
    items = _items(tree)
    if items is None:
        return None if tree is None else tree * factor
    parts = [(k, _scaled(v, factor)) for k, v in items]
    if isinstance(tree, dict):
        return dict(parts)
    if dataclasses.is_dataclass(tree):
        return dataclasses.replace(tree, **dict(parts))
    values = [v for _, v in parts]
    return type(tree)(*values) if hasattr(tree, "_fields") else type(tree)(values)


def _direction(tree, seed=[0]):
    """A tangent of ``tree``'s structure: fixed pseudo-random floats, None for the
    leaves that are not floats."""
    items = _items(tree)
    if items is None:
        if not _float_leaf(tree):
            return None
        seed[0] += 1
        values = np.cos(np.arange(np.size(tree)) + seed[0])
        return float(values[0]) if isinstance(tree, float) else values.reshape(np.shape(tree))
    parts = [(k, _direction(v)) for k, v in items]
    if isinstance(tree, dict):
        return dict(parts)
    if dataclasses.is_dataclass(tree):
        return dataclasses.replace(tree, **dict(parts))
    values = [v for _, v in parts]
    return type(tree)(*values) if hasattr(tree, "_fields") else type(tree)(values)


def _dot(gradient, direction):
    items = _items(gradient)
    if items is None:
        return 0.0 if gradient is None else float(np.sum(gradient * direction))
    return sum(_dot(g, d) for (_, g), (_, d) in zip(items, _items(direction)))


# --- dicts ---------------------------------------------------------------------------

def mlp_loss(params, X, y):
    hidden = np.tanh(X @ params["W1"] + params["b1"])
    out = hidden @ params["W2"] + params["b2"]
    return np.mean((out - y) ** 2)


RNG = np.random.default_rng(0)
X = RNG.normal(size=(5, 3))
Y = RNG.normal(size=5)
PARAMS = {"W1": RNG.normal(size=(3, 4)), "b1": RNG.normal(size=4),
          "W2": RNG.normal(size=4), "b2": 0.3}


def test_a_dict_of_arrays_in_every_mode():
    gradient = check_modes(mlp_loss, PARAMS, X, Y)
    assert list(derivo.grad(mlp_loss)(PARAMS, X, Y)) == ["W1", "b1", "W2", "b2"]
    assert isinstance(gradient["b2"], float)


def loop_over_keys(params):
    total = 0.0
    for key in params:
        total = total + np.sum(params[key] ** 2) * 0.5
    return total


def loop_over_items(params):
    total = 0.0
    for name, value in params.items():
        total = total + np.sum(np.sin(value))
    return total


def sum_of_values(params):
    return sum(np.sum(value * value) for value in params.values())


@pytest.mark.parametrize("f", [loop_over_keys, loop_over_items, sum_of_values])
def test_loops_over_a_dict(f):
    check_modes(f, {"a": np.array([0.5, -1.0]), "b": np.array([[2.0, 0.25]]), "c": 0.7})


def iterated_map(params, x):
    for _ in range(6):
        x = np.tanh(params["w"] * x + params["b"]) * params["gain"]
    return np.sum(x)


@pytest.mark.parametrize("loops", ["stack", "checkpoint"])
def test_a_loop_reading_a_dict_with_each_loop_strategy(loops):
    params = {"w": np.array([0.5, -1.0]), "b": 0.1, "gain": 1.5}
    x = np.array([0.3, 0.2])
    options = {"checkpoints": 2} if loops == "checkpoint" else {}
    gradient = derivo.grad(iterated_map, loops=loops, **options)(params, x)
    assert_same_tree(gradient, numeric_tree_grad(lambda p: iterated_map(p, x), params))


def test_checkpointing_a_loop_over_a_dicts_keys_is_refused_with_what_to_write():
    with pytest.raises(derivo.DerivoError, match="cannot checkpoint a loop over"):
        derivo.grad(loop_over_keys, loops="checkpoint")({"a": 1.0})


def replaced_bias(params, b2):
    new = {**params, "b": b2}
    return new["w"] * new["b"] + params["b"] ** 2


def test_a_dict_built_with_unpacking():
    gw, gb2 = derivo.grad(replaced_bias, wrt=(0, 1))({"w": 2.0, "b": 3.0}, 5.0)
    # params["b"] reaches the result only through params["b"] ** 2: new["b"] is b2
    assert gw == {"w": pytest.approx(5.0), "b": pytest.approx(6.0)}
    assert gb2 == pytest.approx(2.0)
    check_modes(replaced_bias, {"w": 2.0, "b": 3.0}, 5.0)


def a_dict_result(x):
    return {"square": x * x, "sine": np.sin(x)}


def test_vjp_and_jvp_of_a_dict_result():
    out, vjp_fn = derivo.vjp(a_dict_result, 0.5)
    assert out == {"square": 0.25, "sine": pytest.approx(np.sin(0.5))}
    (bx,) = vjp_fn({"square": 1.0, "sine": 2.0})
    assert bx == pytest.approx(2 * 0.5 + 2.0 * np.cos(0.5))
    value, tangent = derivo.jvp(a_dict_result, (0.5,), (3.0,))
    assert list(tangent) == ["square", "sine"]
    assert tangent["square"] == pytest.approx(3.0) and \
        tangent["sine"] == pytest.approx(3.0 * np.cos(0.5))
    with pytest.raises(derivo.DerivoError, match=r"cotangent must be of the structure "
                       r"dict\(square, sine\)"):
        vjp_fn({"square": 1.0})


def test_a_dict_result_is_refused_by_grad_with_what_to_write():
    with pytest.raises(derivo.DerivoError, match="returns a dict.*has_aux=True"):
        derivo.grad(a_dict_result)(0.5)


def test_vjp_of_a_dict_of_arrays_gives_a_dict():
    out, vjp_fn = derivo.vjp(mlp_loss, PARAMS, X, Y)
    gradient = vjp_fn(1.0)[0]
    assert_same_tree(gradient, numeric_tree_grad(lambda p: mlp_loss(p, X, Y), PARAMS))


# --- non-differentiable leaves --------------------------------------------------------

def configured(params):
    scale = params["scale"] if params["use_scale"] else 1.0
    total = 0.0
    for _ in range(params["repeats"]):
        total = total + scale * np.sum(params["w"] ** 2)
    return total


def test_leaves_that_are_not_floats_pass_through_and_get_none():
    params = {"w": np.array([1.0, 2.0]), "scale": 0.5, "repeats": 3, "use_scale": True,
              "name": "layer", "unused": None}
    gradient = derivo.grad(configured)(params)
    assert gradient["repeats"] is None and gradient["use_scale"] is None
    assert gradient["name"] is None and gradient["unused"] is None
    np.testing.assert_allclose(gradient["w"], 3 * 0.5 * 2 * params["w"])
    assert gradient["scale"] == pytest.approx(3 * 5.0)
    check_modes(configured, params)


def test_a_complex_leaf_is_refused():
    with pytest.raises(derivo.DerivoError, match="complex number"):
        derivo.grad(configured)({"w": np.ones(2), "scale": 1j, "repeats": 1, "use_scale": 1})


def as_a_number(x):
    return x * 2.0


def test_a_dict_used_as_a_number_is_refused():
    with pytest.raises(derivo.DerivoError, match="uses x only as a number"):
        derivo.grad(as_a_number)({"a": 1.0})


# --- nested tuples and lists ----------------------------------------------------------

def nested_pair(params, x):
    (w, b), lam = params
    return np.sum((w * x + b) ** 2) + lam * np.sum(w ** 2)


def test_a_pair_and_a_float_in_a_tuple():
    params = ((np.array([0.5, -0.2]), 0.1), 0.01)
    gradient = check_modes(nested_pair, params, np.array([1.0, 2.0]))
    assert type(gradient) is tuple and type(gradient[0]) is tuple


def test_joining_a_list_inside_a_tuple_is_still_refused():
    def joins(params):
        (xs, lam) = params
        return sum(xs + xs) * lam
    with pytest.raises(derivo.DerivoError, match="joins such sequences"):
        derivo.grad(joins)(([1.0, 2.0], 0.5))


def list_of_dicts(layers, x):
    for layer in layers:
        x = np.tanh(layer["w"] * x + layer["b"])
    return np.sum(x)


def test_a_list_of_dicts():
    layers = [{"w": np.array([0.5, 1.0]), "b": 0.1}, {"w": np.array([-1.0, 0.3]), "b": -0.2}]
    gradient = check_modes(list_of_dicts, layers, np.array([0.2, 0.4]))
    assert type(gradient) is list and all(type(g) is dict for g in gradient)


def dict_of_lists(params):
    return params["ws"][0] * params["ws"][1] + params["c"][0] ** 2


def test_a_dict_of_lists_and_tuples():
    check_modes(dict_of_lists, {"ws": [2.0, 3.0], "c": (1.5,)})


# --- NamedTuples and dataclasses, read by attribute ----------------------------------

class Line(NamedTuple):
    slope: float
    offset: float


@dataclasses.dataclass
class Affine:
    w: np.ndarray
    b: float
    name: str = "affine"


@dataclasses.dataclass(frozen=True)
class Frozen:
    w: np.ndarray
    b: float


def line_error(p, x):
    return (p.slope * x + p.offset - 1.0) ** 2 + p[0] * 0.5


def affine_error(p, x):
    return np.sum((p.w * x + p.b) ** 2)


def test_a_namedtuple_read_by_attribute_and_by_index():
    gradient = check_modes(line_error, Line(2.0, 0.5), 3.0)
    assert type(derivo.grad(line_error)(Line(2.0, 0.5), 3.0)) is Line
    assert gradient.slope == pytest.approx(2 * 5.5 * 3.0 + 0.5)


@pytest.mark.parametrize("params", [Affine(np.array([1.0, -0.5]), 0.25),
                                    Frozen(np.array([1.0, -0.5]), 0.25)])
def test_a_dataclass_read_by_attribute(params):
    gradient = check_modes(affine_error, params, np.array([0.5, 2.0]))
    assert type(gradient) is type(params)


def test_a_dataclass_field_that_is_not_a_float_gets_none():
    gradient = derivo.grad(affine_error)(Affine(np.array([1.0, -0.5]), 0.25), 2.0)
    assert type(gradient) is Affine and gradient.name is None


@dataclasses.dataclass
class Model:
    layers: list
    temperature: float


def model_loss(model, x):
    for layer in model.layers:
        x = np.tanh(layer.w * x + layer.b)
    return np.sum(x) / model.temperature


def test_dataclasses_in_a_list_in_a_dataclass():
    model = Model([Affine(np.array([0.5, 1.0]), 0.1), Affine(np.array([-1.0, 0.3]), -0.2)],
                  2.0)
    gradient = check_modes(model_loss, model, np.array([0.2, 0.4]))
    assert type(gradient) is Model and all(type(g) is Affine for g in gradient.layers)


def test_the_generated_code_reads_fields_as_the_function_does():
    source = derivo.grad(affine_error).source
    assert "p.w" in source and "p.b" in source
    assert "add_field(bp, " in source or "field_vjp(" in source
    tangent = derivo.tangent(affine_error).source
    assert "dp.w" in tangent and "dp.b" in tangent


def test_the_generated_code_reads_keys_as_the_function_does():
    source = derivo.grad(mlp_loss).source
    assert "params['W1']" in source and "params['b2']" in source


# --- registered containers ------------------------------------------------------------

class Pair:
    def __init__(self, first, second, label="pair"):
        self.first, self.second, self.label = first, second, label


derivo.register_container(
    Pair, lambda p: ({"first": p.first, "second": p.second}, p.label),
    lambda label, parts: Pair(parts["first"], parts["second"], label))


def pair_loss(pair, x):
    return np.sum(pair.first * x) * pair.second


def test_a_registered_class_gets_a_gradient_of_its_class():
    pair = Pair(np.array([1.0, 2.0]), 3.0, "mine")
    x = np.array([0.5, -1.0])
    gradient = derivo.grad(pair_loss)(pair, x)
    assert type(gradient) is Pair and gradient.label == "mine"
    np.testing.assert_allclose(gradient.first, 3.0 * x)
    assert gradient.second == pytest.approx(np.sum(pair.first * x))
    out, vjp_fn = derivo.vjp(pair_loss, pair, x)
    again = vjp_fn(1.0)[0]
    assert type(again) is Pair and again.second == pytest.approx(gradient.second)
    _, slope = derivo.jvp(pair_loss, (pair, x), (Pair(np.ones(2), 1.0), None))
    assert slope == pytest.approx(np.sum(gradient.first) + gradient.second)


def test_register_container_checks_its_arguments():
    with pytest.raises(TypeError, match="takes a class"):
        derivo.register_container(Pair(1.0, 2.0), len, len)
    with pytest.raises(TypeError, match="two functions"):
        derivo.register_container(Pair, None, None)


# --- has_aux with a dict --------------------------------------------------------------

def loss_and_metrics(params, X, y):
    loss = mlp_loss(params, X, y)
    return loss, {"loss": loss, "n": len(y)}


def test_has_aux_with_dict_parameters_and_a_dict_aux():
    gradient, aux = derivo.grad(loss_and_metrics, has_aux=True)(PARAMS, X, Y)
    assert aux["n"] == 5 and aux["loss"] == pytest.approx(mlp_loss(PARAMS, X, Y))
    assert_same_tree(gradient, numeric_tree_grad(lambda p: mlp_loss(p, X, Y), PARAMS))


# --- what is out of reach: refused with what to write -----------------------------------

def cubic(params):
    return np.sum(params["w"] ** 3) * params["b"]


def test_second_derivatives_of_a_dict_in_closed_form():
    # (more in test_hessian_trees.py)
    params = {"w": np.array([1.0, 2.0]), "b": 0.5}
    hessian = derivo.hessian(cubic)(params)
    np.testing.assert_allclose(hessian["w"]["w"], np.diag(6 * params["w"] * 0.5))
    np.testing.assert_allclose(hessian["w"]["b"], 3 * params["w"] ** 2)
    assert hessian["b"]["b"] == 0.0
    (product,) = derivo.hvp(cubic, (params,), ({"w": np.ones(2), "b": 1.0},))
    np.testing.assert_allclose(product["w"], 6 * params["w"] * 0.5 + 3 * params["w"] ** 2)
    assert product["b"] == pytest.approx(np.sum(3 * params["w"] ** 2))


@pytest.mark.parametrize("mode", ["auto", "forward", "reverse"])
def test_the_jacobian_of_a_dict_result_is_refused(mode):
    with pytest.raises(derivo.DerivoError, match="got a dict; use derivo.vjp or derivo.jvp"):
        derivo.jacobian(a_dict_result, mode=mode)(0.5)


def returns_its_label(x, label):
    return label


def test_a_string_result_is_refused():
    with pytest.raises(derivo.DerivoError, match="returning a number, got a str"):
        derivo.grad(returns_its_label)(1.0, "abc")


def doubled_into_a_new_dict(params):
    out = {}
    for key in params:
        out[key] = params[key] * 2.0
    return out["a"] * out["b"]


def test_a_dict_filled_item_by_item():
    check_modes(doubled_into_a_new_dict, {"a": 1.5, "b": 3.0})


def builds_a_line(x):
    line = Line(x * 2.0, x)
    return line.slope * line.offset


def test_building_a_namedtuple_inside():
    assert derivo.grad(builds_a_line)(1.5) == pytest.approx(4 * 1.5)  # d(2 x * x)/dx


# --- a dict comprehension builds a container of differentiated values ---

def penalised_step(params, lr):
    stepped = {name: w - lr * np.tanh(w) for name, w in params.items() if name != "frozen"}
    return sum(np.sum(w ** 2) for w in stepped.values()) + np.sum(params["frozen"])


def test_a_dict_comprehension_over_params_in_every_mode():
    params = {"w": np.array([0.5, -1.0]), "b": 0.3, "frozen": np.array([2.0])}
    check_modes(penalised_step, params, 0.1)

def weighted_in_key_order(params, x):
    total = 0.0
    for i, (name, p) in enumerate(sorted(params.items())):
        total = total + (i + 1.0) * np.sum(p * x)
    return total


def test_sorted_items_of_a_dict_in_both_modes():
    # the adjoint of sorted(d.items()) indexed the view: an AttributeError, not a gradient
    params = {"b": np.array([1.0, 2.0]), "a": np.array([3.0, -1.0]), "c": np.array([0.5, 0.5])}
    x = np.array([2.0, -3.0])
    grads = derivo.grad(weighted_in_key_order)(params, x)
    assert list(grads) == ["b", "a", "c"]
    for name, weight in (("a", 1.0), ("b", 2.0), ("c", 3.0)):
        np.testing.assert_allclose(grads[name], weight * x, rtol=1e-12)
    tangents = {"b": np.ones(2), "a": np.zeros(2), "c": np.array([1.0, 0.0])}
    _, tangent = derivo.jvp(weighted_in_key_order, (params, x), (tangents, np.zeros(2)))
    assert tangent == pytest.approx(2.0 * x.sum() + 3.0 * x[0], rel=1e-12)


def _dense(params, x):
    for layer in params[:-1]:
        x = np.tanh(x @ layer["W"] + layer["b"])
    return x @ params[-1]["W"] + params[-1]["b"]


def dense_with_penalty(params, x):
    out = _dense(params, x)
    penalty = sum(np.sum(layer["W"] ** 2) for layer in params)
    return np.mean(out ** 2) + penalty


def test_two_adjoints_of_a_list_of_dicts_add_key_by_key():
    # a loop over the list and a call both reach it: adding their adjoints added
    # the dicts with +, a TypeError
    rng = np.random.default_rng(0)
    params = [{"W": rng.normal(size=(3, 4)), "b": np.zeros(4)},
              {"W": rng.normal(size=(4, 2)), "b": np.zeros(2)}]
    x = rng.normal(size=(5, 3))
    grads = derivo.grad(dense_with_penalty)(params, x)
    assert [list(g) for g in grads] == [["W", "b"], ["W", "b"]]
    h = 1e-6
    for i, name in itertools.product(range(2), ("W", "b")):
        direction = rng.normal(size=params[i][name].shape)

        def moved(step):
            changed = [dict(layer) for layer in params]
            changed[i][name] = params[i][name] + step * direction
            return dense_with_penalty(changed, x)
        expected = (moved(h) - moved(-h)) / (2 * h)
        assert np.sum(grads[i][name] * direction) == pytest.approx(expected, rel=1e-6)


def rescaled_each_trip(x):
    p = {"a": x, "b": x ** 2}
    for i in range(2):
        p = {k: v * x[i] for k, v in p.items()}
    return np.sum(p["a"] * p["b"])


def exponentiated_nested(x):
    p = {"a": {"u": x, "v": x ** 2}}
    q = {k: {kk: np.exp(vv) for kk, vv in d.items()} for k, d in p.items()}
    return np.sum(q["a"]["u"] * q["a"]["v"])


@pytest.mark.parametrize("f", [rescaled_each_trip, exponentiated_nested])
def test_dict_comprehensions_in_loops_and_nested(f):
    x = np.array([0.3, -0.7, 1.1])
    expected = numeric_tree_grad(f, x)
    assert_same_tree(derivo.grad(f)(x), expected)
    _, slope = derivo.jvp(f, (x,), (np.ones(3),))
    assert slope == pytest.approx(np.sum(expected), rel=1e-6)


class Counted(NamedTuple):
    w: float
    k: int


@dataclasses.dataclass
class CountedRecord:
    w: float
    k: int


def counted_loss(p, y):
    w, k = (p["w"], p["k"]) if isinstance(p, dict) else (p.w, p.k)
    return w * k * y + k


@pytest.mark.parametrize("params, tangent", [
    ({"w": 0.8, "k": 2}, {"w": 1.0, "k": None}),
    (Counted(0.8, 2), Counted(1.0, None)),
    (CountedRecord(0.8, 2), CountedRecord(1.0, None))])
def test_jvp_takes_none_for_an_int_leaf_the_function_multiplies(params, tangent):
    value, slope = derivo.jvp(counted_loss, (params, 0.5), (tangent, 1.0))
    assert value == pytest.approx(0.8 * 2 * 0.5 + 2)
    assert slope == pytest.approx(2 * 0.5 + 0.8 * 2)


def value_and_a_ragged_pair(x, y):
    s = x * y
    return (s, [s, x])


def test_vjp_of_a_result_holding_a_list_beside_a_number():
    # np.ndim of (s, [s, x]) raised a ValueError (an inhomogeneous shape)
    out, vjp_fn = derivo.vjp(value_and_a_ragged_pair, 0.7, 2.0)
    assert out == (pytest.approx(1.4), [pytest.approx(1.4), 0.7])
    assert vjp_fn((1.0, [0.0, 0.0])) == (pytest.approx(2.0), pytest.approx(0.7))
    assert vjp_fn((0.0, [1.0, 1.0])) == (pytest.approx(3.0), pytest.approx(0.7))
