"""Importing derivo stays cheap: derivative templates are parsed when a derivative first needs them."""

import os
import subprocess
import sys
import textwrap


def test_importing_derivo_parses_no_derivative_template():
    script = textwrap.dedent("""
        import derivo
        from derivo.rules import RULES
        templates = [t for table in RULES.values() for rule in table.values()
                     for t in rule.templates + rule.jvps if t is not None]
        assert len(templates) > 200, len(templates)
        assert not any("_tree" in vars(t) for t in templates)
        import math
        rule = RULES[math.sin][1]
        assert rule.templates[0].body is not None and "_tree" in vars(rule.templates[0])
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_importing_derivo_leaves_numpy_random_unimported():
    # NumPy imports np.random on first use; importing it took 10 ms of derivo's import
    script = "import sys, derivo; print('numpy.random' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_differentiating_array_methods_leaves_numpy_random_unimported():
    # the methods of a random generator are looked up only for a method no array has
    script = ("import sys, runpy; runpy.run_path({!r}); "
              "print('numpy.random' in sys.modules)").format(
        os.path.join(os.path.dirname(__file__), "probing_array_methods.py"))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
