"""Run records (replay.py): an unchanged second run prints what the first printed without running, and any change
to what the run read, to how it was asked, or to the tool makes it run again; runs with side effects leave no
record, and a record that is not this machine's is never used."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES
from cpasync_migrate import cli, inputs, replay

LEGACY = 'import tilelang.language as T\nT.ptx_cp_async("float16", A.data, 0, B.data, 0, 16)\n'


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A small tree (a legacy kernel, a plain file, a C++ file, a sub-folder), the current folder; its files count
    as written long ago (tests write them just before the run), and inputs are taken up to ``tmp_path`` only (the
    folders above it change whenever another test makes its own)."""
    t = tmp_path / "tree"
    (t / "pkg" / "sub").mkdir(parents=True)
    (t / "pkg" / "kernel.py").write_bytes((FIXTURES / "python" / "alias_t_positional.in.py").read_bytes())
    (t / "pkg" / "plain.py").write_text("x = 1\n")
    (t / "pkg" / "sub" / "other.py").write_text(LEGACY)
    (t / "pkg" / "helper.cc").write_text("int f() { return 1; }\n")
    monkeypatch.setattr(replay, "RACY_NS", -3600 * 10**9)
    monkeypatch.setattr(replay, "TOP", str(tmp_path))
    monkeypatch.delenv("CI", raising=False)  # the project's own CI sets it: no records there
    (tmp_path / "cache").mkdir()  # made by a run, it would change tmp_path, an input: the record would miss once
    monkeypatch.chdir(t)
    return t


@pytest.fixture
def runs(monkeypatch):
    """How many times the command line really ran (``cli.main``), in this process."""
    count = [0]
    real = cli.main

    def counted(argv=None):
        count[0] += 1
        return real(argv)

    monkeypatch.setattr(cli, "main", counted)
    return count


def _main(capsys, *argv):
    code = replay.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _check(capsys, tmp_path, *extra):
    mode = () if "--diff" in extra else ("--check",)
    return _main(capsys, *mode, "--cache-dir", str(tmp_path / "cache"), *extra, "pkg")


def test_an_unchanged_second_run_is_replayed_and_prints_the_same(tree, tmp_path, runs, capsys, monkeypatch):
    first = _check(capsys, tmp_path)
    assert runs[0] == 1 and first[0] == 1 and "CPA001" in first[1], first
    second = _check(capsys, tmp_path)
    assert runs[0] == 1, "the second run ran instead of being replayed"
    assert second == first
    monkeypatch.setattr(replay, "ENABLED", False)  # the switch: the same report, run for real
    assert _check(capsys, tmp_path) == first and runs[0] == 2


def test_a_diff_run_and_a_json_report_are_replayed_byte_for_byte(tree, tmp_path, runs, capsys):
    for argv in (("--diff",), ("--format", "json"), ("--format", "sarif")):
        first = _check(capsys, tmp_path, *argv)
        assert _check(capsys, tmp_path, *argv) == first
    assert runs[0] == 3


@pytest.mark.parametrize("change", [
    "edit the kernel", "edit a file the memo skips", "add a file", "remove a file", "add a folder",
    "configure the tree", "configure the folder above it", "ignore a file", "a ruff line length",
])
def test_a_change_to_what_the_run_read_runs_it_again(tree, tmp_path, runs, capsys, change):
    first = _check(capsys, tmp_path, "--diff") if change == "a ruff line length" else _check(capsys, tmp_path)
    kernel = tree / "pkg" / "kernel.py"
    if change == "edit the kernel":
        kernel.write_text(kernel.read_text() + LEGACY)
    elif change == "edit a file the memo skips":
        (tree / "pkg" / "plain.py").write_text(LEGACY)
    elif change == "add a file":
        (tree / "pkg" / "sub" / "new.py").write_text(LEGACY)
    elif change == "remove a file":
        (tree / "pkg" / "sub" / "other.py").unlink()
    elif change == "add a folder":
        (tree / "pkg" / "deeper").mkdir()
        (tree / "pkg" / "deeper" / "k.py").write_text(LEGACY)
    elif change == "configure the tree":
        (tree / "pyproject.toml").write_text('[tool.cpasync-migrate]\nextend-exclude = ["pkg/sub"]\n')
    elif change == "configure the folder above it":
        (tmp_path / "pyproject.toml").write_text('[tool.cpasync-migrate]\nextend-exclude = ["tree/pkg/sub"]\n')
    elif change == "ignore a file":
        (tree / "pkg" / ".gitignore").write_text("sub/\n")
    elif change == "a ruff line length":
        (tree / "ruff.toml").write_text("line-length = 60\n")
    second = _check(capsys, tmp_path, "--diff") if change == "a ruff line length" else _check(capsys, tmp_path)
    assert runs[0] == 2, f"{change}: replayed a stale record"
    assert second != first


def test_a_file_only_a_worker_reads_is_an_input(tree, tmp_path, runs, capsys):
    """The line length comes from a ruff.toml that the workers (-j 2) look up and read, never the parent."""
    (tree / "ruff.toml").write_text("line-length = 60\n")
    first = _check(capsys, tmp_path, "--diff", "-j", "2")
    assert "@@" in first[1]
    assert _check(capsys, tmp_path, "--diff", "-j", "2") == first and runs[0] == 1
    (tree / "ruff.toml").write_text("line-length = 100\n")
    assert _check(capsys, tmp_path, "--diff", "-j", "2") != first and runs[0] == 2


def test_another_invocation_or_environment_is_its_own_record(tree, tmp_path, runs, capsys, monkeypatch):
    _check(capsys, tmp_path)
    _check(capsys, tmp_path, "--target", "0.1.9")
    assert runs[0] == 2
    monkeypatch.setenv("CPASYNC_MIGRATE_SOMETHING", "1")
    _check(capsys, tmp_path)
    assert runs[0] == 3
    monkeypatch.delenv("CPASYNC_MIGRATE_SOMETHING")
    _check(capsys, tmp_path)
    assert runs[0] == 3  # the first record again


@pytest.mark.parametrize("argv", [
    ("--no-cache",), ("-o", "out.txt"), ("--report", "json:out.json"), ("write mode",), ("--verify",),
])
def test_a_run_with_side_effects_or_without_the_cache_leaves_no_record(tree, tmp_path, runs, capsys, argv):
    if argv == ("write mode",):
        argv = ()  # write mode: the default without --check/--diff
        run = lambda: _main(capsys, "--cache-dir", str(tmp_path / "cache"), "pkg")  # noqa: E731
    else:
        run = lambda: _check(capsys, tmp_path, *argv)  # noqa: E731
    run()
    run()
    assert runs[0] == 2


def test_a_configuration_that_turns_the_cache_off_leaves_no_record(tree, tmp_path, runs, capsys):
    (tree / "pyproject.toml").write_text("[tool.cpasync-migrate]\ncache = false\n")
    _check(capsys, tmp_path)
    _check(capsys, tmp_path)
    assert runs[0] == 2


def test_a_tree_with_a_link_or_a_fresh_file_leaves_no_record(tree, tmp_path, runs, capsys, monkeypatch):
    (tree / "pkg" / "link.py").symlink_to(tree / "pkg" / "plain.py")
    _check(capsys, tmp_path)
    _check(capsys, tmp_path)
    assert runs[0] == 2
    (tree / "pkg" / "link.py").unlink()
    monkeypatch.setattr(replay, "RACY_NS", 5 * 10**9)  # the real margin: the tree was written a moment ago
    _check(capsys, tmp_path)
    _check(capsys, tmp_path)
    assert runs[0] == 4


def test_in_a_git_work_tree_git_is_asked_again(tree, tmp_path, runs, capsys):
    """The files of a git work tree are git's answer: a replay runs git again and compares.  An exclude that only
    git reads (``.git/info/exclude``, no input of the run) changes the answer: the run runs again."""
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    first = _check(capsys, tmp_path)
    assert _check(capsys, tmp_path) == first and runs[0] == 1
    (tree / ".git" / "info").mkdir(exist_ok=True)
    (tree / ".git" / "info" / "exclude").write_text("pkg/sub/\n")
    second = _check(capsys, tmp_path)
    assert runs[0] == 2 and second != first and "other.py" not in second[1]


def test_a_program_other_than_git_leaves_no_record(tree, tmp_path, runs, capsys, monkeypatch):
    """A run that starts a program whose answer no record holds (here the GPU probe of --verify's device
    choice, made to run a program) is never recorded."""
    real_main = cli.main

    def with_program(argv=None):
        subprocess.run(["true"], check=True)
        return real_main(argv)

    monkeypatch.setattr(cli, "main", with_program)
    _check(capsys, tmp_path)
    _check(capsys, tmp_path)
    assert runs[0] == 2


def test_a_record_that_is_not_this_machines_is_never_replayed(tree, tmp_path, runs, capsys):
    first = _check(capsys, tmp_path)
    entries = [p for p in (tmp_path / "cache").rglob("*.json") if b'"inputs"' in p.read_bytes()]
    assert len(entries) == 1
    raw = entries[0].read_bytes()
    forged = raw.replace(b'"code":1', b'"code":0')
    assert forged != raw
    entries[0].write_bytes(forged)  # the same record, its exit code changed: the MAC no longer checks
    assert _check(capsys, tmp_path) == first and runs[0] == 2


def test_the_record_names_every_file_of_the_walk_and_the_folders_above(tree, tmp_path, runs, capsys):
    from cpasync_migrate import cache_store

    _check(capsys, tmp_path)
    entries = [p for p in (tmp_path / "cache").rglob("*.json") if b'"inputs"' in p.read_bytes()]
    k = entries[0].parent.name + entries[0].name[:-len(".json")]
    rec = cache_store.read_json(str(tmp_path / "cache"), k)
    recorded = dict(map(tuple, rec["inputs"]))
    for p in ("pkg/kernel.py", "pkg/plain.py", "pkg/sub/other.py", "pkg/helper.cc", "pkg", "pkg/sub"):
        assert str(tree / p) in recorded or os.path.join(str(tree), p) in recorded, p
    assert str(tree) in recorded and str(tmp_path) in recorded
    assert not any(p.startswith(str(tmp_path / "cache")) for p in recorded), "the cache's own files are inputs"
    assert json.dumps(rec["out"])


def test_the_console_script_replays_in_a_new_process(tmp_path):
    """End to end through the console script: the second run is replayed (it imports none of the command line's
    modules) and prints the same.  The tree lives in the user's cache folder, not under pytest's folder for
    temporary files, which other tests change all the time (a folder above the tree changed less than 5 s before a
    run: no record); where a folder above it changed all the same, that is the one reason a replay may not
    happen."""
    import shutil
    import time

    cmd = [str(Path(sys.executable).parent / "cpasync-migrate"), "--check", "."]
    if not os.path.exists(cmd[0]):
        pytest.skip("no console script next to this interpreter")
    # not in a git work tree (this checkout is one), not below pytest's folder for temporary files
    base = Path.home() / ".cache" / "cpasync-migrate-tests" / f"replay-{os.getpid()}"
    t = base / "tree"
    t.mkdir(parents=True)
    try:
        (t / "k.py").write_text(LEGACY)
        env = dict(os.environ, CPASYNC_MIGRATE_CACHE_DIR=str(tmp_path / "cache"))  # not above the tree
        env.pop("CI", None)
        time.sleep(5.2)  # the tree's status-change times must be older than the margin
        since = time.time_ns() - replay.RACY_NS
        first = subprocess.run(cmd, cwd=t, env=env, capture_output=True, text=True)
        assert first.returncode == 1 and "CPA001" in first.stdout, first.stderr
        replayed = False
        for _ in range(3):
            again = subprocess.run([sys.executable, "-X", "importtime", *cmd], cwd=t, env=env,
                                   capture_output=True, text=True)
            assert again.returncode == 1 and again.stdout == first.stdout
            assert [ln for ln in again.stderr.splitlines() if not ln.startswith("import time:")] == \
                first.stderr.splitlines()
            replayed = not any("cpasync_migrate.cli" in ln for ln in again.stderr.splitlines()
                               if ln.startswith("import time:"))
            if replayed:
                break
        if not replayed:
            moved = [str(a) for a in t.parents if os.lstat(a).st_ctime_ns > since]
            assert moved, "an unchanged second run was never replayed"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_what_either_stream_is_given_is_kept_in_order_and_passed_on():
    """``writelines`` too (passed on to the stream unseen, its text would be missing from a replay); asking for the
    binary buffer spoils the record."""
    import io

    out, spoilt = [], []
    a, b = io.StringIO(), io.StringIO()
    o, e = replay._Kept(a, 1, out, spoilt), replay._Kept(b, 2, out, spoilt)
    o.write("one\n")
    e.writelines(["two\n", "three\n"])
    o.write("four\n")
    assert out == [[1, "one\n"], [2, "two\n"], [2, "three\n"], [1, "four\n"]]
    assert a.getvalue() == "one\nfour\n" and b.getvalue() == "two\nthree\n" and not spoilt
    assert o.getvalue() == "one\nfour\n"  # everything else is the stream's own
    with pytest.raises(AttributeError):
        o.buffer  # noqa: B018 - a StringIO has none; asking is what spoils
    assert spoilt == ["the binary stream of fd 1"]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_file_over_its_cpu_budget_leaves_no_record(tree, tmp_path, runs, capsys, monkeypatch, jobs):
    """Whether a file goes over its budget depends on the machine's load: such a run is never replayed (with -j 2
    the worker that met it tells the parent through its log).  The C++ front end spins on one file, as an
    analysis that never ends would; SIGALRM ends the test if the budget does not."""
    import signal

    from cpasync_migrate import cpp

    (tree / "pkg" / "spins.cc").write_text("// names ptx_cp_async\nint g() { return 0; }\n")
    real = cpp.analyze

    def spins(text, path, opts, **kw):
        while path.endswith("spins.cc"):
            pass
        return real(text, path, opts, **kw)

    def late(signum, frame):
        raise AssertionError("the budget did not end the analysis")

    monkeypatch.setattr(cpp, "analyze", spins)
    old = signal.signal(signal.SIGALRM, late)
    signal.alarm(60)
    try:
        first = _check(capsys, tmp_path, "-j", jobs, "--file-cpu-limit", "0.2")
        assert "CPA900" in first[1] + first[2], first
        _check(capsys, tmp_path, "-j", jobs, "--file-cpu-limit", "0.2")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert runs[0] == 2


def test_a_run_whose_reader_went_away_leaves_no_record(tree, tmp_path, runs, capsys, monkeypatch):
    """`... | head`: the run printed part of its report; that part is not what a replay may print.  The stream is
    the same one in both runs (the key reads its encoding), only its writes fail the first time."""
    real = sys.stdout

    class Gone:
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def fileno(self):
            raise ValueError("no descriptor")

        def __getattr__(self, name):
            return getattr(real, name)

    monkeypatch.setattr(sys, "stdout", Gone())
    assert _check(capsys, tmp_path)[0] == 1
    monkeypatch.setattr(sys, "stdout", real)
    code, out, _ = _check(capsys, tmp_path)
    assert runs[0] == 2 and code == 1 and "CPA001" in out, "the half-printed run was replayed"


def test_a_worker_that_cannot_log_what_it_read_leaves_no_record(tree, tmp_path, runs, capsys, monkeypatch):
    """Its reads would be missing from the record: the worker says so through the alarm pipe."""
    import json as real_json

    class Broken:
        loads = staticmethod(real_json.loads)

        @staticmethod
        def dumps(obj):
            raise OSError(28, "No space left on device")

    (tree / "ruff.toml").write_text("line-length = 60\n")  # read by the workers only
    monkeypatch.setattr(inputs, "json", Broken)
    _check(capsys, tmp_path, "--diff", "-j", "2")
    monkeypatch.setattr(inputs, "json", real_json)
    _check(capsys, tmp_path, "--diff", "-j", "2")
    assert runs[0] == 2


def test_the_progress_bar_of_a_terminal_is_not_part_of_the_record(tree, tmp_path, runs, capsys, monkeypatch):
    """On a terminal a long run shows a bar on stderr that erases itself: the record keeps the report only, and the
    replay prints what the terminal shows once the bar is gone."""
    import io

    from cpasync_migrate import progress

    for i in range(progress.PROGRESS_MIN_FILES):
        (tree / "pkg" / f"k{i}.py").write_text(LEGACY)

    class Terminal(io.StringIO):
        encoding, errors = "utf-8", "strict"

        def isatty(self):
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    first = replay.main(["--check", "--cache-dir", str(tmp_path / "cache"), "pkg"])
    shown = terminal.getvalue()
    assert "\x1b[" in shown and "cpasync-migrate" in shown, "no progress bar was drawn"
    terminal.seek(0)
    terminal.truncate()
    assert replay.main(["--check", "--cache-dir", str(tmp_path / "cache"), "pkg"]) == first and runs[0] == 1
    again = terminal.getvalue()
    assert "\x1b[" not in again and again and again in shown  # the report's lines, in the order printed


def test_the_tree_s_own_api_definition_is_an_input_where_the_walk_does_not_look(tree, tmp_path, runs, capsys):
    """The target follows the intrinsic's definition in the scanned tree (``cli.tree_definition``), looked for
    in a folder the walk may skip (ignored here): a definition made there after a record runs the run again."""
    (tree / "pkg" / ".gitignore").write_text("language/\n")
    (tree / "pkg" / "language").mkdir()
    first = _check(capsys, tmp_path)
    assert _check(capsys, tmp_path) == first and runs[0] == 1
    (tree / "pkg" / "language" / "tir").mkdir()
    (tree / "pkg" / "language" / "tir" / "op.py").write_text(
        "def ptx_cp_async(dst_access_ptr, src_access_ptr, num_elems, predicate=None):\n    pass\n")
    second = _check(capsys, tmp_path)
    assert runs[0] == 2 and "defines the 0.1.9 API itself" in second[2], second[2][-400:]


def test_a_file_edited_just_before_the_run_refuses_the_record_first(tmp_path, monkeypatch):
    """The files the run analysed afresh are looked at first: the one just edited refuses the record before the
    thousands of other inputs are looked at, as looking at all of them would."""
    fresh = tmp_path / "edited.py"
    fresh.write_text("x = 1\n")
    seen = inputs.Observed()
    seen.reads.add(str(fresh))
    seen.suspects.append(str(fresh))
    saved = []
    monkeypatch.setattr("cpasync_migrate.cache_store.write_json", lambda *a: saved.append(a))
    import time

    replay._save(str(tmp_path / "cache"), "0" * 64, [], seen, [], 0, time.time_ns())  # all of them: refused
    assert saved == []
    monkeypatch.setattr(replay, "_input_paths", lambda *a: pytest.fail("looked at every input"))
    replay._save(str(tmp_path / "cache"), "0" * 64, [], seen, [], 0, time.time_ns())
    assert saved == []


def test_an_observer_that_fails_never_fails_the_run_and_leaves_no_record(tree, tmp_path, runs, capsys, monkeypatch):
    def broken(event, args):
        raise RuntimeError("a bug in the observer")

    monkeypatch.setattr(inputs, "_classify", broken)
    first = _check(capsys, tmp_path)
    assert first[0] == 1 and "CPA001" in first[1]
    monkeypatch.undo()
    monkeypatch.setattr(replay, "RACY_NS", -3600 * 10**9)
    monkeypatch.setattr(replay, "TOP", str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.chdir(tree)
    count = [0]
    real = cli.main
    monkeypatch.setattr(cli, "main", lambda argv=None: count.__setitem__(0, count[0] + 1) or real(argv))
    assert _check(capsys, tmp_path) == first and count[0] == 1, "a run the observer failed on was recorded"


def test_bytecode_is_not_an_input_but_its_source_is():
    assert inputs._classify("open", ("/p/q/__pycache__/m.cpython-311.pyc", "rb", 0)) == ("r", "/p/q/m.py")
    assert inputs._classify("open", ("/p/q/__pycache__/m.cpython-311.opt-2.pyc", "rb", 0)) == ("r", "/p/q/m.py")
    assert inputs._classify("open", ("/p/q/__pycache__/m.cpython-311.pyc.99", "wb", os.O_WRONLY | os.O_CREAT)) is None
    assert inputs._classify("os.mkdir", ("/p/q/__pycache__", 0o777, -1)) is None
    assert inputs._classify("open", ("/p/q/m.py", "w", os.O_WRONLY))[0] == "c"
    assert inputs._classify("os.mkdir", ("/p/q/out", 0o777, -1))[0] == "c"


def test_a_run_whose_current_folder_is_gone_is_a_usage_error(tmp_path, monkeypatch, capsys):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    code = replay.main(["--check", "--cache-dir", str(tmp_path / "cache"), str(tmp_path)])
    assert code == 3 and "the current folder cannot be found" in capsys.readouterr().err


def test_explain_says_what_happened_outside_the_record(tree, tmp_path, runs, capsys, monkeypatch):
    monkeypatch.setattr(replay, "EXPLAIN", True)
    first = _check(capsys, tmp_path)
    assert "run record: not replayed: no record" in first[2] and "run record: left: " in first[2]
    second = _check(capsys, tmp_path)
    assert "run record: replayed: " in second[2] and "run record: left" not in second[2]
    assert second[1] == first[1] and runs[0] == 1
    (tree / "pkg" / "plain.py").write_text(LEGACY)
    third = _check(capsys, tmp_path)
    assert f"run record: not replayed: {tree / 'pkg' / 'plain.py'} changed" in third[2]
    fourth = _check(capsys, tmp_path, "-o", str(tmp_path / "report.txt"))
    assert "run record: none left: a change" in fourth[2]


def test_the_folders_above_an_import_path_are_no_inputs_but_those_above_the_tree_are(tmp_path, monkeypatch):
    """A module's folders up to its ``sys.path`` entry are inputs, not those above (an interpreter below /tmp would
    never replay); a path of the tree keeps every folder above it, whatever ``sys.path`` holds."""
    lib = tmp_path / "outer" / "venv" / "site"
    (lib / "pkg").mkdir(parents=True)
    mod = lib / "pkg" / "m.py"
    mod.write_text("")
    tree = tmp_path / "outer" / "tree"
    tree.mkdir()
    monkeypatch.setattr("cpasync_migrate.syspath.AS_GIVEN", [str(lib)])
    monkeypatch.setattr(replay, "TOP", "/")
    monkeypatch.chdir(tree)
    seen = inputs.Observed()
    seen.reads.update({str(mod), str(tree / "k.py")})
    got = replay._input_paths(["--check", "."], seen, str(tmp_path / "cache"))
    assert {str(mod), str(lib / "pkg"), str(lib)} <= got
    assert str(lib.parent) not in got, "a folder above an import path's entry is an input"
    assert {str(tree), str(tmp_path / "outer"), str(tmp_path), "/"} <= got


def test_in_ci_no_record_is_left_nor_read(tree, tmp_path, runs, capsys, monkeypatch):
    """A CI job's checkout is fresh: a record could never be replayed there, and each would grow the cache."""
    monkeypatch.setenv("CI", "true")
    first = _check(capsys, tmp_path)
    assert _check(capsys, tmp_path) == first and runs[0] == 2
    assert not [p for p in (tmp_path / "cache").rglob("*.json") if b'"inputs"' in p.read_bytes()]


# Every place the package asks the file system about a path without opening or listing it (the audit events do not
# see a stat), with why a run record still sees a change there.  A new such place fails the test below until it is
# reviewed and listed: a lookup outside the folders that are inputs must note its path (``inputs.note``).
_LOOKUPS = {
    "a path named on the command line, or a folder above one (both inputs)": [
        "run.py:_check_arguments", "run.py:_choose_files", "run.py:_choose_target", "run.py:_stdin_name",
        "run.py:settings_text", "run.py:_identity", "run.py:_once", "run.py:_unreachable", "runner.py:__init__",
        "runner.py:_discovered", "runner.py:run_files", "gitrev.py:changed_since", "gitrev.py:since_filter",
        "gitrev.py:since_filter.changed", "tree.py:tree_of", "config.py:split_config_arguments",
    ],
    "a file the walk found or an entry of a folder it listed (inputs)": [
        "discovery.py:_walk", "discovery.py:_pass_over", "discovery.py:_pyproject_seen", "discovery.py:_git_files",
        "discovery.py:_git_candidates", "discovery.py:_git_nested", "discovery.py:discover", "prefilter.py:select",
        "runner.py:admit", "files.py:read_source", "files.py:decode", "files.py:describe_special",
    ],
    "an upward lookup from an input (every folder above an input is one)": [
        "config.py:find_pyproject", "config.py:_is_file", "config.py:_for_file", "config.py:_real_dir",
        "config.py:for_path", "config.py:for_run", "clang_format.py:_nearest", "clang_format.py:style_of",
        "line_length.py:_black_root", "line_length.py:_own_ruff_file", "line_length.py:_load",
        "discovery.py:_git_root_patterns", "discovery.py:_maybe_in_git",
    ],
    "the package's own code and data (inputs up to their import path's entry)": [
        "cache.py:package_digest", "codes.py:pages_dir", "rules.py:rules_dir", "cpp/cpprules.py:load_cpp_rules",
        "cpp/source.py:_cpp_language_pointer",
    ],
    "write mode only (it leaves no record)": [
        "files.py:_read_only", "files.py:_replace", "files.py:_unchanged", "files.py:write_target",
        "safe_write.py:_refuse",
    ],
    "the cache's own bookkeeping and the records themselves (no inputs)": [
        "cache_store.py:_prune", "cache_store.py:_prune_logs", "replay.py:_input_paths", "replay.py:_save",
        "replay.py:_stat_key",
    ],
    "notes its paths (inputs.note)": [
        "cli.py:tree_definition",
        "safe_write.py:links_below",  # config._cache_dir_inside notes the configured cache folder
    ],
}


def test_every_stat_only_lookup_of_the_package_is_reviewed_for_run_records():
    import ast

    root = Path(replay.__file__).parent
    probes = {"exists", "isfile", "isdir", "lexists", "is_file", "is_dir", "islink", "access", "stat", "lstat",
              "is_symlink"}
    found = set()
    for path in root.rglob("*.py"):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("verify/"):  # --verify runs leave no record
            continue
        where: list = []

        class Visit(ast.NodeVisitor):
            def visit_FunctionDef(self, node):
                where.append(node.name)
                self.generic_visit(node)
                where.pop()

            visit_AsyncFunctionDef = visit_FunctionDef

            def visit_Call(self, node):
                if isinstance(node.func, ast.Attribute) and node.func.attr in probes:
                    found.add(f"{rel}:{'.'.join(where) or '<module>'}")
                self.generic_visit(node)

        Visit().visit(ast.parse(path.read_text(encoding="utf-8")))
    reviewed = {site for sites in _LOOKUPS.values() for site in sites}
    assert sorted(found - reviewed) == [], "a new lookup: review it for run records (replay.py) and list it above"
    assert sorted(reviewed - found) == [], "a listed lookup is gone: take it off the list"


def test_a_link_planted_on_the_way_to_the_configured_cache_folder_runs_the_run_again(tree, tmp_path, runs, capsys,
                                                                                     monkeypatch):
    """The configuration's cache folder must be reached without links (``config._cache_dir_inside``); the walk
    skips cache folders, so the folders on the way are noted as inputs: a link planted inside one is seen."""
    monkeypatch.setenv("CPASYNC_MIGRATE_CACHE_DIR", str(tmp_path / "cache"))  # the records' folder
    (tree / "pyproject.toml").write_text('[tool.cpasync-migrate]\ncache-dir = ".cache/a/cpa"\n')
    (tree / ".cache" / "a").mkdir(parents=True)
    first = _main(capsys, "--check", "pkg")
    assert _main(capsys, "--check", "pkg") == first and runs[0] == 1
    (tree / ".cache" / "a").rename(tree / ".cache" / "b")
    (tree / ".cache" / "a").symlink_to(tree / ".cache" / "b")
    second = _main(capsys, "--check", "pkg")
    assert runs[0] == 2 and second[0] == 3 and "is a link" in second[2], second
