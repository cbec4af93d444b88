"""The fence: the Python constructs derivo refuses, and why, in one table.

``ssa`` calls :func:`check_supported` before normalising a function, so every
refusal names the construct and points at the user's file, line and column.
"""

from . import syntax as S
from .errors import UnsupportedSyntax
from .parse import MISSING

# The fence: statements and expressions outside derivo's subset, and why.
REFUSED = {
    S.gast.Yield: "generators are not supported",
    S.gast.YieldFrom: "generators are not supported",
    S.gast.Await: "async code is not supported",
    S.gast.AsyncFunctionDef: "async functions are not supported",
    S.gast.AsyncFor: "async loops are not supported",
    S.gast.AsyncWith: "async code is not supported",
    S.gast.Global: "assigning module globals would make the derivative depend on hidden state",
    S.gast.Nonlocal: "assigning enclosing variables would make the derivative depend on hidden state",
    S.gast.Lambda: "lambdas inside a differentiated function are not supported; "
                   "define the function at module level",
    S.gast.FunctionDef: "nested functions are not supported; define the function at "
                        "module level",
    S.gast.ClassDef: "class definitions are not supported",
    S.gast.Delete: "'del' is not supported",
    S.gast.Import: "imports inside a differentiated function are not supported",
    S.gast.ImportFrom: "imports inside a differentiated function are not supported",
    S.gast.NamedExpr: "assignment expressions (:=) are not supported",
    # ssa lowers the others into loops (see ssa._lower_comprehensions)
    S.gast.ListComp: "a comprehension in a while test or under and, or, if-else is not "
                     "supported; compute it in a statement of its own",
    S.gast.SetComp: "set comprehensions are not supported; write a for loop",
    S.gast.DictComp: "a comprehension in a while test or under and, or, if-else is not "
                     "supported; compute it in a statement of its own",
    S.gast.GeneratorExp: "a generator expression is differentiated as the argument of sum, "
                         "min, max, any, all, list, tuple or sorted, outside a while test "
                         "and and, or, if-else; write a list comprehension instead",
    S.gast.Match: "'match' is not supported",
}
REFUSED_CALLS = {"exec", "eval", "globals", "locals", "vars", "setattr", "delattr"}

CONSTRUCT_NAMES = {
    S.gast.Yield: "yield", S.gast.YieldFrom: "yield from", S.gast.Await: "await",
    S.gast.AsyncFunctionDef: "async def", S.gast.AsyncFor: "async for",
    S.gast.AsyncWith: "async with", S.gast.Global: "global", S.gast.Nonlocal: "nonlocal",
    S.gast.Lambda: "lambda",
    S.gast.FunctionDef: "def", S.gast.ClassDef: "class", S.gast.Delete: "del",
    S.gast.Import: "import", S.gast.ImportFrom: "import", S.gast.NamedExpr: ":=",
    S.gast.ListComp: "list comprehension", S.gast.SetComp: "set comprehension",
    S.gast.DictComp: "dict comprehension", S.gast.GeneratorExp: "generator expression",
    S.gast.Match: "match",
}


def check_supported(parsed, tree):
    """Raise UnsupportedSyntax at the first construct derivo cannot differentiate."""
    unpacked = set()  # the ids of the f(*args) of calls (S.walk meets a call first)
    for node in S.walk(tree):
        if node is tree:
            if isinstance(tree, S.gast.AsyncFunctionDef):
                raise parsed.error(UnsupportedSyntax, tree, "cannot differentiate 'async def': "
                                   "async functions are not supported", "async def")
            if tree.args.vararg or tree.args.kwarg:
                raise parsed.error(UnsupportedSyntax, tree,
                                   "cannot differentiate '*args'/'**kwargs' parameters: "
                                   "name each parameter", "*args")
            continue
        kind = type(node)
        if kind in REFUSED:
            construct = CONSTRUCT_NAMES[kind]
            raise parsed.error(UnsupportedSyntax, node, "cannot differentiate {!r}: {}"
                               .format(construct, REFUSED[kind]), construct)
        if isinstance(node, (S.For, S.While)) and node.orelse:
            loop = "for" if isinstance(node, S.For) else "while"
            raise parsed.error(UnsupportedSyntax, node,
                               "cannot differentiate '{}...else': move the else block "
                               "after the loop with a flag".format(loop), loop + "-else")
        if isinstance(node, S.Call) and isinstance(node.func, S.Name) \
                and node.func.id in REFUSED_CALLS:
            raise parsed.error(UnsupportedSyntax, node,
                               "cannot differentiate '{}': code built at run time cannot "
                               "be transformed".format(node.func.id), node.func.id)
        if isinstance(node, S.Call):
            unpacked.update(id(a) for a in node.args if isinstance(a, S.Starred))
        elif isinstance(node, S.Starred) and id(node) not in unpacked:
            raise parsed.error(UnsupportedSyntax, node,
                               "cannot differentiate '*' unpacking outside a call's arguments: "
                               "write the items one by one", "*")


# --- code derivo runs twice ------------------------------------------------------------

#: The modules of the generators whose methods draw from hidden state
#: (np.random.normal is a method of NumPy's global RandomState, random.gauss of
#: Python's Random); read off the object, so derivo imports neither
RANDOM_MODULES = ("numpy.random", "random")
#: Methods of those, known by name where the receiver is a local value (rng.normal)
RANDOM_METHODS = {
    "beta", "binomial", "bytes", "choice", "dirichlet", "exponential", "gamma", "gauss",
    "integers", "laplace", "logistic", "lognormal", "multinomial", "multivariate_normal",
    "normal", "normalvariate", "permutation", "poisson", "rand", "randint", "randn", "random",
    "random_sample", "sample", "shuffle", "standard_normal", "standard_t", "uniform"}


def draws_random(parsed, call):
    """Whether ``call`` draws random numbers: running it again gives others."""
    owner = getattr(parsed.resolve_callee(call), "__self__", None)
    module = type(owner).__module__ or ""
    if owner is not None and any(module == m or module.startswith(m + ".")
                                 for m in RANDOM_MODULES):
        return True
    receiver = call.func.value if isinstance(call.func, S.Attribute) else None
    return receiver is not None and call.func.attr in RANDOM_METHODS and \
        parsed.resolve_expression(receiver) is MISSING


def refuse_random_draws(parsed, body, why):
    """Refuse a random draw in ``body``, code derivo runs again (``why`` says
    when): the second run would draw other numbers than the value was made of."""
    for node in S.walk(body):
        if isinstance(node, S.Call) and draws_random(parsed, node):
            raise parsed.error(
                UnsupportedSyntax, node,
                "cannot differentiate {!r} here: {}, where this would draw other numbers "
                "than the value was computed from; draw them once outside "
                "(eps = rng.standard_normal(shape)) and pass them in".format(
                    parsed.words(node), why), "random draw")
