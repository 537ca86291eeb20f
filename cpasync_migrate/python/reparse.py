"""The re-parse check of a rewritten Python file: does the new text still parse?

The check runs on the text the edits produce, so any parser of the language answers it.  It uses
the standard library's (the interpreter's own grammar, and no libcst import in a run whose files the
``ast`` pass decided) whenever that parser reads the original text; otherwise libcst's, behind the same gate
as every libcst parse (``parse_gate.py``: a text the standard parser refuses is never given to libcst, so
such a rewrite is refused; the analysis refuses such a file before any rewrite).
``STDLIB`` (environment ``CPASYNC_MIGRATE_STDLIB_REPARSE=0`` turns it off) switches the first; off,
every check uses libcst as before (a measuring switch; ``tests/test_python_reparse.py`` checks that
both give the same answer).
"""
from __future__ import annotations

import ast
import os
import warnings
from typing import Optional

from . import window

STDLIB = os.environ.get("CPASYNC_MIGRATE_STDLIB_REPARSE", "1") != "0"


def _stdlib_error(text: str) -> Optional[SyntaxError]:
    """The standard parser's error for ``text`` (None: it parses)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like: warnings, not errors
            ast.parse(text)
    except SyntaxError as e:
        return e
    except (ValueError, MemoryError, RecursionError) as e:  # NUL bytes; nesting deeper than the parser goes
        return SyntaxError(str(e))
    return None


def reparse_problem(old_text: str, new_text: str) -> Optional[str]:
    """Why ``new_text`` (the rewrite of ``old_text``) does not parse, or None.

    A large file is parsed a top-level statement at a time (window.py: memory bounded by the largest
    statement) where every piece of both texts parses alone; otherwise, and for every answer that
    is not None, the whole text is parsed."""
    if STDLIB and len(new_text) >= window.MIN_CHARS and window.parses_in_pieces(old_text) \
            and window.parses_in_pieces(new_text):
        return None
    if STDLIB and _stdlib_error(old_text) is None:
        e = _stdlib_error(new_text)
        return None if e is None else f"the rewritten text does not parse (line {e.lineno}: {e.msg})"
    from .rewrite import reparse_problem as libcst_problem

    return libcst_problem(old_text, new_text)
