"""The CPU-time budget of one file's analysis (budget.py, --file-cpu-limit): a file whose analysis would go on
past it is a file error naming it, and the run goes on with the other files."""
from __future__ import annotations

import shutil
import signal
import subprocess
import sys

import pytest

from conftest import ROOT, run_inproc
from cpasync_migrate import budget, cpp

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="no setitimer: no budget here")

HANG = 120  # the subprocess guard against a run that never ends (not a timing assertion)
FIXTURE = ROOT / "tests" / "fixtures" / "cpp" / "async_inject.in.cc"


@pytest.fixture(autouse=True)
def _guard():
    """A test whose budget failed would spin for ever: SIGALRM (not the budget's signal) ends it as a failure."""
    def late(signum, frame):
        raise AssertionError(f"still running after {HANG} s: the budget did not end the analysis")

    old = signal.signal(signal.SIGALRM, late)
    signal.alarm(HANG)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _spin():
    x = 0
    while True:  # only the budget ends this
        x += 1


def test_the_budget_ends_a_busy_body_and_leaves_nothing_armed():
    before = signal.getsignal(signal.SIGPROF)
    with pytest.raises(budget.OverBudget):
        with budget.cpu_budget(0.05):
            _spin()
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGPROF) == before
    with budget.cpu_budget(5.0):  # a body that ends in time is not touched
        assert sum(range(1000)) == 499500
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)


def test_a_broad_except_inside_the_analysis_does_not_take_it():
    def analysis():
        try:
            _spin()
        except Exception:  # noqa: BLE001 - what a front end might do
            return "went on"

    with pytest.raises(budget.OverBudget):
        with budget.cpu_budget(0.05):
            analysis()


def test_no_limit_and_the_limit_grows_with_the_file():
    assert budget.limit_for(0, 10 << 20) == 0.0
    assert budget.limit_for(5, 0) == 5
    assert budget.limit_for(5, 1 << 20) == 5 * (1 + budget.PER_MIB)
    assert budget.limit_for(5, 2 << 20) > budget.limit_for(5, 1 << 20)
    with budget.cpu_budget(0):
        pass
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_an_analysis_that_never_ends_is_a_file_error_and_the_run_goes_on(tmp_path, monkeypatch, jobs):
    """One C++ file's analysis never ends (the front end stands in for a shape nobody has found): that file is
    CPA900 naming it and the budget; the Python kernel next to it is reported as without the hanging file."""
    (tmp_path / "pkg").mkdir()
    shutil.copy(FIXTURE, tmp_path / "pkg" / "hangs.cc")
    (tmp_path / "pkg" / "k.py").write_text(
        "import tilelang.language as T\n\n\n@T.prim_func\ndef main(A: T.Buffer((64,), \"float16\")):\n"
        "    S = T.alloc_shared((64,), \"float16\")\n"
        "    T.ptx_cp_async(\"float16\", S.data, 0, A.data, 0, 16)\n", encoding="utf-8")
    alone = run_inproc("--check", "--no-cache", "-j", jobs, "--format", "json", "pkg/k.py", cwd=tmp_path)
    real = cpp.analyze

    def hangs(text, path, opts, **kw):
        if path.endswith("hangs.cc"):
            _spin()
        return real(text, path, opts, **kw)

    monkeypatch.setattr(cpp, "analyze", hangs)
    r = run_inproc("--check", "--no-cache", "-j", jobs, "--file-cpu-limit", "0.2", "--format", "json", "pkg",
                   cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    import json

    got, want = json.loads(r.stdout), json.loads(alone.stdout)
    assert [e["path"] for e in got["errors"]] == ["pkg/hangs.cc"], got["errors"]
    assert "--file-cpu-limit" in got["errors"][0]["message"]
    assert [f for f in got["findings"] if f["path"].endswith("k.py")] == want["findings"] != []


def test_the_command_line_sets_it_and_a_real_analysis_meets_it(tmp_path):
    """Through the console entry point, on a real C++ file: with a budget far below any analysis (a microsecond),
    the file is CPA900 naming it; with the default budget, the same file is analysed (exit 1, its findings)."""
    shutil.copy(FIXTURE, tmp_path / "k.cc")
    cmd = [sys.executable, "-m", "cpasync_migrate", "--check", "--no-cache", "-j", "1"]
    tight = subprocess.run([*cmd, "--file-cpu-limit", "0.000001", "k.cc"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=HANG)
    assert tight.returncode == 2, tight.stdout + tight.stderr
    assert "k.cc:1:1: CPA900" in tight.stdout and "--file-cpu-limit" in tight.stdout
    default = subprocess.run([*cmd, "k.cc"], cwd=tmp_path, capture_output=True, text=True, timeout=HANG)
    assert default.returncode == 1 and "CPA10" in default.stdout and "CPA900" not in default.stdout
    for bad in ("-1", "nan", "inf", "soon"):
        r = subprocess.run([*cmd, "--file-cpu-limit", bad, "k.cc"], cwd=tmp_path, capture_output=True, text=True,
                           timeout=HANG)
        assert r.returncode != 0 and r.returncode != 1 and "--file-cpu-limit" in r.stderr, bad


def test_a_configuration_file_cannot_set_it(tmp_path):
    shutil.copy(FIXTURE, tmp_path / "k.cc")
    (tmp_path / "pyproject.toml").write_text("[tool.cpasync-migrate]\nfile-cpu-limit = 0\n", encoding="utf-8")
    r = run_inproc("--check", "--no-cache", "-j", "1", "k.cc", cwd=tmp_path)
    assert r.returncode == 3 and "file-cpu-limit" in r.stderr
