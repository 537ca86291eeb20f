"""CI habits, third round (issue 27): -v says why every path was skipped; line-length, style and the target
resolved per file; a configuration mistake met during a walk leaves the tree unwritten."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import run_cli
from test_cli import LEGACY, write

NOT_NAMED = "does not name ptx_cp_async (nor a runtime helper or a suppression comment); not parsed"


def _git_env(tmp_path) -> dict:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "GIT_CONFIG_NOSYSTEM": "1"}


def _skips(stderr: str) -> dict:
    """-v's ``skipped PATH: WHY`` lines, as {PATH: WHY}."""
    out = {}
    for line in stderr.splitlines():
        if line.startswith("skipped "):
            path, _, why = line[len("skipped "):].partition(": ")
            assert path not in out, line
            out[path] = why
    return out


def _verbose_tree(root):
    """Every kind of path a run passes over, each with the reason -v must give."""
    write(root / "pkg" / "k.py", LEGACY)
    write(root / "pkg" / "plain.py", "x = 1\n")
    (root / "pkg" / "big.py").write_text(LEGACY + "#" + "x" * 3000 + "\n")
    (root / "pkg" / "nul.py").write_bytes(LEGACY.encode() + b"\x00\x00\n")
    (root / "pkg" / "latin.py").write_bytes(LEGACY.encode() + b"# caf\xe9\n")
    write(root / "pkg" / "ign.py", LEGACY)
    write(root / "pkg" / "gen" / "g.py", LEGACY)
    write(root / "env1" / "pyvenv.cfg", "home = /usr\n")
    write(root / "env1" / "lib.py", LEGACY)
    write(root / "pkg" / ".gitignore", "ign.py\n")
    write(root / "pyproject.toml", '[tool.cpasync-migrate]\nextend-exclude = ["pkg/gen"]\n')


@pytest.mark.parametrize("use_git", [False, True])
def test_verbose_says_why_every_skipped_path_was_skipped(tmp_path, use_git):
    if use_git and shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "t"
    _verbose_tree(root)
    env = _git_env(tmp_path)
    if use_git:
        subprocess.run(["git", "init", "-q", str(root)], check=True, env={**os.environ, **env})
    r = run_cli("--check", "-v", "--no-cache", "--max-file-size", "2000", "./pkg", "env1", cwd=root, env=env)
    assert r.returncode == 2, r.stderr
    skips = _skips(r.stderr)
    # the findings name the files as `pkg/x.py`: -v names them so too (never `./pkg/x.py`)
    assert any(line.startswith("pkg/k.py:") for line in r.stdout.splitlines()), r.stdout
    assert skips["pkg/plain.py"] == NOT_NAMED
    assert skips["pkg/big.py"].startswith(f"{len(LEGACY) + 3002} bytes, over the size limit of 2000 bytes")
    assert skips["pkg/big.py"].endswith("(CPA900)")
    assert skips["pkg/nul.py"] == "binary file (contains NUL bytes); not a source file (CPA900)"
    assert skips["pkg/latin.py"].startswith("cannot decode as utf-8 at byte ")
    assert skips["pkg/ign.py"].startswith("ignored by")
    assert skips["pkg/gen"] == "matches `gen` (extend-exclude)"
    assert "env1" not in skips, "a folder named on the command line is scanned, whatever it holds"
    assert "processed pkg/k.py" in r.stderr and "processed env1/lib.py" in r.stderr
    for path in ("pkg/big.py", "pkg/nul.py", "pkg/latin.py"):  # skipped, so not "processed"
        assert f"processed {path}" not in r.stderr
    assert not any(p.startswith("./") for p in skips), skips
    # from the root: the virtual environment is passed over with its reason
    r = run_cli("--check", "-v", "--no-cache", ".", cwd=root, env=env)
    skips = _skips(r.stderr)
    assert skips["env1"] == "a virtual environment (holds pyvenv.cfg); not scanned"
    assert skips["pkg/plain.py"] == NOT_NAMED
    assert "pkg/big.py" not in skips and "processed pkg/big.py" in r.stderr  # under the default limit


def test_verbose_names_a_named_file_that_is_not_parsed(tmp_path):
    write(tmp_path / "plain.py", "x = 1\n")
    (tmp_path / "nul.py").write_bytes(b"T.ptx_cp_async\x00\n")
    r = run_cli("--check", "-v", "--no-cache", "./plain.py", "nul.py", cwd=tmp_path)
    assert r.returncode == 2
    skips = _skips(r.stderr)
    assert skips == {"plain.py": NOT_NAMED, "nul.py": "binary file (contains NUL bytes); not a source file (CPA900)"}
    assert "nul.py:1:1: CPA900 binary file" in r.stdout  # still a file error
    r = run_cli("--check", "--no-cache", "./plain.py", cwd=tmp_path)
    assert "skipped" not in r.stderr, "only -v says so"
