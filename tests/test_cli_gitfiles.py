"""Inside a git work tree the file list comes from git (git ls-files -co --exclude-standard): every
.gitignore of the repository (a parent's anchored patterns included), .git/info/exclude and
core.excludesFile; outside one, or without git, the walker, exact for anchored patterns."""
import os
import shutil
import subprocess

import pytest

from conftest import run_cli
from test_cli import LEGACY, write

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _env(tmp_path) -> dict:
    """git's configuration of this test only: no system file, a home and XDG folder of its own."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "GIT_CONFIG_NOSYSTEM": "1"}


def _git(repo, *args, env):
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@example.invalid", "-c", "user.name=t", *args],
                   check=True, capture_output=True, env={**os.environ, **env})


def _repo(path, env):
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q", env=env)
    return path


def _no_git(tmp_path) -> dict:
    """A PATH on which there is no git (the tool then walks the tree itself)."""
    bare = tmp_path / "bin-without-git"
    bare.mkdir(exist_ok=True)
    return {"PATH": str(bare)}


def _listed(r) -> list:
    assert "Traceback" not in r.stderr, r.stderr
    return sorted(ln.split(":")[0] for ln in r.stdout.splitlines() if ": CPA" in ln)


def test_a_parent_s_anchored_pattern_holds_when_the_run_names_a_subfolder(tmp_path):
    env = _env(tmp_path)
    repo = _repo(tmp_path / "repo", env)
    write(repo / ".gitignore", "/src/gen/\nsrc/skip_*.py\n")
    for rel in ("src/k.py", "src/gen/k.py", "src/skip_me.py", "src/deep/src/gen/k.py", "src/deep/skip_me.py"):
        write(repo / rel, LEGACY)
    expected = ["deep/skip_me.py", "deep/src/gen/k.py", "k.py"]  # anchored: only at the repository's root
    for extra in ({}, _no_git(tmp_path)):  # git's list; the walker, where git is not there
        r = run_cli("--check", ".", cwd=repo / "src", env={**env, **extra})
        assert _listed(r) == expected, (extra, r.stdout, r.stderr)
        r = run_cli("--check", "src", cwd=repo, env={**env, **extra})
        assert _listed(r) == ["src/" + e for e in expected], extra


def test_info_exclude_and_core_excludes_file_are_honoured(tmp_path):
    env = _env(tmp_path)
    repo = _repo(tmp_path / "repo", env)
    write(repo / ".git" / "info" / "exclude", "local_*.py\n")
    write(tmp_path / "home" / ".config" / "git" / "ignore", "scratch/\n")  # the default core.excludesFile
    write(repo / "k.py", LEGACY)
    write(repo / "local_try.py", LEGACY)
    write(repo / "pkg" / "scratch" / "k.py", LEGACY)
    r = run_cli("--check", ".", cwd=repo, env=env)
    assert _listed(r) == ["k.py"]
    other = tmp_path / "ignore-elsewhere"
    write(other, "pkg/\n")
    _git(repo, "config", "core.excludesFile", str(other), env=env)
    write(repo / "pkg" / "m.py", LEGACY)
    assert _listed(run_cli("--check", ".", cwd=repo, env=env)) == ["k.py"]
    assert _listed(run_cli("--check", "--no-gitignore", ".", cwd=repo, env=env)) == [
        "k.py", "local_try.py", "pkg/m.py", "pkg/scratch/k.py"]


def test_untracked_files_count_and_tracked_ignored_ones_too(tmp_path):
    """git's list: tracked files (also one an ignore pattern matches), untracked ones no rule
    ignores; a tracked file deleted from the work tree is passed over, not an error."""
    env = _env(tmp_path)
    repo = _repo(tmp_path / "repo", env)
    write(repo / ".gitignore", "gen_*.py\n")
    write(repo / "tracked.py", LEGACY)
    write(repo / "gen_kept.py", LEGACY)
    write(repo / "gone.py", LEGACY)
    _git(repo, "add", "-f", "tracked.py", "gen_kept.py", "gone.py", ".gitignore", env=env)
    _git(repo, "commit", "-qm", "init", env=env)
    (repo / "gone.py").unlink()
    write(repo / "new.py", LEGACY)
    write(repo / "gen_new.py", LEGACY)
    r = run_cli("--check", ".", cwd=repo, env=env)
    assert r.returncode == 1
    assert _listed(r) == ["gen_kept.py", "new.py", "tracked.py"]


def test_a_nested_repository_is_listed_by_its_own_git(tmp_path):
    env = _env(tmp_path)
    repo = _repo(tmp_path / "repo", env)
    write(repo / "k.py", LEGACY)
    inner = _repo(repo / "vendor" / "inner", env)  # not a submodule: the outer git lists only its folder
    write(inner / ".gitignore", "/out/\n")
    write(inner / "m.py", LEGACY)
    write(inner / "out" / "m.py", LEGACY)
    write(inner / "src" / "out" / "m.py", LEGACY)
    r = run_cli("--check", ".", cwd=repo, env=env)
    assert _listed(r) == ["k.py", "vendor/inner/m.py", "vendor/inner/src/out/m.py"]
    write(repo / "pyproject.toml", '[tool.cpasync-migrate]\nextend-exclude = ["vendor/**"]\n')
    assert _listed(run_cli("--check", ".", cwd=repo, env=env)) == ["k.py"], "excludes hold on top of git"


def test_configured_excludes_and_skipped_folders_apply_to_git_s_list(tmp_path):
    env = _env(tmp_path)
    repo = _repo(tmp_path / "repo", env)
    write(repo / "pyproject.toml", '[tool.cpasync-migrate]\nexclude = ["third_party", "src/legacy_*.py"]\n')
    for rel in ("src/k.py", "src/legacy_old.py", "src/third_party/k.py", "build/k.py", "tools/venv2/k.py"):
        write(repo / rel, LEGACY)
    write(repo / "tools" / "venv2" / "pyvenv.cfg", "home = /usr\n")
    r = run_cli("--check", ".", cwd=repo, env=env)
    assert _listed(r) == ["src/k.py"]
    r = run_cli("--check", "--no-gitignore", ".", cwd=repo, env=env)
    assert _listed(r) == ["src/k.py"], "the walker agrees"


def test_outside_git_the_walker_reads_anchored_patterns_relative_to_their_gitignore(tmp_path):
    tree = tmp_path / "tree"
    write(tree / ".gitignore", "/gen/*.py\n")
    write(tree / "sub" / ".gitignore", "x/y.py\n")
    for rel in ("k.py", "gen/k.py", "a/gen/k.py", "sub/x/y.py", "sub/deep/x/y.py", "x/y.py"):
        write(tree / rel, LEGACY)
    r = run_cli("--check", ".", cwd=tree, env=_env(tmp_path))
    assert _listed(r) == ["a/gen/k.py", "k.py", "sub/deep/x/y.py", "x/y.py"]


def test_a_folder_git_ignores_is_still_scanned_when_named(tmp_path):
    env = _env(tmp_path)
    repo = _repo(tmp_path / "repo", env)
    write(repo / ".gitignore", "generated/\n")
    write(repo / "generated" / "k.py", LEGACY)
    write(repo / "k.py", LEGACY)
    assert _listed(run_cli("--check", ".", cwd=repo, env=env)) == ["k.py"]
    assert _listed(run_cli("--check", "generated", cwd=repo, env=env)) == ["generated/k.py"]


def test_verbose_names_what_git_s_list_leaves_out_as_the_walker_does(tmp_path):
    env = _env(tmp_path)
    repo = _repo(tmp_path / "repo", env)
    write(repo / "real" / "k.py", "x = 1\n")
    os.symlink("real", repo / "linked")  # a link to a folder: not followed
    os.mkfifo(repo / "pipe.py")  # not a regular file: not read
    lines = {}
    for extra in ({}, _no_git(tmp_path)):
        r = run_cli("--check", "-v", ".", cwd=repo, env={**env, **extra})
        assert r.returncode == 0, r.stderr
        # (-v also names what the rules pass over, a file without a kernel suffix or without the intrinsic's
        # name among them: not this test's)
        lines[bool(extra)] = sorted(ln for ln in r.stderr.splitlines() if ln.startswith(("skipped", "processed"))
                                    and "not a kernel source" not in ln and not ln.endswith("; not parsed"))
    link = "skipped linked: a symbolic link to a folder; links to folders are not followed"
    fifo = "skipped pipe.py: a FIFO (named pipe); only regular files are read"
    assert lines[True] == [link, fifo]
    assert lines[False] == [link], "git lists no FIFO at all: it is neither read nor named"


def test_a_tree_with_no_git_folder_above_starts_no_git_process(tmp_path, monkeypatch):
    from cpasync_migrate import discovery

    tree = tmp_path / "tree"
    write(tree / "sub" / "k.py", LEGACY)
    if any((p / ".git").exists() for p in [tree, *tree.parents]):
        pytest.skip("the temporary folder lies inside a git repository")
    monkeypatch.delenv("GIT_DIR", raising=False)
    monkeypatch.delenv("GIT_WORK_TREE", raising=False)

    def no_git(*a, **k):
        raise AssertionError("git was started")

    monkeypatch.setattr(subprocess, "run", no_git)
    assert discovery._git_list(str(tree / "sub")) is None
    assert not discovery._maybe_in_git(str(tree / "sub"))
    (tree / ".git").write_text("gitdir: /elsewhere/.git/worktrees/tree\n")  # a linked work tree's .git file
    assert discovery._maybe_in_git(str(tree / "sub"))
    (tree / ".git").unlink()
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "repo.git"))
    assert discovery._maybe_in_git(str(tree / "sub"))
