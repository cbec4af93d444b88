"""Every rule of the scipy.linalg table, checked through the whole pipeline (as the
NumPy table's rules are in test_numpy.py): derivo's gradient against central
finite differences, the dot-product test of derivo.vjp, and derivo.jvp against
finite differences.  Skipped without SciPy; derivo registers these rules only
once the program has imported SciPy's submodules."""

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")
import scipy.linalg  # noqa: E402
import scipy.special  # noqa: E402
import scipy.stats  # noqa: E402

from derivo import rules  # noqa: E402
from probing import (Probe, assert_gradient_matches_differences, check_dot_product,  # noqa: E402
                     check_forward, coverage_gaps, load, normal, rule_cases, rule_of,
                     table_rules)

rules.load_tables()
TABLE = "derivo.rules.scipy"
RTOL = 1e-6
PRELUDE = """\
import numpy as np
import scipy.linalg
import scipy.special
import scipy.stats

SPD = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]])
"""


def triangular(lower):
    def make(rng):
        m = rng.normal(size=(3, 3)) * 0.3 + 2.0 * np.eye(3)
        return np.tril(m) if lower else np.triu(m)
    return make


def spd(rng):
    m = rng.normal(size=(3, 3)) * 0.3
    return m @ m.T + np.eye(3)


PROBES = {}


def probe(primitive, expr, *args):
    p = Probe(primitive, expr, args)
    PROBES.setdefault(p.key, []).append(p)


for _lower in (True, False):
    for _trans in (0, 1):
        for _b in ((3,), (3, 2)):
            probe(scipy.linalg.solve_triangular,
                  "scipy.linalg.solve_triangular(x0, x1, trans={}, lower={})".format(_trans, _lower),
                  triangular(_lower), normal(*_b))
probe(scipy.linalg.solve_triangular, "scipy.linalg.solve_triangular(x0, x1)",
      triangular(False), normal(3))


CASES = list(rule_cases(TABLE, PROBES))


@pytest.mark.parametrize("key,p", CASES)
def test_rule_matches_finite_differences(key, p, tmp_path):
    assert p is not None, "no probe in tests/rules/test_scipy.py for " + rule_of(key).label
    arguments = p.arguments()
    assert_gradient_matches_differences(load(tmp_path, PRELUDE, p, arguments, "scipy"),
                                        arguments, RTOL)


@pytest.mark.parametrize("key,p", CASES)
def test_rule_dot_product(key, p, tmp_path):
    assert p is not None
    arguments = p.arguments()
    check_dot_product(load(tmp_path, PRELUDE, p, arguments, "scipy"), p, arguments, RTOL)


@pytest.mark.parametrize("key,p", CASES)
def test_rule_forward_matches_finite_differences(key, p, tmp_path):
    assert p is not None
    arguments = p.arguments()
    check_forward(load(tmp_path, PRELUDE, p, arguments, "scipy"), p, arguments, RTOL)


def test_every_scipy_rule_has_a_probe():
    missing, stale = coverage_gaps(PROBES, table_rules(TABLE), TABLE)
    assert not missing, "rules with no probe: " + ", ".join(missing)
    assert not stale, "probes for rules not in the SciPy table: " + ", ".join(stale)
