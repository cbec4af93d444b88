"""derivo.trees: which values are containers, their parts, gradients put back in
an argument's structure and types, and the paths along which a function's code
reads a container (what decides whether it may join a list with +)."""

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

import derivo
from derivo import runtime, trees
from derivo.trees import ANY, DEEPER, ZIPPED, Field


class Point(NamedTuple):
    x: float
    y: float


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: float
    name: str = "layer"


@dataclasses.dataclass(frozen=True)
class Checked:
    scale: float

    def __post_init__(self):
        if self.scale <= 0:
            raise ValueError("scale must be positive")


class Box:
    def __init__(self, items, tag):
        self.items, self.tag = items, tag


trees.register_container(Box, lambda box: (list(box.items), box.tag),
                         lambda tag, parts: Box(parts, tag))


@pytest.mark.parametrize("value, record", [
    ({"a": 1.0}, True), (Point(1.0, 2.0), True), (Layer(np.ones(2), 1.0), True),
    (Box([1.0], "t"), True), ([1.0], False), ((1.0,), False), (1.0, False),
    (np.ones(2), False), ("ab", False), (None, False)])
def test_records_are_the_containers_read_by_name(value, record):
    assert trees.is_record(value) is record
    assert trees.is_container(value) is (record or isinstance(value, (list, tuple)))


def test_parts_are_in_the_form_of_the_adjoint():
    assert trees.parts({"b": 1.0, "a": 2.0}) == {"b": 1.0, "a": 2.0}
    assert trees.parts(Point(1.0, 2.0)) == [1.0, 2.0]
    layer = Layer(np.ones(2), 0.5)
    assert list(trees.parts(layer)) == ["w", "b", "name"]
    assert trees.parts(Box((3.0, 4.0), "t")) == [3.0, 4.0]
    assert trees.parts(2.0) is None


def test_a_namedtuple_field_is_its_position():
    assert trees.key_of(Point(1.0, 2.0), "y") == 1
    assert trees.key_of({"y": 1.0}, "y") == "y"


def test_leaves_depth_first_in_order():
    value = {"z": [1.0, Point(2.0, 3.0)], "a": Layer(np.zeros(1), 4.0, "n")}
    leaves = trees.leaves(value)
    assert leaves[:3] == [1.0, 2.0, 3.0] and leaves[4:] == [4.0, "n"]


def test_in_structure_gives_the_arguments_types_and_key_order():
    value = {"w": np.ones(2), "n": 3, "p": Point(1.0, 2.0), "layer": Layer(np.ones(2), 1.0)}
    adjoint = {"w": 0.0, "n": 0.0, "p": [5.0, 0.0], "layer": {"w": np.array([1.0, 2.0]),
                                                             "b": np.float64(3.0)}}
    gradient = trees.in_structure(adjoint, value)
    assert list(gradient) == ["w", "n", "p", "layer"]
    np.testing.assert_array_equal(gradient["w"], np.zeros(2))  # 0.0 became zeros
    assert gradient["n"] is None
    assert gradient["p"] == Point(5.0, 0.0) and type(gradient["p"]) is Point
    assert type(gradient["layer"]) is Layer and gradient["layer"].name is None
    assert type(gradient["layer"].b) is float


def test_a_dataclass_gradient_does_not_run_its_init():
    gradient = trees.in_structure({"scale": -1.0}, Checked(2.0))
    assert type(gradient) is Checked and gradient.scale == -1.0


def test_a_registered_gradient_is_unflattened():
    gradient = trees.in_structure([1.0, 2.0], Box([0.5, 0.25], "tag"))
    assert type(gradient) is Box and gradient.items == [1.0, 2.0] and gradient.tag == "tag"


def test_a_number_where_a_dict_was_kept_is_refused():
    with pytest.raises(derivo.DerivoError, match="used it as a number"):
        trees.in_structure(2.0, {"a": 1.0})


def test_zeros_and_same_structure():
    value = {"w": np.ones((2, 3)), "b": 1.0, "k": 2}
    zeros = trees.zeros_in_structure(value)
    assert zeros["w"].shape == (2, 3) and zeros["b"] == 0.0 and zeros["k"] is None
    assert trees.same_structure(zeros, value)
    assert not trees.same_structure({"b": 1.0, "w": np.ones((2, 3)), "k": None}, value)
    assert not trees.same_structure({"w": np.ones(3), "b": 1.0, "k": None}, value)
    assert trees.describe(value) == "dict(w, b, k)"


def test_the_runtime_keeps_a_dicts_adjoint_as_a_dict():
    params = {"a": 1.0, "b": np.ones(2)}
    first = runtime.getitem_vjp(2.0, params, "a")
    assert first == {"a": 2.0, "b": 0.0}
    total = runtime.add_at(first, np.ones(2), params, "b")
    assert total["a"] == 2.0 and list(total["b"]) == [1.0, 1.0]
    assert runtime.add_adjoints(0.0, {"a": 1.0}) == {"a": 1.0}
    assert runtime.add_adjoints({"a": 1.0}, {"a": 2.0}) == {"a": 3.0}
    assert runtime.part({"a": 4.0}, "a") == 4.0 and runtime.part(0.0, "a") == 0.0


def test_field_adjoints():
    layer = Layer(np.ones(2), 1.0)
    assert runtime.field_vjp(3.0, layer, "b") == {"w": 0.0, "b": 3.0, "name": 0.0}
    assert runtime.add_field({"w": 0.0, "b": 3.0, "name": 0.0}, 1.0, layer, "b")["b"] == 4.0
    assert list(runtime.field_vjp(3.0, Point(1.0, 2.0), "y")) == [0.0, 3.0]
    with pytest.raises(derivo.DerivoError, match="not a field of a dataclass"):
        runtime.field_vjp(1.0, np.ones(2), "real")


def test_unpacked_and_view_adjoints():
    assert runtime.unpacked_vjp({"w": 1.0, "b": 2.0}, {"w": 0.5, "b": 0.5}, ("b",)) == \
        {"w": 1.0, "b": 0.0}
    assert runtime.unpacked_vjp({"w": 1.0, "b": 2.0}, {"w": 0.5}, ({"w": 9.0},)) == {"w": 0.0}
    assert runtime.values_vjp([1.0, 2.0], {"a": 0.0, "b": 0.0}) == {"a": 1.0, "b": 2.0}
    assert runtime.items_vjp([[0.0, 1.0], 0.0], {"a": 0.0, "b": 0.0}) == {"a": 1.0, "b": 0.0}


# --- paths ------------------------------------------------------------------------------

def test_paths_are_extended_step_by_step():
    assert trees.extended((), 0) == (0,)
    assert trees.extended((ZIPPED,), ANY) == (ZIPPED, ANY)
    assert trees.extended((ZIPPED, ANY), 1) == (ANY,)  # item 1 of zip's tuple: an item
    long = ()
    for _ in range(20):
        long = trees.extended(long, ANY)
    assert len(long) == trees.LONGEST_PATH and long[-1] is DEEPER


@pytest.mark.parametrize("value, path, joins", [
    (((1.0, 2.0), 3.0), (1,), False),
    (((1.0, 2.0), 3.0), (0,), True),
    (((1.0, 2.0), 3.0), (ANY,), True),
    ({"xs": [1.0], "lam": 0.5}, ("lam",), False),
    ({"xs": [1.0], "lam": 0.5}, ("xs",), True),
    ({"xs": [1.0], "lam": 0.5}, ("missing",), False),
    (Layer([1.0], 2.0), (Field("w"),), True),
    (Layer([1.0], 2.0), (Field("b"),), False),
    (Point(1.0, 2.0), (), True),  # a record, and a tuple that + joins
    ([1.0], (ZIPPED, ANY), True),
    ([[[[1.0]]]], (DEEPER,), True),
])
def test_sequence_on_a_path(value, path, joins):
    assert trees.sequence_on(value, path) is joins


def test_holds_sequence():
    assert trees.holds_sequence({"a": {"b": [1.0]}}) and trees.holds_sequence((1.0,))
    assert not trees.holds_sequence({"a": np.ones(2), "b": Layer(np.ones(1), 1.0)})


def test_sequence_arithmetic_reads_paths_from_the_code():
    from derivo.analyze import sequence_arithmetic

    def f(params, x):
        (w, b), lam = params
        return w * x + b * lam

    found = sequence_arithmetic(f)
    assert set(found["params"]) == {(0, 0), (0, 1), (1,)}
    assert "'b * lam'" in str(found["params"][(1,)])
