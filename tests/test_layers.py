"""The direction of imports inside derivo is fixed: leaves (errors, the tree
helpers, the runtime and the rule tables), then the normal form, analysis, the
modes, emitting, and the API on top.  A module imports only modules listed
before it in LAYERS (a package, its own submodules too); nothing in derivo
imports back up the pipeline."""

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "src" / "derivo"

LAYERS = [
    ("leaves", ["errors", "syntax", "names", "script", "trees", "runtime", "adjoints",
                "checkpoints", "numba_checkpoints", "linalg_adjoints", "rules", "rules.runtime", "rules.builtins",
                "rules.numpy", "rules.linalg", "rules.fft", "rules.scipy_special",
                "rules.scipy_stats", "rules.scipy_signal", "rules.scipy", "rules.tangents", "rules.__main__"]),
    ("normal form", ["contexts", "partials", "lift", "factories", "parse", "form", "dataflow",
                     "memory", "callees", "fence", "dispatch", "unzip", "ssa", "outline",
                     "inline"]),
    ("analysis", ["statements", "activity", "indexing", "kinds", "plans", "saving", "writes",
                  "analyze"]),
    ("modes", ["optimize", "accumulate", "item_adjoints", "forward", "residuals", "tape",
               "primal", "reverse"]),
    ("emit", ["codegen", "numba_cache", "numba_backend", "save", "display"]),
    ("API", ["cache", "specialise", "transform", "graph", "api", "jacobians", "elementwise", "integrate",
             "check", "cli", "__init__", "__main__"]),
]
ORDER = [module for _, modules in LAYERS for module in modules]


def module_name(path):
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def imported_modules(path):
    """The derivo modules ``path`` imports; ``from . import __version__`` reads
    the package's version string, which derivo/__init__.py sets before it
    imports anything."""
    package = list(path.relative_to(PACKAGE).parent.parts)
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        base = package[:len(package) - (node.level - 1)]
        if node.module:
            found.add(".".join(base + node.module.split(".")))
        else:
            for alias in node.names:  # a submodule, or a name the package defines
                if alias.name == "__version__":
                    continue
                submodule = ".".join(base + [alias.name])
                found.add(submodule if submodule in ORDER else ".".join(base))
    return {module or "__init__" for module in found}


def test_every_module_has_a_layer():
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    assert modules == set(ORDER), modules ^ set(ORDER)


def test_imports_go_down_the_layers_only():
    wrong = []
    for path in PACKAGE.rglob("*.py"):
        importer = module_name(path)
        for imported in imported_modules(path):
            own_submodule = imported.startswith(importer + ".")  # rules registers its tables
            if not own_submodule and ORDER.index(imported) >= ORDER.index(importer):
                wrong.append("{} imports {}".format(importer, imported))
    assert not wrong, wrong
