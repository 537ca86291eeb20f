"""Markdown job summary: ``--format markdown``, and what a run appends to ``$GITHUB_STEP_SUMMARY``.

GitHub shows only a few annotations per step; the summary is where a migration of hundreds of
sites is visible: the counts, the change sets and their members, the sites left for a person (one
line each, at most :data:`CAP`), the assumptions of unsafe fixes as a checklist, and the proof
verdict of each kernel when ``--verify`` ran.
"""
from __future__ import annotations

import os
import stat
from typing import Iterable, Optional

from .findings import FileOutcome, Finding, Status

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
CAP = 200  # lines per list; the rest is "and N more"

_SPECIAL = str.maketrans({c: "\\" + c for c in "\\*_[]<>|#"})


def md(text: str) -> str:
    """One line of Markdown: white space collapsed, special characters escaped outside `code spans`."""
    parts = " ".join(str(text).split()).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code spans
        return "\\`".join(p.translate(_SPECIAL) for p in parts)
    return "`".join(p if i % 2 else p.translate(_SPECIAL) for i, p in enumerate(parts))


def code(text) -> str:
    """A code span (a backtick inside becomes a quote; a pipe is escaped, as GitHub's tables need)."""
    return "`" + " ".join(str(text).split()).replace("`", "'").replace("|", "\\|") + "`"


def _where(f: Finding) -> str:
    from .report import rel

    return code(f"{rel(f.path)}:{f.line}")


def _capped(lines: list, cap: int = CAP) -> list:
    if len(lines) <= cap:
        return lines
    return lines[:cap] + [f"- and {len(lines) - cap} more"]


def markdown_summary(outcomes: list[FileOutcome], files_scanned: int, mode: str, target_info: dict,
                     sets: Iterable = (), verified: bool = False) -> str:
    from .report import all_findings, rel, summarize

    sets = list(sets)
    s = summarize(outcomes, files_scanned, mode)
    sites = s["sites"]
    verb = {"write": "rewritten", "check": "fixable", "diff": "fixable (shown)"}[mode]
    out = [f"## cpasync-migrate ({mode})", ""]
    if target_info:
        out += [f"Target: {md(target_info.get('generation', ''))} ({md(target_info.get('title', ''))}): "
                f"{md(target_info.get('reason', ''))}", ""]
    out += ["| files | count |", "| --- | ---: |",
            f"| scanned | {files_scanned} |",
            f"| with legacy sites | {s['files_with_sites']} |",
            f"| {'changed' if mode == 'write' else 'to change'} | {s['files_changed']} |"]
    if mode == "write":
        out.append(f"| written | {s['files_written']} |")
    out += [f"| with errors | {s['errors']} |", ""]
    out += ["| sites | count |", "| --- | ---: |",
            f"| {verb} | {sites['rewritten']} |",
            f"| held back by its change set | {sites['held']} |",
            f"| left for a person | {sites['manual']} |",
            f"| unsafe fix, not applied (use --unsafe-fixes) | {sites['unsafe']} |",
            f"| suppressed | {sites['suppressed']} |",
            f"| in an unparsable file | {sites['unparsable']} |",
            f"| **total** | **{s['sites_total']}** |", ""]
    if s["info"]:
        out += [f"{s['info']} information-only finding(s) (warnings and notes; they do not change the exit code).",
                ""]

    if sets:
        out += [f"### Change sets ({len(sets)})", ""]
        for cs in sets:
            roles = ", ".join(f"{n} {r}(s)" for r, n in sorted(cs.roles().items()))
            head = f"- {code(cs.id)}: **{cs.state}**, {len(cs.members)} member(s) ({roles})"
            out.append(head + (f": {md(cs.why)}" if cs.why and cs.state != "applied" else ""))
            members = [f"  - {_where(m.finding)} {m.finding.code} {m.role}: {m.finding.status.value}"
                       for m in cs.members]
            out += [(ln if ln.startswith("  ") else "  " + ln) for ln in _capped(members)]
            if cs.command:
                out.append(f"  - to apply the rest: {md(cs.command)}")
        out.append("")

    manual = [f for f in all_findings(outcomes) if f.status is Status.MANUAL]
    out += [f"### Left for a person ({len(manual)})", ""]
    if manual:
        out += _capped([f"- {_where(f)} {f.code} {md(f.message)}" for f in manual])
    else:
        out.append("None.")
    out.append("")

    errors = sorted((o for o in outcomes if o.error), key=lambda o: o.path)
    if errors:
        out += [f"### Files with errors ({len(errors)})", ""]
        out += _capped([f"- {code(f'{rel(o.path)}:{o.error_line or 1}')} {md(o.error)}" for o in errors])
        out.append("")

    checks = []
    for f in all_findings(outcomes):
        if f.fix and f.fix.assumptions and f.status in (Status.UNSAFE, Status.REWRITTEN):
            state = "applied" if f.status is Status.REWRITTEN else "not applied"
            checks += [f"- [ ] {_where(f)} {f.code} ({state}): {md(a)}" for a in f.fix.assumptions]
    if checks:
        out += [f"### Unsafe assumptions to check ({len(checks)})", ""] + _capped(checks) + [""]

    if verified:
        rows = [(rel(o.path), v) for o in sorted(outcomes, key=lambda o: o.path) for v in o.verdicts]
        out += [f"### Proof ({len(rows)} kernel(s))", ""]
        if rows:
            out += ["| kernel | where | verdict | reason |", "| --- | --- | --- | --- |"]
            out += _capped([f"| {code(v.get('kernel'))} | {code(p + ':' + str(v.get('line', 1)))} | "
                            f"{md(v.get('verdict'))} | {md(v.get('reason', ''))} |" for p, v in rows])
        else:
            out.append("No kernel was changed, so none needed a proof.")
        out.append("")
    return "\n".join(out)


def append_step_summary(outcomes: list[FileOutcome], files_scanned: int, mode: str, target_info: dict,
                        sets: Iterable = (), verified: bool = False) -> Optional[str]:
    """Append the summary to ``$GITHUB_STEP_SUMMARY`` when it is set; the error, if the file cannot be
    written (the run's exit code does not change)."""
    path = os.environ.get(STEP_SUMMARY_ENV)
    if not path:
        return None
    text = markdown_summary(outcomes, files_scanned, mode, target_info, sets, verified)
    try:
        # non-blocking, and only a regular file: a FIFO or a device named there never stalls the run
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_NOCTTY", 0), 0o666)
    except OSError as e:
        return f"cannot append the job summary to {path} (${STEP_SUMMARY_ENV}): {e.strerror or e}"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return f"cannot append the job summary to {path} (${STEP_SUMMARY_ENV}): not a regular file"
        with os.fdopen(fd, "a", encoding="utf-8", errors="surrogateescape") as fh:
            fd = None
            fh.write(text + "\n")
    except OSError as e:
        return f"cannot append the job summary to {path} (${STEP_SUMMARY_ENV}): {e.strerror or e}"
    finally:
        if fd is not None:
            os.close(fd)
    return None
