"""The lint's start-up, walk and warm path: each speed-up gives the same report as the way it replaced.

- ``CPASYNC_MIGRATE_DIR_CONFIG`` (config.DIR_CONFIG): a walked file's configuration is its folder's, looked
  up once per folder (no ``realpath`` per file); off, each file's real path is resolved as before.
- ``CPASYNC_MIGRATE_CACHE_FIRST`` (engine.CACHE_FIRST): the results cache is asked before a file is decoded; a
  file whose analysis it holds is not scanned for its nesting again (``files.nesting``).
"""
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import run_cli, run_inproc
from cpasync_migrate import config, engine, files
from conftest import FIXTURES
from test_cli import LEGACY, write

NAMED = "x = 1  # not a call of ptx_cp_async\n"


@pytest.fixture
def configured(tmp_path):
    """A tree whose files take their configuration from three pyproject.toml files, with links that lead
    from one configuration's folder into another's."""
    t = tmp_path / "tree"
    write(t / "pyproject.toml", '[tool.cpasync-migrate]\nextend-exclude = ["vendor/**"]\n\n'
          '[tool.cpasync-migrate.per-file-ignores]\n"tests/*" = ["CPA001"]\n')
    # a name glob: it excludes a file whose own configuration is this one, wherever its name is
    write(t / "sub" / "pyproject.toml", '[tool.cpasync-migrate]\nextend-exclude = ["gen/**", "*_x.py"]\n')
    write(t / "other" / "pyproject.toml", '[tool.cpasync-migrate]\nunsafe-fixes = true\nignore = ["CPA002"]\n')
    write(t / "other" / "deep" / "pyproject.toml", '[project]\nname = "no-table"\n')  # not a configuration
    for rel in ("top.py", "sub/pkg/b.py", "other/o.py", "tests/t.py"):
        write(t / rel, LEGACY)
    for rel in ("vendor/v.py", "sub/pkg/real.py", "sub/gen/c.py", "other/deep/er/d.py", "plain_x.py", "sub/a_x.py"):
        write(t / rel, NAMED)  # read and processed, quickly: -v names each one processed
    write(t / "sub" / "pkg" / "clean.py", "x = 1\n")
    (t / "links").mkdir()
    # a link's configuration is that of the folder of the file it leads to (sub's: its name glob excludes it)
    os.symlink(os.path.join("..", "sub", "pkg", "real.py"), t / "links" / "legacy_x.py")
    os.symlink(os.path.join("..", "other", "o.py"), t / "links" / "to_other.py")
    os.symlink(os.path.join("..", "sub"), t / "sub_link")  # a link to a folder: not followed by a walk
    os.link(t / "top.py", t / "links" / "hard.py")
    return t


def _both_ways(monkeypatch, run):
    monkeypatch.setattr(config, "DIR_CONFIG", True)
    on = run()
    monkeypatch.setattr(config, "DIR_CONFIG", False)
    off = run()
    return on, off


def _report(cwd, *args):
    r = run_inproc("--check", "--format", "json", "--no-cache", "-v", *args, cwd=cwd)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout), r.stderr  # -v: every file processed or left out, and why


def _git(t):
    env = dict(os.environ, GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    for cmd in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", *cmd], cwd=t, check=True, env=env, capture_output=True)


@pytest.mark.slow  # an equality run of a speed-up switch through the CLI
@pytest.mark.parametrize("in_git", [False, True], ids=["walker", "git"])
def test_folder_configuration_gives_the_same_report(configured, monkeypatch, in_git, tmp_path):
    if in_git:
        _git(configured)
    os.symlink(configured, tmp_path / "linked_tree")
    runs = [
        (configured, (".",)),
        (configured / "sub", (".", "../other", "../links")),
        (configured / "links", ("../sub/./pkg", "..//other/deep")),
        (tmp_path, (str(tmp_path / "linked_tree" / "sub"), "linked_tree/other")),  # reached through a link
    ]
    for cwd, args in runs:
        on, off = _both_ways(monkeypatch, lambda: _report(cwd, *args))
        assert on == off, (cwd, args)
    report, err = _report(configured, ".")
    processed = {line.split()[1] for line in err.splitlines() if line.startswith("processed ")}
    # excluded by their own configurations: vendor/ (the root's), gen/ and *_x.py (sub's, also through the link)
    assert not processed & {"vendor/v.py", "sub/gen/c.py", "sub/a_x.py", "links/legacy_x.py"}
    # a hard link and a link to a file are processed once, under the name that is not a link, first
    assert processed == {"links/hard.py", "sub/pkg/b.py", "sub/pkg/real.py", "plain_x.py", "other/o.py",
                         "other/deep/er/d.py", "tests/t.py"}
    assert f"skipped links/legacy_x.py: excluded ({configured / 'sub' / 'pyproject.toml'})" in err
    assert {f["path"] for f in report["findings"] if f["code"] == "CPA001" and f["status"] != "suppressed"} == {"links/hard.py", "sub/pkg/b.py",
                                                                                "other/o.py"}  # tests/: ignored
    assert "other/pyproject.toml: unsafe-fixes applies to the whole run" in err


def test_the_switch_is_read_from_the_environment(configured):
    def once(env):
        r = run_cli("--check", "--format", "json", "--no-cache", "-v", ".", cwd=configured, env=env)
        assert r.returncode == 1, r.stderr
        return r.stdout, r.stderr

    assert once({"CPASYNC_MIGRATE_DIR_CONFIG": "0"}) == once({"CPASYNC_MIGRATE_DIR_CONFIG": "1"})


def test_each_files_configuration_is_the_one_of_its_real_path(configured, monkeypatch):
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(configured) for f in fs if f.endswith(".py"))
    files += [os.path.relpath(f) for f in files] + [f.replace(str(configured), str(configured) + "/.") for f in files]
    files += [str(configured / "sub_link" / "pkg" / "b.py"), str(configured / "missing" / "m.py"),
              str(configured / "sub" / "pkg" / ".." / "pkg" / "b.py"), "/" + str(configured / "top.py")]
    monkeypatch.setattr(config, "DIR_CONFIG", False)
    old = config.Configs(None, False)
    want = [old.for_path(f) for f in files]
    monkeypatch.setattr(config, "DIR_CONFIG", True)
    new = config.Configs(None, False)
    assert [new.for_path(f) for f in files] == want
    assert [new.for_path(f, regular=not os.path.islink(f)) for f in files if os.path.exists(f)] == \
        [w for f, w in zip(files, want) if os.path.exists(f)]
    got = {os.path.basename(f): c.get("__file__") for f, c in zip(files, want)}
    assert got["real.py"] == got["legacy_x.py"] == str(configured / "sub" / "pyproject.toml")
    assert got["to_other.py"] == got["d.py"] == str(configured / "other" / "pyproject.toml")


def test_a_folders_real_path_is_realpaths(configured, tmp_path, monkeypatch):
    monkeypatch.chdir(configured / "sub")
    c = config.Configs(None, False)
    for d in ("", ".", "pkg", "./pkg", "pkg/.", "pkg/..", "../sub_link/pkg", "../sub_link", "..//links",
              str(configured / "sub_link" / "pkg"), "//" + str(configured).lstrip("/"), "/", "no/such/dir",
              str(tmp_path)):
        assert c._real_dir(d) == os.path.realpath(d), d


def test_configuration_lookups_follow_folders_not_files(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", "[tool.cpasync-migrate]\nextend-exclude = []\n")
    files = [str(tmp_path / f"d{i}" / "e" / f"f{j}.py") for i in range(3) for j in range(40)]
    for f in files:
        write(Path(f), "x = 1\n")
    calls = []
    real = os.path.realpath

    def counted(p, *a, **k):
        calls.append(p)
        return real(p, *a, **k)

    monkeypatch.setattr(os.path, "realpath", counted)
    for on, most in ((True, 3 * 2 + 1), (False, None)):
        monkeypatch.setattr(config, "DIR_CONFIG", on)
        calls.clear()
        c = config.Configs(None, False)
        assert {c.for_path(f, regular=True)["__file__"] for f in files} == {str(tmp_path / "pyproject.toml")}
        if most is not None:
            assert len(calls) <= most, calls  # the top folder once; every other folder from its parent's
        else:
            assert len(calls) >= len(files)  # as before: one per file


@pytest.fixture
def kernels(tmp_path):
    """Fixture inputs of both languages, a file nested too deep, one not UTF-8, one with a NUL byte."""
    t = tmp_path / "kernels"
    for lang in ("python", "cpp"):
        for f in sorted((FIXTURES / lang).glob("*.in.*"))[::3]:
            write(t / lang / f.name.replace(".in.", "."), f.read_text())
    write(t / "deep.py", "import tilelang.language as T\nx = " + "(" * 250 + "1" + ")" * 250 +
          "\nT.ptx_cp_async(a, b, 16)\n")
    (t / "latin.py").write_bytes(b"# \xe9\nT.ptx_cp_async(a, b, 16)\n")
    (t / "nul.cc").write_bytes(b"ptx_cp_async\0\n")
    return t


@pytest.mark.slow  # an equality run of a speed-up switch through the CLI
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_asking_the_cache_first_gives_the_same_report(kernels, tmp_path, monkeypatch, jobs):
    def report(first, cache):
        monkeypatch.setattr(engine, "CACHE_FIRST", first)
        r = run_inproc("--check", "--format", "json", "-j", jobs, "--cache-dir", cache, ".", cwd=kernels)
        assert r.returncode in (1, 2), r.stderr
        return json.loads(r.stdout)

    cold = report(True, tmp_path / "c1")  # fills the cache, scanning every file
    assert report(True, tmp_path / "c1") == report(False, tmp_path / "c1") == cold == report(False, tmp_path / "c2")
    errors = {f["path"]: f["message"] for f in cold["findings"] if f["code"] == "CPA900" and f["line"] >= 1}
    assert "brackets nested more than 200 deep" in errors["deep.py"]
    assert "cannot decode" in errors["latin.py"] and "binary file" in errors["nul.cc"]


def test_a_cached_file_is_not_scanned_for_its_nesting_again(kernels, tmp_path, monkeypatch):
    scanned = []
    nesting = files.nesting
    monkeypatch.setattr(files, "nesting", lambda text, python: scanned.append(python) or nesting(text, python))
    monkeypatch.setattr(engine, "CACHE_FIRST", True)
    settings = engine.RunSettings(mode="check", cache_dir=str(tmp_path / "cache"), keep_texts=False)
    paths = sorted(str(p) for p in kernels.rglob("*.*") if p.name not in ("latin.py", "nul.cc"))
    cold = [engine.process_file(p, settings) for p in paths]
    assert len(scanned) == len(paths)
    scanned.clear()
    warm = [engine.process_file(p, settings) for p in paths]
    assert scanned == [True]  # only deep.py: its error is never cached, so it is scanned (and refused) again
    assert [(o.path, o.error, [(f.line, f.code, f.status) for f in o.findings]) for o in warm] == \
        [(o.path, o.error, [(f.line, f.code, f.status) for f in o.findings]) for o in cold]
    assert sum(o.cached for o in warm) == len(paths) - 1
    assert engine.process_file(paths[0], engine.RunSettings(mode="check", cache_dir=str(tmp_path / "empty")),
                               only_cached=True) is engine.NOT_CACHED
    assert len(scanned) == 1  # a miss asked only for a cached answer is not decoded


def test_a_check_imports_neither_the_diff_nor_the_importers_question_unless_asked(tmp_path):
    import sys

    write(tmp_path / "k.py", NAMED)
    probe = ("import sys\nfrom cpasync_migrate import cli\ncode = cli.main(sys.argv[1:])\n"
             "print(code, *(m in sys.modules for m in ('difflib', 'cpasync_migrate.importers')))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-c", probe, "--check", "--no-cache", "-q", "k.py"], cwd=tmp_path,
                       capture_output=True, text=True, env=env)
    assert r.stdout.split()[-3:] == ["0", "False", "False"], r.stderr
    from cpasync_migrate import engine, importers

    importers._ROOTS["x"] = "y"
    engine.forget_folders()  # imported: its answers are forgotten when a run starts
    assert importers._ROOTS == {}


def test_adding_the_options_leaves_the_help_as_argparse_lays_it_out(monkeypatch):
    """cli.build_parser gives argparse's checks of each option a formatter of a fixed width (no terminal size
    asked, no shutil imported); the help and usage texts are still laid out to the terminal, as before."""
    import argparse

    from cpasync_migrate import cli, options

    monkeypatch.setenv("COLUMNS", "67")
    new = cli.build_parser()
    monkeypatch.setattr(options.Parser, "_get_formatter", argparse.ArgumentParser._get_formatter)
    old = cli.build_parser()
    usage = new.format_usage()
    assert new.format_help() == old.format_help() and usage == old.format_usage()
    monkeypatch.setenv("COLUMNS", "200")
    assert new.format_usage() != usage  # the width is the terminal's, asked when the text is made


def test_a_warm_check_imports_no_module_it_does_not_use(tmp_path):
    """shutil (argparse's terminal width), the nesting scan's and the C++ comment scan's patterns: none is
    needed by a --check whose files are all in the results cache."""
    import sys

    write(tmp_path / "k.py", LEGACY)
    write(tmp_path / "c.cc", "// ptx_cp_async named in a comment\n")
    probe = ("import sys\nfrom cpasync_migrate import cli, files, suppress\ncode = cli.main(sys.argv[1:])\n"
             "print(code, 'shutil' in sys.modules, files._PATTERNS is not None, suppress._cpp_token.cache_info().currsize)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    args = [sys.executable, "-c", probe, "--check", "-q", "-j", "1", "--cache-dir", str(tmp_path / "cache"), "."]
    cold = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert cold.stdout.split()[-4:] == ["1", "False", "True", "0"], cold.stderr  # the nesting scan ran
    warm = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert warm.stdout.split()[-4:] == ["1", "False", "False", "0"], warm.stderr


@pytest.mark.slow  # an equality run of a speed-up switch through the CLI
@pytest.mark.parametrize("in_git", [False, True], ids=["walker", "git"])
def test_what_the_walk_saw_of_each_folder_gives_the_same_report(configured, monkeypatch, in_git, tmp_path):
    """CPASYNC_MIGRATE_WALK_FACTS (config.WALK_FACTS): on and off, the same report and the same -v lists."""
    if in_git:
        _git(configured)
    write(configured / "sub" / "pkg" / "deeper" / "pyproject.toml", "[tool.cpasync-migrate]\nignore = [\"CPA001\"]\n")
    write(configured / "sub" / "pkg" / "deeper" / "k.py", LEGACY)
    os.symlink(configured / "other" / "pyproject.toml", configured / "links" / "pyproject.toml")  # a link: looked up
    os.symlink(configured, tmp_path / "linked_tree")
    runs = [(configured, (".",)), (configured / "sub", (".", "../other", "../links")),
            (tmp_path, (str(tmp_path / "linked_tree" / "sub"), "linked_tree/other"))]
    first = None
    for cwd, args in runs:
        got = []
        for on in (True, False):
            monkeypatch.setattr(config, "WALK_FACTS", on)
            got.append(_report(cwd, *args))
        assert got[0] == got[1], (cwd, args)
        first = first or got[0]
    report, err = first
    assert "processed sub/pkg/deeper/k.py" in err
    assert not [f for f in report["findings"] if f["path"] == "sub/pkg/deeper/k.py" and f["code"] == "CPA001"
                and f["status"] != "suppressed"]  # its own configuration ignores CPA001


def test_a_walked_folder_costs_no_lstat_and_no_stat_of_its_pyproject(configured, monkeypatch):
    from cpasync_migrate import discovery

    os.symlink(configured / "other" / "pyproject.toml", configured / "links" / "pyproject.toml")
    folders: dict = {}
    walked = list(discovery._walk(str(configured), [], (".py",), (), True, folders=folders))
    assert folders[str(configured / "links")] is None and folders[str(configured / "sub")] is True
    assert folders[str(configured / "other" / "deep")] is True and folders[str(configured / "tests")] is False
    assert str(configured) not in folders  # the folder argument itself may be a link: looked up
    walked = [f for f in walked if not os.path.islink(f)]  # a link's configuration is its target's: realpath
    want = [config.Configs(None, False).for_path(f, regular=True) for f in walked]
    asked = []
    lstat, is_file = os.lstat, config._is_file
    monkeypatch.setattr(config.os, "lstat", lambda p, *a, **k: asked.append(p) or lstat(p, *a, **k))
    monkeypatch.setattr(config, "_is_file", lambda p: asked.append(p) or is_file(p))
    c = config.Configs(None, False)
    c.walked = folders
    assert [c.for_path(f, regular=True) for f in walked] == want
    # a folder that holds a walked file: neither its lstat nor its pyproject.toml's stat (a folder above one, with
    # no file of its own, is still looked at when the lookup climbs to it)
    known = {os.path.dirname(f) for f in walked} & {d for d, seen in folders.items() if seen is not None}
    assert not [p for p in asked if p in known or p.endswith("/pyproject.toml") and os.path.dirname(p) in known]
    assert str(configured / "links" / "pyproject.toml") in asked  # a link: looked up as before
    assert str(configured) in asked  # the folder argument: looked up as before


def test_the_front_ends_are_imported_before_the_fork_only_where_every_hit_is_analysed(tmp_path):
    """CPASYNC_MIGRATE_PRELOAD (runner.PRELOAD): with --no-cache (or in write mode) the parent imports both front
    ends before it forks its workers; a --check with the results cache leaves them to the workers that need
    them (a warm run needs none); off, the parent never imports them."""
    import sys

    write(tmp_path / "k.py", LEGACY)
    write(tmp_path / "c.cc", "void f() { ptx_cp_async(); }\n")
    probe = ("import sys\nfrom cpasync_migrate import cli\ncode = cli.main(sys.argv[1:])\n"
             "print(code, *(m in sys.modules for m in ('cpasync_migrate.python.fast', 'cpasync_migrate.cpp')))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def parent_imported(*args, switch="1"):
        r = subprocess.run([sys.executable, "-c", probe, "--check", "-q", "-j", "2", *args, "."], cwd=tmp_path,
                           capture_output=True, text=True, env=dict(env, CPASYNC_MIGRATE_PRELOAD=switch))
        return r.stdout.split()[-3:], r.stderr

    assert parent_imported("--no-cache")[0] == ["1", "True", "True"]
    assert parent_imported("--cache-dir", str(tmp_path / "cache"))[0] == ["1", "False", "False"]
    assert parent_imported("--no-cache", switch="0")[0] == ["1", "False", "False"]


BENCH = Path(os.environ.get("CPASYNC_BENCH_CACHE", Path.home() / ".cache" / "cpasync-migrate" / "bench-tree"))
SWITCHES = ("CPASYNC_MIGRATE_WALK_FACTS", "CPASYNC_MIGRATE_MEMO_STRINGS", "CPASYNC_MIGRATE_PRELOAD",
            "CPASYNC_MIGRATE_FOLDER_INHERIT", "CPASYNC_MIGRATE_FREE_FOLDERS", "CPASYNC_MIGRATE_MEMO_PERCENT")


@pytest.mark.slow  # every switch of the warm and cold paths, on and off, over the benchmark trees and the fixtures
@pytest.mark.parametrize("tree", ["tree-git", "tree", "fixtures"])
def test_every_switch_gives_the_same_output_on_the_benchmark_trees(tree, tmp_path):
    """Identical stdout, stderr and exit code with all of SWITCHES on and with each one off: --check cold
    (--no-cache) and warm (the results cache of the run before), -j 2 and -j 1."""
    import sys

    where = FIXTURES if tree == "fixtures" else BENCH / tree
    if not where.is_dir():
        pytest.skip(f"{where} not built (benchmarks/build_tree.sh)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("CPASYNC_MIGRATE_")}

    def run(off, *args):
        e = dict(env, **{s: "0" if s == off else "1" for s in SWITCHES})
        r = subprocess.run([sys.executable, "-m", "cpasync_migrate", "--check", *args, str(where)], cwd=tmp_path,
                           capture_output=True, text=True, env=e)
        return r.returncode, r.stdout, r.stderr

    for jobs in ("2", "1"):
        cold = run(None, "--no-cache", "-j", jobs)
        assert cold[0] in (0, 1), cold[2]
        for off in SWITCHES:
            assert run(off, "--no-cache", "-j", jobs) == cold, (off, jobs)
        for off in (None, *SWITCHES):  # each with its own results cache, filled by its first run
            cache = str(tmp_path / f"cache-{off}-{jobs}")
            first = run(off, "--cache-dir", cache, "-j", jobs)
            assert first == cold, (off, jobs)
            assert run(off, "--cache-dir", cache, "-j", jobs) == cold, (off, jobs)
        shared = str(tmp_path / f"cache-{jobs}")  # one cache filled with every switch on, read with each one off
        assert run(None, "--cache-dir", shared, "-j", jobs) == cold
        for off in (None, *SWITCHES):
            assert run(off, "--cache-dir", shared, "-j", jobs) == cold, (off, jobs)
