"""Reverse mode against central finite differences, for the classes of issue 20
it owns: an item write's index read again after the write, zero adjoints
reaching array rules, builtin ``sum`` of an array, ``reversed``/``zip`` loops
that save values, writes into module globals, and empty or flattened arrays."""

import inspect

import numpy as np
import pytest

import derivo

MODES = [{}, {"loops": "checkpoint"}, {"loops": "reversible"}]
A = np.array([0.2, -0.9, 0.85])


def numeric_gradient(f, x, h=1e-6):
    x = np.array(x, dtype=float)
    out = np.zeros_like(x)
    for position in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[position] += h
        down[position] -= h
        out[position] = (f(up) - f(down)) / (2 * h)
    return out


def check(f, x=A, **options):
    gradient = derivo.grad(f, **options)(x.copy())
    assert isinstance(gradient, np.ndarray) and gradient.shape == np.shape(x)
    np.testing.assert_allclose(gradient, numeric_gradient(f, x), rtol=1e-6, atol=1e-7)


# --- an item write's index is computed before the write ----------------------

def clip_by_mask(a):
    v = a * 1.0
    v[v > 0.5] = 0.5
    return np.sum(v)


def zero_the_largest(a):
    y = a * 2.0
    y[np.argmax(y)] = 0.0
    return np.sum(y * y)


def mask_emptied_by_the_write(a):
    v = a * 1.0
    v[v > 0.1] = a[v > 0.1] * 0.0 + 0.1
    return np.sum(v * v)


def scale_by_mask(a):
    v = a * 1.0
    v[v > 0.3] *= v[v > 0.3]
    return np.sum(v)


def halve_by_mask_in_a_loop(a):
    v = a * 1.0
    s = 0.0
    for i in range(3):
        v[v > 0.3] *= 0.5
        s += np.sum(v * v)
    return s


def raise_the_largest_in_a_loop(a):
    v = a * 1.0
    for i in range(3):
        v[np.argmax(v)] += 0.5
    return np.sum(v * v)


def column_by_mask(a):
    m = np.outer(a, a)
    m[:, m[0] > 0.0] = 1.0
    return np.sum(m * m)


@pytest.mark.parametrize("options", MODES)
@pytest.mark.parametrize("f", [clip_by_mask, zero_the_largest, mask_emptied_by_the_write,
                               scale_by_mask, column_by_mask])
def test_an_index_computed_from_the_array_written_is_the_one_before_the_write(f, options):
    check(f, **options)


@pytest.mark.parametrize("options", MODES[:2])
@pytest.mark.parametrize("f", [halve_by_mask_in_a_loop, raise_the_largest_in_a_loop])
def test_an_index_computed_in_a_loop_is_saved_with_the_trip(f, options):
    check(f, **options)


def test_an_index_reading_the_array_is_bound_before_the_write():
    source = derivo.grad(clip_by_mask).source
    assert "index1 = v > 0.5" in source and "v[index1] = 0.5" in source


# --- a zero adjoint reaching a rule that rearranges its adjoint -----------------

REARRANGING = {
    "outer": "np.outer(a, a)",
    "matmul": "np.outer(a, a) @ a",
    "stack": "np.stack([a, a * 2.0])",
    "vstack": "np.vstack([a, a * 2.0])",
    "hstack": "np.hstack([a, a * 2.0])",
    "concatenate": "np.concatenate([a, a * 2.0])",
    "einsum": "np.einsum('i,j->ij', a, a)",
    "solve": "np.linalg.solve(np.outer(a, a) + np.eye(3) * 2.0, a)",
    "transpose": "np.transpose(np.outer(a, a * 2.0), (1, 0))",
    "copy": "(a * 2.0).copy()",
}

AFTER_A_BRANCH = """
def f(a):
    z = {rule}
    if a[0] > 10.0:
        return np.sum(z * z)
    return np.sum(a * a)
"""

AFTER_A_RETURN_IN_A_LOOP = """
def f(a):
    s = 0.0
    for i in range(3):
        z = {rule}
        if i == 1:
            return s + np.sum(a)
        s = s + np.sum(z * z * (i + 1.0))
    return s
"""


def defined(template, rule, tmp_path):
    """The function ``template`` defines with ``rule`` pasted in, from a file of
    its own (derivo reads its source)."""
    path = tmp_path / "program.py"
    path.write_text("import numpy as np\n" + template.format(rule=REARRANGING[rule]))
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace["f"]


@pytest.mark.parametrize("options", MODES)
@pytest.mark.parametrize("rule", sorted(REARRANGING))
def test_a_zero_adjoint_after_a_branch_not_taken_reaches_any_rule(rule, options, tmp_path):
    check(defined(AFTER_A_BRANCH, rule, tmp_path), **options)


@pytest.mark.parametrize("rule", sorted(REARRANGING))
def test_a_zero_adjoint_after_an_early_return_reaches_any_rule(rule, tmp_path):
    check(defined(AFTER_A_RETURN_IN_A_LOOP, rule, tmp_path))


def product_in_a_helper(m, a):
    if a[0] > 10.0:
        return a
    return m @ a


def calls_a_helper_with_a_branch(a):
    m = np.outer(a, a)
    z = product_in_a_helper(m, a)
    if a[1] > 10.0:
        return np.sum(z)
    return np.sum(a * a)


def product_read_by_the_next_trip(a):
    z = a * 1.0
    w = a * 1.0
    for i in range(4):
        z = z + 0.1 * w
        w = np.outer(z, z) @ a
    return np.sum(z)


def product_left_for_the_trip_before(a):
    s = 0.0
    w = a * 0.0
    for i in range(3):
        s = s + np.sum(a * a * i)
        w = np.outer(a, a) @ (a * i)
    return s + np.sum(w)


@pytest.mark.parametrize("options", MODES)
def test_a_zero_adjoint_given_to_a_helpers_vjp_reaches_any_rule(options):
    check(calls_a_helper_with_a_branch, **options)


@pytest.mark.parametrize("options", MODES[:2])
@pytest.mark.parametrize("f", [product_read_by_the_next_trip, product_left_for_the_trip_before])
def test_a_zero_adjoint_left_by_a_trip_reaches_any_rule(f, options):
    check(f, **options)


# --- writes into memory the function does not own ---------------------------

GLOBAL_LIST = [1.0, 2.0]
GLOBAL_ARRAY = np.array([1.0, 2.0, 3.0])


def scales_a_global_list(a):
    GLOBAL_LIST[0] *= a[0]
    return GLOBAL_LIST[0] + np.sum(a)


def writes_a_global_array(a):
    GLOBAL_ARRAY[1:] = a[:2] * 2.0
    return np.sum(GLOBAL_ARRAY * a)


def appends_to_a_global_list(a):
    GLOBAL_LIST.append(a[0] * 2.0)
    return np.sum(a)


def writes_an_enclosing_variable():
    kept = np.zeros(3)

    def f(a):
        kept[0] = a[0]
        return np.sum(kept * a)
    return f


@pytest.mark.parametrize("options", MODES)
@pytest.mark.parametrize("f, line, name", [
    (scales_a_global_list, "GLOBAL_LIST[0] *= a[0]", "GLOBAL_LIST"),
    (writes_a_global_array, "GLOBAL_ARRAY[1:] = a[:2] * 2.0", "GLOBAL_ARRAY"),
    (appends_to_a_global_list, "GLOBAL_LIST.append(a[0] * 2.0)", "GLOBAL_LIST"),
    (writes_an_enclosing_variable(), "kept[0] = a[0]", "kept"),
])
def test_a_write_into_a_global_is_refused_at_its_line(f, line, name, options):
    lines, first = inspect.getsourcelines(f)
    lineno = first + next(i for i, text in enumerate(lines) if line in text)
    with pytest.raises(derivo.DerivoError) as error:
        derivo.grad(f, **options)(A.copy())
    message = str(error.value)
    assert "{}:{}:".format(__file__, lineno) in message
    assert repr(name) in message and "local copy" in message


def test_a_local_copy_of_a_global_is_differentiated():
    def scales_a_copy(a):
        values = list(GLOBAL_LIST)
        values[0] *= a[0]
        return values[0] * a[1] + np.sum(a)
    check(scales_a_copy)


# --- builtin sum of an array sums its rows -------------------------------------

X = np.array([[0.3, -0.7, 1.1], [0.5, 0.2, -0.4]])


def sum_of_rows(X):
    return np.sum(sum(X) ** 2)


def sum_of_rows_and_another_use(X):
    return np.sum(sum(X) * sum(X * 2.0))


def sum_of_rows_and_an_item(X):
    y = np.tanh(X)
    return np.sum(sum(y) * y[1]) + np.sum(y.T @ np.ones(2))


def sum_of_rows_before_a_write(X):
    y = X * 1.0
    s = sum(y)
    y[0] = y[0] * 3.0
    return np.sum(s * s) + np.sum(y)


def sum_of_one_row(X):
    return np.sum(sum(X[:1]) * X[0])


@pytest.mark.parametrize("f", [sum_of_rows, sum_of_rows_and_another_use, sum_of_rows_and_an_item,
                               sum_of_rows_before_a_write, sum_of_one_row])
def test_builtin_sum_of_an_array_has_a_gradient_of_its_shape(f):
    check(f, X)


def test_builtin_sum_of_a_list_keeps_a_list_gradient():
    def total(xs):
        return sum(xs) * xs[0]
    assert derivo.grad(total)([1.0, 2.0, 3.0]) == [7.0, 1.0, 1.0]


# --- flattened and empty arrays ----------------------------------------------

def concatenated_flat(a):
    m = np.outer(a, a[:2])
    return np.sum(np.concatenate([m, a], axis=None) ** 3)


def mean_of_an_empty_part(a):
    return np.mean(a[:0]) + np.sum(a * a)


def mean_of_empty_rows(a):
    m = np.outer(a, a)[:0]
    return np.sum(np.mean(m, axis=0) * 0.0) + np.sum(np.mean(m, axis=1)) + np.sum(a)


@pytest.mark.parametrize("options", MODES)
def test_concatenate_with_axis_none_flattens(options):
    check(concatenated_flat, **options)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("options", MODES)
def test_the_mean_of_an_empty_array_is_nan_and_its_adjoint_empty(options):
    value, gradient = derivo.value_and_grad(mean_of_an_empty_part, **options)(A.copy())
    assert np.isnan(value)
    np.testing.assert_allclose(gradient, 2 * A)  # a[:0] reaches no entry of a
    value, gradient = derivo.value_and_grad(mean_of_empty_rows, **options)(A.copy())
    assert np.isnan(value)
    np.testing.assert_allclose(gradient, np.ones(3))


# --- loops over reversed(...) and zip(...) whose body saves values ----------------

def numeric_gradients(f, args, h=1e-6):
    out = []
    for which, arg in enumerate(args):
        values = np.array(arg, dtype=float)
        gradient = np.zeros_like(values)
        for i in range(len(values)):
            up, down = list(args), list(args)
            for shifted, step in ((up, h), (down, -h)):
                moved = values.copy()
                moved[i] += step
                shifted[which] = moved if isinstance(arg, np.ndarray) else list(moved)
            gradient[i] = (f(*up) - f(*down)) / (2 * h)
        out.append(gradient)
    return out


def over_reversed(X, Y):
    acc = 0.3
    for x in reversed(X):
        acc = np.sin(acc) * x
    return acc + Y[0]


def over_zip(X, Y):
    acc = 0.3
    for x, y in zip(X, Y):
        t = np.tanh(x * acc)
        acc = acc * acc * y + t
    return acc


def over_zip_of_a_reversed(X, Y):
    acc = 0.3
    for x, y in zip(X, reversed(Y)):
        x = x * acc
        acc = acc + np.sin(x) * y
    return acc


def over_enumerate_of_a_reversed(X, Y):
    acc = 0.3
    for i, x in enumerate(reversed(X)):
        acc = np.sin(acc) * x + i * Y[i]
    return acc


def over_a_reversed_item_unused(X, Y):
    acc = 0.3
    for x, y in zip(X, reversed(Y)):
        acc = np.exp(-acc * acc) * x
    return acc


@pytest.mark.parametrize("container", [np.array, list])
@pytest.mark.parametrize("f", [over_reversed, over_zip, over_zip_of_a_reversed,
                               over_enumerate_of_a_reversed, over_a_reversed_item_unused])
def test_a_loop_over_an_iterator_of_differentiated_values_that_saves(f, container):
    args = (container([0.2, -0.9, 0.85]), container([0.4, 0.1, -0.3]))
    gradients = derivo.grad(f, wrt=(0, 1))(*args)
    for gradient, expected in zip(gradients, numeric_gradients(f, args)):
        np.testing.assert_allclose(np.asarray(gradient, dtype=float), expected,
                                   rtol=1e-6, atol=1e-8)


def changes_its_sequence(X, Y):
    acc = 0.3
    for x, y in zip(X, reversed(Y)):
        acc = np.sin(acc) * x * y
        Y[0] = acc
    return acc


def test_a_loop_over_a_reversed_sequence_it_changes_is_refused():
    lines, first = inspect.getsourcelines(changes_its_sequence)
    with pytest.raises(derivo.DerivoError) as error:
        derivo.grad(changes_its_sequence)(A.copy(), A.copy())
    assert "{}:{}:".format(__file__, first + 2) in str(error.value)
    assert "changes 'reversed(Y)'" in str(error.value)


# --- second derivatives through the helpers these fixes call ---------------------

def cubed_after_a_branch_not_taken(a):
    z = np.outer(a, a) @ a
    if a[0] > 10.0:
        return np.sum(z * z)
    return np.sum(a * a * a)


def cubed_sum_of_rows(X):
    return np.sum(sum(X) ** 3)


def test_hessians_through_zero_as_and_sum_vjp():
    np.testing.assert_allclose(derivo.hessian(cubed_after_a_branch_not_taken)(A.copy()),
                               np.diag(6 * A))
    (product,) = derivo.hvp(cubed_sum_of_rows, (X,), (np.ones_like(X),))
    np.testing.assert_allclose(product, np.broadcast_to(12 * sum(X), X.shape))


# --- random draws in code the derivative runs again ---------------------------------

RNG = np.random.RandomState(0)


def noisy_steps(x):
    s = x
    for _ in range(5):
        s = s + 0.1 * np.sin(s) * RNG.randn(3)
    return np.sum(s)


def noisy_sample(x, rng):
    total = 0.0
    for _ in range(2):
        total = total + np.sum(rng.normal(size=3) * x)
    return total


def through_a_sampling_helper(x):
    return noisy_sample(x, np.random.default_rng(1)) ** 2


def reseeded(f):
    def run(x):
        RNG.seed(0)
        return f(x)
    return run


def test_random_draws_in_a_loop_the_stack_reverses_are_differentiated():
    gradient = reseeded(derivo.grad(noisy_steps))(A.copy())
    np.testing.assert_allclose(gradient, numeric_gradient(reseeded(noisy_steps), A), rtol=1e-6)


def test_a_checkpointed_loop_that_draws_random_numbers_is_refused():
    with pytest.raises(derivo.DerivoError, match=r"'RNG.randn\(3\)' here: the derivative runs "
                       "the trips of a checkpointed loop again"):
        derivo.grad(noisy_steps, loops="checkpoint")(A.copy())


def test_random_draws_in_a_helper_with_a_loop_are_differentiated():
    # its forward half draws once; its backward half reads the draws it kept
    gradient = derivo.grad(through_a_sampling_helper)(A.copy())
    np.testing.assert_allclose(gradient, numeric_gradient(through_a_sampling_helper, A),
                               rtol=1e-6)
