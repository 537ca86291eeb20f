"""What a scanned tree can make the tool run or read, and valid input that once crashed it: a
.gitignore pattern that backtracks, git configuration that starts programs, revisions that look like
options, planted modules on the import path, named links that lead out of the tree, unusual but valid
files, odd report paths and outputs, and the write window.

Every run of the tool here is a separate process (``cli``) with a timeout that only a hang reaches.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from test_cli import LEGACY, MIGRATED_CALL
from test_hostile import HANG, cli, put


def sites(stdout: str) -> list[str]:
    return sorted(ln.split(":")[0] for ln in stdout.splitlines() if ": CPA" in ln)


# ------------------------------------------------------------------ 1. .gitignore in linear time

BACKTRACKER = "*a*a*a*a*a*a*a*a*a*a*a*a*b"


def test_backtracking_gitignore_pattern_is_matched_in_linear_time(tmp_path):
    """Outside a git work tree the walker reads .gitignore itself; a pattern with many stars used to
    take time exponential in the name's length (as a regular expression it backtracks)."""
    tree = tmp_path / "tree"
    put(tree / ".gitignore", BACKTRACKER + "\n")
    long = "a" * 60
    for i in range(200):  # not matched (no final b): every one is a candidate the walk keeps
        put(tree / f"{long}{i:03d}.py", "x = 1\n")
    put(tree / f"{long}_kept.py", LEGACY)
    for i in range(3):  # matched (folders whose name ends in b): their files are ignored
        put(tree / f"{long}{i}b" / "k.py", LEGACY)
    put(tree / "xab" / "k.py", LEGACY)  # one "a" only: not matched
    t0 = time.perf_counter()
    r = cli("--check", "--no-cache", "tree", cwd=tmp_path)
    print(f"walk of 205 long names with {BACKTRACKER!r}: {time.perf_counter() - t0:.2f} s")
    assert r.returncode == 1, r.stderr
    assert sites(r.stdout) == [f"tree/{long}_kept.py", "tree/xab/k.py"], r.stdout


def test_wildmatch_steps_grow_linearly_with_the_names():
    from cpasync_migrate import discovery

    p = discovery._Pattern(BACKTRACKER, "")
    counts = []
    for n in (100, 200, 400):
        discovery.STEPS[0] = 0
        for i in range(200):
            assert not p.matches("a" * n + f"{i}.py", False)
            assert p.matches("a" * n + f"{i}b", True)
        counts.append(discovery.STEPS[0])
    # at most (name length x pattern length) per name, and doubling the names at most doubles the work
    assert counts[1] <= 2.2 * counts[0] and counts[2] <= 2.2 * counts[1], counts
    assert counts[2] <= 400 * 2 * 200 * len(BACKTRACKER), counts


PATTERNS = ["*.py", "a*", "a**", "**/b", "a/**", "a/**/c.py", "[ab]*", "[!a]*", "*a*b*", "a?c", "/a/b", "b/",
            "**/a/*.py", "x[a-c]y", "*[!.]py", "\\!x", "a*b*c*", "**", "a/*/c", "*/b.py", "a**b", "[]a]x", "[a-]x",
            "**/a/**/b", "a/**/**/c.py", "**/a*b*/**", "*a*a*", "**/*a*c*", "a/b*c*/**"]
WORDS = ["a", "b", "c.py", "ab", "abc", "x", "ba", "b.py", "aac", "xby", "xay", "!x", "a.py", "acb", "]x", "-x"]


@pytest.mark.parametrize("slow", [False, True], ids=["as-compiled", "wildmatch-only"])
def test_gitignore_patterns_answer_as_git_check_ignore(tmp_path, slow):
    """git itself is the reference: every pattern, on paths built from the words above (a path is
    ignored when it or a folder above it matches), gives git's answer, with the fast expressions and
    with the wildmatch alone."""
    import random

    from cpasync_migrate import discovery

    rng = random.Random(20261201)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for pat in PATTERNS:
        (tmp_path / ".gitignore").write_text(pat + "\n")
        paths = sorted({"/".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))) for _ in range(60)})
        r = subprocess.run(["git", "check-ignore", "--no-index", "--stdin", "-z"], cwd=tmp_path, capture_output=True,
                           input="\0".join(paths).encode() + b"\0")
        assert r.returncode in (0, 1), r.stderr
        by_git = set(r.stdout.decode().split("\0")) - {""}
        p = discovery._Pattern(pat, "")
        if slow:
            p.regex = None
        for path in paths:
            parts = path.split("/")
            mine = any(p.matches("/".join(parts[:k]), True) for k in range(1, len(parts))) or p.matches(path, False)
            assert mine == (path in by_git), (pat, path, mine)
