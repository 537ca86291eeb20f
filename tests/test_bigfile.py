"""Large Python files through the whole pipeline (engine.process_file): windowed (window.py) and whole-file
runs give the same outcome, in --check and in write mode, and a windowed run's memory is bounded by its
windows, not by the file.  Speed is measured in benchmarks/bigfile_bench.py, never asserted here."""
from __future__ import annotations

import tracemalloc

import pytest

from cpasync_migrate import engine
from cpasync_migrate.engine import RunSettings
from cpasync_migrate.findings import Status
from cpasync_migrate.python import window

KERNEL = '''

@T.prim_func
def copy_{i}(A: T.Tensor((256,), "float16"), B: T.Tensor((256,), "float16")):
    with T.Kernel(1, threads=32) as bx:
        S = T.alloc_shared((256,), "float16")
        tx = T.get_thread_binding()
        T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)  # {note}
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[tx * 8 + i] = S[tx * 8 + i]
'''

OTHER = '''

def shape_{i}(n,
              m):
    return [n,
            m]
'''


def _module(n: int) -> str:
    parts = ["import tilelang.language as T\n"]
    for i in range(n):
        note = "cpasync-migrate: ignore" if i == 4 else f"copy {i}"
        parts.append(KERNEL.format(i=i, note=note) if i % 2 == 0 else OTHER.format(i=i))
    return "".join(parts)


def _outcome(path, mode, windowed: bool, monkeypatch):
    monkeypatch.setattr(window, "ENABLED", windowed)
    o = engine.process_file(str(path), RunSettings(mode=mode, keep_texts=True))
    return o


def _summary(o):
    return ([(f.line, f.column, f.code, f.status, f.message, f.original, f.replacement) for f in o.findings],
            o.new_text, o.written, o.error)


@pytest.mark.parametrize("mode", ["check", "write"])
def test_windowed_run_equals_whole(tmp_path, mode, monkeypatch):
    monkeypatch.setattr(window, "MIN_CHARS", 0)
    monkeypatch.setattr(window, "WINDOW_CHARS", 2000)
    text = _module(40)
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text(text, encoding="utf-8")
    b.write_text(text, encoding="utf-8")
    assert window.plan(text, engine.front_end_options(RunSettings(mode=mode)), 0) is not None
    on = _outcome(a, mode, True, monkeypatch)
    off = _outcome(b, mode, False, monkeypatch)
    assert _summary(on) == _summary(off)
    assert sum(f.code == "CPA001" for f in on.findings) == 20
    assert sum(f.status is Status.SUPPRESSED for f in on.findings) == 1
    if mode == "write":
        assert a.read_bytes() == b.read_bytes() != text.encode()


def _peak(fn) -> int:
    import gc

    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow  # an equality run over a large corpus (the default run keeps the fixtures and the small files)
def test_windowed_memory_bounded_by_windows(tmp_path, monkeypatch):
    """Twice the file, about the same peak: the windows' size bounds it (the whole-file pass grows)."""
    monkeypatch.setattr(window, "ENABLED", True)
    monkeypatch.setattr(window, "MIN_CHARS", 0)
    monkeypatch.setattr(window, "WINDOW_CHARS", 2000)
    opts = engine.front_end_options(RunSettings(mode="check"))
    from cpasync_migrate import python as pyfe

    assert window.plan(_module(48), opts) is not None

    peaks = {}
    for n in (16, 48):
        text = _module(n)
        pyfe.analyze(text, "x.py", opts)  # imports and rule tables loaded outside the measurement
        peaks[("windowed", n)] = _peak(lambda: pyfe.analyze(text, "x.py", opts))
        peaks[("whole", n)] = _peak(lambda: pyfe.analyze(text, "x.py", opts, windowed=False))
    assert peaks[("windowed", 48)] < 1.5 * peaks[("windowed", 16)], peaks
    assert peaks[("whole", 48)] > 2 * peaks[("whole", 16)], peaks
    assert peaks[("windowed", 48)] * 2 < peaks[("whole", 48)], peaks


# --- the speed-ups' switches: positions.py (one rendering for positions, parents and nodes), window.FREEZE ---

import libcst as cst  # noqa: E402
from libcst.metadata import MetadataWrapper, PositionProvider  # noqa: E402

from cpasync_migrate import python as pyfe_module  # noqa: E402
from cpasync_migrate.python import positions, rewrite  # noqa: E402
from conftest import ROOT  # noqa: E402
from fixture_args import fixture_options  # noqa: E402
from fixture_cases import cases  # noqa: E402

PY_CASES = cases("python")
# every Python text of the project libcst reads: the fixtures (inputs and outputs), the realtl kernels, the
# examples and the front end's own source (the widest mix of statements and whitespace at hand)
CORPUS = sorted({*(ROOT / "tests" / "fixtures" / "python").glob("*.py"),
                 *(ROOT / "tests" / "realtl" / "kernels").glob("*.py"),
                 *(ROOT / "examples").rglob("*.py"),
                 *(ROOT / "cpasync_migrate" / "python").rglob("*.py")})


def _corpus_modules():
    for p in CORPUS:
        try:
            yield p, cst.parse_module(p.read_bytes().decode("utf-8"))
        except (UnicodeDecodeError, cst.ParserSyntaxError):
            continue  # (hostile fixtures: no tree to compare)


@pytest.mark.slow  # an equality run over a large corpus (the default run keeps the fixtures and the small files)
def test_rendering_gives_libcsts_positions_parents_and_nodes():
    n = 0
    for p, module in _corpus_modules():
        ref = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        walk = positions.Walk(module)
        alone = positions.Positions(module)
        assert set(walk.positions) == set(ref) == set(alone), p
        assert all(walk.positions[k] == v == alone[k] for k, v in ref.items()), p
        seen = rewrite._Collector()
        module.visit(seen)
        assert walk.parents == seen.parents, p
        for name in ("calls", "attributes", "subscripts", "import_froms"):
            assert getattr(walk, name) == getattr(seen, name), (p, name)  # the same nodes, the same order
        n += 1
    assert n > 150  # not vacuous: the corpus is read


def test_position_bookkeeping_of_odd_line_breaks():
    """A lone \\r, \\r\\n and a form feed, inside and outside strings, are counted as libcst counts them."""
    text = 'x = 1\r\ny = """a\rb\r\nc"""\r\n\x0cz = (1,\r\n     2)\n# c\rw = f(\n  3)\n'
    module = cst.parse_module(text)
    ref = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    got = positions.Positions(module)
    assert len(ref) > 20 and all(got[k] == v for k, v in ref.items())


def _fixture_options(meta):
    opts = engine.front_end_options(RunSettings(mode="check"))
    if meta:
        o = fixture_options(opts.rules, meta.get("args", []))
        opts = engine.front_end_options(RunSettings(mode="check", target=o["target"], source=o["source"] or "legacy"))
    return opts


def _switched(monkeypatch, on: bool):
    from cpasync_migrate.python import scopes

    monkeypatch.setattr(scopes, "DIRECT", on)
    monkeypatch.setattr(positions, "ENABLED", on)
    monkeypatch.setattr(positions, "WALK", on)
    monkeypatch.setattr(window, "FREEZE", on)


@pytest.mark.slow  # an equality run of the speed-ups over every fixture
@pytest.mark.parametrize("case", PY_CASES, ids=str)
def test_fixture_same_with_speedups_off(case, monkeypatch):
    opts = _fixture_options(case.meta)
    raw = case.input.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        pytest.skip("not UTF-8: the engine decodes it (test_fixtures)")
    got = {}
    for on in (True, False):
        _switched(monkeypatch, on)
        a = pyfe_module.analyze(text, "f.py", opts, windowed=False)
        got[on] = (a.error, a.migrated, a.findings)
    assert got[True] == got[False]


@pytest.mark.slow  # an equality run over a large corpus (the default run keeps the fixtures and the small files)
@pytest.mark.parametrize("mode", ["check", "write"])
@pytest.mark.parametrize("mixed", [False, True])
def test_big_file_same_with_speedups_off(tmp_path, mode, mixed, monkeypatch):
    """The whole pipeline on a generated windowed file (and one in CRLF with a comment between kernels):
    findings, statuses, new text and written bytes are the same with every speed-up switch off."""
    monkeypatch.setattr(window, "MIN_CHARS", 0)
    monkeypatch.setattr(window, "WINDOW_CHARS", 2000)
    text = _module(30)
    if mixed:
        text = text.replace("\n\n@T", "\n# between\n@T").replace("\n", "\r\n")
    assert window.plan(text, engine.front_end_options(RunSettings(mode=mode)), 0) is not None
    outs = {}
    for on in (True, False):
        _switched(monkeypatch, on)
        p = tmp_path / f"{on}.py"
        p.write_bytes(text.encode())
        outs[on] = (_summary(_outcome(p, mode, True, monkeypatch)), p.read_bytes())
    assert outs[True] == outs[False]
    assert sum(f[2] == "CPA001" for f in outs[True][0][0]) == 15
    if mode == "write":
        assert outs[True][1] != text.encode()


def _scope_canon(module, scope_map) -> list:
    """Everything the checks read of libcst's scopes, with scopes numbered by first appearance and nodes by
    identity: each node's scope, each scope's kind, parent, assignments, accesses and their referents, and the
    qualified names of every name and attribute."""
    from libcst.metadata import GlobalScope

    index: dict = {}
    out = []

    def num(s):
        return None if s is None else index.setdefault(id(s), len(index))

    for node, s in scope_map.items():
        out.append((id(node), num(s), type(s).__name__))
    for s in list({id(s): s for s in scope_map.values() if s is not None}.values()):
        parent = None if isinstance(s, GlobalScope) else num(s.parent)
        assigns = sorted((a.name, id(getattr(a, "node", None)), type(a).__name__, num(a.scope)) for a in s.assignments)
        accesses = sorted((id(a.node), a.is_annotation, a.is_type_hint,
                           tuple(sorted((r.name, id(getattr(r, "node", None))) for r in a.referents)))
                          for a in s.accesses)
        out.append((num(s), parent, assigns, accesses))
    for node, s in scope_map.items():
        if s is not None and isinstance(node, (cst.Name, cst.Attribute)):
            out.append((id(node), sorted((q.name, q.source.name) for q in s.get_qualified_names_for(node))))
    return out


@pytest.mark.slow  # an equality run over a large corpus (the default run keeps the fixtures and the small files)
def test_direct_scopes_equal_the_wrappers(monkeypatch):
    from libcst.metadata import ScopeProvider

    from cpasync_migrate.python import scopes

    assert scopes.DIRECT  # libcst's providers still have visit_Module as their only callback
    n = 0
    for p, module in _corpus_modules():
        monkeypatch.setattr(scopes, "DIRECT", True)
        direct = scopes.resolve(module)[ScopeProvider]
        monkeypatch.setattr(scopes, "DIRECT", False)
        wrapped = scopes.resolve(module)[ScopeProvider]
        # (nodes a string annotation is parsed into are made anew by each run: compared by number)
        own = set(map(id, positions.Positions(module)))
        assert sum(id(k) not in own for k in direct) == sum(id(k) not in own for k in wrapped), p
        direct = {k: v for k, v in direct.items() if id(k) in own}
        wrapped = {k: v for k, v in wrapped.items() if id(k) in own}
        assert list(map(id, direct)) == list(map(id, wrapped)), p
        assert _scope_canon(module, direct) == _scope_canon(module, wrapped), p
        n += 1
    assert n > 150
