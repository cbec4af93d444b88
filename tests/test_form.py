"""The statement form is declared (derivo.form): every stage that produces or
keeps it leaves a tree the validator accepts, on the examples and the test
programs alike; a tree that breaks the grammar, or carries an annotation not
declared, is caught."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import derivo
from checks import EXAMPLE_NEEDS, example_runs_here
from derivo import form
from derivo import syntax as S
from derivo.parse import parse
from derivo.ssa import normalize

REPO = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p.name for p in (REPO / "examples").glob("*.py") if p.stem != "__init__")
CHECKED = dict(os.environ, DERIVO_CHECK_FORM="1", PYTHONPATH=os.pathsep.join(
    [str(REPO / "src"), str(REPO / "tests"), str(REPO)]))


@pytest.fixture
def checking(monkeypatch):
    monkeypatch.setattr(form, "CHECKING", True)


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_keeps_the_form_at_every_stage(example):
    if not example_runs_here(example[:-3]):
        pytest.skip("needs {}".format(EXAMPLE_NEEDS[example[:-3]]))
    done = subprocess.run([sys.executable, str(REPO / "examples" / example)], cwd=REPO,
                          capture_output=True, text=True, timeout=600, env=CHECKED)
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_test_programs_keep_the_form_at_every_stage():
    programs = ["tests/test_memory_model.py", "tests/test_inline.py",
                "tests/test_reverse_loops.py", "tests/test_fuzz_programs.py"]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                           *programs], cwd=REPO, capture_output=True, text=True, timeout=900,
                          env=CHECKED)
    assert done.returncode == 0, done.stdout[-3000:]


def loops_and_writes(x, n):
    y = x * 1.0
    s = 0.0
    for i in range(n):
        if s > 10.0:
            break
        y[i % 3] = y[i % 3] * 2.0
        s += np.sum(y)
    return s


def test_a_transform_validates_what_it_builds(checking):
    x = np.array([1.0, 2.0, 3.0])
    grad = derivo.grad(loops_and_writes)(x, 4)
    assert grad.shape == (3,)


def normalized(func):
    return normalize(parse(func)).tree


def test_a_jump_before_the_end_of_its_block_is_refused():
    tree = normalized(loops_and_writes)
    loop = next(n for n in S.walk(tree) if isinstance(n, S.For))
    loop.body.insert(0, S.Break())
    with pytest.raises(form.InvalidForm, match="a jump is the last statement"):
        form.validate(tree, "a test")


def test_an_undeclared_annotation_is_refused():
    tree = normalized(loops_and_writes)
    tree.body[0].mystery = True
    with pytest.raises(form.InvalidForm, match="undeclared annotations"):
        form.validate(tree, "a test")


def test_a_second_return_is_refused():
    tree = normalized(loops_and_writes)
    tree.body.insert(0, S.return_(S.name("x")))
    with pytest.raises(form.InvalidForm, match="exactly one return"):
        form.validate(tree, "a test")


def test_every_annotation_has_a_default_and_a_meaning():
    for name, (default, meaning, stage) in form.ANNOTATIONS.items():
        assert meaning and stage, name
        assert form.annotation(S.Pass(), name) == default
