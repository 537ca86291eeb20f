"""The code registry, the code pages and the tests agree: every code the package can emit has a
registry entry, a page named after it whose title is the registry's name, and a test that expects it."""
import re
import tomllib

import pytest

from conftest import FIXTURES, ROOT
from cpasync_migrate import codes
from harness import assert_fix, assert_no_fix

PACKAGE = ROOT / "cpasync_migrate"
PAGES = ROOT / "docs" / "codes"
CODE_RE = re.compile(r"\bCPA\d{3}\b")
SECTIONS = ("What", "Why", "Example", "Fix safety")


def _source_codes() -> dict:
    """Every ``CPAnnn`` the package's source names, with one file that names it."""
    out = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        for c in CODE_RE.findall(p.read_text(encoding="utf-8")):
            out.setdefault(c, p.relative_to(ROOT).as_posix())
    return out


def _all_codes() -> list:
    return sorted(set(codes.CODES) | set(_source_codes()))


def _expected_codes_in_fixtures() -> set:
    """Codes a fixture's expected findings name (``code = ...`` in any table of a fixture's TOML)."""
    found = set()

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "code" and isinstance(v, str):
                    found.add(v)
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    for p in FIXTURES.rglob("*.toml"):
        walk(tomllib.loads(p.read_text(encoding="utf-8")))
    return found


def _expected_codes_in_tests() -> set:
    """Codes a test asserts on: a quoted ``"CPAnnn"`` literal in a test module."""
    found = set()
    for p in (ROOT / "tests").glob("test_*.py"):
        found.update(re.findall(r"""["'](CPA\d{3})["']""", p.read_text(encoding="utf-8")))
    return found


def test_the_source_names_only_registered_codes():
    missing = {c: where for c, where in _source_codes().items() if c not in codes.CODES}
    assert not missing, f"codes named in the source but not in codes.CODES: {missing}"


def test_the_registry_holds_what_the_writers_need():
    assert len(codes.CODES) >= 20
    names = [m.name for m in codes.CODES.values()]
    assert len(set(names)) == len(names), "two codes share a name"
    for c, m in codes.CODES.items():
        assert CODE_RE.fullmatch(c), c
        assert m.severity in ("error", "warning", "note"), c
        assert m.fix.split(" ")[0] in ("safe", "unsafe", "none"), (c, m.fix)
        assert m.summary and "\n" not in m.summary, c
    # the constants name the codes the engine and the suppression pass emit
    assert codes.CODES[codes.FILE_ERROR].name == "file-error"
    assert codes.CODES[codes.UNUSED_SUPPRESSION].name == "unused-suppression"
    assert codes.CODES[codes.CPP_SITE_IN_MACRO].name == "cpp-site-in-macro"


@pytest.mark.parametrize("code", _all_codes())
def test_every_code_has_its_page(code):
    page = PAGES / f"{code}.md"
    assert page.is_file(), f"{code} has no page docs/codes/{code}.md"
    text = page.read_text(encoding="utf-8")
    assert text.splitlines()[0] == f"# {code} {codes.CODES[code].name}"
    parts = codes.page_sections(text)
    for s in SECTIONS:
        assert parts.get(s), f"{code}: section '## {s}' is missing or empty"
    assert codes.page(code) == text, "the package reads the same page"


def test_every_page_is_a_code():
    assert sorted(p.stem for p in PAGES.glob("*.md")) == sorted(codes.CODES)


@pytest.mark.parametrize("code", _all_codes())
def test_every_code_is_expected_by_a_test(code):
    assert code in _expected_codes_in_fixtures() | _expected_codes_in_tests(), (
        f"no fixture under tests/fixtures and no test expects {code}")


def test_readme_table_lists_every_code_with_its_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Diagnostic codes\n", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| [CPA")]
    got = [re.fullmatch(r"\| \[(CPA\d{3})\]\(docs/codes/(CPA\d{3})\.md\) \| `([^`]+)` \| (.+) \| (.+) \| (.+) \|",
                        r).groups() for r in rows]
    want = [(c, c, m.name, m.severity, m.fix, m.summary) for c, m in sorted(codes.CODES.items())]
    assert got == want


def test_cpp_doc_links_each_cpp_code_page_instead_of_repeating_it():
    doc = (ROOT / "docs" / "cpp.md").read_text(encoding="utf-8")
    for c in (c for c in codes.CODES if c.startswith("CPA1")):
        assert f"[{c}](codes/{c}.md)" in doc
        assert f"### {c} " not in doc, f"docs/cpp.md still carries its own copy of {c}"


def test_fork_definition_and_runtime_helper():
    """A fork's own legacy definition of the API is CPA006 (fixed in the upstream shape), a CuTeDSL-style
    runtime helper CPA007: its fix (the offsets dropped) is unsafe alone, so only ``unsafe_fixes`` applies it
    outside a change set that also migrates its printer."""
    op = FIXTURES / "sets" / "own"
    before, after = (op.joinpath(n).read_text(encoding="utf-8") for n in ("op.in.py", "op.out.py"))
    r = assert_fix(before, after, path="tilelang/language/tir/op.py")
    assert [(f.line, f.code, f.role) for f in r.findings] == [(10, "CPA006", "definition")]
    helper = ('"""Runtime helpers the code generator prints calls of."""\n\n\n'
              "def cp_async_gs(size, dst, dst_offset, src, src_offset):\n"
              "    return _copy(size, dst + dst_offset, src + src_offset)\n")
    r = assert_no_fix(helper, path="tilelang/contrib/cutedsl/cpasync.py", unsafe_fixes=False)
    assert [(f.line, f.code, f.role, f.fix.applicability.name) for f in r.findings] == [
        (4, "CPA007", "reader", "UNSAFE")]
    migrated = ('"""Runtime helpers the code generator prints calls of."""\n\n\n'
                "def cp_async_gs(size, dst, src):\n"
                "    return _copy(size, dst, src)\n")
    assert_fix(helper, migrated, path="tilelang/contrib/cutedsl/cpasync.py", unsafe_fixes=True)
