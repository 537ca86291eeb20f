"""One run, every report: -o FILE, --report FORMAT:FILE (repeatable), and the junit and gitlab formats.

Each extra report of a run must be the very document a run of its own with --format would print, also in
write mode, where the JSON ledger keeps the positions read and every other report says where the sites
left now stand."""
import json
import shutil
import xml.etree.ElementTree as ET

import pytest

from conftest import ROOT, run_cli
from test_cli import SARIF_SCHEMA

FORMATS = ("json", "sarif", "markdown", "github", "junit", "gitlab", "text")


def _tree(tmp_path, name="t"):
    d = tmp_path / name
    shutil.copytree(ROOT / "examples", d)
    return d


def _alone(tmp_path, fmt, *mode):
    """The report a run of its own prints on stdout (text: the per-site lines of --check), over a fresh copy
    of the same tree: t/ again when the run writes nothing, else t/ under another folder (the folder's URI,
    which SARIF names, is put back to t/'s)."""
    home = tmp_path if mode and mode[0] == "--check" else tmp_path / f"alone-{fmt}"
    d = home / "t"
    if home != tmp_path:
        home.mkdir()
        shutil.copytree(ROOT / "examples", d)
    r = run_cli(*mode, "--format", "text" if fmt == "text" else fmt, ".", cwd=d)
    assert r.returncode in (0, 1), r.stderr
    return r.stdout.replace(d.resolve().as_uri(), (tmp_path / "t").resolve().as_uri())


@pytest.mark.slow  # one run against a run per report, every format
def test_one_check_run_writes_every_report_as_runs_of_their_own_would(tmp_path):
    d = _tree(tmp_path)
    extra = [a for f in FORMATS for a in ("--report", f"{f}:{tmp_path / ('r.' + f)}")]
    r = run_cli("--check", "--format", "github", "-o", str(tmp_path / "main.txt"), *extra, ".", cwd=d)
    assert r.returncode == 1, r.stderr
    assert r.stdout == "", "-o takes the report off stdout"
    assert (tmp_path / "main.txt").read_text() == _alone(tmp_path, "github", "--check")
    for f in FORMATS:
        assert (tmp_path / f"r.{f}").read_text() == _alone(tmp_path, f, "--check"), f


@pytest.mark.slow  # one run against a run per report, every format
def test_in_write_mode_the_json_ledger_and_the_other_reports_each_read_their_own_positions(tmp_path):
    d = _tree(tmp_path)
    r = run_cli("--report", f"json:{tmp_path / 'r.json'}", "--report", f"sarif:{tmp_path / 'r.sarif'}",
                "--unsafe-fixes", ".", cwd=d)
    assert r.returncode in (0, 1), r.stderr
    assert (tmp_path / "r.json").read_text() == _alone(tmp_path, "json", "--unsafe-fixes")
    assert (tmp_path / "r.sarif").read_text() == _alone(tmp_path, "sarif", "--unsafe-fixes")


def test_junit_lists_each_error_as_a_failure_and_a_file_error_as_an_error(tmp_path):
    d = _tree(tmp_path)
    (d / "broken.py").write_text("import tilelang.language as T\nT.ptx_cp_async(\n")
    r = run_cli("--check", "--format", "junit", ".", cwd=d)
    assert r.returncode == 2, r.stderr
    root = ET.fromstring(r.stdout)
    check = json.loads(run_cli("--check", "--format", "json", ".", cwd=d).stdout)
    # an unsafe fix not applied is a warning, as in the github and SARIF reports
    errors = [f for f in check["findings"] if f["severity"] == "error" and f["status"] not in ("suppressed", "unsafe")]
    assert any(f["status"] == "unsafe" for f in check["findings"]), "the tree has a warning too"
    failures = root.findall(".//failure")
    assert len(failures) == int(root.get("failures")) == len(errors) > 0
    [err] = root.findall(".//error")
    assert err.get("type") == "CPA900"
    assert {s.get("name") for s in root.findall("testsuite")} >= {"broken.py", "gemv_pipelined_f16.py"}


def test_junit_of_a_clean_tree_is_one_passing_case(tmp_path):
    (tmp_path / "k.py").write_text("x = 1\n")
    root = ET.fromstring(run_cli("--check", "--format", "junit", ".", cwd=tmp_path).stdout)
    assert root.get("failures") == "0" and len(root.findall(".//testcase")) == 1


def test_gitlab_code_quality_carries_sarif_s_fingerprints(tmp_path):
    d = _tree(tmp_path)
    gl = json.loads(run_cli("--check", "--format", "gitlab", ".", cwd=d).stdout)
    sarif = json.loads(run_cli("--check", "--format", "sarif", ".", cwd=d).stdout)
    import jsonschema

    jsonschema.validate(sarif, SARIF_SCHEMA())
    prints = [r["partialFingerprints"]["cpasyncSite/v1"] for r in sarif["runs"][0]["results"]]
    assert sorted(i["fingerprint"] for i in gl) == sorted(prints)
    for issue in gl:
        assert set(issue) == {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["severity"] in {"info", "minor", "major", "critical", "blocker"}
        assert not issue["location"]["path"].startswith(("/", "./")) and issue["location"]["lines"]["begin"] >= 1


def test_report_specs_are_checked_before_anything_runs(tmp_path):
    d = _tree(tmp_path)
    before = {p: p.read_bytes() for p in d.iterdir()}
    for bad in (["--report", "pdf:x"], ["--report", "sarif"], ["--report", f"sarif:{tmp_path}/no/such/x"],
                ["-o", str(tmp_path)], ["--statistics", "-o", str(tmp_path / "x")]):
        r = run_cli(*bad, ".", cwd=d)
        assert r.returncode == 3, (bad, r.stderr)
    assert {p: p.read_bytes() for p in d.iterdir()} == before, "nothing was written"
