"""Unbounded work a tree can ask for through the small files it holds besides kernels: a ``.gitignore`` that
is a FIFO, a link to ``/dev/zero`` or a sparse 10 GB file; a ``pyproject.toml`` or ``ruff.toml`` whose
TOML takes the parser minutes (one long dotted key) or overflows its stack (deep nesting), or that is
huge.  Each run ends in bounded time with a message naming the file.

Every run of the tool is a separate process with a timeout that only a hang reaches.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from test_cli import LEGACY
from test_hostile import cli, put

# The attack suites run in CI with -m slow (.ci/run), outside the default run.
pytestmark = pytest.mark.slow


def sites(stdout: str) -> list[str]:
    return sorted(ln.split(":")[0] for ln in stdout.splitlines() if ": CPA" in ln)


def _sparse(path: Path, size: int) -> None:
    with open(path, "wb") as fh:
        fh.truncate(size)


# A key of 60,000 dotted parts: 120 KB that tomllib takes minutes over (30,000 parts: 46 s; 8,000: 3.5 s).
LONG_KEY = "a." * 60_000 + "b = 1\n"


def test_gitignore_that_is_a_fifo_a_device_or_huge_is_not_read(tmp_path):
    """Outside git the walker reads each folder's .gitignore.  (Before: a FIFO there stalled the walk for
    ever, a link to /dev/zero read for ever.)  Now only a regular file of at most 1 MiB is read; -v names
    the others, and the walk goes on with the rest of the rules."""
    tree = tmp_path / "tree"
    for sub in ("fifo", "zero", "sparse", "plain"):
        put(tree / sub / "k.py", LEGACY)
        put(tree / sub / "ignored.py", LEGACY)
    os.mkfifo(tree / "fifo" / ".gitignore")
    os.symlink("/dev/zero", tree / "zero" / ".gitignore")
    _sparse(tree / "sparse" / ".gitignore", 10 << 30)
    put(tree / "plain" / ".gitignore", "ignored.py\n")
    t = time.monotonic()
    r = cli("--check", "--no-cache", "-v", ".", cwd=tree)
    assert time.monotonic() - t < 60
    assert r.returncode == 1, r.stdout + r.stderr
    assert sites(r.stdout) == ["fifo/ignored.py", "fifo/k.py", "plain/k.py", "sparse/ignored.py", "sparse/k.py",
                               "zero/ignored.py", "zero/k.py"], r.stdout
    assert "skipped fifo/.gitignore: not a regular file; not read; its patterns are not applied" in r.stderr
    assert "skipped zero/.gitignore: not a regular file" in r.stderr
    assert "skipped sparse/.gitignore: 10737418240 bytes, over the limit of 1048576 bytes" in r.stderr


@pytest.mark.parametrize("content, words", [
    ("[tool.cpasync-migrate]\n" + LONG_KEY, "line 2: a dotted key of more than 32 parts"),
    ("[tool.cpasync-migrate]\nselect = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    ("[tool.cpasync-migrate]\nselect = []\n" + "# padding\n" * 30_000, "over the limit of 262144 bytes"),
])
def test_configuration_toml_that_the_parser_cannot_finish_is_a_configuration_error(tmp_path, content, words):
    """(Before: the long key took the run minutes; the nesting was a RecursionError traceback; any size was
    read.)  Now each is exit 3 naming the file."""
    tree = tmp_path / "tree"
    put(tree / "k.py", LEGACY)
    put(tree / "pyproject.toml", content)
    r = cli("--check", "--no-cache", ".", cwd=tree)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "pyproject.toml" in r.stderr and words in r.stderr, r.stderr


def test_a_huge_sparse_pyproject_is_not_read(tmp_path):
    tree = tmp_path / "tree"
    put(tree / "k.py", LEGACY)
    with open(tree / "pyproject.toml", "wb") as fh:
        fh.write(b"[tool.cpasync-migrate]\n")
        fh.truncate(10 << 30)
    t = time.monotonic()
    r = cli("--check", "--no-cache", ".", cwd=tree)
    assert time.monotonic() - t < 60
    assert r.returncode == 3 and "10737418240 bytes, over the limit" in r.stderr, r.stderr


@pytest.mark.parametrize("name", ["ruff.toml", "pyproject-ruff"])
def test_a_line_length_file_the_parser_cannot_finish_is_passed_over(tmp_path, name):
    """The rewritten code's line length comes from the tree's ruff or black configuration.  (Before: a long
    dotted key there took the run minutes.)  Now such a file sets nothing: the default width applies."""
    tree = tmp_path / "tree"
    put(tree / "k.py", LEGACY)
    if name == "ruff.toml":
        put(tree / "ruff.toml", "line-length = 100\n" + LONG_KEY)
    else:
        put(tree / "pyproject.toml", "[tool.ruff]\nline-length = 100\n" + LONG_KEY)
    t = time.monotonic()
    r = cli("--diff", "--no-cache", ".", cwd=tree)
    assert time.monotonic() - t < 60
    assert r.returncode == 1 and "+++ b/k.py" in r.stdout and "Traceback" not in r.stderr, r.stdout + r.stderr


def test_small_files_read_refuses_what_could_block_or_grow(tmp_path):
    from cpasync_migrate import small_files

    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(small_files.Refused, match="not a regular file"):
        small_files.read(str(tmp_path / "fifo"), 100)  # opened without blocking
    with pytest.raises(small_files.Refused, match="not a regular file"):
        small_files.read("/dev/zero", 100)
    put(tmp_path / "f", "x" * 101)
    with pytest.raises(small_files.Refused, match="101 bytes, over the limit of 100"):
        small_files.read(str(tmp_path / "f"), 100)
    assert small_files.read(str(tmp_path / "f"), 10, prefix=True) == b"x" * 10
    assert small_files.read(str(tmp_path / "f"), 101) == b"x" * 101


@pytest.mark.parametrize("text, ok", [
    ('[tool.ruff.lint.per-file-ignores]\n"a.b.c" = ["E1"]\nx . "y.z" . w = 1\n', True),
    ("v = '" + ".".join(["w"] * 31) + "'\n", True),  # 31 dotted words in a string: under the bound
    ("k = 1\n" + ".".join(["w"] * 33) + " = 1\n", False),
    ("[" + ".".join(['"q"'] * 40) + "]\n", False),
    ('x = "' + "a" * 200_000 + '"\n', True),  # one long part: linear, and fine
])
def test_the_dotted_key_bound(text, ok):
    from cpasync_migrate import small_files

    t = time.monotonic()
    if ok:
        assert isinstance(small_files.loads_toml("p.toml", text.encode()), dict)
    else:
        with pytest.raises(small_files.Refused, match="more than 32 parts"):
            small_files.loads_toml("p.toml", text.encode())
    assert time.monotonic() - t < 10


def test_the_trees_own_definition_of_the_intrinsic_is_read_within_bounds(tmp_path):
    """The target is taken from a TileLang tree's own ``tilelang/language/tir/op.py``.  (Before: that file was
    read whole and parsed as it was: 100,000 prefix operators there were a MemoryError traceback.)  Now it is
    read as a kernel is bounded (size, nesting); one that breaks the bounds defines nothing, and as a file of
    the tree it is reported for what it is."""
    tree = tmp_path / "tree"
    put(tree / "k.py", LEGACY)
    put(tree / "tilelang" / "language" / "tir" / "op.py", "x = " + "-" * 100_000 + "1\n")
    r = cli("--check", "--no-cache", ".", cwd=tree)
    assert "Traceback" not in r.stderr and r.returncode == 1, r.stdout + r.stderr
    assert sites(r.stdout) == ["k.py"], r.stdout


def test_a_sparse_file_of_a_terabyte_is_searched_in_bounded_time(tmp_path):
    """The byte search for the intrinsic's name reads only the parts of a file that hold data: holes are
    zeros.  (Before: a sparse file made by truncate was searched byte by byte, 4.5 s per GB, so a terabyte
    took over an hour.)  The name written at 500 GB is found: the file is over the size limit (CPA900)."""
    tree = tmp_path / "tree"
    put(tree / "k.py", LEGACY)
    with open(tree / "big.py", "wb") as fh:
        fh.seek(500 << 30)
        fh.write(b"T.ptx_cp_async(1)\n")
        fh.truncate(1 << 40)
    _sparse(tree / "empty_big.py", 1 << 40)
    t = time.monotonic()
    r = cli("--check", "--no-cache", ".", cwd=tree)
    assert time.monotonic() - t < 60
    assert r.returncode == 2, r.stdout + r.stderr
    assert sites(r.stdout) == ["big.py", "k.py"], r.stdout
    assert "big.py:1:1: CPA900 1099511627776 bytes, over the size limit" in r.stdout


def test_data_ranges_cover_every_byte_that_is_not_a_hole(tmp_path):
    from cpasync_migrate import files

    p = tmp_path / "f"
    with open(p, "wb") as fh:
        fh.write(b"head")
        fh.seek(64 << 20)
        fh.write(b"ptx_cp_async")
        fh.truncate(256 << 20)
    fd = os.open(p, os.O_RDONLY)
    try:
        ranges = files.data_ranges(fd)
        assert ranges[0][0] == 0 and any(a <= (64 << 20) and (64 << 20) + 12 <= b for a, b in ranges), ranges
        assert files._needle_in(fd)
        assert files.data_ranges(fd, 256 << 20) == []
    finally:
        os.close(fd)


@pytest.mark.parametrize("change", [
    ("        T.ptx_cp_async(", "        for j in T.serial(1000000000000):\n            T.ptx_cp_async("),
    ("T.Kernel(1, threads=32)", "T.Kernel(1000000000000, threads=32)"),
])
def test_a_kernel_asking_the_verifier_for_1e12_steps_is_inconclusive_at_once(tmp_path, change):
    """The CPU interpreter runs each loop iteration (and each batch of blocks) of both forms.  (Before: a
    loop of 10**12 iterations ran for days.)  Now a run is charged its iterations before it starts them, and
    one past interp.MAX_STEPS stops: the kernel is inconclusive, never a mismatch, and write mode under
    --require-proof leaves the file alone."""
    old, new = change
    assert old in LEGACY
    text = LEGACY.replace(old, new)
    if "serial(1000000000000)" in text:  # the loop's body: the three lines after it, one level deeper
        lines = text.splitlines(keepends=True)
        i = next(k for k, ln in enumerate(lines) if "serial(1000000000000)" in ln)
        for k in (i + 2, i + 3):
            lines[k] = "    " + lines[k]
        text = "".join(lines)
    k = put(tmp_path / "k.py", text)
    t = time.monotonic()
    r = cli("--diff", "--verify", "--device", "cpu", "--no-cache", "k.py", cwd=tmp_path)
    assert time.monotonic() - t < 60, r.stderr
    assert "inconclusive" in r.stdout + r.stderr and "more than 1000000 loop iterations" in r.stdout + r.stderr, \
        r.stdout + r.stderr
    assert "mismatch" not in r.stdout + r.stderr and "Traceback" not in r.stderr
    r = cli("--verify", "--require-proof", "--device", "cpu", "--no-cache", "k.py", cwd=tmp_path)
    assert k.read_text() == text and "Traceback" not in r.stderr, r.stdout + r.stderr
