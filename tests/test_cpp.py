"""C++ front end: fixtures (hand-written expected outputs) and unit checks.

The fixtures live in tests/fixtures/cpp: NAME.in.<ext>, NAME.out.<ext> and
NAME.toml (the CLI arguments, the expected exit code of a write run and the
expected sites).  These tests call the front end directly; the CLI runs the
same files through tests/test_fixtures.py.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from cpasync_migrate.cpp import SUFFIXES, analyze, reparse_problem
from cpasync_migrate.cpp.cpprules import load_cpp_rules
from cpasync_migrate.findings import Applicability, FrontEndOptions, Status, apply_edits
from cpasync_migrate.rules import load_rules

import harness
from harness import assert_fix, assert_no_fix

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "cpp"
RULES = load_rules()


def _cases():
    out = []
    for meta in sorted(FIXTURES.glob("*.toml")):
        ins = list(FIXTURES.glob(f"{meta.stem}.in.*"))
        assert len(ins) == 1, meta
        out.append(pytest.param(meta.stem, id=meta.stem))
    return out


def _load(name: str):
    meta = tomllib.loads((FIXTURES / f"{name}.toml").read_text(encoding="utf-8"))
    inp = next(FIXTURES.glob(f"{name}.in.*"))
    ext = inp.name.split(".in", 1)[1]
    outp = FIXTURES / f"{name}.out{ext}"
    read = lambda p: p.read_bytes().decode("utf-8")  # noqa: E731  (keep CRLF as it is)
    return meta, read(inp), read(outp), inp.name


def _options(args: list[str]) -> tuple[FrontEndOptions, bool]:
    target = "0.1.8"
    if "--target" in args:
        target = args[args.index("--target") + 1]
    gen = RULES.generation(target)
    return FrontEndOptions(rules=RULES, target=gen, source=RULES.legacy), "--unsafe-fixes" in args


def _status(f, unsafe: bool) -> str:
    """The bucket the engine puts a finding in (the contract in findings.py)."""
    if f.status is not None:
        return f.status.value
    if f.fix is None:
        return "manual"
    return "rewritten" if (f.fix.safe or unsafe) else "unsafe"


def _run(text: str, path: str, opts: FrontEndOptions, unsafe: bool):
    res = analyze(text, path, opts)
    assert res.error is None, res.error
    chosen = [f for f in res.findings if _status(f, unsafe) == "rewritten"]
    edits = [e for f in chosen for e in f.fix.edits]
    return res, edits, apply_edits(text, edits)


@pytest.mark.parametrize("name", _cases())
def test_fixture(name):
    meta, src, expected, fname = _load(name)
    opts, unsafe = _options(meta.get("args", []))
    res, edits, new = _run(src, fname, opts, unsafe)

    got = sorted((f.line, f.code, _status(f, unsafe)) for f in res.findings)
    # "held" is the change set's decision over the whole run (sets.py, tests/test_fixtures.py checks it): to the
    # front end such a site is one it rewrites
    held = any(e["status"] == "held" for e in meta.get("expect", []))
    want = sorted((e["line"], e["code"], "rewritten" if e["status"] == "held" else e["status"])
                  for e in meta.get("expect", []))
    assert got == want

    # The rewrite is the hand-written output, byte for byte (where no set holds it back).
    if not held:
        assert new == expected

    # Every finding is complete: one-line message, function, sane positions.
    for f in res.findings:
        assert f.message and "\n" not in f.message, f
        assert (f.line, f.column) <= (f.end_line, f.end_column)
        if f.code not in ("CPA109",):
            assert f.function, f
        if f.fix is not None:
            assert f.fix.steps
            if f.fix.applicability is Applicability.UNSAFE:
                assert f.fix.assumptions
            for a in f.fix.assumptions:
                assert a.endswith(".") and "\n" not in a

    # Edits of different findings never overlap.
    spans = sorted((e.start, e.end) for f in res.findings if f.fix for e in f.fix.edits)
    for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
        assert a1 <= b0, (a0, a1, b0, b1)

    # The hand-written output keeps every byte outside the tool's edit spans:
    # the unchanged stretches of the input appear in it, in order, prefix and
    # suffix included.
    pos = 0
    gaps, last = [], 0
    for e in sorted(edits, key=lambda e: e.start):
        gaps.append(src[last : e.start])
        last = e.end
    gaps.append(src[last:])
    assert expected.startswith(gaps[0]) and expected.endswith(gaps[-1])
    for g in gaps:
        at = expected.find(g, pos)
        assert at >= pos, g[:60]
        pos = at + len(g)
    if not edits:
        assert expected == src

    # A rewrite still parses as well as the original.
    assert reparse_problem(src, new) is None

    # Second pass: nothing more to rewrite.
    res2, edits2, new2 = _run(new, fname, opts, unsafe)
    assert edits2 == [] and new2 == new
    assert not [f for f in res2.findings if f.code in ("CPA101", "CPA102", "CPA103", "CPA106") and f.fix]


def test_every_fixture_has_an_expected_output():
    for meta in FIXTURES.glob("*.toml"):
        inp = next(FIXTURES.glob(f"{meta.stem}.in.*"))
        ext = inp.name.split(".in", 1)[1]
        assert (FIXTURES / f"{meta.stem}.out{ext}").is_file(), meta.stem
        assert ext in SUFFIXES


OPTS = FrontEndOptions(rules=RULES, target=RULES.generation("0.1.8"), source=RULES.legacy)

PLAIN = """\
namespace tvm {
namespace tl {
Stmt F(const Buffer& s, const Buffer& g, PrimExpr i, PrimExpr j) {
  return Evaluate(Call(s->dtype, builtin::ptx_cp_async(), {s->data, i, g->data, j, 8}));
}
}  // namespace tl
}  // namespace tvm
"""


def test_crlf_file_keeps_crlf():
    text = PLAIN.replace("\n", "\r\n")
    res = analyze(text, "crlf.cc", OPTS)
    [f] = res.findings
    assert f.code == "CPA101" and f.fix and f.fix.safe
    new = apply_edits(text, f.fix.edits)
    assert new.count("\n") == new.count("\r\n")
    assert new.count("\r\n") > text.count("\r\n")


def test_character_offsets_after_non_ascii_text():
    text = "// ∀ Größe → 16 Bytes, 日本語\n" + PLAIN
    res = analyze(text, "u.cc", OPTS)
    [f] = res.findings
    assert (f.line, f.column) == (5, 19)
    # one edit, the whole statement (laid out again, cpp/layout.py), at character offsets past the non-ASCII line
    [stmt] = f.fix.edits
    assert text[stmt.start : stmt.end] == (
        "return Evaluate(Call(s->dtype, builtin::ptx_cp_async(), {s->data, i, g->data, j, 8}));")
    new = apply_edits(text, f.fix.edits)
    assert "{dst_access_ptr, src_access_ptr, 8}));" in new
    assert new.startswith("// ∀ Größe → 16 Bytes, 日本語\n")
    assert "tvm_access_ptr" in new


def test_function_names_are_qualified():
    text = """\
struct Outer {
  struct Inner {
    Stmt Make(const Buffer& s, const Buffer& g) {
      return Evaluate(Call(s->dtype, builtin::ptx_cp_async(), {s->data, 0, g->data, 0, 4}));
    }
  };
};
Stmt Free::Standing(const Buffer& s, const Buffer& g) {
  auto body = [&]() { return Evaluate(Call(s->dtype, tl::ptx_cp_async(), {s->data, 0, g->data, 0, 4})); };
  return body();
}
"""
    res = analyze(text, "n.cc", OPTS)
    assert [f.function for f in res.findings] == ["Outer::Inner::Make", "Free::Standing"]


def test_reparse_problem_reports_new_errors():
    assert reparse_problem(PLAIN, PLAIN) is None
    broken = PLAIN.replace("{s->data, i, g->data, j, 8}));", "{s->data, i, g->data, j, 8});")
    msg = reparse_problem(PLAIN, broken)
    assert msg and "parse error" in msg
    # Fewer errors than before is fine.
    assert reparse_problem(broken, PLAIN) is None


def test_unparsable_file_is_an_error():
    res = analyze("\x00\x01 binary", "x.cc", OPTS)
    assert res.error and res.findings == []
    garbage = ")))) ]]] ;; }}} " * 40
    res = analyze(garbage, "g.cc", OPTS)
    assert res.error and res.error_line == 1


def test_no_sites_no_findings():
    text = """\
void F(const CallNode* op) {
  if (op->op.same_as(builtin::ptx_cp_async_barrier())) { Print(op->args[4]); }
  auto c = Call(DataType::Handle(), builtin::ptx_cp_async_bulk(), {a, b, c, d, e});
}
"""
    assert analyze(text, "n.cc", OPTS).findings == []


def test_construction_without_var_data_is_manual_with_reason():
    text = PLAIN.replace("{s->data, i, g->data, j, 8}", "{Base(s), i, g->data, j, 8}")
    [f] = assert_no_fix(text, code="CPA101", path="m.cc").findings
    assert "not visibly a tir::Var" in f.message


def test_predicate_moves_with_the_list():
    text = PLAIN.replace("{s->data, i, g->data, j, 8}", "{s->data, i, g->data, j, 8, ok}")
    r = harness.run(text, path="p.cc")
    assert r.codes() == ["CPA101"]
    # the predicate stays last, after the byte count, in the list of named access pointers
    assert "{dst_access_ptr, src_access_ptr, 8, ok}));" in r.text


def test_dead_branch_without_else_is_removed_with_its_whitespace():
    text = """\
void P::VisitExpr_(const CallNode* op, std::ostream& os) {
  if (op->op.same_as(builtin::ptx_cp_async())) {
    os << PrintExpr(op->args[0]) << PrintExpr(op->args[1]) << PrintExpr(op->args[2]);
  } else if (op->op.same_as(builtin::ptx_wait_group())) {
    os << "wait";
  } else if (op->op.same_as(builtin::ptx_cp_async())) {
    os << PrintExpr(op->args[4]);
  }
}
"""
    r = assert_fix(text, text.replace(
        """ else if (op->op.same_as(builtin::ptx_cp_async())) {
    os << PrintExpr(op->args[4]);
  }""",
        "",
    ), path="d.cc")
    dead = [f for f in r.findings if f.code == "CPA106"]
    assert len(dead) == 1 and dead[0].line == 6 and dead[0].fix.applicability is Applicability.SAFE and not dead[0].fix.assumptions


def test_consumer_with_other_offset_use_maps_every_index():
    text = """\
void P::VisitExpr_(const CallNode* op, std::ostream& os) {
  if (op->op.same_as(builtin::ptx_cp_async())) {
    std::string d = PrintExpr(op->args[0]);
    std::string d_off = PrintExpr(op->args[1]);
    std::string s = PrintExpr(op->args[2]);
    std::string s_off = PrintExpr(op->args[3]);
    std::string n = PrintExpr(op->args[4]);
    if (op->args.size() == 5) os << Helper(d, d_off, s, s_off, n);
  }
}
"""
    [f] = analyze(text, "c.cc", OPTS).findings
    assert f.code == "CPA104" and f.fix is None
    for piece in (
        "args[0] dst_data -> data inside args[0] dst_access_ptr",
        "args[1] dst_offset -> offset inside args[0] dst_access_ptr",
        "args[3] src_offset -> offset inside args[1] src_access_ptr",
        "args[4] bytes -> args[2] bytes",
        "args[5] predicate -> args[3] predicate",
        "args.size() 5/6 -> 3/4",
    ):
        assert piece in f.message


def test_suppressed_site_has_no_fix():
    text = PLAIN.replace("8}));", "8}));  // cpasync-migrate: ignore")
    [f] = analyze(text, "s.cc", OPTS).findings
    assert f.status is Status.SUPPRESSED and f.fix is None


def test_edit_next_to_parse_error_is_not_made():
    text = PLAIN.replace("  return Evaluate", "  DEMO_MACRO(x) y z\n  return Evaluate")
    res = analyze(text, "e.cc", OPTS)
    assert [f.code for f in res.findings] == ["CPA108"]
    assert res.findings[0].fix is None


def test_data_position_taken_as_var_is_a_legacy_consumer():
    text = """\
void Collect::VisitExpr_(const CallNode* call) {
  if (call->op.same_as(builtin::ptx_cp_async())) {
    written_.insert(Downcast<Var>(call->args[0]).get());
  }
  if (call->op.same_as(tl::ptx_cp_async())) {
    read_.insert(call->args[2].as<VarNode>());
  }
  if (call->op.same_as(builtin::ptx_cp_async())) {
    Call dst = Downcast<Call>(call->args[0]);
  }
}
"""
    res = analyze(text, "v.cc", OPTS)
    assert [(f.line, f.code) for f in res.findings] == [(2, "CPA104"), (5, "CPA104")]
    assert all(f.fix is None for f in res.findings)


def test_op_variable_outside_the_function_is_not_followed_and_other_ops_are_ignored():
    text = """\
Stmt F(const Buffer& s, const Buffer& g) {
  Op other = builtin::ptx_cp_async_bulk();
  return Evaluate(Call(s->dtype, other, {s->data, 0, g->data, 0, 16}));
}
"""
    assert analyze(text, "o.cc", OPTS).findings == []


# -- the relevance gate --------------------------------------------------------
# The analyzer skips if statements and calls that cannot hold an Op node (see
# CppAnalyzer._hot_ranges).  The gate must never change a result: each case is
# analysed with the gate and without it, and the two must agree exactly.

GATE_CASES = {
    # The Op variable is declared in a method of a local class; the consumer and the
    # construction are in the outer function, whose own body holds no op name.
    "local_class": """\
Stmt Outer(const CallNode* op, const Buffer& s, const Buffer& g) {
  struct Helper {
    void Make() { Op copy_op = builtin::ptx_cp_async(); }
  };
  if (op->op.same_as(copy_op)) {
    auto off = op->args[4];
  }
  return Evaluate(Call(s->dtype, copy_op, {s->data, 0, g->data, 0, 16}));
}
""",
    # The op named only at namespace scope: a call outside every function.
    "namespace_scope": """\
static const Call kCopy = Call(DataType::Handle(), builtin::ptx_cp_async(),
                               {dst_var, 0, src_var, 0, 16});
int Unrelated(int a) { if (a) { return Call(x, y, {1, 2, 3, 4, 5}).defined(); } return 0; }
""",
    # An Op variable in one function, its name reused in another that does not declare it.
    "two_functions": """\
void A() { Op cp = builtin::ptx_cp_async(); (void)cp; }
Stmt B(const Buffer& s, const Buffer& g, const CallNode* op) {
  if (op->op.same_as(cp)) { auto o = op->args[4]; }
  return Evaluate(Call(s->dtype, cp, {s->data, 0, g->data, 0, 16}));
}
""",
    # Nested definitions and the op in the inner one only.
    "nested": """\
namespace tl {
class Printer {
  void Visit(const CallNode* op, std::ostream& os) {
    if (op->op.same_as(builtin::ptx_cp_async())) {
      os << PrintArgs(op->args[0], op->args[1], op->args[2], op->args[3], op->args[4]);
    } else if (op->op.same_as(builtin::ptx_cp_async())) {
      os << "dead";
    }
  }
  void Other(const CallNode* op) { if (op->op.same_as(builtin::ptx_commit_group())) { return; } }
};
}  // namespace tl
""",
}


def _gate_results(text: str, path: str, opts, monkeypatch) -> tuple[list, list]:
    from cpasync_migrate.cpp.analyzer import CppAnalyzer

    def key(res):
        assert res.error is None, res.error
        return [(f.line, f.column, f.end_line, f.end_column, f.code, f.message, f.function,
                 None if f.fix is None else (tuple((e.start, e.end, e.replacement) for e in f.fix.edits),
                                             f.fix.applicability, tuple(f.fix.assumptions)))
                for f in res.findings]

    with monkeypatch.context() as m:
        m.setattr(CppAnalyzer, "gate", True)
        on = key(analyze(text, path, opts))
        m.setattr(CppAnalyzer, "gate", False)
        off = key(analyze(text, path, opts))
    return on, off


# (line, code) of each case's sites, read off the cases by hand: the Op variable of a
# local class's method is followed from the outer function; a name the function does
# not declare is not an Op; the second identical test of a chain is dead.
GATE_SITES = {
    "local_class": [(5, "CPA104"), (8, "CPA102")],
    "namespace_scope": [(1, "CPA101")],
    "two_functions": [],
    "nested": [(4, "CPA104"), (6, "CPA106")],
}


@pytest.mark.parametrize("name", sorted(GATE_CASES))
def test_gate_changes_nothing_on_crafted_cases(name, monkeypatch):
    on, off = _gate_results(GATE_CASES[name], f"{name}.cc", OPTS, monkeypatch)
    assert on == off
    assert [(f[0], f[4]) for f in on] == GATE_SITES[name]


@pytest.mark.parametrize("name", _cases())
def test_gate_changes_nothing_on_fixtures(name, monkeypatch):
    meta, src, _, fname = _load(name)
    opts, _ = _options(meta.get("args", []))
    on, off = _gate_results(src, fname, opts, monkeypatch)
    assert on == off


# ------------------------------------------------------------------ op and role of every finding

def _ops_roles(text, target="0.1.8"):
    opts, _ = _options(["--target", target])
    return [(f.line, f.code, f.op, f.role) for f in analyze(text, "x.cc", opts).findings]


def test_every_fixture_finding_has_an_op_and_a_role():
    for name in (p.values[0] for p in _cases()):
        meta, src, _, fname = _load(name)
        opts, _ = _options(meta.get("args", []))
        for f in analyze(src, fname, opts).findings:
            assert f.op in ("tir.ptx_cp_async", "tl.ptx_cp_async"), (name, f)
            # an unreachable duplicate branch has no part in the change: its deletion is right on its own
            assert f.role in ("builder", "reader", "definition") or (f.code == "CPA106" and f.role is None), (name, f)


def test_op_and_role_by_spelling():
    text = (
        "namespace tvm { namespace codegen {\n"
        "Stmt A(const Buffer& s, PrimExpr i) { return Evaluate(Call(s->dtype, tvm::tirx::builtin::ptx_cp_async(), {s->data, i, s->data, i, 16})); }\n"
        "Stmt B(const Buffer& s, PrimExpr i) { return Evaluate(Call(s->dtype, tvm::tl::ptx_cp_async(), {s->data, i, s->data, i, 16})); }\n"
        "Stmt C(const Buffer& s, PrimExpr i) { return Evaluate(Call(s->dtype, tir::builtin::ptx_cp_async(), {s->data, i, s->data, i, 16})); }\n"
        "void P(const CallNode* op) { if (op->op.same_as(tl::ptx_cp_async())) { ICHECK_EQ(op->args.size(), 5); } }\n"
        "void Q(const CallNode* op) { if (op->op.same_as(builtin::ptx_cp_async())) { TVM_FFI_ICHECK_EQ(op->args.size(), 6U); } }\n"
        "std::string PrintCpAsyncAssembly(const std::string& shared_ptr, const std::string& shared_elem_offset,\n"
        "                                 const std::string& global_ptr, const std::string& global_elem_offset, const std::string& bytes);\n"
        "}}\n"
        "#define MAKE_CP(d, o, s, so, n) Evaluate(Call(DataType::Handle(), tl::ptx_cp_async(), {d, o, s, so, n}))\n"
        "#define IS_CP(c) ((c)->op.same_as(builtin::ptx_cp_async()))\n"
        "TIR_DEFINE_BUILTIN_FUNC(ptx_cp_async).set_num_inputs(5);\n"
    )
    assert _ops_roles(text) == [
        (2, "CPA101", "tir.ptx_cp_async", "builder"),
        (3, "CPA101", "tl.ptx_cp_async", "builder"),
        (4, "CPA101", "tir.ptx_cp_async", "builder"),
        (5, "CPA104", "tl.ptx_cp_async", "reader"),
        (6, "CPA104", "tir.ptx_cp_async", "reader"),
        (7, "CPA105", "tir.ptx_cp_async", "reader"),
        (10, "CPA109", "tl.ptx_cp_async", "builder"),
        (11, "CPA109", "tir.ptx_cp_async", "reader"),
        (12, "CPA110", "tir.ptx_cp_async", "definition"),
    ]


@pytest.mark.parametrize("context, op", [
    ("namespace tvm {\nnamespace tl {\n{body}\n}\n}\n", "tl.ptx_cp_async"),
    ("namespace tvm::tl {\n{body}\n}\n", "tl.ptx_cp_async"),
    ("namespace tvm {\nnamespace tir {\nnamespace builtin {\n{body}\n}\n}\n}\n", "tir.ptx_cp_async"),
    ("namespace tvm {\nnamespace codegen {\nusing namespace tvm::tirx::builtin;\n{body}\n}\n}\n", "tir.ptx_cp_async"),
    ("using namespace tvm::tl;\nnamespace tvm {\nnamespace codegen {\n{body}\n}\n}\n", "tl.ptx_cp_async"),
    # a directive after the site, or in a scope that does not hold it, is not in force there
    ("namespace tvm {\nnamespace codegen {\n{body}\nusing namespace tvm::tirx::builtin;\n}\n}\n", "tl.ptx_cp_async"),
    ("namespace a {\nusing namespace tvm::tirx::builtin;\n}\nnamespace tvm {\n{body}\n}\n", "tl.ptx_cp_async"),
    # two directives naming different ops: the rules' default
    ("using namespace tvm::tirx::builtin;\nusing namespace tvm::tl;\n{body}\n", "tl.ptx_cp_async"),
    # the innermost namespace wins over a directive
    ("using namespace tvm::tirx::builtin;\nnamespace tvm {\nnamespace tl {\n{body}\n}\n}\n", "tl.ptx_cp_async"),
])
def test_unqualified_op_takes_its_context(context, op):
    body = "Stmt A(const Buffer& s, PrimExpr i) { return Evaluate(Call(s->dtype, ptx_cp_async(), {s->data, i, s->data, i, 16})); }"
    got = _ops_roles(context.replace("{body}", body))
    assert [(c, o, r) for _, c, o, r in got] == [("CPA101", op, "builder")]


def test_default_context_op_is_rules_data():
    r = load_cpp_rules(RULES)
    assert r.context_default == "tl.ptx_cp_async"
    assert r.op_of_scope("::tvm::tirx::builtin::") == "tir.ptx_cp_async"
    assert r.op_of_scope("") is None


def test_size_meaning_is_per_op_under_019():
    text = (
        "namespace tvm { namespace codegen {\n"
        "Stmt A(const Buffer& s, PrimExpr i) { return Evaluate(Call(s->dtype, builtin::ptx_cp_async(), {s->data, i, s->data, i, 16})); }\n"
        "Stmt B(const Buffer& s, PrimExpr i) { return Evaluate(Call(s->dtype, tl::ptx_cp_async(), {s->data, i, s->data, i, 16})); }\n"
        "}}\n"
    )
    opts, _ = _options(["--target", "0.1.9"])
    a, b = analyze(text, "x.cc", opts).findings
    assert a.fix is not None and a.fix.safe and "{dst_access_ptr, src_access_ptr, bytes}" in a.message
    assert b.fix is None and "`tl.ptx_cp_async` counts the copy in elements" in b.message
    assert "tl::access_ptr()" in b.message and "BufferLoad" in b.message
    opts, _ = _options(["--target", "0.1.8"])
    assert all(f.fix is not None for f in analyze(text, "x.cc", opts).findings)


@pytest.mark.parametrize("arity, found", [("5", True), ("6", True), ("-1", False), ("4", False), ("7", False),
                                          ("kInputs", False)])
def test_registration_arity(arity, found):
    text = f"namespace tvm {{ namespace tl {{\nTIR_DEFINE_TL_BUILTIN(ptx_cp_async).set_num_inputs({arity});\n}} }}\n"
    opts, _ = _options(["--target", "0.1.9"])
    fs = analyze(text, "x.cc", opts).findings
    assert [(f.code, f.op, f.role) for f in fs] == ([("CPA110", "tl.ptx_cp_async", "definition")] if found else [])
    if found:
        (e,) = fs[0].fix.edits
        assert text[e.start:e.end] == arity and e.replacement == "-1" and not fs[0].fix.safe


def test_every_helper_name_passes_the_byte_prefilter():
    """A file that only defines a helper carrying the legacy layout is still read past the byte check."""
    from cpasync_migrate import files
    from cpasync_migrate.cpp.cpprules import load_cpp_rules

    names = list(load_rules().python_api["helpers"]["names"]) + list(load_cpp_rules().helper_names)
    assert names
    for n in names:
        assert files.has_needle(n.encode()), n


# ------------------------------------------------------------------ the merge pass (CPA111)

_MERGE = """\
class R : public StmtExprMutator {
  PrimExpr VisitExpr_(const CallNode* op) final {
    if (op->op.same_as(builtin::tvm_access_ptr())) {
      Var b = Downcast<Var>(op->args[1]);
      if (!Shared(b)) return StmtExprMutator::VisitExpr_(op);
      return Call(op->dtype, op->op, {op->args[0], pool_, Off(b, op->args[0].dtype()) + op->args[2],
                                      op->args[3], op->args[4]});
    } else if (op->op.same_as(builtin::ptx_cp_async())) {
      DataType dtype = op->dtype;
      Var b = Downcast<Var>(op->args[0]);
      if (!Shared(b)) return StmtExprMutator::VisitExpr_(op);
      PrimExpr e = Off(b, dtype);
      PrimExpr o = this->VisitExpr(op->args[1]);
      if (op->args.size() == 5)
        return Call(dtype, op->op, {pool_, mul(e + o, dtype.bytes()), op->args[2], op->args[3], op->args[4]});
      return Call(dtype, op->op, {pool_, mul(e + o, dtype.bytes()), op->args[2], op->args[3], op->args[4],
                                  op->args[5]});
    }
    return StmtExprMutator::VisitExpr_(op);
  }
};
"""


def test_merge_branch_is_rewritten_in_pointer_type_units():
    [f] = analyze(_MERGE, "m.cc", OPTS).findings
    assert (f.line, f.code, f.role, f.op) == (8, "CPA111", "reader", "tir.ptx_cp_async")
    assert f.fix is not None and f.fix.applicability is Applicability.UNSAFE
    # the file's tvm_access_ptr branch re-bases by Off(b, op->args[0].dtype()) + offset: the unit is decided
    # by the file, and the one assumption left is the producers' layout, which a complete set establishes
    assert len(f.fix.assumptions) == 1 and "tvm_access_ptr" in f.fix.assumptions[0] and f.fix.set_established
    new = apply_edits(_MERGE, f.fix.edits)
    # No size check in the branch: one is added before the access pointer is opened.
    assert "ICHECK(op->args.size() == 3U || op->args.size() == 4U);\n      Call dst_access_ptr = Downcast<Call>(op->args[0]);" in new
    assert "PrimExpr e = Off(b, dst_access_ptr->args[0].dtype());" in new
    assert "PrimExpr o = this->VisitExpr(dst_access_ptr->args[2]);" in new
    # laid out as clang-format's LLVM style (80 columns) lays the new statements out (cpp/layout.py)
    assert ("      PrimExpr rebased_dst =\n"
            "          Call(DataType::Handle(), builtin::tvm_access_ptr(),\n"
            "               {dst_access_ptr->args[0], pool_, e + o, dst_access_ptr->args[3],\n"
            "                dst_access_ptr->args[4]});\n") in new
    assert "mul(" not in new and "args[5]" not in new
    assert ("      return Call(dtype, op->op,\n"
            "                  {rebased_dst, op->args[1], op->args[2], op->args[3]});") in new
    assert reparse_problem(_MERGE, new) is None
    assert analyze(new, "m.cc", OPTS).findings == []


@pytest.mark.parametrize("variant", [
    ("Off(b, op->args[0].dtype()) + op->args[2]", "Off(b, op->dtype) + op->args[2]"),  # not the pointer's type
    ("Off(b, op->args[0].dtype()) + op->args[2]", "Off(b, op->args[0].dtype()) * 2 + op->args[2]"),  # scaled
    ("{op->args[0], pool_, Off", "{op->args[0], other_, Off"),  # another buffer in the rebuilt pointer
])
def test_merge_unit_not_shown_by_the_access_ptr_branch_keeps_its_assumptions(variant):
    text = _MERGE.replace(*variant)
    assert text != _MERGE
    fs = [f for f in analyze(text, "m.cc", OPTS).findings if f.code == "CPA111"]
    if not fs:  # the access_ptr branch no longer re-bases onto the same buffer: not the merge shape at all
        assert variant[1].startswith("{op->args[0], other_")
        return
    [f] = fs
    assert f.fix.applicability is Applicability.UNSAFE and not f.fix.set_established
    assert len(f.fix.assumptions) == 3 and "counts in units" in f.fix.assumptions[1]


def test_merge_branch_without_an_access_ptr_branch_is_manual_with_the_change():
    text = _MERGE.replace("builtin::tvm_access_ptr()", "builtin::address_of()")
    [f] = analyze(text, "m.cc", OPTS).findings
    assert f.code == "CPA104" and f.fix is None and f.role == "reader"
    assert "no `tvm_access_ptr` branch of the same if/else chain re-bases access pointers with `Off`" in f.message
    assert "change: open the destination access pointer (`Call dst = Downcast<Call>(op->args[0])`" in f.message
    assert "no byte factor" in f.message and "args[1] dst_offset -> offset inside args[0] dst_access_ptr" in f.message


@pytest.mark.parametrize("old, new, reason", [
    ("mul(e + o, dtype.bytes())", "mul(e + o, 4)", "is not `mul(e + o, <call dtype bytes>)`"),
    ("PrimExpr e = Off(b, dtype);", "PrimExpr e = Off(b, DataType::Int(8));",
     "line 12 holds a statement the merge-pass rewrite does not follow (`PrimExpr e = Off(b, DataType::Int(8));`)"),
    ("if (!Shared(b)) return StmtExprMutator::VisitExpr_(op);\n      PrimExpr e",
     "PrimExpr e", "lacks a guard on the destination"),
    ("op->args[3], op->args[4]});\n      return", "op->args[4], op->args[3]});\n      return",
     "element 3 of a rebuilt list is `op->args[4]`"),
    ("return Call(dtype, op->op, {pool_, mul(e + o, dtype.bytes()), op->args[2], op->args[3], op->args[4],",
     "return Call(dtype, op->op, {scratch_, mul(e + o, dtype.bytes()), op->args[2], op->args[3], op->args[4],",
     "re-base the destination differently"),
    ("if (op->args.size() == 5)\n", "if (flag_)\n", "not a test of the argument count"),
    ("PrimExpr o = this->VisitExpr(op->args[1]);", "PrimExpr o = this->VisitExpr(op->args[1]);\n      Log(o);",
     "holds a statement the merge-pass rewrite does not follow (`Log(o);`)"),
])
def test_merge_branch_other_shapes_stay_manual(old, new, reason):
    assert old in _MERGE
    [f] = analyze(_MERGE.replace(old, new), "m.cc", OPTS).findings
    assert f.code == "CPA104" and f.fix is None, f.message
    assert reason in f.message and "change: open the destination access pointer" in f.message


def test_merge_branch_of_tl_op_counting_elements_is_manual():
    opts = FrontEndOptions(rules=RULES, target=RULES.generation("0.1.9"), source=RULES.legacy)
    text = _MERGE.replace("builtin::ptx_cp_async()", "tl::ptx_cp_async()")
    [f] = analyze(text, "m.cc", opts).findings
    assert f.code == "CPA104" and f.fix is None and f.op == "tl.ptx_cp_async"
    assert "destinations, which this rewrite does not open" in f.message
    # TVM's builtin keeps bytes under 0.1.9: its merge branch is rewritten there too.
    [g] = analyze(_MERGE, "m.cc", opts).findings
    assert g.code == "CPA111" and g.fix is not None


def test_cutedsl_printer_names_the_runtime_helper():
    text = """\
void CodeGenDSL::VisitExpr_(const CallNode* op, std::ostream& os) {
  if (op->op.same_as(builtin::ptx_cp_async())) {
    std::string d = PrintExpr_(op->args[0]);
    std::string d_offset = PrintExpr_(op->args[1]);
    std::string s = PrintExpr_(op->args[2]);
    std::string s_offset = PrintExpr_(op->args[3]);
    std::string n = PrintExpr_(op->args[4]);
    if (op->args.size() == 5) {
      stream << "rt.copy_async(" << n << ", " << d << ", " << d_offset << ", " << s << ", " << s_offset << ")\\n";
    } else {
      stream << "rt.copy_async_if(" << n << ", " << d << ", " << d_offset << ", " << s << ", " << s_offset
             << ", " << PrintExpr_(op->args[5]) << ")\\n";
    }
  }
}
"""
    [f] = analyze(text, "g.cc", OPTS).findings
    assert (f.code, f.role, f.op, f.fix) == ("CPA104", "reader", "tir.ptx_cp_async", None)
    assert "runtime helpers `rt.copy_async`, `rt.copy_async_if`" in f.message
    assert "the runtime helper must change with it" in f.message
    assert "give the runtime's `copy_async`, `copy_async_if` a pointer-only form" in f.message
