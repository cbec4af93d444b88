"""Registering rules: user primitives, templates, refusals."""

import math

import numpy as np

import pytest

import derivo
from derivo import rules


def softplus(x):
    return math.log1p(math.exp(x))


def uses_softplus(x):
    return 3.0 * softplus(x * x)


def opaque_counter(x):
    return x + 1.0


def test_user_rule_replaces_differentiating_the_source():
    derivo.defpartials(softplus, lambda ans, x: 1 / (1 + math.exp(-x)))
    try:
        df = derivo.grad(uses_softplus)
        x = 0.7
        assert df(x) == pytest.approx(3.0 * 2 * x / (1 + math.exp(-x * x)), rel=1e-12)
        # The rule's partial is pasted into the generated code; no softplus_vjp.
        assert "softplus_vjp" not in df.source
        assert "math.exp(-(x * x))" in df.source or "math.exp(-x * x)" in df.source
    finally:
        del rules.RULES[softplus]


def test_partials_must_match_the_arity():
    with pytest.raises(derivo.DerivoError, match="ans, \\*args"):
        derivo.defpartials(opaque_counter, lambda ans, x, y: 1.0)
    assert opaque_counter not in rules.RULES


def test_a_rule_must_be_a_lambda_or_a_def():
    with pytest.raises(derivo.DerivoError, match="a lambda or a def"):
        derivo.defpartials(opaque_counter, math.cos)
    assert opaque_counter not in rules.RULES


def test_a_user_template_without_source_is_refused_when_registered():
    with pytest.raises(derivo.DerivoError, match="cannot read the source"):
        derivo.defpartials(opaque_counter, eval("lambda ans, x: 1.0"))
    assert opaque_counter not in rules.RULES


def test_partial_values_evaluate_the_templates():
    rule = rules.lookup(math.atan2, 2)
    y, x = 0.4, 0.9
    assert rule.partial_values(y, x) == pytest.approx([x / (x * x + y * y),
                                                       -y / (x * x + y * y)])


def rowsum(x):
    return np.sum(x, axis=1)


def uses_rowsum(x):
    return (rowsum(x * x) ** 2).sum()


def test_user_vjp_rule_for_an_array_function():
    derivo.defvjp(rowsum, lambda g, ans, x: np.broadcast_to(g[:, None], x.shape))
    try:
        x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
        gradient = derivo.grad(uses_rowsum)(x)
        expected = 4 * np.sum(x * x, axis=1)[:, None] * x
        np.testing.assert_allclose(gradient, expected, rtol=1e-12)
        assert "rowsum_vjp" not in derivo.grad(uses_rowsum).source
    finally:
        del rules.RULES[rowsum]
