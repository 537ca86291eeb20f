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
import time
from pathlib import Path

import pytest

from test_cli import LEGACY, MIGRATED_CALL
from test_hostile import HANG, cli, put
from test_parse_gate import SHAPES

# The attack suites run in CI with -m slow (.ci/run), outside the default run.
pytestmark = pytest.mark.slow


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


# ------------------------------------------------------------------ 2. git: no program from its configuration


def _git(repo: Path, *args) -> str:
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout


def _mark_script(folder: Path, marks: Path, name: str, leaf: str = "") -> str:
    script = put(folder / (leaf or f"{name}.sh"), f"#!/bin/sh\ntouch {marks}/{name}\ncat\n")
    script.chmod(0o755)
    return str(script)


def test_repository_configuration_starts_no_program(tmp_path):
    """A clean/smudge filter, an fsmonitor hook, an external diff and hooks in .git/config never run:
    the file list and --since do not ask git to compare contents, and git runs with them turned off."""
    repo, marks, tools = tmp_path / "repo", tmp_path / "marks", tmp_path / "tools"
    marks.mkdir()
    put(repo / "k.py", LEGACY)
    put(repo / "plain.py", "x = 1\n")
    put(repo / "empty.py", "")
    put(repo / ".gitattributes", "*.py filter=evil diff=evil\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    for key, name in (("filter.evil.clean", "clean"), ("filter.evil.smudge", "smudge"),
                      ("filter.evil.process", "process"), ("core.fsmonitor", "fsmonitor"),
                      ("diff.external", "external"), ("diff.evil.textconv", "textconv"),
                      ("core.pager", "pager")):
        _git(repo, "config", key, _mark_script(tools, marks, name))
    _git(repo, "config", "filter.evil.required", "true")
    _git(repo, "config", "core.hooksPath", str(tools))
    for hook in ("post-index-change", "reference-transaction", "fsmonitor-watchman", "post-checkout"):
        _mark_script(tools, marks, hook, leaf=hook)
    # stat-dirty files (same bytes, other times), one changed file, one untracked: git would compare contents
    for name in ("k.py", "plain.py", "empty.py"):
        os.utime(repo / name, (1_000_000_000, 1_000_000_000))
    (repo / "plain.py").write_text(LEGACY)
    put(repo / "new.py", LEGACY)
    assert not list(marks.iterdir())
    r = cli("--check", "--no-cache", ".", cwd=repo)
    assert r.returncode == 1 and sites(r.stdout) == ["k.py", "new.py", "plain.py"], r.stdout + r.stderr
    r = cli("--check", "--no-cache", "--since", "HEAD", ".", cwd=repo)
    assert r.returncode == 1 and sites(r.stdout) == ["new.py", "plain.py"], r.stdout + r.stderr
    r = cli("--no-cache", "--since", "HEAD~1", ".", cwd=repo)  # write mode too
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in marks.iterdir()) == []


def test_since_revision_is_never_an_option(tmp_path):
    repo = tmp_path / "repo"
    put(repo / "k.py", LEGACY)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    for rev in ("--output=" + str(tmp_path / "made"), "--output", "-p", "--exec=touch x"):
        r = cli("--check", f"--since={rev}", ".", cwd=repo)
        assert r.returncode == 3, (rev, r.stdout, r.stderr)
        assert "no such commit" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "made").exists() and not (repo / "x").exists()
    assert sorted(p.name for p in repo.iterdir()) == [".git", "k.py"]


def test_since_uses_the_merge_base(tmp_path):
    """On a branch, --since main reports what the branch changed (committed, in the work tree, untracked),
    never what only main changed after the branch left it (as semgrep's baseline and git diff main...HEAD)."""
    repo = tmp_path / "repo"
    put(repo / "base.py", "x = 1\n")
    put(repo / "other.py", LEGACY)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    _git(repo, "checkout", "-q", "-b", "feature")
    put(repo / "feat.py", LEGACY)
    _git(repo, "add", "feat.py")
    _git(repo, "commit", "-qm", "feature")
    _git(repo, "checkout", "-q", "main")
    (repo / "other.py").write_text(LEGACY.replace("main", "main2"))  # main changes another file after the branch
    put(repo / "main_only.py", LEGACY)
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "main moves on")
    _git(repo, "checkout", "-q", "feature")
    (repo / "base.py").write_text(LEGACY)  # changed in the work tree, not committed
    put(repo / "untracked.py", LEGACY)
    r = cli("--check", "--no-cache", "--since", "main", ".", cwd=repo)
    assert r.returncode == 1, r.stdout + r.stderr
    assert sites(r.stdout) == ["base.py", "feat.py", "untracked.py"], r.stdout
    assert "merge base" in cli("--help", cwd=repo).stdout
    _git(repo, "checkout", "-q", "--orphan", "lonely")  # no history shared with main (and no commit yet)
    r = cli("--check", "--since", "main", ".", cwd=repo)
    assert r.returncode == 3 and "merge base" in r.stderr and "Traceback" not in r.stderr, r.stderr


# ------------------------------------------------------------------ 3. entry points import nothing of the current folder

SHADOWED = ("numpy", "re", "argparse", "json", "difflib", "hashlib", "tomllib", "cupy", "libcst")
PLANTED = 'open({mark!r} + "/" + {name!r}, "w").close()\n'


def _planted_cwd(tmp_path: Path, names=SHADOWED) -> tuple[Path, Path]:
    cwd, marks = tmp_path / "cwd", tmp_path / "marks"
    marks.mkdir()
    for name in names:
        put(cwd / f"{name}.py", PLANTED.format(mark=str(marks), name=name))
    put(cwd / "pkg" / "sub" / "numpy.py", PLANTED.format(mark=str(marks), name="pkg-numpy"))
    put(cwd / "tree" / "k.py", LEGACY)
    return cwd, marks


def _run(cmd: list, cwd: Path, pythonpath) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_COLOR="1")
    env.pop("PYTHONPATH", None)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=HANG)


PYTHONPATHS = [None, ".", "", "pkg/sub", "{cwd}", "{cwd}/pkg/sub" + os.pathsep + "{cwd}"]


@pytest.mark.parametrize("pythonpath", PYTHONPATHS, ids=["unset", "dot", "empty", "relative", "cwd", "inside-cwd"])
def test_python_m_imports_nothing_of_the_current_folder(tmp_path, pythonpath):
    cwd, marks = _planted_cwd(tmp_path)
    pp = None if pythonpath is None else pythonpath.format(cwd=cwd)
    for args in (["--check", "tree"], ["tree"], ["--check", "--format", "sarif", "tree"]):
        r = _run([sys.executable, "-m", "cpasync_migrate", *args], cwd, pp)
        assert "Traceback" not in r.stderr, r.stderr
        assert r.returncode in (0, 1), r.stdout + r.stderr
    assert MIGRATED_CALL in (cwd / "tree" / "k.py").read_text()
    assert sorted(p.name for p in marks.iterdir()) == []


@pytest.mark.parametrize("pythonpath", PYTHONPATHS[1:], ids=["dot", "empty", "relative", "cwd", "inside-cwd"])
def test_console_script_imports_nothing_of_the_current_folder(tmp_path, pythonpath):
    # `re` is left out: the launcher the installer writes imports it before any code of the tool runs
    cwd, marks = _planted_cwd(tmp_path, tuple(n for n in SHADOWED if n != "re"))
    r = _run([str(Path(sys.executable).with_name("cpasync-migrate")), "--check", "tree"], cwd, pythonpath.format(cwd=cwd))
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert sorted(p.name for p in marks.iterdir()) == []


@pytest.mark.parametrize("pythonpath", [None, ".", "{cwd}"], ids=["unset", "dot", "cwd"])
def test_gpu_runner_imports_nothing_of_the_current_folder(tmp_path, pythonpath):
    """`python -m cpasync_migrate.verify.gpu bundle/`, the command the README gives, run in the tree."""
    cwd, marks = _planted_cwd(tmp_path)
    r = _run([sys.executable, "-m", "cpasync_migrate", "--check", "--emit-bundle", "bundle", "tree"], cwd, None)
    assert (cwd / "bundle").is_dir(), r.stdout + r.stderr
    r = _run([sys.executable, "-m", "cpasync_migrate.verify.gpu", "bundle", "--json", "out.json"], cwd,
             None if pythonpath is None else pythonpath.format(cwd=cwd))
    assert "Traceback" not in r.stderr, r.stderr
    # it ran as far as the GPU worker (started by the runner with -P in an empty folder), which found no cupy
    assert r.returncode == 2 and "no GPU for the runner" in r.stderr, r.stdout + r.stderr
    assert sorted(p.name for p in marks.iterdir()) == []


def test_unsafe_entries_keep_what_lies_outside_the_current_folder(tmp_path):
    from cpasync_migrate.syspath import unsafe_entries

    cwd = str(tmp_path / "cwd")
    path = [cwd, f"{cwd}/src", "/opt/site", "/usr/lib/python3.11"]
    bad = unsafe_entries(path, cwd, os.pathsep.join(["src", "/opt/site", f"{cwd}/lib"]))
    assert cwd in bad and f"{cwd}/src" in bad and f"{cwd}/lib" in bad
    assert "/opt/site" not in bad and "/usr/lib/python3.11" not in bad
    assert unsafe_entries(["/usr/lib/python3.11"], None, None) == []


# ------------------------------------------------------------------ 4. a named link that leads out of the tree


def test_named_link_out_of_the_git_tree_is_not_written(tmp_path):
    """`git ls-files -z | xargs -0 cpasync-migrate` names a committed link to a file outside the repository:
    write mode refuses it (CPA900, exit 2) and leaves the outside file as it was, unless --follow-links-outside."""
    repo, outside = tmp_path / "repo", put(tmp_path / "victim" / "o.py", LEGACY)
    put(tmp_path / "victim" / "sub" / "v.py", LEGACY)
    put(repo / "a.py", LEGACY)
    os.symlink("../victim/o.py", repo / "out.py")
    os.symlink("../victim/sub", repo / "vendor")
    os.symlink("a.py", repo / "alias.py")  # a link inside the tree: written through, as before
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "links")
    named = sorted(n for n in _git(repo, "ls-files", "-z").split("\0") if n)
    assert named == ["a.py", "alias.py", "out.py", "vendor"]
    r = cli(*named, cwd=repo)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "out.py:1:1: CPA900 a symbolic link on the way leads to" in r.stdout and "outside the tree" in r.stdout
    assert "vendor/v.py:1:1: CPA900" in r.stdout and "--follow-links-outside" in r.stdout, r.stdout
    assert outside.read_text() == LEGACY and (tmp_path / "victim" / "sub" / "v.py").read_text() == LEGACY
    assert (repo / "out.py").is_symlink() and MIGRATED_CALL in (repo / "a.py").read_text()
    r = cli("--check", *named, cwd=repo)  # --check still reports what is behind the links
    assert sites(r.stdout) == ["out.py", "vendor/v.py"], r.stdout
    # from elsewhere, by absolute paths: the same tree, the same refusal
    r = cli(repo / "out.py", cwd=tmp_path / "victim")
    assert r.returncode == 2 and "outside the tree" in r.stdout and outside.read_text() == LEGACY, r.stdout
    r = cli("--follow-links-outside", "out.py", "vendor", cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    assert MIGRATED_CALL in outside.read_text() and MIGRATED_CALL in (tmp_path / "victim" / "sub" / "v.py").read_text()
    assert (repo / "out.py").is_symlink()


def test_outside_git_the_tree_is_the_current_folder(tmp_path):
    work, outside = tmp_path / "work", put(tmp_path / "elsewhere" / "o.py", LEGACY)
    put(work / "in" / "i.py", LEGACY)
    os.symlink("../elsewhere/o.py", work / "out.py")
    os.symlink("in/i.py", work / "near.py")
    r = cli("out.py", "near.py", cwd=work)
    assert r.returncode == 2 and "out.py:1:1: CPA900" in r.stdout and "near.py" not in r.stdout, r.stdout
    assert outside.read_text() == LEGACY and MIGRATED_CALL in (work / "in" / "i.py").read_text()
    # a real file named by its own path outside the current folder is written: no link leads out
    r = cli(outside, cwd=work)
    assert r.returncode == 0 and MIGRATED_CALL in outside.read_text(), r.stdout


# ------------------------------------------------------------------ 5. valid but unusual input never crashes

CALL = 'T.ptx_cp_async("float16", S.data, 0, A.data, 0, 16)'
CPP_CALL = "Call(DataType::Handle(), builtin::ptx_cp_async(), {dst, dst_off, src, src_off, 16})"


@pytest.mark.parametrize("codec", ["rot13", "base64", "hex", "zlib", "bz2", "uu"])
def test_a_cookie_naming_a_codec_that_is_not_text_is_a_file_error(tmp_path, codec):
    put(tmp_path / "k.py", f"# -*- coding: {codec} -*-\n" + LEGACY)
    for mode in ("--check", "--diff", None):
        r = cli(*[m for m in (mode,) if m], "k.py", cwd=tmp_path)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
        assert f"k.py:1:1: CPA900 coding cookie names '{codec}', which is not a text encoding" in r.stdout + r.stderr
    assert (tmp_path / "k.py").read_text() == f"# -*- coding: {codec} -*-\n" + LEGACY


def test_cr_only_line_ends_are_read_and_kept(tmp_path):
    cr = LEGACY.replace("\n", "\r")
    f = put(tmp_path / "k.py", "")
    f.write_bytes(cr.encode())
    r = cli("--check", "k.py", cwd=tmp_path)
    assert r.returncode == 1 and "k.py:9:9: CPA001" in r.stdout and "Traceback" not in r.stderr, r.stdout + r.stderr
    r = cli("k.py", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    data = f.read_bytes()
    assert b"\n" not in data and data.count(b"\r") == MIGRATED_CALL.count("\n") + cr.count("\r")
    assert data.decode().replace("\r", "\n") == migrated_text(tmp_path)
    # mixed with LF: refused, named, not a crash
    f.write_bytes(b"import tilelang.language as T\rx = 1\n" + LEGACY.encode())
    r = cli("--check", "k.py", cwd=tmp_path)
    assert r.returncode == 2 and "lone CR line ends mixed with LF" in r.stdout and "Traceback" not in r.stderr


def migrated_text(tmp_path: Path) -> str:
    ref = put(tmp_path / "reference" / "k.py", LEGACY)
    assert cli(ref, cwd=tmp_path).returncode == 0
    return ref.read_text()


DEEP = {
    "brackets.py": lambda n: "import tilelang.language as T\nx = " + "(" * n + CALL + ")" * n + "\n",
    "lists.py": lambda n: "import tilelang.language as T\nx = " + "[" * n + CALL + "]" * n + "\n",
    "unary.py": lambda n: "import tilelang.language as T\nx = " + "-" * n + CALL + "\n",
    "nots.py": lambda n: "import tilelang.language as T\nx = " + "not " * n + CALL + "\n",
    "chain.py": lambda n: "import tilelang.language as T\nx = " + " + ".join(["a"] * n) + " + " + CALL + "\n",
    "parens.cc": lambda n: "void f() { auto c = " + "(" * n + CPP_CALL + ")" * n + "; }\n",
    "blocks.cc": lambda n: "void f() " + "{" * n + CPP_CALL + ";" + "}" * n + "\n",
}


@pytest.mark.parametrize("n", [1000, 100_000])
def test_deep_nesting_is_a_file_error_not_a_crash(tmp_path, n):
    for name, make in DEEP.items():
        if name == "chain.py" and n > 1000:
            continue  # a flat chain nests in the tree only: 5,000 terms below
        put(tmp_path / name, make(n if name != "chain.py" else 5000))
    put(tmp_path / "ok.py", LEGACY)
    r = cli("--check", "--no-cache", "-j", "1", ".", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "RecursionError" not in r.stderr, r.stderr
    errors = sorted({ln.split(":")[0] for ln in r.stdout.splitlines() if ": CPA900" in ln})
    assert errors == sorted(n_ for n_ in DEEP if n_ != "chain.py" or n == 1000), r.stdout
    assert "ok.py:9:9: CPA001" in r.stdout
    # nesting as deep as the parsers allow is still analysed
    put(tmp_path / "fine" / "p.py", DEEP["brackets.py"](150))
    put(tmp_path / "fine" / "u.py", DEEP["unary.py"](90))
    put(tmp_path / "fine" / "c.cc", DEEP["parens.cc"](200))
    r = cli("--check", "--no-cache", "fine", cwd=tmp_path)
    assert sorted(ln.split(":")[0] for ln in r.stdout.splitlines() if ": CPA" in ln) == [
        "fine/c.cc", "fine/p.py", "fine/u.py"], r.stdout
    assert ": CPA900" not in r.stdout


# Depth without nested brackets, which files.nesting does not see: libcst's parser took seconds at 2,000 levels,
# never ended at 20,000 (conditional expressions, attributes, calls, subscripts, operators) or overflowed the C
# stack (lambdas, boolean operations: a crash of the whole run with -j 1).  python/parse_gate.py refuses them.
CHAINS = SHAPES  # (tests/test_parse_gate.py)


# A legacy call through a module-level name bound to the intrinsic: the ast pass hands the file to libcst.
THROUGH_LIBCST = LEGACY.replace("\n\n\n@T.prim_func", "\n\ncp = T.ptx_cp_async\n\n\n@T.prim_func").replace(
    "T.ptx_cp_async(\"float16\"", "cp(\"float16\"")


@pytest.mark.parametrize("mode", ["--check", "--diff"])
def test_depth_without_brackets_is_a_file_error_in_bounded_time(tmp_path, mode):
    assert "cp(" in THROUGH_LIBCST and "cp = T.ptx_cp_async" in THROUGH_LIBCST
    for name, make in CHAINS.items():
        for n in (400, 2_000, 20_000):
            put(tmp_path / f"{name}_{n}.py", THROUGH_LIBCST + "\nX = " + make(n) + "\n")
    put(tmp_path / "ok.py", LEGACY)
    put(tmp_path / "fine.py", THROUGH_LIBCST + "\nX = " + CHAINS["subscript"](90) + "\n")  # within the bound
    r = cli(mode, "--no-cache", "-j", "1", ".", cwd=tmp_path)  # the timeout is the hang guard
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    said = r.stdout + r.stderr  # (--diff: the diff on stdout, the findings on stderr)
    errors = {ln.split(":")[0] for ln in said.splitlines() if ": CPA900 " in ln and "not examined" not in ln}
    assert errors == {f"{name}_{n}.py" for name in CHAINS for n in (400, 2_000, 20_000)}, r.stdout
    if mode == "--check":
        assert "ok.py:9:9: CPA001" in r.stdout and "fine.py:11:9: CPA001" in r.stdout, r.stdout


def test_the_nesting_scan_skips_strings_and_comments():
    from cpasync_migrate import files

    assert files.nesting('s = "' + "(" * 500 + '"\n# ' + "-" * 500 + "\nt = '''" + "[" * 500 + "'''\n", True) is None
    assert files.nesting("// " + "(" * 500 + "\n/* " + "{" * 500 + ' */\nauto s = "' + "(" * 500 + '";\n', False) is None
    assert files.nesting("x = 1\ny = " + "(" * 201 + "1" + ")" * 201, True)[1] == 2


def test_a_long_tail_without_brackets_is_scanned_in_linear_time(tmp_path):
    """More brackets than the limit at the top, then a long tail with none (assignments; C++ divisions and names
    with an ``R``): the nesting scan restarted its match one character further on over the whole tail each time,
    hours of CPU for a file under the size limit."""
    put(tmp_path / "k.py", LEGACY + "X = " + "()" * 300 + "\n" + "x = 1\n" * 100_000)
    put(tmp_path / "k.cc", "// ptx_cp_async\nint f() { return " + "(0)" * 300 + "; }\n" + "Result r = a / b;\n" * 40_000)
    r = cli("--check", "--no-cache", "-j", "1", ".", cwd=tmp_path)  # the timeout is the hang guard
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "k.py:9:9: CPA001" in r.stdout and ": CPA900" not in r.stdout, r.stdout


NON_UTF8 = os.fsdecode(b"k\xff\xfe.py")


def test_non_utf8_file_names_in_sarif_and_json(tmp_path):
    put(tmp_path / NON_UTF8, LEGACY)
    for fmt in ("sarif", "json", "github", "text", "markdown"):
        r = subprocess.run([sys.executable, "-m", "cpasync_migrate", "--check", "--format", fmt, "."], cwd=tmp_path,
                           capture_output=True, timeout=HANG, env=dict(os.environ, NO_COLOR="1", LC_ALL="C.UTF-8",
                                                                      PYTHONIOENCODING="utf-8"))
        assert r.returncode == 1 and b"Traceback" not in r.stderr, (fmt, r.stderr.decode(errors="replace"))
        if fmt in ("sarif", "json"):
            doc = json.loads(r.stdout)  # valid JSON: the name's bytes are surrogate escapes
            names = ([res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                      for res in doc["runs"][0]["results"]] if fmt == "sarif" else [f["path"] for f in doc["findings"]])
            if fmt == "sarif":  # a URI reference: the name's own bytes percent-encoded (RFC 3986)
                assert names == ["k%FF%FE.py"], names
            else:
                assert names == [NON_UTF8], names
                assert b"\\udcff\\udcfe" in r.stdout
        elif fmt != "markdown":  # (the summary names only the files left for a person)
            assert b"k\xff\xfe.py" in r.stdout, r.stdout[:300]


def test_a_path_over_path_max_is_a_file_error(tmp_path):
    long = "/".join(["a" * 200] * 30) + "/k.py"  # 6,000 characters, over PATH_MAX (4,096)
    r = cli("--check", long, cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert ": CPA900 " in r.stdout and "too long" in r.stdout, r.stdout
    r = cli("--check", "a" * 300 + ".py", cwd=tmp_path)  # one name over NAME_MAX (255)
    assert r.returncode == 2 and "Traceback" not in r.stderr and ": CPA900 " in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("args,code", [(("--check", "--format", "sarif"), 1), (("--check", "--format", "sarif",
                                                                                 "--exit-zero"), 0),
                                       (("--check",), 1), (("--diff",), 1)])
def test_a_reader_that_goes_away_gives_no_traceback_and_keeps_the_exit_code(tmp_path, args, code):
    for i in range(40):
        put(tmp_path / f"k{i:02d}.py", LEGACY)
    p = subprocess.Popen([sys.executable, "-m", "cpasync_migrate", *args, "."], cwd=tmp_path, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=dict(os.environ, NO_COLOR="1"))
    p.stdout.read(10)
    p.stdout.close()  # as `| head -c 10` does
    err = p.stderr.read().decode()
    assert p.wait(timeout=HANG) == code, err
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception ignored" not in err, err


def test_step_summary_on_a_fifo_does_not_hang(tmp_path):
    put(tmp_path / "k.py", LEGACY)
    os.mkfifo(tmp_path / "summary")
    r = cli("--check", "k.py", cwd=tmp_path, env={"GITHUB_STEP_SUMMARY": str(tmp_path / "summary")})
    assert r.returncode == 1 and "cannot append the job summary" in r.stderr, r.stderr
    # a FIFO with a reader: opened, then refused as not a regular file (nothing written to it)
    fd = os.open(tmp_path / "summary", os.O_RDONLY | os.O_NONBLOCK)
    try:
        r = cli("--check", "k.py", cwd=tmp_path, env={"GITHUB_STEP_SUMMARY": str(tmp_path / "summary")})
        assert r.returncode == 1 and "not a regular file" in r.stderr, r.stderr
        assert os.read(fd, 100) == b""
    finally:
        os.close(fd)
    r = cli("--check", "k.py", cwd=tmp_path, env={"GITHUB_STEP_SUMMARY": str(tmp_path / "plain.md")})
    assert r.returncode == 1 and "## cpasync-migrate (check)" in (tmp_path / "plain.md").read_text()


# ------------------------------------------------------------------ 6. the write window


@pytest.mark.parametrize("linked", [False, True], ids=["replaced", "in-place"])
def test_an_edit_made_while_the_file_is_written_is_not_lost(tmp_path, monkeypatch, linked):
    """A user's save between the re-read and the rename (here: while the new text is synced) is seen by
    the last stat comparison: the file keeps the user's text and the run says so (exit 2)."""
    from conftest import run_inproc

    f = put(tmp_path / "k.py", LEGACY)
    if linked:  # a hard link: written in place, after a synced copy of the old bytes
        os.link(f, tmp_path / "k_link.py")
    users = LEGACY.replace("@T.prim_func", "# the user's edit\n@T.prim_func")
    real_fsync, saved = os.fsync, []

    def fsync_then_user_saves(fd):
        real_fsync(fd)
        if not saved:
            saved.append(1)
            with open(f, "r+") as fh:  # the editor writes the file in place
                fh.write(users)

    monkeypatch.setattr(os, "fsync", fsync_then_user_saves)
    r = run_inproc("--no-cache", "k.py", cwd=tmp_path)
    assert saved, "the write never synced"
    assert r.returncode == 2, r.stdout + r.stderr
    assert "changed on disk while it was being written; not overwritten" in r.stdout + r.stderr
    assert f.read_text() == users
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".cpasync-")]
    monkeypatch.setattr(os, "fsync", real_fsync)
    r = run_inproc("--no-cache", "k.py", cwd=tmp_path)  # run again: written, the user's edit kept
    assert r.returncode == 0 and "# the user's edit" in f.read_text() and MIGRATED_CALL in f.read_text()


@pytest.mark.parametrize("mode", ["--check", "--diff"])
def test_many_legacy_calls_in_one_small_file_are_decided_in_linear_time(tmp_path, mode):
    """1,600 legacy calls in one kernel (112 kB, under the windowed size): the ast pass read the file's habits (a
    token pass over the whole text) once per call laid out; the run never ended.  The timeout is the hang guard."""
    body = "".join(f"        T.ptx_cp_async(\"float16\", S.data, tx * 8 + {i}, A.data, tx * 8, 16)\n" for i in range(1600))
    put(tmp_path / "k.py", LEGACY.replace("        T.ptx_cp_async(\"float16\", S.data, tx * 8, A.data, tx * 8, 16)\n",
                                          body))
    r = cli(mode, "--no-cache", "-j", "1", "k.py", cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    if mode == "--check":
        assert r.stdout.count(": CPA001 ") == 1600, r.stdout[-2000:]
    else:  # every call rewritten in the diff
        assert r.stdout.count("+        T.ptx_cp_async(\n") == 1600, r.stdout[-2000:]


# C++ files shaped against the front end's passes, each under the default size limit.  Before the passes were made
# linear each took longer than the hang guard (nested branches 41 s at 1,000, an else-if chain 53 s at 5,000, a
# << chain never ended at 32,000, builders 9 s at 200 and helper declarations 37 s at 1,600, each growing about
# fourfold per doubling); the budget is off, so the timeout is the only bound.
_TEST = "op->op.same_as(builtin::ptx_cp_async())"
CPP_SHAPES = {
    "nested-ifs": lambda: "void F(const CallNode* op, std::ostream& os) {\n" + f"  if ({_TEST})\n" * 2000
                          + "    os << op->args[4];\n}\n",
    "else-if-chain": lambda: "void F(const CallNode* op, std::ostream& os) {\n" + f"  if ({_TEST}) {{ os << op->args[4]; }}"
                             + "".join(f" else if ({_TEST}) {{ os << op->args[{i % 6}]; }}\n" for i in range(10000))
                             + "}\n",
    "shift-chain": lambda: f"void F(const CallNode* op, std::ostream& os) {{\n  if ({_TEST}) {{\n    os << "
                           + " << ".join(f"op->args[{i % 6}]" for i in range(32000)) + ";\n  }\n}\n",
    "builders": lambda: "Stmt F() {\n  Array<Stmt> seq;\n"
                        + "".join(f"  Var d{i}(\"d\"), s{i}(\"s\");\n" for i in range(800))
                        + "".join(f"  seq.push_back(Evaluate(Call(DataType::Handle(), builtin::ptx_cp_async(), "
                                  f"{{d{i}, o{i}, s{i}, so{i}, 16}})));\n" for i in range(800)) + "  return SeqStmt(seq);\n}\n",
    "helper-declarations": lambda: "// ptx_cp_async\n" + "".join(
        f"void Emit{i % 40}(const char* dst, int dst_offset, const char* src, int src_offset, int bytes{i});\n"
        for i in range(3200)),
}


@pytest.mark.slow
@pytest.mark.parametrize("shape", sorted(CPP_SHAPES))
def test_cpp_shapes_against_the_passes_are_analysed_in_linear_time(tmp_path, shape):
    text = "namespace tvm {\nnamespace codegen {\n" + CPP_SHAPES[shape]() + "}  // namespace codegen\n}  // namespace tvm\n"
    assert len(text) < 1 << 20
    put(tmp_path / "k.cc", text)
    r = cli("--check", "--no-cache", "-j", "1", "--file-cpu-limit", "0", "k.cc", cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr and "CPA900" not in r.stdout, r.stdout[-2000:]
    assert r.stdout.count("k.cc:") >= 1
