"""How a derivative shows itself in a notebook: its generated source, highlighted
by Pygments when it is installed and as escaped plain text otherwise, under a
line saying what it is.  IPython and Jupyter call ``_repr_html_`` and
``_repr_markdown_`` of a displayed object; a Derivative's entry carries both."""

import html


def markdown(title, source):
    """``title`` and ``source`` as Markdown: a paragraph and a Python code block."""
    return "**{}**\n\n```python\n{}\n```\n".format(title, source.rstrip())


def html_of(title, source):
    """``title`` and ``source`` as an HTML fragment."""
    return '<div class="derivo-derivative"><p><b>{}</b></p>{}</div>'.format(
        html.escape(title), _highlighted(source))


def _highlighted(source):
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return "<pre><code>{}</code></pre>".format(html.escape(source))
    return highlight(source, PythonLexer(), HtmlFormatter(noclasses=True))
