"""Stage 1, ``derivo.parse``: a function object -> its tree and the names it sees.

The functions under test live in this file so their line numbers are known:
``line_of(marker)`` finds the line of this file holding a marker comment.
"""

import functools
import math
import os

import pytest

from derivo import syntax as S
from derivo.errors import SourceUnavailable, UnsupportedSyntax
from derivo.parse import MISSING, Parsed, parse

with open(__file__) as _stream:
    _THIS_FILE_LINES = _stream.read().splitlines()


def line_of(marker):
    """The 1-based line of this file holding ``marker`` (exactly one must)."""
    hits = [i + 1 for i, text in enumerate(_THIS_FILE_LINES)
            if marker in text and "line_of(" not in text]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def module_level(x):
    y = x * 2  # marker: module_level body
    return y


def passthrough(func):
    return func


def wrapping(func):
    @functools.wraps(func)
    def wrapper(*args):
        return func(*args)
    return wrapper


@wrapping
@passthrough
def decorated(x):  # marker: decorated def
    return x + 1


SHADOWED = "global value"
G_ONLY = "only a global"


def make_closure():
    SHADOWED = "closure value"

    def inner(x):
        return x, SHADOWED, G_ONLY, abs
    return inner


def calls(x):
    g = math.cos
    return math.sin(x) + g(x) + module_level(x)


square = lambda x: x * x  # noqa: E731  marker: square lambda
twins = lambda a: a + 1, lambda a: a * 2  # noqa: E731


# --- line and column numbers ------------------------------------------------------

def test_tree_line_numbers_are_the_files_line_numbers():
    parsed = parse(module_level)
    assert parsed.tree.body[0].lineno == line_of("marker: module_level body")
    assert parsed.tree.lineno == line_of("marker: module_level body") - 1


def test_parsed_records_file_and_first_line():
    parsed = parse(module_level)
    assert os.path.samefile(parsed.filename, __file__)
    assert parsed.first_line == line_of("marker: module_level body") - 1
    assert parsed.lines[1].strip().startswith("y = x * 2")


def test_nested_function_keeps_its_column_in_the_file():
    def nested(x):
        z = x - 1  # marker: nested body
        return z

    parsed = parse(nested)
    first = parsed.tree.body[0]
    assert first.lineno == line_of("marker: nested body")
    assert first.col_offset == 8
    assert parsed.tree.col_offset == 4
    # where it ends too (what comes after it on its line is after it)
    assert first.end_lineno == first.lineno
    assert first.end_col_offset == 8 + len("z = x - 1")


# --- decorators -------------------------------------------------------------------

def test_decorators_are_removed():
    parsed = parse(decorated.__wrapped__)
    assert parsed.tree.decorator_list == []
    assert parsed.tree.name == "decorated"
    assert "@" not in S.to_source(parsed.tree)


def test_a_wrapper_is_read_as_its_own_code_not_what_it_wraps():
    parsed = parse(decorated)
    assert parsed.func is decorated
    assert parsed.tree.name == "wrapper"
    assert parsed.tree.decorator_list == []
    assert parse(decorated.__wrapped__).tree.lineno == line_of("marker: decorated def")


# --- names the function can see ---------------------------------------------------

def test_resolve_sees_globals():
    assert parse(module_level).resolve("SHADOWED") == "global value"
    assert parse(module_level).resolve("math") is math


def test_resolve_closure_wins_over_globals():
    parsed = parse(make_closure())
    assert parsed.closure == {"SHADOWED": "closure value"}
    assert parsed.resolve("SHADOWED") == "closure value"
    assert parsed.resolve("G_ONLY") == "only a global"


def test_resolve_sees_builtins():
    parsed = parse(make_closure())
    assert parsed.resolve("abs") is abs
    assert parsed.resolve("range") is range


def test_resolve_unknown_name_is_missing():
    assert parse(module_level).resolve("no_such_name_anywhere") is MISSING


def _calls_in(parsed):
    return {S.expr_source(node.func): node for node in S.walk(parsed.tree)
            if isinstance(node, S.Call)}


def test_resolve_callee_follows_attributes():
    parsed = parse(calls)
    assert parsed.resolve_callee(_calls_in(parsed)["math.sin"]) is math.sin


def test_resolve_callee_finds_a_global_user_function():
    parsed = parse(calls)
    assert parsed.resolve_callee(_calls_in(parsed)["module_level"]) is module_level


def test_resolve_callee_follows_a_local_assigned_once_from_a_function():
    parsed = parse(calls)
    assert parsed.resolve_callee(_calls_in(parsed)["g"]) is math.cos


def rebinds(x):
    g = math.cos
    g = math.sin
    return g(x)


def test_resolve_callee_of_a_local_assigned_twice_is_missing():
    parsed = parse(rebinds)
    assert parsed.resolve_callee(_calls_in(parsed)["g"]) is MISSING


def test_local_names_are_parameters_and_assigned_names():
    assert parse(calls).local_names == {"x", "g"}


# --- source lines -----------------------------------------------------------------

def test_source_line_is_the_stripped_file_line():
    parsed = parse(module_level)
    line = line_of("marker: module_level body")
    assert parsed.source_line(line) == _THIS_FILE_LINES[line - 1].strip()
    assert parsed.source_line(line).startswith("y = x * 2")


def test_source_line_outside_the_function_is_empty():
    parsed = parse(module_level)
    assert parsed.source_line(parsed.first_line - 1) == ""
    assert parsed.source_line(parsed.first_line + len(parsed.lines)) == ""
    assert parsed.source_line(None) == ""


def test_error_points_at_the_node():
    parsed = parse(module_level)
    error = parsed.error(UnsupportedSyntax, parsed.tree.body[0], "nope", "thing")
    assert (error.lineno, error.col, error.construct) == (
        line_of("marker: module_level body"), 4, "thing")
    assert str(error).endswith(":{}:4: nope".format(error.lineno))


# --- lambdas ----------------------------------------------------------------------

def test_lambda_assigned_to_a_name_parses_into_a_function_def():
    parsed = parse(square)
    tree = parsed.tree
    assert isinstance(tree, S.FunctionDef)
    assert [a.id for a in tree.args.args] == ["x"]
    assert len(tree.body) == 1 and isinstance(tree.body[0], S.Return)
    assert S.expr_source(tree.body[0].value) == "x * x"


def test_lambda_tree_is_located_at_its_line():
    tree = parse(square).tree
    assert tree.lineno == line_of("marker: square lambda")
    assert tree.name == "lambda_line{}".format(line_of("marker: square lambda"))
    assert tree.col_offset == len("square = ")


def test_two_lambdas_with_the_same_parameters_on_one_line_are_told_apart_by_their_code():
    # the code object's positions say which lambda of the line it was compiled from
    bodies = [S.expr_source(parse(twin).tree.body[0].value) for twin in twins]
    assert len(set(bodies)) == 2
    assert [twin(3.0) for twin in twins] == [eval(body, {"a": 3.0}) for body in bodies]


# --- no source ----------------------------------------------------------------------

@pytest.mark.parametrize("func", [math.sin, len, 3], ids=["math.sin", "len", "int"])
def test_builtins_have_no_source(func):
    with pytest.raises(SourceUnavailable):
        parse(func)


def test_execd_function_has_no_source():
    namespace = {}
    exec("def made(x):\n    return x * 2\n", namespace)
    with pytest.raises(SourceUnavailable) as info:
        parse(namespace["made"])
    assert info.value.filename == "<string>"
    assert "made" in str(info.value)


def test_parse_returns_a_parsed():
    assert isinstance(parse(module_level), Parsed)


def make_nested_with_unindented_docstring():
    def nested(x):
        """A docstring whose second line starts at column 0.
Such lines are legal inside a string literal.
        """
        return x * x
    return nested


def test_nested_function_with_an_unindented_string_line_parses():
    parsed = parse(make_nested_with_unindented_docstring())
    assert parsed.tree.name == "nested"
    assert parsed.tree.body[-1].col_offset == 8
