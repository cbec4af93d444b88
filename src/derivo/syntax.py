"""The one place derivo touches gast and astor.

Every other module builds and inspects trees through this module, so a change
in gast's node classes (which broke tangent) or in astor touches one file.
Trees are gast trees; node classes are re-exported for ``isinstance`` checks.
"""

import ast
import builtins
import collections
import contextlib
import math
import re
import sys

import astor
import gast
from gast import (  # noqa: F401  (re-exported node classes)
    Add, And, Assign, Attribute, AugAssign, BinOp, BitAnd, BitOr, BitXor, BoolOp,
    Break, Call, Compare, Constant, Continue, Div, Eq, Expr, FloorDiv, For, MatMult,
    FunctionDef, Gt, GtE, If, IfExp, In, Is, IsNot, List, Load, LShift, Lt, LtE,
    Mod, Mult, Name, Not, NotEq, NotIn, Or, Pass, Pow, Return, RShift, Slice,
    Starred, Store, Sub, Subscript, Tuple, UAdd, UnaryOp, USub, While, keyword,
)

AST = gast.AST
NodeTransformer = gast.NodeTransformer
copy_location = gast.copy_location


#: {id(tree): every node of tree in walk's order}, for the trees of an
#: :func:`unchanging` block
_UNCHANGING = {}


@contextlib.contextmanager
def unchanging(tree):
    """A block that does not change ``tree``'s structure (an analysis): walking
    the whole tree in it reuses one list of its nodes, found once."""
    if id(tree) in _UNCHANGING:
        yield
        return
    _UNCHANGING[id(tree)] = list(walk(tree))
    try:
        yield
    finally:
        nodes = _UNCHANGING.pop(id(tree))
    # (the block's promise: had it rewritten the tree, its walks read stale nodes)
    assert [id(n) for n in walk(tree)] == [id(n) for n in nodes], \
        "a block declared unchanging changed the tree it walks"


def walk(tree, into=AST):
    """Every node of a tree, or of each tree in a list of trees, in ``ast.walk``'s
    order (breadth first, one tree after the other); ``into``: the classes of
    the nodes below the roots it goes into (all by default)."""
    if into is AST and id(tree) in _UNCHANGING:
        yield from _UNCHANGING[id(tree)]
        return
    for root in tree if isinstance(tree, list) else [tree]:
        # ast.walk's loop without its two generators per node: walking is most of
        # the time derivo takes to transform a function
        todo = collections.deque((root,))
        while todo:
            node = todo.popleft()
            for field in node._fields:
                value = getattr(node, field, None)
                if isinstance(value, into):
                    todo.append(value)
                elif value.__class__ is list:
                    todo.extend([item for item in value if isinstance(item, into)])
            yield node


#: The nodes that may hold a block of statements: no expression holds one
_BLOCK_HOLDERS = (gast.stmt, gast.excepthandler, gast.match_case)


def root_name(node):
    """The Name ``node`` is, or whose item, attribute or view it takes (``a`` of
    ``a[:1]`` or ``a.T``), or None."""
    while isinstance(node, (gast.Subscript, gast.Attribute)):
        node = node.value
    return node if isinstance(node, gast.Name) else None


def is_derivo(obj):
    """Whether ``obj`` (a function, a class) is part of derivo rather than the user's."""
    return (getattr(obj, "__module__", None) or "").partition(".")[0] == "derivo"


def stored_names(tree):
    """Names a tree (or a list of trees) assigns: targets of assignments and loops."""
    return {n.id for n in walk(tree) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def param_names(function):
    """The names of a FunctionDef's parameters, in order (not ``*args``, ``**kwargs``)."""
    args = function.args
    return [a.id for a in args.posonlyargs + args.args + args.kwonlyargs]


def loaded_names(tree):
    """Names a tree (or a list of trees) reads."""
    return {n.id for n in walk(tree) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}


def load_counts(tree):
    """{name: how many times ``tree`` reads it}."""
    return name_counts(tree)[1]


def store_counts(tree):
    """{name: how many times ``tree`` assigns it} (parameters count once)."""
    return name_counts(tree)[0]


def name_counts(tree):
    """(:func:`store_counts`, :func:`load_counts`) of ``tree``, from one walk."""
    stores, loads = collections.Counter(), collections.Counter()
    for node in walk(tree):
        if isinstance(node, gast.Name):
            counts = loads if isinstance(node.ctx, gast.Load) else stores
            counts[node.id] += 1
    return stores, loads


def single_target(stmt):
    """The name ``stmt`` assigns when it is ``name = e``, else None."""
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and \
            isinstance(stmt.targets[0], gast.Name):
        return stmt.targets[0].id
    return None


def calls_builtin(node, builtin, namespace):
    """Whether ``node``, in code that reads the globals ``namespace``, calls
    ``builtin`` with positional arguments only."""
    return isinstance(node, Call) and isinstance(node.func, Name) and \
        namespace.get(node.func.id, getattr(builtins, node.func.id, None)) is builtin and \
        bool(node.args) and not node.keywords


def values_assigned_once(tree):
    """{name: e} for each name ``tree`` assigns once, by ``name = e``."""
    counts = store_counts(tree)
    return {stmt.targets[0].id: stmt.value for stmt in walk(tree)
            if single_target(stmt) and counts[stmt.targets[0].id] == 1}


def statements(tree):
    """Every statement of a tree (or list of trees), in :func:`walk`'s order;
    the expressions, which hold no statement, are not walked."""
    return (node for node in walk(tree, _BLOCK_HOLDERS) if isinstance(node, gast.stmt))


def blocks(tree, fields=("body", "orelse")):
    """Every statement list in a tree (bodies and else-branches, or the ``fields``
    given), nested ones included."""
    for node in walk(tree, _BLOCK_HOLDERS):
        for field in fields:
            block = getattr(node, field, None)
            if isinstance(block, list):
                yield block


#: How deep derivo's passes may recurse: gast, astor and derivo's visitors take a
#: few frames per level of an expression, and a tangent nests deeper than its
#: expression, so Python's default of 1000 stopped at expressions about 140 deep,
#: which Python compiles (its parser takes 200 parentheses)
RECURSION_LIMIT = 20000


@contextlib.contextmanager
def deep_recursion():
    """Let the code in the block recurse to :data:`RECURSION_LIMIT`."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def deepest(tree):
    """The statement of ``tree`` (a gast or ast tree) holding its most deeply
    nested expression, found without recursion."""
    best, best_depth = tree, -1
    todo = [(tree, 0, tree)]
    while todo:
        node, depth, statement = todo.pop()
        if isinstance(node, (ast.stmt, gast.stmt)):
            statement, depth = node, 0
        elif depth > best_depth:
            best, best_depth = statement, depth
        todo.extend((child, depth + 1, statement) for child in ast.iter_child_nodes(node))
    return best


def parse_function(source):
    """The FunctionDef of ``source``, which holds exactly one top-level def."""
    return gast.parse(source).body[0]


def from_ast(node):
    """The gast tree of a standard-library ``ast`` tree."""
    return gast.ast_to_gast(node)


def parse_expr(text):
    return gast.parse(text, mode="eval").body


def deepcopy(node):
    """A copy of a tree (or list of trees) that keeps source positions."""
    if isinstance(node, list):
        return [deepcopy(n) for n in node]
    if not isinstance(node, gast.AST):
        return node
    new = node.__class__.__new__(node.__class__)
    # Positions, and the annotations derivo's stages attach (``user_function``,
    # ``trips``, ...), travel with the copy; the fields are copied.
    attributes = new.__dict__
    attributes.update(node.__dict__)
    for field in node._fields:
        value = attributes.get(field)
        if value.__class__ is list or isinstance(value, gast.AST):
            attributes[field] = deepcopy(value)
    return new


# --- builders -------------------------------------------------------------

def name(ident):
    return gast.Name(id=ident, ctx=gast.Load(), annotation=None, type_comment=None)


def store(ident):
    return gast.Name(id=ident, ctx=gast.Store(), annotation=None, type_comment=None)


def param(ident):
    return gast.Name(id=ident, ctx=gast.Param(), annotation=None, type_comment=None)


#: the types of the values a constant node holds and generated code prints as literals
LITERAL_TYPES = (int, float, complex, bool, str, type(None))


def const(value):
    return gast.Constant(value=value, kind=None)


def assign(target, value):
    """``target = value``; target is a name or an already built target node."""
    target = store(target) if isinstance(target, str) else target
    return gast.Assign(targets=[target], value=value, type_comment=None)


def aug_add(target, value):
    return gast.AugAssign(target=store(target), op=gast.Add(), value=value)


def effect(stmt):
    """``stmt`` in generated code, marked to be kept where it is, its target read
    or not: derivo.optimize drops or moves other assignments nothing reads."""
    stmt.effects = True
    return stmt


def call(func, *args, keywords=()):
    func = name(func) if isinstance(func, str) else func
    return gast.Call(func=func, args=list(args), keywords=list(keywords))


def attribute(value, attr):
    value = name(value) if isinstance(value, str) else value
    return gast.Attribute(value=value, attr=attr, ctx=gast.Load())


def binop(left, op, right):
    return gast.BinOp(left=left, op=op, right=right)


def neg(operand):
    return gast.UnaryOp(op=gast.USub(), operand=operand)


def not_(operand):
    return gast.UnaryOp(op=gast.Not(), operand=operand)


def tuple_(elts, store_ctx=False):
    return gast.Tuple(elts=list(elts), ctx=gast.Store() if store_ctx else gast.Load())


def list_(elts):
    return gast.List(elts=list(elts), ctx=gast.Load())


def compare_is_none(operand):
    """``operand is None``; ``operand`` a name or a node."""
    operand = name(operand) if isinstance(operand, str) else operand
    return gast.Compare(left=operand, ops=[gast.Is()], comparators=[const(None)])


def subscript(value, index):
    return gast.Subscript(value=value, slice=index, ctx=gast.Load())


def if_(test, body, orelse=()):
    return gast.If(test=test, body=list(body), orelse=list(orelse))


def for_(target, iter_, body):
    target = store(target) if isinstance(target, str) else target
    return gast.For(target=target, iter=iter_, body=list(body), orelse=[],
                    type_comment=None)


def while_(test, body):
    return gast.While(test=test, body=list(body), orelse=[])


def return_(value):
    return gast.Return(value=value)


def function(fname, params, body, defaults=(), kwonly=(), kw_defaults=()):
    args = gast.arguments(
        args=[param(p) for p in params], posonlyargs=[], vararg=None,
        kwonlyargs=[param(p) for p in kwonly], kw_defaults=list(kw_defaults),
        kwarg=None, defaults=list(defaults))
    return gast.FunctionDef(name=fname, args=args, body=list(body),
                            decorator_list=[], returns=None, type_comment=None,
                            type_params=[])


# Comments cannot live in an AST, so a comment travels as a marker statement
# holding an index into a side table and becomes a real comment in to_source.
_COMMENT = "__derivo_comment_{}__"
_MARKER = re.compile(r"^(\s*)(?:'|\"|\"\"\")__derivo_comment_(\d+)__(?:'|\"|\"\"\")\s*$")


class Comments:
    """Collects comment texts for one generated module."""

    def __init__(self):
        self.texts = []

    def statement(self, text):
        self.texts.append(text)
        return gast.Expr(value=const(_COMMENT.format(len(self.texts) - 1)))


def is_comment(stmt):
    return (isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Constant)
            and isinstance(stmt.value.value, str)
            and stmt.value.value.startswith("__derivo_comment_"))


def to_source(node, comments=None):
    """Python source for a gast tree, with comment markers turned into comments."""
    if isinstance(node, list):
        node = gast.Module(body=node, type_ignores=[])
    tree = _SignedLiterals().visit(gast.gast_to_ast(node))
    # astor wraps long lines at odd places (a lone ")" on the next line); keep them whole
    text = astor.to_source(tree, pretty_source="".join)
    if comments is None:
        return text
    lines = []
    for line in text.splitlines():
        match = _MARKER.match(line)
        if match:
            line = "{}# {}".format(match.group(1), comments.texts[int(match.group(2))])
        lines.append(line)
    return "\n".join(lines) + "\n"


class _SignedLiterals(ast.NodeTransformer):
    """A negative number is printed as the tree Python parses its text into,
    ``-(0.2)``: astor prints a constant as its repr, which is not one operand
    where an operator binds tighter than the sign (``(-0.2) ** 2`` printed as
    ``-0.2 ** 2``, ``(-2).real``)."""

    def visit_Constant(self, node):
        value = node.value
        if type(value) in (int, float) and math.copysign(1, value) < 0 or \
                type(value) is complex and value.real == 0 and math.copysign(1, value.imag) < 0:
            return ast.copy_location(ast.UnaryOp(op=ast.USub(), operand=ast.copy_location(
                ast.Constant(value=-value), node)), node)
        return node


def expr_source(node):
    """One-line source of an expression (for messages and comments)."""
    return to_source(gast.Expr(value=node)).strip()


def shape(node, memo=None):
    """A hashable key of an expression (or a list of them) that two expressions
    share exactly when :func:`expr_source` prints them alike, without printing:
    classes and fields, not positions nor load/store contexts; a constant by its
    type and repr, a negative number as the sign applied to its magnitude, as it
    is printed.  ``memo``: {id(node): key} reused across calls on one tree."""
    if node.__class__ is list:
        return tuple([shape(item, memo) for item in node])
    if not isinstance(node, gast.AST):
        return node
    if memo is not None and id(node) in memo:
        return memo[id(node)]
    if node.__class__ is gast.Constant:
        value = node.value
        if type(value) in (int, float) and math.copysign(1, value) < 0 or \
                type(value) is complex and value.real == 0 and math.copysign(1, value.imag) < 0:
            key = (gast.UnaryOp, (gast.USub,), (gast.Constant, type(value), repr(-value)))
        else:
            key = (gast.Constant, type(value), repr(value))
    elif isinstance(node, gast.expr_context):
        key = None
    else:
        key = (node.__class__, *[shape(getattr(node, field, None), memo)
                                 for field in node._fields])
    if memo is not None:
        memo[id(node)] = key
    return key


def compile_tree(tree, filename):
    """The code object of a module holding the gast statement ``tree``; its
    positions are the tree's (those of the user's file)."""
    module = ast.fix_missing_locations(gast.gast_to_ast(gast.Module(body=[tree],
                                                                     type_ignores=[])))
    return compile(module, filename, "exec")
