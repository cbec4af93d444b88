"""Forward mode and reversible loops are never silently wrong.

- A None tangent is a symbolic zero: no partial derivative of its argument is
  multiplied by a zero (``0 * nan`` is nan), in jvp, hvp, the forward Jacobian
  and the Hessian, whatever the primitive.
- A tangent has its primal's ownership: a new array (``a.copy()``, ``a + 0.0``,
  what a helper computes) gets a new tangent, which a later write into another
  array's tangent does not change.
- ``loops="reversible"`` undoes a loop update only where the undo is exact; it
  saves the value otherwise.
"""

import math

import numpy as np
import pytest

import derivo


def central(f, x, h=1e-6):
    """The central difference of f at the float array x, one entry per component."""
    out = np.zeros(x.shape)
    for i in range(x.size):
        step = np.zeros(x.shape)
        step.flat[i] = h
        out.flat[i] = (f(x + step) - f(x - step)) / (2 * h)
    return out


def central_hessian(f, x, h=1e-4):
    return np.stack([central(lambda y: central(f, y, h)[i], x, h) for i in range(x.size)])


# --- a None tangent is a symbolic zero ---------------------------------------------


def power(x, p):
    return x ** p


def power_sum(a, p):
    return np.sum(a ** p)


def times_sqrt(x, y):
    return x * math.sqrt(y)


def times_arcsin(a, y):
    return np.sum(a * np.arcsin(y))


@pytest.mark.parametrize("f, primals, tangents, expected", [
    (power, (-1.5, 2.0), (1.0, None), -3.0),                  # d/dp reads log(-1.5)
    (times_sqrt, (2.0, 0.0), (1.0, None), 0.0),               # d/dy is infinite
    (times_arcsin, (np.array([1.0, 2.0]), 1.0), (np.array([1.0, 0.0]), None), math.pi / 2),
])
def test_a_none_tangent_multiplies_nothing(f, primals, tangents, expected):
    _, tangent = derivo.jvp(f, primals, tangents)
    assert tangent == pytest.approx(expected)


def test_a_none_tangent_of_an_array_argument_multiplies_nothing():
    a = np.array([-1.5, 2.0])
    _, tangent = derivo.jvp(power_sum, (a, 2.0), (np.array([1.0, 1.0]), None))
    assert tangent == pytest.approx(2 * a.sum())


def test_the_forward_jacobian_seeds_only_the_column_it_computes():
    """d/dx of x ** p at x < 0 is finite though d/dp is not."""
    jx, jp = derivo.jacobian(power, wrt=(0, 1), mode="forward")(-1.5, 2.0)
    assert jx == pytest.approx(-3.0)
    assert math.isnan(jp)
    a = np.array([-1.5, 2.0])
    ja, _ = derivo.jacobian(power_sum, wrt=(0, 1), mode="forward")(a, 2.0)
    np.testing.assert_allclose(ja, 2 * a)


@pytest.mark.filterwarnings("ignore:invalid value encountered in log")
def test_the_hessian_seeds_only_the_column_it_computes():
    a = np.array([-1.5, 2.0])
    (haa, _), _ = derivo.hessian(power_sum, wrt=(0, 1))(a, 2.0)
    np.testing.assert_allclose(haa, 2 * np.eye(2))


# --- a tangent has its primal's ownership --------------------------------------------


def copy_then_write(a):
    v = a.copy()
    a[0] = 1.0
    return np.sum(v * v) + np.sum(a)


def plus_zero_then_update(a):
    v = a + 0.0
    a[1] *= 0.9
    return np.sum(v * v) + np.sum(a * a)


def conditional_copy(a):
    v = a + 0.0 if a[0] > 0 else a
    a[0] = 1.0
    return np.sum(v * v)


def scaled(z):
    w = z
    for _ in range(1):  # a loop: the helper is called, not inlined
        w = z * 1.0
    return w


def helper_copy_then_write(a):
    v = scaled(a)
    a[0] = 1.0
    return np.sum(v * v)


def identity(z):
    w = z
    for _ in range(1):
        w = z
    return w


def helper_alias_then_write(a):
    v = identity(a)  # v is a: the write changes it too
    a[2] = 3.0
    return np.sum(v * v)


OWNERSHIP = [copy_then_write, plus_zero_then_update, conditional_copy,
             helper_copy_then_write, helper_alias_then_write]


@pytest.mark.parametrize("f", OWNERSHIP, ids=lambda f: f.__name__)
def test_jvp_of_a_new_array_keeps_its_own_tangent(f):
    a = np.array([0.3, 0.5, 0.7])
    expected = central(lambda x: f(x.copy()), a)
    for i in range(a.size):
        direction = np.eye(a.size)[i]
        _, tangent = derivo.jvp(f, (a.copy(),), (direction,))
        assert tangent == pytest.approx(expected[i], abs=1e-6), i


@pytest.mark.parametrize("f", [copy_then_write, plus_zero_then_update], ids=lambda f: f.__name__)
def test_hessian_and_hvp_of_a_new_array_keep_its_own_tangent(f):
    a = np.array([0.3, 0.5, 0.7])
    expected = central_hessian(lambda x: f(x.copy()), a)
    np.testing.assert_allclose(derivo.hessian(f)(a.copy()), expected, atol=1e-5)
    direction = np.array([1.0, -2.0, 0.5])
    (product,) = derivo.hvp(f, (a.copy(),), (direction,))
    np.testing.assert_allclose(product, expected @ direction, atol=1e-5)


def copied_vector(a):
    v = a.copy()
    a[0] = 1.0
    return v * 2.0 + a


def test_forward_jacobian_of_a_copy_keeps_its_own_tangent():
    a = np.array([0.3, 0.5, 0.7])
    expected = np.stack([central(lambda x: copied_vector(x.copy())[i], a) for i in range(3)])
    np.testing.assert_allclose(derivo.jacobian(copied_vector, mode="forward")(a.copy()),
                               expected, atol=1e-6)


def test_a_tangent_of_a_new_array_is_copied_only_where_something_writes():
    """Functions writing into nothing keep their tangent code as it was."""
    def plain(a):
        v = a.copy()
        return np.sum(v * v)

    assert "owned" not in derivo.tangent(plain).source
    assert "dv = owned(" in derivo.tangent(copy_then_write).source


def alias_of_written(x, c):
    y = x * 1.0
    q = y                  # y has no tangent yet when only c is differentiated
    y[1] += c              # the write gives y its first tangent, q keeps its zero
    return np.sum(q * q)


def test_a_write_that_makes_a_first_tangent_of_shared_memory_is_refused():
    """Where the written array's tangent is made at the write, another name of that
    memory read afterwards would keep a zero tangent: refused, as reverse mode does;
    where both have tangents before the write they share memory and are right."""
    x, c = np.array([0.45, -0.81, 0.95]), 0.62
    slope = central(lambda v: alias_of_written(x, float(v[0])), np.array([c]))[0]
    _, both = derivo.jvp(alias_of_written, (x, c), (np.zeros(3), 1.0))
    assert both == pytest.approx(slope, rel=1e-6)
    for refused in (lambda: derivo.tangent(alias_of_written, wrt=1)(1.0, x, c),
                    lambda: derivo.jvp(alias_of_written, (x, c), (None, 1.0)),
                    lambda: derivo.jacobian(alias_of_written, wrt=1, mode="forward")(x, c)):
        with pytest.raises(derivo.DerivoError, match=r"test_soundness_forward.py:\d+:\d+: "
                                                     r"cannot differentiate 'q' sharing memory"):
            refused()


# --- loops="reversible" undoes only what is exactly undone ---------------------------


def halving(s):
    acc = 0.0
    for _ in range(1100):
        acc += math.sin(s) * 0.01
        s = s * 0.5
    return acc


def scaled_by(s, c):
    acc = 0.0
    for _ in range(4):
        acc += math.sin(s)
        s = s * c
    return acc


def scaled_array(a, c):
    acc = 0.0
    for _ in range(4):
        acc += np.sum(np.sin(a))
        a = a * c
    return acc


def absorbing(x):
    acc = 0.0
    s = x
    for _ in range(3):
        acc += math.sin(s)
        s += 1e17  # x is lost in the rounding: s - 1e17 does not give it back
    return acc


def test_a_long_halving_loop_is_not_undone_by_rounding():
    """1100 halvings underflow s to zero: s * 2 cannot give s back from there."""
    reversible = derivo.grad(halving, loops="reversible")(1.0)
    h = 1e-6
    assert reversible == pytest.approx((halving(1.0 + h) - halving(1.0 - h)) / (2 * h), rel=1e-6)
    assert reversible == derivo.grad(halving)(1.0)


@pytest.mark.parametrize("c", [0.0, 1e-170, 0.1, 3.0])
def test_a_factor_that_cannot_be_divided_out_is_saved(c):
    """A zero factor (a ZeroDivisionError before), one that underflows, one that rounds."""
    expected = derivo.grad(scaled_by, wrt=(0, 1))(1.0, c)
    assert derivo.grad(scaled_by, wrt=(0, 1), loops="reversible")(1.0, c) == expected
    if c >= 0.1:
        h = 1e-6 * c
        assert expected[1] == pytest.approx(
            (scaled_by(1.0, c + h) - scaled_by(1.0, c - h)) / (2 * h), rel=1e-5)
    assert expected[0] == pytest.approx(sum(math.cos(c ** k) * c ** k for k in range(4)))


def test_a_zero_factor_of_an_array_is_saved():
    a = np.array([1.0, 2.0])
    reversible = derivo.grad(scaled_array, loops="reversible")(a, 0.0)
    np.testing.assert_array_equal(reversible, np.cos(a))   # only the first trip's term
    assert np.all(np.isfinite(reversible))


def test_additions_are_undone_exactly_or_saved():
    reversible = derivo.grad(absorbing, loops="reversible")(0.7)
    assert reversible == derivo.grad(absorbing)(0.7)
    assert reversible == pytest.approx(sum(math.cos(0.7 + k * 1e17) for k in range(3)))


def test_exact_steps_save_nothing():
    """Halving and doubling of a power of two, integer counters: the undo is exact."""
    from derivo.runtime import Undo

    undo = Undo("*")
    x = 3.0
    for _ in range(10):
        x = undo.step(x, 0.5)
    assert undo.saved == []
    for _ in range(10):
        x = undo.back(x, 0.5)
    assert x == 3.0 and undo.steps == 0
    undo = Undo("+")
    y = undo.step(1.0, 1e-17)   # 1 + 1e-17 rounds to 1, and 1 - 1e-17 to 1 again
    y = undo.step(0.1, 0.2)     # but (0.1 + 0.2) - 0.2 is not 0.1
    assert [step for step, _ in undo.saved] == [2]
    assert undo.back(y, 0.2) == 0.1 and undo.back(1.0, 1e-17) == 1.0
    undo = Undo("+")
    assert math.copysign(1.0, undo.back(undo.step(-0.0, 0.0), 0.0)) == -1.0  # -0.0 kept


def test_the_generated_code_checks_each_undone_update():
    source = derivo.grad(scaled_by, loops="reversible").source
    assert "s = undo_s.step(s, c)" in source and "s = undo_s.back(s, c)" in source


def every_update(s, c):
    acc = 0.0
    for _ in range(30):
        acc += math.sin(s)
        s = c * s     # the updated name on the right
        s = s / 1.1
        s = 0.3 + s
        s -= c * 0.01
    return acc


@pytest.mark.parametrize("c", [0.7, 0.0, 1e-300])
def test_every_kind_of_update_is_undone_exactly_or_saved(c):
    expected = derivo.grad(every_update, wrt=(0, 1))(1.3, c)
    assert derivo.grad(every_update, wrt=(0, 1), loops="reversible")(1.3, c) == expected
    h = 1e-6
    assert expected[0] == pytest.approx(
        (every_update(1.3 + h, c) - every_update(1.3 - h, c)) / (2 * h), rel=1e-5)


def test_a_reversible_derivative_is_refused_when_differentiated_again():
    gradient = derivo.grad(scaled_by, loops="reversible")
    for again in (lambda: derivo.grad(gradient)(1.0, 0.5),
                  lambda: derivo.jvp(gradient, (1.0, 0.5), (1.0, None))):
        with pytest.raises(derivo.UnsupportedSyntax, match="loops='stack' or loops='checkpoint'"):
            again()
    stacked = derivo.grad(scaled_by)
    h = 1e-5
    assert derivo.grad(stacked)(1.0, 0.5) == pytest.approx(
        (stacked(1.0 + h, 0.5) - stacked(1.0 - h, 0.5)) / (2 * h), rel=1e-6)
