"""Suppression comments: by code, for a line, a range of lines or a whole file, and the ones that suppress nothing.

Forms (``#`` in Python, ``//`` or ``/*`` in C++)::

    # cpasync-migrate: ignore                   every site that starts on this line
    # cpasync-migrate: ignore[CPA001,CPA003]    only those codes, on this line
    # cpasync-migrate: ignore-file              every site in the file (a comment anywhere in it)
    # cpasync-migrate: ignore-file[CPA104]      only those codes, in the whole file
    # cpasync-migrate: off                      every site from this line ...
    # cpasync-migrate: on                       ... to this one (no `on`: to the end of the file)
    # cpasync-migrate: off[CPA001]              a range for those codes only

The spelling (``cpasync-migrate: ignore``) is ``[suppress] comment`` of ``rules/namespaces.toml``: its part
before ``:`` is the marker, its word after it the line form's (``-file``, ``off`` and ``on`` are built on them).

Only comments count: Python's are read with ``tokenize``, C++'s with a scanner that knows string, character
and raw string literals, so a marker inside a string suppresses nothing.  A file whose text holds the marker
anywhere is analysed once more with every marker masked (the same number of characters, so the fixes' offsets
hold for the real text; the front ends then suppress nothing themselves) and the comments found here are
applied, code by code.  A comment that suppresses nothing (no site of that code starts on its line, lies in
its range or is in the file; a code this tool does not have; an ``on`` with no ``off`` before it) is reported
as CPA010, as ruff's RUF100 does, also in a file that does not name the intrinsic (the byte prefilter lets a
file with the marker through).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Optional

from .codes import FILE_ERROR, UNUSED_SUPPRESSION
from .findings import Analysis, Finding, Status

_MASK_CHARS = ";,.="


@dataclass
class Directive:
    line: int
    column: int
    end_column: int
    file_level: bool
    codes: Optional[tuple]  # None: every code
    used: set
    kind: str = "ignore"  # "ignore", "off" or "on"
    end_line: Optional[int] = None  # "off": the line of its "on" (None: the end of the file)
    paired: bool = field(default=False)  # "on": an "off" before it ends at it

    def covers(self, code: str) -> bool:
        return self.codes is None or code in self.codes


@dataclass(frozen=True)
class Spelling:
    marker: str  # "cpasync-migrate"
    word: str  # "ignore"
    rx: re.Pattern  # one directive in a comment's text

    @property
    def marker_rx(self) -> re.Pattern:
        return re.compile(re.escape(self.marker) + r":")


@lru_cache(maxsize=8)
def spelling(comment: Optional[str] = None) -> Spelling:
    """The spelling of ``comment`` (None: the rules' ``[suppress] comment``)."""
    if comment is None:
        from .rules import suppress_comment

        comment = suppress_comment()
    marker, _, word = comment.partition(":")
    marker, word = marker.strip(), word.strip()
    rx = re.compile(rf"(?:#|//|/\*)\s*{re.escape(marker)}:\s*(?:({re.escape(word)})(-file)?|(off|on))\b"
                    r"(?:\[([^\]\n]*)\])?")
    return Spelling(marker, word, rx)


def _comments_py(text: str):
    """(line, column, comment text) of each comment; a text tokenize cannot read: none (libcst's parse
    error is then the file's finding)."""
    import io
    import tokenize

    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0], tok.start[1], tok.string))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return out


_CPP_TOKEN_RX = (r'//[^\n]*|/\*.*?(?:\*/|\Z)|R"([^()\\\s]{0,16})\((?:.|\n)*?\)\1"|"(?:\\.|[^"\\\n])*"?'
                 r"|'(?:\\.|[^'\\\n])*'?")


@lru_cache(maxsize=1)
def _cpp_token() -> re.Pattern:
    """The C++ comment and literal pattern, compiled on first use (a run without suppression comments never
    asks)."""
    return re.compile(_CPP_TOKEN_RX, re.S)


def _comments_cpp(text: str):
    """(line, column, comment text) of each ``//`` and ``/* */`` comment, string, character and raw string
    literals skipped (a ``//`` inside one is no comment)."""
    out = []
    starts = None
    for m in _cpp_token().finditer(text):
        t = m.group(0)
        if t.startswith(("//", "/*")):
            if starts is None:
                from .findings import line_starts

                starts = line_starts(text)
            import bisect

            ln = bisect.bisect_right(starts, m.start())
            out.append((ln, m.start() - starts[ln - 1], t))
    return out


def directives(text: str, language: str, comment: Optional[str] = None) -> list[Directive]:
    sp = spelling(comment)
    if sp.marker not in text:
        return []
    out = []
    places = _comments_py(text) if language == "python" else _comments_cpp(text)
    for line, col, chunk in places:
        if sp.marker not in chunk:
            continue
        for m in sp.rx.finditer(chunk):
            codes = None
            if m.group(4) is not None:
                codes = tuple(c.strip().upper() for c in m.group(4).split(",") if c.strip())
            kind = m.group(3) or "ignore"
            out.append(Directive(line, col + m.start() + 1, col + m.end() + 1, bool(m.group(2)), codes, set(), kind))
    # pair each "off" with the next "on" (none: to the end of the file)
    open_off = None
    for d in out:
        if d.kind == "off" and open_off is None:
            open_off = d
        elif d.kind == "on" and open_off is not None:
            open_off.end_line, d.paired, open_off = d.line, True, None
    return out


def _masked(text: str, sp: Spelling) -> Optional[str]:
    """The text with every marker made unreadable (same length), or None where no mask fits."""
    mask = next((sp.marker + c for c in _MASK_CHARS if sp.marker + c not in text), None)
    if mask is None:
        return None
    return sp.marker_rx.sub(mask, text), mask


def _suppress(f: Finding, language: str) -> None:
    f.status = Status.SUPPRESSED
    f.fix = None
    if language == "cpp":  # as the C++ front end words a suppressed site
        f.message = f.message.split("; fix: ")[0] + "; suppressed by a comment"


def resolve(text: str, path: str, language: str, analysis: Analysis,
            analyze: Callable[[str], Analysis], rules=None) -> Analysis:
    """The analysis with the file's suppression comments applied code by code, and CPA010 findings
    for the comments that suppress nothing.  ``analyze`` analyses a text of this file; ``rules`` gives the
    comment's spelling (``[suppress] comment``)."""
    if analysis.error:
        return analysis
    comment = getattr(rules, "suppress_comment", None)  # (None: the rules of this process)
    sp = spelling(comment)
    if sp.marker + ":" not in text:
        return analysis
    ds = directives(text, language, comment)
    got = _masked(text, sp)
    if got is not None:
        masked, mask = got
        again = analyze(masked)
        if not again.error:
            for f in again.findings:
                if f.fix is not None:
                    for i, e in enumerate(f.fix.edits):
                        if mask in e.replacement:
                            f.fix.edits[i] = type(e)(e.start, e.end, e.replacement.replace(mask, sp.marker + ":"))
            analysis = again
    by_line: dict = {}
    for d in ds:
        if d.kind == "ignore" and not d.file_level:
            by_line.setdefault(d.line, []).append(d)
    ranges = [d for d in ds if d.kind == "off"]
    for f in analysis.findings:
        if f.code in (FILE_ERROR, UNUSED_SUPPRESSION) or (language == "cpp" and f.status is Status.INFO):
            continue
        hits = [d for d in by_line.get(f.line, ()) if d.covers(f.code)]
        hits += [d for d in ds if d.kind == "ignore" and d.file_level and d.covers(f.code)]
        hits += [d for d in ranges if d.line <= f.line and (d.end_line is None or f.line <= d.end_line)
                 and d.covers(f.code)]
        for d in hits:
            d.used.add(f.code)
        if hits and f.status is not Status.SUPPRESSED:
            _suppress(f, language)
    for f in analysis.findings:
        if f.status is Status.SUPPRESSED:  # a front end's own suppression (no mask could be made)
            for d in by_line.get(f.line, ()):
                if d.codes is None:
                    d.used.add(f.code)
    from .codes import CODES

    extra = []
    for d in ds:
        what = f"{sp.word}-file" if d.file_level else (sp.word if d.kind == "ignore" else d.kind)
        if d.kind == "on":
            if d.paired:
                continue
            msg = f"unused suppression (on): no `{sp.marker}: off` before it; delete the comment"
        elif d.codes is None:
            if d.used:
                continue
            why = ("no site in this file" if d.file_level else "no site starts on this line" if d.kind == "ignore"
                   else "no site in its range")
            msg = f"unused suppression ({what}): {why}; delete the comment"
        else:
            unknown = [c for c in d.codes if c not in CODES]
            unused = [c for c in d.codes if c in CODES and c not in d.used]
            if not unknown and not unused:
                continue
            parts = []
            if unused:
                parts.append(f"{', '.join(unused)}: no such site "
                             + ("in this file" if d.file_level else "starts on this line" if d.kind == "ignore"
                                else "in its range"))
            if unknown:
                parts.append(f"{', '.join(unknown)}: not a code of this tool")
            msg = f"unused suppression ({what}[{', '.join(d.codes)}]): {'; '.join(parts)}"
        extra.append(Finding(path, d.line, d.column, d.line, d.end_column, UNUSED_SUPPRESSION, msg,
                             status=Status.INFO, legacy_site=False, severity="warning"))
    if extra:
        analysis = Analysis(sorted(analysis.findings + extra, key=lambda f: (f.line, f.column)),
                            analysis.error, analysis.error_line, analysis.error_column, analysis.migrated)
    return analysis
