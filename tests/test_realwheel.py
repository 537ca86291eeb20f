"""Opt-in check on the whole ``tilelang`` package of the 0.1.7.post1 wheel (CPASYNC_REALWHEEL=1).

scripts/realwheel_setup.sh fetches the wheel from the package index (``pip download --no-deps``,
through scripts/realcpp_setup.sh, or reuses it) and unpacks its ``tilelang`` package: the Python
(``language/tir/op.py``, ``contrib/cutedsl``), the C++ ``src/``; not ``3rdparty/`` or ``lib/``.
The tool runs over that tree through the command line, as a fork maintainer would:

- ``--check``: one change set, ``tir.ptx_cp_async``, holding at least the Python API definition
  (CPA006), the inject pass (builders), the merge pass (CPA111), the CUDA, HIP and CuTeDSL code
  generators and the CuTeDSL runtime helper (CPA007), each with its role;
- default mode: the whole set is rewritten in one run, exit 0 (every member exact or exact given the set:
  the CuTeDSL printer and its runtime helpers move together, in upstream's 28ada604f shape), a second run
  has nothing more to apply, the migrated Python compiles, and every changed C++ file compiles against the
  wheel's headers exactly as its original does (the realcpp helper).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from test_realcpp import _compile, _includes

pytestmark = [
    pytest.mark.realwheel,
    pytest.mark.skipif(os.environ.get("CPASYNC_REALWHEEL") != "1", reason="opt-in: set CPASYNC_REALWHEEL=1"),
]

ROOT = Path(__file__).resolve().parent.parent
OP = "tir.ptx_cp_async"

# Members the set must hold: (path under the tree, line, code, role), read off the wheel's files by hand.
REQUIRED = [
    ("tilelang/language/tir/op.py", 1346, "CPA006", "definition"),
    ("tilelang/src/transform/inject_ptx_async_copy.cc", 106, "CPA102", "builder"),
    ("tilelang/src/transform/inject_ptx_async_copy.cc", 138, "CPA101", "builder"),
    ("tilelang/src/transform/inject_ptx_async_copy.cc", 171, "CPA101", "builder"),
    ("tilelang/src/transform/merge_shared_memory_allocations.cc", 568, "CPA111", "reader"),
    ("tilelang/src/target/codegen_cuda.cc", 1454, "CPA103", "reader"),
    ("tilelang/src/target/codegen_hip.cc", 770, "CPA103", "reader"),
    ("tilelang/src/target/codegen_cutedsl.cc", 313, "CPA103", "reader"),
    ("tilelang/contrib/cutedsl/cpasync.py", 21, "CPA007", "reader"),
]
# Files one default run changes (every member's file).  The printer helpers (CPA105) migrate in upstream's
# shape (empty offsets accepted, pointer-only overloads), the CuTeDSL printer and runtime in PR #1746's.
CHANGED = {
    "tilelang/src/target/codegen_cutedsl.cc",
    "tilelang/contrib/cutedsl/cpasync.py",
    "tilelang/language/tir/op.py",
    "tilelang/src/transform/inject_ptx_async_copy.cc",
    "tilelang/src/transform/merge_shared_memory_allocations.cc",
    "tilelang/src/target/codegen_cuda.cc",
    "tilelang/src/target/codegen_hip.cc",
    "tilelang/src/target/ptx.cc",
    "tilelang/src/target/ptx.h",
}
# The dead duplicate branch default mode deletes (read off the wheel's file by hand): the second
# `ptx_cp_async()` branch of CodeGenTileLangCUDA::VisitExpr_(CallNode), whose condition the chain's first
# branch (line 1454) already takes.
DEAD_BRANCH = ("tilelang/src/target/codegen_cuda.cc", 2279, 16)


@pytest.fixture(scope="module")
def cache() -> Path:
    env = dict(os.environ, PYTHON=sys.executable)
    out = subprocess.run(["bash", str(ROOT / "scripts" / "realwheel_setup.sh")], env=env, capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    return Path(out.stdout.strip().splitlines()[-1])


@pytest.fixture()
def tree(cache, tmp_path) -> Path:
    dest = tmp_path / "pkg"
    shutil.copytree(cache / "tl017pkg" / "tilelang", dest / "tilelang")
    return dest


def _run(tree: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cpasync_migrate", "--no-cache", "--target", "0.1.8", *args,
                           "tilelang"], cwd=tree, capture_output=True, text=True, timeout=600,
                          env={"NO_COLOR": "1", "PATH": os.environ.get("PATH", "/usr/bin:/bin")})


def _snapshot(tree: Path) -> dict:
    return {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*")) if p.is_file()}


def _the_set(report: dict) -> dict:
    sets = [s for s in report["sets"] if s["id"] == OP]
    assert len(sets) == 1, report["sets"]
    assert [s["id"] for s in report["sets"]] == [OP], "one change set in the whole package"
    return sets[0]


def test_one_set_holds_the_whole_program(tree):
    out = _run(tree, "--check", "--format", "json")
    assert out.returncode == 1, out.stderr
    rep = json.loads(out.stdout)
    cs = _the_set(rep)
    members = {(m["path"], m["line"], m["code"], m["role"]) for m in cs["members"]}
    missing = [r for r in REQUIRED if r not in members]
    assert not missing, (missing, sorted(members))
    assert cs["state"] == "applied" and cs["blockers"] == []
    assert cs["roles"].get("builder", 0) >= 3 and cs["roles"].get("definition", 0) == 1
    assert cs["roles"].get("reader", 0) >= 6
    # Every finding with a role is in the set, and JSON names it.
    assert all(f["set_id"] == OP for f in rep["findings"] if f["role"]), rep["findings"]
    cute = next(f for f in rep["findings"] if f["path"].endswith("codegen_cutedsl.cc"))
    assert "runtime helpers `cp_async_gs`, `cp_async_gs_conditional`" in cute["message"], cute["message"]


def test_one_default_run_migrates_the_whole_package_and_compiles(tree, cache, tmp_path):
    before = _snapshot(tree)
    out = _run(tree, "--format", "json")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr
    rep = json.loads(out.stdout)
    cs = _the_set(rep)
    assert (cs["state"], cs["blockers"], cs["checklist"]) == ("applied", [], [])
    assert {m["status"] for m in cs["members"]} == {"rewritten"}, cs["members"]
    after = _snapshot(tree)
    changed = {k for k in after if after[k] != before.get(k)}
    assert changed == CHANGED, sorted(changed)
    # the dead duplicate printer branch is gone with the rest
    path, line, n = DEAD_BRANCH
    old = before[path].decode().splitlines(keepends=True)
    assert old[line - 1].startswith("  } else if (op->op.same_as(builtin::ptx_cp_async())) {"), old[line - 1]
    assert "".join(old[line - 1:line - 1 + n]) not in after[path].decode()

    # A second run has nothing more to apply and finds nothing.
    again = _run(tree, "--check", "--format", "json")
    assert again.returncode == 0 and json.loads(again.stdout)["findings"] == [], again.stdout[-2000:]

    # The migrated Python still compiles; every changed C++ file compiles as its original does.
    compile(after["tilelang/language/tir/op.py"].decode(), "op.py", "exec")
    compile(after["tilelang/contrib/cutedsl/cpasync.py"].decode(), "cpasync.py", "exec")
    includes = _includes(cache)
    orig = cache / "tl017" / "tilelang" / "src"
    jobs = []
    for rel in sorted(c for c in changed if c.endswith(".cc")):
        sub = rel[len("tilelang/src/"):]
        jobs.append((rel, orig / sub, (orig / sub).parent))
        jobs.append((rel, tree / rel, (orig / sub).parent))
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda j: _compile(j[1], j[2], includes, cache / "compiled"), jobs))
    for i in range(0, len(jobs), 2):
        assert results[i + 1] == results[i] == (0, []), (jobs[i][0], results[i], results[i + 1])
