"""Second derivatives with respect to containers of parameters: derivo.hessian
and derivo.hvp of functions of dicts, tuples, lists, NamedTuples, dataclasses
and nests of them, against central differences of the gradient.  The Hessian
of a container is structured as jax.hessian structures it: ``H[k1][k2]`` has
shape ``p[k1].shape + p[k2].shape``."""

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

import derivo

STEP = 1e-5


# --- the float leaves of a tree and central differences, written independently ---

def _paths(tree, path=()):
    """The paths (keys, positions, field names) of the float leaves of ``tree``."""
    if isinstance(tree, dict):
        return [p for k, v in tree.items() for p in _paths(v, path + (k,))]
    if dataclasses.is_dataclass(tree):
        return [p for f in dataclasses.fields(tree)
                for p in _paths(getattr(tree, f.name), path + (f.name,))]
    if isinstance(tree, (list, tuple)):
        return [p for i, v in enumerate(tree) for p in _paths(v, path + (i,))]
    floating = isinstance(tree, float) or isinstance(tree, np.ndarray) and tree.dtype.kind == "f"
    return [path] if floating else []


def _get(tree, path):
    for step in path:
        tree = getattr(tree, step) if dataclasses.is_dataclass(tree) else tree[step]
    return tree


def _with(tree, path, value):
    """``tree`` with the leaf at ``path`` replaced, in new containers."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        return {**tree, head: _with(tree[head], rest, value)}
    if dataclasses.is_dataclass(tree):
        return dataclasses.replace(tree, **{head: _with(getattr(tree, head), rest, value)})
    items = list(tree)
    items[head] = _with(items[head], rest, value)
    return type(tree)(*items) if hasattr(type(tree), "_fields") else type(tree)(items)


def _nudged(tree, path, j, delta):
    leaf = _get(tree, path)
    if isinstance(leaf, float):
        return _with(tree, path, leaf + delta)
    moved = np.array(leaf, dtype=float)
    moved.flat[j] += delta
    return _with(tree, path, moved)


def numeric_hessian_block(f, params, row, column, args=()):
    """d (gradient at path ``row``) / d (leaf at path ``column``) by central
    differences of derivo's gradient, of shape row shape + column shape."""
    gradient = derivo.grad(f)
    column_leaf = _get(params, column)
    slopes = []
    for j in range(np.size(column_leaf)):
        up = _get(gradient(_nudged(params, column, j, STEP), *args), row)
        down = _get(gradient(_nudged(params, column, j, -STEP), *args), row)
        slopes.append((np.asarray(up) - np.asarray(down)) / (2 * STEP))
    block = np.stack(slopes, axis=-1)
    return block.reshape(np.shape(_get(params, row)) + np.shape(column_leaf))


def assert_hessian_matches_differences(f, params, args=(), rtol=1e-5, atol=1e-6):
    hessian = derivo.hessian(f)(params, *args)
    for row in _paths(params):
        for column in _paths(params):
            got = _get(_get(hessian, row), column)
            expected = numeric_hessian_block(f, params, row, column, args)
            assert np.shape(got) == np.shape(_get(params, row)) + np.shape(_get(params, column))
            np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol,
                                       err_msg="H{}{}".format(list(row), list(column)))
    return hessian


# --- dicts ----------------------------------------------------------------------------

def coupled(p):
    return np.sum(p["a"] ** 2 * p["b"][0]) + np.sum(np.sin(p["b"])) * p["c"]


DICT = {"a": np.array([1.0, 2.0]), "b": np.array([0.5, 0.3, 0.2]), "c": 1.5}


def test_hessian_of_a_dict_against_differences():
    hessian = assert_hessian_matches_differences(coupled, DICT)
    assert type(hessian) is dict and list(hessian) == ["a", "b", "c"]
    assert all(type(row) is dict and list(row) == ["a", "b", "c"] for row in hessian.values())
    assert type(hessian["c"]["c"]) is float


def test_hessian_of_a_dict_in_closed_form():
    hessian = derivo.hessian(coupled)(DICT)
    a, b, c = DICT["a"], DICT["b"], DICT["c"]
    np.testing.assert_allclose(hessian["a"]["a"], 2 * b[0] * np.eye(2))
    np.testing.assert_allclose(hessian["a"]["b"], np.stack([2 * a, 0 * a, 0 * a], axis=-1))
    np.testing.assert_allclose(hessian["b"]["b"], np.diag(-c * np.sin(b)))
    np.testing.assert_allclose(hessian["b"]["c"], np.cos(b))
    assert hessian["c"]["c"] == 0.0


def test_the_blocks_of_a_dict_hessian_are_transposes():
    hessian = derivo.hessian(coupled)(DICT)
    for k1 in DICT:
        for k2 in DICT:
            ndim = np.ndim(DICT[k1])
            np.testing.assert_allclose(np.moveaxis(np.asarray(hessian[k1][k2]),
                                                   range(ndim), range(-ndim, 0)),
                                       hessian[k2][k1], atol=1e-12)


def test_hessian_of_a_dict_matches_jax():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    jax.config.update("jax_enable_x64", True)

    def coupled_jax(p):
        return jnp.sum(p["a"] ** 2 * p["b"][0]) + jnp.sum(jnp.sin(p["b"])) * p["c"]

    expected = jax.hessian(coupled_jax)(DICT)
    got = derivo.hessian(coupled)(DICT)
    for k1 in DICT:
        for k2 in DICT:
            np.testing.assert_allclose(got[k1][k2], np.asarray(expected[k1][k2]), atol=1e-12)


def cubic(params):
    return np.sum(params["w"] ** 3) * params["b"] + len(params["name"]) * params["n"]


def test_leaves_that_are_not_floats_get_none():
    params = {"w": np.array([1.0, 2.0]), "b": 0.5, "n": 3, "name": "abc"}
    hessian = derivo.hessian(cubic)(params)
    np.testing.assert_allclose(hessian["w"]["w"], np.diag(6 * params["w"] * 0.5))
    np.testing.assert_allclose(hessian["w"]["b"], 3 * params["w"] ** 2)
    assert hessian["b"]["b"] == 0.0
    assert hessian["n"] is None and hessian["name"] is None
    assert hessian["w"]["n"] is None and hessian["b"]["name"] is None


def sum_of_cubes_by_key(p):
    total = 0.0
    for key in p:
        total = total + np.sum(p[key] ** 3)
    return total


def sum_of_cubes_by_value(p):
    total = 0.0
    for value in p.values():
        total = total + np.sum(value ** 3)
    return total


def sum_of_cubes_by_item(p):
    total = 0.0
    for _, value in p.items():
        total = total + np.sum(value ** 3)
    return total


@pytest.mark.parametrize("f", [sum_of_cubes_by_key, sum_of_cubes_by_value,
                               sum_of_cubes_by_item])
def test_hessian_of_a_loop_over_a_dict(f):
    params = {"a": np.array([1.0, 2.0]), "b": np.array([3.0])}
    hessian = assert_hessian_matches_differences(f, params)
    np.testing.assert_allclose(hessian["a"]["a"], np.diag([6.0, 12.0]))
    np.testing.assert_allclose(hessian["b"]["b"], [[18.0]])


def through_new_dicts(p):
    q = {**p, "c": p["a"] * 2.0}
    r = {"u": q["c"] ** 2, "v": q["b"]}
    return np.sum(r["u"] * r["v"]) + np.sum(np.exp(r["v"]))


def test_hessian_through_dicts_built_inside():
    assert_hessian_matches_differences(through_new_dicts,
                                       {"a": np.array([1.0, 2.0]), "b": np.array([0.3, 0.4])})


# --- tuples, lists, records, nests --------------------------------------------------------

def pair_and_penalty(t):
    (w, b), lam = t
    return np.sum(np.tanh(w * b)) + lam * np.sum(w ** 2)


def test_hessian_of_nested_tuples():
    params = ((np.array([0.3, -0.2]), 0.7), 0.1)
    hessian = assert_hessian_matches_differences(pair_and_penalty, params)
    assert type(hessian) is tuple and type(hessian[0]) is tuple and type(hessian[0][0]) is tuple


def sum_of_cubes_in_a_list(ws):
    total = 0.0
    for w in ws:
        total = total + np.sum(w ** 3) * ws[0][0]
    return total


def test_hessian_of_a_list():
    hessian = assert_hessian_matches_differences(
        sum_of_cubes_in_a_list, [np.array([1.0, 2.0]), np.array([3.0])])
    assert type(hessian) is list and type(hessian[1]) is list


class Params(NamedTuple):
    w: np.ndarray
    b: float


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: float


def scaled_exponentials(q):
    return np.sum(np.exp(q.w) * q.b ** 2)


@pytest.mark.parametrize("kind", [Params, Layer])
def test_hessian_of_a_record(kind):
    params = kind(np.array([0.1, 0.2]), 2.0)
    hessian = assert_hessian_matches_differences(scaled_exponentials, params)
    assert type(hessian) is kind and type(hessian.w) is kind
    np.testing.assert_allclose(hessian.w.w, np.diag(np.exp(params.w) * 4.0))
    np.testing.assert_allclose(hessian.w.b, np.exp(params.w) * 4.0)


def nested_mix(p):
    layer = p["layer"]
    return np.sum(layer["w"] ** 2 * layer["b"]) + p["lam"][0] * p["lam"][1] ** 2 + \
        np.sum(np.cos(layer["w"])) * p["lam"][0]


def test_hessian_of_a_dict_of_dicts_and_tuples():
    params = {"layer": {"w": np.array([1.0, 2.0]), "b": 0.5}, "lam": (0.3, 0.4)}
    hessian = assert_hessian_matches_differences(nested_mix, params)
    assert hessian["lam"][0]["lam"][1] == pytest.approx(0.8)
    assert hessian["lam"][1]["layer"]["b"] == 0.0


# --- a 2-layer MLP loss -------------------------------------------------------------------

def mlp_loss(params, x, y):
    hidden = np.tanh(x @ params["W1"] + params["b1"])
    out = hidden @ params["W2"] + params["b2"]
    return np.mean((out - y) ** 2)


RNG = np.random.default_rng(22)
MLP = {"W1": RNG.normal(size=(3, 4)), "b1": RNG.normal(size=4),
       "W2": RNG.normal(size=(4, 2)), "b2": RNG.normal(size=2)}
X, Y = RNG.normal(size=(5, 3)), RNG.normal(size=(5, 2))


def test_hessian_of_an_mlp_loss_against_differences():
    hessian = assert_hessian_matches_differences(mlp_loss, MLP, (X, Y), rtol=1e-4, atol=1e-6)
    assert np.shape(hessian["W1"]["W2"]) == (3, 4, 4, 2)
    # the mean of N M = 10 squares, b2 added to each of the N rows: 2 N / (N M) = 1
    np.testing.assert_allclose(hessian["b2"]["b2"], np.eye(2), atol=1e-12)


def test_hessian_of_an_mlp_loss_with_respect_to_the_data_too():
    (pp, px), (xp, xx) = derivo.hessian(mlp_loss, wrt=(0, 1))(MLP, X, Y)
    assert np.shape(px["W1"]) == (3, 4, 5, 3) and np.shape(xp["b2"]) == (5, 3, 2)
    for key in MLP:
        expected = numeric_hessian_block(lambda p, x, y: mlp_loss(p, x, y), MLP, (key,), ("b2",),
                                         (X, Y))
        np.testing.assert_allclose(pp[key]["b2"], expected, rtol=1e-4, atol=1e-6)
    gradient_x = derivo.grad(mlp_loss, wrt=1)
    up = gradient_x(_with(MLP, ("b1",), MLP["b1"] + np.eye(4)[0] * STEP), X, Y)
    down = gradient_x(_with(MLP, ("b1",), MLP["b1"] - np.eye(4)[0] * STEP), X, Y)
    np.testing.assert_allclose(xp["b1"][..., 0], (up - down) / (2 * STEP), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(px["b1"][0], (up - down) / (2 * STEP), rtol=1e-4, atol=1e-6)


# --- grad-of-grad-like checks: Hessian-vector products ------------------------------------

def _direction(params, seed):
    rng = np.random.default_rng(seed)
    tangent = params
    for path in _paths(params):
        leaf = _get(params, path)
        value = rng.normal(size=np.shape(leaf))
        tangent = _with(tangent, path, float(value) if isinstance(leaf, float) else value)
    return tangent


@pytest.mark.parametrize("f, params, args", [
    (coupled, DICT, ()),
    (pair_and_penalty, ((np.array([0.3, -0.2]), 0.7), 0.1), ()),
    (scaled_exponentials, Params(np.array([0.1, 0.2]), 2.0), ()),
    (scaled_exponentials, Layer(np.array([0.1, 0.2]), 2.0), ()),
    (mlp_loss, MLP, (X, Y)),
])
def test_hvp_of_a_container_is_the_gradient_difference_along_it(f, params, args):
    direction = _direction(params, 3)
    (product, *rest) = derivo.hvp(f, (params, *args), (direction, *[None] * len(args)))
    assert all(r is None for r in rest) or len(rest) == len(args)
    gradient = derivo.grad(f)
    shifted = [params, params]
    for path in _paths(params):
        leaf, step = _get(params, path), _get(direction, path)
        shifted = [_with(shifted[0], path, leaf + STEP * step),
                   _with(shifted[1], path, leaf - STEP * step)]
    up, down = gradient(shifted[0], *args), gradient(shifted[1], *args)
    assert type(product) is type(params)
    for path in _paths(params):
        expected = (np.asarray(_get(up, path)) - np.asarray(_get(down, path))) / (2 * STEP)
        np.testing.assert_allclose(_get(product, path), expected, rtol=1e-4, atol=1e-6)


def test_hvp_is_the_hessian_contracted_with_the_direction():
    direction = _direction(DICT, 5)
    (product,) = derivo.hvp(coupled, (DICT,), (direction,))
    hessian = derivo.hessian(coupled)(DICT)
    for k1 in DICT:
        expected = sum(np.tensordot(hessian[k1][k2], direction[k2], axes=np.ndim(DICT[k2]))
                       for k2 in DICT)
        np.testing.assert_allclose(product[k1], expected, atol=1e-12)


# --- what is still refused ----------------------------------------------------------------

def test_the_jacobian_of_a_gradient_of_a_dict_says_to_use_hessian():
    with pytest.raises(derivo.DerivoError, match="argument 'p' is .*derivo.hessian"):
        derivo.jacobian(derivo.grad(coupled))(DICT)


def halves_in_place(p):
    p["a"] *= 0.5
    return np.sum(p["a"] ** 3) * p["b"]


def test_a_write_into_a_dict_replaces_the_adjoint_of_its_old_value():
    params = {"a": np.array([1.0, 2.0]), "b": 2.0}
    gradient = derivo.grad(halves_in_place)(params)
    np.testing.assert_allclose(gradient["a"], 3 * params["a"] ** 2 / 8 * 2.0)
    assert gradient["b"] == pytest.approx(np.sum(params["a"] ** 3) / 8)
    hessian = assert_hessian_matches_differences(halves_in_place, params)
    np.testing.assert_allclose(hessian["a"]["a"], np.diag(6 * params["a"] / 8 * 2.0))
    np.testing.assert_allclose(params["a"], [1.0, 2.0])  # the caller's dict is left as it was


def over_reversed_keys(p, c):
    s = c
    for key in reversed(p):
        s = s * c + np.sum(p[key] ** 2)
    return s


def test_a_loop_over_a_dict_reversed_in_every_mode():
    # s = (c c + |b|^2) c + |a|^2: the keys come last first
    params, c = {"a": np.array([1.0, 2.0]), "b": np.array([3.0])}, 0.5
    gp, gc = derivo.grad(over_reversed_keys, wrt=(0, 1))(params, c)
    np.testing.assert_allclose(gp["a"], 2 * params["a"])
    np.testing.assert_allclose(gp["b"], 2 * params["b"] * c)
    assert gc == pytest.approx(3 * c ** 2 + 9.0)
    _, slope = derivo.jvp(over_reversed_keys, (params, c),
                          ({"a": np.ones(2), "b": np.ones(1)}, 1.0))
    assert slope == pytest.approx(np.sum(gp["a"]) + np.sum(gp["b"]) + gc)
    (pp, pc), (cp, cc) = derivo.hessian(over_reversed_keys, wrt=(0, 1))(params, c)
    np.testing.assert_allclose(pp["b"]["b"], [[2 * c]])
    np.testing.assert_allclose(pc["b"], 2 * params["b"])
    np.testing.assert_allclose(cp["a"], [0.0, 0.0])
    assert cc == pytest.approx(6 * c)
