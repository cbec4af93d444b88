"""Derivatives of SciPy, one table per submodule: scipy.special
(:mod:`.scipy_special`), scipy.stats (:mod:`.scipy_stats`), scipy.linalg (here).

SciPy is optional, and importing it is slow (scipy.stats imports np.random), so
derivo never imports it itself: each table's function registers one submodule's
rules, and :func:`derivo.rules.load_tables` calls it once the user's program
has imported that submodule (see :func:`derivo.rules.lazy_table`).
"""

from ..adjoints import solve_triangular_jvp_a, solve_triangular_vjp_a, solve_triangular_vjp_b
from . import NEW, defjvp, defvjp, lazy_table, scipy_special, scipy_stats


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


lazy_table("scipy.special", scipy_special.register)
lazy_table("scipy.linalg", linalg)
lazy_table("scipy.stats", scipy_stats.register)
