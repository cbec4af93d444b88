"""Derivatives of np.fft: every transform is linear, so its tangent is the
transform of the tangent and its adjoint the transposed transform of the
adjoint (:mod:`derivo.linalg_adjoints`, which states the convention for
complex values: JAX's, so that a real argument gets a real adjoint).

The DFT matrix is symmetric, so fft's adjoint is fft (ifft's ifft) with the
same ``norm``, cut or padded back to the argument's length when ``n`` (``s``)
changed it.  rfft keeps half the spectrum: its adjoint pads the adjoint back
and takes the real part.  irfft reads a half spectrum as the whole: its
adjoint weighs the frequencies that stand for two by 2.
"""

import numpy as np

from ..linalg_adjoints import fft_axes, fftn_vjp, irfftn_vjp, real_like, rfftn_vjp
from . import NEW, defjvp, defvjp


def spelled(name):
    return "np.fft." + name


# --- complex to complex ------------------------------------------------------------------

defvjp(np.fft.fft, lambda g, ans, a, n=None, axis=-1, norm=None: fftn_vjp(g, a, [axis], norm, False), label=spelled("fft"), returns=NEW)
defjvp(np.fft.fft, lambda t, ans, a, n=None, axis=-1, norm=None: np.fft.fft(t, n=n, axis=axis, norm=norm))
defvjp(np.fft.ifft, lambda g, ans, a, n=None, axis=-1, norm=None: fftn_vjp(g, a, [axis], norm, True), label=spelled("ifft"), returns=NEW)
defjvp(np.fft.ifft, lambda t, ans, a, n=None, axis=-1, norm=None: np.fft.ifft(t, n=n, axis=axis, norm=norm))
defvjp(np.fft.fft2, lambda g, ans, a, s=None, axes=None, norm=None: fftn_vjp(g, a, [-2, -1] if axes is None else list(axes), norm, False), label=spelled("fft2"), returns=NEW)
defjvp(np.fft.fft2, lambda t, ans, a, s=None, axes=None, norm=None: np.fft.fft2(t, s=s, axes=axes, norm=norm))
defvjp(np.fft.ifft2, lambda g, ans, a, s=None, axes=None, norm=None: fftn_vjp(g, a, [-2, -1] if axes is None else list(axes), norm, True), label=spelled("ifft2"), returns=NEW)
defjvp(np.fft.ifft2, lambda t, ans, a, s=None, axes=None, norm=None: np.fft.ifft2(t, s=s, axes=axes, norm=norm))
defvjp(np.fft.fftn, lambda g, ans, a, s=None, axes=None, norm=None: fftn_vjp(g, a, fft_axes(a, s, axes), norm, False), label=spelled("fftn"), returns=NEW)
defjvp(np.fft.fftn, lambda t, ans, a, s=None, axes=None, norm=None: np.fft.fftn(t, s=s, axes=axes, norm=norm))
defvjp(np.fft.ifftn, lambda g, ans, a, s=None, axes=None, norm=None: fftn_vjp(g, a, fft_axes(a, s, axes), norm, True), label=spelled("ifftn"), returns=NEW)
defjvp(np.fft.ifftn, lambda t, ans, a, s=None, axes=None, norm=None: np.fft.ifftn(t, s=s, axes=axes, norm=norm))

# --- real to half spectrum, and back ------------------------------------------------------

defvjp(np.fft.rfft, lambda g, ans, a, n=None, axis=-1, norm=None: rfftn_vjp(g, a, None if n is None else [n], [axis], norm), label=spelled("rfft"), returns=NEW)
defjvp(np.fft.rfft, lambda t, ans, a, n=None, axis=-1, norm=None: np.fft.rfft(t, n=n, axis=axis, norm=norm))
defvjp(np.fft.irfft, lambda g, ans, a, n=None, axis=-1, norm=None: irfftn_vjp(g, a, None if n is None else [n], [axis], norm), label=spelled("irfft"), returns=NEW)
defjvp(np.fft.irfft, lambda t, ans, a, n=None, axis=-1, norm=None: np.fft.irfft(t, n=n, axis=axis, norm=norm))
defvjp(np.fft.rfftn, lambda g, ans, a, s=None, axes=None, norm=None: rfftn_vjp(g, a, s, axes, norm), label=spelled("rfftn"), returns=NEW)
defjvp(np.fft.rfftn, lambda t, ans, a, s=None, axes=None, norm=None: np.fft.rfftn(t, s=s, axes=axes, norm=norm))
defvjp(np.fft.irfftn, lambda g, ans, a, s=None, axes=None, norm=None: irfftn_vjp(g, a, s, axes, norm), label=spelled("irfftn"), returns=NEW)
defjvp(np.fft.irfftn, lambda t, ans, a, s=None, axes=None, norm=None: np.fft.irfftn(t, s=s, axes=axes, norm=norm))
defvjp(np.fft.rfft2, lambda g, ans, a, s=None, axes=None, norm=None: rfftn_vjp(g, a, s, [-2, -1] if axes is None else axes, norm), label=spelled("rfft2"), returns=NEW)
defjvp(np.fft.rfft2, lambda t, ans, a, s=None, axes=None, norm=None: np.fft.rfft2(t, s=s, axes=axes, norm=norm))
defvjp(np.fft.irfft2, lambda g, ans, a, s=None, axes=None, norm=None: irfftn_vjp(g, a, s, [-2, -1] if axes is None else axes, norm), label=spelled("irfft2"), returns=NEW)
defjvp(np.fft.irfft2, lambda t, ans, a, s=None, axes=None, norm=None: np.fft.irfft2(t, s=s, axes=axes, norm=norm))

# --- shifts: permutations, undone by the other shift ---------------------------------------

defvjp(np.fft.fftshift, lambda g, ans, x, axes=None: real_like(np.fft.ifftshift(g, axes), x), label=spelled("fftshift"), returns=NEW)
defjvp(np.fft.fftshift, lambda t, ans, x, axes=None: np.fft.fftshift(t, axes=axes))
defvjp(np.fft.ifftshift, lambda g, ans, x, axes=None: real_like(np.fft.fftshift(g, axes), x), label=spelled("ifftshift"), returns=NEW)
defjvp(np.fft.ifftshift, lambda t, ans, x, axes=None: np.fft.ifftshift(t, axes=axes))
