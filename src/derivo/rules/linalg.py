"""Derivatives of linear algebra: np.linalg, NumPy's tensor products, scipy.linalg.

Each entry is a VJP (``lambda g, ans, *args, **options``) with its JVP
(``lambda t, ans, ...``) beside it; helpers with no one-line spelling live in
:mod:`derivo.linalg_adjoints`.  Inverses are applied by solving, and a rule
reuses what the forward pass made: ``ans`` (the Cholesky factor, the
eigenvectors, Q and R), and cho_solve's and lu_solve's factorisations.

Numerical caveats, where the derivative itself is not defined everywhere:

- eigh, eig: eigenvectors' derivatives divide by eigenvalue gaps, so they are
  infinite where two eigenvalues are equal (the eigenvectors are not
  determined there); eigenvalues alone (eigvalsh, eigvals, or eigh with the
  eigenvectors unused) are differentiable at repeated eigenvalues too.  eig's
  eigenvectors have unit length and an arbitrary phase: a loss must not
  depend on the phase.
- svd: singular vectors need distinct singular values (1 / (s_j^2 - s_i^2)),
  and for a matrix that is not square nonzero ones (1 / s); U and V are
  determined up to signs, which a loss must not see.  Singular values alone
  (compute_uv=False, the norms 'nuc', 2, -2) need only that the extreme one
  (for 2 and -2) is not repeated.
- pinv, lstsq: differentiable where the rank does not change (a singular
  value crossing rcond makes pinv jump); lstsq's rule assumes full rank.
- qr: matrices with at least as many rows as columns, of full column rank.
- sqrtm, solve_sylvester: need the Sylvester operator X -> A X + X B to be
  invertible (no eigenvalue of A equal to minus one of B).

The scipy.linalg entries register when the program imports scipy.linalg
(see :func:`derivo.rules.load_tables`): derivo does not import SciPy itself.
"""

import numpy as np

from ..adjoints import (cholesky_jvp, cholesky_vjp, solve_triangular_jvp_a,
                        solve_triangular_vjp_a, solve_triangular_vjp_b)
from ..linalg_adjoints import (block_diag_jvp, block_diag_vjp, cho_factor_jvp, cho_factor_vjp,
                               cho_solve_jvp_c, cho_solve_vjp_c, cross_vjp, eig_jvp, eig_vjp,
                               eigh_jvp, eigh_vjp, eigvals_jvp, eigvals_vjp, eigvalsh_jvp,
                               eigvalsh_vjp, kron_vjp, lstsq_jvp_a, lstsq_jvp_b, lstsq_vjp_a,
                               lstsq_vjp_b, lu_factor_jvp, lu_factor_vjp, lu_solve_jvp_lu,
                               lu_solve_vjp_b, lu_solve_vjp_lu, matrix_power_jvp,
                               matrix_power_vjp, multi_dot_jvp, multi_dot_vjp, norm_jvp,
                               norm_vjp_any, pinv_jvp, pinv_vjp, qr_jvp, qr_vjp, real_like,
                               scipy_cholesky_jvp, scipy_cholesky_vjp, scipy_solve_jvp_a,
                               scipy_solve_vjp_a, slogdet_jvp, slogdet_vjp, svd_jvp, svd_vjp,
                               tensordot_vjp_a, tensordot_vjp_b, trace_vjp)
from ..runtime import norm_vjp, swap_last
from . import CONSTANT, NEW, Method, defjvp, defvjp

# --- determinants, inverses, solves -----------------------------------------------------

defvjp(np.linalg.det, lambda g, ans, a: np.expand_dims(g * ans, (-2, -1)) * swap_last(np.linalg.inv(a)), returns=NEW)
defjvp(np.linalg.det, lambda t, ans, a: ans * np.trace(np.linalg.solve(a, t), axis1=-2, axis2=-1))
defvjp(np.linalg.slogdet, lambda g, ans, a: slogdet_vjp(g, ans, a), returns=NEW)
defjvp(np.linalg.slogdet, lambda t, ans, a: slogdet_jvp(t, ans, a))
defvjp(np.linalg.inv, lambda g, ans, a: -(swap_last(ans) @ g @ swap_last(ans)), returns=NEW)
defjvp(np.linalg.inv, lambda t, ans, a: -(ans @ t @ ans))
defvjp(np.linalg.pinv, lambda g, ans, a, rcond=None, hermitian=False: pinv_vjp(g, ans, a), returns=NEW)
defjvp(np.linalg.pinv, lambda t, ans, a, rcond=None, hermitian=False: pinv_jvp(t, ans, a))
defvjp(np.linalg.solve,
       lambda g, ans, a, b: -(np.expand_dims(np.linalg.solve(swap_last(a), g), -1) * np.expand_dims(ans, -2)) if np.ndim(b) == 1 else -(np.linalg.solve(swap_last(a), g) @ swap_last(ans)),
       lambda g, ans, a, b: np.linalg.solve(swap_last(a), g), returns=NEW)
defjvp(np.linalg.solve, lambda t, ans, a, b: -np.linalg.solve(a, t @ ans),
       lambda t, ans, a, b: np.linalg.solve(a, t))
defvjp(np.linalg.lstsq, lambda g, ans, a, b, rcond=None: lstsq_vjp_a(g, ans, a, b),
       lambda g, ans, a, b, rcond=None: lstsq_vjp_b(g, ans, a, b), returns=NEW)
defjvp(np.linalg.lstsq, lambda t, ans, a, b, rcond=None: lstsq_jvp_a(t, ans, a, b),
       lambda t, ans, a, b, rcond=None: lstsq_jvp_b(t, ans, a, b))
defvjp(np.linalg.matrix_power, lambda g, ans, a, n: matrix_power_vjp(g, a, n), CONSTANT, returns=NEW)
defjvp(np.linalg.matrix_power, lambda t, ans, a, n: matrix_power_jvp(t, a, n), CONSTANT)

# --- factorisations (ans is the factorisation: the rules reuse it) --------------------------

defvjp(np.linalg.cholesky, lambda g, ans, a: cholesky_vjp(g, ans), returns=NEW)
defjvp(np.linalg.cholesky, lambda t, ans, a: cholesky_jvp(t, ans))
defvjp(np.linalg.qr, lambda g, ans, a, mode="reduced": qr_vjp(g, ans, a, mode), returns=NEW)
defjvp(np.linalg.qr, lambda t, ans, a, mode="reduced": qr_jvp(t, ans, a, mode))
defvjp(np.linalg.eigh, lambda g, ans, a, UPLO="L": eigh_vjp(g, ans, a, UPLO), returns=NEW)
defjvp(np.linalg.eigh, lambda t, ans, a, UPLO="L": eigh_jvp(t, ans, a, UPLO))
defvjp(np.linalg.eigvalsh, lambda g, ans, a, UPLO="L": eigvalsh_vjp(g, a, UPLO), returns=NEW)
defjvp(np.linalg.eigvalsh, lambda t, ans, a, UPLO="L": eigvalsh_jvp(t, a, UPLO))
defvjp(np.linalg.eig, lambda g, ans, a: eig_vjp(g, ans, a), returns=NEW)
defjvp(np.linalg.eig, lambda t, ans, a: eig_jvp(t, ans, a))
defvjp(np.linalg.eigvals, lambda g, ans, a: eigvals_vjp(g, a), returns=NEW)
defjvp(np.linalg.eigvals, lambda t, ans, a: eigvals_jvp(t, a))
defvjp(np.linalg.svd, lambda g, ans, a, full_matrices=True, compute_uv=True, hermitian=False: svd_vjp(g, ans, a, full_matrices, compute_uv), returns=NEW)
defjvp(np.linalg.svd, lambda t, ans, a, full_matrices=True, compute_uv=True, hermitian=False: svd_jvp(t, ans, a, full_matrices, compute_uv))

# --- norms: the 2-norm and Frobenius norm through runtime.norm_vjp (whose own rules
# make Hessians), every other ord through norm_vjp_any ----------------------------------

defvjp(np.linalg.norm, lambda g, ans, x, ord=None, axis=None, keepdims=False: norm_vjp(g, ans, x, ord, axis, keepdims) if ord is None else norm_vjp_any(g, ans, x, ord, axis, keepdims), returns=NEW)
defjvp(np.linalg.norm, lambda t, ans, x, ord=None, axis=None, keepdims=False: norm_jvp(t, ans, x, ord, axis, keepdims))

# --- products ------------------------------------------------------------------------------

defvjp(np.linalg.multi_dot, lambda g, ans, arrays: multi_dot_vjp(g, arrays), returns=NEW)
defjvp(np.linalg.multi_dot, lambda t, ans, arrays: multi_dot_jvp(t, arrays))
defvjp(np.tensordot, lambda g, ans, a, b, axes=2: tensordot_vjp_a(g, a, b, axes),
       lambda g, ans, a, b, axes=2: tensordot_vjp_b(g, a, b, axes), returns=NEW)
defjvp(np.tensordot, lambda t, ans, a, b, axes=2: np.tensordot(t, b, axes),
       lambda t, ans, a, b, axes=2: np.tensordot(a, t, axes))
defvjp(np.kron, lambda g, ans, a, b: kron_vjp(g, a, b, True),
       lambda g, ans, a, b: kron_vjp(g, a, b, False), returns=NEW)
defjvp(np.kron, lambda t, ans, a, b: np.kron(t, b), lambda t, ans, a, b: np.kron(a, t))
defvjp(np.cross, lambda g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None: cross_vjp(g, a, b, axisa, axisb, axisc, axis, True),
       lambda g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None: cross_vjp(g, a, b, axisa, axisb, axisc, axis, False), returns=NEW)
defjvp(np.cross, lambda t, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None: np.cross(t, b, axisa, axisb, axisc, axis),
       lambda t, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None: np.cross(a, t, axisa, axisb, axisc, axis))
# vdot(a, b) = sum(conj(a) * b), both flattened: conjugate-linear in a
defvjp(np.vdot, lambda g, ans, a, b: real_like(np.reshape(np.conj(g * b), np.shape(a)), a),
       lambda g, ans, a, b: real_like(np.reshape(g * np.conj(a), np.shape(b)), b), returns=NEW)
defjvp(np.vdot, lambda t, ans, a, b: np.vdot(t, b), lambda t, ans, a, b: np.vdot(a, t))
for _trace in (np.trace, Method("trace")):
    defvjp(_trace, lambda g, ans, a, offset=0, axis1=0, axis2=1, dtype=None: trace_vjp(g, a, offset, axis1, axis2), returns=NEW)
    defjvp(_trace, lambda t, ans, a, offset=0, axis1=0, axis2=1, dtype=None: np.trace(t, offset, axis1, axis2))


def scipy_linalg():
    """Register scipy.linalg's rules (called once the program imported it)."""
    global la  # the templates read it as a module-level name
    import scipy.linalg as la

    def spelled(name):
        return "scipy.linalg." + name

    # x = op(A)^-1 b with A read in one triangle: the adjoints solve with op(A)^T
    defvjp(la.solve_triangular,
           lambda g, ans, a, b, trans=0, lower=False: solve_triangular_vjp_a(g, ans, a, b, trans, lower),
           lambda g, ans, a, b, trans=0, lower=False: solve_triangular_vjp_b(g, a, trans, lower),
           label=spelled("solve_triangular"), returns=NEW)
    defjvp(la.solve_triangular,
           lambda t, ans, a, b, trans=0, lower=False: solve_triangular_jvp_a(t, ans, a, trans, lower),
           lambda t, ans, a, b, trans=0, lower=False: la.solve_triangular(a, t, trans=trans, lower=lower))
    defvjp(la.solve,
           lambda g, ans, a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True, assume_a=None, transposed=False: scipy_solve_vjp_a(g, ans, a, b, lower, assume_a, transposed),
           lambda g, ans, a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True, assume_a=None, transposed=False: la.solve(a, g, lower=lower, assume_a=assume_a, transposed=not transposed),
           label=spelled("solve"), returns=NEW)
    defjvp(la.solve,
           lambda t, ans, a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True, assume_a=None, transposed=False: scipy_solve_jvp_a(t, ans, a, b, lower, assume_a, transposed),
           lambda t, ans, a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True, assume_a=None, transposed=False: la.solve(a, t, lower=lower, assume_a=assume_a, transposed=transposed))
    defvjp(la.inv, lambda g, ans, a, overwrite_a=False, check_finite=True: -(swap_last(ans) @ g @ swap_last(ans)), label=spelled("inv"), returns=NEW)
    defjvp(la.inv, lambda t, ans, a, overwrite_a=False, check_finite=True: -(ans @ t @ ans))
    defvjp(la.det, lambda g, ans, a, overwrite_a=False, check_finite=True: np.expand_dims(g * ans, (-2, -1)) * swap_last(np.linalg.inv(a)), label=spelled("det"), returns=NEW)
    defjvp(la.det, lambda t, ans, a, overwrite_a=False, check_finite=True: ans * np.trace(np.linalg.solve(a, t), axis1=-2, axis2=-1))

    # Cholesky: potrf reads one triangle of A (the upper one unless lower=True)
    defvjp(la.cholesky, lambda g, ans, a, lower=False, overwrite_a=False, check_finite=True: scipy_cholesky_vjp(g, ans, a, lower), label=spelled("cholesky"), returns=NEW)
    defjvp(la.cholesky, lambda t, ans, a, lower=False, overwrite_a=False, check_finite=True: scipy_cholesky_jvp(t, ans, a, lower))
    defvjp(la.cho_factor, lambda g, ans, a, lower=False, overwrite_a=False, check_finite=True: cho_factor_vjp(g, ans, a, lower), label=spelled("cho_factor"), returns=NEW)
    defjvp(la.cho_factor, lambda t, ans, a, lower=False, overwrite_a=False, check_finite=True: cho_factor_jvp(t, ans, a, lower))
    # the solves reuse the factorisation they are given (two triangular solves)
    defvjp(la.cho_solve,
           lambda g, ans, c_and_lower, b, overwrite_b=False, check_finite=True: cho_solve_vjp_c(g, ans, c_and_lower, b),
           lambda g, ans, c_and_lower, b, overwrite_b=False, check_finite=True: la.cho_solve(c_and_lower, g),
           label=spelled("cho_solve"), returns=NEW)
    defjvp(la.cho_solve,
           lambda t, ans, c_and_lower, b, overwrite_b=False, check_finite=True: cho_solve_jvp_c(t, ans, c_and_lower, b),
           lambda t, ans, c_and_lower, b, overwrite_b=False, check_finite=True: la.cho_solve(c_and_lower, t))
    defvjp(la.lu_factor, lambda g, ans, a, overwrite_a=False, check_finite=True: lu_factor_vjp(g, ans, a), label=spelled("lu_factor"), returns=NEW)
    defjvp(la.lu_factor, lambda t, ans, a, overwrite_a=False, check_finite=True: lu_factor_jvp(t, ans, a))
    defvjp(la.lu_solve,
           lambda g, ans, lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True: lu_solve_vjp_lu(g, ans, lu_and_piv, b, trans),
           lambda g, ans, lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True: lu_solve_vjp_b(g, lu_and_piv, trans),
           label=spelled("lu_solve"), returns=NEW)
    defjvp(la.lu_solve,
           lambda t, ans, lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True: lu_solve_jvp_lu(t, ans, lu_and_piv, b, trans),
           lambda t, ans, lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True: la.lu_solve(lu_and_piv, t, trans=trans))

    # matrix functions: the adjoint of a Frechet derivative L(A, .) is L(A^T, .)
    defvjp(la.expm, lambda g, ans, A: la.expm_frechet(A.T, g, compute_expm=False), label=spelled("expm"), returns=NEW)
    defjvp(la.expm, lambda t, ans, A: la.expm_frechet(A, t, compute_expm=False))
    # X X = A: X dX + dX X = dA, a Sylvester equation in dX
    defvjp(la.sqrtm, lambda g, ans, A: real_like(la.solve_sylvester(ans.T, ans.T, g), A), label=spelled("sqrtm"), returns=NEW)
    defjvp(la.sqrtm, lambda t, ans, A: la.solve_sylvester(ans, ans, t))
    # A X + X B = Q: the adjoint Y solves A^T Y + Y B^T = G
    defvjp(la.solve_sylvester, lambda g, ans, a, b, q: -(la.solve_sylvester(a.T, b.T, g) @ ans.T),
           lambda g, ans, a, b, q: -(ans.T @ la.solve_sylvester(a.T, b.T, g)),
           lambda g, ans, a, b, q: la.solve_sylvester(a.T, b.T, g), label=spelled("solve_sylvester"), returns=NEW)
    defjvp(la.solve_sylvester, lambda t, ans, a, b, q: la.solve_sylvester(a, b, -(t @ ans)),
           lambda t, ans, a, b, q: la.solve_sylvester(a, b, -(ans @ t)),
           lambda t, ans, a, b, q: la.solve_sylvester(a, b, t))

    # block_diag(*arrays), for one to four arrays: each its block of the adjoint
    defvjp(la.block_diag, lambda g, ans, a0: block_diag_vjp(g, [a0], 0), label=spelled("block_diag"), returns=NEW)
    defjvp(la.block_diag, lambda t, ans, a0: block_diag_jvp(t, [a0], 0))
    defvjp(la.block_diag,
           lambda g, ans, a0, a1: block_diag_vjp(g, [a0, a1], 0),
           lambda g, ans, a0, a1: block_diag_vjp(g, [a0, a1], 1), label=spelled("block_diag"), returns=NEW)
    defjvp(la.block_diag,
           lambda t, ans, a0, a1: block_diag_jvp(t, [a0, a1], 0),
           lambda t, ans, a0, a1: block_diag_jvp(t, [a0, a1], 1))
    defvjp(la.block_diag,
           lambda g, ans, a0, a1, a2: block_diag_vjp(g, [a0, a1, a2], 0),
           lambda g, ans, a0, a1, a2: block_diag_vjp(g, [a0, a1, a2], 1),
           lambda g, ans, a0, a1, a2: block_diag_vjp(g, [a0, a1, a2], 2), label=spelled("block_diag"), returns=NEW)
    defjvp(la.block_diag,
           lambda t, ans, a0, a1, a2: block_diag_jvp(t, [a0, a1, a2], 0),
           lambda t, ans, a0, a1, a2: block_diag_jvp(t, [a0, a1, a2], 1),
           lambda t, ans, a0, a1, a2: block_diag_jvp(t, [a0, a1, a2], 2))
    defvjp(la.block_diag,
           lambda g, ans, a0, a1, a2, a3: block_diag_vjp(g, [a0, a1, a2, a3], 0),
           lambda g, ans, a0, a1, a2, a3: block_diag_vjp(g, [a0, a1, a2, a3], 1),
           lambda g, ans, a0, a1, a2, a3: block_diag_vjp(g, [a0, a1, a2, a3], 2),
           lambda g, ans, a0, a1, a2, a3: block_diag_vjp(g, [a0, a1, a2, a3], 3), label=spelled("block_diag"), returns=NEW)
    defjvp(la.block_diag,
           lambda t, ans, a0, a1, a2, a3: block_diag_jvp(t, [a0, a1, a2, a3], 0),
           lambda t, ans, a0, a1, a2, a3: block_diag_jvp(t, [a0, a1, a2, a3], 1),
           lambda t, ans, a0, a1, a2, a3: block_diag_jvp(t, [a0, a1, a2, a3], 2),
           lambda t, ans, a0, a1, a2, a3: block_diag_jvp(t, [a0, a1, a2, a3], 3))
