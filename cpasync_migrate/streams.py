"""The standard streams as the command line uses them (``cli.py``, and ``replay.py``, which prints a recorded run).

``tolerant``: a file name that is not UTF-8 is printed as its bytes (``surrogateescape``) rather than failing
the report.  ``quiet_stdout``: after the reader of stdout went away (``... | head``), stdout points at the null
device, so that the flush at exit raises no second ``BrokenPipeError``.
"""
from __future__ import annotations

import os
import sys


def tolerant() -> None:
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure") and getattr(stream, "errors", "") == "strict":
            try:
                stream.reconfigure(errors="surrogateescape")
            except (ValueError, OSError):
                pass


def quiet_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
