"""Windowed analysis of a large Python file: the top-level definitions that name the intrinsic,
a few at a time, each window holding every module-level statement of the file.

A whole-file libcst pass holds the tree and metadata of the whole module (about a thousand
bytes of memory per byte of source); a window holds those of the module-level statements and
of the definitions it analyses, so memory is bounded by the largest definition, not the file.

A window is the file's text with every top-level definition it does not analyse replaced by a
string expression statement holding that definition's line breaks only (``0 or \"\"\"...\"\"\"``),
so every line keeps its number and every kept line its text (columns, the suppression comment
of a line, the line numbers messages quote); the edits of a window's fixes are moved back to
the file's offsets.  The window is exact by construction, and ``plan`` falls back to the whole
file (returns None) whenever it cannot show that:

* the file is split at the start of each top-level statement by a cheap scan (strings,
  comments, brackets, backslash continuations), and *every* piece must then parse alone with
  the standard library's parser into complete statements: concatenated, they are the file's
  own statements, so a split the scan got wrong (a string it misread) fails here;
* every occurrence of ``ptx_cp_async`` is an attribute call (``X.ptx_cp_async(``) inside a
  top-level ``def`` or ``class``: a module-level site, an import or read of the intrinsic as a
  value, or the tree's own ``def ptx_cp_async`` need the whole file;
* no name a top-level definition binds occurs anywhere outside that definition (a decorator,
  a macro called by a kernel, a factory called at module level, a definition bound twice: the
  passes follow such names across the file), none is a runtime helper of
  ``rules/python_api.toml`` (CPA007 reads every module-level ``def``) or an alias the fixes
  may add an import under, and the text has no ``global`` or ``nonlocal`` (a definition
  binding a module-level name);
* the text has no line break but ``\\n`` and ``\\r\\n`` (a lone ``\\r``, a form feed, a Unicode
  line separator: lines would be counted two ways), no ``from __future__`` after its start, and
  each window parses, its findings all lie inside its own definitions and its edits inside its
  kept text.

The module-level statements are analysed with every window (module-level facts, the
names the calls resolve through); windows are grouped up to ``WINDOW_CHARS`` of definitions,
and the file goes whole when the repeated module-level text would cost more than the file.

A window's tree and metadata are reference cycles, collected as soon as the window is done; the
objects that live before the first window, and what each window leaves (its findings), are frozen
meanwhile (``gc.freeze``; unfrozen when the file is done), so each of those collections walks what
its own window made, not the whole heap again (``FREEZE``; environment
``CPASYNC_MIGRATE_GC_FREEZE=0`` turns it off; it changes no result, only what each collection walks).

``QUICK`` (environment ``CPASYNC_MIGRATE_WINDOW_QUICK=0`` turns it off): the cut of the text cut last is reused
and a piece an edit left unchanged is not parsed again (``_segments``), a run's line breaks are counted
(``_gap``), each window is built from ``plan``'s list of module-level pieces, and a file whose pieces are all
``_flat`` gets its habits without the tokenizer where ``file_style.quick_habits`` answers
(``tests/test_fast_speedups.py`` checks the same results on and off).

``LINEAR`` (environment ``CPASYNC_MIGRATE_FAST_LINEAR=0`` turns it off, with ``fast.LINEAR`` and
``fast_edit.LINEAR``): a left-out run's placeholder is built from the pieces' line numbers, and the fast pass reads a
window over its own definitions (its gates skip to the name, its line starts hold each placeholder as one block), not
over the file's line count that the placeholders carry.

``ENABLED`` (environment ``CPASYNC_MIGRATE_WINDOW=0`` turns it off) is the switch;
``MIN_CHARS`` (``CPASYNC_MIGRATE_WINDOW_MIN_CHARS``, default 131072) the size from which a file
is windowed (smaller files are cheaper whole).  ``tests/test_window.py`` checks that windowed and
whole-file analyses are equal on every fixture and on files built of many definitions.
"""
from __future__ import annotations

import ast
import bisect
import gc
import os
import re
import warnings
from collections import Counter
from dataclasses import dataclass, replace
from typing import Callable, Optional

from ..findings import Analysis, Edit
from .calls import INTRINSIC

ENABLED = os.environ.get("CPASYNC_MIGRATE_WINDOW", "1") != "0"
MIN_CHARS = int(os.environ.get("CPASYNC_MIGRATE_WINDOW_MIN_CHARS", "131072"))
FREEZE = os.environ.get("CPASYNC_MIGRATE_GC_FREEZE", "1") != "0"
QUICK = os.environ.get("CPASYNC_MIGRATE_WINDOW_QUICK", "1") != "0"
# (environment CPASYNC_MIGRATE_FAST_LINEAR=0 turns it off) a left-out run's line breaks counted from line numbers
LINEAR = os.environ.get("CPASYNC_MIGRATE_FAST_LINEAR", "1") != "0"
WINDOW_CHARS = 16384  # definitions' text per window (the per-wrapper cost of libcst's metadata, amortised)

_ODD_BREAKS = re.compile("\r(?!\n)|[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_SCOPE_WORDS = re.compile(r"\b(?:global|nonlocal)\b")
_FUTURE = re.compile(r"\b__future__\b")
_TOKEN = re.compile(re.escape(INTRINSIC))
_ATTR_CALL = re.compile(r"\.[ \t]*(" + re.escape(INTRINSIC) + r")[ \t]*\(")
_WORD = re.compile(r"\w+")
# what the scan stops at: a string's quote, a comment, a bracket, a backslash, a line end
_STOP = re.compile(r"""['"#()\[\]{}\\\n]""")
_CONTINUES = re.compile(r"(?:else|elif|except|finally)\b")


@dataclass
class _Segment:
    start: int  # offset of its first line
    end: int  # offset past its last line (the next segment's start)
    line: int  # 1-based number of its first line
    kind: str = "stmt"  # "def": one top-level def or class; "stmt": module-level statements, kept in every window
    name: str = ""
    flat: bool = False  # (QUICK) no bracket of the piece spans lines (``_flat``)


def _starts(text: str) -> Optional[list[int]]:
    """Offsets of the lines that begin a top-level statement (the scan); None where it cannot tell."""
    out = [0]
    pos, depth, n = 0, 0, len(text)
    while True:
        m = _STOP.search(text, pos)
        if m is None:
            return out if depth == 0 else None
        c, i = m.group(), m.start()
        if c == "\n":
            pos = i + 1
            if depth == 0 and pos < n and text[pos] not in " \t\r\n#":
                out.append(pos)
        elif c == "#":
            j = text.find("\n", i)
            pos = n if j == -1 else j
        elif c in "([{":
            depth += 1
            pos = i + 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                return None
            pos = i + 1
        elif c == "\\":
            pos = i + (3 if text.startswith("\r\n", i + 1) else 2)  # the escaped character; a line end continues the line
        else:  # a string: its end, by the tokenizer's rules (a backslash escapes the next character)
            q = text[i:i + 3] if text.startswith(c * 3, i) else c
            j = i + len(q)
            while True:
                k = text.find(q, j) if len(q) == 3 else _single_end(text, j, q)
                if k is None or k == -1:
                    return None
                bs = 0
                while k - bs - 1 >= j and text[k - bs - 1] == "\\":
                    bs += 1
                if bs % 2 == 0:
                    break
                j = k + 1
            pos = k + len(q)


def _single_end(text: str, j: int, q: str) -> Optional[int]:
    """The closing quote of a one-line string opened before ``j``; None when a line ends first."""
    while True:
        k = text.find(q, j)
        nl = text.find("\n", j)
        if nl != -1 and (k == -1 or nl < k):
            bs = 0
            while nl - bs - 1 >= j and text[nl - bs - 1] == "\\":
                bs += 1
            if bs % 2 == 0:
                return None  # an unterminated string
            j = nl + 1
            continue
        return None if k == -1 else k


def _parse(text: str):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


# The last text cut (``_segments``) and what each of its pieces parsed to: (text, segments, piece -> (kind, name)).
_last: list = [None, None, {}]


def _segments(text: str) -> Optional[list[_Segment]]:
    """The file cut at each top-level statement; each piece checked to parse alone (None: it does not).

    ``QUICK``: the text cut last is not cut again (``plan``, then ``parses_in_pieces`` of the same file), and a
    piece that is a piece of it, unchanged, is not parsed again (a rewritten file's re-parse check parses only the
    pieces its edits changed): a piece's parse depends on its text alone."""
    if not QUICK:
        return _cut(text, {})
    if _last[0] is not None and (_last[0] is text or _last[0] == text):
        return _last[1]
    seen: dict = {}
    segs = _cut(text, _last[2], seen)
    if segs is not None:
        _last[:] = [text, segs, seen]
    return segs


def _cut(text: str, known: dict, seen: Optional[dict] = None) -> Optional[list[_Segment]]:
    """``_segments``' cut and parse of each piece (``known``: piece -> (kind, name) of pieces that parsed;
    ``seen``: filled in the same way for this text)."""
    starts = _starts(text)
    if starts is None:
        return None
    merged: list[int] = []
    decorating = False  # the last piece so far holds decorators only: the next line is theirs
    for s in starts:
        if merged and (decorating or _CONTINUES.match(text, s)):  # else/elif/except/finally continue theirs
            decorating = decorating and text.startswith("@", s)
            continue
        merged.append(s)
        decorating = text.startswith("@", s)
    segs: list[_Segment] = []
    line = 1
    for k, s in enumerate(merged):
        e = merged[k + 1] if k + 1 < len(merged) else len(text)
        piece = text[s:e]
        if k and _FUTURE.search(piece):
            return None
        got = known.get(piece)
        if got is None:
            tree = _parse(piece)
            if tree is None:
                return None
            flat = QUICK and _flat(tree, piece)
            got = ("stmt", "", flat)
            if len(tree.body) == 1 and isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                got = ("def", tree.body[0].name, flat)
            del tree
        if seen is not None:
            seen[piece] = got
        seg = _Segment(s, e, line, *got)
        segs.append(seg)
        line += piece.count("\n")
    return segs


def _flat(tree: ast.Module, piece: str) -> bool:
    """No bracket of ``piece`` (``tree``: its parse) holds a line break: every simple statement lies on one line, and
    every compound statement's header on one line (its decorators on lines of their own, one after another; its body
    on the same line or starting a line of its own after it; each ``except`` clause likewise).  Every bracket lies in
    a simple statement, a header or a decorator, so then the tokenizer gives no line break inside brackets.  False
    also where this does not tell (a ``match`` statement, comment lines between a header and its body).  A string
    literal alone as a statement (a docstring) may span lines: a line break inside a string is no line break
    between tokens."""
    lines = None
    stack = list(tree.body)
    while stack:
        st = stack.pop()
        body = getattr(st, "body", None)
        if type(body) is not list:
            if st.lineno != st.end_lineno and not _bare_string(st):
                return False
            continue
        if type(st) is ast.Match:
            return False
        if lines is None:
            lines = piece.split("\n")
        heads = [st, *getattr(st, "handlers", ())]
        if not all(_flat_header(h, lines) for h in heads) or not _flat_decorators(st, lines):
            return False
        for h in heads:
            stack.extend(h.body)
        stack.extend(getattr(st, "orelse", ()))
        stack.extend(getattr(st, "finalbody", ()))
    return True


def _bare_string(st) -> bool:
    """A statement that is a string literal and nothing else (a docstring): no bracket in it."""
    v = getattr(st, "value", None)
    return type(st) is ast.Expr and type(v) is ast.Constant and \
        (st.lineno, st.col_offset, st.end_lineno, st.end_col_offset) == \
        (v.lineno, v.col_offset, v.end_lineno, v.end_col_offset)


def _flat_header(node, lines: list) -> bool:
    first = node.body[0]
    if first.lineno == node.lineno:
        return True
    return first.lineno == node.lineno + 1 and not lines[first.lineno - 1].encode("utf-8")[:first.col_offset].strip()


def _flat_decorators(node, lines: list) -> bool:
    decorators = getattr(node, "decorator_list", ())
    for d, after in zip(decorators, [*decorators[1:], node]):
        if d.lineno != d.end_lineno or after.lineno != d.lineno + 1 or not lines[d.lineno - 1].lstrip().startswith("@"):
            return False
    return True


def parses_in_pieces(text: str) -> bool:
    """True when every piece of ``text`` (cut as ``plan`` cuts it) parses alone, so the whole text parses
    (complete statements, concatenated); False says nothing (a piece may still parse in context)."""
    return ENABLED and not _ODD_BREAKS.search(text) and _segments(text) is not None


@dataclass
class Window:
    text: str
    pieces: list  # (offset in the window, offset in the file, length) of each kept stretch
    lines: list  # (first line, last line) of each definition it analyses


def plan(text: str, options, min_chars: Optional[int] = None) -> Optional[list[Window]]:
    """The windows of ``text``; None when the whole file must be analysed (see the module's page)."""
    if len(text) < (MIN_CHARS if min_chars is None else min_chars):
        return None
    if _ODD_BREAKS.search(text) or _SCOPE_WORDS.search(text):
        return None
    static = (getattr(options.rules, "shared_memory", None) or {}).get("static_merge_config")
    if static and static in text:  # smem.py asks whether the file mentions the pass option anywhere
        return None
    segs = _segments(text)
    if segs is None:
        return None
    offsets = [s.start for s in segs]
    hits = [m.start() for m in _TOKEN.finditer(text)]
    if not hits or {m.start(1) for m in _ATTR_CALL.finditer(text)} != set(hits):
        return None
    wanted = set()
    for h in hits:
        k = bisect.bisect_right(offsets, h) - 1
        if segs[k].kind != "def":
            return None
        wanted.add(k)
    if not _names_closed(text, segs, options):
        return None
    groups: list[list[int]] = []
    size = 0
    for k in sorted(wanted):
        n = segs[k].end - segs[k].start
        if not groups or size + n > WINDOW_CHARS:
            groups.append([])
            size = 0
        groups[-1].append(k)
        size += n
    kept = sum(s.end - s.start for s in segs if s.kind == "stmt")
    if len(groups) * kept > len(text):
        return None
    if QUICK:
        stmts, crlf = [k for k, s in enumerate(segs) if s.kind == "stmt"], "\r\n" in text
        return [_window(text, segs, set(g), stmts, crlf) for g in groups]
    return [_window(text, segs, set(g)) for g in groups]


def _names_closed(text: str, segs: list[_Segment], options) -> bool:
    """No name a top-level definition binds is read outside it, nor is one the whole file's checks ask for."""
    facts = getattr(options.rules, "python_api", None) or {}
    helpers = set(facts.get("helpers", {}).get("names", []))
    alias = getattr(options.rules, "emit_alias", None)
    fallback = getattr(options.rules, "emit_fallback_alias", None)
    fallback_re = re.compile(re.escape(fallback) + r"\d*") if fallback else None
    total = None
    for s in segs:
        if s.kind != "def":
            continue
        name = s.name
        if name == INTRINSIC or name in helpers or name == alias or fallback_re and fallback_re.fullmatch(name):
            return False
        if total is None:
            total = Counter(_WORD.findall(text))
        own = sum(1 for w in _WORD.findall(text, s.start, s.end) if w == name)
        if total[name] != own:
            return False
    return True


def _window(text: str, segs: list[_Segment], group: set, stmts: Optional[list] = None,
            crlf: Optional[bool] = None) -> Window:
    """The window of the definitions ``group`` (indices into ``segs``).  ``QUICK``: ``stmts`` (the module-level
    pieces' indices) and ``crlf`` (the text holds ``\\r\\n``) come from ``plan``, found once per file, so a window
    costs its own pieces and runs, not a look at every piece and the whole text."""
    if stmts is None:
        kept = [k for k, s in enumerate(segs) if s.kind == "stmt" or k in group]
    else:
        kept = sorted(set(stmts) | group)
    parts: list[str] = []
    pieces: list = []
    lines: list = []
    at = 0
    expected = 0  # the definitions after the last kept piece are left out: nothing after them moves
    for k in kept:
        if k > expected and LINEAR and crlf is False:  # (no "\r" in the text: ``_ODD_BREAKS``) counted by line numbers
            piece = '0 or """' + "\n" * (segs[k].line - segs[expected].line - 1) + '"""\n'
            parts.append(piece)
            at += len(piece)
        elif k > expected:  # a run of definitions left out: one string holding their line breaks
            piece = _gap(text[segs[expected].start:segs[k - 1].end])
            parts.append(piece)
            at += len(piece)
        s = segs[k]
        piece = text[s.start:s.end]
        if pieces and pieces[-1][1] + pieces[-1][2] == s.start and pieces[-1][0] + pieces[-1][2] == at:
            w, f, n = pieces[-1]
            pieces[-1] = (w, f, n + len(piece))
        else:
            pieces.append((at, s.start, len(piece)))
        if k in group:
            lines.append((s.line, s.line + piece.count("\n")))
        parts.append(piece)
        at += len(piece)
        expected = k + 1
    out = "".join(parts)
    if ("\r\n" in text if crlf is None else crlf) and "\r\n" not in out:  # the passes read the file's newline
        out += '0 or """\r\n"""\r\n'  # (only after a tail left out: the last kept piece ends its line)
    return Window(out, pieces, lines)


def _gap(gap: str) -> str:
    """The string expression statement holding the line breaks of ``gap`` (``QUICK``: counted, where every break
    is ``\\n``, rather than listed one by one)."""
    if QUICK and "\r" not in gap:
        n = gap.count("\n") + (0 if gap.endswith("\n") else 1)  # (the file's last line: no break of its own)
        return '0 or """' + "\n" * (n - 1) + '"""' + ("\n" if gap.endswith("\n") else "")
    breaks = ["\r\n" if x.endswith("\r") else "\n" for x in gap.split("\n")[:-1]]
    if not gap.endswith("\n"):
        breaks.append("")  # the file's last line
    return '0 or """' + "".join(breaks[:-1]) + '"""' + breaks[-1]


def _to_file(w: Window, offset: int) -> Optional[int]:
    for ws, fs, n in w.pieces:
        if ws <= offset <= ws + n:
            return fs + offset - ws
    return None


def analyze(text: str, options, analyze_text: Callable[[str, object], Analysis],
            min_chars: Optional[int] = None) -> Optional[Analysis]:
    """The file's analysis from its windows, or None when the whole file must be analysed.
    ``analyze_text(window, style)`` analyses one window's text, laid out by the whole file's ``style``."""
    if not ENABLED:
        return None
    windows = plan(text, options, min_chars)
    if windows is None:
        return None
    from .file_style import FileStyle

    # (QUICK) no bracket of the file spans lines: the style reads its habits without the tokenizer where that is exact
    style = FileStyle(text, flat=QUICK and all(s.flat for s in (_segments(text) or ())))
    frozen = FREEZE and gc.get_freeze_count() == 0  # (a freeze made by someone else is left as it is)
    if frozen:
        gc.freeze()  # what lives before the windows is not walked again by each window's collection
    try:
        return _by_windows(windows, style, analyze_text, frozen)
    finally:
        if frozen:
            gc.unfreeze()


def _by_windows(windows: list, style, analyze_text, frozen: bool) -> Optional[Analysis]:
    findings: list = []
    migrated: set = set()
    for w in windows:
        a = analyze_text(w.text, style)
        if a.error is not None:
            return None
        for f in a.findings:
            if not any(lo <= f.line and f.end_line <= hi for lo, hi in w.lines):
                return None
            if f.fix is not None:
                edits = []
                for e in f.fix.edits:
                    s, t = _to_file(w, e.start), _to_file(w, e.end)
                    if s is None or t is None or t - s != e.end - e.start:
                        return None
                    edits.append(Edit(s, t, e.replacement))
                f.fix = replace(f.fix, edits=edits)
            findings.append(f)
        migrated.update(a.migrated)
        del a
        gc.collect()  # a window's tree and metadata are cycles: freed now, not at some later full collection
        if frozen:
            gc.freeze()  # and what it left (its findings) is not walked by the next windows' collections
    findings.sort(key=lambda f: (f.line, f.column))
    return Analysis(findings, migrated=sorted(migrated))
