"""The house: the front door's links and commands, one home per fact, one copy per page."""
from __future__ import annotations

import functools
import re
import shlex
import tomllib
import unicodedata
from pathlib import Path

import pytest

from conftest import ROOT

README = ROOT / "README.md"
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
DOC_PAGES = [README, CONTRIBUTING, *sorted((ROOT / "docs").glob("*.md"))]

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    h = heading.strip().lower()
    h = "".join(ch for ch in h if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return h.replace(" ", "-")


def _anchors(path) -> set:
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    return {_anchor(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def _links(path) -> list:
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    return [m.group(1) for m in _LINK.finditer(text)]


def _broken(path) -> list:
    bad = []
    for target in _links(path):
        if re.match(r"[a-z]+:", target):  # https:, mailto:: not checked offline
            continue
        file, _, frag = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif frag and dest.suffix == ".md" and frag not in _anchors(dest):
            bad.append(f"{target}: no heading #{frag} in {dest.name}")
    return bad


def test_anchor_rule():
    assert _anchor("Change sets: one migration of one program") == "change-sets-one-migration-of-one-program"
    assert _anchor("Proving the rewrite: `--verify`") == "proving-the-rewrite---verify"
    assert _anchor("In CI: reports, pre-commit, editors") == "in-ci-reports-pre-commit-editors"


def test_link_checker_sees_a_broken_link(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# Top\n\n[ok](#top) [gone](nowhere.md) [bad](#bottom) `[code](x.md)`\n"
                    "```\n[fenced](y.md)\n```\n", encoding="utf-8")
    assert _broken(page) == ["nowhere.md: no such file", "#bottom: no heading #bottom in p.md"]


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve(page):
    assert _broken(page) == []


def test_readme_is_a_front_door():
    text = README.read_text(encoding="utf-8")
    n = text.count("\n")
    assert n < 300, f"README has {n} lines"
    for heading in ("## Quick start", "## Usage", "## Modes", "### Exit codes", "## Configuration",
                    "## Diagnostic codes"):
        assert f"\n{heading}" in text
    assert "CONTRIBUTING.md" in text and "docs/design.md" in text


def _quick_start_commands() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)\n```", section, re.S)


def test_quick_start_commands_name_real_things():
    """The two fresh-machine commands: install and run on the bundled examples, install and test."""
    install_run, install_test = _quick_start_commands()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    script = next(iter(project["scripts"]))
    for cmd in (install_run, install_test):
        parts = [shlex.split(p) for p in cmd.split("&&")]
        assert parts[0] == ["python3", "-m", "venv", ".venv"]
        assert parts[1][:2] == [".venv/bin/pip", "install"]
    # install . + run the console script on a folder of the repository that holds kernels
    _, pip, run = (shlex.split(p) for p in install_run.split("&&"))
    assert pip[2] == "."
    assert run[0] == f".venv/bin/{script}"
    folder = ROOT / run[-1]
    assert folder.is_dir() and any("ptx_cp_async(" in f.read_text() for f in folder.glob("*.py"))
    # install the test extra + pytest, whose -n needs pytest-xdist from that extra
    _, pip, test = (shlex.split(p) for p in install_test.split("&&"))
    extra = re.fullmatch(r"\.\[(\w+)\]", pip[2]).group(1)
    deps = project["optional-dependencies"][extra]
    assert any(d.startswith("pytest>") for d in deps)
    assert test[:3] == [".venv/bin/python", "-m", "pytest"]
    if "-n" in test:
        assert any(d.startswith("pytest-xdist") for d in deps)
    assert (ROOT / "tests").is_dir() and (ROOT / ".ci" / "run").is_file()


def test_readme_claims_no_qualified_name_provider():
    """The Python front end resolves names through ScopeProvider on demand, not QualifiedNameProvider."""
    for page in DOC_PAGES:
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"QualifiedNameProvider", text):
            around = text[max(0, m.start() - 200): m.end() + 40]
            assert "not used" in around, f"{page.name} says calls are resolved by QualifiedNameProvider"
    code = "\n".join(p.read_text() for p in (ROOT / "cpasync_migrate" / "python").glob("*.py"))
    assert "QualifiedNameProvider," not in code and "QualifiedNameProvider)" not in code


def test_dated_benchmark_run_only_in_benchmarks_page():
    stamp = re.compile(r"20\d\d-\d\d-\d\d,? \d\d:\d\d to \d\d:\d\d UTC")
    homes = [p.relative_to(ROOT) for p in DOC_PAGES if stamp.search(p.read_text(encoding="utf-8"))]
    assert [str(h) for h in homes] == ["docs/benchmarks.md"]


def test_cpp_chapter_has_one_copy():
    readme = README.read_text(encoding="utf-8")
    cpp = (ROOT / "docs" / "cpp.md").read_text(encoding="utf-8")
    assert "README: the C++ section" not in cpp
    assert "**What is found**" in cpp and "**What is found**" not in readme
    # a long sentence of the chapter is in one of the two only
    probe = "Vendored TVM sources (`3rdparty/tvm`) use TVM's own `ptx_cp_async`"
    assert (probe in readme) + (probe in cpp) == 1


# ------------------------------------------------------------------ no page repeats another

# Pages the README still repeats (a table or a sentence), left to the README's restructuring: may only shrink.
README_COPIES = {"docs/targets.md": "the generations table"}
_ROW_WORDS, _SENTENCE_WORDS = 8, 10


def _units(text: str) -> set:
    """The table rows of ``_ROW_WORDS`` words or more and the sentences of ``_SENTENCE_WORDS`` or more (headings,
    fenced blocks aside) of a page, white space folded."""
    text = _FENCE.sub("", text)
    out = {" ".join(line.split()) for line in text.splitlines()
           if line.startswith("|") and len(line.split()) >= _ROW_WORDS and not re.fullmatch(r"[\s|:-]+", line)}
    prose = " ".join(re.sub(r"^\s*[|#].*$", "", text, flags=re.M).split())
    out |= {s.strip(" -*") for s in re.split(r"(?<=[.;:!?])\s+(?=[A-Z`(*])", prose)
            if len(s.split()) >= _SENTENCE_WORDS}
    return out


def _copies(pages: dict) -> dict:
    """{(page, other page): the units both hold} over ``pages`` (name -> text); two code pages may share a unit
    (each code's page stands alone)."""
    units = {name: _units(text) for name, text in pages.items()}
    names = sorted(units)
    out = {}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            both = units[a] & units[b]
            if both and not (a.startswith("docs/codes/") and b.startswith("docs/codes/")):
                out[(a, b)] = sorted(both)
    return out


def test_no_page_repeats_another():
    pages = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
             for p in [*DOC_PAGES, *sorted((ROOT / "docs" / "codes").glob("*.md"))]}
    found = _copies(pages)
    assert {k: v for k, v in found.items() if "README.md" not in k} == {}
    assert {b for a, b in found if a == "README.md"} <= set(README_COPIES)


def test_the_copy_check_sees_a_copied_row_and_sentence():
    row = "| 2 | a file error: a file that cannot be read or parsed |"
    said = "A broken file never stops the others from being processed in one run."
    pages = {"docs/a.md": f"# A\n\n{row}\n\n{said} More.\n", "docs/b.md": f"{said}\n\n```\n{row}\n```\n",
             "docs/codes/CPA1.md": f"{row}\n", "docs/codes/CPA2.md": f"{row}\n"}
    assert _copies(pages) == {("docs/a.md", "docs/b.md"): [said], ("docs/a.md", "docs/codes/CPA1.md"): [row],
                              ("docs/a.md", "docs/codes/CPA2.md"): [row]}


def _generation_rows(text: str) -> list:
    """(generation, releases, size) of each row of a page's generations table."""
    head = "| generation | TileLang releases | call | size argument |"
    if head not in text:
        return []
    rows = []
    for line in text.split(head, 1)[1].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows.append((cells[0].strip("`"), cells[1], cells[3]))
    return rows


@pytest.mark.parametrize("page", [ROOT / "docs" / "targets.md", README], ids=lambda p: p.name)
def test_a_generations_table_says_what_the_rules_say(page):
    """Releases and size meanings are version facts of rules/*.toml; a page's table of them follows the rules."""
    from cpasync_migrate.rules import load_rules

    rows = _generation_rows(page.read_text(encoding="utf-8"))
    if page.name == "targets.md":
        assert rows, "docs/targets.md has no generations table"
    gens = load_rules(str(ROOT / "rules")).generations
    want = []
    for i, g in enumerate(gens):
        releases = (f"<= {g.covers_max}" if i == 0 else f">= {g.covers_min}" if i == len(gens) - 1
                    else f"{g.covers_min} .. {g.covers_max}")
        want.append((g.name, releases, g.size_meaning))
    assert [(n, r, "num_elems" if "num_elems" in s else s) for n, r, s in rows] == (want if rows else [])


# ------------------------------------------------------------------ one home per fact: the intrinsic's name

def _rules_intrinsic() -> str:
    data = tomllib.loads((ROOT / "rules" / "namespaces.toml").read_text(encoding="utf-8"))
    return data["intrinsic"]["name"]


def _string_spellings(name: str) -> list[str]:
    """Every string or bytes literal of the package (docstrings aside) that holds ``name`` and no white
    space: a spelling code matches against (a message to a person has spaces)."""
    out = []
    for rel, lineno, v in _code_strings(ROOT / "cpasync_migrate"):
        if name in v and not re.search(r"\s", v):
            out.append(f"{rel}:{lineno}: {v!r}")
    return out


@functools.lru_cache(maxsize=None)
def _code_strings(package: Path) -> tuple:
    """(file, line, text) of every string or bytes literal of the package that is not a docstring."""
    import ast

    out = []
    for f in sorted(package.rglob("*.py")):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for n in ast.walk(tree):
            if isinstance(n, ast.Constant) and isinstance(n.value, (str, bytes)) and id(n) not in docs:
                v = n.value.decode("latin-1") if isinstance(n.value, bytes) else n.value
                out.append((str(f.relative_to(ROOT)), n.lineno, v))
    return tuple(out)


# Spellings of the intrinsic's name that stay in code, each with its reason (none today).
NAME_ALLOWED: dict[str, str] = {}


def test_intrinsic_name_is_spelled_only_in_the_rules():
    name = _rules_intrinsic()
    assert _string_spellings(name) == sorted(NAME_ALLOWED)
    assert _string_spellings("ptx_cp_async") == sorted(NAME_ALLOWED)  # the scan reads what is there


def test_suppression_marker_is_spelled_only_in_the_rules():
    """The suppression comment (``[suppress] comment``) is matched by the prefilter and by the Python front end's
    line pattern; both derive it from the rules, so no code string spells its marker (messages to a person,
    which have spaces, may)."""
    data = tomllib.loads((ROOT / "rules" / "namespaces.toml").read_text(encoding="utf-8"))
    marker = data["suppress"]["comment"].partition(":")[0]
    assert _string_spellings(marker + ":") == []
    assert _string_spellings(marker.replace("-", "\\-")) == []  # a pattern escaping it
    comment = data["suppress"]["comment"]
    assert [f"{rel}:{line}" for rel, line, v in _code_strings(ROOT / "cpasync_migrate") if v == comment] == []


def test_spelling_scan_sees_a_spelling(tmp_path, monkeypatch):
    pkg = tmp_path / "cpasync_migrate"
    pkg.mkdir()
    (pkg / "m.py").write_text('"""ptx_cp_async in a docstring."""\nX = "ptx_cp_async"\nY = "a ptx_cp_async call"\n')
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert _string_spellings("ptx_cp_async") == ["cpasync_migrate/m.py:2: 'ptx_cp_async'"]


def test_a_renamed_intrinsic_is_what_every_matcher_looks_for(tmp_path):
    """A rules folder whose [intrinsic] name differs: the byte prefilter, the site count, the cost model, the
    Python front end's patterns, the fork-definition probe and the verifier all follow it."""
    import shutil
    import subprocess
    import sys

    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules)
    ns = rules / "namespaces.toml"
    ns.write_text(ns.read_text(encoding="utf-8").replace('name = "ptx_cp_async"', 'name = "cp_async_v2"'),
                  encoding="utf-8")
    probe = r'''
import ast
from cpasync_migrate import engine, files, rules
from cpasync_migrate.python import calls, fast
from cpasync_migrate.verify import coverage
assert rules.load_rules().intrinsic == "cp_async_v2"
assert files.NEEDLE == b"cp_async_v2" and files.has_needle(b"x cp_async_v2(") and not files.has_needle(b"ptx_cp_async(")
assert calls.INTRINSIC == "cp_async_v2"
assert engine._count_sites("T.cp_async_v2(a)\nT.ptx_cp_async(b)\n") == [(1, 3)]
assert fast.may_call("T.cp_async_v2(a)") and not fast._CALL_TEXT.search("T.ptx_cp_async(a)")
assert coverage.site_lines(ast.parse("T.ptx_cp_async(1)\nT.cp_async_v2(2)\n")) == [2]
print("ok")
'''
    env = {**__import__("os").environ, "CPASYNC_MIGRATE_RULES": str(rules)}
    r = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]


# ------------------------------------------------------------------ rule values are typed at load

def _rules_copy(tmp_path, file: str, old: str, new: str):
    import shutil

    d = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", d)
    f = d / file
    text = f.read_text(encoding="utf-8")
    assert old in text, (file, old)
    f.write_text(text.replace(old, new, 1), encoding="utf-8")
    return d


@pytest.mark.parametrize("file,old,new,key,why", [
    ("tilelang-0.1.9.toml", "widths = [4, 8, 16]", 'widths = "sixteen"', "widths = 'sixteen' in [generation]",
     "a list of integers"),
    ("tilelang-0.1.8.toml", "widths = [4, 8, 16]", 'widths = [4, "8", 16]', "widths = [4, '8', 16] in [generation]",
     "a list of integers"),
    ("legacy.toml", "size_literal = false", "size_literal = 0", "size_literal = 0 in [generation]", "true or false"),
    ("tilelang-0.1.8.toml", 'form = "access_ptr"', 'form = "access_pointer"',
     "form = 'access_pointer' in [generation]", "one of 'offset', 'access_ptr'"),
    ("tilelang-0.1.8.toml", "num_inputs = -1", 'num_inputs = "-1"', "num_inputs = '-1' in [cpp]",
     "an integer or a list of integers"),
    ("dtypes.toml", "float16 = 2", 'float16 = "two"', "float16 = 'two' in [sizes]", "an integer"),
    ("namespaces.toml", 'name = "ptx_cp_async"', "name = 7", "name = 7 in [intrinsic]", "a string"),
    ("namespaces.toml", "emit_alias = ", "emit_alias = [] #", "emit_alias = [] in [tilelang]", "a string"),
    ("shared_memory.toml", "min_allocations = 2", "min_allocations = 2.0", "min_allocations = 2.0 in the top level",
     "an integer"),
    ("cpp.toml", '"builtin" = "tir.ptx_cp_async"', '"builtin" = 1', "builtin = 1 in [op.ops]", "a string"),
])
def test_rule_values_are_type_checked(tmp_path, file, old, new, key, why):
    from cpasync_migrate.rules import RulesError, load_rules

    d = _rules_copy(tmp_path, file, old, new)
    with pytest.raises(RulesError) as e:
        load_rules(str(d))
    assert str(e.value) == f"{d / file}: {key}: expected {why}"


def test_the_bundled_rules_load_typed():
    from cpasync_migrate.rules import load_rules

    r = load_rules(str(ROOT / "rules"))
    assert all(isinstance(w, int) for g in r.generations for w in g.widths)
    assert [g.form for g in r.generations] == ["offset", "access_ptr", "access_ptr"]


def test_a_mistyped_rules_folder_is_a_usage_error(tmp_path):
    from conftest import run_cli

    d = _rules_copy(tmp_path, "tilelang-0.1.9.toml", "widths = [4, 8, 16]", 'widths = "sixteen"')
    k = tmp_path / "k.py"
    k.write_text("x = 1\n")
    r = run_cli("--check", k, env={"CPASYNC_MIGRATE_RULES": str(d)})
    assert r.returncode == 3
    assert f"{d / 'tilelang-0.1.9.toml'}: widths = 'sixteen' in [generation]: expected a list of integers" in r.stderr


# ------------------------------------------------------------------ one copy of each code's page

# The modules whose findings carry these codes; each docstring names the code and points to its page.
CHECK_MODULES = {
    "python/checks/legacy_call.py": ("CPA001", "CPA002"),
    "python/checks/access_ptr_call.py": ("CPA004", "CPA005"),
    "python/definitions.py": ("CPA006", "CPA007"),
    "python/checks/value_read.py": ("CPA008",),
    "cpp/constructions.py": ("CPA101", "CPA102", "CPA110"),
    "cpp/consumers.py": ("CPA103", "CPA104", "CPA106", "CPA107"),
    "cpp/declarations.py": ("CPA105", "CPA109"),
    "cpp/merge.py": ("CPA111",),
}
# Codes made outside a check module: CPA003 where a call is resolved (rewrite.py, fast.py), CPA010 by the
# suppression pass, CPA108 by any C++ family (cpp/context.py), CPA900 by the engine.
NOT_IN_A_CHECK_MODULE = {"CPA003", "CPA010", "CPA108", "CPA900"}
# Docstrings that use What:/Why: for something that is no code's page.
SECTIONS_ALLOWED = {"python/reach.py": "which calls reach the intrinsic: the module's own job, no code's page"}
_PAGE_SECTION = re.compile(r"^\s*(What|Why|Example|Fix safety|Fix)( \(\w+\))?:{1,2}", re.M)


def _docstrings(path):
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    for n in ast.walk(tree):
        if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            d = ast.get_docstring(n, clean=True)
            if d:
                yield getattr(n, "name", "<module>"), d


def test_every_code_has_its_check_module_or_a_reason():
    from cpasync_migrate import codes

    listed = [c for cs in CHECK_MODULES.values() for c in cs]
    assert len(listed) == len(set(listed))
    assert set(listed) | NOT_IN_A_CHECK_MODULE == set(codes.CODES)


@pytest.mark.parametrize("module", sorted(CHECK_MODULES))
def test_a_check_module_points_to_its_pages_and_does_not_repeat_them(module):
    from cpasync_migrate import codes

    path = ROOT / "cpasync_migrate" / module
    doc = dict(_docstrings(path))["<module>"]
    for code in CHECK_MODULES[module]:
        line = f"{code} {codes.CODES[code].name}: docs/codes/{code}.md"
        assert line in doc, f"{module} does not point to {code}'s page as {line!r}"
        assert (ROOT / "docs" / "codes" / f"{code}.md").is_file()
    assert _PAGE_SECTION.search(doc) is None, f"{module} repeats a page section"


def test_no_docstring_of_the_package_repeats_a_page():
    found = []
    for path in sorted((ROOT / "cpasync_migrate").rglob("*.py")):
        rel = str(path.relative_to(ROOT / "cpasync_migrate"))
        for where, doc in _docstrings(path):
            if re.search(r"CPA\d{3}", doc) and _PAGE_SECTION.search(doc) and rel not in SECTIONS_ALLOWED:
                found.append(f"{rel}:{where}")
    assert found == []


def test_the_page_section_rule_sees_a_copy():
    doc = "CPA101 (cpp-construction-brace-list)\n    What: a call.\n    Why: because.\n    Fix (unsafe): this."
    assert _PAGE_SECTION.search(doc)
    assert not _PAGE_SECTION.search("CPA101 cpp-construction-brace-list: docs/codes/CPA101.md.")


def test_one_registry_of_codes():
    """cpp/ has no codes of its own and rewrite.py no aliases: both read cpasync_migrate/codes.py."""
    assert not (ROOT / "cpasync_migrate" / "cpp" / "codes.py").exists()
    pkg = ROOT / "cpasync_migrate"
    aliases = []
    for path in sorted(pkg.rglob("*.py")):
        if path.name == "codes.py" and path.parent == pkg:
            continue
        text = path.read_text(encoding="utf-8")
        aliases += [f"{path.relative_to(pkg)}: {m.group(0)}"
                    for m in re.finditer(r"^\w+ = (codes\.[A-Z_0-9]+|\"CPA\d{3}\")$", text, re.M)]
    assert aliases == []


# Second names for a code imported from the registry (`from .codes import X as Y`): none left; may only shrink.
CODE_IMPORT_ALIASES: set = set()


def _code_import_aliases(package: Path) -> set:
    import ast

    out = set()
    for path in sorted(package.rglob("*.py")):
        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[-1] == "codes":
                out |= {f"{path.relative_to(package)}: {a.name} as {a.asname}" for a in n.names
                        if a.asname and a.asname != a.name}
    return out


def test_no_new_second_name_for_a_code():
    assert _code_import_aliases(ROOT / "cpasync_migrate") <= CODE_IMPORT_ALIASES


def test_the_alias_scan_sees_an_import_alias(tmp_path):
    (tmp_path / "m.py").write_text("from .codes import FILE_ERROR as FE, CODES\nfrom ..codes import LEGACY_CALL\n")
    assert _code_import_aliases(tmp_path) == {"m.py: FILE_ERROR as FE"}


# ------------------------------------------------------------------ rule values read with a fallback in code

# Rule keys read with a literal fallback (`facts.get("min_allocations", 2)`): a second home of the value.
# load_rules requires every file whose values the code reads, so none is needed; by file and key, none left.
RULE_FALLBACKS: set = set()
_GENERIC_KEYS = {"schema", "rules_version", "name", "title", "default", "params", "exclude"}


def _rule_keys() -> set:
    from cpasync_migrate import rules as R

    keys = set()

    def walk(t):
        if isinstance(t, R._Table):
            for k, v in t.keys.items():
                if isinstance(v, R._Key):
                    keys.add(k)
                else:
                    walk(v)
        elif isinstance(t, R._Data) and t.values is not None:
            walk(t.values)
    for layout in R._LAYOUTS.values():
        walk(layout)
    return keys - _GENERIC_KEYS


def _rule_fallbacks(package: Path, keys: set) -> set:
    import ast

    out = set()
    for path in sorted(package.rglob("*.py")):
        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get" \
                    and len(n.args) == 2 and all(isinstance(a, ast.Constant) for a in n.args) \
                    and n.args[0].value in keys and n.args[1].value not in ("", None):
                out.add(f"{path.relative_to(package)}: {n.args[0].value}")
    return out


def test_no_new_fallback_for_a_rule_value():
    keys = _rule_keys()
    assert {"min_allocations", "static_scope", "offset_param", "position"} <= keys
    assert _rule_fallbacks(ROOT / "cpasync_migrate", keys) <= RULE_FALLBACKS


def test_the_fallback_scan_sees_a_fallback(tmp_path):
    (tmp_path / "m.py").write_text("a = facts.get('min_allocations', 2)\nb = facts.get('static_scope', '')\n"
                                   "c = facts.get('min_allocations')\nd = cfg.get('colour', 'red')\n")
    assert _rule_fallbacks(tmp_path, {"min_allocations", "static_scope"}) == {"m.py: min_allocations"}


# ------------------------------------------------------------------ no dead definitions

def _unreferenced(package, elsewhere) -> list[str]:
    """Functions, classes and module-level names defined in ``package`` that no module of ``package`` or
    ``elsewhere`` names (as a name, an attribute, an import or a word of a string), dunders and libcst's
    visitor hooks aside."""
    import ast
    import collections

    def trees(paths):
        for p in paths:
            try:
                yield p, ast.parse(p.read_bytes())
            except SyntaxError:  # a fixture's deliberately broken file
                continue

    pkg = sorted(package.rglob("*.py"))
    uses: collections.Counter = collections.Counter()
    defs = []
    for path, tree in trees(pkg + sorted(elsewhere)):
        for n in ast.walk(tree):
            if isinstance(n, ast.Name):
                uses[n.id] += 1
            elif isinstance(n, ast.Attribute):
                uses[n.attr] += 1
            elif isinstance(n, ast.alias):
                uses[n.name.split(".")[-1]] += 1
            elif isinstance(n, ast.Constant) and isinstance(n.value, str):
                uses.update(re.findall(r"[A-Za-z_]\w*", n.value))
        if path in pkg:
            for n in ast.walk(tree):
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    defs.append((path, n.lineno, n.name))
                elif isinstance(n, ast.Assign) and n.col_offset == 0 and isinstance(n.targets[0], ast.Name):
                    defs.append((path, n.lineno, n.targets[0].id))
    hooks = re.compile(r"__\w+__$|(on_)?(visit|leave)(_\w+)?$|main$")
    return [f"{p.relative_to(package.parent)}:{ln}: {name}" for p, ln, name in defs
            if not hooks.match(name) and uses[name] == 0]


def test_no_definition_of_the_package_is_dead():
    """Every function, class and module-level name of the package is used by the package, its tests, its
    benchmarks or its scripts (findings.ParseError, bundle_format.locate, report.REMAINING,
    interp._is_bool, merge._arg_index, verify/smem.is_merged_ptr and others had no reader)."""
    elsewhere = [p for d in ("tests", "benchmarks", "scripts") for p in (ROOT / d).rglob("*.py")
                 if "fixtures" not in p.parts]
    assert _unreferenced(ROOT / "cpasync_migrate", elsewhere) == []


def test_the_dead_code_check_sees_dead_code(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "a.py").write_text("LIMIT = 3\n\ndef used():\n    return LIMIT\n\ndef _orphan():\n    return 1\n\n"
                              "class C:\n    def visit_Call(self, node):\n        return used()\n")
    (tmp_path / "t.py").write_text("from pkg.a import C\n")
    assert _unreferenced(pkg, [tmp_path / "t.py"]) == ["pkg/a.py:6: _orphan"]


# ------------------------------------------------------------------ the check-writing harness

_LEGACY_KERNEL = '''\
import tilelang.language as T


@T.prim_func
def k(A: T.Tensor((64,), "float16")):
    with T.Kernel(1, threads=8) as bx:
        S = T.alloc_shared((64,), "float16")
        tx = T.get_thread_binding()
        T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)
'''
_NEW_CALL = ('T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float16"), S.data, tx * 8, 8, 2), '
             'T.tvm_access_ptr(T.type_annotation("float16"), A.data, tx * 8, 8, 1), {size})')


def _expected(size: int) -> str:
    call = _NEW_CALL.format(size=size)
    # over 88 columns: one argument per line at the call's continuation indent (python/layout.py)
    args = call[len("T.ptx_cp_async("):-1].split(", T.tvm")
    args = [args[0], "T.tvm" + args[1].rsplit(", ", 1)[0], args[1].rsplit(", ", 1)[1]]
    body = "".join(f"            {a},\n" for a in args)
    return _LEGACY_KERNEL.replace('T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)',
                                  f"T.ptx_cp_async(\n{body}        )")


def test_harness_assert_fix_python_under_two_targets():
    from harness import assert_fix

    r = assert_fix(_LEGACY_KERNEL, _expected(16))
    assert r.codes() == ["CPA001"]
    assert_fix(_LEGACY_KERNEL, _expected(8), target="0.1.9")  # the size counts float16 elements


def test_harness_fails_where_it_should():
    from harness import assert_fix, assert_no_fix

    with pytest.raises(AssertionError, match="the fixed text differs"):
        assert_fix(_LEGACY_KERNEL, _expected(8))  # 0.1.8 keeps bytes
    with pytest.raises(AssertionError, match="a fix was applied"):
        assert_no_fix(_LEGACY_KERNEL)
    with pytest.raises(AssertionError, match="wants a change"):
        assert_fix(_LEGACY_KERNEL, _LEGACY_KERNEL)
    with pytest.raises(AssertionError, match="no CPA005 finding"):
        assert_no_fix("x = 1\n", code="CPA005")


def test_harness_unsafe_fixes_and_suppression():
    from harness import assert_fix, assert_no_fix, run

    macro = ('import tilelang.language as T\n\n\n@T.macro\ndef load(S, A, off):\n'
             '    T.ptx_cp_async("float32", S.data, off, A.data, off, 16)\n')
    r = run(macro)
    assert r.text == macro and r.codes() == ["CPA001"] and not r.findings[0].fix.safe
    fixed = assert_fix(macro, macro.replace(
        'T.ptx_cp_async("float32", S.data, off, A.data, off, 16)',
        'T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float32"), S.data, off, 4, 2), '
        'T.tvm_access_ptr(T.type_annotation("float32"), A.data, off, 4, 1), 16)'), unsafe_fixes=True,
        line_length=200)  # the whole call fits on its line: it stays on one
    assert fixed.findings[0].fix.assumptions
    quiet = _LEGACY_KERNEL.replace("16)\n", "16)  # cpasync-migrate: ignore\n")
    assert [f.status.value for f in assert_no_fix(quiet).findings] == ["suppressed"]


def test_harness_cpp():
    from harness import assert_fix

    cc = ("Stmt F(const Buffer& s, const Buffer& g, PrimExpr i) {\n"
          "  return Evaluate(Call(s->dtype, builtin::ptx_cp_async(), {s->data, i, g->data, i, 16}));\n}\n")
    # laid out as docs/cpp.md's Layout section: each side's pointer type, dtype and access pointer named in a
    # local before the statement (dst first, as the list evaluated them), broken as clang-format's LLVM style does
    def side(v, name, mask):
        return (f"  PointerType {name}_pointer_type =\n"
                f"      Downcast<PointerType>({v}->data->type_annotation);\n"
                f"  DataType {name}_dtype =\n"
                f"      Downcast<PrimType>({name}_pointer_type->element_type)->dtype;\n"
                f"  PrimExpr {name}_access_ptr =\n"
                f"      Call(DataType::Handle(), builtin::tvm_access_ptr(),\n"
                f"           {{TypeAnnotation({name}_dtype), {v}->data, i,\n"
                f"            floordiv(PrimExpr(16), {name}_dtype.bytes()), {mask}}});\n")
    want = ("Stmt F(const Buffer& s, const Buffer& g, PrimExpr i) {\n" + side("s", "dst", 2) + side("g", "src", 1) +
            "  return Evaluate(Call(s->dtype, builtin::ptx_cp_async(),\n"
            "                       {dst_access_ptr, src_access_ptr, 16}));\n}\n")
    r = assert_fix(cc, want, path="k.cc")
    assert r.codes() == ["CPA101"]


def _plain_fixtures():
    """Fixtures whose run is one file's front end: no change set holds a site, options the harness has."""
    from fixture_cases import cases

    out = []
    for case in cases("python") + cases("cpp"):
        args = list(case.meta.get("args", []))
        if any(e.get("status") == "held" for e in case.meta.get("expect", [])):
            continue
        opts, ok = {}, True
        while args:
            a = args.pop(0)
            if a == "--unsafe-fixes":
                opts["unsafe_fixes"] = True
            elif a in ("--target", "--from", "--style") and args:
                opts[{"--target": "target", "--from": "source", "--style": "style"}[a]] = args.pop(0)
            elif a == "--migrate-tvm":
                opts["migrate_tvm"] = True
            else:
                ok = False
                break
        if ok:
            out.append(pytest.param(case, opts, id=str(case)))
    return out


@pytest.mark.parametrize("case,opts", _plain_fixtures())
def test_harness_gives_each_fixtures_hand_written_output(case, opts):
    """The harness and the CLI agree: every fixture a single front-end run decides gets its .out file."""
    import harness

    src = case.input.read_bytes().decode("utf-8")
    want = case.output.read_bytes().decode("utf-8")
    assert harness.run(src, path=f"{case.name}{case.ext}", **opts).text == want


def test_contributing_harness_example_runs():
    text = CONTRIBUTING.read_text(encoding="utf-8")
    section = text.split("### The harness", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    space: dict = {}
    exec(compile(block, "CONTRIBUTING.md", "exec"), space)  # the project's own example, not scanned code
    tests = [v for k, v in space.items() if k.startswith("test_")]
    assert len(tests) == 2
    for t in tests:
        t()


# ------------------------------------------------------------------ the trace of one call (scripts/trace_call.py)

def test_trace_call_traces_the_tree_it_is_given(tmp_path):
    """The script traces the package of the tree named (a copy here), one Python and one C++ call of one legacy
    site each, and lists the package files entered with their entries."""
    import json
    import shutil
    import subprocess
    import sys

    tree = tmp_path / "tree"
    for d in ("cpasync_migrate", "rules"):
        shutil.copytree(ROOT / d, tree / d, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "t.json"
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "trace_call.py"), "--tree", str(tree), "--json",
                        str(out)], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    py, cpp = json.loads(out.read_text())
    for t, src in ((py, "one_call.py"), (cpp, "one_builder.cc")):
        assert t["package"] == str((tree / "cpasync_migrate").resolve())
        assert t["exit"] == 1 and f"+++ b/{src}" in t["output"]  # --diff: one site, a diff, exit 1
        assert t["files"][0] == ["__init__.py", 1] and all(n > 0 for _, n in t["files"])
        assert f"package: {t['package']}" in r.stdout and f"{len(t['files'])} files entered" in r.stdout
        text = (ROOT / "scripts" / "trace_inputs" / src).read_text()
        assert text.count(_rules_intrinsic() + "(") == 1
    py_files, cpp_files = ([f for f, _ in t["files"]] for t in (py, cpp))
    assert "python/fast.py" in py_files and not [f for f in py_files if f.startswith("cpp/")]
    assert "cpp/analyzer.py" in cpp_files and "python/rewrite.py" not in cpp_files
