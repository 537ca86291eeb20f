"""The verifier's kernel fingerprints (verify/build/identity.py): a definition's text read from the text's lines split
once (``SEGMENTS``, which made a module of many kernels linear: 200 kernels in 310 kB never ended, now 16 s with
--verify) is ``ast.get_source_segment``'s, whatever the line ends, and so are the fingerprints."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cpasync_migrate.rules import load_rules
from cpasync_migrate.verify.build import build_kernels, identity

ROOT = Path(__file__).resolve().parent.parent
TEXTS = sorted((ROOT / "tests" / "fixtures" / "python").glob("*.py")) + sorted((ROOT / "examples").glob("*.py"))


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_segments_are_ast_s_on_every_fixture(end):
    seen = 0
    for path in TEXTS:
        text = path.read_text().replace("\n", end)
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.stmt, ast.expr)):
                assert identity._segment(text, node) == ast.get_source_segment(text, node), (path.name, node.lineno)
                seen += 1
    assert seen > 10_000


def test_fingerprints_are_the_same_with_the_switch_off(monkeypatch):
    rules = load_rules()
    for path in TEXTS:
        text = path.read_text()
        try:
            on = [b.fingerprint for b in build_kernels(text, rules, meaning="bytes")]
        except SyntaxError:
            continue
        monkeypatch.setattr(identity, "SEGMENTS", False)
        off = [b.fingerprint for b in build_kernels(text, rules, meaning="bytes")]
        monkeypatch.setattr(identity, "SEGMENTS", True)
        assert on == off, path.name
