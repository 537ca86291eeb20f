"""What processing one file that names the intrinsic costs, roughly: the order in which hits go out.

The runner hands out the dearest file first, so that the workers end together (the order changes no
result: outcomes are sorted by path).  A file costs its size; a Python file that looks as if it holds
a legacy call also costs libcst, whose import alone is dearer than parsing most files.
"""
from __future__ import annotations

import os

from . import files


def size_of(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


# A Python file with a call of the intrinsic that passes no access pointer (a legacy call, most likely)
# goes to libcst, whose import alone costs more than parsing most files: such files go out first.
_LEGACY_LOOKING = None
_LIBCST_COST = 1 << 26  # in bytes of file: ahead of every file that is only large


def cost_of(path: str) -> int:
    """A guess of what processing ``path`` costs, to hand out the dearest first (the order changes no
    result: outcomes are sorted by path).  Its size, and for a Python file that looks as if it holds a
    legacy call, the price of libcst on top."""
    n = size_of(path)
    if not path.endswith(files.PYTHON_SUFFIXES):
        return n
    global _LEGACY_LOOKING
    if _LEGACY_LOOKING is None:
        import re

        from .rules import intrinsic_name

        name = re.escape(intrinsic_name().encode("ascii"))
        _LEGACY_LOOKING = re.compile(name + rb"\s*\((?:(?!access_ptr)[^)]){0,400}\)")
    try:
        fd = os.open(path, files._OPEN_READ)
        try:
            data = os.read(fd, 1 << 20)
        finally:
            os.close(fd)
    except OSError:
        return n
    return n + _LIBCST_COST if _LEGACY_LOOKING.search(data) else n
