"""Rules a user writes: lambdas reading their closure, ``def`` functions, the
derivo.primitive decorator, and derivo.stop_gradient."""

import math

import numpy as np
import pytest

import derivo

from checks import assert_close


def central(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def make_scaled_softplus(scale):
    def scaled_softplus(x):
        return scale * math.log1p(math.exp(x))
    derivo.defpartials(scaled_softplus, lambda ans, x: scale / (1.0 + math.exp(-x)))
    return scaled_softplus


def test_a_lambda_rule_reads_its_closure():
    softplus = make_scaled_softplus(3.0)

    def f(x):
        return softplus(x) * x

    x = 0.4
    assert_close(derivo.grad(f)(x), central(f, x), rtol=1e-8)
    assert_close(derivo.jvp(f, (x,), (1.0,))[1], central(f, x), rtol=1e-8)


def cube_vjp(g, ans, x):
    slope = 3.0 * x * x
    return g * slope


def cube_jvp(t, ans, x):
    return 3.0 * x * x * t


@derivo.primitive(vjps=cube_vjp, jvps=cube_jvp)
def cube(x):
    return x ** 3


def uses_cube(x):
    return cube(x) + math.sin(x)


def test_a_def_rule_is_called_from_the_generated_code():
    x = 1.3
    assert_close(derivo.grad(uses_cube)(x), central(uses_cube, x), rtol=1e-8)
    assert_close(derivo.jvp(uses_cube, (x,), (1.0,))[1], central(uses_cube, x), rtol=1e-8)
    assert "derivo_rule_cube_vjp(" in derivo.grad(uses_cube).source


def test_the_decorator_uses_the_rule_not_the_body():
    @derivo.primitive(partials=lambda ans, x: 100.0)   # a deliberately different rule
    def doubled(x):
        return 2.0 * x

    def f(x):
        return doubled(x)

    assert derivo.grad(f)(1.0) == 100.0


def test_the_decorator_takes_one_kind_of_rule():
    with pytest.raises(derivo.DerivoError, match="partials= or vjps="):
        derivo.primitive()


def test_stop_gradient_makes_a_constant():
    def f(x):
        return x * derivo.stop_gradient(x * x)

    assert derivo.grad(f)(3.0) == 9.0
    assert derivo.jvp(f, (3.0,), (1.0,)) == (27.0, 9.0)
    assert derivo.hessian(f)(3.0) == 0.0

    def g(w):
        return np.sum(w * derivo.stop_gradient(np.tanh(w)))

    w = np.array([0.1, -0.5])
    np.testing.assert_allclose(derivo.grad(g)(w), np.tanh(w), rtol=1e-15)


def scaled_sine(x, scale):
    return scale * math.sin(x)


derivo.defvjp(scaled_sine, lambda g, ans, x, scale: g * scale * math.cos(x), None)
derivo.defjvp(scaled_sine, lambda t, ans, x, scale: t * scale * math.cos(x),
              lambda t, ans, x, scale: t * math.sin(x))


def uses_scaled_sine(x, scale):
    return scaled_sine(x, scale) * x


def test_an_argument_with_a_tangent_rule_only_is_differentiated_in_forward_mode_only():
    # (as derivo.integrate.adjoints: its Hessian's rule, forward over reverse)
    assert_close(derivo.jvp(uses_scaled_sine, (0.4, 2.0), (None, 1.0))[1],
                 central(lambda s: uses_scaled_sine(0.4, s), 2.0), rtol=1e-8)
    with pytest.raises(derivo.NoDerivativeRule, match="its argument 'scale'"):
        derivo.grad(uses_scaled_sine, wrt=1)(0.4, 2.0)


def spaced_sum(x, *spacing, scale=1.0):
    return scale * sum(x) / (spacing[0] if spacing else 1.0)


derivo.defvjp(spaced_sum, lambda g, ans, x, *spacing, scale=1.0: [g * scale / (spacing[0] if spacing else 1.0)] * len(x))
derivo.defjvp(spaced_sum, lambda t, ans, x, *spacing, scale=1.0: scale * sum(t) / (spacing[0] if spacing else 1.0))


def uses_spaced_sum(a, b):
    return spaced_sum([a, b], 2.0, scale=3.0) + spaced_sum([a, a], scale=0.5)


def test_a_template_takes_keyword_only_options_after_its_args():
    # the positional 2.0 goes to *spacing, scale= by keyword
    assert_close(derivo.grad(uses_spaced_sum, wrt=(0, 1))(0.3, 0.7), (2.5, 1.5), rtol=1e-12)
    assert_close(derivo.jvp(uses_spaced_sum, (0.3, 0.7), (1.0, 0.0))[1], 2.5, rtol=1e-12)
