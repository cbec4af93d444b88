"""Every Python block of the README and of docs/ runs, in order, one namespace
per file; where a line ends in ``# -> VALUE`` and VALUE is a Python literal, the
line's value must equal it (floats to 1e-12).  So no documented example goes stale."""

import ast
import math
import os
import pathlib
import re
import sys

import numpy as np
import pytest

from derivo import rules

ROOT = pathlib.Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
PAGES = [ROOT / "README.md"] + [page for page in sorted((ROOT / "docs").glob("*.md"))
                                if BLOCK.search(page.read_text())]


def blocks(page):
    """(line number, code) of each ```python block of ``page``."""
    text = page.read_text()
    return [(text[:m.start()].count("\n") + 2, m.group(1)) for m in BLOCK.finditer(text)]


def expected_value(comment):
    """The literal a ``# -> ...`` comment promises, or None when it shows none
    (an elided ``1.716...``, or a description)."""
    text = comment.split("->", 1)[1].strip()
    for candidate in (text, *(text.split(mark)[0] for mark in (":", ";", ", i.e.", "  "))):
        if "..." in candidate:   # an elided number promises nothing
            continue
        try:
            return ast.literal_eval(candidate.strip())
        except (ValueError, SyntaxError):
            continue
    return None


def same(value, expected):
    if isinstance(expected, (tuple, list)):
        return len(value) == len(expected) and all(map(same, value, expected))
    if isinstance(expected, float):
        return math.isclose(float(value), expected, rel_tol=1e-12, abs_tol=1e-12)
    return value == expected


def run_page(page, directory):
    """Run ``page``'s blocks from a Python file in ``directory`` that holds them at
    their lines of the page (the rest blank), so that derivo, which reads source
    files, reads them, and errors name the page's lines."""
    lines = [""] * (page.read_text().count("\n") + 1)
    for first_line, code in blocks(page):
        for offset, line in enumerate(code.splitlines()):
            lines[first_line - 1 + offset] = line
    script = directory / (page.stem + "_md.py")
    script.write_text("\n".join(lines) + "\n")
    namespace = {"__name__": "docs_" + page.stem, "__file__": str(script)}
    for first_line, code in blocks(page):
        tree = ast.parse(code)
        ast.increment_lineno(tree, first_line - 1)
        for stmt in tree.body:
            comment = lines[stmt.end_lineno - 1].partition("#")[2]
            promised = expected_value(comment) if comment.strip().startswith("->") else None
            if isinstance(stmt, ast.Expr) and promised is not None:
                value = eval(compile(ast.Expression(stmt.value), str(script), "eval"), namespace)
                assert same(value, promised), "{}:{}: {!r} is not {!r}".format(
                    page.name, stmt.lineno, value, promised)
            else:
                exec(compile(ast.Module([stmt], []), str(script), "exec"), namespace)


@pytest.fixture
def own_rules():
    """The rule tables as they were before the test: a page's examples register
    rules of their own (for functions of the page), which other tests must not see."""
    tables = {key: dict(table) for key, table in rules.RULES.items()}
    flags = set(rules.NONDIFFERENTIABLE), set(rules.WITHOUT_RULE)
    yield
    rules.RULES.clear()
    rules.RULES.update(tables)
    for registry, saved in zip((rules.NONDIFFERENTIABLE, rules.WITHOUT_RULE), flags):
        registry.clear()
        registry.update(saved)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_code_block_runs(page, tmp_path, monkeypatch, own_rules):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    np.random.seed(0)
    run_page(page, tmp_path)


def test_a_wrong_promise_fails(tmp_path):
    page = tmp_path / "wrong.md"
    page.write_text("```python\nx = 2.0\nx * 3   # -> 7.0\n```\n")
    with pytest.raises(AssertionError, match="wrong.md:3"):
        run_page(page, tmp_path)
