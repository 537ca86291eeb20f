"""SARIF 2.1.0: rules with their help (read from each code's page), results with fingerprints and,
under ``--verify``, the proof verdict of the kernel around each site.

Fingerprints (``partialFingerprints["cpasyncSite/v1"]``): the SHA-256 of the code, the path as
reported, the site's source text with all white space and every comma before a closing bracket
removed (:func:`site_text`), and the site's occurrence index among the file's findings of that code
and text (in position order).  Line and column numbers play no part, so a result keeps its
fingerprint when lines above it are added or removed, when the call is laid out again (a formatter,
a trailing comma added), and across runs; two identical sites of one file differ by their index.
"""
from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from typing import Iterable, Optional

from . import __version__
from . import codes
from .codes import CODES, TOOL_ROOT, page, page_path, page_sections
from .findings import FileOutcome, Finding, Status
from .paths import rel

FINGERPRINT_KEY = "cpasyncSite/v1"


def _slashed(path: str) -> str:
    return rel(path).replace(os.sep, "/")


def _uri(path: str) -> str:
    """The path as a relative URI reference (RFC 3986): every byte outside the unreserved set and ``/``
    percent-encoded (a space, ``#``, ``%``, non-ASCII; a name that is not UTF-8 by its own bytes)."""
    from urllib.parse import quote

    return quote(_slashed(path).encode("utf-8", "surrogateescape"), safe="/")


def _plain(markdown: str) -> str:
    """The page as plain text: no heading marks, no code fences."""
    out = []
    fenced = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if line.startswith("#") and not fenced:
            line = line.lstrip("#").strip()
        out.append(line)
    return "\n".join(out).strip() + "\n"


def rule(code: str) -> dict:
    """The SARIF reportingDescriptor of a code: name, descriptions and help from its page."""
    meta = CODES.get(code)
    if meta is None:  # a code the registry lacks (tests/test_codes.py keeps this from happening)
        return {"id": code, "name": code, "shortDescription": {"text": code}}
    out = {
        "id": code,
        "name": meta.name,
        "shortDescription": {"text": meta.summary},
        "defaultConfiguration": {"level": meta.severity},
    }
    text = page(code)
    if text is not None:
        what = page_sections(text).get("What")
        if what:
            out["fullDescription"] = {"text": " ".join(what.split()), "markdown": what}
        out["help"] = {"text": _plain(text), "markdown": text}
    if codes.DOCS_BASE_URI:
        out["helpUri"] = codes.DOCS_BASE_URI + page_path(code)
    out["properties"] = {"fix": meta.fix, "page": {"uri": page_path(code), "uriBaseId": TOOL_ROOT}}
    return out


def site_text(text: str) -> str:
    """A site's text as its fingerprint reads it: no white space, and no comma before a closing
    bracket, so a formatter's re-layout (a trailing comma added or dropped) keeps the fingerprint."""
    return re.sub(r",(?=[)\]}])", "", "".join(text.split()))


def fingerprints(outcomes: Iterable[FileOutcome]) -> dict:
    """``id(finding) -> fingerprint`` for every finding of the run (see the module's docstring)."""
    out = {}
    for o in outcomes:
        seen: Counter = Counter()
        for f in sorted(o.findings, key=Finding.sort_key):
            path = _slashed(f.path)  # the path as written: fingerprints predate the URIs' encoding
            text = site_text(f.original or "")
            n = seen[(f.code, text)]
            seen[(f.code, text)] += 1
            out[id(f)] = hashlib.sha256(f"{f.code}\0{path}\0{text}\0{n}".encode("utf-8", "surrogateescape")).hexdigest()
    return out


def _verdicts_by_site(o: FileOutcome) -> tuple[dict, dict]:
    """The file's verdicts by site line (of the text its findings point into) and by kernel name."""
    by_line: dict = {}
    by_kernel: dict = {}
    for v in o.verdicts:
        by_kernel.setdefault(v.get("kernel"), v)
        for s in v.get("sites") or ():
            line = s.get("new_line") if o.written else s.get("line")
            if line is not None:
                by_line.setdefault(line, (v, s))
    return by_line, by_kernel


def verdict_properties(f: Finding, by_line: dict, by_kernel: dict) -> Optional[dict]:
    """What ``--verify`` said about the site: its own verdict where the verifier checked it, else the
    kernel's; the counterexample on a mismatch."""
    hit = by_line.get(f.line)
    if hit is not None:
        v, s = hit
    else:
        v, s = by_kernel.get(f.function) or by_kernel.get("*"), None
        if v is None:
            return None
    out = {
        "kernel": v.get("kernel"),
        "kernel_verdict": v.get("verdict"),
        "kernel_reason": v.get("reason"),
        "verdict": (s or v).get("verdict"),
        "verdict_reason": (s or v).get("reason"),
    }
    if out["verdict"] == "mismatch" or out["kernel_verdict"] == "mismatch":
        example = {}
        first = (v.get("detail") or {}).get("first_difference")
        if first:
            example["first_difference"] = first
        failed = [c for c in (s or {}).get("checks") or () if not c.get("ok")]
        if failed:
            example["failed_checks"] = failed
        if example:
            out["counterexample"] = example
    return out


def sarif_report(outcomes: list[FileOutcome], target_info: dict, rules_versions: dict,
                 mode: str = "check") -> dict:
    from .report import all_findings, message_with_assumptions, reported
    from .report import level as finding_level

    prints = fingerprints(outcomes)
    verdicts = {o.path: _verdicts_by_site(o) for o in outcomes if o.verdicts}
    findings = [f for f in all_findings(outcomes) if reported(f, mode)]
    used = sorted({f.code for f in findings})
    rule_index = {c: i for i, c in enumerate(used)}
    rules = [rule(c) for c in used]
    results = []
    for f in findings:
        level = finding_level(f)
        props = {"status": f.status.value, "function": f.function,
                 "steps": list(f.fix.steps) if f.fix else [],
                 **({"set_id": f.set_id, "role": f.role} if f.set_id else {})}
        if f.path in verdicts:
            vp = verdict_properties(f, *verdicts[f.path])
            if vp is not None:
                props["verify"] = vp
        res = {
            "ruleId": f.code,
            "ruleIndex": rule_index[f.code],
            "level": level,
            "message": {"text": message_with_assumptions(f)},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(f.path), "uriBaseId": "%SRCROOT%"},
                    "region": {"startLine": f.line, "startColumn": f.column,
                               "endLine": f.end_line, "endColumn": f.end_column},
                }
            }],
            "partialFingerprints": {FINGERPRINT_KEY: prints[id(f)]},
            "properties": props,
        }
        if f.status is Status.SUPPRESSED:
            res["suppressions"] = [{"kind": "inSource"}]
        if f.fix is not None and f.replacement is not None:
            res["fixes"] = [{
                "description": {"text": f"{f.fix.applicability.value} fix"},
                "artifactChanges": [{
                    "artifactLocation": {"uri": _uri(f.path), "uriBaseId": "%SRCROOT%"},
                    "replacements": [{
                        "deletedRegion": {"startLine": f.line, "startColumn": f.column,
                                          "endLine": f.end_line, "endColumn": f.end_column},
                        "insertedContent": {"text": f.replacement},
                    }],
                }],
            }]
        results.append(res)
    invocation = {"executionSuccessful": not any(o.error for o in outcomes)}
    notes = [{"level": "error", "message": {"text": o.error},
              "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(o.path)}}}]}
             for o in outcomes if o.error]
    if notes:
        invocation["toolExecutionNotifications"] = notes
    base = codes.DOCS_BASE_URI
    driver = {
        "name": "cpasync-migrate",
        "version": __version__,
        **({"informationUri": base + "README.md"} if base else {}),
        "locations": [{"uri": "README.md", "uriBaseId": TOOL_ROOT}],
        "rules": rules,
    }
    tool_root = ({"uri": base} if base else
                 {"description": {"text": "the root of the cpasync-migrate repository, which holds README.md and "
                                          "docs/codes/ (the project has no public URI yet)"}})
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": driver},
            "invocations": [invocation],
            "originalUriBaseIds": {"%SRCROOT%": {"uri": _cwd_uri()}, TOOL_ROOT: tool_root},
            "results": results,
            "properties": {"target": target_info, "rules": rules_versions,
                           "verdicts": [dict(v, path=rel(o.path)) for o in outcomes for v in o.verdicts]},
        }],
    }


def _cwd_uri() -> str:
    from pathlib import Path

    return Path(os.getcwd()).resolve().as_uri() + "/"
