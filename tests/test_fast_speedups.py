"""The fast pass's per-call speed-ups (issue 26, large files): each switch on and off gives the same findings and
edits, on every Python fixture, realtl kernel and example, windowed and whole, and on generated large files through
the whole pipeline; the scope index answers every question as the scan over all scopes does."""
from __future__ import annotations

import ast

import pytest

from cpasync_migrate import engine
from cpasync_migrate import python as pyfe
from cpasync_migrate.engine import RunSettings, front_end_options
from cpasync_migrate.python import fast, fast_edit, fast_scan, fast_scopes, file_style, layout_render, window
from conftest import ROOT
from fixture_args import fixture_options
from fixture_cases import cases

PY_CASES = cases("python")
CORPUS = sorted({*(ROOT / "tests" / "fixtures" / "python").glob("*.py"),
                 *(ROOT / "tests" / "realtl" / "kernels").glob("*.py"),
                 *(ROOT / "examples").rglob("*.py"),
                 *(ROOT / "cpasync_migrate" / "python").rglob("*.py")})

# (module, attribute) of every switch of these speed-ups
SWITCHES = [(fast_scopes, "INDEX"), (fast, "PARENTS"), (fast_edit, "MEMO"), (layout_render, "BOUNDED"), (window, "QUICK"),
            (fast_scan, "QUICK"), (fast, "LINEAR"), (fast_edit, "LINEAR"), (window, "LINEAR"),
            (fast, "GC_PAUSE")]
LINEAR = [(fast, "LINEAR"), (fast_edit, "LINEAR"), (window, "LINEAR")]


def _set(monkeypatch, on: bool, only=None):
    for mod, name in SWITCHES:
        if only is None or (mod, name) == only:
            monkeypatch.setattr(mod, name, on)


def _options(meta=None):
    opts = front_end_options(RunSettings(mode="check"))
    if meta:
        o = fixture_options(opts.rules, meta.get("args", []))
        opts = front_end_options(RunSettings(mode="check", target=o["target"], source=o["source"] or "legacy"))
    return opts


def _analysis(text, opts, windowed):
    a = pyfe.analyze(text, "f.py", opts, windowed=windowed, fixes=True)
    return a.error, a.migrated, a.findings  # findings compare with their messages, fixes and edits


def _texts():
    for p in CORPUS:
        try:
            yield p, p.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue


def _trees():
    """(path, text, module) of every corpus text the standard library parses."""
    for p, text in _texts():
        try:
            yield p, text, ast.parse(text)
        except SyntaxError:
            continue


@pytest.mark.parametrize("case", PY_CASES, ids=str)
def test_fixture_same_with_switches_off(case, monkeypatch):
    monkeypatch.setattr(window, "MIN_CHARS", 0)
    monkeypatch.setattr(window, "WINDOW_CHARS", 1)  # one definition per window: the most windows
    opts = _options(case.meta)
    try:
        text = case.input.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        pytest.skip("not UTF-8: the engine decodes it (test_fixtures)")
    got = {}
    for on in (True, False):
        _set(monkeypatch, on)
        got[on] = [_analysis(text, opts, w) for w in (True, False)]
    assert got[True] == got[False]


@pytest.mark.slow  # an equality run over a corpus (the fixtures stay in the default run)
def test_corpus_same_with_switches_off(monkeypatch):
    monkeypatch.setattr(window, "MIN_CHARS", 0)
    monkeypatch.setattr(window, "WINDOW_CHARS", 2000)
    opts = _options()
    n = 0
    for p, text in _texts():
        got = {}
        for on in (True, False):
            _set(monkeypatch, on)
            got[on] = [_analysis(text, opts, w) for w in (True, False)]
        assert got[True] == got[False], p
        n += bool(got[True][1][2])
    assert n > 100  # not vacuous: most of the corpus has findings


KERNEL = '''

@T.prim_func
def copy_{i}(A: T.Tensor((256,), "float16"), B: T.Tensor((256,), {dt})):
    with T.Kernel(1, threads=32) as bx:
        S = T.alloc_shared((256,), "float16")
        tx = T.get_thread_binding()
        T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)  # {note}
        T.ptx_cp_async("float16",
                       S.data, tx * 8 + 4, A.data, tx * 8 + 4, 8)
        T.evaluate(T.ptx_cp_async(T.float16, S.data, 0, B.data, 0, 4))
        f = lambda v: [v for v in range(v)]
        for i in T.serial(8):
            B[tx * 8 + i] = S[tx * 8 + i]
'''

OTHER = '''

class Shape_{i}:
    def area(self, n,
             m):
        return [n,
                m, 'x']
'''


def _module(n: int) -> str:
    parts = ["import tilelang.language as T\n"]
    for i in range(n):
        note = "cpasync-migrate: ignore" if i == 4 else f"copy {i}"
        parts.append(KERNEL.format(i=i, note=note, dt='"float16"' if i % 3 else "T.float16")
                     if i % 2 == 0 else OTHER.format(i=i))
    return "".join(parts)


def _summary(o):
    return ([(f.line, f.column, f.code, f.status, f.message, f.original, f.replacement) for f in o.findings],
            o.new_text, o.written, o.error)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("switch", [None, *SWITCHES], ids=lambda s: "all" if s is None else f"{s[0].__name__}.{s[1]}")
def test_big_file_same_with_switches_off(tmp_path, newline, switch, monkeypatch):
    """The whole --check pipeline on a generated windowed file: findings, statuses, edits and the re-parse
    check the same with the speed-ups on and off (all, or one at a time)."""
    monkeypatch.setattr(window, "MIN_CHARS", 0)
    monkeypatch.setattr(window, "WINDOW_CHARS", 3000)
    text = _module(30).replace("\n", newline)
    assert window.plan(text, front_end_options(RunSettings(mode="check")), 0) is not None
    outs = {}
    for on in (True, False):
        _set(monkeypatch, True)
        _set(monkeypatch, on, switch)
        p = tmp_path / f"{on}.py"
        p.write_bytes(text.encode())
        o = engine.process_file(str(p), RunSettings(mode="check", keep_texts=True))
        outs[on] = _summary(o)
    assert outs[True] == outs[False]
    codes = [f[2] for f in outs[True][0]]
    assert codes.count("CPA001") >= 30, codes  # the legacy calls are decided with their fixes


@pytest.mark.parametrize("mode", ["check", "write"])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_big_file_same_with_linear_off(tmp_path, newline, mode, monkeypatch):
    """CPASYNC_MIGRATE_FAST_LINEAR on a file whose windows leave out long runs of definitions (placeholders of
    hundreds of lines, held as blocks by ``fast_edit._Starts``): findings, edits, the new text and what was written
    the same on and off, in --check and write mode."""
    monkeypatch.setattr(window, "MIN_CHARS", 0)
    monkeypatch.setattr(window, "WINDOW_CHARS", 3000)
    text = _module(160).replace("\n", newline)
    windows = window.plan(text, front_end_options(RunSettings(mode="check")), 0)
    assert windows is not None and len(windows) > 10
    assert any(type(fast_edit.source_starts(w.text)) is fast_edit._Starts for w in windows)
    outs = {}
    for on in (True, False):
        _set(monkeypatch, True)
        for mod, name in LINEAR:
            monkeypatch.setattr(mod, name, on)
        p = tmp_path / f"{on}.py"
        p.write_bytes(text.encode())
        o = engine.process_file(str(p), RunSettings(mode=mode, keep_texts=True))
        outs[on] = (_summary(o), p.read_bytes())
    assert outs[True] == outs[False]
    codes = [f[2] for f in outs[True][0][0]]
    assert codes.count("CPA001") >= 150, codes
    if mode == "write":
        assert outs[True][1] != text.encode()  # the file was rewritten


def test_window_text_same_with_linear_off(monkeypatch):
    """``window.LINEAR`` builds each placeholder from line numbers: the same window text as counting its breaks."""
    monkeypatch.setattr(window, "WINDOW_CHARS", 3000)
    text = _module(160)
    opts = front_end_options(RunSettings(mode="check"))
    got = {}
    for on in (True, False):
        monkeypatch.setattr(window, "LINEAR", on)
        got[on] = [(w.text, w.pieces, w.lines) for w in window.plan(text, opts, 0)]
    assert got[True] == got[False]


def _random_texts(n):
    import random

    rnd = random.Random(7)
    for _ in range(n):
        nl = rnd.choice(["\n", "\r\n"])
        parts = []
        for _ in range(rnd.randint(0, 8)):
            parts.append(rnd.choice(["x = 1" + nl, "def f():" + nl + "  pass" + nl, nl * rnd.randint(1, 200),
                                     "ab" + nl * rnd.randint(62, 66), '0 or """' + nl * 70 + '"""', "\u00e9", "\n",
                                     "\r\n" * 65 + "\n" * 65]))
        yield "".join(parts)


def test_blocked_line_starts_equal_the_list():
    """``fast_edit._Starts`` (a window's line starts in blocks) reads as the plain list: every index, negative ones,
    ``len``, ``bisect`` and ``Source.off``'s bounds."""
    import bisect

    blocked = 0
    for text in _random_texts(400):
        plain = fast_edit._line_starts(text)
        got = fast_edit.source_starts(text)
        blocked += type(got) is fast_edit._Starts
        assert len(got) == len(plain)
        assert [got[i] for i in range(len(plain))] == plain
        assert [got[-i] for i in range(1, len(plain) + 1)] == [plain[-i] for i in range(1, len(plain) + 1)]
        for o in range(0, len(text) + 1, 5):
            assert bisect.bisect_right(got, o) == bisect.bisect_right(plain, o)
        if type(got) is fast_edit._Starts:
            for i in range(len(plain)):
                assert got.bounds(i, len(text)) == (plain[i], plain[i + 1] if i + 1 < len(plain) else len(text))
        with pytest.raises(IndexError):
            got[len(plain)]
    assert blocked > 100


@pytest.mark.parametrize("text", [
    "T.ptx_cp_async", "x = T.ptx_cp_async\n", "getattr(T, 'ptx_cp_async')", 'f("ptx_cp_async")', "ptx_cp_async",
    "xptx_cp_async", "'ptx_cp_async", "ptx_cp_async'", "T.ptx_cp_async (", "T.ptx_cp_async\n\n(", "T.ptx_cp_asyncs",
    "from a import ptx_cp_async as p", "\"ptx_cp_async\"", "_ptx_cp_async", "1ptx_cp_async", "(ptx_cp_async)",
    "def ptx_cp_async(", "xdef ptx_cp_async(", ".def ptx_cp_async(", "def\\\n ptx_cp_async(", "def  ptx_cp_asyncs",
    "\n" * 100 + "T.ptx_cp_async" + "\n" * 100,
])
def test_gates_with_the_literal_first_answer_the_same(text, monkeypatch):
    """``fast.LINEAR``'s gates (the name first, the look back after it) answer as the patterns they replace."""
    for pre in ("", "a", "'", " ", "\n", "é"):
        t = pre + text
        assert bool(fast._NAME_READ_L.search(t)) == bool(fast._NAME_READ.search(t)), t
        assert bool(fast._VALUE_TEXT_L.search(t)) == bool(fast._VALUE_TEXT.search(t)), t
        got = {}
        for on in (True, False):
            monkeypatch.setattr(fast, "LINEAR", on)
            got[on] = (fast.may_call(t), fast.decide(t, "f.py", _options(), True)[1])
        assert got[True] == got[False], t


# ------------------------------------------------------------------------------------- the scope index


def _brute(monkeypatch, fn, *args):
    monkeypatch.setattr(fast_scopes, "INDEX", False)
    try:
        return fn(*args)
    finally:
        monkeypatch.setattr(fast_scopes, "INDEX", True)


@pytest.mark.slow  # every name of a corpus
def test_scope_index_answers_as_the_scan(monkeypatch):
    """Every binding's scope, every name's visible scopes and every name's resolution, on the whole corpus."""
    n = 0
    for p, text, tree in _trees():
        s = fast_scan.scan(tree)
        assert fast_scopes._index(s) is not None, p  # the extents of real code nest
        for bs in s.bindings.values():
            for b in bs:
                assert fast_scopes.owner(b, s) is _brute(monkeypatch, fast_scopes.owner, b, s), p
        for node in ast.walk(tree):
            if type(node) is ast.Name:
                assert fast_scopes.visible(node, s) == _brute(monkeypatch, fast_scopes.visible, node, s), p
                assert fast_scopes.resolve(node.id, node, s) == _brute(monkeypatch, fast_scopes.resolve, node.id,
                                                                       node, s), p
                n += 1
    assert n > 10000


def test_scope_index_small_cases(monkeypatch):
    text = ("x = 1\n@dec(lambda a: a)\ndef f(p=lambda q: q, *, r: int = 2):\n    y = [z for z in range(3)]\n"
            "    class C:\n        w = x\n        def g(self):\n            return w, y\n    return C\n"
            "g = (lambda: [t for t in (lambda: 1)()])\n")
    tree = ast.parse(text)
    s = fast_scan.scan(tree)
    assert fast_scopes._index(s) is not None
    names = [n for n in ast.walk(tree) if type(n) is ast.Name]
    assert len(names) > 15
    for node in names:
        assert fast_scopes.visible(node, s) == _brute(monkeypatch, fast_scopes.visible, node, s)
        assert fast_scopes.resolve(node.id, node, s) == _brute(monkeypatch, fast_scopes.resolve, node.id, node, s)
    for bs in s.bindings.values():
        for b in bs:
            assert fast_scopes.owner(b, s) is _brute(monkeypatch, fast_scopes.owner, b, s)


class _Sc:
    def __init__(self, a, b, c, d):
        self.lineno, self.col_offset, self.end_lineno, self.end_col_offset = a, b, c, d


def test_scope_index_refuses_extents_that_overlap():
    assert fast_scopes._Index([("lambda", _Sc(1, 0, 3, 0)), ("comp", _Sc(2, 0, 4, 0))]).laminar is False
    assert fast_scopes._Index([("lambda", _Sc(1, 0, 3, 0)), ("comp", _Sc(1, 0, 3, 0))]).laminar is False
    assert fast_scopes._Index([("lambda", _Sc(1, 0, 3, 0)), ("comp", _Sc(3, 0, 4, 0))]).laminar is False  # touch
    assert fast_scopes._Index([("lambda", _Sc(1, 0, 3, 0)), ("comp", _Sc(2, 0, 3, 0)),
                               ("comp", _Sc(3, 1, 4, 0))]).laminar is True


# ------------------------------------------------------------------------------- the re-parse check


def test_piece_memo_gives_the_same_cut(monkeypatch):
    good = _module(12)
    bad = good.replace("return [n,", "return [n,,", 1)
    moved = good.replace("def copy_2(", "def copy_2b(", 1)
    for on in (True, False):
        monkeypatch.setattr(window, "QUICK", on)
        window._last[:] = [None, None, {}]
        got = [window.parses_in_pieces(t) for t in (good, good, bad, moved, good)]
        assert got == [True, True, False, True, True]
    monkeypatch.setattr(window, "QUICK", True)
    a = window._segments(good)
    b = window._segments(moved)  # its unchanged pieces are not parsed again, their kinds and names kept
    monkeypatch.setattr(window, "QUICK", False)
    cut = lambda segs: [(s.start, s.end, s.line, s.kind, s.name) for s in segs]  # noqa: E731 (flat: QUICK only)
    assert cut(a) == cut(window._segments(good)) and cut(b) == cut(window._segments(moved))
    assert [s.name for s in b if s.kind == "def"][1] == "Shape_1" and any(s.name == "copy_2b" for s in b)


# ------------------------------------------------------------------------------------- the scan's own time


def _scan_facts(tree):
    s = fast_scan.scan(tree)
    ids = lambda xs: [id(x) for x in xs]  # noqa: E731
    return (ids(s.calls), ids(s.defs), s.imports, s.other, s.nested, s.assigned,
            {k: [(kind, id(n), id(e)) for kind, n, e in v] for k, v in s.bindings.items()},
            [(k, id(n)) for k, n in s.scopes], [(t, id(v)) for t, v in s.values], s.callee_names,
            s.getattr_intrinsic, s.lookup_intrinsic, s.alias_names, ids(s.loops), s.call_parents), s


def _reads(tree, s, opts, path="f.py"):
    tl, tvm = set(opts.rules.tilelang_modules), set(opts.rules.tvm_modules)
    try:
        return [(id(n), r) for n, r in fast_scan.value_reads(tree, s, tl, tvm, path)]
    except fast_scan.Undecided:
        return "undecided"


CALLS = "import tilelang.language as T\n"
READ_CASES = [
    CALLS + "def k(A):\n    f(T.ptx_cp_async)\n    T.ptx_cp_async(1, 2, 3)\n",
    CALLS + "cp = T.ptx_cp_async\ndef k():\n    cp(1)\n",
    CALLS + "a = T.ptx_cp_async\nb = a\nc = b\ndef k():\n    c(1)\n",
    CALLS + "a = T.ptx_cp_async\nb = a\ndef k():\n    b2 = 1\n    T.ptx_cp_async(a)\n",
    CALLS + "x = [T.ptx_cp_async]\nprint(x)\n@d(T.ptx_cp_async)\ndef k():\n    return {1: T.ptx_cp_async}\n",
    CALLS + "ptx_cp_async = _f(T.ptx_cp_async)\n__all__ = ['ptx_cp_async']\nv = T.__dict__['ptx_cp_async']\n",
    "from tilelang.language import ptx_cp_async as cp\nlst = [cp]\ncp(1)\n",
    CALLS + "g = T.ptx_cp_async\nh = g\nprint(h)\nh(1)\n",
    CALLS + "@d\ndef k():\n    yield T.ptx_cp_async\n    return (T.ptx_cp_async, 1)\nprint(k, T.ptx_cp_async.__doc__)\n",
    CALLS + "class C:\n    def m(self):\n        return {'a': T.ptx_cp_async}\n",
]


@pytest.mark.parametrize("text", READ_CASES)
def test_scan_quick_same_facts_small(text, monkeypatch):
    opts = _options()
    tree = ast.parse(text)
    got = {}
    for on in (True, False):
        monkeypatch.setattr(fast_scan, "QUICK", on)
        facts, s = _scan_facts(tree)
        got[on] = (facts, _reads(tree, s, opts), fast_scan.reaches_by_binding(s))
    assert got[True] == got[False]


@pytest.mark.slow  # the whole corpus
def test_scan_quick_same_facts(monkeypatch):
    """Every fact of the scan, the reads and the binding question, with the scan's speed-ups on and off."""
    opts = _options()
    n = 0
    for p, text, tree in _trees():
        got = {}
        for on in (True, False):
            monkeypatch.setattr(fast_scan, "QUICK", on)
            facts, s = _scan_facts(tree)
            got[on] = (facts, _reads(tree, s, opts), fast_scan.reaches_by_binding(s))
            mentions = s.mentions if on else mentions
        assert got[True] == got[False], p
        n += bool(mentions) and got[True][1] != "undecided"
    assert n > 50  # not vacuous: the statements holding mentions are walked in many files


def test_scan_quick_cases_find_reads():
    opts = _options()
    found = [_reads(tree, fast_scan.scan(tree), opts) for tree in map(ast.parse, READ_CASES)]
    assert sum(bool(r) and r != "undecided" for r in found) >= 3 and "undecided" in found


# ------------------------------------------------------------------------------- habits without the tokenizer

FLAT = ['x = 1\ny = [1, 2]\n', 'def f(a, b=(1, 2)):\n    """Doc\n    more."""\n    return {a: b}\n',
        '@d(1)\n@e\nclass C(B):\n    def m(self): return f(x)\n',
        'try:\n    f()\nexcept (A, B) as e:\n    g()\nelse:\n    pass\nfinally:\n    h()\n',
        'if a:\n    b\nelif (c):\n    d\n', 'for i in range(3): f(i)\n']
NOT_FLAT = ['x = (1,\n     2)\n', 'def f(\n):\n    pass\n', 'def f(a,\n      b): return 1\n', '@d(\n)\ndef f(): pass\n',
            '@(d\n)\ndef f(): pass\n', 'x = f(a\n)\n', 'for i in [1,\n          2]:\n    pass\n',
            'class C(\n    B):\n    pass\n', 'try:\n    f()\nexcept (A,\n        B):\n    g()\n', '("""a\nb""")\n',
            'if a:\n    # c\n    b\n', 'match x:\n    case 1:\n        pass\n', 'x = [\n    1,\n]\n']


@pytest.mark.parametrize("text", FLAT)
def test_flat_pieces_give_the_tokenizers_habits(text):
    assert window._flat(ast.parse(text), text)
    assert file_style.quick_habits(text, True) == file_style.habits(text) == (True, '"', frozenset())


@pytest.mark.parametrize("text", NOT_FLAT)
def test_pieces_that_may_split_a_list_are_not_flat(text):
    assert not window._flat(ast.parse(text), text)


@pytest.mark.slow  # the whole corpus
def test_quick_habits_equal_the_tokenizers(monkeypatch):
    """Wherever a text's pieces are flat, its habits are the tokenizer's (and they are flat often enough)."""
    monkeypatch.setattr(window, "QUICK", True)
    n = 0
    for p, text in _texts():
        segs = window._segments(text)
        for piece in ([text[s.start:s.end] for s in segs] if segs else []):
            flat = window._flat(ast.parse(piece), piece)
            if flat:
                assert file_style.habits(piece)[0] is True, (p, piece)
                n += 1
            if flat and "'" not in piece:
                assert file_style.quick_habits(piece, True) == file_style.habits(piece), (p, piece)
        if segs and all(s.flat for s in segs):
            assert file_style.quick_habits(text, True) in (None, file_style.habits(text)), p
    assert n > 400


def test_line_context_bounded_search_same(monkeypatch):
    import random

    rnd = random.Random(7)
    for _ in range(20000):
        text = "".join(rnd.choice("ab \r\n") for _ in range(rnd.randint(0, 14)))
        rs = rnd.randint(0, len(text))
        re_ = rnd.randint(rs, len(text))
        got = []
        for on in (True, False):
            monkeypatch.setattr(layout_render, "BOUNDED", on)
            got.append(layout_render.line_context(text, rs, re_))
        assert got[0] == got[1], (text, rs, re_)


def test_gc_pause_restores_the_collector(monkeypatch):
    """GC_PAUSE: the collector runs again after each text, also one libcst decides, and a collector already off
    stays off."""
    import gc

    opts = _options()
    monkeypatch.setattr(fast, "GC_PAUSE", True)
    texts = ["import tilelang.language as T\nT.ptx_cp_async('float32', a, 0, b, 0, 16)\n",
             "cp = T.ptx_cp_async\ncp()\n", "def (:\n ptx_cp_async(\n"]
    assert gc.isenabled()
    for text in texts:
        fast.decide(text, "f.py", opts, True)
        assert gc.isenabled()
    gc.disable()
    try:
        for text in texts:
            fast.decide(text, "f.py", opts, True)
            assert not gc.isenabled()
    finally:
        gc.enable()


def _alias_texts() -> list:
    """Alias graphs: chains written forward and backward, a cycle, branches, chains that reach no call."""
    import random

    rng = random.Random(26)
    out = []
    for n in (3, 40):
        chain = ["a0 = T.ptx_cp_async"] + [f"a{i} = a{i - 1}" for i in range(1, n)]
        call = f"\n\ndef k(S, A):\n    a{n - 1}('float16', S.data, 0, A.data, 0, 16)\n"
        out += ["import tilelang.language as T\n" + "\n".join(chain) + call,
                "import tilelang.language as T\n" + "\n".join(reversed(chain)) + call,
                "import tilelang.language as T\n" + "\n".join(chain[1:]) + call]  # the root never bound to it
    for _ in range(20):
        lines = []
        for i in range(30):
            j = rng.randrange(30)
            lines.append(rng.choice([f"b{i} = b{j}", f"b{i} = b{j}", f"b{i} = c{j} = b{j}", f"b{i} = T.ptx_cp_async",
                                     f"b{i} = f(b{j})"]))
        rng.shuffle(lines)
        out.append("import tilelang.language as T\n" + "\n".join(lines) +
                   f"\n\ndef k(S, A):\n    b{rng.randrange(30)}('float16', S.data, 0, A.data, 0, 16)\n")
    return out


@pytest.mark.parametrize("text", _alias_texts())
def test_alias_chains_are_followed_the_same_by_search_and_fixed_point(text, monkeypatch):
    tree = ast.parse(text)
    got = {}
    for on in (True, False):
        monkeypatch.setattr(fast_scan, "QUICK", on)
        s = fast_scan.scan(tree, {})
        got[on] = (fast_scan._reaching(s), fast_scan.reaches_by_binding(s))
    assert got[True] == got[False]


def test_enclosing_names_same_with_the_nesting_index(monkeypatch):
    """fast_scan.enclosing under QUICK (the definitions' nesting computed once per scan): each finding's function,
    in nested and sibling classes and functions, decorated ones, one-line ones, against every definition looked at."""
    parts = ["import tilelang.language as T\n\n\n"]
    for i in range(30):
        deco = "@staticmethod\n    " if i % 3 == 0 else ""
        parts.append(f"class C{i}:\n    x = 1\n\n    {deco}def f{i}(self):\n        return T.ptx_cp_async\n\n"
                     f"    class Inner{i}:\n        def g(self): return [T.ptx_cp_async]\n\n")
        parts.append(f"def h{i}():\n    def inner():\n        return T.ptx_cp_async\n    return inner\n\n\n")
        parts.append(f"@T.prim_func\ndef k{i}(A: T.Buffer((64,), \"float16\")):\n"
                     f"    S = T.alloc_shared((64,), \"float16\")\n"
                     f"    T.ptx_cp_async(\"float16\", S.data, {i}, A.data, {i}, 16)\n\n\n")
    text = "".join(parts)
    opts = _options()
    got = {}
    for on in (True, False):
        monkeypatch.setattr(fast_scan, "QUICK", on)
        got[on] = _analysis(text, opts, False)
    assert got[True] == got[False]
    functions = {f.function for f in got[True][2]}
    assert {"C3.Inner3.g", "C0.f0", "h5.inner", "k7"} <= functions, sorted(functions)[:10]
