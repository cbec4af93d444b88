"""Registering rules: user primitives, templates, refusals."""

import math

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


def test_template_must_be_a_lambda():
    def partial(ans, x):
        return 1.0

    with pytest.raises(derivo.DerivoError, match="lambda"):
        derivo.defpartials(opaque_counter, partial)


def test_partial_values_evaluate_the_templates():
    rule = rules.lookup(math.atan2, 2)
    y, x = 0.4, 0.9
    assert rule.partial_values(y, x) == pytest.approx([x / (x * x + y * y),
                                                       -y / (x * x + y * y)])
