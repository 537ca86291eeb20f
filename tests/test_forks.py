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


_APPENDS = """\
Stmt Lower(const BufferStoreNode* st, const BufferLoadNode* ld, PrimExpr p, PrimExpr q, int n) {
  Array<PrimExpr> args = {st->buffer->data, st->indices[0], ld->buffer->data, ld->indices[0], PrimExpr(4)};
BODY
  return Evaluate(Call(st->buffer->dtype, builtin::ptx_cp_async(), args));
}
"""


@pytest.mark.parametrize("body, fixed", [
    ("  if (n) { args.push_back(p); } else { args.push_back(q); }", True),  # one per path
    ("  if (n == 1) args.push_back(p);\n  else if (n == 2) args.push_back(q);\n  else args.push_back(p || q);", True),
    ("  if (n) { args.push_back(p); args.push_back(q); }", False),  # two on one path
    ("  if (n) args.push_back(p);\n  if (!n) args.push_back(q);", False),  # two ifs: the text does not exclude both
    ("  for (int i = 0; i < n; ++i) { args.push_back(p); }", False),  # may run more than once
])
def test_appended_predicate_one_per_path(body, fixed):
    [f] = analyze(_APPENDS.replace("BODY", body), "p.cc", OPTS).findings
    assert f.code == "CPA102"
    assert (f.fix is not None) is fixed, f.message
    if fixed:
        assert len(f.fix.edits) == 1 and "tvm_access_ptr" in f.fix.edits[0].replacement
    else:
        assert "left for a person" in f.message


_HELPER = """\
Array<PrimExpr> MakeArgs(const Buffer& dst, PrimExpr a, const Buffer& src, PrimExpr b) {
  RET
}
Stmt One(const BufferStoreNode* st, const BufferLoadNode* ld) {
  return Evaluate(Call(st->buffer->dtype, builtin::ptx_cp_async(), MakeArgs(st->buffer, st->indices[0], ld->buffer, ld->indices[0])));
}
"""


def test_a_helper_returning_the_list_is_rewritten_once_for_all_its_calls():
    text = _HELPER.replace("RET", "return {dst->data, a, src->data, b, PrimExpr(16)};") + """\
Stmt Two(const BufferStoreNode* st, const BufferLoadNode* ld) {
  return Evaluate(Call(st->buffer->dtype, builtin::ptx_cp_async(), this->MakeArgs(st->buffer, 0, ld->buffer, 0)));
}
"""
    fs = analyze(text, "p.cc", OPTS).findings
    assert [(f.line, f.code) for f in fs] == [(5, "CPA102")]
    assert fs[0].fix is not None and fs[0].fix.safe and "MakeArgs" in fs[0].message
    [e] = fs[0].fix.edits
    assert text[e.start:e.end] == "dst->data, a, src->data, b, PrimExpr(16)"


@pytest.mark.parametrize("ret, extra, why", [
    ("return {dst->data, a, src->data, b, PrimExpr(16)};",
     "PrimExpr Other(const Buffer& d) { return Call(DataType::Handle(), builtin::ptx_wait_group(), MakeArgs(d, 0, d, 0)); }\n",
     "other than as the arguments"),
    ("if (a.defined()) return {dst->data, a, src->data, b, PrimExpr(16)};\n  return Cached();", "", "also returns"),
])
def test_a_helper_with_other_users_or_returns_is_left(ret, extra, why):
    fs = analyze(_HELPER.replace("RET", ret) + extra, "p.cc", OPTS).findings
    [f] = [f for f in fs if f.code == "CPA102"]
    assert f.fix is None and why in f.message, f.message


def test_a_helper_returning_access_pointers_is_not_legacy():
    text = _HELPER.replace("RET", "return {dst.access_ptr(2), src.access_ptr(1), PrimExpr(16), a, b};")
    assert _codes(text) == []
