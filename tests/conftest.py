import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture(autouse=True)
def _own_results_cache(tmp_path_factory, monkeypatch):
    """Each test's runs of the tool (in-process or not) share a results cache no other test sees:
    a test that patches a front end must not be answered from another test's entries."""
    monkeypatch.setenv("CPASYNC_MIGRATE_CACHE_DIR", str(tmp_path_factory.mktemp("results-cache")))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("user-cache")))  # the cache's MAC key
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)  # a CI job's own summary gets no test runs


def run_cli(*args, cwd=None, env=None, input=None, text=True):
    """Run the tool the way a user does: a separate process, never in-process."""
    e = dict(os.environ)
    e.pop("FORCE_COLOR", None)
    e["NO_COLOR"] = "1"
    if env:
        e.update(env)
    return subprocess.run([sys.executable, "-m", "cpasync_migrate", *map(str, args)], cwd=cwd, env=e,
                          capture_output=True, text=text, input=input)


@pytest.fixture
def cli():
    return run_cli


class Result:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def run_inproc(*args, cwd):
    """Run cli.main in this process (fast path for data-driven tests)."""
    import io

    from cpasync_migrate import cli

    old = os.getcwd(), sys.stdout, sys.stderr
    out, err = io.StringIO(), io.StringIO()
    env_nc = os.environ.get("NO_COLOR")
    os.environ["NO_COLOR"] = "1"
    try:
        os.chdir(cwd)
        sys.stdout, sys.stderr = out, err
        code = cli.main([str(a) for a in args])
    finally:
        os.chdir(old[0])
        sys.stdout, sys.stderr = old[1], old[2]
        if env_nc is None:
            os.environ.pop("NO_COLOR", None)
        else:
            os.environ["NO_COLOR"] = env_nc
    return Result(code, out.getvalue(), err.getvalue())


def gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001
        return False


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="no NVIDIA GPU with cupy here")
    has_gpu = None
    for item in items:
        if "gpu" in item.keywords:
            if has_gpu is None:
                has_gpu = gpu_available()
            if not has_gpu:
                item.add_marker(skip_gpu)
