"""Shapes of TileLang forks' C++ compilers (issue 29): which op an argument array reaches, lists already
in the access-pointer layout, builder shapes of real forks, printer helpers in upstream's migrated shape,
and a whole legacy tree of the project's own that migrates in one default run."""
from __future__ import annotations

import os
from pathlib import Path

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
    # the helper's return statement, rewritten once (named access pointers before it, cpp/hoist.py)
    assert text[e.start:e.end] == "return {dst->data, a, src->data, b, PrimExpr(16)};"
    assert e.replacement.endswith("return {dst_access_ptr, src_access_ptr, PrimExpr(16)};")


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


# ----------------------------------------------------------------- a whole legacy tree of the project's own
import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

from conftest import FIXTURES  # noqa: E402

# path in the tree -> fixture (its .in. form goes in, its hand-written .out. form must come out)
FORK = {
    "tilelang/language/tir/op.py": "sets/own/op",  # the Python API's definition
    "testing/python/test_copy.py": "python/alias_t_positional",  # a test calling the intrinsic
    "src/transform/inject_ptx_async_copy.cc": "cpp/fork_inject",  # builders: brace lists, array + predicate
    "src/transform/fork_copy.cc": "cpp/fork_builder_shapes",  # builders: predicate in one of 3 branches, helper
    "src/target/codegen_demo.cc": "cpp/codegen_branches",  # printer branches (CPA103) and a dead duplicate (CPA106)
    "src/target/codegen_fork.cc": "cpp/fork_codegen_helpers",  # a printer branch calling the printer helpers
    "src/target/ptx.h": "cpp/fork_ptx_helpers",  # the helpers' declarations (CPA105: pointer-only overloads)
    "src/target/ptx.cc": "cpp/fork_ptx_helpers_impl",  # their definitions (CPA105: empty offsets)
    "src/transform/merge_shared_memory_allocations.cc": "cpp/merge_rebase",  # the merge pass (CPA111)
    "src/tir/op/builtin.cc": "cpp/fork_builtin",  # the registration's arity (CPA110)
}


def _fixture(ref: str, kind: str):
    folder, _, stem = ref.rpartition("/")
    (hit,) = (FIXTURES / folder).glob(f"{stem}.{kind}.*")
    return hit


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "cpasync_migrate", "--no-cache", "--target", "0.1.8", "--format",
                           "json", *args, "."], cwd=cwd, capture_output=True, text=True,
                          env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"})


def test_a_whole_legacy_fork_migrates_in_one_default_run(tmp_path):
    for rel, ref in FORK.items():
        dest = tmp_path / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_fixture(ref, "in"), dest)

    before = _cli("--check", cwd=tmp_path)
    assert before.returncode == 1, before.stderr
    rep = json.loads(before.stdout)
    [cs] = rep["sets"]
    assert (cs["id"], cs["state"], cs["blockers"], cs["checklist"]) == ("tir.ptx_cp_async", "applied", [], [])
    roles = cs["roles"]
    assert roles["builder"] >= 5 and roles["reader"] >= 7 and roles["definition"] == 2 and roles["caller"] >= 1
    # the unreachable duplicate branch is no member: deleting it is right whatever the rest does
    assert [(f["path"], f["role"], f["set_id"]) for f in rep["findings"] if f["code"] == "CPA106"] == [
        ("src/target/codegen_demo.cc", None, None)]
    statuses = {f["status"] for f in rep["findings"] if f["code"] != "CPA900"}
    assert statuses == {"fixable"}, [(f["path"], f["line"], f["code"], f["status"]) for f in rep["findings"]]
    # the members whose fixes are unsafe on their own are applied because the set establishes what they assume
    unsafe_alone = {f["code"] for f in rep["findings"] if f["fix"] and f["fix"]["applicability"] == "unsafe"}
    assert unsafe_alone == {"CPA103", "CPA105", "CPA110", "CPA111"}

    write = _cli(cwd=tmp_path)  # default settings: no --unsafe-fixes, no --accept-partial-sets
    assert write.returncode == 0, write.stdout + write.stderr
    for rel, ref in FORK.items():
        assert (tmp_path / rel).read_bytes() == _fixture(ref, "out").read_bytes(), rel

    after = _cli("--check", cwd=tmp_path)
    assert after.returncode == 0, after.stdout
    assert [f for f in json.loads(after.stdout)["findings"] if f["code"] != "CPA900"] == []


# a held set writes nothing of its members; the one safe fix that is no member, the deletion of the unreachable
# duplicate branch (CPA106), is still made: the printer file loses these lines, and only these
_DEAD = """\
  } else if (call->op.same_as(builtin::ptx_cp_async())) {
    std::string dst_ptr = this->PrintExpr(call->args[0]);
    std::string dst_off = this->PrintExpr(call->args[1]);
    this->stream << AsyncCopyAsm(dst_ptr, dst_off, this->PrintExpr(call->args[2]),
                                 this->PrintExpr(call->args[3]), this->PrintExpr(call->args[4]));
"""


def _held_output(rel: str, ref: str) -> bytes:
    data = _fixture(ref, "in").read_bytes()
    if rel == "src/target/codegen_demo.cc":
        assert data.count(_DEAD.encode()) == 1
        data = data.replace(_DEAD.encode(), b"")
    return data


def test_the_fork_with_its_merge_pass_left_for_a_person_migrates_nothing(tmp_path):
    fork = dict(FORK)
    fork["src/transform/merge_shared_memory_allocations.cc"] = "cpp/merge_consumer"  # a shape left for a person
    for rel, ref in fork.items():
        dest = tmp_path / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_fixture(ref, "in"), dest)
    write = _cli(cwd=tmp_path)
    assert write.returncode == 1
    [cs] = json.loads(write.stdout)["sets"]
    assert cs["state"] == "held" and [b["path"] for b in cs["blockers"]] == [
        "src/transform/merge_shared_memory_allocations.cc"]
    for rel, ref in fork.items():
        assert (tmp_path / rel).read_bytes() == _held_output(rel, ref), rel


def test_helper_declarations_without_their_definitions_hold_the_fork(tmp_path):
    # the overloads forward "" to definitions the run does not see: nothing shows they take empty offsets
    fork = {k: v for k, v in FORK.items() if k != "src/target/ptx.cc"}
    for rel, ref in fork.items():
        dest = tmp_path / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_fixture(ref, "in"), dest)
    write = _cli(cwd=tmp_path)
    assert write.returncode == 1
    [cs] = json.loads(write.stdout)["sets"]
    assert cs["state"] == "held"
    assert sorted((b["path"], b["code"]) for b in cs["blockers"]) == [("src/target/ptx.h", "CPA105")] * 2
    assert all((tmp_path / rel).read_bytes() == _held_output(rel, ref) for rel, ref in fork.items())


# ----------------------------------------------------------------- upstream's last legacy revision
MIRROR = Path(os.environ.get("CPASYNC_TILELANG_MIRROR", "/work/.mirror/tile-ai+tilelang/repo"))
LEGACY_REV = "6fd0bd31f^"  # the parent of PR #1590's merge commit
CUTEDSL = ["src/target/codegen_cutedsl.cc", "tilelang/contrib/cutedsl"]


def _git(*args, **kw):
    return subprocess.run(["git", "-C", str(MIRROR), *args], capture_output=True, check=True, **kw)


@pytest.fixture(scope="module")
def upstream_legacy(tmp_path_factory):
    if not (MIRROR / "HEAD").is_file():
        pytest.skip(f"no bare mirror of tile-ai/tilelang at {MIRROR} (CPASYNC_TILELANG_MIRROR)")
    root = tmp_path_factory.mktemp("tl-legacy")
    tar = _git("archive", LEGACY_REV, "src", "tilelang", "testing").stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=tar, check=True)
    return root


@pytest.mark.slow  # a whole fork tree
def test_upstream_legacy_revision_migrates_whole_with_its_cutedsl_backend(upstream_legacy, tmp_path):
    # the CuTeDSL printer and its Python runtime change together (PR #1746's shape): one default run
    # migrates them with the rest, and the runtime comes out as upstream's 28ada604f wrote it
    tree = tmp_path / "t"
    shutil.copytree(upstream_legacy, tree)
    write = _cli(cwd=tree)
    assert write.returncode == 0, write.stdout[-3000:]
    rep = json.loads(write.stdout)
    [cs] = rep["sets"]
    assert cs["state"] == "applied" and cs["blockers"] == [] and cs["checklist"] == []
    written = {f["path"] for f in rep["findings"] if f["status"] == "rewritten"}
    assert {"src/target/codegen_cutedsl.cc", "tilelang/contrib/cutedsl/cpasync.py"} <= written
    assert (tree / "tilelang/contrib/cutedsl/cpasync.py").read_bytes() == _git(
        "show", "28ada604f:tilelang/contrib/cutedsl/cpasync.py").stdout
    after = _cli("--check", cwd=tree)
    assert after.returncode == 0 and json.loads(after.stdout)["findings"] == []


@pytest.mark.slow  # a whole fork tree
def test_upstream_legacy_revision_without_cutedsl_migrates_in_one_default_run(upstream_legacy, tmp_path):
    tree = tmp_path / "t"
    shutil.copytree(upstream_legacy, tree)
    for rel in CUTEDSL:
        p = tree / rel
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    write = _cli(cwd=tree)
    assert write.returncode == 0, write.stdout[-3000:]
    rep = json.loads(write.stdout)
    [cs] = rep["sets"]
    assert cs["state"] == "applied" and cs["blockers"] == [] and cs["checklist"] == []
    written = sorted({f["path"] for f in rep["findings"] if f["status"] == "rewritten"})
    assert written == [
        "src/target/codegen_cuda.cc", "src/target/codegen_hip.cc", "src/target/ptx.cc", "src/target/ptx.h",
        "src/transform/inject_ptx_async_copy.cc", "src/transform/merge_shared_memory_allocations.cc",
        "testing/python/transform/test_tilelang_transform_inject_fence_proxy.py", "tilelang/language/tir/op.py"]
    after = _cli("--check", cwd=tree)
    assert after.returncode == 0 and json.loads(after.stdout)["findings"] == []
    # upstream's PR #1590 made its printer helpers take empty offsets: the tool writes the same bytes
    ours = (tree / "src/target/ptx.cc").read_bytes()
    assert ours == _git("show", "6fd0bd31f:src/target/ptx.cc").stdout
    # and declared the same pointer-only overloads (upstream's header also reworded the doc comments)
    theirs = _git("show", "6fd0bd31f:src/target/ptx.h").stdout.decode()
    header = (tree / "src/target/ptx.h").read_text()
    for name in ("PrintCpAsyncAssembly", "PrintPredicatedCpAsyncAssembly"):
        start = theirs.index(f"inline std::string {name}(")
        overload = theirs[start:theirs.index("\n}\n", start) + 2]
        assert overload in header, name


def test_a_branch_an_earlier_disjunction_already_takes_is_dead():
    # a MUSA-style printer: the first branch takes both ops (and both layouts); a later legacy branch for
    # TVM's op never runs
    text = """\
void P::VisitExpr_(const CallNode* op, std::ostream& os) {
  if (op->op.same_as(tl::other())) {
    os << "x";
  } else if (op->op.same_as(builtin::ptx_cp_async()) ||
             op->op.same_as(tl::ptx_cp_async())) {
    if (op->args.size() == 3U || op->args.size() == 4U) {
      os << PrintExpr(op->args[0]) << PrintExpr(op->args[1]);
    } else {
      os << PrintExpr(op->args[0]) << PrintExpr(op->args[4]);
    }
  } else if (op->op.same_as(builtin::ptx_wait_group())) {
    os << "w";
  } else if ((op->op.same_as(builtin::ptx_cp_async()))) {
    std::string dst_offset = PrintExpr(op->args[1]);
    os << dst_offset;
  }
}
"""
    fs = analyze(text, "p.cc", OPTS).findings
    assert [(f.line, f.code) for f in fs] == [(4, "CPA107"), (13, "CPA106")]
    dead = fs[1]
    assert dead.fix is not None and dead.fix.safe and dead.role is None
    # `A && B` does not take every case A does: not dead
    text2 = text.replace("op->op.same_as(builtin::ptx_cp_async()) ||\n", "op->op.same_as(builtin::ptx_cp_async()) &&\n")
    assert "CPA106" not in [f.code for f in analyze(text2, "p.cc", OPTS).findings]


# ----------------------------------------------------------------- an already-migrated fork (MUSA)
MUSA = Path(os.environ.get("CPASYNC_MUSA_MIRROR", "/work/.mirror/tile-ai+tilelang-musa/repo"))


@pytest.mark.slow
@pytest.mark.parametrize("rev", ["HEAD", "3207817c"])  # its newest revision; the one that adds its robust op
def test_an_already_migrated_musa_fork_gets_no_legacy_builder(tmp_path, rev):
    if not (MUSA / "HEAD").is_file():
        pytest.skip(f"no bare mirror of tile-ai/tilelang-musa at {MUSA} (CPASYNC_MUSA_MIRROR)")
    tar = subprocess.run(["git", "-C", str(MUSA), "archive", rev, "src", "tilelang", "testing"],
                         capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=tar, check=True)
    rep = json.loads(_cli("--check", cwd=tmp_path).stdout)
    legacy = [(f["path"], f["code"]) for f in rep["findings"] if f["code"] != "CPA107"]
    # its robust op's 5-element list of access pointers is no legacy ptx_cp_async builder; the one legacy
    # leftover is an unreachable duplicate printer branch, which one default run deletes
    assert [c for _, c in legacy] == ["CPA106"], legacy
    assert _cli(cwd=tmp_path).returncode == 0
    after = _cli("--check", cwd=tmp_path)
    assert after.returncode == 0, after.stdout[-2000:]
