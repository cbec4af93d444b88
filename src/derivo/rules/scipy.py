"""Derivatives of SciPy: scipy.special, scipy.linalg, scipy.stats.

SciPy is optional, and importing it is slow (scipy.stats imports np.random), so
derivo never imports it itself: each function below registers one submodule's
rules, and :func:`derivo.rules.load_tables` calls it once the user's program
has imported that submodule.  Elementwise functions give partials, the others
VJPs with their JVPs beside them.  Stable forms throughout: log_ndtr's partial
is exp(log pdf - log cdf), logsumexp's shares are exp(a - logsumexp).
"""

import math

import numpy as np

from ..adjoints import (logsumexp_jvp, logsumexp_jvp_b, logsumexp_vjp, logsumexp_vjp_b, mvn_logpdf_jvp_cov,
                        mvn_logpdf_jvp_residual, mvn_logpdf_vjp_cov, mvn_logpdf_vjp_mean,
                        mvn_logpdf_vjp_x, solve_triangular_jvp_a, solve_triangular_vjp_a,
                        solve_triangular_vjp_b)
from . import CONSTANT, NEW, defjvp, defpartials, defvjp

SQRT_2PI = math.sqrt(2 * math.pi)


def special():
    global sc  # the templates read it as a module-level name
    import scipy.special as sc

    def spelled(name):
        return "scipy.special." + name

    defpartials(sc.expit, lambda ans, x: ans * (1 - ans), label=spelled("expit"))
    defpartials(sc.logit, lambda ans, x: 1 / (x * (1 - x)), label=spelled("logit"))
    defpartials(sc.log_expit, lambda ans, x: sc.expit(-x), label=spelled("log_expit"))
    defpartials(sc.gammaln, lambda ans, x: sc.digamma(x), label=spelled("gammaln"))
    defpartials(sc.digamma, lambda ans, x: sc.polygamma(1, x), label=spelled("digamma"))
    defpartials(sc.erf, lambda ans, x: 2 / math.sqrt(math.pi) * np.exp(-x * x), label=spelled("erf"))
    defpartials(sc.erfc, lambda ans, x: -2 / math.sqrt(math.pi) * np.exp(-x * x), label=spelled("erfc"))
    defpartials(sc.erfinv, lambda ans, x: math.sqrt(math.pi) / 2 * np.exp(ans * ans), label=spelled("erfinv"))
    defpartials(sc.ndtr, lambda ans, x: np.exp(-0.5 * x * x) / SQRT_2PI, label=spelled("ndtr"))
    defpartials(sc.log_ndtr, lambda ans, x: np.exp(-0.5 * x * x - ans) / SQRT_2PI, label=spelled("log_ndtr"))
    defpartials(sc.xlogy, lambda ans, x, y: np.log(y), lambda ans, x, y: x / y, label=spelled("xlogy"))
    defpartials(sc.xlog1py, lambda ans, x, y: np.log1p(y), lambda ans, x, y: x / (1 + y), label=spelled("xlog1py"))
    defvjp(sc.logsumexp, lambda g, ans, a, axis=None, b=None, keepdims=False, return_sign=False: logsumexp_vjp(g, ans, a, axis, b, keepdims, return_sign), CONSTANT,
           lambda g, ans, a, axis=None, b=None, keepdims=False, return_sign=False: logsumexp_vjp_b(g, ans, a, axis, b, keepdims, return_sign),
           label=spelled("logsumexp"), returns=NEW)
    defjvp(sc.logsumexp, lambda t, ans, a, axis=None, b=None, keepdims=False, return_sign=False: logsumexp_jvp(t, ans, a, axis, b, keepdims, return_sign), CONSTANT,
           lambda t, ans, a, axis=None, b=None, keepdims=False, return_sign=False: logsumexp_jvp_b(t, ans, a, axis, keepdims))
    defvjp(sc.softmax, lambda g, ans, x, axis=None: ans * (g - np.sum(g * ans, axis=axis, keepdims=True)), label=spelled("softmax"), returns=NEW)
    defjvp(sc.softmax, lambda t, ans, x, axis=None: ans * (t - np.sum(t * ans, axis=axis, keepdims=True)))
    defvjp(sc.log_softmax, lambda g, ans, x, axis=None: g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True), label=spelled("log_softmax"), returns=NEW)
    defjvp(sc.log_softmax, lambda t, ans, x, axis=None: t - np.sum(np.exp(ans) * t, axis=axis, keepdims=True))


def linalg():
    global la
    import scipy.linalg as la

    # x = op(A)^-1 b with A read in one triangle: the adjoints solve with op(A)^T
    defvjp(la.solve_triangular,
           lambda g, ans, a, b, trans=0, lower=False: solve_triangular_vjp_a(g, ans, a, b, trans, lower),
           lambda g, ans, a, b, trans=0, lower=False: solve_triangular_vjp_b(g, a, trans, lower),
           label="scipy.linalg.solve_triangular", returns=NEW)
    defjvp(la.solve_triangular,
           lambda t, ans, a, b, trans=0, lower=False: solve_triangular_jvp_a(t, ans, a, trans, lower),
           lambda t, ans, a, b, trans=0, lower=False: la.solve_triangular(a, t, trans=trans, lower=lower))


def stats():
    global multivariate_normal, norm, student_t
    from scipy.stats import multivariate_normal, norm
    from scipy.stats import t as student_t

    # the normal distribution in z = (x - loc) / scale: d/dx = -d/dloc
    defpartials(norm.logpdf, lambda ans, x, loc=0, scale=1: -(x - loc) / (scale * scale),
                lambda ans, x, loc=0, scale=1: (x - loc) / (scale * scale),
                lambda ans, x, loc=0, scale=1: ((x - loc) * (x - loc) / (scale * scale) - 1) / scale,
                label="scipy.stats.norm.logpdf")
    defpartials(norm.pdf, lambda ans, x, loc=0, scale=1: -ans * (x - loc) / (scale * scale),
                lambda ans, x, loc=0, scale=1: ans * (x - loc) / (scale * scale),
                lambda ans, x, loc=0, scale=1: ans * ((x - loc) * (x - loc) / (scale * scale) - 1) / scale,
                label="scipy.stats.norm.pdf")
    defpartials(norm.cdf, lambda ans, x, loc=0, scale=1: norm.pdf(x, loc, scale),
                lambda ans, x, loc=0, scale=1: -norm.pdf(x, loc, scale),
                lambda ans, x, loc=0, scale=1: -norm.pdf(x, loc, scale) * (x - loc) / scale,
                label="scipy.stats.norm.cdf")
    # exp(log pdf - log cdf): finite far in the lower tail, where cdf underflows
    defpartials(norm.logcdf, lambda ans, x, loc=0, scale=1: np.exp(norm.logpdf(x, loc, scale) - ans),
                lambda ans, x, loc=0, scale=1: -np.exp(norm.logpdf(x, loc, scale) - ans),
                lambda ans, x, loc=0, scale=1: -np.exp(norm.logpdf(x, loc, scale) - ans) * (x - loc) / scale,
                label="scipy.stats.norm.logcdf")
    # Student's t in z = (x - loc) / scale with df degrees of freedom
    defpartials(student_t.logpdf, lambda ans, x, df, loc=0, scale=1: -(df + 1) * (x - loc) / (df * scale * scale + (x - loc) * (x - loc)),
                lambda ans, x, df, loc=0, scale=1: t_logpdf_ddf(x, df, loc, scale),
                lambda ans, x, df, loc=0, scale=1: (df + 1) * (x - loc) / (df * scale * scale + (x - loc) * (x - loc)),
                lambda ans, x, df, loc=0, scale=1: ((df + 1) * (x - loc) * (x - loc) / (df * scale * scale + (x - loc) * (x - loc)) - 1) / scale,
                label="scipy.stats.t.logpdf")
    defvjp(multivariate_normal.logpdf,
           lambda g, ans, x, mean=None, cov=1: mvn_logpdf_vjp_x(g, ans, x, mean, cov),
           lambda g, ans, x, mean=None, cov=1: mvn_logpdf_vjp_mean(g, ans, x, mean, cov),
           lambda g, ans, x, mean=None, cov=1: mvn_logpdf_vjp_cov(g, ans, x, mean, cov),
           label="scipy.stats.multivariate_normal.logpdf", returns=NEW)
    defjvp(multivariate_normal.logpdf,
           lambda t, ans, x, mean=None, cov=1: mvn_logpdf_jvp_residual(t, ans, x, mean, cov),
           lambda t, ans, x, mean=None, cov=1: mvn_logpdf_jvp_residual(-t, ans, x, mean, cov),
           lambda t, ans, x, mean=None, cov=1: mvn_logpdf_jvp_cov(t, ans, x, mean, cov))


def t_logpdf_ddf(x, df, loc, scale):
    """d/d df of scipy.stats.t.logpdf(x, df, loc, scale)."""
    from scipy.special import digamma
    z2 = (x - loc) * (x - loc) / (scale * scale)
    return 0.5 * (digamma((df + 1) / 2) - digamma(df / 2) - 1 / df - np.log1p(z2 / df)
                  + (df + 1) * z2 / (df * (df + z2)))


#: submodule -> the function registering its rules
TABLES = {"scipy.special": special, "scipy.linalg": linalg, "scipy.stats": stats}
