"""The Derivative object, the cache, determinism, saving, and tracebacks.

Values are compared with closed forms, never with derivo itself.
"""

import copy
import dis
import functools
import importlib.util
import inspect
import math
import os
import pickle
import subprocess
import sys
import textwrap
import traceback
import types

import numpy as np
import pytest

import derivo
from checks import assert_close

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(REPO, "src")

BESSEL_SOURCE = textwrap.dedent(
    """\
    import math


    def besselj(v, z, atol=1e-8):
        k = 0
        s = (z / 2) ** v / math.factorial(v)
        out = s
        while abs(s) > atol:
            k += 1
            s *= (-1) / k / (k + v) * (z / 2) ** 2
            out += s
        return out
    """
)


def import_file(path, module_name):
    """Import ``path`` as a brand-new module called ``module_name``."""
    spec = importlib.util.spec_from_file_location(module_name, str(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def exec_saved(path, name_hint=None):
    """Exec a saved derivative module in a fresh namespace; return its gradient function.

    That is the one function the module itself defines whose name ends with
    ``_grad`` (or, if there are several, the one named ``name_hint``).
    """
    module_name = "derivo_saved_" + os.path.basename(str(path)).replace(".", "_")
    namespace = {"__name__": module_name}
    with open(path) as fh:
        code = compile(fh.read(), str(path), "exec")
    exec(code, namespace)
    candidates = {
        key: value
        for key, value in namespace.items()
        if key.endswith("_grad")
        and callable(value)
        and getattr(value, "__module__", None) == module_name
    }
    if len(candidates) == 1:
        return next(iter(candidates.values()))
    assert name_hint in candidates, f"no single *_grad function among {sorted(namespace)}"
    return candidates[name_hint]


def poly(x, y):
    return x * x * y + 3.0 * x


def poly_dx(x, y):
    return 2.0 * x * y + 3.0


# ---------------------------------------------------------------------------
# the Derivative object
# ---------------------------------------------------------------------------

def test_source_is_python_with_a_def():
    df = derivo.grad(poly)
    assert isinstance(df.source, str)
    assert "def " in df.source
    compile(df.source, "<derivo source>", "exec")  # it parses


def test_source_function_matches_attribute():
    df = derivo.grad(poly, wrt=(0, 1))
    assert derivo.source(df) == df.source


def test_source_is_stable_between_requests():
    df = derivo.grad(poly)
    assert_close(df(1.5, -2.0), poly_dx(1.5, -2.0))
    assert df.source == derivo.grad(poly).source


def test_distinct_wrt_distinct_derivatives():
    assert_close(derivo.grad(poly, wrt=0)(1.5, -2.0), poly_dx(1.5, -2.0))
    assert_close(derivo.grad(poly, wrt=1)(1.5, -2.0), 1.5 * 1.5)


def scaled_power(x, scale=2.0, *, power=3):
    return scale * x ** power


def only_positional(x, y, /, z):
    return x * y * z


def typed_power(x, type="square"):
    return x * x if type == "square" else x * x * x


def test_the_entry_checks_each_argument_in_one_line():
    guard = derivo.api.entry_guard(derivo.grad(poly, wrt=(0, 1)).derivo_function, {"x", "y"},
                                   False)
    assert guard == (
        "if not (x.__class__ is derivo_float and y.__class__ is derivo_float):\n"
        "    return derivo_self._call_checked((x, y), {})\n")


def test_the_entry_of_array_code_checks_the_differentiated_arrays_and_for_np_matrix():
    def weights_only(W, x):
        return np.sum(W @ x)
    guard = derivo.api.entry_guard(weights_only, {"W"}, True)
    assert "W.dtype is derivo_float64" in guard
    assert "x.__class__ is not derivo_matrix" in guard
    guard = derivo.api.entry_guard(weights_only, set(), True)
    assert guard.startswith("if not (W.__class__ is not derivo_matrix and "
                            "x.__class__ is not derivo_matrix):")


def products(x, A):
    return np.sum((A * x) * x)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix's own
@pytest.mark.parametrize("make", [
    lambda: derivo.grad(products)(np.matrix([[1.0, 2.0]]), np.array([[1.0, 3.0]])),
    lambda: derivo.grad(products)(np.array([[1.0, 2.0]]), np.matrix([[1.0], [3.0]])),
    lambda: derivo.value_and_grad(products, wrt=1)(np.ones((2, 2)), np.matrix(np.eye(2))),
    lambda: derivo.grad(poly)(np.matrix([[3.0]]), 2.0),  # scalar code
])
def test_an_np_matrix_argument_is_refused(make):
    # its * is a matrix product: derivo's rules for * would give a wrong gradient
    with pytest.raises(derivo.DerivoError, match="np.matrix"):
        make()


def shadows_the_guard(derivo_int, derivo_float=2.0, derivo_self=1.0):
    return derivo_int * derivo_float * derivo_self


def test_the_guard_reads_names_the_generated_code_does_not_use():
    df = derivo.grad(shadows_the_guard, wrt=(0, 1, 2))
    assert_close(df(3.0, 5.0), (5.0, 3.0, 15.0))
    assert_close(df(3.0, 5.0, derivo_self=2.0), (10.0, 6.0, 15.0))
    with pytest.raises(derivo.DerivoError, match="derivo_int='3'"):
        df("3", 5.0)


def test_the_entry_keeps_defaults_keywords_and_positional_only_parameters():
    df = derivo.grad(scaled_power)
    assert_close(df(2.0), 24.0)
    assert_close(df(2.0, 0.5), 6.0)
    assert_close(df(2.0, power=2), 8.0)
    assert_close(df(x=2.0, scale=1.0, power=4), 32.0)
    assert_close(derivo.grad(only_positional, wrt=(0, 2))(2.0, 3.0, z=5.0), (15.0, 6.0))
    assert_close(derivo.grad(typed_power)(2.0), 4.0)
    assert_close(derivo.grad(typed_power)(2.0, type="cube"), 12.0)


def test_an_array_passed_by_keyword_to_scalar_code_switches_to_array_code():
    df = derivo.grad(scaled_power, wrt="scale")
    gradient = df(3.0, scale=np.array(2.0), power=2)
    assert np.shape(gradient) == ()
    assert_close(gradient, 9.0)
    assert df.__self__._array_generated is not None


def test_a_derivative_is_the_generated_code_behind_its_guard_bound_to_its_derivative():
    df = derivo.grad(poly)
    assert isinstance(df, types.MethodType) and isinstance(df.__self__, derivo.Derivative)
    assert df.__func__ is not df.derivo_function
    assert df.__code__.co_filename == df.derivo_function.__code__.co_filename
    assert df.__code__.co_firstlineno == df.derivo_function.__code__.co_firstlineno
    assert list(inspect.signature(df).parameters) == ["x", "y"]
    assert df.__name__ == "poly_grad" and df.__doc__ == df.__self__.__doc__


def waves(x, cos):
    return math.sin(x) * cos + math.pi * math.exp(x)


def test_the_entry_calls_math_functions_by_their_own_names():
    # cos(x) costs one global lookup where math.cos(x) costs two: the entry runs
    # the former, the source (which nested derivatives read) keeps the latter
    df = derivo.grad(waves)
    assert_close(df(0.3, 2.0), math.cos(0.3) * 2.0 + math.pi * math.exp(0.3))
    # the body's (the def line holds the entry's checks, which read math.exp as such)
    instructions = [i for i in dis.get_instructions(df.__func__)
                    if i.positions.lineno != df.__code__.co_firstlineno]
    names = {i.argval for i in instructions if i.opname == "LOAD_GLOBAL"}
    attributes = {i.argval for i in instructions if i.opname in ("LOAD_ATTR", "LOAD_METHOD")}
    assert "exp" in names and "exp" not in attributes
    assert "cos" in attributes  # the parameter cos keeps math.cos as it is
    assert "pi" in attributes   # a number, not a function
    assert "math.cos(x)" in df.source and "math.exp(x)" in df.source
    assert df.derivo_function.__globals__.get("exp") is None  # the module did not change
    second = derivo.grad(derivo.grad(waves))
    assert_close(second(0.3, 2.0), -math.sin(0.3) * 2.0 + math.pi * math.exp(0.3))


def sine_of(t):
    return math.sin(t)


class Doubler:
    def log(self, v):
        return 2.0 * v


def math_as_a_parameter(x, math):
    # math here is the parameter; the helper's gradient puts the module in the
    # generated code's globals under that same name
    return sine_of(x) * math.log(3.0)


def test_the_entry_leaves_a_parameter_named_like_a_module_alone():
    df = derivo.grad(math_as_a_parameter)
    assert_close(df(0.5, Doubler()), globals()["math"].cos(0.5) * 6.0, rtol=1e-12)


def test_a_traceback_through_the_entry_shows_the_generated_line():
    df = derivo.grad(reciprocal)
    with pytest.raises(ZeroDivisionError) as info:
        df(0.0)
    frame = traceback.extract_tb(info.tb)[-1]
    assert frame.name == "reciprocal_grad"
    assert "/" in frame.line
    assert frame.line == df.source.splitlines()[frame.lineno - 1].strip()


# ---------------------------------------------------------------------------
# the cache
# ---------------------------------------------------------------------------

def cached_once(x):
    return math.sin(x) * x


def test_cache_info_fields():
    info = derivo.cache_info()
    for field in ("hits", "misses", "size"):
        assert isinstance(getattr(info, field), int)


def test_second_transform_hits_the_cache():
    before = derivo.cache_info()
    df1 = derivo.grad(cached_once)
    assert_close(df1(0.7), math.cos(0.7) * 0.7 + math.sin(0.7))
    first = derivo.cache_info()
    assert first.misses > before.misses  # transformed the first time
    assert first.size >= before.size

    df2 = derivo.grad(cached_once)
    assert_close(df2(0.7), math.cos(0.7) * 0.7 + math.sin(0.7))
    second = derivo.cache_info()
    assert second.hits > first.hits
    assert second.misses == first.misses
    assert second.size == first.size
    assert df2.source == df1.source


def other_options(x, y):
    return x * y * y


def test_distinct_options_are_distinct_entries():
    assert_close(derivo.grad(other_options, wrt=0)(1.5, 2.0), 4.0)
    before = derivo.cache_info()
    assert_close(derivo.grad(other_options, wrt=1)(1.5, 2.0), 6.0)
    assert derivo.cache_info().misses > before.misses


def test_redefined_function_in_test_body_is_transformed_anew():
    def g(x):
        return x * x

    assert_close(derivo.grad(g)(3.0), 6.0)

    def g(x):  # noqa: F811 -- the point of the test
        return x * x * x

    assert_close(derivo.grad(g)(3.0), 27.0)


def test_redefined_module_function_is_transformed_anew(tmp_path):
    first = tmp_path / "redef_a.py"
    first.write_text("def f(x):\n    return x * x\n")
    second = tmp_path / "redef_b.py"
    second.write_text("def f(x):\n    return x * x * x\n")
    f1 = import_file(first, "derivo_test_redef_a").f
    assert_close(derivo.grad(f1)(2.0), 4.0)
    f2 = import_file(second, "derivo_test_redef_b").f
    assert_close(derivo.grad(f2)(2.0), 12.0)
    assert_close(derivo.grad(f1)(2.0), 4.0)  # the old entry is still right


def test_redefined_by_exec_into_namespaces(tmp_path):
    # exec of a compiled file: inspect finds the source through the file name
    results = []
    for i, body in enumerate(["x * x", "math.sin(x)"]):
        path = tmp_path / f"exec_{i}.py"
        path.write_text(f"import math\n\ndef h(x):\n    return {body}\n")
        namespace = {"__name__": f"derivo_exec_{i}"}
        exec(compile(path.read_text(), str(path), "exec"), namespace)
        results.append(derivo.grad(namespace["h"])(0.5))
    assert_close(results[0], 1.0)
    assert_close(results[1], math.cos(0.5))


def helper_sq(t):
    return t * t


def calls_helper(x, n):
    s = 0.0
    for i in range(n):
        s = s + helper_sq(x * i)
    return s


def test_calling_the_derivative_does_not_retransform():
    df = derivo.grad(calls_helper)
    expected = 2.0 * 0.5 * sum(i * i for i in range(4))
    assert_close(df(0.5, 4), expected)
    after_first = derivo.cache_info()
    for _ in range(1000):
        df(0.5, 4)
    assert derivo.cache_info().misses == after_first.misses
    assert_close(df(0.5, 4), expected)


def test_repeated_grad_calls_do_not_retransform():
    derivo.grad(calls_helper)(0.5, 3)
    after_first = derivo.cache_info()
    for _ in range(200):
        derivo.grad(calls_helper)(0.5, 3)
    assert derivo.cache_info().misses == after_first.misses


# ---------------------------------------------------------------------------
# determinism
# ---------------------------------------------------------------------------

def test_same_source_gives_byte_identical_code(tmp_path):
    path = tmp_path / "bessel_det.py"
    path.write_text(BESSEL_SOURCE)
    a = import_file(path, "derivo_det_a")
    b = import_file(path, "derivo_det_b")
    assert a.besselj is not b.besselj
    before = derivo.cache_info()
    da = derivo.grad(a.besselj, wrt="z")
    db = derivo.grad(b.besselj, wrt="z")
    assert_close(da(2, 1.0), 0.2102436158518, rtol=0.0, atol=1e-12)
    assert_close(db(2, 1.0), 0.2102436158518, rtol=0.0, atol=1e-12)
    # two functions with separate globals: both were really transformed (a cache
    # hit here would bind the generated code to the wrong module's globals)
    assert derivo.cache_info().misses >= before.misses + 2
    assert da.source == db.source


def test_generated_code_is_the_same_across_processes(tmp_path):
    path = tmp_path / "bessel_proc.py"
    path.write_text(BESSEL_SOURCE)
    script = textwrap.dedent(
        f"""\
        import sys
        sys.path.insert(0, {SRC!r})
        sys.path.insert(0, {str(tmp_path)!r})
        import derivo, bessel_proc
        sys.stdout.write(derivo.grad(bessel_proc.besselj, wrt="z").source)
        """
    )
    outputs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        proc = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
    assert "def " in outputs[0]
    assert outputs[0] == outputs[1]


# ---------------------------------------------------------------------------
# saving
# ---------------------------------------------------------------------------

def test_save_writes_a_module_that_runs(tmp_path):
    df = derivo.grad(poly)
    target = tmp_path / "g.py"
    df.save(target)
    assert target.exists()
    g = exec_saved(target, getattr(df, "__name__", None))
    assert_close(g(1.5, -2.0), poly_dx(1.5, -2.0))
    assert_close(g(-0.5, 4.0), poly_dx(-0.5, 4.0))


def looped(x, y):
    s = x
    for _ in range(3):
        s = s * y + math.sin(x)
    return s


LOOPED_GRAD = derivo.grad(looped)


def calls_a_derivative(x, y):
    return LOOPED_GRAD(x, y) * y


def test_a_saved_module_defines_the_derivatives_its_code_calls(tmp_path):
    # it called LOOPED_GRAD without defining it: NameError
    df = derivo.grad(calls_a_derivative, wrt=(0, 1))
    target = tmp_path / "calls.py"
    df.save(target)
    assert "LOOPED_GRAD = looped_grad" in target.read_text()
    g = exec_saved(target, df.__name__)
    assert_close(g(0.7, 1.3), df(0.7, 1.3))


WAVE_SOURCE = """
import math as mm

def wave(t, n):
    s = 0.0
    for k in range(n):
        s = s + mm.cos(t * k) + mm.sin(t)
    return s
"""


def test_a_saved_module_binds_the_globals_of_the_functions_it_carries(tmp_path):
    # the second derivative calls wave itself, whose mm the generated code never
    # reads: the saved module raised NameError
    path = tmp_path / "waves.py"
    path.write_text(WAVE_SOURCE)
    wave = import_file(path, "derivo_waves").wave

    def scaled_wave(x, c):
        return wave(x, 3) * c * c

    second = derivo.grad(derivo.grad(scaled_wave, wrt="x"), wrt="c")
    target = tmp_path / "second.py"
    second.save(target)
    assert "import math as mm" in target.read_text()
    g = exec_saved(target, second.__name__)
    # wave(t, 3) = 1 + cos(t) + cos(2 t) + 3 sin(t)
    slope = -math.sin(0.7) - 2 * math.sin(1.4) + 3 * math.cos(0.7)
    assert_close(g(0.7, 1.3), second(0.7, 1.3))
    assert_close(g(0.7, 1.3), 2 * 1.3 * slope, rtol=1e-12)


def test_saved_bessel_matches_scipy(tmp_path):
    special = pytest.importorskip("scipy.special")
    path = tmp_path / "bessel_save.py"
    path.write_text(BESSEL_SOURCE)
    module = import_file(path, "derivo_bessel_save")
    df = derivo.grad(module.besselj, wrt="z")
    target = tmp_path / "besselj_grad.py"
    df.save(str(target))
    g = exec_saved(target, getattr(df, "__name__", None))
    assert_close(g(2, 1.0), 0.2102436158518, rtol=0.0, atol=1e-12)
    for v, z in [(0, 0.5), (3, 3.0), (1, 10.0)]:
        assert_close(g(v, z, 1e-12), float(special.jvp(v, z, 1)), rtol=1e-7, atol=1e-9)


def test_saved_module_runs_in_a_fresh_interpreter(tmp_path):
    df = derivo.grad(poly, wrt=(0, 1))
    target = tmp_path / "fresh.py"
    df.save(target)
    script = textwrap.dedent(
        f"""\
        import sys
        sys.path.insert(0, {SRC!r})
        ns = {{"__name__": "fresh"}}
        exec(compile(open({str(target)!r}).read(), {str(target)!r}, "exec"), ns)
        fns = [v for k, v in ns.items() if k.endswith("_grad") and callable(v)
               and getattr(v, "__module__", None) == "fresh"]
        assert len(fns) == 1, sorted(ns)
        print(repr(fns[0](1.5, -2.0)))
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    dx, dy = eval(proc.stdout)
    assert_close((dx, dy), (poly_dx(1.5, -2.0), 1.5 * 1.5))


# ---------------------------------------------------------------------------
# tracebacks show generated lines
# ---------------------------------------------------------------------------

def reciprocal(x):
    y = x * 2.0
    return 1.0 / y


def test_traceback_shows_generated_lines():
    df = derivo.grad(reciprocal)
    assert_close(df(0.5), -0.5 / 0.25)
    try:
        df(0.0)
    except ZeroDivisionError:
        text = traceback.format_exc()
        frames = traceback.extract_tb(sys.exc_info()[2])
    else:
        pytest.fail("1 / 0.0 did not raise ZeroDivisionError")
    generated = {line.strip() for line in df.source.splitlines() if line.strip()}
    in_generated = [
        fr
        for fr in frames
        if os.path.abspath(fr.filename) != os.path.abspath(__file__)
        and fr.line
        and fr.line.strip() in generated
    ]
    assert in_generated, text
    assert "/" in in_generated[-1].line
    assert in_generated[-1].line.strip() in text


def test_a_derivative_copies_deep_copies_and_pickles():
    df = derivo.grad(poly, wrt=(0, 1))
    for twin in (copy.copy(df), copy.deepcopy(df), pickle.loads(pickle.dumps(df))):
        assert isinstance(twin, derivo.Derivative)
        assert twin.source == df.source
        assert_close(twin(1.5, -2.0), df(1.5, -2.0))


def read_whole_and_as_numbers(c, vs, n, alias):
    first = alias
    return math.sin(c) * vs[0] + n * c + first


def test_parameters_read_as_numbers_alone_are_checked_for_arrays_only():
    # The entry of scalar code sends a list given for a parameter the code may read
    # whole to the checked call (it may hold arrays); the others pay one test.
    whole = derivo.analyze.parameters_read_whole(read_whole_and_as_numbers)
    assert whole == {"vs", "alias"}
    df = derivo.grad(read_whole_and_as_numbers)
    guard = derivo.api.entry_guard(df.derivo_function, {"c"}, False,
                                   numbers={"c", "n"})
    assert "n.__class__ is not derivo_ndarray" in guard
    assert "vs.__class__ not in derivo_containers" in guard
    assert_close(df(0.5, [2.0], 3.0, 1.0), math.cos(0.5) * 2.0 + 3.0)


# --- functions taking *args and **kwargs: one derivative per call's arguments ------

def weighted_sum(x, *rest):
    return x * sum(rest) + math.sin(rest[0]) * rest[-1]


def scaled_square(x, **options):
    return (x * options.get("scale", 1.0)) ** 2 + options.get("shift", 0.0)


def mse(*params):  # as JAX code writes a loss of its parameters
    w, b = params
    inputs, targets = np.array([0.5, 1.0, 2.0]), np.array([1.0, 2.5, 4.0])
    return np.mean((w * inputs + b - targets) ** 2)


def central(f, args, position, h=1e-6):
    up, down = list(args), list(args)
    up[position] += h
    down[position] -= h
    return (f(*up) - f(*down)) / (2 * h)


@pytest.mark.parametrize("args", [(2.0, 0.7, 1.5), (2.0, 0.7, 1.5, -0.4)])
@pytest.mark.parametrize("wrt", [0, 1, 2, -1])
def test_star_args_are_differentiated_by_position(args, wrt):
    expected = central(weighted_sum, args, wrt % len(args))
    assert_close(derivo.grad(weighted_sum, wrt=wrt)(*args), expected)
    value, gradient = derivo.value_and_grad(weighted_sum, wrt=wrt)(*args)
    assert_close(value, weighted_sum(*args))
    assert_close(gradient, expected)


def test_star_args_in_every_mode():
    args = (2.0, 0.7, 1.5)
    partials = tuple(central(weighted_sum, args, i) for i in range(3))
    assert_close(derivo.grad(weighted_sum, wrt=(0, 1, 2))(*args), partials)
    _, pullback = derivo.vjp(weighted_sum, *args)
    assert_close(pullback(1.0), partials)
    _, tangent = derivo.jvp(weighted_sum, args, (None, 1.0, None))
    assert_close(tangent, partials[1])
    second = derivo.grad(derivo.grad(weighted_sum, wrt=1), wrt=1)(*args)
    assert_close(second, -math.sin(0.7) * 1.5, rtol=1e-6)
    hessian = derivo.hessian(weighted_sum, wrt=(0, 1))(*args)
    assert_close(hessian[0], (0.0, 1.0))
    assert_close(hessian[1], (1.0, -math.sin(0.7) * 1.5))
    assert_close(derivo.jacobian(weighted_sum, wrt=(0, 2))(*args), (partials[0], partials[2]))


def test_star_kwargs_are_passed_as_given():
    assert_close(derivo.grad(scaled_square)(2.0, scale=3.0), 2 * 2.0 * 9.0)
    assert_close(derivo.grad(scaled_square)(2.0, shift=1.0, scale=0.5), 2 * 2.0 * 0.25)
    assert_close(derivo.grad(scaled_square)(2.0), 4.0)


def test_a_loss_of_star_params_gives_each_its_gradient():
    w, b = np.array(1.5), 0.25
    gw, gb = derivo.grad(mse, wrt=(0, 1))(w, b)
    h = 1e-6
    assert_close(float(gw), (mse(w + h, b) - mse(w - h, b)) / (2 * h))
    assert_close(gb, (mse(w, b + h) - mse(w, b - h)) / (2 * h))


def test_a_star_args_derivative_shows_and_saves_the_code_of_its_last_call(tmp_path):
    def spread(x, *rest):
        return x * rest[0]

    derivative = derivo.grad(spread)
    assert derivative.source.startswith("# derivo transforms")
    with pytest.raises(derivo.DerivoError, match="call the derivative once"):
        derivative.save(str(tmp_path / "spread_grad.py"))
    assert derivative(2.0, 3.0) == 3.0
    assert "def spread_grad(x, rest_0)" in derivative.source
    saved = derivative.save(str(tmp_path / "spread_grad.py"))
    spec = importlib.util.spec_from_file_location("spread_saved", saved)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert getattr(module, derivative.__name__)(2.0, 3.0) == 3.0


def _forwarding(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


@_forwarding
def forwarded_product(x, y):
    return x * y * y


@pytest.mark.parametrize("wrt", ["y", 1])
def test_a_wrapped_parameter_given_as_a_keyword_is_differentiated(wrt):
    assert derivo.grad(forwarded_product, wrt=wrt)(0.3, y=0.8) == pytest.approx(2 * 0.3 * 0.8)
    assert derivo.grad(forwarded_product, wrt=wrt)(0.3, 0.8) == pytest.approx(2 * 0.3 * 0.8)
    assert derivo.hessian(forwarded_product, wrt=wrt)(0.3, y=0.8) == pytest.approx(2 * 0.3)
