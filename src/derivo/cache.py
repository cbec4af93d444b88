"""Stage 7: transform each (function, options) once.

The key holds the function's code object, the identities of the globals and
closure values it names and of its defaults, and the options; redefining the function (a new code
object) or rebinding a global it calls gives a new entry.  An entry also checks,
when found, that the functions it called still see the same globals.  A lock makes threads
that ask for the same derivative at once share one transformation.
"""

import threading
from collections import namedtuple

CacheInfo = namedtuple("CacheInfo", "hits misses size")

_entries = {}
_lock = threading.RLock()
_stats = {"hits": 0, "misses": 0}


def key_of(func, *options):
    code = func.__code__
    names = tuple(id(func.__globals__.get(n)) for n in code.co_names)
    cells = tuple(id(_cell_contents(c)) for c in func.__closure__ or ())
    # the generated code holds the defaults' values (see parse): make(2.0) and
    # make(3.0) share a code object
    defaults = tuple(map(id, func.__defaults__ or ())) + tuple(
        (name, id(value)) for name, value in sorted((func.__kwdefaults__ or {}).items()))
    return (code, names, cells, defaults, id(func.__globals__)) + options


def _cell_contents(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return None


def lookup(key, build, valid=lambda value: True):
    """The cached value for ``key``, calling ``build()`` on a miss or when
    ``valid(value)`` says the cached value went stale."""
    with _lock:
        if key in _entries and valid(_entries[key]):
            _stats["hits"] += 1
            return _entries[key]
        _stats["misses"] += 1
        value = _entries[key] = build()
        return value


def info():
    """(hits, misses, size) of the transformation cache."""
    with _lock:
        return CacheInfo(_stats["hits"], _stats["misses"], len(_entries))


def clear():
    with _lock:
        _entries.clear()
