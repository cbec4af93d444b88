"""Stage 2: normalise a parsed function into derivo's statement form.

After this stage the function body obeys this grammar, and nothing else may
appear (the fence below rejects what cannot be normalised):

    body   := block  'return' ATOM | 'return' (ATOM, ...)   -- exactly one, last
    block  := stmt* [jump]
    jump   := 'break' | 'continue' | 'raise' ...             -- last in its block only
    stmt   := NAME '=' expr                                   -- one target
            | NAME '[' expr ']' '=' ATOM                      -- an in-place write
            | NAME '=' CALL | (NAME, ...) '=' CALL            -- CALL: any call that is not
                                                              --   to a primitive (a user
                                                              --   function, an unknown one),
                                                              --   on its own line; a user
                                                              --   function's arguments are
                                                              --   names or constants
            | 'if' NAME ':' block 'else' ':' block            -- test hoisted to a fresh name
            | 'for' NAME 'in' expr ':' block                  -- no else
            | 'while' expr ':' block                          -- no else
            | NAME '.append(' ATOM ')'                         -- growing a list
            | expr                                            -- kept for its side effect
            | 'assert' ...
    expr   := nested arithmetic, comparisons, boolean operators, calls to
              primitives (functions with a derivative rule or declared
              non-differentiable), conditional expressions, constants, names,
              subscripts -- so the reverse sweep may evaluate it again safely

Further invariants:
- a list comprehension or generator expression is a list built by a loop before
  its statement (see :func:`_lower_comprehensions`);
- augmented, chained and tuple assignments are split into single assignments;
- every assignment in the function's top-level block creates a fresh name when
  it would overwrite a value (``y = y * y`` becomes ``y1 = y * y``), so straight
  code never overwrites; inside branches and loops names are reused, and the
  reverse sweep restores what they overwrite;
- a ``while`` loop, and a ``for`` loop containing ``break``, count their trips in
  a fresh counter (``loop.trips``); a ``for`` loop's iterable is a name or a
  ``range(...)`` of names the body does not assign (``loop.iterable``);
- loop-invariant arithmetic that cannot raise is computed once before its loop;
- code after a branch that always jumps lives in the other branch, so a jump is
  always the last statement of its block;
- ``return`` in a loop sets the result, a ``returned`` flag and breaks out;
- every assignment carries ``opaque``: whether it calls a non-primitive;
- a parameter written in place is copied on entry (``tree.owned``); whether any
  write may change memory another name refers to, ``memory.sharing_faults``
  decides.

The annotations stages leave on nodes are declared in ``form.ANNOTATIONS``, and
``form.validate`` checks the grammar (tests run it after every stage).
"""

import math
import types

from . import form, rules
from . import syntax as S
from .errors import UnsupportedSyntax
from .callees import direct_call
from .dispatch import branch_on_keys
from .fence import check_supported
from .memory import in_a_library, is_new_array, read_helpers_with
from .names import Namer, names_in
from .parse import loop_lists
from .unzip import unzip_assignments, unzip_loops

JUMPS = (S.Break, S.Continue, S.gast.Raise, S.Return)


class Normalized:
    """A function in statement form, plus what later stages need to know."""

    def __init__(self, parsed, tree, results, namer, built=frozenset()):
        self.parsed = parsed
        self.tree = tree            # FunctionDef in statement form
        self.results = results      # names returned: [name] or [name0, name1, ...]
        self.namer = namer          # hands out names free in this function
        self.built = built          # the lists comprehensions became (see _lower_comprehensions)

    @property
    def params(self):
        return S.param_names(self.tree)


def normalize(parsed):
    """Normalise ``parsed`` (a :class:`derivo.parse.Parsed`) into statement form."""
    tree = S.deepcopy(parsed.tree)
    namer = Namer(names_in(tree) | set(parsed.globals) | set(parsed.closure))
    built = set()
    branch_on_keys(tree.body, namer, parsed)
    unzip_assignments(tree.body, namer, parsed)
    # (the pass looks for them statement by statement, field by field)
    if any(isinstance(n, _COMPREHENSIONS) for n in S.walk(tree.body)):
        _lower_comprehensions(tree.body, namer, built, parsed)
        # what a comprehension calls by a key or on its items, now in loops
        branch_on_keys(tree.body, namer, parsed, loop_lists(tree, parsed.resolve_expression))
    unzip_loops(tree.body, namer, parsed)
    check_supported(parsed, tree)
    _ReturnLowering(parsed, namer).run(tree)
    *body, final = tree.body
    normalizer = _Normalizer(parsed, namer)
    body = _restructure(body)
    _refuse_partial_jumps(body, parsed)
    tree.body = normalizer.function_body(tree, body, final)
    _share_repeated_terms(tree, namer, normalizer.written)
    _mark_owned(tree, normalizer.written, parsed)
    tree.versions = tuple(sorted(normalizer.versions.items()))  # (for messages)
    _mark_opaque(tree, parsed)
    returned = tree.body[-1].value
    results = [n.id for n in (returned.elts if isinstance(returned, S.Tuple) else [returned])]
    form.check(tree, "ssa")
    return Normalized(parsed, tree, results, namer, frozenset(built))


# --- returns ------------------------------------------------------------------

class _ReturnLowering:
    """Rewrites every ``return`` so the function has exactly one, at its end."""

    def __init__(self, parsed, namer):
        self.parsed = parsed
        self.namer = namer

    def run(self, tree):
        returns = [n for n in S.walk(tree) if isinstance(n, S.Return)]
        if not returns:
            raise self.parsed.error(UnsupportedSyntax, tree,
                                    "cannot differentiate {!r}: it returns nothing"
                                    .format(tree.name), "return")
        shapes = {(self._arity(r), isinstance(r.value, S.Tuple)) for r in returns}
        if len(shapes) > 1:
            raise self.parsed.error(UnsupportedSyntax, returns[0],
                                    "cannot differentiate returns of different tuple sizes",
                                    "return")
        ((self.arity, self.tuple_result),) = shapes
        last = tree.body[-1]
        if len(returns) == 1 and last is returns[0]:
            return self._final_return(tree, last)
        if self.arity == 1:
            self.results = [self.namer.fresh("result")]
        else:
            self.results = [self.namer.numbered("result") for _ in range(self.arity)]
        self.flag = None
        tree.body = self.block(tree.body, in_loop=False)
        if self.flag:
            tree.body.insert(0, S.assign(self.flag, S.const(False)))
        tree.body.append(S.return_(self._result_expr()))
        return self.results

    def _arity(self, ret):
        if ret.value is None:
            raise self.parsed.error(UnsupportedSyntax, ret,
                                    "cannot differentiate a bare 'return': return a value",
                                    "return")
        return len(ret.value.elts) if isinstance(ret.value, S.Tuple) else 1

    def _result_expr(self):
        if not self.tuple_result:
            return S.name(self.results[0])
        return S.tuple_([S.name(r) for r in self.results])

    def _final_return(self, tree, ret):
        values = ret.value.elts if isinstance(ret.value, S.Tuple) else [ret.value]
        results, assigns = [], []
        params = {a.id for a in tree.args.args + tree.args.kwonlyargs}
        for value in values:
            if isinstance(value, S.Name) and value.id not in params and value.id not in results:
                results.append(value.id)
            else:
                result = self.namer.fresh("result")
                assigns.append(S.copy_location(S.assign(result, value), ret))
                results.append(result)
        self.results = results
        self.arity = len(values)
        tree.body[-1:] = assigns + [S.copy_location(S.return_(self._result_expr()), ret)]
        return results

    def _assign_results(self, ret):
        values = ret.value.elts if self.tuple_result else [ret.value]
        return [S.copy_location(S.assign(r, v), ret) for r, v in zip(self.results, values)]

    def block(self, stmts, in_loop):
        out = []
        for stmt in stmts:
            if isinstance(stmt, S.Return):
                out += self._assign_results(stmt)
                if in_loop:
                    self.flag = self.flag or self.namer.fresh("returned")
                    out.append(S.copy_location(S.assign(self.flag, S.const(True)), stmt))
                    out.append(S.copy_location(S.Break(), stmt))
                else:
                    out.append(S.copy_location(S.return_(None), stmt))  # an exit marker
                return out
            if isinstance(stmt, S.If):
                stmt.body = self.block(stmt.body, in_loop)
                stmt.orelse = self.block(stmt.orelse, in_loop)
            elif isinstance(stmt, (S.For, S.While)):
                returns_inside = any(isinstance(n, S.Return) for n in S.walk(stmt))
                stmt.body = self.block(stmt.body, in_loop=True)
                out.append(stmt)
                if returns_inside:
                    exit_ = S.Break() if in_loop else S.return_(None)
                    out.append(S.copy_location(
                        S.if_(S.name(self.flag), [S.copy_location(exit_, stmt)]), stmt))
                continue
            out.append(stmt)
        return out


def _terminates(block):
    if not block:
        return False
    last = block[-1]
    if isinstance(last, JUMPS):
        return True
    return isinstance(last, S.If) and _terminates(last.body) and _terminates(last.orelse)


def _jumps_in(block):
    """The jumps of a block that leave it (a break inside a nested loop does not)."""
    for stmt in block:
        if isinstance(stmt, (S.Break, S.Continue, S.Return)):
            yield stmt
        elif isinstance(stmt, S.If):
            yield from _jumps_in(stmt.body)
            yield from _jumps_in(stmt.orelse)


def _refuse_partial_jumps(block, parsed, tail=False):
    """Refuse a jump in a branch that can also fall through (``if a: if b: break``)
    when code follows that branch: the reverse sweep could not tell whether it
    ran.  ``tail``: nothing follows ``block`` (the end of a loop body)."""
    for index, stmt in enumerate(block):
        last = tail and index == len(block) - 1
        if isinstance(stmt, (S.For, S.While)):
            _refuse_partial_jumps(stmt.body, parsed, tail=True)
        if not isinstance(stmt, S.If):
            continue
        for branch in (stmt.body, stmt.orelse):
            jump = next(_jumps_in(branch), None)
            if jump is not None and not _terminates(branch) and not last:
                construct = {S.Break: "break", S.Continue: "continue"}.get(
                    type(jump), "return")
                raise parsed.error(
                    UnsupportedSyntax, jump, "cannot differentiate this {!r}: it sits in a "
                    "nested if whose branch can also run on into the code that follows; "
                    "put that code in an else branch".format(construct), construct)
            _refuse_partial_jumps(branch, parsed, last)


def _restructure(block):
    """Drop code after jumps; move code after a branch that jumps into the other branch."""
    out = []
    for index, stmt in enumerate(block):
        if isinstance(stmt, (S.For, S.While)):
            stmt.body = _restructure(stmt.body)
        if isinstance(stmt, S.If):
            rest = block[index + 1:]
            stmt.body = _restructure(stmt.body)
            stmt.orelse = _restructure(stmt.orelse)
            if rest and _terminates(stmt.body) and not _terminates(stmt.orelse):
                stmt.orelse = _restructure(stmt.orelse + rest)
                out.append(stmt)
                return out
            if rest and _terminates(stmt.orelse) and not _terminates(stmt.body):
                stmt.body = _restructure(stmt.body + rest)
                out.append(stmt)
                return out
        out.append(stmt)
        if _terminates([stmt]):
            return out
    return out


# --- statements -----------------------------------------------------------------

class _Normalizer:
    def __init__(self, parsed, namer):
        self.parsed = parsed
        self.namer = namer
        self.current = {}       # user name -> the name holding its current value
        self.depth = 0          # 0 in the function's top-level block
        self.assigned = set()   # names holding a value at the top level so far
        self.bound = set()      # ... surely: parameters and top-level assignments, not a
        #                         loop's variable (a loop may run no trip) nor a branch's
        self.tuples = {}        # name of a tuple split at the top level -> element names
        self.written = set()    # names of arrays written in place (x[i] = v)
        self.changed = set()    # names the function rebinds, writes into or appends to
        self.versions = {}      # a name ssa makes -> how the user wrote what it holds

    def function_body(self, tree, body, final_return):
        args = tree.args
        self.assigned = {a.id for a in args.posonlyargs + args.args + args.kwonlyargs}
        self.bound = set(self.assigned)
        self.changed = _changed_names(body)
        out = self.block(body)
        final = S.copy_location(S.return_(self.read(final_return.value)), final_return)
        return out + [final]

    def block(self, stmts):
        out = []
        for stmt in stmts:
            out += self.statement(stmt)
        return out

    def nested(self, stmts):
        self.depth += 1
        try:
            return self.block(stmts)
        finally:
            self.depth -= 1

    def located(self, stmts, origin):
        for stmt in stmts:
            if not hasattr(stmt, "lineno"):
                S.copy_location(stmt, origin)
        return stmts

    def statement(self, stmt):
        method = getattr(self, "stmt_" + type(stmt).__name__, None)
        if method is None:
            raise self.parsed.error(UnsupportedSyntax, stmt, "cannot differentiate {!r} "
                                    "statements".format(type(stmt).__name__),
                                    type(stmt).__name__)
        return self.located(method(stmt), stmt)

    # Each stmt_* method returns the list of statements replacing ``stmt``.

    def stmt_Pass(self, stmt):
        return []

    def stmt_Expr(self, stmt):
        value = stmt.value
        if isinstance(value, S.Constant):
            return []  # docstrings and bare constants
        if _is_append(value):
            # xs.append(item): the item on a line of its own, as for a write.
            out, item = self.hoist_calls(self.read(value.args[0]), stmt, top=False)
            if not isinstance(item, (S.Name, S.Constant)):
                temp = self.namer.numbered("t")
                out.append(S.copy_location(S.assign(temp, item), stmt))
                item = S.name(temp)
            items = self.current.get(value.func.value.id, value.func.value.id)
            self.written.add(items)
            return out + [S.Expr(value=S.call(S.attribute(items, "append"), item))]
        return [S.Expr(value=self.read(value))]

    def stmt_Assert(self, stmt):
        stmt.test = self.read(stmt.test)
        return [stmt]

    def stmt_Raise(self, stmt):
        return [self.read(stmt)]

    def stmt_Break(self, stmt):
        return [stmt]

    def stmt_Continue(self, stmt):
        return [stmt]

    def stmt_Return(self, stmt):
        return []  # the exit marker left by return lowering; structure now encodes it

    def stmt_AnnAssign(self, stmt):
        if stmt.value is None:
            return []
        return self.assign_to(stmt.target, stmt.value, stmt)

    def stmt_AugAssign(self, stmt):
        target = stmt.target
        if isinstance(target, S.Subscript) and isinstance(target.value, S.Name):
            current = S.gast.Subscript(value=S.name(target.value.id),
                                       slice=S.deepcopy(target.slice), ctx=S.Load())
        elif isinstance(target, S.Name):
            current = S.name(target.id)
        else:
            raise self._refused_assignment(stmt, target, "augmented assignment")
        value = S.binop(current, stmt.op, stmt.value)
        out = self.assign_to(target, S.copy_location(value, stmt), stmt)
        # in place for an array, or for an array a container holds (L[i] += e):
        # see memory.sharing_faults
        out[-1].augmented = True
        return out

    def stmt_Assign(self, stmt):
        first, *others = stmt.targets
        out = self.assign_to(first, stmt.value, stmt)
        for target in others:  # a = b = value: later targets copy the first
            copy = self.read(S.name(first.id)) if isinstance(first, S.Name) else stmt.value
            out += self.assign_to(target, S.copy_location(copy, stmt), stmt)
        return out

    def assign_to(self, target, value, origin, reread=True):
        if isinstance(target, S.Name):
            if isinstance(value, S.Tuple) and self.depth == 0:
                return self.split_tuple(target.id, value, origin, reread)
            value = self.read(value) if reread else value
            hoisted, value = self.hoist_calls(value, origin, top=True)
            return hoisted + [S.assign(self.write(target.id), value)]
        if isinstance(target, (S.Tuple, S.List)):
            return self.unpack(target, value, origin)
        if isinstance(target, S.Subscript) and isinstance(target.value, S.Name):
            return self.write_item(target, value, origin, reread)
        raise self._refused_assignment(target, target, "assignment")

    def _refused_assignment(self, node, target, label):
        """The refusal of an assignment to ``target``, neither a name nor an item of
        one (``self.calls += 1``, ``obj.w = v``)."""
        advice = ": derivo does not follow changes to an object's attributes; return the " \
            "new value (with has_aux=True, beside the gradient), or change it outside the " \
            "differentiated function" if isinstance(target, S.Attribute) else \
            ": derivo follows writes into an item of a name (x[i] = v, x[i, j] = v); give " \
            "the inner value a name first, or use a 2-D array" \
            if isinstance(target, S.Subscript) else ""
        return self.parsed.error(UnsupportedSyntax, node, "cannot differentiate {} to {!r}{}"
                                 .format(label, self.parsed.words(target), advice), label)

    def write_item(self, target, value, origin, reread):
        """``x[i] = value``: an in-place write, with the value and the index each
        computed on lines of their own (the reverse sweep reads both)."""
        value = self.read(value) if reread else value
        out, value = self.hoist_calls(value, origin, top=False)
        if not isinstance(value, (S.Name, S.Constant)):
            temp = self.namer.numbered("t")
            out.append(S.copy_location(S.assign(temp, value), origin))
            value = S.name(temp)
        moved, index = self.hoist_calls(self.read(target.slice), origin, top=False)
        array = self.current.get(target.value.id, target.value.id)
        index = self.index_before_write(index, array, origin, moved)
        self.written.add(array)
        item = S.gast.Subscript(value=S.name(array), slice=index, ctx=S.Store())
        return out + moved + [S.assign(item, value)]

    def index_before_write(self, index, array, origin, out):
        """The index of a write into ``array`` as a value computed before the
        write: each part of it that may evaluate to something else afterwards
        (see :func:`_reads_memory`) is bound to a name first, since the reverse
        sweep reads the index after the write."""
        if isinstance(index, S.Tuple):
            index.elts = [self.index_before_write(e, array, origin, out) for e in index.elts]
            return index
        if isinstance(index, S.Slice):
            for field in ("lower", "upper", "step"):
                part = getattr(index, field)
                if part is not None:
                    setattr(index, field, self.index_before_write(part, array, origin, out))
            return index
        if not _reads_memory(index, array):
            return index
        temp = self.namer.numbered("index")
        out.append(S.copy_location(S.assign(temp, index), origin))
        return S.copy_location(S.name(temp), index)

    def unpack(self, target, value, origin):
        """Split ``a, (b, c) = value`` into single assignments."""
        pairs = self.literal_pairs(target, value)
        if pairs is not None:
            # Read every value before writing any target: ``a, b = b, a`` swaps.
            names = {t.id for t, _ in pairs}
            out, reads = [], []
            for name, elt in pairs:
                read = self.read(elt)
                # At the top level every write makes a fresh name, so no read can see it.
                if self.depth and names_in(elt) & names:
                    temp = self.namer.numbered("tmp")
                    out += self.assign_to(S.store(temp), read, origin, reread=False)
                    read = S.name(temp)
                reads.append((name, read))
            for name, read in reads:
                out += self.assign_to(name, read, origin, reread=False)
            return out
        # a, b = pair outside loops, of a pair the function never rebinds, writes
        # into or appends to (a parameter, in effect): each target reads pair[i],
        # with no copy of pair.  A pair changed anywhere keeps its copy (without it,
        # the reverse sweep pushed the pair on the stack, and differentiating that
        # again was refused), and so does a loop's item, whose copy the analyses
        # look for.
        read_in_place = not self.depth and isinstance(value, S.Name) and \
            value.id not in self.changed
        if _is_dict_view(value):  # a, b = d.values(): a view takes no index, its list does
            value = S.copy_location(S.call(S.name("list"), value), value)
        value = self.read(value)
        hoisted, value = self.hoist_calls(value, origin, top=True)
        flat = all(isinstance(t, S.Name) for t in target.elts)
        if form.annotation(value, "user_function") and flat:
            targets = [S.store(self.write(t.id)) for t in target.elts]
            return hoisted + [S.assign(S.tuple_(targets, store_ctx=True), value)]
        out = hoisted
        if read_in_place:
            temp = value.id
        else:
            temp = self.namer.numbered("seq")
            out = out + [S.assign(temp, value)]
        items = [S.subscript(S.name(temp), S.const(i)) for i in range(len(target.elts))]
        if any(isinstance(n, S.Subscript) for n in S.walk(target)):
            # p[1], q = p: Python reads every item before it writes any target
            read_first = []
            for item in items:
                name = self.namer.numbered("item")
                out += self.assign_to(S.store(name), item, origin, reread=False)
                read_first.append(S.name(name))
            items = read_first
        for element, item in zip(target.elts, items):
            out += self.assign_to(element, item, origin)
        return out

    def literal_pairs(self, target, value):
        """[(target name, value)] when ``value`` spells out ``target``'s shape, or
        when it names a tuple split at the top level; else None."""
        if isinstance(target, S.Name):
            return [(target, value)]
        if not isinstance(target, (S.Tuple, S.List)):
            return None  # p[0], b = (x, y), 2.0: an item target takes the general way
        if isinstance(value, S.Name) and self.current.get(value.id, value.id) in self.tuples:
            value = S.tuple_([S.name(n) for n in self.tuples[self.current.get(value.id,
                                                                              value.id)]])
        if not isinstance(value, (S.Tuple, S.List)) or len(value.elts) != len(target.elts):
            return None
        pairs = []
        for sub_target, sub_value in zip(target.elts, value.elts):
            sub_pairs = self.literal_pairs(sub_target, sub_value)
            if sub_pairs is None:
                return None
            pairs += sub_pairs
        return pairs

    def split_tuple(self, name, value, origin, reread=True):
        """``t = (x, y)`` at the top level: one name per element, so that
        ``t[0]`` and ``a, b = t`` read plain names the adjoint can reach."""
        out, elements = [], []
        for index, elt in enumerate(value.elts):
            element = self.namer.fresh("{}_{}".format(name, index))
            out += self.assign_to(S.store(element), elt, origin, reread=reread)
            elements.append(element)
        written = self.write(name)
        self.tuples[written] = elements
        return out + [S.assign(written, S.tuple_([S.name(e) for e in elements]))]

    def stmt_If(self, stmt):
        test = self.read(stmt.test)
        body = self.nested(stmt.body)
        orelse = self.nested(stmt.orelse)
        if not body:
            test, body, orelse = S.not_(test), orelse, body
        if isinstance(test, S.Name) and test.id not in S.stored_names(body + orelse):
            return [S.if_(test, body, orelse)]
        # The reverse sweep re-reads the branch taken, so the test gets a name of
        # its own that the branches cannot overwrite.
        cond = self.namer.numbered("cond")
        return [S.assign(cond, test), S.if_(S.name(cond), body, orelse)]

    def forget_tuples_changed_in(self, body):
        """A loop's later trips, and its test, read the values its body writes: a
        tuple split before the loop and rebound in it is read whole."""
        for ident in _changed_names(body):
            self.tuples.pop(self.current.get(ident, ident), None)

    def stmt_While(self, stmt):
        self.forget_tuples_changed_in(stmt.body)
        test = self.read(stmt.test)
        body = self.nested(stmt.body)
        hoisted = self.hoist_invariants(body, _changed_names(body) | self.handed(body))
        loop = S.while_(test, body)
        return hoisted + self.counted(loop, stmt)

    def stmt_For(self, stmt):
        self.forget_tuples_changed_in(stmt.body)
        updated = next((s for s in S.walk(stmt.body) if isinstance(s, S.gast.AugAssign)
                        and isinstance(s.target, S.Name) and isinstance(stmt.iter, S.Name)
                        and s.target.id == stmt.iter.id), None)
        if updated is not None:
            # An array (or list) updated in place changes what the loop reads next;
            # the statement form would rebind the name and iterate the old values.
            raise self.parsed.error(
                UnsupportedSyntax, updated, "cannot differentiate {0!r} updated in place in "
                "a loop over {0}: later trips read the new values; loop over "
                "range(len({0})) and index it".format(updated.target.id),
                "loop over an updated value")
        if not isinstance(stmt.target, S.Name) or stmt.target.id in S.stored_names(stmt.body):
            # for a, b in pairs:  ->  for item in pairs: a, b = item
            # and so for a target the body assigns too: the reverse sweep's loop
            # gives its variable each item again, which must not undo the body's
            # value of the user's variable
            item = self.namer.numbered("item")
            unpack = S.copy_location(S.assign(stmt.target, S.name(item)), stmt.target)
            stmt = S.copy_location(S.for_(item, stmt.iter, [unpack] + stmt.body), stmt)
        iterable = self.read(stmt.iter)
        assigned = S.stored_names(stmt.body) | {stmt.target.id}
        out = []
        if not self._stable(iterable, assigned):
            temp = self.namer.numbered("seq")
            self.versions[temp] = self.parsed.words(stmt.iter)
            hoisted, iterable = self.hoist_calls(iterable, stmt, top=True)
            out += hoisted + [S.assign(temp, iterable)]
            iterable = S.name(temp)
        before = self.current.get(stmt.target.id, stmt.target.id) \
            if stmt.target.id in self.assigned else None
        target = self.write(stmt.target.id)
        self.bound.discard(target)
        if before in self.bound and before != target:
            # a loop that runs no trip leaves the variable's earlier value
            out.append(S.copy_location(S.assign(target, S.name(before)), stmt))
        body = self.nested(stmt.body)
        out += self.hoist_invariants(body, _changed_names(body) | self.handed(body) | {target})
        loop = S.for_(target, iterable, body)
        loop.iterable = iterable
        has_break = any(isinstance(n, S.Break) for n in _loop_level(body))
        if has_break:
            return out + self.counted(loop, stmt)
        loop.trips = None
        return out + [loop]

    def hoist_invariants(self, body, assigned):
        """Compute loop-invariant arithmetic once, before the loop.

        ``s *= c / k * (z / 2) ** 2`` in a loop that never assigns z becomes
        ``t = (z / 2) ** 2`` before it: the primal does less work, and the
        adjoint accumulates into ``bt`` and applies the chain rule through
        ``(z / 2) ** 2`` once, after the loop, as one would by hand.  Only
        operators that cannot raise are moved (division and powers by constants),
        since the loop may run zero times.
        """
        out = []
        normalizer = self

        class Hoist(S.NodeTransformer):
            def __init__(self, stmt):
                self.stmt = stmt

            def visit(self, node):
                if node is not self.stmt.value and _invariant(node, assigned):
                    temp = normalizer.namer.numbered("t")
                    out.append(S.copy_location(S.assign(temp, node), self.stmt))
                    return S.copy_location(S.name(temp), node)
                return self.generic_visit(node)

        for stmt in body:
            if isinstance(stmt, S.Assign) and not form.annotation(stmt.value, "user_function"):
                stmt.value = Hoist(stmt).visit(stmt.value)
        return out

    def handed(self, body):
        """Names ``body`` hands to a call that may change them in place: the
        arguments of a call of anything but NumPy or ``math`` (and NumPy's
        ``out=`` and the first argument of its writing functions), and the
        objects whose methods it calls (``y.sort()``)."""
        names = set()
        for node in S.walk(body):
            if not isinstance(node, S.Call):
                continue
            callee = self.parsed.resolve_callee(node)
            handed = [k.value for k in node.keywords if k.arg == "out"]
            if isinstance(node.func, S.Attribute):
                handed.append(node.func.value)
            if not (getattr(callee, "__module__", None) or "").startswith(("numpy", "math")):
                handed += node.args + [k.value for k in node.keywords]
            elif getattr(callee, "__name__", None) in _NUMPY_WRITERS:
                handed += node.args[:1]
            names |= {n.id for a in handed for n in S.walk(a) if isinstance(n, S.Name)}
        return names

    def _stable(self, iterable, assigned):
        """Whether the reverse sweep can rebuild the iterable from names it sees."""
        if isinstance(iterable, S.Name):
            return iterable.id not in assigned
        if isinstance(iterable, S.Call) and isinstance(iterable.func, S.Name) and \
                self.parsed.resolve(iterable.func.id) is range:
            return all(isinstance(a, S.Constant) or
                       (isinstance(a, S.Name) and a.id not in assigned)
                       for a in iterable.args) and not iterable.keywords
        return False

    def counted(self, loop, origin):
        trips = self.namer.numbered("n")
        loop.trips = trips
        increment = S.copy_location(
            S.assign(trips, S.binop(S.name(trips), S.Add(), S.const(1))), origin)
        loop.body.insert(0, increment)
        return [S.assign(trips, S.const(0)), loop]

    # --- names and expressions -----------------------------------------------

    def write(self, ident):
        """The name an assignment to ``ident`` writes, making a version at top level."""
        if self.depth == 0 and ident in self.assigned:
            new = self.namer.numbered(ident.rstrip("0123456789") or ident)
            self.current[ident] = new
            self.versions[new] = self.versions.get(ident, ident)
            self.assigned.add(new)
            self.bound.add(new)
            return new
        # A write inside a branch or loop still means a later top-level write
        # overwrites a value.
        self.assigned.add(ident)
        name = self.current.get(ident, ident)
        self.tuples.pop(name, None)  # its elements are no longer those split before
        if self.depth == 0:
            self.bound.add(name)
        return name

    def read(self, node):
        """A copy of ``node`` with names renamed to their current versions and
        n-ary min/max split into pairs."""
        current = self.current
        parsed = self.parsed
        tuples = self.tuples

        class Rename(S.NodeTransformer):
            def visit_Name(self, name):
                if isinstance(name.ctx, S.Load) and name.id in current:
                    return S.copy_location(S.name(current[name.id]), name)
                return name

            def visit_Subscript(self, node):
                self.generic_visit(node)
                index = node.slice
                if isinstance(node.value, S.Name) and node.value.id in tuples and \
                        isinstance(index, S.Constant) and type(index.value) is int and \
                        -len(tuples[node.value.id]) <= index.value < len(tuples[node.value.id]):
                    return S.copy_location(S.name(tuples[node.value.id][index.value]), node)
                return node

            def visit_Call(self, call):
                self.generic_visit(call)
                # f(*t) of a tuple split into names: f(t_0, t_1)
                call.args = [item for arg in call.args for item in (
                    [S.copy_location(S.name(e), arg) for e in tuples[arg.value.id]]
                    if isinstance(arg, S.Starred) and isinstance(arg.value, S.Name)
                    and arg.value.id in tuples else [arg])]
                func = call.func
                if isinstance(func, S.Name) and len(call.args) > 2 and not call.keywords \
                        and parsed.resolve(func.id) in (min, max):
                    pair = call.args[0]
                    for arg in call.args[1:]:
                        pair = S.copy_location(S.call(S.name(func.id), pair, arg), call)
                    return pair
                return call

        return Rename().visit(S.deepcopy(node))

    def hoist_calls(self, value, origin, top):
        """Move every call that is not to a primitive out of ``value``.

        Calls to user functions are marked with ``call.user_function``.  Each
        moved call becomes ``t = call`` of its own, so the reverse sweep never
        evaluates a function twice (it may have effects, or return a different
        random number).  With ``top``, a call that *is* the whole value stays.
        Returns (statements, value).
        """
        out = []
        normalizer = self

        def hoisted(node):
            temp = normalizer.namer.numbered("t")
            out.append(S.copy_location(S.assign(temp, node), origin))
            return S.copy_location(S.name(temp), node)

        class Hoist(S.NodeTransformer):
            def visit_Call(self, call):
                if form.annotation(call, "user_function") is not None:
                    return call  # an outlined loop (see outline): its reverse needs no arguments
                self.generic_visit(call)
                target = normalizer.parsed.callee_key(call)
                # A derivo.Derivative is differentiated through the code it runs.
                target = getattr(target, "derivo_function", target)
                target = direct_call(call, target, normalizer.parsed) or target
                if _is_user_function(target):
                    call.user_function = target
                    # Arguments become names, so the reverse sweep can pass the
                    # same values to the function's VJP without computing them again.
                    call.args = [a if isinstance(a, (S.Name, S.Constant)) else hoisted(a)
                                 for a in call.args]
                    for kw in call.keywords:
                        if not isinstance(kw.value, (S.Name, S.Constant)):
                            kw.value = hoisted(kw.value)
                elif rules.is_primitive(target):
                    return call
                return call if call is value and top else hoisted(call)

            def visit_BoolOp(self, node):
                # Moving a call out of ``a and f()`` would call f when a is false.
                if _opaque(node, normalizer.parsed) and not (node is value and top):
                    return hoisted(node)
                return node

            def visit_IfExp(self, node):
                node.test = self.visit(node.test)
                if not _opaque(node, normalizer.parsed):
                    return node
                # Only the branch taken may call: the expression becomes an if statement.
                temp = normalizer.namer.numbered("t")
                arms = []
                for branch in (node.body, node.orelse):
                    moved, branch = normalizer.hoist_calls(branch, origin, top=True)
                    arms.append(moved + [S.copy_location(S.assign(temp, branch), origin)])
                cond = normalizer.namer.numbered("cond")
                out.append(S.copy_location(S.assign(cond, node.test), origin))
                out.append(S.copy_location(S.if_(S.name(cond), *arms), origin))
                return S.copy_location(S.name(temp), node)

        value = Hoist().visit(value)
        return out, value


def _is_dict_view(node):
    """Whether ``node`` is ``d.keys()``, ``d.values()`` or ``d.items()``."""
    return isinstance(node, S.Call) and not node.args and not node.keywords and \
        isinstance(node.func, S.Attribute) and node.func.attr in ("keys", "values", "items")


def _reads_memory(index, array):
    """Whether the index of a write into ``array`` may evaluate to something else
    after the write: it reads ``array``, or anything but constants, names and
    arithmetic of them (an item, an attribute, a call, a comparison)."""
    for node in S.walk(index):
        if isinstance(node, S.Name) and node.id == array:
            return True
        if not isinstance(node, (S.Constant, S.Name, S.BinOp, S.UnaryOp,
                                 S.gast.expr_context, S.gast.operator, S.gast.unaryop)):
            return True
    return False


_SAFE_OPS = (S.Add, S.Sub, S.Mult)
_ARITHMETIC_OPS = _SAFE_OPS + (S.Div, S.Mod, S.Pow, S.FloorDiv)


#: NumPy functions that write into their first argument
_NUMPY_WRITERS = ("copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis")


def _changed_names(body):
    """Names ``body`` assigns, writes into (``y[i] = v``) or appends to: in a loop's
    body, arithmetic reading one (``y * y`` after ``y[0] = v``) is not invariant."""
    changed = S.stored_names(body)
    for node in S.walk(body):
        if isinstance(node, S.Subscript) and isinstance(node.ctx, S.Store) and \
                isinstance(node.value, S.Name):
            changed.add(node.value.id)
        elif isinstance(node, S.Expr) and _is_append(node.value):
            changed.add(node.value.func.value.id)
    return changed


def _invariant(node, assigned):
    """Arithmetic worth hoisting out of a loop that assigns ``assigned``: it reads
    no assigned name, does at least one operation on a name, and cannot raise."""
    return _arithmetic(node, lambda name: name not in assigned, raises=False)


def _arithmetic(node, readable, raises):
    """Whether ``node`` is arithmetic (operators on numbers, no calls) that does at
    least one operation on a name, reads only names ``readable`` accepts, and,
    unless ``raises``, cannot raise."""
    if not isinstance(node, (S.BinOp, S.UnaryOp)):
        return False
    reads_name = False
    for sub in S.walk(node):
        if isinstance(sub, S.Name):
            if not readable(sub.id):
                return False
            reads_name = True
        elif isinstance(sub, S.BinOp):
            constant = isinstance(sub.right, S.Constant) and type(sub.right.value) in (int, float)
            if raises and isinstance(sub.op, _ARITHMETIC_OPS):
                continue
            if isinstance(sub.op, (S.Div, S.Mod)):
                if not (constant and sub.right.value != 0):
                    return False
            elif isinstance(sub.op, S.Pow):
                if not (constant and type(sub.right.value) is int and sub.right.value >= 0):
                    return False
            elif not isinstance(sub.op, _SAFE_OPS):
                return False
        elif isinstance(sub, S.UnaryOp):
            if not isinstance(sub.op, (S.USub, S.UAdd)):
                return False
        elif not isinstance(sub, (S.Constant, S.gast.operator, S.gast.unaryop,
                                  S.gast.expr_context)):
            return False
    return reads_name


def _opaque(tree, parsed):
    """Whether ``tree`` calls something other than a primitive."""
    return any(isinstance(n, S.Call) and not rules.is_primitive(parsed.callee_key(n))
               for n in S.walk(tree))




def _share_repeated_terms(tree, namer, written):
    """Arithmetic on parameters the function never changes, written more than once,
    is computed once: ``t1 = z / 2`` for ``(z / 2) ** v`` and ``(z / 2) ** 2``, as
    a person would, so the adjoint too divides by 2 once.

    One occurrence must be evaluated on every call (in a statement of the
    function body itself, not in a branch of ``if`` or ``a if c else b``, nor
    after ``and``/``or``), so computing the term before the first statement that
    uses it raises nothing the function would not raise anyway.
    """
    args = tree.args
    stable = {a.id for a in args.posonlyargs + args.args + args.kwonlyargs} - \
        S.stored_names(tree.body) - written
    terms = _Terms(stable)
    for stmt in tree.body:
        terms.add(stmt)
    while True:
        key = terms.longest_repeated()
        if key is None:
            return
        holding = terms.statements_holding(key)
        first = next(position for position, stmt in enumerate(tree.body)
                     if id(stmt) in holding)
        temp = namer.numbered("t")
        places = terms.places(key)  # every occurrence

        class Share(S.NodeTransformer):
            def visit(self, node):
                if id(node) in places:
                    return S.copy_location(S.name(temp), node)
                return self.generic_visit(node)

        term = S.deepcopy(terms.first_place(tree.body[first], key))
        for stmt in tree.body:
            if id(stmt) in holding:
                terms.remove(stmt)
                Share().visit(stmt)
                terms.add(stmt)
        tree.body.insert(first, S.copy_location(S.assign(temp, term), tree.body[first]))
        terms.add(tree.body[first])


def _arithmetic_terms(nodes, readable):
    """The ids of the BinOps among ``nodes`` (a :func:`syntax.walk` of a tree:
    parents before children) that are arithmetic reading only names in
    ``readable``, as :func:`_arithmetic` (raising allowed) finds each, from the
    leaves up in one pass."""
    arithmetic, named = {}, {}  # id(node) -> whether it is; whether it reads a name
    terms = set()
    for node in reversed(nodes):
        ident = id(node)
        if isinstance(node, S.Name):
            arithmetic[ident], named[ident] = node.id in readable, True
        elif isinstance(node, S.Constant):
            arithmetic[ident], named[ident] = True, False
        elif isinstance(node, S.BinOp):
            left, right = id(node.left), id(node.right)
            arithmetic[ident] = isinstance(node.op, _ARITHMETIC_OPS) and \
                arithmetic.get(left, False) and arithmetic.get(right, False)
            named[ident] = named.get(left, False) or named.get(right, False)
            if arithmetic[ident] and named[ident]:
                terms.add(ident)
        elif isinstance(node, S.UnaryOp):
            arithmetic[ident] = isinstance(node.op, (S.USub, S.UAdd)) and \
                arithmetic.get(id(node.operand), False)
            named[ident] = named.get(id(node.operand), False)
    return terms


class _Terms:
    """The arithmetic terms on the names ``stable`` in the statements added (see
    :func:`_share_repeated_terms`): {shape of a term: {id(node): (its statement,
    whether a call may not evaluate it, the node)}}, a statement taken out
    before it changes and added again after."""

    def __init__(self, stable):
        self.stable = stable
        self.found = {}
        self.repeated = set()  # the shapes of more than one term
        self.of_statement = {}  # id(statement) -> [(shape, id(node))] of its terms
        self.sources = {}  # shape -> the source its terms print as

    def add(self, stmt):
        sometimes, shapes = _conditional_parts(stmt), {}
        held = self.of_statement[id(stmt)] = []
        nodes = list(S.walk(stmt))
        terms = _arithmetic_terms(nodes, self.stable)
        for node in nodes:
            if id(node) in terms:
                key = S.shape(node, shapes)
                places = self.found.setdefault(key, {})
                places[id(node)] = (stmt, id(node) in sometimes, node)
                if len(places) > 1:
                    self.repeated.add(key)
                held.append((key, id(node)))

    def remove(self, stmt):
        for key, ident in self.of_statement.pop(id(stmt)):
            places = self.found[key]
            del places[ident]
            if len(places) < 2:
                self.repeated.discard(key)
            if not places:
                del self.found[key]

    def longest_repeated(self):
        """The shape of the longest term written more than once, not only where a
        call may not evaluate it, by its printed source (printed only when
        repeated); None when there is none.  (Two shapes never print alike.)"""
        candidates = [(len(source), source, key) for key in self.repeated
                      if not all(nested for _, nested, _ in self.found[key].values())
                      for source in [self.source(key)]]
        return max(candidates, key=lambda term: term[:2])[2] if candidates else None

    def source(self, key):
        if key not in self.sources:
            self.sources[key] = S.expr_source(next(iter(self.found[key].values()))[2])
        return self.sources[key]

    def places(self, key):
        """{id(node): node} of the terms of shape ``key`` (holding the nodes keeps
        their ids theirs while the tree changes)."""
        return {ident: node for ident, (_, _, node) in self.found[key].items()}

    def statements_holding(self, key):
        return {id(stmt) for stmt, _, _ in self.found[key].values()}

    def first_place(self, stmt, key):
        """The first term of shape ``key`` in ``stmt``, in :func:`syntax.walk`'s order."""
        return next(node for node in S.walk(stmt) if id(node) in self.found[key])


def _conditional_parts(stmt):
    """Ids of the nodes of ``stmt`` that a call may not evaluate: the whole of a
    compound statement, the branches of ``a if c else b``, the operands after
    the first of ``and``/``or``."""
    if isinstance(stmt, (S.If, S.For, S.While)):
        return {id(n) for n in S.walk(stmt)}
    parts = set()
    for node in S.walk(stmt):
        if isinstance(node, S.IfExp):
            parts |= {id(n) for n in S.walk([node.body, node.orelse])}
        elif isinstance(node, S.BoolOp):
            parts |= {id(n) for n in S.walk(node.values[1:])}
    return parts


def _mark_owned(tree, written, parsed):
    """Mark where an array written in place must first be copied: a parameter
    written in place is copied on entry (``tree.owned``), and a written array
    after an assignment that is not surely a new array (``stmt.owns``).  Whether
    a write may change memory another name reads afterwards, or memory derivo
    does not own, memory.sharing_faults decides."""
    params = {a.id for a in tree.args.args + tree.args.kwonlyargs}
    tree.owned = sorted(written & params)
    tree.apart = [(name, other, _shared_parameter_message(parsed, tree, name, other))
                  for name in tree.owned for other in sorted(params - {name})]
    for stmt in S.walk(tree):
        if isinstance(stmt, S.Assign) and isinstance(stmt.targets[0], S.Name) \
                and stmt.targets[0].id in written:
            # (another name for an array nothing reads afterwards: the copy is
            # what the write would change)
            stmt.owns = not is_new_array(stmt.value, parsed)


def _shared_parameter_message(parsed, tree, name, other):
    """The refusal of a call that gives parameter ``name``, which the function
    writes into, memory that parameter ``other`` shares: derivo writes into a copy
    of ``name``, so ``other`` would not see the write that NumPy shows it."""
    write = next((stmt for stmt in S.walk(tree.body) if isinstance(stmt, S.Assign)
                  and hasattr(stmt, "lineno") and name in {
                      n.id for target in stmt.targets if isinstance(target, S.Subscript)
                      for n in [S.root_name(target)] if n is not None}), tree)
    return str(parsed.error(
        UnsupportedSyntax, write, "cannot differentiate this write into parameter {0!r} "
        "when the call gives {0} and {1} the same memory: NumPy shows the write through "
        "{1} too, derivo writes into a copy of {0}; pass a copy ({0}.copy())".format(
            name, other), "aliased write"))


def _is_append(value):
    return (isinstance(value, S.Call) and isinstance(value.func, S.Attribute)
            and value.func.attr == "append" and isinstance(value.func.value, S.Name)
            and len(value.args) == 1 and not value.keywords)


def is_append(stmt):
    """Whether ``stmt`` is ``xs.append(item)`` on a list ``xs``."""
    return isinstance(stmt, S.Expr) and _is_append(stmt.value)


#: Where a statement evaluates an expression once, before anything else it does.
_EVALUATED_FIRST = {S.Assign: "value", S.gast.AugAssign: "value", S.gast.AnnAssign: "value",
                    S.Return: "value", S.Expr: "value", S.If: "test", S.For: "iter",
                    S.gast.Assert: "test"}
#: The functions that consume an iterable whole (given a generator expression, ssa
#: lowers it into the list it would be).
CONSUMERS = (sum, min, max, any, all, list, tuple, sorted, math.fsum, math.prod)


_COMPREHENSIONS = (S.gast.ListComp, S.gast.DictComp, S.gast.GeneratorExp)


def _lower_comprehensions(block, namer, built, parsed):
    """``[e for x in xs if c]``, or the generator expression ``(e for x in xs)``,
    in a statement becomes a list built before it, the loop derivo differentiates
    like any other (``items1 = []``, ``for x1 in xs: if c: items1.append(e)``),
    with the comprehension's variables renamed so they stay its own; a dict
    comprehension ``{k: v for ...}`` likewise a dict (``items1 = {}``,
    ``items1[k] = v``).

    Only where the statement evaluates the expression first and once (not in a
    ``while`` test, nor under ``and``, ``or`` or a conditional expression, which
    may skip it); elsewhere the fence refuses it.  A generator expression is
    lowered only as the argument of a function that consumes it at once, as a
    list would be (``sum``, ``max``, ``all``..., see ``CONSUMERS``).
    The names of the lists go into ``built``: each is filled before its one read,
    and made anew before it is filled again.
    """
    index = 0
    while index < len(block):
        stmt = block[index]
        field = _EVALUATED_FIRST.get(type(stmt))
        found = _comprehension_in(stmt, field, parsed) if field else None
        if found is None:
            for nested in ("body", "orelse"):
                if isinstance(getattr(stmt, nested, None), list):
                    _lower_comprehensions(getattr(stmt, nested), namer, built, parsed)
            index += 1
            continue
        parent, attr, position, comprehension = found
        items = namer.fresh("items")
        built.add(items)
        renames = {n.id: namer.fresh(n.id) for g in comprehension.generators
                   for n in S.walk(g.target) if isinstance(n, S.Name)}

        def renamed(node):
            node = S.deepcopy(node)
            for name in S.walk(node):
                if isinstance(name, S.Name) and name.id in renames:
                    name.id = renames[name.id]
            return node

        if isinstance(comprehension, S.gast.DictComp):
            body = [S.assign(S.gast.Subscript(value=S.name(items), slice=renamed(comprehension.key),
                                              ctx=S.gast.Store()), renamed(comprehension.value))]
            made = S.gast.Dict(keys=[], values=[])
        else:
            body = [S.Expr(value=S.call(S.attribute(S.name(items), "append"),
                                         renamed(comprehension.elt)))]
            made = S.gast.List(elts=[], ctx=S.Load())
        for number, generator in reversed(list(enumerate(comprehension.generators))):
            for condition in reversed(generator.ifs):
                body = [S.if_(renamed(condition), body)]
            # the first iterable is evaluated outside the comprehension's scope
            iterable = renamed(generator.iter) if number else generator.iter
            body = [S.for_(renamed(generator.target), iterable, body)]
        loop = [S.assign(items, made)] + body
        for new in loop:
            for node in S.walk(new):
                S.copy_location(node, comprehension)
        if position is None:
            setattr(parent, attr, S.name(items))
        else:
            getattr(parent, attr)[position] = S.name(items)
        block[index:index] = loop  # examined again: the new loop may hold another


def _comprehension_in(stmt, field, parsed):
    """(parent, field, position in the field or None, node) of the first list
    comprehension, or generator expression given to one of ``CONSUMERS``, the
    statement's ``field`` surely evaluates, or None."""
    pending = [(stmt, field, None, getattr(stmt, field))]
    while pending:
        parent, attr, position, node = pending.pop(0)
        consumed = isinstance(node, (S.gast.ListComp, S.gast.DictComp)) or \
            isinstance(node, S.gast.GeneratorExp) \
            and isinstance(parent, S.Call) and parsed.callee_key(parent) in CONSUMERS
        if consumed and not any(g.is_async for g in node.generators):
            return parent, attr, position, node
        if not isinstance(node, S.AST) or \
                isinstance(node, (S.gast.IfExp, S.gast.BoolOp, S.gast.Lambda)):
            continue
        for name, value in S.gast.iter_fields(node):
            if isinstance(value, list):
                pending += [(node, name, index, child) for index, child in enumerate(value)]
            else:
                pending.append((node, name, None, value))
    return None


def _mark_opaque(tree, parsed):
    for stmt in S.walk(tree):
        if isinstance(stmt, S.Assign):
            stmt.opaque = _opaque(stmt.value, parsed)


def _is_user_function(obj):
    # not a bound method (obj.method): its code takes self, which the call does not
    # pass; it is called as it is, and refused if a differentiated value reaches it
    return (callable(obj) and hasattr(obj, "__code__") and not rules.is_primitive(obj)
            and not isinstance(obj, types.MethodType)
            and not getattr(obj, "derivo_opaque", False)  # derivo.hessian(g): not g
            and not S.is_derivo(obj) and not in_a_library(obj))


def _loop_level(body):
    """Statements of a loop body outside nested loops (where a break binds)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, S.If):
            yield from _loop_level(stmt.body)
            yield from _loop_level(stmt.orelse)


read_helpers_with(normalize)
