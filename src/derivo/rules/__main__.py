"""``python -m derivo.rules``: the registered primitives by group, with counts
(SciPy's rules too, when SciPy is installed)."""

import importlib

from . import table

for _module in ("scipy.special", "scipy.linalg", "scipy.stats", "scipy.signal", "scipy.integrate"):
    try:
        importlib.import_module(_module)
    except ImportError:
        break

groups = table()
for group, labels in groups.items():
    print("{} ({}): {}".format(group, len(labels), ", ".join(labels)))
print("total with rules: {}".format(sum(
    len(labels) for group, labels in groups.items()
    if group not in ("not differentiable", "evaluated, no rule"))))
