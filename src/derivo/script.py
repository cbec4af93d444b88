"""Load what a function in a script needs, without running the script.

The command line reads a file's source and evaluates, in file order, only the
top-level statements that define something the requested functions need:

- a ``def`` or ``class`` statement (its decorators and defaults included) whose
  name is needed;
- an import (``import m``, ``from m import n``) that binds a needed name, and a
  ``try`` made of imports and assignments alone (the optional-dependency idiom)
  that binds one; ``from __future__`` imports and ``from m import *`` always;
- an assignment (``X = ...``, ``a, b = ...``, ``X: T = ...``, ``X += ...``) to a
  needed name.

A name is needed when it is one of the requested functions (or classes, for
``Class.method``) or when a needed statement reads it, anywhere in its text.
Nothing else runs: expression statements (``main()``, ``print(...)``), ``if``
blocks (``if __name__ == "__main__":`` among them), loops, ``with``, and every
assignment nothing needed reads.  A name bound only inside one of those is not
defined, and derivo says so when the function reads it.
"""

import ast
import os
import sys
import tokenize
import types

from .errors import DerivoError

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_ASSIGNMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign)


def load(path, wanted):
    """A module holding what the names ``wanted`` (top-level names of ``path``)
    need, evaluated from ``path``'s source as the module docstring says."""
    if not os.path.isfile(path):
        raise DerivoError("{}: no such file".format(path))
    if not path.endswith(".py"):
        raise DerivoError("{}: not a Python source file (.py)".format(path))
    try:
        with tokenize.open(path) as stream:
            source = stream.read()
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        raise DerivoError("invalid syntax: {}".format(exc.msg), path, exc.lineno, exc.offset)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DerivoError("{}: cannot read it: {}".format(path, exc))
    stem = os.path.splitext(os.path.basename(path))[0]
    module = types.ModuleType("_derivo_cli_" + stem)
    module.__file__ = os.path.abspath(path)
    sys.modules[module.__name__] = module
    directory = os.path.dirname(module.__file__)
    if directory not in sys.path:
        sys.path.insert(0, directory)  # the script's own imports of its neighbours
    for stmt in needed_statements(tree, wanted):
        _run(stmt, path, module)
    return module


def needed_statements(tree, wanted):
    """The top-level statements of ``tree`` that the names ``wanted`` need, in order."""
    candidates = [(stmt, bound_names(stmt)) for stmt in tree.body if _evaluable(stmt)]
    needed, chosen = set(wanted), set()
    changed = True
    while changed:
        changed = False
        for stmt, bound in candidates:
            if id(stmt) not in chosen and (bound & needed or _always(stmt)):
                chosen.add(id(stmt))
                needed |= {n.id for n in ast.walk(stmt)
                           if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
                changed = True
    return [stmt for stmt, _ in candidates if id(stmt) in chosen]


def _run(stmt, path, module):
    code = compile(ast.Module(body=[stmt], type_ignores=[]), module.__file__, "exec")
    try:
        exec(code, module.__dict__)
    except Exception as exc:
        raise DerivoError("evaluating this definition failed: {}: {}".format(
            type(exc).__name__, exc), path, stmt.lineno, stmt.col_offset + 1)


def _evaluable(stmt):
    if isinstance(stmt, (*_DEFINITIONS, *_ASSIGNMENTS, ast.Import, ast.ImportFrom)):
        return True
    return isinstance(stmt, ast.Try) and all(
        isinstance(s, (ast.Import, ast.ImportFrom, *_ASSIGNMENTS, ast.Pass))
        for block in (stmt.body, stmt.orelse, stmt.finalbody,
                      *(handler.body for handler in stmt.handlers))
        for s in block)


def _always(stmt):
    """``from __future__ import ...`` and ``from m import *``: what they bind is not
    known from the text."""
    return isinstance(stmt, ast.ImportFrom) and (
        stmt.module == "__future__" or any(a.name == "*" for a in stmt.names))


def bound_names(stmt):
    """The names a top-level statement binds."""
    if isinstance(stmt, _DEFINITIONS):
        return {stmt.name}
    if isinstance(stmt, ast.Import):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    if isinstance(stmt, ast.ImportFrom):
        return {a.asname or a.name for a in stmt.names}
    if isinstance(stmt, ast.Try):
        return {name for block in (stmt.body, stmt.orelse, stmt.finalbody,
                                   *(handler.body for handler in stmt.handlers))
                for s in block for name in bound_names(s)}
    if isinstance(stmt, _ASSIGNMENTS):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return {n.id for target in targets for n in ast.walk(target)
                if isinstance(n, ast.Name)}
    return set()
