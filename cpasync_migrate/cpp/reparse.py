"""The rewritten text's parse for the engine's re-parse check, from the tree of the file just analysed.

What: :func:`remember` keeps the whole-file tree of the last C++ file analysed (one per process);
:func:`tree_of_rewrite` gives the parse tree of a rewrite of that text, parsed incrementally from that
tree: the one edit from the texts' common start to their common end is told to tree-sitter, which parses
again only what it touches.  Only a tree without ERROR and MISSING nodes is used (the rewrite the check
accepts); where the incremental parse has one, the text is parsed whole, since tree-sitter's error recovery
need not place errors alike in both parses.

Why: in ``--check`` the engine applies the fixes it chose and asks :func:`cpasync_migrate.cpp.reparse_problem`
whether that text parses no worse than the original; the fixes the analyzer checked together hold its unsafe
ones too, so the engine's text is another one and was parsed whole a second time.  tree-sitter's
incremental parse gives the tree a fresh parse gives (``tests/test_cpp_reparse.py`` compares the two on
every fixture's rewrite, and on generated edits).

``ENABLED`` (environment ``CPASYNC_MIGRATE_CPP_REPARSE_FROM_TREE=0`` turns it off: the rewrite is parsed
whole) is the switch.
"""
from __future__ import annotations

import os
from .source import parse_bytes

ENABLED = os.environ.get("CPASYNC_MIGRATE_CPP_REPARSE_FROM_TREE", "1") != "0"

_LAST: list = []  # [(text, tree)]: the last whole-file parse of an analysis


def remember(text: str, tree) -> None:
    """``tree`` is the whole-file parse of ``text`` (the analyzer's); the one kept replaces the one before."""
    if ENABLED:
        _LAST[:] = [(text, tree)]


def forget() -> None:
    _LAST.clear()


def _common_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common start of ``a`` and ``b`` (slices compared in C, halving the span)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: bytes, b: bytes, limit: int) -> int:
    """The length of the longest common end of ``a`` and ``b``, at most ``limit``."""
    lo, hi = 0, limit
    na, nb = len(a), len(b)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[na - mid:na - lo] == b[nb - mid:nb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _point(data: bytes, b: int) -> tuple[int, int]:
    return (data.count(b"\n", 0, b), b - (data.rfind(b"\n", 0, b) + 1))


def tree_of_rewrite(old_text: str, new_text: str):
    """The root node of ``new_text``'s parse, incrementally from the remembered tree of ``old_text``; None
    when that tree is not the one remembered, when the switch is off, or when that parse has an ERROR or
    MISSING node: the caller parses ``new_text`` whole."""
    if not ENABLED or not _LAST or _LAST[0][0] != old_text:
        return None
    tree = _LAST[0][1]
    old = old_text.encode("utf-8", "surrogatepass")
    new = new_text.encode("utf-8", "surrogatepass")
    start = _common_prefix(old, new)
    while start > 0 and (old[start] if start < len(old) else 0) & 0xC0 == 0x80:
        start -= 1  # the edit starts at a character's first byte
    tail = _common_suffix(old, new, min(len(old), len(new)) - start)
    while tail > 0 and old[len(old) - tail] & 0xC0 == 0x80:
        tail -= 1  # ... and ends at one
    old_end, new_end = len(old) - tail, len(new) - tail
    edited = tree.copy()
    edited.edit(start_byte=start, old_end_byte=old_end, new_end_byte=new_end, start_point=_point(old, start),
                old_end_point=_point(old, old_end), new_end_point=_point(new, new_end))
    root = parse_bytes(new, edited).root_node
    # tree-sitter's error recovery may place an error differently in an incremental parse than in a fresh one:
    # a tree with one is not used (the caller parses the text whole and counts the fresh parse's errors)
    return None if root.has_error else root

