"""``derivo.transform``: a Build turns a function and the user functions it calls
into one generated module."""

import math
import os
import subprocess
import sys
import textwrap

import pytest

from derivo.errors import UnsupportedSyntax
from derivo.transform import Build

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")

def helper(a, b):
    # A branch keeps it a call (straight-line helpers are inlined, see test_inline).
    if b > 10.0:
        return a
    return a * math.sin(b)


def calls_helper_twice(x, y):
    u = helper(x, y)
    v = helper(u, y)
    return u + v


def calls_helper_differently(x, y):
    u = helper(x, y)
    v = helper(y, 2.0)
    return u + v


def factorial_like(x, n):
    if n <= 0:
        return x
    return x * factorial_like(x, n - 1)


def ping(x, n):
    if n <= 0:
        return x
    return pong(x * 2, n - 1)


def pong(x, n):
    return ping(x, n)


def built(func, wrt, kind="grad"):
    build = Build()
    name = build.add(func, wrt, kind)
    return build, name


def defs(source):
    return [line for line in source.splitlines() if line.startswith("def ")]


def test_add_returns_the_generated_name():
    build, name = built(helper, ["a"])
    assert name == "helper_grad"
    assert defs(build.source()) == ["def helper_grad(a, b):"]


def test_kind_names_the_generated_function():
    assert built(helper, ["a"], "value_and_grad")[1] == "helper_value_and_grad"
    assert built(helper, ["a"], "vjp")[1] == "helper_vjp"


def test_same_helper_with_same_active_parameters_gets_one_vjp():
    build, _ = built(calls_helper_twice, ["x", "y"])
    source = build.source()
    assert defs(source) == ["def helper_forward(a, b):",
                            "def helper_backward(bresult, residuals):",
                            "def calls_helper_twice_grad(x, y):"]
    # the defs and two calls each
    assert source.count("helper_forward(") == source.count("helper_backward(") == 3
    assert list(build.vjps.values()) == [("helper_forward", "helper_backward")]


def test_without_residuals_a_helper_gets_a_vjp_that_runs_it_again():
    build = Build(keeps_residuals=False)
    build.add(calls_helper_twice, ["x", "y"], "grad")
    source = build.source()
    assert defs(source) == ["def helper_vjp(bresult, a, b):",
                            "def calls_helper_twice_grad(x, y):"]
    assert source.count("helper_vjp(") == 3  # the def and two calls
    assert list(build.vjps.values()) == ["helper_vjp"]


def test_same_helper_with_different_active_parameters_gets_two_vjps():
    build, _ = built(calls_helper_differently, ["x", "y"])
    assert len(defs(build.source())) == 5  # two pairs of halves and the gradient
    assert sorted(params for _, params in build.vjps) == [("a",), ("a", "b")]


def test_called_user_functions_are_bound_with_their_source():
    build, _ = built(calls_helper_twice, ["x"])
    assert build.namespace["helper"] is helper
    assert build.user_sources["helper"].startswith("def helper(a, b):")
    assert build.namespace["math"] is math


def test_direct_recursion_gets_halves_that_call_themselves():
    build, name = built(factorial_like, ["x"])
    assert list(build.vjps.values()) == [("factorial_like_forward", "factorial_like_backward")]
    source = build.source()
    forward = source.split("def factorial_like_forward")[1].split("def ")[0]
    backward = source.split("def factorial_like_backward")[1].split("def ")[0]
    assert "factorial_like_forward(" in forward and "factorial_like_backward(" in backward


def test_mutual_recursion_gets_halves_that_call_each_other():
    build, name = built(ping, ["x"])  # (pong, straight-line, is pasted into ping)
    assert list(build.vjps.values()) == [("ping_forward", "ping_backward")]
    assert "ping_backward(" in build.source().split("def ping_backward")[1]


def generates(x):
    yield x
    return x


def test_a_failed_add_leaves_nothing_in_progress():
    build = Build()
    with pytest.raises(UnsupportedSyntax):
        build.add(generates, ["x"], "grad")
    assert build.in_progress == []


def test_generated_source_is_deterministic_across_builds():
    first, _ = built(calls_helper_differently, ["x", "y"])
    second, _ = built(calls_helper_differently, ["x", "y"])
    assert first.source() == second.source()


PROGRAM = textwrap.dedent('''
    import math

    def helper(a, b):
        if b > 10.0:
            return a
        return a * math.sin(b) + b

    def f(x, y, n):
        s = x
        out = 0.0
        for i in range(n):
            t = helper(s, y)
            if t > 1.0:
                s = s * 0.5 + math.exp(-t)
            else:
                s = t * y
            out += s
        k = 0
        while out > 1e-3:
            k += 1
            out = out * 0.5 + s * y / k
        return out + s
''')

PRINT_SOURCE = textwrap.dedent('''
    import sys
    sys.path[:0] = [sys.argv[1], sys.argv[2]]
    import program
    from derivo.transform import Build
    build = Build()
    build.add(program.f, ["x", "y"], "grad")
    sys.stdout.write(build.source())
''')


def test_generated_source_is_the_same_under_different_hash_seeds(tmp_path):
    (tmp_path / "program.py").write_text(PROGRAM)
    sources = []
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run([sys.executable, "-c", PRINT_SOURCE, str(tmp_path), SRC],
                              env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        sources.append(done.stdout)
    assert sources[0].count("def ") == 3  # the helper's halves and the gradient
    assert sources[0] == sources[1] == sources[2]
