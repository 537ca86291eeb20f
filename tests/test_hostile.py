"""Hostile trees: planted modules, links, hard links, owners, read-only files, FIFOs and devices,
big files, broken configuration, odd file names, and --diff --verify on a refused file.

Every run of the tool here is a separate process with a timeout that only a hang reaches.
"""
from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import run_cli
from test_cli import LEGACY, MANUAL, MIGRATED_CALL

# The attack suites run in CI with -m slow (.ci/run), outside the default run.
pytestmark = pytest.mark.slow

HANG = 120  # seconds: a run that takes this long is a hang, not a slow run
EXE = Path(sys.executable).with_name("cpasync-migrate")


def cli(*args, cwd, env=None, script=False):
    """The tool in a separate process, as ``python -m cpasync_migrate`` or as the console script."""
    cmd = [str(EXE)] if script else [sys.executable, "-m", "cpasync_migrate"]
    return subprocess.run([*cmd, *map(str, args)], cwd=cwd, timeout=HANG, capture_output=True, text=True,
                          env=_env(env))


def _env(extra):
    e = dict(os.environ)
    e.pop("FORCE_COLOR", None)
    e["NO_COLOR"] = "1"
    e.update(extra or {})
    return e


def put(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def migrated(tmp_path: Path) -> str:
    """What write mode makes of LEGACY (from a run on a plain copy)."""
    ref = put(tmp_path / "reference" / "k.py", LEGACY)
    r = cli(ref, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    out = ref.read_text()
    assert MIGRATED_CALL in out
    return out


# ------------------------------------------------------------------ no code of the user's is run

PLANT = 'open({mark!r} + "/" + __name__ + "-" + {where!r}, "w").close()\n'


def _plant(folder: Path, where: str, marks: Path, package: bool = False) -> None:
    for name in ("cupy", "numpy"):
        put(folder / f"{name}.py", PLANT.format(mark=str(marks), where=where))
    if package:  # a shadow of the tool itself: what `-m cpasync_migrate.verify.gpu` would find first in the folder
        for sub in ("__init__.py", "verify/__init__.py", "verify/gpu.py", "__main__.py"):
            put(folder / "cpasync_migrate" / sub, PLANT.format(mark=str(marks), where=where))


@pytest.fixture
def planted(tmp_path):
    """cwd/ and cwd/tree/ hold cupy.py, numpy.py (and, for the console-script runs, a cpasync_migrate
    package); a *real-looking* cupy elsewhere, on PYTHONPATH, says no GPU and leaves its own marker:
    so the GPU probe and the GPU worker do start, and must import that one and nothing planted."""
    marks = tmp_path / "marks"
    marks.mkdir()
    cwd = tmp_path / "cwd"
    _plant(cwd, "cwd", marks, package=True)
    _plant(cwd / "tree", "tree", marks, package=True)
    put(cwd / "tree" / "k.py", LEGACY)
    site = tmp_path / "site"
    put(site / "cupy" / "__init__.py", textwrap.dedent(f'''\
        import os
        open(os.path.join({str(marks)!r}, "legit-cupy-%d" % os.getpid()), "w").close()
        class _Runtime:
            @staticmethod
            def getDeviceCount():
                return 0
        class cuda:
            runtime = _Runtime
        __version__ = "0"
        '''))
    return cwd, marks, site


MODES = [("write",), ("--check",), ("--diff",)]
DEVICES = [(), ("--verify", "--device", "cpu"), ("--verify", "--device", "gpu"), ("--verify", "--device", "auto"),
           ("--verify",)]


@pytest.mark.parametrize("script", [True, False], ids=["console-script", "python-m"])
def test_no_planted_module_is_imported_in_any_mode_or_device(planted, script):
    cwd, marks, site = planted
    if not script:
        # `python -m cpasync_migrate` in a folder holding a cpasync_migrate package runs that package:
        # Python picks the module before any code of the tool runs. The console script is immune.
        import shutil

        shutil.rmtree(cwd / "cpasync_migrate")
    legit_runs = 0
    for mode in MODES:
        for dev in DEVICES:
            if not script and dev in ((), ("--verify", "--device", "cpu")):
                continue  # the python -m runs cover the child processes; the console script covers all
            (cwd / "tree" / "k.py").write_text(LEGACY)
            args = [*(m for m in mode if m != "write"), *dev, "-j", "2", "tree"]
            before = {p.name for p in marks.iterdir() if p.name.startswith("legit")}
            r = cli(*args, cwd=cwd, env={"PYTHONPATH": str(site)}, script=script)
            assert r.returncode in (0, 1, 2), r.stderr
            assert "Traceback" not in r.stderr, r.stderr
            planted_marks = sorted(p.name for p in marks.iterdir() if not p.name.startswith("legit"))
            assert planted_marks == [], (args, planted_marks)
            new = {p.name for p in marks.iterdir() if p.name.startswith("legit")} - before
            if "gpu" in dev or "auto" in dev or dev == ("--verify",):
                # the probe (auto) or the worker (gpu) ran and found the cupy on PYTHONPATH
                assert new, (args, r.stderr[-1500:])
                legit_runs += 1
    assert legit_runs


# ------------------------------------------------------------------ links


def test_symlink_and_its_target_are_one_file_processed_once_and_the_link_stays(tmp_path):
    want = migrated(tmp_path)
    tree = tmp_path / "tree"
    put(tree / "a.py", LEGACY)
    os.symlink("a.py", tree / "link_a.py")
    os.symlink("../a.py", put(tree / "sub" / "x.txt", "").parent / "up.py")
    for jobs in ("1", "2"):
        r = cli("--check", "-v", "-j", jobs, "tree", cwd=tmp_path)
        sites = [ln for ln in r.stdout.splitlines() if "CPA001" in ln]
        assert sites == [ln for ln in sites if ln.startswith("tree/a.py:")] and len(sites) == 1, r.stdout
        assert "skipped tree/link_a.py: the same file as tree/a.py" in r.stderr
    r = cli("-j", "2", "tree", cwd=tmp_path)
    assert r.returncode == 0, r.stdout
    assert (tree / "link_a.py").is_symlink() and os.readlink(tree / "link_a.py") == "a.py"
    assert (tree / "sub" / "up.py").is_symlink()
    assert (tree / "a.py").read_text() == want


def test_link_alone_is_written_through_and_never_replaced(tmp_path):
    want = migrated(tmp_path)
    tree = tmp_path / "tree"
    put(tree / "excluded" / "real.py", LEGACY)
    os.symlink("excluded/real.py", tree / "alias.py")
    r = cli("--exclude", "excluded", "tree", cwd=tmp_path)
    assert r.returncode == 0, r.stdout
    assert (tree / "alias.py").is_symlink()
    assert (tree / "excluded" / "real.py").read_text() == want


def test_link_to_a_file_outside_the_scanned_paths_is_not_written(tmp_path):
    outside = put(tmp_path / "outside" / "o.py", LEGACY)
    tree = tmp_path / "tree"
    put(tree / "a.py", LEGACY)
    os.symlink("../outside/o.py", tree / "out.py")
    r = cli("tree", cwd=tmp_path)
    assert r.returncode == 2
    assert "tree/out.py:1:1: CPA900 a symbolic link to" in r.stdout and "outside the scanned paths" in r.stdout
    assert outside.read_text() == LEGACY and (tree / "out.py").is_symlink()
    assert MIGRATED_CALL in (tree / "a.py").read_text()  # the others are still written
    # --check still reports what is behind the link
    r = cli("--check", "tree", cwd=tmp_path)
    assert "tree/out.py:9:9: CPA001" in r.stdout
    # named explicitly, the link's file is in the scanned paths: written through, the link stays
    r = cli("tree/out.py", cwd=tmp_path)
    assert r.returncode == 0, r.stdout
    assert (tree / "out.py").is_symlink() and MIGRATED_CALL in outside.read_text()


def test_hard_links_are_processed_once_and_kept(tmp_path):
    want = migrated(tmp_path)
    tree = tmp_path / "tree"
    h1 = put(tree / "h1.py", LEGACY)
    os.link(h1, tree / "h2.py")
    ino = h1.stat().st_ino
    r = cli("--check", "-v", "tree", cwd=tmp_path)
    assert [ln.split(":")[0] for ln in r.stdout.splitlines() if "CPA001" in ln] == ["tree/h1.py"]
    assert "skipped tree/h2.py: the same file as tree/h1.py" in r.stderr
    r = cli("-j", "2", "tree", cwd=tmp_path)
    assert r.returncode == 0, r.stdout
    for name in ("h1.py", "h2.py"):
        st = (tree / name).stat()
        assert (st.st_ino, st.st_nlink) == (ino, 2)
        assert (tree / name).read_text() == want
    assert not [p for p in tree.iterdir() if p.name.startswith(".cpasync-")]


# ------------------------------------------------------------------ identity: owner, read-only, in place


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file another owner")
def test_owner_and_group_are_kept(tmp_path):
    f = put(tmp_path / "k.py", LEGACY)
    os.chown(f, 4321, 8765)
    os.chmod(f, 0o640)
    r = cli("k.py", cwd=tmp_path)
    assert r.returncode == 0, r.stdout
    st = f.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4321, 8765, 0o640)
    assert MIGRATED_CALL in f.read_text()


def test_read_only_file_is_reported_not_overridden_unless_allowed(tmp_path):
    f = put(tmp_path / "tree" / "ro.py", LEGACY)
    other = put(tmp_path / "tree" / "rw.py", LEGACY)
    os.chmod(f, 0o444)
    r = cli("tree", cwd=tmp_path)
    assert r.returncode == 2
    assert "tree/ro.py:1:1: CPA900 read-only (mode 0444); not written" in r.stdout
    assert f.read_text() == LEGACY and MIGRATED_CALL in other.read_text()
    r = cli("--allow-read-only", "tree", cwd=tmp_path)
    assert r.returncode == 0, r.stdout
    assert MIGRATED_CALL in f.read_text() and stat.S_IMODE(f.stat().st_mode) == 0o444
    # the same switch in the configuration
    os.chmod(f, 0o644)
    f.write_text(LEGACY)
    os.chmod(f, 0o444)
    put(tmp_path / "tree" / "pyproject.toml", "[tool.cpasync-migrate]\nallow-read-only = true\n")
    assert cli("tree", cwd=tmp_path).returncode == 0
    assert MIGRATED_CALL in f.read_text()


def test_owner_that_cannot_be_given_falls_back_to_writing_in_place(tmp_path, monkeypatch):
    from cpasync_migrate import engine

    f = put(tmp_path / "k.py", LEGACY)
    ino = f.stat().st_ino

    def refuse(fd, uid, gid):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "fchown", refuse)
    # the file seems to belong to somebody else, whom this process cannot give a new file
    monkeypatch.setattr(os, "fstat", _foreign_fstat(os.fstat, f))
    o = engine.process_file(str(f), engine.RunSettings(mode="write"))
    assert o.written and o.error is None, o.error
    assert f.stat().st_ino == ino, "written in place"
    assert MIGRATED_CALL in f.read_text()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".cpasync-")]


def _foreign_fstat(real, f: Path):
    """fstat that reports ``f`` (by inode) as owned by uid/gid 4321."""
    ino = f.stat().st_ino

    def fstat(fd):
        st = real(fd)
        if st.st_ino != ino:
            return st
        fields = list(st)
        fields[4], fields[5] = 4321, 4321
        return os.stat_result(fields)

    return fstat


def test_failed_in_place_write_puts_the_old_bytes_back(tmp_path, monkeypatch):
    from cpasync_migrate import engine

    h1 = put(tmp_path / "h1.py", LEGACY)
    os.link(h1, tmp_path / "h2.py")
    real = os.pwrite
    calls = []

    def half_then_full_disk(fd, data, offset):
        calls.append(len(data))
        if len(calls) == 1:
            real(fd, bytes(data[: len(data) // 2]), offset)  # half of the new text reaches the file
            raise OSError(28, "No space left on device")
        return real(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", half_then_full_disk)
    o = engine.process_file(str(h1), engine.RunSettings(mode="write"))
    assert o.error and "No space left on device" in o.error and "old bytes put back" in o.error
    assert not o.written
    assert h1.read_text() == LEGACY and (tmp_path / "h2.py").read_text() == LEGACY
    assert h1.stat().st_nlink == 2
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".cpasync-")], "no copy left behind"


def test_space_for_an_in_place_write_is_reserved_before_any_byte_changes(tmp_path, monkeypatch):
    from cpasync_migrate import engine

    h1 = put(tmp_path / "h1.py", LEGACY)
    os.link(h1, tmp_path / "h2.py")

    def full(fd, offset, length):
        raise OSError(28, "No space left on device")

    def never(*a):
        raise AssertionError("wrote into the file after the space could not be reserved")

    monkeypatch.setattr(os, "posix_fallocate", full)
    monkeypatch.setattr(os, "pwrite", never)
    o = engine.process_file(str(h1), engine.RunSettings(mode="write"))
    assert "No space left on device" in o.error and "file unchanged" in o.error
    assert h1.read_text() == LEGACY


# ------------------------------------------------------------------ FIFOs, sockets, devices


@pytest.fixture
def specials(tmp_path):
    tree = tmp_path / "tree"
    put(tree / "a.py", LEGACY)
    put(tree / "deep" / "b.py", LEGACY)
    os.mkfifo(tree / "fifo.py")
    os.mkfifo(tree / "deep" / "pipe.cc")
    os.symlink("/dev/zero", tree / "zero.py")
    os.symlink("/dev/urandom", tree / "deep" / "rand.cu")
    os.symlink("../fifo.py", tree / "deep" / "to_fifo.py")
    os.symlink("nowhere.py", tree / "dangling.py")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tree / "sock.py"))
    except OSError:
        pass  # path too long for a socket here; the FIFOs and devices remain
    yield tmp_path
    sock.close()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_fifos_sockets_and_devices_in_a_tree_are_skipped_and_the_rest_is_written(specials, jobs):
    tmp_path = specials
    r = cli("-v", "-j", jobs, "tree", cwd=tmp_path)  # the timeout is the hang guard
    assert r.returncode == 0, r.stdout + r.stderr
    for name in ("a.py", "deep/b.py"):
        assert MIGRATED_CALL in (tmp_path / "tree" / name).read_text()
    err = r.stderr
    assert "skipped tree/fifo.py: a FIFO (named pipe); only regular files are read" in err
    assert "skipped tree/deep/pipe.cc: a FIFO" in err
    assert "skipped tree/zero.py: a symbolic link to a character device" in err
    assert "skipped tree/deep/rand.cu: a symbolic link to a character device" in err
    assert "skipped tree/deep/to_fifo.py: a symbolic link to a FIFO" in err
    assert "skipped tree/dangling.py: a broken symbolic link" in err
    if (tmp_path / "tree" / "sock.py").exists():
        assert "skipped tree/sock.py: a socket" in err
    assert stat.S_ISFIFO(os.lstat(tmp_path / "tree" / "fifo.py").st_mode)
    assert (tmp_path / "tree" / "zero.py").is_symlink()


@pytest.mark.parametrize("name", ["tree/fifo.py", "tree/zero.py", "tree/deep/rand.cu", "tree/deep/to_fifo.py"])
def test_special_file_named_explicitly_is_an_error_naming_it(specials, name):
    r = cli("--check", name, "tree/a.py", cwd=specials)
    assert r.returncode == 2
    line = next(ln for ln in r.stdout.splitlines() if "CPA900" in ln)
    assert line.startswith(f"{name}:1:1: CPA900 ") and "not a regular file; not read" in line
    assert "tree/a.py:9:9: CPA001" in r.stdout


def test_reader_refuses_a_special_file_without_blocking(tmp_path):
    from cpasync_migrate import files

    os.mkfifo(tmp_path / "p.py")
    with pytest.raises(files.FileError, match="FIFO"):
        files.read_bytes(str(tmp_path / "p.py"))
    with pytest.raises(files.FileError, match="character device"):
        files.read_bytes("/dev/zero")


# ------------------------------------------------------------------ size limit


def test_file_over_the_size_limit_is_a_file_error_not_a_silent_pass(tmp_path):
    big = put(tmp_path / "tree" / "big.py", LEGACY + "# padding\n" * 300)
    put(tmp_path / "tree" / "big_unrelated.py", "x = 1\n" * 1000)
    small = put(tmp_path / "tree" / "small.py", LEGACY)
    r = cli("--check", "--max-file-size", "2k", "tree", cwd=tmp_path)
    assert r.returncode == 2, r.stdout
    size = big.stat().st_size
    assert (f"tree/big.py:1:1: CPA900 {size} bytes, over the size limit of 2048 bytes; not analysed"
            in r.stdout), r.stdout
    assert "big_unrelated" not in r.stdout  # no intrinsic in it: nothing to report
    assert "tree/small.py:9:9: CPA001" in r.stdout
    r = cli("tree", "--max-file-size", "2k", cwd=tmp_path)
    assert r.returncode == 2 and big.read_text().startswith(LEGACY) and MIGRATED_CALL in small.read_text()
    # the configured limit, and a limit raised on the command line
    put(tmp_path / "tree" / "pyproject.toml", '[tool.cpasync-migrate]\nmax-file-size = "2KB"\n')
    assert "over the size limit of 2048 bytes" in cli("--check", "tree", cwd=tmp_path).stdout
    r = cli("--check", "--max-file-size", "1MB", "tree", cwd=tmp_path)
    assert r.returncode == 1 and "tree/big.py:9:9: CPA001" in r.stdout
    r = cli("--check", "--max-file-size", "0", "tree", cwd=tmp_path)
    assert "tree/big.py:9:9: CPA001" in r.stdout


def test_default_size_limit(tmp_path):
    from cpasync_migrate.files import DEFAULT_MAX_FILE_SIZE

    pad = "# " + "x" * 97 + "\n"
    big = put(tmp_path / "big.py", LEGACY + pad * (DEFAULT_MAX_FILE_SIZE // len(pad) + 1))
    r = cli("--check", ".", cwd=tmp_path)
    assert r.returncode == 2
    assert f"big.py:1:1: CPA900 {big.stat().st_size} bytes, over the size limit of {DEFAULT_MAX_FILE_SIZE}" in r.stdout


def test_bad_size_on_the_command_line_is_a_usage_error(tmp_path):
    put(tmp_path / "k.py", LEGACY)
    r = cli("--check", "--max-file-size", "huge", "k.py", cwd=tmp_path)
    assert r.returncode == 3 and "--max-file-size 'huge'" in r.stderr and "Traceback" not in r.stderr


# ------------------------------------------------------------------ configuration mistakes


@pytest.mark.parametrize("content, key", [
    (b"[tool]\ncpasync-migrate = 5\n", "tool.cpasync-migrate"),
    (b"tool = 5\n", "tool"),
    (b"[tool.cpasync-migrate]\nexclude = [1, 2]\n", "exclude"),
    (b"[tool.cpasync-migrate]\nextend-exclude = \"x\"\n", "extend-exclude"),
    (b"[tool.cpasync-migrate]\njobs = true\n", "jobs"),
    (b"[tool.cpasync-migrate]\njobs = 0\n", "jobs"),
    (b"[tool.cpasync-migrate]\nstyle = \"fancy\"\n", "style"),
    (b"[tool.cpasync-migrate]\ncache = \"yes\"\n", "cache"),
    (b"[tool.cpasync-migrate]\nmax-file-size = \"big\"\n", "max-file-size"),
    (b"[tool.cpasync-migrate]\ntarget = \"nonsense\"\n", "target"),
    (b"[tool.cpasync-migrate]\nfrom = \"nonsense\"\n", "from"),
    (b"[tool.cpasync-migrate]\nbogus = 1\n", "bogus"),
    (b"[tool.cpasync-migrate]\ntarget = \"0.1.8\"\n# caf\xe9\n", "UTF-8"),
    (b"[tool.cpasync-migrate\n", "TOML"),
])
def test_config_mistake_is_one_line_naming_file_and_key_with_exit_3(tmp_path, content, key):
    (tmp_path / "pyproject.toml").write_bytes(content)
    put(tmp_path / "k.py", LEGACY)
    for args in (("--check", "k.py"), ("--config", "pyproject.toml", "--check", "k.py")):
        r = cli(*args, cwd=tmp_path)
        assert r.returncode == 3, (r.returncode, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and r.stdout == ""
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, r.stderr
        assert "pyproject.toml" in lines[0] and key in lines[0], lines[0]


# ------------------------------------------------------------------ odd file names in --diff

ODD = ["with space.py", "with\ttab.py", "new\nline.py", 'quote".py', "back\\slash.py", "ünïcode name.py",
       "trailing .py", " lead.py"]


@pytest.mark.parametrize("tool", ["git", "patch"])
def test_diff_with_odd_file_names_applies(tmp_path, tool):
    names = ODD + [os.fsdecode(b"latin\xe9.py")]
    for n in names:
        put(tmp_path / "pkg" / n, LEGACY)
    r = run_cli("--diff", "pkg", cwd=tmp_path, text=False)
    assert r.returncode == 1, r.stderr
    patch = tmp_path / "fix.patch"
    patch.write_bytes(r.stdout)
    if tool == "git":
        subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
        check = ["git", "apply", "--check", "fix.patch"]
        apply = ["git", "apply", "fix.patch"]
    else:
        check = ["patch", "-p1", "--dry-run", "-i", "fix.patch"]
        apply = ["patch", "-p1", "-s", "-i", "fix.patch"]
    c = subprocess.run(check, cwd=tmp_path, capture_output=True, timeout=HANG)
    assert c.returncode == 0, c.stderr + c.stdout
    a = subprocess.run(apply, cwd=tmp_path, capture_output=True, timeout=HANG)
    assert a.returncode == 0, a.stderr + a.stdout
    for n in names:
        assert MIGRATED_CALL in (tmp_path / "pkg" / n).read_text(), repr(n)
    assert sorted(os.listdir(tmp_path / "pkg")) == sorted(names), "no stray files from misread names"


def test_diff_header_quoting_matches_git():
    from cpasync_migrate.report import diff_name

    assert diff_name("a/with\ttab.py") == '"a/with\\ttab.py"'
    assert diff_name("a/new\nline.py") == '"a/new\\nline.py"'
    assert diff_name('a/q".py') == '"a/q\\".py"'
    assert diff_name("a/b\\s.py") == '"a/b\\\\s.py"'
    assert diff_name("a/with space.py") == "a/with space.py\t"
    assert diff_name("a/plain.py") == "a/plain.py"
    assert diff_name("a/ü.py") == "a/ü.py"
    assert diff_name("a/ü\t.py") == '"a/\\303\\274\\t.py"'


# ------------------------------------------------------------------ --diff --verify and refused files


def _wrong_rewrite(monkeypatch):
    """Make the Python front end's fix give the source pointer the write mask (the verifier must catch it)."""
    from cpasync_migrate import python as pyfe
    from cpasync_migrate.findings import Edit

    real = pyfe.analyze

    def wrong(text, path, options, **kw):  # (kw: the engine's ``fixes``)
        a = real(text, path, options, **kw)
        for f in a.findings:
            if f.fix is not None:
                f.fix.edits[:] = [Edit(e.start, e.end, e.replacement.replace(", 8, 1)", ", 8, 2)"))
                                  for e in f.fix.edits]
        return a

    monkeypatch.setattr(pyfe, "analyze", wrong)


def test_diff_verify_leaves_out_a_file_write_mode_would_refuse(tmp_path, monkeypatch, capsys):
    from cpasync_migrate import cli as climod

    bad = put(tmp_path / "bad.py", LEGACY)
    _wrong_rewrite(monkeypatch)
    monkeypatch.chdir(tmp_path)
    code = climod.main(["--diff", "--verify", "--device", "cpu", "-j", "1", "--no-cache", "bad.py"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == "", "no hunk of a file that write mode would refuse"
    assert "bad.py:1:1: CPA900 verification found a mismatch; its diff is left out" in err
    assert "mismatch" in err
    assert bad.read_text() == LEGACY
    # write mode refuses the same file
    code = climod.main(["--verify", "--device", "cpu", "-j", "1", "--no-cache", "bad.py"])
    capsys.readouterr()
    assert code == 2 and bad.read_text() == LEGACY


def test_diff_verify_still_shows_a_proven_file(tmp_path):
    put(tmp_path / "k.py", LEGACY)
    r = cli("--diff", "--verify", "--device", "cpu", "k.py", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "+++ b/k.py" in r.stdout and "equivalent" in r.stderr
    assert "left out" not in r.stderr


def test_manual_file_is_not_written(tmp_path):
    f = put(tmp_path / "m.py", MANUAL)
    assert cli("m.py", cwd=tmp_path).returncode == 1
    assert f.read_text() == MANUAL
