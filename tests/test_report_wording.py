"""What the reports say, through the command line (issue 27 sections 6 and 7): -v names every path it
passes over with the reason, paths as the findings write them; an applied fix reads as applied; JSON in
--check claims no write; parse errors sit where Python puts them; the exit codes of docs/ci.md."""
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
