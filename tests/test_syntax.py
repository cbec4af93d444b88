"""derivo.syntax: the one module that touches gast and astor."""
import inspect

import gast

from derivo import reverse, syntax


def test_walk_visits_what_ast_walk_visits_in_the_same_order():
    # syntax.walk is a faster copy of ast.walk: passes that stop at the first match
    # depend on its order
    tree = gast.parse(inspect.getsource(reverse))
    assert [id(n) for n in syntax.walk(tree)] == [id(n) for n in gast.walk(tree)]


def test_walk_of_a_list_walks_each_tree_in_turn():
    first, second = gast.parse("a = b + 1\nfor i in c:\n    d = i").body
    expected = [*gast.walk(first), *gast.walk(second)]
    assert [id(n) for n in syntax.walk([first, second])] == [id(n) for n in expected]
