"""The dataflow graph of a function, or of a derivative's generated code, as
Graphviz DOT (and SVG or PNG when Graphviz's ``dot`` program is installed).

Nodes are the function's inputs (its parameters), its operations (``*``,
``log``, ``x[i]``...: one node per operator, call or item access, labelled
with the name the result is assigned to) and its result; an edge goes from
each operand to the operation that reads it.  Numbers and global names are
small plain nodes.  Each node links to the source line it comes from (a
``file:`` URL and a tooltip with the line's text).  The body of an ``if``,
``for`` or ``while`` is drawn once, inside a box labelled with its header:
edges into a loop come from the values before its first trip.
"""

import os
import re
import shutil
import subprocess
from typing import Any, Callable

from . import syntax as S
from .errors import DerivoError
from .parse import parse

_SYMBOLS = {S.Add: "+", S.Sub: "-", S.Mult: "*", S.Div: "/", S.FloorDiv: "//", S.Mod: "%",
            S.Pow: "**", S.MatMult: "@", S.USub: "-", S.UAdd: "+", S.Not: "not",
            S.Lt: "<", S.LtE: "<=", S.Gt: ">", S.GtE: ">=", S.Eq: "==", S.NotEq: "!=",
            S.And: "and", S.Or: "or", S.BitAnd: "&", S.BitOr: "|"}


class Graph:
    """A dataflow graph: ``.dot`` is its Graphviz text; ``.svg()`` and ``.png()``
    render it with Graphviz's ``dot``; a notebook shows it as SVG."""

    def __init__(self, dot):
        self.dot = dot

    def __str__(self):
        return self.dot

    def svg(self):
        """The graph as an SVG document (a str)."""
        return self._render("svg").decode("utf-8")

    def png(self):
        """The graph as PNG bytes."""
        return self._render("png")

    def _repr_svg_(self):
        return self.svg() if shutil.which("dot") else None

    def _render(self, form):
        program = shutil.which("dot")
        if program is None:
            raise DerivoError("drawing the graph needs Graphviz's dot program, which is not "
                              "installed (apt-get install graphviz, brew install graphviz, or "
                              "conda install graphviz); .dot holds the graph as text")
        done = subprocess.run([program, "-T" + form], input=self.dot.encode("utf-8"),
                              capture_output=True, timeout=60)
        if done.returncode:
            raise DerivoError("dot failed: {}".format(done.stderr.decode("utf-8", "replace")))
        return done.stdout


def graph(func: Callable[..., Any]) -> Graph:
    """The dataflow graph of ``func``; given a derivative (``derivo.grad(f)``),
    the graph of its generated code, each node linked to the line of ``f`` it
    differentiates.

    >>> print(derivo.graph(f).dot)          # doctest: +SKIP
    digraph "f" { ... }
    """
    generated = getattr(func, "derivo_function", None)
    parsed = parse(generated if generated is not None else func)
    if generated is None:
        def locate(line):
            return parsed.filename, line, parsed.source_line(line)
    else:
        locate = _differentiated_lines(parsed, func.__wrapped__.__code__.co_filename)
    return Graph(_Builder(locate).function(parsed.tree))


_LINE_COMMENT = re.compile(r"^\s*# line (\d+): (.*)$")


def _differentiated_lines(parsed, filename):
    """For generated code: line -> (``filename``, the user's line, its text) from
    the ``# line N: ...`` comment that heads each block of generated code."""
    located, current = {}, None
    for offset, text in enumerate(parsed.lines):
        match = _LINE_COMMENT.match(text)
        if match:
            current = (filename, int(match.group(1)), match.group(2).strip())
        located[parsed.first_line + offset] = current
    return located.get


class _Builder:
    """Walks a function's statements in order, collecting nodes, edges and the
    boxes of compound statements as ``items``, and renders them as DOT."""

    def __init__(self, locate):
        self.locate = locate             # line -> (file, line, text) it comes from, or None
        # ("node", id), ("edge", a, b), ("open", label) or ("close",), in order
        self.items = []
        self.nodes = {}                  # id -> [label, attributes]
        self.defined = {}                # name -> the node that last assigned it

    def function(self, tree):
        for arg in tree.args.args + tree.args.kwonlyargs:
            self.defined[arg.id] = self.node(arg.id, tree, shape="ellipse", style="bold")
        self.block(tree.body)
        return self.render(tree.name)

    def render(self, name):
        lines = ["digraph {} {{".format(_quoted(name)),
                 '    rankdir=TB; node [fontname="Helvetica", fontsize=11];']
        indent = "    "
        for item in self.items:
            if item[0] == "node":
                label, attributes = self.nodes[item[1]]
                text = "".join(", {}={}".format(k, _quoted(v))
                               for k, v in sorted(attributes.items()))
                lines.append("{}{} [label={}{}];".format(indent, item[1], _quoted(label), text))
            elif item[0] == "edge":
                lines.append("{}{} -> {};".format(indent, item[1], item[2]))
            elif item[0] == "open":
                lines.append("{}subgraph cluster_{} {{".format(indent, len(lines)))
                lines.append('{}    label={}; style="rounded,dashed";'.format(
                    indent, _quoted(item[1])))
                indent += "    "
            else:
                indent = indent[:-4]
                lines.append(indent + "}")
        return "\n".join(lines + ["}"]) + "\n"

    def node(self, label, at, **attributes):
        ident = "n{}".format(len(self.nodes))
        origin = self.locate(getattr(at, "lineno", None))
        if origin is not None:
            filename, line, text = origin
            attributes["tooltip"] = "{}:{}: {}".format(os.path.basename(filename), line, text)
            if os.path.isfile(filename):
                attributes["URL"] = "file://{}#L{}".format(os.path.abspath(filename), line)
        attributes.setdefault("shape", "box")
        self.nodes[ident] = [label, attributes]
        self.items.append(("node", ident))
        return ident

    def edge(self, source, target):
        self.items.append(("edge", source, target))

    def operation(self, label, at, operands):
        target = self.node(label, at)
        for operand in operands:
            self.edge(self.expr(operand), target)
        return target

    def expr(self, node):
        if isinstance(node, S.Name):
            if node.id not in self.defined:
                self.defined[node.id] = self.node(node.id, node, shape="plaintext")
            return self.defined[node.id]
        if isinstance(node, S.Constant):
            return self.node(repr(node.value), node, shape="plaintext")
        label, operands = _operation(node)
        return self.operation(label, node, operands)

    def block(self, statements):
        for stmt in statements:
            self.statement(stmt)

    def statement(self, stmt):
        if isinstance(stmt, S.Assign):
            self.assign(stmt.targets, self.expr(stmt.value), stmt)
        elif isinstance(stmt, S.AugAssign):
            result = self.operation(_SYMBOLS.get(type(stmt.op), "op") + "=", stmt,
                                    [stmt.target, stmt.value])
            self.assign([stmt.target], result, stmt)
        elif isinstance(stmt, S.Return) and stmt.value is not None:
            self.edge(self.expr(stmt.value), self.node("return", stmt, shape="doublecircle"))
        elif isinstance(stmt, S.Expr) and not S.is_comment(stmt):
            self.expr(stmt.value)
        elif isinstance(stmt, (S.If, S.For, S.While)):
            self.compound(stmt)

    def assign(self, targets, value, stmt):
        for target in targets:
            if isinstance(target, S.Name):
                label, attributes = self.nodes[value]
                if attributes["shape"] == "box" and " = " not in label:  # say what it makes
                    self.nodes[value][0] = "{} = {}".format(target.id, label)
                self.defined[target.id] = value
            elif isinstance(target, (S.Tuple, S.List)):
                for index, element in enumerate(target.elts):
                    item = self.node("[{}]".format(index), stmt)
                    self.edge(value, item)
                    self.assign([element], item, stmt)
            elif isinstance(target, S.Subscript) and isinstance(target.value, S.Name):
                written = self.operation("{}[...] =".format(target.value.id), stmt,
                                         [target.value, target.slice])
                self.edge(value, written)
                self.defined[target.value.id] = written

    def compound(self, stmt):
        if isinstance(stmt, S.For):
            header = "for {} in {}".format(S.expr_source(stmt.target), S.expr_source(stmt.iter))
        else:
            header = "{} {}".format(type(stmt).__name__.lower(), S.expr_source(stmt.test))
        self.items.append(("open", "line {}: {}".format(stmt.lineno, header)))
        if isinstance(stmt, S.For):
            self.assign([stmt.target], self.operation("item of", stmt, [stmt.iter]), stmt)
        else:
            self.operation("test", stmt, [stmt.test])
        self.block(stmt.body)
        self.block(stmt.orelse)
        self.items.append(("close",))


def _operation(node):
    """The label and the operands of an expression node that is an operation."""
    if isinstance(node, S.BinOp):
        return _SYMBOLS.get(type(node.op), "op"), [node.left, node.right]
    if isinstance(node, S.UnaryOp):
        return _SYMBOLS.get(type(node.op), "op"), [node.operand]
    if isinstance(node, S.BoolOp):
        return _SYMBOLS.get(type(node.op), "op"), list(node.values)
    if isinstance(node, S.Compare):
        return " ".join(_SYMBOLS.get(type(op), "?") for op in node.ops), \
            [node.left, *node.comparators]
    if isinstance(node, S.Call):
        return S.expr_source(node.func), [*node.args, *(k.value for k in node.keywords)]
    if isinstance(node, S.Subscript):
        return "[...]", [node.value, node.slice]
    if isinstance(node, S.Attribute):
        return "." + node.attr, [node.value]
    if isinstance(node, S.IfExp):
        return "if-else", [node.test, node.body, node.orelse]
    if isinstance(node, (S.Tuple, S.List)):
        return type(node).__name__.lower(), list(node.elts)
    return type(node).__name__, [child for child in S.gast.iter_child_nodes(node)
                                 if isinstance(child, S.gast.expr)]


def _quoted(text):
    return '"{}"'.format(str(text).replace("\\", "\\\\").replace('"', '\\"')
                         .replace("\n", "\\n"))
