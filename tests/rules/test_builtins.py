"""Every rule of the builtins/math table, checked through the whole pipeline.

The cases are generated from ``derivo.rules.RULES``, so a rule added to the
table is tested without anyone writing a test for it:

- derivo's gradient of ``probe(x0, ...) = PRIMITIVE(x0, ...)`` matches central
  finite differences;
- the dot-product test ``<JVP(v), u> == <v, VJP(u)>``: the JVP is built from the
  rule's partials, the VJP is derivo's generated reverse-mode code.

The rules of functions of a whole list (``sum``, ``max(xs)``, ``sorted``, ``list``) are
VJPs; the tests at the end check each against finite differences and its JVP.
"""

import importlib.util
import math
import random

import pytest

import derivo
from derivo import rules
from derivo import syntax as S

from checks import numeric_grad

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
    path.write_text("import math\n\nimport derivo.rules.builtins\n\n\ndef probe({}):\n"
                    "    return {}\n".format(
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
                math.fabs, abs, min, max, pow, float, math.exp2, math.cbrt, math.gamma,
                math.lgamma, math.fsum, math.prod, math.dist]
    missing = [f.__name__ for f in required if f not in rules.RULES]
    assert not missing
    assert set(rules.RULES[math.log]) == {1, 2}
    assert set(rules.RULES[math.hypot]) == {2, 3, 4}
    for f in (math.factorial, int, round):
        assert rules.is_nondifferentiable(f)


def test_templates_are_parsed_once():
    rule = rules.lookup(math.sin, 1)
    assert rule.templates[0].body is rules.lookup(math.sin, 1).templates[0].body
    assert S.expr_source(rule.templates[0].body) == "math.cos(x)"


# --- functions of a whole list: sum, max, min, sorted, list, tuple (VJP rules) ---
# Each contracts the function's output with weights us, so that its gradient with
# respect to xs is the VJP of the weights and its tangent the JVP contracted with them.

def whole_sum(xs, us):
    return sum(xs) * us[0]


def whole_max(xs, us):
    return max(xs) * us[0]


def whole_min(xs, us):
    return min(xs) * us[0]


def whole_sorted(xs, us):
    ys = sorted(xs)
    total = 0.0
    for i in range(len(ys)):
        total = total + us[i] * ys[i]
    return total


def whole_copies(xs, us):
    ys = list(xs)
    zs = tuple(x * x for x in ys)
    return ys[0] * us[0] + zs[1] * us[1] + zs[2] * us[2]


def whole_fsum(xs, us):
    return math.fsum(xs) * us[0]


def whole_prod(xs, us):
    return math.prod(xs) * us[0] + math.prod(xs, start=us[1]) * us[2]


def whole_dist(xs, us):
    return math.dist(xs, [0.1] * len(xs)) * us[0] + math.dist([1.0] * len(xs), xs) * us[1]


WHOLE_LIST = [whole_sum, whole_max, whole_min, whole_sorted, whole_copies, whole_fsum,
              whole_prod, whole_dist]


@pytest.mark.parametrize("f", WHOLE_LIST, ids=lambda f: f.__name__)
def test_a_whole_list_rule_matches_finite_differences(f):
    xs, us = [0.3, 1.7, -0.4, 0.9], [0.5, -1.25, 2.0, 0.75]
    gradient = derivo.grad(f)(xs, us)
    assert type(gradient) is list
    expected = [central_difference(lambda *items: f(list(items), us), xs, i)
                for i in range(len(xs))]
    assert gradient == pytest.approx(expected, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("f", WHOLE_LIST, ids=lambda f: f.__name__)
def test_a_whole_list_rule_dot_product(f):
    generator = random.Random(f.__name__)
    xs = [generator.uniform(-2, 2) for _ in range(5)]
    us = [generator.uniform(-2, 2) for _ in range(5)]
    v = [generator.uniform(-2, 2) for _ in range(5)]
    _, jvp = derivo.tangent(f)(v, xs, us)
    vjp = derivo.grad(f)(xs, us)
    assert jvp == pytest.approx(sum(a * b for a, b in zip(v, vjp)), rel=1e-12)


def test_max_and_min_of_a_list_give_a_tie_to_the_first_item_as_python_does():
    assert derivo.grad(whole_max)([1.0, 3.0, 3.0], [2.0]) == [0.0, 2.0, 0.0]
    assert derivo.grad(whole_min)([1.0, -3.0, -3.0], [2.0]) == [0.0, 2.0, 0.0]
    # sorted is stable: of two equal items, the first keeps the first place
    assert derivo.grad(whole_sorted)([2.0, 1.0, 2.0], [1.0, 10.0, 100.0]) == [10.0, 1.0, 100.0]


def product_of_items(x):
    return math.prod([x[0], x[1], x[2], x[3]], start=1.5) + math.prod([x[0], x[0], x[2]])


def test_a_hessian_through_math_prod_matches_differences_of_the_gradient():
    """The gradient of math.prod calls others_product, whose own rules make the
    second derivative: each column against central differences of the gradient."""
    import numpy as np
    x = np.array([0.7, -1.3, 2.1, 0.4])
    gradient = derivo.grad(product_of_items)
    hessian = derivo.hessian(product_of_items)(x)
    h = 1e-6
    for column, step in enumerate(np.eye(4) * h):
        expected = (gradient(x + step) - gradient(x - step)) / (2 * h)
        np.testing.assert_allclose(hessian[:, column], expected, rtol=1e-6, atol=1e-8)
    # d^2/dx0^2 of x0^2 x2 is 2 x2; d^2/dx0 dx1 of 1.5 x0 x1 x2 x3 is 1.5 x2 x3
    assert hessian[0, 0] == pytest.approx(2 * x[2])
    assert hessian[0, 1] == pytest.approx(1.5 * x[2] * x[3])


# --- x ** y where y is 0: the function is 1 for every x, its partial in x 0 ---

def power_by_operator(x, y):
    return (x / 2) ** y


def power_by_pow(x, y):
    return pow(x, y) + math.pow(x, y)


@pytest.mark.parametrize("f", [power_by_operator, power_by_pow])
@pytest.mark.parametrize("y", [0, 0.0])
def test_a_zero_exponents_partial_in_the_base_is_zero_at_a_zero_base(f, y):
    assert derivo.grad(f)(0.0, y) == 0.0
    assert derivo.jvp(f, (0.0, y), (1.0, 0.0))[1] == 0.0
    assert derivo.grad(derivo.grad(f))(0.0, y) == 0.0


@pytest.mark.parametrize("f", [power_by_operator, power_by_pow])
@pytest.mark.parametrize("y", [0.0, 2.5])
def test_the_partial_in_the_exponent_is_zero_at_a_zero_base(f, y):
    # 0 ** y is 0 for every y > 0 and 1 at y = 0: JAX's 0 there, never log(0)
    assert derivo.grad(f, wrt=1)(0.0, y) == 0.0
    assert derivo.jvp(f, (0.0, y), (0.0, 1.0))[1] == 0.0
    x = 3.0
    assert derivo.grad(f, wrt=1)(x, y) == pytest.approx(numeric_grad(f, (x, y), wrt=1))


def test_a_literal_exponents_partial_is_written_as_a_power():
    source = derivo.grad(power_by_operator).source
    assert "y * (x / 2) ** (y - (y != 0))" in source
    cubed = derivo.grad(lambda_free_cube).source
    assert "3 * x ** 2" in cubed and "!=" not in cubed


def lambda_free_cube(x):
    return x ** 3


def test_besselj_of_order_zero_has_slope_zero_at_zero():
    # J_0' = -J_1, and J_1(0) = 0; J_1'(0) = 1/2
    spec = importlib.util.spec_from_file_location(
        "bessel_example", __file__.rsplit("/tests/", 1)[0] + "/examples/bessel.py")
    bessel = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bessel)
    assert bessel.besselj_grad(0, 0.0) == 0.0
    assert bessel.besselj_grad(1, 0.0) == 0.5
