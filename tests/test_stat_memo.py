"""The stat memo: a file rejected by the prefilter and unchanged since is not read again, and
nothing it skips could hold a site (a changed file is always read; so is one changed just before)."""
import json
import os

import pytest

from conftest import FIXTURES, run_inproc
from cpasync_migrate import prefilter, stat_memo

LEGACY = 'import tilelang.language as T\nT.ptx_cp_async("float16", A.data, 0, B.data, 0, 16)\n'
PLAIN = "x = 1\n" + "#" * (len(LEGACY) - 7) + "\n"  # as long as LEGACY


@pytest.fixture
def tree(tmp_path):
    t = tmp_path / "tree"
    (t / "pkg").mkdir(parents=True)
    for i in range(5):
        (t / "pkg" / f"plain{i}.py").write_text(PLAIN)
    (t / "pkg" / "helper.cc").write_text("int f() { return 1; }\n")
    src = FIXTURES / "python" / "alias_t_positional.in.py"
    (t / "pkg" / "kernel.py").write_bytes(src.read_bytes())
    return t


@pytest.fixture
def settled(monkeypatch):
    """Files count as written long ago: the memo records them (tests write them just before the run)."""
    monkeypatch.setattr(stat_memo, "RACY_NS", -3600 * 10**9)


@pytest.fixture
def clean_calls(monkeypatch):
    """Each (path, answer) of StatMemo.clean, in this process."""
    calls = []
    real = stat_memo.StatMemo.clean

    def spy(self, path, st):
        ok = real(self, path, st)
        calls.append((os.path.basename(path), ok))
        return ok

    monkeypatch.setattr(stat_memo.StatMemo, "clean", spy)
    return calls


def _report(tree, cache, *extra):
    r = run_inproc("--check", "--format", "json", "--cache-dir", cache, *extra, ".", cwd=tree)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def _memo_entries(cache):
    found = []
    for e in cache.rglob("*.json"):
        d = json.loads(e.read_text(encoding="utf-8"))["v"]  # {"mac": ..., "v": the value} (cache.py)
        if "entries" in d:
            found.append(d["entries"])
    assert len(found) <= 1
    return {os.path.basename(p): k for p, k in found[0].items()} if found else {}


def test_an_unchanged_rejected_file_is_not_read_again(tree, tmp_path, settled, clean_calls):
    cache = tmp_path / "cache"
    first = _report(tree, cache, "-j", "1")
    entries = _memo_entries(cache)
    assert sorted(entries) == ["helper.cc"] + [f"plain{i}.py" for i in range(5)]  # never the file with a site
    second = _report(tree, cache, "-j", "1")
    assert second == first
    skipped = sorted(name for name, ok in clean_calls if ok)
    assert skipped == ["helper.cc"] + [f"plain{i}.py" for i in range(5)]


@pytest.mark.slow
def test_the_same_report_with_and_without_the_memo_on_the_fixtures(tmp_path, settled, monkeypatch):
    t = tmp_path / "fx"
    for lang in ("python", "cpp"):
        for f in sorted((FIXTURES / lang).glob("*.in.*")):
            (t / lang).mkdir(parents=True, exist_ok=True)
            (t / lang / f.name.replace(".in.", ".")).write_bytes(f.read_bytes())
        for i in range(3):
            (t / lang / f"plain{i}.{'py' if lang == 'python' else 'cc'}").write_text("// nothing\n" if lang == "cpp"
                                                                                     else PLAIN)
    cache = tmp_path / "cache"
    _report(t, cache, "-j", "2")  # fills the memo (from the workers)
    assert len(_memo_entries(cache)) >= 6
    with_memo = _report(t, cache, "-j", "2")
    monkeypatch.setattr(stat_memo, "STRINGS", False)  # entries as lists (CPASYNC_MIGRATE_MEMO_STRINGS=0)
    _report(t, tmp_path / "lists", "-j", "2")
    assert _report(t, tmp_path / "lists", "-j", "2") == with_memo
    monkeypatch.setattr(stat_memo, "ENABLED", False)
    without = _report(t, tmp_path / "other-cache", "-j", "1")
    assert with_memo == without


def test_a_rewritten_file_is_read_again_even_with_its_old_size_and_time(tree, tmp_path, settled):
    cache = tmp_path / "cache"
    first = _report(tree, cache, "-j", "1")
    p = tree / "pkg" / "plain0.py"
    st = p.stat()
    assert len(LEGACY) == len(PLAIN)
    p.write_text(LEGACY)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same size and modification time as before
    assert p.stat().st_size == st.st_size and p.stat().st_mtime_ns == st.st_mtime_ns
    second = _report(tree, cache, "-j", "1")
    paths = {os.path.basename(f["path"]) for f in second["findings"]} - {os.path.basename(f["path"]) for f in
                                                                         first["findings"]}
    assert paths == {"plain0.py"}  # its status-change time moved: read, and its site reported


def test_a_file_changed_just_before_the_run_is_not_recorded(tree, tmp_path):
    cache = tmp_path / "cache"
    _report(tree, cache, "-j", "1")  # the files were written a moment ago: racy, read again next time
    assert _memo_entries(cache) == {}


def test_no_memo_without_the_cache_or_with_the_switch_off(tree, tmp_path, settled, monkeypatch):
    r = run_inproc("--check", "--no-cache", "-j", "1", ".", cwd=tree)
    assert r.returncode == 1
    assert prefilter.MEMO is None
    monkeypatch.setattr(stat_memo, "ENABLED", False)
    cache = tmp_path / "cache"
    _report(tree, cache, "-j", "1")
    assert _memo_entries(cache) == {}


def test_a_damaged_memo_is_read_as_empty(tree, tmp_path, settled, clean_calls):
    cache = tmp_path / "cache"
    first = _report(tree, cache, "-j", "1")
    (memo_file,) = [e for e in cache.rglob("*.json") if "entries" in e.read_text(encoding="utf-8")]
    d = json.loads(memo_file.read_text(encoding="utf-8"))
    name = next(iter(d["v"]["entries"]))
    d["v"]["entries"][name] = "not a stat"  # its MAC no longer checks: the whole memo is a miss
    memo_file.write_text(json.dumps(d), encoding="utf-8")
    assert _report(tree, cache, "-j", "1") == first
    assert (os.path.basename(name), False) in clean_calls  # that file was read
    memo_file.write_text("{ damaged", encoding="utf-8")
    clean_calls.clear()
    assert _report(tree, cache, "-j", "1") == first
    assert not any(ok for _, ok in clean_calls)


def test_an_entry_needs_the_same_inode(tmp_path):
    p = tmp_path / "f.py"
    p.write_text(PLAIN)
    memo = stat_memo.StatMemo(now_ns=p.stat().st_ctime_ns + stat_memo.RACY_NS + 1)
    memo.note(str(p), p.stat())
    again = stat_memo.StatMemo(memo.take()[0])
    assert again.clean(str(p), p.stat())
    q = tmp_path / "g.py"
    q.write_text(PLAIN)
    st = p.stat()
    os.replace(q, p)  # another file under the name, same size
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert not again.clean(str(p), p.stat())


def test_a_deleted_or_changed_file_leaves_the_memo(tree, tmp_path, settled):
    cache = tmp_path / "cache"
    _report(tree, cache, "-j", "2")
    assert "plain1.py" in _memo_entries(cache) and "plain2.py" in _memo_entries(cache)
    (tree / "pkg" / "plain1.py").unlink()
    (tree / "pkg" / "plain2.py").write_text(LEGACY)  # now a site: read and kept out of the memo
    second = _report(tree, cache, "-j", "2")
    entries = _memo_entries(cache)
    assert "plain1.py" not in entries and "plain2.py" not in entries and "plain3.py" in entries
    assert any(f["path"].endswith("plain2.py") for f in second["findings"])


def test_a_since_run_uses_the_memo_and_leaves_it_whole(tree, tmp_path, settled):
    import subprocess

    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path)}
    git = ["git", "-C", str(tree), "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    try:
        subprocess.run(git + ["init", "-q"], check=True, capture_output=True, env=env)
        subprocess.run(git + ["add", "-A"], check=True, capture_output=True, env=env)
        subprocess.run(git + ["commit", "-qm", "t"], check=True, capture_output=True, env=env)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("git is not usable here")
    cache = tmp_path / "cache"
    _report(tree, cache, "-j", "1")
    before = _memo_entries(cache)
    assert len(before) == 6
    (tree / "pkg" / "plain0.py").write_text("y = 2\n")  # changed since HEAD
    r = run_inproc("--check", "--since", "HEAD", "--cache-dir", cache, "-j", "1", ".", cwd=tree)
    assert r.returncode == 0, r.stderr
    assert _memo_entries(cache) == before  # not cut down to the files --since looked at


def test_entries_are_strings_and_a_memo_of_the_other_format_is_not_read(tree, tmp_path, settled, clean_calls,
                                                                        monkeypatch):
    """CPASYNC_MIGRATE_MEMO_STRINGS (stat_memo.STRINGS): an entry is the five numbers in hexadecimal, one
    string; off, a list of them, as before.  Either way the same report, and a memo written the other way
    is not read (every file is read once more)."""
    cache = tmp_path / "cache"
    first = _report(tree, cache, "-j", "1")
    entries = _memo_entries(cache)
    st = (tree / "pkg" / "plain0.py").stat()
    assert entries["plain0.py"] == ":".join(f"{v:x}" for v in (st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                                                                 st.st_ino, st.st_dev))
    monkeypatch.setattr(stat_memo, "STRINGS", False)
    clean_calls.clear()
    assert _report(tree, cache, "-j", "1") == first
    assert clean_calls and not any(ok for _, ok in clean_calls)  # format 2 not read by the lists' way
    assert _memo_entries(cache)["plain0.py"] == [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]
    clean_calls.clear()
    assert _report(tree, cache, "-j", "1") == first
    assert sorted(n for n, ok in clean_calls if ok) == ["helper.cc"] + [f"plain{i}.py" for i in range(5)]
    monkeypatch.setattr(stat_memo, "STRINGS", True)
    clean_calls.clear()
    assert _report(tree, cache, "-j", "2") == first  # format 1 not read either; then format 2 again
    assert not any(ok for _, ok in clean_calls)
    assert _report(tree, cache, "-j", "1") == first
