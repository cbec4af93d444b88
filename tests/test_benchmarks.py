"""Smoke test of the benchmark suite: `benchmarks/run_all.py --quick` runs and prints its table.

No timing is asserted (the tests run on loaded machines).  Set DERIVO_SKIP_BENCH=1 to skip it:
with JAX installed it takes tens of seconds.
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "run_all.py")

pytestmark = pytest.mark.skipif(bool(os.environ.get("DERIVO_SKIP_BENCH")),
                                reason="DERIVO_SKIP_BENCH is set")


def test_run_all_quick_prints_a_table():
    result = subprocess.run([sys.executable, SCRIPT, "--quick"], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    header = [i for i, line in enumerate(lines) if line.split()[:2] == ["workload", "candidate"]]
    assert len(header) == 1, result.stdout
    table = lines[header[0] + 2:]
    for workload in ("Bessel J_2'(z), z=1", "Bessel J_2'(z), z=10", "seed-004", "pendulum",
                     "MLP 100-200-10", "MLP 3-4-2", "RNN"):
        assert any(line.startswith(workload) for line in table), workload
    for candidate in ("forward", "derivo", "generated", "hand", "autograd", "jax.grad", "jax.jit"):
        assert sum(line[37:].split()[:1] == [candidate] for line in table) == 7, candidate
    for section in ("first use:", "cached call overhead:", "import time", "issue 4 targets"):
        assert any(line.startswith(section) for line in lines), section
