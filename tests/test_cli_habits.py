"""Command-line habits users bring from ruff and black: stdin, --exit-zero, --statistics,
--select/--ignore, exit code 3 for usage, --version, grouped --help, colour; and the module layout
below the command line (no import loop)."""
import ast
import json
import subprocess
import sys

from conftest import ROOT, run_cli
from test_cli import LEGACY, MIGRATED_CALL, MANUAL, write

PKG = ROOT / "cpasync_migrate"


def _imports(module: str) -> set:
    """The package modules a module of the package imports (at any depth of its code)."""
    tree = ast.parse((PKG / f"{module}.py").read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.add(node.module.split(".")[0])
            else:
                out.update(a.name for a in node.names)
    return out


def test_no_module_below_the_command_line_imports_it():
    below = ["runner", "gitrev", "cpus", "prefilter", "pool", "progress", "files", "config", "engine", "errors"]
    for m in below:
        assert "cli" not in _imports(m), m
    assert _imports("errors") == set()
    assert {"errors"} <= _imports("gitrev") and {"errors"} <= _imports("config")
    # importing the runner first (as a library user would) works on its own
    r = subprocess.run([sys.executable, "-c", "import cpasync_migrate.runner as r, sys; "
                        "assert 'cpasync_migrate.cli' not in sys.modules; print(r.run_files.__name__)"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip() == "run_files", r.stderr


# ---------------------------------------------------------------- stdin: - with --stdin-filename


def test_check_from_stdin_reports_under_the_given_name(tmp_path):
    r = run_cli("--check", "-", "--stdin-filename", "pkg/k.py", cwd=tmp_path, input=LEGACY)
    assert r.returncode == 1, r.stderr
    assert r.stdout.splitlines()[0].startswith("pkg/k.py:9:9: CPA001 ")
    assert not (tmp_path / "pkg").exists(), "nothing is written; the name need not exist"


def test_write_mode_from_stdin_prints_the_migrated_text(tmp_path):
    f = write(tmp_path / "k.py", LEGACY)
    r = run_cli("-", "--stdin-filename", "k.py", cwd=tmp_path, input=LEGACY)
    assert r.returncode == 0, r.stderr
    assert MIGRATED_CALL in r.stdout and "T.ptx_cp_async(\"float16\"" not in r.stdout
    assert r.stdout.startswith("import tilelang.language as T\n") and r.stdout.endswith("S[tx * 8 + i]\n")
    assert "1 file(s) scanned" in r.stderr, "the report goes to stderr"
    assert f.read_text() == LEGACY, "the file of that name is not touched"
    plain = "x = 1\n"
    r = run_cli("-", "--stdin-filename", "k.py", cwd=tmp_path, input=plain)
    assert r.returncode == 0 and r.stdout == plain, "nothing to migrate: the text comes back as it was"
    r = run_cli("--quiet", "-", "--stdin-filename", "m.py", cwd=tmp_path, input=MANUAL)
    assert r.returncode == 1 and r.stdout == MANUAL, "a site left for a person: the text as it was, exit 1"
    assert "m.py:5:5: CPA002" in r.stderr


def test_diff_from_stdin_names_the_file(tmp_path):
    r = run_cli("--diff", "-", "--stdin-filename", "sub/k.py", cwd=tmp_path, input=LEGACY)
    assert r.returncode == 1
    assert r.stdout.startswith("--- a/sub/k.py\n+++ b/sub/k.py\n@@ ")


def test_the_suffix_of_the_name_picks_the_front_end(tmp_path):
    cc = (ROOT / "tests" / "fixtures" / "cpp" / "merge_consumer.in.cc").read_text()
    r = run_cli("--check", "--format", "json", "-", "--stdin-filename", "src/pool.cc", cwd=tmp_path, input=cc)
    found = json.loads(r.stdout)["findings"]
    assert found and {f["path"] for f in found} == {"src/pool.cc"}
    assert all(f["code"].startswith("CPA1") for f in found), [f["code"] for f in found]
    r = run_cli("--check", "-", "--stdin-filename", "notes.txt", cwd=tmp_path, input=LEGACY)
    assert r.returncode == 3 and "not a Python" in r.stderr


def test_the_name_s_folder_gives_the_configuration(tmp_path):
    write(tmp_path / "proj" / "pyproject.toml", '[tool.cpasync-migrate]\ntarget = "0.1.9"\n')
    r = run_cli("--check", "--format", "json", "-", "--stdin-filename", "proj/k.py", cwd=tmp_path, input=LEGACY)
    assert json.loads(r.stdout)["target"]["generation"] == "0.1.9"
    r = run_cli("--check", "--format", "json", "-", "--stdin-filename", "k.py", cwd=tmp_path, input=LEGACY)
    assert json.loads(r.stdout)["target"]["generation"] == "0.1.8"


def test_stdin_usage_mistakes_exit_3(tmp_path):
    write(tmp_path / "k.py", LEGACY)
    for args in (("--check", "-"), ("--check", "-", "k.py", "--stdin-filename", "x.py"),
                 ("--check", "k.py", "--stdin-filename", "x.py")):
        r = run_cli(*args, cwd=tmp_path, input=LEGACY)
        assert r.returncode == 3 and "Traceback" not in r.stderr and r.stdout == "", args


def test_an_excluded_name_passes_through_with_force_exclude(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.cpasync-migrate]\nextend-exclude = ["vendor/**"]\n')
    r = run_cli("--force-exclude", "-", "--stdin-filename", "vendor/k.py", cwd=tmp_path, input=LEGACY)
    assert r.returncode == 0 and r.stdout == LEGACY
    r = run_cli("-", "--stdin-filename", "vendor/k.py", cwd=tmp_path, input=LEGACY)
    assert MIGRATED_CALL in r.stdout, "without --force-exclude a named file is processed"


# ---------------------------------------------------------------- exit codes


def test_exit_zero_keeps_errors(tmp_path):
    write(tmp_path / "k.py", LEGACY)
    r = run_cli("--check", "--exit-zero", "k.py", cwd=tmp_path)
    assert r.returncode == 0 and "k.py:9:9: CPA001" in r.stdout
    (tmp_path / "bad.py").write_bytes(b"\xff\xfe ptx_cp_async(\n")
    assert run_cli("--check", "--exit-zero", "k.py", "bad.py", cwd=tmp_path).returncode == 2
    assert run_cli("--check", "--exit-zero", "--target", "0.0.1", "k.py", cwd=tmp_path).returncode == 3


def test_usage_and_configuration_errors_exit_3_file_errors_2(tmp_path):
    write(tmp_path / "k.py", LEGACY)
    assert run_cli("--check", "--jobs", "zero", "k.py", cwd=tmp_path).returncode == 3  # argparse's own
    assert run_cli("--check", "--bind", "x", "k.py", cwd=tmp_path).returncode == 3
    write(tmp_path / "pyproject.toml", "[tool.cpasync-migrate]\njobs = 0\n")
    r = run_cli("--check", "k.py", cwd=tmp_path)
    assert r.returncode == 3 and "jobs" in r.stderr
    assert run_cli("--check", "--isolated", "missing.py", cwd=tmp_path).returncode == 2


# ---------------------------------------------------------------- --statistics


def test_statistics_count_per_code(tmp_path):
    write(tmp_path / "a.py", LEGACY)
    write(tmp_path / "b.py", LEGACY)
    write(tmp_path / "m.py", MANUAL)
    r = run_cli("--check", "--statistics", ".", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stdout.splitlines() == ["2  CPA001  legacy-call (2 fixable)", "1  CPA002  legacy-call-manual"]
    r = run_cli("--statistics", "--quiet", ".", cwd=tmp_path)  # after a write: what remains
    assert r.returncode == 1 and r.stdout.splitlines() == ["1  CPA002  legacy-call-manual"]
    assert MIGRATED_CALL in (tmp_path / "a.py").read_text()
    assert run_cli("--check", "--statistics", "--format", "json", ".", cwd=tmp_path).returncode == 3


# ---------------------------------------------------------------- --select / --ignore


def test_select_and_ignore_choose_codes(tmp_path):
    write(tmp_path / "k.py", LEGACY)
    write(tmp_path / "m.py", MANUAL)
    r = run_cli("--check", "--select", "CPA002", ".", cwd=tmp_path)
    assert r.returncode == 1 and [ln.split(": ")[1].split()[0] for ln in r.stdout.splitlines()] == ["CPA002"]
    r = run_cli("--check", "--ignore", "CPA001,CPA002", ".", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == ""
    r = run_cli("--check", "--select", "CPA1", ".", cwd=tmp_path)  # a prefix: the C++ codes
    assert r.returncode == 0 and r.stdout == ""
    r = run_cli("--check", "--select", "CPA", "--ignore", "cpa002", ".", cwd=tmp_path)  # --ignore wins
    assert r.returncode == 1 and [ln.split(":")[0] for ln in r.stdout.splitlines()] == ["k.py"]
    r = run_cli("--check", "--select", "CPA001,CPA77", ".", cwd=tmp_path)
    assert r.returncode == 3 and "--select CPA77: no such code" in r.stderr


def test_select_and_ignore_in_the_configuration(tmp_path):
    write(tmp_path / "k.py", LEGACY)
    write(tmp_path / "m.py", MANUAL)
    pp = tmp_path / "pyproject.toml"

    def codes(*args):
        r = run_cli("--check", *args, ".", cwd=tmp_path)
        return r.returncode, [ln.split(": ")[1].split()[0] for ln in r.stdout.splitlines()], r.stderr

    write(pp, '[tool.cpasync-migrate]\nselect = ["CPA002"]\n')
    assert codes()[:2] == (1, ["CPA002"])
    assert codes("--select", "CPA001")[:2] == (1, ["CPA001"])  # the command line wins
    write(pp, '[tool.cpasync-migrate]\nignore = ["cpa001", "CPA002"]\n')
    assert codes()[:2] == (0, [])
    assert codes("--ignore", "CPA002")[:2] == (1, ["CPA001"])  # --ignore replaces the file's list
    write(pp, '[tool.cpasync-migrate]\nselect = ["CPA", "CPA77"]\n')
    rc, _, err = codes()
    assert rc == 3 and f"{pp}: [tool.cpasync-migrate] select = CPA77: no such code" in err
    rc, _, err = codes("--select", "CPA001")  # checked also where the command line overrides it
    assert rc == 3 and "select = CPA77" in err
    write(pp, '[tool.cpasync-migrate]\nselect = []\n')
    rc, _, err = codes()
    assert rc == 3 and "no code given" in err
    write(pp, '[tool.cpasync-migrate]\nignore = "CPA001"\n')
    rc, _, err = codes()
    assert rc == 3 and "ignore must be a list of strings" in err
    assert codes("--isolated")[:2] == (1, ["CPA001", "CPA002"])


def test_an_ignored_code_is_not_fixed(tmp_path):
    k = write(tmp_path / "k.py", LEGACY)
    r = run_cli("--diff", "--ignore", "CPA001", "k.py", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == ""
    r = run_cli("--ignore", "CPA001", "k.py", cwd=tmp_path)
    assert r.returncode == 0 and k.read_text() == LEGACY, "write mode leaves the site as it is"
    r = run_cli("--select", "CPA001", "k.py", cwd=tmp_path)
    assert r.returncode == 0 and MIGRATED_CALL in k.read_text()


def test_an_ignored_member_holds_its_change_set_back(tmp_path):
    """A site kept by --ignore stays in the legacy layout, so its change set is not applied without
    it (as with a suppression comment): the fork's definition is not rewritten either."""
    fx = ROOT / "tests" / "fixtures"
    op = write(tmp_path / "tilelang" / "language" / "tir" / "op.py", (fx / "sets" / "own" / "op.in.py").read_text())
    caller = write(tmp_path / "testing" / "test_copy.py", (fx / "python" / "alias_t_positional.in.py").read_text())
    before = op.read_text(), caller.read_text()
    r = run_cli("--accept-partial-sets", "--ignore", "CPA001", "--format", "json", ".", cwd=tmp_path)
    rep = json.loads(r.stdout)
    assert [(s["id"], s["state"]) for s in rep["sets"]] == [("tir.ptx_cp_async", "held")], rep["sets"]
    assert (op.read_text(), caller.read_text()) == before
    assert r.returncode == 1, "the definition is held back by its change set"
    r = run_cli("--accept-partial-sets", ".", cwd=tmp_path)
    assert r.returncode == 0 and op.read_text() == (fx / "sets" / "own" / "op.out.py").read_text()


def test_an_ignored_site_stays_when_its_file_is_processed_again_for_its_set(tmp_path):
    """The set is held, so its file is processed again with the set's sites held: the ignored site,
    which has a safe fix of its own, stays held too."""
    fx = ROOT / "tests" / "fixtures" / "cpp"
    inject = write(tmp_path / "src" / "inject.cc", (fx / "async_inject.in.cc").read_text())
    write(tmp_path / "src" / "codegen.cc", (fx / "codegen_branches.in.cc").read_text())
    r = run_cli("--ignore", "CPA102", "--format", "json", ".", cwd=tmp_path)
    rep = json.loads(r.stdout)
    assert [s["state"] for s in rep["sets"]] == ["held"]
    assert {(f["line"], f["status"]) for f in rep["findings"] if f["path"] == "src/inject.cc"} == {
        (16, "held"), (21, "held"), (38, "suppressed"), (44, "suppressed")}
    assert inject.read_text() == (fx / "async_inject.in.cc").read_text()


# ---------------------------------------------------------------- --version, --help, colour, environment


def test_version_names_the_tool_rules_and_parsers_without_importing_them():
    import tomllib
    from importlib import metadata

    from cpasync_migrate import __version__

    rules = max(str(tomllib.loads(f.read_text()).get("rules_version", "")) for f in (ROOT / "rules").glob("*.toml"))
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "cpasync_migrate", "--version"],
                       capture_output=True, text=True)
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0] == f"cpasync-migrate {__version__}"
    assert lines[1].startswith(f"rules {rules} (")
    assert lines[2:] == [f"{d} {metadata.version(d)}" for d in ("libcst", "tree-sitter", "tree-sitter-cpp")]
    imported = {ln.rsplit("|", 1)[-1].strip() for ln in r.stderr.splitlines() if "|" in ln}
    assert not {m for m in imported if m.split(".")[0] in ("libcst", "tree_sitter", "tree_sitter_cpp")}


def test_help_is_grouped():
    out = run_cli("--help").stdout
    groups = ["modes:", "output:", "selection:", "fixes and targets:", "files:", "verification:", "performance:"]
    at = [out.index("\n" + g + "\n") for g in groups]
    assert at == sorted(at)
    for opt, group in (("--check", "modes:"), ("--statistics", "output:"), ("--exit-zero", "output:"),
                       ("--select", "selection:"), ("--ignore", "selection:"), ("--target", "fixes and targets:"),
                       ("--stdin-filename", "files:"), ("--since", "files:"), ("--verify", "verification:"),
                       ("--no-cache", "performance:")):
        i = groups.index(group)
        pos = out.index("\n  " + opt)
        assert at[i] < pos < (at[i + 1] if i + 1 < len(at) else out.index("\nmodes:\n  (default)")), opt


def test_no_color_wins_over_force_color(tmp_path):
    write(tmp_path / "k.py", LEGACY)
    forced = run_cli("--diff", "k.py", cwd=tmp_path, env={"FORCE_COLOR": "1", "NO_COLOR": ""})
    assert "\x1b[" in forced.stdout
    both = run_cli("--diff", "k.py", cwd=tmp_path, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "\x1b[" not in both.stdout and "\x1b[" not in both.stderr
    empty = run_cli("--diff", "k.py", cwd=tmp_path, env={"FORCE_COLOR": "", "NO_COLOR": ""})
    assert "\x1b[" not in empty.stdout, "an empty FORCE_COLOR forces nothing (force-color.org)"
    write_mode = run_cli("k.py", cwd=tmp_path, env={"FORCE_COLOR": "1", "NO_COLOR": ""})
    assert "\x1b[" in write_mode.stdout, "the summary table too"


def test_every_environment_variable_read_is_documented():
    import re

    from cpasync_migrate import cache, rules

    names = {cache.ENV, rules.RULES_ENV}
    for f in PKG.rglob("*.py"):
        names |= set(re.findall(r"os\.environ\.get\(\s*\"([A-Z_]+)\"", f.read_text()))
    assert {"NO_COLOR", "FORCE_COLOR", "XDG_CACHE_HOME", "CPASYNC_MIGRATE_CACHE_DIR"} <= names
    usage = (ROOT / "docs" / "usage.md").read_text()
    section = usage[usage.index("## Environment"):]
    section = section[: section.index("\n## ")] if "\n## " in section else section
    assert [n for n in sorted(names) if f"`{n}`" not in section] == []
    epilog = run_cli("--help").stdout
    for n in ("NO_COLOR", "FORCE_COLOR", "CPASYNC_MIGRATE_CACHE_DIR", "CPASYNC_MIGRATE_RULES"):
        assert n in epilog


def test_unsafe_fixes_do_not_split_a_change_set_around_an_ignored_member(tmp_path):
    """--unsafe-fixes applies a set without its suppressed members; a selection that would leave
    some of a set's members in the legacy layout is refused before anything is written."""
    fx = ROOT / "tests" / "fixtures" / "cpp"
    inject = write(tmp_path / "src" / "inject.cc", (fx / "async_inject.in.cc").read_text())
    codegen = write(tmp_path / "src" / "codegen.cc", (fx / "codegen_branches.in.cc").read_text())
    for mode in ((), ("--diff",), ("--check",)):
        r = run_cli(*mode, "--unsafe-fixes", "--ignore", "CPA102", ".", cwd=tmp_path)
        assert r.returncode == 3 and "CPA102 (builder, ./src/inject.cc:38)" in r.stderr, (mode, r.stderr)
        assert r.stdout == ""
    assert inject.read_text() == (fx / "async_inject.in.cc").read_text()
    assert codegen.read_text() == (fx / "codegen_branches.in.cc").read_text()
    write(tmp_path / "k.py", LEGACY)  # a kernel of a tree that does not define the intrinsic: in no set
    r = run_cli("--unsafe-fixes", "--ignore", "CPA1", "k.py", cwd=tmp_path)
    assert r.returncode == 0 and MIGRATED_CALL in (tmp_path / "k.py").read_text()
