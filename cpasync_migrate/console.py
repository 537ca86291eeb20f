"""The console script ``cpasync-migrate``: the import path made safe (``syspath.py``), then the command line,
replayed where an unchanged earlier run of it was recorded (``replay.py``)."""
import sys

from .syspath import drop_unsafe


def main() -> int:
    drop_unsafe()
    from .replay import main as replay_main

    return replay_main(sys.argv[1:])
