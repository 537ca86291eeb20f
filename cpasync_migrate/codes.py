"""Diagnostic codes: the one registry of every code's name, severity, fix safety and summary.

Each code has a page, ``docs/codes/<CODE>.md`` (what it means, why, an example, fix safety); the
SARIF writer reads its rule help from there (:func:`page`).  This module imports nothing: the
lint path (``--check``) reads it on every run.

``severity`` is the level a finding of the code gets by default: ``error`` for a legacy site (one
that fails ``--check``), ``warning`` for a finding that does not change the exit code, ``note``
for information.  ``fix`` is the default fix safety: ``safe``, ``unsafe``, ``safe or unsafe``
(it depends on the site; each unsafe fix states its assumptions) or ``none``.
"""
from __future__ import annotations

from typing import NamedTuple, Optional


class Code(NamedTuple):
    name: str
    severity: str  # "error" | "warning" | "note"
    fix: str  # "safe" | "unsafe" | "safe or unsafe" | "none", with a parenthesised note where useful
    summary: str  # one line


# Python kernels and the Python API
LEGACY_CALL = "CPA001"
LEGACY_CALL_MANUAL = "CPA002"
TVM_NAMESPACE_CALL = "CPA003"
DTYPE_KEYWORD_ON_NEW_CALL = "CPA004"
SUSPICIOUS_SIZE = "CPA005"
LEGACY_API_DEFINITION = "CPA006"
LEGACY_RUNTIME_HELPER = "CPA007"
INTRINSIC_READ_AS_VALUE = "CPA008"
# Suppression comments
UNUSED_SUPPRESSION = "CPA010"
# C++ passes and code generators
CPP_CONSTRUCTION_BRACE_LIST = "CPA101"
CPP_CONSTRUCTION_ARGS_ARRAY = "CPA102"
CPP_CONSUMER_REWRITABLE = "CPA103"
CPP_CONSUMER_MANUAL = "CPA104"
CPP_LEGACY_HELPER_SIGNATURE = "CPA105"
CPP_DEAD_DUPLICATE_BRANCH = "CPA106"
CPP_DUAL_LAYOUT_BRANCH = "CPA107"
CPP_SITE_NEAR_PARSE_ERROR = "CPA108"
CPP_SITE_IN_MACRO = "CPA109"
CPP_REGISTRATION_LEGACY_ARITY = "CPA110"
CPP_MERGE_REBASE_REWRITABLE = "CPA111"
# Any file
FILE_ERROR = "CPA900"

CODES: dict[str, Code] = {
    LEGACY_CALL: Code(
        "legacy-call", "error", "safe or unsafe",
        "Legacy offset-form ptx_cp_async call with an automatic fix"),
    LEGACY_CALL_MANUAL: Code(
        "legacy-call-manual", "error", "none",
        "Legacy ptx_cp_async call the tool cannot migrate; the message says why"),
    TVM_NAMESPACE_CALL: Code(
        "tvm-namespace-call", "error", "none (opt-in with --migrate-tvm)",
        "Legacy call through TVM's namespace, whose wrapper keeps the legacy signature"),
    DTYPE_KEYWORD_ON_NEW_CALL: Code(
        "dtype-keyword-on-new-call", "error", "none",
        "Access-pointer call that still passes dtype=, which shifts every argument"),
    SUSPICIOUS_SIZE: Code(
        "suspicious-size", "warning", "none",
        "Access-pointer call whose size is not a whole number of elements or not a legal cp.async width "
        "under the target"),
    LEGACY_API_DEFINITION: Code(
        "legacy-api-definition", "error", "safe in the upstream shape (rewritten with its callers), else none",
        "The tree's own Python definition of ptx_cp_async with the legacy signature"),
    LEGACY_RUNTIME_HELPER: Code(
        "legacy-runtime-helper", "error", "unsafe alone, exact with the printer in its change set; else none",
        "Python runtime helper that takes the legacy (dst, dst_offset, src, src_offset) shape from a code "
        "generator"),
    INTRINSIC_READ_AS_VALUE: Code(
        "intrinsic-read-as-value", "error", "none",
        "ptx_cp_async read as a value along a route the tool does not follow to its calls (the message names "
        "the route)"),
    UNUSED_SUPPRESSION: Code(
        "unused-suppression", "warning", "none",
        "Suppression comment that suppresses nothing (no such site on its line or in its file, or an "
        "unknown code)"),
    CPP_CONSTRUCTION_BRACE_LIST: Code(
        "cpp-construction-brace-list", "error", "safe or unsafe",
        "C++ construction of a legacy ptx_cp_async call with an inline argument list"),
    CPP_CONSTRUCTION_ARGS_ARRAY: Code(
        "cpp-construction-args-array", "error", "safe or unsafe",
        "C++ construction of a legacy ptx_cp_async call through an argument array or an Op variable"),
    CPP_CONSUMER_REWRITABLE: Code(
        "cpp-consumer-rewritable", "error", "unsafe",
        "C++ consumer branch with the shape of the upstream code generator branch"),
    CPP_CONSUMER_MANUAL: Code(
        "cpp-consumer-manual", "error", "none",
        "C++ consumer that reads legacy argument positions"),
    CPP_LEGACY_HELPER_SIGNATURE: Code(
        "cpp-legacy-helper-signature", "error", "none",
        "C++ helper whose signature carries the legacy argument shape"),
    CPP_DEAD_DUPLICATE_BRANCH: Code(
        "cpp-dead-duplicate-branch", "error", "safe (deletes the branch, which never runs)",
        "Unreachable second ptx_cp_async branch in the same if/else chain"),
    CPP_DUAL_LAYOUT_BRANCH: Code(
        "cpp-dual-layout-branch", "note", "none",
        "Branch that accepts both layouts on purpose (information)"),
    CPP_SITE_NEAR_PARSE_ERROR: Code(
        "cpp-site-near-parse-error", "error", "none",
        "Site inside or next to a region tree-sitter cannot parse (macros, #if); not edited"),
    CPP_SITE_IN_MACRO: Code(
        "cpp-site-in-macro", "error", "none",
        "Macro definition that names the ptx_cp_async op; macros are not rewritten"),
    CPP_REGISTRATION_LEGACY_ARITY: Code(
        "cpp-registration-legacy-arity", "error", "unsafe (sets the target's arity)",
        "C++ registration of the ptx_cp_async op that declares a legacy arity (set_num_inputs(5) or (6))"),
    CPP_MERGE_REBASE_REWRITABLE: Code(
        "cpp-merge-rebase-rewritable", "error",
        "unsafe (opens the destination access pointer and re-bases it in its own type's units)",
        "Shared-memory merge pass branch that re-bases the legacy destination and rebuilds the call, in the "
        "upstream shape"),
    FILE_ERROR: Code(
        "file-error", "error", "none",
        "File cannot be read, decoded or parsed, or its rewrite does not re-parse"),
}

# Where each code's page lies, relative to the root of the tool's repository (and of the installed
# package, which carries the pages as ``cpasync_migrate/docs/codes``).
PAGE_PATH = "docs/codes/{code}.md"

# The absolute URI the repository's files are published under (ending in "/"), e.g.
# "https://github.com/<owner>/cpasync-migrate/blob/<commit>/".  None: the project has no public
# home yet, so SARIF carries no helpUri or informationUri (both must be absolute URIs) and names
# each page by its repository-relative path against the uriBaseId ``TOOL_ROOT`` instead.
DOCS_BASE_URI: Optional[str] = None
TOOL_ROOT = "CPASYNC_MIGRATE_ROOT"


def page_path(code: str) -> str:
    return PAGE_PATH.format(code=code)


def pages_dir():
    """The folder that holds the pages: ``docs/codes`` in the installed package or in a checkout."""
    from pathlib import Path

    here = Path(__file__).resolve().parent
    for cand in (here / "docs" / "codes", here.parent / "docs" / "codes"):
        if (cand / f"{LEGACY_CALL}.md").is_file():
            return cand
    return None


def page(code: str) -> Optional[str]:
    """The text of the code's page (Markdown); None when the pages are not installed."""
    d = pages_dir()
    if d is None:
        return None
    try:
        return (d / f"{code}.md").read_text(encoding="utf-8")
    except OSError:
        return None


def page_sections(text: str) -> dict:
    """``{"title": ..., "What": ..., "Why": ..., ...}``: a page's ``# title`` and ``## `` sections."""
    out: dict = {}
    key = None
    buf: list = []
    for line in text.splitlines():
        if line.startswith("# ") and "title" not in out:
            out["title"] = line[2:].strip()
            continue
        if line.startswith("## "):
            if key is not None:
                out[key] = "\n".join(buf).strip()
            key, buf = line[3:].strip(), []
            continue
        buf.append(line)
    if key is not None:
        out[key] = "\n".join(buf).strip()
    return out
