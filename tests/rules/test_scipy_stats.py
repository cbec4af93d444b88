"""Every rule of the scipy.stats table, checked through the whole pipeline
(derivo's gradient and derivo.jvp against central finite differences, the
dot-product test of derivo.vjp) at points inside each distribution's support:
the data, loc, scale and shape parameters, given by position, by keyword and
frozen (``norm(mu, s).logpdf(x)``)."""

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")
import scipy.stats  # noqa: E402

import derivo  # noqa: E402
from derivo import rules  # noqa: E402
from probing import Probe, normal, positive, table_tests, unit_interval  # noqa: E402

rules.load_tables()
TABLE = "derivo.rules.scipy_stats"
RTOL = 1e-6
PRELUDE = """\
import numpy as np
import scipy.stats
from scipy.stats import multivariate_normal, norm

K = np.array([0.0, 1.0, 3.0, 5.0])
SPD = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]])
"""

PROBES = {}


def probe(primitive, expr, *args):
    p = Probe(primitive, expr, args)
    PROBES.setdefault(p.key, []).append(p)


def below_zero(*shape):
    """A loc in (-0.9, -0.1), left of data drawn by positive or unit_interval."""
    return lambda rng: unit_interval(*shape)(rng) - 1.0


st = scipy.stats
DENSITIES = ("logpdf", "pdf")
METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")
for _method in METHODS:
    for _name in ("norm", "laplace", "logistic", "cauchy"):
        _f = getattr(getattr(st, _name), _method)
        _call = "scipy.stats.{}.{}".format(_name, _method)
        probe(_f, _call + "(x0)", normal(3, 4))
        probe(_f, _call + "(x0, x1, x2)", normal(3, 4), normal(4), positive())
        probe(_f, _call + "(x0, loc=x1, scale=x2)", normal(5), normal(), positive(5))
    _f = getattr(st.expon, _method)
    probe(_f, "scipy.stats.expon.{}(x0, x1, x2)".format(_method), positive(3, 4), below_zero(4),
          positive())
    probe(_f, "scipy.stats.expon.{}(x0, scale=x1)".format(_method), positive(5), positive())
    # data inside [loc, loc + scale]
    _f = getattr(st.uniform, _method)
    probe(_f, "scipy.stats.uniform.{}(x0, x1, x2 + 1.5)".format(_method), unit_interval(3, 4),
          below_zero(4), positive())
    # a shape is differentiated in the densities only: constant elsewhere
    _shape = "x1" if _method in DENSITIES else "3.0"
    _shapes = [positive()] if _method in DENSITIES else []
    _f = getattr(st.t, _method)
    probe(_f, "scipy.stats.t.{}(x0, {})".format(_method, "x1" if _shapes else "3.0"),
          normal(3, 4), *([positive(4)] if _shapes else []))
    probe(_f, "scipy.stats.t.{}(x0, {}, loc=x{}, scale=x{})".format(
        _method, _shape, len(_shapes) + 1, len(_shapes) + 2), normal(5), *_shapes, normal(),
        positive())
    for _name in ("chi2", "gamma"):
        _f = getattr(getattr(st, _name), _method)
        probe(_f, "scipy.stats.{}.{}(x0, {} + 1.0)".format(
            _name, _method, "x1" if _shapes else "2.0"), positive(3, 4),
            *([positive(4)] if _shapes else []))
        probe(_f, "scipy.stats.{}.{}(x0, {}, x{}, x{})".format(
            _name, _method, _shape, len(_shapes) + 1, len(_shapes) + 2), positive(5), *_shapes,
            below_zero(), positive())
    _f = getattr(st.beta, _method)
    _ab = "x1, x2" if _shapes else "2.0, 3.0"
    _ab_args = [positive(4), positive()] if _shapes else []
    probe(_f, "scipy.stats.beta.{}(x0, {})".format(_method, _ab), unit_interval(3, 4), *_ab_args)
    probe(_f, "scipy.stats.beta.{}(x0, {}, x{} - 1.0, x{} + 2.5)".format(
        _method, _ab, len(_ab_args) + 1, len(_ab_args) + 2), unit_interval(5),
        *[positive() for _ in _ab_args], unit_interval(), positive(5))
    # frozen, as one writes it
    probe(getattr(st.norm, _method), "norm(x1, x2).{}(x0)".format(_method), normal(4), normal(),
          positive())
    probe(getattr(st.norm, _method), "norm(loc=x1).{}(x0)".format(_method), normal(4), normal())
    probe(getattr(st.t, _method), "scipy.stats.t(3.0, x1, scale=x2).{}(x0)".format(_method),
          normal(4), normal(), positive())
for _method in DENSITIES:
    probe(getattr(st.gamma, _method), "scipy.stats.gamma(x1, scale=x2).{}(x0)".format(_method),
          positive(4), positive(), positive())
probe(st.norm.logcdf, "scipy.stats.norm.logcdf(x0 - 30.0)", normal(4))  # far in the lower tail
probe(st.norm.logsf, "scipy.stats.norm.logsf(x0 + 30.0)", normal(4))  # far in the upper tail

for _method in ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"):
    _f = getattr(st.poisson, _method)
    probe(_f, "scipy.stats.poisson.{}(K, x0)".format(_method), positive(4))
    # shifted by loc = 1; the cumulative ones between the integers
    probe(_f, "scipy.stats.poisson.{}(K + {}, x0 + 1.0, 1)".format(
        _method, "1.0" if "pmf" in _method else "1.5"), positive())
    probe(_f, "scipy.stats.poisson(x0).{}(K)".format(_method), positive())

for _method in DENSITIES:
    _f = getattr(st.dirichlet, _method)
    # points on the simplex: components along the first axis
    probe(_f, "scipy.stats.dirichlet.{}(x0 / np.sum(x0), x1)".format(_method), positive(3),
          positive(3))
    probe(_f, "scipy.stats.dirichlet.{}(x0 / np.sum(x0, axis=0), x1 + 1.0)".format(_method),
          positive(3, 4), positive(3))
    probe(_f, "scipy.stats.dirichlet(x1).{}(x0 / np.sum(x0))".format(_method), positive(3),
          positive(3))

    _f = getattr(st.multivariate_normal, _method)
    _call = "scipy.stats.multivariate_normal." + _method
    probe(_f, _call + "(x0, x1, SPD)", normal(4, 3), normal(3))
    probe(_f, _call + "(x0, x1, SPD)", normal(3), normal(3))
    probe(_f, _call + "(x0, mean=x1)", normal(4, 3), normal(3))
    probe(_f, _call + "(x0, x1, x2 @ x2.T + np.eye(3))", normal(4, 3), normal(3), normal(3, 3))
    probe(_f, _call + "(x0, x1, x2)", normal(4, 3), normal(3), positive())
    # a keyword argument after one left out: its own tangent rule, not its place's
    probe(_f, _call + "(x0, cov=x1 @ x1.T + np.eye(3))", normal(4, 3), normal(3, 3))
    probe(_f, "multivariate_normal(x1, x2 @ x2.T + np.eye(3)).{}(x0)".format(_method),
          normal(4, 3), normal(3), normal(3, 3))

(test_rule_matches_finite_differences, test_rule_dot_product,
 test_rule_forward_matches_finite_differences,
 test_every_rule_has_a_probe) = table_tests(TABLE, PROBES, PRELUDE, RTOL, "stats")


# --- refusals -----------------------------------------------------------------------

def cdf_in_its_shape(df, x):
    return scipy.stats.t.cdf(x, df)


def frozen_in_a_variable(mu, x):
    dist = scipy.stats.norm(mu, 1.0)
    mu = 3.0 * mu  # (dist keeps the mu it froze)
    return dist.logpdf(x) + dist.cdf(x) + mu


def frozen_by_keywords_in_a_loop(shape, xs):
    total = 0.0
    for x in xs:
        dist = scipy.stats.gamma(a=shape, scale=2.0)
        total = total + dist.logpdf(x) * dist.logpdf(x + 1.0)
    return total


def frozen_twice(mu, x):
    dist = scipy.stats.norm(mu, 1.0)
    if x > 0:
        dist = scipy.stats.norm(2.0 * mu, 1.0)
    return dist.logpdf(x)


def frozen_and_passed_on(mu, x):
    dist = scipy.stats.norm(mu, 1.0)
    return log_density(dist, x)


def log_density(dist, x):
    return dist.logpdf(x)


def test_a_cdf_in_a_shape_parameter_is_refused():
    with pytest.raises(derivo.NoDerivativeRule, match="its argument 'df'") as info:
        derivo.grad(cdf_in_its_shape)(3.0, 0.5)
    assert str(info.value).startswith(__file__)
    # in the data it is differentiated
    assert derivo.grad(cdf_in_its_shape, wrt=1)(3.0, 0.5) == pytest.approx(
        scipy.stats.t.pdf(0.5, 3.0))


@pytest.mark.parametrize("f,args", [(frozen_in_a_variable, (0.2, 0.5)),
                                    (frozen_by_keywords_in_a_loop, (2.5, np.array([0.5, 1.5])))])
def test_a_frozen_distribution_held_in_a_name_assigned_once_is_differentiated(f, args):
    h = 1e-6
    for index in range(len(args)):
        if np.ndim(args[index]):
            continue
        up, down = list(args), list(args)
        up[index], down[index] = args[index] + h, args[index] - h
        expected = (f(*up) - f(*down)) / (2 * h)
        assert derivo.grad(f, wrt=index)(*args) == pytest.approx(expected, rel=1e-6)
        tangents = [1.0 if i == index else None for i in range(len(args))]
        assert derivo.jvp(f, args, tangents)[1] == pytest.approx(expected, rel=1e-6)


def test_a_frozen_distribution_held_in_a_name_reads_as_the_family_in_generated_code():
    source = derivo.grad(frozen_in_a_variable).source
    assert "scipy.stats.norm.logpdf(x, dist_arg, 1.0)" in source
    # no frozen distribution is made (the comments quote the source)
    assert not [line for line in source.splitlines() if line.strip().startswith("dist =")]


@pytest.mark.parametrize("f", [frozen_twice, frozen_and_passed_on])
def test_a_frozen_distribution_held_otherwise_is_refused_with_what_to_write(f):
    with pytest.raises(derivo.NoDerivativeRule, match=r"norm\.logpdf\(x, \.\.\.\)") as info:
        derivo.grad(f)(0.2, 0.5)
    assert str(info.value).startswith(__file__)


def test_a_frozen_method_reads_as_the_familys_in_generated_code():
    def loss(mu, x):
        return np.sum(scipy.stats.norm(mu, 2.0).logpdf(x))
    source = derivo.grad(loss).source
    assert "scipy.stats.norm.logpdf(x, mu, 2.0)" in source
