"""The report of a run, as the command line asked for it: which writer (text, diff, json, sarif, markdown,
github, junit, gitlab), on which stream (findings and diffs on stdout or ``-o FILE``; in --check and
--diff the text summary on stderr), the further reports of ``--report FORMAT:FILE``, the job summary
where ``GITHUB_STEP_SUMMARY`` is set, and the exit code.

The writers themselves live in ``report.py``, ``report_sarif.py``, ``report_markdown.py``,
``report_junit.py`` and ``report_gitlab.py``; this module only chooses among them (``cli.py`` parses
the arguments and runs the files).
"""
from __future__ import annotations

import os
import sys


def _color(stream) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


# Formats written as one document (to stdout, -o FILE or --report FORMAT:FILE); text is the per-site
# lines of --check.  json keeps the positions the run read (its ledger); the others say where the sites
# left after a write now stand.
DOCUMENT_FORMATS = ("json", "sarif", "markdown", "github", "junit", "gitlab", "text")


def emit(outcomes, scanned: int, mode: str, args, target_info: dict, rules, sets=(), out=None) -> int:
    """Print the report (on ``out``, default stdout; the text summary goes to stderr in --check and
    --diff), write each ``--report FORMAT:FILE``, and return the exit code; with ``GITHUB_STEP_SUMMARY``
    set, also append the job summary."""
    from . import report

    extras = list(getattr(args, "report", None) or ())
    for fmt, path in extras:  # the JSON ledgers first, before positions move to the written text
        if fmt == "json":
            write_document(path, render(fmt, outcomes, scanned, mode, target_info, rules, sets, bool(args.verify)))
    if mode == "write":  # once: what remains, where it now stands (the main JSON ledger reads it before)
        if args.format == "json":
            code = _emit(outcomes, scanned, mode, args, target_info, rules, sets, out)
            report.relocate_written(outcomes)
        else:
            report.relocate_written(outcomes)
            code = _emit(outcomes, scanned, mode, args, target_info, rules, sets, out)
    else:
        code = _emit(outcomes, scanned, mode, args, target_info, rules, sets, out)
    for fmt, path in extras:
        if fmt != "json":
            write_document(path, render(fmt, outcomes, scanned, mode, target_info, rules, sets, bool(args.verify)))
    if os.environ.get("GITHUB_STEP_SUMMARY"):  # the job summary, in any format and mode (report_markdown.py)
        from . import report_markdown

        problem = report_markdown.append_step_summary(outcomes, scanned, mode, target_info, sets, bool(args.verify))
        if problem:
            sys.stderr.write(f"cpasync-migrate: warning: {problem}\n")
    return code


def render(fmt: str, outcomes, scanned: int, mode: str, target_info: dict, rules, sets, verify: bool) -> str:
    """One report as a document (``DOCUMENT_FORMATS``), without the diffs or the summary of the text report."""
    import json

    from . import report

    if fmt == "json":
        return json.dumps(report.json_report(outcomes, scanned, mode, target_info, rules.versions, sets), indent=2) + "\n"
    if fmt == "sarif":
        from .report_sarif import sarif_report

        return json.dumps(sarif_report(outcomes, target_info, rules.versions, mode), indent=2) + "\n"
    if fmt == "markdown":
        from .report_markdown import markdown_summary

        return markdown_summary(outcomes, scanned, mode, target_info, sets, verify) + "\n"
    if fmt == "github":
        return "".join(line + "\n" for line in report.github_lines(outcomes, mode))
    if fmt == "junit":
        from .report_junit import junit_report

        return junit_report(outcomes, mode)
    if fmt == "gitlab":
        from .report_gitlab import gitlab_report

        return json.dumps(gitlab_report(outcomes, mode), indent=2) + "\n"
    if fmt == "text":
        return "".join(line + "\n" for line in report.check_lines(outcomes))
    raise ValueError(f"unknown report format {fmt!r}")


def open_document(path: str):
    """A report file named on the command line (-o, --report), open for writing: text that UTF-8 cannot
    encode (a file name that is not UTF-8) escaped rather than fatal."""
    return open(path, "w", encoding="utf-8", errors="backslashreplace", newline="")


def write_document(path: str, text: str) -> None:
    with open_document(path) as fh:
        fh.write(text)


def _emit(outcomes, scanned: int, mode: str, args, target_info: dict, rules, sets=(), out=None) -> int:
    from . import report
    from .findings import Status

    out = out or sys.stdout
    code = report.exit_code(outcomes, mode)
    if args.format in ("json", "sarif", "markdown", "junit", "gitlab"):
        out.write(render(args.format, outcomes, scanned, mode, target_info, rules, sets, bool(args.verify)))
        return code
    if args.format == "github":
        for line in report.github_lines(outcomes, mode):
            out.write(line + "\n")
        if mode == "diff":
            _write_diffs(outcomes, out)
        return code
    # text
    if mode == "diff":
        _write_diffs(outcomes, out)
        info = sys.stderr
        if args.statistics:
            _print_statistics(outcomes, mode, info)
        else:
            _print_unapplied(outcomes, info, show_unsafe=True)
    elif mode == "check":
        for line in statistics_lines(outcomes, mode) if args.statistics else report.check_lines(outcomes):
            out.write(line + "\n")
        info = sys.stderr
    elif args.statistics:
        _print_statistics(outcomes, mode, out)
        info = out
    else:
        if args.quiet:  # one line per change (the fixing pre-commit hook runs quiet)
            for f in report.all_findings(outcomes):
                if f.status is Status.REWRITTEN and f.legacy_site and not (f.fix and f.fix.assumptions):
                    out.write(f"{report.rel(f.path)}:{f.line}:{f.column}: {f.code} fixed\n")
        _print_unapplied(outcomes, out, written=True)
        info = out
    for line in report.verdict_lines(outcomes):
        info.write(line + "\n")
    for line in report.set_lines(sets):
        info.write(line + "\n")
    if not args.quiet:
        report.print_summary(info, outcomes, scanned, mode, target_info, _color(info), sets)
    info.flush()
    return code


def statistics_lines(outcomes, mode: str) -> list[str]:
    """--statistics: one line per code of the findings the per-site report lists (after a write: of
    what remains), most frequent first: count, code, name, and how many have a fix applied by default
    (in --check and --diff) or only with --unsafe-fixes."""
    from . import report
    from .codes import CODES, FILE_ERROR
    from .findings import Status

    counts: dict = {}
    for f in report.all_findings(outcomes):
        if f.status is Status.SUPPRESSED or (mode == "write" and f.status is Status.REWRITTEN):
            continue
        c = counts.setdefault(f.code, [0, 0, 0])
        c[0] += 1
        c[1] += f.status is Status.REWRITTEN
        c[2] += f.status is Status.UNSAFE
    for o in outcomes:
        if o.error and not any(f.code == FILE_ERROR for f in o.findings):
            counts.setdefault(FILE_ERROR, [0, 0, 0])[0] += 1
    width = len(str(max((c[0] for c in counts.values()), default=0)))
    lines = []
    for code, (n, fixable, unsafe) in sorted(counts.items(), key=lambda kv: (-kv[1][0], kv[0])):
        notes = ([f"{fixable} fixable"] if fixable else []) + ([f"{unsafe} with --unsafe-fixes"] if unsafe else [])
        name = CODES[code].name if code in CODES else ""
        lines.append(f"{n:>{width}}  {code}  {name}" + (f" ({', '.join(notes)})" if notes else ""))
    return lines


def _print_statistics(outcomes, mode: str, out) -> None:
    for line in statistics_lines(outcomes, mode):
        out.write(line + "\n")


def _write_diffs(outcomes, out) -> None:
    from . import report

    color = _color(out)
    for o in sorted(outcomes, key=lambda o: o.path):
        d = report.unified_diff(o)
        if d:
            out.write(report.colorize_diff(d) if color else d)


def _print_unapplied(outcomes, out, show_unsafe: bool = False, written: bool = False) -> None:
    """Sites left for a person and unsafe fixes, with reasons and assumptions.  ``written`` (write mode):
    an unsafe fix the run applied reads as applied (``fixed (unsafe fix applied ...)``), not with the
    message of a site still to migrate."""
    from . import report
    from .findings import Status

    for f in report.all_findings(outcomes):
        if f.status in (Status.MANUAL, Status.UNSAFE, Status.UNPARSABLE) or (
                f.status is Status.REWRITTEN and f.fix and f.fix.assumptions):
            applied = written and f.status is Status.REWRITTEN
            out.write((report.applied_line(f) if applied else report.finding_line(f)) + "\n")
            if f.fix and f.fix.assumptions:
                for a in f.fix.assumptions:
                    out.write(f"    assumption: {a}\n")
            if show_unsafe and f.status is Status.UNSAFE and f.replacement is not None:
                out.write("    unsafe fix, applied only with --unsafe-fixes:\n")
                for ln in f.original.splitlines():
                    out.write(f"    - {ln}\n")
                for ln in f.replacement.splitlines():
                    out.write(f"    + {ln}\n")
    for line in report.error_lines(outcomes):
        out.write(line + "\n")
