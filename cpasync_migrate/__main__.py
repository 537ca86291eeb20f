# `python -m cpasync_migrate` puts the current folder first on sys.path, and the folder a user runs the
# tool in is often the tree it scans: nothing of that tree (a numpy.py, a re.py) may ever be imported.
from .syspath import drop_unsafe

drop_unsafe()

import sys  # noqa: E402

from .replay import main  # noqa: E402

raise SystemExit(main(sys.argv[1:]))
