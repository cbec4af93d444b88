"""Stage 7, ``derivo.cache``: keys, one build per key, thread safety.

Every test uses keys of its own (fresh objects), so the global cache shared
with the rest of the suite never makes one test depend on another.
"""

import sys
import threading

import pytest

import derivo
from derivo import cache

SCALE = 2.0


def uses_scale(x):
    return x * SCALE


def make_closure(value):
    def inner(x):
        return x * value
    return inner


class Key:
    """A key nobody else uses."""


# --- key_of ---------------------------------------------------------------------------

def test_key_is_stable_for_an_unchanged_function():
    assert cache.key_of(uses_scale, "grad") == cache.key_of(uses_scale, "grad")


def test_key_ignores_what_a_named_global_holds(monkeypatch):
    # the derivative reads it live (see test_live_reads.py), so one entry serves
    before = cache.key_of(uses_scale, "grad")
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 3.0)
    assert cache.key_of(uses_scale, "grad") == before


def test_key_ignores_globals_the_function_does_not_name(monkeypatch):
    before = cache.key_of(uses_scale, "grad")
    monkeypatch.setattr(sys.modules[__name__], "UNRELATED_GLOBAL", object(), raising=False)
    assert cache.key_of(uses_scale, "grad") == before


def test_key_differs_for_closures_over_different_cells():
    # each closure's derivative reads its own cells live, so they share no entry
    value = 1.5
    first, second = make_closure(value), make_closure(value)
    assert first.__code__ is second.__code__
    assert cache.key_of(first, "grad") != cache.key_of(second, "grad")


def test_key_is_equal_for_the_same_closure():
    closure = make_closure(1.5)
    assert cache.key_of(closure, "grad") == cache.key_of(closure, "grad")


@pytest.mark.parametrize("a, b", [
    (("grad", ("x",), False), ("value_and_grad", ("x",), False)),
    (("grad", ("x",), False), ("grad", ("x", "y"), False)),
    (("grad", ("x",), False), ("grad", ("x",), True)),
])
def test_key_differs_for_different_options(a, b):
    assert cache.key_of(uses_scale, *a) != cache.key_of(uses_scale, *b)


def test_key_differs_for_a_redefined_function():
    def first(x):
        return x
    redefined = first

    def first(x):  # noqa: F811  a new code object
        return x
    assert cache.key_of(redefined, "grad") != cache.key_of(first, "grad")


# --- lookup -------------------------------------------------------------------------------

def test_lookup_builds_once_and_counts_a_hit():
    key, calls = Key(), []

    def build():
        calls.append(1)
        return "built"

    before = cache.info()
    assert cache.lookup(key, build) == "built"
    assert cache.lookup(key, build) == "built"
    after = cache.info()
    assert calls == [1]
    assert after.hits - before.hits == 1
    assert after.misses - before.misses == 1
    assert after.size - before.size == 1


def test_lookup_returns_the_same_object():
    key = Key()
    first = cache.lookup(key, object)
    assert cache.lookup(key, object) is first


def test_failing_build_is_not_cached():
    key, calls = Key(), []

    def build():
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("first build fails")
        return "second"

    size = cache.info().size
    with pytest.raises(RuntimeError):
        cache.lookup(key, build)
    assert cache.info().size == size
    assert cache.lookup(key, build) == "second"
    assert calls == [1, 1]


def test_threads_asking_for_the_same_key_build_once():
    key, calls, results = Key(), [], []
    threads_count = 8
    barrier = threading.Barrier(threads_count)
    lock = threading.Lock()

    def build():
        with lock:
            calls.append(threading.get_ident())
        # give the other threads time to arrive while this one builds
        threading.Event().wait(0.05)
        return object()

    def worker():
        barrier.wait()
        value = cache.lookup(key, build)
        with lock:
            results.append(value)

    threads = [threading.Thread(target=worker) for _ in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(calls) == 1
    assert len(results) == threads_count
    assert all(value is results[0] for value in results)


def test_build_may_look_up_another_key():
    # A hessian builds a gradient inside its own build: the lock must be reentrant.
    outer, inner = Key(), Key()
    assert cache.lookup(outer, lambda: cache.lookup(inner, lambda: "inner") + "!") == "inner!"


# --- through the API --------------------------------------------------------------------------

HELPER_SCALE = 2.0


def scaled_helper(x):
    return HELPER_SCALE * x


def calls_scaled_helper(x):
    return scaled_helper(x)


def test_rebinding_a_global_the_function_reads_gives_a_new_derivative(monkeypatch):
    assert derivo.grad(uses_scale)(1.0) == 2.0
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 5.0)
    assert derivo.grad(uses_scale)(1.0) == 5.0


def test_rebinding_a_global_a_called_function_reads_gives_a_new_derivative(monkeypatch):
    assert derivo.grad(calls_scaled_helper)(1.0) == 2.0
    monkeypatch.setattr(sys.modules[__name__], "HELPER_SCALE", 5.0)
    assert calls_scaled_helper(1.0) == 5.0
    assert derivo.grad(calls_scaled_helper)(1.0) == 5.0
