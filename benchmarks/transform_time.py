"""First-use transform time against the size of a straight-line function.

    python benchmarks/transform_time.py                   # 10 to 1000 statements
    python benchmarks/transform_time.py 10 100 1000 5000  # sizes of your choice

Each size is a fresh function of that many statements (a long simulation step:
math calls, products and sums, each statement reading the one before it and
some reading one three back), differentiated in both arguments by
``derivo.grad`` and called once.  Prints seconds and milliseconds per
statement; the per-statement figure staying flat from size to size is what
"linear in the function's size" means.
"""

import os
import sys
import time
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "src"))

import derivo  # noqa: E402

_STATEMENTS = (
    "    a{i} = math.sin(a{p}) + x",
    "    a{i} = a{p} * y - 0.5 * x",
    "    a{i} = math.log(1.0 + a{p} * a{p})",
    "    a{i} = a{p} / (1.0 + y * y) + a{q}",
)


def straight_line(size):
    """A module-level function ``f(x, y)`` of ``size`` statements, compiled from
    a file in the temporary directory (derivo reads source from files)."""
    lines = ["import math", "def f(x, y):", "    a0 = x * y"]
    for i in range(1, size):
        lines.append(_STATEMENTS[i % 4].format(i=i, p=i - 1, q=max(i - 3, 0)))
    lines.append("    return a{}".format(size - 1))
    source = "\n".join(lines) + "\n"
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "derivo_straight_{}.py".format(size))
    with open(path, "w") as file:
        file.write(source)
    module = types.ModuleType("derivo_straight_{}".format(size))
    module.__file__ = path
    exec(compile(source, path, "exec"), module.__dict__)
    return module.f


def main(sizes):
    print("{:>10} {:>10} {:>14}".format("statements", "seconds", "ms/statement"))
    for size in sizes:
        function = straight_line(size)
        start = time.perf_counter()
        derivo.grad(function, wrt=(0, 1))(0.3, 0.7)
        elapsed = time.perf_counter() - start
        print("{:>10} {:>10.3f} {:>14.2f}".format(size, elapsed, 1000 * elapsed / size),
              flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [10, 100, 1000])
