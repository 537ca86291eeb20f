"""What the command line refuses or reports about its own arguments: an unknown target, a path that does
not exist, one file named twice, a folder write mode cannot write in."""
import json
import os

import pytest

from conftest import run_cli, run_inproc
from test_cli import LEGACY, write


def test_a_target_no_generation_describes_is_refused(tmp_path):
    write(tmp_path / "k.py", LEGACY)
    r = run_inproc("--check", "--target", "9.9", "k.py", cwd=tmp_path)
    assert r.returncode == 3 and r.stdout == ""
    assert r.stderr.startswith("cpasync-migrate: error: --target 9.9: ")
    from cpasync_migrate.rules import load_rules

    for g in load_rules().generations:  # every generation of rules/, with what it covers
        assert f"{g.name} ({g.covers_min}" in r.stderr, g.name
    # a later release of the newest line, a version spec and 'latest' still resolve
    for spec in ("0.1.13", "tilelang==0.1.9", "latest"):
        r = run_inproc("--check", "--format", "json", "--no-cache", "--target", spec, "k.py", cwd=tmp_path)
        assert r.returncode == 1 and json.loads(r.stdout)["target"]["generation"] == "0.1.9", spec
    write(tmp_path / "pyproject.toml", '[tool.cpasync-migrate]\ntarget = "9.9"\n')
    r = run_inproc("--check", "k.py", cwd=tmp_path)
    assert r.returncode == 3 and "[tool.cpasync-migrate] target = '9.9'" in r.stderr and "known generations" in r.stderr


def test_a_path_that_does_not_exist_is_an_error_not_scanned(tmp_path):
    write(tmp_path / "k.py", LEGACY)
    r = run_inproc("--check", "--format", "json", "--no-cache", "nope.py", "k.py", "gone/", cwd=tmp_path)
    assert r.returncode == 2
    rep = json.loads(r.stdout)
    assert rep["summary"]["files_scanned"] == 1
    errors = sorted(f["path"] for f in rep["findings"] if f["code"] == "CPA900")
    assert errors == ["gone/", "nope.py"] or errors == ["gone", "nope.py"], errors
    r = run_inproc("--check", "--no-cache", "nope.py", cwd=tmp_path)
    assert r.returncode == 2 and "nope.py:1:1: CPA900 no such file" in r.stdout and "0 file(s) scanned" in r.stderr


def test_one_file_under_two_spellings_is_analysed_and_reported_once(tmp_path):
    write(tmp_path / "a.py", LEGACY)
    os.symlink("a.py", tmp_path / "link.py")
    for names in (("a.py", "./a.py"), ("./a.py", "a.py", "link.py"), ("link.py", "a.py")):
        r = run_inproc("--check", "--format", "json", "--no-cache", *names, cwd=tmp_path)
        rep = json.loads(r.stdout)
        assert rep["summary"]["files_scanned"] == 1, names
        assert len([f for f in rep["findings"] if f["code"] == "CPA001"]) == 1, names
    # write mode writes it once, under its real name (the link stays a link)
    r = run_inproc("--no-cache", "link.py", "./a.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert os.path.islink(tmp_path / "link.py") and "access_ptr" in (tmp_path / "a.py").read_text()


def test_a_read_only_folder_names_the_file_and_what_could_not_be_written(tmp_path, monkeypatch):
    folder = tmp_path / "ro"
    f = write(folder / "k.py", LEGACY)
    if os.geteuid() == 0:  # root writes anywhere: the folder's refusal is made where the copy is created
        import tempfile

        real = tempfile.mkstemp

        def refuse(*a, dir=None, **k):
            if os.path.abspath(dir) == str(folder):
                raise PermissionError(13, "Permission denied")
            return real(*a, dir=dir, **k)

        monkeypatch.setattr(tempfile, "mkstemp", refuse)
    else:
        folder.chmod(0o555)
    try:
        r = run_inproc("--no-cache", "ro/k.py", cwd=tmp_path)
    finally:
        folder.chmod(0o755)
    assert r.returncode == 2
    line = next(ln for ln in r.stdout.splitlines() + r.stderr.splitlines() if "ro/k.py" in ln and "cannot write" in ln)
    assert f"the new copy of the file cannot be created in its folder {folder}" in line
    assert "Permission denied" in line and "the file is unchanged" in line
    assert f.read_text() == LEGACY
