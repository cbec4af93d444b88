"""Stage 1: a function object -> its syntax tree and the names it can see.

The tree's line and column numbers are those of the user's file, so every
later error can point at the user's source.
"""

import builtins
import functools
import inspect
import textwrap
from dataclasses import dataclass, field

from . import syntax as S
from .rules import Method
from .errors import SourceUnavailable, UnsupportedSyntax

MISSING = object()
#: The start of the file name of a module derivo generated (see codegen)
GENERATED_PREFIX = "<derivo generated "


@dataclass
class Parsed:
    """A user function ready for normalisation."""

    func: object
    tree: object            # the gast FunctionDef, decorators removed
    filename: str
    lines: list             # the function's source lines, as in the file
    first_line: int         # the file line number of lines[0]
    globals: dict = field(repr=False)
    closure: dict = field(repr=False)

    def resolve(self, ident):
        """The object a free name refers to, or MISSING."""
        if ident in self.closure:
            return self.closure[ident]
        if ident in self.globals:
            return self.globals[ident]
        return getattr(builtins, ident, MISSING)

    def resolve_callee(self, call):
        """The object a call's function expression (``f``, ``math.sin``) names,
        or MISSING when it is a local value or cannot be looked up."""
        return self.resolve_expression(call.func)

    def resolve_expression(self, func):
        """The object a name or a chain of attributes of a free name (``np.r_``)
        refers to, or MISSING when it is a local value or cannot be looked up."""
        path = []
        while isinstance(func, S.Attribute):
            path.append(func.attr)
            func = func.value
        if not isinstance(func, S.Name) or func.id in self.local_names:
            return MISSING
        obj = self.resolve(func.id)
        for attr in reversed(path):
            obj = getattr(obj, attr, MISSING)
        return obj

    def callee_key(self, call):
        """What a call calls, for rule lookup: the resolved object, or a
        :class:`~derivo.rules.Method` for a method of a local value (``x.sum()``)."""
        callee = self.resolve_callee(call)
        if callee is MISSING and isinstance(call.func, S.Attribute):
            return Method(call.func.attr)
        return callee

    @functools.cached_property
    def local_names(self):
        args = self.tree.args
        return {a.id for a in args.posonlyargs + args.args + args.kwonlyargs} | {
            n.id for n in S.walk(self.tree) if isinstance(n, S.Name)
            and isinstance(n.ctx, S.Store)}

    def error(self, cls, node, message, construct=None):
        """An error of class ``cls`` located at ``node`` in the user's file."""
        return cls(message, self.filename, getattr(node, "lineno", None),
                   getattr(node, "col_offset", None), construct)

    def source_line(self, lineno):
        """The stripped text of a file line of this function ('' if outside it)."""
        index = (lineno or 0) - self.first_line
        return self.lines[index].strip() if 0 <= index < len(self.lines) else ""


class Outlined:
    """A function derivo wrote from part of a user's function (a checkpointed
    loop's step, or its runner of several trips).

    It stands in for a Python function wherever the pipeline takes one: it
    parses to a tree whose positions are those of the user's file.
    """

    def __init__(self, parsed, tree):
        self.__name__ = self.__qualname__ = tree.name
        self.tree = tree
        self.params = [a.id for a in tree.args.args]
        self._parsed = parsed

    def parse(self):
        """A fresh :class:`Parsed` (later stages rewrite the tree they get)."""
        return Parsed(
            self, S.deepcopy(self.tree), self._parsed.filename, self._parsed.lines,
            self._parsed.first_line, self._parsed.globals, self._parsed.closure)


def parameter_names(func):
    """The names of a function's parameters, in order (keyword-only ones last)."""
    params = getattr(func, "params", None)  # an Outlined function, or an outline.Loop
    if params is not None:
        return list(params)
    code = func.__code__
    return list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])


def parse(func):
    """Parse ``func`` (a plain Python function, or an :class:`Outlined` one) into a
    :class:`Parsed`."""
    if isinstance(func, Outlined):
        return func.parse()
    func = inspect.unwrap(func)
    name = getattr(func, "__qualname__", repr(func))
    code = getattr(func, "__code__", None)
    if code is None:
        raise SourceUnavailable(
            "cannot differentiate {!r}: it is not a Python function, so it has no "
            "source (give derivo a rule for it instead)".format(name))
    filename = code.co_filename
    try:
        lines, first_line = inspect.getsourcelines(func)
    except (OSError, TypeError) as exc:
        raise SourceUnavailable(
            "cannot find the source of {!r} ({}); derivo reads a function's source, "
            "so define it in a file".format(name, exc), filename, code.co_firstlineno)
    first_line = max(first_line, 1)
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = _indent_width(text) - _indent_width(dedented)
    shift = first_line - 1
    if _indent_width(dedented):
        # A line at column 0 inside a string stopped dedent: parse the source
        # as the body of a block instead, keeping its columns.
        dedented, indent, shift = "if 1:\n" + text, 0, first_line - 2
    tree = _function_tree(dedented, func, filename, first_line)
    for node in S.walk(tree):
        if hasattr(node, "lineno"):
            node.lineno += shift
            node.col_offset += indent
            if getattr(node, "end_lineno", None) is not None:  # (where a statement ends)
                node.end_lineno += shift
                node.end_col_offset += indent
    tree.decorator_list = []
    # Generated functions take positional-only parameters as ordinary ones.
    tree.args.args, tree.args.posonlyargs = tree.args.posonlyargs + tree.args.args, []
    closure = {}
    if func.__closure__:
        for ident, cell in zip(code.co_freevars, func.__closure__):
            try:
                closure[ident] = cell.cell_contents
            except ValueError:
                pass
    return Parsed(func, tree, filename, lines, first_line, func.__globals__, closure)


def _indent_width(text):
    first = next((line for line in text.splitlines() if line.strip()), "")
    return len(first) - len(first.lstrip())


def _function_tree(source, func, filename, first_line):
    try:
        module = S.gast.parse(source)
    except SyntaxError:
        # A lambda's source is the whole line holding it, which may not parse
        # alone (e.g. an argument list); parenthesised it usually does.
        try:
            module = S.gast.parse("(\n" + source + "\n)")
            for node in S.walk(module):
                if hasattr(node, "lineno"):
                    node.lineno -= 1
                    if getattr(node, "end_lineno", None) is not None:
                        node.end_lineno -= 1
        except SyntaxError as exc:
            raise SourceUnavailable(
                "cannot parse the source of {!r}: {}".format(func.__qualname__, exc),
                filename, first_line)
    body = module.body[0].body if source.startswith("if 1:\n") else module.body
    defs = [n for n in body if isinstance(n, (S.FunctionDef, S.gast.AsyncFunctionDef))]
    if func.__name__ != "<lambda>" and defs:
        return defs[0]
    lambdas = [n for n in S.walk(module) if isinstance(n, S.gast.Lambda)
               and [a.id for a in n.args.args] == list(func.__code__.co_varnames[
                   :func.__code__.co_argcount])]
    if len(lambdas) != 1:
        raise UnsupportedSyntax(
            "cannot tell which lambda on this line to differentiate; use a def",
            filename, first_line, None, "lambda")
    lam = lambdas[0]
    body = S.return_(lam.body)
    S.copy_location(body, lam)
    tree = S.function("lambda_line{}".format(first_line + lam.lineno - 1),
                      [a.id for a in lam.args.args], [body], defaults=lam.args.defaults)
    S.copy_location(tree, lam)
    return tree
