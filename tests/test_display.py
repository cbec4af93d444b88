"""How a derivative shows itself: its repr, the HTML and Markdown a notebook
displays, and a refusal's traceback, which ends at the API call."""

import html
import math
import traceback

import pytest

import derivo
from derivo import display


def f(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


def test_the_repr_says_how_the_derivative_was_made():
    assert repr(derivo.grad(f, wrt=(0, "x2"))) == \
        "<bound method f_grad of derivo.grad(f, wrt=('x1', 'x2'))>"
    assert repr(derivo.grad(f).__self__) == "derivo.grad(f, wrt='x1')"
    assert repr(derivo.tangent(f, wrt="x2").__self__) == "derivo.tangent(f, wrt='x2')"
    assert repr(derivo.value_and_grad(f).__self__) == "derivo.value_and_grad(f, wrt='x1')"


def test_a_notebook_shows_the_source_as_markdown():
    df = derivo.grad(f, wrt=(0, 1))
    text = df._repr_markdown_()
    assert text.startswith("**Gradient of f with respect to x1, x2.**")
    assert "```python\n" + df.source.rstrip() + "\n```" in text


def test_a_notebook_shows_the_source_as_html():
    df = derivo.grad(f, wrt=(0, 1))
    page = df._repr_html_()
    assert page.startswith('<div class="derivo-derivative">')
    # the highlighted text is the source, once the markup is taken out
    import re
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert df.source.strip() in text


def test_without_pygments_the_html_is_escaped_plain_text(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_pygments(name, *args, **kwargs):
        if name.startswith("pygments"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pygments)
    page = display.html_of("t", "if a < b:\n    pass\n")
    assert "<pre><code>if a &lt; b:\n    pass\n</code></pre>" in page


def test_with_pygments_the_html_is_highlighted():
    pytest.importorskip("pygments")
    assert "<span style=" in display.html_of("t", "def g(x):\n    return x\n")


def generator(x):
    yield x


def test_a_refusal_traceback_ends_at_the_api():
    with pytest.raises(derivo.DerivoError) as info:
        derivo.grad(generator)
    frames = traceback.extract_tb(info.value.__traceback__)
    inside = [frame for frame in frames if "derivo" in frame.filename.replace("\\", "/")
              .split("/src/")[-1] and "tests" not in frame.filename]
    assert len(inside) <= 3, [frame.name for frame in inside]
    assert info.value.__suppress_context__
