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
    args = ("--target", "0.1.8", "--unsafe-fixes", "--cache-dir", cache, ".")  # what both fixtures ask for
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
    import subprocess
    import sys

    def imported():
        r = subprocess.run([sys.executable, "-X", "importtime", "-m", "cpasync_migrate", "--check", "--cache-dir",
                            str(tmp_path / "cache"), "."], cwd=tree, capture_output=True, text=True)
        assert r.returncode == 1, r.stderr[-500:]
        return {ln.rsplit("|", 1)[-1].strip().split(".")[0] for ln in r.stderr.splitlines()
                if ln.startswith("import time:")}

    assert {"tree_sitter", "libcst"} <= imported()  # cold: C++ files and a fixable kernel
    assert not {"tree_sitter", "libcst"} & imported()
