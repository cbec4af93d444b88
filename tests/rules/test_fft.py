"""Every rule of the np.fft table, checked through the whole pipeline as
test_linalg.py checks its table's: gradient against finite differences, the
dot-product test of derivo.vjp, derivo.jvp against finite differences.

The arguments are real and the losses real (through np.abs, or an inverse
transform back to real numbers), so the checks test JAX's convention for the
complex values in between: a real argument's gradient is real and is the
derivative of the real loss.  Multiplying a spectrum by a complex constant
(PHASE) makes the adjoints reaching each transform complex.
"""


import numpy as np

import derivo
from derivo import rules
from probing import Probe, normal, table_tests

TABLE = "derivo.rules.fft"
RTOL = 1e-6
PRELUDE = """\
import numpy as np

PHASE5 = np.exp(1j * np.linspace(0.3, 2.0, 5)) * np.linspace(1.0, 2.0, 5)
PHASE4 = np.exp(1j * np.linspace(-1.0, 1.0, 4))
PHASE34 = np.exp(1j * np.arange(12.0).reshape(3, 4) / 5)
"""

PROBES = {}


def probe(primitive, expr, *args):
    p = Probe(primitive, expr, args)
    PROBES.setdefault(p.key, []).append(p)


# complex to complex: n cuts or pads, axis, norm; a complex adjoint through PHASE
for _name in ("fft", "ifft"):
    _f = getattr(np.fft, _name)
    for _options, _shape in (("", (8,)), (", 6", (8,)), (", n=11", (8,)), (", axis=0", (4, 5)),
                             (", norm='ortho'", (7,)), (", norm='forward'", (3, 6)),
                             (", 5, 0, 'backward'", (4, 3))):
        probe(_f, "np.abs(np.fft.{}(x0{})) ** 2".format(_name, _options), normal(*_shape))
    probe(_f, "np.abs(np.fft.{}(np.fft.fft(x0) * PHASE5))".format(_name), normal(5))
for _name in ("fft2", "ifft2", "fftn", "ifftn"):
    _f = getattr(np.fft, _name)
    for _options, _shape in (("", (3, 4)), (", (4, 6), (0, 1)", (3, 4)), (", axes=(0, 2)", (3, 2, 4)),
                             (", norm='ortho'", (2, 3, 4)), (", s=(2, 5), axes=(1, 0)", (3, 4))):
        probe(_f, "np.abs(np.fft.{}(x0{}))".format(_name, _options), normal(*_shape))
    probe(_f, "np.abs(np.fft.{}(np.fft.fft(x0) * PHASE34))".format(_name), normal(3, 4))
probe(np.fft.fftn, "np.abs(np.fft.fftn(x0, (3, 3), (-2, -1)))", normal(2, 4, 5))

# real to half spectrum and back: even and odd lengths, n, axis, norm
for _options, _shape in (("", (8,)), ("", (7,)), (", 10", (8,)), (", n=5", (8,)),
                         (", axis=0", (6, 3)), (", norm='ortho'", (6,)), (", norm='forward'", (5,))):
    probe(np.fft.rfft, "np.abs(np.fft.rfft(x0{}))".format(_options), normal(*_shape))
for _options, _length in (("", 8), (", 8", 8), (", 7", 7), (", n=12", 8), (", n=5", 8),
                          (", norm='ortho'", 8), (", norm='forward'", 8), (", 9, -1, 'ortho'", 9)):
    probe(np.fft.irfft, "np.fft.irfft(np.fft.rfft(x0) * PHASE{}{})".format(
        _length // 2 + 1, _options), normal(_length))
probe(np.fft.irfft, "np.fft.irfft(x0)", normal(5))  # a real half spectrum
probe(np.fft.irfft, "np.fft.irfft(np.fft.rfft(x0, axis=0) * PHASE4[:, None], axis=0)",
      normal(6, 2))
for _name in ("rfftn", "rfft2"):
    for _options, _shape in (("", (3, 4)), (", (4, 6), (0, 1)", (3, 4)), (", axes=(0, 2)", (3, 2, 4)),
                             (", s=(5, 2), axes=(1, 0)", (3, 4)), (", norm='ortho'", (2, 3, 5))):
        probe(getattr(np.fft, _name), "np.abs(np.fft.{}(x0{}))".format(_name, _options),
              normal(*_shape))
for _name in ("irfftn", "irfft2"):
    _f = getattr(np.fft, _name)
    probe(_f, "np.fft.{}(np.fft.rfftn(x0) * PHASE34[:, :3])".format(_name), normal(3, 4))
    probe(_f, "np.fft.{}(np.fft.rfftn(x0) * PHASE34[:, :3], (3, 5), (0, 1))".format(_name),
          normal(3, 4))
    probe(_f, "np.fft.{}(np.fft.rfftn(x0, axes=(0, 2)), axes=(0, 2))".format(_name),
          normal(3, 2, 4))
    probe(_f, "np.fft.{}(np.fft.fft2(x0) * PHASE34, norm='ortho')".format(_name), normal(3, 4))
probe(np.fft.irfftn, "np.fft.irfftn(np.fft.rfftn(x0) * PHASE4)", normal(2, 3, 6))

# shifts
for _name in ("fftshift", "ifftshift"):
    _f = getattr(np.fft, _name)
    probe(_f, "np.fft.{}(x0)".format(_name), normal(5))
    probe(_f, "np.fft.{}(x0, axes=0)".format(_name), normal(4, 5))
    probe(_f, "np.fft.{}(x0, (0, 1))".format(_name), normal(3, 4))
    probe(_f, "np.abs(np.fft.{}(np.fft.fft(x0)))".format(_name), normal(6))


(test_rule_matches_finite_differences, test_rule_dot_product,
 test_rule_forward_matches_finite_differences,
 test_every_fft_rule_has_a_probe) = table_tests(TABLE, PROBES, PRELUDE, RTOL, "fft")


def power(x):
    return np.sum(np.abs(np.fft.fft(x)) ** 2)


def test_a_real_argument_gets_a_real_gradient():
    """Parseval: sum |fft(x)|^2 = n sum x^2, so the gradient is 2 n x, real."""
    x = np.random.default_rng(3).normal(size=8)
    gradient = derivo.grad(power)(x)
    assert not np.iscomplexobj(gradient)
    np.testing.assert_allclose(gradient, 16 * x, rtol=1e-12)


def test_a_complex_argument_follows_jax_convention():
    """For a real loss of a complex z the adjoint is dL/dRe z - i dL/dIm z: for
    L = sum |fft(z)|^2 = n sum |z|^2 it is 2 n conj(z), from the adjoint
    2 conj(fft(z)) of the spectrum."""
    from derivo.linalg_adjoints import fftn_vjp
    rng = np.random.default_rng(4)
    z = rng.normal(size=6) + 1j * rng.normal(size=6)
    adjoint = fftn_vjp(2 * np.conj(np.fft.fft(z)), z, [-1], None, False)
    np.testing.assert_allclose(adjoint, 12 * np.conj(z), rtol=1e-12)


def test_table_covers_the_issue_list():
    names = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "fftn", "ifftn", "rfftn", "irfftn",
             "fftshift", "ifftshift"]
    assert not [n for n in names if getattr(np.fft, n) not in rules.RULES]
