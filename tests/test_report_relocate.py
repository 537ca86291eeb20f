"""Relocating a written file's findings (report.relocate_written): the binary search (``BISECT``) gives the walk's
answers, on random edit sets and through the CLI on a written file whose sites are partly left for a person."""
import json
import random
from collections import namedtuple

from conftest import run_cli
from test_cli import LEGACY, MANUAL

from cpasync_migrate.report import _linear_shift, _Shifts

Edit = namedtuple("Edit", "start end replacement")


def _edits(rng, n, text_len, overlap):
    out = set()
    for _ in range(n):
        s = rng.randrange(text_len + 1)
        e = s if rng.random() < 0.3 else min(text_len, s + rng.randrange(1, 6))
        out.add(Edit(start=s, end=e, replacement="x" * rng.randrange(0, 7)))
    edits = sorted(out, key=lambda e: (e.start, e.end, e.replacement))
    if not overlap:  # as applied edits are: none starts inside another
        kept, last = [], -1
        for e in edits:
            if e.start >= last and not (kept and e.start == kept[-1].start == kept[-1].end == e.end):
                kept.append(e)
                last = e.end
        edits = kept
    return edits


def test_binary_search_shifts_as_the_walk_does():
    rng = random.Random(20261202)
    for case in range(400):
        edits = _edits(rng, rng.randrange(0, 12), 60, overlap=case % 4 == 0)
        walk, search = _linear_shift(edits), _Shifts(edits).shift
        for off in range(0, 62):
            for before in (False, True):
                assert search(off, before) == walk(off, before), (edits, off, before)


def test_the_shift_moves_past_an_edit_and_into_one():
    edits = [Edit(start=2, end=4, replacement="abcde"), Edit(start=6, end=6, replacement="yy")]
    s = _Shifts(edits).shift
    assert s(1, False) == 1 and s(4, False) == 7 and s(3, False) == 2  # before, after, inside the first edit
    assert s(6, False) == 9 and s(6, True) == 11  # the insertion at 6 counts only when asked


def test_a_written_file_reports_the_same_positions_either_way(tmp_path):
    head, body = LEGACY.split("\n\n\n", 1)
    kernels = "\n\n".join(body.replace("def main", f"def main{i}") for i in range(30))
    manual = MANUAL.split("\n\n\n", 1)[1]
    text = head + "\n\n\n" + kernels + "\n\n" + manual + "\n\n" + kernels.replace("main", "m") + "\n\n" + \
        manual.replace("copy", "copy_last")
    out = {}
    for switch in ("1", "0"):
        d = tmp_path / switch
        d.mkdir()
        (d / "k.py").write_text(text)
        r = run_cli("--no-cache", "k.py", cwd=d, env={"CPASYNC_MIGRATE_RELOCATE_BISECT": switch})
        assert r.returncode == 1, r.stderr
        out[switch] = (r.stdout, (d / "k.py").read_text())
    assert out["1"] == out["0"]
    report, written = out["1"]
    sites = [line.split(":")[1:3] for line in report.splitlines() if line.startswith("k.py:") and ": CPA" in line]
    assert len(sites) == 2  # the two calls left for a person, where they stand in the written file
    lines = written.splitlines()
    for line, column in sites:
        assert lines[int(line) - 1][int(column) - 1:].startswith("T.ptx_cp_async(*args)"), (line, column)
    assert written.count("T.tvm_access_ptr(") == 120
