"""git run over a repository the pull request's author controls: its configuration may not start a program
(through a partial clone's lazy fetch, a nested repository, a ``.git`` file that leads elsewhere) and may
not make a run wait for ever (a FIFO named by ``include.path``, ``core.excludesFile``, or planted as
``.git/info/exclude``).

Every hostile program here writes a marker file when it runs; the tests check no marker appears.  Every
run of the tool is a separate process with a timeout that only a hang reaches.
"""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from test_cli import LEGACY
from test_hostile import cli, put

# The attack suites run in CI with -m slow (.ci/run), outside the default run.
pytestmark = pytest.mark.slow


def sites(stdout: str) -> list[str]:
    return sorted(ln.split(":")[0] for ln in stdout.splitlines() if ": CPA" in ln)


def _git(repo: Path, *args) -> str:
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout


def _object_file(repo: Path, oid: str) -> Path:
    return repo / ".git" / "objects" / oid[:2] / oid[2:]


def _two_commits(repo: Path) -> tuple[str, str]:
    """A repository with a legacy kernel in its first commit and another file in its second; (first, second)."""
    put(repo / "k.py", LEGACY)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "one")
    put(repo / "b.py", "x = 1\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "two")
    return _git(repo, "rev-parse", "HEAD~1").strip(), _git(repo, "rev-parse", "HEAD").strip()


def _promisor(repo: Path, marks: Path, how: str) -> None:
    """Make ``repo`` a partial clone whose promisor remote runs a marking command when git fetches from it."""
    _git(repo, "config", "core.repositoryformatversion", "1")
    _git(repo, "config", "extensions.partialClone", "origin")
    _git(repo, "config", "remote.origin.promisor", "true")
    _git(repo, "config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*")
    if how == "ext":
        _git(repo, "config", "protocol.ext.allow", "always")
        _git(repo, "config", "remote.origin.url", f"ext::sh -c touch% {marks}/ext")
    elif how == "uploadpack":  # a local remote: git starts its upload-pack command through the shell
        _git(repo, "config", "remote.origin.url", str(repo))
        _git(repo, "config", "remote.origin.uploadpack", f"touch {marks}/uploadpack; false")
    else:
        _git(repo, "config", "remote.origin.url", "ssh://example.invalid/x")
        _git(repo, "config", "core.sshCommand", f"touch {marks}/ssh; false")


@pytest.mark.parametrize("how", ["ext", "uploadpack", "ssh"])
@pytest.mark.parametrize("missing", ["commit", "tree"])
def test_a_partial_clones_lazy_fetch_runs_no_command(tmp_path, how, missing):
    """--since needs the base commit (rev-parse, merge-base) and its tree (diff).  In a partial clone git
    fetches a missing object from the promisor remote, and the remote's transport runs a command the
    repository's configuration chose.  (Before: each of the three commands ran; git now runs with no
    transport allowed.)"""
    repo, marks = tmp_path / "repo", tmp_path / "marks"
    marks.mkdir()
    first, second = _two_commits(repo)
    _promisor(repo, marks, how)
    if missing == "commit":
        _git(repo, "tag", "base", first)
        _object_file(repo, first).unlink()
        rev = "base"
    else:  # the commits are there; the first one's tree is not
        _object_file(repo, _git(repo, "rev-parse", "HEAD~1^{tree}").strip()).unlink()
        rev = "HEAD~1"
    assert not list(marks.iterdir())
    r = cli("--check", "--no-cache", "--since", rev, ".", cwd=repo)
    assert sorted(p.name for p in marks.iterdir()) == [], r.stderr
    assert r.returncode == 3 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "--since" in r.stderr, r.stderr
    r = cli("--check", "--no-cache", ".", cwd=repo)  # without --since git needs no object: the file is found
    assert r.returncode == 1 and sites(r.stdout) == ["k.py"], r.stdout + r.stderr
    assert sorted(p.name for p in marks.iterdir()) == []


def _hostile_config(repo: Path, marks: Path, tools: Path) -> None:
    for key, name in (("core.fsmonitor", "fsmonitor"), ("core.pager", "pager"), ("diff.external", "external"),
                      ("filter.evil.clean", "clean"), ("filter.evil.process", "process")):
        script = put(tools / f"{name}.sh", f"#!/bin/sh\ntouch {marks}/{name}\ncat\n")
        script.chmod(0o755)
        _git(repo, "config", key, str(script))
    _git(repo, "config", "filter.evil.required", "true")


def test_a_nested_repository_and_a_git_file_leading_elsewhere_start_no_program(tmp_path):
    """A nested repository (as an unpacked tarball holds one) is listed by git in its own folder, under its
    own configuration; a ``.git`` file (``gitdir: ...``) takes git to a repository outside the tree.
    Neither configuration starts a program, in the walk nor in --since."""
    top, marks, tools = tmp_path / "top", tmp_path / "marks", tmp_path / "tools"
    marks.mkdir()
    put(top / "a.py", LEGACY)
    _git(top, "init", "-q")
    _git(top, "add", ".")
    _git(top, "commit", "-qm", "top")
    nested = top / "vendor" / "nested"
    put(nested / "n.py", LEGACY)
    put(nested / ".gitattributes", "*.py filter=evil\n")
    _git(nested, "init", "-q")
    _hostile_config(nested, marks, tools)
    # a work tree whose .git is a file naming a repository elsewhere, with the same configuration
    elsewhere, linked = tmp_path / "elsewhere.git", top / "linked"
    _git(tmp_path, "init", "-q", "--bare", str(elsewhere))
    _git(elsewhere, "config", "core.bare", "false")
    put(linked / ".git", f"gitdir: {elsewhere}\n")
    put(linked / "l.py", LEGACY)
    put(linked / ".gitattributes", "*.py filter=evil\n")
    _git(linked, "add", ".")  # (a file the index holds: git would compare its content)
    _hostile_config(elsewhere, marks, tools)
    os.utime(linked / "l.py", (1_000_000_000, 1_000_000_000))
    r = cli("--check", "--no-cache", "-v", ".", cwd=top)
    assert r.returncode == 1 and sites(r.stdout) == ["a.py", "linked/l.py", "vendor/nested/n.py"], r.stdout + r.stderr
    r = cli("--check", "--no-cache", "--since", "HEAD", ".", cwd=top)
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert sorted(p.name for p in marks.iterdir()) == []


def _fifo_config(repo: Path, where: str) -> Path:
    fifo = repo / ".git" / "pipe"
    if where == "info/exclude":
        fifo = repo / ".git" / "info" / "exclude"
        fifo.parent.mkdir(exist_ok=True)
        if fifo.exists():
            fifo.unlink()
    os.mkfifo(fifo)
    if where != "info/exclude":
        with open(repo / ".git" / "config", "a") as fh:  # (git config itself would wait on the FIFO)
            fh.write({"include.path": f"[include]\n\tpath = {fifo}\n",
                      "core.excludesFile": f"[core]\n\texcludesFile = {fifo}\n"}[where])
    return fifo


@pytest.mark.parametrize("where", ["include.path", "core.excludesFile", "info/exclude"])
def test_git_waiting_on_a_fifo_the_repository_names_is_cut_off(tmp_path, where):
    """git opens the FIFO and waits for a writer that never comes.  (Before: the run waited for ever.)  Now
    each git process is killed after $CPASYNC_MIGRATE_GIT_TIMEOUT seconds: the walk goes on without git
    (its .gitignore files still honoured) and says so; --since is a usage error naming the cause."""
    repo = tmp_path / "repo"
    _two_commits(repo)
    put(repo / ".gitignore", "ignored.py\n")
    put(repo / "ignored.py", LEGACY)
    _fifo_config(repo, where)
    env = {"CPASYNC_MIGRATE_GIT_TIMEOUT": "2"}
    t = time.monotonic()
    r = cli("--check", "--no-cache", ".", cwd=repo, env=env)
    assert r.returncode == 1 and sites(r.stdout) == ["k.py"], r.stdout + r.stderr
    assert "did not finish in 2 s" in r.stderr and "walked without git" in r.stderr, r.stderr
    r = cli("--check", "--no-cache", "--since", "HEAD~1", ".", cwd=repo, env=env)
    assert r.returncode == 3 and "did not finish in 2 s" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert time.monotonic() - t < 60


def test_after_one_stalled_git_the_run_asks_git_no_more(tmp_path):
    """Two repositories that each make git wait on a FIFO cost one limit, not one each: after the first git
    process is killed, the run asks git nothing more (each folder is still walked, its .gitignore honoured)."""
    for name in ("one", "two"):
        repo = tmp_path / name
        _two_commits(repo)
        put(repo / ".gitignore", "ignored.py\n")
        put(repo / "ignored.py", LEGACY)
        _fifo_config(repo, "include.path")
    r = cli("--check", "--no-cache", "one", "two", cwd=tmp_path, env={"CPASYNC_MIGRATE_GIT_TIMEOUT": "2"})
    assert r.returncode == 1 and sites(r.stdout) == ["one/k.py", "two/k.py"], r.stdout + r.stderr
    assert r.stderr.count("did not finish in 2 s") == 2, r.stderr  # once as it happened, once quoted
    assert "git is not asked again in this run" in r.stderr and "walked without git" in r.stderr, r.stderr


def test_a_git_process_past_its_time_is_killed_with_what_it_started(tmp_path, monkeypatch):
    """The limit kills git's whole process group, so nothing it started is left running."""
    from cpasync_migrate import gitrev

    bindir = tmp_path / "bin"
    marker = tmp_path / "child-alive"
    put(bindir / "git", f"#!/bin/sh\n(sleep 3; touch {marker}) &\nsleep 30\n").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    t = time.monotonic()
    monkeypatch.setattr(gitrev, "_stalled", None)  # (restored after the test: this process asks git again)
    with pytest.raises(gitrev.GitTimeout, match="did not finish in 1 s"):
        gitrev.git(["ls-files"], str(tmp_path), limit=1)
    with pytest.raises(gitrev.GitTimeout, match="not asked again in this run"):
        gitrev.git(["ls-files"], str(tmp_path), limit=1)
    assert time.monotonic() - t < 10
    time.sleep(3)
    assert not marker.exists()


def test_git_runs_without_any_transport_or_rename_detection(monkeypatch, tmp_path):
    """What each git process is given: no transport at all (whatever protocol.*.allow says), and --since's
    diff lists names without comparing contents pairwise (diff.renameLimit is the repository's)."""
    from cpasync_migrate import gitrev

    env = gitrev.git_env()
    assert env["GIT_ALLOW_PROTOCOL"] == "" and env["GIT_CONFIG_NOSYSTEM"] == "1"
    seen = []
    real = gitrev.git

    def spy(args, cwd, **kw):
        seen.append(list(args))
        return real(args, cwd, **kw)

    repo = tmp_path / "repo"
    _two_commits(repo)
    monkeypatch.setattr(gitrev, "git", spy)
    gitrev.changed_since("HEAD~1", [str(repo)])
    diffs = [a for a in seen if a[0] == "diff"]
    assert diffs and all("--no-renames" in a and "--no-ext-diff" in a and "--no-textconv" in a for a in diffs)


def test_the_macro_importer_search_runs_git_through_the_guard(tmp_path, monkeypatch):
    """importers.py asks git which files name a macro (git grep) and where the work tree is: through
    gitrev.git, so with the same guards.  (Before: its own git, with the system configuration, hooks and
    transports of the repository.)"""
    from cpasync_migrate import gitrev, importers

    calls = []
    real = gitrev.git

    def spy(args, cwd, **kw):
        calls.append(args[0])
        return real(args, cwd, **kw)

    repo = tmp_path / "repo"
    _two_commits(repo)
    monkeypatch.setattr(importers, "git", spy)
    importers.forget()
    ans = importers.importers_of(str(repo / "k.py"), "main", False)
    assert ans is not None and ans.kind == "git work tree"
    assert calls == ["rev-parse", "grep"]
