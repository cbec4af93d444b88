"""Smoke test of the benchmark suite: `benchmarks/run_all.py --quick`, `benchmarks/loops.py
--quick` and `benchmarks/items.py` run and print their tables.

No timing is asserted (the tests run on loaded machines).  Set DERIVO_SKIP_BENCH=1 to skip them:
with JAX installed run_all.py takes tens of seconds; loops.py --quick takes about ten.
"""
import importlib.util
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
    workloads = ("Bessel J_2'(z), z=1", "Bessel J_2'(z), z=10", "seed-004", "pendulum, 1e4",
                 "Horner", "MLP 100-200-10", "MLP 3-4-2", "RNN", "GP neg. log-likelihood",
                 "softmax classifier")
    # with numba: the scalar workloads' numba rows, and a pendulum of 1e5 steps
    scalar = ("Bessel J_2'(z), z=1", "Bessel J_2'(z), z=10", "pendulum, 1e4")
    if importlib.util.find_spec("numba") is not None:
        workloads += ("pendulum, 1e5",)
        scalar += ("pendulum, 1e5",)
    for workload in workloads:
        assert any(line.startswith(workload) for line in table), workload
    for candidate in ("forward", "derivo", "generated", "hand", "autograd", "jax.grad", "jax.jit"):
        assert sum(line[37:].split()[:1] == [candidate] for line in table) == len(workloads), \
            candidate
    for candidate in ("numba fwd", "numba"):
        rows = [line for line in table if line[37:47].rstrip() == candidate]
        assert len(rows) == len(scalar), candidate
    for section in ("first use:", "cached call overhead:", "import time", "issue 4 targets"):
        assert any(line.startswith(section) for line in lines), section


LOOPS = os.path.join(ROOT, "benchmarks", "loops.py")


def test_loops_quick_prints_its_sections():
    result = subprocess.run([sys.executable, LOOPS, "--quick"], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    for section in ("oscillator", "Bessel J_2 at z=1.0", "integrator", "C*(K, S)",
                    "online checkpointing"):
        assert any(line.startswith(section) for line in lines), section
    # The C*(K, S) table: K, S, reported, C* (DP), closed form, reported/C*.
    start = next(i for i, line in enumerate(lines) if line.startswith("C*(K, S)")) + 2
    rows = [line.split() for line in lines[start:start + 12]]
    assert all(len(row) == 6 and row[2] == row[3] == row[4] for row in rows), rows
    # The online table ends each row with its most states held and "<= S".
    start = next(i for i, line in enumerate(lines) if line.startswith("online checkpointing")) + 2
    rows = [line.split() for line in lines[start:start + 10]]
    assert all(row[-2:] == ["<=", "S"] for row in rows), rows


ITEMS = os.path.join(ROOT, "benchmarks", "items.py")


def test_items_prints_a_ratio_per_loop_and_length():
    result = subprocess.run([sys.executable, ITEMS], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = [line.split()[-2:] for line in result.stdout.splitlines()
            if line.rstrip().endswith("x")]
    assert len(rows) == 4, result.stdout
    for ratios in rows:
        assert all(r.endswith("x") and float(r[:-1]) > 0 for r in ratios), result.stdout
