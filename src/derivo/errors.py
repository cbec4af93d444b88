"""derivo's error hierarchy: every refusal names the construct and the user's file:line:col."""


class DerivoError(Exception):
    """Something derivo cannot differentiate, or a call that makes no sense.

    ``str(err)`` is one line: ``file:line:col: message``.  The parts are kept as
    attributes so the CLI and tests can read them.
    """

    def __init__(self, message, filename=None, lineno=None, col=None, construct=None):
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.construct = construct
        super().__init__(self._render())

    def _render(self):
        if self.filename is None:
            return self.message
        where = [self.filename]
        if self.lineno is not None:
            where.append(str(self.lineno))
            if self.col is not None:
                where.append(str(self.col))
        return ":".join(where) + ": " + self.message


class UnsupportedSyntax(DerivoError):
    """A Python construct outside the subset derivo differentiates."""


class NoDerivativeRule(DerivoError):
    """A differentiated value flows into a function derivo has no rule for."""


class SourceUnavailable(DerivoError):
    """The function's source cannot be found (REPL, builtins, C extensions)."""
