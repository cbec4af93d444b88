"""End to end: real NumPy code differentiated by derivo, checked against finite differences.

Every reference value here is a central finite difference (or a closed form);
nothing on the expected side comes from derivo.  Tests that expose a bug in
derivo are marked ``xfail(strict=True)`` with the bug in the reason.
"""

import math
import re

import numpy as np
import pytest

import derivo

H = 1e-6


# --- checking helpers ------------------------------------------------------------------

def numeric_gradient(f, args, index, h=H):
    """Central differences of the scalar ``f(*args)`` with respect to ``args[index]``."""
    args = list(args)
    x = args[index]

    def at(value):
        moved = list(args)
        moved[index] = value
        return float(f(*moved))

    if isinstance(x, float):
        return (at(x + h) - at(x - h)) / (2 * h)
    gradient = np.zeros(np.shape(x))
    for position in np.ndindex(gradient.shape):
        step = np.zeros(gradient.shape)
        step[position] = h
        gradient[position] = (at(x + step) - at(x - step)) / (2 * h)
    return gradient


def assert_gradient(f, args, wrt, rtol=1e-6, atol=1e-8):
    """derivo.grad(f, wrt=wrt) agrees with central differences; returns derivo's gradient."""
    single = not isinstance(wrt, tuple)
    got = derivo.grad(f, wrt=wrt)(*args)
    for index, value in zip((wrt,) if single else wrt, (got,) if single else got):
        expected = numeric_gradient(f, args, index)
        assert np.shape(value) == np.shape(args[index]), (index, np.shape(value))
        np.testing.assert_allclose(value, expected, rtol=rtol, atol=atol,
                                   err_msg="gradient with respect to argument {}".format(index))
    return got


def rng(seed=0):
    return np.random.default_rng(seed)


# --- broadcasting -----------------------------------------------------------------------

def outer_sum(a, b):
    c = a + b
    return np.sum(np.tanh(c) * c)


def test_broadcast_column_plus_row():
    # (3,1) + (1,4) -> (3,4): each adjoint is summed back to its operand's shape.
    a = rng(1).normal(size=(3, 1))
    b = rng(2).normal(size=(1, 4))
    ga, gb = assert_gradient(outer_sum, (a, b), (0, 1))
    assert ga.shape == (3, 1) and gb.shape == (1, 4)


def dense(X, W, b):
    return np.sum(np.tanh(X @ W + b) ** 2)


def test_bias_added_to_a_batch():
    X = rng(3).normal(size=(5, 3))
    W = rng(4).normal(size=(3, 4))
    b = rng(5).normal(size=4)
    gX, gW, gb = assert_gradient(dense, (X, W, b), (0, 1, 2))
    assert gb.shape == (4,)


def column_scale(x, s):
    return np.sum(np.exp(x * s - s / 2))


def test_broadcast_vector_against_matrix_rows():
    x = rng(6).normal(size=(2, 3))
    s = rng(7).normal(size=(3,))
    assert_gradient(column_scale, (x, s), (0, 1))


# --- Python scalars mixed with arrays ---------------------------------------------------

def scalar_and_array(t, x):
    y = t * x + 2.0 * t * t - x / t + 1
    return np.sum(np.sin(y)) * t + 3 * np.mean(x) ** 2


def test_python_scalars_mixed_with_arrays():
    t = 0.7
    x = rng(8).normal(size=(4,))
    gt, gx = assert_gradient(scalar_and_array, (t, x), (0, 1))
    assert np.ndim(gt) == 0 and gx.shape == (4,)


def scalar_coefficient(x, c):
    return np.sum((c * x - 1.0) ** 2)


def test_gradient_of_a_scalar_parameter_is_a_scalar():
    x = rng(9).normal(size=(3, 2))
    gc = assert_gradient(scalar_coefficient, (x, 0.3), 1)
    assert isinstance(gc, float) or np.ndim(gc) == 0


# --- methods ----------------------------------------------------------------------------

def with_methods(x, y):
    column_sums = x.sum(axis=0)
    flat = x.reshape(-1, 2)
    product = x.dot(y)
    return np.sum(column_sums ** 2) + np.sum(flat.T @ flat) + np.sum(product * product) \
        + x.T.sum() * y.mean()


def test_array_methods():
    x = rng(10).normal(size=(3, 4))
    y = rng(11).normal(size=(4,))
    assert_gradient(with_methods, (x, y), (0, 1))


def method_chain(x):
    return x.reshape(2, 6).T.sum(axis=1).max()


def test_chained_methods():
    x = rng(12).normal(size=(3, 4))
    assert_gradient(method_chain, (x,), 0)


# --- shapes and constructors as constants ------------------------------------------------

def uses_shape(x):
    n, m = x.shape
    total = 0.0
    for i in range(len(x)):
        total = total + np.sum(x[i]) * (i + 1) / m
    return total / n + x.size * np.mean(x)


def test_shape_and_len_are_constants():
    x = rng(13).normal(size=(3, 4))
    assert_gradient(uses_shape, (x,), 0)


def uses_constructors(x):
    ramp = np.arange(x.shape[0])
    grid = np.linspace(0.0, 1.0, len(x))
    z = np.zeros(x.shape) + np.ones_like(x) * 0.5 + np.zeros_like(x)
    bias = np.ones(len(x)) * 2.0 + np.full(len(x), 0.25)
    return np.sum((x + z) * ramp * grid + bias * x)


def test_constructors_are_constants():
    x = rng(14).normal(size=(5,))
    g = assert_gradient(uses_constructors, (x,), 0)
    ramp, grid = np.arange(5), np.linspace(0.0, 1.0, 5)
    np.testing.assert_allclose(g, ramp * grid + 2.25, rtol=1e-12)


# --- loops ------------------------------------------------------------------------------

def rnn_loss(W, U, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t])
    return np.sum(h * h)


def softplus_of_a_broadcast(x, b):
    return np.sum(np.log1p(np.exp(x + b)) * x)


def test_a_product_is_finished_in_the_array_its_first_factors_made():
    # exp's adjoint times exp(z) goes into log1p's adjoint array, as backprop is written
    # by hand; a bias row broadcast over a batch
    derivative = derivo.grad(softplus_of_a_broadcast, wrt=(0, 1))
    assert re.search(r"\n    (bt\d+) = .* / \(1 \+ t1\)\n    \1 \*= t1\n", derivative.source)
    x, b = rng(1).normal(size=(4, 3)), rng(2).normal(size=3)
    assert_gradient(softplus_of_a_broadcast, (x, b), (0, 1))


def test_rnn_over_time_steps():
    W = rng(15).normal(size=(4, 4)) * 0.5
    U = rng(16).normal(size=(4, 3)) * 0.5
    h0 = rng(17).normal(size=(4,))
    xs = rng(18).normal(size=(6, 3))
    assert_gradient(rnn_loss, (W, U, h0, xs), (0, 1, 2, 3))


def rows_loop(x, w):
    total = 0.0
    for i in range(x.shape[0]):
        row = x[i]
        total = total + np.sum(np.sin(row * w)) * x[i, 0]
    return total + np.sum(x[-1] * x[0])


def test_loop_over_rows_reading_by_index():
    x = rng(19).normal(size=(4, 3))
    w = rng(20).normal(size=(3,))
    assert_gradient(rows_loop, (x, w), (0, 1))


def iterate_rows(x, w):
    total = 0.0
    for row in x:
        total = total + np.sum(np.tanh(row * w))
    return total


def test_for_loop_iterating_over_the_rows_of_a_differentiated_array():
    x = rng(22).normal(size=(4, 3))
    w = rng(23).normal(size=(3,))
    assert_gradient(iterate_rows, (x, w), (0, 1))
    source = derivo.grad(iterate_rows, wrt=(0, 1)).source
    # the reverse loop reads each row again by index; the forward one needs no index
    assert "for row in x:" in source and "for i in reversed(range(len(x))):" in source


def iterate_values(xs, a):
    s = 0.0
    for x in xs:
        s = s + a * x * x
    return s


def test_for_loop_over_a_list_of_floats_gives_a_list_of_adjoints():
    xs, a = [1.0, -2.0, 0.5], 1.5
    gradient, ga = derivo.grad(iterate_values, wrt=(0, 1))(xs, a)
    assert gradient == pytest.approx([2 * a * x for x in xs])
    assert ga == pytest.approx(sum(x * x for x in xs))


def iterate_slice_and_cells(x, w):
    total = 0.0
    for row in x[1:]:
        for value in row:
            total = total + value * np.sum(w * row)
    return total


def test_for_loops_over_a_slice_and_over_the_cells_of_each_row():
    x = rng(24).normal(size=(4, 3))
    w = rng(25).normal(size=(3,))
    assert_gradient(iterate_slice_and_cells, (x, w), (0, 1))


def iterate_matrices(mats, v):
    total = 0.0
    for m in mats:
        total = total + np.sum(np.sin(m @ v))
    return total


def test_for_loop_over_a_list_of_arrays():
    mats = [rng(26 + k).normal(size=(2, 3)) for k in range(3)]
    v = rng(29).normal(size=(3,))
    gradient = derivo.grad(iterate_matrices, wrt=(0, 1))(mats, v)
    assert len(gradient[0]) == 3 and all(g.shape == (2, 3) for g in gradient[0])
    flat = (*mats, v)
    expected = [numeric_gradient(lambda *m: iterate_matrices(list(m[:3]), m[3]), flat, k)
                for k in range(4)]
    for got, want in zip([*gradient[0], gradient[1]], expected):
        assert got == pytest.approx(want, rel=1e-6, abs=1e-8)


def iterate_while_writing(x):
    total = 0.0
    for row in x:
        x[0] = row * 2.0
        total = total + np.sum(row)
    return total


def test_for_loop_over_an_array_its_body_writes_into_is_refused():
    with pytest.raises(derivo.UnsupportedSyntax, match="whose body rebinds or writes into it"):
        derivo.grad(iterate_while_writing)(np.ones((2, 2)))


def cumulative_product_loop(x):
    p = np.ones(x.shape[1])
    for i in range(x.shape[0]):
        p = p * x[i] + 0.5
    return np.sum(p)


def test_loop_overwriting_an_array():
    x = rng(21).normal(size=(5, 3))
    assert_gradient(cumulative_product_loop, (x,), 0)


def stacked_states(x, a):
    states = []
    s = x
    for _ in range(4):
        s = np.sin(a * s)
        states.append(s)
    return np.sum(np.stack(states) ** 2) + np.sum(sum(states))


def test_loop_appending_arrays_then_stacking():
    x = rng(22).normal(size=(3,))
    assert_gradient(stacked_states, (x, 1.3), (0, 1))


def collected_rows(x, w):
    rows = []
    for i in range(x.shape[0]):
        rows.append(np.tanh(x[i] * w))
    return np.sum(np.concatenate(rows) ** 2) + np.sum(np.vstack(rows) * w)


def test_loop_appending_arrays_then_concatenating():
    x = rng(53).normal(size=(3, 4))
    w = rng(54).normal(size=(4,))
    assert_gradient(collected_rows, (x, w), (0, 1))


def list_read_twice(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i] * 1.0)
    return np.sum(np.array(rows)[:, 0]) + np.sum(np.stack(rows) * 10.0)


def test_list_of_arrays_read_by_np_array_and_np_stack():
    x = np.arange(8.0).reshape(2, 4) + 1
    g = derivo.grad(list_read_twice)(x)
    np.testing.assert_allclose(g, np.full((2, 4), 10.0) + np.array([1.0, 0.0, 0.0, 0.0]))


def write_rows(x):
    out = np.zeros(x.shape)
    for i in range(x.shape[0]):
        out[i] = np.tanh(x[i]) * (i + 1)
    out[0] += x[-1]
    return np.sum(out * out)


def test_item_writes_in_a_loop():
    x = rng(23).normal(size=(4, 3))
    assert_gradient(write_rows, (x,), 0)


def prefix_recurrence(x, a):
    x = x.copy()
    for i in range(1, x.shape[0]):
        x[i] += a * x[i - 1]
    return np.sum(x * x)


def test_item_update_reading_the_previous_item_in_a_loop():
    # Each x[i] += ... overwrites a value the adjoint needs: it goes on the stack.
    x = rng(49).normal(size=(5,))
    assert_gradient(prefix_recurrence, (x, 0.7), (0, 1))


def masked(x):
    return np.sum((x > 0) * x + np.sign(x) * x * x + np.where(x < -0.5, 1.0, 0.0))


def test_comparisons_and_sign_are_not_differentiated():
    x = np.array([1.2, -0.3, 0.4, -1.1, 2.0])
    g = assert_gradient(masked, (x,), 0)
    np.testing.assert_allclose(g, (x > 0) + 2 * np.abs(x), rtol=1e-12)


def branch_and_while_on_array_data(x):
    if np.sum(x) > 0:
        y = x * 2.0
    else:
        y = np.exp(x)
    while np.max(y) < 10.0:
        y = y * 1.5
    return np.sum(y * x)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_branch_and_while_conditions_on_arrays(sign):
    x = sign * np.abs(rng(50).normal(size=(4,)))
    assert_gradient(branch_and_while_on_array_data, (x,), 0)


def softplus(z):
    return np.log1p(np.exp(z))


def calls_helper(W, x):
    return np.sum(softplus(W @ x) * softplus(-x[:3]))


def test_user_function_called_with_arrays():
    W = rng(51).normal(size=(3, 4))
    x = rng(52).normal(size=(4,))
    assert_gradient(calls_helper, (W, x), (0, 1))


def aliased_update(x):
    y = x
    y += 1.0  # NumPy: updates x as well, since y and x are the same array
    return np.sum(x * y)


def updates_through_an_unread_alias(x):
    y = x
    y += 1.0  # y is not read again, x is: its gradient was 2x, not 2(x + 1)
    return np.sum(x * x)


@pytest.mark.parametrize("f", [aliased_update, updates_through_an_unread_alias])
def test_augmented_assignment_through_an_alias_is_refused(f):
    # NumPy updates x too; the statement form would not: refuse, never a
    # silently different function.
    x = np.array([1.0, 2.0])
    with pytest.raises(derivo.UnsupportedSyntax, match="another name for 'x'"):
        derivo.value_and_grad(f)(x.copy())


# --- vjp and grad with array outputs ----------------------------------------------------

def layer(W, x):
    return np.tanh(W @ x)


def test_vjp_with_array_output_and_array_cotangent():
    W = rng(24).normal(size=(3, 4))
    x = rng(25).normal(size=(4, 2))
    u = rng(26).normal(size=(3, 2))
    out, vjp_fn = derivo.vjp(layer, W, x)
    np.testing.assert_allclose(out, np.tanh(W @ x))
    gW, gx = vjp_fn(u)
    assert gW.shape == W.shape and gx.shape == x.shape
    # The VJP is the gradient of <u, layer(W, x)>.
    np.testing.assert_allclose(gW, numeric_gradient(lambda W: np.sum(u * layer(W, x)), (W,), 0),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gx, numeric_gradient(lambda x: np.sum(u * layer(W, x)), (x,), 0),
                               rtol=1e-6, atol=1e-8)
    # closed form: dtanh = 1 - tanh^2
    r = u * (1 - np.tanh(W @ x) ** 2)
    np.testing.assert_allclose(gW, r @ x.T, rtol=1e-12)
    np.testing.assert_allclose(gx, W.T @ r, rtol=1e-12)


def test_vjp_int_array_argument_gets_none():
    W = rng(27).normal(size=(3, 4))
    idx = np.array([0, 2])
    out, vjp_fn = derivo.vjp(pick_rows, W, idx)
    gW, gidx = vjp_fn(np.ones(out.shape))
    assert gidx is None
    expected = np.zeros((3, 4))
    expected[[0, 2]] = 2.0
    np.testing.assert_allclose(gW, expected)


def test_grad_of_array_valued_function_explains_shape_and_vjp():
    W = rng(28).normal(size=(3, 4))
    x = rng(29).normal(size=(4, 2))
    with pytest.raises(derivo.DerivoError) as info:
        derivo.grad(layer)(W, x)
    message = str(info.value)
    assert "(3, 2)" in message and "vjp" in message and "scalar" in message


# --- inputs are not mutated ------------------------------------------------------------

def mutating_looking(x, y):
    x = x * 1.0
    y += 0.0
    z = np.zeros(x.shape)
    for i in range(x.shape[0]):
        z[i] = x[i] * y[i]
    z[0] += 1.0
    return np.sum(z * z) + np.sum(y)


def test_callers_arrays_are_not_mutated():
    x = rng(30).normal(size=(3, 2))
    y = rng(31).normal(size=(3, 2))
    x_copy, y_copy = x.copy(), y.copy()
    gradient = derivo.grad(mutating_looking, wrt=(0, 1))
    value_and_gradient = derivo.value_and_grad(mutating_looking, wrt=(0, 1))
    first = gradient(x, y)
    value_and_gradient(x, y)
    derivo.vjp(mutating_looking, x, y)[1](1.0)
    np.testing.assert_array_equal(x, x_copy)
    np.testing.assert_array_equal(y, y_copy)
    # calling again gives the same answer (nothing it read was changed either)
    second = gradient(x, y)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert_gradient(mutating_looking, (x, y), (0, 1))


def inplace_on_argument(x):
    x[0] = 2.0 * x[0]
    return np.sum(x * x)


def test_item_write_into_an_argument_does_not_reach_the_caller():
    x = rng(32).normal(size=(3,))
    x_copy = x.copy()
    g = derivo.grad(inplace_on_argument)(x)
    np.testing.assert_array_equal(x, x_copy)
    np.testing.assert_allclose(g, np.array([8.0 * x[0], 2 * x[1], 2 * x[2]]), rtol=1e-12)


def total(x):
    return np.sum(x)


def test_gradients_are_ordinary_writeable_arrays():
    # The gradient of np.sum(x) once came back as np.broadcast_to(1.0, x.shape): a
    # read-only zero-stride view, so `g *= lr` raised ValueError.
    x = rng(33).normal(size=(3, 4))
    g = derivo.grad(total)(x)
    assert g.flags.writeable
    g *= 0.5  # what an optimiser does with a gradient
    np.testing.assert_array_equal(g, np.full((3, 4), 0.5))


# --- code that never mentions NumPy --------------------------------------------------------

def plain_polynomial(x, y):
    z = x * x * y + 3.0 * x
    return z * y - x / (y + 4.0)


def test_scalar_code_then_arrays():
    # The function names nothing from NumPy: derivo generates scalar code first ...
    df = derivo.grad(plain_polynomial, wrt=(0, 1))
    gx, gy = df(0.5, 1.5)
    assert gx == pytest.approx(2 * 0.5 * 1.5 * 1.5 + 3.0 * 1.5 - 1 / 5.5, rel=1e-12)
    # ... and switches to array code when called with arrays (0-d here, so that the
    # output is still a scalar grad accepts).
    x, y = np.array(0.5), np.array(1.5)
    ax, ay = df(x, y)
    assert ax == pytest.approx(gx, rel=1e-12)
    assert ay == pytest.approx(0.5 * 0.5 * 2 * 1.5 + 3.0 * 0.5 + 0.5 / 5.5 ** 2, rel=1e-12)
    # scalars still work afterwards
    assert df(0.5, 1.5)[0] == pytest.approx(gx, rel=1e-15)


def plain_weighted(x, w):
    z = x * x * w + 3.0 * x
    return z[0] * w[1] - z[2] / (w[0] + 4.0)


def test_scalar_style_code_called_with_vectors():
    # No NumPy name in the function, but indexing and arrays: grad must give arrays.
    x = rng(34).normal(size=(3,))
    w = rng(35).uniform(0.5, 1.5, size=(3,))
    gx, gw = assert_gradient(plain_weighted, (x, w), (0, 1))
    assert gx.shape == (3,) and gw.shape == (3,)


def plain_sum_of_squares(x):
    return x * x + x


def test_plain_function_with_array_output_through_vjp():
    x = rng(36).normal(size=(2, 3))
    u = rng(37).normal(size=(2, 3))
    out, vjp_fn = derivo.vjp(plain_sum_of_squares, x)
    (gx,) = vjp_fn(u)
    np.testing.assert_allclose(gx, u * (2 * x + 1), rtol=1e-12)


def broadcasting_plain(a, b):
    return a * b + a


def test_plain_function_broadcasting_arrays():
    a = rng(38).normal(size=(3, 1))
    b = rng(39).normal(size=(1, 4))
    u = rng(40).normal(size=(3, 4))
    _, vjp_fn = derivo.vjp(broadcasting_plain, a, b)
    ga, gb = vjp_fn(u)
    np.testing.assert_allclose(ga, np.sum(u * (b + 1), axis=1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(gb, np.sum(u * a, axis=0, keepdims=True), rtol=1e-12)


# --- value_and_grad, integer arrays ------------------------------------------------------

def softmax_loss(W, x, label):
    z = W @ x
    m = np.max(z)
    log_z = m + np.log(np.sum(np.exp(z - m)))
    return log_z - z[label]


def test_value_and_grad_with_arrays():
    W = rng(41).normal(size=(4, 3))
    x = rng(42).normal(size=(3,))
    value, gW = derivo.value_and_grad(softmax_loss)(W, x, 2)
    assert value == pytest.approx(softmax_loss(W, x, 2), rel=1e-15)
    np.testing.assert_allclose(gW, numeric_gradient(softmax_loss, (W, x, 2), 0),
                               rtol=1e-6, atol=1e-8)
    p = np.exp(W @ x) / np.sum(np.exp(W @ x))
    np.testing.assert_allclose(gW, np.outer(p - np.eye(4)[2], x), rtol=1e-10)


def pick_rows(W, idx):
    return W[idx] * 2.0


def gather_loss(W, idx, counts):
    picked = W[idx]
    return np.sum(picked * picked) + np.sum(W[counts > 0]) * len(idx)


def test_integer_array_arguments_pass_through():
    W = rng(43).normal(size=(5, 2))
    idx = np.array([4, 0, 4, 1])
    counts = np.array([1, 0, 2, 0, 3])
    gW = derivo.grad(gather_loss)(W, idx, counts)
    np.testing.assert_allclose(gW, numeric_gradient(gather_loss, (W, idx, counts), 0),
                               rtol=1e-6, atol=1e-8)
    # the integer arguments themselves come back untouched
    np.testing.assert_array_equal(idx, [4, 0, 4, 1])
    np.testing.assert_array_equal(counts, [1, 0, 2, 0, 3])
    (g_tuple,) = derivo.grad(gather_loss, wrt=(0,))(W, idx, counts)
    np.testing.assert_allclose(g_tuple, gW, rtol=1e-15)


def scalar_count_times(x, n):
    return np.sum(x) * n + np.sum(x[:n])


def test_integer_scalar_argument_slices():
    x = rng(44).normal(size=(6,))
    g = derivo.grad(scalar_count_times)(x, 3)
    np.testing.assert_allclose(g, np.array([4.0, 4.0, 4.0, 3.0, 3.0, 3.0]), rtol=1e-15)


# --- generated code --------------------------------------------------------------------------

def test_generated_array_code_is_readable():
    df = derivo.grad(dense, wrt=(1, 2))
    source = df.source
    assert "def dense_grad(X, W, b):" in source
    assert "bW" in source and "bb" in source
    # no tape, no per-element Python loop in straight-line array code
    assert "for " not in source and "append" not in source


def test_saved_array_module_runs_standalone(tmp_path):
    import importlib.util

    df = derivo.grad(rnn_loss, wrt=(0, 1))
    path = df.save(tmp_path / "rnn_grad.py")
    spec = importlib.util.spec_from_file_location("saved_rnn_grad", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = (rng(45).normal(size=(3, 3)), rng(46).normal(size=(3, 2)),
            rng(47).normal(size=(3,)), rng(48).normal(size=(4, 2)))
    for a, b in zip(module.rnn_loss_grad(*args), df(*args)):
        np.testing.assert_array_equal(a, b)
    assert math.isfinite(float(np.sum(module.rnn_loss_grad(*args)[0])))


def exp_helper(z):
    return np.exp(z)


def middle_helper(z):
    return exp_helper(z) + 1.0


def nested_helpers(z):
    return np.sum(middle_helper(z) * z)


def test_saved_module_includes_helpers_of_helpers(tmp_path):
    import importlib.util

    df = derivo.grad(nested_helpers)
    path = df.save(tmp_path / "nested_grad.py")
    spec = importlib.util.spec_from_file_location("saved_nested_grad", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    z = np.array([0.5, 1.0])
    np.testing.assert_array_equal(module.nested_helpers_grad(z), df(z))


def unused_argument(x, y):
    return np.sum(x * 2.0)


def test_unused_array_argument_gets_zeros_of_its_shape():
    gx, gy = derivo.grad(unused_argument, wrt=(0, 1))(np.ones(3), np.ones((2, 2)))
    np.testing.assert_array_equal(gx, np.full(3, 2.0))
    assert isinstance(gy, np.ndarray) and gy.shape == (2, 2) and not gy.any()


def short_rnn(W, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return np.sum(h * h)


def test_loop_with_no_iterations_gives_arrays_of_the_right_shape():
    W = np.eye(2) * 0.5
    h0 = np.array([0.3, -0.2])
    gW, gh0 = derivo.grad(short_rnn, wrt=(0, 1))(W, h0, np.zeros((0, 2)))
    np.testing.assert_allclose(gh0, 2 * h0)
    assert np.shape(gW) == (2, 2) and not np.any(gW)


def list_read_once(x0, x1):
    xs = [x1, x0]
    return np.sum(xs[1] ** 2)


def test_an_array_read_from_a_list_unused_gets_a_zero_array():
    g0, g1 = derivo.grad(list_read_once, wrt=(0, 1))(np.ones(3), np.ones(3))
    np.testing.assert_array_equal(g0, 2 * np.ones(3))
    assert isinstance(g1, np.ndarray) and g1.shape == (3,) and not g1.any()


def layer_loss(params, x):
    W, (b, c) = params
    return np.sum(np.tanh(W @ x + b) * c)


def test_the_gradient_of_nested_tuples_of_arrays_has_their_structure():
    W, b, c = np.arange(6.0).reshape(2, 3) / 10, np.array([0.1, -0.2]), np.array([1.0, 2.0])
    x = np.array([0.5, -1.0, 2.0])
    gW, (gb, gc) = grads = derivo.grad(layer_loss)((W, (b, c)), x)
    assert type(grads) is tuple and type(grads[1]) is tuple
    for index, gradient in enumerate((gW, gb, gc)):
        def part(value, index=index):
            parts = [W, b, c]
            parts[index] = value
            return layer_loss((parts[0], (parts[1], parts[2])), x)
        np.testing.assert_allclose(gradient, numeric_gradient(part, [[W, b, c][index]], 0),
                                   rtol=1e-6, atol=1e-9)
    lists = derivo.grad(layer_loss)([W, [b, c]], x)
    assert type(lists) is list and type(lists[1]) is list
    np.testing.assert_array_equal(lists[1][1], gc)


def test_vjp_of_nested_tuples_of_arrays_is_the_gradient_scaled():
    W, b, c = np.arange(6.0).reshape(2, 3) / 10, np.array([0.1, -0.2]), np.array([1.0, 2.0])
    x = np.array([0.5, -1.0, 2.0])
    (gW, (gb, gc)), gx = derivo.vjp(layer_loss, (W, (b, c)), x)[1](2.0)
    expected = derivo.grad(layer_loss, wrt=(0, 1))((W, (b, c)), x)
    for got, want in zip((gW, gb, gc, gx), (expected[0][0], *expected[0][1], expected[1])):
        np.testing.assert_allclose(got, 2.0 * want, rtol=1e-14)


def test_an_unread_array_in_a_tuple_gets_a_zero_array():
    gp, gx = derivo.grad(lambda p, x: np.sum(x * x), wrt=(0, 1))((np.ones(2), 2.0), np.ones(3))
    assert type(gp) is tuple and gp[1] == 0.0
    assert type(gp[0]) is np.ndarray and gp[0].shape == (2,) and not gp[0].any()
    np.testing.assert_array_equal(gx, 2 * np.ones(3))


def copied_product(a):
    ys = list(a)
    return ys[0] * ys[1]


def test_an_array_copied_into_a_list_gets_an_array_gradient():
    gradient = derivo.grad(copied_product)(np.array([0.3, -1.2, 2.5]))
    assert type(gradient) is np.ndarray
    np.testing.assert_array_equal(gradient, [-1.2, 0.3, 0.0])


def masked_square(x):
    return np.sum(1.0 * (x > 0) * x * x) + np.sum((x < 1.0) * 1.0 * x)


def test_a_mask_times_one_stays_an_array_product():
    # 1.0 * (x > 0) is not folded to float(x > 0), which refuses an array
    x = np.array([1.3, -2.0, 0.7])
    np.testing.assert_allclose(derivo.grad(masked_square)(x), numeric_gradient(masked_square,
                                                                                [x], 0),
                               rtol=1e-6, atol=1e-9)


def list_dot(xs, ys):
    return np.dot(xs, ys)


def list_inner(xs, ys):
    return np.inner(xs, ys) * 2.0


def rows_times(rows, x):
    return np.sum(np.matmul(rows, x))


def test_products_of_lists_and_tuples_take_them_as_arrays():
    # the adjoints multiplied by the tuple and read .T of the list (TypeError, AttributeError)
    assert derivo.grad(list_dot, wrt=(0, 1))([1.0, 2.0], (3.0, 4.0)) == ([3.0, 4.0], (1.0, 2.0))
    assert derivo.grad(list_inner, wrt=(0, 1))((1.0, 2.0), [3.0, 4.0]) == ((6.0, 8.0), [2.0, 4.0])
    rows = [np.array([1.0, 2.0]), np.array([3.0, 4.0])]
    grows, gx = derivo.grad(rows_times, wrt=(0, 1))(rows, np.array([0.5, -1.0]))
    assert type(grows) is list
    np.testing.assert_array_equal(np.array(grows), [[0.5, -1.0], [0.5, -1.0]])
    np.testing.assert_array_equal(gx, [4.0, 6.0])


def half_square_sum(x):
    return np.sum(x * x) / 2.0


def column_sums(x):
    return np.sum(x * x, axis=0)


def test_a_surely_scalar_result_needs_no_shape_check():
    source = derivo.grad(half_square_sum).source
    assert "scalar_seed" not in source and "result" not in source
    # the sum's adjoint has the shape of x * x, which is x's: x * x is not computed,
    # and the product with x needs no array of that shape full of 0.5
    assert "return 0.5 * x * 2" in source and "= x * x" not in source
    x = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(derivo.grad(half_square_sum)(x), x, rtol=1e-15)  # d/dx |x|^2/2
    assert "scalar_seed" in derivo.grad(column_sums).source
    with pytest.raises(derivo.DerivoError, match="returning a scalar"):
        derivo.grad(column_sums)(np.ones((2, 3)))


def weighted_as_a_column(x):
    return np.dot(np.atleast_2d(x), np.array([[1.0], [-2.0], [0.5]])) ** 2


def test_a_result_of_one_element_is_a_scalar_as_in_autograd():
    # autograd's bayesian_optimization.py minimises an acquisition of shape (1,)
    x = np.array([0.3, -1.2, 2.0])
    value, gradient = derivo.value_and_grad(weighted_as_a_column)(x)
    assert np.shape(value) == (1, 1)
    weights = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(gradient, 2 * np.dot(x, weights) * weights, rtol=1e-14)
    np.testing.assert_allclose(derivo.grad(lambda w: np.sin(w[:1]))(x), [np.cos(0.3), 0, 0])


def test_forward_mode_over_a_loop_over_rows():
    x = rng(30).normal(size=(3, 2))
    w = rng(31).normal(size=(2,))
    dx = rng(32).normal(size=(3, 2))
    value, tangent = derivo.jvp(iterate_rows, (x, w), (dx, np.zeros(2)))
    h = 1e-6
    expected = (iterate_rows(x + h * dx, w) - iterate_rows(x - h * dx, w)) / (2 * h)
    assert value == pytest.approx(iterate_rows(x, w))
    assert tangent == pytest.approx(expected, rel=1e-6)


# --- found by an adversarial review: each gave a silently wrong or crashing derivative ---

def sum_of_cast_squares(v):
    return np.sum(v.astype(float) ** 2)


def filled(x):
    return np.sum(np.full(3, x) ** 2)


def filled_like(v):
    return np.sum(np.full_like(v, v[0]) * v)


def fortran_order(x):
    return np.sum(np.reshape(x, (2, 3), order="F") * np.arange(6.0).reshape(2, 3))


def fortran_ravel(A):
    return np.sum(np.ravel(A, order="F") * np.arange(6.0)) + np.sum(A.flatten("F") ** 2)


def clipped_above(x):
    return np.sum(np.clip(x, None, 0.8) ** 2)


def power_of_zero(x, y):
    return np.sum(x ** y)


@pytest.mark.parametrize("f, args, wrt", [
    (sum_of_cast_squares, (np.array([0.3, 0.7, 1.1]),), 0),
    (filled, (1.3,), 0),
    (filled_like, (np.array([0.3, 0.7, 1.1]),), 0),
    (fortran_order, (np.linspace(0.1, 0.6, 6),), 0),
    (fortran_ravel, (np.linspace(0.1, 0.6, 6).reshape(2, 3),), 0),
    (clipped_above, (np.array([0.3, 1.7, -1.1]),), 0),
    (power_of_zero, (np.array([0.5, 1.0, 2.0]), 2.0), (0, 1)),
])
def test_numpy_functions_a_review_found_wrong_now_match_in_both_modes(f, args, wrt):
    assert_gradient(f, args, wrt)
    positions = wrt if isinstance(wrt, tuple) else (wrt,)
    tangents = tuple(np.ones_like(a) if k in positions else None for k, a in enumerate(args))
    tangents = tuple(1.0 if t is not None and np.ndim(t) == 0 else t for t in tangents)
    grads = derivo.grad(f, wrt=wrt)(*args)
    grads = grads if isinstance(grads, tuple) else (grads,)
    _, tangent = derivo.jvp(f, args, tangents)
    assert tangent == pytest.approx(sum(np.sum(g) for g in grads), rel=1e-10)


def test_the_exponent_derivative_at_a_zero_base_is_its_limit():
    gx, gy = derivo.grad(power_of_zero, wrt=(0, 1))(np.array([0.0, 1.0, 2.0]), 2.0)
    np.testing.assert_allclose(gy, 4 * np.log(2.0), rtol=1e-14)
    assert derivo.grad(lambda_free_power, wrt=(0, 1))(0.0, 2.5) == (0.0, 0.0)


def lambda_free_power(x, y):
    return x ** y


def spaced(x):
    return np.sum(np.linspace(0.0, x, 5) ** 2)


def remainder(x):
    q, r = divmod(x, 0.7)
    return r


def writes_twice_at_one_place(x):
    y = x.copy()
    y[[0, 0]] *= 2.0
    return np.sum(y)


def r_of_a_wide_matrix(x):
    return np.sum(np.linalg.qr(np.reshape(x, (2, 3)))[1])


def test_what_derivo_cannot_differentiate_there_is_refused():
    with pytest.raises(derivo.NoDerivativeRule, match="linspace"):
        derivo.grad(spaced)(1.3)
    with pytest.raises(derivo.NoDerivativeRule, match="divmod"):
        derivo.grad(remainder)(1.37)
    with pytest.raises(derivo.DerivoError, match="repeats a position"):
        derivo.grad(writes_twice_at_one_place)(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(derivo.DerivoError, match="at least as many rows"):
        derivo.jvp(r_of_a_wide_matrix, (np.arange(6.0) + 1.0,), (np.ones(6),))


def writes_two_columns(x):
    Y = np.zeros((2, 5))
    Y[:, [0, 2]] = x
    return np.sum(Y * Y)


def accumulate(total, v):
    total += v
    return total


def accumulated(x):
    y = 0.5
    y = accumulate(y, np.sin(x))
    return y * y


def as_array(xs):
    xs = np.asarray(xs)
    return np.sum(xs * xs)


def test_what_review_found_refused_needlessly_in_array_code():
    # a column index was checked against the first axis; a helper's += on the value the
    # caller rebinds; a list argument rebound to an array
    np.testing.assert_allclose(derivo.grad(writes_two_columns)(np.ones((2, 2))), 2 * np.ones((2, 2)))
    assert derivo.grad(accumulated)(0.7) == pytest.approx(2 * (0.5 + np.sin(0.7)) * np.cos(0.7))
    np.testing.assert_allclose(derivo.grad(as_array)([0.3, 0.5]), [0.6, 1.0])
    df = derivo.grad(as_array)
    assert isinstance(df, derivo.Derivative) and not isinstance(df.save, derivo.Derivative)


# --- lists of arrays given to code that does not use NumPy ---------------------------------

def running_cost(vs):
    position = 0.0
    cost = 0.0
    for i in range(len(vs)):
        cost = cost + position * position
        position = position + vs[i]
    return cost.sum()


def running_cost_over_values(vs):
    position = 0.0
    cost = 0.0
    for v in vs:
        cost = cost + position * position
        position = position + v
    return cost.sum()


def damped_sum(vs, c):
    s = 0.0
    for i in range(len(vs)):
        s = s + vs[i] + s * c
    return s @ s


def list_of_arrays_gradient(f, vs, *rest):
    """Central differences of f with respect to each array of the list vs."""
    def with_item(k):
        return lambda v: f(vs[:k] + [v] + vs[k + 1:], *rest)
    return [numeric_gradient(with_item(k), (v,), 0) for k, v in enumerate(vs)]


@pytest.mark.parametrize("f", [running_cost, running_cost_over_values, damped_sum])
def test_a_list_of_arrays_given_to_scalar_code_gets_the_array_code(f):
    # Scalar code added the arrays in place where it adds numbers (bvs[i] = bpos, then
    # bpos += ...), changing adjoints it had stored already; the last item's adjoint
    # was 0.0 among arrays.
    vs = [np.array([1.0, 2.0]), np.array([0.5, -1.0]), np.array([2.0, 0.3])]
    rest = (0.5,) if f is damped_sum else ()
    grads = derivo.grad(f, wrt=tuple(range(1 + len(rest))))(vs, *rest)
    for got, expected in zip(grads[0], list_of_arrays_gradient(f, vs, *rest)):
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)
    if rest:
        assert grads[1] == pytest.approx(numeric_gradient(f, (vs, 0.5), 1), rel=1e-6)


def weighted(c, vs):
    s = 0.0
    for i in range(len(vs)):
        s = s + vs[i] * c
    return s @ s


def test_a_list_of_arrays_not_differentiated_also_gets_the_array_code():
    # it passed the entry's check, which looked for arrays only: scalar code then
    # returned an array for the float c
    vs = [np.array([1.0, 2.0]), np.array([0.5, -1.0])]
    got = derivo.grad(weighted)(0.7, vs)
    assert got == pytest.approx((weighted(0.7 + H, vs) - weighted(0.7 - H, vs)) / (2 * H),
                                rel=1e-6)


def nested_weighted(c, vs):
    s = 0.0
    for i in range(len(vs)):
        for j in range(len(vs[i])):
            s = s + vs[i][j] * c
    return s @ s


def test_lists_of_lists_of_arrays_get_the_array_code_too():
    vs = [[np.array([1.0, 2.0]), np.array([0.5, -1.0])], [np.array([2.0, 0.3])]]
    got = derivo.grad(nested_weighted)(0.7, vs)
    expected = (nested_weighted(0.7 + H, vs) - nested_weighted(0.7 - H, vs)) / (2 * H)
    assert got == pytest.approx(expected, rel=1e-6)


def _returns_before_it_reads_M(x, M, c):
    s = 0.0
    Z = M * 0.5
    for i in range(3):
        s = s + x[i] * c
        if s > 0.2:
            return s
    return s + np.sum(Z)


@pytest.mark.parametrize("x", [[0.5, 0.9, 0.3], [0.1, 0.05, 0.02]])
def test_a_gradient_has_its_arguments_shape_when_a_return_skips_it(x):
    x, M = np.array(x), np.ones((2, 3))
    gx, gM, gc = derivo.grad(_returns_before_it_reads_M, wrt=(0, 1, 2))(x, M, 0.6)
    assert isinstance(gM, np.ndarray) and gM.shape == M.shape
    eps = 1e-6
    for i in np.ndindex(M.shape):
        up, down = M.copy(), M.copy()
        up[i] += eps
        down[i] -= eps
        fd = (_returns_before_it_reads_M(x, up, 0.6) - _returns_before_it_reads_M(x, down, 0.6)) / (2 * eps)
        assert gM[i] == pytest.approx(fd, abs=1e-6)
    _, vjp_fn = derivo.vjp(_returns_before_it_reads_M, x, M, 0.6)
    assert vjp_fn(1.0)[1].shape == M.shape


def _appends_in_a_checkpointed_branch(x, c):
    s = 0.0
    y = x * 1.0
    if np.sum(y) > c:
        rows = []
        for i in range(3):
            rows.append(y * c ** i)
            y = np.tanh(y + x)
        s = s + np.sum(np.vstack(rows) ** 2)
    return s + np.sum(y * y)


@pytest.mark.parametrize("loops", ["stack", "checkpoint"])
def test_a_list_a_loop_appends_to_keeps_its_gradient_the_loop_length(loops):
    x, c = np.array([0.45, -0.81, 0.95, 0.21]), 0.2
    gx, gc = derivo.grad(_appends_in_a_checkpointed_branch, wrt=(0, 1), loops=loops)(x, c)
    eps = 1e-6
    fd = [(_appends_in_a_checkpointed_branch(x + eps * e, c) -
           _appends_in_a_checkpointed_branch(x - eps * e, c)) / (2 * eps) for e in np.eye(4)]
    np.testing.assert_allclose(gx, fd, rtol=1e-6, atol=1e-8)
    assert gc == pytest.approx((_appends_in_a_checkpointed_branch(x, c + eps) -
                                _appends_in_a_checkpointed_branch(x, c - eps)) / (2 * eps))


def _stacks_into_what_a_return_may_skip(x, c):
    Z = np.zeros((2, 3))
    Z[:] = np.stack([x * c, np.tanh(x)])  # Z's adjoint is a 0.0 where the return is taken
    s = 0.0
    for i in range(3):
        s = s + np.tanh(x[i] * c)
        if s > 0.5:
            return s
    return s + np.sum(Z * Z)


@pytest.mark.parametrize("x", [[0.5, 0.9, 0.3], [0.1, 0.05, 0.02]])
def test_a_zero_adjoint_through_a_write_reaches_a_stack_shaped(x):
    x, c = np.array(x), 0.7
    f = _stacks_into_what_a_return_may_skip
    got = derivo.grad(f, wrt=1)(x, c)
    assert got == pytest.approx((f(x, c + H) - f(x, c - H)) / (2 * H), rel=1e-6)


_WEIGHTS = np.array([1.0, 2.0])


def _weighted_sum(x):
    return np.sum(_WEIGHTS * x)  # a number x broadcast against an array


class _Weighted:
    def __call__(self, x):
        return np.sum(_WEIGHTS * x)


_BY_NAME = {"weighted": _weighted_sum}
_LISTED = [_weighted_sum]
_OBJECTS = [_Weighted()]


def _by_key(x, name):
    return _BY_NAME[name](x)


def _by_item(x):
    return _LISTED[0](x)


def _by_loop(x):
    total = 0.0
    for f in _LISTED:
        total = total + f(x)
    return total


def _by_object(x):
    total = 0.0
    for weighted in _OBJECTS:
        total = total + weighted(x)
    return total


@pytest.mark.parametrize("f, args", [(_by_key, ("weighted",)), (_by_item, ()), (_by_loop, ()),
                                     (_by_object, ())])
def test_numpy_code_reached_through_a_container_gets_array_code(f, args):
    # f itself names no NumPy: the function it calls through a dict, a list or an
    # object does, and broadcasts the number x, whose gradient is then a sum
    got = derivo.grad(f)(0.7, *args)
    assert np.ndim(got) == 0 and got == pytest.approx(3.0)
