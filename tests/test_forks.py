"""Shapes of TileLang forks' C++ compilers (issue 29): which op an argument array reaches, lists already
in the access-pointer layout, builder shapes of real forks, printer helpers in upstream's migrated shape,
and a whole legacy tree of the project's own that migrates in one default run."""
from __future__ import annotations

import pytest

from cpasync_migrate.cpp import analyze
from cpasync_migrate.findings import FrontEndOptions
from cpasync_migrate.rules import load_rules

RULES = load_rules()
OPTS = FrontEndOptions(rules=RULES, target=RULES.generation("0.1.8"), source=RULES.legacy)


def _codes(text: str) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in analyze(text, "p.cc", OPTS).findings]


_OPVAR = """\
Stmt Lower(const BufferStoreNode* store, const BufferLoadNode* load, PrimExpr a, PrimExpr b, bool robust) {
  Op op = builtin::ptx_cp_async();
  Array<PrimExpr> args;
  if (robust) {
    op = OTHER;
    args = {store->buffer->data, a, load->buffer->data, b, PrimExpr(16)};
  } else {
    args = {store->buffer->data, a, load->buffer->data, b, PrimExpr(8)};
  }
  return Evaluate(Call(store->buffer->dtype, op, args));
}
"""


def test_a_list_built_where_the_op_variable_holds_another_op_is_not_ours():
    # the robust branch's list goes to another op; the other branch's is a legacy ptx_cp_async list
    [f] = analyze(_OPVAR.replace("OTHER", "tl::musa_cp_async_robust()"), "p.cc", OPTS).findings
    assert f.code == "CPA102" and f.fix is not None
    new_lists = [e.replacement for e in f.fix.edits]
    assert len(new_lists) == 1 and "PrimExpr(8)" in new_lists[0] and "PrimExpr(16)" not in new_lists[0]


def test_an_assignment_of_the_same_op_still_reaches_the_list():
    f = analyze(_OPVAR.replace("OTHER", "builtin::ptx_cp_async()"), "p.cc", OPTS).findings
    assert [x.code for x in f] == ["CPA102"] and len(f[0].fix.edits) == 2  # both lists are ptx_cp_async's


def test_an_assignment_in_another_branch_does_not_reach_the_list():
    text = _OPVAR.replace("    op = OTHER;\n", "").replace(
        "  } else {\n", "  } else {\n    if (robust) op = tl::musa_cp_async_robust();\n")
    # `op = ...` sits in an if inside the else branch: its block is not the list's, so the list keeps
    # the declaration's op; the first list too
    f = analyze(text, "p.cc", OPTS).findings
    assert [x.code for x in f] == ["CPA102"] and len(f[0].fix.edits) == 2


@pytest.mark.parametrize("first", [
    "dst_access_ptr",  # the name says so
    "store->buffer.access_ptr(2, DataType::Handle(), 1, a)",  # Buffer::access_ptr
    "Call(DataType::Handle(), builtin::tvm_access_ptr(), {TypeAnnotation(t), d, a, e, 2})",
])
def test_a_five_element_list_of_access_pointers_is_not_legacy(first):
    text = f"""\
Stmt Lower(const BufferStoreNode* store, PrimExpr src_ptr, PrimExpr a, PrimExpr base, PrimExpr size) {{
  PrimExpr dst_access_ptr;
  return Evaluate(Call(DataType::Handle(), tl::ptx_cp_async(), {{{first}, src_ptr, PrimExpr(16), base, size}}));
}}
"""
    assert _codes(text) == []


def test_a_local_initialised_with_an_access_pointer_is_one():
    text = """\
Stmt Lower(const BufferStoreNode* store, const BufferLoadNode* load, PrimExpr a, PrimExpr b) {
  PrimExpr d = store->buffer.access_ptr(2, DataType::Handle(), 1, a);
  PrimExpr s = load->buffer.access_ptr(1, DataType::Handle(), 1, b);
  Array<PrimExpr> args = {d, s, PrimExpr(16), a, b};
  return Evaluate(Call(DataType::Handle(), tl::ptx_cp_async(), args));
}
"""
    assert _codes(text) == []
    # the same list of data pointers is legacy
    legacy = text.replace("PrimExpr d = store->buffer.access_ptr(2, DataType::Handle(), 1, a);",
                          "Var d = store->buffer->data;").replace(
        "PrimExpr s = load->buffer.access_ptr(1, DataType::Handle(), 1, b);", "Var s = load->buffer->data;")
    assert [c for _, c in _codes(legacy)] == ["CPA102"]
