"""Stage 6: generated functions -> Python source -> live functions.

The source shown to the user (``Derivative.source``) is exactly the text that is
compiled; it is registered with ``linecache`` so tracebacks and ``inspect``
show generated lines.
"""

import ast
import importlib
import linecache
import math
import os
import sys
import textwrap
import types

import numpy as np

from . import script
from . import syntax as S
from .errors import DerivoError
from .parse import GENERATED_PREFIX

_FILE_COUNTER = [0]


def render(functions, comments):
    """The source of a list of FunctionDefs, empty blocks filled with ``pass``."""
    for function in functions:
        for block in S.blocks(function):
            if block and all(map(S.is_comment, block)):
                block.append(S.Pass())  # a block of comments alone is no block
        for body in S.blocks(function, fields=("body",)):
            if not body:
                body.append(S.Pass())
    return "\n\n".join(S.to_source(f, comments).rstrip() + "\n" for f in functions)


def file_label(filename):
    """How a module's header names the file a function came from: its base name,
    or for derivo's own generated code the function it was generated as (the
    file name's counter would change with every run)."""
    if filename.startswith(GENERATED_PREFIX):
        return "derivo's generated " + filename[len(GENERATED_PREFIX):].rsplit(" #", 1)[0]
    return os.path.basename(filename)


def compile_source(source, label):
    """The code object of ``source``, under a file name of its own that tracebacks
    can show the lines of."""
    _FILE_COUNTER[0] += 1
    filename = "{}{} #{}>".format(GENERATED_PREFIX, label, _FILE_COUNTER[0])
    lines = source.splitlines(True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    return compile(source, filename, "exec")


def compile_with_prologue(function, source, prologue, first_parameter):
    """The code of a module defining ``function`` again, with ``first_parameter``
    before its parameters and the statements of ``prologue`` run first, and the
    globals that code needs besides ``function``'s; ``source`` is the text
    ``function`` was compiled from.

    The prologue stands on the ``def`` line and every other line keeps its
    place, so a traceback through the new function shows the generated source.
    A call of a ``math`` function reads it from a global of its own name
    (``math.cos(x)`` runs as ``cos(x)``): one lookup instead of two, which a
    gradient of 100 ns feels.  Only this copy, the one a Derivative runs, does
    so: the generated source, which nested derivatives and saved modules read,
    keeps ``math.cos``.
    """
    definition = next(node for node in ast.parse(source).body
                      if isinstance(node, ast.FunctionDef) and node.name == function.__name__)
    statements = ast.parse(prologue).body
    for statement in statements:
        for node in ast.walk(statement):
            if "lineno" in node._attributes:
                node.lineno = node.end_lineno = definition.lineno
                node.col_offset = definition.col_offset
                node.end_col_offset = definition.col_offset + len("def")
    definition.body[:0] = statements
    definition.args.args.insert(0, ast.arg(first_parameter, lineno=definition.lineno,
                                           col_offset=definition.col_offset))
    bindings = _math_by_name(definition, function.__globals__)
    code = compile(ast.Module([definition], []), function.__code__.co_filename, "exec")
    return code, bindings


def with_prologue(source, name, prologue):
    """``source`` with the statements ``prologue`` first in the body of its
    function ``name``, indented as that body."""
    definition = next(node for node in ast.parse(source).body
                      if isinstance(node, ast.FunctionDef) and node.name == name)
    first = definition.body[0]
    lines = source.splitlines(keepends=True)
    # a comment line may stand above the first statement: insert above those too
    line = first.lineno - 1
    while line > definition.lineno and lines[line - 1].lstrip().startswith("#"):
        line -= 1
    indent = " " * first.col_offset
    inserted = "".join(indent + text + "\n" for text in prologue.splitlines())
    return "".join(lines[:line]) + inserted + "".join(lines[line:])


def _math_by_name(definition, namespace):
    """Rewrite ``math.cos`` in ``definition`` as ``cos`` where the code uses no
    name ``cos`` and ``math`` is the global (not a parameter or local of that
    name); return the globals that makes ({"cos": math.cos})."""
    taken, local, places = set(), set(), []
    for node in S.walk(definition):  # one walk: the names, and where math.f stands
        if isinstance(node, ast.Name):
            taken.add(node.id)
            if not isinstance(node.ctx, ast.Load):
                local.add(node.id)
        elif isinstance(node, ast.arg):
            taken.add(node.arg)
            local.add(node.arg)
        for field in node._fields:
            value = getattr(node, field, None)
            if value.__class__ is list:
                places.extend((value, index) for index, item in enumerate(value)
                              if item.__class__ is ast.Attribute)
            elif value.__class__ is ast.Attribute:
                places.append((node, field))
    bindings = {}

    def by_name(node):
        function = getattr(math, node.attr, None)
        if function is not None and isinstance(node.value, ast.Name) and \
                node.value.id not in local and namespace.get(node.value.id) is math and \
                isinstance(node.ctx, ast.Load) and callable(function) and \
                node.attr not in taken:
            bindings[node.attr] = function
            return ast.copy_location(ast.Name(node.attr, ast.Load()), node)
        return None

    for holder, place in places:
        if holder.__class__ is list:
            holder[place] = by_name(holder[place]) or holder[place]
        else:
            setattr(holder, place, by_name(getattr(holder, place)) or getattr(holder, place))
    return bindings


def names_used(code):
    """Every name ``code`` and the functions it defines use."""
    names = {*code.co_varnames, *code.co_names, *code.co_cellvars, *code.co_freevars}
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= names_used(constant)
    return names


def compile_module(source, namespace, label):
    """Execute ``source`` in a copy of ``namespace``; return the namespace."""
    scope = dict(namespace)
    exec(compile_source(source, label), scope)
    return scope


#: An array of more elements than this is saved beside the module, not in it.
LARGE_ARRAY = 1000


def module_text(source, namespace, header, data=None):
    """A standalone module: ``header`` docstring, the imports and definitions the
    generated functions need, then ``source``, then the derivo helpers it calls.
    An array of more than LARGE_ARRAY elements goes into ``data`` (name ->
    array), which the module loads from the ``.npz`` file beside it, when
    ``data`` is a dict; it is written out in the module otherwise."""
    imports, definitions, helpers = [], [], {}
    # a helper bound for code a later pass rewrote (add_at, say) is not imported
    used = {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)}
    for name in sorted(set(namespace) & used):
        obj = namespace[name]
        if isinstance(obj, types.ModuleType):
            if obj.__name__ == name:
                imports.append("import {}".format(name))
            else:
                imports.append("import {} as {}".format(obj.__name__, name))
        elif _is_literal(obj):
            definitions.append("{} = {!r}".format(name, obj))
        elif isinstance(obj, np.ndarray):
            imports.append("import numpy")
            if data is not None and obj.size > LARGE_ARRAY and not obj.dtype.hasobject:
                data[name] = obj
                definitions.append("{} = derivo_data[{!r}]".format(name, name))
            else:
                definitions.append(_array_definition(name, obj))
        elif getattr(obj, "__module__", None) in HELPER_MODULES and \
                getattr(obj, "__name__", None) == name:
            helpers[name] = obj.__module__
        elif _attribute_path(obj) is not None:  # Model.predict, f.__wrapped__
            imports.append("import {}".format(obj.__module__))
            definitions.append("{} = {}".format(name, _attribute_path(obj)))
        else:
            line = _import_line(name, obj)
            if line is None:
                raise DerivoError("cannot save the derivative as a module: it uses {!r} "
                                  "({}), which is neither a literal nor importable; bind it "
                                  "at the top level of a module, or make it a parameter".format(
                                      name, " ".join([type(obj).__name__, *filter(None, [
                                          getattr(obj, "__qualname__", None)])])),
                                  construct=name)
            imports.append(line)
    others = {n: v for n, v in namespace.items() if n in used and n not in helpers}
    copied = helper_sources(helpers, others, set(_merged_imports(imports)))
    if copied is None:  # a helper's own names clash with the module's: import them
        imports += ["from {} import {}".format(module, name) for name, module in helpers.items()]
    if data:
        imports.append("import os")
        definitions.insert(0, "derivo_data = numpy.load(os.path.splitext(__file__)[0] + "
                              "\".npz\")  # the arrays too large to write here")
    parts = ['"""{}"""'.format(header)]
    if imports:
        parts.append("\n".join(_merged_imports(imports)))
    if definitions:
        parts.append("\n".join(definitions))
    parts.append(source.rstrip())
    if copied:
        parts.append("# derivo's runtime helpers this module calls, copied from derivo {} so "
                     "that it\n# runs without derivo installed\n\n{}".format(VERSION, copied))
    return "\n\n".join(parts) + "\n"


#: The modules of derivo whose functions generated code calls at run time.
HELPER_MODULES = ("derivo.trees", "derivo.runtime", "derivo.adjoints", "derivo.checkpoints",
                  "derivo.linalg_adjoints")
VERSION = importlib.import_module("derivo").__version__

_ERRORS_FALLBACK = """try:
    from derivo import DerivoError
except ImportError:
    class DerivoError(ValueError):
        \"\"\"What derivo raises; here without derivo.\"\"\"
"""


def helper_sources(helpers, namespace, present=()):
    """The source of the top-level statements of derivo's helper modules that the
    ``helpers`` (name -> module name) need: their definitions and what those
    read, imports included (but those in ``present``, the module's own import
    lines), in the modules' order.  None when one of those names means
    something else in ``namespace``, the module's other names."""
    if not helpers:
        return ""
    wanted = {module: set() for module in HELPER_MODULES}
    for name, module in helpers.items():
        wanted[module].add(name)
    chunks = []
    for module in reversed(HELPER_MODULES):  # a later one imports from an earlier one
        tree, text = _helper_module_tree(module)
        values = vars(importlib.import_module(module))
        for stmt in script.needed_statements(tree, wanted[module]):
            if isinstance(stmt, ast.ImportFrom) and stmt.level:  # derivo's own modules
                if stmt.module == "errors":
                    chunks.append((module, _ERRORS_FALLBACK.rstrip()))
                else:
                    wanted["derivo." + stmt.module] |= {a.asname or a.name for a in stmt.names}
                continue
            bound = script.bound_names(stmt)
            if any(namespace[b] is not values.get(b) for b in bound if b in namespace):
                return None
            chunks.append((module, ast.get_source_segment(text, stmt)))
    order = {module: i for i, module in enumerate(HELPER_MODULES)}
    chunks.sort(key=lambda chunk: order[chunk[0]])
    codes = list(dict.fromkeys(code for _, code in chunks))
    is_import = [code.startswith(("import ", "from ")) for code in codes]
    imports = sorted(code for code, imported in zip(codes, is_import)
                     if imported and code not in present)
    rest = [code for code, imported in zip(codes, is_import) if not imported]
    return "\n\n\n".join(["\n".join(imports)] + rest if imports else rest)


def _helper_module_tree(module):
    path = importlib.import_module(module).__file__
    with open(path, encoding="utf-8") as stream:
        text = stream.read()
    return ast.parse(text), text


def _array_definition(name, array):
    """``name = numpy.array(...)`` that remakes ``array``, dtype included (dates and
    times as their integer counts, viewed as the dtype)."""
    if array.dtype.kind in "Mm":
        return "{} = numpy.array({!r}, dtype=numpy.int64).view(numpy.dtype({!r}))".format(
            name, array.view(np.int64).tolist(), array.dtype.str)
    items = array.tolist()
    if array.dtype.hasobject and not _is_literal(items):
        raise DerivoError("cannot save the derivative as a module: it reads {!r}, an array of "
                          "Python objects that cannot be written as a literal; give it to the "
                          "function as an argument".format(name))
    return "{} = numpy.array({!r}, dtype=numpy.dtype({!r}))".format(
        name, items, array.dtype.str)


def _merged_imports(lines):
    """Sorted import lines, one ``from math import cos, sin`` per module."""
    names, others = {}, set()
    for line in lines:
        words = line.split()
        if words[0] == "from" and len(words) == 4:
            names.setdefault(words[1], set()).add(words[3])
        else:
            others.add(line)
    for module, imported in names.items():
        head, imported = "from {} import ".format(module), ", ".join(sorted(imported))
        if len(head + imported) <= 99:
            others.add(head + imported)
        else:
            others.add(textwrap.fill(imported, 98, initial_indent=head + "(",
                                     subsequent_indent=" " * len(head + "(")) + ")")
    return sorted(others)


def _is_literal(obj):
    """Whether ``repr(obj)`` reads back as an equal value."""
    try:
        return type(obj) in (int, float, str, bool, type(None), tuple, list, dict) and \
            ast.literal_eval(repr(obj)) == obj
    except (ValueError, SyntaxError):
        return False


def _import_line(name, obj):
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if qualname is None and not isinstance(obj, type):
        # an instance its type's module defines under this name (scipy.stats.norm)
        module, qualname = type(obj).__module__, name
    if module and qualname and "." not in qualname and "<" not in qualname:
        try:
            found = getattr(importlib.import_module(module), qualname, None)
        except ImportError:
            found = None
        if found is obj and module != "__main__":
            return _from_import(module, qualname, name)
    # a value a module binds at its top level (SC = make_scale(0.7)), under the name
    # the code uses if it binds it so
    held = vars(sys.modules.get(module)) if module in sys.modules and module != "__main__" \
        else {}
    bound = [n for n, value in held.items() if value is obj and not n.startswith("_")]
    if bound:
        return _from_import(module, name if name in bound else bound[0], name)
    return None


def _attribute_path(obj):
    """``module.Class.method`` for a function a class of an importable module
    defines (``__qualname__`` ``Class.method``), ``module.f.__wrapped__`` for one
    that what the module binds to its name wraps (a decorator's functools.wraps
    or update_wrapper); else None."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", "")
    if not isinstance(obj, types.FunctionType) or "<" in qualname or \
            module not in sys.modules or module == "__main__":
        return None
    found = sys.modules[module]
    for step in qualname.split("."):
        found = getattr(found, step, None)
    path = "{}.{}".format(module, qualname)
    if found is obj:
        return path if "." in qualname else None  # (a top-level one is imported)
    return path + ".__wrapped__" if getattr(found, "__wrapped__", None) is obj else None


def _from_import(module, found, name):
    """The import of ``module``'s ``found`` under ``name``."""
    if found == name:
        return "from {} import {}".format(module, name)
    return "from {} import {} as {}".format(module, found, name)
