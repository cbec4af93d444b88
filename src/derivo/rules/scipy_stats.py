"""Derivatives of scipy.stats distributions, registered by :func:`register` once
the user's program has imported scipy.stats (see :mod:`derivo.rules.scipy`).

A continuous family is written in z = (x - loc) / scale by the derivatives of
its standard log density log f(z; shapes): its ``score`` d/dz and its
``shape_scores`` d/d shape.  Every method follows from them:

    logpdf = log f(z) - log scale     d/dx = score / scale = -d/dloc
                                       d/dscale = -(1 + z score) / scale
    pdf    = exp(logpdf)              ans times logpdf's partials
    cdf, sf, logcdf, logsf            in x, loc, scale: +-pdf (over the cdf or
                                       the sf for the logs, as exp(logpdf - ans):
                                       finite far in a tail)

A cdf's derivative in a shape parameter has no closed form: None, refused.
Discrete (poisson) and multivariate families (dirichlet, multivariate_normal)
are written out.  A frozen distribution's method, ``norm(mu, s).logpdf(x)``, is
called on its family by derivo (see ``parse._unfreeze_distributions``).
"""

import numpy as np

from ..adjoints import (mvn_logpdf_jvp_cov, mvn_logpdf_jvp_residual, mvn_logpdf_vjp_cov,
                        mvn_logpdf_vjp_mean, mvn_logpdf_vjp_x)
from ..errors import DerivoError
from . import CONSTANT, NEW, defjvp, defpartials, defvjp

METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")


class LocScale:
    """The partials of one method of a location-scale family of scipy.stats,
    held in this module as ``<family>_<method>`` (so a saved derivative imports it)."""

    def __init__(self, dist, method, score, shape_scores=()):
        self.dist, self.method = dist, method
        self.score, self.shape_scores = score, shape_scores
        self.__module__, self.__qualname__ = __name__, "{}_{}".format(dist.name, method)
        globals()[self.__qualname__] = self

    def x(self, ans, x, shapes, loc, scale):
        return self._moving(ans, x, shapes, loc, scale, 1)

    def loc(self, ans, x, shapes, loc, scale):
        return -self._moving(ans, x, shapes, loc, scale, 1)

    def scale(self, ans, x, shapes, loc, scale):
        z = (x - loc) / scale
        if self.method in ("logpdf", "pdf"):
            return self._density(ans, -(1 + z * self.score(z, *shapes))) / scale
        return -self._moving(ans, x, shapes, loc, scale, z)

    def shape(self, index, ans, x, shapes, loc, scale):
        z = (x - loc) / scale
        return self._density(ans, self.shape_scores[index](z, *shapes))

    def _density(self, ans, partial_of_log):
        return partial_of_log if self.method == "logpdf" else ans * partial_of_log

    def _moving(self, ans, x, shapes, loc, scale, weight):
        """The partial in x, times ``weight`` (d/dloc = -d/dx, d/dscale = -z d/dx)."""
        z = (x - loc) / scale
        if self.method in ("logpdf", "pdf"):
            return self._density(ans, self.score(z, *shapes) / scale) * weight
        log_density = self.dist.logpdf(x, *shapes, loc=loc, scale=scale)
        with np.errstate(invalid="ignore"):
            if self.method == "cdf":
                return np.exp(log_density) * weight
            if self.method == "sf":
                return -np.exp(log_density) * weight
            shares = np.exp(log_density - ans)  # the density over the cdf or the sf
            return np.where(np.isfinite(log_density), shares, 0.0) * (
                weight if self.method == "logcdf" else -weight)


def partials_without_shape(rule):
    return (lambda ans, x, loc=0, scale=1: rule.x(ans, x, (), loc, scale),
            lambda ans, x, loc=0, scale=1: rule.loc(ans, x, (), loc, scale),
            lambda ans, x, loc=0, scale=1: rule.scale(ans, x, (), loc, scale))


def partials_in_df(rule):
    return (lambda ans, x, df, loc=0, scale=1: rule.x(ans, x, (df,), loc, scale),
            lambda ans, x, df, loc=0, scale=1: rule.shape(0, ans, x, (df,), loc, scale),
            lambda ans, x, df, loc=0, scale=1: rule.loc(ans, x, (df,), loc, scale),
            lambda ans, x, df, loc=0, scale=1: rule.scale(ans, x, (df,), loc, scale))


def partials_in_a(rule):
    return (lambda ans, x, a, loc=0, scale=1: rule.x(ans, x, (a,), loc, scale),
            lambda ans, x, a, loc=0, scale=1: rule.shape(0, ans, x, (a,), loc, scale),
            lambda ans, x, a, loc=0, scale=1: rule.loc(ans, x, (a,), loc, scale),
            lambda ans, x, a, loc=0, scale=1: rule.scale(ans, x, (a,), loc, scale))


def partials_in_a_b(rule):
    return (lambda ans, x, a, b, loc=0, scale=1: rule.x(ans, x, (a, b), loc, scale),
            lambda ans, x, a, b, loc=0, scale=1: rule.shape(0, ans, x, (a, b), loc, scale),
            lambda ans, x, a, b, loc=0, scale=1: rule.shape(1, ans, x, (a, b), loc, scale),
            lambda ans, x, a, b, loc=0, scale=1: rule.loc(ans, x, (a, b), loc, scale),
            lambda ans, x, a, b, loc=0, scale=1: rule.scale(ans, x, (a, b), loc, scale))


# --- standard log densities: d/dz and d/d shape ---------------------------------------

def t_score(z, df):
    return -(df + 1) * z / (df + z * z)


def t_df_score(z, df):
    from scipy.special import digamma
    return 0.5 * (digamma((df + 1) / 2) - digamma(df / 2) - 1 / df - np.log1p(z * z / df)
                  + (df + 1) * z * z / (df * (df + z * z)))


def gamma_a_score(z, a):
    from scipy.special import digamma
    return np.log(z) - digamma(a)


def beta_a_score(z, a, b):
    from scipy.special import digamma
    return np.log(z) - digamma(a) + digamma(a + b)


def beta_b_score(z, a, b):
    from scipy.special import digamma
    return np.log1p(-z) - digamma(b) + digamma(a + b)


def chi2_df_score(z, df):
    from scipy.special import digamma
    return 0.5 * (np.log(z / 2) - digamma(df / 2))


#: family -> (how its templates take the shapes, score, shape scores)
CONTINUOUS = {
    "norm": (partials_without_shape, lambda z: -z, ()),
    "laplace": (partials_without_shape, lambda z: -np.sign(z), ()),
    "logistic": (partials_without_shape, lambda z: -np.tanh(z / 2), ()),
    "cauchy": (partials_without_shape, lambda z: -2 * z / (1 + z * z), ()),
    "expon": (partials_without_shape, lambda z: -np.ones(np.shape(z)), ()),
    "uniform": (partials_without_shape, lambda z: np.zeros(np.shape(z)), ()),
    "t": (partials_in_df, t_score, (t_df_score,)),
    "chi2": (partials_in_df, lambda z, df: (df / 2 - 1) / z - 0.5, (chi2_df_score,)),
    "gamma": (partials_in_a, lambda z, a: (a - 1) / z - 1, (gamma_a_score,)),
    "beta": (partials_in_a_b, lambda z, a, b: (a - 1) / z - (b - 1) / (1 - z),
             (beta_a_score, beta_b_score)),
}


def dirichlet_vjp_x(adjoint, x, alpha):
    """The adjoint in x (components along the first axis) of dirichlet.logpdf."""
    _check_components(x, alpha)
    weights = np.reshape(np.asarray(alpha) - 1, (-1,) + (1,) * (np.ndim(x) - 1))
    return adjoint * weights / x


def dirichlet_vjp_alpha(adjoint, x, alpha):
    from scipy.special import digamma
    _check_components(x, alpha)
    per_point = np.log(x) + (digamma(np.sum(alpha)) - digamma(alpha)).reshape(
        (-1,) + (1,) * (np.ndim(x) - 1))
    return np.reshape(per_point * adjoint, (len(alpha), -1)).sum(axis=1)


def dirichlet_jvp(tangent_x, tangent_alpha, x, alpha):
    from scipy.special import digamma
    _check_components(x, alpha)
    shape = (-1,) + (1,) * (np.ndim(x) - 1)
    total = 0.0
    if tangent_x is not None:
        total = total + np.sum((np.asarray(alpha) - 1).reshape(shape) * tangent_x / x, axis=0)
    if tangent_alpha is not None:
        scores = np.log(x) + (digamma(np.sum(alpha)) - digamma(alpha)).reshape(shape)
        total = total + np.sum(scores * np.reshape(tangent_alpha, shape), axis=0)
    return total


def _check_components(x, alpha):
    if np.shape(x)[0] != np.size(alpha):
        raise DerivoError("derivo differentiates scipy.stats.dirichlet with every "
                          "component of x given ({} of {})".format(np.shape(x)[0], np.size(alpha)))


def pmf_below(k, mu, loc):
    """poisson.pmf at floor(k): the cdf's derivative in mu, negated."""
    from scipy.stats import poisson
    return poisson.pmf(np.floor(k), mu, loc)


def register():
    import scipy.stats as st
    from scipy.stats import dirichlet, multivariate_normal, poisson

    for name, (partials, score, shape_scores) in CONTINUOUS.items():
        dist = getattr(st, name)
        for method in METHODS:
            templates = list(partials(LocScale(dist, method, score, shape_scores)))
            if method not in ("logpdf", "pdf"):  # no closed form in a shape: refused
                templates[1:1 + len(shape_scores)] = [None] * len(shape_scores)
            defpartials(getattr(dist, method), *templates,
                        label="scipy.stats.{}.{}".format(name, method))

    # Poisson in its rate mu; k is a count and loc an integer shift (CONSTANT).  The
    # cdf is the upper regularized gamma Q(floor(k) + 1, mu): d/dmu = -pmf(floor(k)).
    defpartials(poisson.logpmf, CONSTANT, lambda ans, k, mu, loc=0: (k - loc) / mu - 1, CONSTANT,
                label="scipy.stats.poisson.logpmf")
    defpartials(poisson.pmf, CONSTANT, lambda ans, k, mu, loc=0: ans * ((k - loc) / mu - 1), CONSTANT,
                label="scipy.stats.poisson.pmf")
    defpartials(poisson.cdf, CONSTANT, lambda ans, k, mu, loc=0: -pmf_below(k, mu, loc), CONSTANT,
                label="scipy.stats.poisson.cdf")
    defpartials(poisson.sf, CONSTANT, lambda ans, k, mu, loc=0: pmf_below(k, mu, loc), CONSTANT,
                label="scipy.stats.poisson.sf")
    defpartials(poisson.logcdf, CONSTANT, lambda ans, k, mu, loc=0: -pmf_below(k, mu, loc) / np.exp(ans), CONSTANT,
                label="scipy.stats.poisson.logcdf")
    defpartials(poisson.logsf, CONSTANT, lambda ans, k, mu, loc=0: pmf_below(k, mu, loc) / np.exp(ans), CONSTANT,
                label="scipy.stats.poisson.logsf")

    # Dirichlet: log Gamma(sum alpha) - sum log Gamma(alpha) + sum (alpha - 1) log x
    defvjp(dirichlet.logpdf, lambda g, ans, x, alpha: dirichlet_vjp_x(g, x, alpha),
           lambda g, ans, x, alpha: dirichlet_vjp_alpha(g, x, alpha),
           label="scipy.stats.dirichlet.logpdf", returns=NEW)
    defjvp(dirichlet.logpdf, lambda t, ans, x, alpha: dirichlet_jvp(t, None, x, alpha),
           lambda t, ans, x, alpha: dirichlet_jvp(None, t, x, alpha))
    defvjp(dirichlet.pdf, lambda g, ans, x, alpha: dirichlet_vjp_x(g * ans, x, alpha),
           lambda g, ans, x, alpha: dirichlet_vjp_alpha(g * ans, x, alpha),
           label="scipy.stats.dirichlet.pdf", returns=NEW)
    defjvp(dirichlet.pdf, lambda t, ans, x, alpha: ans * dirichlet_jvp(t, None, x, alpha),
           lambda t, ans, x, alpha: ans * dirichlet_jvp(None, t, x, alpha))

    # The multivariate normal, pdf as exp(logpdf)
    defvjp(multivariate_normal.logpdf,
           lambda g, ans, x, mean=None, cov=1: mvn_logpdf_vjp_x(g, ans, x, mean, cov),
           lambda g, ans, x, mean=None, cov=1: mvn_logpdf_vjp_mean(g, ans, x, mean, cov),
           lambda g, ans, x, mean=None, cov=1: mvn_logpdf_vjp_cov(g, ans, x, mean, cov),
           label="scipy.stats.multivariate_normal.logpdf", returns=NEW)
    defjvp(multivariate_normal.logpdf,
           lambda t, ans, x, mean=None, cov=1: mvn_logpdf_jvp_residual(t, ans, x, mean, cov),
           lambda t, ans, x, mean=None, cov=1: mvn_logpdf_jvp_residual(-t, ans, x, mean, cov),
           lambda t, ans, x, mean=None, cov=1: mvn_logpdf_jvp_cov(t, ans, x, mean, cov))
    defvjp(multivariate_normal.pdf,
           lambda g, ans, x, mean=None, cov=1: mvn_logpdf_vjp_x(g * ans, ans, x, mean, cov),
           lambda g, ans, x, mean=None, cov=1: mvn_logpdf_vjp_mean(g * ans, ans, x, mean, cov),
           lambda g, ans, x, mean=None, cov=1: mvn_logpdf_vjp_cov(g * ans, ans, x, mean, cov),
           label="scipy.stats.multivariate_normal.pdf", returns=NEW)
    defjvp(multivariate_normal.pdf,
           lambda t, ans, x, mean=None, cov=1: ans * mvn_logpdf_jvp_residual(t, ans, x, mean, cov),
           lambda t, ans, x, mean=None, cov=1: ans * mvn_logpdf_jvp_residual(-t, ans, x, mean, cov),
           lambda t, ans, x, mean=None, cov=1: ans * mvn_logpdf_jvp_cov(t, ans, x, mean, cov))
