"""Windowed analysis of Python files (cpasync_migrate/python/window.py): equal to the whole-file analysis
wherever it answers, and it declines (the whole file is analysed) wherever the window is not closed."""
from __future__ import annotations

import textwrap

import pytest

from cpasync_migrate import python as pyfe
from cpasync_migrate.engine import RunSettings, front_end_options
from cpasync_migrate.python import layout, window
from conftest import ROOT
from fixture_args import fixture_options
from fixture_cases import cases

PY_CASES = cases("python")
REALTL = sorted((ROOT / "tests" / "realtl" / "kernels").glob("*.py"))


def _options(meta=None):
    opts = front_end_options(RunSettings(mode="check"))
    if meta:
        o = fixture_options(opts.rules, meta.get("args", []))
        s = RunSettings(mode="check", target=o["target"], source=o["source"] or "legacy")
        opts = front_end_options(s)
    return opts


def _whole(text, opts):
    return pyfe.analyze(text, "f.py", opts, windowed=False)


def _windowed(text, opts):
    return window.analyze(text, opts, lambda t, s: pyfe.analyze(t, "f.py", opts, windowed=False, style=s),
                          min_chars=0)


def _same(a, b):
    assert a.error == b.error
    assert a.migrated == b.migrated
    assert [(f.line, f.column, f.code) for f in a.findings] == [(f.line, f.column, f.code) for f in b.findings]
    assert a.findings == b.findings  # messages, fixes (edits at the file's offsets), roles, functions


FILLER = "\n\ndef _filler_{k}(x, y=2):\n    # a comment\n    return [x,\n            y]\n"


def _with_fillers(text: str) -> str:
    """``text`` with an unrelated top-level def after each of its top-level statements (and one first)."""
    starts = window._starts(text) or [0]
    out, prev = [], 0
    for k, s in enumerate(starts[1:] + [len(text)]):
        piece = text[prev:s]
        if not piece.endswith("\n"):
            piece += "\n"
        out.append(piece)
        out.append(FILLER.format(k=k).lstrip("\n") + "\n")
        prev = s
    return "".join(out)


@pytest.mark.parametrize("case", PY_CASES, ids=str)
def test_fixture_windowed_equals_whole(case, monkeypatch):
    monkeypatch.setattr(window, "WINDOW_CHARS", 1)  # one definition per window: the most windows
    opts = _options(case.meta)
    text = case.input.read_text(encoding="utf-8")
    got = _windowed(text, opts)
    if got is not None:
        _same(got, _whole(text, opts))
    mixed = _with_fillers(text)
    got = _windowed(mixed, opts)
    if got is not None:
        _same(got, _whole(mixed, opts))


def test_fixtures_do_window():
    """The equality above is not vacuous: many fixtures (and their filled-in forms) are windowed."""
    opts = _options()
    n = sum(window.plan(c.input.read_text(encoding="utf-8"), opts, 0) is not None for c in PY_CASES)
    m = sum(window.plan(_with_fillers(c.input.read_text(encoding="utf-8")), opts, 0) is not None for c in PY_CASES)
    assert n >= 40 and m >= 40, (n, m)


@pytest.mark.slow  # an equality run over a corpus (the fixtures stay in the default run)
@pytest.mark.parametrize("path", REALTL, ids=lambda p: p.name)
def test_realtl_windowed_equals_whole(path, monkeypatch):
    monkeypatch.setattr(window, "WINDOW_CHARS", 1)
    opts = _options()
    for text in (path.read_text(encoding="utf-8"), _with_fillers(path.read_text(encoding="utf-8"))):
        got = _windowed(text, opts)
        if got is not None:
            _same(got, _whole(text, opts))


KERNEL = '''
@T.prim_func
def copy_{i}(A: T.Tensor((256,), "float16"), B: T.Tensor((256,), "float16")):
{ind}with T.Kernel(1, threads=32) as bx:
{ind}{ind}S = T.alloc_shared((256,), "float16")
{ind}{ind}tx = T.get_thread_binding()
{ind}{ind}T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)
{ind}{ind}T.ptx_cp_async("float16",
{ind}{ind}{ind}S.data, tx * 8 + 4, A.data, tx * 8 + 4, 8)
{ind}{ind}for i in T.serial(8):
{ind}{ind}{ind}B[tx * 8 + i] = S[tx * 8 + i]
'''

TWO_SPACE = '''

def helper_{i}(a,
               b):
  if a:
    return [a,
            b]
  return b
'''


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("header", ["import tilelang.language as T\n", "import tilelang\nfrom tilelang import language as T\n",
                                    '"""A module."""\nimport os\nimport tilelang\nT = tilelang.language\n',
                                    "import tilelang.language as T\nT = T\n"])
def test_many_definitions_equal(newline, header, monkeypatch):
    """Kernels among definitions of another style: the layout follows the whole file's style, the
    added import (no module-level import of tilelang.language) and the newline are the file's."""
    monkeypatch.setattr(window, "WINDOW_CHARS", 900)
    parts = [header]
    for i in range(12):
        parts.append(KERNEL.format(i=i, ind="    ") if i % 3 == 0 else TWO_SPACE.format(i=i))
    parts.append("\nif __name__ == '__main__':\n  print(1)\n")
    text = "".join(parts).replace("\n", newline)
    opts = _options()
    got = _windowed(text, opts)
    assert got is not None
    want = _whole(text, opts)
    _same(got, want)
    if header.startswith("import tilelang") and "T = T" not in header:
        assert sum(f.fix is not None for f in want.findings) == 8
    assert len(want.findings) >= 8


@pytest.mark.parametrize("text", [
    "import tilelang.language as T\nT.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\n",  # module level
    "import tilelang.language as T\ncp = T.ptx_cp_async\ndef f():\n    cp('float16', S.data, 0, A.data, 0, 16)\n",
    "from tilelang.language import ptx_cp_async\ndef f():\n    T.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\n",
    "import tilelang.language as T\n@T.macro\ndef g():\n    T.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\ndef f():\n    g()\n",
    "import tilelang.language as T\ndef f():\n    T.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\ndef f():\n    pass\n",
    "import tilelang.language as T\ndef f():\n    global T\n    T.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\n",
    "def T():\n    pass\ndef f():\n    X.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\n",  # the added import's alias
    "import tilelang.language as T\ndef cp_async_gs(size, dst, dst_offset, src, src_offset):\n    pass\n"
    "def f():\n    T.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\n",  # a runtime helper (CPA007)
    "import tilelang.language as T\ndef f():\n    T.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\r"
    "def g():\n    pass\n",  # a lone carriage return
    "import tilelang.language as T\ndef f():\n    T.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\n"
    "def g():\n    return {'tir.merge_static_smem': True}\n",  # the pass option, read file-wide
    "import tilelang.language as T\ndef f():\n    T.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\n"
    "def g(:\n    pass\n",  # a piece that does not parse
    "import tilelang.language as T\ndef f():\n    T.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\n"
    "x = '''\ndef g():\n    pass\n",  # an unterminated string
    "import tilelang.language as T\ndef f():\n    T.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\n"
    "from __future__ import annotations\n",
    "import tilelang.language as T\ndef f():\n    T.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\n"
    "def g():\n    return getattr(T, 'ptx_cp_async')\n",  # a read of the intrinsic by its name
])
def test_declines(text):
    assert window.plan(text, _options(), 0) is None


def test_scan_strings_and_continuations():
    """A col-0 ``def`` inside a string, brackets or a continued line starts no statement."""
    text = textwrap.dedent('''\
        import tilelang.language as T
        DOC = """
        def not_a_def():
            pass
        """
        X = [1,
        2]
        Y = 1 + \\
        2
        S = 'a\\'b#' # "c
        def f():
            T.ptx_cp_async("float16", S.data, 0, A.data, 0, 16)
        class K:
            pass
        try:
            pass
        except ValueError:
            pass
        @T.prim_func
        @other
        def g():
            pass
        ''')
    segs = window._segments(text)
    assert [(s.line, s.kind, s.name) for s in segs] == [
        (1, "stmt", ""), (2, "stmt", ""), (6, "stmt", ""), (8, "stmt", ""), (10, "stmt", ""),
        (11, "def", "f"), (13, "def", "K"), (15, "stmt", ""), (19, "def", "g")]


def test_window_text_keeps_lines_and_offsets():
    text = "import tilelang.language as T\n" + "".join(KERNEL.format(i=i, ind="    ") for i in range(4))
    opts = _options()
    ws = window.plan(text, opts, 0)
    assert ws is not None
    for w in ws:
        assert w.text.count("\n") <= text.count("\n")
        src = w.text.split("\n")
        orig = text.split("\n")
        for ws_, fs, n in w.pieces:
            assert w.text[ws_:ws_ + n] == text[fs:fs + n]
        for lo, hi in w.lines:
            assert src[lo - 1:hi - 1] == orig[lo - 1:hi - 1]


def test_switch_off(monkeypatch):
    text = "import tilelang.language as T\n" + KERNEL.format(i=0, ind="    ")
    monkeypatch.setattr(window, "ENABLED", False)
    assert window.analyze(text, _options(), lambda t, s: None, min_chars=0) is None


def test_small_files_whole():
    text = "import tilelang.language as T\n" + KERNEL.format(i=0, ind="    ")
    assert window.plan(text, _options()) is None  # under MIN_CHARS


@pytest.mark.slow  # an equality run over a corpus (the fixtures stay in the default run)
@pytest.mark.parametrize("case", [c for c in PY_CASES if c.output != c.input][:60], ids=str)
def test_lazy_layout_positions_equal(case, monkeypatch):
    """layout.LAZY_POSITIONS (CPASYNC_MIGRATE_LAZY_LAYOUT) changes no finding."""
    opts = _options(case.meta)
    text = case.input.read_text(encoding="utf-8")
    monkeypatch.setattr(layout, "LAZY_POSITIONS", True)
    lazy = _whole(text, opts)
    monkeypatch.setattr(layout, "LAZY_POSITIONS", False)
    _same(lazy, _whole(text, opts))


@pytest.mark.parametrize("case", PY_CASES, ids=str)
def test_pieces_parse_implies_whole_parses(case):
    """reparse.py trusts parses_in_pieces only when it says True: then the whole text parses too."""
    import ast

    for text in (case.input.read_text(encoding="utf-8"), case.output.read_text(encoding="utf-8")):
        for t in (text, _with_fillers(text)):
            if window.parses_in_pieces(t):
                ast.parse(t)


@pytest.mark.parametrize("text", [
    "x = (1,\n2\n",  # an open bracket
    "def f():\n    pass\nelse_ = 1\n  y = 2\n",  # an indented line after a statement
    "x = 1\nfrom __future__ import annotations\n",  # a future import after the start
    "@dec\n",  # a decorator with nothing to decorate
])
def test_pieces_refuse(text):
    assert not window.parses_in_pieces(text)


def test_reparse_by_pieces_same_answer(monkeypatch):
    from cpasync_migrate.python import reparse

    good = "import os\n" + "".join(f"def f{i}():\n    return {i}\n" for i in range(50))
    bad = good.replace("return 7\n", "return (7\n")
    monkeypatch.setattr(window, "MIN_CHARS", 0)
    on = [reparse.reparse_problem(good, t) for t in (good, bad)]
    monkeypatch.setattr(window, "ENABLED", False)
    off = [reparse.reparse_problem(good, t) for t in (good, bad)]
    assert on == off and on[0] is None and on[1] is not None
