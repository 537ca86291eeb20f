"""Write mode, ``--diff`` and ``--verify`` take the fast pass's decisions and fixes where it decides a file
(``python.FAST_WRITE``, environment ``CPASYNC_MIGRATE_FAST_WRITE``): with the switch on and off, every run gives the
same written bytes, the same diff, the same reports on stdout and stderr and the same exit code, on every fixture,
example, real-TileLang kernel, the shapes of the ``--check`` equality test under its four option sets, and a
generated 1 MiB file.  Each pair also counts the files the libcst pass analysed, so that a comparison in which the
switch changed nothing shows (the floors below)."""
import json
import shutil

import pytest

from cpasync_migrate import python as pyfe
from cpasync_migrate.python import rewrite
from conftest import FIXTURES, run_inproc
from fixture_cases import cases
from test_check_nolibcst import SHAPES

ROOT = FIXTURES.parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
REALTL = sorted((ROOT / "tests" / "realtl" / "kernels").glob("*.py"))
# the option sets of test_check_nolibcst.OPTS, as the command line gives them
OPTION_SETS = {"0.1.8": ["--target", "0.1.8"], "0.1.9": ["--target", "0.1.9"],
               "0.1.9-access_ptr": ["--target", "0.1.9", "--style", "access_ptr"],
               "narrow": ["--target", "0.1.8", "--line-length", "60"]}


def _fixture_args(meta) -> list:
    args = list(meta.get("args", []))
    if "--target" not in args:
        args += ["--target", "0.1.8"]
    return args


class _Counted:
    """The libcst pass, counting the texts it analyses."""

    def __init__(self):
        self.calls = 0
        self.inner = rewrite.analyze

    def __call__(self, *a, **k):
        self.calls += 1
        return self.inner(*a, **k)


def _runs(tmp_path, monkeypatch, name: str, data: bytes, args: list, on: bool, modes=("diff", "write"),
          formats=("text", "json")) -> tuple:
    """What a user sees of ``--diff``, of write mode with the text report and of write mode with the JSON report on
    a file holding ``data`` (each run on a fresh copy, under ``--no-cache -j 1``, in this process), with the switch
    ``on`` or off; and how many texts the libcst pass analysed."""
    monkeypatch.setattr(pyfe, "FAST_WRITE", on)
    counted = _Counted()
    monkeypatch.setattr(rewrite, "analyze", counted)
    where = tmp_path / ("on" if on else "off")
    out = []
    for mode in modes:
        for fmt in (formats if mode == "write" else ("text",)):
            d = where / f"{mode}-{fmt}"
            d.mkdir(parents=True)
            (d / name).write_bytes(data)
            flags = (["--diff"] if mode == "diff" else ["--verify"] if mode == "verify" else []) + \
                ["--format", fmt, "--no-cache", "-j", "1"]
            r = run_inproc(*args, *flags, name, cwd=d)
            out.append((mode, fmt, r.returncode, r.stdout, r.stderr, (d / name).read_bytes()))
    return out, counted.calls


def _same(tmp_path, monkeypatch, name, data, args, modes=("diff", "write"), formats=("text", "json")) -> tuple:
    """Assert the runs are the same with the switch on and off; (libcst analyses on, off)."""
    on, n_on = _runs(tmp_path, monkeypatch, name, data, args, True, modes, formats)
    off, n_off = _runs(tmp_path, monkeypatch, name, data, args, False, modes, formats)
    for a, b in zip(on, off):
        assert a[:3] == b[:3], (name, args, a[:3], b[:3])
        assert a[3] == b[3], f"{name} {a[:2]}: stdout differs"
        assert a[4] == b[4], f"{name} {a[:2]}: stderr differs"
        assert a[5] == b[5], f"{name} {a[:2]}: the written bytes differ"
    return n_on, n_off


PY_CASES = cases("python")


@pytest.mark.parametrize("case", PY_CASES + cases("cpp"), ids=str)
def test_fixture_runs_are_the_same_with_the_switch_on_and_off(case, tmp_path, monkeypatch):
    name = f"{case.name}{case.ext}"
    _same(tmp_path, monkeypatch, name, case.input.read_bytes(), _fixture_args(case.meta))


def test_the_switch_sends_fewer_files_to_libcst_on_the_fixtures(tmp_path, monkeypatch):
    """The comparison above compares something: with the switch on, write mode rewrites at least 18 legacy fixtures
    without libcst, which analyses each of them with the switch off.  (test_check_nolibcst's floor of 21 reads every
    fixture under 0.1.8; under their own arguments --from, --style access_ptr and a mixed width under 0.1.9 go to
    libcst.)"""
    decided = 0
    for i, case in enumerate(PY_CASES):
        name, data, args = f"{case.name}{case.ext}", case.input.read_bytes(), _fixture_args(case.meta)
        on, n_on = _runs(tmp_path / str(i), monkeypatch, name, data, args, True, modes=("write",))
        if n_on == 0 and on[0][5] != data:
            off, n_off = _runs(tmp_path / str(i), monkeypatch, name, data, args, False, modes=("write",))
            assert off[0][5] == on[0][5], case
            decided += n_off > 0  # (a fork's definitions, CPA007: the fast pass decides them in every mode)
    assert decided >= 18


def test_the_switch_is_read_from_the_environment(tmp_path):
    """``CPASYNC_MIGRATE_FAST_WRITE=0`` turns it off in a fresh process: write mode then imports libcst for a legacy
    kernel the fast pass decides, and writes the same bytes as with it on (which imports no libcst)."""
    src = SHAPES[0].encode()
    got = {}
    for value in ("1", "0"):
        d = tmp_path / value
        d.mkdir()
        (d / "k.py").write_bytes(src)
        got[value] = _importtime(d, value)
    assert got["1"][0] == got["0"][0] == 0
    assert got["1"][2] == got["0"][2] != src
    assert not got["1"][1] and got["0"][1]


def _importtime(d, value):
    import os
    import subprocess
    import sys

    env = dict(os.environ, CPASYNC_MIGRATE_FAST_WRITE=value, NO_COLOR="1")
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "cpasync_migrate", "--no-cache", "k.py"], cwd=d,
                       env=env, capture_output=True, text=True)
    imported = any(line.rstrip().endswith((" libcst", "| libcst")) for line in r.stderr.splitlines()
                   if line.startswith("import time:"))
    return r.returncode, imported, (d / "k.py").read_bytes()


def test_fast_fixes_by_mode(monkeypatch):
    monkeypatch.setattr(pyfe, "FAST_WRITE", True)
    assert all(pyfe.fast_fixes(m, v) for m in ("check", "diff", "write") for v in (False, True))
    monkeypatch.setattr(pyfe, "FAST_WRITE", False)
    assert pyfe.fast_fixes("check", False)
    assert not any(pyfe.fast_fixes(m, v) for m, v in (("check", True), ("diff", False), ("write", False),
                                                      ("write", True)))


# ------------------------------------------------------------------------------------------- heavy corpora

@pytest.mark.slow
@pytest.mark.parametrize("path", EXAMPLES + REALTL, ids=lambda p: f"{p.parent.name}/{p.name}")
@pytest.mark.parametrize("target", ["0.1.8", "0.1.9"])
def test_examples_and_realtl_kernels(path, target, tmp_path, monkeypatch):
    _same(tmp_path, monkeypatch, path.name, path.read_bytes(), ["--target", target, "--unsafe-fixes"])


@pytest.mark.slow
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_under_verify(path, tmp_path, monkeypatch):
    """--verify reads the rewritten text: its verdicts and what it writes are the same both ways."""
    _same(tmp_path, monkeypatch, path.name, path.read_bytes(), ["--target", "0.1.8"], modes=("verify",))


@pytest.mark.slow
@pytest.mark.parametrize("opts", list(OPTION_SETS))
@pytest.mark.parametrize("i", range(len(SHAPES)))
def test_shapes_under_four_option_sets(i, opts, tmp_path, monkeypatch):
    _same(tmp_path, monkeypatch, "k.py", SHAPES[i].encode("utf-8"), OPTION_SETS[opts])


_KERNEL = '''

@T.prim_func
def copy_{i}(A: T.Tensor((256,), "float16"), B: T.Tensor((256,), "float16")):
    with T.Kernel(1, threads=32) as bx:
        S = T.alloc_shared((256,), "float16")
        tx = T.get_thread_binding()
        T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)
        for i in T.serial(8):
            B[tx * 8 + i] = S[tx * 8 + i]
'''
# every 50th kernel a shape the fast pass leaves to libcst (a macro's parameter): windows of both kinds in one file
_MACRO = '''

@T.macro
def stage_{i}(S, A: T.Tensor((256,), "float16"), tx):
    T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)
'''


@pytest.mark.slow
def test_a_generated_one_mib_file(tmp_path, monkeypatch):
    parts, size, i = ["import tilelang.language as T\n"], 0, 0
    while size < 1_000_000:
        parts.append((_MACRO if i % 50 == 49 else _KERNEL).format(i=i))
        size += len(parts[-1])
        i += 1
    data = "".join(parts).encode()
    assert len(data) <= 1024 * 1024  # (the default size limit)
    n_on, n_off = _same(tmp_path, monkeypatch, "big.py", data, ["--target", "0.1.8"], modes=("write",),
                         formats=("json",))  # (the JSON report: every finding, its status and fix)
    assert 0 < n_on < n_off  # the macros' windows went to libcst with the switch on, every window with it off


def test_stdin_write_mode_prints_the_same_text(cli):
    """Write mode on stdin (the migrated text on stdout) is the same with the switch on and off."""
    got = [cli("-", "--stdin-filename", "k.py", "--no-cache", input=SHAPES[5],
               env={"CPASYNC_MIGRATE_FAST_WRITE": v}) for v in ("1", "0")]
    assert got[0].returncode == got[1].returncode == 0
    assert got[0].stdout == got[1].stdout != SHAPES[5] and got[0].stderr == got[1].stderr


# ------------------------------------------------------------------------------------- the results cache

def _cached_runs(tmp_path, monkeypatch, on: bool, modes: tuple) -> list:
    """Per run of ``modes`` in order over one cache folder: (libcst analyses, fast-pass analyses, the diff or the
    written bytes)."""
    from cpasync_migrate.python import fast

    monkeypatch.setattr(pyfe, "FAST_WRITE", on)
    d = tmp_path / ("on" if on else "off")
    d.mkdir()
    (d / "k.py").write_text(SHAPES[0])
    out = []
    for mode in modes:
        slow, quick = _Counted(), []
        monkeypatch.setattr(rewrite, "analyze", slow)
        real = fast.findings
        monkeypatch.setattr(fast, "findings", lambda *a, **k: quick.append(1) or real(*a, **k))
        flags = {"check": ["--check"], "diff": ["--diff"], "write": []}[mode]
        r = run_inproc(*flags, "--cache-dir", tmp_path / f"cache-{d.name}", "-j", "1", "k.py", cwd=d)
        out.append((slow.calls, len(quick), r.returncode, r.stdout if mode == "diff" else (d / "k.py").read_text()))
        monkeypatch.setattr(fast, "findings", real)
    return out


def test_the_cache_keeps_ast_made_fixes_from_a_run_that_asks_for_libcsts(tmp_path, monkeypatch):
    """Switch off: a --diff after a cached --check (whose fixes the ast pass made) does not read that analysis: libcst
    analyses the file; a second --diff reads the first's.  Switch on: --check and --diff ask the same, and the --diff
    reads the --check's analysis (no pass runs).  The diffs are the same either way."""
    off = _cached_runs(tmp_path, monkeypatch, False, ("check", "diff", "diff"))
    assert off[0][:3] == (0, 1, 1)  # --check: the ast pass decided, no libcst
    assert off[1][:3] == (1, 1, 1)  # --diff: not the --check's entry; libcst made the fix (the ast pass declined)
    assert off[2][:3] == (0, 0, 1)  # the second --diff: the first --diff's entry
    on = _cached_runs(tmp_path, monkeypatch, True, ("check", "diff"))
    assert on[0][:3] == (0, 1, 1) and on[1][:3] == (0, 0, 1)
    assert on[1][3] == off[1][3] == off[2][3] and on[1][3].startswith("---")


def test_the_key_says_whether_ast_made_fixes_may_be_in_it():
    from cpasync_migrate import cache
    from cpasync_migrate.engine import RunSettings

    s = RunSettings(mode="diff")
    keys = {cache.key(s, "k.py", "python", b"x", ast_fixes=a) for a in (False, True)}
    assert len(keys) == 2
    assert cache.key(s, "k.py", "python", b"x") == cache.key(s, "k.py", "python", b"x", ast_fixes=False)
