"""Recursion whose depth depends on the data: the VJP (and JVP) of a recursive
function calls itself, as the function does, each level running its primal
again (time quadratic in the depth, memory linear)."""

import math

import numpy as np
import pytest

import derivo

from checks import assert_close
from test_functions_as_values import fd


def nested_sine(x, n):
    if n == 0:
        return x
    return math.sin(nested_sine(x, n - 1)) * x


def tree_sum(node, w):
    if isinstance(node, float):
        return math.tanh(node * w)
    left, right = node
    return tree_sum(left, w) + w * tree_sum(right, w)


def log_partition(x, n):
    """log(sum_{k<=n} exp(k x)) by the recursion Z_n = logaddexp(Z_{n-1}, n x)."""
    if n == 0:
        return 0.0
    return np.logaddexp(log_partition(x, n - 1), n * x)


def even(x, n):
    if n == 0:
        return x
    return odd(x * 1.5, n - 1)


def odd(x, n):
    return math.cos(even(x, n)) + x


@pytest.mark.parametrize("n", [0, 1, 4, 9])
def test_a_recursion_of_data_dependent_depth_in_every_mode(n):
    expected = fd(lambda x: nested_sine(x, n), 0.7)
    assert_close(derivo.grad(nested_sine)(0.7, n), expected, rtol=1e-6)
    value, gradient = derivo.value_and_grad(nested_sine)(0.7, n)
    assert_close((value, gradient), (nested_sine(0.7, n), expected), rtol=1e-6)
    assert_close(derivo.vjp(nested_sine, 0.7, n)[1](1.0)[0], expected, rtol=1e-6)
    assert_close(derivo.jvp(nested_sine, (0.7, n), (1.0, 0))[1], expected, rtol=1e-6)
    second = fd(lambda x: derivo.grad(nested_sine)(x, n), 0.7, h=1e-5)
    assert_close(derivo.hessian(nested_sine)(0.7, n), second, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("tree", [0.4, (0.5, 0.2), ((0.5, (0.2, 0.3)), 0.9)])
def test_a_tree_walk(tree):
    assert_close(derivo.grad(tree_sum, wrt=1)(tree, 0.8), fd(lambda w: tree_sum(tree, w), 0.8))


def test_a_recursive_log_partition_and_mutual_recursion():
    assert_close(derivo.grad(log_partition)(0.3, 6), fd(lambda x: log_partition(x, 6), 0.3))
    assert_close(derivo.grad(even)(0.4, 5), fd(lambda x: even(x, 5), 0.4))
