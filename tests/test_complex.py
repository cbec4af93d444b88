"""Real-valued functions of complex intermediates, differentiated in their real inputs.

derivo follows JAX's convention (README, arrays section): the adjoint of a complex value
z = x + iy is dL/dx - i dL/dy, so a holomorphic function's adjoint is g f'(z) and the
adjoint of a real value is the real part of what reaches it.  Every elementwise rule that
takes complex numbers is swept along a complex path, z = x + 1j * y, in reverse and forward
mode, against central differences in x and y.
"""

import numpy as np
import pytest

import derivo

H = 1e-6
X = np.array([0.3, 1.2, -0.6])
Y = np.array([-0.7, 0.4, 0.5])
W_REAL = np.array([0.5, -1.0, 2.0])
W_IMAG = np.array([1.5, 0.25, -0.75])

HOLOMORPHIC = ["exp", "expm1", "log", "log1p", "sqrt", "square", "sin", "cos", "tan", "tanh",
               "sinh", "cosh", "arctan", "arcsin", "arccos", "arcsinh", "arctanh", "negative",
               "reciprocal", "log2", "log10", "exp2"]


def make_loss(name):
    """Re and Im of np.NAME(x + iy), weighed: every partial's real and imaginary part counts."""
    source = ("import numpy as np\n\n"
              "def loss(x, y, w_real, w_imag):\n"
              "    z = np.{}(x + 1j * y)\n"
              "    return np.sum(np.real(z) * w_real + np.imag(z) * w_imag)\n").format(name)
    return source


def load(tmp_path, source, name):
    import importlib.util
    path = tmp_path / "complex_{}.py".format(name)
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("complex_" + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.loss


def differences(f, args, index):
    out = np.zeros(np.shape(args[index]))
    for position in np.ndindex(out.shape):
        step = np.zeros(out.shape)
        step[position] = H
        up, down = list(args), list(args)
        up[index], down[index] = args[index] + step, args[index] - step
        out[position] = (f(*up) - f(*down)) / (2 * H)
    return out


@pytest.mark.parametrize("name", HOLOMORPHIC)
def test_a_holomorphic_rule_along_a_complex_path(name, tmp_path):
    f = load(tmp_path, make_loss(name), name)
    args = (X, Y, W_REAL, W_IMAG)
    gx, gy = derivo.grad(f, wrt=(0, 1))(*args)
    assert not np.iscomplexobj(gx) and not np.iscomplexobj(gy)
    np.testing.assert_allclose(gx, differences(f, args, 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gy, differences(f, args, 1), rtol=1e-6, atol=1e-8)
    _, tangent = derivo.tangent(f, wrt=(0, 1))(W_IMAG, W_REAL, *args)
    expected = np.sum(differences(f, args, 0) * W_IMAG + differences(f, args, 1) * W_REAL)
    assert tangent == pytest.approx(expected, rel=1e-6)


def modulus(x, y):
    return np.sum(np.abs(x + 1j * y) * W_REAL)


def phase_and_parts(x, y):
    z = (x + 1j * y) * np.exp(0.3j * x)
    return np.sum(np.angle(z) * W_REAL + np.real(np.conj(z) * z) + np.imag(z * z) * W_IMAG)


def scalar_path(x, y):
    z = x[0] + 1j * y[0]
    return np.abs(np.exp(z) * z)


@pytest.mark.parametrize("f", [modulus, phase_and_parts, scalar_path], ids=lambda f: f.__name__)
def test_real_losses_of_complex_intermediates(f):
    gx, gy = derivo.grad(f, wrt=(0, 1))(X, Y)
    assert gx.dtype.kind == gy.dtype.kind == "f"
    np.testing.assert_allclose(gx, differences(f, (X, Y), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gy, differences(f, (X, Y), 1), rtol=1e-6, atol=1e-8)
    _, tangent = derivo.jvp(f, (X, Y), (W_REAL, W_IMAG))
    expected = np.sum(differences(f, (X, Y), 0) * W_REAL + differences(f, (X, Y), 1) * W_IMAG)
    assert tangent == pytest.approx(expected, rel=1e-6)


def squared_modulus_of_a_helper(z):
    return np.real(z * np.conj(z))


def through_a_complex_helper(x, y):
    return np.sum(squared_modulus_of_a_helper(x + 1j * y) + np.real(np.sin(x + 1j * y)))


def test_the_convention_a_complex_values_adjoint_is_df_dx_minus_i_df_dy():
    # f(z) = |z|^2 + Re sin z: JAX's grad in z is 2 conj(z) + cos(z) (the holomorphic
    # part's g f'(z), not its conjugate), read back through x and y as its (Re, -Im)
    z = X + 1j * Y
    adjoint = 2 * np.conj(z) + np.cos(z)  # = df/dx - i df/dy
    gx, gy = derivo.grad(through_a_complex_helper, wrt=(0, 1))(X, Y)
    np.testing.assert_allclose(gx, np.real(adjoint), rtol=1e-12)
    np.testing.assert_allclose(gy, -np.imag(adjoint), rtol=1e-12)
    vjp_value, vjp_fn = derivo.vjp(through_a_complex_helper, X, Y)
    assert vjp_value == pytest.approx(through_a_complex_helper(X, Y))
    cx, cy = vjp_fn(2.0)
    np.testing.assert_allclose(cx, 2 * gx, rtol=1e-12)
    np.testing.assert_allclose(cy, 2 * gy, rtol=1e-12)
