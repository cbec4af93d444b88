"""derivo's error hierarchy: every refusal names the construct and the user's file:line:col."""

import linecache
import re
import sys

#: {file name of generated code: {generated function name: (the file of the user's
#: function it was made from, the line of its ``def``)}}, filled as code is compiled
GENERATED_ORIGINS = {}

#: how generated code points back at the user's line (see reverse.Sweep.commented)
_LINE_COMMENT = re.compile(r"\s*# line (\d+): ")
_DEFINITION = re.compile(r"def (\w+)\(")
#: modules whose errors are about the call or the transformation, not about a
#: line of the user's that generated code runs: their raisers locate them
_LOCATED_BY_RAISER = ("derivo.api", "derivo.jacobians", "derivo.transform")


class DerivoError(Exception):
    """Something derivo cannot differentiate, or a call that makes no sense.

    ``str(err)`` is one line: ``file:line:col: message``.  The parts are kept as
    attributes so the CLI and tests can read them.
    """

    def __init__(self, message, filename=None, lineno=None, col=None, construct=None):
        if filename is None:  # raised by derivo's code that generated code calls
            # (or by generated code itself, which may say the line and column)
            filename, *found = _running_user_line()
            lineno, col = (lineno, col) if lineno is not None else found
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


def _running_user_line():
    """(file, line, col) of the user's line whose generated code runs now, in the
    innermost frame of generated code; Nones outside generated code."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_globals.get("__name__") in _LOCATED_BY_RAISER:
            break
        found = user_line(frame.f_code.co_filename, frame.f_lineno)
        if found is not None:
            return found
        frame = frame.f_back
    return None, None, None


def user_line(filename, lineno):
    """(file, line, col) of the user's line that line ``lineno`` of the generated
    code in ``filename`` comes from: the nearest ``# line N:`` comment above it in
    its function, else the user's ``def``, followed through code derivo made from
    code it generated (a second derivative's); None if derivo did not generate it."""
    functions = GENERATED_ORIGINS.get(filename)
    if not functions:
        return None
    commented = None
    for text in reversed(linecache.getlines(filename)[:lineno]):
        comment = _LINE_COMMENT.match(text)
        if comment and commented is None:
            commented = int(comment.group(1))
        definition = _DEFINITION.match(text)
        if definition:
            origin = functions.get(definition.group(1))
            if origin is None:
                return None
            user_file, def_line = origin
            line = commented or def_line
            if user_file in GENERATED_ORIGINS:
                return user_line(user_file, line) or (user_file, line, None)
            text = linecache.getline(user_file, line)
            return user_file, line, len(text) - len(text.lstrip())
    return None


class UnsupportedSyntax(DerivoError):
    """A Python construct outside the subset derivo differentiates."""


class NoDerivativeRule(DerivoError):
    """A differentiated value flows into a function derivo has no rule for."""


class SourceUnavailable(DerivoError):
    """The function's source cannot be found (REPL, builtins, C extensions)."""
