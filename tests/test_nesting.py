"""The nesting scan (``files.nesting``): the same answer with its quick depth (``QUICK``) on and off, and a scan
that never restarts a match one character further on (a long tail without brackets was quadratic)."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from cpasync_migrate import files

FIXTURES = Path(__file__).parent / "fixtures"
PIECES = list("()[]{}'\"#/*R\\\n x-+~!&") + ['"""', "'''", "//", "/*", "*/", 'R"d(', ')d"', "not ", "await ", "rb'"]


def _both(text: str, python: bool, monkeypatch) -> tuple:
    monkeypatch.setattr(files, "QUICK", False)
    off = files.nesting(text, python)
    monkeypatch.setattr(files, "QUICK", True)
    return off, files.nesting(text, python)


@pytest.mark.parametrize("limit", [2, 6, 12])
def test_quick_depth_agrees_with_the_token_loop_on_random_texts(monkeypatch, limit):
    rng = random.Random(limit)
    for python in (True, False):
        monkeypatch.setitem(files.MAX_BRACKETS, python, limit)
        answers = set()
        for _ in range(1500):
            text = "".join(rng.choice(PIECES) for _ in range(rng.choice([5, 60, 300, 900])))
            off, on = _both(text, python, monkeypatch)
            assert on == off, (python, text)
            answers.add(off is None)
        assert answers == {True, False}  # both verdicts were exercised


def test_quick_depth_agrees_on_every_fixture(monkeypatch):
    texts = [(p, p.read_text(encoding="utf-8", errors="replace")) for p in sorted(FIXTURES.rglob("*"))
             if p.suffix in files.PYTHON_SUFFIXES + files.CPP_SUFFIXES]
    assert len(texts) > 50
    for limit in (4, 12):  # low limits, so that the fixtures' real nesting decides
        for python in (True, False):
            monkeypatch.setitem(files.MAX_BRACKETS, python, limit)
            for path, text in texts:
                off, on = _both(text, python, monkeypatch)
                assert on == off, path


@pytest.mark.parametrize("python", [True, False])
def test_depth_is_the_loops_depth(python, monkeypatch):
    # a closing bracket at depth 0 is ignored: ")(" is one deep, "))((" two
    monkeypatch.setitem(files.MAX_BRACKETS, python, 1)
    assert files._depth(")(", python) == 1
    assert files._depth("))((", python) == 2
    assert files._depth("((" + "'((('" + "))", python) == 2
    assert files.nesting("x = ((1))", python) is not None
    assert files.nesting("x = (1)(2)", python) is None


@pytest.mark.parametrize("python,tail", [(True, "x = 1\n"), (False, "Result r = a / b;\n")])
def test_the_scan_covers_the_text_without_restarting(python, tail):
    """Each match of the scan starts where the one before ended and the last ends at the text's end: a match
    that failed made the scan start again one character further on, over the same tail each time."""
    text = "()" * 300 + tail * 400
    ends = [0]
    for m in files._patterns()[python, False].finditer(text):
        assert m.start() == ends[-1], m
        ends.append(m.end())
    assert ends[-1] == len(text)


def test_the_unrolled_run_pattern_is_the_repeat_it_replaces():
    import re

    repeat = re.compile(r"(?:(?:[-+~!*&]|not\b|await\b)\s*){%d}" % (files.MAX_PREFIX_RUN + 1))
    unrolled = re.compile(files._LONG_RUN_RX)
    rng = random.Random(3)
    pieces = ["-", "+", "~", "!", "*", "&", " ", "\n", "\t", "\u00a0", "not", "await", "x", "cannot", "(", "nota"]
    seen = set()
    for _ in range(3000):
        text = rng.choice(["", " "]).join(
            rng.choice(pieces[:6] + pieces[10:12]) if rng.random() < 0.985 else rng.choice(pieces)
            for _ in range(rng.choice([90, 101, 102, 140, 260])))
        a, b = repeat.search(text), unrolled.search(text)
        assert (a and a.span()) == (b and b.span()), text
        seen.add(a is None)
    assert seen == {True, False}


def test_the_byte_row_is_found_wherever_a_run_is():
    """``_may_run`` is False only where the run pattern finds nothing: on texts made of runs with white space
    (non-ASCII too), words that end like ``not`` and names between them."""
    import re

    repeat = re.compile(r"(?:(?:[-+~!*&]|not\b|await\b)\s*){%d}" % (files.MAX_PREFIX_RUN + 1))
    rng = random.Random(5)
    pieces = ["-", "+", "~", "!", "*", "&", " ", "\n", "\t", "\u00a0", "\u2028", "not", "await", "x", "cannot",
              "(", "nota", "é", "\x1c"]
    seen = set()
    for _ in range(3000):
        text = rng.choice(["", " "]).join(
            rng.choice(pieces[:6] + pieces[11:13]) if rng.random() < 0.985 else rng.choice(pieces)
            for _ in range(rng.choice([90, 101, 102, 140, 260])))
        found = repeat.search(text) is not None
        assert files._may_run(text) or not found, text
        seen.add(found)
    assert seen == {True, False}


@pytest.mark.parametrize("python", [True, False])
def test_runs_get_the_same_answer_on_and_off(python, monkeypatch):
    rng = random.Random(7)
    texts = ["x = " + " ".join(rng.choice(["-", "not", "~", "await", "+ "]) for _ in range(n)) + " y\n"
             for n in (99, 100, 101, 150)]
    texts += ["# " + "-" * 200 + "\n", "/* " + "*" * 300 + " */\n", "a" + " - " * 120 + "b\n", "cannot " * 120]
    answers = set()
    for text in texts:
        off, on = _both(text, python, monkeypatch)
        assert on == off, text
        answers.add(on is None)
    assert answers == {True, False}
