"""A call into an installed library with no rule is refused at once, by name:
derivo reads only the user's own functions, never a library's source."""

import importlib.util
import sys
import textwrap

import numpy as np
import pytest

import derivo


def load(tmp_path, source, name):
    path = tmp_path / (name + ".py")
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, str(path)


@pytest.fixture
def installed_package(tmp_path, monkeypatch):
    """A package ``fakelib`` under a site-packages folder, on sys.path."""
    folder = tmp_path / "lib" / "site-packages" / "fakelib"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent("""\
        def double(x):
            return 2.0 * x
        """))
    monkeypatch.syspath_prepend(str(folder.parent))
    monkeypatch.delitem(sys.modules, "fakelib", raising=False)
    yield
    sys.modules.pop("fakelib", None)


@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_a_function_of_an_installed_package_needs_a_rule(installed_package, tmp_path, mode):
    module, path = load(tmp_path, """\
        import fakelib


        def f(x):
            y = x * x
            return fakelib.double(y)
        """, "uses_fakelib_" + mode)
    with pytest.raises(derivo.NoDerivativeRule) as caught:
        if mode == "grad":
            derivo.grad(module.f)(1.5)
        else:
            derivo.jvp(module.f, (1.5,), (1.0,))
    message = str(caught.value)
    assert "{}:6:".format(path) in message
    assert "'fakelib.double'" in message and "derivo.defvjp" in message


def test_a_rule_registered_for_a_library_function_is_used(installed_package, tmp_path):
    module, _ = load(tmp_path, """\
        import fakelib


        def f(x):
            return fakelib.double(x * x)
        """, "uses_fakelib_rule")
    import fakelib
    derivo.defpartials(fakelib.double, lambda ans, x: 2.0)
    try:
        assert derivo.grad(module.f)(1.5) == pytest.approx(6.0)
    finally:
        del derivo.rules.RULES[fakelib.double]


SCIPY_CALLS = [("scipy.linalg.logm", "scipy.linalg.logm(a)", "np.eye(2) * 0.5"),
               ("scipy.stats.gumbel_r.logpdf", "np.sum(scipy.stats.gumbel_r.logpdf(a))",
                "np.array([0.5, 1.0])")]


@pytest.mark.parametrize("label,expr,point", SCIPY_CALLS)
def test_scipy_without_a_rule_is_refused_by_name(label, expr, point, tmp_path):
    pytest.importorskip("scipy")
    module, path = load(tmp_path, """\
        import numpy as np
        import scipy.linalg
        import scipy.stats


        def f(a):
            return np.sum({})
        """.format(expr), "uses_" + label.replace(".", "_"))
    with pytest.raises(derivo.NoDerivativeRule) as caught:
        derivo.grad(module.f)(eval(point))
    message = str(caught.value)
    assert "{}:7:".format(path) in message and repr(label) in message
    assert "in place" not in message
