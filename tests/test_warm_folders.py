"""The walk's per-folder answers: each speed-up gives the same report as the way it replaced.

- ``CPASYNC_MIGRATE_FOLDER_INHERIT`` (config.FOLDER_INHERIT): a walked folder without a ``pyproject.toml`` entry
  takes its parent's configuration (as written) instead of a lookup from its real path.
- ``CPASYNC_MIGRATE_FREE_FOLDERS`` (run.FREE_FOLDERS): the files of a folder whose configuration anchors no
  exclude are kept without asking ``Run.keep`` once per file.
- ``CPASYNC_MIGRATE_MEMO_PERCENT`` (stat_memo.PERCENT): a stat memo entry's string from one ``%`` format.
"""
import os
import subprocess
import sys

import pytest

from cpasync_migrate import config, discovery, run as runmod
from test_cli import LEGACY, write
from test_warm_path import _git, _report, configured  # noqa: F401 - the fixture

SWITCHES = ("CPASYNC_MIGRATE_FOLDER_INHERIT", "CPASYNC_MIGRATE_FREE_FOLDERS", "CPASYNC_MIGRATE_MEMO_PERCENT")


@pytest.fixture
def nested(configured):  # noqa: F811 - the fixture above, with more folders
    """``configured`` with chains of folders holding no file and no pyproject.toml, a folder named
    ``pyproject.toml``, a FIFO of that name, a configuration deep below folders without one, and a file
    excluded by a glob anchored at a configuration two folders up."""
    for i in range(6):  # other's configuration anchors no exclude: its folders' files are kept without asking
        write(configured / "other" / "many" / f"k{i}.py", LEGACY)
    for rel in ("a/b/c/d/k.py", "sub/pkg/x/y/z/k.py", "sub/gen/deep/er/k.py", "other/deep/er/est/k.py",
                "dirp/in/k.py", "fifo/in/k.py", "far/1/2/3/4/5/k.py", "far/1/2/3/4/5/low_x.py"):
        write(configured / rel, LEGACY)
    (configured / "dirp" / "pyproject.toml").mkdir()  # a folder of that name: no configuration
    os.mkfifo(configured / "fifo" / "pyproject.toml")  # never read: not a regular file
    write(configured / "far" / "1" / "2" / "pyproject.toml", '[tool.cpasync-migrate]\nextend-exclude = ["*_x.py"]\n')
    return configured


def test_a_folder_without_a_pyproject_has_its_parents_configuration(nested, monkeypatch):
    folders: dict = {}
    walked = [f for f in discovery._walk(str(nested), [], (".py",), (), True, folders=folders)
              if not os.path.islink(f)]
    want = [(f, config.Configs(None, False).for_path(f).get("__file__")) for f in walked]  # from real paths
    looked = []
    for_folder = config.Configs._for_folder
    monkeypatch.setattr(config.Configs, "_for_folder", lambda self, d, *a: looked.append(d) or for_folder(self, d, *a))
    for on in (True, False):
        monkeypatch.setattr(config, "FOLDER_INHERIT", on)
        looked.clear()
        c = config.Configs(None, False)
        c.walked = folders
        assert [(f, c.for_path(f, regular=True).get("__file__")) for f in walked] == want, on
        if on:  # looked up: the folder argument and the folders with a pyproject.toml entry, no other
            assert set(looked) <= {str(nested)} | {d for d, seen in folders.items() if seen is not False}, looked
        else:
            assert len(set(looked)) > len({d for d, seen in folders.items() if seen is not False}) + 1
    got = dict(want)
    assert got[str(nested / "far" / "1" / "2" / "3" / "4" / "5" / "k.py")] == str(nested / "far" / "1" / "2" /
                                                                            "pyproject.toml")
    assert got[str(nested / "other" / "deep" / "er" / "est" / "k.py")] == str(nested / "other" / "pyproject.toml")
    assert got[str(nested / "dirp" / "in" / "k.py")] == got[str(nested / "a" / "b" / "c" / "d" / "k.py")] == str(
        nested / "pyproject.toml")


def test_a_free_folders_files_are_not_asked_about(nested, monkeypatch):
    asked = []
    keep = runmod.Run.keep
    monkeypatch.setattr(runmod.Run, "keep", lambda self, p, *a: asked.append(p) or keep(self, p, *a))
    got = {}
    for on in (True, False):
        monkeypatch.setattr(runmod, "FREE_FOLDERS", on)
        asked.clear()
        got[on] = _report(nested, "."), len(asked)
    assert got[True][0] == got[False][0]
    report, err = got[True][0]
    assert "processed far/1/2/3/4/5/k.py" in err and "processed far/1/2/3/4/5/low_x.py" not in err
    assert "skipped sub/gen/deep/er/k.py" in err  # sub's gen/** glob
    assert "processed other/many/k5.py" in err
    assert got[True][1] <= got[False][1] - 5  # other/many: once for the folder, not once per file


@pytest.mark.slow  # an equality run of the speed-up switches through the CLI
@pytest.mark.parametrize("in_git", [False, True], ids=["walker", "git"])
def test_the_folder_switches_give_the_same_report(nested, monkeypatch, in_git, tmp_path):
    if in_git:
        _git(nested)
    os.symlink(nested, tmp_path / "linked_tree")
    runs = [(nested, (".",)), (nested / "sub", (".", "../other", "../links")), (nested / "far", (".", "../a")),
            (tmp_path, (str(tmp_path / "linked_tree" / "sub"), "linked_tree/far"))]
    for cwd, args in runs:
        got = []
        for inherit, free in ((True, True), (False, True), (True, False), (False, False)):
            monkeypatch.setattr(config, "FOLDER_INHERIT", inherit)
            monkeypatch.setattr(runmod, "FREE_FOLDERS", free)
            got.append(_report(cwd, *args))
        assert all(g == got[0] for g in got), (cwd, args)


def test_the_switches_are_read_from_the_environment(nested):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = ("from cpasync_migrate import config, run, stat_memo\n"
             "print(config.FOLDER_INHERIT, run.FREE_FOLDERS, stat_memo.PERCENT)\n")
    for value, want in (("0", "False False False"), ("1", "True True True")):
        r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                           env=dict(env, **{s: value for s in SWITCHES}))
        assert r.stdout.strip() == want, r.stderr


def test_the_percent_format_gives_the_memos_string(tmp_path, monkeypatch):
    """CPASYNC_MIGRATE_MEMO_PERCENT (stat_memo.PERCENT): the entry of a stat is the same string either way, for
    real stats and for numbers at the edges (0, one, powers of 16 and one less, past 64 bits, negative)."""
    from cpasync_migrate import stat_memo

    class St:
        def __init__(self, *v):
            self.st_size, self.st_mtime_ns, self.st_ctime_ns, self.st_ino, self.st_dev = v

    write(tmp_path / "k.py", LEGACY)
    edges = [0, 1, 15, 16, 255, 256, 2**32 - 1, 2**63, 2**64 + 17, 10**30, -1, -4096]
    stats = [os.stat(tmp_path / "k.py"), os.stat(tmp_path)]
    stats += [St(*(edges[(i + j) % len(edges)] for j in range(5))) for i in range(len(edges))]
    got = {}
    for on in (True, False):
        monkeypatch.setattr(stat_memo, "PERCENT", on)
        got[on] = [stat_memo.stat_key(s) for s in stats]
    assert got[True] == got[False]
    assert got[True][2] == "0:1:f:10:ff" and any("-1000" in k for k in got[True])
