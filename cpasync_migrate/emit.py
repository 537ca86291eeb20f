"""The report of a run, as the command line asked for it: which writer (text, diff, json, sarif, markdown,
github), on which stream (findings and diffs on stdout; in --check and --diff the text summary on
stderr), the job summary where ``GITHUB_STEP_SUMMARY`` is set, and the exit code.

The writers themselves live in ``report.py``, ``report_sarif.py`` and ``report_markdown.py``; this module
only chooses among them (``cli.py`` parses the arguments and runs the files).
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


def emit(outcomes, scanned: int, mode: str, args, target_info: dict, rules, sets=(), out=None) -> int:
    """Print the report (on ``out``, default stdout; the text summary goes to stderr in --check and
    --diff) and return the exit code; with ``GITHUB_STEP_SUMMARY`` set, also append the job summary."""
    code = _emit(outcomes, scanned, mode, args, target_info, rules, sets, out)
    if os.environ.get("GITHUB_STEP_SUMMARY"):  # the job summary, in any format and mode (report_markdown.py)
        from . import report, report_markdown

        if mode == "write" and args.format == "json":
            report.relocate_written(outcomes)  # the JSON ledger is out; the summary says where sites now stand
        problem = report_markdown.append_step_summary(outcomes, scanned, mode, target_info, sets, bool(args.verify))
        if problem:
            sys.stderr.write(f"cpasync-migrate: warning: {problem}\n")
    return code


def _emit(outcomes, scanned: int, mode: str, args, target_info: dict, rules, sets=(), out=None) -> int:
    from . import report
    from .findings import Status

    out = out or sys.stdout
    code = report.exit_code(outcomes, mode)
    if mode == "write" and args.format != "json":
        # what remains, where it now stands (the JSON ledger keeps the positions read, as --check has them)
        report.relocate_written(outcomes)
    if args.format == "json":
        report.dump_json(report.json_report(outcomes, scanned, mode, target_info, rules.versions, sets), out)
        return code
    if args.format == "sarif":
        from .report_sarif import sarif_report

        report.dump_json(sarif_report(outcomes, target_info, rules.versions, mode), out)
        return code
    if args.format == "markdown":
        from .report_markdown import markdown_summary

        out.write(markdown_summary(outcomes, scanned, mode, target_info, sets, bool(args.verify)) + "\n")
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
        _print_unapplied(outcomes, out)
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


def _print_unapplied(outcomes, out, show_unsafe: bool = False) -> None:
    """Sites left for a person and unapplied unsafe fixes, with reasons and assumptions."""
    from . import report
    from .findings import Status

    for f in report.all_findings(outcomes):
        if f.status in (Status.MANUAL, Status.UNSAFE, Status.UNPARSABLE) or (
                f.status is Status.REWRITTEN and f.fix and f.fix.assumptions):
            out.write(report.finding_line(f) + "\n")
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
