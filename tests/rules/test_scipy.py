"""Every rule of the SciPy table, checked through the whole pipeline (as the
NumPy table's rules are in test_numpy.py): derivo's gradient against central
finite differences, the dot-product test of derivo.vjp, and derivo.jvp against
finite differences.  Skipped without SciPy; derivo registers these rules only
once the program has imported SciPy's submodules."""

import zlib

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")
import scipy.linalg  # noqa: E402
import scipy.special  # noqa: E402
import scipy.stats  # noqa: E402

import derivo  # noqa: E402
from derivo import rules  # noqa: E402
from probing import (H, Probe, assert_gradient_matches_differences, coverage_gaps, load,  # noqa: E402
                     normal, positive, random_like, rule_cases, rule_of, table_rules)

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


def unit_interval(*shape):
    return lambda rng: rng.uniform(0.1, 0.9, size=shape) if shape else float(rng.uniform(0.1, 0.9))


def spd(rng):
    m = rng.normal(size=(3, 3)) * 0.3
    return m @ m.T + np.eye(3)


PROBES = {}


def probe(primitive, expr, *args):
    p = Probe(primitive, expr, args)
    PROBES.setdefault(p.key, []).append(p)


sc = scipy.special
for _f, _domain in ((sc.expit, normal), (sc.logit, unit_interval), (sc.log_expit, normal),
                    (sc.gammaln, positive), (sc.digamma, positive), (sc.erf, normal),
                    (sc.erfc, normal), (sc.erfinv, lambda *s: (lambda rng: unit_interval(*s)(rng) - 0.5)),
                    (sc.ndtr, normal), (sc.log_ndtr, normal)):
    for _shape in ((3, 4), ()):
        probe(_f, "scipy.special.{}(x0)".format(_f.__name__), _domain(*_shape))
probe(sc.log_ndtr, "scipy.special.log_ndtr(x0 - 30.0)", normal(4))  # far in the lower tail
for _f in (sc.xlogy, sc.xlog1py):
    probe(_f, "scipy.special.{}(x0, x1)".format(_f.__name__), normal(3, 4), positive(4))
    probe(_f, "scipy.special.{}(x0, x1)".format(_f.__name__), normal(), positive(3))
for _keywords in ("", ", axis=0", ", axis=1, keepdims=True", ", axis=-1", ", b=x1"):
    probe(sc.logsumexp, "scipy.special.logsumexp(x0{})".format(_keywords),
          normal(3, 4), *([positive(3, 4)] if "b=" in _keywords else []))
probe(sc.logsumexp, "scipy.special.logsumexp(1000.0 * x0)", normal(5))
for _f in (sc.softmax, sc.log_softmax):
    for _keywords in ("", ", axis=0", ", axis=-1"):
        probe(_f, "scipy.special.{}(x0{})".format(_f.__name__, _keywords), normal(3, 4))

_norm = scipy.stats.norm
for _method in ("logpdf", "pdf", "cdf", "logcdf"):
    _f = getattr(_norm, _method)
    probe(_f, "scipy.stats.norm.{}(x0)".format(_method), normal(3, 4))
    probe(_f, "scipy.stats.norm.{}(x0, x1, x2)".format(_method), normal(3, 4), normal(4), positive())
    probe(_f, "scipy.stats.norm.{}(x0, loc=x1, scale=x2)".format(_method), normal(5), normal(), positive(5))
probe(_norm.logcdf, "scipy.stats.norm.logcdf(x0 - 30.0)", normal(4))
_t = scipy.stats.t
probe(_t.logpdf, "scipy.stats.t.logpdf(x0, x1)", normal(3, 4), positive(4))
probe(_t.logpdf, "scipy.stats.t.logpdf(x0, x1, x2, x3)", normal(5), positive(), normal(5), positive())
probe(_t.logpdf, "scipy.stats.t.logpdf(x0, 3.0, scale=x1)", normal(5), positive())
_mvn = scipy.stats.multivariate_normal
probe(_mvn.logpdf, "scipy.stats.multivariate_normal.logpdf(x0, x1, SPD)", normal(4, 3), normal(3))
probe(_mvn.logpdf, "scipy.stats.multivariate_normal.logpdf(x0, x1, SPD)", normal(3), normal(3))
probe(_mvn.logpdf, "scipy.stats.multivariate_normal.logpdf(x0, mean=x1)", normal(4, 3), normal(3))
probe(_mvn.logpdf, "scipy.stats.multivariate_normal.logpdf(x0, x1, x2 @ x2.T + np.eye(3))",
      normal(4, 3), normal(3), normal(3, 3))
probe(_mvn.logpdf, "scipy.stats.multivariate_normal.logpdf(x0, x1, x2)", normal(4, 3), normal(3),
      positive())
# a keyword argument after one left out: its own tangent rule, not its place's
probe(_mvn.logpdf, "scipy.stats.multivariate_normal.logpdf(x0, cov=x1 @ x1.T + np.eye(3))",
      normal(4, 3), normal(3, 3))


def check_dot_product(p, tmp_path):
    arguments = p.arguments()
    module = load(tmp_path, PRELUDE, p, arguments, "scipy")
    rng = np.random.default_rng(zlib.crc32(p.expr.encode()))
    out, vjp_fn = derivo.vjp(module.probe, *arguments)
    u = random_like(rng, out)
    v = [random_like(rng, x) for x in arguments]
    cotangents = vjp_fn(u)
    up = [x + H * d for x, d in zip(arguments, v)]
    down = [x - H * d for x, d in zip(arguments, v)]
    jvp = (np.asarray(module.probe(*up)) - np.asarray(module.probe(*down))) / (2 * H)
    assert float(np.sum(jvp * u)) == pytest.approx(
        float(sum(np.sum(d * ct) for d, ct in zip(v, cotangents))), rel=RTOL, abs=1e-8)


def check_forward(p, tmp_path):
    arguments = p.arguments()
    module = load(tmp_path, PRELUDE, p, arguments, "scipy")
    rng = np.random.default_rng(zlib.crc32(p.expr.encode()) + 1)
    v = [random_like(rng, x) for x in arguments]
    _, tangent = derivo.jvp(module.probe, tuple(arguments), tuple(v))
    up = [x + H * d for x, d in zip(arguments, v)]
    down = [x - H * d for x, d in zip(arguments, v)]
    expected = (np.asarray(module.probe(*up)) - np.asarray(module.probe(*down))) / (2 * H)
    assert np.shape(tangent) == np.shape(expected)
    np.testing.assert_allclose(tangent, expected, rtol=RTOL, atol=1e-8)


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
    check_dot_product(p, tmp_path)


@pytest.mark.parametrize("key,p", CASES)
def test_rule_forward_matches_finite_differences(key, p, tmp_path):
    assert p is not None
    check_forward(p, tmp_path)


def test_every_scipy_rule_has_a_probe():
    missing, stale = coverage_gaps(PROBES, table_rules(TABLE), TABLE)
    assert not missing, "rules with no probe: " + ", ".join(missing)
    assert not stale, "probes for rules not in the SciPy table: " + ", ".join(stale)
