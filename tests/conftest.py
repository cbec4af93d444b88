"""pytest configuration shared by all test files.

derivo is normally installed editable (``pip install -e '.[test]'``); putting
``<repo>/src`` first on ``sys.path`` makes the tests run against the working
tree even when it is not.  The tests directory itself goes on the path too, so
``from checks import ...`` works under every pytest import mode.
"""

import atexit
import os
import shutil
import sys
import tempfile

_TESTS = os.path.dirname(os.path.abspath(__file__))
_SRC = os.path.join(os.path.dirname(_TESTS), "src")

for _path in (_TESTS, _SRC):
    if _path not in sys.path:
        sys.path.insert(0, _path)

# numba's compiled derivatives are cached on disk (see derivo.numba_cache): the tests'
# go into a directory of their own, removed at the end, not into the user's ~/.cache.
if "DERIVO_CACHE_DIR" not in os.environ:
    os.environ["DERIVO_CACHE_DIR"] = tempfile.mkdtemp(prefix="derivo-tests-")
    atexit.register(shutil.rmtree, os.environ["DERIVO_CACHE_DIR"], True)
