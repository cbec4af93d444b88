"""Every rule of the scipy.special table, checked through the whole pipeline:
derivo's gradient against central finite differences, the dot-product test of
derivo.vjp, and derivo.jvp against finite differences, at points inside each
function's domain.  The arguments a rule refuses (jv's order, gammainc's shape)
are refused, at the user's line."""

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")
import scipy.special  # noqa: E402

import derivo  # noqa: E402
from derivo import rules  # noqa: E402
from probing import Probe, normal, positive, table_tests, unit_interval  # noqa: E402

rules.load_tables()
TABLE = "derivo.rules.scipy_special"
RTOL = 1e-6
PRELUDE = """\
import numpy as np
import scipy.special
"""

PROBES = {}


def probe(primitive, expr, *args):
    p = Probe(primitive, expr, args)
    PROBES.setdefault(p.key, []).append(p)


def centred(*shape):
    return lambda rng: unit_interval(*shape)(rng) - 0.5


def above_one(*shape):
    return lambda rng: positive(*shape)(rng) + 1.0


sc = scipy.special
_ELEMENTWISE = (
    (sc.expit, normal), (sc.logit, unit_interval), (sc.log_expit, normal),
    (sc.erf, normal), (sc.erfc, normal), (sc.erfinv, centred), (sc.erfcinv, positive),
    (sc.ndtr, normal), (sc.ndtri, unit_interval), (sc.log_ndtr, normal),
    (sc.gamma, positive), (sc.gammaln, positive), (sc.digamma, positive), (sc.entr, positive),
    (sc.j0, normal), (sc.j1, normal), (sc.y0, positive), (sc.y1, positive),
    (sc.i0, normal), (sc.i1, normal), (sc.i0e, normal), (sc.i1e, normal),
)
for _f, _domain in _ELEMENTWISE:
    for _shape in ((3, 4), ()):
        probe(_f, "scipy.special.{}(x0)".format(_f.__name__), _domain(*_shape))
probe(sc.digamma, "scipy.special.psi(x0)", positive(3))
probe(sc.log_ndtr, "scipy.special.log_ndtr(x0 - 30.0)", normal(4))  # far in the lower tail
probe(sc.i0e, "scipy.special.i0e(50.0 * x0)", normal(4))  # where i0 overflows
for _n in (0, 2):
    probe(sc.polygamma, "scipy.special.polygamma({}, x0)".format(_n), positive(3, 2))
for _f in (sc.beta, sc.betaln):
    probe(_f, "scipy.special.{}(x0, x1)".format(_f.__name__), positive(3, 4), positive(4))
    probe(_f, "scipy.special.{}(x0, 2.5)".format(_f.__name__), positive(3))
probe(sc.multigammaln, "scipy.special.multigammaln(x0 + 2.0, 3)", positive())
probe(sc.multigammaln, "scipy.special.multigammaln(x0 + 2.0, 4)", positive(3))
for _f in (sc.gammainc, sc.gammaincc):
    probe(_f, "scipy.special.{}(2.5, x0)".format(_f.__name__), positive(3, 4))
    probe(_f, "scipy.special.{}(np.array([0.5, 1.0, 3.0]), x0)".format(_f.__name__), positive(3))
probe(sc.zeta, "scipy.special.zeta(3.0, x0)", positive(4))
probe(sc.zeta, "scipy.special.zeta(2.5, q=x0)", positive())
for _f in (sc.xlogy, sc.xlog1py):
    probe(_f, "scipy.special.{}(x0, x1)".format(_f.__name__), normal(3, 4), positive(4))
    probe(_f, "scipy.special.{}(x0, x1)".format(_f.__name__), normal(), positive(3))
for _f in (sc.jv, sc.yv, sc.iv, sc.ive, sc.kv):
    for _order in ("0", "1.5", "np.array([0.0, 1.0, 2.5])"):
        probe(_f, "scipy.special.{}({}, x0)".format(_f.__name__, _order), positive(3))
for _f in (sc.jv, sc.iv, sc.ive):  # real for x < 0 at an integer order
    probe(_f, "scipy.special.{}(np.array([0.0, 1.0, 2.0]), x0)".format(_f.__name__), normal(3))
for _keywords in ("", ", axis=0", ", axis=1, keepdims=True", ", axis=-1", ", b=x1"):
    probe(sc.logsumexp, "scipy.special.logsumexp(x0{})".format(_keywords),
          normal(3, 4), *([positive(3, 4)] if "b=" in _keywords else []))
probe(sc.logsumexp, "scipy.special.logsumexp(1000.0 * x0)", normal(5))
for _f in (sc.softmax, sc.log_softmax):
    for _keywords in ("", ", axis=0", ", axis=-1"):
        probe(_f, "scipy.special.{}(x0{})".format(_f.__name__, _keywords), normal(3, 4))

(test_rule_matches_finite_differences, test_rule_dot_product,
 test_rule_forward_matches_finite_differences,
 test_every_rule_has_a_probe) = table_tests(TABLE, PROBES, PRELUDE, RTOL, "special")


def bessel_in_its_order(v, x):
    return scipy.special.jv(v, x) * x


def gammainc_in_its_shape(a, x):
    return scipy.special.gammainc(a, x)


def zeta_in_its_exponent(s):
    return scipy.special.zeta(s, 2.0)


@pytest.mark.parametrize("f,args,param", [(bessel_in_its_order, (1.5, 2.0), "v"),
                                          (gammainc_in_its_shape, (1.5, 2.0), "a"),
                                          (zeta_in_its_exponent, (3.0,), "x")])
@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_an_argument_without_a_closed_form_is_refused(f, args, param, mode):
    with pytest.raises(derivo.NoDerivativeRule, match="its argument '{}'".format(param)) as info:
        if mode == "grad":
            derivo.grad(f)(*args)
        else:
            derivo.jvp(f, args, tuple(1.0 for _ in args))
    assert str(info.value).startswith(__file__)


def test_scipy_is_not_imported_by_derivo():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", "import sys, derivo; print('scipy' in sys.modules)"],
                         capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr
