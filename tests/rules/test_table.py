"""derivo.rules.table() and ``python -m derivo.rules`` list the registered primitives."""

import os
import subprocess
import sys

import numpy as np

from derivo import rules


def test_table_groups_primitives_by_rule_table():
    groups = rules.table()
    assert {"builtins", "numpy", "linalg", "fft", "runtime", "not differentiable"} <= set(groups)
    for label in ("np.var", "np.cumsum", ".std", "np.clip"):
        assert label in groups["numpy"]
    for label in ("np.linalg.cholesky", "np.linalg.svd", "np.tensordot"):
        assert label in groups["linalg"]
    assert "np.fft.rfft" in groups["fft"]
    assert "np.sign" in groups["not differentiable"]
    # every primitive with a rule is listed once
    assert sum(len(groups[g]) for g in groups
               if g not in ("not differentiable", "evaluated, no rule")) == len(
        {next(iter(by_arity.values())).label for by_arity in rules.RULES.values()})


def test_the_command_prints_counts():
    # the derivo under test (this checkout's src/), not the one the environment installed
    source = os.path.dirname(os.path.dirname(os.path.dirname(rules.__file__)))
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [source] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    out = subprocess.run([sys.executable, "-m", "derivo.rules"], capture_output=True, text=True,
                         env=environment)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    numpy_line = next(line for line in lines if line.startswith("numpy ("))
    assert "np.var" in numpy_line
    count = int(numpy_line.split("(")[1].split(")")[0])
    assert count == len(rules.table()["numpy"]) and count > 90
    assert lines[-1].startswith("total with rules: ")
    assert np.isfinite(int(lines[-1].split(": ")[1]))
