"""Every rule of the builtins/math table, checked through the whole pipeline.

The cases are generated from ``derivo.rules.RULES``, so a rule added to the
table is tested without anyone writing a test for it:

- derivo's gradient of ``probe(x0, ...) = PRIMITIVE(x0, ...)`` matches central
  finite differences;
- the dot-product test ``<JVP(v), u> == <v, VJP(u)>``: the JVP is built from the
  rule's partials, the VJP is derivo's generated reverse-mode code.
"""

import importlib.util
import math
import random

import pytest

import derivo
from derivo import rules
from derivo import syntax as S

OPERATORS = {S.Add: "+", S.Sub: "-", S.Mult: "*", S.Div: "/", S.Pow: "**", S.Mod: "%"}
UNARY = {S.USub: "-", S.UAdd: "+"}

# Points inside every primitive's domain, tried in order; the first that
# evaluates is used (acosh needs x > 1, asin needs |x| < 1, ...).
POINTS = [(0.73, 0.31), (1.73, 1.31)]

CASES = sorted(((primitive, arity) for primitive, by_arity in rules.RULES.items()
                for arity, rule in by_arity.items()
                if rule.table == "derivo.rules.builtins" and rule.style == "partial"),
               key=lambda case: (rules.RULES[case[0]][case[1]].label,
                                                          case[1]))


def case_id(case):
    return "{}/{}".format(rules.RULES[case[0]][case[1]].label, case[1])


def expression(primitive, arity):
    names = ["x{}".format(i) for i in range(arity)]
    if primitive in OPERATORS:
        return "{} {} {}".format(names[0], OPERATORS[primitive], names[1])
    if primitive in UNARY:
        return "{}{}".format(UNARY[primitive], names[0])
    return "{}({})".format(rules.RULES[primitive][arity].label, ", ".join(names))


def probe(tmp_path, primitive, arity):
    """A real module-level function whose body is one call of the primitive."""
    params = ", ".join("x{}".format(i) for i in range(arity))
    path = tmp_path / "probe.py"
    path.write_text("import math\n\n\ndef probe({}):\n    return {}\n".format(
        params, expression(primitive, arity)))
    spec = importlib.util.spec_from_file_location("probe_{}".format(id(path)), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.probe


def point(rule):
    for candidate in POINTS:
        args = [candidate[i % 2] + 0.1 * (i // 2) for i in range(rule.arity)]
        try:
            rule(*args)
        except (ValueError, ZeroDivisionError):
            continue
        return args
    raise AssertionError("no sample point in the domain of " + rule.label)


def central_difference(f, args, index, h=1e-6):
    up, down = list(args), list(args)
    up[index] += h
    down[index] -= h
    return (f(*up) - f(*down)) / (2 * h)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule_matches_finite_differences(case, tmp_path):
    rule = rules.RULES[case[0]][case[1]]
    args = point(rule)
    differentiable = tuple(i for i, p in enumerate(rule.templates) if p is not None)
    gradient = derivo.grad(probe(tmp_path, *case), wrt=differentiable)(*args)
    for index, value in zip(differentiable, gradient):
        expected = central_difference(rule, args, index)
        assert value == pytest.approx(expected, rel=1e-6, abs=1e-8), (rule.label, index)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule_dot_product(case, tmp_path):
    rule = rules.RULES[case[0]][case[1]]
    args = point(rule)
    differentiable = [i for i, p in enumerate(rule.templates) if p is not None]
    generator = random.Random(case_id(case))
    u = generator.uniform(-2, 2)
    v = [generator.uniform(-2, 2) for _ in args]
    partials = rule.partial_values(*args)
    jvp = sum(partials[i] * v[i] for i in differentiable)
    _, vjp_fn = derivo.vjp(probe(tmp_path, *case), *[float(a) for a in args])
    vjp = vjp_fn(u)
    assert jvp * u == pytest.approx(sum(v[i] * vjp[i] for i in differentiable), rel=1e-12)


def test_every_nondifferentiable_function_cuts_the_derivative(tmp_path):
    path = tmp_path / "cut.py"
    path.write_text("import math\n\n\ndef cut(x):\n    return x * math.floor(x) + round(x)\n")
    spec = importlib.util.spec_from_file_location("cut_probe", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert derivo.grad(module.cut)(2.5) == 2.0


def test_table_covers_the_issue_list():
    required = [math.sin, math.cos, math.tan, math.asin, math.acos, math.atan, math.atan2,
                math.sinh, math.cosh, math.tanh, math.exp, math.expm1, math.log, math.log1p,
                math.log2, math.log10, math.sqrt, math.pow, math.hypot, math.erf, math.erfc,
                math.fabs, abs, min, max, pow, float]
    missing = [f.__name__ for f in required if f not in rules.RULES]
    assert not missing
    assert set(rules.RULES[math.log]) == {1, 2}
    for f in (math.factorial, int, round):
        assert rules.is_nondifferentiable(f)


def test_templates_are_parsed_once():
    rule = rules.lookup(math.sin, 1)
    assert rule.templates[0].body is rules.lookup(math.sin, 1).templates[0].body
    assert S.expr_source(rule.templates[0].body) == "math.cos(x)"
