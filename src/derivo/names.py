"""Deterministic, collision-free names for everything derivo adds to a function."""

from . import syntax as S


class Namer:
    """Hands out names that clash with nothing the user wrote, in a fixed order.

    The same input always yields the same names, so generated code is
    byte-identical from run to run.
    """

    def __init__(self, taken=()):
        self.taken = set(taken)

    def fresh(self, base):
        """``base`` if free, else ``base1``, ``base2``, ..."""
        candidate, counter = base, 0
        while candidate in self.taken:
            counter += 1
            candidate = "{}{}".format(base, counter)
        self.taken.add(candidate)
        return candidate

    def numbered(self, base):
        """``base1``, ``base2``, ...: for temporaries that only make sense numbered."""
        counter = 1
        while "{}{}".format(base, counter) in self.taken:
            counter += 1
        name = "{}{}".format(base, counter)
        self.taken.add(name)
        return name


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
