"""Fuzzing array code: random programs that read, write and rebind NumPy arrays in loops.

tests/test_fuzz.py draws scalar programs; this draws array ones, the kind that
found three silently wrong gradients (a term hoisted past a write, a second name
for a written array, a rebinding after a write).  Each program is

    def f(x, c):            # x a float array of 4, c a float
        s = 0.0
        y = x * 1.0
        <a loop (for, nested for, while, over enumerate, zip or reversed of x) or
         straight-line code over random statements>
        return s + np.sum(y * y) * 0.1

whose statements read items (``y[i]``, ``x[k]``, ``y[i - 1]``), slices, masks and
repeated fancy indices, write items and slices of ``y``, rebind ``y`` and give it
another name (``z = y``), and sum generator expressions and list comprehensions.  For each, with ``loops="stack"``, ``"checkpoint"`` and
``"reversible"`` (which accepts about one program in five):

- derivo's gradient equals central finite differences (rtol 1e-4), or derivo
  refuses the program with a DerivoError: about shared memory (another name for a
  written array) with loops="stack", any refusal with the other two;
- the caller's array is unchanged (a program that writes into it, ``y = x`` and then
  ``y[0] = ...`` on the next trip, is refused).

Points where the finite differences at h=1e-6 and h=1e-4 disagree (a mask or a
branch flips) are skipped.  The default run draws 25 programs from fixed seeds; a
longer one::

    DERIVO_FUZZ_ARRAYS=2000 python -m pytest -q -p no:cacheprovider tests/test_fuzz_arrays.py
"""

import importlib.util
import os
import random

import numpy as np
import pytest

import derivo

COUNT = int(os.environ.get("DERIVO_FUZZ_ARRAYS", "25"))
X = np.array([0.5, -1.2, 0.9, 0.3])
C = 0.7


def program(seed):
    """The source of one random program."""
    rng = random.Random(seed)
    arrays = ["x", "y"]

    def index():
        return rng.choice(["i", "0", "-1", "i - 1", "k"])

    def read(a):
        kind = rng.random()
        if kind < 0.5:
            return "{}[{}]".format(a, index())
        if kind < 0.65:
            return "np.sum({}[1:3])".format(a)
        if kind < 0.75:
            return "np.sum({}[np.array([0, 0, 2])])".format(a)
        if kind < 0.85:
            return "np.sum({0}[{0} > 0.0])".format(a)
        return "np.sum({0}[::2] * {0}[1::2])".format(a)

    shape = rng.random()
    values = ["v"] if 0.4 <= shape < 0.7 else []  # the items a loop over values gives
    values += ["w"] if 0.5 <= shape < 0.6 else []
    body = []
    for _ in range(rng.randint(2, 5)):
        a, b = rng.choice(arrays), rng.choice(arrays)
        written = a if a != "x" else "y"
        kind = rng.random()
        if values and kind < 0.15:
            body.append("s = s + {} * {}".format(rng.choice(values), read(a)))
        elif kind < 0.35:
            body.append("s = s + {} * {}".format(read(a), read(b)))
        elif kind < 0.5:
            body.append("{}[{}] = np.tanh({} * c) + {}".format(written, index(), read(b), read(a)))
        elif kind < 0.6:
            alias = rng.choice(["z", "y"])
            body.append("{} = {}".format(alias, rng.choice(arrays)))
            if alias == "z" and "z" not in arrays:
                arrays.append("z")
        elif kind < 0.7:
            body.append("y = {} * c".format(a))
        elif kind < 0.8:
            body.append("y[1:3] = {}[0:2] * c".format(a))
        elif kind < 0.85:
            body.append("s = s + np.sum({} * {}) * 0.1".format(a, b))
        elif kind < 0.9:
            body.append(rng.choice(["s = s + sum(v * c for v in {} if v > 0.0) * 0.1",
                                    "s = s + sum([{0}[j] * {0}[3 - j] for j in range(4)]) * 0.1"])
                        .format(a))
        else:
            body.append("y[{}] = y[{}] * {}".format(index(), index(), read(b)))
    lines = ["import numpy as np", "", "", "def f(x, c):", "    s = 0.0", "    y = x * 1.0"]
    if shape < 0.4:
        lines += ["    for i in range(x.shape[0]):", "        k = (i + 1) % 4"]
        lines += ["        " + line for line in body]
    elif shape < 0.7:
        heads = [(0.5, "    for i, v in enumerate(x):"), (0.6, "    for v, w in zip(x, x[::-1]):"),
                 (0.7, "    for v in reversed(x):")]
        head = next(line for bound, line in heads if shape < bound)
        counted = "enumerate" not in head
        lines += ["    i = 0"] * counted + [head, "        k = (i + 1) % 4"]
        lines += ["        " + line for line in body] + ["        i = i + 1"] * counted
    elif shape < 0.8:
        lines += ["    for j in range(2):", "        for i in range(x.shape[0]):",
                  "            k = (i + j) % 4"]
        lines += ["            " + line for line in body]
    elif shape < 0.9:
        lines += ["    i = 0", "    while i < x.shape[0]:", "        k = (i + 2) % 4"]
        lines += ["        " + line for line in body] + ["        i = i + 1"]
    else:
        lines += ["    i = 2", "    k = 3"] + ["    " + line for line in body]
    lines.append("    return s + np.sum(y * y) * 0.1")
    source = "\n".join(lines) + "\n"
    # z read before any assignment to it is a NameError in Python too: not a program
    return source if "z" not in source or "z = " in source else None


def load(source, seed, directory):
    path = directory / "fuzz_arrays_{}.py".format(seed)
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("fuzz_arrays_{}".format(seed), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


def differences(f, h):
    gx = []
    for e in np.eye(len(X)):
        gx.append((f(X + h * e, C) - f(X - h * e, C)) / (2 * h))
    return np.array(gx), (f(X.copy(), C + h) - f(X.copy(), C - h)) / (2 * h)  # f may write x


SEEDS = [seed for seed in range(100000) if program(seed) is not None][:COUNT]


@pytest.mark.parametrize("seed", SEEDS)
def test_array_program(seed, tmp_path):
    source = program(seed)
    f = load(source, seed, tmp_path)
    fine, coarse = differences(f, 1e-6), differences(f, 1e-4)
    if not (np.allclose(fine[0], coarse[0], rtol=1e-4, atol=1e-6)
            and np.isclose(fine[1], coarse[1], rtol=1e-4, atol=1e-6)):
        pytest.skip("a mask or a branch flips near the point")
    for loops in ("stack", "checkpoint", "reversible"):
        x = X.copy()
        options = {"loops": loops, "checkpoints": 2} if loops == "checkpoint" else {"loops": loops}
        try:
            gx, gc = derivo.grad(f, wrt=(0, 1), **options)(x, C)
        except derivo.DerivoError as error:
            assert "memory" in str(error) or loops != "stack", source + str(error)
            continue
        assert np.array_equal(x, X), "{} changed the caller's array\n{}".format(loops, source)
        # central differences of values near 1e5 carry errors near 1e-5 relative
        scale = 1e-6 * max(1.0, np.max(np.abs(fine[0])), abs(fine[1]))
        np.testing.assert_allclose(gx, fine[0], rtol=1e-4, atol=scale, err_msg=loops + "\n" + source)
        np.testing.assert_allclose(gc, fine[1], rtol=1e-4, atol=scale, err_msg=loops + "\n" + source)
