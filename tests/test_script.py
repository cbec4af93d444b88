"""derivo.script: what the command line evaluates of a file (the definitions the
requested functions need) and what it never runs."""

import ast
import textwrap

import pytest

import derivo
from derivo import script

from checks import assert_close

SCRIPT = textwrap.dedent('''\
    import math
    import json
    import numpy as np

    SCALE = 2.0
    OFFSET = SCALE + 1.0
    UNUSED = open("should_not_exist.txt", "w")

    def helper(x):
        return math.sin(x) * OFFSET

    def loss(x):
        return helper(x) * SCALE

    class Model:
        factor = 3.0

        def energy(self, w):
            return self.factor * w * w

    print("the script ran")
    with open("ran.txt", "w") as stream:
        stream.write("ran")

    if __name__ == "__main__":
        open("main_ran.txt", "w").close()
    ''')


@pytest.fixture
def script_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "program.py"
    path.write_text(SCRIPT)
    return path


def test_only_the_needed_statements_are_chosen(script_file):
    tree = ast.parse(script_file.read_text())
    chosen = script.needed_statements(tree, {"loss"})
    lines = [stmt.lineno for stmt in chosen]
    # import math, SCALE, OFFSET, helper, loss; not json, numpy, UNUSED, the class or the rest
    assert lines == [1, 5, 6, 9, 12]


def test_loading_runs_nothing_else(script_file, tmp_path, capsys):
    module = script.load(str(script_file), {"loss", "Model"})
    assert capsys.readouterr().out == ""
    assert not (tmp_path / "should_not_exist.txt").exists()
    assert not (tmp_path / "ran.txt").exists() and not (tmp_path / "main_ran.txt").exists()
    x = 0.7
    grad = derivo.grad(module.loss)(x)
    assert_close(grad, math_cos(x) * 3.0 * 2.0, rtol=1e-12)
    model = module.Model()
    assert_close(derivo.grad(module.Model.energy, wrt=1)(model, 1.5), 9.0, rtol=1e-12)


def math_cos(x):
    import math
    return math.cos(x)


def test_an_optional_import_in_try_is_evaluated(tmp_path):
    path = tmp_path / "opt.py"
    path.write_text(textwrap.dedent('''\
        try:
            import scipy_that_is_not_installed as sp
        except ImportError:
            sp = None

        def f(x):
            return x * x if sp is None else 0.0
        '''))
    module = script.load(str(path), {"f"})
    assert module.sp is None
    assert derivo.grad(module.f)(3.0) == 6.0


def test_a_failing_definition_names_its_line(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("import math\nK = 1 / 0\n\ndef f(x):\n    return K * x\n")
    with pytest.raises(derivo.DerivoError, match=r"bad.py:2:1: .*ZeroDivisionError"):
        script.load(str(path), {"f"})


def test_a_file_that_is_not_python_is_refused(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("def f(x):\n    return x\n")
    with pytest.raises(derivo.DerivoError, match="not a Python source file"):
        script.load(str(path), {"f"})
