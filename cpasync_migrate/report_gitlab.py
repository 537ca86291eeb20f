"""GitLab code quality (``--format gitlab``): a JSON array of issues, one per reported finding, with the
SARIF writer's fingerprint (stable across runs, line shifts and re-layout), the path relative to the
repository root as GitLab expects it, and a severity GitLab knows (error: ``major``; warning: ``minor``;
note: ``info``).  A file the tool could not read or parse is a ``critical`` CPA900 issue.
"""
from __future__ import annotations

import hashlib

from .findings import FileOutcome, Status
from .paths import rel

_SEVERITY = {"error": "major", "warning": "minor", "note": "info"}


def gitlab_report(outcomes: list[FileOutcome], mode: str = "check") -> list[dict]:
    from .report import all_findings, level, message_with_assumptions, reported
    from .report_sarif import fingerprints

    prints = fingerprints(outcomes)
    out = []
    for f in all_findings(outcomes):
        if f.status is Status.SUPPRESSED or not reported(f, mode):
            continue
        msg = message_with_assumptions(f)
        out.append({
            "description": f"{f.code} {msg}",
            "check_name": f.code,
            "fingerprint": prints[id(f)],
            "severity": _SEVERITY[level(f)],
            "location": {"path": rel(f.path).replace("\\", "/"),
                         "lines": {"begin": f.line, "end": f.end_line or f.line}},
        })
    for o in outcomes:
        if o.error:
            key = hashlib.sha256(f"CPA900\0{rel(o.path)}\0{o.error}".encode("utf-8", "surrogateescape")).hexdigest()
            out.append({"description": f"CPA900 {o.error}", "check_name": "CPA900", "fingerprint": key,
                        "severity": "critical",
                        "location": {"path": rel(o.path).replace("\\", "/"), "lines": {"begin": o.error_line or 1}}})
    return out
