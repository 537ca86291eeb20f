"""The stat memo: files an earlier run read and found without the intrinsic's name, by their ``stat``.

The byte prefilter (``prefilter.py``) reads every file of the tree for the name; on a tree of
thousands of files that reading is most of a warm run.  The memo lets a later run skip reading a
file that an earlier run read and rejected, when the file's ``stat`` is unchanged: the same size,
modification and status-change times (nanoseconds), inode and device.  Every write to a file sets
its status-change time to the current time, and no call sets it back, so an unchanged ``stat``
means unchanged bytes, with one exception that the memo rules out as git does its "racy" index
entries: a file written in the same clock tick as the run that read it.  An entry is therefore only
recorded for a file whose modification and status-change times are at least ``RACY_NS`` older than
the start of the run that read it; a file written more recently is read again next time.

What the memo may change is only which files are read: a file it skips is one that held no name
when it was read, and a file with the name is always read and analysed by its content (the results
cache, ``cache.py``, is keyed by bytes, never by time).  A fresh checkout (a CI job that restores
the results cache) has new inodes and times, so there every file is read, as without the memo.

The memo is one JSON entry of the results cache per set of scanned paths, keyed by the cache's
salt (the tool's code and rules: another version never reads it) and the paths; it is written only
when it changed, atomically, and pruned with the rest of the cache.  Like every entry it is used only
when its MAC checks under this machine's key (``cache.py``): a memo shipped in a repository cannot
make a file be skipped.  ``--no-cache`` turns it off
with the cache; ``CPASYNC_MIGRATE_STAT_MEMO=0`` turns off only the memo (a measuring switch, with
an equality test).

An entry's value is one string, the five numbers in hexadecimal joined by ``:`` (format 2): JSON reads
strings far faster than lists of large numbers (tree-git's memo of 4,745 entries: about 3 ms instead of 9).
``CPASYNC_MIGRATE_MEMO_STRINGS=0`` keeps lists of numbers (format 1, as before; a measuring switch with an
equality test); a memo of the other format is not read (every file is read once, as without a memo).
``CPASYNC_MIGRATE_MEMO_PERCENT=0`` builds a format-2 string with an f-string, as before, instead of one ``%``
(half the time per file; the same string for every integer: a measuring switch with an equality test).
"""
from __future__ import annotations

import os
import time
from typing import Optional

ENABLED = os.environ.get("CPASYNC_MIGRATE_STAT_MEMO", "1") != "0"
STRINGS = os.environ.get("CPASYNC_MIGRATE_MEMO_STRINGS", "1") != "0"
FORMAT = 1  # entries as lists of numbers; 2: as strings (STRINGS)
PERCENT = os.environ.get("CPASYNC_MIGRATE_MEMO_PERCENT", "1") != "0"
RACY_NS = 5 * 10**9  # a file changed less than this long before the run started is not recorded


def stat_key(st: os.stat_result):
    """What an entry compares: size, modification and status-change times, inode, device (as JSON reads it
    back: a string of the five in hexadecimal under STRINGS, else a list; an entry of any other shape never
    compares equal, so it is read again)."""
    if STRINGS and PERCENT:
        return "%x:%x:%x:%x:%x" % (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
    if STRINGS:
        return f"{st.st_size:x}:{st.st_mtime_ns:x}:{st.st_ctime_ns:x}:{st.st_ino:x}:{st.st_dev:x}"
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def _format() -> int:
    return 2 if STRINGS else FORMAT


class StatMemo:
    """The entries of one memo: path -> ``stat_key`` of a file read and found without the name.

    ``clean(path, st)`` says whether the file may be skipped; ``note(path, st)`` records a file just
    read and rejected, unless it changed too recently to be sure (see the module docstring);
    ``forget(path)`` drops the entry of a file that could not be looked at.  Only what changes
    travels: ``take`` gives the entries noted and the paths whose old entry no longer holds since
    the last call (a worker process sends them to the parent with each chunk's answer), and
    ``entries`` builds the next memo from the paths walked.
    """

    __slots__ = ("old", "fresh", "stale", "limit_ns")

    def __init__(self, old: Optional[dict] = None, now_ns: Optional[int] = None):
        self.old = old or {}
        self.fresh: dict = {}
        self.stale: list = []
        self.limit_ns = (time.time_ns() if now_ns is None else now_ns) - RACY_NS

    def clean(self, path: str, st: os.stat_result) -> bool:
        k = self.old.get(path)
        if k is None:
            return False
        if k == stat_key(st):
            return True
        self.stale.append(path)
        return False

    def forget(self, path: str) -> None:
        if path in self.old:
            self.stale.append(path)

    def note(self, path: str, st: os.stat_result) -> None:
        if st.st_mtime_ns < self.limit_ns and st.st_ctime_ns < self.limit_ns:
            self.fresh[path] = stat_key(st)

    def take(self) -> tuple[dict, list]:
        """(entries noted, paths whose old entry no longer holds) since the last call."""
        out = self.fresh, self.stale
        self.fresh, self.stale = {}, []
        return out

    def entries(self, walked, fresh: dict, stale: set) -> dict:
        """The next memo: the old entries of the paths walked that still hold, and the ``fresh`` ones."""
        old = self.old
        out = {p: old[p] for p in walked if p in old and p not in stale}
        out.update(fresh)
        return out


def memo_key(salt: bytes, paths) -> str:
    import hashlib
    import json

    where = [os.getcwd(), sorted(os.path.abspath(p) for p in paths)]
    return hashlib.sha256(salt + b"\0stat-memo\0" + json.dumps(where).encode()).hexdigest()


def load(directory: str, key: str, read) -> StatMemo:
    """The memo stored under ``key`` (``read``: the cache's JSON reader), or an empty one."""
    d = read(directory, key)
    ok = isinstance(d, dict) and d.get("format") == _format() and isinstance(d.get("entries"), dict)
    return StatMemo(d["entries"] if ok else {})  # a malformed entry compares unequal: that file is read


def save(directory: str, key: str, memo: StatMemo, entries: dict, write) -> None:
    """Store ``entries`` (the next memo, ``StatMemo.entries``) under ``key`` when they differ from what was loaded."""
    if entries == memo.old:
        return
    write(directory, key, {"format": _format(), "entries": entries})
