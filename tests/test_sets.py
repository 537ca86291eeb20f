"""Coupled change sets through the command line, over the trees of tests/fixtures/sets/cases.toml.

Each run is checked in the text, JSON and SARIF formats (the same exit code, the sets' states,
every site's status and role), and write runs against the fixtures' hand-written outputs; a
``--diff`` run of the same arguments must give a patch that turns the tree into what write
mode leaves.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
CASES = tomllib.loads((FIXTURES / "sets" / "cases.toml").read_text())["case"]


def source_of(ref: str, kind: str) -> Path:
    """The fixture file `ref` (e.g. "cpp/async_inject") in its `.in.` or `.out.` form."""
    folder, _, stem = ref.rpartition("/")
    (hit,) = (FIXTURES / folder).glob(f"{stem}.{kind}.*")
    return hit


def make_tree(root: Path, case: dict) -> None:
    for rel, ref in case["files"].items():
        dest = root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source_of(ref, "in"), dest)


def run_cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cpasync_migrate", "--no-cache", "--target", "0.1.8", *args, "."],
                          cwd=cwd, capture_output=True, text=True, env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"})


def runs():
    for case in CASES:
        for i, run in enumerate(case["run"]):
            yield pytest.param(case, run, id=f"{case['name']}-{i}")


@pytest.mark.slow
@pytest.mark.parametrize("case, run", list(runs()))
def test_change_set_run(tmp_path, case, run):
    tree = tmp_path / "tree"
    make_tree(tree, case)
    write_mode = "--check" not in run["args"] and "--diff" not in run["args"]

    # JSON first, on a copy when the run writes, so the tree below still holds the inputs
    probe = tmp_path / "probe"
    shutil.copytree(tree, probe)
    js = run_cli("--format", "json", *run["args"], cwd=probe)
    assert js.returncode == run["exit"], js.stdout + js.stderr
    rep = json.loads(js.stdout)
    states = {s["id"]: s["state"] for s in rep["sets"]}
    assert states == run.get("sets", states), rep["sets"]
    by_site = {f"{f['path']}:{f['line']}": f for f in rep["findings"]}
    for site, status in run.get("status", {}).items():
        assert by_site[site]["status"] == status, by_site[site]
    for f in rep["findings"]:
        if f["role"] and f["set_id"] is None and run.get("sets"):
            assert f["role"] == "caller" and not any(s["op"] for s in rep["sets"] if s["id"] == f["op"]), f
    for s in rep["sets"]:
        assert s["members"], s
        assert all(m["role"] in ("builder", "reader", "definition", "caller") for m in s["members"])
    blockers = {f"{b['path']}:{b['line']}" for s in rep["sets"] for b in s["blockers"]}
    assert set(run.get("blockers", [])) <= blockers, rep["sets"]
    checklist = {f"{c['path']}:{c['line']}" for s in rep["sets"] for c in s["checklist"]}
    assert set(run.get("checklist", [])) <= checklist, rep["sets"]
    if run.get("checklist"):
        items = [c for s in rep["sets"] for c in s["checklist"]]
        assert any(c["upstream"] for c in items), "the merge pass's upstream commit is named"

    sarif = run_cli("--format", "sarif", *run["args"], cwd=_copy(tree, tmp_path, "s"))
    assert sarif.returncode == run["exit"]
    results = json.loads(sarif.stdout)["runs"][0]["results"]
    in_sets = [r for r in results if r["properties"].get("set_id")]
    # every set member carries its set in SARIF, except those a write run rewrote: SARIF lists what remains
    remaining = [f for f in rep["findings"] if f["set_id"] and not (rep["mode"] == "write" and f["status"] == "rewritten")]
    assert len(in_sets) == len(remaining), "every remaining set member carries its set in SARIF"
    assert all(r["properties"]["role"] for r in in_sets)

    gh = run_cli("--format", "github", *run["args"], cwd=_copy(tree, tmp_path, "g"))
    assert gh.returncode == run["exit"], gh.stdout + gh.stderr
    for site, status in run.get("status", {}).items():
        if status == "held":
            path, line = site.rsplit(":", 1)
            assert any(f"file={path},line={line}," in ln and "held: change set" in ln for ln in gh.stdout.splitlines()), \
                gh.stdout

    if write_mode:
        diff_tree = _copy(tree, tmp_path, "d")
        diff = run_cli("--diff", *[a for a in run["args"]], cwd=diff_tree)
        assert diff.returncode in (0, 1), diff.stderr
        text = run_cli(*run["args"], cwd=tree)
        assert text.returncode == run["exit"], text.stdout + text.stderr
        if run.get("sets") and any(v != "applied" for v in run["sets"].values()):
            assert "change set" in text.stdout, text.stdout
        if run.get("sets"):
            assert f"{len(run['sets'])} change set(s): " in text.stdout, text.stdout
        if diff.stdout:
            (diff_tree / "p.diff").write_text(diff.stdout)
            p = subprocess.run(["patch", "-p1", "-s", "-i", "p.diff"], cwd=diff_tree, capture_output=True, text=True)
            assert p.returncode == 0, p.stdout + p.stderr
            (diff_tree / "p.diff").unlink()
        for rel in case["files"]:
            assert (diff_tree / rel).read_bytes() == (tree / rel).read_bytes(), f"--diff and write differ on {rel}"
    else:
        text = run_cli(*run["args"], cwd=tree)
        assert text.returncode == run["exit"]
    for rel in run.get("unchanged", []):
        assert (tree / rel).read_bytes() == source_of(case["files"][rel], "in").read_bytes(), rel
    for rel in run.get("migrated", []):
        assert (tree / rel).read_bytes() == source_of(case["files"][rel], "out").read_bytes(), rel


def _copy(tree: Path, tmp: Path, tag: str) -> Path:
    dest = tmp / f"copy-{tag}"
    shutil.copytree(tree, dest)
    return dest
