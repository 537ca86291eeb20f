"""The engine's re-parse check of a C++ rewrite, parsed from the analysed file's tree (cpp/reparse.py), gives
the tree and the answer a fresh parse gives.

Compared, with ``reparse.ENABLED`` on and off: the parse tree of the rewrite (its S-expression and its
ERROR/MISSING count) and ``cpp.reparse_problem``'s answer; on every C++ fixture's rewrite (the safe fixes
alone, every fix, each fix alone) and on generated edits (inserted, deleted and replaced spans, non-ASCII
text next to them, CRLF line ends, edits at both ends, edits that break the parse).
"""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from cpasync_migrate import cpp
from cpasync_migrate.cpp import reparse, source
from cpasync_migrate.findings import apply_edits
from test_cpp_speedups import _fixture

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "cpp"


def _fresh(text: str):
    return source.parse_bytes(text.encode("utf-8", "surrogatepass")).root_node


def _check(old_text: str, new_text: str, monkeypatch) -> bool:
    """The rewrite's tree from the remembered one equals a fresh parse's, and so do the check's answers with the
    switch on and off; whether the remembered tree was used."""
    source._ERROR_MEMO.clear()
    reparse.remember(old_text, source.parse_bytes(old_text.encode("utf-8", "surrogatepass")))
    root = reparse.tree_of_rewrite(old_text, new_text)
    fresh = _fresh(new_text)
    assert (root is None) == fresh.has_error  # an error-free rewrite is parsed from the tree, and only one
    if root is not None:
        assert str(root) == str(fresh)
        assert len(source.error_nodes(root)) == len(source.error_nodes(fresh))
        assert (root.start_byte, root.end_byte, root.end_point) == (fresh.start_byte, fresh.end_byte, fresh.end_point)
    on = cpp.reparse_problem(old_text, new_text)
    source._ERROR_MEMO.clear()
    with monkeypatch.context() as m:
        m.setattr(reparse, "ENABLED", False)
        off = cpp.reparse_problem(old_text, new_text)
    source._ERROR_MEMO.clear()
    assert on == off
    return root is not None


def _rewrites(text: str, path: str, opts) -> list[str]:
    findings = cpp.analyze(text, path, opts).findings
    fixes = [f.fix for f in findings if f.fix is not None]
    out = []
    if fixes:
        out.append(apply_edits(text, [e for fx in fixes if fx.safe for e in fx.edits]))
        out.append(apply_edits(text, [e for fx in fixes for e in fx.edits]))
        out.extend(apply_edits(text, list(fx.edits)) for fx in fixes)
    return out


def test_fixture_rewrites_parse_the_same_from_the_tree(monkeypatch):
    used = 0
    for meta in sorted(FIXTURES.glob("*.toml")):
        text, path, opts = _fixture(meta.stem)
        for new in _rewrites(text, path, opts):
            used += _check(text, new, monkeypatch)
    assert used >= 20  # the fixtures' fixes were compared, not skipped


SAMPLE = """\
#include <tvm/tir/builtin.h>
namespace tvm {
namespace tl {
// a comment: \u00e9t\u00e9 \u4e2d\u6587
void CodeGen::VisitExpr_(const CallNode* op, std::ostream& os) {
  if (op->op.same_as(builtin::ptx_cp_async())) {
    std::string dst = this->PrintExpr(op->args[0]);
    os << "cp.async(" << dst << ", \\"\u00fc\\");\\n";
  } else {
    CodeGenC::VisitExpr_(op, os);
  }
}
}  // namespace tl
}  // namespace tvm
"""

PIECES = ["", "x", "\n", "\u00e9", "\u4e2d", "{", "}", "(", ")", ";", "/*", "*/", "\"", "int y = 0;\n",
          "if (a) { b(); }\n", "\r\n", "\U0001f600", "R\"(raw)\""]


@pytest.mark.parametrize("base", [SAMPLE, SAMPLE.replace("\n", "\r\n")], ids=["lf", "crlf"])
def test_generated_edits_parse_the_same_from_the_tree(base, monkeypatch):
    rng = random.Random(26)
    cases = [base + "int z;\n", "int z;\n" + base, base[:-1], base[1:], base.replace("ptx_cp_async", "ptx_cp_async_x"),
             base.replace("\u00e9t\u00e9", "ete"), base.replace("\u4e2d", "\u6587"), "", base.replace("{", "", 1)]
    for _ in range(150):
        new = base
        for _ in range(rng.randint(1, 3)):
            a = rng.randint(0, len(new))
            b = min(len(new), a + rng.choice([0, 0, 1, 2, 5, 20]))
            new = new[:a] + rng.choice(PIECES) + new[b:]
        cases.append(new)
    used = sum(_check(base, new, monkeypatch) for new in cases)
    assert 20 <= used < len(cases)  # both kinds of rewrite were compared


def test_another_text_is_parsed_whole(monkeypatch):
    reparse.remember(SAMPLE, source.parse_bytes(SAMPLE.encode()))
    assert reparse.tree_of_rewrite(SAMPLE + " ", SAMPLE) is None  # not the text the tree is of
    with monkeypatch.context() as m:
        m.setattr(reparse, "ENABLED", False)
        assert reparse.tree_of_rewrite(SAMPLE, SAMPLE + " ") is None
    assert reparse.tree_of_rewrite(SAMPLE, SAMPLE + " ") is not None


def test_an_analysis_keeps_its_own_tree():
    text, path, opts = _fixture(sorted(FIXTURES.glob("*.toml"))[0].stem)
    cpp.analyze(text, path, opts)
    assert reparse._LAST and reparse._LAST[0][0] == text
    cpp.analyze(SAMPLE, "k.cc", opts)
    assert reparse._LAST[0][0] == SAMPLE
