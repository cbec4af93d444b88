"""Calls of a function looked up by a key the code computes, or of a method of
a loop's item, made branches.

``ACTIVATIONS[name](x)`` with ``name`` a loop's variable (``for (w, b), name in
zip(params, names)``) calls another function on each trip, which no single
derivative covers.  When the dict is one the transformation reads (a global, a
closure variable, a constant item of one) and every value in it is a function,
the call becomes a branch over its keys, each arm the call of one function
(``if name == "relu": t = ACTIVATIONS["relu"](x) elif ...``), which derivo
differentiates like any branch; any other key raises ``KeyError``, as the
lookup would.  Each arm reads its item by a constant key, and the dict's set
of keys is read too: the derivative's entry checks both on every call, and a
dict that gained or lost a key is branched over again.

``layer.forward(x)`` (or ``layer(x)``) in ``for layer in LAYERS``, a list of
objects the transformation reads, becomes a branch over the classes of its
items (``if type(layer) is Dense: t = Dense.forward(layer, x) elif ...``),
each arm the call of the class's function with the item as ``self``; an item
of another class (the list changed in place) is refused with a DerivoError.
The entry checks each class's function, read through the first item of it.

``act(x)`` of a local name each of whose assignments gives it a function the
transformation reads (``act = np.tanh if use_tanh else relu``, or one in each
arm of an ``if``) becomes a branch over those functions by identity (``if act
is np.tanh: t = np.tanh(x) elif act is relu: ...``): the test is of the value
the name holds when it is called, whatever path assigned it.
"""

from . import rules
from . import syntax as S
from .callees import item_call
from .names import identifier
from .memory import is_user_function
from .parse import MISSING, parse
from .runtime import unknown_item

#: The statements whose value is evaluated first and always (see ssa._EVALUATED_FIRST)
_VALUE_FIRST = (S.Assign, S.Return, S.Expr)
#: The expressions whose parts may run not at all or more than once
_NOT_ONCE = (S.gast.IfExp, S.gast.BoolOp, S.gast.Lambda, S.gast.ListComp, S.gast.SetComp,
             S.gast.DictComp, S.gast.GeneratorExp)
#: The keys a branch compares with ==
_KEY_TYPES = (str, int, bool)


def branch_on_keys(block, namer, parsed, loops=None):
    """Rewrite, in ``block`` and the blocks nested in it, each statement calling a
    dict's function by a computed key, or a method of a loop's item (see
    :func:`_call_on_an_item`), into a branch over the keys or the items' classes
    that assigns the call's value to a new name, which the statement reads instead.
    ``loops``: the loop lists of the tree (see :func:`derivo.parse.loop_lists`)
    when it is not the function's own (its comprehensions made loops)."""
    index = 0
    while index < len(block):
        stmt = block[index]
        for nested in ("body", "orelse"):
            if isinstance(getattr(stmt, nested, None), list):
                branch_on_keys(getattr(stmt, nested), namer, parsed, loops)
        found = _call_by_key(stmt, parsed) or _call_on_an_item(stmt, parsed, loops) or \
            _call_of_a_choice(stmt, parsed) if isinstance(stmt, _VALUE_FIRST) else None
        if found is None:
            index += 1
            continue
        call, arms, otherwise = found
        result = namer.fresh("called")
        branch = [otherwise]
        for test, arm in reversed(arms):
            branch = [S.if_(test, [S.assign(result, arm)], branch)]
        for node in S.walk(branch):
            S.copy_location(node, call)
        _replace(stmt, call, S.copy_location(S.name(result), call))
        block[index:index] = branch
        index += 1  # (the statement again: it may call another function by a key)


def _evaluated_calls(stmt):
    """The calls in ``stmt``'s value, outermost first, not under ``and``, ``or``, a
    conditional expression or a lambda, which may not evaluate them, nor in a
    comprehension, which evaluates them with its own variables (made a loop, it
    is branched in turn: see derivo.ssa.normalize)."""
    pending = [stmt.value] if stmt.value is not None else []
    while pending:
        node = pending.pop(0)
        if isinstance(node, _NOT_ONCE) or not isinstance(node, S.AST):
            continue
        if isinstance(node, S.Call):
            yield node
        pending.extend(S.gast.iter_child_nodes(node))


def _call_by_key(stmt, parsed):
    """(the call, [(test, call)], the statement when no test holds) of the first
    call in ``stmt``'s value of a function held in a dict the transformation
    reads, by a key that is a name or an attribute of one it cannot read: one
    test of the key for each key of the dict; None if there is none."""
    for call in _evaluated_calls(stmt):
        if isinstance(call.func, S.Subscript) and _names_a_value(call.func.slice) and \
                parsed.resolve_callee(call) is MISSING:
            table = parsed.resolve_expression(call.func.value, items=True)
            if isinstance(table, dict) and table and all(
                    type(k) in _KEY_TYPES and callable(v) for k, v in table.items()):
                parsed.read_keys(call.func.value, table)
                key = call.func.slice
                arms = [(S.gast.Compare(left=S.deepcopy(key), ops=[S.gast.Eq()],
                                        comparators=[S.const(k)]),
                         _called(S.subscript(S.deepcopy(call.func.value), S.const(k)), [], call))
                        for k in table]
                return call, arms, S.gast.Raise(exc=S.call(S.name("KeyError"), S.deepcopy(key)),
                                                cause=None)
    return None


def _call_on_an_item(stmt, parsed, loops):
    """(the call, [(test, call)], the statement when no test holds) of the first
    call in ``stmt``'s value of a method of a loop's item (``layer.forward(x)``,
    ``layer(x)`` of ``for layer in LAYERS``: see :func:`derivo.callees.item_call`);
    None if there is none.  The tests are of the item's class (see
    :func:`_by_class`), or, where a method calls what its object says
    (``self.act(z)``, ``ACTS[self.kind](z)``) or the items are functions, of the
    item itself (see :func:`_by_item`)."""
    for call in _evaluated_calls(stmt):
        looped = item_call(parsed, call, loops)
        if looped is None:
            continue
        item, attr, iterable, items, methods = looped
        parsed.record_classes(iterable)  # (another list of other classes: made again)
        arms = _by_item(item, iterable, len(items), attr, call) \
            if not methods or any(_calls_through_self(f) for _, f in methods.values()) else \
            _by_class(item, iterable, methods, attr, call, parsed)
        # (the list changed while the function ran, or a saved module's: checked nowhere)
        message = ("{} holds an object {} did not hold when this derivative was made (the "
                   "list changed while the function ran, or in a saved module's use): make "
                   "the derivative again".format(item, parsed.words(iterable)))
        return call, arms, _refused(parsed, message, call)
    return None


def _refused(parsed, message, call):
    """``raise`` of the DerivoError saying ``message`` at ``call``'s line, for the
    branch where no test held (see runtime.unknown_item)."""
    refused = S.call(S.name(parsed.hold("unknown_item", unknown_item)),
                     *map(S.const, (message, call.lineno, call.col_offset)))
    return S.gast.Raise(exc=refused, cause=None)


def _call_of_a_choice(stmt, parsed):
    """(the call, [(test, call)], the statement when no test holds) of the first
    call in ``stmt``'s value of a local name that holds one of the functions its
    assignments give it (see :func:`_chosen_functions`): ``act is relu``,
    ``relu(x)`` for each; None if there is none."""
    for call in _evaluated_calls(stmt):
        if not isinstance(call.func, S.Name) or parsed.resolve_callee(call) is not MISSING:
            continue
        choices = _chosen_functions(parsed, call.func.id)
        if not choices:
            continue
        arms = [(S.gast.Compare(left=S.name(call.func.id), ops=[S.gast.Is()],
                                comparators=[S.deepcopy(choice)]),
                 _called(S.deepcopy(choice), [], call)) for choice in choices]
        message = ("{} holds a function none of its assignments gave it when this "
                   "derivative was made: make the derivative again".format(call.func.id))
        return call, arms, _refused(parsed, message, call)
    return None


def _chosen_functions(parsed, name):
    """The expressions naming the functions the local ``name`` may hold, one per
    function: each assignment of it is ``name = e``, e a name or attribute chain
    the transformation reads to a user function or a primitive, or a conditional
    expression of those; [] for any other name (a parameter, one assigned
    otherwise or from anything else)."""
    if name not in parsed.local_names or name in S.param_names(parsed.tree):
        return []
    stores = [n for n in S.walk(parsed.tree) if isinstance(n, S.Name) and n.id == name
              and isinstance(n.ctx, S.Store)]
    values = [s.value for s in S.walk(parsed.tree)
              if isinstance(s, S.Assign) and S.single_target(s) == name]
    if not values or len(values) != len(stores):
        return []  # (also stored by a loop, an unpacking, an augmented assignment...)
    choices, seen = [], set()
    while values:
        value = values.pop(0)
        if isinstance(value, S.gast.IfExp):
            values[:0] = [value.body, value.orelse]
            continue
        if not isinstance(value, (S.Name, S.Attribute)):
            return []
        function = parsed.resolve_expression(value)
        if not (is_user_function(function) or rules.is_primitive(function)):
            return []
        if id(function) not in seen:
            seen.add(id(function))
            choices.append(value)
    return choices


def _by_class(item, iterable, methods, attr, call, parsed):
    """[(test, call)]: ``type(layer) is Dense``, ``Dense.forward(layer, x)`` for each
    class of ``methods`` (see :func:`derivo.callees.item_call`), its function
    read through its first item (``LAYERS[0].__class__.forward``), which the
    derivative's entry checks."""
    kind = parsed.hold("type", type)
    arms = []
    for cls, (index, _) in methods.items():
        function = parsed.resolve_expression(S.attribute(S.attribute(S.subscript(
            S.deepcopy(iterable), S.const(index)), "__class__"), attr), items=True)
        test = S.gast.Compare(left=S.call(S.name(kind), S.name(item)), ops=[S.gast.Is()],
                              comparators=[S.name(parsed.hold(identifier(cls.__name__), cls))])
        held = parsed.hold(identifier("{}_{}".format(cls.__name__, attr.strip("_"))), function)
        arms.append((test, _called(S.name(held), [S.name(item)], call)))
    return arms


def _by_item(item, iterable, count, attr, call):
    """[(test, call)]: ``layer is LAYERS[0]``, ``LAYERS[0].forward(x)`` for each item
    of the list: a call of a method of an item the transformation reads, which
    follows what that object's attributes call (see :func:`derivo.callees.direct_call`)."""
    arms = []
    for index in range(count):
        listed = S.subscript(S.deepcopy(iterable), S.const(index))
        test = S.gast.Compare(left=S.name(item), ops=[S.gast.Is()], comparators=[listed])
        func = S.deepcopy(listed) if attr == "__call__" else S.attribute(S.deepcopy(listed), attr)
        arms.append((test, _called(func, [], call)))
    return arms


def _calls_through_self(function):
    """Whether ``function`` calls what its first parameter says (``self.act(z)``)."""
    try:
        found = parse(function).callee_parameters
    except Exception:  # (the transformation reports what it cannot read)
        return False
    return function.__code__.co_varnames[0] in found


def _called(func, first, call):
    """A copy of ``call`` calling ``func``, with ``first`` before its arguments."""
    return S.call(func, *first, *map(S.deepcopy, call.args),
                  keywords=[S.deepcopy(k) for k in call.keywords])


def _names_a_value(key):
    """Whether ``key`` is a name or a chain of attributes of one: reading it again
    in each test gives the same value."""
    while isinstance(key, S.Attribute):
        key = key.value
    return isinstance(key, S.Name)


def _replace(tree, old, new):
    """Put ``new`` where ``old`` is in ``tree``."""
    for node in S.walk(tree):
        for field, value in S.gast.iter_fields(node):
            if value is old:
                setattr(node, field, new)
            elif isinstance(value, list) and any(v is old for v in value):
                value[:] = [new if v is old else v for v in value]
