"""The clang-format options the C++ rewrites lay their text out by (see cpp/layout.py).

A module of its own, outside ``cpasync_migrate.cpp``: the engine reads the style for every C++ file, also
on a run that answers from the cache, and must not load the parser for that.

:func:`parse` reads the text of a ``.clang-format`` file (pure); :func:`style_of` finds the nearest one
above a source file (``.clang-format`` or ``_clang-format``, as clang-format looks them up) and reads
it once per run.  Without one the layout uses an 80-column limit and a continuation indent of 4 (LLVM's),
and the inserted lines take the indentation of the statement they precede.

Read: ``BasedOnStyle`` (for the defaults of the others), ``ColumnLimit``, ``ContinuationIndentWidth``.
``IndentWidth`` is not needed: every inserted line takes the indentation of the statement it precedes,
and the merge pass's nested lines the file's own step.  A ``Language`` section for another language than
C++ is skipped.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Style:
    """The options cpp/layout.py reads."""

    column_limit: int = 80
    continuation: int = 4  # ContinuationIndentWidth

# BasedOnStyle -> (ColumnLimit, ContinuationIndentWidth), clang-format's own presets.
_PRESETS = {
    "llvm": (80, 4), "google": (80, 4), "chromium": (80, 4), "mozilla": (80, 2), "webkit": (0, 4),
    "microsoft": (120, 4), "gnu": (79, 4), "clang-format": (120, 4),
}
_NAMES = (".clang-format", "_clang-format")


def parse(text: str) -> Style:
    """The layout options of a ``.clang-format`` text (YAML documents of ``Key: value`` lines)."""
    chosen: dict = {}
    for doc in re.split(r"^---\s*$|^\.\.\.\s*$", text, flags=re.MULTILINE):
        keys: dict = {}
        for line in doc.splitlines():
            m = re.match(r"^([A-Za-z]+)\s*:\s*([^#]*?)\s*(?:#.*)?$", line)  # top-level keys only
            if m:
                keys[m.group(1)] = m.group(2).strip().strip("'\"")
        lang = keys.get("Language", "Cpp").lower()
        if lang not in ("cpp", "c", "objc"):
            continue
        if "Language" in keys or not chosen:
            chosen = {**chosen, **keys}
    preset = _PRESETS.get(chosen.get("BasedOnStyle", "LLVM").lower(), _PRESETS["llvm"])

    def number(key, default):
        try:
            return int(chosen[key])
        except (KeyError, ValueError):
            return default

    return Style(column_limit=number("ColumnLimit", preset[0]),
                 continuation=number("ContinuationIndentWidth", preset[1]))


_FOUND: dict = {}  # folder -> (path or None)
_READ: dict = {}  # (path, mtime, size) -> Style


def forget() -> None:
    _FOUND.clear()


def style_of(path: str) -> Style:
    """The style of the nearest ``.clang-format`` above ``path``; LLVM's 80 columns without one."""
    folder = os.path.dirname(os.path.abspath(path))
    found = _nearest(folder)
    if found is None:
        return Style()
    try:
        st = os.stat(found)
        k = (found, st.st_mtime_ns, st.st_size)
        if k not in _READ:
            from . import small_files

            # (the tree's file: a FIFO put in its place is refused, not waited on)
            _READ[k] = parse(small_files.read(found, 64 * 1024, prefix=True).decode("utf-8", "replace"))
        return _READ[k]
    except (OSError, ValueError):  # ValueError: small_files.Refused
        return Style()


def _nearest(folder: str) -> Optional[str]:
    seen = []
    cur = folder
    result = None
    while True:
        if cur in _FOUND:
            result = _FOUND[cur]
            break
        seen.append(cur)
        hit = next((os.path.join(cur, n) for n in _NAMES if os.path.isfile(os.path.join(cur, n))), None)
        if hit is not None:
            result = hit
            break
        parent = os.path.dirname(cur)
        if parent == cur:
            break
        cur = parent
    for s in seen:
        _FOUND[s] = result
    return result
