"""Rules that gave a wrong derivative with no error: np.r_/np.c_, np.clip's
bounds, np.abs of a complex number."""

import importlib.util
import textwrap

import numpy as np
import pytest

import derivo


def load(tmp_path, source, name):
    path = tmp_path / (name + ".py")
    path.write_text("import numpy as np\n\n" + textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, str(path)


@pytest.mark.parametrize("construct", ["np.r_", "np.c_"])
@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_index_concatenation_is_refused_on_its_line(construct, mode, tmp_path):
    module, path = load(tmp_path, """\
        def f(x, y):
            z = 2.0 * x
            return np.sum({}[z, y] ** 2)
        """.format(construct), "concat_" + construct[-2] + mode)
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    with pytest.raises(derivo.DerivoError) as caught:
        if mode == "grad":
            derivo.grad(module.f, wrt=(0, 1))(x, y)
        else:
            derivo.jvp(module.f, (x, y), (x, y))
    message = str(caught.value)
    assert "{}:5:".format(path) in message and construct in message
    assert "np.concatenate" in message


def test_index_concatenation_of_constants_is_left_alone(tmp_path):
    module, _ = load(tmp_path, """\
        def f(x):
            return np.sum(x * np.r_[1.0, 2.0])
        """, "concat_constants")
    x = np.array([3.0, 5.0])
    np.testing.assert_allclose(derivo.grad(module.f)(x), [1.0, 2.0])


def test_clip_lower_bound_gets_the_count_of_clipped_entries(tmp_path):
    module, _ = load(tmp_path, """\
        def f(c, x):
            return np.sum(np.clip(c, x, 1.0))
        """, "clip_bound")
    c = np.array([0.0, 0.5, 2.0, -1.0])
    gradient = derivo.grad(module.f, wrt=(0, 1))(c, 0.3)
    np.testing.assert_array_equal(gradient[0], [0.0, 1.0, 0.0, 0.0])
    assert gradient[1] == 2.0  # two entries below 0.3, one clipped above by 1.0
    _, tangent = derivo.jvp(module.f, (c, 0.3), (np.zeros(4), 1.0))
    assert tangent == 2.0


def test_clip_upper_bound_array(tmp_path):
    module, _ = load(tmp_path, """\
        def f(c, hi):
            return np.sum(np.clip(c, None, hi) * np.arange(1.0, 5.0))
        """, "clip_upper")
    c = np.array([0.0, 0.5, 2.0, -1.0])
    hi = np.array([1.0, 0.2, 1.5, 0.0])
    np.testing.assert_array_equal(derivo.grad(module.f, wrt=1)(c, hi), [0.0, 2.0, 3.0, 0.0])


def abs_of_complex(x, y):
    return np.sum(np.abs(x + 1j * y) ** 2 + 3.0 * np.abs(x - 2j * y))


def closed_form(x, y):
    r2 = np.sqrt(x * x + 4 * y * y)
    return 2 * x + 3.0 * x / r2, 2 * y + 3.0 * 4 * y / r2


def test_abs_of_a_complex_number_reverse():
    """JAX's convention: a real argument's gradient is the real part of its adjoint."""
    x, y = np.array([0.6, -1.0, 0.25]), np.array([0.8, 2.0, -0.5])
    gx, gy = derivo.grad(abs_of_complex, wrt=(0, 1))(x, y)
    ex, ey = closed_form(x, y)
    np.testing.assert_allclose(np.real(gx), ex, rtol=1e-12)
    np.testing.assert_allclose(np.real(gy), ey, rtol=1e-12)


def test_abs_of_a_complex_number_forward():
    x, y = np.array([0.6, -1.0, 0.25]), np.array([0.8, 2.0, -0.5])
    ex, ey = closed_form(x, y)
    u, v = np.array([1.0, -2.0, 0.5]), np.array([0.3, 0.1, -1.0])
    _, tangent = derivo.jvp(abs_of_complex, (x, y), (u, v))
    assert np.isrealobj(tangent)
    assert tangent == pytest.approx(np.sum(ex * u + ey * v), rel=1e-12)


def test_abs_of_a_complex_scalar():
    def f(x, y):
        return np.abs(x + 1j * y)

    gx, gy = derivo.grad(f, wrt=(0, 1))(0.6, 0.8)
    assert (np.real(gx), np.real(gy)) == pytest.approx((0.6, 0.8), rel=1e-12)
    assert derivo.jvp(f, (0.6, 0.8), (0.0, 1.0))[1] == pytest.approx(0.8, rel=1e-12)


def test_a_computed_keyword_argument_a_rule_reads(tmp_path):
    """The adjoint of np.clip reads a_min: its value, computed in the call, is
    kept in a temporary the reverse sweep reads."""
    module, _ = load(tmp_path, """\
        def f(x, c):
            return np.sum(np.clip(x, a_min=c * 2.0, a_max=1.0) * np.arange(1.0, 4.0))
        """, "clip_keyword")
    x = np.array([0.1, 0.5, 2.0])
    gx, gc = derivo.grad(module.f, wrt=(0, 1))(x, 0.2)
    np.testing.assert_array_equal(gx, [0.0, 2.0, 0.0])
    assert gc == 2.0


@pytest.mark.parametrize("name", ["exp2", "log10", "log2", "reciprocal", "arcsinh", "arctanh",
                                  "exp", "sin", "sqrt", "square", "tanh"])
def test_holomorphic_rules_on_complex_values(name, tmp_path):
    """|f(x + iy)|^2 through a holomorphic f: the real parts of the adjoints are
    the derivatives in x and y, and forward mode agrees with them."""
    module, _ = load(tmp_path, """\
        def f(x, y):
            z = np.{}(x + 1j * y)
            return np.sum(np.abs(z) ** 2)
        """.format(name), "complex_" + name)
    x, y = np.array([0.3, -0.4]), np.array([0.2, 0.5])
    gx, gy = derivo.grad(module.f, wrt=(0, 1))(x, y)
    h = 1e-6
    for got, index in ((gx, 0), (gy, 1)):
        expected = np.zeros(2)
        for i in range(2):
            step = np.zeros(2)
            step[i] = h
            up = [x, y]
            down = [x, y]
            up[index], down[index] = up[index] + step, down[index] - step
            expected[i] = (module.f(*up) - module.f(*down)) / (2 * h)
        np.testing.assert_allclose(np.real(got), expected, rtol=1e-6, atol=1e-8)
    u, v = np.array([1.0, -0.5]), np.array([0.25, 2.0])
    _, tangent = derivo.jvp(module.f, (x, y), (u, v))
    assert np.real(tangent) == pytest.approx(np.sum(np.real(gx) * u + np.real(gy) * v),
                                             rel=1e-6, abs=1e-8)
