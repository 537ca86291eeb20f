"""Python front end: ``analyze`` (text in, findings and edits out) and ``reparse_problem``.

Two passes (the layout of this package, by job):

- ``fast.py``: a cheap, exact pass with the standard library's ``ast`` that decides most files
  (no call of the intrinsic, TVM's own wrapper, already-migrated calls, a fork's definitions);
- ``rewrite.py``: the libcst pass for the rest, its checks in ``checks/`` (``legacy_call``,
  ``access_ptr_call``) over ``context.py`` (metadata), ``bindings.py`` (declarations, aliases,
  dtypes), ``imports.py`` (the emitted alias), ``reach.py`` (which calls reach the intrinsic),
  ``smem.py``, ``callers.py``, ``definitions.py`` and ``layout.py``;
- ``reparse.py``: whether a rewritten text still parses;
- ``decide/``: what the facts either pass reads mean (one parser-free module per check; with
  ``route_rules.py`` and ``definition_rules.py``).
- ``window.py``: a large file analysed a few top-level definitions at a time, where that is exact.

``tests/test_python_fastpath.py`` checks that the two passes agree wherever the first answers.

Which runs let the fast pass decide legacy calls with their fixes (``fast.DECIDE_FIXES``) is ``fast_fixes``'s: a
``--check`` without ``--verify`` always; write mode, ``--diff`` and ``--verify`` while ``FAST_WRITE`` is on
(environment ``CPASYNC_MIGRATE_FAST_WRITE=0`` turns it off: those runs then send every legacy call that needs a
rewrite to libcst, as before).  Either way the engine applies the edits and re-parses the result before it is
written or shown; ``tests/test_fast_write.py`` checks that written files, diffs, reports and exit codes are the
same with the switch on and off.
"""
from __future__ import annotations

import os
from typing import Optional

from ..findings import Analysis, FrontEndOptions
from .calls import INTRINSIC, SUFFIXES, SUPPRESS_RE, call_shape  # noqa: F401 (the front end's names)


FAST_WRITE = os.environ.get("CPASYNC_MIGRATE_FAST_WRITE", "1") != "0"


def fast_fixes(mode: str, verify: bool) -> bool:
    """Whether the fast pass may decide legacy calls with their fixes in a run of ``mode`` ("check", "diff",
    "write"): ``--check`` alone (its reports carry each fix's edit text), else while ``FAST_WRITE`` is on."""
    return (mode == "check" and not verify) or FAST_WRITE


def analyze(text: str, path: str, options: FrontEndOptions, fast: bool = True, windowed: bool = True,
            style=None, fixes: bool = False) -> Analysis:
    """``style``: the whole file's file_style.FileStyle when ``text`` is a window of it.  ``fixes``: the fast pass
    may decide legacy calls with their fixes (``--check``: ``fast.DECIDE_FIXES``)."""
    if windowed:  # a large file, a few top-level definitions at a time, where that is exact (window.py)
        from .window import analyze as by_windows

        out = by_windows(text, options, lambda t, s: analyze(t, path, options, fast, windowed=False, style=s,
                                                              fixes=fixes))
        if out is not None:
            return out
    if fast:
        from .fast import findings

        quick = findings(text, path, options, fixes, style)
        if quick is not None:
            return quick
    from .rewrite import analyze as full

    return full(text, path, options, style)


def reparse_problem(old_text: str, new_text: str) -> Optional[str]:
    from .reparse import reparse_problem as rp  # the standard library's parser, else libcst

    return rp(old_text, new_text)
