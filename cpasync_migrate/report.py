"""Reports: check lines, a summary, unified diffs, JSON, GitHub annotations, SARIF.

Every format is built from the same list of :class:`FileOutcome` objects.
The JSON layout is documented in docs/usage.md and described by
``cpasync_migrate/schemas/report.schema.json``.
"""
from __future__ import annotations

import os
from collections import Counter
from typing import Iterable, TextIO

from . import __version__
from .paths import rel
from .codes import FILE_ERROR
from .findings import FileOutcome, Finding, Status

JSON_SCHEMA_VERSION = 1
BUCKETS = ("rewritten", "held", "manual", "unsafe", "suppressed", "unparsable")

SEVERITY = {
    Status.REWRITTEN: "error",
    Status.MANUAL: "error",
    Status.UNSAFE: "error",
    Status.HELD: "error",
    Status.SUPPRESSED: "note",
    Status.UNPARSABLE: "error",
    Status.INFO: "note",
}


def all_findings(outcomes: Iterable[FileOutcome]) -> list[Finding]:
    out = [f for o in outcomes for f in o.findings]
    out.sort(key=Finding.sort_key)
    return out


def summarize(outcomes: list[FileOutcome], files_scanned: int, mode: str) -> dict:
    c = Counter()
    info = 0
    for o in outcomes:
        for f in o.findings:
            if not f.legacy_site:
                if f.status is Status.INFO:
                    info += 1
                continue
            c[f.status.value] += 1
    return {
        "files_scanned": files_scanned,
        "files_with_sites": sum(1 for o in outcomes if any(f.legacy_site for f in o.findings)),
        "files_changed": sum(1 for o in outcomes if o.changed),
        "files_written": sum(1 for o in outcomes if o.written),
        "sites": {b: c.get(b, 0) for b in BUCKETS},
        "sites_total": sum(c.values()),
        "info": info,
        "errors": sum(1 for o in outcomes if o.error),
    }


def exit_code(outcomes: list[FileOutcome], mode: str, usage_error: bool = False) -> int:
    if usage_error or any(o.error for o in outcomes):
        return 2
    for o in outcomes:
        for f in o.findings:
            if not f.legacy_site:
                continue
            if f.status in (Status.MANUAL, Status.UNSAFE, Status.HELD):
                return 1
            if f.status is Status.REWRITTEN and mode != "write":
                return 1
    return 0


# ------------------------------------------------------------------ after a write


# A switch (environment ``CPASYNC_MIGRATE_RELOCATE_BISECT=0``: every finding's offsets are shifted by a walk of the
# file's edits from the first, as before).  On: by binary search over the edits' starts and running sums, so
# relocating a large written file's findings costs O(findings log edits) instead of O(findings x edits);
# tests/test_report_relocate.py compares the two on random edit sets and on written files.
BISECT = os.environ.get("CPASYNC_MIGRATE_RELOCATE_BISECT", "1") != "0"


def _linear_shift(edits):
    """``shift(off, insertions_before)``: where ``off`` of the old text stands in the new one (``edits`` sorted by
    (start, end)): shifted by every edit before it; inside an edit, that edit's start; with
    ``insertions_before``, past the insertions at ``off`` too."""
    def shift(off: int, insertions_before: bool) -> int:
        d = 0
        for e in edits:
            if e.start < off or (insertions_before and e.start == e.end == off):
                if e.end <= off:
                    d += len(e.replacement) - (e.end - e.start)
                else:  # inside an edit: its start
                    return e.start + d
            else:
                break
        return off + d
    return shift


class _Shifts:
    """``_linear_shift``'s answers by binary search: the edits' starts, the running sums of their length changes
    and the running maxima of their ends (the first edit, of those that start before ``off``, that ends after it
    is the one ``off`` is inside)."""

    def __init__(self, edits):
        import itertools

        self.edits = edits
        self.starts = [e.start for e in edits]
        self.before = [0, *itertools.accumulate(len(e.replacement) - (e.end - e.start) for e in edits)]
        self.reach = list(itertools.accumulate((e.end for e in edits), max))

    def shift(self, off: int, insertions_before: bool) -> int:
        import bisect

        k = bisect.bisect_left(self.starts, off)  # the edits that start before off
        j = bisect.bisect_right(self.reach, off)  # the first edit that ends after off
        if j < k:
            return self.edits[j].start + self.before[j]
        d = self.before[k]
        if insertions_before:
            while k < len(self.edits) and self.edits[k].start == self.edits[k].end == off:
                d += len(self.edits[k].replacement)
                k += 1
        return off + d


def relocate_written(outcomes: Iterable[FileOutcome]) -> None:
    """Move every finding of a file write mode wrote to where it now stands in the new text.

    A rewritten site spans its replacement; any other site (left for a person, an unsafe fix not
    applied, information) keeps its text, shifted by the edits before it.  Reports made after a
    write then point at the file as it is, and an unapplied fix's region is one of the new text."""
    from .findings import line_starts, offset_to_linecol

    for o in outcomes:
        if not o.written or o.old_text is None or o.new_text is None:
            continue
        edits = sorted({e for f in o.findings if f.status is Status.REWRITTEN and f.fix for e in f.fix.edits},
                       key=lambda e: (e.start, e.end))
        if not edits:
            continue
        old_starts, new_starts = line_starts(o.old_text), line_starts(o.new_text)
        n_old, n_new = len(o.old_text), len(o.new_text)

        shift = _Shifts(edits).shift if BISECT else _linear_shift(edits)
        for f in o.findings:
            if f.line < 1 or f.line > len(old_starts) or f.end_line > len(old_starts):
                continue
            s = min(old_starts[f.line - 1] + f.column - 1, n_old)
            e = min(old_starts[f.end_line - 1] + f.end_column - 1, n_old)
            rewritten = f.status is Status.REWRITTEN and f.replacement is not None
            ns = min(shift(s, not rewritten), n_new)
            ne = min(ns + len(f.replacement) if rewritten else shift(e, False), n_new)
            f.line, f.column = offset_to_linecol(new_starts, ns)
            f.end_line, f.end_column = offset_to_linecol(new_starts, max(ne, ns))


def level(f: Finding) -> str:
    """``error``, ``warning`` or ``note``: the finding's severity, where an unsafe fix not applied is a
    warning (the GitHub, SARIF, JUnit and GitLab reports all read it so)."""
    if f.status is Status.UNSAFE:
        return "warning"
    return f.severity or SEVERITY[f.status]


def message_with_assumptions(f: Finding) -> str:
    """The message, and an unsafe fix's assumptions after it in parentheses."""
    if f.fix and f.fix.assumptions:
        return f.message + " (assumptions: " + "; ".join(f.fix.assumptions) + ")"
    return f.message


def reported(f: Finding, mode: str) -> bool:
    """Whether github and sarif output list the finding: what remains (after a write, a site the
    run just rewrote is gone) and is not suppressed."""
    return not (mode == "write" and f.status is Status.REWRITTEN)


# ------------------------------------------------------------------ text


def finding_line(f: Finding) -> str:
    msg = f.message
    if f.function:
        msg += f" [in {f.function}]"
    return f"{rel(f.path)}:{f.line}:{f.column}: {f.code} {msg}"


def applied_line(f: Finding) -> str:
    """A site write mode just fixed with an unsafe fix: said as done, with how many assumptions it rests on
    (they follow, one a line)."""
    n = len(f.fix.assumptions) if f.fix else 0
    where = f" [in {f.function}]" if f.function else ""
    return f"{rel(f.path)}:{f.line}:{f.column}: {f.code} fixed (unsafe fix applied; it rests on {n} assumption(s)){where}"


def check_lines(outcomes: list[FileOutcome]) -> list[str]:
    lines = []
    for f in all_findings(outcomes):
        if f.status is Status.SUPPRESSED:
            continue
        lines.append(finding_line(f))
        if f.fix and f.fix.assumptions and f.status in (Status.UNSAFE, Status.REWRITTEN):
            for a in f.fix.assumptions:
                lines.append(f"    assumption: {a}")
    return lines + error_lines(outcomes)


def error_lines(outcomes: list[FileOutcome]) -> list[str]:
    """``path:line:1: CPA900 error`` for each file error that no finding of the file reports."""
    return [f"{rel(o.path)}:{o.error_line or 1}:1: {FILE_ERROR} {o.error}" for o in outcomes
            if o.error and not any(f.code == FILE_ERROR for f in o.findings)]


def target_line(target_info: dict) -> str:
    line = f"target: {target_info['generation']} ({target_info['title']}) - {target_info['reason']}"
    if target_info.get("steps"):
        line += f"; steps {', '.join(target_info['steps'])}"
    if target_info.get("rules_version"):
        line += f"; rules {target_info['rules_version']}"
    for other in target_info.get("per_file", ()):  # files whose own configuration names another target
        line += f"; {other['files']} file(s) to {other['generation']} ({other['from']})"
    return line


def sets_line(sets) -> str:
    """``N change set(s): K applied, ...`` ("" when the run has none)."""
    sets = list(sets)
    if not sets:
        return ""
    by_state = Counter(cs.state for cs in sets)
    order = ("applied", "partial", "held", "incomplete")
    return f"{len(sets)} change set(s): " + ", ".join(f"{by_state[k]} {k}" for k in order if by_state[k])


def half_migrated_lines(outcomes: list[FileOutcome], mode: str) -> list[str]:
    """One line per file left (or, in --check/--diff, to be left) with both forms (findings.half_migrated)."""
    from .findings import half_migrated

    def name(fn: str) -> str:
        return f"`{fn or '<module>'}`"

    lines = []
    for o in sorted(outcomes, key=lambda o: o.path):
        h = half_migrated(o)
        if h is None:
            continue
        state = ("is now" if mode == "write" else "would be, once written,") if h["by_this_run"] else "is"
        left = "; ".join(f"{name(fn)} (" + ", ".join(f"line {ln} {c} {st}" for ln, c, st in sites) + ")"
                         for fn, sites in sorted(h["remaining"].items()))
        lines.append(f"{rel(o.path)}: {state} half-migrated, which no TileLang release loads (0.1.7.post1 takes "
                     f"only the legacy form, 0.1.8 only access pointers): access pointers in "
                     f"{', '.join(map(name, h['migrated']))}; legacy calls remain in {left}")
    return lines


def print_summary(out: TextIO, outcomes: list[FileOutcome], files_scanned: int, mode: str,
                  target_info: dict, color: bool, sets=()) -> None:
    for line in half_migrated_lines(outcomes, mode):
        out.write(line + "\n")
    s = summarize(outcomes, files_scanned, mode)
    sets_text = sets_line(sets)
    sites = s["sites"]
    verb = {"write": "rewritten", "check": "fixable", "diff": "fixable (shown)"}[mode]
    rows = [
        (verb, sites["rewritten"]),
        *((("held back by its change set", sites["held"]),) if sites["held"] else ()),
        ("left for a person", sites["manual"]),
        ("unsafe fix, not applied (use --unsafe-fixes)", sites["unsafe"]),
        ("suppressed", sites["suppressed"]),
        ("in an unparsable file", sites["unparsable"]),
    ]
    header = f"{files_scanned} file(s) scanned, {s['files_with_sites']} with legacy ptx_cp_async sites, " \
             f"{s['sites_total']} site(s)"
    if mode != "write":
        # one line, no table: the lint path stays light
        parts = ", ".join(f"{v} {k.split(' (')[0]}" for k, v in rows)
        out.write(f"{header}: {parts}" + (f"; {s['errors']} file(s) with errors" if s["errors"] else "")
                  + (f"; {sets_text}" if sets_text else "") + "\n")
        out.write(target_line(target_info) + "\n")
        return
    header += f", {s['files_written']} file(s) written"
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover
        Console = None
    if Console is None:
        out.write(header + "\n")
        for k, v in rows:
            out.write(f"  {k}: {v}\n")
        if sets_text:
            out.write(sets_text + "\n")
        out.write(target_line(target_info) + "\n")
        return
    console = Console(file=out, force_terminal=color, no_color=not color, highlight=False, width=100)
    table = Table(title=None, show_header=True, header_style="bold")
    table.add_column("sites")
    table.add_column("count", justify="right")
    for k, v in rows:
        table.add_row(k, str(v))
    table.add_row("total", str(s["sites_total"]), style="bold")
    console.print(header)
    console.print(table)
    if s["info"]:
        console.print(f"{s['info']} information-only finding(s)")
    if s["errors"]:
        console.print(f"[red]{s['errors']} file(s) with errors[/red]" if color else f"{s['errors']} file(s) with errors")
    if sets_text:
        console.print(sets_text, soft_wrap=True)
    console.print(target_line(target_info), soft_wrap=True)


def verdict_lines(outcomes: list[FileOutcome]) -> list[str]:
    lines = []
    for o in sorted(outcomes, key=lambda o: o.path):
        for v in o.verdicts:
            lines.append(f"{rel(o.path)}:{v.get('line', 1)}: {v.get('kernel')}: {v.get('verdict')}"
                         + (f" ({v['reason']})" if v.get("reason") else ""))
    return lines


# ------------------------------------------------------------------ diff


_C_ESCAPES = {0x07: "\\a", 0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0B: "\\v", 0x0C: "\\f", 0x0D: "\\r",
              0x22: '\\"', 0x5C: "\\\\"}


def diff_name(name: str) -> str:
    """A file name for a ``---``/``+++`` line, quoted the way git quotes it.

    A name with a control character (a newline, a tab), a double quote or a backslash, or one that
    is not valid UTF-8, is written in double quotes with C escapes (``"a/with\\ttab.py"``; bytes
    outside ASCII as octal), which ``git apply`` and GNU ``patch`` read back.  Other names are
    written as they are; one with a space gets a tab after it, as git writes it, because ``patch``
    ends an unquoted name at the first tab (or at a space followed by a time stamp).
    """
    raw = os.fsencode(name)
    try:
        raw.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    if valid and not any(b < 0x20 or b == 0x7F or b in (0x22, 0x5C) for b in raw):
        return name + ("\t" if " " in name else "")
    out = []
    for b in raw:
        if b in _C_ESCAPES:
            out.append(_C_ESCAPES[b])
        elif b < 0x20 or b >= 0x7F:
            out.append(f"\\{b:03o}")
        else:
            out.append(chr(b))
    return '"' + "".join(out) + '"'


def unified_diff(o: FileOutcome) -> str:
    """The file's diff; empty when nothing changes, or when write mode would refuse the file
    (``o.error``: e.g. --verify found a mismatch), which the error line on stderr says."""
    if not o.changed or o.error:
        return ""
    import difflib  # only a diff needs it (not imported by --check)

    p = rel(o.path).replace(os.sep, "/").lstrip("/")
    a = o.old_text.splitlines(True)
    b = o.new_text.splitlines(True)
    out = []
    for i, line in enumerate(difflib.unified_diff(a, b, "a", "b", n=3, lineterm="\n")):
        if i == 0:
            line = f"--- {diff_name('a/' + p)}\n"
        elif i == 1:
            line = f"+++ {diff_name('b/' + p)}\n"
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    # difflib puts "\n" after the header lines itself; keep CRLF content as is
    return "".join(out)


def colorize_diff(text: str) -> str:
    out = []
    for line in text.splitlines(True):
        if line.startswith(("+++", "---")):
            out.append(f"\x1b[1m{line.rstrip(chr(10))}\x1b[0m\n")
        elif line.startswith("+"):
            out.append(f"\x1b[32m{line.rstrip(chr(10))}\x1b[0m\n")
        elif line.startswith("-"):
            out.append(f"\x1b[31m{line.rstrip(chr(10))}\x1b[0m\n")
        elif line.startswith("@@"):
            out.append(f"\x1b[36m{line.rstrip(chr(10))}\x1b[0m\n")
        else:
            out.append(line)
    return "".join(out)


# ------------------------------------------------------------------ json


def finding_dict(f: Finding, mode: str = "write") -> dict:
    """One finding of the JSON ledger.  Only write mode applies fixes: under --check and --diff a site the
    run would rewrite has status ``fixable`` and its fix ``applied: false`` (nothing was written)."""
    fix = None
    written = mode == "write"
    if f.fix is not None:
        fix = {
            "applicability": f.fix.applicability.value,
            "applied": written and f.status is Status.REWRITTEN,
            "original": f.original,
            "replacement": f.replacement,
            "assumptions": list(f.fix.assumptions),
            "steps": list(f.fix.steps),
            "edits": [{"start": e.start, "end": e.end, "content": e.replacement} for e in f.fix.edits],
        }
    return {
        "path": rel(f.path),
        "line": f.line,
        "column": f.column,
        "end_line": f.end_line,
        "end_column": f.end_column,
        "code": f.code,
        "message": f.message,
        "severity": f.severity or SEVERITY[f.status],
        "status": "fixable" if not written and f.status is Status.REWRITTEN else f.status.value,
        "legacy_site": f.legacy_site,
        "fixable": f.fix is not None,
        "fix": fix,
        "function": f.function,
        "op": f.op,
        "role": f.role,
        "set_id": f.set_id,
    }


def json_report(outcomes: list[FileOutcome], files_scanned: int, mode: str, target_info: dict,
                rules_versions: dict, sets: Iterable = ()) -> dict:
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "tool": {"name": "cpasync-migrate", "version": __version__},
        "mode": mode,
        "target": target_info,
        "rules": rules_versions,
        "summary": _json_summary(outcomes, files_scanned, mode),
        "findings": [finding_dict(f, mode) for f in all_findings(outcomes)],
        "errors": [{"path": rel(o.path), "line": o.error_line, "message": o.error}
                   for o in sorted(outcomes, key=lambda o: o.path) if o.error],
        "verdicts": [dict(v, path=rel(o.path)) for o in sorted(outcomes, key=lambda o: o.path) for v in o.verdicts],
        "sets": [_set_dict(cs) for cs in sets],
    }


def _json_summary(outcomes: list[FileOutcome], files_scanned: int, mode: str) -> dict:
    """The summary; under --check and --diff the sites the run would rewrite count as ``fixable`` (none as
    ``rewritten``: nothing was written)."""
    s = summarize(outcomes, files_scanned, mode)
    if mode != "write":
        sites = dict(s["sites"])
        sites["fixable"], sites["rewritten"] = sites["rewritten"], 0
        s = dict(s, sites=sites)
    return s


def _set_dict(cs) -> dict:
    d = cs.to_dict()
    for key in ("members", "blockers", "checklist"):
        for item in d[key]:
            item["path"] = rel(item["path"])
    return d


# ------------------------------------------------------------------ change sets


def set_lines(sets: Iterable) -> list[str]:
    """Each change set that is not applied whole: its members, what blocks it, what to run."""
    lines = []
    for cs in sets:
        roles = ", ".join(f"{n} {r}(s)" for r, n in sorted(cs.roles().items()))
        head = f"change set {cs.id}: {cs.state}: {len(cs.members)} member(s) ({roles})"
        if cs.state == "applied":
            lines.append(head + ": every member migrated together")
            continue
        lines.append(f"{head}: {cs.why}")
        for m, reason in cs.blockers:
            lines.append(f"    blocks it: {rel(m.path)}:{m.finding.line}: {m.finding.code} ({m.role}): {reason}")
        if cs.checklist:
            lines.append("    checklist (change by hand in the same change):")
            for m, change, upstream in cs.checklist:
                lines.append(f"    [ ] {rel(m.path)}:{m.finding.line}: {m.finding.code} ({m.role}): {change}"
                             + (f" (upstream: {upstream})" if upstream else ""))
        if cs.command:
            lines.append(f"    to apply the rest: {cs.command}")
    return lines


# ------------------------------------------------------------------ github


def _gh_escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_escape_prop(s: str) -> str:
    return _gh_escape_data(s).replace(":", "%3A").replace(",", "%2C")


def github_lines(outcomes: list[FileOutcome], mode: str = "check") -> list[str]:
    lines = []
    for f in all_findings(outcomes):
        if f.status is Status.SUPPRESSED or not reported(f, mode):
            continue
        gh_level = {"error": "error", "warning": "warning", "note": "notice"}[level(f)]
        msg = f.message
        if f.fix and f.fix.assumptions:
            msg += "\nassumptions: " + "; ".join(f.fix.assumptions)
        if f.end_line == f.line:
            where = f"line={f.line},col={f.column},endLine={f.end_line},endColumn={f.end_column}"
        else:  # GitHub takes columns only on an annotation of one line
            where = f"line={f.line},endLine={f.end_line}"
        props = f"file={_gh_escape_prop(rel(f.path))},{where},title={_gh_escape_prop(f.code)}"
        lines.append(f"::{gh_level} {props}::{_gh_escape_data(msg)}")
    for o in outcomes:
        for v in o.verdicts:
            if v.get("verdict") == "mismatch":
                lines.append(f"::error file={_gh_escape_prop(rel(o.path))},line={v.get('line', 1)},"
                             f"title=verify::{_gh_escape_data(str(v.get('kernel')) + ': ' + str(v.get('reason')))}")
    return lines
