"""Suppression comments: by code, for a line or a whole file, and the ones that suppress nothing.

Forms (``#`` in Python, ``//`` or ``/*`` in C++)::

    # cpasync-migrate: ignore                   every site that starts on this line
    # cpasync-migrate: ignore[CPA001,CPA003]    only those codes, on this line
    # cpasync-migrate: ignore-file              every site in the file (a comment anywhere in it)
    # cpasync-migrate: ignore-file[CPA104]      only those codes, in the whole file

The front ends know the plain line form only.  A file whose comments say more is analysed once
more with every marker masked (the same number of characters, so the fixes' offsets hold for the
real text), and the suppressions are applied here, code by code.  A comment that suppresses
nothing (no site of that code starts on its line, or none is in the file; a code this tool does
not have) is reported as CPA010, as ruff's RUF100 does.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

from .codes import FILE_ERROR, UNUSED_SUPPRESSION as CODE_UNUSED
from .findings import Analysis, Finding, Status

_NEEDLE = "cpasync-migrate"
_MARKER = re.compile(r"cpasync-migrate:(?=\s*ignore)")
_PY = re.compile(r"#\s*cpasync-migrate:\s*ignore(-file)?\b(?:\[([^\]\n]*)\])?")
_CPP = re.compile(r"(?://|/\*)\s*cpasync-migrate:\s*ignore(-file)?\b(?:\[([^\]\n]*)\])?")
_MASKS = ("cpasync-migrate;", "cpasync-migrate,", "cpasync-migrate.", "cpasync-migrate=")


@dataclass
class Directive:
    line: int
    column: int
    end_column: int
    file_level: bool
    codes: Optional[tuple]  # None: every code
    used: set

    def covers(self, code: str) -> bool:
        return self.codes is None or code in self.codes


def _comments_py(text: str):
    """(line, column, comment text) of each comment; a text tokenize cannot read: every line."""
    import io
    import tokenize

    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.start[1], tok.string
    except (tokenize.TokenError, SyntaxError, IndentationError):
        for i, line in enumerate(text.splitlines(), 1):
            j = line.find("#")
            if j >= 0:
                yield i, j, line[j:]


def directives(text: str, language: str) -> list[Directive]:
    if _NEEDLE not in text:
        return []
    out = []
    if language == "python":
        places = _comments_py(text)
        rx = _PY
    else:
        places = ((i, 0, line) for i, line in enumerate(text.splitlines(), 1) if _NEEDLE in line)
        rx = _CPP
    for line, col, chunk in places:
        for m in rx.finditer(chunk):
            codes = None
            if m.group(2) is not None:
                codes = tuple(c.strip().upper() for c in m.group(2).split(",") if c.strip())
            out.append(Directive(line, col + m.start() + 1, col + m.end() + 1, bool(m.group(1)), codes, set()))
    return out


def _suppress(f: Finding, language: str) -> None:
    f.status = Status.SUPPRESSED
    f.fix = None
    if language == "cpp":  # as the C++ front end words a suppressed site
        f.message = f.message.split("; fix: ")[0] + "; suppressed by a comment"


def resolve(text: str, path: str, language: str, analysis: Analysis,
            analyze: Callable[[str], Analysis]) -> Analysis:
    """The analysis with the file's suppression comments applied code by code, and CPA010 findings
    for the comments that suppress nothing.  ``analyze`` analyses a text of this file."""
    if analysis.error:
        return analysis
    ds = directives(text, language)
    if not ds:
        return analysis
    if any(d.codes is not None or d.file_level for d in ds):
        mask = next((m for m in _MASKS if m not in text), None)
        if mask is not None:
            masked = _MARKER.sub(mask, text)
            again = analyze(masked)
            if again.error:
                return analysis
            for f in again.findings:
                if f.fix is not None:
                    for i, e in enumerate(f.fix.edits):
                        if mask in e.replacement:
                            f.fix.edits[i] = type(e)(e.start, e.end, e.replacement.replace(mask, "cpasync-migrate:"))
            analysis = again
            by_line: dict = {}
            for d in ds:
                if not d.file_level:
                    by_line.setdefault(d.line, []).append(d)
            for f in analysis.findings:
                if f.code == FILE_ERROR or (language == "cpp" and f.status is Status.INFO):
                    continue
                hits = [d for d in by_line.get(f.line, ()) if d.covers(f.code)]
                hits += [d for d in ds if d.file_level and d.covers(f.code)]
                for d in hits:
                    d.used.add(f.code)
                if hits and f.status is not Status.SUPPRESSED:
                    _suppress(f, language)
    for f in analysis.findings:
        if f.status is Status.SUPPRESSED:  # the front end's own plain-line suppressions
            for d in ds:
                if d.line == f.line and not d.file_level and d.codes is None:
                    d.used.add(f.code)
    from .codes import CODES

    extra = []
    for d in ds:
        what = "ignore-file" if d.file_level else "ignore"
        if d.codes is None:
            if d.used:
                continue
            why = ("no site in this file" if d.file_level else "no site starts on this line")
            msg = f"unused suppression ({what}): {why}; delete the comment"
        else:
            unknown = [c for c in d.codes if c not in CODES]
            unused = [c for c in d.codes if c in CODES and c not in d.used]
            if not unknown and not unused:
                continue
            parts = []
            if unused:
                parts.append(f"{', '.join(unused)}: no such site "
                             + ("in this file" if d.file_level else "starts on this line"))
            if unknown:
                parts.append(f"{', '.join(unknown)}: not a code of this tool")
            msg = f"unused suppression ({what}[{', '.join(d.codes)}]): {'; '.join(parts)}"
        extra.append(Finding(path, d.line, d.column, d.line, d.end_column, CODE_UNUSED, msg,
                             status=Status.INFO, legacy_site=False, severity="warning"))
    if extra:
        analysis = Analysis(sorted(analysis.findings + extra, key=lambda f: (f.line, f.column)),
                            analysis.error, analysis.error_line, analysis.error_column, analysis.migrated)
    return analysis
