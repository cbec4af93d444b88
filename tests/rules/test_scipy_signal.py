"""Every rule of the scipy.signal table, checked through the whole pipeline by
probing.table_tests: convolve and correlate in modes full, same and valid, in
one and two dimensions, by both methods, and with the second argument the
larger (valid mode then swaps them)."""

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")
import scipy.signal  # noqa: E402

import derivo  # noqa: E402
from derivo import rules  # noqa: E402
from probing import Probe, normal, table_tests  # noqa: E402

rules.load_tables()
TABLE = "derivo.rules.scipy_signal"
RTOL = 1e-6
PRELUDE = """\
import numpy as np
import scipy.signal
"""

PROBES = {}


def probe(primitive, expr, *args):
    p = Probe(primitive, expr, args)
    PROBES.setdefault(p.key, []).append(p)


for _f in (scipy.signal.convolve, scipy.signal.correlate):
    _call = "scipy.signal." + _f.__name__
    probe(_f, _call + "(x0, x1)", normal(5), normal(3))
    for _mode in ("full", "same", "valid"):
        probe(_f, _call + "(x0, x1, mode={!r})".format(_mode), normal(6), normal(3))
        probe(_f, _call + "(x0, x1, {!r})".format(_mode), normal(3), normal(5))
        probe(_f, _call + "(x0, x1, {!r}, method='fft')".format(_mode), normal(4, 5), normal(2, 3))
    probe(_f, _call + "(x0, np.array([1.0, -2.0, 0.5]), 'same')", normal(6))

(test_rule_matches_finite_differences, test_rule_dot_product,
 test_rule_forward_matches_finite_differences,
 test_every_rule_has_a_probe) = table_tests(TABLE, PROBES, PRELUDE, RTOL, "signal")


def test_a_complex_kernel_follows_jax_convention():
    """The adjoint of a real signal convolved with a complex kernel is real: the
    real part of the plain transpose, as JAX gives."""
    x = np.array([0.5, -1.0, 2.0, 0.3])
    kernel = np.array([1.0 + 2.0j, -0.5j])

    def power(x):
        return np.sum(np.abs(scipy.signal.convolve(x, kernel)) ** 2)

    gradient = derivo.grad(power)(x)
    h, expected = 1e-6, np.zeros(4)
    for i in range(4):
        step = np.zeros(4)
        step[i] = h
        expected[i] = (power(x + step) - power(x - step)) / (2 * h)
    assert not np.iscomplexobj(gradient)
    np.testing.assert_allclose(gradient, expected, rtol=1e-6)
