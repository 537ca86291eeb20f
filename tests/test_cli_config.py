"""Configuration discovery and excludes through the CLI: the file with the table, globs relative to it,
--force-exclude for the files pre-commit names."""
import json

import pytest

from conftest import run_cli
from test_cli import LEGACY, write


def _paths(r):
    return sorted({f["path"] for f in json.loads(r.stdout)["findings"]})


@pytest.fixture
def repo(tmp_path):
    """A root pyproject.toml with the table, a sub-package with its own pyproject.toml without it,
    a 3rdparty/ folder at the root and one of the same name inside the sub-package."""
    write(tmp_path / "pyproject.toml", '[tool.cpasync-migrate]\ntarget = "0.1.9"\nextend-exclude = ["3rdparty/**"]\n')
    write(tmp_path / "sub" / "pyproject.toml", '[project]\nname = "sub"\n\n[tool.ruff]\nline-length = 100\n')
    for rel in ("top.py", "3rdparty/x/a.py", "sub/pkg/b.py", "sub/3rdparty/c.py"):
        write(tmp_path / rel, LEGACY)
    return tmp_path


def test_discovery_skips_a_pyproject_without_the_table(repo):
    r = run_cli("--check", "--format", "json", ".", cwd=repo / "sub")
    rep = json.loads(r.stdout)
    assert rep["target"]["generation"] == "0.1.9", rep["target"]
    assert str(repo / "pyproject.toml") in rep["target"]["reason"]
    # a sub-package that has the table is the one that counts
    write(repo / "sub" / "pyproject.toml", '[project]\nname = "sub"\n\n[tool.cpasync-migrate]\ntarget = "0.1.8"\n')
    rep = json.loads(run_cli("--check", "--format", "json", ".", cwd=repo / "sub").stdout)
    assert rep["target"]["generation"] == "0.1.8"


def test_config_excludes_are_relative_to_the_config_file(repo):
    assert _paths(run_cli("--check", "--format", "json", ".", cwd=repo)) == [
        "sub/3rdparty/c.py", "sub/pkg/b.py", "top.py"]
    # from the sub-package the root's 3rdparty/** still means the root's folder, not sub/3rdparty
    assert _paths(run_cli("--check", "--format", "json", ".", cwd=repo / "sub")) == ["3rdparty/c.py", "pkg/b.py"]
    # a folder argument inside the excluded folder is excluded whole
    r = run_cli("--check", "--format", "json", "3rdparty/x", cwd=repo)
    assert _paths(r) == [] and r.returncode == 0
    # command-line globs are relative to the current folder
    r = run_cli("--check", "--format", "json", "--extend-exclude", "sub/pkg/*", "sub", cwd=repo)
    assert _paths(r) == ["sub/3rdparty/c.py"]


def test_force_exclude_applies_excludes_to_named_files(repo):
    named = ("3rdparty/x/a.py", "top.py", "sub/3rdparty/c.py")
    assert _paths(run_cli("--check", "--format", "json", *named, cwd=repo)) == sorted(named)
    r = run_cli("--check", "--format", "json", "--force-exclude", *named, cwd=repo)
    assert _paths(r) == ["sub/3rdparty/c.py", "top.py"]
    r = run_cli("--check", "--force-exclude", "-v", "3rdparty/x/a.py", cwd=repo)
    assert r.returncode == 0 and r.stdout == ""
    assert "skipped 3rdparty/x/a.py: excluded (--force-exclude)" in r.stderr
    # the fixing hook's command on an excluded file writes nothing
    before = (repo / "3rdparty" / "x" / "a.py").read_text()
    assert run_cli("--force-exclude", "3rdparty/x/a.py", cwd=repo).returncode == 0
    assert (repo / "3rdparty" / "x" / "a.py").read_text() == before
    # force-exclude = true in the file does the same
    write(repo / "pyproject.toml", '[tool.cpasync-migrate]\nextend-exclude = ["3rdparty/**"]\nforce-exclude = true\n')
    assert _paths(run_cli("--check", "--format", "json", *named, cwd=repo)) == ["sub/3rdparty/c.py", "top.py"]


def test_config_values_are_checked_even_where_the_command_line_overrides_them(tmp_path):
    write(tmp_path / "k.py", LEGACY)
    for line, key in (('target = "bogus"', "target = 'bogus'"), ('target = "0.1.7"', "target = '0.1.7'"),
                      ('from = "nonsense"', "from = 'nonsense'"), ('style = "bogus"', "style")):
        write(tmp_path / "pyproject.toml", f"[tool.cpasync-migrate]\n{line}\n")
        r = run_cli("--check", "--target", "0.1.8", "--from", "legacy", "--style", "access_ptr", "k.py", cwd=tmp_path)
        assert r.returncode == 3, (line, r.stdout, r.stderr)
        assert r.stderr.startswith(f"cpasync-migrate: error: {tmp_path / 'pyproject.toml'}: [tool.cpasync-migrate] {key}")
        assert "--target" not in r.stderr and "--from" not in r.stderr, r.stderr
