"""Stage 5, ``derivo.optimize``: exact algebra on expressions, dead-code removal."""

import textwrap

import numpy as np
import pytest

from derivo import syntax as S
from derivo.optimize import optimize, simplify


def simplified(text):
    return S.expr_source(simplify(S.parse_expr(text)))


# --- simplify -------------------------------------------------------------------------

@pytest.mark.parametrize("before, after", [
    ("g * 1", "g"),
    ("1 * g", "g"),
    ("g * 1.0", "g"),
    ("g * (1 / y)", "g / y"),
    ("x ** 1", "x"),
    ("x / 1", "x"),
    ("-(-a)", "a"),
    ("-(-(-a))", "-a"),
    ("2 - 1", "1"),
    ("1 - 2", "-1"),
    ("2 * 3 * x", "6 * x"),
    ("g * (2 - 1)", "g"),
    ("g * -1", "-g"),
    ("-1 * g", "-g"),
    ("g * -y", "-(g * y)"),
    ("-g * y", "-(g * y)"),
    ("x + -(g * y)", "x - g * y"),
    ("1.0 / 2.0 * g", "0.5 * g"),
    ("g / (4 / 2)", "g / 2.0"),
    ("g * (1 / 3)", "g / 3"),
    ("1 / 3", "1 / 3"),
    ("dx * x + x * dx", "dx * x * 2"),
    ("a * b[i] + b[i] * a", "a * b[i] * 2"),
    ("1 * (x > 1.0)", "x > 1.0"),
])
def test_simplify_rule(before, after):
    assert simplified(before) == after


@pytest.mark.parametrize("expression", ["0 * x", "x * 0", "0.0 * x", "-0.0 * x"])
def test_multiplication_by_zero_is_not_folded(expression):
    # 0 * inf is nan and 0 * nan is nan: the generated code must propagate both.
    assert simplified(expression) == expression


@pytest.mark.parametrize("expression", [
    # 1.0 times a bool (or a bool array) is a float: not folded
    "1.0 * (x > 1.0)", "any(items) * 1.0", "(not x) * 1.0"])
def test_one_point_zero_times_a_bool_is_not_folded(expression):
    assert simplified(expression) == expression


@pytest.mark.parametrize("expression", ["x + 0", "x - 0", "x ** 2", "2 ** 3", "x * 2 * 3",
                                        "1 / 0", "0.1 * a * b + 0.1 * b * a",
                                        "f(x) * y + y * f(x)"])
def test_other_expressions_are_left_alone(expression):
    assert simplified(expression) == expression


def test_a_doubled_product_is_exactly_the_sum_of_the_commuted_ones():
    doubled = simplified("dx * x + x * dx")
    for dx, x in [(0.1, 0.7), (1e308, 3.0), (1e-320, 0.3), (float("inf"), 0.0), (-2.5, 1e-300)]:
        assert str(eval(doubled)) == str(dx * x + x * dx)


def test_folded_constants_evaluate_to_the_same_value():
    for text in ("0.1 + 0.2", "1e308 * 10", "-1e308 * 10", "3 - 5", "1 / 3", "0.1 / 3.0"):
        assert eval(simplified(text)) == eval(text)


def test_simplify_applies_inside_calls():
    assert simplified("math.cos(x * 1) * 1") == "math.cos(x)"


# --- optimize -------------------------------------------------------------------------

def function(source):
    return S.parse_function(textwrap.dedent(source))


def function_of(params, body):
    """The source of ``def f(params):`` with ``body`` (unindented lines) under it."""
    return "def f({}):\n{}\n".format(params, textwrap.indent(body, "    "))


def optimized(source, mark=None, shape_readers=(), spreaders=(), in_place=(), primals=()):
    """Statement lines of ``source`` after optimize; ``mark`` (a line) gets ``effects``."""
    tree = function(source)
    if mark is not None:
        for node in S.walk(tree):
            if isinstance(node, S.Assign) and S.to_source(node).strip() == mark:
                node.effects = True
    return [line.strip() for line in S.to_source(
        optimize(tree, shape_readers, spreaders, in_place,
                 primals=frozenset(primals))).splitlines()[1:]]


def test_unread_pure_assignment_is_removed():
    out = optimized("""
        def f(x):
            a = x * 2
            b = x * 3
            return b
    """)
    assert out == ["return x * 3"]


def test_chain_of_unread_assignments_is_removed():
    out = optimized("""
        def f(x):
            a = x * 2
            c = a + 1
            return x
    """)
    assert out == ["return x"]


def test_assignment_marked_with_effects_is_kept():
    out = optimized("""
        def f(x):
            a = pop()
            b = x * 3
            return b
    """, mark="a = pop()")
    assert out == ["a = pop()", "return x * 3"]


def test_expression_statements_are_kept():
    out = optimized("""
        def f(x):
            push(x)
            return x
    """)
    assert out == ["push(x)", "return x"]


def test_loop_carried_value_is_kept():
    out = optimized("""
        def f(x, r):
            a = 0.0
            b = 0.0
            for i in r:
                b = a
                a = x * i
                c = a * 2
            return b
    """)
    assert "a = x * i" in out and "a = 0.0" in out
    assert "c = a * 2" not in out


def test_while_loop_test_keeps_its_inputs_alive():
    out = optimized("""
        def f(x):
            y = x
            while y < 10:
                y = y * 2
                z = y + 1
            return x
    """)
    assert out == ["y = x", "while y < 10:", "y = y * 2", "return x"]


def test_value_read_only_after_break_is_kept():
    out = optimized("""
        def f(x, r):
            y = 0.0
            for i in r:
                y = x * i
                if i > 3:
                    break
                y = 0.0
            return y
    """)
    assert "y = x * i" in out


def test_value_read_only_after_continue_is_kept():
    out = optimized("""
        def f(x, r):
            acc = 0.0
            w = 0.0
            for i in r:
                acc = acc + w
                w = x * i
                if i > 3:
                    continue
                w = 0.0
            return acc
    """)
    assert "w = x * i" in out


def test_dead_code_inside_a_loop_with_break_is_removed():
    out = optimized("""
        def f(x, r):
            for i in r:
                dead = x * i
                if i > 3:
                    break
            return x
    """)
    assert "dead = x * i" not in out
    assert "break" in out


def test_branches_are_pruned_separately():
    out = optimized("""
        def f(x, c):
            if c:
                a = x * 2
                b = x * 3
            else:
                a = x * 4
                b = x * 5
            return a
    """)
    assert "a = x * 2" in out and "a = x * 4" in out
    assert "b = x * 3" not in out and "b = x * 5" not in out


def test_optimize_returns_the_same_function_object():
    tree = function("""
        def f(x):
            return x
    """)
    assert optimize(tree) is tree


def test_a_copy_between_names_assigned_once_is_dropped():
    out = optimized("""
        def f(pair):
            first, second = pair
            bx = second
            return bx * first
    """)
    assert out == ["first, bx = pair", "return bx * first"]


def test_a_parameter_is_never_renamed():
    out = optimized("""
        def f(x):
            y = x
            return y * 2
    """)
    assert out == ["y = x", "return y * 2"]


def test_a_copy_of_a_name_assigned_twice_stays():
    out = optimized("""
        def f(x, n):
            s = x * 2
            for i in range(n):
                s = s * x
            t = s
            return t
    """)
    assert "t = s" in out


def test_a_first_contribution_and_the_next_merge_into_one_sum():
    out = optimized("""
        def f(x1, x2):
            bx1 = 1.0 / x1
            bx1 += x2
            bx2 = x1
            bx2 += -math.cos(x2)
            bx2 -= x1 * x2
            return bx1, bx2
    """)
    assert out == ["return 1.0 / x1 + x2, x1 - math.cos(x2) - x1 * x2"]


def test_array_code_accumulation_merges_too():
    out = optimized("""
        def f(x, y):
            bx = np.exp(x)
            bx = bx + y * 2.0
            return bx
    """)
    assert out == ["return np.exp(x) + y * 2.0"]


def test_contributions_apart_or_reading_the_adjoint_stay_separate():
    out = optimized("""
        def f(x, y):
            bx = x * 2
            by = y
            bx += y
            by += by * x
            return bx, by
    """)
    assert out == ["bx = x * 2", "by = y", "bx += y", "by += by * x", "return bx, by"]


def test_merged_contributions_compute_the_same_value():
    namespace = {}
    exec(S.to_source(optimize(function("""
        def f(x, y):
            b = x / 3.0
            b += y * 0.1
            b -= x * y
            return b
    """))), namespace)
    x, y = 0.7, 1.9
    expected = x / 3.0
    expected += y * 0.1
    expected -= x * y
    assert namespace["f"](x, y) == expected


def test_a_recomputed_expression_reuses_the_first_name():
    out = optimized("""
        def f(x, a):
            bt1 = 2 * (x * x - 1.0)
            g = bt1 * a
            bt2 = 2 * (x * x - 1.0)
            return g + bt2 * x
    """)
    assert out == ["bt1 = 2 * (x * x - 1.0)", "g = bt1 * a", "return g + bt1 * x"]


def test_a_recomputation_after_a_change_or_with_a_call_stays():
    out = optimized("""
        def f(x, n):
            a = x * 2
            b = math.cos(x) + a
            c = math.cos(x) + a
            for i in range(n):
                x = x * a
            d = x * 2
            return a + b + c + d
    """)
    assert "c = math.cos(x) + a" in out and "d = x * 2" in out


def test_a_recomputed_list_or_a_changed_array_keeps_its_own_object():
    out = optimized("""
        def f(x):
            parts = []
            stack = []
            a = x * 2.0
            b = x * 2.0
            b[0] = 1.0
            stack.append(a)
            return parts, stack, a, b
    """)
    assert "stack = []" in out and "b = x * 2.0" in out


def test_a_temporary_read_once_by_the_next_statement_folds_into_it():
    out = optimized("""
        def f(X, W, b):
            t2 = X @ W
            t1 = t2 + b
            t4 = np.exp(t1)
            t5 = -t4
            s = t5 * 2.0
            return np.log1p(s) + t2
    """)
    assert out == ["t2 = X @ W", "t4 = np.exp(t2 + b)", "s = -t4 * 2.0", "return np.log1p(s) + t2"]


@pytest.mark.parametrize("source", [
    # read twice; read past its first operand (g(x) would run first); a user's name;
    # a call moved; a next statement that is not next
    "t1 = a + b\nc = np.exp(t1)\nreturn c + t1",
    "t1 = a + b\nc = g(x) + t1\nreturn c",
    "z = a + b\nc = np.exp(z)\nreturn c * 2",
    "t1 = h(a)\nc = np.exp(t1)\nreturn c * 2",
    "t1 = a + b\nd = a * 2\nc = np.exp(t1)\nreturn c + d",
])
def test_other_temporaries_stay(source):
    assert optimized(function_of("a, b, x", source)) == source.splitlines()


def shapes_read(source):
    return optimized(source, shape_readers={"expand", "unbroadcast"})


def test_a_shape_is_read_from_the_name_a_temporary_has_it_from():
    out = shapes_read("""
        def f(r, g):
            t1 = r * r
            t2 = -t1
            t3 = t2 / 2.0
            return expand(g, t3, None, False), unbroadcast(g, t1)
    """)
    assert out == ["return expand(g, r, None, False), unbroadcast(g, r)"]


@pytest.mark.parametrize("source", [
    # a sum or a repetition can change a list's length; r changes; r given to a call;
    # a call that is not a shape reader
    "t1 = r + r\nreturn expand(g, t1, None, False)",
    "t1 = r * 2\nreturn expand(g, t1, None, False)",
    "t1 = r * r\nr = g\nreturn expand(g, t1, None, False), r",
    "t1 = r * r\nh(r)\nreturn expand(g, t1, None, False)",
    "t1 = r * r\nreturn zeros_for(g, t1)",
])
def test_other_shapes_are_read_where_they_were(source):
    assert shapes_read(function_of("r, g", source)) == source.splitlines()


def spread(source):
    return optimized(source, shape_readers={"expand"}, spreaders={"expand"})


@pytest.mark.parametrize("product, multiplied", [
    ("bt7 * r * 2", "g * r * 2"), ("2.0 * (r * bt7)", "2.0 * (r * g)")])
def test_the_adjoint_of_a_sum_multiplies_its_operand_without_an_array(product, multiplied):
    # the adjoint of np.sum(r * r): an array of r's shape full of g, times r
    source = "bt7 = expand(g, r, None, False)\nbr = {}\nreturn br".format(product)
    assert spread(function_of("r, g", source)) == ["return " + multiplied]


@pytest.mark.parametrize("source", [
    # an axis (g is an array), a factor of another shape, g or r rebound, bt7 read twice
    "bt7 = expand(g, r, 0, False)\nreturn bt7 * r",
    "bt7 = expand(g, r, None, True)\nreturn bt7 * r",
    "bt7 = expand(g, r, None, False)\nreturn bt7 * s",
    "bt7 = expand(g, r, None, False)\ng = s\nreturn bt7 * r, g",
    "bt7 = expand(g, r, None, False)\nreturn bt7 * r, bt7",
])
def test_other_spreads_stay(source):
    assert spread(function_of("r, g, s", source)) == source.splitlines()


@pytest.mark.parametrize("computed", ["bvalue", "bvalue * s"])
def test_a_value_read_by_an_item_store_is_stored_where_it_is_computed(computed):
    # a copy (bc = bvalue) or an expression: moved into the store, above the update
    body = "for i in range(n):\n    bc = {}\n    bvalue = bvalue * x\n    bX[i] += bc\n" \
           "return bX".format(computed)
    out = optimized(function_of("bvalue, s, x, n, bX", body))
    assert out == ["for i in range(n):", "bX[i] += " + computed, "bvalue = bvalue * x",
                   "return bX"]


def test_a_value_computed_from_the_container_keeps_its_store_in_place():
    out = optimized("""
        def f(bs, c, bX):
            bt1 = bX[1] * bs
            bs = bs * c
            bX[0] += bt1
            return bX, bs
    """)
    assert "bt1 = bX[1] * bs" in out


@pytest.mark.parametrize("between", [
    "i = i + 1",              # the position changes
    "t = bX[0] * x",          # the container is read
    "bc2 = bc * 2",           # the copy has another reader
    "bX = [bvalue]",          # the container changes
    "if x:\n                    x = 1",  # not a plain assignment
])
def test_a_copy_stays_when_the_store_would_see_or_change_something_else(between):
    source = """
        def f(bvalue, x, n, bX):
            for i in range(n):
                bc = bvalue
                bvalue = bvalue * x
                {}
                bX[i] += bc
            return bX, bc2
    """.format(between)
    assert "bc = bvalue" in optimized(source)


def test_a_copy_stays_when_another_name_may_hold_the_container():
    out = optimized("""
        def f(bvalue, x, bX):
            alias = bX
            bc = bvalue
            bvalue = g(alias)
            bX[0] += bc
            return bX, bvalue
    """)
    assert "bc = bvalue" in out


def test_short_results_are_returned_as_expressions():
    out = optimized("""
        def f(x1, x2):
            bx1 = 1.0 / x1 + x2
            bx2 = x1 - math.cos(x2)
            return bx1, bx2
    """)
    assert out == ["return 1.0 / x1 + x2, x1 - math.cos(x2)"]


@pytest.mark.parametrize("source", [
    # a helper's result, a copy, names assigned in the other order, a name read
    # elsewhere, a line too long
    "bw = unbroadcast(g, w)\nbb = g * 2\nreturn bw, bb",
    "bx0 = bx\nbb = g * 2\nreturn bx0, bb",
    "bb = g * 2\nbw = g * 3\nreturn bw, bb",
    "bw = g * 2\nbb = bw * 3\nreturn bw, bb",
    "bw = g * 2 + g * g * 3 + g * g * g * 4\nbb = g * 3 + g * g * 4 + g * g * g * g * 5\n"
    "return bw, bb",
])
def test_other_results_keep_their_names(source):
    assert optimized(function_of("a, g, w, bx", source)) == source.splitlines()


def test_a_result_assigned_with_effects_keeps_its_name():
    out = optimized("""
        def f(x):
            b = pop()
            return b
    """, mark="b = pop()")
    assert out == ["b = pop()", "return b"]


def test_a_copy_in_a_loop_is_read_through():
    out = optimized("""
        def f(g, xs):
            s = 0.0
            for i in range(len(xs)):
                bt4 = g
                bt2 = bt4
                s += bt2 * xs[i]
            return s
    """)
    assert out == ["s = 0.0", "for i in range(len(xs)):", "s += g * xs[i]", "return s"]


@pytest.mark.parametrize("loop", [
    # the copied name changes before the copy is read; the copy is read on the next trip,
    # or after the loop
    "for i in range(n):\n    b = a\n    a = a * 2\n    s += b",
    "for i in range(n):\n    s += b * 1.5\n    b = a",
    "for i in range(n):\n    b = a\ns += b",
])
def test_other_copies_in_a_loop_stay(loop):
    assert "b = a" in optimized(function_of("a, n", "s = 0.0\n" + loop + "\nreturn s, a"))


# --- finishing a product in place (array code) ------------------------------------

def in_place(body, names=("r",)):
    return optimized(function_of("g, e, h, A", body + "\nreturn r, g"), in_place=names)[:-1]


@pytest.mark.parametrize("value, first, update", [
    ("g / (1 + e) * e", "r = g / (1 + e)", "r *= e"),   # the softplus adjoint of the MLP
    ("-e * h + e", "r = -e * h", "r += e"),
    ("(g - e ** 2) - e", "r = g - e ** 2", "r -= e"),
])
def test_a_product_is_finished_in_the_array_its_first_factors_made(value, first, update):
    assert in_place("r = " + value) == [first, update]


@pytest.mark.parametrize("value", [
    "g * e",             # g is not new
    "g * h * e",         # e took no part in g * h: g * h may be smaller, or of ints
    "A @ e * e",         # a matrix product makes another shape
    "g * np.exp(e) * e", # e reaches the product only through a call
    "g * e / e",         # /= cannot write floats into an array of ints
    "g * e * 2.0",       # nor can *= 2.0
])
def test_other_products_are_left_alone(value):
    assert in_place("r = " + value) == ["r = " + value]


def test_only_the_names_given_are_finished_in_place():
    # the user's own statements (and adjoints of numbers) keep their form
    assert in_place("r = g * e * e", names=()) == ["r = g * e * e"]
    assert in_place("r = g * e * e", names=("s",)) == ["r = g * e * e"]


def test_a_name_updated_by_itself_is_left_alone():
    # r *= r after r = r * 2 would square the new r, not multiply by the old one
    out = optimized(function_of("r", "r = r * 2 * r\nreturn r"), in_place={"r"})
    assert out == ["r = r * 2 * r", "return r"]


_DTYPES = [np.bool_, np.int8, np.int64, np.float32, np.float64, np.complex128]


@pytest.mark.parametrize("op", ["*", "+", "-"])
@pytest.mark.parametrize("left", ["g / (1 + e)", "g * e", "-e", "e ** 2 + g", "g - e"])
def test_finishing_in_place_gives_the_same_array(left, op):
    # every dtype pair, a factor that broadcasts against the first factors, and a Python
    # number for the factor: the same numbers, dtype and shape as the product, or the same error
    update = "r {}= e".format(op)
    whole = "r = ({}) {} e".format(left, op)
    rng = np.random.default_rng(0)
    factors = [np.asarray(1 + rng.integers(0, 3, size=(2, 3))).astype(dtype) for dtype in _DTYPES]
    factors += [np.asarray(2.5 + rng.random(3)), 1.5, 3]
    for g in factors:
        for e in factors:
            def outcome(code):
                scope = {"g": g, "e": e, "np": np}
                try:
                    with np.errstate(all="ignore"):
                        exec(code, scope)
                except Exception as err:  # noqa: BLE001  (both ways must fail alike)
                    return type(err)
                return scope["r"]
            expected = outcome(whole)
            got = outcome("r = {}\n{}".format(left, update))
            if isinstance(expected, type):
                assert got is expected
                continue
            assert np.shape(got) == np.shape(expected) and \
                np.result_type(got) == np.result_type(expected)
            np.testing.assert_array_equal(got, expected)


def test_a_chain_of_copies_folds_into_its_first_name_at_once():
    out = optimized("""
        def f(p):
            t = p[0] * 2
            u = t
            slope = u
            return slope + 1
    """)
    assert out == ["slope = p[0] * 2", "return slope + 1"]


def test_an_adjoint_copied_from_a_primal_value_reads_it_by_its_name():
    # ba = b of the adjoint of a * b: b keeps its name, ba goes (a returned
    # gradient keeps its own: the names say which gradient is which)
    source = """
        def f(t1):
            b = t1[1]
            ba = b
            bt = ba * 3.0
            return bt
    """
    kept = optimized(source, primals={"t1", "b"})
    assert "b = t1[1]" in kept and not any("ba" in line for line in kept)
    assert "ba = t1[1]" in optimized(source)
