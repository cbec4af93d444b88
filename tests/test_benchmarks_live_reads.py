"""Smoke test of `benchmarks/live_reads.py`: it runs and prints its four sections.

No timing is asserted (the tests run on loaded machines); DERIVO_SKIP_BENCH=1 skips it.
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "live_reads.py")


@pytest.mark.skipif(bool(os.environ.get("DERIVO_SKIP_BENCH")), reason="DERIVO_SKIP_BENCH is set")
def test_live_reads_benchmark_prints_its_sections():
    result = subprocess.run([sys.executable, SCRIPT, "1"], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for section in ("derivative requested again", "cached call overhead",
                    "the check of the names read", "first call after"):
        assert any(line.startswith(section) for line in result.stdout.splitlines()), section
