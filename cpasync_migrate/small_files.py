"""The small files of a scanned tree that are not kernels (``pyproject.toml``, ``ruff.toml``, ``.gitignore``,
``.clang-format``), read so that the tree cannot make the read wait or grow without bound.

:func:`read` opens without blocking (a FIFO in a file's place never stalls the run), takes only regular
files (a link to ``/dev/zero`` is refused) and at most ``limit`` bytes (a sparse 10 GB file costs
nothing).  :func:`loads_toml` parses only what ``tomllib`` parses in bounded time: its cost grows with the
square of a key's dotted parts and faster than the number of keys (16 KB holding one 8,000-part key took
8 s, 1.3 MB of table headers 22 s), so a file is at most :data:`TOML_LIMIT` bytes and a dotted key at
most :data:`TOML_KEY_PARTS` parts; nesting deeper than the interpreter's recursion limit is an error
too.  Every refusal is a :class:`Refused` whose message names the file (and the line).
"""
from __future__ import annotations

import os
import re
import stat

# The most bytes of a configuration file read (the largest pyproject.toml of a big project is some tens
# of KB); tomllib takes a few seconds at most over this much.
TOML_LIMIT = 256 << 10
# The most dotted parts of one key or table header ([tool.ruff.lint.per-file-ignores] has 4).
TOML_KEY_PARTS = 32

_OPEN = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)


class Refused(ValueError):
    """A file not read, or not parsed: the message names it and why."""


def read(path: str, limit: int, prefix: bool = False) -> bytes:
    """The bytes of the regular file at ``path`` (a link to one is followed); :class:`Refused` when it is
    something else or larger than ``limit`` bytes (``prefix``: its first ``limit`` bytes instead); OSError
    when it cannot be opened."""
    fd = os.open(path, _OPEN)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"{path}: not a regular file; not read")
        if prefix:
            return os.read(fd, limit)
        if st.st_size > limit:
            raise Refused(f"{path}: {st.st_size} bytes, over the limit of {limit} bytes for this kind of file; "
                          "not read")
        parts, n = [], 0
        while n <= limit:
            b = os.read(fd, min(1 << 20, limit + 1 - n))
            if not b:
                break
            parts.append(b)
            n += len(b)
        if n > limit:  # it grew while being read
            raise Refused(f"{path}: over the limit of {limit} bytes for this kind of file; not read")
        return b"".join(parts)
    finally:
        os.close(fd)


_PART = r"""(?>[A-Za-z0-9_-]+|"(?:[^"\\\n]|\\.)*+"|'[^'\n]*+')"""
# (a part starts where no bare-key character precedes it: each run is tried from its parts' starts only)
_LONG_KEY = re.compile(rf"(?<![A-Za-z0-9_-]){_PART}(?:[ \t]*+\.[ \t]*+{_PART}){{{TOML_KEY_PARTS},}}")


def loads_toml(path, raw: bytes) -> dict:
    """``tomllib.loads`` of ``raw`` (the bytes of ``path``), bounded: :class:`Refused` for a file over
    :data:`TOML_LIMIT` bytes, a dotted run of more than :data:`TOML_KEY_PARTS` parts (a key, a table
    header, or the text of a string that looks like one), or nesting the parser cannot follow.  A file that
    is not UTF-8 raises UnicodeDecodeError, one that is not TOML ``tomllib.TOMLDecodeError``, as before."""
    import tomllib

    if len(raw) > TOML_LIMIT:
        raise Refused(f"{path}: {len(raw)} bytes, over the limit of {TOML_LIMIT} bytes for a configuration file")
    text = raw.decode("utf-8")
    m = _LONG_KEY.search(text)
    if m is not None:
        line = text.count("\n", 0, m.start()) + 1
        raise Refused(f"{path}: line {line}: a dotted key of more than {TOML_KEY_PARTS} parts; not parsed "
                      "(parsing such keys takes time that grows with the square of their length)")
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise Refused(f"{path}: arrays or inline tables nested too deeply to parse") from None
