"""What a hostile tree cannot make the tool write, trust or run (README, "Safety", "Threat model").

Each test plants the attack in a temporary tree the way a pull request could (its pyproject.toml,
links committed under the cache folder, cache entries shipped with it), runs the tool through its
command line, and checks that the attack is contained: the victim file unchanged, nothing written
outside the tree, the forged entry ignored, the worker count and the size bound kept.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from test_cli import LEGACY, MIGRATED_CALL

# The attack suites run in CI with -m slow (.ci/run), outside the default run.
pytestmark = pytest.mark.slow

HANG = 120
VICTIM = "the victim's own text\n"


def put(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def cli(*args, cwd, home: Path, env=None):
    """The tool in a separate process, its user's cache folder (the MAC key's) at ``home``; a run that
    takes ``HANG`` seconds is a hang (a FIFO read), not a slow run."""
    e = dict(os.environ, XDG_CACHE_HOME=str(home), NO_COLOR="1", **(env or {}))
    e.pop("FORCE_COLOR", None)
    return subprocess.run([sys.executable, "-m", "cpasync_migrate", *map(str, args)], cwd=cwd, env=e,
                          capture_output=True, text=True, timeout=HANG)


@pytest.fixture
def tree(tmp_path):
    t = tmp_path / "tree"
    put(t / "k.py", LEGACY)
    return t


def _hex_names():
    return [f"{i:02x}" for i in range(256)]


# ------------------------------------------------------------------ 1. writes through a committed link


def test_a_committed_link_in_the_cache_folder_is_never_written_through(tree, tmp_path):
    victim = put(tmp_path / "victim.txt", VICTIM)
    outside = tmp_path / "outside"
    outside.mkdir()
    old_entry = put(outside / ("0" * 62 + ".json"), '{"old": 1}')
    os.utime(old_entry, (1, 1))  # older than any prune age: a prune that reached it would delete it
    put(tree / "pyproject.toml", '[tool.cpasync-migrate]\ncache-dir = ".cc"\n')
    cc = tree / ".cc"
    cc.mkdir()
    (cc / "last-pruned").symlink_to(victim)  # the prune marker, stale by the link and by its target
    os.utime(victim, (1, 1))
    os.utime(cc / "last-pruned", (1, 1), follow_symlinks=False)
    for name in _hex_names():  # every entry folder a key can pick leads outside
        (cc / name).symlink_to(outside, target_is_directory=True)
    for mode in (["--check"], []):
        r = cli(*mode, ".", cwd=tree, home=tmp_path / "home")
        assert r.returncode in (0, 1), r.stderr
    assert victim.read_text() == VICTIM
    assert sorted(p.name for p in outside.iterdir()) == [old_entry.name], "an entry was written through a link"
    assert old_entry.read_text() == '{"old": 1}'
    assert MIGRATED_CALL in (tree / "k.py").read_text()  # the run itself did its work
    # entries can be written now (one folder still a link): the stale marker makes the run prune
    for name in _hex_names()[1:]:
        (cc / name).unlink()
    (tree / "k.py").write_text(LEGACY)
    r = cli("--check", ".", cwd=tree, home=tmp_path / "home")
    assert r.returncode == 1, r.stderr
    assert list(cc.rglob("*.json"))
    assert victim.read_text() == VICTIM
    assert not (cc / "last-pruned").is_symlink() and (cc / "last-pruned").is_file()  # replaced, not followed
    assert old_entry.read_text() == '{"old": 1}'  # the prune did not go through the link "00"


def test_a_link_planted_under_the_entry_name_is_replaced_not_followed(tree, tmp_path):
    """A second run writes the same entries: a link put at an entry's name in between is replaced."""
    cache = tmp_path / "cache"
    home = tmp_path / "home"
    assert cli("--check", "--cache-dir", cache, ".", cwd=tree, home=home).returncode == 1
    entries = sorted(cache.rglob("*.json"))
    assert entries
    victims = []
    for i, e in enumerate(entries):
        e.unlink()
        if i % 2:  # a FIFO under an entry's name: never opened for a blocking read
            os.mkfifo(e)
            continue
        v = put(tmp_path / f"victim{i}.txt", VICTIM)
        e.symlink_to(v)
        victims.append(v)
    r = cli("--check", "--cache-dir", cache, ".", cwd=tree, home=home)
    assert r.returncode == 1 and "k.py:9:9: CPA001" in r.stdout
    assert [v.read_text() for v in victims] == [VICTIM] * len(victims)
    assert all(e.is_file() and not e.is_symlink() for e in entries)


def test_without_a_usable_key_the_cache_is_off(tree, tmp_path):
    home = put(tmp_path / "home", "a file where the user's cache folder should be\n")
    cache = tmp_path / "cache"
    r = cli("--check", "-v", "--cache-dir", cache, ".", cwd=tree, home=home)
    assert r.returncode == 1 and "k.py:9:9: CPA001" in r.stdout
    assert "results cache off" in r.stderr
    assert not cache.exists() or not list(cache.rglob("*.json"))
    # a link planted where the key goes is not followed, nor replaced
    victim = put(tmp_path / "victim.txt", VICTIM)
    (tmp_path / "home2" / "cpasync-migrate").mkdir(parents=True)
    (tmp_path / "home2" / "cpasync-migrate" / "key").symlink_to(victim)
    r = cli("--check", "-v", "--cache-dir", cache, ".", cwd=tree, home=tmp_path / "home2")
    assert r.returncode == 1 and "results cache off" in r.stderr
    assert victim.read_text() == VICTIM and (tmp_path / "home2" / "cpasync-migrate" / "key").is_symlink()


# ------------------------------------------------------------------ 2. a cache folder outside the tree


@pytest.mark.parametrize("where", ["../outside", "{abs}", "sub/../../outside", ".cc/../../outside"])
def test_the_trees_configuration_cannot_put_the_cache_outside_the_tree(tree, tmp_path, where):
    outside = tmp_path / "outside"
    value = where.replace("{abs}", str(outside))
    put(tree / "pyproject.toml", f'[tool.cpasync-migrate]\ncache-dir = "{value}"\n')
    r = cli("--check", ".", cwd=tree, home=tmp_path / "home")
    assert r.returncode == 3, r.stdout + r.stderr
    assert f"{tree / 'pyproject.toml'}: [tool.cpasync-migrate] cache-dir = {value!r}" in r.stderr
    assert "Traceback" not in r.stderr
    assert not outside.exists()


def test_the_trees_configuration_cannot_reach_a_cache_folder_through_a_link(tree, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tree / ".cc").symlink_to(outside, target_is_directory=True)
    for value in (".cc", ".cc/results"):
        put(tree / "pyproject.toml", f'[tool.cpasync-migrate]\ncache-dir = "{value}"\n')
        r = cli("--check", ".", cwd=tree, home=tmp_path / "home")
        assert r.returncode == 3, r.stdout + r.stderr
        assert "is a link or not a folder" in r.stderr and str(tree / ".cc") in r.stderr
    assert list(outside.iterdir()) == []


def test_the_command_line_and_the_environment_may_name_any_folder(tree, tmp_path):
    put(tree / "pyproject.toml", '[tool.cpasync-migrate]\ncache-dir = ".cc"\n')
    r = cli("--check", "--cache-dir", "../mine", ".", cwd=tree, home=tmp_path / "home")
    assert r.returncode == 1 and list((tmp_path / "mine").rglob("*.json"))
    put(tree / "pyproject.toml", "[tool.cpasync-migrate]\n")
    r = cli("--check", ".", cwd=tree, home=tmp_path / "home", env={"CPASYNC_MIGRATE_CACHE_DIR": str(tmp_path / "env")})
    assert r.returncode == 1 and list((tmp_path / "env").rglob("*.json"))
    assert not (tree / ".cc").exists()


def test_a_folder_inside_the_tree_is_allowed(tree, tmp_path):
    put(tree / "pyproject.toml", '[tool.cpasync-migrate]\ncache-dir = "build/../.cc/results"\n')
    r = cli("--check", ".", cwd=tree, home=tmp_path / "home")
    assert r.returncode == 1, r.stderr
    assert list((tree / ".cc" / "results").rglob("*.json"))


# ------------------------------------------------------------------ 3. forged results


def _forge(cache_dir: Path, home: Path, monkeypatch, change) -> int:
    """Rewrite every analysis entry under ``cache_dir`` with ``change`` applied, signed with the key of
    the user whose cache folder is ``home`` (as that user's own tool would write it); how many."""
    from cpasync_migrate import cache

    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    n = 0
    for e in sorted(cache_dir.rglob("*.json")):
        k = e.parent.name + e.name[: -len(".json")]
        d = cache.read_json(str(cache_dir), k)
        if isinstance(d, dict) and d.get("findings") and change(d):
            cache.write_json(str(cache_dir), k, d)
            n += 1
    return n


def _no_findings(d) -> bool:
    d["findings"] = []
    return True


def _inject(d) -> bool:
    hit = False
    for f in d["findings"]:
        for e in (f.get("fix") or {}).get("edits", []):
            e[2] = "INJECTED()"
            hit = True
    return hit


def test_entries_shipped_in_the_repository_are_not_trusted(tree, tmp_path, monkeypatch):
    put(tree / "pyproject.toml", '[tool.cpasync-migrate]\ncache-dir = ".cc"\n')
    attacker, victim = tmp_path / "attacker", tmp_path / "victim"
    assert cli("--check", ".", cwd=tree, home=attacker).returncode == 1
    assert _forge(tree / ".cc", attacker, monkeypatch, _no_findings) >= 1
    # well formed: the machine that signed them is fooled (the forgery is a real one)
    assert cli("--check", ".", cwd=tree, home=attacker).returncode == 0
    r = cli("--check", ".", cwd=tree, home=victim)
    assert r.returncode == 1 and "k.py:9:9: CPA001" in r.stdout, r.stdout + r.stderr
    assert (victim / "cpasync-migrate" / "key").stat().st_mode & 0o777 == 0o600


def test_write_mode_never_applies_an_edit_it_did_not_compute(tree, tmp_path, monkeypatch):
    reference = put(tmp_path / "ref" / "k.py", LEGACY)
    home = tmp_path / "home"
    assert cli(reference, "--no-cache", cwd=tmp_path, home=home).returncode == 0
    cache = tmp_path / "cache"
    assert cli("--check", "--cache-dir", cache, ".", cwd=tree, home=home).returncode == 1
    # even an entry that passes the MAC (the user's own cache, edited) cannot choose what is written
    assert _forge(cache, home, monkeypatch, _inject) >= 1
    assert "INJECTED()" in cli("--diff", "--cache-dir", cache, ".", cwd=tree, home=home).stdout  # read as forged
    r = cli("--cache-dir", cache, ".", cwd=tree, home=home)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tree / "k.py").read_text() == reference.read_text()


def test_a_forged_stat_memo_cannot_make_a_file_skipped(tree, tmp_path, monkeypatch):
    import time

    from cpasync_migrate import cache, stat_memo

    attacker, victim = tmp_path / "attacker", tmp_path / "victim"
    store = tmp_path / "cache"
    k = tree / "k.py"
    k.write_text("x = 1\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(attacker))
    # Every run in a process of its own, as the tool is installed (an in-process run reads the checkout's
    # package, whose digest, and so whose memo key, differs from an installed copy's).  The clean file must be
    # older than the racy window to be recorded.
    time.sleep(stat_memo.RACY_NS / 1e9 + 0.2)
    assert cli("--check", "--cache-dir", store, ".", cwd=tree, home=attacker).returncode == 0
    k.write_text(LEGACY)
    forged = 0
    for e in sorted(store.rglob("*.json")):
        key = e.parent.name + e.name[: -len(".json")]
        d = cache.read_json(str(store), key)
        if isinstance(d, dict) and "entries" in d:
            for p in d["entries"]:
                if os.path.basename(p) == "k.py":
                    d["entries"][p] = stat_memo.stat_key(k.stat())
                    forged += 1
            cache.write_json(str(store), key, d)
    assert forged == 1
    assert cli("--check", "--cache-dir", store, ".", cwd=tree, home=attacker).returncode == 0  # a real forgery
    r = cli("--check", "--cache-dir", store, ".", cwd=tree, home=victim)
    assert r.returncode == 1 and "CPA001" in r.stdout


# ------------------------------------------------------------------ 4. resources

COUNT_FORKS = textwrap.dedent("""
    import json, os, sys
    forks = [0]
    real = os.fork
    def fork():
        pid = real()
        if pid:
            forks[0] += 1
        return pid
    os.fork = fork
    from cpasync_migrate.cli import main
    from cpasync_migrate.cpus import default_jobs
    code = main(sys.argv[1:])
    sys.stderr.write("\\nFORKS " + json.dumps([forks[0], default_jobs(), code]) + "\\n")
""")


def _forks(tree, *args):
    r = subprocess.run([sys.executable, "-c", COUNT_FORKS, *args], cwd=tree, capture_output=True, text=True,
                       timeout=HANG)
    line = [ln for ln in r.stderr.splitlines() if ln.startswith("FORKS ")]
    assert line, r.stderr[-2000:]
    return json.loads(line[-1].split(" ", 1)[1])


def test_the_trees_configuration_cannot_start_more_workers_than_cpus(tmp_path):
    t = tmp_path / "many"
    for i in range(40):
        put(t / f"d{i}" / "k.py", LEGACY)
    put(t / "pyproject.toml", "[tool.cpasync-migrate]\njobs = 100000000\n")
    forks, cpus, code = _forks(t, "--check", "--no-cache", ".")
    assert code == 1
    assert 0 < forks <= cpus or cpus == 1 and forks == 0
    # the command line is the user's: it may ask for more than the CPUs
    forks, cpus, code = _forks(t, "--check", "--no-cache", "-j", str(cpus + 3), ".")
    assert code == 1 and forks > cpus


def test_the_trees_configuration_cannot_lift_the_size_bound(tree, tmp_path):
    from cpasync_migrate.config import CONFIG_MAX_FILE_SIZE

    big = put(tree / "big.py", LEGACY + "#" * (CONFIG_MAX_FILE_SIZE + 10) + "\n")
    size = big.stat().st_size
    for value in ("0", '"1GB"', str(CONFIG_MAX_FILE_SIZE + 1)):
        put(tree / "pyproject.toml", f"[tool.cpasync-migrate]\nmax-file-size = {value}\n")
        r = cli("--check", ".", cwd=tree, home=tmp_path / "home")
        assert r.returncode == 2, r.stdout + r.stderr
        assert (f"big.py:1:1: CPA900 {size} bytes, over the size limit of {CONFIG_MAX_FILE_SIZE} bytes; "
                "not analysed") in r.stdout
        assert f"capped at {CONFIG_MAX_FILE_SIZE} bytes" in r.stderr
    # a lower limit from the file still holds; the command line lifts the bound
    put(tree / "pyproject.toml", '[tool.cpasync-migrate]\nmax-file-size = 100\n')
    assert "over the size limit of 100 bytes" in cli("--check", "k.py", cwd=tree, home=tmp_path / "home").stdout
    r = cli("--check", "--max-file-size", "0", "big.py", cwd=tree, home=tmp_path / "home")
    assert r.returncode == 1 and "big.py:9:9: CPA001" in r.stdout, r.stdout + r.stderr


# ------------------------------------------------------------------ 5. --emit-cuda


def test_emit_cuda_follows_no_link_and_keeps_same_named_files_apart(tmp_path):
    t = tmp_path / "t"
    put(t / "a" / "k.py", LEGACY)
    put(t / "b" / "k.py", LEGACY.replace('"float16"', '"float32"').replace("16)", "16)"))
    out = t / "out"
    victim = put(tmp_path / "victim.txt", VICTIM)
    (out / "a").mkdir(parents=True)
    for form in ("old.cu", "new.cu", "json"):
        (out / "a" / f"k.py.main.{form}").symlink_to(victim)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "b").symlink_to(elsewhere, target_is_directory=True)
    r = cli("--check", "--verify", "--device", "cpu", "--emit-cuda", out, "a", "b", cwd=t, home=tmp_path / "home")
    assert r.returncode == 1, r.stdout + r.stderr
    assert victim.read_text() == VICTIM
    assert list(elsewhere.iterdir()) == [], "written through a link planted in the --emit-cuda folder"
    a = sorted(p.name for p in (out / "a").iterdir())
    assert a == ["k.py.main.json", "k.py.main.new.cu", "k.py.main.old.cu"]
    assert not any((out / "a" / n).is_symlink() for n in a)
    assert "half" in (out / "a" / "k.py.main.old.cu").read_text()
    # b's folder is a link: b's kernels are not written, and the run says why
    assert f"{out / 'b'}: a link; not followed" in r.stdout + r.stderr
    (out / "b").unlink()
    r = cli("--check", "--verify", "--device", "cpu", "--emit-cuda", out, "a", "b", cwd=t, home=tmp_path / "home")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "float" in (out / "b" / "k.py.main.old.cu").read_text()
    assert (out / "a" / "k.py.main.old.cu").read_text() != (out / "b" / "k.py.main.old.cu").read_text()


def test_emit_bundle_follows_no_link_planted_in_its_folder(tree, tmp_path):
    out = tmp_path / "out"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out.mkdir()
    (out / "cuda").symlink_to(elsewhere, target_is_directory=True)
    victim = put(tmp_path / "victim.txt", VICTIM)
    (out / "bundle.json").symlink_to(victim)
    r = cli("--diff", "--emit-bundle", out, ".", cwd=tree, home=tmp_path / "home")
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"--emit-bundle {out}: {out / 'cuda'}: a link; not followed" in r.stderr and "Traceback" not in r.stderr
    assert list(elsewhere.iterdir()) == [] and victim.read_text() == VICTIM
    (out / "cuda").unlink()
    r = cli("--diff", "--emit-bundle", out, ".", cwd=tree, home=tmp_path / "home")
    assert r.returncode == 1, r.stdout + r.stderr
    assert victim.read_text() == VICTIM and not (out / "bundle.json").is_symlink()
    assert json.loads((out / "bundle.json").read_text())["items"]
    assert sorted(p.name for p in (out / "cuda").iterdir()) == ["k00000.new.cu", "k00000.old.cu"]
    # files of one name, and a name the old flattening made of a path, keep their own texts
    put(tree / "a" / "k.py", LEGACY.replace("tx * 8, 16)", "tx * 8, 16)  # a"))
    put(tree / "a_k.py", LEGACY.replace("tx * 8, 16)", "tx * 8, 16)  # a_k"))
    r = cli("--diff", "--emit-bundle", out, ".", cwd=tree, home=tmp_path / "home")
    assert r.returncode == 1, r.stdout + r.stderr
    texts = sorted(str(p.relative_to(out / "texts")) for p in (out / "texts").rglob("*.old.py"))
    assert texts == ["a/k.py.old.py", "a_k.py.old.py", "k.py.old.py"]
    assert "# a_k" in (out / "texts" / "a_k.py.old.py").read_text()
    assert "# a\n" in (out / "texts" / "a" / "k.py.old.py").read_text()


# ------------------------------------------------------------------ the module every such write goes through


def test_safe_write_refuses_links_and_never_writes_through_them(tmp_path):
    from cpasync_migrate import safe_write as sw

    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "a" / "link").symlink_to(outside, target_is_directory=True)
    assert sw.inside("a/b", str(root)) == "a/b" and sw.inside("a/../b", str(root)) == "b"
    assert sw.inside("../x", str(root)) is None and sw.inside(str(outside), str(root)) is None
    assert sw.inside(".", str(root)) == ""
    with pytest.raises(sw.UnsafePath, match="a link; not followed"):
        sw.open_dir(str(root / "a" / "link" / "deeper"), under=str(root))
    with pytest.raises(sw.UnsafePath, match="outside"):
        sw.open_dir(str(outside), under=str(root))
    with pytest.raises(sw.UnsafePath, match="a link; not followed"):
        sw.open_child(str(root / "a"), "link")
    assert list(outside.iterdir()) == []
    fd = sw.open_dir(str(root / "a" / "new" / "er"), under=str(root))  # made on the way, no link
    try:
        victim = put(tmp_path / "victim.txt", VICTIM)
        os.symlink(victim, "x", dir_fd=fd)
        sw.write_at(fd, "x", b"new\n")
        assert victim.read_text() == VICTIM and (root / "a" / "new" / "er" / "x").read_bytes() == b"new\n"
        assert sw.create_at(fd, "x", b"other\n") is False and (root / "a" / "new" / "er" / "x").read_bytes() == b"new\n"
        assert sw.create_at(fd, "y", b"made\n") is True and sw.read_at(fd, "y") == b"made\n"
        os.symlink(victim, "z", dir_fd=fd)
        os.mkfifo("f", dir_fd=fd)
        assert sw.read_at(fd, "z") is None and sw.read_at(fd, "f") is None and sw.read_at(fd, "y", limit=2) is None
        assert sorted(os.listdir(root / "a" / "new" / "er")) == ["f", "x", "y", "z"]  # no temporary left
    finally:
        os.close(fd)
