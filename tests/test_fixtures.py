"""Every fixture pair through the CLI entry point (in-process).

Per case: --check and --diff write nothing; the diff applies with patch -p1
and gives the hand-written expected output; write mode gives the same bytes
and the expected findings; --check reports exactly the sites write mode
handles (same sites, same codes, same fixes); a second run changes nothing.
"""
import json
import shutil
import subprocess

import pytest

from conftest import run_inproc as run_cli
from fixture_cases import cases

ALL = cases("python") + cases("cpp")


def _target_args(meta):
    args = list(meta.get("args", [])) + ["-j", "1"]
    if "--target" not in args:
        args += ["--target", "0.1.8"]
    return args


def _key(x):
    return (x["path"], x["line"], x["column"], x["code"], x["fixable"])


def test_there_are_enough_fixtures():
    # Floors at the suite's size when they were set: losing fixtures must be a decision, not an accident.
    assert len(cases("python")) >= 81
    assert len(cases("cpp")) >= 16


@pytest.mark.parametrize("case", cases("python"), ids=str)
def test_a_python_fixture_says_whether_real_tilelang_lowers_it(case):
    """``lowers``: whether TileLang 0.1.7.post1 lowers the legacy input (tests/test_realtl.py tries it); a text-only
    fixture (``lowers = false``) says ``why`` and gives ``error``, a part of the error that lowering reports."""
    meta = case.meta
    assert isinstance(meta.get("lowers"), bool), f"{case}: `lowers = true|false` is required"
    if meta["lowers"]:
        assert "why" not in meta and "error" not in meta, f"{case}: `why`/`error` are for a text-only fixture"
    else:
        for k in ("why", "error"):
            assert isinstance(meta.get(k), str) and meta[k].strip(), f"{case}: a text-only fixture needs `{k}`"


@pytest.mark.parametrize("case", ALL, ids=str)
def test_fixture(case, tmp_path):
    f = tmp_path / f"{case.name}{case.ext}"
    shutil.copyfile(case.input, f)
    original = case.input.read_bytes()
    expected = case.output.read_bytes()
    args = _target_args(case.meta)

    check = run_cli(*args, "--check", "--format", "json", f.name, cwd=tmp_path)
    diff = run_cli(*args, "--diff", f.name, cwd=tmp_path)
    assert f.read_bytes() == original, "--check/--diff must not write"
    if expected != original:
        assert diff.returncode == 1
        (tmp_path / "p.diff").write_bytes(diff.stdout.encode())
        p = subprocess.run(["patch", "-p1", "-s", "-i", "p.diff"], cwd=tmp_path, capture_output=True, text=True)
        assert p.returncode == 0, p.stdout + p.stderr
        assert f.read_bytes() == expected, "the --diff patch does not give the expected output"
        shutil.copyfile(case.input, f)
    else:
        assert diff.stdout == ""

    write = run_cli(*args, "--format", "json", f.name, cwd=tmp_path)
    assert write.returncode == case.meta.get("exit_write", 0), write.stdout + write.stderr
    assert f.read_bytes() == expected, f"{case}: output differs from the hand-written expectation"
    rep = json.loads(write.stdout)
    got = sorted((x["line"], x["code"], x["status"]) for x in rep["findings"] if x["code"] != "CPA900")
    want = sorted((e["line"], e["code"], e["status"]) for e in case.meta.get("expect", []))
    assert got == want

    # --check reports exactly what write mode does
    c = sorted(json.loads(check.stdout)["findings"], key=_key)
    w = sorted(rep["findings"], key=_key)
    assert list(map(_key, c)) == list(map(_key, w))
    for cf, wf in zip(c, w):
        assert (cf["fix"] or {}).get("replacement") == (wf["fix"] or {}).get("replacement")

    # a second run changes nothing (after a --from run the code is written for the target: drop --from)
    again_args = list(args)
    if "--from" in again_args:
        i = again_args.index("--from")
        del again_args[i:i + 2]
    again = run_cli(*again_args, "--diff", f.name, cwd=tmp_path)
    assert again.stdout == ""
    assert f.read_bytes() == expected
