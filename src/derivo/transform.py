"""The pipeline, end to end: parse -> outline (reverse mode) -> ssa -> inline ->
analyze -> reverse (or forward) -> optimize -> codegen -> compile, for a
function and every user function it calls.

A :class:`Build` collects one generated module: the requested derivative plus
one VJP function (JVP function, in forward mode) per (called user function,
differentiated parameters).
"""

import ast
import builtins
import contextlib
import functools
import gc
import inspect
import logging
import textwrap
import time

import numpy as np

from . import codegen, runtime, trees
from . import syntax as S
from .errors import DerivoError, UnsupportedSyntax
from .fence import refuse_rerun_calls
from .forward import forward
from .names import Namer, identifier, names_in
from .lift import code_key
from .parse import GENERATED_PREFIX, MISSING, Outlined, is_derivative, parse, too_deep
from .inline import inline_calls
from .outline import outline_loops
from .reverse import reverse, reverse_in_halves
from .analyze import refuse_whole
from .ssa import normalize
from .memory import in_a_library

#: derivo's log: each transform at DEBUG, a transform slower than SLOW_SECONDS at INFO
#: (``logging.basicConfig(level=logging.INFO)`` shows them).
LOG = logging.getLogger("derivo")
SLOW_SECONDS = 1.0

KIND_SUFFIX = {"grad": "grad", "value_and_grad": "value_and_grad", "vjp": "vjp", "jvp": "jvp"}


#: Calls that read an argument as a whole list or array.
_WHOLE_READERS = {"len", "sum", "list", "tuple", "zip", "enumerate", "reversed", "sorted",
                  "asarray", "array", "shape", "size", "stack", "concatenate", "zeros_for"}


def _read_as_containers(tree, params):
    """The names of ``params`` that ``tree`` indexes, iterates, unpacks, or gives
    to a call that reads it whole (``len(xs)``, ``np.asarray(xs)``), itself or
    through copies (``seq1 = p``)."""
    read = {n.value.id for n in S.walk(tree) if isinstance(n, S.Subscript) and
            isinstance(n.value, S.Name)}
    read |= {n.iter.id for n in S.walk(tree) if isinstance(n, S.For) and
             isinstance(n.iter, S.Name)}
    read |= {a.id for n in S.walk(tree) if isinstance(n, S.Call) and
             getattr(n.func, "id", getattr(n.func, "attr", None)) in _WHOLE_READERS
             for a in n.args if isinstance(a, S.Name)}
    assignments = [n for n in S.walk(tree) if isinstance(n, S.Assign) and
                   isinstance(n.value, S.Name)]
    # unpacked: a, b = p
    read |= {n.value.id for n in assignments
             if any(isinstance(t, (S.Tuple, S.List)) for t in n.targets)}
    copies = [(n.value.id, t.id) for n in assignments for t in n.targets
              if isinstance(t, S.Name)]
    containers = set()
    for param in params:
        names, pending = {param}, [param]
        while pending:  # the param and its copies, and theirs (q = p; r = q)
            name = pending.pop()
            fresh = {copy for source, copy in copies if source == name} - names
            names |= fresh
            pending += fresh
        if names & read:
            containers.add(param)
    return containers


@contextlib.contextmanager
def collection_paused():
    """Pause Python's cyclic garbage collector: a build makes many tree nodes and
    no cycles that matter, and collecting as it goes costs a fifth of its time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Build:
    """One generated module under construction."""

    def __init__(self, arrays=False, loops="stack", checkpoints=None, schedule="revolve",
                 keeps_residuals=True):
        self.arrays = arrays          # values may be NumPy arrays (see reverse.reverse)
        # a called function's VJP in halves that hand over its residuals (see
        # derivo.residuals), or, without, one that runs its primal sweep again
        self.keeps_residuals = keeps_residuals
        self.loops = loops            # how reverse mode undoes loops (see analyze, outline)
        self.checkpoints = checkpoints  # states a checkpointed loop keeps (None: default)
        self.schedule = schedule      # ... and how it recomputes the others
        self.functions = []
        self.namespace = {}           # free name -> object, shared by all functions
        self.user_sources = {}        # name -> source of a user function the primal calls
        self.origins = {}             # generated name -> (user's file, line of its def)
        self.comments = S.Comments()
        self.names = Namer()
        self.vjps = {}                # (code object, params) -> generated name, or halves
        self.outlined = set()         # names of outlined functions already emitted
        self.jvps = {}                # the same, for forward mode
        self.in_progress = []         # functions being transformed (to catch recursion)

    def add(self, func, wrt, kind, tuple_wrt=False, name=None, call=None, has_aux=False,
            pullback=False, loops=None, fixed=None, halves=None):
        """Transform ``func`` and append its derivative; return the new function's name.
        ``call`` is (the parsed caller, the call) when a caller calls the derivative,
        for the location of an error.  ``has_aux``: ``func`` returns (loss, aux);
        ``pullback``: a VJP as a generator (see :func:`derivo.reverse.reverse`);
        ``loops``: how its loops are reversed, if not as the build's; ``fixed``: the
        values of the parameters that say what a call calls (see
        :attr:`derivo.parse.Parsed.fixed`); ``halves``: the names of a VJP's
        forward and backward halves, to make it in those."""
        label = "{} of {}".format(kind, getattr(func, "__qualname__", func))
        LOG.debug("transforming the %s", label)
        started = time.perf_counter()
        with collection_paused():
            try:
                name = self._add(func, wrt, kind, tuple_wrt, name, call, has_aux, pullback,
                                 loops or self.loops, fixed or {}, halves)
            except RecursionError:
                raise too_deep(func) from None
        elapsed = time.perf_counter() - started
        LOG.log(logging.INFO if elapsed > SLOW_SECONDS else logging.DEBUG,
                "transformed the %s in %.1f s", label, elapsed)
        return name

    def _add(self, func, wrt, kind, tuple_wrt, name, call, has_aux, pullback, loops, fixed,
             halves):
        if kind != "jvp" and is_generated(func):
            if has_aux:
                raise DerivoError("has_aux=True takes a function that returns (loss, aux), "
                                  "not a derivative")
            if pullback:
                raise DerivoError("derivo.vjp of a derivative: use derivo.jvp or "
                                  "derivo.hvp for its derivative")
            return self.add_over_tangents(func, wrt, kind, tuple_wrt, name, call)
        parsed = parse(func)
        parsed.fixed.update(fixed)
        # the module's names must not hide what the user's code reads (f_trips = 3.0)
        self.names.taken.update(name for name in names_in(parsed.tree)
                                if name in parsed.globals or name in parsed.closure)
        if kind == "vjp" and call is not None and halves is None:
            refuse_rerun_calls(parsed, parsed.tree.body, _HELPER_RUN_AGAIN.format(
                func.__name__), _HELPER_INSTEAD.format(func.__name__))
        if kind != "jvp" and not isinstance(func, Outlined):
            whole = parsed
            parsed = outline_loops(parsed, self.loops, self.checkpoints, self.schedule,
                                   self.names)
            parsed.fixed.update(fixed)
            if parsed is not whole:
                self.refuse_as_written(whole, wrt)
        if func in self.in_progress and call is None:  # (a call's: see _helper)
            raise UnsupportedSyntax(
                "cannot differentiate recursive function {!r}: derivo transforms each "
                "function once and recursion would need a stack of frames; rewrite it as "
                "a loop".format(func.__name__), parsed.filename, parsed.tree.lineno,
                parsed.tree.col_offset, "recursion")
        self.in_progress.append(func)
        try:
            normalized = inline_calls(self.with_array_code(normalize(parsed)),
                                      self.normalize_callee)
            if halves is not None:
                self.bind_free_names(parsed, normalized.tree)
                self.functions += reverse_in_halves(normalized, wrt, self, halves, tuple_wrt,
                                                    self.arrays, loops)
                for half in halves:
                    self.origins[half] = (parsed.filename, parsed.tree.lineno)
                return halves
            name = name or self.names.fresh("{}_{}".format(parsed.tree.name, KIND_SUFFIX[kind]))
            self.names.taken.add(name)
            self.origins[name] = (parsed.filename, parsed.tree.lineno)
            self.bind_free_names(parsed, normalized.tree)
            if kind == "jvp":
                self.functions.append(forward(normalized, wrt, self, name, self.arrays))
            else:
                self.functions.append(reverse(normalized, wrt, self, kind, name, tuple_wrt,
                                              self.arrays, loops, has_aux, pullback))
            return name
        finally:
            self.in_progress.pop()

    def refuse_as_written(self, parsed, wrt):
        """Raise the refusals the function, read whole, gets from the stack
        strategy: outlining moves a loop into step functions that take each name
        as an argument of their own, which hides what the loop shares with the
        code around it (an array written through another name, a function kept
        in a list and called after the loop) and makes nothing differentiable
        that was not, so every strategy refuses alike."""
        refuse_whole(inline_calls(self.with_array_code(normalize(parsed)),
                                  self.normalize_callee), wrt, self.arrays)

    def add_over_tangents(self, func, wrt, kind, tuple_wrt, name, call=None):
        """The gradient (or VJP) of code derivo generated, by forward mode over it:
        one tangent pass per parameter in ``wrt``.  Its reverse sweep pops a
        stack, which reverse mode cannot undo; its tangent code needs no stack.
        Exact, and as cheap as reverse mode for a few parameters."""
        tree = parse(func).tree
        returned = tree.body[-1].value if isinstance(tree.body[-1], S.Return) else None
        containers = sorted(_read_as_containers(tree, wrt))
        message = None
        if kind == "vjp" and isinstance(returned, S.Tuple):
            message = (
                "cannot differentiate through {}, a derivative that returns several values "
                "(a gradient with respect to several parameters, or a value and a gradient): "
                "derivo's tangent passes over generated code give one result's derivative; "
                "take a derivative with respect to one parameter at a time".format(tree.name))
        elif containers and not self.arrays:  # array code: one pass per component
            message = (
                "cannot differentiate through {} with respect to {}, which it reads as a list "
                "or an array: derivo's tangent passes over generated code take one float "
                "direction per parameter".format(tree.name, ", ".join(containers)))
        if message and call is None:
            raise DerivoError(message)
        if message:
            caller, node = call
            raise caller.error(UnsupportedSyntax, node, message, "derivative of a derivative")
        tangent = self.add(func, wrt, "jvp")
        args = tree.args
        params = [a.id for a in args.args]
        keywords = [S.gast.keyword(arg=a.id, value=S.name(a.id)) for a in args.kwonlyargs]
        name = name or self.names.fresh("{}_{}".format(tree.name, KIND_SUFFIX[kind]))
        self.names.taken.add(name)
        local = Namer(params + [a.id for a in args.kwonlyargs])
        seed = [local.fresh("bresult")] if kind == "vjp" else []
        out = local.fresh("value" if kind == "value_and_grad" else "_")
        if self.arrays:
            body, partials = self._passes_at_run_time(tangent, params, args, wrt, seed, local,
                                                      out)
        else:
            body, partials = self._passes(tangent, params, keywords, wrt, seed, local, out)
        grads = partials[0] if len(partials) == 1 and not tuple_wrt else S.tuple_(partials)
        result = S.tuple_([S.name(out), grads]) if kind == "value_and_grad" else grads
        self.functions.append(S.function(
            name, seed + params, body + [S.return_(result)],
            defaults=S.deepcopy(args.defaults), kwonly=[a.id for a in args.kwonlyargs],
            kw_defaults=S.deepcopy(args.kw_defaults)))
        return name

    def _passes(self, tangent, params, keywords, wrt, seed, local, out):
        """One tangent pass per parameter, written out: a float's direction is 1.0."""
        body, partials = [], []
        for index, param in enumerate(wrt):
            directions = [S.const(1.0 if i == index else 0.0) for i in range(len(wrt))]
            partial = local.fresh("d" + param)
            body.append(S.assign(S.tuple_([S.store(out), S.store(partial)], store_ctx=True),
                                 S.call(tangent, *directions, *map(S.name, params),
                                        keywords=S.deepcopy(keywords))))
            partials.append(S.binop(S.name(seed[0]), S.Mult(), S.name(partial))
                            if seed else S.name(partial))
        return body, partials

    def _passes_at_run_time(self, tangent, params, args, wrt, seed, local, out):
        """The passes of array code, which :func:`runtime.gradient_by_tangents` makes
        at run time: one per component of each array it is called with."""
        partials = [local.fresh("d" + param) for param in wrt]
        helper = self.bind("gradient_by_tangents", runtime.gradient_by_tangents, avoid=params)
        kwargs = S.gast.Dict(keys=[S.const(a.id) for a in args.kwonlyargs],
                             values=[S.name(a.id) for a in args.kwonlyargs])
        positions = S.tuple_([S.const(params.index(param)) for param in wrt])
        call = S.call(helper, S.name(tangent), S.tuple_([S.name(p) for p in params]), kwargs,
                      positions, *(S.name(s) for s in seed))
        products = S.tuple_([S.store(p) for p in partials], store_ctx=True)
        body = [S.assign(S.tuple_([S.store(out), products], store_ctx=True), call)]
        return body, [S.name(p) for p in partials]

    def normalize_callee(self, func):
        """The statement form of a function called by one being transformed."""
        if func in self.in_progress:
            raise UnsupportedSyntax("recursive call", construct="recursion")
        self.in_progress.append(func)
        try:
            return self.with_array_code(normalize(parse(func)))
        finally:
            self.in_progress.pop()

    def with_array_code(self, normalized):
        """``normalized``, where array code calls a derivative's array code: its
        scalar code does not sum what broadcasting spread."""
        if self.arrays:
            for call in S.walk(normalized.tree):
                callee = getattr(call, "user_function", None)
                if hasattr(callee, "derivo_array_code"):
                    call.user_function = callee.derivo_array_code()
        return normalized

    def vjp_function(self, callee, params, caller, call):
        """The name of the VJP of user function ``callee`` w.r.t. ``params``."""
        return self._helper(callee, params, caller, call, "vjp", self.vjps)

    def splits(self, callee):
        """Whether the VJP of user function ``callee`` comes in halves: that of
        code derivo generated is a tangent pass over it (see add_over_tangents)."""
        return self.keeps_residuals and not is_generated(callee)

    def splits_any(self):
        """Whether a VJP of the module comes in halves."""
        return any(isinstance(name, tuple) for name in self.vjps.values())

    def vjp_halves(self, callee, params, caller, call):
        """The names of the forward and backward halves of the VJP of user
        function ``callee`` w.r.t. ``params`` (see :mod:`derivo.residuals`)."""
        return self._helper(callee, params, caller, call, "halves", self.vjps)

    def jvp_function(self, callee, params, caller, call):
        """The name of the JVP of user function ``callee`` w.r.t. ``params``."""
        return self._helper(callee, params, caller, call, "jvp", self.jvps)

    def step_vjp(self, loop, params):
        """The name of the VJP w.r.t. ``params`` of a checkpointed ``for`` loop's
        runner of trips (see outline), the stack-reversed code of a segment of
        trips, or of a ``while`` loop's step (one trip).  It returns a tuple,
        whatever the number of ``params``."""
        function = loop.runner if loop.kind == "for" else loop.step
        key = (function, params)
        if key not in self.vjps:
            refuse_rerun_calls(loop.parsed, loop.rerun, _LOOP_RUN_AGAIN, _LOOP_INSTEAD)
            self.vjps[key] = self.names.fresh(function.__name__ + "_vjp")
            self.add(function, list(params), "vjp", tuple_wrt=True, name=self.vjps[key],
                     loops="stack" if function is loop.runner else None)
        return self.vjps[key]

    def outlined_function(self, outlined):
        """Emit an outlined function (a checkpointed loop's runner of trips) as
        the user wrote it; return its name."""
        if outlined.__name__ not in self.outlined:
            self.outlined.add(outlined.__name__)
            parsed = outlined.parse()
            self.bind_free_names(parsed, parsed.tree)
            self.functions.append(parsed.tree)
        return outlined.__name__

    def _helper(self, callee, params, caller, call, kind, made):
        """Transform ``callee`` once per (kind, params) for the functions calling it;
        kind ``"halves"``: the forward and backward halves of its VJP, a pair of names."""
        key = (code_key(callee), params)
        if key in made:  # (a recursive call too: its derivative calls itself)
            return made[key]
        # a lambda's derivative is named after the name it is called by, a special
        # method's after its class (Model.__call__: Model_call)
        base = callee.__name__ if callee.__name__.isidentifier() else \
            getattr(call.func, "id", identifier(callee.__name__))
        if base.startswith("__") and base.endswith("__"):
            owner = callee.__qualname__.rpartition(".")[0].rpartition(".")[2]
            base = identifier("{}_{}".format(owner, base.strip("_")) if owner else base.strip("_"))
        if kind == "halves":
            halves = made[key] = tuple(self.names.fresh("{}_{}".format(base, half))
                                       for half in ("forward", "backward"))
            self.add(callee, list(params), "vjp", tuple_wrt=len(params) > 1,
                     call=(caller, call), halves=halves)
            return halves
        name = made[key] = self.names.fresh("{}_{}".format(base, kind))
        self.add(callee, list(params), kind, tuple_wrt=kind == "vjp" and len(params) > 1,
                 name=name, call=(caller, call))
        return name

    def template_names(self, template, local_names):
        """How generated code names each free name of a rule template (``math``),
        avoiding ``local_names`` of the function the template is pasted into."""
        return {ident: self.bind(ident, template.globals.get(
                    ident, getattr(builtins, ident, MISSING)), avoid=local_names)
                for ident in template.free_names}

    def bind(self, ident, obj, avoid=None):
        """Bind ``obj`` in the module namespace, as ``ident`` when that is free.

        Without ``avoid`` the name must be ``ident`` (user code refers to it);
        with it, an alias is chosen when ``ident`` is taken.
        """
        bound = self.namespace.get(ident, MISSING)
        if bound is MISSING and getattr(builtins, ident, MISSING) is obj and \
                not (avoid and ident in avoid):
            return ident  # a builtin the module sees anyway
        clash = bound is not MISSING and bound is not obj
        if not clash and not (avoid and ident in avoid):
            self.namespace[ident] = obj
            return ident
        if avoid is None:
            raise DerivoError("cannot generate one module: the name {!r} means two "
                              "different things in the functions involved".format(ident))
        for name, existing in self.namespace.items():
            if existing is obj and name not in avoid:
                return name
        alias = Namer(set(self.namespace) | set(avoid)).fresh("_" + ident)
        self.namespace[alias] = obj
        return alias

    def bind_free_names(self, parsed, tree):
        """Bind every global, closure variable and function the user's code reads."""
        local = parsed.local_names | {n.id for n in S.walk(tree) if isinstance(n, S.Name)
                                      and isinstance(n.ctx, S.Store)}
        renamed = {}
        for node in S.walk(tree):
            if isinstance(node, S.Name) and isinstance(node.ctx, S.Load) \
                    and node.id not in local:
                node.id = renamed.get(node.id, node.id)
                obj = parsed.resolve(node.id)
                if obj is MISSING or _is_builtin(node.id, obj) or \
                        self.namespace.get(node.id, MISSING) is obj:
                    continue
                if node.id in self.namespace:
                    # another function of the module holds the name for another value
                    # (a method specialised on another object, see callees; the module
                    # generated for it, differentiated again; a closure variable of two
                    # closures of one factory, of two decorators' wrappers): this one's
                    # is held as another.  (A function changed is transformed again; a
                    # name read for two values is never given one by refresh: see
                    # cache.LiveReads.refresh.)
                    alias = Namer(set(self.namespace) | set(parsed.globals) |
                                  set(parsed.closure) | local).fresh(node.id)
                    parsed.closure[alias] = obj
                    node.id = renamed[node.id] = alias
                self.bind(node.id, obj)
                # a library's function is imported by a saved module, never copied
                source = _user_source(obj) if callable(obj) and getattr(
                    obj, "__code__", None) is not None and not S.is_derivo(obj) and \
                    not in_a_library(obj) else None
                if source is not None:  # (a copy held under another name: see callees)
                    self.user_sources[node.id] = source if obj.__name__ == node.id else \
                        "{}\n{} = {}\n".format(source.rstrip() + "\n", node.id, obj.__name__)

    def source(self):
        return codegen.render(self.functions, self.comments)

    def called_sources(self):
        """The sources of :attr:`user_sources` that the generated functions read,
        or that a function read so reads: a function whose VJP comes in halves
        is called through those only."""
        loaded = S.loaded_names(self.functions)
        called, pending = {}, sorted(loaded & set(self.user_sources))
        while pending:
            name = pending.pop()
            if name not in called:
                called[name] = self.user_sources[name]
                reads = {n.id for n in ast.walk(ast.parse(called[name]))
                         if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
                pending += sorted(reads & set(self.user_sources))
        return called


#: When the reverse sweep runs code again (see derivo.fence.refuse_rerun_calls), and
#: what to write instead of a call that may give other numbers the second time
_LOOP_RUN_AGAIN = ("the derivative runs the trips of a checkpointed loop again in its "
                   "reverse sweep, from the loop states it kept")
_LOOP_INSTEAD = ("draw the numbers before the loop and index them in it (eps = "
                 "rng.standard_normal((steps, n)), then eps[i] in trip i), or reverse the "
                 "loop with loops=\"stack\", which keeps what each trip computed")
_HELPER_RUN_AGAIN = ("the derivative runs {!r} again in its reverse sweep: a function with a "
                     "loop or a branch gets a VJP of its own, which runs its body again to "
                     "find the values its derivative reads")
_HELPER_INSTEAD = ("draw the numbers in the caller and pass them in (eps = "
                   "rng.standard_normal(shape), then {}(..., eps))")


def is_generated(func):
    """Whether ``func`` is code derivo generated (and compiled)."""
    code = getattr(func, "__code__", None)
    return code is not None and code.co_filename.startswith(GENERATED_PREFIX)


def uses_numpy(func, seen=None):
    """Whether ``func``, or a Python function it names, refers to NumPy.  derivo's
    runtime helpers do not count: they take numbers as well as arrays, and the
    scalar code derivo generates calls them (``zeros_for``, ``getitem_vjp``)."""
    seen = set() if seen is None else seen
    code = getattr(func, "__code__", None)
    if code is None or code in seen:
        return False
    seen.add(code)
    cells = [c.cell_contents for c in func.__closure__ or () if _filled(c)]
    values = [func.__globals__.get(n) for n in code.co_names] + cells
    for value in values:
        if _holds_arrays(value):
            return True
        module = getattr(value, "__name__", "") if inspect.ismodule(value) else \
            getattr(value, "__module__", None) or ""
        if module == "numpy" or module.startswith("numpy."):
            return True
        if any(not S.is_derivo(f) and uses_numpy(f, seen) for f in _functions_in(value)):
            return True
    return False


def _functions_in(value, seen=None):
    """The Python functions a value the code reads may call: itself, what a partial
    or a bound method calls, the functions of a user class or of an object's class,
    and those of the items of a list, tuple or dict (``BASIS[0](x)``, ``layer(x)``);
    not a derivative's code, which takes numbers as derivo made it for them."""
    seen = set() if seen is None else seen
    if id(value) in seen or is_derivative(value):
        return
    seen.add(id(value))
    if inspect.isfunction(value):
        yield value
    elif isinstance(value, functools.partial):
        yield from _functions_in(value.func, seen)
    elif inspect.ismethod(value):
        yield from _functions_in(value.__func__, seen)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _functions_in(item, seen)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _functions_in(item, seen)
    elif not isinstance(value, _PLAIN_VALUES) and not inspect.ismodule(value):
        for klass in (value if inspect.isclass(value) else type(value)).__mro__:
            yield from (f for f in vars(klass).values()
                        if inspect.isfunction(f) and not in_a_library(f))


#: values that call nothing
_PLAIN_VALUES = (int, float, complex, str, bytes, type(None), np.ndarray, np.generic)


def _holds_arrays(value):
    """Whether ``value``, a global or a closure variable, is an array or a container
    (see :mod:`derivo.trees`) holding one: code reading it is array code (``X * w``
    broadcasts)."""
    if isinstance(value, np.ndarray):
        return True
    if not trees.is_container(value):
        return False
    found = trees.parts(value)
    return any(map(_holds_arrays, found.values() if isinstance(found, dict) else found))


def _filled(cell):
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _is_builtin(ident, obj):
    return getattr(builtins, ident, MISSING) is obj


def _user_source(func):
    """The source that defines ``func`` in a module of its own, or None: a function
    made inside another one reads that one's names (``def g(x, w=w)``), but for a
    local function derivo lifted (see lift), whose source is as derivo made it.  A
    lambda has no source of its own: its lines are the statement that holds it."""
    lifted = getattr(func, "derivo_lifted", None)
    if lifted is not None:
        tree = S.deepcopy(lifted.tree)
        tree.name = func.__name__
        return S.to_source(tree)
    if "<locals>" in func.__qualname__ or func.__name__ == "<lambda>":
        return None
    try:
        return textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError):
        return None
