"""A fast loop for writing a check: one text through a front end, in-process, without the CLI.

    from harness import assert_fix, assert_no_fix

    assert_fix(src, expected)                      # the fixes the options allow turn src into expected
    assert_fix(src, expected, unsafe_fixes=True, target="0.1.9")
    assert_no_fix(src, code="CPA002")              # a CPA002 finding without a fix; the text stays

The language follows ``path`` (``k.py`` by default; ``k.cc`` for C++), as the engine picks it.  What runs is
what the engine runs for one file: the front end's ``analyze``, the suppression comments (``suppress.resolve``),
the choice of fixes (a finding with a fix and no status yet: safe fixes, and unsafe ones with
``unsafe_fixes=True``), ``apply_edits`` and the front end's re-parse check.  What does not run: file reading
and decoding, the results cache, change sets (a C++ reader whose assumption a complete set establishes needs
``unsafe_fixes=True`` here), the repository question of ``importers.py`` (a public macro's fix stays unsafe)
and the verifier.  Those are the CLI's: test them with ``conftest.run_cli``.

Options: ``target`` (a version or generation, default ``"0.1.8"``), ``source`` (``--from``; default the legacy
generation), ``style``, ``migrate_tvm``, ``line_length``, ``unsafe_fixes``, ``path``.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Optional

from cpasync_migrate import engine, suppress
from cpasync_migrate.findings import Finding, FrontEndOptions, apply_edits
from cpasync_migrate.rules import load_rules


@dataclass
class Result:
    text: str  # the text after the chosen fixes (the input where none applies)
    findings: list[Finding]

    def codes(self) -> list[str]:
        return [f.code for f in self.findings]


def options(*, target: str = "0.1.8", source: Optional[str] = None, style: str = "tvm_access_ptr",
            migrate_tvm: bool = False, line_length: int = 88) -> FrontEndOptions:
    rules = load_rules()
    return FrontEndOptions(rules=rules, target=rules.resolve(target),
                           source=rules.resolve(source) if source else rules.legacy,
                           style=style, migrate_tvm=migrate_tvm, line_length=line_length)


def run(src: str, *, path: str = "k.py", unsafe_fixes: bool = False, **opts) -> Result:
    """``src`` through the front end ``path`` names, with the fixes the options allow applied."""
    language = engine.language_of(path)
    if language is None:
        raise ValueError(f"{path}: no front end reads this suffix")
    fe, fe_opts = engine.front_end(language), options(**opts)
    analysis = fe.analyze(src, path, fe_opts)
    if "cpasync-migrate" in src:
        analysis = suppress.resolve(src, path, language, analysis, lambda t: fe.analyze(t, path, fe_opts))
    assert analysis.error is None, f"{path}: the front end cannot read the text: {analysis.error}"
    chosen = []
    for f in analysis.findings:
        if f.status is None and f.fix is not None and (f.fix.safe or unsafe_fixes):
            chosen += [e for e in f.fix.edits if e not in chosen]
    new = apply_edits(src, chosen) if chosen else src
    problem = fe.reparse_problem(src, new) if chosen else None
    assert problem is None, f"{path}: the fixed text does not re-parse: {problem}"
    return Result(new, list(analysis.findings))


def _diff(want: str, got: str) -> str:
    return "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "expected", "got"))


def assert_fix(src: str, expected: str, **opts) -> Result:
    """The fixes the options allow turn ``src`` into exactly ``expected`` (which must differ from ``src``)."""
    assert expected != src, "assert_fix wants a change; use assert_no_fix for a text that stays"
    r = run(src, **opts)
    assert r.text == expected, f"the fixed text differs:\n{_diff(expected, r.text)}\nfindings: {r.codes()}"
    return r


def assert_no_fix(src: str, code: Optional[str] = None, **opts) -> Result:
    """The text stays as it is, also with ``unsafe_fixes`` (unless the options say otherwise); with ``code``,
    there is a finding of that code and none of that code has a fix."""
    opts.setdefault("unsafe_fixes", True)
    r = run(src, **opts)
    assert r.text == src, f"a fix was applied:\n{_diff(src, r.text)}\nfindings: {r.codes()}"
    if code is not None:
        mine = [f for f in r.findings if f.code == code]
        assert mine, f"no {code} finding; found {r.codes()}"
        assert all(f.fix is None for f in mine), f"a {code} finding carries a fix"
    return r
