"""The CLI contract, through a subprocess: modes, exit codes, formats, paths and safety rules."""
import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT, run_cli
from harness import assert_no_fix

LEGACY = textwrap.dedent('''\
    import tilelang.language as T


    @T.prim_func
    def main(A: T.Tensor((256,), "float16"), B: T.Tensor((256,), "float16")):
        with T.Kernel(1, threads=32) as bx:
            S = T.alloc_shared((256,), "float16")
            tx = T.get_thread_binding()
            T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            for i in T.serial(8):
                B[tx * 8 + i] = S[tx * 8 + i]
    ''')
# laid out like the file (python/layout.py): one line would be 151 columns, so one argument per line
MIGRATED_CALL = ('T.ptx_cp_async(\n'
                 '            T.tvm_access_ptr(T.type_annotation("float16"), S.data, tx * 8, 8, 2),\n'
                 '            T.tvm_access_ptr(T.type_annotation("float16"), A.data, tx * 8, 8, 1),\n'
                 '            16,\n'
                 '        )')
MANUAL = textwrap.dedent('''\
    import tilelang.language as T


    def copy(args):
        T.ptx_cp_async(*args)
    ''')
TVM = textwrap.dedent('''\
    from tvm.script import tir as T


    @T.prim_func
    def main(A: T.Buffer((32,), "float16")):
        S = T.alloc_buffer((32,), "float16", scope="shared")
        T.evaluate(T.ptx_cp_async(S.data, 0, A.data, 0, 16, dtype="float16"))
    ''')
UNSAFE = textwrap.dedent('''\
    import tilelang.language as T


    @T.macro
    def load(S, A, off):
        T.ptx_cp_async("float32", S.data, off, A.data, off, 16)
    ''')


def SARIF_SCHEMA() -> dict:
    """The OASIS SARIF 2.1.0 schema (errata 01), vendored in tests/schemas/."""
    return json.loads((ROOT / "tests" / "schemas" / "sarif-schema-2.1.0.json").read_text())


def write(p: Path, text: str, newline="\n") -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(text.replace("\n", newline).encode())
    return p


# ------------------------------------------------------------------ modes and exit codes


def test_write_mode_rewrites_and_summarizes(tmp_path):
    f = write(tmp_path / "k.py", LEGACY)
    r = run_cli("--target", "0.1.8", "k.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert MIGRATED_CALL in f.read_text()
    assert "1 file(s) written" in r.stdout
    assert "rewritten" in r.stdout and "target: 0.1.8" in r.stdout


def test_check_lists_sites_and_exits_1_then_0_after_write(tmp_path):
    f = write(tmp_path / "k.py", LEGACY)
    r = run_cli("--check", "k.py", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stdout.splitlines()[0].startswith("k.py:9:9: CPA001 ")
    assert f.read_text() == LEGACY
    assert run_cli("k.py", cwd=tmp_path).returncode == 0
    r = run_cli("--check", "k.py", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == ""


def test_diff_writes_nothing_and_is_plain_when_piped(tmp_path):
    f = write(tmp_path / "k.py", LEGACY)
    r = run_cli("--diff", "k.py", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stdout.startswith("--- a/k.py\n+++ b/k.py\n@@ ")
    assert "\x1b[" not in r.stdout
    assert f.read_text() == LEGACY


def test_diff_is_coloured_when_forced(tmp_path):
    write(tmp_path / "k.py", LEGACY)
    r = run_cli("--diff", "k.py", cwd=tmp_path, env={"FORCE_COLOR": "1", "NO_COLOR": ""})
    assert "\x1b[32m+" in r.stdout


@pytest.mark.parametrize("tool", ["git", "patch"])
def test_diff_applies_with_git_apply_and_patch(tmp_path, tool):
    write(tmp_path / "pkg" / "k.py", LEGACY)
    write(tmp_path / "pkg" / "crlf.py", LEGACY, newline="\r\n")
    r = run_cli("--diff", "pkg", cwd=tmp_path, text=False)
    (tmp_path / "fix.patch").write_bytes(r.stdout)
    expected = tmp_path / "expected"
    subprocess.run(["cp", "-r", str(tmp_path / "pkg"), str(expected)], check=True)
    run_cli("expected", cwd=tmp_path)
    if tool == "git":
        subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
        p = subprocess.run(["git", "apply", "fix.patch"], cwd=tmp_path, capture_output=True, text=True)
    else:
        p = subprocess.run(["patch", "-p1", "-s", "-i", "fix.patch"], cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    for name in ("k.py", "crlf.py"):
        assert (tmp_path / "pkg" / name).read_bytes() == (expected / name).read_bytes()


def test_manual_site_exits_1_in_write_mode(tmp_path):
    f = write(tmp_path / "m.py", MANUAL)
    r = run_cli("m.py", cwd=tmp_path)
    assert r.returncode == 1
    assert "m.py:5:5: CPA002" in r.stdout and "*args" in r.stdout
    assert f.read_text() == MANUAL


def test_tvm_namespace_is_reported_not_rewritten():
    [f] = assert_no_fix(TVM, code="CPA003", path="t.py").findings
    assert "TVM" in f.message


def test_unsafe_fix_needs_flag_and_names_assumption(tmp_path):
    f = write(tmp_path / "u.py", UNSAFE)
    r = run_cli("u.py", cwd=tmp_path)
    assert r.returncode == 1
    assert "assumption:" in r.stdout and "call's dtype" in r.stdout
    assert f.read_text() == UNSAFE
    d = run_cli("--diff", "u.py", cwd=tmp_path)
    assert "unsafe" in d.stderr and "tvm_access_ptr" in d.stderr, "--diff shows unsafe fixes"
    r = run_cli("--unsafe-fixes", "u.py", cwd=tmp_path)
    assert r.returncode == 0
    assert 'T.tvm_access_ptr(T.type_annotation("float32"), S.data, off, 4, 2)' in f.read_text()


def test_usage_error_exits_3(tmp_path):
    assert run_cli(cwd=tmp_path).returncode == 3
    assert run_cli("--format", "xml", "x.py", cwd=tmp_path).returncode == 3
    assert run_cli("--target", "0.0.1", "x.py", cwd=tmp_path).returncode == 3


def test_error_wins_over_remaining_sites_and_others_still_processed(tmp_path):
    write(tmp_path / "a_broken.py", "import tilelang.language as T\nT.ptx_cp_async(  # unclosed\n")
    good = write(tmp_path / "b_good.py", LEGACY)
    write(tmp_path / "c_manual.py", MANUAL)
    r = run_cli("--format", "json", ".", cwd=tmp_path)
    assert r.returncode == 2
    assert MIGRATED_CALL in good.read_text()
    rep = json.loads(r.stdout)
    assert rep["errors"][0]["path"] == "a_broken.py" and rep["errors"][0]["line"]
    assert rep["summary"]["sites"] == {"rewritten": 1, "held": 0, "manual": 1, "unsafe": 0, "suppressed": 0, "unparsable": 1}


def test_python_m_and_console_script_agree(tmp_path):
    write(tmp_path / "k.py", LEGACY)
    exe = Path(sys.executable).with_name("cpasync-migrate")
    if not exe.exists():
        pytest.skip("console script not installed in this environment")
    a = subprocess.run([str(exe), "--check", "k.py"], cwd=tmp_path, capture_output=True, text=True)
    b = run_cli("--check", "k.py", cwd=tmp_path)
    assert (a.returncode, a.stdout) == (b.returncode, b.stdout)


def test_help_documents_exit_codes():
    r = run_cli("--help")
    assert r.returncode == 0
    for s in ("exit codes:", "0  no legacy site remains", "1  legacy sites remain", "2  a file error",
              "3  bad usage or configuration"):
        assert s in r.stdout


# ------------------------------------------------------------------ formats


def test_json_validates_against_schema(tmp_path):
    import jsonschema

    write(tmp_path / "k.py", LEGACY)
    write(tmp_path / "m.py", MANUAL)
    write(tmp_path / "u.py", UNSAFE)
    write(tmp_path / "bad.py", "def (:\n ptx_cp_async\n")
    schema = json.loads((ROOT / "cpasync_migrate" / "schemas" / "report.schema.json").read_text())
    reports = {}
    for mode in ("--check", "--diff", "--unsafe-fixes"):  # the last one writes
        r = run_cli(mode, "--format", "json", ".", cwd=tmp_path)
        reports[mode] = rep = json.loads(r.stdout)
        jsonschema.validate(rep, schema)
    rep = reports["--check"]
    fixes = [f for f in rep["findings"] if f["fix"]]
    assert any(f["fix"]["replacement"] == MIGRATED_CALL for f in fixes)
    assert any(f["fix"]["applicability"] == "unsafe" and f["fix"]["assumptions"] for f in fixes)


def test_sarif_validates_against_sarif_2_1_0_schema(tmp_path):
    import jsonschema

    write(tmp_path / "k.py", LEGACY)
    write(tmp_path / "m.py", MANUAL)
    write(tmp_path / "s.py", LEGACY.replace('16)\n', '16)  # cpasync-migrate: ignore\n', 1))
    r = run_cli("--check", "--format", "sarif", ".", cwd=tmp_path)
    sarif = json.loads(r.stdout)
    jsonschema.validate(sarif, SARIF_SCHEMA())
    results = sarif["runs"][0]["results"]
    assert {x["ruleId"] for x in results} == {"CPA001", "CPA002"}
    assert any(x.get("suppressions") for x in results)
    assert any(x.get("fixes") for x in results)


def test_github_annotations(tmp_path):
    write(tmp_path / "k.py", LEGACY)
    write(tmp_path / "m.py", MANUAL)
    r = run_cli("--check", "--format", "github", ".", cwd=tmp_path)
    lines = r.stdout.splitlines()
    assert lines[0].startswith("::error file=k.py,line=9,col=9,endLine=9,endColumn=")
    assert "title=CPA001::" in lines[0]
    assert any("file=m.py" in ln and "CPA002" in ln for ln in lines)
    assert r.returncode == 1


# ------------------------------------------------------------------ paths


def test_discovery_respects_gitignore_skips_and_excludes(tmp_path):
    write(tmp_path / "src" / "a.py", LEGACY)
    write(tmp_path / "src" / "ignored_dir" / "b.py", LEGACY)
    write(tmp_path / "src" / "gen_c.py", LEGACY)
    write(tmp_path / "src" / "keep_c.py", LEGACY)
    write(tmp_path / ".venv" / "lib" / "d.py", LEGACY)
    write(tmp_path / "build" / "e.py", LEGACY)
    write(tmp_path / "env2" / "pyvenv.cfg", "home = /usr\n")
    write(tmp_path / "env2" / "f.py", LEGACY)
    write(tmp_path / "node" / ".git" / "g.py", LEGACY)
    write(tmp_path / "src" / "x.txt", "ptx_cp_async(")
    write(tmp_path / ".gitignore", "ignored_dir/\ngen_*.py\n!keep_*.py\n")
    write(tmp_path / "vendor" / "h.py", LEGACY)
    r = run_cli("--check", "--exclude", "vendor", "--format", "json", ".", cwd=tmp_path)
    paths = sorted({f["path"] for f in json.loads(r.stdout)["findings"]})
    assert paths == ["src/a.py", "src/keep_c.py"]
    # explicit files are always processed
    r = run_cli("--check", "--format", "json", "src/gen_c.py", "build/e.py", cwd=tmp_path)
    assert sorted({f["path"] for f in json.loads(r.stdout)["findings"]}) == ["build/e.py", "src/gen_c.py"]


def test_prefilter_skips_files_without_the_name(tmp_path):
    # unparsable, but never read past the byte check: not an error
    write(tmp_path / "broken_unrelated.py", "def (:\n")
    write(tmp_path / "k.py", LEGACY)
    r = run_cli("--check", ".", cwd=tmp_path)
    assert r.returncode == 1
    assert "broken_unrelated" not in r.stdout + r.stderr


# ------------------------------------------------------------------ safety


def test_crlf_bom_and_permissions_preserved(tmp_path):
    f = tmp_path / "k.py"
    f.write_bytes(b"\xef\xbb\xbf" + LEGACY.replace("\n", "\r\n").encode())
    os.chmod(f, 0o751)
    r = run_cli("k.py", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    data = f.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert MIGRATED_CALL.replace("\n", "\r\n").encode() in data
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o751
    assert [p.name for p in tmp_path.iterdir()] == ["k.py"], "no temporary files left behind"


def test_latin1_cookie_is_kept(tmp_path):
    text = "# -*- coding: latin-1 -*-\n# caf\xe9\n" + LEGACY
    f = tmp_path / "k.py"
    f.write_bytes(text.encode("latin-1"))
    assert run_cli("k.py", cwd=tmp_path).returncode == 0
    out = f.read_bytes()
    assert b"caf\xe9" in out and MIGRATED_CALL.encode() in out


@pytest.mark.parametrize("content,needle", [
    (b"import tilelang.language as T\nT.ptx_cp_async(\n", "cannot parse"),
    (b"x = '\xff\xfe ptx_cp_async'\n", "cannot decode"),
    (b"\x00\x01ptx_cp_async\x00", "binary"),
])
def test_bad_input_names_file_and_line(tmp_path, content, needle):
    (tmp_path / "bad.py").write_bytes(content)
    write(tmp_path / "ok.py", LEGACY)
    r = run_cli(".", cwd=tmp_path)
    assert r.returncode == 2
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("bad.py:")]
    assert any("CPA900" in line and needle in line for line in lines), lines
    assert (tmp_path / "bad.py").read_bytes() == content
    assert MIGRATED_CALL in (tmp_path / "ok.py").read_text()


def test_missing_explicit_file_is_an_error(tmp_path):
    r = run_cli("nope.py", cwd=tmp_path)
    assert r.returncode == 2 and "nope.py" in r.stdout and "no such file" in r.stdout


# in-process checks for conditions a root-run subprocess cannot produce


def test_permission_error_is_reported(tmp_path, monkeypatch):
    from cpasync_migrate import engine, files

    f = write(tmp_path / "k.py", LEGACY)

    def deny(path):
        raise files.FileError(path, "permission denied (cannot read)")

    monkeypatch.setattr(files, "read_bytes", deny)
    o = engine.process_file(str(f), engine.RunSettings(mode="write"), explicit=True)
    assert o.error == "permission denied (cannot read)"
    assert f.read_text() == LEGACY


def test_file_changed_between_read_and_write_is_not_overwritten(tmp_path, monkeypatch):
    from cpasync_migrate import engine
    from cpasync_migrate import python as pyfe

    f = write(tmp_path / "k.py", LEGACY)
    real = pyfe.analyze

    def racing(text, path, options, **kw):  # (kw: the engine's ``fixes``)
        Path(path).write_text(text + "# edited meanwhile\n")
        return real(text, path, options, **kw)

    monkeypatch.setattr(pyfe, "analyze", racing)
    o = engine.process_file(str(f), engine.RunSettings(mode="write"))
    assert "changed on disk" in o.error
    assert f.read_text() == LEGACY + "# edited meanwhile\n"


def test_rewrite_that_does_not_reparse_is_not_written(tmp_path, monkeypatch):
    from cpasync_migrate import engine
    from cpasync_migrate import python as pyfe
    from cpasync_migrate.findings import Edit

    f = write(tmp_path / "k.py", LEGACY)
    real = pyfe.analyze

    def broken(text, path, options, **kw):  # (kw: the engine's ``fixes``)
        a = real(text, path, options, **kw)
        for fd in a.findings:
            if fd.fix:
                fd.fix.edits.append(Edit(0, 0, "def (:\n"))
        return a

    monkeypatch.setattr(pyfe, "analyze", broken)
    o = engine.process_file(str(f), engine.RunSettings(mode="write"))
    assert o.error and "does not parse" in o.error
    assert f.read_text() == LEGACY


def _excluded(rel: str, name: str, excludes: tuple) -> bool:
    """What --exclude means, glob by glob: the path, its name, or the path below a folder glob matches."""
    import fnmatch

    return any(fnmatch.fnmatch(rel, g) or fnmatch.fnmatch(name, g) or fnmatch.fnmatch(rel, g.rstrip("/") + "/*")
               for g in excludes)


def test_compiled_walk_filter_gives_the_pattern_by_pattern_answers():
    """The walk asks one compiled filter per folder; it must agree with the ordered .gitignore rules and
    the --exclude globs on every path, negations, folder-only patterns, nested .gitignore files included."""
    import random

    from cpasync_migrate import discovery

    rng = random.Random(20261129)
    words = ["build", "src", "gen", "a", "b.py", "c.cc", "test_x.py", "kernel.h", "keep", "tmp", "x_gen.py", "deep",
             ".h", ".py", "k"]
    pattern_pool = ["build/", "*.pyc", "gen_*.py", "x_*", "!keep", "!x_gen.py", "/src/a", "src/**/c.cc", "**/tmp",
                    "a**", "[bk]*.py", "*[!a].h", "deep/", "?.py", "\\!keep", "/build", "kernel.h", "te*/", "!build/"]
    exclude_pool = ["vendor", "src/gen*", "*.cc", "deep/", "a/*", "[xy]_*.py"]
    for _ in range(300):
        pats = [discovery._Pattern(rng.choice(pattern_pool), rng.choice(["", "", "src", "src/deep"]))
                for _ in range(rng.randint(0, 7))]
        excludes = tuple(rng.sample(exclude_pool, rng.randint(0, 2)))
        filt = discovery._Filter(pats, excludes)
        for _ in range(40):
            parts = [rng.choice(words) for _ in range(rng.randint(1, 4))]
            rel, name, is_dir = "/".join(parts), parts[-1], rng.random() < 0.4
            reference = bool(excludes and _excluded(rel, name, excludes) or pats and discovery._ignored(pats, rel, is_dir))
            assert filt.skip(rel, name, is_dir) == reference, (rel, is_dir, [(p.base, p.regex.pattern) for p in pats], excludes)


def test_a_tree_that_defines_the_intrinsic_sets_the_target_from_its_definition(tmp_path):
    """A TileLang tree is its own TileLang: its definition of the API, not the installed release,
    says which generation its callers are written for."""
    op = tmp_path / "tilelang" / "language" / "tir" / "op.py"
    op.parent.mkdir(parents=True)
    op.write_text("def ptx_cp_async(dst_access_ptr, src_access_ptr, num_elems, predicate=None):\n    pass\n")
    r = run_cli("--check", "--format", "json", ".", cwd=tmp_path)
    target = json.loads(r.stdout)["target"]
    assert target["generation"] == "0.1.9", target
    assert "defines the 0.1.9 API itself" in target["reason"] and "op.py:1" in target["reason"]
    op.write_text("def ptx_cp_async(dtype, shared_ptr, shared_offset, global_ptr, global_offset, bytes):\n    pass\n")
    target = json.loads(run_cli("--check", "--format", "json", ".", cwd=tmp_path).stdout)["target"]
    assert target["generation"] == "0.1.8" and "defines the legacy API itself" in target["reason"], target
    # --target still wins
    target = json.loads(run_cli("--check", "--format", "json", "--target", "0.1.9", ".", cwd=tmp_path).stdout)["target"]
    assert target["generation"] == "0.1.9" and target["reason"].startswith("--target"), target


def test_github_annotations_of_several_lines_carry_no_columns(tmp_path):
    """GitHub does not accept col/endColumn on an annotation whose line and endLine differ."""
    write(tmp_path / "k.py", textwrap.dedent('''\
        import tilelang.language as T


        @T.prim_func
        def main(A: T.Tensor((256,), "float16")):
            with T.Kernel(1, threads=32) as bx:
                S = T.alloc_shared((256,), "float16")
                tx = T.get_thread_binding()
                T.ptx_cp_async(
                    "float16", S.data, tx * 8, A.data, tx * 8, 16
                )
        '''))
    r = run_cli("--check", "--format", "github", ".", cwd=tmp_path)
    (line,) = [ln for ln in r.stdout.splitlines() if "CPA001" in ln]
    assert line.startswith("::error file=k.py,line=9,endLine=11,title=CPA001::"), line
    assert "col=" not in line.split("::")[1] and "endColumn=" not in line.split("::")[1]
