"""derivo.writes and derivo.saving: a write into an array whose memory another
name holds (a view, a row, a column, a transpose, a reshape, an item, a list of
rows) while an adjoint of an earlier line reads that name's value gives the
right derivative (the reverse sweep gives the written part back in place), and
a write derivo can follow keeps giving the right derivative."""

import numpy as np
import pytest

import derivo
from derivo import DerivoError

X = np.array([0.3, 1.2, -0.7, 2.1])


def central_differences(f, x, h=1e-6):
    gradient = np.zeros_like(x)
    for i in range(x.size):
        step = np.zeros_like(x)
        step[i] = h
        gradient[i] = (f(x + step) - f(x - step)) / (2 * h)
    return gradient


def written_under_a_view_read_later(x):
    A = np.ones(4)
    r = A[0:4]
    s = np.sum(x * r)
    A[0] = 5.0
    return s + r[1]


def written_under_a_view_never_read_again(x):
    A = np.ones(4)
    r = A[0:4]
    s = np.sum(x * r)
    A[0] = 5.0
    return s + A[1]


def written_after_its_own_read(x):
    A = np.ones(4)
    s = np.sum(x * A)
    A[0] = 5.0
    return s + A[1]


def written_under_a_view_read_before_any_adjoint(x):
    A = np.ones(4)
    r = A[0:4]
    total = np.sum(r) * 2.0
    A[0] = 5.0
    return np.sum(x * A) + total


def rows_read_then_another_row_written(x):
    y = np.zeros((3, 4))
    y[0] = x
    for i in range(1, 3):
        y[i] = y[i - 1] * x
    return np.sum(y)


@pytest.mark.parametrize("f", [written_after_its_own_read,
                               written_under_a_view_read_before_any_adjoint,
                               rows_read_then_another_row_written])
def test_writes_derivo_follows_are_differentiated(f):
    np.testing.assert_allclose(derivo.grad(f)(X.copy()), central_differences(f, X),
                               rtol=1e-6, atol=1e-8)


def written_under_a_row_the_derivative_reads(x):
    A = np.ones((2, 4))
    s = np.sum(x * A[0])
    A[0, 1] = 5.0
    return s + np.sum(A)


def written_under_a_column_the_derivative_reads(x):
    A = np.ones((4, 3))
    s = np.sum(x * A[:, 1])
    A[2, 1] = 5.0
    return s + np.sum(A)


def written_under_a_transpose_the_derivative_reads(x):
    A = np.ones((4, 2))
    B = A.T
    s = np.sum(x * B[1])
    A[3, 1] = -2.0
    return s + np.sum(A)


def written_under_a_reshape_the_derivative_reads(x):
    A = np.ones(8)
    B = A.reshape((2, 4))
    s = np.sum(x * B[1])
    A[5] = 3.0
    return s


def written_under_an_item_the_derivative_reads(x):
    A = np.ones(4) * 2.0
    a = A[1]
    s = np.sum(x * a)
    A[1] = 7.0
    return s


def written_through_a_view_of_what_the_derivative_reads(x):
    A = np.ones(4)
    r = A[1:3]
    s = np.sum(x * A)
    r[0] = 5.0
    return s + np.sum(A)


def written_under_a_view_rebound_before_the_write(x):
    A = np.ones((2, 4))
    t = A[0]
    s = np.sum(x * t)
    t = np.zeros(4)
    A[0, 2] = 4.0
    return s + np.sum(t) + np.sum(A)


def written_under_a_view_held_in_a_list(x):
    A = np.ones((2, 4))
    L = [A[0], A[1]]
    s = np.sum(x * L[0])
    A[0, 0] = 4.0
    return s + np.sum(L[1])


def written_in_a_loop_after_the_row_is_read(x):
    A = np.ones((2, 4))
    s = 0.0
    for i in range(3):
        s = s + np.sum(x * A[0])
        A[0, i] = A[0, i] + 1.0
    return s


def written_in_a_loop_before_the_row_is_read(x):
    A = np.ones((2, 4))
    s = 0.0
    for i in range(3):
        A[0, i] = A[0, i] + 1.0
        s = s + np.sum(x * A[0] * x)
    return s


def written_in_a_loop_under_a_row_read_before_it(x):
    A = np.ones((2, 4))
    s = np.sum(x * A[1])
    for i in range(4):
        A[1, i] = x[i] * 2.0
    return s + np.sum(A * A)


def written_after_a_loop_that_reads_a_view(x):
    A = np.ones((2, 4))
    r = A[0]
    s = 0.0
    for i in range(3):
        s = s + np.sum(x * r)
    A[0, 2] = 9.0
    return s


def written_in_a_loop_at_an_index_each_trip_computes(x):
    A = np.outer(np.arange(1.0, 4.0), np.ones(4))
    s = 0.0
    for row in A:
        s = s + np.sum(row * x * x)
        A[np.unravel_index(np.argmax(A), A.shape)] = 0.5
    return s + np.sum(A)


def written_in_a_loop_at_a_counter(x):
    A = np.ones((2, 4))
    s = 0.0
    k = 0
    for i in range(3):
        s = s + np.sum(x * A[0] * x)
        k = 3 - i
        A[0, k] = A[0, k] * 3.0
    return s


def written_in_a_branch_through_another_name(x):
    A = np.ones(4) * 2.0
    read = A
    s = np.sum(x * read)
    if s > -10.0:
        A[0] = 5.0
    return s + np.sum(A)


def written_in_a_loop_through_another_name(x):
    A = np.ones(4) * 2.0
    read = A
    s = np.sum(x * read)
    for i in range(3):
        A[i] = 5.0
    return s + np.sum(A)


WRITTEN_UNDER_WHAT_THE_DERIVATIVE_READS = [
    written_under_a_view_read_later, written_under_a_view_never_read_again,
    written_under_a_row_the_derivative_reads, written_under_a_column_the_derivative_reads,
    written_under_a_transpose_the_derivative_reads,
    written_under_a_reshape_the_derivative_reads, written_under_an_item_the_derivative_reads,
    written_under_a_view_rebound_before_the_write, written_under_a_view_held_in_a_list,
    written_in_a_loop_after_the_row_is_read, written_in_a_loop_before_the_row_is_read,
    written_in_a_loop_under_a_row_read_before_it, written_after_a_loop_that_reads_a_view,
    written_in_a_loop_at_an_index_each_trip_computes, written_in_a_loop_at_a_counter,
    written_in_a_branch_through_another_name, written_in_a_loop_through_another_name]


@pytest.mark.parametrize("loops", ["stack", "checkpoint"])
@pytest.mark.parametrize("f", WRITTEN_UNDER_WHAT_THE_DERIVATIVE_READS)
def test_a_write_under_memory_the_derivative_reads_saves_the_part_written(f, loops):
    # the reverse sweep gives the written part back in place, so every view of
    # that memory holds the value its adjoint reads; a checkpointed loop cannot
    # iterate over what its trips change (they run again from a checkpoint)
    try:
        gradient = derivo.grad(f, loops=loops)(X.copy())
    except DerivoError as error:
        assert loops == "checkpoint" and "which its body changes" in str(error)
        return
    np.testing.assert_allclose(gradient, central_differences(f, X), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", WRITTEN_UNDER_WHAT_THE_DERIVATIVE_READS)
def test_a_write_under_memory_the_derivative_reads_is_right_or_refused_when_reversible(f):
    try:
        gradient = derivo.grad(f, loops="reversible")(X.copy())
    except DerivoError as error:
        assert "loops='reversible' cannot undo" in str(error)
        return
    np.testing.assert_allclose(gradient, central_differences(f, X), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", WRITTEN_UNDER_WHAT_THE_DERIVATIVE_READS)
def test_a_write_under_memory_the_tangent_reads_is_right(f):
    tangents = [derivo.jvp(f, (X.copy(),), (np.eye(X.size)[i],))[1] for i in range(X.size)]
    np.testing.assert_allclose(tangents, central_differences(f, X), rtol=1e-6, atol=1e-8)


def test_a_write_saves_only_where_an_adjoint_reads_the_memory_it_changes():
    source = derivo.grad(written_under_a_row_the_derivative_reads).source
    assert "push(copy_of(A[0, 1]))" in source and "A[0, 1] = pop()" in source
    assert "push" not in derivo.grad(written_under_a_view_read_before_any_adjoint).source


def filled_after_an_adjoint_reads_it(x):
    A = np.ones(4)
    s = np.sum(x * A)
    A.fill(3.0)
    return s


def test_a_change_an_earlier_adjoint_would_read_is_refused_though_never_read_again():
    with pytest.raises(DerivoError, match=r"'A.fill\(3.0\)': it may change 'A' in place"):
        derivo.grad(filled_after_an_adjoint_reads_it)(X)


def boundaries_set(y):
    y[0] = y[1]
    y[-1] = y[-2]
    return y


def given_a_helper_after_an_adjoint_reads_it(x, w):
    a = x * 2.0
    u = a * w
    b = boundaries_set(a)
    return np.sum(u * b)


def rebound_to_what_a_helper_returns(x, w):
    a = x * w
    a = boundaries_set(a)
    return np.sum(a * a)


def given_a_helper_in_a_loop(x, w):
    a = x * 1.0
    for i in range(3):
        u = a * w
        a = boundaries_set(u)
    return np.sum(a * a)


def smoothed_in_place(y):
    for k in range(2):
        y -= 0.1 * np.roll(y, 1)
    return y


def given_a_looping_helper(x, w):
    a = x * w
    u = a * a
    b = smoothed_in_place(a)
    return np.sum(u * b)


W = np.array([1.5, 0.5, -0.8, 1.1])
GIVEN_TO_A_HELPER_THAT_WRITES_IT = [given_a_helper_after_an_adjoint_reads_it,
                                    rebound_to_what_a_helper_returns, given_a_helper_in_a_loop,
                                    given_a_looping_helper]


@pytest.mark.parametrize("f", GIVEN_TO_A_HELPER_THAT_WRITES_IT)
def test_an_array_a_helper_writes_gets_the_derivative_of_the_writes(f):
    # the helper's derivative writes into copies, so what an adjoint reads is kept
    expected = central_differences(lambda x: f(x, W), X)
    np.testing.assert_allclose(derivo.grad(f)(X.copy(), W), expected, rtol=1e-6, atol=1e-8)
    tangent = derivo.jvp(f, (X.copy(), W), (np.ones(4), np.zeros(4)))[1]
    np.testing.assert_allclose(tangent, np.sum(expected), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", GIVEN_TO_A_HELPER_THAT_WRITES_IT[:2])
def test_an_array_a_helper_writes_is_differentiated_when_checkpointed(f):
    np.testing.assert_allclose(derivo.grad(f, loops="checkpoint")(X.copy(), W),
                               central_differences(lambda x: f(x, W), X), rtol=1e-6, atol=1e-8)


def read_again_after_a_helper_writes_it(x):
    a = x * 2.0
    b = boundaries_set(a)
    return np.sum(a * b)


def first_two_filled(y):
    y[:2].fill(0.5)
    return y * 1.0


def given_a_helper_that_fills_a_view(x, w):
    a = x * 2.0
    u = a * w
    b = first_two_filled(a)
    return np.sum(u + b)


@pytest.mark.parametrize("f, call", [(read_again_after_a_helper_writes_it, "boundaries_set"),
                                     (given_a_helper_that_fills_a_view, "first_two_filled")])
def test_a_helper_writing_what_is_read_after_or_through_a_method_is_refused(f, call):
    arguments = (X.copy(), W)[:f.__code__.co_argcount]
    with pytest.raises(DerivoError, match=rf"test_writes.py:\d+:\d+: .*'{call}\(a\)': "
                                          r"it may change 'a' in place"):
        derivo.grad(f)(*arguments)


def test_a_hessian_through_a_helper_that_writes_its_argument_is_refused_at_the_call():
    # the second derivative recomputes the helper from the array it changed
    with pytest.raises(DerivoError, match=r"test_writes.py:\d+:\d+: .*'boundaries_set\(a\)'"):
        derivo.hessian(rebound_to_what_a_helper_returns)(X.copy(), W)


def put_inside_a_loop(x):
    s = 0.0
    y = x * 1.0
    for i in range(3):
        s = s + np.tanh(y[i] * 0.7)
        np.put(y, [0], 0.7)
    return s


def put_then_written_by_item(x):
    s = 0.0
    y = x * 1.0
    for i in range(3):
        s = s + np.tanh(y[i] * 0.7)
        y[0] = 0.7
    return s


@pytest.mark.parametrize("loops", ["stack", "checkpoint", "reversible"])
def test_a_change_in_place_inside_a_loop_is_refused_by_every_strategy(loops):
    with pytest.raises(DerivoError, match=r"'np.put\(y, \[0\], 0.7\)': it may change 'y'"):
        derivo.grad(put_inside_a_loop, loops=loops)(X.copy())


@pytest.mark.parametrize("loops", ["stack", "checkpoint"])
def test_the_same_change_written_as_an_item_write_is_differentiated(loops):
    np.testing.assert_allclose(derivo.grad(put_then_written_by_item, loops=loops)(X.copy()),
                               central_differences(put_then_written_by_item, X), rtol=1e-6)


def updated_under_a_row_a_list_holds(x):
    A = np.outer(x, x)
    rows = [A[1]]
    A += 1.0
    return np.sum(rows[0] ** 2)


def written_under_a_row_a_dict_holds(x):
    A = np.outer(x, x)
    rows = {"r": A[1]}
    A[1, 0] = x[2]
    return np.sum(rows["r"] ** 2)


def updated_after_a_list_holds_a_copy(x):
    A = np.outer(x, x)
    rows = [A[1] * 1.0]
    A += 1.0
    return np.sum(rows[0] ** 2) + np.sum(A)


@pytest.mark.parametrize("f", [updated_under_a_row_a_list_holds,
                               written_under_a_row_a_dict_holds])
def test_a_change_under_a_view_a_container_holds_is_refused(f):
    with pytest.raises(DerivoError, match="sharing memory with 'rows'|'rows' sharing memory"):
        derivo.grad(f)(X.copy())


def test_a_change_after_a_container_holds_a_copy_is_differentiated():
    f = updated_after_a_list_holds_a_copy
    np.testing.assert_allclose(derivo.grad(f)(X.copy()), central_differences(f, X), rtol=1e-6)


def written_through_a_constant_view(m, c):
    z = m * 0.5
    view = z.T
    view[0, 0] = 10.0      # changes z, which nothing differentiated reaches
    return np.sum(z * c)


def written_through_a_constant_row(m, c):
    z = m * 0.5
    row = z[1]
    row[row > 0.0] = 10.0
    return np.sum(z * c)


M = np.array([[0.31, -0.6, 0.75], [-0.22, 0.5, 0.35]])


@pytest.mark.parametrize("f, args, wrt", [
    (written_through_a_constant_view, (M, 0.6), 1), (written_through_a_constant_row, (M, 0.6), 1),
    (written_through_a_view_of_what_the_derivative_reads, (X,), 0)])
def test_a_write_through_a_view_of_what_a_result_reads_is_refused(f, args, wrt):
    """A write through a view (not a new array): derivo's primal writes into a copy of
    it, so the array viewed would keep its old values, and the result that reads them
    would be wrong (value_and_grad's value, jvp's, and where only c is differentiated,
    the derivative sum(z) of the wrong z): refused, in both modes, also where nothing
    differentiated reaches the array."""
    def copies():
        return [a.copy() if isinstance(a, np.ndarray) else a for a in args]

    tangents = [None] * len(args)
    tangents[wrt] = np.ones_like(args[wrt]) if isinstance(args[wrt], np.ndarray) else 1.0
    for mode in (lambda: derivo.grad(f, wrt=wrt)(*copies()),
                 lambda: derivo.value_and_grad(f, wrt=wrt)(*copies()),
                 lambda: derivo.jvp(f, copies(), tangents)):
        with pytest.raises(DerivoError, match=r"test_writes.py:\d+:\d+: cannot differentiate "
                                              r"'(view|row|r)' sharing memory with '[zA]'"):
            mode()


def written_with_itself(x):
    y = x * 1.0
    y[:] = y
    return np.sum(y * y)


def reversed_into_itself(x):
    y = x * 1.0
    y[::-1] = y
    return np.sum(y * np.arange(4.0))


def written_with_itself_in_a_loop(x):
    y = x * 1.0
    s = 0.0
    for _ in range(3):
        y[...] = y
        s = s + np.sum(np.sin(y))
        y = y * 0.5
    return s


@pytest.mark.parametrize("f", [written_with_itself, reversed_into_itself,
                               written_with_itself_in_a_loop])
@pytest.mark.parametrize("loops", ["stack", "checkpoint"])
def test_an_array_written_with_itself_keeps_its_adjoint(f, loops):
    """y[i] = y: the part written gets its adjoint before the write cuts it from y's."""
    np.testing.assert_allclose(derivo.grad(f, loops=loops)(X.copy()),
                               central_differences(f, X), rtol=1e-6, atol=1e-8)


def updated_through_a_name_of_an_item_read(x, c):
    q3 = x[np.array([3, 0])]  # a copy of two items: NumPy's fancy index
    q4 = q3                   # a second name of that copy
    q4 *= np.cos(q4) * c      # changes q3 too
    return np.sum(q3 * q3) + np.sum(q4 * q4)


@pytest.mark.parametrize("take", [
    lambda f, x: derivo.value_and_grad(f, wrt=1)(x, 0.7),
    lambda f, x: derivo.jvp(f, (x, 0.7), (None, 1.0)),
])
def test_two_names_of_one_item_read_updated_in_place_are_refused(take):
    # the run-time check of a view of x does not see that q3 and q4 are one array
    x = np.array([0.4537, -0.8121, 0.9473, 0.2089])
    with pytest.raises(DerivoError, match="sharing memory with 'q4'|another name for"):
        take(updated_through_a_name_of_an_item_read, x)
