"""``derivo.names``: deterministic, collision-free names for what derivo adds."""

import pytest

import derivo
from checks import assert_grad_matches
from derivo import syntax as S
from derivo.names import Namer, names_in


def test_fresh_returns_the_base_when_free():
    assert Namer().fresh("bx") == "bx"


def test_fresh_numbers_from_one_when_the_base_is_taken():
    namer = Namer({"bx"})
    assert [namer.fresh("bx") for _ in range(3)] == ["bx1", "bx2", "bx3"]


def test_fresh_skips_numbered_names_already_taken():
    namer = Namer({"y", "y1", "y3"})
    assert namer.fresh("y") == "y2"
    assert namer.fresh("y") == "y4"


def test_numbered_always_has_a_number():
    namer = Namer()
    assert [namer.numbered("t") for _ in range(3)] == ["t1", "t2", "t3"]


def test_numbered_skips_taken_names():
    namer = Namer({"t1", "t2", "t4"})
    assert namer.numbered("t") == "t3"
    assert namer.numbered("t") == "t5"


def test_fresh_and_numbered_share_the_taken_set():
    namer = Namer()
    assert namer.fresh("t") == "t"
    assert namer.numbered("t") == "t1"
    assert namer.fresh("t") == "t2"


def test_names_are_recorded_as_taken():
    namer = Namer({"a"})
    made = {namer.fresh("a"), namer.numbered("b"), namer.fresh("c")}
    assert made == {"a1", "b1", "c"}
    assert namer.taken == {"a", "a1", "b1", "c"}


def test_namer_does_not_alias_its_argument():
    taken = {"x"}
    Namer(taken).fresh("y")
    assert taken == {"x"}


def test_same_requests_give_the_same_names():
    def sequence():
        namer = Namer({"x", "bx", "t1"})
        return [namer.fresh("bx"), namer.numbered("t"), namer.fresh("x"),
                namer.numbered("t"), namer.fresh("stack")]

    assert sequence() == sequence() == ["bx1", "t2", "x1", "t3", "stack"]


def test_names_in_collects_names_and_function_names():
    tree = S.parse_function("def f(x, y):\n    z = math.sin(x) + y.attr\n    return z\n")
    assert names_in(tree) == {"f", "x", "y", "z", "math"}


def test_names_in_accepts_a_list_of_trees():
    trees = [S.parse_expr("a + b"), S.parse_expr("c")]
    assert names_in(trees) == {"a", "b", "c"}


# --- generated code never captures the user's names ----------------------------------------
# derivo's reverse sweep writes loops of its own; they must not use a name the
# user's function also uses.

def underscore(x):
    _ = 3.0
    while x < 10.0:
        x = x * _
    return x


def shadows_reversed(x, n):
    reversed = 2.0
    for i in range(n):
        x = x * x * reversed
    return x


def shadows_range(x, n):
    range = 2.0
    k = 0
    while k < n:
        k += 1
        x = x * x * range
    return x


def test_user_variable_named_underscore():
    assert underscore(1.5) == 13.5  # 1.5 * 3 * 3: the gradient is 9
    assert derivo.grad(underscore)(1.5) == 9.0


@pytest.mark.parametrize("func", [shadows_reversed, shadows_range],
                         ids=["reversed", "range"])
def test_user_variable_shadowing_a_builtin_the_reverse_sweep_calls(func):
    assert_grad_matches(func, 1.1, 2)


# globals named as derivo names what it generates for a function called 'stepped'
stepped_trips = 3.0
stepped_step = 2.0
stepped_grad = 0.5
stepped_forward = 1.5


def stepped(x, w):
    s = x * 1.0
    for i in range(3):
        s = s * w + stepped_trips * stepped_step * stepped_grad * stepped_forward
    return s


@pytest.mark.parametrize("loops", ["stack", "checkpoint"])
def test_a_global_named_as_generated_code_is_read_as_the_users(loops):
    # s = x w^3 + 4.5 (w^2 + w + 1): d/dw = 3 x w^2 + 4.5 (2 w + 1)
    x, w = 1.0, 0.5
    assert derivo.grad(stepped, wrt=1, loops=loops)(x, w) == \
        pytest.approx(3 * x * w * w + 4.5 * (2 * w + 1))
