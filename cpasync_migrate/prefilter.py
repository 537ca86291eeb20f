"""The byte prefilter: which files of the tree are worth parsing at all.

Only files that contain the intrinsic's name (or a helper's, ``files.NEEDLES``) go on to a front
end.  This runs once per file of the tree, in the worker processes.  With a stat memo in ``MEMO``
(``stat_memo.py``; the runner sets it before the workers are forked), a file an earlier run read
and rejected, unchanged since, is not read again.
"""
from __future__ import annotations

import os
from typing import Optional

from . import files

_BLOCK = 1 << 18  # bytes per read; a file that fills a whole block is searched through a memory map
_MMAP = True  # tests turn the memory map off to exercise the block loop
_READV = hasattr(os, "readv")
MEMO = None  # a stat_memo.StatMemo, or None: every file is read


def select(chunk):
    """The (path, explicit) pairs of a chunk that are worth parsing: the byte prefilter.

    Only files that contain the intrinsic's name are parsed.  A file is read into one
    reused buffer (no new bytes object per file); one that fills the buffer is searched
    whole through a memory map, or block by block where that fails.  A file that cannot
    be opened or read is kept: the reader reports it.  This loop runs once per file of
    the tree, so it is written flat, with everything it uses in local variables.
    """
    n0, n1, n2, n3 = files.NEEDLES
    common = files.COMMON  # in every needle: a file without it holds none (one pass instead of three)
    block = _BLOCK
    buf = _buffer()
    find = buf.find
    opn, cls, rd = os.open, os.close, os.readv if _READV else None
    flags = files._OPEN_READ  # non-blocking: a FIFO put in place of a file after the walk cannot stall the run
    memo = MEMO
    st = None
    out = []
    with memoryview(buf) as mv:
        bufs = [mv[:block]]
        for pe in chunk:
            if pe[1]:
                out.append(pe)
                continue
            if memo is not None:
                try:
                    st = os.stat(pe[0])
                except OSError:
                    st = None
                    memo.forget(pe[0])
                if st is not None and memo.clean(pe[0], st):
                    continue
            try:
                fd = opn(pe[0], flags)
            except OSError:
                out.append(pe)
                continue
            try:
                if rd is not None:
                    n = rd(fd, bufs)
                else:
                    data = os.read(fd, block)
                    n = len(data)
                    mv[:n] = data
                hit = ((find(common, 0, n) != -1
                        and (find(n0, 0, n) != -1 or find(n1, 0, n) != -1 or find(n2, 0, n) != -1
                             or find(n3, 0, n) != -1))
                       or (n == block and _rest_has(fd, buf, block)))
            except OSError:
                hit = True
            finally:
                cls(fd)
            if hit:
                out.append(pe)
            elif st is not None:
                memo.note(pe[0], st)
    return out


def _rest_has(fd: int, buf: bytearray, block: int) -> bool:
    """After a first block of ``block`` bytes (already in ``buf``) without the name: the rest of the file."""
    needles = files.NEEDLES
    keep = max(map(len, needles)) - 1
    import stat

    if not stat.S_ISREG(os.fstat(fd).st_mode):
        return True  # a device or pipe (put there after the walk) never ends: the reader reports it
    if _MMAP:
        import mmap

        try:  # only the parts that hold data: a sparse file's holes are zeros (files.data_ranges)
            ranges = files.data_ranges(fd, max(0, block - keep))
            if not ranges:
                return False
            with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as m:
                return any(m.find(n, a, b) != -1 for a, b in ranges for n in needles)
        except (OSError, ValueError):
            pass  # not mappable (a pipe, a special file): read on
    os.lseek(fd, block, os.SEEK_SET)
    with memoryview(buf) as mv:
        have = min(keep, block)  # the last bytes of the previous block go in front of the next
        buf[:have] = buf[block - have : block]
        while True:
            data = os.read(fd, block)
            if not data:
                return False
            n = len(data)
            mv[have : have + n] = data
            if any(buf.find(nd, 0, have + n) != -1 for nd in needles):
                return True
            tail = max(0, have + n - keep)
            buf[: have + n - tail] = buf[tail : have + n]
            have = have + n - tail


_BUF: Optional[bytearray] = None


def _buffer() -> bytearray:
    global _BUF
    size = _BLOCK + max(map(len, files.NEEDLES))
    if _BUF is None or len(_BUF) != size:
        _BUF = bytearray(size)
    return _BUF


def worth_parsing(path: str, explicit: bool) -> bool:
    """The byte prefilter for one file."""
    return bool(select([(path, explicit)]))
