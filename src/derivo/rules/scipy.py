"""Derivatives of SciPy, one table per submodule: scipy.special
(:mod:`.scipy_special`), scipy.stats (:mod:`.scipy_stats`), scipy.signal
(:mod:`.scipy_signal`) and scipy.linalg
(:func:`.linalg.scipy_linalg`, beside NumPy's linear algebra).

SciPy is optional, and importing it is slow (scipy.stats imports np.random), so
derivo never imports it itself: each table's function registers one submodule's
rules, and :func:`derivo.rules.load_tables` calls it once the user's program
has imported that submodule (see :func:`derivo.rules.lazy_table`).
"""

from . import lazy_table, scipy_signal, scipy_special, scipy_stats
from .linalg import scipy_linalg

lazy_table("scipy.special", scipy_special.register)
lazy_table("scipy.linalg", scipy_linalg)
lazy_table("scipy.stats", scipy_stats.register)
lazy_table("scipy.signal", scipy_signal.register)
