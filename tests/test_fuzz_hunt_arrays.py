"""Hunting in NumPy array code: random programs of shape-typed statements, checked in
every mode.

An independent generator from tests/test_fuzz_arrays.py and tests/test_fuzz_programs.py:
it tracks the shape of every local (scalars, (2,), (3,), (4,), (3, 4), (3, 1), (1, 4),
(3, 3), (4, 4)) and draws, over ``f(x, M, c)`` (x 4 floats, M 3x4, c a float),

- elementwise functions with broadcasting, reductions with ``axis``/``keepdims``,
  ``@``, ``einsum``, ``np.linalg`` (``solve``, ``inv``, ``det``), concatenate/stack,
  ``np.where`` and ``np.clip`` with differentiated bounds;
- reads by slices, fancy and boolean indices and ``argmax``; writes through them
  (``y[y > c] = ...``, ``y[np.argmax(y)] = 0.0``, ``a[1:3] += ...``), through views
  (``b = y[::2]; b *= c``), into copies and into the parameters;
- for/while loops with accumulators and early exits, if/else on array data, lists of
  arrays grown in a loop and stacked;
- helpers taking, returning and writing into arrays, the same array passed twice,
  aliases chosen by conditional expressions, a module-global array read and written.

Each program runs in every mode (``MODES``): ``grad`` with ``loops="stack"``,
``"checkpoint"`` and ``"reversible"``, ``grad`` in c alone, ``value_and_grad`` (its primal
is f's value), ``vjp`` (with a cotangent of 2.5), ``jvp`` and ``tangent`` along a random
direction and ``jvp`` along c with None for the others,
``hessian`` in c and in x, ``jacobian`` in (x, c) forward and reverse, and the saved
module imported in a fresh process.  A mode either refuses with a DerivoError naming
the program's file:line:col, or agrees with central differences where those are
reliable (h=1e-6 and h=1e-4 agree and so do the one-sided differences: no kink or
jump), agrees with the stack gradient everywhere, and leaves the caller's arrays
unchanged.  Any other exception is a crash.

``KNOWN`` lists the classes derivo gets wrong today (see fuzzarrays-findings.md);
a program showing only those is an xfail.  The default run checks ``CI_COUNT``
seeds; a long run::

    DERIVO_FUZZ_HUNT_ARRAYS=2000 python -m pytest -q -p no:cacheprovider tests/test_fuzz_hunt_arrays.py
    python tests/test_fuzz_hunt_arrays.py 3000 --start 0 > hunt.jsonl   # one JSON line each
"""

import contextlib
import importlib.util
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest

import derivo

# no entry a simple multiple of another or of the programs' constants: no ties at the point
X = np.array([0.4537, -0.8121, 0.9473, 0.2089])
M = np.array([[0.3119, -0.6043, 0.7561, 0.1237], [-0.2213, 0.5087, 0.3529, -0.9011],
              [0.6571, 0.1493, -0.4133, 0.5519]])
C = 0.6173
ARGS = (X, M, C)
NAMES = "xMc"

PRELUDE = '''\
import numpy as np

G = np.array([0.3, -0.4, 0.8, 0.1])


def h_scale(a, k):
    return a * k


def h_norm(a):
    return a / np.sqrt(np.sum(a * a) + 1.0)


def h_write(a, k):
    a[0] = k
    return a


def h_add(a, b):
    a += b * 0.5
    return np.sum(a)


def h_mask(a, k):
    a[a > k] = k
    return a


def h_view(a, k):
    v = a[1:]
    v *= k


def h_loop(a, n):
    t = a * 1.0
    for j in range(n):
        t = np.tanh(t) * 0.9 + a * 0.1
    return t


def h_pair(a, k):
    return a * k, np.sum(a * a)


def h_head(a):
    return a[:2]


def h_early(a, k):
    for j in range(a.shape[0]):
        if a[j] > k:
            return a[j] * k
    return np.sum(a) * 0.1
'''

SHAPES = [(), (2,), (3,), (4,), (3, 4), (3, 1), (1, 4), (3, 3), (4, 4)]


def broadcastable(small, big):
    """Whether an operand of shape ``small`` broadcasts to ``big`` alone."""
    if len(small) > len(big):
        return False
    return all(s in (1, b) for s, b in zip(small[::-1], big[::-1]))


class Gen:
    def __init__(self, rng, vector=False):
        self.rng = rng
        # f returns a float, or an array of shape (4,) or (3, 4) (vjp, jvp, jacobian only)
        self.result = RESULTS[vector or "float"]
        self.env = {"x": (4,), "M": (3, 4), "c": (), "y": (4,), "Z": (3, 4), "s": ()}
        self.owned = {"y", "Z"}      # arrays made in f, that no view shares
        self.count = 0
        self.features = set()
        # constructs derivo may refuse (writes through views, aliases, globals, the
        # parameters): at most one a program, so that most programs run in full
        self.risks = 1 if rng.random() < 0.6 else 0
        self.global_write = []

    def risk(self):
        if self.risks and self.rng.random() < 0.5:
            self.risks -= 1
            return True
        return False

    # -- names ------------------------------------------------------------
    def fresh(self):
        self.count += 1
        return "q{}".format(self.count)

    def of_shape(self, shape):
        return [n for n, s in self.env.items() if s == shape]

    def const(self):
        return repr(round(self.rng.uniform(-0.9, 0.9), 2))

    # -- expressions ------------------------------------------------------
    def leaf(self, shape):
        names = self.of_shape(shape)
        if names and self.rng.random() < 0.8:
            return self.rng.choice(names)
        made = self.made(shape)
        return "({})".format(made) if " " in made else made

    def made(self, shape):
        """A value of ``shape`` made from the parameters."""
        rng = self.rng
        if shape == ():
            return rng.choice(["c", self.const(), "c * " + self.const()])
        if shape == (4,):
            return rng.choice(["x", "y", "G", "M[1]", "Z[0]", "np.linspace(-0.5, 0.5, 4) * c"])
        if shape == (3, 4):
            return rng.choice(["M", "Z", "np.ones((3, 4)) * c"])
        if shape == (3,):
            return rng.choice(["M[:, 0]", "Z[:, 2]", "x[1:]", "y[:3]"])
        if shape == (2,):
            return rng.choice(["x[1:3]", "y[::2]", "M[0, ::2]", "x[np.array([3, 0])]"])
        if shape == (3, 1):
            return rng.choice(["M[:, :1]", "Z[:, 1:2]", "np.sum(M, axis=1, keepdims=True)",
                               "x[:3, None]", "x[:3].reshape(3, 1)"])
        if shape == (1, 4):
            return rng.choice(["x[None, :]", "M[1:2]", "np.mean(Z, axis=0, keepdims=True)",
                               "y.reshape(1, 4)"])
        if shape == (3, 3):
            return rng.choice(["M @ M.T * 0.5", "np.outer(x[:3], y[1:])", "Z[:, :3]",
                               "np.eye(3) * c"])
        if shape == (4, 4):
            return rng.choice(["np.outer(x, y)", "M.T @ Z", "np.eye(4) * c"])
        natural = {(2, 4): ["Z[1:]", "M[::2]"], (2, 2): ["x.reshape(2, 2)", "M[1:, 2:]"],
                   (4, 3): ["M.T", "Z.T * c"], (2, 1): ["M[1:, :1]"], (1, 3): ["M[:1, :3]"]}
        return rng.choice(natural.get(shape, []) + ["np.full({}, 0.5) * c".format(shape)])

    def expr(self, shape, depth=0):
        rng = self.rng
        if depth > 2 or rng.random() < 0.25:
            return self.leaf(shape)
        kind = rng.random()
        sub = lambda s=shape: self.expr(s, depth + 1)  # noqa: E731
        if kind < 0.3:
            f = rng.choice(["np.tanh({})", "np.sin({})", "np.cos({})", "np.exp(-{0} * {0})",
                            "np.log(1.0 + {0} * {0})", "np.sqrt(1.0 + {0} * {0})",
                            "np.arctan({})", "1.0 / (1.0 + {0} * {0})", "np.abs({})",
                            "({}) ** 2", "np.square({})", "np.log1p(np.exp({}))",
                            "np.exp(np.tanh({}))", "np.sign({0}) * {0}", "np.negative({})",
                            "np.power(np.tanh({}) + 1.5, 1.5)", "np.hypot({0}, 0.5)",
                            "np.cbrt({0} + 3.0)", "np.sinh(np.tanh({}))", "-{}"])
            self.features.add("elementwise")
            return "({})".format(f.format(sub()))
        if kind < 0.5:
            op = rng.choice([" + ", " - ", " * ", " * ", " / (1.5 + ", ])
            other = [s for s in SHAPES if broadcastable(s, shape)]
            a, b = sub(), self.expr(rng.choice(other), depth + 1)
            if rng.random() < 0.5 and op != " / (1.5 + ":
                a, b = b, a
            if op == " / (1.5 + ":
                self.features.add("divide")
                return "({}) / (1.5 + np.tanh({}))".format(a, b)
            if other != [shape]:
                self.features.add("broadcast")
            return "({}{}{})".format(a, op, b)
        if kind < 0.6:
            self.features.add("where_clip")
            a, b = sub(), sub()
            return "({})".format(rng.choice([
                "np.where({0} > {2}, {0}, {1})".format(a, b, self.const()),
                "np.where({0} > c, {1} * c, {0})".format(a, b),
                "np.clip({}, c - 1.0, {})".format(a, self.const()),
                "np.clip({}, -0.5, c)".format(a),
                "np.clip({}, c * 0.1 - 0.5, c + 0.2)".format(a),
                "np.maximum({}, {})".format(a, b), "np.minimum({}, c * 0.5)".format(a),
                "np.fmax({}, {})".format(a, b)]))
        # a call or an operator in parentheses: it may meet any operator or index
        if kind < 0.8:
            return "({})".format(self.reduction(shape, depth))
        return "({})".format(self.structural(shape, depth))

    def reduction(self, shape, depth):
        rng = self.rng
        self.features.add("reduction")
        red = rng.choice(["sum", "sum", "mean", "max", "min", "prod"])
        wrap = "np.tanh" if red == "prod" else ""
        if shape == ():
            src = rng.choice([(4,), (3, 4), (3,), (2,), (3, 3)])
            inner = self.expr(src, depth + 1)
            return rng.choice([
                "np.{}({}({}))".format(red, wrap, inner),
                "np.linalg.norm({})".format(inner) if len(src) == 1 else "np.sum({})".format(inner),
                "({0}).{1}()".format(inner, red),
                "np.log(np.sum(np.exp({})))".format(inner),
                "np.sum({}[{} > 0.0])".format(self.leaf(src), self.leaf(src)),
                "({})[np.argmax({})]".format(self.leaf((4,)), self.leaf((4,))),
                "np.std({})".format(inner) if rng.random() < 0.5 else "np.var({})".format(inner),
                "np.dot({}, {})".format(self.expr((4,), depth + 1), self.expr((4,), depth + 1)),
                "np.trace({})".format(self.expr((3, 3), depth + 1))])
        if shape == (4,):
            return rng.choice([
                "np.{}({}({}), axis=0)".format(red, wrap, self.expr((3, 4), depth + 1)),
                "np.cumsum({})".format(self.expr((4,), depth + 1)),
                "({}) @ ({})".format(self.expr((3,), depth + 1), self.expr((3, 4), depth + 1)),
                "np.einsum('ij,i->j', {}, {})".format(self.expr((3, 4), depth + 1),
                                                      self.expr((3,), depth + 1))])
        if shape == (3,):
            return rng.choice([
                "np.{}({}({}), axis=1)".format(red, wrap, self.expr((3, 4), depth + 1)),
                "np.{}({}({}), axis=-1)".format(red, wrap, self.expr((3, 4), depth + 1)),
                "({}) @ ({})".format(self.expr((3, 4), depth + 1), self.expr((4,), depth + 1)),
                "np.einsum('ij,j->i', {}, {})".format(self.expr((3, 4), depth + 1),
                                                      self.expr((4,), depth + 1))])
        if shape == (3, 1):
            return "np.{}({}({}), axis=1, keepdims=True)".format(
                red, wrap, self.expr((3, 4), depth + 1))
        if shape == (1, 4):
            return "np.{}({}({}), axis=0, keepdims=True)".format(
                red, wrap, self.expr((3, 4), depth + 1))
        if shape == (3, 3):
            return rng.choice([
                "({}) @ ({}).T".format(self.expr((3, 4), depth + 1), self.leaf((3, 4))),
                "np.einsum('ik,jk->ij', {}, {})".format(self.expr((3, 4), depth + 1),
                                                        self.leaf((3, 4)))])
        if shape == (4, 4):
            return "np.outer({}, {})".format(self.expr((4,), depth + 1), self.leaf((4,)))
        return self.leaf(shape)

    def structural(self, shape, depth):
        rng = self.rng
        sub = lambda s: self.expr(s, depth + 1)  # noqa: E731
        if shape == (4,):
            self.features.add("structural")
            return rng.choice([
                "np.concatenate([{}, {}])".format(sub((2,)), sub((2,))),
                "np.concatenate([{}[:1], {}])".format(sub((4,)), sub((3,))),
                "({})[::-1]".format(sub((4,))), "np.roll({}, 1)".format(sub((4,))),
                "({}).reshape(4)".format(sub((1, 4))), "({})[1]".format(sub((3, 4))),
                "np.linalg.solve(np.eye(4) * 3.0 + np.outer({0}, {0}) * 0.1, {1})".format(
                    self.leaf((4,)), sub((4,))),
                "np.linalg.inv(np.eye(4) * 2.0 + {} * 0.1) @ {}".format(sub((4, 4)), sub((4,))),
                "({}).T[:, 0]".format(sub((3, 4))), "np.flip({})".format(sub((4,))),
                "np.sort({})".format(sub((4,))),
                "({})[np.array([0, 2, 2, 1])]".format(sub((4,))),
                "np.diff({})".format(sub((4,))) + "[np.array([0, 1, 2, 2])]",
                "({}).sum(axis=0)".format(sub((3, 4))), "({}).mean(axis=-2)".format(sub((3, 4))),
                "np.dot({}, {})".format(sub((3,)), sub((3, 4))),
                "({}).dot({})".format(sub((4, 4)), sub((4,))),
                "np.squeeze({})".format(sub((1, 4))), "({}).ravel()".format(sub((1, 4))),
                "np.take({}, [3, 1, 0, 2])".format(sub((4,))),
                "np.diag({})".format(sub((4, 4))), "np.exp({0}) / np.sum(np.exp({0}))".format(
                    self.leaf((4,))),
                "({0}) * ({0} > c)".format(sub((4,))), "np.arange(4) * ({})".format(sub((4,))),
                "np.cumprod(np.tanh({}) + 1.0)".format(sub((4,))),
                "np.matmul({}, {})".format(sub((4, 4)), sub((4,))),
                "({}).max(axis=0)".format(sub((3, 4))),
                "np.max({}, axis=(0, 1)) * ({})".format(sub((3, 4)), sub((4,))),
            ])
        if shape == (3, 4):
            self.features.add("structural")
            return rng.choice([
                "np.stack([{}, {}, {}])".format(sub((4,)), sub((4,)), sub((4,))),
                "np.vstack([{}, np.ones((2, 4)) * c])".format(sub((1, 4))),
                "np.concatenate([{}, {}], axis=1)".format(sub((3, 1)), "({})[:, 1:]".format(
                    sub((3, 4)))),
                "np.transpose(({}).T)".format(sub((3, 4))),
                "np.linalg.solve(np.eye(3) * 2.0 + {} * 0.1, {})".format(sub((3, 3)), sub((3, 4))),
                "np.einsum('ij,jk->ik', {}, {})".format(sub((3, 3)), sub((3, 4))),
                "({}) * ({})".format(sub((3, 1)), sub((1, 4))),
                "np.broadcast_to({}, (3, 4))".format(sub((4,))),
                "np.tile({}, (3, 1))".format(sub((1, 4))),
                "({})[:, None] * ({})[None, :]".format(sub((3,)), sub((4,))),
                "np.expand_dims({}, 1) + ({})".format(sub((3,)), sub((3, 4))),
                "np.triu(np.ones((3, 4)), 1) * ({})".format(sub((3, 4))),
                "np.where({0} > c, {0}, {1})".format(sub((3, 4)), sub((1, 4))),
                "({}).T.reshape(4, 3).T".format(sub((3, 4))),
            ])
        if shape == ():
            self.features.add("linalg")
            return rng.choice([
                "np.linalg.det(np.eye(3) + {} * 0.2)".format(sub((3, 3))),
                "np.sum(np.linalg.inv(np.eye(3) * 2.0 + {} * 0.1))".format(sub((3, 3))),
                "float({})".format(sub(())),
                "({})[1, 2]".format(sub((3, 4))),
                "np.einsum('ij,ij->', {}, {})".format(sub((3, 4)), sub((3, 4))),
                "np.einsum('i,i', {}, {})".format(sub((4,)), sub((4,))),
                "({}) @ ({})".format(sub((4,)), sub((4,))),
                "np.sum(np.linalg.solve(np.eye(3) * 2.0 + {} * 0.1, {}))".format(
                    sub((3, 3)), sub((3,)))])
        if shape == (3, 3):
            self.features.add("linalg")
            return rng.choice(["np.linalg.inv(np.eye(3) * 2.0 + {} * 0.1)".format(sub((3, 3))),
                               "({}).T".format(sub((3, 3)))])
        return self.reduction(shape, depth)

    # -- statements -------------------------------------------------------
    def writable(self, shape=None):
        return [n for n in sorted(self.owned) if shape is None or self.env[n] == shape]

    def statement(self, depth):
        """Lines of one random statement (indented relative to its block)."""
        rng = self.rng
        kind = rng.random()
        if kind < 0.14:
            shape = rng.choice(SHAPES)
            value = self.expr(shape)
            name = self.fresh()
            self.env[name] = shape
            # a bare name, slice or reshape is a view: written into only at a risk
            if not re.fullmatch(r"[\w.]+(\[[^\]]*\])*(\.T|\.reshape\(.*\))?", value) or \
                    self.rng.random() < 0.15:
                self.owned.add(name)
            return ["{} = {}".format(name, value)]
        if kind < 0.28:
            return ["s = s + {} * 0.2".format(self.expr(()))] if rng.random() < 0.5 else \
                   ["s += np.sum({}) * 0.1".format(self.expr(rng.choice(SHAPES)))]
        if kind < 0.36:
            name = rng.choice(sorted(n for n in self.env if n not in ("x", "M", "c", "s")))
            shape = self.env[name]
            op = rng.choice(["{0} = np.tanh({1}) * 0.9", "{0} = {0} * 0.5 + {1} * 0.1",
                             "{0} += np.sin({1}) * 0.1", "{0} *= np.cos({1})",
                             "{0} -= {1} * 0.2", "{0} /= 1.5 + np.tanh({1})"])
            self.features.add("augassign")
            operand = shape
            if not op.startswith("{0} = np.tanh"):
                operand = rng.choice([shape] + [o for o in SHAPES if broadcastable(o, shape)])
            if operand != shape:
                self.features.add("broadcast_update")
            return [op.format(name, self.expr(operand))]
        if kind < 0.55:
            return self.write()
        if kind < 0.62:
            return self.view_or_copy()
        if kind < 0.67:
            return self.helper_call()
        if kind < 0.72:
            return self.alias()
        if kind < 0.76:
            return self.global_use()
        if kind < 0.80:
            return self.param_write()
        if depth >= 2:
            return ["s = s + np.sum({}) * 0.1".format(self.expr((4,)))]
        if kind < 0.88:
            return self.branch(depth)
        return self.loop(depth)

    def write(self):
        rng = self.rng
        self.features.add("write")
        targets = self.writable()
        if not targets:
            return ["y = y * 1.0"]
        name = rng.choice(targets)
        shape = self.env[name]
        c = self.const()
        if shape == ():
            return ["{} = {} + {}".format(name, name, self.expr(()))]
        one = "0" if len(shape) == 1 else "0, 0"
        options = [
            "{0}[{0} > {1}] = {2}".format(name, c, self.expr(())),
            "{0}[{0} > c] = c * 0.5".format(name),
            "{0}[{0} < {1}] = {0}[{0} < {1}] * c".format(name, c),
            "{0}[np.abs({0}) > 0.5] *= 0.5".format(name),
            "{0}[np.argmax({0})] = 0.0".format(name) if len(shape) == 1 else
            "{0}[np.unravel_index(np.argmax({0}), {0}.shape)] = 0.0".format(name),
            "{0}[np.argmin({0})] = c".format(name) if len(shape) == 1 else
            "{0}.flat[np.argmin({0})] = c".format(name),
            "{}[{}] = {}".format(name, one, self.expr(())),
            "{}[{}] += {}".format(name, one, self.expr(())),
            "{0}[{1}] = {0}[{1}] * {2}".format(name, one, self.expr(())),
            "{0}[{0} > 0.0] += c".format(name),
            "{0}[:] = {1}".format(name, self.expr(shape)),
            "{0}[...] = np.tanh({0}) * c".format(name),
        ]
        if shape[0] >= 3:
            sl = (2,) + shape[1:]
            options += ["{}[1:3] += {}".format(name, self.expr(sl)),
                        "{}[1:3] = {}".format(name, self.expr(sl)),
                        "{}[::2] *= {}".format(name, self.expr(()))]
        if shape[0] == 4:
            options += ["{}[[0, 2]] = {}".format(name, self.expr((2,) + shape[1:])),
                        "{}[np.array([1, 1])] += c".format(name),
                        "{}[[3, 0]] -= {}".format(name, self.expr((2,) + shape[1:]))]
        if shape in ((3, 4), (4, 4)):
            options += ["{}[:, 0] = {}".format(name, self.expr((shape[0],))),
                        "{}[1, :] *= {}".format(name, self.expr((shape[1],))),
                        "{0}[{0} > c] = {0}[{0} > c] ** 2".format(name)]
            options += ["{}[0][1] = c".format(name)] * self.risk()
            options += ["{}[1] = c".format(name), "{}[:, 2] = s".format(name),
                        "{0}[:, 1:] = {0}[:, :-1] * c".format(name),
                        "{}[[0, 2], [1, 3]] = {}".format(name, self.expr((2,))),
                        "{0}[{0} > c] = {1}".format(name, self.expr(())),
                        "{0}[-1] += {0}[0] * c".format(name)]
        if shape == (4,):
            options += ["{0}[x > 0.0] = M[0][x > 0.0] * c".format(name),
                        "{0}[1:3] = {0}[2:4]".format(name), "{0}[::-1] = {0} * c".format(name),
                        "{0}[-2:] += {1}".format(name, self.expr((2,))),
                        "{0}[np.where({0} > c)[0]] = 0.5".format(name),
                        "{0} *= {0}[::-1]".format(name), "{0} += {0}[0]".format(name)]
        return [rng.choice(options)]

    def view_or_copy(self):
        rng = self.rng
        name = rng.choice(self.writable() or ["y"])
        shape = self.env[name]
        b = self.fresh()
        self.features.add("view")
        if shape == ():
            return ["{} = {} * 1.0".format(b, name)]
        kind = rng.random()
        if kind < 0.4 or not self.risk():   # a copy: written, the original stays
            self.env[b] = shape
            self.owned.add(b)
            copy = rng.choice(["{}.copy()", "np.copy({})", "np.array({})", "{}[:].copy()",
                               "{} + 0.0"]).format(name)
            return ["{} = {}".format(b, copy), "{}[{}] = {}".format(
                b, "0" if len(shape) == 1 else "0, 0", self.expr(())),
                "s = s + np.sum({} * {}) * 0.1".format(b, name)]
        if shape[0] >= 2:
            view, vshape = rng.choice([("{}[::2]", ((shape[0] + 1) // 2,) + shape[1:]),
                                       ("{}[1:]", (shape[0] - 1,) + shape[1:]),
                                       ("{}[:]", shape), ("{}[::-1]", shape)])
        else:
            view, vshape = "{}[:]", shape
        if len(shape) == 2 and rng.random() < 0.4:
            view, vshape = rng.choice([("{}.T", shape[::-1]), ("{}[0]", shape[1:]),
                                       ("{}[:, 0]", shape[:1])])
        if shape == (4,) and rng.random() < 0.3:
            view, vshape = "{}.reshape(2, 2)", (2, 2)
        lines = ["{} = {}".format(b, view.format(name))]
        write = rng.choice(["{0} *= c", "{0} += {1}", "{0}[0] = c", "{0}[...] = {0} * {1}",
                            "{0}[{0} > 0.0] = 0.1"])
        lines.append(write.format(b, "c * 0.3"))
        self.env[b] = vshape
        self.features.add("view_write")
        return lines

    def helper_call(self):
        rng = self.rng
        self.features.add("helper")
        a = rng.choice(self.writable((4,)) or ["y"])
        kind = rng.randrange(9)
        k = rng.choice(["c", "c * 0.5", self.const()])
        if kind == 0:
            return ["{} = h_scale({}, {})".format(a, self.expr((4,)), k)]
        if kind == 1:
            return ["s = s + np.sum(h_norm({})) * c".format(self.expr((4,)))]
        if kind in (2, 3, 4, 5) and not self.risk():
            kind = 0
        if kind == 5 and rng.random() < 0.5:
            self.features.add("helper_view")
            return ["w_head = h_head({})".format(a), "w_head[1] = c"]
        if kind == 2:
            self.features.add("helper_write")
            return ["h_write({}, {})".format(a, k)] if rng.random() < 0.5 else \
                   ["{0} = h_write({0}, {1})".format(a, k)]
        if kind == 3:
            self.features.add("same_twice")
            b = rng.choice([a, a, "x"])
            return ["s = s + h_add({}, {}) * 0.1".format(a, b)]
        if kind == 4:
            self.features.add("helper_write")
            return ["{0} = h_mask({0}, {1})".format(a, k)]
        if kind == 5:
            self.features.add("helper_write")
            return ["h_view({}, {})".format(a, k)]
        if kind == 6:
            return ["{} = h_loop({}, {})".format(a, self.expr((4,)), rng.randint(1, 3))]
        if kind == 7:
            b = self.fresh()
            self.env[b] = ()
            return ["{0}, {1} = h_pair({0}, {2})".format(a, b, k), "s = s + {} * 0.1".format(b)]
        return ["s = s + h_early({}, {})".format(self.expr((4,)), k)]

    def alias(self):
        rng = self.rng
        self.features.add("cond_alias")
        candidates = self.writable((4,)) + ["x"]
        a, b = rng.choice(candidates), rng.choice(candidates)
        n = self.fresh()
        cond = rng.choice(["c > {}".format(self.const()), "np.sum({}) > 0.0".format(a),
                           "{}[0] > {}[1]".format(a, b)])
        lines = ["{} = {} if {} else {}".format(n, a, cond, b)]
        self.env[n] = (4,)
        after = ["s = s + np.sum({} * c)".format(n), "{} = {} * 0.5".format(n, n)]
        if self.risk():
            after = ["{}[1] = c".format(n), "{} *= 0.5".format(n)]
        after = rng.choice(after)
        return lines + [after]

    def global_use(self):
        rng = self.rng
        self.features.add("global")
        if self.risk() and not self.global_write:
            # first in f: f reads only what it wrote there, so f stays a function of its
            # arguments (derivo.jacobian calls it several times)
            self.global_write = rng.choice([["G[1] = c * 0.5"],
                                            ["G[:] = np.array([0.3, -0.4, 0.8, 0.1]) * c"]])
            return ["s = s + np.sum(G * y) * 0.1"]
        return rng.choice([["s = s + np.sum(G * {}) * 0.1".format(self.expr((4,)))],
                           ["s = s + G @ x"], ["s = s + np.sum(G[G > 0.0] * c)"]])

    def param_write(self):
        rng = self.rng
        if not self.risk():
            if rng.random() < 0.5:
                return self.integer_write()
            return ["s = s + np.sum(x * M[0]) * c"]
        self.features.add("param_write")
        return rng.choice([["x[0] = c"], ["x += c * 0.1"], ["M[1] *= c"], ["x[x > 0.0] = 0.0"],
                           ["M[:, 1] = np.tanh(x[:3])"], ["x[np.argmax(x)] = c * x[0]"]])

    def integer_write(self):
        """A float written into an integer or bool array: NumPy truncates it."""
        rng = self.rng
        self.features.add("integer_write")
        make = rng.choice(["np.arange(4)", "np.zeros(4, dtype=int)", "np.full(4, 2)",
                           "np.array([1, 2, 3, 4])", "x > 0.0", "np.ones(4, dtype=np.int64)"])
        write = rng.choice(["k_int[0] = c * 7.0", "k_int[1:3] = x[1:3] * 9.0",
                            "k_int[x > 0.0] = x[x > 0.0] * c * 5.0", "k_int[:] = y * 6.0"])
        return ["k_int = " + make, write, "s = s + np.sum(k_int * y) * 0.1"]

    def block(self, depth, count):
        saved_env, saved_owned = dict(self.env), set(self.owned)
        lines = []
        for _ in range(count):
            lines += ["    " + line for line in self.statement(depth + 1)]
        # names made in the block are not known after it (a branch may not run)
        for name in set(self.env) - set(saved_env):
            del self.env[name]
        self.env.update({n: s for n, s in saved_env.items() if self.env.get(n) != s})
        self.owned = {n for n in self.owned if n in saved_owned or n in self.env}
        return lines or ["    pass"]

    def branch(self, depth):
        rng = self.rng
        self.features.add("branch")
        a = rng.choice(self.of_shape((4,)))
        cond = rng.choice(["np.sum({}) > c".format(a), "{}[0] > 0.0".format(a),
                           "np.max({}) > {}".format(a, self.const()),
                           "np.any({} > c)".format(a), "np.all({} > -1.0)".format(a),
                           "s > {}".format(self.const())])
        lines = ["if {}:".format(cond)] + self.block(depth, rng.randint(1, 3))
        if rng.random() < 0.6:
            lines += ["else:"] + self.block(depth, rng.randint(1, 2))
        return lines

    def loop(self, depth):
        rng = self.rng
        self.features.add("loop")
        kind = rng.randrange(6 if depth == 0 else 5)   # a return inside an if: at the top
        i = "i{}".format(depth)
        if kind == 0:
            head = "for {} in range({}):".format(i, rng.randint(1, 4))
            body = self.block(depth, rng.randint(1, 3))
            if rng.random() < 0.4:
                self.features.add("break")
                body += ["    if np.sum(y) > {}:".format(self.const()), "        break"]
            return [head] + body
        if kind == 1:
            row, other = self.fresh(), self.fresh()
            src = rng.choice(["M", "Z", "zip(M, Z)", "zip(Z, M[::-1])"])
            self.env[row] = (4,)
            names = row if not src.startswith("zip") else "{}, {}".format(row, other)
            if src.startswith("zip"):
                self.env[other] = (4,)
            body = self.block(depth, rng.randint(1, 2))
            self.env.pop(row)
            self.env.pop(other, None)
            return ["for {} in {}:".format(names, src),
                    "    s = s + np.sum({} * y) * 0.1".format(row)] + body
        if kind == 2:
            self.features.add("while")
            n = self.fresh()
            body = self.block(depth, rng.randint(1, 2))
            return ["{} = 0".format(n),
                    "while {} < 3 and np.sum(y * y) > 0.01:".format(n),
                    "    y = y * 0.8 + np.tanh(c) * 0.05"] + body + ["    {} += 1".format(n)]
        if kind == 3:
            self.features.add("list_stack")
            L, S = self.fresh(), self.fresh()
            update = self.expr((4,))
            self.env[S] = (3, 4)
            self.owned.add(S)
            return ["{} = []".format(L), "for {} in range(3):".format(i),
                    "    {}.append(y * c ** {})".format(L, i), "    y = np.tanh(y + {})".format(
                        update),
                    "{} = {}({})".format(S, rng.choice(["np.stack", "np.array", "np.vstack"]), L)]
        if kind == 4:
            self.features.add("loop_write")
            a = rng.choice(self.writable((4,)) or ["y"])
            return ["for {} in range(4):".format(i),
                    "    if {}[{}] > c:".format(a, i),
                    "        {}[{}] = {}[{}] * 0.5".format(a, i, a, i),
                    "    else:",
                    "        s = s + {}[{}] * c".format(a, i)]
        self.features.add("early_return")
        return ["for {} in range(4):".format(i),
                "    s = s + np.tanh(y[{}] * c)".format(i),
                "    if s > {}:".format(round(rng.uniform(0.5, 2.0), 2)),
                "        return " + self.result]

    def program(self):
        body = []
        for _ in range(self.rng.randint(3, 8)):
            body += self.statement(0)
        tail = [self.result, "np.sum(Z) * 0.05"]
        extra = [n for n, s in self.env.items() if n.startswith("q") and s != ()]
        for n in self.rng.sample(extra, min(2, len(extra))):
            tail.append("np.sum({} * {}) * 0.05".format(n, n))
        lines = ["def f(x, M, c):"] + ["    " + line for line in self.global_write]
        lines += ["    s = 0.0", "    y = x * 1.0", "    Z = M * 0.5"]
        lines += ["    " + line for line in body]
        lines.append("    return " + " + ".join(tail))
        return PRELUDE + "\n\n" + "\n".join(lines) + "\n"


RESULTS = {"float": "s + np.sum(y * y) * 0.1", "vector": "y * s + np.sum(Z, axis=0) * 0.1",
           "matrix": "Z * s + y * 0.1"}


def program(seed):
    draw = random.Random(-seed - 1).random()
    vector = "vector" if draw < 0.15 else "matrix" if draw < 0.25 else None
    gen = Gen(random.Random(seed), vector)
    return gen.program(), sorted(gen.features) + ["vector_result"] * bool(vector)


# ---------------------------------------------------------------------------
# the checks
# ---------------------------------------------------------------------------

def load(source, name, directory):
    path = Path(directory) / (name + ".py")
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


G0 = np.array([0.3, -0.4, 0.8, 0.1])


def reset(f):
    """Give the module's global array G back its first values, in place (f may write it)."""
    held = getattr(f, "__globals__", {}).get("G")
    if held is not None:
        held[:] = G0


def fresh(f=None):
    if f is not None:
        reset(f)
    return [np.array(v, dtype=float) if isinstance(v, np.ndarray) else v for v in ARGS]


def call(f, values):
    reset(f)
    return f(*[v.copy() if isinstance(v, np.ndarray) else v for v in values])


def differences(f, h, side=0):
    """Differences of f at ARGS, one array per argument, of shape f's result's shape
    + the argument's: central (side 0), forward (side 1) or backward (side -1)."""
    base = call(f, ARGS) if side else None
    gradient = []
    for position, value in enumerate(ARGS):
        flat = np.atleast_1d(np.array(value, dtype=float)).ravel()
        parts = []
        for j in range(flat.size):
            up, down = flat.copy(), flat.copy()
            up[j] += h
            down[j] -= h
            shaped = (lambda w: float(w[0])) if not isinstance(value, np.ndarray) else \
                (lambda w: w.reshape(value.shape))
            hi = call(f, ARGS[:position] + (shaped(up),) + ARGS[position + 1:]) \
                if side >= 0 else base
            lo = call(f, ARGS[:position] + (shaped(down),) + ARGS[position + 1:]) \
                if side <= 0 else base
            parts.append((np.asarray(hi) - lo) / (2 * h if side == 0 else h))
        parts = np.moveaxis(np.array(parts), 0, -1)
        gradient.append(parts.reshape(parts.shape[:-1] + np.shape(value)))
    return gradient


class Problem(Exception):
    def __init__(self, mode, kind, detail):
        super().__init__("{}: {}: {}".format(mode, kind, detail))
        self.mode, self.kind, self.detail = mode, kind, detail


def close(got, want, rtol=1e-4, mask=None):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    if got.shape != want.shape:
        return False
    scale = 1e-6 * max(1.0, float(np.nanmax(np.abs(want), initial=0.0)))
    near = np.isclose(got, want, rtol=rtol, atol=scale, equal_nan=True)
    return bool(np.all(near | ~mask)) if mask is not None else bool(np.all(near))


def unchanged(mode, values):
    for value, original, name in zip(values, ARGS, NAMES):
        if isinstance(original, np.ndarray) and not np.array_equal(value, original):
            raise Problem(mode, "caller's array changed", "{}: {!r} -> {!r}".format(
                name, original.tolist(), value.tolist()))


LOCATION = re.compile(r"hunt_arrays_\d+\.py:\d+:\d+")


class Checker:
    def __init__(self, module, directory):
        self.module, self.f, self.directory = module, module.f, directory
        self.value = call(self.f, ARGS)
        self.out = np.shape(self.value)   # () for a float result
        fine, coarse = differences(self.f, 1e-6), differences(self.f, 1e-4)
        ahead, behind = differences(self.f, 1e-6, 1), differences(self.f, 1e-6, -1)
        self.fd = fine
        self.reliable = [np.isclose(a, b, rtol=1e-4, atol=1e-6) & np.isfinite(a) &
                         np.isclose(p, m, rtol=1e-3, atol=1e-5)
                         for a, b, p, m in zip(fine, coarse, ahead, behind)]
        self.gradients = {}
        self.pullback = None      # (cotangent, vjp) of an array result
        self.problems, self.refusals = [], {}

    def run(self, mode, function):
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                function()
        except derivo.DerivoError as error:
            text = str(error)
            self.refusals[mode] = text.splitlines()[0][:300]
            if not LOCATION.search(text):
                self.problems.append(Problem(mode, "refusal without location", text[:300]))
        except Problem as problem:
            self.problems.append(problem)
        except Exception as error:  # noqa: BLE001 -- any other exception is the finding
            self.problems.append(Problem(mode, "crash", "{}: {}".format(
                type(error).__name__, str(error).splitlines()[0][:200] if str(error) else "")))

    def compare(self, mode, gradient, value=None):
        if not isinstance(gradient, tuple) or len(gradient) != 3:
            raise Problem(mode, "structure", repr(gradient)[:200])
        for g, a, name in zip(gradient, ARGS, NAMES):
            if np.shape(g) != np.shape(a):
                raise Problem(mode, "structure", "d/d{} of shape {}".format(name, np.shape(g)))
        if value is not None and not close(value, self.value, 1e-12):
            raise Problem(mode, "primal value", "{!r}, f gives {!r}".format(value, self.value))
        for g, fd, ok, name in zip(gradient, self.fd, self.reliable, NAMES):
            if not close(g, fd, 1e-4, ok):
                raise Problem(mode, "wrong", "d/d{}: {!r}, differences give {!r}".format(
                    name, np.round(g, 6).tolist(), np.round(fd, 6).tolist()))
        self.gradients[mode] = gradient

    def grad(self, loops):
        options = {"loops": loops}
        if loops == "checkpoint":
            options["checkpoints"] = 2
        values = fresh(self.f)
        gradient = derivo.grad(self.f, wrt=(0, 1, 2), **options)(*values)
        unchanged("grad:" + loops, values)
        self.compare("grad:" + loops, gradient)

    def grad_of_c(self):
        """grad in c alone: x and M are constants, what only c reaches varies."""
        values = fresh(self.f)
        g = derivo.grad(self.f, wrt=2)(*values)
        unchanged("grad:c", values)
        if np.ndim(g) != 0 or not close(g, self.fd[2], 1e-4, self.reliable[2]):
            raise Problem("grad:c", "wrong", "d/dc: {!r}, differences give {!r}".format(
                g, self.fd[2]))
        self.gradients["grad:c"] = (self.fd[0], self.fd[1], g)

    def jvp_of_c(self):
        """jvp along c with None for x and M (symbolic zeros)."""
        values = fresh(self.f)
        value, slope = derivo.jvp(self.f, values, [None, None, 1.0])
        unchanged("jvp:c", values)
        if not close(value, self.value, 1e-12):
            raise Problem("jvp:c", "primal value", "{!r}, f gives {!r}".format(value, self.value))
        if not close(slope, self.fd[2], 1e-4, self.reliable[2]):
            raise Problem("jvp:c", "wrong", "{!r}, differences give {!r}".format(
                slope, self.fd[2]))

    def value_and_grad(self):
        values = fresh(self.f)
        value, gradient = derivo.value_and_grad(self.f, wrt=(0, 1, 2))(*values)
        unchanged("value_and_grad", values)
        self.compare("value_and_grad", gradient, value)

    def vjp(self):
        values = fresh(self.f)
        value, vjp_fn = derivo.vjp(self.f, *values)
        if self.out:
            return self.vjp_of_array(value, vjp_fn, values)
        gradient = tuple(np.asarray(g) / 2.5 if g is not None else g for g in vjp_fn(2.5))
        gradient = (gradient[0], gradient[1], float(gradient[2]))
        unchanged("vjp", values)
        self.compare("vjp", gradient, value)

    def vjp_of_array(self, value, vjp_fn, values):
        """vjp of an array result: against the cotangent contracted with differences."""
        cotangent = np.random.default_rng(2).normal(size=self.out)
        gradient = vjp_fn(cotangent)
        unchanged("vjp", values)
        if not close(value, self.value, 1e-12):
            raise Problem("vjp", "primal value", "{!r}, f gives {!r}".format(value, self.value))
        axes = len(self.out)
        for g, fd, ok, name in zip(gradient, self.fd, self.reliable, NAMES):
            want = np.tensordot(cotangent, fd, axes=axes)
            mask = np.all(ok.reshape((-1,) + fd.shape[axes:]), axis=0)
            if np.shape(g) != np.shape(want) or not close(g, want, 1e-4, mask):
                raise Problem("vjp", "wrong", "d/d{}: {!r}, differences give {!r}".format(
                    name, np.round(g, 6).tolist(), np.round(want, 6).tolist()))
        self.pullback = (cotangent, gradient)

    def jvp(self, mode):
        values = fresh(self.f)
        rng = np.random.default_rng(1)
        direction = [rng.normal(size=4), rng.normal(size=(3, 4)), 0.7]
        if mode == "tangent":
            df = derivo.tangent(self.f, wrt=(0, 1, 2))
            value, slope = df(*direction, *values)
        else:
            value, slope = derivo.jvp(self.f, values, direction)
        unchanged(mode, values)
        if not close(value, self.value, 1e-12):
            raise Problem(mode, "primal value", "{!r}, f gives {!r}".format(value, self.value))
        if all(np.all(ok) for ok in self.reliable):
            want = self.along(self.fd, direction)
            if not close(slope, want, 1e-4):
                raise Problem(mode, "wrong", "{!r}, differences give {!r}".format(slope, want))
        self.gradients[mode] = (slope, direction)

    def along(self, jacobians, direction):
        """The Jacobians (result shape + argument shape) applied to a direction."""
        return sum(np.tensordot(j, d, axes=np.ndim(d)) for j, d in zip(jacobians, direction))

    def jacobian(self, mode):
        values = fresh(self.f)
        label = "jacobian:" + mode
        blocks = derivo.jacobian(self.f, wrt=(0, 2), mode=mode)(*values)
        unchanged(label, values)
        if not (isinstance(blocks, tuple) and len(blocks) == 2 and
                np.shape(blocks[0]) == self.out + (4,) and np.shape(blocks[1]) == self.out):
            raise Problem(label, "structure", repr(blocks)[:200])
        for block, position in zip(blocks, (0, 2)):
            if not close(block, self.fd[position], 1e-4, self.reliable[position]):
                raise Problem(label, "wrong", "d/d{}: {!r}, differences give {!r}".format(
                    NAMES[position], block, self.fd[position]))

    def hessian(self, position):
        label = "hessian:" + NAMES[position]
        values = fresh(self.f)
        h = derivo.hessian(self.f, wrt=position)(*values)
        unchanged(label, values)
        grad = derivo.grad(self.f, wrt=position)

        def df(*args):
            reset(self.f)
            return grad(*args)

        value = ARGS[position]
        flat = np.atleast_1d(np.array(value, dtype=float))
        rows = []
        for e in (1e-6, 1e-4):
            columns = []
            for j in range(flat.size):
                up, down = flat.copy(), flat.copy()
                up[j] += e
                down[j] -= e
                shaped = (lambda w: float(w[0])) if position == 2 else (lambda w: w)
                columns.append((call(df, ARGS[:position] + (shaped(up),) + ARGS[position + 1:]) -
                                call(df, ARGS[:position] + (shaped(down),) + ARGS[position + 1:]))
                               / (2 * e))
            rows.append(np.array(columns).reshape(np.shape(value) * 2))
        ok = np.isclose(rows[0], rows[1], rtol=1e-4, atol=1e-5) & self.smooth(position)
        if np.shape(h) != np.shape(rows[0]) or not close(h, rows[0], 1e-4, ok):
            raise Problem(label, "wrong", "{!r}, differences of grad give {!r}".format(
                np.round(h, 6).tolist(), np.round(rows[0], 6).tolist()))

    def smooth(self, position):
        return bool(np.all(self.reliable[position]))

    def saved(self):
        df = derivo.grad(self.f, wrt=(0, 1, 2))
        want = df(*fresh(self.f))
        path = Path(self.directory) / "saved_hunt_{}.py".format(os.getpid())
        df.save(path, overwrite=True)
        script = ("import importlib.util, numpy as np, sys\n"
                  "spec = importlib.util.spec_from_file_location('saved', sys.argv[1])\n"
                  "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
                  "x = np.array({}); M = np.array({})\n"
                  "g = getattr(m, sys.argv[2])(x, M, {})\n"
                  "assert x.tolist() == {} and M.tolist() == {}, 'caller arrays changed'\n"
                  "print(repr([np.asarray(v).tolist() for v in g]))\n").format(
                      X.tolist(), M.tolist(), C, X.tolist(), M.tolist())
        run = subprocess.run([sys.executable, "-c", script, str(path), df.__name__],
                             capture_output=True, text=True, timeout=120)
        if run.returncode:
            raise Problem("save", "saved module fails", run.stderr.strip().splitlines()[-1][:200])
        got = eval(run.stdout, {"nan": float("nan"), "inf": float("inf")})  # noqa: S307
        for g, w in zip(got, want):
            if not close(g, w, 1e-10):
                raise Problem("save", "wrong", "{!r}, in process {!r}".format(got, want))

    def agreement(self):
        if self.pullback is not None and "jvp" in self.gradients:
            # <cotangent, J d> = <J^T cotangent, d>: derivo's vjp against its jvp
            (cotangent, gradient), (slope, direction) = self.pullback, self.gradients["jvp"]
            left = float(np.sum(cotangent * slope))
            right = float(sum(np.sum(np.asarray(g) * d) for g, d in zip(gradient, direction)))
            if not close(left, right, 1e-6):
                self.problems.append(Problem("vjp", "disagrees with jvp", "{!r} vs {!r}".format(
                    right, left)))
        full = {m: g for m, g in self.gradients.items() if not m.startswith(("jvp", "tangent"))}
        if "grad:stack" not in full:
            return
        reference = full["grad:stack"]
        for mode, gradient in full.items():
            for g, r, name in zip(gradient, reference, NAMES):
                if mode == "grad:c" and name != "c":
                    continue
                if not close(g, r, 1e-6):
                    self.problems.append(Problem(mode, "disagrees with grad:stack",
                                                 "d/d{}: {!r} vs {!r}".format(name, g, r)))
        for mode in ("jvp", "tangent"):
            if mode in self.gradients:
                slope, direction = self.gradients[mode]
                want = self.along(reference, direction)
                if not close(slope, want, 1e-6):
                    self.problems.append(Problem(mode, "disagrees with grad:stack",
                                                 "{!r} vs {!r}".format(slope, want)))


MODES = ("grad:stack", "grad:checkpoint", "grad:reversible", "grad:c", "value_and_grad", "vjp",
         "jvp", "jvp:c", "tangent", "hessian:c", "hessian:x", "jacobian:forward",
         "jacobian:reverse", "save")


def check(seed, directory, heavy=None, save=None):
    """(features, problems, refusals, modes, source), or None when f itself fails."""
    source, features = program(seed)
    rng = random.Random(seed + 10 ** 6)
    heavy = rng.random() < 0.4 if heavy is None else heavy
    save = rng.random() < 0.06 if save is None else save
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            module = load(source, "hunt_arrays_{}".format(seed), directory)
            checker = Checker(module, directory)
        except Exception:  # noqa: BLE001 -- not a program Python runs
            return None
    if not np.all(np.isfinite(checker.value)) or \
            not all(np.all(np.isfinite(g)) for g in checker.fd):
        return None
    scalar = not checker.out
    runs = [("grad:" + loops, lambda loops=loops: checker.grad(loops))
            for loops in ("stack", "checkpoint", "reversible")] * scalar
    runs += [("grad:c", checker.grad_of_c), ("value_and_grad", checker.value_and_grad)] * scalar
    runs += [("jvp:c", checker.jvp_of_c)]
    runs += [("vjp", checker.vjp), ("jvp", lambda: checker.jvp("jvp")),
             ("tangent", lambda: checker.jvp("tangent"))]
    runs += [("hessian:c", lambda: checker.hessian(2)),
             ("hessian:x", lambda: checker.hessian(0))] * (heavy and scalar)
    runs += [("jacobian:forward", lambda: checker.jacobian("forward")),
             ("jacobian:reverse", lambda: checker.jacobian("reverse"))] * (heavy or not scalar)
    runs += [("save", checker.saved)] * (save and scalar)
    for mode, function in runs:
        checker.run(mode, function)
    checker.agreement()
    sys.modules.pop("hunt_arrays_{}".format(seed), None)
    return features, checker.problems, checker.refusals, [m for m, _ in runs], source


# ---------------------------------------------------------------------------
# known failures: reason -> (modes or None for any, pattern of "problem\nsource")
# ---------------------------------------------------------------------------

KNOWN = {
    "a write through a repeated fancy index is refused at run time, without a location":
        (None, r"refusal without location: derivo does not differentiate a write through an "
               r"index that repeats a position"),
    "a second derivative's refusal names the def line, without a column":
        ({"hessian:c", "hessian:x"}, r"refusal without location: \S+:\d+: cannot differentiate "
                                     r"f a second time"),
}


def known(problem, source):
    for reason, (modes, pattern) in KNOWN.items():
        if (modes is None or problem.mode in modes) and \
                re.search(pattern, str(problem) + "\n" + source, re.S):
            return reason
    return None


CI_COUNT = 20
COUNT = int(os.environ.get("DERIVO_FUZZ_HUNT_ARRAYS", "0"))
SEEDS = list(range(COUNT or CI_COUNT))


@pytest.mark.parametrize("seed", SEEDS)
def test_array_program_in_every_mode(seed, tmp_path):
    result = check(seed, tmp_path, save=(seed == 0) or None)
    if result is None:
        pytest.skip("f itself fails or is not finite at the point")
    _, problems, _, _, source = result
    unknown = [p for p in problems if known(p, source) is None]
    assert not unknown, "\n".join(map(str, unknown)) + "\n" + source
    if problems:
        pytest.xfail("; ".join(sorted({known(p, source) for p in problems})))


def test_the_generator_draws_every_construct():
    drawn = set().union(*(program(seed)[1] for seed in range(200)))
    assert {"broadcast", "reduction", "where_clip", "linalg", "write", "view_write", "helper",
            "helper_write", "same_twice", "cond_alias", "global", "param_write", "branch",
            "loop", "break", "while", "list_stack", "loop_write", "early_return",
            "integer_write", "vector_result", "broadcast_update"} <= drawn


class Timeout(BaseException):
    """Not an Exception: the checks' ``except Exception`` must not take it for a crash."""


def _time_out(signum, frame):
    raise Timeout()


def main(argv):
    """``python tests/test_fuzz_hunt_arrays.py N [--start S]``: one JSON line per program
    (a program that takes more than 5 minutes is reported as a timeout)."""
    count = int(argv[0])
    start = int(argv[argv.index("--start") + 1]) if "--start" in argv else 0
    signal.signal(signal.SIGALRM, _time_out)
    with tempfile.TemporaryDirectory() as directory:
        for seed in range(start, start + count):
            signal.alarm(300)
            try:
                result = check(seed, directory)
            except Timeout:
                print(json.dumps({"seed": seed, "timeout": True}), flush=True)
                continue
            except Exception as error:  # noqa: BLE001 -- the harness's own failure, reported
                print(json.dumps({"seed": seed, "harness": repr(error)[:300]}), flush=True)
                continue
            finally:
                signal.alarm(0)
            with contextlib.suppress(Exception):
                if result is None:
                    print(json.dumps({"seed": seed, "skipped": True}), flush=True)
                    continue
                features, problems, refusals, modes, source = result
                print(json.dumps({
                    "seed": seed, "features": features, "modes": modes, "refusals": refusals,
                    "problems": [{"mode": p.mode, "kind": p.kind, "detail": p.detail[:400],
                                  "known": known(p, source)} for p in problems],
                }), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
