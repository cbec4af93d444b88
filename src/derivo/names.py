"""Deterministic, collision-free names for everything derivo adds to a function."""

from . import syntax as S


class Namer:
    """Hands out names that clash with nothing the user wrote, in a fixed order.

    The same input always yields the same names, so generated code is
    byte-identical from run to run.
    """

    def __init__(self, taken=()):
        self.taken = set(taken)

    @property
    def taken(self):
        """The names in use: added to, or replaced whole (to hand out again the
        names an attempt handed out)."""
        return self._taken

    @taken.setter
    def taken(self, names):
        self._taken = names
        # {(base, numbered): the counter last handed out}: while names are only
        # added, every counter below it is still taken, and the search starts there
        self._counters = {}

    def fresh(self, base):
        """``base`` if free, else ``base1``, ``base2``, ..."""
        return self._first_free(base, False)

    def numbered(self, base):
        """``base1``, ``base2``, ...: for temporaries that only make sense numbered."""
        return self._first_free(base, True)

    def _first_free(self, base, numbered):
        counter = self._counters.get((base, numbered), 1 if numbered else 0)
        candidate = "{}{}".format(base, counter) if counter else base
        while candidate in self.taken:
            counter += 1
            candidate = "{}{}".format(base, counter)
        self._counters[base, numbered] = counter
        self.taken.add(candidate)
        return candidate


def identifier(name):
    """A name a generated function may take after ``name``, a function's
    ``__name__`` (``<lambda>`` gives ``lambda_``)."""
    if name.isidentifier():
        return name
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in name).strip("_") + "_"
    return cleaned if cleaned.isidentifier() else "function"


def names_in(tree):
    """Every identifier appearing in a tree (names, parameters, attributes excluded)."""
    found = set()
    for node in S.walk(tree):
        if isinstance(node, S.Name):
            found.add(node.id)
        elif isinstance(node, S.FunctionDef):
            found.add(node.name)
    return found
