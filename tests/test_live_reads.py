"""A derivative computes the derivative of the function as it is when called.

What a function's globals, closure cells and module attributes hold is read at
the call, as Python reads it: a rebound array, a changed cell, a redefined or
replaced helper, a rule registered later.  Each test changes something after the
derivative was made and compares with central differences of the function as
it is now.
"""

import math
import sys
import textwrap

import numpy as np
import pytest

import derivo
from checks import assert_close, numeric_grad
from test_api import import_file

THIS = sys.modules[__name__]


def central(f, x, h=1e-6):
    """d f / d x at the float or float array ``x`` by central differences."""
    return numeric_grad(f, (x,))


# --- a module-level array ---------------------------------------------------------------

X = np.array([1.0, 2.0])


def loss(w):
    return np.sum((X * w - 1.0) ** 2)


def test_grad_reads_a_rebound_global_array(monkeypatch):
    dloss = derivo.grad(loss)
    assert_close(dloss(0.0), -6.0)
    monkeypatch.setattr(THIS, "X", np.array([10.0, 20.0]))
    assert_close(dloss(0.0), -60.0)
    assert_close(dloss(0.3), central(loss, 0.3))


def test_value_and_grad_reads_a_rebound_global_array(monkeypatch):
    vg = derivo.value_and_grad(loss)
    vg(0.5)
    monkeypatch.setattr(THIS, "X", np.array([3.0, -4.0, 5.0]))
    value, gradient = vg(0.5)
    assert_close(value, loss(0.5))
    assert_close(gradient, central(loss, 0.5))


def test_vjp_and_jvp_read_a_rebound_global_array(monkeypatch):
    derivo.vjp(loss, 0.5)[1](1.0)
    derivo.jvp(loss, (0.5,), (1.0,))
    monkeypatch.setattr(THIS, "X", np.array([7.0, 1.5]))
    out, pullback = derivo.vjp(loss, 0.5)
    assert_close(out, loss(0.5))
    assert_close(pullback(2.0)[0], 2.0 * central(loss, 0.5))
    out, tangent = derivo.jvp(loss, (0.5,), (3.0,))
    assert_close(out, loss(0.5))
    assert_close(tangent, 3.0 * central(loss, 0.5))


def test_hessian_reads_a_rebound_global_array(monkeypatch):
    hess = derivo.hessian(loss)
    assert_close(hess(0.5), 2.0 * np.sum(X * X))
    monkeypatch.setattr(THIS, "X", np.array([2.0, 3.0, 4.0]))
    assert_close(hess(0.5), central(derivo.grad(loss), 0.5), rtol=1e-5)
    assert_close(hess(0.5), 2.0 * 29.0)


def test_a_rebound_array_is_not_a_new_transformation(monkeypatch):
    dloss = derivo.value_and_grad(loss)
    dloss(1.0)
    misses = derivo.cache_info().misses
    for scale in (2.0, 3.0, 4.0):
        monkeypatch.setattr(THIS, "X", np.array([1.0, 2.0]) * scale)
        assert_close(dloss(1.0)[1], central(loss, 1.0))
    assert derivo.cache_info().misses == misses


OFFSET = 1.0


def shifted(x):
    return (x - OFFSET) ** 2


def test_a_global_number_that_becomes_an_array_gets_array_code(monkeypatch):
    dshifted = derivo.grad(shifted)
    assert_close(dshifted(3.0), 4.0)
    monkeypatch.setattr(THIS, "OFFSET", np.array(-2.0))
    assert_close(dshifted(3.0), central(shifted, 3.0))
    assert_close(dshifted(3.0), 10.0)


def test_a_deleted_global_fails_as_in_python(monkeypatch):
    monkeypatch.setattr(THIS, "OFFSET", 1.0)
    dshifted = derivo.grad(shifted)
    assert_close(dshifted(3.0), 4.0)
    monkeypatch.delattr(THIS, "OFFSET")
    with pytest.raises((NameError, derivo.DerivoError)):
        dshifted(3.0)


# --- closures ----------------------------------------------------------------------------

def make_scaled():
    scale = 2.0

    def scaled(x):
        return scale * x * x

    def set_scale(value):
        nonlocal scale
        scale = value

    return scaled, set_scale


@pytest.mark.parametrize("transform", ["grad", "value_and_grad"])
def test_a_changed_closure_cell_is_read(transform):
    scaled, set_scale = make_scaled()
    derivative = getattr(derivo, transform)(scaled)
    derivative(1.5)
    set_scale(-3.0)
    result = derivative(1.5)
    gradient = result[1] if transform == "value_and_grad" else result
    assert_close(gradient, central(scaled, 1.5))
    assert_close(gradient, -9.0)
    if transform == "value_and_grad":
        assert_close(result[0], scaled(1.5))


def test_closures_over_one_value_read_their_own_cells():
    first, set_first = make_scaled()
    second, _ = make_scaled()
    dfirst, dsecond = derivo.grad(first), derivo.grad(second)
    set_first(5.0)
    assert_close(dfirst(1.0), 10.0)
    assert_close(dsecond(1.0), 4.0)


# --- helpers -------------------------------------------------------------------------------

def helper(t):
    return t * t


def uses_helper(x):
    return helper(x) + x


def looping_helper(t, n):
    total = 0.0
    for _ in range(n):
        total = total + t * t
    return total


def uses_looping_helper(x):
    return looping_helper(x, 3) * x


def test_a_redefined_inlined_helper_is_used(monkeypatch):
    duses = derivo.grad(uses_helper)
    assert_close(duses(2.0), 5.0)

    def helper(t):  # noqa: F811
        return t * t * t

    monkeypatch.setattr(THIS, "helper", helper)
    assert_close(duses(2.0), central(uses_helper, 2.0))
    assert_close(duses(2.0), 13.0)
    assert_close(derivo.grad(uses_helper)(2.0), 13.0)


def test_a_redefined_called_helper_is_used(monkeypatch):
    duses = derivo.value_and_grad(uses_looping_helper)
    duses(2.0)

    def looping_helper(t, n):  # noqa: F811
        total = 0.0
        for _ in range(n):
            total = total + math.sin(t)
        return total

    monkeypatch.setattr(THIS, "looping_helper", looping_helper)
    value, gradient = duses(2.0)
    assert_close(value, uses_looping_helper(2.0))
    assert_close(gradient, central(uses_looping_helper, 2.0))


def test_a_helper_changed_again_is_transformed_once_per_change(monkeypatch):
    duses = derivo.grad(uses_helper)
    duses(1.0)
    misses = derivo.cache_info().misses

    def helper(t):  # noqa: F811
        return 4.0 * t

    monkeypatch.setattr(THIS, "helper", helper)
    for _ in range(5):
        assert_close(duses(1.0), 5.0)
    assert derivo.cache_info().misses == misses + 1


# --- module attributes ------------------------------------------------------------------

@pytest.fixture
def user_module(tmp_path):
    path = tmp_path / "live_reads_model.py"
    path.write_text(textwrap.dedent("""\
        RATE = 2.0

        def shape(t):
            return t * t
        """))
    module = import_file(path, "live_reads_model")
    yield module
    sys.modules.pop("live_reads_model", None)


def test_a_replaced_module_function_is_used(user_module, monkeypatch):
    monkeypatch.setitem(globals(), "live_reads_model", user_module)
    dmodel = derivo.grad(through_module)
    assert_close(dmodel(1.5), 2.0 * 2.0 * 1.5)
    monkeypatch.setattr(user_module, "shape", np.sin)
    assert_close(dmodel(1.5), central(through_module, 1.5))
    monkeypatch.setattr(user_module, "RATE", -1.0)
    assert_close(dmodel(1.5), central(through_module, 1.5))
    assert_close(dmodel(1.5), -math.cos(1.5))


def through_module(x):
    return live_reads_model.RATE * live_reads_model.shape(x)  # noqa: F821 (see the test)


# --- rules registered late ---------------------------------------------------------------

def hard_round(x):
    return float(round(x))


def rounded_loss(x):
    return hard_round(x) * x


def softplus_like(x):
    return math.log(1.0 + math.exp(x))


def uses_softplus_like(x):
    return 2.0 * softplus_like(x)


def test_a_rule_registered_later_is_used_by_the_next_call():
    drounded = derivo.grad(rounded_loss)
    assert_close(drounded(2.2), 2.0)  # round carries no derivative
    # a straight-through estimator: d hard_round / dx taken as 1
    derivo.defpartials(hard_round, lambda ans, x: 1.0)
    assert_close(drounded(2.2), 2.0 + 2.2)
    assert_close(derivo.grad(rounded_loss)(2.2), 2.0 + 2.2)
    assert_close(derivo.value_and_grad(rounded_loss)(2.2)[1], 2.0 + 2.2)


def test_a_vjp_rule_registered_later_is_used_by_the_next_call():
    duses = derivo.grad(uses_softplus_like)
    assert_close(duses(0.3), central(uses_softplus_like, 0.3))
    # a rule that differs from the source's derivative, so the test can tell
    derivo.defvjp(softplus_like, lambda g, ans, x: g * 10.0)
    derivo.defjvp(softplus_like, lambda t, ans, x: t * 10.0)  # every vjp rule has one
    assert_close(duses(0.3), 20.0)
    assert_close(derivo.vjp(uses_softplus_like, 0.3)[1](1.0)[0], 20.0)


# --- asking again ----------------------------------------------------------------------

def cubic(x, y):
    return x * x * y


def test_asking_again_gives_the_same_derivative_and_counts_a_hit():
    first = derivo.grad(cubic, wrt=(0, 1))
    hits = derivo.cache_info().hits
    assert derivo.grad(cubic, wrt=(0, 1)) is first
    assert derivo.cache_info().hits == hits + 1
    assert derivo.grad(cubic, wrt=("x", "y")) is not first
    assert derivo.grad(cubic) is not first


def test_asking_again_with_an_option_refused_still_refuses():
    derivo.grad(cubic, wrt=1)
    with pytest.raises(derivo.DerivoError, match="wrt must be"):
        derivo.grad(cubic, wrt=True)
    derivo.grad(cubic, loops="checkpoint", checkpoints=1)
    with pytest.raises(derivo.DerivoError, match="checkpoints=True"):
        derivo.grad(cubic, loops="checkpoint", checkpoints=True)


# --- what a call checks cheaply ----------------------------------------------------------

class Model:
    def __init__(self, scale):
        self.scale = scale

    def weight(self):
        return self.scale


MODEL = Model(3.0)


def through_a_method(x):
    return MODEL.weight() * x * x + x


def test_a_method_of_a_global_object_is_not_a_change(monkeypatch):
    # MODEL.weight is a new bound method at each read: the derivative is made once
    dmethod = derivo.grad(through_a_method)
    assert_close(dmethod(2.0), central(through_a_method, 2.0))
    misses = derivo.cache_info().misses
    for _ in range(3):
        assert_close(dmethod(2.0), 13.0)
    assert derivo.cache_info().misses == misses
    monkeypatch.setattr(THIS, "MODEL", Model(-1.0))
    assert_close(dmethod(2.0), central(through_a_method, 2.0))


# --- derivatives of derivatives ---------------------------------------------------------

GAIN = 2.0


def gained(x):
    return GAIN * x * x


dgained = derivo.grad(gained)


def calls_a_derivative(x):
    return dgained(x) * x


def test_a_derivative_called_by_a_function_reads_live_too(monkeypatch):
    dcalls = derivo.grad(calls_a_derivative)
    assert_close(dcalls(1.5), 4.0 * GAIN * 1.5)
    monkeypatch.setattr(THIS, "GAIN", 5.0)
    # the inner derivative not called since: the outer one brings it up to date
    assert_close(dcalls(1.5), central(calls_a_derivative, 1.5))
    assert_close(dcalls(1.5), 30.0)


def test_a_derivative_made_after_the_change_sees_it(monkeypatch):
    dgained(1.0)
    monkeypatch.setattr(THIS, "GAIN", -3.0)
    assert_close(derivo.value_and_grad(calls_a_derivative)(2.0)[1], -24.0)
    assert_close(derivo.grad(dgained)(2.0), -6.0)


# --- checkpointed loops, forward mode ---------------------------------------------

FRICTION = 0.5


def damped(x, n):
    for _ in range(n):
        x = x - FRICTION * math.sin(x) * 0.1
    return x


def along_one(tangent):
    """The derivative, from a tangent derivative of damped made once."""
    return lambda x, n: tangent(1.0, x, n)[1]


@pytest.mark.parametrize("make", [
    lambda: derivo.grad(damped, loops="checkpoint", checkpoints=3),
    lambda: along_one(derivo.tangent(damped)),
], ids=["checkpoint", "tangent"])
def test_checkpointed_loops_and_forward_mode_read_live(make, monkeypatch):
    derivative = make()
    assert_close(derivative(1.0, 20), numeric_grad(damped, (1.0, 20)))
    monkeypatch.setattr(THIS, "FRICTION", 3.0)
    assert_close(derivative(1.0, 20), numeric_grad(damped, (1.0, 20)))


def noise_scale(x):
    return 0.5 * x


def with_noise(x):
    return x * x + noise_scale(x)


def test_a_function_declared_nondifferentiable_later_is_followed():
    dnoise = derivo.grad(with_noise)
    assert_close(dnoise(1.0), 2.5)
    derivo.nondifferentiable(noise_scale)
    assert_close(dnoise(1.0), 2.0)


def test_a_saved_module_holds_what_the_names_hold_now(monkeypatch, tmp_path):
    dloss = derivo.grad(loss)
    dloss(0.0)
    monkeypatch.setattr(THIS, "X", np.array([10.0, 20.0]))
    path = tmp_path / "saved_loss_grad.py"
    dloss.save(path)
    saved = import_file(path, "derivo_test_saved_loss_grad")
    assert_close(getattr(saved, dloss.__name__)(0.0), -60.0)


def make_power(helper, exponent):
    def power(x):
        return helper(x) ** exponent
    return power


def identity(t):
    return t


def doubled(t):
    return 2.0 * t


def test_a_closure_made_again_is_not_transformed_again():
    transformation = derivo.grad(make_power(identity, 2.0)).__self__._generated.build
    for exponent in (2.0, 3.0, 4.0):
        power = make_power(identity, exponent)
        dpower = derivo.grad(power)
        assert_close(dpower(1.5), central(power, 1.5))
        assert dpower.__self__._generated.build is transformation  # compiled, not transformed
    # another helper in the cell: transformed anew, right
    power = make_power(doubled, 3.0)
    assert_close(derivo.grad(power)(1.5), central(power, 1.5))


def test_closures_made_again_part_when_one_cell_changes():
    first, set_first = make_scaled()
    second, set_second = make_scaled()
    dfirst, dsecond = derivo.value_and_grad(first), derivo.value_and_grad(second)
    set_second(7.0)
    assert_close(dsecond(1.0), (7.0, 14.0))
    assert_close(dfirst(1.0), (2.0, 4.0))
    set_first(-1.0)
    assert_close(dfirst(1.0), (-1.0, -2.0))
    assert_close(dsecond(1.0), (7.0, 14.0))


# --- what a call checks ----------------------------------------------------------------

def library_and_user(x):
    return math.log(x) + np.sum(np.sin(x)) + live_reads_model.shape(x)  # noqa: F821


def test_a_call_checks_library_modules_by_name_and_user_modules_by_attribute(
        user_module, monkeypatch):
    monkeypatch.setitem(globals(), "live_reads_model", user_module)
    df = derivo.grad(library_and_user)
    assert_close(df(1.5), central(library_and_user, 1.5))
    checked = {(ident, path) for _, ident, path in df.__self__._generated.live.reads}
    assert ("math", ()) in checked and ("np", ()) in checked
    assert not any(path for ident, path in checked if ident in ("math", "np"))
    assert ("live_reads_model", ("shape",)) in checked
    monkeypatch.setattr(user_module, "shape", np.cos)
    assert_close(df(1.5), central(library_and_user, 1.5))


# --- a function's code and defaults set anew (IPython's autoreload sets __code__) -------


def scaled_square(x, a=2.0):
    return a * x * x


def keyword_scaled_square(x, *, a=2.0):
    return a * x * x


def times_c(x, c=1.0):
    return x * c


def calls_times_c(x):
    return times_c(x) * x


def cube_code(x):
    return x * x * x


def test_defaults_set_anew_are_the_ones_the_next_call_uses():
    for f in (scaled_square, keyword_scaled_square):
        saved = f.__defaults__, f.__kwdefaults__
        df, vg = derivo.grad(f), derivo.value_and_grad(f)
        assert df(1.5) == pytest.approx(6.0) and vg(1.5)[0] == pytest.approx(4.5)
        try:
            if f.__defaults__:
                f.__defaults__ = (3.0,)
            else:
                f.__kwdefaults__ = {"a": 3.0}
            assert df(1.5) == pytest.approx(9.0)  # the first call after the change too
            assert vg(1.5) == pytest.approx((6.75, 9.0))
            assert df(1.5, a=1.0) == pytest.approx(3.0)
        finally:
            f.__defaults__, f.__kwdefaults__ = saved


def test_a_callees_defaults_and_code_set_anew_make_the_derivative_again():
    df = derivo.grad(calls_times_c)
    assert df(1.5) == pytest.approx(3.0)
    saved_defaults, saved_code = times_c.__defaults__, times_c.__code__
    try:
        times_c.__defaults__ = (4.0,)
        assert df(1.5) == pytest.approx(12.0)
        assert df(1.5) == pytest.approx(numeric_grad(calls_times_c, (1.5,)))
        times_c.__code__ = cube_code.__code__  # (as autoreload does with an edited helper)
        times_c.__defaults__ = None
        assert df(1.5) == pytest.approx(4 * 1.5 ** 3)
    finally:
        times_c.__defaults__, times_c.__code__ = saved_defaults, saved_code
    assert df(1.5) == pytest.approx(3.0)


def test_the_differentiated_functions_code_set_anew_makes_it_again():
    def square(x):
        return x * x
    ds = derivo.grad(square)
    assert ds(2.0) == 4.0
    square.__code__ = cube_code.__code__
    assert ds(2.0) == 12.0
