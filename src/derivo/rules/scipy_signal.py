"""Derivatives of scipy.signal, registered by :func:`register` once the user's
program has imported scipy.signal (see :mod:`derivo.rules.scipy`).

convolve is linear in each argument: its tangent is the convolution with the
tangent, its adjoint the adjoint correlated with the other argument
(:func:`derivo.adjoints.convolve_vjp`, every mode and method).  correlate is
convolve with its second argument reversed and conjugated.
"""

from ..adjoints import convolve_vjp, reversed_conj
from . import CONSTANT, NEW, defjvp, defvjp


def register():
    global signal  # the templates read it as a module-level name
    import scipy.signal as signal

    def spelled(name):
        return "scipy.signal." + name

    defvjp(signal.convolve,
           lambda g, ans, in1, in2, mode="full", method="auto": convolve_vjp(g, in1, in2, 0, signal.correlate),
           lambda g, ans, in1, in2, mode="full", method="auto": convolve_vjp(g, in1, in2, 1, signal.correlate),
           CONSTANT, CONSTANT, label=spelled("convolve"), returns=NEW)
    defjvp(signal.convolve,
           lambda t, ans, in1, in2, mode="full", method="auto": signal.convolve(t, in2, mode, method),
           lambda t, ans, in1, in2, mode="full", method="auto": signal.convolve(in1, t, mode, method),
           CONSTANT, CONSTANT)
    defvjp(signal.correlate,
           lambda g, ans, in1, in2, mode="full", method="auto": convolve_vjp(g, in1, reversed_conj(in2), 0, signal.correlate),
           lambda g, ans, in1, in2, mode="full", method="auto": reversed_conj(convolve_vjp(g, in1, reversed_conj(in2), 1, signal.correlate)),
           CONSTANT, CONSTANT, label=spelled("correlate"), returns=NEW)
    defjvp(signal.correlate,
           lambda t, ans, in1, in2, mode="full", method="auto": signal.correlate(t, in2, mode, method),
           lambda t, ans, in1, in2, mode="full", method="auto": signal.correlate(in1, t, mode, method),
           CONSTANT, CONSTANT)
