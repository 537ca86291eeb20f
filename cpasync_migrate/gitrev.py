"""git, as the tool runs it, and ``--since REV``: the files git says changed since the merge base of a
revision and ``HEAD``, and a fast test of a walked path against them.

Every git process the tool starts goes through :func:`git`, which keeps the repository's configuration
from starting a program: no system configuration (``GIT_CONFIG_NOSYSTEM``), no fsmonitor, no hooks, no
optional locks (so no index refresh is written), no pager, no terminal prompt.  The file list
(``ls-files`` without ``-m``/``-d``) and the commit diff never compare a file's content with the
index, so no clean or smudge filter has a reason to run; the one command that does compare
content (the work tree against the merge base, for ``--since``) runs with every filter driver the
configuration names blanked (``filters_off``).  A revision given by the user is checked by
``rev-parse --verify --end-of-options`` and only the commit id git answers is passed on.
"""
from __future__ import annotations

import os
from typing import Iterable, Optional

from .errors import UsageError
from .inputs import announce, ran

# Seconds one git process may take ($CPASYNC_MIGRATE_GIT_TIMEOUT: the environment is the user's).  git lists
# 400,000 files in a few seconds; what takes longer waits on something the tree planted.
TIMEOUT = 120.0


class GitTimeout(OSError):
    """A git process ran past :data:`TIMEOUT` (and was killed): git is taken as unable to answer."""


# The first git process of this run that ran past its limit (what it was): git is not asked again in the run,
# so a tree of many repositories that each make git wait costs one limit, not one per repository.
_stalled: Optional[str] = None


def reset() -> None:
    """A new run asks git again (``run.Run.build``; a process may hold several runs, as the tests do)."""
    global _stalled
    _stalled = None


def timeout() -> float:
    try:
        t = float(os.environ.get("CPASYNC_MIGRATE_GIT_TIMEOUT") or TIMEOUT)
    except ValueError:
        return TIMEOUT
    return t if t > 0 else TIMEOUT

# Options before the subcommand of every git process: none of these can start a program.
SAFE_OPTIONS = ("--no-pager", "--no-optional-locks", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")


def git_env(extra: Iterable[tuple[str, str]] = ()) -> dict:
    """The environment of a git process: this one's, without the system configuration, with optional
    locks and prompts off, and with the ``(key, value)`` settings of ``extra`` added as command-line
    configuration (``GIT_CONFIG_COUNT``; any key, whatever characters its subsection holds)."""
    env = dict(os.environ)
    # GIT_ALLOW_PROTOCOL: the transports allowed, whatever protocol.*.allow the repository sets; none.
    # GIT_NO_LAZY_FETCH (git 2.44 and later): a missing object is not fetched at all.
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", GIT_ALLOW_PROTOCOL="",
               GIT_NO_LAZY_FETCH="1")
    extra = list(extra)
    if extra:
        try:
            n = int(env.get("GIT_CONFIG_COUNT") or 0)
        except ValueError:
            n = 0
        for key, value in extra:
            env[f"GIT_CONFIG_KEY_{n}"], env[f"GIT_CONFIG_VALUE_{n}"] = key, value
            n += 1
        env["GIT_CONFIG_COUNT"] = str(n)
    return env


def git(args: list, cwd: str, filters_off: bool = False, stdout=None, limit: float | None = None):
    """Run ``git -C cwd <SAFE_OPTIONS> args`` (stdin closed, output captured); OSError when git cannot
    start, :class:`GitTimeout` (an OSError) when it runs past ``limit`` seconds (default
    :func:`timeout`; git and whatever it started are killed).  ``filters_off``: every
    ``filter.<driver>`` the configuration defines gets empty ``clean``, ``smudge`` and ``process``
    commands and ``required = false`` (git then reads the file's bytes as they are)."""
    import signal
    import subprocess

    extra = []
    if filters_off:
        for driver in filter_drivers(cwd):
            extra += [(f"filter.{driver}.{k}", "") for k in ("clean", "smudge", "process")]
            extra.append((f"filter.{driver}.required", "false"))
    global _stalled
    if _stalled is not None:
        raise GitTimeout(f"git is not asked again in this run: {_stalled}")
    limit = timeout() if limit is None else limit
    cmd = ["git", "-C", cwd, *SAFE_OPTIONS, *args]
    if stdout is None:  # its answer is told to a run record (replay.py), which runs it again to compare
        announce()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE if stdout is None else stdout,
                            stderr=subprocess.PIPE, env=git_env(extra), start_new_session=True)
    try:
        out, err = proc.communicate(timeout=limit)
    except BaseException as e:  # past the limit, or interrupted: git (in a group of its own) is not left running
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # its own group (start_new_session): git and its children
        except OSError:
            proc.kill()
        try:
            proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # a process that left the group holds the pipes: leave them
            proc.wait()
        if isinstance(e, subprocess.TimeoutExpired):
            _stalled = f"git {args[0]} in {cwd} did not finish in {limit:g} s (killed)"
            raise GitTimeout(_stalled) from None
        raise
    if stdout is None:
        ran(["git", list(args), cwd, filters_off], answer(proc.returncode, out, err))
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def answer(code: int, out: bytes, err: bytes) -> str:
    """What a run record compares of a git process: the digest of its exit code, stdout and stderr, unambiguously
    joined."""
    import hashlib

    return hashlib.sha256(b"%d\0%d\0" % (code, len(out)) + out + err).hexdigest()


def filter_drivers(cwd: str) -> list[str]:
    """The names of the filter drivers git's configuration defines for the repository at ``cwd``."""
    r = git(["config", "-z", "--name-only", "--get-regexp", r"^filter\."], cwd)  # an OSError: no diff runs
    names = set()
    for key in os.fsdecode(r.stdout).split("\0") if r.returncode == 0 else ():
        if key.count(".") >= 2:
            names.add(key[len("filter."):key.rindex(".")])
    return sorted(names)


def _err(r) -> str:
    """git's last line on stderr (its "fatal: ..." message)."""
    lines = r.stderr.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else f"git exited with {r.returncode}"


def commit_of(rev: str, root: str) -> str:
    """The commit id ``rev`` names in the repository at ``root``, checked by git before any other use
    (a revision that starts with ``-`` is not taken for an option); UsageError when it names none."""
    try:
        r = git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], root)
    except OSError as e:
        raise UsageError(f"--since {rev}: cannot run git: {e.strerror or e}") from None
    out = r.stdout.decode("ascii", "replace").strip()
    if r.returncode != 0 or not out or not all(c in "0123456789abcdef" for c in out):
        raise UsageError(f"--since {rev}: git knows no such commit in {root}")
    return out


def merge_base(rev: str, root: str) -> str:
    """The commit where ``HEAD`` left ``rev``'s history (``git merge-base REV HEAD``)."""
    commit = commit_of(rev, root)
    try:
        r = git(["merge-base", commit, "HEAD"], root)
    except OSError as e:
        raise UsageError(f"--since {rev}: cannot run git: {e.strerror or e}") from None
    out = r.stdout.decode("ascii", "replace").strip()
    if r.returncode != 0 or not out:
        raise UsageError(f"--since {rev}: no merge base with HEAD in {root} ({_err(r)})")
    return out


def changed_since(rev: str, paths: Iterable[str]) -> set[str]:
    """Absolute paths of files changed (added, copied, modified, renamed) since the merge base of ``rev``
    and ``HEAD``, in the commits since (``git diff REV...HEAD``) or in the work tree, plus untracked files."""
    out: set[str] = set()
    roots = set()
    for p in paths:
        d = p if os.path.isdir(p) else os.path.dirname(os.path.abspath(p))
        try:
            r = git(["rev-parse", "--show-toplevel"], d)
        except GitTimeout as e:
            raise UsageError(f"--since: {e}") from None
        except OSError:
            r = None
        if r is None or r.returncode != 0:
            raise UsageError(f"--since needs a git repository; {p} is not in one") from None
        roots.add(os.fsdecode(r.stdout).rstrip("\n"))
    for root in sorted(roots):
        base = merge_base(rev, root)
        # --no-renames: a renamed file is listed as added under its new name, and no configuration
        # (diff.renameLimit = 0 over many files) makes git compare contents pairwise.
        for cmd, off in ((["diff", "--name-only", "-z", "--diff-filter=ACMR", "--no-renames", "--no-ext-diff",
                           "--no-textconv", "--ignore-submodules=all", base, "--"], True),
                         (["ls-files", "-z", "--others", "--exclude-standard"], False)):
            try:
                r = git(cmd, root, filters_off=off)
            except OSError as e:
                raise UsageError(f"--since {rev}: cannot run git: {e.strerror or e}") from None
            if r.returncode != 0:
                raise UsageError(f"--since {rev}: {_err(r)}")
            for name in os.fsdecode(r.stdout).split("\0"):
                if name:
                    out.add(os.path.realpath(os.path.join(root, name)))
    return out


def since_filter(paths, since_set: set[str]):
    """Whether a discovered path is in ``since_set`` (real paths), without resolving every path.

    The walk does not enter symbolically linked folders, so below a folder argument the real path
    of a file that is not itself a link is the folder's real path plus the rest of the path.  Only
    links and files named on the command line are resolved (``os.path.realpath`` costs about 0.1 ms,
    1.4 s over a 15,000-file tree).
    """
    roots = []
    for p in paths:
        if os.path.isdir(p):
            roots.append((p if p.endswith(os.sep) else p + os.sep, os.path.join(os.path.realpath(p), "")))
    roots.sort(key=lambda r: -len(r[0]))  # the innermost folder argument first (it may be reached through a link)

    def changed(path: str) -> bool:
        for prefix, real in roots:
            if path.startswith(prefix):
                if real + path[len(prefix):] in since_set:
                    return True
                if not os.path.islink(path):
                    return False
                break
        return os.path.realpath(path) in since_set

    return changed

