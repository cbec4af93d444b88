"""derivo: source-to-source automatic differentiation for Python.

``derivo.grad(f)`` reads ``f``'s source, writes a new Python function that
computes its gradient (reverse mode; loops reversed with an explicit stack,
undone when they are reversible, or checkpointed),
compiles and caches it, and lets you print or save that source.
"""

__version__ = "0.1.0"

from .errors import DerivoError, NoDerivativeRule, SourceUnavailable, UnsupportedSyntax  # noqa: E402
from .rules import defjvp, defpartials, defvjp, nondifferentiable, primitive  # noqa: E402
from .runtime import stop_gradient  # noqa: E402
from .trees import register_container  # noqa: E402
from .api import (Derivative, cache_info, grad, jvp, save_module, source, tangent,  # noqa: E402
                  value_and_grad, vjp)
from .jacobians import hessian, hvp, jacobian  # noqa: E402
from .check import check_grad, forward_gradient  # noqa: E402
from .elementwise import elementwise_grad  # noqa: E402
from .checkpoints import checkpointed  # noqa: E402
from .graph import Graph, graph  # noqa: E402
from . import integrate  # noqa: E402,F401  (odeint's rule, once scipy.integrate is imported)

__all__ = [
    "grad", "value_and_grad", "vjp", "tangent", "elementwise_grad", "jvp", "jacobian", "hessian", "hvp",
    "source", "save_module", "cache_info", "check_grad", "forward_gradient", "checkpointed", "graph", "Graph",
    "Derivative",
    "defpartials", "defvjp", "defjvp", "nondifferentiable", "primitive", "stop_gradient",
    "register_container",
    "DerivoError", "UnsupportedSyntax", "NoDerivativeRule", "SourceUnavailable",
]
