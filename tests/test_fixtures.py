"""Every fixture pair through the CLI: write, second run, --check, --diff, json."""
import json
import shutil

import pytest

from conftest import run_cli
from fixture_cases import cases

ALL = cases("python") + cases("cpp")


def _target_args(meta):
    args = list(meta.get("args", []))
    if "--target" not in args:
        args += ["--target", "0.1.8"]
    return args


def _copy(case, tmp_path):
    dst = tmp_path / f"{case.name}{case.ext}"
    shutil.copyfile(case.input, dst)
    return dst


@pytest.mark.parametrize("case", ALL, ids=str)
def test_write_matches_expected(case, tmp_path):
    f = _copy(case, tmp_path)
    r = run_cli(*_target_args(case.meta), "--format", "json", f.name, cwd=tmp_path)
    assert r.returncode == case.meta.get("exit_write", 0), r.stdout + r.stderr
    assert f.read_bytes() == case.output.read_bytes(), f"{case}: output differs from the hand-written expectation"
    rep = json.loads(r.stdout)
    got = [(x["line"], x["code"], x["status"]) for x in rep["findings"] if x["code"] != "CPA900"]
    want = [(e["line"], e["code"], e["status"]) for e in case.meta.get("expect", [])]
    assert sorted(got) == sorted(want)


@pytest.mark.parametrize("case", ALL, ids=str)
def test_second_run_changes_nothing(case, tmp_path):
    f = _copy(case, tmp_path)
    args = _target_args(case.meta)
    run_cli(*args, f.name, cwd=tmp_path)
    once = f.read_bytes()
    r = run_cli(*args, "--diff", f.name, cwd=tmp_path)
    assert r.stdout == "", r.stdout
    run_cli(*args, f.name, cwd=tmp_path)
    assert f.read_bytes() == once


@pytest.mark.parametrize("case", ALL, ids=str)
def test_check_reports_same_sites_as_write(case, tmp_path):
    """--check must report exactly what write mode would do: same sites, same codes."""
    f = _copy(case, tmp_path)
    args = _target_args(case.meta)
    check = json.loads(run_cli(*args, "--check", "--format", "json", f.name, cwd=tmp_path).stdout)
    assert f.read_bytes() == case.input.read_bytes(), "--check must not write"
    write = json.loads(run_cli(*args, "--format", "json", f.name, cwd=tmp_path).stdout)
    key = lambda x: (x["path"], x["line"], x["column"], x["code"], x["fixable"])  # noqa: E731
    assert sorted(map(key, check["findings"])) == sorted(map(key, write["findings"]))
    for c, w in zip(sorted(check["findings"], key=key), sorted(write["findings"], key=key)):
        assert (c["fix"] or {}).get("replacement") == (w["fix"] or {}).get("replacement")


@pytest.mark.parametrize("case", [c for c in ALL if c.output.read_bytes() != c.input.read_bytes()], ids=str)
def test_diff_applies_with_patch(case, tmp_path):
    f = _copy(case, tmp_path)
    args = _target_args(case.meta)
    r = run_cli(*args, "--diff", f.name, cwd=tmp_path)
    assert r.returncode == 1
    assert f.read_bytes() == case.input.read_bytes(), "--diff must not write"
    patch = tmp_path / "p.diff"
    patch.write_text(r.stdout, newline="")
    import subprocess

    p = subprocess.run(["patch", "-p1", "-s", "-i", str(patch)], cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f.read_bytes() == case.output.read_bytes()
