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
