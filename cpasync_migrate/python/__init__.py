"""Python front end.

``analyze`` first runs a cheap exact filter with the standard library's
``ast`` (about 7x faster than libcst): a file in which no call can resolve to
``ptx_cp_async`` has no findings, so libcst (and its import) is skipped.
Every finding of the libcst pass is a call whose callee is spelled
``<expr>.ptx_cp_async``, ``ptx_cp_async`` or a name imported as
``ptx_cp_async``; the filter keeps every file that has such a call.
"""
from __future__ import annotations

import ast
from typing import Optional

from ..findings import Analysis, FrontEndOptions

SUFFIXES = (".py", ".pyi")
INTRINSIC = "ptx_cp_async"


def has_candidate_call(text: str) -> Optional[bool]:
    """True/False when decided by ``ast``; None when ``ast`` cannot parse the text."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    names = {INTRINSIC}
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.name == INTRINSIC and a.asname:
                    names.add(a.asname)
        elif isinstance(node, ast.Call):
            calls.append(node.func)
    for f in calls:
        if isinstance(f, ast.Attribute) and f.attr == INTRINSIC:
            return True
        if isinstance(f, ast.Name) and f.id in names:
            return True
    return False


def analyze(text: str, path: str, options: FrontEndOptions) -> Analysis:
    if has_candidate_call(text) is False:
        return Analysis([])
    from .rewrite import analyze as full

    return full(text, path, options)


def reparse_problem(old_text: str, new_text: str) -> Optional[str]:
    from .rewrite import reparse_problem as rp

    return rp(old_text, new_text)
