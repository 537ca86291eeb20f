"""The line length a Python file is laid out within, found the way ruff and black find their own.

What it does: ``of(path)`` gives the ``line-length`` that ``ruff format`` would use for the file when
its configuration sets one, else the one black would use when its configuration sets one, else 88
(both formatters' default).  ``python/layout.py`` lays rewritten calls out within it.

How each formatter finds its configuration (ruff's "Config file discovery", black's
``find_project_root``):

- **ruff**: the closest folder, from the file's own upwards, that holds a ``.ruff.toml``, a
  ``ruff.toml`` or a ``pyproject.toml`` with a ``[tool.ruff]`` table, in that order of precedence
  within one folder.  A ``pyproject.toml`` without ``[tool.ruff]`` is passed over (the search goes on
  above it).  The setting is the top-level ``line-length`` of a ``ruff.toml`` / ``.ruff.toml``, or
  ``tool.ruff.line-length`` of a ``pyproject.toml``; where the closest file does not set it, its
  ``extend`` chain is followed (paths relative to the file that names them).  Parent files are not
  merged, as ruff does not merge them.
- **black**: the project root is the closest folder, from the file's own upwards, that holds ``.git``,
  a ``.hg`` folder or a ``pyproject.toml`` with a ``[tool.black]`` table; the setting is
  ``tool.black.line-length`` of that root's ``pyproject.toml``.

Not read: user-level files (``~/.config/ruff``, ``~/.config/black``) and ``--config`` options of the
formatters' own command lines.  A file that cannot be read or is not TOML sets nothing.  Each folder is
looked at once per run (``forget`` is called when a run starts), each file once per content.
"""
from __future__ import annotations

import os
import tomllib
from typing import Optional

DEFAULT = 88
MAX = 320  # ruff refuses longer lines; a value outside 1..MAX sets nothing

_RUFF_FILES = (".ruff.toml", "ruff.toml")  # precedence within one folder, before pyproject.toml

_TOML: dict = {}  # (path, mtime_ns, size) -> parsed document (None: unreadable)
_RUFF_AT: dict = {}  # folder -> path of the ruff configuration that governs it (None: none)
_BLACK_AT: dict = {}  # folder -> black's project root for it
_OF: dict = {}  # folder -> its line length


def forget() -> None:
    """Forget what each folder holds (a run starts: configuration files may have come or gone)."""
    _RUFF_AT.clear()
    _BLACK_AT.clear()
    _OF.clear()


def of(path: str) -> int:
    folder = os.path.dirname(os.path.abspath(path))
    got = _OF.get(folder)
    if got is None:
        got = _OF[folder] = _ruff(folder) or _black(folder) or DEFAULT
    return got


def _load(path: str) -> Optional[dict]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    k = (path, st.st_mtime_ns, st.st_size)
    if k not in _TOML:
        from . import small_files

        try:  # the tree's file: not a FIFO, not unbounded (small_files)
            doc = small_files.loads_toml(path, small_files.read(path, small_files.TOML_LIMIT))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, small_files.Refused):
            doc = None
        _TOML[k] = doc
    return _TOML[k]


def _tool(doc: Optional[dict], name: str) -> Optional[dict]:
    tool = doc.get("tool") if isinstance(doc, dict) else None
    table = tool.get(name) if isinstance(tool, dict) else None
    return table if isinstance(table, dict) else None


def _width(table: Optional[dict]) -> Optional[int]:
    v = table.get("line-length") if isinstance(table, dict) else None
    if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= MAX:
        return v
    return None


def _parent(folder: str) -> Optional[str]:
    up = os.path.dirname(folder)
    return None if up == folder else up


# ------------------------------------------------------------------------------------------ ruff


def _ruff_config_at(folder: str) -> Optional[str]:
    """The ruff configuration file that governs ``folder`` (its own or the closest above it)."""
    chain = []
    cur: Optional[str] = folder
    found = None
    while cur is not None:
        if cur in _RUFF_AT:
            found = _RUFF_AT[cur]
            break
        chain.append(cur)
        own = _own_ruff_file(cur)
        if own is not None:
            found = own
            break
        cur = _parent(cur)
    for f in chain:
        _RUFF_AT[f] = found
    return found


def _own_ruff_file(folder: str) -> Optional[str]:
    for name in _RUFF_FILES:
        p = os.path.join(folder, name)
        if os.path.isfile(p):
            return p
    p = os.path.join(folder, "pyproject.toml")
    if os.path.isfile(p) and _tool(_load(p), "ruff") is not None:
        return p
    return None


def _ruff_table(path: str) -> Optional[dict]:
    doc = _load(path)
    if os.path.basename(path) == "pyproject.toml":
        return _tool(doc, "ruff")
    return doc


def _ruff(folder: str) -> Optional[int]:
    path = _ruff_config_at(folder)
    seen = set()
    while path is not None and path not in seen and len(seen) < 16:
        seen.add(path)
        table = _ruff_table(path)
        n = _width(table)
        if n is not None:
            return n
        ext = table.get("extend") if isinstance(table, dict) else None
        if not isinstance(ext, str) or not ext:
            return None
        path = os.path.normpath(os.path.join(os.path.dirname(path), os.path.expanduser(ext)))
    return None


# ------------------------------------------------------------------------------------------ black


def _black_root(folder: str) -> Optional[str]:
    chain = []
    cur: Optional[str] = folder
    root = None
    while cur is not None:
        if cur in _BLACK_AT:
            root = _BLACK_AT[cur]
            break
        chain.append(cur)
        if os.path.exists(os.path.join(cur, ".git")) or os.path.isdir(os.path.join(cur, ".hg")):
            root = cur
            break
        p = os.path.join(cur, "pyproject.toml")
        if os.path.isfile(p) and _tool(_load(p), "black") is not None:
            root = cur
            break
        cur = _parent(cur)
    for f in chain:
        _BLACK_AT[f] = root
    return root


def _black(folder: str) -> Optional[int]:
    root = _black_root(folder)
    if root is None:
        return None
    return _width(_tool(_load(os.path.join(root, "pyproject.toml")), "black"))
