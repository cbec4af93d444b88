"""Helpers the rule-table tests share: argument makers, probe modules, finite differences.

A *probe* is an expression calling one primitive; ``load`` writes it into a real
module with ``probe`` (the expression) and ``loss`` (its output summed against a
fixed random weight ``W``, so the output adjoint is not all ones).
"""

import importlib.util
import zlib

import numpy as np
import pytest

import derivo
from derivo import rules

H = 1e-6


# --- argument makers: each takes a numpy Generator ----------------------------------

def shaped(draw, shape):
    value = draw(shape)
    return float(value) if shape == () else value


def normal(*shape):
    return lambda rng: shaped(lambda s: rng.normal(size=s), shape)


def positive(*shape):
    return lambda rng: shaped(lambda s: rng.uniform(0.5, 2.0, size=s), shape)



class Probe:
    """One call of a primitive to check: ``expr`` over arguments ``x0, x1, ...``
    drawn by ``args`` (argument makers); ``xfail`` names a bug it exposes."""

    def __init__(self, primitive, expr, args, arity=None, xfail=None):
        by_arity = rules.RULES.get(primitive, {})
        if arity is None:
            arity = next(iter(by_arity)) if len(by_arity) == 1 else None
        self.key = (primitive, arity)
        self.expr = expr
        self.args = args
        self.xfail = xfail

    def arguments(self):
        rng = np.random.default_rng(zlib.crc32(self.expr.encode()))
        return [make(rng) for make in self.args]

    @property
    def id(self):
        shapes = ",".join("float" if isinstance(a, float) else "x".join(map(str, np.shape(a)))
                          or "()" for a in self.arguments())
        return "{} [{}]".format(self.expr, shapes)


def table_rules(table):
    """(primitive, arity) of every rule written in the table module ``table``."""
    keys = [(primitive, arity) for primitive, by_arity in rules.RULES.items()
            for arity, rule in by_arity.items() if rule.table == table]
    return sorted(keys, key=lambda k: (rule_of(k).label, k[1]))


def rule_cases(table, probes):
    """pytest parameters (key, probe) for every rule of ``table``: (key, None)
    for a rule with no probe, so it fails by name instead of going unchecked."""
    for key in table_rules(table):
        label = "{}/{}".format(rule_of(key).label, key[1])
        found = probes.get(key)
        if not found:
            yield pytest.param(key, None, id=label + " NO PROBE")
            continue
        for p in found:
            marks = [pytest.mark.xfail(strict=True, reason=p.xfail)] if p.xfail else []
            yield pytest.param(key, p, id="{}: {}".format(label, p.id), marks=marks)


def rule_of(key):
    primitive, arity = key
    return rules.RULES[primitive][arity]


def load(tmp_path, prelude, p, arguments, label):
    """A real module holding ``probe`` and ``loss`` for the probe expression."""
    params = ", ".join("x{}".format(i) for i in range(len(arguments)))
    source = "{}\n\ndef probe({p}):\n    return {e}\n\n\ndef loss({p}):\n" \
             "    return np.sum(({e}) * W)\n".format(prelude, p=params, e=p.expr)
    path = tmp_path / "{}_probe.py".format(label)
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("{}_probe_{}".format(label, id(path)), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.probe(*arguments)
    module.W = random_like(np.random.default_rng(7), out)
    return module


def random_like(rng, value):
    if np.ndim(value) == 0:
        return float(rng.normal())
    return rng.normal(size=np.shape(value))


def shifted(arguments, index, delta):
    moved = list(arguments)
    moved[index] = moved[index] + delta
    return moved


def numeric_gradient(f, arguments, index):
    """Central differences of the scalar f with respect to every element of one argument."""
    x = arguments[index]
    if isinstance(x, float):
        return (f(*shifted(arguments, index, H)) - f(*shifted(arguments, index, -H))) / (2 * H)
    gradient = np.zeros(x.shape)
    for position in np.ndindex(x.shape):
        step = np.zeros(x.shape)
        step[position] = H
        gradient[position] = (f(*shifted(arguments, index, step))
                              - f(*shifted(arguments, index, -step))) / (2 * H)
    return gradient



def assert_gradient_matches_differences(module, arguments, rtol):
    """derivo's gradient of the probe module's ``loss`` has each argument's shape
    and matches central differences."""
    gradient = derivo.grad(module.loss, wrt=tuple(range(len(arguments))))(*arguments)
    assert isinstance(gradient, tuple) and len(gradient) == len(arguments)
    for index, (got, x) in enumerate(zip(gradient, arguments)):
        expected = numeric_gradient(module.loss, arguments, index)
        assert np.shape(got) == np.shape(x), "gradient {} has shape {}, argument {}".format(
            index, np.shape(got), np.shape(x))
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=1e-8,
                                   err_msg="gradient of x{}".format(index))


def coverage_gaps(probes, table_keys, table):
    """(rules of the table with no probe, probes of rules not in the table)."""
    missing = [rule_of(key).label + "/" + str(key[1]) for key in table_keys if key not in probes]
    stale = [p.expr for key, found in probes.items() for p in found
             if key[0] not in rules.RULES or key[1] not in rules.RULES[key[0]]
             or rule_of(key).table != table]
    return missing, stale


def unit_interval(*shape):
    return lambda rng: shaped(lambda s: rng.uniform(0.1, 0.9, size=s), shape)


def seed(p, offset=0):
    """A random seed of the probe ``p``'s own, for its random directions."""
    return zlib.crc32(p.expr.encode()) + offset


def directional_difference(f, arguments, directions):
    """The central finite-difference derivative of ``f`` along ``directions``."""
    up = [x + H * d for x, d in zip(arguments, directions)]
    down = [x - H * d for x, d in zip(arguments, directions)]
    return (np.asarray(f(*up)) - np.asarray(f(*down))) / (2 * H)


def assert_dot_product(module, arguments, seed, rtol):
    """<JVP(v), u> == <v, VJP(u)>: derivo.vjp of the probe against a finite
    difference along a random direction v (nothing on that side from derivo)."""
    rng = np.random.default_rng(seed)
    out, vjp_fn = derivo.vjp(module.probe, *arguments)
    u = random_like(rng, out)
    v = [random_like(rng, x) for x in arguments]
    cotangents = vjp_fn(u)
    assert len(cotangents) == len(arguments)
    for ct, x in zip(cotangents, arguments):
        assert np.shape(ct) == np.shape(x)
    jvp = directional_difference(module.probe, arguments, v)
    assert float(np.sum(jvp * u)) == pytest.approx(
        float(sum(np.sum(d * ct) for d, ct in zip(v, cotangents))), rel=rtol, abs=1e-8)


def assert_forward_matches_differences(module, arguments, seed, rtol):
    """derivo.jvp of the probe along a random direction against finite differences."""
    rng = np.random.default_rng(seed)
    v = [random_like(rng, x) for x in arguments]
    _, tangent = derivo.jvp(module.probe, tuple(arguments), tuple(v))
    expected = directional_difference(module.probe, arguments, v)
    assert np.shape(tangent) == np.shape(expected)
    np.testing.assert_allclose(tangent, expected, rtol=rtol, atol=1e-8)


def table_tests(table, probes, prelude, rtol, label):
    """The tests every rule table gets, for its test module to take under these
    names: ``test_rule_matches_finite_differences`` (the gradient),
    ``test_rule_dot_product`` (<JVP(v), u> == <v, VJP(u)>),
    ``test_rule_forward_matches_finite_differences`` (forward mode), each run on
    every probe of every rule in ``table`` (a rule with no probe fails by name),
    and ``test_every_rule_has_a_probe`` (no rule without a probe, no probe of a
    rule outside the table).  ``probes`` maps (primitive, arity) to Probes."""
    cases = list(rule_cases(table, probes))

    def probe_module(key, p, tmp_path):
        assert p is not None, "no probe for {} in the tests of {}".format(rule_of(key).label,
                                                                        table)
        arguments = p.arguments()
        return load(tmp_path, prelude, p, arguments, label), arguments

    @pytest.mark.parametrize("key,p", cases)
    def test_rule_matches_finite_differences(key, p, tmp_path):
        module, arguments = probe_module(key, p, tmp_path)
        assert_gradient_matches_differences(module, arguments, rtol)

    @pytest.mark.parametrize("key,p", cases)
    def test_rule_dot_product(key, p, tmp_path):
        module, arguments = probe_module(key, p, tmp_path)
        assert_dot_product(module, arguments, seed(p), rtol)

    @pytest.mark.parametrize("key,p", cases)
    def test_rule_forward_matches_finite_differences(key, p, tmp_path):
        module, arguments = probe_module(key, p, tmp_path)
        assert_forward_matches_differences(module, arguments, seed(p, 1), rtol)

    def test_every_rule_has_a_probe():
        missing, stale = coverage_gaps(probes, table_rules(table), table)
        assert not missing, "rules with no probe: " + ", ".join(missing)
        assert not stale, "probes for rules not in {}: {}".format(table, ", ".join(stale))

    return (test_rule_matches_finite_differences, test_rule_dot_product,
            test_rule_forward_matches_finite_differences, test_every_rule_has_a_probe)
