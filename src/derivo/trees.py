"""Containers of values (pytrees): which values hold others, by which keys the
differentiated code reads their parts, and how a gradient is put back into the
structure and the types of its argument.

A *container* is a list, a tuple (a NamedTuple too), a dict, a dataclass
instance, or an instance of a class registered with :func:`register_container`;
anything else is a *leaf*.  Generated code reads a container's parts as the
user's code does (``params["W1"]``, ``p.w``, ``xs[0]``, ``for k in params``),
and keeps the adjoint of a container as plain Python containers of adjoints:

    list, tuple, NamedTuple      a list, by position (``p.w`` of a NamedTuple is
                                 its item ``p._fields.index("w")``)
    dict                         a dict with the same keys, in the same order
    dataclass, registered class  a dict from the name a part is read by (its
                                 attribute, or its key) to that part's adjoint

:func:`in_structure` turns such an adjoint back into a gradient of the
argument's own types: a dict for a dict (keys in order), an instance of the
same dataclass or NamedTuple, ``unflatten(aux, parts)`` for a registered class.
A leaf that is not a float or a float array (an int, a bool, a string, None, any
other object) is not differentiated: its gradient is ``None``.  (A list or a
tuple of plain numbers holding an int is refused at the call instead, as an int
argument is: see ``api._ArgumentChecks``.)
"""

import dataclasses
from typing import Any, Callable, Tuple

import numpy as np

from .errors import DerivoError

#: cls -> (flatten, unflatten) of each registered class (see register_container)
_REGISTERED = {}
#: The types of the commonest leaves, told apart at once: this runs once per
#: leaf on every call with a container
_LEAVES = frozenset({float, int, bool, str, type(None), np.ndarray, np.float64, np.float32})


def register_container(cls: type, flatten: Callable[[Any], Tuple[Any, Any]],
                       unflatten: Callable[[Any, Any], Any]) -> None:
    """Make instances of ``cls`` containers derivo differentiates through, as
    ``jax.tree_util.register_pytree_node`` does::

        class Affine:
            def __init__(self, w, b):
                self.w, self.b = w, b

        derivo.register_container(
            Affine,
            lambda a: ({"w": a.w, "b": a.b}, None),     # parts by name, aux data
            lambda aux, parts: Affine(parts["w"], parts["b"]))

        derivo.grad(lambda a, x: np.sum(a.w @ x + a.b))(Affine(W, b), x)  # an Affine

    ``flatten(obj)`` returns ``(parts, aux)``: ``parts`` a dict from the name the
    differentiated code reads each part by (``obj.w`` or ``obj["w"]``) to the
    part, or a list or tuple of them when it reads them by position
    (``obj[0]``, ``for part in obj``); ``aux``, anything else ``unflatten``
    needs.  ``unflatten(aux, parts)`` builds an object from parts of the same
    form: derivo calls it with the gradients of the parts to make the gradient.
    """
    if not isinstance(cls, type):
        raise TypeError("register_container takes a class, got {!r}".format(cls))
    if not (callable(flatten) and callable(unflatten)):
        raise TypeError("register_container takes a class and two functions, flatten(obj) "
                        "-> (parts, aux) and unflatten(aux, parts) -> obj")
    _REGISTERED[cls] = (flatten, unflatten)


def is_record(value):
    """Whether ``value`` is a container whose parts are read by name or key: a
    dict, a dataclass instance, a NamedTuple, or an instance of a registered
    class (lists and plain tuples are read by position)."""
    kind = type(value)
    if kind in _LEAVES:
        return False
    return kind in _REGISTERED or isinstance(value, dict) or \
        dataclasses.is_dataclass(kind) or (isinstance(value, tuple) and hasattr(kind, "_fields"))


def builds_a_record(cls):
    """Whether calling the class ``cls`` only stores its arguments: a NamedTuple, or a
    dataclass whose ``__init__`` is the one ``dataclass`` wrote and that has no
    ``__post_init__`` (neither changes what it is given)."""
    if not isinstance(cls, type):
        return False
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return cls.__new__.__code__.co_filename.startswith("<")
    init = getattr(cls.__init__, "__code__", None)
    return dataclasses.is_dataclass(cls) and init is not None and \
        init.co_filename.startswith("<") and not hasattr(cls, "__post_init__")


def is_container(value):
    """Whether ``value`` holds other values derivo differentiates through."""
    kind = type(value)
    return kind is list or kind is tuple or kind is dict or is_record(value)


def parts(value):
    """The parts of the container ``value`` in the form its adjoint takes: a
    dict (keys, or names) or a list (positions); None for a leaf."""
    kind = type(value)
    if kind is list or kind is tuple or isinstance(value, (list, tuple)) and \
            kind not in _REGISTERED:
        return list(value)
    if isinstance(value, dict) and kind not in _REGISTERED:
        return dict(value)
    if kind in _REGISTERED:
        found = _REGISTERED[kind][0](value)[0]
        return dict(found) if isinstance(found, dict) else list(found)
    if dataclasses.is_dataclass(kind):
        return {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
    return None


def key_of(value, index):
    """The key of ``value``'s adjoint that the read ``value[index]`` or, for a
    string, ``value.index`` reaches: a NamedTuple's field name is its position."""
    if type(index) is str and isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return type(value)._fields.index(index)
    return index


def zeros_like_parts(value):
    """The zero adjoint of the record ``value``, that its parts' adjoints are
    added into: 0.0 under each of its keys (0.0 stands for zeros of any shape);
    None for a leaf."""
    found = parts(value) if is_container(value) else None
    if found is None:
        return None
    return dict.fromkeys(found, 0.0) if isinstance(found, dict) else [0.0] * len(found)


def is_complex(value):
    """Whether the leaf ``value`` is a complex number or a complex array."""
    kind = type(value)
    if kind is np.ndarray:
        return value.dtype.kind == "c"
    if kind in _LEAVES:
        return False
    return isinstance(value, (complex, np.complexfloating)) or \
        isinstance(value, np.ndarray) and value.dtype.kind == "c"


def is_differentiable_leaf(value):
    """Whether the leaf ``value`` is differentiated: a float or a float array."""
    if type(value) is float or type(value) is np.ndarray and value.dtype.kind == "f":
        return True
    if isinstance(value, (bool, np.bool_)):
        return False
    return isinstance(value, (float, np.floating)) or \
        isinstance(value, np.ndarray) and value.dtype.kind == "f"


def leaves(value):
    """The leaves of ``value``, depth first, in the order of its parts."""
    found = parts(value) if is_container(value) else None
    if found is None:
        return [value]
    items = found.values() if isinstance(found, dict) else found
    return [leaf for item in items for leaf in leaves(item)]


def unflattened(like, items):
    """``like`` with the items of the iterator ``items`` in place of its leaves
    (the inverse of :func:`leaves`)."""
    if not is_container(like):
        return next(items)
    found = parts(like)
    if isinstance(found, dict):
        return rebuilt(like, {key: unflattened(item, items) for key, item in found.items()})
    return rebuilt(like, [unflattened(item, items) for item in found])


def _leaf_gradient(gradient, value):
    """The gradient of one leaf: of its shape, a Python float for a float;
    None for a leaf that is not differentiated."""
    if type(value) is np.ndarray and type(gradient) is np.ndarray and \
            gradient.shape == value.shape and value.dtype.kind == "f":
        return gradient  # the common case first: this runs once per leaf on every call
    if not is_differentiable_leaf(value):
        return None
    if isinstance(value, np.ndarray):
        if type(gradient) is np.ndarray and gradient.shape == value.shape:
            return gradient
        return np.broadcast_to(np.asarray(gradient, dtype=float), value.shape).copy()
    return float(gradient) if np.ndim(gradient) == 0 else gradient


def in_structure(gradient, value):
    """``gradient``, an adjoint of ``value`` as generated code keeps it (see the
    module docstring; 0.0 for a part no adjoint reached), in the structure and
    the types of ``value``."""
    if not is_container(value):
        return _leaf_gradient(gradient, value)
    found = parts(value)
    if isinstance(found, dict):
        if not isinstance(gradient, dict) and not (np.ndim(gradient) == 0 and gradient == 0):
            # a number where a dict was kept: the code used the container as a number
            raise DerivoError("the gradient of a {} came back as {!r}, not one per part: "
                              "the function used it as a number".format(
                                  type(value).__name__, gradient))
        given = gradient if isinstance(gradient, dict) else {}
        grads = {key: in_structure(given.get(key, 0.0), item) for key, item in found.items()}
    else:
        if isinstance(gradient, dict) or not (isinstance(gradient, (list, tuple)) or
                                              np.ndim(gradient) > 0) or \
                len(gradient) != len(found):
            gradient = [0.0 if isinstance(gradient, dict) else gradient] * len(found)
        grads = [in_structure(g, item) for g, item in zip(gradient, found)]
    return rebuilt(value, grads)


def structured(gradient, value):
    """``gradient`` in the structure and types of ``value`` (see
    :func:`in_structure`) when ``value`` is, or holds, a container read by name;
    as it is otherwise: what a saved module returns for a differentiated argument."""
    return in_structure(gradient, value) if holds_record(value) else gradient


def holds_record(value):
    """Whether ``value`` is a record (a dataclass, a NamedTuple, a registered
    container) or a list or tuple holding one."""
    if is_record(value):
        return True
    return type(value) in (list, tuple) and any(map(holds_record, value))


def rebuilt(value, grads):
    """A container of ``value``'s type holding ``grads`` (in the form of
    :func:`parts`) in place of its parts."""
    kind = type(value)
    if kind in _REGISTERED:
        flatten, unflatten = _REGISTERED[kind]
        found, aux = flatten(value)
        return unflatten(aux, grads if isinstance(found, dict) else type(found)(grads))
    if isinstance(value, dict):
        made = kind()
        made.update(grads)
        return made
    if isinstance(value, tuple):
        return kind(*grads) if hasattr(kind, "_fields") else kind(grads)
    if isinstance(value, list):
        return kind(grads)
    # a dataclass: a new instance with each field set, its __init__ not run (it
    # may check its fields, which now hold gradients)
    made = object.__new__(kind)
    for name, grad in grads.items():
        object.__setattr__(made, name, grad)
    return made


def zeros_in_structure(value):
    """The zero tangent of ``value``: zeros of each differentiated leaf's shape,
    None for the others, in ``value``'s structure."""
    if not is_container(value):
        return _leaf_gradient(0.0, value)
    found = parts(value)
    items = found.items() if isinstance(found, dict) else enumerate(found)
    grads = {key: zeros_in_structure(item) for key, item in items}
    return rebuilt(value, grads if isinstance(found, dict) else list(grads.values()))


def same_structure(tree, like):
    """Whether ``tree`` has the structure of ``like``: containers of the same types
    with the same keys or lengths, holding a real number or array of the same
    shape for each differentiated leaf (None too for one that is not)."""
    if is_container(like):
        if type(tree) is not type(like):
            return False
        mine, theirs = parts(tree), parts(like)
        if isinstance(theirs, dict):
            return list(mine) == list(theirs) and \
                all(same_structure(mine[k], theirs[k]) for k in theirs)
        return len(mine) == len(theirs) and all(map(same_structure, mine, theirs))
    if not is_differentiable_leaf(like):
        return tree is None or np.ndim(tree) == 0 and _is_number(tree) and tree == 0
    return _is_number(tree) and np.shape(tree) == np.shape(like)


def _is_number(value):
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "fiu"
    return isinstance(value, (int, float, np.integer, np.floating))


def describe(value):
    """A short account of ``value``'s structure for messages: ``dict(w, b)``."""
    if not is_container(value):
        return type(value).__name__ if np.ndim(value) == 0 else \
            "array{}".format(np.shape(value))
    found = parts(value)
    inner = ", ".join(map(str, found)) if isinstance(found, dict) else \
        ", ".join(map(describe, found))
    return "{}({})".format(type(value).__name__, inner)


# --- paths: where in a container a function's code reads ----------------------

class Field:
    """A step of a path that reads the field ``name`` (``p.w``)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return isinstance(other, Field) and other.name == self.name

    def __hash__(self):
        return hash((Field, self.name))

    def __repr__(self):
        return "." + self.name


#: A step of a path to any part (an index only the run knows).
ANY = type("AnyPart", (), {"__repr__": lambda self: "[*]"})()
#: A step to a tuple that zip or enumerate made of items of the sequences
#: (its own items are items of those).
ZIPPED = type("Zipped", (), {"__repr__": lambda self: "zip"})()
#: The last step of a path cut short: any depth below.
DEEPER = type("Deeper", (), {"__repr__": lambda self: "..."})()
#: The steps a path keeps before it is cut short.
LONGEST_PATH = 8


def extended(path, step):
    """``path`` followed by ``step`` (a constant index, a :class:`Field`, or
    :data:`ANY`): a step into a tuple zip made reaches an item of a sequence."""
    if path and path[-1] is DEEPER:
        return path
    if len(path) >= 2 and path[-2] is ZIPPED:
        return path[:-2] + (path[-1],)
    if len(path) >= LONGEST_PATH:
        return path[:LONGEST_PATH - 1] + (DEEPER,)
    return path + (step,)


def sequence_on(value, path):
    """Whether a list or a tuple (a NamedTuple too: + joins it) is what ``path``
    reaches from ``value`` (a NamedTuple's field is its item; a tuple zip makes
    always is one)."""
    if not path:
        return isinstance(value, (list, tuple)) and type(value) not in _REGISTERED
    step, rest = path[0], path[1:]
    if step is ZIPPED:
        return True
    if step is DEEPER:
        return any(sequence_on(leaf, ()) or sequence_on(leaf, (DEEPER,))
                   for leaf in _children(value))
    if step is ANY:
        return any(sequence_on(item, rest) for item in _children(value))
    found = parts(value) if is_container(value) else None
    if found is None:
        return False
    key = key_of(value, step.name) if isinstance(step, Field) else step
    try:
        return sequence_on(found[key], rest)
    except (KeyError, IndexError, TypeError):
        return False


def holds_sequence(value):
    """Whether ``value`` is, or holds at any depth, a list or a tuple: only then
    may + or * of what the code reads from it join sequences."""
    return isinstance(value, (list, tuple)) or any(map(holds_sequence, _children(value)))


def _children(value):
    found = parts(value) if is_container(value) else None
    if found is None:
        return []
    return list(found.values()) if isinstance(found, dict) else found
