"""JUnit XML (``--format junit``), the report CI systems without SARIF support show as test results.

One ``<testsuite>`` per file that has something to report, one ``<testcase>`` per reported finding
(``CODE at line:column``) with a ``<failure>`` for an error, none for a warning or note, and one
``<testcase>`` with an ``<error>`` for a file the tool could not read or parse; a run with nothing to
report is one suite with one passing case, as ruff writes it.  Findings are those the SARIF and GitHub
formats list (after a write, what remains).
"""
from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from .findings import FileOutcome, Status
from .paths import rel


def _clean(s: str) -> str:
    """Free of what XML 1.0 cannot carry: control characters, and the surrogates that stand for the bytes of
    a file name that is not UTF-8 (each written as ``\\xNN``)."""
    return "".join(c if (c in "\t\n\r" or ord(c) >= 0x20) and not 0xD800 <= ord(c) <= 0xDFFF
                   else f"\\x{ord(c) & 0xFF:02x}" for c in s)


def _text(s: str) -> str:
    return escape(_clean(s))


def _attr(s: str) -> str:
    return quoteattr(_clean(s))


def junit_report(outcomes: list[FileOutcome], mode: str = "check") -> str:
    from .report import all_findings, level, message_with_assumptions, reported

    by_file: dict[str, list] = {}
    for f in all_findings(outcomes):
        if f.status is Status.SUPPRESSED or not reported(f, mode):
            continue
        by_file.setdefault(f.path, []).append(f)
    errors = {o.path: o for o in outcomes if o.error}
    suites = []
    total = failures = errored = 0
    for path in sorted(set(by_file) | set(errors)):
        name = rel(path)
        cases = []
        n_fail = 0
        for f in by_file.get(path, ()):
            msg = message_with_assumptions(f)
            body = f"{name}:{f.line}:{f.column}: {f.code} {msg}"
            case = f'    <testcase classname={_attr(name)} name={_attr(f"{f.code} at {f.line}:{f.column}")}'
            if level(f) == "error":
                n_fail += 1
                cases.append(f"{case}>\n      <failure message={_attr(msg)} type={_attr(f.code)}>"
                             f"{_text(body)}</failure>\n    </testcase>")
            else:
                cases.append(f"{case}>\n      <system-out>{_text(body)}</system-out>\n    </testcase>")
        o = errors.get(path)
        if o is not None:
            errored += 1
            cases.append(f"    <testcase classname={_attr(name)} name={_attr('read and parse')}>\n"
                         f"      <error message={_attr(o.error)} type=\"CPA900\">{_text(o.error)}</error>\n"
                         f"    </testcase>")
        total += len(cases)
        failures += n_fail
        suites.append(f"  <testsuite name={_attr(name)} tests=\"{len(cases)}\" failures=\"{n_fail}\" "
                      f"errors=\"{1 if o is not None else 0}\">\n" + "\n".join(cases) + "\n  </testsuite>")
    if not suites:
        total = 1
        suites.append('  <testsuite name="cpasync-migrate" tests="1" failures="0" errors="0">\n'
                      '    <testcase classname="cpasync-migrate" name="no legacy ptx_cp_async sites"/>\n'
                      '  </testsuite>')
    head = (f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="cpasync-migrate" tests="{total}" '
            f'failures="{failures}" errors="{errored}">')
    return head + "\n" + "\n".join(suites) + "\n</testsuites>\n"
