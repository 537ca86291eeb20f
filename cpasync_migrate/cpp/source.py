"""Parsing and position helpers for the C++ front end.

tree-sitter works on the UTF-8 bytes of a file; findings and edits use
character offsets into the decoded text.  :class:`Source` holds both and
converts between them.
"""
from __future__ import annotations

import bisect
import os
import re
from collections import OrderedDict
from functools import lru_cache
from typing import Iterator, Optional

import tree_sitter

from ..findings import line_starts, offset_to_linecol


@lru_cache(maxsize=1)
def _language() -> tree_sitter.Language:
    return tree_sitter.Language(_cpp_language_pointer())


def _cpp_language_pointer():
    """``tree_sitter_cpp.language()``.

    The package's ``__init__`` imports ``importlib.resources`` (and through it ``tempfile``,
    ``shutil``, ``zipfile`` ...) only to serve its bundled query files, which this tool does
    not use: a third of the front end's start-up in every worker.  So the compiled binding is
    loaded from the package's folder directly; anything unusual falls back to the import.
    """
    import sys

    mod = sys.modules.get("tree_sitter_cpp")
    if mod is None:
        try:
            import importlib.machinery
            import importlib.util

            spec = importlib.util.find_spec("tree_sitter_cpp")
            for folder in (spec.submodule_search_locations or []) if spec else []:
                for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                    path = os.path.join(folder, "_binding" + suffix)
                    if os.path.isfile(path):
                        loader = importlib.machinery.ExtensionFileLoader("tree_sitter_cpp._binding", path)
                        binding = importlib.util.module_from_spec(
                            importlib.util.spec_from_file_location("tree_sitter_cpp._binding", path, loader=loader))
                        loader.exec_module(binding)
                        return binding.language()
        except Exception:  # noqa: BLE001 - any surprise: the plain import below
            pass
    import tree_sitter_cpp

    return tree_sitter_cpp.language()


def parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(_language())


def parse_bytes(data: bytes, old_tree: Optional[tree_sitter.Tree] = None) -> tree_sitter.Tree:
    """``data`` parsed whole; with ``old_tree`` (a parse of the same bytes over some of their ranges, window.py)
    tree-sitter reuses that tree's nodes where the ranges did not change, and the tree is the one a fresh
    parse gives (tests/test_cpp_window.py compares both)."""
    if old_tree is None:
        return parser().parse(data)
    return parser().parse(data, old_tree)


def parse_ranges(data: bytes, ranges: list[tuple[int, int]]) -> tree_sitter.Tree:
    """``data`` parsed over the byte ranges only (ordered, disjoint): tree-sitter reads them as one text
    and every node keeps its offsets (and rows and columns) in ``data`` (window.py)."""
    at = [0, 0]  # (byte, row) of the last point: the ranges are ordered, so the rows are counted once

    def point(b: int) -> tuple[int, int]:
        at[1] += data.count(b"\n", at[0], b)
        at[0] = b
        return (at[1], b - (data.rfind(b"\n", 0, b) + 1))

    p = parser()
    spans = []
    for a, b in ranges:
        pa = point(a)
        spans.append(tree_sitter.Range(pa, point(b), a, b))
    p.included_ranges = spans
    return p.parse(data)


# A file with non-ASCII text maps byte offsets to characters through the positions of its
# non-ASCII characters only (found by a regular expression, in C), instead of one entry per
# character built in a Python loop (most of the C++ front end's time on such a file).
# ``CPASYNC_MIGRATE_SPARSE_OFFSETS=0`` switches back to the per-character map;
# tests/test_cpp_offsets.py checks that both give the same offsets.
SPARSE_OFFSETS = os.environ.get("CPASYNC_MIGRATE_SPARSE_OFFSETS", "1") != "0"
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


class _DenseOffsets:
    """Character offset of a byte offset, from the byte offset of every character (and of the end)."""

    def __init__(self, text: str):
        offs = []
        pos = 0
        for ch in text:
            offs.append(pos)
            pos += len(ch.encode("utf-8", "surrogatepass"))
        offs.append(pos)
        self.offs = offs

    def char(self, byte_offset: int) -> int:
        return bisect.bisect_left(self.offs, byte_offset)


class _SparseOffsets:
    """Character offset of a byte offset, from the non-ASCII characters alone.

    ``ends[i]``: the byte offset just after the i-th non-ASCII character; ``extra[i]``: the bytes
    beyond one per character up to and including it.  A byte offset ``b`` at a character boundary
    has ``k`` non-ASCII characters ending at or before it, and its character offset is
    ``b - extra[k - 1]``.
    """

    def __init__(self, text: str):
        ends, extra = [], []
        total = 0
        for m in _NON_ASCII.finditer(text):
            ch = m.group()
            n = len(ch.encode("utf-8", "surrogatepass"))
            total += n - 1
            # it starts at byte m.start() + (extra before it) and ends n bytes later
            ends.append(m.start() + total + 1)
            extra.append(total)
        self.ends, self.extra = ends, extra

    def char(self, byte_offset: int) -> int:
        k = bisect.bisect_right(self.ends, byte_offset)
        return byte_offset - (self.extra[k - 1] if k else 0)


class Source:
    """One file's text, its UTF-8 bytes, its parse tree and offset maps.

    With ``window`` (byte ranges, window.py) only those ranges are parsed; the text, the bytes and
    every position stay the whole file's.  ``old_tree``: such a window's tree, reused by the whole
    file's parse (:func:`parse_bytes`)."""

    def __init__(self, text: str, window: Optional[list] = None, old_tree=None, data: Optional[bytes] = None):
        self.text = text
        self.data = text.encode("utf-8", "surrogatepass") if data is None else data
        self.tree = parse_bytes(self.data, old_tree) if window is None else parse_ranges(self.data, window)
        self.root = self.tree.root_node
        self._starts: Optional[list[int]] = None
        self._pads: dict = {}  # line -> its padding (column_pad, PAD_MEMO)
        if len(self.data) == len(text):
            self._b2c = None
        elif SPARSE_OFFSETS:
            self._b2c = _SparseOffsets(text)
        else:
            self._b2c = _DenseOffsets(text)

    # -- positions -------------------------------------------------------
    @property
    def starts(self) -> list[int]:
        """Character offset of each line's start (computed when first asked: most files report nothing)."""
        if self._starts is None:
            self._starts = line_starts(self.text)
        return self._starts

    def char_offset(self, byte_offset: int) -> int:
        """Character offset of a byte offset (a character boundary)."""
        if self._b2c is None:
            return byte_offset
        return self._b2c.char(byte_offset)

    def span(self, node) -> tuple[int, int]:
        return self.char_offset(node.start_byte), self.char_offset(node.end_byte)

    def linecol(self, char_offset: int) -> tuple[int, int]:
        return offset_to_linecol(self.starts, char_offset)

    def line_text(self, line: int) -> str:
        start = self.starts[line - 1]
        end = self.starts[line] - 1 if line < len(self.starts) else len(self.text)
        return self.text[start:end]

    def text_of(self, node) -> str:
        """The text of a node."""
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "surrogatepass")

    def indent_of_line(self, char_offset: int) -> str:
        """Leading whitespace of the line holding ``char_offset``."""
        line, _ = self.linecol(char_offset)
        lt = self.line_text(line)
        return lt[: len(lt) - len(lt.lstrip(" \t"))]

    def column_pad(self, char_offset: int) -> str:
        """Whitespace that reaches the column of ``char_offset`` on its line,
        keeping the line's own tabs."""
        line, col = self.linecol(char_offset)
        if PAD_MEMO:  # the line's padding made once, in C: n sites on one long line cost n slices
            pad = self._pads.get(line)
            if pad is None:
                pad = self._pads[line] = _NOT_TAB.sub(" ", self.line_text(line))
            return pad[: col - 1]
        prefix = self.line_text(line)[: col - 1]
        return "".join(ch if ch == "\t" else " " for ch in prefix)


# A switch (CPASYNC_MIGRATE_CPP_PAD_MEMO=0: each site's padding built a character at a time from its line, as
# before; a measuring switch).  On: each line's padding made once by a regular expression and sliced per site
# (1,600 builders on one line took 13 s).  tests/test_cpp_speedups.py checks the same paddings on and off.
PAD_MEMO = os.environ.get("CPASYNC_MIGRATE_CPP_PAD_MEMO", "1") != "0"
_NOT_TAB = re.compile(r"[^\t]")


_KIND_QUERIES: dict = {}

# One query for every kind the front end asks for (CPASYNC_MIGRATE_CPP_ONE_QUERY=0: one query per tuple of kinds,
# as before).  Compiling a tree-sitter query costs about 8 ms whatever it holds (ts_query_new analyses the
# grammar), and a process asked for five tuples: 40 ms per worker, more than the extra nodes one query hands back
# before they are told apart by type.  tests/test_cpp_speedups.py checks the same analyses on and off.
ONE_QUERY = os.environ.get("CPASYNC_MIGRATE_CPP_ONE_QUERY", "1") != "0"
KINDS = ("function_definition", "function_declarator", "preproc_def", "preproc_function_def", "declaration",
         "if_statement", "call_expression", "using_declaration", "field_declaration", "field_initializer")


def _query(types: tuple[str, ...]):
    """(the query that finds nodes of ``types``, the types to keep of what it finds, or None: all of it)."""
    if ONE_QUERY and all(t in KINDS for t in types):
        key, keep = KINDS, frozenset(types)
    else:
        key, keep = types, None
    query = _KIND_QUERIES.get(key)
    if query is None:
        src = "[" + " ".join(f"({t})" for t in key) + "] @n"  # one pattern: compiles faster than several
        query = _KIND_QUERIES[key] = tree_sitter.Query(_language(), src)
    return query, keep


def _captured(query, keep, root, lo=None, hi=None) -> list:
    cursor = tree_sitter.QueryCursor(query)
    if lo is not None:
        cursor.set_byte_range(lo, hi)
    found = cursor.captures(root).get("n", [])
    return found if keep is None else [n for n in found if n.type in keep]


def nodes_of_types(root, types: tuple[str, ...], ranges: Optional[list[tuple[int, int]]] = None) -> list:
    """Nodes of the given types below ``root``, in document order (a tree-sitter query: the walk runs in C).

    With ``ranges`` (byte ranges), only the nodes that overlap one of them: those inside it
    and those around it.
    """
    query, keep = _query(types)
    if ranges is None:
        found = _captured(query, keep, root)
    else:
        seen: dict = {}
        for lo, hi in ranges:
            for n in _captured(query, keep, root, lo, hi):
                seen[n.id] = n
        found = list(seen.values())
    return sorted(found, key=lambda n: (n.start_byte, -n.end_byte))


def whole_words(names) -> "re.Pattern":
    """A search for any of ``names`` (strings or bytes) as a whole C++ name in bytes."""
    return re.compile(rb"(?<![A-Za-z0-9_])(?:" + b"|".join(sorted(
        re.escape(n if isinstance(n, bytes) else n.encode("utf-8", "surrogatepass")) for n in names))
        + rb")(?![A-Za-z0-9_])")


def nodes_around(root, types: tuple[str, ...], ranges) -> list[list]:
    """For each byte range ``(lo, hi)``, the nodes of the given types below ``root`` that hold all of it (those
    around it, as a tree-sitter query finds them: in C, descending only into the nodes over the range;
    ``Node.parent`` would search down from the root once per step up)."""
    query, keep = _query(types)
    return [[n for n in _captured(query, keep, root, lo, hi) if n.start_byte <= lo and hi <= n.end_byte]
            for lo, hi in ranges]


# nodes_around_any: what the queries so far handed back, past which the ranges left are asked by one query over
# them all (per range asked, and in all)
AROUND_QUOTA_PER_RANGE = 64
AROUND_QUOTA = 4096


def nodes_around_any(root, types: tuple[str, ...], ranges) -> list:
    """The nodes of the given types below ``root`` that hold at least one of the byte ranges, each once, in no
    particular order.  ``ranges`` are sorted by start and their ends too (ranges of one width, such as the
    occurrences of a name).

    One query per range, as :func:`nodes_around`, while those stay small; where ranges lie deep inside one
    another (an ``else if`` chain of a thousand branches, a thousand nested ``if``s) each query hands back every
    node around its range, so past a quota the ranges left are asked by one query over all of them, its nodes
    kept where they hold one.  Either way the same nodes, in time linear in the file."""
    query, keep = _query(types)
    found: dict = {}
    spent = 0
    for k, (lo, hi) in enumerate(ranges):
        if spent > AROUND_QUOTA_PER_RANGE * k + AROUND_QUOTA:
            rest = ranges[k:]
            starts = [a for a, _ in rest]
            for n in _captured(query, keep, root, rest[0][0], rest[-1][1]):
                j = bisect.bisect_left(starts, n.start_byte)  # the first range starting in it ends first
                if j < len(rest) and rest[j][1] <= n.end_byte:
                    found[n.id] = n
            break
        got = _captured(query, None, root, lo, hi)  # every node the query hands back counts against the quota,
        spent += len(got)  # those of kinds not asked for too (the one query of KINDS: an `else if` chain's ifs)
        for n in got:
            if (keep is None or n.type in keep) and n.start_byte <= lo and hi <= n.end_byte:
                found[n.id] = n
    return list(found.values())


def walk(node) -> Iterator:
    """All nodes below ``node`` (itself included), in document order."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def named(node) -> list:
    """Named children, comments left out."""
    return [c for c in node.named_children if c.type != "comment"]


def error_nodes(root) -> list:
    out = []
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "ERROR" or n.is_missing:
            out.append(n)
            continue
        if n.has_error:
            stack.extend(n.children)
    return out


_ERROR_MEMO: "OrderedDict[str, tuple[int, Optional[int]]]" = OrderedDict()
_ERROR_MEMO_SIZE = 4


def error_summary(text: str, root=None, rewrite_of: Optional[str] = None) -> tuple[int, Optional[int]]:
    """(number of ERROR/MISSING nodes, 1-based line of the first) for ``text``.

    Remembers the last few texts: the analyzer counts the errors of the original and of
    the fully rewritten text, and the engine's final re-parse check asks again for both.
    ``root`` is the text's parse tree when the caller has it already; ``rewrite_of``: the text
    ``text`` rewrites, whose tree reparse.py may hold (``text`` is then parsed from it).
    """
    hit = _ERROR_MEMO.get(text)
    if hit is not None:
        _ERROR_MEMO.move_to_end(text)
        return hit
    if root is None and rewrite_of is not None:
        from .reparse import tree_of_rewrite

        root = tree_of_rewrite(rewrite_of, text)
    if root is None:
        root = parse_bytes(text.encode("utf-8", "surrogatepass")).root_node
    errs = error_nodes(root)
    first = min(errs, key=lambda n: n.start_byte).start_point[0] + 1 if errs else None
    _ERROR_MEMO[text] = hit = (len(errs), first)
    if len(_ERROR_MEMO) > _ERROR_MEMO_SIZE:
        _ERROR_MEMO.popitem(last=False)
    return hit


def ancestors(node) -> Iterator:
    p = node.parent
    while p is not None:
        yield p
        p = p.parent


def squash(s: str) -> str:
    """Text with all whitespace removed (for comparing spellings)."""
    return "".join(s.split())
