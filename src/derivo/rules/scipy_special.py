"""Derivatives of scipy.special, registered by :func:`register` once the user's
program has imported scipy.special (see :mod:`derivo.rules.scipy`).

Elementwise functions give partials; the reductions (logsumexp, softmax,
log_softmax) VJPs with their JVPs beside them.  Written the stable way:
log_ndtr's partial is exp(log pdf - log cdf), logsumexp's shares are
exp(a - logsumexp), expit's ans (1 - ans), the exponentially scaled Bessel
functions' partials are scaled themselves.  An order, a count or a degree of a
function family (polygamma's n, multigammaln's d) is CONSTANT; a real order
(jv's v, the shape a of gammainc) has no closed-form derivative here and is None:
derivo refuses a differentiated value there.
"""

import math

import numpy as np

from ..adjoints import logsumexp_jvp, logsumexp_jvp_b, logsumexp_vjp, logsumexp_vjp_b
from . import CONSTANT, NEW, defjvp, defpartials, defvjp

SQRT_PI = math.sqrt(math.pi)
SQRT_2PI = math.sqrt(2 * math.pi)


def register():
    global sc  # the templates read it as a module-level name
    import scipy.special as sc

    def spelled(name):
        return "scipy.special." + name

    # --- logistic and normal ---------------------------------------------------
    defpartials(sc.expit, lambda ans, x: ans * (1 - ans), label=spelled("expit"))
    defpartials(sc.logit, lambda ans, x: 1 / (x * (1 - x)), label=spelled("logit"))
    defpartials(sc.log_expit, lambda ans, x: sc.expit(-x), label=spelled("log_expit"))
    defpartials(sc.erf, lambda ans, x: 2 / SQRT_PI * np.exp(-x * x), label=spelled("erf"))
    defpartials(sc.erfc, lambda ans, x: -2 / SQRT_PI * np.exp(-x * x), label=spelled("erfc"))
    defpartials(sc.erfinv, lambda ans, x: SQRT_PI / 2 * np.exp(ans * ans), label=spelled("erfinv"))
    defpartials(sc.erfcinv, lambda ans, x: -SQRT_PI / 2 * np.exp(ans * ans), label=spelled("erfcinv"))
    defpartials(sc.ndtr, lambda ans, x: np.exp(-0.5 * x * x) / SQRT_2PI, label=spelled("ndtr"))
    defpartials(sc.ndtri, lambda ans, x: SQRT_2PI * np.exp(0.5 * ans * ans), label=spelled("ndtri"))
    defpartials(sc.log_ndtr, lambda ans, x: np.exp(-0.5 * x * x - ans) / SQRT_2PI, label=spelled("log_ndtr"))

    # --- gamma and beta functions --------------------------------------------------
    defpartials(sc.gamma, lambda ans, x: ans * sc.digamma(x), label=spelled("gamma"))
    defpartials(sc.gammaln, lambda ans, x: sc.digamma(x), label=spelled("gammaln"))
    defpartials(sc.digamma, lambda ans, x: sc.polygamma(1, x), label=spelled("digamma"))  # = sc.psi
    defpartials(sc.polygamma, CONSTANT, lambda ans, n, x: sc.polygamma(n + 1, x), label=spelled("polygamma"))
    defpartials(sc.beta, lambda ans, a, b: ans * (sc.digamma(a) - sc.digamma(a + b)),
                lambda ans, a, b: ans * (sc.digamma(b) - sc.digamma(a + b)), label=spelled("beta"))
    defpartials(sc.betaln, lambda ans, a, b: sc.digamma(a) - sc.digamma(a + b),
                lambda ans, a, b: sc.digamma(b) - sc.digamma(a + b), label=spelled("betaln"))
    # log Gamma_d(a) = const + sum_j gammaln(a - j / 2), j = 0 .. d - 1
    defpartials(sc.multigammaln, lambda ans, a, d: np.sum(sc.digamma(np.expand_dims(a, -1) - np.arange(d) / 2), axis=-1),
                CONSTANT, label=spelled("multigammaln"))
    # The regularized incomplete gamma functions in x: +-x^(a-1) e^-x / Gamma(a), in
    # logs.  Their derivative in the shape a has no closed form: refused (None).
    defpartials(sc.gammainc, None, lambda ans, a, x: np.exp((a - 1) * np.log(x) - x - sc.gammaln(a)),
                label=spelled("gammainc"))
    defpartials(sc.gammaincc, None, lambda ans, a, x: -np.exp((a - 1) * np.log(x) - x - sc.gammaln(a)),
                label=spelled("gammaincc"))
    # Hurwitz zeta(x, q) = sum_k (k + q)^-x: in q, -x zeta(x + 1, q); in the exponent
    # x there is no closed form (refused).
    defpartials(sc.zeta, None, lambda ans, x, q=None: -x * sc.zeta(x + 1, q), label=spelled("zeta"))

    # --- x log y and entropy ------------------------------------------------------------
    defpartials(sc.xlogy, lambda ans, x, y: np.log(y), lambda ans, x, y: x / y, label=spelled("xlogy"))
    defpartials(sc.xlog1py, lambda ans, x, y: np.log1p(y), lambda ans, x, y: x / (1 + y), label=spelled("xlog1py"))
    defpartials(sc.entr, lambda ans, x: -(np.log(x) + 1), label=spelled("entr"))

    # --- Bessel functions: recurrences in the neighbouring orders ------------------------
    defpartials(sc.j0, lambda ans, x: -sc.j1(x), label=spelled("j0"))
    defpartials(sc.j1, lambda ans, x: (sc.j0(x) - sc.jv(2, x)) / 2, label=spelled("j1"))
    defpartials(sc.y0, lambda ans, x: -sc.y1(x), label=spelled("y0"))
    defpartials(sc.y1, lambda ans, x: (sc.y0(x) - sc.yv(2, x)) / 2, label=spelled("y1"))
    defpartials(sc.i0, lambda ans, x: sc.i1(x), label=spelled("i0"))
    defpartials(sc.i1, lambda ans, x: (sc.i0(x) + sc.iv(2, x)) / 2, label=spelled("i1"))
    # i0e(x) = i0(x) e^-|x|, and so on: the scaled partials never overflow
    defpartials(sc.i0e, lambda ans, x: sc.i1e(x) - np.sign(x) * ans, label=spelled("i0e"))
    defpartials(sc.i1e, lambda ans, x: (sc.i0e(x) + sc.ive(2, x)) / 2 - np.sign(x) * ans, label=spelled("i1e"))
    # In a real order v there is no closed form: refused (None).
    defpartials(sc.jv, None, lambda ans, v, x: (sc.jv(v - 1, x) - sc.jv(v + 1, x)) / 2, label=spelled("jv"))
    defpartials(sc.yv, None, lambda ans, v, x: (sc.yv(v - 1, x) - sc.yv(v + 1, x)) / 2, label=spelled("yv"))
    defpartials(sc.iv, None, lambda ans, v, x: (sc.iv(v - 1, x) + sc.iv(v + 1, x)) / 2, label=spelled("iv"))
    defpartials(sc.ive, None, lambda ans, v, x: (sc.ive(v - 1, x) + sc.ive(v + 1, x)) / 2 - np.sign(x) * ans,
                label=spelled("ive"))
    defpartials(sc.kv, None, lambda ans, v, x: -(sc.kv(v - 1, x) + sc.kv(v + 1, x)) / 2, label=spelled("kv"))

    # --- normalisers ---------------------------------------------------------------------
    defvjp(sc.logsumexp, lambda g, ans, a, axis=None, b=None, keepdims=False, return_sign=False: logsumexp_vjp(g, ans, a, axis, b, keepdims, return_sign), CONSTANT,
           lambda g, ans, a, axis=None, b=None, keepdims=False, return_sign=False: logsumexp_vjp_b(g, ans, a, axis, b, keepdims, return_sign),
           label=spelled("logsumexp"), returns=NEW)
    defjvp(sc.logsumexp, lambda t, ans, a, axis=None, b=None, keepdims=False, return_sign=False: logsumexp_jvp(t, ans, a, axis, b, keepdims, return_sign), CONSTANT,
           lambda t, ans, a, axis=None, b=None, keepdims=False, return_sign=False: logsumexp_jvp_b(t, ans, a, axis, keepdims))
    defvjp(sc.softmax, lambda g, ans, x, axis=None: ans * (g - np.sum(g * ans, axis=axis, keepdims=True)), label=spelled("softmax"), returns=NEW)
    defjvp(sc.softmax, lambda t, ans, x, axis=None: ans * (t - np.sum(t * ans, axis=axis, keepdims=True)))
    defvjp(sc.log_softmax, lambda g, ans, x, axis=None: g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True), label=spelled("log_softmax"), returns=NEW)
    defjvp(sc.log_softmax, lambda t, ans, x, axis=None: t - np.sum(np.exp(ans) * t, axis=axis, keepdims=True))
