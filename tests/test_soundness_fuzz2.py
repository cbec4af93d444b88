"""What a second long run of the program fuzzer (tests/test_fuzz_programs.py) and
issue 20's list of known bugs found, each fixed where it is owned:

- the exponent of ``x ** q`` adds nothing to the tangent where its own tangent is
  zero (a branch made q a constant), not ``0 * log(x)``, which is NaN at x < 0;
- the Hessian of ``x ** p`` at x <= 0 is finite in x and NaN where it needs
  log(x) (as grad's d/dp is), never a math domain error;
- a loop over ``reversed(X)``/``zip(X, Y)`` whose body writes into X is indexed,
  or refused naming the loop, never run backwards as an iterator;
- refusals name the user's function: what derivo.hessian and derivo.jacobian
  return, a third derivative of array code, ``derivo.grad(g)(x)`` called inside,
  and a second derivative of writes in place, at the user's first such write;
  a refused write names the user's names, not ssa's versions of them (``y1``);
- ``save()`` refuses a helper made inside another function (``def g(x, w=w)``)
  rather than write a module that fails on import;
- a write through an alias (``b = y``, a helper's result, a conditional
  expression) of an array read afterwards is refused in forward mode too, and
  where only what the write stores varies (``grad(f, wrt=c)``), and so is a
  write into an item a loop takes from a list (``for r in [y]: r[0] = c``);
- an array a helper changes in a loop is not loop-invariant, also where nothing
  differentiated reaches it, and a helper's change of what an adjoint reads
  (``np.clip(y, -1.0, c)``) is refused, also where only c is differentiated;
- a local helper's signed number default (``def h(t, q=-0.5)``) is a constant.
"""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import derivo
from checks import numeric_grad

A = np.array([0.5, -1.2, 0.9, 0.3])


def central(f, a, *rest, h=1e-6):
    """Central differences of f in its array argument a."""
    out = np.zeros(a.shape)
    for i in range(a.size):
        step = np.eye(a.size)[i] * h
        out[i] = (f(a + step, *rest) - f(a - step, *rest)) / (2 * h)
    return out


# --- the exponent's tangent -----------------------------------------------------------


def branch_power(x, p):
    q = p if x > 0 else 2.0
    return x ** q


@pytest.mark.parametrize("x", [-1.5, 1.5])
def test_jvp_at_a_branch_merge_adds_no_nan_of_the_exponent(x):
    want = numeric_grad(branch_power, (x, 3.0), wrt=(0, 1))
    value, tangent = derivo.jvp(branch_power, (x, 3.0), (1.0, 0.0))
    assert value == branch_power(x, 3.0)
    assert tangent == pytest.approx(want[0], rel=1e-6)
    _, along_p = derivo.jvp(branch_power, (x, 3.0), (0.0, 1.0))
    assert along_p == pytest.approx(want[1], rel=1e-6, abs=1e-9)
    assert derivo.grad(branch_power, wrt=(0, 1))(x, 3.0) == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("x", [-1.5, 1.5])
def test_hessian_at_a_branch_merge(x):
    gradient = derivo.grad(branch_power, wrt=(0, 1))
    rows = [numeric_grad(lambda u, v, i=i: gradient(u, v)[i], (x, 3.0), wrt=(0, 1), h=1e-5)
            for i in range(2)]
    got = derivo.hessian(branch_power, wrt=(0, 1))(x, 3.0)
    assert np.allclose(np.array(got), np.array(rows), rtol=1e-5, atol=1e-6)


def array_branch_power(a, p):
    q = p if a[0] > 0 else 2.0
    return np.sum(a ** q)


def test_jvp_of_an_array_power_at_a_branch_merge():
    a = np.array([-1.5, 0.5])
    direction = np.array([0.3, -0.7])
    _, tangent = derivo.jvp(array_branch_power, (a, 3.0), (direction, 0.0))
    assert tangent == pytest.approx(float(np.sum(2 * a * direction)))


def power(x, p):
    return x ** p


def test_hessian_of_a_power_at_a_negative_base():
    assert derivo.hessian(power, wrt=0)(-1.5, 3.0) == pytest.approx(6 * -1.5)
    (hxx, hxp), (hpx, hpp) = derivo.hessian(power, wrt=(0, 1))(-1.5, 3.0)
    assert hxx == pytest.approx(-9.0)
    assert np.isnan(derivo.grad(power, wrt=1)(-1.5, 3.0))  # d/dp needs log(x), as grad says
    assert np.isnan(hxp) and np.isnan(hpx) and np.isnan(hpp)


def test_hessian_of_a_power_at_zero_does_not_raise():
    assert derivo.hessian(power, wrt=0)(0.0, 3.0) == 0.0
    (hxx, hxp), _ = derivo.hessian(power, wrt=(0, 1))(0.0, 3.0)
    assert hxx == 0.0 and hxp == 0.0


# --- loops over iterators whose body writes into what they iterate ----------------------


def reversed_mask_write(a, c):
    y = a * c
    for v in reversed(y):
        y[y > -0.28] = -0.28
    return np.sum(y * y)


def zip_argmax_write(a, c):
    y = a * c
    for v, e in zip(y, a):
        y[np.argmax(y)] = 0.0
    return np.sum(y * y) + c


@pytest.mark.parametrize("f", [reversed_mask_write, zip_argmax_write])
def test_a_loop_over_an_iterator_of_a_written_array(f):
    with pytest.raises(derivo.DerivoError, match="its body changes 'y'"):
        derivo.grad(f)(A.copy(), 0.7)
    direction = np.array([0.3, -0.5, 0.7, 0.2])
    _, tangent = derivo.jvp(f, (A.copy(), 0.7), (direction, None))
    want = central(f, A.copy(), 0.7)
    assert tangent == pytest.approx(float(np.sum(want * direction)), rel=1e-5, abs=1e-8)


def reversed_reads(a, c):
    y = a * c
    s = 0.0
    for v in reversed(y):
        s = s + np.tanh(v * s + c)
    return s


def test_a_loop_over_reversed_values_is_differentiated():
    got = derivo.grad(reversed_reads, wrt=(0, 1))(A.copy(), 0.7)
    assert np.allclose(got[0], central(reversed_reads, A.copy(), 0.7), rtol=1e-6)
    assert got[1] == pytest.approx(numeric_grad(reversed_reads, (A.copy(), 0.7), wrt=1))


# --- refusals name the user's code ------------------------------------------------------


def cubic(a):
    return np.sum(np.sin(a) * a[0])


def scalar_of_arrays(x):
    return np.sum(np.tanh(x * np.array([1.0, 2.0])) ** 2)


def squared(x):
    return x * x


def calls_grad_inside(x):
    return derivo.grad(squared)(x) * x


def calls_grad_of_a_closure_inside(x):
    def scaled(z):
        return z * z * x
    return derivo.grad(scaled)(x) * x


@pytest.mark.parametrize("outer", [derivo.jacobian, derivo.grad])
def test_differentiating_a_hessian_names_the_users_function(outer):
    with pytest.raises(derivo.DerivoError) as error:
        outer(derivo.hessian(cubic))(A[:3].copy())
    assert "cubic" in str(error.value) and "api.py" not in str(error.value)
    assert "*args" not in str(error.value)


def test_a_jacobian_of_a_jacobian_names_the_users_function():
    with pytest.raises(derivo.DerivoError) as error:
        derivo.jacobian(derivo.jacobian(derivo.grad(cubic)))(A[:3].copy())
    assert "cubic" in str(error.value) and "api.py" not in str(error.value)


def test_a_third_derivative_of_array_code_names_the_function():
    with pytest.raises(derivo.DerivoError) as error:
        derivo.grad(derivo.grad(derivo.grad(scalar_of_arrays)))(0.7)
    message = str(error.value)
    assert "scalar_of_arrays" in message and "second order" in message


def test_grad_of_a_global_called_inside_is_differentiated_through():
    assert derivo.grad(calls_grad_inside)(1.5) == pytest.approx(4 * 1.5)  # d(2x * x)/dx


def test_grad_of_a_closure_called_inside_is_refused_at_its_line():
    with pytest.raises(derivo.DerivoError) as error:
        derivo.grad(calls_grad_of_a_closure_inside)(1.5)
    assert error.value.lineno == calls_grad_of_a_closure_inside.__code__.co_firstlineno + 3
    assert "'scaled'" in str(error.value) and "defpartials" not in str(error.value)


# --- saving a helper made by a factory ---------------------------------------------------


def make_scaler(w):
    def scaled(x, w=w):
        for _ in range(2):
            x = x * w
        return x
    return scaled


scaled = make_scaler(0.3)


def uses_a_made_helper(x, n):
    return scaled(x) * x + scaled(float(n))


def test_save_imports_a_helper_a_factory_made_from_where_it_is_bound(tmp_path):
    df = derivo.grad(uses_a_made_helper)
    assert df(1.5, 2) == pytest.approx(numeric_grad(uses_a_made_helper, (1.5, 2)))
    path = tmp_path / "made.py"
    df.save(path)
    assert "from test_soundness_fuzz2 import scaled" in path.read_text()
    run = subprocess.run([sys.executable, "-c", "import runpy; print(runpy.run_path({!r})"
                          "['uses_a_made_helper_grad'](1.5, 2))".format(str(path))],
                         capture_output=True, text=True, timeout=120,
                         cwd=os.path.dirname(os.path.abspath(__file__)))
    assert run.returncode == 0, run.stderr
    assert float(run.stdout) == pytest.approx(df(1.5, 2))


def test_save_checks_the_names_top_level_code_reads(tmp_path):
    from derivo import save
    with pytest.raises(derivo.DerivoError, match="'w'"):
        save.write_module("def g(x, w=w):\n    return x * w\n", tmp_path / "m.py")


# --- lambdas as helpers ----------------------------------------------------------------------

shifted = lambda r: r * 0.6 + 0.6  # noqa: E731 -- what is tested is a lambda helper


def make_affine(k):
    return lambda r: r * k + k


affine = make_affine(np.array([0.3, 0.4]))


def uses_lambdas(a, c):
    return np.sum(affine(a)) * shifted(c) + shifted(c) ** 2


def test_lambda_helpers_are_differentiated_in_every_mode():
    a = np.array([0.5, -1.2])
    want_a, want_c = central(uses_lambdas, a, 0.7), numeric_grad(uses_lambdas, (a, 0.7), wrt=1)
    got_a, got_c = derivo.grad(uses_lambdas, wrt=(0, 1))(a, 0.7)
    assert np.allclose(got_a, want_a, rtol=1e-6) and got_c == pytest.approx(want_c, rel=1e-6)
    _, tangent = derivo.jvp(uses_lambdas, (a, 0.7), (np.array([1.0, -2.0]), 0.5))
    assert tangent == pytest.approx(float(want_a @ [1.0, -2.0] + 0.5 * want_c), rel=1e-6)
    source = derivo.grad(uses_lambdas).source  # named after the name it is called by
    assert "affine_forward(" in source and "affine_backward(" in source


# --- the caller's arrays ---------------------------------------------------------------------


def writes_its_argument(a, c):
    v = a.copy()
    a[0] = 1.0
    return np.sum(v * a) * c


@pytest.mark.parametrize("mode", ["forward", "reverse", "auto"])
def test_a_jacobian_leaves_the_callers_array_unchanged(mode):
    a = A.copy()
    jac_a, jac_c = derivo.jacobian(writes_its_argument, wrt=(0, 1), mode=mode)(a, 0.7)
    assert np.array_equal(a, A)
    assert np.allclose(jac_a, central(writes_its_argument, A.copy(), 0.7), rtol=1e-6)
    assert jac_c == pytest.approx(writes_its_argument(A.copy(), 1.0))


def test_jvp_without_tangents_leaves_the_callers_array_unchanged():
    a = A.copy()
    value, tangent = derivo.jvp(writes_its_argument, (a, 0.7), (None, None))
    assert np.array_equal(a, A) and value == writes_its_argument(A.copy(), 0.7) and tangent == 0.0


def eigenvalues(a):
    return np.sum(np.linalg.eigvalsh(np.outer(a, a))) * 0.5


def test_a_refused_second_derivative_names_the_users_function():
    # (eigvalsh's adjoint has no derivative rule)
    with pytest.raises(derivo.DerivoError) as error:
        derivo.hessian(eigenvalues)(A.copy())
    assert error.value.filename.endswith("test_soundness_fuzz2.py")
    assert error.value.lineno == eigenvalues.__code__.co_firstlineno + 1  # the eigvalsh line
    assert "cannot differentiate eigenvalues a second time" in str(error.value)


def writes_items_in_a_loop(a, c):
    y = a * 1.0
    for i in range(2):
        y = np.tanh(y * c)
        y[i] = np.tanh(y[i] * c)
    return np.sum(y * y)


def test_a_refused_second_derivative_names_the_users_write():
    """The generated gradient writes in place where the function does: the
    refusal names the function's write, never the gradient's temporaries."""
    assert derivo.grad(writes_items_in_a_loop, wrt=1)(A.copy(), 0.7) == pytest.approx(
        numeric_grad(writes_items_in_a_loop, (A.copy(), 0.7), wrt=1), rel=1e-6)
    with pytest.raises(derivo.DerivoError, match=r"in place where it does \(line \d+: "
                       r"y\[i\] = np.tanh\(y\[i\] \* c\)\)") as error:
        derivo.hessian(writes_items_in_a_loop, wrt=1)(A.copy(), 0.7)
    assert error.value.filename.endswith("test_soundness_fuzz2.py")
    assert error.value.lineno == writes_items_in_a_loop.__code__.co_firstlineno + 4
    assert not re.search(r"'t\d+'|<derivo generated", str(error.value))


# --- what a checkpointed loop's reverse reads --------------------------------------------


def invariant_written_after_a_while(a, c):
    y = a * 1.0
    s = 0.0
    i = 0
    k = 0
    while i < 2:
        k = i % 4
        i = i + 1
        s = s + (y[k] - 2.0) ** 2 * c
    y[y > -0.06] = -0.06
    return s + np.sum(y * y) * 0.1 + y[k]


def test_a_write_after_a_checkpointed_loop_into_what_it_read():
    f = invariant_written_after_a_while
    want = central(f, A.copy(), 0.7), numeric_grad(f, (A.copy(), 0.7), wrt=1)
    for loops in ("stack", "checkpoint"):
        options = {"checkpoints": 2} if loops == "checkpoint" else {}
        got = derivo.grad(f, wrt=(0, 1), loops=loops, **options)(A.copy(), 0.7)
        assert np.allclose(got[0], want[0], rtol=1e-6, atol=1e-9), loops
        assert got[1] == pytest.approx(want[1], rel=1e-6), loops


# --- calls derivo cannot read ------------------------------------------------------------

exec("def unreadable(r):\n    r *= 0.5\n    return r\n")  # no source to read


def hands_an_array_to_unreadable_code(a, c):
    z = a * 0.5
    unreadable(z)  # noqa: F821 -- defined by the exec above
    return np.sum(z) * c


def test_a_call_without_source_that_may_write_its_argument_is_refused():
    with pytest.raises(derivo.DerivoError, match="may change 'z' in place"):
        derivo.grad(hands_an_array_to_unreadable_code, wrt=(0, 1))(A.copy(), 0.7)
    with pytest.raises(derivo.DerivoError, match="may change 'z' in place"):
        derivo.jvp(hands_an_array_to_unreadable_code, (A.copy(), 0.7), (A.copy(), 1.0))


# --- refusals name the program's variables, not ssa's ---------------------------------------


def mask_write_in_a_reversible_loop(a, c):
    y = a * c
    for i in range(3):
        y[y > c] = c * 0.5
    return np.sum(y * y)


def aliased_update_twice(a, c):
    y = a * 1.0
    w = y[:]
    w += c
    w = y[:]
    w += c * 0.1
    return np.sum(y * y)


@pytest.mark.parametrize("f, options", [(mask_write_in_a_reversible_loop, {"loops": "reversible"}),
                                        (aliased_update_twice, {})])
def test_a_refusal_names_no_temporary(f, options):
    with pytest.raises(derivo.DerivoError) as error:
        derivo.grad(f, wrt=(0, 1), **options)(A.copy(), 0.7)
    message = str(error.value)
    assert "test_soundness_fuzz2.py" in message
    assert not re.search(r"'(?:t|w|y|index|cond)\d+'|overwrites (?:t|y|index)\d+", message), message


def writes_a_view_twice(a, c):
    y = a * 1.0
    w = y[1:3]
    w[0] = c
    w = y[1:3]
    w[1] = c * 0.5
    return np.sum(y * y)


def test_a_refused_write_names_the_programs_array():
    with pytest.raises(derivo.DerivoError, match="'w' sharing memory with 'y'") as error:
        derivo.grad(writes_a_view_twice, wrt=(0, 1))(A.copy(), 0.7)
    assert "w1" not in str(error.value)


# --- a write through an alias, in forward mode and where only the alias varies ---------


def ident(r):
    return r


def through_an_alias(a, c):
    y = a * 1.0
    b = y
    b[0] = 2.0 * c
    return np.sum(y * y)


def through_a_helpers_result(a, c):
    y = a * 1.0
    b = ident(y)
    b[0] = 2.0 * c
    return np.sum(y * y)


def through_a_conditional_alias(a, c):
    y = a * 1.0
    b = y if c > 0.5 else a * 0.5
    b[0] = 2.0 * c
    return np.sum(y * y) * c


def through_the_original(a, c):
    y = a * 1.0
    b = ident(y)
    y[0] = 2.0 * c
    return np.sum(b * b)


@pytest.mark.parametrize("f", [through_an_alias, through_a_helpers_result,
                               through_a_conditional_alias])
def test_a_write_through_an_alias_is_refused_in_every_mode(f):
    """b = y; b[0] = v; y read afterwards: the write changes y, in every mode,
    also when only c (what b is given) is differentiated."""
    direction = np.array([0.3, -0.5, 0.7, 0.2])
    for run in (lambda: derivo.jvp(f, (A.copy(), 0.7), (direction, 0.8)),
                lambda: derivo.jvp(f, (A.copy(), 0.7), (direction, None)),
                lambda: derivo.grad(f, wrt=1)(A.copy(), 0.7),
                lambda: derivo.hessian(f, wrt=1)(A.copy(), 0.7),
                lambda: derivo.grad(f, wrt=(0, 1))(A.copy(), 0.7)):
        with pytest.raises(derivo.DerivoError, match="'b' sharing memory with 'y'"):
            run()


def test_a_write_through_the_original_is_differentiated_in_forward_mode():
    direction = np.array([0.3, -0.5, 0.7, 0.2])
    value, tangent = derivo.jvp(through_the_original, (A.copy(), 0.7), (direction, 0.8))
    h = 1e-6
    want = (through_the_original(A + h * direction, 0.7 + h * 0.8) -
            through_the_original(A - h * direction, 0.7 - h * 0.8)) / (2 * h)
    assert value == through_the_original(A.copy(), 0.7)
    assert tangent == pytest.approx(want, rel=1e-6)


def writes_a_loop_item_of_a_list(a, c):
    y = a * 1.0
    for r in [y]:
        r[0] = c
    return np.sum(y * y)


@pytest.mark.parametrize("run", [
    lambda f: derivo.grad(f, wrt=1)(A.copy(), 0.7),
    lambda f: derivo.jvp(f, (A.copy(), 0.7), (None, 1.0))])
def test_a_write_into_a_loop_item_is_refused_where_only_the_write_varies(run):
    with pytest.raises(derivo.DerivoError, match="a write into 'r', an item this loop takes"):
        run(writes_a_loop_item_of_a_list)


def writes_an_alias_of_a_rebound_name(a, c):
    y = a * 1.0
    y = np.tanh(y * c)
    i = 0
    while i < 2:
        i = i + 1
        b = y if c > 0.5 else a * 0.5
        b[0] = 2.0 * c
    return np.sum(y * y)


@pytest.mark.parametrize("loops", ["stack", "checkpoint"])
def test_a_refused_write_names_the_users_name_not_its_version(loops):
    with pytest.raises(derivo.DerivoError, match="'b' sharing memory with 'y'") as error:
        derivo.grad(writes_an_alias_of_a_rebound_name, wrt=(0, 1), loops=loops)(A.copy(), 0.7)
    assert not re.search(r"\by\d\b", str(error.value)), str(error.value)


# --- a helper that changes an array nothing differentiated reaches -------------------


def zero_first(r, q):
    r[0] = 0.0
    return np.sum(q * q)


def zero_at(r, i):
    r[i] = 0.0
    return 0.0


def product_after_a_helpers_write(a, c):
    """y * z reads y, which the helper changes each trip: not loop-invariant."""
    s = 0.0
    y = a * 1.0
    z = a * 0.5
    for i in range(4):
        s = s + zero_first(y, y) * 0.1
        s = s + np.sum(y * z) * 0.1
        s = s + np.sin(s + c) * 0.5
    return s


def item_before_a_helpers_write(a, c):
    """v = y[i] read before the helper zeroes y[i]: the reverse loop saves v."""
    y = a * 1.0
    s = 0.1
    for i in range(3):
        v = y[i]
        s = s + zero_at(y, i)
        s = np.sin(v * s + c)
    return s


def clip_before_a_helpers_write(a, c):
    """np.clip's adjoint in c reads y, which the helper changes afterwards."""
    y = a * 1.0
    s = np.sum(np.clip(y, -1.0, c))
    s = s + zero_first(y, y) * 0.1
    return s + np.sum(y * y)


def test_a_helpers_write_into_an_array_only_c_reaches():
    f = product_after_a_helpers_write
    want = numeric_grad(f, (A.copy(), 0.7), wrt=1)
    assert derivo.grad(f, wrt=1)(A.copy(), 0.7) == pytest.approx(want, rel=1e-6)
    assert derivo.jvp(f, (A.copy(), 0.7), (None, 1.0))[1] == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("f, call", [(item_before_a_helpers_write, "zero_at(y, i)"),
                                     (clip_before_a_helpers_write, "zero_first(y, y)")])
def test_a_helpers_write_into_what_an_adjoint_reads_is_refused(f, call):
    """(as it is where y is differentiated too)"""
    for wrt in (1, (0, 1)):
        with pytest.raises(derivo.DerivoError, match=re.escape(call)):
            derivo.grad(f, wrt=wrt)(A.copy(), 0.7)


def writes_an_alias_in_a_zip_loop(a, c):
    y = a * 1.0
    s = 0.0
    for v, e in zip(y, a):
        b = y if c > 0.5 else a * 0.5
        b[0] = 2.0 * c
    s = s + np.sin(v * s + c)
    b = y if c > 0.5 else a * 0.5
    b[0] = 2.0 * c
    return s + np.sum(y * y)


def test_a_refused_write_in_a_zip_loop_names_what_it_iterates_over():
    with pytest.raises(derivo.DerivoError, match="'b' sharing memory with") as error:
        derivo.grad(writes_an_alias_in_a_zip_loop, wrt=1)(A.copy(), 0.7)
    assert not re.search(r"\bseq\d", str(error.value)), str(error.value)


# --- an update through a list of arrays ---------------------------------------------------


def updates_an_array_through_a_list(a, c):
    y = a * 1.0
    z = a * 0.5
    L = [y, z]
    L[1] += c   # NumPy adds c into z itself; derivo takes it for L[1] = L[1] + c
    return np.sum(z * z)


def test_an_update_through_a_list_of_arrays_is_differentiated_or_refused():
    want = updates_an_array_through_a_list(A.copy(), 0.7)
    try:
        value, (_, along_c) = derivo.value_and_grad(updates_an_array_through_a_list,
                                                    wrt=(0, 1))(A.copy(), 0.7)
    except derivo.DerivoError:
        return
    assert value == pytest.approx(want)
    assert along_c == pytest.approx(
        numeric_grad(updates_an_array_through_a_list, (A.copy(), 0.7), wrt=1), rel=1e-6)


def local_helper_with_signed_defaults(a):
    def h(t, q=-0.5, *, r=2.0, s=+1.5):
        return t ** r * s + q
    return np.sum(h(a)) * h(a[0], r=3.0)


def test_a_local_helper_with_a_negative_default_is_differentiated():
    # A signed number is a constant default: it is lifted, not refused, and keeps its sign.
    for mode in ({}, {"loops": "checkpoint"}):
        value, gradient = derivo.value_and_grad(local_helper_with_signed_defaults, **mode)(A.copy())
        assert value == pytest.approx(local_helper_with_signed_defaults(A.copy()))
        assert gradient == pytest.approx(central(local_helper_with_signed_defaults, A.copy()),
                                         rel=1e-6, abs=1e-8)
    along = np.eye(4)[0]
    _, tangent = derivo.jvp(local_helper_with_signed_defaults, (A.copy(),), (along,))
    assert tangent == pytest.approx(central(local_helper_with_signed_defaults, A.copy())[0],
                                    rel=1e-6)


def test_a_vjp_of_a_hessian_names_what_to_differentiate_instead():
    def cubic_sum(x):
        return np.sum(x ** 3)

    with pytest.raises(derivo.DerivoError, match="what derivo.hessian or derivo.jacobian"):
        derivo.vjp(derivo.hessian(cubic_sum), np.ones(2))
