"""Stage 6, ``derivo.codegen``: trees -> source -> live functions and modules."""

import inspect
import json
import linecache
import math

import numpy
import pytest

from derivo import syntax as S
from derivo.codegen import compile_module, module_text, render
from derivo.errors import DerivoError


# --- render ---------------------------------------------------------------------------

def test_comment_markers_become_comment_lines():
    comments = S.Comments()
    function = S.function("g", ["x"], [comments.statement("line 3: y = x * 2"),
                                       S.return_(S.name("x"))])
    source = render([function], comments)
    assert source.splitlines() == ["def g(x):", "    # line 3: y = x * 2", "    return x"]


def test_comment_markers_keep_their_indentation():
    comments = S.Comments()
    loop = S.for_("i", S.name("r"), [comments.statement("inside"), S.Expr(value=S.name("i"))])
    source = render([S.function("g", ["r"], [loop, S.return_(S.name("r"))])], comments)
    assert "        # inside" in source.splitlines()


def test_is_comment_recognises_markers_only():
    comments = S.Comments()
    assert S.is_comment(comments.statement("text"))
    assert not S.is_comment(S.Expr(value=S.const("a docstring")))


def test_empty_blocks_get_pass():
    loop = S.for_("i", S.name("r"), [])
    branch = S.if_(S.name("c"), [], [S.assign("y", S.const(1))])
    function = S.function("g", ["r", "c"], [loop, branch, S.return_(S.name("r"))])
    lines = [line.strip() for line in render([function], S.Comments()).splitlines()]
    assert lines[1:3] == ["for i in r:", "pass"]
    assert lines[3:5] == ["if c:", "pass"]


def test_empty_function_body_gets_pass():
    source = render([S.function("g", [], [])], S.Comments())
    assert source.splitlines() == ["def g():", "    pass"]
    compile(source, "<test>", "exec")


def test_functions_are_separated_by_a_blank_line():
    functions = [S.function(n, ["x"], [S.return_(S.name("x"))]) for n in ("a", "b")]
    assert render(functions, S.Comments()) == (
        "def a(x):\n    return x\n\n\ndef b(x):\n    return x\n")


# --- compile_module ---------------------------------------------------------------------

SOURCE = "def g(x):\n    y = x + 1\n    return y * scale\n"


def test_compile_module_runs_in_a_copy_of_the_namespace():
    namespace = {"scale": 3}
    scope = compile_module(SOURCE, namespace, "g")
    assert scope["g"](1) == 6
    assert "g" not in namespace


def test_compile_module_registers_the_source_in_linecache():
    scope = compile_module(SOURCE, {"scale": 1}, "g")
    filename = scope["g"].__code__.co_filename
    assert linecache.getline(filename, 2) == "    y = x + 1\n"
    assert inspect.getsource(scope["g"]) == SOURCE


def test_compile_module_gives_each_module_its_own_file_name():
    first = compile_module(SOURCE, {"scale": 1}, "g")["g"].__code__.co_filename
    second = compile_module(SOURCE, {"scale": 1}, "g")["g"].__code__.co_filename
    assert first != second
    assert "g" in first


def test_generated_line_appears_in_tracebacks():
    scope = compile_module("def bad(x):\n    return x / 0\n", {}, "bad")
    with pytest.raises(ZeroDivisionError) as info:
        scope["bad"](1.0)
    assert "return x / 0" in str(info.traceback[-1])


# --- module_text --------------------------------------------------------------------------

BODY = "def g(x):\n    return x\n"


def reading(*names):
    """A function reading ``names``, so that module_text writes them."""
    return "def g(x):\n    return ({},)\n".format(", ".join(names))


def test_module_text_imports_modules():
    text = module_text(reading("math", "np"), {"math": math, "np": numpy}, "header")
    lines = text.splitlines()
    assert "import math" in lines
    assert "import numpy as np" in lines


def test_module_text_writes_literal_constants():
    text = module_text(reading("C", "N", "S", "T", "F"),
                       {"C": 3.5, "N": 2, "S": "hi", "T": (1, 2.0), "F": None}, "header")
    lines = text.splitlines()
    for line in ("C = 3.5", "N = 2", "S = 'hi'", "T = (1, 2.0)", "F = None"):
        assert line in lines


def test_module_text_imports_importable_functions():
    text = module_text(reading("dumps", "sqrt"), {"dumps": json.dumps, "sqrt": math.sqrt},
                       "header")
    lines = text.splitlines()
    assert "from json import dumps" in lines
    assert "from math import sqrt" in lines


def test_module_text_imports_a_module_s_functions_in_one_line():
    names = ["acosh", "asinh", "atanh", "copysign", "cos", "erfc", "expm1", "factorial",
             "fsum", "hypot", "isclose", "lgamma", "log1p", "sin", "sqrt", "to_json"]
    namespace = {name: getattr(math, name) for name in names if name != "to_json"}
    text = module_text(reading(*names), dict(namespace, to_json=json.dumps), "header")
    lines = text.splitlines()
    assert "from json import dumps as to_json" in lines
    assert lines[3:5] == [
        "from math import (acosh, asinh, atanh, copysign, cos, erfc, expm1, factorial, fsum, "
        "hypot,",
        "                  isclose, lgamma, log1p, sin, sqrt)"]
    scope = {}
    exec(text, scope)
    assert all(scope[name] is value for name, value in namespace.items())


def test_module_text_aliases_a_function_bound_under_another_name():
    text = module_text(reading("to_json"), {"to_json": json.dumps}, "header")
    assert "from json import dumps as to_json" in text.splitlines()


def test_module_text_leaves_out_what_the_source_does_not_read():
    text = module_text(reading("math"), {"math": math, "np": numpy, "C": 2.0}, "header")
    assert "import math" in text.splitlines()
    assert "numpy" not in text and "C =" not in text


def test_module_text_starts_with_the_header_and_ends_with_the_source():
    text = module_text(BODY, {"math": math}, "The gradient of g.")
    assert text.startswith('"""The gradient of g."""\n')
    assert text.endswith(BODY)


def test_module_text_runs():
    source = "def g(x):\n    return math.sqrt(x) * C + np.sum(T)\n"
    text = module_text(source, {"math": math, "np": numpy, "C": 2.0, "T": (1, 2)}, "h")
    scope = {}
    exec(compile(text, "<module_text>", "exec"), scope)
    assert scope["g"](4.0) == 7.0


@pytest.mark.parametrize("value", [[1.0, 2.0], numpy.array([1.0]), lambda x: x],
                         ids=["list", "array", "lambda"])
def test_module_text_with_an_unimportable_global_names_it(value):
    try:
        text = module_text(reading("W"), {"W": value}, "header")
    except DerivoError as error:
        assert "W" in str(error)
    else:
        assert "W" in text


def test_a_long_statement_stays_on_one_line():
    statement = "total = " + " + ".join("weight{0} * value{0}".format(i) for i in range(12))
    assert len(statement) > 100
    assert S.to_source(S.parse_function("def f():\n    " + statement + "\n").body).strip() == statement


def test_file_label_names_generated_code_by_its_function_without_the_counter():
    from derivo.codegen import file_label
    assert file_label("/home/user/project/model.py") == "model.py"
    assert file_label("<derivo generated energy_grad #17>") == "derivo's generated energy_grad"
