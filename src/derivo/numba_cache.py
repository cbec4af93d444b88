"""Where numba caches the compiled code of ``backend="numba"`` derivatives on disk.

numba's ``cache=True`` needs a function's source file: it keys its cache by the
file's name, size and time and the function's name and line, and it does not
look at the globals the function reads (numba compiles numbers as constants)
nor at the code of the functions it calls.  So the generated functions are
given a file of their own, named by a digest of everything their compiled
code depends on: their bytecode, the numbers and the code of the user
functions they read, derivo's numba backend and the versions of derivo,
numba and Python.  Whatever changes, the name changes, and numba compiles
again; the same derivative in a new process loads what was compiled before.

The files go under ``$DERIVO_CACHE_DIR`` (an empty value turns the cache off),
by default ``$XDG_CACHE_HOME/derivo/numba`` (``~/.cache/derivo/numba``).  A
value derivo cannot put into the digest (an array, an object) turns the cache
off for that derivative.
"""

import builtins
import functools
import hashlib
import inspect
import linecache
import marshal
import os
import sys
import types

from . import __version__

#: the types of values whose repr says all a compiled function sees of them
_LITERALS = (bool, int, float, complex, str, bytes, type(None))


def directory():
    """The directory the cached files go in (made if need be), or None when the
    cache is off or the directory cannot be written."""
    path = os.environ.get("DERIVO_CACHE_DIR")
    if path is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
            os.path.expanduser("~"), ".cache")
        path = os.path.join(base, "derivo", "numba")
    if not path:
        return None
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK) else None


def source_file(functions, namespace, numba_version):
    """The path of the file the generated ``functions`` (Python functions of one
    generated module) compile from with ``cache=True``, written if new, or None
    when something they read cannot be put into the digest."""
    where = directory()
    if where is None:
        return None
    digest = hashlib.sha256(repr((__version__, numba_version, sys.version)).encode())
    digest.update(_backend_source())
    generated = {f.__name__ for f in functions}
    for function in sorted(functions, key=lambda f: f.__name__):
        if getattr(function, "__closure__", None):
            return None  # what a cell holds is not in the digest
        digest.update(marshal.dumps(_anonymous(function.__code__)))
    for ident in sorted(namespace):
        if ident not in generated and not ident.startswith("__") and \
                not _digest_value(digest, ident, namespace[ident], set()):
            return None
    label = functions[0].__name__
    path = os.path.join(where, "{}_{}.py".format(label, digest.hexdigest()[:24]))
    if not os.path.exists(path):
        lines = linecache.getlines(functions[0].__code__.co_filename)
        temporary = "{}.{}.tmp".format(path, os.getpid())
        with open(temporary, "w") as out:
            out.write("".join(lines) or "# derivo's generated {}\n".format(label))
        os.replace(temporary, path)
    return path


def located(code, path):
    """``code`` (and the code objects in it) as compiled from the file ``path``."""
    return code.replace(co_filename=path, co_consts=tuple(
        located(c, path) if isinstance(c, types.CodeType) else c for c in code.co_consts))


def _anonymous(code):
    return located(code, "")


def _backend_source():
    """The source of the numba backend, whose rewrites and numba implementations
    the compiled code holds."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "numba_backend.py"), "rb") as source:
        return source.read()


@functools.lru_cache(maxsize=None)
def _module_source(name):
    """The source of the derivo module ``name``, as bytes."""
    with open(inspect.getsourcefile(sys.modules[name]), "rb") as source:
        return source.read()


def _digest_value(digest, ident, value, seen):
    """Add what compiled code sees of the global ``ident`` holding ``value`` to
    ``digest``; False for a value it cannot say."""
    digest.update(ident.encode() + b"\0")
    function = getattr(value, "py_func", value)  # (a numba dispatcher: its function)
    if isinstance(value, _LITERALS) or isinstance(value, tuple) and all(
            isinstance(v, _LITERALS) for v in value):
        digest.update(repr((type(value).__name__, value)).encode())
    elif inspect.ismodule(value):
        digest.update(b"module " + value.__name__.encode())
    elif isinstance(function, types.FunctionType) and \
            (function.__module__ or "").partition(".")[0] == "derivo":
        # (its module's source: a development checkout changes without a new version)
        digest.update(b"derivo " + function.__qualname__.encode())
        digest.update(_module_source(function.__module__))
    elif isinstance(function, types.FunctionType):
        return _digest_function(digest, function, seen)
    elif isinstance(value, (types.BuiltinFunctionType, type)) and \
            getattr(builtins, getattr(value, "__name__", ""), None) is value:
        digest.update(b"builtin " + value.__name__.encode())
    elif isinstance(value, types.BuiltinFunctionType) and value.__module__ in ("math", "cmath"):
        digest.update("{}.{}".format(value.__module__, value.__name__).encode())
    else:
        return False
    return True


def _digest_function(digest, function, seen):
    """A user function's code, and what it reads, into ``digest``."""
    if function in seen:
        return True
    seen.add(function)
    digest.update(marshal.dumps(_anonymous(function.__code__)))
    defaults = [("default {}".format(i), v) for i, v in enumerate(function.__defaults__ or ())]
    defaults += sorted((function.__kwdefaults__ or {}).items())
    cells = zip(function.__code__.co_freevars, function.__closure__ or ())
    reads = [(n, function.__globals__[n]) for n in function.__code__.co_names
             if n in function.__globals__]
    for ident, value in defaults + [(n, c.cell_contents) for n, c in cells] + reads:
        if not _digest_value(digest, ident, value, seen):
            return False
    return True
