"""The results cache: a hit gives exactly what the analysis gives, and nothing stale is ever read."""
import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, run_cli, run_inproc

CASES = ["alias_t_positional", "async_inject", "codegen_branches"]


@pytest.fixture
def tree(tmp_path):
    t = tmp_path / "tree"
    for lang in ("python", "cpp"):
        for f in sorted((FIXTURES / lang).glob("*.in.*")):
            if f.name.split(".in.")[0] in CASES or lang == "cpp" and len(list(t.glob("cpp/*"))) < 3:
                dest = t / lang / f.name.replace(".in.", ".")
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(f.read_bytes())
    (t / "python" / "plain.py").write_text("x = 1\n")
    return t


def _report(tree, cache_dir, *extra):
    r = run_inproc("--check", "--format", "json", "-j", "1", "--cache-dir", cache_dir, *extra, ".", cwd=tree)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def _count_analyses(monkeypatch) -> list:
    """Patch both front ends to record each analysis they are asked for."""
    from cpasync_migrate import cpp, python

    calls = []
    for mod in (cpp, python):
        real = mod.analyze

        def counted(text, path, options, *a, _real=real, **k):
            calls.append(path)
            return _real(text, path, options, *a, **k)

        monkeypatch.setattr(mod, "analyze", counted)
    return calls


def test_a_second_run_reads_everything_from_the_cache(tree, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    calls = _count_analyses(monkeypatch)
    first = _report(tree, cache)
    analysed = len(calls)
    assert analysed >= 4 and first["summary"]  # the fixtures have sites
    entries = list(cache.rglob("*.json"))
    assert len(entries) >= analysed
    for e in entries:  # JSON, never pickle
        assert isinstance(json.loads(e.read_text(encoding="utf-8")), dict)
    second = _report(tree, cache)
    assert len(calls) == analysed, "the second run parsed files again"
    assert second == first


def test_a_changed_file_is_analysed_again(tree, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    calls = _count_analyses(monkeypatch)
    _report(tree, cache)
    n = len(calls)
    victim = next((tree / "python").glob("alias_t*.py"))
    victim.write_text(victim.read_text(encoding="utf-8").replace("T.ptx_cp_async(", "T.ptx_cp_async( "),
                      encoding="utf-8")
    again = _report(tree, cache)
    assert [c.removeprefix("./") for c in calls[n:]] == [str(victim.relative_to(tree))]
    fresh = _report(tree, tmp_path / "other-cache")
    assert again == fresh


def test_damaged_entries_are_misses(tree, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    first = _report(tree, cache)
    for e in cache.rglob("*.json"):
        e.write_text('{"format": 1, "findings": [{"line": "x"}]' if len(e.name) % 2 else "garbage")
    calls = _count_analyses(monkeypatch)
    assert _report(tree, cache) == first
    assert calls, "damaged entries must not be used"


def test_other_rules_or_options_do_not_share_entries(tree, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    calls = _count_analyses(monkeypatch)
    _report(tree, cache)
    n = len(calls)
    _report(tree, cache, "--target", "0.1.9")
    assert len(calls) == 2 * n, "another target reused entries"
    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules)
    (rules / "legacy.toml").write_text((rules / "legacy.toml").read_text() + "\n# edited\n")
    monkeypatch.setenv("CPASYNC_MIGRATE_RULES", str(rules))
    _report(tree, cache)
    assert len(calls) == 3 * n, "edited rules reused entries"


def test_no_cache_writes_nothing(tree, tmp_path):
    cache = tmp_path / "cache"
    r = run_cli("--check", "--no-cache", "--cache-dir", cache, ".", cwd=tree)
    assert r.returncode == 1
    assert not cache.exists()


def test_write_mode_after_a_cached_check_writes_the_expected_text(tmp_path):
    t = tmp_path / "w"
    t.mkdir()
    for name in ("alias_t_positional.in.py", "async_inject.in.cc"):
        lang = "python" if name.endswith(".py") else "cpp"
        (t / name.replace(".in.", ".")).write_bytes((FIXTURES / lang / name).read_bytes())
    cache = tmp_path / "cache"
    args = ("--target", "0.1.8", "--unsafe-fixes", "--accept-partial-sets", "--cache-dir", cache, ".")  # what both fixtures ask for
    assert run_cli("--check", *args, cwd=t).returncode == 1
    assert list(cache.rglob("*.json"))
    r = run_cli(*args, cwd=t)
    assert r.returncode in (0, 1), r.stderr
    for name in ("alias_t_positional.out.py", "async_inject.out.cc"):
        lang = "python" if name.endswith(".py") else "cpp"
        assert (t / name.replace(".out.", ".")).read_bytes() == (FIXTURES / lang / name).read_bytes()


def test_configured_cache_folder_and_switch(tree, tmp_path):
    (tree / "pyproject.toml").write_text('[tool.cpasync-migrate]\ncache-dir = ".lint-cache"\n')
    sub = tree / "python"
    assert run_cli("--check", ".", cwd=sub).returncode == 1
    assert list((tree / ".lint-cache").rglob("*.json")), "relative to the pyproject.toml"
    shutil.rmtree(tree / ".lint-cache")
    (tree / "pyproject.toml").write_text('[tool.cpasync-migrate]\ncache = false\ncache-dir = ".lint-cache"\n')
    assert run_cli("--check", ".", cwd=sub).returncode == 1
    assert not (tree / ".lint-cache").exists()


def test_verbose_says_which_analyses_came_from_the_cache(tree, tmp_path):
    cache = tmp_path / "cache"
    first = run_cli("--check", "-v", "--cache-dir", cache, ".", cwd=tree)
    second = run_cli("--check", "-v", "--cache-dir", cache, ".", cwd=tree)
    processed = [ln for ln in first.stderr.splitlines() if ln.startswith("processed ")]
    assert processed and not any("results cache" in ln for ln in processed)
    again = [ln for ln in second.stderr.splitlines() if ln.startswith("processed ")]
    assert again == [ln + " (analysis from the results cache)" for ln in processed]


def test_entries_unused_for_a_month_are_pruned_once_a_day(tree, tmp_path):
    import os
    import time

    from cpasync_migrate import cache as c

    cache = tmp_path / "cache"
    _report(tree, cache)
    entries = sorted(cache.rglob("*.json"))
    assert len(entries) >= 3
    old = time.time() - (c.MAX_AGE_DAYS + 5) * 86400
    for e in entries:
        os.utime(e, (old, old))
    marker = cache / "last-pruned"
    assert marker.is_file()
    c._write(str(cache), "ab" + "0" * 62, {"format": c.FORMAT, "value": None})
    assert all(e.exists() for e in entries), "pruned again within a day"
    os.utime(marker, (old, old))
    keep = entries[0]
    assert c._read(str(cache), keep.parent.name + keep.name[: -len(".json")]) is not None  # read: in use again
    c._write(str(cache), "cd" + "0" * 62, {"format": c.FORMAT, "value": None})
    assert [e for e in entries if e.exists()] == [keep]
    assert (cache / "ab" / ("0" * 62 + ".json")).exists() and (cache / "cd" / ("0" * 62 + ".json")).exists()


def test_the_log_folders_of_killed_runs_are_pruned(tree, tmp_path):
    """A run killed while observed leaves its workers' log folder (``inputs-<16 hex>``) in the records' folder: the
    daily prune deletes one a day old, its logs and then itself; a fresh one, anything but a log file, a link and
    what it points to are left."""
    import os
    import time

    from cpasync_migrate import cache as c

    cache = tmp_path / "cache"
    _report(tree, cache)
    old = time.time() - 2 * 86400
    stale, fresh, foreign = (cache / f"inputs-{k * 16}" for k in "abc")
    for folder in (stale, fresh, foreign):
        folder.mkdir()
        (folder / "4242").write_text('["r", "/x"]\n')
    (foreign / "notes").write_text("not a log\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "4243").write_text("kept\n")
    (cache / ("inputs-" + "d" * 16)).symlink_to(outside, target_is_directory=True)
    for folder in (stale, foreign):
        os.utime(folder, (old, old))
    os.utime(cache / "last-pruned", (old, old))
    c._write(str(cache), "ab" + "0" * 62, {"format": c.FORMAT, "value": None})
    assert not stale.exists()
    assert (fresh / "4242").is_file()
    assert sorted(p.name for p in foreign.iterdir()) == ["notes"]
    assert (outside / "4243").is_file() and (cache / ("inputs-" + "d" * 16)).is_symlink()


def test_default_folder(monkeypatch, tmp_path):
    import os

    from cpasync_migrate import cache as c

    monkeypatch.delenv(c.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert c.default_dir() == os.path.join(str(tmp_path / "xdg"), "cpasync-migrate", "results")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setattr(os.path, "expanduser", lambda p: p)  # no home folder known
    assert c.default_dir() is None
    monkeypatch.setenv(c.ENV, str(tmp_path / "mine"))
    assert c.default_dir() == str(tmp_path / "mine")


def test_a_warm_check_imports_no_parser(tree, tmp_path):
    """Every answer from the cache: neither tree-sitter nor libcst is imported, in any process."""
    import os
    import subprocess
    import sys

    def imported(env=None):
        r = subprocess.run([sys.executable, "-X", "importtime", "-m", "cpasync_migrate", "--check", "--cache-dir",
                            str(tmp_path / "cache"), "."], cwd=tree, capture_output=True, text=True,
                           env=dict(os.environ, **(env or {})))
        assert r.returncode == 1, r.stderr[-500:]
        return {ln.rsplit("|", 1)[-1].strip().split(".")[0] for ln in r.stderr.splitlines()
                if ln.startswith("import time:")}

    # cold: C++ files and a fixable kernel (libcst makes its fix with --check's ast-side fixes off)
    assert {"tree_sitter", "libcst"} <= imported({"CPASYNC_MIGRATE_FAST_FIXES": "0"})
    assert not {"tree_sitter", "libcst"} & imported()


def _fake_package(site: Path, record_names_files: bool) -> Path:
    """A package ``pkg`` in a folder laid out like site-packages, with the RECORD pip would write."""
    import base64
    import hashlib

    pkg = site / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from ._binding import *\n")
    (pkg / "_binding.so").write_bytes(b"\x7fELF not really")
    info = site / "pkg-1.0.dist-info"
    info.mkdir()
    rows = []
    if record_names_files:
        for f in sorted(pkg.iterdir()):
            digest = base64.urlsafe_b64encode(hashlib.sha256(f.read_bytes()).digest()).rstrip(b"=").decode()
            rows.append(f"pkg/{f.name},sha256={digest},{f.stat().st_size}")
        rows.append("pkg/__pycache__/__init__.cpython-311.pyc,,")
    else:  # an editable install lists only its path hook
        rows.append("__editable__.pkg-1.0.pth,sha256=abc,12")
    rows += ["pkg-1.0.dist-info/INSTALLER,sha256=zuu,4", "pkg-1.0.dist-info/RECORD,,"]
    (info / "RECORD").write_text("\n".join(rows) + "\n")
    return pkg


def _retouch(folder: Path, when: float) -> None:
    import os

    for f in folder.rglob("*"):
        os.utime(f, (when, when))


def test_a_reinstalled_parser_package_keeps_its_salt(tmp_path):
    """pip gives installed files the time of the install: a CI job that installs the tool on every run
    must still read the cache it restores, so an installed package is known by its RECORD."""
    from cpasync_migrate.cache import package_digest

    pkg = _fake_package(tmp_path / "site", record_names_files=True)
    before = package_digest("pkg", str(pkg), own=False)
    _retouch(pkg.parent, 1_000_000_000)
    assert package_digest("pkg", str(pkg), own=False) == before
    record = pkg.parent / "pkg-1.0.dist-info" / "RECORD"
    record.write_text(record.read_text().replace("sha256=", "sha256=X", 1))  # another build of the package
    assert package_digest("pkg", str(pkg), own=False) != before


def test_a_package_without_a_file_list_is_known_by_its_files_metadata(tmp_path):
    from cpasync_migrate.cache import package_digest

    pkg = _fake_package(tmp_path / "site", record_names_files=False)
    before = package_digest("pkg", str(pkg), own=False)
    assert b":stat" in before
    _retouch(pkg, 1_000_000_000)
    assert package_digest("pkg", str(pkg), own=False) != before


def test_the_tools_own_code_is_known_by_content(tmp_path):
    from cpasync_migrate.cache import package_digest

    pkg = tmp_path / "tool"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("A = 1\n")
    (pkg / "sub" / "b.py").write_text("B = 2\n")
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"compiled")
    before = package_digest("tool", str(pkg), own=True)
    _retouch(pkg, 1_000_000_000)
    (pkg / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"compiled again")
    assert package_digest("tool", str(pkg), own=True) == before
    (pkg / "sub" / "b.py").write_text("B = 3\n")
    assert package_digest("tool", str(pkg), own=True) != before


def test_a_fresh_copy_of_the_tool_reads_the_cache_an_earlier_copy_wrote(tree, tmp_path):
    """Two installs of the same code (new modification times) share entries: the CI case."""
    import os
    import subprocess
    import sys

    cache = tmp_path / "cache"
    runs = []
    for n, when in (("one", 1_000_000_000), ("two", 1_500_000_000)):
        home = tmp_path / n
        shutil.copytree(ROOT / "cpasync_migrate", home / "cpasync_migrate",
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(ROOT / "rules", home / "rules")
        _retouch(home, when)
        env = {"PYTHONPATH": str(home) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        where = subprocess.run([sys.executable, "-c", "import cpasync_migrate; print(cpasync_migrate.__file__)"],
                               cwd=tree, env={**os.environ, **env}, capture_output=True, text=True).stdout
        assert where.startswith(str(home)), where  # the copy runs, not the checkout
        runs.append(run_cli("--check", "-v", "-j", "1", "--cache-dir", cache, ".", cwd=tree, env=env))
    for r in runs:
        assert r.returncode == 1, r.stderr[-800:]
    processed = [ln for ln in runs[1].stderr.splitlines() if ln.startswith("processed ")]
    assert len(processed) >= 4
    assert all(ln.endswith("(analysis from the results cache)") for ln in processed), processed
    assert runs[0].stdout == runs[1].stdout
