"""Configuration per file: each file's nearest pyproject.toml with a [tool.cpasync-migrate] table decides
its excludes and its codes (as ruff resolves it), whatever the order of the arguments."""
import json

import pytest

from conftest import run_cli, run_inproc
from test_cli import LEGACY, write

FILES = ("top.py", "3rdparty/tvm/a.py", "sub/pkg/b.py", "sub/gen/c.py", "sub/tests/d.py")


@pytest.fixture
def mono(tmp_path):
    """A monorepo: the root excludes its vendored 3rdparty/; a sub-package with its own table excludes
    its generated gen/ and ignores CPA001 in its tests."""
    write(tmp_path / "pyproject.toml", '[tool.cpasync-migrate]\nextend-exclude = ["3rdparty/**"]\n')
    write(tmp_path / "sub" / "pyproject.toml", '[project]\nname = "sub"\n\n[tool.cpasync-migrate]\n'
          'extend-exclude = ["gen/**"]\n\n[tool.cpasync-migrate.per-file-ignores]\n"tests/*" = ["CPA001"]\n')
    for rel in FILES:
        write(tmp_path / rel, LEGACY)
    return tmp_path


def _paths(r):
    assert r.returncode in (0, 1), r.stderr
    return sorted({f["path"] for f in json.loads(r.stdout)["findings"] if f["status"] != "suppressed"})


def test_argument_order_changes_nothing(mono):
    seen = set()
    orders = [FILES, FILES[::-1]] + [FILES[i:] + FILES[:i] for i in (1, 2, 3)]
    for order in orders:
        r = run_inproc("--check", "--format", "json", "--no-cache", "--force-exclude", *order, cwd=mono)
        seen.add(tuple(_paths(r)))
    # the vendored tree stays excluded by the root, the sub-package's gen/ by its own file, its tests'
    # CPA001 by its per-file-ignores: the same for every order
    assert seen == {("sub/pkg/b.py", "top.py")}


def test_a_sub_package_config_does_not_knock_out_the_roots_exclude(mono):
    r = run_inproc("--check", "--format", "json", "--no-cache", ".", cwd=mono)
    assert _paths(r) == ["sub/pkg/b.py", "top.py"]
    # from inside the sub-package: its own file, and the walk from there
    r = run_inproc("--check", "--format", "json", "--no-cache", ".", cwd=mono / "sub")
    assert _paths(r) == ["pkg/b.py"]
    r = run_inproc("--check", "-v", "--no-cache", ".", cwd=mono)
    assert f"sub/gen/c.py: excluded ({mono / 'sub' / 'pyproject.toml'})" in r.stderr


def test_the_fix_never_writes_a_file_its_own_sub_package_excludes(mono):
    before = {rel: (mono / rel).read_text() for rel in FILES}
    r = run_cli("--no-cache", ".", cwd=mono)
    assert r.returncode == 0, r.stderr
    after = {rel: (mono / rel).read_text() for rel in FILES}
    assert after["top.py"] != before["top.py"] and after["sub/pkg/b.py"] != before["sub/pkg/b.py"]
    for rel in ("3rdparty/tvm/a.py", "sub/gen/c.py"):
        assert after[rel] == before[rel], rel
    # the sub-package's tests: CPA001 ignored there, so its fix is held, the file unchanged
    assert after["sub/tests/d.py"] == before["sub/tests/d.py"]
    # the fixing hook names files: --force-exclude keeps each file's own excludes
    r = run_cli("--no-cache", "--force-exclude", "sub/gen/c.py", "3rdparty/tvm/a.py", cwd=mono)
    assert r.returncode == 0
    assert (mono / "sub/gen/c.py").read_text() == before["sub/gen/c.py"]
    assert (mono / "3rdparty/tvm/a.py").read_text() == before["3rdparty/tvm/a.py"]


def test_a_sub_package_key_of_the_whole_run_is_said(mono):
    # the target is per file now (tests/test_cli_habits2.py); unsafe-fixes is still the whole run's
    write(mono / "sub" / "pyproject.toml", '[tool.cpasync-migrate]\nunsafe-fixes = true\n')
    r = run_inproc("--check", "--format", "json", "--no-cache", ".", cwd=mono)
    assert r.returncode == 1
    assert f"{mono / 'sub' / 'pyproject.toml'}: unsafe-fixes applies to the whole run" in r.stderr
    r = run_inproc("--check", "--format", "json", "--no-cache", ".", cwd=mono / "sub")
    assert "applies to the whole run" not in r.stderr


def test_a_nested_configs_mistake_names_its_file(mono):
    write(mono / "sub" / "pyproject.toml", '[tool.cpasync-migrate]\nignore = ["CPA999"]\n')
    r = run_inproc("--check", "--no-cache", "top.py", "sub/pkg/b.py", cwd=mono)
    assert r.returncode == 3
    assert f"{mono / 'sub' / 'pyproject.toml'}: [tool.cpasync-migrate] ignore = CPA999: no such code" in r.stderr


def test_security_ceilings_stay(mono):
    """A scanned tree's configuration chooses what is scanned and how it is reported, never where the tool
    writes or how much it runs: cache-dir outside the tree and a max-file-size past the ceiling are refused
    or capped as before, and --config KEY=VALUE (the command line) may set them."""
    write(mono / "pyproject.toml", '[tool.cpasync-migrate]\ncache-dir = "/tmp/elsewhere"\n')
    r = run_inproc("--check", "top.py", cwd=mono)
    assert r.returncode == 3 and "cache-dir = '/tmp/elsewhere' must name a folder inside" in r.stderr
    write(mono / "pyproject.toml", '[tool.cpasync-migrate]\nmax-file-size = "64MB"\n')
    r = run_inproc("--check", "--no-cache", "top.py", cwd=mono)
    assert r.returncode == 1 and "capped at 4194304 bytes" in r.stderr
    r = run_inproc("--check", "--no-cache", "--config", 'max-file-size = "64MB"', "top.py", cwd=mono)
    assert r.returncode == 1 and "capped" not in r.stderr
