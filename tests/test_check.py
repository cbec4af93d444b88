"""``derivo.check_grad``, ``derivo check`` and ``derivo.forward_gradient``."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest

import derivo
from derivo import rules

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def smooth(x, y):
    return math.sin(x) * y + x * x


def quadratic(w, x):
    return np.sum((x @ w) ** 2) + np.sum(w)


def wrongly_ruled(x):
    return 2.0 * mystery(x)


def mystery(x):
    return math.tanh(x)


def test_check_grad_agrees_on_a_correct_gradient():
    result = derivo.check_grad(smooth, 0.7, -1.3, wrt=(0, 1))
    assert result.ok and bool(result)
    assert result.max_rel_error < 1e-7
    assert result.derivo[0] == pytest.approx(math.cos(0.7) * -1.3 + 1.4)
    assert str(result).startswith("OK: worst relative error")


def test_check_grad_on_arrays():
    rng = np.random.default_rng(3)
    result = derivo.check_grad(quadratic, rng.normal(size=(3, 2)), rng.normal(size=(4, 3)))
    assert result.ok
    assert result.numeric[0].shape == (3, 2)


def test_check_grad_catches_a_wrong_rule():
    derivo.defpartials(mystery, lambda ans, x: 1 - ans)  # wrong on purpose: 1 - ans**2
    try:
        result = derivo.check_grad(wrongly_ruled, 0.8)
    finally:
        del rules.RULES[mystery]
    assert not result.ok
    assert result.max_rel_error > 0.1
    assert str(result).startswith("MISMATCH")


def run_cli(*args):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "src"))
    return subprocess.run([sys.executable, "-m", "derivo", *args], cwd=REPO,
                          capture_output=True, text=True, env=env, timeout=120)


def test_cli_check_reports_agreement():
    done = run_cli("check", "examples/bessel.py", "besselj", "--args", "2", "1.0",
                   "--wrt", "z")
    assert done.returncode == 0, done.stderr
    assert "OK: worst relative error" in done.stdout
    assert "0.2102436159" in done.stdout


def test_cli_check_refuses_a_non_literal_argument():
    done = run_cli("check", "examples/bessel.py", "besselj", "--args", "2", "os.getcwd()")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "not a Python literal" in done.stderr


def test_cli_check_reports_a_failing_function_in_one_line():
    # the order v is an int the loop counts with: derivo refuses to differentiate it
    done = run_cli("check", "examples/bessel.py", "besselj", "--args", "2", "1.0", "--wrt", "v")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1
    assert "besselj: cannot differentiate with respect to v=2, which holds integers" in \
        done.stderr


def test_forward_gradient_is_unbiased():
    # The mean of M estimates has standard error ~ sqrt((n + 1) / M) |grad| per
    # component; 4000 samples of a 3-vector gradient stay within 5 of those.
    def f(x):
        return np.sum(np.sin(x) * np.array([1.0, 2.0, -1.5]))

    x = np.array([0.3, -0.4, 1.1])
    true = np.cos(x) * np.array([1.0, 2.0, -1.5])
    estimate = derivo.forward_gradient(f, samples=4000, rng=0)(x)
    bound = 5 * np.sqrt(4 / 4000) * np.linalg.norm(true)
    assert np.all(np.abs(estimate - true) < bound)
    single = derivo.forward_gradient(f, samples=1, rng=1)(x)
    assert not np.allclose(single, true)  # one sample is noisy: it is an estimate


def test_forward_gradient_of_scalars_is_reproducible():
    first = derivo.forward_gradient(smooth, wrt=(0, 1), samples=50, rng=7)(0.7, -1.3)
    again = derivo.forward_gradient(smooth, wrt=(0, 1), samples=50, rng=7)(0.7, -1.3)
    assert first == again and isinstance(first, tuple) and len(first) == 2
