"""discovery's walk over git's list, in process and step by step: sorting git's entries, the folders in scope,
the candidates (regular files, links, specials, files deleted from the work tree), what -v says is left out,
and the nested repositories (read by their own git, by the walker, or not checked out)."""
from __future__ import annotations

import os
import subprocess

import pytest

from cpasync_migrate import discovery

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and symbolic links")


def _git(root, *args):
    subprocess.run(["git", "-c", "core.fsmonitor=false", "-c", "protocol.file.allow=always", *args], cwd=root,
                   check=True, capture_output=True)


def _tree(tmp_path):
    root = tmp_path / "repo"
    for rel in ("a.py", "pkg/b.py", "pkg/notes.txt", "build/c.py", "myenv/pyvenv.cfg", "myenv/lib/d.py",
                "gen/e.py", "gen/keep.txt", "gone.py", "fifo.py", "deep/x/y/f.py", "deep/x/node_modules/k.py",
                "inner/g.py", "inner/ign.py", "plain/h.py", "skipme.py", "ignored.py", "absent/z.py",
                "k.egg-info/m.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x = 1\n")
    (root / ".gitignore").write_text("ignored.py\n")
    (root / "inner" / ".gitignore").write_text("ign.py\n")
    os.symlink("pkg", root / "to_pkg")  # a link to a folder
    os.symlink("a.py", root / "link.py")  # a link to a file
    _git(root, "init", "-q", ".")
    _git(root / "inner", "init", "-q", ".")  # a nested repository, untracked
    _git(root, "add", "a.py", "pkg", "gone.py", "fifo.py", "link.py", "deep")
    (root / "gone.py").unlink()  # in the index, deleted from the work tree
    (root / "fifo.py").unlink()
    os.mkfifo(root / "fifo.py")  # in the index, a FIFO in the work tree
    sha = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=root, input=b"", capture_output=True,
                         check=True).stdout.decode().strip()
    # a submodule that is not checked out: a gitlink in the index over a folder without .git
    _git(root, "update-index", "--add", "--cacheinfo", f"160000,{sha},absent")
    return root


def _walk(root, excludes=(), verbose=False):
    skipped, reasons, linked = [], ([] if verbose else None), set()
    files = discovery._git_walk(str(root), (".py",), excludes, skipped, reasons, linked)
    rel = lambda p: os.path.relpath(p, root)  # noqa: E731
    out = {"files": sorted(rel(f) for f in files), "skipped": sorted((rel(p), why) for p, why in skipped),
           "linked": sorted(rel(p) for p in linked)}
    if verbose:
        out["reasons"] = sorted((rel(p), why) for p, why in reasons)
    return out


FILES = ["a.py", "deep/x/y/f.py", "inner/g.py", "link.py", "pkg/b.py", "plain/h.py"]


def test_git_s_list_is_walked_step_by_step(tmp_path):
    root = _tree(tmp_path)
    got = _walk(root, excludes=("gen", "skipme.py"))
    assert got["files"] == FILES
    assert got["linked"] == ["link.py"]
    assert got["skipped"] == [("fifo.py", "a FIFO (named pipe); only regular files are read"),
                              ("to_pkg", "a symbolic link to a folder; links to folders are not followed")]


def test_verbose_names_each_folder_and_file_git_s_list_leaves_out(tmp_path):
    root = _tree(tmp_path)
    got = _walk(root, excludes=("gen", "skipme.py"), verbose=True)
    assert got["files"] == FILES
    git_ignored = "ignored by git (.gitignore, .git/info/exclude or core.excludesFile)"
    assert got["reasons"] == [
        (".gitignore", "not a kernel source (.py)"),
        ("build", "a `build` folder; such folders are not scanned"),
        ("deep/x/node_modules", "a `node_modules` folder; such folders are not scanned"),
        ("gen", "matches `gen` (exclude)"),
        ("ignored.py", git_ignored),
        ("inner/.gitignore", "not a kernel source (.py)"),
        ("inner/ign.py", git_ignored),
        ("k.egg-info", "a `k.egg-info` folder; such folders are not scanned"),
        ("myenv", discovery.VENV_REASON),
        ("pkg/notes.txt", "not a kernel source (.py)"),
        ("skipme.py", "matches `skipme.py` (exclude)"),
    ]


def test_a_nested_repository_git_cannot_read_is_walked(tmp_path):
    root = _tree(tmp_path)
    (root / "inner" / ".git" / "index").write_text("garbage\n")  # the one above sees a repository; its git fails
    (root / "inner" / "new.py").write_text("x = 1\n")
    got = _walk(root, excludes=("gen", "skipme.py"))
    assert got["files"] == sorted(FILES + ["inner/new.py"])  # the walker reads inner/.gitignore: ign.py left out
