"""Every primitive issue 21 names has a rule in reverse mode and in forward mode.

    PYTHONPATH=src python tests/rules/test_coverage.py     # prints what is missing, by group

A primitive is covered in reverse mode when the registry holds a rule of it
under its label (see ``derivo.rules.table``), and in forward mode when that rule
is written as partials (forward mode multiplies them by tangents) or has
tangent rules (``defjvp``).  ``np.r_`` and ``np.c_`` are not calls: they are
refused (tests/rules/test_rules_soundness.py), not listed here.
"""

import importlib

import pytest

from derivo import rules

_OPERATORS = ("add subtract multiply divide true_divide power negative positive "
              "matmul remainder mod absolute")
SCOPE = {
    "elementwise": ["np." + name for name in (
        "fabs reciprocal cbrt exp2 log2 log10 arcsinh arccosh arctanh deg2rad radians rad2deg "
        "degrees sinc real imag conj angle nan_to_num fmax fmin logaddexp2 arctan2 hypot "
        "copysign clip heaviside " + _OPERATORS).split()] + [".clip", ".conj"],
    "reductions": ["np." + name for name in (
        "var std cumsum cumprod nansum nanmean average median quantile percentile ptp "
        "trapezoid").split()] + ["scipy.special.logsumexp", ".var", ".std", ".cumsum",
                                 ".cumprod", ".trace"],
    "shapes and indexing": ["np." + name for name in (
        "roll flip flipud fliplr rot90 diag diagonal triu tril swapaxes moveaxis rollaxis "
        "broadcast_to repeat tile atleast_3d split array_split hsplit vsplit dsplit "
        "column_stack row_stack append pad take take_along_axis compress select sort partition diff "
        "gradient interp convolve correlate einsum").split()],
    "linalg": ["np.linalg." + name for name in (
        "det slogdet inv pinv solve lstsq cholesky qr eigh eigvalsh eig eigvals svd norm "
        "matrix_power multi_dot").split()] + ["np." + name for name in (
            "tensordot kron cross vdot trace").split()],
    "scipy.linalg": ["scipy.linalg." + name for name in (
        "solve_triangular cho_factor cho_solve lu_factor lu_solve expm sqrtm solve_sylvester "
        "block_diag").split()],
    "fft": ["np.fft." + name for name in (
        "fft ifft rfft irfft fft2 ifft2 fftn ifftn rfftn irfftn fftshift ifftshift").split()],
    "scipy.special": ["scipy.special." + name for name in (
        "gammaln digamma psi polygamma gamma beta betaln erf erfc erfinv erfcinv expit logit "
        "log_expit logsumexp softmax log_softmax xlogy xlog1py entr ndtr ndtri log_ndtr i0 i1 "
        "j0 j1 y0 y1 jv yv iv ive zeta gammainc gammaincc multigammaln").split()],
    "scipy.stats": ["scipy.stats.{}.{}".format(family, method)
                    for family in ("norm t gamma beta chi2 expon laplace logistic cauchy "
                                   "uniform").split()
                    for method in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")]
    + ["scipy.stats.poisson." + method for method in ("logpmf", "pmf", "cdf", "logcdf", "sf",
                                                      "logsf")]
    + ["scipy.stats.dirichlet.logpdf", "scipy.stats.dirichlet.pdf",
       "scipy.stats.multivariate_normal.logpdf", "scipy.stats.multivariate_normal.pdf"],
    "solvers": ["scipy.integrate.odeint", "scipy.integrate.solve_ivp", "scipy.signal.convolve"],
}

#: gaps not filled yet, each listed so that filling one fails the test until it is removed
KNOWN_GAPS = {"reverse": set(), "forward": set()}


def _resolve(label):
    """The object a label names (np.conj is np.conjugate; a method is a Method), or None."""
    if label.startswith("."):
        return rules.Method(label[1:])
    module, _, rest = label.replace("np.", "numpy.", 1).partition(".")
    value = importlib.import_module(module)
    for part in rest.split("."):
        value = getattr(value, part, None)
        if value is None:
            return None
    return value


def _rules_of(label, by_label):
    """The rules registered for the primitive ``label`` names, by object then by label."""
    try:
        by_arity = rules.RULES.get(_resolve(label))
    except TypeError:  # an unhashable object has no rules
        by_arity = None
    return list(by_arity.values()) if by_arity else by_label.get(label, [])


def _rules_by_label():
    for module in ("scipy.special", "scipy.linalg", "scipy.stats", "scipy.signal",
                   "scipy.integrate"):
        importlib.import_module(module)  # registers its lazy table, as a user's import does
    rules.load_tables()
    by_label = {}
    for by_arity in rules.RULES.values():
        for rule in by_arity.values():
            by_label.setdefault(rule.label, []).append(rule)
    return by_label


def _has_tangents(rule):
    return rule.style == "partial" or bool(rule.jvps)


def missing():
    """{group: {"reverse": [labels], "forward": [labels]}} of the scope without rules."""
    by_label = _rules_by_label()
    gaps = {}
    for group, labels in SCOPE.items():
        found = {label: _rules_of(label, by_label) for label in labels}
        reverse = [label for label in labels if not found[label]]
        forward = [label for label in labels if found[label]
                   and not all(_has_tangents(rule) for rule in found[label])]
        gaps[group] = {"reverse": reverse, "forward": forward}
    return gaps


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_every_primitive_of_issue_21_has_a_rule_but_the_known_gaps(mode):
    gaps = {label for gap in missing().values() for label in gap[mode]}
    assert gaps == KNOWN_GAPS[mode], "new gaps: {}; filled (remove from KNOWN_GAPS): {}".format(
        sorted(gaps - KNOWN_GAPS[mode]), sorted(KNOWN_GAPS[mode] - gaps))


if __name__ == "__main__":
    for group, gap in missing().items():
        print("{} ({} primitives): missing reverse {}: {}; missing forward {}: {}".format(
            group, len(SCOPE[group]), len(gap["reverse"]), ", ".join(gap["reverse"]),
            len(gap["forward"]), ", ".join(gap["forward"])))
