"""C++ front end: TileLang passes and code generators, parsed with tree-sitter-cpp.

The engine calls :func:`analyze` for every file whose name ends with one of
:data:`SUFFIXES`, applies the fixes it chooses, and checks the result with
:func:`reparse_problem`.  Both are pure (no I/O besides reading the rules).
"""
from __future__ import annotations

from typing import Optional

from ..files import CPP_SUFFIXES as SUFFIXES  # discovery's list is the one list of C++ suffixes
from ..findings import Analysis, FrontEndOptions
from .analyzer import CppAnalyzer
from .source import error_summary

__all__ = ["SUFFIXES", "analyze", "reparse_problem"]


def analyze(text: str, path: str, options: FrontEndOptions) -> Analysis:
    """Every legacy ``ptx_cp_async`` site of one C++ file, with fixes.

    Edits are character offsets into ``text``; edits of different findings
    never overlap.  Suppressed sites carry ``Status.SUPPRESSED`` and no fix;
    information-only findings carry ``Status.INFO`` and ``legacy_site=False``.
    """
    from . import reparse, window

    reparse.forget()  # the tree kept is this file's or none
    data = text.encode("utf-8", "surrogatepass")
    shown, tree = window.attempt(text, path, options, data)  # a window that shows the file has no site (window.py)
    if shown is not None:
        return shown
    return CppAnalyzer(text, path, options, old_tree=tree, data=data).run()


def reparse_problem(old_text: str, new_text: str) -> Optional[str]:
    """None when ``new_text`` parses with no more ERROR/MISSING nodes than ``old_text``."""
    from . import reparse

    old, _ = error_summary(old_text)
    new, first_line = error_summary(new_text, rewrite_of=old_text if reparse.ENABLED else None)
    if new <= old:
        return None
    return (
        f"the rewritten text has {new} parse error(s) where the original had {old} "
        f"(first near line {first_line}); the original bytes are kept"
    )
