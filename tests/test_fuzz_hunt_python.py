"""Fuzzing the shapes of Python that real scalar code takes, in every mode.

tests/test_fuzz.py draws scalar control flow, tests/test_fuzz_programs.py NumPy
programs with aliases and writes; this draws what ordinary Python code around a
loss looks like (``FEATURES``): helpers with positional, keyword and keyword-only
parameters and (negative, closure-naming) defaults, ``*args``/``**kwargs``,
``functools.wraps`` decorators, nested defs and lambdas closing over locals,
functions passed as values (parameters, dicts and lists of them,
``functools.partial``), objects' methods and attributes, recursion whose depth the
data decides, conditional expressions, data-dependent ``while`` exits,
``break``/``continue``, ``try``/``except``, comprehensions, ``zip``/``enumerate``/
``reversed``/``sorted`` loops, builtins and the ``math`` module, ints, bools and
None among the floats, empty containers, deep expressions, long straight-line
code and module globals.  Each program is ::

    def f(P, x, y, n):      # P: parameters in a dict, list, tuple, dataclass or
        ...                 # NamedTuple (w, b floats, v 3 floats, k an int); n an int
        return s            # (or (s, aux) for has_aux)

entered directly, through a ``functools.wraps`` decorator, as a bound method
``MODEL.loss`` reading ``self`` or as a ``functools.partial``.  Each mode
(``MODES``) either refuses with a DerivoError naming ``file:line``, or gives a
gradient of P's structure that agrees with central differences where those are
reliable (h=1e-6 and h=1e-4 agree), a primal equal to f's value, and agrees with
the other modes.  Any other exception is a crash.

``KNOWN`` lists the classes derivo gets wrong today (xfail, not strict, keyed by
feature); delete an entry when its fix lands.  The default run checks ``CI_SEEDS``;
a long run::

    DERIVO_FUZZ_HUNT_PYTHON=500 python -m pytest -q -p no:cacheprovider tests/test_fuzz_hunt_python.py
    python tests/test_fuzz_hunt_python.py 3000 --start 0 > hunt.jsonl
"""

import contextlib
import dataclasses
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

X, Y, N = 0.7, -0.4, 3
LONG = "DERIVO_FUZZ_HUNT_PYTHON" in os.environ or __name__ == "__main__"

PRELUDE = '''\
import dataclasses
import functools
import math
from typing import NamedTuple

import numpy as np

GS = 0.3
GNEG = -0.25
GLIST = [0.1, -0.2, 0.3]
GDICT = {"a": 0.5, "b": -1.5}


@dataclasses.dataclass
class DParams:
    w: float
    b: float
    v: list
    k: int


class TParams(NamedTuple):
    w: float
    b: float
    v: list
    k: int


def scaled(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return 2.0 * fn(*args, **kwargs)
    return wrapper


def shifted(c):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(z, *args, **kwargs):
            return fn(z + c, *args, **kwargs)
        return wrapper
    return decorate


def make_scale(k):
    def g(z, k=k):
        return z * k
    return g


SC = make_scale(0.7)


class Lin:
    def __init__(self, a, c=0.1):
        self.a = a
        self.c = c

    def __call__(self, z):
        return self.a * z + self.c

    def apply(self, z, *, p=2):
        return self.a * z ** p + self.c * z

    def chain(self, z):
        return self.apply(z) + self(z)


LIN = Lin(0.6)
'''

#: helper name -> its source (module level)
HELPERS = {
    "h_kw": "def h_kw(a, b=-0.5, *, c=0.25):\n    return a * b + c * math.sin(a)\n",
    "h_closdef": "def h_closdef(z, fn=SC, q=GNEG):\n    return fn(z) + q * z * z\n",
    "h_var": ("def h_var(*args, **kwargs):\n    t = 0.0\n    for a in args:\n        t += a * a\n"
              "    return t * kwargs.get('scale', 1.0)\n"),
    "h_var2": ("def h_var2(first, *rest, scale=1.0, **extra):\n    t = first\n"
               "    for r in rest:\n        t = t * 0.5 + math.tanh(r)\n"
               "    for key in extra:\n        t = t + extra[key] * scale\n    return t\n"),
    "h_dec": "@scaled\ndef h_dec(z, c=0.5):\n    return z * z * c\n",
    "h_dec2": "@shifted(0.25)\ndef h_dec2(z, q=1.5):\n    return math.sin(z) * q\n",
    "h_dec3": "@scaled\n@shifted(-0.5)\ndef h_dec3(z):\n    if z > 0.0:\n        return z * z\n    return -z\n",
    "apply": "def apply(fn, z, *args):\n    return fn(z, *args)\n",
    "compose": "def compose(f1, f2):\n    return lambda z: f1(f2(z))\n",
    "acts": ("def sq(z):\n    return z * z\n\n\nACTS = {'tanh': math.tanh, 'sq': sq, "
             "'lin': lambda z: 0.5 * z + 0.1, 'lkw': functools.partial(h_kw, c=0.5)}\n"
             "FNS = [math.sin, sq, SC, LIN]\n"),
    "rec": ("def rec(z, d=0):\n    if abs(z) < 0.05 or d > 8:\n        return z\n"
            "    return math.sin(z) + rec(z * 0.5, d + 1)\n"),
    "rec2": ("def rec2(z, n):\n    if n <= 0:\n        return z\n"
             "    return rec2(z * 0.9 + 0.1 * math.cos(z), n - 1) if z > -2.0 else z\n"),
    "fib": ("def fib(z, n):\n    if n < 2:\n        return z\n"
            "    return 0.5 * fib(z, n - 1) + 0.25 * fib(z * z, n - 2)\n"),
    "h_opt": ("def h_opt(z, flag=None, k=2, on=True):\n    if flag is None:\n        flag = z > 0\n"
              "    if flag and on:\n        return z ** k\n    return -z * k\n"),
    "h_tuple": "def h_tuple(a, b):\n    return a + b, a * b\n",
    "h_loop": ("def h_loop(z, n, *, step=0.3):\n    acc = 0.0\n    for i in range(n):\n"
               "        if i == 2:\n            continue\n        acc += math.sin(z * step * i)\n"
               "    return acc\n"),
    "h_early": ("def h_early(z, limit=-1.0):\n    if z < limit:\n        return 0.0\n"
                "    r = z\n    while r > 0.2:\n        r = r * 0.7\n    return r + z\n"),
    "h_try": ("def h_try(z):\n    try:\n        return math.sqrt(z)\n    except ValueError:\n"
              "        return -math.sqrt(-z)\n"),
    "h_list": ("def h_list(zs, scale=1.0):\n    out = []\n    for z in zs:\n"
               "        out.append(z * scale)\n    return out\n"),
    "h_dict": ("def h_dict(a, b):\n    return {'sum': a + b, 'prod': a * b, 'tag': 'x', 'n': 2}\n"),
    "h_nt": ("class Pair(NamedTuple):\n    lo: float\n    hi: float\n\n\n"
             "def h_nt(a, b):\n    return Pair(min(a, b), max(a, b))\n"),
    "h_dc": ("@dataclasses.dataclass\nclass Acc:\n    total: float = 0.0\n    count: int = 0\n\n"
             "    def add(self, z):\n        return Acc(self.total + z, self.count + 1)\n"),
    "h_kwcall": "def h_kwcall(*, alpha, beta=-1.0):\n    return alpha * beta + alpha ** 2\n",
}


class Ctx:
    """What one program draws: its helpers and a counter for fresh names."""

    def __init__(self, rng, kind):
        self.rng, self.kind, self.helpers, self.count = rng, kind, [], 0

    def fresh(self, stem="q"):
        self.count += 1
        return "{}{}".format(stem, self.count)

    def need(self, *names):
        self.helpers.extend(names)

    def leaf(self, name):
        """A read of P's leaf: the local name, or the container's own read."""
        if self.rng.random() < 0.6:
            return name
        return access(self.kind, name)

    def pick(self, *options):
        return self.rng.choice(options)

    def num(self, lo=-1.0, hi=1.0):
        return str(round(self.rng.uniform(lo, hi), 2))


def access(kind, name):
    index = "wbvk".index(name)
    if kind == "dict":
        return "P[{!r}]".format(name)
    if kind in ("list", "tuple"):
        return "P[{}]".format(index)
    if kind == "nested":
        return {"w": "P['layer'][0]", "b": "P['layer'][1]", "v": "P['v']", "k": "P['k']"}[name]
    return "P." + name


def _f_helpers(c):
    return c.pick(
        lambda: (c.need("h_kw"), ["s += h_kw({})".format(c.leaf("w"))]),
        lambda: (c.need("h_kw"), ["s += h_kw(x, c={})".format(c.leaf("b"))]),
        lambda: (c.need("h_kw"), ["s += h_kw(b=y, a={})".format(c.leaf("w"))]),
        lambda: (c.need("h_kw"), ["s += h_kw(x, {}, c=-0.75)".format(c.leaf("b"))]),
        lambda: (c.need("h_closdef"), ["s += h_closdef(x)"]),
        lambda: (c.need("h_closdef"), ["s += h_closdef({}, q=y)".format(c.leaf("w"))]),
        lambda: (c.need("h_closdef"), ["s += h_closdef(y, fn=lambda z: z * {})".format(
            c.leaf("b"))]),
        lambda: (c.need("h_kwcall"), ["s += h_kwcall(alpha={})".format(c.leaf("w"))]),
        lambda: (c.need("h_kwcall"), ["s += h_kwcall(beta=x, alpha=y)"]),
        lambda: (c.need("h_kwcall"), ["kw = {'alpha': x, 'beta': " + c.leaf("b") + "}",
                                      "s += h_kwcall(**kw)"]),
    )()[1]


def _f_varargs(c):
    return c.pick(
        lambda: (c.need("h_var"), ["s += h_var(x, {}, y)".format(c.leaf("w"))]),
        lambda: (c.need("h_var"), ["s += h_var(x, scale={})".format(c.leaf("b"))]),
        lambda: (c.need("h_var"), ["s += h_var()"]),
        lambda: (c.need("h_var"), ["s += h_var(*{}) * 0.1".format(c.leaf("v"))]),
        lambda: (c.need("h_var"), ["tt = (x, y)", "s += h_var(*tt, scale=0.5)"]),
        lambda: (c.need("h_var2"), ["s += h_var2(x, y, {}, scale=0.5, e1=y)".format(c.leaf("w"))]),
        lambda: (c.need("h_var2"), ["s += h_var2(*[x, y], **{'e1': " + c.leaf("b") + "})"]),
        lambda: (c.need("h_var2"), ["s += h_var2(x)"]),
    )()[1]


def _f_decorated(c):
    return c.pick(
        lambda: (c.need("h_dec"), ["s += h_dec({})".format(c.leaf("w"))]),
        lambda: (c.need("h_dec"), ["s += h_dec(x, c=y)"]),
        lambda: (c.need("h_dec2"), ["s += h_dec2(x) + h_dec2(y, q={})".format(c.leaf("b"))]),
        lambda: (c.need("h_dec3"), ["s += h_dec3(x * {})".format(c.leaf("w"))]),
        lambda: (c.need("h_dec3"), ["s += h_dec3(y)"]),
    )()[1]


def _f_nested(c):
    w, b = c.leaf("w"), c.leaf("b")
    return c.pick(
        ["def inner(z):", "    return z * {} + s * 0.1".format(w), "s += inner(x) + inner(y)"],
        ["sq = lambda z: z * z * " + b, "s += sq(x)"],
        ["def inner(z, k=x):", "    return math.sin(z * k)", "s += inner(y) + inner(y, {})".format(w)],
        ["def outer_fn(z):", "    def deeper(u):", "        return u * x", "    return deeper(z) + z",
         "s += outer_fn({})".format(b)],
        ["fns = [lambda z, k=k: z * k for k in (x, y, 0.5)]", "for fn in fns:", "    s += fn(0.3)"],
        ["g2 = lambda z: (lambda u: u * {})(z) + z".format(w), "s += g2(y)"],
        ["def inner(z, *, scale=-0.5):", "    return z * scale + x", "s += inner(y, scale={})".format(b)],
    )


def _f_function_values(c):
    return c.pick(
        lambda: (c.need("apply"), ["s += apply(math.sin, {})".format(c.leaf("w"))]),
        lambda: (c.need("apply"), ["s += apply(lambda z: z * y, x)"]),
        lambda: (c.need("apply", "h_kw"), ["s += apply(h_kw, x, {})".format(c.leaf("b"))]),
        lambda: (c.need("apply"), ["s += apply(LIN, x) + apply(LIN.apply, y)"]),
        lambda: (c.need("compose"), ["cf = compose(math.tanh, lambda z: z * x)", "s += cf(y)"]),
        lambda: (c.need("acts", "h_kw"), ["s += ACTS['tanh'](x) + ACTS['sq']({})".format(c.leaf("w"))]),
        lambda: (c.need("acts", "h_kw"), ["for name in ('tanh', 'lin', 'lkw'):",
                                          "    s += ACTS[name](x * {})".format(c.leaf("b"))]),
        lambda: (c.need("acts", "h_kw"), ["for fn in FNS:", "    s += fn(y) * 0.5"]),
        lambda: (c.need("acts", "h_kw"), ["s += FNS[1](x) + FNS[n % 4](y)"]),
        lambda: (c.need("h_kw"), ["pk = functools.partial(h_kw, b={})".format(c.leaf("w")),
                                  "s += pk(x) + pk(y, c=0.1)"]),
        lambda: (c.need("h_kw"), ["s += functools.partial(h_kw, c=x)(y)"]),
        lambda: (c.need("acts", "h_kw"), ["table = {'a': math.sin, 'b': math.cos}",
                                          "s += table['a' if x > 0 else 'b'](y)"]),
        lambda: (c.need("h_kw"), ["fn = h_kw if x > y else math.sin", "s += fn(x)"]),
    )()[1]


def _f_objects(c):
    w = c.leaf("w")
    return c.pick(
        ["s += LIN(x) + LIN.apply(y)"],
        ["s += LIN.chain(x) * 0.5"],
        ["s += Lin.apply(LIN, {})".format(w)],
        ["m = Lin({})".format(w), "s += m(x) + m.apply(y, p=3)"],
        ["m = Lin(x, c={})".format(c.leaf("b")), "s += m.a * m.c"],
        ["m = Lin(y)", "s += Lin.apply(m, x)"],
        ["m = Lin(0.3)", "m.a = {}".format(w), "s += m(x)"],
        ["objs = [Lin(x), Lin(y, c=0.5)]", "for o in objs:", "    s += o(0.5)"],
    )


def _f_containers(c):
    return c.pick(
        lambda: ["acc = []", "acc.append(x * {})".format(c.leaf("w")), "acc.append(y)",
                 "s += sum(acc)"],
        lambda: ["d = {}", "d['a'] = x * y", "d['b'] = " + c.leaf("b"), "s += d['a'] + d.get('b', 0.0)"],
        lambda: ["d = {'a': x, 'b': y}", "for key, val in d.items():", "    s += val * 0.5"],
        lambda: ["d = {'a': x, 'b': " + c.leaf("w") + "}", "for i in range(n):",
                 "    d['a'] = d['a'] * 0.5 + d['b'] * y", "    d['b'] = math.sin(d['a'])",
                 "s += d['a'] + d['b']"],
        lambda: ["st = [x, y]", "for i in range(n):", "    st[0] = st[0] * 0.9 + st[1] * 0.1",
                 "s += st[0] * st[1]"],
        lambda: ["d = dict(a=x, b=" + c.leaf("w") + ")", "s += sum(d.values())"],
        lambda: ["tt = (x, y, 1.0)", "a1, b1, c1 = tt", "s += a1 * b1 - c1"],
        lambda: ["first, *rest = [x, y, " + c.leaf("b") + "]", "s += first * sum(rest)"],
        lambda: (c.need("h_tuple"), ["lo, hi = h_tuple(x, {})".format(c.leaf("w")), "s += lo * hi"])[1],
        lambda: (c.need("h_tuple"), ["pr = h_tuple(x, y)", "s += pr[0] - pr[1]"])[1],
        lambda: (c.need("h_list"), ["s += sum(h_list({}, scale=y))".format(c.leaf("v"))])[1],
        lambda: (c.need("h_dict"), ["dd = h_dict(x, {})".format(c.leaf("w")),
                                    "s += dd['sum'] * dd['prod'] + dd['n']"])[1],
        lambda: (c.need("h_nt"), ["pr = h_nt(x, y)", "s += pr.hi - pr.lo * 2.0"])[1],
        lambda: (c.need("h_dc"), ["ac = Acc()", "ac = ac.add(x)", "ac = ac.add({})".format(c.leaf("w")),
                                  "s += ac.total / ac.count"])[1],
        lambda: ["pairs = [(x, y), (" + c.leaf("w") + ", 0.5)]", "for p1, p2 in pairs:", "    s += p1 * p2"],
        lambda: ["nest = {'l': [x, y], 't': (" + c.leaf("b") + ",)}", "s += nest['l'][1] * nest['t'][0]"],
    )()


def _f_recursion(c):
    return c.pick(
        lambda: (c.need("rec"), ["s += rec({})".format(c.leaf("w"))]),
        lambda: (c.need("rec"), ["s += rec(x * 2.0)"]),
        lambda: (c.need("rec2"), ["s += rec2(x, n)"]),
        lambda: (c.need("rec2"), ["s += rec2({}, k)".format(c.leaf("b"))]),
        lambda: (c.need("fib"), ["s += fib(x * 0.5, n + 1)"]),
    )()[1]


def _f_conditionals(c):
    th = c.num()
    w = c.leaf("w")
    return c.pick(
        ["s += x * x if x > {} else math.sin(y)".format(th)],
        ["s += (x if y > {} else {}) * 0.5".format(th, w)],
        ["s = s * 0.5 if s > {} else s + x".format(th)],
        ["if {} < x < 1.5:".format(th), "    s += x * y", "elif y > x:", "    s -= y", "else:",
         "    s += {}".format(w)],
        ["if x > {} and not y > 0.9:".format(th), "    s += x ** 2"],
        ["if (z := x * y) > {}:".format(th), "    s += z"],
        ["s += max(x, y) * min(x, {})".format(w)],
        ["s += abs(x - y) + abs({})".format(w)],
        ["flag = x > {}".format(th), "s += flag * x + (not flag) * y"],
        ["s += True * x + False * y"],
        ["s += x if k else y"],
        ["if n % 2 == 0:", "    s += x", "else:", "    s -= y * {}".format(w)],
    )


def _f_while(c):
    return c.pick(
        ["z = abs(x) + 0.5", "cnt = 0", "while z > 0.1 and cnt < 20:", "    z *= 0.6",
         "    cnt += 1", "s += z + cnt * 0.01"],
        ["z = x", "while True:", "    z = z * 0.5 + 0.1", "    if z < 0.3:", "        break",
         "s += z * y"],
        ["z = y", "i = 0", "while i < 10:", "    i += 1", "    if z > 1.0:", "        continue",
         "    z = z + 0.2 * math.cos(z * {})".format(c.leaf("w")), "s += z"],
        ["z = 1.0", "while z > abs({}) * 0.5 + 0.05:".format(c.leaf("b")), "    z = z * 0.8",
         "s += z * x"],
    )


def _f_loops(c):
    v = c.leaf("v")
    return c.pick(
        ["for i in range(n):", "    if i == 1:", "        continue", "    s += math.sin(x * i)"],
        ["for i in range(n):", "    s += x * 0.1", "    if s > 1.0:", "        break"],
        ["for i, e in enumerate({}):".format(v), "    s += e * i * x"],
        ["for e, g in zip({}, [x, y, 0.5]):".format(v), "    s += e * g"],
        ["for e in reversed({}):".format(v), "    s = s * 0.5 + e"],
        ["for e in sorted({}):".format(v), "    s = s * 0.9 + e * x"],
        ["for e in sorted([x, y, 0.25], reverse=True):", "    s = s * 0.5 + e"],
        ["for i in range(len({})):".format(v), "    s += {}[i] * y".format(v)],
        ["for i in range(1, n + 1):", "    for j in range(i):", "        s += x * 0.1 / i"],
        ["for e in {}:".format(v), "    if e < 0.0:", "        continue", "    s += e * e"],
        ["for e in [x, y]:", "    s += e * e"],
        ["for e in (x, 0.5, y):", "    s = s + e * " + c.leaf("w")],
    )


def _f_try(c):
    lines = c.pick(
        ["try:", "    r = math.log(x * x + 0.1)", "except ValueError:", "    r = 0.0", "s += r"],
        ["try:", "    r = math.sqrt(x - 5.0)", "except ValueError:", "    r = x * y", "s += r"],
        ["try:", "    r = 1.0 / (y - 100.0)", "except ZeroDivisionError:", "    r = 0.0",
         "else:", "    r = r * 2.0", "finally:", "    s += 0.5", "s += r"],
        ["try:", "    r = [x, y][n]", "except IndexError:", "    r = y * 2.0", "s += r"],
        ["try:", "    r = {'a': x}['b']", "except KeyError:", "    r = " + c.leaf("w"), "s += r"],
        ["try:", "    r = math.sqrt(y)", "except ValueError as error:",
         "    r = x * len(str(error)) * 0.01", "s += r"],
    )
    if c.rng.random() < 0.3:
        c.need("h_try")
        lines = lines + ["s += h_try(x) + h_try(y)"]
    return lines


def _f_comprehensions(c):
    v = c.leaf("v")
    return c.pick(
        ["s += sum([e * x for e in {}])".format(v)],
        ["s += sum(e * e for e in {} if e > 0)".format(v)],
        ["dd = {{i: e * y for i, e in enumerate({})}}".format(v), "s += dd[0] + dd[2]"],
        ["s += max(e * x for e in {})".format(v)],
        ["s += min([abs(e - y) for e in {}])".format(v)],
        ["ll = [[e * x, e] for e in {}]".format(v), "s += sum(a1 * b1 for a1, b1 in ll)"],
        ["s += sum(e * f2 for e in {} for f2 in (x, y))".format(v)],
        ["s += len([e for e in {} if e > 100.0]) + sum(e for e in {} if e > 100.0)".format(v, v)],
        ["s += sum(map(math.sin, {}))".format(v)],
        ["s += sum(map(lambda e: e * x, {}))".format(v)],
        ["s += any(e > x for e in {}) * y".format(v)],
        ["s += sum(list(filter(lambda e: e > 0.0, [x, y])))"],
    )


def _f_builtins(c):
    v, w = c.leaf("v"), c.leaf("w")
    return c.pick(
        ["s += sum({}) + sum({}, 0.5)".format(v, v)],
        ["s += max({}) - min({})".format(v, v)],
        ["s += max(x, y, 0.1) + min(x, y, {})".format(w)],
        ["s += max([], default=0.0) + min({}, default=x)".format(v)],
        ["s += sum([]) + x * len({})".format(v)],
        ["s += abs(-x) + abs(y) * 0.5"],
        ["s += pow(x, 2) + pow(abs(y) + 0.5, x)"],
        ["s += float(x) * float(n) + int(y * 3) * x"],
        ["s += round(x, 1) * y + x // 0.3 + x % 0.3"],
        ["s += max(x, y, key=abs)"],
        ["s += sum(sorted({}, key=lambda e: -e)[:2])".format(v)],
        ["s += divmod(x + 2.0, 0.5)[1] * y"],
        ["s += math.fsum([x, y, {}])".format(w)],
        ["s += max({}, key=abs) * x".format(v)],
    )


def _f_math(c):
    w = c.leaf("w")
    return c.pick(
        ["s += math.hypot(x, y) + math.atan2(y, x)"],
        ["s += math.log(abs(x) + 1.0, 2) + math.log10(abs(y) + 1.0) + math.log2(1.5 + x)"],
        ["s += math.expm1(x) + math.log1p(abs(y))"],
        ["s += math.erf(x) + math.erfc(y) + math.gamma(2.0 + x) + math.lgamma(2.5 + y)"],
        ["s += math.degrees(x) * 0.01 + math.radians(y)"],
        ["s += math.copysign(x, y) + math.fabs({})".format(w)],
        ["s += math.pow(abs(x) + 0.5, y) + math.exp(-x * x)"],
        ["s += math.sqrt(x * x + 1.0) + math.cbrt(y + 2.0)"],
        ["s += math.fmod(x + 3.0, 0.7) + math.remainder(y, 0.3)"],
        ["s += math.floor(x * 5) * y + math.ceil(y) * x + math.trunc(x * 3) * y"],
        ["s += math.dist((x, y), ({}, 0.5))".format(w)],
        ["s += math.prod([x, y, 1.5])"],
        ["s += math.asinh(x) + math.acosh(2.0 + y * y) + math.atanh(0.5 * math.tanh(x))"],
        ["s += math.asin(0.5 * math.sin(x)) + math.acos(0.5 * math.cos(y))"],
        ["s += math.pi * x + math.e * y + math.tau * 0.01"],
        ["s += math.exp2(x) + math.ldexp(y, 2)"],
        ["s += math.frexp(x + 3.0)[0] * y"],
        ["s += math.sumprod([x, y], [{}, 0.5])".format(w)] if sys.version_info >= (3, 12)
        else ["s += math.isclose(x, y) * x + math.isfinite(y) * y"],
    )


def _f_intsnone(c):
    return c.pick(
        lambda: (c.need("h_opt"), ["s += h_opt(x) + h_opt(y, True) + h_opt(x, None, n)"]),
        lambda: (c.need("h_opt"), ["s += h_opt(x, flag=False, k=3) + h_opt(y, on=k > 0)"]),
        lambda: ([], ["s += x * n + k * y + (n > 2) * x"]),
        lambda: ([], ["s += x ** n + y ** k * 0.1"]),
        lambda: ([], ["m1 = None", "if m1 is None:", "    m1 = x", "s += m1 * y"]),
        lambda: ([], ["s += x / n + n / (2.0 + x)"]),
        lambda: ([], ["cnt = 0", "for e in [x, y]:", "    cnt += 1", "s += cnt * x"]),
        lambda: ([], ["s += float(isinstance(x, float)) * x"]),
        lambda: ([], ["s += (x if n else y) + (k or 1) * x"]),
        lambda: ([], ["s += x * (n // 2) + y * (n % 2)"]),
    )()[1]


def _f_deep(c):
    depth = c.rng.randint(100, 200 if LONG else 110)
    if c.rng.random() < 0.5:
        expression = "x"
        for i in range(depth):
            expression = "(0.1 + 0.{} * {})".format(5 + i % 4, expression)
        return ["s += " + expression]
    if c.rng.random() < 0.5:
        expression = "x"
        for i in range(depth):
            expression = "math.sin({} * 0.9 + 0.1)".format(expression)
        return ["s += " + expression]
    return ["s += " + " + ".join(["x * y * 0.01"] * depth)]


def _f_straight(c):
    count = c.rng.randint(60, 300 if LONG else 80)
    lines = ["z = x"]
    for i in range(count):
        lines.append(c.pick("z = z * 0.99 + 0.01 * y", "z = math.sin(z) + 0.1 * x",
                            "t = z * y", "z = z + t * 0.01", "z = 0.5 * (z + y * 0.1)"))
    return lines + ["s += z"]


def _f_globals(c):
    return c.pick(
        ["s += GS * x + GNEG * y"],
        ["s += sum(GLIST) * x + GLIST[1] * y"],
        ["s += GDICT['a'] * x + GDICT['b'] * y"],
        ["for gv in GLIST:", "    s += gv * x"],
        ["s += sum(g * e for g, e in zip(GLIST, [x, y, 0.5]))"],
    )


def _f_numpy(c):
    v, w = c.leaf("v"), c.leaf("w")
    return c.pick(
        ["s += float(np.sum(np.array([x, y]) ** 2))"],
        ["s += np.sqrt(x * x + 1.0) + np.tanh(y)"],
        ["s += np.dot(np.array({}), np.array([x, y, 0.5]))".format(v)],
        ["s += np.float64(x) * y + np.float32(0.5) * x"],
        ["s += np.where(x > 0, x, y) + np.maximum(x, y)"],
        ["s += np.clip(x, -0.5, 0.5) * y"],
        ["s += np.linalg.norm(np.array([x, y, {}]))".format(w)],
        ["s += np.mean({}) * x + np.max({})".format(v, v)],
        ["arr = np.zeros(3)", "arr[0] = x", "arr[2] = y", "s += np.sum(arr * arr)"],
        ["s += np.sum(np.array({}) * x).item()".format(v)],
        ["s += np.exp(-x) * np.log1p(y * y)"],
    )


def _f_aliasing(c):
    return c.pick(
        ["lst = [x, y]", "lst2 = lst", "lst2.append(x * y)", "s += sum(lst)"],
        ["lst = [x, y]", "lst[0] = lst[0] * 2.0", "s += lst[0] + lst[1]"],
        ["lst = [x]", "lst += [y]", "s += lst[1]"],
        ["d = {'a': x}", "d2 = d", "d2['a'] = y", "s += d['a']"],
        ["lst = [x, y]", "lst.reverse()", "s += lst[0] * 2.0"],
        ["lst = [x, y]", "lst[0] += y", "s += lst[0]"],
        ["d = {'a': x}", "d['a'] += y", "s += d['a'] * y"],
        ["d = {'a': x}", "d.update(b=y)", "s += d['a'] + d['b']"],
    )


def _f_pytree_ops(c):
    kind = c.kind
    if kind == "dict":
        return c.pick(["P2 = {**P, 'w': P['w'] * 2.0}", "s += P2['w'] * x"],
                      ["for key in P:", "    if key in ('w', 'b'):", "        s += P[key] * x"],
                      ["s += sum(val for key, val in P.items() if key != 'v' and key != 'k') * y"])
    if kind == "tuple_nt":
        return c.pick(["P2 = P._replace(w=P.w * 2.0)", "s += P2.w * x"],
                      ["w2, b2, v2, k2 = P", "s += w2 * b2 * x + k2 * y"])
    if kind == "dataclass":
        return c.pick(["P2 = dataclasses.replace(P, w=P.w * 2.0)", "s += P2.w * x"],
                      ["s += getattr(P, 'w') * x"])
    if kind in ("list", "tuple"):
        return c.pick(["w2, b2, v2, k2 = P", "s += w2 * b2 * x"],
                      ["for item in P[:2]:", "    s += item * y"],
                      ["s += P[-3] * x"])
    return c.pick(["(w2, b2), v2 = P['layer'], P['v']", "s += w2 * b2 + sum(v2) * x"],
                  ["s += P['layer'][-1] * x"])


def _f_closures_held(c):
    """Local functions kept in containers, closures made in loops (bound late)."""
    w = c.leaf("w")
    return c.pick(
        ["fns = [lambda z: z * x]", "s += fns[0](2.0)"],
        ["fns = [lambda z: z * k2 for k2 in (x, y)]", "s += fns[0](1.0) + fns[1](2.0)"],
        ["def scale(z):", "    return z * " + w, "table = {'s': scale}", "s += table['s'](y)"],
        ["fns = []", "for k2 in (x, y):", "    fns.append(lambda z: z * k2)", "s += fns[0](0.5)"],
        ["fns = [lambda z: z * 2.0, math.sin]", "s += fns[0](x) + fns[1](y)"],
        ["ops = {'sin': math.sin, 'sq': lambda z: z * z}", "s += ops['sq'](x) + ops['sin'](y)"],
    )


def _f_python_idioms(c):
    """Unpacking, joins and nested literals as Python code writes them."""
    w, b = c.leaf("w"), c.leaf("b")
    return c.pick(
        ["d = {'a': x, 'b': " + w + "}", "a1, b1 = d.values()", "s += a1 * b1"],
        ["d = {'a': x, 'b': y}", "(k1, a1), (k2, b1) = d.items()", "s += a1 - b1"],
        ["lst = [x]", "lst += [y]", "s += lst[0] * 3.0"],
        ["lst = [x, 1.0]", "lst = lst + [" + b + "]", "s += lst[1] + lst[2]"],
        ["cc = [(x,), (1.0, y)]", "s += cc[1][1] * 3.0 + cc[0][0]"],
        ["cc = {'p': [y], 'q': (x, " + w + ")}", "s += cc['p'][0] * cc['q'][1]"],
        ["total = 0.0", "def add(z):", "    nonlocal total", "    total += z", "add(x)", "add(y)",
         "s += total"],
        ["s += max((x, 1.0), (y, 2.0))[0] * 2.0"],
        ["a1, b1 = sorted([x, y])", "s += a1 * 2.0 + b1"],
        ["a1, b1 = (x, y) if x > y else (y, x)", "s += a1 - 0.5 * b1"],
    )


FEATURES = {
    "helpers": _f_helpers, "varargs": _f_varargs, "decorated": _f_decorated, "nested": _f_nested,
    "function_values": _f_function_values, "objects": _f_objects, "containers": _f_containers,
    "recursion": _f_recursion, "conditionals": _f_conditionals, "while": _f_while,
    "loops": _f_loops, "try": _f_try, "comprehensions": _f_comprehensions,
    "builtins": _f_builtins, "math": _f_math, "intsnone": _f_intsnone, "deep": _f_deep,
    "straight": _f_straight, "globals": _f_globals, "numpy": _f_numpy,
    "aliasing": _f_aliasing, "pytree_ops": _f_pytree_ops, "closures_held": _f_closures_held,
    "python_idioms": _f_python_idioms,
}

#: the entry kinds: how the checked callable reaches f
ENTRIES = ("plain", "plain", "decorated", "method", "partial", "lambda_default", "same_name_default")
KINDS = ("dict", "list", "tuple", "dataclass", "tuple_nt", "nested")


def _params_source(kind, v_array):
    v = "np.array([0.4, -0.3, 0.9])" if v_array else "[0.4, -0.3, 0.9]"
    return {
        "dict": "{{'w': 0.8, 'b': -0.6, 'v': {}, 'k': 2}}".format(v),
        "list": "[0.8, -0.6, {}, 2.0]".format(v),   # a list holding an int is refused
        "tuple": "(0.8, -0.6, {}, 2.0)".format(v),
        "dataclass": "DParams(0.8, -0.6, {}, 2)".format(v),
        "tuple_nt": "TParams(0.8, -0.6, {}, 2)".format(v),
        "nested": "{{'layer': (0.8, -0.6), 'v': {}, 'k': 2}}".format(v),
    }[kind]


def program(seed):
    """(source, features, entry, kind, has_aux) of one random program."""
    rng = random.Random(seed)
    kind = rng.choice(KINDS)
    c = Ctx(rng, kind)
    features = rng.sample(sorted(FEATURES), rng.choice([1, 1, 2, 2, 3, 4]))
    entry = rng.choice(ENTRIES)
    has_aux = rng.random() < 0.15
    v_array = "numpy" in features and rng.random() < 0.5
    body = []
    for feature in features:
        lines = FEATURES[feature](c)
        if feature not in ("deep", "straight", "pytree_ops") and rng.random() < 0.2:
            lines = ["for rep in range(2):"] + ["    " + line for line in lines]
        body += lines
        if rng.random() < 0.5:
            body.append(rng.choice(["s = math.tanh(s) + 0.1 * s", "s = s * 0.5 + x * y * 0.1",
                                    "s = s + w * b * 0.1"]))
    prologue = ["w, b, v, k = {}, {}, {}, {}".format(*(access(kind, name) for name in "wbvk"))]
    prologue.append("s = 0.0" if rng.random() < 0.8 else "s = x * 0.0")
    returned = "s + w * 0.01" if rng.random() < 0.5 else "s"
    if has_aux:
        returned = rng.choice(["{}, s * 2.0", "{}, {{'s': s, 'n': n}}", "({}, [s, x])"]).format(returned)
    body += ["return " + returned]
    self_line = []
    signature = "P, x, y, n"
    if entry == "method":
        signature = "self, P, x, y, n"
        self_line = ["x = x * self.scale", "s = s + self.offset"]
        body = body[:-1] + self_line + body[-1:]
    if entry == "partial":
        signature = "P, x, y, n, c0=0.0, *, c1=1.0"
        body = body[:-1] + ["s = s * c1 + c0"] + body[-1:]
    if entry == "same_name_default":
        signature = "P, x, y, n, GLIST=GLIST, SC=SC"
        body = body[:-1] + ["s = s + GLIST[0] * x + SC(y)"] + body[-1:]
    if entry == "lambda_default":
        signature = "P, x, y, n, act=lambda z: z * GS"
        body = body[:-1] + ["s = s + act(x)"] + body[-1:]
    f_lines = ["def f({}):".format(signature)] + ["    " + line for line in prologue + body]
    if entry == "decorated":
        f_lines = ["@scaled"] + f_lines
    if entry == "method":
        f_lines = ["class Model:", "    def __init__(self, scale, offset=-0.1):",
                   "        self.scale = scale", "        self.offset = offset", ""] + \
            ["    " + line for line in f_lines] + ["", "", "MODEL = Model(1.5)", "ENTRY = MODEL.f"]
    elif entry == "partial":
        f_lines += ["", "", "ENTRY = functools.partial(f, c0=-0.2, c1=0.5)"]
    else:
        f_lines += ["", "", "ENTRY = f"]
    helpers = [HELPERS[name] for name in dict.fromkeys(sorted(set(c.helpers)))]
    if "acts" in c.helpers and "h_kw" in c.helpers:   # ACTS reads h_kw: define it first
        helpers.sort(key=lambda text: not text.startswith("def h_kw"))
    parts = [PRELUDE] + helpers + ["def make_params():\n    return {}\n".format(
        _params_source(kind, v_array))] + ["\n".join(f_lines) + "\n"]
    return "\n\n".join(parts), sorted(features), entry, kind, has_aux


# ---------------------------------------------------------------------------
# trees: leaves of P by path, and rebuilding P with one leaf changed
# ---------------------------------------------------------------------------

def leaves(tree, path=()):
    """[(path, leaf)] of a parameter tree, in order."""
    if isinstance(tree, dict):
        return [item for key in tree for item in leaves(tree[key], path + (key,))]
    if dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        return [item for field in dataclasses.fields(tree)
                for item in leaves(getattr(tree, field.name), path + (field.name,))]
    if isinstance(tree, (list, tuple)):
        return [item for i, part in enumerate(tree) for item in leaves(part, path + (i,))]
    return [(path, tree)]


def replaced(tree, path, value):
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        return {**tree, head: replaced(tree[head], rest, value)}
    if dataclasses.is_dataclass(tree):
        return dataclasses.replace(tree, **{head: replaced(getattr(tree, head), rest, value)})
    if isinstance(tree, tuple) and hasattr(type(tree), "_fields"):
        return tree._replace(**{tree._fields[head]: replaced(tree[head], rest, value)})
    items = list(tree)
    items[head] = replaced(tree[head], rest, value)
    return type(tree)(items)


def differentiable(leaf):
    return isinstance(leaf, float) or (isinstance(leaf, np.ndarray) and leaf.dtype.kind == "f")


def copied(tree):
    """A deep copy of a parameter tree (its arrays copied)."""
    for path, leaf in leaves(tree):
        if isinstance(leaf, np.ndarray):
            tree = replaced(tree, path, leaf.copy())
        elif isinstance(leaf, list):
            tree = replaced(tree, path, list(leaf))
    return tree


class Problem(Exception):
    def __init__(self, mode, kind, detail):
        super().__init__("{}: {}: {}".format(mode, kind, detail))
        self.mode, self.kind, self.detail = mode, kind, detail


def _close(got, want, rtol, mask=None):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    if got.shape != want.shape:
        return False
    scale = 1e-6 * max(1.0, float(np.nanmax(np.abs(want), initial=0.0)))
    near = np.isclose(got, want, rtol=rtol, atol=scale, equal_nan=True)
    return bool(np.all(near | ~mask)) if mask is not None else bool(np.all(near))


def tree_structure(mode, gradient, like, path=()):
    """Raise unless ``gradient`` has ``like``'s structure, types and None leaves."""
    where = "P" + "".join("[{!r}]".format(p) for p in path)
    if isinstance(like, dict):
        if type(gradient) is not type(like) or list(gradient) != list(like):
            raise Problem(mode, "structure", "{}: {!r} for {!r}".format(where, gradient, like))
        for key in like:
            tree_structure(mode, gradient[key], like[key], path + (key,))
    elif dataclasses.is_dataclass(like) or isinstance(like, (list, tuple)):
        if type(gradient) is not type(like):
            raise Problem(mode, "structure", "{}: {!r} for {!r}".format(where, gradient, like))
        if isinstance(like, (list, tuple)):
            if len(gradient) != len(like):
                raise Problem(mode, "structure", "{}: {!r} for {!r}".format(where, gradient, like))
            for i, (g, l) in enumerate(zip(gradient, like)):
                tree_structure(mode, g, l, path + (i,))
        else:
            for field in dataclasses.fields(like):
                tree_structure(mode, getattr(gradient, field.name), getattr(like, field.name),
                               path + (field.name,))
    elif isinstance(like, np.ndarray):
        if not isinstance(gradient, np.ndarray) or gradient.shape != like.shape:
            raise Problem(mode, "structure", "{}: {!r} for an array".format(where, gradient))
    elif differentiable(like):
        if gradient is None or np.ndim(gradient) != 0:
            raise Problem(mode, "structure", "{}: {!r} for a float".format(where, gradient))
    elif gradient is not None:
        raise Problem(mode, "structure", "{}: {!r} for {!r}, not None".format(where, gradient, like))


def flat(tree):
    """The differentiable leaves of a gradient shaped like P, as one float vector."""
    parts = [np.ravel(np.asarray(leaf, dtype=float)) for _, leaf in leaves(tree)
             if leaf is not None]
    return np.concatenate(parts) if parts else np.zeros(0)


# ---------------------------------------------------------------------------
# the checks
# ---------------------------------------------------------------------------

def load(source, name, directory):
    path = Path(directory) / (name + ".py")
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _loss(value, has_aux):
    return value[0] if has_aux else value


#: a refusal names the user's file and line: "file.py:12:" or "line 12"; one of the
#: arguments given (an int in a list, a tangent's structure) has no line to name
WHERE = re.compile(r"\.py:\d+|line \d+|with respect to|tangent")


class Checker:
    def __init__(self, module, has_aux, directory):
        self.module, self.directory, self.has_aux = module, directory, has_aux
        self.entry, self.P = module.ENTRY, module.make_params()
        self.value = self.call(self.P, X, Y, N)
        self.paths = [path for path, leaf in leaves(self.P) if differentiable(leaf)]
        self.fd = [self.differences(h) for h in (1e-6, 1e-4)]
        # a component is reliable when the two step sizes agree: no kink or jump nearby
        self.reliable = np.isclose(self.fd[0], self.fd[1], rtol=1e-4, atol=1e-6) & \
            np.isfinite(self.fd[0])
        self.results, self.problems, self.refusals = {}, [], {}

    def call(self, P, x, y, n):
        return _loss(self.entry(copied(P), x, y, n), self.has_aux)

    def differences(self, h, function=None):
        """Central differences of the loss in every differentiable leaf of P, then x, y."""
        function = function or self.call
        out = []
        for path in self.paths:
            leaf = dict(leaves(self.P))[path]
            base = np.atleast_1d(np.array(leaf, dtype=float))
            for j in range(base.size):
                up, down = base.copy(), base.copy()
                up[j] += h
                down[j] -= h
                shape = (lambda a: a) if isinstance(leaf, np.ndarray) else (lambda a: float(a[0]))
                out.append((function(replaced(self.P, path, shape(up)), X, Y, N) -
                            function(replaced(self.P, path, shape(down)), X, Y, N)) / (2 * h))
        out.append((function(self.P, X + h, Y, N) - function(self.P, X - h, Y, N)) / (2 * h))
        out.append((function(self.P, X, Y + h, N) - function(self.P, X, Y - h, N)) / (2 * h))
        return np.array(out, dtype=float)

    def run(self, mode, function):
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                function()
        except derivo.DerivoError as error:
            text = str(error)
            self.refusals[mode] = text.splitlines()[0][:200]
            if not WHERE.search(text):
                self.problems.append(Problem(mode, "refusal without file:line", text[:300]))
        except Problem as problem:
            self.problems.append(problem)
        except Exception as error:  # noqa: BLE001 -- any other exception is the finding
            self.problems.append(Problem(mode, "crash", "{}: {}".format(
                type(error).__name__, str(error).splitlines()[0][:200] if str(error) else "")))

    def check_gradient(self, mode, gradient, value=None):
        if not (isinstance(gradient, tuple) and len(gradient) == 3):
            raise Problem(mode, "structure", "got {!r}".format(gradient))
        tree_structure(mode, gradient[0], self.P)
        for g in gradient[1:]:
            if g is None or np.ndim(g) != 0:
                raise Problem(mode, "structure", "{!r} for a float".format(g))
        if value is not None and not _close(_loss(value, self.has_aux), self.value, 1e-12):
            raise Problem(mode, "primal value", "{!r}, f gives {!r}".format(value, self.value))
        vector = np.concatenate([flat(gradient[0]), [float(gradient[1]), float(gradient[2])]])
        if not _close(vector, self.fd[0], 1e-4, self.reliable):
            raise Problem(mode, "WRONG gradient vs finite differences",
                          "{!r}, differences give {!r}".format(vector.tolist(), self.fd[0].tolist()))
        self.results[mode] = vector

    def grad(self, loops):
        options = {"loops": loops}
        if loops == "checkpoint":
            options["checkpoints"] = 2
        df = derivo.grad(self.entry, wrt=(0, 1, 2), has_aux=self.has_aux, **options)
        P = copied(self.P)
        out = df(P, X, Y, N)
        gradient = out[0] if self.has_aux else out
        self.check_gradient("grad:" + loops, gradient)
        if self.has_aux:
            aux = self.entry(copied(self.P), X, Y, N)[1]
            if repr(out[1]) != repr(aux):
                raise Problem("grad:" + loops, "aux", "{!r}, f gives {!r}".format(out[1], aux))

    def value_and_grad(self):
        value, gradient = derivo.value_and_grad(self.entry, wrt=(0, 1, 2), has_aux=self.has_aux)(
            copied(self.P), X, Y, N)
        self.check_gradient("value_and_grad", gradient, value)

    def cotangent(self, out):
        if not self.has_aux:
            return 1.0
        aux = out[1]
        def zero(e):
            return 0.0 * e if isinstance(e, (float, np.floating)) else None
        zeros = {dict: lambda a: {k: zero(e) for k, e in a.items()},
                 list: lambda a: [zero(e) for e in a]}.get(type(aux), zero)
        return (1.0, zeros(aux))

    def vjp(self, x=X, n=N, mode="vjp"):
        try:
            value = _loss(self.entry(copied(self.P), x, Y, n), self.has_aux)
        except Exception:  # noqa: BLE001 -- f itself fails there (math.trunc of a float32)
            return
        if not _close(value, self.value, 1e-5):  # f is another function of a float32
            return                               # (isinstance(x, float))
        out, vjp_fn = derivo.vjp(self.entry, copied(self.P), x, Y, n)
        cotangents = vjp_fn(self.cotangent(out))
        if not (isinstance(cotangents, tuple) and len(cotangents) == 4 and cotangents[3] is None):
            raise Problem(mode, "structure", "cotangents {!r}".format(cotangents))
        if mode == "vjp":
            self.check_gradient(mode, cotangents[:3], out)
        else:
            vector = np.array([float(cotangents[1]), float(cotangents[2])])
            if not _close(vector, self.fd[0][-2:], 1e-3, self.reliable[-2:]):
                raise Problem(mode, "WRONG cotangent vs finite differences", "{!r}, differences "
                              "give {!r}".format(vector.tolist(), self.fd[0][-2:].tolist()))

    def jvp(self, mode, with_p, with_x):
        rng = np.random.default_rng(len(self.paths))
        tangent_p, direction = self.P, []
        for path, leaf in leaves(self.P):
            if not differentiable(leaf):
                tangent_p = replaced(tangent_p, path, None)
                continue
            t = rng.normal(size=np.shape(leaf)) if with_p else np.zeros(np.shape(leaf))
            direction.append(np.ravel(t))
            tangent_p = replaced(tangent_p, path, t if isinstance(leaf, np.ndarray) else float(t))
        tx = 0.7 if with_x else None
        direction += [[0.7 if with_x else 0.0], [-0.3]]
        tangents = (tangent_p if with_p else None, tx, -0.3, None)
        value, tangent = derivo.jvp(self.entry, (copied(self.P), X, Y, N), tangents)
        direction = np.concatenate(direction)
        if not _close(_loss(value, self.has_aux), self.value, 1e-12):
            raise Problem(mode, "primal value", "{!r}, f gives {!r}".format(value, self.value))
        tangent = _loss(tangent, self.has_aux)
        if np.all(self.reliable | (direction == 0)):
            want = float(np.sum(np.where(direction == 0, 0.0, self.fd[0] * direction)))
            if not _close(tangent, want, 1e-4):
                raise Problem(mode, "WRONG tangent vs finite differences",
                              "{!r}, differences give {!r}".format(tangent, want))

    def second(self, mode):
        """d2f/dx2 by hessian, grad of grad, or jacobian of grad, against differences."""
        if self.has_aux:
            return
        if mode == "hessian":
            got = derivo.hessian(self.entry, wrt=1)(copied(self.P), X, Y, N)
        elif mode == "grad_of_grad":
            got = derivo.grad(derivo.grad(self.entry, wrt=1), wrt=1)(copied(self.P), X, Y, N)
        else:
            got = derivo.jacobian(derivo.grad(self.entry, wrt=1), wrt=(1, 2))(
                copied(self.P), X, Y, N)
        df = derivo.grad(self.entry, wrt=1)
        steps = []
        for e in (1e-6, 1e-4):
            steps.append([(df(copied(self.P), X + e, Y, N) - df(copied(self.P), X - e, Y, N)) / (2 * e),
                          (df(copied(self.P), X, Y + e, N) - df(copied(self.P), X, Y - e, N)) / (2 * e)])
        steps = np.array(steps)
        want = steps[0] if mode == "jacobian_of_grad" else steps[0][:1]
        ok = np.isclose(steps[0], steps[1], rtol=1e-4, atol=1e-6)[:len(want)]
        got_vector = np.atleast_1d(np.array(got, dtype=float))
        if got_vector.shape != want.shape:
            raise Problem(mode, "structure", "{!r}".format(got))
        if not _close(got_vector, want, 1e-4, ok):
            raise Problem(mode, "WRONG vs differences of grad", "{!r}, differences give {!r}".format(
                got_vector.tolist(), want.tolist()))

    def saved(self):
        df = derivo.grad(self.entry, wrt=(0, 1, 2), has_aux=self.has_aux)
        want = df(copied(self.P), X, Y, N)
        want = want[0] if self.has_aux else want
        function = getattr(df, "func", df)
        path = Path(self.directory) / "saved_{}.py".format(os.getpid())
        df.save(path)
        script = (
            "import importlib.util, sys, json, numpy as np\n"
            "sys.path.insert(0, {test!r})\n"
            "from test_fuzz_hunt_python import leaves\n"
            "def load(name, path):\n"
            "    spec = importlib.util.spec_from_file_location(name, path)\n"
            "    m = importlib.util.module_from_spec(spec); sys.modules[name] = m\n"
            "    spec.loader.exec_module(m); return m\n"
            "prog = load({name!r}, {program!r})\n"
            "m = load('saved', {saved!r})\n"
            "entry = prog.ENTRY\n"
            "args, kwargs = [prog.make_params(), {x}, {y}, {n}], {{}}\n"
            "if hasattr(entry, '__self__'): args.insert(0, entry.__self__)\n"
            "if hasattr(entry, 'keywords'): kwargs = dict(entry.keywords)\n"
            "g = getattr(m, {function!r})(*args, **kwargs)\n"
            "g = g[0] if {aux} else g\n"
            "print(json.dumps([sum(float(np.sum(l)) for _, l in leaves(t) if l is not None) "
            "for t in g]))\n").format(
                test=str(Path(__file__).parent), name=self.module.__name__,
                program=self.module.__file__, saved=str(path), x=X, y=Y, n=N,
                function=function.__name__, aux=self.has_aux)
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             timeout=120)
        if run.returncode:
            raise Problem("save", "saved module fails", run.stderr.strip().splitlines()[-1][:200])
        got = json.loads(run.stdout)
        # a saved module keeps a list's gradient as the generated code makes it (0.0 for
        # one nothing reaches): compare each argument's total
        expected = [sum(float(np.sum(l)) for _, l in leaves(t) if l is not None) for t in want]
        if len(got) != len(expected) or not _close(got, expected, 1e-9):
            raise Problem("save", "WRONG saved module's gradient", "{!r}, in process {!r}".format(
                got, expected))

    def agreement(self):
        if "grad:stack" not in self.results:
            return
        reference = self.results["grad:stack"]
        for mode, vector in self.results.items():
            if not _close(vector, reference, 1e-6):
                self.problems.append(Problem(mode, "WRONG disagrees with grad:stack",
                                             "{!r} vs {!r}".format(vector.tolist(), reference.tolist())))


MODES = ("grad:stack", "grad:checkpoint", "grad:reversible", "value_and_grad", "vjp", "jvp",
         "jvp:None for P", "jvp:None for P and x", "vjp:np.float32/np.int64", "hessian",
         "grad_of_grad", "jacobian_of_grad", "save")


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


def check(seed, directory, second=None, save=None):
    """(features, entry, kind, problems, refusals, modes, source); None if f itself fails."""
    source, features, entry, kind, has_aux = program(seed)
    rng = random.Random(seed + 10 ** 6)
    second = rng.random() < 0.4 if second is None else second
    save = rng.random() < 0.04 if save is None else save
    name = "fuzz_hunt_python_{}".format(seed)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            module = load(source, name, directory)
            checker = Checker(module, has_aux, directory)
        except Exception:  # noqa: BLE001 -- not a program Python runs: not a test
            sys.modules.pop(name, None)
            return None
    if not np.isfinite(checker.value) or not np.all(np.isfinite(checker.fd[0])):
        sys.modules.pop(name, None)
        return None
    runs = [("grad:" + loops, lambda loops=loops: checker.grad(loops))
            for loops in ("stack", "checkpoint", "reversible")]
    runs += [("value_and_grad", checker.value_and_grad), ("vjp", checker.vjp),
             ("jvp", lambda: checker.jvp("jvp", True, True)),
             ("jvp:None for P", lambda: checker.jvp("jvp:None for P", False, True)),
             ("jvp:None for P and x", lambda: checker.jvp("jvp:None for P and x", False, False)),
             ("vjp:np.float32/np.int64", lambda: checker.vjp(
                 np.float32(X), np.int64(N), "vjp:np.float32/np.int64"))]
    runs += [(mode, lambda mode=mode: checker.second(mode))
             for mode in ("hessian", "grad_of_grad", "jacobian_of_grad")] * second
    runs += [("save", checker.saved)] * save
    for mode, function in runs:
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(60)
        try:
            checker.run(mode, function)
        except Timeout:
            checker.problems.append(Problem(mode, "hang", "more than 60 s"))
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
    checker.agreement()
    sys.modules.pop(name, None)
    return features, entry, kind, checker.problems, checker.refusals, [m for m, _ in runs], source


# ---------------------------------------------------------------------------
# known failures
# ---------------------------------------------------------------------------

#: reason -> (modes it shows in, or None for any; a pattern of "mode: kind: detail"
#: followed by the program's source)
FORWARD = {"jvp", "jvp:None for P", "jvp:None for P and x", "hessian", "grad_of_grad",
           "jacobian_of_grad"}
KNOWN = {
    "forward mode: a nested container's item with a zero tangent becomes 0.0":
        (FORWARD, r"crash: (TypeError: 'float' object is not subscriptable|"
                  r"IndexError: list index out of range)"),
    "forward mode: max of tuples multiplies a tuple":
        (FORWARD, r"can't multiply sequence by non-int"),
    "hessian of a dict comprehension over .items()":
        (FORWARD, r"list indices must be integers or slices, not str"),
    "a second derivative of a call of a function held in a dict names the generated code":
        ({"grad_of_grad", "jacobian_of_grad", "hessian"},
         r"<derivo generated [^>]*>:\d+:\d+: cannot differentiate \"(table|ops)\["),
    "grad of grad of a decorated helper names derivo's 'pending' entry":
        ({"grad_of_grad", "jacobian_of_grad", "hessian"}, r"cannot find the source of 'pending'"),
}


def known(problem, source):
    for reason, (modes, pattern) in KNOWN.items():
        if (modes is None or problem.mode in modes) and \
                re.search(pattern, str(problem) + "\n" + source, re.S):
            return reason
    return None


CI_SEEDS = list(range(20))
COUNT = int(os.environ.get("DERIVO_FUZZ_HUNT_PYTHON", "0"))
SEEDS = list(range(COUNT)) if COUNT else CI_SEEDS


@pytest.mark.parametrize("seed", SEEDS)
def test_python_program_in_every_mode(seed, tmp_path):
    result = check(seed, tmp_path, save=(seed == 0) or None)
    if result is None:
        pytest.skip("f itself fails or is not finite at the point")
    problems, source = result[3], result[6]
    unknown = [p for p in problems if known(p, source) is None]
    assert not unknown, "\n".join(map(str, unknown)) + "\n" + source
    if problems:
        pytest.xfail("; ".join(sorted({known(p, source) for p in problems})))


def test_every_feature_and_entry_is_drawn():
    drawn = [program(seed) for seed in range(200)]
    assert {f for d in drawn for f in d[1]} == set(FEATURES)
    assert {d[2] for d in drawn} == set(ENTRIES)
    assert {d[3] for d in drawn} == set(KINDS)


def main(argv):
    """``python tests/test_fuzz_hunt_python.py N [--start S]``: one JSON line per program."""
    count = int(argv[0])
    start = int(argv[argv.index("--start") + 1]) if "--start" in argv else 0
    with tempfile.TemporaryDirectory() as directory:
        for seed in range(start, start + count):
            with contextlib.suppress(Exception):
                result = check(seed, directory)
                if result is None:
                    print(json.dumps({"seed": seed, "skipped": True}), flush=True)
                    continue
                features, entry, kind, problems, refusals, modes, source = result
                print(json.dumps({
                    "seed": seed, "features": features, "entry": entry, "kind": kind,
                    "modes": modes, "refusals": refusals,
                    "problems": [{"mode": p.mode, "kind": p.kind, "detail": p.detail[:300],
                                  "known": known(p, source)} for p in problems],
                }), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
