"""What the reports say, through the command line (issue 27 sections 6 and 7): -v names every path it
passes over with the reason, paths as the findings write them; an applied fix reads as applied; JSON in
--check claims no write; parse errors sit where Python puts them; the exit codes of the README."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import run_cli

SUFFIXES = "(.py .pyi .cc .cpp .cxx .h .hpp .cu .cuh)"
LEGACY = '''import tilelang.language as T


@T.prim_func
def main(A: T.Tensor((64,), "float16")):
    with T.Kernel(1, threads=8) as bx:
        S = T.alloc_shared((64,), "float16")
        tx = T.get_thread_binding()
        T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)
'''


def put(p: Path, text: str = "") -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def _tree(root: Path) -> None:
    put(root / "pkg" / "k.py", LEGACY)
    put(root / "vendor" / "v.py", LEGACY)
    put(root / "third" / "t.py", LEGACY)
    put(root / "gen" / "g.py", LEGACY)
    put(root / "env2" / "pyvenv.cfg")
    put(root / "env2" / "lib.py", LEGACY)
    put(root / "build" / "b.py", LEGACY)
    put(root / "notes.md", "ptx_cp_async\n")
    put(root / ".gitignore", "gen/\n")
    put(root / "pyproject.toml", '[tool.cpasync-migrate]\nexclude = ["vendor"]\nextend-exclude = ["third"]\n')


def _skipped(r) -> list[str]:
    return sorted(ln for ln in r.stderr.splitlines() if ln.startswith("skipped "))


WALK = [
    "skipped .gitignore: not a kernel source " + SUFFIXES,
    "skipped build: a `build` folder; such folders are not scanned",
    "skipped env2: a virtual environment (holds pyvenv.cfg); not scanned",
    "skipped gen: ignored by `gen/` in .gitignore",
    "skipped notes.md: not a kernel source " + SUFFIXES,
    "skipped pyproject.toml: not a kernel source " + SUFFIXES,
    "skipped third: matches `third` (extend-exclude)",
    "skipped vendor: matches `vendor` (exclude)",
]


def test_verbose_says_why_each_path_was_skipped(tmp_path):
    _tree(tmp_path)
    r = run_cli("--check", "-v", ".", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert _skipped(r) == WALK
    assert "processed pkg/k.py" in r.stderr.splitlines()
    assert "pkg/k.py:9:9: CPA001" in r.stdout  # the findings name it the same way
    assert "./" not in r.stderr
    # --exclude on the command line replaces the configured exclude: it is named as such
    r = run_cli("--check", "-v", "--exclude", "pk?", ".", cwd=tmp_path)
    assert "skipped pkg: matches `pk?` (exclude)" in _skipped(r)
    assert "skipped vendor: matches `vendor` (exclude)" not in _skipped(r)


def test_verbose_in_a_git_work_tree(tmp_path):
    if subprocess.run(["git", "--version"], capture_output=True).returncode != 0:
        pytest.skip("no git")
    _tree(tmp_path)
    env = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path)}
    subprocess.run(["git", "init", "-q", "."], cwd=tmp_path, check=True, env={**os.environ, **env})
    r = run_cli("--check", "-v", ".", cwd=tmp_path, env=env)
    got = _skipped(r)
    # git's list leaves the ignored folder out: named from git's own ignore rules
    assert "skipped gen: ignored by git (.gitignore, .git/info/exclude or core.excludesFile)" in got
    assert [ln for ln in got if not ln.startswith("skipped gen:")] == [ln for ln in WALK if "gen" not in ln]
    assert "./" not in r.stderr


UNSAFE = '''import tilelang.language as T


def copy(S, A, tx):
    T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)
'''


def test_an_applied_unsafe_fix_reads_as_applied(tmp_path):
    put(tmp_path / "k.py", UNSAFE)
    r = run_cli("--unsafe-fixes", "k.py", cwd=tmp_path)
    assert r.returncode == 0, r.stdout
    first = r.stdout.splitlines()[0]
    assert first == "k.py:5:5: CPA001 fixed (unsafe fix applied; it rests on 2 assumption(s)) [in copy]", first
    assert "migrate to access pointers" not in r.stdout
    assert r.stdout.splitlines()[1].startswith("    assumption: no declaration of `S`")
    # not applied (no --unsafe-fixes): the message of a site still to migrate
    put(tmp_path / "k.py", UNSAFE)
    r = run_cli("k.py", cwd=tmp_path)
    assert "k.py:5:5: CPA001 legacy offset-form ptx_cp_async; migrate to access pointers" in r.stdout


def test_json_in_check_mode_claims_no_write(tmp_path):
    put(tmp_path / "k.py", LEGACY)
    rep = json.loads(run_cli("--check", "--format", "json", "k.py", cwd=tmp_path).stdout)
    (f,) = rep["findings"]
    assert (f["status"], f["fix"]["applied"]) == ("fixable", False)
    assert rep["summary"]["files_written"] == 0
    assert (rep["summary"]["sites"]["rewritten"], rep["summary"]["sites"]["fixable"]) == (0, 1)
    assert "rewritten" not in {x["status"] for x in rep["findings"]}
    rep = json.loads(run_cli("--diff", "--format", "json", "k.py", cwd=tmp_path).stdout)
    assert (rep["findings"][0]["status"], rep["findings"][0]["fix"]["applied"]) == ("fixable", False)
    # write mode: rewritten and applied, and written
    rep = json.loads(run_cli("--format", "json", "k.py", cwd=tmp_path).stdout)
    (f,) = rep["findings"]
    assert (f["status"], f["fix"]["applied"], rep["summary"]["files_written"]) == ("rewritten", True, 1)
    assert "fixable" not in rep["summary"]["sites"]


@pytest.mark.parametrize("text", [
    'import tilelang.language as T\n\n\ndef f(S):\n    T.ptx_cp_async("float16", S.data, 0, S.data, 0, 16\n\nx = 1\n',
    "import tilelang.language as T\ndef f():\n  x = 1\n    y = T.ptx_cp_async\n",
    "import tilelang.language as T\nx = [1, 2\nT.ptx_cp_async(1 2)\n",
])
def test_parse_error_position_is_pythons(text, tmp_path):
    import ast

    put(tmp_path / "bad.py", text)
    try:
        ast.parse(text)
    except SyntaxError as e:
        want = f"bad.py:{e.lineno}:{e.offset}: CPA900 cannot parse: {e.msg}"
    r = run_cli("--check", "bad.py", cwd=tmp_path)
    assert r.returncode == 2
    assert want in r.stdout.splitlines(), (want, r.stdout)


def test_exit_codes_as_the_readme_gives_them(tmp_path):
    """0 nothing to do, 1 sites remain (--check) or unsafe fixes not applied, 2 a file error, 3 bad usage;
    --exit-zero turns 1 into 0 only.  The README's table lists the same."""
    table = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 3 |"):
        assert code in table
    put(tmp_path / "clean.py", "x = 1\n")
    put(tmp_path / "k.py", LEGACY)
    put(tmp_path / "bad.py", "import tilelang.language as T\nT.ptx_cp_async(\n")
    assert run_cli("--check", "clean.py", cwd=tmp_path).returncode == 0
    assert run_cli("--check", "k.py", cwd=tmp_path).returncode == 1
    assert run_cli("--check", "--exit-zero", "k.py", cwd=tmp_path).returncode == 0
    assert run_cli("--check", "k.py", "bad.py", cwd=tmp_path).returncode == 2  # 2 wins over 1
    assert run_cli("--check", "--exit-zero", "bad.py", cwd=tmp_path).returncode == 2
    assert run_cli("--check", "--no-such-option", "k.py", cwd=tmp_path).returncode == 3
    put(tmp_path / "pyproject.toml", "[tool.cpasync-migrate]\nno-such-key = 1\n")
    assert run_cli("--check", "k.py", cwd=tmp_path).returncode == 3
    (tmp_path / "pyproject.toml").unlink()
    assert run_cli("k.py", cwd=tmp_path).returncode == 0  # write mode: fixed, nothing left
    put(tmp_path / "u.py", UNSAFE)
    assert run_cli("u.py", cwd=tmp_path).returncode == 1  # an unsafe fix not applied remains
