"""derivo.graph: the dataflow graph of a function and of its derivative, as DOT,
and as SVG when Graphviz is installed."""

import math
import re
import shutil

import pytest

import derivo
from examples.bessel import besselj


def f(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


def labelled_edges(dot):
    """The graph's edges as (source label, target label) pairs."""
    labels = dict(re.findall(r'^\s*(n\d+) \[label="([^"]*)"', dot, re.M))
    return {(labels[a], labels[b]) for a, b in re.findall(r"^\s*(n\d+) -> (n\d+);", dot, re.M)}


def test_the_seed_example_is_the_textbook_graph():
    dot = derivo.graph(f).dot
    assert dot.startswith('digraph "f" {')
    edges = labelled_edges(dot)
    assert {("x1", "math.log"), ("x1", "*"), ("x2", "*"), ("x2", "math.sin"),
            ("math.log", "+"), ("*", "+"), ("+", "-"), ("math.sin", "-"),
            ("-", "return")} == edges


def test_each_node_links_to_its_source_line():
    dot = derivo.graph(f).dot
    line = f.__code__.co_firstlineno + 1
    log = re.search(r'\[label="math.log".*\]', dot).group(0)
    assert 'URL="file://{}#L{}"'.format(__file__, line) in log
    assert "test_graph.py:{}: return math.log(x1)".format(line) in log


def test_a_derivatives_graph_links_to_the_line_it_differentiates():
    dot = derivo.graph(derivo.grad(f, wrt=(0, 1))).dot
    assert dot.startswith('digraph "f_grad" {')
    edges = labelled_edges(dot)
    assert ("x2", "math.cos") in edges and ("x1", "/") in edges
    assert "test_graph.py:{}: return math.log(x1)".format(f.__code__.co_firstlineno + 1) in dot


def test_a_loop_is_a_box_labelled_with_its_header():
    dot = derivo.graph(besselj).dot
    assert re.search(r'label="line \d+: while abs\(s\) > atol"', dot)
    assert "subgraph cluster_" in dot
    assert ("z", "/") in labelled_edges(dot)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_svg_is_drawn_by_graphviz():
    svg = derivo.graph(f).svg()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert "math.log" in svg and "xlink:href" in svg   # the links to the source


def test_without_graphviz_svg_is_refused_clearly(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    graph = derivo.graph(f)
    with pytest.raises(derivo.DerivoError, match="Graphviz"):
        graph.svg()
    assert graph._repr_svg_() is None
