"""Forward mode: ``derivo.jvp``, ``derivo.tangent``, ``jacobian``, ``hessian``, ``hvp``.

Every construct of the reverse-mode tests goes through the tangent code and is
compared with central finite differences and with reverse mode by the
dot-product test ``<JVP(v), u> == <v, VJP(u)>``; so are the array functions of
the array tests and every probe of the NumPy rule tests.  Plus: memory does not
grow with the number of loop trips, the generated source is deterministic, and
what forward mode cannot differentiate is refused with a DerivoError.
"""

import functools
import importlib.util
import math
import os
import pathlib
import subprocess
import sys
import textwrap
import tracemalloc
import zlib

import numpy as np
import pytest

import derivo
from derivo import rules
from checks import assert_close, numeric_grad, resolve_wrt

import test_arrays as arrays
import test_reverse as reverse
import test_reverse_writes as writes
from test_reverse import besselj, logistic

REPO = pathlib.Path(__file__).resolve().parent.parent
SRC = REPO / "src"

CONSTRUCTS = (reverse.ARITH + reverse.MATH + reverse.BUILTINS + reverse.NONDIFF +
              reverse.ASSIGN + reverse.BRANCHES + reverse.FOR + reverse.WHILE +
              reverse.BREAK + reverse.NESTED + reverse.RETURNS + reverse.CALLS)


def float_positions(args):
    return [i for i, a in enumerate(args) if isinstance(a, float)]


def inner(a, b):
    if isinstance(a, tuple):
        return sum(inner(x, y) for x, y in zip(a, b))
    return float(np.sum(np.asarray(a, dtype=float) * np.asarray(b, dtype=float)))


def seeded(*values):
    return np.random.default_rng(zlib.crc32(repr(values).encode()))


# --- every construct of the reverse-mode tests ----------------------------------------------

@pytest.mark.parametrize("f, args, wrt", CONSTRUCTS)
def test_jvp_matches_finite_differences(f, args, wrt):
    for w in wrt if isinstance(wrt, tuple) else (wrt,):
        position, _ = resolve_wrt(f, w)
        tangents = [None] * len(args)
        tangents[position] = 1.0
        value, tangent = derivo.jvp(f, args, tangents)
        assert value == f(*args)
        assert_close(tangent, numeric_grad(f, args, w))


@pytest.mark.parametrize("f, args, wrt", CONSTRUCTS)
def test_jvp_and_vjp_agree(f, args, wrt):
    # <JVP(v), u> == <v, VJP(u)> along a random direction of every float argument
    rng = seeded(f.__name__, args)
    v = [float(rng.normal()) if isinstance(a, float) else None for a in args]
    u = float(rng.normal())
    _, tangent = derivo.jvp(f, args, v)
    _, vjp_fn = derivo.vjp(f, *args)
    cotangents = vjp_fn(u)
    right = sum(vi * ci for vi, ci in zip(v, cotangents) if vi is not None)
    assert tangent * u == pytest.approx(right, rel=1e-12, abs=1e-12)


def test_tuple_results_have_tuple_tangents():
    value, tangent = derivo.jvp(reverse._polar, (1.5, 0.3), (1.0, 0.0))
    assert value == reverse._polar(1.5, 0.3)
    assert_close(tangent, (math.cos(0.3), math.sin(0.3)))
    value, tangent = derivo.jvp(reverse._polar, (1.5, 0.3), (0.0, 1.0))
    assert_close(tangent, (-1.5 * math.sin(0.3), 1.5 * math.cos(0.3)))


def test_output_independent_of_the_input_has_zero_tangent():
    value, tangent = derivo.jvp(reverse.with_int_and_bool, (1.5, 3, False), (None, None, None))
    assert (value, tangent) == (4.5, 0.0)
    assert derivo.jvp(reverse.b_float_int, (1.5, 3), (None, None))[1] == 0.0


# --- arrays: the array tests' functions and every NumPy rule ---------------------------------

def _normal(rng, *shape):
    return rng.normal(size=shape)


ARRAY_CASES = [
    (arrays.outer_sum, lambda r: (_normal(r, 3, 1), _normal(r, 1, 4))),
    (arrays.dense, lambda r: (_normal(r, 5, 3), _normal(r, 3, 4), _normal(r, 4))),
    (arrays.column_scale, lambda r: (_normal(r, 2, 3), _normal(r, 3))),
    (arrays.scalar_and_array, lambda r: (0.7, _normal(r, 4))),
    (arrays.scalar_coefficient, lambda r: (_normal(r, 4), 0.3)),
    (arrays.with_methods, lambda r: (_normal(r, 3, 4), _normal(r, 4, 3))),
    (arrays.method_chain, lambda r: (_normal(r, 3, 4),)),
    (arrays.uses_shape, lambda r: (_normal(r, 3, 4),)),
    (arrays.uses_constructors, lambda r: (_normal(r, 3),)),
    (arrays.rnn_loss, lambda r: (_normal(r, 4, 4) * 0.5, _normal(r, 4, 3) * 0.5,
                                 _normal(r, 4), _normal(r, 6, 3))),
    (arrays.rows_loop, lambda r: (_normal(r, 4, 3), _normal(r, 3))),
    (arrays.cumulative_product_loop, lambda r: (_normal(r, 5, 3),)),
    (arrays.stacked_states, lambda r: (_normal(r, 3), 1.3)),
    (arrays.write_rows, lambda r: (_normal(r, 4, 3),)),
    (arrays.prefix_recurrence, lambda r: (_normal(r, 5), 0.7)),
    (arrays.masked, lambda r: (_normal(r, 5),)),
    (arrays.branch_and_while_on_array_data, lambda r: (np.abs(_normal(r, 4)),)),
    (arrays.branch_and_while_on_array_data, lambda r: (-np.abs(_normal(r, 4)),)),
    (arrays.calls_helper, lambda r: (_normal(r, 3, 4), _normal(r, 4))),
    (arrays.layer, lambda r: (_normal(r, 3, 4), _normal(r, 4))),
    (arrays.mutating_looking, lambda r: (_normal(r, 3, 2), _normal(r, 3, 2))),
    (arrays.inplace_on_argument, lambda r: (_normal(r, 3),)),
    (arrays.plain_polynomial, lambda r: (_normal(r, 3), _normal(r, 3))),
    (arrays.broadcasting_plain, lambda r: (_normal(r, 3, 1), _normal(r, 4))),
    (arrays.softmax_loss, lambda r: (_normal(r, 4, 3), _normal(r, 3), 2)),
    (arrays.gather_loss, lambda r: (_normal(r, 5, 2), np.array([4, 0, 4, 1]),
                                    np.array([1, 0, 2, 0, 3]))),
    (arrays.scalar_count_times, lambda r: (_normal(r, 6), 3)),
    (arrays.nested_helpers, lambda r: (_normal(r, 3),)),
    (arrays.unused_argument, lambda r: (_normal(r, 3), _normal(r, 2))),
    (arrays.short_rnn, lambda r: (np.eye(2) * 0.5, _normal(r, 2), _normal(r, 3, 2))),
    (arrays.short_rnn, lambda r: (np.eye(2) * 0.5, _normal(r, 2), np.zeros((0, 2)))),
    (writes.recurrence_in_place, lambda r: (_normal(r, 4), 0.7)),
    (writes.slice_update, lambda r: (_normal(r, 4), 0.7)),
    (writes.writes_into_parameter, lambda r: (_normal(r, 3),)),
    (writes.matrix_rows, lambda r: (_normal(r, 3, 1), _normal(r, 2))),
    (writes.rnn_with_list, lambda r: (_normal(r, 3, 3) * 0.5, _normal(r, 4, 3))),
    (writes.list_of_floats, lambda r: (1.5, 4)),
]


def _random_tangent(rng, value):
    if isinstance(value, float):
        return float(rng.normal())
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return rng.normal(size=value.shape)
    return None


def _copies(values):
    return [v.copy() if isinstance(v, np.ndarray) else v for v in values]


@pytest.mark.parametrize("f, make", ARRAY_CASES,
                         ids=["{}-{}".format(f.__name__, i) for i, (f, _) in enumerate(ARRAY_CASES)])
def test_array_jvp(f, make):
    rng = seeded(f.__name__, make.__code__.co_firstlineno)
    args = list(make(rng))
    v = [_random_tangent(rng, a) for a in args]
    args_before, v_before = _copies(args), _copies(v)
    value, tangent = derivo.jvp(f, args, v)
    # neither the primals nor the tangents passed in are written
    for a, b in zip(args + v, args_before + v_before):
        assert a is None or np.array_equal(a, b)
    np.testing.assert_allclose(value, f(*_copies(args)), rtol=1e-12)
    assert np.shape(tangent) == np.shape(value)
    h = 1e-6
    up = [a + h * d if d is not None else a for a, d in zip(args, v)]
    down = [a - h * d if d is not None else a for a, d in zip(args, v)]
    numeric = (np.asarray(f(*_copies(up))) - np.asarray(f(*_copies(down)))) / (2 * h)
    np.testing.assert_allclose(tangent, numeric, rtol=1e-5, atol=1e-7)
    u = rng.normal(size=np.shape(value)) if np.ndim(value) else float(rng.normal())
    cotangents = derivo.vjp(f, *_copies(args))[1](u)
    right = sum(inner(d, c) for d, c in zip(v, cotangents) if d is not None)
    assert inner(tangent, u) == pytest.approx(right, rel=1e-9, abs=1e-10)


def _numpy_probes():
    """The probe expressions of tests/rules/test_numpy.py, one per NumPy rule use."""
    path = pathlib.Path(__file__).parent / "rules" / "test_numpy.py"
    spec = importlib.util.spec_from_file_location("numpy_rule_probes", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    probes = [p for found in module.PROBES.values() for p in found] + \
        list(module.OPERATOR_PROBES)
    return module, probes


PROBE_MODULE, PROBES = _numpy_probes()


def _probe_params():
    for p in PROBES:
        # A probe marked as exposing a bug of the shared rule may or may not affect
        # its tangent rule as well.
        marks = [pytest.mark.xfail(strict=False, reason=p.xfail)] if p.xfail else []
        yield pytest.param(p, id=p.id, marks=marks)


@pytest.mark.parametrize("p", list(_probe_params()))
def test_numpy_rule_tangent(p, tmp_path):
    arguments = p.arguments()
    params = ", ".join("x{}".format(i) for i in range(len(arguments)))
    path = tmp_path / "forward_probe.py"
    path.write_text("{}\n\ndef probe({}):\n    return {}\n".format(
        PROBE_MODULE.PRELUDE, params, p.expr))
    spec = importlib.util.spec_from_file_location("forward_probe_{}".format(id(path)), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rng = seeded(p.expr)
    v = [_random_tangent(rng, a) for a in arguments]
    value, tangent = derivo.jvp(module.probe, arguments, v)
    assert np.shape(tangent) == np.shape(value)
    h = 1e-6
    up = [a + h * d if d is not None else a for a, d in zip(arguments, v)]
    down = [a - h * d if d is not None else a for a, d in zip(arguments, v)]
    numeric = (np.asarray(module.probe(*up)) - np.asarray(module.probe(*down))) / (2 * h)
    np.testing.assert_allclose(tangent, numeric, rtol=1e-5, atol=1e-7)




def test_every_vector_jacobian_rule_has_a_tangent_rule():
    import scipy.integrate  # noqa: F401  (registers its lazy table, as a user's import does)
    missing = sorted({rule.label for by_arity in rules.RULES.values()
                      for rule in by_arity.values() if rule.style == "vjp" and not rule.jvps
                      and rule.table != rules.RECORDS  # (made per user class: see record_rule)
                      # (a user's rule that a test module registers, as users do)
                      and not getattr(rule.primitive, "__module__", "").startswith("test_")})
    assert not missing, "add their JVPs to src/derivo/rules/tangents.py: " + ", ".join(missing)


def test_tangent_of_a_broadcast_has_the_result_shape():
    # x + a with a scalar x: the tangent is dx spread over a's shape, so that
    # a reduction after it counts every element
    value, tangent = derivo.jvp(arrays.scalar_coefficient, (np.ones(4), 0.3), (None, 1.0))
    assert tangent == pytest.approx(np.sum(2 * (0.3 * np.ones(4) - 1.0) * np.ones(4)))
    _, tangent = derivo.jvp(arrays.outer_sum, (np.ones((3, 1)), np.zeros((1, 4))),
                            (np.ones((3, 1)), None))
    assert np.ndim(tangent) == 0


# --- generated code -----------------------------------------------------------------------

def test_bessel_tangent_source():
    source = derivo.tangent(besselj, wrt="z").source
    assert source.startswith("def besselj_jvp(dz, v, z, atol=1e-08):")
    for line in ["ds = ds * (t3 * t1) + s * (t3 * dt1)", "s = s * (t3 * t1)",
                 "dout = dout + ds", "return out, dout",
                 "# line {}: out += s".format(besselj.__code__.co_firstlineno + 7)]:
        assert line in source
    # the tangent that reads the old s comes before the statement replacing it
    assert source.index("ds = ds * (t3") < source.index("s = s * (t3")
    # no stack, no trip counter, nothing dead
    for absent in ["push", "pop", "stack", "n1", "reverse"]:
        assert absent not in source


def test_tangents_are_named_after_their_values_and_zeros_are_not_written():
    source = derivo.tangent(reverse.nd_comparison).source
    assert "dk" not in source  # k = (x > 1.0) + (x > 2.0) carries no tangent
    source = derivo.tangent(reverse.if_assigns_new_names).source
    assert "db = 0.0" in source and "db = dx" in source  # zero only where the paths meet
    source = derivo.tangent(reverse.for_range_n, wrt="x").source
    assert "ds = 0.0" in source  # s = 0.0 before a loop that gives it a tangent


def test_forward_over_loops_and_calls_reads_like_the_primal():
    source = derivo.tangent(reverse.call_helper_in_loop).source
    assert "_step_jvp" in source or "ds = " in source  # called or inlined
    assert "push" not in source


def test_generated_source_is_deterministic(tmp_path):
    first = derivo.Derivative(reverse.nested3, "jvp", ("x", "y"), True).source
    derivo.cache_info()
    from derivo import cache
    cache.clear()
    second = derivo.tangent(reverse.nested3, wrt=("x", "y")).source
    assert first == second
    script = textwrap.dedent("""\
        import sys
        sys.path[:0] = [{tests!r}, {src!r}]
        import derivo, test_reverse
        print(derivo.tangent(test_reverse.nested3, wrt=("x", "y")).source, end="")
        print(derivo.tangent(test_reverse.call_helper_defaults, wrt=(0, 1)).source, end="")
        """).format(tests=str(REPO / "tests"), src=str(SRC))
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        outputs.add(subprocess.run([sys.executable, "-c", script], capture_output=True,
                                   text=True, env=env, check=True, timeout=120).stdout)
    assert len(outputs) == 1
    assert first in outputs.pop()


def test_saved_module_runs_standalone(tmp_path):
    df = derivo.tangent(besselj, wrt="z")
    path = df.save(tmp_path / "besselj_jvp.py")
    namespace = {"__name__": "saved_jvp"}
    exec(compile(pathlib.Path(path).read_text(), str(path), "exec"), namespace)
    assert namespace["besselj_jvp"](1.0, 2, 1.0) == df(1.0, 2, 1.0)
    assert "derivo" not in pathlib.Path(path).read_text().split('"""')[2]


# --- memory: no stack ---------------------------------------------------------------------

def long_while(x, n):
    k = 0
    s = x
    while k < n:
        k += 1
        s = math.sin(s) * 0.9 + x
    return s


def _peak(f, *args):
    f(*args)  # transformed and compiled already; warm any caches
    tracemalloc.start()
    try:
        f(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("f, make", [
    (logistic, lambda n: (1.0, 0.5, 2.8, 0.3, n)),
    (long_while, lambda n: (1.0, 0.7, n)),
    (besselj, lambda n: (1.0, 2, float(n) / 100)),
])
def test_memory_does_not_grow_with_the_trip_count(f, make):
    wrt = {"logistic": ("r", "x0"), "long_while": "x", "besselj": "z"}[f.__name__]
    df = derivo.tangent(f, wrt=wrt)
    small, large = _peak(df, *make(100)), _peak(df, *make(10000))
    # a stack of 10 000 floats would take more than 80 kB
    assert large < small + 8000, (small, large)


def test_reverse_mode_of_the_same_loop_does_grow():
    # the contrast the memory test relies on: the gradient keeps what the loop overwrites
    grad = derivo.grad(logistic, wrt=("r", "x0"))
    assert _peak(grad, 2.8, 0.3, 10000) > _peak(grad, 2.8, 0.3, 100) + 80000


# --- the API --------------------------------------------------------------------------------

def test_tangent_takes_tangents_first():
    df = derivo.tangent(reverse.two_args, wrt=("x", "y"))
    x, y = 1.5, -2.0
    value, tangent = df(0.25, -1.0, x, y)
    assert value == reverse.two_args(x, y)
    assert_close(tangent, 0.25 * 2 * x * y - 1.0 * (x * x + math.cos(y)))
    assert df.kind == "jvp" and "Jacobian-vector product" in df.__doc__
    assert derivo.source(df) == df.source


def test_tangent_as_a_decorator():
    @derivo.tangent(wrt="y")
    def f(x, y):
        return x * y * y

    assert f(1.0, 3.0, 2.0) == (12.0, 12.0)


def test_jvp_reuses_the_cached_transformation():
    derivo.jvp(reverse.two_args, (1.5, -2.0), (1.0, 0.0))
    before = derivo.cache_info()
    derivo.jvp(reverse.two_args, (0.5, 2.0), (0.0, 1.0))
    after = derivo.cache_info()
    assert after.hits == before.hits + 1 and after.misses == before.misses


def test_jvp_argument_errors():
    with pytest.raises(derivo.DerivoError, match="one tangent per primal"):
        derivo.jvp(reverse.two_args, (1.5, -2.0), (1.0,))
    with pytest.raises(derivo.DerivoError, match="not a float"):
        derivo.jvp(reverse.for_range_n, (1.5, 3), (1.0, 1.0))
    with pytest.raises(derivo.DerivoError, match="shape"):
        derivo.jvp(arrays.plain_sum_of_squares, (np.ones(3),), (np.ones(2),))
    # None or 0 is the tangent of an argument that is not differentiated
    assert derivo.jvp(reverse.for_range_n, (1.5, 3), (1.0, 0))[0] == reverse.for_range_n(1.5, 3)


def test_unsupported_constructs_are_refused(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text(textwrap.dedent("""\
        import math


        def gen(x):
            yield x * 2.0


        def no_rule(x):
            return math.remainder(x, 1.0) * x


        def mystery(x):
            return 2.0 * x


        def uses_mystery(x):
            return mystery(x) + x
        """))
    spec = importlib.util.spec_from_file_location("forward_bad", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(derivo.UnsupportedSyntax, match="yield") as info:
        derivo.tangent(module.gen)
    assert str(info.value).startswith("{}:5:".format(path))
    with pytest.raises(derivo.NoDerivativeRule, match="math.remainder"):
        derivo.jvp(module.no_rule, (1.5,), (1.0,))
    # a rule written only as a vector-Jacobian product has no tangent
    rules.defvjp(module.mystery, lambda g, ans, x: 2.0 * g)
    try:
        with pytest.raises(derivo.NoDerivativeRule, match="forward mode") as info:
            derivo.tangent(module.uses_mystery)
        assert "{}:17:".format(path) in str(info.value)
        rules.defjvp(module.mystery, lambda t, ans, x: 2.0 * t)
        assert derivo.jvp(module.uses_mystery, (1.5,), (1.0,)) == (4.5, 3.0)
    finally:
        del rules.RULES[module.mystery]


def _no_rule(x):
    return x


def test_defjvp_needs_a_rule_of_the_primitive():
    with pytest.raises(derivo.DerivoError, match="no rule of it"):
        rules.defjvp(_no_rule, lambda t, ans, x: t)


# --- Jacobians --------------------------------------------------------------------------------

def tall(x):
    return np.array([math.sin(x), x * x, math.exp(x), 1.0])


def wide(v):
    return np.sum(np.sin(v) * v) + v[0] * v[1]


def square(v):
    return v * v[0] + np.sin(v)


def wide_tuple(x, y, z):
    return x * y * z, x + y - z


def numeric_jacobian(f, x):
    h = 1e-6
    if isinstance(x, float):
        return (np.asarray(f(x + h)) - np.asarray(f(x - h))) / (2 * h)
    columns = []
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = h
        columns.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return np.stack(columns, axis=-1)


@pytest.mark.parametrize("f, x, shape, auto", [
    (tall, 0.7, (4,), "forward"),                            # M = 4 >= D = 1
    (wide, np.array([0.3, -1.2, 0.5, 2.0]), (4,), "reverse"),  # M = 1 < D = 4
    (square, np.array([0.3, -1.2, 0.5]), (3, 3), "forward"),   # M = D = 3
    (reverse.m_sin, 0.3, (), "forward"),
])
def test_jacobian_modes_agree(f, x, shape, auto):
    expected = numeric_jacobian(f, x)
    for mode in ("forward", "reverse", "auto"):
        jacobian = derivo.jacobian(f, mode=mode)
        got = jacobian(x)
        assert np.shape(got) == shape
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)
        assert jacobian.last_mode == (auto if mode == "auto" else mode)


def outer_with_row_zeroed(x):
    z = np.outer(x, x * x)
    z[0] = 0.0
    return z


def test_the_jacobian_of_a_matrix_result_in_both_modes():
    """Reverse mode seeds one item of the result at a time, in C order, as forward
    mode's columns are laid out: shape result + argument either way."""
    x = np.array([0.3, -1.2, 0.5])
    expected = numeric_jacobian(outer_with_row_zeroed, x)
    for mode in ("forward", "reverse"):
        got = derivo.jacobian(outer_with_row_zeroed, mode=mode)(x)
        assert got.shape == (3, 3, 3)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def test_jacobian_of_tuple_arguments_and_results():
    for mode in ("forward", "reverse", "auto"):
        jx, jy, jz = derivo.jacobian(wide_tuple, wrt=(0, 1, 2), mode=mode)(1.5, -2.0, 0.5)
        np.testing.assert_allclose(np.stack([jx, jy, jz], axis=1),
                                   [[-1.0, 0.75, -3.0], [1.0, 1.0, -1.0]], rtol=1e-12)
    # two outputs, three inputs: reverse mode (M < D)
    jacobian = derivo.jacobian(wide_tuple, wrt=(0, 1, 2))
    jacobian(1.5, -2.0, 0.5)
    assert jacobian.last_mode == "reverse"
    jacobian = derivo.jacobian(wide_tuple, wrt=0)
    jacobian(1.5, -2.0, 0.5)
    assert jacobian.last_mode == "forward"


def test_jacobian_errors():
    with pytest.raises(derivo.DerivoError, match="mode"):
        derivo.jacobian(tall, mode="sideways")
    with pytest.raises(derivo.DerivoError, match="1-D"):
        derivo.jacobian(wide)(np.ones((2, 2)))


# --- second derivatives ------------------------------------------------------------------------

def test_hessian_of_bessel_against_the_closed_form():
    # J_v'' = (J_{v-2} - 2 J_v + J_{v+2}) / 4, each from the same series to 1e-14
    v, z = 2, 1.7
    got = derivo.hessian(besselj, wrt="z")(v, z, 1e-14)
    expected = (besselj(v - 2, z, 1e-14) - 2 * besselj(v, z, 1e-14)
                + besselj(v + 2, z, 1e-14)) / 4
    assert got == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("v", [0, 1, 3])
@pytest.mark.parametrize("z", [0.5, 3.0, 10.0])
def test_hessian_of_bessel_against_scipy(v, z):
    special = pytest.importorskip("scipy.special")
    got = derivo.hessian(besselj, wrt="z")(v, z, 1e-13)
    assert_close(got, float(special.jvp(v, z, 2)), rtol=1e-7, atol=1e-9)


def test_hessian_of_two_variables():
    f = reverse.m_composed
    x, y = 0.3, 1.5
    (hxx, hxy), (hyx, hyy) = derivo.hessian(f, wrt=(0, 1))(x, y)
    h = 1e-4
    assert hxx == pytest.approx((f(x + h, y) - 2 * f(x, y) + f(x - h, y)) / h ** 2, rel=1e-6)
    assert hyy == pytest.approx((f(x, y + h) - 2 * f(x, y) + f(x, y - h)) / h ** 2, rel=1e-5)
    assert hxy == pytest.approx(hyx, rel=1e-15)
    assert hxy == pytest.approx(
        (f(x + h, y + h) - f(x + h, y - h) - f(x - h, y + h) + f(x - h, y - h)) / (4 * h * h),
        rel=1e-6)
    assert_close(derivo.hvp(f, (x, y), (0.5, -2.0)), (0.5 * hxx - 2.0 * hxy, 0.5 * hyx - 2.0 * hyy),
                 rtol=1e-12)


@pytest.mark.parametrize("f, args, wrt", reverse.FOR + reverse.WHILE + reverse.BREAK +
                         reverse.NESTED + reverse.RETURNS)
def test_forward_over_reverse_through_loops(f, args, wrt):
    # jvp of a gradient whose code saves and restores values on a stack
    w = wrt if isinstance(wrt, int) else wrt[0]
    position, name = resolve_wrt(f, w)
    gradient = derivo.grad(f, wrt=name)
    tangents = [None] * len(args)
    tangents[position] = 1.0
    _, second = derivo.jvp(gradient, args, tangents)
    assert_close(second, numeric_grad(gradient, args, w, h=1e-5), rtol=1e-5, atol=1e-6)


def products_of_items(x, a):
    y = x * a  # no NumPy in the source: scalar code, switched to array code for arrays
    return y[0] * y[1] + y[2]


def test_hessian_and_hvp_of_plain_code_called_with_arrays():
    # the tangent of the scalar code had no broadcasting rules: silently wrong
    x, a = np.array([0.3, 0.5, 0.8]), 0.8
    (xx, xa), (ax, aa) = derivo.hessian(products_of_items, wrt=(0, 1))(x, a)
    np.testing.assert_allclose(xx, a * a * np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]]))
    np.testing.assert_allclose(xa, [2 * a * x[1], 2 * a * x[0], 1.0])
    assert aa == pytest.approx(2 * x[0] * x[1])
    _, product = derivo.hvp(products_of_items, (x, a), (np.zeros(3), 1.0))
    assert product == pytest.approx(2 * x[0] * x[1])


def test_the_hessian_of_a_function_returning_an_array_is_refused():
    with pytest.raises(derivo.DerivoError, match="returning a scalar"):
        derivo.hessian(arrays.plain_sum_of_squares)(np.array([0.3, -0.5, 0.8]))


def test_forward_over_forward():
    second = derivo.tangent(derivo.tangent(reverse.m_sin), wrt="x")
    # d/dx of (sin x, cos x * dx) along dx' = 1 at dx = 1
    (value, first), (dvalue, dfirst) = second(1.0, 1.0, 0.3)
    assert (value, first) == (math.sin(0.3), math.cos(0.3))
    assert_close((dvalue, dfirst), (math.cos(0.3), -math.sin(0.3)), rtol=1e-15)


# --- the command line ---------------------------------------------------------------------------

def run_cli(*args):
    env = dict(os.environ, PYTHONPATH=str(SRC))
    return subprocess.run([sys.executable, "-m", "derivo"] + [str(a) for a in args],
                          capture_output=True, text=True, env=env, timeout=120)


def test_cli_forward_mode(tmp_path):
    example = REPO / "examples" / "bessel.py"
    printed = run_cli(example, "besselj", "--wrt", "z", "--mode", "forward")
    assert printed.returncode == 0, printed.stderr
    assert "def besselj_jvp(dz, v, z, atol=1e-08):" in printed.stdout
    out = tmp_path / "besselj_jvp.py"
    assert run_cli(example, "besselj", "--wrt", "z", "--mode", "forward", "-o", out).returncode == 0
    namespace = {"__name__": "cli_jvp"}
    exec(compile(out.read_text(), str(out), "exec"), namespace)
    assert namespace["besselj_jvp"](1.0, 2, 1.0)[1] == pytest.approx(0.2102436158518, abs=1e-12)
    refused = run_cli(example, "besselj", "--mode", "forward", "--kind", "grad")
    assert refused.returncode == 2 and "--kind" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


def product_until_small(x0, x1):
    v = 1.0
    values = [x1, x0 * 2.0]
    for w in values:
        if x0 * w < 0.1:
            break
        v = v * w
    return v


def test_a_loop_over_values_that_breaks_keeps_its_loop_variable():
    # the loop's trip counter comes first in its body; the rewritten read of w must follow it
    for x0, x1 in [(1.0, 2.0), (0.04, 2.0), (1.0, 0.05)]:
        for direction in [(1.0, 0.0), (0.0, 1.0)]:
            value, tangent = derivo.jvp(product_until_small, (x0, x1), direction)
            h = 1e-6
            plus = product_until_small(x0 + h * direction[0], x1 + h * direction[1])
            minus = product_until_small(x0 - h * direction[0], x1 - h * direction[1])
            assert value == product_until_small(x0, x1)
            assert tangent == pytest.approx((plus - minus) / (2 * h), rel=1e-6, abs=1e-9)
            gradient = derivo.grad(product_until_small, wrt=(0, 1))(x0, x1)
            assert gradient[0] * direction[0] + gradient[1] * direction[1] == \
                pytest.approx(tangent, rel=1e-12, abs=1e-15)


GLOBAL_ARRAY = np.zeros(2)


def writes_a_global(x):
    GLOBAL_ARRAY[0] = x * x
    return np.sum(GLOBAL_ARRAY)


def test_forward_mode_refuses_a_differentiated_write_into_a_global_array():
    # as reverse mode does: a later call would read the value back with no tangent
    with pytest.raises(derivo.DerivoError, match="write into 'GLOBAL_ARRAY', a module global"):
        derivo.jvp(writes_a_global, (1.3,), (1.0,))


def pair_times(p, x):
    a, b = p
    return a * x * b


def weighted_layer(params, x):
    W, v = params
    return np.sum(np.tanh(W @ x) * v)


def test_jvp_of_list_and_tuple_primals():
    # d(a x b) = x b da + a x db + a b dx at a, b, x = 2, 3, 1.5
    assert derivo.jvp(pair_times, ((2.0, 3.0), 1.5), ((1.0, 0.0), 0.0)) == (9.0, 4.5)
    assert derivo.jvp(pair_times, ([2.0, 3.0], 1.5), ([0.0, 1.0], 1.0)) == (9.0, 9.0)
    assert derivo.jvp(pair_times, ((2.0, 3.0), 1.5), (None, 1.0)) == (9.0, 6.0)
    with pytest.raises(derivo.DerivoError, match="not of the structure of its primal"):
        derivo.jvp(pair_times, ((2.0, 3.0), 1.5), ((1.0,), 0.0))


def test_jvp_of_a_tuple_of_arrays_is_the_gradient_along_the_tangent():
    rng = np.random.default_rng(5)
    W, v, x = rng.normal(size=(2, 3)), rng.normal(size=2), rng.normal(size=3)
    dW, dv = rng.normal(size=(2, 3)), rng.normal(size=2)
    _, tangent = derivo.jvp(weighted_layer, ((W, v), x), ((dW, dv), None))
    gW, gv = derivo.grad(weighted_layer)((W, v), x)
    assert tangent == pytest.approx(np.sum(gW * dW) + np.sum(gv * dv), rel=1e-12)
    h = 1e-6
    difference = (weighted_layer((W + h * dW, v + h * dv), x) -
                  weighted_layer((W - h * dW, v - h * dv), x)) / (2 * h)
    assert tangent == pytest.approx(difference, rel=1e-6)


def prepended(xs):
    ys = (2.0,) + xs
    return ys[0] * ys[1] * ys[2]


def squares(xs):
    s = 0.0
    for x in xs:
        s = s + x * x
    return s


@pytest.mark.parametrize("tangent", [[1.0, None], ["a", 1.0], np.array([1.0, 0.5]), (1.0, 0.5)])
def test_jvp_refuses_a_tangent_of_another_structure(tangent):
    # a None or a string inside crashed the tangent code; the others were let through
    with pytest.raises(derivo.DerivoError, match="not of the structure of its primal"):
        derivo.jvp(squares, ([1.0, 2.0],), (tangent,))


def test_jvp_refuses_a_tuple_joined_to_another():
    # its tangent code indexed past the tangent's end (IndexError), as grad refuses it
    with pytest.raises(derivo.DerivoError, match="joins such sequences"):
        derivo.jvp(prepended, ((2.0, 3.0),), ((1.0, 0.0),))


def grown_by_a_join(x, y):
    items = [x]
    items += [y]
    return items[0] * 3.0 + items[1] * 5.0


def tuple_joined(x, y):
    pair = (x, 2.0)
    triple = pair + (y * y,)
    return triple[0] * triple[2] + triple[1]


def joined_twice(x, y):
    head = [x * y]
    tail = [math.sin(x), y]
    both = head + tail + [x]
    return both[0] + both[1] * both[2] + both[3] ** 2


def joined_to_a_display_of_pairs(x, y):
    items = [x] + [(1.0, y)]
    return items[0] * items[1][1]


@pytest.mark.parametrize("f", [grown_by_a_join, tuple_joined, joined_twice,
                               joined_to_a_display_of_pairs])
@pytest.mark.parametrize("wrt", [0, 1])
def test_the_tangent_of_a_join_of_built_sequences_keeps_each_items_place(f, wrt):
    # a symbolic zero on one side is written out as zeros of that side's length
    point = [0.7, 0.3]
    tangents = [0.0, 0.0]
    tangents[wrt] = 1.0
    value, tangent = derivo.jvp(f, point, tangents)
    h = 1e-6
    up, down = list(point), list(point)
    up[wrt] += h
    down[wrt] -= h
    assert value == pytest.approx(f(*point))
    assert tangent == pytest.approx((f(*up) - f(*down)) / (2 * h), rel=1e-6)


def nested_displays(x, y):
    c = [(x,), (1.0, y)]
    return c[1][1] * 3.0 + c[0][0]


def nested_dict_display(x, y):
    c = {"a": [x, 2.0], "b": (1.0, {"k": y})}
    return c["b"][1]["k"] * 3.0 + c["a"][0] * c["a"][1]


def display_of_a_list(x, y):
    inner = [1.0, 2.0]
    c = [inner, x]
    return c[0][1] * x + c[1] * y


@pytest.mark.parametrize("f", [nested_displays, nested_dict_display, display_of_a_list])
@pytest.mark.parametrize("tangents", [(1.0, None), (None, 1.0), (1.0, 0.5)])
def test_an_item_of_a_display_with_a_zero_tangent_keeps_its_structure(f, tangents):
    # the zero of (1.0, y) with y's tangent None was the number 0.0, then subscripted
    point = (0.7, 0.2)
    direction = [t or 0.0 for t in tangents]
    h = 1e-6
    expected = (f(*[p + h * d for p, d in zip(point, direction)]) -
                f(*[p - h * d for p, d in zip(point, direction)])) / (2 * h)
    value, tangent = derivo.jvp(f, point, tangents)
    assert value == pytest.approx(f(*point))
    assert tangent == pytest.approx(expected, rel=1e-6)


def doubled_by_a_dict_comprehension(x, y):
    d = {"a": x, "b": y}
    e = {k: v * 2.0 for k, v in d.items()}
    return e["a"] + e["b"] * e["a"]


def test_the_hessian_through_a_dict_the_gradient_code_copies():
    # grad's code builds the dict in a copy (e = owned(items)): its tangent is a dict too
    H = derivo.hessian(doubled_by_a_dict_comprehension, wrt=(0, 1))(0.7, -0.4)
    assert np.allclose(H, [[0.0, 4.0], [4.0, 0.0]])


def larger_pair_first(x, y):
    return max((x, 1.0), (y, 2.0))[0] * 3.0


def larger_and_smaller(x, y):
    return max(x, y) * 2.0 + min(x * y, 1.0)


@pytest.mark.parametrize("f", [larger_pair_first, larger_and_smaller])
@pytest.mark.parametrize("point", [(0.7, -0.4), (-0.7, 0.4)])
@pytest.mark.parametrize("tangents", [(1.0, None), (None, 1.0), (1.0, 0.5)])
def test_the_tangent_of_max_and_min_is_the_chosen_operands(f, point, tangents):
    # max of tuples: a product of the tangent (dx, 0.0) with the partial 1.0 raised TypeError
    direction = [t or 0.0 for t in tangents]
    h = 1e-6
    expected = (f(*[p + h * d for p, d in zip(point, direction)]) -
                f(*[p - h * d for p, d in zip(point, direction)])) / (2 * h)
    assert derivo.jvp(f, point, tangents)[1] == pytest.approx(expected, rel=1e-6, abs=1e-9)


def memoized(fn):
    cache = {}

    @functools.wraps(fn)
    def wrapper(z):
        if z not in cache:
            cache[z] = fn(z)
        return cache[z]
    return wrapper


@memoized
def cached_square(z):
    return z * z


def calls_a_memoized_square(x):
    return cached_square(x) * 3.0


GLOBAL_SCALE = [0.0]


def writes_a_constant_into_a_global(x):
    GLOBAL_SCALE[0] = 1.5
    return x * GLOBAL_SCALE[0]


def test_forward_mode_refuses_to_store_a_tangent_in_memory_it_does_not_own():
    # a later call reads the cache back with no tangent: the JVP would be silently 0.0
    with pytest.raises(derivo.DerivoError, match="write into 'cache', an enclosing"):
        derivo.jvp(calls_a_memoized_square, (0.7,), (1.0,))
    # a value that carries no tangent may go there, as the function writes it
    assert derivo.jvp(writes_a_constant_into_a_global, (0.7,), (1.0,)) == \
        pytest.approx((1.05, 1.5))


def joined_to_a_list_of_another(x, y):
    items = [x]
    items += [y]
    return items[0] * 3.0


def test_jvp_of_a_join_where_an_item_has_no_tangent():
    # the tangent list once left x's symbolic zero out: [dy], so items[0] took dy (3.0)
    assert derivo.jvp(joined_to_a_list_of_another, (0.7, 0.2), (None, 1.0)) == \
        pytest.approx((2.1, 0.0))


WEIGHTS = np.array([0.3, -0.4, 0.8, 0.1])


def returns_early_without_x(x, c):
    s = 0.0
    for i in range(3):
        s = s + c
        if s > 0.5:
            return WEIGHTS * s  # no x on this path
    return WEIGHTS * s * 2.0 + x * x


def returns_on_either_arm_without_x(x, c):
    if c > 0.0:
        result = WEIGHTS * c
    else:
        result = WEIGHTS * c * x[0]
    return result


@pytest.mark.parametrize("f, c", [(returns_early_without_x, 0.3),
                                  (returns_early_without_x, 0.1),
                                  (returns_on_either_arm_without_x, 0.3)])
def test_a_tangent_that_is_zero_on_the_path_taken_has_the_results_shape(f, c):
    x = np.array([1.0, 2.0, 3.0, 4.0])
    _, tangent = derivo.jvp(f, (x, c), (np.eye(4)[1], None))
    h = 1e-6
    expected = (f(x + h * np.eye(4)[1], c) - f(x - h * np.eye(4)[1], c)) / (2 * h)
    assert np.shape(tangent) == (4,)
    np.testing.assert_allclose(tangent, expected, atol=1e-8)
    jacobian = derivo.jacobian(f, wrt=0, mode="forward")(x, c)
    np.testing.assert_allclose(jacobian, derivo.jacobian(f, wrt=0, mode="reverse")(x, c))
