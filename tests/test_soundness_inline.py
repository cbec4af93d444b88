"""Soundness of what parse, ssa and inline hand on: defaults, decorators,
conditional operands, deep expressions and the words of refusals.

Each derivative is compared with central finite differences of the function
itself (tests/checks.py), in every mode that the case reaches: the gradient,
the tangent (jvp) and the Hessian (forward over reverse).
"""

import contextlib
import functools
import importlib.util
import inspect
import math
import sys

import numpy as np
import pytest

import derivo
from checks import assert_close, numeric_grad


def second_derivative(f, x, h=1e-4):
    return (f(x + h) - 2.0 * f(x) + f(x - h)) / (h * h)


def assert_every_mode_matches(f, x):
    """value_and_grad, jvp and hessian of ``f`` at the float ``x`` against f and
    central differences of it."""
    value, gradient = derivo.value_and_grad(f)(x)
    assert_close(value, f(x))
    assert_close(gradient, numeric_grad(f, (x,)), rtol=1e-6, atol=1e-8)
    primal, tangent = derivo.jvp(f, (x,), (1.0,))
    assert_close(primal, f(x))
    assert_close(tangent, numeric_grad(f, (x,)), rtol=1e-6, atol=1e-8)
    assert_close(derivo.hessian(f)(x), second_derivative(f, x), rtol=1e-4, atol=1e-5)


# --- a default is a value, printed with the precedence it needs ---------------------

def squared_offset(p, q=-0.2):
    return q ** 2 + p


def squared_keyword_offset(p, *, q=-0.2):
    return q ** 2 + p


def power_of_negative(p, base=-1.5, exponent=2):
    return base ** exponent * p


def uses_negative_default(x):
    return squared_offset(x) * x


def uses_negative_keyword_default(x):
    return squared_keyword_offset(x) * x


def uses_negative_base(x):
    return power_of_negative(x) * x


@pytest.mark.parametrize("f", [uses_negative_default, uses_negative_keyword_default,
                               uses_negative_base])
def test_a_negative_default_keeps_its_sign_when_a_helper_is_inlined(f):
    assert_every_mode_matches(f, 1.0)
    assert_every_mode_matches(f, -0.7)
    assert derivo.value_and_grad(uses_negative_default)(1.0) == pytest.approx((1.04, 2.04))


def test_a_negative_constant_in_a_tree_prints_as_one_operand():
    from derivo import syntax as S
    power = S.binop(S.const(-0.2), S.Pow(), S.const(2))
    assert eval(S.expr_source(power)) == pytest.approx(0.04)
    method = S.attribute(S.const(-2), "real")
    assert eval(S.expr_source(method)) == -2
    assert S.expr_source(S.const(-0.0)) == "-0.0"


# --- a decorator's wrapper is what runs ---------------------------------------------

def doubled(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return 2.0 * fn(x)
    return wrapper


def scaled_by(factor):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(x, weight=1.0):
            return factor * fn(x) * weight
        return wrapper
    return decorate


def passes_everything_on(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


@doubled
def doubled_square(x):
    return x * x


@scaled_by(3.0)
def tripled_square(x):
    return x * x


@passes_everything_on
def forwarded_square(x):  # marker: forwarded_square def
    return x * x


def calls_a_decorated_helper(x):
    return doubled_square(x) + x


def test_a_functools_wraps_decorator_is_differentiated_as_the_wrapper_runs():
    assert derivo.grad(doubled_square)(1.5) == pytest.approx(6.0)
    for f in (doubled_square, tripled_square, calls_a_decorated_helper):
        assert_every_mode_matches(f, 1.5)
    assert derivo.grad(tripled_square, wrt="weight")(1.5, 2.0) == pytest.approx(6.75)


def shifted_by(offset):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(z, *args, **kwargs):
            return fn(z + offset, *args, **kwargs)
        return wrapper
    return decorate


@passes_everything_on
@shifted_by(-0.5)
def shifted_kinked_square(z):  # two wrappers, both named after it by functools.wraps
    if z > 0.0:
        return z * z
    return -z


def sums_a_twice_decorated_helper(y):
    s = 0.0
    for _ in range(2):
        s += shifted_kinked_square(y)
    return s


@passes_everything_on
def decorated_around_a_decorated_helper(x):  # three wrappers, each with its own fn
    return shifted_kinked_square(x * 0.9) * x


def test_stacked_wrappers_forwarding_star_args_are_told_apart():
    assert derivo.grad(sums_a_twice_decorated_helper)(1.5) == pytest.approx(4.0)
    for f in (shifted_kinked_square, sums_a_twice_decorated_helper,
              decorated_around_a_decorated_helper):
        assert_every_mode_matches(f, 1.5)


def test_a_wrapper_taking_star_args_is_differentiated_as_it_runs():
    assert derivo.grad(forwarded_square)(1.5) == pytest.approx(3.0)
    assert derivo.grad(forwarded_square, wrt="x")(1.5) == pytest.approx(3.0)
    assert_every_mode_matches(forwarded_square, 1.5)


# --- defaults are the values the function object holds ------------------------------

def make_scaled(c):
    def scaled(x, c=c):
        return x * c * x
    return scaled


def make_looping_scaled(c):
    def looping_scaled(x, c=c, *, shift=c):
        s = 0.0
        for _ in range(2):
            s = s + x * c + shift
        return s
    return looping_scaled


def make_weighted(w):
    def weighted(x, w=w):
        s = 0.0
        for i in range(len(w)):
            s = s + x * w[i] * x
        return s
    return weighted


c = 100.0  # a global of the same name as the factories' parameter
looping_scaled_by_two = make_looping_scaled(2.0)
weighted_by_pair = make_weighted(np.array([1.0, 2.0]))


def calls_a_looping_helper_and_reads_the_global_c(x):
    return looping_scaled_by_two(x) + c * x


def calls_a_helper_with_an_array_default(x):
    return weighted_by_pair(x) * x


def test_a_default_naming_a_closure_variable_is_its_value():
    for factor in (2.0, 3.0):  # one code object, two defaults: two derivatives
        assert derivo.grad(make_scaled(factor))(1.5) == pytest.approx(3.0 * factor)
        assert_every_mode_matches(make_scaled(factor), 1.5)
    assert_every_mode_matches(make_looping_scaled(2.0), 0.5)


def test_a_lambdas_defaults_and_keyword_only_parameters_are_its_own():
    scaled = (lambda c: lambda x, c=c, *, sign=-1.0: sign * x * c ** 2)(3.0)
    assert derivo.grad(scaled)(1.0) == pytest.approx(-9.0)
    assert_every_mode_matches(scaled, 1.0)


def test_a_helpers_default_is_not_a_global_of_the_same_name():
    # the helper's VJP took c=c from the module, where c is the global 100.0
    f = calls_a_looping_helper_and_reads_the_global_c
    assert derivo.grad(f)(1.0) == pytest.approx(104.0)
    assert_every_mode_matches(f, 1.0)


def test_an_array_default_is_the_array_the_function_holds():
    f = calls_a_helper_with_an_array_default
    assert derivo.grad(f)(1.0) == pytest.approx(9.0)
    assert_every_mode_matches(f, 1.0)
    assert derivo.grad(weighted_by_pair)(1.0) == pytest.approx(6.0)


WEIGHTS = np.array([1.0, 2.0])
square = make_scaled(1.0)


def weighs_by_its_default(x, WEIGHTS=WEIGHTS):
    return np.sum(WEIGHTS * x * x)


def applies_its_default(x, square=square):
    return square(x) * x


def test_a_default_named_as_its_parameter_is_the_value_it_names():
    # def f(x, W=W): the generated signature read W where W is the parameter
    assert derivo.grad(weighs_by_its_default)(1.5) == pytest.approx(9.0)
    assert_every_mode_matches(weighs_by_its_default, 1.5)
    assert derivo.grad(applies_its_default)(1.5) == pytest.approx(3 * 1.5 ** 2)
    assert_every_mode_matches(applies_its_default, 1.5)


def test_a_rule_whose_default_is_not_a_literal_is_refused_where_it_is_written():
    def scaled_exp(x, scale):
        return math.exp(x) * scale

    with pytest.raises(derivo.DerivoError, match="defaults must be literals"):
        derivo.defpartials(scaled_exp, lambda ans, x, scale=np.ones(1): ans, None)


# --- a parameter updated in a helper inlined into a helper ----------------------------

def shifted_product(y, *, shift=1.0):
    shift += y
    return shift * y


def shifted_product_positional(y, shift=1.0):
    shift *= y
    return shift * y


def adds_one_to_shifted_product(x):
    return shifted_product(x) + shifted_product_positional(x) + 1.0


def calls_the_helpers_helper(x):
    return adds_one_to_shifted_product(x) * x


def scaled_sum(v, *, scale=2.0):
    scale *= 1.5
    return np.sum(v * scale)


def sums_scaled(v):
    return scaled_sum(v) + 1.0


def calls_the_array_helpers_helper(a):
    return sums_scaled(a * a)


def test_a_keyword_only_parameter_updated_in_a_nested_inlined_helper():
    assert_every_mode_matches(adds_one_to_shifted_product, 1.5)
    assert_every_mode_matches(calls_the_helpers_helper, -0.5)
    a = np.array([0.5, -1.0, 2.0])
    assert np.allclose(derivo.grad(calls_the_array_helpers_helper)(a), 6.0 * a)


# --- refusals name the user's expression, never one of ssa's temporaries ---------------

def looping_cube(x):
    s = x
    for _ in range(2):
        s = s * x
    return s


def calls_a_gradient_made_on_the_spot(x):
    return derivo.grad(looping_cube)(x) * x


def test_a_gradient_made_on_the_spot_is_differentiated_through():
    assert derivo.grad(calls_a_gradient_made_on_the_spot)(1.5) == pytest.approx(9 * 1.5 ** 2)


def joins_a_list_with_a_helpers_result(x):
    y = [x, 2.0]
    return (y + [looping_cube(x)])[0]  # marker: joined list


def line_of(marker):
    with open(__file__) as source:
        return next(number for number, line in enumerate(source, 1)
                    if "# marker: " + marker in line)


@pytest.mark.parametrize("f, marker, words", [
    (joins_a_list_with_a_helpers_result, "joined list", "'y + [looping_cube(x)]'"),
])
def test_a_refusal_names_the_expression_as_the_user_wrote_it(f, marker, words):
    with pytest.raises(derivo.DerivoError) as refused:
        derivo.grad(f)(1.5)
    message = str(refused.value)
    assert "test_soundness_inline.py:{}:".format(line_of(marker)) in message
    assert words in message and "t1" not in message


# --- an operand of a conditional expression is evaluated only on its branch -----------

def scaled_by_the_largest_or_a_tenth(x, values):
    scaled = [v * x for v in values]
    return x * (max(scaled) if scaled else 0.1)


def scaled_by_a_first_exponential(x, values):
    return x * (math.exp(values[0] * x) * math.exp(values[0] * x) if values else 0.1)


def looping_log_where_defined(x, n):
    s = 0.0
    for _ in range(3):
        s = s + x * (math.log(n - 1.0) * math.log(n - 1.0) * x if n > 1.0 else 0.5)
    return s


def summed_exponential_where_given(a, values):
    return np.sum(a * (np.exp(a * values[0]) * np.exp(a * values[0]) if values else 0.1))


@pytest.mark.parametrize("f, other", [
    (scaled_by_the_largest_or_a_tenth, []), (scaled_by_the_largest_or_a_tenth, [1.0, 3.0]),
    (scaled_by_a_first_exponential, []), (scaled_by_a_first_exponential, [0.5]),
    (looping_log_where_defined, 0.5), (looping_log_where_defined, 3.0),
])
def test_a_branch_not_taken_of_a_conditional_expression_is_not_evaluated(f, other):
    assert_every_mode_matches(lambda x: f(x, other), 1.5)
    for loops in ("checkpoint", "reversible"):
        try:
            gradient = derivo.grad(f, loops=loops)(1.5, other)
        except derivo.DerivoError:
            continue  # refused for the loop strategy: never wrong
        assert_close(gradient, numeric_grad(f, (1.5, other)))


def test_an_array_operand_of_a_branch_not_taken_is_not_evaluated():
    a = np.array([0.5, -1.0])
    f = summed_exponential_where_given
    assert np.allclose(derivo.grad(f)(a, []), [0.1, 0.1])
    assert np.allclose(derivo.grad(f)(a, [0.5]), np.exp(a) * (1.0 + a))


# --- an expression as deep as Python compiles --------------------------------------------

def deep_module(tmp_path, name, depth):
    """A module whose product(x) is x * (x * (... (x * 1.0))), ``depth`` deep."""
    source = "def product(x):\n    return " + "(x * " * depth + "1.0" + ")" * depth + "\n"
    path = tmp_path / (name + ".py")
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def python_stops_at_depth_40():
    """A recursion limit that a product 40 deep exceeds in derivo's passes, as
    Python's default of 1000 stops one 140 deep (which takes a minute to transform)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 300)
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def test_an_expression_deeper_than_pythons_recursion_limit_is_differentiated(tmp_path):
    product = deep_module(tmp_path, "deep_product", 40).product
    x = 1.01
    with python_stops_at_depth_40():
        tangent = derivo.jvp(product, (x,), (1.0,))[1]
    assert tangent == pytest.approx(40 * x ** 39, rel=1e-12)


def test_an_expression_deeper_than_derivo_recurses_is_refused_at_its_line(
        tmp_path, monkeypatch):
    from derivo import syntax as S
    monkeypatch.setattr(S, "RECURSION_LIMIT", 0)
    product = deep_module(tmp_path, "deeper_product", 40).product
    with python_stops_at_depth_40(), \
            pytest.raises(derivo.DerivoError, match="nests deeper") as refused:
        derivo.jvp(product, (1.01,), (1.0,))
    assert "deeper_product.py:2:" in str(refused.value)


def test_a_deep_expression_beside_a_call_of_a_function_parameter_is_differentiated(tmp_path):
    # what a parameter calls is read by parsing the function before any
    # transformation: that parse recurses as deep as the expression too
    source = ("def scaled(z):\n    return z * 0.7\n\n\ndef product(x, helper=scaled):\n"
              "    return " + "(x * " * 40 + "1.0" + ")" * 40 + " + helper(x)\n")
    path = tmp_path / "deep_with_a_helper.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("deep_with_a_helper", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = 1.01
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 120)  # less than parsing 40 deep takes
    try:
        gradient = derivo.grad(module.product)(x)
    finally:
        sys.setrecursionlimit(limit)
    assert gradient == pytest.approx(40 * x ** 39 + 0.7, rel=1e-12)


def deep_record_module(tmp_path, name, depth):
    """A module whose product(p, x) is p.w * (p.w * (... (p.w * x))), ``depth`` deep,
    of a dataclass p holding a list (which the entry checks by reading the code)."""
    source = ("import dataclasses\n\n\n@dataclasses.dataclass\nclass Record:\n"
              "    w: float\n    v: list\n\n\ndef product(p, x):\n    return " +
              "(p.w * " * depth + "x" + ")" * depth + "\n")
    path = tmp_path / (name + ".py")
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_entry_reads_a_deep_expression_of_a_record_as_the_transformation_does(tmp_path):
    module = deep_record_module(tmp_path, "deep_record_product", 40)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 120)  # less than parsing 40 deep takes
    try:
        gradient = derivo.grad(module.product, wrt=(0, 1))(module.Record(1.01, [1.0]), 2.0)
    finally:
        sys.setrecursionlimit(limit)
    assert gradient[0].w == pytest.approx(40 * 1.01 ** 39 * 2.0, rel=1e-12)
    assert gradient[1] == pytest.approx(1.01 ** 40, rel=1e-12)
