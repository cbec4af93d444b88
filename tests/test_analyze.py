"""Stage 3, ``derivo.analyze`` and its phases: activity, plans, what the reverse sweep saves.

Statements are identified by their source text in the statement form
(``derivo.syntax.to_source``), so each test reads like the code it checks.
"""

import math

import pytest

from derivo.syntax import expr_source

from derivo import syntax as S
from derivo.analyze import analyze
from derivo.errors import NoDerivativeRule
from derivo.parse import parse
from derivo.ssa import normalize


def run(func, wrt):
    return analyze(normalize(parse(func)), wrt)


def text(stmt):
    """First line of a statement's source: ``x = a * b`` or ``for i in range(n):``."""
    return S.to_source(stmt).splitlines()[0].strip()


def by_id(analysis):
    return {id(n): n for n in S.walk(analysis.normalized.tree)}


def pushes(analysis):
    """{statement text: names it pushes}."""
    statements = by_id(analysis)
    return {text(statements[key]): list(names) for key, names in analysis.saving.pushes.items()}


def texts(analysis, ids):
    statements = by_id(analysis)
    return {text(statements[key]) for key in ids}


def statement(analysis, source):
    """The one statement of the statement form whose first line is ``source``."""
    found = [n for n in S.walk(analysis.normalized.tree)
             if isinstance(n, S.gast.stmt) and text(n) == source]
    assert len(found) == 1, (source, found)
    return found[0]


# --- activity ------------------------------------------------------------------------

def activity(x, y):
    unused = x * 2          # depends on x, never reaches the result
    other = y * 3           # reaches the result, independent of x
    truncated = int(x)
    rounded = round(x)
    compared = x > 1
    return other + truncated + rounded + compared + x


def test_value_not_reaching_the_result_is_inactive():
    assert "unused" not in run(activity, ["x"]).active


def test_value_independent_of_wrt_is_inactive():
    assert "other" not in run(activity, ["x"]).active


def test_same_value_is_active_when_its_input_is_differentiated():
    assert "other" in run(activity, ["x", "y"]).active


@pytest.mark.parametrize("name", ["truncated", "rounded", "compared"])
def test_int_round_and_comparisons_cut_activity(name):
    assert name not in run(activity, ["x"]).active


def test_wrt_and_result_are_active():
    analysis = run(activity, ["x"])
    assert {"x", *analysis.normalized.results} <= analysis.active
    assert analysis.active == {"x", *analysis.normalized.results}


def straight(x, y):
    a = x * y
    b = math.sin(a)
    c = a * b
    return c


def test_only_active_assignments_get_plans():
    analysis = run(activity, ["x"])
    planned = texts(analysis, analysis.plans)
    assert planned == {"result = other + truncated + rounded + compared + x"}


def test_plan_records_the_values_the_adjoint_reads():
    analysis = run(straight, ["x"])
    plan = analysis.plans[id(statement(analysis, "b = math.sin(a)"))]
    assert plan.reads == {"a"}
    plan = analysis.plans[id(statement(analysis, "c = a * b"))]
    assert plan.reads == {"a", "b"}


# --- pushes ---------------------------------------------------------------------------

def besselj(v, z, atol=1e-8):
    k = 0
    s = (z / 2) ** v / math.factorial(v)
    out = s
    while abs(s) > atol:
        k += 1
        s *= (-1) / k / (k + v) * (z / 2) ** 2
        out += s
    return out


def test_bessel_pushes_only_s():
    analysis = run(besselj, ["z"])
    assert [n for names in analysis.saving.pushes.values() for n in names] == ["s"]
    assert list(pushes(analysis).values()) == [["s"]]
    (pushed,) = pushes(analysis)
    assert pushed.startswith("s = s * ")


def test_bessel_undoes_the_counter_step_instead_of_pushing_it():
    analysis = run(besselj, ["z"])
    assert "k = k + 1" in texts(analysis, analysis.saving.undone)
    assert "k = k + 1" not in pushes(analysis)
    name, inverse = analysis.saving.inverses[id(statement(analysis, "k = k + 1"))]
    assert name == "k" and expr_source(inverse) == "k - 1"


def test_running_sum_is_never_pushed():
    analysis = run(besselj, ["z"])
    assert "out = out + s" not in pushes(analysis)
    assert "out" in analysis.active


def test_bessel_reverses_its_loop_and_initialises_nothing():
    analysis = run(besselj, ["z"])
    assert texts(analysis, analysis.saving.reversed) == {"while abs(s) > atol:"}
    assert analysis.saving.init_none == set()


def loop_temporary(x, n):
    s = x
    for i in range(n):
        t = s * s
        s = t * x + math.sin(t)
    return s


def test_loop_local_temporary_read_by_the_adjoint_is_pushed():
    analysis = run(loop_temporary, ["x"])
    assert pushes(analysis)["t = s * s"] == ["t"]
    assert pushes(analysis)["s = t * x + math.sin(t)"] == ["s"]


def test_temporary_not_assigned_before_the_loop_is_initialised_to_none():
    assert run(loop_temporary, ["x"]).saving.init_none == {"t"}


def loop_temporary_assigned_before(x, n):
    s = x
    t = x
    for i in range(n):
        t = s * s
        s = t * x + math.sin(t)
    return s + t


def test_temporary_assigned_before_the_loop_needs_no_initialisation():
    analysis = run(loop_temporary_assigned_before, ["x"])
    assert pushes(analysis)["t = s * s"] == ["t"]
    assert analysis.saving.init_none == set()


def test_straight_line_function_pushes_nothing():
    analysis = run(straight, ["x", "y"])
    assert analysis.saving.pushes == {}
    assert analysis.saving.reversed == set()
    assert analysis.saving.init_none == set()


def linear_in_loop(x, n):
    s = x
    for i in range(n):
        s = s * 0.5 + x
    return s


def test_overwrite_the_adjoint_does_not_read_is_not_pushed():
    analysis = run(linear_in_loop, ["x"])
    assert analysis.saving.pushes == {}
    assert texts(analysis, analysis.saving.reversed) == {"for i in range(n):"}


def branch_in_loop(x, n):
    for i in range(n):
        if x > 1:
            x = x * 0.5
        else:
            x = x * x
    return x


def test_branch_with_active_arm_inside_a_loop_is_reversed():
    analysis = run(branch_in_loop, ["x"])
    (branch,) = [n for n in S.walk(analysis.normalized.tree) if isinstance(n, S.If)]
    assert id(branch) in analysis.saving.reversed
    assert "for i in range(n):" in texts(analysis, analysis.saving.reversed)


def test_branch_condition_inside_a_loop_is_pushed():
    analysis = run(branch_in_loop, ["x"])
    (branch,) = [n for n in S.walk(analysis.normalized.tree) if isinstance(n, S.If)]
    cond = branch.test.id
    assert pushes(analysis)["{} = x > 1".format(cond)] == [cond]
    assert pushes(analysis)["x = x * x"] == ["x"]
    assert "x = x * 0.5" not in pushes(analysis)


def parameter_counter(x, k):
    while k < 10:
        k += 1
        x = x * k
    return x


def local_counter(x):
    k = 0
    while k < 10:
        k += 1
        x = x * k
    return x


def test_counter_that_is_a_parameter_is_not_an_integer_step():
    analysis = run(parameter_counter, ["x"])
    step = statement(analysis, "k = k + 1")
    assert id(step) not in analysis.saving.inverses
    assert id(step) not in analysis.saving.undone
    assert analysis.saving.pushes[id(step)] == ["k"]


def test_local_integer_counter_is_undone():
    analysis = run(local_counter, ["x"])
    step = statement(analysis, "k = k + 1")
    assert id(step) in analysis.saving.undone
    assert id(step) not in analysis.saving.pushes


# --- refusals -------------------------------------------------------------------------

def active_gamma(x):
    return math.remainder(x, 2.0) * 2  # marker: a function without a rule


def int_gamma(x, n):
    return math.gamma(n) * x


def test_active_value_into_a_function_without_a_rule_is_refused():
    with pytest.raises(NoDerivativeRule) as info:
        run(active_gamma, ["x"])
    error = info.value
    assert "math.remainder" in str(error)
    assert "math.remainder" in error.construct
    assert error.lineno == active_gamma.__code__.co_firstlineno + 1
    assert error.col == len("    return ")


def test_inactive_value_into_a_function_without_a_rule_is_fine():
    analysis = run(int_gamma, ["x"])
    assert "n" not in analysis.active
    assert "x" in analysis.active
