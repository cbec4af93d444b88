"""Every rule of the linear-algebra table (np.linalg, tensor products,
scipy.linalg), checked through the whole pipeline as test_numpy.py checks the
NumPy table's: derivo's gradient against central finite differences, the
dot-product test of derivo.vjp, and derivo.jvp against finite differences.

The parametrisation walks the registry: a rule of ``derivo.rules.linalg``
without a probe below fails by name.  Eigen- and singular vectors are
determined up to sign (eig's up to phase), so their probes read them through
a function that does not see it (squares, absolute values).
"""

import warnings

import numpy as np
import pytest

import derivo
from derivo import rules
from derivo.rules import Method
from probing import Probe, normal, table_tests

try:
    import scipy.linalg
except ImportError:  # the scipy.linalg rules are then not registered either
    scipy = None

rules.load_tables()
TABLE = "derivo.rules.linalg"
RTOL = 1e-6
PRELUDE = """\
import numpy as np
try:
    import scipy.linalg
except ImportError:
    pass

SPD = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]])
"""


def invertible(*shape):
    """Square matrices (or stacks of them) well away from singular."""
    return lambda rng: rng.normal(size=shape) * 0.5 + 2.0 * np.eye(shape[-1])


def triangular(lower):
    def make(rng):
        m = rng.normal(size=(3, 3)) * 0.3 + 2.0 * np.eye(3)
        return np.tril(m) if lower else np.triu(m)
    return make


def small(*shape):
    return lambda rng: 0.5 * rng.normal(size=shape)


PROBES = {}


def probe(primitive, expr, *args, arity=None):
    p = Probe(primitive, expr, args, arity)
    PROBES.setdefault(p.key, []).append(p)


# --- determinants, inverses, solves --------------------------------------------------

probe(np.linalg.det, "np.linalg.det(x0)", invertible(3, 3))
probe(np.linalg.det, "np.linalg.det(x0)", invertible(2, 3, 3))
probe(np.linalg.slogdet, "np.linalg.slogdet(x0)[1]", invertible(3, 3))
probe(np.linalg.slogdet, "np.linalg.slogdet(-x0)[1] * np.linalg.slogdet(-x0)[0]", invertible(3, 3))
probe(np.linalg.slogdet, "np.linalg.slogdet(x0)[1]", invertible(2, 3, 3))
probe(np.linalg.inv, "np.linalg.inv(x0)", invertible(3, 3))
probe(np.linalg.inv, "np.linalg.inv(x0)", invertible(2, 3, 3))
for _shape in ((4, 3), (3, 4), (3, 3)):
    probe(np.linalg.pinv, "np.linalg.pinv(x0)", invertible(*_shape) if _shape[0] == _shape[1]
          else normal(*_shape))
probe(np.linalg.solve, "np.linalg.solve(x0, x1)", invertible(3, 3), normal(3))
probe(np.linalg.solve, "np.linalg.solve(x0, x1)", invertible(3, 3), normal(3, 2))
for _b in ((5,), (5, 2)):
    for _result in (0, 1, 3):
        probe(np.linalg.lstsq, "np.linalg.lstsq(x0, x1, rcond=None)[{}]".format(_result),
              normal(5, 3), normal(*_b))
probe(np.linalg.lstsq, "np.linalg.lstsq(x0, x1)[0]", invertible(3, 3), normal(3))
for _n in (3, 1, 0, -2):
    probe(np.linalg.matrix_power, "np.linalg.matrix_power(x0, {})".format(_n), invertible(3, 3))
probe(np.linalg.matrix_power, "np.linalg.matrix_power(x0, 2)", invertible(2, 3, 3))

# --- factorisations ---------------------------------------------------------------------

probe(np.linalg.cholesky, "np.linalg.cholesky(x0 @ x0.T + np.eye(3))", normal(3, 3))
probe(np.linalg.cholesky, "np.linalg.cholesky(x0 @ np.swapaxes(x0, -1, -2) + np.eye(3))",
      normal(2, 3, 3))
for _shape in ((4, 3), (3, 3), (2, 4, 3)):
    probe(np.linalg.qr, "np.linalg.qr(x0)[0]", normal(*_shape))
    probe(np.linalg.qr, "np.linalg.qr(x0)[1]", normal(*_shape))
probe(np.linalg.qr, "np.linalg.qr(x0, mode='r')", normal(4, 3))
probe(np.linalg.qr, "np.linalg.qr(x0, mode='complete')[0]", normal(3, 3))
for _uplo in ("", ", UPLO='U'"):
    probe(np.linalg.eigh, "np.linalg.eigh(x0{})[0]".format(_uplo), normal(3, 3))
    probe(np.linalg.eigh, "np.linalg.eigh(x0{})[1] ** 2".format(_uplo), normal(3, 3))
    probe(np.linalg.eigvalsh, "np.linalg.eigvalsh(x0{})".format(_uplo), normal(3, 3))
probe(np.linalg.eigh, "np.linalg.eigh(x0 + x0.T)[1] ** 2", normal(4, 4))
probe(np.linalg.eigh, "np.linalg.eigh(x0)[0]", normal(2, 3, 3))
probe(np.linalg.eigvalsh, "np.linalg.eigvalsh(x0)", normal(2, 3, 3))
probe(np.linalg.eig, "np.abs(np.linalg.eig(x0)[0])", normal(3, 3))
probe(np.linalg.eig, "np.abs(np.linalg.eig(x0)[1])", normal(3, 3))
probe(np.linalg.eig, "np.abs(np.linalg.eig(x0)[1]) + np.abs(np.linalg.eig(x0)[0])", normal(4, 4))
probe(np.linalg.eig, "np.linalg.eig(x0 + x0.T)[0]", normal(3, 3))
probe(np.linalg.eigvals, "np.abs(np.linalg.eigvals(x0))", normal(3, 3))
probe(np.linalg.eigvals, "np.abs(np.linalg.eigvals(x0))", normal(2, 3, 3))
for _shape in ((4, 3), (3, 4), (3, 3)):
    probe(np.linalg.svd, "np.linalg.svd(x0, compute_uv=False)", normal(*_shape))
    probe(np.linalg.svd, "np.linalg.svd(x0, full_matrices=False)[1]", normal(*_shape))
    probe(np.linalg.svd, "np.linalg.svd(x0, full_matrices=False)[0] ** 2", normal(*_shape))
    probe(np.linalg.svd, "np.linalg.svd(x0, full_matrices=False)[2] ** 2", normal(*_shape))
probe(np.linalg.svd, "np.linalg.svd(x0)[0] ** 2 + np.linalg.svd(x0)[2] ** 2", normal(3, 3))
probe(np.linalg.svd, "np.linalg.svd(x0, full_matrices=False)[1]", normal(2, 4, 3))

# --- norms: the defaults, every vector ord and every matrix ord -------------------------------

for _expr, _shape in (("np.linalg.norm(x0)", (5,)), ("np.linalg.norm(x0)", (3, 4)),
                      ("np.linalg.norm(x0, axis=1)", (3, 4)),
                      ("np.linalg.norm(x0, axis=0, keepdims=True)", (3, 4)),
                      ("np.linalg.norm(x0, axis=-1, keepdims=False)", (2, 3, 4)),
                      ("np.linalg.norm(x0, ord=2)", (5,)), ("np.linalg.norm(x0, 2)", (5,)),
                      ("np.linalg.norm(x0, ord='fro')", (3, 4)),
                      ("np.linalg.norm(x0, axis=(0, 1))", (3, 4))):
    probe(np.linalg.norm, _expr, normal(*_shape))
for _ord in ("1", "np.inf", "-np.inf", "0", "3", "0.5", "-1.5"):
    probe(np.linalg.norm, "np.linalg.norm(x0, ord={})".format(_ord), normal(5))
    probe(np.linalg.norm, "np.linalg.norm(x0, {}, axis=1, keepdims=True)".format(_ord),
          normal(3, 4))
for _ord in ("'fro'", "'nuc'", "1", "-1", "2", "-2", "np.inf", "-np.inf"):
    probe(np.linalg.norm, "np.linalg.norm(x0, ord={})".format(_ord), normal(3, 4))
    probe(np.linalg.norm, "np.linalg.norm(x0, {}, axis=(2, 0))".format(_ord), normal(3, 4, 2))
probe(np.linalg.norm, "np.linalg.norm(x0, 'nuc', (1, 2), keepdims=True)", normal(2, 3, 4))

# --- products --------------------------------------------------------------------------------

probe(np.linalg.multi_dot, "np.linalg.multi_dot([x0, x1, x2])", normal(2, 3), normal(3, 4),
      normal(4, 2))
probe(np.linalg.multi_dot, "np.linalg.multi_dot([x0, x1, x2])", normal(3), normal(3, 4),
      normal(4))
probe(np.linalg.multi_dot, "np.linalg.multi_dot((x0, x1))", normal(2, 3), normal(3))
probe(np.linalg.multi_dot, "np.linalg.multi_dot([x0, x1, x0, x1])", normal(2, 3),
      normal(3, 2))
for _axes, _a, _b in (("", (2, 3, 4), (3, 4, 5)), (", 1", (2, 3), (3, 4)), (", 0", (2,), (3, 2)),
                      (", axes=([1, 0], [0, 1])", (3, 2, 4), (2, 3)),
                      (", (1, 0)", (2, 3), (3, 4)), (", axes=([2], [0])", (2, 3, 4), (4, 2)),
                      (", ([0, 2], [2, 1])", (2, 3, 4), (3, 4, 2))):
    probe(np.tensordot, "np.tensordot(x0, x1{})".format(_axes), normal(*_a), normal(*_b))
for _a, _b in (((2, 3), (4, 2)), ((3,), (2,)), ((2, 2), (3,)), ((2, 1, 2), (2, 3))):
    probe(np.kron, "np.kron(x0, x1)", normal(*_a), normal(*_b))
for _expr, _a, _b in (("np.cross(x0, x1)", (3,), (3,)), ("np.cross(x0, x1)", (4, 3), (3,)),
                      ("np.cross(x0, x1, axis=0)", (3, 4), (3, 4)),
                      ("np.cross(x0, x1, axisa=0, axisb=1, axisc=0)", (3, 4), (4, 3))):
    probe(np.cross, _expr, normal(*_a), normal(*_b))
probe(np.vdot, "np.vdot(x0, x1)", normal(3, 4), normal(12))
probe(np.vdot, "np.vdot(x0, x1)", normal(5), normal(5))
probe(np.vdot, "np.vdot(x0, x0)", normal(4))
for _expr, _shape in (("np.trace(x0)", (3, 3)), ("np.trace(x0)", (3, 4)),
                      ("np.trace(x0, 1)", (3, 4)), ("np.trace(x0, offset=-1)", (4, 3)),
                      ("np.trace(x0, 0, 1, 0)", (3, 4)), ("np.trace(x0, axis1=0, axis2=2)", (3, 2, 3)),
                      ("np.trace(x0, 1, 1, 2)", (2, 3, 4))):
    probe(np.trace, _expr, normal(*_shape))
    probe(Method("trace"), _expr.replace("np.trace(x0, ", "x0.trace(").replace("np.trace(x0)", "x0.trace()"),
          normal(*_shape))

# --- scipy.linalg --------------------------------------------------------------------------

if scipy is not None:
    la = scipy.linalg
    for _lower in (True, False):
        for _trans in (0, 1):
            for _b in ((3,), (3, 2)):
                probe(la.solve_triangular,
                      "scipy.linalg.solve_triangular(x0, x1, trans={}, lower={})".format(
                          _trans, _lower), triangular(_lower), normal(*_b))
    probe(la.solve_triangular, "scipy.linalg.solve_triangular(x0, x1)", triangular(False),
          normal(3))
    for _keywords in ("", ", transposed=True"):
        for _b in ((3,), (3, 2)):
            probe(la.solve, "scipy.linalg.solve(x0, x1{})".format(_keywords), invertible(3, 3),
                  normal(*_b))
    for _keywords in (", assume_a='pos'", ", assume_a='sym', lower=True",
                      ", assume_a='lower triangular'"):
        probe(la.solve, "scipy.linalg.solve(SPD + 0.2 * x0, x1{})".format(_keywords),
              normal(3, 3), normal(3, 2))
    probe(la.inv, "scipy.linalg.inv(x0)", invertible(3, 3))
    probe(la.det, "scipy.linalg.det(x0)", invertible(3, 3))
    for _lower in ("", ", lower=True"):
        # SPD + 0.2 x0: a change in the triangle not read must change nothing
        probe(la.cholesky, "scipy.linalg.cholesky(SPD + 0.2 * x0{})".format(_lower), normal(3, 3))
        probe(la.cho_factor, "scipy.linalg.cho_factor(SPD + 0.2 * x0{})[0]".format(_lower),
              normal(3, 3))
        for _b in ((3,), (3, 2)):
            probe(la.cho_solve, "scipy.linalg.cho_solve(scipy.linalg.cho_factor(SPD + 0.2 * x0{}), "
                  "x1)".format(_lower), normal(3, 3), normal(*_b))
        # a log determinant from the factor's diagonal, and with cho_solve (the adjoints add)
        probe(la.cho_factor, "np.log(np.diag(scipy.linalg.cho_factor(SPD + 0.2 * x0{})[0])) * "
              "np.array([1.0, -2.0, 0.5])".format(_lower), normal(3, 3))
        probe(la.cho_solve, "np.sum(np.log(np.diag(scipy.linalg.cho_factor(SPD + 0.2 * x0{0})[0]))) "
              "+ scipy.linalg.cho_solve(scipy.linalg.cho_factor(SPD + 0.2 * x0{0}), x1)".format(_lower),
              normal(3, 3), normal(3))
    probe(la.cho_solve, "scipy.linalg.cho_solve((x0, True), x1)", triangular(True), normal(3))
    probe(la.cho_solve, "scipy.linalg.cho_solve((x0, False), x1)", triangular(False), normal(3, 2))
    probe(la.lu_factor, "scipy.linalg.lu_factor(x0)[0]", normal(4, 4))
    probe(la.lu_factor, "scipy.linalg.lu_factor(x0)[0]", invertible(3, 3))
    for _trans in (0, 1):
        for _b in ((4,), (4, 2)):
            probe(la.lu_solve, "scipy.linalg.lu_solve(scipy.linalg.lu_factor(x0), x1, trans={})"
                  .format(_trans), normal(4, 4), normal(*_b))
    probe(la.expm, "scipy.linalg.expm(x0)", small(3, 3))
    probe(la.expm, "scipy.linalg.expm(x0 - x0.T)", small(4, 4))
    probe(la.sqrtm, "scipy.linalg.sqrtm(x0 @ x0.T + np.eye(3))", normal(3, 3))
    probe(la.sqrtm, "scipy.linalg.sqrtm(x0)", invertible(3, 3))
    probe(la.solve_sylvester, "scipy.linalg.solve_sylvester(x0, x1, x2)", invertible(3, 3),
          invertible(2, 2), normal(3, 2))
    probe(la.block_diag, "scipy.linalg.block_diag(x0)", normal(2, 3), arity=1)
    probe(la.block_diag, "scipy.linalg.block_diag(x0, x1)", normal(2, 2), normal(3), arity=2)
    probe(la.block_diag, "scipy.linalg.block_diag(x0, x1, x2)", normal(1, 2), normal(2, 1),
          normal(2, 2), arity=3)
    probe(la.block_diag, "scipy.linalg.block_diag(x0, x1, x2, x1)", normal(2, 2), normal(),
          normal(3), arity=4)


(test_rule_matches_finite_differences, test_rule_dot_product,
 test_rule_forward_matches_finite_differences,
 test_every_linalg_rule_has_a_probe) = table_tests(TABLE, PROBES, PRELUDE, RTOL, "linalg")


def test_table_covers_the_issue_list():
    required = [np.linalg.det, np.linalg.slogdet, np.linalg.inv, np.linalg.pinv,
                np.linalg.solve, np.linalg.lstsq, np.linalg.cholesky, np.linalg.qr,
                np.linalg.eigh, np.linalg.eigvalsh, np.linalg.eig, np.linalg.eigvals,
                np.linalg.svd, np.linalg.norm, np.linalg.matrix_power, np.linalg.multi_dot,
                np.tensordot, np.kron, np.cross, np.vdot, np.trace]
    if scipy is not None:
        required += [scipy.linalg.solve_triangular, scipy.linalg.cho_factor,
                     scipy.linalg.cho_solve, scipy.linalg.lu_factor, scipy.linalg.lu_solve,
                     scipy.linalg.expm, scipy.linalg.sqrtm, scipy.linalg.solve_sylvester,
                     scipy.linalg.block_diag, scipy.linalg.solve, scipy.linalg.inv,
                     scipy.linalg.det, scipy.linalg.cholesky]
    missing = [f.__name__ for f in required if f not in rules.RULES]
    assert not missing


# --- what the rules promise beyond the probes --------------------------------------------------

def eigenvalue_sum(a):
    return np.sum(np.linalg.eigh(a)[0] * np.array([1.0, 1.0, 1.0]))


def test_eigenvalues_at_a_repeated_eigenvalue_have_a_gradient():
    """The eigenvalues' rule never divides by a gap: at the identity the sum of
    the eigenvalues (the trace) has gradient I on the triangle eigh reads."""
    gradient = derivo.grad(eigenvalue_sum)(np.eye(3))
    np.testing.assert_allclose(gradient, np.eye(3), atol=1e-12)


def wide_qr(a):
    return np.sum(np.linalg.qr(a)[1])


def full_svd(a):
    return np.sum(np.linalg.svd(a)[0])


@pytest.mark.parametrize("f,point,match", [(wide_qr, np.ones((2, 3)), "at least as many rows"),
                                           (full_svd, np.ones((3, 2)), "full_matrices=False")])
def test_undetermined_factors_are_refused(f, point, match):
    with pytest.raises(derivo.DerivoError, match=match):
        derivo.grad(f)(point + np.arange(point.size).reshape(point.shape))


def negative_order_norm(x):
    return np.linalg.norm(x, ord=-1.5)


def test_a_negative_order_is_folded_not_compiled():
    """The rule's ``ord is None`` with ord=-1.5 folds to False: compiling
    ``-1.5 is None`` would make Python warn."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradient = derivo.grad(negative_order_norm)
        gradient(np.array([1.0, -2.0, 0.5]))
    assert "is None" not in gradient.source


def gp_like(x, b):
    c = scipy.linalg.cho_factor(x @ x.T + np.eye(3))
    return np.sum(scipy.linalg.cho_solve(c, b) * b)


@pytest.mark.skipif(scipy is None, reason="needs SciPy")
def test_cho_solve_reuses_the_factor():
    """The adjoint of cho_solve solves with the factor it was given: the
    generated gradient factorises once (in the forward sweep)."""
    code = [line for line in derivo.grad(gp_like).source.splitlines()
            if not line.lstrip().startswith("#")]
    assert sum("scipy.linalg.cho_factor(" in line for line in code) == 1
    assert not any("inv(" in line for line in code)


def hermitian_eigenvalues(x):
    return np.sum(np.linalg.eigh(x + 1j * (x - x.T))[0] ** 2)


def complex_singular_values(x):
    return np.sum(np.linalg.svd(x * (1 + 2j), compute_uv=False))


def complex_r(x):
    return np.sum(np.abs(np.linalg.qr(x * (1 + 2j))[1]))


@pytest.mark.parametrize("f,instead", [(hermitian_eigenvalues, r"\[\[A, -B\], \[B, A\]\]"),
                                       (complex_singular_values, r"\[\[A, -B\], \[B, A\]\]"),
                                       (complex_r, "real and imaginary parts")])
def test_a_complex_factorisation_is_refused_with_what_to_write(f, instead):
    x = np.array([[2.0, 0.3, 0.1], [0.2, 1.5, -0.4], [0.0, 0.6, 1.1]])
    with pytest.raises(derivo.DerivoError, match="real matrices only; .*" + instead):
        derivo.grad(f)(x)


def solved_for_a_vector(c):
    a = np.array([[2.0, 0.3], [0.1, 1.5]]) + np.eye(2) * c
    b = np.array([1.0, -0.5]) * c
    return np.sum(np.tanh(np.linalg.solve(a, b)))


def test_the_second_derivative_through_solve_of_a_vector():
    # forward over reverse differentiates the VJP's own arithmetic
    c, h = 0.7, 1e-5
    grad = derivo.grad(solved_for_a_vector)
    central = (grad(c + h) - grad(c - h)) / (2 * h)
    assert derivo.hessian(solved_for_a_vector)(c) == pytest.approx(central, rel=1e-6)


def scaled_norm_of_nothing(x, c):
    return np.linalg.norm(0.0 * x) * c + np.sum(x * c)  # the norm of a constant 0


@pytest.mark.parametrize("axis", [None, 1])
def test_the_norm_s_derivative_at_zero_is_zero_as_differences_give(axis):
    # the cone's apex: 0 is a subgradient, and central differences give it
    zeros = np.zeros((2, 3))
    assert np.all(derivo.grad(lambda a: np.sum(np.linalg.norm(a, axis=axis)))(zeros) == 0.0)
    assert derivo.jvp(lambda a: np.sum(np.linalg.norm(a, axis=axis)), (zeros,),
                      (np.ones((2, 3)),))[1] == 0.0
    x, c, h = np.array([0.5, -1.0]), 0.7, 1e-6
    gx, gc = derivo.grad(scaled_norm_of_nothing, wrt=(0, 1))(x, c)
    np.testing.assert_allclose(gx, [c, c])
    assert gc == pytest.approx((scaled_norm_of_nothing(x, c + h) -
                                scaled_norm_of_nothing(x, c - h)) / (2 * h))
