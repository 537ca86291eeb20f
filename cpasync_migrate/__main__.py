import os
import sys

# `python -m cpasync_migrate` puts the current folder first on sys.path, and the folder a user runs the
# tool in is often the tree it scans: nothing of that tree (a numpy.py, a cupy.py) may ever be imported.
# The package itself is imported already; its modules are found through it.
try:
    _cwd = os.getcwd()
except OSError:
    _cwd = None
if not sys.flags.safe_path and sys.path and sys.path[0] in ("", _cwd):
    del sys.path[0]

from .cli import main  # noqa: E402

raise SystemExit(main())
