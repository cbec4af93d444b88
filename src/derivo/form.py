"""derivo's statement form, declared: its grammar, the annotations stages leave
on its nodes, and a validator.

``ssa`` produces the form, ``inline`` and ``analyze`` keep it; every later
stage reads it.  After ``ssa`` a function body obeys this grammar:

    body   := block 'return' ATOM | 'return' (ATOM, ...)      -- exactly one, last
    block  := stmt* [jump]
    jump   := 'break' | 'continue' | 'raise' ...               -- last in its block only
    stmt   := NAME '=' expr                                    -- one target
            | NAME '[' expr ']' '=' expr                       -- an in-place write
            | (NAME, ...) '=' expr                             -- unpacking a call's result
            | 'if' expr ':' block 'else' ':' block
            | 'for' NAME 'in' expr ':' block                   -- no else
            | 'while' expr ':' block                           -- no else
            | NAME '.append(' ATOM ')'                         -- growing a list
            | expr                                             -- kept for its side effect
            | 'assert' ... | 'pass'

(see ``ssa``'s docstring for what each part holds).  The stages leave facts on
nodes; each is declared once in :data:`ANNOTATIONS`, read with
:func:`annotation`, and :func:`validate` refuses a node carrying one that is not
declared.
"""

import os

from . import syntax as S

#: name -> (the default when absent, what it says, the stage that sets it)
ANNOTATIONS = {
    "augmented": (False, "an assignment ssa made of x += e or x[i] += e: in place for an "
                  "array", "ssa"),
    "opaque": (False, "an assignment calling a non-primitive", "ssa"),
    "owns": (False, "a written array copied after this assignment", "ssa"),
    "owned": ((), "the parameters copied on entry (a FunctionDef)", "ssa"),
    "apart": ((), "(parameter, other, message) the entry checks share no memory", "ssa"),
    "versions": ((), "(name ssa made, how the user wrote what it holds) pairs, for "
                 "messages (a FunctionDef)", "ssa"),
    "trips": (None, "the name counting a loop's trips", "ssa"),
    "iterable": (None, "what a for loop iterates over", "ssa"),
    "user_function": (None, "the user function (or outline.Loop) a call calls",
                      "ssa, outline, transform"),
    "returns": (None, "the positions of the arguments a call returns, or copies of them "
                "(an outlined loop's state)", "outline"),
    "item": (False, "row = X[i] made of for row in X: read again, not saved", "analyze"),
    "row": (None, "a loop over values: its row = X[i], the first statement", "analyze"),
}

#: Statement kinds the form allows in a block, besides jumps
_STATEMENTS = (S.Assign, S.If, S.For, S.While, S.Expr, S.gast.Assert, S.Pass)
_JUMPS = (S.Break, S.Continue, S.gast.Raise)


#: Whether the stages validate the form they leave (tests turn it on, as does
#: the environment variable DERIVO_CHECK_FORM=1)
CHECKING = os.environ.get("DERIVO_CHECK_FORM", "") not in ("", "0")


def check(tree, stage):
    """:func:`validate` ``tree`` after ``stage`` when :data:`CHECKING`."""
    if CHECKING:
        validate(tree, stage)


def annotation(node, name):
    """The annotation ``name`` of ``node``, or its declared default."""
    return getattr(node, name, ANNOTATIONS[name][0])


class InvalidForm(AssertionError):
    """A tree that breaks the statement form's grammar: a bug in a stage."""


def validate(tree, stage):
    """Check that the FunctionDef ``tree`` is in statement form after ``stage``
    (a word for the message); raise :class:`InvalidForm` naming the rule
    broken."""
    def fail(node, rule):
        raise InvalidForm("after {}: line {}: {}: {}".format(
            stage, getattr(node, "lineno", "?"), rule, S.to_source(node).strip()[:200]))

    *body, final = tree.body
    if not isinstance(final, S.Return) or final.value is None:
        fail(final, "the body must end with its one return")
    if sum(isinstance(n, S.Return) for n in S.walk(tree)) != 1:
        fail(tree, "exactly one return")
    _atoms(final.value.elts if isinstance(final.value, S.Tuple) else [final.value],
           final, fail)
    _block(body, fail)
    declared = set(ANNOTATIONS)
    for node in S.walk(tree):
        extra = set(vars(node)) - set(node._fields) - set(node._attributes) - declared
        if extra:
            fail(node, "undeclared annotations {}".format(sorted(extra)))


def _atoms(values, stmt, fail):
    for value in values:
        if not isinstance(value, (S.Name, S.Constant)):
            fail(stmt, "a result must be a name or a constant")


def _block(block, fail):
    for position, stmt in enumerate(block):
        if isinstance(stmt, _JUMPS):
            if position != len(block) - 1:
                fail(stmt, "a jump is the last statement of its block")
            continue
        if not isinstance(stmt, _STATEMENTS):
            fail(stmt, "not a statement of the form")
        if isinstance(stmt, S.Assign):
            _assignment(stmt, fail)
        elif isinstance(stmt, (S.For, S.While)):
            if stmt.orelse:
                fail(stmt, "a loop has no else")
            if isinstance(stmt, S.For) and not isinstance(stmt.target, S.Name):
                fail(stmt, "a for loop's target is one name")
            _block(stmt.body, fail)
        elif isinstance(stmt, S.If):
            _block(stmt.body, fail)
            _block(stmt.orelse, fail)


def _assignment(stmt, fail):
    if len(stmt.targets) != 1:
        fail(stmt, "an assignment has one target")
    target = stmt.targets[0]
    if isinstance(target, S.Subscript):
        if not isinstance(target.value, S.Name):
            fail(stmt, "an in-place write is into a name")
    elif isinstance(target, S.Tuple):
        if not all(isinstance(e, S.Name) for e in target.elts):
            fail(stmt, "an unpacking assigns names")
    elif not isinstance(target, S.Name):
        fail(stmt, "an assignment's target is a name, an item of one or names")
