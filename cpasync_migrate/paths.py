"""How reports name a file: relative to the current folder when it lies below it, else as given."""
from __future__ import annotations

import os


def rel(path: str) -> str:
    try:
        r = os.path.relpath(path)
    except ValueError:
        return path
    return path if r.startswith("..") else r
